//! Benchmarks of cuda-core's pooled array layer: `MemoryPool` alloc+free (1 KiB, 1 MiB,
//! 256 MiB, and through `DeviceArray::empty`), and on 2^28 f32 the device-to-device copy,
//! `2.0 * x + y` (`ElementwiseKernel`, and as a fused expression), `sum` (`ReductionKernel`),
//! `sum` along each axis of the `(2^14, 2^14)` view, the fused `(x * y).sum()` (against `sum` of
//! one 2^29 array), `std` (one pass), `fill` and `random::rand`, `concatenate` of two 2^27 f32
//! arrays and `take` of 2^26 random i64 indices from 2^26 f32 (modes wrap and raise) as GB/s of
//! read plus written bytes, each also as a fraction of the copy measured here; and the host cost of a
//! cache-hit expression evaluation against a `RawKernel` launch of the same work; `cumsum` of 2^28
//! f32 (whole, and by rows of 2^10), `x[x > 0.5]` (fused) and `nonzero` on 2^26 elements; and the
//! sorts (keys per second): `sort` of 2^28 f32 and of 2^28 i32, `argsort` of 2^26 f32, `sort`
//! along the rows of 2^16 x 2^10 f32, and `searchsorted` of 2^20 queries in 2^26 sorted f32
//! (queries per second); and milliseconds per call of `unique` of 2^26 i64 with 2^20 distinct
//! values, `bincount` of 2^26 i64 into 1024 bins, `histogram` of 2^26 f32 into 256 bins,
//! `median` of 2^26 f32 and the 90th `percentile` of 2^24 f32; and milliseconds per call of the
//! device-wide algorithms on buffers with no torch or CuPy row beside them: `reduce` of 2^28
//! f32 with an init value, `reduce_by_key` of 2^26 f32 by sorted i64 keys in 2^20 runs, the
//! merge sort of 2^24 f32 by magnitude with i64 values, the segmented sort of 2^26 f32 keys with
//! i64 values in 2^16 segments of 0 to 2047, and the median of each of 2^16 rows of 2^10 f32
//! (radix select, a block a row); and, in group `rows` only, `sort` along the rows of f32 and f64
//! matrices of 2^16 x 2^10, 2^20 x 64, 2^24 x 4 and 2^13 x 2^11 (keys per second: the sorts of
//! rows inside one block). Prints `ROW {json}` lines (see the `benches` crate docs). Built with
//! `--features array`. `BENCH_ARRAY_ONLY=sort,scan` (groups `alloc`, `bandwidth`, `gather`,
//! `sort`, `algorithms`, `scan`, `host`, `rows`) runs only those rows; all but `rows` run
//! without it.

use benches::*;
use cuda_core::algorithms::search::Side;
use cuda_core::fft::{self, FftNorm};
use cuda_core::{
    random, Arg, Axes, Complex, Device, DeviceArray, Element, ElementwiseKernel, ExprOps, IndexMode, LaunchConfig,
    MemoryPool, OptionalAxis, ProgramOptions, QuantileMethod, RawKernel, Slice,
};
use cuda_driver::{Event, EventFlags, Stream};

const POOL: &str = "cuda-core pool";
const ARRAY_EMPTY: &str = "cuda-core DeviceArray::empty+drop";
const COPY: &str = "cuda-core DeviceArray::copy_from";
const ELEMENTWISE: &str = "cuda-core elementwise";
const EXPRESSION: &str = "cuda-core expression";
const EXPRESSION_LAUNCH: &str = "cuda-core expression x*y+z (cache hit)";
const RAW_LAUNCH: &str = "cuda-core RawKernel x*y+z";
/// Elements of the expression-overhead launches.
const SMALL_N: usize = 1000;
const REDUCTION: &str = "cuda-core reduction";
const REDUCTION_AXIS: &str = "cuda-core sum_axes";
const FUSED_REDUCTION: &str = "cuda-core fused reduction";
const STD: &str = "cuda-core std";
const FILL: &str = "cuda-core fill";
const RAND: &str = "cuda-core random::rand";
const CONCATENATE: &str = "cuda-core concatenate";
const TAKE_WRAP: &str = "cuda-core take (wrap)";
const TAKE_RAISE: &str = "cuda-core take (raise)";
/// Elements of `take`'s source array and of its random indices.
const TAKE_ELEMS: usize = 1 << 26;
const CUMSUM: &str = "cuda-core cumsum";
const EXTRACT_FUSED: &str = "cuda-core extract (fused mask)";
const FLATNONZERO: &str = "cuda-core flatnonzero";
/// The rows of [`scan_select_rows`]: case and implementation.
const SCAN_SELECT_ROWS: [(&str, &str); 5] = [
    ("cumsum", CUMSUM),
    ("cumsum axis=1", CUMSUM),
    ("cumsum f64", CUMSUM),
    ("x[x > 0.5]", EXTRACT_FUSED),
    ("nonzero", FLATNONZERO),
];
/// Elements of the select rows' input (2^26 f32).
const SELECT_ELEMS: usize = 1 << 26;
/// The rows of [`gather_rows`]: case and implementation.
const GATHER_ROWS: [(&str, &str); 3] = [("concatenate", CONCATENATE), ("take", TAKE_WRAP), ("take", TAKE_RAISE)];
/// The sort rows: case, implementation, and what a key is.
const SORT_ROWS: [(&str, &str, &str); 5] = [
    ("sort 2^28 f32", "cuda-core sort", "Gkeys/s"),
    ("sort 2^28 i32", "cuda-core sort", "Gkeys/s"),
    ("argsort 2^26 f32", "cuda-core argsort", "Gkeys/s"),
    ("sort rows 2^16x2^10 f32", "cuda-core sort axis=-1", "Gkeys/s"),
    ("searchsorted 2^20 in 2^26 f32", "cuda-core searchsorted", "Gqueries/s"),
];
/// The rows of [`algorithm_rows`] (milliseconds per call): case and implementation, named as
/// benches/python/bench_sort.py names torch's and CuPy's.
const ALGORITHM_ROWS: [(&str, &str); 8] = [
    ("unique 2^26 i64, 2^20 distinct", "cuda-core unique"),
    ("bincount 2^26 i64 into 1024 bins", "cuda-core bincount"),
    ("histogram 2^26 f32 into 256 bins", "cuda-core histogram"),
    ("median 2^26 f32", "cuda-core median"),
    ("percentile 90 of 2^24 f32", "cuda-core percentile"),
    ("c2c fft 2^24 c64", "cuda-core fft"),
    ("rfft2 4096^2 f32", "cuda-core rfft2"),
    ("rfft(x * window) 256 x 2^16 f32", "cuda-core rfft(x * window)"),
];
/// The rows of [`device_algorithm_rows`] (milliseconds per call): case and implementation.
const DEVICE_ALGORITHM_ROWS: [(&str, &str); 5] = [
    ("reduce 2^28 f32, sum with init", "cuda-core algorithms::reduce"),
    (
        "reduce_by_key 2^26 f32, 2^20 runs of i64 keys",
        "cuda-core algorithms::reduce_by_key",
    ),
    (
        "merge sort 2^24 f32 by |x|, i64 values",
        "cuda-core algorithms::merge_sort",
    ),
    (
        "segmented sort 2^26 f32 in 2^16 segments of 0..2047, i64 values",
        "cuda-core algorithms::segmented_sort_pairs",
    ),
    ("median along rows 2^16 x 2^10 f32", "cuda-core median axis=-1"),
];
/// The `(2^14, 2^14)` view of the 2^28 elements that the axis sums reduce.
const SIDE: usize = 1 << 14;
/// Alloc+free pairs per timed batch (cache hits are tens of nanoseconds).
const POOL_BATCH: usize = 1000;
const POOL_WARMUP_BATCHES: usize = 20;
const POOL_BATCHES: usize = 200;
/// Operations queued back to back per event-timed sample, so the host's launch time before the
/// first one is spread out.
const OPS_PER_SAMPLE: usize = 5;

