//! cuBLAS ([`Blas`]) and cuBLASLt ([`Lt`]): matrix products of row-major matrices in
//! [`DeviceBuffer`]s (or any [`Operand`]), queued on a [`Stream`]: one at a time
//! ([`Blas::gemm`], [`Lt::matmul`]) or as a strided batch ([`Blas::gemm_strided_batched`]);
//! and BLAS levels 1 and 2 ([`Blas::dot`], [`Blas::nrm2`], [`Blas::axpy`], [`Blas::scal`],
//! [`Blas::gemv`]).
//!
//! # Row-major
//! Every matrix here is row-major, as Rust (and NumPy, and torch) lay them out: element
//! `(i, j)` of a matrix with leading dimension `ld` is at index `i * ld + j`, and `ld` is at
//! least the number of columns. [`Gemm`] describes `C = alpha * op(A) op(B) + beta * C` with
//! `op(A)` of `m x k`, `op(B)` of `k x n` and `C` of `m x n` in those terms.
//!
//! cuBLAS is column-major. A row-major matrix read as column-major is its transpose, so the
//! product is handed to cuBLAS as `C^T = op(B)^T op(A)^T`: the operands swapped, `m` and `n`
//! swapped, each operand's transpose flag kept and every leading dimension unchanged. No data
//! moves, and the result is exactly the row-major `C`.
//!
//! # Threads
//! A handle ([`Blas`], [`Lt`]) may move to another thread (`Send`: cuBLAS allows a handle to
//! be used from any thread as long as no two threads use it at once) but not be shared
//! (`!Sync`); every call makes the stream's context current on the calling thread first.

use std::ffi::{c_void, CStr};

use std::mem::size_of;

use cuda_driver::{
    Access, DeviceBuffer, DeviceCopy, DeviceMemory, DeviceSlice, DeviceSliceMut, ManagedBuffer, Stream, StreamUse,
};
use cuda_sys::cublas::{cublasComputeType_t, cublasStatus_t, cudaDataType_t};
use cuda_sys::driver::CUdeviceptr;
use half::{bf16, f16};
use num_complex::Complex;

use crate::{Error, Result};

mod gemm;
mod lt;
mod replay;
mod vector;

pub use gemm::Blas;
pub use lt::{Epilogue, Lt, LtElement};
pub use replay::REMEMBERED_CALLS;
pub use vector::{Gemv, GemvElement, GemvFn};

/// Bytes of device memory each handle owns as its workspace (`cublasSetWorkspace`, and
/// cuBLASLt's per-call workspace): 32 MiB, enough for the fastest kernels on Hopper.
pub const WORKSPACE_BYTES: usize = 32 << 20;

/// Loads cuBLAS and cuBLASLt now (each is loaded once per process, on first use), so a
/// program can say early that they are missing: [`Error::Load`] lists every place tried.
/// [`Blas::new`] and [`Lt::new`] load their library the same way, before touching the GPU.
pub fn load() -> Result<()> {
    cuda_sys::cublas()?;
    cuda_sys::cublaslt()?;
    Ok(())
}

mod sealed {
    /// What cuBLAS needs to know of an element type.
    pub trait Sealed: Copy {
        /// The type of `alpha` and `beta`: `f64` for `f64`, `f32` for the other real types, the
        /// element type itself for complex ones.
        type Scalar: Copy;
        /// Its `cudaDataType_t` value.
        const DATA_TYPE: u32;
        /// Its `cublasComputeType_t`; for `f32`, TF32 tensor cores where `allow_tf32`.
        fn compute_type(allow_tf32: bool) -> u32;
        /// `alpha` or `beta` as [`Self::Scalar`].
        fn scalar(value: f64) -> Self::Scalar;
    }
}

/// An element type cuBLAS multiplies: `f32`, `f64`, [`half::f16`], [`half::bf16`], and the
/// complex `Complex<f32>` and `Complex<f64>` (cuBLAS's C and Z products, through `GemmEx`).
///
/// | type | compute type | `alpha`, `beta` |
/// |---|---|---|
/// | `f32` | `CUBLAS_COMPUTE_32F` (`32F_FAST_TF32` with [`Blas::set_allow_tf32`]) | `f32` |
/// | `f64` | `CUBLAS_COMPUTE_64F` | `f64` |
/// | `f16`, `bf16` | `CUBLAS_COMPUTE_32F` (f32 accumulation) | `f32` |
/// | `Complex<f32>` (`CUDA_C_32F`) | `CUBLAS_COMPUTE_32F` | `Complex<f32>` |
/// | `Complex<f64>` (`CUDA_C_64F`) | `CUBLAS_COMPUTE_64F` | `Complex<f64>` |
pub trait Element: DeviceCopy + sealed::Sealed {}

