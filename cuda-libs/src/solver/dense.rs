//! [`Solver`]: a cuSOLVER handle bound to one stream, and its routines of one matrix through the
//! 64-bit API (`cusolverDnX*`; `orgqr` has no 64-bit form and uses the typed one).

use std::ffi::c_void;
use std::mem::{align_of, size_of};

use cuda_driver::{Access, DeviceMemory, DeviceMemoryMut, Stream, StreamUse};
use cuda_sys::cusolver::{
    cublasOperation_t, cusolverDnHandle_t, cusolverDnParams_t, cusolverEigMode_t, cusolverStatus_t,
};
use cuda_sys::driver::CUdeviceptr;

use super::info::{Infos, Meaning};
use super::{check, to_int, to_long, Fill, Matrix, SolverScalar};
use crate::blas::Blas;
use crate::{Error, Result};

/// Which singular vectors [`Solver::gesvd`] computes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SvdVectors {
    /// All of them: `U` is `m x m`, `V^T` is `n x n` (LAPACK's `'A'`).
    All,
    /// The first `min(m, n)`: `U` is `m x min`, `V^T` is `min x n` (`'S'`).
    Thin,
    /// None: only the singular values (`'N'`).
    None,
}

/// A cuSOLVER handle whose work is queued on one stream, with the `info` outputs of what it
/// queued (read back by [`Solver::check_info`]).
///
/// `Send` but not `Sync`: cuSOLVER lets a handle move between threads, never be used by two at
/// once. Destroyed on drop, after the stream's work is done (errors there cannot be returned).
pub struct Solver {
    handle: cusolverDnHandle_t,
    params: cusolverDnParams_t,
    pub(super) stream: Stream,
    /// The 64-bit API's host workspace, grown as routines ask.
    host_workspace: Vec<u8>,
    pub(super) infos: Infos,
    /// cuBLAS on the same stream, for the batched LU; made on first use.
    blas: Option<Blas>,
    /// Jacobi parameters of the batched eigenvalue and SVD routines; made on first use.
    pub(super) syevj: cuda_sys::cusolver::syevjInfo_t,
    pub(super) gesvdj: cuda_sys::cusolver::gesvdjInfo_t,
}

// SAFETY: cuSOLVER allows a handle (and its parameter objects) to be used from any host thread,
// one thread at a time; `Solver` is not `Sync`, and every call makes the stream's context
// current on the calling thread.
unsafe impl Send for Solver {}

impl Solver {
    /// Creates a handle for `stream` (`cusolverDnCreate` with the stream's context current) and
    /// queues its work there (`cusolverDnSetStream`). Loads cuSOLVER first: a missing library is
    /// [`Error::Load`].
    pub fn new(stream: &Stream) -> Result<Solver> {
        let cusolver = cuda_sys::cusolver()?;
        let create = cusolver.cusolverDnCreate()?;
        let create_params = cusolver.cusolverDnCreateParams()?;
        let set_stream = cusolver.cusolverDnSetStream()?;
        stream.context().set_current()?;
        let mut handle = std::ptr::null_mut();
        // SAFETY: `handle` is a valid out-pointer; the stream's context is current.
        check("cusolverDnCreate", unsafe { create(&mut handle) })?;
        // From here `drop` destroys what was made, whatever fails next.
        let mut solver = Solver {
            handle,
            params: std::ptr::null_mut(),
            stream: stream.clone(),
            host_workspace: Vec::new(),
            infos: Infos::new(),
            blas: None,
            syevj: std::ptr::null_mut(),
            gesvdj: std::ptr::null_mut(),
        };
        // SAFETY: `params` is a valid out-pointer.
        check("cusolverDnCreateParams", unsafe { create_params(&mut solver.params) })?;
        // SAFETY: the handle is live; the stream belongs to the current context and `solver`
        // keeps a clone of it, so it outlives the handle.
        let raw_stream = unsafe { stream.as_raw() }.cast();
        // SAFETY: as above.
        check("cusolverDnSetStream", unsafe { set_stream(solver.handle, raw_stream) })?;
        Ok(solver)
    }

    /// The stream this handle queues its work on.
    pub fn stream(&self) -> &Stream {
        &self.stream
    }

    /// Routines queued whose `info` is not read back yet.
    pub fn pending_infos(&self) -> usize {
        self.infos.pending()
    }

    /// Reads back the `info` of every routine queued since the last call, at once (one copy,
    /// after the stream's work: a host wait), and returns the first failure as
    /// [`Error::Linalg`] (routine, matrix of the batch, cause). Every routine's results are
    /// trustworthy only once this returned `Ok`.
    pub fn check_info(&mut self) -> Result<()> {
        self.infos.read_back(&self.stream)
    }

    /// The raw handle, for the batched routines of this module.
    pub(super) fn raw(&self) -> cusolverDnHandle_t {
        self.handle
    }

    /// cuBLAS on this handle's stream (made on first use).
    pub(super) fn blas(&mut self) -> Result<&mut Blas> {
        if self.blas.is_none() {
            self.blas = Some(Blas::new(&self.stream)?);
        }
        Ok(self.blas.as_mut().expect("made above"))
    }

    /// Device and host workspace bytes of `cusolverDnXpotrf` for `a`.
    pub fn potrf_workspace<T: SolverScalar>(&mut self, fill: Fill, a: Matrix) -> Result<usize> {
        Ok(self.potrf_sizes::<T>(fill, a)?.0)
    }

    fn potrf_sizes<T: SolverScalar>(&mut self, fill: Fill, a: Matrix) -> Result<(usize, usize)> {
        let n = to_long("n", a.order("A")?)?;
        a.span("A")?;
        let query = cuda_sys::cusolver()?.cusolverDnXpotrf_bufferSize()?;
        let (handle, params) = (self.handle, self.params);
        self.query_sizes("cusolverDnXpotrf_bufferSize", |device, host| {
            // SAFETY: a size query on a live handle: the matrix pointer is not read (null), the
            // two out-pointers are valid.
            Ok(unsafe {
                query(
                    handle,
                    params,
                    fill.raw(),
                    n,
                    T::DATA_TYPE,
                    std::ptr::null(),
                    to_long("lda", a.ld)?,
                    T::DATA_TYPE,
                    device,
                    host,
                )
            })
        })
    }

    /// Queues the Cholesky factorisation of the symmetric (complex: Hermitian) positive definite
    /// `a` in place (`cusolverDnXpotrf`): its `fill` triangle becomes `L` (`A = L L^H`) or `U`
    /// (`A = U^H U`).
    /// A matrix that is not positive definite is [`Error::Linalg`] from [`Solver::check_info`].
    pub fn potrf<T: SolverScalar>(
        &mut self,
        fill: Fill,
        a_shape: Matrix,
        a: &mut (impl DeviceMemoryMut + ?Sized),
        workspace: Option<&mut dyn DeviceMemoryMut>,
    ) -> Result<()> {
        let (device_bytes, host_bytes) = self.potrf_sizes::<T>(fill, a_shape)?;
        let n = a_shape.rows;
        if n == 0 {
            return Ok(());
        }
        let call = cuda_sys::cusolver()?.cusolverDnXpotrf()?;
        let (a_ptr, a_bytes) = self.matrix::<T, _>("A", a_shape, &*a)?;
        let (workspace_ptr, _workspace_use) = self.workspace(device_bytes, workspace, &[("A", a_ptr, a_bytes)])?;
        let _a_use = a.begin_use(&self.stream, Access::Write)?;
        let (handle, params) = (self.handle, self.params);
        self.queue(
            "cusolverDnXpotrf",
            Meaning::NotPositiveDefinite,
            1,
            host_bytes,
            |info, host| {
                // SAFETY: the handle is live and its context current; A holds the matrix its shape
                // spans, the workspaces hold the bytes queried for this call, `info` is a slot of the
                // handle's info buffer; every buffer is borrowed, with its stream use open, until the
                // call has queued its work.
                check("cusolverDnXpotrf", unsafe {
                    call(
                        handle,
                        params,
                        fill.raw(),
                        to_long("n", n)?,
                        T::DATA_TYPE,
                        device_ptr(a_ptr),
                        to_long("lda", a_shape.ld)?,
                        T::DATA_TYPE,
                        device_ptr(workspace_ptr),
                        device_bytes,
                        host,
                        host_bytes,
                        info,
                    )
                })
            },
        )
    }

