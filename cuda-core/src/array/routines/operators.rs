//! The arithmetic operators of expressions: `+ - * /` between arrays (`&DeviceArray<T>`),
//! expressions and scalars (weak as in NumPy 2: any Rust numeric type on the right, `f64` and
//! `i64` on the left, so that literals infer), and unary `-`.
//! Each builds an [`Expr`]; `/` is true division (`bool` and integers give `f64`, as in NumPy:
//! [`DType::quotient_result`](crate::DType::quotient_result)).

use std::ops::{Add, Div, Mul, Neg, Sub};

use crate::array::device_array::DeviceArray;
use crate::array::dtype::Element;
use crate::array::promotion::Scalars;
use crate::array::routines::math::{
    binary, binary_rhs, cast_to, unary, BinaryOp, Expr, IntoExpr, Rhs, UnaryOp, WeakScalar,
};

/// Operand types of the left side: arrays and expressions; the right side is any [`Rhs`]
/// (arrays, expressions, scalars of every Rust numeric type).
macro_rules! array_ops {
    ($($left:ty),*) => {
        $(
            impl<'a, T: Scalars, R: Rhs<'a, T>> Add<R> for $left {
                type Output = Expr<'a, R::Output>;
                #[inline]
                fn add(self, rhs: R) -> Self::Output {
                    binary_rhs(BinaryOp::Add, self.into_expr(), rhs)
                }
            }
            impl<'a, T: Scalars, R: Rhs<'a, T>> Sub<R> for $left {
                type Output = Expr<'a, R::Output>;
                #[inline]
                fn sub(self, rhs: R) -> Self::Output {
                    binary_rhs(BinaryOp::Sub, self.into_expr(), rhs)
                }
            }
            impl<'a, T: Scalars, R: Rhs<'a, T>> Mul<R> for $left {
                type Output = Expr<'a, R::Output>;
                #[inline]
                fn mul(self, rhs: R) -> Self::Output {
                    binary_rhs(BinaryOp::Mul, self.into_expr(), rhs)
                }
            }
            impl<'a, T: Scalars, R: Rhs<'a, T>> Div<R> for $left {
                type Output = Expr<'a, <R::Output as Scalars>::Quotient>;
                #[inline]
                fn div(self, rhs: R) -> Self::Output {
                    binary_rhs(BinaryOp::Div, self.into_expr(), rhs)
                }
            }
            impl<'a, T: Scalars> Neg for $left {
                type Output = Expr<'a, T>;
                #[inline]
                fn neg(self) -> Self::Output {
                    unary(UnaryOp::Neg, self.into_expr())
                }
            }
        )*
    };
}

array_ops!(&'a DeviceArray<T>, Expr<'a, T>);

