//! NumPy's "linear algebra" chapter through cuBLAS, from the `cuda-libs` crate (feature `blas`,
//! on by default): [`DeviceArray::matmul`], [`dot`](DeviceArray::dot),
//! [`vdot`](DeviceArray::vdot), [`inner`](DeviceArray::inner), [`outer`](DeviceArray::outer),
//! [`trace`](DeviceArray::trace), [`linalg_norm`](DeviceArray::linalg_norm),
//! [`vector_norm`](DeviceArray::vector_norm) and [`matrix_norm`](DeviceArray::matrix_norm)
//! (real, [`NormOf`], for complex arrays too; `f64` of `Bool` and the integers). Where cuBLAS
//! adds nothing (the 1-norm, the infinity norms, the trace) they are the existing reductions over
//! element-wise expressions or views.
//!
//! Operands go to cuBLAS as they are whenever it can take them: a row-major matrix with any
//! row stride is passed with its leading dimension, and a transposed view (a column-major
//! layout) as cuBLAS's transpose flag, so `a.matmul(&b.transpose())` copies nothing. Any other
//! layout (a view with a step along its last axis, say) is made compact with one copy first.

use std::sync::PoisonError;

use crate::array::device_array::DeviceArray;
use crate::array::dtype::{Bool, Element};
use crate::array::promotion::Scalars;
use crate::array::routines::math::{binary, unary, BinaryOp, Expr, ExprOps, IntoExpr, ScalarValue, UnaryOp};
use crate::error::{Error, Result};
use laid_out::LaidOut;

mod batches;
mod chains;
#[cfg(feature = "solver")]
mod cholesky;
#[cfg(feature = "solver")]
mod eig;
#[cfg(feature = "solver")]
mod eigen;
mod fusion;
mod handles;
mod laid_out;
#[cfg(feature = "solver")]
mod lstsq;
#[cfg(feature = "solver")]
mod lu;
mod matmul;
mod norm_axes;
#[cfg(feature = "solver")]
mod qr;
#[cfg(feature = "solver")]
mod singular;
#[cfg(feature = "solver")]
mod small;
#[cfg(feature = "solver")]
mod small_cholesky;
#[cfg(feature = "solver")]
mod small_lu;
#[cfg(feature = "solver")]
mod small_solve;
#[cfg(feature = "solver")]
mod stacks;
mod tensordot;
mod tiled;

pub use chains::multi_dot;
pub use handles::{matmul_replay, set_matmul_replay, set_tf32, tf32, TF32_ENV};
#[cfg(feature = "solver")]
pub use lstsq::Lstsq;
#[cfg(feature = "solver")]
pub use lu::Solved;
pub use matmul::{MatmulElement, MatmulType};
#[cfg(feature = "solver")]
pub use stacks::{LinalgInput, RealResult, SolverElement};
pub use tensordot::TensorAxes;

/// Which norm [`DeviceArray::linalg_norm`] computes: NumPy's `ord` argument.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Norm {
    /// `ord=None`: the 2-norm of a vector, the Frobenius norm of a matrix, and of any other
    /// array the 2-norm of its elements flattened.
    Default,
    /// `ord='fro'`: the Frobenius norm of a matrix.
    Fro,
    /// `ord='nuc'`: the nuclear norm (sum of singular values; feature `solver`).
    Nuc,
    /// `ord=inf`: the greatest `|x_i|` of a vector; the greatest row sum of `|x|` of a matrix.
    Inf,
    /// `ord=-inf`: the least `|x_i|` of a vector; the least row sum of `|x|` of a matrix.
    NegInf,
    /// A numeric `ord`. Vectors: any `p`, `(sum |x_i|^p)^(1/p)`, with `0` the count of nonzero
    /// elements and `±inf` as [`Inf`](Self::Inf) and [`NegInf`](Self::NegInf). Matrices: `1`
    /// (the greatest column sum of `|x|`), `-1` (the least), `±inf`; `2` and `-2` (the
    /// greatest and least singular value; feature `solver`).
    Ord(f64),
}

