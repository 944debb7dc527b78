//! Segmented sort (`cuda.compute`'s `segmented_sort`): the keys (and values) of each segment,
//! given by `i64` begin and end offsets on the device, sorted within it, stably, ascending or
//! descending, for every key type the radix sort takes.
//!
//! How: where the segments are short on average (at most 2048 elements a segment),
//! each segment of up to 2048 elements is sorted on its own, read and written once: a warp a
//! segment of up to 256 (a bitonic network in registers and shuffles), a block a longer one (the
//! row sort's network and slots, in a kernel of its own), into an output that starts as a copy
//! of the input. Any longer segment, or any overlap between segments, found on the device,
//! leaves the sort below to run and rewrite the whole output; otherwise its passes all return
//! at once (a bit in its skip word), with no host wait.
//!
//! Otherwise (and in that case) each element is labelled with the begin offset of its segment
//! (or its own index when no segment holds it), then the elements are sorted stably by key and
//! then by label, carrying their flat indices (the row sort's way, with labels for rows), and a
//! payload is moved by the resulting permutation. Segments that do not overlap tile the
//! elements with the one-element groups of the rest, and each group's label is where it starts,
//! so each segment's elements land inside it, sorted, and an element outside every segment keeps
//! its place (copied to the output). The cost is independent of the segments' sizes: one
//! labelling pass over the elements, `size_of::<K>()` key passes and one pass per byte of the
//! element count's bits (`ceil(log2(len) / 8)`), plus one gather for values.
//!
//! Offsets outside `0..=len` are clamped into it; a segment whose end is not after its begin is
//! empty (as CUB's). Overlapping segments are not refused (that would need the offsets on the
//! host): the output is then still a permutation of the input, in an unspecified order. Nothing
//! waits on the host.

use cuda_driver::{DeviceMemory, DeviceMemoryMut, Stream};
use cuda_sys::driver::CUdeviceptr;

use super::{
    bytes_of, index_bytes, load, queue_sort, rows_threads, Job, Operands, Payload, Scratch, SortOrder, Then, Widths,
    GATHER, HELPER_BLOCK, IDENTITY, LABEL_SEGMENTS, ROW_SORT_BLOCK, ROW_SORT_BLOCKS_PER_SM, ROW_SORT_MAX, SEGMENTS,
    SEGMENTS_BLOCK, SORT_DONE,
};
use crate::array::dtype::Element;
use crate::array::kernels::launch::Launch;
use crate::array::kernels::registry::{grid_for, Loaded};
use crate::error::Result;

/// Threads per block of the labelling kernel.
const LABEL_BLOCK: u32 = 256;
/// Blocks per SM the labelling grid is sized to.
const LABEL_BLOCKS_PER_SM: u32 = 8;

/// Sorts the keys of each of `segments` segments of the `len` keys of `keys` into `keys_out` on
/// `stream`: segment `s` is `begins[s]..ends[s]` (`i64` offsets on the device; see the module's
/// docs for empty, clamped and overlapping ones), sorted stably in NumPy's order (or its
/// reverse). Keys of no segment are copied to the same place. Offsets arrays shorter than
/// `segments` are [`Error::InvalidValue`](crate::Error::InvalidValue).
pub fn segmented_sort_keys<K: Element>(
    stream: &Stream,
    keys: &impl DeviceMemory,
    keys_out: &mut impl DeviceMemoryMut,
    len: usize,
    (begins, ends): (&impl DeviceMemory, &impl DeviceMemory),
    segments: usize,
    order: SortOrder,
) -> Result<()> {
    let what = "segmented_sort_keys";
    let key_bytes = bytes_of::<K>(what, len)?;
    let offset_bytes = bytes_of::<i64>(what, segments)?;
    let mut operands = Operands::new(what, stream);
    let keys_in = operands.input("keys", keys, key_bytes)?;
    let begins = operands.input("begin offsets", begins, offset_bytes)?;
    let ends = operands.input("end offsets", ends, offset_bytes)?;
    let keys_out = operands.output("keys_out", keys_out, key_bytes)?;
    let call = Segmented {
        keys: (keys_in, keys_out),
        values: None,
        offsets: (begins, ends),
        segments,
        len,
        order,
    };
    queue::<K>(stream, &call)
}

