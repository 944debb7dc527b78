//! The gather and scatter family: `out[e] = x[at(e)]` and `x[at(e)] = values[e % len]`, where
//! `at(e)` reads an index from an index array. One generated kernel per call, for `take`,
//! `take_along_axis` and `put` (and what builds on them).
//!
//! A call is described by a [`GatherLayout`]: a loop over the elements `e` of a space of
//! `loop_extents`, in which `x` and the index array each have strides (in elements; zero where
//! they do not vary), and the axes the index value addresses (`index_extents`, with `x`'s
//! strides along them). The index value `j` (an `i32` or `i64`) is brought into
//! `0..product(index_extents)` by the [`IndexMode`], then split over those axes in C order.
//! So `take` along an axis has one index axis, `take` and `put` of the flattened array have
//! all of `x`'s axes as index axes (a strided `x` is read or written in place, no compacting
//! copy), and `take_along_axis` has one index axis and a loop in which `x` broadcasts.
//!
//! Every access stays inside `x`: a loop coordinate is below the extent of its axis in `x` (or
//! `x`'s stride there is 0), and after the mode `j` is below the index space's size. In
//! [`IndexMode::Raise`] an index out of range is not used: the kernel counts it and keeps one
//! such index in a two-word flag array, which the host reads back after the launch (one 16-byte
//! copy to the host and a wait for the stream: the cost of a typed error instead of a device
//! trap); the flag array comes from the pool of the array written. [`IndexMode::Wrap`] and [`IndexMode::Clip`] never fail and read nothing back.
//!
//! Index arithmetic is 32-bit when [`IndexWidth`] says so for the loop (with the index array's
//! strides) and for `x`'s own layout, else 64-bit; offsets are read as signed when a stride is
//! negative (a reversed view).

use std::fmt::Write;

use crate::array::device_array::DeviceArray;
use cuda_driver::Stream;

use crate::array::dtype::{DType, Element};
use crate::array::kernels::args::IndexWidth;
use crate::array::kernels::launch::Launch;
use crate::array::kernels::registry::{grid_for, kernel, KernelKey, LoadedTable};
use crate::array::kernels::signature::ArgType;
use crate::array::kernels::{Arg, PRELUDE};
use crate::array::memory::{offset_range, MemoryPool};
use crate::error::{Error, Result};

/// Threads per block of gather and scatter kernels.
const BLOCK: u32 = 256;
/// Resident blocks per SM the grid is sized to.
const BLOCKS_PER_SM: u32 = 8;

/// What an index outside its axis does (NumPy's `mode` of `take` and `put`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum IndexMode {
    /// Negative indices count from the end; anything else outside the axis is an
    /// [`Error::IndexOutOfBounds`], detected on the device and read back once per call (a
    /// 16-byte copy and a wait for the array's stream).
    #[default]
    Raise,
    /// Indices wrap around the axis (`j mod extent`, negative ones too).
    Wrap,
    /// Indices are clamped to the axis (`0..extent`); negative ones become 0.
    Clip,
}

/// Element types an index array may have: `i32` and `i64` (NumPy's `intp`).
pub trait IndexElement: Element + sealed::Sealed {}

impl IndexElement for i32 {}
impl IndexElement for i64 {}

mod sealed {
    pub trait Sealed {}
    impl Sealed for i32 {}
    impl Sealed for i64 {}
}

/// A gather or scatter call's index arithmetic (see the module's docs). The strides are those of
/// the arrays themselves, in elements.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct GatherLayout {
    /// The loop's extents (at least one axis; a 0-d loop is `[1]`).
    pub(crate) loop_extents: Vec<usize>,
    /// `x`'s stride along each loop axis.
    pub(crate) x_strides: Vec<isize>,
    /// The index array's stride along each loop axis.
    pub(crate) index_strides: Vec<isize>,
    /// The axes of `x` an index value addresses, in C order (at least one).
    pub(crate) index_extents: Vec<usize>,
    /// `x`'s stride along each of them.
    pub(crate) index_x_strides: Vec<isize>,
}

impl GatherLayout {
    fn loop_len(&self) -> usize {
        self.loop_extents.iter().product()
    }

    fn index_space(&self) -> usize {
        self.index_extents.iter().product()
    }

