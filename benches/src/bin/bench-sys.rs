//! Benchmarks through cuda-sys alone (raw driver and NVRTC calls): launch
//! cost, allocation, device-to-device copy bandwidth and cold NVRTC compile.
//! Prints `ROW {json}` lines (see the `benches` crate docs). The launch
//! rows time cuda-sys as a caller writes it (`driver()?.cuLaunchKernel()?`
//! on every launch) interleaved with the raw path (the pointer fetched once)
//! in the same process, and the raw path against itself (an A/A control: the
//! paired method's own noise); argument `launch` or `other` runs one part.

use std::ffi::c_void;
use std::ptr;

use benches::raw::{check, compile_cubin, AxpyParams, Gpu, RawLaunch};
use benches::*;
use cuda_sys::driver::{CUdeviceptr, CUevent, CUfunction, CUmemPool_attribute, CUmemoryPool};

const LAUNCH: &str = "cuda-sys cuLaunchKernel";
const RAW: &str = "raw cuLaunchKernel";
const CONTROL: &str = "raw cuLaunchKernel A/A control";
const ALLOC_SYNC: &str = "cuda-sys cuMemAlloc+cuMemFree";
const ALLOC_ASYNC: &str = "cuda-sys cuMemAllocAsync+cuMemFreeAsync";
const COPY: &str = "cuda-sys cuMemcpyDtoDAsync";
const NVRTC: &str = "cuda-sys NVRTC";

fn main() {
    let part = Part::from_args();
    let gpu = Gpu::open();
    match &gpu {
        Ok(gpu) => println!("device: {}", gpu.describe()),
        Err(why) => println!("no GPU: {why}"),
    }
    // NVRTC needs no GPU: compile for the device's architecture, or sm_90 without one.
    let arch = gpu.as_ref().map(Gpu::arch).unwrap_or_else(|_| "sm_90".into());
    if part.other() {
        Row::measured("nvrtc", "cold compile", NVRTC, "ms", nvrtc_cold(&arch)).emit();
    }

    let gpu = match gpu {
        Ok(gpu) => gpu,
        Err(why) => {
            unavailable_driver_rows(part, &why, LAUNCH, ALLOC_SYNC, ALLOC_ASYNC, COPY);
            return;
        }
    };
    if part.launch() {
        launch_rows(&gpu);
    }
    if !part.other() {
        return;
    }
    for (case, bytes) in ALLOC_SIZES {
        Row::measured("alloc", case, ALLOC_SYNC, "us/pair", alloc_sync(&gpu, bytes)).emit();
    }
    for (case, bytes) in ALLOC_SIZES {
        Row::measured("alloc", case, ALLOC_ASYNC, "us/pair", alloc_async(&gpu, bytes)).emit();
    }
    match copy_bandwidth(&gpu) {
        Ok(row) => row.emit(),
        Err(why) => Row::failed("bandwidth", "D2D copy", COPY, "GB/s", &why).emit(),
    }
}

fn nvrtc_cold(arch: &str) -> Result<Stats, String> {
    compile_cubin(KERNELS, arch)?; // warm-up: loads NVRTC's builtins
    let mut samples = Vec::with_capacity(NVRTC_REPS);
    for _ in 0..NVRTC_REPS {
        let start = std::time::Instant::now();
        compile_cubin(KERNELS, arch)?;
        samples.push(start.elapsed().as_secs_f64() * 1e3);
    }
    Stats::from_samples(samples, 1)
}

fn launch_rows(gpu: &Gpu) {
    let kernels =
        compile_cubin(KERNELS, &gpu.arch()).and_then(|cubin| gpu.load_functions(&cubin, &[c"empty", c"axpy"]));
    match kernels.as_deref() {
        Ok(&[empty, axpy]) => {
            let (ours, control) = launch_empty(gpu, empty);
            emit_launch_rows("empty", ours, control);
            let (ours, control) = match launch_axpy(gpu, axpy) {
                Ok(both) => both,
                Err(why) => (Err(why.clone()), Err(why)),
            };
            emit_launch_rows("axpy", ours, control);
        }
        other => {
            let why = match other {
                Err(why) => why.clone(),
                Ok(functions) => format!("expected 2 kernels, loaded {}", functions.len()),
            };
            for case in ["empty", "axpy"] {
                Row::failed("launch", case, LAUNCH, "us/launch", &why).emit();
            }
        }
    }
}

/// The cuda-sys rows against raw, and the A/A control's ratio and difference (its time is raw's again).
fn emit_launch_rows(case: &str, ours: Result<Paired, String>, control: Result<Paired, String>) {
    paired_rows(case, LAUNCH, RAW, ours).iter().for_each(Row::emit);
    paired_rows(case, CONTROL, RAW, control)[1..].iter().for_each(Row::emit);
}

