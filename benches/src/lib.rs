//! The benchmark harness shared by the Rust benchmark binaries (`src/bin/`):
//! the one kernel source, the sizes, the timing method and the row format
//! that `run.sh` collects from every implementation (Rust, C++, Python).
//!
//! ```no_run
//! use benches::{time_batches, Row, LAUNCH_BATCH};
//!
//! let stats = time_batches(2, 10, LAUNCH_BATCH, || Ok(()), || Ok(()));
//! Row::measured("launch", "empty", "example", "us/launch", stats).emit();
//! ```
//!
//! Every implementation prints one line per figure, `ROW {json}`, with the
//! keys `bench`, `case`, `impl`, `value` (a number or null), `unit`,
//! `status` (`ok`, `not available: why`, `not built yet`, `failed: why`) and
//! `detail`; `benches/python/report.py` turns them into the table.
//!
//! Every benchmark binary takes an optional [`Part`] argument (`launch` or
//! `other`), so `run.sh` can run the launch rows of every implementation in
//! several interleaved rounds and the slow rows once.

#![warn(missing_docs)]

pub mod raw;

use std::time::Instant;

/// The kernels every implementation compiles: `empty()` and
/// `axpy(float a, const float* x, float* y, unsigned long long n)`.
pub const KERNELS: &str = include_str!("../kernels/bench.cu");

/// Launches per timed batch; the stream is synchronised between batches,
/// outside the timed part, so the figure is the host's enqueue cost.
pub const LAUNCH_BATCH: usize = 256;
/// Batches run and thrown away before timing.
pub const LAUNCH_WARMUP_BATCHES: usize = 20;
/// Timed batches; the figure is the median batch divided by its launches.
pub const LAUNCH_BATCHES: usize = 200;
/// Same-process pairs of batches (one batch of each launch path per pair) behind the paired rows.
pub const PAIRED_BATCHES: usize = 200;
/// Elements of the `axpy` launches (grid `AXPY_N / AXPY_BLOCK`, one element a thread).
pub const AXPY_N: u64 = 1 << 16;
/// Threads per block of the `axpy` launches.
pub const AXPY_BLOCK: u32 = 256;
/// Allocation sizes: label and bytes.
pub const ALLOC_SIZES: [(&str, usize); 3] = [("1 KiB", 1 << 10), ("1 MiB", 1 << 20), ("256 MiB", 256 << 20)];
/// Elements (f32) of the bandwidth buffers: 2^28, 1 GiB each.
pub const BANDWIDTH_ELEMS: usize = 1 << 28;
/// Timed repetitions of each bandwidth operation (after warm-up).
pub const BANDWIDTH_REPS: usize = 20;
/// Timed cold NVRTC compiles (after one warm-up compile).
pub const NVRTC_REPS: usize = 10;

/// Host inputs `x` and `y` of the `axpy` launches, [`AXPY_N`] elements each.
pub fn axpy_inputs() -> (Vec<f32>, Vec<f32>) {
    let n = AXPY_N as usize;
    let x = (0..n).map(|i| (i % 7) as f32 * 0.5).collect();
    let y = (0..n).map(|i| (i % 13) as f32).collect();
    (x, y)
}

/// Checks `result`, the `y` read back after one `axpy` with `a = 2` on the inputs `x` and `y`.
pub fn check_axpy(x: &[f32], y: &[f32], result: &[f32]) -> Result<(), String> {
    match (0..x.len()).find(|&i| result[i] != 2.0 * x[i] + y[i]) {
        Some(i) => Err(format!("axpy is wrong at {i}: {} != 2*{}+{}", result[i], x[i], y[i])),
        None => Ok(()),
    }
}

/// Alloc+free pairs per timed batch for a size: fewer for the slow large sizes.
pub fn alloc_batch(bytes: usize) -> usize {
    if bytes >= 64 << 20 {
        8
    } else {
        64
    }
}

/// The median and spread of per-operation times, in microseconds.
#[derive(Clone, Copy, Debug)]
pub struct Stats {
    /// The median.
    pub median: f64,
    /// The 10th percentile.
    pub p10: f64,
    /// The 90th percentile.
    pub p90: f64,
    /// Number of samples (batches) behind the median.
    pub samples: usize,
    /// Operations per sample.
    pub per_sample: usize,
}

