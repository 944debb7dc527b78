//! NumPy's `linalg.norm(x, ord, axis, keepdims)` with its `axis`: vector norms along one axis
//! and matrix norms over two, each a reduction of `|x|` along those axes (the matrix 2-norm,
//! -2-norm and nuclear norm from the singular values, the two axes moved last); and NumPy 2's
//! `linalg.vector_norm` with its `axis` (any number of axes) and `keepdims`.

use super::{
    computed, flat, magnitude, norm, norm_kind, power, Extreme, MatmulElement, Norm, NormInput, NormKind, NormOf,
};
#[cfg(feature = "solver")]
use super::{singular_values, SingularNorm};
use crate::array::axis::Axes;
use crate::array::device_array::DeviceArray;
use crate::array::promotion::Scalars;
use crate::array::routines::math::{binary, unary, BinaryOp, Expr, ExprOps, IntoExpr, UnaryOp};
use crate::error::{Error, Result};

impl<T: NormInput> DeviceArray<T> {
    /// NumPy's `linalg.norm(x, ord, axis, keepdims)`, in [`NormOf<T>`]: [`Axes::ALL`] is
    /// [`linalg_norm`](Self::linalg_norm) (`axis=None`); one axis gives the vector norm of
    /// each line along it (the 2-norm as `sqrt(sum |x|^2)`, NumPy's formula, unscaled); two
    /// axes `(rows, cols)` the matrix norm of each matrix they span (`1`/`-1` the
    /// greatest/least sum along `rows`, `Inf`/`NegInf` along `cols`; `2`, `-2` and `Nuc` from
    /// the singular values, feature `solver`). The reduced axes are dropped, or kept as length
    /// 1 with `keepdims`. No axis, more than two, an axis named twice, or an order NumPy
    /// refuses for vectors (`Fro`, `Nuc`) or matrices is [`Error::InvalidValue`]; an axis out
    /// of range is [`Error::Axis`].
    ///
    /// ```no_run
    /// use cuda_core::{Device, DeviceArray, Norm};
    ///
    /// # fn main() -> cuda_core::Result<()> {
    /// let stream = Device::new(0)?.create_stream()?;
    /// let x = DeviceArray::from_slice(&stream, &[3.0f64, 0.0, 4.0, -1.0])?.reshape([2, 2])?;
    /// assert_eq!(x.linalg_norm_axes(Norm::Default, 0, false)?.to_vec()?, [5.0, 1.0]);
    /// assert_eq!(x.linalg_norm_axes(Norm::Inf, [0, 1], true)?.shape(), [1, 1]);
    /// # Ok(())
    /// # }
    /// ```
    pub fn linalg_norm_axes(&self, ord: Norm, axis: impl Into<Axes>, keepdims: bool) -> Result<DeviceArray<NormOf<T>>> {
        let axes = axis.into();
        let reduced = axes.indices(self.ndim())?;
        let x = computed(self)?;
        let norm = match (axes.is_all(), &reduced[..]) {
            (true, _) => norm(&x, ord)?,
            (false, &[axis]) => vector_norms(&x, ord, &[axis])?,
            (false, &[rows, cols]) => matrix_norms(&x, ord, rows, cols)?,
            (false, _) => {
                return Err(Error::InvalidValue(format!(
                    "linalg_norm: {} axes given; a norm takes one (vectors) or two (matrices)",
                    reduced.len()
                )))
            }
        };
        match keepdims {
            true => norm.reshape(kept_shape(self.shape(), &reduced)),
            false => Ok(norm),
        }
    }

    /// NumPy 2's `linalg.vector_norm(x, axis, keepdims, ord)`, in [`NormOf<T>`]: the vector
    /// norm of the elements along the axes in `axis`, each line (or, for several axes, each
    /// set of elements they span) taken as one vector; [`Axes::ALL`] is every element
    /// ([`vector_norm`](Self::vector_norm), through cuBLAS `nrm2`), and no axis
    /// ([`Axes::EMPTY`]) the norm of each element alone, `|x|` (`ord=0`: `x != 0`). Orders as
    /// in [`linalg_norm`](Self::linalg_norm) of a vector; `Fro` and `Nuc` are
    /// [`Error::InvalidValue`], as is an axis named twice; an axis out of range is
    /// [`Error::Axis`]. The reduced axes are dropped, or kept as length 1 with `keepdims`.
    ///
    /// ```no_run
    /// use cuda_core::{Device, DeviceArray, Norm};
    ///
    /// # fn main() -> cuda_core::Result<()> {
    /// let stream = Device::new(0)?.create_stream()?;
    /// let x = DeviceArray::from_slice(&stream, &[3i32, 0, 4, -1, 2, -2])?.reshape([1, 2, 3])?;
    /// // Integers: in f64, as NumPy.
    /// assert_eq!(x.vector_norm_axes(Norm::Ord(1.0), [2, 0], true)?.to_vec()?, [7.0f64, 5.0]);
    /// # Ok(())
    /// # }
    /// ```
    pub fn vector_norm_axes(&self, ord: Norm, axis: impl Into<Axes>, keepdims: bool) -> Result<DeviceArray<NormOf<T>>> {
        let axes = axis.into();
        let reduced = axes.indices(self.ndim())?;
        let x = computed(self)?;
        let norm = match axes.is_all() {
            true => norm(&flat(&x)?, ord)?,
            false => vector_norms(&x, ord, &reduced)?,
        };
        match keepdims {
            true => norm.reshape(kept_shape(self.shape(), &reduced)),
            false => norm.reshape(dropped_shape(self.shape(), &reduced)),
        }
    }
}

