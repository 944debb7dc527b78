//! The LU family of NumPy's `linalg`: [`solve`](DeviceArray::solve), [`inv`](DeviceArray::inv),
//! [`det`](DeviceArray::det) and [`slogdet`](DeviceArray::slogdet), over stacks `(..., n, n)`.
//!
//! `inv`, `det`, `slogdet` and `solve` (with at most 64 right-hand sides) of matrices up to 64 x
//! 64 (32 x 32 in `Complex<f64>`) are one generated kernel each, a block a matrix
//! (`small_lu.rs`, `small_solve.rs`). Otherwise a stack of one matrix is factored by cuSOLVER
//! (`cusolverDnXgetrf`, then `Xgetrs`); a stack of several by cuBLAS's batched LU
//! (`getrfBatched`, `getrsBatched`, `getriBatched`), one call for the whole stack. The factors are of the transposes: the C-contiguous copy of `A` (the
//! one copy the in-place factorisation needs anyway, which also promotes the type) is `A^T`
//! column-major, so `solve` asks for the transposed solve, `A^T^T x = A x = b`; `inv` inverts
//! `A^T`, whose column-major inverse `(A^-1)^T` read row-major is `A^-1`; and `det(A^T) =
//! det(A)`. No transposing copy is made of `A`.
//!
//! A singular matrix in `solve` or `inv` is [`crate::Error::Library`] holding
//! [`cuda_libs::Error::Linalg`] (routine, cause, index in the stack), NumPy's `LinAlgError`:
//! these routines read the `info` outputs back before returning (one host wait), so no
//! result of a singular matrix is ever returned. `det` and `slogdet` of a singular matrix are
//! `0` and `(0, -inf)`, as in NumPy.

use cuda_driver::{DeviceMemoryMut, Stream};
use cuda_libs::solver::{Matrix, Solver};
use cuda_libs::LinalgFailure;

use super::handles::{refuse_solver_in_capture, with_solver};
use super::stacks::{same_context, LinalgInput, SolvePlan, SolverElement, SquareStack};
use super::{small, small_lu, small_solve};
use crate::array::device_array::DeviceArray;
use crate::array::dtype::Element;
use crate::array::promotion::{Promote, Scalars};
use crate::array::routines::math::{Expr, ExprOps, IntoExpr};
use crate::error::Result;

/// The type `solve(a, b)` computes in and returns for `a` of `T` and `b` of `U`: NumPy's, the
/// promoted type of the two made a [`SolverElement`] (`f64` of integers and `bool`).
pub type Solved<T, U> = <<T as Promote<U>>::Output as LinalgInput>::Factored;

/// `slogdet`'s result: the signs (of modulus 1 for complex types) and the logarithms of the
/// absolute values (real).
type SignAndLogDet<F> = (DeviceArray<F>, DeviceArray<<F as Scalars>::Real>);

/// The pivots of an LU factorisation: cuSOLVER's 64-bit ones for one matrix, cuBLAS's 32-bit
/// ones (`n` per matrix) for a batch. 1-based rows, as LAPACK's.
enum Pivots {
    One(DeviceArray<i64>),
    Batch(DeviceArray<i32>),
}

/// A stack's LU factors, queued: `lu` is the compact `(count, n, n)` stack holding `L` and `U`
/// of each `A^T` (column-major).
struct Factors<F: SolverElement> {
    lu: DeviceArray<F>,
    pivots: Pivots,
    n: usize,
    count: usize,
}

