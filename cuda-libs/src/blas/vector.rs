//! BLAS levels 1 and 2 on [`Blas`]: `dot`, `nrm2`, `axpy`, `scal` (every [`Element`], through
//! cuBLAS's `Ex` functions) and `gemv` (`f32` and `f64`).
//!
//! A vector is `n` elements `inc` apart (`inc` at least 1) starting at its operand's first
//! element: it spans `(n - 1) * inc + 1` elements. Results of `dot` and `nrm2` are written to
//! device memory (cuBLAS's device pointer mode), so queuing them never waits for the GPU; the
//! `_host` forms wait for the stream and return the value. For `n = 0` they are 0, written by a
//! queued memset.

use std::ffi::c_void;
use std::mem::size_of;

use cuda_driver::{Access, DeviceBuffer, DeviceMemoryMut, DriverError};
use cuda_sys::cublas::{cublasPointerMode_t, cudaDataType_t};
use cuda_sys::driver::{CUdeviceptr, CUresult};

use super::gemm::operation;
use super::{check, device_ptr, operand, to_int, Blas, Element, Operand, RealElement};
use crate::{Error, Result};

const CUBLAS: &str = "cuBLAS";

/// `n` elements `inc` apart, checked: cuBLAS's `n` and `inc`, and the elements spanned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Vector {
    pub(crate) n: i32,
    pub(crate) inc: i32,
    pub(crate) span: usize,
}

impl Vector {
    pub(crate) fn new(name: &'static str, n: usize, inc: usize) -> Result<Vector> {
        if inc == 0 {
            return Err(Error::InvalidValue(format!("{name}: the increment must be at least 1")));
        }
        let span = match n {
            0 => 0,
            _ => (n - 1)
                .checked_mul(inc)
                .and_then(|start| start.checked_add(1))
                .ok_or_else(|| Error::InvalidValue(format!("{name}: {n} elements {inc} apart overflow")))?,
        };
        Ok(Vector {
            n: to_int(name, n)?,
            inc: to_int(name, inc)?,
            span,
        })
    }
}

/// The `cudaDataType_t` of an element type's scalars: `alpha` (its `Scalar`) and the execution
/// type of `dot`, `axpy` and `scal`. cuBLAS takes the element type itself for `f32`, `f64`
/// and the complex types (`CUDA_C_32F` executes `CUDA_C_32F` data; a real execution type is
/// `CUBLAS_STATUS_NOT_SUPPORTED`), and `f32` for `f16` and `bf16`.
fn scalar_type<T: Element>() -> cudaDataType_t {
    match cudaDataType_t(T::DATA_TYPE) {
        cudaDataType_t::CUDA_R_16F | cudaDataType_t::CUDA_R_16BF => cudaDataType_t::CUDA_R_32F,
        data_type => data_type,
    }
}

/// `y = alpha * op(A) x + beta * y` for a row-major `m x n` matrix `A` (leading dimension `lda`,
/// `n` when `None`): `op(A)` is `A`, or `A^T` where `transpose` is set. `x` has `op(A)`'s
/// columns (`n`, or `m` transposed) `incx` apart, `y` its rows `incy` apart.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Gemv {
    /// Rows of `A` as stored.
    pub m: usize,
    /// Columns of `A` as stored.
    pub n: usize,
    /// Uses `A^T`.
    pub transpose: bool,
    /// Elements between the starts of two rows of `A`; at least `n`.
    pub lda: Option<usize>,
    /// Elements between two elements of `x` (1 by default).
    pub incx: usize,
    /// Elements between two elements of `y` (1 by default).
    pub incy: usize,
    /// The product's factor (1 by default).
    pub alpha: f64,
    /// `y`'s factor (0 by default).
    pub beta: f64,
}

impl Gemv {
    /// `y = A x` for a tightly packed `m x n` `A` and unit increments.
    pub fn new(m: usize, n: usize) -> Gemv {
        Gemv {
            m,
            n,
            transpose: false,
            lda: None,
            incx: 1,
            incy: 1,
            alpha: 1.0,
            beta: 0.0,
        }
    }

    /// Uses `A^T`: `x` has `m` elements and `y` has `n`.
    pub fn transpose(mut self) -> Gemv {
        self.transpose = true;
        self
    }

    /// Sets `A`'s leading dimension.
    pub fn lda(mut self, lda: usize) -> Gemv {
        self.lda = Some(lda);
        self
    }

