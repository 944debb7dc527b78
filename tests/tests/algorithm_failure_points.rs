//! Every driver call of each device-wide algorithm family's sequence
//! (`tests::algorithm_sequences`: reduce, scan, select, sort, merge sort, segmented sort, search, histogram,
//! median, unique) fails once, with each injected error in turn, against the stand-in driver,
//! whose generated kernels run as no-ops here: no panic, no leak, no double free, the injected
//! error or success. And a count read back from memory no kernel wrote is a typed error, never a
//! view past the output. The generated kernels are compiled by NVRTC; without it the tests say
//! so and pass.

use std::io::Write;

use cuda_core::{DeviceArray, ExprOps};
use cuda_driver::Stream;
use tests::algorithm_sequences::{ALGORITHM_SEQUENCES, GARBAGE_COUNT};
use tests::checks::nvrtc_available;
use tests::sequences::primary;
use tests::{fake, faults};

/// Runs every family's sequence once per failure point, with generated kernels as no-ops;
/// returns the broken promises.
fn exercise_all(fake: &fake::Session, deferred: bool) -> Vec<String> {
    fake.set_deferred(deferred);
    fake.set_bodiless_kernels_noop(true);
    let mode = if deferred { " (deferred work)" } else { "" };
    let mut out = std::io::stdout();
    let mut failures = Vec::new();
    let mut total = 0;
    for (name, sequence) in ALGORITHM_SEQUENCES {
        let report = faults::exercise(fake, name, &|| sequence(fake::KERNELS));
        let _ = writeln!(
            out,
            "algorithm failure points{mode}: {name}: {} driver calls x {} errors = {} runs; {} broken, \
             {} releases refused by the driver, {} releases skipped by a destructor",
            report.calls,
            fake::INJECTED_ERRORS.len(),
            report.points,
            report.failures.len(),
            report.refused_releases,
            report.skipped_releases.len(),
        );
        total += report.points;
        failures.extend(report.failures);
        failures.extend(report.skipped_releases);
    }
    let _ = writeln!(out, "algorithm failure points exercised{mode}: {total}");
    fake.set_bodiless_kernels_noop(false);
    fake.set_deferred(false);
    failures
}

fn first_few(problems: &[String]) -> String {
    let shown: Vec<&str> = problems.iter().take(30).map(String::as_str).collect();
    format!(
        "{} in all; the first {}:\n{}",
        problems.len(),
        shown.len(),
        shown.join("\n")
    )
}

/// Each run of each family returns Ok or the injected error, never panics, double-frees or
/// leaks (a destructor releases even after its context's synchronisation failed).
#[test]
fn every_algorithm_failure_point_fails_cleanly() {
    let fake = fake::session();
    if !nvrtc_available("algorithm failure points") {
        return;
    }
    let failures = exercise_all(&fake, false);
    assert!(failures.is_empty(), "broken promises: {}", first_few(&failures));
}

/// The same with stream work deferred until waited for, as on a GPU.
#[test]
fn every_algorithm_failure_point_fails_cleanly_with_deferred_work() {
    let fake = fake::session();
    if !nvrtc_available("algorithm failure points, deferred") {
        return;
    }
    let failures = exercise_all(&fake, true);
    assert!(failures.is_empty(), "broken promises: {}", first_few(&failures));
}

/// Offsets arrays shorter than the segment count, or keys shorter than the length, are typed
/// errors of the segmented sort, before anything is queued.
#[test]
fn a_segmented_sort_with_short_offsets_is_a_typed_error() {
    use cuda_core::algorithms::sort::{segmented_sort_keys, segmented_sort_pairs, SortOrder};
    let fake = fake::session();
    if !nvrtc_available("segmented sort offsets") {
        return;
    }
    faults::clear_current_contexts();
    let context = primary().unwrap();
    let stream = Stream::new(&context).unwrap();
    let keys = DeviceArray::from_slice(&stream, &[3.0f32, 1.0, 2.0, 0.5]).unwrap();
    let values = DeviceArray::from_slice(&stream, &[0i32, 1, 2, 3]).unwrap();
    let begins = DeviceArray::from_slice(&stream, &[0i64, 2]).unwrap();
    let ends = DeviceArray::from_slice(&stream, &[2i64, 4]).unwrap();
    let short = DeviceArray::from_slice(&stream, &[4i64]).unwrap();
    let mut keys_out = DeviceArray::<f32>::empty(&stream, 4).unwrap();
    let mut values_out = DeviceArray::<i32>::empty(&stream, 4).unwrap();
    let order = SortOrder::Ascending;
    let refused = |what: &str, outcome: cuda_core::Result<()>| match outcome {
        Err(cuda_core::Error::InvalidValue(why)) if why.contains(what) => {}
        other => panic!("{what}: want a typed refusal, got {other:?}"),
    };
    refused(
        "end offsets",
        segmented_sort_keys::<f32>(&stream, &keys, &mut keys_out, 4, (&begins, &short), 2, order),
    );
    refused(
        "begin offsets",
        segmented_sort_keys::<f32>(&stream, &keys, &mut keys_out, 4, (&short, &ends), 2, order),
    );
    refused(
        "keys",
        segmented_sort_keys::<f32>(&stream, &keys, &mut keys_out, 5, (&begins, &ends), 2, order),
    );
    refused(
        "values",
        segmented_sort_pairs::<f32, i64>(
            &stream,
            (&keys, &values),
            (&mut keys_out, &mut values_out),
            4,
            (&begins, &ends),
            2,
            order,
        ),
    );
    drop((keys, values, begins, ends, short, keys_out, values_out));
    stream.synchronize().unwrap();
    drop(stream);
    assert!(cuda_core::release_process_caches());
    drop(context);
    let counts = fake.counts();
    assert!(counts.is_clean(), "left over: {counts}");
}

/// A count the select and unique kernels did not write (the stand-in's new memory holds
/// 0xa5a5...) is far above the candidates: each routine that reads one back refuses it with a
/// typed error instead of returning a view of that many elements past its output.
#[test]
fn a_count_above_the_candidates_is_a_typed_error() {
    let fake = fake::session();
    if !nvrtc_available("garbage counts") {
        return;
    }
    fake.set_bodiless_kernels_noop(true);
    faults::clear_current_contexts();
    cuda_core::load_generated_as_ptx(true);
    let context = primary().unwrap();
    let stream = Stream::new(&context).unwrap();
    let refused = |what: &str, outcome: cuda_core::Result<usize>| match outcome {
        Err(cuda_core::Error::InvalidValue(why)) if why.contains(GARBAGE_COUNT) => {}
        other => panic!("{what}: want the typed refusal of a count above the candidates, got {other:?}"),
    };
    let x = DeviceArray::from_slice(&stream, &[0.25f32, 0.75, 0.5, 0.9]).unwrap();
    refused("x[x > 0.5]", x.extract(x.gt(0.5)).map(|a| a.len()));
    refused("flatnonzero", x.flatnonzero().map(|a| a.len()));
    refused("argwhere", x.argwhere().map(|a| a.len()));
    let keys = DeviceArray::from_slice(&stream, &[3i64, 1, 3, 2]).unwrap();
    refused("unique", keys.unique().map(|a| a.len()));
    drop((x, keys));
    stream.synchronize().unwrap();
    drop(stream);
    assert!(cuda_core::release_process_caches());
    drop(context);
    fake.set_bodiless_kernels_noop(false);
    let counts = fake.counts();
    assert!(counts.is_clean(), "left over: {counts}");
}
