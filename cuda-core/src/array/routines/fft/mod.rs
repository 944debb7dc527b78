//! NumPy's discrete Fourier transforms (`numpy.fft`, `cupy.fft`) of arrays, through cuFFT
//! (feature `fft`): `fft`, `ifft`, `rfft`, `irfft`, `hfft`, `ihfft` along one axis, their `2`
//! and `n` forms over several, `fftfreq`, `rfftfreq`, `fftshift` and `ifftshift`.
//!
//! Arguments are NumPy's: `n` (`s` for several axes) pads with zeros or crops each axis, `None`
//! keeping its extent; axes are [`Axis`]/[`Axes`] (negative count from the end; `fftn` with
//! [`Axes::ALL`] transforms every axis, or the last `len(s)` when `s` is given); `norm` is
//! [`FftNorm`]. Element types promote as NumPy 2's: `f16` and `f32` (and `Complex<f32>`) give
//! `Complex<f32>`, `f64`, integers and `bool` (and `Complex<f64>`) give `Complex<f64>`; real
//! results (`irfft`, `hfft`) are the matching `f32`/`f64`. `f16` is computed in single
//! precision, as NumPy does (cuFFT's half-precision plans take powers of two only); `bf16`,
//! which NumPy lacks, is not taken (cast it first).
//!
//! ```no_run
//! use cuda_core::{fft, fft::FftNorm, Device, DeviceArray};
//!
//! # fn main() -> cuda_core::Result<()> {
//! let stream = Device::new(0)?.create_stream()?;
//! let x = DeviceArray::from_slice(&stream, &[1.0f32, 2.0, 3.0, 4.0])?;
//! let spectrum = fft::rfft(&x, None, -1, FftNorm::Backward)?; // Complex<f32>, 3 values
//! assert_eq!(spectrum.shape(), [3]);
//! let back = fft::irfft(&spectrum, Some(4), -1, FftNorm::Backward)?; // f32, 4 values
//! let error = back.to_vec()?.iter().zip([1.0f32, 2.0, 3.0, 4.0]).map(|(a, b)| (a - b).abs()).fold(0.0, f32::max);
//! assert!(error < 1e-5);
//! # Ok(())
//! # }
//! ```
//!
//! # Expressions fused into the transform
//! Every transform takes an array or a lazy expression ([`FftInput`]: `&DeviceArray<T>`,
//! [`Expr`](crate::Expr) or `&Expr`), so a window, a scale or a complex product feeds the
//! transform in one call:
//!
//! ```no_run
//! use cuda_core::{fft, fft::FftNorm, Device, DeviceArray};
//!
//! # fn main() -> cuda_core::Result<()> {
//! let stream = Device::new(0)?.create_stream()?;
//! let x = DeviceArray::<f32>::zeros(&stream, [256, 65536])?;
//! let window = DeviceArray::<f32>::full(&stream, 65536, 0.5)?;
//! let spectrum = fft::rfft(&(&x * &window), None, -1, FftNorm::Backward)?; // one fused pass, then cuFFT
//! assert_eq!(spectrum.shape(), [256, 32769]);
//! # Ok(())
//! # }
//! ```
//!
//! By default one fused kernel writes the expression, promoted and scaled, into the
//! transform's input array (padded where `n`/`s` pad), reading each operand once, and that
//! array is transformed.
//!
//! [`set_load_callbacks`]`(true)` asks, on the calling thread, for cuFFT's **load callback**
//! instead, where the loaded cuFFT takes LTO callbacks (cuFFT 12, from CUDA 13). The
//! expression's element code (the same the fused element-wise kernel computes), with the index
//! arithmetic of its operands' strides and broadcasting and the `norm` factor, is generated as a
//! device function, compiled to LTO-IR by NVRTC for the device's architecture, and handed to
//! cuFFT with `cufftXtSetJITCallback` before the plan is made; cuFFT links it into its kernels,
//! which then compute each input element as they load it. The operands' addresses, strides and
//! scalars go to the callback through its caller info, written before each execution, so the
//! cached plan (keyed by the expression's kernel key as well as the shape, layout, type and
//! stream) serves new arrays of the same shapes. That spares the transform's input array, but
//! cuFFT's kernels that call a load callback measured slower than the copy they save (up to
//! 2.7x the time, docs/BENCHMARKS.md), so it is off by default, as CuPy's
//! `set_cufft_callbacks` is.
//!
//! With load callbacks asked for, the written input (the **fallback**) is still taken with
//! CUDA 12's cuFFT 11 (its `cufftXtSetJITCallback` has another signature), where cuFFT refuses
//! the callback (`CUFFT_NOT_SUPPORTED`, a failed link: not asked again for that expression on
//! the thread) or NVRTC cannot compile it, and for transforms a load callback does not fit:
//! more than one cuFFT plan (over 3 axes, or `rfftn` over several), `n`/`s` that pad, a
//! transformed axis of one point, complex-to-real transforms (`irfft*`, `hfft`: cuFFT
//! overwrites their input), and expressions holding a matrix product. [`plan_cache_info`]
//! counts on the calling thread which path each transform of an expression took, and says why
//! the last fallback was taken.
//!
//! # How a call runs
//! The transformed axes are cut into cuFFT plans of at most 3 axes. Each plan reads the array
//! in place when cuFFT's advanced layout (storage sizes, a stride, a batch distance) can
//! describe the view with the plan's axes moved last: a compact array, a slice with steps, the
//! columns of a row-major matrix. Otherwise (reversed or broadcast views, a middle axis of a
//! 3-D array, whose batch axes do not merge into one distance) the view is copied once, compact.
//! Input that must change anyway (promotion to complex, padding or cropping, the input of a
//! complex-to-real transform, which cuFFT overwrites) is written once into a new array, and the
//! `norm` factor and `hfft`'s conjugate go into that same pass. Otherwise the factor goes into
//! the pass that copies the result out of a temporary (where one is needed) or, failing both,
//! into the last plan's **store callback**: where cuFFT takes LTO callbacks, a device function
//! generated per output type (compiled to LTO-IR by NVRTC, attached with
//! `cufftXtSetJITCallback` before the plan is made, the factor in its caller info, so one
//! cached plan serves every norm) multiplies each result element as cuFFT writes it. Without
//! LTO callbacks, or where cuFFT refuses the store callback (not asked again on the thread) or
//! NVRTC cannot compile it, the factor takes one element-wise pass over the result;
//! [`plan_cache_info`] counts the store-callback executions and says why the last factor took a
//! pass. An expression's load callback takes the factor itself; `ihfft` keeps one pass, which
//! conjugates and scales. No function takes an expression on the output.
//!
//! Plans are cached per thread ([`PLAN_CACHE_CAPACITY`] of them, least recently used out, as
//! CuPy's per-thread cache), keyed by shape, layout, type and stream; each execution takes its
//! workspace from the array's memory pool on the array's stream, returned in stream order.
//! Dropping an evicted plan waits for its last transform ([`cuda_libs::fft::Plan`]).
//!
//! # Errors
//! `n` or `s` below 1, `s` and `axes` of different lengths, a real transform with no axis and
//! sizes whose product overflows are [`Error::InvalidValue`]; an axis out of range is
//! [`Error::Axis`], a repeated one [`Error::InvalidValue`]; complex input to `rfft`, `rfftn`
//! or `ihfft` is [`Error::NotSupported`] (NumPy's `TypeError`); a plan cuFFT refuses is
//! [`Error::Library`] carrying the `cufftResult` name.

