//! The crate's one error type.

use std::fmt;
use std::path::PathBuf;

use cuda_sys::driver::CUresult;
use cuda_sys::nvjitlink::nvJitLinkResult;
use cuda_sys::nvrtc::nvrtcResult;

use crate::arch::{Arch, ParseArchError};
use crate::code_kind::CodeKind;

/// Result alias for this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong in `cuda-core`.
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// A CUDA driver call failed, or `cuda-driver` refused bad input (loading code, launching,
    /// streams, memory); [`Error::driver_code`] gives the `CUresult`.
    Driver(cuda_driver::Error),
    /// An error of an NVIDIA library call (cuBLAS, cuFFT, ...) made for an array routine.
    #[cfg(any(feature = "blas", feature = "fft"))]
    Library(cuda_libs::Error),
    /// Code built for an architecture the device cannot run.
    WrongArch {
        /// The kind of code.
        kind: CodeKind,
        /// What it was built for.
        code_arch: Arch,
        /// The device's architecture.
        device_arch: Arch,
        /// The device's ordinal.
        device: u32,
    },
    /// The NVRTC loaded can make no code this device runs with this driver (a device older
    /// than NVRTC's oldest architecture, or newer than it knows with a driver older than it);
    /// `reason` says what to install.
    NoCodeForDevice {
        /// The device's architecture.
        device_arch: Arch,
        /// NVRTC's version (`major * 1000 + minor * 10`).
        nvrtc_version: i32,
        /// The driver's version, where there is a driver.
        driver_version: Option<i32>,
        /// Why, and what to install.
        reason: String,
    },
    /// NVRTC could not be loaded.
    NvrtcUnavailable(cuda_sys::LoadError),
    /// nvJitLink could not be loaded, and the inputs need it (LTO-IR, or no driver to fall back to).
    NvJitLinkUnavailable {
        /// Why loading failed: every path tried.
        source: cuda_sys::LoadError,
        /// Whether some input was LTO-IR, which only nvJitLink can link.
        lto_inputs: bool,
    },
    /// A library lacks a function this crate needs.
    Symbol(cuda_sys::SymbolError),
    /// An NVRTC call failed. For a failed compilation `log` holds the whole program log.
    Nvrtc {
        /// The NVRTC function that failed.
        call: &'static str,
        /// The result code, for matching.
        code: nvrtcResult,
        /// The code's name, e.g. `NVRTC_ERROR_COMPILATION`.
        name: &'static str,
        /// NVRTC's description of the code (`nvrtcGetErrorString`).
        description: String,
        /// The whole program log (compiler errors and warnings); empty when the call produced none.
        log: String,
    },
    /// An nvJitLink call failed; `error_log` and `info_log` are the linker's whole logs.
    NvJitLink {
        /// The nvJitLink function that failed.
        call: &'static str,
        /// The result code, for matching.
        code: nvJitLinkResult,
        /// The code's name, e.g. `NVJITLINK_ERROR_PTX_COMPILE`.
        name: &'static str,
        /// The linker's error log.
        error_log: String,
        /// The linker's info log.
        info_log: String,
    },
    /// The driver's linker (`cuLink*`, used when nvJitLink is missing) failed.
    DriverLink {
        /// The driver function that failed.
        call: &'static str,
        /// The driver's error.
        error: cuda_driver::DriverError,
        /// The JIT linker's error log.
        error_log: String,
        /// The JIT linker's info log.
        info_log: String,
    },
    /// The kernel cache's folder could not be used.
    Cache {
        /// The file or folder concerned.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// A file of code could not be read.
    Io {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// Bad input caught on the host, before any library call.
    InvalidValue(String),
    /// An index outside its axis (NumPy's `IndexError`): from the host's checks, or counted on
    /// the device by a gather or scatter in [`IndexMode::Raise`](crate::IndexMode::Raise).
    IndexOutOfBounds {
        /// What was indexed, and how many indices were out of range.
        what: String,
        /// One offending index, where known.
        index: Option<i64>,
        /// The extent (or flattened size) indexed.
        extent: usize,
    },
    /// An axis outside `-ndim..ndim` (NumPy's `AxisError`), from an array routine.
    #[cfg(feature = "array")]
    Axis {
        /// The axis as given, negative or not (see [`Axis`](crate::Axis) for values beyond `i64`).
        axis: i64,
        /// The number of dimensions it was taken against.
        ndim: usize,
    },
    /// Valid input to a routine this crate does not implement for it yet (a norm that needs a
    /// solver, say): the message says what is missing.
    NotSupported(String),
    /// A call that waits on the host for the device (a read-back, a count of selected
    /// elements, a copy from host memory) made on a stream that is capturing a graph: the wait
    /// would invalidate the capture, so nothing was queued. Run it before or after the capture.
    HostWaitInCapture {
        /// The call, as the user made it (`to_vec`, `nonzero`, ...).
        call: &'static str,
    },
    /// A DLPack tensor that cannot be imported or exported: CPU or another GPU's memory, an
    /// element type or layout arrays do not have, a consumed capsule, ...
    #[cfg(feature = "array")]
    DLPack(crate::array::DLPackError),
    /// A `.npy` file that cannot be read as the array asked for, or an array without a NumPy
    /// dtype to save it as.
    #[cfg(feature = "array")]
    Npy(crate::array::NpyError),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Driver(e) => e.fmt(f),
            #[cfg(any(feature = "blas", feature = "fft"))]
            Error::Library(e) => e.fmt(f),
            Error::NoCodeForDevice {
                device_arch,
                nvrtc_version,
                driver_version,
                reason,
            } => {
                let version = |v: i32| format!("{}.{}", v / 1000, v % 1000 / 10);
                write!(
                    f,
                    "NVRTC {} cannot make code for a {device_arch} device",
                    version(*nvrtc_version)
                )?;
                if let Some(driver) = driver_version {
                    write!(f, " on a driver for CUDA {}", version(*driver))?;
                }
                write!(f, ": {reason}")
            }
            Error::WrongArch {
                kind,
                code_arch,
                device_arch,
                device,
            } => write!(
                f,
                "{kind} built for {code_arch} cannot run on device {device}, which is {device_arch}"
            ),
            Error::NvrtcUnavailable(e) => write!(f, "NVRTC is not available: {e}"),
            Error::NvJitLinkUnavailable { source, lto_inputs } => {
                let need = if *lto_inputs { " and LTO-IR inputs need it" } else { "" };
                write!(f, "nvJitLink is not available{need}: {source}")
            }
            Error::Symbol(e) => e.fmt(f),
            Error::Nvrtc {
                call,
                name,
                description,
                log,
                ..
            } => {
                write!(f, "{call} failed with {name}: {description}")?;
                if !log.is_empty() {
                    write!(f, "\n{log}")?;
                }
                Ok(())
            }
            Error::NvJitLink {
                call,
                code,
                name,
                error_log,
                ..
            } => write!(f, "{call} failed with {name} ({})\n{error_log}", code.0),
            Error::DriverLink {
                call, error, error_log, ..
            } => write!(f, "{call} failed with {error}\n{error_log}"),
            Error::Cache { path, source } => write!(f, "kernel cache at {}: {source}", path.display()),
            Error::Io { path, source } => write!(f, "reading {}: {source}", path.display()),
            Error::InvalidValue(message) => write!(f, "invalid value: {message}"),
            Error::IndexOutOfBounds { what, index, extent } => {
                let index = index.map_or("(any)".to_string(), |i| i.to_string());
                write!(f, "{what}: index {index} is out of bounds for an axis of size {extent}")
            }
            #[cfg(feature = "array")]
            Error::Axis { axis, ndim } => write!(f, "axis {axis} is out of bounds for array of dimension {ndim}"),
            Error::NotSupported(message) => write!(f, "not supported yet: {message}"),
            Error::HostWaitInCapture { call } => write!(
                f,
                "{call} waits on the host for the device, which a stream capture forbids (the capture would be \
                 invalidated): run it before or after the capture"
            ),
            #[cfg(feature = "array")]
            Error::DLPack(e) => e.fmt(f),
            #[cfg(feature = "array")]
            Error::Npy(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Driver(e) => e.source(),
            #[cfg(any(feature = "blas", feature = "fft"))]
            Error::Library(e) => e.source(),
            Error::NvrtcUnavailable(e) => Some(e),
            Error::NvJitLinkUnavailable { source, .. } => Some(source),
            Error::Symbol(e) => e.source(),
            Error::Cache { source, .. } | Error::Io { source, .. } => Some(source),
            #[cfg(feature = "array")]
            Error::DLPack(e) => e.source(),
            #[cfg(feature = "array")]
            Error::Npy(e) => e.source(),
            _ => None,
        }
    }
}

