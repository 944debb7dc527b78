//! Bad input to cuda-driver's public constructors and launches gets a typed
//! error (never a panic, never a driver call with bad arguments), and leaves
//! nothing allocated. Runs against the stand-in driver.

use cuda_core::{DLDevice, DLDeviceType, DLManagedTensor, DLPackError, DLPackTensor, DLTensor, DType, DeviceArray};
use cuda_driver::sys::driver::CUresult;
use cuda_driver::{
    launch_raw, CaptureMode, Context, ContextFlags, Device, DeviceBuffer, Error, Event, EventFlags, HostBuffer,
    LaunchConfig, LaunchError, Library, MemPool, MemoryType, Module, PointerInfo, Stream,
};
use tests::checks::{assert_clean, assert_invalid, setup};
use tests::fake::{self, Session};

#[track_caller]
fn assert_code<T: std::fmt::Debug>(result: cuda_driver::Result<T>, code: CUresult) {
    match result {
        Err(error) => assert_eq!(error.code(), Some(code), "{error:?}"),
        Ok(value) => panic!("expected {code:?}, got Ok({value:?})"),
    }
}

#[track_caller]
fn assert_wrong_context<T: std::fmt::Debug>(result: cuda_driver::Result<T>) {
    assert!(matches!(result, Err(Error::WrongContext { .. })), "{result:?}");
}

#[test]
fn buffer_lengths_zero_huge_overflowing_and_mismatched() {
    let (fake, context) = setup();
    let calls = fake.calls();
    assert_invalid(DeviceBuffer::<f32>::alloc(&context, 0), "at least one");
    assert_invalid(DeviceBuffer::<f32>::zeroed(&context, 0), "at least one");
    assert_invalid(DeviceBuffer::<f32>::from_slice(&context, &[]), "at least one");
    assert_invalid(DeviceBuffer::<f32>::alloc(&context, usize::MAX / 2), "overflow");
    assert_invalid(DeviceBuffer::<[u64; 4]>::alloc(&context, usize::MAX / 16), "overflow");
    assert_invalid(HostBuffer::<u8>::new(&context, 0), "at least one");
    assert_invalid(HostBuffer::<f64>::new(&context, usize::MAX / 4), "overflow");
    assert_eq!(fake.calls(), calls, "refused before any driver call");
    // huge but representable: the driver's own error, typed
    assert_code(
        DeviceBuffer::<u8>::alloc(&context, 1 << 50),
        CUresult::CUDA_ERROR_OUT_OF_MEMORY,
    );

    let mut buffer = DeviceBuffer::<u32>::zeroed(&context, 8).unwrap();
    assert_invalid(buffer.copy_from_host(&[1, 2, 3]), "copy_from_host");
    assert_invalid(buffer.copy_to_host(&mut [0; 9]), "");
    let other = DeviceBuffer::<u32>::zeroed(&context, 4).unwrap();
    assert_invalid(buffer.copy_from_device(&other), "copy_from_device");
    assert_invalid(buffer.try_slice(4..9).map(|_| ()), "");
    assert_invalid(buffer.try_slice_mut(9..).map(|_| ()), "");
    assert!(
        buffer.try_slice(8..8).is_ok_and(|s| s.is_empty()),
        "an empty view at the end is fine"
    );
    buffer.slice_mut(2..4).copy_from_host(&[7, 7]).unwrap();
    assert_eq!(buffer.to_vec().unwrap(), [0, 0, 7, 7, 0, 0, 0, 0]);
    drop((buffer, other, context));
    assert_clean(&fake);
}

