//! One sequence per family of cuda-core's device-wide algorithms, on device buffers (reduce,
//! merge sort by a comparator) or through the NumPy routines on them: scan (`cumsum`), select
//! (`x[x > 0.5]`, `nonzero`), sort (`sort`, `argsort`, segmented sort), search (`searchsorted` with a sorter),
//! counting (`histogram`, `bincount`), order statistics (`median` by radix select) and sets
//! (`unique`). The failure-point suite runs each against the stand-in driver with every
//! driver call failing in turn (`tests/tests/algorithm_failure_points.rs`).
//!
//! The stand-in cannot run these generated kernels: the suite switches on
//! [`Session::set_bodiless_kernels_noop`](crate::fake::Session::set_bodiless_kernels_noop), so
//! they launch and do nothing, and every host step around them (checks, pool allocations,
//! stream uses, read-backs, frees) runs for real. What a kernel should have written is then
//! whatever the memory held (the stand-in fills new memory with the byte 0xa5), so the
//! sequences check what the host decides (shapes, lengths), not values; a count read back
//! from such memory is far above the number of candidates, which the routines must refuse
//! with a typed error ([`GARBAGE_COUNT`]) rather than size a view past their output by it.
//!
//! The routines allocate from the context's default pool (`MemoryPool::for_context`): each
//! sequence gives the process-wide caches back ([`cuda_core::release_process_caches`]: the
//! pool, its blocks and its hold on the context, the generated kernels' modules) before it
//! returns, on every path, so nothing of a run outlives it.

use cuda_core::{DeviceArray, ExprOps};
use cuda_driver::{Error, Result, Stream};

use crate::sequences::{primary, Sequence};

/// What the routines say when a count read back from the device exceeds the candidates
/// (`cuda_core::Error::InvalidValue` with this text).
pub const GARBAGE_COUNT: &str = "(a failed kernel or corrupted memory)";

/// `Ok` if `got == want`, else a cuda-core `InvalidValue` naming `what`.
fn check<T: PartialEq + std::fmt::Debug>(what: &str, got: T, want: T) -> cuda_core::Result<()> {
    if got == want {
        Ok(())
    } else {
        Err(cuda_core::Error::InvalidValue(format!(
            "{what}: got {got:?}, want {want:?}"
        )))
    }
}

/// `result`, with a count refused as [`GARBAGE_COUNT`] as `None`: the steps of a sequence after
/// a read-back still run on the stand-in.
fn counted<T>(result: cuda_core::Result<T>) -> cuda_core::Result<Option<T>> {
    match result {
        Ok(value) => Ok(Some(value)),
        Err(cuda_core::Error::InvalidValue(why)) if why.contains(GARBAGE_COUNT) => Ok(None),
        Err(error) => Err(error),
    }
}

/// Runs `body` on a new stream of device 0's primary context with generated kernels loaded as
/// PTX (which the stand-in reads); then waits for the stream and gives the process-wide caches
/// back, whatever `body` returned. A driver error is passed on as
/// is (so the suite can compare its code with the injected one); any other error of cuda-core
/// becomes `InvalidValue`, which the suite reports.
fn on_default_pool(what: &str, body: impl FnOnce(&Stream) -> cuda_core::Result<()>) -> Result<()> {
    if !crate::checks::nvrtc_available(what) {
        return Ok(());
    }
    cuda_core::load_generated_as_ptx(true);
    let context = primary()?;
    let stream = Stream::new(&context)?;
    let outcome = body(&stream);
    let synchronized = stream.synchronize();
    drop(stream);
    // An injected failure of the context's synchronisation keeps the caches: the second call
    // (the fault fires once) gives them back, so no run leaves a pool or module to the next.
    if !cuda_core::release_process_caches() {
        cuda_core::release_process_caches();
    }
    drop(context);
    match outcome {
        Ok(()) => {}
        Err(cuda_core::Error::Driver(error)) => return Err(error),
        Err(other) => return Err(Error::InvalidValue(format!("{what}: {other}"))),
    }
    synchronized
}

