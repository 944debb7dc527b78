//! Shared by the GPU test binaries: the device context (or a skip message),
//! and kernels compiled from CUDA C with NVRTC.
// Each test binary uses a different subset of these helpers.
#![allow(dead_code)]

use std::ffi::{c_char, CString};
use std::sync::OnceLock;

use cuda_driver::{Context, Device, Module};
use cuda_sys::nvrtc::{nvrtcProgram, nvrtcResult};

/// The kernels the tests launch. `extern "C"` keeps the names unmangled.
pub const KERNELS: &str = r#"
struct Affine { float scale; float offset; };
struct Mixed { double d; int i; signed char c; };

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

extern "C" __global__ void mixed(Mixed m, double *out) {
    if (blockIdx.x == 0 && threadIdx.x == 0) {
        out[0] = m.d;
        out[1] = (double)m.i;
        out[2] = (double)m.c;
    }
}

// out (width x height, row-major) = transpose of in (height x width, row-major).
extern "C" __global__ void transpose(const float *in, float *out, unsigned width, unsigned height) {
    unsigned x = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x < width && y < height) out[x * height + y] = in[y * width + x];
}

extern "C" __global__ void add_one(int *data, unsigned n) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) data[i] += 1;
}

// Busy-waits about `cycles` clock cycles, then marks its block done.
extern "C" __global__ void spin(unsigned long long cycles, int *done) {
    long long start = clock64();
    while ((unsigned long long)(clock64() - start) < cycles) {
    }
    if (threadIdx.x == 0) done[blockIdx.x] = 1;
}

extern "C" __global__ void __launch_bounds__(128) limited(float *out) {
    out[blockIdx.x * blockDim.x + threadIdx.x] = 1.0f;
}

extern "C" __global__ void noop() {}
"#;

/// The hand-written PTX of the crate documentation's example:
/// `scale(float *data, float factor, unsigned n)` multiplies `n` floats in place.
pub const SCALE_PTX: &str = r#"
.version 8.0
.target sm_75
.address_size 64

.visible .entry scale(.param .u64 data, .param .f32 factor, .param .u32 n)
{
    .reg .pred %p;
    .reg .b32 %r<5>;
    .reg .f32 %f<3>;
    .reg .b64 %rd<4>;
    ld.param.u64 %rd1, [data];
    ld.param.f32 %f1, [factor];
    ld.param.u32 %r1, [n];
    mov.u32 %r2, %ctaid.x;
    mov.u32 %r3, %ntid.x;
    mov.u32 %r4, %tid.x;
    mad.lo.s32 %r2, %r2, %r3, %r4;
    setp.ge.u32 %p, %r2, %r1;
    @%p bra DONE;
    cvta.to.global.u64 %rd2, %rd1;
    mul.wide.u32 %rd3, %r2, 4;
    add.s64 %rd2, %rd2, %rd3;
    ld.global.f32 %f2, [%rd2];
    mul.f32 %f2, %f2, %f1;
    st.global.f32 [%rd2], %f2;
DONE:
    ret;
}
"#;

/// Assembles PTX for `sm_90` with nvJitLink, returning its error log on failure.
pub fn assemble(ptx: &str) -> Result<(), String> {
    use cuda_sys::nvjitlink::{nvJitLinkHandle, nvJitLinkInputType, nvJitLinkResult};
    let link = cuda_sys::nvjitlink().map_err(|e| e.to_string())?;
    let arch = CString::new("-arch=sm_90").unwrap();
    let options = [arch.as_ptr()];
    let mut handle: nvJitLinkHandle = std::ptr::null_mut();
    // SAFETY: valid out-pointer and one NUL-terminated option.
    let created = unsafe { link.nvJitLinkCreate().map_err(|e| e.to_string())?(&mut handle, 1, options.as_ptr()) };
    if created != nvJitLinkResult::NVJITLINK_SUCCESS {
        return Err(format!("nvJitLinkCreate failed with {}", created.0));
    }
    let name = CString::new("handwritten.ptx").unwrap();
    let ptx = CString::new(ptx.trim_start()).map_err(|e| e.to_string())?;
    let ptx = ptx.as_bytes_with_nul();
    let result = (|| {
        // SAFETY: the handle is live; `ptx` holds `len` bytes; the name is NUL-terminated.
        let added = unsafe {
            link.nvJitLinkAddData().map_err(|e| e.to_string())?(
                handle,
                nvJitLinkInputType::NVJITLINK_INPUT_PTX,
                ptx.as_ptr().cast(),
                ptx.len(),
                name.as_ptr(),
            )
        };
        // SAFETY: the handle is live.
        let completed = if added == nvJitLinkResult::NVJITLINK_SUCCESS {
            unsafe { link.nvJitLinkComplete().map_err(|e| e.to_string())?(handle) }
        } else {
            added
        };
        if completed == nvJitLinkResult::NVJITLINK_SUCCESS {
            return Ok(());
        }
        let mut size = 0;
        // SAFETY: the handle is live; valid out-pointer.
        unsafe { link.nvJitLinkGetErrorLogSize().map_err(|e| e.to_string())?(handle, &mut size) };
        let mut log = vec![0u8; size.max(1)];
        // SAFETY: `log` holds `size` bytes.
        unsafe { link.nvJitLinkGetErrorLog().map_err(|e| e.to_string())?(handle, log.as_mut_ptr().cast()) };
        Err(String::from_utf8_lossy(&log).trim_end_matches('\0').to_string())
    })();
    // SAFETY: the handle was created above and is destroyed once.
    unsafe {
        if let Ok(destroy) = link.nvJitLinkDestroy() {
            destroy(&mut handle);
        }
    }
    result
}