/// Queues the LU factorisation of `a` broadcast to `stack` (its promoted compact copy) on
/// `stream`. `stack` must not be empty.
fn factor<T: Scalars, F: SolverElement>(
    solver: &mut Solver,
    a: &DeviceArray<T>,
    stack: &SquareStack,
    stream: &Stream,
) -> Result<Factors<F>> {
    let (n, count) = (stack.n, stack.count());
    let full = a.broadcast_to(stack.shape())?;
    let mut lu = (&full).astype::<F>().eval_on(stream)?.reshape([count, n, n])?;
    let shape = Matrix::square(n);
    let pivots = if count == 1 {
        let bytes = solver.getrf_workspace::<F>(shape)?;
        let mut workspace = DeviceArray::<u8>::empty(stream, [bytes])?;
        let mut pivots = DeviceArray::<i64>::empty(stream, [n])?;
        let workspace: Option<&mut dyn DeviceMemoryMut> = match bytes {
            0 => None,
            _ => Some(&mut workspace),
        };
        solver.getrf::<F>(shape, &mut lu, &mut pivots, workspace)?;
        Pivots::One(pivots)
    } else {
        let mut pivots = DeviceArray::<i32>::empty(stream, [count, n])?;
        solver.getrf_batched::<F>(shape, count, &mut lu, &mut pivots)?;
        Pivots::Batch(pivots)
    };
    Ok(Factors { lu, pivots, n, count })
}

/// Reads the queued `info`s back; a singular matrix is no error (its determinant is 0), any
/// other failure is.
fn check_factors_allowing_singular(solver: &mut Solver) -> Result<()> {
    match solver.check_info() {
        Err(cuda_libs::Error::Linalg {
            failure: LinalgFailure::Singular { .. },
            ..
        }) => Ok(()),
        other => Ok(other?),
    }
}

impl<F: SolverElement> Factors<F> {
    /// The diagonals of the `U` factors, `(count, n)` (a strided view).
    fn diagonal(&self) -> Result<DeviceArray<F>> {
        self.lu.diagonal(0, -2, -1)
    }

    /// The permutations' signs as `(count, n)` factors: `-1` where row `i` was swapped (its
    /// pivot is not `i + 1`), else `1`; their product is the sign of the permutation.
    fn flips<'a>(&'a self, steps: &'a DeviceArray<F>) -> Expr<'a, F> {
        let swapped = match &self.pivots {
            Pivots::One(pivots) => pivots.astype::<F>().ne(steps),
            Pivots::Batch(pivots) => pivots.astype::<F>().ne(steps),
        };
        swapped.astype::<F>() * -2.0 + 1.0
    }

    /// `1, 2, ..., n` in `F`, the pivots of no swap.
    fn steps(&self, stream: &Stream) -> Result<DeviceArray<F>> {
        let n = self.n as f64;
        DeviceArray::<f64>::arange(stream, 1.0, n + 1.0, 1.0)?
            .astype::<F>()
            .eval_on(stream)
    }
}

