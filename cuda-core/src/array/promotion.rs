//! Type-level promotion for expressions: [`Promote`] (two arrays), [`Scalars`] (an array with a
//! weak scalar, and the float type of math functions), matching [`DType::promote`](crate::DType::promote),
//! [`DType::with_float_scalar`](crate::DType::with_float_scalar), [`DType::with_int_scalar`](crate::DType::with_int_scalar), [`DType::float_result`](crate::DType::float_result),
//! [`DType::quotient_result`](crate::DType::quotient_result) and [`DType::arithmetic_result`](crate::DType::arithmetic_result)
//! (tests check every pair).
//!
//! Scalars: a Rust scalar of a concrete type (`i8`..`u64`, `f32`, `f64`, `f16`, `bf16`,
//! `Complex<f32>`, `Complex<f64>`) is
//! weak like a Python scalar of its kind in NumPy 2 (NEP 50), not strong like a NumPy scalar of
//! that type: an integer scalar combines as [`Scalars::WithInt`], a float scalar as
//! [`Scalars::WithFloat`], a complex one as [`Scalars::WithComplex`], whatever its width. The choice keeps `&x * 0.5f64` of an `f32` (or
//! `f16`) array in the array's type, as the same code in Python keeps it, and makes the Rust
//! type of a scalar variable irrelevant to the result type; an integer scalar out of the range
//! of the type it takes is an error when the expression runs.

use crate::array::dtype::{Bool, Element};

/// The complex types, short for the tables.
type C64 = num_complex::Complex<f32>;
type C128 = num_complex::Complex<f64>;

/// The element type two operands of types `Self` and `B` combine in ([`DType::promote`](crate::DType::promote)).
pub trait Promote<B: Element>: Scalars {
    /// The promoted type.
    type Output: Scalars;
}

/// The result types of an array of `Self` with a weak scalar, and of math functions.
pub trait Scalars: Element {
    /// With a float scalar ([`DType::with_float_scalar`](crate::DType::with_float_scalar)).
    type WithFloat: Element + Scalars;
    /// With an integer scalar ([`DType::with_int_scalar`](crate::DType::with_int_scalar)).
    type WithInt: Element + Scalars;
    /// With a complex scalar ([`DType::with_complex_scalar`](crate::DType::with_complex_scalar)).
    type WithComplex: Element + Scalars;
    /// Of `sqrt`, `exp`, ... ([`DType::float_result`](crate::DType::float_result)).
    type Float: Element + Scalars;
    /// Of true division `/` ([`DType::quotient_result`](crate::DType::quotient_result)).
    type Quotient: Element + Scalars;
    /// Of `square`, `reciprocal`, `pow`, `floor_divide`, `remainder` and `fmod`, which have no
    /// `bool` form in NumPy ([`DType::arithmetic_result`](crate::DType::arithmetic_result)).
    type Arithmetic: Element + Scalars;
    /// Of `abs`, `real` and `imag`: the type itself, or a complex type's part type
    /// ([`DType::real_type`](crate::DType::real_type)).
    type Real: Element + Scalars;
    /// Of `angle`: the real type of [`Float`](Self::Float) ([`DType::angle_result`](crate::DType::angle_result)).
    type Angle: Element + Scalars;
}

macro_rules! promote_table {
    ($($a:ty: $($b:ty => $out:ty),*;)*) => {
        $($(
            impl Promote<$b> for $a {
                type Output = $out;
            }
        )*)*

        #[cfg(test)]
        #[test]
        fn the_type_level_table_matches_the_runtime_one() {
            $($(
                assert_eq!(
                    <<$a as Promote<$b>>::Output as Element>::DTYPE,
                    <$a as Element>::DTYPE.promote(<$b as Element>::DTYPE),
                    "{} with {}", <$a as Element>::DTYPE, <$b as Element>::DTYPE
                );
            )*)*
        }
    };
}