mod callback;
mod execute;
mod freq;
mod fused;
mod input;
mod layout;
mod store;

use num_complex::Complex;

use crate::array::device_array::DeviceArray;
use crate::array::dtype::{Bool, Element};
use crate::array::Scalars;
use crate::array::{Axes, Axis};
use crate::error::{Error, Result};

pub use execute::{clear_plan_cache, plan_cache_info, set_load_callbacks, PlanCacheInfo, PLAN_CACHE_CAPACITY};
pub use freq::{fftfreq, fftshift, ifftshift, rfftfreq};
pub use input::FftInput;
use input::Input;
pub use layout::FftNorm;

use execute::{complex_to_complex, complex_to_real, real_to_complex};
use layout::{shapes, Real};

/// The element types the transforms take, with the complex and real types of their results
/// (NumPy 2's promotion; see the module's docs).
pub trait FftElement: Scalars + sealed::Sealed {
    /// The complex type of a transform of this type.
    type Complex: FftElement<Complex = Self::Complex, Part = Self::Part>;
    /// The real type of the same precision (of `irfft`'s and `hfft`'s results).
    type Part: FftElement<Complex = Self::Complex, Part = Self::Part>;
}

mod sealed {
    pub trait Sealed {}
}

macro_rules! fft_element {
    ($complex:ty, $real:ty: $($t:ty),*) => {$(
        impl sealed::Sealed for $t {}
        impl FftElement for $t {
            type Complex = $complex;
            type Part = $real;
        }
    )*};
}

