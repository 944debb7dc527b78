//! Every driver call of every sequence below fails once, with each injected
//! error in turn (see `tests::faults`). The sequences cover the public safe
//! operations of cuda-driver and a few real programs: allocate, copy, launch,
//! synchronise, drop; stream-ordered pool churn; graph capture and replay;
//! peers and explicit contexts; host functions and events; kernel attributes
//! and extended launches; module loading.

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use cuda_driver::{
    launch_raw, CaptureMode, Context, ContextFlags, Device, DeviceBuffer, Error, Event, EventFlags, HostBuffer,
    LaunchAttributes, LaunchConfig, MemPool, Module, Result, Stream, StreamFlags,
};
use tests::{fake, faults};

fn primary() -> Result<Context> {
    Context::primary(&Device::get(0)?)
}

fn expect<T: PartialEq + std::fmt::Debug>(what: &str, got: T, want: T) -> Result<()> {
    if got == want {
        Ok(())
    } else {
        Err(Error::InvalidValue(format!("{what}: got {got:?}, want {want:?}")))
    }
}

fn device_queries() -> Result<()> {
    expect("device count", Device::count()?, 2)?;
    for device in Device::all()? {
        device.name()?;
        device.uuid()?;
        device.total_memory()?;
        device.pci_bus_id()?;
        expect("compute capability", device.compute_capability()?, (9, 0))?;
        device.max_block_dim()?;
        device.max_grid_dim()?;
    }
    expect("peer access", Device::get(0)?.can_access_peer(&Device::get(1)?)?, true)
}

fn allocate_copy_launch_synchronize_drop() -> Result<()> {
    let context = primary()?;
    let module = Module::from_ptx(&context, fake::KERNELS)?;
    let vector_add = module.function("vector_add")?;
    let stream = Stream::new(&context)?;
    let n = 1000usize;
    let x: Vec<f32> = (0..n).map(|i| i as f32).collect();
    let a = DeviceBuffer::from_slice(&context, &x)?;
    let b = DeviceBuffer::from_slice(&context, &x)?;
    let mut c = DeviceBuffer::<f32>::zeroed(&context, n)?;
    // SAFETY: vector_add reads n floats of a and b and writes n of c, all n long.
    unsafe { stream.launch(&vector_add, &LaunchConfig::for_num_elems(n as u32), (&a, &b, &mut c, n as u32))? };
    stream.synchronize()?;
    let sums = c.to_vec()?;
    expect("sums", sums[n - 1], 2.0 * (n - 1) as f32)?;
    let mut copy = DeviceBuffer::<f32>::alloc(&context, n)?;
    copy.copy_from_device(&c)?;
    let mut back = vec![0f32; n];
    copy.slice(..).copy_to_host(&mut back)?;
    expect("copy", back, sums)?;
    context.synchronize()
}

fn async_copies_events_and_pinned_memory() -> Result<()> {
    let context = primary()?;
    let stream = Stream::with_options(&context, StreamFlags::NON_BLOCKING, -1)?;
    let n = 512usize;
    let data: Vec<u32> = (0..n as u32).collect();
    let host = HostBuffer::from_slice(&context, &data)?;
    let mut back = HostBuffer::<u32>::new(&context, n)?;
    let start = Event::new(&context, EventFlags::DEFAULT)?;
    let end = Event::new(&context, EventFlags::DEFAULT)?;
    start.record(&stream)?;
    let mut device = DeviceBuffer::<u32>::alloc_async(&stream, n)?;
    device.copy_from_host_async(&host, &stream)?;
    device.copy_to_host_async(&mut back, &stream)?;
    end.record(&stream)?;
    end.synchronize()?;
    start.elapsed_ms(&end)?;
    expect("pinned round trip", back.to_vec(), data.clone())?;
    let mut pageable = vec![0u32; n];
    device.memset_zero_async(&stream)?;
    device.copy_from_host_async(&data, &stream)?;
    device.copy_to_host_async(&mut pageable, &stream)?;
    stream.synchronize()?;
    expect("pageable round trip", pageable, data)
}