promote_table! {
    Bool: Bool => Bool, i8 => i8, i16 => i16, i32 => i32, i64 => i64, u8 => u8, u16 => u16, u32 => u32, u64 => u64, half::f16 => half::f16, half::bf16 => half::bf16, f32 => f32, f64 => f64, C64 => C64, C128 => C128;
    i8: Bool => i8, i8 => i8, i16 => i16, i32 => i32, i64 => i64, u8 => i16, u16 => i32, u32 => i64, u64 => f64, half::f16 => half::f16, half::bf16 => half::bf16, f32 => f32, f64 => f64, C64 => C64, C128 => C128;
    i16: Bool => i16, i8 => i16, i16 => i16, i32 => i32, i64 => i64, u8 => i16, u16 => i32, u32 => i64, u64 => f64, half::f16 => f32, half::bf16 => f32, f32 => f32, f64 => f64, C64 => C64, C128 => C128;
    i32: Bool => i32, i8 => i32, i16 => i32, i32 => i32, i64 => i64, u8 => i32, u16 => i32, u32 => i64, u64 => f64, half::f16 => f64, half::bf16 => f64, f32 => f64, f64 => f64, C64 => C128, C128 => C128;
    i64: Bool => i64, i8 => i64, i16 => i64, i32 => i64, i64 => i64, u8 => i64, u16 => i64, u32 => i64, u64 => f64, half::f16 => f64, half::bf16 => f64, f32 => f64, f64 => f64, C64 => C128, C128 => C128;
    u8: Bool => u8, i8 => i16, i16 => i16, i32 => i32, i64 => i64, u8 => u8, u16 => u16, u32 => u32, u64 => u64, half::f16 => half::f16, half::bf16 => half::bf16, f32 => f32, f64 => f64, C64 => C64, C128 => C128;
    u16: Bool => u16, i8 => i32, i16 => i32, i32 => i32, i64 => i64, u8 => u16, u16 => u16, u32 => u32, u64 => u64, half::f16 => f32, half::bf16 => f32, f32 => f32, f64 => f64, C64 => C64, C128 => C128;
    u32: Bool => u32, i8 => i64, i16 => i64, i32 => i64, i64 => i64, u8 => u32, u16 => u32, u32 => u32, u64 => u64, half::f16 => f64, half::bf16 => f64, f32 => f64, f64 => f64, C64 => C128, C128 => C128;
    u64: Bool => u64, i8 => f64, i16 => f64, i32 => f64, i64 => f64, u8 => u64, u16 => u64, u32 => u64, u64 => u64, half::f16 => f64, half::bf16 => f64, f32 => f64, f64 => f64, C64 => C128, C128 => C128;
    half::f16: Bool => half::f16, i8 => half::f16, i16 => f32, i32 => f64, i64 => f64, u8 => half::f16, u16 => f32, u32 => f64, u64 => f64, half::f16 => half::f16, half::bf16 => f32, f32 => f32, f64 => f64, C64 => C64, C128 => C128;
    half::bf16: Bool => half::bf16, i8 => half::bf16, i16 => f32, i32 => f64, i64 => f64, u8 => half::bf16, u16 => f32, u32 => f64, u64 => f64, half::f16 => f32, half::bf16 => half::bf16, f32 => f32, f64 => f64, C64 => C64, C128 => C128;
    f32: Bool => f32, i8 => f32, i16 => f32, i32 => f64, i64 => f64, u8 => f32, u16 => f32, u32 => f64, u64 => f64, half::f16 => f32, half::bf16 => f32, f32 => f32, f64 => f64, C64 => C64, C128 => C128;
    f64: Bool => f64, i8 => f64, i16 => f64, i32 => f64, i64 => f64, u8 => f64, u16 => f64, u32 => f64, u64 => f64, half::f16 => f64, half::bf16 => f64, f32 => f64, f64 => f64, C64 => C128, C128 => C128;
    C64: Bool => C64, i8 => C64, i16 => C64, i32 => C128, i64 => C128, u8 => C64, u16 => C64, u32 => C128, u64 => C128, half::f16 => C64, half::bf16 => C64, f32 => C64, f64 => C128, C64 => C64, C128 => C128;
    C128: Bool => C128, i8 => C128, i16 => C128, i32 => C128, i64 => C128, u8 => C128, u16 => C128, u32 => C128, u64 => C128, half::f16 => C128, half::bf16 => C128, f32 => C128, f64 => C128, C64 => C128, C128 => C128;
}

