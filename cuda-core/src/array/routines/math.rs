//! Lazy array expressions, fused into one generated kernel: [`Expr`], built by operators on
//! `&DeviceArray<T>`, scalars and other expressions, and by the methods of [`ExprOps`].
//!
//! ```no_run
//! use cuda_core::{Device, DeviceArray, ExprOps};
//!
//! # fn main() -> cuda_core::Result<()> {
//! let stream = Device::new(0)?.create_stream()?;
//! let x = DeviceArray::<f32>::arange(&stream, 0.0, 4.0, 1.0)?;
//! let y = DeviceArray::<f32>::full(&stream, 4, 10.0)?;
//! let z = (2.0 * &x + &y).eval()?; // one kernel: reads x and y once, writes z once
//! assert_eq!(z.to_vec()?, [10.0, 12.0, 14.0, 16.0]);
//! let w = (&x * &x).sqrt().maximum(&y).eval()?;
//! assert_eq!(w.to_vec()?, [10.0; 4]);
//! # Ok(())
//! # }
//! ```
//!
//! Evaluating an expression ([`Expr::eval`], [`DeviceArray::assign`], [`DeviceArray::update`])
//! generates CUDA C++ for its shape (operators, element types, and which operands are the same
//! array), compiles it once through the [kernel cache](crate::KernelCache) and launches it as an
//! [`ElementwiseKernel`] (broadcasting, views, vector loads). Scalar values are kernel
//! parameters, so `2.0 * &x` and `3.0 * &x` share one kernel. Result types follow the
//! [promotion table](crate::DType::promote), with weak scalars; `f16` and `bf16` values are
//! computed in `float` and rounded to their type after each operation, as NumPy does.

use std::any::Any;
use std::fmt::Write;
use std::marker::PhantomData;
use std::rc::Rc;
use std::sync::Arc;

use crate::array::device_array::DeviceArray;
use crate::array::dtype::{bf16_from_f64, f16_from_f64, Bool, DType, Element};
use crate::array::kernels::elementwise::ElementwiseKernel;
use crate::array::kernels::inline::Inline;
use crate::array::kernels::registry::kernel_encoded;
use crate::array::kernels::{Arg, ErasedArray};
use crate::array::memory::{overlap, overlap_measured, Overlap};
use crate::array::promotion::{Bitwise, Integral, Promote, Scalars};
use crate::array::view::broadcast_shapes;
use crate::error::{Error, Result};

/// A scalar's value, kept exact for integers (an [`ExactInt`] holds every `i64` and `u64`).
#[derive(Clone, Copy, Debug)]
pub(crate) enum ScalarValue {
    Float(f64),
    Int(ExactInt),
    /// A complex scalar: real and imaginary parts.
    Complex(f64, f64),
}

impl ScalarValue {
    /// The integer `value`.
    pub(crate) const fn int(value: i128) -> ScalarValue {
        ScalarValue::Int(ExactInt::new(value))
    }
}

/// An integer scalar's value, exact from `-2^64` to `2^64 - 1` (every `i64` and `u64`, what a
/// Rust scalar can be), kept as its low word and whether it is negative: 8-byte aligned where
/// an `i128` is 16, and with room for [`ScalarValue`]'s tag in the flag, so that an
/// expression's operands (and so the expression, moved by each operator) stay small.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ExactInt {
    low: u64,
    negative: bool,
}

impl ExactInt {
    /// The smallest value kept exactly.
    const MIN: i128 = -(1 << 64);
    /// The largest value kept exactly.
    const MAX: i128 = (1 << 64) - 1;

    /// `value`, saturated to the range kept exactly (beyond it, it is out of every integer
    /// type's range all the same).
    pub(crate) const fn new(value: i128) -> ExactInt {
        let value = if value < Self::MIN {
            Self::MIN
        } else if value > Self::MAX {
            Self::MAX
        } else {
            value
        };
        ExactInt {
            low: value as u64,
            negative: value < 0,
        }
    }

    /// The value.
    pub(crate) const fn get(self) -> i128 {
        match self.negative {
            true => self.low as i128 + Self::MIN,
            false => self.low as i128,
        }
    }
}

/// What an expression reads: an array, a scalar of a given type, or a value computed when the
/// expression is evaluated (a matrix product, [`Deferred`]).
#[derive(Clone)]
pub(crate) enum Operand<'a> {
    Array(&'a dyn ErasedArray),
    Scalar(DType, ScalarValue),
    // Only matrix products (feature `blas`) make deferred operands so far.
    #[cfg_attr(not(feature = "blas"), allow(dead_code))]
    Deferred(Rc<dyn Deferred + 'a>),
}

/// An operand computed by a library call when its expression is evaluated (the matrix product
/// of [`DeviceArray::matmul_expr`](crate::DeviceArray::matmul_expr)). Evaluation asks it first
/// to compute the whole expression into the output itself (a cuBLASLt epilogue); if it cannot,
/// its value goes to a temporary and the rest of the expression is one fused kernel.
pub(crate) trait Deferred {
    fn dtype(&self) -> DType;
    fn shape(&self) -> &[usize];
    fn stream(&self) -> &cuda_driver::Stream;
    /// Computes `node` over `operands` (this operand is `operands[index]`) into `out` (a
    /// `DeviceArray` of the expression's type, as `Any`) in one library call when it can:
    /// `Ok(false)`, with nothing queued, when it cannot.
    fn evaluate_fused(&self, node: &Node, operands: &[Operand<'_>], index: usize, out: &mut dyn Any) -> Result<bool>;
    /// The value, as a new compact array.
    fn evaluate(&self) -> Result<Box<dyn ErasedArray>>;
}

/// How an operation's result type follows from its operands' (promoted) type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// The operand type ([`DType::promote`] of both, for binary operations).
    Same,
    /// The float type of it ([`DType::float_result`]): `sqrt`, `arctan2`, ...
    Float,
    /// The operand type with `Bool` as `i8` ([`DType::arithmetic_result`]): `square`, `fmod`,
    /// ... (no `bool` form in NumPy).
    Arithmetic,
    /// `Bool`, from each operand in its own type: `isnan`, `logical_and`, ...
    Predicate,
    /// The real type of a complex operand, else the operand type ([`DType::real_type`]): `abs`,
    /// `real`, `imag`.
    Real,
    /// The real type of the float type ([`DType::angle_result`]): `angle`.
    Angle,
}

/// The result type of an operation of kind `$kind` on `$t` at the type level.
macro_rules! kind_type {
    (Same, $t:ty) => {
        $t
    };
    (Float, $t:ty) => {
        <$t as Scalars>::Float
    };
    (Arithmetic, $t:ty) => {
        <$t as Scalars>::Arithmetic
    };
    (Predicate, $t:ty) => {
        Bool
    };
    (Real, $t:ty) => {
        <$t as Scalars>::Real
    };
    (Angle, $t:ty) => {
        <$t as Scalars>::Angle
    };
}

/// The table of element-wise unary operations (NumPy's unary ufuncs): the method of
/// [`ExprOps`], the operator, its [`Kind`], and its C++ with `{x}` for the operand (in the
/// compute type of the result type for `Same` and `Float`, of its own type for `Predicate`;
/// `_cc_` functions are in `EXPR_PRELUDE`). One line per operation; `Neg` and `Cast` are
/// written by hand.
macro_rules! unary_table {
    ($($(#[$doc:meta])* $method:ident => $variant:ident, $kind:ident, $cpp:literal;)*) => {
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub(crate) enum UnaryOp {
            Neg,
            Cast,
            $($variant,)*
        }

        impl UnaryOp {
            fn kind(self) -> Kind {
                match self {
                    UnaryOp::Neg | UnaryOp::Cast => Kind::Same,
                    $(UnaryOp::$variant => Kind::$kind,)*
                }
            }

            fn cpp(self) -> &'static str {
                match self {
                    UnaryOp::Neg | UnaryOp::Cast => "",
                    $(UnaryOp::$variant => $cpp,)*
                }
            }

            #[cfg(test)]
            const TABLE: &'static [UnaryOp] = &[$(UnaryOp::$variant,)*];
        }

        macro_rules! unary_methods {
            () => {
                $(
                    $(#[$doc])*
                    fn $method(self) -> Expr<'a, kind_type!($kind, Self::Elem)> {
                        unary(UnaryOp::$variant, self.into_expr())
                    }
                )*
            };
        }
    };
}

unary_table! {
    /// `|x|` (NumPy's `abs`; of a complex value its modulus, a real type).
    abs => Abs, Real, "_cc_abs({x})";
    /// The angle of a complex value in radians (NumPy's `angle`; of a real value `0` or `pi`), a
    /// real type.
    angle => Angle, Angle, "_cc_angle({x})";
    /// The complex conjugate (NumPy's `conj`, `conjugate`; real values unchanged).
    #[doc(alias = "conjugate")]
    conj => Conj, Same, "_cc_conj({x})";
    /// The real part (NumPy's `real`; real values unchanged). Of an array, `DeviceArray::real`
    /// is a view instead.
    real => Real, Real, "_cc_real({x})";
    /// The imaginary part (NumPy's `imag`; `0` for real values). Of an array,
    /// `DeviceArray::imag` is a view instead.
    imag => Imag, Real, "_cc_imag({x})";
    /// Square root (a float type: [`DType::float_result`]).
    sqrt => Sqrt, Float, "sqrt({x})";
    /// Cube root (not of complex values, as in NumPy).
    cbrt => Cbrt, Float, "cbrt({x})";
    /// `e^x`.
    exp => Exp, Float, "exp({x})";
    /// `2^x`.
    exp2 => Exp2, Float, "exp2({x})";
    /// `e^x - 1`, exact near 0.
    expm1 => Expm1, Float, "expm1({x})";
    /// Natural logarithm.
    log => Log, Float, "log({x})";
    /// Base-2 logarithm.
    log2 => Log2, Float, "log2({x})";
    /// Base-10 logarithm.
    log10 => Log10, Float, "log10({x})";
    /// `ln(1 + x)`, exact near 0.
    log1p => Log1p, Float, "log1p({x})";
    /// Sine.
    sin => Sin, Float, "sin({x})";
    /// Cosine.
    cos => Cos, Float, "cos({x})";
    /// Tangent.
    tan => Tan, Float, "tan({x})";
    /// Inverse sine (NumPy's `arcsin`).
    arcsin => Arcsin, Float, "asin({x})";
    /// Inverse cosine.
    arccos => Arccos, Float, "acos({x})";
    /// Inverse tangent.
    arctan => Arctan, Float, "atan({x})";
    /// Hyperbolic sine.
    sinh => Sinh, Float, "sinh({x})";
    /// Hyperbolic cosine.
    cosh => Cosh, Float, "cosh({x})";
    /// Hyperbolic tangent.
    tanh => Tanh, Float, "tanh({x})";
    /// GELU in its tanh form, `0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3)))` (the form of
    /// cuBLASLt's epilogue, so `(x.matmul_expr(&w)? + &b).gelu()` becomes one).
    gelu => Gelu, Float, "_cc_gelu({x})";
    /// Inverse hyperbolic sine.
    arcsinh => Arcsinh, Float, "asinh({x})";
    /// Inverse hyperbolic cosine.
    arccosh => Arccosh, Float, "acosh({x})";
    /// Inverse hyperbolic tangent.
    arctanh => Arctanh, Float, "atanh({x})";
    /// Round to the nearest integer, ties to even (a float type, as NumPy's `rint`).
    rint => Rint, Float, "rint({x})";
    /// Round down (integers and `Bool` unchanged, keeping their type, as NumPy 2; not of complex
    /// values).
    floor => Floor, Same, "_cc_floor({x})";
    /// Round up (integers unchanged).
    ceil => Ceil, Same, "_cc_ceil({x})";
    /// Round toward zero (integers unchanged).
    trunc => Trunc, Same, "_cc_trunc({x})";
    /// `-1`, `0` or `1` by the sign (NaN stays NaN; of a complex value `x / |x|`, as NumPy 2).
    /// Of `Bool` an [`Error::InvalidValue`] when evaluated, as NumPy has no `bool` sign.
    sign => Sign, Same, "_cc_sign({x})";
    /// `x * x`, in `x`'s type (`Bool` gives `i8`, as in NumPy).
    square => Square, Arithmetic, "_cc_square({x})";
    /// `1 / x` in `x`'s type (`Bool` gives `i8`; integers: truncated, `0` for `0` where NumPy's
    /// result is undefined).
    reciprocal => Reciprocal, Arithmetic, "_cc_reciprocal({x})";
    /// Whether `x` is NaN (`Bool`; never for integers).
    isnan => IsNan, Predicate, "_cc_isnan({x})";
    /// Whether `x` is infinite.
    isinf => IsInf, Predicate, "_cc_isinf({x})";
    /// Whether `x` is neither NaN nor infinite.
    isfinite => IsFinite, Predicate, "_cc_isfinite({x})";
    /// Whether the sign bit is set (`-0.0` included).
    signbit => Signbit, Predicate, "_cc_signbit({x})";
    /// `!x`: whether `x` is zero (NaN is not).
    logical_not => LogicalNot, Predicate, "(!{x})";
    /// Bitwise not (NumPy's `invert`, also named `bitwise_not`; `Bool`: logical not); integers
    /// and `Bool` only.
    #[doc(alias = "bitwise_not")]
    invert => Invert, Same, "_cc_invert({x})";
}

/// The table of element-wise binary operations other than the arithmetic operators,
/// comparisons, `pow`, `maximum` and `minimum`: method, operator, [`Kind`], the bound the
/// promoted type must meet, and C++ with `{x}` and `{y}` (both in the compute type of the
/// result type for `Same` and `Float`, converted to `bool` for `Predicate`).
macro_rules! binary_table {
    ($($(#[$doc:meta])* $method:ident => $variant:ident, $kind:ident, $bound:ident, $cpp:literal;)*) => {
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub(crate) enum BinaryOp {
            Add,
            Sub,
            Mul,
            Div,
            Pow,
            Maximum,
            Minimum,
            /// `clip`'s raise to the lower bound: `maximum`, but for complex values NumPy's
            /// clip order (see `_cc_cx_clip_low`).
            ClipLow,
            /// `clip`'s lowering to the upper bound: `minimum`, but for complex values NumPy's
            /// clip order.
            ClipHigh,
            Lt,
            Le,
            Gt,
            Ge,
            Eq,
            Ne,
            $($variant,)*
        }

        impl BinaryOp {
            /// The kind and C++ of a table operation.
            fn table(self) -> Option<(Kind, &'static str)> {
                match self {
                    $(BinaryOp::$variant => Some((Kind::$kind, $cpp)),)*
                    _ => None,
                }
            }

            #[cfg(test)]
            const TABLE: &'static [BinaryOp] = &[$(BinaryOp::$variant,)*];
        }

        macro_rules! binary_methods {
            () => {
                $(
                    $(#[$doc])*
                    fn $method<R: Rhs<'a, Self::Elem>>(self, rhs: R) -> Expr<'a, kind_type!($kind, R::Output)>
                    where
                        R::Output: $bound,
                    {
                        binary_rhs(BinaryOp::$variant, self.into_expr(), rhs)
                    }
                )*
            };
        }
    };
}

binary_table! {
    /// The angle of `(y = self, x = rhs)` (NumPy's `arctan2`), in a float type.
    arctan2 => Arctan2, Float, Scalars, "atan2({x}, {y})";
    /// `sqrt(x^2 + y^2)` without overflow.
    hypot => Hypot, Float, Scalars, "hypot({x}, {y})";
    /// `|x|` with the sign of `y`.
    copysign => Copysign, Float, Scalars, "copysign({x}, {y})";
    /// C's `fmod`: the remainder with the sign of `x` (integers: `0` for a zero divisor, as NumPy;
    /// two `Bool`s give `i8`, as in NumPy).
    fmod => Fmod, Arithmetic, Scalars, "_cc_fmod({x}, {y})";
    /// Division rounded toward negative infinity (NumPy's `floor_divide`, `//`; integers: `0`
    /// for a zero divisor; floats as NumPy's `divmod`; two `Bool`s give `i8`).
    floor_divide => FloorDivide, Arithmetic, Scalars, "_cc_floordiv({x}, {y})";
    /// The remainder with the sign of `y` (NumPy's `remainder`, `%`; Python's modulo; two
    /// `Bool`s give `i8`).
    remainder => Remainder, Arithmetic, Scalars, "_cc_remainder({x}, {y})";
    /// `x && y` (`Bool`).
    logical_and => LogicalAnd, Predicate, Scalars, "({x} && {y})";
    /// `x || y` (`Bool`).
    logical_or => LogicalOr, Predicate, Scalars, "({x} || {y})";
    /// `x != y` as truth values (`Bool`).
    logical_xor => LogicalXor, Predicate, Scalars, "({x} != {y})";
    /// Bitwise and (integers and `Bool`).
    bitwise_and => BitwiseAnd, Same, Bitwise, "({x} & {y})";
    /// Bitwise or (integers and `Bool`).
    bitwise_or => BitwiseOr, Same, Bitwise, "({x} | {y})";
    /// Bitwise exclusive or (integers and `Bool`).
    bitwise_xor => BitwiseXor, Same, Bitwise, "({x} ^ {y})";
    /// `x << y` (integers; `0` for a shift by the width or more, as NumPy).
    left_shift => LeftShift, Same, Integral, "_cc_shl({x}, {y})";
    /// `x >> y`, arithmetic for signed integers (`0` or `-1` for a shift by the width or more).
    right_shift => RightShift, Same, Integral, "_cc_shr({x}, {y})";
}

impl BinaryOp {
    fn is_comparison(self) -> bool {
        matches!(
            self,
            BinaryOp::Lt | BinaryOp::Le | BinaryOp::Gt | BinaryOp::Ge | BinaryOp::Eq | BinaryOp::Ne
        )
    }
}

/// A node of the expression tree; each has the element type of its value.
#[derive(Clone, Debug)]
pub(crate) enum Node {
    /// Operand `index` of the expression.
    Operand(usize, DType),
    /// The current value of the element being written (in-place updates).
    Out(DType),
    Unary(UnaryOp, Box<Node>, DType),
    Binary(BinaryOp, Box<Node>, Box<Node>, DType),
    Where(Box<Node>, Box<Node>, Box<Node>, DType),
}

impl Node {
    pub(crate) fn dtype(&self) -> DType {
        match self {
            Node::Operand(_, d) | Node::Out(d) => *d,
            Node::Unary(_, _, d) | Node::Binary(_, _, _, d) | Node::Where(_, _, _, d) => *d,
        }
    }
}

/// One node of an expression's tree, children first (postfix order): what an [`Expr`] holds,
/// in place, so that building and evaluating a small expression allocates nothing. Each has the
/// element type of its value; operators take their operands from the steps before them (the
/// last step before a binary operator ends its right operand).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Step {
    /// Operand `index` of the expression (a `u16` keeps a step at 4 bytes, and so an
    /// expression small to move; evaluation refuses an expression of more operands than that
    /// counts, see [`check_operand_count`]).
    Operand(u16, DType),
    /// The current value of the element being written (in-place updates).
    Out(DType),
    Unary(UnaryOp, DType),
    Binary(BinaryOp, DType),
    /// `where`: condition, then the two arms.
    Where(DType),
}

impl Step {
    /// The element type of the step's value.
    fn dtype(self) -> DType {
        match self {
            Step::Operand(_, d) | Step::Out(d) | Step::Unary(_, d) | Step::Binary(_, d) | Step::Where(d) => d,
        }
    }

    /// The same step in an expression whose operands start `by` later (saturating: an index
    /// that does not fit means more operands than evaluation accepts).
    fn shifted(self, by: u16) -> Step {
        match self {
            Step::Operand(index, dtype) => Step::Operand(index.saturating_add(by), dtype),
            other => other,
        }
    }
}

/// Steps an expression keeps in place: `x * y + z` takes 5, a `where` of comparisons about 10.
const INLINE_STEPS: usize = 16;
/// Operands an expression keeps in place.
const INLINE_OPERANDS: usize = 6;
/// Words of a kernel key kept in place: enough for an expression kept in place (a type per
/// operand, two words, one per step: see [`encode`]).
const INLINE_KEY: usize = INLINE_OPERANDS + 2 + INLINE_STEPS;

/// An expression's tree, in postfix order.
type Code = Inline<Step, INLINE_STEPS>;
/// An expression's operands.
type Operands<'a> = Inline<Operand<'a>, INLINE_OPERANDS>;

/// The tree `code` (postfix, as an [`Expr`] holds it) describes, for generating its C++ and for
/// matching library epilogues: built when a kernel is generated, not on a cache hit.
pub(crate) fn tree(code: &[Step]) -> Node {
    let mut stack: Vec<Node> = Vec::with_capacity(4);
    let pop = |stack: &mut Vec<Node>| Box::new(stack.pop().expect("an expression's steps are postfix"));
    for &step in code {
        let node = match step {
            Step::Operand(index, dtype) => Node::Operand(index as usize, dtype),
            Step::Out(dtype) => Node::Out(dtype),
            Step::Unary(op, dtype) => Node::Unary(op, pop(&mut stack), dtype),
            Step::Binary(op, dtype) => {
                let b = pop(&mut stack);
                Node::Binary(op, pop(&mut stack), b, dtype)
            }
            Step::Where(dtype) => {
                let b = pop(&mut stack);
                let a = pop(&mut stack);
                Node::Where(pop(&mut stack), a, b, dtype)
            }
        };
        stack.push(node);
    }
    stack.pop().expect("an expression has at least one step")
}

/// Whether `code` reads the output's current value (`update`'s operand).
fn reads_out(code: &[Step]) -> bool {
    code.iter().any(|step| matches!(step, Step::Out(_)))
}

/// A lazy element-wise expression whose value has element type `T`; nothing runs until it is
/// evaluated. It borrows the arrays it reads. An expression of up to 16 operations and
/// operands, over up to 6 distinct operands, is held in place: building one and assigning it to
/// an existing array once its kernel is loaded (a cache hit) allocates nothing on the heap.
pub struct Expr<'a, T: Element> {
    code: Code,
    operands: Operands<'a>,
    _type: PhantomData<T>,
}

impl<T: Element> std::fmt::Debug for Expr<'_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Expr")
            .field("dtype", &T::DTYPE)
            .field("steps", &self.code)
            .field("operands", &self.operands.len())
            .finish()
    }
}

/// What can be an operand of an expression: `&DeviceArray<T>` or an [`Expr`].
pub trait IntoExpr<'a> {
    /// The element type of the value.
    type Elem: Scalars;
    /// The expression.
    fn into_expr(self) -> Expr<'a, Self::Elem>;
}

impl<'a, T: Scalars> IntoExpr<'a> for &'a DeviceArray<T> {
    type Elem = T;
    #[inline(always)]
    fn into_expr(self) -> Expr<'a, T> {
        Expr::leaf(T::DTYPE, Operand::Array(self))
    }
}

