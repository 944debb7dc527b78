//! Streams, events, host callbacks, graphs and memory pools.

mod common;

use std::sync::{Arc, Mutex};
use std::time::Instant;

use cuda_driver::{
    CaptureMode, DeviceBuffer, Event, EventFlags, HostBuffer, LaunchConfig, MemPool, Stream, StreamFlags,
};

#[test]
fn async_copies_on_two_streams_overlap_and_are_timed() {
    let Some(context) = common::context() else { return };
    let module = common::kernels(&context);
    let spin = module.function("spin").unwrap();
    let saxpy = module.function("saxpy").unwrap();
    let cycles = u64::from(context.device().clock_rate_khz().unwrap()) * 50; // about 50 ms
    let n = 8 << 20;
    let streams = [Stream::new(&context).unwrap(), Stream::new(&context).unwrap()];
    let mut hosts: Vec<HostBuffer<f32>> = (0..2)
        .map(|s| HostBuffer::from_slice(&context, &vec![s as f32 + 1.0; n]).unwrap())
        .collect();
    let mut devices: Vec<DeviceBuffer<f32>> = (0..2).map(|_| DeviceBuffer::alloc(&context, n).unwrap()).collect();
    let mut done: Vec<DeviceBuffer<i32>> = (0..2).map(|_| DeviceBuffer::zeroed(&context, 1).unwrap()).collect();
    let events: Vec<(Event, Event)> = (0..2)
        .map(|_| {
            (
                Event::new(&context, EventFlags::DEFAULT).unwrap(),
                Event::new(&context, EventFlags::DEFAULT).unwrap(),
            )
        })
        .collect();
    let start = Instant::now();
    for s in 0..2 {
        let stream = &streams[s];
        events[s].0.record(stream).unwrap();
        devices[s].copy_from_host_async(&hosts[s], stream).unwrap();
        // SAFETY: spin writes done[0] (one block); saxpy updates n floats of devices[s] in place.
        unsafe {
            stream
                .launch(&spin, &LaunchConfig::new((1, 1, 1), (32, 1, 1)), (cycles, &mut done[s]))
                .unwrap();
            let x = &devices[s];
            let y = x.as_slice();
            stream
                .launch(&saxpy, &LaunchConfig::for_num_elems(n as u32), (1.0f32, x, y, n as u32))
                .unwrap();
        }
        devices[s].copy_to_host_async(&mut hosts[s], stream).unwrap();
        events[s].1.record(stream).unwrap();
    }
    for (s, stream) in streams.iter().enumerate() {
        stream.synchronize().unwrap();
        assert!(events[s].1.query().unwrap());
    }
    let wall = start.elapsed().as_secs_f32() * 1000.0;
    let times: Vec<f32> = events.iter().map(|(a, b)| a.elapsed_ms(b).unwrap()).collect();
    let span = events[0]
        .0
        .elapsed_ms(&events[1].1)
        .unwrap()
        .max(events[1].0.elapsed_ms(&events[0].1).unwrap());
    println!("stream times {:?} ms, both {span:.2} ms, wall {wall:.2} ms", times);
    for (s, host) in hosts.iter().enumerate() {
        let expected = 2.0 * (s as f32 + 1.0);
        assert!(host.iter().all(|&v| v == expected), "stream {s}");
        assert!(
            times[s] >= 40.0,
            "stream {s} took {} ms, less than its 50 ms spin",
            times[s]
        );
    }
    assert!(
        span < 0.9 * (times[0] + times[1]),
        "streams did not overlap: {times:?}, together {span}"
    );
}