impl Stats {
    /// Summarises samples that are each the time of one operation (already divided by the batch size).
    pub fn from_samples(mut samples: Vec<f64>, per_sample: usize) -> Result<Stats, String> {
        if samples.is_empty() {
            return Err("no samples".into());
        }
        samples.sort_by(f64::total_cmp);
        let at = |q: f64| samples[((samples.len() - 1) as f64 * q).round() as usize];
        Ok(Stats {
            median: at(0.5),
            p10: at(0.1),
            p90: at(0.9),
            samples: samples.len(),
            per_sample,
        })
    }

    fn detail(&self) -> String {
        format!(
            "median of {} samples of {} op(s); p10 {:.4}, p90 {:.4}",
            self.samples, self.per_sample, self.p10, self.p90
        )
    }
}

/// Times `batches` batches of `per_batch` calls of `body`, after `warmup`
/// batches; `sync` runs before every batch, outside the timed part.
/// Returns microseconds per call.
pub fn time_batches(
    warmup: usize,
    batches: usize,
    per_batch: usize,
    mut sync: impl FnMut() -> Result<(), String>,
    mut body: impl FnMut() -> Result<(), String>,
) -> Result<Stats, String> {
    let mut samples = Vec::with_capacity(batches);
    for batch in 0..warmup + batches {
        sync()?;
        let start = Instant::now();
        for _ in 0..per_batch {
            body()?;
        }
        let elapsed = start.elapsed();
        if batch >= warmup {
            samples.push(elapsed.as_secs_f64() * 1e6 / per_batch as f64);
        }
    }
    sync()?;
    Stats::from_samples(samples, per_batch)
}

/// Which rows a benchmark binary measures, from its first argument: `launch` (the launch rows,
/// which `run.sh` repeats in rounds), `other` (everything else, run once) or none (all).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Part {
    /// Everything.
    All,
    /// The launch rows only.
    Launch,
    /// Everything but the launch rows.
    Other,
}

impl Part {
    /// The part named by the process's first argument; exits with a usage message on anything else.
    pub fn from_args() -> Part {
        let args: Vec<String> = std::env::args().skip(1).collect();
        match Part::parse(&args) {
            Ok(part) => part,
            Err(why) => {
                eprintln!("{why}");
                std::process::exit(2);
            }
        }
    }

    fn parse(args: &[String]) -> Result<Part, String> {
        match args {
            [] => Ok(Part::All),
            [one] if one == "launch" => Ok(Part::Launch),
            [one] if one == "other" => Ok(Part::Other),
            _ => Err(format!("usage: [launch|other] (got {args:?})")),
        }
    }

    /// Whether the launch rows are measured.
    pub fn launch(self) -> bool {
        self != Part::Other
    }

    /// Whether the rows other than launch are measured.
    pub fn other(self) -> bool {
        self != Part::Launch
    }
}

/// Two launch paths timed in the same process on the same stream and kernel:
/// each path's per-launch time, and per pair of batches the ratio `ours / raw`
/// and the difference `ours - raw` (microseconds per launch).
#[derive(Clone, Copy, Debug)]
pub struct Paired {
    /// The raw `cuLaunchKernel` batches.
    pub raw: Stats,
    /// The batches of the implementation measured.
    pub ours: Stats,
    /// `ours / raw` over the pairs.
    pub ratio: Stats,
    /// `ours - raw` over the pairs.
    pub difference: Stats,
}

