//! Radix sort on device memory: keys, key-value pairs, `argsort` (the permutation), and sorts of
//! the rows of a row-major matrix, for every element type (`bool`, the integers, `f16`, `bf16`,
//! `f32`, `f64`, `Complex<f32>`, `Complex<f64>`), ascending or descending.
//!
//! The order is NumPy's: integers by value; floats by value with `-0.0` equal to `0.0` and every
//! NaN after `+inf`; complex values lexicographically (real part, then imaginary part) among
//! those without NaN, then `R + nanj` by real part, `nan + Rj` by imaginary part, and
//! `nan + nanj` last (NumPy's documented `R + Rj < R + nanj < nan + Rj < nan + nanj`). A
//! complex key sorts as one integer of twice a part's width: the two parts' order-preserving
//! bits, or for a NaN pattern a high word above every number's and the other part's bits. The sort is stable: equal keys (and `-0.0` beside `0.0`, and NaNs among
//! themselves) keep their input order, as NumPy's `kind="stable"` does. [`SortOrder::Descending`]
//! is the exact reverse order (NaN first, as `torch.sort(descending=True)`), still stable.
//!
//! How: a least-significant-digit radix sort over 8-bit digits of the key's bits mapped so that
//! unsigned order is the order above (`keys.cuh`), one pass per byte of the key, "onesweep": one
//! histogram kernel counts the digits of every pass on the key's bytes in one read of the keys (a
//! pass only permutes them), one small kernel turns each pass's counts into where each digit
//! starts, and each pass is then one kernel that reads and writes each element once. Its blocks
//! take tiles of 4096 elements (5120 in sorts from 2^23 elements of up to 4-byte keys and payloads,
//! 2048 with 16-byte ones) in order from a counter; each warp ranks its part of the tile (16
//! elements a lane, 20 or 8) item by item, lanes of equal digits matched by one ballot per digit
//! bit and counted on a row of digit counters of the warp's own in shared memory, whose prefixes
//! over the warps and the digits place each element. The block publishes its tile's count of each
//! digit, and learns where each of its digits goes by a decoupled look-back: the counts of the
//! tiles before it, read four tiles a round trip, up to the nearest tile that has published where
//! its digits end (tile 0 starts from the histogram's). It stages the tile in shared memory in
//! digit order (its keys, then its payloads, through one buffer), and writes it out from there so
//! that consecutive threads write consecutive positions of each digit's run (about 16 per digit and
//! tile on uniform bytes). Passes ping-pong between the output and one scratch buffer from the
//! pool, so the inputs are never written. Passes on the rows or segments (and `unique`'s pass)
//! count their digits in a histogram of their own before they run. Rows of up to 2048 keys (and
//! `argsort` of up to 2048 keys) are sorted inside one block instead (2048 / the row's padded
//! length rows at a time): a bitonic network over (key, position) pairs, which is stable because
//! the position breaks ties, reading and writing each key once; keys of up to 4 bytes make each
//! pair one 8-byte word (the key's bits above the position), compared at once. Each thread holds
//! N consecutive slots in registers (16 for keys of up to 4 bytes, 8 for wider ones): the steps
//! between slots under N apart run in the thread, under 32 N apart by warp shuffles, and only the
//! longer ones through shared memory; each group of rows is a block of its own. A longer row sort
//! is a stable sort by key followed by stable passes on the row of each element's flat index
//! (`ceil(log2(rows) / 8)` passes), which keeps each row's order.
//!
//! A pass on a byte that every key has alike moves nothing, and is skipped with no host wait:
//! the kernel that turns the histogram into starts sees one digit holding every key and sets
//! the pass's bit in a skip word, which the later passes read on the device; there the pass's
//! kernel returns at once. As the host no longer knows which passes run, every pass kernel is
//! given all the candidate buffers (the input, the scratch, the staging buffer: the output or a
//! second scratch where the output is not wanted, and the output) and picks, from how many
//! passes run after it, which it reads and writes, so that the last pass that runs writes the
//! output and the others alternate before it. The first pass always runs. With `i64` indices
//! out, a pass that may be the last to run is queued as both scatters, each returning at once
//! unless it is the one wanted. The passes on the rows or segments (and `unique`'s pass) always
//! run, unless a segmented sort's own kernel sorted every segment before the sort (see
//! [`segmented_sort_keys`]): it leaves a bit of the skip word set, and every pass returns at once.
//!
//! The sorts that carry flat indices (`argsort`, the long row sorts, segmented sorts) carry them
//! as `u32` up to `u32::MAX` elements (`u64` beyond): the first pass generates them (no iota
//! is read) and the last pass that runs writes them to the caller's `i64` output, taken within
//! their row for a row sort; a last pass whose sorted keys (or indices) nobody wants does not
//! write them.
//!
//! Everything is queued on the stream given, with no host wait; scratch memory comes from the
//! context's [`MemoryPool`](crate::MemoryPool), ordered on that stream: the look-back's status
//! words take 1 KiB per tile (2 KiB from 2^30 elements), a sixteenth of 4-byte keys. Offsets and
//! status words are 32-bit below 2^30 elements (a status word keeps two bits for its flag) and
//! 64-bit from there.

mod segmented;

use std::sync::Arc;

use cuda_driver::{Access, DeviceMemory, DeviceMemoryMut, Stream, StreamUse};
use cuda_sys::driver::CUdeviceptr;

use crate::array::device_array::DeviceArray;
use crate::array::dtype::{DType, Element};
use crate::array::kernels::launch::Launch;
use crate::array::kernels::registry::{grid_for, kernel, KernelKey, Loaded, LoadedTable};
use crate::array::kernels::signature::ArgType;
use crate::array::kernels::PRELUDE;
use crate::error::{Error, Result};

use super::WARP_PEERS;

pub use segmented::{segmented_sort_keys, segmented_sort_pairs};

/// The order-preserving key map shared with the searches.
const KEYS: &str = include_str!("keys.cuh");
/// The sort's kernels.
const SORT: &str = include_str!("sort.cuh");

/// Threads per block of the count and scatter kernels (one per digit value).
const SORT_BLOCK: u32 = 256;
/// Resident blocks per SM the scatter's registers are bounded for (`SORT_BLOCKS_PER_SM` in
/// `sort.cuh`, its `__launch_bounds__`): 3 of 256 threads leave each thread 80 registers,
/// enough for its 16 keys and their ranks; the scatter's shared memory, at most 42 KiB a block
/// (8-byte keys and payloads, 64-bit offsets), would allow 5.
const SORT_BLOCKS_PER_SM: u32 = 3;
/// Resident histogram blocks per SM its grid is sized to and its registers bounded for
/// (`HISTOGRAM_BLOCKS_PER_SM` in `sort.cuh`): 5 of 256 threads, up to 51 registers each; its
/// counters take at most 32 KiB a block.
const HISTOGRAM_BLOCKS_PER_SM: u32 = 5;
/// Elements a histogram block reads per round (`SORT_BLOCK` threads, up to 16 a thread).
const HISTOGRAM_ROUND: u32 = SORT_BLOCK * 16;
/// Threads per block of the grid-stride helpers (identity, gather).
const HELPER_BLOCK: u32 = 256;
/// The skip word's bit that makes every pass of a sort return at once (`SORT_DONE` in
/// `sort.cuh`): set where a segmented sort's segments were all sorted before it.
const SORT_DONE: u32 = 0x8000_0000;

/// The direction of a sort.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum SortOrder {
    /// Smallest first, NaN last (NumPy's order).
    #[default]
    Ascending,
    /// Largest first, NaN first: the reverse of [`Ascending`](Self::Ascending), ties stable.
    Descending,
}