/// Skips (prints `skipped: <why>` and returns `None`) or, under
/// `CUDA_REQUIRE_GPU=1`, fails.
pub fn skip<T>(why: &str) -> Option<T> {
    if std::env::var("CUDA_REQUIRE_GPU").as_deref() == Ok("1") {
        panic!("CUDA_REQUIRE_GPU=1 but {why}");
    }
    println!("skipped: {why}");
    None
}

/// The primary context of device 0, shared by the tests of one binary.
pub fn context() -> Option<Context> {
    static CONTEXT: OnceLock<Result<Context, String>> = OnceLock::new();
    let found = CONTEXT.get_or_init(|| {
        let count =
            Device::count().map_err(|e| format!("no CUDA driver ({})", e.to_string().lines().next().unwrap_or("")))?;
        if count == 0 {
            return Err("no CUDA device".to_string());
        }
        let device = Device::get(0).map_err(|e| e.to_string())?;
        device.primary_context().map_err(|e| e.to_string())
    });
    match found {
        Ok(context) => Some(context.clone()),
        Err(why) => skip(why),
    }
}

/// `KERNELS` compiled for `context`'s device and loaded into it.
pub fn kernels(context: &Context) -> Module {
    let arch = context.device().compute_capability().expect("compute capability");
    let ptx = compile(KERNELS, arch).unwrap_or_else(|log| panic!("NVRTC failed:\n{log}"));
    Module::from_ptx(context, &ptx).expect("load PTX")
}

fn nvrtc_check(result: nvrtcResult, what: &str) -> Result<(), String> {
    if result == nvrtcResult::NVRTC_SUCCESS {
        Ok(())
    } else {
        Err(format!("{what} failed with nvrtcResult {}", result.0))
    }
}

/// Compiles CUDA C to PTX for compute capability `arch` with NVRTC; the
/// error carries the whole compile log.
pub fn compile(source: &str, arch: (u32, u32)) -> Result<String, String> {
    let nvrtc = cuda_sys::nvrtc().map_err(|e| e.to_string())?;
    let source = CString::new(source).map_err(|e| e.to_string())?;
    let name = CString::new("kernels.cu").unwrap();
    let mut program: nvrtcProgram = std::ptr::null_mut();
    // SAFETY: out-pointer and NUL-terminated strings are valid; no headers.
    let created = unsafe {
        nvrtc.nvrtcCreateProgram().map_err(|e| e.to_string())?(
            &mut program,
            source.as_ptr(),
            name.as_ptr(),
            0,
            std::ptr::null(),
            std::ptr::null(),
        )
    };
    nvrtc_check(created, "nvrtcCreateProgram")?;
    let options: Vec<CString> = [
        format!("--gpu-architecture=compute_{}{}", arch.0, arch.1),
        "--std=c++17".into(),
    ]
    .into_iter()
    .map(|o| CString::new(o).unwrap())
    .collect();
    let pointers: Vec<*const c_char> = options.iter().map(|o| o.as_ptr()).collect();
    let result = (|| {
        // SAFETY: the program is alive; `pointers` holds `len` NUL-terminated options.
        let compiled = unsafe {
            nvrtc.nvrtcCompileProgram().map_err(|e| e.to_string())?(program, pointers.len() as i32, pointers.as_ptr())
        };
        if compiled != nvrtcResult::NVRTC_SUCCESS {
            let mut size = 0;
            // SAFETY: valid program and out-pointer.
            unsafe { nvrtc.nvrtcGetProgramLogSize().map_err(|e| e.to_string())?(program, &mut size) };
            let mut log = vec![0u8; size.max(1)];
            // SAFETY: `log` holds `size` bytes.
            unsafe { nvrtc.nvrtcGetProgramLog().map_err(|e| e.to_string())?(program, log.as_mut_ptr().cast()) };
            return Err(String::from_utf8_lossy(&log).trim_end_matches('\0').to_string());
        }
        let mut size = 0;
        // SAFETY: valid program and out-pointer.
        nvrtc_check(
            unsafe { nvrtc.nvrtcGetPTXSize().map_err(|e| e.to_string())?(program, &mut size) },
            "nvrtcGetPTXSize",
        )?;
        let mut ptx = vec![0u8; size];
        // SAFETY: `ptx` holds `size` bytes, the size NVRTC reported.
        nvrtc_check(
            unsafe { nvrtc.nvrtcGetPTX().map_err(|e| e.to_string())?(program, ptx.as_mut_ptr().cast()) },
            "nvrtcGetPTX",
        )?;
        Ok(String::from_utf8_lossy(&ptx).trim_end_matches('\0').to_string())
    })();
    // SAFETY: the program was created above and is destroyed once.
    unsafe {
        if let Ok(destroy) = nvrtc.nvrtcDestroyProgram() {
            destroy(&mut program);
        }
    }
    result
}
