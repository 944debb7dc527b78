//! Launches on the GPU: typed arguments, by-value structs, 2-D grids, the
//! host-side launch checks, and the raw escape hatch.

mod common;

use std::ffi::c_void;

use cuda_driver::sys::driver::CUresult;
use cuda_driver::{launch_raw, DeviceBuffer, DeviceCopy, Error, LaunchConfig, LaunchError, ParamInfo, Stream};

#[test]
fn vector_add() {
    let Some(context) = common::context() else { return };
    let module = common::kernels(&context);
    let function = module.function("vector_add").unwrap();
    let n = 100_000usize;
    let a: Vec<f32> = (0..n).map(|i| i as f32).collect();
    let b: Vec<f32> = (0..n).map(|i| (2 * i) as f32).collect();
    let da = DeviceBuffer::from_slice(&context, &a).unwrap();
    let db = DeviceBuffer::from_slice(&context, &b).unwrap();
    let mut dc = DeviceBuffer::<f32>::zeroed(&context, n).unwrap();
    let stream = Stream::new(&context).unwrap();
    // SAFETY: vector_add reads a, b and writes c, n elements each; all hold n.
    unsafe {
        stream.launch(
            &function,
            &LaunchConfig::for_num_elems(n as u32),
            (&da, &db, &mut dc, n as u32),
        )
    }
    .unwrap();
    stream.synchronize().unwrap();
    let c = dc.to_vec().unwrap();
    assert!(c.iter().enumerate().all(|(i, &v)| v == (3 * i) as f32));
    println!("vector_add of {n} floats: ok");
}

#[test]
fn saxpy() {
    let Some(context) = common::context() else { return };
    let function = common::kernels(&context).function("saxpy").unwrap();
    let n = 4099usize;
    let x: Vec<f32> = (0..n).map(|i| i as f32 * 0.5).collect();
    let y: Vec<f32> = (0..n).map(|i| 1.0 + i as f32).collect();
    let dx = DeviceBuffer::from_slice(&context, &x).unwrap();
    let mut dy = DeviceBuffer::from_slice(&context, &y).unwrap();
    let stream = Stream::new(&context).unwrap();
    // SAFETY: saxpy reads x and updates y, n elements each.
    unsafe {
        stream.launch(
            &function,
            &LaunchConfig::for_num_elems(n as u32),
            (3.0f32, &dx, &mut dy, n as u32),
        )
    }
    .unwrap();
    stream.synchronize().unwrap();
    let out = dy.to_vec().unwrap();
    for i in 0..n {
        assert_eq!(out[i], 3.0 * x[i] + y[i], "element {i}");
    }
}

#[test]
fn two_dimensional_transpose() {
    let Some(context) = common::context() else { return };
    let function = common::kernels(&context).function("transpose").unwrap();
    let (width, height) = (300u32, 77u32);
    let input: Vec<f32> = (0..width * height).map(|i| i as f32).collect();
    let din = DeviceBuffer::from_slice(&context, &input).unwrap();
    let mut dout = DeviceBuffer::<f32>::zeroed(&context, input.len()).unwrap();
    let stream = Stream::new(&context).unwrap();
    let config = LaunchConfig::new((width.div_ceil(16), height.div_ceil(16), 1), (16, 16, 1));
    // SAFETY: transpose reads width*height floats of `din` and writes as many of `dout`.
    unsafe { stream.launch(&function, &config, (&din, &mut dout, width, height)) }.unwrap();
    stream.synchronize().unwrap();
    let out = dout.to_vec().unwrap();
    for y in 0..height {
        for x in 0..width {
            assert_eq!(
                out[(x * height + y) as usize],
                input[(y * width + x) as usize],
                "({x}, {y})"
            );
        }
    }
}

#[derive(Clone, Copy)]
#[repr(C)]
struct Affine {
    scale: f32,
    offset: f32,
}
// SAFETY: repr(C), two f32s, matching `struct Affine` in the kernel source.
unsafe impl DeviceCopy for Affine {}

#[derive(Clone, Copy)]
#[repr(C)]
struct Mixed {
    d: f64,
    i: i32,
    c: i8,
}
// SAFETY: repr(C) with the C layout of `struct Mixed { double; int; signed char; }` (16 bytes).
unsafe impl DeviceCopy for Mixed {}

