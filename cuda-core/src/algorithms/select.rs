//! Compaction: the elements (or the indices) whose flag is set, in order, in one pass (a scan of
//! the flags fused with the scatter, with decoupled look-back; see the [module above](super)).
//! Partition puts the rest after them, in reverse order. [`SelectIf`] selects by a C++
//! predicate. [`unique_sorted`] keeps the first of
//! each run of equal elements (the unique values of sorted input); [`unique_by_key`] keeps the
//! value beside each run's first key; [`run_length_encode`] also gives the runs' lengths.
//!
//! The number selected depends on the data: [`select_flagged`] leaves it on the device (no
//! host wait), [`select_flagged_count`] reads it back (one small copy and a wait for the
//! stream: the one host wait of these algorithms).
//!
//! ```no_run
//! use cuda_core::algorithms::select::select_flagged_count;
//! use cuda_core::{Device, DeviceBuffer};
//!
//! # fn main() -> cuda_core::Result<()> {
//! let device = Device::new(0)?;
//! let stream = device.create_stream()?;
//! let x = DeviceBuffer::from_slice(device.context(), &[1.0f32, 2.0, 3.0, 4.0])?;
//! let flags = DeviceBuffer::from_slice(device.context(), &[1u8, 0, 0, 1])?;
//! let mut out = DeviceBuffer::<f32>::zeroed(device.context(), 4)?;
//! let count = select_flagged_count::<f32, u8>(&stream, &x, &flags, &mut out)?;
//! assert_eq!(count, 2);
//! assert_eq!(&out.to_vec()?[..count], [1.0, 4.0]);
//! # Ok(())
//! # }
//! ```

use std::fmt::Write;
use std::sync::Arc;

use cuda_driver::{Access, DeviceMemory, DeviceMemoryMut, Stream};

use super::{disjoint, elements, tile_grid, BLOCK};
use crate::array::kernels::launch::Launch;
use crate::array::kernels::registry::{grid_for, kernel_encoded, Loaded, LoadedTable};
use crate::array::kernels::PRELUDE;
use crate::array::kernels::{Arg, ArgType};
use crate::array::{DType, Element, MemoryPool, PooledBlock};
use crate::error::{Error, Result};

/// Dimensions [`Emit::Coordinates`] unravels at most.
pub(crate) const MAX_DIMS: usize = 32;

/// What a selected element writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Emit {
    /// Its value, from a data array of this type.
    Value(DType),
    /// Its flat index, as `long long`.
    Index,
    /// Its coordinates in a C-order shape of up to [`MAX_DIMS`] axes, `ndim` `long long`s per
    /// selected element (NumPy's `argwhere`).
    Coordinates,
    /// Nothing out: the output (the data's own array, of this type) gets, at the element's
    /// index, value `rank % count` of a values array (NumPy's `place`).
    Place(DType),
    /// As `Place`, value `index % count` (NumPy's `putmask`).
    PutMask(DType),
    /// With [`Predicate::run_heads`]: each run's first value, and (every run's last element)
    /// the run's end index into an `ends` array, from which `{name}_lengths` makes the lengths.
    Runs(DType),
}

/// One parameter of a select kernel's predicate: an array read at the element's index, or a
/// scalar.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct PredParam {
    pub(crate) c_type: String,
    pub(crate) name: String,
    pub(crate) array: bool,
}

/// A predicate: its parameters, and a C++ expression of them (array parameters name the
/// element at `i`) that is true for selected elements; `prelude` is device code it uses.
#[derive(Clone, Debug)]
pub(crate) struct Predicate {
    pub(crate) params: Vec<PredParam>,
    pub(crate) value: String,
    pub(crate) prelude: String,
}

impl Predicate {
    /// Elements whose `flags` value (of `dtype`) is nonzero.
    pub(crate) fn flags(dtype: DType) -> Predicate {
        Predicate {
            params: vec![PredParam {
                c_type: dtype.c_name().to_string(),
                name: "flag".to_string(),
                array: true,
            }],
            value: "_truthy(flag)".to_string(),
            prelude: String::new(),
        }
    }
}

/// Device code of [`Predicate::run_heads`]: equality with NaN equal to NaN, as NumPy's
/// `unique` (`equal_nan`).
const SAME_PRELUDE: &str = r#"
template <typename T> __device__ __forceinline__ bool _same(const T a, const T b) { return a == b || (a != a && b != b); }
__device__ __forceinline__ bool _same(const cuda_core_f16 a, const cuda_core_f16 b) { return _same((float)a, (float)b); }
__device__ __forceinline__ bool _same(const cuda_core_bf16 a, const cuda_core_bf16 b) { return _same((float)a, (float)b); }
"#;

impl Predicate {
    /// Elements of `dtype` that start a run of equal values (the first, and each differing from
    /// the one before; NaNs equal): in sorted input, the unique values.
    pub(crate) fn run_heads(dtype: DType) -> Predicate {
        Predicate {
            params: vec![PredParam {
                c_type: dtype.c_name().to_string(),
                name: "x".to_string(),
                array: true,
            }],
            value: "i == 0 || !_same(x, _p_x[i - 1])".to_string(),
            prelude: SAME_PRELUDE.to_string(),
        }
    }
}

/// Elements each thread of a select kernel flags: sixteen independent loads in flight a thread
/// and one look-back per 4096 elements.
const SELECT_ITEMS: u32 = 16;
/// The select kernel of a selection's code.
const SELECT: usize = 1;
/// The count kernel of a counted selection's code (an index or coordinates emit).
const COUNT: usize = 2;
/// Its offsets kernel.
const OFFSETS: usize = 3;
/// Elements per tile of the select kernels.
const SELECT_TILE: u64 = (BLOCK * SELECT_ITEMS) as u64;