    /// Queues the solve of `A X = B` from a Cholesky factor of [`Solver::potrf`]
    /// (`cusolverDnXpotrs`): `b` (`n x nrhs`) is overwritten with `X`.
    pub fn potrs<T: SolverScalar>(
        &mut self,
        fill: Fill,
        a_shape: Matrix,
        a: &(impl DeviceMemory + ?Sized),
        b_shape: Matrix,
        b: &mut (impl DeviceMemoryMut + ?Sized),
    ) -> Result<()> {
        let n = a_shape.order("A")?;
        rhs_rows("B", b_shape, n)?;
        let call = cuda_sys::cusolver()?.cusolverDnXpotrs()?;
        if n == 0 || b_shape.cols == 0 {
            return Ok(());
        }
        let (a_ptr, a_bytes) = self.matrix::<T, _>("A", a_shape, a)?;
        let (b_ptr, b_bytes) = self.matrix::<T, _>("B", b_shape, &*b)?;
        apart(("A", a_ptr, a_bytes), ("B", b_ptr, b_bytes))?;
        let _a_use = a.begin_use(&self.stream, Access::Read)?;
        let _b_use = b.begin_use(&self.stream, Access::Write)?;
        let (handle, params) = (self.handle, self.params);
        self.queue("cusolverDnXpotrs", Meaning::ArgumentsOnly, 1, 0, |info, _| {
            // SAFETY: as in `potrf`; A and B hold the matrices their shapes span and do not overlap.
            check("cusolverDnXpotrs", unsafe {
                call(
                    handle,
                    params,
                    fill.raw(),
                    to_long("n", n)?,
                    to_long("nrhs", b_shape.cols)?,
                    T::DATA_TYPE,
                    device_ptr(a_ptr),
                    to_long("lda", a_shape.ld)?,
                    T::DATA_TYPE,
                    device_ptr(b_ptr),
                    to_long("ldb", b_shape.ld)?,
                    info,
                )
            })
        })
    }

    /// Device workspace bytes of `cusolverDnXgetrf` for `a`.
    pub fn getrf_workspace<T: SolverScalar>(&mut self, a: Matrix) -> Result<usize> {
        Ok(self.getrf_sizes::<T>(a)?.0)
    }

    fn getrf_sizes<T: SolverScalar>(&mut self, a: Matrix) -> Result<(usize, usize)> {
        a.span("A")?;
        let query = cuda_sys::cusolver()?.cusolverDnXgetrf_bufferSize()?;
        let (handle, params) = (self.handle, self.params);
        self.query_sizes("cusolverDnXgetrf_bufferSize", |device, host| {
            // SAFETY: a size query on a live handle, as in `potrf_sizes`.
            Ok(unsafe {
                query(
                    handle,
                    params,
                    to_long("m", a.rows)?,
                    to_long("n", a.cols)?,
                    T::DATA_TYPE,
                    std::ptr::null(),
                    to_long("lda", a.ld)?,
                    T::DATA_TYPE,
                    device,
                    host,
                )
            })
        })
    }

    /// Queues the LU factorisation with partial pivoting of `a` (`m x n`) in place
    /// (`cusolverDnXgetrf`): `P A = L U`, the pivots (1-based rows, `min(m, n)` of them, `i64`)
    /// into `pivots`. A singular matrix is [`Error::Linalg`] from [`Solver::check_info`].
    pub fn getrf<T: SolverScalar>(
        &mut self,
        a_shape: Matrix,
        a: &mut (impl DeviceMemoryMut + ?Sized),
        pivots: &mut (impl DeviceMemoryMut + ?Sized),
        workspace: Option<&mut dyn DeviceMemoryMut>,
    ) -> Result<()> {
        let (device_bytes, host_bytes) = self.getrf_sizes::<T>(a_shape)?;
        let k = a_shape.rows.min(a_shape.cols);
        if k == 0 {
            return Ok(());
        }
        let call = cuda_sys::cusolver()?.cusolverDnXgetrf()?;
        let pivot_bytes = k * size_of::<i64>();
        let (a_ptr, a_bytes) = self.matrix::<T, _>("A", a_shape, &*a)?;
        let pivots_ptr = self.address::<i64, _>("pivots", &*pivots, pivot_bytes)?;
        apart(("A", a_ptr, a_bytes), ("pivots", pivots_ptr, pivot_bytes))?;
        let (workspace_ptr, _workspace_use) = self.workspace(
            device_bytes,
            workspace,
            &[("A", a_ptr, a_bytes), ("pivots", pivots_ptr, pivot_bytes)],
        )?;
        let _a_use = a.begin_use(&self.stream, Access::Write)?;
        let _pivots_use = pivots.begin_use(&self.stream, Access::Write)?;
        let (handle, params) = (self.handle, self.params);
        self.queue("cusolverDnXgetrf", Meaning::Singular, 1, host_bytes, |info, host| {
            // SAFETY: as in `potrf`; the pivots hold `min(m, n)` `i64`s and overlap nothing else.
            check("cusolverDnXgetrf", unsafe {
                call(
                    handle,
                    params,
                    to_long("m", a_shape.rows)?,
                    to_long("n", a_shape.cols)?,
                    T::DATA_TYPE,
                    device_ptr(a_ptr),
                    to_long("lda", a_shape.ld)?,
                    pivots_ptr as usize as *mut i64,
                    T::DATA_TYPE,
                    device_ptr(workspace_ptr),
                    device_bytes,
                    host,
                    host_bytes,
                    info,
                )
            })
        })
    }

    /// Queues the solve of `A X = B` (or `A^T X = B` with `transpose`) from an LU factorisation of
    /// [`Solver::getrf`] (`cusolverDnXgetrs`): `b` (`n x nrhs`) is overwritten with `X`.
    #[allow(clippy::too_many_arguments)]
    pub fn getrs<T: SolverScalar>(
        &mut self,
        transpose: bool,
        a_shape: Matrix,
        a: &(impl DeviceMemory + ?Sized),
        pivots: &(impl DeviceMemory + ?Sized),
        b_shape: Matrix,
        b: &mut (impl DeviceMemoryMut + ?Sized),
    ) -> Result<()> {
        let n = a_shape.order("A")?;
        rhs_rows("B", b_shape, n)?;
        let call = cuda_sys::cusolver()?.cusolverDnXgetrs()?;
        if n == 0 || b_shape.cols == 0 {
            return Ok(());
        }
        let pivot_bytes = n * size_of::<i64>();
        let (a_ptr, a_bytes) = self.matrix::<T, _>("A", a_shape, a)?;
        let pivots_ptr = self.address::<i64, _>("pivots", pivots, pivot_bytes)?;
        let (b_ptr, b_bytes) = self.matrix::<T, _>("B", b_shape, &*b)?;
        apart(("A", a_ptr, a_bytes), ("B", b_ptr, b_bytes))?;
        apart(("pivots", pivots_ptr, pivot_bytes), ("B", b_ptr, b_bytes))?;
        let _a_use = a.begin_use(&self.stream, Access::Read)?;
        let _pivots_use = pivots.begin_use(&self.stream, Access::Read)?;
        let _b_use = b.begin_use(&self.stream, Access::Write)?;
        let (info, info_use) = self
            .infos
            .slots(&self.stream, "cusolverDnXgetrs", Meaning::ArgumentsOnly, 1)?;
        self.stream.context().set_current()?;
        let trans = if transpose {
            cublasOperation_t::CUBLAS_OP_T
        } else {
            cublasOperation_t::CUBLAS_OP_N
        };
        // SAFETY: as in `potrs`; the pivots hold `n` `i64`s.
        let status = unsafe {
            call(
                self.handle,
                self.params,
                trans,
                to_long("n", n)?,
                to_long("nrhs", b_shape.cols)?,
                T::DATA_TYPE,
                device_ptr(a_ptr),
                to_long("lda", a_shape.ld)?,
                pivots_ptr as usize as *const i64,
                T::DATA_TYPE,
                device_ptr(b_ptr),
                to_long("ldb", b_shape.ld)?,
                info as usize as *mut i32,
            )
        };
        drop(info_use);
        check("cusolverDnXgetrs", status)?;
        self.infos.confirm();
        Ok(())
    }