    /// Sets `alpha`.
    pub fn alpha(mut self, alpha: f64) -> Gemv {
        self.alpha = alpha;
        self
    }

    /// Sets `beta`.
    pub fn beta(mut self, beta: f64) -> Gemv {
        self.beta = beta;
        self
    }

    /// The checked sizes: `A`'s span, `x`, `y`, and cuBLAS's `m`, `n`, `lda`.
    pub(crate) fn check(&self) -> Result<(usize, Vector, Vector, [i32; 3])> {
        let Gemv { m, n, .. } = *self;
        if m == 0 || n == 0 {
            return Err(Error::InvalidValue(format!(
                "gemv of m = {m}, n = {n}: every size must be at least 1"
            )));
        }
        let lda = self.lda.unwrap_or(n);
        if lda < n {
            return Err(Error::InvalidValue(format!(
                "A is stored {m} x {n} (row-major), so its leading dimension must be at least {n}; it is {lda}"
            )));
        }
        let a_span = (m - 1)
            .checked_mul(lda)
            .and_then(|start| start.checked_add(n))
            .ok_or_else(|| Error::InvalidValue(format!("A: {m} rows of leading dimension {lda} overflow")))?;
        let (x_len, y_len) = if self.transpose { (m, n) } else { (n, m) };
        let x = Vector::new("x", x_len, self.incx)?;
        let y = Vector::new("y", y_len, self.incy)?;
        Ok((a_span, x, y, [to_int("m", m)?, to_int("n", n)?, to_int("lda", lda)?]))
    }
}

/// `cublasSgemv_v2` / `cublasDgemv_v2`'s signature for element type `T`.
pub type GemvFn<T> = unsafe extern "C" fn(
    cuda_sys::cublas::cublasHandle_t,
    cuda_sys::cublas::cublasOperation_t,
    i32,
    i32,
    *const T,
    *const T,
    i32,
    *const T,
    i32,
    *const T,
    *mut T,
    i32,
) -> cuda_sys::cublas::cublasStatus_t;

mod sealed {
    pub trait Sealed {}
}

/// An element type with a cuBLAS `gemv`: `f32` (`cublasSgemv`) and `f64` (`cublasDgemv`).
pub trait GemvElement: Element + sealed::Sealed {
    /// The `gemv` function for this type, loading cuBLAS if needed.
    fn gemv_function() -> Result<GemvFn<Self>>;
    /// `value` as this type (`alpha`, `beta`).
    fn from_f64(value: f64) -> Self;
}

impl sealed::Sealed for f32 {}
impl sealed::Sealed for f64 {}

impl GemvElement for f32 {
    fn gemv_function() -> Result<GemvFn<f32>> {
        Ok(cuda_sys::cublas()?.cublasSgemv_v2()?)
    }
    fn from_f64(value: f64) -> f32 {
        value as f32
    }
}

impl GemvElement for f64 {
    fn gemv_function() -> Result<GemvFn<f64>> {
        Ok(cuda_sys::cublas()?.cublasDgemv_v2()?)
    }
    fn from_f64(value: f64) -> f64 {
        value
    }
}

/// Sets the handle's pointer mode for the calls in `f`, then back to host (the mode every other
/// call of this crate expects).
fn with_pointer_mode<R>(blas: &Blas, mode: cublasPointerMode_t, f: impl FnOnce() -> Result<R>) -> Result<R> {
    let set = cuda_sys::cublas()?.cublasSetPointerMode_v2()?;
    // SAFETY: the handle is live and its context current (the caller made it so).
    check(CUBLAS, "cublasSetPointerMode_v2", unsafe { set(blas.handle, mode) }.0)?;
    let result = f();
    // SAFETY: as above.
    let restored = check(
        CUBLAS,
        "cublasSetPointerMode_v2",
        unsafe { set(blas.handle, cublasPointerMode_t::CUBLAS_POINTER_MODE_HOST) }.0,
    );
    let value = result?;
    restored.map(|()| value)
}

