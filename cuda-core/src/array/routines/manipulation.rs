//! NumPy's "array manipulation" chapter, for what moves data (the views, `transpose`,
//! `moveaxis`, `split`, `atleast_*d`, `broadcast_arrays`, ... are in `view.rs`): copying and
//! filling (`copyto`, `ndarray.copy`, `ascontiguousarray`, `ndarray.fill`); `reshape`, which
//! copies when no view serves, with `ravel` and `flatten`; joining (`concatenate`, `stack`,
//! `hstack`, `vstack`, `dstack`, `append`: one copy per input into a slice of the result);
//! repeating (`tile` and `repeat`: one strided copy of a broadcast view, or one gather for
//! per-element counts); `roll`, `flip`, `pad`; the triangles `tril` and `triu`.

use std::mem::size_of;
use std::sync::Arc;

use cuda_driver::Access;

use crate::array::axis::{Axis, OptionalAxis};
use crate::array::device_array::{c_strides, host_vec, shape_len, DeviceArray, IntoShape};
use crate::array::dtype::Element;
use crate::array::kernels::copy;
use crate::array::kernels::gather::IndexMode;
use crate::array::kernels::registry::{kernel, KernelKey};

use crate::array::kernels::{Arg, ElementwiseKernel};
use crate::array::memory::{overlap, Overlap};
use crate::array::view::{reshaped_strides, Slice};
use crate::error::{Error, Result};

impl<T: Element> DeviceArray<T> {
    /// Queues a copy of `source` (same shape and context, any layout) into the array on the
    /// array's stream: one `cuMemcpyDtoDAsync` when both are contiguous, else a generated
    /// strided copy kernel. When the two overlap in memory (`x[1:]` from `x[:-1]`, a transpose
    /// of itself) the result is NumPy's, as if `source` were read whole before anything is
    /// written: the source goes through a compact temporary first.
    pub fn copy_from(&mut self, source: &DeviceArray<T>) -> Result<()> {
        if source.shape() != self.shape() {
            return Err(Error::InvalidValue(format!(
                "copy between arrays of shapes {:?} and {:?}",
                source.shape(),
                self.shape()
            )));
        }
        self.check_writable("copy")?;
        let stream = self.stream().clone();
        if source.context() != self.context() {
            return Err(cuda_driver::Error::WrongContext {
                object: "array",
                used_with: "array",
            }
            .into());
        }
        if self.is_empty() {
            return Ok(());
        }
        match overlap(self.span(), source.span()) {
            Overlap::SameView => return Ok(()),
            Overlap::Partial => {
                let mut staged = Self::empty(&stream, self.shape().to_vec())?;
                staged.copy_from(source)?;
                return self.copy_from(&staged);
            }
            Overlap::Disjoint => {}
        }
        if !(self.is_contiguous() && source.is_contiguous()) {
            return copy::copy(&stream, source, self);
        }
        let read = source.begin_use(&stream, Access::Read)?;
        let write = self.begin_use(&stream, Access::Write)?;
        // SAFETY: both arrays are runs of `size_bytes` bytes of one context; the copy is ordered
        // after the other streams' conflicting uses (begun above) and queued on this array's
        // stream; the uses end once it is queued.
        unsafe { stream.copy_raw_async(*self.ptr_ref(), *source.ptr_ref(), self.size_bytes()) }?;
        drop((read, write));
        Ok(())
    }

    /// A compact (C-contiguous) copy of the array, on the same stream.
    pub fn try_clone(&self) -> Result<Self> {
        let mut copy = Self::empty(self.stream(), self.shape().to_vec())?;
        copy.copy_from(self)?;
        Ok(copy)
    }

    /// The array itself (another view of it) when it is C-contiguous, else a compact copy
    /// ([`try_clone`](Self::try_clone)).
    pub fn to_contiguous(&self) -> Result<Self> {
        match self.is_contiguous() {
            true => Ok(self.view(*self.ptr_ref(), self.shape().to_vec(), self.strides().to_vec())),
            false => self.try_clone(),
        }
    }

