//! Every driver call of every sequence of `tests::sequences` fails once, with
//! each injected error in turn (see `tests::faults`), against the stand-in
//! driver. The sequences also run once each, unfailed, on NVRTC-compiled PTX
//! here and on a GPU (`real_driver.rs`).

use std::io::Write;

use cuda_driver::{DeviceBuffer, Error, Stream};
use tests::sequences::{expect, primary, Sequence, SEQUENCES};
use tests::{fake, faults, sequences};

/// Sequences that show a cuda-driver defect (see the ignored test).
const DEFECT_SEQUENCES: [(&str, Sequence); 1] = [(
    "graph capture left early on error",
    sequences::graph_capture_left_early_on_error,
)];

/// Runs every sequence once per failure point; prints the counts. In
/// deferred mode the stand-in runs stream work only when it is waited for.
fn exercise_all(list: &[(&str, Sequence)], deferred: bool) -> Vec<faults::Report> {
    let fake = fake::session();
    fake.set_deferred(deferred);
    let mode = if deferred { " (deferred work)" } else { "" };
    // Written to stdout directly, so the summary shows even when the test passes.
    let mut out = std::io::stdout();
    let mut reports = Vec::new();
    for (name, sequence) in list {
        let report = faults::exercise(&fake, name, &|| sequence(fake::KERNELS));
        let _ = writeln!(
            out,
            "failure points{mode}: {name}: {} driver calls x {} errors = {} runs; {} broken, \
             {} releases refused by the driver, {} releases skipped by a destructor",
            report.calls,
            fake::INJECTED_ERRORS.len(),
            report.points,
            report.failures.len(),
            report.refused_releases,
            report.skipped_releases.len(),
        );
        reports.push(report);
    }
    let total: usize = reports.iter().map(|r| r.points).sum();
    let _ = writeln!(out, "failure points exercised{mode}: {total}");
    fake.set_deferred(false);
    reports
}

fn first_few(problems: &[String]) -> String {
    let shown: Vec<&str> = problems.iter().take(40).map(String::as_str).collect();
    format!(
        "{} in all; the first {}:\n{}",
        problems.len(),
        shown.len(),
        shown.join("\n")
    )
}

/// Each run returns Ok or the injected error, never panics, double-frees or
/// uses a freed handle, leaks nothing but what the driver refused to free,
/// and leaves the driver usable.
#[test]
fn every_failure_point_fails_cleanly() {
    let reports = exercise_all(&SEQUENCES, false);
    assert!(reports.iter().map(|r| r.points).sum::<usize>() > 1000);
    let failures: Vec<String> = reports.into_iter().flat_map(|r| r.failures).collect();
    assert!(failures.is_empty(), "broken promises: {}", first_few(&failures));
}

/// The same with stream work deferred until waited for, as on a GPU: no
/// operation reads results or frees memory before the work is done.
#[test]
fn every_failure_point_fails_cleanly_with_deferred_work() {
    let reports = exercise_all(&SEQUENCES, true);
    let failures: Vec<String> = reports.into_iter().flat_map(|r| r.failures).collect();
    assert!(failures.is_empty(), "broken promises: {}", first_few(&failures));
}

/// A destructor releases its handle even when making its context current or
/// waiting for the context fails first, and leaving a capture region early
/// leaks nothing.
#[test]
fn destructors_release_even_after_an_earlier_failure() {
    let all: Vec<(&str, Sequence)> = SEQUENCES.iter().chain(&DEFECT_SEQUENCES).copied().collect();
    let problems: Vec<String> = exercise_all(&all, false)
        .into_iter()
        .flat_map(|r| r.skipped_releases.into_iter().chain(r.failures))
        .collect();
    assert!(problems.is_empty(), "leaks: {}", first_few(&problems));
}