/// The CUDA C++ of a select kernel (`{name}_init` clears the tile counter and flags,
/// `{name}_select` selects).
pub(crate) fn select_source(name: &str, predicate: &Predicate, emit: Emit) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "// generated by cuda-core: select `{name}`");
    s.push_str(PRELUDE);
    s.push_str(SELECT_PRELUDE);
    s.push_str(&predicate.prelude);
    let _ = write!(
        s,
        "\n#define _BLOCK {BLOCK}\n#define _ITEMS {SELECT_ITEMS}\n#define _TILE (_BLOCK * _ITEMS)\n#define _WARPS (_BLOCK / 32)\n#define _MAX_DIMS {MAX_DIMS}\n"
    );
    let kernel_params: Vec<String> = predicate
        .params
        .iter()
        .map(|p| match p.array {
            true => format!("const {} *__restrict__ _p_{}", p.c_type, p.name),
            false => format!("const {} {}", p.c_type, p.name),
        })
        .collect();
    let call: Vec<String> = predicate
        .params
        .iter()
        .map(|p| match p.array {
            true => format!("_p_{}", p.name),
            false => p.name.clone(),
        })
        .collect();
    let binds: String = predicate
        .params
        .iter()
        .filter(|p| p.array)
        .map(|p| format!("    const {} &{} = _p_{}[i];\n", p.c_type, p.name, p.name))
        .collect();
    let mut pred_params = kernel_params.clone();
    pred_params.push("const unsigned long long i".to_string());
    pred_params.push("const unsigned long long n".to_string());
    let _ = write!(
        s,
        "__device__ __forceinline__ bool _pred({}) {{\n{binds}    return static_cast<bool>({});\n}}\n",
        pred_params.join(", "),
        predicate.value
    );
    let mut every = "";
    let (data_params, emit_code) = match emit {
        Emit::Runs(dtype) => {
            // Run r ends at the last element whose count of run heads up to it is r + 1.
            every = "if (e + 1 == n || !_same(_data[e + 1], _data[e])) _ends[selected_before + (flag ? 0ull : ~0ull)] = e + 1;";
            (
                format!(
                    "const {0} *__restrict__ _data, {0} *__restrict__ _out, unsigned long long *__restrict__ _ends",
                    dtype.c_name()
                ),
                "_out[pos] = _data[e];",
            )
        }
        Emit::Value(dtype) => (
            format!("const {0} *__restrict__ _data, {0} *__restrict__ _out", dtype.c_name()),
            "_out[pos] = _data[e];",
        ),
        Emit::Index => (
            "long long *__restrict__ _out".to_string(),
            "_out[pos] = (long long)e;",
        ),
        Emit::Place(dtype) => (
            format!(
                "const {0} *__restrict__ _data, const unsigned long long _nvals, {0} *__restrict__ _out",
                dtype.c_name()
            ),
            "_out[e] = _data[pos % _nvals];",
        ),
        Emit::PutMask(dtype) => (
            format!(
                "const {0} *__restrict__ _data, const unsigned long long _nvals, {0} *__restrict__ _out",
                dtype.c_name()
            ),
            "_out[e] = _data[e % _nvals];",
        ),
        Emit::Coordinates => (
            "long long *__restrict__ _out".to_string(),
            "{ unsigned long long rem = e; for (int d = (int)shape.ndim - 1; d >= 0; --d) { _out[pos * shape.ndim + d] = (long long)(rem % shape.extent[d]); rem /= shape.extent[d]; } }",
        ),
    };
    let mut params = kernel_params;
    params.push(data_params);
    params.push("unsigned long long *__restrict__ _count".to_string());
    params.push("const unsigned long long n".to_string());
    params.push("unsigned long long *__restrict__ temp".to_string());
    params.push("const int partition".to_string());
    params.push("const int counted".to_string());
    params.push("const _shape shape".to_string());
    let mut call_args = call;
    call_args.push("e".to_string());
    call_args.push("n".to_string());
    s.push_str(
        &SELECT_BODY
            .replace("NAME", name)
            .replace("PARAMS", &params.join(", "))
            .replace("PRED_ARGS", &call_args.join(", "))
            .replace("EVERY", every)
            .replace("EMIT", emit_code),
    );
    match emit {
        Emit::Runs(_) => s.push_str(&RUN_LENGTHS.replace("NAME", name)),
        Emit::Index | Emit::Coordinates => s.push_str(
            &COUNTED_TILES
                .replace("NAME", name)
                .replace("PARAMS", &params.join(", "))
                .replace("PRED_ARGS", &call_args.join(", ")),
        ),
        _ => {}
    }
    s
}

/// Device helpers of the select kernels: truthiness of every element type, the shape
/// [`Emit::Coordinates`] unravels with.
const SELECT_PRELUDE: &str = r#"
template <typename T> __device__ __forceinline__ bool _truthy(const T v) { return v != 0; }
__device__ __forceinline__ bool _truthy(const cuda_core_f16 v) { return (float)v != 0.0f; }
__device__ __forceinline__ bool _truthy(const cuda_core_bf16 v) { return (float)v != 0.0f; }
"#;

/// The select kernels after the predicate: the tile status is one 64-bit word per tile, the
/// count shifted left by 2 over the flag (0: nothing yet, 1: the tile's count, 2: the count of
/// every element up to the tile's end), so value and flag are published together.
const SELECT_BODY: &str = r#"
#define _PER_LANE (_ITEMS * _WARPS / 32)
static_assert(_ITEMS * _WARPS % 32 == 0, "the tile's counts are scanned _PER_LANE per lane of one warp");
struct _shape { unsigned long long ndim; unsigned long long extent[_MAX_DIMS]; };

extern "C" __global__ void NAME_init(unsigned long long *__restrict__ temp, const unsigned long long tiles) {
    unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    volatile unsigned long long *t = temp;
    for (; i <= tiles; i += (unsigned long long)gridDim.x * blockDim.x) t[i] = 0ull;
}

