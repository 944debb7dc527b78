//! cuSOLVER's dense routines ([`Solver`]) and cuBLAS's batched LU, on column-major matrices in
//! device memory of the contract ([`cuda_driver::DeviceMemory`]), in `f32`, `f64`, `Complex<f32>`
//! and `Complex<f64>` ([`SolverScalar`]).
//!
//! # Column-major
//! Unlike [`crate::blas`], matrices here are column-major, as cuSOLVER and LAPACK take them:
//! element `(i, j)` of a matrix with leading dimension `ld` is at index `i + j * ld`, and `ld` is
//! at least the number of rows ([`Matrix`]). A row-major matrix read column-major is its
//! transpose: for the symmetric routines (Cholesky, eigenvalues) that only swaps
//! [`Fill::Lower`] and [`Fill::Upper`]; for the others the caller transposes, or solves with
//! the transposed factor ([`Solver::getrs`] takes `transpose`).
//!
//! # Workspaces
//! Each routine that needs device workspace has a `*_workspace` query returning its bytes,
//! and takes the workspace from the caller (a pool block, say); a workspace too small is
//! [`crate::Error::InvalidValue`] before anything is queued. Host workspace, where the 64-bit
//! API asks for it, is the handle's own.
//!
//! # `info`: one read-back
//! cuSOLVER reports a singular matrix, a matrix that is not positive definite or a solver that
//! did not converge through `info` values in device memory. The handle keeps those of every
//! routine it queued, without waiting; [`Solver::check_info`] reads them all back at once (one
//! copy after the stream's work) and turns the first failure into [`crate::Error::Linalg`],
//! naming the routine, the cause ([`crate::LinalgFailure`]) and the matrix of the batch. A
//! result is trustworthy only after `check_info` returned `Ok`.
//!
//! # Threads
//! A [`Solver`] may move to another thread (`Send`: cuSOLVER lets a handle be used from any
//! thread, one at a time) but is not `Sync`; every call makes the stream's context current first.

use cuda_driver::DeviceCopy;
use cuda_sys::cusolver::{cublasFillMode_t, cudaDataType, cusolverStatus_t};
use num_complex::Complex;

use crate::{Error, Result};

mod batched;
mod dense;
mod info;
mod jacobi;
mod typed;

pub use batched::JACOBI_BATCHED_MAX;
pub use dense::{syev_batch_fits, Solver, SvdVectors};

/// Loads cuSOLVER and cuBLAS (for the batched LU) now (each is loaded once per process, on first
/// use), so a program can say early that one is missing: [`Error::Load`] lists every place tried.
pub fn load() -> Result<()> {
    cuda_sys::cusolver()?;
    cuda_sys::cublas()?;
    Ok(())
}

/// Which triangle of a symmetric (complex: Hermitian) matrix a routine reads (and a Cholesky
/// factor is written to). `^H` below is the conjugate transpose, `^T` for the real types.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Fill {
    /// The lower triangle: `A = L L^H`.
    Lower,
    /// The upper triangle: `A = U^H U`.
    Upper,
}

impl Fill {
    fn raw(self) -> cublasFillMode_t {
        match self {
            Fill::Lower => cublasFillMode_t::CUBLAS_FILL_MODE_LOWER,
            Fill::Upper => cublasFillMode_t::CUBLAS_FILL_MODE_UPPER,
        }
    }
}

/// A column-major matrix as stored: `rows x cols` with leading dimension `ld` (elements between
/// the starts of two columns, at least `rows`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Matrix {
    /// Rows.
    pub rows: usize,
    /// Columns.
    pub cols: usize,
    /// Leading dimension.
    pub ld: usize,
}

impl Matrix {
    /// A tightly packed `rows x cols` matrix (`ld = rows`, at least 1 as LAPACK wants).
    pub fn new(rows: usize, cols: usize) -> Matrix {
        Matrix {
            rows,
            cols,
            ld: rows.max(1),
        }
    }

    /// A tightly packed `n x n` matrix.
    pub fn square(n: usize) -> Matrix {
        Matrix::new(n, n)
    }

    /// Sets the leading dimension.
    pub fn ld(mut self, ld: usize) -> Matrix {
        self.ld = ld;
        self
    }

