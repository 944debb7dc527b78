//! Stacks of matrices as the factoring routines see them: the element types cuSOLVER factors,
//! NumPy 2's promotion of other inputs into them, and the shape plans (batch, order, right-hand
//! sides) checked before anything runs.
//!
//! A C-contiguous stack of `(..., m, n)` matrices read column-major is the stack of their
//! transposes, packed one after another: that is how the routines hand a row-major array to
//! cuSOLVER without a transposing copy (see `lu.rs`).

use cuda_libs::solver::{Fill, Matrix};
use num_complex::Complex;

use crate::array::dtype::Element;
use crate::array::promotion::{Promote, Scalars};
use crate::array::routines::linalg::MatmulElement;
use crate::array::view::broadcast_shapes;
use crate::error::{Error, Result};
use crate::Bool;

/// An element type the factoring routines compute in: `f32`, `f64`, `Complex<f32>` and
/// `Complex<f64>` (cuSOLVER's four types). [`Real`](Scalars::Real) is the type of the real
/// results (singular values, eigenvalues of a Hermitian matrix, `slogdet`'s logarithm).
pub trait SolverElement:
    MatmulElement
    + Promote<Self, Output = Self>
    + Scalars<Float = Self, Arithmetic = Self, Quotient = Self, WithFloat = Self, Real: RealResult>
    + cuda_libs::solver::SolverScalar<Real = <Self as Scalars>::Real>
{
    /// The machine epsilon of the real type (NumPy's `finfo(dtype).eps`), as `f64`.
    const EPSILON: f64;
    /// The complex type of the same precision (`eig`'s result): `Complex<f32>` for `f32`, the
    /// complex types themselves.
    type Complex: SolverElement<Complex = Self::Complex> + Scalars<Real = <Self as Scalars>::Real>;
}

/// The real type of a [`SolverElement`] (`f32`, `f64`): its sums stay in it.
pub trait RealResult:
    Element<Sum = Self>
    + Promote<Self, Output = Self>
    + Scalars<Real = Self, Float = Self, WithFloat = Self, Quotient = Self, Arithmetic = Self>
{
}

impl RealResult for f32 {}
impl RealResult for f64 {}

impl SolverElement for f32 {
    const EPSILON: f64 = f32::EPSILON as f64;
    type Complex = Complex<f32>;
}

impl SolverElement for f64 {
    const EPSILON: f64 = f64::EPSILON;
    type Complex = Complex<f64>;
}

impl SolverElement for Complex<f32> {
    const EPSILON: f64 = f32::EPSILON as f64;
    type Complex = Complex<f32>;
}

impl SolverElement for Complex<f64> {
    const EPSILON: f64 = f64::EPSILON;
    type Complex = Complex<f64>;
}

/// An element type the factoring routines accept, with the type they compute in
/// ([`Factored`](Self::Factored)): NumPy 2's promotion, `f32`, `f64`, `Complex<f32>` and
/// `Complex<f64>` as they are, `bool` and the integers to `f64`. `f16` and `bf16` are refused at
/// compile time, as NumPy refuses `float16` in `linalg`.
pub trait LinalgInput: Scalars {
    /// The type the routine computes in and returns.
    type Factored: SolverElement;
}

macro_rules! linalg_inputs {
    ($($ty:ty => $float:ty),* $(,)?) => {
        $(impl LinalgInput for $ty {
            type Factored = $float;
        })*
    };
}

linalg_inputs! {
    f32 => f32, f64 => f64, Bool => f64,
    i8 => f64, i16 => f64, i32 => f64, i64 => f64,
    u8 => f64, u16 => f64, u32 => f64, u64 => f64,
    Complex<f32> => Complex<f32>, Complex<f64> => Complex<f64>,
}

/// A stack of square matrices: the batch shape, the order, and the number of matrices.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct SquareStack {
    pub(super) batch: Vec<usize>,
    pub(super) n: usize,
}

impl SquareStack {
    /// The `(..., n, n)` stack of `shape`: [`Error::InvalidValue`] under two dimensions or when
    /// the last two differ (NumPy's `LinAlgError`), naming `routine`.
    pub(super) fn of(routine: &str, shape: &[usize]) -> Result<SquareStack> {
        let nd = shape.len();
        if nd < 2 {
            return Err(Error::InvalidValue(format!(
                "{routine}: {nd}-dimensional array given; the array must be at least two-dimensional"
            )));
        }
        let (rows, cols) = (shape[nd - 2], shape[nd - 1]);
        if rows != cols {
            return Err(Error::InvalidValue(format!(
                "{routine}: the last 2 dimensions of the array must be square; they are {rows} x {cols} (shape {shape:?})"
            )));
        }
        Ok(SquareStack {
            batch: shape[..nd - 2].to_vec(),
            n: rows,
        })
    }