#[test]
fn structs_pass_by_value() {
    let Some(context) = common::context() else { return };
    let module = common::kernels(&context);
    let stream = Stream::new(&context).unwrap();

    let affine = module.function("affine").unwrap();
    let mut data = DeviceBuffer::from_slice(&context, &[1.0f32, 2.0, 3.0, 4.0]).unwrap();
    let f = Affine {
        scale: 2.0,
        offset: 0.5,
    };
    // SAFETY: affine updates n = 4 floats of `data`.
    unsafe { stream.launch(&affine, &LaunchConfig::for_num_elems(4), (f, &mut data, 4u32)) }.unwrap();
    stream.synchronize().unwrap();
    assert_eq!(data.to_vec().unwrap(), [2.5, 4.5, 6.5, 8.5]);

    let mixed = module.function("mixed").unwrap();
    assert_eq!(mixed.param_info().unwrap()[0].size, std::mem::size_of::<Mixed>());
    let mut out = DeviceBuffer::<f64>::zeroed(&context, 3).unwrap();
    let m = Mixed { d: 1.25, i: -7, c: 100 };
    // SAFETY: mixed writes 3 doubles of `out`.
    unsafe { stream.launch(&mixed, &LaunchConfig::for_num_elems(1), (m, &mut out)) }.unwrap();
    stream.synchronize().unwrap();
    assert_eq!(out.to_vec().unwrap(), [1.25, -7.0, 100.0]);
}

#[test]
fn param_info_reports_the_layout() {
    let Some(context) = common::context() else { return };
    let module = common::kernels(&context);
    let vector_add = module.function("vector_add").unwrap();
    let params = vector_add.param_info().unwrap();
    let expected = [(0, 8), (8, 8), (16, 8), (24, 4)].map(|(offset, size)| ParamInfo { offset, size });
    assert_eq!(params, expected);
    assert!(module.function("noop").unwrap().param_info().unwrap().is_empty());
    let (min_grid, block) = vector_add.max_potential_block_size(0).unwrap();
    assert!(min_grid >= 1 && (32..=1024).contains(&block), "{min_grid} x {block}");
    assert!(vector_add.max_active_blocks_per_multiprocessor(256, 0).unwrap() >= 1);
    assert!(vector_add.num_registers().unwrap() > 0);
    let missing = module.function("no_such_kernel").unwrap_err();
    assert_eq!(missing.code(), Some(CUresult::CUDA_ERROR_NOT_FOUND), "{missing}");
}

#[test]
fn wrong_argument_count_and_size_are_refused() {
    let Some(context) = common::context() else { return };
    let function = common::kernels(&context).function("vector_add").unwrap();
    let a = DeviceBuffer::<f32>::zeroed(&context, 16).unwrap();
    let mut c = DeviceBuffer::<f32>::zeroed(&context, 16).unwrap();
    let stream = Stream::new(&context).unwrap();
    let config = LaunchConfig::for_num_elems(16);
    // SAFETY: refused on the host before launching.
    let error = unsafe { stream.launch(&function, &config, (&a, &a, &mut c)) }.unwrap_err();
    assert!(
        matches!(
            error,
            Error::Launch(LaunchError::ArgumentCount {
                expected: 4,
                given: 3,
                ..
            })
        ),
        "{error}"
    );
    // SAFETY: refused on the host before launching.
    let error = unsafe { stream.launch(&function, &config, (&a, &a, &mut c, 16u64)) }.unwrap_err();
    assert!(
        matches!(
            error,
            Error::Launch(LaunchError::ArgumentSize {
                index: 3,
                expected: 4,
                given: 8,
                ..
            })
        ),
        "{error}"
    );
    // The output is untouched and the stream still works.
    stream.synchronize().unwrap();
    assert!(c.to_vec().unwrap().iter().all(|&v| v == 0.0));
}

