//! Driver functions of runtime kernels: the `cudaFunction_t` (a driver
//! `CUfunction`) of a library kernel in a device's primary context
//! (`cuKernelGetFunction`, which the runtime API has no counterpart of), and
//! of an entry point of linked nvcc code (`cudaGetFuncBySymbol`), for code
//! that mixes the runtime with the driver API.
//!
//! ```no_run
//! use cuda_runtime::{Device, Library};
//!
//! # fn main() -> cuda_runtime::Result<()> {
//! # let ptx = "";
//! let device = Device::get(0)?;
//! let kernel = Library::from_ptx(ptx)?.kernel("scale")?;
//! let function = kernel.function_on(device)?;
//! // SAFETY: only handed to the driver while `function` (which keeps the library loaded) lives.
//! let raw = unsafe { function.as_raw() };
//! # let _ = raw;
//! # Ok(())
//! # }
//! ```

use std::ffi::c_void;
use std::ptr;

use cuda_sys::runtime::cudaFunction_t;

use crate::device::make_current;
use crate::error::check;
use crate::{runtime, Device, Kernel, Result};

/// A kernel's function in one device's primary context (`cudaFunction_t`,
/// the same handle as the driver's `CUfunction`). Keeps the kernel's
/// library loaded, so the handle stays valid.
#[derive(Clone, Debug)]
pub struct KernelFunction {
    raw: cudaFunction_t,
    device: Device,
    _kernel: Kernel,
}

// SAFETY: a function handle may be used from any thread; the kernel it holds is Send and Sync.
unsafe impl Send for KernelFunction {}
// SAFETY: as above; shared access only reads the handle.
unsafe impl Sync for KernelFunction {}

impl Kernel {
    /// This kernel's function in `device`'s primary context (the driver's
    /// `cuKernelGetFunction` with `device` current: `cudaKernel_t` is the
    /// driver's `CUkernel`, and `cudaGetFuncBySymbol` takes only entry points
    /// of linked code; loads the kernel there if needed).
    pub fn function_on(&self, device: Device) -> Result<KernelFunction> {
        let runtime = runtime()?;
        make_current(runtime, device.raw_ordinal())?;
        // The runtime binds the device's primary context to the thread lazily; a call that
        // needs it (freeing null does nothing else) binds it, so the driver call sees it current.
        // SAFETY: freeing a null pointer is a no-op the runtime documents.
        check(runtime, unsafe { runtime.cudaFree()?(ptr::null_mut()) })?;
        let driver = cuda_sys::driver()?;
        let mut raw: cuda_sys::driver::CUfunction = ptr::null_mut();
        // SAFETY: valid out-pointer; the kernel handle is live (this kernel holds its library)
        // and is the driver's `CUkernel` (the runtime's `cudaKernel_t` is the same handle);
        // `device`'s primary context is current on this thread.
        let code = unsafe { driver.cuKernelGetFunction()?(&mut raw, self.raw().cast()) };
        if code != cuda_sys::driver::CUresult::CUDA_SUCCESS {
            return Err(crate::Error::Driver {
                call: "cuKernelGetFunction",
                code: code.0,
            });
        }
        Ok(KernelFunction {
            raw: raw.cast(),
            device,
            _kernel: self.clone(),
        })
    }
}

impl KernelFunction {
    /// The device whose primary context the function belongs to.
    pub fn device(&self) -> Device {
        self.device
    }

    /// The handle, a driver `CUfunction` after `.cast()`.
    ///
    /// # Safety
    /// Valid while this value (or a clone) lives; use it only with the
    /// device's primary context current.
    pub unsafe fn as_raw(&self) -> cudaFunction_t {
        self.raw
    }
}

/// The function of a host-side entry point registered with the runtime
/// (`cudaGetFuncBySymbol`): the stub address of a `__global__` function of
/// nvcc-compiled code linked into this program, in the current device's
/// primary context.
///
/// # Safety
/// `symbol` must be the address of such an entry function (or a live
/// `cudaKernel_t`); the returned handle is valid while that code stays
/// loaded.
pub unsafe fn function_by_symbol(symbol: *const c_void) -> Result<cudaFunction_t> {
    let runtime = runtime()?;
    let mut raw = ptr::null_mut();
    // SAFETY: valid out-pointer; `symbol` is an entry function by the caller's promise.
    check(runtime, unsafe { runtime.cudaGetFuncBySymbol()?(&mut raw, symbol) })?;
    Ok(raw)
}