    /// The number of matrices.
    pub(super) fn count(&self) -> usize {
        self.batch.iter().product()
    }

    /// The stack's shape, `batch + [n, n]`.
    pub(super) fn shape(&self) -> Vec<usize> {
        [&self.batch[..], &[self.n, self.n]].concat()
    }

    /// Whether there is nothing to factor (no matrix, or matrices of order 0).
    pub(super) fn is_empty(&self) -> bool {
        self.n == 0 || self.count() == 0
    }
}

/// What `solve(a, b)` computes: NumPy 2's rule, `b` is one vector (`(n,)`, broadcast over
/// `a`'s stack) when 1-D and otherwise a stack of `(..., n, k)` matrices whose batch broadcasts
/// with `a`'s.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct SolvePlan {
    /// `a`'s stack, with the broadcast batch.
    pub(super) stack: SquareStack,
    /// Right-hand sides per matrix.
    pub(super) k: usize,
    /// `b` is a vector: the result is `batch + [n]`.
    pub(super) vector: bool,
}

impl SolvePlan {
    /// The plan for `a` and `b` of these shapes: [`Error::InvalidValue`] for a stack that is not
    /// square, a `b` whose rows are not `a`'s order, or batches that do not broadcast.
    pub(super) fn new(a: &[usize], b: &[usize]) -> Result<SolvePlan> {
        let mut stack = SquareStack::of("solve", a)?;
        let n = stack.n;
        let mismatch = |rows: usize| {
            Error::InvalidValue(format!(
                "solve: b has {rows} rows where a is {n} x {n} (shapes {a:?} and {b:?})"
            ))
        };
        match b.len() {
            0 => Err(Error::InvalidValue(
                "solve: b must be a vector or a stack of matrices; it is 0-dimensional".into(),
            )),
            1 if b[0] != n => Err(mismatch(b[0])),
            1 => Ok(SolvePlan {
                stack,
                k: 1,
                vector: true,
            }),
            nd if b[nd - 2] != n => Err(mismatch(b[nd - 2])),
            nd => {
                stack.batch = broadcast_shapes(&stack.batch, &b[..nd - 2]).map_err(|_| {
                    Error::InvalidValue(format!(
                        "solve: the stacks of a and b do not broadcast (shapes {a:?} and {b:?})"
                    ))
                })?;
                Ok(SolvePlan {
                    stack,
                    k: b[nd - 1],
                    vector: false,
                })
            }
        }
    }

    /// The result's shape: `batch + [n]` for a vector `b`, else `batch + [n, k]`.
    pub(super) fn out_shape(&self) -> Vec<usize> {
        let mut shape = self.stack.batch.clone();
        shape.push(self.stack.n);
        if !self.vector {
            shape.push(self.k);
        }
        shape
    }

    /// `b` broadcast to the stack: `batch + [n]` or `batch + [n, k]` (the result's shape).
    pub(super) fn rhs_shape(&self) -> Vec<usize> {
        self.out_shape()
    }
}

/// The triangle of the column-major copy (`A^T`) a routine reads for the row-major triangle
/// asked for: the upper one for the lower (`upper == false`), and the other way round.
pub(super) fn column_major_fill(upper: bool) -> Fill {
    match upper {
        true => Fill::Lower,
        false => Fill::Upper,
    }
}

/// A stack of `(..., m, n)` matrices, square or not.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct MatrixStack {
    pub(super) batch: Vec<usize>,
    pub(super) m: usize,
    pub(super) n: usize,
}

impl MatrixStack {
    /// The stack of `shape`: [`Error::InvalidValue`] under two dimensions, naming `routine`.
    pub(super) fn of(routine: &str, shape: &[usize]) -> Result<MatrixStack> {
        let nd = shape.len();
        if nd < 2 {
            return Err(Error::InvalidValue(format!(
                "{routine}: {nd}-dimensional array given; the array must be at least two-dimensional"
            )));
        }
        Ok(MatrixStack {
            batch: shape[..nd - 2].to_vec(),
            m: shape[nd - 2],
            n: shape[nd - 1],
        })
    }

    /// The number of matrices.
    pub(super) fn count(&self) -> usize {
        self.batch.iter().product()
    }

    /// `min(m, n)`: the number of singular values of each matrix.
    pub(super) fn k(&self) -> usize {
        self.m.min(self.n)
    }

