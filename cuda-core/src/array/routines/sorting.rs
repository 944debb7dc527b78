//! Sorting (NumPy's chapter): `sort` and `argsort` along any axis, `partition` and
//! `argpartition` (a full sort, which is one valid partition), `lexsort`, `sort_complex`, and
//! torch's `topk`;
//! stable, in NumPy's order
//! (NaN last, `-0.0` and `0.0` equal and kept in input order), on the device-wide radix sort of
//! [`crate::algorithms::sort`]. The sorted axis is moved last and made compact (a copy unless
//! it already is), its rows sorted together, and the result moved back as a C-contiguous array.

use crate::algorithms::sort::{argsort_rows, sort_rows, SortOrder};
use crate::array::axis::{Axis, OptionalAxis};
use crate::array::device_array::DeviceArray;
use crate::array::dtype::{Bool, Element};
use crate::array::kernels::IndexMode;
use crate::array::promotion::Scalars;
use crate::array::routines::math::ExprOps;
use crate::array::view::Slice;
use crate::error::{Error, Result};
use num_complex::Complex;

impl<T: Element> DeviceArray<T> {
    /// A sorted copy along `axis` (negative counts from the end; `None`: of the flattened
    /// array, 1-D): NumPy's `np.sort(a, axis, kind="stable")`, queued on the array's stream.
    /// NaNs go last; equal elements keep their order. A 0-d array has no axis to sort: an
    /// error, as in NumPy (its flattened form sorts). `argsort`, `partition` and
    /// `argpartition` take `axis` the same way.
    pub fn sort(&self, axis: impl Into<OptionalAxis>) -> Result<DeviceArray<T>> {
        match axis.into().get() {
            Some(axis) => self.sort_along(axis, SortOrder::Ascending),
            None => self.ravel()?.sort_along(0, SortOrder::Ascending),
        }
    }

    /// Sorts the array in place along `axis`: NumPy's `x.sort(axis)` (the method), a sorted
    /// copy written back (strided views too), queued on the array's stream.
    pub fn sort_in_place(&mut self, axis: impl Into<Axis>) -> Result<()> {
        self.check_writable("sort_in_place")?;
        let sorted = self.sort(axis.into())?;
        self.copy_from(&sorted)
    }

    /// As [`sort`](Self::sort), largest first (NaN first): the reverse order, equal elements
    /// still in their input order (`torch.sort(descending=True, stable=True)`).
    pub fn sort_descending(&self, axis: impl Into<OptionalAxis>) -> Result<DeviceArray<T>> {
        match axis.into().get() {
            Some(axis) => self.sort_along(axis, SortOrder::Descending),
            None => self.ravel()?.sort_along(0, SortOrder::Descending),
        }
    }

    /// The indices that sort the array along `axis` (negative counts from the end), as `i64`
    /// positions within that axis: NumPy's `np.argsort(a, axis, kind="stable")`, queued on the
    /// array's stream. Ties keep their input order.
    pub fn argsort(&self, axis: impl Into<OptionalAxis>) -> Result<DeviceArray<i64>> {
        match axis.into().get() {
            Some(axis) => self.argsort_along(axis, SortOrder::Ascending),
            None => self.ravel()?.argsort_along(0, SortOrder::Ascending),
        }
    }

    /// The `k` largest elements along `axis` (or the `k` smallest if not `largest`), in that
    /// order, and their positions along the axis (`i64`): `torch.topk(x, k, dim, largest,
    /// sorted=True)`, by a stable sort of each line (equal elements in input order; NaN counts
    /// as the largest, as in torch). The axis keeps `k` elements; `k` above its extent is an
    /// error.
    pub fn topk(&self, k: usize, axis: impl Into<Axis>, largest: bool) -> Result<(DeviceArray<T>, DeviceArray<i64>)> {
        let axis = axis.into();
        let normal = axis.index(self.ndim())?;
        let extent = self.shape()[normal];
        if k > extent {
            return Err(Error::InvalidValue(format!(
                "topk: k = {k} is above the extent {extent} of axis {}",
                axis.get()
            )));
        }
        let order = match largest {
            true => SortOrder::Descending,
            false => SortOrder::Ascending,
        };
        let sorted = self.argsort_along(axis, order)?;
        let mut first = vec![Slice::new(0, None); self.ndim()];
        first[normal] = Slice::new(0, Some(k));
        let indices = sorted.slice(&first)?.try_clone()?;
        let values = self.take_along_axis(&indices, normal, IndexMode::Clip)?;
        Ok((values, indices))
    }