/// Times `pairs` pairs of batches of `per_batch` calls, one batch of `raw` and one of `ours` per pair,
/// after `warmup` pairs; the order alternates (raw, ours, then ours, raw: ABBA), so drift and
/// order effects fall on both paths alike. `sync` runs before every batch, outside the timed part.
pub fn time_paired(
    warmup: usize,
    pairs: usize,
    per_batch: usize,
    mut sync: impl FnMut() -> Result<(), String>,
    mut raw: impl FnMut() -> Result<(), String>,
    mut ours: impl FnMut() -> Result<(), String>,
) -> Result<Paired, String> {
    let mut batch = |body: &mut dyn FnMut() -> Result<(), String>| -> Result<f64, String> {
        sync()?;
        let start = Instant::now();
        for _ in 0..per_batch {
            body()?;
        }
        Ok(start.elapsed().as_secs_f64() * 1e6 / per_batch as f64)
    };
    let (mut raws, mut ourss, mut ratios, mut differences) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for pair in 0..warmup + pairs {
        let (raw_time, ours_time) = if pair % 2 == 0 {
            let raw_time = batch(&mut raw)?;
            (raw_time, batch(&mut ours)?)
        } else {
            let ours_time = batch(&mut ours)?;
            (batch(&mut raw)?, ours_time)
        };
        if pair >= warmup {
            raws.push(raw_time);
            ourss.push(ours_time);
            ratios.push(ours_time / raw_time);
            differences.push(ours_time - raw_time);
        }
    }
    sync()?;
    Ok(Paired {
        raw: Stats::from_samples(raws, per_batch)?,
        ours: Stats::from_samples(ourss, per_batch)?,
        ratio: Stats::from_samples(ratios, 1)?,
        difference: Stats::from_samples(differences, 1)?,
    })
}

/// [`time_paired`] as every paired launch row uses it: [`LAUNCH_WARMUP_BATCHES`] warm-up pairs,
/// [`PAIRED_BATCHES`] timed pairs of [`LAUNCH_BATCH`] launches per batch.
pub fn time_launch_pairs(
    sync: impl FnMut() -> Result<(), String>,
    raw: impl FnMut() -> Result<(), String>,
    ours: impl FnMut() -> Result<(), String>,
) -> Result<Paired, String> {
    time_paired(LAUNCH_WARMUP_BATCHES, PAIRED_BATCHES, LAUNCH_BATCH, sync, raw, ours)
}

/// The launch rows of one implementation measured against raw `cuLaunchKernel` (cuda-sys, cached
/// function pointer) in the same process: its time per launch, the paired ratio over raw and the
/// paired difference in nanoseconds (the host cost the implementation adds to the driver call).
pub fn paired_rows(case: &str, implementation: &str, raw: &str, paired: Result<Paired, String>) -> Vec<Row> {
    let ratio_name = format!("{implementation} (paired ratio vs {raw}, same process)");
    let difference_name = format!("{implementation} (added host cost vs {raw}, same process)");
    let paired = match paired {
        Ok(paired) => paired,
        Err(why) => {
            return vec![
                Row::failed("launch", case, implementation, "us/launch", &why),
                Row::failed("launch", case, &ratio_name, "x", &why),
                Row::failed("launch", case, &difference_name, "ns/launch", &why),
            ]
        }
    };
    let Paired {
        raw: raw_stats,
        ours,
        ratio,
        difference,
    } = paired;
    let mut main = Row::measured("launch", case, implementation, "us/launch", Ok(ours));
    main.detail = format!(
        "{}; batches interleaved (ABBA) with {raw} in the same process, which took {:.4} us",
        main.detail, raw_stats.median
    );
    let ratio_row = Row::value(
        "launch",
        case,
        &ratio_name,
        "x",
        ratio.median,
        format!(
            "median over {} pairs of batches (ABBA order, same stream and kernel) of ours/raw; p10 {:.4}, p90 {:.4}; \
             medians {:.4} us (ours) and {:.4} us (raw)",
            ratio.samples, ratio.p10, ratio.p90, ours.median, raw_stats.median
        ),
    );
    let difference_row = Row::value(
        "launch",
        case,
        &difference_name,
        "ns/launch",
        difference.median * 1e3,
        format!(
            "median over {} pairs of batches of (ours - raw) per launch; p10 {:.1} ns, p90 {:.1} ns \
             (the spread is the driver call's noise, not ours)",
            difference.samples,
            difference.p10 * 1e3,
            difference.p90 * 1e3
        ),
    );
    vec![main, ratio_row, difference_row]
}

/// `setup`'s value (a device's stream, say), or `None` after printing `no GPU: <why>` (the
/// error's first line) and emitting each `(case, implementation)` of `rows` of `bench` in `unit`
/// as not available for that reason.
pub fn gpu_or_unavailable<T, E: std::fmt::Display>(
    setup: Result<T, E>,
    bench: &str,
    unit: &str,
    rows: &[(&str, &str)],
) -> Option<T> {
    match setup {
        Ok(value) => Some(value),
        Err(why) => {
            let why = why.to_string().lines().next().unwrap_or_default().to_string();
            println!("no GPU: {why}");
            for (case, implementation) in rows {
                Row::unavailable(bench, case, implementation, unit, &why).emit();
            }
            None
        }
    }
}