#[test]
fn objects_of_another_context_are_refused() {
    let (fake, context) = setup();
    let own = Context::new(&Device::get(0).unwrap(), ContextFlags::empty()).unwrap();
    let module = Module::from_ptx(&context, fake::KERNELS).unwrap();
    let fill = module.function("fill").unwrap();
    let stream = Stream::new(&context).unwrap();
    let other_stream = Stream::new(&own).unwrap();
    let mut mine = DeviceBuffer::<f32>::zeroed(&context, 64).unwrap();
    let mut theirs = DeviceBuffer::<f32>::zeroed(&own, 64).unwrap();
    let config = LaunchConfig::for_num_elems(64);

    // SAFETY (all launches below): refused on the host before the driver runs anything.
    assert_wrong_context(unsafe { other_stream.launch(&fill, &config, (&mut theirs, 1.0f32, 64u32)) });
    assert_wrong_context(unsafe { stream.launch(&fill, &config, (&mut theirs, 1.0f32, 64u32)) });
    assert_wrong_context(mine.copy_from_device(&theirs));
    assert_wrong_context(mine.copy_from_device_async(&mine_view_of(&theirs), &stream));
    assert_wrong_context(mine.memset_zero_async(&other_stream));
    let event = Event::new(&own, EventFlags::DEFAULT).unwrap();
    assert_wrong_context(event.record(&stream));
    assert_wrong_context(stream.wait_event(&event));
    let mine_event = Event::new(&context, EventFlags::DEFAULT).unwrap();
    assert_wrong_context(mine_event.elapsed_ms(&event));
    let pinned = HostBuffer::<f32>::new(&own, 64).unwrap();
    assert_wrong_context(mine.copy_from_host_async(&pinned, &stream));
    let other_device_pool = MemPool::device_default(&Device::get(1).unwrap()).unwrap();
    assert_wrong_context(DeviceBuffer::<u8>::alloc_from_pool_async(
        &other_device_pool,
        &stream,
        16,
    ));

    // a peer copy between the two contexts is allowed and works
    let source = DeviceBuffer::from_slice(&own, &[3.0f32; 64]).unwrap();
    mine.copy_from_peer(&source).unwrap();
    assert_eq!(mine.to_vec().unwrap(), [3.0; 64]);
    assert_invalid(context.enable_peer_access(&context.clone()), "own peer");

    drop((
        source,
        pinned,
        event,
        mine_event,
        mine,
        theirs,
        stream,
        other_stream,
        fill,
        module,
        own,
        context,
    ));
    drop(other_device_pool);
    assert_clean(&fake);
}

fn mine_view_of(buffer: &DeviceBuffer<f32>) -> cuda_driver::DeviceSlice<'_, f32> {
    buffer.as_slice()
}

#[test]
fn launches_with_wrong_arguments_or_shapes() {
    let (fake, context) = setup();
    let module = Module::from_ptx(&context, fake::KERNELS).unwrap();
    let fill = module.function("fill").unwrap();
    let stream = Stream::new(&context).unwrap();
    let mut data = DeviceBuffer::<f32>::zeroed(&context, 256).unwrap();
    let ok = LaunchConfig::for_num_elems(256);
    let launch_calls = |fake: &Session| fake.trace().matches("cuLaunchKernel").count();

    // SAFETY (all launches below): each is refused on the host; none reaches the kernel.
    unsafe {
        let result = stream.launch(&fill, &ok, (&mut data, 1.0f32));
        assert!(
            matches!(
                result,
                Err(Error::Launch(LaunchError::ArgumentCount {
                    expected: 3,
                    given: 2,
                    ..
                }))
            ),
            "{result:?}"
        );
        let result = stream.launch(&fill, &ok, (&mut data, 1.0f32, 256u32, 0u8));
        assert!(
            matches!(result, Err(Error::Launch(LaunchError::ArgumentCount { given: 4, .. }))),
            "{result:?}"
        );
        let result = stream.launch(&fill, &ok, (&mut data, 1.0f64, 256u32));
        let expected = LaunchError::ArgumentSize {
            kernel: "fill".into(),
            index: 1,
            expected: 4,
            given: 8,
        };
        assert!(matches!(&result, Err(Error::Launch(e)) if *e == expected), "{result:?}");
        let result = stream.launch(&fill, &ok, (1.0f32, &mut data, 256u32));
        assert!(
            matches!(result, Err(Error::Launch(LaunchError::ArgumentSize { index: 0, .. }))),
            "{result:?}"
        );

        for (config, what) in [
            (LaunchConfig::for_num_elems(0), "empty grid"),
            (LaunchConfig::new((1, 1, 1), (0, 1, 1)), "empty block"),
        ] {
            let result = stream.launch(&fill, &config, (&mut data, 1.0f32, 256u32));
            assert!(
                matches!(result, Err(Error::Launch(LaunchError::ZeroDimension { .. }))),
                "{what}: {result:?}"
            );
        }
        let result = stream.launch(
            &fill,
            &LaunchConfig::new((1, 1, 1), (2048, 1, 1)),
            (&mut data, 1.0f32, 256u32),
        );
        assert!(
            matches!(
                result,
                Err(Error::Launch(LaunchError::BlockDimension { axis: 'x', .. }))
            ),
            "{result:?}"
        );
        let result = stream.launch(
            &fill,
            &LaunchConfig::new((1, 1, 1), (64, 64, 1)),
            (&mut data, 1.0f32, 256u32),
        );
        assert!(
            matches!(result, Err(Error::Launch(LaunchError::TooManyThreads { .. }))),
            "{result:?}"
        );
        let result = stream.launch(
            &fill,
            &LaunchConfig::new((1, 65536, 1), (1, 1, 1)),
            (&mut data, 1.0f32, 256u32),
        );
        assert!(
            matches!(result, Err(Error::Launch(LaunchError::GridDimension { axis: 'y', .. }))),
            "{result:?}"
        );
        let big_shared = ok.with_shared_mem(64 * 1024);
        let result = stream.launch(&fill, &big_shared, (&mut data, 1.0f32, 256u32));
        assert!(
            matches!(result, Err(Error::Launch(LaunchError::SharedMemory { .. }))),
            "{result:?}"
        );
        let mut params = [std::ptr::null_mut(); 2];
        let result = launch_raw(&fill, (1, 1, 1), (256, 1, 1), 0, &stream, &mut params);
        assert!(
            matches!(result, Err(Error::Launch(LaunchError::ArgumentCount { given: 2, .. }))),
            "{result:?}"
        );
    }
    assert_eq!(launch_calls(&fake), 0, "nothing reached cuLaunchKernel");
    assert_invalid(fill.set_max_dynamic_shared_memory(u32::MAX), "too large");
    assert_code(
        fill.set_max_dynamic_shared_memory(300 * 1024),
        CUresult::CUDA_ERROR_INVALID_VALUE,
    );

    // and the right call works
    // SAFETY: fill writes 256 floats of a buffer of 256.
    unsafe { stream.launch(&fill, &ok, (&mut data, 2.5f32, 256u32)).unwrap() };
    assert_eq!(data.to_vec().unwrap(), [2.5; 256]);
    drop((data, stream, fill, module, context));
    assert_clean(&fake);
}