fft_element!(Complex<f32>, f32: half::f16, f32, Complex<f32>);
fft_element!(Complex<f64>, f64: f64, Bool, i8, i16, i32, i64, u8, u16, u32, u64, Complex<f64>);

fn one(n: Option<i64>) -> Option<[i64; 1]> {
    n.map(|n| [n])
}

fn one_axis(axis: impl Into<Axis>) -> Axes {
    Axes::from(axis.into())
}

fn real_only<T: Element>(routine: &str) -> Result<()> {
    match T::DTYPE.is_complex() {
        true => Err(Error::NotSupported(format!(
            "{routine} takes real input; this array is {} (use fft for complex input)",
            T::DTYPE
        ))),
        false => Ok(()),
    }
}

/// The complex type of a transform of `A`'s elements.
type ComplexOf<'a, A> = <<A as FftInput<'a>>::Elem as FftElement>::Complex;
/// The real type of `A`'s elements' precision.
type PartOf<'a, A> = <<A as FftInput<'a>>::Elem as FftElement>::Part;

/// The one-dimensional transform along `axis` (NumPy's `fft.fft`): `n` points (`None`: the
/// axis's extent), the input cropped or padded with zeros to them.
pub fn fft<'a, A: FftInput<'a>>(
    a: A,
    n: Option<i64>,
    axis: impl Into<Axis>,
    norm: FftNorm,
) -> Result<DeviceArray<ComplexOf<'a, A>>> {
    let n = one(n);
    c2c(a.into_input(), n.as_ref().map(|s| &s[..]), &one_axis(axis), norm, false)
}

/// The inverse of [`fft`] (NumPy's `fft.ifft`).
pub fn ifft<'a, A: FftInput<'a>>(
    a: A,
    n: Option<i64>,
    axis: impl Into<Axis>,
    norm: FftNorm,
) -> Result<DeviceArray<ComplexOf<'a, A>>> {
    let n = one(n);
    c2c(a.into_input(), n.as_ref().map(|s| &s[..]), &one_axis(axis), norm, true)
}

/// The transform over two axes (NumPy's `fft.fft2`, whose default axes are `[-2, -1]`).
pub fn fft2<'a, A: FftInput<'a>>(
    a: A,
    s: Option<&[i64]>,
    axes: impl Into<Axes>,
    norm: FftNorm,
) -> Result<DeviceArray<ComplexOf<'a, A>>> {
    c2c(a.into_input(), s, &two(axes)?, norm, false)
}

/// The inverse of [`fft2`] (NumPy's `fft.ifft2`).
pub fn ifft2<'a, A: FftInput<'a>>(
    a: A,
    s: Option<&[i64]>,
    axes: impl Into<Axes>,
    norm: FftNorm,
) -> Result<DeviceArray<ComplexOf<'a, A>>> {
    c2c(a.into_input(), s, &two(axes)?, norm, true)
}