fn text(e: impl std::fmt::Display) -> String {
    e.to_string()
}

fn main() {
    // This binary has no launch rows: in `launch` mode (run.sh's rounds) it has nothing to measure.
    if Part::from_args() == Part::Launch {
        return;
    }
    let setup = Device::new(0).and_then(|device| {
        println!("device: {} ({})", device.name()?, device.arch()?);
        let stream = device.create_stream()?;
        Ok((device, stream))
    });
    let (device, stream) = match setup {
        Ok(setup) => setup,
        Err(why) => {
            let why = why.to_string();
            let why = why.lines().next().unwrap_or_default();
            println!("no GPU: {why}");
            for (case, _) in ALLOC_SIZES {
                Row::unavailable("alloc", case, POOL, "us/pair", why).emit();
                Row::unavailable("alloc", case, ARRAY_EMPTY, "us/pair", why).emit();
            }
            Row::unavailable("bandwidth", "D2D copy", COPY, "GB/s", why).emit();
            Row::unavailable("bandwidth", "2.0*x+y", ELEMENTWISE, "GB/s", why).emit();
            Row::unavailable("bandwidth", "2.0*x+y", EXPRESSION, "GB/s", why).emit();
            Row::unavailable("bandwidth", "sum", REDUCTION, "GB/s", why).emit();
            Row::unavailable("bandwidth", "sum axis=0", REDUCTION_AXIS, "GB/s", why).emit();
            Row::unavailable("bandwidth", "sum axis=1", REDUCTION_AXIS, "GB/s", why).emit();
            Row::unavailable("bandwidth", "(x*y).sum", FUSED_REDUCTION, "GB/s", why).emit();
            Row::unavailable("bandwidth", "std", STD, "GB/s", why).emit();
            Row::unavailable("bandwidth", "fill", FILL, "GB/s", why).emit();
            Row::unavailable("bandwidth", "rand", RAND, "GB/s", why).emit();
            for (case, implementation) in GATHER_ROWS.iter().chain(&SCAN_SELECT_ROWS) {
                Row::unavailable("bandwidth", case, implementation, "GB/s", why).emit();
            }
            Row::unavailable("host", "expression launch", EXPRESSION_LAUNCH, "us/call", why).emit();
            Row::unavailable("host", "expression launch", RAW_LAUNCH, "us/call", why).emit();
            for (case, implementation, unit) in SORT_ROWS {
                Row::unavailable("sort", case, implementation, unit, why).emit();
            }
            for (case, implementation) in ALGORITHM_ROWS.iter().chain(&DEVICE_ALGORITHM_ROWS) {
                Row::unavailable("algorithms", case, implementation, "ms", why).emit();
            }
            return;
        }
    };
    let pool = MemoryPool::for_context(device.context());
    if wanted("alloc") {
        for (case, bytes) in ALLOC_SIZES {
            Row::measured("alloc", case, POOL, "us/pair", pool_pairs(&pool, &stream, bytes)).emit();
            Row::measured("alloc", case, ARRAY_EMPTY, "us/pair", array_pairs(&stream, bytes)).emit();
        }
        if let Err(why) = pool.free_all_blocks() {
            println!("free_all_blocks: {why}");
        }
    }
    match wanted("bandwidth").then(|| bandwidth_rows(&stream)).transpose() {
        Ok(None) => {}
        Ok(Some(rows)) => rows.iter().for_each(Row::emit),
        Err(why) => {
            Row::failed("bandwidth", "D2D copy", COPY, "GB/s", &why).emit();
            Row::failed("bandwidth", "2.0*x+y", ELEMENTWISE, "GB/s", &why).emit();
            Row::failed("bandwidth", "2.0*x+y", EXPRESSION, "GB/s", &why).emit();
            Row::failed("bandwidth", "sum", REDUCTION, "GB/s", &why).emit();
            Row::failed("bandwidth", "sum axis=0", REDUCTION_AXIS, "GB/s", &why).emit();
            Row::failed("bandwidth", "sum axis=1", REDUCTION_AXIS, "GB/s", &why).emit();
            Row::failed("bandwidth", "(x*y).sum", FUSED_REDUCTION, "GB/s", &why).emit();
            Row::failed("bandwidth", "std", STD, "GB/s", &why).emit();
            Row::failed("bandwidth", "fill", FILL, "GB/s", &why).emit();
            Row::failed("bandwidth", "rand", RAND, "GB/s", &why).emit();
        }
    }
    match wanted("gather").then(|| gather_rows(&stream)).transpose() {
        Ok(None) => {}
        Ok(Some(rows)) => rows.iter().for_each(Row::emit),
        Err(why) => {
            for (case, implementation) in GATHER_ROWS {
                Row::failed("bandwidth", case, implementation, "GB/s", &why).emit();
            }
        }
    }
    if wanted("sort") {
        sort_rows(&stream).iter().for_each(Row::emit);
    }
    if std::env::var("BENCH_ARRAY_ONLY").is_ok() && wanted("rows") {
        row_sort_rows(&stream).iter().for_each(Row::emit);
    }
    if wanted("algorithms") {
        algorithm_rows(&stream).iter().for_each(Row::emit);
        device_algorithm_rows(&stream).iter().for_each(Row::emit);
    }
    match wanted("scan").then(|| scan_select_rows(&stream)).transpose() {
        Ok(None) => {}
        Ok(Some(rows)) => rows.iter().for_each(Row::emit),
        Err(why) => {
            for (case, implementation) in SCAN_SELECT_ROWS {
                Row::failed("bandwidth", case, implementation, "GB/s", &why).emit();
            }
        }
    }
    match wanted("host").then(|| expression_overhead(&stream)).transpose() {
        Ok(None) => {}
        Ok(Some(rows)) => rows.iter().for_each(Row::emit),
        Err(why) => {
            Row::failed("host", "expression launch", EXPRESSION_LAUNCH, "us/call", &why).emit();
            Row::failed("host", "expression launch", RAW_LAUNCH, "us/call", &why).emit();
        }
    }
}

/// Whether the rows of `group` run: all do unless `BENCH_ARRAY_ONLY` lists some (`alloc`,
/// `bandwidth`, `gather`, `sort`, `algorithms`, `scan`, `host`, separated by commas).
fn wanted(group: &str) -> bool {
    match std::env::var("BENCH_ARRAY_ONLY") {
        Ok(groups) => groups.split(',').any(|g| g.trim() == group),
        Err(_) => true,
    }
}

