//! The raw driver path of cuda-python's overview page, through `cuda-sys` alone: every call is
//! the C function itself, `unsafe`, its `CUresult` checked by hand. The safe crates do the same
//! work with RAII and typed errors (see `saxpy.rs` for the `cuda-core` version). A failing call
//! returns its error at once and the process exits, so no cleanup is written for that path.
//!
//! What it mirrors (`cuda.bindings`, error checks left out):
//!
//! ```python
//! driver.cuInit(0)
//! device = driver.cuDeviceGet(0)
//! major = driver.cuDeviceGetAttribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device)
//! minor = driver.cuDeviceGetAttribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device)
//! prog = nvrtc.nvrtcCreateProgram(source.encode(), b"saxpy.cu", 0, [], [])
//! nvrtc.nvrtcCompileProgram(prog, 2, [b"--fmad=false", f"--gpu-architecture=compute_{major}{minor}".encode()])
//! ptx = b" " * nvrtc.nvrtcGetPTXSize(prog); nvrtc.nvrtcGetPTX(prog, ptx)
//! context = driver.cuCtxCreate(None, 0, device)
//! module = driver.cuModuleLoadData(ptx)
//! kernel = driver.cuModuleGetFunction(module, b"saxpy")
//! d_x = driver.cuMemAlloc(size) # likewise d_y, d_out
//! stream = driver.cuStreamCreate(0)
//! driver.cuMemcpyHtoDAsync(d_x, h_x.ctypes.data, size, stream) # likewise d_y
//! driver.cuLaunchKernel(kernel, blocks, 1, 1, threads, 1, 1, 0, stream, args.ctypes.data, 0)
//! driver.cuMemcpyDtoHAsync(h_out.ctypes.data, d_out, size, stream)
//! driver.cuStreamSynchronize(stream)
//! assert np.allclose(h_out, a * h_x + h_y)
//! ```
//!
//! `cargo run --release --example raw_driver_saxpy`

use std::error::Error;
use std::ffi::{c_void, CStr, CString};
use std::mem::size_of;
use std::process::ExitCode;
use std::ptr;

use cuda_sys::driver::{
    CUcontext, CUdevice, CUdevice_attribute, CUdeviceptr, CUfunction, CUmodule, CUresult, CUstream,
};
use cuda_sys::nvrtc::{nvrtcProgram, nvrtcResult};

const SAXPY: &str = r#"
extern "C" __global__ void saxpy(float a, const float *x, const float *y, float *out, size_t n) {
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i < n) out[i] = a * x[i] + y[i];
}
"#;

const THREADS: u32 = 512;
const BLOCKS: u32 = 32768;

type BoxResult<T> = Result<T, Box<dyn Error>>;

/// Turns a driver status into an error naming the call, the code and its description.
fn check(result: CUresult, call: &str) -> BoxResult<()> {
    if result == CUresult::CUDA_SUCCESS {
        return Ok(());
    }
    let cuda = cuda_sys::driver()?;
    let (mut name, mut description) = (ptr::null(), ptr::null());
    // SAFETY: both out-pointers are valid locals; for a known code the driver stores pointers to
    // static NUL-terminated strings, for an unknown one it leaves them null (checked below).
    unsafe {
        cuda.cuGetErrorName()?(result, &mut name);
        cuda.cuGetErrorString()?(result, &mut description);
    }
    let text = |p: *const std::ffi::c_char| match p.is_null() {
        true => "(unknown)".to_string(),
        // SAFETY: a non-null pointer from cuGetErrorName/String is a static C string.
        false => unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned(),
    };
    Err(format!("{call} failed: {} ({}): {}", result.0, text(name), text(description)).into())
}

/// Turns an NVRTC status into an error, with the compile log when there is one.
fn check_nvrtc(result: nvrtcResult, call: &str, program: nvrtcProgram) -> BoxResult<()> {
    if result == nvrtcResult::NVRTC_SUCCESS {
        return Ok(());
    }
    let nvrtc = cuda_sys::nvrtc()?;
    // SAFETY: nvrtcGetErrorString returns a static C string for every code.
    let name = unsafe { CStr::from_ptr(nvrtc.nvrtcGetErrorString()?(result)) }.to_string_lossy();
    let mut log = String::new();
    let mut size = 0;
    // SAFETY: `program` is a live program; `size` is a valid out-pointer.
    if !program.is_null()
        && unsafe { nvrtc.nvrtcGetProgramLogSize()?(program, &mut size) } == nvrtcResult::NVRTC_SUCCESS
    {
        let mut bytes = vec![0u8; size];
        // SAFETY: the buffer holds the `size` bytes (NUL included) the log needs.
        if unsafe { nvrtc.nvrtcGetProgramLog()?(program, bytes.as_mut_ptr().cast()) } == nvrtcResult::NVRTC_SUCCESS {
            log = String::from_utf8_lossy(&bytes).trim_end_matches('\0').to_string();
        }
    }
    Err(format!("{call} failed: {name}\n{log}").into())
}

