//! Running a transform: the input written once where it must change (promotion, padding,
//! cropping, conjugation, the norm factor: one pass), then one cuFFT plan per stage from the
//! per-thread plan cache, on the array's stream, with workspace from the array's pool.

use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, Ordering};

use cuda_driver::{Access, Context, Stream, StreamUse};
use cuda_libs::fft::{Direction, Kind, Layout, LoadCallback, Plan, PlanCache, PlanDesc, Precision, StoreCallback};
use cuda_sys::driver::CUdeviceptr;

use super::callback::{callbacks_unavailable, refuses_callback};
use super::layout::{describe, stages, Described, Real, Shapes, Stage};
use super::store;
use super::FftElement;
use crate::array::device_array::{shape_len, DeviceArray};
use crate::array::dtype::{DType, Element};
use crate::array::kernels::ErasedArray;
use crate::array::ExprOps;
use crate::array::Scalars;
use crate::array::Slice;
use crate::error::{Error, Result};

/// Plans each thread keeps (CuPy's default plan cache size per device and thread is 16).
pub const PLAN_CACHE_CAPACITY: usize = 16;

/// A thread's plans and what its transforms of expressions did.
struct ThreadPlans {
    cache: Option<PlanCache>,
    /// Whether transforms of expressions may load them through cuFFT's load callback
    /// ([`set_load_callbacks`]).
    load_callbacks: bool,
    load_callback_transforms: u64,
    fallback_transforms: u64,
    last_fallback: Option<String>,
    store_callback_transforms: u64,
    last_scale_pass: Option<String>,
    /// Keys of callbacks cuFFT refused: their expressions (or factors) take the fallback at once.
    refused: Vec<Vec<u32>>,
}

thread_local! {
    static PLANS: RefCell<ThreadPlans> = const {
        RefCell::new(ThreadPlans {
            cache: None,
            load_callbacks: false,
            load_callback_transforms: 0,
            fallback_transforms: 0,
            last_fallback: None,
            store_callback_transforms: 0,
            last_scale_pass: None,
            refused: Vec::new(),
        })
    };
}

/// Drops the calling thread's cached cuFFT plans (each waits for its last transform first),
/// and forgets which load and store callbacks cuFFT refused.
pub fn clear_plan_cache() {
    PLANS.with(|plans| {
        let mut plans = plans.borrow_mut();
        if let Some(cache) = plans.cache.as_mut() {
            cache.clear();
        }
        plans.refused.clear();
    });
}

/// Lets transforms of expressions on the calling thread load them through cuFFT's load
/// callback (`true`), or has each written first by one fused kernel (`false`, the default);
/// returns the setting before. The callback writes no copy of the expression, so it spares an
/// array the size of the transform's input, but cuFFT's kernels that call it measured slower
/// than the copy they save (H100: `rfft` of a product of 256 x 2^16 `f32`, 0.25 against 0.16
/// ms; `fft` of 2^24 `Complex<f32>`, 1.12 against 0.42 ms; docs/BENCHMARKS.md). As CuPy's
/// `cupy.fft.config.set_cufft_callbacks`, it is off unless asked for.
pub fn set_load_callbacks(enabled: bool) -> bool {
    PLANS.with(|plans| std::mem::replace(&mut plans.borrow_mut().load_callbacks, enabled))
}

/// Whether the calling thread asked for load callbacks ([`set_load_callbacks`]).
pub(super) fn load_callbacks() -> bool {
    PLANS.with(|plans| plans.borrow().load_callbacks)
}

