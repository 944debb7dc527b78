//! NumPy's `linalg.cholesky` over stacks `(..., n, n)` of symmetric positive definite matrices:
//! matrices up to 64 x 64 (32 x 32 in `Complex<f64>`) in one generated kernel, a block a matrix
//! (`small_cholesky.rs`); larger ones by cuSOLVER's `Xpotrf` for one matrix, `potrfBatched` for
//! a stack (one call).
//!
//! On cuSOLVER's path, the C-contiguous copy of `A` (which the in-place factorisation needs, and which promotes the
//! type) read column-major is `A^T`, the same symmetric matrix: factoring its upper triangle as
//! `U^T U` leaves, read row-major, the lower factor `L = U^T` with `A = L L^T` (NumPy's
//! default), and its lower triangle the upper factor. So no transposing copy is made; the
//! triangle the factor does not use is then zeroed, as NumPy returns it.

use cuda_driver::DeviceMemoryMut;
use cuda_libs::solver::Matrix;

use super::handles::{refuse_solver_in_capture, with_solver};
use super::stacks::{column_major_fill, LinalgInput, SquareStack};
use super::{small, small_cholesky};
use crate::array::device_array::DeviceArray;
use crate::array::dtype::Element;
use crate::array::routines::math::ExprOps;
use crate::error::Result;

impl<T: LinalgInput> DeviceArray<T> {
    /// NumPy's `linalg.cholesky(a, upper=upper)`: for each matrix of the stack `(..., n, n)`,
    /// the lower factor `L` with `A = L L^H` (or with `upper` the upper factor `U = L^H`, `A =
    /// U^H U`; `^H` is the conjugate transpose, `^T` for real types), zeros in the other
    /// triangle, in the promoted type (integers and `bool` in `f64`). Only one triangle of `A`
    /// is read (the lower for `L`, the upper for `U`): `A` is taken to be symmetric (complex:
    /// Hermitian), as NumPy takes it. The copy read column-major is `A^T = conj(A)`, whose
    /// factor `conj(A) = U'^H U'` read row-major is `U'^T`, and `A = U'^T (U'^T)^H`: the lower
    /// factor itself, with no conjugation.
    ///
    /// Errors: a stack that is not square ([`Error::InvalidValue`](crate::Error::InvalidValue));
    /// a matrix that is not positive definite ([`cuda_libs::Error::Linalg`] with
    /// [`cuda_libs::LinalgFailure::NotPositiveDefinite`] and its index in the stack, read back
    /// before returning, NumPy's `LinAlgError`; the routine is `cuda_core_cholesky_small` for
    /// matrices up to 64 x 64, cuSOLVER's above). A pivot that is NaN fails as one that is not
    /// positive, as in LAPACK. `0 x 0` matrices give `0 x 0`.
    pub fn cholesky(&self, upper: bool) -> Result<DeviceArray<T::Factored>> {
        let stack = SquareStack::of("cholesky", self.shape())?;
        refuse_solver_in_capture(self.stream())?;
        let stream = self.stream().clone();
        if stack.is_empty() {
            return DeviceArray::zeros(&stream, stack.shape());
        }
        let (n, count) = (stack.n, stack.count());
        if let Some(order) = small::tile_order(n, <T::Factored as Element>::DTYPE) {
            let a = self.to_contiguous()?;
            return small_cholesky::factor::<T, T::Factored>(&a, &stack, order, upper);
        }
        let mut factor = self.astype::<T::Factored>().eval_on(&stream)?.reshape([count, n, n])?;
        let (fill, square) = (column_major_fill(upper), Matrix::square(n));
        with_solver(&stream, |solver| {
            if count == 1 {
                let bytes = solver.potrf_workspace::<T::Factored>(fill, square)?;
                let mut workspace = DeviceArray::<u8>::empty(&stream, [bytes])?;
                let workspace: Option<&mut dyn DeviceMemoryMut> = match bytes {
                    0 => None,
                    _ => Some(&mut workspace),
                };
                solver.potrf::<T::Factored>(fill, square, &mut factor, workspace)?;
            } else {
                solver.potrf_batched::<T::Factored>(fill, square, count, &mut factor)?;
            }
            Ok(solver.check_info()?)
        })?;
        let factor = match upper {
            true => factor.triu(0)?,
            false => factor.tril(0)?,
        };
        factor.reshape(stack.shape())
    }
}
