//! The batched routines of [`Solver`]: Jacobi eigenvalues and SVDs of many small matrices
//! (`syevjBatched`, `gesvdjBatched`), batched Cholesky (`potrfBatched`), and cuBLAS's batched LU
//! (`getrfBatched`, `getrsBatched`, `getriBatched`). Every batch is `count` matrices of one
//! [`Matrix`] shape stored one after another, `ld * cols` elements apart; each `info` names its
//! matrix's index in the batch ([`Error::Linalg`]).

use std::ffi::c_void;

use cuda_sys::cublas::cublasOperation_t;
use std::mem::size_of;

use cuda_driver::{Access, DeviceBuffer, DeviceMemory, DeviceMemoryMut, StreamUse};
use cuda_sys::driver::CUdeviceptr;

use super::dense::{apart, device_ptr, eig_mode, rhs_rows};
use super::info::Meaning;
use super::{check, to_int, Fill, Matrix, Solver, SolverScalar};
use crate::{Error, LinalgFailure, Result};

/// The most rows and columns the Jacobi batched routines take (cuSOLVER's limit).
pub const JACOBI_BATCHED_MAX: usize = 32;

/// A batch size as the routines' `int`, at least 1.
fn batch_count(count: usize) -> Result<i32> {
    if count == 0 {
        return Err(Error::InvalidValue(
            "a batch of 0 matrices: count must be at least 1".into(),
        ));
    }
    to_int("batch count", count)
}

fn jacobi_size(name: &str, size: usize) -> Result<()> {
    if size > JACOBI_BATCHED_MAX {
        return Err(Error::InvalidValue(format!(
            "{name}: cuSOLVER's batched Jacobi routines take matrices up to {JACOBI_BATCHED_MAX} x \
             {JACOBI_BATCHED_MAX}; this one has size {size} (use the routine of one matrix in a loop)"
        )));
    }
    Ok(())
}

/// The device array of the `count` matrices' addresses that the pointer-array routines take:
/// allocated from the stream's pool and uploaded in the solver's stream's order (the driver
/// stages the host addresses before the copy call returns), then used on that stream and freed
/// in its order after the routine: no allocation or free that waits for the device.
struct PointerArray {
    buffer: DeviceBuffer<u64>,
}

impl PointerArray {
    fn new(solver: &Solver, base: CUdeviceptr, stride_bytes: usize, count: usize) -> Result<PointerArray> {
        let addresses: Vec<u64> = (0..count).map(|i| base + (i * stride_bytes) as u64).collect();
        let mut buffer = DeviceBuffer::<u64>::alloc_async(&solver.stream, count)?;
        buffer.copy_from_host_async(&addresses, &solver.stream)?;
        Ok(PointerArray { buffer })
    }

    fn begin(&self, solver: &Solver) -> Result<(*mut *mut c_void, StreamUse<'_>)> {
        let used = self.buffer.begin_use(&solver.stream, Access::Read)?;
        Ok((self.buffer.device_ptr() as usize as *mut *mut c_void, used))
    }
}

impl Solver {
    fn syevj_params(&mut self) -> Result<cuda_sys::cusolver::syevjInfo_t> {
        if self.syevj.is_null() {
            let create = cuda_sys::cusolver()?.cusolverDnCreateSyevjInfo()?;
            // SAFETY: a valid out-pointer; the parameters are destroyed with the handle.
            check("cusolverDnCreateSyevjInfo", unsafe { create(&mut self.syevj) })?;
        }
        Ok(self.syevj)
    }

    pub(super) fn gesvdj_params(&mut self) -> Result<cuda_sys::cusolver::gesvdjInfo_t> {
        if self.gesvdj.is_null() {
            let create = cuda_sys::cusolver()?.cusolverDnCreateGesvdjInfo()?;
            // SAFETY: a valid out-pointer; the parameters are destroyed with the handle.
            check("cusolverDnCreateGesvdjInfo", unsafe { create(&mut self.gesvdj) })?;
        }
        Ok(self.gesvdj)
    }

