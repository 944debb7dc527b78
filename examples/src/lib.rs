//! Runnable examples live in `examples/examples/`; run one with
//! `cargo run --release --example vector_add`. This library holds what they share.
//!
//! ```no_run
//! use std::process::ExitCode;
//!
//! fn main() -> ExitCode {
//!     // Prints `demo: error: ...` and exits non-zero when the body fails.
//!     examples::run("demo", || {
//!         let device = cuda_core::Device::new(0)?;
//!         println!("{}", device.name()?);
//!         Ok(())
//!     })
//! }
//! ```

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
