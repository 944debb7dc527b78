//! The driver and NVRTC through cuda-sys alone: the context, stream and
//! compiled kernels the raw benchmarks use, and the NVRTC compile every
//! Rust benchmark shares (so all of them load the same CUBIN).

use std::ffi::{c_char, c_int, c_uint, c_void, CStr, CString};
use std::ptr;

use cuda_sys::driver::{
    CUcontext, CUdevice, CUdevice_attribute, CUdeviceptr, CUfunction, CUmodule, CUresult, CUstream, CUstream_flags,
};
use cuda_sys::nvrtc::{nvrtcProgram, nvrtcResult};

/// Turns a driver result into `Err("what: NAME (code)")`.
pub fn check(cuda: &cuda_sys::Driver, result: CUresult, what: &str) -> Result<(), String> {
    if result == CUresult::CUDA_SUCCESS {
        return Ok(());
    }
    let mut name: *const c_char = ptr::null();
    let name = match cuda.cuGetErrorName() {
        // SAFETY: `name` is a valid out-pointer; the driver stores a pointer to a static string or leaves it null.
        Ok(get) if unsafe { get(result, &mut name) } == CUresult::CUDA_SUCCESS && !name.is_null() => {
            // SAFETY: the driver returned a NUL-terminated static string.
            unsafe { CStr::from_ptr(name) }.to_string_lossy().into_owned()
        }
        _ => "unknown error".to_string(),
    };
    Err(format!("{what}: {name} ({})", result.0))
}

/// `cuLaunchKernel`'s signature.
type LaunchKernel = unsafe extern "C" fn(
    CUfunction,
    c_uint,
    c_uint,
    c_uint,
    c_uint,
    c_uint,
    c_uint,
    c_uint,
    CUstream,
    *mut *mut c_void,
    *mut *mut c_void,
) -> CUresult;

/// One kernel launch through cuda-sys with the `cuLaunchKernel` pointer fetched once: the raw path
/// every paired launch row is compared with (what a C++ caller of the driver does).
pub struct RawLaunch {
    cuda: &'static cuda_sys::Driver,
    launch: LaunchKernel,
    function: CUfunction,
    stream: CUstream,
    grid: u32,
    block: u32,
}

impl RawLaunch {
    /// A launch of `function` on `stream` with a 1-D grid and block, no shared memory.
    ///
    /// # Safety
    /// `function` and `stream` must stay live, and in the current context, while the value is used.
    pub unsafe fn new(function: CUfunction, stream: CUstream, grid: u32, block: u32) -> Result<RawLaunch, String> {
        let cuda = cuda_sys::driver().map_err(|e| e.to_string())?;
        let launch = cuda.cuLaunchKernel().map_err(|e| e.to_string())?;
        Ok(RawLaunch {
            cuda,
            launch,
            function,
            stream,
            grid,
            block,
        })
    }

    /// Enqueues one launch with `params` (null for a kernel without parameters).
    ///
    /// # Safety
    /// `params` must be null for a kernel without parameters, else point at one pointer per kernel
    /// parameter, each at a live value of that parameter's type; the kernel's memory accesses must be valid.
    pub unsafe fn launch(&self, params: *mut *mut c_void) -> Result<(), String> {
        // SAFETY: function and stream are live (the contract of `new`); params as the caller promises.
        let result = unsafe {
            (self.launch)(
                self.function,
                self.grid,
                1,
                1,
                self.block,
                1,
                1,
                0,
                self.stream,
                params,
                ptr::null_mut(),
            )
        };
        check(self.cuda, result, "cuLaunchKernel")
    }
}

/// The parameters of `axpy(float a, const float* x, float* y, unsigned long long n)` for a raw
/// launch: `a = 2` and [`AXPY_N`](crate::AXPY_N) elements of `x` and `y`.
pub struct AxpyParams {
    a: f32,
    x: CUdeviceptr,
    y: CUdeviceptr,
    len: u64,
}

impl AxpyParams {
    /// The parameters for device buffers `x` and `y` of `AXPY_N` floats each.
    pub fn new(x: CUdeviceptr, y: CUdeviceptr) -> AxpyParams {
        AxpyParams {
            a: 2.0,
            x,
            y,
            len: crate::AXPY_N,
        }
    }

    /// One pointer per parameter, as `cuLaunchKernel` takes them; valid while `self` is neither
    /// moved nor dropped.
    pub fn pointers(&mut self) -> [*mut c_void; 4] {
        [
            (&raw mut self.a).cast(),
            (&raw mut self.x).cast(),
            (&raw mut self.y).cast(),
            (&raw mut self.len).cast(),
        ]
    }
}

/// The primary context of device 0, current on this thread, and one non-blocking stream.
pub struct Gpu {
    /// The driver's function table.
    pub cuda: &'static cuda_sys::Driver,
    /// Device 0.
    pub device: CUdevice,
    /// Its primary context.
    pub context: CUcontext,
    /// The non-blocking stream.
    pub stream: CUstream,
    /// Compute capability (major, minor).
    pub compute_capability: (i32, i32),
}

