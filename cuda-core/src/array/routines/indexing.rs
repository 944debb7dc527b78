//! NumPy's "indexing routines" chapter: an integer index that drops its axis
//! ([`index_axis`](DeviceArray::index_axis), [`at`](DeviceArray::at)), [`take`](DeviceArray::take),
//! [`take_along_axis`](DeviceArray::take_along_axis) and [`put`](DeviceArray::put) with an index
//! array (one gather or scatter kernel per call, [`IndexMode`] for indices out of range), and the
//! diagonals ([`diagonal`](DeviceArray::diagonal), a view; [`diag`](DeviceArray::diag)).
//!
//! Indices follow NumPy: negative ones count from the end (except in [`IndexMode::Clip`], which
//! clamps them to 0), and one out of range is an [`Error::IndexOutOfBounds`]. An index array's
//! values are only known on the device, so [`IndexMode::Raise`] costs one 16-byte read back and a
//! wait for the stream per call; [`IndexMode::Wrap`] and [`IndexMode::Clip`] never wait.

use crate::array::axis::{Axis, OptionalAxis};
use crate::array::device_array::DeviceArray;
use crate::array::dtype::Element;
use crate::array::kernels::gather::{gather, scatter, GatherLayout, IndexElement, IndexMode};
use crate::error::{Error, Result};

/// `index` counted from the end when negative, checked against `extent`.
fn resolve_index(what: &str, index: i64, extent: usize) -> Result<usize> {
    let resolved = match index < 0 {
        true => (extent as i64).checked_add(index),
        false => Some(index),
    };
    match resolved {
        Some(i) if i >= 0 && (i as u64) < extent as u64 => Ok(i as usize),
        _ => Err(Error::IndexOutOfBounds {
            what: what.to_string(),
            index: Some(index),
            extent,
        }),
    }
}

/// A shape as loop extents and strides: at least one axis (a 0-d shape is one element).
fn at_least_one_axis(extents: Vec<usize>, strides: Vec<isize>) -> (Vec<usize>, Vec<isize>) {
    match extents.is_empty() {
        true => (vec![1], vec![0]),
        false => (extents, strides),
    }
}

/// The result shape and layout of `take` of the flattened array (`x` of `x_shape` and
/// `x_strides`, indices of `i_shape` and `i_strides`), and of `put`: the loop runs over the
/// indices, which address all of `x`'s axes.
fn flat_layout(
    x_shape: &[usize],
    x_strides: &[isize],
    i_shape: &[usize],
    i_strides: &[isize],
) -> (Vec<usize>, GatherLayout) {
    let (index_extents, index_x_strides) = at_least_one_axis(x_shape.to_vec(), x_strides.to_vec());
    let (loop_extents, index_strides) = at_least_one_axis(i_shape.to_vec(), i_strides.to_vec());
    let layout = GatherLayout {
        x_strides: vec![0; loop_extents.len()],
        loop_extents,
        index_strides,
        index_extents,
        index_x_strides,
    };
    (i_shape.to_vec(), layout)
}

/// The result shape and layout of `take` along `axis`: the indices' axes replace `axis`.
fn axis_layout(
    x_shape: &[usize],
    x_strides: &[isize],
    i_shape: &[usize],
    i_strides: &[isize],
    axis: impl Into<Axis>,
) -> Result<(Vec<usize>, GatherLayout)> {
    let axis = axis.into().index(x_shape.len())?;
    let after = x_shape.len() - axis - 1;
    let shape: Vec<usize> = [&x_shape[..axis], i_shape, &x_shape[axis + 1..]].concat();
    let zeros = |n: usize| vec![0isize; n];
    let x_loop = [&x_strides[..axis], &zeros(i_shape.len())[..], &x_strides[axis + 1..]].concat();
    let index_loop = [&zeros(axis)[..], i_strides, &zeros(after)[..]].concat();
    let (loop_extents, x_loop) = at_least_one_axis(shape.clone(), x_loop);
    let index_loop = match index_loop.is_empty() {
        true => vec![0],
        false => index_loop,
    };
    let layout = GatherLayout {
        loop_extents,
        x_strides: x_loop,
        index_strides: index_loop,
        index_extents: vec![x_shape[axis]],
        index_x_strides: vec![x_strides[axis]],
    };
    Ok((shape, layout))
}

