//! Tests that need a GPU. Without one each prints `skipped: ...` and
//! returns; with `CUDA_REQUIRE_GPU=1` a missing GPU fails them instead.

mod common;

use std::ffi::c_void;

use cuda_driver::DeviceAttribute as A;
use cuda_runtime::{
    launch_raw, Device, DeviceAttribute, DeviceMemory, Error, Event, EventFlags, HostAllocFlags, LaunchConfig, Library,
    MemPool, PinnedHostMemory, Stream, StreamFlags,
};
use cuda_sys::runtime::cudaError_t;

#[test]
fn properties_match_the_driver_crate() {
    let Some(device) = common::gpu("properties_match_the_driver_crate") else {
        return;
    };
    let props = device.properties().unwrap();
    println!(
        "{} sm_{}{}: {} SMs, {} MiB, uuid {:02x?}",
        props.name,
        props.major,
        props.minor,
        props.multiprocessor_count,
        props.total_global_mem >> 20,
        props.uuid
    );
    let driver = cuda_driver::Device::get(device.ordinal()).unwrap();
    let attribute = |a: A| driver.attribute(a).unwrap() as u32;
    assert_eq!(props.name, driver.name().unwrap());
    assert_eq!(props.total_global_mem, driver.total_memory().unwrap());
    assert_eq!(props.uuid, driver.uuid().unwrap());
    assert_eq!(props.compute_capability(), driver.compute_capability().unwrap());
    assert_eq!(
        props.multiprocessor_count,
        attribute(A::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)
    );
    assert_eq!(
        props.max_threads_per_block,
        attribute(A::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK)
    );
    assert_eq!(props.warp_size, attribute(A::CU_DEVICE_ATTRIBUTE_WARP_SIZE));
    assert_eq!(
        props.shared_mem_per_block,
        attribute(A::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK) as usize
    );
    assert_eq!(
        props.l2_cache_size,
        attribute(A::CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE) as usize
    );
    assert_eq!(props.pci_bus_id, attribute(A::CU_DEVICE_ATTRIBUTE_PCI_BUS_ID));
    assert_eq!(props.pci_device_id, attribute(A::CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID));
    assert_eq!(props.pci_domain_id, attribute(A::CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID));
    let (x, y, z) = driver.max_grid_dim().unwrap();
    assert_eq!(props.max_grid_size, [x, y, z]);
    // Clocks are attributes since CUDA 13; where the runtime reports one it must agree.
    if let Some(khz) = props.clock_rate_khz {
        assert_eq!(khz, attribute(A::CU_DEVICE_ATTRIBUTE_CLOCK_RATE));
    }
    assert!(
        props.warp_size == 32 && props.max_threads_per_block >= 1024,
        "{props:?}"
    );
    let runtime_sms = device
        .attribute(DeviceAttribute::cudaDevAttrMultiProcessorCount)
        .unwrap();
    assert_eq!(runtime_sms as u32, props.multiprocessor_count);
    let (free, total) = device.memory_info().unwrap();
    assert!(free <= total && total == props.total_global_mem, "{free} of {total}");
    println!(
        "runtime {} driver {}",
        cuda_runtime::runtime_version().unwrap(),
        cuda_runtime::driver_version().unwrap()
    );
}