extern "C" __global__ void __launch_bounds__(_BLOCK) NAME_select(PARAMS) {
    __shared__ unsigned sh_count[_ITEMS * _WARPS];
    __shared__ unsigned long long sh_prefix;
    __shared__ unsigned long long sh_tile;
    const unsigned tid = threadIdx.x, lane = tid & 31u, warp = tid >> 5;
    if (tid == 0) sh_tile = atomicAdd(temp, 1ull);
    __syncthreads();
    const unsigned long long tile = sh_tile;
    const unsigned long long base = tile * _TILE;
    volatile unsigned long long *status = temp + 1;
    // Striped: element k * _BLOCK + tid of the tile; its rank is the count of set flags at
    // earlier k, then at earlier warps of this k, then at lower lanes.
    // Bit `lane` of mask[k]: this thread's element of item k is selected.
    unsigned mask[_ITEMS];
    #pragma unroll
    for (int k = 0; k < _ITEMS; ++k) {
        const unsigned long long e = base + (unsigned long long)k * _BLOCK + tid;
        mask[k] = __ballot_sync(0xffffffffu, e < n && _pred(PRED_ARGS));
        if (lane == 0u) sh_count[k * _WARPS + warp] = __popc(mask[k]);
    }
    __syncthreads();
    if (warp == 0) {
        // Exclusive scan of the _ITEMS * _WARPS counts (k-major), _PER_LANE consecutive ones
        // per lane.
        unsigned c[_PER_LANE];
        unsigned inc = 0u;
        #pragma unroll
        for (int j = 0; j < _PER_LANE; ++j) {
            c[j] = sh_count[_PER_LANE * lane + j];
            inc += c[j];
        }
        const unsigned own = inc;
        #pragma unroll
        for (int d = 1; d < 32; d <<= 1) {
            const unsigned o = __shfl_up_sync(0xffffffffu, inc, d);
            if (lane >= (unsigned)d) inc += o;
        }
        const unsigned total = __shfl_sync(0xffffffffu, inc, 31);
        unsigned before = inc - own;
        __syncwarp();
        #pragma unroll
        for (int j = 0; j < _PER_LANE; ++j) {
            sh_count[_PER_LANE * lane + j] = before;
            before += c[j];
        }
        // Look-back over the packed status words; counted (the offsets kernel wrote every
        // tile's inclusive count first): the word of the tile before.
        unsigned long long prefix = 0ull;
        if (counted) {
            prefix = tile == 0ull ? 0ull : status[tile - 1] >> 2;
        } else if (tile == 0ull) {
            if (lane == 0u) status[0] = ((unsigned long long)total << 2) | 2ull;
        } else {
            if (lane == 0u) status[tile] = ((unsigned long long)total << 2) | 1ull;
            long long top = (long long)tile - 1;
            while (true) {
                const long long p = top - (long long)lane;
                unsigned long long word;
                do {
                    word = p >= 0 ? status[p] : 2ull;
                } while (__any_sync(0xffffffffu, (word & 3ull) == 0ull));
                const unsigned done = __ballot_sync(0xffffffffu, (word & 3ull) == 2ull);
                const int stop = done ? __ffs(done) - 1 : 31;
                unsigned long long v = (int)lane <= stop ? (word >> 2) : 0ull;
                #pragma unroll
                for (int d = 16; d > 0; d >>= 1) v += __shfl_down_sync(0xffffffffu, v, d);
                prefix += v;
                if (done) break;
                top -= 32;
            }
            if (lane == 0u) status[tile] = ((prefix + total) << 2) | 2ull;
        }
        if (lane == 0u) {
            sh_prefix = prefix;
            if (tile * _TILE + _TILE >= n) *_count = prefix + total;
        }
    }
    __syncthreads();
    const unsigned long long prefix = sh_prefix;
    const unsigned lower = (1u << lane) - 1u;
    #pragma unroll
    for (int k = 0; k < _ITEMS; ++k) {
        const unsigned long long e = base + (unsigned long long)k * _BLOCK + tid;
        if (e >= n) continue;
        const unsigned long long selected_before = prefix + sh_count[k * _WARPS + warp] + __popc(mask[k] & lower);
        const bool flag = (mask[k] >> lane) & 1u;
        EVERY
        unsigned long long pos;
        if (flag) pos = selected_before;
        else if (partition) pos = n - 1ull - (e - selected_before);
        else continue;
        EMIT
    }
}
"#;

/// The first pass of a counted selection ([`count_tiles`]): `NAME_count` writes each tile's
/// count of selected elements to its status word (a block a tile, the select kernel's
/// parameters), `NAME_offsets` (one block) turns the words into inclusive counts with the
/// select kernel's status 2 and writes the total to the count.
const COUNTED_TILES: &str = r#"
extern "C" __global__ void __launch_bounds__(_BLOCK) NAME_count(PARAMS) {
    __shared__ unsigned sh_warp[_WARPS];
    const unsigned tid = threadIdx.x, lane = tid & 31u, warp = tid >> 5;
    const unsigned long long tile = blockIdx.x;
    const unsigned long long base = tile * _TILE;
    unsigned selected = 0u;
    #pragma unroll
    for (int k = 0; k < _ITEMS; ++k) {
        const unsigned long long e = base + (unsigned long long)k * _BLOCK + tid;
        selected += (e < n && _pred(PRED_ARGS)) ? 1u : 0u;
    }
    #pragma unroll
    for (int d = 16; d > 0; d >>= 1) selected += __shfl_down_sync(0xffffffffu, selected, d);
    if (lane == 0u) sh_warp[warp] = selected;
    __syncthreads();
    if (tid == 0u) {
        unsigned long long total = 0ull;
        for (int w = 0; w < _WARPS; ++w) total += sh_warp[w];
        temp[1 + tile] = total;
    }
}

#define _OFFSETS_ITEMS 16
extern "C" __global__ void __launch_bounds__(_BLOCK) NAME_offsets(unsigned long long *__restrict__ temp,
        const unsigned long long tiles, unsigned long long *__restrict__ _count) {
    __shared__ unsigned long long sh_warp[_WARPS];
    __shared__ unsigned long long sh_carry;
    unsigned long long *status = temp + 1;
    const unsigned tid = threadIdx.x, lane = tid & 31u, warp = tid >> 5;
    if (tid == 0u) sh_carry = 0ull;
    __syncthreads();
    for (unsigned long long base = 0ull; base < tiles; base += (unsigned long long)_BLOCK * _OFFSETS_ITEMS) {
        const unsigned long long first = base + (unsigned long long)tid * _OFFSETS_ITEMS;
        unsigned long long v[_OFFSETS_ITEMS];
        unsigned long long own = 0ull;
        #pragma unroll
        for (int j = 0; j < _OFFSETS_ITEMS; ++j) {
            v[j] = first + j < tiles ? status[first + j] : 0ull;
            own += v[j];
        }
        unsigned long long inc = own;
        #pragma unroll
        for (int d = 1; d < 32; d <<= 1) {
            const unsigned long long o = __shfl_up_sync(0xffffffffu, inc, d);
            if (lane >= (unsigned)d) inc += o;
        }
        if (lane == 31u) sh_warp[warp] = inc;
        __syncthreads();
        unsigned long long before = sh_carry;
        for (unsigned w = 0; w < warp; ++w) before += sh_warp[w];
        before += inc - own;
        #pragma unroll
        for (int j = 0; j < _OFFSETS_ITEMS; ++j) {
            before += v[j];
            if (first + j < tiles) status[first + j] = (before << 2) | 2ull;
        }
        __syncthreads();
        if (tid == _BLOCK - 1) sh_carry = before;
        __syncthreads();
    }
    if (tid == 0u) *_count = sh_carry;
}
"#;

