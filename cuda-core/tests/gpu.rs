//! Tests that run kernels. Without a driver or device each prints `skipped: <why>` and
//! passes, unless `CUDA_REQUIRE_GPU=1`, where that is a failure.

mod common;

use cuda_core::{
    launch, launch_ex, Arch, CodeKind, CompileTarget, Device, Error, Kernel, LaunchAttributes, LaunchConfig,
    LinkTarget, Linker, LinkerOptions, ObjectCode, Program, ProgramOptions,
};
use cuda_driver::{DeviceBuffer, DeviceCopy, LaunchError, Stream};
use cuda_sys::driver::CUresult;

/// The seed's `my_add`: 5x5 float32, `out = x1 + x2`, compiled for the device's own arch.
#[test]
fn my_add_5x5() {
    let Some(device) = common::device_or_skip("my_add_5x5") else {
        return;
    };
    device.set_current().unwrap();
    let options = ProgramOptions {
        cache: false,
        ..ProgramOptions::default()
    };
    let code = Program::new(common::MY_ADD, options)
        .compile(CompileTarget::Cubin)
        .unwrap();
    assert_eq!(code.arch(), Some(device.arch().unwrap()), "no arch given: the device's");
    let kernel = code.get_kernel("my_add").unwrap();
    assert_eq!(kernel.num_params().unwrap(), 4);
    let sizes: Vec<usize> = kernel.param_info().unwrap().iter().map(|p| p.size).collect();
    assert_eq!(sizes, [8, 8, 8, 4]);
    let attributes = kernel.attributes().unwrap();
    assert!(attributes.max_threads_per_block >= 256, "{attributes:?}");

    let x1: Vec<f32> = (0..25).map(|i| i as f32).collect();
    let x2: Vec<f32> = (0..25).map(|i| 100.0 + 0.5 * i as f32).collect();
    let context = device.context();
    let x1_device = DeviceBuffer::from_slice(context, &x1).unwrap();
    let x2_device = DeviceBuffer::from_slice(context, &x2).unwrap();
    let mut out = DeviceBuffer::<f32>::zeroed(context, 25).unwrap();
    let stream = device.create_stream().unwrap();
    // The 5x5 matrix is 25 contiguous floats; my_add indexes linearly, so one block of 25 threads.
    let config = LaunchConfig::new((1, 1, 1), (25, 1, 1));
    // SAFETY: my_add reads 25 floats from x1 and x2 and writes 25 to out; all hold 25.
    unsafe { launch(&stream, &config, &kernel, (&x1_device, &x2_device, &mut out, 25u32)).unwrap() };
    stream.synchronize().unwrap();
    let result = out.to_vec().unwrap();
    let expected: Vec<f32> = x1.iter().zip(&x2).map(|(a, b)| a + b).collect();
    assert_eq!(result, expected);
    println!("my_add 5x5: {:?}", result.chunks(5).collect::<Vec<_>>());
}

/// Loads `name`, the instantiation of `TEMPLATE_ADD`'s `add<T>` for `T`, runs it with `x` as both
/// operands and waits; returns the kernel and its buffers `x`, `y` and `out`.
fn launch_add<T: DeviceCopy>(
    device: &Device,
    code: &ObjectCode,
    stream: &Stream,
    name: &str,
    x: &[T],
) -> (Kernel, DeviceBuffer<T>, DeviceBuffer<T>, DeviceBuffer<T>) {
    let context = device.context();
    let n = u32::try_from(x.len()).unwrap();
    let kernel = code.get_kernel_on(device, name).unwrap();
    let (xd, yd) = (
        DeviceBuffer::from_slice(context, x).unwrap(),
        DeviceBuffer::from_slice(context, x).unwrap(),
    );
    let mut out = DeviceBuffer::<T>::zeroed(context, x.len()).unwrap();
    // SAFETY: `name` is add<T>, which reads n elements of x and y and writes n to out; all hold n.
    unsafe {
        launch(
            stream,
            &LaunchConfig::for_num_elems(n),
            &kernel,
            (&xd, &yd, &mut out, n),
        )
        .unwrap()
    };
    stream.synchronize().unwrap();
    (kernel, xd, yd, out)
}