#[test]
fn memory_round_trips_fills_and_rejects_mismatched_lengths() {
    let Some(device) = common::gpu("memory_round_trips_fills_and_rejects_mismatched_lengths") else {
        return;
    };
    let data: Vec<u32> = (0..100_000).collect();
    let mut a = DeviceMemory::from_slice(device, &data).unwrap();
    assert_eq!(a.to_vec().unwrap(), data);
    assert_eq!(
        (a.len(), a.size_bytes(), a.device()),
        (data.len(), data.len() * 4, device)
    );
    let mut b = DeviceMemory::<u32>::zeroed(device, data.len()).unwrap();
    assert!(b.to_vec().unwrap().iter().all(|&x| x == 0));
    b.copy_from_device(&a).unwrap();
    let mut out = vec![0u32; data.len()];
    b.copy_to_host(&mut out).unwrap();
    assert_eq!(out, data);
    // SAFETY: any byte pattern is a valid u32.
    unsafe { b.set_bytes(0xAB).unwrap() };
    assert!(b.to_vec().unwrap().iter().all(|&x| x == 0xABAB_ABAB));
    b.set_zero().unwrap();
    assert!(b.to_vec().unwrap().iter().all(|&x| x == 0));

    let mismatch = |r: cuda_runtime::Result<()>, expected, found| match r {
        Err(Error::LengthMismatch { expected: e, found: f }) => assert_eq!((e, f), (expected, found)),
        other => panic!("expected a length mismatch, got {other:?}"),
    };
    mismatch(a.copy_from_host(&data[..5]), data.len(), 5);
    mismatch(a.copy_to_host(&mut vec![0; data.len() + 1]), data.len(), data.len() + 1);
    let small = DeviceMemory::<u32>::zeroed(device, 5).unwrap();
    mismatch(b.copy_from_device(&small), data.len(), 5);
    assert_eq!(a.to_vec().unwrap(), data, "failed copies changed nothing");

    // Sub-ranges: copies land at the right offset, bounds are checked.
    let mut c = DeviceMemory::<u32>::zeroed(device, 10).unwrap();
    c.slice_mut(2..5).unwrap().copy_from_host(&[7, 8, 9]).unwrap();
    c.slice_mut(7..)
        .unwrap()
        .copy_from_device(a.slice(..3).unwrap())
        .unwrap();
    assert_eq!(c.to_vec().unwrap(), [0, 0, 7, 8, 9, 0, 0, 0, 1, 2]);
    assert_eq!(c.slice(3..5).unwrap().to_vec().unwrap(), [8, 9]);
    // SAFETY: any byte pattern is a valid u32.
    unsafe { c.slice_mut(..2).unwrap().set_bytes(1).unwrap() };
    assert_eq!(c.slice(..3).unwrap().to_vec().unwrap(), [0x0101_0101, 0x0101_0101, 7]);
    assert!(matches!(c.slice(5..11), Err(Error::InvalidValue(_))));
    mismatch(c.slice_mut(0..2).unwrap().copy_from_host(&[1, 2, 3]), 2, 3);

    let empty = DeviceMemory::<f64>::zeroed(device, 0).unwrap();
    assert!(empty.is_empty() && empty.to_vec().unwrap().is_empty());

    match DeviceMemory::<u8>::zeroed(device, 1 << 60) {
        Err(Error::Runtime(e)) => assert_eq!(e.code, cudaError_t::cudaErrorMemoryAllocation, "{e}"),
        other => panic!("a 1 EiB allocation must fail with cudaErrorMemoryAllocation, got {other:?}"),
    }
    // That failure is the thread's last error until read.
    assert_eq!(
        cuda_runtime::get_last_error().unwrap_err().code(),
        Some(cudaError_t::cudaErrorMemoryAllocation)
    );
    cuda_runtime::peek_at_last_error().unwrap();
}