/// Scan: `cumsum` of a 1-D f32 array (the look-back scan) and of each row of an i32 matrix.
fn scan_cumsum(_ptx: &str) -> Result<()> {
    on_default_pool("scan (cumsum)", |stream| {
        let xs: Vec<f32> = (0..1000).map(|i| (i % 5) as f32).collect();
        let x = DeviceArray::from_slice(stream, &xs)?;
        let sums = x.cumsum(None)?;
        check("cumsum shape", sums.shape().to_vec(), vec![1000])?;
        let rows = DeviceArray::from_slice(stream, &(0..512).collect::<Vec<i32>>())?.reshape([8, 64])?;
        let row_sums = rows.cumsum(-1)?;
        check("row cumsum shape", row_sums.shape().to_vec(), vec![8, 64])?;
        drop((x, sums, rows, row_sums));
        Ok(())
    })
}

/// Select: `x[x > 0.5]` with the mask fused into the select kernel, and `nonzero` of a
/// matrix; each reads its count back.
fn select_extract_nonzero(_ptx: &str) -> Result<()> {
    on_default_pool("select (extract, nonzero)", |stream| {
        let xs: Vec<f32> = (0..1000).map(|i| (i % 10) as f32 / 10.0).collect();
        let x = DeviceArray::from_slice(stream, &xs)?;
        if let Some(picked) = counted(x.extract(x.gt(0.5)))? {
            check("x[x > 0.5] is 1-D", picked.ndim(), 1)?;
        }
        let m = DeviceArray::from_slice(stream, &(0..96).map(|i| i % 3).collect::<Vec<i32>>())?.reshape([8, 12])?;
        if let Some(coordinates) = counted(m.nonzero())? {
            check("nonzero gives one array per axis", coordinates.len(), 2)?;
        }
        drop((x, m));
        Ok(())
    })
}

/// Sort: `sort` of a 1-D f32 array (radix passes) and `argsort` of each row of an i32 matrix.
fn sort_argsort(_ptx: &str) -> Result<()> {
    on_default_pool("sort (sort, argsort)", |stream| {
        let xs: Vec<f32> = (0..3000).map(|i| ((i * 7919) % 3001) as f32).collect();
        let x = DeviceArray::from_slice(stream, &xs)?;
        let sorted = x.sort(-1)?;
        check("sort shape", sorted.shape().to_vec(), vec![3000])?;
        let m = DeviceArray::from_slice(stream, &(0..256).rev().collect::<Vec<i32>>())?.reshape([4, 64])?;
        let order = m.argsort(1)?;
        check("argsort shape", order.shape().to_vec(), vec![4, 64])?;
        drop((x, sorted, m, order));
        Ok(())
    })
}

/// Segmented sort: pairs of f32 keys and i64 values in three segments (one empty) and a gap,
/// then keys alone in descending order.
fn segmented_sort(_ptx: &str) -> Result<()> {
    use cuda_core::algorithms::sort::{segmented_sort_keys, segmented_sort_pairs, SortOrder};
    on_default_pool("segmented sort (pairs, keys)", |stream| {
        let n = 3000;
        let xs: Vec<f32> = (0..n).map(|i| ((i * 7919) % 3001) as f32).collect();
        let keys = DeviceArray::from_slice(stream, &xs)?;
        let values = DeviceArray::from_slice(stream, &(0..n as i64).collect::<Vec<i64>>())?;
        let begins = DeviceArray::from_slice(stream, &[0i64, 10, 10, 600])?;
        let ends = DeviceArray::from_slice(stream, &[10i64, 500, 10, 3000])?;
        let mut keys_out = DeviceArray::<f32>::empty(stream, n)?;
        let mut values_out = DeviceArray::<i64>::empty(stream, n)?;
        let order = SortOrder::Ascending;
        segmented_sort_pairs::<f32, i64>(
            stream,
            (&keys, &values),
            (&mut keys_out, &mut values_out),
            n,
            (&begins, &ends),
            4,
            order,
        )?;
        segmented_sort_keys::<f32>(
            stream,
            &keys,
            &mut keys_out,
            n,
            (&begins, &ends),
            4,
            SortOrder::Descending,
        )?;
        drop((keys, values, begins, ends, keys_out, values_out));
        Ok(())
    })
}