/// A stream on device 0 (whose name is printed), or `None` after [`gpu_or_unavailable`]'s report
/// of `rows`.
#[cfg(feature = "core")]
pub fn stream_or_unavailable(bench: &str, unit: &str, rows: &[(&str, &str)]) -> Option<cuda_core::Stream> {
    let setup = cuda_core::Device::new(0).and_then(|device| {
        println!("device: {}", device.name()?);
        device.create_stream()
    });
    gpu_or_unavailable(setup, bench, unit, rows)
}

/// The rows of a driver-level implementation without a GPU, all unavailable for `why`: the launch
/// rows (when `part` has them), then (when it has the others) the allocation rows of every size
/// and the `D2D copy` bandwidth row, each under its implementation name.
pub fn unavailable_driver_rows(part: Part, why: &str, launch: &str, alloc_sync: &str, alloc_async: &str, copy: &str) {
    for case in ["empty", "axpy"].into_iter().filter(|_| part.launch()) {
        Row::unavailable("launch", case, launch, "us/launch", why).emit();
    }
    if !part.other() {
        return;
    }
    for (case, _) in ALLOC_SIZES {
        Row::unavailable("alloc", case, alloc_sync, "us/pair", why).emit();
        Row::unavailable("alloc", case, alloc_async, "us/pair", why).emit();
    }
    Row::unavailable("bandwidth", "D2D copy", copy, "GB/s", why).emit();
}

/// Milliseconds the GPU is kept busy before bandwidth samples are taken, so that every row is
/// timed at the clocks the card settles at under load (a cold card ramps up over the first
/// milliseconds, which made the first binary's copy read ~10% slower than the next one's).
pub const BANDWIDTH_WARMUP_MS: f64 = 300.0;

/// [`BANDWIDTH_REPS`] samples of `sample` (event-timed milliseconds of one operation or batch),
/// taken after calling it for at least [`BANDWIDTH_WARMUP_MS`] of wall time and 3 times.
pub fn bandwidth_samples(mut sample: impl FnMut() -> Result<f64, String>) -> Result<Vec<f64>, String> {
    let warmup = Instant::now();
    let mut calls = 0;
    while calls < 3 || warmup.elapsed().as_secs_f64() * 1e3 < BANDWIDTH_WARMUP_MS {
        sample()?;
        calls += 1;
    }
    (0..BANDWIDTH_REPS).map(|_| sample()).collect()
}

/// The `D2D copy` bandwidth row of `implementation`: `samples` are the event-timed
/// milliseconds of copies of [`BANDWIDTH_ELEMS`] f32 of 1.5, `tail` the last elements
/// of the destination read back afterwards (all 1.5 if the copy reached the end).
pub fn d2d_copy_row(implementation: &str, tail: &[f32], samples: Vec<f64>) -> Result<Row, String> {
    if tail.iter().any(|&v| v != 1.5) {
        return Err("the copy did not reach the end of the buffer".into());
    }
    let bytes = BANDWIDTH_ELEMS * 4;
    let stats = Stats::from_samples(samples, 1)?;
    let gbps = |ms: f64| 2.0 * bytes as f64 / (ms * 1e-3) / 1e9;
    Ok(Row::value(
        "bandwidth",
        "D2D copy",
        implementation,
        "GB/s",
        gbps(stats.median),
        format!(
            "2^28 f32, read+written bytes over the median of {} event-timed copies ({:.3} ms); p10..p90 {:.0}..{:.0} GB/s",
            stats.samples,
            stats.median,
            gbps(stats.p90),
            gbps(stats.p10)
        ),
    ))
}

/// One figure of the table.
#[derive(Clone, Debug)]
pub struct Row {
    /// The benchmark (`launch`, `alloc`, `bandwidth`, `nvrtc`, `host`).
    pub bench: String,
    /// What is measured.
    pub case: String,
    /// Who does it.
    pub implementation: String,
    /// The figure, when there is one.
    pub value: Option<f64>,
    /// The figure's unit.
    pub unit: String,
    /// `ok`, `failed: ...` or `unavailable: ...`.
    pub status: String,
    /// How it was measured.
    pub detail: String,
}