    /// Device workspace bytes of `cusolverDnXgeqrf` for `a`.
    pub fn geqrf_workspace<T: SolverScalar>(&mut self, a: Matrix) -> Result<usize> {
        Ok(self.geqrf_sizes::<T>(a)?.0)
    }

    fn geqrf_sizes<T: SolverScalar>(&mut self, a: Matrix) -> Result<(usize, usize)> {
        a.span("A")?;
        let query = cuda_sys::cusolver()?.cusolverDnXgeqrf_bufferSize()?;
        let (handle, params) = (self.handle, self.params);
        self.query_sizes("cusolverDnXgeqrf_bufferSize", |device, host| {
            // SAFETY: a size query on a live handle, as in `potrf_sizes` (`tau` is not read either).
            Ok(unsafe {
                query(
                    handle,
                    params,
                    to_long("m", a.rows)?,
                    to_long("n", a.cols)?,
                    T::DATA_TYPE,
                    std::ptr::null(),
                    to_long("lda", a.ld)?,
                    T::DATA_TYPE,
                    std::ptr::null(),
                    T::DATA_TYPE,
                    device,
                    host,
                )
            })
        })
    }

    /// Queues the QR factorisation of `a` (`m x n`) in place (`cusolverDnXgeqrf`): `R` in the
    /// upper triangle, the Householder reflectors below it and their `min(m, n)` scalars in
    /// `tau`. [`Solver::orgqr`] forms `Q` from them.
    pub fn geqrf<T: SolverScalar>(
        &mut self,
        a_shape: Matrix,
        a: &mut (impl DeviceMemoryMut + ?Sized),
        tau: &mut (impl DeviceMemoryMut + ?Sized),
        workspace: Option<&mut dyn DeviceMemoryMut>,
    ) -> Result<()> {
        let (device_bytes, host_bytes) = self.geqrf_sizes::<T>(a_shape)?;
        let k = a_shape.rows.min(a_shape.cols);
        if k == 0 {
            return Ok(());
        }
        let call = cuda_sys::cusolver()?.cusolverDnXgeqrf()?;
        let tau_bytes = k * size_of::<T>();
        let (a_ptr, a_bytes) = self.matrix::<T, _>("A", a_shape, &*a)?;
        let tau_ptr = self.address::<T, _>("tau", &*tau, tau_bytes)?;
        apart(("A", a_ptr, a_bytes), ("tau", tau_ptr, tau_bytes))?;
        let (workspace_ptr, _workspace_use) = self.workspace(
            device_bytes,
            workspace,
            &[("A", a_ptr, a_bytes), ("tau", tau_ptr, tau_bytes)],
        )?;
        let _a_use = a.begin_use(&self.stream, Access::Write)?;
        let _tau_use = tau.begin_use(&self.stream, Access::Write)?;
        let (handle, params) = (self.handle, self.params);
        self.queue(
            "cusolverDnXgeqrf",
            Meaning::ArgumentsOnly,
            1,
            host_bytes,
            |info, host| {
                // SAFETY: as in `potrf`; `tau` holds `min(m, n)` elements and overlaps nothing else.
                check("cusolverDnXgeqrf", unsafe {
                    call(
                        handle,
                        params,
                        to_long("m", a_shape.rows)?,
                        to_long("n", a_shape.cols)?,
                        T::DATA_TYPE,
                        device_ptr(a_ptr),
                        to_long("lda", a_shape.ld)?,
                        T::DATA_TYPE,
                        device_ptr(tau_ptr),
                        T::DATA_TYPE,
                        device_ptr(workspace_ptr),
                        device_bytes,
                        host,
                        host_bytes,
                        info,
                    )
                })
            },
        )
    }

    /// Device workspace bytes of `orgqr` (`ungqr` for complex types) for `a` (`m x n`,
    /// `m >= n`) and `k` reflectors.
    pub fn orgqr_workspace<T: SolverScalar>(&mut self, a: Matrix, k: usize) -> Result<usize> {
        let (m, n, k, lda) = orgqr_sizes(a, k)?;
        let query = T::orgqr_buffer_size()?;
        let handle = self.handle;
        self.query_lwork::<T>("cusolverDn<t>orgqr_bufferSize", |lwork| {
            // SAFETY: a size query on a live handle; the pointers are not read (null).
            unsafe { query(handle, m, n, k, std::ptr::null(), lda, std::ptr::null(), lwork) }
        })
    }

    /// Queues the forming of `Q` (`m x n`, the first `n` columns) from the `k` reflectors that
    /// [`Solver::geqrf`] left in `a` and `tau`, in place (`cusolverDn<t>orgqr`, `<t>ungqr` for
    /// complex types: no 64-bit form exists, so sizes are 32-bit).
    pub fn orgqr<T: SolverScalar>(
        &mut self,
        a_shape: Matrix,
        k: usize,
        a: &mut (impl DeviceMemoryMut + ?Sized),
        tau: &(impl DeviceMemory + ?Sized),
        workspace: Option<&mut dyn DeviceMemoryMut>,
    ) -> Result<()> {
        let device_bytes = self.orgqr_workspace::<T>(a_shape, k)?;
        let (m, n, k32, lda) = orgqr_sizes(a_shape, k)?;
        if a_shape.rows == 0 || a_shape.cols == 0 {
            return Ok(());
        }
        let call = T::orgqr()?;
        let tau_bytes = k.max(1) * size_of::<T>();
        let (a_ptr, a_bytes) = self.matrix::<T, _>("A", a_shape, &*a)?;
        let tau_ptr = self.address::<T, _>("tau", tau, tau_bytes)?;
        apart(("A", a_ptr, a_bytes), ("tau", tau_ptr, tau_bytes))?;
        let (workspace_ptr, _workspace_use) = self.workspace(
            device_bytes,
            workspace,
            &[("A", a_ptr, a_bytes), ("tau", tau_ptr, tau_bytes)],
        )?;
        let _a_use = a.begin_use(&self.stream, Access::Write)?;
        let _tau_use = tau.begin_use(&self.stream, Access::Read)?;
        let lwork = to_int("orgqr's workspace", device_bytes / size_of::<T>())?;
        let handle = self.handle;
        self.queue("cusolverDn<t>orgqr", Meaning::ArgumentsOnly, 1, 0, |info, _| {
            // SAFETY: as in `potrf`; the workspace holds `lwork` elements, as queried.
            check("cusolverDn<t>orgqr", unsafe {
                call(
                    handle,
                    m,
                    n,
                    k32,
                    device_ptr(a_ptr).cast(),
                    lda,
                    device_ptr(tau_ptr).cast(),
                    device_ptr(workspace_ptr).cast(),
                    lwork,
                    info,
                )
            })
        })
    }