    /// Sets every element to `value`, queued on the array's stream (`cuMemsetD8/16/32Async` for
    /// contiguous arrays of types of up to 4 bytes, and of wider types where the value repeats
    /// one 4-byte word, such as zero; a generated kernel otherwise).
    pub fn fill(&mut self, value: T) -> Result<()> {
        self.check_writable("fill")?;
        if self.is_empty() {
            return Ok(());
        }
        // SAFETY: `T` is plain data of `size_of::<T>()` bytes (`DeviceCopy`).
        let bytes = unsafe { std::slice::from_raw_parts((&value as *const T).cast::<u8>(), size_of::<T>()) };
        self.check_storage()?;
        let stream = self.stream().clone();
        let (ptr, len) = (*self.ptr_ref(), self.len());
        let contiguous = self.is_contiguous();
        // SAFETY (all three): the array is one run of `len` elements of the memset's width;
        // queued on its stream.
        match *bytes {
            [b] if contiguous => unsafe { stream.memset_d8_raw_async(ptr, b, len) }?,
            [a, b] if contiguous => unsafe { stream.memset_d16_raw_async(ptr, u16::from_ne_bytes([a, b]), len) }?,
            [a, b, c, d] if contiguous => {
                unsafe { stream.memset_d32_raw_async(ptr, u32::from_ne_bytes([a, b, c, d]), len) }?
            }
            // 8 and 16 bytes of one repeated 4-byte word (0, -1 as an integer, u64::MAX, ...).
            [a, b, c, d, ..] if contiguous && bytes.chunks(4).all(|word| word == [a, b, c, d]) => {
                let words = len * (bytes.len() / 4);
                unsafe { stream.memset_d32_raw_async(ptr, u32::from_ne_bytes([a, b, c, d]), words) }?
            }
            _ => copy::fill(&stream, self, value)?,
        }
        Ok(())
    }
}

impl<T: Element> DeviceArray<T> {
    /// The arrays joined along `axis` (NumPy's `concatenate`): every other extent must agree.
    /// The result is a new compact array on the first array's stream, written by one copy per
    /// input into its slice of the result (`cuMemcpyDtoDAsync` when the slice and the input are
    /// contiguous, else one strided copy kernel); each input is ordered after its own stream.
    /// A negative `axis` counts from the end.
    pub fn concatenate(arrays: &[&DeviceArray<T>], axis: impl Into<Axis>) -> Result<Self> {
        let Some(first) = arrays.first() else {
            return Err(Error::InvalidValue("concatenate needs at least one array".into()));
        };
        let ndim = first.ndim();
        if ndim == 0 {
            return Err(Error::InvalidValue(
                "zero-dimensional arrays cannot be concatenated".into(),
            ));
        }
        let axis = axis.into().index(ndim)?;
        let mut shape = first.shape().to_vec();
        shape[axis] = 0;
        for array in arrays {
            let compatible =
                array.ndim() == ndim && (0..ndim).all(|a| a == axis || array.shape()[a] == first.shape()[a]);
            if !compatible {
                return Err(Error::InvalidValue(format!(
                    "concatenate along axis {axis}: shapes {:?} and {:?} do not match off that axis",
                    first.shape(),
                    array.shape()
                )));
            }
            shape[axis] = shape[axis].checked_add(array.shape()[axis]).ok_or_else(|| {
                Error::InvalidValue(format!(
                    "concatenate: the extents along axis {axis} add up to more than usize holds"
                ))
            })?;
        }
        let out = Self::empty(first.stream(), shape)?;
        let mut start = 0;
        for array in arrays {
            let extent = array.shape()[axis];
            let slices: Vec<Slice> = (0..ndim)
                .map(|a| match a == axis {
                    true => Slice::from(start..start + extent),
                    false => Slice::from(..),
                })
                .collect();
            out.slice(&slices)?.copy_from(array)?;
            start += extent;
        }
        Ok(out)
    }

    /// The arrays (all of one shape) stacked along a new axis `axis` of the result (NumPy's
    /// `stack`; `-1` stacks along a new last axis).
    pub fn stack(arrays: &[&DeviceArray<T>], axis: impl Into<Axis>) -> Result<Self> {
        let Some(first) = arrays.first() else {
            return Err(Error::InvalidValue("stack needs at least one array".into()));
        };
        if let Some(other) = arrays.iter().find(|a| a.shape() != first.shape()) {
            return Err(Error::InvalidValue(format!(
                "stack: all arrays must have one shape, not {:?} and {:?}",
                first.shape(),
                other.shape()
            )));
        }
        let axis = axis.into().index(first.ndim() + 1)?;
        let expanded = arrays.iter().map(|a| a.expand_dims(axis)).collect::<Result<Vec<_>>>()?;
        Self::concatenate(&expanded.iter().collect::<Vec<_>>(), axis)
    }

