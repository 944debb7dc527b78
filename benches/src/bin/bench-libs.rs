//! Matrix products through cuda-libs: cuBLAS `Blas::gemm` in bf16 at 8192^3 and f32 at 4096^3
//! (full f32, and with TF32 allowed), and cuBLASLt `Lt::matmul` with a bias+ReLU epilogue in
//! bf16 at 8192^3, in TFLOP/s (`2 m n k` per product, timed with events); through cuda-core,
//! `DeviceArray::matmul` of a batch of 256 f32 128 x 128 matrices (TFLOP/s, one strided-batched
//! call) and its host cost per call at 64x64 and 512x512 f32 (us/call: the median over batches
//! of back-to-back calls on allocated operands, waiting between batches); and `relu(x @ w + b)`
//! in bf16 at 8192x8192x1024 and 4096^3 both as one cuBLASLt epilogue call
//! (`DeviceArray::matmul_expr`) and as `matmul` followed by one fused element-wise kernel (bench
//! `fused`, TFLOP/s of the product, so the ratio of the two rows is the speed-up; the issue
//! asks at least 1.2x at 8192x8192x1024). Prints `ROW {json}`
//! lines (see the `benches` crate docs); `benches/python/bench_torch_gemm.py` prints the same
//! cases through `torch.matmul`, the reference. Built with `--features libs`. Argument
//! `launch` or `other` runs one part: every row here is in `other`.

use benches::{time_batches, Part, Row, Stats};
use cuda_core::{DeviceArray, ExprOps};
use cuda_driver::{Context, Device, DeviceBuffer, Event, EventFlags, Stream, StreamFlags};
use cuda_libs::blas::{Blas, Element, Epilogue, Gemm, Lt};
use half::bf16;

const BENCH: &str = "gemm";
const UNIT: &str = "TFLOP/s";
const GEMM: &str = "cuda-libs Blas::gemm";
const GEMM_TF32: &str = "cuda-libs Blas::gemm (TF32 allowed)";
const LT: &str = "cuda-libs Lt::matmul (bias+ReLU epilogue)";
const MATMUL: &str = "cuda-core DeviceArray::matmul";
/// The batched case: 256 products of 128 x 128 f32 matrices.
const BATCHED: &str = "f32 256 x 128^3 batched";
/// Host cost: batches of back-to-back `matmul` calls, after warm-up batches.
const HOST_BATCHES: usize = 20;
const HOST_WARMUP: usize = 3;
const HOST_CALLS: usize = 100;
/// Products run before timing (the first ones load kernels and pick algorithms).
const WARMUP: usize = 3;
/// Timed products; the figure is the median.
const REPS: usize = 20;

/// (case, implementation) of every row, in order.
const ROWS: [(&str, &str); 5] = [
    ("bf16 8192^3", GEMM),
    ("bf16 8192^3", LT),
    ("f32 4096^3", GEMM),
    ("f32 4096^3", GEMM_TF32),
    (BATCHED, MATMUL),
];

/// The fused rows (bench `fused`): `relu(x @ w + b)` in bf16, as (case, m, n, k).
const FUSED_SHAPES: [(&str, usize, usize, usize); 2] = [
    ("bf16 relu(x @ w + b) 8192x8192x1024", 8192, 8192, 1024),
    ("bf16 relu(x @ w + b) 4096^3", 4096, 4096, 4096),
];
const FUSED_EPILOGUE: &str = "cuda-core matmul_expr (one cuBLASLt RELU_BIAS call)";
const FUSED_KERNEL: &str = "cuda-core matmul, then one fused kernel";

