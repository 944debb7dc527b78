//! NumPy's cumulative sums and products: `cumsum`, `cumprod`, `nancumsum`, `nancumprod`, over
//! the flattened array or along one axis (negative axes count from the end), and NumPy 2's
//! `cumulative_sum` and `cumulative_prod` (with `include_initial`), each one pass of
//! the single-pass scan of [`crate::algorithms::scan`] (rows of the moved axis as segments);
//! and their inverse, `diff` (one fused kernel per order), and `ediff1d`.
//!
//! ```no_run
//! use cuda_core::{Device, DeviceArray};
//!
//! # fn main() -> cuda_core::Result<()> {
//! let stream = Device::new(0)?.create_stream()?;
//! let x = DeviceArray::from_slice(&stream, &[1i32, 2, 3, 4, 5, 6])?.reshape([2, 3])?;
//! assert_eq!(x.cumsum(None)?.to_vec()?, [1i64, 3, 6, 10, 15, 21]);
//! assert_eq!(x.cumsum(0)?.to_vec()?, [1i64, 2, 3, 5, 7, 9]);
//! assert_eq!(x.cumprod(-1)?.to_vec()?, [1i64, 2, 6, 4, 20, 120]);
//! # Ok(())
//! # }
//! ```
//!
//! Types follow NumPy's `sum`: [`Element::Sum`] (`i64` for `bool` and signed integers, `u64`
//! for unsigned ones, the type itself for floats and complex types; the `nan` forms read a
//! complex value with NaN in either part as the identity, as NumPy's `isnan` finds it). `f16` and `bf16` are accumulated in `f32`
//! and each output rounded once (NumPy rounds every partial sum to the 16-bit type), and
//! floating-point sums are combined in a tree order within tiles, so they may differ from
//! NumPy's sequential sums in the last bits.

use crate::algorithms::scan::{scan_loaded, scan_mapped, Load, ScanKind, ScanMap, ScanOp};
use crate::array::axis::{Axis, OptionalAxis};
use crate::array::device_array::DeviceArray;
use crate::array::dtype::{Bool, DType, Element};
use crate::array::kernels::params::{parse_params, ParamType};
use crate::array::promotion::Scalars;
use crate::array::routines::math::{binary, BinaryOp, Expr, IntoExpr, EXPR_PRELUDE};
use crate::array::view::Slice;
use crate::error::{Error, Result};

/// The inclusive scan of `x` with `op` (reading through `load`) over the flattened array
/// (`axis` `None`, a 1-D result) or along `axis` (the shape of `x`).
fn cumulative<T: Element, R: Element>(
    x: &DeviceArray<T>,
    axis: Option<Axis>,
    op: ScanOp,
    load: Load,
) -> Result<DeviceArray<R>> {
    let stream = x.stream();
    let Some(axis) = axis else {
        let flat = x.to_contiguous()?;
        let mut out = DeviceArray::<R>::empty(stream, [x.len()])?;
        scan_loaded::<T, R>(stream, op, load, &flat, &mut out, ScanKind::Inclusive, None)?;
        return Ok(out);
    };
    let axis = axis.index(x.ndim())?;
    // At least one axis: `Axis::index` found `axis` among them.
    let last = x.ndim() - 1;
    let moved = x.moveaxis(axis, last)?.to_contiguous()?;
    let mut out = DeviceArray::<R>::empty(stream, moved.shape().to_vec())?;
    let row = x.shape()[axis];
    if row > 0 {
        scan_loaded::<T, R>(stream, op, load, &moved, &mut out, ScanKind::Inclusive, Some(row))?;
    }
    match axis == last {
        true => Ok(out),
        false => out.moveaxis(last, axis)?.try_clone(),
    }
}

impl<T: Element> DeviceArray<T> {
    /// Cumulative sums (NumPy's `cumsum`): of the flattened array when `axis` is `None` (a 1-D
    /// result), else along `axis` (negative counts from the end), in [`Element::Sum`].
    pub fn cumsum(&self, axis: impl Into<OptionalAxis>) -> Result<DeviceArray<T::Sum>> {
        cumulative(self, axis.into().get(), ScanOp::Sum, Load::Plain)
    }

    /// Cumulative products (NumPy's `cumprod`), as [`cumsum`](Self::cumsum).
    pub fn cumprod(&self, axis: impl Into<OptionalAxis>) -> Result<DeviceArray<T::Sum>> {
        cumulative(self, axis.into().get(), ScanOp::Prod, Load::Plain)
    }

    /// Cumulative sums with NaN read as zero (NumPy's `nancumsum`; `cumsum` for integers).
    pub fn nancumsum(&self, axis: impl Into<OptionalAxis>) -> Result<DeviceArray<T::Sum>> {
        cumulative(self, axis.into().get(), ScanOp::Sum, Load::SkipNan)
    }

