//! Views: new shapes and strides over an array's storage, never a copy ([`Slice`],
//! [`DeviceArray::slice`], [`transpose`](DeviceArray::transpose), [`permute`](DeviceArray::permute),
//! [`moveaxis`](DeviceArray::moveaxis), [`swapaxes`](DeviceArray::swapaxes),
//! [`broadcast_to`](DeviceArray::broadcast_to), [`broadcast_arrays`](DeviceArray::broadcast_arrays),
//! [`reshape_view`](DeviceArray::reshape_view), [`squeeze`](DeviceArray::squeeze),
//! [`expand_dims`](DeviceArray::expand_dims), the `atleast_*d`, [`split`](DeviceArray::split) and
//! [`array_split`](DeviceArray::array_split)), and NumPy's broadcasting rule
//! ([`broadcast_shapes`]).
//!
//! Naming: [`reshape`](DeviceArray::reshape) is NumPy's (a view when one serves, else a copy;
//! with the routines that copy), and `reshape_view` the form that never copies, for code that
//! writes through the result. Strides are signed: a negative step (`Slice::from(..).step(-1)`,
//! NumPy's `x[::-1]`) and [`flip`](DeviceArray::flip) give reversed views, no copy.

use std::ops::{Range, RangeFrom, RangeFull, RangeInclusive, RangeTo, RangeToInclusive};

use cuda_sys::driver::CUdeviceptr;

use crate::array::axis::{Axes, Axis};
use crate::array::device_array::{c_strides, host_vec, shape_len, DeviceArray, IntoShape};
use crate::array::dtype::Element;
use crate::error::{Error, Result};

/// A range of indices along one axis with a step, like Python's `start:stop:step` (bounds past
/// the end are clipped, as in NumPy). Made from Rust ranges: `Slice::from(1..4)`,
/// `Slice::from(..)`, `Slice::from(2..).step(3)`.
///
/// A negative step walks the same range from its last index down: `Slice::from(..).step(-1)`
/// is NumPy's `x[::-1]`, `Slice::from(..).step(-2)` its `x[::-2]`, and
/// `Slice::from(1..4).step(-1)` selects 3, 2, 1 (NumPy's `x[3:0:-1]`; the range stays ascending,
/// as Rust ranges are). The view is reversed along that axis: a negative stride, no copy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Slice {
    start: usize,
    stop: Option<usize>,
    step: isize,
}

impl Slice {
    /// Every index of the axis.
    pub const ALL: Slice = Slice {
        start: 0,
        stop: None,
        step: 1,
    };

    /// `start..stop` (`None`: to the end), step 1.
    pub const fn new(start: usize, stop: Option<usize>) -> Slice {
        Slice { start, stop, step: 1 }
    }

    /// The same range taking every `step`-th index; a negative step starts from the range's
    /// last index and walks down (`step` 0 is refused when used).
    pub const fn step(self, step: isize) -> Slice {
        Slice { step, ..self }
    }

    /// The single index `index` (the axis stays, with extent 1; [`squeeze`](DeviceArray::squeeze)
    /// drops it). An index past the end selects nothing, as ranges are clipped.
    pub const fn at(index: usize) -> Slice {
        Slice {
            start: index,
            // `usize::MAX` is past the end of any axis, so saturating loses nothing.
            stop: Some(index.saturating_add(1)),
            step: 1,
        }
    }

    /// (first index, extent) on an axis of `extent` elements: the range's first index for a
    /// positive step, its last for a negative one.
    fn resolve(self, extent: usize) -> Result<(usize, usize)> {
        if self.step == 0 {
            return Err(Error::InvalidValue("slice step cannot be zero".into()));
        }
        let start = self.start.min(extent);
        let stop = self.stop.unwrap_or(extent).min(extent).max(start);
        let count = (stop - start).div_ceil(self.step.unsigned_abs());
        match (self.step > 0, count) {
            (true, _) | (false, 0) => Ok((start, count)),
            (false, _) => Ok((stop - 1, count)),
        }
    }
}

impl From<RangeFull> for Slice {
    fn from(_: RangeFull) -> Self {
        Slice::ALL
    }
}

impl From<Range<usize>> for Slice {
    fn from(range: Range<usize>) -> Self {
        Slice::new(range.start, Some(range.end))
    }
}

impl From<RangeFrom<usize>> for Slice {
    fn from(range: RangeFrom<usize>) -> Self {
        Slice::new(range.start, None)
    }
}

impl From<RangeTo<usize>> for Slice {
    fn from(range: RangeTo<usize>) -> Self {
        Slice::new(0, Some(range.end))
    }
}

impl From<RangeInclusive<usize>> for Slice {
    fn from(range: RangeInclusive<usize>) -> Self {
        Slice::new(*range.start(), Some(range.end().saturating_add(1)))
    }
}

