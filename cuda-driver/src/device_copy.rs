//! The marker trait for plain data that may live in device memory and be
//! passed to kernels by value, and the byte size of a run of it.

use std::mem::size_of;

use crate::error::{Error, Result};

/// Plain data that can be copied between host and device byte for byte and
/// passed to a kernel by value.
///
/// # Safety
/// Implement it only for types that are:
/// - `#[repr(C)]` (or `#[repr(transparent)]` over a `DeviceCopy` type) with
///   the same size, alignment and field layout as the kernel's C declaration;
/// - valid for **every** bit pattern (the device may write any bytes, which
///   then come back to the host as this type), so no `bool`, `char`, enums,
///   references or `NonZero*`;
/// - free of pointers into host memory and of anything with a destructor
///   (device pointers as plain integers, like `CUdeviceptr`, are fine).
///
/// ```
/// #[derive(Clone, Copy)]
/// #[repr(C)]
/// struct Params {
///     scale: f32,
///     offset: f32,
///     count: u32,
/// }
/// // SAFETY: repr(C), only numeric fields, any bit pattern is a valid value.
/// unsafe impl cuda_driver::DeviceCopy for Params {}
/// ```
pub unsafe trait DeviceCopy: Copy + 'static {}

macro_rules! device_copy {
    ($($ty:ty),*) => {
        $(
            // SAFETY: a primitive number: fixed layout, every bit pattern valid.
            unsafe impl DeviceCopy for $ty {}
        )*
    };
}

device_copy!(u8, u16, u32, u64, usize, i8, i16, i32, i64, isize, f32, f64);

// SAFETY: an array of DeviceCopy values has C array layout and no invalid bit patterns.
unsafe impl<T: DeviceCopy, const N: usize> DeviceCopy for [T; N] {}

// SAFETY: `Wrapping<T>` is `repr(transparent)` over `T`.
unsafe impl<T: DeviceCopy> DeviceCopy for std::num::Wrapping<T> {}

// SAFETY: `half::f16` and `half::bf16` are `repr(transparent)` over `u16`; every bit pattern is
// a valid value (NaNs included).
unsafe impl DeviceCopy for half::f16 {}
// SAFETY: as above.
unsafe impl DeviceCopy for half::bf16 {}
// SAFETY: `Complex<T>` is `repr(C)` over two `T`s (real, then imaginary), plain data with no
// padding for `f32` and `f64`, the layout of CUDA's `cuComplex`/`cuDoubleComplex`.
unsafe impl DeviceCopy for num_complex::Complex<f32> {}
// SAFETY: as for `Complex<f32>`.
unsafe impl DeviceCopy for num_complex::Complex<f64> {}

/// Byte size of `len` elements of `T`; zero lengths, zero-sized types and
/// overflow are errors.
pub(crate) fn byte_len<T>(len: usize) -> Result<usize> {
    if size_of::<T>() == 0 {
        return Err(Error::InvalidValue("zero-sized element types cannot be stored".into()));
    }
    if len == 0 {
        return Err(Error::InvalidValue("a buffer must hold at least one element".into()));
    }
    len.checked_mul(size_of::<T>())
        .ok_or_else(|| Error::InvalidValue(format!("{len} elements of {} bytes overflow usize", size_of::<T>())))
}
