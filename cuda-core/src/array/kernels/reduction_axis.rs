//! The axis form of [`ReductionKernel`]: reducing the inputs along some of their axes, each
//! output element the reduction of the input elements that share its position on the others.
//!
//! A C-contiguous input reduced along adjacent axes is `(outer, extent, inner)`: `extent`
//! elements reduced into each of `outer * inner` outputs. With `inner == 1` the reduced elements
//! of an output are contiguous and a block (or a warp, for short rows) reduces each row with
//! vector loads; otherwise one thread per output (or per pack of neighbouring outputs, with
//! vector loads) walks the reduced axis, neighbouring threads reading neighbouring elements. When that leaves too few threads to fill the device the
//! reduced axis is split into chunks reduced into partial values, which a last pass combines
//! in chunk order, so results do not depend on timing. Reduced axes that are not adjacent are
//! first moved last (a copy of each input).

use std::fmt::Write;

use cuda_driver::Stream;
use cuda_sys::driver::CUdeviceptr;

use crate::array::axis::Axes;
use crate::array::kernels::args::{call_args, check_args, declared_type, Arg, ArgType};
use crate::array::kernels::launch::Launch;
use crate::array::kernels::params::Param;
use crate::array::kernels::reduction::{aligned_width, vector_width, ReductionKernel};
use crate::array::memory::MemoryPool;
use crate::array::memory::{overlap, Overlap};
use crate::error::{Error, Result};

/// Threads of a block (and per row when a block reduces one row).
const BLOCK: u64 = 256;
/// Rows at or above this many reduced elements get a block each; shorter ones a warp each.
const BLOCK_ROW: u64 = 1024;
/// Rows shorter than this are reduced by one thread each.
const WARP_ROW: u64 = 32;
/// Resident threads per SM the grid is sized to fill.
const THREADS_PER_SM: u64 = 2048;
/// The fewest reduced elements each thread handles in a chunk of a split reduced axis.
const PER_THREAD: u64 = 16;

/// How an axis reduction of a C-contiguous shape runs.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum AxisLayout {
    /// `extent` elements reduced into each of `outer * inner` outputs; output `o * inner + i`
    /// reduces elements `(o * extent + r) * inner + i`.
    Runs { outer: u64, extent: u64, inner: u64 },
    /// The reduced axes are not adjacent: permute the inputs to this axis order (kept axes,
    /// then reduced ones) and reduce the trailing axes.
    Permute(Vec<usize>),
}

/// The layout of reducing a C-contiguous `shape` along the axes marked in `reduced`.
pub(crate) fn axis_layout(shape: &[usize], reduced: &[bool]) -> AxisLayout {
    // Runs of axes of one kind, axes of extent 1 dropped (they change no index).
    let mut runs: Vec<(bool, u64)> = Vec::new();
    for (&extent, &is_reduced) in shape.iter().zip(reduced) {
        if extent == 1 {
            continue;
        }
        match runs.last_mut() {
            Some((kind, product)) if *kind == is_reduced => *product *= extent as u64,
            _ => runs.push((is_reduced, extent as u64)),
        }
    }
    let kinds: Vec<bool> = runs.iter().map(|r| r.0).collect();
    let value = |index: usize| runs[index].1;
    match kinds.as_slice() {
        [] => AxisLayout::Runs {
            outer: 1,
            extent: 1,
            inner: 1,
        },
        [false] => AxisLayout::Runs {
            outer: value(0),
            extent: 1,
            inner: 1,
        },
        [true] => AxisLayout::Runs {
            outer: 1,
            extent: value(0),
            inner: 1,
        },
        [false, true] => AxisLayout::Runs {
            outer: value(0),
            extent: value(1),
            inner: 1,
        },
        [true, false] => AxisLayout::Runs {
            outer: 1,
            extent: value(0),
            inner: value(1),
        },
        [false, true, false] => AxisLayout::Runs {
            outer: value(0),
            extent: value(1),
            inner: value(2),
        },
        _ => {
            let kept = (0..shape.len()).filter(|&a| !reduced[a]);
            AxisLayout::Permute(kept.chain((0..shape.len()).filter(|&a| reduced[a])).collect())
        }
    }
}