/// The shapes of [`row_sort_rows`]: rows and their length.
const ROW_SORT_SHAPES: [(usize, usize); 4] = [(1 << 16, 1 << 10), (1 << 20, 64), (1 << 24, 4), (1 << 13, 1 << 11)];

/// `sort(-1)` of f32 and f64 matrices of [`ROW_SORT_SHAPES`], keys per second.
fn row_sort_rows(stream: &Stream) -> Vec<Row> {
    let mut rows = Vec::new();
    for (count, len) in ROW_SORT_SHAPES {
        rows.push(row_sort_row::<f32>(
            stream,
            &format!("sort rows {count}x{len} f32"),
            (count, len),
        ));
        rows.push(row_sort_row::<f64>(
            stream,
            &format!("sort rows {count}x{len} f64"),
            (count, len),
        ));
    }
    rows
}

/// Row `case`: `sort(-1)` of a `count` x `len` matrix of random `T`, checked sorted row by row,
/// keys per second.
fn row_sort_row<T: Element + PartialOrd>(stream: &Stream, case: &str, (count, len): (usize, usize)) -> Row {
    let stats = random::rand::<T>(stream, count * len, 14)
        .and_then(|x| x.reshape(vec![count, len]))
        .map_err(text)
        .and_then(|x| {
            timed_and_checked(
                stream,
                || x.sort(-1).map_err(text),
                |s| s.to_vec().map_err(text)?.chunks(len).try_for_each(sorted),
            )
        });
    let (_, implementation, unit) = SORT_ROWS[3];
    per_second_row(case, implementation, unit, count * len, stats)
}

/// `elements` (keys or queries) per op of `stats`, as billions per second.
fn per_second_row(case: &str, implementation: &str, unit: &str, elements: usize, stats: Result<Stats, String>) -> Row {
    match stats {
        Ok(stats) => Row::value(
            "sort",
            case,
            implementation,
            unit,
            elements as f64 / (stats.median * 1e-3) / 1e9,
            format!(
                "{elements} per op; median of {} event-timed samples of {} ops ({:.3} ms/op)",
                stats.samples, stats.per_sample, stats.median
            ),
        ),
        Err(why) => Row::failed("sort", case, implementation, unit, &why),
    }
}

/// Times `op` (which returns its result) and checks the last result with `check`.
fn timed_and_checked<R>(
    stream: &Stream,
    mut op: impl FnMut() -> Result<R, String>,
    check: impl FnOnce(R) -> Result<(), String>,
) -> Result<Stats, String> {
    let mut last = None;
    let stats = time_on_stream(stream, || {
        last = Some(op()?);
        Ok(())
    })?;
    check(last.ok_or("no result")?)?;
    Ok(stats)
}

/// Whether `values` is sorted in NumPy's order (`f32` here: no NaN in the inputs).
fn sorted<T: PartialOrd>(values: &[T]) -> Result<(), String> {
    match values.windows(2).position(|w| w[0] > w[1]) {
        Some(i) => Err(format!("not sorted at {i}")),
        None => Ok(()),
    }
}

/// The rows of [`SORT_ROWS`], each checked against the host after timing.
fn sort_rows(stream: &Stream) -> Vec<Row> {
    let big = BANDWIDTH_ELEMS;
    let mid = 1usize << 26;
    let mut rows = Vec::new();
    let f32_keys = random::rand::<f32>(stream, big, 11).map_err(text);
    let stats = f32_keys.as_ref().map_err(Clone::clone).and_then(|x| {
        timed_and_checked(
            stream,
            || x.sort(-1).map_err(text),
            |s| sorted(&s.to_vec().map_err(text)?),
        )
    });
    rows.push(per_second_row(
        SORT_ROWS[0].0,
        SORT_ROWS[0].1,
        SORT_ROWS[0].2,
        big,
        stats,
    ));
    drop(f32_keys);
    let i32_keys = random::Generator::new(12)
        .randint::<i32>(stream, big, i64::from(i32::MIN), i64::from(i32::MAX) + 1)
        .map_err(text);
    let stats = i32_keys.as_ref().map_err(Clone::clone).and_then(|x| {
        timed_and_checked(
            stream,
            || x.sort(-1).map_err(text),
            |s| sorted(&s.to_vec().map_err(text)?),
        )
    });
    rows.push(per_second_row(
        SORT_ROWS[1].0,
        SORT_ROWS[1].1,
        SORT_ROWS[1].2,
        big,
        stats,
    ));
    drop(i32_keys);
    let stats = random::rand::<f32>(stream, mid, 13).map_err(text).and_then(|x| {
        let host = x.to_vec().map_err(text)?;
        timed_and_checked(
            stream,
            || x.argsort(-1).map_err(text),
            |index| {
                let index = index.to_vec().map_err(text)?;
                let gathered: Vec<f32> = index.iter().map(|&i| host[i as usize]).collect();
                sorted(&gathered)
            },
        )
    });
    rows.push(per_second_row(
        SORT_ROWS[2].0,
        SORT_ROWS[2].1,
        SORT_ROWS[2].2,
        mid,
        stats,
    ));
    rows.push(row_sort_row::<f32>(stream, SORT_ROWS[3].0, (1 << 16, 1 << 10)));
    let queries_len = 1usize << 20;
    let stats = (|| {
        let keys = random::rand::<f32>(stream, mid, 15)
            .and_then(|x| x.sort(-1))
            .map_err(text)?;
        let queries = random::rand::<f32>(stream, queries_len, 16).map_err(text)?;
        let (host_keys, host_queries) = (keys.to_vec().map_err(text)?, queries.to_vec().map_err(text)?);
        timed_and_checked(
            stream,
            || keys.searchsorted(&queries, Side::Left, None).map_err(text),
            |found| {
                let found = found.to_vec().map_err(text)?;
                let wrong = host_queries
                    .iter()
                    .zip(&found)
                    .position(|(q, &at)| host_keys.partition_point(|k| k < q) as i64 != at);
                match wrong {
                    Some(i) => Err(format!("searchsorted is wrong at {i}")),
                    None => Ok(()),
                }
            },
        )
    })();
    rows.push(per_second_row(
        SORT_ROWS[4].0,
        SORT_ROWS[4].1,
        SORT_ROWS[4].2,
        queries_len,
        stats,
    ));
    rows
}

/// The host's NumPy `percentile(values, q)` (linear method) of `values`, which it reorders.
fn host_quantile(values: &mut [f32], q: f64) -> f64 {
    let position = q * (values.len() - 1) as f64;
    let below = position.floor() as usize;
    let (_, &mut low, above) = values.select_nth_unstable_by(below, f32::total_cmp);
    let high = above.iter().copied().fold(f32::INFINITY, f32::min);
    let high = if below + 1 < values.len() { high } else { low };
    f64::from(low) + (position - below as f64) * (f64::from(high) - f64::from(low))
}