/// The CUDA C++ that defines `K`, `U`, `key_bits` and `unique_bits` for keys of `key` (see
/// `keys.cuh`).
pub(crate) fn key_header(key: DType, order: SortOrder) -> String {
    let descending = u8::from(order == SortOrder::Descending);
    // Integers convert to the unsigned type of their width modulo 2^bits: their own bits.
    let (bits, kind, inf, to_bits): (&str, u8, u64, &str) = match key {
        // A `Bool` byte other than 0 and 1 is true, as everywhere in the crate.
        DType::Bool => ("unsigned char", 0, 0, "(U)((k) != 0)"),
        DType::U8 => ("unsigned char", 0, 0, "(U)(k)"),
        DType::U16 => ("unsigned short", 0, 0, "(U)(k)"),
        DType::U32 => ("unsigned int", 0, 0, "(U)(k)"),
        DType::U64 => ("unsigned long long", 0, 0, "(U)(k)"),
        DType::I8 => ("unsigned char", 1, 0, "(U)(k)"),
        DType::I16 => ("unsigned short", 1, 0, "(U)(k)"),
        DType::I32 => ("unsigned int", 1, 0, "(U)(k)"),
        DType::I64 => ("unsigned long long", 1, 0, "(U)(k)"),
        DType::F16 => ("unsigned short", 2, 0x7c00, "(U)(k).bits"),
        DType::BF16 => ("unsigned short", 2, 0x7f80, "(U)(k).bits"),
        DType::F32 => ("unsigned int", 2, 0x7f80_0000, "__float_as_uint(k)"),
        DType::F64 => (
            "unsigned long long",
            2,
            0x7ff0_0000_0000_0000,
            "(U)__double_as_longlong(k)",
        ),
        // Complex keys: two words of part bits (see `keys.cuh`).
        DType::C64 => return complex_header(key, ("unsigned long long", "unsigned int"), 0x7f80_0000, order),
        DType::C128 => {
            let words = ("cuda_core_key128", "unsigned long long");
            return complex_header(key, words, 0x7ff0_0000_0000_0000, order);
        }
    };
    // `Bool` keys are read as bytes (a byte other than 0 or 1 is not a valid C++ `bool`).
    let key_type = match key {
        DType::Bool => "unsigned char",
        other => other.c_name(),
    };
    format!(
        "{PRELUDE}typedef {key_type} K;\ntypedef {bits} U;\n#define KEY_BITS(k) {to_bits}\n#define KIND {kind}\n#define INF_BITS {inf}ull\n#define DESCENDING {descending}\n{KEYS}",
    )
}

/// [`key_header`] for complex keys of `key`: `U` and `C` (`bits`, `part`: the key's bits and a
/// part's), a part's `+inf` as bits.
fn complex_header(key: DType, (bits, part): (&str, &str), inf: u64, order: SortOrder) -> String {
    format!(
        "{PRELUDE}typedef {} K;\nstruct cuda_core_key128;\ntypedef {bits} U;\ntypedef {part} C;\n#define KIND 3\n#define WIDE_KEY {}\n#define INF_BITS {inf}ull\n#define DESCENDING {}\n{KEYS}",
        key.c_name(),
        u8::from(key == DType::C128),
        u8::from(order == SortOrder::Descending),
    )
}

/// The unsigned type that moves a payload of `bytes` bytes.
/// (1, 2, 4, 8 or 16: an element type's size; 16, a complex128, as two 8-byte words).
fn payload_type(bytes: usize) -> &'static str {
    match bytes {
        1 => "unsigned char",
        2 => "unsigned short",
        4 => "unsigned int",
        8 => "unsigned long long",
        _ => "cuda_core_payload16",
    }
}

/// What a sort moves with its keys.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Payload {
    /// Nothing: the keys alone.
    None,
    /// Values of this many bytes (1, 2, 4, 8 or 16: an element type's size).
    Values(usize),
    /// The keys' flat indices, `u32` each (`u64` when [`wide`]), generated by the first pass.
    Indices,
}

/// Whether `len` elements take 64-bit flat indices (more than `u32::MAX`).
fn wide(len: usize) -> bool {
    u32::try_from(len).is_err()
}

/// Whether `len` elements take 64-bit offsets and look-back status words: from 2^30, as a
/// 32-bit status word keeps 30 bits for its count.
fn wide_offsets(len: usize) -> bool {
    len >= 1 << 30
}

/// The fewest elements whose sort takes the longer tiles (20 items a thread where keys and
/// payloads take at most 4 bytes, `SORT_LONG_TILES` in `sort.cuh`): 2^23 elements are 1639
/// such tiles, four rounds of an H100's 396 resident scatter blocks. Shorter sorts keep 16
/// items, whose more tiles fill more of the GPU (2^20 keys are 205 tiles of 5120, 256 of 4096:
/// searchsorted's sort of 2^20 queries took 4 % longer with the longer tiles, H100).
const LONG_TILES_MIN: usize = 1 << 23;

/// The integer widths and the tile length the code for a sort of `len` elements is generated
/// with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Widths {
    /// 64-bit offsets and status words ([`wide_offsets`]).
    offsets: bool,
    /// 64-bit flat indices ([`wide`]).
    indices: bool,
    /// The longer tiles of up to 4-byte keys and payloads ([`LONG_TILES_MIN`]).
    long_tiles: bool,
}

impl Widths {
    fn of(len: usize) -> Widths {
        Widths {
            offsets: wide_offsets(len),
            indices: wide(len),
            long_tiles: len >= LONG_TILES_MIN,
        }
    }

    /// The bytes of an offset or status word.
    fn offset_bytes(self) -> usize {
        if self.offsets {
            8
        } else {
            4
        }
    }
}

/// The bytes of `len` flat indices as a sort carries them: `u32` each, `u64` when [`wide`].
fn index_bytes(what: &str, len: usize) -> Result<usize> {
    match wide(len) {
        true => bytes_of::<u64>(what, len),
        false => bytes_of::<u32>(what, len),
    }
}

/// The CUDA C++ of the sort kernels for keys of `key` carrying `payload`, offsets and flat
/// indices as `widths` says.
fn source(key: DType, payload: Payload, widths: Widths, order: SortOrder) -> String {
    let word = |wide: bool| match wide {
        true => "unsigned long long",
        false => "unsigned int",
    };
    let mut s = format!("// generated by cuda-core: radix sort of {key}, {order:?}, payload {payload:?}\n");
    s.push_str(&key_header(key, order));
    s.push_str(WARP_PEERS);
    s.push_str(&format!("#define SORT_BLOCKS_PER_SM {SORT_BLOCKS_PER_SM}\n"));
    s.push_str(&format!("#define HISTOGRAM_BLOCKS_PER_SM {HISTOGRAM_BLOCKS_PER_SM}\n"));
    s.push_str(&format!("#define SORT_LONG_TILES {}\n", u8::from(widths.long_tiles)));
    s.push_str(&format!(
        "#define ROWS_ITEMS {}\n#define ROW_PACKED {}\n",
        ROW_SORT_MAX as u32 / rows_threads(key),
        u8::from(narrow_row_keys(key))
    ));
    s.push_str(&format!(
        "typedef {} O;\ntypedef {} I;\n",
        word(widths.offsets),
        word(widths.indices)
    ));
    match payload {
        Payload::None => s.push_str("#define PAIRS 0\n#define INDICES 0\n"),
        Payload::Values(bytes) => s.push_str(&format!(
            "struct cuda_core_payload16 {{ unsigned long long lo, hi; }};\ntypedef {} V;\n#define PAIRS 1\n#define INDICES 0\n",
            payload_type(bytes)
        )),
        Payload::Indices => s.push_str("typedef I V;\n#define PAIRS 1\n#define INDICES 1\n"),
    }
    s.push_str(SORT);
    s
}

/// The entry points of [`source`] for every payload, in the order of [`Loaded::functions`];
/// with [`Payload::Indices`], [`SCATTER_INDICES`] after them.
const ENTRIES: [&str; 9] = [
    "cuda_core_sort_histogram",
    "cuda_core_sort_starts",
    "cuda_core_sort_scatter",
    "cuda_core_sort_identity",
    "cuda_core_sort_rows_block",
    "cuda_core_sort_label_segments",
    "cuda_core_sort_gather",
    "cuda_core_sort_segments",
    "cuda_core_sort_segments_block",
];
const HISTOGRAM: usize = 0;
const STARTS: usize = 1;
const SCATTER: usize = 2;
const IDENTITY: usize = 3;
const ROWS_BLOCK: usize = 4;
const LABEL_SEGMENTS: usize = 5;
const GATHER: usize = 6;
const SEGMENTS: usize = 7;
const SEGMENTS_BLOCK: usize = 8;
/// The scatter writing flat indices as `i64` (only with [`Payload::Indices`]).
const SCATTER_INDICES: usize = 9;