impl Gpu {
    /// Loads the driver, initialises it and sets up device 0; `Err` says why not (no driver, no device).
    pub fn open() -> Result<Gpu, String> {
        let cuda = cuda_sys::driver().map_err(|e| {
            let first = e
                .to_string()
                .lines()
                .next()
                .unwrap_or_default()
                .trim_end_matches(';')
                .to_string();
            format!("no CUDA driver ({first})")
        })?;
        let sym = |e: cuda_sys::SymbolError| e.to_string();
        // SAFETY: cuInit takes flags 0 and no pointers.
        check(cuda, unsafe { cuda.cuInit().map_err(sym)?(0) }, "cuInit")?;
        let mut device: CUdevice = 0;
        // SAFETY: `device` is a valid out-pointer; ordinal 0 exists when cuInit succeeded (checked by the result).
        check(
            cuda,
            unsafe { cuda.cuDeviceGet().map_err(sym)?(&mut device, 0) },
            "cuDeviceGet",
        )?;
        let attribute = |attribute: CUdevice_attribute| -> Result<i32, String> {
            let mut value: c_int = 0;
            // SAFETY: `value` is a valid out-pointer and `device` a device the driver handed out.
            let result = unsafe { cuda.cuDeviceGetAttribute().map_err(sym)?(&mut value, attribute, device) };
            check(cuda, result, "cuDeviceGetAttribute").map(|()| value)
        };
        let compute_capability = (
            attribute(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)?,
            attribute(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)?,
        );
        let mut context: CUcontext = ptr::null_mut();
        // SAFETY: `context` is a valid out-pointer; the retain is balanced by the release in Drop.
        let retained = unsafe { cuda.cuDevicePrimaryCtxRetain().map_err(sym)?(&mut context, device) };
        check(cuda, retained, "cuDevicePrimaryCtxRetain")?;
        let mut gpu = Gpu {
            cuda,
            device,
            context,
            stream: ptr::null_mut(),
            compute_capability,
        };
        // SAFETY: `context` was just retained and is live.
        check(
            cuda,
            unsafe { cuda.cuCtxSetCurrent().map_err(sym)?(context) },
            "cuCtxSetCurrent",
        )?;
        let flags = CUstream_flags::CU_STREAM_NON_BLOCKING.0 as c_uint;
        // SAFETY: `gpu.stream` is a valid out-pointer; the context is current.
        let created = unsafe { cuda.cuStreamCreate().map_err(sym)?(&mut gpu.stream, flags) };
        check(cuda, created, "cuStreamCreate")?;
        Ok(gpu)
    }

    /// `NAME (sm_XY), driver CUDA X.Y`.
    pub fn describe(&self) -> String {
        let mut name = [0 as c_char; 256];
        let mut version = 0;
        // SAFETY: `name` holds 256 bytes, the length passed; `version` is a valid out-pointer.
        unsafe {
            if let Ok(get) = self.cuda.cuDeviceGetName() {
                get(name.as_mut_ptr(), name.len() as c_int, self.device);
            }
            if let Ok(get) = self.cuda.cuDriverGetVersion() {
                get(&mut version);
            }
        }
        name[name.len() - 1] = 0;
        // SAFETY: the buffer is NUL-terminated (zero-initialised, last byte forced to 0).
        let name = unsafe { CStr::from_ptr(name.as_ptr()) }.to_string_lossy().into_owned();
        let (major, minor) = self.compute_capability;
        format!(
            "{name} (sm_{major}{minor}), driver CUDA {}.{}",
            version / 1000,
            version % 1000 / 10
        )
    }

    /// `sm_XY` for NVRTC.
    pub fn arch(&self) -> String {
        format!("sm_{}{}", self.compute_capability.0, self.compute_capability.1)
    }

    /// Waits for the stream.
    pub fn sync(&self) -> Result<(), String> {
        let sync = self.cuda.cuStreamSynchronize().map_err(|e| e.to_string())?;
        // SAFETY: the stream is live until Drop.
        check(self.cuda, unsafe { sync(self.stream) }, "cuStreamSynchronize")
    }

    /// Loads a CUBIN into the current context and returns the named kernels. The module stays
    /// loaded for the life of the process (the benchmarks use its kernels until they exit).
    pub fn load_functions(&self, image: &[u8], names: &[&CStr]) -> Result<Vec<CUfunction>, String> {
        let mut module: CUmodule = ptr::null_mut();
        let load = self.cuda.cuModuleLoadData().map_err(|e| e.to_string())?;
        // SAFETY: `image` is a complete CUBIN from NVRTC that outlives the call; `module` is a valid out-pointer.
        check(
            self.cuda,
            unsafe { load(&mut module, image.as_ptr().cast()) },
            "cuModuleLoadData",
        )?;
        let get = self.cuda.cuModuleGetFunction().map_err(|e| e.to_string())?;
        names
            .iter()
            .map(|name| {
                let mut function: CUfunction = ptr::null_mut();
                // SAFETY: `module` was loaded above and is never unloaded; `name` is NUL-terminated.
                let result = unsafe { get(&mut function, module, name.as_ptr()) };
                check(self.cuda, result, "cuModuleGetFunction").map(|()| function)
            })
            .collect()
    }