    /// The column-major matrix cuSOLVER's SVD takes (rows at least columns) and whether it is
    /// `A^T` copied as it is (`m <= n`: the row-major copy read column-major) rather than `A`
    /// (the transposed copy).
    pub(super) fn svd_operand(&self) -> (Matrix, bool) {
        match self.m <= self.n {
            true => (Matrix::new(self.n, self.m), true),
            false => (Matrix::new(self.m, self.n), false),
        }
    }
}

/// [`Error`] unless both arrays belong to one context.
pub(super) fn same_context<A: Element, B: Element>(
    a: &crate::DeviceArray<A>,
    b: &crate::DeviceArray<B>,
    routine: &'static str,
) -> Result<()> {
    if a.context() != b.context() {
        return Err(cuda_driver::Error::WrongContext {
            object: "array",
            used_with: routine,
        }
        .into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message<T: std::fmt::Debug>(result: Result<T>) -> String {
        match result {
            Err(Error::InvalidValue(message)) => message,
            other => panic!("expected InvalidValue, got {other:?}"),
        }
    }

    #[test]
    fn square_stacks_are_checked() {
        let stack = SquareStack::of("inv", &[5, 2, 3, 3]).unwrap();
        assert_eq!((stack.batch.clone(), stack.n, stack.count()), (vec![5, 2], 3, 10));
        assert_eq!(stack.shape(), [5, 2, 3, 3]);
        assert!(!stack.is_empty());
        assert!(SquareStack::of("inv", &[0, 3, 3]).unwrap().is_empty());
        assert!(SquareStack::of("inv", &[0, 0]).unwrap().is_empty());
        assert_eq!(SquareStack::of("det", &[4, 4]).unwrap().count(), 1);
        assert!(message(SquareStack::of("inv", &[3, 4])).contains("inv: the last 2 dimensions"));
        assert!(message(SquareStack::of("det", &[3])).contains("at least two-dimensional"));
    }

    #[test]
    fn triangles_and_svd_operands_follow_the_transpose() {
        assert_eq!(column_major_fill(false), Fill::Upper);
        assert_eq!(column_major_fill(true), Fill::Lower);
        let wide = MatrixStack::of("svd", &[2, 3, 5]).unwrap();
        assert_eq!((wide.count(), wide.k()), (2, 3));
        assert_eq!(wide.svd_operand(), (Matrix::new(5, 3), true));
        let tall = MatrixStack::of("svd", &[7, 4]).unwrap();
        assert_eq!(tall.svd_operand(), (Matrix::new(7, 4), false));
        assert!(message(MatrixStack::of("svd", &[4])).contains("at least two-dimensional"));
    }

    #[test]
    fn solve_follows_numpy_2_right_hand_sides() {
        // A 1-D b is one vector, broadcast over the stack.
        let plan = SolvePlan::new(&[4, 3, 3], &[3]).unwrap();
        assert!(plan.vector);
        assert_eq!((plan.stack.count(), plan.k, plan.out_shape()), (4, 1, vec![4, 3]));
        // Anything else is a stack of (n, k) matrices: a (4, 3) b is one 4 x 3 matrix, whose
        // 4 rows do not match (NumPy 1 read it as 4 vectors; NumPy 2 refuses it).
        assert!(message(SolvePlan::new(&[4, 3, 3], &[4, 3])).contains("b has 4 rows"));
        let plan = SolvePlan::new(&[4, 3, 3], &[3, 2]).unwrap();
        assert_eq!((plan.stack.batch.clone(), plan.k), (vec![4], 2));
        assert_eq!(plan.out_shape(), [4, 3, 2]);
        // Batches broadcast both ways.
        let plan = SolvePlan::new(&[2, 1, 5, 5], &[7, 5, 1]).unwrap();
        assert_eq!(plan.stack.batch, [2, 7]);
        assert_eq!(plan.rhs_shape(), [2, 7, 5, 1]);
        assert!(message(SolvePlan::new(&[2, 5, 5], &[3, 5, 1])).contains("do not broadcast"));
        assert!(message(SolvePlan::new(&[5, 5], &[4])).contains("b has 4 rows"));
        assert!(message(SolvePlan::new(&[5, 5], &[])).contains("0-dimensional"));
        assert!(message(SolvePlan::new(&[5, 4], &[5])).contains("square"));
        // Empty systems keep their shapes.
        let plan = SolvePlan::new(&[0, 0], &[0, 3]).unwrap();
        assert!(plan.stack.is_empty());
        assert_eq!(plan.out_shape(), [0, 3]);
    }
}