    /// The arrays joined along their second axis, or the first for 1-D arrays (NumPy's `hstack`).
    pub fn hstack(arrays: &[&DeviceArray<T>]) -> Result<Self> {
        let lines = arrays
            .iter()
            .map(|a| match a.ndim() {
                0 => a.reshape([1]),
                _ => Ok(a.view(*a.ptr_ref(), a.shape().to_vec(), a.strides().to_vec())),
            })
            .collect::<Result<Vec<_>>>()?;
        let axis = match lines.first().map(|a| a.ndim()) {
            Some(1) => 0,
            _ => 1,
        };
        Self::concatenate(&lines.iter().collect::<Vec<_>>(), axis)
    }

    /// The arrays joined along their first axis, 1-D arrays as rows (NumPy's `vstack`).
    pub fn vstack(arrays: &[&DeviceArray<T>]) -> Result<Self> {
        let rows = arrays
            .iter()
            .map(|a| match a.ndim() {
                0 | 1 => a.reshape([1, a.len()]),
                _ => Ok(a.view(*a.ptr_ref(), a.shape().to_vec(), a.strides().to_vec())),
            })
            .collect::<Result<Vec<_>>>()?;
        Self::concatenate(&rows.iter().collect::<Vec<_>>(), 0)
    }
}

/// How [`pad`](DeviceArray::pad) fills the new elements.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum PadMode<T> {
    /// With this value (NumPy's `mode='constant'`).
    Constant(T),
    /// With the nearest edge element of the axis (NumPy's `mode='edge'`).
    Edge,
}

impl<T: Element> DeviceArray<T> {
    /// The same elements with another shape of as many elements (NumPy's `reshape`, in C
    /// order): a view when the layout allows one (always for a compact array), else a compact
    /// copy on the array's stream. [`reshape_view`](Self::reshape_view) never copies;
    /// [`infer_shape`](Self::infer_shape) resolves a `-1` extent:
    ///
    /// ```no_run
    /// # use cuda_core::{Device, DeviceArray};
    /// # fn main() -> cuda_core::Result<()> {
    /// # let stream = Device::new(0)?.create_stream()?;
    /// let x = DeviceArray::<f32>::zeros(&stream, [4, 6])?;
    /// let y = x.transpose().reshape(x.infer_shape(&[3, -1])?)?; // a copy: shape [3, 8]
    /// assert_eq!(y.shape(), [3, 8]);
    /// # Ok(())
    /// # }
    /// ```
    pub fn reshape(&self, shape: impl IntoShape) -> Result<Self> {
        let shape = shape.into_shape();
        self.check_reshape(&shape)?;
        match reshaped_strides(self.shape(), self.strides(), &shape) {
            Some(_) => self.reshape_view(shape),
            None => self.try_clone()?.reshape_view(shape),
        }
    }

    /// The elements in C order as a 1-D array (NumPy's `ravel`): a view when the layout allows,
    /// else a compact copy.
    pub fn ravel(&self) -> Result<Self> {
        self.reshape([self.len()])
    }

    /// The elements in C order as a new compact 1-D array, always a copy (NumPy's `flatten`).
    pub fn flatten(&self) -> Result<Self> {
        self.try_clone()?.reshape_view([self.len()])
    }

    /// The arrays joined along their third axis, after [`atleast_3d`](Self::atleast_3d)
    /// (NumPy's `dstack`).
    pub fn dstack(arrays: &[&DeviceArray<T>]) -> Result<Self> {
        let planes: Vec<Self> = arrays.iter().map(|a| a.atleast_3d()).collect();
        Self::concatenate(&planes.iter().collect::<Vec<_>>(), 2)
    }

    /// `values` appended to the array along `axis`, or to the flattened array for `None`
    /// (NumPy's `append`), as a new compact array.
    pub fn append(&self, values: &DeviceArray<T>, axis: impl Into<OptionalAxis>) -> Result<Self> {
        match axis.into().get() {
            Some(axis) => Self::concatenate(&[self, values], axis),
            None => Self::concatenate(&[&self.ravel()?, &values.ravel()?], 0),
        }
    }