/// As [`segmented_sort_keys`], moving the values of `values` (any element type) with their keys
/// into `values_out`.
#[allow(clippy::too_many_arguments)]
pub fn segmented_sort_pairs<K: Element, V: Element>(
    stream: &Stream,
    (keys, values): (&impl DeviceMemory, &impl DeviceMemory),
    (keys_out, values_out): (&mut impl DeviceMemoryMut, &mut impl DeviceMemoryMut),
    len: usize,
    (begins, ends): (&impl DeviceMemory, &impl DeviceMemory),
    segments: usize,
    order: SortOrder,
) -> Result<()> {
    let what = "segmented_sort_pairs";
    let key_bytes = bytes_of::<K>(what, len)?;
    let value_bytes = bytes_of::<V>(what, len)?;
    let offset_bytes = bytes_of::<i64>(what, segments)?;
    let mut operands = Operands::new(what, stream);
    let keys_in = operands.input("keys", keys, key_bytes)?;
    let values_in = operands.input("values", values, value_bytes)?;
    let begins = operands.input("begin offsets", begins, offset_bytes)?;
    let ends = operands.input("end offsets", ends, offset_bytes)?;
    let keys_out = operands.output("keys_out", keys_out, key_bytes)?;
    let values_out = operands.output("values_out", values_out, value_bytes)?;
    let call = Segmented {
        keys: (keys_in, keys_out),
        values: Some((values_in, values_out, size_of::<V>())),
        offsets: (begins, ends),
        segments,
        len,
        order,
    };
    queue::<K>(stream, &call)
}

/// A segmented sort's checked addresses and sizes.
struct Segmented {
    keys: (CUdeviceptr, CUdeviceptr),
    /// Values in, out, and the bytes of one.
    values: Option<(CUdeviceptr, CUdeviceptr, usize)>,
    offsets: (CUdeviceptr, CUdeviceptr),
    segments: usize,
    len: usize,
    order: SortOrder,
}