/// `Ok` when `got` is within a relative `1e-6` of the host's `want`.
fn close_to(what: &str, got: f64, want: f64) -> Result<(), String> {
    match (got - want).abs() <= 1e-6 * want.abs().max(1e-30) {
        true => Ok(()),
        false => Err(format!("{what} is {got}, the host gives {want}")),
    }
}

/// The rows of [`ALGORITHM_ROWS`]: milliseconds per call, each result checked against the host
/// after timing.
fn algorithm_rows(stream: &Stream) -> Vec<Row> {
    let n = 1usize << 26;
    let distinct = 1usize << 20;
    let bins = 1024usize;
    let row = |index: usize, stats: Result<Stats, String>| {
        let (case, implementation) = ALGORITHM_ROWS[index];
        Row::measured("algorithms", case, implementation, "ms", stats)
    };
    let mut rows = Vec::new();
    let stats = random::Generator::new(21)
        .randint::<i64>(stream, n, 0, distinct as i64)
        .map_err(text)
        .and_then(|x| {
            timed_and_checked(
                stream,
                || x.unique().map_err(text),
                |u| {
                    let u = u.to_vec().map_err(text)?;
                    // 2^26 draws of 2^20 values: each is missed with probability e^-64.
                    match u.len() == distinct && u.iter().enumerate().all(|(i, &v)| v == i as i64) {
                        true => Ok(()),
                        false => Err(format!("unique gave {} values, want 0..{distinct}", u.len())),
                    }
                },
            )
        });
    rows.push(row(0, stats));
    let stats = random::Generator::new(22)
        .randint::<i64>(stream, n, 0, bins as i64)
        .map_err(text)
        .and_then(|k| {
            timed_and_checked(
                stream,
                || k.bincount(bins).map_err(text),
                |counts| {
                    let counts = counts.to_vec().map_err(text)?;
                    match counts.len() == bins && counts.iter().sum::<i64>() == n as i64 {
                        true => Ok(()),
                        false => Err(format!(
                            "bincount gave {} bins holding {}",
                            counts.len(),
                            counts.iter().sum::<i64>()
                        )),
                    }
                },
            )
        });
    rows.push(row(1, stats));
    let stats = random::rand::<f32>(stream, n, 23).map_err(text).and_then(|x| {
        timed_and_checked(
            stream,
            || x.histogram(256, Some((0.0, 1.0))).map_err(text),
            |(counts, _)| {
                let counts = counts.to_vec().map_err(text)?;
                // rand's values lie in [0, 1): every one is counted.
                match counts.len() == 256 && counts.iter().sum::<i64>() == n as i64 {
                    true => Ok(()),
                    false => Err(format!(
                        "histogram counted {} in {} bins",
                        counts.iter().sum::<i64>(),
                        counts.len()
                    )),
                }
            },
        )
    });
    rows.push(row(2, stats));
    for (index, len, q) in [(3, n, 0.5), (4, 1usize << 24, 0.9)] {
        let stats = random::rand::<f32>(stream, len, 24 + index as u64)
            .map_err(text)
            .and_then(|x| {
                let mut host = x.to_vec().map_err(text)?;
                let want = host_quantile(&mut host, q);
                timed_and_checked(
                    stream,
                    || match index {
                        3 => x.median(0).map_err(text),
                        _ => x.percentile(100.0 * q, 0, QuantileMethod::Linear).map_err(text),
                    },
                    |got| close_to(ALGORITHM_ROWS[index].0, f64::from(got.item().map_err(text)?), want),
                )
            });
        rows.push(row(index, stats));
    }
    // Transforms of ones, as torch's and CuPy's rows (bench_sort.py): 2^24 at frequency 0.
    let peak = (1usize << 24) as f64;
    let spectrum = |first: Complex<f32>| close_to("the zero frequency", f64::from(first.re), peak);
    let stats = DeviceArray::full(stream, 1usize << 24, Complex::new(1.0f32, 0.0))
        .map_err(text)
        .and_then(|signal| {
            timed_and_checked(
                stream,
                || fft::fft(&signal, None, -1, FftNorm::Backward).map_err(text),
                |got| spectrum(got.slice(&[Slice::from(0..1)]).map_err(text)?.to_vec().map_err(text)?[0]),
            )
        });
    rows.push(row(5, stats));
    let stats = DeviceArray::full(stream, [4096usize, 4096], 1.0f32)
        .map_err(text)
        .and_then(|image| {
            timed_and_checked(
                stream,
                || fft::rfft2(&image, None, Axes::ALL, FftNorm::Backward).map_err(text),
                |got| {
                    let corner = got.slice(&[Slice::from(0..1), Slice::from(0..1)]).map_err(text)?;
                    spectrum(corner.to_vec().map_err(text)?[0])
                },
            )
        });
    rows.push(row(6, stats));
    // `rfft(x * window)`: the product written by one fused kernel, then the plan (load
    // callbacks are off by default); torch and CuPy evaluate the product first. Ones: each row's
    // zero frequency is 2^16.
    let stats = DeviceArray::full(stream, [256usize, 1 << 16], 1.0f32)
        .and_then(|x| Ok((x, DeviceArray::full(stream, 1usize << 16, 1.0f32)?)))
        .map_err(text)
        .and_then(|(x, window)| {
            timed_and_checked(
                stream,
                || fft::rfft(&x * &window, None, -1, FftNorm::Backward).map_err(text),
                |got| {
                    let corner = got.slice(&[Slice::from(0..1), Slice::from(0..1)]).map_err(text)?;
                    close_to(
                        "the zero frequency",
                        f64::from(corner.to_vec().map_err(text)?[0].re),
                        65536.0,
                    )
                },
            )
        });
    rows.push(row(7, stats));
    rows
}

