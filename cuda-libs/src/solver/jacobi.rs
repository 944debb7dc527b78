//! The singular value decomposition of one matrix by Jacobi rotations (`cusolverDn<t>gesvdj`):
//! the same result as [`Solver::gesvd`]'s QR algorithm, with more parallel work, so faster on
//! large matrices; any shape (no `m >= n`), and `V` rather than `V^H`.

use std::mem::size_of;

use cuda_driver::{DeviceBuffer, DeviceMemoryMut};

use super::dense::{device_ptr, eig_mode, vector_buffers};
use super::info::Meaning;
use super::{check, to_int, Matrix, Solver, SolverScalar, SvdVectors};
use crate::Result;

/// `gesvdj`'s `econ` flag and the columns of `U` and `V` it writes for `vectors`: all `m` and
/// `n` ([`SvdVectors::All`]), else the first `min(m, n)` (without vectors cuSOLVER is given
/// scratch of the economic size).
fn jacobi_columns(vectors: SvdVectors, a: Matrix) -> (i32, usize, usize) {
    let k = a.rows.min(a.cols);
    match vectors {
        SvdVectors::All => (0, a.rows, a.cols),
        SvdVectors::Thin | SvdVectors::None => (1, k, k),
    }
}

impl Solver {
    /// Device workspace bytes of `cusolverDn<t>gesvdj` for `a` and `vectors`.
    pub fn gesvdj_workspace<T: SolverScalar>(&mut self, vectors: SvdVectors, a: Matrix) -> Result<usize> {
        a.span("A")?;
        let (econ, _, _) = jacobi_columns(vectors, a);
        let (m, n, lda) = (to_int("m", a.rows)?, to_int("n", a.cols)?, to_int("lda", a.ld)?);
        let (ldu, ldv) = (to_int("ldu", a.rows.max(1))?, to_int("ldv", a.cols.max(1))?);
        let params = self.gesvdj_params()?;
        let query = T::gesvdj_buffer_size()?;
        let handle = self.raw();
        let with = vectors != SvdVectors::None;
        self.query_lwork::<T>("cusolverDn<t>gesvdj_bufferSize", |lwork| {
            // SAFETY: a size query on a live handle; the matrix pointers are not read (null).
            unsafe {
                query(
                    handle,
                    eig_mode(with),
                    econ,
                    m,
                    n,
                    std::ptr::null(),
                    lda,
                    std::ptr::null(),
                    std::ptr::null(),
                    ldu,
                    std::ptr::null(),
                    ldv,
                    lwork,
                    params,
                )
            }
        })
    }

    /// Queues the singular value decomposition `A = U S V^H` of `a` (`m x n`, any shape) by
    /// Jacobi rotations (`cusolverDn<t>gesvdj`, cuSOLVER's default tolerance and sweeps). `a` is
    /// destroyed; `s` receives the `min(m, n)` singular values in descending order (of
    /// [`SolverScalar::Real`]); `u` and `v` (`V`, not `V^H`; leading dimensions `m` and `n`) the
    /// vectors [`SvdVectors`] asks for: `m x m` and `n x n` with [`SvdVectors::All`], `m x k`
    /// and `n x k` with [`SvdVectors::Thin`], both `None` with [`SvdVectors::None`]. A
    /// decomposition that did not converge is [`Error::Linalg`](crate::Error::Linalg) from [`Solver::check_info`].
    #[allow(clippy::too_many_arguments)]
    pub fn gesvdj<T: SolverScalar>(
        &mut self,
        vectors: SvdVectors,
        a_shape: Matrix,
        a: &mut (impl DeviceMemoryMut + ?Sized),
        s: &mut (impl DeviceMemoryMut + ?Sized),
        u: Option<&mut dyn DeviceMemoryMut>,
        v: Option<&mut dyn DeviceMemoryMut>,
        workspace: Option<&mut dyn DeviceMemoryMut>,
    ) -> Result<()> {
        let u: Option<&dyn DeviceMemoryMut> = u.map(|b| &*b);
        let v: Option<&dyn DeviceMemoryMut> = v.map(|b| &*b);
        vector_buffers("gesvdj", vectors, (u.is_some(), v.is_some()), "U and V")?;
        let device_bytes = self.gesvdj_workspace::<T>(vectors, a_shape)?;
        let (m, n) = (a_shape.rows, a_shape.cols);
        if m == 0 || n == 0 {
            return Ok(());
        }
        let call = T::gesvdj()?;
        let (econ, u_cols, v_cols) = jacobi_columns(vectors, a_shape);
        let a_bytes = a_shape.span("A")? * size_of::<T>();
        let s_bytes = m.min(n) * size_of::<T::Real>();
        let u_bytes = m * u_cols * size_of::<T>();
        let v_bytes = n * v_cols * size_of::<T>();
        // Without vectors, U and V go to scratch of the economic size (allocated and freed in
        // the stream's order): cuSOLVER's documentation does not promise not to touch them.
        let scratch = match vectors {
            SvdVectors::None => Some((
                DeviceBuffer::<T>::alloc_async(&self.stream, m * u_cols)?,
                DeviceBuffer::<T>::alloc_async(&self.stream, n * v_cols)?,
            )),
            _ => None,
        };
        let (u, v): (Option<&dyn DeviceMemoryMut>, Option<&dyn DeviceMemoryMut>) = match &scratch {
            Some((u, v)) => (Some(u), Some(v)),
            None => (u, v),
        };
        let params = self.gesvdj_params()?;
        let operands = self.svd_operands::<T>(
            (&*a, a_bytes),
            (&*s, s_bytes),
            [("U", u, u_bytes), ("V", v, v_bytes)],
            (workspace, device_bytes),
        )?;
        let (a_ptr, s_ptr, u_ptr, v_ptr) = (operands.a, operands.s, operands.u, operands.v);
        let workspace_ptr = operands.workspace;
        let handle = self.raw();
        let with = vectors != SvdVectors::None;
        let (m, n, lda) = (to_int("m", m)?, to_int("n", n)?, to_int("lda", a_shape.ld)?);
        let lwork = to_int("lwork", device_bytes / size_of::<T>())?;
        self.queue("cusolverDn<t>gesvdj", Meaning::NoConvergence, 1, 0, |info, _| {
            // SAFETY: the handle is live and its context current; A spans its shape, S the
            // singular values, U and V (the caller's or scratch) the columns `econ` asks for with
            // leading dimensions m and n, the workspace the queried bytes, `info` one slot; none
            // overlaps another, and all are borrowed with their stream uses open until the call
            // returns.
            check("cusolverDn<t>gesvdj", unsafe {
                call(
                    handle,
                    eig_mode(with),
                    econ,
                    m,
                    n,
                    device_ptr(a_ptr).cast(),
                    lda,
                    device_ptr(s_ptr).cast(),
                    device_ptr(u_ptr).cast(),
                    m,
                    device_ptr(v_ptr).cast(),
                    n,
                    device_ptr(workspace_ptr).cast(),
                    lwork,
                    info,
                    params,
                )
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn economic_columns_are_the_smaller_side() {
        let wide = Matrix::new(3, 5);
        assert_eq!(jacobi_columns(SvdVectors::All, wide), (0, 3, 5));
        assert_eq!(jacobi_columns(SvdVectors::Thin, wide), (1, 3, 3));
        assert_eq!(jacobi_columns(SvdVectors::None, Matrix::new(7, 2)), (1, 2, 2));
    }
}