    /// Device workspace bytes of `cusolverDnXgesvd` for `a` and `vectors`.
    pub fn gesvd_workspace<T: SolverScalar>(&mut self, vectors: SvdVectors, a: Matrix) -> Result<usize> {
        Ok(self.gesvd_sizes::<T>(vectors, a)?.0)
    }

    fn gesvd_sizes<T: SolverScalar>(&mut self, vectors: SvdVectors, a: Matrix) -> Result<(usize, usize)> {
        gesvd_shape(a)?;
        let query = cuda_sys::cusolver()?.cusolverDnXgesvd_bufferSize()?;
        let job = vectors.job();
        let (ldu, ldvt) = gesvd_lds(vectors, a);
        let (handle, params) = (self.handle, self.params);
        self.query_sizes("cusolverDnXgesvd_bufferSize", |device, host| {
            // SAFETY: a size query on a live handle, as in `potrf_sizes`.
            Ok(unsafe {
                query(
                    handle,
                    params,
                    job,
                    job,
                    to_long("m", a.rows)?,
                    to_long("n", a.cols)?,
                    T::DATA_TYPE,
                    std::ptr::null(),
                    to_long("lda", a.ld)?,
                    <T::Real as SolverScalar>::DATA_TYPE,
                    std::ptr::null(),
                    T::DATA_TYPE,
                    std::ptr::null(),
                    to_long("ldu", ldu)?,
                    T::DATA_TYPE,
                    std::ptr::null(),
                    to_long("ldvt", ldvt)?,
                    T::DATA_TYPE,
                    device,
                    host,
                )
            })
        })
    }

    /// Queues the singular value decomposition `A = U S V^H` of `a` (`m x n`, `m >= n`:
    /// cuSOLVER's `gesvd` takes no wide matrix; decompose `A^T` for one) through
    /// `cusolverDnXgesvd`. `a` is destroyed; `s` receives the `n` singular values in descending
    /// order (of [`SolverScalar::Real`]); `u` (`m x m` or `m x n`, leading dimension `m`) and
    /// `vt` (`V^H`, `n x n`, leading
    /// dimension `n`) the vectors [`SvdVectors`] asks for (both `None` with [`SvdVectors::None`]).
    /// A decomposition that did not converge is [`Error::Linalg`] from [`Solver::check_info`].
    #[allow(clippy::too_many_arguments)]
    pub fn gesvd<T: SolverScalar>(
        &mut self,
        vectors: SvdVectors,
        a_shape: Matrix,
        a: &mut (impl DeviceMemoryMut + ?Sized),
        s: &mut (impl DeviceMemoryMut + ?Sized),
        u: Option<&mut dyn DeviceMemoryMut>,
        vt: Option<&mut dyn DeviceMemoryMut>,
        workspace: Option<&mut dyn DeviceMemoryMut>,
    ) -> Result<()> {
        let (device_bytes, host_bytes) = self.gesvd_sizes::<T>(vectors, a_shape)?;
        let (m, n) = (a_shape.rows, a_shape.cols);
        if n == 0 {
            return Ok(());
        }
        let call = cuda_sys::cusolver()?.cusolverDnXgesvd()?;
        let (ldu, ldvt) = gesvd_lds(vectors, a_shape);
        let (u_cols, vt_rows) = match vectors {
            SvdVectors::All => (m, n),
            SvdVectors::Thin => (n, n),
            SvdVectors::None => (0, 0),
        };
        let u: Option<&dyn DeviceMemoryMut> = u.map(|w| &*w);
        let vt: Option<&dyn DeviceMemoryMut> = vt.map(|w| &*w);
        vector_buffers("gesvd", vectors, (u.is_some(), vt.is_some()), "U and V^T")?;
        let s_bytes = n * size_of::<T::Real>();
        let u_bytes = Matrix::new(m, u_cols).span("U")? * size_of::<T>();
        let vt_bytes = Matrix::new(vt_rows, n).span("V^T")? * size_of::<T>();
        let a_bytes = a_shape.span("A")? * size_of::<T>();
        let operands = self.svd_operands::<T>(
            (&*a, a_bytes),
            (&*s, s_bytes),
            [("U", u, u_bytes), ("V^T", vt, vt_bytes)],
            (workspace, device_bytes),
        )?;
        let (a_ptr, s_ptr, u_ptr, vt_ptr) = (operands.a, operands.s, operands.u, operands.v);
        let workspace_ptr = operands.workspace;
        let job = vectors.job();
        let (handle, params) = (self.handle, self.params);
        self.queue(
            "cusolverDnXgesvd",
            Meaning::NoConvergence,
            1,
            host_bytes,
            |info, host| {
                // SAFETY: as in `potrf`; S, U and V^T hold what their shapes span (U and V^T null and
                // unread without vectors) and overlap nothing else.
                check("cusolverDnXgesvd", unsafe {
                    call(
                        handle,
                        params,
                        job,
                        job,
                        to_long("m", m)?,
                        to_long("n", n)?,
                        T::DATA_TYPE,
                        device_ptr(a_ptr),
                        to_long("lda", a_shape.ld)?,
                        <T::Real as SolverScalar>::DATA_TYPE,
                        device_ptr(s_ptr),
                        T::DATA_TYPE,
                        device_ptr(u_ptr),
                        to_long("ldu", ldu)?,
                        T::DATA_TYPE,
                        device_ptr(vt_ptr),
                        to_long("ldvt", ldvt)?,
                        T::DATA_TYPE,
                        device_ptr(workspace_ptr),
                        device_bytes,
                        host,
                        host_bytes,
                        info,
                    )
                })
            },
        )
    }

    /// Device workspace bytes of `cusolverDnXsyevd` for `a`.
    pub fn syevd_workspace<T: SolverScalar>(&mut self, vectors: bool, fill: Fill, a: Matrix) -> Result<usize> {
        Ok(self.syevd_sizes::<T>(vectors, fill, a)?.0)
    }

    fn syevd_sizes<T: SolverScalar>(&mut self, vectors: bool, fill: Fill, a: Matrix) -> Result<(usize, usize)> {
        let n = a.order("A")?;
        a.span("A")?;
        let query = cuda_sys::cusolver()?.cusolverDnXsyevd_bufferSize()?;
        let (handle, params) = (self.handle, self.params);
        self.query_sizes("cusolverDnXsyevd_bufferSize", |device, host| {
            // SAFETY: a size query on a live handle, as in `potrf_sizes`.
            Ok(unsafe {
                query(
                    handle,
                    params,
                    eig_mode(vectors),
                    fill.raw(),
                    to_long("n", n)?,
                    T::DATA_TYPE,
                    std::ptr::null(),
                    to_long("lda", a.ld)?,
                    <T::Real as SolverScalar>::DATA_TYPE,
                    std::ptr::null(),
                    T::DATA_TYPE,
                    device,
                    host,
                )
            })
        })
    }

