//! The driver through cuda-sys alone: initialise, query the device, and
//! launch an NVRTC-compiled kernel with raw `cuLaunchKernel`, checking the
//! result on the host. Skipped (with a notice) where no GPU is present;
//! fails instead when `CUDA_REQUIRE_GPU=1`.

mod common;

use std::ffi::{c_void, CStr, CString};
use std::ptr;

use cuda_sys::driver::{CUcontext, CUdevice, CUdeviceptr, CUfunction, CUmodule, CUresult};

fn check(result: CUresult, what: &str) {
    assert_eq!(result, CUresult::CUDA_SUCCESS, "{what} failed");
}

#[test]
fn raw_launch_of_an_nvrtc_kernel() {
    let gpu_required = std::env::var("CUDA_REQUIRE_GPU").is_ok_and(|v| v == "1");
    let cuda = match cuda_sys::driver() {
        Ok(cuda) => cuda,
        Err(e) if !gpu_required => return println!("skipped: no CUDA driver here ({e})"),
        Err(e) => panic!("CUDA_REQUIRE_GPU=1 but the driver did not load: {e}"),
    };
    // SAFETY (whole test): every out-pointer is a valid local, every handle
    // passed was produced by the driver earlier in this test and is live,
    // and every buffer length matches the byte counts passed.
    unsafe {
        let init = cuda.cuInit().unwrap()(0);
        if init != CUresult::CUDA_SUCCESS && !gpu_required {
            return println!("skipped: cuInit returned {init:?} (no usable GPU)");
        }
        check(init, "cuInit");
        let mut version = 0;
        check(cuda.cuDriverGetVersion().unwrap()(&mut version), "cuDriverGetVersion");
        let mut count = 0;
        check(cuda.cuDeviceGetCount().unwrap()(&mut count), "cuDeviceGetCount");
        assert!(count > 0, "cuInit succeeded but no device is visible");
        let mut device: CUdevice = 0;
        check(cuda.cuDeviceGet().unwrap()(&mut device, 0), "cuDeviceGet");
        let mut name = [0i8; 256];
        check(
            cuda.cuDeviceGetName().unwrap()(name.as_mut_ptr(), 256, device),
            "cuDeviceGetName",
        );
        let name = CStr::from_ptr(name.as_ptr()).to_string_lossy().into_owned();
        println!("driver {version}, {count} device(s), device 0: {name}");

        let mut context: CUcontext = ptr::null_mut();
        check(
            cuda.cuDevicePrimaryCtxRetain().unwrap()(&mut context, device),
            "cuDevicePrimaryCtxRetain",
        );
        check(cuda.cuCtxSetCurrent().unwrap()(context), "cuCtxSetCurrent");

        let (result, log, ptx) = common::compile(
            r#"extern "C" __global__ void affine(const float* x, float* y, float a, float b, unsigned n) {
                unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
                if (i < n) y[i] = a * x[i] + b;
            }"#,
        );
        assert_eq!(result, cuda_sys::nvrtc::nvrtcResult::NVRTC_SUCCESS, "{log}");
        let ptx = CString::new(ptx.unwrap()).unwrap();
        let mut module: CUmodule = ptr::null_mut();
        check(
            cuda.cuModuleLoadData().unwrap()(&mut module, ptx.as_ptr().cast()),
            "cuModuleLoadData",
        );
        let mut function: CUfunction = ptr::null_mut();
        check(
            cuda.cuModuleGetFunction().unwrap()(&mut function, module, c"affine".as_ptr()),
            "cuModuleGetFunction",
        );

        let n: u32 = 1 << 20;
        let bytes = n as usize * 4;
        let host_x: Vec<f32> = (0..n).map(|i| i as f32).collect();
        let mut host_y = vec![0f32; n as usize];
        let (mut x, mut y): (CUdeviceptr, CUdeviceptr) = (0, 0);
        check(cuda.cuMemAlloc_v2().unwrap()(&mut x, bytes), "cuMemAlloc x");
        check(cuda.cuMemAlloc_v2().unwrap()(&mut y, bytes), "cuMemAlloc y");
        check(
            cuda.cuMemcpyHtoD_v2().unwrap()(x, host_x.as_ptr().cast(), bytes),
            "cuMemcpyHtoD",
        );

        let (mut a, mut b, mut len) = (2.0f32, 1.0f32, n);
        let mut params: [*mut c_void; 5] = [
            (&mut x as *mut CUdeviceptr).cast(),
            (&mut y as *mut CUdeviceptr).cast(),
            (&mut a as *mut f32).cast(),
            (&mut b as *mut f32).cast(),
            (&mut len as *mut u32).cast(),
        ];
        let launch = cuda.cuLaunchKernel().unwrap();
        check(
            launch(
                function,
                n / 256,
                1,
                1,
                256,
                1,
                1,
                0,
                ptr::null_mut(),
                params.as_mut_ptr(),
                ptr::null_mut(),
            ),
            "cuLaunchKernel",
        );
        check(cuda.cuCtxSynchronize().unwrap()(), "cuCtxSynchronize");
        check(
            cuda.cuMemcpyDtoH_v2().unwrap()(host_y.as_mut_ptr().cast(), y, bytes),
            "cuMemcpyDtoH",
        );
        for (i, value) in host_y.iter().enumerate() {
            assert_eq!(*value, 2.0 * i as f32 + 1.0, "y[{i}]");
        }
        println!("raw cuLaunchKernel: {n} results checked");

        check(cuda.cuMemFree_v2().unwrap()(x), "cuMemFree x");
        check(cuda.cuMemFree_v2().unwrap()(y), "cuMemFree y");
        check(cuda.cuModuleUnload().unwrap()(module), "cuModuleUnload");
        check(
            cuda.cuDevicePrimaryCtxRelease_v2().unwrap()(device),
            "cuDevicePrimaryCtxRelease",
        );
    }
}