#[test]
fn host_callbacks_run_in_stream_order() {
    let Some(context) = common::context() else { return };
    let saxpy = common::kernels(&context).function("saxpy").unwrap();
    let stream = Stream::new(&context).unwrap();
    let order = Arc::new(Mutex::new(Vec::new()));
    let n = 1 << 20;
    let x = DeviceBuffer::from_slice(&context, &vec![1.0f32; n]).unwrap();
    let mut y = DeviceBuffer::<f32>::zeroed(&context, n).unwrap();
    let config = LaunchConfig::for_num_elems(n as u32);
    for i in 0..10 {
        if i % 3 == 0 {
            // SAFETY: saxpy reads x and updates y, n floats each.
            unsafe { stream.launch(&saxpy, &config, (1.0f32, &x, &mut y, n as u32)) }.unwrap();
        }
        let order = Arc::clone(&order);
        stream.launch_host_func(move || order.lock().unwrap().push(i)).unwrap();
    }
    stream
        .launch_host_func(|| panic!("a panicking callback is caught"))
        .unwrap();
    let order2 = Arc::clone(&order);
    stream
        .launch_host_func(move || order2.lock().unwrap().push(99))
        .unwrap();
    stream.synchronize().unwrap();
    let mut expected: Vec<i32> = (0..10).collect();
    expected.push(99);
    assert_eq!(*order.lock().unwrap(), expected);
    assert!(y.to_vec().unwrap().iter().all(|&v| v == 4.0));
}

#[test]
fn pinned_and_pageable_copies() {
    let Some(context) = common::context() else { return };
    let n = 64 << 20; // 256 MiB of f32
    let stream = Stream::new(&context).unwrap();
    let pageable: Vec<f32> = (0..n).map(|i| (i % 1000) as f32).collect();
    let pinned = HostBuffer::from_slice(&context, &pageable).unwrap();
    let mut device = DeviceBuffer::<f32>::alloc(&context, n).unwrap();
    let bytes = (n * 4) as f32;

    device.copy_from_host(&pageable).unwrap(); // warm up
    let start = Instant::now();
    device.copy_from_host(&pageable).unwrap();
    let pageable_s = start.elapsed().as_secs_f32();
    assert_eq!(device.slice(n - 5..).to_vec().unwrap(), pageable[n - 5..]);

    device.memset_zero().unwrap();
    let (begin, end) = (
        Event::new(&context, EventFlags::DEFAULT).unwrap(),
        Event::new(&context, EventFlags::DEFAULT).unwrap(),
    );
    begin.record(&stream).unwrap();
    device.copy_from_host_async(&pinned, &stream).unwrap();
    end.record(&stream).unwrap();
    end.synchronize().unwrap();
    let pinned_s = begin.elapsed_ms(&end).unwrap() / 1000.0;
    assert_eq!(device.to_vec().unwrap(), pageable);
    println!(
        "host to device, 256 MiB: pageable {:.1} GB/s, pinned {:.1} GB/s",
        bytes / pageable_s / 1e9,
        bytes / pinned_s / 1e9
    );
    assert!(pinned_s > 0.0 && pageable_s > 0.0);
}

#[test]
fn captured_graph_replays_1000_times() {
    let Some(context) = common::context() else { return };
    let saxpy = common::kernels(&context).function("saxpy").unwrap();
    let n = 4096u32;
    let ones = DeviceBuffer::from_slice(&context, &vec![1.0f32; n as usize]).unwrap();
    let mut data = DeviceBuffer::<f32>::zeroed(&context, n as usize).unwrap();
    let stream = Stream::with_options(&context, StreamFlags::NON_BLOCKING, 0).unwrap();
    let config = LaunchConfig::for_num_elems(n);
    // data += 1 (saxpy with a = 1, x = ones), once outside the graph, which also warms up the checks.
    // SAFETY: saxpy reads `ones` and updates `data`, n floats each.
    unsafe { stream.launch(&saxpy, &config, (1.0f32, &ones, &mut data, n)) }.unwrap();
    stream.begin_capture(CaptureMode::ThreadLocal).unwrap();
    assert!(stream.is_capturing().unwrap());
    // SAFETY: as above; captured, not run.
    unsafe { stream.launch(&saxpy, &config, (1.0f32, &ones, &mut data, n)) }.unwrap();
    assert!(
        stream.launch_host_func(|| {}).is_err(),
        "host functions are refused while capturing"
    );
    let graph = stream.end_capture().unwrap();
    assert!(!stream.is_capturing().unwrap());
    assert_eq!(graph.node_count().unwrap(), 1);
    let exec = graph.instantiate().unwrap();
    exec.upload(&stream).unwrap();
    for _ in 0..1000 {
        // SAFETY: `ones` and `data`, the only memory the graph uses, outlive every replay.
        unsafe { exec.launch(&stream) }.unwrap();
    }
    stream.synchronize().unwrap();
    assert!(data.to_vec().unwrap().iter().all(|&v| v == 1001.0));
}

