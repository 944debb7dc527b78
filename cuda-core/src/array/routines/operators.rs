//! The arithmetic operators of expressions: `+ - * /` between arrays (`&DeviceArray<T>`),
//! expressions and scalars (`f64` and `i64`, so that literals infer; weak as in NumPy 2), and unary `-`.
//! Each builds an [`Expr`]; `/` is true division (`bool` and integers give `f64`, as in NumPy:
//! [`DType::quotient_result`](crate::DType::quotient_result)).

use std::ops::{Add, Div, Mul, Neg, Sub};

use crate::array::device_array::DeviceArray;
use crate::array::dtype::Element;
use crate::array::promotion::{Promote, Scalars};
use crate::array::routines::math::{binary, cast_to, unary, BinaryOp, Expr, IntoExpr, ScalarValue, UnaryOp};

/// Operand types of the left side: arrays and expressions.
macro_rules! array_ops {
    ($($left:ty),*) => {
        $(
            impl<'a, T: Scalars + Promote<R::Elem>, R: IntoExpr<'a>> Add<R> for $left {
                type Output = Expr<'a, <T as Promote<R::Elem>>::Output>;
                fn add(self, rhs: R) -> Self::Output {
                    binary(BinaryOp::Add, self.into_expr(), rhs.into_expr())
                }
            }
            impl<'a, T: Scalars + Promote<R::Elem>, R: IntoExpr<'a>> Sub<R> for $left {
                type Output = Expr<'a, <T as Promote<R::Elem>>::Output>;
                fn sub(self, rhs: R) -> Self::Output {
                    binary(BinaryOp::Sub, self.into_expr(), rhs.into_expr())
                }
            }
            impl<'a, T: Scalars + Promote<R::Elem>, R: IntoExpr<'a>> Mul<R> for $left {
                type Output = Expr<'a, <T as Promote<R::Elem>>::Output>;
                fn mul(self, rhs: R) -> Self::Output {
                    binary(BinaryOp::Mul, self.into_expr(), rhs.into_expr())
                }
            }
            impl<'a, T: Scalars + Promote<R::Elem>, R: IntoExpr<'a>> Div<R> for $left {
                type Output = Expr<'a, <<T as Promote<R::Elem>>::Output as Scalars>::Quotient>;
                fn div(self, rhs: R) -> Self::Output {
                    let (a, b) = (self.into_expr(), rhs.into_expr());
                    binary(BinaryOp::Div, a, b)
                }
            }
            impl<'a, T: Scalars> Neg for $left {
                type Output = Expr<'a, T>;
                fn neg(self) -> Self::Output {
                    unary(UnaryOp::Neg, self.into_expr())
                }
            }
        )*
    };
}

array_ops!(&'a DeviceArray<T>, Expr<'a, T>);

/// A weak scalar operand of `scalar`'s kind, taking the type `R` it combines into.
fn weak<'a, R: Element>(value: ScalarValue) -> Expr<'a, R> {
    Expr::scalar(R::DTYPE, value)
}

/// Scalars on either side of an array or expression: `$kind` picks the weak rule
/// (`WithFloat` or `WithInt`).
macro_rules! scalar_ops {
    ($($scalar:ty => $kind:ident, $value:ident;)*) => {
        $(
            scalar_ops!(@one $scalar, $kind, $value, &'a DeviceArray<T>);
            scalar_ops!(@one $scalar, $kind, $value, Expr<'a, T>);
        )*
    };
    (@one $scalar:ty, $kind:ident, $value:ident, $operand:ty) => {
        scalar_ops!(@op $scalar, $kind, $value, $operand, Add, add, Add, <T as Scalars>::$kind);
        scalar_ops!(@op $scalar, $kind, $value, $operand, Sub, sub, Sub, <T as Scalars>::$kind);
        scalar_ops!(@op $scalar, $kind, $value, $operand, Mul, mul, Mul, <T as Scalars>::$kind);
        scalar_ops!(@op $scalar, $kind, $value, $operand, Div, div, Div, <<T as Scalars>::$kind as Scalars>::Quotient);
    };
    (@op $scalar:ty, $kind:ident, $value:ident, $operand:ty, $trait:ident, $method:ident, $op:ident, $out:ty) => {
        impl<'a, T: Scalars> $trait<$scalar> for $operand {
            type Output = Expr<'a, $out>;
            fn $method(self, rhs: $scalar) -> Self::Output {
                let promoted: Expr<'a, <T as Scalars>::$kind> = cast_to(self.into_expr());
                binary(BinaryOp::$op, promoted, weak::<<T as Scalars>::$kind>(ScalarValue::$value(rhs.into())))
            }
        }
        impl<'a, T: Scalars> $trait<$operand> for $scalar {
            type Output = Expr<'a, $out>;
            fn $method(self, rhs: $operand) -> Self::Output {
                let promoted: Expr<'a, <T as Scalars>::$kind> = cast_to(rhs.into_expr());
                binary(BinaryOp::$op, weak::<<T as Scalars>::$kind>(ScalarValue::$value(self.into())), promoted)
            }
        }
    };
}

// One float and one integer scalar type, so that literals infer (`2.0 * &x`, `&x + 1`): a
// second of either kind would leave `2.0` ambiguous. Other scalars convert with `as`.
scalar_ops! {
    f64 => WithFloat, Float;
    i64 => WithInt, Int;
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
