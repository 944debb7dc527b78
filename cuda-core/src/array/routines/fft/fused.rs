//! Transforms of expressions: by default (and wherever no load callback fits: more than one
//! plan, padding, a complex-to-real stage, a cuFFT without LTO callbacks) the expression is
//! written by one fused kernel into the transform's input array (promoted, padded), and that
//! array is transformed (the fallback); where the thread asked for load callbacks
//! ([`set_load_callbacks`](super::set_load_callbacks)), the expression becomes cuFFT's load
//! callback, so the transform reads the operands itself and no input array is written.

use cuda_driver::DeviceMemory;
use cuda_libs::fft::{Direction, LoadCallback, PlanDesc};

use super::callback::{self, callbacks_unavailable, refuses_callback, CallbackLayout, SYMBOL};
use super::execute::{
    self, finish_output, internal, layout, moved_last, note_expression_path, note_refused, output_target, precision,
    refused, staging, with_plan, workspace_for, Attach, Extent,
};
use super::layout::{stages, Real, Shapes};
use super::FftElement;
use crate::array::device_array::{shape_len, DeviceArray};
use crate::array::kernels::Arg;
use crate::array::routines::math::Expr;
use crate::array::{ExprOps, Scalars, Slice};
use crate::error::{Error, Result};
use crate::CompileTarget;

/// The complex transform of `e` over `shapes`, times `factor`.
pub(super) fn complex_to_complex<T: FftElement>(
    e: Expr<'_, T>,
    shapes: &Shapes,
    factor: f64,
    inverse: bool,
) -> Result<DeviceArray<T::Complex>> {
    let direction = if inverse {
        Direction::Inverse
    } else {
        Direction::Forward
    };
    let expr_shape = e.shape()?;
    let why = match loaded::<T, T::Complex, T::Complex>(&e, &expr_shape, shapes, factor, Real::Neither, direction)? {
        Ok(out) => return Ok(out),
        Err(why) => why,
    };
    note_expression_path(Some(why));
    match staged::<T, T::Complex>(e.duplicate(), &expr_shape, shapes, factor, false, Real::Neither)? {
        Some(input) => execute::complex_to_complex(&input, shapes, 1.0, inverse),
        None => execute::complex_to_complex(&e.eval()?, shapes, factor, inverse),
    }
}

/// The real-input transform of `e` over `shapes`, times `factor`, conjugated where asked.
pub(super) fn real_to_complex<T: FftElement>(
    e: Expr<'_, T>,
    shapes: &Shapes,
    factor: f64,
    conjugate: bool,
) -> Result<DeviceArray<T::Complex>> {
    let expr_shape = e.shape()?;
    let why = match loaded::<T, T::Part, T::Complex>(&e, &expr_shape, shapes, factor, Real::Input, Direction::Forward)?
    {
        Ok(mut out) => {
            if conjugate {
                out.update(|x| x.conj())?;
            }
            return Ok(out);
        }
        Err(why) => why,
    };
    note_expression_path(Some(why));
    match staged::<T, T::Part>(e.duplicate(), &expr_shape, shapes, factor, false, Real::Input)? {
        Some(input) => execute::real_to_complex(&input, shapes, 1.0, conjugate),
        None => execute::real_to_complex(&e.eval()?, shapes, factor, conjugate),
    }
}

/// The real-output transform of `e` over `shapes`, times `factor`, of the conjugate where asked.
/// Always the fallback: cuFFT overwrites a complex-to-real plan's input, which a load callback
/// does not have.
pub(super) fn complex_to_real<T: FftElement>(
    e: Expr<'_, T>,
    shapes: &Shapes,
    factor: f64,
    conjugate: bool,
) -> Result<DeviceArray<T::Part>> {
    note_expression_path(Some(
        "a complex-to-real transform takes no load callback (cuFFT overwrites its input)".into(),
    ));
    let expr_shape = e.shape()?;
    match staged::<T, T::Complex>(e.duplicate(), &expr_shape, shapes, factor, conjugate, Real::Output)? {
        Some(input) => execute::complex_to_real(&input, shapes, 1.0, false, true),
        None => execute::complex_to_real(&e.eval()?, shapes, factor, conjugate, false),
    }
}

/// `e` written once as `U` into the transform's input array (`shapes.input`, its memory laid
/// out with the first plan's axes last, zeros where it pads), times `factor`, conjugated where
/// asked. `None` where `n`/`s` crops the expression: the caller evaluates it and transforms the
/// array as any other.
fn staged<T: Scalars, U: Scalars>(
    e: Expr<'_, T>,
    expr_shape: &[usize],
    shapes: &Shapes,
    factor: f64,
    conjugate: bool,
    real: Real,
) -> Result<Option<DeviceArray<U>>> {
    if shapes.input.iter().zip(expr_shape).any(|(n, m)| n < m) {
        return Ok(None);
    }
    let plan = stages(&shapes.axes, real);
    let order = match plan.first() {
        Some((_, axes)) => moved_last(expr_shape.len(), axes),
        None => (0..expr_shape.len()).collect(),
    };
    let stream = e.stream()?.clone();
    let array = staging::<U>(&stream, &shapes.input, expr_shape, &order)?;
    let common: Vec<Slice> = expr_shape.iter().map(|&m| Slice::from(0..m)).collect();
    let mut target = array.slice(&common)?;
    let value = e.astype::<U>();
    match (conjugate, factor != 1.0) {
        (false, false) => target.assign(value)?,
        (false, true) => target.assign(value * factor)?,
        (true, false) => target.assign(value.conj())?,
        (true, true) => target.assign(value.conj() * factor)?,
    }
    Ok(Some(array))
}