    /// Elements one matrix spans, `(cols - 1) * ld + rows`, once the leading dimension is checked
    /// (0 for a matrix with no elements).
    pub(crate) fn span(&self, name: &str) -> Result<usize> {
        if self.ld < self.rows.max(1) {
            return Err(Error::InvalidValue(format!(
                "{name} has {} rows, so its leading dimension must be at least {}; it is {}",
                self.rows,
                self.rows.max(1),
                self.ld
            )));
        }
        if self.rows == 0 || self.cols == 0 {
            return Ok(0);
        }
        (self.cols - 1)
            .checked_mul(self.ld)
            .and_then(|start| start.checked_add(self.rows))
            .ok_or_else(|| Error::InvalidValue(format!("{name}: {self:?} overflows")))
    }

    /// Elements `count` matrices one after another (each `ld * cols` apart) span.
    pub(crate) fn batch_span(&self, name: &str, count: usize) -> Result<usize> {
        let one = self.span(name)?;
        if count == 0 || one == 0 {
            return Ok(0);
        }
        (count - 1)
            .checked_mul(self.stride())
            .and_then(|start| start.checked_add(one))
            .ok_or_else(|| Error::InvalidValue(format!("{name}: {count} matrices of {self:?} overflow")))
    }

    /// Elements between the starts of two matrices of a packed batch.
    pub(crate) fn stride(&self) -> usize {
        self.ld.saturating_mul(self.cols)
    }

    /// A square matrix's order, or [`Error::InvalidValue`] naming the routine.
    pub(crate) fn order(&self, name: &str) -> Result<usize> {
        if self.rows != self.cols {
            return Err(Error::InvalidValue(format!(
                "{name} must be square; it is {} x {}",
                self.rows, self.cols
            )));
        }
        Ok(self.rows)
    }
}

/// An element type cuSOLVER factors: `f32`, `f64`, `Complex<f32>` and `Complex<f64>`. Each
/// routine is one generic path over it: the 64-bit API takes its [`DATA_TYPE`](Self::DATA_TYPE),
/// the routines that come in one function per type resolve theirs through it. Sealed.
pub trait SolverScalar: DeviceCopy + typed::Typed {
    /// The type of the real outputs (eigenvalues of a Hermitian matrix, singular values): the
    /// type itself for `f32` and `f64`, the part type for the complex ones.
    type Real: SolverScalar<Real = Self::Real>;
    /// Its `cudaDataType` (the 64-bit API's data and compute type).
    const DATA_TYPE: cudaDataType;
}

impl SolverScalar for f32 {
    type Real = f32;
    const DATA_TYPE: cudaDataType = cudaDataType::CUDA_R_32F;
}

impl SolverScalar for f64 {
    type Real = f64;
    const DATA_TYPE: cudaDataType = cudaDataType::CUDA_R_64F;
}

impl SolverScalar for Complex<f32> {
    type Real = f32;
    const DATA_TYPE: cudaDataType = cudaDataType::CUDA_C_32F;
}

impl SolverScalar for Complex<f64> {
    type Real = f64;
    const DATA_TYPE: cudaDataType = cudaDataType::CUDA_C_64F;
}

/// A size as cuSOLVER's 32-bit `int` (its legacy and batched routines).
fn to_int(what: &str, value: usize) -> Result<i32> {
    i32::try_from(value).map_err(|_| {
        Error::InvalidValue(format!(
            "{what}: {value} is over cuSOLVER's 32-bit limit ({})",
            i32::MAX
        ))
    })
}

/// A size as the 64-bit API's `int64_t`.
fn to_long(what: &str, value: usize) -> Result<i64> {
    i64::try_from(value).map_err(|_| Error::InvalidValue(format!("{what}: {value} is over the 64-bit limit")))
}

/// `Ok` for `CUSOLVER_STATUS_SUCCESS`, otherwise [`Error::Status`] naming the status.
fn check(function: &'static str, status: cusolverStatus_t) -> Result<()> {
    if status == cusolverStatus_t::CUSOLVER_STATUS_SUCCESS {
        return Ok(());
    }
    Err(Error::Status {
        library: "cuSOLVER",
        function,
        code: status.0,
        name: status_name(status).map_or_else(|| format!("cusolverStatus_t {}", status.0), str::to_string),
    })
}

