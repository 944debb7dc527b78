//! NumPy's array creation functions: [`full`](DeviceArray::full), [`ones`](DeviceArray::ones),
//! [`arange`](DeviceArray::arange), [`linspace`](DeviceArray::linspace),
//! [`empty_like`](DeviceArray::empty_like), [`zeros_like`](DeviceArray::zeros_like),
//! [`ones_like`](DeviceArray::ones_like), [`full_like`](DeviceArray::full_like),
//! [`eye`](DeviceArray::eye), [`identity`](DeviceArray::identity), [`tri`](DeviceArray::tri),
//! [`meshgrid`](DeviceArray::meshgrid) (`empty`, `zeros` and `from_slice` are with the type;
//! `diag` is with the indexing routines).

use std::sync::Arc;

use cuda_driver::Stream;

use crate::array::device_array::{shape_len, DeviceArray, IntoShape};
use crate::array::dtype::{int_value, Element};
use crate::array::kernels::registry::{kernel, KernelKey};
use crate::array::kernels::{Arg, ElementwiseKernel};
use crate::array::memory::MemoryPool;
use crate::array::view::Slice;
use crate::error::{Error, Result};

/// The axis order of [`meshgrid`](DeviceArray::meshgrid)'s results.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum MeshIndexing {
    /// Cartesian: the first two axes swapped, so the first array varies along columns
    /// (NumPy's default, `indexing='xy'`).
    #[default]
    Xy,
    /// Matrix: array `i` varies along axis `i` (`indexing='ij'`).
    Ij,
}

impl<T: Element> DeviceArray<T> {
    /// A zeroed array of `shape` on `stream` (the memset is queued on `stream`).
    pub fn zeros(stream: &Stream, shape: impl IntoShape) -> Result<Self> {
        Self::zeros_in(&MemoryPool::for_context(stream.context()), stream, shape)
    }

    /// Like [`zeros`](Self::zeros), from `pool`.
    pub fn zeros_in(pool: &MemoryPool, stream: &Stream, shape: impl IntoShape) -> Result<Self> {
        let array = Self::empty_in(pool, stream, shape)?;
        if !array.is_empty() {
            // SAFETY: the block holds `size_bytes` bytes; the memset is queued on the array's stream.
            unsafe { stream.memset_d8_raw_async(*array.ptr_ref(), 0, array.size_bytes()) }?;
        }
        Ok(array)
    }

    /// A one-dimensional array holding a copy of `data` (which may be empty). Returns once
    /// `data` has been read.
    pub fn from_slice(stream: &Stream, data: &[T]) -> Result<Self> {
        let mut array = Self::empty(stream, data.len())?;
        array.copy_from_host(data)?;
        Ok(array)
    }

    /// An array of `shape` holding a copy of `data` in row-major order (NumPy's
    /// `np.array(data).reshape(shape)`, CuPy's `cp.asarray(host_array)`). `data` must hold
    /// exactly as many elements as `shape`: otherwise a typed error, before anything is
    /// allocated. Returns once `data` has been read.
    ///
    /// ```no_run
    /// # fn main() -> cuda_core::Result<()> {
    /// let stream = cuda_core::Device::new(0)?.create_stream()?;
    /// let m = cuda_core::DeviceArray::from_host(&stream, [2, 3], &[1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0])?;
    /// assert_eq!(m.shape(), [2, 3]);
    /// # Ok(())
    /// # }
    /// ```
    pub fn from_host(stream: &Stream, shape: impl IntoShape, data: &[T]) -> Result<Self> {
        let shape = shape.into_shape();
        if shape_len(&shape)? != data.len() {
            return Err(Error::InvalidValue(format!(
                "{} elements cannot fill an array of shape {shape:?}",
                data.len()
            )));
        }
        let mut array = Self::empty(stream, shape)?;
        array.copy_from_host(data)?;
        Ok(array)
    }

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
    /// NumPy's `arange`: `ceil((stop - start) / step)` elements. For integer types the length and
    /// the values are exact integer arithmetic (`i64` and `u64` beyond 2^53 included); for the
    /// others element `i` is `start + i * step` computed in `double` and converted to `T`. A
    /// zero or non-finite step is an error; complex values must be real
    /// ([`Error::NotSupported`] otherwise).
    pub fn arange(stream: &Stream, start: T, stop: T, step: T) -> Result<Self> {
        if let (Some(start), Some(stop), Some(step)) = (int_value(start), int_value(stop), int_value(step)) {
            let count = int_arange_len(start, stop, step)?;
            return Self::int_affine(stream, count, start, step);
        }
        if [start, stop, step].iter().any(|v| v.imaginary_f64() != 0.0) {
            return Err(Error::NotSupported(
                "arange with complex bounds or step off the real axis (NumPy's complex arange)".into(),
            ));
        }
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
        Self::affine(stream, count as usize, start, step, false)
    }