    /// Queues the eigenvalues (ascending, into `w`, `n` of them, of [`SolverScalar::Real`]) and,
    /// with `vectors`, the orthonormal eigenvectors (into `a`'s columns) of the symmetric
    /// (complex: Hermitian) `a`, read from its `fill`
    /// triangle (`cusolverDnXsyevd`, divide and conquer). `a` is destroyed either way. A solver
    /// that did not converge is [`Error::Linalg`] from [`Solver::check_info`].
    pub fn syevd<T: SolverScalar>(
        &mut self,
        vectors: bool,
        fill: Fill,
        a_shape: Matrix,
        a: &mut (impl DeviceMemoryMut + ?Sized),
        w: &mut (impl DeviceMemoryMut + ?Sized),
        workspace: Option<&mut dyn DeviceMemoryMut>,
    ) -> Result<()> {
        let (device_bytes, host_bytes) = self.syevd_sizes::<T>(vectors, fill, a_shape)?;
        let n = a_shape.rows;
        if n == 0 {
            return Ok(());
        }
        let call = cuda_sys::cusolver()?.cusolverDnXsyevd()?;
        let a_bytes = a_shape.span("A")? * size_of::<T>();
        let w_bytes = n * size_of::<T::Real>();
        let operands = self.eigen_operands::<T>((&*a, a_bytes), (&*w, w_bytes), (workspace, device_bytes))?;
        let (a_ptr, w_ptr, workspace_ptr) = (operands.a, operands.w, operands.workspace);
        let (handle, params) = (self.handle, self.params);
        self.queue(
            "cusolverDnXsyevd",
            Meaning::NoConvergence,
            1,
            host_bytes,
            |info, host| {
                // SAFETY: as in `potrf`; W holds `n` elements and overlaps nothing else.
                check("cusolverDnXsyevd", unsafe {
                    call(
                        handle,
                        params,
                        eig_mode(vectors),
                        fill.raw(),
                        to_long("n", n)?,
                        T::DATA_TYPE,
                        device_ptr(a_ptr),
                        to_long("lda", a_shape.ld)?,
                        <T::Real as SolverScalar>::DATA_TYPE,
                        device_ptr(w_ptr),
                        T::DATA_TYPE,
                        device_ptr(workspace_ptr),
                        device_bytes,
                        host,
                        host_bytes,
                        info,
                    )
                })
            },
        )
    }

    /// Device workspace bytes of `cusolverDnXsyevBatched` for `count` matrices of `a`. A
    /// cuSOLVER without it (before CUDA 12.6) is [`Error::Symbol`] naming it.
    pub fn syev_batched_workspace<T: SolverScalar>(
        &mut self,
        vectors: bool,
        fill: Fill,
        a: Matrix,
        count: usize,
    ) -> Result<usize> {
        Ok(self.syev_batched_sizes::<T>(vectors, fill, a, count)?.0)
    }

    fn syev_batched_sizes<T: SolverScalar>(
        &mut self,
        vectors: bool,
        fill: Fill,
        a: Matrix,
        count: usize,
    ) -> Result<(usize, usize)> {
        let n = a.order("A")?;
        a.span("A")?;
        if count == 0 {
            return Err(Error::InvalidValue(
                "a batch of 0 matrices: count must be at least 1".into(),
            ));
        }
        if !syev_batch_fits(a, count) {
            return Err(Error::InvalidValue(format!(
                "cusolverDnXsyevBatched: n * lda * count must stay within i32::MAX (cuSOLVER's limit); \
                 {n} * {} * {count} does not",
                a.ld
            )));
        }
        let query = cuda_sys::cusolver()?.cusolverDnXsyevBatched_bufferSize()?;
        let (handle, params) = (self.handle, self.params);
        self.query_sizes("cusolverDnXsyevBatched_bufferSize", |device, host| {
            // SAFETY: a size query on a live handle, as in `potrf_sizes`.
            Ok(unsafe {
                query(
                    handle,
                    params,
                    eig_mode(vectors),
                    fill.raw(),
                    to_long("n", n)?,
                    T::DATA_TYPE,
                    std::ptr::null(),
                    to_long("lda", a.ld)?,
                    <T::Real as SolverScalar>::DATA_TYPE,
                    std::ptr::null(),
                    T::DATA_TYPE,
                    device,
                    host,
                    to_long("count", count)?,
                )
            })
        })
    }

    /// Queues the eigenvalues (ascending, `n` per matrix into `w`, of [`SolverScalar::Real`])
    /// and, with `vectors`, the orthonormal eigenvectors (into `a`) of `count` symmetric
    /// (complex: Hermitian) matrices of `a` stored one after another (`ld * n` elements apart),
    /// each read from its `fill` triangle, in one call (`cusolverDnXsyevBatched`: any size, where
    /// the Jacobi batch stops at [`JACOBI_BATCHED_MAX`](super::JACOBI_BATCHED_MAX)). `a` is
    /// destroyed either way. A matrix that did not converge is [`Error::Linalg`] from
    /// [`Solver::check_info`], with its index; a cuSOLVER without the routine (before CUDA
    /// 12.6) is [`Error::Symbol`] naming it, before anything is queued.
    #[allow(clippy::too_many_arguments)]
    pub fn syev_batched<T: SolverScalar>(
        &mut self,
        vectors: bool,
        fill: Fill,
        a_shape: Matrix,
        count: usize,
        a: &mut (impl DeviceMemoryMut + ?Sized),
        w: &mut (impl DeviceMemoryMut + ?Sized),
        workspace: Option<&mut dyn DeviceMemoryMut>,
    ) -> Result<()> {
        let (device_bytes, host_bytes) = self.syev_batched_sizes::<T>(vectors, fill, a_shape, count)?;
        let n = a_shape.rows;
        if n == 0 {
            return Ok(());
        }
        let call = cuda_sys::cusolver()?.cusolverDnXsyevBatched()?;
        let a_bytes = a_shape.batch_span("A", count)? * size_of::<T>();
        let w_bytes = n * count * size_of::<T::Real>();
        let operands = self.eigen_operands::<T>((&*a, a_bytes), (&*w, w_bytes), (workspace, device_bytes))?;
        let (a_ptr, w_ptr, workspace_ptr) = (operands.a, operands.w, operands.workspace);
        let (handle, params) = (self.handle, self.params);
        self.queue(
            "cusolverDnXsyevBatched",
            Meaning::NoConvergence,
            count,
            host_bytes,
            |info, host| {
                // SAFETY: the handle is live and its context current; A holds `count` matrices one
                // after another, W `n` values per matrix, the workspaces the queried bytes, `info`
                // one slot per matrix; all are borrowed with their stream uses open until the call
                // returns.
                check("cusolverDnXsyevBatched", unsafe {
                    call(
                        handle,
                        params,
                        eig_mode(vectors),
                        fill.raw(),
                        to_long("n", n)?,
                        T::DATA_TYPE,
                        device_ptr(a_ptr),
                        to_long("lda", a_shape.ld)?,
                        <T::Real as SolverScalar>::DATA_TYPE,
                        device_ptr(w_ptr),
                        T::DATA_TYPE,
                        device_ptr(workspace_ptr),
                        device_bytes,
                        host,
                        host_bytes,
                        info,
                        to_long("count", count)?,
                    )
                })
            },
        )
    }

    /// Device workspace bytes of `cusolverDnXgeev` for `a` (right eigenvectors with `vectors`).
    /// A cuSOLVER without `Xgeev` (before CUDA 12.6) is [`Error::Symbol`] naming it.
    pub fn geev_workspace<T: SolverScalar>(&mut self, vectors: bool, a: Matrix) -> Result<usize> {
        Ok(self.geev_sizes::<T>(vectors, a)?.0)
    }

    fn geev_sizes<T: SolverScalar>(&mut self, vectors: bool, a: Matrix) -> Result<(usize, usize)> {
        let n = to_long("n", a.order("A")?)?;
        a.span("A")?;
        let query = cuda_sys::cusolver()?.cusolverDnXgeev_bufferSize()?;
        let (lda, ldvr) = (to_long("lda", a.ld)?, to_long("ldvr", a.rows.max(1))?);
        let (handle, params) = (self.handle, self.params);
        self.query_sizes("cusolverDnXgeev_bufferSize", |device, host| {
            // SAFETY: a size query on a live handle, as in `potrf_sizes`.
            Ok(unsafe {
                query(
                    handle,
                    params,
                    eig_mode(false),
                    eig_mode(vectors),
                    n,
                    T::DATA_TYPE,
                    std::ptr::null(),
                    lda,
                    T::DATA_TYPE,
                    std::ptr::null(),
                    T::DATA_TYPE,
                    std::ptr::null(),
                    1,
                    T::DATA_TYPE,
                    std::ptr::null(),
                    ldvr,
                    T::DATA_TYPE,
                    device,
                    host,
                )
            })
        })
    }