impl<'a, T: Scalars> IntoExpr<'a> for Expr<'a, T> {
    type Elem = T;
    #[inline(always)]
    fn into_expr(self) -> Expr<'a, T> {
        self
    }
}

/// What can be the right operand of a binary operation (`+`, `maximum`, `gt`, `pow`, ...)
/// whose left operand has element type `L`: arrays and expressions (promoted with `L` by the
/// [promotion table](crate::DType::promote)), and scalars of every Rust numeric type (`i8` to
/// `u64`, `f32`, `f64`, `half::f16`, `half::bf16`), weak as Python scalars are in NumPy 2: an
/// integer scalar takes `L`'s type ([`Scalars::WithInt`]), a float scalar `L`'s type if it is a
/// float, else `f64` ([`Scalars::WithFloat`]). The scalar's own Rust type only says its kind:
/// `&x * 2.0f32` and `&x * 2.0f64` both keep an `f16` array's type.
pub trait Rhs<'a, L: Scalars> {
    /// The type the two operands are combined in.
    type Output: Scalars;
    /// The left operand's type as it enters the operation.
    type Left: Scalars;
    /// The right operand's type.
    type Right: Scalars;
    /// The two operands as expressions (a scalar becomes a kernel parameter of type `Output`).
    fn operands(self, left: Expr<'a, L>) -> (Expr<'a, Self::Left>, Expr<'a, Self::Right>);
}

impl<'a, L: Scalars + Promote<T>, T: Scalars> Rhs<'a, L> for &'a DeviceArray<T> {
    type Output = <L as Promote<T>>::Output;
    type Left = L;
    type Right = T;
    #[inline(always)]
    fn operands(self, left: Expr<'a, L>) -> (Expr<'a, L>, Expr<'a, T>) {
        (left, self.into_expr())
    }
}

impl<'a, L: Scalars + Promote<T>, T: Scalars> Rhs<'a, L> for Expr<'a, T> {
    type Output = <L as Promote<T>>::Output;
    type Left = L;
    type Right = T;
    #[inline(always)]
    fn operands(self, left: Expr<'a, L>) -> (Expr<'a, L>, Expr<'a, T>) {
        (left, self)
    }
}

/// A Rust scalar usable as a weak operand.
pub(crate) trait WeakScalar: Copy {
    /// The value, exact for integers.
    fn value(self) -> ScalarValue;
}

macro_rules! weak_scalars {
    ($($t:ty => $kind:ident, $to_value:expr;)*) => {
        $(
            impl WeakScalar for $t {
                fn value(self) -> ScalarValue {
                    let convert: fn($t) -> ScalarValue = $to_value;
                    convert(self)
                }
            }

            impl<'a, L: Scalars> Rhs<'a, L> for $t {
                type Output = <L as Scalars>::$kind;
                type Left = <L as Scalars>::$kind;
                type Right = <L as Scalars>::$kind;
                #[inline(always)]
                fn operands(self, left: Expr<'a, L>) -> (Expr<'a, Self::Output>, Expr<'a, Self::Output>) {
                    let dtype = <Self::Output as Element>::DTYPE;
                    (cast_to(left), Expr::scalar(dtype, self.value()))
                }
            }
        )*
    };
}

weak_scalars! {
    i8 => WithInt, |v| ScalarValue::int(v.into());
    i16 => WithInt, |v| ScalarValue::int(v.into());
    i32 => WithInt, |v| ScalarValue::int(v.into());
    i64 => WithInt, |v| ScalarValue::int(v.into());
    u8 => WithInt, |v| ScalarValue::int(v.into());
    u16 => WithInt, |v| ScalarValue::int(v.into());
    u32 => WithInt, |v| ScalarValue::int(v.into());
    u64 => WithInt, |v| ScalarValue::int(v.into());
    f32 => WithFloat, |v| ScalarValue::Float(v.into());
    f64 => WithFloat, ScalarValue::Float;
    half::f16 => WithFloat, |v| ScalarValue::Float(v.to_f64());
    half::bf16 => WithFloat, |v| ScalarValue::Float(v.to_f64());
    num_complex::Complex<f32> => WithComplex, |v| ScalarValue::Complex(v.re.into(), v.im.into());
    num_complex::Complex<f64> => WithComplex, |v| ScalarValue::Complex(v.re, v.im);
}

/// `op` of `left` with `rhs` (any [`Rhs`]), of type `R`.
#[inline(always)]
pub(crate) fn binary_rhs<'a, L: Scalars, B: Rhs<'a, L>, R: Element>(
    op: BinaryOp,
    left: Expr<'a, L>,
    rhs: B,
) -> Expr<'a, R> {
    let (a, b) = rhs.operands(left);
    binary(op, a, b)
}

/// Comparison `op` of `left` with `rhs`. An integer scalar that does not fit the integer type
/// it takes (`300` against `u8`) is kept as an `i64` (or, above `i64::MAX`, `u64`) scalar, which
/// the comparison promotes to a type that holds both, so it is answered exactly as NumPy 2 does,
/// rather than refused as out of range.
fn compare<'a, L: Scalars, R: Rhs<'a, L>>(op: BinaryOp, left: Expr<'a, L>, rhs: R) -> Expr<'a, Bool> {
    let (a, b) = rhs.operands(left);
    let beyond = match (b.code.as_slice(), b.operands.as_slice()) {
        ([Step::Operand(0, _)], [Operand::Scalar(dtype, ScalarValue::Int(value))]) => dtype
            .int_range()
            .filter(|&(low, high)| dtype.is_int() && !(low..=high).contains(&value.get()))
            .map(|_| value.get()),
        _ => None,
    };
    match beyond {
        Some(value) if value > i128::from(i64::MAX) => {
            binary(op, a, Expr::<u64>::scalar(DType::U64, ScalarValue::int(value)))
        }
        Some(value) => binary(op, a, Expr::<i64>::scalar(DType::I64, ScalarValue::int(value))),
        None => binary(op, a, b),
    }
}

/// The two value arms of [`where_`]: `(array or expression, anything)` or `(scalar, array or
/// expression)`, promoted as [`Rhs`] says.
pub trait WhereArms<'a> {
    /// The type of the result.
    type Output: Scalars;
    /// The two arms as expressions of their types.
    fn arms(self) -> (Expr<'a, Self::Output>, Expr<'a, Self::Output>);
}

impl<'a, A: IntoExpr<'a>, B: Rhs<'a, A::Elem>> WhereArms<'a> for (A, B) {
    type Output = B::Output;
    fn arms(self) -> (Expr<'a, B::Output>, Expr<'a, B::Output>) {
        let (a, b) = self.1.operands(self.0.into_expr());
        (cast_to(a), cast_to(b))
    }
}

macro_rules! scalar_first_arms {
    ($($t:ty),*) => {
        $(
            impl<'a, B: IntoExpr<'a>> WhereArms<'a> for ($t, B) where $t: Rhs<'a, B::Elem> {
                type Output = <$t as Rhs<'a, B::Elem>>::Output;
                fn arms(self) -> (Expr<'a, Self::Output>, Expr<'a, Self::Output>) {
                    let (b, a) = self.0.operands(self.1.into_expr());
                    (cast_to(a), cast_to(b))
                }
            }
        )*
    };
}

scalar_first_arms!(
    i8,
    i16,
    i32,
    i64,
    u8,
    u16,
    u32,
    u64,
    f32,
    f64,
    half::f16,
    half::bf16,
    num_complex::Complex<f32>,
    num_complex::Complex<f64>
);

