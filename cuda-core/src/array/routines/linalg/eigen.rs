//! NumPy's `linalg.eigh` and `linalg.eigvalsh` over stacks `(..., n, n)` of symmetric matrices.
//!
//! A stack of matrices up to [`JACOBI_BATCHED_MAX`] is one Jacobi call for the whole stack
//! (`syevjBatched`); a stack of larger ones is one `XsyevBatched` call (cuSOLVER from CUDA 12.6;
//! with an older one, one `Xsyevd` call per matrix, all on one workspace and stream); one matrix
//! goes through cuSOLVER's divide and conquer (`Xsyevd`). Either way the `info`s are read back
//! once, at the end.
//!
//! The row-major copy read column-major is `A^T`: NumPy's lower triangle is its upper one, and
//! the eigenvectors, the columns of the column-major result, are the rows of the row-major
//! buffer, so the vectors returned are that buffer's transposed view (no copy). Of a complex
//! Hermitian `A`, `A^T` is `conj(A)`: the same (real) eigenvalues, conjugated eigenvectors, so
//! complex vectors are conjugated once (one element-wise copy of the transposed view).

use cuda_driver::DeviceMemoryMut;
use cuda_libs::solver::{syev_batch_fits, Fill, Matrix, Solver, SolverScalar, JACOBI_BATCHED_MAX};

use super::handles::{refuse_solver_in_capture, with_solver};
use super::stacks::{column_major_fill, LinalgInput, SquareStack};
use crate::array::device_array::DeviceArray;
use crate::array::dtype::Element;
use crate::array::promotion::Scalars;
use crate::array::routines::math::ExprOps;
use crate::error::Result;

/// The eigenvalues (real) and the eigenvectors: `eigh`'s result (vectors as columns), or
/// `decompose`'s (vectors as rows, conjugated for complex types).
type Eigen<F> = (DeviceArray<<F as Scalars>::Real>, DeviceArray<F>);

/// The eigenvalues (`(count, n)`) and, with `vectors`, the eigenvectors (the compact
/// `(count, n, n)` buffer whose rows they are) of the stack `a`.
fn decompose<T: LinalgInput>(
    a: &DeviceArray<T>,
    stack: &SquareStack,
    upper: bool,
    vectors: bool,
) -> Result<Eigen<T::Factored>> {
    let stream = a.stream().clone();
    let (n, count) = (stack.n, stack.count());
    let mut m = a.astype::<T::Factored>().eval_on(&stream)?.reshape([count, n, n])?;
    let mut w = DeviceArray::<<T::Factored as Scalars>::Real>::empty(&stream, [count, n])?;
    let (fill, square) = (column_major_fill(upper), Matrix::square(n));
    with_solver(&stream, |solver| {
        if count > 1 && n <= JACOBI_BATCHED_MAX {
            let bytes = solver.syevj_batched_workspace::<T::Factored>(vectors, fill, square, count)?;
            let mut workspace = DeviceArray::<u8>::empty(&stream, [bytes])?;
            let workspace: Option<&mut dyn DeviceMemoryMut> = match bytes {
                0 => None,
                _ => Some(&mut workspace),
            };
            solver.syevj_batched::<T::Factored>(vectors, fill, square, count, &mut m, &mut w, workspace)?;
        } else if let Some(bytes) = batched_workspace::<T::Factored>(solver, vectors, fill, (square, count))? {
            let mut workspace = DeviceArray::<u8>::empty(&stream, [bytes])?;
            let workspace: Option<&mut dyn DeviceMemoryMut> = match bytes {
                0 => None,
                _ => Some(&mut workspace),
            };
            solver.syev_batched::<T::Factored>(vectors, fill, square, count, &mut m, &mut w, workspace)?;
        } else {
            let bytes = solver.syevd_workspace::<T::Factored>(vectors, fill, square)?;
            let mut workspace = DeviceArray::<u8>::empty(&stream, [bytes])?;
            for i in 0..count {
                let mut matrix = m.index_axis(0, i as i64)?;
                let mut values = w.index_axis(0, i as i64)?;
                let workspace: Option<&mut dyn DeviceMemoryMut> = match bytes {
                    0 => None,
                    _ => Some(&mut workspace),
                };
                solver.syevd::<T::Factored>(vectors, fill, square, &mut matrix, &mut values, workspace)?;
            }
        }
        Ok(solver.check_info()?)
    })?;
    Ok((w, m))
}