/// How a norm is computed, once `ord` is checked against the array's dimensions.
#[derive(Clone, Copy, Debug, PartialEq)]
enum NormKind {
    /// cuBLAS `nrm2` over every element (the vector 2-norm, the Frobenius norm, the default
    /// norm of any other array).
    Euclidean,
    /// The sum of `|x|`.
    SumAbs,
    /// The greatest `|x|`.
    MaxAbs,
    /// The least `|x|`.
    MinAbs,
    /// The number of nonzero elements.
    Nonzero,
    /// `(sum |x|^p)^(1/p)`.
    Power(f64),
    /// The sums of `|x|` along an axis of a matrix (0: column sums, 1: row sums), then the
    /// greatest or the least of them.
    LineSums(usize, Extreme),
    /// From the singular values (feature `solver`): the greatest (`ord=2`), the least
    /// (`ord=-2`), their sum (`'nuc'`).
    #[cfg(feature = "solver")]
    Singular(SingularNorm),
}

/// Which function of the singular values a matrix norm is.
#[cfg(feature = "solver")]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum SingularNorm {
    Greatest,
    Least,
    Sum,
}

/// Which of a norm's line sums is taken.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Extreme {
    Greatest,
    Least,
}

fn norm_kind(ndim: usize, ord: Norm) -> Result<NormKind> {
    // NumPy compares `ord` with `inf`, so a numeric infinity is the infinity norm.
    let ord = match ord {
        Norm::Ord(p) if p == f64::INFINITY => Norm::Inf,
        Norm::Ord(p) if p == f64::NEG_INFINITY => Norm::NegInf,
        ord => ord,
    };
    match (ndim, ord) {
        (_, Norm::Default) | (1, Norm::Ord(2.0)) | (2, Norm::Fro) => Ok(NormKind::Euclidean),
        (1, Norm::Ord(1.0)) => Ok(NormKind::SumAbs),
        (1, Norm::Ord(0.0)) => Ok(NormKind::Nonzero),
        (1, Norm::Ord(p)) => Ok(NormKind::Power(p)),
        (1, Norm::Inf) => Ok(NormKind::MaxAbs),
        (1, Norm::NegInf) => Ok(NormKind::MinAbs),
        (1, Norm::Fro | Norm::Nuc) => Err(Error::InvalidValue(format!(
            "linalg_norm: {ord:?} is a matrix norm; the array is 1-D"
        ))),
        (2, Norm::Ord(1.0)) => Ok(NormKind::LineSums(0, Extreme::Greatest)),
        (2, Norm::Ord(-1.0)) => Ok(NormKind::LineSums(0, Extreme::Least)),
        (2, Norm::Inf) => Ok(NormKind::LineSums(1, Extreme::Greatest)),
        (2, Norm::NegInf) => Ok(NormKind::LineSums(1, Extreme::Least)),
        #[cfg(feature = "solver")]
        (2, Norm::Ord(2.0)) => Ok(NormKind::Singular(SingularNorm::Greatest)),
        #[cfg(feature = "solver")]
        (2, Norm::Ord(-2.0)) => Ok(NormKind::Singular(SingularNorm::Least)),
        #[cfg(feature = "solver")]
        (2, Norm::Nuc) => Ok(NormKind::Singular(SingularNorm::Sum)),
        #[cfg(not(feature = "solver"))]
        (2, Norm::Nuc | Norm::Ord(2.0) | Norm::Ord(-2.0)) => Err(Error::NotSupported(format!(
            "linalg_norm: ord {ord:?} of a matrix needs its singular values (feature `solver`)"
        ))),
        (2, _) => Err(Error::InvalidValue(format!(
            "linalg_norm: invalid norm order {ord:?} for matrices (Default, Fro, Nuc, 1, -1, 2, -2, Inf, NegInf)"
        ))),
        _ => Err(Error::InvalidValue(format!(
            "linalg_norm: ord {ord:?} needs a 1-D or 2-D array; it has {ndim} dimensions (only Default takes any)"
        ))),
    }
}

/// NumPy's `dot` result shape: `a.shape[:-1] + b.shape[:-2] + b.shape[-1:]`, contracting the
/// last axis of `a` with the second-to-last of `b` (the only one of a 1-D `b`).
fn dot_shape(a: &[usize], b: &[usize]) -> Result<Vec<usize>> {
    if a.is_empty() || b.is_empty() {
        return Ok(if a.is_empty() { b.to_vec() } else { a.to_vec() });
    }
    let b_axis = b.len().saturating_sub(2);
    let (k, k2) = (a[a.len() - 1], b[b_axis]);
    if k != k2 {
        return Err(Error::InvalidValue(format!(
            "dot: shapes {a:?} and {b:?} not aligned: {k} (dim {}) != {k2} (dim {b_axis})",
            a.len() - 1
        )));
    }
    let mut shape = a[..a.len() - 1].to_vec();
    shape.extend_from_slice(&b[..b_axis]);
    if b.len() >= 2 {
        shape.push(b[b.len() - 1]);
    }
    Ok(shape)
}