impl From<cuda_driver::Error> for Error {
    fn from(error: cuda_driver::Error) -> Self {
        Error::Driver(error)
    }
}

#[cfg(any(feature = "blas", feature = "fft"))]
impl From<cuda_libs::Error> for Error {
    fn from(error: cuda_libs::Error) -> Self {
        Error::Library(error)
    }
}

impl From<cuda_sys::SymbolError> for Error {
    fn from(error: cuda_sys::SymbolError) -> Self {
        Error::Symbol(error)
    }
}

#[cfg(feature = "array")]
impl From<crate::array::DLPackError> for Error {
    fn from(error: crate::array::DLPackError) -> Self {
        Error::DLPack(error)
    }
}

#[cfg(feature = "array")]
impl From<crate::array::NpyError> for Error {
    fn from(error: crate::array::NpyError) -> Self {
        Error::Npy(error)
    }
}

impl Error {
    /// The driver's code, for driver errors that carry one.
    pub fn driver_code(&self) -> Option<CUresult> {
        match self {
            Error::Driver(error) => error.code(),
            Error::DriverLink { error, .. } => Some(error.code),
            _ => None,
        }
    }

    /// The NVRTC code, when NVRTC failed.
    pub fn nvrtc_code(&self) -> Option<nvrtcResult> {
        match self {
            Error::Nvrtc { code, .. } => Some(*code),
            _ => None,
        }
    }

