//! The safe layer on the stand-in driver emulating a CUDA 12.2 driver (R535:
//! `FAKECUDA_DRIVER_VERSION=12020`): what 12.2 supports works, through the 12.x ABI where CUDA
//! 13's headers declare a newer one; what needs a newer driver is a typed `NotSupported` naming
//! the function and the version it needs; a CUDA 13 NVRTC is refused, naming what to install;
//! a driver older than 12.0 is refused. No panic.

use cuda_driver::{
    Context, ContextFlags, Device, DeviceBuffer, Error, Event, EventFlags, LaunchConfig, Module, Stream,
};
use cuda_sys::{LibraryKind, Unusable};
use tests::fake;

/// Functions CUDA 13's `cuda.h` declares at an ABI newer than 12.2, and the version each needs.
const NEWER_THAN_12_2: &[(&str, i32)] = &[
    ("cuGraphAddNode_v2", 12030),
    ("cuGraphGetEdges_v2", 12030),
    ("cuStreamGetCaptureInfo_v3", 12030),
    ("cuFuncGetParamInfo", 12040),
    ("cuGreenCtxCreate", 12040),
    ("cuCtxCreate_v4", 12050),
    ("cuEventElapsedTime_v2", 12080),
    ("cuMemGetDefaultMemPool", 13000),
];

fn missing(driver: &cuda_sys::Driver, name: &str) -> cuda_sys::SymbolError {
    let result = match name {
        "cuGraphAddNode_v2" => driver.cuGraphAddNode_v2().map(drop),
        "cuGraphGetEdges_v2" => driver.cuGraphGetEdges_v2().map(drop),
        "cuStreamGetCaptureInfo_v3" => driver.cuStreamGetCaptureInfo_v3().map(drop),
        "cuFuncGetParamInfo" => driver.cuFuncGetParamInfo().map(drop),
        "cuGreenCtxCreate" => driver.cuGreenCtxCreate().map(drop),
        "cuCtxCreate_v4" => driver.cuCtxCreate_v4().map(drop),
        "cuEventElapsedTime_v2" => driver.cuEventElapsedTime_v2().map(drop),
        "cuMemGetDefaultMemPool" => driver.cuMemGetDefaultMemPool().map(drop),
        other => panic!("{other} is not in the list"),
    };
    result.expect_err(name)
}

