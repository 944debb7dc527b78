//! Emulated kernels: the stand-in driver running the CUDA C++ that cuda-core generates, on the
//! host, so that a machine without a GPU checks what the kernels compute and not only what the
//! host side queues.
//!
//! [`session`] loads `libfakenvrtc.so` (`tests/fakenvrtc/nvrtc.c`, built by this package's
//! build script) as NVRTC: the real NVRTC compiles every program, and the PTX it hands out
//! carries the program's source. The stand-in driver, with `FAKECUDA_EMULATION=1`, compiles that
//! source with the host C++ compiler and `tests/fakecuda/emulate.hpp` (the device dialect on
//! the host: a block's threads as fibers, barriers, warp collectives) and runs each launch over
//! its grid (`tests/fakecuda/emulation.c`). The kernel cache is switched off for the process,
//! so every kernel comes through NVRTC and carries its source.
//!
//! A test binary that uses it calls [`session`] first in every test. Without the real NVRTC
//! or a C++ compiler, [`session`] prints `skipped: <test>: <why>` and returns `None`.
//!
//! ```no_run
//! let Some((_fake, stream)) = tests::emulation::session("my_test") else { return };
//! // ... cuda-core's algorithms on `stream` run their real kernels on the host ...
//! ```

use std::ffi::OsString;
use std::path::Path;
use std::process::Command;
use std::sync::OnceLock;

use cuda_driver::{Context, Device, Stream};
use cuda_sys::search::{candidates, Candidate};
use cuda_sys::LibraryKind;

use crate::fake::{self, Session};

/// Where the build script put `libfakenvrtc.so`.
pub const NVRTC_SHIM_PATH: &str = env!("FAKENVRTC_PATH");

/// The real NVRTC the shim forwards to: `CUDA_NVRTC_LIBRARY`, else the first of the loader's
/// candidates that opens.
fn real_nvrtc() -> Result<OsString, String> {
    let env = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
    for candidate in candidates(LibraryKind::Nvrtc, env) {
        let path = match &candidate {
            Candidate::LoaderName(name) => OsString::from(name),
            Candidate::File(path) => path.clone().into_os_string(),
        };
        // SAFETY: opening NVRTC runs its initialisers, which have no preconditions; the handle
        // is dropped at once (the shim opens it again by the same name).
        if unsafe { libloading::Library::new(&path) }.is_ok() {
            return Ok(path);
        }
    }
    Err("no NVRTC could be opened (set CUDA_NVRTC_LIBRARY)".into())
}

/// Whether the host C++ compiler the stand-in will run answers `--version`.
fn compiler_available() -> Result<(), String> {
    let compiler = ["FAKECUDA_CXX", "CXX"]
        .into_iter()
        .find_map(|name| std::env::var_os(name).filter(|v| !v.is_empty()))
        .unwrap_or_else(|| "c++".into());
    match Command::new(&compiler).arg("--version").output() {
        Ok(output) if output.status.success() => Ok(()),
        _ => Err(format!(
            "no C++ compiler ({} --version failed)",
            compiler.to_string_lossy()
        )),
    }
}

/// Points NVRTC at the shim and switches emulation on, once per process.
fn install() -> Result<(), String> {
    static READY: OnceLock<Result<(), String>> = OnceLock::new();
    READY
        .get_or_init(|| {
            let real = real_nvrtc()?;
            compiler_available()?;
            // Soundness: setting the environment races with any other thread reading it at the
            // same moment. This runs once, inside `OnceLock`, and every test of a binary that
            // uses emulation calls `session` before anything else, so the other test threads
            // are blocked here rather than reading the environment.
            std::env::set_var("FAKENVRTC_REAL", real);
            std::env::set_var("CUDA_NVRTC_LIBRARY", NVRTC_SHIM_PATH);
            std::env::set_var("FAKECUDA_EMULATION", "1");
            std::env::set_var("CUDA_RS_CACHE", "0");
            Ok(())
        })
        .clone()?;
    let nvrtc = cuda_sys::nvrtc().map_err(|e| format!("the NVRTC shim did not load: {e}"))?;
    assert_eq!(
        nvrtc.path(),
        Path::new(NVRTC_SHIM_PATH),
        "NVRTC was loaded before emulation::session(); call it first in every test of this binary"
    );
    Ok(())
}

/// The stand-in driver with emulated kernels, and a stream on its device 0's primary context;
/// `None` (after printing `skipped: <test>: <why>`) where emulation cannot run here.
pub fn session(test: &str) -> Option<(Session, Stream)> {
    if let Err(why) = install() {
        println!("skipped: {test}: {why}");
        return None;
    }
    let session = fake::session();
    let context = Context::primary(&Device::get(0).expect("the stand-in has device 0")).expect("a primary context");
    let stream = Stream::new(&context).expect("a stream");
    Some((session, stream))
}