#[test]
fn modules_with_bad_images_and_names() {
    let (fake, context) = setup();
    assert_invalid(Module::from_ptx(&context, "a\0b"), "NUL");
    assert_invalid(Module::from_image(&context, &[]), "empty");
    assert_invalid(Module::from_file(&context, "/nonexistent/kernels.ptx"), "cannot read");
    match Module::from_ptx(&context, "this is not PTX") {
        Err(Error::ModuleLoad { error, log }) => {
            assert_eq!(error.code, CUresult::CUDA_ERROR_INVALID_PTX);
            assert!(log.contains("not PTX"), "the JIT log is kept: {log:?}");
        }
        other => panic!("expected ModuleLoad, got {other:?}"),
    }
    assert_code(
        Module::from_image(&context, b"\x7fELF\x02\x01\x01"),
        CUresult::CUDA_ERROR_INVALID_IMAGE,
    );
    let module = Module::from_ptx(&context, fake::KERNELS).unwrap();
    assert_code(module.function("missing"), CUresult::CUDA_ERROR_NOT_FOUND);
    assert_invalid(module.function("fi\0ll"), "NUL");
    drop((module, context));
    assert_clean(&fake);
}

#[test]
fn devices_events_streams_and_graphs_misused() {
    let (fake, context) = setup();
    assert_code(Device::get(2), CUresult::CUDA_ERROR_INVALID_DEVICE);
    assert!(Device::get(u32::MAX).is_err());
    let stream = Stream::new(&context).unwrap();
    let start = Event::new(&context, EventFlags::DEFAULT).unwrap();
    let end = Event::new(&context, EventFlags::DISABLE_TIMING).unwrap();
    assert_code(start.elapsed_ms(&end), CUresult::CUDA_ERROR_INVALID_HANDLE); // never recorded
    start.record(&stream).unwrap();
    end.record(&stream).unwrap();
    assert_code(start.elapsed_ms(&end), CUresult::CUDA_ERROR_INVALID_HANDLE); // timing disabled

    // captured streams refuse host functions (a graph could run them twice)
    stream.begin_capture(CaptureMode::Global).unwrap();
    assert_invalid(stream.launch_host_func(|| ()), "capturing");
    assert_code(
        stream.begin_capture(CaptureMode::Global),
        CUresult::CUDA_ERROR_ILLEGAL_STATE,
    );
    let graph = stream.end_capture().unwrap();
    assert_eq!(graph.node_count().unwrap(), 0);
    assert_code(stream.end_capture().map(|_| ()), CUresult::CUDA_ERROR_ILLEGAL_STATE);
    let exec = graph.instantiate().unwrap();
    let own = Context::new(&Device::get(0).unwrap(), ContextFlags::empty()).unwrap();
    let other_stream = Stream::new(&own).unwrap();
    // SAFETY: refused on the host (another context's stream).
    assert_wrong_context(unsafe { exec.launch(&other_stream) });

    // the documented null stream of `from_raw` is the legacy default stream
    // SAFETY: null is documented as the context's legacy default stream.
    let legacy = unsafe { Stream::from_raw(&context, std::ptr::null_mut()) };
    let module = Module::from_ptx(&context, fake::KERNELS).unwrap();
    let fill = module.function("fill").unwrap();
    let mut data = DeviceBuffer::<f32>::zeroed(&context, 32).unwrap();
    // SAFETY: fill writes 32 floats of a buffer of 32.
    unsafe {
        legacy
            .launch(&fill, &LaunchConfig::for_num_elems(32), (&mut data, 4.0f32, 32u32))
            .unwrap()
    };
    legacy.synchronize().unwrap();
    assert_eq!(data.to_vec().unwrap(), [4.0; 32]);
    drop(legacy);
    drop((
        data,
        fill,
        module,
        exec,
        graph,
        other_stream,
        own,
        start,
        end,
        stream,
        context,
    ));
    assert_clean(&fake);
}