#[test]
fn a_cuda_12_2_driver_runs_what_it_supports_and_refuses_the_rest_by_name() {
    // Set before anything in this one-test binary reads the environment or loads the driver.
    std::env::set_var("FAKECUDA_DRIVER_VERSION", "12020");
    let fake = fake::session();
    let driver = cuda_sys::driver().unwrap();
    assert_eq!(driver.library_version(), Some(12020));
    assert_eq!(cuda_sys::driver_version(), Some(12020));
    let loaded = cuda_sys::versions();
    assert!(
        loaded
            .iter()
            .any(|l| l.kind == LibraryKind::Driver && l.version == Some(12020)),
        "{loaded:?}"
    );

    // Functions whose declared ABI is newer: missing by name, with the version they need, and
    // `NotSupported` in the safe layer.
    for &(name, needs) in NEWER_THAN_12_2 {
        let error = missing(driver, name);
        assert_eq!((error.symbol, error.needs_version), (name, Some(needs)));
        let safe = Error::from(error);
        assert!(
            matches!(safe, Error::NotSupported { function, needs: n, driver: 12020 } if function == name && n == needs),
            "{safe:?}"
        );
        let message = safe.to_string();
        assert!(message.contains(name) && message.contains("12.2"), "{message}");
    }
    // 12.2's own functions at the ABI CUDA 13 declares (cuMemAdvise_v2 came with 12.2) resolve.
    assert!(driver.cuMemAdvise_v2().is_ok() && driver.cuMemPrefetchAsync_v2().is_ok());

    // What 12.2 supports works.
    let device = Device::get(0).unwrap();
    let context = Context::primary(&device).unwrap();
    let module = Module::from_ptx(&context, fake::KERNELS).unwrap();
    let fill = module.function("fill").unwrap();
    let saxpy = module.function("saxpy").unwrap();
    assert!(
        matches!(
            fill.param_info(),
            Err(Error::NotSupported {
                function: "cuFuncGetParamInfo",
                needs: 12040,
                driver: 12020
            })
        ),
        "{:?}",
        fill.param_info()
    );
    // Green contexts need 12.4: refused by name before anything is created.
    let sm_resource = device.sm_resource();
    assert!(
        matches!(
            sm_resource,
            Err(Error::NotSupported {
                function: "cuDeviceGetDevResource",
                needs: 12040,
                driver: 12020
            })
        ),
        "{sm_resource:?}"
    );
    let stream = Stream::new(&context).unwrap();
    let n = 1000u32;
    let x = DeviceBuffer::from_slice(&context, &vec![1.0f32; n as usize]).unwrap();
    let mut y = DeviceBuffer::<f32>::alloc(&context, n as usize).unwrap();
    let (start, end) = (
        Event::new(&context, EventFlags::empty()).unwrap(),
        Event::new(&context, EventFlags::empty()).unwrap(),
    );
    let config = LaunchConfig::for_num_elems(n);
    start.record(&stream).unwrap();
    // SAFETY: both kernels touch n floats of buffers of n elements; without the driver's
    // parameter layout (12.4) the launch goes unchecked, as the arguments match the entries.
    unsafe {
        stream.launch(&fill, &config, (&mut y, 3.0f32, n)).unwrap();
        stream.launch(&saxpy, &config, (2.0f32, &x, &mut y, n)).unwrap();
    }
    end.record(&stream).unwrap();
    end.synchronize().unwrap();
    assert!(y.to_vec().unwrap().iter().all(|&v| v == 5.0));
    // Timing through 12.x's `cuEventElapsedTime`, contexts of their own through `cuCtxCreate_v2`.
    assert!(start.elapsed_ms(&end).unwrap() >= 0.0);
    let own = Context::new(&device, ContextFlags::empty()).unwrap();
    let on_own = DeviceBuffer::from_slice(&own, &[7u32; 4]).unwrap();
    assert_eq!(on_own.to_vec().unwrap(), [7; 4]);
    drop((on_own, own, x, y, start, end, stream, fill, saxpy, module, context));

    // A CUDA 13 NVRTC is refused on this driver, naming both versions and the CUDA 12 wheel; a
    // CUDA 12 one loads. (Which variable names which depends on the run: the bundle's CUDA 12
    // run points CUDA_NVRTC_LIBRARY at CUDA 12's.)
    let mut refused = 0;
    for variable in ["CUDA_NVRTC_LIBRARY", "CUDA12_NVRTC_LIBRARY"] {
        let Some(path) = std::env::var_os(variable) else {
            println!("skipped: {variable} unset");
            continue;
        };
        match cuda_sys::Nvrtc::open(&path) {
            Ok(nvrtc) => assert_eq!(nvrtc.library_version().map(|v| v / 1000), Some(12), "{variable}"),
            Err(error) => {
                assert!(
                    matches!(error.unusable, Some(Unusable::NewerThanDriver { library, driver: 12020 }) if library >= 13000),
                    "{error:?}"
                );
                let message = error.to_string();
                assert!(
                    message.contains("12.2") && message.contains("nvidia-cuda-nvrtc-cu12==12.*"),
                    "{message}"
                );
                refused += 1;
            }
        }
    }
    println!("{refused} CUDA 13 NVRTC refused");

    // cuda-core on this driver: NVRTC as the process loads it (`CUDA_NVRTC_LIBRARY`, CUDA 12's
    // searched first). A CUDA 13 one is refused, and an expression that needs a generated kernel
    // says so; a CUDA 12 one newer
    // than the driver makes CUBINs, since the driver cannot read its PTX.
    let context = Context::primary(&device).unwrap();
    let stream = Stream::new(&context).unwrap();
    let x = cuda_core::DeviceArray::from_slice(&stream, &[1.0f32, 2.0, 3.0]).unwrap();
    match cuda_sys::nvrtc() {
        Err(load) => {
            // None found at all (leakcheck runs without NVRTC), or only CUDA 13's: refused.
            assert!(
                matches!(load.unusable, None | Some(Unusable::NewerThanDriver { .. })),
                "{load:?}"
            );
            let error = (&x + &x).eval().expect_err("no usable NVRTC");
            assert!(
                matches!(&error, cuda_core::Error::NvrtcUnavailable(why) if why.unusable == load.unusable),
                "{error:?}"
            );
        }
        Ok(nvrtc) => {
            let version = nvrtc.library_version().unwrap();
            assert_eq!(version / 1000, 12);
            let (arch, target) = cuda_core::device_target(9, 0, cuda_core::CompileTarget::Ptx).unwrap();
            assert_eq!(arch, cuda_core::Arch::Sm(90));
            let expected = if version > 12020 {
                cuda_core::CompileTarget::Cubin
            } else {
                cuda_core::CompileTarget::Ptx
            };
            assert_eq!(target, expected, "NVRTC {version} on a 12.2 driver");
        }
    }
    drop((x, stream, context));
    assert!(cuda_core::release_process_caches());

    // A driver older than CUDA 12.0 is refused, saying what is needed.
    std::env::set_var("FAKECUDA_DRIVER_VERSION", "11080");
    let error = cuda_sys::Driver::open(fake::LIBRARY_PATH)
        .err()
        .expect("an 11.8 driver");
    std::env::set_var("FAKECUDA_DRIVER_VERSION", "12020");
    assert_eq!(error.unusable, Some(Unusable::DriverTooOld { driver: 11080 }));
    let message = error.to_string();
    assert!(
        message.contains("11.8") && message.contains("12.0 or newer"),
        "{message}"
    );

    let counts = fake.counts();
    assert!(counts.is_clean(), "{counts}");
}
