//! Inclusive and exclusive scans (prefix sums, products, minima, maxima, or a C++ operator), of
//! a whole buffer, of consecutive segments of one length (the rows of a matrix), or by runs of
//! equal keys ([`scan_by_key`]), in one pass with decoupled look-back (see the
//! [module above](super)).
//!
//! ```no_run
//! use cuda_core::algorithms::scan::{scan, ScanKind, ScanOp};
//! use cuda_core::{Device, DeviceBuffer};
//!
//! # fn main() -> cuda_core::Result<()> {
//! let device = Device::new(0)?;
//! let stream = device.create_stream()?;
//! let x = DeviceBuffer::from_slice(device.context(), &[1i32, 2, 3, 4])?;
//! let mut out = DeviceBuffer::<i64>::zeroed(device.context(), 4)?;
//! scan::<i32, i64>(&stream, &x, &mut out, ScanOp::Sum, ScanKind::Inclusive, None)?;
//! stream.synchronize()?;
//! assert_eq!(out.to_vec()?, [1, 3, 6, 10]);
//! # Ok(())
//! # }
//! ```
//!
//! Values are combined in the output type's arithmetic type (`float` for `f16` and `bf16`), in
//! a tree order within each tile: floating-point sums may differ from a sequential sum in the
//! last bits.

use std::fmt::Write;
use std::sync::Arc;

use cuda_driver::{Access, DeviceMemory, DeviceMemoryMut, Stream};

use super::{disjoint, elements, real_elements, tile_grid, UserOperator, BLOCK};
use crate::array::kernels::launch::Launch;
use crate::array::kernels::registry::{grid_for, kernel_encoded, Loaded, LoadedTable};
use crate::array::kernels::PRELUDE;
use crate::array::kernels::{Arg, ArgType};
use crate::array::{DType, Element, MemoryPool};
use crate::error::{Error, Result};

/// The built-in combining operations.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ScanOp {
    /// `a + b` (identity 0).
    Sum,
    /// `a * b` (identity 1).
    Prod,
    /// The smaller value; NaN propagates (identity: the type's highest value, `inf` for floats).
    Min,
    /// The larger value; NaN propagates (identity: the type's lowest value, `-inf` for floats).
    Max,
}

/// Whether element `i` of the output includes input `i`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ScanKind<T> {
    /// `out[i] = x[0] ⊕ ... ⊕ x[i]` (within the segment).
    Inclusive,
    /// `out[i] = init ⊕ x[0] ⊕ ... ⊕ x[i-1]`; `out` at a segment's start is `init`.
    Exclusive(T),
}

/// How inputs are read before they are combined.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Load {
    /// As they are.
    Plain,
    /// NaN read as the identity (NumPy's `nancumsum`, `nancumprod`).
    SkipNan,
}

/// What a scan kernel's source is made of.
struct ScanCode {
    name: String,
    input: DType,
    output: DType,
    /// The C++ type values are combined in.
    acc: &'static str,
    op: String,
    identity: String,
    load: Load,
    prelude: String,
    /// Inputs computed from several arrays (a fused expression) instead of read from one.
    map: Option<ScanMap>,
    /// The type of keys whose changes start segments (a scan by key), if any.
    keys: Option<DType>,
}

/// The elements a scan reads, computed by a C++ expression of parameters (arrays, named for
/// their element at `i`, and scalars): a fused element-wise expression.
#[derive(Clone, Debug)]
pub(crate) struct ScanMap {
    /// `(C++ type, name, is an array)` of each parameter, in order.
    pub(crate) params: Vec<(String, String, bool)>,
    /// The element's value (of the input type's arithmetic type).
    pub(crate) value: String,
    /// Device code the value uses.
    pub(crate) prelude: String,
}

/// The C++ literal of `dtype`'s highest (or lowest) value, as its arithmetic type.
fn limit(dtype: DType, highest: bool) -> &'static str {
    use DType::*;
    match (dtype, highest) {
        (Bool, true) => "true",
        (Bool, false) => "false",
        (I8, true) => "127",
        (I8, false) => "(-128)",
        (I16, true) => "32767",
        (I16, false) => "(-32768)",
        (I32, true) => "2147483647",
        (I32, false) => "(-2147483647 - 1)",
        (I64, true) => "9223372036854775807ll",
        (I64, false) => "(-9223372036854775807ll - 1)",
        (U8, true) => "255u",
        (U16, true) => "65535u",
        (U32, true) => "4294967295u",
        (U64, true) => "18446744073709551615ull",
        (U8 | U16 | U32 | U64, false) => "0u",
        (F16 | BF16 | F32, true) => "__int_as_float(0x7f800000)",
        (F16 | BF16 | F32, false) => "__int_as_float((int)0xff800000u)",
        (F64, true) => "__longlong_as_double(0x7ff0000000000000ll)",
        (F64, false) => "__longlong_as_double((long long)0xfff0000000000000ull)",
        // Scans take complex types for `Sum` and `Prod` only (`check_types`); their parts' limits.
        (C64 | C128, _) => limit(dtype.real_type(), highest),
    }
}

impl ScanOp {
    pub(crate) fn code(self) -> u32 {
        self as u32
    }

    /// The operation and identity in C++ for values of `dtype`'s arithmetic type.
    pub(crate) fn text(self, dtype: DType) -> (&'static str, &'static str) {
        let nan = |propagating: &'static str, plain: &'static str| match dtype.is_float() {
            true => propagating,
            false => plain,
        };
        match self {
            ScanOp::Sum => ("a + b", "0"),
            ScanOp::Prod => ("a * b", "1"),
            ScanOp::Min => (
                nan("(a != a) ? a : (b != b) ? b : (b < a ? b : a)", "b < a ? b : a"),
                limit(dtype, true),
            ),
            ScanOp::Max => (
                nan("(a != a) ? a : (b != b) ? b : (b > a ? b : a)", "b > a ? b : a"),
                limit(dtype, false),
            ),
        }
    }
}