fn pool_churn() -> Result<()> {
    let context = primary()?;
    let device = context.device();
    let pool = MemPool::device_default(&device)?;
    pool.set_release_threshold(u64::MAX)?;
    expect("release threshold", pool.release_threshold()?, u64::MAX)?;
    let stream = Stream::new(&context)?;
    let module = Module::from_ptx(&context, fake::KERNELS)?;
    let fill = module.function("fill")?;
    for round in 0..4u32 {
        let len = 64usize << round;
        let mut buffer = DeviceBuffer::<f32>::alloc_async(&stream, len)?;
        // SAFETY: fill writes len floats of a buffer of len.
        unsafe { stream.launch(&fill, &LaunchConfig::for_num_elems(len as u32), (&mut buffer, round as f32, len as u32))? };
        expect("filled", buffer.to_vec()?[len - 1], round as f32)?;
    }
    let own = MemPool::new(&device)?;
    let from_own = DeviceBuffer::<u8>::alloc_from_pool_async(&own, &stream, 4096)?;
    expect("pool use", own.used_memory()?, 4096)?;
    drop(from_own);
    stream.synchronize()?;
    pool.reserved_memory()?;
    pool.trim_to(0)
}

/// Graph capture as it must be written with this API: the capture is ended
/// on every path, so nothing is dropped while the stream is capturing.
fn graph_capture_and_replay() -> Result<()> {
    let context = primary()?;
    let stream = Stream::new(&context)?;
    let module = Module::from_ptx(&context, fake::KERNELS)?;
    let fill = module.function("fill")?;
    let saxpy = module.function("saxpy")?;
    let mut x = DeviceBuffer::<f32>::zeroed(&context, 256)?;
    let mut y = DeviceBuffer::<f32>::zeroed(&context, 256)?;
    stream.begin_capture(CaptureMode::Global)?;
    let config = LaunchConfig::for_num_elems(256);
    // SAFETY: both kernels touch 256 floats of buffers of 256.
    let captured = unsafe {
        stream
            .launch(&fill, &config, (&mut x, 1.0f32, 256u32))
            .and_then(|()| stream.launch(&saxpy, &config, (2.0f32, &x, &mut y, 256u32)))
    };
    let graph = stream.end_capture();
    captured?;
    let graph = graph?;
    replay(&graph, &stream)?;
    expect("replayed twice", y.to_vec()?[255], 4.0)
}

fn replay(graph: &cuda_driver::Graph, stream: &Stream) -> Result<()> {
    expect("graph nodes", graph.node_count()?, 2)?;
    let exec = graph.instantiate()?;
    exec.upload(stream)?;
    // SAFETY: the buffers the captured kernels use outlive the replays.
    unsafe {
        exec.launch(stream)?;
        exec.launch(stream)?;
    }
    stream.synchronize()
}

/// Graph capture written the natural way, leaving the capture region with
/// `?` on the first error: the buffers are dropped while the stream still
/// captures, when the driver forbids the synchronisation and free their
/// destructors need.
fn graph_capture_left_early_on_error() -> Result<()> {
    let context = primary()?;
    let stream = Stream::new(&context)?;
    let module = Module::from_ptx(&context, fake::KERNELS)?;
    let fill = module.function("fill")?;
    let saxpy = module.function("saxpy")?;
    let mut x = DeviceBuffer::<f32>::zeroed(&context, 256)?;
    let mut y = DeviceBuffer::<f32>::zeroed(&context, 256)?;
    stream.begin_capture(CaptureMode::Global)?;
    let config = LaunchConfig::for_num_elems(256);
    // SAFETY: both kernels touch 256 floats of buffers of 256.
    unsafe {
        stream.launch(&fill, &config, (&mut x, 1.0f32, 256u32))?;
        stream.launch(&saxpy, &config, (2.0f32, &x, &mut y, 256u32))?;
    }
    let graph = stream.end_capture()?;
    replay(&graph, &stream)?;
    expect("replayed twice", y.to_vec()?[255], 4.0)
}

fn peers_and_explicit_contexts() -> Result<()> {
    let (d0, d1) = (Device::get(0)?, Device::get(1)?);
    let own = Context::new(&d0, ContextFlags::SCHED_AUTO)?;
    let c0 = Context::primary(&d0)?;
    let c1 = Context::primary(&d1)?;
    c0.enable_peer_access(&c1)?;
    let data: Vec<u64> = (0..100).collect();
    let source = DeviceBuffer::from_slice(&c1, &data)?;
    let mut target = DeviceBuffer::<u64>::zeroed(&c0, data.len())?;
    target.copy_from_peer(&source)?;
    let stream = Stream::new(&c0)?;
    target.copy_from_peer_async(&source, &stream)?;
    stream.synchronize()?;
    let mut in_own = DeviceBuffer::<u64>::zeroed(&own, data.len())?;
    in_own.copy_from_peer(&target)?;
    expect("peer copies", in_own.to_vec()?, data)?;
    c0.disable_peer_access(&c1)?;
    own.synchronize()
}