    /// Queues the eigenvalues and, with `vr`, the right eigenvectors of the general (not
    /// symmetric) `a` (`n x n`) through `cusolverDnXgeev` (cuSOLVER of CUDA 12.6 and later; an
    /// older one is [`Error::Symbol`] naming it). `a` is destroyed. For a complex `T`, `w`
    /// receives the `n` eigenvalues and `vr` (`n x n`, leading dimension `n`) the eigenvectors
    /// as its columns, each of norm 1. For a real `T` (every type real, as cuSOLVER takes it), `w`
    /// holds `2n` values, the real parts then the imaginary parts, and a complex pair's vectors
    /// are packed as LAPACK's `geev` packs them (`re ± i im` in two columns); promote to the
    /// complex type for the vectors themselves. A solver that did not converge is
    /// [`Error::Linalg`] from [`Solver::check_info`].
    pub fn geev<T: SolverScalar>(
        &mut self,
        a_shape: Matrix,
        a: &mut (impl DeviceMemoryMut + ?Sized),
        w: &mut (impl DeviceMemoryMut + ?Sized),
        vr: Option<&mut dyn DeviceMemoryMut>,
        workspace: Option<&mut dyn DeviceMemoryMut>,
    ) -> Result<()> {
        let vr: Option<&dyn DeviceMemoryMut> = vr.map(|b| &*b);
        let vectors = vr.is_some();
        let (device_bytes, host_bytes) = self.geev_sizes::<T>(vectors, a_shape)?;
        let n = a_shape.rows;
        if n == 0 {
            return Ok(());
        }
        let call = cuda_sys::cusolver()?.cusolverDnXgeev()?;
        let w_bytes = 2 * n * size_of::<T::Real>();
        let vr_bytes = if vectors { n * n * size_of::<T>() } else { 0 };
        let (a_ptr, a_bytes) = self.matrix::<T, _>("A", a_shape, &*a)?;
        let w_ptr = self.address::<T, _>("W", &*w, w_bytes)?;
        let vr_ptr = self.optional_address::<T>("VR", vr, vr_bytes)?;
        let written = [("A", a_ptr, a_bytes), ("W", w_ptr, w_bytes), ("VR", vr_ptr, vr_bytes)];
        all_apart(&written)?;
        let (workspace_ptr, _workspace_use) = self.workspace(device_bytes, workspace, &written)?;
        let _a_use = a.begin_use(&self.stream, Access::Write)?;
        let _w_use = w.begin_use(&self.stream, Access::Write)?;
        let _vr_use = begin_workspace_use(vr, &self.stream)?;
        let (n, lda) = (to_long("n", n)?, to_long("lda", a_shape.ld)?);
        let (handle, params) = (self.handle, self.params);
        self.queue(
            "cusolverDnXgeev",
            Meaning::NoConvergence,
            1,
            host_bytes,
            |info, host| {
                // SAFETY: as in `potrf`; W holds the eigenvalues' `2n` parts, VR `n x n` elements
                // (null and unread without vectors; VL is never asked for) and they overlap nothing
                // else.
                check("cusolverDnXgeev", unsafe {
                    call(
                        handle,
                        params,
                        eig_mode(false),
                        eig_mode(vectors),
                        n,
                        T::DATA_TYPE,
                        device_ptr(a_ptr),
                        lda,
                        T::DATA_TYPE,
                        device_ptr(w_ptr),
                        T::DATA_TYPE,
                        std::ptr::null_mut(),
                        1,
                        T::DATA_TYPE,
                        device_ptr(vr_ptr),
                        n,
                        T::DATA_TYPE,
                        device_ptr(workspace_ptr),
                        device_bytes,
                        host,
                        host_bytes,
                        info,
                    )
                })
            },
        )
    }

    /// The device and host workspace bytes a 64-bit size query reports: `query` is called with
    /// the two out-pointers once the stream's context is current.
    fn query_sizes(
        &self,
        function: &'static str,
        query: impl FnOnce(&mut usize, &mut usize) -> Result<cusolverStatus_t>,
    ) -> Result<(usize, usize)> {
        let (mut device, mut host) = (0, 0);
        self.stream.context().set_current()?;
        check(function, query(&mut device, &mut host)?)?;
        Ok((device, host))
    }

    /// The device workspace bytes of a typed routine whose size query reports `lwork` elements
    /// of `T` (`query` is called with the out-pointer once the stream's context is current).
    pub(super) fn query_lwork<T: SolverScalar>(
        &self,
        function: &'static str,
        query: impl FnOnce(&mut i32) -> cusolverStatus_t,
    ) -> Result<usize> {
        let mut lwork = 0;
        self.stream.context().set_current()?;
        check(function, query(&mut lwork))?;
        Ok(usize::try_from(lwork).unwrap_or(0) * size_of::<T>())
    }

    /// Queues one routine: takes `count` `info` slots for it, makes the stream's context
    /// current and calls `call` with the slots' address and the handle's host workspace of
    /// `host_bytes` (null for none). Once `call` returned `Ok` (the routine was queued) the slots
    /// are read back by [`Solver::check_info`]; otherwise they are given back.
    pub(super) fn queue(
        &mut self,
        routine: &'static str,
        meaning: Meaning,
        count: usize,
        host_bytes: usize,
        call: impl FnOnce(*mut i32, *mut c_void) -> Result<()>,
    ) -> Result<()> {
        let (info, info_use) = self.infos.slots(&self.stream, routine, meaning, count)?;
        self.stream.context().set_current()?;
        let host = host_buffer(&mut self.host_workspace, host_bytes, &self.stream)?;
        let queued = call(info as usize as *mut i32, host);
        drop(info_use);
        queued?;
        self.infos.confirm();
        Ok(())
    }

    /// One buffer's address, once its context, density, length (`bytes`) and alignment (to `E`)
    /// are checked.
    pub(super) fn address<E, M: DeviceMemory + ?Sized>(
        &self,
        name: &'static str,
        memory: &M,
        bytes: usize,
    ) -> Result<CUdeviceptr> {
        if memory.context() != self.stream.context() {
            return Err(Error::WrongContext {
                object: name,
                used_with: "cuSOLVER handle",
            });
        }
        memory.check_dense()?;
        if memory.byte_len() < bytes {
            return Err(Error::InvalidValue(format!(
                "{name} spans {bytes} bytes but its memory holds {}",
                memory.byte_len()
            )));
        }
        let pointer = memory.device_ptr();
        if pointer % align_of::<E>() as CUdeviceptr != 0 {
            return Err(Error::InvalidValue(format!(
                "{name} starts at {pointer:#x}, not aligned to its {}-byte elements",
                align_of::<E>()
            )));
        }
        Ok(pointer)
    }

    /// A matrix's address and the bytes of `E` its shape spans, checked like [`Solver::address`].
    pub(super) fn matrix<E, M: DeviceMemory + ?Sized>(
        &self,
        name: &'static str,
        shape: Matrix,
        memory: &M,
    ) -> Result<(CUdeviceptr, usize)> {
        let bytes = shape.span(name)? * size_of::<E>();
        Ok((self.address::<E, M>(name, memory, bytes)?, bytes))
    }