/// One template instantiated for f32 and f64 through name expressions.
#[test]
fn template_for_f32_and_f64() {
    let Some(device) = common::device_or_skip("template_for_f32_and_f64") else {
        return;
    };
    let arch = device.arch().unwrap();
    let program = Program::new(common::TEMPLATE_ADD, ProgramOptions::for_arch(arch))
        .with_name_expressions(["add<float>", "add<double>"]);
    let code = program.compile(CompileTarget::Ptx).unwrap();
    let stream = device.create_stream().unwrap();
    let n = 1000u32;

    let x: Vec<f32> = (0..n).map(|i| i as f32 * 0.25).collect();
    let (kernel, _, _, out) = launch_add(&device, &code, &stream, "add<float>", &x);
    assert_eq!(kernel.symbol(), code.lowered_name("add<float>").unwrap());
    assert_eq!(out.to_vec().unwrap(), x.iter().map(|v| v * 2.0).collect::<Vec<_>>());

    let x: Vec<f64> = (0..n).map(|i| i as f64 / 3.0).collect();
    let (kernel, xd, yd, mut out) = launch_add(&device, &code, &stream, "add<double>", &x);
    assert_eq!(out.to_vec().unwrap(), x.iter().map(|v| v + v).collect::<Vec<_>>());

    // f32 buffers to the f64 kernel: same pointer sizes, so only the device code could tell;
    // a wrong scalar size is caught on the host.
    let error = unsafe {
        launch(
            &stream,
            &LaunchConfig::for_num_elems(n),
            &kernel,
            (&xd, &yd, &mut out, n as u64),
        )
    }
    .unwrap_err();
    assert!(
        matches!(
            error,
            Error::Driver(cuda_driver::Error::Launch(LaunchError::ArgumentSize { index: 3, .. }))
        ),
        "{error}"
    );
    let error = unsafe { launch(&stream, &LaunchConfig::for_num_elems(n), &kernel, (&xd, &yd)) }.unwrap_err();
    assert!(
        matches!(
            error,
            Error::Driver(cuda_driver::Error::Launch(LaunchError::ArgumentCount { .. }))
        ),
        "{error}"
    );
}

#[test]
fn cooperative_launch_syncs_the_grid() {
    let Some(device) = common::device_or_skip("cooperative_launch_syncs_the_grid") else {
        return;
    };
    let properties = device.properties().unwrap();
    assert!(properties.cooperative_launch);
    let code = Program::new(common::GRID_SYNC, ProgramOptions::for_arch(device.arch().unwrap()))
        .compile(CompileTarget::Cubin)
        .unwrap();
    let kernel = code.get_kernel_on(&device, "reverse_after_grid_sync").unwrap();
    let (blocks, threads) = (2 * properties.multiprocessor_count, 128u32);
    let n = blocks * threads;
    let context = device.context();
    let mut data = DeviceBuffer::<u32>::zeroed(context, n as usize).unwrap();
    let mut out = DeviceBuffer::<u32>::zeroed(context, n as usize).unwrap();
    let mut arrived = DeviceBuffer::<u32>::zeroed(context, 1).unwrap();
    let stream = device.create_stream().unwrap();
    let config = LaunchConfig::new((blocks, 1, 1), (threads, 1, 1));
    let cooperative = LaunchAttributes {
        cooperative: true,
        ..LaunchAttributes::default()
    };
    // SAFETY: the kernel writes n elements of data and out (both n long) and counts in `arrived`;
    // two blocks of 128 threads per SM are resident at once, which the cooperative launch checks.
    unsafe {
        launch_ex(
            &stream,
            &config,
            &cooperative,
            &kernel,
            (&mut data, &mut out, &mut arrived, n),
        )
        .unwrap()
    };
    stream.synchronize().unwrap();
    let expected: Vec<u32> = (0..n).map(|i| 3 * (n - 1 - i) + 1).collect();
    assert_eq!(out.to_vec().unwrap(), expected);
    assert_eq!(arrived.to_vec().unwrap(), [blocks]);

    // The cooperative attribute reaches the driver: a grid that cannot be resident at once is
    // refused, where a plain launch would be queued.
    let too_many = LaunchConfig::new((properties.multiprocessor_count * 64, 1, 1), (256, 1, 1));
    // SAFETY: refused by the driver before running.
    let error = unsafe {
        launch_ex(
            &stream,
            &too_many,
            &cooperative,
            &kernel,
            (&mut data, &mut out, &mut arrived, 0u32),
        )
    }
    .unwrap_err();
    assert_eq!(
        error.driver_code(),
        Some(CUresult::CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE),
        "{error}"
    );
    stream.synchronize().unwrap();
}