/// The run lengths from the run ends that [`Emit::Runs`] wrote, once the count is known on the
/// device.
const RUN_LENGTHS: &str = r#"
extern "C" __global__ void NAME_lengths(const unsigned long long *__restrict__ ends, const unsigned long long *__restrict__ count,
        unsigned long long *__restrict__ lengths) {
    const unsigned long long runs = *count;
    for (unsigned long long k = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; k < runs;
         k += (unsigned long long)gridDim.x * blockDim.x)
        lengths[k] = ends[k] - (k ? ends[k - 1] : 0ull);
}
"#;

/// A select kernel's code, loaded per context and signature.
struct SelectKernel {
    loaded: LoadedTable,
}

/// How a select launch reads its predicate's arguments and writes its output.
pub(crate) struct SelectCall<'a> {
    /// The predicate's arguments, in order.
    pub(crate) pred: PredArgs<'a>,
    /// The data's address (for [`Emit::Value`]), or the values' (for [`Emit::Place`] and
    /// [`Emit::PutMask`]).
    pub(crate) data: Option<u64>,
    /// The number of values (for [`Emit::Place`] and [`Emit::PutMask`]; at least 1).
    pub(crate) values_len: Option<u64>,
    /// Where the output goes.
    pub(crate) out: u64,
    /// Where the run ends go (for [`Emit::Runs`]: room for `n`).
    pub(crate) ends: Option<u64>,
    /// Where the count goes (one `u64`).
    pub(crate) count: u64,
    pub(crate) n: u64,
    pub(crate) partition: bool,
    /// The shape [`Emit::Coordinates`] unravels with (empty otherwise).
    pub(crate) shape: &'a [usize],
}

/// The arguments of a select kernel's predicate.
pub(crate) enum PredArgs<'a> {
    /// Device addresses of arrays of `n` elements (their uses begun by the caller).
    Addresses(&'a [u64]),
    /// Arguments of generated code (arrays and scalars).
    Args(&'a [Arg<'a>]),
}

/// Loads (once per context and signature) the select kernel `name` of `predicate` and `emit`,
/// which `key` identifies among the family's kernels.
pub(crate) fn load_select(
    stream: &Stream,
    key: &[u32],
    signature: &[ArgType],
    name: &str,
    predicate: &dyn Fn() -> Predicate,
    emit: Emit,
) -> Result<Arc<Loaded>> {
    let kernel: Arc<SelectKernel> = kernel_encoded("select", key, || {
        Ok(SelectKernel {
            loaded: LoadedTable::default(),
        })
    })?;
    load_in(&kernel.loaded, stream, signature, name, predicate, emit)
}

/// Loads (once per context and signature) the select kernel `name` of `predicate` and `emit`
/// into `table`.
fn load_in(
    table: &LoadedTable,
    stream: &Stream,
    signature: &[ArgType],
    name: &str,
    predicate: &dyn Fn() -> Predicate,
    emit: Emit,
) -> Result<Arc<Loaded>> {
    table.get_or_load(stream.context(), signature, 0, || {
        let source = select_source(name, &predicate(), emit);
        let mut names = vec![format!("{name}_init"), format!("{name}_select")];
        match emit {
            Emit::Runs(_) => names.push(format!("{name}_lengths")),
            Emit::Index | Emit::Coordinates => {
                names.extend([format!("{name}_count"), format!("{name}_offsets")]);
            }
            _ => {}
        }
        Ok((source, names))
    })
}

/// A selection by a predicate written in C++, as [`ElementwiseKernel`](crate::ElementwiseKernel)'s
/// operations are: a `bool` expression of `x` (the element) and `i` (its index, `unsigned long
/// long`). The elements it holds for go to the start of the output, in order (and with
/// partition, the others after them in reverse order); the count is left on the device or
/// read back.
///
/// ```no_run
/// use cuda_core::algorithms::select::SelectIf;
/// use cuda_core::{Device, DeviceBuffer};
///
/// # fn main() -> cuda_core::Result<()> {
/// let device = Device::new(0)?;
/// let stream = device.create_stream()?;
/// let odd = SelectIf::new("odd", "(x & 1) != 0")?;
/// let x = DeviceBuffer::from_slice(device.context(), &[1i32, 2, 3, 4, 5])?;
/// let mut out = DeviceBuffer::<i32>::zeroed(device.context(), 5)?;
/// // SAFETY: the predicate only computes with `x`.
/// let count = unsafe { odd.select_count::<i32>(&stream, &x, &mut out)? };
/// assert_eq!(&out.to_vec()?[..count], [1, 3, 5]);
/// # Ok(())
/// # }
/// ```
pub struct SelectIf {
    name: String,
    predicate: String,
    prelude: String,
    loaded: LoadedTable,
}

impl SelectIf {
    /// A selection named `name` (a C identifier) by the C++ `bool` expression `predicate` of `x`
    /// and `i`.
    pub fn new(name: &str, predicate: &str) -> Result<Self> {
        if !crate::array::kernels::params::is_identifier(name) {
            return Err(Error::InvalidValue(format!(
                "select predicate `{name}`: the name must be a C identifier"
            )));
        }
        Ok(SelectIf {
            name: name.to_string(),
            predicate: predicate.to_string(),
            prelude: String::new(),
            loaded: LoadedTable::default(),
        })
    }

    /// This selection with device code (helper functions, constants) its predicate may use.
    pub fn with_prelude(mut self, prelude: &str) -> Self {
        self.prelude = prelude.to_string();
        self
    }

    fn predicate(&self, dtype: DType) -> Predicate {
        Predicate {
            params: vec![PredParam {
                c_type: dtype.c_name().to_string(),
                name: "x".to_string(),
                array: true,
            }],
            value: self.predicate.clone(),
            prelude: self.prelude.clone(),
        }
    }

    /// The CUDA C++ generated for elements of `dtype`.
    pub fn source_for(&self, dtype: DType) -> String {
        select_source(
            &format!("select_{}", self.name),
            &self.predicate(dtype),
            Emit::Value(dtype),
        )
    }