impl Row {
    fn new(bench: &str, case: &str, implementation: &str, unit: &str) -> Row {
        Row {
            bench: bench.into(),
            case: case.into(),
            implementation: implementation.into(),
            value: None,
            unit: unit.into(),
            status: String::new(),
            detail: String::new(),
        }
    }

    /// A timed figure (microseconds per operation, or the unit given), or the reason there is none.
    pub fn measured(bench: &str, case: &str, implementation: &str, unit: &str, stats: Result<Stats, String>) -> Row {
        let mut row = Row::new(bench, case, implementation, unit);
        match stats {
            Ok(stats) => {
                row.value = Some(stats.median);
                row.status = "ok".into();
                row.detail = stats.detail();
            }
            Err(why) => row.status = format!("failed: {why}"),
        }
        row
    }

    /// A figure computed by the caller (a bandwidth, say), with its own detail.
    pub fn value(bench: &str, case: &str, implementation: &str, unit: &str, value: f64, detail: String) -> Row {
        let mut row = Row::new(bench, case, implementation, unit);
        row.value = Some(value);
        row.status = "ok".into();
        row.detail = detail;
        row
    }

    /// A row that could not be measured here, and why.
    pub fn unavailable(bench: &str, case: &str, implementation: &str, unit: &str, why: &str) -> Row {
        let mut row = Row::new(bench, case, implementation, unit);
        row.status = format!("not available: {why}");
        row
    }

    /// A row that failed while measuring, and why.
    pub fn failed(bench: &str, case: &str, implementation: &str, unit: &str, why: &str) -> Row {
        let mut row = Row::new(bench, case, implementation, unit);
        row.status = format!("failed: {why}");
        row
    }

    /// A row whose implementation does not exist yet in this workspace.
    pub fn not_built(bench: &str, case: &str, implementation: &str, unit: &str) -> Row {
        let mut row = Row::new(bench, case, implementation, unit);
        row.status = "not built yet".into();
        row
    }

    /// The row as one JSON object.
    pub fn to_json(&self) -> String {
        let value = match self.value {
            Some(v) if v.is_finite() => format!("{v}"),
            _ => "null".into(),
        };
        format!(
            "{{\"bench\":{},\"case\":{},\"impl\":{},\"value\":{value},\"unit\":{},\"status\":{},\"detail\":{}}}",
            json_string(&self.bench),
            json_string(&self.case),
            json_string(&self.implementation),
            json_string(&self.unit),
            json_string(&self.status),
            json_string(&self.detail),
        )
    }

    /// Prints the row as `ROW {json}` on stdout, the line `run.sh` collects.
    pub fn emit(&self) {
        println!("ROW {}", self.to_json());
    }
}