/// NumPy's `inner` result shape: `a.shape[:-1] + b.shape[:-1]`, last axes contracted.
fn inner_shape(a: &[usize], b: &[usize]) -> Result<Vec<usize>> {
    if a.is_empty() || b.is_empty() {
        return Ok(if a.is_empty() { b.to_vec() } else { a.to_vec() });
    }
    let (k, k2) = (a[a.len() - 1], b[b.len() - 1]);
    if k != k2 {
        return Err(Error::InvalidValue(format!(
            "inner: shapes {a:?} and {b:?}: the last dimensions differ ({k} and {k2})"
        )));
    }
    Ok([&a[..a.len() - 1], &b[..b.len() - 1]].concat())
}

/// The diagonal of the first two axes as a view's shape and strides: its length first, then
/// the other axes (NumPy's `diagonal` puts it last; `trace` sums it away either way).
fn diagonal(shape: &[usize], strides: &[isize]) -> Result<(Vec<usize>, Vec<isize>)> {
    if shape.len() < 2 {
        return Err(Error::InvalidValue(format!(
            "trace: the array must have at least two dimensions; its shape is {shape:?}"
        )));
    }
    let mut diagonal_shape = vec![shape[0].min(shape[1])];
    diagonal_shape.extend_from_slice(&shape[2..]);
    let mut diagonal_strides = vec![strides[0] + strides[1]];
    diagonal_strides.extend_from_slice(&strides[2..]);
    Ok((diagonal_shape, diagonal_strides))
}

impl<T: Element> DeviceArray<T> {
    /// The sum of the diagonal of the first two axes, NumPy's `trace()`: a 0-d array for a
    /// matrix, the array of the other axes' shape for a stack, in [`Element::Sum`]. A strided
    /// view of the diagonal reduced by [`sum_axes`](Self::sum_axes): no copy.
    /// [`Error::InvalidValue`] under two dimensions.
    pub fn trace(&self) -> Result<DeviceArray<T::Sum>> {
        let (shape, strides) = diagonal(self.shape(), self.strides())?;
        self.view(*self.ptr_ref(), shape, strides).sum_axes([0], false)
    }

    /// Another view of the same elements.
    fn to_view(&self) -> DeviceArray<T> {
        self.view(*self.ptr_ref(), self.shape().to_vec(), self.strides().to_vec())
    }
}

impl<T: MatmulElement> DeviceArray<T> {
    /// NumPy's `dot`: the inner product of two vectors (cuBLAS `dot`, a 0-d array), the matrix
    /// product of matrices and of a matrix and a vector ([`matmul`](Self::matmul)), the product
    /// by a 0-d operand, and for N-D operands the sum over the last axis of `self` and the
    /// second-to-last of `other` (result shape `self.shape[:-1] + other.shape[:-2] +
    /// other.shape[-1:]`, one matrix product after a copy of `other` with that axis first).
    ///
    /// Axes that do not align are [`Error::InvalidValue`] naming both shapes.
    pub fn dot(&self, other: &DeviceArray<T>) -> Result<DeviceArray<T>> {
        let shape = dot_shape(self.shape(), other.shape())?;
        match (self.ndim(), other.ndim()) {
            (0, _) | (_, 0) => scaled(self, other),
            (1, 1) => vector_dot(self, other),
            (_, 1) | (1 | 2, 2) => self.matmul(other),
            (_, nd) => {
                // other with the contracted axis first, as a k x (the rest) matrix.
                let mut axes = vec![nd - 2];
                axes.extend(0..nd - 2);
                axes.push(nd - 1);
                let k = other.shape()[nd - 2];
                let q = shape_len_without(other.shape(), nd - 2);
                let p = shape_len_without(self.shape(), self.ndim() - 1);
                let right = other.permute(&axes)?.to_contiguous()?.reshape([k, q])?;
                let left = self.to_contiguous()?.reshape([p, k])?;
                left.matmul(&right)?.reshape(shape)
            }
        }
    }

    /// NumPy's `vdot`: both arrays flattened (row-major), then their inner product with this
    /// one conjugated (complex types), a 0-d array (cuBLAS `dotc` for complex types, `dot` for
    /// real ones). [`Error::InvalidValue`] when their sizes differ.
    pub fn vdot(&self, other: &DeviceArray<T>) -> Result<DeviceArray<T>> {
        if self.len() != other.len() {
            return Err(Error::InvalidValue(format!(
                "vdot: the arrays have {} and {} elements (shapes {:?} and {:?})",
                self.len(),
                other.len(),
                self.shape(),
                other.shape()
            )));
        }
        vector_dot_of(T::DTYPE.is_complex(), &flat(self)?, &flat(other)?)
    }