/// The host-cost rows (bench `host`, unit us/call): matrix sizes.
const HOST_SIZES: [usize; 2] = [64, 512];

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
            for n in HOST_SIZES {
                Row::unavailable("host", &host_case(n), MATMUL, "us/call", &why).emit();
            }
            for (case, ..) in FUSED_SHAPES {
                for implementation in [FUSED_EPILOGUE, FUSED_KERNEL] {
                    Row::unavailable("fused", case, implementation, UNIT, &why).emit();
                }
            }
            return;
        }
    };
    let rows = [
        gemm_row::<bf16>(&context, &stream, 8192, false),
        lt_row(&context, &stream, 8192),
        gemm_row::<f32>(&context, &stream, 4096, false),
        gemm_row::<f32>(&context, &stream, 4096, true),
        batched_row(&context, &stream),
    ];
    for ((case, implementation), row) in ROWS.into_iter().zip(rows) {
        match row {
            Ok(row) => row.emit(),
            Err(why) => Row::failed(BENCH, case, implementation, UNIT, &why).emit(),
        }
    }
    for n in HOST_SIZES {
        match host_row(&stream, n) {
            Ok(row) => row.emit(),
            Err(why) => Row::failed("host", &host_case(n), MATMUL, "us/call", &why).emit(),
        }
    }
    for (case, m, n, k) in FUSED_SHAPES {
        for (epilogue, implementation) in [(true, FUSED_EPILOGUE), (false, FUSED_KERNEL)] {
            match fused_row(&context, &stream, (m, n, k), epilogue) {
                Ok(samples) => match tflops_row(case, implementation, 2.0 * (m * n * k) as f64, samples) {
                    Ok(row) => Row {
                        bench: "fused".into(),
                        ..row
                    }
                    .emit(),
                    Err(why) => Row::failed("fused", case, implementation, UNIT, &why).emit(),
                },
                Err(why) => Row::failed("fused", case, implementation, UNIT, &why).emit(),
            }
        }
    }
    println!("reference: python3 -c \"import torch; a = torch.randn(8192, 8192, device='cuda', dtype=torch.bfloat16); torch.matmul(a, a)\" (benches/python/bench_torch_gemm.py)");
}

/// Milliseconds of each of [`REPS`] runs of `run`, timed with events on `stream`, after [`WARMUP`].
fn time_ms(
    context: &Context,
    stream: &Stream,
    mut run: impl FnMut() -> Result<(), String>,
) -> Result<Vec<f64>, String> {
    let text = |e: cuda_driver::Error| e.to_string();
    let start = Event::new(context, EventFlags::DEFAULT).map_err(text)?;
    let end = Event::new(context, EventFlags::DEFAULT).map_err(text)?;
    for _ in 0..WARMUP {
        run()?;
    }
    stream.synchronize().map_err(text)?;
    let mut samples = Vec::with_capacity(REPS);
    for _ in 0..REPS {
        start.record(stream).map_err(text)?;
        run()?;
        end.record(stream).map_err(text)?;
        end.synchronize().map_err(text)?;
        samples.push(f64::from(start.elapsed_ms(&end).map_err(text)?));
    }
    Ok(samples)
}

/// The row of `flops` per run from per-run milliseconds (the median; p10 and p90 in the detail,
/// as TFLOP/s).
fn tflops_row(case: &str, implementation: &str, flops: f64, samples: Vec<f64>) -> Result<Row, String> {
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
    let samples = time_ms(context, stream, || {
        blas.gemm(&gemm, &a, &b, &mut c).map_err(|e| e.to_string())
    })?;
    let implementation = if tf32 { GEMM_TF32 } else { GEMM };
    tflops_row(&format!("{} {n}^3", T::NAME), implementation, cube(n), samples)
}

fn lt_row(context: &Context, stream: &Stream, n: usize) -> Result<Row, String> {
    let [a, b, mut c] = buffers::<bf16>(context, n, bf16::from_f32)?;
    let bias = DeviceBuffer::from_slice(context, &vec![bf16::from_f32(0.5); n]).map_err(|e| e.to_string())?;
    let mut lt = Lt::new(stream).map_err(|e| e.to_string())?;
    let gemm = Gemm::new(n, n, n);
    let samples = time_ms(context, stream, || {
        lt.matmul(&gemm, Epilogue::ReluBias, &a, &b, Some(&bias), &mut c)
            .map_err(|e| e.to_string())
    })?;
    tflops_row(&format!("bf16 {n}^3"), LT, cube(n), samples)
}