impl From<RangeToInclusive<usize>> for Slice {
    fn from(range: RangeToInclusive<usize>) -> Self {
        Slice::new(0, Some(range.end.saturating_add(1)))
    }
}

impl From<usize> for Slice {
    fn from(index: usize) -> Self {
        Slice::at(index)
    }
}

/// Where [`split`](DeviceArray::split) and [`array_split`](DeviceArray::array_split) cut an axis.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SplitAt<'a> {
    /// Into this many pieces.
    Sections(usize),
    /// Before each of these indices (ascending; past the end is clipped, as in NumPy).
    Indices(&'a [usize]),
}

/// The strides that show an array of `shape` and `strides` as `new_shape` (same element
/// count) without moving data, or `None` when no strides can (NumPy's no-copy reshape: each
/// group of old axes whose extents multiply to a group of new ones must be contiguous within
/// itself).
pub(crate) fn reshaped_strides(shape: &[usize], strides: &[isize], new_shape: &[usize]) -> Option<Vec<isize>> {
    if shape.contains(&0) || new_shape.contains(&0) {
        return Some(c_strides(new_shape));
    }
    let (old, old_strides): (Vec<usize>, Vec<isize>) = shape
        .iter()
        .zip(strides)
        .filter(|(&d, _)| d != 1)
        .map(|(&d, &s)| (d, s))
        .unzip();
    let mut out = vec![0isize; new_shape.len()];
    let (mut oi, mut ni) = (0, 0);
    while ni < new_shape.len() && oi < old.len() {
        let (mut nj, mut oj) = (ni + 1, oi + 1);
        let (mut np, mut op) = (new_shape[ni], old[oi]);
        while np != op {
            if np < op {
                np *= *new_shape.get(nj)?;
                nj += 1;
            } else {
                op *= *old.get(oj)?;
                oj += 1;
            }
        }
        if (oi..oj - 1).any(|k| old_strides[k] != old[k + 1] as isize * old_strides[k + 1]) {
            return None;
        }
        out[nj - 1] = old_strides[oj - 1];
        for k in (ni + 1..nj).rev() {
            out[k - 1] = out[k] * new_shape[k] as isize;
        }
        ni = nj;
        oi = oj;
    }
    // Trailing new axes have extent 1: any stride does.
    Some(out)
}

/// `shape` with its one negative extent replaced by the extent that makes `len` elements (see
/// [`DeviceArray::infer_shape`]); `from` is the array's shape, for messages.
fn infer_shape(from: &[usize], len: usize, shape: &[isize]) -> Result<Vec<usize>> {
    let bad = || Error::InvalidValue(format!("cannot reshape {from:?} ({len} elements) to {shape:?}"));
    let mut inferred = None;
    let mut known = 1usize;
    for (axis, &extent) in shape.iter().enumerate() {
        match extent {
            e if e >= 0 => known = known.checked_mul(e as usize).ok_or_else(bad)?,
            // NumPy takes any negative extent as the unknown one, not only -1.
            _ if inferred.is_none() => inferred = Some(axis),
            _ => return Err(bad()),
        }
    }
    let mut out: Vec<usize> = shape.iter().map(|&e| e.max(0) as usize).collect();
    if let Some(axis) = inferred {
        if known == 0 || len % known != 0 {
            return Err(bad());
        }
        out[axis] = len / known;
    }
    Ok(out)
}

/// The bounds of the pieces `split` and `array_split` cut an axis of `extent` into: piece `i`
/// is `bounds[i]..bounds[i + 1]`.
fn split_bounds(extent: usize, at: SplitAt<'_>, equal: bool) -> Result<Vec<usize>> {
    match at {
        SplitAt::Sections(0) => Err(Error::InvalidValue(
            "split: the number of sections must be above 0".into(),
        )),
        SplitAt::Sections(k) if equal && extent % k != 0 => Err(Error::InvalidValue(format!(
            "split: {k} sections do not divide an axis of extent {extent} equally (array_split allows it)"
        ))),
        SplitAt::Sections(k) => {
            let (size, extra) = (extent / k, extent % k);
            let count = k
                .checked_add(1)
                .ok_or_else(|| Error::InvalidValue(format!("split: {k} sections are more than can be held")))?;
            let mut bounds = host_vec::<usize>(count)?;
            bounds.extend((0..=k).map(|i| i * size + i.min(extra)));
            Ok(bounds)
        }
        // A bound below the one before gives an empty piece (and the next starts from it), as
        // in NumPy.
        SplitAt::Indices(indices) => Ok(std::iter::once(0)
            .chain(indices.iter().map(|&i| i.min(extent)))
            .chain(std::iter::once(extent))
            .collect()),
    }
}