    /// Copies the elements of `input` the predicate holds for to the start of `output` (at
    /// least as many elements), in order, and their number to `count` (one `u64` on the
    /// device), on `stream`: one pass, no host wait. With `partition`, the other elements
    /// fill the rest of `output` in reverse order.
    ///
    /// # Safety
    /// The predicate (and the prelude) is device code the crate cannot check: it must only
    /// compute with `x` and `i` (no memory access through addresses, no shared state, no
    /// undefined behaviour).
    pub unsafe fn select<T: Element>(
        &self,
        stream: &Stream,
        input: &impl DeviceMemory,
        output: &mut impl DeviceMemoryMut,
        count: &mut impl DeviceMemoryMut,
        partition: bool,
    ) -> Result<()> {
        let n = elements::<T>("select input", input, stream)?;
        let capacity = elements::<T>("select output", output, stream)?;
        if capacity < n {
            return Err(Error::InvalidValue(format!(
                "select: the output holds {capacity} elements, the input {n}"
            )));
        }
        if elements::<u64>("select count", count, stream)? < 1 {
            return Err(Error::InvalidValue("select: the count needs room for one u64".into()));
        }
        disjoint("select", input, output)?;
        disjoint("select count", input, count)?;
        disjoint("select count", output, count)?;
        let signature = [ArgType::Array(T::DTYPE), ArgType::Array(T::DTYPE)];
        let name = format!("select_{}", self.name);
        let loaded = load_in(
            &self.loaded,
            stream,
            &signature,
            &name,
            &|| self.predicate(T::DTYPE),
            Emit::Value(T::DTYPE),
        )?;
        let _input_use = input.begin_use(stream, Access::Read)?;
        let _output_use = output.begin_use(stream, Access::Write)?;
        let _count_use = count.begin_use(stream, Access::Write)?;
        let call = SelectCall {
            pred: PredArgs::Addresses(&[input.device_ptr()]),
            data: Some(input.device_ptr()),
            values_len: None,
            out: output.device_ptr(),
            ends: None,
            count: count.device_ptr(),
            n: n as u64,
            partition,
            shape: &[],
        };
        // SAFETY: the predicate reads `input` at `i` below `n` and computes with it (the
        // caller's promise); sizes, disjointness and uses on `stream` are checked and begun
        // above.
        unsafe { launch_select(&loaded, stream, &call) }
    }

    /// [`select`](Self::select) (without partition) that reads the count back: the number of
    /// elements at the start of `output`. Waits for `stream` to reach the count.
    ///
    /// # Safety
    /// As for [`select`](Self::select).
    pub unsafe fn select_count<T: Element>(
        &self,
        stream: &Stream,
        input: &impl DeviceMemory,
        output: &mut impl DeviceMemoryMut,
    ) -> Result<usize> {
        let mut count = crate::DeviceArray::<u64>::empty(stream, 1)?;
        // SAFETY: the caller's promise, passed on.
        unsafe { self.select::<T>(stream, input, output, &mut count, false)? };
        read_count(&count, input.byte_len() / std::mem::size_of::<T>())
    }
}

impl std::fmt::Debug for SelectIf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SelectIf").field("name", &self.name).finish()
    }
}

/// Launches a loaded select kernel.
///
/// (With [`Emit::Place`] and [`Emit::PutMask`] the output is the array of `n` elements written
/// at the selected indices, `data` the values, and `partition` must be off.)
///
/// # Safety
/// The kernel's predicate reads only its parameters' elements at the indices below `call.n`
/// (arrays) and values (scalars); `call`'s addresses match the kernel's parameters: arrays of
/// `n` elements of their types, the output room for every element it may write (`n` values or
/// indices, `n * ndim` coordinates), the count one `u64`; all usable in `stream`'s order and
/// the outputs overlapping nothing the kernel reads.
pub(crate) unsafe fn launch_select<'a>(loaded: &Loaded, stream: &Stream, call: &SelectCall<'a>) -> Result<()> {
    let status = TileStatus::cleared(loaded, stream, call)?;
    // SAFETY: the caller's guarantee, the status words cleared.
    unsafe { run_entry(loaded, stream, call, &status, (SELECT, false)) }
}

/// The status words of a selection's tiles: a tile counter, then a word per tile (pool memory,
/// given back in the stream's order when dropped).
pub(crate) struct TileStatus {
    words: PooledBlock,
    tiles: u64,
}

impl TileStatus {
    /// The status words of `call`'s tiles, cleared on `stream` by `loaded`'s `_init` kernel.
    fn cleared(loaded: &Loaded, stream: &Stream, call: &SelectCall<'_>) -> Result<TileStatus> {
        if call.shape.len() > MAX_DIMS {
            return Err(Error::InvalidValue(format!(
                "select: {} dimensions, at most {MAX_DIMS} are supported",
                call.shape.len()
            )));
        }
        let tiles = call.n.div_ceil(SELECT_TILE).max(1);
        let bytes = tiles
            .checked_add(1)
            .and_then(|w| w.checked_mul(8))
            .and_then(|b| usize::try_from(b).ok())
            .ok_or_else(|| Error::InvalidValue("select: too many tiles".into()))?;
        let words = MemoryPool::for_context(stream.context()).alloc(stream, bytes)?;
        let mut clear = Launch::on(stream);
        clear.value(words.ptr()).value(tiles);
        // SAFETY: `_init` takes the temporary storage's address and the tile count and writes the
        // counter and `tiles` status words: `tiles + 1` words, the block's size.
        unsafe {
            clear.run(
                &loaded.functions[0],
                (grid_for(tiles + 1, BLOCK, loaded.sm_count, 4), 1),
                (BLOCK, 1),
            )?
        };
        Ok(TileStatus { words, tiles })
    }
}