/// The entry points of [`source`] for `payload`.
fn entries(payload: Payload) -> Vec<String> {
    let mut names: Vec<String> = ENTRIES.iter().map(|e| e.to_string()).collect();
    if payload == Payload::Indices {
        names.push("cuda_core_sort_scatter_indices".to_string());
    }
    names
}
/// The longest row sorted inside one block (`ROW_SORT_MAX` in `sort.cuh`).
const ROW_SORT_MAX: usize = 2048;
/// Threads of a block of a segmented sort's warp kernel (`ROW_SORT_BLOCK` in `sort.cuh`), 8
/// slots each: a warp sorts a segment of up to 256.
const ROW_SORT_BLOCK: u32 = 256;

/// Whether keys of `key` sort rows as one 8-byte word a slot, the key's bits above its position
/// (`ROW_PACKED` in `sort.cuh`): keys of up to 4 bytes.
fn narrow_row_keys(key: DType) -> bool {
    key.size() <= 4
}

/// Threads of a block that sorts rows of keys of `key` (`ROWS_THREADS` in `sort.cuh`): 16 slots a
/// thread for keys of up to 4 bytes, 8 for wider ones. On an H100 (2^16 rows of 2^10 f32), 8
/// slots a thread as (key, position) pairs sorted 34.0 Gkeys/s, 16 pairs 36.9, 8 packed words
/// 38.3, 16 packed words 39.7, and 42.4 with registers bounded for 8 blocks an SM.
fn rows_threads(key: DType) -> u32 {
    match narrow_row_keys(key) {
        true => ROW_SORT_BLOCK / 2,
        false => ROW_SORT_BLOCK,
    }
}
/// Resident blocks per SM the grid of a segmented sort's warp kernel is sized to.
const ROW_SORT_BLOCKS_PER_SM: u32 = 8;

/// The loaded code of the sort family (one registry entry; code per key type and variant).
#[derive(Default)]
struct SortKernels {
    loaded: LoadedTable,
}

/// The sort's code for keys of `key` in `stream`'s context.
fn load(stream: &Stream, key: DType, payload: Payload, widths: Widths, order: SortOrder) -> Result<Arc<Loaded>> {
    let kernels = kernel(KernelKey::Named("cuda_core_sort"), || Ok(SortKernels::default()))?;
    // Values of up to 16 bytes, or 32 for the flat indices.
    let payload_code: u64 = match payload {
        Payload::None => 0,
        Payload::Values(bytes) => bytes as u64,
        Payload::Indices => 32,
    };
    let variant = payload_code << 4
        | u64::from(widths.long_tiles) << 3
        | u64::from(widths.offsets) << 2
        | u64::from(widths.indices) << 1
        | u64::from(order == SortOrder::Descending);
    kernels
        .loaded
        .get_or_load(stream.context(), &[ArgType::Array(key)], variant, || {
            Ok((source(key, payload, widths, order), entries(payload)))
        })
}

/// How a pass finds an element's digit (`digit_of` in `sort.cuh`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Digits {
    /// The key's 8 bits from `shift`.
    Key(u32),
    /// Whether the key differs from its predecessor (first) or equals it (second): unique.
    Distinct,
    /// The 8 bits from `shift` of the row (of `row_len`) of the payload's flat index.
    Row(u32, u64),
    /// The 8 bits from `shift` of the label (a flat index, as carried, at the address given) of
    /// the payload's flat index: the segment it belongs to, for segmented sorts.
    Segment(u32, CUdeviceptr),
}

/// What a sort orders by after the key, stably: the key's ties broken by nothing, or (the
/// payload being the flat indices) by the row of `row_len` elements or the segment label of
/// each element's flat index, so that rows or segments stay apart.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Then {
    Nothing,
    Rows(usize),
    /// The labels: a flat index (as carried) per element, each below the element count; and the
    /// sort's skip word (a `u32`, zeroed or [`SORT_DONE`] before the sort), which a pass before
    /// the sort may leave with `SORT_DONE` set: the output is written, and every pass returns.
    Segments {
        labels: CUdeviceptr,
        skip: CUdeviceptr,
    },
}

/// A sort to queue: sizes and the addresses of its buffers, checked by the public functions.
struct Job {
    key: DType,
    payload: Payload,
    order: SortOrder,
    len: usize,
    keys_in: CUdeviceptr,
    /// Null where only the payload is wanted (with [`Payload::Indices`]).
    keys_out: CUdeviceptr,
    /// The payload in (null for [`Payload::Indices`]: generated) and out (null where only the
    /// keys are wanted), if any.
    values: Option<(CUdeviceptr, CUdeviceptr)>,
    /// For [`Payload::Indices`] written as `i64` (the caller's output): the row length they are
    /// taken within (0: flat indices). None: written as carried.
    indices_i64: Option<u64>,
}

/// The passes of a sort of `len` keys of `key_bytes` bytes, then of the rows or segments.
fn passes(key_bytes: usize, len: usize, then: Then) -> Vec<Digits> {
    let mut passes: Vec<Digits> = (0..key_bytes as u32).map(|byte| Digits::Key(8 * byte)).collect();
    // The bits of the largest row number or label.
    let bits = |largest: u64| (64 - largest.leading_zeros()).div_ceil(8);
    match then {
        Then::Nothing | Then::Rows(0) => {}
        Then::Rows(row_len) => {
            let rows = (len / row_len) as u64;
            passes.extend((0..bits(rows.saturating_sub(1))).map(|byte| Digits::Row(8 * byte, row_len as u64)));
        }
        Then::Segments { labels, .. } => {
            let largest = (len as u64).saturating_sub(1);
            passes.extend((0..bits(largest)).map(|byte| Digits::Segment(8 * byte, labels)));
        }
    }
    passes
}

/// The launch geometry of a sort's passes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Geometry {
    /// Tiles of the scatter: one block each.
    tiles: u32,
    /// Blocks of the histogram (striding over the elements).
    histogram_grid: u32,
}

impl Geometry {
    /// The geometry of a sort of `len` (at least 1) keys of `key` carrying `payload`.
    fn of(sm_count: u32, key: DType, payload: Payload, widths: Widths, len: usize) -> Result<Geometry> {
        let tiles = len.div_ceil(tile_len(key, payload, widths));
        let tiles = u32::try_from(tiles)
            .map_err(|_| Error::InvalidValue(format!("sort: {len} elements take more than 2^32 tiles")))?;
        let histogram_grid = grid_for(len as u64, HISTOGRAM_ROUND, sm_count, HISTOGRAM_BLOCKS_PER_SM);
        Ok(Geometry { tiles, histogram_grid })
    }

    /// The bytes of a pass's look-back: a 16-byte tile counter, then 256 status words a tile.
    fn lookback_bytes(self, widths: Widths) -> usize {
        16 + self.tiles as usize * 256 * widths.offset_bytes()
    }
}

/// Elements a scatter block moves (`SORT_TILE` in `sort.cuh`): 20 a thread where the key and the
/// payload take at most 4 bytes and the tiles are long ([`LONG_TILES_MIN`]), 16 where one takes
/// 8 (or the tiles are short), 8 where one takes 16.
fn tile_len(key: DType, payload: Payload, widths: Widths) -> usize {
    let payload_bytes = match payload {
        Payload::None => 0,
        Payload::Values(bytes) => bytes,
        Payload::Indices if widths.indices => 8,
        Payload::Indices => 4,
    };
    let items = match key.size().max(payload_bytes) {
        9.. => 8,
        ..=4 if widths.long_tiles => 20,
        _ => 16,
    };
    SORT_BLOCK as usize * items
}