/// The shape two shapes broadcast to under NumPy's rule (align trailing axes; each pair equal
/// or one of them 1), or an error naming both.
pub fn broadcast_shapes(a: &[usize], b: &[usize]) -> Result<Vec<usize>> {
    let ndim = a.len().max(b.len());
    let mut out = vec![0; ndim];
    for (axis, slot) in out.iter_mut().enumerate() {
        let pick = |s: &[usize]| match (axis + s.len()).checked_sub(ndim) {
            Some(i) => s[i],
            None => 1,
        };
        let (x, y) = (pick(a), pick(b));
        *slot = match (x, y) {
            _ if x == y => x,
            (1, y) => y,
            (x, 1) => x,
            _ => {
                return Err(Error::InvalidValue(format!(
                    "shapes {a:?} and {b:?} cannot be broadcast together (axis {axis}: {x} vs {y})"
                )))
            }
        };
    }
    Ok(out)
}

/// The largest stride a view has, in elements (either sign): its bytes (at most 8 per element)
/// fit `isize`, as byte strides in DLPack and `__cuda_array_interface__` must.
const MAX_STRIDE: usize = isize::MAX as usize / 8;

/// The shape, strides and offset of the first element (elements, negative where a reversed
/// axis starts above the array's first element) of the view `slices` select of an array of
/// `shape` and `strides`, in checked arithmetic (a typed error, never a wrapped stride). A
/// stride is multiplied by the step as in NumPy, except that an axis of extent 0 or 1 whose
/// product would pass [`MAX_STRIDE`] keeps its stride (any stride is right there); a zero-size
/// view has offset 0.
pub(crate) fn slice_layout(
    shape: &[usize],
    strides: &[isize],
    slices: &[Slice],
) -> Result<(Vec<usize>, Vec<isize>, isize)> {
    let mut shape = shape.to_vec();
    let mut strides = strides.to_vec();
    let mut offset = 0isize;
    for (axis, slice) in slices.iter().enumerate() {
        let (start, extent) = slice.resolve(shape[axis])?;
        let overflow = || Error::InvalidValue(format!("slice {slice:?} of axis {axis} overflows the view's layout"));
        if extent > 0 {
            offset = isize::try_from(start)
                .ok()
                .and_then(|start| start.checked_mul(strides[axis]))
                .and_then(|o| offset.checked_add(o))
                .ok_or_else(overflow)?;
        }
        strides[axis] = match strides[axis]
            .checked_mul(slice.step)
            .filter(|s| s.unsigned_abs() <= MAX_STRIDE)
        {
            Some(stride) => stride,
            None if extent <= 1 => strides[axis],
            None => return Err(overflow()),
        };
        shape[axis] = extent;
    }
    if shape.contains(&0) {
        offset = 0;
    }
    Ok((shape, strides, offset))
}

/// Refuses a view of `len` elements of `size` bytes whose size in bytes does not fit `isize`
/// (NumPy's "array is too big"), so `size_bytes` and host copies of it are well defined.
pub(crate) fn check_bytes(shape: &[usize], size: usize) -> Result<usize> {
    shape_len(shape)?
        .checked_mul(size)
        .filter(|&bytes| isize::try_from(bytes).is_ok())
        .ok_or_else(|| {
            Error::InvalidValue(format!(
                "an array of shape {shape:?} is too big: its size in bytes overflows"
            ))
        })
}

/// The shape and strides of the view of an array of `shape` and `strides` whose axis `i` is
/// the array's axis `axes[i]`, or an error when `axes` is not a permutation of its axes.
fn permuted_layout(shape: &[usize], strides: &[isize], axes: &[usize]) -> Result<(Vec<usize>, Vec<isize>)> {
    let mut seen = vec![false; shape.len()];
    if axes.len() != shape.len()
        || axes
            .iter()
            .any(|&a| a >= shape.len() || std::mem::replace(&mut seen[a], true))
    {
        return Err(Error::InvalidValue(format!(
            "axes {axes:?} are not a permutation of the {} axes of shape {shape:?}",
            shape.len()
        )));
    }
    Ok((
        axes.iter().map(|&a| shape[a]).collect(),
        axes.iter().map(|&a| strides[a]).collect(),
    ))
}

/// The strides of an array of `shape` and `strides` seen as `target` (broadcast: new leading
/// axes and extents of 1 stretched get stride 0), or `None` when it does not broadcast.
pub(crate) fn broadcast_strides(shape: &[usize], strides: &[isize], target: &[usize]) -> Option<Vec<isize>> {
    let lead = target.len().checked_sub(shape.len())?;
    let mut out = vec![0; target.len()];
    for (axis, &extent) in shape.iter().enumerate() {
        let want = target[lead + axis];
        out[lead + axis] = match extent {
            _ if extent == want => strides[axis],
            1 => 0,
            _ => return None,
        };
    }
    Some(out)
}