impl<'a, T: Element> Expr<'a, T> {
    #[inline(always)]
    fn retype<U: Element>(code: Code, operands: Operands<'a>) -> Expr<'a, U> {
        debug_assert_eq!(code.last().map(|step| step.dtype()), Some(U::DTYPE));
        Expr {
            code,
            operands,
            _type: PhantomData,
        }
    }

    /// The expression of one operand, of type `dtype`.
    #[inline(always)]
    fn leaf(dtype: DType, operand: Operand<'a>) -> Expr<'a, T> {
        let mut code = Code::new();
        code.push(Step::Operand(0, dtype));
        let mut operands = Operands::new();
        operands.push(operand);
        Expr {
            code,
            operands,
            _type: PhantomData,
        }
    }

    /// The same expression seen as `U` (which must be its type).
    #[inline(always)]
    pub(crate) fn retyped<U: Element>(self) -> Expr<'a, U> {
        Expr::<T>::retype(self.code, self.operands)
    }

    /// The same expression again (its operands are shared, as references and scalars).
    pub(crate) fn duplicate(&self) -> Expr<'a, T> {
        Expr {
            code: self.code.clone(),
            operands: self.operands.clone(),
            _type: PhantomData,
        }
    }

    /// A scalar operand of type `dtype`.
    pub(crate) fn scalar(dtype: DType, value: ScalarValue) -> Expr<'a, T> {
        Expr::leaf(dtype, Operand::Scalar(dtype, value))
    }

    /// A deferred operand (its type is `T`).
    #[cfg_attr(not(feature = "blas"), allow(dead_code))]
    pub(crate) fn deferred(value: Rc<dyn Deferred + 'a>) -> Expr<'a, T> {
        debug_assert_eq!(value.dtype(), T::DTYPE);
        Expr::leaf(T::DTYPE, Operand::Deferred(value))
    }

    /// `self`'s steps followed by `other`'s, and `other`'s operands after `self`'s.
    #[inline(always)]
    fn append<U: Element>(&mut self, other: Expr<'a, U>) {
        let Expr { code, mut operands, .. } = other;
        let shift = u16::try_from(self.operands.len()).unwrap_or(u16::MAX);
        self.code.extend(code.iter().map(|step| step.shifted(shift)));
        self.operands.append(&mut operands);
    }

    /// The element type of the value.
    pub fn dtype(&self) -> DType {
        T::DTYPE
    }

    /// The shape the operands broadcast to, or an error naming the shapes that do not.
    pub fn shape(&self) -> Result<Vec<usize>> {
        let mut shape: Option<Vec<usize>> = None;
        for operand in self.operands.iter() {
            let operand_shape = match operand {
                Operand::Array(a) => a.shape(),
                Operand::Deferred(d) => d.shape(),
                Operand::Scalar(..) => continue,
            };
            shape = Some(match shape {
                None => operand_shape.to_vec(),
                Some(s) if s == operand_shape => s,
                Some(s) => broadcast_shapes(&s, operand_shape)?,
            });
        }
        shape.ok_or_else(|| Error::InvalidValue("an expression without arrays has no shape".into()))
    }

    fn arrays(&self) -> impl Iterator<Item = &'a dyn ErasedArray> + '_ {
        self.operands.iter().filter_map(|o| match o {
            Operand::Array(a) => Some(*a),
            Operand::Scalar(..) | Operand::Deferred(_) => None,
        })
    }

    /// Whether an array the expression reads overlaps `array` other than as the very same view
    /// (which a kernel reading and writing element `i` in one thread may share).
    pub(crate) fn reads_partly<U: Element>(&self, array: &DeviceArray<U>) -> bool {
        self.arrays()
            .any(|a| overlap(a.span(), array.span()) == Overlap::Partial)
    }

    /// Whether an operand is computed on evaluation (a matrix product).
    fn has_deferred(&self) -> bool {
        self.operands.iter().any(|o| matches!(o, Operand::Deferred(_)))
    }
}

impl<'a, T: Scalars> Expr<'a, T> {
    /// Evaluates the expression into a new compact array of its broadcast shape: one kernel
    /// launch. The default stream is the stream of the expression's first array operand (in
    /// the order the expression reads them, left to right): the result is allocated and computed
    /// there, and the other operands are ordered after their own streams by the use each launch
    /// records. [`eval_on`](Self::eval_on) picks the stream.
    pub fn eval(self) -> Result<DeviceArray<T>> {
        let stream = self.stream()?.clone();
        self.eval_on(&stream)
    }

    /// The stream [`eval`](Self::eval) runs on: the first array (or matrix product) operand's.
    pub(crate) fn stream(&self) -> Result<&cuda_driver::Stream> {
        self.operands
            .iter()
            .find_map(|o| match o {
                Operand::Array(a) => Some(a.stream()),
                Operand::Deferred(d) => Some(d.stream()),
                Operand::Scalar(..) => None,
            })
            .ok_or_else(|| Error::InvalidValue("an expression without arrays has no shape".into()))
    }

    /// Evaluates the expression on `stream` (CuPy's `with stream:` around the expression): the
    /// result is allocated in `stream`'s order and computed there; every operand is ordered
    /// after the work already queued on its own stream (through the use each launch records),
    /// so operands on other streams need no synchronisation by the caller. `stream` must be of
    /// the operands' context ([`Error::Driver`] with `WrongContext` otherwise).
    pub fn eval_on(self, stream: &cuda_driver::Stream) -> Result<DeviceArray<T>> {
        let shape = self.shape()?;
        let mut out = DeviceArray::<T>::empty(stream, shape)?;
        out.assign(self)?;
        Ok(out)
    }
}

/// An expression as the map of a [`ReductionKernel`](crate::ReductionKernel): its distinct
/// operands as the kernel's input parameters, one element's value as C++ (the same code the
/// element-wise kernel computes), and the arguments, so that a reduction of an expression reads
/// its operands once and writes no temporary.
pub(crate) struct FusedMap<'e> {
    /// The input parameters (`"float a0, long long a1"`).
    pub(crate) params: String,
    /// The value of one element, of the expression's compute type, from the parameters.
    pub(crate) value: String,
    /// A key of the expression's shape and types: equal keys give equal `params` and `value`.
    pub(crate) key: Vec<u32>,
    /// The arguments for `params`, in order.
    pub(crate) args: Vec<Arg<'e>>,
    /// The expression's shape.
    pub(crate) shape: Vec<usize>,
    /// The stream it runs on: its first array's.
    pub(crate) stream: cuda_driver::Stream,
}

impl<'a, T: Scalars> Expr<'a, T> {
    /// Checks what evaluation checks (scalars in range, no negative integer powers, no `bool`
    /// subtraction, negation or sign), and that the expression does not read an output
    /// (`update`'s current value).
    pub(crate) fn check(&self) -> Result<()> {
        if reads_out(&self.code) {
            return Err(Error::InvalidValue(
                "an expression over update's current value can only be written back by update".into(),
            ));
        }
        check_scalars(&self.code, &self.operands)
    }

    /// The expression as a reduction's map, when every array operand is C-contiguous with the
    /// expression's whole shape (what a [`ReductionKernel`](crate::ReductionKernel) reads);
    /// `None` for broadcast or strided operands and for deferred ones (the caller evaluates the
    /// expression first).
    pub(crate) fn fused_map(&self) -> Result<Option<FusedMap<'_>>> {
        let shape = self.shape()?;
        if self
            .arrays()
            .any(|a| a.shape() != shape.as_slice() || !a.is_contiguous())
        {
            return Ok(None);
        }
        let Some(map) = self.element_map()? else {
            return Ok(None);
        };
        let stream = self.arrays().next().expect("shape() found an array").stream().clone();
        let mut params = String::new();
        for (position, param) in map.params.iter().enumerate() {
            if position > 0 {
                params.push_str(", ");
            }
            let _ = write!(params, "{} a{position}", param.arg_type().dtype().c_name());
        }
        Ok(Some(FusedMap {
            params,
            value: map.value,
            key: map.key,
            args: map.params,
            shape,
            stream,
        }))
    }

    /// The expression as one element's value from its distinct operands (the code its
    /// element-wise kernel computes), for generated code that loads the operands itself (cuFFT's
    /// load callbacks); `None` where an operand is deferred (a matrix product).
    pub(crate) fn element_map(&self) -> Result<Option<ElementMap<'a>>> {
        if self.has_deferred() {
            return Ok(None);
        }
        let plan = Plan::new(&self.code, &self.operands, T::DTYPE);
        let value = plan.value(&tree(&self.code));
        let params = plan
            .inputs
            .iter()
            .map(|&index| kernel_arg(&self.operands[index]))
            .collect::<Result<_>>()?;
        Ok(Some(ElementMap {
            params,
            value,
            key: plan.key.to_vec(),
        }))
    }
}

/// One element of an expression from its distinct operands ([`Expr::element_map`]).
pub(crate) struct ElementMap<'e> {
    /// The parameters in order, `a0`, `a1`, ...: arrays (read at the element's position) and
    /// scalars.
    pub(crate) params: Vec<Arg<'e>>,
    /// C++ of the element's value, of the expression's compute type, from the parameters.
    pub(crate) value: String,
    /// A key of the expression's shape and types: equal keys give equal parameter types and
    /// `value`.
    pub(crate) key: Vec<u32>,
}

/// The parameters, value and key of `expr`'s map as [`Expr::fused_map`] makes them, without
/// arrays (tests of the generated code on the host).
#[cfg(test)]
pub(crate) fn map_text<T: Element>(expr: &Expr<'_, T>) -> (String, String, Vec<u32>) {
    let plan = Plan::new(&expr.code, &expr.operands, T::DTYPE);
    let node = tree(&expr.code);
    let (params, _) = plan.source(&node, &expr.operands, T::DTYPE);
    (params, plan.value(&node), plan.key.to_vec())
}

/// Combines two expressions with `op` into one of type `R`.
#[inline(always)]
pub(crate) fn binary<'a, A: Element, B: Element, R: Element>(
    op: BinaryOp,
    a: Expr<'a, A>,
    b: Expr<'a, B>,
) -> Expr<'a, R> {
    let mut a = a;
    a.append(b);
    a.code.push(Step::Binary(op, R::DTYPE));
    Expr::<A>::retype(a.code, a.operands)
}

/// `expr` as type `U` (no node when it already is).
#[inline(always)]
pub(crate) fn cast_to<'a, T: Element, U: Element>(expr: Expr<'a, T>) -> Expr<'a, U> {
    match T::DTYPE == U::DTYPE {
        true => expr.retyped(),
        false => unary(UnaryOp::Cast, expr),
    }
}

#[inline(always)]
pub(crate) fn unary<'a, A: Element, R: Element>(op: UnaryOp, a: Expr<'a, A>) -> Expr<'a, R> {
    let mut a = a;
    a.code.push(Step::Unary(op, R::DTYPE));
    Expr::<A>::retype(a.code, a.operands)
}

/// NumPy's `where`: `a` where `condition` holds, else `b`, broadcast together. Either arm (not
/// both) may be a scalar, weak as in [`Rhs`]: `where_(x.gt(0.0), &x, 0.0)`.
pub fn where_<'a, C, A, B>(condition: C, a: A, b: B) -> Expr<'a, <(A, B) as WhereArms<'a>>::Output>
where
    C: IntoExpr<'a, Elem = Bool>,
    (A, B): WhereArms<'a>,
{
    let (a, b) = (a, b).arms();
    select(condition.into_expr(), a, b)
}

/// `a` where `c` holds, else `b`: the node of [`where_`] for arms of one type.
fn select<'a, T: Element>(c: Expr<'a, Bool>, a: Expr<'a, T>, b: Expr<'a, T>) -> Expr<'a, T> {
    let mut c = c;
    c.append(a);
    c.append(b);
    c.code.push(Step::Where(T::DTYPE));
    Expr::<Bool>::retype(c.code, c.operands)
}

/// `10^n` as NumPy's `round` computes it (exact up to `10^22`).
fn power_of_ten(n: u32) -> f64 {
    (0..n).fold(1.0, |power, _| power * 10.0)
}