impl ScanCode {
    /// The CUDA C++ of the scan: `{name}_init` (clears the tile counter and flags) and
    /// `{name}_scan` (the single pass).
    fn source(&self) -> String {
        let name = &self.name;
        let load = match self.load {
            Load::Plain => "return _acc_t(x);",
            Load::SkipNan => "const _acc_t v = _acc_t(x); return v != v ? _identity() : v;",
        };
        let mut s = String::new();
        let _ = writeln!(s, "// generated by cuda-core: scan `{name}`");
        s.push_str(PRELUDE);
        s.push_str(&self.prelude);
        let _ = write!(
            s,
            "\ntypedef {input} _in_t;\ntypedef {acc} _acc_t;\ntypedef {output} _out_t;\n\
             #define _BLOCK {BLOCK}\n#define _ITEMS {items}\n#define _MIN_BLOCKS {min_blocks}\n\
             #define _TILE (_BLOCK * _ITEMS)\n#define _WARPS (_BLOCK / 32)\n\
             __device__ __forceinline__ _acc_t _identity() {{ return _acc_t({identity}); }}\n\
             __device__ __forceinline__ _acc_t _op(const _acc_t a, const _acc_t b) {{ return _acc_t({op}); }}\n\
             __device__ __forceinline__ _acc_t _load(const _in_t x) {{ {load} }}\n",
            input = self.input.c_name(),
            acc = self.acc,
            output = self.output.c_name(),
            identity = self.identity,
            op = self.op,
            items = scan_items(self.output),
            min_blocks = scan_min_blocks(self.output),
        );
        let (params, load) = match &self.map {
            None => ("const _in_t *__restrict__ in".to_string(), "_load(in[e])".to_string()),
            Some(map) => {
                s.push_str(&map.prelude);
                let params: Vec<String> = map
                    .params
                    .iter()
                    .map(|(ty, name, array)| match array {
                        true => format!("const {ty} *__restrict__ _p_{name}"),
                        false => format!("const {ty} {name}"),
                    })
                    .collect();
                let args: Vec<String> = map
                    .params
                    .iter()
                    .map(|(_, name, array)| match array {
                        true => format!("_p_{name}"),
                        false => name.clone(),
                    })
                    .collect();
                let binds: String = map
                    .params
                    .iter()
                    .filter(|(_, _, array)| *array)
                    .map(|(ty, name, _)| format!("    const {ty} &{name} = _p_{name}[i];\n"))
                    .collect();
                let _ = write!(
                    s,
                    "__device__ __forceinline__ _in_t _map({}, const unsigned long long i, const unsigned long long n) {{\n{binds}    return _in_t({});\n}}\n",
                    params.join(", "),
                    map.value
                );
                (params.join(", "), format!("_load(_map({}, e, n))", args.join(", ")))
            }
        };
        let (key_params, head_by_key) = match self.keys {
            None => ("", ""),
            Some(keys) => {
                let _ = writeln!(s, "typedef {} _key_t;", keys.c_name());
                s.push_str(KEY_EQUAL);
                (
                    "const _key_t *__restrict__ keys, ",
                    "{ const unsigned long long e = first + k; head = e >= n || e == 0ull || !_key_equal(keys[e], keys[e - 1]); }",
                )
            }
        };
        s.push_str(
            SCAN_BODY
                .replace("NAME", name)
                .replace("IN_PARAMS", &params)
                .replace("KEY_PARAMS", key_params)
                .replace("HEAD_BY_KEY", head_by_key)
                .replace("LOAD_AT_E", &load)
                .as_str(),
        );
        s
    }
}

/// Key equality of a scan by key (16-bit floats compared as floats).
const KEY_EQUAL: &str = r#"
template <typename T> __device__ __forceinline__ bool _key_equal(const T a, const T b) { return a == b; }
__device__ __forceinline__ bool _key_equal(const cuda_core_f16 a, const cuda_core_f16 b) { return (float)a == (float)b; }
__device__ __forceinline__ bool _key_equal(const cuda_core_bf16 a, const cuda_core_bf16 b) { return (float)a == (float)b; }
"#;