    /// The 64-bit words of the kernel's layout struct, in its field order (a negative stride
    /// as its two's complement).
    fn words(&self) -> Vec<u64> {
        let extents = |v: &Vec<usize>| v.iter().map(|&e| e as u64).collect::<Vec<_>>();
        let strides = |v: &Vec<isize>| v.iter().map(|&s| s as i64 as u64).collect::<Vec<_>>();
        [
            extents(&self.loop_extents),
            strides(&self.x_strides),
            strides(&self.index_strides),
            extents(&self.index_extents),
            strides(&self.index_x_strides),
        ]
        .concat()
    }
}

/// Which way elements move.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Direction {
    /// `out[e] = x[at(e)]`, `out` compact over the loop.
    Gather,
    /// `x[at(e)] = values[e % len]`, `values` compact.
    Scatter,
}

/// The loaded code of the family (one registry entry; code per signature and variant).
#[derive(Default)]
struct GatherKernels {
    loaded: LoadedTable,
}

/// The registry's one gather/scatter kernel object.
fn kernels() -> Result<std::sync::Arc<GatherKernels>> {
    kernel(KernelKey::Named("cuda_core_gather"), || Ok(GatherKernels::default()))
}

/// The CUDA C++ of a gather or scatter kernel (entry point `cuda_core_gather` or
/// `cuda_core_scatter`) for elements of `dtype`, indices of `index`, `loop_axes` loop axes and
/// `index_axes` index axes, indexing as `width` says.
fn source(
    direction: Direction,
    dtype: DType,
    index: DType,
    loop_axes: usize,
    index_axes: usize,
    mode: IndexMode,
    width: IndexWidth,
) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "// generated by cuda-core: {direction:?} of {dtype} by {index} indices, {loop_axes} loop and {index_axes} index axes, {mode:?}"
    );
    s.push_str(PRELUDE);
    let _ = writeln!(
        s,
        "typedef {} T;\ntypedef {} J;\n{}\
         struct Layout {{ unsigned long long extent[{loop_axes}]; unsigned long long x[{loop_axes}]; unsigned long long index[{loop_axes}];\n\
         \x20   unsigned long long index_extent[{index_axes}]; unsigned long long index_x[{index_axes}]; }};",
        dtype.c_name(),
        index.c_name(),
        width.typedefs("I", "S"),
    );
    let (name, arrays, access) = match direction {
        Direction::Gather => (
            "cuda_core_gather",
            "const T *__restrict__ x, const J *__restrict__ index, T *__restrict__ out",
            "out[e] = x[(S)xo];",
        ),
        Direction::Scatter => (
            "cuda_core_scatter",
            "T *x, const J *__restrict__ index, const T *__restrict__ values, const unsigned long long values_len",
            "x[(S)xo] = values[(unsigned long long)e % values_len];",
        ),
    };
    let normalise = match mode {
        IndexMode::Raise => {
            "if (j < 0) j += size;\n\
             \x20       if (j < 0 || j >= size) {\n\
             \x20           atomicAdd(&flags[0], 1ull);\n\
             \x20           atomicExch(&flags[1], (unsigned long long)index[(S)io]);\n\
             \x20           continue;\n\
             \x20       }"
        }
        IndexMode::Wrap => "j %= size;\n        if (j < 0) j += size;",
        IndexMode::Clip => "j = j < 0 ? 0 : (j >= size ? size - 1 : j);",
    };
    let _ = write!(
        s,
        "extern \"C\" __global__ void {name}({arrays}, unsigned long long *flags, const unsigned long long n, const Layout l) {{\n\
         \x20   const long long size = (long long)({size});\n\
         \x20   const I stride = (I)gridDim.x * blockDim.x;\n\
         \x20   for (I e = (I)blockIdx.x * blockDim.x + threadIdx.x; e < (I)n; e += stride) {{\n\
         \x20       I xo = 0, io = 0, r = e;\n\
         \x20       #pragma unroll\n\
         \x20       for (int d = {last_loop}; d >= 0; --d) {{\n\
         \x20           const I extent = (I)l.extent[d];\n\
         \x20           const I c = d == 0 ? r : r % extent;\n\
         \x20           r = d == 0 ? 0 : r / extent;\n\
         \x20           xo += c * (I)l.x[d];\n\
         \x20           io += c * (I)l.index[d];\n\
         \x20       }}\n\
         \x20       long long j = (long long)index[(S)io];\n\
         \x20       {normalise}\n\
         \x20       I g = (I)j;\n\
         \x20       #pragma unroll\n\
         \x20       for (int d = {last_index}; d >= 0; --d) {{\n\
         \x20           const I extent = (I)l.index_extent[d];\n\
         \x20           const I c = d == 0 ? g : g % extent;\n\
         \x20           g = d == 0 ? 0 : g / extent;\n\
         \x20           xo += c * (I)l.index_x[d];\n\
         \x20       }}\n\
         \x20       {access}\n\
         \x20   }}\n}}\n",
        size = (0..index_axes)
            .map(|d| format!("l.index_extent[{d}]"))
            .collect::<Vec<_>>()
            .join(" * "),
        last_loop = loop_axes - 1,
        last_index = index_axes - 1,
    );
    s
}