const COMPUTE_32F: u32 = cublasComputeType_t::CUBLAS_COMPUTE_32F.0;
const COMPUTE_64F: u32 = cublasComputeType_t::CUBLAS_COMPUTE_64F.0;

macro_rules! element {
    ($ty:ty, $data:ident, $scalar:ty, |$tf32:ident| $compute:expr) => {
        element!($ty, $data, $scalar, |$tf32| $compute, |value| value as $scalar);
    };
    ($ty:ty, $data:ident, $scalar:ty, |$tf32:ident| $compute:expr, |$value:ident| $to_scalar:expr) => {
        impl sealed::Sealed for $ty {
            type Scalar = $scalar;
            const DATA_TYPE: u32 = cudaDataType_t::$data.0;
            fn compute_type($tf32: bool) -> u32 {
                $compute
            }
            fn scalar($value: f64) -> $scalar {
                $to_scalar
            }
        }
        impl Element for $ty {}
    };
}

element!(f32, CUDA_R_32F, f32, |tf32| if tf32 {
    cublasComputeType_t::CUBLAS_COMPUTE_32F_FAST_TF32.0
} else {
    COMPUTE_32F
});
element!(f64, CUDA_R_64F, f64, |_tf32| cublasComputeType_t::CUBLAS_COMPUTE_64F.0);
element!(f16, CUDA_R_16F, f32, |_tf32| COMPUTE_32F);
element!(bf16, CUDA_R_16BF, f32, |_tf32| COMPUTE_32F);
element!(Complex<f32>, CUDA_C_32F, Complex<f32>, |_tf32| COMPUTE_32F, |value| {
    Complex::new(value as f32, 0.0)
});
element!(Complex<f64>, CUDA_C_64F, Complex<f64>, |_tf32| COMPUTE_64F, |value| {
    Complex::new(value, 0.0)
});

/// The real element types (`f32`, `f64`, `f16`, `bf16`): those [`Blas::nrm2`], [`Blas::axpy`]
/// and [`Blas::scal`] take. Their complex forms are not offered: on an H200 (driver 580,
/// cuBLAS 13.0) one of them ended the process with a segmentation fault inside cuBLAS for
/// complex128, which one not yet known. `dot` and `dotc` take complex types.
pub trait RealElement: Element {}

impl RealElement for f32 {}
impl RealElement for f64 {}
impl RealElement for f16 {}
impl RealElement for bf16 {}

/// One matrix product, `C = alpha * op(A) op(B) + beta * C`, in row-major terms (see the
/// [module docs](self)): `op(A)` is `m x k`, `op(B)` is `k x n`, `C` is `m x n`.
///
/// `op(X)` is `X`, or its transpose where `transpose_a`/`transpose_b` is set: a transposed `A`
/// is stored as `k x m`. A leading dimension left `None` is the stored matrix's column count
/// (tightly packed rows). `alpha` and `beta` are converted to the element type's scalar type.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Gemm {
    /// Rows of `op(A)` and `C`.
    pub m: usize,
    /// Columns of `op(B)` and `C`.
    pub n: usize,
    /// Columns of `op(A)`, rows of `op(B)`.
    pub k: usize,
    /// `op(A) = A^T`: `A` is stored `k x m`.
    pub transpose_a: bool,
    /// `op(B) = B^T`: `B` is stored `n x k`.
    pub transpose_b: bool,
    /// Elements between the starts of two rows of `A` as stored; at least its columns.
    pub lda: Option<usize>,
    /// Elements between the starts of two rows of `B` as stored.
    pub ldb: Option<usize>,
    /// Elements between the starts of two rows of `C`.
    pub ldc: Option<usize>,
    /// The product's factor (1 by default).
    pub alpha: f64,
    /// `C`'s factor (0 by default: `C` is only written).
    pub beta: f64,
}