#[test]
fn stream_ordered_memory_and_pinned_async_copies() {
    let Some(device) = common::gpu("stream_ordered_memory_and_pinned_async_copies") else {
        return;
    };
    let stream = Stream::with_options(device, StreamFlags::NON_BLOCKING, 0).unwrap();
    assert!(stream.flags().unwrap().contains(StreamFlags::NON_BLOCKING));
    let (least, greatest) = device.stream_priority_range().unwrap();
    let urgent = Stream::with_options(device, StreamFlags::empty(), greatest).unwrap();
    assert_eq!(urgent.priority().unwrap(), greatest);
    assert!(greatest <= least);

    let pool = MemPool::device_default(device).unwrap();
    pool.set_release_threshold(u64::MAX).unwrap();
    assert_eq!(pool.release_threshold().unwrap(), u64::MAX);
    let used_before = pool.used_bytes().unwrap();

    let n = 1 << 20;
    let zeros = DeviceMemory::<f32>::zeroed_async(&stream, n).unwrap();
    assert!(zeros.stream().is_some());
    let used = pool.used_bytes().unwrap();
    assert!(used >= used_before + 4 * n as u64, "{used_before} -> {used}");
    assert!(pool.reserved_bytes().unwrap() >= used);
    assert!(
        zeros.to_vec().unwrap().iter().all(|&x| x == 0.0),
        "blocking read waits for the async fill"
    );

    let data: Vec<f32> = (0..n).map(|i| i as f32 * 0.5).collect();
    let host = PinnedHostMemory::from_slice(device, &data, HostAllocFlags::PORTABLE).unwrap();
    let mut back = PinnedHostMemory::<f32>::zeroed(device, n, HostAllocFlags::empty()).unwrap();
    assert_eq!(&host[..], &data[..]);
    // SAFETY: written by the copy below before any read; all buffers outlive
    // the synchronisation.
    let mut staged = unsafe { DeviceMemory::<f32>::uninit_async(&stream, n).unwrap() };
    unsafe {
        staged.copy_from_host_async(&host, &stream).unwrap();
        staged.copy_to_host_async(&mut back, &stream).unwrap();
    }
    stream.synchronize().unwrap();
    assert_eq!(&back[..], &data[..]);
    assert!(stream.query().unwrap());
    // A host callback runs after the work before it, in order.
    let (sender, receiver) = std::sync::mpsc::channel();
    let first = sender.clone();
    stream.launch_host_func(move || first.send(1).unwrap()).unwrap();
    stream
        .launch_host_func(|| panic!("caught, not unwound into the runtime"))
        .unwrap();
    stream.launch_host_func(move || sender.send(2).unwrap()).unwrap();
    stream.synchronize().unwrap();
    assert_eq!(receiver.try_iter().collect::<Vec<_>>(), [1, 2]);
    // Freed stream-ordered (cudaFreeAsync on `stream`), then the stream goes.
    drop(staged);
    drop(zeros);
    stream.synchronize().unwrap();
    assert!(
        pool.used_bytes().unwrap() < used,
        "freed stream-ordered memory went back to the pool"
    );
    pool.trim_to(0).unwrap();
    pool.set_release_threshold(0).unwrap();
    drop(stream);
    cuda_runtime::get_last_error().unwrap();
}

#[test]
fn events_time_work_and_order_streams() {
    let Some(device) = common::gpu("events_time_work_and_order_streams") else {
        return;
    };
    let stream = Stream::new(device).unwrap();
    let other = Stream::with_options(device, StreamFlags::NON_BLOCKING, 0).unwrap();
    let start = Event::new(device, EventFlags::empty()).unwrap();
    let end = Event::new(device, EventFlags::BLOCKING_SYNC).unwrap();
    let mut big = DeviceMemory::<u8>::zeroed(device, 256 << 20).unwrap();
    start.record(&stream).unwrap();
    // SAFETY: `big` outlives the synchronisation below.
    unsafe { big.set_zero_async(&stream).unwrap() };
    end.record(&stream).unwrap();
    other.wait_event(&end).unwrap();
    other.synchronize().unwrap();
    assert!(end.query().unwrap(), "`other` waited for `end`");
    end.synchronize().unwrap();
    let ms = start.elapsed_ms(&end).unwrap();
    println!("256 MiB memset: {ms:.3} ms");
    assert!(ms.is_finite() && ms >= 0.0);

    let untimed = Event::new(device, EventFlags::DISABLE_TIMING).unwrap();
    untimed.record(&stream).unwrap();
    untimed.synchronize().unwrap();
    match start.elapsed_ms(&untimed) {
        Err(Error::Runtime(e)) => println!("elapsed_ms to an untimed event: {e}"),
        other => panic!("timing against a DISABLE_TIMING event must fail, got {other:?}"),
    }
    // Clear that expected failure from the thread's last error.
    let _ = cuda_runtime::get_last_error();
}