    /// Cumulative products with NaN read as one (NumPy's `nancumprod`; `cumprod` for integers).
    pub fn nancumprod(&self, axis: impl Into<OptionalAxis>) -> Result<DeviceArray<T::Sum>> {
        cumulative(self, axis.into().get(), ScanOp::Prod, Load::SkipNan)
    }

    /// NumPy 2's `cumulative_sum(x, axis=axis, include_initial=include_initial)`: as
    /// [`cumsum`](Self::cumsum) along `axis`, which only a 0-d or 1-D array may leave out (an
    /// array of more dimensions without one is [`Error::InvalidValue`], NumPy's `ValueError`),
    /// with a zero before each line when `include_initial` (the axis one longer; the zeros and
    /// the sums are joined by one copy).
    pub fn cumulative_sum(&self, axis: impl Into<OptionalAxis>, include_initial: bool) -> Result<DeviceArray<T::Sum>> {
        self.cumulative_with_initial("cumulative_sum", axis.into(), ScanOp::Sum, include_initial)
    }

    /// NumPy 2's `cumulative_prod`, as [`cumulative_sum`](Self::cumulative_sum) with products
    /// (a one before each line when `include_initial`).
    pub fn cumulative_prod(&self, axis: impl Into<OptionalAxis>, include_initial: bool) -> Result<DeviceArray<T::Sum>> {
        self.cumulative_with_initial("cumulative_prod", axis.into(), ScanOp::Prod, include_initial)
    }

    fn cumulative_with_initial(
        &self,
        what: &str,
        axis: OptionalAxis,
        op: ScanOp,
        include_initial: bool,
    ) -> Result<DeviceArray<T::Sum>> {
        let Some(axis) = axis.get() else {
            if self.ndim() > 1 {
                return Err(Error::InvalidValue(format!(
                    "{what}: an array of {} dimensions needs an axis (NumPy raises ValueError)",
                    self.ndim()
                )));
            }
            return self
                .ravel()?
                .cumulative_with_initial(what, OptionalAxis::from(0), op, include_initial);
        };
        let scanned = cumulative(self, Some(axis), op, Load::Plain)?;
        if !include_initial {
            return Ok(scanned);
        }
        let axis = axis.index(self.ndim())?;
        let mut shape = self.shape().to_vec();
        shape[axis] = 1;
        let identity = match op {
            ScanOp::Prod => 1.0,
            _ => 0.0,
        };
        let initial = DeviceArray::<T::Sum>::full(self.stream(), shape, T::Sum::from_f64(identity))?;
        DeviceArray::concatenate(&[&initial, &scanned], axis)
    }
}

/// The inclusive scan of `expr`'s values, as [`cumulative`]: fused (the expression computed
/// inside the scan, reading its operands once, writing no temporary) over the flattened values
/// or along the last axis when its arrays are C-contiguous of its shape; otherwise the
/// expression is evaluated first.
fn expr_cumulative<T: Scalars, R: Element>(
    expr: Expr<'_, T>,
    axis: Option<Axis>,
    op: ScanOp,
    load: Load,
) -> Result<DeviceArray<R>> {
    expr.check()?;
    let shape = expr.shape()?;
    let along_last = match axis {
        None => true,
        Some(axis) => axis.index(shape.len())? + 1 == shape.len(),
    };
    if !along_last || expr.fused_map()?.is_none() {
        return cumulative(&expr.eval()?, axis, op, load);
    }
    let fused = expr
        .fused_map()?
        .ok_or_else(|| Error::InvalidValue("cumulative: the expression could not be fused".into()))?;
    let n: usize = shape.iter().product();
    let (out_shape, segment) = match axis {
        None => (vec![n], None),
        Some(_) => (shape.clone(), shape.last().copied()),
    };
    let mut out = DeviceArray::<R>::empty(&fused.stream, out_shape)?;
    if n == 0 {
        return Ok(out);
    }
    let params = parse_params(&fused.params, "expression")?;
    let mut map_params = Vec::with_capacity(params.len());
    for (param, arg) in params.iter().zip(&fused.args) {
        let ParamType::Concrete(dtype) = param.ty else {
            return Err(Error::InvalidValue(format!(
                "cumulative: the expression's parameter `{}` has no concrete type",
                param.name
            )));
        };
        map_params.push((dtype.c_name().to_string(), param.name.clone(), arg.array().is_some()));
    }
    let map = ScanMap {
        params: map_params,
        value: fused.value.clone(),
        prelude: EXPR_PRELUDE.to_string(),
    };
    // SAFETY: the map is the expression's element-wise code, reading its arrays (C-contiguous
    // of its shape: `n` elements each) at `i` and its scalars; `fused.args` are its arguments.
    unsafe {
        scan_mapped::<T, R>(
            &fused.stream,
            op,
            load,
            &fused.key,
            &map,
            &fused.args,
            n,
            &mut out,
            segment,
        )?
    };
    Ok(out)
}