/// Queues `call`: the labels (with short segments, the output as a copy of the input and the
/// sort of each segment in it), the sort by key then label, and the values' gather.
fn queue<K: Element>(stream: &Stream, call: &Segmented) -> Result<()> {
    let len = call.len;
    if len == 0 {
        return Ok(());
    }
    // Labels and the permutation are flat indices as the sort carries them (u32 up to u32::MAX
    // elements); the permutation is kept only to move values.
    let index_bytes = index_bytes("segmented sort", len)?;
    let loaded = load(stream, K::DTYPE, Payload::Indices, Widths::of(len), call.order)?;
    let labels = Scratch::new(stream, index_bytes)?;
    let permutation = match call.values {
        Some(_) => Some(Scratch::new(stream, index_bytes)?),
        None => None,
    };
    let permutation_ptr = permutation.as_ref().map_or(0, Scratch::ptr);
    let short = call.segments > 0 && len.div_ceil(call.segments) <= ROW_SORT_MAX;
    let skip = Scratch::new(stream, 4)?;
    // SAFETY: the skip word's scratch holds 4 bytes, one 32-bit word; queued on its stream.
    unsafe { stream.memset_d32_raw_async(skip.ptr(), if short { SORT_DONE } else { 0 }, 1)? };
    let copy = match short {
        true => (call.keys.0, call.keys.1, permutation_ptr),
        false => (0, 0, 0),
    };
    identity(stream, &loaded, labels.ptr(), copy, len)?;
    if call.segments > 0 {
        let blocks = u64::from(loaded.sm_count) * u64::from(LABEL_BLOCKS_PER_SM);
        let grid_x = (call.segments as u64).min(blocks).min(i32::MAX as u64) as u32;
        let grid_y = blocks.div_ceil(u64::from(grid_x)).clamp(1, 65_535) as u32;
        let mut launch = Launch::on(stream);
        launch
            .value(labels.ptr())
            .value(call.offsets.0)
            .value(call.offsets.1)
            .value(call.segments as u64)
            .value(len as u64);
        // SAFETY: cuda_core_sort_label_segments(labels, begins, ends, segments, n) reads
        // begins[s] and ends[s] for s < segments (the `segments` i64 of each, checked) and
        // updates labels[i] only for i in a segment clamped into [0, n), inside the `len`
        // labels (flat indices of the index type the code was generated with) of the scratch.
        unsafe { launch.run(&loaded.functions[LABEL_SEGMENTS], (grid_x, grid_y), (LABEL_BLOCK, 1))? };
    }
    if short {
        let blocks = u64::from(loaded.sm_count) * u64::from(ROW_SORT_BLOCKS_PER_SM);
        let grid = (call.segments as u64).min(blocks) as u32;
        // The block kernel takes a block for each segment (up to the grid's limit), handed to the
        // SMs as earlier ones finish. On an H100 (2^26 f32 with i64 values in 2^16 segments of 0
        // to 2047) this sorted in 4.04 ms where 16 blocks an SM striding over the segments took
        // 4.26 (the old kernel, with 8 slots a thread, 4.25).
        let block_grid = (call.segments as u64).min(i32::MAX as u64) as u32;
        let launches = [
            (SEGMENTS, grid, ROW_SORT_BLOCK),
            (SEGMENTS_BLOCK, block_grid, rows_threads(K::DTYPE)),
        ];
        for (entry, grid, threads) in launches {
            let mut launch = Launch::on(stream);
            launch
                .value(call.keys.0)
                .value(call.keys.1)
                .value(permutation_ptr)
                .value(labels.ptr())
                .value(call.offsets.0)
                .value(call.offsets.1)
                .value(call.segments as u64)
                .value(len as u64)
                .value(skip.ptr());
            // SAFETY: cuda_core_sort_segments and cuda_core_sort_segments_block(keys, keys_out,
            // perm, labels, begins, ends, segments, n, done) read begins[s] and ends[s] for s <
            // segments (checked), and for segments clamped into [0, n) of at most ROW_SORT_MAX
            // elements read their keys and labels (and the label after one) and write their
            // places of keys_out and of perm where not null (`len` keys each, checked; `len`
            // flat indices of the permutation's scratch, of the index type the code was
            // generated with); the block kernel's shared arrays hold ROW_SORT_MAX slots, the
            // padded length of the longest segment it sorts, in blocks of the ROWS_THREADS the
            // code was generated with (`rows_threads`); each clears a bit of the 4-byte skip
            // word.
            unsafe { launch.run(&loaded.functions[entry], (grid, 1), (threads, 1))? };
        }
    }
    let job = Job {
        key: K::DTYPE,
        payload: Payload::Indices,
        order: call.order,
        len,
        keys_in: call.keys.0,
        keys_out: call.keys.1,
        values: Some((0, permutation_ptr)),
        indices_i64: None,
    };
    let then = Then::Segments {
        labels: labels.ptr(),
        skip: skip.ptr(),
    };
    queue_sort(stream, &job, then)?;
    if let (Some((values_in, values_out, bytes)), Some(permutation)) = (call.values, permutation) {
        let grid = grid_for(len as u64, HELPER_BLOCK, loaded.sm_count, 8);
        let mut launch = Launch::on(stream);
        launch
            .value(values_in)
            .value(values_out)
            .value(permutation.ptr())
            .value(len as u64)
            .value(bytes as u32);
        // SAFETY: cuda_core_sort_gather(in, out, perm, n, bytes) reads perm[0..n] (the `len` flat
        // indices, of the index type the code was generated with, of the permutation), in at
        // those entries clamped below n and writes out[0..n],
        // elements of `bytes` (an element type's size: 1, 2, 4, 8 or 16), inside the `len`
        // values of each buffer, checked by the caller.
        unsafe { launch.run(&loaded.functions[GATHER], (grid, 1), (HELPER_BLOCK, 1))? };
    }
    Ok(())
}

/// Queues `labels[i] = i` for the `len` flat indices (of the index type `loaded` was generated
/// with) at `labels`, and with `(keys, keys_out, perm)` not null `keys_out[i] = keys[i]` (`len`
/// keys each) and `perm[i] = i` where `perm` is not null (`len` flat indices).
fn identity(
    stream: &Stream,
    loaded: &Loaded,
    labels: CUdeviceptr,
    copy: (CUdeviceptr, CUdeviceptr, CUdeviceptr),
    len: usize,
) -> Result<()> {
    let grid = grid_for(len as u64, HELPER_BLOCK, loaded.sm_count, 8);
    let mut launch = Launch::on(stream);
    launch
        .value(labels)
        .value(copy.0)
        .value(copy.1)
        .value(copy.2)
        .value(len as u64);
    // SAFETY: cuda_core_sort_identity(labels, keys, keys_out, perm, n) writes labels[0..n] (the
    // `len` indices of the index type the code was generated with that the caller holds), and
    // where keys_out is not null reads keys[0..n] and writes keys_out[0..n] (`len` keys each,
    // checked by the caller), and where perm is not null writes perm[0..n] (`len` indices).
    unsafe { launch.run(&loaded.functions[IDENTITY], (grid, 1), (HELPER_BLOCK, 1)) }
}