/// `rint(x * 10^decimals) / 10^decimals` in `F` (for negative `decimals`, `rint(x / 10^-decimals)
/// * 10^-decimals`), each step rounded to `F` as NumPy's `round` does.
fn scaled_rint<F: Element>(x: Expr<'_, F>, decimals: i32) -> Expr<'_, F> {
    let scale = Expr::<F>::scalar(F::DTYPE, ScalarValue::Float(power_of_ten(decimals.unsigned_abs())));
    let (into, back) = match decimals >= 0 {
        true => (BinaryOp::Mul, BinaryOp::Div),
        false => (BinaryOp::Div, BinaryOp::Mul),
    };
    let scaled: Expr<'_, F> = binary(into, x, scale.duplicate());
    binary(back, unary::<_, F>(UnaryOp::Rint, scaled), scale)
}

/// The largest finite value of a float type (NumPy's `finfo(dtype).max`).
fn largest_finite(dtype: DType) -> f64 {
    match dtype {
        DType::F16 => half::f16::MAX.to_f64(),
        DType::BF16 => half::bf16::MAX.to_f64(),
        DType::F32 => f64::from(f32::MAX),
        _ => f64::MAX,
    }
}

/// Element-wise methods of arrays (`&DeviceArray<T>`) and expressions; each returns a lazy
/// [`Expr`]. Bring it into scope with `use cuda_core::ExprOps`.
pub trait ExprOps<'a>: IntoExpr<'a> + Sized {
    unary_methods!();
    binary_methods!();
    /// The values limited to `[low, high]` (NumPy's `clip`: `minimum(maximum(x, low), high)`,
    /// NaN propagates; `high` wins where `low > high`); either bound may be a scalar, weak as in
    /// [`Rhs`]. Complex values compare as NumPy's clip compares them: by real parts, by
    /// imaginary parts only where the real parts are equal (a NaN imaginary part of a bound
    /// whose real part differs does not propagate), a bound equal to `x` replacing it.
    fn clip<L: Rhs<'a, Self::Elem>, H: Rhs<'a, L::Output>>(self, low: L, high: H) -> Expr<'a, H::Output> {
        let raised = binary_rhs(BinaryOp::ClipLow, self.into_expr(), low);
        binary_rhs(BinaryOp::ClipHigh, raised, high)
    }
    /// NumPy's `round` (`around`) to `decimals` decimal places, ties to even, in the same type:
    /// floats compute `rint(x * 10^decimals) / 10^decimals` (`rint(x / 10^-d) * 10^-d` for
    /// negative `decimals`), rounding to the type after each step as NumPy does, so results
    /// carry the same binary error as NumPy's (`round(2.675, 2)` is `2.67`). Integers are
    /// unchanged for `decimals >= 0` and rounded to a multiple of `10^-decimals` in `f64` (ties
    /// to even) otherwise. `Bool` is unchanged (NumPy gives `float16` there).
    ///
    /// ```no_run
    /// # use cuda_core::{Device, DeviceArray, ExprOps};
    /// # fn main() -> cuda_core::Result<()> {
    /// # let stream = Device::new(0)?.create_stream()?;
    /// let x = DeviceArray::from_slice(&stream, &[0.125f64, 2.5, -1.55, 1250.0])?;
    /// assert_eq!(x.round(2).eval()?.to_vec()?, [0.12, 2.5, -1.55, 1250.0]);
    /// assert_eq!(x.round(-2).eval()?.to_vec()?, [0.0, 0.0, -0.0, 1200.0]);
    /// # Ok(())
    /// # }
    /// ```
    fn round(self, decimals: i32) -> Expr<'a, Self::Elem> {
        let x = self.into_expr();
        match <Self::Elem as Element>::DTYPE {
            DType::Bool => x,
            d if d.is_int() && decimals >= 0 => x,
            d if d.is_int() => cast_to(scaled_rint::<f64>(cast_to(x), decimals)),
            _ if decimals == 0 => unary(UnaryOp::Rint, x),
            _ => scaled_rint(x, decimals),
        }
    }
    /// NumPy's `nan_to_num`: NaN becomes `nan`, `+inf` becomes `posinf` and `-inf` `neginf`
    /// (by default the largest and the most negative finite value of the type), converted to
    /// the type (a value beyond an `f16`'s range becomes infinite there); integers and `Bool`
    /// are unchanged; complex values have each part replaced. One fused element-wise operation, not a copy per replacement.
    fn nan_to_num(self, nan: f64, posinf: Option<f64>, neginf: Option<f64>) -> Expr<'a, Self::Elem> {
        let x = self.into_expr();
        let dtype = <Self::Elem as Element>::DTYPE;
        if dtype.is_complex() {
            // Each part replaced, as NumPy does, then `re + im * 1j` in the complex type.
            type Part<E> = <E as Scalars>::Real;
            let re: Expr<'a, Part<Self::Elem>> = unary(UnaryOp::Real, x.duplicate());
            let im: Expr<'a, Part<Self::Elem>> = unary(UnaryOp::Imag, x);
            let (re, im) = (re.nan_to_num(nan, posinf, neginf), im.nan_to_num(nan, posinf, neginf));
            let i = Expr::<'a, Self::Elem>::scalar(dtype, ScalarValue::Complex(0.0, 1.0));
            let im: Expr<'a, Self::Elem> = binary(BinaryOp::Mul, cast_to::<_, Self::Elem>(im), i);
            return binary(BinaryOp::Add, cast_to::<_, Self::Elem>(re), im);
        }
        if !dtype.is_float() {
            return x;
        }
        let value = |v: f64| Expr::<'a, Self::Elem>::scalar(dtype, ScalarValue::Float(v));
        let largest = largest_finite(dtype);
        let is_nan: Expr<'a, Bool> = unary(UnaryOp::IsNan, x.duplicate());
        let is_posinf: Expr<'a, Bool> = binary(BinaryOp::Eq, x.duplicate(), value(f64::INFINITY));
        let is_neginf: Expr<'a, Bool> = binary(BinaryOp::Eq, x.duplicate(), value(f64::NEG_INFINITY));
        let finite_or_neginf = select(is_neginf, value(neginf.unwrap_or(-largest)), x);
        let not_posinf = select(is_posinf, value(posinf.unwrap_or(largest)), finite_or_neginf);
        select(is_nan, value(nan), not_posinf)
    }
    /// NumPy's `isclose`: `|x - y| <= atol + rtol * |y|` element-wise, in the promoted type
    /// (`f64` for integers: [`Scalars::WithFloat`]); infinities are close only to themselves;
    /// NaNs are close to each other only with `equal_nan`. NumPy's defaults are `rtol = 1e-5`,
    /// `atol = 1e-8`.
    fn isclose<R>(self, rhs: R, rtol: f64, atol: f64, equal_nan: bool) -> Expr<'a, Bool>
    where
        R: IntoExpr<'a>,
        Self::Elem: Promote<R::Elem>,
    {
        type Close<A, B> = <<A as Promote<B>>::Output as Scalars>::WithFloat;
        type C<'x, A, B> = Expr<'x, Close<A, B>>;
        let x: C<'a, Self::Elem, R::Elem> = cast_to(self.into_expr());
        let y: C<'a, Self::Elem, R::Elem> = cast_to(rhs.into_expr());
        let dtype = <Close<Self::Elem, R::Elem> as Element>::DTYPE;
        let tolerance = |value: f64| C::<'a, Self::Elem, R::Elem>::scalar(dtype, ScalarValue::Float(value));
        let distance: C<'a, Self::Elem, R::Elem> = unary(
            UnaryOp::Abs,
            binary::<_, _, Close<Self::Elem, R::Elem>>(BinaryOp::Sub, x.duplicate(), y.duplicate()),
        );
        let scale: C<'a, Self::Elem, R::Elem> = binary(
            BinaryOp::Mul,
            unary::<_, Close<Self::Elem, R::Elem>>(UnaryOp::Abs, y.duplicate()),
            tolerance(rtol),
        );
        let limit: C<'a, Self::Elem, R::Elem> = binary(BinaryOp::Add, scale, tolerance(atol));
        let within: Expr<'a, Bool> = binary(BinaryOp::Le, distance, limit);
        let finite: Expr<'a, Bool> = binary(
            BinaryOp::LogicalAnd,
            unary::<_, Bool>(UnaryOp::IsFinite, x.duplicate()),
            unary::<_, Bool>(UnaryOp::IsFinite, y.duplicate()),
        );
        let equal: Expr<'a, Bool> = binary(BinaryOp::Eq, x.duplicate(), y.duplicate());
        let close = where_(finite, within, equal);
        match equal_nan {
            true => {
                let both_nan: Expr<'a, Bool> = binary(
                    BinaryOp::LogicalAnd,
                    unary::<_, Bool>(UnaryOp::IsNan, x),
                    unary::<_, Bool>(UnaryOp::IsNan, y),
                );
                binary(BinaryOp::LogicalOr, close, both_nan)
            }
            false => close,
        }
    }
    /// The values converted to `U` (floats to integers round toward zero and saturate; to
    /// `Bool`: not zero).
    fn astype<U: Scalars>(self) -> Expr<'a, U> {
        unary(UnaryOp::Cast, self.into_expr())
    }
    /// `x^y` (integers: exact, by squaring; two `Bool`s give `i8`, as NumPy's `power`). For
    /// integer types NumPy raises `ValueError` on a negative exponent; an exponent array is on
    /// the device, so that cannot be checked without reading it back: here such an element is
    /// the truncated real power (`1` for base 1, `±1` for base −1, else `0`). A scalar exponent
    /// ([`powi`](Self::powi)) is checked.
    fn pow<R: Rhs<'a, Self::Elem>>(self, rhs: R) -> Expr<'a, <R::Output as Scalars>::Arithmetic> {
        binary_rhs(BinaryOp::Pow, self.into_expr(), rhs)
    }
    /// `x^n` for an integer scalar `n`, weak as in NumPy 2 (`np.power(x, n)`): the array's type
    /// (`bool` gives `i64`, as `np.power(x, 2)` does; NumPy's `x ** 2` operator squares instead
    /// and gives `int8` for `bool`, which is [`square`](Self::square) here). For integer types a
    /// negative `n` is an [`Error::InvalidValue`] when the expression is evaluated, as NumPy
    /// raises `ValueError`.
    fn powi(self, exponent: i64) -> Expr<'a, <Self::Elem as Scalars>::WithInt> {
        let base: Expr<'a, <Self::Elem as Scalars>::WithInt> = cast_to(self.into_expr());
        let dtype = <<Self::Elem as Scalars>::WithInt as Element>::DTYPE;
        let exponent = Expr::<<Self::Elem as Scalars>::WithInt>::scalar(dtype, ScalarValue::int(exponent.into()));
        binary(BinaryOp::Pow, base, exponent)
    }
    /// The larger of each pair (NaN if either is NaN, as NumPy's `maximum`; complex values
    /// compare lexicographically, and the first operand wins a tie or two NaNs, as in NumPy).
    fn maximum<R: Rhs<'a, Self::Elem>>(self, rhs: R) -> Expr<'a, R::Output> {
        binary_rhs(BinaryOp::Maximum, self.into_expr(), rhs)
    }
    /// The smaller of each pair (NaN if either is NaN, as NumPy's `minimum`; complex as
    /// [`maximum`](Self::maximum)).
    fn minimum<R: Rhs<'a, Self::Elem>>(self, rhs: R) -> Expr<'a, R::Output> {
        binary_rhs(BinaryOp::Minimum, self.into_expr(), rhs)
    }
    /// `x < y`, compared in the promoted type. An integer scalar beyond the range of the
    /// integer type it takes is compared exactly, as NumPy 2 compares a Python int (`x.lt(300)`
    /// of `u8` is true everywhere, `x.eq(-1)` false), where arithmetic with it is an error.
    fn lt<R: Rhs<'a, Self::Elem>>(self, rhs: R) -> Expr<'a, Bool> {
        compare(BinaryOp::Lt, self.into_expr(), rhs)
    }
    /// `x <= y`.
    fn le<R: Rhs<'a, Self::Elem>>(self, rhs: R) -> Expr<'a, Bool> {
        compare(BinaryOp::Le, self.into_expr(), rhs)
    }
    /// `x > y`.
    fn gt<R: Rhs<'a, Self::Elem>>(self, rhs: R) -> Expr<'a, Bool> {
        compare(BinaryOp::Gt, self.into_expr(), rhs)
    }
    /// `x >= y`.
    fn ge<R: Rhs<'a, Self::Elem>>(self, rhs: R) -> Expr<'a, Bool> {
        compare(BinaryOp::Ge, self.into_expr(), rhs)
    }
    /// `x == y`.
    fn eq<R: Rhs<'a, Self::Elem>>(self, rhs: R) -> Expr<'a, Bool> {
        compare(BinaryOp::Eq, self.into_expr(), rhs)
    }
    /// `x != y`.
    fn ne<R: Rhs<'a, Self::Elem>>(self, rhs: R) -> Expr<'a, Bool> {
        compare(BinaryOp::Ne, self.into_expr(), rhs)
    }
}

impl<'a, E: IntoExpr<'a>> ExprOps<'a> for E {}

/// The kind order of NumPy's `same_kind` casting: bool, unsigned, signed, float, complex.
fn kind_rank(dtype: DType) -> u8 {
    match dtype {
        DType::Bool => 0,
        d if d.is_unsigned_int() => 1,
        d if d.is_signed_int() => 2,
        d if d.is_complex() => 4,
        _ => 3,
    }
}

impl<T: Element> DeviceArray<T> {
    /// Writes `expr`, broadcast to this array's shape, into the array (one kernel on the
    /// array's stream). The value's type must cast to `T` under NumPy's `same_kind` rule (a
    /// float expression into an integer array is an error). Operands that overlap this array
    /// other than as the very same view are read before anything is written (the value goes
    /// through a temporary).
    pub fn assign<'a, E: IntoExpr<'a>>(&mut self, expr: E) -> Result<()> {
        let expr = expr.into_expr();
        let from = <E::Elem as Element>::DTYPE;
        if kind_rank(from) > kind_rank(T::DTYPE) {
            return Err(Error::InvalidValue(format!(
                "cannot assign a {from} expression to a {} array (only same-kind casts: bool, unsigned, signed, float, complex, in that order)",
                T::DTYPE
            )));
        }
        self.check_writable("assign")?;
        check_scalars(&expr.code, &expr.operands)?;
        if expr.has_deferred() {
            return self.run_deferred(&expr.code, &expr.operands);
        }
        self.run(&expr.code, &expr.operands)
    }