#[test]
fn bad_launch_is_an_error_and_the_context_stays_usable() {
    let Some(context) = common::context() else { return };
    let module = common::kernels(&context);
    let fill = module.function("fill").unwrap();
    let mut out = DeviceBuffer::<f32>::zeroed(&context, 4096).unwrap();
    let stream = Stream::new(&context).unwrap();

    // 32 x 32 x 2 = 2048 threads: each axis is within the device's limits, the total is not.
    let config = LaunchConfig::new((1, 1, 1), (32, 32, 2));
    // SAFETY: refused on the host before launching.
    let error = unsafe { stream.launch(&fill, &config, (&mut out, 1.0f32, 4096u32)) }.unwrap_err();
    assert!(
        matches!(
            error,
            Error::Launch(LaunchError::TooManyThreads { requested: 2048, .. })
        ),
        "{error}"
    );

    // A kernel compiled with __launch_bounds__(128) refuses 256 threads.
    let limited = module.function("limited").unwrap();
    assert_eq!(limited.max_threads_per_block().unwrap(), 128);
    // SAFETY: refused on the host before launching.
    let error =
        unsafe { stream.launch(&limited, &LaunchConfig::new((1, 1, 1), (256, 1, 1)), (&mut out,)) }.unwrap_err();
    assert!(
        matches!(error, Error::Launch(LaunchError::TooManyThreads { max: 128, .. })),
        "{error}"
    );

    // Zero-sized grid, and too much dynamic shared memory.
    // SAFETY: refused on the host before launching.
    let error = unsafe { stream.launch(&fill, &LaunchConfig::for_num_elems(0), (&mut out, 1.0f32, 0u32)) }.unwrap_err();
    assert!(
        matches!(error, Error::Launch(LaunchError::ZeroDimension { .. })),
        "{error}"
    );
    let config = LaunchConfig::for_num_elems(32).with_shared_mem(1 << 20);
    // SAFETY: refused on the host before launching.
    let error = unsafe { stream.launch(&fill, &config, (&mut out, 1.0f32, 32u32)) }.unwrap_err();
    assert!(
        matches!(error, Error::Launch(LaunchError::SharedMemory { .. })),
        "{error}"
    );

    // The driver itself refuses the same bad launch when our checks are bypassed.
    let mut ptr = unsafe { out.as_raw() };
    let mut value = 1.0f32;
    let mut n = 4096u32;
    let mut params: [*mut c_void; 3] = [
        (&mut ptr as *mut u64).cast(),
        (&mut value as *mut f32).cast(),
        (&mut n as *mut u32).cast(),
    ];
    context.set_current().unwrap();
    // SAFETY: the parameters match fill(float*, float, unsigned); the configuration is invalid,
    // which the driver reports without running anything.
    let result = unsafe {
        cuda_sys::driver().unwrap().cuLaunchKernel().unwrap()(
            fill.as_raw(),
            1,
            1,
            1,
            2048,
            1,
            1,
            0,
            stream.as_raw(),
            params.as_mut_ptr(),
            std::ptr::null_mut(),
        )
    };
    assert_ne!(result, CUresult::CUDA_SUCCESS);
    println!(
        "driver's answer to 2048 threads per block: {}",
        cuda_driver::DriverError::new(result)
    );

    // The context is still usable: a good launch through the raw escape hatch works.
    // SAFETY: the parameters match fill(float*, float, unsigned) and n = 4096 fits `out`.
    unsafe { launch_raw(&fill, (16, 1, 1), (256, 1, 1), 0, &stream, &mut params) }.unwrap();
    stream.synchronize().unwrap();
    context.synchronize().unwrap();
    assert!(out.to_vec().unwrap().iter().all(|&v| v == 1.0));

    // launch_raw still checks the parameter count.
    // SAFETY: refused on the host before launching.
    let error = unsafe { launch_raw(&fill, (1, 1, 1), (32, 1, 1), 0, &stream, &mut params[..2]) }.unwrap_err();
    assert!(
        matches!(
            error,
            Error::Launch(LaunchError::ArgumentCount {
                expected: 3,
                given: 2,
                ..
            })
        ),
        "{error}"
    );
}

#[test]
fn slices_are_kernel_arguments() {
    let Some(context) = common::context() else { return };
    let fill = common::kernels(&context).function("fill").unwrap();
    let mut data = DeviceBuffer::<f32>::zeroed(&context, 10).unwrap();
    let stream = Stream::new(&context).unwrap();
    {
        let mut middle = data.slice_mut(3..7);
        // SAFETY: fill writes n = 4 floats, the length of the view.
        unsafe { stream.launch(&fill, &LaunchConfig::for_num_elems(4), (&mut middle, 9.0f32, 4u32)) }.unwrap();
    }
    stream.synchronize().unwrap();
    assert_eq!(
        data.to_vec().unwrap(),
        [0.0, 0.0, 0.0, 9.0, 9.0, 9.0, 9.0, 0.0, 0.0, 0.0]
    );
    assert_eq!(data.slice(3..5).to_vec().unwrap(), [9.0, 9.0]);
}

#[test]
fn launch_ex_with_attributes() {
    let Some(context) = common::context() else { return };
    let fill = common::kernels(&context).function("fill").unwrap();
    let mut out = DeviceBuffer::<f32>::zeroed(&context, 512).unwrap();
    let stream = Stream::new(&context).unwrap();
    let cluster = context.device().cluster_launch().unwrap();
    let attributes = cuda_driver::LaunchAttributes {
        cluster_dim: cluster.then_some((2, 1, 1)),
        cooperative: false,
        priority: Some(0),
    };
    // SAFETY: fill writes n = 512 floats of `out`, which holds 512.
    unsafe {
        stream.launch_ex(
            &fill,
            &LaunchConfig::for_num_elems(512),
            &attributes,
            (&mut out, 5.0f32, 512u32),
        )
    }
    .unwrap();
    stream.synchronize().unwrap();
    assert!(out.to_vec().unwrap().iter().all(|&v| v == 5.0));
    println!("launch_ex with clusters: {cluster}");
}

