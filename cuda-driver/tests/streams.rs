//! Streams, events, host callbacks, pinned copies and memory pools.

mod common;

use std::sync::{Arc, Mutex};
use std::time::Instant;

use cuda_driver::{DeviceBuffer, Event, EventFlags, HostBuffer, LaunchConfig, MemPool, Stream, StreamFlags};

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