/// The device workspace of one `XsyevBatched` call for a stack of `count` matrices (more than
/// one), or `None` for one matrix, for a stack beyond the routine's `n * lda * count <=
/// i32::MAX`, or where the installed cuSOLVER lacks the routine (before CUDA 12.6).
fn batched_workspace<F: SolverScalar>(
    solver: &mut Solver,
    vectors: bool,
    fill: Fill,
    (square, count): (Matrix, usize),
) -> cuda_libs::Result<Option<usize>> {
    if count < 2 || !syev_batch_fits(square, count) {
        return Ok(None);
    }
    match solver.syev_batched_workspace::<F>(vectors, fill, square, count) {
        Ok(bytes) => Ok(Some(bytes)),
        Err(cuda_libs::Error::Symbol(_)) => Ok(None),
        Err(error) => Err(error),
    }
}

impl<T: LinalgInput> DeviceArray<T> {
    /// NumPy's `linalg.eigh(a, UPLO)`: the eigenvalues (ascending, `(..., n)`, real: `f32` of
    /// `f32` and `Complex<f32>`) and the orthonormal eigenvectors (`(..., n, n)`, column `i` for
    /// eigenvalue `i`, in the promoted type) of each symmetric (complex: Hermitian) matrix of
    /// the stack. Only one triangle is read: the
    /// lower (`upper == false`, NumPy's `UPLO='L'`, its default) or the upper.
    ///
    /// Errors: a stack that is not square ([`Error::InvalidValue`](crate::Error::InvalidValue));
    /// a solver that did not converge ([`cuda_libs::Error::Linalg`] with
    /// [`cuda_libs::LinalgFailure::NoConvergence`] and the matrix's index). `0 x 0` matrices
    /// give empty results.
    pub fn eigh(&self, upper: bool) -> Result<Eigen<T::Factored>> {
        let stack = SquareStack::of("eigh", self.shape())?;
        refuse_solver_in_capture(self.stream())?;
        let stream = self.stream().clone();
        let values_shape = [&stack.batch[..], &[stack.n]].concat();
        if stack.is_empty() {
            return Ok((
                DeviceArray::zeros(&stream, values_shape)?,
                DeviceArray::zeros(&stream, stack.shape())?,
            ));
        }
        let (values, vectors) = decompose(self, &stack, upper, true)?;
        let vectors = vectors.reshape(stack.shape())?.swapaxes(-2, -1)?;
        let vectors = match T::Factored::DTYPE.is_complex() {
            true => (&vectors).conj().eval()?,
            false => vectors,
        };
        Ok((values.reshape(values_shape)?, vectors))
    }

    /// NumPy's `linalg.eigvalsh(a, UPLO)`: the eigenvalues alone (ascending, `(..., n)`), as
    /// [`eigh`](Self::eigh) computes them without the vectors.
    pub fn eigvalsh(&self, upper: bool) -> Result<DeviceArray<<T::Factored as Scalars>::Real>> {
        let stack = SquareStack::of("eigvalsh", self.shape())?;
        refuse_solver_in_capture(self.stream())?;
        let values_shape = [&stack.batch[..], &[stack.n]].concat();
        if stack.is_empty() {
            return DeviceArray::zeros(self.stream(), values_shape);
        }
        decompose(self, &stack, upper, false)?.0.reshape(values_shape)
    }
}
