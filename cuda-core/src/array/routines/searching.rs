//! Searching (NumPy's chapter): `searchsorted`, on the device-wide bounds of
//! [`crate::algorithms::search`], and `digitize` on it; and the selection routines on the
//! compaction of [`crate::algorithms::select`]: `flatnonzero`,
//! `nonzero`, `argwhere`, reading through a boolean mask (`x[mask]`, NumPy's `extract`, and
//! `compress` along an axis) and
//! writing through one (`place`, `putmask`), each one pass that scans the flags and writes the
//! selected elements, indices or values; the indices and coordinates of `flatnonzero`,
//! `nonzero` and `argwhere` take two (the tiles' counts, then the selection).
//!
//! ```no_run
//! use cuda_core::{Device, DeviceArray, ExprOps};
//!
//! # fn main() -> cuda_core::Result<()> {
//! let stream = Device::new(0)?.create_stream()?;
//! let x = DeviceArray::from_slice(&stream, &[0.25f32, 0.75, 0.5, 0.9])?;
//! assert_eq!(x.flatnonzero()?.to_vec()?, [0i64, 1, 2, 3]);
//! // `x[x > 0.5]`: the comparison runs inside the select kernel, no bool array in between.
//! assert_eq!(x.extract(x.gt(0.5))?.to_vec()?, [0.75, 0.9]);
//! # Ok(())
//! # }
//! ```
//!
//! The result's length depends on the data, so each reads the count back (one 8-byte copy and a
//! wait for the array's stream) to give the result its shape; the algorithms' form
//! ([`select_flagged`](crate::algorithms::select::select_flagged)) leaves it on the device.
//! `flatnonzero`, `nonzero` and `argwhere` read it back between their passes and make a result
//! of exactly that size; the masks' results are views of the first `count` elements of a buffer
//! sized for every element.

use cuda_driver::{Access, Stream};

use crate::algorithms::search::{search_sorted, search_sorted_with_sorter, Side};
use crate::algorithms::select::{
    count_tiles, launch_select, load_select, read_count, select_counted, Emit, PredArgs, PredParam, Predicate,
    SelectCall,
};
use crate::array::axis::OptionalAxis;
use crate::array::device_array::{c_strides, DeviceArray};
use crate::array::dtype::{Bool, DType, Element};
use crate::array::kernels::params::{parse_params, ParamType};
use crate::array::kernels::{ArgType, IndexMode};
use crate::array::routines::math::{Expr, IntoExpr, EXPR_PRELUDE};
use crate::error::{Error, Result};

