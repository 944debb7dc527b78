//! NumPy's selection routines on the compaction of [`crate::algorithms::select`]: `flatnonzero`,
//! `nonzero`, `argwhere`, and reading through a boolean mask (`x[mask]`, NumPy's `extract`),
//! each one pass that scans the flags and writes the selected elements or indices.
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
//! ([`select_flagged`](crate::algorithms::select::select_flagged)) leaves it on the device. The
//! result is a view of the first `count` elements of a buffer sized for every element.

use cuda_driver::Access;

use crate::algorithms::select::{
    launch_select, load_select, read_count, Emit, PredArgs, PredParam, Predicate, SelectCall,
};
use crate::array::device_array::{c_strides, DeviceArray};
use crate::array::dtype::{Bool, Element};
use crate::array::kernels::params::{parse_params, ParamType};
use crate::array::kernels::ArgType;
use crate::array::routines::math::{IntoExpr, EXPR_PRELUDE};
use crate::error::{Error, Result};

/// The registry keys of the select kernels of this chapter (the signature tells the types).
const INDEX_KEY: u32 = 1;
const COORDINATES_KEY: u32 = 2;
const MASK_ARRAY_KEY: u32 = 3;
const MASK_EXPR_KEY: u32 = 4;

/// The flat indices (`Emit::Index`) or coordinates (`Emit::Coordinates`) of the nonzero
/// elements of `x`, in C order: the buffer (`n` or `n * ndim` elements) and the count.
fn nonzero_select<T: Element>(x: &DeviceArray<T>, emit: Emit) -> Result<(DeviceArray<i64>, usize)> {
    let stream = x.stream();
    let src = x.to_contiguous()?;
    let n = src.len();
    let (room, key) = match emit {
        Emit::Coordinates => (n.checked_mul(x.ndim()), COORDINATES_KEY),
        _ => (Some(n), INDEX_KEY),
    };
    let room = room.ok_or_else(|| Error::InvalidValue("argwhere: the output's size overflows".into()))?;
    let out = DeviceArray::<i64>::empty(stream, [room])?;
    let count = DeviceArray::<u64>::empty(stream, [1])?;
    let signature = [ArgType::Array(T::DTYPE)];
    let name = match emit {
        Emit::Coordinates => "argwhere",
        _ => "flatnonzero",
    };
    let loaded = load_select(stream, &[key], &signature, name, &|| Predicate::flags(T::DTYPE), emit)?;
    let _src_use = src.begin_use(stream, Access::Read)?;
    let _out_use = out.begin_use(stream, Access::Write)?;
    let _count_use = count.begin_use(stream, Access::Write)?;
    let call = SelectCall {
        pred: PredArgs::Addresses(&[*src.ptr_ref()]),
        data: None,
        out: *out.ptr_ref(),
        count: *count.ptr_ref(),
        n: n as u64,
        partition: false,
        shape: x.shape(),
    };
    // SAFETY: the predicate reads `src` (compact, `n` elements) below `n`; `out` holds `n`
    // indices or `n * ndim` coordinates, `count` one u64, both new and apart from `src`; the
    // uses are begun on `stream`.
    unsafe { launch_select(&loaded, stream, &call)? };
    drop((_src_use, _out_use, _count_use));
    let selected = read_count(&count)?;
    Ok((out, selected))
}

impl<T: Element> DeviceArray<T> {
    /// The flat (C-order) indices of the nonzero elements (NumPy's `flatnonzero`), a 1-D `i64`
    /// array. Reads the count back (see the module's docs).
    pub fn flatnonzero(&self) -> Result<DeviceArray<i64>> {
        let (out, count) = nonzero_select(self, Emit::Index)?;
        Ok(out.view(*out.ptr_ref(), vec![count], vec![1]))
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
        let mask = mask.into_expr();
        mask.check()?;
        let mask_shape = mask.shape()?;
        if mask_shape != self.shape() {
            return Err(Error::InvalidValue(format!(
                "extract: the mask's shape {mask_shape:?} differs from the array's {:?}",
                self.shape()
            )));
        }
        let stream = self.stream();
        let data = self.to_contiguous()?;
        let n = data.len();
        let out = DeviceArray::<T>::empty(stream, [n])?;
        let count = DeviceArray::<u64>::empty(stream, [1])?;
        // A mask the select kernel cannot compute itself (broadcast or strided operands) is
        // evaluated first.
        let (evaluated, mask) = match mask.fused_map()?.is_none() {
            true => (Some(mask.eval()?), None),
            false => (None, Some(mask)),
        };
        let fused = match &mask {
            Some(mask) => mask.fused_map()?,
            None => None,
        };
        let (loaded, args) = match (&fused, &evaluated) {
            (Some(fused), _) => {
                let params = parse_params(&fused.params, "mask")?;
                let mut pred_params = Vec::with_capacity(params.len());
                for (param, arg) in params.iter().zip(&fused.args) {
                    let ParamType::Concrete(dtype) = param.ty else {
                        return Err(Error::InvalidValue(format!(
                            "extract: the mask's parameter `{}` has no concrete type",
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
                let mut key = vec![MASK_EXPR_KEY];
                key.extend_from_slice(&fused.key);
                let mut signature: Vec<ArgType> = fused.args.iter().map(|a| a.arg_type()).collect();
                signature.push(ArgType::Array(T::DTYPE));
                let loaded = load_select(
                    stream,
                    &key,
                    &signature,
                    "extract_expr",
                    &|| predicate.clone(),
                    Emit::Value(T::DTYPE),
                )?;
                (loaded, PredArgs::Args(&fused.args))
            }
            (None, Some(evaluated)) => {
                let signature = [ArgType::Array(Bool::DTYPE), ArgType::Array(T::DTYPE)];
                let loaded = load_select(
                    stream,
                    &[MASK_ARRAY_KEY],
                    &signature,
                    "extract",
                    &|| Predicate::flags(Bool::DTYPE),
                    Emit::Value(T::DTYPE),
                )?;
                (loaded, PredArgs::Addresses(std::slice::from_ref(evaluated.ptr_ref())))
            }
            (None, None) => return Err(Error::InvalidValue("extract: the mask could not be computed".into())),
        };
        let _mask_use = match &evaluated {
            Some(evaluated) => Some(evaluated.begin_use(stream, Access::Read)?),
            None => None,
        };
        let _data_use = data.begin_use(stream, Access::Read)?;
        let _out_use = out.begin_use(stream, Access::Write)?;
        let _count_use = count.begin_use(stream, Access::Write)?;
        let call = SelectCall {
            pred: args,
            data: Some(*data.ptr_ref()),
            out: *out.ptr_ref(),
            count: *count.ptr_ref(),
            n: n as u64,
            partition: false,
            shape: &[],
        };
        // SAFETY: the predicate reads the mask's arrays (or the evaluated mask), each C-contiguous
        // of the array's shape (checked: `n` elements), at indices below `n`, and its scalars;
        // `data` holds `n` elements; `out` (n elements) and `count` are new, apart from every
        // input; the uses are begun on `stream` (the expression's by the launch).
        unsafe { launch_select(&loaded, stream, &call)? };
        drop((_mask_use, _data_use, _out_use, _count_use));
        let selected = read_count(&count)?;
        Ok(out.view(*out.ptr_ref(), vec![selected], vec![1]))
    }
}