/// The rows of [`DEVICE_ALGORITHM_ROWS`]: milliseconds per call, each result checked against
/// the host after timing.
fn device_algorithm_rows(stream: &Stream) -> Vec<Row> {
    use cuda_core::algorithms::merge_sort::MergeSort;
    use cuda_core::algorithms::reduce::{reduce, reduce_by_key};
    use cuda_core::algorithms::scan::ScanOp;
    let row = |index: usize, stats: Result<Stats, String>| {
        let (case, implementation) = DEVICE_ALGORITHM_ROWS[index];
        Row::measured("algorithms", case, implementation, "ms", stats)
    };
    let mut rows = Vec::new();
    // Ones: every partial sum is an exact integer in f32 up to 2^24 and in the f64 output.
    let n = 1usize << 28;
    let stats = DeviceArray::<f32>::ones(stream, [n]).map_err(text).and_then(|x| {
        let mut total = DeviceArray::<f64>::zeros(stream, 1).map_err(text)?;
        let stats = time_on_stream(stream, || {
            reduce::<f32, f64>(stream, &x, &mut total, ScanOp::Sum, 1.0).map_err(text)
        })?;
        close_to(DEVICE_ALGORITHM_ROWS[0].0, total.item().map_err(text)?, n as f64 + 1.0)?;
        Ok(stats)
    });
    rows.push(row(0, stats));
    let n = 1usize << 26;
    let runs = 1usize << 20;
    // Keys i >> 6: 2^20 sorted runs of 64.
    let stats = DeviceArray::<i64>::arange(stream, 0, n as i64, 1)
        .and_then(|i| i.right_shift(6).eval())
        .map_err(text)
        .and_then(|keys| {
            let values = DeviceArray::<f32>::ones(stream, [n]).map_err(text)?;
            let mut unique = DeviceArray::<i64>::zeros(stream, n).map_err(text)?;
            let mut sums = DeviceArray::<f32>::zeros(stream, n).map_err(text)?;
            let mut count = DeviceArray::<u64>::zeros(stream, 1).map_err(text)?;
            let stats = time_on_stream(stream, || {
                reduce_by_key::<i64, f32, f32>(
                    stream,
                    (&keys, &values),
                    (&mut unique, &mut sums),
                    &mut count,
                    ScanOp::Sum,
                )
                .map_err(text)
            })?;
            let sums = sums.to_vec().map_err(text)?;
            match count.to_vec().map_err(text)?[0] as usize == runs
                && sums[..runs].iter().all(|&s| s == (n / runs) as f32)
            {
                true => Ok(stats),
                false => Err("reduce_by_key: wrong runs or sums".to_string()),
            }
        });
    rows.push(row(1, stats));
    let n = 1usize << 24;
    let stats = random::rand::<f32>(stream, n, 31).map_err(text).and_then(|x| {
        let centred = (&x - 0.5f32).eval().map_err(text)?;
        let values = DeviceArray::<i64>::arange(stream, 0, n as i64, 1).map_err(text)?;
        let mut keys_out = DeviceArray::<f32>::zeros(stream, n).map_err(text)?;
        let mut values_out = DeviceArray::<i64>::zeros(stream, n).map_err(text)?;
        let by_magnitude = MergeSort::new("by_magnitude", "float", "fabsf(a) < fabsf(b)").map_err(text)?;
        let stats = time_on_stream(stream, || {
            // SAFETY: the comparator only computes with `a` and `b`.
            unsafe {
                by_magnitude.sort_pairs::<f32, i64>(stream, (&centred, &values), (&mut keys_out, &mut values_out), n)
            }
            .map_err(text)
        })?;
        let sorted = keys_out.to_vec().map_err(text)?;
        match sorted.windows(2).position(|w| w[0].abs() > w[1].abs()) {
            None => Ok(stats),
            Some(i) => Err(format!("merge sort: not sorted by magnitude at {i}")),
        }
    });
    rows.push(row(2, stats));
    // Segments of pseudo-random lengths below 2048, back to back, then a gap to the end.
    let n = 1usize << 26;
    let mut ends = Vec::with_capacity(1 << 16);
    let mut at = 0i64;
    for i in 0..1i64 << 16 {
        at += (i * 7919) % 2048;
        ends.push(at);
    }
    let begins: Vec<i64> = std::iter::once(0)
        .chain(ends[..ends.len() - 1].iter().copied())
        .collect();
    let stats = random::rand::<f32>(stream, n, 32).map_err(text).and_then(|keys| {
        use cuda_core::algorithms::sort::{segmented_sort_pairs, SortOrder};
        let d_begins = DeviceArray::from_slice(stream, &begins).map_err(text)?;
        let d_ends = DeviceArray::from_slice(stream, &ends).map_err(text)?;
        let values = DeviceArray::<i64>::arange(stream, 0, n as i64, 1).map_err(text)?;
        let mut keys_out = DeviceArray::<f32>::zeros(stream, n).map_err(text)?;
        let mut values_out = DeviceArray::<i64>::zeros(stream, n).map_err(text)?;
        let segments = (&d_begins, &d_ends);
        let stats = time_on_stream(stream, || {
            let (keys, values) = (&keys, &values);
            let outputs = (&mut keys_out, &mut values_out);
            segmented_sort_pairs::<f32, i64>(
                stream,
                (keys, values),
                outputs,
                n,
                segments,
                begins.len(),
                SortOrder::Ascending,
            )
            .map_err(text)
        })?;
        let sorted_keys = keys_out.to_vec().map_err(text)?;
        for (&begin, &end) in begins.iter().zip(&ends) {
            sorted(&sorted_keys[begin as usize..end as usize])?;
        }
        Ok(stats)
    });
    rows.push(row(3, stats));
    let stats = random::rand::<f32>(stream, 1 << 26, 33).map_err(text).and_then(|x| {
        let x = x.reshape([1 << 16, 1 << 10]).map_err(text)?;
        timed_and_checked(
            stream,
            || x.median(-1).map_err(text),
            |m| match m.shape() == [1 << 16] {
                true => Ok(()),
                false => Err(format!("median along rows: shape {:?}", m.shape())),
            },
        )
    });
    rows.push(row(4, stats));
    rows
}

/// Host time per call of a cache-hit evaluation of `w = x * y + z` on [`SMALL_N`] elements
/// (expression building, hashing, checks, launch) against a `RawKernel` launch of the same
/// operation, in alternating batches.
fn expression_overhead(stream: &Stream) -> Result<Vec<Row>, String> {
    let x = DeviceArray::<f32>::full(stream, SMALL_N, 2.0).map_err(text)?;
    let y = DeviceArray::<f32>::full(stream, SMALL_N, 3.0).map_err(text)?;
    let z = DeviceArray::<f32>::full(stream, SMALL_N, 1.0).map_err(text)?;
    let mut w = DeviceArray::<f32>::empty(stream, SMALL_N).map_err(text)?;
    let raw = RawKernel::new(
        r#"extern "C" __global__ void fma3(const float *x, const float *y, const float *z, float *w, unsigned n) {
            unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
            if (i < n) w[i] = x[i] * y[i] + z[i];
        }"#,
        "fma3",
        ProgramOptions::default(),
    )
    .map_err(text)?;
    let config = LaunchConfig::for_num_elems(SMALL_N as u32);
    let sync = || stream.synchronize().map_err(text);
    let mut raw_launch = || {
        // SAFETY: fma3 reads SMALL_N floats of x, y and z and writes SMALL_N of w.
        unsafe { raw.launch(stream, &config, (&x, &y, &z, &mut w, SMALL_N as u32)) }.map_err(text)
    };
    raw_launch()?;
    let raw_stats = time_batches(
        LAUNCH_WARMUP_BATCHES,
        LAUNCH_BATCHES,
        LAUNCH_BATCH,
        sync,
        &mut raw_launch,
    )?;
    let mut expression = || w.assign(&x * &y + &z).map_err(text);
    expression()?;
    let expression_stats = time_batches(
        LAUNCH_WARMUP_BATCHES,
        LAUNCH_BATCHES,
        LAUNCH_BATCH,
        sync,
        &mut expression,
    )?;
    if w.to_vec().map_err(text)?.iter().any(|&v| v != 7.0) {
        return Err("x*y+z is wrong".into());
    }
    let ratio = expression_stats.median / raw_stats.median;
    let detail = |stats: &Stats| {
        format!(
            "{SMALL_N} f32, host time per call, median of {} batches of {} (sync between batches); expression / RawKernel = {ratio:.2}",
            stats.samples, stats.per_sample
        )
    };
    Ok(vec![
        Row::value(
            "host",
            "expression launch",
            RAW_LAUNCH,
            "us/call",
            raw_stats.median,
            detail(&raw_stats),
        ),
        Row::value(
            "host",
            "expression launch",
            EXPRESSION_LAUNCH,
            "us/call",
            expression_stats.median,
            detail(&expression_stats),
        ),
    ])
}

