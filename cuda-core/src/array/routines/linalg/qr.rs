//! NumPy's `linalg.qr` over stacks `(..., m, n)`: cuSOLVER's `Xgeqrf` (Householder reflectors)
//! and `orgqr` (forming `Q`), one call each per matrix (cuSOLVER has no batched QR), on one
//! stream, with one read-back of the `info`s at the end.
//!
//! QR needs `A` itself column-major, so the copy (which the in-place routine needs anyway) is
//! the transposed one; `R` and `Q`, column-major in it, come back as transposed views: `R` made
//! compact by the `triu` that zeroes what lies under it (queued before `orgqr` overwrites the
//! reflectors), `Q` a view of the buffer `orgqr` wrote.

use cuda_driver::DeviceMemoryMut;
use cuda_libs::solver::{Matrix, Solver};

use super::handles::{refuse_solver_in_capture, with_solver};
use super::stacks::{LinalgInput, MatrixStack};
use crate::array::device_array::DeviceArray;
use crate::array::dtype::Element;
use crate::array::routines::math::ExprOps;
use crate::array::view::Slice;
use crate::error::Result;

/// `qr`'s result: `Q` and `R`.
type Qr<F> = (DeviceArray<F>, DeviceArray<F>);

/// `geqrf`'s results: the factored copies and the reflectors' scalars.
type Reflectors<F> = (DeviceArray<F>, DeviceArray<F>);

/// A routine's workspace, `None` when it needs none (0 bytes).
fn workspace_of(workspace: &mut DeviceArray<u8>) -> Option<&mut dyn DeviceMemoryMut> {
    match workspace.len() {
        0 => None,
        _ => Some(workspace),
    }
}

/// The `count` column-major `m x n` copies of `a` (`(count, n, m)` row-major), factored in place
/// by `geqrf`, and their reflectors' scalars (`(count, k)`).
fn factor<T: LinalgInput>(
    solver: &mut Solver,
    a: &DeviceArray<T>,
    stack: &MatrixStack,
) -> Result<Reflectors<T::Factored>> {
    let stream = a.stream().clone();
    let (count, m, n, k) = (stack.count(), stack.m, stack.n, stack.k());
    let copy = a
        .swapaxes(-2, -1)?
        .astype::<T::Factored>()
        .eval_on(&stream)?
        .reshape([count, n, m])?;
    let tau = DeviceArray::<T::Factored>::empty(&stream, [count, k])?;
    let shape = Matrix::new(m, n);
    let mut workspace = DeviceArray::<u8>::empty(&stream, [solver.geqrf_workspace::<T::Factored>(shape)?])?;
    for i in 0..count as i64 {
        let (mut matrix, mut scalars) = (copy.index_axis(0, i)?, tau.index_axis(0, i)?);
        solver.geqrf::<T::Factored>(shape, &mut matrix, &mut scalars, workspace_of(&mut workspace))?;
    }
    Ok((copy, tau))
}

/// `R` (its first `rows` rows, zeros under the diagonal) from the factored copies, compact.
fn upper<F: Element>(factored: &DeviceArray<F>, rows: usize) -> Result<DeviceArray<F>> {
    factored
        .swapaxes(-2, -1)?
        .slice(&[Slice::ALL, Slice::new(0, Some(rows))])?
        .triu(0)
}

/// `x` (`(count, r, c)`) in the stack's shape `batch + [r, c]`.
fn in_batch<F: Element>(x: DeviceArray<F>, batch: &[usize]) -> Result<DeviceArray<F>> {
    let (r, c) = (x.shape()[1], x.shape()[2]);
    match batch.len() {
        0 => x.index_axis(0, 0),
        1 => Ok(x),
        _ => x.reshape([batch, &[r, c]].concat()),
    }
}

impl<T: LinalgInput> DeviceArray<T> {
    /// NumPy's `linalg.qr(a, mode)` with `mode='reduced'` (`complete == false`: `Q` `(..., m,
    /// k)`, `R` `(..., k, n)`, `k = min(m, n)`) or `'complete'` (`Q` `(..., m, m)`, `R` `(...,
    /// m, n)`): `A = Q R` with orthonormal columns in `Q` and `R` upper triangular, for each
    /// matrix of the stack, in the promoted type. `Q` is a transposed view. Under two
    /// dimensions is [`Error::InvalidValue`](crate::Error::InvalidValue).
    pub fn qr(&self, complete: bool) -> Result<Qr<T::Factored>> {
        let stack = MatrixStack::of("qr", self.shape())?;
        refuse_solver_in_capture(self.stream())?;
        let (count, m, n, k) = (stack.count(), stack.m, stack.n, stack.k());
        let stream = self.stream().clone();
        let (q_cols, r_rows) = if complete { (m, m) } else { (k, k) };
        if count == 0 || k == 0 {
            let q = match complete {
                true => DeviceArray::<T::Factored>::identity(&stream, m)?
                    .broadcast_to([&stack.batch[..], &[m, m]].concat())?
                    .try_clone()?,
                false => DeviceArray::zeros(&stream, [&stack.batch[..], &[m, k]].concat())?,
            };
            return Ok((
                q,
                DeviceArray::zeros(&stream, [&stack.batch[..], &[r_rows, n]].concat())?,
            ));
        }
        let (q, r) = with_solver(&stream, |solver| {
            let (factored, tau) = factor(solver, self, &stack)?;
            let r = upper(&factored, r_rows)?;
            // Q's buffer: the reflectors' own columns (the first q_cols), or for a complete Q of
            // a tall matrix an m x m buffer holding them in its first n columns.
            let q = match q_cols > n {
                false => factored.slice(&[Slice::ALL, Slice::new(0, Some(q_cols))])?,
                true => {
                    let q = DeviceArray::<T::Factored>::zeros(&stream, [count, m, m])?;
                    q.slice(&[Slice::ALL, Slice::new(0, Some(n))])?.copy_from(&factored)?;
                    q
                }
            };
            let shape = Matrix::new(m, q_cols);
            let bytes = solver.orgqr_workspace::<T::Factored>(shape, k)?;
            let mut workspace = DeviceArray::<u8>::empty(&stream, [bytes])?;
            for i in 0..count as i64 {
                let (mut matrix, scalars) = (q.index_axis(0, i)?, tau.index_axis(0, i)?);
                solver.orgqr::<T::Factored>(shape, k, &mut matrix, &scalars, workspace_of(&mut workspace))?;
            }
            solver.check_info()?;
            Ok((q, r))
        })?;
        Ok((in_batch(q.swapaxes(-2, -1)?, &stack.batch)?, in_batch(r, &stack.batch)?))
    }

    /// NumPy's `linalg.qr(a, mode='r')`: `R` alone, `(..., k, n)`, without forming `Q`.
    pub fn qr_r(&self) -> Result<DeviceArray<T::Factored>> {
        let stack = MatrixStack::of("qr", self.shape())?;
        refuse_solver_in_capture(self.stream())?;
        let (count, n, k) = (stack.count(), stack.n, stack.k());
        let stream = self.stream().clone();
        if count == 0 || k == 0 {
            return DeviceArray::zeros(&stream, [&stack.batch[..], &[k, n]].concat());
        }
        let r = with_solver(&stream, |solver| {
            let (factored, _tau) = factor(solver, self, &stack)?;
            let r = upper(&factored, k)?;
            solver.check_info()?;
            Ok(r)
        })?;
        in_batch(r, &stack.batch)
    }
}