/// Compiles `SAXPY` to PTX for `compute_{major}{minor}`; the returned bytes end with a NUL.
fn compile_ptx(major: i32, minor: i32) -> BoxResult<Vec<u8>> {
    let nvrtc = cuda_sys::nvrtc()?;
    let source = CString::new(SAXPY)?;
    let mut program: nvrtcProgram = ptr::null_mut();
    // SAFETY: source and name are NUL-terminated; no headers, so both header arrays may be null.
    let created = unsafe {
        nvrtc.nvrtcCreateProgram()?(
            &mut program,
            source.as_ptr(),
            c"saxpy.cu".as_ptr(),
            0,
            ptr::null(),
            ptr::null(),
        )
    };
    check_nvrtc(created, "nvrtcCreateProgram", ptr::null_mut())?;
    let arch = CString::new(format!("--gpu-architecture=compute_{major}{minor}"))?;
    let options = [c"--fmad=false".as_ptr(), arch.as_ptr()];
    // SAFETY: `program` is live; `options` holds 2 NUL-terminated strings.
    let compiled = unsafe { nvrtc.nvrtcCompileProgram()?(program, options.len() as i32, options.as_ptr()) };
    let mut ptx = Vec::new();
    let result = check_nvrtc(compiled, "nvrtcCompileProgram", program).and_then(|()| {
        let mut size = 0;
        // SAFETY: `program` is compiled; `size` is a valid out-pointer.
        check_nvrtc(
            unsafe { nvrtc.nvrtcGetPTXSize()?(program, &mut size) },
            "nvrtcGetPTXSize",
            program,
        )?;
        ptx = vec![0u8; size];
        // SAFETY: the buffer holds the `size` bytes (NUL included) of the PTX.
        check_nvrtc(
            unsafe { nvrtc.nvrtcGetPTX()?(program, ptx.as_mut_ptr().cast()) },
            "nvrtcGetPTX",
            program,
        )
    });
    // SAFETY: `program` is live and not used after this.
    unsafe { nvrtc.nvrtcDestroyProgram()?(&mut program) };
    result.map(|()| ptx)
}