    fn argsort_along(&self, axis: impl Into<Axis>, order: SortOrder) -> Result<DeviceArray<i64>> {
        let (axis, rows) = self.rows_along(axis)?;
        let stream = self.stream();
        let mut out = DeviceArray::<i64>::empty(stream, rows.shape().to_vec())?;
        let row_len = rows.shape().last().copied().unwrap_or(1);
        argsort_rows::<T>(stream, &rows, &mut out, (rows.len(), row_len), order)?;
        restore_axis(out, axis)
    }

    /// NumPy's `np.partition(a, kth, axis)`: along `axis`, the element at `kth` (negative
    /// counts from the end) is the one a sort puts there, none before it is greater and none
    /// after it smaller. Done by a full stable sort (one valid partition; NumPy's order of the
    /// other elements is its selection algorithm's). `kth` outside the axis is an error.
    pub fn partition(&self, kth: isize, axis: impl Into<OptionalAxis>) -> Result<DeviceArray<T>> {
        let Some(axis) = axis.into().get() else {
            return self.ravel()?.partition(kth, 0);
        };
        self.check_kth("partition", kth, axis)?;
        self.sort(axis)
    }

    /// NumPy's `np.argpartition(a, kth, axis)`: indices that partition the array (see
    /// [`partition`](Self::partition)), from a full stable sort.
    pub fn argpartition(&self, kth: isize, axis: impl Into<OptionalAxis>) -> Result<DeviceArray<i64>> {
        let Some(axis) = axis.into().get() else {
            return self.ravel()?.argpartition(kth, 0);
        };
        self.check_kth("argpartition", kth, axis)?;
        self.argsort(axis)
    }

    /// The indirect stable sort by several 1-D keys of one length, the last key primary:
    /// NumPy's `np.lexsort(keys)`, `i64` indices. No keys, keys that are not 1-D, or keys of
    /// different lengths are errors.
    pub fn lexsort(keys: &[&DeviceArray<T>]) -> Result<DeviceArray<i64>> {
        let Some((least, more)) = keys.split_first() else {
            return Err(Error::InvalidValue("lexsort needs at least one key".into()));
        };
        if keys.iter().any(|k| k.ndim() != 1 || k.len() != least.len()) {
            return Err(Error::InvalidValue(format!(
                "lexsort: keys must be 1-D of one length, not of shapes {:?}",
                keys.iter().map(|k| k.shape().to_vec()).collect::<Vec<_>>()
            )));
        }
        // Sorted by the least significant key (the first), then stably by each later key in
        // turn: the last sort (the primary key) decides first, and its ties keep the order the
        // sorts before it left.
        let mut order = least.argsort(0)?;
        for key in more {
            // `order` holds indices below the keys' length: Clip never changes one.
            let gathered = key.take(&order, None, IndexMode::Clip)?;
            let by_key = gathered.argsort(0)?;
            order = order.take(&by_key, None, IndexMode::Clip)?;
        }
        Ok(order)
    }

    /// Checks `kth` against the extent of `axis`.
    fn check_kth(&self, what: &str, kth: isize, axis: Axis) -> Result<()> {
        let axis = axis.index(self.ndim())?;
        let extent = self.shape()[axis];
        let inside = match kth < 0 {
            true => kth.unsigned_abs() <= extent,
            false => (kth as usize) < extent,
        };
        match inside {
            true => Ok(()),
            false => Err(Error::InvalidValue(format!(
                "{what}: kth {kth} is out of bounds for an axis of {extent}"
            ))),
        }
    }

