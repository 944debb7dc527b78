//! The crate's error type: a library's status code, a library or function that is not there,
//! driver errors, and bad input caught on the host before any library is called.

use cuda_sys::{LoadError, SymbolError};

/// `Result` with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong in this crate.
#[derive(Clone, Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A library call returned a status other than success.
    #[error("{function} failed: {name} ({code})")]
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
    #[error("{function} failed: {message} (ncclResult_t {code})")]
    Nccl {
        /// The function that failed, e.g. `"ncclAllReduce"`.
        function: &'static str,
        /// The `ncclResult_t` it returned.
        code: u32,
        /// NCCL's description of the code (`ncclGetErrorString`).
        message: String,
    },
    /// NCCL did not finish in time: a communicator stayed in progress (a rank that never joined,
    /// a peer that stopped, collectives of one thread's communicators outside a group).
    #[error("{operation} did not complete within {after:?}")]
    Timeout {
        /// The call waited for, e.g. `"ncclCommInitRankConfig"`.
        operation: &'static str,
        /// How long it was waited for.
        after: std::time::Duration,
    },
    /// A library could not be loaded: names every file and loader name that was tried, and
    /// the environment variable that names the file (`CUDA_CUBLAS_LIBRARY`, ...).
    #[error(transparent)]
    Load(#[from] LoadError),
    /// The loaded library lacks a function (a library older than the headers).
    #[error(transparent)]
    Symbol(#[from] SymbolError),
    /// A driver call failed, or a buffer or stream was refused by cuda-driver.
    #[error(transparent)]
    Driver(#[from] cuda_driver::Error),
    /// Bad input caught on the host, before any library call: shapes, leading dimensions,
    /// buffer lengths, sizes over the libraries' 32-bit limits.
    #[error("invalid value: {0}")]
    InvalidValue(String),
    /// A buffer of one context was used with a handle of another.
    #[error("{object} belongs to a different context than the {used_with} it was used with")]
    WrongContext {
        /// What belonged to the other context (`"matrix A"`, ...).
        object: &'static str,
        /// What it was used with (`"cuBLAS handle"`, ...).
        used_with: &'static str,
    },
}