/// The checks can fail: planted bugs of each kind are reported.
#[test]
fn the_checks_catch_planted_bugs() {
    let fake = fake::session();
    let double_free = faults::exercise(&fake, "planted double free", &|| {
        let buffer = DeviceBuffer::<u8>::alloc(&primary()?, 16)?;
        // SAFETY: deliberately breaks `as_raw`'s contract (the buffer frees the pointer again on drop);
        // the stand-in refuses the second free instead of touching freed memory.
        unsafe { cuda_driver::sys::driver()?.cuMemFree_v2()?(buffer.as_raw()) };
        Ok(())
    });
    assert!(
        double_free.failures.iter().any(|f| f.contains("1 double frees")),
        "{:?}",
        double_free.failures
    );

    let leak = faults::exercise(&fake, "planted leak", &|| {
        let context = primary()?;
        context.set_current()?;
        let mut stream = std::ptr::null_mut();
        // SAFETY: `stream` is a valid out-pointer and a context is current; the stream is never
        // destroyed, on purpose.
        let result = unsafe { cuda_driver::sys::driver()?.cuStreamCreate()?(&mut stream, 0) };
        expect(
            "cuStreamCreate",
            result,
            cuda_driver::sys::driver::CUresult::CUDA_SUCCESS,
        )
    });
    assert!(
        leak.failures
            .iter()
            .any(|f| f.contains("1 objects destroyed with their context")),
        "{:?}",
        leak.failures
    );
    fake.destroy_all();

    let wrong_error = faults::exercise(&fake, "planted wrong error", &|| {
        let context = primary()?;
        DeviceBuffer::<u8>::alloc(&context, 16).map_err(|_| Error::InvalidValue("lost the code".into()))?;
        Ok(())
    });
    assert!(
        wrong_error.failures.iter().any(|f| f.contains("wrong error")),
        "{:?}",
        wrong_error.failures
    );

    let panic = faults::exercise(&fake, "planted panic", &|| {
        let context = primary()?;
        DeviceBuffer::<u8>::alloc(&context, 16).expect("planted");
        Ok(())
    });
    assert!(
        panic.failures.iter().any(|f| f.contains("panicked: planted")),
        "{:?}",
        panic.failures
    );
    faults::clear_current_contexts();
    fake.destroy_all();
}

/// The sequences run on the PTX NVRTC makes of the CUDA C test kernels (the
/// stand-in reads its entry points and runs its host kernels), so the kernel
/// sources compile and their layouts match before they run on a GPU.
#[test]
fn sequences_run_on_nvrtc_ptx() {
    let fake = fake::session();
    let ptx = match tests::kernels::compile_ptx() {
        Ok(ptx) => ptx,
        Err(why) if std::env::var_os("CUDA_NVRTC_LIBRARY").is_none() => {
            let _ = writeln!(std::io::stdout(), "skipped: NVRTC not available ({why})");
            return;
        }
        Err(why) => panic!("NVRTC is configured but failed: {why}"),
    };
    assert!(ptx.contains(".entry vector_add"), "{ptx}");
    for (name, sequence) in SEQUENCES {
        faults::clear_current_contexts();
        if let Err(error) = sequence(&ptx) {
            panic!("{name} failed on NVRTC's PTX: {error}");
        }
        let counts = fake.counts();
        assert!(counts.is_clean(), "{name}: {counts}");
    }
}

/// A destructor cannot return its error: it is kept on the context and the
/// next synchronisation returns it, once, as `Error::Deferred`.
#[test]
fn destructor_errors_are_reported_by_the_next_synchronize() {
    let fake = fake::session();
    faults::clear_current_contexts();
    let context = primary().unwrap();
    let stream = Stream::new(&context).unwrap();
    let event = cuda_driver::Event::new(&context, cuda_driver::EventFlags::DEFAULT).unwrap();
    fake.fail_named("cuEventDestroy_v2", fake::UNKNOWN);
    drop(event);
    fake.clear_faults();
    match stream.synchronize() {
        Err(Error::Deferred(errors)) => {
            assert_eq!(errors.len(), 1);
            assert_eq!(errors[0].code.0, fake::UNKNOWN as u32);
        }
        other => panic!("expected the destructor's error, got {other:?}"),
    }
    context.synchronize().expect("reported once");
    drop((stream, context));
    let counts = fake.counts();
    assert_eq!(
        counts.live_handles() + counts.orphaned as i64,
        1,
        "only the event the driver refused to destroy: {counts}"
    );
    fake.destroy_all();
}
