//! Benchmarks through cuda-driver's safe layer: typed `Stream::launch`,
//! `DeviceBuffer` allocation (stream-ordered and plain) and the
//! device-to-device copy. Prints `ROW {json}` lines (see the `benches`
//! crate docs). Built with `--features driver`. The launch rows are timed
//! interleaved with raw `cuLaunchKernel` in the same process (see
//! [`benches::time_paired`]); argument `launch` or `other` runs one part.

use std::ptr;

use benches::raw::{compile_cubin, AxpyParams, RawLaunch};
use benches::*;
use cuda_driver::{
    Context, Device, DeviceBuffer, Event, EventFlags, Function, LaunchConfig, MemPool, Module, Stream, StreamFlags,
};

const LAUNCH: &str = "cuda-driver Stream::launch";
const RAW: &str = "raw cuLaunchKernel";
const ALLOC_SYNC: &str = "cuda-driver DeviceBuffer::alloc+drop";
const ALLOC_ASYNC: &str = "cuda-driver DeviceBuffer::alloc_async+drop";
const COPY: &str = "cuda-driver copy_from_device_async";

/// The context, a non-blocking stream (as every implementation uses) and the two kernels.
struct Setup {
    device: Device,
    context: Context,
    stream: Stream,
    kernels: Result<(Function, Function), String>,
}

fn setup() -> Result<Setup, String> {
    let text = |e: cuda_driver::Error| e.to_string();
    let device = Device::get(0).map_err(text)?;
    let context = device.primary_context().map_err(text)?;
    let stream = Stream::with_options(&context, StreamFlags::NON_BLOCKING, 0).map_err(text)?;
    let (major, minor) = device.compute_capability().map_err(text)?;
    println!("device: {} (sm_{major}{minor})", device.name().map_err(text)?);
    let kernels = compile_cubin(KERNELS, &format!("sm_{major}{minor}")).and_then(|cubin| {
        let module = Module::from_image(&context, &cubin).map_err(text)?;
        Ok((
            module.function("empty").map_err(text)?,
            module.function("axpy").map_err(text)?,
        ))
    });
    Ok(Setup {
        device,
        context,
        stream,
        kernels,
    })
}

fn main() {
    let part = Part::from_args();
    let setup = match setup() {
        Ok(setup) => setup,
        Err(why) => {
            let why = why.lines().next().unwrap_or_default().to_string();
            println!("no GPU: {why}");
            unavailable_driver_rows(part, &why, LAUNCH, ALLOC_SYNC, ALLOC_ASYNC, COPY);
            return;
        }
    };
    if part.launch() {
        match &setup.kernels {
            Ok((empty, axpy)) => {
                paired_rows("empty", LAUNCH, RAW, launch_empty(&setup, empty))
                    .iter()
                    .for_each(Row::emit);
                paired_rows("axpy", LAUNCH, RAW, launch_axpy(&setup, axpy))
                    .iter()
                    .for_each(Row::emit);
            }
            Err(why) => {
                for case in ["empty", "axpy"] {
                    Row::failed("launch", case, LAUNCH, "us/launch", why).emit();
                }
            }
        }
    }
    if !part.other() {
        return;
    }
    for (case, bytes) in ALLOC_SIZES {
        Row::measured("alloc", case, ALLOC_SYNC, "us/pair", alloc_sync(&setup, bytes)).emit();
    }
    for (case, bytes) in ALLOC_SIZES {
        Row::measured("alloc", case, ALLOC_ASYNC, "us/pair", alloc_async(&setup, bytes)).emit();
    }
    match copy_bandwidth(&setup) {
        Ok(row) => row.emit(),
        Err(why) => Row::failed("bandwidth", "D2D copy", COPY, "GB/s", &why).emit(),
    }
}

fn sync(stream: &Stream) -> Result<(), String> {
    stream.synchronize().map_err(|e| e.to_string())
}

fn launch_empty(setup: &Setup, empty: &Function) -> Result<Paired, String> {
    let config = LaunchConfig::new((1, 1, 1), (1, 1, 1));
    // The raw launches need the context current; Stream::launch makes it so itself.
    setup.context.set_current().map_err(|e| e.to_string())?;
    // SAFETY: `empty` and the stream are borrowed for this whole function, so they outlive `raw`.
    let raw_launch = unsafe { RawLaunch::new(empty.as_raw(), setup.stream.as_raw(), 1, 1) }?;
    time_launch_pairs(
        || sync(&setup.stream),
        // SAFETY: `empty` takes no parameters and touches no memory.
        || unsafe { raw_launch.launch(ptr::null_mut()) },
        // SAFETY: as above.
        || unsafe { setup.stream.launch(empty, &config, ()) }.map_err(|e| e.to_string()),
    )
}