/// The buffers the passes of a sort move the keys and payloads between (the payload's `None`:
/// no payload), and how the last pass writes them. Each pass finds on the device which it reads
/// and writes (`plan_pass` in `sort.cuh`): pass 0 reads `in`, and the passes that run alternate
/// between `alternate` and `staging` so that the last of them writes `out`.
struct Buffers {
    /// Keys and payload in; the payload null where the first pass generates the flat indices.
    input: (CUdeviceptr, Option<CUdeviceptr>),
    /// Scratch keys and payload (null where no pass can write them).
    alternate: (CUdeviceptr, Option<CUdeviceptr>),
    /// The output, or scratch where the output is not wanted (null where no pass can write it).
    staging: (CUdeviceptr, Option<CUdeviceptr>),
    /// Keys and payload out; either null where nobody wants it (written only by the last pass).
    out: (CUdeviceptr, Option<CUdeviceptr>),
    /// The payload being flat indices written to `out` as `i64`: the row length they are taken
    /// within (0: flat), by the `cuda_core_sort_scatter_indices` kernel.
    indices_i64: Option<u64>,
}

/// Which pass of a sort a launch queues, and its scratch.
#[derive(Clone, Copy, Debug)]
struct PassOf {
    /// The pass, from 0.
    pass: u32,
    /// The sort's passes.
    passes: u32,
    /// The passes on the key's bytes, first: from pass 1 on, one whose byte is the same in every
    /// key is skipped.
    key_passes: u32,
    /// The skip word (a `u32`, zeroed before the sort, or for segmented sorts perhaps
    /// [`SORT_DONE`]) in which the first pass's starts kernel marks the key passes to skip; 0:
    /// no pass is skipped.
    skip: CUdeviceptr,
    /// The digit counts of every pass: `256 * passes` offsets, zeroed before the sort.
    counts: CUdeviceptr,
    /// Where each digit of every pass starts: `256 * passes` offsets, written by the starts
    /// kernel.
    starts: CUdeviceptr,
    /// The pass's look-back ([`Geometry::lookback_bytes`]), zeroed here before each pass.
    lookback: CUdeviceptr,
}

/// Queues one pass: its digit counts and their starts where it needs them (the first pass on
/// the key counts every key pass; a pass on rows, segments or distinct keys its own), then the
/// scatter between `buffers`.
fn queue_pass(
    stream: &Stream,
    loaded: &Loaded,
    (geometry, widths): (Geometry, Widths),
    len: usize,
    digits: Digits,
    buffers: &Buffers,
    of: PassOf,
) -> Result<()> {
    let (mode, shift, row_len, labels): (i32, u32, u64, CUdeviceptr) = match digits {
        Digits::Key(shift) => (0, shift, 1, 0),
        Digits::Distinct => (1, 0, 1, 0),
        Digits::Row(shift, row_len) => (2, shift, row_len, 0),
        Digits::Segment(shift, labels) => (3, shift, 1, labels),
    };
    let n = len as u64;
    let payload = |side: (CUdeviceptr, Option<CUdeviceptr>)| side.1.unwrap_or(0);
    let counted = match digits {
        Digits::Key(_) if of.pass == 0 => Some((0, of.key_passes, of.skip)),
        Digits::Key(_) => None,
        _ => Some((of.pass, 1, 0)),
    };
    if let Some((first, count, skip)) = counted {
        let mut histogram = Launch::on(stream);
        histogram
            .value(buffers.input.0)
            .value(buffers.alternate.0)
            .value(buffers.staging.0)
            .value(payload(buffers.alternate))
            .value(payload(buffers.staging))
            .value(labels)
            .value(of.counts)
            .value(of.skip)
            .value(of.pass)
            .value(of.passes)
            .value(of.key_passes)
            .value(n)
            .value(mode)
            .value(shift)
            .value(row_len);
        // SAFETY: cuda_core_sort_histogram(keys_in, keys_alternate, keys_staging, rows_alternate,
        // rows_staging, labels, counts, skip, pass, passes, key_passes, n, mode, shift, row_len):
        // a pass that runs reads, of the one source plan_pass picks (`keys_in` for pass 0; for a
        // later pass the scratch or staging buffer an earlier pass of this sort wrote, each `len`
        // keys and payloads), keys[0..n] (and in a row or segment pass the payload, then `len`
        // flat indices of the index type the code was generated with: those passes come after
        // pass 0), in a segment pass labels at those indices (clamped below n, inside the `len`
        // labels of that type), and adds to counts[p * 256 + d] for the key passes p <
        // key_passes (mode 0, pass 0) or p = pass, inside the 256 * passes offsets of `counts`;
        // it reads the skip word (where not null).
        unsafe {
            histogram.run(
                &loaded.functions[HISTOGRAM],
                (geometry.histogram_grid, 1),
                (SORT_BLOCK, 1),
            )?
        };
        let mut starts = Launch::on(stream);
        starts
            .value(of.counts)
            .value(of.starts)
            .value(skip)
            .value(first)
            .value(count)
            .value(n);
        // SAFETY: cuda_core_sort_starts(counts, starts, skip, pass, count, n) reads
        // counts[p * 256 + d] and writes starts[p * 256 + d] for p in [first, first + count),
        // inside the 256 * passes offsets of each (first + count <= passes), and ORs into the
        // skip word where it is not null.
        unsafe { starts.run(&loaded.functions[STARTS], (1, 1), (SORT_BLOCK, 1))? };
    }
    let (lookback, lookback_bytes) = (of.lookback, geometry.lookback_bytes(widths));
    // SAFETY: the look-back scratch holds `lookback_bytes` (a multiple of 4) bytes; the memset is
    // queued on the stream its scratch is ordered on.
    unsafe { stream.memset_d32_raw_async(lookback, 0, lookback_bytes / 4)? };
    let starts = of.starts + u64::from(of.pass) * 256 * widths.offset_bytes() as CUdeviceptr;
    // With `i64` flat indices out, the last pass that runs is written by the indices scatter: the
    // sort's last pass, or any pass of the key where only skipped key passes may follow.
    let may_be_last = of.pass + 1 == of.passes || (of.skip != 0 && of.key_passes == of.passes);
    let launches: &[(usize, bool)] = match buffers.indices_i64 {
        None => &[(SCATTER, false)],
        Some(_) if of.pass + 1 == of.passes => &[(SCATTER_INDICES, true)],
        Some(_) if may_be_last => &[(SCATTER, true), (SCATTER_INDICES, true)],
        Some(_) => &[(SCATTER, true)],
    };
    for &(entry, defer_last) in launches {
        let mut scatter = Launch::on(stream);
        scatter
            .value(buffers.input.0)
            .value(buffers.alternate.0)
            .value(buffers.staging.0)
            .value(buffers.out.0);
        if let Some(values_in) = buffers.input.1 {
            scatter
                .value(values_in)
                .value(payload(buffers.alternate))
                .value(payload(buffers.staging))
                .value(payload(buffers.out));
        }
        if entry == SCATTER_INDICES {
            scatter.value(buffers.indices_i64.unwrap_or(0));
        }
        scatter
            .value(labels)
            .value(starts)
            .value(lookback)
            .value(of.skip)
            .value(of.pass)
            .value(of.passes);
        if entry == SCATTER {
            scatter.value(i32::from(defer_last));
        }
        scatter.value(n).value(mode).value(shift).value(row_len);
        // SAFETY: cuda_core_sort_scatter(keys_in, keys_alternate, keys_staging, keys_out,
        // [values_in, values_alternate, values_staging, values_out,] labels, starts, lookback,
        // skip, pass, passes, defer_last, n, mode, shift, row_len), the payload pointers present
        // exactly when the code was generated with PAIRS (`input.1` is Some exactly when the job
        // has a payload, which loads that code), or cuda_core_sort_scatter_indices(keys_in,
        // keys_alternate, keys_staging, keys_out, values_in, values_alternate, values_staging,
        // indices_out, index_row_len, labels, starts, lookback, skip, pass, passes, n, ...),
        // launched only with `indices_i64`, which is only set with `Payload::Indices` (that code
        // has the entry). A pass that runs has one block per tile of the elements
        // (`geometry.tiles`, of the tile the code was generated with: `tile_len`); block b reads
        // the tile counter and the status words of tiles before its own and writes its own
        // (inside the look-back's `lookback_bytes`, zeroed above), tile 0 reads the pass's 256
        // starts (inside `starts`). It reads, from the source plan_pass picks, what the
        // histogram read (a null values_in: flat indices generated, not read), and writes each
        // element once at its digit's start plus its rank among the equal digits before it, a
        // permutation of 0..n, into the destination plan_pass picks: the scratch or staging
        // buffers (`len` keys and payloads, allocated by `queue_sort` wherever a pass can write
        // them) or the output (`len` elements each, `len` i64 for indices_out; a null output is
        // not written). The plain scatter of an `i64` output's sort (defer_last) never writes
        // the output; the indices scatter writes only it.
        unsafe { scatter.run(&loaded.functions[entry], (geometry.tiles, 1), (SORT_BLOCK, 1))? };
    }
    Ok(())
}

