//! `cargo xtask test`: the one test command. Makes sure the pinned NVRTC,
//! cudart and nvJitLink libraries can be found (fetching the wheels into
//! `target/cuda-wheels/` when the machine has none), runs the workspace
//! tests with the loader's environment variables pointing at them, then the
//! stand-in driver's suites under valgrind (`tests/leakcheck.sh`).
//! `cargo xtask test --no-leakcheck [cargo test args]` skips the last step.

use std::path::Path;
use std::process::Command;

use crate::wheels;

pub fn run(root: &Path, args: &[String]) -> Result<(), String> {
    let leakcheck = args.first().map(String::as_str) != Some("--no-leakcheck");
    let cargo_args = if leakcheck { args } else { &args[1..] };
    let pins = wheels::pins(root)?;
    let mut command = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    command.current_dir(root).args(["test", "--workspace"]).args(cargo_args);
    let mut headers = Vec::new();
    for (wheel, variable, file) in [
        ("nvidia-cuda-nvrtc", "CUDA_NVRTC_LIBRARY", "libnvrtc.so.13"),
        ("nvidia-cuda-runtime", "CUDA_RUNTIME_LIBRARY", "libcudart.so.13"),
        ("nvidia-nvjitlink", "CUDA_NVJITLINK_LIBRARY", "libnvJitLink.so.13"),
    ] {
        if std::env::var_os(variable).is_some() {
            continue;
        }
        let cu13 = wheels::ensure(root, wheels::pin(&pins, wheel)?)?;
        command.env(variable, cu13.join("lib").join(file));
        headers.push(cu13.join("include"));
    }
    if !headers.is_empty() {
        let joined = std::env::join_paths(&headers).map_err(|e| format!("header folders: {e}"))?;
        command.env("CUDA_SYS_HEADERS", joined);
    }
    let status = command.status().map_err(|e| format!("running cargo test: {e}"))?;
    if !status.success() {
        return Err(format!("cargo test failed ({status})"));
    }
    if !leakcheck {
        return Ok(());
    }
    let status = Command::new("bash")
        .current_dir(root)
        .arg("tests/leakcheck.sh")
        .status()
        .map_err(|e| format!("running tests/leakcheck.sh: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("tests/leakcheck.sh failed ({status})"))
    }
}