fn host_functions_and_stream_order() -> Result<()> {
    let context = primary()?;
    let first = Stream::new(&context)?;
    let second = Stream::with_options(&context, StreamFlags::DEFAULT, 0)?;
    let ran = Arc::new(AtomicBool::new(false));
    let flag = ran.clone();
    first.launch_host_func(move || flag.store(true, Ordering::SeqCst))?;
    let event = Event::new(&context, EventFlags::DISABLE_TIMING)?;
    event.record(&first)?;
    second.wait_event(&event)?;
    second.synchronize()?;
    expect("host function ran", ran.load(Ordering::SeqCst), true)?;
    expect("first idle", first.query()?, true)?;
    expect("event done", event.query()?, true)?;
    second.priority()?;
    second.flags()?;
    context.stream_priority_range()?;
    context.memory_info()?;
    Ok(())
}

fn kernel_attributes_and_launch_variants() -> Result<()> {
    let context = primary()?;
    let module = Module::from_ptx(&context, fake::KERNELS)?;
    let fill = module.function("fill")?;
    expect("fill parameters", fill.param_info()?.len(), 3)?;
    fill.max_threads_per_block()?;
    fill.num_registers()?;
    fill.shared_memory_bytes()?;
    fill.local_memory_bytes()?;
    fill.ptx_version()?;
    fill.binary_version()?;
    fill.set_max_dynamic_shared_memory(64 * 1024)?;
    expect("dynamic shared memory", fill.max_dynamic_shared_memory()?, 64 * 1024)?;
    let stream = Stream::new(&context)?;
    let mut data = DeviceBuffer::<f32>::zeroed(&context, 1024)?;
    let config = LaunchConfig::new((4, 1, 1), (256, 1, 1)).with_shared_mem(64 * 1024);
    let attributes = LaunchAttributes {
        cluster_dim: Some((2, 1, 1)),
        ..LaunchAttributes::default()
    };
    // SAFETY: fill writes 1024 floats of a buffer of 1024.
    unsafe { stream.launch_ex(&fill, &config, &attributes, (&mut data, 5.0f32, 1024u32))? };
    let affine = module.function("affine")?;
    let (mut pointer, mut scale, mut n) = (unsafe { data.as_raw() }, [2.0f32, 1.0], 1024u32);
    let mut params = [
        (&mut scale as *mut [f32; 2]).cast(),
        (&mut pointer as *mut u64).cast(),
        (&mut n as *mut u32).cast(),
    ];
    // SAFETY: the parameters point at a [f32; 2], a device pointer to 1024 floats and their count.
    unsafe { launch_raw(&affine, (4, 1, 1), (256, 1, 1), 0, &stream, &mut params)? };
    stream.synchronize()?;
    expect("fill then affine", data.to_vec()?[1023], 11.0)
}

fn module_loading() -> Result<()> {
    let context = primary()?;
    let from_image = Module::from_image(&context, fake::KERNELS.as_bytes())?;
    from_image.function("noop")?;
    let path = std::env::temp_dir().join(format!("fakecuda-kernels-{}.ptx", std::process::id()));
    std::fs::write(&path, fake::KERNELS).map_err(|e| Error::InvalidValue(e.to_string()))?;
    let from_file = Module::from_file(&context, &path);
    let _ = std::fs::remove_file(&path);
    let noop = from_file?.function("noop")?;
    let stream = Stream::new(&context)?;
    // SAFETY: noop takes no parameters and does nothing.
    unsafe { stream.launch(&noop, &LaunchConfig::new((1, 1, 1), (1, 1, 1)), ())? };
    stream.synchronize()
}

type Sequence = fn() -> Result<()>;

const SEQUENCES: [(&str, Sequence); 9] = [
    ("device queries", device_queries),
    ("allocate, copy, launch, synchronize, drop", allocate_copy_launch_synchronize_drop),
    ("async copies, events, pinned memory", async_copies_events_and_pinned_memory),
    ("pool churn", pool_churn),
    ("graph capture and replay", graph_capture_and_replay),
    ("peers and explicit contexts", peers_and_explicit_contexts),
    ("host functions and stream order", host_functions_and_stream_order),
    ("kernel attributes and launch variants", kernel_attributes_and_launch_variants),
    ("module loading", module_loading),
];

/// Sequences that show a cuda-driver defect (see the ignored test).
const DEFECT_SEQUENCES: [(&str, Sequence); 1] = [("graph capture left early on error", graph_capture_left_early_on_error)];

