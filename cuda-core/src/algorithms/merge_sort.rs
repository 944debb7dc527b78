//! Stable merge sort by a comparator written in C++ (CUB's `DeviceMergeSort`,
//! `cuda.compute.merge_sort`), of keys or of key-value pairs, for keys radix sort cannot take:
//! structs, orders other than a type's own (by absolute value, by a field, lexicographic), any
//! plain-data type whose C++ counterpart the caller names.
//!
//! ```no_run
//! use cuda_core::algorithms::merge_sort::MergeSort;
//! use cuda_core::{Device, DeviceBuffer};
//!
//! # fn main() -> cuda_core::Result<()> {
//! let device = Device::new(0)?;
//! let stream = device.create_stream()?;
//! let by_magnitude = MergeSort::new("by_magnitude", "float", "fabsf(a) < fabsf(b)")?;
//! let x = DeviceBuffer::from_slice(device.context(), &[3.0f32, -1.0, 2.0, 1.0])?;
//! let mut sorted = DeviceBuffer::<f32>::zeroed(device.context(), 4)?;
//! // SAFETY: the comparator only computes with `a` and `b`.
//! unsafe { by_magnitude.sort_keys::<f32>(&stream, &x, &mut sorted, 4)? };
//! stream.synchronize()?;
//! assert_eq!(sorted.to_vec()?, [-1.0, 1.0, 2.0, 3.0]);
//! # Ok(())
//! # }
//! ```
//!
//! How: each block sorts a tile of keys (and values) in shared memory, then passes over global
//! memory merge runs of doubling width, ping-ponging between the output and one temporary
//! buffer from the pool (stream-ordered; no host wait). A block of a merge pass writes one
//! tile of the output: a small kernel first finds, for each tile, where it starts in the two
//! runs it merges (a binary search along the merge path, one thread a tile); the block reads its
//! share of both runs into shared memory, each thread merges its few elements there (a search
//! along the path within the tile, then one element at a time, the left run's first on ties:
//! stable), and the tile is written out coalesced. Each element is read and written once a
//! pass. Every read stays inside its runs and every block writes only its tile, whatever the
//! comparator answers.

use std::fmt::Write;
use std::mem::size_of;

use cuda_driver::{DeviceCopy, DeviceMemory, DeviceMemoryMut, Stream};
use cuda_sys::driver::CUdeviceptr;

use super::sort::{bytes_of, Operands};
use crate::array::kernels::launch::Launch;
use crate::array::kernels::registry::{grid_for, Loaded, LoadedTable};
use crate::array::kernels::PRELUDE;
use crate::array::MemoryPool;
use crate::error::{Error, Result};

/// Threads per block.
const BLOCK: u32 = 256;
/// Shared memory a block's tile may take (two buffers of keys and values).
const SHARED_BYTES: usize = 32 * 1024;
/// The most elements a block sorts.
const MAX_TILE: usize = 2048;
/// The largest key or value, in bytes.
const MAX_ELEMENT_BYTES: usize = 64;

/// The elements a block sorts in shared memory for keys and values of these sizes: the largest
/// power of two whose two buffers fit in [`SHARED_BYTES`], at most [`MAX_TILE`].
fn tile_for(key_bytes: usize, value_bytes: usize) -> usize {
    let fits = SHARED_BYTES / (2 * (key_bytes + value_bytes));
    let mut tile = MAX_TILE;
    while tile > fits {
        tile /= 2;
    }
    tile
}

/// The merge passes after the block sort of `n` elements in tiles of `tile`: runs of `tile`
/// doubling until one run covers everything.
fn merge_passes(n: u64, tile: u64) -> u32 {
    let mut passes = 0;
    let mut width = tile;
    while width < n {
        width = width.saturating_mul(2);
        passes += 1;
    }
    passes
}

/// The C++ type moving values of `bytes` bytes (their content is never looked at).
fn value_type(bytes: usize) -> String {
    match bytes {
        1 => "typedef unsigned char _val_t;".into(),
        2 => "typedef unsigned short _val_t;".into(),
        4 => "typedef unsigned int _val_t;".into(),
        8 => "typedef unsigned long long _val_t;".into(),
        b if b % 8 == 0 => format!("struct _val_t {{ unsigned long long w[{}]; }};", b / 8),
        b => format!("struct _val_t {{ unsigned char b[{b}]; }};"),
    }
}