    /// The nvJitLink code, when nvJitLink failed.
    pub fn nvjitlink_code(&self) -> Option<nvJitLinkResult> {
        match self {
            Error::NvJitLink { code, .. } => Some(*code),
            _ => None,
        }
    }

    /// The compiler's or linker's log carried by this error, if any.
    pub fn log(&self) -> Option<&str> {
        match self {
            Error::Nvrtc { log, .. } if !log.is_empty() => Some(log),
            Error::NvJitLink { error_log, .. } | Error::DriverLink { error_log, .. } if !error_log.is_empty() => {
                Some(error_log)
            }
            _ => None,
        }
    }
}

impl From<ParseArchError> for Error {
    /// An architecture name or number that is none is invalid input.
    fn from(error: ParseArchError) -> Self {
        Error::InvalidValue(error.to_string())
    }
}

/// The name of an NVRTC result code.
pub(crate) fn nvrtc_code_name(code: nvrtcResult) -> &'static str {
    match code {
        nvrtcResult::NVRTC_SUCCESS => "NVRTC_SUCCESS",
        nvrtcResult::NVRTC_ERROR_OUT_OF_MEMORY => "NVRTC_ERROR_OUT_OF_MEMORY",
        nvrtcResult::NVRTC_ERROR_PROGRAM_CREATION_FAILURE => "NVRTC_ERROR_PROGRAM_CREATION_FAILURE",
        nvrtcResult::NVRTC_ERROR_INVALID_INPUT => "NVRTC_ERROR_INVALID_INPUT",
        nvrtcResult::NVRTC_ERROR_INVALID_PROGRAM => "NVRTC_ERROR_INVALID_PROGRAM",
        nvrtcResult::NVRTC_ERROR_INVALID_OPTION => "NVRTC_ERROR_INVALID_OPTION",
        nvrtcResult::NVRTC_ERROR_COMPILATION => "NVRTC_ERROR_COMPILATION",
        nvrtcResult::NVRTC_ERROR_BUILTIN_OPERATION_FAILURE => "NVRTC_ERROR_BUILTIN_OPERATION_FAILURE",
        nvrtcResult::NVRTC_ERROR_NO_NAME_EXPRESSIONS_AFTER_COMPILATION => {
            "NVRTC_ERROR_NO_NAME_EXPRESSIONS_AFTER_COMPILATION"
        }
        nvrtcResult::NVRTC_ERROR_NO_LOWERED_NAMES_BEFORE_COMPILATION => {
            "NVRTC_ERROR_NO_LOWERED_NAMES_BEFORE_COMPILATION"
        }
        nvrtcResult::NVRTC_ERROR_NAME_EXPRESSION_NOT_VALID => "NVRTC_ERROR_NAME_EXPRESSION_NOT_VALID",
        nvrtcResult::NVRTC_ERROR_INTERNAL_ERROR => "NVRTC_ERROR_INTERNAL_ERROR",
        nvrtcResult::NVRTC_ERROR_TIME_FILE_WRITE_FAILED => "NVRTC_ERROR_TIME_FILE_WRITE_FAILED",
        nvrtcResult::NVRTC_ERROR_NO_PCH_CREATE_ATTEMPTED => "NVRTC_ERROR_NO_PCH_CREATE_ATTEMPTED",
        nvrtcResult::NVRTC_ERROR_PCH_CREATE_HEAP_EXHAUSTED => "NVRTC_ERROR_PCH_CREATE_HEAP_EXHAUSTED",
        nvrtcResult::NVRTC_ERROR_PCH_CREATE => "NVRTC_ERROR_PCH_CREATE",
        nvrtcResult::NVRTC_ERROR_CANCELLED => "NVRTC_ERROR_CANCELLED",
        nvrtcResult::NVRTC_ERROR_TIME_TRACE_FILE_WRITE_FAILED => "NVRTC_ERROR_TIME_TRACE_FILE_WRITE_FAILED",
        _ => "NVRTC_ERROR_UNKNOWN",
    }
}