/// `shape` without the axes in `reduced`.
fn dropped_shape(shape: &[usize], reduced: &[usize]) -> Vec<usize> {
    (0..shape.len())
        .filter(|axis| !reduced.contains(axis))
        .map(|axis| shape[axis])
        .collect()
}

/// `shape` with the axes in `reduced` of length 1 (NumPy's `keepdims`).
fn kept_shape(shape: &[usize], reduced: &[usize]) -> Vec<usize> {
    let mut kept = shape.to_vec();
    for &axis in reduced {
        kept[axis] = 1;
    }
    kept
}

/// The vector norm of the elements of `x` along the axes `axes` (distinct), for each index of
/// the other axes.
fn vector_norms<T: MatmulElement>(x: &DeviceArray<T>, ord: Norm, axes: &[usize]) -> Result<DeviceArray<T::Real>> {
    let axis = axes.to_vec();
    match norm_kind(1, ord)? {
        NormKind::Euclidean => root_of(&squared_magnitude(x).sum_axes(axis.clone(), false)?),
        NormKind::SumAbs => magnitude(x).sum_axes(axis.clone(), false),
        NormKind::MaxAbs => magnitude(x).max_axes(axis.clone(), false),
        NormKind::MinAbs => magnitude(x).min_axes(axis.clone(), false),
        // NumPy counts `x != 0` (NaN included) in the norm's type.
        NormKind::Nonzero => ExprOps::ne(magnitude(x), 0.0)
            .astype::<T::Real>()
            .sum_axes(axis.clone(), false),
        NormKind::Power(p) => {
            let sum = power(magnitude(x), p).sum_axes(axis.clone(), false)?;
            power((&sum).into_expr(), 1.0 / p).eval()
        }
        kind => Err(Error::InvalidValue(format!(
            "linalg_norm: {kind:?} is not a vector norm"
        ))),
    }
}

/// `|x|^2` as NumPy's 2-norms square it, `(conj(x) * x).real`: `x * x` of a real type,
/// `re * re + im * im` of a complex one (`pow(x, 2)` is not exact on the GPU).
fn squared_magnitude<T: Scalars>(x: &DeviceArray<T>) -> Expr<'_, T::Real> {
    if !T::DTYPE.is_complex() {
        return binary(BinaryOp::Mul, magnitude(x), magnitude(x));
    }
    let square = |part: UnaryOp| {
        let value: Expr<'_, T::Real> = unary(part, x.into_expr());
        binary::<_, _, T::Real>(BinaryOp::Mul, value.duplicate(), value)
    };
    binary(BinaryOp::Add, square(UnaryOp::Real), square(UnaryOp::Imag))
}

/// The correctly rounded square root of each sum of squares, NumPy's `sqrt` (`pow(s, 0.5)` is
/// not: over no axis it made `|3|` `2.9999999999999996`, where `sqrt(3 * 3)` is exactly 3).
fn root_of<R: Scalars>(squares: &DeviceArray<R>) -> Result<DeviceArray<R>> {
    unary::<R, R>(UnaryOp::Sqrt, squares.into_expr()).eval()
}

/// The matrix norm of each matrix of `x` over the axes `rows` and `cols` (distinct), of the
/// shape of `x` without them.
fn matrix_norms<T: MatmulElement>(
    x: &DeviceArray<T>,
    ord: Norm,
    rows: usize,
    cols: usize,
) -> Result<DeviceArray<T::Real>> {
    let rest: Vec<usize> = (0..x.ndim())
        .filter(|&a| a != rows && a != cols)
        .map(|a| x.shape()[a])
        .collect();
    let extreme = |lines: DeviceArray<T::Real>, across: usize, which: Extreme| match which {
        Extreme::Greatest => lines.max_axes(across, true),
        Extreme::Least => lines.min_axes(across, true),
    };
    let norms = match norm_kind(2, ord)? {
        // Line sums along one axis kept as length 1, so the other keeps its index.
        NormKind::LineSums(0, which) => extreme(magnitude(x).sum_axes(rows, true)?, cols, which)?,
        NormKind::LineSums(_, which) => extreme(magnitude(x).sum_axes(cols, true)?, rows, which)?,
        #[cfg(feature = "solver")]
        NormKind::Singular(which) => {
            let moved = x.moveaxis(rows, x.ndim() - 1)?;
            let cols = if cols > rows { cols - 1 } else { cols };
            let moved = moved.moveaxis(cols, x.ndim() - 1)?;
            // `moved` is `(..., rows, cols)`: one matrix per index of the other axes.
            let values = singular_values(&moved)?;
            match which {
                SingularNorm::Greatest => values.max_axes(-1, false)?,
                SingularNorm::Least => values.min_axes(-1, false)?,
                SingularNorm::Sum => values.sum_axes(-1, false)?,
            }
        }
        _ => root_of(&squared_magnitude(x).sum_axes([rows, cols], false)?)?,
    };
    norms.reshape(rest)
}

#[cfg(test)]
mod tests {
    use super::{dropped_shape, kept_shape};

    #[test]
    fn keepdims_leaves_the_reduced_axes_of_length_one() {
        assert_eq!(kept_shape(&[2, 3, 4], &[1]), [2, 1, 4]);
        assert_eq!(kept_shape(&[2, 3, 4], &[2, 0]), [1, 3, 1]);
        assert_eq!(kept_shape(&[5], &[0]), [1]);
    }

    #[test]
    fn without_keepdims_the_reduced_axes_are_dropped() {
        assert_eq!(dropped_shape(&[2, 3, 4], &[2, 0]), [3]);
        assert_eq!(dropped_shape(&[2, 3, 4], &[0, 1, 2]), [0usize; 0]);
        assert_eq!(dropped_shape(&[2, 3, 4], &[]), [2, 3, 4]);
    }
}