/// The sort's device code after the types and the comparator.
const MERGE_SORT_BODY: &str = r#"
// The index in the merged output of element i of `keys`, whose runs of `w` elements are sorted:
// its index in its run plus the count of the other run's elements before it. Always inside the
// pair of runs [pair, end), whatever _less answers.
template <typename I>
__device__ __forceinline__ I _merged_index(const _key_t *keys, const I i, const I n, const I w) {
    const I pair = i / (2 * w) * (2 * w);
    const I mid = n - pair < w ? n : pair + w;
    const I end = n - pair < 2 * w ? n : pair + 2 * w;
    const _key_t x = keys[i];
    I lo, hi;
    if (i < mid) {
        // Left run: the right run's elements strictly less than x go first.
        lo = mid; hi = end;
        while (lo < hi) { const I m = lo + (hi - lo) / 2; if (_less(keys[m], x)) lo = m + 1; else hi = m; }
        return i + (lo - mid);
    }
    // Right run: the left run's elements not greater than x go first (ties keep their order).
    lo = pair; hi = mid;
    while (lo < hi) { const I m = lo + (hi - lo) / 2; if (!_less(x, keys[m])) lo = m + 1; else hi = m; }
    return (i - mid) + lo;
}

// Each block sorts its tile of _TILE elements (the last may be shorter) in shared memory.
extern "C" __global__ void __launch_bounds__(_BLOCK) NAME_block(const _key_t *__restrict__ keys_in,
        const _val_t *__restrict__ values_in, _key_t *__restrict__ keys_out, _val_t *__restrict__ values_out,
        const unsigned long long n) {
    __shared__ __align__(16) unsigned char raw_keys[2 * _TILE * sizeof(_key_t)];
    _key_t *k[2] = {reinterpret_cast<_key_t *>(raw_keys), reinterpret_cast<_key_t *>(raw_keys) + _TILE};
#if _HAS_VALUES
    __shared__ __align__(16) unsigned char raw_values[2 * _TILE * sizeof(_val_t)];
    _val_t *v[2] = {reinterpret_cast<_val_t *>(raw_values), reinterpret_cast<_val_t *>(raw_values) + _TILE};
#endif
    const unsigned long long base = (unsigned long long)blockIdx.x * _TILE;
    const unsigned len = n - base < (unsigned long long)_TILE ? (unsigned)(n - base) : (unsigned)_TILE;
    for (unsigned s = threadIdx.x; s < len; s += _BLOCK) {
        k[0][s] = keys_in[base + s];
#if _HAS_VALUES
        v[0][s] = values_in[base + s];
#endif
    }
    __syncthreads();
    int cur = 0;
    for (unsigned w = 1; w < len; w <<= 1) {
        for (unsigned s = threadIdx.x; s < len; s += _BLOCK) {
            const unsigned d = _merged_index<unsigned>(k[cur], s, len, w);
            k[cur ^ 1][d] = k[cur][s];
#if _HAS_VALUES
            v[cur ^ 1][d] = v[cur][s];
#endif
        }
        __syncthreads();
        cur ^= 1;
    }
    for (unsigned s = threadIdx.x; s < len; s += _BLOCK) {
        keys_out[base + s] = k[cur][s];
#if _HAS_VALUES
        values_out[base + s] = v[cur][s];
#endif
    }
}

// The count of run a's elements (of a_len) among the first o of the merge of runs a and b (of
// b_len; a's first on ties): the least i in [max(0, o - b_len), min(o, a_len)] whose a[i] does
// not go before b[o - i - 1] (the merge path). Reads only inside both runs, whatever _less
// answers.
template <typename I>
__device__ __forceinline__ I _co_rank(const _key_t *a, const I a_len, const _key_t *b, const I b_len, const I o) {
    I lo = o > b_len ? o - b_len : 0, hi = o < a_len ? o : a_len;
    while (lo < hi) {
        const I m = lo + (hi - lo) / 2;
        if (!_less(b[o - m - 1], a[m])) lo = m + 1;
        else hi = m;
    }
    return lo;
}