/// The transform of `e` (one plan from inputs `I` to outputs `O`) with `e` as the plan's load
/// callback, times `factor`: `Ok(Err(why))` where it cannot be (nothing queued then).
fn loaded<T: FftElement, I: Scalars, O: Scalars>(
    e: &Expr<'_, T>,
    expr_shape: &[usize],
    shapes: &Shapes,
    factor: f64,
    real: Real,
    direction: Direction,
) -> Result<std::result::Result<DeviceArray<O>, String>> {
    // What evaluating the expression would refuse (scalars out of range, ...), refused here too.
    e.check()?;
    if !execute::load_callbacks() {
        return Ok(Err(
            "load callbacks are off (fft::set_load_callbacks): the expression is written first".into(),
        ));
    }
    let plan = stages(&shapes.axes, real);
    let [(_, axes)] = &plan[..] else {
        return Ok(Err(format!(
            "the transform takes {} cuFFT plans (a load callback feeds one)",
            plan.len()
        )));
    };
    if shape_len(&shapes.output)? == 0 {
        return Ok(Err("the result is empty".into()));
    }
    if shapes.input.iter().zip(expr_shape).any(|(n, m)| n > m) {
        return Ok(Err("n or s pads the input with zeros".into()));
    }
    if axes.iter().any(|&k| shapes.input[k] == 1) {
        return Ok(Err("a transformed axis has one point".into()));
    }
    if let Some(why) = callbacks_unavailable()? {
        return Ok(Err(why));
    }
    let Some(map) = e.element_map()? else {
        return Ok(Err("the expression holds a matrix product".into()));
    };
    let stream = e.stream()?.clone();
    let rank = axes.len();
    let order = moved_last(expr_shape.len(), axes);
    let callback_layout = CallbackLayout::new(&map, expr_shape, &shapes.input, &order)?;
    let (major, minor) = stream.context().device().compute_capability()?;
    let arch = crate::device_target(major, minor, CompileTarget::LtoIr)?.0.number();
    let key = callback::key(&map, &callback_layout, I::DTYPE, arch);
    if refused(&key) {
        return Ok(Err("cuFFT refused this load callback before".into()));
    }
    let compiled = match callback::compiled(&key, arch, || {
        let params: Vec<_> = map.params.iter().map(Arg::arg_type).collect();
        callback::source(&params, &map.value, T::DTYPE, I::DTYPE, &callback_layout)
    }) {
        Ok(compiled) => compiled,
        Err(error) => return Ok(Err(format!("the load callback did not compile: {error}"))),
    };
    let info = callback::info_words(&map, &callback_layout, factor);
    let mut out = DeviceArray::<O>::empty(&stream, shapes.output.clone())?;
    let (mut temporary, output_side) = output_target(&out, &order, rank)?;
    let dims: Vec<usize> = axes.iter().map(|&k| shapes.input[k]).collect();
    let output_dims: Vec<usize> = axes.iter().map(|&k| shapes.output[k]).collect();
    let batch = shape_len(&shapes.input)? / shape_len(&dims)?;
    if output_side.batch != batch {
        return Err(internal("a load callback's batch differs between the sides"));
    }
    let (kind, _) = callback::kind_of(I::DTYPE);
    let desc = PlanDesc::new(kind, precision::<O>(), &dims)?
        .batch(batch)
        .output_layout(layout(&output_side, &output_dims)?);
    let reads: Vec<Extent<'_>> = map.params.iter().filter_map(Arg::array).map(Extent).collect();
    let target: &mut DeviceArray<O> = match &mut temporary {
        Some(compact) => compact,
        None => &mut out,
    };
    let pool = target.pool();
    let mut make = || {
        Ok(LoadCallback {
            symbol: SYMBOL,
            lto_ir: &compiled.lto_ir,
            info_words: info.len(),
        })
    };
    let ran = with_plan(&stream, &desc, Attach::Load(&key, &mut make), |plan| {
        let mut workspace = workspace_for(plan, &pool, &stream)?;
        let workspace = workspace.as_mut().map(|w| w as &mut dyn cuda_driver::DeviceMemoryMut);
        let reads: Vec<&dyn DeviceMemory> = reads.iter().map(|r| r as &dyn DeviceMemory).collect();
        // SAFETY: the callback is this module's (`callback::source`), generated for this key:
        // it reads each array parameter (all in `reads`) at the offset its strides give for a
        // position inside `shapes.input`, which lies inside the expression's shape (no
        // padding), so inside the view the strides came from; it reads each as its own type,
        // the scalars, addresses and strides from the caller info `info` (laid out as the
        // source expects, by `callback::info_words` of the same map and layout; its length is
        // checked against the plan's), and writes nothing.
        unsafe { plan.execute_loaded(&stream, direction, &info, &reads, target, workspace)? };
        Ok(())
    });
    match ran {
        Ok(()) => {}
        Err(Error::Library(cuda_libs::Error::Status { function, name, .. })) if refuses_callback(function, &name) => {
            note_refused(&key);
            return Ok(Err(format!("cuFFT refused the load callback: {function} gave {name}")));
        }
        Err(error) => return Err(error),
    }
    finish_output(&mut out, temporary, order, 1.0)?;
    note_expression_path(None);
    Ok(Ok(out))
}