/// The result shape and layout of `take_along_axis`: indices of the array's dimensions, their
/// other axes broadcasting with the array's.
fn along_axis_layout(
    x_shape: &[usize],
    x_strides: &[isize],
    i_shape: &[usize],
    i_strides: &[isize],
    axis: impl Into<Axis>,
) -> Result<(Vec<usize>, GatherLayout)> {
    let axis = axis.into().index(x_shape.len())?;
    if i_shape.len() != x_shape.len() {
        return Err(Error::InvalidValue(format!(
            "take_along_axis: indices of shape {i_shape:?} must have the {} dimensions of the array of shape {x_shape:?}",
            x_shape.len(),
        )));
    }
    let mut shape = Vec::with_capacity(x_shape.len());
    let (mut x_loop, mut index_loop) = (Vec::new(), Vec::new());
    for d in 0..x_shape.len() {
        let (a, b) = (x_shape[d], i_shape[d]);
        let extent = match d == axis {
            true => b,
            false if a == b || b == 1 => a,
            false if a == 1 => b,
            false => {
                return Err(Error::InvalidValue(format!(
                    "take_along_axis: indices of shape {i_shape:?} do not broadcast with the array's shape {x_shape:?} off axis {axis}"
                )))
            }
        };
        shape.push(extent);
        x_loop.push(match d != axis && a == extent {
            true => x_strides[d],
            false => 0,
        });
        index_loop.push(match b == extent {
            true => i_strides[d],
            false => 0,
        });
    }
    let layout = GatherLayout {
        loop_extents: shape.clone(),
        x_strides: x_loop,
        index_strides: index_loop,
        index_extents: vec![x_shape[axis]],
        index_x_strides: vec![x_strides[axis]],
    };
    Ok((shape, layout))
}

impl<T: Element> DeviceArray<T> {
    /// The view at index `index` of axis `axis`, without that axis (NumPy's `x[..., i, ...]`
    /// with an integer); a negative `index` or `axis` counts from the end. An index outside the
    /// axis is an [`Error::IndexOutOfBounds`].
    ///
    /// ```no_run
    /// # use cuda_core::{Device, DeviceArray};
    /// # fn main() -> cuda_core::Result<()> {
    /// # let stream = Device::new(0)?.create_stream()?;
    /// let x = DeviceArray::arange(&stream, 0.0f32, 6.0, 1.0)?.reshape([2, 3])?;
    /// assert_eq!(x.index_axis(1, -1)?.to_vec()?, [2.0, 5.0]); // x[:, -1]
    /// # Ok(())
    /// # }
    /// ```
    pub fn index_axis(&self, axis: impl Into<Axis>, index: i64) -> Result<Self> {
        let axis = axis.into().index(self.ndim())?;
        let what = format!("index along axis {axis} of shape {:?}", self.shape());
        let i = resolve_index(&what, index, self.shape()[axis])?;
        // An element of the view: its offset in bytes fits `isize`.
        let bytes = i as isize * self.strides()[axis] * size_of::<T>() as isize;
        let mut shape = self.shape().to_vec();
        let mut strides = self.strides().to_vec();
        shape.remove(axis);
        strides.remove(axis);
        Ok(self.view(self.ptr_ref().wrapping_add_signed(bytes as i64), shape, strides))
    }

    /// The view at index `index` of the first axis, without it (NumPy's `x[i]`).
    pub fn at(&self, index: i64) -> Result<Self> {
        self.index_axis(0, index)
    }