#[test]
fn cluster_launch_of_two_block_clusters() {
    let Some(device) = common::device_or_skip("cluster_launch_of_two_block_clusters") else {
        return;
    };
    let arch = device.arch().unwrap();
    if !device.properties().unwrap().cluster_launch {
        assert!(
            std::env::var("CUDA_REQUIRE_GPU").as_deref() != Ok("1"),
            "clusters need sm_90, the device is {arch}"
        );
        println!("skipped: cluster_launch_of_two_block_clusters: {arch} has no clusters");
        return;
    }
    let code = Program::new(common::CLUSTER, ProgramOptions::for_arch(arch))
        .compile(CompileTarget::Cubin)
        .unwrap();
    let kernel = code.get_kernel_on(&device, "cluster_ranks").unwrap();
    let blocks = 8u32;
    let context = device.context();
    let mut rank = DeviceBuffer::<u32>::zeroed(context, blocks as usize).unwrap();
    let mut size = DeviceBuffer::<u32>::zeroed(context, blocks as usize).unwrap();
    let mut partner = DeviceBuffer::<u32>::zeroed(context, blocks as usize).unwrap();
    let stream = device.create_stream().unwrap();
    let config = LaunchConfig::new((blocks, 1, 1), (32, 1, 1));
    let clusters = |dim| LaunchAttributes {
        cluster_dim: Some(dim),
        ..LaunchAttributes::default()
    };
    // SAFETY: the kernel writes one element per block into each buffer of `blocks` elements.
    unsafe {
        launch_ex(
            &stream,
            &config,
            &clusters((2, 1, 1)),
            &kernel,
            (&mut rank, &mut size, &mut partner),
        )
        .unwrap()
    };
    stream.synchronize().unwrap();
    assert_eq!(rank.to_vec().unwrap(), (0..blocks).map(|b| b % 2).collect::<Vec<_>>());
    assert_eq!(size.to_vec().unwrap(), vec![2; blocks as usize]);
    assert_eq!(
        partner.to_vec().unwrap(),
        (0..blocks).map(|b| 1000 + (b ^ 1)).collect::<Vec<_>>()
    );

    // SAFETY: refused on the host before launching.
    let error = unsafe {
        launch_ex(
            &stream,
            &config,
            &clusters((3, 1, 1)),
            &kernel,
            (&mut rank, &mut size, &mut partner),
        )
    }
    .unwrap_err();
    assert!(matches!(error, Error::InvalidValue(_)), "{error}");
}

/// Code for an architecture the device cannot run is refused before loading.
#[test]
fn code_for_another_architecture_is_a_typed_error() {
    let Some(device) = common::device_or_skip("code_for_another_architecture_is_a_typed_error") else {
        return;
    };
    let (major, minor) = device.compute_capability().unwrap();
    let other_major = if major == 8 { Arch::Sm(90) } else { Arch::Sm(80) };
    let cubin = Program::new(common::MY_ADD, ProgramOptions::for_arch(other_major))
        .compile(CompileTarget::Cubin)
        .unwrap();
    let error = cubin.get_kernel_on(&device, "my_add").unwrap_err();
    assert!(
        matches!(
            error,
            Error::WrongArch {
                kind: CodeKind::Cubin,
                ..
            }
        ),
        "{error}"
    );
    println!("{error}");

    let newer = Arch::Compute((major + 1) * 10 + minor);
    let ptx = Program::new(common::MY_ADD, ProgramOptions::for_arch(newer)).compile(CompileTarget::Ptx);
    if let Ok(ptx) = ptx {
        let error = ptx.get_kernel_on(&device, "my_add").unwrap_err();
        assert!(
            matches!(
                error,
                Error::WrongArch {
                    kind: CodeKind::Ptx,
                    ..
                }
            ),
            "{error}"
        );
    }
    let ltoir = Program::new(common::MY_ADD, ProgramOptions::for_arch(Arch::Sm(major * 10 + minor)))
        .compile(CompileTarget::LtoIr)
        .unwrap();
    assert!(matches!(
        ltoir.get_kernel_on(&device, "my_add"),
        Err(Error::InvalidValue(_))
    ));
}