/// A JSON string literal for `text`.
fn json_string(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stats_take_the_median_and_spread() {
        let stats = Stats::from_samples((1..=11).rev().map(f64::from).collect(), 4).unwrap();
        assert_eq!(stats.median, 6.0);
        assert_eq!(stats.p10, 2.0);
        assert_eq!(stats.p90, 10.0);
        assert_eq!(stats.samples, 11);
        assert!(Stats::from_samples(Vec::new(), 1).is_err());
    }

    #[test]
    fn d2d_copy_row_checks_the_tail_and_reports_the_median_bandwidth() {
        let short = d2d_copy_row("x", &[1.5, 0.0], vec![1.0]);
        assert_eq!(short.unwrap_err(), "the copy did not reach the end of the buffer");
        // 2 * 2^30 bytes in 2 ms: 1073.741824 GB/s.
        let row = d2d_copy_row("x", &[1.5; 4], vec![3.0, 2.0, 1.0]).unwrap();
        assert_eq!(
            (row.bench.as_str(), row.case.as_str(), row.unit.as_str()),
            ("bandwidth", "D2D copy", "GB/s")
        );
        assert_eq!(row.implementation, "x");
        assert!((row.value.unwrap() - 1073.741824).abs() < 1e-6);
        assert!(row
            .detail
            .starts_with("2^28 f32, read+written bytes over the median of 3 event-timed copies (2.000 ms)"));
    }

    #[test]
    fn check_axpy_finds_the_first_wrong_element() {
        let (x, y) = axpy_inputs();
        assert_eq!((x.len(), y.len()), (AXPY_N as usize, AXPY_N as usize));
        let mut result: Vec<f32> = x.iter().zip(&y).map(|(x, y)| 2.0 * x + y).collect();
        assert_eq!(check_axpy(&x, &y, &result), Ok(()));
        result[9] += 1.0;
        assert_eq!(
            check_axpy(&x, &y, &result).unwrap_err(),
            "axpy is wrong at 9: 12 != 2*1+9"
        );
    }

    #[test]
    fn time_batches_calls_the_body_per_batch_and_syncs_between() {
        let (mut syncs, mut calls) = (0, 0);
        let stats = time_batches(
            2,
            3,
            5,
            || {
                syncs += 1;
                Ok(())
            },
            || {
                calls += 1;
                Ok(())
            },
        )
        .unwrap();
        assert_eq!(calls, 25);
        assert_eq!(syncs, 6);
        assert_eq!(stats.samples, 3);
        let failing = time_batches(0, 1, 1, || Ok(()), || Err("boom".to_string()));
        assert_eq!(failing.unwrap_err(), "boom");
    }

    #[test]
    fn time_paired_alternates_the_order_and_pairs_the_batches() {
        let order = std::cell::RefCell::new(Vec::new());
        let paired = time_paired(
            1,
            4,
            2,
            || Ok(()),
            || {
                order.borrow_mut().push('r');
                Ok(())
            },
            || {
                order.borrow_mut().push('o');
                Ok(())
            },
        )
        .unwrap();
        let order: String = order.into_inner().into_iter().collect();
        assert_eq!(order, "rroooorrrroooorrrroo");
        assert_eq!(paired.ratio.samples, 4);
        assert_eq!(paired.raw.samples, 4);
        let failing = time_paired(0, 1, 1, || Ok(()), || Ok(()), || Err("boom".to_string()));
        assert_eq!(failing.unwrap_err(), "boom");
    }

    #[test]
    fn paired_rows_name_the_ratio_and_the_difference() {
        let stats = |median| Stats {
            median,
            p10: median,
            p90: median,
            samples: 3,
            per_sample: 256,
        };
        let paired = Paired {
            raw: stats(4.0),
            ours: stats(4.1),
            ratio: stats(1.025),
            difference: stats(0.1),
        };
        let rows = paired_rows("empty", "ours", "raw", Ok(paired));
        assert_eq!(rows.len(), 3);
        assert_eq!(rows[0].value, Some(4.1));
        assert_eq!(rows[1].implementation, "ours (paired ratio vs raw, same process)");
        assert_eq!(rows[1].value, Some(1.025));
        assert_eq!(rows[2].unit, "ns/launch");
        assert!((rows[2].value.unwrap() - 100.0).abs() < 1e-9);
        let failed = paired_rows("axpy", "ours", "raw", Err("no".into()));
        assert!(failed.iter().all(|r| r.status == "failed: no" && r.value.is_none()));
    }

    #[test]
    fn parts_from_arguments() {
        let args = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(Part::parse(&args(&[])), Ok(Part::All));
        assert_eq!(Part::parse(&args(&["launch"])), Ok(Part::Launch));
        assert_eq!(Part::parse(&args(&["other"])), Ok(Part::Other));
        assert!(Part::parse(&args(&["bogus"])).is_err());
        assert!(Part::Launch.launch() && !Part::Launch.other());
        assert!(Part::All.launch() && Part::All.other());
    }

    #[test]
    fn rows_are_json_with_escapes_and_null_values() {
        let row = Row::unavailable("launch", "a \"b\"\n", "x\\y", "us", "no driver");
        assert_eq!(
            row.to_json(),
            r#"{"bench":"launch","case":"a \"b\"\n","impl":"x\\y","value":null,"unit":"us","status":"not available: no driver","detail":""}"#
        );
        let row = Row::value("bandwidth", "copy", "raw", "GB/s", 4160.5, "d".into());
        assert!(row.to_json().contains(r#""value":4160.5"#), "{}", row.to_json());
    }

    #[test]
    fn the_kernel_source_declares_both_kernels() {
        assert!(KERNELS.contains("void empty()"));
        assert!(KERNELS.contains("void axpy(float a, const float* x, float* y, unsigned long long n)"));
    }
}
