//! Set routines (NumPy's chapter): `unique` with its optional outputs and along an axis, `isin`,
//! `union1d`,
//! `intersect1d`, `setdiff1d` and `setxor1d`, on
//! the device-wide sort and searches of [`crate::algorithms`]. `unique` of real values is a
//! stable sort of the flattened array's keys alone and a select of the first of each run of
//! equal keys (the one data-dependent size, read back: one wait for the stream); `unique_all`
//! and complex `unique` sort carrying each element's index, keep each run's first with a
//! partition, and find the inverse and the counts by binary searches; `isin` sorts the test values and looks each element
//! up, with no wait.

use cuda_sys::driver::CUdeviceptr;
use num_complex::Complex;

use crate::algorithms::search::{search_sorted, search_sorted_nan_equal, Side};
use crate::algorithms::select::unique_sorted_count;
use crate::algorithms::sort::{partition_distinct, sort_keys, sort_keys_and_indices, SortOrder};
use crate::array::axis::Axis;
use crate::array::device_array::DeviceArray;
use crate::array::dtype::{Bool, Element};
use crate::array::kernels::IndexMode;
use crate::array::promotion::{Promote, Scalars};
use crate::array::routines::math::ExprOps;
use crate::array::view::Slice;
use crate::error::Result;

/// What [`DeviceArray::unique_all`] returns: NumPy's `np.unique(a, return_index=True,
/// return_inverse=True, return_counts=True)`.
#[derive(Debug)]
pub struct Unique<T: Element> {
    /// The distinct elements, sorted.
    pub values: DeviceArray<T>,
    /// For each distinct element, the flat index of its first occurrence.
    pub indices: DeviceArray<i64>,
    /// For each element of the array (of its shape), the position of its value in `values`.
    pub inverse: DeviceArray<i64>,
    /// How many times each distinct element occurs.
    pub counts: DeviceArray<i64>,
}

impl<T: Element> DeviceArray<T> {
    /// The sorted distinct elements of the flattened array: NumPy's `np.unique(a)` (NumPy 2's
    /// `equal_nan=True`: all NaNs are one element, after the others; `-0.0` and `0.0` are one,
    /// whichever comes first in the array). Complex values are in NumPy's lexicographic order,
    /// and those with a NaN in either part are one element, the first of them in the array (as
    /// NumPy 2.3 and later give it). Waits for the stream once, for the count (for complex
    /// arrays once more, for the last value, and twice more when it holds a NaN).
    pub fn unique(&self) -> Result<DeviceArray<T>> {
        if T::DTYPE.is_complex() {
            let (mut values, _, sorted, order) = self.unique_sorted()?;
            first_nan_of_input(&mut values, &sorted, &order, &self.to_contiguous()?)?;
            return Ok(values);
        }
        // Real values need no permutation: a stable sort of the keys alone keeps equal keys
        // (-0.0 and 0.0, the NaNs) in input order, so each run's first is its first in the array.
        let stream = self.stream();
        crate::graph::refuse_host_wait(stream, crate::graph::COUNTED_SELECTION)?;
        let n = self.len();
        if n == 0 {
            return DeviceArray::<T>::empty(stream, 0);
        }
        let flat = self.to_contiguous()?;
        let mut sorted = DeviceArray::<T>::empty(stream, n)?;
        sort_keys::<T>(stream, &flat, &mut sorted, n, SortOrder::Ascending)?;
        drop(flat);
        let mut kept = DeviceArray::<T>::empty(stream, n)?;
        let distinct = unique_sorted_count::<T>(stream, &sorted, &mut kept)?;
        first_of(&kept, distinct)
    }

    /// [`unique`](Self::unique) with the index of each distinct element's first occurrence, the
    /// inverse (of the array's shape, as NumPy 2 gives it) and the counts. Complex values with a
    /// NaN in either part are one element, the first of them in NumPy's order (as NumPy's
    /// `return_index=True` gives it).
    pub fn unique_all(&self) -> Result<Unique<T>> {
        let (values, indices, sorted, _) = self.unique_sorted()?;
        let stream = self.stream();
        let flat = self.to_contiguous()?;
        let mut inverse = DeviceArray::<i64>::empty(stream, self.shape().to_vec())?;
        search_sorted_nan_equal::<T>(
            stream,
            (&values, values.len()),
            (&flat, flat.len()),
            &mut inverse,
            Side::Left,
        )?;
        let mut first = DeviceArray::<i64>::empty(stream, values.len())?;
        let mut end = DeviceArray::<i64>::empty(stream, values.len())?;
        search_sorted_nan_equal::<T>(
            stream,
            (&sorted, sorted.len()),
            (&values, values.len()),
            &mut first,
            Side::Left,
        )?;
        search_sorted_nan_equal::<T>(
            stream,
            (&sorted, sorted.len()),
            (&values, values.len()),
            &mut end,
            Side::Right,
        )?;
        let counts = (&end - &first).eval()?;
        Ok(Unique {
            values,
            indices,
            inverse,
            counts,
        })
    }

