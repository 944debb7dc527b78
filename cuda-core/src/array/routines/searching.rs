//! Searching (NumPy's chapter): `searchsorted`, on the device-wide bounds of
//! [`crate::algorithms::search`].

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
