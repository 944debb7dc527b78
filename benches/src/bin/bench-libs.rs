//! Matrix products through cuda-libs: cuBLAS `Blas::gemm` in bf16 at 8192^3 and f32 at 4096^3
//! (full f32, and with TF32 allowed), and cuBLASLt `Lt::matmul` with a bias+ReLU epilogue in
//! bf16 at 8192^3, in TFLOP/s (`2 m n k` per product, timed with events). Prints `ROW {json}`
//! lines (see the `benches` crate docs); `benches/python/bench_torch_gemm.py` prints the same
//! cases through `torch.matmul`, the reference. Built with `--features libs`. Argument
//! `launch` or `other` runs one part: every row here is in `other`.

use benches::{Part, Row, Stats};
use cuda_driver::{Context, Device, DeviceBuffer, Event, EventFlags, Stream, StreamFlags};
use cuda_libs::blas::{Blas, Element, Epilogue, Gemm, Lt};
use half::bf16;

const BENCH: &str = "gemm";
const UNIT: &str = "TFLOP/s";
const GEMM: &str = "cuda-libs Blas::gemm";
const GEMM_TF32: &str = "cuda-libs Blas::gemm (TF32 allowed)";
const LT: &str = "cuda-libs Lt::matmul (bias+ReLU epilogue)";
/// Products run before timing (the first ones load kernels and pick algorithms).
const WARMUP: usize = 3;
/// Timed products; the figure is the median.
const REPS: usize = 20;

/// (case, implementation) of every row, in order.
const ROWS: [(&str, &str); 4] = [
    ("bf16 8192^3", GEMM),
    ("bf16 8192^3", LT),
    ("f32 4096^3", GEMM),
    ("f32 4096^3", GEMM_TF32),
];

fn main() {
    let part = Part::from_args();
    if !part.other() {
        return;
    }
    let setup = (|| -> Result<(Context, Stream), String> {
        let text = |e: cuda_driver::Error| e.to_string();
        let device = Device::get(0).map_err(text)?;
        let context = device.primary_context().map_err(text)?;
        let stream = Stream::with_options(&context, StreamFlags::NON_BLOCKING, 0).map_err(text)?;
        println!("device: {}", device.name().map_err(text)?);
        Ok((context, stream))
    })();
    let (context, stream) = match setup {
        Ok(setup) => setup,
        Err(why) => {
            let why = why.lines().next().unwrap_or_default().to_string();
            println!("no GPU: {why}");
            for (case, implementation) in ROWS {
                Row::unavailable(BENCH, case, implementation, UNIT, &why).emit();
            }
            return;
        }
    };
    let rows = [
        gemm_row::<bf16>(&context, &stream, 8192, false),
        lt_row(&context, &stream, 8192),
        gemm_row::<f32>(&context, &stream, 4096, false),
        gemm_row::<f32>(&context, &stream, 4096, true),
    ];
    for ((case, implementation), row) in ROWS.into_iter().zip(rows) {
        match row {
            Ok(row) => row.emit(),
            Err(why) => Row::failed(BENCH, case, implementation, UNIT, &why).emit(),
        }
    }
    println!("reference: python3 -c \"import torch; a = torch.randn(8192, 8192, device='cuda', dtype=torch.bfloat16); torch.matmul(a, a)\" (benches/python/bench_torch_gemm.py)");
}

/// Milliseconds of each of [`REPS`] runs of `run`, timed with events on `stream`, after [`WARMUP`].
fn time_ms(
    context: &Context,
    stream: &Stream,
    mut run: impl FnMut() -> cuda_libs::Result<()>,
) -> Result<Vec<f64>, String> {
    let text = |e: cuda_driver::Error| e.to_string();
    let start = Event::new(context, EventFlags::DEFAULT).map_err(text)?;
    let end = Event::new(context, EventFlags::DEFAULT).map_err(text)?;
    for _ in 0..WARMUP {
        run().map_err(|e| e.to_string())?;
    }
    stream.synchronize().map_err(text)?;
    let mut samples = Vec::with_capacity(REPS);
    for _ in 0..REPS {
        start.record(stream).map_err(text)?;
        run().map_err(|e| e.to_string())?;
        end.record(stream).map_err(text)?;
        end.synchronize().map_err(text)?;
        samples.push(f64::from(start.elapsed_ms(&end).map_err(text)?));
    }
    Ok(samples)
}