/// The variant key of a kernel: direction, mode, width and the two axis counts.
fn variant(direction: Direction, mode: IndexMode, width: IndexWidth, loop_axes: usize, index_axes: usize) -> u64 {
    let mode = match mode {
        IndexMode::Raise => 0,
        IndexMode::Wrap => 1,
        IndexMode::Clip => 2,
    };
    (loop_axes as u64) << 16
        | (index_axes as u64) << 8
        | mode << 3
        | width.key() << 1
        | (direction == Direction::Scatter) as u64
}

/// Checks a layout against `x` and the index array: the offsets it reaches in each stay within
/// the array's own lowest and highest elements (the in-bounds argument of the module's docs
/// rests on it), and an index space that is empty is an error unless the loop is.
fn check_layout<T: Element, J: IndexElement>(
    what: &str,
    x: &DeviceArray<T>,
    index: &DeviceArray<J>,
    layout: &GatherLayout,
) -> Result<()> {
    let axes = layout.loop_extents.len();
    let shaped = axes > 0
        && layout.x_strides.len() == axes
        && layout.index_strides.len() == axes
        && !layout.index_extents.is_empty()
        && layout.index_x_strides.len() == layout.index_extents.len();
    if !shaped {
        return Err(Error::InvalidValue(format!(
            "{what}: malformed gather layout {layout:?}"
        )));
    }
    if layout.loop_len() == 0 {
        return Ok(());
    }
    if layout.index_space() == 0 {
        return Err(Error::IndexOutOfBounds {
            index: None,
            extent: 0,
            what: format!("{what}: cannot take from or put to an empty axis"),
        });
    }
    // Here the loop and the index space are not empty, so neither are the arrays.
    let range = |extents: &[usize], strides: &[isize]| offset_range(extents, strides).unwrap_or((0, 0));
    let within = |(low, high): (i128, i128), shape: &[usize], strides: &[isize]| {
        let (own_low, own_high) = range(shape, strides);
        own_low <= low && high <= own_high
    };
    let (loop_low, loop_high) = range(&layout.loop_extents, &layout.x_strides);
    let (index_low, index_high) = range(&layout.index_extents, &layout.index_x_strides);
    let x_reach = (loop_low + index_low, loop_high + index_high);
    let index_reach = range(&layout.loop_extents, &layout.index_strides);
    if !within(x_reach, x.shape(), x.strides()) || !within(index_reach, index.shape(), index.strides()) {
        return Err(Error::InvalidValue(format!(
            "{what}: gather layout {layout:?} reaches outside x of shape {:?} or indices of shape {:?}",
            x.shape(),
            index.shape()
        )));
    }
    Ok(())
}

/// How the call indexes: 64-bit unless the loop (with the index array's strides) and `x`'s
/// own layout fit 32 bits; signed where a stride is negative.
fn index_width(x_shape: &[usize], x_strides: &[isize], layout: &GatherLayout, threads: u64) -> IndexWidth {
    let spans = [
        (&layout.loop_extents[..], &layout.index_strides[..]),
        (x_shape, x_strides),
    ];
    IndexWidth::of_spans(layout.loop_len(), threads, &spans)
}

