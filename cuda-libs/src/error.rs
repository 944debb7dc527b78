//! The crate's error type: a library's status code, a library or function that is not there,
//! driver errors, and bad input caught on the host before any library is called.

use std::fmt;

use cuda_sys::{LoadError, SymbolError};

/// `Result` with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong in this crate.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub enum Error {
    /// A library call returned a status other than success.
    Status {
        /// The library: `"cuBLAS"` or `"cuBLASLt"`.
        library: &'static str,
        /// The function that failed, e.g. `"cublasGemmEx"`.
        function: &'static str,
        /// The status code it returned (`cublasStatus_t`).
        code: u32,
        /// The code's name as the library reports it (`cublasGetStatusName`), e.g.
        /// `CUBLAS_STATUS_INVALID_VALUE`; `status <code>` where it cannot be asked.
        name: String,
    },
    /// An NCCL call returned a status other than success.
    Nccl {
        /// The function that failed, e.g. `"ncclAllReduce"`.
        function: &'static str,
        /// The `ncclResult_t` it returned.
        code: u32,
        /// NCCL's description of the code (`ncclGetErrorString`).
        message: String,
    },
    /// An NVML call returned a status other than success.
    #[cfg(feature = "nvml")]
    Nvml {
        /// The function that failed, e.g. `"nvmlDeviceGetPowerUsage"`.
        function: &'static str,
        /// The status it returned.
        code: crate::system::NvmlCode,
        /// NVML's description of the code (`nvmlErrorString`).
        message: String,
    },
    /// NCCL did not finish in time: a communicator stayed in progress (a rank that never joined,
    /// a peer that stopped, collectives of one thread's communicators outside a group).
    Timeout {
        /// The call waited for, e.g. `"ncclCommInitRankConfig"`.
        operation: &'static str,
        /// How long it was waited for.
        after: std::time::Duration,
    },
    /// A library could not be loaded: names every file and loader name that was tried, and
    /// the environment variable that names the file (`CUDA_CUBLAS_LIBRARY`, ...).
    Load(LoadError),
    /// The loaded library lacks a function (a library older than the headers).
    Symbol(SymbolError),
    /// A driver call failed, or a buffer or stream was refused by cuda-driver.
    Driver(cuda_driver::Error),
    /// Bad input caught on the host, before any library call: shapes, leading dimensions,
    /// buffer lengths, sizes over the libraries' 32-bit limits.
    InvalidValue(String),
    /// A cuSOLVER routine (or cuBLAS's batched LU) reported through its `info` output that a
    /// matrix could not be factored or did not converge: read back once per
    /// [`solver::Solver::check_info`](crate::solver::Solver::check_info) call.
    Linalg {
        /// The routine, e.g. `"cusolverDnXpotrf"`.
        routine: &'static str,
        /// The matrix of the batch that failed (0 for a routine of one matrix).
        index: usize,
        /// Why.
        failure: LinalgFailure,
    },
    /// A buffer of one context was used with a handle of another.
    WrongContext {
        /// What belonged to the other context (`"matrix A"`, ...).
        object: &'static str,
        /// What it was used with (`"cuBLAS handle"`, ...).
        used_with: &'static str,
    },
}

/// Why a factorisation or decomposition failed, as its `info` output says (LAPACK's meanings).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum LinalgFailure {
    /// The matrix is singular: the LU factor `U(pivot, pivot)` (1-based) is exactly zero.
    Singular {
        /// The 1-based index of the zero pivot.
        pivot: i64,
    },
    /// The matrix is not positive definite: its leading minor of this order (1-based) is not.
    NotPositiveDefinite {
        /// The order of the first leading minor that is not positive definite.
        order: i64,
    },
    /// An iterative solver (SVD, eigenvalues) did not converge; `count` is what the routine
    /// reports (elements or superdiagonals that did not converge, or sweeps past the limit).
    NoConvergence {
        /// The routine's count.
        count: i64,
    },
    /// The routine refused an argument: the 1-based position of the parameter.
    InvalidArgument {
        /// The parameter's 1-based position in the routine's C signature.
        position: i64,
    },
}

impl fmt::Display for LinalgFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LinalgFailure::Singular { pivot } => write!(f, "is singular (U({pivot}, {pivot}) is exactly zero)"),
            LinalgFailure::NotPositiveDefinite { order } => {
                write!(
                    f,
                    "is not positive definite (its leading minor of order {order} is not)"
                )
            }
            LinalgFailure::NoConvergence { count } => write!(f, "did not converge (info {count})"),
            LinalgFailure::InvalidArgument { position } => write!(f, "was refused: parameter {position} is invalid"),
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Status {
                function, code, name, ..
            } => write!(f, "{function} failed: {name} ({code})"),
            Error::Nccl {
                function,
                code,
                message,
            } => write!(f, "{function} failed: {message} (ncclResult_t {code})"),
            #[cfg(feature = "nvml")]
            Error::Nvml {
                function,
                code,
                message,
            } => write!(f, "{function} failed: {message} (nvmlReturn_t {})", code.raw()),
            Error::Timeout { operation, after } => write!(f, "{operation} did not complete within {after:?}"),
            Error::Load(e) => e.fmt(f),
            Error::Symbol(e) => e.fmt(f),
            Error::Driver(e) => e.fmt(f),
            Error::InvalidValue(message) => write!(f, "invalid value: {message}"),
            Error::Linalg {
                routine,
                index,
                failure,
            } => write!(f, "{routine}: matrix {index} {failure}"),
            Error::WrongContext { object, used_with } => write!(
                f,
                "{object} belongs to a different context than the {used_with} it was used with"
            ),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Load(e) => e.source(),
            Error::Symbol(e) => e.source(),
            Error::Driver(e) => e.source(),
            _ => None,
        }
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

impl From<cuda_driver::Error> for Error {
    fn from(error: cuda_driver::Error) -> Self {
        Error::Driver(error)
    }
}
