//! Times one kernel compiled cold with NVRTC, read from the disk cache, and found in the memory
//! cache. Needs NVRTC only, no GPU: a CUDA 13 toolkit's, a `pip install "nvidia-cuda-nvrtc==13.*"`
//! wheel's, or, on a fresh clone, the wheel `cargo xtask test` fetched into `target/cuda-wheels/`
//! (`examples::run` finds it there).
//!
//! `cargo run --release --example compile_cache`

use std::process::ExitCode;
use std::time::{Duration, Instant};

use cuda_core::{Arch, CacheOutcome, CompileTarget, KernelCache, Program, ProgramOptions};

const SOURCE: &str = r#"
template <typename T>
__global__ void axpy(T a, const T *x, T *y, unsigned n) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
"#;

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn main() -> ExitCode {
    examples::run("compile_cache", || {
        let program =
            Program::new(SOURCE, ProgramOptions::for_arch(Arch::Sm(90))).with_name_expressions(["axpy<float>"]);
        let dir = std::env::temp_dir().join(format!("cuda-rs-compile-cache-example-{}", std::process::id()));
        let target = CompileTarget::Cubin;

        let cold = median(
            (0..5)
                .map(|_| {
                    let start = Instant::now();
                    program.compile_uncached(target).map(|_| start.elapsed())
                })
                .collect::<Result<_, _>>()?,
        );

        program.compile_in(&KernelCache::with_dir(&dir)?, target)?;
        let mut disk = Vec::new();
        for _ in 0..20 {
            let cache = KernelCache::with_dir(&dir)?;
            let start = Instant::now();
            let (_, outcome) = program.compile_in(&cache, target)?;
            disk.push(start.elapsed());
            assert_eq!(outcome, CacheOutcome::DiskHit);
        }

        let cache = KernelCache::with_dir(&dir)?;
        program.compile_in(&cache, target)?;
        let rounds = 10_000;
        let start = Instant::now();
        for _ in 0..rounds {
            let (_, outcome) = program.compile_in(&cache, target)?;
            assert_eq!(outcome, CacheOutcome::MemoryHit);
        }
        let memory = start.elapsed() / rounds;
        let _ = std::fs::remove_dir_all(&dir);

        let disk = median(disk);
        println!(
            "kernel cache, one small template kernel, sm_90 CUBIN ({} bytes of source)",
            SOURCE.len()
        );
        println!("  cold NVRTC compile : {:>10.3} ms", cold.as_secs_f64() * 1e3);
        println!("  disk-cache hit     : {:>10.3} ms", disk.as_secs_f64() * 1e3);
        println!("  memory-cache hit   : {:>10.3} us", memory.as_secs_f64() * 1e6);
        Ok(())
    })
}
