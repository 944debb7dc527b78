//! The current device, as far as compiling needs it: its architecture.

use std::ffi::c_int;
use std::ptr;

use cuda_sys::driver::{CUcontext, CUdevice, CUdevice_attribute, CUresult};

use crate::options::Arch;

/// The architecture of the current context's device, else of device 0; `Err` says why there is none.
pub(crate) fn current_arch() -> Result<Arch, String> {
    let driver = cuda_sys::driver().map_err(|e| format!("no CUDA driver could be loaded ({e})"))?;
    let call = |name: &str, code: CUresult| {
        if code == CUresult::CUDA_SUCCESS {
            Ok(())
        } else {
            Err(format!("{name} failed with CUresult {}", code.0))
        }
    };
    let symbol = |e: cuda_sys::SymbolError| e.to_string();
    // SAFETY: cuInit takes flags 0 and may be called any number of times.
    call("cuInit", unsafe { driver.cuInit().map_err(symbol)?(0) })?;
    let mut context: CUcontext = ptr::null_mut();
    // SAFETY: `context` is a valid out-pointer.
    call("cuCtxGetCurrent", unsafe {
        driver.cuCtxGetCurrent().map_err(symbol)?(&mut context)
    })?;
    let mut device: CUdevice = 0;
    if context.is_null() {
        let mut count: c_int = 0;
        // SAFETY: `count` is a valid out-pointer.
        call("cuDeviceGetCount", unsafe {
            driver.cuDeviceGetCount().map_err(symbol)?(&mut count)
        })?;
        if count == 0 {
            return Err("the CUDA driver reports no device".into());
        }
        // SAFETY: ordinal 0 exists (count > 0); `device` is a valid out-pointer.
        call("cuDeviceGet", unsafe {
            driver.cuDeviceGet().map_err(symbol)?(&mut device, 0)
        })?;
    } else {
        // SAFETY: a context is current on this thread; `device` is a valid out-pointer.
        call("cuCtxGetDevice", unsafe {
            driver.cuCtxGetDevice().map_err(symbol)?(&mut device)
        })?;
    }
    let attribute = |which: CUdevice_attribute| -> Result<u32, String> {
        let mut value: c_int = 0;
        // SAFETY: `device` is a valid device handle; `value` is a valid out-pointer.
        call("cuDeviceGetAttribute", unsafe {
            driver.cuDeviceGetAttribute().map_err(symbol)?(&mut value, which, device)
        })?;
        u32::try_from(value).map_err(|_| format!("the device reports compute capability part {value}"))
    };
    let major = attribute(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)?;
    let minor = attribute(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)?;
    Ok(Arch::from_compute_capability(major, minor))
}
