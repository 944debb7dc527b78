//! Matrix products through cuda-libs: cuBLAS `Blas::gemm` over a matrix of element types (bf16,
//! f16, f32 with TF32 allowed as `tf32`, full f32, f64) and shapes (8192^3, 4096^3 and the
//! skinny 8192 x 8192 x 64), and cuBLASLt `Lt::matmul` with a bias+ReLU epilogue in bf16 at
//! 8192^3, in TFLOP/s (`2 m n k` per product, timed with events); through cuda-core,
//! `DeviceArray::matmul` of a batch of 256 f32 128 x 128 matrices (TFLOP/s, one strided-batched
//! call) and its host cost per call at 64x64 and 512x512 f32, with cuBLASLt graph replay off (the
//! default) and on (us/call: the median over batches
//! of back-to-back calls on allocated operands, queued behind a spinning kernel so the device's
//! time does not count, waiting between batches; beside it the cuBLAS and cuBLASLt calls under
//! it, on buffers); and `relu(x @ w + b)`
//! in bf16 at 8192x8192x1024 and 4096^3 both as one cuBLASLt epilogue call
//! (`DeviceArray::matmul_expr`) and as `matmul` followed by one fused element-wise kernel (bench
//! `fused`, TFLOP/s of the product, so the ratio of the two rows is the speed-up; the issue
//! asks at least 1.2x at 8192x8192x1024). Prints `ROW {json}`
//! lines (see the `benches` crate docs); `benches/python/bench_torch_gemm.py` prints the same
//! cases through `torch.matmul` (the reference) and `cupy.matmul`. Built with `--features libs`.
//! Argument `launch` or `other` runs one part: every row here is in `other`.

use benches::{time_batches, Part, Row, Stats};
use cuda_core::{DeviceArray, ExprOps, LaunchConfig, ProgramOptions, RawKernel};
use cuda_driver::{Context, Device, DeviceBuffer, Event, EventFlags, Stream, StreamFlags};
use cuda_libs::blas::{Blas, Element, Epilogue, Gemm, Lt};
use half::{bf16, f16};

const BENCH: &str = "gemm";
const UNIT: &str = "TFLOP/s";
const GEMM: &str = "cuda-libs Blas::gemm";
const LT: &str = "cuda-libs Lt::matmul (bias+ReLU epilogue)";
const MATMUL: &str = "cuda-core DeviceArray::matmul";
/// The host-cost rows of the library calls under `matmul`, on buffers, the output reused.
const HOST_GEMM: &str = "cuda-libs Blas::gemm (cublasGemmEx, output reused)";
/// `Lt::matmul` with graph replay switched on (`Lt::set_replay(true)`), and with it off (the
/// default).
const HOST_LT: &str = "cuda-libs Lt::matmul (graph replay on, output reused)";
const HOST_LT_DIRECT: &str = "cuda-libs Lt::matmul (graph replay off, output reused)";
/// `matmul` with graph replay switched on (`cuda_core::set_matmul_replay(true)`); [`MATMUL`] is
/// the default, replay off.
const MATMUL_REPLAY: &str = "cuda-core DeviceArray::matmul (graph replay on)";
/// `matmul` whose results are all kept to the run's end, so no call repeats an address (replay
/// off, as by default).
const MATMUL_FRESH: &str = "cuda-core DeviceArray::matmul (results kept: new addresses, no replay)";
/// The `matmul` host-cost rows.
const HOST_MATMULS: [&str; 3] = [MATMUL, MATMUL_REPLAY, MATMUL_FRESH];
/// The batched case: 256 products of 128 x 128 f32 matrices.
const BATCHED: &str = "f32 256 x 128^3 batched";
/// Host cost: batches of back-to-back `matmul` calls, after warm-up batches, each queued behind
/// a kernel that holds the device for [`SPIN_CYCLES`] clock cycles (about 10 ms): the calls
/// queue while it runs, so a batch times the host's work alone, also where a product's device
/// time exceeds its host time (torch's rows wait behind `torch.cuda._sleep` the same way).
const HOST_BATCHES: usize = 20;
/// Clock cycles the device is held for during each host-cost batch.
const SPIN_CYCLES: u64 = 20_000_000;
const HOST_WARMUP: usize = 3;
const HOST_CALLS: usize = 100;
/// Products run before timing (the first ones load kernels and pick algorithms).
const WARMUP: usize = 3;
/// Timed products; the figure is the median.
const REPS: usize = 20;