/// The name of an nvJitLink result code.
pub(crate) fn nvjitlink_code_name(code: nvJitLinkResult) -> &'static str {
    match code {
        nvJitLinkResult::NVJITLINK_SUCCESS => "NVJITLINK_SUCCESS",
        nvJitLinkResult::NVJITLINK_ERROR_UNRECOGNIZED_OPTION => "NVJITLINK_ERROR_UNRECOGNIZED_OPTION",
        nvJitLinkResult::NVJITLINK_ERROR_MISSING_ARCH => "NVJITLINK_ERROR_MISSING_ARCH",
        nvJitLinkResult::NVJITLINK_ERROR_INVALID_INPUT => "NVJITLINK_ERROR_INVALID_INPUT",
        nvJitLinkResult::NVJITLINK_ERROR_PTX_COMPILE => "NVJITLINK_ERROR_PTX_COMPILE",
        nvJitLinkResult::NVJITLINK_ERROR_NVVM_COMPILE => "NVJITLINK_ERROR_NVVM_COMPILE",
        nvJitLinkResult::NVJITLINK_ERROR_INTERNAL => "NVJITLINK_ERROR_INTERNAL",
        nvJitLinkResult::NVJITLINK_ERROR_THREADPOOL => "NVJITLINK_ERROR_THREADPOOL",
        nvJitLinkResult::NVJITLINK_ERROR_UNRECOGNIZED_INPUT => "NVJITLINK_ERROR_UNRECOGNIZED_INPUT",
        nvJitLinkResult::NVJITLINK_ERROR_FINALIZE => "NVJITLINK_ERROR_FINALIZE",
        nvJitLinkResult::NVJITLINK_ERROR_NULL_INPUT => "NVJITLINK_ERROR_NULL_INPUT",
        nvJitLinkResult::NVJITLINK_ERROR_INCOMPATIBLE_OPTIONS => "NVJITLINK_ERROR_INCOMPATIBLE_OPTIONS",
        nvJitLinkResult::NVJITLINK_ERROR_INCORRECT_INPUT_TYPE => "NVJITLINK_ERROR_INCORRECT_INPUT_TYPE",
        nvJitLinkResult::NVJITLINK_ERROR_ARCH_MISMATCH => "NVJITLINK_ERROR_ARCH_MISMATCH",
        nvJitLinkResult::NVJITLINK_ERROR_OUTDATED_LIBRARY => "NVJITLINK_ERROR_OUTDATED_LIBRARY",
        nvJitLinkResult::NVJITLINK_ERROR_MISSING_FATBIN => "NVJITLINK_ERROR_MISSING_FATBIN",
        nvJitLinkResult::NVJITLINK_ERROR_UNRECOGNIZED_ARCH => "NVJITLINK_ERROR_UNRECOGNIZED_ARCH",
        nvJitLinkResult::NVJITLINK_ERROR_UNSUPPORTED_ARCH => "NVJITLINK_ERROR_UNSUPPORTED_ARCH",
        nvJitLinkResult::NVJITLINK_ERROR_LTO_NOT_ENABLED => "NVJITLINK_ERROR_LTO_NOT_ENABLED",
        _ => "NVJITLINK_ERROR_UNKNOWN",
    }
}