    /// The elements at `indices` along `axis` (NumPy's `take`): the result's shape is the
    /// array's with `axis` replaced by the indices' shape, or, for `axis` `None`, the indices'
    /// shape, indexing the flattened array (a negative `axis` counts from the end). One gather
    /// kernel, reading strided arrays in place.
    ///
    /// ```no_run
    /// # use cuda_core::{Device, DeviceArray, IndexMode};
    /// # fn main() -> cuda_core::Result<()> {
    /// # let stream = Device::new(0)?.create_stream()?;
    /// let x = DeviceArray::arange(&stream, 0.0f32, 6.0, 1.0)?.reshape([2, 3])?;
    /// let i = DeviceArray::from_slice(&stream, &[2i64, 0, -1])?;
    /// assert_eq!(x.take(&i, -1, IndexMode::Raise)?.to_vec()?, [2.0, 0.0, 2.0, 5.0, 3.0, 5.0]);
    /// assert!(x.take(&DeviceArray::from_slice(&stream, &[3i64])?, 1, IndexMode::Raise).is_err());
    /// assert_eq!(x.take(&DeviceArray::from_slice(&stream, &[7i64])?, None, IndexMode::Wrap)?.to_vec()?, [1.0]);
    /// # Ok(())
    /// # }
    /// ```
    pub fn take<J: IndexElement>(
        &self,
        indices: &DeviceArray<J>,
        axis: impl Into<OptionalAxis>,
        mode: IndexMode,
    ) -> Result<Self> {
        let axis = axis.into();
        let shape = match axis.get() {
            None => indices.shape().to_vec(),
            Some(axis) => axis_layout(self.shape(), self.strides(), indices.shape(), indices.strides(), axis)?.0,
        };
        let mut out = Self::empty(self.stream(), shape)?;
        self.take_into(indices, axis, mode, &mut out)?;
        Ok(out)
    }

    /// [`take`](Self::take) into `out` (NumPy's `out=`): a compact array of the result's shape,
    /// whose pool also gives the flag array of [`IndexMode::Raise`]. The gather runs on `out`'s
    /// stream. After an [`Error::IndexOutOfBounds`], `out`'s elements at the offending indices'
    /// positions are unspecified (the others are written).
    pub fn take_into<J: IndexElement>(
        &self,
        indices: &DeviceArray<J>,
        axis: impl Into<OptionalAxis>,
        mode: IndexMode,
        out: &mut DeviceArray<T>,
    ) -> Result<()> {
        let (shape, layout) = match axis.into().get() {
            None => flat_layout(self.shape(), self.strides(), indices.shape(), indices.strides()),
            Some(axis) => axis_layout(self.shape(), self.strides(), indices.shape(), indices.strides(), axis)?,
        };
        if out.shape() != shape.as_slice() {
            return Err(Error::InvalidValue(format!(
                "take: the output has shape {:?}, the result {shape:?}",
                out.shape()
            )));
        }
        gather(self, indices, out, &layout, mode)
    }

    /// The elements at `indices` along `axis`, matched by position on the other axes (NumPy's
    /// `take_along_axis`, as used with `argsort`/`argmax` results): `indices` has the array's
    /// number of dimensions, and its other axes broadcast with the array's (a negative `axis`
    /// counts from the end). One gather kernel.
    pub fn take_along_axis<J: IndexElement>(
        &self,
        indices: &DeviceArray<J>,
        axis: impl Into<Axis>,
        mode: IndexMode,
    ) -> Result<Self> {
        let (shape, layout) =
            along_axis_layout(self.shape(), self.strides(), indices.shape(), indices.strides(), axis)?;
        let mut out = Self::empty(self.stream(), shape)?;
        gather(self, indices, &mut out, &layout, mode)?;
        Ok(out)
    }

    /// Writes `values` at `indices` of the flattened array, in place (NumPy's `put`): `values`
    /// repeat when shorter than `indices`; empty `values` write nothing (indices unchecked, as
    /// in NumPy). One scatter kernel writing the array's strided layout
    /// in place (a non-compact `values` is made compact first). Repeated indices get one of their
    /// values, which one unspecified (NumPy: the last).
    pub fn put<J: IndexElement>(
        &mut self,
        indices: &DeviceArray<J>,
        values: &DeviceArray<T>,
        mode: IndexMode,
    ) -> Result<()> {
        // NumPy refuses a read-only destination even when there is nothing to write.
        self.check_writable("put")?;
        let (_, layout) = flat_layout(self.shape(), self.strides(), indices.shape(), indices.strides());
        // No indices, or no values to put: nothing is written, and NumPy checks no index then.
        if indices.is_empty() || values.is_empty() {
            return Ok(());
        }
        let values = values.to_contiguous()?;
        scatter(self, indices, &values, &layout, mode)
    }

