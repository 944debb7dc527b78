//! Stream capture left early, memory dropped during a capture, and graphs
//! that outlive the modules of their kernels. One test, alone in its
//! binary, so no other test's calls meet the captures and the memory
//! figures are this test's own.

mod common;

use cuda_driver::{
    CaptureMode, Context, DeviceBuffer, Error, Function, LaunchConfig, MemPool, Result, Stream, StreamFlags,
};

const BIG: usize = 64 << 20; // floats: 256 MiB, far above the driver's allocation granularity

fn free_bytes(context: &Context) -> usize {
    context.memory_info().unwrap().0
}

fn failing_step() -> Result<()> {
    Err(Error::InvalidValue("failing inside the capture region".into()))
}

/// Captures a launch, then leaves the capture region with `?` on an error.
fn capture_then_fail(stream: &Stream, fill: &Function, data: &mut DeviceBuffer<f32>) -> Result<()> {
    let scope = stream.capture_scope(CaptureMode::Global)?;
    let n = data.len() as u32;
    // SAFETY: fill writes n floats of a buffer of n.
    unsafe {
        scope
            .stream()
            .launch(fill, &LaunchConfig::for_num_elems(n), (&mut *data, 5.0f32, n))?
    };
    failing_step()?;
    scope.end().map(drop)
}

#[test]
fn captures_end_on_every_path_and_free_what_was_dropped_during_them() {
    let Some(context) = common::context() else { return };
    let stream = Stream::with_options(&context, StreamFlags::NON_BLOCKING, 0).unwrap();
    let n = 1024u32;
    let mut data = DeviceBuffer::<f32>::zeroed(&context, n as usize).unwrap();
    let config = LaunchConfig::for_num_elems(n);

    // A graph keeps the module of its kernel loaded after the module and function are dropped.
    let graph = {
        let fill = common::kernels(&context).function("fill").unwrap();
        stream
            .capture(CaptureMode::Global, |stream| {
                // SAFETY: fill writes n floats of a buffer of n.
                unsafe { stream.launch(&fill, &config, (&mut data, 2.0f32, n)) }
            })
            .unwrap()
    };
    println!("captured: {graph:?}");
    assert!(format!("{graph:?}").contains("kernels: 1"), "{graph:?}");
    let exec = graph.instantiate().unwrap();
    drop(graph);
    // SAFETY: `data`, the only memory the graph uses, is alive.
    unsafe { exec.launch(&stream) }.unwrap();
    stream.synchronize().unwrap();
    assert!(data.to_vec().unwrap().iter().all(|&v| v == 2.0));
    drop(exec);

    let fill = common::kernels(&context).function("fill").unwrap();

    // Leaving a capture scope early with `?` ends the capture; the stream works normally after.
    let error = capture_then_fail(&stream, &fill, &mut data).unwrap_err();
    assert!(matches!(error, Error::InvalidValue(_)), "{error}");
    assert!(!stream.is_capturing().unwrap(), "the scope's drop ended the capture");
    context
        .check_deferred()
        .expect("ending the abandoned capture reported no error");
    // SAFETY: fill writes n floats of a buffer of n.
    unsafe { stream.launch(&fill, &config, (&mut data, 3.0f32, n)) }.unwrap();
    stream.synchronize().unwrap();
    assert!(
        data.to_vec().unwrap().iter().all(|&v| v == 3.0),
        "the abandoned capture's launch never ran"
    );

    // Memory dropped during a global-mode capture is not freed then (that would invalidate the
    // capture: end() would fail) but when the capture ends.
    let before = free_bytes(&context);
    let big = DeviceBuffer::<f32>::zeroed(&context, BIG).unwrap();
    let pool = MemPool::device_default(&context.device()).unwrap();
    let pool_used = pool.used_memory().unwrap();
    let ordered = DeviceBuffer::<f32>::alloc_async(&stream, 1 << 20).unwrap();
    assert!(pool.used_memory().unwrap() > pool_used);
    let allocated = free_bytes(&context);
    assert!(allocated + BIG * 4 <= before + (64 << 20), "{before} -> {allocated}");
    let scope = stream.capture_scope(CaptureMode::Global).unwrap();
    // SAFETY: fill writes n floats of `big` (which holds more) and of `ordered` (2^20 floats).
    unsafe {
        scope.stream().launch(&fill, &config, (&big, 4.0f32, n)).unwrap();
        scope.stream().launch(&fill, &config, (&ordered, 4.0f32, n)).unwrap();
    }
    drop(big);
    drop(ordered);
    let graph = scope.end().expect("dropping memory did not invalidate the capture");
    println!(
        "pool used: {pool_used} before the stream-ordered buffer, {} after the capture ended",
        pool.used_memory().unwrap()
    );
    assert_eq!(graph.node_count().unwrap(), 2);
    drop(graph);
    context.synchronize().expect("the deferred frees reported no error");
    println!(
        "pool used after synchronising: {} (reserved {})",
        pool.used_memory().unwrap(),
        pool.reserved_memory().unwrap()
    );
    let after = free_bytes(&context);
    assert!(
        after + (64 << 20) >= before,
        "freed at the end of the capture: {before} -> {after}"
    );
    assert_eq!(
        pool.used_memory().unwrap(),
        pool_used,
        "the stream-ordered buffer went back to its pool"
    );

    // A stream dropped while capturing ends its capture and frees what was dropped during it.
    let before = free_bytes(&context);
    let other = Stream::with_options(&context, StreamFlags::NON_BLOCKING, 0).unwrap();
    let big = DeviceBuffer::<f32>::zeroed(&context, BIG).unwrap();
    other.begin_capture(CaptureMode::ThreadLocal).unwrap();
    // SAFETY: fill writes n floats of `big`, which holds more.
    unsafe { other.launch(&fill, &config, (&big, 1.0f32, n)) }.unwrap();
    drop(big);
    drop(other);
    context
        .synchronize()
        .expect("ending the dropped stream's capture reported no error");
    let after = free_bytes(&context);
    assert!(
        after + (64 << 20) >= before,
        "freed when the stream went: {before} -> {after}"
    );

    // Plain begin/end still work, and the graph replays.
    stream.begin_capture(CaptureMode::ThreadLocal).unwrap();
    // SAFETY: fill writes n floats of a buffer of n.
    unsafe { stream.launch(&fill, &config, (&mut data, 6.0f32, n)) }.unwrap();
    let graph = stream.end_capture().unwrap();
    drop(fill);
    let exec = graph.instantiate().unwrap();
    println!("instantiated: {exec:?}");
    // SAFETY: `data` is alive.
    unsafe { exec.launch(&stream) }.unwrap();
    stream.synchronize().unwrap();
    assert!(data.to_vec().unwrap().iter().all(|&v| v == 6.0));
}
