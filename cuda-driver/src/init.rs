//! Loading the driver and calling `cuInit` once per process.

use std::sync::OnceLock;

use cuda_sys::driver::CUresult;

use crate::error::{check, Result};

/// The loaded and initialised driver. `cuInit` runs on the first call; its
/// outcome (and a loading failure) is cached and returned to every caller.
#[inline]
pub(crate) fn api() -> Result<&'static cuda_sys::Driver> {
    static INIT: OnceLock<Result<()>> = OnceLock::new();
    let driver = cuda_sys::driver()?;
    INIT.get_or_init(|| {
        // SAFETY: `cuInit` takes only a flags word, which must be 0.
        check(unsafe { driver.cuInit()?(0) })
    })
    .clone()?;
    Ok(driver)
}

/// Whether an initialisation error means "no CUDA device" rather than a broken driver.
pub(crate) fn is_no_device(error: &crate::Error) -> bool {
    error.code() == Some(CUresult::CUDA_ERROR_NO_DEVICE)
}