    /// The view of diagonal `offset` of the plane of axes `axis1` and `axis2` (NumPy's
    /// `diagonal`): those axes are removed and the diagonal becomes the last axis, with stride
    /// the sum of theirs (negative axes count from the end). `offset > 0` is above the main
    /// diagonal. No data moves.
    pub fn diagonal(&self, offset: i64, axis1: impl Into<Axis>, axis2: impl Into<Axis>) -> Result<Self> {
        let (axis1, axis2) = (axis1.into().index(self.ndim())?, axis2.into().index(self.ndim())?);
        if axis1 == axis2 {
            return Err(Error::InvalidValue(format!(
                "diagonal: axis1 and axis2 cannot be the same ({axis1})"
            )));
        }
        let (rows, cols) = (self.shape()[axis1], self.shape()[axis2]);
        let skip = offset.unsigned_abs().min(u64::MAX >> 1) as usize;
        let (row, col) = match offset >= 0 {
            true => (0, skip),
            false => (skip, 0),
        };
        let len = rows.saturating_sub(row).min(cols.saturating_sub(col));
        let (s1, s2) = (self.strides()[axis1], self.strides()[axis2]);
        // The first element of a non-empty diagonal is an element of the array: its offset
        // fits `isize`.
        let start = match len {
            0 => 0,
            _ => row as isize * s1 + col as isize * s2,
        };
        let mut shape = Vec::with_capacity(self.ndim() - 1);
        let mut strides = Vec::with_capacity(self.ndim() - 1);
        for d in (0..self.ndim()).filter(|&d| d != axis1 && d != axis2) {
            shape.push(self.shape()[d]);
            strides.push(self.strides()[d]);
        }
        shape.push(len);
        strides.push(s1 + s2);
        let bytes = start * size_of::<T>() as isize;
        Ok(self.view(self.ptr_ref().wrapping_add_signed(bytes as i64), shape, strides))
    }

