//! Runtime and driver versions.

use crate::error::check;
use crate::{runtime, Result};

/// A CUDA version as `major.minor`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Version {
    /// Major version, e.g. 13.
    pub major: u32,
    /// Minor version, e.g. 0.
    pub minor: u32,
}

impl Version {
    fn from_raw(raw: i32) -> Version {
        let raw = u32::try_from(raw).unwrap_or(0);
        Version {
            major: raw / 1000,
            minor: raw % 1000 / 10,
        }
    }
}

impl std::fmt::Display for Version {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)
    }
}

/// The loaded libcudart's version (`cudaRuntimeGetVersion`); needs no driver.
pub fn runtime_version() -> Result<Version> {
    let runtime = runtime()?;
    let mut raw = 0;
    // SAFETY: `raw` is a valid out-pointer.
    check(runtime, unsafe { runtime.cudaRuntimeGetVersion()?(&mut raw) })?;
    Ok(Version::from_raw(raw))
}

/// The newest CUDA version the installed driver supports
/// (`cudaDriverGetVersion`); `0.0` when there is no driver.
pub fn driver_version() -> Result<Version> {
    let runtime = runtime()?;
    let mut raw = 0;
    // SAFETY: `raw` is a valid out-pointer.
    check(runtime, unsafe { runtime.cudaDriverGetVersion()?(&mut raw) })?;
    Ok(Version::from_raw(raw))
}