/// Queues entry `entry` of `loaded` (the select kernel, or the count kernel of the same
/// parameters), one block a tile.
///
/// # Safety
/// As [`launch_select`]; `status` was made for `call`.
unsafe fn run_entry(
    loaded: &Loaded,
    stream: &Stream,
    call: &SelectCall<'_>,
    status: &TileStatus,
    (entry, counted): (usize, bool),
) -> Result<()> {
    let grid = tile_grid(status.tiles)?;
    let mut shape = [0u64; MAX_DIMS + 1];
    shape[0] = call.shape.len() as u64;
    for (slot, &extent) in shape[1..].iter_mut().zip(call.shape) {
        *slot = extent as u64;
    }
    let mut pass = Launch::on(stream);
    match call.pred {
        PredArgs::Addresses(addresses) => {
            for &address in addresses {
                pass.value(address);
            }
        }
        PredArgs::Args(args) => {
            pass.args(args)?;
        }
    }
    if let Some(data) = call.data {
        pass.value(data);
    }
    if let Some(count) = call.values_len {
        if count == 0 {
            return Err(Error::InvalidValue("select: no values to place".into()));
        }
        pass.value(count);
    }
    pass.value(call.out);
    if let Some(ends) = call.ends {
        pass.value(ends);
    }
    pass.value(call.count)
        .value(call.n)
        .value(status.words.ptr())
        .value(i32::from(call.partition))
        .value(i32::from(counted))
        .words(&shape);
    // SAFETY: `_select` (and `_count`) take the predicate's parameters, the data (for values),
    // the output, the count, `n`, the temporary storage, the partition and counted switches and
    // the shape, in this order (8-byte values each but the switches; the shape a struct of
    // `MAX_DIMS + 1` words); each block reads its tile's elements below `n`. `_select` writes
    // selected elements at their ranks (below the count, at most `n`) and, partitioning, the
    // others from `n - 1` down, and the last tile writes the count; counted, each tile reads
    // the status word the offsets kernel wrote before it. `_count` writes its tile's status
    // word only. The caller's guarantee covers the memory.
    unsafe { pass.run(&loaded.functions[entry], (grid, 1), (BLOCK, 1))? };
    Ok(())
}

/// Queues the first pass of a counted selection of `call` (its kernel from an index or
/// coordinates emit): each tile's count, then their running sums and the total, written to
/// `call.count`. Its output is not written (it may be null): the caller reads the count back,
/// makes the output of exactly that size and queues [`select_counted`], which takes each
/// tile's offset from its word instead of looking back. The input is read twice, a narrow one
/// (flags against 8-byte indices out) cheaply: `flatnonzero` of 2^26 `u8` at half density
/// took the time of the one-pass form on an H100 (1.01x its rate) with half its output memory.
///
/// # Safety
/// As [`launch_select`], but for the output.
pub(crate) unsafe fn count_tiles(loaded: &Loaded, stream: &Stream, call: &SelectCall<'_>) -> Result<TileStatus> {
    let status = TileStatus::cleared(loaded, stream, call)?;
    // SAFETY: the count kernel reads what the select kernel would and writes the status words
    // only; the caller's guarantee covers its reads.
    unsafe { run_entry(loaded, stream, call, &status, (COUNT, false))? };
    let mut offsets = Launch::on(stream);
    offsets.value(status.words.ptr()).value(status.tiles).value(call.count);
    // SAFETY: `_offsets(temp, tiles, count)` (one block) rewrites the `tiles` status words after
    // the counter in place and writes the one `u64` of `call.count`.
    unsafe { offsets.run(&loaded.functions[OFFSETS], (1, 1), (BLOCK, 1))? };
    Ok(status)
}

/// Queues the second pass of a counted selection: the select kernel over the tiles
/// [`count_tiles`] counted for the same `call`, whose output now has room for the count.
///
/// # Safety
/// As [`launch_select`] with an output of room for the count it read back; `status` came from
/// [`count_tiles`] of the same call (but for its output), queued before on `stream`.
pub(crate) unsafe fn select_counted(
    loaded: &Loaded,
    stream: &Stream,
    call: &SelectCall<'_>,
    status: TileStatus,
) -> Result<()> {
    // SAFETY: the caller's guarantee; the counted kernel reads the status words the offsets
    // kernel wrote.
    unsafe { run_entry(loaded, stream, call, &status, (SELECT, true)) }
}

/// Copies the elements of `input` whose flag is nonzero to the start of `output`, in order, and
/// writes their number to `count` (one `u64` on the device), on `stream`: one pass, no host
/// wait. With `partition`, the other elements fill the rest of `output` in reverse order (CUB's
/// partition). `flags` holds one value of `F` per element; `output` at least as many elements
/// as `input`.
pub fn select_flagged<T: Element, F: Element>(
    stream: &Stream,
    input: &impl DeviceMemory,
    flags: &impl DeviceMemory,
    output: &mut impl DeviceMemoryMut,
    count: &mut impl DeviceMemoryMut,
    partition: bool,
) -> Result<()> {
    let n = elements::<T>("select input", input, stream)?;
    let flag_count = elements::<F>("select flags", flags, stream)?;
    let capacity = elements::<T>("select output", output, stream)?;
    if flag_count != n {
        return Err(Error::InvalidValue(format!(
            "select: {flag_count} flags for {n} elements"
        )));
    }
    if capacity < n {
        return Err(Error::InvalidValue(format!(
            "select: the output holds {capacity} elements, the input {n}"
        )));
    }
    if elements::<u64>("select count", count, stream)? < 1 {
        return Err(Error::InvalidValue("select: the count needs room for one u64".into()));
    }
    disjoint("select", input, output)?;
    disjoint("select", flags, output)?;
    disjoint("select count", input, count)?;
    disjoint("select count", flags, count)?;
    disjoint("select count", output, count)?;
    let signature = [ArgType::Array(F::DTYPE), ArgType::Array(T::DTYPE)];
    let loaded = load_select(
        stream,
        &[0],
        &signature,
        "select_flagged",
        &|| Predicate::flags(F::DTYPE),
        Emit::Value(T::DTYPE),
    )?;
    let _input_use = input.begin_use(stream, Access::Read)?;
    let _flags_use = flags.begin_use(stream, Access::Read)?;
    let _output_use = output.begin_use(stream, Access::Write)?;
    let _count_use = count.begin_use(stream, Access::Write)?;
    let call = SelectCall {
        pred: PredArgs::Addresses(&[flags.device_ptr()]),
        data: Some(input.device_ptr()),
        values_len: None,
        out: output.device_ptr(),
        ends: None,
        count: count.device_ptr(),
        n: n as u64,
        partition,
        shape: &[],
    };
    // SAFETY: the flag predicate reads `flags` at indices below `n`; the sizes, disjointness and
    // uses on `stream` are checked and begun above.
    unsafe { launch_select(&loaded, stream, &call) }
}

