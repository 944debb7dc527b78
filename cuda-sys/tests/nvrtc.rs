//! NVRTC through the raw table: it needs no GPU, so this runs for real in CI.

mod common;

use std::ffi::CStr;

use common::{compile, nvrtc};
use cuda_sys::nvrtc::nvrtcResult;

#[test]
fn reports_its_version() {
    let (mut major, mut minor) = (0, 0);
    // SAFETY: both out-pointers are valid.
    let result = unsafe { nvrtc().nvrtcVersion().unwrap()(&mut major, &mut minor) };
    assert_eq!(result, nvrtcResult::NVRTC_SUCCESS);
    println!("NVRTC {major}.{minor} from {}", nvrtc().path().display());
    // One build serves both generations: CUDA 13's NVRTC, or CUDA 12's (the bundle's CUDA 12 run).
    assert!(major == 13 || major == 12, "NVRTC {major}.{minor}");
    assert_eq!(nvrtc().library_version(), Some(major * 1000 + minor * 10));
}

#[test]
fn compiles_a_kernel_to_ptx() {
    let (result, _, ptx) = compile(
        r#"extern "C" __global__ void scale(float* x, float a, unsigned n) {
        unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n) x[i] *= a;
    }"#,
    );
    assert_eq!(result, nvrtcResult::NVRTC_SUCCESS);
    let ptx = ptx.unwrap();
    assert!(ptx.contains(".visible .entry scale("), "{ptx}");
    assert!(ptx.contains(".target sm_90"), "{ptx}");
}

#[test]
fn a_broken_kernel_gives_the_compile_log() {
    let (result, log, ptx) = compile("extern \"C\" __global__ void broken(float* x) { x[0] = undefined_name; }");
    assert_eq!(result, nvrtcResult::NVRTC_ERROR_COMPILATION);
    assert!(ptx.is_none());
    assert!(log.contains("undefined_name"), "{log}");
    assert!(log.contains("error"), "{log}");
}

#[test]
fn error_strings_come_from_the_library() {
    // SAFETY: nvrtcGetErrorString returns a static string for any code.
    let text = unsafe {
        CStr::from_ptr(nvrtc().nvrtcGetErrorString().unwrap()(
            nvrtcResult::NVRTC_ERROR_COMPILATION,
        ))
    };
    assert_eq!(text.to_str().unwrap(), "NVRTC_ERROR_COMPILATION");
}