// The pair of runs of w (a multiple of _TILE) that output position `at` lies in: where it
// starts, where its second run starts, and where it ends (at most n).
struct _pair_of {
    unsigned long long pair, mid, end;
};
__device__ __forceinline__ _pair_of _pair_at(const unsigned long long at, const unsigned long long n,
                                             const unsigned long long w) {
    _pair_of p;
    p.pair = at / (2 * w) * (2 * w);
    p.mid = n - p.pair < w ? n : p.pair + w;
    p.end = n - p.pair < 2 * w ? n : p.pair + 2 * w;
    return p;
}

// splits[t] = how many of its pair's first run's elements the merge puts before output tile t's
// first position (t * _TILE), for the `tiles` tiles of a merge pass over runs of w.
extern "C" __global__ void __launch_bounds__(_BLOCK) NAME_split(const _key_t *__restrict__ keys_in,
        const unsigned long long n, const unsigned long long w, unsigned long long *__restrict__ splits,
        const unsigned long long tiles) {
    for (unsigned long long t = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; t < tiles;
         t += (unsigned long long)gridDim.x * blockDim.x) {
        const unsigned long long at = t * _TILE;
        const _pair_of p = _pair_at(at, n, w);
        splits[t] = _co_rank<unsigned long long>(keys_in + p.pair, p.mid - p.pair, keys_in + p.mid, p.end - p.mid,
                                                 at - p.pair);
    }
}

// Elements a thread merges.
#define _ITEMS ((_TILE + _BLOCK - 1) / _BLOCK)

// One merge pass over global memory, runs of w (a multiple of _TILE) into runs of 2w: block t
// writes the output tile [t * _TILE, (t + 1) * _TILE) (below n). Its share of each run, from
// the splits, comes into shared memory; each thread finds where its _ITEMS outputs start in the
// two shares (a merge path search there) and merges them one by one into a second buffer, which
// is written out coalesced. A comparator that is not a strict weak order can give splits out of
// order: they are clamped so that the shares stay inside their runs and add up to the tile.
extern "C" __global__ void __launch_bounds__(_BLOCK) NAME_merge(const _key_t *__restrict__ keys_in,
        const _val_t *__restrict__ values_in, _key_t *__restrict__ keys_out, _val_t *__restrict__ values_out,
        const unsigned long long n, const unsigned long long w, const unsigned long long *__restrict__ splits) {
    __shared__ __align__(16) unsigned char raw_keys[2 * _TILE * sizeof(_key_t)];
    _key_t *shared_keys = reinterpret_cast<_key_t *>(raw_keys);
#if _HAS_VALUES
    __shared__ __align__(16) unsigned char raw_values[2 * _TILE * sizeof(_val_t)];
    _val_t *shared_values = reinterpret_cast<_val_t *>(raw_values);
#endif
    const unsigned long long start = (unsigned long long)blockIdx.x * _TILE;
    const _pair_of p = _pair_at(start, n, w);
    const unsigned long long stop = n - start < _TILE ? n : start + _TILE;
    const unsigned len = (unsigned)(stop - start);
    // The tile's share of the first run: [i0, i1) of it, and of the second [o0 - i0, ...).
    const unsigned long long i0 = splits[blockIdx.x];
    const unsigned long long i1_found = stop < p.end ? splits[blockIdx.x + 1] : p.mid - p.pair;
    const unsigned long long i1 = i1_found < i0 ? i0 : (i1_found - i0 > len ? i0 + len : i1_found);
    const unsigned a_len = (unsigned)(i1 - i0), b_len = len - a_len;
    const unsigned long long a_from = p.pair + i0, b_from = p.mid + (start - p.pair - i0);
    for (unsigned s = threadIdx.x; s < len; s += _BLOCK) {
        const unsigned long long from = s < a_len ? a_from + s : b_from + (s - a_len);
        shared_keys[s] = keys_in[from];
#if _HAS_VALUES
        shared_values[s] = values_in[from];
#endif
    }
    __syncthreads();
    const unsigned first = threadIdx.x * _ITEMS;
    if (first < len) {
        const unsigned last = len - first < _ITEMS ? len : first + _ITEMS;
        unsigned ia = _co_rank<unsigned>(shared_keys, a_len, shared_keys + a_len, b_len, first);
        unsigned ib = first - ia;
        for (unsigned d = first; d < last; ++d) {
            const bool from_a = ia < a_len && (ib >= b_len || !_less(shared_keys[a_len + ib], shared_keys[ia]));
            const unsigned s = from_a ? ia++ : a_len + ib++;
            shared_keys[_TILE + d] = shared_keys[s];
#if _HAS_VALUES
            shared_values[_TILE + d] = shared_values[s];
#endif
        }
    }
    __syncthreads();
    for (unsigned s = threadIdx.x; s < len; s += _BLOCK) {
        keys_out[start + s] = shared_keys[_TILE + s];
#if _HAS_VALUES
        values_out[start + s] = shared_values[_TILE + s];
#endif
    }
}
"#;