/// Times launches of `function` with the given parameter array (null for none), in batches of
/// [`LAUNCH_BATCH`]: cuda-sys with its accessors called per launch against the raw path, then the raw
/// path against itself.
///
/// # Safety
/// `params` must be null for a kernel without parameters, else point at one pointer per kernel
/// parameter, each at a live value of that parameter's type, valid for the kernel's accesses.
unsafe fn time_launches(
    gpu: &Gpu,
    function: CUfunction,
    grid: u32,
    block: u32,
    params: *mut *mut c_void,
) -> BothPaired {
    // SAFETY: `function` comes from a module that is never unloaded; the stream lives as long as `gpu`.
    let raw_launch = match unsafe { RawLaunch::new(function, gpu.stream, grid, block) } {
        Ok(raw_launch) => raw_launch,
        Err(why) => return (Err(why.clone()), Err(why)),
    };
    let sys = || {
        let cuda = cuda_sys::driver().map_err(|e| e.to_string())?;
        let launch = cuda.cuLaunchKernel().map_err(|e| e.to_string())?;
        // SAFETY: `function` and the stream are live; `params` as the caller promises.
        let result = unsafe {
            launch(
                function,
                grid,
                1,
                1,
                block,
                1,
                1,
                0,
                gpu.stream,
                params,
                ptr::null_mut(),
            )
        };
        check(cuda, result, "cuLaunchKernel")
    };
    // SAFETY (both closures): as `sys`.
    let raw = || unsafe { raw_launch.launch(params) };
    let ours = time_launch_pairs(|| gpu.sync(), raw, sys);
    let control = time_launch_pairs(|| gpu.sync(), raw, raw);
    (ours, control)
}

fn launch_empty(gpu: &Gpu, empty: CUfunction) -> BothPaired {
    // SAFETY: `empty` takes no parameters.
    unsafe { time_launches(gpu, empty, 1, 1, ptr::null_mut()) }
}

type BothPaired = (Result<Paired, String>, Result<Paired, String>);

fn launch_axpy(gpu: &Gpu, axpy: CUfunction) -> Result<BothPaired, String> {
    let n = AXPY_N as usize;
    let bytes = n * 4;
    let (host_x, host_y) = axpy_inputs();
    let x = gpu.alloc(bytes)?;
    let y = gpu.alloc(bytes).inspect_err(|_| drop(gpu.free(x)))?;
    let result = (|| -> Result<_, String> {
        let to_device = gpu.cuda.cuMemcpyHtoD_v2().map_err(|e| e.to_string())?;
        let to_host = gpu.cuda.cuMemcpyDtoH_v2().map_err(|e| e.to_string())?;
        // SAFETY: both device buffers hold `bytes` bytes, as do the host vectors.
        unsafe {
            check(gpu.cuda, to_device(x, host_x.as_ptr().cast(), bytes), "cuMemcpyHtoD x")?;
            check(gpu.cuda, to_device(y, host_y.as_ptr().cast(), bytes), "cuMemcpyHtoD y")?;
        }
        let mut args = AxpyParams::new(x, y);
        let mut params = args.pointers();
        let grid = AXPY_N.div_ceil(u64::from(AXPY_BLOCK)) as u32;
        // One launch checked on the host before timing.
        let launch = gpu.cuda.cuLaunchKernel().map_err(|e| e.to_string())?;
        // SAFETY: `params` points at a float, two device pointers of `n` floats and the length `n`, as `axpy` takes.
        let launched = unsafe {
            launch(
                axpy,
                grid,
                1,
                1,
                AXPY_BLOCK,
                1,
                1,
                0,
                gpu.stream,
                params.as_mut_ptr(),
                ptr::null_mut(),
            )
        };
        check(gpu.cuda, launched, "cuLaunchKernel axpy")?;
        gpu.sync()?;
        let mut result = vec![0f32; n];
        // SAFETY: `result` holds `bytes` bytes; `y` is a device buffer of as many; the stream is idle.
        check(
            gpu.cuda,
            unsafe { to_host(result.as_mut_ptr().cast(), y, bytes) },
            "cuMemcpyDtoH",
        )?;
        check_axpy(&host_x, &host_y, &result)?;
        // SAFETY: as for the checked launch above; `params` and what it points at outlive the timing.
        Ok(unsafe { time_launches(gpu, axpy, grid, AXPY_BLOCK, params.as_mut_ptr()) })
    })();
    let freed = gpu.free(x).and(gpu.free(y));
    let stats = result?;
    freed.map(|()| stats)
}

fn alloc_sync(gpu: &Gpu, bytes: usize) -> Result<Stats, String> {
    let alloc = gpu.cuda.cuMemAlloc_v2().map_err(|e| e.to_string())?;
    let free = gpu.cuda.cuMemFree_v2().map_err(|e| e.to_string())?;
    let batch = alloc_batch(bytes);
    time_batches(
        3,
        50,
        batch,
        || gpu.sync(),
        || {
            let mut pointer: CUdeviceptr = 0;
            // SAFETY: `pointer` is a valid out-pointer; the allocation is freed right after, once, unused.
            unsafe {
                check(gpu.cuda, alloc(&mut pointer, bytes), "cuMemAlloc")?;
                check(gpu.cuda, free(pointer), "cuMemFree")
            }
        },
    )
}

