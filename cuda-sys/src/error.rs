//! The two ways loading can fail: a library that cannot be opened (or was found only in a
//! build that does not suit the driver or the libraries already loaded), and a function the
//! opened library does not export.

use std::fmt;
use std::path::PathBuf;

use crate::LibraryKind;

/// A library could not be loaded. Lists every candidate that was tried and
/// why each failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoadError {
    /// The library that was looked for, e.g. `"the CUDA driver (libcuda)"`.
    pub library: &'static str,
    /// Which library it was.
    pub kind: LibraryKind,
    /// Each candidate tried, in order, with the loader's reason for refusing it.
    pub tried: Vec<(PathBuf, String)>,
    /// The first candidate that opened but was refused, and why; `None` where nothing opened.
    pub unusable: Option<Unusable>,
}

/// Why a library that opened was not used.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unusable {
    /// The driver supports a CUDA older than 12.0, which this crate does not support.
    DriverTooOld {
        /// The driver's `cuDriverGetVersion` (`major * 1000 + minor * 10`).
        driver: i32,
    },
    /// A library of a newer CUDA than the driver supports (NVRTC 13 on a 12.x driver: its
    /// output does not load there).
    NewerThanDriver {
        /// The library's version (`major * 1000 + minor * 10`).
        library: i32,
        /// The driver's version.
        driver: i32,
    },
    /// A library of another CUDA generation than its partner already loaded (NVRTC 13 with
    /// nvJitLink 12: the linker cannot read the compiler's output).
    MixedGenerations {
        /// The library's version.
        library: i32,
        /// The partner already loaded.
        other: LibraryKind,
        /// The partner's version.
        other_version: i32,
    },
}

/// `13000` as `13.0`.
pub(crate) struct Version(pub i32);

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.0 / 1000, self.0 % 1000 / 10)
    }
}

impl Unusable {
    /// One sentence naming what was found against what it has to suit.
    pub(crate) fn describe(&self, kind: LibraryKind) -> String {
        let name = kind.library().short_name;
        match *self {
            Unusable::DriverTooOld { driver } => format!(
                "the driver supports CUDA {}, and this program needs a driver for CUDA 12.0 or newer \
                 (R525 or newer; R580 or newer for CUDA 13)",
                Version(driver)
            ),
            Unusable::NewerThanDriver { library, driver } => format!(
                "{name} {} was found, but the driver supports CUDA {} only, too old for a CUDA {} library \
                 (it cannot load the code such a library makes or needs): install {name} of CUDA {} \
                 (`pip install \"{}\"`) or a newer driver",
                Version(library),
                Version(driver),
                library / 1000,
                driver / 1000,
                kind.pip_requirement(driver / 1000),
            ),
            Unusable::MixedGenerations {
                library,
                other,
                other_version,
            } => format!(
                "{name} {} was found, but {} {} is loaded already and the two must be of one CUDA generation: \
                 install {name} of CUDA {} (`pip install \"{}\"`) or set {} to it",
                Version(library),
                other.library().short_name,
                Version(other_version),
                other_version / 1000,
                kind.pip_requirement(other_version / 1000),
                kind.env_var(),
            ),
        }
    }
}

impl fmt::Display for LoadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.unusable {
            Some(unusable) => write!(
                f,
                "could not load {}: {}. Tried:",
                self.library,
                unusable.describe(self.kind)
            )?,
            None => write!(f, "could not load {}: {}. Tried:", self.library, self.kind.remedy())?,
        }
        for (path, reason) in &self.tried {
            // A bare name is handed to the platform loader, which searches its own path.
            let searched = if path.components().count() == 1 {
                " (the system loader's search path)"
            } else {
                ""
            };
            write!(f, "\n  {}{searched}: {reason}", path.display())?;
        }
        Ok(())
    }
}

impl std::error::Error for LoadError {}

/// A function the loaded library does not export (for example a driver older
/// than the headers). Only returned when that function is asked for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SymbolError {
    /// The exported name that was looked up, e.g. `"cuMemAlloc_v2"`.
    pub symbol: &'static str,
    /// The file the library was loaded from.
    pub library: PathBuf,
    /// The library's own version number where it reports one (the driver's
    /// `cuDriverGetVersion`, NVRTC's `nvrtcVersion` as `major * 1000 + minor * 10`).
    pub library_version: Option<i32>,
    /// The version the declared ABI of this function first shipped in, where that is newer
    /// than the loaded library (`cuCtxCreate_v4` needs a 12.5 driver; cudart's `cudaMemAdvise`
    /// taking a location needs cudart 13.0): the library is too old, rather than the function
    /// absent from every version.
    pub needs_version: Option<i32>,
}

impl fmt::Display for SymbolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let (Some(needs), Some(has)) = (self.needs_version, self.library_version) {
            return write!(
                f,
                "`{}` needs CUDA {} or newer, and {} is of CUDA {}",
                self.symbol,
                Version(needs),
                self.library.display(),
                Version(has)
            );
        }
        write!(f, "`{}` is not exported by {}", self.symbol, self.library.display())?;
        match self.library_version {
            Some(v) => write!(f, " (version {})", Version(v)),
            None => Ok(()),
        }
    }
}

impl std::error::Error for SymbolError {}