impl<T: LinalgInput> DeviceArray<T> {
    /// NumPy's `linalg.solve(a, b)`: `x` with `a @ x == b` for each square matrix of the stack
    /// `self` (`(..., n, n)`). As NumPy 2: a 1-D `b` (`(n,)`) is one right-hand side, broadcast
    /// over the stack, giving `(..., n)`; any other `b` is a stack `(..., n, k)` whose batch
    /// broadcasts with `self`'s, giving `(..., n, k)`. Both are computed in [`Solved<T, U>`],
    /// NumPy's: their promoted type, `f64` where that is an integer or `bool` (a real `a` with
    /// a complex `b` is solved in the complex type, and the other way round).
    ///
    /// Errors: a stack that is not square, a `b` whose rows are not `n` or whose batch does not
    /// broadcast ([`Error::InvalidValue`](crate::Error::InvalidValue)); a singular matrix
    /// ([`cuda_libs::Error::Linalg`] with [`LinalgFailure::Singular`] and its index in the
    /// stack, read back before returning). Empty systems give empty results.
    pub fn solve<U: Scalars>(&self, b: &DeviceArray<U>) -> Result<DeviceArray<Solved<T, U>>>
    where
        T: Promote<U, Output: LinalgInput>,
    {
        let plan = SolvePlan::new(self.shape(), b.shape())?;
        same_context(self, b, "solve")?;
        refuse_solver_in_capture(self.stream())?;
        let stream = self.stream().clone();
        if plan.stack.is_empty() || plan.k == 0 {
            return DeviceArray::zeros(&stream, plan.out_shape());
        }
        let (n, k) = (plan.stack.n, plan.k);
        let small_order = small::tile_order(n, <Solved<T, U> as Element>::DTYPE);
        if let Some(order) = small_order.filter(|_| k <= small_solve::LARGEST_RHS) {
            let a = self.broadcast_to(plan.stack.shape())?.to_contiguous()?;
            let b = b.broadcast_to(plan.rhs_shape())?.to_contiguous()?;
            let x = small_solve::solve::<T, U, Solved<T, U>>(&a, &b, &plan.stack, k, order)?;
            return x.reshape(plan.out_shape());
        }
        with_solver(&stream, |solver| {
            let factors = factor::<T, Solved<T, U>>(solver, self, &plan.stack, &stream)?;
            let count = factors.count;
            // Each right-hand side block column-major: b itself for vectors, its transpose
            // (made compact with the promotion) for matrices.
            let rhs = b.broadcast_to(plan.rhs_shape())?;
            let rhs = if plan.vector { rhs } else { rhs.swapaxes(-2, -1)? };
            let mut x = (&rhs).astype::<Solved<T, U>>().eval_on(&stream)?;
            let (a_shape, b_shape) = (Matrix::square(n), Matrix::new(n, k));
            match &factors.pivots {
                Pivots::One(pivots) => {
                    solver.getrs::<Solved<T, U>>(true, a_shape, &factors.lu, pivots, b_shape, &mut x)?
                }
                Pivots::Batch(pivots) => {
                    solver.getrs_batched::<Solved<T, U>>(true, a_shape, count, &factors.lu, pivots, b_shape, &mut x)?
                }
            }
            solver.check_info()?;
            match plan.vector {
                true => Ok(x),
                false => x.swapaxes(-2, -1),
            }
        })
    }

    /// NumPy's `linalg.inv`: the inverse of each square matrix of the stack `(..., n, n)`, in
    /// the promoted type. A matrix that is not square is
    /// [`Error::InvalidValue`](crate::Error::InvalidValue); a singular one is
    /// [`cuda_libs::Error::Linalg`] with its index in the stack. `0 x 0` matrices give `0 x 0`.
    pub fn inv(&self) -> Result<DeviceArray<T::Factored>> {
        let stack = SquareStack::of("inv", self.shape())?;
        refuse_solver_in_capture(self.stream())?;
        let stream = self.stream().clone();
        if stack.is_empty() {
            return DeviceArray::zeros(&stream, stack.shape());
        }
        let n = stack.n;
        if let Some(order) = small::tile_order(n, <T::Factored as Element>::DTYPE) {
            let a = self.to_contiguous()?;
            return small_lu::inverse::<T, T::Factored>(&a, &stack, order);
        }
        with_solver(&stream, |solver| {
            let factors = factor::<T, T::Factored>(solver, self, &stack, &stream)?;
            let square = Matrix::square(n);
            let inverse = match &factors.pivots {
                Pivots::One(pivots) => {
                    // A^T X = I solved untransposed: X = (A^T)^-1, which read row-major is A^-1.
                    let mut x = DeviceArray::<T::Factored>::identity(&stream, n)?;
                    solver.getrs::<T::Factored>(false, square, &factors.lu, pivots, square, &mut x)?;
                    x
                }
                Pivots::Batch(pivots) => {
                    let mut c = DeviceArray::<T::Factored>::empty(&stream, [factors.count, n, n])?;
                    solver.getri_batched::<T::Factored>(square, factors.count, &factors.lu, pivots, square, &mut c)?;
                    c
                }
            };
            solver.check_info()?;
            inverse.reshape(stack.shape())
        })
    }