/// The transform over `axes` (NumPy's `fft.fftn`: [`Axes::ALL`] is every axis, or the last
/// `len(s)` ones when `s` is given).
pub fn fftn<'a, A: FftInput<'a>>(
    a: A,
    s: Option<&[i64]>,
    axes: impl Into<Axes>,
    norm: FftNorm,
) -> Result<DeviceArray<ComplexOf<'a, A>>> {
    c2c(a.into_input(), s, &axes.into(), norm, false)
}

/// The inverse of [`fftn`] (NumPy's `fft.ifftn`).
pub fn ifftn<'a, A: FftInput<'a>>(
    a: A,
    s: Option<&[i64]>,
    axes: impl Into<Axes>,
    norm: FftNorm,
) -> Result<DeviceArray<ComplexOf<'a, A>>> {
    c2c(a.into_input(), s, &axes.into(), norm, true)
}

/// The transform of real input along `axis` (NumPy's `fft.rfft`): `n / 2 + 1` complex values
/// of `n` real points. Complex input is [`Error::NotSupported`].
pub fn rfft<'a, A: FftInput<'a>>(
    a: A,
    n: Option<i64>,
    axis: impl Into<Axis>,
    norm: FftNorm,
) -> Result<DeviceArray<ComplexOf<'a, A>>> {
    let n = one(n);
    r2c(
        "rfft",
        a.into_input(),
        n.as_ref().map(|s| &s[..]),
        &one_axis(axis),
        norm,
        false,
    )
}

/// The inverse of [`rfft`] (NumPy's `fft.irfft`): `n` real points (`None`: `2 * (m - 1)` of
/// `m` input values) from `n / 2 + 1` complex values. As cuFFT's complex-to-real transforms,
/// the imaginary parts of the zero-frequency (and, for even `n`, the last) value are taken as
/// zero, which is what NumPy's result shows too.
pub fn irfft<'a, A: FftInput<'a>>(
    a: A,
    n: Option<i64>,
    axis: impl Into<Axis>,
    norm: FftNorm,
) -> Result<DeviceArray<PartOf<'a, A>>> {
    let n = one(n);
    c2r(a.into_input(), n.as_ref().map(|s| &s[..]), &one_axis(axis), norm, false)
}

/// [`rfft`] over two axes (NumPy's `fft.rfft2`, default axes `[-2, -1]`): the last is halved.
pub fn rfft2<'a, A: FftInput<'a>>(
    a: A,
    s: Option<&[i64]>,
    axes: impl Into<Axes>,
    norm: FftNorm,
) -> Result<DeviceArray<ComplexOf<'a, A>>> {
    r2c("rfft2", a.into_input(), s, &two(axes)?, norm, false)
}

/// The inverse of [`rfft2`] (NumPy's `fft.irfft2`).
pub fn irfft2<'a, A: FftInput<'a>>(
    a: A,
    s: Option<&[i64]>,
    axes: impl Into<Axes>,
    norm: FftNorm,
) -> Result<DeviceArray<PartOf<'a, A>>> {
    c2r(a.into_input(), s, &two(axes)?, norm, false)
}

/// [`rfft`] over `axes` (NumPy's `fft.rfftn`): the last axis is halved, the others are complex
/// transforms of the result.
pub fn rfftn<'a, A: FftInput<'a>>(
    a: A,
    s: Option<&[i64]>,
    axes: impl Into<Axes>,
    norm: FftNorm,
) -> Result<DeviceArray<ComplexOf<'a, A>>> {
    r2c("rfftn", a.into_input(), s, &axes.into(), norm, false)
}

/// The inverse of [`rfftn`] (NumPy's `fft.irfftn`): `s` gives the real output's sizes (`None`:
/// the input's, `2 * (m - 1)` on the last axis).
pub fn irfftn<'a, A: FftInput<'a>>(
    a: A,
    s: Option<&[i64]>,
    axes: impl Into<Axes>,
    norm: FftNorm,
) -> Result<DeviceArray<PartOf<'a, A>>> {
    c2r(a.into_input(), s, &axes.into(), norm, false)
}