    /// `count` values evenly spaced from `start` to `stop` (included when `endpoint`), as
    /// NumPy's `linspace`: computed in `double`, then for integer types rounded down (NumPy 2
    /// floors: `linspace(-5, 0, 4)` as `i32` is `[-5, -4, -2, 0]`).
    pub fn linspace(stream: &Stream, start: f64, stop: f64, count: usize, endpoint: bool) -> Result<Self> {
        let intervals = match endpoint {
            true => count.saturating_sub(1),
            false => count,
        };
        let step = match intervals {
            0 => 0.0,
            n => (stop - start) / n as f64,
        };
        let array = Self::affine(stream, count, start, step, T::DTYPE.is_int())?;
        if endpoint && count > 1 {
            // The last element is exactly `stop` (rounded down for integers), as in NumPy.
            let last = if T::DTYPE.is_int() { stop.floor() } else { stop };
            array.slice(&[Slice::from(count - 1..)])?.fill(T::from_f64(last))?;
        }
        Ok(array)
    }

    /// An array of `like`'s shape filled with ones, on its stream (NumPy's `ones_like`).
    pub fn ones_like(like: &DeviceArray<T>) -> Result<Self> {
        Self::full(like.stream(), like.shape().to_vec(), T::from_f64(1.0))
    }

    /// An array of `like`'s shape filled with `value`, on its stream (NumPy's `full_like`).
    pub fn full_like(like: &DeviceArray<T>, value: T) -> Result<Self> {
        Self::full(like.stream(), like.shape().to_vec(), value)
    }

    /// A `rows` x `cols` array with ones on diagonal `k` (0: the main one, positive above it,
    /// negative below) and zeros elsewhere (NumPy's `eye(N, M, k)`).
    pub fn eye(stream: &Stream, rows: usize, cols: usize, k: i64) -> Result<Self> {
        Self::band(stream, rows, cols, k, false)
    }

    /// Coordinate matrices from coordinate vectors (NumPy's `meshgrid`, `copy=True`): for `k`
    /// arrays (each flattened) of `n_0 .. n_k` elements, `k` new compact arrays of shape
    /// `[n_0, .., n_k]` ([`MeshIndexing::Ij`]) or with the first two extents swapped
    /// ([`MeshIndexing::Xy`], NumPy's default), array `i` varying along its own axis. One copy
    /// of a broadcast view each; [`broadcast_to`](Self::broadcast_to) gives the same as views.
    ///
    /// ```no_run
    /// # use cuda_core::{Device, DeviceArray, MeshIndexing};
    /// # fn main() -> cuda_core::Result<()> {
    /// # let stream = Device::new(0)?.create_stream()?;
    /// let x = DeviceArray::from_slice(&stream, &[1.0f32, 2.0, 3.0])?;
    /// let y = DeviceArray::from_slice(&stream, &[10.0f32, 20.0])?;
    /// let grids = DeviceArray::meshgrid(&[&x, &y], MeshIndexing::Xy)?;
    /// assert_eq!(grids[0].shape(), [2, 3]);
    /// assert_eq!(grids[1].to_vec()?, [10.0, 10.0, 10.0, 20.0, 20.0, 20.0]);
    /// # Ok(())
    /// # }
    /// ```
    pub fn meshgrid(arrays: &[&DeviceArray<T>], indexing: MeshIndexing) -> Result<Vec<Self>> {
        let lines = arrays.iter().map(|a| a.ravel()).collect::<Result<Vec<_>>>()?;
        let axis_of = |i: usize| match (indexing, i, lines.len() >= 2) {
            (MeshIndexing::Xy, 0, true) => 1,
            (MeshIndexing::Xy, 1, true) => 0,
            _ => i,
        };
        let mut shape = vec![0; lines.len()];
        for (i, line) in lines.iter().enumerate() {
            shape[axis_of(i)] = line.len();
        }
        lines
            .iter()
            .enumerate()
            .map(|(i, line)| {
                let mut strides = vec![0; shape.len()];
                strides[axis_of(i)] = line.strides()[0];
                line.view(*line.ptr_ref(), shape.clone(), strides).try_clone()
            })
            .collect()
    }