    /// Device workspace bytes of `syevjBatched` (`heevjBatched` for complex types) for `count`
    /// matrices of `a`.
    pub fn syevj_batched_workspace<T: SolverScalar>(
        &mut self,
        vectors: bool,
        fill: Fill,
        a: Matrix,
        count: usize,
    ) -> Result<usize> {
        let n = to_int("n", a.order("A")?)?;
        jacobi_size("syevjBatched", a.rows)?;
        a.span("A")?;
        let (batch, lda) = (batch_count(count)?, to_int("lda", a.ld)?);
        let params = self.syevj_params()?;
        let query = T::syevj_batched_buffer_size()?;
        let handle = self.raw();
        self.query_lwork::<T>("cusolverDn<t>syevjBatched_bufferSize", |lwork| {
            // SAFETY: a size query on a live handle; the matrix pointers are not read (null).
            unsafe {
                query(
                    handle,
                    eig_mode(vectors),
                    fill.raw(),
                    n,
                    std::ptr::null(),
                    lda,
                    std::ptr::null(),
                    lwork,
                    params,
                    batch,
                )
            }
        })
    }

    /// Queues the eigenvalues (ascending, `n` per matrix into `w`, of [`SolverScalar::Real`])
    /// and, with `vectors`, the eigenvectors (into `a`) of `count` symmetric (Hermitian) matrices
    /// of `a` at once, by Jacobi rotations (`cusolverDn<t>syevjBatched`, `<t>heevjBatched` for
    /// complex types, matrices up to [`JACOBI_BATCHED_MAX`]). A matrix that did not converge is
    /// [`Error::Linalg`] from [`Solver::check_info`], with its index.
    #[allow(clippy::too_many_arguments)]
    pub fn syevj_batched<T: SolverScalar>(
        &mut self,
        vectors: bool,
        fill: Fill,
        a_shape: Matrix,
        count: usize,
        a: &mut (impl DeviceMemoryMut + ?Sized),
        w: &mut (impl DeviceMemoryMut + ?Sized),
        workspace: Option<&mut dyn DeviceMemoryMut>,
    ) -> Result<()> {
        let device_bytes = self.syevj_batched_workspace::<T>(vectors, fill, a_shape, count)?;
        let n = a_shape.rows;
        if n == 0 {
            return Ok(());
        }
        let call = T::syevj_batched()?;
        let a_bytes = a_shape.batch_span("A", count)? * size_of::<T>();
        let w_bytes = n * count * size_of::<T::Real>();
        let params = self.syevj_params()?;
        let operands = self.eigen_operands::<T>((&*a, a_bytes), (&*w, w_bytes), (workspace, device_bytes))?;
        let (a_ptr, w_ptr, workspace_ptr) = (operands.a, operands.w, operands.workspace);
        let handle = self.raw();
        let (n, lda) = (to_int("n", n)?, to_int("lda", a_shape.ld)?);
        let lwork = to_int("lwork", device_bytes / size_of::<T>())?;
        let batch = to_int("count", count)?;
        self.queue(
            "cusolverDn<t>syevjBatched",
            Meaning::NoConvergence,
            count,
            0,
            |info, _| {
                // SAFETY: the handle is live and its context current; A holds `count` matrices one
                // after another, W `n` values per matrix, the workspace the queried bytes, `info`
                // one slot per matrix; all are borrowed with their stream uses open until the call
                // returns.
                check("cusolverDn<t>syevjBatched", unsafe {
                    call(
                        handle,
                        eig_mode(vectors),
                        fill.raw(),
                        n,
                        device_ptr(a_ptr).cast(),
                        lda,
                        device_ptr(w_ptr).cast(),
                        device_ptr(workspace_ptr).cast(),
                        lwork,
                        info,
                        params,
                        batch,
                    )
                })
            },
        )
    }

