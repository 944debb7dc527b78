//! The test kernels as CUDA C, compiled to PTX with NVRTC, so the sequences
//! of [`crate::sequences`] run on a real GPU. Their names and parameters
//! match the host kernels of the stand-in driver (`tests/fakecuda/kernels.c`,
//! declared in [`crate::fake::KERNELS`]), which also runs this PTX.

use std::ffi::{c_char, CStr, CString};
use std::ptr;

use cuda_sys::nvrtc::nvrtcResult;

/// `vector_add`, `fill`, `saxpy`, `affine` and `noop`.
pub const CUDA_SOURCE: &str = r#"
struct Affine { float scale; float offset; };

extern "C" __global__ void vector_add(const float *a, const float *b, float *c, unsigned n) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}

extern "C" __global__ void fill(float *out, float value, unsigned n) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = value;
}

extern "C" __global__ void saxpy(float a, const float *x, float *y, unsigned n) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}

extern "C" __global__ void affine(Affine f, float *data, unsigned n) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) data[i] = f.scale * data[i] + f.offset;
}

extern "C" __global__ void noop() {}
"#;

/// Compiles [`CUDA_SOURCE`] for `compute_90` with NVRTC. `Err` says why
/// (NVRTC not found, or the compile log).
pub fn compile_ptx() -> Result<String, String> {
    let nvrtc = cuda_sys::nvrtc().map_err(|e| e.to_string())?;
    let check = |what: &str, result: nvrtcResult| {
        if result == nvrtcResult::NVRTC_SUCCESS {
            Ok(())
        } else {
            Err(format!("{what} failed: NVRTC error {}", result.0))
        }
    };
    let source = CString::new(CUDA_SOURCE).expect("no NUL in the source");
    let mut program = ptr::null_mut();
    // SAFETY: `program` is a valid out-pointer; source and name are NUL-terminated; no headers.
    let created = unsafe {
        nvrtc.nvrtcCreateProgram().map_err(|e| e.to_string())?(
            &mut program,
            source.as_ptr(),
            c"kernels.cu".as_ptr(),
            0,
            ptr::null(),
            ptr::null(),
        )
    };
    check("nvrtcCreateProgram", created)?;
    let compiled = compile(nvrtc, program);
    // SAFETY: `program` was created above and is destroyed once.
    unsafe {
        if let Ok(destroy) = nvrtc.nvrtcDestroyProgram() {
            destroy(&mut program);
        }
    }
    compiled
}

fn compile(nvrtc: &cuda_sys::Nvrtc, program: cuda_sys::nvrtc::nvrtcProgram) -> Result<String, String> {
    let options = [c"--gpu-architecture=compute_90".as_ptr()];
    // SAFETY: `program` is alive; the option array holds one NUL-terminated string.
    let result = unsafe { nvrtc.nvrtcCompileProgram().map_err(|e| e.to_string())?(program, 1, options.as_ptr()) };
    if result != nvrtcResult::NVRTC_SUCCESS {
        return Err(format!("NVRTC error {}:\n{}", result.0, log(nvrtc, program)));
    }
    let mut size = 0;
    // SAFETY: `size` is a valid out-pointer; the program compiled.
    unsafe { nvrtc.nvrtcGetPTXSize().map_err(|e| e.to_string())?(program, &mut size) };
    let mut ptx = vec![0 as c_char; size.max(1)];
    // SAFETY: `ptx` holds the `size` bytes NVRTC reported, terminating NUL included.
    unsafe { nvrtc.nvrtcGetPTX().map_err(|e| e.to_string())?(program, ptx.as_mut_ptr()) };
    // SAFETY: NVRTC wrote a NUL-terminated text into the buffer.
    Ok(unsafe { CStr::from_ptr(ptx.as_ptr()) }.to_string_lossy().into_owned())
}

fn log(nvrtc: &cuda_sys::Nvrtc, program: cuda_sys::nvrtc::nvrtcProgram) -> String {
    let (Ok(size_of), Ok(get)) = (nvrtc.nvrtcGetProgramLogSize(), nvrtc.nvrtcGetProgramLog()) else {
        return String::new();
    };
    let mut size = 0;
    // SAFETY: `size` is a valid out-pointer.
    unsafe { size_of(program, &mut size) };
    let mut text = vec![0 as c_char; size.max(1)];
    // SAFETY: `text` holds the reported size.
    unsafe { get(program, text.as_mut_ptr()) };
    // SAFETY: NVRTC NUL-terminates the log.
    unsafe { CStr::from_ptr(text.as_ptr()) }.to_string_lossy().into_owned()
}