impl<T: Element> DeviceArray<T> {
    /// A view of a range of each leading axis (`slices.len()` at most `ndim`; the other axes
    /// are whole). Extents shrink to what the ranges select; no data moves.
    ///
    /// ```no_run
    /// # use cuda_core::{Device, DeviceArray, Slice};
    /// # fn main() -> cuda_core::Result<()> {
    /// # let stream = Device::new(0)?.create_stream()?;
    /// let x = DeviceArray::arange(&stream, 0.0f32, 12.0, 1.0)?.reshape([3, 4])?;
    /// let y = x.slice(&[Slice::from(1..), Slice::from(..).step(2)])?; // x[1:, ::2]
    /// assert_eq!(y.to_vec()?, [4.0, 6.0, 8.0, 10.0]);
    /// # Ok(())
    /// # }
    /// ```
    pub fn slice(&self, slices: &[Slice]) -> Result<Self> {
        if slices.len() > self.ndim() {
            return Err(Error::InvalidValue(format!(
                "{} slices for an array of {} dimensions (shape {:?})",
                slices.len(),
                self.ndim(),
                self.shape()
            )));
        }
        let (shape, strides, offset) = slice_layout(self.shape(), self.strides(), slices)?;
        let bytes = offset
            .checked_mul(std::mem::size_of::<T>() as isize)
            .ok_or_else(|| Error::InvalidValue(format!("slice offset {offset} overflows")))?;
        Ok(self.view(self.first().wrapping_add_signed(bytes as i64), shape, strides))
    }

    /// The view with the order of elements along `axes` reversed (NumPy's `flip`): the first
    /// element moves to the last along each of them and their strides change sign, no data
    /// moves. `axes` is one axis, a list ([`Axes::EMPTY`] is the view itself) or `None` /
    /// [`Axes::ALL`] (every axis, NumPy's `axis=None`); negative axes count from the end, and
    /// an axis named twice is an error.
    ///
    /// ```no_run
    /// # use cuda_core::{Device, DeviceArray};
    /// # fn main() -> cuda_core::Result<()> {
    /// # let stream = Device::new(0)?.create_stream()?;
    /// let x = DeviceArray::from_slice(&stream, &[1, 2, 3, 4, 5, 6])?.reshape([2, 3])?;
    /// let y = x.flip(-1)?; // x[:, ::-1]
    /// assert_eq!((y.strides(), y.to_vec()?), (&[3, -1][..], vec![3, 2, 1, 6, 5, 4]));
    /// assert_eq!(x.flip(None)?.to_vec()?, [6, 5, 4, 3, 2, 1]); // np.flip(x)
    /// # Ok(())
    /// # }
    /// ```
    pub fn flip(&self, axes: impl Into<Axes>) -> Result<Self> {
        let mut slices = vec![Slice::ALL; self.ndim()];
        for axis in axes.into().indices(self.ndim())? {
            slices[axis] = Slice::ALL.step(-1);
        }
        self.slice(&slices)
    }

    /// The rows in reverse order (NumPy's `flipud`: `flip` of axis 0); at least one dimension.
    pub fn flipud(&self) -> Result<Self> {
        self.flip(0)
    }

    /// The columns in reverse order (NumPy's `fliplr`: `flip` of axis 1); at least two
    /// dimensions.
    pub fn fliplr(&self) -> Result<Self> {
        self.flip(1)
    }

    /// The axes in reverse order (a matrix's transpose).
    pub fn transpose(&self) -> Self {
        let shape = self.shape().iter().rev().copied().collect();
        let strides = self.strides().iter().rev().copied().collect();
        self.view(self.first(), shape, strides)
    }

    /// The axes reordered: axis `i` of the view is axis `axes[i]` of the array (a permutation;
    /// NumPy's `transpose(axes)`, negative axes counting from the end). `None` /
    /// [`Axes::ALL`] reverses them, as NumPy's `axes=None`.
    pub fn permute(&self, axes: impl Into<Axes>) -> Result<Self> {
        let axes = axes.into();
        if axes.is_all() {
            return Ok(self.transpose());
        }
        let axes = axes.indices(self.ndim())?;
        let (shape, strides) = permuted_layout(self.shape(), self.strides(), &axes)?;
        Ok(self.view(self.first(), shape, strides))
    }

    /// A read-only view as `shape` under NumPy's broadcasting rule (extents of 1 and new
    /// leading axes repeat with stride 0). A shape whose size in bytes overflows `isize` is an
    /// error, as NumPy's "array is too big".
    pub fn broadcast_to(&self, shape: impl IntoShape) -> Result<Self> {
        let target = shape.into_shape();
        check_bytes(&target, std::mem::size_of::<T>())?;
        match broadcast_strides(self.shape(), self.strides(), &target) {
            Some(strides) => Ok(self.view(self.first(), target, strides)),
            None => Err(Error::InvalidValue(format!(
                "an array of shape {:?} cannot be broadcast to {target:?}",
                self.shape()
            ))),
        }
    }