/// Search: `searchsorted` on the right, without a sorter and with one (checked on the device:
/// a flag read back).
fn search_searchsorted(_ptx: &str) -> Result<()> {
    on_default_pool("search (searchsorted)", |stream| {
        let a = DeviceArray::from_slice(stream, &(0..500).map(|i| i as f64 * 0.5).collect::<Vec<f64>>())?;
        let v = DeviceArray::from_slice(stream, &[-1.0f64, 3.25, 100.0, 1e9])?;
        let at = a.searchsorted(&v, cuda_core::algorithms::search::Side::Right, None)?;
        check("searchsorted shape", at.shape().to_vec(), vec![4])?;
        let sorter = DeviceArray::from_slice(stream, &(0..500).collect::<Vec<i64>>())?;
        let through = a.searchsorted(&v, cuda_core::algorithms::search::Side::Left, Some(&sorter))?;
        check("searchsorted with a sorter shape", through.shape().to_vec(), vec![4])?;
        drop((a, v, at, sorter, through));
        Ok(())
    })
}

/// Counting: `histogram` with a range (no read-back) and `bincount` (its greatest value read
/// back to size the counts).
fn histogram_bincount(_ptx: &str) -> Result<()> {
    on_default_pool("histogram (histogram, bincount)", |stream| {
        let xs: Vec<f32> = (0..2000).map(|i| (i % 100) as f32 / 100.0).collect();
        let x = DeviceArray::from_slice(stream, &xs)?;
        let (counts, edges) = x.histogram(16, Some((0.0, 1.0)))?;
        check("histogram counts", counts.shape().to_vec(), vec![16])?;
        check("histogram edges", edges.shape().to_vec(), vec![17])?;
        // u8: on the stand-in the least and greatest elements read back are whatever their
        // 8-byte words held (0xa5 bytes), no u8's, which bincount refuses as garbage.
        let k = DeviceArray::from_slice(stream, &(0..2000).map(|i| (i % 37) as u8).collect::<Vec<u8>>())?;
        if let Some(bins) = counted(k.bincount(8))? {
            check("bincount is 1-D", bins.ndim(), 1)?;
        }
        drop((x, counts, edges, k));
        Ok(())
    })
}

/// Sets: `unique` and `unique_all` of an i64 array (a sort, then the distinct keys' count read
/// back).
fn unique_sets(_ptx: &str) -> Result<()> {
    on_default_pool("unique (unique, unique_all)", |stream| {
        let x = DeviceArray::from_slice(stream, &(0..1500).map(|i| (i * 31) % 97).collect::<Vec<i64>>())?;
        if let Some(distinct) = counted(x.unique())? {
            check("unique is 1-D", distinct.ndim(), 1)?;
        }
        if let Some(all) = counted(x.unique_all())? {
            check("unique_all inverse shape", all.inverse.shape().to_vec(), vec![1500])?;
            check("unique_all counts", all.counts.len(), all.values.len())?;
        }
        drop(x);
        Ok(())
    })
}

/// Reduce: `algorithms::reduce` of a whole f32 buffer with an init value (two passes, the
/// partials from the pool), by rows and by offsets (one pass), with a C++ operator, and by
/// runs of equal keys (`reduce_by_key`, `unique_by_key`).
fn reduce_device(_ptx: &str) -> Result<()> {
    use cuda_core::algorithms::reduce::{reduce, reduce_by_key, reduce_segments, ReduceOperator, Segments};
    use cuda_core::algorithms::scan::ScanOp;
    use cuda_core::algorithms::select::unique_by_key;
    on_default_pool("reduce (whole, segments, operator, by key)", |stream| {
        let xs: Vec<f32> = (0..5000).map(|i| (i % 7) as f32).collect();
        let x = DeviceArray::from_slice(stream, &xs)?;
        let mut total = DeviceArray::<f64>::zeros(stream, 1)?;
        reduce::<f32, f64>(stream, &x, &mut total, ScanOp::Sum, 1.0)?;
        let mut rows = DeviceArray::<f32>::zeros(stream, 5)?;
        reduce_segments::<f32, f32>(stream, &x, Segments::Rows(1000), &mut rows, ScanOp::Max, 0.0)?;
        let offsets = DeviceArray::from_slice(stream, &[0i64, 10, 4000, 5000])?;
        let mut parts = DeviceArray::<f32>::zeros(stream, 3)?;
        reduce_segments::<f32, f32>(stream, &x, Segments::Offsets(&offsets), &mut parts, ScanOp::Min, 9.0)?;
        let absmax = ReduceOperator::new("absmax", "fmaxf(fabsf(a), fabsf(b))", "0.0f")?;
        // SAFETY: the operator only computes with `a` and `b`.
        unsafe { absmax.reduce::<f32, f32>(stream, &x, &mut parts, 0.0)? };
        // By key: runs of equal keys, their sums and first values, the count left on the device.
        let keys = DeviceArray::from_slice(stream, &(0..5000).map(|i| i / 7).collect::<Vec<i32>>())?;
        let (mut unique, mut sums) = (
            DeviceArray::<i32>::zeros(stream, 5000)?,
            DeviceArray::<f64>::zeros(stream, 5000)?,
        );
        let mut firsts = DeviceArray::<f32>::zeros(stream, 5000)?;
        let mut count = DeviceArray::<u64>::zeros(stream, 1)?;
        reduce_by_key::<i32, f32, f64>(stream, (&keys, &x), (&mut unique, &mut sums), &mut count, ScanOp::Sum)?;
        unique_by_key::<i32, f32>(stream, (&keys, &x), (&mut unique, &mut firsts), &mut count)?;
        drop((
            x, total, rows, offsets, parts, absmax, keys, unique, sums, firsts, count,
        ));
        Ok(())
    })
}