macro_rules! scalars {
    ($($t:ty => $float_scalar:ty, $int_scalar:ty, $float:ty, $quotient:ty, $arithmetic:ty, $real:ty, $angle:ty, $complex_scalar:ty;)*) => {
        $(
            impl Scalars for $t {
                type WithFloat = $float_scalar;
                type WithInt = $int_scalar;
                type WithComplex = $complex_scalar;
                type Float = $float;
                type Quotient = $quotient;
                type Arithmetic = $arithmetic;
                type Real = $real;
                type Angle = $angle;
            }
        )*

        #[cfg(test)]
        #[test]
        fn scalar_rules_match_the_runtime_ones() {
            $(
                let dtype: crate::array::dtype::DType = <$t as Element>::DTYPE;
                assert_eq!(<<$t as Scalars>::WithFloat as Element>::DTYPE, dtype.with_float_scalar());
                assert_eq!(<<$t as Scalars>::WithInt as Element>::DTYPE, dtype.with_int_scalar());
                assert_eq!(<<$t as Scalars>::WithComplex as Element>::DTYPE, dtype.with_complex_scalar());
                assert_eq!(<<$t as Scalars>::Float as Element>::DTYPE, dtype.float_result());
                assert_eq!(<<$t as Scalars>::Quotient as Element>::DTYPE, dtype.quotient_result());
                assert_eq!(<<$t as Scalars>::Arithmetic as Element>::DTYPE, dtype.arithmetic_result());
                assert_eq!(<<$t as Scalars>::Real as Element>::DTYPE, dtype.real_type());
                assert_eq!(<<$t as Scalars>::Angle as Element>::DTYPE, dtype.angle_result());
            )*
        }
    };
}

scalars! {
    Bool => f64, i64, half::f16, f64, i8, Bool, half::f16, C128;
    i8 => f64, i8, half::f16, f64, i8, i8, half::f16, C128;
    i16 => f64, i16, f32, f64, i16, i16, f32, C128;
    i32 => f64, i32, f64, f64, i32, i32, f64, C128;
    i64 => f64, i64, f64, f64, i64, i64, f64, C128;
    u8 => f64, u8, half::f16, f64, u8, u8, half::f16, C128;
    u16 => f64, u16, f32, f64, u16, u16, f32, C128;
    u32 => f64, u32, f64, f64, u32, u32, f64, C128;
    u64 => f64, u64, f64, f64, u64, u64, f64, C128;
    half::f16 => half::f16, half::f16, half::f16, half::f16, half::f16, half::f16, half::f16, C64;
    half::bf16 => half::bf16, half::bf16, half::bf16, half::bf16, half::bf16, half::bf16, half::bf16, C64;
    f32 => f32, f32, f32, f32, f32, f32, f32, C64;
    f64 => f64, f64, f64, f64, f64, f64, f64, C128;
    C64 => C64, C64, C64, C64, C64, f32, f32, C64;
    C128 => C128, C128, C128, C128, C128, f64, f64, C128;
}

/// Element types of bitwise operations: integers and [`Bool`].
pub trait Bitwise: Scalars {}

/// Integer element types (shifts).
pub trait Integral: Bitwise {}

impl Bitwise for Bool {}
macro_rules! integral {
    ($($t:ty),*) => {
        $(
            impl Bitwise for $t {}
            impl Integral for $t {}
        )*
    };
}
integral!(i8, i16, i32, i64, u8, u16, u32, u64);