/// Runs every sequence once per failure point; prints the counts.
fn exercise_all(sequences: &[(&str, Sequence)]) -> Vec<faults::Report> {
    let fake = fake::session();
    // Written to stdout directly, so the summary shows even when the test passes.
    let mut out = std::io::stdout();
    let mut reports = Vec::new();
    for (name, sequence) in sequences {
        let report = faults::exercise(&fake, name, sequence);
        let _ = writeln!(
            out,
            "failure points: {name}: {} driver calls x {} errors = {} runs; {} broken, \
             {} releases refused by the driver, {} releases skipped by a destructor",
            report.calls,
            fake::INJECTED_ERRORS.len(),
            report.points,
            report.failures.len(),
            report.refused_releases,
            report.skipped_releases.len(),
        );
        reports.push(report);
    }
    let total: usize = reports.iter().map(|r| r.points).sum();
    let _ = writeln!(out, "failure points exercised: {total}");
    reports
}

fn first_few(problems: &[String]) -> String {
    let shown: Vec<&str> = problems.iter().take(40).map(String::as_str).collect();
    format!("{} in all; the first {}:\n{}", problems.len(), shown.len(), shown.join("\n"))
}

/// Each run returns Ok or the injected error, never panics, double-frees or
/// uses a freed handle, leaks nothing but what the driver refused to free,
/// and leaves the driver usable.
#[test]
fn every_failure_point_fails_cleanly() {
    let reports = exercise_all(&SEQUENCES);
    assert!(reports.iter().map(|r| r.points).sum::<usize>() > 1000);
    let failures: Vec<String> = reports.into_iter().flat_map(|r| r.failures).collect();
    assert!(failures.is_empty(), "broken promises: {}", first_few(&failures));
}

/// A destructor releases its handle even when making its context current or
/// waiting for the context fails first, and leaving a capture region early
/// leaks nothing.
#[test]
#[ignore = "cuda-driver defects: (1) Drop gives up without releasing when bind() or the synchronize before \
            the release fails (Allocation, Stream, Event, Module, Graph, GraphExec); (2) buffers dropped while \
            their stream captures cannot be freed; run with --ignored"]
fn destructors_release_even_after_an_earlier_failure() {
    let all: Vec<(&str, Sequence)> = SEQUENCES.iter().chain(&DEFECT_SEQUENCES).copied().collect();
    let problems: Vec<String> = exercise_all(&all)
        .into_iter()
        .flat_map(|r| r.skipped_releases.into_iter().chain(r.failures))
        .collect();
    assert!(problems.is_empty(), "leaks: {}", first_few(&problems));
}

/// The checks can fail: planted bugs of each kind are reported.
#[test]
fn the_checks_catch_planted_bugs() {
    let fake = fake::session();
    let double_free = faults::exercise(&fake, "planted double free", &|| {
        let buffer = DeviceBuffer::<u8>::alloc(&primary()?, 16)?;
        // SAFETY: deliberately breaks `as_raw`'s contract (the buffer frees the pointer again on drop);
        // the stand-in refuses the second free instead of touching freed memory.
        unsafe { cuda_driver::sys::driver()?.cuMemFree_v2()?(buffer.as_raw()) };
        Ok(())
    });
    assert!(double_free.failures.iter().any(|f| f.contains("1 double frees")), "{:?}", double_free.failures);

    let leak = faults::exercise(&fake, "planted leak", &|| {
        let context = primary()?;
        context.set_current()?;
        let mut stream = std::ptr::null_mut();
        // SAFETY: `stream` is a valid out-pointer and a context is current; the stream is never
        // destroyed, on purpose.
        let result = unsafe { cuda_driver::sys::driver()?.cuStreamCreate()?(&mut stream, 0) };
        expect("cuStreamCreate", result, cuda_driver::sys::driver::CUresult::CUDA_SUCCESS)
    });
    assert!(leak.failures.iter().any(|f| f.contains("1 objects destroyed with their context")), "{:?}", leak.failures);
    fake.destroy_all();

    let wrong_error = faults::exercise(&fake, "planted wrong error", &|| {
        let context = primary()?;
        DeviceBuffer::<u8>::alloc(&context, 16).map_err(|_| Error::InvalidValue("lost the code".into()))?;
        Ok(())
    });
    assert!(wrong_error.failures.iter().any(|f| f.contains("wrong error")), "{:?}", wrong_error.failures);

    let panic = faults::exercise(&fake, "planted panic", &|| {
        let context = primary()?;
        DeviceBuffer::<u8>::alloc(&context, 16).expect("planted");
        Ok(())
    });
    assert!(panic.failures.iter().any(|f| f.contains("panicked: planted")), "{:?}", panic.failures);
    faults::clear_current_contexts();
    fake.destroy_all();
}