    /// NumPy's `inner`: sums over the last axes of both, of shape `self.shape[:-1] +
    /// other.shape[:-1]` (one matrix product, `other` passed transposed), the inner product of
    /// two vectors, the product by a 0-d operand. [`Error::InvalidValue`] when the last
    /// dimensions differ.
    pub fn inner(&self, other: &DeviceArray<T>) -> Result<DeviceArray<T>> {
        let shape = inner_shape(self.shape(), other.shape())?;
        match (self.ndim(), other.ndim()) {
            (0, _) | (_, 0) => scaled(self, other),
            (1, 1) => vector_dot(self, other),
            _ => {
                let left = rows(self)?;
                let right = rows(other)?;
                left.matmul(&right.transpose())?.reshape(shape)
            }
        }
    }

    /// NumPy's `outer`: both arrays flattened, `out[i, j] = self[i] * other[j]`, of shape
    /// `(self.len(), other.len())`: a cuBLAS product of a column and a row (one multiplication
    /// per element, as exact as NumPy's).
    pub fn outer(&self, other: &DeviceArray<T>) -> Result<DeviceArray<T>> {
        flat(self)?.expand_dims(1)?.matmul(&flat(other)?.expand_dims(0)?)
    }
}

/// The element type of a norm of `T`, as NumPy's `linalg.norm`: a float type's own (`f16` of
/// `f16`), a complex type's part type (`f32` of `Complex<f32>`), `f64` of `Bool` and the
/// integers (NumPy computes their norms in `float64`).
pub type NormOf<T> = <<T as NormInput>::Computed as Scalars>::Real;

/// The element type of a norm ([`NormOf`] of a [`MatmulElement`]): `f32`, `f64`, `f16` and
/// `bf16`, real, their sums of their own type, taken by cuBLAS `nrm2`.
pub trait NormElement: Scalars<Real = Self> + Element<Sum = Self> + cuda_libs::blas::RealElement {}

impl NormElement for f32 {}
impl NormElement for f64 {}
impl NormElement for half::f16 {}
impl NormElement for half::bf16 {}

/// An element type whose norms [`linalg_norm`](DeviceArray::linalg_norm) and its kin take, with
/// the type they are computed in ([`Computed`](Self::Computed)): the float and complex types
/// as they are, `Bool` and the integers converted to `f64` first, as NumPy 2 does.
pub trait NormInput: Scalars {
    /// The type the norm is computed in; its real type is the norm's, [`NormOf`].
    type Computed: MatmulElement;
}

macro_rules! norm_inputs {
    ($($ty:ty => $computed:ty),* $(,)?) => {
        $(impl NormInput for $ty {
            type Computed = $computed;
        })*
    };
}

norm_inputs! {
    f32 => f32, f64 => f64, half::f16 => half::f16, half::bf16 => half::bf16,
    num_complex::Complex<f32> => num_complex::Complex<f32>,
    num_complex::Complex<f64> => num_complex::Complex<f64>,
    Bool => f64, i8 => f64, i16 => f64, i32 => f64, i64 => f64,
    u8 => f64, u16 => f64, u32 => f64, u64 => f64,
}

/// `x` in the type its norm is computed in: a view of it when that is its own type, else a
/// converted copy (`f64` of the integers).
fn computed<T: NormInput>(x: &DeviceArray<T>) -> Result<DeviceArray<T::Computed>> {
    if T::DTYPE == <T::Computed as Element>::DTYPE {
        // The same element type: a view of the same memory with the same layout.
        return Ok(x.view_as(*x.ptr_ref(), x.shape().to_vec(), x.strides().to_vec()));
    }
    x.astype::<T::Computed>().eval()
}