#[test]
fn bad_ptx_returns_the_jit_log() {
    let Some(context) = common::context() else { return };
    let error = cuda_driver::Module::from_ptx(&context, ".version 8.0\n.target sm_90\nthis is not ptx\n").unwrap_err();
    match &error {
        Error::ModuleLoad { error, log } => println!("bad PTX: {error}\nlog: {log}"),
        other => panic!("expected ModuleLoad, got {other:?}"),
    }
    assert!(error.code().is_some());
    assert!(matches!(
        cuda_driver::Module::from_image(&context, &[]),
        Err(Error::InvalidValue(_))
    ));
    assert!(matches!(
        cuda_driver::Module::from_ptx(&context, "a\0b"),
        Err(Error::InvalidValue(_))
    ));
}

#[test]
fn library_kernels_load_into_a_context() {
    let Some(context) = common::context() else { return };
    let arch = context.device().compute_capability().unwrap();
    let ptx = common::compile(common::KERNELS, arch).unwrap();
    let library = cuda_driver::Library::from_ptx(&ptx).unwrap();
    let names = library.kernel_names().unwrap();
    assert!(names.iter().any(|n| n == "fill"), "{names:?}");
    let fill = library.function(&context, "fill").unwrap();
    assert!(fill.library().is_some() && fill.module().library().is_some());
    drop(library); // the function keeps it loaded
    let mut out = DeviceBuffer::<f32>::zeroed(&context, 300).unwrap();
    let stream = Stream::new(&context).unwrap();
    // SAFETY: fill writes n = 300 floats of `out`.
    unsafe { stream.launch(&fill, &LaunchConfig::for_num_elems(300), (&mut out, 6.0f32, 300u32)) }.unwrap();
    stream.synchronize().unwrap();
    assert!(out.to_vec().unwrap().iter().all(|&v| v == 6.0));

    // Text that is not PTX at all is refused before the driver is asked.
    match cuda_driver::Library::from_ptx("not ptx at all") {
        Err(Error::ModuleLoad { error, log }) => {
            assert_eq!(error.code, CUresult::CUDA_ERROR_INVALID_PTX);
            assert!(log.contains("not PTX"), "{log}");
        }
        other => panic!("expected ModuleLoad, got {other:?}"),
    }
    // PTX with an error only the compiler finds: the driver may load libraries lazily
    // (CUDA_MODULE_LOADING=LAZY, the default), so the error comes at load or at first use,
    // typed, with the JIT log where the driver writes one.
    let bad = ".version 8.0\n.target sm_90\n.address_size 64\n.visible .entry fill() { this is not ptx; }\n";
    let error = match cuda_driver::Library::from_ptx(bad) {
        Err(error) => {
            println!("bad library PTX refused at load");
            error
        }
        Ok(library) => {
            println!(
                "bad library PTX loaded lazily; kernel_names: {:?}",
                library.kernel_names()
            );
            library
                .function(&context, "fill")
                .expect_err("a kernel of PTX that does not compile was loaded")
        }
    };
    match &error {
        Error::ModuleLoad { error, log } => println!("bad library PTX: {error}\nlog: {log}"),
        other => println!("bad library PTX: {other}"),
    }
    assert!(error.code().is_some(), "{error:?}");
    assert_ne!(error.code(), Some(CUresult::CUDA_SUCCESS));
}

#[test]
fn handwritten_ptx_of_the_docs_runs() {
    let Some(context) = common::context() else { return };
    let scale = cuda_driver::Module::from_ptx(&context, common::SCALE_PTX)
        .unwrap()
        .function("scale")
        .unwrap();
    let stream = Stream::new(&context).unwrap();
    let mut data = DeviceBuffer::from_slice(&context, &[1.0f32, 2.0, 3.0]).unwrap();
    // SAFETY: scale reads and writes n = 3 floats of `data`.
    unsafe { stream.launch(&scale, &LaunchConfig::for_num_elems(3), (&mut data, 2.0f32, 3u32)) }.unwrap();
    stream.synchronize().unwrap();
    assert_eq!(data.to_vec().unwrap(), [2.0, 4.0, 6.0]);
}