fn pool_pairs(pool: &MemoryPool, stream: &Stream, bytes: usize) -> Result<Stats, String> {
    time_pairs(stream, || {
        let block = pool.alloc(stream, bytes).map_err(text)?;
        drop(block); // back to the stream's free list
        Ok(())
    })
}

fn array_pairs(stream: &Stream, bytes: usize) -> Result<Stats, String> {
    time_pairs(stream, || {
        let array = DeviceArray::<u8>::empty(stream, bytes).map_err(text)?;
        drop(array);
        Ok(())
    })
}

/// Times `alloc_and_free` in the pool batches, synchronising `stream` between them.
fn time_pairs(stream: &Stream, alloc_and_free: impl FnMut() -> Result<(), String>) -> Result<Stats, String> {
    time_batches(
        POOL_WARMUP_BATCHES,
        POOL_BATCHES,
        POOL_BATCH,
        || stream.synchronize().map_err(text),
        alloc_and_free,
    )
}

/// Milliseconds per `op` (median over samples of [`OPS_PER_SAMPLE`] ops) timed with events on
/// `stream`, after [`bandwidth_samples`]' warm-up.
fn time_on_stream(stream: &Stream, mut op: impl FnMut() -> Result<(), String>) -> Result<Stats, String> {
    let start = Event::new(stream.context(), EventFlags::DEFAULT).map_err(text)?;
    let end = Event::new(stream.context(), EventFlags::DEFAULT).map_err(text)?;
    let samples = bandwidth_samples(|| {
        start.record(stream).map_err(text)?;
        for _ in 0..OPS_PER_SAMPLE {
            op()?;
        }
        end.record(stream).map_err(text)?;
        end.synchronize().map_err(text)?;
        Ok(f64::from(start.elapsed_ms(&end).map_err(text)?) / OPS_PER_SAMPLE as f64)
    })?;
    Stats::from_samples(samples, OPS_PER_SAMPLE)
}

fn gbps(bytes: usize, ms: f64) -> f64 {
    bytes as f64 / (ms * 1e-3) / 1e9
}

fn bandwidth_row(case: &str, implementation: &str, bytes: usize, stats: &Stats, copy_gbps: Option<f64>) -> Row {
    sized_bandwidth_row("2^28 f32", case, implementation, bytes, stats, copy_gbps)
}

/// A bandwidth row whose detail starts with `what` (the arrays the operation moves).
fn sized_bandwidth_row(
    what: &str,
    case: &str,
    implementation: &str,
    bytes: usize,
    stats: &Stats,
    copy_gbps: Option<f64>,
) -> Row {
    let value = gbps(bytes, stats.median);
    let versus_copy = match copy_gbps {
        Some(copy) => format!(
            "; {:.3} of the D2D copy measured in this run ({copy:.0} GB/s)",
            value / copy
        ),
        None => String::new(),
    };
    Row::value(
        "bandwidth",
        case,
        implementation,
        "GB/s",
        value,
        format!(
            "{what}, {:.2} GiB read+written per op; median of {} event-timed samples of {} ops ({:.3} ms/op); p10..p90 {:.0}..{:.0} GB/s{versus_copy}",
            bytes as f64 / (1u64 << 30) as f64,
            stats.samples,
            stats.per_sample,
            stats.median,
            gbps(bytes, stats.p90),
            gbps(bytes, stats.p10)
        ),
    )
}

