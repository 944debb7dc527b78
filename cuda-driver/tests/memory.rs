//! Device and pinned host memory: copies, views, and bad input.

mod common;

use cuda_driver::sys::driver::CUresult;
use cuda_driver::{DeviceBuffer, Error, HostAllocFlags, HostBuffer, Stream};

#[test]
fn zero_length_and_overflowing_buffers_are_refused() {
    let Some(context) = common::context() else { return };
    assert!(matches!(
        DeviceBuffer::<f32>::alloc(&context, 0),
        Err(Error::InvalidValue(_))
    ));
    assert!(matches!(
        DeviceBuffer::<f32>::zeroed(&context, 0),
        Err(Error::InvalidValue(_))
    ));
    assert!(matches!(
        DeviceBuffer::<f32>::from_slice(&context, &[]),
        Err(Error::InvalidValue(_))
    ));
    assert!(matches!(
        HostBuffer::<f32>::new(&context, 0),
        Err(Error::InvalidValue(_))
    ));
    assert!(matches!(
        DeviceBuffer::<u64>::alloc(&context, usize::MAX),
        Err(Error::InvalidValue(_))
    ));
    let stream = Stream::new(&context).unwrap();
    assert!(matches!(
        DeviceBuffer::<f32>::alloc_async(&stream, 0),
        Err(Error::InvalidValue(_))
    ));
    // Representable but far more than the device has: the driver's out-of-memory error.
    let error = DeviceBuffer::<u8>::alloc(&context, 1 << 50).unwrap_err();
    assert_eq!(error.code(), Some(CUresult::CUDA_ERROR_OUT_OF_MEMORY), "{error}");
    context.synchronize().unwrap();
}

#[test]
fn copy_length_mismatches_are_refused() {
    let Some(context) = common::context() else { return };
    let mut buffer = DeviceBuffer::<i32>::zeroed(&context, 10).unwrap();
    let other = DeviceBuffer::<i32>::zeroed(&context, 9).unwrap();
    assert!(matches!(buffer.copy_from_host(&[1; 9]), Err(Error::InvalidValue(_))));
    assert!(matches!(buffer.copy_to_host(&mut [0; 11]), Err(Error::InvalidValue(_))));
    assert!(matches!(buffer.copy_from_device(&other), Err(Error::InvalidValue(_))));
    let stream = Stream::new(&context).unwrap();
    let host = HostBuffer::<i32>::new(&context, 11).unwrap();
    assert!(matches!(
        buffer.copy_from_host_async(&host, &stream),
        Err(Error::InvalidValue(_))
    ));
    assert!(matches!(buffer.try_slice(5..11), Err(Error::InvalidValue(_))));
    let (start, end) = (7, 3);
    assert!(matches!(buffer.try_slice(start..end), Err(Error::InvalidValue(_))));
    // Nothing was written.
    assert_eq!(buffer.to_vec().unwrap(), [0; 10]);
}

#[test]
fn copies_round_trip_through_views() {
    let Some(context) = common::context() else { return };
    let data: Vec<u64> = (0..1000).collect();
    let source = DeviceBuffer::from_slice(&context, &data).unwrap();
    let mut copy = DeviceBuffer::<u64>::zeroed(&context, 1000).unwrap();
    copy.copy_from_device(&source).unwrap();
    assert_eq!(copy.to_vec().unwrap(), data);

    copy.slice_mut(100..200).memset_zero().unwrap();
    copy.slice_mut(0..10).copy_from_host(&[7; 10]).unwrap();
    let mut tail = vec![0u64; 500];
    copy.slice(500..).copy_to_host(&mut tail).unwrap();
    assert_eq!(tail, data[500..]);
    let all = copy.to_vec().unwrap();
    assert_eq!(all[..10], [7; 10]);
    assert_eq!(all[10..100], data[10..100]);
    assert!(all[100..200].iter().all(|&v| v == 0));

    // Sub-views of views, and device-to-device copies between views.
    let mut target = DeviceBuffer::<u64>::zeroed(&context, 50).unwrap();
    let inner = source.slice(200..400).slice(50..100);
    target.copy_from_device(&inner).unwrap();
    assert_eq!(target.to_vec().unwrap(), data[250..300]);
    assert!(source.slice(10..10).is_empty());
}

#[test]
fn async_copies_through_pinned_memory() {
    let Some(context) = common::context() else { return };
    let stream = Stream::new(&context).unwrap();
    let n = 1 << 20;
    let mut host = HostBuffer::<f32>::new(&context, n).unwrap();
    for (i, v) in host.iter_mut().enumerate() {
        *v = i as f32;
    }
    let mut device = DeviceBuffer::<f32>::alloc(&context, n).unwrap();
    device.copy_from_host_async(&host, &stream).unwrap();
    let mut back = HostBuffer::<f32>::with_flags(&context, n, HostAllocFlags::PORTABLE).unwrap();
    device.copy_to_host_async(&mut back, &stream).unwrap();
    // Reading `back` waits for the stream.
    assert!(back.iter().enumerate().all(|(i, &v)| v == i as f32));

    // Pageable memory works with the async calls too (the call returns when it is safe).
    let pageable: Vec<f32> = (0..n).map(|i| -(i as f32)).collect();
    device.copy_from_host_async(&pageable, &stream).unwrap();
    let mut out = vec![0f32; n];
    device.copy_to_host_async(&mut out, &stream).unwrap();
    assert_eq!(out, pageable);
    // A slice of pinned memory is waited for before the call returns.
    device.copy_from_host_async(&host[..], &stream).unwrap();
    device.memset_zero_async(&stream).unwrap();
    stream.synchronize().unwrap();
    assert!(device.to_vec().unwrap().iter().all(|&v| v == 0.0));
}

#[test]
fn buffers_cross_threads() {
    let Some(context) = common::context() else { return };
    let module = common::kernels(&context);
    let add = module.function("vector_add").unwrap();
    let n = 10_000usize;
    let a = DeviceBuffer::from_slice(&context, &vec![1.0f32; n]).unwrap();
    let b = DeviceBuffer::from_slice(&context, &vec![2.0f32; n]).unwrap();
    let c = DeviceBuffer::<f32>::zeroed(&context, n).unwrap();
    // Launch, read back and drop on other threads, none of which made the context current.
    let result = std::thread::spawn(move || {
        let mut c = c;
        let stream = Stream::new(a.context()).unwrap();
        let config = cuda_driver::LaunchConfig::for_num_elems(n as u32);
        // SAFETY: vector_add reads a, b and writes c, n elements each.
        unsafe { stream.launch(&add, &config, (&a, &b, &mut c, n as u32)) }.unwrap();
        drop(a);
        drop(b);
        let handle = std::thread::spawn(move || {
            stream.synchronize().unwrap();
            c.to_vec().unwrap()
        });
        handle.join().unwrap()
    })
    .join()
    .unwrap();
    assert!(result.iter().all(|&v| v == 3.0));

    // Many threads share one buffer by reference.
    let shared = DeviceBuffer::from_slice(&context, &(0..1024).collect::<Vec<u32>>()).unwrap();
    std::thread::scope(|scope| {
        for t in 0..8u32 {
            let shared = &shared;
            scope.spawn(move || {
                let part = shared
                    .slice((t * 128) as usize..((t + 1) * 128) as usize)
                    .to_vec()
                    .unwrap();
                assert_eq!(part, (t * 128..(t + 1) * 128).collect::<Vec<u32>>());
            });
        }
    });
    context.synchronize().unwrap();
}