    /// The distinct values, the index of each one's first occurrence, the sorted flattened array
    /// and the permutation that sorts it.
    #[allow(clippy::type_complexity)]
    fn unique_sorted(&self) -> Result<(DeviceArray<T>, DeviceArray<i64>, DeviceArray<T>, DeviceArray<i64>)> {
        let stream = self.stream();
        crate::graph::refuse_host_wait(stream, crate::graph::COUNTED_SELECTION)?;
        let flat = self.to_contiguous()?;
        let n = flat.len();
        let mut sorted = DeviceArray::<T>::empty(stream, n)?;
        let mut order = DeviceArray::<i64>::empty(stream, n)?;
        sort_keys_and_indices::<T>(stream, &flat, (&mut sorted, &mut order), n, SortOrder::Ascending)?;
        let mut kept = DeviceArray::<T>::empty(stream, n)?;
        let mut kept_order = DeviceArray::<i64>::empty(stream, n)?;
        let distinct = partition_distinct::<T>(stream, (&sorted, &order), (&mut kept, &mut kept_order), n)?;
        let values = first_of(&kept, distinct)?;
        let indices = first_of(&kept_order, distinct)?;
        Ok((values, indices, sorted, order))
    }
}

impl<T: Scalars + Promote<T>> DeviceArray<T> {
    /// Whether each element is among the elements of `test` (any shape): NumPy's
    /// `np.isin(x, test)`, a `Bool` array of this array's shape. NaN is in nothing (NaN != NaN,
    /// as in NumPy); `-0.0` is in an array holding `0.0`. No host wait.
    pub fn isin(&self, test: &DeviceArray<T>) -> Result<DeviceArray<Bool>> {
        let stream = self.stream();
        if test.is_empty() {
            return DeviceArray::<Bool>::zeros(stream, self.shape().to_vec());
        }
        let sorted = test.ravel()?.sort(-1)?;
        let flat = self.to_contiguous()?;
        let mut at = DeviceArray::<i64>::empty(stream, self.shape().to_vec())?;
        search_sorted::<T>(
            stream,
            (&sorted, sorted.len()),
            (&flat, flat.len()),
            &mut at,
            Side::Left,
        )?;
        // The first test value not below each element (clipped: past the end, the last value,
        // which is then below it): equal exactly when the element is in `test`.
        let found = sorted.take(&at, None, IndexMode::Clip)?;
        ExprOps::eq(&found, &flat).eval()
    }

    /// The sorted distinct elements of both arrays, flattened: NumPy's `np.union1d(a, b)`
    /// (one wait for the count, as [`unique`](Self::unique)).
    pub fn union1d(&self, other: &DeviceArray<T>) -> Result<DeviceArray<T>> {
        DeviceArray::concatenate(&[&self.ravel()?, &other.ravel()?], 0)?.unique()
    }

    /// The distinct slices along `axis` (negative counts from the end), sorted: NumPy's
    /// `np.unique(a, axis=axis)`. Each slice (the array with `axis` first, each index's
    /// elements in C order) is one key, compared element by element in NumPy's order (NaN
    /// last); slices are equal when every element is (`-0.0 == 0.0`; a slice holding NaN equals
    /// no other, as in NumPy, whose `equal_nan` does not apply along an axis). A stable sort
    /// per element of a slice (`lexsort`, the first element primary), a comparison of
    /// neighbours, and `compress` (one wait for the count). An axis out of range is
    /// [`Error::Axis`](crate::Error::Axis).
    pub fn unique_axis(&self, axis: impl Into<Axis>) -> Result<DeviceArray<T>> {
        let axis = axis.into().index(self.ndim())?;
        let moved = self.moveaxis(axis, 0)?;
        let mut shape = moved.shape().to_vec();
        let n = shape[0];
        let width: usize = shape[1..].iter().product();
        let rows = moved.to_contiguous()?.reshape([n, width])?;
        let kept = match (n, width) {
            (0, _) => rows,
            // Slices without elements are all equal: the first stands for them.
            (_, 0) => rows.slice(&[Slice::new(0, Some(1))])?.try_clone()?,
            _ => {
                let columns = (0..width)
                    .rev()
                    .map(|j| rows.index_axis(1, j as i64))
                    .collect::<Result<Vec<_>>>()?;
                let keys: Vec<&DeviceArray<T>> = columns.iter().collect();
                let order = DeviceArray::lexsort(&keys)?;
                // `order` is a permutation of the rows: Clip never changes an index.
                let sorted = rows.take(&order, 0, IndexMode::Clip)?;
                let later = sorted.slice(&[Slice::new(1, None)])?;
                let earlier = sorted.slice(&[Slice::new(0, Some(n - 1))])?;
                let differs = ExprOps::ne(&later, &earlier).any_axes(1, false)?;
                let first = DeviceArray::from_slice(self.stream(), &[Bool(1)])?;
                let starts = DeviceArray::concatenate(&[&first, &differs], 0)?;
                sorted.compress(&starts, 0)?
            }
        };
        shape[0] = kept.shape()[0];
        kept.reshape(shape)?.moveaxis(0, axis)?.try_clone()
    }