/// Copies the first element of each run of equal elements of `input` (NaNs equal, as NumPy's
/// `unique`) to the start of `output`, in order, and writes their number to `count` (one `u64`
/// on the device), on `stream`: for sorted input, its unique values (CUB's `Unique`). One pass,
/// no host wait. `output` holds at least as many elements as `input`.
pub fn unique_sorted<T: Element>(
    stream: &Stream,
    input: &impl DeviceMemory,
    output: &mut impl DeviceMemoryMut,
    count: &mut impl DeviceMemoryMut,
) -> Result<()> {
    let n = elements::<T>("unique input", input, stream)?;
    let capacity = elements::<T>("unique output", output, stream)?;
    if capacity < n {
        return Err(Error::InvalidValue(format!(
            "unique: the output holds {capacity} elements, the input {n}"
        )));
    }
    if elements::<u64>("unique count", count, stream)? < 1 {
        return Err(Error::InvalidValue("unique: the count needs room for one u64".into()));
    }
    disjoint("unique", input, output)?;
    disjoint("unique count", input, count)?;
    disjoint("unique count", output, count)?;
    let signature = [ArgType::Array(T::DTYPE), ArgType::Array(T::DTYPE)];
    let loaded = load_select(
        stream,
        &[UNIQUE_KEY],
        &signature,
        "unique_sorted",
        &|| Predicate::run_heads(T::DTYPE),
        Emit::Value(T::DTYPE),
    )?;
    let _input_use = input.begin_use(stream, Access::Read)?;
    let _output_use = output.begin_use(stream, Access::Write)?;
    let _count_use = count.begin_use(stream, Access::Write)?;
    let call = SelectCall {
        pred: PredArgs::Addresses(&[input.device_ptr()]),
        data: Some(input.device_ptr()),
        values_len: None,
        out: output.device_ptr(),
        ends: None,
        count: count.device_ptr(),
        n: n as u64,
        partition: false,
        shape: &[],
    };
    // SAFETY: the run-head predicate reads `input` at `i` and `i - 1` (for `i` > 0), below `n`;
    // the sizes, disjointness and uses on `stream` are checked and begun above.
    unsafe { launch_select(&loaded, stream, &call) }
}

/// [`unique_sorted`] that reads the count back: the number of values at the start of `output`.
/// Waits for `stream` to reach the count.
pub fn unique_sorted_count<T: Element>(
    stream: &Stream,
    input: &impl DeviceMemory,
    output: &mut impl DeviceMemoryMut,
) -> Result<usize> {
    let mut count = crate::DeviceArray::<u64>::empty(stream, 1)?;
    unique_sorted::<T>(stream, input, output, &mut count)?;
    read_count(&count, input.byte_len() / std::mem::size_of::<T>())
}

/// Unique by key (CUB's `UniqueByKey`, `cuda.compute.unique_by_key`): the first key of each
/// run of equal keys (NaNs equal, as [`unique_sorted`]) to the start of `unique_keys`, the value
/// at the same place to the start of `unique_values`, and the number of runs to `count` (one
/// `u64` on the device), on `stream`: two passes over the keys, no host wait. `values` holds one
/// `V` per key; `unique_keys` and `unique_values` room for every key.
pub fn unique_by_key<K: Element, V: Element>(
    stream: &Stream,
    (keys, values): (&impl DeviceMemory, &impl DeviceMemory),
    (unique_keys, unique_values): (&mut impl DeviceMemoryMut, &mut impl DeviceMemoryMut),
    count: &mut impl DeviceMemoryMut,
) -> Result<()> {
    let n = elements::<K>("unique_by_key keys", keys, stream)?;
    let value_count = elements::<V>("unique_by_key values", values, stream)?;
    if value_count != n {
        return Err(Error::InvalidValue(format!(
            "unique_by_key: {value_count} values for {n} keys"
        )));
    }
    let value_room = elements::<V>("unique_by_key value output", unique_values, stream)?;
    if value_room < n {
        return Err(Error::InvalidValue(format!(
            "unique_by_key: the value output holds {value_room} elements, the input {n}"
        )));
    }
    disjoint("unique_by_key", keys, unique_values)?;
    disjoint("unique_by_key", values, unique_values)?;
    disjoint("unique_by_key", unique_keys, unique_values)?;
    disjoint("unique_by_key", count, unique_values)?;
    disjoint("unique_by_key", values, unique_keys)?;
    disjoint("unique_by_key", values, count)?;
    // The keys (and the count, and the other checks) as `unique_sorted`.
    unique_sorted::<K>(stream, keys, unique_keys, count)?;
    let signature = [ArgType::Array(K::DTYPE), ArgType::Array(V::DTYPE)];
    let loaded = load_select(
        stream,
        &[UNIQUE_BY_KEY_KEY],
        &signature,
        "unique_by_key",
        &|| Predicate::run_heads(K::DTYPE),
        Emit::Value(V::DTYPE),
    )?;
    let _keys_use = keys.begin_use(stream, Access::Read)?;
    let _values_use = values.begin_use(stream, Access::Read)?;
    let _out_use = unique_values.begin_use(stream, Access::Write)?;
    let _count_use = count.begin_use(stream, Access::Write)?;
    let call = SelectCall {
        pred: PredArgs::Addresses(&[keys.device_ptr()]),
        data: Some(values.device_ptr()),
        values_len: None,
        out: unique_values.device_ptr(),
        ends: None,
        count: count.device_ptr(),
        n: n as u64,
        partition: false,
        shape: &[],
    };
    // SAFETY: the run-head predicate reads `keys` at `i` and `i - 1` (for `i` > 0), below `n`;
    // the values are read at selected indices below `n` and written at ranks below `n`; sizes,
    // disjointness and uses on `stream` are checked and begun above.
    unsafe { launch_select(&loaded, stream, &call) }
}