/// Cumulative sums and products of an expression's values: one scan whose input is the
/// expression's element-wise code (no temporary) over the flattened values or along the last
/// axis, when its arrays are C-contiguous of its shape; otherwise the expression is evaluated
/// first. They run on the stream of the first array.
impl<T: Scalars> Expr<'_, T> {
    /// [`DeviceArray::cumsum`] of the values: `(&x * &y).cumsum(None)` reads `x` and `y` once.
    pub fn cumsum(self, axis: impl Into<OptionalAxis>) -> Result<DeviceArray<T::Sum>> {
        expr_cumulative(self, axis.into().get(), ScanOp::Sum, Load::Plain)
    }

    /// [`DeviceArray::cumprod`] of the values.
    pub fn cumprod(self, axis: impl Into<OptionalAxis>) -> Result<DeviceArray<T::Sum>> {
        expr_cumulative(self, axis.into().get(), ScanOp::Prod, Load::Plain)
    }

    /// [`DeviceArray::nancumsum`] of the values.
    pub fn nancumsum(self, axis: impl Into<OptionalAxis>) -> Result<DeviceArray<T::Sum>> {
        expr_cumulative(self, axis.into().get(), ScanOp::Sum, Load::SkipNan)
    }

    /// [`DeviceArray::nancumprod`] of the values.
    pub fn nancumprod(self, axis: impl Into<OptionalAxis>) -> Result<DeviceArray<T::Sum>> {
        expr_cumulative(self, axis.into().get(), ScanOp::Prod, Load::SkipNan)
    }
}

impl<T: Scalars> DeviceArray<T> {
    /// The `n`-th discrete difference along `axis` (NumPy's `diff`; negative axes count from
    /// the end): `x[1:] - x[:-1]` along the axis, `n` times, in `T` (integers wrap as in NumPy;
    /// for `Bool`, `x[1:] != x[:-1]`). The axis shrinks by `n` (to no less than 0); `n` = 0 gives
    /// the array itself. A 0-d array is an error, as in NumPy.
    pub fn diff(&self, n: usize, axis: impl Into<Axis>) -> Result<DeviceArray<T>> {
        let ndim = self.ndim();
        let axis = axis.into().index(ndim)?;
        let mut current = self.to_contiguous()?;
        for _ in 0..n {
            let len = current.shape()[axis];
            if len == 0 {
                break;
            }
            let mut upper = vec![Slice::ALL; ndim];
            upper[axis] = Slice::new(1, None);
            let mut lower = vec![Slice::ALL; ndim];
            lower[axis] = Slice::new(0, Some(len - 1));
            let (upper, lower) = (current.slice(&upper)?, current.slice(&lower)?);
            let difference = match T::DTYPE {
                DType::Bool => binary::<T, T, Bool>(BinaryOp::Ne, (&upper).into_expr(), (&lower).into_expr()).retyped(),
                _ => binary::<T, T, T>(BinaryOp::Sub, (&upper).into_expr(), (&lower).into_expr()),
            };
            current = difference.eval()?;
        }
        Ok(current)
    }

    /// The differences of consecutive elements of the flattened array (NumPy's `ediff1d`), with
    /// the elements of `to_begin` before them and those of `to_end` after (each flattened): a
    /// 1-D array of `T`, `len - 1` differences (none for fewer than two elements). `Bool` is
    /// [`Error::InvalidValue`], as NumPy refuses a boolean subtract (`diff` compares instead).
    pub fn ediff1d(
        &self,
        to_begin: Option<&DeviceArray<T>>,
        to_end: Option<&DeviceArray<T>>,
    ) -> Result<DeviceArray<T>> {
        if T::DTYPE == DType::Bool {
            return Err(Error::InvalidValue(
                "ediff1d: boolean subtract is not supported, as in NumPy (diff compares booleans)".into(),
            ));
        }
        let differences = self.ravel()?.diff(1, 0)?;
        let begin = to_begin.map(DeviceArray::ravel).transpose()?;
        let end = to_end.map(DeviceArray::ravel).transpose()?;
        let parts: Vec<&DeviceArray<T>> = begin.iter().chain([&differences]).chain(end.iter()).collect();
        match parts.len() {
            1 => Ok(differences),
            _ => DeviceArray::concatenate(&parts, 0),
        }
    }
}