    /// NumPy's `diag`: for a 1-D array, a new square matrix with it on diagonal `k` and zeros
    /// elsewhere (a memset and one copy into the diagonal's view); for a 2-D array, the view of
    /// its diagonal `k` ([`diagonal`](Self::diagonal)). Other dimensions are an error.
    pub fn diag(&self, k: i64) -> Result<Self> {
        match self.ndim() {
            1 => {
                let n = self
                    .len()
                    .checked_add(k.unsigned_abs() as usize)
                    .ok_or_else(|| Error::InvalidValue(format!("diag: offset {k} is too large")))?;
                let out = Self::zeros(self.stream(), [n, n])?;
                let mut diagonal = out.diagonal(k, 0, 1)?;
                diagonal.copy_from(self)?;
                drop(diagonal);
                Ok(out)
            }
            2 => self.diagonal(k, 0, 1),
            _ => Err(Error::InvalidValue(format!(
                "diag: the array must be 1-D or 2-D, not of shape {:?}",
                self.shape()
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn indices_count_from_the_end_and_refuse_outside() {
        assert_eq!(resolve_index("x", 0, 3).unwrap(), 0);
        assert_eq!(resolve_index("x", -1, 3).unwrap(), 2);
        assert_eq!(resolve_index("x", -3, 3).unwrap(), 0);
        for bad in [3, -4, i64::MIN, i64::MAX] {
            assert!(matches!(
                resolve_index("x", bad, 3),
                Err(Error::IndexOutOfBounds { index: Some(i), extent: 3, .. }) if i == bad
            ));
        }
        assert!(matches!(resolve_index("x", 0, 0), Err(Error::IndexOutOfBounds { .. })));
        assert_eq!(at_least_one_axis(vec![], vec![]), (vec![1], vec![0]));
        assert_eq!(at_least_one_axis(vec![2, 3], vec![3, 1]), (vec![2, 3], vec![3, 1]));
    }

    #[test]
    fn take_layouts_put_the_index_axes_in_place_of_the_axis() {
        // x of shape (2, 5, 3), strided; indices of shape (4, 6).
        let (shape, layout) = axis_layout(&[2, 5, 3], &[30, 6, 2], &[4, 6], &[6, 1], 1).unwrap();
        assert_eq!(shape, [2, 4, 6, 3]);
        assert_eq!(layout.loop_extents, [2, 4, 6, 3]);
        assert_eq!(layout.x_strides, [30, 0, 0, 2]);
        assert_eq!(layout.index_strides, [0, 6, 1, 0]);
        assert_eq!((layout.index_extents, layout.index_x_strides), (vec![5], vec![6]));
        // 0-d indices drop the axis; a 0-d result is one loop element.
        let (shape, layout) = axis_layout(&[5], &[1], &[], &[], 0).unwrap();
        assert!(shape.is_empty());
        assert_eq!(
            (layout.loop_extents, layout.x_strides, layout.index_strides),
            (vec![1], vec![0], vec![0])
        );
        assert!(
            matches!(
                axis_layout(&[5], &[1], &[2], &[1], 1),
                Err(Error::Axis { axis: 1, ndim: 1 })
            ),
            "axis out of range"
        );
        let (shape, layout) = axis_layout(&[2, 5, 3], &[30, 6, 2], &[4], &[1], -2).unwrap();
        assert_eq!(
            (shape, layout.index_extents),
            (vec![2, 4, 3], vec![5]),
            "axis -2 is axis 1"
        );
        assert!(axis_layout(&[], &[], &[2], &[1], 0).is_err(), "a 0-d array has no axis");
        // Flattened: the indices' shape, every axis of x addressed.
        let (shape, layout) = flat_layout(&[3, 4], &[1, 3], &[2, 2], &[2, 1]);
        assert_eq!(shape, [2, 2]);
        assert_eq!((layout.index_extents, layout.index_x_strides), (vec![3, 4], vec![1, 3]));
        assert_eq!(layout.x_strides, [0, 0]);
        let (shape, layout) = flat_layout(&[], &[], &[3], &[1]);
        assert_eq!(shape, [3]);
        assert_eq!(layout.index_extents, [1]);
    }

    #[test]
    fn take_along_axis_broadcasts_the_other_axes() {
        let (shape, layout) = along_axis_layout(&[3, 4], &[4, 1], &[3, 2], &[2, 1], 1).unwrap();
        assert_eq!(shape, [3, 2]);
        assert_eq!((layout.x_strides, layout.index_strides), (vec![4, 0], vec![2, 1]));
        let (shape, layout) = along_axis_layout(&[3, 4], &[4, 1], &[1, 2], &[2, 1], 1).unwrap();
        assert_eq!(shape, [3, 2]);
        assert_eq!(layout.index_strides, [0, 1], "indices broadcast along axis 0");
        let (shape, layout) = along_axis_layout(&[1, 4], &[4, 1], &[5, 4], &[4, 1], 1).unwrap();
        assert_eq!(shape, [5, 4]);
        assert_eq!(layout.x_strides, [0, 0], "x broadcast along axis 0");
        assert!(
            along_axis_layout(&[3, 4], &[4, 1], &[2, 2], &[2, 1], 1).is_err(),
            "3 vs 2"
        );
        assert!(along_axis_layout(&[3, 4], &[4, 1], &[2], &[1], 1).is_err(), "ndim");
        assert!(
            along_axis_layout(&[3, 4], &[4, 1], &[3, 2], &[2, 1], 2).is_err(),
            "axis"
        );
        assert_eq!(
            along_axis_layout(&[3, 4], &[4, 1], &[3, 2], &[2, 1], -1).unwrap().0,
            [3, 2],
            "axis -1 is axis 1"
        );
    }
}