/// The element types of the gemm matrix; `tf32` is f32 with TF32 tensor cores allowed.
const DTYPES: [&str; 5] = ["bf16", "f16", "tf32", "f32", "f64"];
/// The shapes of the gemm matrix: (name, m, n, k).
const SHAPES: [(&str, usize, usize, usize); 3] = [
    ("8192^3", 8192, 8192, 8192),
    ("4096^3", 4096, 4096, 4096),
    ("8192x8192x64", 8192, 8192, 64),
];
/// The case of the epilogue row.
const LT_CASE: &str = "bf16 8192^3";

/// (case, implementation) of every row, in order.
fn rows() -> Vec<(String, &'static str)> {
    let mut rows: Vec<(String, &str)> = DTYPES
        .iter()
        .flat_map(|dtype| SHAPES.iter().map(move |(shape, ..)| (format!("{dtype} {shape}"), GEMM)))
        .collect();
    rows.push((LT_CASE.into(), LT));
    rows.push((BATCHED.into(), MATMUL));
    rows
}

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
            for (case, implementation) in rows() {
                Row::unavailable(BENCH, &case, implementation, UNIT, &why).emit();
            }
            for n in HOST_SIZES {
                for implementation in HOST_MATMULS.into_iter().chain([HOST_GEMM, HOST_LT, HOST_LT_DIRECT]) {
                    Row::unavailable("host", &host_case(n), implementation, "us/call", &why).emit();
                }
            }
            for (case, ..) in FUSED_SHAPES {
                for implementation in [FUSED_EPILOGUE, FUSED_KERNEL] {
                    Row::unavailable("fused", case, implementation, UNIT, &why).emit();
                }
            }
            return;
        }
    };
    // The host rows first: quick, and what a cut-short run should still print.
    for n in HOST_SIZES {
        for implementation in HOST_MATMULS {
            match host_row(&stream, n, implementation) {
                Ok(row) => row.emit(),
                Err(why) => Row::failed("host", &host_case(n), implementation, "us/call", &why).emit(),
            }
        }
        for implementation in [HOST_GEMM, HOST_LT, HOST_LT_DIRECT] {
            match library_host_row(&context, &stream, n, implementation) {
                Ok(row) => row.emit(),
                Err(why) => Row::failed("host", &host_case(n), implementation, "us/call", &why).emit(),
            }
        }
    }
    for (case, implementation) in rows() {
        let row = match implementation {
            GEMM => matrix_row(&context, &stream, &case),
            LT => lt_row(&context, &stream, 8192),
            _ => batched_row(&context, &stream),
        };
        match row {
            Ok(row) => row.emit(),
            Err(why) => Row::failed(BENCH, &case, implementation, UNIT, &why).emit(),
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
    println!("reference: python3 -c \"import torch; a = torch.randn(8192, 8192, device='cuda', dtype=torch.bfloat16); torch.matmul(a, a)\" (benches/python/bench_torch_gemm.py, with cupy.matmul beside)");
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

/// Inputs `A` of `m x k` and `B` of `k x n` with values in [-1, 1], and an `m x n` output to
/// overwrite.
fn buffers<T: Element>(
    context: &Context,
    (m, n, k): (usize, usize, usize),
    from_f32: fn(f32) -> T,
) -> Result<[DeviceBuffer<T>; 3], String> {
    let text = |e: cuda_driver::Error| e.to_string();
    let values = |len: usize| -> Vec<T> { (0..len).map(|i| from_f32(((i * 7 % 17) as f32 - 8.0) / 8.0)).collect() };
    Ok([
        DeviceBuffer::from_slice(context, &values(m * k)).map_err(text)?,
        DeviceBuffer::from_slice(context, &values(k * n)).map_err(text)?,
        DeviceBuffer::<T>::zeroed(context, m * n).map_err(text)?,
    ])
}

/// The gemm row of `case` (`"{dtype} {shape}"` of [`DTYPES`] and [`SHAPES`]).
fn matrix_row(context: &Context, stream: &Stream, case: &str) -> Result<Row, String> {
    let (dtype, shape) = case.split_once(' ').ok_or("a gemm case is `dtype shape`")?;
    let &(_, m, n, k) = SHAPES
        .iter()
        .find(|(name, ..)| *name == shape)
        .ok_or_else(|| format!("unknown shape {shape}"))?;
    let dims = (m, n, k);
    match dtype {
        "bf16" => gemm_row(context, stream, case, dims, false, bf16::from_f32),
        "f16" => gemm_row(context, stream, case, dims, false, f16::from_f32),
        "tf32" => gemm_row(context, stream, case, dims, true, |v| v),
        "f32" => gemm_row(context, stream, case, dims, false, |v| v),
        "f64" => gemm_row(context, stream, case, dims, false, f64::from),
        other => Err(format!("unknown dtype {other}")),
    }
}

fn gemm_row<T: Element>(
    context: &Context,
    stream: &Stream,
    case: &str,
    (m, n, k): (usize, usize, usize),
    tf32: bool,
    from_f32: fn(f32) -> T,
) -> Result<Row, String> {
    let [a, b, mut c] = buffers::<T>(context, (m, n, k), from_f32)?;
    let mut blas = Blas::new(stream).map_err(|e| e.to_string())?;
    blas.set_allow_tf32(tf32);
    let gemm = Gemm::new(m, n, k);
    let samples = time_ms(context, stream, || {
        blas.gemm(&gemm, &a, &b, &mut c).map_err(|e| e.to_string())
    })?;
    tflops_row(case, GEMM, 2.0 * (m * n * k) as f64, samples)
}

fn lt_row(context: &Context, stream: &Stream, n: usize) -> Result<Row, String> {
    let [a, b, mut c] = buffers::<bf16>(context, (n, n, n), bf16::from_f32)?;
    let bias = DeviceBuffer::from_slice(context, &vec![bf16::from_f32(0.5); n]).map_err(|e| e.to_string())?;
    let mut lt = Lt::new(stream).map_err(|e| e.to_string())?;
    let gemm = Gemm::new(n, n, n);
    let samples = time_ms(context, stream, || {
        lt.matmul(&gemm, Epilogue::ReluBias, &a, &b, Some(&bias), &mut c)
            .map_err(|e| e.to_string())
    })?;
    tflops_row(LT_CASE, LT, cube(n), samples)
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

/// Host microseconds per library call under `matmul` ([`HOST_GEMM`], or [`HOST_LT`] and
/// [`HOST_LT_DIRECT`]: replay on and off) of two
/// `n x n` f32 buffers into a reused one, timed as [`host_row`] times `matmul`: the difference
/// is what the array layer adds.
fn library_host_row(context: &Context, stream: &Stream, n: usize, implementation: &str) -> Result<Row, String> {
    let text = |e: cuda_libs::Error| e.to_string();
    let [a, b, mut c] = buffers::<f32>(context, (n, n, n), |v| v)?;
    let gemm = Gemm::new(n, n, n);
    let spin = Spin::new()?;
    let sync = || spin.hold(stream);
    let stats = match implementation {
        HOST_GEMM => {
            let mut blas = Blas::new(stream).map_err(text)?;
            time_batches(HOST_WARMUP, HOST_BATCHES, HOST_CALLS, sync, || {
                blas.gemm(&gemm, &a, &b, &mut c).map_err(text)
            })?
        }
        _ => {
            let mut lt = Lt::new(stream).map_err(text)?;
            lt.set_replay(implementation == HOST_LT);
            time_batches(HOST_WARMUP, HOST_BATCHES, HOST_CALLS, sync, || {
                lt.matmul(&gemm, Epilogue::None, &a, &b, None, &mut c).map_err(text)
            })?
        }
    };
    Ok(Row::value(
        "host",
        &host_case(n),
        implementation,
        "us/call",
        stats.median,
        format!(
            "host time per call, median of {} batches of {} back-to-back calls queued behind a spinning kernel (sync between batches); p10 {:.2}, p90 {:.2}",
            stats.samples, stats.per_sample, stats.p10, stats.p90
        ),
    ))
}

/// A one-thread kernel that spins for a number of clock cycles: what holds the device while a
/// host-cost batch is queued.
struct Spin(RawKernel);

impl Spin {
    fn new() -> Result<Spin, String> {
        let source = "extern \"C\" __global__ void spin(unsigned long long cycles) {\n\
                      \x20   const long long start = clock64();\n\
                      \x20   while ((unsigned long long)(clock64() - start) < cycles) {}\n}\n";
        RawKernel::new(source, "spin", ProgramOptions::default())
            .map(Spin)
            .map_err(|e| e.to_string())
    }

    /// Waits for `stream`, then queues the spin on it: what runs before each timed batch.
    fn hold(&self, stream: &Stream) -> Result<(), String> {
        stream.synchronize().map_err(|e| e.to_string())?;
        let config = LaunchConfig::new((1, 1, 1), (1, 1, 1));
        // SAFETY: the kernel takes one 64-bit integer and touches no memory.
        unsafe { self.0.launch(stream, &config, (SPIN_CYCLES,)) }.map_err(|e| e.to_string())
    }
}

fn host_case(n: usize) -> String {
    format!("matmul {n}x{n} f32")
}

/// Host microseconds per `DeviceArray::matmul` of two `n x n` f32 arrays (`implementation`, one
/// of [`HOST_MATMULS`]): the median over [`HOST_BATCHES`] batches of [`HOST_CALLS`]
/// back-to-back calls, the stream waited for between batches (outside the timing). Each result
/// is dropped at once (so the pool hands its block to the next call, which repeats the
/// addresses), with graph replay off (the default) or on ([`MATMUL_REPLAY`]); or, for
/// [`MATMUL_FRESH`], kept to the run's end (so every call has new addresses, and the pool grows).
fn host_row(stream: &Stream, n: usize, implementation: &'static str) -> Result<Row, String> {
    let a = array(stream, &[n, n])?;
    let b = array(stream, &[n, n])?;
    let spin = Spin::new()?;
    let kept = std::cell::RefCell::new(Vec::new());
    let keep_results = implementation == MATMUL_FRESH;
    let sync = || spin.hold(stream);
    let call = || {
        let product = a.matmul(&b).map_err(|e| e.to_string())?;
        if keep_results {
            kept.borrow_mut().push(product);
        }
        Ok(())
    };
    cuda_core::set_matmul_replay(implementation == MATMUL_REPLAY);
    let stats = time_batches(HOST_WARMUP, HOST_BATCHES, HOST_CALLS, sync, call);
    cuda_core::set_matmul_replay(false);
    let stats = stats?;
    Ok(Row::value(
        "host",
        &host_case(n),
        implementation,
        "us/call",
        stats.median,
        format!(
            "host time per call, median of {} batches of {} back-to-back calls queued behind a \
             spinning kernel (output allocated per call; sync between batches); p10 {:.2}, p90 {:.2}",
            stats.samples, stats.per_sample, stats.p10, stats.p90
        ),
    ))
}