impl Gemm {
    /// `C = A B` with `A` of `m x k`, `B` of `k x n`, all tightly packed.
    pub fn new(m: usize, n: usize, k: usize) -> Gemm {
        Gemm {
            m,
            n,
            k,
            transpose_a: false,
            transpose_b: false,
            lda: None,
            ldb: None,
            ldc: None,
            alpha: 1.0,
            beta: 0.0,
        }
    }

    /// Uses `A^T` (`A` stored `k x m`).
    pub fn transpose_a(mut self) -> Gemm {
        self.transpose_a = true;
        self
    }

    /// Uses `B^T` (`B` stored `n x k`).
    pub fn transpose_b(mut self) -> Gemm {
        self.transpose_b = true;
        self
    }

    /// Sets `A`'s leading dimension.
    pub fn lda(mut self, lda: usize) -> Gemm {
        self.lda = Some(lda);
        self
    }

    /// Sets `B`'s leading dimension.
    pub fn ldb(mut self, ldb: usize) -> Gemm {
        self.ldb = Some(ldb);
        self
    }

    /// Sets `C`'s leading dimension.
    pub fn ldc(mut self, ldc: usize) -> Gemm {
        self.ldc = Some(ldc);
        self
    }

    /// Sets `alpha`.
    pub fn alpha(mut self, alpha: f64) -> Gemm {
        self.alpha = alpha;
        self
    }

    /// Sets `beta`.
    pub fn beta(mut self, beta: f64) -> Gemm {
        self.beta = beta;
        self
    }

    /// The checked shape: every size positive and within cuBLAS's 32-bit `int`, every leading
    /// dimension at least its matrix's columns, and the elements each operand spans.
    pub(crate) fn check(&self) -> Result<Shape> {
        let Gemm { m, n, k, .. } = *self;
        if m == 0 || n == 0 || k == 0 {
            return Err(Error::InvalidValue(format!(
                "gemm of m = {m}, n = {n}, k = {k}: every size must be at least 1"
            )));
        }
        let (a_rows, a_cols) = if self.transpose_a { (k, m) } else { (m, k) };
        let (b_rows, b_cols) = if self.transpose_b { (n, k) } else { (k, n) };
        let a = Matrix::new("A", a_rows, a_cols, self.lda)?;
        let b = Matrix::new("B", b_rows, b_cols, self.ldb)?;
        let c = Matrix::new("C", m, n, self.ldc)?;
        Ok(Shape {
            m: to_int("m", m)?,
            n: to_int("n", n)?,
            k: to_int("k", k)?,
            a,
            b,
            c,
        })
    }
}

/// A batch of equally shaped products for [`Blas::gemm_strided_batched`]: `count` matrices per
/// operand, matrix `i` of `A` starting `i * stride_a` elements after `A`'s first (likewise `B`
/// and `C`). A stride of 0 for `A` or `B` reuses one matrix for every product (broadcasting).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Batch {
    /// Products in the batch, at least 1.
    pub count: usize,
    /// Elements between the starts of two matrices of `A`.
    pub stride_a: usize,
    /// Elements between the starts of two matrices of `B`.
    pub stride_b: usize,
    /// Elements between the starts of two matrices of `C`: at least the elements one spans.
    pub stride_c: usize,
}

impl Batch {
    /// `count` products of tightly packed matrices stored one after another: each stride is its
    /// matrix's span under `gemm`.
    pub fn packed(gemm: &Gemm, count: usize) -> Result<Batch> {
        let shape = gemm.check()?;
        Ok(Batch {
            count,
            stride_a: shape.a.span,
            stride_b: shape.b.span,
            stride_c: shape.c.span,
        })
    }