fn launch_axpy(setup: &Setup, axpy: &Function) -> Result<Paired, String> {
    let text = |e: cuda_driver::Error| e.to_string();
    let (host_x, host_y) = axpy_inputs();
    let x = DeviceBuffer::from_slice(&setup.context, &host_x).map_err(text)?;
    let mut y = DeviceBuffer::from_slice(&setup.context, &host_y).map_err(text)?;
    let grid = AXPY_N.div_ceil(u64::from(AXPY_BLOCK)) as u32;
    let config = LaunchConfig::new((grid, 1, 1), (AXPY_BLOCK, 1, 1));
    // SAFETY: `axpy(float a, const float* x, float* y, unsigned long long n)` reads `n` floats of `x`
    // and updates `n` of `y`; both buffers hold `n`; one thread per element, guarded by `i < n`.
    unsafe { setup.stream.launch(axpy, &config, (2.0f32, &x, &mut y, AXPY_N)) }.map_err(text)?;
    sync(&setup.stream)?;
    let result = y.to_vec().map_err(text)?;
    check_axpy(&host_x, &host_y, &result)?;
    setup.context.set_current().map_err(text)?;
    // SAFETY: `axpy`, the stream and both buffers live until the end of this function, after the last
    // launch and the final synchronisation of `time_paired`.
    let (raw_launch, mut args) = unsafe {
        (
            RawLaunch::new(axpy.as_raw(), setup.stream.as_raw(), config.grid.0, AXPY_BLOCK)?,
            AxpyParams::new(x.as_raw(), y.as_raw()),
        )
    };
    let mut params = args.pointers();
    let params = params.as_mut_ptr();
    time_launch_pairs(
        || sync(&setup.stream),
        // SAFETY: `params` points at a float, the two buffers' addresses and the length, as `axpy` takes;
        // the launch is the checked one above.
        || unsafe { raw_launch.launch(params) },
        // SAFETY: as for the checked launch above.
        || unsafe { setup.stream.launch(axpy, &config, (2.0f32, &x, &mut y, AXPY_N)) }.map_err(text),
    )
}

fn alloc_sync(setup: &Setup, bytes: usize) -> Result<Stats, String> {
    time_batches(
        3,
        50,
        alloc_batch(bytes),
        || sync(&setup.stream),
        || {
            let buffer = DeviceBuffer::<u8>::alloc(&setup.context, bytes).map_err(|e| e.to_string())?;
            drop(buffer);
            Ok(())
        },
    )
}

fn alloc_async(setup: &Setup, bytes: usize) -> Result<Stats, String> {
    // Keep freed memory in the device's default pool across synchronisations (as the raw rows do).
    let pool = MemPool::device_default(&setup.device).map_err(|e| e.to_string())?;
    pool.set_release_threshold(u64::MAX).map_err(|e| e.to_string())?;
    time_batches(
        3,
        100,
        alloc_batch(bytes) * 4,
        || sync(&setup.stream),
        || {
            let buffer = DeviceBuffer::<u8>::alloc_async(&setup.stream, bytes).map_err(|e| e.to_string())?;
            drop(buffer); // cuMemFreeAsync on the stream
            Ok(())
        },
    )
}

fn copy_bandwidth(setup: &Setup) -> Result<Row, String> {
    let text = |e: cuda_driver::Error| e.to_string();
    let n = BANDWIDTH_ELEMS;
    let source = DeviceBuffer::from_slice(&setup.context, &vec![1.5f32; n]).map_err(text)?;
    let mut target = DeviceBuffer::<f32>::zeroed(&setup.context, n).map_err(text)?;
    let start = Event::new(&setup.context, EventFlags::DEFAULT).map_err(text)?;
    let end = Event::new(&setup.context, EventFlags::DEFAULT).map_err(text)?;
    let samples = bandwidth_samples(|| {
        start.record(&setup.stream).map_err(text)?;
        target
            .copy_from_device_async(&source.as_slice(), &setup.stream)
            .map_err(text)?;
        end.record(&setup.stream).map_err(text)?;
        end.synchronize().map_err(text)?;
        Ok(f64::from(start.elapsed_ms(&end).map_err(text)?))
    })?;
    let tail = target.slice(n - 1024..).to_vec().map_err(text)?;
    d2d_copy_row(COPY, &tail, samples)
}