/// Runs one gather or scatter kernel and, in [`IndexMode::Raise`], reads its flags back.
/// `arrays` are the kernel's array arguments (and the values' length), `x` of `x_shape` and
/// `x_strides` first; it runs on `stream`, and the flags of [`IndexMode::Raise`] come from
/// `pool`.
fn run<T: Element, J: IndexElement>(
    what: &str,
    direction: Direction,
    (pool, stream): (&MemoryPool, &Stream),
    arrays: &[Arg<'_>],
    (x_shape, x_strides): (&[usize], &[isize]),
    layout: &GatherLayout,
    mode: IndexMode,
) -> Result<()> {
    let n = layout.loop_len();
    let kernels = kernels()?;
    let grid = grid_for(
        n as u64,
        BLOCK,
        kernels.loaded.sm_count(stream.context())?,
        BLOCKS_PER_SM,
    );
    let width = index_width(x_shape, x_strides, layout, u64::from(grid) * u64::from(BLOCK));
    let (loop_axes, index_axes) = (layout.loop_extents.len(), layout.index_extents.len());
    let signature = [ArgType::Array(T::DTYPE), ArgType::Array(J::DTYPE)];
    let entry = match direction {
        Direction::Gather => "cuda_core_gather",
        Direction::Scatter => "cuda_core_scatter",
    };
    let key = variant(direction, mode, width, loop_axes, index_axes);
    let loaded = kernels.loaded.get_or_load(stream.context(), &signature, key, || {
        Ok((
            source(direction, T::DTYPE, J::DTYPE, loop_axes, index_axes, mode, width),
            vec![entry.to_string()],
        ))
    })?;
    if mode == IndexMode::Raise {
        // Raise reads its out-of-range count back: refused before anything is queued.
        crate::graph::refuse_host_wait(stream, "an index check of IndexMode::Raise (take, put, compress)")?;
    }
    let mut flags = match mode {
        IndexMode::Raise => Some(DeviceArray::<u64>::zeros_in(pool, stream, 2)?),
        IndexMode::Wrap | IndexMode::Clip => None,
    };
    let flag_arg = flags.as_mut().map(Arg::from);
    let words = layout.words();
    let mut launch = Launch::on(stream);
    launch.args(arrays)?;
    match &flag_arg {
        Some(flag) => launch.arg(flag)?,
        None => launch.value(0u64),
    };
    launch.value(n as u64).words(&words);
    // SAFETY: the kernel takes the arrays of `arrays` (x, index, out for a gather; x, index,
    // values and their length for a scatter), the flag array (or a null address, never used
    // outside Raise), `n` and the `Layout` struct of `words` (the five arrays of 64-bit words in
    // its field order). Every access is inside its array: `check_layout` and the callers make
    // the loop and index strides those of the arrays along axes they span, the mode brings each
    // index into the index space before use (Raise skips those outside), `out` and `index` are
    // read at offsets the loop gives, `values` below its length; the arrays are ordered on
    // `stream` and stay borrowed for the call.
    unsafe { launch.run(&loaded.functions[0], (grid, 1), (BLOCK, 1))? };
    drop(launch);
    if let Some(flags) = flags {
        let [count, index] = flags.to_vec()?[..] else {
            unreachable!("two flag words")
        };
        if count > 0 {
            return Err(Error::IndexOutOfBounds {
                index: Some(index as i64),
                extent: layout.index_space(),
                what: format!("{what}: {count} indices out of range"),
            });
        }
    }
    Ok(())
}

/// `out[e] = x[at(e)]` over the layout's loop (`out` compact, of as many elements).
pub(crate) fn gather<T: Element, J: IndexElement>(
    x: &DeviceArray<T>,
    index: &DeviceArray<J>,
    out: &mut DeviceArray<T>,
    layout: &GatherLayout,
    mode: IndexMode,
) -> Result<()> {
    check_layout("take", x, index, layout)?;
    if !out.is_contiguous() || out.len() != layout.loop_len() {
        return Err(Error::InvalidValue(format!(
            "take: the output of shape {:?} is not a compact array of the loop's {} elements",
            out.shape(),
            layout.loop_len()
        )));
    }
    if out.is_empty() {
        return Ok(());
    }
    if out.may_share_memory(x) || out.may_share_memory(index) {
        return Err(Error::InvalidValue(
            "take: the output shares memory with the array or the indices; pass another output".into(),
        ));
    }
    let (pool, stream) = (out.pool(), out.stream().clone());
    let arrays = [Arg::from(x), Arg::from(index), Arg::from(out)];
    run::<T, J>(
        "take",
        Direction::Gather,
        (&pool, &stream),
        &arrays,
        (x.shape(), x.strides()),
        layout,
        mode,
    )
}

/// `x[at(e)] = values[e % values.len()]` over the layout's loop (`values` compact, not empty).
pub(crate) fn scatter<T: Element, J: IndexElement>(
    x: &mut DeviceArray<T>,
    index: &DeviceArray<J>,
    values: &DeviceArray<T>,
    layout: &GatherLayout,
    mode: IndexMode,
) -> Result<()> {
    check_layout("put", x, index, layout)?;
    x.check_writable("put")?;
    if layout.loop_len() == 0 {
        return Ok(());
    }
    if values.is_empty() || !values.is_contiguous() {
        return Err(Error::InvalidValue(format!(
            "put: values must be a compact, non-empty array, not of shape {:?} and strides {:?}",
            values.shape(),
            values.strides()
        )));
    }
    if x.may_share_memory(values) || x.may_share_memory(index) {
        return Err(Error::InvalidValue(
            "put: the values or indices share memory with the array written; pass a copy".into(),
        ));
    }
    let (shape, strides) = (x.shape().to_vec(), x.strides().to_vec());
    let (pool, stream) = (x.pool(), x.stream().clone());
    let values_len = Arg::scalar(values.len() as u64);
    let arrays = [Arg::from(x), Arg::from(index), Arg::from(values), values_len];
    run::<T, J>(
        "put",
        Direction::Scatter,
        (&pool, &stream),
        &arrays,
        (&shape, &strides),
        layout,
        mode,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Arch, CompileTarget, Program, ProgramOptions};

    const NARROW: IndexWidth = IndexWidth {
        wide: false,
        signed: false,
    };
    const SIGNED: IndexWidth = IndexWidth {
        wide: false,
        signed: true,
    };
    const WIDE: IndexWidth = IndexWidth {
        wide: true,
        signed: true,
    };

    #[test]
    fn every_variant_compiles() {
        let options = ProgramOptions {
            cache: false,
            ..ProgramOptions::for_arch(Arch::Sm(90))
        };
        let cases = [
            (
                Direction::Gather,
                DType::F32,
                DType::I64,
                1,
                1,
                IndexMode::Raise,
                NARROW,
            ),
            (Direction::Gather, DType::F16, DType::I32, 3, 1, IndexMode::Wrap, WIDE),
            (
                Direction::Gather,
                DType::BF16,
                DType::I64,
                2,
                2,
                IndexMode::Clip,
                SIGNED,
            ),
            (Direction::Gather, DType::Bool, DType::I32, 1, 3, IndexMode::Raise, WIDE),
            (
                Direction::Scatter,
                DType::F64,
                DType::I64,
                1,
                2,
                IndexMode::Raise,
                SIGNED,
            ),
            (Direction::Scatter, DType::U8, DType::I32, 2, 1, IndexMode::Clip, SIGNED),
            (
                Direction::Scatter,
                DType::BF16,
                DType::I64,
                1,
                1,
                IndexMode::Wrap,
                NARROW,
            ),
        ];
        for (direction, dtype, index, loop_axes, index_axes, mode, width) in cases {
            let text = source(direction, dtype, index, loop_axes, index_axes, mode, width);
            if let Err(error) = Program::new(text.clone(), options.clone()).compile(CompileTarget::Ptx) {
                panic!("{direction:?} {dtype} {mode:?}: {error}\n{text}");
            }
        }
    }

    #[test]
    fn variants_differ_in_every_field() {
        let base = variant(Direction::Gather, IndexMode::Raise, NARROW, 1, 1);
        assert_ne!(base, variant(Direction::Scatter, IndexMode::Raise, NARROW, 1, 1));
        assert_ne!(base, variant(Direction::Gather, IndexMode::Wrap, NARROW, 1, 1));
        assert_ne!(
            variant(Direction::Gather, IndexMode::Wrap, NARROW, 1, 1),
            variant(Direction::Gather, IndexMode::Clip, NARROW, 1, 1)
        );
        assert_ne!(base, variant(Direction::Gather, IndexMode::Raise, WIDE, 1, 1));
        assert_ne!(base, variant(Direction::Gather, IndexMode::Raise, SIGNED, 1, 1));
        assert_ne!(
            variant(Direction::Gather, IndexMode::Clip, WIDE, 1, 1),
            variant(Direction::Gather, IndexMode::Clip, SIGNED, 1, 1)
        );
        assert_ne!(base, variant(Direction::Gather, IndexMode::Raise, NARROW, 2, 1));
        assert_ne!(base, variant(Direction::Gather, IndexMode::Raise, NARROW, 1, 2));
    }
}
