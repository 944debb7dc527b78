//! The device-memory contract's cross-stream ordering on a GPU, timed: in a binary of its own.
//!
//! Its timing check (the launches queue in under a quarter of the run: no host wait) cannot share
//! a process with other GPU tests. A call that synchronises the device from another thread of
//! the same process (`cuMemFree`, `cuMemFreeHost`, `cuMemHostAlloc`, `cuCtxSynchronize`, as the
//! other tests of `streams` make when they free their buffers) waits for this test's spinning
//! kernels, and the driver holds this thread's launches meanwhile: "queueing took 200.28ms of
//! 200.30ms" once on an H200, with the library's launch path making no host wait (its calls
//! there are `cuCtxGetCurrent`, `cuStreamWaitEvent`, `cuEventRecord` and `cuLaunchKernel`).

mod common;

use std::time::Instant;

use cuda_driver::{DeviceBuffer, LaunchConfig, Stream, StreamFlags};

/// The device-memory contract on a GPU: a write on stream `a` behind a long kernel is read by a
/// kernel on stream `b`, then overwritten on `a` while `b` is still busy. `b` must wait for the
/// write and `a` for the read, on the device: a missing wait reads the old values (1) or lets
/// the overwrite (5) in; a host wait shows in the time the launches take to queue.
#[test]
fn a_write_on_one_stream_is_read_on_another_after_it() {
    let Some(context) = common::context() else { return };
    let module = common::kernels(&context);
    let (spin, fill, saxpy) = (
        module.function("spin").unwrap(),
        module.function("fill").unwrap(),
        module.function("saxpy").unwrap(),
    );
    // About 200 ms at the peak clock (the attribute may read 0 on newer drivers: assume 2 GHz then).
    let khz = context
        .device()
        .clock_rate_khz()
        .ok()
        .filter(|&k| k > 0)
        .unwrap_or(2_000_000);
    let cycles = u64::from(khz) * 200;
    let n = 1 << 20;
    let config = LaunchConfig::for_num_elems(n as u32);
    let one = LaunchConfig::new((1, 1, 1), (1, 1, 1));
    let a = Stream::with_options(&context, StreamFlags::NON_BLOCKING, 0).unwrap();
    let b = Stream::with_options(&context, StreamFlags::NON_BLOCKING, 0).unwrap();
    // Stream-ordered memory from a pool of this test's own, not the device's default pool.
    let own_pool = cuda_driver::MemPool::new(&context.device()).unwrap();
    for stream_ordered in [false, true] {
        let mut x = match stream_ordered {
            true => DeviceBuffer::<f32>::alloc_from_pool_async(&own_pool, &a, n).unwrap(),
            false => DeviceBuffer::<f32>::alloc(&context, n).unwrap(),
        };
        let mut y = DeviceBuffer::<f32>::zeroed(&context, n).unwrap();
        let mut done = DeviceBuffer::<i32>::zeroed(&context, 2).unwrap();
        let mut done_b = DeviceBuffer::<i32>::zeroed(&context, 1).unwrap();
        // Warm-up: the kernels are loaded before the timed part.
        // SAFETY (every launch here): fill and saxpy touch n floats of buffers of n; spin writes
        // one int of its 1- or 2-element buffer.
        unsafe {
            a.launch(&fill, &config, (&mut x, 1.0f32, n as u32)).unwrap();
            a.launch(&spin, &one, (0u64, &mut done)).unwrap();
            b.launch(&saxpy, &config, (0.0f32, &x, &mut y, n as u32)).unwrap();
        }
        a.synchronize().unwrap();
        b.synchronize().unwrap();
        let start = Instant::now();
        unsafe {
            a.launch(&spin, &one, (cycles, &mut done)).unwrap();
            a.launch(&fill, &config, (&mut x, 3.0f32, n as u32)).unwrap();
            b.launch(&spin, &one, (cycles, &mut done_b)).unwrap();
            b.launch(&saxpy, &config, (2.0f32, &x, &mut y, n as u32)).unwrap();
            a.launch(&fill, &config, (&mut x, 5.0f32, n as u32)).unwrap();
        }
        let queued = start.elapsed();
        b.synchronize().unwrap();
        a.synchronize().unwrap();
        let total = start.elapsed();
        assert!(
            queued * 4 < total,
            "queueing took {queued:?} of {total:?}: a host wait? (stream-ordered: {stream_ordered})"
        );
        assert!(
            y.to_vec().unwrap().iter().all(|&v| v == 6.0),
            "b read x before a's write or after the overwrite (stream-ordered: {stream_ordered})"
        );
        assert!(x.to_vec().unwrap().iter().all(|&v| v == 5.0));
    }
}