    /// `cuMemAlloc` of `bytes`.
    pub fn alloc(&self, bytes: usize) -> Result<CUdeviceptr, String> {
        let mut pointer: CUdeviceptr = 0;
        let alloc = self.cuda.cuMemAlloc_v2().map_err(|e| e.to_string())?;
        // SAFETY: `pointer` is a valid out-pointer; the context is current.
        check(self.cuda, unsafe { alloc(&mut pointer, bytes) }, "cuMemAlloc")?;
        Ok(pointer)
    }

    /// `cuMemFree` of a pointer from [`Gpu::alloc`], after the stream is done with it.
    pub fn free(&self, pointer: CUdeviceptr) -> Result<(), String> {
        self.sync()?;
        let free = self.cuda.cuMemFree_v2().map_err(|e| e.to_string())?;
        // SAFETY: `pointer` came from cuMemAlloc, is freed once, and no queued work uses it (synchronised above).
        check(self.cuda, unsafe { free(pointer) }, "cuMemFree")
    }
}

impl Drop for Gpu {
    fn drop(&mut self) {
        // SAFETY: the stream and the primary-context retain were created in `open` and are released once here;
        // errors are ignored (nothing to do about them at the end of a benchmark).
        unsafe {
            if !self.stream.is_null() {
                if let Ok(destroy) = self.cuda.cuStreamDestroy_v2() {
                    destroy(self.stream);
                }
            }
            if let Ok(release) = self.cuda.cuDevicePrimaryCtxRelease_v2() {
                release(self.device);
            }
        }
    }
}

/// Compiles `source` with NVRTC for `arch` (`sm_90`) and returns the CUBIN; the error carries the log.
pub fn compile_cubin(source: &str, arch: &str) -> Result<Vec<u8>, String> {
    let nvrtc = cuda_sys::nvrtc().map_err(|e| format!("NVRTC did not load ({e})"))?;
    let sym = |e: cuda_sys::SymbolError| e.to_string();
    let ok = |result: nvrtcResult, what: &str| {
        if result == nvrtcResult::NVRTC_SUCCESS {
            Ok(())
        } else {
            Err(format!("{what}: nvrtcResult {}", result.0))
        }
    };
    let source = CString::new(source).map_err(|_| "the source holds a NUL byte".to_string())?;
    let option = CString::new(format!("--gpu-architecture={arch}")).expect("no NUL in an arch name");
    let options = [option.as_ptr()];
    let mut program: nvrtcProgram = ptr::null_mut();
    // SAFETY: `program` is a valid out-pointer; source and name are NUL-terminated; no headers are passed.
    let created = unsafe {
        nvrtc.nvrtcCreateProgram().map_err(sym)?(
            &mut program,
            source.as_ptr(),
            c"bench.cu".as_ptr(),
            0,
            ptr::null(),
            ptr::null(),
        )
    };
    ok(created, "nvrtcCreateProgram")?;
    let result = (|| -> Result<_, String> {
        // SAFETY: `program` is live; `options` holds one NUL-terminated string that outlives the call.
        let compiled = unsafe { nvrtc.nvrtcCompileProgram().map_err(sym)?(program, 1, options.as_ptr()) };
        if compiled != nvrtcResult::NVRTC_SUCCESS {
            let mut size = 0;
            // SAFETY: `program` is live and `size` a valid out-pointer.
            unsafe { nvrtc.nvrtcGetProgramLogSize().map_err(sym)?(program, &mut size) };
            let mut log = vec![0 as c_char; size.max(1)];
            // SAFETY: `log` has the size NVRTC reported.
            unsafe { nvrtc.nvrtcGetProgramLog().map_err(sym)?(program, log.as_mut_ptr()) };
            *log.last_mut().expect("at least one byte") = 0;
            // SAFETY: NUL-terminated (last byte forced to 0).
            let log = unsafe { CStr::from_ptr(log.as_ptr()) }.to_string_lossy().into_owned();
            return Err(format!("NVRTC compile failed ({}): {log}", compiled.0));
        }
        let mut size = 0;
        // SAFETY: `program` is live and compiled; `size` is a valid out-pointer.
        ok(
            unsafe { nvrtc.nvrtcGetCUBINSize().map_err(sym)?(program, &mut size) },
            "nvrtcGetCUBINSize",
        )?;
        let mut cubin = vec![0u8; size];
        // SAFETY: `cubin` has the size NVRTC reported.
        ok(
            unsafe { nvrtc.nvrtcGetCUBIN().map_err(sym)?(program, cubin.as_mut_ptr().cast()) },
            "nvrtcGetCUBIN",
        )?;
        Ok(cubin)
    })();
    // SAFETY: `program` is live and destroyed once.
    unsafe { nvrtc.nvrtcDestroyProgram().map_err(sym)?(&mut program) };
    result
}