    /// The array repeated `reps[i]` times along axis `i` (NumPy's `tile`; `reps` and the shape
    /// are aligned at their ends, missing leading entries being 1). One strided copy from a
    /// broadcast view into the new compact array.
    pub fn tile(&self, reps: &[usize]) -> Result<Self> {
        let ndim = self.ndim().max(reps.len());
        fn pad<V: Copy>(values: &[V], fill: V, ndim: usize) -> Vec<V> {
            [&vec![fill; ndim - values.len()][..], values].concat()
        }
        let (extents, strides, reps) = (
            pad(self.shape(), 1, ndim),
            pad(self.strides(), 0, ndim),
            pad(reps, 1, ndim),
        );
        let interleaved_shape: Vec<usize> = reps.iter().zip(&extents).flat_map(|(&r, &n)| [r, n]).collect();
        let interleaved_strides: Vec<isize> = strides.iter().flat_map(|&s| [0, s]).collect();
        let shape = reps
            .iter()
            .zip(&extents)
            .map(|(&r, &n)| r.checked_mul(n))
            .collect::<Option<Vec<usize>>>()
            .ok_or_else(|| Error::InvalidValue(format!("tile: {reps:?} copies of shape {extents:?} overflow")))?;
        shape_len(&shape)?;
        self.broadcast_copy(interleaved_shape, interleaved_strides, shape)
    }

    /// Each element repeated `repeats` times along `axis`, or in the flattened array for
    /// `None` (NumPy's `repeat` with one count). One strided copy from a broadcast view.
    pub fn repeat(&self, repeats: usize, axis: impl Into<OptionalAxis>) -> Result<Self> {
        let (source, axis) = match axis.into().get() {
            None => (self.ravel()?, 0),
            Some(axis) => (
                self.view(*self.ptr_ref(), self.shape().to_vec(), self.strides().to_vec()),
                axis.index(self.ndim())?,
            ),
        };
        let mut wide_shape = source.shape().to_vec();
        let mut wide_strides = source.strides().to_vec();
        wide_shape.insert(axis + 1, repeats);
        wide_strides.insert(axis + 1, 0);
        let mut shape = source.shape().to_vec();
        shape[axis] = shape[axis].checked_mul(repeats).ok_or_else(|| {
            Error::InvalidValue(format!(
                "repeat: {repeats} repeats of an axis of extent {} overflow",
                shape[axis]
            ))
        })?;
        shape_len(&shape)?;
        source.broadcast_copy(wide_shape, wide_strides, shape)
    }

    /// Element `i` along `axis` repeated `counts[i]` times (NumPy's `repeat` with a count per
    /// element; `None` flattens first). The source index of each output position is made on
    /// the host and uploaded, then one gather kernel runs ([`take`](Self::take)).
    pub fn repeat_each(&self, counts: &[usize], axis: impl Into<OptionalAxis>) -> Result<Self> {
        let (source, axis) = match axis.into().get() {
            None => (self.ravel()?, 0),
            Some(axis) => (
                self.view(*self.ptr_ref(), self.shape().to_vec(), self.strides().to_vec()),
                axis.index(self.ndim())?,
            ),
        };
        let extent = source.shape()[axis];
        if counts.len() != extent {
            return Err(Error::InvalidValue(format!(
                "repeat: {} counts for an axis of extent {extent}",
                counts.len()
            )));
        }
        let total = counts
            .iter()
            .try_fold(0usize, |total, &count| total.checked_add(count))
            .ok_or_else(|| Error::InvalidValue("repeat: the counts add up to more than usize holds".into()))?;
        let mut shape = source.shape().to_vec();
        shape[axis] = total;
        // The result first: a size the device cannot hold fails there, before the host makes
        // an index per output position (in memory it reserves, checked, before filling it).
        let mut out = Self::empty(self.stream(), shape)?;
        let mut indices = host_vec::<i64>(total)?;
        for (i, &count) in counts.iter().enumerate() {
            indices.extend(std::iter::repeat(i as i64).take(count));
        }
        let indices = DeviceArray::from_slice(self.stream(), &indices)?;
        source.take_into(&indices, axis, IndexMode::Clip, &mut out)?;
        Ok(out)
    }

