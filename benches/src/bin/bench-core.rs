//! Benchmarks through cuda-core: NVRTC compile through its kernel cache
//! (cold: compiled and stored; disk hit; memory hit). Prints `ROW {json}`
//! lines (see the `benches` crate docs). Built with `--features core`.

use std::path::{Path, PathBuf};
use std::time::Instant;

use benches::raw::Gpu;
use benches::*;
use cuda_core::{Arch, CacheOutcome, CompileTarget, KernelCache, Program, ProgramOptions};

const PROGRAM: &str = "cuda-core Program";
/// Timed memory-cache hits per batch, and batches.
const MEMORY_HIT_BATCH: usize = 100;
const MEMORY_HIT_BATCHES: usize = 50;

fn main() {
    // NVRTC needs no GPU: the device's architecture where there is one, else sm_90.
    let arch = match Gpu::open() {
        Ok(gpu) => {
            println!("device: {}", gpu.describe());
            let (major, minor) = gpu.compute_capability;
            Arch::from_compute_capability(major as u32, minor as u32)
        }
        Err(why) => {
            println!("no GPU ({why}): compiling for sm_90");
            Arch::Sm(90)
        }
    };
    let program = Program::new(KERNELS, ProgramOptions::for_arch(arch));
    let scratch = std::env::temp_dir().join(format!("bench-core-cache-{}", std::process::id()));
    let rows = nvrtc_rows(&program, &scratch);
    let _ = std::fs::remove_dir_all(&scratch);
    match rows {
        Ok(rows) => rows.iter().for_each(Row::emit),
        Err(why) => {
            for case in ["cold compile", "disk cache hit", "memory cache hit"] {
                Row::failed("nvrtc", case, PROGRAM, "ms", &why).emit();
            }
        }
    }
}

/// Compiles through `cache`, checking that the cache answered as `expected`.
fn compile(program: &Program, cache: &KernelCache, expected: CacheOutcome) -> Result<(), String> {
    let (code, outcome) = program
        .compile_in(cache, CompileTarget::Cubin)
        .map_err(|e| e.to_string())?;
    if outcome != expected {
        return Err(format!("expected {expected:?}, the cache answered {outcome:?}"));
    }
    if code.code().is_empty() {
        return Err("empty CUBIN".into());
    }
    Ok(())
}

fn fresh_cache(scratch: &Path, index: usize) -> Result<(KernelCache, PathBuf), String> {
    let dir = scratch.join(format!("cold-{index}"));
    let cache = KernelCache::with_dir(&dir).map_err(|e| e.to_string())?;
    Ok((cache, dir))
}

fn nvrtc_rows(program: &Program, scratch: &Path) -> Result<Vec<Row>, String> {
    // Cold: an empty cache folder each time, so every compile runs NVRTC and writes the entry.
    let (warm, _) = fresh_cache(scratch, usize::MAX)?;
    compile(program, &warm, CacheOutcome::Compiled)?; // loads NVRTC and its builtins
    let mut cold = Vec::with_capacity(NVRTC_REPS);
    for rep in 0..NVRTC_REPS {
        let (cache, dir) = fresh_cache(scratch, rep)?;
        let start = Instant::now();
        compile(program, &cache, CacheOutcome::Compiled)?;
        cold.push(start.elapsed().as_secs_f64() * 1e3);
        let _ = std::fs::remove_dir_all(dir);
    }

    // Disk hit: the warm cache's folder holds the entry; memory is cleared before each lookup.
    let mut disk = Vec::with_capacity(NVRTC_REPS * 5);
    for _ in 0..NVRTC_REPS * 5 {
        warm.clear_memory();
        let start = Instant::now();
        compile(program, &warm, CacheOutcome::DiskHit)?;
        disk.push(start.elapsed().as_secs_f64() * 1e3);
    }

    // Memory hit: the entry is in memory now (the last disk hit put it there).
    let memory = time_batches(
        2,
        MEMORY_HIT_BATCHES,
        MEMORY_HIT_BATCH,
        || Ok(()),
        || compile(program, &warm, CacheOutcome::MemoryHit),
    )?;
    let as_ms = |stats: Stats| Stats {
        median: stats.median / 1e3,
        p10: stats.p10 / 1e3,
        p90: stats.p90 / 1e3,
        ..stats
    };
    let mut rows = vec![
        Row::measured("nvrtc", "cold compile", PROGRAM, "ms", Stats::from_samples(cold, 1)),
        Row::measured("nvrtc", "disk cache hit", PROGRAM, "ms", Stats::from_samples(disk, 1)),
        Row::measured("nvrtc", "memory cache hit", PROGRAM, "ms", Ok(as_ms(memory))),
    ];
    let how = [
        "NVRTC compile + entry written to an empty cache folder",
        "entry read and checked from the cache folder, memory cleared first",
        "entry found in the cache's memory",
    ];
    for (row, how) in rows.iter_mut().zip(how) {
        row.detail = format!("{how}; {}", row.detail);
    }
    Ok(rows)
}
