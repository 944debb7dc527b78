//! Integration tests of the workspace, and their support code.
//!
//! The tests themselves are in `tests/tests/`. This library holds what they
//! share: [`fake`], the fault-injecting stand-in driver (a test double that
//! only tests load); [`faults`], which runs a sequence of safe calls once per
//! driver call with that call failing; [`sequences`], the sequences it runs
//! (which also run on a GPU); [`algorithm_sequences`], one per family of
//! cuda-core's device-wide algorithms; [`kernels`], the test kernels as CUDA C; and [`checks`], the
//! assertions the stand-in's test files share.
//!
//! ```no_run
//! let fake = tests::fake::session(); // loads the stand-in as the CUDA driver
//! assert!(fake.counts().is_clean());
//! ```

#![warn(missing_docs)]

pub mod algorithm_sequences;
pub mod checks;
pub mod fake;
pub mod fake_libs;
pub mod faults;
pub mod kernels;
pub mod sequences;