/// A kernel is loaded once per context however often it is asked for, and a kernel of one
/// device's context cannot be launched on a stream of another context.
#[test]
fn module_is_loaded_once_and_stays_in_its_context() {
    let Some(device) = common::device_or_skip("module_is_loaded_once_and_stays_in_its_context") else {
        return;
    };
    let code = Program::new(common::MY_ADD, ProgramOptions::for_arch(device.arch().unwrap()))
        .compile(CompileTarget::Cubin)
        .unwrap();
    let first = code.get_kernel_on(&device, "my_add").unwrap();
    let second = code.clone().get_kernel_on(&device, "my_add").unwrap();
    // SAFETY: the handles are only compared.
    assert_eq!(unsafe { first.function().module().as_raw() }, unsafe {
        second.function().module().as_raw()
    });

    let other = cuda_driver::Context::new(device.as_driver_device(), cuda_driver::ContextFlags::empty()).unwrap();
    let stream = cuda_driver::Stream::new(&other).unwrap();
    let input = DeviceBuffer::<f32>::zeroed(device.context(), 1).unwrap();
    let mut out = DeviceBuffer::<f32>::zeroed(device.context(), 1).unwrap();
    // SAFETY: refused on the host before launching.
    let error = unsafe {
        launch(
            &stream,
            &LaunchConfig::default(),
            &first,
            (&input, &input, &mut out, 1u32),
        )
    };
    assert!(
        matches!(error, Err(Error::Driver(cuda_driver::Error::WrongContext { .. }))),
        "{error:?}"
    );
}

/// LTO-IR linked by nvJitLink, then loaded and run.
#[test]
fn lto_linked_kernel_runs() {
    let Some(device) = common::device_or_skip("lto_linked_kernel_runs") else {
        return;
    };
    let arch = device.arch().unwrap();
    let options = ProgramOptions {
        relocatable_device_code: true,
        ..ProgramOptions::for_arch(arch)
    };
    let helper = Program::new("__device__ float twice(float x) { return 2.0f * x; }", options.clone());
    let kernel = Program::new(
        "extern __device__ float twice(float); extern \"C\" __global__ void k(float *x) { x[threadIdx.x] = twice(x[threadIdx.x]); }",
        options,
    );
    let linked = Linker::new(LinkerOptions::for_arch(arch))
        .add(&helper.compile(CompileTarget::LtoIr).unwrap())
        .add(&kernel.compile(CompileTarget::LtoIr).unwrap())
        .link(LinkTarget::Cubin);
    let cubin = match linked {
        // The GPU bundle's CUDA 12 run carries NVRTC 12 but not nvJitLink 12 (they do not fit
        // one call together): the nvJitLink found is CUDA 13's, refused beside NVRTC 12 by name.
        Err(cuda_core::Error::NvJitLinkUnavailable {
            source,
            lto_inputs: true,
        }) if matches!(source.unusable, Some(cuda_sys::Unusable::MixedGenerations { .. })) => {
            println!("skipped: LTO link: {source}");
            return;
        }
        linked => linked.unwrap(),
    };
    let k = cubin.get_kernel_on(&device, "k").unwrap();
    let mut x = DeviceBuffer::from_slice(device.context(), &[1.0f32, 2.0, 3.0, 4.5]).unwrap();
    let stream = device.create_stream().unwrap();
    // SAFETY: k doubles one float per thread; 4 threads, 4 floats.
    unsafe { launch(&stream, &LaunchConfig::new((1, 1, 1), (4, 1, 1)), &k, (&mut x,)).unwrap() };
    stream.synchronize().unwrap();
    assert_eq!(x.to_vec().unwrap(), [2.0, 4.0, 6.0, 9.0]);
}

/// Device facade basics.
#[test]
fn device_facade() {
    let Some(device) = common::device_or_skip("device_facade") else {
        return;
    };
    device.set_current().unwrap();
    assert_eq!(Device::current().unwrap(), device);
    let properties = device.properties().unwrap();
    assert_eq!(properties.compute_capability, device.compute_capability().unwrap());
    assert!(
        properties.multiprocessor_count > 0 && properties.warp_size == 32,
        "{properties:?}"
    );
    let arch = device.arch().unwrap();
    assert_eq!(
        arch,
        format!(
            "sm_{}{}",
            properties.compute_capability.0, properties.compute_capability.1
        )
        .as_str()
    );
    let stream = device.create_stream().unwrap();
    let (start, end) = (device.create_event().unwrap(), device.create_event().unwrap());
    start.record(&stream).unwrap();
    end.record(&stream).unwrap();
    end.synchronize().unwrap();
    assert!(start.elapsed_ms(&end).unwrap() >= 0.0);
    device.sync().unwrap();
    println!("{} {arch}: {properties:?}", device.name().unwrap());
}