impl<T: Element> DeviceArray<T> {
    /// Where each element of `values` would go in this sorted 1-D array to keep it sorted:
    /// NumPy's `np.searchsorted(a, v, side, sorter)`, `i64` positions of `values`' shape, in
    /// NumPy's order (NaN last; complex values lexicographically, NaN patterns last). With a
    /// `sorter` (indices that sort this array, as [`argsort`](Self::argsort) gives), the array
    /// is read in that order; the sorter is checked
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
    /// bins[i]` (`bins[i-1] < x <= bins[i]` with `right`), as NumPy. Complex arrays are
    /// refused ([`Error::InvalidValue`]), as NumPy refuses them.
    pub fn digitize(&self, bins: &DeviceArray<T>, right: bool) -> Result<DeviceArray<i64>> {
        if T::DTYPE.is_complex() {
            return Err(Error::InvalidValue(format!(
                "digitize: x may not be complex, not {} (NumPy raises TypeError)",
                T::DTYPE
            )));
        }
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

/// The registry keys of the select kernels of this chapter (the signature tells the types);
/// pairs: for an evaluated mask, and (followed by the expression's key) for a fused one.
const INDEX_KEY: u32 = 1;
const COORDINATES_KEY: u32 = 2;
const EXTRACT_KEYS: (u32, u32) = (3, 4);
const PLACE_KEYS: (u32, u32) = (5, 6);
const PUTMASK_KEYS: (u32, u32) = (7, 8);

/// The flat indices (`Emit::Index`) or coordinates (`Emit::Coordinates`) of the nonzero
/// elements of `x`, in C order: the buffer (`n` or `n * ndim` elements) and the count.
fn nonzero_select<T: Element>(x: &DeviceArray<T>, emit: Emit) -> Result<(DeviceArray<i64>, usize)> {
    let stream = x.stream();
    // The count is read back: refused on a capturing stream before anything is queued.
    crate::graph::refuse_host_wait(stream, crate::graph::COUNTED_SELECTION)?;
    let src = x.to_contiguous()?;
    let n = src.len();
    let (per_element, key, name) = match emit {
        Emit::Coordinates => (x.ndim(), COORDINATES_KEY, "argwhere"),
        _ => (1, INDEX_KEY, "flatnonzero"),
    };
    let count = DeviceArray::<u64>::empty(stream, [1])?;
    let signature = [ArgType::Array(T::DTYPE)];
    let loaded = load_select(stream, &[key], &signature, name, &|| Predicate::flags(T::DTYPE), emit)?;
    let mut call = SelectCall {
        pred: PredArgs::Addresses(&[*src.ptr_ref()]),
        data: None,
        values_len: None,
        out: 0,
        ends: None,
        count: *count.ptr_ref(),
        n: n as u64,
        partition: false,
        shape: x.shape(),
    };
    // Two passes: the tiles' counts (the output then made to the count read back, not `n`
    // indices), then the selection into it.
    let src_use = src.begin_use(stream, Access::Read)?;
    let count_use = count.begin_use(stream, Access::Write)?;
    // SAFETY: the predicate reads `src` (compact, `n` elements) below `n`; `count` is one new
    // u64 apart from it; the output is not written; the uses are begun on `stream`.
    let status = unsafe { count_tiles(&loaded, stream, &call)? };
    drop(count_use);
    let selected = read_count(&count, n)?;
    let room = selected
        .checked_mul(per_element)
        .ok_or_else(|| Error::InvalidValue(format!("{name}: the output's size overflows")))?;
    let out = DeviceArray::<i64>::empty(stream, [room])?;
    let out_use = out.begin_use(stream, Access::Write)?;
    let count_use = count.begin_use(stream, Access::Write)?;
    call.out = *out.ptr_ref();
    // SAFETY: as the count pass; `out` (new, apart from `src`) holds the `selected` indices or
    // coordinate rows the tiles counted, which `status` holds from the count pass of this call.
    unsafe { select_counted(&loaded, stream, &call, status)? };
    drop((src_use, out_use, count_use));
    Ok((out, selected))
}

impl<T: Element> DeviceArray<T> {
    /// The flat (C-order) indices of the nonzero elements (NumPy's `flatnonzero`), a 1-D `i64`
    /// array. Reads the count back (see the module's docs).
    pub fn flatnonzero(&self) -> Result<DeviceArray<i64>> {
        Ok(nonzero_select(self, Emit::Index)?.0)
    }

    /// The coordinates of the nonzero elements, one row each in C order (NumPy's `argwhere`),
    /// an `i64` array of shape `(count, ndim)`.
    pub fn argwhere(&self) -> Result<DeviceArray<i64>> {
        let (out, count) = nonzero_select(self, Emit::Coordinates)?;
        let shape = vec![count, self.ndim()];
        let strides = c_strides(&shape);
        Ok(out.view(*out.ptr_ref(), shape, strides))
    }

    /// The indices of the nonzero elements, one `i64` array per axis (NumPy's `nonzero`): the
    /// columns of [`argwhere`](Self::argwhere), as views (strided, for two or more axes). A 0-d
    /// array is an error, as in NumPy 2.
    pub fn nonzero(&self) -> Result<Vec<DeviceArray<i64>>> {
        match self.ndim() {
            0 => Err(Error::InvalidValue(
                "nonzero of a 0-d array: use atleast_1d(x).nonzero() (NumPy 2 refuses it too)".into(),
            )),
            1 => Ok(vec![self.flatnonzero()?]),
            ndim => {
                let rows = self.argwhere()?;
                let count = rows.shape()[0];
                Ok((0..ndim)
                    .map(|d| {
                        let ptr = *rows.ptr_ref() + (d * std::mem::size_of::<i64>()) as u64;
                        rows.view(ptr, vec![count], vec![ndim as isize])
                    })
                    .collect())
            }
        }
    }

    /// The elements where `mask` is true, in C order, as a 1-D array: NumPy's `x[mask]` and
    /// `extract(mask, x)`. `mask` is a `Bool` array or a `Bool` expression of `x`'s shape (a
    /// different shape is an error); an expression whose arrays are C-contiguous of that shape,
    /// such as `x.gt(0.5)`, is computed inside the select kernel, with no bool array in
    /// between. Reads the count back (see the module's docs).
    pub fn extract<'a, M: IntoExpr<'a, Elem = Bool>>(&'a self, mask: M) -> Result<DeviceArray<T>> {
        let mask = checked_mask("extract", mask, self.shape())?;
        let stream = self.stream();
        crate::graph::refuse_host_wait(stream, crate::graph::COUNTED_SELECTION)?;
        let data = self.to_contiguous()?;
        let n = data.len();
        let out = DeviceArray::<T>::empty(stream, [n])?;
        let count = DeviceArray::<u64>::empty(stream, [1])?;
        let data_use = data.begin_use(stream, Access::Read)?;
        let out_use = out.begin_use(stream, Access::Write)?;
        let call = SelectCall {
            pred: PredArgs::Addresses(&[]),
            data: Some(*data.ptr_ref()),
            values_len: None,
            out: *out.ptr_ref(),
            ends: None,
            count: *count.ptr_ref(),
            n: n as u64,
            partition: false,
            shape: &[],
        };
        // SAFETY: `data` holds `n` elements; `out` (n elements) and `count` are new, apart from
        // every input; their uses are begun on `stream`.
        unsafe {
            select_by_mask(
                mask,
                stream,
                "extract",
                EXTRACT_KEYS,
                Emit::Value(T::DTYPE),
                &count,
                call,
            )?
        };
        drop((data_use, out_use));
        let selected = read_count(&count, n)?;
        Ok(out.view(*out.ptr_ref(), vec![selected], vec![1]))
    }

    /// The slices along `axis` (negative counts from the end; `None`: the flattened array)
    /// whose entry of `condition` (1-D) is true (NumPy's `compress`): the selected indices (one
    /// select pass and a count read-back), then one gather. A `condition` shorter than the axis
    /// selects among its first entries only; a true entry past the axis's end is
    /// [`Error::IndexOutOfBounds`](crate::Error::IndexOutOfBounds), as NumPy's `IndexError`.
    pub fn compress(&self, condition: &DeviceArray<Bool>, axis: impl Into<OptionalAxis>) -> Result<DeviceArray<T>> {
        if condition.ndim() != 1 {
            return Err(Error::InvalidValue(format!(
                "compress: the condition must be 1-D, it has {} dimensions",
                condition.ndim()
            )));
        }
        let axis = match axis.into().get() {
            Some(axis) => Some(axis.index(self.ndim())?),
            None => None,
        };
        let indices = condition.flatnonzero()?;
        match axis {
            Some(axis) => self.take(&indices, axis, IndexMode::Raise),
            None => self
                .to_contiguous()?
                .reshape([self.len()])?
                .take(&indices, None, IndexMode::Raise),
        }
    }

    /// Writes `values` into the elements where `mask` is true, the k-th true element (in C
    /// order) getting `values[k % values.len()]` (NumPy's `place`, `x[mask] = values` with
    /// values repeated). `mask` as for [`extract`](Self::extract); `values` any array, read
    /// flat in C order. One pass, no host wait. The array must be C-contiguous (a view of
    /// another layout is an error), and `values` may not share its memory, nor the mask's
    /// arrays, but for another view of the very same elements (read element for element).
    /// Empty `values` is an error (NumPy accepts them when no element is selected).
    pub fn place<'a, M: IntoExpr<'a, Elem = Bool>>(&mut self, mask: M, values: &DeviceArray<T>) -> Result<()> {
        self.write_masked("place", mask, values, Emit::Place(T::DTYPE), PLACE_KEYS)
    }

    /// Writes `values[i % values.len()]` into each element `i` (flat, C order) where `mask` is
    /// true (NumPy's `putmask`); otherwise as [`place`](Self::place).
    pub fn putmask<'a, M: IntoExpr<'a, Elem = Bool>>(&mut self, mask: M, values: &DeviceArray<T>) -> Result<()> {
        self.write_masked("putmask", mask, values, Emit::PutMask(T::DTYPE), PUTMASK_KEYS)
    }

    fn write_masked<'a, M: IntoExpr<'a, Elem = Bool>>(
        &mut self,
        what: &str,
        mask: M,
        values: &DeviceArray<T>,
        emit: Emit,
        keys: (u32, u32),
    ) -> Result<()> {
        self.check_writable(what)?;
        if !self.is_contiguous() {
            return Err(Error::InvalidValue(format!(
                "{what}: the array must be C-contiguous (write into a compact copy and copy it back)"
            )));
        }
        if values.is_empty() {
            return Err(Error::InvalidValue(format!("{what}: no values to write")));
        }
        if values.may_share_memory(self) {
            return Err(Error::InvalidValue(format!(
                "{what}: the values share the array's memory"
            )));
        }
        let mask = checked_mask(what, mask, self.shape())?;
        if mask.reads_partly(self) {
            return Err(Error::InvalidValue(format!(
                "{what}: the mask reads part of the array it writes (other than element for element)"
            )));
        }
        let stream = self.stream().clone();
        let values = values.to_contiguous()?;
        let count = DeviceArray::<u64>::empty(&stream, [1])?;
        let n = self.len();
        let values_use = values.begin_use(&stream, Access::Read)?;
        let out_use = self.begin_use(&stream, Access::Write)?;
        let call = SelectCall {
            pred: PredArgs::Addresses(&[]),
            data: Some(*values.ptr_ref()),
            values_len: Some(values.len() as u64),
            out: *self.ptr_ref(),
            ends: None,
            count: *count.ptr_ref(),
            n: n as u64,
            partition: false,
            shape: &[],
        };
        // SAFETY: the array is C-contiguous with `n` elements, written only at selected indices
        // below `n`; `values` holds `values_len` (at least 1) elements, apart from the array, as
        // is the mask (checked); `count` is new; the uses are begun on `stream`.
        unsafe { select_by_mask(mask, &stream, what, keys, emit, &count, call)? };
        drop((values_use, out_use));
        Ok(())
    }
}

/// `mask` as an expression, checked as evaluation checks it, of `shape`.
fn checked_mask<'a, M: IntoExpr<'a, Elem = Bool>>(what: &str, mask: M, shape: &[usize]) -> Result<Expr<'a, Bool>> {
    let mask = mask.into_expr();
    mask.check()?;
    let mask_shape = mask.shape()?;
    if mask_shape != shape {
        return Err(Error::InvalidValue(format!(
            "{what}: the mask's shape {mask_shape:?} differs from the array's {shape:?}"
        )));
    }
    Ok(mask)
}

/// Runs the select kernel `name` (registry keys: `keys.0` for an evaluated mask, `keys.1`
/// followed by the expression's key for a fused one) of `emit` with `call`, its predicate
/// `mask`: computed inside the kernel when its arrays are C-contiguous of its shape, else
/// evaluated first into a bool array.
///
/// # Safety
/// `call` but its predicate satisfies [`launch_select`]'s contract for a predicate reading
/// arrays of `call.n` elements, apart from the outputs; `count` is `call.count`'s array; the
/// caller began the uses of the other memory `call` names.
unsafe fn select_by_mask(
    mask: Expr<'_, Bool>,
    stream: &Stream,
    name: &str,
    keys: (u32, u32),
    emit: Emit,
    count: &DeviceArray<u64>,
    call: SelectCall<'_>,
) -> Result<()> {
    let data_type = match emit {
        Emit::Value(dtype) | Emit::Place(dtype) | Emit::PutMask(dtype) | Emit::Runs(dtype) => dtype,
        Emit::Index | Emit::Coordinates => DType::I64,
    };
    let count_use = count.begin_use(stream, Access::Write)?;
    // A mask the select kernel cannot compute itself (broadcast or strided operands) is
    // evaluated first.
    if mask.fused_map()?.is_none() {
        let evaluated = mask.eval()?;
        let signature = [ArgType::Array(Bool::DTYPE), ArgType::Array(data_type)];
        let loaded = load_select(
            stream,
            &[keys.0],
            &signature,
            name,
            &|| Predicate::flags(Bool::DTYPE),
            emit,
        )?;
        let mask_use = evaluated.begin_use(stream, Access::Read)?;
        let call = SelectCall {
            pred: PredArgs::Addresses(std::slice::from_ref(evaluated.ptr_ref())),
            ..call
        };
        // SAFETY: the flag predicate reads the evaluated mask (new, `n` elements) below `n`;
        // the rest is the caller's guarantee.
        unsafe { launch_select(&loaded, stream, &call)? };
        drop((mask_use, count_use));
        return Ok(());
    }
    let fused = mask
        .fused_map()?
        .ok_or_else(|| Error::InvalidValue(format!("{name}: the mask could not be fused")))?;
    let params = parse_params(&fused.params, "mask")?;
    let mut pred_params = Vec::with_capacity(params.len());
    for (param, arg) in params.iter().zip(&fused.args) {
        let ParamType::Concrete(dtype) = param.ty else {
            return Err(Error::InvalidValue(format!(
                "{name}: the mask's parameter `{}` has no concrete type",
                param.name
            )));
        };
        pred_params.push(PredParam {
            c_type: dtype.c_name().to_string(),
            name: param.name.clone(),
            array: arg.array().is_some(),
        });
    }
    let predicate = Predicate {
        params: pred_params,
        value: fused.value.clone(),
        prelude: EXPR_PRELUDE.to_string(),
    };
    let mut key = vec![keys.1];
    key.extend_from_slice(&fused.key);
    let mut signature: Vec<ArgType> = fused.args.iter().map(|a| a.arg_type()).collect();
    signature.push(ArgType::Array(data_type));
    let kernel_name = format!("{name}_expr");
    let loaded = load_select(stream, &key, &signature, &kernel_name, &|| predicate.clone(), emit)?;
    let call = SelectCall {
        pred: PredArgs::Args(&fused.args),
        ..call
    };
    // SAFETY: the predicate is the expression's element-wise code, reading its arrays (each
    // C-contiguous of the mask's shape: `n` elements) at indices below `n` and its scalars; the
    // launch begins the arrays' uses; the rest is the caller's guarantee.
    unsafe { launch_select(&loaded, stream, &call)? };
    drop(count_use);
    Ok(())
}