/// The scan's device code after the types and operations: values carried with a segment flag
/// (`_seg`: `f` set when a segment starts inside what `v` covers, whose combination is
/// associative), warp shuffles of them, the look-back's descriptor words, and the two kernels.
const SCAN_BODY: &str = r#"
struct _seg { _acc_t v; unsigned f; };
__device__ __forceinline__ _seg _seg_identity() { _seg r; r.v = _identity(); r.f = 0u; return r; }
__device__ __forceinline__ _seg _combine(const _seg a, const _seg b) {
    _seg r;
    r.v = b.f ? b.v : _op(a.v, b.v);
    r.f = a.f | b.f;
    return r;
}
#define _SEG_WORDS ((int)(sizeof(_seg) / 4))
__device__ __forceinline__ _seg _shfl_up(const _seg v, const int d) {
    unsigned u[_SEG_WORDS];
    memcpy(u, &v, sizeof(v));
    #pragma unroll
    for (int w = 0; w < _SEG_WORDS; ++w) u[w] = __shfl_up_sync(0xffffffffu, u[w], d);
    _seg r;
    memcpy(&r, u, sizeof(r));
    return r;
}
__device__ __forceinline__ _seg _shfl_down(const _seg v, const int d) {
    unsigned u[_SEG_WORDS];
    memcpy(u, &v, sizeof(v));
    #pragma unroll
    for (int w = 0; w < _SEG_WORDS; ++w) u[w] = __shfl_down_sync(0xffffffffu, u[w], d);
    _seg r;
    memcpy(&r, u, sizeof(r));
    return r;
}
// The look-back's messages: a tile publishes its value (its aggregate with status 1, then its
// inclusive prefix with status 2) as _CHUNKS 64-bit words, each holding 32 bits of the value
// (low), the segment flag (bit 32, in the first word) and the status (from bit 33). One aligned
// 64-bit access writes or reads a word whole, so a reader that finds all of a tile's words under
// one nonzero status holds that status's value, with no fence and no load after the status;
// words under two statuses (a prefix being published over the aggregate) are read again.
#define _CHUNKS ((int)((sizeof(_acc_t) + 3) / 4))
static_assert(_CHUNKS * 8 <= 32, "a tile's descriptor words fit DESCRIPTOR_BYTES (scan.rs)");
__device__ __forceinline__ volatile unsigned long long *_descriptors(unsigned char *t) {
    return reinterpret_cast<volatile unsigned long long *>(t + 16);
}
__device__ __forceinline__ void _publish(unsigned char *t, const unsigned long long tile, const _seg v, const unsigned status) {
    unsigned bits[_CHUNKS];
    bits[_CHUNKS - 1] = 0u;
    memcpy(bits, &v.v, sizeof(_acc_t));
    volatile unsigned long long *words = _descriptors(t) + tile * _CHUNKS;
    #pragma unroll
    for (int c = 0; c < _CHUNKS; ++c) {
        const unsigned high = (c == 0 ? v.f : 0u) | (status << 1);
        words[c] = (unsigned long long)bits[c] | ((unsigned long long)high << 32);
    }
}
// Tile p's published value and its status (p < 0: before the first tile, an empty inclusive
// prefix), once every lane of the warp has found its tile's words under one nonzero status.
__device__ __forceinline__ unsigned _look(unsigned char *t, const long long p, _seg *v) {
    unsigned long long words[_CHUNKS];
    unsigned st;
    bool ready;
    do {
        #pragma unroll
        for (int c = 0; c < _CHUNKS; ++c) words[c] = p >= 0 ? _descriptors(t)[p * _CHUNKS + c] : (2ull << 33);
        st = (unsigned)(words[0] >> 33);
        ready = st != 0u;
        #pragma unroll
        for (int c = 1; c < _CHUNKS; ++c) ready = ready && (unsigned)(words[c] >> 33) == st;
    } while (__any_sync(0xffffffffu, !ready));
    if (p < 0) {
        *v = _seg_identity();
    } else {
        unsigned bits[_CHUNKS];
        #pragma unroll
        for (int c = 0; c < _CHUNKS; ++c) bits[c] = (unsigned)words[c];
        memcpy(&v->v, bits, sizeof(_acc_t));
        v->f = (unsigned)(words[0] >> 32) & 1u;
    }
    return st;
}

// Temporary storage: the tile counter (8 bytes, then padding to 16), then _CHUNKS descriptor
// words per tile, cleared here.
extern "C" __global__ void NAME_init(unsigned char *__restrict__ temp, const unsigned long long tiles) {
    unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i == 0) *reinterpret_cast<unsigned long long *>(temp) = 0ull;
    for (; i < tiles * _CHUNKS; i += (unsigned long long)gridDim.x * blockDim.x) _descriptors(temp)[i] = 0ull;
}

