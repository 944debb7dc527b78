//! Devices and contexts: queries, explicit contexts, and objects of one
//! context refused with another's.

mod common;

use cuda_driver::{
    Context, ContextFlags, ContextLimit, Device, DeviceBuffer, Error, Event, EventFlags, HostBuffer, LaunchConfig,
    Stream,
};

fn wrong_context(result: Result<(), Error>) -> bool {
    matches!(result, Err(Error::WrongContext { .. }))
}

#[test]
fn device_queries() {
    let Some(context) = common::context() else { return };
    let device = context.device();
    assert_eq!(device.ordinal(), 0);
    let name = device.name().unwrap();
    let (major, minor) = device.compute_capability().unwrap();
    let total = device.total_memory().unwrap();
    println!(
        "device 0: {name}, sm_{major}{minor}, {} GiB, {} SMs, driver {}",
        total >> 30,
        device.multiprocessor_count().unwrap(),
        cuda_driver::driver_version().unwrap()
    );
    assert!(!name.is_empty());
    assert!(major >= 5 && total > 0);
    assert_ne!(device.uuid().unwrap(), [0; 16]);
    assert_eq!(device.warp_size().unwrap(), 32);
    assert!(device.max_threads_per_block().unwrap() >= 512);
    assert!(device.max_block_dim().unwrap().0 >= 512);
    assert!(!device.pci_bus_id().unwrap().is_empty());
    assert_eq!(Device::all().unwrap().len() as u32, Device::count().unwrap());
    assert!(Device::get(Device::count().unwrap()).is_err());
    let (free, total_seen) = context.memory_info().unwrap();
    assert!(free <= total_seen && total_seen > 0);
    let stack = context.limit(ContextLimit::CU_LIMIT_STACK_SIZE).unwrap();
    context
        .set_limit(ContextLimit::CU_LIMIT_STACK_SIZE, stack + 1024)
        .unwrap();
    assert!(context.limit(ContextLimit::CU_LIMIT_STACK_SIZE).unwrap() >= stack + 1024);
    context.set_limit(ContextLimit::CU_LIMIT_STACK_SIZE, stack).unwrap();
    // Primary contexts of one device are one context.
    assert_eq!(Context::primary(&device).unwrap(), context);
    assert!(context.is_primary());
}

#[test]
fn explicit_contexts_work_side_by_side() {
    let Some(primary) = common::context() else { return };
    let device = primary.device();
    let first = Context::new(&device, ContextFlags::SCHED_AUTO).unwrap();
    let second = Context::new(&device, ContextFlags::SCHED_BLOCKING_SYNC).unwrap();
    assert_ne!(first, second);
    assert_ne!(first, primary);
    for context in [&first, &second] {
        let fill = common::kernels(context).function("fill").unwrap();
        let mut out = DeviceBuffer::<f32>::zeroed(context, 100).unwrap();
        let stream = Stream::new(context).unwrap();
        // SAFETY: fill writes n = 100 floats of `out`.
        unsafe { stream.launch(&fill, &LaunchConfig::for_num_elems(100), (&mut out, 4.0f32, 100u32)) }.unwrap();
        stream.synchronize().unwrap();
        assert!(out.to_vec().unwrap().iter().all(|&v| v == 4.0));
    }
    first.synchronize().unwrap();
    second.synchronize().unwrap();
}

