//! NumPy's `linalg.svdvals` over stacks `(..., m, n)`, and what is computed from singular values:
//! the matrix 2-norm, -2-norm and nuclear norm, `cond` and `matrix_rank`.
//!
//! A stack of matrices up to [`JACOBI_BATCHED_MAX`] on each side is one Jacobi call for the
//! whole stack (`gesvdjBatched`); one matrix, or a stack of larger ones, goes through
//! cuSOLVER's `Xgesvd`, one call per matrix (no batched form), with one read-back at the end.
//! cuSOLVER's `gesvd` takes matrices with at least as many rows as columns: a row-major `m x n`
//! copy with `m <= n` is such a matrix read column-major (its transpose, whose singular values
//! are the same), and a taller one is copied transposed instead: one copy either way, which
//! the destructive routine needs anyway.

use std::any::Any;

use cuda_driver::DeviceMemoryMut;
use cuda_libs::solver::{SvdVectors, JACOBI_BATCHED_MAX};

use super::handles::with_solver;
use super::stacks::{LinalgInput, MatrixStack, SolverElement};
use crate::array::device_array::DeviceArray;
use crate::array::dtype::Element;
use crate::array::routines::math::ExprOps;
use crate::error::Result;

/// The singular values of `stack` (`(count, k)`, descending), none of its extents 0.
fn singular_values<T: LinalgInput>(a: &DeviceArray<T>, stack: &MatrixStack) -> Result<DeviceArray<T::Factored>> {
    let stream = a.stream().clone();
    let (count, k) = (stack.count(), stack.k());
    let (operand, as_is) = stack.svd_operand();
    let source = match as_is {
        true => a.to_view(),
        false => a.swapaxes(-2, -1)?,
    };
    let mut copy = source
        .astype::<T::Factored>()
        .eval_on(&stream)?
        .reshape([count, operand.cols, operand.rows])?;
    let mut s = DeviceArray::<T::Factored>::empty(&stream, [count, k])?;
    with_solver(&stream, |solver| {
        if count > 1 && stack.m.max(stack.n) <= JACOBI_BATCHED_MAX {
            let bytes = solver.gesvdj_batched_workspace::<T::Factored>(false, operand, count)?;
            let mut workspace = DeviceArray::<u8>::empty(&stream, [bytes])?;
            let workspace: Option<&mut dyn DeviceMemoryMut> = match bytes {
                0 => None,
                _ => Some(&mut workspace),
            };
            solver.gesvdj_batched::<T::Factored>(operand, count, &mut copy, &mut s, None, None, workspace)?;
        } else {
            let bytes = solver.gesvd_workspace::<T::Factored>(SvdVectors::None, operand)?;
            let mut workspace = DeviceArray::<u8>::empty(&stream, [bytes])?;
            for i in 0..count {
                let mut matrix = copy.index_axis(0, i as i64)?;
                let mut values = s.index_axis(0, i as i64)?;
                let workspace: Option<&mut dyn DeviceMemoryMut> = match bytes {
                    0 => None,
                    _ => Some(&mut workspace),
                };
                solver.gesvd::<T::Factored>(
                    SvdVectors::None,
                    operand,
                    &mut matrix,
                    &mut values,
                    None,
                    None,
                    workspace,
                )?;
            }
        }
        Ok(solver.check_info()?)
    })?;
    Ok(s)
}

/// The singular values of an `f32` or `f64` array, in its own type, for callers generic over
/// more types (the matrix norms of `linalg_norm`); `None` for any other type.
pub(super) fn singular_values_in_own_type<T: Element>(a: &DeviceArray<T>) -> Option<Result<DeviceArray<T>>> {
    fn same<S: Element, T: Element>(s: DeviceArray<S>) -> DeviceArray<T> {
        let boxed: Box<dyn Any> = Box::new(s);
        *boxed.downcast::<DeviceArray<T>>().expect("S and T are one type")
    }
    let any: &dyn Any = a;
    if let Some(a) = any.downcast_ref::<DeviceArray<f32>>() {
        return Some(a.svdvals().map(same));
    }
    any.downcast_ref::<DeviceArray<f64>>().map(|a| a.svdvals().map(same))
}

impl<T: LinalgInput> DeviceArray<T> {
    /// NumPy's `linalg.svdvals`: the singular values of each matrix of the stack `(..., m, n)`,
    /// descending, of shape `(..., min(m, n))`, in the promoted type. Under two dimensions is
    /// [`Error::InvalidValue`](crate::Error::InvalidValue); an SVD that did not converge is
    /// [`cuda_libs::Error::Linalg`] with [`cuda_libs::LinalgFailure::NoConvergence`] and the
    /// matrix's index. Empty matrices give empty results.
    pub fn svdvals(&self) -> Result<DeviceArray<T::Factored>> {
        let stack = MatrixStack::of("svdvals", self.shape())?;
        let shape = [&stack.batch[..], &[stack.k()]].concat();
        if stack.count() == 0 || stack.k() == 0 {
            return DeviceArray::zeros(self.stream(), shape);
        }
        singular_values(self, &stack)?.reshape(shape)
    }

    /// NumPy's `linalg.cond(x)` (the 2-norm condition number, `ord=None`): the greatest
    /// singular value over the least, of shape `self.shape[:-2]` (infinite for a singular
    /// matrix, as NumPy's).
    pub fn cond(&self) -> Result<DeviceArray<T::Factored>> {
        let s = self.svdvals()?;
        let greatest = s.max_axes(-1, false)?;
        let least = s.min_axes(-1, false)?;
        (&greatest / &least).eval()
    }

    /// NumPy's `linalg.matrix_rank(A)` with its default tolerance: the number of singular
    /// values above `S.max() * max(M, N) * eps` per matrix, of shape `self.shape[:-2]`
    /// (`i64`). A 1-D array is a vector: its rank is 1 unless it is all zeros; 0-d is
    /// [`Error::InvalidValue`](crate::Error::InvalidValue).
    pub fn matrix_rank(&self) -> Result<DeviceArray<i64>> {
        if self.ndim() == 1 {
            return self.ne(0).any()?.astype::<i64>().eval();
        }
        let stack = MatrixStack::of("matrix_rank", self.shape())?;
        let s = self.svdvals()?;
        let eps = <T::Factored as SolverElement>::EPSILON;
        let scale = stack.m.max(stack.n) as f64 * eps;
        let tolerance = s.max_axes([-1], true)?;
        (&s).gt(&tolerance * scale).count_nonzero_axes(-1, false)
    }
}