    /// The strides as cuBLAS takes them, and the elements each operand spans.
    pub(crate) fn check(&self, shape: &Shape) -> Result<BatchSpans> {
        let count = to_int("batch count", self.count)?;
        if count == 0 {
            return Err(Error::InvalidValue(
                "a batch of 0 products: count must be at least 1".into(),
            ));
        }
        if self.count > 1 && self.stride_c < shape.c.span {
            return Err(Error::InvalidValue(format!(
                "C's matrices span {} elements each, so its batch stride must be at least that \
                 (the products must not overlap); it is {}",
                shape.c.span, self.stride_c
            )));
        }
        let span = |name: &str, stride: usize, matrix: usize| {
            (self.count - 1)
                .checked_mul(stride)
                .and_then(|start| start.checked_add(matrix))
                .filter(|&span| i64::try_from(span).is_ok())
                .ok_or_else(|| {
                    Error::InvalidValue(format!(
                        "{name}: {} matrices {stride} elements apart overflow",
                        self.count
                    ))
                })
        };
        Ok(BatchSpans {
            count,
            a: span("A", self.stride_a, shape.a.span)?,
            b: span("B", self.stride_b, shape.b.span)?,
            c: span("C", self.stride_c, shape.c.span)?,
            stride_a: batch_stride(self.count, self.stride_a),
            stride_b: batch_stride(self.count, self.stride_b),
            stride_c: batch_stride(self.count, self.stride_c),
        })
    }
}

/// A stride as cuBLAS's `long long`: below the span it is part of (which fits) when there is
/// more than one matrix; unused, so 0, for one.
fn batch_stride(count: usize, stride: usize) -> i64 {
    match count {
        1 => 0,
        _ => i64::try_from(stride).unwrap_or(i64::MAX),
    }
}

/// A checked [`Batch`]: cuBLAS's count and strides, and the elements each operand spans.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct BatchSpans {
    pub(crate) count: i32,
    pub(crate) stride_a: i64,
    pub(crate) stride_b: i64,
    pub(crate) stride_c: i64,
    pub(crate) a: usize,
    pub(crate) b: usize,
    pub(crate) c: usize,
}

/// A [`Gemm`] whose sizes were checked.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Shape {
    pub(crate) m: i32,
    pub(crate) n: i32,
    pub(crate) k: i32,
    pub(crate) a: Matrix,
    pub(crate) b: Matrix,
    pub(crate) c: Matrix,
}

/// One row-major operand as stored: rows, columns, leading dimension and the elements it spans.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Matrix {
    pub(crate) rows: i32,
    pub(crate) cols: i32,
    pub(crate) ld: i32,
    pub(crate) span: usize,
}

impl Matrix {
    fn new(name: &'static str, rows: usize, cols: usize, ld: Option<usize>) -> Result<Matrix> {
        let ld = ld.unwrap_or(cols);
        if ld < cols {
            return Err(Error::InvalidValue(format!(
                "{name} is stored {rows} x {cols} (row-major), so its leading dimension must be \
                 at least {cols}; it is {ld}"
            )));
        }
        let span = (rows - 1)
            .checked_mul(ld)
            .and_then(|start| start.checked_add(cols))
            .ok_or_else(|| Error::InvalidValue(format!("{name}: {rows} rows of leading dimension {ld} overflow")))?;
        Ok(Matrix {
            rows: to_int(name, rows)?,
            cols: to_int(name, cols)?,
            ld: to_int(name, ld)?,
            span,
        })
    }
}

fn to_int(what: &str, value: usize) -> Result<i32> {
    i32::try_from(value)
        .map_err(|_| Error::InvalidValue(format!("{what}: {value} is over cuBLAS's 32-bit limit ({})", i32::MAX)))
}

/// Device memory holding elements of `T`, taken through the device-memory contract: what BLAS
/// operands are. Implemented for cuda-driver's buffers, slices and managed buffers; a crate
/// above implements it for its own memory (cuda-core's `DeviceArray`).
pub trait Operand<T>: DeviceMemory {}

impl<T: DeviceCopy> Operand<T> for DeviceBuffer<T> {}
impl<T: DeviceCopy> Operand<T> for DeviceSlice<'_, T> {}
impl<T: DeviceCopy> Operand<T> for DeviceSliceMut<'_, T> {}
impl<T: DeviceCopy> Operand<T> for ManagedBuffer<T> {}