static_assert(_ITEMS <= 32, "a thread's segment starts are the bits of one 32-bit word");
extern "C" __global__ void __launch_bounds__(_BLOCK, _MIN_BLOCKS) NAME_scan(IN_PARAMS, KEY_PARAMS_out_t *__restrict__ out,
        const unsigned long long n, const unsigned long long seg, const unsigned long long init_low,
        const unsigned long long init_high, const int exclusive, unsigned char *__restrict__ temp) {
    __shared__ _acc_t sh[_TILE + _TILE / 32];
    __shared__ _seg sh_warp[_WARPS];
    __shared__ _seg sh_warp_excl[_WARPS];
    __shared__ _seg sh_block;
    __shared__ _seg sh_prefix;
    __shared__ unsigned long long sh_tile;
    const unsigned tid = threadIdx.x, lane = tid & 31u, warp = tid >> 5;
    if (tid == 0) sh_tile = atomicAdd(reinterpret_cast<unsigned long long *>(temp), 1ull);
    __syncthreads();
    const unsigned long long tile = sh_tile;
    const unsigned long long base = tile * _TILE;
    // Striped loads (coalesced) into shared memory, padded against bank conflicts; a whole
    // tile without the bound's test.
    if (base + _TILE <= n) {
        #pragma unroll
        for (int k = 0; k < _ITEMS; ++k) {
            const unsigned s = k * _BLOCK + tid;
            const unsigned long long e = base + s;
            sh[s + (s >> 5)] = LOAD_AT_E;
        }
    } else {
        #pragma unroll
        for (int k = 0; k < _ITEMS; ++k) {
            const unsigned s = k * _BLOCK + tid;
            const unsigned long long e = base + s;
            sh[s + (s >> 5)] = e < n ? LOAD_AT_E : _identity();
        }
    }
    __syncthreads();
    // Each thread combines its _ITEMS consecutive elements; bit k of `heads` marks a segment start.
    const unsigned long long first = base + (unsigned long long)tid * _ITEMS;
    unsigned long long r = first % seg;
    unsigned heads = 0u;
    _seg t = _seg_identity();
    #pragma unroll
    for (int k = 0; k < _ITEMS; ++k) {
        const unsigned s = tid * _ITEMS + k;
        const _acc_t x = sh[s + (s >> 5)];
        bool head = r == 0ull;
        HEAD_BY_KEY
        if (head) { heads |= 1u << k; t.v = x; t.f = 1u; } else { t.v = _op(t.v, x); }
        if (++r == seg) r = 0ull;
    }
    // The block's scan of the threads' values: warps by shuffles, then the warps' totals.
    _seg inc = t;
    #pragma unroll
    for (int d = 1; d < 32; d <<= 1) {
        const _seg o = _shfl_up(inc, d);
        if (lane >= (unsigned)d) inc = _combine(o, inc);
    }
    const _seg lane_before = _shfl_up(inc, 1);
    if (lane == 31u) sh_warp[warp] = inc;
    __syncthreads();
    if (tid == 0) {
        _seg run = sh_warp[0];
        sh_warp_excl[0] = _seg_identity();
        for (int w = 1; w < _WARPS; ++w) { sh_warp_excl[w] = run; run = _combine(run, sh_warp[w]); }
        sh_block = run;
    }
    __syncthreads();
    // Look-back: the first warp publishes the tile's aggregate, then combines the published
    // values of the tiles before it, 32 at a time, back to the nearest inclusive prefix.
    if (warp == 0) {
        const _seg aggregate = sh_block;
        if (tile == 0ull) {
            if (lane == 0u) {
                _publish(temp, 0ull, aggregate, 2u);
                sh_prefix = _seg_identity();
            }
        } else {
            if (lane == 0u) _publish(temp, tile, aggregate, 1u);
            _seg run = _seg_identity();
            long long top = (long long)tile - 1;
            while (true) {
                _seg v;
                const unsigned st = _look(temp, top - (long long)lane, &v);
                const unsigned done = __ballot_sync(0xffffffffu, st == 2u);
                const int stop = done ? __ffs(done) - 1 : 31;
                if ((int)lane > stop) v = _seg_identity();
                // Lane 0 gets v[stop] ⊕ ... ⊕ v[0]: higher lanes are earlier tiles.
                #pragma unroll
                for (int d = 1; d < 32; d <<= 1) {
                    const _seg o = _shfl_down(v, d);
                    if (lane + (unsigned)d < 32u) v = _combine(o, v);
                }
                if (lane == 0u) run = _combine(v, run);
                if (done) break;
                top -= 32;
            }
            if (lane == 0u) {
                _publish(temp, tile, _combine(run, aggregate), 2u);
                sh_prefix = run;
            }
        }
    }
    __syncthreads();
    _seg run = _combine(sh_prefix, _combine(sh_warp_excl[warp], lane == 0u ? _seg_identity() : lane_before));
    // The exclusive scan's initial value: its bits, in two words (16 bytes: a complex128).
    _acc_t init = _identity();
    {
        const unsigned long long bits[2] = {init_low, init_high};
        memcpy(&init, bits, sizeof(init) < sizeof(bits) ? sizeof(init) : sizeof(bits));
    }
    // In place: a thread reads and writes only its own _ITEMS elements here.
    #pragma unroll
    for (int k = 0; k < _ITEMS; ++k) {
        const unsigned s = tid * _ITEMS + k;
        const _acc_t x = sh[s + (s >> 5)];
        const bool head = (heads >> k) & 1u;
        const _acc_t before = (head || !exclusive) ? init : _op(init, run.v);
        if (head) { run.v = x; run.f = 1u; } else { run.v = _op(run.v, x); }
        sh[s + (s >> 5)] = exclusive ? before : run.v;
    }
    __syncthreads();
    #pragma unroll
    for (int k = 0; k < _ITEMS; ++k) {
        const unsigned s = k * _BLOCK + tid;
        const unsigned long long e = base + s;
        if (e < n) out[e] = _out_t(sh[s + (s >> 5)]);
    }
}
"#;

/// A built-in scan's generated code, loaded per context and element types.
struct ScanKernel {
    op: ScanOp,
    load: Load,
    loaded: LoadedTable,
}

/// A scan with a combining operation written in C++, as [`ReductionKernel`](crate::ReductionKernel)'s
/// `reduce_expr`: `op` combines `a` and `b` (values of the output type's arithmetic type,
/// `float` for `f16` and `bf16`), `identity` is its neutral value.
///
/// ```no_run
/// use cuda_core::algorithms::scan::{ScanKind, ScanOperator};
/// use cuda_core::{Device, DeviceBuffer};
///
/// # fn main() -> cuda_core::Result<()> {
/// let device = Device::new(0)?;
/// let stream = device.create_stream()?;
/// let running_max = ScanOperator::new("running_max", "a > b ? a : b", "-2147483647 - 1")?;
/// let x = DeviceBuffer::from_slice(device.context(), &[3i32, 1, 4, 1, 5])?;
/// let mut out = DeviceBuffer::<i32>::zeroed(device.context(), 5)?;
/// // SAFETY: the operator only computes with `a` and `b`.
/// unsafe { running_max.scan::<i32, i32>(&stream, &x, &mut out, ScanKind::Inclusive, None)? };
/// stream.synchronize()?;
/// assert_eq!(out.to_vec()?, [3, 3, 4, 4, 5]);
/// # Ok(())
/// # }
/// ```
pub struct ScanOperator {
    operator: UserOperator,
    loaded: LoadedTable,
}

impl ScanOperator {
    /// An operator named `name` (a C identifier), combining `a` and `b` with the C++ expression
    /// `op`, whose neutral value is the C++ expression `identity` (`op(identity, x) == x`).
    pub fn new(name: &str, op: &str, identity: &str) -> Result<Self> {
        Ok(ScanOperator {
            operator: UserOperator::new("scan", name, op, identity)?,
            loaded: LoadedTable::default(),
        })
    }