/// `SCALE_ADD` compiled by NVRTC to a CUBIN for `device`'s architecture, loaded.
fn scale_add_cubin(device: Device) -> Library {
    let props = device.properties().unwrap();
    let arch = format!("sm_{}{}", props.major, props.minor);
    Library::load(&common::compile(common::SCALE_ADD, common::Output::Cubin(arch))).unwrap()
}

fn expected_scale_add(data: &[f32], offset: &[f32], factor: f32) -> Vec<f32> {
    data.iter().zip(offset).map(|(d, o)| d * factor + o).collect()
}

#[test]
fn nvrtc_cubin_kernel_launches_through_the_runtime_on_a_driver_stream() {
    let Some(device) = common::gpu("nvrtc_cubin_kernel_launches_through_the_runtime_on_a_driver_stream") else {
        return;
    };
    let library = scale_add_cubin(device);
    assert_eq!(library.kernel_count().unwrap(), 1);
    let kernel = library.kernel("scale_add").unwrap();
    let sizes: Vec<usize> = kernel.param_info().unwrap().iter().map(|p| p.size).collect();
    assert_eq!(sizes, [8, 8, 4, 4]);
    match library.kernel("no_such_kernel") {
        Err(Error::Runtime(e)) => println!("missing kernel: {e}"),
        other => panic!("expected a runtime error, got {other:?}"),
    }
    let _ = cuda_runtime::get_last_error();

    // A stream made by cuda-driver in the primary context, which the runtime shares.
    let context = cuda_driver::Context::primary(&cuda_driver::Device::get(device.ordinal()).unwrap()).unwrap();
    let driver_stream = cuda_driver::Stream::with_options(&context, cuda_driver::StreamFlags::NON_BLOCKING, 0).unwrap();
    {
        // SAFETY: `driver_stream` outlives `stream` (this block).
        let raw = unsafe { driver_stream.as_raw() };
        // SAFETY: as above.
        let stream = unsafe { Stream::from_raw(raw.cast()) }.unwrap();
        assert_eq!(stream.device(), device);
        // SAFETY: only compared.
        assert_eq!(unsafe { stream.as_raw() }, raw.cast());
        assert!(stream.flags().unwrap().contains(StreamFlags::NON_BLOCKING));

        let n = 100_003u32;
        let data: Vec<f32> = (0..n).map(|i| i as f32).collect();
        let offset: Vec<f32> = (0..n).map(|i| (i % 7) as f32).collect();
        let mut d = DeviceMemory::from_slice(device, &data).unwrap();
        let off = DeviceMemory::from_slice(device, &offset).unwrap();
        let config = LaunchConfig::for_num_elems(n);
        // SAFETY: scale_add(float*, const float*, float, unsigned) touches [0, n) of both.
        unsafe { stream.launch(&kernel, &config, (&mut d, &off, 2.0f32, n)).unwrap() };
        stream.synchronize().unwrap();
        assert_eq!(d.to_vec().unwrap(), expected_scale_add(&data, &offset, 2.0));

        // Host-side checks: nothing is launched.
        // SAFETY (all below): every call is rejected before the launch.
        match unsafe { stream.launch(&kernel, &config, (&mut d, &off, 2.0f64, n)) } {
            Err(Error::ArgumentSize {
                index: 2,
                expected: 4,
                found: 8,
                ..
            }) => {}
            other => panic!("expected an argument size error, got {other:?}"),
        }
        match unsafe { stream.launch(&kernel, &config, (&mut d, &off, 2.0f32)) } {
            Err(Error::ArgumentCount {
                expected: 4, found: 3, ..
            }) => {}
            other => panic!("expected an argument count error, got {other:?}"),
        }
        for bad in [
            LaunchConfig {
                block: (2048, 1, 1),
                ..config
            },
            LaunchConfig {
                grid: (0, 1, 1),
                ..config
            },
            LaunchConfig {
                shared_mem_bytes: u32::MAX,
                ..config
            },
        ] {
            match unsafe { stream.launch(&kernel, &bad, (&mut d, &off, 2.0f32, n)) } {
                Err(Error::InvalidValue(why)) => println!("rejected: {why}"),
                other => panic!("expected {bad:?} to be rejected, got {other:?}"),
            }
        }
        let mut two = [std::ptr::null_mut::<c_void>(); 2];
        match unsafe { launch_raw(&kernel, &config, &stream, &mut two) } {
            Err(Error::ArgumentCount {
                expected: 4, found: 2, ..
            }) => {}
            other => panic!("expected an argument count error, got {other:?}"),
        }
        assert_eq!(
            d.to_vec().unwrap(),
            expected_scale_add(&data, &offset, 2.0),
            "rejected launches ran nothing"
        );

        // The raw form, with pointers to the parameter values.
        // SAFETY: only passed as kernel arguments.
        let (mut pd, mut po) = unsafe { (d.as_raw(), off.as_raw()) };
        let (mut factor, mut count) = (0.5f32, n);
        let mut args = [
            std::ptr::addr_of_mut!(pd).cast::<c_void>(),
            std::ptr::addr_of_mut!(po).cast(),
            std::ptr::addr_of_mut!(factor).cast(),
            std::ptr::addr_of_mut!(count).cast(),
        ];
        // SAFETY: one pointer per parameter, of the parameter's type.
        unsafe { launch_raw(&kernel, &config, &stream, &mut args).unwrap() };
        stream.synchronize().unwrap();
        let once = expected_scale_add(&data, &offset, 2.0);
        assert_eq!(d.to_vec().unwrap(), expected_scale_add(&once, &offset, 0.5));
    }
    // Dropping the borrowed runtime view left the driver's stream alive.
    driver_stream.synchronize().unwrap();
    assert!(driver_stream.query().unwrap());

    // The other way: cuda-driver borrows a runtime stream.
    let runtime_stream = Stream::new(device).unwrap();
    let mut filled = DeviceMemory::<u32>::zeroed(device, 1 << 20).unwrap();
    // SAFETY: `filled` outlives the synchronisation below.
    unsafe { filled.set_zero_async(&runtime_stream).unwrap() };
    // SAFETY: `runtime_stream` outlives `borrowed`.
    let borrowed = unsafe { cuda_driver::Stream::from_raw(&context, runtime_stream.as_raw().cast()) };
    borrowed.synchronize().unwrap();
    assert!(runtime_stream.query().unwrap());
    drop(borrowed);
    runtime_stream.synchronize().unwrap();
    cuda_runtime::get_last_error().unwrap();
}