fn bandwidth_rows(stream: &Stream) -> Result<Vec<Row>, String> {
    let n = BANDWIDTH_ELEMS;
    let elem = std::mem::size_of::<f32>();
    let mut x = DeviceArray::<f32>::empty(stream, n).map_err(text)?;
    let mut y = DeviceArray::<f32>::empty(stream, n).map_err(text)?;
    let mut z = DeviceArray::<f32>::empty(stream, n).map_err(text)?;
    x.fill(1.5).map_err(text)?;
    y.fill(0.25).map_err(text)?;

    // The device-to-device copy (cuMemcpyDtoDAsync) this binary compares against.
    let copy = time_on_stream(stream, || z.copy_from(&x).map_err(text))?;
    let copy_gbps = gbps(2 * n * elem, copy.median);
    let mut rows = vec![bandwidth_row("D2D copy", COPY, 2 * n * elem, &copy, None)];

    let elementwise = (|| {
        let axpy = ElementwiseKernel::new("T a, T x, T y", "T z", "z = a * x + y", "bench_axpy").map_err(text)?;
        let stats = time_on_stream(stream, || {
            // SAFETY: the operation reads its elements of `x` and `y` and assigns its element
            // of `z` only.
            unsafe {
                axpy.launch(
                    stream,
                    &[Arg::scalar(2.0f32), Arg::from(&x), Arg::from(&y), Arg::from(&mut z)],
                )
            }
            .map_err(text)
        })?;
        let result = z.to_vec().map_err(text)?;
        match result.iter().position(|&v| v != 3.25) {
            Some(i) => Err(format!("2.0*x+y is wrong at {i}: {} != 3.25", result[i])),
            None => Ok(stats),
        }
    })();
    rows.push(match elementwise {
        Ok(stats) => bandwidth_row("2.0*x+y", ELEMENTWISE, 3 * n * elem, &stats, Some(copy_gbps)),
        Err(why) => Row::failed("bandwidth", "2.0*x+y", ELEMENTWISE, "GB/s", &why),
    });

    // The same operation written as NumPy would: one fused kernel into the existing `z`.
    let expression = (|| {
        z.fill(0.0).map_err(text)?;
        let stats = time_on_stream(stream, || z.assign(2.0 * &x + &y).map_err(text))?;
        let result = z.to_vec().map_err(text)?;
        match result.iter().position(|&v| v != 3.25) {
            Some(i) => Err(format!("2.0*x+y (expression) is wrong at {i}: {} != 3.25", result[i])),
            None => Ok(stats),
        }
    })();
    rows.push(match expression {
        Ok(stats) => bandwidth_row("2.0*x+y", EXPRESSION, 3 * n * elem, &stats, Some(copy_gbps)),
        Err(why) => Row::failed("bandwidth", "2.0*x+y", EXPRESSION, "GB/s", &why),
    });

    let reduction = (|| {
        let mut total = None;
        let stats = time_on_stream(stream, || {
            total = Some(x.sum().map_err(text)?);
            Ok(())
        })?;
        let total = total.ok_or("no sum")?.item().map_err(text)?;
        let expected = 1.5 * n as f64;
        if ((f64::from(total) - expected) / expected).abs() > 1e-5 {
            return Err(format!("sum is wrong: {total} != {expected}"));
        }
        Ok(stats)
    })();
    let whole_sum_gbps = reduction.as_ref().ok().map(|stats| gbps(n * elem, stats.median));
    rows.push(match reduction {
        Ok(stats) => bandwidth_row("sum", REDUCTION, n * elem, &stats, Some(copy_gbps)),
        Err(why) => Row::failed("bandwidth", "sum", REDUCTION, "GB/s", &why),
    });

    // `(x * y).sum()`: the product fused into the reduction's map, reading both arrays once and
    // writing no temporary; against `sum` of one array of twice the elements (the same bytes).
    let fused = (|| {
        let mut total = None;
        let stats = time_on_stream(stream, || {
            total = Some((&x * &y).sum().map_err(text)?);
            Ok(())
        })?;
        let total = total.ok_or("no sum")?.item().map_err(text)?;
        let expected = 0.375 * n as f64;
        if ((f64::from(total) - expected) / expected).abs() > 1e-5 {
            return Err(format!("(x*y).sum is wrong: {total} != {expected}"));
        }
        let mut double = DeviceArray::<f32>::empty(stream, 2 * n).map_err(text)?;
        double.fill(1.5).map_err(text)?;
        let double_sum = time_on_stream(stream, || double.sum().map(drop).map_err(text))?;
        Ok((stats, gbps(2 * n * elem, double_sum.median)))
    })();
    rows.push(match fused {
        Ok((stats, double_gbps)) => {
            let mut row = bandwidth_row("(x*y).sum", FUSED_REDUCTION, 2 * n * elem, &stats, Some(copy_gbps));
            row.detail += &format!(
                "; {:.3} of sum over one 2^29 f32 array measured in this run ({double_gbps:.0} GB/s)",
                gbps(2 * n * elem, stats.median) / double_gbps
            );
            row
        }
        Err(why) => Row::failed("bandwidth", "(x*y).sum", FUSED_REDUCTION, "GB/s", &why),
    });

    // `std` of every element: one pass (per-thread Welford in f64, merged pairwise).
    let std = (|| {
        let mut deviation = None;
        let stats = time_on_stream(stream, || {
            deviation = Some(x.std(0).map_err(text)?);
            Ok(())
        })?;
        let deviation = deviation.ok_or("no std")?.item().map_err(text)?;
        match deviation == 0.0 {
            true => Ok(stats),
            false => Err(format!("std of equal values is {deviation}, not 0")),
        }
    })();
    rows.push(match std {
        Ok(stats) => {
            let mut row = bandwidth_row("std", STD, n * elem, &stats, Some(copy_gbps));
            if let Some(whole) = whole_sum_gbps {
                row.detail += &format!(
                    "; {:.3} of the whole-array sum measured in this run ({whole:.0} GB/s)",
                    gbps(n * elem, stats.median) / whole
                );
            }
            row
        }
        Err(why) => Row::failed("bandwidth", "std", STD, "GB/s", &why),
    });

    // The same 2^28 elements as a (2^14, 2^14) matrix, summed down the columns and along rows.
    let square = x.reshape([SIDE, SIDE]).map_err(text)?;
    for axis in [0usize, 1] {
        let case = format!("sum axis={axis}");
        let along = (|| {
            let mut sums = None;
            let stats = time_on_stream(stream, || {
                sums = Some(square.sum_axes([axis], false).map_err(text)?);
                Ok(())
            })?;
            let sums = sums.ok_or("no sums")?.to_vec().map_err(text)?;
            match sums.iter().position(|&v| v != 1.5 * SIDE as f32) {
                Some(i) => Err(format!("{case} is wrong at {i}: {} != {}", sums[i], 1.5 * SIDE as f32)),
                None => Ok(stats),
            }
        })();
        rows.push(match along {
            Ok(stats) => {
                let mut row = bandwidth_row(&case, REDUCTION_AXIS, n * elem, &stats, Some(copy_gbps));
                if let Some(whole) = whole_sum_gbps {
                    row.detail += &format!(
                        "; {:.3} of the whole-array sum measured in this run ({whole:.0} GB/s)",
                        gbps(n * elem, stats.median) / whole
                    );
                }
                row
            }
            Err(why) => Row::failed("bandwidth", &case, REDUCTION_AXIS, "GB/s", &why),
        });
    }
    drop(square);

    // Writing 2^28 f32: a constant, and Philox uniform values.
    let fill = time_on_stream(stream, || z.fill(0.5).map_err(text));
    let fill_gbps = fill.as_ref().ok().map(|stats| gbps(n * elem, stats.median));
    rows.push(match fill {
        Ok(stats) => bandwidth_row("fill", FILL, n * elem, &stats, Some(copy_gbps)),
        Err(why) => Row::failed("bandwidth", "fill", FILL, "GB/s", &why),
    });
    let rand = (|| {
        let mut generator = random::Generator::new(1);
        let mut last = None;
        let stats = time_on_stream(stream, || {
            last = Some(generator.rand::<f32>(stream, n).map_err(text)?);
            Ok(())
        })?;
        let mean = last.ok_or("no values")?.mean().map_err(text)?.item().map_err(text)?;
        match (f64::from(mean) - 0.5).abs() < 1e-3 {
            true => Ok(stats),
            false => Err(format!("rand's mean is {mean}, not 0.5")),
        }
    })();
    rows.push(match rand {
        Ok(stats) => {
            let mut row = bandwidth_row("rand", RAND, n * elem, &stats, Some(copy_gbps));
            if let Some(fill) = fill_gbps {
                row.detail += &format!(
                    "; {:.3} of fill measured in this run ({fill:.0} GB/s)",
                    gbps(n * elem, stats.median) / fill
                );
            }
            row
        }
        Err(why) => Row::failed("bandwidth", "rand", RAND, "GB/s", &why),
    });
    Ok(rows)
}