/// Queues the sort of `job`: stably by key, then as `then` says (the payload then being the flat
/// indices). The passes on the key's bytes from the second on are skipped on the device where
/// every key has the same byte there (the first pass's histogram and starts kernel find which).
fn queue_sort(stream: &Stream, job: &Job, then: Then) -> Result<()> {
    if job.len == 0 {
        return Ok(());
    }
    let key_bytes = job.key.size();
    let widths = Widths::of(job.len);
    let loaded = load(stream, job.key, job.payload, widths, job.order)?;
    let geometry = Geometry::of(loaded.sm_count, job.key, job.payload, widths, job.len)?;
    let passes = passes(key_bytes, job.len, then);
    // The counts of every pass, then the skip word.
    let counts_bytes = passes.len() * 256 * widths.offset_bytes();
    let counts = Scratch::zeroed(stream, counts_bytes + 4)?;
    let starts = Scratch::new(stream, counts_bytes)?;
    let lookback = Scratch::new(stream, geometry.lookback_bytes(widths))?;
    // Scratch keys and payloads, when the passes need a second buffer.
    let alternate_keys = match passes.len() > 1 {
        true => Some(Scratch::new(stream, job.len * key_bytes)?),
        false => None,
    };
    let payload_bytes = match job.payload {
        Payload::None => None,
        Payload::Values(bytes) => Some(job.len * bytes),
        Payload::Indices => Some(index_bytes("sort", job.len)?),
    };
    let alternate_values = match (passes.len() > 1, payload_bytes) {
        (true, Some(bytes)) => Some(Scratch::new(stream, bytes)?),
        _ => None,
    };
    // From three passes on, passes before the last may write the output's side too: the
    // output, or scratch where it is null (not wanted). An `i64` output of indices holds them as
    // carried.
    let out = (job.keys_out, job.values.map(|v| v.1));
    let spare_keys = match passes.len() >= 3 && out.0 == 0 {
        true => Some(Scratch::new(stream, job.len * key_bytes)?),
        false => None,
    };
    let spare_values = match (passes.len() >= 3 && out.1 == Some(0), payload_bytes) {
        (true, Some(bytes)) => Some(Scratch::new(stream, bytes)?),
        _ => None,
    };
    let buffers = Buffers {
        input: (job.keys_in, job.values.map(|v| v.0)),
        alternate: (
            alternate_keys.as_ref().map_or(0, Scratch::ptr),
            payload_bytes.map(|_| alternate_values.as_ref().map_or(0, Scratch::ptr)),
        ),
        staging: (
            spare_keys.as_ref().map_or(out.0, Scratch::ptr),
            spare_values.as_ref().map(Scratch::ptr).or(out.1),
        ),
        out,
        indices_i64: job.indices_i64,
    };
    // The caller's skip word, or where a later key pass could be skipped, one after the counts.
    let skip = match then {
        Then::Segments { skip, .. } => skip,
        _ if key_bytes > 1 => counts.ptr() + counts_bytes as CUdeviceptr,
        _ => 0,
    };
    for (pass, &digits) in passes.iter().enumerate() {
        let of = PassOf {
            pass: pass as u32,
            passes: passes.len() as u32,
            key_passes: key_bytes as u32,
            skip,
            counts: counts.ptr(),
            starts: starts.ptr(),
            lookback: lookback.ptr(),
        };
        queue_pass(stream, &loaded, (geometry, widths), job.len, digits, &buffers, of)?;
    }
    Ok(())
}

/// Scratch memory for one call, from the context's pool, in `stream`'s order.
struct Scratch(DeviceArray<u8>);

impl Scratch {
    fn new(stream: &Stream, bytes: usize) -> Result<Scratch> {
        Ok(Scratch(DeviceArray::<u8>::empty(stream, bytes.max(1))?))
    }

    /// Like [`new`](Self::new), zeroed in `stream`'s order.
    fn zeroed(stream: &Stream, bytes: usize) -> Result<Scratch> {
        Ok(Scratch(DeviceArray::<u8>::zeros(stream, bytes.max(1))?))
    }

    fn ptr(&self) -> CUdeviceptr {
        *self.0.ptr_ref()
    }
}

/// The uses of the caller's memory a call begins (ended once its work is queued, or when a
/// check fails: nothing was queued then), with the checks of [`Operands::input`] and
/// [`Operands::output`].
pub(crate) struct Operands<'a> {
    stream: &'a Stream,
    what: &'static str,
    uses: Vec<StreamUse<'a>>,
    written: Vec<(CUdeviceptr, usize)>,
    read: Vec<(CUdeviceptr, usize)>,
}

impl<'a> Operands<'a> {
    pub(crate) fn new(what: &'static str, stream: &'a Stream) -> Self {
        Operands {
            stream,
            what,
            uses: Vec::new(),
            written: Vec::new(),
            read: Vec::new(),
        }
    }

    /// Checks `memory` (of the stream's context, at least `bytes` long) and returns its address.
    fn check(&self, name: &str, memory: &dyn DeviceMemory, bytes: usize) -> Result<CUdeviceptr> {
        if memory.context() != self.stream.context() {
            return Err(Error::InvalidValue(format!(
                "{}: {name} belongs to another context than the stream",
                self.what
            )));
        }
        if memory.byte_len() < bytes {
            return Err(Error::InvalidValue(format!(
                "{}: {name} holds {} bytes, fewer than the {bytes} the call needs",
                self.what,
                memory.byte_len()
            )));
        }
        Ok(memory.device_ptr())
    }

    /// Whether `[ptr, ptr + bytes)` overlaps memory already written by the call.
    fn overlaps(&self, ptr: CUdeviceptr, bytes: usize, against: &[(CUdeviceptr, usize)]) -> bool {
        bytes > 0
            && against
                .iter()
                .any(|&(p, b)| b > 0 && ptr < p + b as CUdeviceptr && p < ptr + bytes as CUdeviceptr)
    }

    /// Memory the call reads: `bytes` of `memory`, ordered on the stream.
    pub(crate) fn input(&mut self, name: &str, memory: &'a dyn DeviceMemory, bytes: usize) -> Result<CUdeviceptr> {
        // First, so that memory that is not dense reports the contract's `NotDense`.
        self.uses.push(memory.begin_use(self.stream, Access::Read)?);
        let ptr = self.check(name, memory, bytes)?;
        if self.overlaps(ptr, bytes, &self.written) {
            return Err(self.overlap_error(name));
        }
        self.read.push((ptr, bytes));
        Ok(ptr)
    }

    /// Memory the call writes: `bytes` of `memory`, overlapping nothing else of the call.
    pub(crate) fn output(
        &mut self,
        name: &str,
        memory: &'a mut dyn DeviceMemoryMut,
        bytes: usize,
    ) -> Result<CUdeviceptr> {
        let memory: &'a dyn DeviceMemory = memory;
        self.uses.push(memory.begin_use(self.stream, Access::Write)?);
        let ptr = self.check(name, memory, bytes)?;
        if self.overlaps(ptr, bytes, &self.written) || self.overlaps(ptr, bytes, &self.read) {
            return Err(self.overlap_error(name));
        }
        self.written.push((ptr, bytes));
        Ok(ptr)
    }

    fn overlap_error(&self, name: &str) -> Error {
        Error::InvalidValue(format!(
            "{}: {name} overlaps another buffer of the call; outputs must not share memory with anything else",
            self.what
        ))
    }
}

/// The byte size of `len` elements of `T`, checked.
pub(crate) fn bytes_of<T>(what: &str, len: usize) -> Result<usize> {
    len.checked_mul(size_of::<T>())
        .ok_or_else(|| Error::InvalidValue(format!("{what}: {len} elements do not fit in memory")))
}