/// Which axes of an `ndim`-dimensional array `axes` names, or an error for an axis out of range
/// or named twice.
pub(crate) fn reduced_axes(what: &str, ndim: usize, axes: &[usize]) -> Result<Vec<bool>> {
    let mut reduced = vec![false; ndim];
    for &axis in axes {
        if axis >= ndim {
            return Err(Error::InvalidValue(format!(
                "{what}: axis {axis} is out of range for an array of {ndim} dimensions"
            )));
        }
        if std::mem::replace(&mut reduced[axis], true) {
            return Err(Error::InvalidValue(format!("{what}: axis {axis} is named twice")));
        }
    }
    Ok(reduced)
}

/// The shape of reducing `shape` along the `reduced` axes: without them, or with extent 1 in
/// their place when `keepdims`.
pub(crate) fn reduced_shape(shape: &[usize], reduced: &[bool], keepdims: bool) -> Vec<usize> {
    shape
        .iter()
        .zip(reduced)
        .filter_map(|(&extent, &r)| match (r, keepdims) {
            (false, _) => Some(extent),
            (true, true) => Some(1),
            (true, false) => None,
        })
        .collect()
}

/// The kernel and grid of one axis reduction.
#[derive(Debug, PartialEq, Eq)]
struct AxisPlan {
    kernel: AxisKernel,
    /// Blocks along x (outputs), and along y (chunks of the reduced axis).
    grid: (u32, u32),
    block: (u32, u32),
    /// Reduced elements per chunk.
    chunk: u64,
}

#[derive(Debug, PartialEq, Eq, Clone, Copy)]
enum AxisKernel {
    Rows,
    RowsVec,
    Cols,
    ColsVec,
}

/// Indices of the axis form's functions in its loaded table.
const ROWS: usize = 0;
const COLS: usize = 1;
const FINAL: usize = 2;
const ROWS_VEC: usize = 3;
const COLS_VEC: usize = 4;

/// Chooses the kernel and grid for `(outer, extent, inner)` on a device of `sm_count` SMs;
/// `width` is the vector width when the inputs may be read in packs of it (1: not).
fn plan_axis(outer: u64, extent: u64, inner: u64, sm_count: u32, width: u64) -> Result<AxisPlan> {
    let outputs = outer * inner;
    let target = u64::from(sm_count.max(1)) * THREADS_PER_SM;
    let rows = inner == 1 && extent >= WARP_ROW;
    // Columns read in packs: each thread reduces `width` neighbouring outputs.
    let columns_vector = !rows && width > 1 && inner % width == 0;
    let (threads_per_output, outputs_per_block) = match (rows, extent >= BLOCK_ROW) {
        (true, true) => (BLOCK, 1),
        (true, false) => (32, BLOCK / 32),
        (false, _) if columns_vector => (1, BLOCK * width),
        (false, _) => (1, BLOCK),
    };
    let blocks = outputs.div_ceil(outputs_per_block);
    let threads = blocks * BLOCK;
    let splits = match threads >= target || extent == 0 {
        true => 1,
        false => target
            .div_ceil(threads)
            .min(extent.div_ceil(threads_per_output * PER_THREAD))
            .clamp(1, u64::from(u16::MAX)),
    };
    let vector = rows && width > 1 && extent % width == 0;
    let mut chunk = extent.div_ceil(splits).max(1);
    if vector {
        chunk = chunk.div_ceil(width) * width;
    }
    let splits = extent.div_ceil(chunk).max(1);
    let grid_x = u32::try_from(blocks).map_err(|_| {
        Error::InvalidValue(format!(
            "axis reduction: {outputs} outputs need more blocks than a grid holds"
        ))
    })?;
    Ok(AxisPlan {
        kernel: match (rows, vector, columns_vector) {
            (true, true, _) => AxisKernel::RowsVec,
            (true, false, _) => AxisKernel::Rows,
            (false, _, true) => AxisKernel::ColsVec,
            (false, _, false) => AxisKernel::Cols,
        },
        grid: (grid_x.max(1), splits as u32),
        block: match rows {
            true => (threads_per_output as u32, outputs_per_block as u32),
            false => (BLOCK as u32, 1),
        },
        chunk,
    })
}

