//! NumPy's `linalg` routines of cuda-core (feature `solver`) on the workloads of the cuSOLVER
//! issue, whose torch 2.11 and CuPy 14.2 figures on the H200 are the targets: `solve` of a
//! 4096^2 f64 system with 64 right-hand sides, `svd` of a 2048^2 f32 matrix, `cholesky` of 1024
//! 32^2 f32 matrices, `eigh` of 500 100^2 matrices in f32 and f64, `inv` and `det` of 256 64^2
//! f32 matrices (and `slogdet` of the same, `solve` of 1024 32^2 f32 systems with 4
//! right-hand sides each, and `inv` of one 64^2 f32 matrix: a call's host cost and latency). Each row is the median wall-clock time of one call
//! and a wait for its stream (milliseconds): most of these routines read their `info`s back
//! before returning, and `det` and `slogdet` of small matrices queue without a host wait, so
//! the wait makes the host clock time the work whole, as the torch and CuPy references (one
//! call and `torch.cuda.synchronize()`) are timed. Prints `ROW {json}` lines (see the
//! `benches` crate docs). Built with `--features linalg`. Argument `launch` or `other` runs one
//! part: every row here is in `other`.

use std::time::Instant;

use benches::{Part, Row, Stats};
use cuda_core::{DeviceArray, Stream};

const BENCH: &str = "linalg";
const UNIT: &str = "ms";
const IMPLEMENTATION: &str = "cuda-core DeviceArray";
/// Calls before timing (the first ones load libraries and kernels).
const WARMUP: usize = 2;
/// Timed calls; the figure is the median.
const REPS: usize = 10;

/// The workloads: the table.
const CASES: [&str; 10] = [
    "solve, 4096^2 f64 with 64 right-hand sides",
    "svd, 2048^2 f32",
    "cholesky, batched 1024 x 32^2 f32",
    "eigh, batched 500 x 100^2 f32",
    "eigh, batched 500 x 100^2 f64",
    "inv, batched 256 x 64^2 f32",
    "det, batched 256 x 64^2 f32",
    "slogdet, batched 256 x 64^2 f32",
    "solve, batched 1024 x 32^2 f32 with 4 right-hand sides",
    "inv, one 64^2 f32 (the call's host cost and latency)",
];

fn main() {
    let part = Part::from_args();
    if !part.other() {
        return;
    }
    let rows = CASES.map(|case| (case, IMPLEMENTATION));
    let Some(stream) = benches::stream_or_unavailable(BENCH, UNIT, &rows) else {
        return;
    };
    for case in CASES {
        let stats = run_case(&stream, case).map_err(|e| e.to_string());
        Row::measured(BENCH, case, IMPLEMENTATION, UNIT, stats.and_then(|s| s)).emit();
    }
    println!("reference: the torch and CuPy figures of the cuSOLVER issue (docs/BENCHMARKS.md)");
}

/// `count` matrices `n x n`, row-major one after another: well conditioned (diagonally
/// dominant) and, with `symmetric`, symmetric positive definite.
fn matrices(count: usize, n: usize, symmetric: bool) -> Vec<f64> {
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut next = move || {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (state >> 11) as f64 / (1u64 << 53) as f64 - 0.5
    };
    let mut out = vec![0.0; count * n * n];
    for matrix in out.chunks_mut(n * n) {
        for i in 0..n {
            for j in 0..n {
                let value = if symmetric && j < i { matrix[j * n + i] } else { next() };
                matrix[i * n + j] = if i == j { n as f64 + value.abs() } else { value };
            }
        }
    }
    out
}

fn array<T: cuda_core::Element>(stream: &Stream, data: &[f64], shape: &[usize]) -> cuda_core::Result<DeviceArray<T>> {
    let typed: Vec<T> = data.iter().map(|&v| T::from_f64(v)).collect();
    DeviceArray::from_slice(stream, &typed)?.reshape(shape.to_vec())
}

/// Median milliseconds of [`REPS`] calls of `call`, each with a wait for `stream`, after
/// [`WARMUP`].
fn time(stream: &Stream, mut call: impl FnMut() -> cuda_core::Result<()>) -> cuda_core::Result<Result<Stats, String>> {
    for _ in 0..WARMUP {
        call()?;
        stream.synchronize()?;
    }
    let mut samples = Vec::with_capacity(REPS);
    for _ in 0..REPS {
        let start = Instant::now();
        call()?;
        stream.synchronize()?;
        samples.push(start.elapsed().as_secs_f64() * 1e3);
    }
    Ok(Stats::from_samples(samples, 1))
}

fn run_case(stream: &Stream, case: &str) -> cuda_core::Result<Result<Stats, String>> {
    match case {
        c if c.starts_with("solve, batched") => {
            let a = array::<f32>(stream, &matrices(1024, 32, false), &[1024, 32, 32])?;
            let b = array::<f32>(stream, &matrices(1, 64, false).repeat(32), &[1024, 32, 4])?;
            time(stream, || a.solve(&b).map(drop))
        }
        c if c.starts_with("solve") => {
            let a = array::<f64>(stream, &matrices(1, 4096, false), &[4096, 4096])?;
            let b = array::<f64>(stream, &matrices(1, 64, false).repeat(64)[..4096 * 64], &[4096, 64])?;
            time(stream, || a.solve(&b).map(drop))
        }
        c if c.starts_with("svd") => {
            let a = array::<f32>(stream, &matrices(1, 2048, false), &[2048, 2048])?;
            time(stream, || a.svd(false).map(drop))
        }
        c if c.starts_with("cholesky") => {
            let a = array::<f32>(stream, &matrices(1024, 32, true), &[1024, 32, 32])?;
            time(stream, || a.cholesky(false).map(drop))
        }
        c if c.starts_with("eigh") && c.ends_with("f32") => {
            let a = array::<f32>(stream, &matrices(500, 100, true), &[500, 100, 100])?;
            time(stream, || a.eigh(false).map(drop))
        }
        c if c.starts_with("eigh") => {
            let a = array::<f64>(stream, &matrices(500, 100, true), &[500, 100, 100])?;
            time(stream, || a.eigh(false).map(drop))
        }
        c if c.starts_with("inv, one") => {
            let a = array::<f32>(stream, &matrices(1, 64, false), &[64, 64])?;
            time(stream, || a.inv().map(drop))
        }
        c if c.starts_with("inv") => {
            let a = array::<f32>(stream, &matrices(256, 64, false), &[256, 64, 64])?;
            time(stream, || a.inv().map(drop))
        }
        c if c.starts_with("det") => {
            let a = array::<f32>(stream, &matrices(256, 64, false), &[256, 64, 64])?;
            time(stream, || a.det().map(drop))
        }
        _ => {
            let a = array::<f32>(stream, &matrices(256, 64, false), &[256, 64, 64])?;
            time(stream, || a.slogdet().map(drop))
        }
    }
}
