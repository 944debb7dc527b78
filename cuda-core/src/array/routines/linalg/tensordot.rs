//! [`DeviceArray::tensordot`]: NumPy's `tensordot`, as one matrix product of two 2-D views.
//!
//! `a`'s free axes are moved first and its summed axes last, `b`'s summed axes first (in the
//! pairs' order) and its free axes last; each group of axes is then one axis of a 2-D view when
//! its strides allow (always for compact operands whose summed axes are already `a`'s last and
//! `b`'s first, NumPy's usual case), and a compact copy of that operand otherwise. The product
//! goes through [`DeviceArray::matmul`] (so a transposed view is passed as a transpose flag) and
//! its result is viewed in the shape `a`'s free axes then `b`'s.

use super::matmul::MatmulType;
use crate::array::axis::Axis;
use crate::array::device_array::DeviceArray;
use crate::error::{Error, Result};

/// Which axes [`DeviceArray::tensordot`] sums over: NumPy's `axes` argument.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TensorAxes {
    /// `axes=N`: the last `N` axes of the first operand with the first `N` of the second, in
    /// order.
    Count(usize),
    /// `axes=(a_axes, b_axes)`: axis `a_axes[i]` of the first operand with `b_axes[i]` of the
    /// second; negative axes count from the end, and one out of range is an
    /// [`Error::Axis`](crate::Error::Axis).
    Pairs(Vec<isize>, Vec<isize>),
}

impl From<usize> for TensorAxes {
    fn from(count: usize) -> TensorAxes {
        TensorAxes::Count(count)
    }
}

impl<const N: usize> From<([isize; N], [isize; N])> for TensorAxes {
    fn from((a, b): ([isize; N], [isize; N])) -> TensorAxes {
        TensorAxes::Pairs(a.to_vec(), b.to_vec())
    }
}

impl From<(Vec<isize>, Vec<isize>)> for TensorAxes {
    fn from((a, b): (Vec<isize>, Vec<isize>)) -> TensorAxes {
        TensorAxes::Pairs(a, b)
    }
}

/// A checked contraction: the axis orders that put each operand's summed axes on the product's
/// inner side, and the sizes of the free and summed groups.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Contraction {
    /// `a`'s axes: free ones, then summed ones.
    a_order: Vec<usize>,
    /// `b`'s axes: summed ones, then free ones.
    b_order: Vec<usize>,
    /// How many of `a`'s axes are free (the rest of `a_order` are summed).
    a_free: usize,
    /// How many of `b`'s axes are summed.
    summed: usize,
    /// The result's shape: `a`'s free axes, then `b`'s.
    shape: Vec<usize>,
}

impl Contraction {
    fn new(a: &[usize], b: &[usize], axes: &TensorAxes) -> Result<Contraction> {
        let mismatch =
            |what: String| Error::InvalidValue(format!("tensordot: shapes {a:?} and {b:?} with axes {axes:?}: {what}"));
        let (a_axes, b_axes): (Vec<usize>, Vec<usize>) = match axes {
            TensorAxes::Count(n) => {
                if *n > a.len() || *n > b.len() {
                    return Err(mismatch(format!("cannot sum over {n} axes")));
                }
                ((a.len() - n..a.len()).collect(), (0..*n).collect())
            }
            TensorAxes::Pairs(a_axes, b_axes) => {
                if a_axes.len() != b_axes.len() {
                    return Err(mismatch("the two axis lists differ in length".into()));
                }
                let normalise = |axes: &[isize], ndim: usize, which: &str| -> Result<Vec<usize>> {
                    let mut seen = vec![false; ndim];
                    axes.iter()
                        .map(|&axis| {
                            let i = Axis::from(axis).index(ndim)?;
                            match std::mem::replace(&mut seen[i], true) {
                                false => Ok(i),
                                true => Err(mismatch(format!("axis {axis} of the {which} operand is repeated"))),
                            }
                        })
                        .collect()
                };
                (
                    normalise(a_axes, a.len(), "first")?,
                    normalise(b_axes, b.len(), "second")?,
                )
            }
        };
        for (&i, &j) in a_axes.iter().zip(&b_axes) {
            if a[i] != b[j] {
                return Err(mismatch(format!(
                    "shape-mismatch for sum: axis {i} of the first has size {} and axis {j} of the second {}",
                    a[i], b[j]
                )));
            }
        }
        let a_free: Vec<usize> = (0..a.len()).filter(|i| !a_axes.contains(i)).collect();
        let b_free: Vec<usize> = (0..b.len()).filter(|j| !b_axes.contains(j)).collect();
        let shape = a_free
            .iter()
            .map(|&i| a[i])
            .chain(b_free.iter().map(|&j| b[j]))
            .collect();
        Ok(Contraction {
            a_free: a_free.len(),
            summed: b_axes.len(),
            a_order: a_free.into_iter().chain(a_axes).collect(),
            b_order: b_axes.into_iter().chain(b_free).collect(),
            shape,
        })
    }
}