impl ReductionKernel {
    /// The CUDA C++ of the axis form for arguments of `signature` (inputs then the output):
    /// `{name}_rows` (each output's elements contiguous), `{name}_cols` (one thread per output),
    /// `{name}_axis_final` (combines the partial values of a split reduced axis) and, when the
    /// inputs can be read in 16-byte packs, `{name}_rows_vec` and `{name}_cols_vec` (a thread
    /// per pack of neighbouring outputs).
    pub fn axis_source_for(&self, signature: &[ArgType]) -> Result<String> {
        let mut s = self.device_functions(signature)?;
        let name = self.name();
        let inputs: Vec<(&Param, ArgType)> = self.inputs().iter().zip(signature.iter().copied()).collect();
        let output = &self.output_param();
        let width = vector_width(&inputs);
        let mut params: Vec<String> = inputs
            .iter()
            .map(|(p, a)| match a.is_array() {
                true => format!("const {} *__restrict__ _p_{}", declared_type(p), p.name),
                false => format!("const {} {}", declared_type(p), p.name),
            })
            .collect();
        params.push(format!("{} *__restrict__ _p_{}", declared_type(output), output.name));
        params.push("_type_reduce *__restrict__ _partials".into());
        for size in ["_outs", "_extent", "_inner", "_chunk"] {
            params.push(format!("const unsigned long long {size}"));
        }
        let params = params.join(", ");
        let element = |index: &str| call_args(inputs.iter().copied(), |p| format!("_p_{}[{index}]", p.name));
        let post_for = |acc: &str| {
            let mut post_args = vec![acc.to_string(), format!("_p_{}[_o]", output.name)];
            post_args.extend(self.scalars(signature).map(|p| p.name.clone()));
            post_args.push("_extent".into());
            post_args.join(", ")
        };
        let post = post_for("_acc");
        let chunk_bounds = "    const unsigned long long _r0 = (unsigned long long)blockIdx.y * _chunk;\n\
             \x20   const unsigned long long _r1 = _r0 + _chunk < _extent ? _r0 + _chunk : _extent;\n";
        let row_tail = format!(
            "    _acc = blockDim.x == 32 ? _{name}_warp(_acc) : _{name}_block(_acc);\n\
             \x20   if (threadIdx.x == 0 && _o < _outs) {{\n\
             \x20       if (gridDim.y == 1) _{name}_post({post});\n\
             \x20       else _partials[(unsigned long long)blockIdx.y * _outs + _o] = _acc;\n\
             \x20   }}\n\
             }}\n"
        );
        let _ = write!(
            s,
            "extern \"C\" __global__ void {name}_rows({params}) {{\n\
             \x20   const unsigned long long _o = (unsigned long long)blockIdx.x * blockDim.y + threadIdx.y;\n\
             {chunk_bounds}\
             \x20   _type_reduce _acc = _{name}_identity();\n\
             \x20   if (_o < _outs) {{\n\
             \x20       const unsigned long long _base = _o * _extent;\n\
             \x20       #pragma unroll 4\n\
             \x20       for (unsigned long long _r = _r0 + threadIdx.x; _r < _r1; _r += blockDim.x) {{\n\
             \x20           const unsigned long long _e = _base + _r;\n\
             \x20           _acc = _{name}_reduce(_acc, _{name}_map({}, _e, _extent));\n\
             \x20       }}\n\
             \x20   }}\n\
             {row_tail}",
            element("_e")
        );
        let _ = write!(
            s,
            "extern \"C\" __global__ void {name}_cols({params}) {{\n\
             \x20   const unsigned long long _o = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;\n\
             \x20   if (_o >= _outs) return;\n\
             {chunk_bounds}\
             \x20   const unsigned long long _outer = _o / _inner;\n\
             \x20   const unsigned long long _base = _outer * _extent * _inner + (_o - _outer * _inner);\n\
             \x20   _type_reduce _acc = _{name}_identity();\n\
             \x20   #pragma unroll 4\n\
             \x20   for (unsigned long long _r = _r0; _r < _r1; ++_r) {{\n\
             \x20       const unsigned long long _e = _base + _r * _inner;\n\
             \x20       _acc = _{name}_reduce(_acc, _{name}_map({}, _e, _extent));\n\
             \x20   }}\n\
             \x20   if (gridDim.y == 1) _{name}_post({post});\n\
             \x20   else _partials[(unsigned long long)blockIdx.y * _outs + _o] = _acc;\n\
             }}\n",
            element("_e")
        );
        let mut final_params = vec![
            "const _type_reduce *__restrict__ _partials".to_string(),
            format!("{} *__restrict__ _p_{}", declared_type(output), output.name),
            "const unsigned long long _outs".into(),
            "const unsigned long long _splits".into(),
        ];
        final_params.extend(self.scalar_decls(signature));
        final_params.push("const unsigned long long _extent".into());
        let _ = write!(
            s,
            "extern \"C\" __global__ void {name}_axis_final({}) {{\n\
             \x20   const unsigned long long _o = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;\n\
             \x20   if (_o >= _outs) return;\n\
             \x20   _type_reduce _acc = _{name}_identity();\n\
             \x20   for (unsigned long long _s = 0; _s < _splits; ++_s) _acc = _{name}_reduce(_acc, _partials[_s * _outs + _o]);\n\
             \x20   _{name}_post({post});\n\
             }}\n",
            final_params.join(", ")
        );
        if width > 1 {
            let arrays: Vec<&Param> = inputs.iter().filter(|(_, a)| a.is_array()).map(|(p, _)| *p).collect();
            let mut loads = String::new();
            for p in &arrays {
                let pack = format!("_Pack<{}, {width}>", declared_type(p));
                let _ = writeln!(
                    loads,
                    "            const {pack} _{n} = reinterpret_cast<const {pack} *>(_p_{n})[_k];",
                    n = p.name
                );
            }
            let packed = call_args(inputs.iter().copied(), |p| format!("_{}.v[_j]", p.name));
            let _ = write!(
                s,
                "extern \"C\" __global__ void {name}_rows_vec({params}) {{\n\
                 \x20   const unsigned long long _o = (unsigned long long)blockIdx.x * blockDim.y + threadIdx.y;\n\
                 {chunk_bounds}\
                 \x20   _type_reduce _acc = _{name}_identity();\n\
                 \x20   if (_o < _outs) {{\n\
                 \x20       const unsigned long long _base = _o * (_extent / {width});\n\
                 \x20       #pragma unroll 4\n\
                 \x20       for (unsigned long long _q = _r0 / {width} + threadIdx.x; _q < _r1 / {width}; _q += blockDim.x) {{\n\
                 \x20           const unsigned long long _k = _base + _q;\n\
                 {loads}\
                 \x20           #pragma unroll\n\
                 \x20           for (int _j = 0; _j < {width}; ++_j) _acc = _{name}_reduce(_acc, _{name}_map({packed}, _k * {width} + _j, _extent));\n\
                 \x20       }}\n\
                 \x20   }}\n\
                 {row_tail}"
            );
            let post = post_for("_acc[_j]");
            let _ = write!(
                s,
                "extern \"C\" __global__ void {name}_cols_vec({params}) {{\n\
                 \x20   const unsigned long long _o0 = ((unsigned long long)blockIdx.x * blockDim.x + threadIdx.x) * {width};\n\
                 \x20   if (_o0 >= _outs) return;\n\
                 {chunk_bounds}\
                 \x20   const unsigned long long _outer = _o0 / _inner;\n\
                 \x20   const unsigned long long _base = (_outer * _extent * _inner + (_o0 - _outer * _inner)) / {width};\n\
                 \x20   const unsigned long long _step = _inner / {width};\n\
                 \x20   _type_reduce _acc[{width}];\n\
                 \x20   #pragma unroll\n\
                 \x20   for (int _j = 0; _j < {width}; ++_j) _acc[_j] = _{name}_identity();\n\
                 \x20   #pragma unroll 4\n\
                 \x20   for (unsigned long long _r = _r0; _r < _r1; ++_r) {{\n\
                 \x20       const unsigned long long _k = _base + _r * _step;\n\
                 {loads}\
                 \x20       #pragma unroll\n\
                 \x20       for (int _j = 0; _j < {width}; ++_j) _acc[_j] = _{name}_reduce(_acc[_j], _{name}_map({packed}, _k * {width} + _j, _extent));\n\
                 \x20   }}\n\
                 \x20   #pragma unroll\n\
                 \x20   for (int _j = 0; _j < {width}; ++_j) {{\n\
                 \x20       const unsigned long long _o = _o0 + _j;\n\
                 \x20       if (gridDim.y == 1) _{name}_post({post});\n\
                 \x20       else _partials[(unsigned long long)blockIdx.y * _outs + _o] = _acc[_j];\n\
                 \x20   }}\n\
                 }}\n"
            );
        }
        Ok(s)
    }