impl Blas {
    /// Queues `result[0] = x . y` (`cublasDotEx`, accumulating in `f32` for `f16`/`bf16`) for
    /// `n` elements of `x` and `y`, `incx` and `incy` apart. The result stays on the device: the
    /// call does not wait. `n = 0` writes 0.
    pub fn dot<T: Element>(
        &mut self,
        n: usize,
        x: &(impl Operand<T> + ?Sized),
        incx: usize,
        y: &(impl Operand<T> + ?Sized),
        incy: usize,
        result: &mut (impl Operand<T> + DeviceMemoryMut + ?Sized),
    ) -> Result<()> {
        self.dot_of(false, n, (x, incx), (y, incy), result)
    }

    /// [`Blas::dot`] with `x` conjugated, `result[0] = conj(x) . y` (`cublasDotcEx`; the same
    /// as `dot` for real types).
    pub fn dotc<T: Element>(
        &mut self,
        n: usize,
        x: &(impl Operand<T> + ?Sized),
        incx: usize,
        y: &(impl Operand<T> + ?Sized),
        incy: usize,
        result: &mut (impl Operand<T> + DeviceMemoryMut + ?Sized),
    ) -> Result<()> {
        self.dot_of(true, n, (x, incx), (y, incy), result)
    }

    /// [`Blas::dot`], or [`Blas::dotc`] when `conjugate`.
    fn dot_of<T: Element>(
        &mut self,
        conjugate: bool,
        n: usize,
        (x, incx): (&(impl Operand<T> + ?Sized), usize),
        (y, incy): (&(impl Operand<T> + ?Sized), usize),
        result: &mut (impl Operand<T> + DeviceMemoryMut + ?Sized),
    ) -> Result<()> {
        let vx = Vector::new("x", n, incx)?;
        let vy = Vector::new("y", n, incy)?;
        let cublas = cuda_sys::cublas()?;
        // `cublasDotcEx` takes the parameters of `cublasDotEx`, conjugating `x`.
        let (dot_ex, name) = match conjugate {
            true => (cublas.cublasDotcEx()?, "cublasDotcEx"),
            false => (cublas.cublasDotEx()?, "cublasDotEx"),
        };
        let (x, _x_use) = operand::<T, _>("x", x, vx.span, &self.stream, Access::Read)?;
        let (y, _y_use) = operand::<T, _>("y", y, vy.span, &self.stream, Access::Read)?;
        let (r, _r_use) = operand::<T, _>("result", result, 1, &self.stream, Access::Write)?;
        self.stream.context().set_current()?;
        if n == 0 {
            return self.zero::<T>(r);
        }
        let data_type = cudaDataType_t(T::DATA_TYPE);
        with_pointer_mode(self, cublasPointerMode_t::CUBLAS_POINTER_MODE_DEVICE, || {
            // SAFETY: the handle is live and its context current; x and y hold the elements
            // their vectors span, the result one element, all of type `data_type`; in device
            // pointer mode the result is written on the stream.
            let status = unsafe {
                dot_ex(
                    self.handle,
                    vx.n,
                    device_ptr(x),
                    data_type,
                    vx.inc,
                    device_ptr(y),
                    data_type,
                    vy.inc,
                    device_ptr(r),
                    data_type,
                    scalar_type::<T>(),
                )
            };
            check(CUBLAS, name, status.0)
        })
    }

    /// [`Blas::dot`] into a buffer of its own, then **waits** for the stream and returns the
    /// value.
    pub fn dot_host<T: Element>(
        &mut self,
        n: usize,
        x: &(impl Operand<T> + ?Sized),
        incx: usize,
        y: &(impl Operand<T> + ?Sized),
        incy: usize,
    ) -> Result<T> {
        let mut result = DeviceBuffer::<T>::zeroed(self.stream.context(), 1)?;
        self.dot(n, x, incx, y, incy, &mut result)?;
        self.wait_for(&result)
    }

    /// Queues `result[0] = ||x||_2` (`cublasNrm2Ex`) for `n` elements of `x`, `incx` apart,
    /// without waiting. `n = 0` writes 0.
    pub fn nrm2<T: RealElement>(
        &mut self,
        n: usize,
        x: &(impl Operand<T> + ?Sized),
        incx: usize,
        result: &mut (impl Operand<T> + DeviceMemoryMut + ?Sized),
    ) -> Result<()> {
        let vx = Vector::new("x", n, incx)?;
        let nrm2_ex = cuda_sys::cublas()?.cublasNrm2Ex()?;
        let (x, _x_use) = operand::<T, _>("x", x, vx.span, &self.stream, Access::Read)?;
        let (r, _r_use) = operand::<T, _>("result", result, 1, &self.stream, Access::Write)?;
        self.stream.context().set_current()?;
        if n == 0 {
            return self.zero::<T>(r);
        }
        let data_type = cudaDataType_t(T::DATA_TYPE);
        with_pointer_mode(self, cublasPointerMode_t::CUBLAS_POINTER_MODE_DEVICE, || {
            // SAFETY: as in `dot`.
            let status = unsafe {
                nrm2_ex(
                    self.handle,
                    vx.n,
                    device_ptr(x),
                    data_type,
                    vx.inc,
                    device_ptr(r),
                    data_type,
                    scalar_type::<T>(),
                )
            };
            check(CUBLAS, "cublasNrm2Ex", status.0)
        })
    }