    /// The elements shifted by `shift` places along `axis`, those pushed off one end coming
    /// back at the other (NumPy's `roll`; `None` rolls the flattened array and keeps the
    /// shape; a negative axis counts from the end). A new compact array, written by two copies.
    pub fn roll(&self, shift: i64, axis: impl Into<OptionalAxis>) -> Result<Self> {
        let Some(axis) = axis.into().get() else {
            let flat = self.ravel()?;
            return flat.roll(shift, 0)?.reshape_view(self.shape().to_vec());
        };
        let axis = axis.index(self.ndim())?;
        let n = self.shape()[axis];
        if n == 0 || self.is_empty() {
            return self.try_clone();
        }
        let s = shift.rem_euclid(n as i64) as usize;
        let out = Self::empty(self.stream(), self.shape().to_vec())?;
        let along = |range: std::ops::Range<usize>| {
            let mut slices = vec![Slice::ALL; axis + 1];
            slices[axis] = Slice::from(range);
            slices
        };
        out.slice(&along(s..n))?.copy_from(&self.slice(&along(0..n - s))?)?;
        if s > 0 {
            out.slice(&along(0..s))?.copy_from(&self.slice(&along(n - s..n))?)?;
        }
        Ok(out)
    }

    /// The array with `widths[i] = (before, after)` new elements at the ends of axis `i` (one
    /// pair for every axis, or a single pair for all), filled as `mode` says (NumPy's `pad`).
    /// A new compact array: a fill and one copy for [`PadMode::Constant`], one gather per padded
    /// axis for [`PadMode::Edge`] (an empty axis cannot be edge-padded).
    pub fn pad(&self, widths: &[(usize, usize)], mode: PadMode<T>) -> Result<Self> {
        let widths: Vec<(usize, usize)> = match widths.len() {
            1 => vec![widths[0]; self.ndim()],
            n if n == self.ndim() => widths.to_vec(),
            n => {
                return Err(Error::InvalidValue(format!(
                    "pad: {n} width pairs for an array of shape {:?} (one per axis, or one for all)",
                    self.shape()
                )))
            }
        };
        let mut shape = Vec::with_capacity(self.ndim());
        for (&extent, &(before, after)) in self.shape().iter().zip(&widths) {
            let padded = extent
                .checked_add(before)
                .and_then(|e| e.checked_add(after))
                .ok_or_else(|| Error::InvalidValue(format!("pad: widths {widths:?} overflow")))?;
            shape.push(padded);
        }
        match mode {
            PadMode::Constant(value) => {
                let out = Self::full(self.stream(), shape, value)?;
                let interior: Vec<Slice> = widths
                    .iter()
                    .zip(self.shape())
                    .map(|(&(before, _), &extent)| Slice::from(before..before + extent))
                    .collect();
                out.slice(&interior)?.copy_from(self)?;
                Ok(out)
            }
            PadMode::Edge => {
                // Each padded axis is one gather from the previous result (the array itself, in
                // place, for the first): no compacting copy first.
                let mut out: Option<Self> = None;
                for (axis, &(before, _)) in widths.iter().enumerate().filter(|(_, &w)| w != (0, 0)) {
                    let extent = self.shape()[axis];
                    if extent == 0 {
                        return Err(Error::InvalidValue(format!(
                            "pad: axis {axis} is empty, so it has no edge to repeat"
                        )));
                    }
                    let last = extent as i64 - 1;
                    let source = out.as_ref().unwrap_or(self);
                    let mut step_shape = source.shape().to_vec();
                    step_shape[axis] = shape[axis];
                    // The result first: a size the device cannot hold fails there, before the
                    // host makes an index per position (`shape` holds the checked `before +
                    // extent + after`; the host vector is reserved, checked, before it is filled).
                    let mut step = Self::empty(self.stream(), step_shape)?;
                    let mut indices = host_vec::<i64>(shape[axis])?;
                    indices.extend((0..shape[axis]).map(|i| (i as i64 - before as i64).clamp(0, last)));
                    let indices = DeviceArray::from_slice(self.stream(), &indices)?;
                    source.take_into(&indices, axis, IndexMode::Clip, &mut step)?;
                    out = Some(step);
                }
                out.map_or_else(|| self.try_clone(), Ok)
            }
        }
    }