    /// NumPy's `linalg.det`: the determinant of each square matrix of the stack, of shape
    /// `self.shape[:-2]`, from its LU factors (the product of `U`'s diagonal times the
    /// permutation's sign, one fused reduction). A singular matrix gives `0`; a `0 x 0` one `1`.
    /// Matrices up to 64 x 64 (32 x 32 in `complex128`) take one kernel of the crate's and no
    /// host wait, so they can be captured into a graph; larger ones read cuSOLVER's `info` back
    /// ([`Error::HostWaitInCapture`](crate::Error::HostWaitInCapture) under a capture).
    pub fn det(&self) -> Result<DeviceArray<T::Factored>> {
        let stack = SquareStack::of("det", self.shape())?;
        let stream = self.stream().clone();
        if stack.is_empty() {
            return DeviceArray::ones(&stream, stack.batch);
        }
        if let Some(order) = small::tile_order(stack.n, <T::Factored as Element>::DTYPE) {
            let a = self.to_contiguous()?;
            return small_lu::determinant::<T, T::Factored>(&a, &stack, order);
        }
        refuse_solver_in_capture(&stream)?;
        with_solver(&stream, |solver| {
            let factors = factor::<T, T::Factored>(solver, self, &stack, &stream)?;
            check_factors_allowing_singular(solver)?;
            let (diagonal, steps) = (factors.diagonal()?, factors.steps(&stream)?);
            let signed = (&diagonal).into_expr() * factors.flips(&steps);
            signed.prod_axes(-1, false)?.reshape(stack.batch.clone())
        })
    }

    /// NumPy's `linalg.slogdet`: `(sign, logabsdet)` of each square matrix of the stack, both
    /// of shape `self.shape[:-2]`, with `det = sign * exp(logabsdet)` (no overflow for large
    /// matrices). A singular matrix gives `(0, -inf)`; a `0 x 0` one `(1, 0)`. As with
    /// [`det`](Self::det), small matrices can be captured into a graph and larger ones cannot.
    pub fn slogdet(&self) -> Result<SignAndLogDet<T::Factored>> {
        let stack = SquareStack::of("slogdet", self.shape())?;
        let stream = self.stream().clone();
        if stack.is_empty() {
            let sign = DeviceArray::ones(&stream, stack.batch.clone())?;
            return Ok((sign, DeviceArray::zeros(&stream, stack.batch)?));
        }
        if let Some(order) = small::tile_order(stack.n, <T::Factored as Element>::DTYPE) {
            let a = self.to_contiguous()?;
            return small_lu::log_determinant::<T, T::Factored, <T::Factored as Scalars>::Real>(&a, &stack, order);
        }
        refuse_solver_in_capture(&stream)?;
        with_solver(&stream, |solver| {
            let factors = factor::<T, T::Factored>(solver, self, &stack, &stream)?;
            check_factors_allowing_singular(solver)?;
            let (diagonal, steps) = (factors.diagonal()?, factors.steps(&stream)?);
            let sign = ((&diagonal).sign() * factors.flips(&steps)).prod_axes(-1, false)?;
            let logabs = (&diagonal).abs().log().sum_axes(-1, false)?;
            Ok((sign.reshape(stack.batch.clone())?, logabs.reshape(stack.batch.clone())?))
        })
    }
}

#[cfg(test)]
mod tests {
    use num_complex::Complex;

    use super::Solved;
    use crate::array::dtype::{DType, Element};
    use crate::Bool;

    #[test]
    fn solve_computes_in_numpys_type_for_the_pair() {
        // np.linalg.solve(a, b).dtype for a of the first type and b of the second.
        assert_eq!(<Solved<f64, Complex<f32>> as Element>::DTYPE, DType::C128);
        assert_eq!(<Solved<Complex<f32>, f64> as Element>::DTYPE, DType::C128);
        assert_eq!(<Solved<Complex<f32>, f32> as Element>::DTYPE, DType::C64);
        assert_eq!(<Solved<f32, Complex<f32>> as Element>::DTYPE, DType::C64);
        assert_eq!(<Solved<f32, i16> as Element>::DTYPE, DType::F32);
        assert_eq!(<Solved<i32, f32> as Element>::DTYPE, DType::F64);
        assert_eq!(<Solved<i8, u8> as Element>::DTYPE, DType::F64);
        assert_eq!(<Solved<Bool, Bool> as Element>::DTYPE, DType::F64);
        assert_eq!(<Solved<i64, Complex<f32>> as Element>::DTYPE, DType::C128);
    }
}