    /// Replaces each element by `f` of its current value, as one kernel: `x.update(|x| x + &y)`
    /// is NumPy's `x += y` (fallible, so not the `+=` operator, which cannot return an error).
    pub fn update<'a, F, E>(&mut self, f: F) -> Result<()>
    where
        T: Scalars,
        F: FnOnce(Expr<'a, T>) -> E,
        E: IntoExpr<'a>,
    {
        let mut code = Code::new();
        code.push(Step::Out(T::DTYPE));
        let current = Expr::<T>::retype::<T>(code, Operands::new());
        self.assign(f(current))
    }

    /// Evaluates an expression with deferred operands into this array: as one library call
    /// when the first deferred operand can compute the whole expression (a matrix product with
    /// a cuBLASLt epilogue), else each deferred operand into a temporary and the rest as one
    /// fused kernel that reads them.
    fn run_deferred(&mut self, code: &[Step], operands: &[Operand<'_>]) -> Result<()> {
        let node = &tree(code);
        let first = operands.iter().enumerate().find_map(|(index, o)| match o {
            Operand::Deferred(d) => Some((index, d)),
            _ => None,
        });
        if let Some((index, deferred)) = first {
            if deferred.evaluate_fused(node, operands, index, self)? {
                return Ok(());
            }
        }
        let values = operands
            .iter()
            .map(|o| match o {
                Operand::Deferred(d) => d.evaluate().map(Some),
                _ => Ok(None),
            })
            .collect::<Result<Vec<_>>>()?;
        let evaluated: Vec<Operand<'_>> = operands
            .iter()
            .zip(&values)
            .map(|(operand, value)| match value {
                Some(array) => Operand::Array(&**array),
                None => operand.clone(),
            })
            .collect();
        self.run(code, &evaluated)
    }

    /// Runs the kernel of `code` over `operands` (arrays and scalars) into this array.
    fn run(&mut self, code: &[Step], operands: &[Operand<'_>]) -> Result<()> {
        let (out, out_range) = (self.span(), self.span().byte_range());
        let overlapping = operands.iter().any(|o| match o {
            Operand::Array(a) => overlap_measured(a.span(), out, out_range) == Overlap::Partial,
            Operand::Scalar(..) | Operand::Deferred(_) => false,
        });
        if overlapping {
            let mut staged = match reads_out(code) {
                true => self.try_clone()?,
                false => DeviceArray::<T>::empty(self.stream(), self.shape().to_vec())?,
            };
            staged.run(code, operands)?;
            return self.copy_from(&staged);
        }
        let plan = Plan::new(code, operands, T::DTYPE);
        let kernel = plan.kernel(code, operands, T::DTYPE)?;
        let mut args: Inline<Arg<'_>, { INLINE_OPERANDS + 1 }> = Inline::new();
        for &index in plan.inputs.iter() {
            args.push(kernel_arg(&operands[index])?);
        }
        let stream = self.stream().clone();
        args.push(Arg::from(self));
        // SAFETY: `kernel` is this plan's expression kernel; no operand overlaps this array
        // other than as the same view (checked above), and the array is not a broadcast view
        // (`assign` refuses one, and a staged temporary is compact).
        unsafe { kernel.launch_expression(&stream, &args) }
    }
}

/// Refuses what NumPy 2 raises for when an expression runs (and an expression of more operands
/// than its steps can index, [`check_operand_count`]): an integer scalar that does not fit
/// the integer type it takes in arithmetic (`OverflowError`; comparisons widen such a scalar
/// instead, see [`compare`]), an integer power with a negative scalar exponent (`ValueError`),
/// and arithmetic NumPy has no `bool` form of (`TypeError`, [`check_bool_arithmetic`]).
fn check_scalars(code: &[Step], operands: &[Operand<'_>]) -> Result<()> {
    check_operand_count(operands.len())?;
    for operand in operands {
        if let Operand::Scalar(dtype, ScalarValue::Int(value)) = *operand {
            let value = value.get();
            if let Some((low, high)) = dtype.int_range().filter(|_| dtype.is_int()) {
                if !(low..=high).contains(&value) {
                    return Err(Error::InvalidValue(format!(
                        "the integer scalar {value} is out of bounds for {dtype} (NumPy 2 raises OverflowError; convert the array with astype first)"
                    )));
                }
            }
        }
    }
    for (position, &step) in code.iter().enumerate() {
        check_bool_arithmetic(step)?;
        check_power(code, position, operands)?;
        check_complex(code, position)?;
    }
    Ok(())
}

/// Refuses the step at `position` of `code` if it is an operation NumPy has no complex form of
/// and raises `TypeError` for: `floor`, `ceil`, `trunc`, `cbrt`, `signbit`, `arctan2`, `hypot`,
/// `copysign`, `fmod`, `floor_divide` and `remainder` of complex values.
fn check_complex(code: &[Step], position: usize) -> Result<()> {
    let name = match code[position] {
        Step::Unary(op, dtype) if dtype.is_complex() => match op {
            UnaryOp::Floor => "floor",
            UnaryOp::Ceil => "ceil",
            UnaryOp::Trunc => "trunc",
            UnaryOp::Cbrt => "cbrt",
            _ => return Ok(()),
        },
        // A unary operator's operand ends on the step before it.
        Step::Unary(UnaryOp::Signbit, _) if position > 0 && code[position - 1].dtype().is_complex() => "signbit",
        Step::Binary(op, dtype) if dtype.is_complex() => match op {
            BinaryOp::Arctan2 => "arctan2",
            BinaryOp::Hypot => "hypot",
            BinaryOp::Copysign => "copysign",
            BinaryOp::Fmod => "fmod",
            BinaryOp::FloorDivide => "floor_divide",
            BinaryOp::Remainder => "remainder",
            _ => return Ok(()),
        },
        _ => return Ok(()),
    };
    Err(Error::InvalidValue(format!(
        "{name} is not defined for complex values, as in NumPy (TypeError); take real or imag first"
    )))
}

/// Refuses an expression of more operands than a step's `u16` index counts (its later indices
/// saturated while it was built), so that no step names the wrong operand.
fn check_operand_count(count: usize) -> Result<()> {
    match u16::try_from(count) {
        Ok(_) => Ok(()),
        Err(_) => Err(Error::InvalidValue(format!(
            "an expression of {count} operands has more than the {} it can index",
            u16::MAX
        ))),
    }
}

/// Refuses the operations NumPy has no `bool` form of and raises `TypeError` for: `bool - bool`,
/// `-bool` and `sign` of `bool`.
fn check_bool_arithmetic(step: Step) -> Result<()> {
    let refused = match step {
        Step::Binary(BinaryOp::Sub, DType::Bool) => {
            "bool subtraction (`-`) is not supported, as in NumPy (TypeError); use bitwise_xor or logical_xor"
        }
        Step::Unary(UnaryOp::Neg, DType::Bool) => {
            "bool negation (`-`) is not supported, as in NumPy (TypeError); use invert or logical_not"
        }
        Step::Unary(UnaryOp::Sign, DType::Bool) => {
            "sign of bool is not supported, as in NumPy (TypeError); use astype first"
        }
        _ => return Ok(()),
    };
    Err(Error::InvalidValue(refused.into()))
}

/// Refuses the step at `position` of `code` if it is an integer power whose exponent is a
/// negative integer scalar (NumPy's `ValueError`).
fn check_power(code: &[Step], position: usize, operands: &[Operand<'_>]) -> Result<()> {
    let Step::Binary(BinaryOp::Pow, dtype) = code[position] else {
        return Ok(());
    };
    if !(dtype.is_int() || dtype == DType::Bool) {
        return Ok(());
    }
    // The step before a binary operator ends its right operand: the exponent, when that is an
    // operand of the expression itself.
    let exponent = match position.checked_sub(1).map(|before| code[before]) {
        Some(Step::Operand(index, _)) => &operands[index as usize],
        _ => return Ok(()),
    };
    if let Operand::Scalar(_, ScalarValue::Int(exponent)) = *exponent {
        let exponent = exponent.get();
        if exponent < 0 {
            return Err(Error::InvalidValue(format!(
                "integers to negative integer powers are not allowed (exponent {exponent}, type {dtype})"
            )));
        }
    }
    Ok(())
}

/// An operand as a kernel argument; a deferred operand has to be evaluated first.
#[inline]
fn kernel_arg<'o>(operand: &Operand<'o>) -> Result<Arg<'o>> {
    match *operand {
        Operand::Array(a) => Ok(Arg::erased(a)),
        Operand::Scalar(dtype, value) => Ok(scalar_arg(dtype, value)),
        Operand::Deferred(_) => Err(Error::InvalidValue(
            "an expression's matrix product must be evaluated before its kernel runs".into(),
        )),
    }
}

/// A scalar as a kernel argument of type `dtype` (integers checked by [`check_scalars`]).
fn scalar_arg(dtype: DType, value: ScalarValue) -> Arg<'static> {
    let (float, imaginary) = match value {
        ScalarValue::Float(f) => (f, 0.0),
        ScalarValue::Int(i) => (i.get() as f64, 0.0),
        ScalarValue::Complex(re, im) => (re, im),
    };
    let int = match value {
        ScalarValue::Float(f) | ScalarValue::Complex(f, _) => f as i128,
        ScalarValue::Int(i) => i.get(),
    };
    match dtype {
        DType::Bool => Arg::scalar(Bool::from(float != 0.0)),
        DType::I8 => Arg::scalar(int as i8),
        DType::I16 => Arg::scalar(int as i16),
        DType::I32 => Arg::scalar(int as i32),
        DType::I64 => Arg::scalar(int as i64),
        DType::U8 => Arg::scalar(int as u8),
        DType::U16 => Arg::scalar(int as u16),
        DType::U32 => Arg::scalar(int as u32),
        DType::U64 => Arg::scalar(int as u64),
        DType::F16 => Arg::scalar(f16_from_f64(float)),
        DType::BF16 => Arg::scalar(bf16_from_f64(float)),
        DType::F32 => Arg::scalar(float as f32),
        DType::C64 => Arg::scalar(num_complex::Complex::new(float as f32, imaginary as f32)),
        DType::C128 => Arg::scalar(num_complex::Complex::new(float, imaginary)),
        _ => Arg::scalar(float),
    }
}

/// Device functions generated expressions call.
pub(crate) const EXPR_PRELUDE: &str = r#"template <typename T> __device__ __forceinline__ T _cc_pow(T a, T b) {
    if (b < 0) return a == 1 ? 1 : (a == (T)-1 ? ((b & 1) ? (T)-1 : (T)1) : (T)0);
    T r = 1;
    while (b) { if (b & 1) r *= a; a *= a; b >>= 1; }
    return r;
}
__device__ __forceinline__ float _cc_pow(float a, float b) { return powf(a, b); }
__device__ __forceinline__ double _cc_pow(double a, double b) { return pow(a, b); }
__device__ __forceinline__ int _cc_cmp_us(unsigned long long a, long long b) {
    return b < 0 ? 1 : (a < (unsigned long long)b ? -1 : (a > (unsigned long long)b ? 1 : 0));
}
__device__ __forceinline__ int _cc_cmp_su(long long a, unsigned long long b) { return -_cc_cmp_us(b, a); }
template <typename T> __device__ __forceinline__ T _cc_max(T a, T b) { return a != a ? a : (b != b ? b : (a > b ? a : b)); }
template <typename T> __device__ __forceinline__ T _cc_min(T a, T b) { return a != a ? a : (b != b ? b : (a < b ? a : b)); }
template <typename T> __device__ __forceinline__ T _cc_abs(T a) { return a < 0 ? (T)-a : a; }
__device__ __forceinline__ bool _cc_abs(bool a) { return a; }
__device__ __forceinline__ float _cc_abs(float a) { return fabsf(a); }
__device__ __forceinline__ double _cc_abs(double a) { return fabs(a); }
template <typename T> __device__ __forceinline__ T _cc_conj(T a) { return a; }
template <typename T> __device__ __forceinline__ T _cc_real(T a) { return a; }
template <typename T> __device__ __forceinline__ T _cc_imag(T) { return (T)0; }
template <typename T> __device__ __forceinline__ T _cc_angle(T a) { return atan2((T)0, a); }
template <typename T> __device__ __forceinline__ T _cc_floor(T a) { return a; }
__device__ __forceinline__ float _cc_floor(float a) { return floorf(a); }
__device__ __forceinline__ double _cc_floor(double a) { return floor(a); }
template <typename T> __device__ __forceinline__ T _cc_ceil(T a) { return a; }
__device__ __forceinline__ float _cc_ceil(float a) { return ceilf(a); }
__device__ __forceinline__ double _cc_ceil(double a) { return ceil(a); }
template <typename T> __device__ __forceinline__ T _cc_trunc(T a) { return a; }
__device__ __forceinline__ float _cc_trunc(float a) { return truncf(a); }
__device__ __forceinline__ double _cc_trunc(double a) { return trunc(a); }
template <typename T> __device__ __forceinline__ T _cc_sign(T a) { return a != a ? a : (T)((a > 0) - (a < 0)); }
template <typename T> __device__ __forceinline__ T _cc_square(T a) { return (T)(a * a); }
template <typename T> __device__ __forceinline__ T _cc_gelu(T x) {
    return (T)0.5 * x * ((T)1 + tanh((T)0.7978845608028654 * (x + (T)0.044715 * x * x * x)));
}
template <typename T> __device__ __forceinline__ T _cc_reciprocal(T a) { return a == 0 ? (T)0 : (T)(1 / a); }
__device__ __forceinline__ float _cc_reciprocal(float a) { return 1.0f / a; }
__device__ __forceinline__ double _cc_reciprocal(double a) { return 1.0 / a; }
template <typename T> __device__ __forceinline__ bool _cc_isnan(T a) { return a != a; }
template <typename T> __device__ __forceinline__ bool _cc_isinf(T) { return false; }
__device__ __forceinline__ bool _cc_isinf(float a) { return isinf(a); }
__device__ __forceinline__ bool _cc_isinf(double a) { return isinf(a); }
template <typename T> __device__ __forceinline__ bool _cc_isfinite(T) { return true; }
__device__ __forceinline__ bool _cc_isfinite(float a) { return isfinite(a); }
__device__ __forceinline__ bool _cc_isfinite(double a) { return isfinite(a); }
template <typename T> __device__ __forceinline__ bool _cc_signbit(T a) { return a < 0; }
__device__ __forceinline__ bool _cc_signbit(float a) { return signbit(a); }
__device__ __forceinline__ bool _cc_signbit(double a) { return signbit(a); }
template <typename T> __device__ __forceinline__ T _cc_invert(T a) { return (T)~a; }
__device__ __forceinline__ bool _cc_invert(bool a) { return !a; }
// Integer division and remainders as NumPy: 0 for a zero divisor, no overflow for MIN / -1.
template <typename T> __device__ __forceinline__ bool _cc_minus_one(T b) { return (T)-1 < (T)0 && b == (T)-1; }
template <typename T> __device__ __forceinline__ T _cc_floordiv(T a, T b) {
    if (b == 0) return (T)0;
    if (_cc_minus_one(b)) return (T)(0ULL - (unsigned long long)a);
    T q = (T)(a / b);
    if ((T)-1 < (T)0 && (T)(a % b) != 0 && ((a < 0) != (b < 0))) q = (T)(q - 1);
    return q;
}
template <typename T> __device__ __forceinline__ T _cc_remainder(T a, T b) {
    if (b == 0 || _cc_minus_one(b)) return (T)0;
    T r = (T)(a % b);
    if ((T)-1 < (T)0 && r != 0 && ((r < 0) != (b < 0))) r = (T)(r + b);
    return r;
}
template <typename T> __device__ __forceinline__ T _cc_fmod(T a, T b) {
    if (b == 0 || _cc_minus_one(b)) return (T)0;
    return (T)(a % b);
}
// NumPy's divmod of floats: the floor quotient, with the remainder in `m`.
template <typename F> __device__ __forceinline__ F _cc_fdivmod(F a, F b, F &m) {
    m = fmod(a, b);
    if (!b) return a / b;
    F div = (a - m) / b;
    if (m) {
        if ((b < 0) != (m < 0)) { m += b; div -= (F)1; }
    } else {
        m = copysign((F)0, b);
    }
    if (!div) return copysign((F)0, a / b);
    F floored = floor(div);
    if (div - floored > (F)0.5) floored += (F)1;
    return floored;
}
__device__ __forceinline__ float _cc_floordiv(float a, float b) { float m; return _cc_fdivmod(a, b, m); }
__device__ __forceinline__ double _cc_floordiv(double a, double b) { double m; return _cc_fdivmod(a, b, m); }
__device__ __forceinline__ float _cc_remainder(float a, float b) { float m; if (!b) return fmodf(a, b); _cc_fdivmod(a, b, m); return m; }
__device__ __forceinline__ double _cc_remainder(double a, double b) { double m; if (!b) return fmod(a, b); _cc_fdivmod(a, b, m); return m; }
__device__ __forceinline__ float _cc_fmod(float a, float b) { return fmodf(a, b); }
__device__ __forceinline__ double _cc_fmod(double a, double b) { return fmod(a, b); }
// Shifts as NumPy: by the width or more (or a negative count) gives 0, or -1 right of a negative.
template <typename T> __device__ __forceinline__ T _cc_shl(T a, T b) {
    return (b < 0 || b >= (T)(8 * sizeof(T))) ? (T)0 : (T)((unsigned long long)a << b);
}
template <typename T> __device__ __forceinline__ T _cc_shr(T a, T b) {
    return (b < 0 || b >= (T)(8 * sizeof(T))) ? (a < 0 ? (T)-1 : (T)0) : (T)(a >> b);
}
"#;

/// How an expression becomes a kernel: which operands are distinct parameters, and a compact
/// key of the expression's shape and types (its operation and parameters as numbers), so a
/// cache hit builds no C++ text.
struct Plan {
    /// Operand index of each kernel input, in parameter order.
    inputs: Inline<usize, INLINE_OPERANDS>,
    /// The parameter of each operand.
    param_of: Inline<usize, INLINE_OPERANDS>,
    /// The cache key: the parameters' types, the output's type, the tree's steps.
    key: Inline<u32, INLINE_KEY>,
}

impl Plan {
    fn new(code: &[Step], operands: &[Operand<'_>], out: DType) -> Plan {
        // Operands reading the same view of the same array share one parameter.
        let mut inputs = Inline::new();
        let mut param_of = Inline::new();
        let mut key = Inline::new();
        for (index, operand) in operands.iter().enumerate() {
            let same = |other: &Operand<'_>| match (operand, other) {
                (Operand::Array(a), Operand::Array(b)) => same_view(*a, *b),
                _ => false,
            };
            if let Some(position) = inputs.iter().position(|&i| same(&operands[i])) {
                param_of.push(position);
                continue;
            }
            param_of.push(inputs.len());
            inputs.push(index);
            key.push(operand_dtype(operand) as u32);
        }
        key.push(u32::MAX);
        key.push(out as u32);
        for &step in code {
            encode(step, &param_of, &mut key);
        }
        Plan { inputs, param_of, key }
    }

