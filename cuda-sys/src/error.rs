//! The two ways loading can fail: a library that cannot be opened, and a
//! function the opened library does not export.

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
}

impl fmt::Display for LoadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "could not load {}: {}. Tried:", self.library, self.kind.remedy())?;
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
}

impl fmt::Display for SymbolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "`{}` is not exported by {}", self.symbol, self.library.display())?;
        match self.library_version {
            Some(v) => write!(f, " (version {}.{})", v / 1000, (v % 1000) / 10),
            None => Ok(()),
        }
    }
}

impl std::error::Error for SymbolError {}