/// One operand's device address and its use by `stream`, once its length and context are
/// checked: the memory holds at least `span` elements and belongs to the stream's context.
/// `stream` is ordered after the memory's conflicting uses on other streams (events); the
/// returned guard ends the use, and must be dropped once the library call is queued.
///
/// The one place an operand's memory is read. The use begins before the length is read, so
/// a view that is not dense memory (see [`DeviceMemory`]) is refused as such
/// ([`cuda_driver::Error::NotDense`]) before anything else; an operand refused after that
/// queued nothing.
fn operand<'m, T, M: Operand<T> + ?Sized>(
    name: &'static str,
    memory: &'m M,
    span: usize,
    stream: &Stream,
    access: Access,
) -> Result<(CUdeviceptr, StreamUse<'m>)> {
    if memory.context() != stream.context() {
        return Err(Error::WrongContext {
            object: name,
            used_with: "stream of the handle",
        });
    }
    let used = memory.begin_use(stream, access)?;
    let len = memory.byte_len() / size_of::<T>();
    if len < span {
        return Err(Error::InvalidValue(format!(
            "{name} spans {span} elements but its memory holds {len}"
        )));
    }
    Ok((memory.device_ptr(), used))
}

/// A device address as the libraries' `void *`.
fn device_ptr(address: CUdeviceptr) -> *mut c_void {
    address as usize as *mut c_void
}

/// `Ok` for `CUBLAS_STATUS_SUCCESS`, otherwise [`status_error`].
pub(crate) fn check(library: &'static str, function: &'static str, code: u32) -> Result<()> {
    if code == cublasStatus_t::CUBLAS_STATUS_SUCCESS.0 {
        return Ok(());
    }
    Err(status_error(library, function, code))
}

/// [`Error::Status`] for `code`, with its name as the library reports it.
fn status_error(library: &'static str, function: &'static str, code: u32) -> Error {
    Error::Status {
        library,
        function,
        code,
        name: status_name(library, code).unwrap_or_else(|| format!("status {code}")),
    }
}

