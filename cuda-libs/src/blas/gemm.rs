//! [`Blas`]: a cuBLAS handle bound to one stream, and its `gemm`.

use std::ffi::c_void;

use cuda_driver::{Access, DeviceBuffer, DeviceMemory, DeviceMemoryMut, Stream};
use cuda_sys::cublas::{cublasComputeType_t, cublasGemmAlgo_t, cublasHandle_t, cublasOperation_t, cudaDataType_t};

use super::replay::handle_lifecycle;
use super::{check, device_ptr, operand, Batch, Element, Gemm, Operand, WORKSPACE_BYTES};
use crate::Result;

const CUBLAS: &str = "cuBLAS";

/// A cuBLAS handle whose work is queued on one stream, with a workspace of its own
/// ([`WORKSPACE_BYTES`]).
///
/// `Send` but not `Sync`: cuBLAS lets a handle move between threads, never be used by two at
/// once. Destroyed on drop (errors there cannot be returned and are ignored); the workspace is
/// freed after the work queued on the stream is done.
pub struct Blas {
    pub(super) handle: cublasHandle_t,
    pub(super) stream: Stream,
    workspace: DeviceBuffer<u8>,
    allow_tf32: bool,
}

// SAFETY: cuBLAS allows a handle to be used from any host thread, one thread at a time; `Blas`
// is not `Sync`, and every call makes the stream's context current on the calling thread.
unsafe impl Send for Blas {}

impl Blas {
    /// Creates a handle for `stream` (`cublasCreate`, with the stream's context current),
    /// queues its work there (`cublasSetStream`) and gives it a workspace
    /// (`cublasSetWorkspace`). Loads cuBLAS first: a missing library is [`crate::Error::Load`].
    pub fn new(stream: &Stream) -> Result<Blas> {
        let cublas = cuda_sys::cublas()?;
        let create = cublas.cublasCreate_v2()?;
        let set_stream = cublas.cublasSetStream_v2()?;
        let set_workspace = cublas.cublasSetWorkspace_v2()?;
        // The lock is held while the handle is made (`cublasCreate` synchronises the device) and
        // released before anything below can fail: that error path drops `blas`, whose `drop`
        // takes the lock again, and a thread that takes the read lock twice deadlocks when a
        // capture is waiting for the write lock in between.
        let (workspace, handle) = {
            let _lifecycle = handle_lifecycle();
            stream.context().set_current()?;
            let workspace = DeviceBuffer::<u8>::alloc(stream.context(), WORKSPACE_BYTES)?;
            // Every call uses the workspace on `stream`: noted once, its free waits for the stream.
            drop(workspace.begin_use(stream, Access::Write)?);
            let mut handle = std::ptr::null_mut();
            // SAFETY: `handle` is a valid out-pointer; the stream's context is current.
            check(CUBLAS, "cublasCreate_v2", unsafe { create(&mut handle) }.0)?;
            (workspace, handle)
        };
        // From here `drop` destroys the handle, whatever fails next.
        let blas = Blas {
            handle,
            stream: stream.clone(),
            workspace,
            allow_tf32: false,
        };
        // SAFETY: the handle is live and the stream belongs to the current context; `blas`
        // keeps a clone of the stream, so it outlives the handle.
        let raw_stream = unsafe { stream.as_raw() }.cast();
        // SAFETY: as above.
        check(
            CUBLAS,
            "cublasSetStream_v2",
            unsafe { set_stream(blas.handle, raw_stream) }.0,
        )?;
        // SAFETY: the workspace is `WORKSPACE_BYTES` of device memory of this context, owned by
        // `blas` (freed after the handle is destroyed and the stream's work is done).
        let address = super::device_ptr(unsafe { blas.workspace.as_raw() });
        // SAFETY: as above.
        let status = unsafe { set_workspace(blas.handle, address, WORKSPACE_BYTES) };
        check(CUBLAS, "cublasSetWorkspace_v2", status.0)?;
        Ok(blas)
    }

    /// The stream this handle queues its work on.
    pub fn stream(&self) -> &Stream {
        &self.stream
    }

    /// The raw handle, for the crate's other wrappers that call cuBLAS on this stream (the
    /// solver's batched LU).
    #[cfg(feature = "solver")]
    pub(crate) fn raw_handle(&self) -> cublasHandle_t {
        self.handle
    }

    /// Lets `f32` products use TF32 tensor cores (`CUBLAS_COMPUTE_32F_FAST_TF32`): much faster,
    /// with inputs rounded to 10 mantissa bits. Off by default (`CUBLAS_COMPUTE_32F`, full
    /// `f32`); other element types are unaffected.
    pub fn set_allow_tf32(&mut self, allow: bool) {
        self.allow_tf32 = allow;
    }

    /// Whether `f32` products may use TF32 (see [`Blas::set_allow_tf32`]).
    pub fn allow_tf32(&self) -> bool {
        self.allow_tf32
    }