/// The stride of one axis standing for the axes `shape`/`strides` (row-major order), if their
/// elements are evenly spaced: each axis's stride is the next one's times its size (axes of
/// one ignored). An empty group (or one of only axes of one) is an axis of one, stride 0.
fn merged_stride(shape: &[usize], strides: &[isize]) -> Option<isize> {
    let mut inner: Option<(usize, isize)> = None; // (size, stride) of the group so far
    for (&size, &stride) in shape.iter().zip(strides).rev() {
        if size == 1 {
            continue;
        }
        inner = match inner {
            None => Some((size, stride)),
            Some((inner_size, inner_stride)) if stride == inner_stride * inner_size as isize => {
                Some((inner_size * size, inner_stride))
            }
            Some(_) => return None,
        };
    }
    Some(inner.map_or(0, |(_, stride)| stride))
}

/// `array` with its axes in `order`, as a `rows x cols` matrix of its first `split` axes by the
/// rest: a view when each group merges into one axis, else a compact copy.
fn as_matrix<T: MatmulType>(array: &DeviceArray<T>, order: &[usize], split: usize) -> Result<DeviceArray<T>> {
    let permuted = array.permute(order)?;
    let (shape, strides) = (permuted.shape(), permuted.strides());
    let rows = shape[..split].iter().product::<usize>();
    let cols = shape[split..].iter().product::<usize>();
    let merged =
        merged_stride(&shape[..split], &strides[..split]).zip(merged_stride(&shape[split..], &strides[split..]));
    match merged {
        Some((row_stride, col_stride)) => {
            Ok(permuted.view(*permuted.ptr_ref(), vec![rows, cols], vec![row_stride, col_stride]))
        }
        None => permuted.to_contiguous()?.reshape([rows, cols]),
    }
}