/// A stable merge sort by a C++ comparator over keys of a C++ type the caller names (the
/// counterpart of a Rust type of the same size and layout), with or without values of any
/// plain-data type (moved, never looked at).
pub struct MergeSort {
    name: String,
    key_type: String,
    less: String,
    prelude: String,
    loaded: LoadedTable,
}

impl MergeSort {
    /// A sort named `name` (a C identifier) of keys of the C++ type `key_type` (a built-in type,
    /// or one the prelude declares), ordered by `less`, a C++ `bool` expression of two keys `a`
    /// and `b` that is true when `a` goes before `b` (a strict weak order: equal keys keep their
    /// input order).
    pub fn new(name: &str, key_type: &str, less: &str) -> Result<Self> {
        if !crate::array::kernels::params::is_identifier(name) {
            return Err(Error::InvalidValue(format!(
                "merge sort `{name}`: the name must be a C identifier"
            )));
        }
        if key_type.trim().is_empty() {
            return Err(Error::InvalidValue(format!("merge sort `{name}`: no key type")));
        }
        Ok(MergeSort {
            name: name.to_string(),
            key_type: key_type.to_string(),
            less: less.to_string(),
            prelude: String::new(),
            loaded: LoadedTable::default(),
        })
    }

    /// This sort with device code (types, helper functions) that the key type and `less` use.
    pub fn with_prelude(mut self, prelude: &str) -> Self {
        self.prelude = prelude.to_string();
        self
    }

    /// The CUDA C++ generated for keys of `key_bytes` bytes and values of `value_bytes` (0: no
    /// values): `{name}_block`, `{name}_merge` and `{name}_split`.
    pub fn source_for(&self, key_bytes: usize, value_bytes: usize) -> String {
        let name = format!("merge_sort_{}", self.name);
        let tile = tile_for(key_bytes, value_bytes);
        let mut s = String::new();
        let _ = writeln!(s, "// generated by cuda-core: merge sort `{name}`");
        s.push_str(PRELUDE);
        s.push_str(&self.prelude);
        let _ = write!(
            s,
            "\ntypedef {key} _key_t;\n{value}\n\
             static_assert(sizeof(_key_t) == {key_bytes}, \"the C++ key type's size differs from the Rust key type's\");\n\
             #define _HAS_VALUES {has_values}\n#define _BLOCK {BLOCK}\n#define _TILE {tile}\n\
             __device__ __forceinline__ bool _less(const _key_t &a, const _key_t &b) {{ return static_cast<bool>({less}); }}\n",
            key = self.key_type,
            value = value_type(value_bytes.max(1)),
            has_values = u32::from(value_bytes > 0),
            less = self.less,
        );
        s.push_str(&MERGE_SORT_BODY.replace("NAME", &name));
        s
    }

    fn loaded(&self, stream: &Stream, key_bytes: usize, value_bytes: usize) -> Result<std::sync::Arc<Loaded>> {
        let variant = (key_bytes as u64) << 32 | value_bytes as u64;
        self.loaded.get_or_load(stream.context(), &[], variant, || {
            let name = format!("merge_sort_{}", self.name);
            Ok((
                self.source_for(key_bytes, value_bytes),
                vec![
                    format!("{name}_block"),
                    format!("{name}_merge"),
                    format!("{name}_split"),
                ],
            ))
        })
    }