/// The calling thread's plan cache and how its transforms of expressions ran
/// ([`plan_cache_info`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PlanCacheInfo {
    /// Plans cached now.
    pub plans: usize,
    /// Of those, plans with a load callback (an expression fused into the transform).
    pub load_callback_plans: usize,
    /// Transforms of expressions whose input cuFFT loaded through a callback.
    pub load_callback_transforms: u64,
    /// Transforms of expressions that took the fallback: one fused kernel writing the input,
    /// then the transform.
    pub fallback_transforms: u64,
    /// Why the last fallback was taken.
    pub last_fallback: Option<String>,
    /// Plans cached now with a store callback (the `norm` factor applied as cuFFT stores the
    /// result).
    pub store_callback_plans: usize,
    /// cuFFT executions whose result was scaled by the `norm` factor in a store callback.
    pub store_callback_transforms: u64,
    /// Why the last factor that a store callback could have taken went into an element-wise
    /// pass over the result instead.
    pub last_scale_pass: Option<String>,
}

/// The calling thread's [`PlanCacheInfo`]: which path its transforms of expressions took.
pub fn plan_cache_info() -> PlanCacheInfo {
    PLANS.with(|plans| {
        let plans = plans.borrow();
        PlanCacheInfo {
            plans: plans.cache.as_ref().map_or(0, PlanCache::len),
            load_callback_plans: plans.cache.as_ref().map_or(0, PlanCache::load_callback_plans),
            load_callback_transforms: plans.load_callback_transforms,
            fallback_transforms: plans.fallback_transforms,
            last_fallback: plans.last_fallback.clone(),
            store_callback_plans: plans.cache.as_ref().map_or(0, PlanCache::store_callback_plans),
            store_callback_transforms: plans.store_callback_transforms,
            last_scale_pass: plans.last_scale_pass.clone(),
        }
    })
}

/// Notes a transform of an expression: through a load callback (`None`) or the fallback, for
/// the reason given.
pub(super) fn note_expression_path(fallback: Option<String>) {
    PLANS.with(|plans| {
        let mut plans = plans.borrow_mut();
        match fallback {
            None => plans.load_callback_transforms += 1,
            Some(why) => {
                plans.fallback_transforms += 1;
                plans.last_fallback = Some(why);
            }
        }
    });
}

/// Notes a transform whose factor a store callback applied (`None`) or that leaves its factor
/// to an element-wise pass, for the reason given.
fn note_store_path(pass: Option<String>) {
    PLANS.with(|plans| {
        let mut plans = plans.borrow_mut();
        match pass {
            None => plans.store_callback_transforms += 1,
            Some(why) => plans.last_scale_pass = Some(why),
        }
    });
}

/// Whether cuFFT refused the callback of `key` on this thread.
pub(super) fn refused(key: &[u32]) -> bool {
    PLANS.with(|plans| plans.borrow().refused.iter().any(|k| k == key))
}

/// Notes that cuFFT refused the callback of `key`.
pub(super) fn note_refused(key: &[u32]) {
    PLANS.with(|plans| plans.borrow_mut().refused.push(key.to_vec()));
}

/// Whether the exit hook was registered again after cuFFT's first plan.
static REGISTERED_AT_EXIT: AtomicBool = AtomicBool::new(false);

/// Makes a load callback when its plan is not cached.
pub(super) type MakeCallback<'m, 'c> = &'m mut dyn FnMut() -> cuda_libs::Result<LoadCallback<'c>>;

/// Makes a store callback when its plan is not cached.
type MakeStore<'m, 'c> = &'m mut dyn FnMut() -> cuda_libs::Result<StoreCallback<'c>>;