fn alloc_async(gpu: &Gpu, bytes: usize) -> Result<Stats, String> {
    let cuda = gpu.cuda;
    let sym = |e: cuda_sys::SymbolError| e.to_string();
    // Keep freed memory in the device's default pool across synchronisations, as a pooled allocator would.
    let mut pool: CUmemoryPool = ptr::null_mut();
    // SAFETY: `pool` is a valid out-pointer; the device is live.
    check(
        cuda,
        unsafe { cuda.cuDeviceGetDefaultMemPool().map_err(sym)?(&mut pool, gpu.device) },
        "default pool",
    )?;
    let mut threshold = u64::MAX;
    let attribute = CUmemPool_attribute::CU_MEMPOOL_ATTR_RELEASE_THRESHOLD;
    // SAFETY: the release threshold attribute takes a pointer to a u64.
    let set = unsafe { cuda.cuMemPoolSetAttribute().map_err(sym)?(pool, attribute, (&raw mut threshold).cast()) };
    check(cuda, set, "cuMemPoolSetAttribute")?;
    let alloc = cuda.cuMemAllocAsync().map_err(sym)?;
    let free = cuda.cuMemFreeAsync().map_err(sym)?;
    time_batches(
        3,
        100,
        alloc_batch(bytes) * 4,
        || gpu.sync(),
        || {
            let mut pointer: CUdeviceptr = 0;
            // SAFETY: `pointer` is a valid out-pointer; the allocation is freed once, stream-ordered, unused.
            unsafe {
                check(cuda, alloc(&mut pointer, bytes, gpu.stream), "cuMemAllocAsync")?;
                check(cuda, free(pointer, gpu.stream), "cuMemFreeAsync")
            }
        },
    )
}

fn copy_bandwidth(gpu: &Gpu) -> Result<Row, String> {
    let cuda = gpu.cuda;
    let sym = |e: cuda_sys::SymbolError| e.to_string();
    let bytes = BANDWIDTH_ELEMS * 4;
    let x = gpu.alloc(bytes)?;
    let y = gpu.alloc(bytes).inspect_err(|_| drop(gpu.free(x)))?;
    let mut events: [CUevent; 2] = [ptr::null_mut(); 2];
    let result = (|| -> Result<_, String> {
        for event in &mut events {
            // SAFETY: `event` is a valid out-pointer; flags 0 is the default (timing) event.
            check(
                cuda,
                unsafe { cuda.cuEventCreate().map_err(sym)?(event, 0) },
                "cuEventCreate",
            )?;
        }
        let memset = cuda.cuMemsetD32_v2().map_err(sym)?;
        // SAFETY: both buffers hold BANDWIDTH_ELEMS 32-bit words.
        unsafe {
            check(cuda, memset(x, 1.5f32.to_bits(), BANDWIDTH_ELEMS), "cuMemsetD32 x")?;
            check(cuda, memset(y, 0.25f32.to_bits(), BANDWIDTH_ELEMS), "cuMemsetD32 y")?;
        }
        let copy = cuda.cuMemcpyDtoDAsync_v2().map_err(sym)?;
        let record = cuda.cuEventRecord().map_err(sym)?;
        let wait = cuda.cuEventSynchronize().map_err(sym)?;
        let elapsed = cuda.cuEventElapsedTime_v2().map_err(sym)?;
        let samples = bandwidth_samples(|| {
            let mut ms = 0f32;
            // SAFETY: events, stream and both buffers are live; the copy stays inside both buffers.
            unsafe {
                check(cuda, record(events[0], gpu.stream), "cuEventRecord")?;
                check(cuda, copy(y, x, bytes, gpu.stream), "cuMemcpyDtoDAsync")?;
                check(cuda, record(events[1], gpu.stream), "cuEventRecord")?;
                check(cuda, wait(events[1]), "cuEventSynchronize")?;
                check(cuda, elapsed(&mut ms, events[0], events[1]), "cuEventElapsedTime")?;
            }
            Ok(f64::from(ms))
        })?;
        let mut tail = vec![0f32; 1024];
        let to_host = cuda.cuMemcpyDtoH_v2().map_err(sym)?;
        let last = y + (bytes - tail.len() * 4) as CUdeviceptr;
        // SAFETY: `tail` holds 4 KiB, read from the last 4 KiB of `y`; the stream is idle.
        check(
            cuda,
            unsafe { to_host(tail.as_mut_ptr().cast(), last, tail.len() * 4) },
            "cuMemcpyDtoH",
        )?;
        d2d_copy_row(COPY, &tail, samples)
    })();
    // SAFETY: the events were created above (null ones are skipped) and are destroyed once.
    unsafe {
        if let Ok(destroy) = cuda.cuEventDestroy_v2() {
            for event in events.into_iter().filter(|e| !e.is_null()) {
                destroy(event);
            }
        }
    }
    let freed = gpu.free(x).and(gpu.free(y));
    let row = result?;
    freed.map(|()| row)
}
