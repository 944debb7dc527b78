//! NumPy's array creation functions: [`full`](DeviceArray::full), [`ones`](DeviceArray::ones),
//! [`arange`](DeviceArray::arange), [`linspace`](DeviceArray::linspace),
//! [`empty_like`](DeviceArray::empty_like), [`zeros_like`](DeviceArray::zeros_like)
//! (`empty`, `zeros` and `from_slice` are with the type).

use std::sync::OnceLock;

use cuda_driver::Stream;

use super::device_array::{DeviceArray, IntoShape};
use super::dtype::Element;
use super::elementwise::ElementwiseKernel;
use super::generated::Arg;
use crate::error::{Error, Result};

/// A kernel built once per process from constant text.
fn kernel(
    cell: &'static OnceLock<ElementwiseKernel>,
    build: fn() -> Result<ElementwiseKernel>,
) -> Result<&'static ElementwiseKernel> {
    if let Some(kernel) = cell.get() {
        return Ok(kernel);
    }
    let kernel = build()?;
    Ok(cell.get_or_init(|| kernel))
}

impl<T: Element> DeviceArray<T> {
    /// An array of `shape` with every element `value`.
    pub fn full(stream: &Stream, shape: impl IntoShape, value: T) -> Result<Self> {
        let mut array = Self::empty(stream, shape)?;
        array.fill(value)?;
        Ok(array)
    }

    /// An array of `shape` of ones.
    pub fn ones(stream: &Stream, shape: impl IntoShape) -> Result<Self> {
        Self::full(stream, shape, T::from_f64(1.0))
    }

    /// An uninitialised compact array of `like`'s shape, on its stream.
    pub fn empty_like(like: &DeviceArray<T>) -> Result<Self> {
        Self::empty(like.stream(), like.shape().to_vec())
    }

    /// A zeroed compact array of `like`'s shape, on its stream.
    pub fn zeros_like(like: &DeviceArray<T>) -> Result<Self> {
        Self::zeros(like.stream(), like.shape().to_vec())
    }

    /// The values `start, start + step, ...` below `stop` (above, for a negative step), as
    /// NumPy's `arange`: `ceil((stop - start) / step)` elements, element `i` computed as
    /// `start + i * step` in `double` and converted to `T`. A zero or non-finite step is an
    /// error.
    pub fn arange(stream: &Stream, start: T, stop: T, step: T) -> Result<Self> {
        let (start, stop, step) = (start.to_f64(), stop.to_f64(), step.to_f64());
        if step == 0.0 || !step.is_finite() || !start.is_finite() || !stop.is_finite() {
            return Err(Error::InvalidValue(format!(
                "arange({start}, {stop}, {step}): the step must be finite and not zero, the bounds finite"
            )));
        }
        let count = ((stop - start) / step).ceil().max(0.0);
        if count >= usize::MAX as f64 {
            return Err(Error::InvalidValue(format!(
                "arange({start}, {stop}, {step}) has too many elements"
            )));
        }
        Self::affine(stream, count as usize, start, step)
    }

    /// `count` values evenly spaced from `start` to `stop` (included when `endpoint`), as
    /// NumPy's `linspace`.
    pub fn linspace(stream: &Stream, start: f64, stop: f64, count: usize, endpoint: bool) -> Result<Self> {
        let intervals = match endpoint {
            true => count.saturating_sub(1),
            false => count,
        };
        let step = match intervals {
            0 => 0.0,
            n => (stop - start) / n as f64,
        };
        let array = Self::affine(stream, count, start, step)?;
        if endpoint && count > 1 {
            // The last element is exactly `stop`, as in NumPy.
            array
                .slice(&[super::view::Slice::from(count - 1..)])?
                .fill(T::from_f64(stop))?;
        }
        Ok(array)
    }

    /// `count` elements `start + i * step` (computed in `double`).
    fn affine(stream: &Stream, count: usize, start: f64, step: f64) -> Result<Self> {
        static AFFINE: OnceLock<ElementwiseKernel> = OnceLock::new();
        let kernel = kernel(&AFFINE, || {
            ElementwiseKernel::new(
                "double start, double step",
                "T out",
                "out = (T)(start + (double)i * step)",
                "cuda_core_affine",
            )
        })?;
        let mut array = Self::empty(stream, count)?;
        kernel.launch_generated(stream, &[Arg::scalar(start), Arg::scalar(step), Arg::from(&mut array)])?;
        Ok(array)
    }
}