/// The callback of a cached plan: none, or a load or store callback by its key, with what makes
/// it on a miss.
pub(super) enum Attach<'k, 'm, 'c> {
    None,
    Load(&'k [u32], MakeCallback<'m, 'c>),
    /// Only for callbacks of [`store`] (the contract of `Plan::with_store_callback`).
    Store(&'k [u32], MakeStore<'m, 'c>),
}

/// Runs `work` with the calling thread's plan of `desc` on `stream`, with the callback
/// `callback` names.
pub(super) fn with_plan<R>(
    stream: &Stream,
    desc: &PlanDesc,
    callback: Attach<'_, '_, '_>,
    work: impl FnOnce(&mut Plan) -> Result<R>,
) -> Result<R> {
    PLANS.with(|plans| {
        let mut plans = plans.borrow_mut();
        let cache = match &mut plans.cache {
            Some(cache) => cache,
            empty => empty.insert(PlanCache::new(PLAN_CACHE_CAPACITY)?),
        };
        let plan = match callback {
            Attach::Load(key, make) => cache.plan_with_load_callback(stream, desc, key, make)?,
            // SAFETY: a store callback comes from `store` only (see `Attach::Store`): it scales
            // the element cuFFT hands it and writes it at its offset, as the output's type,
            // reading nothing but its one word of caller info.
            Attach::Store(key, make) => unsafe { cache.plan_with_store_callback(stream, desc, key, make)? },
            Attach::None => cache.plan(stream, desc)?,
        };
        // cuFFT carries the CUDA runtime, whose exit teardown (registered on its first use)
        // must come after the pools are given back, as for cuBLAS.
        if !REGISTERED_AT_EXIT.swap(true, Ordering::Relaxed) {
            crate::at_exit::register_after_library("cuFFT");
        }
        work(plan)
    })
}

/// The complex transform of `a` over `shapes`, times `factor`.
pub(super) fn complex_to_complex<T: FftElement>(
    a: &DeviceArray<T>,
    shapes: &Shapes,
    factor: f64,
    inverse: bool,
) -> Result<DeviceArray<T::Complex>> {
    let plan = stages(&shapes.axes, Real::Neither);
    if shape_len(&shapes.output)? == 0 || plan.is_empty() {
        // Nothing to transform: the promoted, resized input (NumPy's result too).
        return rewritten(a, &shapes.input, factor, false, &identity(a.ndim()));
    }
    let order = moved_last(a.ndim(), &plan[0].1);
    let (staged, mut left) = staged::<T, T::Complex>(a, &shapes.input, factor, false, false, &order)?;
    let mut current: Option<DeviceArray<T::Complex>> = None;
    for (index, (stage, axes)) in plan.iter().enumerate() {
        let mut out = DeviceArray::empty(a.stream(), shapes.output.clone())?;
        let scale = if index + 1 == plan.len() { left } else { 1.0 };
        let scaled = match (&current, &staged) {
            (Some(c), _) | (None, Some(c)) => run_stage(c, &mut out, axes, *stage, inverse, scale)?,
            (None, None) => run_stage(a, &mut out, axes, *stage, inverse, scale)?,
        };
        if scaled {
            left = 1.0;
        }
        current = Some(out);
    }
    let mut out = current.ok_or_else(|| internal("no stage ran"))?;
    if left != 1.0 {
        out.update(|x| x * left)?;
    }
    Ok(out)
}

/// The real-input transform of `a` over `shapes`, times `factor`, conjugated where asked
/// (`ihfft`).
pub(super) fn real_to_complex<T: FftElement>(
    a: &DeviceArray<T>,
    shapes: &Shapes,
    factor: f64,
    conjugate: bool,
) -> Result<DeviceArray<T::Complex>> {
    if shape_len(&shapes.output)? == 0 {
        return DeviceArray::zeros(a.stream(), shapes.output.clone());
    }
    let plan = stages(&shapes.axes, Real::Input);
    let order = moved_last(a.ndim(), &plan[0].1);
    let (staged, mut left) = staged::<T, T::Part>(a, &shapes.input, factor, false, false, &order)?;
    // The factor rides in the last stage's copy where it makes one (not with a conjugate).
    let last_scale = |index: usize, left: f64| match !conjugate && index + 1 == plan.len() {
        true => left,
        false => 1.0,
    };
    let mut first = DeviceArray::<T::Complex>::empty(a.stream(), shapes.output.clone())?;
    let scale = last_scale(0, left);
    let scaled = match &staged {
        Some(real) => run_stage(real, &mut first, &plan[0].1, Stage::R2C, false, scale)?,
        None => run_stage(a, &mut first, &plan[0].1, Stage::R2C, false, scale)?,
    };
    if scaled {
        left = 1.0;
    }
    let mut current = first;
    for (index, (stage, axes)) in plan.iter().enumerate().skip(1) {
        let mut out = DeviceArray::empty(a.stream(), shapes.output.clone())?;
        if run_stage(&current, &mut out, axes, *stage, false, last_scale(index, left))? {
            left = 1.0;
        }
        current = out;
    }
    match (conjugate, left != 1.0) {
        (true, true) => current.update(|x| x.conj() * left)?,
        (true, false) => current.update(|x| x.conj())?,
        (false, true) => current.update(|x| x * left)?,
        (false, false) => {}
    }
    Ok(current)
}

/// The real-output transform of `a` over `shapes`, times `factor`, of the conjugate where asked
/// (`hfft`). `owned`: `a` is the caller's own array of the complex type, which the transform
/// may overwrite.
pub(super) fn complex_to_real<T: FftElement>(
    a: &DeviceArray<T>,
    shapes: &Shapes,
    factor: f64,
    conjugate: bool,
    owned: bool,
) -> Result<DeviceArray<T::Part>> {
    if shape_len(&shapes.output)? == 0 {
        return DeviceArray::zeros(a.stream(), shapes.output.clone());
    }
    let plan = stages(&shapes.axes, Real::Output);
    let order = moved_last(a.ndim(), &plan[0].1);
    // cuFFT overwrites a complex-to-real input: when that stage comes first it reads a copy.
    let private = plan[0].0 == Stage::C2R && !owned;
    let (staged, mut left) = staged::<T, T::Complex>(a, &shapes.input, factor, conjugate, private, &order)?;
    let mut current: Option<DeviceArray<T::Complex>> = None;
    let (last, complex_stages) = plan
        .split_last()
        .ok_or_else(|| internal("a real transform without a stage"))?;
    for (stage, axes) in complex_stages {
        let mut out = DeviceArray::empty(a.stream(), shapes.input.clone())?;
        // Unscaled (the factor goes with the last stage): whether it scaled does not matter.
        match (&current, &staged) {
            (Some(c), _) | (None, Some(c)) => run_stage(c, &mut out, axes, *stage, true, 1.0)?,
            (None, None) => run_stage(a, &mut out, axes, *stage, true, 1.0)?,
        };
        current = Some(out);
    }
    let mut out = DeviceArray::<T::Part>::empty(a.stream(), shapes.output.clone())?;
    // The complex-to-real stage overwrites what it reads: the last complex stage's output, the
    // private copy, or `a` itself where the caller owns it (nothing to rewrite: a staged
    // expression).
    let scaled = match current.or(staged) {
        Some(input) => run_stage(&input, &mut out, &last.1, Stage::C2R, true, left)?,
        None if owned => run_stage(a, &mut out, &last.1, Stage::C2R, true, left)?,
        None => return Err(internal("the complex-to-real stage has no private input")),
    };
    if scaled {
        left = 1.0;
    }
    if left != 1.0 {
        out.update(|x| x * left)?;
    }
    Ok(out)
}

/// What the first stage reads: `None` for `a` itself (already of type `U` and shape `shape`,
/// nothing to conjugate, not `private`), else `a` written once into a new array of `U` (see
/// [`rewritten`]), laid out with the first stage's axes last. With the factor left to apply
/// to the result (1 when the pass took it; an `f16` input keeps it, as `f16` arithmetic would
/// round the factor).
fn staged<T: Scalars, U: Scalars>(
    a: &DeviceArray<T>,
    shape: &[usize],
    factor: f64,
    conjugate: bool,
    private: bool,
    order: &[usize],
) -> Result<(Option<DeviceArray<U>>, f64)> {
    if T::DTYPE == U::DTYPE && a.shape() == shape && !conjugate && !private {
        return Ok((None, factor));
    }
    let fused = T::DTYPE != DType::F16;
    let pass_factor = if fused { factor } else { 1.0 };
    let array = rewritten(a, shape, pass_factor, conjugate, order)?;
    Ok((Some(array), if fused { 1.0 } else { factor }))
}

/// `a` cropped or zero-padded to `shape`, as `U`, times `factor`, conjugated where asked: one
/// kernel (and a memset where it pads). The array's memory holds its axes in `order` (so the
/// stage whose axes come last reads it compact); the view returned is in `a`'s axis order.
fn rewritten<T: Scalars, U: Scalars>(
    a: &DeviceArray<T>,
    shape: &[usize],
    factor: f64,
    conjugate: bool,
    order: &[usize],
) -> Result<DeviceArray<U>> {
    let array = staging::<U>(a.stream(), shape, a.shape(), order)?;
    let common: Vec<Slice> = shape
        .iter()
        .zip(a.shape())
        .map(|(&n, &m)| Slice::from(0..n.min(m)))
        .collect();
    let source = a.slice(&common)?;
    let mut target = array.slice(&common)?;
    match (conjugate, factor != 1.0) {
        (false, false) => target.assign(&source)?,
        (false, true) => target.assign(&source * factor)?,
        (true, false) => target.assign((&source).conj())?,
        (true, true) => target.assign((&source).conj() * factor)?,
    }
    Ok(array)
}

/// A new array of `shape` whose memory holds its axes in `order`, seen in the natural order:
/// zeros where `shape` pads `source` (a larger extent somewhere), else uninitialised.
pub(super) fn staging<U: Scalars>(
    stream: &Stream,
    shape: &[usize],
    source: &[usize],
    order: &[usize],
) -> Result<DeviceArray<U>> {
    let stored: Vec<usize> = order.iter().map(|&k| shape[k]).collect();
    let pads = shape.iter().zip(source).any(|(n, m)| n > m);
    let storage = match pads {
        true => DeviceArray::<U>::zeros(stream, stored)?,
        false => DeviceArray::<U>::empty(stream, stored)?,
    };
    let mut inverse = vec![0usize; order.len()];
    for (position, &axis) in order.iter().enumerate() {
        inverse[axis] = position;
    }
    storage.permute(inverse)
}

fn identity(ndim: usize) -> Vec<usize> {
    (0..ndim).collect()
}

/// The axes in the order that puts `axes` last (the others keep their order).
pub(super) fn moved_last(ndim: usize, axes: &[usize]) -> Vec<usize> {
    (0..ndim)
        .filter(|k| !axes.contains(k))
        .chain(axes.iter().copied())
        .collect()
}

/// The precision of a transform whose complex or real side is `T`.
pub(super) fn precision<T: Element>() -> Precision {
    match T::DTYPE {
        DType::C64 | DType::F32 => Precision::F32,
        _ => Precision::F64,
    }
}

/// cuFFT's layout of a described side: packed where it is.
pub(super) fn layout(side: &Described, dims: &[usize]) -> Result<Layout> {
    let per_transform: usize = dims.iter().product();
    if side.embed == dims && side.stride == 1 && (side.batch == 1 || side.distance == per_transform) {
        return Ok(Layout::Packed);
    }
    Ok(Layout::strided(&side.embed, side.stride, side.distance)?)
}

/// One plan: the transform of `input` over `axes` into `output` (compact, of the result's
/// shape). `input` is read in place where cuFFT's layout describes it with `axes` last, else
/// through one compact copy; likewise `output` is written in place or through a compact
/// temporary. A complex-to-real stage overwrites its input: the callers hand it an array of
/// their own. `scale` multiplies the result where the stage writes it in a pass of its own (a
/// transform of one point, the copy out of a temporary) or, where cuFFT takes LTO callbacks,
/// in a store callback as cuFFT writes it; whether it did is returned, else the caller applies
/// it.
fn run_stage<I: Scalars, O: Scalars>(
    input: &DeviceArray<I>,
    output: &mut DeviceArray<O>,
    axes: &[usize],
    stage: Stage,
    inverse: bool,
    scale: f64,
) -> Result<bool> {
    let (kind, direction, input_type, output_type) = match stage {
        Stage::C2C => (
            Kind::C2C,
            if inverse {
                Direction::Inverse
            } else {
                Direction::Forward
            },
            complex_of::<O>(),
            O::DTYPE,
        ),
        Stage::R2C => (Kind::R2C, Direction::Forward, real_of::<O>(), O::DTYPE),
        Stage::C2R => (Kind::C2R, Direction::Inverse, complex_of::<O>(), O::DTYPE),
    };
    if I::DTYPE != input_type || O::DTYPE != output_type {
        return Err(internal(&format!(
            "a {stage:?} stage from {} into {}",
            I::DTYPE,
            O::DTYPE
        )));
    }
    // A transform of one point is the value itself: such axes leave the plan (but for the
    // halved axis of a real transform, whose extents differ between the sides), and a stage
    // left with none is a copy.
    let real_side = match stage {
        Stage::C2R => output.shape().to_vec(),
        Stage::C2C | Stage::R2C => input.shape().to_vec(),
    };
    let last = axes.last().copied();
    let axes: Vec<usize> = axes
        .iter()
        .copied()
        .filter(|&k| real_side[k] != 1 || (stage != Stage::C2C && Some(k) == last))
        .collect();
    if axes.iter().all(|&k| real_side[k] == 1) {
        match (stage, scale != 1.0) {
            (Stage::C2C | Stage::R2C, false) => output.assign(input)?,
            (Stage::C2C | Stage::R2C, true) => output.assign(input * scale)?,
            (Stage::C2R, false) => output.assign(input.real())?,
            (Stage::C2R, true) => output.assign(input.real() * scale)?,
        }
        return Ok(true);
    }
    let axes = &axes[..];
    let stream = input.stream().clone();
    let ndim = input.ndim();
    let rank = axes.len();
    let order = moved_last(ndim, axes);
    let moved_input = input.permute(order.clone())?;
    let moved_shape: Vec<usize> = order.iter().map(|&k| output.shape()[k]).collect();
    let split = ndim - rank;
    let real_dims: Vec<usize> = match stage {
        Stage::C2R => moved_shape[split..].to_vec(),
        Stage::C2C | Stage::R2C => moved_input.shape()[split..].to_vec(),
    };
    // The input in place, or compact; a complex-to-real input compact always (cuFFT writes it).
    let described = match stage {
        Stage::C2R => None,
        Stage::C2C | Stage::R2C => describe(moved_input.shape(), moved_input.strides(), rank),
    };
    let (mut read, input_side) = match described {
        Some(side) => (moved_input, side),
        None => {
            let compact = moved_input.to_contiguous()?;
            let side = compact_layout(&compact, rank)?;
            (compact, side)
        }
    };
    let (mut temporary, output_side) = output_target(output, &order, rank)?;
    let in_place = temporary.is_none();
    let input_dims = read.shape()[split..].to_vec();
    let output_dims = moved_shape[split..].to_vec();
    let desc = PlanDesc::new(kind, precision::<O>(), &real_dims)?
        .batch(input_side.batch)
        .input_layout(layout(&input_side, &input_dims)?)
        .output_layout(layout(&output_side, &output_dims)?);
    let target: &mut DeviceArray<O> = match &mut temporary {
        Some(compact) => compact,
        None => output,
    };
    let pool = target.pool();
    let mut run = |plan: &mut Plan, target: &mut DeviceArray<O>| -> Result<()> {
        let mut workspace = workspace_for(plan, &pool, &stream)?;
        let workspace = workspace.as_mut().map(|w| w as &mut dyn cuda_driver::DeviceMemoryMut);
        match stage {
            Stage::C2C | Stage::R2C => plan.execute(&stream, direction, &Extent(&read), target, workspace)?,
            Stage::C2R => plan.execute_c2r(&stream, &mut read, target, workspace)?,
        }
        Ok(())
    };
    // The factor in a store callback, where nothing else writes the result after cuFFT.
    if scale != 1.0 && in_place {
        let why = match stored(&stream, &desc, kind, scale, |plan| run(plan, &mut *target))? {
            None => {
                note_store_path(None);
                return Ok(true);
            }
            Some(why) => why,
        };
        note_store_path(Some(why));
    }
    with_plan(&stream, &desc, Attach::None, |plan| run(plan, &mut *target))?;
    finish_output(output, temporary, order, scale)
}

/// Runs the plan of `desc` with the store callback that multiplies its output by `scale`:
/// `None` once queued, else why it cannot (nothing queued then).
fn stored(
    stream: &Stream,
    desc: &PlanDesc,
    kind: Kind,
    scale: f64,
    run: impl FnOnce(&mut Plan) -> Result<()>,
) -> Result<Option<String>> {
    if let Some(why) = callbacks_unavailable()? {
        return Ok(Some(why));
    }
    let precision = desc.precision();
    let (major, minor) = stream.context().device().compute_capability()?;
    let arch = crate::device_target(major, minor, crate::CompileTarget::LtoIr)?
        .0
        .number();
    let key = store::key(kind, precision, arch);
    if refused(&key) {
        return Ok(Some("cuFFT refused the store callback before".into()));
    }
    let compiled = match store::compiled(&key, kind, precision, arch) {
        Ok(compiled) => compiled,
        Err(error) => return Ok(Some(format!("the store callback did not compile: {error}"))),
    };
    let mut make = || {
        Ok(StoreCallback {
            symbol: store::SYMBOL,
            lto_ir: &compiled.lto_ir,
            info_words: store::INFO_WORDS,
        })
    };
    let ran = with_plan(stream, desc, Attach::Store(&key, &mut make), |plan| {
        plan.set_store_info(&[scale.to_bits()])?;
        run(plan)
    });
    match ran {
        Ok(()) => Ok(None),
        Err(Error::Library(cuda_libs::Error::Status { function, name, .. })) if refuses_callback(function, &name) => {
            note_refused(&key);
            Ok(Some(format!(
                "cuFFT refused the store callback: {function} gave {name}"
            )))
        }
        Err(error) => Err(error),
    }
}

/// A plan's workspace from `pool` on `stream` (`None` where it needs none).
pub(super) fn workspace_for(
    plan: &Plan,
    pool: &crate::array::MemoryPool,
    stream: &Stream,
) -> Result<Option<DeviceArray<u8>>> {
    match plan.workspace_size() {
        0 => Ok(None),
        bytes => Ok(Some(DeviceArray::<u8>::empty_in(pool, stream, [bytes])?)),
    }
}

/// Where a stage of `rank` axes writes `output` (compact, of the result's shape) with its axes
/// in `order` (the plan's last): in place where cuFFT's advanced layout describes that view
/// (`None`), else a compact temporary in that order, with the layout of what is written.
pub(super) fn output_target<O: Element>(
    output: &DeviceArray<O>,
    order: &[usize],
    rank: usize,
) -> Result<(Option<DeviceArray<O>>, Described)> {
    let moved_shape: Vec<usize> = order.iter().map(|&k| output.shape()[k]).collect();
    let moved_strides: Vec<isize> = order.iter().map(|&k| output.strides()[k]).collect();
    match describe(&moved_shape, &moved_strides, rank) {
        Some(side) => Ok((None, side)),
        None => {
            let compact = DeviceArray::<O>::empty(output.stream(), moved_shape)?;
            let side = compact_layout(&compact, rank)?;
            Ok((Some(compact), side))
        }
    }
}

/// Copies the temporary of [`output_target`] (if any) into `output`, times `scale`: whether
/// that pass ran (and so took the scale).
pub(super) fn finish_output<O: Scalars>(
    output: &mut DeviceArray<O>,
    temporary: Option<DeviceArray<O>>,
    order: Vec<usize>,
    scale: f64,
) -> Result<bool> {
    match temporary {
        Some(compact) if scale != 1.0 => output.permute(order)?.assign(&compact * scale)?,
        Some(compact) => output.permute(order)?.copy_from(&compact)?,
        None => return Ok(false),
    }
    Ok(true)
}

/// The layout of a compact array (which cuFFT's advanced layout always describes).
fn compact_layout<T: Element>(compact: &DeviceArray<T>, rank: usize) -> Result<Described> {
    describe(compact.shape(), compact.strides(), rank).ok_or_else(|| internal("a compact array without a layout"))
}

/// A broken invariant of this module, as an error rather than a panic.
pub(super) fn internal(what: &str) -> Error {
    Error::InvalidValue(format!("internal error of the fft module: {what}"))
}

fn complex_of<T: Element>() -> DType {
    match T::DTYPE {
        DType::C64 | DType::F32 => DType::C64,
        _ => DType::C128,
    }
}

fn real_of<T: Element>() -> DType {
    match T::DTYPE {
        DType::C64 | DType::F32 => DType::F32,
        _ => DType::F64,
    }
}

/// An array cuFFT reads (through an advanced layout computed from its strides, all positive, or
/// through a load callback): the device-memory contract over the bytes from its lowest element
/// to one past its highest.
pub(super) struct Extent<'a>(pub(super) &'a dyn ErasedArray);