    /// The sorted distinct elements found in both arrays, flattened: NumPy's
    /// `np.intersect1d(a, b)`. NaN is in no intersection (NaN != NaN, as in NumPy); `-0.0` and
    /// `0.0` are one element. The distinct elements of this array ([`unique`](Self::unique))
    /// kept where [`isin`](Self::isin) `other`: two waits for counts.
    pub fn intersect1d(&self, other: &DeviceArray<T>) -> Result<DeviceArray<T>> {
        let distinct = self.unique()?;
        let found = distinct.isin(other)?;
        distinct.extract(&found)
    }

    /// The sorted distinct elements of this array not in `other`, flattened: NumPy's
    /// `np.setdiff1d(a, b)`. NaN is never in `other`, so a NaN here is kept (once), as in
    /// NumPy. The distinct elements ([`unique`](Self::unique)) kept where
    /// [`isin`](Self::isin) `other` is false: two waits for counts.
    pub fn setdiff1d(&self, other: &DeviceArray<T>) -> Result<DeviceArray<T>> {
        let distinct = self.unique()?;
        let found = distinct.isin(other)?;
        distinct.extract(ExprOps::logical_not(&found))
    }

    /// The sorted distinct elements in exactly one of the arrays, flattened: NumPy's
    /// `np.setxor1d(a, b)`. NaN equals nothing, so each array's NaN (one, as
    /// [`unique`](Self::unique) keeps) is kept, as in NumPy. Each array's
    /// [`setdiff1d`](Self::setdiff1d) of the other, joined and sorted: four waits for counts.
    pub fn setxor1d(&self, other: &DeviceArray<T>) -> Result<DeviceArray<T>> {
        let only_here = self.setdiff1d(other)?;
        let only_there = other.setdiff1d(self)?;
        DeviceArray::concatenate(&[&only_here, &only_there], 0)?.sort(-1)
    }
}

/// Replaces the last of the distinct `values` of `flat` (sorted into `sorted` by the stable
/// permutation `order`), if it holds a NaN, by the first element of `flat` that holds one: the
/// representative NumPy 2.3's `unique` (a hash of the values) keeps for complex values, where
/// the first in sorted order can differ (`1+nanj` sorts before `nan+1j`). Reads back the last
/// value, where the NaNs start in `sorted`, and the first of their positions in `flat`.
fn first_nan_of_input<T: Element>(
    values: &mut DeviceArray<T>,
    sorted: &DeviceArray<T>,
    order: &DeviceArray<i64>,
    flat: &DeviceArray<T>,
) -> Result<()> {
    let Some(last) = values.len().checked_sub(1) else {
        return Ok(());
    };
    let last_ptr = *values.ptr_ref() + (last * size_of::<T>()) as CUdeviceptr;
    let representative = values.view(last_ptr, vec![1], vec![1]);
    let value = representative.to_vec()?[0];
    let any = &value as &dyn std::any::Any;
    let has_nan = match (any.downcast_ref::<Complex<f32>>(), any.downcast_ref::<Complex<f64>>()) {
        (Some(z), _) => z.re.is_nan() || z.im.is_nan(),
        (_, Some(z)) => z.re.is_nan() || z.im.is_nan(),
        _ => false,
    };
    if !has_nan {
        return Ok(());
    }
    let stream = values.stream();
    let mut start = DeviceArray::<i64>::empty(stream, 1)?;
    search_sorted_nan_equal::<T>(
        stream,
        (sorted, sorted.len()),
        (&representative, 1),
        &mut start,
        Side::Left,
    )?;
    // The NaNs sort last, together: positions start..n of `sorted`, a nonempty range.
    let start = usize::try_from(start.item()?)
        .unwrap_or(0)
        .min(last_index(sorted.len()));
    let order_ptr = *order.ptr_ref() + (start * size_of::<i64>()) as CUdeviceptr;
    let first = order
        .view(order_ptr, vec![sorted.len() - start], vec![1])
        .min()?
        .item()?;
    let first = usize::try_from(first).unwrap_or(0).min(last_index(flat.len()));
    let flat_ptr = *flat.ptr_ref() + (first * size_of::<T>()) as CUdeviceptr;
    values
        .view(last_ptr, vec![1], vec![1])
        .copy_from(&flat.view(flat_ptr, vec![1], vec![1]))
}

/// The last index of `len` elements (0 for none).
fn last_index(len: usize) -> usize {
    len.saturating_sub(1)
}

/// A compact copy of the first `count` elements of the compact 1-D `array`.
fn first_of<U: Element>(array: &DeviceArray<U>, count: usize) -> Result<DeviceArray<U>> {
    let ptr: CUdeviceptr = *array.ptr_ref();
    array.view(ptr, vec![count], vec![1]).try_clone()
}
