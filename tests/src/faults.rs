//! Failure-point testing, the way SQLite tests its allocator: run a sequence
//! of safe operations once against the stand-in driver to count the driver
//! calls it makes (k), then once per call N = 1..=k with call N failing, for
//! each error in [`fake::INJECTED_ERRORS`]. Every run must
//! - return `Ok` or an error whose [`Error::code`] is the injected code,
//! - not panic (drops included),
//! - leave no live handle, no double free, no use of a freed handle and no
//!   object freed behind its owner's back (context torn down first),
//! - leave the driver usable: a fresh allocate, copy and free works.
//!
//! One leak is the driver's own doing, not the safe layer's: when the
//! injected failure is the release call itself (`cuMemFree`,
//! `cuStreamDestroy`, ...), that one handle stays allocated. Such runs are
//! counted in [`Report::refused_releases`]. A leak after a failed *earlier*
//! call of a destructor (making the context current, waiting for it) means
//! the destructor gave up without trying to release: those are listed in
//! [`Report::skipped_releases`]. Every other leak is a failure.

use std::io::Write;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr;

use cuda_driver::sys::driver::CUresult;
use cuda_driver::{Context, Device, DeviceBuffer, Error};

use crate::fake::{self, Counts, Session};

/// What exercising one sequence found.
#[derive(Debug, Default)]
pub struct Report {
    /// The sequence's name.
    pub name: String,
    /// Driver calls the sequence makes when nothing fails (k).
    pub calls: u64,
    /// Failure points exercised: k calls times the injected errors.
    pub points: usize,
    /// Runs whose injected fault never fired (the sequence took another path).
    pub not_reached: usize,
    /// Runs where the failed call was a release the driver refused, leaving
    /// exactly that handle allocated.
    pub refused_releases: usize,
    /// Runs where a destructor did not try to release after an earlier call
    /// of it failed (making the context current or synchronising), leaking.
    pub skipped_releases: Vec<String>,
    /// Each broken promise, with the failing call and the calls made.
    pub failures: Vec<String>,
}

/// Driver calls that release a handle: when one fails, its handle stays.
const RELEASE_CALLS: [&str; 19] = [
    "cuMemFree_v2",
    "cuMemFreeAsync",
    "cuMemFreeHost",
    "cuStreamDestroy_v2",
    "cuEventDestroy_v2",
    "cuModuleUnload",
    "cuGraphDestroy",
    "cuGraphExecDestroy",
    "cuMemPoolDestroy",
    "cuLibraryUnload",
    "cuCtxDestroy_v2",
    "cuDevicePrimaryCtxRelease_v2",
    "cuMemRelease",
    "cuMemAddressFree",
    "cuArrayDestroy",
    "cuTexObjectDestroy",
    "cuSurfObjectDestroy",
    "cuIpcCloseMemHandle",
    "cuGreenCtxDestroy",
];

/// Calls a destructor makes before it releases: binding its context, waiting.
const PREPARATION_CALLS: [&str; 4] = [
    "cuCtxGetCurrent",
    "cuCtxSetCurrent",
    "cuCtxSynchronize",
    "cuStreamSynchronize",
];

/// Runs `sequence` once per failure point, with immediate and with deferred work, prints what
/// ran, and fails on any broken promise (or where the sequence made no driver call).
pub fn assert_every_failure_point_clean(fake: &Session, name: &str, sequence: &dyn Fn() -> cuda_driver::Result<()>) {
    for deferred in [false, true] {
        fake.set_deferred(deferred);
        let report = exercise(fake, name, sequence);
        let _ = writeln!(
            std::io::stdout(),
            "failure points{}: {name}: {} driver calls, {} runs, {} broken",
            if deferred { " (deferred work)" } else { "" },
            report.calls,
            report.points,
            report.failures.len()
        );
        assert!(report.points > 0, "{name} made no driver call");
        assert!(
            report.failures.is_empty() && report.skipped_releases.is_empty(),
            "{name}: {:#?} {:#?}",
            report.failures,
            report.skipped_releases
        );
    }
    fake.set_deferred(false);
}