    /// The `n` x `n` identity matrix (NumPy's `identity`).
    pub fn identity(stream: &Stream, n: usize) -> Result<Self> {
        Self::eye(stream, n, n, 0)
    }

    /// A `rows` x `cols` array with ones at and below diagonal `k` and zeros above (NumPy's
    /// `tri(N, M, k)`).
    pub fn tri(stream: &Stream, rows: usize, cols: usize, k: i64) -> Result<Self> {
        Self::band(stream, rows, cols, k, true)
    }

    /// Ones on diagonal `k` (`below`: at and below it), zeros elsewhere: one kernel.
    fn band(stream: &Stream, rows: usize, cols: usize, k: i64, below: bool) -> Result<Self> {
        let kernel = band_kernel(below)?;
        let mut array = Self::empty(stream, [rows, cols])?;
        if !array.is_empty() {
            kernel.launch_generated(
                stream,
                &[Arg::scalar(k), Arg::scalar(cols as u64), Arg::from(&mut array)],
            )?;
        }
        Ok(array)
    }

    /// `count` elements `start + i * step` (computed in `double`; rounded down when `floor`).
    fn affine(stream: &Stream, count: usize, start: f64, step: f64, floor: bool) -> Result<Self> {
        let kernel = Self::affine_kernel(floor)?;
        let mut array = Self::empty(stream, count)?;
        kernel.launch_generated(stream, &[Arg::scalar(start), Arg::scalar(step), Arg::from(&mut array)])?;
        Ok(array)
    }

    fn affine_kernel(floor: bool) -> Result<Arc<ElementwiseKernel>> {
        match floor {
            false => kernel(KernelKey::Named("cuda_core_affine"), || {
                ElementwiseKernel::new(
                    "double start, double step",
                    "T out",
                    "out = (T)(start + (double)i * step)",
                    "cuda_core_affine",
                )
            }),
            true => kernel(KernelKey::Named("cuda_core_affine_floor"), || {
                ElementwiseKernel::new(
                    "double start, double step",
                    "T out",
                    "out = (T)floor(start + (double)i * step)",
                    "cuda_core_affine_floor",
                )
            }),
        }
    }

    /// `count` integer elements `start + i * step`, exact: computed modulo 2^64 (the values fit
    /// `T`, so the low bits are the value).
    fn int_affine(stream: &Stream, count: usize, start: i128, step: i128) -> Result<Self> {
        let kernel = Self::int_affine_kernel()?;
        let mut array = Self::empty(stream, count)?;
        // Two's complement: the bits of `start` and `step` modulo 2^64.
        let (start, step) = (start as u64, step as u64);
        kernel.launch_generated(stream, &[Arg::scalar(start), Arg::scalar(step), Arg::from(&mut array)])?;
        Ok(array)
    }

    fn int_affine_kernel() -> Result<Arc<ElementwiseKernel>> {
        kernel(KernelKey::Named("cuda_core_int_affine"), || {
            ElementwiseKernel::new(
                "unsigned long long start, unsigned long long step",
                "T out",
                "out = (T)(start + (unsigned long long)i * step)",
                "cuda_core_int_affine",
            )
        })
    }
}

/// The kernel of `eye` (ones on diagonal `k`) or, `below`, of `tri` (ones at and below it).
fn band_kernel(below: bool) -> Result<Arc<ElementwiseKernel>> {
    match below {
        false => kernel(KernelKey::Named("cuda_core_eye"), || {
            ElementwiseKernel::new(
                "long long k, unsigned long long cols",
                "T out",
                "out = ((long long)(i % cols) - (long long)(i / cols) == k) ? (T)1 : (T)0",
                "cuda_core_eye",
            )
        }),
        true => kernel(KernelKey::Named("cuda_core_tri"), || {
            ElementwiseKernel::new(
                "long long k, unsigned long long cols",
                "T out",
                "out = ((long long)(i % cols) - (long long)(i / cols) <= k) ? (T)1 : (T)0",
                "cuda_core_tri",
            )
        }),
    }
}