/// A graph replays kernels by handle: the modules they came from must stay
/// loaded while the graph lives. `GraphExec::launch`'s safety contract names
/// only the buffers, so a caller following it can replay unloaded kernels.
#[test]
fn graphs_keep_the_modules_of_captured_kernels_loaded() {
    let (fake, context) = setup();
    let stream = Stream::new(&context).unwrap();
    let mut data = DeviceBuffer::<f32>::zeroed(&context, 16).unwrap();
    let graph = {
        let module = Module::from_ptx(&context, fake::KERNELS).unwrap();
        let fill = module.function("fill").unwrap();
        stream.begin_capture(CaptureMode::Global).unwrap();
        // SAFETY: fill writes 16 floats of a buffer of 16.
        unsafe {
            stream
                .launch(&fill, &LaunchConfig::for_num_elems(16), (&mut data, 1.0f32, 16u32))
                .unwrap()
        };
        stream.end_capture().unwrap()
    }; // module and function dropped here: the module is unloaded
    let exec = graph.instantiate().unwrap();
    // SAFETY: `data`, the only buffer the captured work uses, is alive, as the contract asks.
    unsafe { exec.launch(&stream) }.expect("replaying a graph whose kernels' module was dropped");
    stream.synchronize().unwrap();
    assert_eq!(data.to_vec().unwrap(), [1.0; 16]);
    assert_eq!(fake.counts().invalid_handles, 0, "the replay used an unloaded kernel");
}

#[test]
fn libraries_with_bad_images_and_names() {
    let (fake, context) = setup();
    assert_invalid(Library::from_image(&[]), "empty");
    assert_invalid(Library::from_file("/nonexistent/kernels.ptx"), "cannot read");
    match Library::from_ptx("this is not PTX") {
        Err(Error::ModuleLoad { error, log }) => {
            assert_eq!(error.code, CUresult::CUDA_ERROR_INVALID_PTX);
            assert!(log.contains("not PTX"), "the JIT log is kept: {log:?}");
        }
        other => panic!("expected ModuleLoad, got {other:?}"),
    }
    let library = Library::from_ptx(fake::KERNELS).unwrap();
    assert_code(library.function(&context, "missing"), CUresult::CUDA_ERROR_NOT_FOUND);
    assert_invalid(library.function(&context, "fi\0ll"), "NUL");
    // a library's kernel is loaded per context: one from another context is refused for this one's stream
    let own = Context::new(&Device::get(0).unwrap(), ContextFlags::empty()).unwrap();
    let theirs = library.function(&own, "fill").unwrap();
    let stream = Stream::new(&context).unwrap();
    let mut data = DeviceBuffer::<f32>::zeroed(&context, 16).unwrap();
    // SAFETY: refused on the host (the function is of another context).
    assert_wrong_context(unsafe {
        stream.launch(&theirs, &LaunchConfig::for_num_elems(16), (&mut data, 1.0f32, 16u32))
    });
    drop((data, stream, theirs, own, library, context));
    assert_clean(&fake);
}

/// A legacy DLPack tensor of `f32` on device 0 at `data` (no deleter: the test owns the memory).
fn f32_tensor(data: u64, shape: &mut [i64], strides: Option<&mut [i64]>, byte_offset: u64) -> DLManagedTensor {
    DLManagedTensor {
        dl_tensor: DLTensor {
            data: data as *mut std::ffi::c_void,
            device: DLDevice {
                device_type: DLDeviceType::CUDA,
                device_id: 0,
            },
            ndim: shape.len() as i32,
            dtype: DType::F32.into(),
            shape: shape.as_mut_ptr(),
            strides: strides.map_or(std::ptr::null_mut(), <[i64]>::as_mut_ptr),
            byte_offset,
        },
        manager_ctx: std::ptr::null_mut(),
        deleter: None,
    }
}

