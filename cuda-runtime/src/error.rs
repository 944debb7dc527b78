//! The crate's error type and the runtime's per-thread "last error".

use std::ffi::{c_char, CStr};
use std::fmt;

use cuda_sys::runtime::cudaError_t;
use cuda_sys::{LoadError, SymbolError};

/// `Result<T, cuda_runtime::Error>`.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// A failed runtime call: the `cudaError_t` code with the runtime's own name
/// and description for it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RuntimeError {
    /// The code the runtime returned.
    pub code: cudaError_t,
    /// `cudaGetErrorName`, e.g. `"cudaErrorInvalidValue"`.
    pub name: String,
    /// `cudaGetErrorString`, e.g. `"invalid argument"`.
    pub description: String,
}

impl RuntimeError {
    /// Builds the error for `code`, asking `runtime` for its name and description.
    pub fn new(runtime: &cuda_sys::Runtime, code: cudaError_t) -> Self {
        let name = describe(runtime.cudaGetErrorName().ok(), code);
        let description = describe(runtime.cudaGetErrorString().ok(), code);
        Self {
            code,
            name,
            description,
        }
    }
}

impl fmt::Display for RuntimeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({}): {}", self.name, self.code.0, self.description)
    }
}

impl std::error::Error for RuntimeError {}

fn describe(lookup: Option<unsafe extern "C" fn(cudaError_t) -> *const c_char>, code: cudaError_t) -> String {
    let text = lookup.map(|f| {
        // SAFETY: both lookups accept any code and return a pointer to a static
        // NUL-terminated string ("unrecognized error code" for unknown codes).
        unsafe { f(code) }
    });
    match text {
        // SAFETY: the pointer is non-null, NUL-terminated and static (see above).
        Some(p) if !p.is_null() => unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned(),
        _ => format!("cudaError_t({})", code.0),
    }
}

/// Everything that can go wrong in this crate.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum Error {
    /// A runtime call failed.
    Runtime(RuntimeError),
    /// libcudart could not be loaded (the message lists every path tried).
    Load(LoadError),
    /// The loaded libcudart lacks a function (older than the headers).
    Symbol(SymbolError),
    /// A driver call made where the runtime API has none failed (its `CUresult` code).
    Driver {
        /// The driver function.
        call: &'static str,
        /// Its result code.
        code: u32,
    },
    /// Bad input caught on the host before any call: zero or overflowing
    /// sizes, malformed images, interior NUL bytes, launch limits, ...
    InvalidValue(String),
    /// Two buffers (or a buffer and a slice) of different lengths.
    LengthMismatch {
        /// The length the operation needs.
        expected: usize,
        /// The length it was given.
        found: usize,
    },
    /// An object of one device used with an object or operation of another.
    WrongDevice {
        /// What was passed, e.g. `"event"`, `"kernel argument 2"`.
        what: String,
        /// The device the operation runs on.
        expected: i32,
        /// The device the object belongs to.
        found: i32,
    },
    /// Kernel arguments that do not match the kernel's parameter list.
    ArgumentCount {
        /// The kernel's name.
        kernel: String,
        /// Its parameter count (`cudaFuncGetParamInfo`).
        expected: usize,
        /// The number of arguments passed.
        found: usize,
    },
    /// A kernel argument whose size differs from the parameter's.
    ArgumentSize {
        /// The kernel's name.
        kernel: String,
        /// The parameter's position, from 0.
        index: usize,
        /// The parameter's size in bytes.
        expected: usize,
        /// The argument's size in bytes.
        found: usize,
    },
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Runtime(e) => e.fmt(f),
            Error::Load(e) => e.fmt(f),
            Error::Symbol(e) => e.fmt(f),
            Error::Driver { call, code } => write!(f, "{call} failed with CUresult {code}"),
            Error::InvalidValue(message) => write!(f, "invalid value: {message}"),
            Error::LengthMismatch { expected, found } => {
                write!(f, "length mismatch: expected {expected} elements, got {found}")
            }
            Error::WrongDevice { what, expected, found } => write!(
                f,
                "device mismatch: {what} belongs to device {found}, the operation runs on device {expected}"
            ),
            Error::ArgumentCount {
                kernel,
                expected,
                found,
            } => write!(f, "kernel `{kernel}` takes {expected} parameters, {found} were given"),
            Error::ArgumentSize {
                kernel,
                index,
                expected,
                found,
            } => write!(
                f,
                "kernel `{kernel}` parameter {index} is {expected} bytes, the argument is {found} bytes"
            ),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Runtime(e) => e.source(),
            Error::Load(e) => e.source(),
            Error::Symbol(e) => e.source(),
            _ => None,
        }
    }
}

impl From<RuntimeError> for Error {
    fn from(error: RuntimeError) -> Self {
        Error::Runtime(error)
    }
}

impl From<LoadError> for Error {
    fn from(error: LoadError) -> Self {
        Error::Load(error)
    }
}

impl From<SymbolError> for Error {
    fn from(error: SymbolError) -> Self {
        Error::Symbol(error)
    }
}

impl Error {
    /// The runtime's code, when the error came from a runtime call.
    pub fn code(&self) -> Option<cudaError_t> {
        match self {
            Error::Runtime(e) => Some(e.code),
            _ => None,
        }
    }
}

/// Turns a runtime return code into a `Result`.
#[inline]
pub(crate) fn check(runtime: &cuda_sys::Runtime, code: cudaError_t) -> Result<()> {
    if code == cudaError_t::cudaSuccess {
        Ok(())
    } else {
        Err(RuntimeError::new(runtime, code).into())
    }
}

/// Returns and clears the calling thread's last runtime error
/// (`cudaGetLastError`). `Ok(())` when there is none. Sticky errors (a kernel
/// fault, an insufficient driver) are returned again by later calls.
pub fn get_last_error() -> Result<()> {
    let runtime = crate::runtime()?;
    // SAFETY: takes no arguments; reads thread-local runtime state.
    let code = unsafe { runtime.cudaGetLastError()?() };
    check(runtime, code)
}

/// Returns the calling thread's last runtime error without clearing it
/// (`cudaPeekAtLastError`). `Ok(())` when there is none.
pub fn peek_at_last_error() -> Result<()> {
    let runtime = crate::runtime()?;
    // SAFETY: takes no arguments; reads thread-local runtime state.
    let code = unsafe { runtime.cudaPeekAtLastError()?() };
    check(runtime, code)
}