/// Merge sort: a C++ comparator's stable sort of f32 keys with i64 values across several
/// blocks (the block sort and two merge passes through a pool buffer), and of keys alone.
fn merge_sort_pairs(_ptx: &str) -> Result<()> {
    use cuda_core::algorithms::merge_sort::MergeSort;
    on_default_pool("merge sort (pairs, keys)", |stream| {
        let n = 5000usize;
        let keys = DeviceArray::from_slice(
            stream,
            &(0..n).map(|i| ((i * 37) % 101) as f32 - 50.0).collect::<Vec<f32>>(),
        )?;
        let values = DeviceArray::from_slice(stream, &(0..n as i64).collect::<Vec<i64>>())?;
        let (mut keys_out, mut values_out) = (
            DeviceArray::<f32>::zeros(stream, n)?,
            DeviceArray::<i64>::zeros(stream, n)?,
        );
        let by_magnitude = MergeSort::new("by_magnitude", "float", "fabsf(a) < fabsf(b)")?;
        // SAFETY: the comparator only computes with `a` and `b`.
        unsafe {
            by_magnitude.sort_pairs::<f32, i64>(stream, (&keys, &values), (&mut keys_out, &mut values_out), n)?;
            by_magnitude.sort_keys::<f32>(stream, &keys, &mut keys_out, n)?;
        }
        drop((keys, values, keys_out, values_out, by_magnitude));
        Ok(())
    })
}

/// Order statistics: `median` and `nanpercentile` of one line of 2^16 f32 (radix select: the
/// NaN count, the plan, four digit passes, the read-out, scratch from the pool).
fn median_select(_ptx: &str) -> Result<()> {
    on_default_pool("median (radix select)", |stream| {
        let xs: Vec<f32> = (0..1 << 16).map(|i| ((i * 37) % 1001) as f32).collect();
        let x = DeviceArray::from_slice(stream, &xs)?;
        let median = x.median(0)?;
        check("median shape", median.shape().to_vec(), Vec::<usize>::new())?;
        let p90 = x.nanpercentile(90.0, 0, cuda_core::QuantileMethod::Nearest)?;
        // Lines of a middle length, one block each, along the first axis (moved and copied).
        let rows = x.reshape([64, 1024])?;
        let medians = rows.median(0)?;
        check("row medians shape", medians.shape().to_vec(), vec![1024])?;
        let medians = rows.median(1)?;
        check("row medians shape", medians.shape().to_vec(), vec![64])?;
        drop((x, median, p90, rows, medians));
        Ok(())
    })
}

/// The sequences of the algorithm families, by name.
pub const ALGORITHM_SEQUENCES: [(&str, Sequence); 10] = [
    ("reduce: whole, segments, operator, by key", reduce_device),
    ("scan: cumsum", scan_cumsum),
    ("select: extract and nonzero", select_extract_nonzero),
    ("sort: sort and argsort", sort_argsort),
    ("merge sort: pairs and keys", merge_sort_pairs),
    ("segmented sort: pairs and keys", segmented_sort),
    ("search: searchsorted", search_searchsorted),
    ("counting: histogram and bincount", histogram_bincount),
    ("order statistics: median by radix select", median_select),
    ("sets: unique", unique_sets),
];