/// The name of a `cusolverStatus_t` (cuSOLVER has no function that gives it).
fn status_name(status: cusolverStatus_t) -> Option<&'static str> {
    Some(match status {
        cusolverStatus_t::CUSOLVER_STATUS_SUCCESS => "CUSOLVER_STATUS_SUCCESS",
        cusolverStatus_t::CUSOLVER_STATUS_NOT_INITIALIZED => "CUSOLVER_STATUS_NOT_INITIALIZED",
        cusolverStatus_t::CUSOLVER_STATUS_ALLOC_FAILED => "CUSOLVER_STATUS_ALLOC_FAILED",
        cusolverStatus_t::CUSOLVER_STATUS_INVALID_VALUE => "CUSOLVER_STATUS_INVALID_VALUE",
        cusolverStatus_t::CUSOLVER_STATUS_ARCH_MISMATCH => "CUSOLVER_STATUS_ARCH_MISMATCH",
        cusolverStatus_t::CUSOLVER_STATUS_MAPPING_ERROR => "CUSOLVER_STATUS_MAPPING_ERROR",
        cusolverStatus_t::CUSOLVER_STATUS_EXECUTION_FAILED => "CUSOLVER_STATUS_EXECUTION_FAILED",
        cusolverStatus_t::CUSOLVER_STATUS_INTERNAL_ERROR => "CUSOLVER_STATUS_INTERNAL_ERROR",
        cusolverStatus_t::CUSOLVER_STATUS_MATRIX_TYPE_NOT_SUPPORTED => "CUSOLVER_STATUS_MATRIX_TYPE_NOT_SUPPORTED",
        cusolverStatus_t::CUSOLVER_STATUS_NOT_SUPPORTED => "CUSOLVER_STATUS_NOT_SUPPORTED",
        cusolverStatus_t::CUSOLVER_STATUS_ZERO_PIVOT => "CUSOLVER_STATUS_ZERO_PIVOT",
        cusolverStatus_t::CUSOLVER_STATUS_INVALID_LICENSE => "CUSOLVER_STATUS_INVALID_LICENSE",
        cusolverStatus_t::CUSOLVER_STATUS_INVALID_WORKSPACE => "CUSOLVER_STATUS_INVALID_WORKSPACE",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_follow_the_column_major_layout() {
        assert_eq!(Matrix::new(3, 4).span("A").unwrap(), 12);
        assert_eq!(Matrix::new(3, 4).ld(5).span("A").unwrap(), 18);
        assert_eq!(Matrix::new(0, 4).span("A").unwrap(), 0);
        assert_eq!(Matrix::square(4).batch_span("A", 3).unwrap(), 48);
        assert_eq!(Matrix::square(4).ld(6).batch_span("A", 3).unwrap(), 2 * 24 + 22);
        assert_eq!(Matrix::square(4).batch_span("A", 0).unwrap(), 0);
        let narrow = Matrix::new(3, 4).ld(2).span("A");
        assert!(matches!(narrow, Err(Error::InvalidValue(m)) if m.contains("at least 3")));
        let huge = Matrix::new(2, usize::MAX).span("A");
        assert!(matches!(huge, Err(Error::InvalidValue(m)) if m.contains("overflow")));
        assert!(matches!(Matrix::new(3, 4).order("A"), Err(Error::InvalidValue(m)) if m.contains("square")));
        assert_eq!(Matrix::square(5).order("A").unwrap(), 5);
        assert!(to_int("n", 1 << 31).is_err());
        assert_eq!(to_long("n", 1 << 40).unwrap(), 1 << 40);
    }

    #[test]
    fn a_failed_status_carries_its_name() {
        assert!(check("cusolverDnXpotrf", cusolverStatus_t::CUSOLVER_STATUS_SUCCESS).is_ok());
        match check("cusolverDnXpotrf", cusolverStatus_t::CUSOLVER_STATUS_INVALID_VALUE) {
            Err(Error::Status {
                library, code, name, ..
            }) => {
                assert_eq!((library, code), ("cuSOLVER", 3));
                assert_eq!(name, "CUSOLVER_STATUS_INVALID_VALUE");
            }
            other => panic!("{other:?}"),
        }
        match check("cusolverDnXpotrf", cusolverStatus_t(77)) {
            Err(Error::Status { name, .. }) => assert_eq!(name, "cusolverStatus_t 77"),
            other => panic!("{other:?}"),
        }
    }
}