    /// The same elements with another shape of as many elements, always a view: an error when
    /// the layout cannot give one (a transpose made 1-D, say). [`reshape`](Self::reshape) copies
    /// in that case, as NumPy's `reshape` does; use this one where a copy would be a bug (writing
    /// through the result).
    pub fn reshape_view(&self, shape: impl IntoShape) -> Result<Self> {
        let shape = shape.into_shape();
        self.check_reshape(&shape)?;
        match reshaped_strides(self.shape(), self.strides(), &shape) {
            Some(strides) => Ok(self.view(self.first(), shape, strides)),
            None => Err(Error::InvalidValue(format!(
                "cannot reshape the view of shape {:?} and strides {:?} to {shape:?} without a copy (reshape() copies)",
                self.shape(),
                self.strides()
            ))),
        }
    }

    /// An error unless `shape` holds as many elements as the array.
    pub(crate) fn check_reshape(&self, shape: &[usize]) -> Result<()> {
        let len = shape_len(shape)?;
        match len == self.len() {
            true => Ok(()),
            false => Err(Error::InvalidValue(format!(
                "cannot reshape {:?} ({} elements) to {shape:?} ({len} elements)",
                self.shape(),
                self.len()
            ))),
        }
    }

    /// `shape` with its one negative extent (`-1`, or any other below 0, as NumPy takes them), if
    /// any, replaced by the extent that keeps the element count (NumPy's inferred dimension);
    /// two negative extents and a count that does not divide are errors.
    pub fn infer_shape(&self, shape: &[isize]) -> Result<Vec<usize>> {
        infer_shape(self.shape(), self.len(), shape)
    }

    /// The view without its axes of extent 1.
    pub fn squeeze(&self) -> Self {
        let (shape, strides) = self
            .shape()
            .iter()
            .zip(self.strides())
            .filter(|(&d, _)| d != 1)
            .map(|(&d, &s)| (d, s))
            .unzip();
        self.view(self.first(), shape, strides)
    }

    /// The view without axis `axis` (negative: from the end), which must have extent 1.
    pub fn squeeze_axis(&self, axis: impl Into<Axis>) -> Result<Self> {
        let axis = axis.into().index(self.ndim())?;
        match self.shape().get(axis) {
            Some(1) => {
                let mut shape = self.shape().to_vec();
                let mut strides = self.strides().to_vec();
                shape.remove(axis);
                strides.remove(axis);
                Ok(self.view(self.first(), shape, strides))
            }
            _ => Err(Error::InvalidValue(format!(
                "cannot squeeze axis {axis} of shape {:?}: it is not an axis of extent 1",
                self.shape()
            ))),
        }
    }

    /// The view with a new axis of extent 1 at position `axis` of the result (`0..=ndim`, or
    /// negative from the end: `-1` appends it, as in NumPy).
    pub fn expand_dims(&self, axis: impl Into<Axis>) -> Result<Self> {
        let axis = axis.into().index(self.ndim() + 1)?;
        let mut shape = self.shape().to_vec();
        let mut strides = self.strides().to_vec();
        shape.insert(axis, 1);
        strides.insert(axis, 0);
        Ok(self.view(self.first(), shape, strides))
    }

    /// The view with axis `source` moved to position `destination`, the others keeping their
    /// order (NumPy's `moveaxis`; negative axes count from the end).
    pub fn moveaxis(&self, source: impl Into<Axis>, destination: impl Into<Axis>) -> Result<Self> {
        let ndim = self.ndim();
        let (source, destination) = (source.into().index(ndim)?, destination.into().index(ndim)?);
        let mut order: Vec<usize> = (0..ndim).filter(|&a| a != source).collect();
        order.insert(destination, source);
        self.permute(&order)
    }

    /// The view with axes `a` and `b` exchanged (NumPy's `swapaxes`; negative axes count from
    /// the end).
    pub fn swapaxes(&self, a: impl Into<Axis>, b: impl Into<Axis>) -> Result<Self> {
        let mut order: Vec<usize> = (0..self.ndim()).collect();
        order.swap(a.into().index(self.ndim())?, b.into().index(self.ndim())?);
        self.permute(&order)
    }

    /// The view with at least one dimension (a 0-d array becomes shape `[1]`).
    pub fn atleast_1d(&self) -> Self {
        self.padded_view(&[], 1, &[])
    }