#[test]
fn mixing_contexts_is_refused() {
    let Some(primary) = common::context() else { return };
    let device = primary.device();
    let a = Context::new(&device, ContextFlags::empty()).unwrap();
    let b = Context::new(&device, ContextFlags::empty()).unwrap();
    let fill_a = common::kernels(&a).function("fill").unwrap();
    let stream_a = Stream::new(&a).unwrap();
    let stream_b = Stream::new(&b).unwrap();
    let mut buffer_a = DeviceBuffer::<f32>::zeroed(&a, 64).unwrap();
    let mut buffer_b = DeviceBuffer::<f32>::zeroed(&b, 64).unwrap();
    let config = LaunchConfig::for_num_elems(64);

    // A buffer of B passed to a kernel of A.
    // SAFETY: refused on the host before launching.
    assert!(wrong_context(unsafe {
        stream_a.launch(&fill_a, &config, (&mut buffer_b, 1.0f32, 64u32))
    }));
    // A stream of B with a function of A.
    // SAFETY: refused on the host before launching.
    assert!(wrong_context(unsafe {
        stream_b.launch(&fill_a, &config, (&mut buffer_a, 1.0f32, 64u32))
    }));
    // An event of A recorded on or waited by a stream of B.
    let event_a = Event::new(&a, EventFlags::DEFAULT).unwrap();
    assert!(wrong_context(event_a.record(&stream_b)));
    assert!(wrong_context(stream_b.wait_event(&event_a)));
    let event_b = Event::new(&b, EventFlags::DEFAULT).unwrap();
    event_a.record(&stream_a).unwrap();
    event_b.record(&stream_b).unwrap();
    assert!(matches!(event_a.elapsed_ms(&event_b), Err(Error::WrongContext { .. })));
    // Device-to-device copies between contexts, and async copies on another context's stream.
    assert!(wrong_context(buffer_a.copy_from_device(&buffer_b)));
    assert!(wrong_context(buffer_a.copy_from_device_async(&buffer_b, &stream_a)));
    assert!(wrong_context(buffer_a.memset_zero_async(&stream_b)));
    let host_b = HostBuffer::<f32>::new(&b, 64).unwrap();
    assert!(wrong_context(buffer_a.copy_from_host_async(&host_b, &stream_a)));
    // Nothing ran: both still zero, and both contexts still work.
    assert!(buffer_a.to_vec().unwrap().iter().all(|&v| v == 0.0));
    assert!(buffer_b.to_vec().unwrap().iter().all(|&v| v == 0.0));

    // The explicit peer copy is how memory moves between contexts.
    buffer_b.copy_from_host(&[2.5; 64]).unwrap();
    buffer_a.copy_from_peer(&buffer_b).unwrap();
    assert!(buffer_a.to_vec().unwrap().iter().all(|&v| v == 2.5));
    buffer_b.memset_zero().unwrap();
    buffer_a.copy_from_peer_async(&buffer_b, &stream_a).unwrap();
    stream_a.synchronize().unwrap();
    assert!(buffer_a.to_vec().unwrap().iter().all(|&v| v == 0.0));
    a.synchronize().unwrap();
    b.synchronize().unwrap();
}

#[test]
fn objects_of_several_contexts_drop_in_any_order_on_any_thread() {
    let Some(primary) = common::context() else { return };
    let device = primary.device();
    let contexts: Vec<Context> = (0..3)
        .map(|_| Context::new(&device, ContextFlags::empty()).unwrap())
        .collect();
    let mut objects = Vec::new();
    for context in &contexts {
        let module = common::kernels(context);
        let buffer = DeviceBuffer::from_slice(context, &[1u32, 2, 3]).unwrap();
        let stream = Stream::new(context).unwrap();
        let event = Event::new(context, EventFlags::DEFAULT).unwrap();
        objects.push((module, buffer, stream, event));
    }
    drop(contexts);
    // Drop them interleaved across threads; each object makes its own context current.
    let handles: Vec<_> = objects
        .into_iter()
        .rev()
        .map(|(module, buffer, stream, event)| {
            std::thread::spawn(move || {
                assert_eq!(buffer.to_vec().unwrap(), [1, 2, 3]);
                event.record(&stream).unwrap();
                let context = stream.context().clone();
                drop(stream);
                drop(buffer);
                drop(module);
                drop(event);
                context.synchronize().unwrap();
            })
        })
        .collect();
    for handle in handles {
        handle.join().unwrap();
    }
    primary.synchronize().unwrap();
}