#[test]
fn pool_allocations_are_stream_ordered() {
    let Some(context) = common::context() else { return };
    if !context.device().memory_pools_supported().unwrap() {
        common::skip::<()>("the device has no memory pools");
        return;
    }
    let device = context.device();
    let pool = MemPool::device_default(&device).unwrap();
    pool.set_release_threshold(64 << 20).unwrap();
    assert_eq!(pool.release_threshold().unwrap(), 64 << 20);
    let fill = common::kernels(&context).function("fill").unwrap();
    let stream = Stream::new(&context).unwrap();
    let n = 1 << 20;
    let config = LaunchConfig::for_num_elems(n as u32);
    let used_before = pool.used_memory().unwrap();
    let mut data = DeviceBuffer::<f32>::alloc_async(&stream, n).unwrap();
    data.memset_zero_async(&stream).unwrap();
    // SAFETY: fill writes n floats of `data`.
    unsafe { stream.launch(&fill, &config, (&mut data, 1.0f32, n as u32)) }.unwrap();
    stream.synchronize().unwrap();
    assert!(pool.used_memory().unwrap() >= used_before + (n * 4) as u64);
    let mut host = HostBuffer::<f32>::new(&context, n).unwrap();
    data.copy_to_host_async(&mut host, &stream).unwrap();
    drop(data); // freed in stream order, after the copy
    stream.synchronize().unwrap();
    assert!(host.iter().all(|&v| v == 1.0));
    assert_eq!(pool.used_memory().unwrap(), used_before);

    // A buffer from an explicit pool, used on a second stream.
    let own = MemPool::new(&device).unwrap();
    let other = Stream::new(&context).unwrap();
    let mut data = DeviceBuffer::<f32>::alloc_from_pool_async(&own, &stream, n).unwrap();
    data.memset_zero_async(&stream).unwrap();
    // SAFETY: fill writes n floats; the first use on `other` waits for the allocation's stream.
    unsafe { other.launch(&fill, &config, (&mut data, 2.0f32, n as u32)) }.unwrap();
    other.synchronize().unwrap();
    assert!(data.to_vec().unwrap().iter().all(|&v| v == 2.0));
    assert!(own.used_memory().unwrap() >= (n * 4) as u64);
    drop(data);
    stream.synchronize().unwrap();
    assert_eq!(own.used_memory().unwrap(), 0);
    context.synchronize().unwrap();
}

#[test]
fn stream_and_event_queries() {
    let Some(context) = common::context() else { return };
    let (least, greatest) = context.stream_priority_range().unwrap();
    let stream = Stream::with_options(&context, StreamFlags::NON_BLOCKING, greatest).unwrap();
    assert_eq!(stream.priority().unwrap(), greatest);
    assert!(stream.flags().unwrap().contains(StreamFlags::NON_BLOCKING));
    assert!(least >= greatest);
    assert!(stream.query().unwrap());
    let event = Event::new(&context, EventFlags::DISABLE_TIMING).unwrap();
    event.record(&stream).unwrap();
    event.synchronize().unwrap();
    assert!(event.query().unwrap());
    assert!(event.elapsed_ms(&event).is_err(), "timing is disabled");
    let waiter = Stream::new(&context).unwrap();
    waiter.wait_event(&event).unwrap();
    waiter.synchronize().unwrap();
}