    /// Device workspace bytes of `gesvdjBatched` for `count` matrices of `a`.
    pub fn gesvdj_batched_workspace<T: SolverScalar>(
        &mut self,
        vectors: bool,
        a: Matrix,
        count: usize,
    ) -> Result<usize> {
        jacobi_size("gesvdjBatched", a.rows.max(a.cols))?;
        a.span("A")?;
        let (m, n, lda) = (to_int("m", a.rows)?, to_int("n", a.cols)?, to_int("lda", a.ld)?);
        let (ldu, ldv) = (to_int("ldu", a.rows.max(1))?, to_int("ldv", a.cols.max(1))?);
        let batch = batch_count(count)?;
        let params = self.gesvdj_params()?;
        let query = T::gesvdj_batched_buffer_size()?;
        let handle = self.raw();
        self.query_lwork::<T>("cusolverDn<t>gesvdjBatched_bufferSize", |lwork| {
            // SAFETY: a size query on a live handle; the pointers are not read (null).
            unsafe {
                query(
                    handle,
                    eig_mode(vectors),
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
                    batch,
                )
            }
        })
    }

    /// Queues the SVDs `A_i = U_i S_i V_i^H` of `count` matrices of `a` (`m x n`, both up to
    /// [`JACOBI_BATCHED_MAX`]) at once, by Jacobi rotations (`cusolverDn<t>gesvdjBatched`): `s`
    /// receives `min(m, n)` values per matrix (descending, of [`SolverScalar::Real`]), and with
    /// `vectors` `u` the `m x m` and `v` the `n x n` matrices (packed, one after another; both
    /// `None` without: cuSOLVER writes them anyway, so scratch of their size is allocated for the
    /// call). `a` is destroyed. A matrix that did not converge is [`Error::Linalg`]
    /// from [`Solver::check_info`], with its index.
    #[allow(clippy::too_many_arguments)]
    pub fn gesvdj_batched<T: SolverScalar>(
        &mut self,
        a_shape: Matrix,
        count: usize,
        a: &mut (impl DeviceMemoryMut + ?Sized),
        s: &mut (impl DeviceMemoryMut + ?Sized),
        u: Option<&mut dyn DeviceMemoryMut>,
        v: Option<&mut dyn DeviceMemoryMut>,
        workspace: Option<&mut dyn DeviceMemoryMut>,
    ) -> Result<()> {
        let u: Option<&dyn DeviceMemoryMut> = u.map(|b| &*b);
        let v: Option<&dyn DeviceMemoryMut> = v.map(|b| &*b);
        if u.is_some() != v.is_some() {
            return Err(Error::InvalidValue(
                "gesvdjBatched computes U and V together: give both buffers or neither".into(),
            ));
        }
        let vectors = u.is_some();
        let device_bytes = self.gesvdj_batched_workspace::<T>(vectors, a_shape, count)?;
        let (m, n) = (a_shape.rows, a_shape.cols);
        if m == 0 || n == 0 {
            return Ok(());
        }
        let call = T::gesvdj_batched()?;
        let a_bytes = a_shape.batch_span("A", count)? * size_of::<T>();
        let s_bytes = m.min(n) * count * size_of::<T::Real>();
        let u_bytes = m * m * count * size_of::<T>();
        let v_bytes = n * n * count * size_of::<T>();
        // Without vectors cuSOLVER still writes U and V (null ones fault with an illegal
        // address, which poisons the context): they go to scratch buffers of their full size,
        // allocated and freed in the stream's order (no cuMemFree, which would wait for the
        // whole device, per call).
        let scratch = match vectors {
            true => None,
            false => Some((
                DeviceBuffer::<T>::alloc_async(&self.stream, m * m * count)?,
                DeviceBuffer::<T>::alloc_async(&self.stream, n * n * count)?,
            )),
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
        let (m, n, lda) = (to_int("m", m)?, to_int("n", n)?, to_int("lda", a_shape.ld)?);
        let lwork = to_int("lwork", device_bytes / size_of::<T>())?;
        let batch = to_int("count", count)?;
        self.queue(
            "cusolverDn<t>gesvdjBatched",
            Meaning::NoConvergence,
            count,
            0,
            |info, _| {
                // SAFETY: as in `syevj_batched`; S, U and V hold their packed matrices per matrix of
                // the batch (U and V the scratch buffers without vectors) and overlap nothing else.
                check("cusolverDn<t>gesvdjBatched", unsafe {
                    call(
                        handle,
                        eig_mode(vectors),
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
                        batch,
                    )
                })
            },
        )
    }

    /// Queues the Cholesky factorisations of `count` symmetric (Hermitian) positive definite
    /// matrices of `a` in place (`cusolverDn<t>potrfBatched`). A matrix that is not positive
    /// definite is [`Error::Linalg`] from [`Solver::check_info`], with its index.
    pub fn potrf_batched<T: SolverScalar>(
        &mut self,
        fill: Fill,
        a_shape: Matrix,
        count: usize,
        a: &mut (impl DeviceMemoryMut + ?Sized),
    ) -> Result<()> {
        let n = a_shape.order("A")?;
        let batch = batch_count(count)?;
        let a_bytes = a_shape.batch_span("A", count)? * size_of::<T>();
        if n == 0 {
            return Ok(());
        }
        let call = T::potrf_batched()?;
        let a_ptr = self.address::<T, _>("A", &*a, a_bytes)?;
        let pointers = PointerArray::new(self, a_ptr, a_shape.stride() * size_of::<T>(), count)?;
        let handle = self.raw();
        let (array, _array_use) = pointers.begin(self)?;
        let _a_use = a.begin_use(&self.stream, Access::Write)?;
        let (n, lda) = (to_int("n", n)?, to_int("lda", a_shape.ld)?);
        self.queue(
            "cusolverDn<t>potrfBatched",
            Meaning::NotPositiveDefinite,
            count,
            0,
            |info, _| {
                // SAFETY: the handle is live and its context current; the pointer array holds
                // `count` addresses of matrices inside A (checked to span them), `info` one slot per
                // matrix.
                check("cusolverDn<t>potrfBatched", unsafe {
                    call(handle, fill.raw(), n, array.cast(), lda, info, batch)
                })
            },
        )
    }

    /// Queues the LU factorisations with partial pivoting of `count` square matrices of `a` in
    /// place (cuBLAS's `cublas<t>getrfBatched`): `n` pivots (`i32`, 1-based) per matrix into
    /// `pivots`. A singular matrix is [`Error::Linalg`] from [`Solver::check_info`], with its
    /// index.
    pub fn getrf_batched<T: SolverScalar>(
        &mut self,
        a_shape: Matrix,
        count: usize,
        a: &mut (impl DeviceMemoryMut + ?Sized),
        pivots: &mut (impl DeviceMemoryMut + ?Sized),
    ) -> Result<()> {
        let n = a_shape.order("A")?;
        let batch = batch_count(count)?;
        let a_bytes = a_shape.batch_span("A", count)? * size_of::<T>();
        if n == 0 {
            return Ok(());
        }
        let call = T::getrf_batched()?;
        let pivot_bytes = n * count * size_of::<i32>();
        let a_ptr = self.address::<T, _>("A", &*a, a_bytes)?;
        let pivots_ptr = self.address::<i32, _>("pivots", &*pivots, pivot_bytes)?;
        apart(("A", a_ptr, a_bytes), ("pivots", pivots_ptr, pivot_bytes))?;
        let pointers = PointerArray::new(self, a_ptr, a_shape.stride() * size_of::<T>(), count)?;
        let blas = self.blas()?.raw_handle();
        let (array, _array_use) = pointers.begin(self)?;
        let _a_use = a.begin_use(&self.stream, Access::Write)?;
        let _pivots_use = pivots.begin_use(&self.stream, Access::Write)?;
        let (n, lda) = (to_int("n", n)?, to_int("lda", a_shape.ld)?);
        self.queue("cublas<t>getrfBatched", Meaning::Singular, count, 0, |info, _| {
            // SAFETY: cuBLAS's handle is live on this stream and context; the pointer array
            // holds `count` addresses of matrices inside A, the pivots `n` `int`s per matrix,
            // `info` one slot per matrix.
            let status = unsafe {
                call(
                    blas,
                    n,
                    array as *const *mut T::BlasRaw,
                    lda,
                    pivots_ptr as usize as *mut i32,
                    info,
                    batch,
                )
            };
            crate::blas::check("cuBLAS", "cublas<t>getrfBatched", status.0)
        })
    }

    /// Queues the solves `A_i X_i = B_i` (or `A_i^T X_i = B_i`, transposed without conjugation)
    /// from the LU factors and pivots of [`Solver::getrf_batched`] (`cublas<t>getrsBatched`):
    /// each `B_i` (`n x nrhs`) is overwritten with `X_i`. cuBLAS reports only argument errors
    /// here, on the host, at once.
    #[allow(clippy::too_many_arguments)]
    pub fn getrs_batched<T: SolverScalar>(
        &mut self,
        transpose: bool,
        a_shape: Matrix,
        count: usize,
        a: &(impl DeviceMemory + ?Sized),
        pivots: &(impl DeviceMemory + ?Sized),
        b_shape: Matrix,
        b: &mut (impl DeviceMemoryMut + ?Sized),
    ) -> Result<()> {
        let n = a_shape.order("A")?;
        rhs_rows("B", b_shape, n)?;
        let batch = batch_count(count)?;
        let a_bytes = a_shape.batch_span("A", count)? * size_of::<T>();
        let b_bytes = b_shape.batch_span("B", count)? * size_of::<T>();
        if n == 0 || b_shape.cols == 0 {
            return Ok(());
        }
        let call = T::getrs_batched()?;
        let pivot_bytes = n * count * size_of::<i32>();
        let a_ptr = self.address::<T, _>("A", a, a_bytes)?;
        let pivots_ptr = self.address::<i32, _>("pivots", pivots, pivot_bytes)?;
        let b_ptr = self.address::<T, _>("B", &*b, b_bytes)?;
        apart(("A", a_ptr, a_bytes), ("B", b_ptr, b_bytes))?;
        apart(("pivots", pivots_ptr, pivot_bytes), ("B", b_ptr, b_bytes))?;
        let a_pointers = PointerArray::new(self, a_ptr, a_shape.stride() * size_of::<T>(), count)?;
        let b_pointers = PointerArray::new(self, b_ptr, b_shape.stride() * size_of::<T>(), count)?;
        let blas = self.blas()?.raw_handle();
        let (a_array, _a_array_use) = a_pointers.begin(self)?;
        let (b_array, _b_array_use) = b_pointers.begin(self)?;
        let _a_use = a.begin_use(&self.stream, Access::Read)?;
        let _pivots_use = pivots.begin_use(&self.stream, Access::Read)?;
        let _b_use = b.begin_use(&self.stream, Access::Write)?;
        self.stream.context().set_current()?;
        let trans = if transpose {
            cublasOperation_t::CUBLAS_OP_T
        } else {
            cublasOperation_t::CUBLAS_OP_N
        };
        let mut info = 0;
        // SAFETY: as in `getrf_batched`; B's pointer array holds `count` addresses of matrices
        // inside B; `info` is a host `int` (this routine's only host output).
        let status = unsafe {
            call(
                blas,
                trans,
                to_int("n", n)?,
                to_int("nrhs", b_shape.cols)?,
                a_array as *const *const T::BlasRaw,
                to_int("lda", a_shape.ld)?,
                pivots_ptr as usize as *const i32,
                b_array as *const *mut T::BlasRaw,
                to_int("ldb", b_shape.ld)?,
                &mut info,
                batch,
            )
        };
        crate::blas::check("cuBLAS", "cublas<t>getrsBatched", status.0)?;
        if info < 0 {
            return Err(Error::Linalg {
                routine: "cublas<t>getrsBatched",
                index: 0,
                failure: LinalgFailure::InvalidArgument {
                    position: -i64::from(info),
                },
            });
        }
        Ok(())
    }

    /// Queues the inverses of `count` matrices from the LU factors and pivots of
    /// [`Solver::getrf_batched`] into `c` (`n x n` each, out of place: `cublas<t>getriBatched`).
    /// A singular matrix is [`Error::Linalg`] from [`Solver::check_info`], with its index.
    #[allow(clippy::too_many_arguments)]
    pub fn getri_batched<T: SolverScalar>(
        &mut self,
        a_shape: Matrix,
        count: usize,
        a: &(impl DeviceMemory + ?Sized),
        pivots: &(impl DeviceMemory + ?Sized),
        c_shape: Matrix,
        c: &mut (impl DeviceMemoryMut + ?Sized),
    ) -> Result<()> {
        let n = a_shape.order("A")?;
        if c_shape.order("C")? != n {
            return Err(Error::InvalidValue(format!(
                "C must be {n} x {n} like A; it is {} x {}",
                c_shape.rows, c_shape.cols
            )));
        }
        let batch = batch_count(count)?;
        let a_bytes = a_shape.batch_span("A", count)? * size_of::<T>();
        let c_bytes = c_shape.batch_span("C", count)? * size_of::<T>();
        if n == 0 {
            return Ok(());
        }
        let call = T::getri_batched()?;
        let pivot_bytes = n * count * size_of::<i32>();
        let a_ptr = self.address::<T, _>("A", a, a_bytes)?;
        let pivots_ptr = self.address::<i32, _>("pivots", pivots, pivot_bytes)?;
        let c_ptr = self.address::<T, _>("C", &*c, c_bytes)?;
        apart(("A", a_ptr, a_bytes), ("C", c_ptr, c_bytes))?;
        apart(("pivots", pivots_ptr, pivot_bytes), ("C", c_ptr, c_bytes))?;
        let a_pointers = PointerArray::new(self, a_ptr, a_shape.stride() * size_of::<T>(), count)?;
        let c_pointers = PointerArray::new(self, c_ptr, c_shape.stride() * size_of::<T>(), count)?;
        let blas = self.blas()?.raw_handle();
        let (a_array, _a_array_use) = a_pointers.begin(self)?;
        let (c_array, _c_array_use) = c_pointers.begin(self)?;
        let _a_use = a.begin_use(&self.stream, Access::Read)?;
        let _pivots_use = pivots.begin_use(&self.stream, Access::Read)?;
        let _c_use = c.begin_use(&self.stream, Access::Write)?;
        let (n, lda, ldc) = (to_int("n", n)?, to_int("lda", a_shape.ld)?, to_int("ldc", c_shape.ld)?);
        self.queue("cublas<t>getriBatched", Meaning::Singular, count, 0, |info, _| {
            // SAFETY: as in `getrf_batched`; C's pointer array holds `count` addresses of
            // matrices inside C, which overlaps neither A nor the pivots.
            let status = unsafe {
                call(
                    blas,
                    n,
                    a_array as *const *const T::BlasRaw,
                    lda,
                    pivots_ptr as usize as *const i32,
                    c_array as *const *mut T::BlasRaw,
                    ldc,
                    info,
                    batch,
                )
            };
            crate::blas::check("cuBLAS", "cublas<t>getriBatched", status.0)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batch_sizes_and_jacobi_limits_are_checked() {
        assert!(matches!(batch_count(0), Err(Error::InvalidValue(m)) if m.contains("at least 1")));
        assert_eq!(batch_count(500).unwrap(), 500);
        assert!(batch_count(1 << 31).is_err());
        assert!(jacobi_size("syevjBatched", 32).is_ok());
        let big = jacobi_size("syevjBatched", 33);
        assert!(matches!(big, Err(Error::InvalidValue(m)) if m.contains("up to 32")));
    }
}