/// The transform of a Hermitian-symmetric signal, given by its first half (NumPy's
/// `fft.hfft`): `n` real values (`None`: `2 * (m - 1)`); `irfft` of the conjugate with the
/// norm's direction swapped.
pub fn hfft<'a, A: FftInput<'a>>(
    a: A,
    n: Option<i64>,
    axis: impl Into<Axis>,
    norm: FftNorm,
) -> Result<DeviceArray<PartOf<'a, A>>> {
    let n = one(n);
    c2r(a.into_input(), n.as_ref().map(|s| &s[..]), &one_axis(axis), norm, true)
}

/// The inverse of [`hfft`] (NumPy's `fft.ihfft`): `n / 2 + 1` complex values of `n` real
/// points, the conjugate of `rfft` with the norm's direction swapped. Complex input is
/// [`Error::NotSupported`].
pub fn ihfft<'a, A: FftInput<'a>>(
    a: A,
    n: Option<i64>,
    axis: impl Into<Axis>,
    norm: FftNorm,
) -> Result<DeviceArray<ComplexOf<'a, A>>> {
    let n = one(n);
    r2c(
        "ihfft",
        a.into_input(),
        n.as_ref().map(|s| &s[..]),
        &one_axis(axis),
        norm,
        true,
    )
}

/// The axes of a `*2` routine: two of them (NumPy's `fft2` takes any number, but names two by
/// default; [`Axes::ALL`] here means the last two).
fn two(axes: impl Into<Axes>) -> Result<Axes> {
    let axes = axes.into();
    if axes.is_all() {
        return Ok(Axes::from([-2, -1]));
    }
    Ok(axes)
}

/// A complex transform of `input` over `axes` (inverse where asked).
fn c2c<T: FftElement>(
    input: Input<'_, T>,
    s: Option<&[i64]>,
    axes: &Axes,
    norm: FftNorm,
    inverse: bool,
) -> Result<DeviceArray<T::Complex>> {
    let shapes = shapes(&input.shape()?, s, axes, Real::Neither)?;
    input.refuse_capture()?;
    let factor = norm.factor(inverse, shapes.total);
    match input {
        Input::Array(a) => complex_to_complex(a, &shapes, factor, inverse),
        Input::Expr(e) => fused::complex_to_complex(e, &shapes, factor, inverse),
    }
}

/// A real-input transform of `input` (`routine` names it in errors), conjugated where asked
/// with the norm's direction swapped (`ihfft`).
fn r2c<T: FftElement>(
    routine: &str,
    input: Input<'_, T>,
    s: Option<&[i64]>,
    axes: &Axes,
    norm: FftNorm,
    conjugate: bool,
) -> Result<DeviceArray<T::Complex>> {
    real_only::<T>(routine)?;
    let shapes = shapes(&input.shape()?, s, axes, Real::Input)?;
    input.refuse_capture()?;
    let norm = if conjugate { norm.swapped() } else { norm };
    let factor = norm.factor(false, shapes.total);
    match input {
        Input::Array(a) => real_to_complex(a, &shapes, factor, conjugate),
        Input::Expr(e) => fused::real_to_complex(e, &shapes, factor, conjugate),
    }
}

/// A real-output transform of `input`, of the conjugate with the norm's direction swapped
/// where asked (`hfft`).
fn c2r<T: FftElement>(
    input: Input<'_, T>,
    s: Option<&[i64]>,
    axes: &Axes,
    norm: FftNorm,
    conjugate: bool,
) -> Result<DeviceArray<T::Part>> {
    let shapes = shapes(&input.shape()?, s, axes, Real::Output)?;
    input.refuse_capture()?;
    let norm = if conjugate { norm.swapped() } else { norm };
    let factor = norm.factor(true, shapes.total);
    match input {
        Input::Array(a) => complex_to_real(a, &shapes, factor, conjugate, false),
        Input::Expr(e) => fused::complex_to_real(e, &shapes, factor, conjugate),
    }
}