    /// The view with at least two dimensions (NumPy's `atleast_2d`: `[n]` becomes `[1, n]`).
    pub fn atleast_2d(&self) -> Self {
        match self.ndim() {
            0 => self.padded_view(&[1, 1], 0, &[]),
            1 => self.padded_view(&[1], 0, &[]),
            _ => self.padded_view(&[], 0, &[]),
        }
    }

    /// The view with at least three dimensions (NumPy's `atleast_3d`: `[n]` becomes `[1, n, 1]`,
    /// `[m, n]` becomes `[m, n, 1]`).
    pub fn atleast_3d(&self) -> Self {
        match self.ndim() {
            0 => self.padded_view(&[1, 1, 1], 0, &[]),
            1 => self.padded_view(&[1], 0, &[1]),
            2 => self.padded_view(&[], 0, &[1]),
            _ => self.padded_view(&[], 0, &[]),
        }
    }

    /// The view with axes of extent 1 added: `before` in front, `after` behind, and, when the
    /// array has fewer than `min_ndim` dimensions, in front until it has them.
    fn padded_view(&self, before: &[usize], min_ndim: usize, after: &[usize]) -> Self {
        let lead = min_ndim.saturating_sub(self.ndim()) + before.len();
        let shape = [&vec![1; lead][..], self.shape(), after].concat();
        let strides = [&vec![0; lead][..], self.strides(), &vec![0; after.len()][..]].concat();
        self.view(self.first(), shape, strides)
    }

    /// Views of the arrays broadcast to their common shape (NumPy's `broadcast_arrays`),
    /// read-only as [`broadcast_to`](Self::broadcast_to)'s.
    pub fn broadcast_arrays(arrays: &[&DeviceArray<T>]) -> Result<Vec<Self>> {
        let shape = arrays
            .iter()
            .try_fold(Vec::new(), |shape, a| broadcast_shapes(&shape, a.shape()))?;
        arrays.iter().map(|a| a.broadcast_to(shape.clone())).collect()
    }

    /// Views of consecutive pieces along `axis` (NumPy's `split`): `SplitAt::Sections(k)`
    /// splits into `k` equal pieces (an error unless `k` divides the extent),
    /// `SplitAt::Indices(&[i, j])` into `[..i]`, `[i..j]`, `[j..]` (clipped to the axis).
    /// Negative axes count from the end.
    pub fn split(&self, at: SplitAt<'_>, axis: impl Into<Axis>) -> Result<Vec<Self>> {
        let axis = axis.into().index(self.ndim())?;
        let bounds = split_bounds(self.shape()[axis], at, true)?;
        self.pieces(&bounds, axis)
    }

    /// Like [`split`](Self::split), `k` sections allowed not to divide the extent: the first
    /// `extent % k` pieces get one element more (NumPy's `array_split`).
    pub fn array_split(&self, at: SplitAt<'_>, axis: impl Into<Axis>) -> Result<Vec<Self>> {
        let axis = axis.into().index(self.ndim())?;
        let bounds = split_bounds(self.shape()[axis], at, false)?;
        self.pieces(&bounds, axis)
    }

    /// The views `bounds[i]..bounds[i + 1]` along `axis`.
    fn pieces(&self, bounds: &[usize], axis: usize) -> Result<Vec<Self>> {
        bounds
            .windows(2)
            .map(|w| {
                let mut slices = vec![Slice::ALL; axis + 1];
                slices[axis] = Slice::new(w[0], Some(w[1]));
                self.slice(&slices)
            })
            .collect()
    }

