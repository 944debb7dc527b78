//! Developer tasks: `cargo xtask <task>`.
//!
//! - `bindgen`: regenerate `cuda-sys/src/generated/` from the pinned CUDA headers.
//! - `test`: fetch the pinned NVRTC/cudart/nvJitLink wheels if needed and run the workspace tests.
//! - `emulate [BINARY [TEST...]]`: cuda-core's GPU tests against the stand-in driver with
//!   emulated kernels (no GPU needed).
//! - `gpu-bundle [--keep-going]`: build every test binary, example and benchmark in release into
//!   `target/gpu-bundle/` with the `run.sh` that runs them on a GPU machine without Rust.
//! - `bench [LOGDIR]`: build the bundle and run only its benchmarks (on a machine with a GPU).
//! - `cuda12-libs [OUT]`: CUDA 12's NVRTC, runtime and nvJitLink, xz-compressed, for the
//!   bundle's CUDA 12 run (`CUDA12_LIBS=OUT run.sh LOGDIR`).

mod bench;
mod bindgen;
mod cuda12_libs;
mod emulate;
mod gpu_bundle;
mod json;
mod test;
mod wheels;
mod workspace;

use std::path::PathBuf;
use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let root = workspace_root();
    let result = match args.first().map(String::as_str) {
        Some("bindgen") => bindgen::run(&root, &args[1..]),
        Some("test") => test::run(&root, &args[1..]),
        Some("emulate") => emulate::run(&root, &args[1..]),
        Some("gpu-bundle") => gpu_bundle::run(&root, &args[1..]),
        Some("bench") => bench::run(&root, &args[1..]),
        Some("cuda12-libs") => cuda12_libs::run(&root, &args[1..]),
        _ => {
            eprintln!(
                "usage: cargo xtask <bindgen [--only MODULE] | test [--no-leakcheck] [cargo test args] | emulate [BINARY [TEST...]] | gpu-bundle [--keep-going] | bench [LOGDIR] | cuda12-libs [OUT]>"
            );
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