impl<T: MatmulType> DeviceArray<T> {
    /// NumPy's `tensordot`: sums the products over the axes `axes` pairs (the last `N` of
    /// `self` with the first `N` of `other` for [`TensorAxes::Count`]), the result of shape
    /// `self`'s free axes then `other`'s. One [`matmul`](Self::matmul) of two 2-D views; an
    /// operand whose free or summed axes cannot be one axis of a view (strides that are not
    /// evenly spaced after the axes are reordered) is copied compact first, once.
    ///
    /// Axes out of range or repeated, lists of different lengths and summed axes of different
    /// sizes are [`Error::InvalidValue`] naming both shapes and the axes.
    ///
    /// ```no_run
    /// use cuda_core::{Device, DeviceArray, TensorAxes};
    ///
    /// # fn main() -> cuda_core::Result<()> {
    /// let stream = Device::new(0)?.create_stream()?;
    /// let a = DeviceArray::<f32>::ones(&stream, [3, 4, 5])?;
    /// let b = DeviceArray::<f32>::ones(&stream, [4, 3, 2])?;
    /// let c = a.tensordot(&b, ([1, 0], [0, 1]))?; // sums over 3 x 4 pairs
    /// assert_eq!(c.shape(), [5, 2]);
    /// assert_eq!(c.to_vec()?, [12.0; 10]);
    /// assert_eq!(a.tensordot(&a, TensorAxes::Count(0))?.shape(), [3, 4, 5, 3, 4, 5]);
    /// # Ok(())
    /// # }
    /// ```
    pub fn tensordot(&self, other: &DeviceArray<T>, axes: impl Into<TensorAxes>) -> Result<DeviceArray<T>> {
        let contraction = Contraction::new(self.shape(), other.shape(), &axes.into())?;
        let left = as_matrix(self, &contraction.a_order, contraction.a_free)?;
        let right = as_matrix(other, &contraction.b_order, contraction.summed)?;
        left.matmul(&right)?.reshape(contraction.shape)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(result: Result<Contraction>) -> String {
        match result {
            Err(Error::InvalidValue(message)) => message,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn axes_pair_as_numpy_pairs_them() {
        let c = Contraction::new(&[3, 4, 5], &[4, 5, 6], &TensorAxes::Count(2)).unwrap();
        assert_eq!(
            (c.a_order, c.b_order, c.a_free, c.summed),
            (vec![0, 1, 2], vec![0, 1, 2], 1, 2)
        );
        assert_eq!(c.shape, [3, 6]);
        let c = Contraction::new(&[3, 4, 5], &[4, 3, 2], &([1, 0], [0, 1]).into()).unwrap();
        assert_eq!(
            (c.a_order, c.b_order, c.a_free, c.summed),
            (vec![2, 1, 0], vec![0, 1, 2], 1, 2)
        );
        assert_eq!(c.shape, [5, 2]);
        // Negative axes, no summed axes (an outer product), 0-d operands.
        let c = Contraction::new(&[3, 4], &[4], &([-1], [-1]).into()).unwrap();
        assert_eq!(c.shape, [3]);
        assert_eq!(
            Contraction::new(&[2], &[3], &TensorAxes::Count(0)).unwrap().shape,
            [2, 3]
        );
        assert_eq!(
            Contraction::new(&[], &[], &TensorAxes::Count(0)).unwrap().shape,
            [0usize; 0]
        );
    }

    #[test]
    fn bad_axes_name_both_shapes_and_the_axes() {
        let m = message(Contraction::new(&[3, 4], &[5, 6], &TensorAxes::Count(1)));
        assert!(
            m.contains("[3, 4] and [5, 6]") && m.contains("axis 1") && m.contains("axis 0"),
            "{m}"
        );
        let m = message(Contraction::new(&[3, 4], &[4], &TensorAxes::Count(2)));
        assert!(m.contains("cannot sum over 2 axes"), "{m}");
        let m = message(Contraction::new(&[3, 4], &[4, 3], &([0, 0], [1, 0]).into()));
        assert!(m.contains("repeated"), "{m}");
        assert!(matches!(
            Contraction::new(&[3, 4], &[4, 3], &([2], [0]).into()),
            Err(Error::Axis { axis: 2, ndim: 2 })
        ));
        assert!(matches!(
            Contraction::new(&[3, 4], &[4, 3], &([0], [-3]).into()),
            Err(Error::Axis { axis: -3, ndim: 2 })
        ));
        let m = message(Contraction::new(&[3, 4], &[4, 3], &(vec![0], vec![1, 0]).into()));
        assert!(m.contains("differ in length"), "{m}");
    }

    #[test]
    fn evenly_spaced_axes_merge_into_one() {
        assert_eq!(merged_stride(&[2, 3], &[3, 1]), Some(1));
        assert_eq!(merged_stride(&[2, 3], &[1, 2]), None);
        assert_eq!(merged_stride(&[4, 1, 5], &[5, 99, 1]), Some(1));
        // A transposed group (summed axes of a, reversed) merges with its own stride.
        assert_eq!(merged_stride(&[5], &[12]), Some(12));
        assert_eq!(merged_stride(&[], &[]), Some(0));
        assert_eq!(merged_stride(&[3, 4], &[4, 1]), Some(1));
        assert_eq!(merged_stride(&[3, 4], &[40, 10]), Some(10));
        assert_eq!(merged_stride(&[3, 4], &[50, 10]), None);
    }
}