impl<T: NormInput> DeviceArray<T> {
    /// NumPy's `linalg.norm(x, ord)` (`axis=None`: see [`linalg_norm_axes`](Self::linalg_norm_axes)
    /// for an axis), a 0-d array in [`NormOf<T>`] (real: `f32` of
    /// `Complex<f32>`, `f64` of the integers and `Bool`, whose norms are computed in `f64`): the
    /// 2-norm of a vector, the Frobenius norm of a matrix and the default
    /// norm of any array (its elements flattened) through cuBLAS `nrm2` (scaled, so no overflow
    /// in the squares; a complex array as the vector of its parts, whose 2-norm is the same);
    /// for vectors `ord=1` as the sum of `|x|`, `Inf`/`NegInf` as the greatest/least `|x|`,
    /// `ord=0` as the count of nonzero elements and any other `p` as `(sum |x|^p)^(1/p)`; for
    /// matrices `1`/`-1` as the greatest/least column sum of `|x|` and `Inf`/`NegInf` as the
    /// greatest/least row sum (reductions of an `abs` expression).
    ///
    /// The matrix 2-norm, -2-norm and nuclear norm are the greatest, the least and the sum of
    /// the singular values (`svdvals`, feature `solver`; without it, and for 16-bit floats,
    /// [`Error::NotSupported`]); an order NumPy refuses (another matrix order, a matrix norm
    /// of a vector, an order other than `Default` beyond two dimensions) is
    /// [`Error::InvalidValue`]. `Inf`/`NegInf` of an empty vector are errors, as in NumPy.
    pub fn linalg_norm(&self, ord: Norm) -> Result<DeviceArray<NormOf<T>>> {
        norm(&computed(self)?, ord)
    }

    /// NumPy 2's `linalg.vector_norm(x, ord=ord)` (`axis=None`, no `keepdims`: see
    /// [`vector_norm_axes`](Self::vector_norm_axes)): the vector norm of the elements
    /// flattened, a 0-d array in [`NormOf<T>`]. `Default` is the 2-norm; any numeric `ord` and
    /// `Inf`/`NegInf` as in [`linalg_norm`](Self::linalg_norm) of a vector; `Fro` and `Nuc`
    /// are [`Error::InvalidValue`].
    pub fn vector_norm(&self, ord: Norm) -> Result<DeviceArray<NormOf<T>>> {
        norm(&flat(&computed(self)?)?, ord)
    }

    /// NumPy 2's `linalg.matrix_norm(x, ord=ord)` (`keepdims=False`: see
    /// [`matrix_norm_keepdims`](Self::matrix_norm_keepdims)): the matrix norm of each
    /// matrix of the stack `(..., m, n)`, of shape `self.shape[:-2]`, in [`NormOf<T>`].
    /// `Default`/`Fro` is the square root of the sum of `|x|^2` (NumPy's formula, unscaled),
    /// `1`/`-1` and `Inf`/`NegInf` the greatest/least column and row sums of `|x|`, `2`/`-2`
    /// and `Nuc` from the singular values (feature `solver`). Under two dimensions, or another
    /// order, is [`Error::InvalidValue`].
    pub fn matrix_norm(&self, ord: Norm) -> Result<DeviceArray<NormOf<T>>> {
        self.matrix_norms(ord, false)
    }

    /// NumPy 2's `linalg.matrix_norm(x, keepdims=True, ord=ord)`: [`matrix_norm`](Self::matrix_norm)
    /// of shape `self.shape[:-2] + (1, 1)`.
    pub fn matrix_norm_keepdims(&self, ord: Norm) -> Result<DeviceArray<NormOf<T>>> {
        self.matrix_norms(ord, true)
    }

    /// The matrix norms over the last two axes, kept as length 1 with `keepdims`.
    fn matrix_norms(&self, ord: Norm, keepdims: bool) -> Result<DeviceArray<NormOf<T>>> {
        if self.ndim() < 2 {
            return Err(Error::InvalidValue(format!(
                "matrix_norm: the array must have at least two dimensions; its shape is {:?}",
                self.shape()
            )));
        }
        self.linalg_norm_axes(ord, [-2isize, -1], keepdims)
    }
}

/// [`DeviceArray::linalg_norm`] of an array of a type a norm is computed in.
fn norm<T: MatmulElement>(x: &DeviceArray<T>, ord: Norm) -> Result<DeviceArray<T::Real>> {
    match norm_kind(x.ndim(), ord)? {
        NormKind::Euclidean => euclidean(&parts(&flat(x)?)?),
        NormKind::SumAbs => magnitude(x).eval()?.sum(),
        NormKind::MaxAbs => magnitude(x).eval()?.max(),
        NormKind::MinAbs => magnitude(x).eval()?.min(),
        NormKind::Nonzero => x.count_nonzero()?.astype::<T::Real>().eval(),
        NormKind::Power(p) => {
            let sum = power(magnitude(x), p).sum()?;
            power((&sum).into_expr(), 1.0 / p).eval()
        }
        #[cfg(feature = "solver")]
        NormKind::Singular(which) => {
            let values = singular_values(x)?;
            match which {
                SingularNorm::Greatest => values.max(),
                SingularNorm::Least => values.min(),
                SingularNorm::Sum => values.sum(),
            }
        }
        NormKind::LineSums(axis, extreme) => {
            let sums = magnitude(x).sum_axes([axis], false)?;
            match extreme {
                Extreme::Greatest => sums.max(),
                Extreme::Least => sums.min(),
            }
        }
    }
}