    /// Reduces the inputs along `axes` (one axis or a list; negative ones count from the end)
    /// into the output, on `stream`: each output element is the
    /// reduction of the input elements at its position on the other axes, and `n` (in the
    /// expressions) is the number of elements reduced into it. `args` are the inputs (one shape,
    /// C-contiguous) then the output, whose shape is the inputs' without the reduced axes or
    /// with extent 1 in their place (NumPy's `keepdims`), C-contiguous and apart from the inputs.
    ///
    /// ```no_run
    /// use cuda_core::{Arg, Device, DeviceArray, ReductionKernel};
    ///
    /// # fn main() -> cuda_core::Result<()> {
    /// let sum = ReductionKernel::new("T x", "T y", "x", "a + b", "y = a", "0", "sum_rows", None)?;
    /// let stream = Device::new(0)?.create_stream()?;
    /// let x = DeviceArray::from_slice(&stream, &[1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0])?.reshape([2, 3])?;
    /// let mut y = DeviceArray::<f32>::empty(&stream, 2)?;
    /// // SAFETY: the expressions only compute with the values they are given, and the post-map
    /// // assigns the output element it is given.
    /// unsafe { sum.launch_axes(&stream, &[Arg::from(&x), Arg::from(&mut y)], &[1])? };
    /// assert_eq!(y.to_vec()?, [6.0, 15.0]);
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Safety
    ///
    /// The same promise as for [`launch`](Self::launch): the expressions read only the values
    /// they are given (each input's element, `a` and `b`, the scalars, `i` and `n`), the
    /// post-map writes only through the output element reference it is given, none of them
    /// forms another address or dereferences one passed as a scalar, and they cause no data
    /// race and no other undefined behaviour that reaches memory.
    pub unsafe fn launch_axes(&self, stream: &Stream, args: &[Arg<'_>], axes: impl Into<Axes>) -> Result<()> {
        let name = self.name();
        let inputs = self.inputs().len();
        let signature: Vec<ArgType> = args.iter().map(Arg::arg_type).collect();
        let (_, reduce) = self.bind(&signature)?;
        let call = check_args(name, stream, args, inputs, true)?;
        let what = format!("reduction `{name}`");
        let axes = axes.into().indices(call.shape.len())?;
        let reduced = reduced_axes(&what, call.shape.len(), &axes)?;
        let output = args[inputs].array().expect("checked by check_args");
        let kept = reduced_shape(&call.shape, &reduced, false);
        if output.shape() != kept.as_slice() && output.shape() != reduced_shape(&call.shape, &reduced, true) {
            return Err(Error::InvalidValue(format!(
                "{what}: the output has shape {:?}; reducing {:?} along axes {axes:?} gives {kept:?}",
                output.shape(),
                call.shape
            )));
        }
        if !output.is_contiguous() {
            return Err(Error::InvalidValue(format!(
                "{what}: the output (strides {:?}) must be C-contiguous",
                output.strides()
            )));
        }
        if args[..inputs]
            .iter()
            .filter_map(Arg::array)
            .any(|a| overlap(a.span(), output.span()) != Overlap::Disjoint)
        {
            return Err(Error::InvalidValue(format!(
                "{what}: the output shares memory with an input; pass a separate array"
            )));
        }
        if output.len() == 0 {
            return Ok(());
        }
        match axis_layout(&call.shape, &reduced) {
            AxisLayout::Runs { outer, extent, inner } => {
                self.launch_runs(stream, args, &signature, reduce.size, (outer, extent, inner))
            }
            AxisLayout::Permute(order) => {
                let copies = args[..inputs]
                    .iter()
                    .map(|a| a.array().map(|array| array.permuted_copy(&order)).transpose())
                    .collect::<Result<Vec<_>>>()?;
                let moved: Vec<Arg<'_>> = copies
                    .iter()
                    .zip(&args[..inputs])
                    .map(|(copy, arg)| match copy {
                        Some(array) => Arg::erased(&**array),
                        None => arg.reborrow(),
                    })
                    .chain(std::iter::once(args[inputs].reborrow()))
                    .collect();
                let extent = axes.iter().map(|&a| call.shape[a] as u64).product();
                let outer = output.len() as u64;
                self.launch_runs(stream, &moved, &signature, reduce.size, (outer, extent, 1))
            }
        }
    }

    /// Launches the axis form over inputs laid out as `(outer, extent, inner)`.
    fn launch_runs(
        &self,
        stream: &Stream,
        args: &[Arg<'_>],
        signature: &[ArgType],
        reduce_size: usize,
        (outer, extent, inner): (u64, u64, u64),
    ) -> Result<()> {
        let inputs = self.inputs().len();
        let pairs: Vec<(&Param, ArgType)> = self.inputs().iter().zip(signature.iter().copied()).collect();
        let width = vector_width(&pairs);
        let loaded = self.loaded.get_or_load(stream.context(), signature, 1, || {
            let name = self.name();
            let mut names = vec![
                format!("{name}_rows"),
                format!("{name}_cols"),
                format!("{name}_axis_final"),
            ];
            if width > 1 {
                names.push(format!("{name}_rows_vec"));
                names.push(format!("{name}_cols_vec"));
            }
            Ok((self.axis_source_for(signature)?, names))
        })?;
        let packs = aligned_width(&pairs, &args[..inputs]) as u64;
        let plan = plan_axis(outer, extent, inner, loaded.sm_count, packs)?;
        let outputs = outer * inner;
        let splits = plan.grid.1;
        let partials = match splits > 1 {
            true => Some(
                MemoryPool::for_context(stream.context())
                    .alloc(stream, splits as usize * outputs as usize * reduce_size)?,
            ),
            false => None,
        };
        let partials_ptr: CUdeviceptr = partials.as_ref().map_or(0, |p| p.ptr());
        let mut launch = Launch::on(stream);
        launch.args(args)?.value(partials_ptr);
        for size in [outputs, extent, inner, plan.chunk] {
            launch.value(size);
        }
        let function = match plan.kernel {
            AxisKernel::Rows => &loaded.functions[ROWS],
            AxisKernel::RowsVec => &loaded.functions[ROWS_VEC],
            AxisKernel::Cols => &loaded.functions[COLS],
            AxisKernel::ColsVec => &loaded.functions[COLS_VEC],
        };
        // SAFETY: the axis kernels take the inputs (device addresses and scalars of the bound
        // types), the output's address, the partials' address and the four sizes, in this order.
        // The inputs are C-contiguous runs of `outer * extent * inner` elements (checked, or
        // copies made so) and the kernels read below that only; the output holds `outer * inner`
        // elements (its shape checked) and is written at those indices when there is one chunk,
        // else the partials (`splits * outer * inner` values of the reduce type) are. A vector
        // kernel is chosen only when every input is aligned to its packs and the rows (for
        // columns, the inner extent) are whole packs. All of it is ordered on `stream`.
        unsafe { launch.run(function, plan.grid, plan.block)? };
        if let Some(partials) = partials {
            let mut last = Launch::on(stream);
            last.value(partials_ptr)
                .arg(&args[inputs])?
                .value(outputs)
                .value(u64::from(splits));
            for scalar in args[..inputs].iter().filter(|a| a.array().is_none()) {
                last.arg(scalar)?;
            }
            last.value(extent);
            let grid = u32::try_from(outputs.div_ceil(BLOCK)).map_err(|_| {
                Error::InvalidValue(format!(
                    "axis reduction: {outputs} outputs need more blocks than a grid holds"
                ))
            })?;
            // SAFETY: the final pass takes the partials' address, the output's address, the
            // number of outputs and of chunks, the scalars and the reduced extent, in this
            // order; it reads the `splits * outputs` partials the first pass wrote on the same
            // stream and writes each of the `outputs` elements of the output once.
            unsafe { last.run(&loaded.functions[FINAL], (grid, 1), (BLOCK as u32, 1))? };
            // The partials go back to the pool in `stream`'s order, after both passes.
            drop(partials);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn adjacent_axes_become_one_run_and_others_a_permutation() {
        use AxisLayout::*;
        let layout =
            |shape: &[usize], axes: &[usize]| axis_layout(shape, &reduced_axes("test", shape.len(), axes).unwrap());
        assert_eq!(
            layout(&[4, 5], &[0]),
            Runs {
                outer: 1,
                extent: 4,
                inner: 5
            }
        );
        assert_eq!(
            layout(&[4, 5], &[1]),
            Runs {
                outer: 4,
                extent: 5,
                inner: 1
            }
        );
        assert_eq!(
            layout(&[2, 3, 4, 5], &[1, 2]),
            Runs {
                outer: 2,
                extent: 12,
                inner: 5
            }
        );
        assert_eq!(
            layout(&[2, 1, 4], &[0, 1]),
            Runs {
                outer: 1,
                extent: 2,
                inner: 4
            }
        );
        assert_eq!(layout(&[2, 3, 4], &[0, 2]), Permute(vec![1, 0, 2]));
        assert_eq!(
            layout(&[2, 3], &[]),
            Runs {
                outer: 6,
                extent: 1,
                inner: 1
            }
        );
        assert_eq!(
            layout(&[2, 3], &[0, 1]),
            Runs {
                outer: 1,
                extent: 6,
                inner: 1
            }
        );
        assert_eq!(
            layout(&[3, 0], &[1]),
            Runs {
                outer: 3,
                extent: 0,
                inner: 1
            }
        );
    }

    #[test]
    fn bad_axes_and_reduced_shapes() {
        let error = reduced_axes("sum", 2, &[2]).unwrap_err().to_string();
        assert!(
            error.contains("axis 2 is out of range for an array of 2 dimensions"),
            "{error}"
        );
        let error = reduced_axes("sum", 2, &[1, 1]).unwrap_err().to_string();
        assert!(error.contains("named twice"), "{error}");
        let reduced = reduced_axes("sum", 3, &[1]).unwrap();
        assert_eq!(reduced_shape(&[2, 3, 4], &reduced, false), [2, 4]);
        assert_eq!(reduced_shape(&[2, 3, 4], &reduced, true), [2, 1, 4]);
    }

    #[test]
    fn plans_fill_the_device_and_split_only_when_needed() {
        // sum(axis=1) of 2^14 x 2^14 f32: a block per row, vector loads, no split.
        let plan = plan_axis(1 << 14, 1 << 14, 1, 132, 4).unwrap();
        assert_eq!(plan.kernel, AxisKernel::RowsVec);
        assert_eq!(plan.grid, (1 << 14, 1));
        assert_eq!(plan.block, (256, 1));
        // sum(axis=0): a thread per four columns, the rows split into chunks.
        let plan = plan_axis(1, 1 << 14, 1 << 14, 132, 4).unwrap();
        assert_eq!((plan.kernel, plan.block), (AxisKernel::ColsVec, (256, 1)));
        assert_eq!(plan.grid.0, 16);
        assert!(
            plan.grid.1 > 1 && u64::from(plan.grid.1) * plan.chunk >= 1 << 14,
            "{plan:?}"
        );
        assert!(u64::from(plan.grid.1 - 1) * plan.chunk < 1 << 14, "{plan:?}");
        // Short rows: a warp each, eight to a block.
        let plan = plan_axis(1000, 100, 1, 132, 1).unwrap();
        assert_eq!((plan.kernel, plan.block), (AxisKernel::Rows, (32, 8)));
        assert_eq!(plan.grid.0, 125);
        // Columns that are not whole packs: a thread per column.
        let plan = plan_axis(3, 1000, 1001, 132, 4).unwrap();
        assert_eq!((plan.kernel, plan.grid.0), (AxisKernel::Cols, 12));
        // Very short rows: a thread each.
        assert_eq!(plan_axis(1 << 20, 4, 1, 132, 4).unwrap().kernel, AxisKernel::Cols);
        // A few long rows: split, with chunks of whole packs.
        let plan = plan_axis(2, 1 << 24, 1, 132, 4).unwrap();
        assert!(plan.grid.1 > 1 && plan.chunk % 4 == 0, "{plan:?}");
        // Nothing to reduce: one chunk.
        assert_eq!(plan_axis(5, 0, 1, 132, 4).unwrap().grid, (1, 1));
    }
}