    fn first(&self) -> CUdeviceptr {
        *self.ptr_ref()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slices_resolve_like_python() {
        assert_eq!(Slice::from(1..4).resolve(10).unwrap(), (1, 3));
        assert_eq!(Slice::from(..).step(3).resolve(10).unwrap(), (0, 4));
        assert_eq!(Slice::from(8..20).resolve(10).unwrap(), (8, 2), "clipped at the end");
        assert_eq!(Slice::new(5, Some(2)).resolve(10).unwrap(), (5, 0), "empty");
        assert_eq!(Slice::from(12..).resolve(10).unwrap(), (10, 0));
        assert_eq!(Slice::from(..=2).resolve(10).unwrap(), (0, 3));
        assert_eq!(Slice::from(3usize).resolve(10).unwrap(), (3, 1));
        assert!(Slice::ALL.step(0).resolve(10).is_err());
    }

    #[test]
    fn negative_steps_walk_the_range_from_its_last_index() {
        // x[::-1], x[::-2] and x[3:0:-1] (the range 1..4 walked down) of ten elements.
        assert_eq!(Slice::ALL.step(-1).resolve(10).unwrap(), (9, 10));
        assert_eq!(Slice::ALL.step(-2).resolve(10).unwrap(), (9, 5));
        assert_eq!(Slice::from(1..4).step(-1).resolve(10).unwrap(), (3, 3));
        assert_eq!(Slice::from(..3).step(-5).resolve(10).unwrap(), (2, 1));
        assert_eq!(
            Slice::from(8..20).step(-1).resolve(10).unwrap(),
            (9, 2),
            "clipped at the end"
        );
        assert_eq!(Slice::new(5, Some(2)).step(-1).resolve(10).unwrap(), (5, 0), "empty");
        assert_eq!(Slice::ALL.step(-1).resolve(0).unwrap(), (0, 0));
        // The layouts: the first element is the range's last, strides change sign.
        let (shape, strides, offset) = slice_layout(&[10], &[1], &[Slice::ALL.step(-1)]).unwrap();
        assert_eq!((shape, strides, offset), (vec![10], vec![-1], 9));
        let (shape, strides, offset) =
            slice_layout(&[3, 4], &[4, 1], &[Slice::ALL.step(-1), Slice::from(1..).step(-2)]).unwrap();
        assert_eq!((shape, strides, offset), (vec![3, 2], vec![-4, -2], 8 + 3));
        // A reversed view reversed again is the forward view; its offset goes back down.
        let (shape, strides, offset) = slice_layout(&[10], &[-1], &[Slice::ALL.step(-1)]).unwrap();
        assert_eq!((shape, strides, offset), (vec![10], vec![1], -9));
        // Reversed views reshape without a copy where NumPy's do.
        assert_eq!(reshaped_strides(&[6], &[-1], &[2, 3]).unwrap(), [-3, -1]);
        assert_eq!(reshaped_strides(&[2, 3], &[-3, -1], &[6]).unwrap(), [-1]);
        assert!(
            reshaped_strides(&[2, 3], &[-3, 1], &[6]).is_none(),
            "rows reversed, columns not"
        );
    }

    #[test]
    fn extreme_indices_and_steps_give_right_layouts_or_errors() {
        assert_eq!(Slice::from(usize::MAX).resolve(10).unwrap(), (10, 0), "past the end");
        assert_eq!(
            Slice::at(usize::MAX - 1).resolve(usize::MAX).unwrap(),
            (usize::MAX - 1, 1)
        );
        // A huge step selects the first element only; its stride is not multiplied out.
        let (shape, strides, offset) = slice_layout(&[10, 4], &[4, 1], &[Slice::from(..).step(isize::MAX)]).unwrap();
        assert_eq!((shape, strides, offset), (vec![1, 4], vec![4, 1], 0));
        let (shape, strides, offset) = slice_layout(&[10, 4], &[4, 1], &[Slice::from(..).step(isize::MIN)]).unwrap();
        assert_eq!(
            (shape, strides, offset),
            (vec![1, 4], vec![4, 1], 36),
            "the last row only"
        );
        let (shape, strides, offset) =
            slice_layout(&[10, 4], &[4, 1], &[Slice::from(1..).step(3), Slice::from(2usize)]).unwrap();
        assert_eq!((shape, strides, offset), (vec![3, 1], vec![12, 1], 6));
        let (shape, _, offset) = slice_layout(&[10], &[1], &[Slice::from(usize::MAX)]).unwrap();
        assert_eq!((shape, offset), (vec![0], 0));
        // Strides that would overflow (impossible for a real array) are errors, not wrapped.
        assert!(matches!(
            slice_layout(&[4], &[isize::MAX / 2], &[Slice::from(..).step(3)]),
            Err(Error::InvalidValue(_))
        ));
        assert!(matches!(
            slice_layout(&[4], &[isize::MAX / 2], &[Slice::from(3..)]),
            Err(Error::InvalidValue(_))
        ));
        assert!(matches!(check_bytes(&[1 << 62], 8), Err(Error::InvalidValue(_))));
        assert!(
            matches!(check_bytes(&[1 << 61], 4), Err(Error::InvalidValue(_))),
            "2^63 bytes > isize::MAX"
        );
        assert_eq!(check_bytes(&[1 << 59], 8).unwrap(), 1 << 62);
        assert_eq!(check_bytes(&[3, 0], 8).unwrap(), 0);
    }

    #[test]
    fn reshapes_without_a_copy_where_numpy_does() {
        // Compact: any shape.
        assert_eq!(reshaped_strides(&[2, 3, 4], &[12, 4, 1], &[6, 4]).unwrap(), [4, 1]);
        assert_eq!(reshaped_strides(&[24], &[1], &[2, 3, 4]).unwrap(), [12, 4, 1]);
        // Every other row: the rows split and merge, the row stride stays.
        assert_eq!(reshaped_strides(&[3, 4], &[8, 1], &[3, 2, 2]).unwrap(), [8, 2, 1]);
        assert!(reshaped_strides(&[3, 4], &[8, 1], &[12]).is_none(), "rows not adjacent");
        // A transpose: splitting an axis is fine, merging two is not.
        assert_eq!(reshaped_strides(&[4, 6], &[1, 4], &[2, 2, 6]).unwrap(), [2, 1, 4]);
        assert!(reshaped_strides(&[4, 6], &[1, 4], &[24]).is_none());
        // Axes of extent 1 come and go; broadcast axes merge with each other.
        assert_eq!(reshaped_strides(&[1, 5, 1], &[0, 2, 0], &[5]).unwrap(), [2]);
        assert_eq!(reshaped_strides(&[5], &[3], &[1, 5, 1]).unwrap()[1], 3);
        assert_eq!(reshaped_strides(&[2, 3], &[0, 0], &[6]).unwrap(), [0]);
        assert!(reshaped_strides(&[2, 3], &[0, 1], &[6]).is_none());
        // 0-d and zero-size.
        assert!(reshaped_strides(&[], &[], &[1, 1]).is_some());
        assert_eq!(reshaped_strides(&[1], &[1], &[]).unwrap(), Vec::<isize>::new());
        assert_eq!(reshaped_strides(&[0, 3], &[1, 7], &[3, 0]).unwrap(), [1, 1]);
    }

    #[test]
    fn one_extent_of_minus_one_is_inferred() {
        assert_eq!(infer_shape(&[4, 6], 24, &[3, -1]).unwrap(), [3, 8]);
        assert_eq!(infer_shape(&[4, 6], 24, &[-1]).unwrap(), [24]);
        assert_eq!(infer_shape(&[4, 6], 24, &[2, 3, 4]).unwrap(), [2, 3, 4]);
        // NumPy takes any negative extent as the unknown one.
        assert_eq!(infer_shape(&[4, 6], 24, &[-2, 12]).unwrap(), [2, 12]);
        assert_eq!(infer_shape(&[4, 6], 24, &[-5, 2, 3]).unwrap(), [4, 2, 3]);
        for bad in [&[-1, -1][..], &[-1, -2], &[5, -1], &[5, -3], &[0, -1]] {
            assert!(
                matches!(infer_shape(&[4, 6], 24, bad), Err(Error::InvalidValue(_))),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn splits_cut_where_numpy_does() {
        assert_eq!(split_bounds(6, SplitAt::Sections(3), true).unwrap(), [0, 2, 4, 6]);
        assert!(matches!(
            split_bounds(7, SplitAt::Sections(3), true),
            Err(Error::InvalidValue(_))
        ));
        assert_eq!(split_bounds(7, SplitAt::Sections(3), false).unwrap(), [0, 3, 5, 7]);
        assert_eq!(split_bounds(2, SplitAt::Sections(4), false).unwrap(), [0, 1, 2, 2, 2]);
        assert!(matches!(
            split_bounds(2, SplitAt::Sections(0), false),
            Err(Error::InvalidValue(_))
        ));
        assert_eq!(split_bounds(0, SplitAt::Sections(2), true).unwrap(), [0, 0, 0]);
        assert_eq!(split_bounds(5, SplitAt::Indices(&[2, 3]), true).unwrap(), [0, 2, 3, 5]);
        assert_eq!(split_bounds(5, SplitAt::Indices(&[3, 9]), true).unwrap(), [0, 3, 5, 5]);
        assert_eq!(split_bounds(5, SplitAt::Indices(&[3, 1]), true).unwrap(), [0, 3, 1, 5]);
        assert_eq!(split_bounds(5, SplitAt::Indices(&[]), true).unwrap(), [0, 5]);
    }

    #[test]
    fn broadcasting_follows_numpy_and_names_both_shapes() {
        assert_eq!(broadcast_shapes(&[5, 5], &[5]).unwrap(), [5, 5]);
        assert_eq!(broadcast_shapes(&[5, 1], &[5]).unwrap(), [5, 5]);
        assert_eq!(broadcast_shapes(&[3, 1, 4], &[2, 1]).unwrap(), [3, 2, 4]);
        assert_eq!(broadcast_shapes(&[], &[2, 3]).unwrap(), [2, 3]);
        assert_eq!(broadcast_shapes(&[0, 1], &[1, 3]).unwrap(), [0, 3]);
        let error = broadcast_shapes(&[2, 3], &[4]).unwrap_err().to_string();
        assert!(error.contains("[2, 3]") && error.contains("[4]"), "{error}");
        assert_eq!(broadcast_strides(&[5], &[1], &[5, 5]).unwrap(), [0, 1]);
        assert_eq!(broadcast_strides(&[5, 1], &[1, 1], &[5, 5]).unwrap(), [1, 0]);
        assert_eq!(broadcast_strides(&[3], &[1], &[5, 5]), None);
        assert_eq!(broadcast_strides(&[2, 5], &[5, 1], &[5]), None);
    }
}
