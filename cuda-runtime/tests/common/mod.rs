//! Shared by the test binaries: GPU detection and an NVRTC compile helper.
#![allow(dead_code)]

use std::ffi::{c_char, CString};

use cuda_runtime::Device;
use cuda_sys::nvrtc::{nvrtcProgram, nvrtcResult};

/// Device 0, or `None` after printing why the test is skipped. Panics instead
/// when `CUDA_REQUIRE_GPU=1`, so a GPU run cannot silently skip.
pub fn gpu(test: &str) -> Option<Device> {
    let why = match cuda_runtime::device_count() {
        Ok(0) => "the runtime sees no device".to_string(),
        Ok(_) => match Device::get(0) {
            Ok(device) => return Some(device),
            Err(e) => format!("device 0: {e}"),
        },
        Err(e) => e.to_string(),
    };
    if std::env::var("CUDA_REQUIRE_GPU").as_deref() == Ok("1") {
        panic!("{test}: CUDA_REQUIRE_GPU=1 but no usable GPU: {why}");
    }
    println!("skipped: {test}: {why}");
    None
}

/// What NVRTC should produce.
pub enum Output {
    /// PTX for a virtual architecture, e.g. `compute_90`.
    Ptx(String),
    /// A CUBIN for a real architecture, e.g. `sm_90`.
    Cubin(String),
}

/// Compiles CUDA C++ with NVRTC; panics with the log on failure (a test bug).
pub fn compile(source: &str, output: Output) -> Vec<u8> {
    let nvrtc = cuda_sys::nvrtc().expect("NVRTC loads (set CUDA_NVRTC_LIBRARY)");
    let ok = |r: nvrtcResult, what: &str| assert_eq!(r, nvrtcResult::NVRTC_SUCCESS, "{what}");
    let source = CString::new(source).unwrap();
    let name = CString::new("test.cu").unwrap();
    let mut program: nvrtcProgram = std::ptr::null_mut();
    // SAFETY: NUL-terminated strings; no headers (count 0, null arrays).
    let r = unsafe {
        nvrtc.nvrtcCreateProgram().unwrap()(
            &mut program,
            source.as_ptr(),
            name.as_ptr(),
            0,
            std::ptr::null(),
            std::ptr::null(),
        )
    };
    ok(r, "nvrtcCreateProgram");
    let arch = match &output {
        Output::Ptx(arch) | Output::Cubin(arch) => CString::new(format!("--gpu-architecture={arch}")).unwrap(),
    };
    let options: [*const c_char; 1] = [arch.as_ptr()];
    // SAFETY: a live program; one NUL-terminated option.
    let compiled = unsafe { nvrtc.nvrtcCompileProgram().unwrap()(program, 1, options.as_ptr()) };
    if compiled != nvrtcResult::NVRTC_SUCCESS {
        let mut size = 0;
        // SAFETY: a live program; `size` is a valid out-pointer.
        unsafe { nvrtc.nvrtcGetProgramLogSize().unwrap()(program, &mut size) };
        let mut log = vec![0u8; size];
        // SAFETY: `log` has the size NVRTC asked for.
        unsafe { nvrtc.nvrtcGetProgramLog().unwrap()(program, log.as_mut_ptr().cast()) };
        panic!("NVRTC failed: {}", String::from_utf8_lossy(&log));
    }
    let mut size = 0;
    let mut code;
    match output {
        Output::Ptx(_) => {
            // SAFETY: a compiled program; valid out-pointer, then a buffer of that size.
            unsafe {
                ok(nvrtc.nvrtcGetPTXSize().unwrap()(program, &mut size), "nvrtcGetPTXSize");
                code = vec![0u8; size];
                ok(
                    nvrtc.nvrtcGetPTX().unwrap()(program, code.as_mut_ptr().cast()),
                    "nvrtcGetPTX",
                );
            }
        }
        Output::Cubin(_) => {
            // SAFETY: as above.
            unsafe {
                ok(
                    nvrtc.nvrtcGetCUBINSize().unwrap()(program, &mut size),
                    "nvrtcGetCUBINSize",
                );
                code = vec![0u8; size];
                ok(
                    nvrtc.nvrtcGetCUBIN().unwrap()(program, code.as_mut_ptr().cast()),
                    "nvrtcGetCUBIN",
                );
            }
        }
    }
    // SAFETY: the program is live and destroyed once.
    unsafe { nvrtc.nvrtcDestroyProgram().unwrap()(&mut program) };
    code
}

/// `data[i] = data[i] * factor + offset[i]` for `i < n`.
pub const SCALE_ADD: &str = r#"
extern "C" __global__ void scale_add(float* data, const float* offset, float factor, unsigned n) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) data[i] = data[i] * factor + offset[i];
}
"#;