/// Sorts `len` keys of `keys` into `keys_out` on `stream` (stable; see the module's docs).
pub fn sort_keys<K: Element>(
    stream: &Stream,
    keys: &impl DeviceMemory,
    keys_out: &mut impl DeviceMemoryMut,
    len: usize,
    order: SortOrder,
) -> Result<()> {
    let bytes = bytes_of::<K>("sort_keys", len)?;
    let mut operands = Operands::new("sort_keys", stream);
    let keys_in = operands.input("keys", keys, bytes)?;
    let keys_out = operands.output("keys_out", keys_out, bytes)?;
    let job = Job {
        key: K::DTYPE,
        payload: Payload::None,
        order,
        len,
        keys_in,
        keys_out,
        values: None,
        indices_i64: None,
    };
    queue_sort(stream, &job, Then::Nothing)
}

/// Sorts `len` keys of `keys` into `keys_out` and moves the values of `values` with them into
/// `values_out`, on `stream` (stable; see the module's docs).
pub fn sort_pairs<K: Element, V: Element>(
    stream: &Stream,
    (keys, values): (&impl DeviceMemory, &impl DeviceMemory),
    (keys_out, values_out): (&mut impl DeviceMemoryMut, &mut impl DeviceMemoryMut),
    len: usize,
    order: SortOrder,
) -> Result<()> {
    let key_bytes = bytes_of::<K>("sort_pairs", len)?;
    let value_bytes = bytes_of::<V>("sort_pairs", len)?;
    let mut operands = Operands::new("sort_pairs", stream);
    let keys_in = operands.input("keys", keys, key_bytes)?;
    let values_in = operands.input("values", values, value_bytes)?;
    let keys_out = operands.output("keys_out", keys_out, key_bytes)?;
    let values_out = operands.output("values_out", values_out, value_bytes)?;
    let job = Job {
        key: K::DTYPE,
        payload: Payload::Values(size_of::<V>()),
        order,
        len,
        keys_in,
        keys_out,
        values: Some((values_in, values_out)),
        indices_i64: None,
    };
    queue_sort(stream, &job, Then::Nothing)
}

/// Writes to `indices_out` the `i64` permutation that sorts the `len` keys of `keys` (NumPy's
/// `argsort(kind="stable")`), on `stream`.
pub fn argsort<K: Element>(
    stream: &Stream,
    keys: &impl DeviceMemory,
    indices_out: &mut impl DeviceMemoryMut,
    len: usize,
    order: SortOrder,
) -> Result<()> {
    sort_segments::<K>(
        "argsort",
        stream,
        keys,
        (None::<&mut DeviceArray<K>>, Some(indices_out)),
        len,
        None,
        order,
    )
}

/// Sorts each row of `len / row_len` rows of `row_len` keys (a C-contiguous matrix) into
/// `keys_out` on `stream`: NumPy's `sort(axis=-1, kind="stable")`.
pub fn sort_rows<K: Element>(
    stream: &Stream,
    keys: &impl DeviceMemory,
    keys_out: &mut impl DeviceMemoryMut,
    (len, row_len): (usize, usize),
    order: SortOrder,
) -> Result<()> {
    sort_segments::<K>(
        "sort_rows",
        stream,
        keys,
        (Some(keys_out), None::<&mut DeviceArray<i64>>),
        len,
        Some(row_len),
        order,
    )
}

/// Writes to `indices_out` the `i64` indices, within each row, that sort each row of `len /
/// row_len` rows of `row_len` keys (a C-contiguous matrix): NumPy's `argsort(axis=-1,
/// kind="stable")`, on `stream`.
pub fn argsort_rows<K: Element>(
    stream: &Stream,
    keys: &impl DeviceMemory,
    indices_out: &mut impl DeviceMemoryMut,
    (len, row_len): (usize, usize),
    order: SortOrder,
) -> Result<()> {
    sort_segments::<K>(
        "argsort_rows",
        stream,
        keys,
        (None::<&mut DeviceArray<K>>, Some(indices_out)),
        len,
        Some(row_len),
        order,
    )
}

/// The sorts that carry flat indices: `argsort` (no `row_len`) and the row sorts, writing the
/// sorted keys and/or the indices (within their row for a row sort).
fn sort_segments<K: Element>(
    what: &'static str,
    stream: &Stream,
    keys: &impl DeviceMemory,
    (keys_out, indices_out): (Option<&mut impl DeviceMemoryMut>, Option<&mut impl DeviceMemoryMut>),
    len: usize,
    row_len: Option<usize>,
    order: SortOrder,
) -> Result<()> {
    if let Some(row_len) = row_len {
        if row_len == 0 && len > 0 || row_len > 0 && len % row_len != 0 {
            return Err(Error::InvalidValue(format!(
                "{what}: {len} keys are not whole rows of {row_len}"
            )));
        }
    }
    let key_bytes = bytes_of::<K>(what, len)?;
    let i64_bytes = bytes_of::<i64>(what, len)?;
    let mut operands = Operands::new(what, stream);
    let keys_in = operands.input("keys", keys, key_bytes)?;
    let keys_out = match keys_out {
        Some(out) => Some(operands.output("keys_out", out, key_bytes)?),
        None => None,
    };
    let indices_out = match indices_out {
        Some(out) => Some(operands.output("indices_out", out, i64_bytes)?),
        None => None,
    };
    if len == 0 {
        return Ok(());
    }
    let segment = row_len.unwrap_or(len);
    if let (Some(keys_out), None, true) = (keys_out, indices_out, segment == len) {
        if segment > ROW_SORT_MAX {
            // One long row and no indices wanted: a sort of the keys alone, no payload.
            let job = Job {
                key: K::DTYPE,
                payload: Payload::None,
                order,
                len,
                keys_in,
                keys_out,
                values: None,
                indices_i64: None,
            };
            return queue_sort(stream, &job, Then::Nothing);
        }
    }
    if segment <= ROW_SORT_MAX {
        // Short rows (or a short array): each sorted inside one block, read and written once.
        let loaded = load(stream, K::DTYPE, Payload::Indices, Widths::of(len), order)?;
        let rows = (len / segment) as u64;
        // Rows of `padded` slots, ROW_SORT_MAX / padded of them a block at a time.
        let padded = segment.next_power_of_two();
        let groups = rows.div_ceil((ROW_SORT_MAX / padded) as u64);
        // A block a group, handed to the SMs as blocks finish: measured fastest on an H100 (with
        // 8 slots a thread, 2^16 rows of 2^10 f32 took 6.8 % longer with a grid of 8 blocks an
        // SM striding over the groups, and 11.3 % longer with 5, as many as fit at once).
        let grid = groups.min(i32::MAX as u64) as u32;
        let mut launch = Launch::on(stream);
        launch
            .value(keys_in)
            .value(keys_out.unwrap_or(0))
            .value(indices_out.unwrap_or(0))
            .value(rows)
            .value(segment as u32)
            .value(padded as u32);
        // SAFETY: cuda_core_sort_rows_block(keys, keys_out, indices_out, rows, row_len, padded):
        // block b sorts the groups of ROW_SORT_MAX / padded rows b, b + grid, ..., only rows
        // below `rows`, reading keys[row * row_len + i] for i < row_len (inside the `len` = rows
        // * row_len keys) and writing the same positions of keys_out and indices_out where not
        // null (`len` keys and `len` i64, checked above); its shared arrays hold ROW_SORT_MAX
        // slots, padded = row_len's next power of two <= ROW_SORT_MAX (row_len <= ROW_SORT_MAX
        // here) a row.
        unsafe { launch.run(&loaded.functions[ROWS_BLOCK], (grid, 1), (rows_threads(K::DTYPE), 1))? };
        return Ok(());
    }
    // The flat indices, generated by the first pass, written by the last to the `i64` output
    // (within their row for a sort of several rows), if wanted; the sorted keys likewise.
    let within = match row_len {
        Some(row_len) if row_len < len => row_len as u64,
        _ => 0,
    };
    let job = Job {
        key: K::DTYPE,
        payload: Payload::Indices,
        order,
        len,
        keys_in,
        keys_out: keys_out.unwrap_or(0),
        values: Some((0, indices_out.unwrap_or(0))),
        indices_i64: indices_out.map(|_| within),
    };
    queue_sort(stream, &job, row_len.map_or(Then::Nothing, Then::Rows))
}

