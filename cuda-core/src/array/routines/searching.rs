//! Searching (NumPy's chapter): `searchsorted`, on the device-wide bounds of
//! [`crate::algorithms::search`], and `digitize` on it.

use crate::algorithms::search::{search_sorted, search_sorted_with_sorter, Side};
use crate::array::device_array::DeviceArray;
use crate::array::dtype::Element;
use crate::error::{Error, Result};

impl<T: Element> DeviceArray<T> {
    /// Where each element of `values` would go in this sorted 1-D array to keep it sorted:
    /// NumPy's `np.searchsorted(a, v, side, sorter)`, `i64` positions of `values`' shape, in
    /// NumPy's order (NaN last). With a `sorter` (indices that sort this array, as
    /// [`argsort`](Self::argsort) gives), the array is read in that order; the sorter is checked
    /// on the device (an index outside the array is [`Error::IndexOutOfBounds`], an order that
    /// does not sort it [`Error::InvalidValue`]), which waits for the stream once. Without one,
    /// nothing waits, and an unsorted array gives unspecified positions, as in NumPy.
    pub fn searchsorted(
        &self,
        values: &DeviceArray<T>,
        side: Side,
        sorter: Option<&DeviceArray<i64>>,
    ) -> Result<DeviceArray<i64>> {
        if self.ndim() != 1 {
            return Err(Error::InvalidValue(format!(
                "searchsorted: the array searched must be 1-D, not of shape {:?}",
                self.shape()
            )));
        }
        let stream = self.stream();
        let keys = self.to_contiguous()?;
        let queries = values.to_contiguous()?;
        let mut out = DeviceArray::<i64>::empty(stream, values.shape().to_vec())?;
        match sorter {
            None => search_sorted::<T>(stream, (&keys, keys.len()), (&queries, queries.len()), &mut out, side)?,
            Some(sorter) => {
                if sorter.shape() != self.shape() {
                    return Err(Error::InvalidValue(format!(
                        "searchsorted: sorter of shape {:?} does not match the array's {:?}",
                        sorter.shape(),
                        self.shape()
                    )));
                }
                let sorter = sorter.to_contiguous()?;
                search_sorted_with_sorter::<T>(
                    stream,
                    (&keys, keys.len()),
                    &sorter,
                    (&queries, queries.len()),
                    &mut out,
                    side,
                )?
            }
        }
        Ok(out)
    }
}

impl<T: Element> DeviceArray<T> {
    /// The index of the bin of each element: NumPy's `np.digitize(x, bins, right)`, `i64` of
    /// this array's shape. `bins` is 1-D and monotonic, increasing or decreasing (checked on the
    /// host: `bins` is read back, one wait; NaN in it is not monotonic); otherwise
    /// [`Error::InvalidValue`]. For increasing bins the index `i` has `bins[i-1] <= x <
    /// bins[i]` (`bins[i-1] < x <= bins[i]` with `right`), as NumPy.
    pub fn digitize(&self, bins: &DeviceArray<T>, right: bool) -> Result<DeviceArray<i64>> {
        if bins.ndim() != 1 {
            return Err(Error::InvalidValue(format!(
                "digitize: bins must be 1-D, not of shape {:?}",
                bins.shape()
            )));
        }
        let edges: Vec<f64> = bins.to_vec()?.into_iter().map(Element::to_f64).collect();
        let increasing = edges.windows(2).all(|w| w[0] <= w[1]);
        let decreasing = edges.windows(2).all(|w| w[0] >= w[1]);
        let side = match right {
            true => Side::Left,
            false => Side::Right,
        };
        match (increasing, decreasing) {
            (true, _) => bins.searchsorted(self, side, None),
            (false, true) => {
                let found = bins.flip(0)?.searchsorted(self, side, None)?;
                (bins.len() as i64 - &found).eval()
            }
            (false, false) => Err(Error::InvalidValue(
                "digitize: bins must be monotonically increasing or decreasing".into(),
            )),
        }
    }
}