/// `concatenate` of two 2^27 f32 arrays (two copies into a new 2^28 array), and `take` of
/// [`TAKE_ELEMS`] random i64 indices from as many f32 (one gather kernel; in mode Raise also the
/// flags' read back and wait per call), each against the D2D copy of 2^28 f32 measured here.
fn gather_rows(stream: &Stream) -> Result<Vec<Row>, String> {
    let elem = std::mem::size_of::<f32>();
    let n = BANDWIDTH_ELEMS;
    let copy_gbps = {
        let x = DeviceArray::<f32>::full(stream, n, 1.5).map_err(text)?;
        let mut z = DeviceArray::<f32>::empty(stream, n).map_err(text)?;
        let copy = time_on_stream(stream, || z.copy_from(&x).map_err(text))?;
        gbps(2 * n * elem, copy.median)
    };
    let mut rows = Vec::new();
    let concatenate = (|| {
        let a = DeviceArray::<f32>::full(stream, n / 2, 1.5).map_err(text)?;
        let b = DeviceArray::<f32>::full(stream, n / 2, 0.25).map_err(text)?;
        let mut joined = None;
        let stats = time_on_stream(stream, || {
            joined = Some(DeviceArray::concatenate(&[&a, &b], 0).map_err(text)?);
            Ok(())
        })?;
        let joined = joined.ok_or("no result")?.to_vec().map_err(text)?;
        match (joined[0], joined[n / 2 - 1], joined[n / 2], joined[n - 1]) {
            (1.5, 1.5, 0.25, 0.25) => Ok(stats),
            ends => Err(format!("concatenate is wrong at its ends: {ends:?}")),
        }
    })();
    rows.push(match concatenate {
        Ok(stats) => sized_bandwidth_row(
            "two 2^27 f32 into 2^28",
            "concatenate",
            CONCATENATE,
            2 * n * elem,
            &stats,
            Some(copy_gbps),
        ),
        Err(why) => Row::failed("bandwidth", "concatenate", CONCATENATE, "GB/s", &why),
    });
    let source = DeviceArray::<f32>::arange(stream, 0.0, TAKE_ELEMS as f32, 1.0).map_err(text)?;
    let indices = random::Generator::new(7)
        .randint::<i64>(stream, TAKE_ELEMS, 0, TAKE_ELEMS as i64)
        .map_err(text)?;
    let (host_source, host_indices) = (source.to_vec().map_err(text)?, indices.to_vec().map_err(text)?);
    // Index read, element gathered, element written.
    let bytes = TAKE_ELEMS * (std::mem::size_of::<i64>() + 2 * elem);
    for (mode, implementation) in [(IndexMode::Wrap, TAKE_WRAP), (IndexMode::Raise, TAKE_RAISE)] {
        let take = (|| {
            let mut taken = None;
            let stats = time_on_stream(stream, || {
                taken = Some(source.take(&indices, None, mode).map_err(text)?);
                Ok(())
            })?;
            let taken = taken.ok_or("no result")?.to_vec().map_err(text)?;
            let wrong = taken
                .iter()
                .zip(&host_indices)
                .position(|(&got, &j)| got != host_source[j as usize]);
            match wrong {
                Some(i) => Err(format!("take is wrong at {i}")),
                None => Ok(stats),
            }
        })();
        rows.push(match take {
            Ok(stats) => sized_bandwidth_row(
                "2^26 random i64 indices into 2^26 f32",
                "take",
                implementation,
                bytes,
                &stats,
                Some(copy_gbps),
            ),
            Err(why) => Row::failed("bandwidth", "take", implementation, "GB/s", &why),
        });
    }
    Ok(rows)
}

/// `cumsum` of 2^28 f32 (the flattened array, and the rows of its `(2^18, 2^10)` view: the
/// segmented form) and of 2^27 f64, `x[x > 0.5]` on 2^26 f32 with the comparison fused into
/// the select kernel, and `flatnonzero` of 2^26 u8 half of which are nonzero: GB/s of the bytes
/// read and written (the selections' times in the detail, with their count read-back).
fn scan_select_rows(stream: &Stream) -> Result<Vec<Row>, String> {
    let elem = std::mem::size_of::<f32>();
    let n = BANDWIDTH_ELEMS;
    let x = DeviceArray::<f32>::full(stream, n, 1.0).map_err(text)?;
    let copy_gbps = {
        let mut z = DeviceArray::<f32>::empty(stream, n).map_err(text)?;
        let copy = time_on_stream(stream, || z.copy_from(&x).map_err(text))?;
        gbps(2 * n * elem, copy.median)
    };
    let mut rows = Vec::new();
    let rows_view = x.reshape([n >> 10, 1 << 10]).map_err(text)?;
    for (case, array, axis, last) in [
        ("cumsum", &x, OptionalAxis::from(None), n as f32),
        ("cumsum axis=1", &rows_view, OptionalAxis::from(1), 1024.0),
    ] {
        let scanned = timed_and_checked(
            stream,
            || array.cumsum(axis).map_err(text),
            |out| {
                // Sums of ones rise along each row: the largest is the last (beyond 2^24 within
                // f32's rounding).
                let largest = out.max().map_err(text)?.item().map_err(text)?;
                match ((largest - last) / last).abs() < 1e-3 {
                    true => Ok(()),
                    false => Err(format!("{case} reaches {largest}, expected {last}")),
                }
            },
        );
        rows.push(match scanned {
            Ok(stats) => bandwidth_row(case, CUMSUM, 2 * n * elem, &stats, Some(copy_gbps)),
            Err(why) => Row::failed("bandwidth", case, CUMSUM, "GB/s", &why),
        });
    }
    // The same bytes as 2^27 f64, whose look-back passes 8-byte values.
    let half = n / 2;
    let wide = DeviceArray::<f64>::full(stream, half, 1.0).map_err(text).and_then(|x| {
        timed_and_checked(
            stream,
            || x.cumsum(OptionalAxis::from(None)).map_err(text),
            |out| {
                let largest = out.max().map_err(text)?.item().map_err(text)?;
                match largest == half as f64 {
                    true => Ok(()),
                    false => Err(format!("cumsum f64 reaches {largest}, expected {half}")),
                }
            },
        )
    });
    rows.push(match wide {
        Ok(stats) => sized_bandwidth_row("2^27 f64", "cumsum f64", CUMSUM, 2 * half * 8, &stats, Some(copy_gbps)),
        Err(why) => Row::failed("bandwidth", "cumsum f64", CUMSUM, "GB/s", &why),
    });
    let m = SELECT_ELEMS;
    let values = random::rand::<f32>(stream, m, 11).map_err(text)?;
    let extract = (|| {
        let mut out = None;
        let stats = time_on_stream(stream, || {
            out = Some(values.extract(values.gt(0.5)).map_err(text)?);
            Ok(())
        })?;
        let kept = out.ok_or("no result")?.len();
        let want = values
            .gt(0.5)
            .eval()
            .map_err(text)?
            .count_nonzero()
            .map_err(text)?
            .item()
            .map_err(text)?;
        match kept as i64 == want {
            true => Ok((stats, kept)),
            false => Err(format!("x[x > 0.5] kept {kept}, count_nonzero gives {want}")),
        }
    })();
    rows.push(match extract {
        Ok((stats, kept)) => sized_bandwidth_row(
            "2^26 f32, about half kept, count read back",
            "x[x > 0.5]",
            EXTRACT_FUSED,
            (m + kept) * elem,
            &stats,
            Some(copy_gbps),
        ),
        Err(why) => Row::failed("bandwidth", "x[x > 0.5]", EXTRACT_FUSED, "GB/s", &why),
    });
    let flags = (|| {
        let host: Vec<u8> = (0..m).map(|i| ((i * 2_654_435_761usize) >> 13) as u8 & 1).collect();
        let want = host.iter().filter(|&&f| f != 0).count();
        let flags = DeviceArray::from_slice(stream, &host).map_err(text)?;
        let mut out = None;
        let stats = time_on_stream(stream, || {
            out = Some(flags.flatnonzero().map_err(text)?);
            Ok(())
        })?;
        match out.ok_or("no result")?.len() == want {
            true => Ok((stats, want)),
            false => Err(format!("nonzero found another count than the host's {want}")),
        }
    })();
    rows.push(match flags {
        Ok((stats, kept)) => sized_bandwidth_row(
            "2^26 u8, half nonzero, i64 indices, count read back",
            "nonzero",
            FLATNONZERO,
            m + kept * std::mem::size_of::<i64>(),
            &stats,
            Some(copy_gbps),
        ),
        Err(why) => Row::failed("bandwidth", "nonzero", FLATNONZERO, "GB/s", &why),
    });
    Ok(rows)
}