    /// The kernel's parameter list and operation.
    fn source(&self, node: &Node, operands: &[Operand<'_>], out: DType) -> (String, String) {
        let mut params = String::new();
        for (position, &index) in self.inputs.iter().enumerate() {
            if position > 0 {
                params.push_str(", ");
            }
            let _ = write!(params, "{} a{position}", operand_dtype(&operands[index]).c_name());
        }
        (params, format!("out = {}", cast(node.dtype(), out, &self.value(node))))
    }

    /// The C++ value of `node` (of its compute type) from the parameters.
    fn value(&self, node: &Node) -> String {
        let names: Vec<String> = self.param_of.iter().map(|p| format!("a{p}")).collect();
        let mut text = String::new();
        emit(node, &names, &mut text);
        text
    }

    /// The kernel for this plan: generated once per process (then compiled once per signature
    /// and context, through the kernel cache).
    fn kernel(&self, code: &[Step], operands: &[Operand<'_>], out: DType) -> Result<Arc<ElementwiseKernel>> {
        kernel_encoded("expression", &self.key, || {
            let (params, operation) = self.source(&tree(code), operands, out);
            ElementwiseKernel::with_prelude(&params, "O out", &operation, "cuda_core_expr", EXPR_PRELUDE)
        })
    }
}

/// Whether `a` and `b` are the same view of the same memory (the same array object, or another
/// one with the same address, type, shape and strides).
fn same_view(a: &dyn ErasedArray, b: &dyn ErasedArray) -> bool {
    std::ptr::addr_eq(a, b)
        || (a.ptr_ref() == b.ptr_ref()
            && a.dtype() == b.dtype()
            && a.shape() == b.shape()
            && a.strides() == b.strides())
}

fn operand_dtype(operand: &Operand<'_>) -> DType {
    match operand {
        Operand::Array(a) => a.dtype(),
        Operand::Scalar(d, _) => *d,
        Operand::Deferred(d) => d.dtype(),
    }
}

/// Appends `step` to a plan's key, in one word for the usual step: its kind in the top 4 bits,
/// then its operator (bits 8 to 27) and type (bits 0 to 7), or for an operand its type (bits 20
/// to 27) and parameter (bits 0 to 19); an operand of a parameter past that takes a second word
/// (kind 5, then the parameter). The first word says how many follow and each kind takes a
/// fixed number of operands, so the steps of a tree in postfix order are a code that different
/// trees cannot share.
fn encode(step: Step, param_of: &[usize], key: &mut Inline<u32, INLINE_KEY>) {
    const KIND: u32 = 28;
    const WIDE: usize = 1 << 20;
    let word = |kind: u32, op: u32, dtype: DType| (kind << KIND) | (op << 8) | dtype as u32;
    match step {
        Step::Operand(index, dtype) => match param_of[index as usize] {
            param if param < WIDE => key.push((dtype as u32) << 20 | param as u32),
            param => {
                key.push(word(5, 0, dtype));
                key.push(u32::try_from(param).unwrap_or(u32::MAX));
            }
        },
        Step::Out(dtype) => key.push(word(1, 0, dtype)),
        Step::Unary(op, dtype) => key.push(word(2, op as u32, dtype)),
        Step::Binary(op, dtype) => key.push(word(3, op as u32, dtype)),
        Step::Where(dtype) => key.push(word(4, 0, dtype)),
    }
}

/// `value` (C++ of type `from`'s compute type) converted to `to`'s compute type, rounded to
/// `to`.
pub(crate) fn cast(from: DType, to: DType, value: &str) -> String {
    if from == to {
        return value.to_string();
    }
    match to {
        DType::Bool => format!("((bool)(({value}) != 0))"),
        // Rounded once from `double` (exact for 32-bit integers), not through `float`.
        DType::F16 | DType::BF16 if (from.is_int() && from.size() >= 4) || from == DType::F64 => {
            format!("((float){}((double)({value})))", to.c_name())
        }
        _ => round(to, &format!("(({})({value}))", to.compute_c_name())),
    }
}

/// `value` (of `dtype`'s compute type) rounded to `dtype` where that is narrower.
fn round(dtype: DType, value: &str) -> String {
    match dtype {
        DType::F16 | DType::BF16 => format!("((float){}({value}))", dtype.c_name()),
        DType::Bool => format!("((bool)({value}))"),
        d if d.is_int() && d.size() < 4 => format!("(({})({value}))", d.c_name()),
        _ => value.to_string(),
    }
}

/// Appends C++ for `node`'s value, in its type's compute type.
fn emit(node: &Node, names: &[String], out: &mut String) {
    let sub = |n: &Node, as_type: DType| -> String {
        let mut text = String::new();
        emit(n, names, &mut text);
        cast(n.dtype(), as_type, &text)
    };
    match node {
        Node::Operand(index, dtype) => out.push_str(&load(*dtype, &names[*index])),
        Node::Out(dtype) => out.push_str(&load(*dtype, "out")),
        Node::Unary(op, a, dtype) => {
            let operand_type = match op.kind() {
                _ if *op == UnaryOp::Cast => a.dtype(),
                Kind::Predicate => a.dtype(),
                // A complex operand stays complex; a real one is read in the (real) result type.
                Kind::Real | Kind::Angle if a.dtype().is_complex() => a.dtype(),
                Kind::Same | Kind::Float | Kind::Arithmetic | Kind::Real | Kind::Angle => *dtype,
            };
            let x = sub(a, operand_type);
            let c = dtype.compute_c_name();
            let value = match op {
                UnaryOp::Neg => format!("(({c})(-{x}))"),
                UnaryOp::Cast => {
                    out.push_str(&cast(a.dtype(), *dtype, &x));
                    return;
                }
                op => op.cpp().replace("{x}", &x),
            };
            out.push_str(&round(*dtype, &value));
        }
        Node::Binary(op, a, b, _) if op.is_comparison() && unsigned_with_signed_64(a.dtype(), b.dtype()) => {
            // NumPy compares in f64 here, which rounds beyond 2^53; compare exactly instead.
            let as_64 = |d: DType| if d == DType::U64 { d } else { DType::I64 };
            let (x, y) = (sub(a, as_64(a.dtype())), sub(b, as_64(b.dtype())));
            let function = match a.dtype() {
                DType::U64 => "_cc_cmp_us",
                _ => "_cc_cmp_su",
            };
            let _ = write!(out, "({function}({x}, {y}) {} 0)", comparison_symbol(*op));
        }
        Node::Binary(op, a, b, dtype) if op.table().is_some() => {
            let (kind, cpp) = op.table().expect("a table operation");
            let operand_type = match kind {
                Kind::Predicate => DType::Bool,
                Kind::Same | Kind::Float | Kind::Arithmetic | Kind::Real | Kind::Angle => *dtype,
            };
            let (x, y) = (sub(a, operand_type), sub(b, operand_type));
            out.push_str(&round(*dtype, &cpp.replace("{x}", &x).replace("{y}", &y)));
        }
        Node::Binary(op, a, b, dtype) => {
            let operand_type = match op.is_comparison() {
                true => a.dtype().promote(b.dtype()),
                false => *dtype,
            };
            let (x, y) = (sub(a, operand_type), sub(b, operand_type));
            let c = dtype.compute_c_name();
            let symbol = match op {
                BinaryOp::Add => "+",
                BinaryOp::Sub => "-",
                BinaryOp::Mul => "*",
                BinaryOp::Div => "/",
                BinaryOp::Lt | BinaryOp::Le | BinaryOp::Gt | BinaryOp::Ge | BinaryOp::Eq | BinaryOp::Ne => {
                    comparison_symbol(*op)
                }
                BinaryOp::Pow => {
                    out.push_str(&round(*dtype, &format!("_cc_pow(({c})({x}), ({c})({y}))")));
                    return;
                }
                BinaryOp::Maximum | BinaryOp::Minimum | BinaryOp::ClipLow | BinaryOp::ClipHigh => {
                    let function = match (op, dtype.is_complex()) {
                        (BinaryOp::Maximum, true) => "_cc_cx_maximum",
                        (BinaryOp::Minimum, true) => "_cc_cx_minimum",
                        (BinaryOp::ClipLow, true) => "_cc_cx_clip_low",
                        (BinaryOp::ClipHigh, true) => "_cc_cx_clip_high",
                        (BinaryOp::Maximum | BinaryOp::ClipLow, false) => "_cc_max",
                        _ => "_cc_min",
                    };
                    out.push_str(&round(*dtype, &format!("{function}<{c}>({x}, {y})")));
                    return;
                }
                _ => unreachable!("table operations are emitted by the arm above"),
            };
            match op.is_comparison() {
                true => {
                    let _ = write!(out, "(({x}) {symbol} ({y}))");
                }
                false => out.push_str(&round(*dtype, &format!("(({c})({x} {symbol} {y}))"))),
            }
        }
        Node::Where(condition, a, b, dtype) => {
            let c = sub(condition, DType::Bool);
            let _ = write!(out, "({c} ? {} : {})", sub(a, *dtype), sub(b, *dtype));
        }
    }
}

/// Whether `a` and `b` are `u64` and a signed integer (either order): their promoted type is
/// `f64`, which is not exact, so they are compared as `u64` against `i64` instead.
fn unsigned_with_signed_64(a: DType, b: DType) -> bool {
    matches!((a, b), (DType::U64, s) | (s, DType::U64) if s.is_signed_int())
}

fn comparison_symbol(op: BinaryOp) -> &'static str {
    match op {
        BinaryOp::Lt => "<",
        BinaryOp::Le => "<=",
        BinaryOp::Gt => ">",
        BinaryOp::Ge => ">=",
        BinaryOp::Eq => "==",
        _ => "!=",
    }
}

/// A parameter or the output, read as its type's compute type.
fn load(dtype: DType, name: &str) -> String {
    match dtype {
        DType::F16 | DType::BF16 => format!("((float){name})"),
        _ => name.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scalar(dtype: DType, index: usize) -> Node {
        Node::Operand(index, dtype)
    }

    /// `node`'s steps, children first (what an `Expr` holds).
    fn postfix(node: &Node) -> Vec<Step> {
        fn walk(node: &Node, code: &mut Vec<Step>) {
            let step = match node {
                Node::Operand(index, dtype) => Step::Operand(u16::try_from(*index).unwrap(), *dtype),
                Node::Out(dtype) => Step::Out(*dtype),
                Node::Unary(op, a, dtype) => {
                    walk(a, code);
                    Step::Unary(*op, *dtype)
                }
                Node::Binary(op, a, b, dtype) => {
                    walk(a, code);
                    walk(b, code);
                    Step::Binary(*op, *dtype)
                }
                Node::Where(c, a, b, dtype) => {
                    walk(c, code);
                    walk(a, code);
                    walk(b, code);
                    Step::Where(*dtype)
                }
            };
            code.push(step);
        }
        let mut code = Vec::new();
        walk(node, &mut code);
        code
    }

    #[test]
    fn steps_are_the_tree_in_postfix_order() {
        let node = Node::Where(
            Box::new(bin(BinaryOp::Gt, scalar(DType::F32, 0), scalar(DType::F32, 1))),
            Box::new(un(UnaryOp::Sqrt, scalar(DType::F32, 2))),
            Box::new(bin(BinaryOp::Mul, scalar(DType::F32, 0), Node::Out(DType::F32))),
            DType::F32,
        );
        let code = postfix(&node);
        assert_eq!(code.len(), 9);
        assert_eq!(format!("{:?}", tree(&code)), format!("{node:?}"));
        // Built by the operators: the right operand's indices follow the left's.
        let x = || Expr::<f32>::scalar(DType::F32, ScalarValue::Float(1.0));
        let e = where_((x() * x()).gt(2.0), x().sqrt(), 0.5);
        assert_eq!(e.operands.len(), 5);
        let tree_text = format!("{:?}", tree(&e.code));
        for index in 0..5 {
            assert!(tree_text.contains(&format!("Operand({index}, F32)")), "{tree_text}");
        }
        assert!(matches!(tree(&e.code), Node::Where(..)));
        assert!(reads_out(&code) && !reads_out(&e.code));
        // Past the inline capacity (steps and operands): the same tree and kernel text.
        let long = (1..12).fold(x(), |sum, _| sum + x());
        assert_eq!((long.code.len(), long.operands.len()), (23, 12));
        let (params, value, _) = map_text(&long);
        assert!(
            params.ends_with("float a11") && value.matches("a11").count() == 1,
            "{params}: {value}"
        );
        let error = checked(&long.astype::<i32>().powi(-2)).unwrap_err();
        assert!(error.to_string().contains("negative integer powers"), "{error}");
    }
    fn plan_text(node: &Node, operands: usize, out: DType) -> String {
        let names: Vec<String> = (0..operands).map(|i| format!("a{i}")).collect();
        let mut text = String::new();
        emit(node, &names, &mut text);
        format!("out = {}", cast(node.dtype(), out, &text))
    }

    #[test]
    fn axpy_is_one_statement_without_casts_for_f32() {
        let node = Node::Binary(
            BinaryOp::Add,
            Box::new(Node::Binary(
                BinaryOp::Mul,
                Box::new(scalar(DType::F32, 0)),
                Box::new(scalar(DType::F32, 1)),
                DType::F32,
            )),
            Box::new(scalar(DType::F32, 2)),
            DType::F32,
        );
        assert_eq!(
            plan_text(&node, 3, DType::F32),
            "out = ((float)(((float)(a0 * a1)) + a2))"
        );
    }

    #[test]
    fn mixed_types_cast_to_the_promoted_type_and_halves_round() {
        let node = Node::Binary(
            BinaryOp::Add,
            Box::new(scalar(DType::I32, 0)),
            Box::new(scalar(DType::F32, 1)),
            DType::F64,
        );
        let text = plan_text(&node, 2, DType::F64);
        assert!(
            text.contains("((double)(a0))") && text.contains("((double)(a1))"),
            "{text}"
        );
        let half = Node::Binary(
            BinaryOp::Mul,
            Box::new(scalar(DType::F16, 0)),
            Box::new(scalar(DType::F16, 1)),
            DType::F16,
        );
        let text = plan_text(&half, 2, DType::F16);
        assert!(
            text.contains("((float)cuda_core_f16("),
            "rounded after the product: {text}"
        );
        let compare = Node::Binary(
            BinaryOp::Lt,
            Box::new(scalar(DType::U8, 0)),
            Box::new(scalar(DType::I8, 1)),
            DType::Bool,
        );
        let text = plan_text(&compare, 2, DType::Bool);
        assert!(
            text.contains("((short)(a0))") && text.contains("<"),
            "compared as int16: {text}"
        );
    }

    /// A one-operand expression of type `T` (a host scalar standing in for an array).
    fn value<'a, T: Element>(v: i64) -> Expr<'a, T> {
        Expr::scalar(T::DTYPE, ScalarValue::int(v.into()))
    }

    fn checked<T: Element>(e: &Expr<'_, T>) -> Result<()> {
        check_scalars(&e.code, &e.operands)
    }

    #[test]
    fn integer_scalars_out_of_the_arrays_range_are_errors() {
        assert!(matches!(checked(&(value::<u8>(1) + 300)), Err(Error::InvalidValue(_))));
        assert!(matches!(checked(&(value::<u8>(1) - (-1))), Err(Error::InvalidValue(_))));
        assert!(matches!(checked(&(-1 * value::<u64>(1))), Err(Error::InvalidValue(_))));
        assert!(matches!(checked(&(value::<i8>(1) * 128)), Err(Error::InvalidValue(_))));
        assert!(matches!(checked(&(value::<u8>(1) / 256)), Err(Error::InvalidValue(_))));
        let message = checked(&(value::<u8>(1) + 300)).unwrap_err().to_string();
        assert!(message.contains("300") && message.contains("uint8"), "{message}");
        assert!(checked(&(value::<u8>(1) + 255)).is_ok());
        assert!(checked(&(value::<i8>(1) + (-128))).is_ok());
        assert!(checked(&(value::<i64>(1) + i64::MIN)).is_ok());
        assert!(checked(&(value::<Bool>(1) + i64::MAX)).is_ok(), "bool arrays take i64");
        assert!(
            checked(&(value::<half::f16>(1) + 100_000)).is_ok(),
            "floats overflow to inf"
        );
        // A float scalar with an integer array is f64 (weak rules), never a range error.
        let float = value::<u8>(1) + 300.5;
        assert_eq!(float.dtype(), DType::F64);
        assert!(checked(&float).is_ok());
    }

    #[test]
    fn comparisons_with_integer_scalars_beyond_the_type_are_exact() {
        // NumPy 2 answers these exactly (u8 < 300 everywhere true, u8 == -129 false); only
        // arithmetic with such a scalar raises.
        let cases = [
            (
                value::<u8>(1).lt(300),
                "unsigned char a0, long long a1",
                "((long long)(a0))) < (a1)",
            ),
            (
                value::<u8>(1).eq(-129),
                "unsigned char a0, long long a1",
                "((long long)(a0))) == (a1)",
            ),
            (
                value::<u8>(1).ge(-1),
                "unsigned char a0, long long a1",
                "((long long)(a0))) >= (a1)",
            ),
            (
                value::<i8>(1).gt(-129),
                "signed char a0, long long a1",
                "((long long)(a0))) > (a1)",
            ),
            (value::<u32>(1).ne(1u64 << 40), "unsigned int a0, long long a1", "!="),
            (
                value::<i64>(1).lt(u64::MAX),
                "long long a0, unsigned long long a1",
                "_cc_cmp_su(a0, a1) < 0",
            ),
            (
                value::<i16>(1).le(u64::MAX),
                "short a0, unsigned long long a1",
                "_cc_cmp_su",
            ),
            (
                value::<u64>(1).gt(-1),
                "unsigned long long a0, long long a1",
                "_cc_cmp_us(a0, a1) > 0",
            ),
        ];
        for (expr, params, compared) in cases {
            assert!(checked(&expr).is_ok(), "{expr:?}");
            let (got_params, got_value, _) = map_text(&expr);
            assert_eq!(got_params, params);
            assert!(got_value.contains(compared), "{got_value} lacks {compared}");
        }
        // A scalar in range keeps the array's type, and arithmetic still refuses one beyond it.
        assert_eq!(
            map_text(&value::<u8>(1).lt(200)).0,
            "unsigned char a0, unsigned char a1"
        );
        assert!(checked(&(value::<u8>(1) + 300)).is_err());
        assert!(checked(&value::<u8>(1).maximum(300)).is_err());
    }

    #[test]
    fn complex_operations_numpy_refuses_are_errors() {
        type C64 = num_complex::Complex<f32>;
        let refused = [
            checked(&value::<C64>(1).floor()),
            checked(&value::<C64>(1).ceil()),
            checked(&value::<C64>(1).trunc()),
            checked(&value::<C64>(1).cbrt()),
            checked(&value::<C64>(1).signbit()),
            checked(&(value::<C64>(1) * 2.0).signbit()),
            checked(&value::<C64>(1).arctan2(value::<f32>(1))),
            checked(&value::<f64>(1).hypot(value::<C64>(1))),
            checked(&value::<C64>(1).copysign(1.0)),
            checked(&value::<C64>(1).fmod(value::<C64>(1))),
            checked(&value::<C64>(1).floor_divide(2)),
            checked(&value::<i8>(1).remainder(value::<C64>(1))),
        ];
        for result in refused {
            assert!(
                matches!(result, Err(Error::InvalidValue(ref m)) if m.contains("complex")),
                "{result:?}"
            );
        }
        let allowed = [
            checked(&value::<C64>(1).sqrt()),
            checked(&(value::<C64>(1) + value::<f64>(2)).exp()),
            checked(&value::<C64>(1).abs().floor()),
            checked(&value::<C64>(1).real().signbit()),
            checked(&value::<f32>(1).signbit()),
            checked(&value::<C64>(1).lt(value::<C64>(2))),
            checked(&value::<C64>(1).logical_and(value::<C64>(2))),
            checked(&value::<C64>(1).pow(value::<C64>(2))),
        ];
        for result in allowed {
            assert!(result.is_ok(), "{result:?}");
        }
    }

    #[test]
    fn bool_arithmetic_follows_numpy() {
        let b = || value::<Bool>(1);
        // NumPy has no bool loop for these: int8 (np.square, np.reciprocal, np.power, //, %,
        // np.fmod of bools).
        assert_eq!(b().square().dtype(), DType::I8);
        assert_eq!(b().reciprocal().dtype(), DType::I8);
        assert_eq!(b().pow(b()).dtype(), DType::I8);
        assert_eq!(b().floor_divide(b()).dtype(), DType::I8);
        assert_eq!(b().remainder(b()).dtype(), DType::I8);
        assert_eq!(b().fmod(b()).dtype(), DType::I8);
        let (_, square, _) = map_text(&b().square());
        assert!(
            square.contains("_cc_square(((signed char)("),
            "computed in int8: {square}"
        );
        // With a Python int, np.power(bool, 2) is int64; with another type, that type.
        assert_eq!(b().pow(2).dtype(), DType::I64);
        assert_eq!(b().powi(2).dtype(), DType::I64);
        assert_eq!(b().pow(value::<u8>(2)).dtype(), DType::U8);
        assert_eq!(value::<u8>(2).square().dtype(), DType::U8, "other types keep theirs");
        // Logical forms stay bool.
        assert_eq!((b() + b()).dtype(), DType::Bool);
        assert_eq!((b() * b()).dtype(), DType::Bool);
        assert_eq!(b().abs().dtype(), DType::Bool);
        // NumPy raises TypeError for bool - bool, -bool and sign(bool).
        for (expr, mentions) in [
            (b() - b(), "bool subtraction"),
            (-b(), "bool negation"),
            (b().sign(), "sign of bool"),
            ((b() - b()).astype::<Bool>(), "bool subtraction"),
        ] {
            match checked(&expr) {
                Err(Error::InvalidValue(message)) => assert!(message.contains(mentions), "{message}"),
                other => panic!("{expr:?}: expected InvalidValue, got {other:?}"),
            }
        }
        assert!(checked(&(b() - 1)).is_ok(), "with a Python int, bool takes int64");
        assert!(checked(&(-b().astype::<i8>())).is_ok());
        assert!(checked(&value::<i8>(1).sign()).is_ok());
    }

    #[test]
    fn negative_scalar_powers_of_integers_are_errors() {
        let message = checked(&value::<i32>(2).powi(-1)).unwrap_err().to_string();
        assert!(message.contains("negative integer powers"), "{message}");
        assert!(checked(&value::<u8>(2).powi(-3)).is_err());
        assert!(checked(&value::<Bool>(1).powi(-1)).is_err(), "bool takes i64");
        assert!(
            checked(&(value::<i32>(2) + value::<i32>(1).powi(-2))).is_err(),
            "found inside a tree"
        );
        assert!(checked(&value::<i32>(2).powi(3)).is_ok());
        assert!(
            checked(&value::<f32>(2).powi(-1)).is_ok(),
            "floats take negative powers"
        );
        assert!(checked(&value::<i32>(2).powi(0)).is_ok());
        assert_eq!(value::<u8>(2).powi(2).dtype(), DType::U8, "the exponent is weak");
    }

    #[test]
    fn u64_against_signed_integers_compares_exactly() {
        for op in [BinaryOp::Lt, BinaryOp::Eq, BinaryOp::Ge] {
            let text = plan_text(&bin(op, scalar(DType::U64, 0), scalar(DType::I64, 1)), 2, DType::Bool);
            assert!(
                text.contains("_cc_cmp_us(a0, a1)") && !text.contains("double"),
                "{text}"
            );
        }
        let text = plan_text(
            &bin(BinaryOp::Eq, scalar(DType::I8, 0), scalar(DType::U64, 1)),
            2,
            DType::Bool,
        );
        assert!(text.contains("_cc_cmp_su(((long long)(a0)), a1)"), "{text}");
        let text = plan_text(
            &bin(BinaryOp::Eq, scalar(DType::U32, 0), scalar(DType::U64, 1)),
            2,
            DType::Bool,
        );
        assert!(!text.contains("_cc_cmp"), "both unsigned: compared as u64: {text}");
    }

    #[test]
    fn wide_values_round_to_16_bit_floats_once_from_double() {
        for from in [DType::F64, DType::I32, DType::U64] {
            for to in [DType::F16, DType::BF16] {
                let text = cast(from, to, "a0");
                assert!(text.contains(&format!("{}((double)(a0))", to.c_name())), "{text}");
                assert!(!text.contains("(float)(a0)"), "not through float: {text}");
            }
        }
        assert_eq!(
            cast(DType::F32, DType::F16, "a0"),
            "((float)cuda_core_f16(((float)(a0))))"
        );
    }

    #[test]
    fn same_kind_casting_orders_kinds() {
        assert!(kind_rank(DType::Bool) < kind_rank(DType::U8));
        assert!(kind_rank(DType::U64) < kind_rank(DType::I8));
        assert!(kind_rank(DType::I64) < kind_rank(DType::F16));
    }

    #[test]
    fn scalars_become_parameters_of_their_type() {
        assert_eq!(
            scalar_arg(DType::F32, ScalarValue::Float(2.0)).arg_type(),
            crate::array::ArgType::Scalar(DType::F32)
        );
        assert_eq!(
            scalar_arg(DType::I64, ScalarValue::int(i64::MAX.into()))
                .arg_type()
                .dtype(),
            DType::I64
        );
        assert_eq!(
            scalar_arg(DType::C64, ScalarValue::Complex(1.0, -2.0)).arg_type(),
            crate::array::ArgType::Scalar(DType::C64)
        );
        assert_eq!(
            scalar_arg(DType::C128, ScalarValue::Float(0.5)).arg_type(),
            crate::array::ArgType::Scalar(DType::C128)
        );
        // A complex scalar is weak: the array's precision, complex.
        type C64 = num_complex::Complex<f32>;
        let e = value::<f32>(1) * num_complex::Complex::new(0.0f64, 1.0);
        assert_eq!(e.dtype(), DType::C64);
        assert!(
            matches!(e.operands.as_slice()[1], Operand::Scalar(DType::C64, ScalarValue::Complex(re, im)) if re == 0.0 && im == 1.0)
        );
        assert_eq!((value::<i8>(1) + C64::new(1.0, 0.0)).dtype(), DType::C128);
    }

    fn bin(op: BinaryOp, a: Node, b: Node) -> Node {
        let promoted = a.dtype().promote(b.dtype());
        let dtype = match (op, op.table()) {
            (BinaryOp::Div, _) => promoted.quotient_result(),
            (BinaryOp::Pow, _) => promoted.arithmetic_result(),
            (op, _) if op.is_comparison() => DType::Bool,
            (_, Some((kind, _))) => kind_dtype(kind, promoted),
            _ => promoted,
        };
        Node::Binary(op, Box::new(a), Box::new(b), dtype)
    }

    fn kind_dtype(kind: Kind, dtype: DType) -> DType {
        match kind {
            Kind::Same => dtype,
            Kind::Float => dtype.float_result(),
            Kind::Arithmetic => dtype.arithmetic_result(),
            Kind::Predicate => DType::Bool,
            Kind::Real => dtype.real_type(),
            Kind::Angle => dtype.angle_result(),
        }
    }

    fn un(op: UnaryOp, a: Node) -> Node {
        let dtype = kind_dtype(op.kind(), a.dtype());
        Node::Unary(op, Box::new(a), dtype)
    }

    /// Every operation of the two tables over operands of `a` and `b` (the bitwise ones where
    /// the promoted type allows them), each added into an `f64` sum.
    fn every_table_operation(a: DType, b: DType) -> Node {
        let (x, y) = (scalar(a, 0), scalar(b, 1));
        let promoted = a.promote(b);
        // What evaluation refuses for complex operands (`check_complex`) is left out for them.
        let real_only_unary = [
            UnaryOp::Floor,
            UnaryOp::Ceil,
            UnaryOp::Trunc,
            UnaryOp::Cbrt,
            UnaryOp::Signbit,
        ];
        let mut terms: Vec<Node> = UnaryOp::TABLE
            .iter()
            .filter(|&&op| op != UnaryOp::Invert || a.is_int() || a == DType::Bool)
            .filter(|op| !(a.is_complex() && real_only_unary.contains(op)))
            .map(|&op| un(op, x.clone()))
            .collect();
        for &op in BinaryOp::TABLE {
            let bitwise = matches!(op, BinaryOp::BitwiseAnd | BinaryOp::BitwiseOr | BinaryOp::BitwiseXor);
            let shift = matches!(op, BinaryOp::LeftShift | BinaryOp::RightShift);
            let real_only = !matches!(op, BinaryOp::LogicalAnd | BinaryOp::LogicalOr | BinaryOp::LogicalXor);
            if (bitwise && !(promoted.is_int() || promoted == DType::Bool))
                || (shift && !promoted.is_int())
                || (real_only && promoted.is_complex())
            {
                continue;
            }
            terms.push(bin(op, x.clone(), y.clone()));
        }
        terms
            .into_iter()
            .reduce(|sum, term| Node::Binary(BinaryOp::Add, Box::new(sum), Box::new(term), DType::F64))
            .expect("terms")
    }

    #[test]
    fn every_table_operation_compiles_for_every_type_pair() {
        use crate::{Arch, CompileTarget, Program, ProgramOptions};
        let pairs = [
            (DType::F32, DType::F32),
            (DType::F64, DType::I32),
            (DType::F16, DType::F16),
            (DType::BF16, DType::U8),
            (DType::I8, DType::U8),
            (DType::I64, DType::I64),
            (DType::U64, DType::U64),
            (DType::U16, DType::U32),
            (DType::Bool, DType::Bool),
            (DType::I16, DType::Bool),
            (DType::C64, DType::C64),
            (DType::C128, DType::F32),
            (DType::I8, DType::C64),
        ];
        let options = ProgramOptions {
            cache: false,
            ..ProgramOptions::for_arch(Arch::Sm(90))
        };
        for (a, b) in pairs {
            let node = every_table_operation(a, b);
            let operands = [
                Operand::Scalar(a, ScalarValue::int(3)),
                Operand::Scalar(b, ScalarValue::int(2)),
            ];
            let plan = Plan::new(&postfix(&node), &operands, DType::F64);
            let (params, operation) = plan.source(&node, &operands, DType::F64);
            let kernel = ElementwiseKernel::with_prelude(&params, "O out", &operation, "expr", EXPR_PRELUDE).unwrap();
            let signature = [
                crate::array::ArgType::Scalar(a),
                crate::array::ArgType::Scalar(b),
                crate::array::ArgType::Array(DType::F64),
            ];
            let source = kernel.source_for(&signature).unwrap();
            if let Err(error) = Program::new(source.clone(), options.clone()).compile(CompileTarget::Ptx) {
                panic!("{a} with {b}: {error}\n{source}");
            }
        }
    }

    #[test]
    fn table_operations_have_numpy_result_types() {
        fn v<'a, T: Element>() -> Expr<'a, T> {
            Expr::scalar(T::DTYPE, ScalarValue::int(1))
        }
        assert_eq!(v::<f32>().isnan().dtype(), DType::Bool);
        assert_eq!(v::<i32>().isfinite().dtype(), DType::Bool);
        assert_eq!(v::<i32>().floor().dtype(), DType::I32, "floor of an int stays int");
        assert_eq!(v::<i32>().rint().dtype(), DType::F64);
        assert_eq!(v::<u8>().log1p().dtype(), DType::F16);
        assert_eq!(v::<half::bf16>().arcsinh().dtype(), DType::BF16);
        assert_eq!(v::<i16>().square().dtype(), DType::I16);
        assert_eq!(v::<i32>().arctan2(v::<f32>()).dtype(), DType::F64);
        assert_eq!(v::<f32>().hypot(2.0).dtype(), DType::F32);
        assert_eq!(v::<u8>().floor_divide(2).dtype(), DType::U8);
        assert_eq!(v::<i8>().remainder(v::<u8>()).dtype(), DType::I16);
        assert_eq!(v::<f32>().fmod(0.5).dtype(), DType::F32);
        assert_eq!(v::<f32>().logical_and(v::<i8>()).dtype(), DType::Bool);
        assert_eq!(v::<u16>().bitwise_xor(v::<u8>()).dtype(), DType::U16);
        assert_eq!(v::<Bool>().bitwise_or(v::<Bool>()).dtype(), DType::Bool);
        assert_eq!(v::<i64>().left_shift(3).dtype(), DType::I64);
        assert_eq!(v::<Bool>().invert().dtype(), DType::Bool);
        assert_eq!(v::<f32>().clip(0.0, 1.0).dtype(), DType::F32);
        assert_eq!(v::<u8>().clip(0, v::<i8>()).dtype(), DType::I16);
        type C64 = num_complex::Complex<f32>;
        type C128 = num_complex::Complex<f64>;
        assert_eq!(v::<C64>().abs().dtype(), DType::F32, "abs of complex is real");
        assert_eq!(v::<C128>().angle().dtype(), DType::F64);
        assert_eq!(v::<i32>().angle().dtype(), DType::F64);
        assert_eq!(v::<f32>().abs().dtype(), DType::F32);
        assert_eq!(v::<C64>().real().dtype(), DType::F32);
        assert_eq!(v::<C64>().imag().dtype(), DType::F32);
        assert_eq!(v::<i16>().imag().dtype(), DType::I16, "imag of a real type keeps it");
        assert_eq!(v::<C64>().conj().dtype(), DType::C64);
        assert_eq!(v::<C64>().exp().dtype(), DType::C64);
        assert_eq!(v::<C64>().isnan().dtype(), DType::Bool);
        assert_eq!((v::<C64>() * v::<f32>()).dtype(), DType::C64);
        assert_eq!((v::<C64>() * v::<f64>()).dtype(), DType::C128);
        assert_eq!((v::<C64>() + v::<i16>()).dtype(), DType::C64);
        assert_eq!((v::<C64>() + v::<i32>()).dtype(), DType::C128);
        assert_eq!((v::<Bool>() * v::<C64>()).dtype(), DType::C64);
        assert_eq!((v::<C64>() * 2.0).dtype(), DType::C64, "a float scalar is weak");
        assert_eq!((v::<C64>() / 2).dtype(), DType::C64);
        assert_eq!(v::<C128>().eq(v::<C64>()).dtype(), DType::Bool);
        let text = plan_text(&un(UnaryOp::IsNan, scalar(DType::F16, 0)), 1, DType::Bool);
        assert_eq!(
            text, "out = ((bool)(_cc_isnan(((float)a0))))",
            "a predicate reads its operand in its own type"
        );
        let text = plan_text(
            &bin(BinaryOp::LogicalAnd, scalar(DType::F32, 0), scalar(DType::I8, 1)),
            2,
            DType::Bool,
        );
        assert!(text.contains("((bool)((a0) != 0)) && ((bool)((a1) != 0))"), "{text}");
    }

    #[test]
    fn round_and_nan_to_num_keep_the_type_and_compile() {
        use crate::{Arch, CompileTarget, Program, ProgramOptions};
        fn v<'a, T: Element>() -> Expr<'a, T> {
            Expr::scalar(T::DTYPE, ScalarValue::Float(1.5))
        }
        fn compiles<T: Element>(expr: Expr<'_, T>) -> String {
            let plan = Plan::new(&expr.code, &expr.operands, T::DTYPE);
            let (params, operation) = plan.source(&tree(&expr.code), &expr.operands, T::DTYPE);
            let kernel = ElementwiseKernel::with_prelude(&params, "O out", &operation, "expr", EXPR_PRELUDE).unwrap();
            let mut signature: Vec<_> = plan
                .inputs
                .iter()
                .map(|&i| crate::array::ArgType::Scalar(operand_dtype(&expr.operands[i])))
                .collect();
            signature.push(crate::array::ArgType::Array(T::DTYPE));
            let source = kernel.source_for(&signature).unwrap();
            let options = ProgramOptions {
                cache: false,
                ..ProgramOptions::for_arch(Arch::Sm(90))
            };
            if let Err(error) = Program::new(source.clone(), options).compile(CompileTarget::Ptx) {
                panic!("{}: {error}\n{source}", T::DTYPE);
            }
            operation
        }
        assert_eq!(v::<i32>().round(-1).dtype(), DType::I32);
        assert_eq!(v::<half::f16>().round(2).dtype(), DType::F16);
        assert_eq!(v::<f64>().nan_to_num(0.0, None, None).dtype(), DType::F64);
        // Integers with decimals >= 0, Bool, and nan_to_num of non-floats are the operand itself.
        assert_eq!(v::<u8>().round(3).code.as_slice(), [Step::Operand(0, DType::U8)]);
        assert_eq!(v::<Bool>().round(-1).code.as_slice(), [Step::Operand(0, DType::Bool)]);
        assert!(matches!(
            v::<i64>().nan_to_num(0.0, None, None).code.as_slice(),
            [Step::Operand(..)]
        ));
        assert!(compiles(v::<f32>().round(0)).contains("rint("), "decimals 0 is rint");
        let f16 = compiles(v::<half::f16>().round(2));
        assert_eq!(
            f16.matches("cuda_core_f16(").count(),
            3,
            "f16 rounds after each step: {f16}"
        );
        let int = compiles(v::<i16>().round(-2));
        assert!(
            int.contains("(double)") && int.contains("rint("),
            "integers round in f64: {int}"
        );
        compiles(v::<half::bf16>().round(-1));
        for text in [
            compiles(v::<f32>().nan_to_num(0.0, None, Some(-1.0))),
            compiles(v::<half::f16>().nan_to_num(1.0, Some(2.0), None)),
            compiles((v::<f64>() * v::<f64>()).nan_to_num(0.0, None, None)),
        ] {
            assert!(text.contains("_cc_isnan") && text.matches('?').count() == 3, "{text}");
        }
        // The default replacements are the type's largest finite values, as NumPy's finfo.
        let expr = v::<half::f16>().nan_to_num(0.0, None, None);
        let values: Vec<f64> = expr
            .operands
            .iter()
            .filter_map(|o| match o {
                Operand::Scalar(DType::F16, ScalarValue::Float(f)) => Some(*f),
                _ => None,
            })
            .collect();
        assert!(values.contains(&65504.0) && values.contains(&-65504.0), "{values:?}");
        // Complex values: each part replaced (in its real type), then joined.
        let complex = v::<num_complex::Complex<f32>>().nan_to_num(0.0, None, None);
        assert_eq!(complex.dtype(), DType::C64);
        let parts = complex
            .operands
            .iter()
            .filter(|o| matches!(o, Operand::Scalar(DType::F32, ScalarValue::Float(f)) if *f == f64::from(f32::MAX)))
            .count();
        assert_eq!(parts, 2, "the part type's largest value, once per part");
        let text = compiles(complex);
        assert!(text.contains("_cc_real") && text.contains("_cc_imag"), "{text}");
        compiles((v::<num_complex::Complex<f64>>() * 2.0).round(1));
        assert_eq!(power_of_ten(0), 1.0);
        assert_eq!(power_of_ten(22), 1e22);
    }

    /// Every operator over operands of `a` and `b`, as NVRTC must accept it.
    fn everything(a: DType, b: DType) -> Node {
        let (x, y) = (scalar(a, 0), scalar(b, 1));
        let arithmetic = bin(
            BinaryOp::Add,
            bin(BinaryOp::Mul, x.clone(), y.clone()),
            bin(
                BinaryOp::Sub,
                bin(BinaryOp::Pow, x.clone(), y.clone()),
                un(UnaryOp::Neg, y.clone()),
            ),
        );
        let math = bin(
            BinaryOp::Div,
            un(UnaryOp::Sqrt, un(UnaryOp::Abs, x.clone())),
            bin(
                BinaryOp::Maximum,
                un(UnaryOp::Exp, y.clone()),
                bin(
                    BinaryOp::Minimum,
                    un(UnaryOp::Log, x.clone()),
                    bin(
                        BinaryOp::ClipHigh,
                        bin(BinaryOp::ClipLow, un(UnaryOp::Sin, y.clone()), x.clone()),
                        un(UnaryOp::Tanh, un(UnaryOp::Cos, x.clone())),
                    ),
                ),
            ),
        );
        let condition = bin(
            BinaryOp::Ne,
            bin(BinaryOp::Lt, x.clone(), y.clone()),
            bin(
                BinaryOp::Eq,
                bin(BinaryOp::Ge, x.clone(), y.clone()),
                bin(BinaryOp::Le, x, y),
            ),
        );
        let dtype = arithmetic.dtype().promote(math.dtype());
        Node::Where(Box::new(condition), Box::new(arithmetic), Box::new(math), dtype)
    }

    #[test]
    fn every_operator_compiles_for_every_type_pair() {
        use crate::{Arch, CompileTarget, Program, ProgramOptions};
        let pairs = [
            (DType::F32, DType::F32),
            (DType::F64, DType::I32),
            (DType::F16, DType::F16),
            (DType::BF16, DType::U8),
            (DType::F16, DType::BF16),
            (DType::I8, DType::U8),
            (DType::U64, DType::I64),
            (DType::I8, DType::U64),
            (DType::F64, DType::BF16),
            (DType::Bool, DType::I16),
            (DType::U32, DType::U32),
            (DType::C64, DType::C64),
            (DType::C64, DType::F32),
            (DType::C128, DType::I32),
            (DType::F16, DType::C64),
            (DType::Bool, DType::C128),
            (DType::C64, DType::C128),
        ];
        for (a, b) in pairs {
            let node = everything(a, b);
            for out in [node.dtype(), DType::F64, DType::F16] {
                let operands = [
                    Operand::Scalar(a, ScalarValue::int(3)),
                    Operand::Scalar(b, ScalarValue::Float(0.5)),
                ];
                let plan = Plan::new(&postfix(&node), &operands, out);
                let (params, operation) = plan.source(&node, &operands, out);
                let kernel =
                    ElementwiseKernel::with_prelude(&params, "O out", &operation, "expr", EXPR_PRELUDE).unwrap();
                let signature = [
                    crate::array::ArgType::Scalar(a),
                    crate::array::ArgType::Scalar(b),
                    crate::array::ArgType::Array(out),
                ];
                let options = ProgramOptions {
                    cache: false,
                    ..ProgramOptions::for_arch(Arch::Sm(90))
                };
                for source in [
                    kernel.source_for(&signature).unwrap(),
                    kernel
                        .strided_source_for(&signature, 2, crate::array::IndexWidth::SIGNED_32)
                        .unwrap(),
                ] {
                    if let Err(error) = Program::new(source.clone(), options.clone()).compile(CompileTarget::Ptx) {
                        panic!("{a} with {b} into {out}: {error}\n{source}");
                    }
                }
            }
        }
    }

    #[test]
    fn the_same_view_is_one_parameter_and_scalars_are_not_in_the_key() {
        let node = postfix(&bin(BinaryOp::Add, scalar(DType::F32, 0), scalar(DType::F32, 1)));
        let two = Plan::new(
            &node,
            &[
                Operand::Scalar(DType::F32, ScalarValue::Float(2.0)),
                Operand::Scalar(DType::F32, ScalarValue::Float(3.0)),
            ],
            DType::F32,
        );
        let other = Plan::new(
            &node,
            &[
                Operand::Scalar(DType::F32, ScalarValue::Float(7.0)),
                Operand::Scalar(DType::F32, ScalarValue::Float(1.0)),
            ],
            DType::F32,
        );
        assert_eq!(two.key.as_slice(), other.key.as_slice());
        assert_eq!(two.inputs.as_slice(), [0, 1]);
        // Another operator, another output type, another operand type: other keys.
        let sub = postfix(&bin(BinaryOp::Sub, scalar(DType::F32, 0), scalar(DType::F32, 1)));
        let operands = [
            Operand::Scalar(DType::F32, ScalarValue::Float(2.0)),
            Operand::Scalar(DType::F32, ScalarValue::Float(3.0)),
        ];
        assert_ne!(
            Plan::new(&sub, &operands, DType::F32).key.as_slice(),
            two.key.as_slice()
        );
        assert_ne!(
            Plan::new(&node, &operands, DType::F64).key.as_slice(),
            two.key.as_slice()
        );
        let wider = [
            Operand::Scalar(DType::F64, ScalarValue::Float(2.0)),
            Operand::Scalar(DType::F32, ScalarValue::Float(3.0)),
        ];
        assert_ne!(Plan::new(&node, &wider, DType::F32).key.as_slice(), two.key.as_slice());
    }

    #[test]
    fn expressions_stay_small_and_exact() {
        // What each operator moves: a step of 4 bytes, an operand of 32 (a complex scalar's two
        // `f64`s and its tag; an `i128` field would make it 48), so the whole expression is
        // well under the 608 bytes it once was.
        assert!(std::mem::size_of::<Step>() <= 4, "{}", std::mem::size_of::<Step>());
        assert!(
            std::mem::size_of::<Operand<'_>>() <= 32,
            "{}",
            std::mem::size_of::<Operand<'_>>()
        );
        assert!(
            std::mem::size_of::<Expr<'_, f32>>() <= 320,
            "{}",
            std::mem::size_of::<Expr<'_, f32>>()
        );
        for value in [
            0,
            -1,
            1,
            i128::from(i64::MIN),
            i128::from(i64::MAX),
            i128::from(u64::MAX),
            -300,
            -(1 << 64),
        ] {
            assert_eq!(ExactInt::new(value).get(), value);
        }
        assert_eq!(ExactInt::new(i128::MAX).get(), i128::from(u64::MAX));
        assert_eq!(ExactInt::new(i128::MIN).get(), -(1 << 64));
        let beyond = value::<u8>(1).lt(u64::MAX);
        assert!(matches!(
            beyond.operands.as_slice()[1],
            Operand::Scalar(DType::U64, ScalarValue::Int(v)) if v.get() == i128::from(u64::MAX)
        ));
    }

    #[test]
    fn more_operands_than_a_step_indexes_are_refused() {
        let count = usize::from(u16::MAX);
        assert!(check_operand_count(count).is_ok());
        let error = check_operand_count(count + 1).unwrap_err().to_string();
        assert!(error.contains("operands"), "{error}");
        // Building saturates rather than wrapping, so no step names a wrong operand meanwhile.
        assert_eq!(
            Step::Operand(5, DType::F32).shifted(u16::MAX),
            Step::Operand(u16::MAX, DType::F32)
        );
    }
}