/// The length of an integer `arange(start, stop, step)`: `ceil((stop - start) / step)`, at
/// least 0, computed exactly.
pub(crate) fn int_arange_len(start: i128, stop: i128, step: i128) -> Result<usize> {
    if step == 0 {
        return Err(Error::InvalidValue(format!(
            "arange({start}, {stop}, {step}): the step cannot be zero"
        )));
    }
    // Operands are 64-bit integers, so none of this overflows i128.
    let span = stop - start;
    let count = match (span > 0, step > 0) {
        (true, true) => (span + step - 1) / step,
        (false, false) if span < 0 => (span + step + 1) / step,
        _ => 0,
    };
    usize::try_from(count)
        .map_err(|_| Error::InvalidValue(format!("arange({start}, {stop}, {step}) has too many elements")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn eye_and_tri_compile_for_every_element_type() {
        use crate::array::ArgType;
        use crate::{Arch, CompileTarget, DType, Program, ProgramOptions};
        let options = ProgramOptions {
            cache: false,
            ..ProgramOptions::for_arch(Arch::Sm(90))
        };
        for below in [false, true] {
            let kernel = band_kernel(below).unwrap();
            for dtype in [
                DType::Bool,
                DType::I8,
                DType::U64,
                DType::F16,
                DType::BF16,
                DType::F32,
                DType::F64,
            ] {
                let signature = [
                    ArgType::Scalar(DType::I64),
                    ArgType::Scalar(DType::U64),
                    ArgType::Array(dtype),
                ];
                let source = kernel.source_for(&signature).unwrap();
                assert!(source.contains(if below { "<= k" } else { "== k" }));
                if let Err(error) = Program::new(source.clone(), options.clone()).compile(CompileTarget::Ptx) {
                    panic!("{} of {dtype}: {error}\n{source}", kernel.name());
                }
            }
        }
    }

    #[test]
    fn integer_arange_lengths_are_exact() {
        let big = 1i128 << 60;
        assert_eq!(int_arange_len(big, big + 10, 1).unwrap(), 10, "beyond 2^53");
        assert_eq!(int_arange_len(0, 10, 3).unwrap(), 4);
        assert_eq!(int_arange_len(10, 0, -3).unwrap(), 4);
        assert_eq!(int_arange_len(0, 10, -1).unwrap(), 0);
        assert_eq!(int_arange_len(5, 5, 1).unwrap(), 0);
        assert_eq!(int_arange_len(10, 0, 1).unwrap(), 0);
        let max = u64::MAX as i128;
        assert_eq!(int_arange_len(max - 3, max, 1).unwrap(), 3);
        assert_eq!(
            int_arange_len(i64::MIN as i128, i64::MAX as i128, 1).unwrap() as u128,
            u64::MAX as u128,
            "2^64 - 1 elements: a usize on 64-bit hosts"
        );
        assert!(matches!(int_arange_len(0, 10, 0), Err(Error::InvalidValue(_))));
    }

    #[test]
    fn the_integer_and_flooring_kernels_compile() {
        use crate::array::{ArgType, DType};
        use crate::{Arch, CompileTarget, Program, ProgramOptions};
        let options = ProgramOptions {
            cache: false,
            ..ProgramOptions::for_arch(Arch::Sm(90))
        };
        let int = (
            DeviceArray::<i64>::int_affine_kernel().unwrap(),
            ArgType::Scalar(DType::U64),
            [DType::I8, DType::U64, DType::I64],
        );
        let floor = (
            DeviceArray::<i32>::affine_kernel(true).unwrap(),
            ArgType::Scalar(DType::F64),
            [DType::I32, DType::U8, DType::F16],
        );
        for (kernel, scalar, outputs) in [int, floor] {
            for out in outputs {
                let source = kernel.source_for(&[scalar, scalar, ArgType::Array(out)]).unwrap();
                if let Err(error) = Program::new(source.clone(), options.clone()).compile(CompileTarget::Ptx) {
                    panic!("{out}: {error}\n{source}");
                }
            }
        }
    }
}