    /// [`Blas::nrm2`] into a buffer of its own, then **waits** for the stream and returns the
    /// value.
    pub fn nrm2_host<T: RealElement>(&mut self, n: usize, x: &(impl Operand<T> + ?Sized), incx: usize) -> Result<T> {
        let mut result = DeviceBuffer::<T>::zeroed(self.stream.context(), 1)?;
        self.nrm2(n, x, incx, &mut result)?;
        self.wait_for(&result)
    }

    /// Queues `y = alpha * x + y` (`cublasAxpyEx`) for `n` elements `incx` and `incy` apart;
    /// `alpha` is converted to the type's scalar (`f32`, or `f64` for `f64`).
    pub fn axpy<T: RealElement>(
        &mut self,
        n: usize,
        alpha: f64,
        x: &(impl Operand<T> + ?Sized),
        incx: usize,
        y: &mut (impl Operand<T> + DeviceMemoryMut + ?Sized),
        incy: usize,
    ) -> Result<()> {
        let vx = Vector::new("x", n, incx)?;
        let vy = Vector::new("y", n, incy)?;
        let axpy_ex = cuda_sys::cublas()?.cublasAxpyEx()?;
        let (x, _x_use) = operand::<T, _>("x", x, vx.span, &self.stream, Access::Read)?;
        let (y, _y_use) = operand::<T, _>("y", y, vy.span, &self.stream, Access::Write)?;
        self.stream.context().set_current()?;
        let alpha = T::scalar(alpha);
        let data_type = cudaDataType_t(T::DATA_TYPE);
        // SAFETY: the handle is live, its context current and in host pointer mode; `alpha` is a
        // host value of the scalar type; x and y hold the elements their vectors span, and y is
        // borrowed exclusively.
        let status = unsafe {
            axpy_ex(
                self.handle,
                vx.n,
                (&alpha as *const T::Scalar).cast::<c_void>(),
                scalar_type::<T>(),
                device_ptr(x),
                data_type,
                vx.inc,
                device_ptr(y),
                data_type,
                vy.inc,
                scalar_type::<T>(),
            )
        };
        check(CUBLAS, "cublasAxpyEx", status.0)
    }

    /// Queues `x = alpha * x` (`cublasScalEx`) for `n` elements `incx` apart.
    pub fn scal<T: RealElement>(
        &mut self,
        n: usize,
        alpha: f64,
        x: &mut (impl Operand<T> + DeviceMemoryMut + ?Sized),
        incx: usize,
    ) -> Result<()> {
        let vx = Vector::new("x", n, incx)?;
        let scal_ex = cuda_sys::cublas()?.cublasScalEx()?;
        let (x, _x_use) = operand::<T, _>("x", x, vx.span, &self.stream, Access::Write)?;
        self.stream.context().set_current()?;
        let alpha = T::scalar(alpha);
        // SAFETY: as in `axpy`.
        let status = unsafe {
            scal_ex(
                self.handle,
                vx.n,
                (&alpha as *const T::Scalar).cast::<c_void>(),
                scalar_type::<T>(),
                device_ptr(x),
                cudaDataType_t(T::DATA_TYPE),
                vx.inc,
                scalar_type::<T>(),
            )
        };
        check(CUBLAS, "cublasScalEx", status.0)
    }

