//! Benchmarks through cuda-core: `launch` of the two kernels, and NVRTC
//! compile through its kernel cache (cold: compiled and stored; disk hit;
//! memory hit). Prints `ROW {json}` lines (see the `benches` crate docs).
//! Built with `--features core`. The launch rows are timed interleaved with
//! raw `cuLaunchKernel` in the same process (see [`benches::time_paired`]);
//! argument `launch` or `other` runs one part.

use std::path::{Path, PathBuf};
use std::ptr;
use std::time::Instant;

use benches::raw::{AxpyParams, RawLaunch};
use benches::*;
use cuda_core::{
    launch, Arch, CacheOutcome, CompileTarget, Device, Kernel, KernelCache, LaunchConfig, Program, ProgramOptions,
};
use cuda_driver::{DeviceBuffer, Stream};

const PROGRAM: &str = "cuda-core Program";
const LAUNCH: &str = "cuda-core launch";
const RAW: &str = "raw cuLaunchKernel";
/// Timed memory-cache hits per batch, and batches.
const MEMORY_HIT_BATCH: usize = 100;
const MEMORY_HIT_BATCHES: usize = 50;

fn main() {
    let part = Part::from_args();
    // NVRTC needs no GPU: the device's architecture where there is one, else sm_90.
    let device = Device::new(0).and_then(|device| {
        let arch = device.arch()?;
        println!("device: {} ({arch})", device.name()?);
        Ok((device, arch))
    });
    let arch = match &device {
        Ok((_, arch)) => *arch,
        Err(why) => {
            let why = why.to_string();
            println!(
                "no GPU ({}): compiling for sm_90",
                why.lines().next().unwrap_or_default()
            );
            Arch::Sm(90)
        }
    };
    let program = Program::new(KERNELS, ProgramOptions::for_arch(arch));
    match &device {
        Ok((device, _)) if part.launch() => launch_rows(device, &program),
        Err(why) if part.launch() => {
            let why = why.to_string();
            let why = why.lines().next().unwrap_or_default();
            for case in ["empty", "axpy"] {
                Row::unavailable("launch", case, LAUNCH, "us/launch", why).emit();
            }
        }
        _ => {}
    }
    if !part.other() {
        return;
    }
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

/// The launch rows: `empty` and a checked `axpy`, with the method every implementation uses.
fn launch_rows(device: &Device, program: &Program) {
    let setup = (|| -> Result<_, String> {
        let text = |e: cuda_core::Error| e.to_string();
        let code = program.compile_uncached(CompileTarget::Cubin).map_err(text)?;
        let empty = code.get_kernel_on(device, "empty").map_err(text)?;
        let axpy = code.get_kernel_on(device, "axpy").map_err(text)?;
        let stream = device.create_stream().map_err(text)?;
        Ok((empty, axpy, stream))
    })();
    match setup {
        Ok((empty, axpy, stream)) => {
            paired_rows("empty", LAUNCH, RAW, launch_empty(device, &stream, &empty))
                .iter()
                .for_each(Row::emit);
            paired_rows("axpy", LAUNCH, RAW, launch_axpy(device, &stream, &axpy))
                .iter()
                .for_each(Row::emit);
        }
        Err(why) => {
            for case in ["empty", "axpy"] {
                Row::failed("launch", case, LAUNCH, "us/launch", &why).emit();
            }
        }
    }
}

fn sync(stream: &Stream) -> Result<(), String> {
    stream.synchronize().map_err(|e| e.to_string())
}

fn launch_empty(device: &Device, stream: &Stream, empty: &Kernel) -> Result<Paired, String> {
    let config = LaunchConfig::new((1, 1, 1), (1, 1, 1));
    // The raw launches need the context current; `launch` makes it so itself.
    device.context().set_current().map_err(|e| e.to_string())?;
    // SAFETY: `empty` and the stream are borrowed for this whole function, so they outlive `raw_launch`.
    let raw_launch = unsafe { RawLaunch::new(empty.function().as_raw(), stream.as_raw(), 1, 1) }?;
    time_launch_pairs(
        || sync(stream),
        // SAFETY: `empty` takes no parameters and touches no memory.
        || unsafe { raw_launch.launch(ptr::null_mut()) },
        // SAFETY: as above.
        || unsafe { launch(stream, &config, empty, ()) }.map_err(|e| e.to_string()),
    )
}

fn launch_axpy(device: &Device, stream: &Stream, axpy: &Kernel) -> Result<Paired, String> {
    let driver = |e: cuda_driver::Error| e.to_string();
    let (host_x, host_y) = axpy_inputs();
    let x = DeviceBuffer::from_slice(device.context(), &host_x).map_err(driver)?;
    let mut y = DeviceBuffer::from_slice(device.context(), &host_y).map_err(driver)?;
    let grid = AXPY_N.div_ceil(u64::from(AXPY_BLOCK)) as u32;
    let config = LaunchConfig::new((grid, 1, 1), (AXPY_BLOCK, 1, 1));
    // SAFETY: `axpy(float a, const float* x, float* y, unsigned long long n)` reads `n` floats of `x`
    // and updates `n` of `y`; both buffers hold `n`; one thread per element, guarded by `i < n`.
    unsafe { launch(stream, &config, axpy, (2.0f32, &x, &mut y, AXPY_N)) }.map_err(|e| e.to_string())?;
    sync(stream)?;
    let result = y.to_vec().map_err(driver)?;
    check_axpy(&host_x, &host_y, &result)?;
    device.context().set_current().map_err(driver)?;
    // SAFETY: `axpy`, the stream and both buffers live until the end of this function, after the last
    // launch and the final synchronisation of `time_paired`.
    let (raw_launch, mut args) = unsafe {
        (
            RawLaunch::new(axpy.function().as_raw(), stream.as_raw(), config.grid.0, AXPY_BLOCK)?,
            AxpyParams::new(x.as_raw(), y.as_raw()),
        )
    };
    let mut params = args.pointers();
    let params = params.as_mut_ptr();
    time_launch_pairs(
        || sync(stream),
        // SAFETY: `params` points at a float, the two buffers' addresses and the length, as `axpy` takes;
        // the launch is the checked one above.
        || unsafe { raw_launch.launch(params) },
        // SAFETY: as for the checked launch above.
        || unsafe { launch(stream, &config, axpy, (2.0f32, &x, &mut y, AXPY_N)) }.map_err(|e| e.to_string()),
    )
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