fn saxpy() -> BoxResult<()> {
    let cuda = cuda_sys::driver()?;
    // SAFETY: cuInit takes only flags, and 0 is the one valid value.
    check(unsafe { cuda.cuInit()?(0) }, "cuInit")?;
    let mut device: CUdevice = 0;
    // SAFETY: `device` is a valid out-pointer; ordinal 0 is checked by the driver.
    check(unsafe { cuda.cuDeviceGet()?(&mut device, 0) }, "cuDeviceGet")?;
    let (mut major, mut minor) = (0, 0);
    // SAFETY: valid out-pointers and a device handle from cuDeviceGet.
    unsafe {
        check(
            cuda.cuDeviceGetAttribute()?(
                &mut major,
                CUdevice_attribute::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
                device,
            ),
            "cuDeviceGetAttribute",
        )?;
        check(
            cuda.cuDeviceGetAttribute()?(
                &mut minor,
                CUdevice_attribute::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
                device,
            ),
            "cuDeviceGetAttribute",
        )?;
    }
    let ptx = compile_ptx(major, minor)?;
    println!("compiled saxpy for compute_{major}{minor}: {} bytes of PTX", ptx.len());

    let mut context: CUcontext = ptr::null_mut();
    // SAFETY: `context` is a valid out-pointer; null creation parameters are allowed (cuCtxCreate_v4
    // is what `cuCtxCreate` names in CUDA 13). The new context becomes current on this thread.
    check(
        unsafe { cuda.cuCtxCreate_v4()?(&mut context, ptr::null_mut(), 0, device) },
        "cuCtxCreate",
    )?;
    let mut module: CUmodule = ptr::null_mut();
    // SAFETY: `ptx` is NUL-terminated PTX text; a context is current.
    check(
        unsafe { cuda.cuModuleLoadData()?(&mut module, ptx.as_ptr().cast()) },
        "cuModuleLoadData",
    )?;
    let mut kernel: CUfunction = ptr::null_mut();
    // SAFETY: `module` is loaded; the name is NUL-terminated.
    check(
        unsafe { cuda.cuModuleGetFunction()?(&mut kernel, module, c"saxpy".as_ptr()) },
        "cuModuleGetFunction",
    )?;

    let n = (THREADS * BLOCKS) as usize;
    let bytes = n * size_of::<f32>();
    let mut a = 2.0f32;
    // Deterministic inputs in [0, 1), standing in for NumPy's random ones.
    let mut seed = 0x2545_f491_u32;
    let mut next = || {
        seed = seed.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
        (seed >> 8) as f32 / (1u32 << 24) as f32
    };
    let host_x: Vec<f32> = (0..n).map(|_| next()).collect();
    let host_y: Vec<f32> = (0..n).map(|_| next()).collect();
    let mut host_out = vec![0.0f32; n];

    let (mut x, mut y, mut out): (CUdeviceptr, CUdeviceptr, CUdeviceptr) = (0, 0, 0);
    let mut stream: CUstream = ptr::null_mut();
    // SAFETY: valid out-pointers; the context is current. Each buffer holds `bytes`, and each
    // host vector holds `bytes` too and lives until after the stream is synchronised.
    unsafe {
        check(cuda.cuMemAlloc_v2()?(&mut x, bytes), "cuMemAlloc")?;
        check(cuda.cuMemAlloc_v2()?(&mut y, bytes), "cuMemAlloc")?;
        check(cuda.cuMemAlloc_v2()?(&mut out, bytes), "cuMemAlloc")?;
        check(cuda.cuStreamCreate()?(&mut stream, 0), "cuStreamCreate")?;
        check(
            cuda.cuMemcpyHtoDAsync_v2()?(x, host_x.as_ptr().cast(), bytes, stream),
            "cuMemcpyHtoDAsync",
        )?;
        check(
            cuda.cuMemcpyHtoDAsync_v2()?(y, host_y.as_ptr().cast(), bytes, stream),
            "cuMemcpyHtoDAsync",
        )?;
    }

    // One pointer per kernel parameter, each to a value of the parameter's type.
    let mut n_param = n;
    let mut params: [*mut c_void; 5] = [
        (&mut a as *mut f32).cast(),
        (&mut x as *mut CUdeviceptr).cast(),
        (&mut y as *mut CUdeviceptr).cast(),
        (&mut out as *mut CUdeviceptr).cast(),
        (&mut n_param as *mut usize).cast(),
    ];
    // SAFETY: `params` points at a float, three device pointers and a size_t, the kernel's
    // parameter list; BLOCKS * THREADS = n threads each touch element i < n of buffers of n floats.
    let launched = unsafe {
        cuda.cuLaunchKernel()?(
            kernel,
            BLOCKS,
            1,
            1,
            THREADS,
            1,
            1,
            0,
            stream,
            params.as_mut_ptr(),
            ptr::null_mut(),
        )
    };
    check(launched, "cuLaunchKernel")?;
    // SAFETY: `out` holds `bytes`, as does `host_out`, which outlives the synchronisation below.
    unsafe {
        check(
            cuda.cuMemcpyDtoHAsync_v2()?(host_out.as_mut_ptr().cast(), out, bytes, stream),
            "cuMemcpyDtoHAsync",
        )?;
        check(cuda.cuStreamSynchronize()?(stream), "cuStreamSynchronize")?;
    }

    // SAFETY: the stream is idle, so nothing uses the buffers, module or context any more; each
    // handle is released once and not used after.
    unsafe {
        check(cuda.cuStreamDestroy_v2()?(stream), "cuStreamDestroy")?;
        for buffer in [x, y, out] {
            check(cuda.cuMemFree_v2()?(buffer), "cuMemFree")?;
        }
        check(cuda.cuModuleUnload()?(module), "cuModuleUnload")?;
        check(cuda.cuCtxDestroy_v2()?(context), "cuCtxDestroy")?;
    }

    // With --fmad=false the device rounds a * x and then the sum, as the host does: exact equality.
    let wrong = (0..n).filter(|&i| host_out[i] != a * host_x[i] + host_y[i]).count();
    if wrong > 0 {
        return Err(format!("{wrong} of {n} results differ from the host's a * x + y").into());
    }
    println!(
        "out[0..3] = {:?}, expected {:?}",
        &host_out[..3],
        [0, 1, 2].map(|i| a * host_x[i] + host_y[i])
    );
    println!("raw_driver_saxpy: {BLOCKS} blocks x {THREADS} threads, all {n} results correct");
    Ok(())
}

fn main() -> ExitCode {
    examples::run("raw_driver_saxpy", saxpy)
}
