//! The sequences of `tests::sequences` on the real driver, once each, with
//! the test kernels compiled by NVRTC. On a machine without a driver or GPU
//! this prints `skipped: <why>` and passes, unless `CUDA_REQUIRE_GPU=1`.
//!
//! This binary never loads the stand-in driver.

use std::io::Write;

use tests::sequences::SEQUENCES;

/// Why the GPU tests cannot run here, if they cannot.
fn unavailable() -> Option<String> {
    match cuda_driver::Device::count() {
        Ok(0) => Some("no CUDA device".into()),
        Ok(_) => None,
        Err(error) => Some(error.to_string()),
    }
}

#[test]
fn sequences_pass_on_the_real_driver() {
    if let Some(why) = unavailable() {
        assert!(
            std::env::var("CUDA_REQUIRE_GPU").as_deref() != Ok("1"),
            "CUDA_REQUIRE_GPU=1 but the driver is unusable: {why}"
        );
        let _ = writeln!(std::io::stdout(), "skipped: {why}");
        return;
    }
    let ptx = tests::kernels::compile_ptx().unwrap_or_else(|why| panic!("NVRTC: {why}"));
    let mut failures = Vec::new();
    for (name, sequence) in SEQUENCES {
        let outcome = std::panic::catch_unwind(|| sequence(&ptx));
        let verdict = match outcome {
            Ok(Ok(())) => "ok".to_string(),
            Ok(Err(error)) => format!("FAILED: {error}"),
            Err(panic) => format!("PANICKED: {}", tests::faults::panic_text(&panic)),
        };
        let _ = writeln!(std::io::stdout(), "real driver: {name}: {verdict}");
        if verdict != "ok" {
            failures.push(format!("{name}: {verdict}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