    /// This operator with device code (helper functions, types) that `op` and `identity` may use.
    pub fn with_prelude(mut self, prelude: &str) -> Self {
        self.operator.prelude = prelude.to_string();
        self
    }

    /// The CUDA C++ generated for inputs of `input` and outputs of `output`.
    pub fn source_for(&self, input: DType, output: DType) -> String {
        self.code(input, output).source()
    }

    fn code(&self, input: DType, output: DType) -> ScanCode {
        ScanCode {
            name: format!("scan_{}", self.operator.name),
            input,
            output,
            acc: output.compute_c_name(),
            op: self.operator.op.clone(),
            identity: self.operator.identity.clone(),
            load: Load::Plain,
            prelude: self.operator.prelude.clone(),
            map: None,
            keys: None,
        }
    }

    /// Scans `input` (elements of `I`) into `output` (at least as many elements of `O`) on
    /// `stream`, by segments of `segment_len` elements when given (each starts afresh), as
    /// [`scan`] does with a built-in operation.
    ///
    /// # Safety
    /// `op` and `identity` (and the prelude) are device code the crate cannot check: they must
    /// only compute with `a` and `b` (no memory access through addresses, no shared state, no
    /// undefined behaviour), and `op` must be associative (the combination order is a tree's).
    pub unsafe fn scan<I: Element, O: Element>(
        &self,
        stream: &Stream,
        input: &impl DeviceMemory,
        output: &mut impl DeviceMemoryMut,
        kind: ScanKind<O>,
        segment_len: Option<usize>,
    ) -> Result<()> {
        real_elements("scan", &[I::DTYPE, O::DTYPE])?;
        let signature = [ArgType::Array(I::DTYPE), ArgType::Array(O::DTYPE)];
        let code = || self.code(I::DTYPE, O::DTYPE);
        run::<I, O>(
            stream,
            &self.loaded,
            &signature,
            &code,
            input,
            output,
            kind,
            segment_len,
        )
    }
}

impl std::fmt::Debug for ScanOperator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScanOperator")
            .field("name", &self.operator.name)
            .finish()
    }
}

/// The source of the built-in scan `op` from `I` to `O` (for tests of the generated code).
pub fn builtin_source<I: Element, O: Element>(op: ScanOp, skip_nan: bool) -> String {
    let load = match skip_nan {
        true => Load::SkipNan,
        false => Load::Plain,
    };
    builtin_code(op, load, I::DTYPE, O::DTYPE).source()
}

fn builtin_code(op: ScanOp, load: Load, input: DType, output: DType) -> ScanCode {
    let (text, identity) = op.text(output);
    ScanCode {
        name: "scan".to_string(),
        input,
        output,
        acc: output.compute_c_name(),
        op: text.to_string(),
        identity: identity.to_string(),
        load,
        prelude: String::new(),
        map: None,
        keys: None,
    }
}

/// Scans `input` (elements of `I`) into `output` (at least as many elements of `O`) with `op`
/// on `stream`: inclusive or exclusive ([`ScanKind`]), over the whole input or, with
/// `segment_len`, over consecutive segments of that many elements (the rows of a C-contiguous
/// matrix; the last may be shorter), each starting afresh. Values are combined in `O`'s
/// arithmetic type (`float` for `f16` and `bf16`). One kernel pass (plus a clear of the tile
/// flags), no host wait; temporary storage from the pool in `stream`'s order. The output must
/// not overlap the input. Complex types take `Sum` and `Prod` (`Min`/`Max` of them are
/// [`Error::NotSupported`]), an exclusive scan's initial value of any type (`complex128`
/// included).
pub fn scan<I: Element, O: Element>(
    stream: &Stream,
    input: &impl DeviceMemory,
    output: &mut impl DeviceMemoryMut,
    op: ScanOp,
    kind: ScanKind<O>,
    segment_len: Option<usize>,
) -> Result<()> {
    scan_loaded::<I, O>(stream, op, Load::Plain, input, output, kind, segment_len)
}

/// [`scan`] of `Sum` or `Prod` reading NaN as the identity (NumPy's `nancumsum`, `nancumprod`).
pub(crate) fn scan_loaded<I: Element, O: Element>(
    stream: &Stream,
    op: ScanOp,
    load: Load,
    input: &impl DeviceMemory,
    output: &mut impl DeviceMemoryMut,
    kind: ScanKind<O>,
    segment_len: Option<usize>,
) -> Result<()> {
    check_types("scan", op, &[I::DTYPE, O::DTYPE])?;
    let encoding = [op.code(), load as u32];
    let kernel: Arc<ScanKernel> = kernel_encoded("scan", &encoding, || {
        Ok(ScanKernel {
            op,
            load,
            loaded: LoadedTable::default(),
        })
    })?;
    let signature = [ArgType::Array(I::DTYPE), ArgType::Array(O::DTYPE)];
    let code = || builtin_code(kernel.op, kernel.load, I::DTYPE, O::DTYPE);
    // SAFETY: the built-in operations only compute with their two values.
    unsafe {
        run::<I, O>(
            stream,
            &kernel.loaded,
            &signature,
            &code,
            input,
            output,
            kind,
            segment_len,
        )
    }
}