    /// Sorts the first `n` keys (of `K`, laid out as the C++ key type) of `keys` into the first
    /// `n` of `keys_out`, stably, on `stream`. No host wait; one temporary buffer of `n` keys
    /// from the pool. Buffers too small, overlapping, of another context, or keys over
    /// 64 bytes are [`Error::InvalidValue`]; a C++ key type of another size fails to compile.
    ///
    /// # Safety
    /// `less` (and the prelude) are device code the crate cannot check: they must only compute
    /// with `a` and `b` (no memory access through addresses, no shared state, no undefined
    /// behaviour), and `K` must have the C++ key type's layout. A comparator that is not a
    /// strict weak order leaves the output unspecified (elements repeated or missing), though
    /// every write stays inside the output.
    pub unsafe fn sort_keys<K: DeviceCopy>(
        &self,
        stream: &Stream,
        keys: &impl DeviceMemory,
        keys_out: &mut impl DeviceMemoryMut,
        n: usize,
    ) -> Result<()> {
        let what = "merge sort";
        let mut operands = Operands::new(what, stream);
        let keys_in = operands.input("the keys", keys, bytes_of::<K>(what, n)?)?;
        let out = operands.output("the sorted keys", keys_out, bytes_of::<K>(what, n)?)?;
        // SAFETY: the caller's promise about the comparator and `K`, passed on; the buffers
        // hold `n` keys each (checked), their uses begun.
        unsafe { self.run::<K, u8>(stream, (keys_in, 0), (out, 0), n) }
    }

    /// Sorts the first `n` keys of `keys` with their values (one `V` per key, moved with its
    /// key) into `keys_out` and `values_out`, stably, as [`MergeSort::sort_keys`].
    ///
    /// # Safety
    /// As [`MergeSort::sort_keys`].
    pub unsafe fn sort_pairs<K: DeviceCopy, V: DeviceCopy>(
        &self,
        stream: &Stream,
        (keys, values): (&impl DeviceMemory, &impl DeviceMemory),
        (keys_out, values_out): (&mut impl DeviceMemoryMut, &mut impl DeviceMemoryMut),
        n: usize,
    ) -> Result<()> {
        let what = "merge sort";
        if size_of::<V>() == 0 || size_of::<V>() > MAX_ELEMENT_BYTES {
            return Err(Error::InvalidValue(format!(
                "{what}: values of {} bytes; 1 to {MAX_ELEMENT_BYTES} are supported",
                size_of::<V>()
            )));
        }
        let mut operands = Operands::new(what, stream);
        let keys_in = operands.input("the keys", keys, bytes_of::<K>(what, n)?)?;
        let values_in = operands.input("the values", values, bytes_of::<V>(what, n)?)?;
        let keys_to = operands.output("the sorted keys", keys_out, bytes_of::<K>(what, n)?)?;
        let values_to = operands.output("the sorted values", values_out, bytes_of::<V>(what, n)?)?;
        // SAFETY: as in `sort_keys`, with `n` values in each value buffer.
        unsafe { self.run::<K, V>(stream, (keys_in, values_in), (keys_to, values_to), n) }
    }