    /// An optional buffer's address, checked like [`Solver::address`]; 0 where none is given.
    pub(super) fn optional_address<E>(
        &self,
        name: &'static str,
        memory: Option<&dyn DeviceMemoryMut>,
        bytes: usize,
    ) -> Result<CUdeviceptr> {
        Ok(memory
            .map(|memory| self.address::<E, _>(name, memory, bytes))
            .transpose()?
            .unwrap_or(0))
    }

    /// The workspace's address (0 where none is needed), checked like the data and against
    /// overlap with it, and its use on the handle's stream, open (none where none was given).
    pub(super) fn workspace<'w>(
        &self,
        bytes: usize,
        workspace: Option<&'w mut dyn DeviceMemoryMut>,
        data: &[(&'static str, CUdeviceptr, usize)],
    ) -> Result<(CUdeviceptr, Option<StreamUse<'w>>)> {
        let workspace: Option<&'w dyn DeviceMemoryMut> = workspace.map(|w| &*w);
        let pointer = match workspace {
            _ if bytes == 0 => 0,
            None => {
                return Err(Error::InvalidValue(format!(
                    "the routine needs {bytes} bytes of workspace and none was given"
                )))
            }
            Some(workspace) => {
                let pointer = self.address::<u8, _>("workspace", workspace, bytes)?;
                for &other in data {
                    apart(("workspace", pointer, bytes), other)?;
                }
                pointer
            }
        };
        Ok((pointer, begin_workspace_use(workspace, &self.stream)?))
    }

    /// An eigenvalue routine's operands: the matrices `a` (`a_bytes`, overwritten) and the
    /// eigenvalues `w` (`w_bytes` of [`SolverScalar::Real`]), checked like
    /// [`Solver::address`] and apart, and the workspace (`workspace_bytes`) checked against
    /// both; with the three uses on the handle's stream open while the result lives.
    pub(super) fn eigen_operands<'m, 'w, T: SolverScalar>(
        &self,
        (a, a_bytes): (&'m (impl DeviceMemoryMut + ?Sized), usize),
        (w, w_bytes): (&'m (impl DeviceMemoryMut + ?Sized), usize),
        (workspace, workspace_bytes): (Option<&'w mut dyn DeviceMemoryMut>, usize),
    ) -> Result<EigenOperands<'m, 'w>> {
        let a_ptr = self.address::<T, _>("A", a, a_bytes)?;
        let w_ptr = self.address::<T::Real, _>("W", w, w_bytes)?;
        let data = [("A", a_ptr, a_bytes), ("W", w_ptr, w_bytes)];
        apart(data[0], data[1])?;
        let (workspace, workspace_use) = self.workspace(workspace_bytes, workspace, &data)?;
        Ok(EigenOperands {
            a: a_ptr,
            w: w_ptr,
            workspace,
            _uses: (
                a.begin_use(&self.stream, Access::Write)?,
                w.begin_use(&self.stream, Access::Write)?,
                workspace_use,
            ),
        })
    }

    /// An SVD routine's operands: the matrices `a` (`a_bytes`, destroyed), the singular values
    /// `s` (`s_bytes` of [`SolverScalar::Real`]) and the vectors `u` and `v` (each named, of
    /// its bytes; an absent one spans nothing), checked like [`Solver::address`] and pairwise
    /// apart, and the workspace (`workspace_bytes`) checked against them; with their uses on
    /// the handle's stream open while the result lives.
    pub(super) fn svd_operands<'m, 'w, T: SolverScalar>(
        &self,
        (a, a_bytes): (&'m (impl DeviceMemoryMut + ?Sized), usize),
        (s, s_bytes): (&'m (impl DeviceMemoryMut + ?Sized), usize),
        [(u_name, u, u_bytes), (v_name, v, v_bytes)]: [(&'static str, Option<&'m dyn DeviceMemoryMut>, usize); 2],
        (workspace, workspace_bytes): (Option<&'w mut dyn DeviceMemoryMut>, usize),
    ) -> Result<SvdOperands<'m, 'w>> {
        let a_ptr = self.address::<T, _>("A", a, a_bytes)?;
        let s_ptr = self.address::<T::Real, _>("S", s, s_bytes)?;
        let u_ptr = self.optional_address::<T>(u_name, u, u_bytes)?;
        let v_ptr = self.optional_address::<T>(v_name, v, v_bytes)?;
        let written = [
            ("A", a_ptr, a_bytes),
            ("S", s_ptr, s_bytes),
            (u_name, u_ptr, if u_ptr == 0 { 0 } else { u_bytes }),
            (v_name, v_ptr, if v_ptr == 0 { 0 } else { v_bytes }),
        ];
        all_apart(&written)?;
        let (workspace, workspace_use) = self.workspace(workspace_bytes, workspace, &written)?;
        Ok(SvdOperands {
            a: a_ptr,
            s: s_ptr,
            u: u_ptr,
            v: v_ptr,
            workspace,
            _uses: (
                workspace_use,
                a.begin_use(&self.stream, Access::Write)?,
                s.begin_use(&self.stream, Access::Write)?,
                begin_workspace_use(u, &self.stream)?,
                begin_workspace_use(v, &self.stream)?,
            ),
        })
    }
}

/// The checked addresses of an SVD routine's operands ([`Solver::svd_operands`]; 0 for absent
/// vectors), with their stream uses.
pub(super) struct SvdOperands<'m, 'w> {
    pub(super) a: CUdeviceptr,
    pub(super) s: CUdeviceptr,
    pub(super) u: CUdeviceptr,
    pub(super) v: CUdeviceptr,
    pub(super) workspace: CUdeviceptr,
    _uses: (
        Option<StreamUse<'w>>,
        StreamUse<'m>,
        StreamUse<'m>,
        Option<StreamUse<'m>>,
        Option<StreamUse<'m>>,
    ),
}

/// [`Error::InvalidValue`] unless an SVD `routine` asked for `vectors` is given a buffer for
/// each of its two vector outputs (`names`), or none with [`SvdVectors::None`].
pub(super) fn vector_buffers(routine: &str, vectors: SvdVectors, given: (bool, bool), names: &str) -> Result<()> {
    if (vectors == SvdVectors::None) != (!given.0 && !given.1) || given.0 != given.1 {
        return Err(Error::InvalidValue(format!(
            "{routine} with {vectors:?} takes {} for {names}",
            if vectors == SvdVectors::None {
                "no buffers"
            } else {
                "a buffer each"
            }
        )));
    }
    Ok(())
}

/// The checked addresses of an eigenvalue routine's operands ([`Solver::eigen_operands`]), with
/// their stream uses.
pub(super) struct EigenOperands<'m, 'w> {
    pub(super) a: CUdeviceptr,
    pub(super) w: CUdeviceptr,
    pub(super) workspace: CUdeviceptr,
    _uses: (StreamUse<'m>, StreamUse<'m>, Option<StreamUse<'w>>),
}

impl SvdVectors {
    fn job(self) -> std::ffi::c_char {
        (match self {
            SvdVectors::All => b'A',
            SvdVectors::Thin => b'S',
            SvdVectors::None => b'N',
        }) as std::ffi::c_char
    }
}

/// `gesvd`'s shape rule: `m >= n`.
fn gesvd_shape(a: Matrix) -> Result<()> {
    a.span("A")?;
    if a.rows < a.cols {
        return Err(Error::InvalidValue(format!(
            "cuSOLVER's gesvd takes m >= n; A is {} x {} (decompose its transpose)",
            a.rows, a.cols
        )));
    }
    Ok(())
}

/// The leading dimensions of `U` and `V^T`: packed (`m` and `n`; 1 where unused).
fn gesvd_lds(vectors: SvdVectors, a: Matrix) -> (usize, usize) {
    match vectors {
        SvdVectors::None => (1, 1),
        _ => (a.rows.max(1), a.cols.max(1)),
    }
}

/// `orgqr`'s sizes as `int`s: `m >= n >= k`.
fn orgqr_sizes(a: Matrix, k: usize) -> Result<(i32, i32, i32, i32)> {
    a.span("A")?;
    if a.rows < a.cols || a.cols < k {
        return Err(Error::InvalidValue(format!(
            "orgqr takes m >= n >= k; A is {} x {} with k = {k}",
            a.rows, a.cols
        )));
    }
    Ok((
        to_int("m", a.rows)?,
        to_int("n", a.cols)?,
        to_int("k", k)?,
        to_int("lda", a.ld)?,
    ))
}

/// A right-hand side must have `n` rows.
pub(super) fn rhs_rows(name: &str, b: Matrix, n: usize) -> Result<()> {
    b.span(name)?;
    if b.rows != n {
        return Err(Error::InvalidValue(format!(
            "{name} has {} rows but the system has {n} equations",
            b.rows
        )));
    }
    Ok(())
}

pub(super) fn eig_mode(vectors: bool) -> cusolverEigMode_t {
    if vectors {
        cusolverEigMode_t::CUSOLVER_EIG_MODE_VECTOR
    } else {
        cusolverEigMode_t::CUSOLVER_EIG_MODE_NOVECTOR
    }
}

/// The handle's host workspace of at least `bytes` (null for none). Growing it moves it: the
/// work queued before, which may still read the old one, is waited for first.
fn host_buffer(buffer: &mut Vec<u8>, bytes: usize, stream: &Stream) -> Result<*mut c_void> {
    if bytes == 0 {
        return Ok(std::ptr::null_mut());
    }
    if buffer.len() < bytes {
        if !buffer.is_empty() {
            stream.synchronize()?;
        }
        *buffer = vec![0; bytes];
    }
    Ok(buffer.as_mut_ptr().cast())
}

/// Opens an optional buffer's use on `stream`.
pub(super) fn begin_workspace_use<'w>(
    memory: Option<&'w dyn DeviceMemoryMut>,
    stream: &Stream,
) -> Result<Option<StreamUse<'w>>> {
    Ok(memory.map(|m| m.begin_use(stream, Access::Write)).transpose()?)
}

/// [`Error::InvalidValue`] where two byte ranges overlap (empty ranges overlap nothing).
pub(super) fn apart(
    (a_name, a, a_bytes): (&str, CUdeviceptr, usize),
    (b_name, b, b_bytes): (&str, CUdeviceptr, usize),
) -> Result<()> {
    let a_end = a.saturating_add(a_bytes as CUdeviceptr);
    let b_end = b.saturating_add(b_bytes as CUdeviceptr);
    if a_bytes > 0 && b_bytes > 0 && a < b_end && b < a_end {
        return Err(Error::InvalidValue(format!(
            "{a_name} ({a:#x}, {a_bytes} bytes) and {b_name} ({b:#x}, {b_bytes} bytes) overlap"
        )));
    }
    Ok(())
}

/// [`apart`] for every pair.
pub(super) fn all_apart(ranges: &[(&str, CUdeviceptr, usize)]) -> Result<()> {
    for (i, &a) in ranges.iter().enumerate() {
        for &b in &ranges[i + 1..] {
            apart(a, b)?;
        }
    }
    Ok(())
}

/// A device address as the libraries' `void *`.
pub(super) fn device_ptr(address: CUdeviceptr) -> *mut c_void {
    address as usize as *mut c_void
}

impl Drop for Solver {
    fn drop(&mut self) {
        let Ok(cusolver) = cuda_sys::cusolver() else {
            return;
        };
        // The handle's host workspace and Jacobi parameters may be read by queued work: wait for
        // it (errors cannot be returned from `drop`).
        // A failure to wait or to make the context current still destroys (as for a cuFFT plan).
        let _ = self.stream.synchronize_quiet();
        let _ = self.stream.context().set_current();
        // SAFETY (each): every object was made by its create function, is destroyed once, here,
        // after the stream was waited for; null ones were never made.
        unsafe {
            if !self.syevj.is_null() {
                if let Ok(destroy) = cusolver.cusolverDnDestroySyevjInfo() {
                    let _ = destroy(self.syevj);
                }
            }
            if !self.gesvdj.is_null() {
                if let Ok(destroy) = cusolver.cusolverDnDestroyGesvdjInfo() {
                    let _ = destroy(self.gesvdj);
                }
            }
            if !self.params.is_null() {
                if let Ok(destroy) = cusolver.cusolverDnDestroyParams() {
                    let _ = destroy(self.params);
                }
            }
            if let Ok(destroy) = cusolver.cusolverDnDestroy() {
                let _ = destroy(self.handle);
            }
        }
    }
}

impl std::fmt::Debug for Solver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Solver")
            .field("handle", &self.handle)
            .field("stream", &self.stream)
            .field("pending_infos", &self.infos.pending())
            .finish()
    }
}

/// Whether `count` matrices of `a` are within `cusolverDnXsyevBatched`'s limit: `n * lda * count`
/// at most `i32::MAX`.
pub fn syev_batch_fits(a: Matrix, count: usize) -> bool {
    a.rows
        .checked_mul(a.ld)
        .and_then(|elements| elements.checked_mul(count))
        .is_some_and(|elements| elements <= i32::MAX as usize)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_are_checked_before_any_call() {
        assert!(gesvd_shape(Matrix::new(4, 3)).is_ok());
        let wide = gesvd_shape(Matrix::new(3, 4));
        assert!(matches!(wide, Err(Error::InvalidValue(m)) if m.contains("m >= n")));
        assert_eq!(gesvd_lds(SvdVectors::All, Matrix::new(5, 3)), (5, 3));
        assert_eq!(gesvd_lds(SvdVectors::None, Matrix::new(5, 3)), (1, 1));
        assert_eq!(orgqr_sizes(Matrix::new(5, 3), 3).unwrap(), (5, 3, 3, 5));
        assert!(orgqr_sizes(Matrix::new(5, 3), 4).is_err());
        assert!(orgqr_sizes(Matrix::new(2, 3), 2).is_err());
        assert!(rhs_rows("B", Matrix::new(4, 2), 4).is_ok());
        let mismatched = rhs_rows("B", Matrix::new(3, 2), 4);
        assert!(matches!(mismatched, Err(Error::InvalidValue(m)) if m.contains("4 equations")));
        assert_eq!(SvdVectors::Thin.job(), b'S' as std::ffi::c_char);
    }

    #[test]
    fn overlap_is_decided_by_address_ranges() {
        assert!(apart(("A", 0x1000, 0x100), ("B", 0x1100, 8)).is_ok());
        assert!(apart(("A", 0x1000, 0x101), ("B", 0x1100, 8)).is_err());
        assert!(
            apart(("A", 0x1000, 0), ("B", 0x1000, 8)).is_ok(),
            "empty ranges overlap nothing"
        );
        assert!(all_apart(&[("A", 0, 8), ("S", 8, 8), ("U", 16, 8)]).is_ok());
        let overlap = all_apart(&[("A", 0, 8), ("S", 8, 8), ("U", 4, 8)]);
        assert!(matches!(overlap, Err(Error::InvalidValue(m)) if m.contains("A") && m.contains("U")));
    }

    #[test]
    fn syev_batches_stay_within_cusolvers_element_limit() {
        assert!(syev_batch_fits(Matrix::square(100), 500));
        assert!(syev_batch_fits(Matrix::square(1 << 10), (1 << 11) - 1));
        assert!(!syev_batch_fits(Matrix::square(1 << 10), 1 << 11));
        assert!(!syev_batch_fits(Matrix::square(1 << 40), 1 << 40));
    }
}