    fn sort_along(&self, axis: impl Into<Axis>, order: SortOrder) -> Result<DeviceArray<T>> {
        let (axis, rows) = self.rows_along(axis)?;
        let stream = self.stream();
        let mut out = DeviceArray::<T>::empty(stream, rows.shape().to_vec())?;
        let row_len = rows.shape().last().copied().unwrap_or(1);
        sort_rows::<T>(stream, &rows, &mut out, (rows.len(), row_len), order)?;
        restore_axis(out, axis)
    }

    /// The normalised `axis` and a compact array with that axis last.
    fn rows_along(&self, axis: impl Into<Axis>) -> Result<(usize, DeviceArray<T>)> {
        let axis = axis.into().index(self.ndim())?;
        let moved = self.moveaxis(axis, self.ndim() - 1)?;
        Ok((axis, moved.to_contiguous()?))
    }
}

/// `sorted` (its last axis the sorted one) with that axis moved back to `axis`, C-contiguous.
fn restore_axis<U: Element>(sorted: DeviceArray<U>, axis: usize) -> Result<DeviceArray<U>> {
    let last = sorted.ndim() - 1;
    match axis == last {
        true => Ok(sorted),
        false => sorted.moveaxis(last, axis)?.try_clone(),
    }
}

/// The complex type of NumPy's `sort_complex` for an element type: itself for the complex
/// types, `Complex<f32>` for the 8- and 16-bit integers, `Complex<f64>` for the others (`Bool`,
/// wider integers and every real float, `f32` included, as NumPy).
pub trait SortComplex: Scalars {
    /// The complex type of the result.
    type Complex: Scalars;
}

macro_rules! sort_complex_types {
    ($($t:ty => $c:ty),* $(,)?) => {
        $(impl SortComplex for $t {
            type Complex = $c;
        })*
    };
}

sort_complex_types! {
    i8 => Complex<f32>, u8 => Complex<f32>, i16 => Complex<f32>, u16 => Complex<f32>,
    Bool => Complex<f64>, i32 => Complex<f64>, u32 => Complex<f64>, i64 => Complex<f64>,
    u64 => Complex<f64>, half::f16 => Complex<f64>, half::bf16 => Complex<f64>,
    f32 => Complex<f64>, f64 => Complex<f64>, Complex<f32> => Complex<f32>, Complex<f64> => Complex<f64>,
}

impl<T: SortComplex> DeviceArray<T> {
    /// NumPy's `sort_complex`: the values as [`SortComplex::Complex`], sorted along the last
    /// axis by real parts, then imaginary parts ([`sort`](Self::sort)'s order: values with a
    /// NaN last, `R + nanj`, then `nan + Rj`, then `nan + nanj`; equal values in input order).
    /// A 0-d array is an error, as in NumPy.
    pub fn sort_complex(&self) -> Result<DeviceArray<T::Complex>> {
        self.astype::<T::Complex>().eval()?.sort(-1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::array::dtype::DType;

    fn complex_of<T: SortComplex>() -> DType {
        <T::Complex as Element>::DTYPE
    }

    #[test]
    fn sort_complex_types_are_numpys() {
        // NumPy 2.4: `sort_complex` of int8, uint8, int16 and uint16 is complex64; of bool,
        // the wider integers, float16, float32 and float64 complex128; complex stays.
        for small in [
            complex_of::<i8>(),
            complex_of::<u8>(),
            complex_of::<i16>(),
            complex_of::<u16>(),
        ] {
            assert_eq!(small, DType::C64);
        }
        for wide in [
            complex_of::<Bool>(),
            complex_of::<i32>(),
            complex_of::<u64>(),
            complex_of::<half::f16>(),
            complex_of::<f32>(),
            complex_of::<f64>(),
        ] {
            assert_eq!(wide, DType::C128);
        }
        assert_eq!(complex_of::<Complex<f32>>(), DType::C64);
        assert_eq!(complex_of::<Complex<f64>>(), DType::C128);
    }
}
