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

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use cuda_sys::{Install, LibraryKind};

/// The statement of the README's NumPy-style snippet whose output it shows.
pub const NUMPY_STYLE_PRINT: &str = "println!(\"{z}\");";

/// The libraries `cargo xtask test` fetches as pinned wheels into `target/cuda-wheels/`: every
/// one that comes in a wheel.
fn fetched() -> impl Iterator<Item = LibraryKind> {
    LibraryKind::ALL
        .iter()
        .copied()
        .filter(|kind| matches!(kind.library().install, Install::Wheel(_)))
}

/// Runs an example's body; prints its error (without a backtrace) and exits non-zero on failure.
///
/// First, for NVRTC, cudart and nvJitLink: where the library's variable is unset and the usual
/// search finds no library, the copy `cargo xtask test` fetched into `target/cuda-wheels/` of
/// the `target/` folder the example runs from is used (its variable is set, and a note says
/// so), so the examples run on a fresh clone once the test command has run. The driver is
/// never taken from there.
pub fn run(name: &str, body: impl FnOnce() -> Result<(), Box<dyn std::error::Error>>) -> ExitCode {
    use_fetched_wheels(name);
    match body() {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("{name}: error: {error}");
            let message = error.to_string();
            if fetched().any(|kind| message.contains(kind.env_var())) {
                eprintln!(
                    "{name}: note: in this workspace `cargo xtask test` fetches the pinned NVRTC, cudart and \
                     nvJitLink wheels into target/cuda-wheels/, where the examples find them"
                );
            }
            ExitCode::FAILURE
        }
    }
}

/// Points each fetched library's variable at `target/cuda-wheels/` where the usual search fails.
fn use_fetched_wheels(name: &str) {
    for kind in fetched() {
        if std::env::var_os(kind.env_var()).is_some() || kind.find().is_ok() {
            continue;
        }
        let Some(file) = target_folders().iter().find_map(|t| fetched_library(t, kind)) else {
            continue;
        };
        eprintln!("{name}: note: {} from {}", kind.description(), file.display());
        // The examples call this first thing in `main`, before any thread starts or any
        // library is loaded, so nothing reads the environment concurrently.
        std::env::set_var(kind.env_var(), &file);
    }
}

/// Candidate `target/` folders: those above the running example (`target/release/examples/x`,
/// `target/debug/deps/x`). Not the folder the example was built in: a binary that names its
/// build path does not run the same from a copy elsewhere (the GPU bundle).
fn target_folders() -> Vec<PathBuf> {
    std::env::current_exe()
        .map(|exe| exe.ancestors().skip(1).take(3).map(Path::to_path_buf).collect())
        .unwrap_or_default()
}

/// `target/cuda-wheels/<wheel>-<version>/<folder>/<library>` (the folder of the library's wheel,
/// `nvidia/cu13/lib`), the newest where several versions were fetched.
fn fetched_library(target: &Path, kind: LibraryKind) -> Option<PathBuf> {
    let Install::Wheel(wheel) = kind.library().install else {
        return None;
    };
    let mut found: Vec<PathBuf> = std::fs::read_dir(target.join("cuda-wheels"))
        .ok()?
        .filter_map(Result::ok)
        .map(|fetched| fetched.path().join(wheel.folder).join(kind.loader_name()))
        .filter(|file| file.is_file())
        .collect();
    found.sort();
    found.pop()
}

/// The output the README shows for a statement of its code: the comment after `statement` on
/// the README line that holds it (`println!("{z}"); // [2.2 ...]` gives `[2.2 ...]`). An example
/// that runs the statement compares what it printed with this, so the README's printed lines
/// come from runs that the GPU bundle checks.
pub fn readme_output(statement: &str) -> Option<&'static str> {
    const README: &str = include_str!("../../README.md");
    README
        .lines()
        .find_map(|line| line.trim().strip_prefix(statement)?.trim_start().strip_prefix("// "))
        .map(str::trim)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_readme_shows_the_numpy_style_output() {
        let shown = readme_output(NUMPY_STYLE_PRINT).expect("README.md shows what numpy_style prints");
        assert!(
            shown.starts_with('[') && shown.contains(" ... ") && shown.ends_with(']'),
            "{shown}"
        );
        assert_eq!(readme_output("println!(\"{nothing}\");"), None);
    }

    #[test]
    fn finds_the_library_the_test_command_fetched() {
        let target = std::env::temp_dir().join(format!("examples-target-{}", std::process::id()));
        let lib = target.join("cuda-wheels/nvidia-cuda-nvrtc-13.0.88/nvidia/cu13/lib");
        std::fs::create_dir_all(&lib).unwrap();
        std::fs::create_dir_all(target.join("cuda-wheels/nvidia-nvjitlink-13.0.88/nvidia/cu13/lib")).unwrap();
        std::fs::write(lib.join(LibraryKind::Nvrtc.loader_name()), b"").unwrap();
        let nvrtc = fetched_library(&target, LibraryKind::Nvrtc);
        let nvjitlink = fetched_library(&target, LibraryKind::NvJitLink);
        std::fs::remove_dir_all(&target).unwrap();
        assert_eq!(nvrtc, Some(lib.join(LibraryKind::Nvrtc.loader_name())));
        assert_eq!(nvjitlink, None, "a folder without the file is not a library");
    }

    #[test]
    fn looks_in_the_three_folders_above_the_executable() {
        let exe = std::env::current_exe().unwrap();
        let folders = target_folders();
        // A test binary is `target/<profile>/deps/x`, an example `target/<profile>/examples/x`:
        // `target/` is the third folder above, wherever the binary was copied.
        assert_eq!(folders.len(), 3, "{folders:?}");
        assert_eq!(folders[0], exe.parent().unwrap());
        assert_eq!(folders[2], exe.parent().unwrap().parent().unwrap().parent().unwrap());
        assert!(folders.iter().all(|f| exe.starts_with(f)), "{folders:?}");
    }
}
