//! Driver calls the array layer makes directly: binding a context and checking results.

use std::ptr;

use cuda_driver::{Context, DriverError};
use cuda_sys::driver::CUresult;

/// Makes `context` current on this thread if it is not, and returns the driver.
pub(crate) fn bind(context: &Context) -> cuda_driver::Result<&'static cuda_sys::Driver> {
    let driver = cuda_sys::driver()?;
    let mut current = ptr::null_mut();
    // SAFETY: `current` is a valid out-pointer.
    check(unsafe { driver.cuCtxGetCurrent()?(&mut current) })?;
    // SAFETY: the handle is only compared; `context` keeps it alive.
    if current != unsafe { context.as_raw() } {
        context.set_current()?;
    }
    Ok(driver)
}

/// A driver result as a `cuda-driver` error.
pub(crate) fn check(result: CUresult) -> cuda_driver::Result<()> {
    if result == CUresult::CUDA_SUCCESS {
        Ok(())
    } else {
        Err(cuda_driver::Error::Driver(DriverError::new(result)))
    }
}
