//! Developer tasks: `cargo xtask <task>`.
//!
//! - `bindgen`: regenerate `cuda-sys/src/generated/` from the pinned CUDA headers.
//! - `test`: fetch the pinned NVRTC/cudart/nvJitLink wheels if needed and run the workspace tests.

mod bindgen;
mod test;
mod wheels;

use std::path::PathBuf;
use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let root = workspace_root();
    let result = match args.first().map(String::as_str) {
        Some("bindgen") => bindgen::run(&root),
        Some("test") => test::run(&root, &args[1..]),
        _ => {
            eprintln!("usage: cargo xtask <bindgen | test [cargo test args]>");
            return ExitCode::from(2);
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("xtask: {message}");
            ExitCode::FAILURE
        }
    }
}

/// The workspace root: the parent of this crate's manifest folder.
fn workspace_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask lives one folder below the workspace root")
        .to_path_buf()
}