// SAFETY: the range is the view's extent inside its storage (a view never reaches outside it),
// alive for the borrow; with positive strides the first element is the lowest address, and the
// layout handed with it (computed from the view's strides) reaches only the view's elements (a
// load callback gets no address from here). Uses go through the array's own tracker. Not
// `DeviceMemoryMut`: only read.
unsafe impl cuda_driver::DeviceMemory for Extent<'_> {
    fn context(&self) -> &Context {
        self.0.context()
    }

    fn device_ptr(&self) -> CUdeviceptr {
        self.0.span().byte_range().0
    }

    fn byte_len(&self) -> usize {
        let (start, end) = self.0.span().byte_range();
        (end - start) as usize
    }

    fn begin_use(&self, stream: &Stream, access: Access) -> cuda_driver::Result<StreamUse<'_>> {
        self.0.begin_use(stream, access)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_transformed_axes_move_last() {
        assert_eq!(moved_last(3, &[0]), [1, 2, 0]);
        assert_eq!(moved_last(4, &[2, 0]), [1, 3, 2, 0]);
        assert_eq!(moved_last(2, &[0, 1]), [0, 1]);
    }

    #[test]
    fn packed_sides_are_packed_layouts() {
        let packed = Described {
            embed: vec![4, 8],
            stride: 1,
            distance: 32,
            batch: 3,
        };
        assert_eq!(layout(&packed, &[4, 8]).unwrap(), Layout::Packed);
        let columns = Described {
            embed: vec![8],
            stride: 16,
            distance: 1,
            batch: 16,
        };
        assert_eq!(layout(&columns, &[8]).unwrap(), Layout::strided(&[8], 16, 1).unwrap());
        assert_eq!(precision::<num_complex::Complex<f32>>(), Precision::F32);
        assert_eq!(precision::<f64>(), Precision::F64);
        assert_eq!(
            (complex_of::<f32>(), real_of::<num_complex::Complex<f64>>()),
            (DType::C64, DType::F64)
        );
    }
}