/// The inclusive scan with `op` (reading through `load`) of the values `map` computes from
/// `args` (arrays of `n` elements, C-contiguous, and scalars), whose element types are `I`'s
/// and whose form `key` identifies, into `output` (`n` elements of `O`, apart from the arrays),
/// by segments of `segment_len` when given: a scan of a fused expression, reading its operands
/// once.
///
/// # Safety
/// `map`'s value reads only its parameters' elements at `i` and its scalars; `args` match its
/// parameters.
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn scan_mapped<I: Element, O: Element>(
    stream: &Stream,
    op: ScanOp,
    load: Load,
    key: &[u32],
    map: &ScanMap,
    args: &[Arg<'_>],
    n: usize,
    output: &mut crate::DeviceArray<O>,
    segment_len: Option<usize>,
) -> Result<()> {
    if n == 0 {
        return Ok(());
    }
    if output.len() < n || !output.is_contiguous() {
        return Err(Error::InvalidValue(
            "scan: the output must be compact and hold every element".into(),
        ));
    }
    check_types("scan", op, &[I::DTYPE, O::DTYPE])?;
    let mut encoding = vec![op.code(), load as u32];
    encoding.extend_from_slice(key);
    let kernel: Arc<ScanKernel> = kernel_encoded("scan_map", &encoding, || {
        Ok(ScanKernel {
            op,
            load,
            loaded: LoadedTable::default(),
        })
    })?;
    let mut signature: Vec<ArgType> = args.iter().map(Arg::arg_type).collect();
    signature.push(ArgType::Array(O::DTYPE));
    let loaded = kernel.loaded.get_or_load(stream.context(), &signature, 0, || {
        let mut code = builtin_code(op, load, I::DTYPE, O::DTYPE);
        code.name = "scan_map".to_string();
        code.map = Some(map.clone());
        let names = vec![format!("{}_init", code.name), format!("{}_scan", code.name)];
        Ok((code.source(), names))
    })?;
    let segment = segment_len.map_or(n as u64, |len| len as u64);
    let output_use = output.begin_use(stream, Access::Write)?;
    // SAFETY: the map reads the arrays of `args` (n elements each, the caller's guarantee) at
    // indices below `n`; `output` is compact with at least `n` elements, its use begun.
    unsafe {
        launch_scan::<O>(
            &loaded,
            stream,
            ScanInput::Args(args),
            None,
            *output.ptr_ref(),
            n as u64,
            segment,
            [0; 2],
            0,
        )?
    };
    drop(output_use);
    Ok(())
}

/// Scans `input` (elements of `I`) into `output` (at least as many elements of `O`) with `op`
/// by runs of equal keys (CUB's `InclusiveScanByKey` and `ExclusiveScanByKey`): a segment
/// starts at element 0 and wherever `keys[i] != keys[i - 1]` (so NaN keys each start one).
/// `keys` holds one `K` per element, of a real type; the values may be complex for `Sum` and
/// `Prod`, as in [`scan`]. Otherwise as [`scan`]: one pass, no host wait.
pub fn scan_by_key<K: Element, I: Element, O: Element>(
    stream: &Stream,
    keys: &impl DeviceMemory,
    input: &impl DeviceMemory,
    output: &mut impl DeviceMemoryMut,
    op: ScanOp,
    kind: ScanKind<O>,
) -> Result<()> {
    real_elements("scan by key", &[K::DTYPE])?;
    check_types("scan by key", op, &[I::DTYPE, O::DTYPE])?;
    let n = elements::<I>("scan input", input, stream)?;
    let key_count = elements::<K>("scan keys", keys, stream)?;
    let capacity = elements::<O>("scan output", output, stream)?;
    if key_count != n {
        return Err(Error::InvalidValue(format!(
            "scan by key: {key_count} keys for {n} elements"
        )));
    }
    if capacity < n {
        return Err(Error::InvalidValue(format!(
            "scan: the output holds {capacity} elements, the input {n}"
        )));
    }
    if n == 0 {
        return Ok(());
    }
    disjoint("scan", input, output)?;
    disjoint("scan", keys, output)?;
    let (init, exclusive) = match kind {
        ScanKind::Inclusive => ([0u64; 2], 0i32),
        ScanKind::Exclusive(init) => (init_words(init)?, 1i32),
    };
    let encoding = [op.code(), Load::Plain as u32];
    let kernel: Arc<ScanKernel> = kernel_encoded("scan_by_key", &encoding, || {
        Ok(ScanKernel {
            op,
            load: Load::Plain,
            loaded: LoadedTable::default(),
        })
    })?;
    let signature = [
        ArgType::Array(I::DTYPE),
        ArgType::Array(K::DTYPE),
        ArgType::Array(O::DTYPE),
    ];
    let loaded = kernel.loaded.get_or_load(stream.context(), &signature, 0, || {
        let mut code = builtin_code(op, Load::Plain, I::DTYPE, O::DTYPE);
        code.name = "scan_by_key".to_string();
        code.keys = Some(K::DTYPE);
        let names = vec![format!("{}_init", code.name), format!("{}_scan", code.name)];
        Ok((code.source(), names))
    })?;
    let _input_use = input.begin_use(stream, Access::Read)?;
    let _keys_use = keys.begin_use(stream, Access::Read)?;
    let _output_use = output.begin_use(stream, Access::Write)?;
    // SAFETY: the built-in operations only compute with their values; `input`, `keys` (n
    // elements each) and `output` (at least n) are checked above, their uses begun on `stream`;
    // the kernel reads keys `e` and `e - 1` for `0 < e < n` only.
    unsafe {
        launch_scan::<O>(
            &loaded,
            stream,
            ScanInput::Address(input.device_ptr()),
            Some(keys.device_ptr()),
            output.device_ptr(),
            n as u64,
            n as u64,
            init,
            exclusive,
        )
    }
}

/// The source [`scan_by_key`] compiles (for tests of the generated code).
#[cfg(test)]
pub(crate) fn by_key_source(op: ScanOp, keys: DType, input: DType, output: DType) -> String {
    let mut code = builtin_code(op, Load::Plain, input, output);
    code.name = "scan_by_key".to_string();
    code.keys = Some(keys);
    code.source()
}

/// The source [`scan_mapped`] compiles (for tests of the generated code).
#[cfg(test)]
pub(crate) fn mapped_source(op: ScanOp, load: Load, input: DType, output: DType, map: &ScanMap) -> String {
    let mut code = builtin_code(op, load, input, output);
    code.name = "scan_map".to_string();
    code.map = Some(map.clone());
    code.source()
}

/// Checks the buffers and runs the scan whose code `code` gives.
///
/// # Safety
/// The operation in `code` only computes with its values.
#[allow(clippy::too_many_arguments)]
unsafe fn run<I: Element, O: Element>(
    stream: &Stream,
    table: &LoadedTable,
    signature: &[ArgType],
    code: &dyn Fn() -> ScanCode,
    input: &impl DeviceMemory,
    output: &mut impl DeviceMemoryMut,
    kind: ScanKind<O>,
    segment_len: Option<usize>,
) -> Result<()> {
    let n = elements::<I>("scan input", input, stream)?;
    let capacity = elements::<O>("scan output", output, stream)?;
    if capacity < n {
        return Err(Error::InvalidValue(format!(
            "scan: the output holds {capacity} elements, the input {n}"
        )));
    }
    if segment_len == Some(0) {
        return Err(Error::InvalidValue("scan: segments of 0 elements".into()));
    }
    if n == 0 {
        return Ok(());
    }
    disjoint("scan", input, output)?;
    let (init, exclusive) = match kind {
        ScanKind::Inclusive => ([0u64; 2], 0i32),
        ScanKind::Exclusive(init) => (init_words(init)?, 1i32),
    };
    let loaded = table.get_or_load(stream.context(), signature, 0, || {
        let code = code();
        let names = vec![format!("{}_init", code.name), format!("{}_scan", code.name)];
        Ok((code.source(), names))
    })?;
    let segment = segment_len.map_or(n as u64, |len| len as u64);
    let _input_use = input.begin_use(stream, Access::Read)?;
    let _output_use = output.begin_use(stream, Access::Write)?;
    // SAFETY: the pointers are of the memory checked above, whose uses on `stream` are begun.
    unsafe {
        launch_scan::<O>(
            &loaded,
            stream,
            ScanInput::Address(input.device_ptr()),
            None,
            output.device_ptr(),
            n as u64,
            segment,
            init,
            exclusive,
        )
    }
}

/// The bits of `init` in the arithmetic type of `O` (`float` for `f16`/`bf16`), zero-extended
/// to two words (the two initial-value parameters of a scan or a reduction, 16 bytes: a
/// `complex128`); [`Error::NotSupported`] for a type wider than 16 bytes.
pub(crate) fn init_words<O: Element>(init: O) -> Result<[u64; 2]> {
    match O::DTYPE {
        DType::F16 | DType::BF16 => Ok([u64::from((init.to_f64() as f32).to_bits()), 0]),
        dtype if std::mem::size_of::<O>() > 16 => Err(Error::NotSupported(format!(
            "an initial value of {dtype} (scans pass at most 16 bytes)"
        ))),
        _ => {
            let mut words = [0u64; 2];
            // SAFETY: `O` is plain data (every `Element` is) of at most 16 bytes (checked
            // above), copied into the 16 bytes of `words`; the words keep the bytes' order in
            // memory, which is how the kernel reads its two parameters back.
            unsafe {
                std::ptr::copy_nonoverlapping(
                    (&init as *const O).cast::<u8>(),
                    words.as_mut_ptr().cast::<u8>(),
                    std::mem::size_of::<O>(),
                )
            };
            Ok(words)
        }
    }
}

/// Fails unless a scan of these element types is supported: complex types only for `Sum` and
/// `Prod` (the lexicographic `Min`/`Max` have no identity among `limit`'s values).
fn check_types(what: &str, op: ScanOp, dtypes: &[DType]) -> Result<()> {
    match op {
        ScanOp::Sum | ScanOp::Prod => Ok(()),
        ScanOp::Min | ScanOp::Max => real_elements(what, dtypes),
    }
}

/// Elements each thread of a scan with outputs of `output` holds. A tile's look-back costs a
/// few dependent round trips to memory whatever its size, and a block moves no data meanwhile,
/// so the SMs need tiles enough in flight: tiles of 8 KiB (8 items of 4 bytes) with eight
/// blocks an SM bounded the scan at a quarter of the memory's bandwidth. For values of at most
/// 4 bytes, whose look-back reads one descriptor word a tile, 16 items (16 KiB tiles) with
/// eight blocks an SM were the fastest on the H100 (cumsum of 2^28 f32: 2257 GB/s, against 2146
/// for 32 items with five blocks, 2090 for 16 with six, 1722 for 8 with eight); wider values
/// take 32 KiB tiles. At most 32 (a thread's segment starts are the bits of one word).
fn scan_items(output: DType) -> u32 {
    match output.size() {
        0..=8 => 16,
        _ => 8,
    }
}

/// Blocks of the scan with outputs of `output` that one SM must be able to hold
/// (`__launch_bounds__`, capping the registers a thread): eight of values of at most 4 bytes
/// (a whole SM's threads, 32 registers each), four of wider ones (64 registers).
fn scan_min_blocks(output: DType) -> u32 {
    match output.size() {
        0..=4 => 8,
        _ => 4,
    }
}

/// Elements per tile of the scan with outputs of `output`.
fn scan_tile(output: DType) -> u64 {
    u64::from(BLOCK * scan_items(output))
}

/// Bytes of a tile's descriptor words in the scan's temporary storage: at most 32 (four words,
/// for a `complex128`: `_CHUNKS` in the kernel).
const DESCRIPTOR_BYTES: u64 = 32;

/// Bytes of the scan's temporary storage for `tiles` tiles (the counter, padded to 16 bytes,
/// and the tiles' descriptor words).
fn temp_bytes(tiles: u64) -> Result<usize> {
    tiles
        .checked_mul(DESCRIPTOR_BYTES)
        .and_then(|b| b.checked_add(16))
        .and_then(|b| usize::try_from(b).ok())
        .ok_or_else(|| Error::InvalidValue(format!("scan: temporary storage for {tiles} tiles overflows")))
}

/// What a scan kernel reads.
pub(crate) enum ScanInput<'a> {
    /// One array's device address (its use begun by the caller).
    Address(u64),
    /// The arguments of a [`ScanMap`]'s parameters (the launch begins the arrays' uses).
    Args(&'a [Arg<'a>]),
}

