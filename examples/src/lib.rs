//! Runnable examples live in `examples/examples/`; run one with
//! `cargo run --release --example vector_add`. This library holds what they share.

#![warn(missing_docs)]

use std::process::ExitCode;

/// Runs an example's body; prints its error (without a backtrace) and exits non-zero on failure.
pub fn run(name: &str, body: impl FnOnce() -> Result<(), Box<dyn std::error::Error>>) -> ExitCode {
    match body() {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("{name}: error: {error}");
            ExitCode::FAILURE
        }
    }
}