/// Sorts `len` keys of `keys` into `keys_out` and writes the permutation that sorts them
/// (`i64`) to `indices_out`, on `stream` (stable; see the module's docs).
pub(crate) fn sort_keys_and_indices<K: Element>(
    stream: &Stream,
    keys: &impl DeviceMemory,
    (keys_out, indices_out): (&mut impl DeviceMemoryMut, &mut impl DeviceMemoryMut),
    len: usize,
    order: SortOrder,
) -> Result<()> {
    sort_segments::<K>(
        "sort_keys_and_indices",
        stream,
        keys,
        (Some(keys_out), Some(indices_out)),
        len,
        None,
        order,
    )
}

/// Sorts the `len` (at most `u32::MAX`) keys of `key` at `keys_in` into `keys_out` and writes
/// the `u32` flat indices that sort them to `indices_out`, on `stream`, ascending and stable:
/// the searches' sorted queries. The caller holds `len` keys and `len` `u32` at the outputs.
pub(crate) fn queue_sort_with_u32_indices(
    stream: &Stream,
    key: DType,
    (keys_in, keys_out, indices_out): (CUdeviceptr, CUdeviceptr, CUdeviceptr),
    len: usize,
) -> Result<()> {
    if wide(len) {
        return Err(Error::InvalidValue(format!(
            "sort: {len} keys take 64-bit flat indices, not u32"
        )));
    }
    let job = Job {
        key,
        payload: Payload::Indices,
        order: SortOrder::Ascending,
        len,
        keys_in,
        keys_out,
        values: Some((0, indices_out)),
        indices_i64: None,
    };
    queue_sort(stream, &job, Then::Nothing)
}

/// Keeps the first of each run of equal keys of the `len` sorted `keys` (NumPy's equality, all
/// NaN equal), moving their `i64` payloads with them: the distinct keys go, in order, to the
/// start of `keys_out` (their payloads to the start of `values_out`), the others after them.
/// Returns how many are distinct, read back from the device (a wait for `stream`).
pub(crate) fn partition_distinct<K: Element>(
    stream: &Stream,
    (keys, values): (&impl DeviceMemory, &impl DeviceMemory),
    (keys_out, values_out): (&mut impl DeviceMemoryMut, &mut impl DeviceMemoryMut),
    len: usize,
) -> Result<usize> {
    let what = "unique";
    let key_bytes = bytes_of::<K>(what, len)?;
    let value_bytes = bytes_of::<i64>(what, len)?;
    let mut operands = Operands::new(what, stream);
    let keys = operands.input("keys", keys, key_bytes)?;
    let values = operands.input("values", values, value_bytes)?;
    let keys_out = operands.output("keys_out", keys_out, key_bytes)?;
    let values_out = operands.output("values_out", values_out, value_bytes)?;
    if len == 0 {
        return Ok(0);
    }
    let widths = Widths::of(len);
    let loaded = load(stream, K::DTYPE, Payload::Values(8), widths, SortOrder::Ascending)?;
    let geometry = Geometry::of(loaded.sm_count, K::DTYPE, Payload::Values(8), widths, len)?;
    let offset_bytes = widths.offset_bytes();
    let counts = Scratch::zeroed(stream, 256 * offset_bytes)?;
    let starts = Scratch::new(stream, 256 * offset_bytes)?;
    let lookback = Scratch::new(stream, geometry.lookback_bytes(widths))?;
    let buffers = Buffers {
        input: (keys, Some(values)),
        alternate: (0, Some(0)),
        staging: (0, Some(0)),
        out: (keys_out, Some(values_out)),
        indices_i64: None,
    };
    let of = PassOf {
        pass: 0,
        passes: 1,
        key_passes: 0,
        skip: 0,
        counts: counts.ptr(),
        starts: starts.ptr(),
        lookback: lookback.ptr(),
    };
    queue_pass(stream, &loaded, (geometry, widths), len, Digits::Distinct, &buffers, of)?;
    drop(operands);
    // Where digit 1 (a repeat) starts: the number of distinct keys.
    let at = offset_bytes;
    let distinct = starts
        .0
        .view(starts.ptr() + at as CUdeviceptr, vec![offset_bytes], vec![1]);
    let bytes = distinct.to_vec()?;
    let mut word = [0u8; 8];
    word[..offset_bytes].copy_from_slice(&bytes);
    // A count above `len` (a failed pass or corrupted memory) would size views past the outputs.
    match usize::try_from(u64::from_le_bytes(word)) {
        Ok(count) if count <= len => Ok(count),
        _ => Err(Error::InvalidValue(format!(
            "unique: the device reported {} distinct of {len} keys (a failed kernel or corrupted memory)",
            u64::from_le_bytes(word)
        ))),
    }
}

#[cfg(test)]
mod tests {
    use std::cmp::Ordering;

    use super::*;
    use crate::{Arch, CompileTarget, Program, ProgramOptions};

    const ALL: [DType; 15] = [
        DType::Bool,
        DType::I8,
        DType::I16,
        DType::I32,
        DType::I64,
        DType::U8,
        DType::U16,
        DType::U32,
        DType::U64,
        DType::F16,
        DType::BF16,
        DType::F32,
        DType::F64,
        DType::C64,
        DType::C128,
    ];

    /// `float_order` of `keys.cuh` for an `f32`'s bits, on the host (a model of the device code).
    fn float_order(x: f32) -> u32 {
        let (b, sign) = (x.to_bits(), 1u32 << 31);
        let magnitude = b & !sign;
        if magnitude > 0x7f80_0000 {
            return u32::MAX;
        }
        let b = if magnitude == 0 { 0 } else { b };
        if b & sign != 0 {
            !b
        } else {
            b | sign
        }
    }

    /// `ascending_bits` of `keys.cuh` for a complex64 key, on the host (the same model).
    fn complex_bits(re: f32, im: f32) -> u64 {
        let (re, im) = (float_order(re), float_order(im));
        let (hi, lo) = match (re == u32::MAX, im == u32::MAX) {
            (false, false) => (re, im),
            (false, true) => (u32::MAX - 1, re),
            _ => (u32::MAX, im),
        };
        u64::from(hi) << 32 | u64::from(lo)
    }

    /// NumPy's documented order of complex values: `R + Rj < R + nanj < nan + Rj < nan + nanj`
    /// (R not NaN), values of one NaN pattern by their parts, real first (`-0.0 == 0.0`).
    fn numpy_cmp(a: (f32, f32), b: (f32, f32)) -> Ordering {
        let pattern = |z: (f32, f32)| (z.0.is_nan(), z.1.is_nan());
        let part = |x: f32, y: f32| x.partial_cmp(&y).unwrap_or(Ordering::Equal);
        pattern(a)
            .cmp(&pattern(b))
            .then_with(|| part(a.0, b.0))
            .then_with(|| part(a.1, b.1))
    }

    #[test]
    fn complex_key_bits_order_as_numpy() {
        let parts = [
            f32::NAN,
            -f32::NAN,
            f32::from_bits(0x7f80_0001),
            f32::INFINITY,
            f32::NEG_INFINITY,
            0.0,
            -0.0,
            1.0,
            -1.0,
            f32::MIN_POSITIVE,
            -f32::from_bits(1),
            f32::MAX,
            f32::MIN,
        ];
        let values: Vec<(f32, f32)> = parts
            .iter()
            .flat_map(|&re| parts.iter().map(move |&im| (re, im)))
            .collect();
        for &a in &values {
            for &b in &values {
                assert_eq!(
                    complex_bits(a.0, a.1).cmp(&complex_bits(b.0, b.1)),
                    numpy_cmp(a, b),
                    "{a:?} against {b:?}"
                );
            }
        }
        // The classes: R+Rj < R+nanj < nan+Rj < nan+nanj, the NaN ones last.
        let classes = [(1e30, 1e30), (-1e30, f32::NAN), (f32::NAN, -1e30), (f32::NAN, f32::NAN)];
        assert!(classes
            .windows(2)
            .all(|w| complex_bits(w[0].0, w[0].1) < complex_bits(w[1].0, w[1].1)));
    }