/// Imports `tensor` on `stream` with the safe `from_dlpack_tensor`.
fn import(tensor: &mut DLManagedTensor, stream: &Stream) -> cuda_core::Result<DeviceArray<f32>> {
    // SAFETY: for the tensors of this test, the struct and its shape and strides outlive the
    // import, there is no deleter, and the memory, where it is real, is alive until the array is
    // dropped and used by nobody else meanwhile; where it is not, `from_dlpack_tensor` must
    // refuse it, which is what the test checks.
    let tensor = unsafe { DLPackTensor::from_raw(tensor) }.unwrap();
    DeviceArray::<f32>::from_dlpack_tensor(tensor, stream, None)
}

#[test]
fn dlpack_imports_are_checked_against_the_driver() {
    let (fake, context) = setup();
    let stream = Stream::new(&context).unwrap();
    let mut buffer = DeviceBuffer::<f32>::zeroed(&context, 8).unwrap();
    buffer
        .copy_from_host(&[0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0])
        .unwrap();
    // SAFETY: only the address is read, to describe the buffer in tensors.
    let base = unsafe { buffer.as_raw() };
    let info = PointerInfo::query(&context, base + 4).unwrap();
    assert_eq!(
        (info.memory_type, info.is_managed, info.device_ordinal, info.mapped),
        (MemoryType::Device, false, 0, true)
    );
    assert_eq!(
        (info.range_start, info.range_end(), info.backed_end()),
        (base, base + 32, base + 32)
    );
    assert_code(PointerInfo::query(&context, 0x1000), CUresult::CUDA_ERROR_INVALID_VALUE);

    // An address the driver does not know, with a megabyte of elements: refused, not a view.
    match import(&mut f32_tensor(0x1000, &mut [1 << 20], None, 0), &stream) {
        Err(cuda_core::Error::DLPack(DLPackError::NotDeviceMemory { address, device, why })) => {
            assert_eq!((address, device), (0x1000, 0));
            assert!(why.contains("does not know"), "{why}");
        }
        other => panic!("expected NotDeviceMemory, got {other:?}"),
    }
    // Pinned host memory is the driver's, but not device memory.
    let host = HostBuffer::<f32>::new(&context, 8).unwrap();
    match import(&mut f32_tensor(host.as_ptr() as u64, &mut [8], None, 0), &stream) {
        Err(cuda_core::Error::DLPack(DLPackError::NotDeviceMemory { why, .. })) => {
            assert!(why.contains("Host"), "{why}")
        }
        other => panic!("expected NotDeviceMemory, got {other:?}"),
    }
    // One element more than the allocation holds, compact or through a stride, or from an
    // offset.
    let past = |first: u64, last: u64| DLPackError::OutOfAllocation {
        first,
        last,
        start: base,
        end: base + 32,
    };
    for (shape, strides, offset, expected) in [
        (vec![9i64], None, 0, past(base, base + 35)),
        (vec![2], Some(vec![8i64]), 0, past(base, base + 35)),
        (vec![2, 4], Some(vec![1, 2]), 4, past(base + 4, base + 35)),
    ] {
        let (mut shape, mut strides) = (shape, strides);
        let mut tensor = f32_tensor(base, &mut shape, strides.as_deref_mut(), offset);
        match import(&mut tensor, &stream) {
            Err(cuda_core::Error::DLPack(error)) => {
                assert_eq!(error, expected);
                assert!(error.to_string().contains(&format!("{:#x}", base + 32)), "{error}");
            }
            other => panic!("expected {expected:?}, got {other:?}"),
        }
    }
    // What fits is a view: the last element exactly, strided and offset.
    let (mut shape, mut strides) = ([2i64, 3], [1i64, 2]);
    let strided = import(&mut f32_tensor(base, &mut shape, Some(&mut strides), 4), &stream).unwrap();
    assert_eq!((strided.shape(), strided.strides()), (&[2, 3][..], &[1, 2][..]));
    drop(strided);
    let mut shape = [7i64];
    let tail = import(&mut f32_tensor(base, &mut shape, None, 4), &stream).unwrap();
    assert_eq!(tail.to_vec().unwrap(), [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0]);
    // A zero-size tensor reaches no memory: nothing to check, whatever its address.
    let mut shape = [0i64];
    assert!(import(&mut f32_tensor(0x1000, &mut shape, None, 0), &stream).is_ok_and(|a| a.is_empty()));
    drop((tail, host, buffer, stream, context));
    assert_clean(&fake);
}