#[test]
fn nvrtc_ptx_kernel_launches_from_another_thread() {
    let Some(device) = common::gpu("nvrtc_ptx_kernel_launches_from_another_thread") else {
        return;
    };
    let props = device.properties().unwrap();
    let arch = format!("compute_{}{}", props.major, props.minor);
    let ptx = common::compile(common::SCALE_ADD, common::Output::Ptx(arch));
    let library = Library::from_ptx(std::str::from_utf8(&ptx).unwrap().trim_end_matches('\0')).unwrap();
    let kernel = library.kernel("scale_add").unwrap();
    let stream = Stream::new(device).unwrap();
    let n = 4096u32;
    let data: Vec<f32> = (0..n).map(|i| i as f32).collect();
    let offset = vec![1.0f32; n as usize];
    let mut d = DeviceMemory::from_slice(device, &data).unwrap();
    let off = DeviceMemory::from_slice(device, &offset).unwrap();
    // A fresh thread has no current device: every object selects its own.
    std::thread::scope(|scope| {
        scope
            .spawn(|| {
                let config = LaunchConfig::for_num_elems(n);
                // SAFETY: scale_add touches [0, n) of both buffers.
                unsafe { stream.launch(&kernel, &config, (&mut d, &off, 3.0f32, n)).unwrap() };
                stream.synchronize().unwrap();
            })
            .join()
            .unwrap();
    });
    let once = expected_scale_add(&data, &offset, 3.0);
    assert_eq!(d.to_vec().unwrap(), once);
    // Slices as arguments: only the second half changes.
    let half = n / 2;
    let config = LaunchConfig::for_num_elems(half);
    let (tail, tail_offset) = (
        d.slice_mut(half as usize..).unwrap(),
        off.slice(half as usize..).unwrap(),
    );
    // SAFETY: scale_add touches [0, half) of two slices of `half` elements.
    unsafe {
        stream
            .launch(&kernel, &config, (tail, tail_offset, 10.0f32, half))
            .unwrap()
    };
    stream.synchronize().unwrap();
    let h = half as usize;
    let mut expected = once.clone();
    expected[h..].copy_from_slice(&expected_scale_add(&once[h..], &offset[h..], 10.0));
    assert_eq!(d.to_vec().unwrap(), expected);
    let on_other_thread = std::thread::scope(|scope| scope.spawn(|| off.to_vec().unwrap()).join().unwrap());
    assert_eq!(on_other_thread, offset);
    cuda_runtime::device_synchronize().unwrap();
    device.synchronize().unwrap();
    assert_eq!(cuda_runtime::current_device().unwrap(), device);
}