/// `2 n^3`: the flops of one `n x n x n` product.
fn cube(n: usize) -> f64 {
    2.0 * (n as f64).powi(3)
}

/// A compact f32 array of `shape` with values in [-1, 1].
fn array(stream: &Stream, shape: &[usize]) -> Result<DeviceArray<f32>, String> {
    let len = shape.iter().product::<usize>();
    let host: Vec<f32> = (0..len).map(|i| ((i * 7 % 17) as f32 - 8.0) / 8.0).collect();
    DeviceArray::from_slice(stream, &host)
        .and_then(|array| array.reshape(shape.to_vec()))
        .map_err(|e| e.to_string())
}

/// `DeviceArray::matmul` of two stacks of 256 f32 128 x 128 matrices (one strided-batched
/// cuBLAS call, full f32), the output allocated per call as `a @ b` does.
fn batched_row(context: &Context, stream: &Stream) -> Result<Row, String> {
    let (batch, n) = (256, 128);
    let a = array(stream, &[batch, n, n])?;
    let b = array(stream, &[batch, n, n])?;
    let samples = time_ms(context, stream, || a.matmul(&b).map(drop).map_err(|e| e.to_string()))?;
    tflops_row(BATCHED, MATMUL, batch as f64 * cube(n), samples)
}

/// Milliseconds per `relu(x @ w + b)` of bf16 `x` (`m x k`), `w` (`k x n`) and `b` (`n`), the
/// output allocated per run: as one epilogue call (`matmul_expr`), or as `matmul` and one fused
/// kernel reading its result.
fn fused_row(
    context: &Context,
    stream: &Stream,
    (m, n, k): (usize, usize, usize),
    epilogue: bool,
) -> Result<Vec<f64>, String> {
    let text = |e: cuda_core::Error| e.to_string();
    let operand = |len: usize, rows: usize, cols: usize| {
        let host: Vec<bf16> = (0..len)
            .map(|i| bf16::from_f32(((i * 7 % 17) as f32 - 8.0) / 64.0))
            .collect();
        DeviceArray::from_slice(stream, &host)
            .and_then(|a| a.reshape([rows, cols]))
            .map_err(text)
    };
    let x = operand(m * k, m, k)?;
    let w = operand(k * n, k, n)?;
    let b = operand(n, 1, n)?.reshape([n]).map_err(text)?;
    time_ms(context, stream, || match epilogue {
        true => (x.matmul_expr(&w).map_err(text)? + &b)
            .maximum(0.0)
            .eval()
            .map(drop)
            .map_err(text),
        false => {
            let y = x.matmul(&w).map_err(text)?;
            (&y + &b).maximum(0.0).eval().map(drop).map_err(text)
        }
    })
}

fn host_case(n: usize) -> String {
    format!("matmul {n}x{n} f32")
}

/// Host microseconds per `DeviceArray::matmul` of two `n x n` f32 arrays: the median over
/// [`HOST_BATCHES`] batches of [`HOST_CALLS`] back-to-back calls, the stream waited for between
/// batches (outside the timing).
fn host_row(stream: &Stream, n: usize) -> Result<Row, String> {
    let a = array(stream, &[n, n])?;
    let b = array(stream, &[n, n])?;
    let sync = || stream.synchronize().map_err(|e| e.to_string());
    let call = || a.matmul(&b).map(drop).map_err(|e| e.to_string());
    let stats = time_batches(HOST_WARMUP, HOST_BATCHES, HOST_CALLS, sync, call)?;
    Ok(Row::value(
        "host",
        &host_case(n),
        MATMUL,
        "us/call",
        stats.median,
        format!(
            "host time per call, median of {} batches of {} back-to-back calls (output allocated \
             per call; sync between batches); p10 {:.2}, p90 {:.2}",
            stats.samples, stats.per_sample, stats.p10, stats.p90
        ),
    ))
}