/// The singular values of a stack, `(..., min(m, n))`, in `T`'s real type; 16-bit floats are
/// [`Error::NotSupported`] (NumPy's `linalg` refuses them).
#[cfg(feature = "solver")]
fn singular_values<T: Scalars>(a: &DeviceArray<T>) -> Result<DeviceArray<T::Real>> {
    singular::singular_values_as_real(a).unwrap_or_else(|| {
        Err(Error::NotSupported(format!(
            "linalg_norm: ord 2, -2 and 'nuc' of {} (NumPy's linalg refuses 16-bit floats)",
            T::DTYPE
        )))
    })
}

/// `|x|` in `T`'s real type (the modulus of a complex `x`).
fn magnitude<T: Scalars>(x: &DeviceArray<T>) -> Expr<'_, T::Real> {
    unary(UnaryOp::Abs, x.into_expr())
}

/// `x^p` in `x`'s type, `p` rounded to it as NumPy's weak `x ** p` does.
fn power<T: Scalars>(x: Expr<'_, T>, p: f64) -> Expr<'_, T> {
    binary(BinaryOp::Pow, x, Expr::<T>::scalar(T::DTYPE, ScalarValue::Float(p)))
}

/// A vector of a complex type as the vector of its parts (real, imaginary, real, ...: the same
/// 2-norm), a compact copy first unless it is contiguous; a vector of a real type as it is.
fn parts<T: Scalars>(x: &DeviceArray<T>) -> Result<DeviceArray<T::Real>> {
    if !T::DTYPE.is_complex() {
        return Ok(x.view_as(*x.ptr_ref(), x.shape().to_vec(), x.strides().to_vec()));
    }
    let x = x.to_contiguous()?;
    Ok(x.view_as(*x.ptr_ref(), vec![2 * x.len()], vec![1]))
}

/// The product of `shape` without axis `axis`.
fn shape_len_without(shape: &[usize], axis: usize) -> usize {
    shape
        .iter()
        .enumerate()
        .filter(|&(i, _)| i != axis)
        .map(|(_, &d)| d)
        .product()
}

/// The array as one row-major vector: a view when 1-D or contiguous, else a compact copy.
fn flat<T: Element>(array: &DeviceArray<T>) -> Result<DeviceArray<T>> {
    match array.ndim() {
        1 => Ok(array.to_view()),
        _ => array.to_contiguous()?.reshape([array.len()]),
    }
}

/// The array as a matrix of its last axis's rows: a view when 2-D, else contiguous and reshaped.
fn rows<T: Element>(array: &DeviceArray<T>) -> Result<DeviceArray<T>> {
    let cols = array.shape()[array.ndim() - 1];
    match array.ndim() {
        2 => Ok(array.to_view()),
        nd => array
            .to_contiguous()?
            .reshape([shape_len_without(array.shape(), nd - 1), cols]),
    }
}

/// The product by a 0-d operand, element by element: the column of one operand's elements
/// times the row of the other's (a cuBLAS product with `k = 1`), in the other's shape.
fn scaled<T: MatmulElement>(a: &DeviceArray<T>, b: &DeviceArray<T>) -> Result<DeviceArray<T>> {
    let shape = if a.ndim() == 0 { b.shape() } else { a.shape() };
    a.outer(b)?.reshape(shape.to_vec())
}

/// A vector as cuBLAS takes it: its increment, or a compact copy where its stride is 0 or
/// negative (a reversed view: the view's first element is not where cuBLAS starts).
fn increment<T: Element>(vector: &DeviceArray<T>) -> Result<(usize, DeviceArray<T>)> {
    match (vector.len(), usize::try_from(vector.strides()[0])) {
        (0 | 1, _) => Ok((1, vector.to_view())),
        (_, Ok(0) | Err(_)) => Ok((1, vector.try_clone()?)),
        (_, Ok(stride)) => Ok((stride, vector.to_view())),
    }
}

/// The 0-d array of `x . y` for vectors of equal length, queued through cuBLAS `dot`.
fn vector_dot<T: MatmulElement>(x: &DeviceArray<T>, y: &DeviceArray<T>) -> Result<DeviceArray<T>> {
    vector_dot_of(false, x, y)
}

/// [`vector_dot`], with `x` conjugated when `conjugate` (cuBLAS `dotc`).
fn vector_dot_of<T: MatmulElement>(conjugate: bool, x: &DeviceArray<T>, y: &DeviceArray<T>) -> Result<DeviceArray<T>> {
    if x.len() != y.len() {
        return Err(Error::InvalidValue(format!(
            "dot: shapes {:?} and {:?} not aligned: {} (dim 0) != {} (dim 0)",
            x.shape(),
            y.shape(),
            x.len(),
            y.len()
        )));
    }
    same_context(x, y, "dot")?;
    let stream = x.stream().clone();
    if x.is_empty() {
        return DeviceArray::zeros(&stream, [0usize; 0]);
    }
    let (incx, x) = increment(x)?;
    let (incy, y) = increment(y)?;
    let mut out = DeviceArray::<T>::empty(&stream, [0usize; 0])?;
    let handle = handles::blas(&stream)?;
    let mut blas = handle.lock().unwrap_or_else(PoisonError::into_inner);
    match conjugate {
        true => blas.dotc(x.len(), &LaidOut::new(&x), incx, &LaidOut::new(&y), incy, &mut out)?,
        false => blas.dot(x.len(), &LaidOut::new(&x), incx, &LaidOut::new(&y), incy, &mut out)?,
    }
    Ok(out)
}

/// The 0-d array of `||x||_2` of a vector, queued through cuBLAS `nrm2`.
fn euclidean<T: NormElement>(x: &DeviceArray<T>) -> Result<DeviceArray<T>> {
    let stream = x.stream().clone();
    if x.is_empty() {
        return DeviceArray::zeros(&stream, [0usize; 0]);
    }
    let (incx, x) = increment(x)?;
    let mut out = DeviceArray::<T>::empty(&stream, [0usize; 0])?;
    let handle = handles::blas(&stream)?;
    let mut blas = handle.lock().unwrap_or_else(PoisonError::into_inner);
    blas.nrm2(x.len(), &LaidOut::new(&x), incx, &mut out)?;
    Ok(out)
}

/// [`Error`] unless both arrays belong to one context.
fn same_context<T: Element>(a: &DeviceArray<T>, b: &DeviceArray<T>, routine: &'static str) -> Result<()> {
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

    #[test]
    fn dot_and_inner_follow_numpy_shapes() {
        assert_eq!(dot_shape(&[3], &[3]).unwrap(), [0usize; 0]);
        assert_eq!(dot_shape(&[2, 3], &[3]).unwrap(), [2]);
        assert_eq!(dot_shape(&[3], &[3, 4]).unwrap(), [4]);
        assert_eq!(dot_shape(&[2, 3], &[3, 4]).unwrap(), [2, 4]);
        assert_eq!(dot_shape(&[5, 2, 3], &[6, 3, 4]).unwrap(), [5, 2, 6, 4]);
        assert_eq!(dot_shape(&[], &[6, 3]).unwrap(), [6, 3]);
        assert_eq!(dot_shape(&[2, 3], &[]).unwrap(), [2, 3]);
        let message = match dot_shape(&[2, 3], &[4, 5]) {
            Err(Error::InvalidValue(message)) => message,
            other => panic!("{other:?}"),
        };
        assert!(
            message.contains("[2, 3] and [4, 5] not aligned: 3 (dim 1) != 4 (dim 0)"),
            "{message}"
        );
        assert!(matches!(dot_shape(&[3], &[4]), Err(Error::InvalidValue(_))));
        assert_eq!(inner_shape(&[2, 3], &[4, 3]).unwrap(), [2, 4]);
        assert_eq!(inner_shape(&[5, 2, 3], &[3]).unwrap(), [5, 2]);
        assert_eq!(inner_shape(&[3], &[3]).unwrap(), [0usize; 0]);
        assert!(matches!(inner_shape(&[2, 3], &[3, 2]), Err(Error::InvalidValue(_))));
    }

    #[test]
    fn the_diagonal_is_a_strided_view() {
        assert_eq!(diagonal(&[3, 4], &[4, 1]).unwrap(), (vec![3], vec![5]));
        // A transposed 5 x 2 and a stack of matrices in the first two axes.
        assert_eq!(diagonal(&[5, 2], &[1, 5]).unwrap(), (vec![2], vec![6]));
        assert_eq!(diagonal(&[2, 2, 7], &[14, 7, 1]).unwrap(), (vec![2, 7], vec![21, 1]));
        assert!(matches!(diagonal(&[3], &[1]), Err(Error::InvalidValue(_))));
    }

    #[test]
    fn norm_orders_are_checked_against_dimensions() {
        assert_eq!(norm_kind(1, Norm::Default).unwrap(), NormKind::Euclidean);
        assert_eq!(norm_kind(1, Norm::Ord(2.0)).unwrap(), NormKind::Euclidean);
        assert_eq!(norm_kind(2, Norm::Fro).unwrap(), NormKind::Euclidean);
        assert_eq!(norm_kind(2, Norm::Default).unwrap(), NormKind::Euclidean);
        assert_eq!(norm_kind(1, Norm::Ord(1.0)).unwrap(), NormKind::SumAbs);
        assert_eq!(norm_kind(1, Norm::Inf).unwrap(), NormKind::MaxAbs);
        assert_eq!(norm_kind(1, Norm::NegInf).unwrap(), NormKind::MinAbs);
        #[cfg(not(feature = "solver"))]
        {
            assert!(matches!(norm_kind(2, Norm::Nuc), Err(Error::NotSupported(_))));
            assert!(matches!(norm_kind(2, Norm::Ord(2.0)), Err(Error::NotSupported(_))));
            assert!(matches!(norm_kind(2, Norm::Ord(-2.0)), Err(Error::NotSupported(_))));
        }
        #[cfg(feature = "solver")]
        {
            assert_eq!(norm_kind(2, Norm::Nuc).unwrap(), NormKind::Singular(SingularNorm::Sum));
            assert_eq!(
                norm_kind(2, Norm::Ord(2.0)).unwrap(),
                NormKind::Singular(SingularNorm::Greatest)
            );
            assert_eq!(
                norm_kind(2, Norm::Ord(-2.0)).unwrap(),
                NormKind::Singular(SingularNorm::Least)
            );
        }
        assert!(matches!(norm_kind(1, Norm::Fro), Err(Error::InvalidValue(_))));
        // Vector p-norms need no solver: any p, 0 counting nonzeros, infinities as Inf/NegInf.
        assert_eq!(norm_kind(1, Norm::Ord(3.0)).unwrap(), NormKind::Power(3.0));
        assert_eq!(norm_kind(1, Norm::Ord(-0.5)).unwrap(), NormKind::Power(-0.5));
        assert_eq!(norm_kind(1, Norm::Ord(0.0)).unwrap(), NormKind::Nonzero);
        assert_eq!(norm_kind(1, Norm::Ord(f64::INFINITY)).unwrap(), NormKind::MaxAbs);
        assert_eq!(norm_kind(1, Norm::Ord(f64::NEG_INFINITY)).unwrap(), NormKind::MinAbs);
        // Matrix 1- and inf-norms: column and row sums.
        let (greatest, least) = (Extreme::Greatest, Extreme::Least);
        assert_eq!(norm_kind(2, Norm::Ord(1.0)).unwrap(), NormKind::LineSums(0, greatest));
        assert_eq!(norm_kind(2, Norm::Ord(-1.0)).unwrap(), NormKind::LineSums(0, least));
        assert_eq!(norm_kind(2, Norm::Inf).unwrap(), NormKind::LineSums(1, greatest));
        assert_eq!(norm_kind(2, Norm::NegInf).unwrap(), NormKind::LineSums(1, least));
        assert_eq!(
            norm_kind(2, Norm::Ord(f64::INFINITY)).unwrap(),
            NormKind::LineSums(1, greatest)
        );
        // NumPy refuses other matrix orders (ValueError).
        assert!(matches!(norm_kind(2, Norm::Ord(3.0)), Err(Error::InvalidValue(_))));
        assert!(matches!(norm_kind(2, Norm::Ord(0.0)), Err(Error::InvalidValue(_))));
        // The default norm flattens any array, as NumPy's; other orders need 1-D or 2-D.
        assert_eq!(norm_kind(3, Norm::Default).unwrap(), NormKind::Euclidean);
        assert_eq!(norm_kind(0, Norm::Default).unwrap(), NormKind::Euclidean);
        assert!(matches!(norm_kind(3, Norm::Fro), Err(Error::InvalidValue(_))));
        assert!(matches!(norm_kind(3, Norm::Ord(1.0)), Err(Error::InvalidValue(_))));
        assert!(matches!(norm_kind(0, Norm::Inf), Err(Error::InvalidValue(_))));
    }
}