/// Runs `sequence` clean, then once per failure point. See the module docs.
pub fn exercise(fake: &Session, name: &str, sequence: &dyn Fn() -> cuda_driver::Result<()>) -> Report {
    let mut report = Report {
        name: name.to_string(),
        ..Report::default()
    };
    if let Err(error) = Device::count() {
        report
            .failures
            .push(format!("the stand-in driver does not initialise: {error}"));
        return report;
    }

    let before = start_run(fake);
    match catch_unwind(AssertUnwindSafe(sequence)) {
        Ok(Ok(())) => {}
        Ok(Err(error)) => report.failures.push(format!("fails without injected faults: {error}")),
        Err(panic) => report
            .failures
            .push(format!("panics without injected faults: {}", panic_text(&panic))),
    }
    report.calls = fake.calls();
    let trace = fake.trace();
    if let Some(problem) = leftovers(&before, &fake.counts()) {
        report
            .failures
            .push(format!("clean run: {problem}\n    calls: {trace}"));
    }
    if !report.failures.is_empty() {
        return report;
    }

    for code in fake::INJECTED_ERRORS {
        for n in 1..=report.calls {
            let before = start_run(fake);
            fake.fail_nth(n, code);
            let outcome = catch_unwind(AssertUnwindSafe(sequence));
            fake.clear_faults();
            report.points += 1;
            let trace = fake.trace();
            let failed_call = trace
                .split(' ')
                .nth(n as usize - 1)
                .unwrap_or("(not reached)")
                .to_string();
            if fake.injected() == 0 {
                report.not_reached += 1;
            }
            let point = format!("{name}: call {n} ({failed_call}) failing with {}", code_name(code));
            match outcome {
                Ok(Ok(())) => {}
                Ok(Err(error)) if error.code() == Some(CUresult(code as u32)) => {}
                Ok(Err(error)) => report.failures.push(format!("{point}: wrong error: {error:?}")),
                Err(panic) => report
                    .failures
                    .push(format!("{point}: panicked: {}", panic_text(&panic))),
            }
            let after = fake.counts();
            if let Some(problem) = leftovers(&before, &after) {
                let leaked = after.live_handles() - before.live_handles() + after.orphaned as i64;
                let misused = after.double_frees != 0 || after.invalid_handles != 0;
                if !misused && leaked == 1 && RELEASE_CALLS.contains(&failed_call.as_str()) {
                    report.refused_releases += 1;
                } else if !misused && PREPARATION_CALLS.contains(&failed_call.as_str()) {
                    report
                        .skipped_releases
                        .push(format!("{point}: {problem}\n    calls: {trace}"));
                } else {
                    report.failures.push(format!("{point}: {problem}\n    calls: {trace}"));
                }
                // start the next run from nothing
                clear_current_contexts();
                fake.destroy_all();
            }
            let before = start_run(fake);
            if let Err(error) = catch_unwind(usable).unwrap_or_else(|p| Err(Error::InvalidValue(panic_text(&p)))) {
                report
                    .failures
                    .push(format!("{point}: the driver is not usable afterwards: {error}"));
            }
            if let Some(problem) = leftovers(&before, &fake.counts()) {
                report
                    .failures
                    .push(format!("{point}: the usability check left {problem}"));
                clear_current_contexts();
                fake.destroy_all();
            }
        }
    }
    report
}

/// Leaves no context current on this thread (so every run starts alike),
/// clears the fake's counters, and returns the live counts to compare with.
pub fn start_run(fake: &Session) -> Counts {
    clear_current_contexts();
    fake.reset();
    fake.counts()
}

/// Pops every context off the calling thread's stack.
pub fn clear_current_contexts() {
    let Ok(driver) = cuda_driver::sys::driver() else { return };
    let Ok(pop) = driver.cuCtxPopCurrent_v2() else { return };
    for _ in 0..64 {
        let mut popped = ptr::null_mut();
        // SAFETY: `popped` is a valid out-pointer; popping an empty stack is an error code.
        if unsafe { pop(&mut popped) } != CUresult::CUDA_SUCCESS {
            return;
        }
    }
}

/// A description of what a run left behind, compared with `before`.
pub fn leftovers(before: &Counts, after: &Counts) -> Option<String> {
    let leaked = after.live_handles() - before.live_handles();
    (leaked != 0 || after.double_frees != 0 || after.invalid_handles != 0 || after.orphaned != 0).then(|| {
        let mut text = String::new();
        for ((kind, a), b) in fake::Kind::ALL.iter().zip(after.live).zip(before.live) {
            if a != b {
                text.push_str(&format!("{:+} {kind:?}, ", a - b));
            }
        }
        format!(
            "{text}{} double frees, {} uses of freed or unknown handles, {} objects destroyed with their context",
            after.double_frees, after.invalid_handles, after.orphaned
        )
    })
}

/// A fresh context can allocate, copy both ways and free.
pub fn usable() -> cuda_driver::Result<()> {
    let context = Context::primary(&Device::get(0)?)?;
    let buffer = DeviceBuffer::from_slice(&context, &[1u32, 2, 3])?;
    if buffer.to_vec()? != [1, 2, 3] {
        return Err(Error::InvalidValue("the copy came back wrong".into()));
    }
    Ok(())
}

fn code_name(code: i32) -> &'static str {
    match code {
        fake::OUT_OF_MEMORY => "OUT_OF_MEMORY",
        fake::LAUNCH_FAILED => "LAUNCH_FAILED",
        fake::NOT_INITIALIZED => "NOT_INITIALIZED",
        fake::UNKNOWN => "UNKNOWN",
        _ => "an error",
    }
}

/// The message of a caught panic.
pub fn panic_text(panic: &Box<dyn std::any::Any + Send>) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "(non-text panic)".to_string())
}