    /// Queues `y = alpha * op(A) x + beta * y` (row-major, see [`Gemv`]) through
    /// `cublasSgemv`/`cublasDgemv`.
    pub fn gemv<T: GemvElement>(
        &mut self,
        gemv: &Gemv,
        a: &(impl Operand<T> + ?Sized),
        x: &(impl Operand<T> + ?Sized),
        y: &mut (impl Operand<T> + DeviceMemoryMut + ?Sized),
    ) -> Result<()> {
        let (a_span, vx, vy, [m, n, lda]) = gemv.check()?;
        let function = T::gemv_function()?;
        let (a, _a_use) = operand::<T, _>("A", a, a_span, &self.stream, Access::Read)?;
        let (x, _x_use) = operand::<T, _>("x", x, vx.span, &self.stream, Access::Read)?;
        let (y, _y_use) = operand::<T, _>("y", y, vy.span, &self.stream, Access::Write)?;
        self.stream.context().set_current()?;
        let alpha = T::from_f64(gemv.alpha);
        let beta = T::from_f64(gemv.beta);
        // Row-major m x n A is column-major n x m A^T: op flips, and cuBLAS's m, n are n, m.
        // SAFETY: the handle is live, its context current and in host pointer mode; A, x and y
        // hold the elements they span, y is borrowed exclusively.
        let status = unsafe {
            function(
                self.handle,
                operation(!gemv.transpose),
                n,
                m,
                &alpha,
                device_ptr(a).cast::<T>(),
                lda,
                device_ptr(x).cast::<T>(),
                vx.inc,
                &beta,
                device_ptr(y).cast::<T>(),
                vy.inc,
            )
        };
        check(CUBLAS, "cublasGemv", status.0)
    }

    /// Queues zeroing one element at `result` (the sum of no terms) on the stream
    /// (`cuMemsetD8Async`), with its context current.
    fn zero<T: Element>(&self, result: CUdeviceptr) -> Result<()> {
        let memset = cuda_sys::driver()?.cuMemsetD8Async()?;
        // SAFETY: `result` is the address of at least one element of `T`, checked and in use on
        // the stream; the stream is live and belongs to the current context.
        let code = unsafe { memset(result, 0, size_of::<T>(), self.stream.as_raw()) };
        if code != CUresult::CUDA_SUCCESS {
            return Err(cuda_driver::Error::from(DriverError::new(code)).into());
        }
        Ok(())
    }

    /// Waits for the stream, then copies the one-element `result` to the host.
    fn wait_for<T: Element>(&self, result: &DeviceBuffer<T>) -> Result<T> {
        self.stream.synchronize()?;
        Ok(result.to_vec()?[0])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vectors_span_their_increments() {
        assert_eq!(Vector::new("x", 4, 3).unwrap().span, 10);
        assert_eq!(Vector::new("x", 0, 3).unwrap().span, 0);
        assert!(matches!(Vector::new("x", 4, 0), Err(Error::InvalidValue(_))));
        assert!(matches!(Vector::new("x", usize::MAX, 2), Err(Error::InvalidValue(_))));
        assert!(matches!(Vector::new("x", 1 << 31, 1), Err(Error::InvalidValue(_))));
    }

    #[test]
    fn gemv_shapes_follow_the_row_major_layout() {
        let (a, x, y, sizes) = Gemv::new(3, 5).check().unwrap();
        assert_eq!((a, x.span, y.span, sizes), (15, 5, 3, [3, 5, 5]));
        let (a, x, y, _) = Gemv::new(3, 5).transpose().lda(8).check().unwrap();
        assert_eq!((a, x.span, y.span), (21, 3, 5));
        assert!(matches!(Gemv::new(3, 5).lda(4).check(), Err(Error::InvalidValue(_))));
        assert!(matches!(Gemv::new(0, 5).check(), Err(Error::InvalidValue(_))));
    }

    #[test]
    fn scalars_are_cublas_supported_execution_types() {
        use num_complex::Complex;
        assert_eq!(scalar_type::<f64>(), cudaDataType_t::CUDA_R_64F);
        assert_eq!(scalar_type::<f32>(), cudaDataType_t::CUDA_R_32F);
        assert_eq!(scalar_type::<half::f16>(), cudaDataType_t::CUDA_R_32F);
        assert_eq!(scalar_type::<half::bf16>(), cudaDataType_t::CUDA_R_32F);
        // Complex data executes in its own complex type, the type of its `alpha`.
        assert_eq!(scalar_type::<Complex<f32>>(), cudaDataType_t::CUDA_C_32F);
        assert_eq!(scalar_type::<Complex<f64>>(), cudaDataType_t::CUDA_C_64F);
    }
}