    /// Queues `C = alpha * op(A) op(B) + beta * C` (row-major, see [`Gemm`]) on the handle's
    /// stream through `cublasGemmEx`, with the compute type of [`Element`].
    ///
    /// Shapes, leading dimensions and buffer lengths (each buffer must hold the elements its
    /// matrix spans) are checked first, as is each buffer's context; a failure is
    /// [`crate::Error::InvalidValue`] or [`crate::Error::WrongContext`], before any call.
    pub fn gemm<T: Element>(
        &mut self,
        gemm: &Gemm,
        a: &(impl Operand<T> + ?Sized),
        b: &(impl Operand<T> + ?Sized),
        c: &mut (impl Operand<T> + DeviceMemoryMut + ?Sized),
    ) -> Result<()> {
        let shape = gemm.check()?;
        let gemm_ex = cuda_sys::cublas()?.cublasGemmEx()?;
        let (a, _a_use) = operand::<T, _>("A", a, shape.a.span, &self.stream, Access::Read)?;
        let (b, _b_use) = operand::<T, _>("B", b, shape.b.span, &self.stream, Access::Read)?;
        let (c, _c_use) = operand::<T, _>("C", c, shape.c.span, &self.stream, Access::Write)?;
        self.stream.context().set_current()?;
        let alpha = T::scalar(gemm.alpha);
        let beta = T::scalar(gemm.beta);
        let data_type = cudaDataType_t(T::DATA_TYPE);
        let compute_type = cublasComputeType_t(T::compute_type(self.allow_tf32));
        // Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T: B first, then A,
        // with n and m swapped (see the module docs).
        // SAFETY: the handle is live and its context current; `alpha` and `beta` are host values
        // of the scalar type cuBLAS expects for this compute type (host pointer mode, the
        // default); each operand's buffer holds the elements its matrix spans, and C does not
        // overlap A or B (it is borrowed exclusively).
        let status = unsafe {
            gemm_ex(
                self.handle,
                operation(gemm.transpose_b),
                operation(gemm.transpose_a),
                shape.n,
                shape.m,
                shape.k,
                (&alpha as *const T::Scalar).cast::<c_void>(),
                device_ptr(b),
                data_type,
                shape.b.ld,
                device_ptr(a),
                data_type,
                shape.a.ld,
                (&beta as *const T::Scalar).cast::<c_void>(),
                device_ptr(c),
                data_type,
                shape.c.ld,
                compute_type,
                cublasGemmAlgo_t::CUBLAS_GEMM_DEFAULT,
            )
        };
        check(CUBLAS, "cublasGemmEx", status.0)
    }

    /// Queues `batch.count` products at once, `C_i = alpha * op(A_i) op(B_i) + beta * C_i`
    /// (row-major, each as [`Gemm`] describes), through `cublasGemmStridedBatchedEx`: matrix
    /// `i` of each operand starts `i * stride` elements after its first (see [`Batch`]). A
    /// stride of 0 for `A` or `B` uses one matrix for every product (a broadcast operand);
    /// `C`'s matrices must not overlap.
    ///
    /// Checked as [`Blas::gemm`] is, with each buffer holding every matrix it spans; a failure
    /// is [`crate::Error::InvalidValue`] or [`crate::Error::WrongContext`] before any call.
    pub fn gemm_strided_batched<T: Element>(
        &mut self,
        gemm: &Gemm,
        batch: &Batch,
        a: &(impl Operand<T> + ?Sized),
        b: &(impl Operand<T> + ?Sized),
        c: &mut (impl Operand<T> + DeviceMemoryMut + ?Sized),
    ) -> Result<()> {
        let shape = gemm.check()?;
        let spans = batch.check(&shape)?;
        let batched = cuda_sys::cublas()?.cublasGemmStridedBatchedEx()?;
        let (a, _a_use) = operand::<T, _>("A", a, spans.a, &self.stream, Access::Read)?;
        let (b, _b_use) = operand::<T, _>("B", b, spans.b, &self.stream, Access::Read)?;
        let (c, _c_use) = operand::<T, _>("C", c, spans.c, &self.stream, Access::Write)?;
        self.stream.context().set_current()?;
        let alpha = T::scalar(gemm.alpha);
        let beta = T::scalar(gemm.beta);
        let data_type = cudaDataType_t(T::DATA_TYPE);
        let compute_type = cublasComputeType_t(T::compute_type(self.allow_tf32));
        // As in `gemm`: column-major C^T = op(B)^T op(A)^T, B first.
        // SAFETY: as in `gemm`; each buffer holds the elements all its matrices span (checked by
        // `Batch::check`), and C's matrices neither overlap each other nor A or B.
        let status = unsafe {
            batched(
                self.handle,
                operation(gemm.transpose_b),
                operation(gemm.transpose_a),
                shape.n,
                shape.m,
                shape.k,
                (&alpha as *const T::Scalar).cast::<c_void>(),
                device_ptr(b),
                data_type,
                shape.b.ld,
                spans.stride_b,
                device_ptr(a),
                data_type,
                shape.a.ld,
                spans.stride_a,
                (&beta as *const T::Scalar).cast::<c_void>(),
                device_ptr(c),
                data_type,
                shape.c.ld,
                spans.stride_c,
                spans.count,
                compute_type,
                cublasGemmAlgo_t::CUBLAS_GEMM_DEFAULT,
            )
        };
        check(CUBLAS, "cublasGemmStridedBatchedEx", status.0)
    }
}

/// `CUBLAS_OP_T` where transposed, `CUBLAS_OP_N` otherwise.
pub(super) fn operation(transpose: bool) -> cublasOperation_t {
    if transpose {
        cublasOperation_t::CUBLAS_OP_T
    } else {
        cublasOperation_t::CUBLAS_OP_N
    }
}

impl Drop for Blas {
    fn drop(&mut self) {
        let Some(destroy) = cuda_sys::cublas()
            .ok()
            .and_then(|cublas| cublas.cublasDestroy_v2().ok())
        else {
            return;
        };
        if self.stream.context().set_current().is_err() {
            return;
        }
        let _lifecycle = handle_lifecycle();
        // SAFETY: the handle was created by `cublasCreate_v2` and is destroyed once, here, with
        // its context current. Its status cannot be returned from `drop`.
        let _ = unsafe { destroy(self.handle) };
    }
}

impl std::fmt::Debug for Blas {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Blas")
            .field("handle", &self.handle)
            .field("stream", &self.stream)
            .field("allow_tf32", &self.allow_tf32)
            .finish()
    }
}