/// Launches a loaded scan with outputs of `O` over `n` elements at `input` into `output`, in
/// the tiles its kernel was built with ([`scan_tile`] of `O`).
///
/// # Safety
/// `input` holds `n` elements of the kernel's input type (or, for a map, its arrays `n` elements
/// each, C-contiguous), `keys` (for a scan by key) `n` of its key type, and `output` `n` of its
/// output type, not overlapping the others, all usable in `stream`'s order.
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn launch_scan<'a, O: Element>(
    loaded: &Loaded,
    stream: &Stream,
    input: ScanInput<'a>,
    keys: Option<u64>,
    output: u64,
    n: u64,
    segment: u64,
    init: [u64; 2],
    exclusive: i32,
) -> Result<()> {
    let tiles = n.div_ceil(scan_tile(O::DTYPE));
    let grid = tile_grid(tiles)?;
    let temp = MemoryPool::for_context(stream.context()).alloc(stream, temp_bytes(tiles)?)?;
    let mut clear = Launch::on(stream);
    clear.value(temp.ptr()).value(tiles);
    // SAFETY: `_init` takes the temporary storage's address and the tile count, and writes the
    // counter and the tiles' descriptor words, inside the block's `temp_bytes(tiles)` bytes.
    unsafe {
        clear.run(
            &loaded.functions[0],
            (grid_for(tiles, BLOCK, loaded.sm_count, 4), 1),
            (BLOCK, 1),
        )?
    };
    let mut pass = Launch::on(stream);
    match input {
        ScanInput::Address(address) => {
            pass.value(address);
        }
        ScanInput::Args(args) => {
            pass.args(args)?;
        }
    }
    if let Some(keys) = keys {
        pass.value(keys);
    }
    pass.value(output)
        .value(n)
        .value(segment)
        .value(init[0])
        .value(init[1])
        .value(exclusive)
        .value(temp.ptr());
    // SAFETY: `_scan` takes these parameters in this order; each of its `tiles` blocks reads
    // the elements of its tile below `n` from `input` and writes the same ones of `output` (the
    // caller's guarantee), and uses the counter and the descriptor words of the temporary
    // storage (at most `DESCRIPTOR_BYTES` per tile, `_init` cleared them), all in `stream`'s
    // order.
    unsafe { pass.run(&loaded.functions[1], (grid, 1), (BLOCK, 1))? };
    // Back to the pool in `stream`'s order, after both kernels.
    drop(temp);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn temporary_storage_covers_every_tile() {
        assert_eq!(temp_bytes(1).unwrap(), 16 + 32);
        assert_eq!(temp_bytes(5).unwrap(), 16 + 160);
        assert!(temp_bytes(u64::MAX / 16).is_err());
    }

    #[test]
    fn tiles_fit_the_blocks_an_sm_holds() {
        use DType::*;
        for dtype in [Bool, I8, U16, F16, BF16, I32, F32, I64, F64, C64, C128] {
            let acc = match dtype {
                F16 | BF16 => 4,
                other => other.size() as u64,
            };
            let items = scan_items(dtype);
            assert!(items <= 32, "{dtype}: a thread's segment starts are one 32-bit word");
            // The tile (padded by a word in 32) of every block the bound asks an SM to hold,
            // within an sm_90 SM's 228 KiB of shared memory (smaller SMs hold fewer blocks: the
            // bound caps the registers, it does not refuse them).
            let padded = scan_tile(dtype) * acc * 33 / 32;
            assert!(
                padded * u64::from(scan_min_blocks(dtype)) <= 228 * 1024,
                "{dtype}: the tiles outgrow shared memory"
            );
            assert_eq!(scan_tile(dtype), u64::from(BLOCK * items));
        }
        assert_eq!(scan_tile(F32), 4096);
        assert_eq!(scan_min_blocks(F32), 8);
        assert_eq!(scan_tile(I64), 4096);
        assert_eq!(scan_tile(C128), 2048);
    }

    #[test]
    fn init_values_keep_their_bits() {
        assert_eq!(init_words(-1i64).unwrap(), [u64::MAX, 0]);
        assert_eq!(init_words(1.5f32).unwrap(), [u64::from(1.5f32.to_bits()), 0]);
        assert_eq!(
            init_words(half::f16::from_f32(2.0)).unwrap(),
            [u64::from(2.0f32.to_bits()), 0]
        );
        let z = num_complex::Complex::new(1.5f32, -2.0);
        assert_eq!(
            init_words(z).unwrap(),
            [u64::from(1.5f32.to_bits()) | (u64::from((-2.0f32).to_bits()) << 32), 0]
        );
        // Two words hold a complex128: the real part's bits, then the imaginary part's.
        assert_eq!(
            init_words(num_complex::Complex::new(1.5f64, -2.0)).unwrap(),
            [1.5f64.to_bits(), (-2.0f64).to_bits()]
        );
        assert_eq!(init_words(7u8).unwrap(), [7, 0]);
    }
}