/// Run-length encoding (CUB's `RunLengthEncode::Encode`): the first value of each run of equal
/// elements of `input` (NaNs equal) to the start of `unique`, each run's length to the start of
/// `lengths`, and the number of runs to `count` (one `u64` on the device), on `stream`: one
/// pass plus a pass over the runs, no host wait. `unique` and `lengths` hold at least as many
/// elements as `input`.
pub fn run_length_encode<T: Element>(
    stream: &Stream,
    input: &impl DeviceMemory,
    unique: &mut impl DeviceMemoryMut,
    lengths: &mut impl DeviceMemoryMut,
    count: &mut impl DeviceMemoryMut,
) -> Result<()> {
    let n = elements::<T>("run-length input", input, stream)?;
    let room = elements::<T>("run-length values", unique, stream)?;
    let length_room = elements::<u64>("run-length lengths", lengths, stream)?;
    if room < n || length_room < n {
        return Err(Error::InvalidValue(format!(
            "run-length encode: the outputs hold {room} values and {length_room} lengths, the input {n} elements"
        )));
    }
    if elements::<u64>("run-length count", count, stream)? < 1 {
        return Err(Error::InvalidValue(
            "run-length encode: the count needs room for one u64".into(),
        ));
    }
    disjoint("run-length encode", input, unique)?;
    disjoint("run-length encode", input, lengths)?;
    disjoint("run-length encode", unique, lengths)?;
    disjoint("run-length count", input, count)?;
    disjoint("run-length count", unique, count)?;
    disjoint("run-length count", lengths, count)?;
    let signature = [ArgType::Array(T::DTYPE), ArgType::Array(T::DTYPE)];
    let loaded = load_select(
        stream,
        &[RUNS_KEY],
        &signature,
        "run_length",
        &|| Predicate::run_heads(T::DTYPE),
        Emit::Runs(T::DTYPE),
    )?;
    let ends_bytes = n
        .max(1)
        .checked_mul(8)
        .ok_or_else(|| Error::InvalidValue("run-length encode: too many elements".into()))?;
    let ends = MemoryPool::for_context(stream.context()).alloc(stream, ends_bytes)?;
    let _input_use = input.begin_use(stream, Access::Read)?;
    let _unique_use = unique.begin_use(stream, Access::Write)?;
    let _lengths_use = lengths.begin_use(stream, Access::Write)?;
    let _count_use = count.begin_use(stream, Access::Write)?;
    let call = SelectCall {
        pred: PredArgs::Addresses(&[input.device_ptr()]),
        data: Some(input.device_ptr()),
        values_len: None,
        out: unique.device_ptr(),
        ends: Some(ends.ptr()),
        count: count.device_ptr(),
        n: n as u64,
        partition: false,
        shape: &[],
    };
    // SAFETY: the run-head predicate and the run ends read `input` at `i - 1`, `i` and `i + 1`
    // within `0..n`; `unique` takes one value per run, `ends` (a pool block of `n` u64) one end
    // per run; sizes, disjointness and uses on `stream` are checked and begun above.
    unsafe { launch_select(&loaded, stream, &call)? };
    let mut finish = Launch::on(stream);
    finish
        .value(ends.ptr())
        .value(count.device_ptr())
        .value(lengths.device_ptr());
    // SAFETY: `_lengths` takes the ends, the count and the lengths, in this order; it reads the
    // count the select kernel wrote before it on `stream` (at most `n`) and as many ends, and
    // writes as many lengths (room for `n`, checked).
    unsafe {
        finish.run(
            &loaded.functions[2],
            (grid_for(n as u64, BLOCK, loaded.sm_count, 4), 1),
            (BLOCK, 1),
        )?
    };
    // Back to the pool in `stream`'s order, after both kernels.
    drop(ends);
    Ok(())
}

/// [`run_length_encode`] that reads the number of runs back (one small copy and a wait for
/// `stream`).
pub fn run_length_encode_count<T: Element>(
    stream: &Stream,
    input: &impl DeviceMemory,
    unique: &mut impl DeviceMemoryMut,
    lengths: &mut impl DeviceMemoryMut,
) -> Result<usize> {
    let mut count = crate::DeviceArray::<u64>::empty(stream, 1)?;
    run_length_encode::<T>(stream, input, unique, lengths, &mut count)?;
    read_count(&count, input.byte_len() / std::mem::size_of::<T>())
}

/// The registry key of [`run_length_encode`]'s kernels.
pub(crate) const RUNS_KEY: u32 = 101;

/// The registry key of [`unique_by_key`]'s value pass.
const UNIQUE_BY_KEY_KEY: u32 = 102;

/// The registry key of [`unique_sorted`]'s kernel (0 is [`select_flagged`]'s; the array
/// routines use small numbers above).
const UNIQUE_KEY: u32 = 100;

/// [`select_flagged`] (without partition) that reads the count back: the number of elements
/// at the start of `output`. Waits for `stream` to reach the count.
pub fn select_flagged_count<T: Element, F: Element>(
    stream: &Stream,
    input: &impl DeviceMemory,
    flags: &impl DeviceMemory,
    output: &mut impl DeviceMemoryMut,
) -> Result<usize> {
    let mut count = crate::DeviceArray::<u64>::empty(stream, 1)?;
    select_flagged::<T, F>(stream, input, flags, output, &mut count, false)?;
    read_count(&count, input.byte_len() / std::mem::size_of::<T>())
}

/// The count a select kernel wrote (one `u64`), read back to the host. A count above `most`
/// (the number of candidates: what a failed kernel or corrupted memory would leave) is
/// [`Error::InvalidValue`], so no caller sizes a view past its output by it. The `_count`
/// functions leave their count uninitialised (every select launch writes it, empty input
/// included), so one that no kernel wrote is refused too rather than read as zero.
pub(crate) fn read_count(count: &crate::DeviceArray<u64>, most: usize) -> Result<usize> {
    crate::graph::refuse_host_wait(count.stream(), crate::graph::COUNTED_SELECTION)?;
    let value = count.to_vec()?[0];
    match usize::try_from(value) {
        Ok(selected) if selected <= most => Ok(selected),
        _ => Err(Error::InvalidValue(format!(
            "select: the device reported {value} selected of {most} elements (a failed kernel or corrupted memory)"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sources_name_their_entry_points_and_emit_forms() {
        let source = select_source("s", &Predicate::flags(DType::Bool), Emit::Value(DType::F32));
        assert!(source.contains("void s_init(") && source.contains(" s_select("));
        assert!(source.contains("const bool *__restrict__ _p_flag, const float *__restrict__ _data"));
        let coordinates = select_source("c", &Predicate::flags(DType::F16), Emit::Coordinates);
        assert!(coordinates.contains("rem % shape.extent[d]"));
        assert!(!coordinates.contains("PRED_ARGS") && !coordinates.contains("EMIT"));
        // Indices and coordinates are counted first: their code has the counting pass.
        assert!(coordinates.contains(" c_count(") && coordinates.contains(" c_offsets("));
        let index = select_source("i", &Predicate::flags(DType::U8), Emit::Index);
        assert!(index.contains(" i_count(") && index.contains(" i_offsets("));
        assert!(!source.contains("s_count(") && !source.contains("s_offsets("));
    }
}