#[test]
fn captured_graph_replays_a_kernel_and_kernel_attributes_are_reported() {
    let Some(device) = common::gpu("captured_graph_replays_a_kernel_and_kernel_attributes_are_reported") else {
        return;
    };
    let props = device.properties().unwrap();
    let library = scale_add_cubin(device);
    let kernel = library.kernel("scale_add").unwrap();
    let attributes = kernel.attributes(device).unwrap();
    println!("{attributes:?}");
    assert!(
        attributes.max_threads_per_block >= 256 && attributes.num_regs > 0,
        "{attributes:?}"
    );
    assert_eq!(attributes.binary_version, props.major * 10 + props.minor);
    let blocks = kernel.max_active_blocks_per_multiprocessor(device, 256, 0).unwrap();
    assert!(blocks >= 1, "{blocks} blocks of 256 threads per SM");
    assert_eq!(kernel.param_info().unwrap().len(), 4);

    let n = 1 << 16;
    let mut data = DeviceMemory::from_slice(device, &vec![1.0f32; n as usize]).unwrap();
    let zeros = DeviceMemory::<f32>::zeroed(device, n as usize).unwrap();
    let stream = Stream::with_options(device, StreamFlags::NON_BLOCKING, 0).unwrap();
    let config = LaunchConfig::for_num_elems(n);
    // SAFETY: nothing is allocated on the stream during the capture; the
    // buffers outlive every replay (synchronised below).
    unsafe {
        stream.begin_capture(cuda_runtime::CaptureMode::ThreadLocal).unwrap();
        assert!(stream.is_capturing().unwrap());
        stream.launch(&kernel, &config, (&mut data, &zeros, 2.0f32, n)).unwrap();
    }
    let graph = stream.end_capture().unwrap();
    assert!(!stream.is_capturing().unwrap());
    assert_eq!(graph.node_count().unwrap(), 1);
    let exec = graph.instantiate().unwrap();
    drop(graph);
    exec.upload(&stream).unwrap();
    assert_eq!(data.to_vec().unwrap(), vec![1.0; n as usize], "capturing ran nothing");
    for _ in 0..3 {
        // SAFETY: as above.
        unsafe { exec.launch(&stream).unwrap() };
    }
    stream.synchronize().unwrap();
    assert_eq!(data.to_vec().unwrap(), vec![8.0; n as usize]);
    cuda_runtime::get_last_error().unwrap();
}