    /// Queues the block sort and the merge passes; a value address of 0 means no values.
    ///
    /// # Safety
    /// The comparator only computes with its keys; the addresses hold `n` keys (and `n` values
    /// when not 0) of `K` (and `V`), the outputs disjoint from the inputs, in `stream`'s order.
    unsafe fn run<K: DeviceCopy, V: DeviceCopy>(
        &self,
        stream: &Stream,
        (keys, values): (CUdeviceptr, CUdeviceptr),
        (keys_out, values_out): (CUdeviceptr, CUdeviceptr),
        n: usize,
    ) -> Result<()> {
        let key_bytes = size_of::<K>();
        if key_bytes == 0 || key_bytes > MAX_ELEMENT_BYTES {
            return Err(Error::InvalidValue(format!(
                "merge sort: keys of {key_bytes} bytes; 1 to {MAX_ELEMENT_BYTES} are supported"
            )));
        }
        let value_bytes = if values == 0 { 0 } else { size_of::<V>() };
        if n == 0 {
            return Ok(());
        }
        let loaded = self.loaded(stream, key_bytes, value_bytes)?;
        let tile = tile_for(key_bytes, value_bytes) as u64;
        let n64 = n as u64;
        let passes = merge_passes(n64, tile);
        let pool = MemoryPool::for_context(stream.context());
        let temp_keys = pool.alloc(stream, bytes_of::<K>("merge sort", n)?)?;
        let temp_values = match value_bytes {
            0 => None,
            _ => Some(pool.alloc(stream, bytes_of::<V>("merge sort", n)?)?),
        };
        let temp = (temp_keys.ptr(), temp_values.as_ref().map_or(0, |block| block.ptr()));
        let out = (keys_out, values_out);
        // The block sort writes where an even number of passes later ends in the output.
        let mut from = if passes % 2 == 0 { out } else { temp };
        let tiles = super::tile_grid(n64.div_ceil(tile))?;
        let mut block = Launch::on(stream);
        block.value(keys).value(values).value(from.0).value(from.1).value(n64);
        // SAFETY: `_block(keys_in, values_in, keys_out, values_out, n)`: block b reads and
        // writes the elements [b * tile, min(n, (b + 1) * tile)) of buffers of `n` keys (and
        // values, when the code has them), its shared buffers sized for `tile` (the constant
        // it was compiled with).
        unsafe { block.run(&loaded.functions[0], (tiles, 1), (BLOCK, 1))? };
        let split_grid = grid_for(u64::from(tiles), BLOCK, loaded.sm_count, 8);
        let splits = match passes {
            0 => None,
            _ => Some(pool.alloc(stream, bytes_of::<u64>("merge sort", tiles as usize)?)?),
        };
        let mut width = tile;
        for _ in 0..passes {
            let to = if from == out { temp } else { out };
            let splits = splits.as_ref().map_or(0, |block| block.ptr());
            let mut split = Launch::on(stream);
            split
                .value(from.0)
                .value(n64)
                .value(width)
                .value(splits)
                .value(u64::from(tiles));
            // SAFETY: `_split(keys_in, n, w, splits, tiles)` reads keys below n (binary searches
            // inside each pair of runs) and writes splits[t] for t < tiles (the `tiles` u64 of
            // the pool block).
            unsafe { split.run(&loaded.functions[2], (split_grid, 1), (BLOCK, 1))? };
            let mut merge = Launch::on(stream);
            merge
                .value(from.0)
                .value(from.1)
                .value(to.0)
                .value(to.1)
                .value(n64)
                .value(width)
                .value(splits);
            // SAFETY: `_merge(keys_in, values_in, keys_out, values_out, n, w, splits)`: block b
            // reads splits[b] and splits[b + 1] (below `tiles`), then elements of its pair of
            // runs (the splits clamped inside them, below n), and writes the output tile
            // [b * tile, min(n, (b + 1) * tile)); `from` and `to` are the output and the
            // temporary buffers, n elements each, apart; its shared buffers are sized for
            // `tile` (the constant it was compiled with). Width is a multiple of the tile.
            unsafe { merge.run(&loaded.functions[1], (tiles, 1), (BLOCK, 1))? };
            from = to;
            width = width.saturating_mul(2);
        }
        // Back to the pool in `stream`'s order, after every pass.
        drop((temp_keys, temp_values));
        Ok(())
    }
}

impl std::fmt::Debug for MergeSort {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MergeSort")
            .field("name", &self.name)
            .field("key_type", &self.key_type)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tiles_fit_shared_memory_and_passes_cover_the_input() {
        assert_eq!(tile_for(4, 0), 2048);
        assert_eq!(tile_for(8, 8), 1024);
        assert_eq!(tile_for(64, 64), 128);
        for (k, v) in [(1, 0), (4, 4), (16, 8), (64, 64)] {
            assert!(2 * tile_for(k, v) * (k + v) <= SHARED_BYTES);
        }
        assert_eq!(merge_passes(1, 2048), 0);
        assert_eq!(merge_passes(2048, 2048), 0);
        assert_eq!(merge_passes(2049, 2048), 1);
        assert_eq!(merge_passes(1 << 20, 1024), 10);
        assert_eq!(merge_passes((1 << 31) + 1, 2048), 21);
    }

    #[test]
    fn bad_names_and_key_types_are_errors() {
        assert!(MergeSort::new("1st", "float", "a < b").is_err());
        assert!(MergeSort::new("ok", "  ", "a < b").is_err());
        assert!(MergeSort::new("ok", "float", "a < b").is_ok());
        assert_eq!(value_type(12), "struct _val_t { unsigned char b[12]; };");
        assert_eq!(value_type(16), "struct _val_t { unsigned long long w[2]; };");
    }
}
