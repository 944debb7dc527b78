//! Fills every process-wide cache of cuda-core, drops everything it made and exits, so that
//! under `compute-sanitizer --tool memcheck --leak-check full` the leak summary shows whether
//! the exit hook gave the caches back (it must say 0 bytes).
//!
//! It allocates through the default pool (arrays of several size classes, on two streams),
//! runs a fused expression and a reduction (generated kernels), a `RawKernel` and a kernel of
//! `Program::compile` (loaded from the global kernel cache's entry), and checks every result
//! against the host. Without a GPU it prints `skipped: ...` and succeeds, unless
//! `CUDA_REQUIRE_GPU=1`.
//!
//! `cargo run --release -p cudars-core --example exit_release`

use std::process::ExitCode;

use cuda_core::{
    launch, CompileTarget, Device, DeviceArray, LaunchConfig, MemoryPool, Program, ProgramOptions, RawKernel,
};

const SCALE: &str = r#"
extern "C" __global__ void scale(const float *x, float *out, float factor, unsigned n) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = factor * x[i];
}
"#;

const IOTA: &str = r#"
extern "C" __global__ void iota(unsigned *out, unsigned n) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = 3 * i + 1;
}
"#;

type Failure = Box<dyn std::error::Error>;

fn main() -> ExitCode {
    let device = match Device::count().and_then(|count| match count {
        0 => Err(cuda_core::Error::InvalidValue("the driver reports no device".into())),
        _ => Device::new(0),
    }) {
        Ok(device) => device,
        Err(error) if std::env::var("CUDA_REQUIRE_GPU").as_deref() == Ok("1") => {
            eprintln!("exit_release: CUDA_REQUIRE_GPU=1 but there is no usable GPU: {error}");
            return ExitCode::FAILURE;
        }
        Err(error) => {
            println!("skipped: exit_release: no usable GPU ({error})");
            return ExitCode::SUCCESS;
        }
    };
    match run(&device) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("exit_release: error: {error}");
            ExitCode::FAILURE
        }
    }
}

/// Checks `got` against `expected`, element by element.
fn check<T: PartialEq + std::fmt::Debug>(what: &str, got: &[T], expected: &[T]) -> Result<(), Failure> {
    if got.len() != expected.len() {
        return Err(format!("{what}: {} elements, expected {}", got.len(), expected.len()).into());
    }
    match got.iter().zip(expected).position(|(g, e)| g != e) {
        Some(i) => Err(format!("{what}: element {i} is {:?}, expected {:?}", got[i], expected[i]).into()),
        None => Ok(()),
    }
}

fn run(device: &Device) -> Result<(), Failure> {
    let pool = MemoryPool::for_context(device.context());
    {
        let stream = device.create_stream()?;
        let other = device.create_stream()?;

        // Arrays of a small and two large size classes, on two streams.
        for (n, on) in [(1000usize, &stream), (300_000, &stream), (3_000_000, &other)] {
            let x: Vec<f32> = (0..n).map(|i| (i % 1000) as f32 * 0.5).collect();
            let y: Vec<f32> = (0..n).map(|i| (i % 7) as f32).collect();
            let x_device = DeviceArray::from_slice(on, &x)?;
            let y_device = DeviceArray::from_slice(on, &y)?;

            // A fused expression: one generated kernel, loaded once per context.
            let z = (2.0 * &x_device + &y_device).eval()?;
            let expected: Vec<f32> = x.iter().zip(&y).map(|(a, b)| 2.0 * a + b).collect();
            check(&format!("2*x+y ({n})"), &z.to_vec()?, &expected)?;

            // A reduction (a generated kernel and scratch blocks from the pool).
            let total = f64::from(z.sum()?.item()?);
            let reference: f64 = expected.iter().map(|&v| f64::from(v)).sum();
            if (total - reference).abs() > 1e-5 * reference.abs().max(1.0) {
                return Err(format!("sum ({n}): {total}, expected {reference}").into());
            }
        }

        // A RawKernel, compiled through the cache and loaded in this context.
        let iota = RawKernel::new(IOTA, "iota", ProgramOptions::default())?;
        let n = 5000u32;
        let mut out = DeviceArray::<u32>::empty(&stream, n as usize)?;
        // SAFETY: iota writes `n` unsigned ints of `out`, which holds `n`.
        unsafe { iota.launch(&stream, &LaunchConfig::for_num_elems(n), (&mut out, n))? };
        let expected: Vec<u32> = (0..n).map(|i| 3 * i + 1).collect();
        check("iota", &out.to_vec()?, &expected)?;

        // A kernel of the global cache's entry (the entry keeps its module loaded).
        let code = Program::new(SCALE, ProgramOptions::default()).compile(CompileTarget::Cubin)?;
        let kernel = code.get_kernel_on(device, "scale")?;
        let x: Vec<f32> = (0..n).map(|i| i as f32).collect();
        let x_device = DeviceArray::from_slice(&stream, &x)?;
        let mut scaled = DeviceArray::<f32>::empty(&stream, n as usize)?;
        // SAFETY: scale reads `n` floats of `x_device` and writes `n` to `scaled`.
        unsafe {
            launch(
                &stream,
                &LaunchConfig::for_num_elems(n),
                &kernel,
                (&x_device, &mut scaled, 1.5f32, n),
            )?
        };
        let expected: Vec<f32> = x.iter().map(|v| 1.5 * v).collect();
        check("scale", &scaled.to_vec()?, &expected)?;
        stream.synchronize()?;
        other.synchronize()?;
    }
    // Everything is dropped: the pool holds only cached blocks, which the exit hook frees.
    let stats = pool.stats();
    println!(
        "exit_release: all results correct; at exit the default pool caches {} blocks ({} bytes), none in use",
        stats.cached_blocks, stats.held_bytes
    );
    if stats.used_bytes != 0 || stats.cached_blocks == 0 {
        return Err(format!("expected cached blocks and none in use, the pool says {stats:?}").into());
    }
    Ok(())
}
