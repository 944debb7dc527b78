//! Shared by the NVRTC and raw-launch tests.
use std::ffi::{c_char, CStr, CString};
use std::ptr;

use cuda_sys::nvrtc::{nvrtcProgram, nvrtcResult};

pub fn nvrtc() -> &'static cuda_sys::Nvrtc {
    cuda_sys::nvrtc().unwrap_or_else(|e| panic!("NVRTC must load for these tests (`cargo xtask test` fetches it): {e}"))
}

/// Compiles `source` to PTX for compute_90; returns the result, the log, and the PTX on success.
#[allow(dead_code)] // not every test binary that shares this module compiles with the process-wide NVRTC
pub fn compile(source: &str) -> (nvrtcResult, String, Option<String>) {
    compile_with(nvrtc(), source)
}

/// [`compile`] with the given NVRTC (of either CUDA generation).
pub fn compile_with(lib: &cuda_sys::Nvrtc, source: &str) -> (nvrtcResult, String, Option<String>) {
    let source = CString::new(source).unwrap();
    let name = CString::new("test.cu").unwrap();
    let mut program: nvrtcProgram = ptr::null_mut();
    // SAFETY: all pointers are valid for the call; no headers are passed.
    let created = unsafe {
        lib.nvrtcCreateProgram().unwrap()(
            &mut program,
            source.as_ptr(),
            name.as_ptr(),
            0,
            ptr::null(),
            ptr::null(),
        )
    };
    assert_eq!(created, nvrtcResult::NVRTC_SUCCESS);
    let arch = CString::new("--gpu-architecture=compute_90").unwrap();
    let options = [arch.as_ptr()];
    // SAFETY: `program` is live; `options` holds one valid C string.
    let result = unsafe { lib.nvrtcCompileProgram().unwrap()(program, 1, options.as_ptr()) };

    let mut log_size = 0;
    // SAFETY: `program` is live and `log_size` a valid out-pointer.
    assert_eq!(
        unsafe { lib.nvrtcGetProgramLogSize().unwrap()(program, &mut log_size) },
        nvrtcResult::NVRTC_SUCCESS
    );
    let mut log = vec![0 as c_char; log_size];
    // SAFETY: `log` has the size NVRTC asked for.
    assert_eq!(
        unsafe { lib.nvrtcGetProgramLog().unwrap()(program, log.as_mut_ptr()) },
        nvrtcResult::NVRTC_SUCCESS
    );
    // SAFETY: NVRTC writes a NUL-terminated log of `log_size` bytes.
    let log = unsafe { CStr::from_ptr(log.as_ptr()) }.to_string_lossy().into_owned();

    let ptx = (result == nvrtcResult::NVRTC_SUCCESS).then(|| {
        let mut size = 0;
        // SAFETY: as above.
        assert_eq!(
            unsafe { lib.nvrtcGetPTXSize().unwrap()(program, &mut size) },
            nvrtcResult::NVRTC_SUCCESS
        );
        let mut ptx = vec![0 as c_char; size];
        // SAFETY: `ptx` has the size NVRTC asked for.
        assert_eq!(
            unsafe { lib.nvrtcGetPTX().unwrap()(program, ptx.as_mut_ptr()) },
            nvrtcResult::NVRTC_SUCCESS
        );
        // SAFETY: the PTX is NUL-terminated.
        unsafe { CStr::from_ptr(ptx.as_ptr()) }.to_string_lossy().into_owned()
    });
    // SAFETY: `program` is live and destroyed once.
    assert_eq!(
        unsafe { lib.nvrtcDestroyProgram().unwrap()(&mut program) },
        nvrtcResult::NVRTC_SUCCESS
    );
    (result, log, ptx)
}