    /// A compact array of `shape` holding the elements of the view of this array's storage
    /// with `view_shape` and `view_strides` (which hold as many elements, in C order): one copy.
    fn broadcast_copy(&self, view_shape: Vec<usize>, view_strides: Vec<isize>, shape: Vec<usize>) -> Result<Self> {
        let view = self.view(*self.ptr_ref(), view_shape, view_strides);
        let mut out = Self::empty(self.stream(), view.shape().to_vec())?;
        out.copy_from(&view)?;
        let strides = c_strides(&shape);
        Ok(out.view(*out.ptr_ref(), shape, strides))
    }
}

impl<T: Element> DeviceArray<T> {
    /// The lower triangle: elements above diagonal `k` of the last two axes set to zero (NumPy's
    /// `tril`; a 1-D array is taken as the rows of a square matrix). One kernel into a new
    /// compact array on the array's stream.
    pub fn tril(&self, k: i64) -> Result<Self> {
        self.triangle(k, true)
    }

    /// The upper triangle: elements below diagonal `k` set to zero (NumPy's `triu`).
    pub fn triu(&self, k: i64) -> Result<Self> {
        self.triangle(k, false)
    }

    fn triangle(&self, k: i64, lower: bool) -> Result<Self> {
        let input = match self.ndim() {
            0 => return Err(Error::InvalidValue("tril/triu: a 0-d array has no triangle".into())),
            1 => self.broadcast_to([self.len(), self.len()])?,
            _ => self.view(*self.ptr_ref(), self.shape().to_vec(), self.strides().to_vec()),
        };
        let shape = input.shape().to_vec();
        let (rows, cols) = (shape[shape.len() - 2], shape[shape.len() - 1]);
        let mut out = Self::empty(self.stream(), shape)?;
        if out.is_empty() {
            return Ok(out);
        }
        let kernel = triangle_kernel(lower)?;
        let args = [
            Arg::from(&input),
            Arg::scalar(k),
            Arg::scalar(rows as u64),
            Arg::scalar(cols as u64),
            Arg::from(&mut out),
        ];
        kernel.launch_generated(self.stream(), &args)?;
        Ok(out)
    }
}

/// The kernel of `tril` (`lower`) or `triu`, built once per process.
fn triangle_kernel(lower: bool) -> Result<Arc<ElementwiseKernel>> {
    let (comparison, name) = match lower {
        true => ("<=", "cuda_core_tril"),
        false => (">=", "cuda_core_triu"),
    };
    kernel(KernelKey::Named(name), || {
        let operation =
            format!("out = ((long long)(i % cols) - (long long)((i / cols) % rows) {comparison} k) ? x : (T)0");
        ElementwiseKernel::new(
            "T x, long long k, unsigned long long rows, unsigned long long cols",
            "T out",
            &operation,
            name,
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::array::ArgType;
    use crate::{Arch, CompileTarget, DType, Program, ProgramOptions};

    const TYPES: [DType; 15] = DType::ALL;

    fn compiles(source: String, what: &str) {
        let options = ProgramOptions {
            cache: false,
            ..ProgramOptions::for_arch(Arch::Sm(90))
        };
        if let Err(error) = Program::new(source.clone(), options).compile(CompileTarget::Ptx) {
            panic!("{what}: {error}\n{source}");
        }
    }

    #[test]
    fn triangles_and_bands_compile_for_every_element_type() {
        let kernels = [triangle_kernel(true).unwrap(), triangle_kernel(false).unwrap()];
        for dtype in TYPES {
            let signature = [
                ArgType::Array(dtype),
                ArgType::Scalar(DType::I64),
                ArgType::Scalar(DType::U64),
                ArgType::Scalar(DType::U64),
                ArgType::Array(dtype),
            ];
            for kernel in &kernels {
                compiles(
                    kernel.source_for(&signature).unwrap(),
                    &format!("{} of {dtype}", kernel.name()),
                );
                compiles(
                    kernel
                        .strided_source_for(&signature, 2, crate::array::IndexWidth::SIGNED_32)
                        .unwrap(),
                    &format!("strided {} of {dtype}", kernel.name()),
                );
            }
        }
    }
}