/// Scalars on the left of an array or expression: `$kind` picks the weak rule (`WithFloat`,
/// `WithInt` or `WithComplex`).
macro_rules! scalar_ops {
    ($($scalar:ty => $kind:ident;)*) => {
        $(
            scalar_ops!(@one $scalar, $kind, &'a DeviceArray<T>);
            scalar_ops!(@one $scalar, $kind, Expr<'a, T>);
        )*
    };
    (@one $scalar:ty, $kind:ident, $operand:ty) => {
        scalar_ops!(@op $scalar, $kind, $operand, Add, add, Add, <T as Scalars>::$kind);
        scalar_ops!(@op $scalar, $kind, $operand, Sub, sub, Sub, <T as Scalars>::$kind);
        scalar_ops!(@op $scalar, $kind, $operand, Mul, mul, Mul, <T as Scalars>::$kind);
        scalar_ops!(@op $scalar, $kind, $operand, Div, div, Div, <<T as Scalars>::$kind as Scalars>::Quotient);
    };
    (@op $scalar:ty, $kind:ident, $operand:ty, $trait:ident, $method:ident, $op:ident, $out:ty) => {
        impl<'a, T: Scalars> $trait<$operand> for $scalar {
            type Output = Expr<'a, $out>;
            fn $method(self, rhs: $operand) -> Self::Output {
                let promoted: Expr<'a, <T as Scalars>::$kind> = cast_to(rhs.into_expr());
                let scalar = Expr::<<T as Scalars>::$kind>::scalar(<<T as Scalars>::$kind as Element>::DTYPE, self.value());
                binary(BinaryOp::$op, scalar, promoted)
            }
        }
    };
}

// On the left, one float, one integer and one complex scalar type, so that literals infer
// (`2.0 * &x`, `1 - &x`; no literal is complex): Rust's literal fallback does not reach through an operator trait with several
// implementing left types, so a second type of either kind would leave `(2.0 * &x).eval()`
// ambiguous. A scalar of another type goes on the right (`&x * a`, any Rust numeric type) or
// converts (`f64::from(a) - &x`: weak, so the result type is the same).
scalar_ops! {
    f64 => WithFloat;
    i64 => WithInt;
    num_complex::Complex<f64> => WithComplex;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Bool;

    #[test]
    fn weak_scalars_keep_the_array_type() {
        fn float_with_f32(e: Expr<'_, f32>) -> Expr<'_, f32> {
            2.0 * e
        }
        fn int_with_u8(e: Expr<'_, u8>) -> Expr<'_, u8> {
            e + 1
        }
        fn float_with_int(e: Expr<'_, i32>) -> Expr<'_, f64> {
            e * 0.5
        }
        fn int_division_is_true_division(e: Expr<'_, i16>) -> Expr<'_, f64> {
            e / 2
        }
        // NumPy (and CuPy) divide every integer and bool type in f64.
        fn u8_by_a_scalar(e: Expr<'_, u8>) -> Expr<'_, f64> {
            e / 255
        }
        fn i16_by_i16<'a>(a: Expr<'a, i16>, b: Expr<'a, i16>) -> Expr<'a, f64> {
            a / b
        }
        fn bool_by_bool<'a>(a: Expr<'a, crate::Bool>, b: Expr<'a, crate::Bool>) -> Expr<'a, f64> {
            a / b
        }
        fn i8_by_u8<'a>(a: Expr<'a, i8>, b: Expr<'a, u8>) -> Expr<'a, f64> {
            a / b
        }
        fn f16_by_i8<'a>(a: Expr<'a, half::f16>, b: Expr<'a, i8>) -> Expr<'a, half::f16> {
            a / b
        }
        let _ = (
            float_with_f32,
            int_with_u8,
            float_with_int,
            int_division_is_true_division,
            u8_by_a_scalar,
            i16_by_i16,
            bool_by_bool,
            i8_by_u8,
            f16_by_i8,
        );
    }

    #[test]
    fn scalars_of_every_rust_type_are_weak_everywhere() {
        use crate::array::routines::math::{where_, ExprOps};
        use crate::DType;
        fn v<'a, T: Scalars>() -> Expr<'a, T> {
            Expr::scalar(T::DTYPE, crate::array::routines::math::ScalarValue::int(1))
        }
        let a = 2.0f32;
        // Any numeric type on the right; its kind, not its width, decides (weak).
        assert_eq!((v::<half::f16>() * a).dtype(), DType::F16);
        assert_eq!((v::<half::f16>() * 2.0f64).dtype(), DType::F16);
        assert_eq!((v::<u8>() + 3u64).dtype(), DType::U8);
        assert_eq!((v::<i16>() - 3i8).dtype(), DType::I16);
        assert_eq!((v::<i32>() * a).dtype(), DType::F64, "float scalar with ints: f64");
        assert_eq!((v::<f32>() / half::bf16::ONE).dtype(), DType::F32);
        assert_eq!((v::<u8>() / 2u8).dtype(), DType::F64, "true division");
        assert_eq!((2.0 * v::<f32>()).dtype(), DType::F32);
        assert_eq!((1 - v::<u16>()).dtype(), DType::U16);
        // Methods take scalars; literals infer.
        assert_eq!(v::<f32>().gt(0.5).dtype(), DType::Bool);
        assert_eq!(v::<u8>().maximum(0).dtype(), DType::U8);
        assert_eq!(v::<f32>().minimum(1.0).dtype(), DType::F32);
        assert_eq!(v::<half::f16>().pow(2).dtype(), DType::F16);
        assert_eq!(v::<i32>().pow(0.5).dtype(), DType::F64);
        assert_eq!(v::<i8>().eq(3u32).dtype(), DType::Bool);
        assert_eq!(where_(v::<f32>().gt(0.0), v::<f32>(), 0.0).dtype(), DType::F32);
        assert_eq!(where_(v::<Bool>(), 1, v::<u8>()).dtype(), DType::U8);
        assert_eq!(where_(v::<Bool>(), v::<i32>(), v::<f32>()).dtype(), DType::F64);
        let _ = (v::<f32>() * 2.0 + 1).maximum(0.0).astype::<f64>();
    }
}
