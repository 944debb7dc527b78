//! The runtime layer over CUDA 12's cudart (`CUDA12_RUNTIME_LIBRARY`, the pinned
//! `nvidia-cuda-runtime-cu12` wheel's `libcudart.so.12`; `skipped:` without it). Without a GPU:
//! it loads as the process's runtime, reports 12.x, resolves CUDA 12's
//! `cudaGetDeviceProperties_v2`, and calls give the runtime's typed errors. With one (the GPU
//! bundle's CUDA 12 run): each device's properties, read from CUDA 12's struct layout, agree
//! with the attributes.

use cuda_runtime::{Device, DeviceAttribute, Error};

// One test: it sets `CUDA_RUNTIME_LIBRARY`, which no other thread may read meanwhile.
#[test]
fn cuda_12_runtime_reports_properties_in_cuda_13_layout() {
    let Some(path) = std::env::var_os("CUDA12_RUNTIME_LIBRARY") else {
        println!("skipped: CUDA12_RUNTIME_LIBRARY unset (`cargo xtask test` sets it)");
        return;
    };
    std::env::set_var("CUDA_RUNTIME_LIBRARY", &path);
    let runtime = cuda_sys::runtime().unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        runtime.library_version().map(|v| v / 1000),
        Some(12),
        "{}",
        runtime.path().display()
    );
    assert!(runtime.cudaGetDeviceProperties_v2().is_ok());
    assert_eq!(cuda_runtime::runtime_version().unwrap().major, 12);
    let count = match cuda_runtime::device_count() {
        Ok(count) => count,
        Err(error) => {
            assert!(matches!(error, Error::Runtime(_)), "{error:?}");
            println!("no device ({error}): the properties are checked on a GPU");
            let std::result::Result::Err(again) = Device::get(0).and_then(|d| d.properties()) else {
                panic!("properties without a device");
            };
            assert!(matches!(again, Error::Runtime(_)), "{again:?}");
            return;
        }
    };
    for ordinal in 0..count {
        let device = Device::get(ordinal).unwrap();
        let properties = device.properties().unwrap();
        let attribute = |a| u32::try_from(device.attribute(a).unwrap()).unwrap();
        assert!(!properties.name.is_empty());
        assert_eq!(
            properties.major,
            attribute(DeviceAttribute::cudaDevAttrComputeCapabilityMajor)
        );
        assert_eq!(
            properties.minor,
            attribute(DeviceAttribute::cudaDevAttrComputeCapabilityMinor)
        );
        assert_eq!(
            properties.multiprocessor_count,
            attribute(DeviceAttribute::cudaDevAttrMultiProcessorCount)
        );
        println!(
            "device {ordinal}: {} sm_{}{}, {} SMs (CUDA 12 runtime)",
            properties.name, properties.major, properties.minor, properties.multiprocessor_count
        );
    }
}