/// `cublasGetStatusName` (`cublasLtGetStatusName` for cuBLASLt's codes); `None` where the
/// library is not loaded or does not know the code.
fn status_name(library: &str, code: u32) -> Option<String> {
    let text = if library == "cuBLASLt" {
        let name = cuda_sys::cublaslt().ok()?.cublasLtGetStatusName().ok()?;
        // SAFETY: takes any status value and returns a static string or null.
        unsafe { name(cuda_sys::cublaslt::cublasStatus_t(code)) }
    } else {
        let name = cuda_sys::cublas().ok()?.cublasGetStatusName().ok()?;
        // SAFETY: as above.
        unsafe { name(cublasStatus_t(code)) }
    };
    if text.is_null() {
        return None;
    }
    // SAFETY: a non-null result is a NUL-terminated static string.
    Some(unsafe { CStr::from_ptr(text) }.to_string_lossy().into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn invalid(result: Result<Shape>) -> String {
        match result {
            Err(Error::InvalidValue(message)) => message,
            other => panic!("expected InvalidValue, got {other:?}"),
        }
    }

    #[test]
    fn spans_follow_the_row_major_layout() {
        let shape = Gemm::new(3, 5, 4).check().unwrap();
        assert_eq!((shape.m, shape.n, shape.k), (3, 5, 4));
        assert_eq!((shape.a.rows, shape.a.cols, shape.a.ld, shape.a.span), (3, 4, 4, 12));
        assert_eq!((shape.b.rows, shape.b.cols, shape.b.ld, shape.b.span), (4, 5, 5, 20));
        assert_eq!((shape.c.rows, shape.c.cols, shape.c.ld, shape.c.span), (3, 5, 5, 15));
        // Transposed operands are stored the other way round; a wider leading dimension
        // spans (rows - 1) * ld + cols.
        let shape = Gemm::new(3, 5, 4)
            .transpose_a()
            .transpose_b()
            .lda(7)
            .ldc(9)
            .check()
            .unwrap();
        assert_eq!((shape.a.rows, shape.a.cols, shape.a.ld, shape.a.span), (4, 3, 7, 24));
        assert_eq!((shape.b.rows, shape.b.cols, shape.b.ld, shape.b.span), (5, 4, 4, 20));
        assert_eq!((shape.c.ld, shape.c.span), (9, 23));
    }

    #[test]
    fn bad_shapes_are_typed_errors() {
        assert!(invalid(Gemm::new(0, 5, 4).check()).contains("at least 1"));
        let message = invalid(Gemm::new(3, 5, 4).lda(3).check());
        assert!(
            message.contains("A is stored 3 x 4") && message.contains("it is 3"),
            "{message}"
        );
        let message = invalid(Gemm::new(3, 5, 4).transpose_b().ldb(3).check());
        assert!(message.contains("B is stored 5 x 4"), "{message}");
        let message = invalid(Gemm::new(3, 5, 4).ldc(4).check());
        assert!(message.contains("C is stored 3 x 5"), "{message}");
        let message = invalid(Gemm::new(1 << 31, 1, 1).check());
        assert!(message.contains("32-bit"), "{message}");
        let message = invalid(Gemm::new(2, 1, usize::MAX).check());
        assert!(message.contains("overflow"), "{message}");
    }

    #[test]
    fn batches_span_every_matrix() {
        let gemm = Gemm::new(3, 5, 4);
        let shape = gemm.check().unwrap();
        let batch = Batch::packed(&gemm, 6).unwrap();
        assert_eq!((batch.stride_a, batch.stride_b, batch.stride_c), (12, 20, 15));
        let spans = batch.check(&shape).unwrap();
        assert_eq!((spans.count, spans.a, spans.b, spans.c), (6, 72, 120, 90));
        // A broadcast B (stride 0) spans one matrix.
        let spans = Batch { stride_b: 0, ..batch }.check(&shape).unwrap();
        assert_eq!((spans.b, spans.stride_b), (20, 0));
        // One product ignores the strides.
        let spans = Batch {
            count: 1,
            stride_c: 0,
            stride_a: usize::MAX,
            ..batch
        }
        .check(&shape)
        .unwrap();
        assert_eq!((spans.a, spans.stride_a, spans.stride_c), (12, 0, 0));
        // Overlapping products, empty and huge batches are refused.
        let overlap = Batch { stride_c: 14, ..batch }.check(&shape);
        assert!(matches!(overlap, Err(Error::InvalidValue(m)) if m.contains("overlap")));
        assert!(matches!(
            Batch { count: 0, ..batch }.check(&shape),
            Err(Error::InvalidValue(_))
        ));
        let huge = Batch {
            stride_a: usize::MAX / 2,
            ..batch
        }
        .check(&shape);
        assert!(matches!(huge, Err(Error::InvalidValue(m)) if m.contains("overflow")));
        assert!(matches!(
            Batch {
                count: 1 << 31,
                ..batch
            }
            .check(&shape),
            Err(Error::InvalidValue(_))
        ));
    }

    #[test]
    fn element_types_pick_their_compute_types() {
        use sealed::Sealed;
        assert_eq!(<f32 as Sealed>::compute_type(false), COMPUTE_32F);
        assert_eq!(
            <f32 as Sealed>::compute_type(true),
            cublasComputeType_t::CUBLAS_COMPUTE_32F_FAST_TF32.0
        );
        assert_eq!(
            <f64 as Sealed>::compute_type(true),
            cublasComputeType_t::CUBLAS_COMPUTE_64F.0
        );
        assert_eq!(<bf16 as Sealed>::compute_type(true), COMPUTE_32F);
        assert_eq!(<f16 as Sealed>::DATA_TYPE, cudaDataType_t::CUDA_R_16F.0);
        assert_eq!(<bf16 as Sealed>::DATA_TYPE, cudaDataType_t::CUDA_R_16BF.0);
        assert_eq!(<f64 as Sealed>::scalar(0.1), 0.1);
        assert_eq!(<bf16 as Sealed>::scalar(0.5), 0.5f32);
        assert_eq!(<Complex<f32> as Sealed>::scalar(0.5), Complex::new(0.5f32, 0.0));
        assert_eq!(
            <Complex<f64> as Sealed>::compute_type(true),
            cublasComputeType_t::CUBLAS_COMPUTE_64F.0
        );
        assert_eq!(<Complex<f32> as Sealed>::DATA_TYPE, cudaDataType_t::CUDA_C_32F.0);
    }

    #[test]
    fn a_failed_status_is_named_or_numbered() {
        assert!(check("cuBLAS", "cublasGemmEx", 0).is_ok());
        match check("cuBLAS", "cublasGemmEx", 7) {
            Err(Error::Status {
                library,
                function,
                code,
                name,
            }) => {
                assert_eq!((library, function, code), ("cuBLAS", "cublasGemmEx", 7));
                // With cuBLAS loaded its name; without, the number.
                assert!(name == "CUBLAS_STATUS_INVALID_VALUE" || name == "status 7", "{name}");
            }
            other => panic!("{other:?}"),
        }
    }
}