/// The row of `2 n^3` flops per product from per-product milliseconds (the median; p10 and p90
/// in the detail, as TFLOP/s).
fn tflops_row(case: &str, implementation: &str, n: usize, samples: Vec<f64>) -> Result<Row, String> {
    let flops = 2.0 * (n as f64).powi(3);
    let tflops = |ms: f64| flops / (ms * 1e-3) / 1e12;
    let stats = Stats::from_samples(samples, 1)?;
    Ok(Row::value(
        BENCH,
        case,
        implementation,
        UNIT,
        tflops(stats.median),
        format!(
            "median of {} products of {:.3} ms; p10 {:.1}, p90 {:.1} TFLOP/s (event-timed, after {WARMUP} warm-up)",
            stats.samples,
            stats.median,
            tflops(stats.p90),
            tflops(stats.p10)
        ),
    ))
}

/// Inputs of `n x n` with values in [-1, 1], and an output to overwrite.
fn buffers<T: Element>(context: &Context, n: usize, from_f32: fn(f32) -> T) -> Result<[DeviceBuffer<T>; 3], String> {
    let text = |e: cuda_driver::Error| e.to_string();
    let host: Vec<T> = (0..n * n)
        .map(|i| from_f32(((i * 7 % 17) as f32 - 8.0) / 8.0))
        .collect();
    Ok([
        DeviceBuffer::from_slice(context, &host).map_err(text)?,
        DeviceBuffer::from_slice(context, &host).map_err(text)?,
        DeviceBuffer::<T>::zeroed(context, n * n).map_err(text)?,
    ])
}

trait FromF32: Element {
    fn from_f32(value: f32) -> Self;
    const NAME: &'static str;
}

impl FromF32 for f32 {
    fn from_f32(value: f32) -> Self {
        value
    }
    const NAME: &'static str = "f32";
}

impl FromF32 for bf16 {
    fn from_f32(value: f32) -> Self {
        bf16::from_f32(value)
    }
    const NAME: &'static str = "bf16";
}

fn gemm_row<T: FromF32>(context: &Context, stream: &Stream, n: usize, tf32: bool) -> Result<Row, String> {
    let [a, b, mut c] = buffers::<T>(context, n, T::from_f32)?;
    let mut blas = Blas::new(stream).map_err(|e| e.to_string())?;
    blas.set_allow_tf32(tf32);
    let gemm = Gemm::new(n, n, n);
    let samples = time_ms(context, stream, || blas.gemm(&gemm, &a, &b, &mut c))?;
    let implementation = if tf32 { GEMM_TF32 } else { GEMM };
    tflops_row(&format!("{} {n}^3", T::NAME), implementation, n, samples)
}

fn lt_row(context: &Context, stream: &Stream, n: usize) -> Result<Row, String> {
    let [a, b, mut c] = buffers::<bf16>(context, n, bf16::from_f32)?;
    let bias = DeviceBuffer::from_slice(context, &vec![bf16::from_f32(0.5); n]).map_err(|e| e.to_string())?;
    let mut lt = Lt::new(stream).map_err(|e| e.to_string())?;
    let gemm = Gemm::new(n, n, n);
    let samples = time_ms(context, stream, || {
        lt.matmul(&gemm, Epilogue::ReluBias, &a, &b, Some(&bias), &mut c)
    })?;
    tflops_row(&format!("bf16 {n}^3"), LT, n, samples)
}