    #[test]
    fn every_key_type_compiles() {
        let options = ProgramOptions {
            cache: false,
            ..ProgramOptions::for_arch(Arch::Sm(90))
        };
        // Every key type carrying flat indices (argsort, row and segmented sorts), narrow (u32)
        // and, for the 4-byte keys, wide (u64).
        let mut cases: Vec<(DType, Payload, bool, SortOrder)> = ALL
            .iter()
            .map(|&key| (key, Payload::Indices, key.size() == 4, SortOrder::Ascending))
            .collect();
        cases.extend(
            ALL.iter()
                .map(|&key| (key, Payload::Indices, false, SortOrder::Descending)),
        );
        cases.extend([
            (DType::F64, Payload::None, false, SortOrder::Descending),
            // The most shared memory: 8-byte keys, payloads and offsets (16 items a thread), and
            // 16-byte keys with 16-byte payloads and 8-byte offsets (8 items).
            (DType::F64, Payload::Values(8), true, SortOrder::Ascending),
            (DType::C128, Payload::Values(16), true, SortOrder::Descending),
            (DType::C128, Payload::Values(8), true, SortOrder::Ascending),
            (DType::C128, Payload::Indices, true, SortOrder::Descending),
            (DType::C128, Payload::None, false, SortOrder::Descending),
            (DType::C64, Payload::Values(4), true, SortOrder::Descending),
            (DType::I64, Payload::Values(8), true, SortOrder::Ascending),
            (DType::F64, Payload::Values(1), true, SortOrder::Ascending),
            // Complex128 values under 8-byte keys.
            (DType::C128, Payload::Values(16), false, SortOrder::Ascending),
            (DType::F64, Payload::Values(16), true, SortOrder::Ascending),
            (DType::I16, Payload::Values(2), false, SortOrder::Descending),
            (DType::U8, Payload::Values(4), true, SortOrder::Descending),
        ]);
        for (key, payload, wide, order) in cases {
            let widths = Widths {
                offsets: wide,
                indices: wide,
                long_tiles: wide,
            };
            let text = source(key, payload, widths, order);
            let program = Program::new(text.clone(), options.clone());
            // A CUBIN for the widest keys: ptxas checks the static shared memory (48 KiB).
            let target = match key {
                DType::C128 | DType::F64 => CompileTarget::Cubin,
                _ => CompileTarget::Ptx,
            };
            let code = match program.compile(target) {
                Ok(code) => code,
                Err(error) => panic!("{key} {payload:?} {wide} {order:?}: {error}\n{text}"),
            };
            if let Some(ptx) = code.ptx() {
                // Every entry the host loads for this payload, and no other scatter.
                for name in entries(payload) {
                    assert!(ptx.contains(&format!(".entry {name}(")), "{key} {payload:?}: {name}");
                }
                // Equal digits are matched by ballots (warp_peers.cuh), not match.any.
                assert!(!ptx.contains("match.any"), "{key} {payload:?}");
                let indices_scatter = ptx.contains(".entry cuda_core_sort_scatter_indices(");
                assert_eq!(indices_scatter, payload == Payload::Indices, "{key} {payload:?}");
            }
        }
    }

    #[test]
    fn index_payloads_are_u32_up_to_u32_max_elements() {
        assert!(!wide(u32::MAX as usize) && wide(u32::MAX as usize + 1));
        assert_eq!(index_bytes("t", 1000).unwrap(), 4000);
        assert_eq!(index_bytes("t", u32::MAX as usize + 1).unwrap(), 8 << 32);
        assert!(index_bytes("t", usize::MAX / 4).is_err());
        let narrow = source(DType::F32, Payload::Indices, Widths::of(1000), SortOrder::Ascending);
        assert!(narrow.contains(
            "typedef unsigned int O;\ntypedef unsigned int I;\ntypedef I V;\n#define PAIRS 1\n#define INDICES 1"
        ));
        // From 2^30 elements the offsets and status words are 64-bit, the indices from 2^32.
        let wide_offsets = source(DType::F32, Payload::Indices, Widths::of(1 << 30), SortOrder::Ascending);
        assert!(wide_offsets.contains("typedef unsigned long long O;\ntypedef unsigned int I;"));
        let wide = source(DType::F32, Payload::Indices, Widths::of(1 << 32), SortOrder::Ascending);
        assert!(wide.contains("typedef unsigned long long O;\ntypedef unsigned long long I;\ntypedef I V;"));
        assert!(!Widths::of((1 << 30) - 1).offsets);
        assert_eq!(
            entries(Payload::Indices)[SCATTER_INDICES],
            "cuda_core_sort_scatter_indices"
        );
        assert_eq!(entries(Payload::Values(8)).len(), SCATTER_INDICES);
    }

    #[test]
    fn passes_cover_the_key_then_the_rows() {
        assert_eq!(passes(4, 100, Then::Nothing), [0, 8, 16, 24].map(Digits::Key));
        assert_eq!(passes(1, 100, Then::Rows(100)), [Digits::Key(0)]);
        assert_eq!(passes(2, 1000, Then::Rows(4)).len(), 2 + 1);
        assert_eq!(passes(2, 1 << 20, Then::Rows(8)).len(), 2 + 3);
        assert_eq!(passes(1, 256 * 3, Then::Rows(3))[1..], [Digits::Row(0, 3)]);
        assert_eq!(
            passes(1, 257 * 3, Then::Rows(3))[1..],
            [Digits::Row(0, 3), Digits::Row(8, 3)]
        );
        // Labels below `len`: one byte up to 256 elements, then one more per factor of 256.
        let labels = 0xabc0;
        let segments = Then::Segments { labels, skip: 0xdef0 };
        assert_eq!(passes(2, 1, segments).len(), 2);
        assert_eq!(passes(2, 256, segments)[2..], [Digits::Segment(0, labels)]);
        assert_eq!(passes(2, 257, segments).len(), 2 + 2);
        assert_eq!(passes(8, 1 << 32, segments).len(), 8 + 4);
        assert_eq!(passes(8, (1 << 32) + 1, segments).len(), 8 + 5);
    }

    #[test]
    fn tiles_cover_every_element() {
        for len in [1usize, 255, 4096, 4097, 10_000_000, (1 << 28) + 3] {
            let widths = Widths::of(len);
            for (key, payload) in [
                (DType::F32, Payload::None),
                (DType::F64, Payload::Indices),
                (DType::C128, Payload::None),
                (DType::I8, Payload::Values(16)),
            ] {
                let geometry = Geometry::of(132, key, payload, widths, len).unwrap();
                let tile = tile_len(key, payload, widths);
                assert!(geometry.tiles as usize * tile >= len, "{len}");
                assert!((geometry.tiles as usize - 1) * tile < len, "{len}");
                assert!(geometry.histogram_grid <= 132 * HISTOGRAM_BLOCKS_PER_SM);
                assert_eq!(geometry.lookback_bytes(widths) % 4, 0);
            }
        }
        // 20 items a thread up to 4-byte keys and payloads in long sorts, 16 up to 8 bytes (or
        // in shorter sorts), 8 with 16 bytes (`SORT_ITEMS`).
        let narrow = Widths::of(10);
        let long = Widths::of(LONG_TILES_MIN);
        assert_eq!(tile_len(DType::F32, Payload::None, narrow), 4096);
        assert_eq!(
            tile_len(DType::F32, Payload::None, Widths::of(LONG_TILES_MIN - 1)),
            4096
        );
        assert_eq!(tile_len(DType::F32, Payload::None, long), 5120);
        assert_eq!(tile_len(DType::F32, Payload::Indices, long), 5120);
        assert_eq!(tile_len(DType::U8, Payload::Values(2), long), 5120);
        assert_eq!(tile_len(DType::F64, Payload::None, long), 4096);
        assert_eq!(tile_len(DType::F32, Payload::Indices, Widths::of(1 << 33)), 4096);
        assert_eq!(tile_len(DType::F64, Payload::Values(8), narrow), 4096);
        assert_eq!(tile_len(DType::C128, Payload::Indices, narrow), 2048);
        assert_eq!(tile_len(DType::U8, Payload::Values(16), narrow), 2048);
        assert!(Geometry::of(132, DType::F32, Payload::None, narrow, 1 << 60).is_err());
    }
}
