//! `cargo xtask test`: the one test command. Makes sure the pinned NVRTC,
//! cudart and nvJitLink libraries can be found (fetching the wheels into
//! `target/cuda-wheels/` when the machine has none), runs the workspace
//! tests with the loader's environment variables pointing at them, then the
//! stand-in driver's suites under valgrind (`tests/leakcheck.sh`).
//! `cargo xtask test --no-leakcheck [cargo test args]` skips the last step.
//!
//! Before the tests (when no cargo test arguments are given) the lint steps run, each failing
//! the command: `cargo fmt --check`, `cargo clippy --workspace --all-targets -D warnings`
//! (which also builds every example, test and benchmark), and `cargo doc --workspace --no-deps`
//! with warnings as errors (broken links, missing docs of public items).
//!
//! Where a `python3` is present (and no cargo test arguments were given), cuda-core is also
//! tested with `--features python` (its unit tests embed that interpreter), and the example
//! extension module (`examples/python-ext`) is built and its Python tests run against it
//! (torch and CuPy checks skip themselves where those are missing); without `python3` this
//! part says it is skipped. The same `python3` runs the unit tests of the GPU bundle's
//! sanitizer log checker (`benches/sanitizer/test_check.py`).

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::wheels;

pub fn run(root: &Path, args: &[String]) -> Result<(), String> {
    let leakcheck = args.first().map(String::as_str) != Some("--no-leakcheck");
    let cargo_args = if leakcheck { args } else { &args[1..] };
    if cargo_args.is_empty() {
        lint(root)?;
    }
    let pins = wheels::pins(root)?;
    let mut command = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    command.current_dir(root).args(["test", "--workspace"]).args(cargo_args);
    let mut headers = Vec::new();
    let mut library_env: Vec<(&str, OsString)> = Vec::new();
    for (wheel, variable, file) in [
        ("nvidia-cuda-nvrtc", "CUDA_NVRTC_LIBRARY", "libnvrtc.so.13"),
        ("nvidia-cuda-runtime", "CUDA_RUNTIME_LIBRARY", "libcudart.so.13"),
        ("nvidia-nvjitlink", "CUDA_NVJITLINK_LIBRARY", "libnvJitLink.so.13"),
    ] {
        if std::env::var_os(variable).is_some() {
            continue;
        }
        let cu13 = wheels::ensure(root, wheels::pin(&pins, wheel)?)?;
        library_env.push((variable, cu13.join("lib").join(file).into_os_string()));
        headers.push(cu13.join("include"));
    }
    if !headers.is_empty() {
        let joined = std::env::join_paths(&headers).map_err(|e| format!("header folders: {e}"))?;
        library_env.push(("CUDA_SYS_HEADERS", joined));
    }
    command.envs(library_env.iter().map(|(k, v)| (k, v)));
    let status = command.status().map_err(|e| format!("running cargo test: {e}"))?;
    if !status.success() {
        return Err(format!("cargo test failed ({status})"));
    }
    if cargo_args.is_empty() {
        python(root, &library_env)?;
    } else {
        eprintln!("xtask: the `python` feature checks run only when no cargo test arguments are given");
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

/// Formatting, clippy with warnings as errors, and rustdoc with warnings as errors.
fn lint(root: &Path) -> Result<(), String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    /// A lint step: what it is, cargo's arguments, and an environment variable it sets.
    struct Step {
        what: &'static str,
        args: &'static [&'static str],
        env: Option<(&'static str, &'static str)>,
    }
    let steps = [
        Step {
            what: "cargo fmt --check",
            args: &["fmt", "--all", "--check"],
            env: None,
        },
        Step {
            what: "cargo clippy -D warnings",
            args: &["clippy", "--workspace", "--all-targets", "--", "-D", "warnings"],
            env: None,
        },
        Step {
            what: "cargo doc -D warnings",
            args: &["doc", "--workspace", "--no-deps"],
            env: Some(("RUSTDOCFLAGS", "-D warnings")),
        },
    ];
    for Step { what, args, env } in steps {
        eprintln!("xtask: {what}");
        let mut command = Command::new(&cargo);
        command.current_dir(root).args(args);
        if let Some((key, value)) = env {
            command.env(key, value);
        }
        let status = command.status().map_err(|e| format!("running {what}: {e}"))?;
        if !status.success() {
            return Err(format!("{what} failed ({status})"));
        }
    }
    Ok(())
}

/// The `python` feature: cuda-core's unit tests with it, then the example extension module built
/// (in its own target folder, since an extension module links no libpython and the tests do)
/// and its Python tests run; first the sanitizer log checker's tests. Skipped, loudly, without
/// a `python3`.
fn python(root: &Path, library_env: &[(&str, OsString)]) -> Result<(), String> {
    let python = std::env::var_os("PYTHON").unwrap_or_else(|| "python3".into());
    let version = Command::new(&python).arg("--version").output();
    match version {
        Ok(output) if output.status.success() => eprintln!(
            "xtask: the python feature, with {}",
            String::from_utf8_lossy(&output.stdout).trim()
        ),
        _ => {
            eprintln!(
                "xtask: skipped: the python feature (cuda-core --features python, examples/python-ext and its tests, the sanitizer log checker's tests): no {} here",
                python.to_string_lossy()
            );
            return Ok(());
        }
    }
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let run = |what: &str, command: &mut Command| -> Result<(), String> {
        let status = command
            .current_dir(root)
            .envs(library_env.iter().map(|(k, v)| (k, v)))
            .status()
            .map_err(|e| format!("{what}: {e}"))?;
        match status.success() {
            true => Ok(()),
            false => Err(format!("{what} failed ({status})")),
        }
    };
    run(
        "benches/sanitizer/test_check.py (the sanitizer log checker's tests)",
        Command::new(&python).arg("benches/sanitizer/test_check.py"),
    )?;
    run(
        "cargo test -p cuda-core --features python --lib",
        Command::new(&cargo).args(["test", "-p", "cuda-core", "--features", "python", "--lib"]),
    )?;
    run(
        "cargo test -p cuda-core --features python --doc python",
        Command::new(&cargo).args(["test", "-p", "cuda-core", "--features", "python", "--doc", "python"]),
    )?;
    let target = root.join("target/python-ext");
    run(
        "building examples/python-ext",
        Command::new(&cargo)
            .args(["build", "-p", "python-ext", "--features", "python", "--target-dir"])
            .arg(&target)
            .env("PYO3_BUILD_EXTENSION_MODULE", "1"),
    )?;
    let module = install_module(&target.join("debug"), &target)?;
    run(
        "examples/python-ext/python/test_interop.py",
        Command::new(&python)
            .arg("examples/python-ext/python/test_interop.py")
            .env("CUDA_RS_EXT_DIR", module.parent().unwrap_or(&target)),
    )
}

/// Copies `libcuda_rs_ext.so` from `built` to `folder/cuda_rs_ext.so`, the name Python imports.
pub fn install_module(built: &Path, folder: &Path) -> Result<PathBuf, String> {
    let from = built.join("libcuda_rs_ext.so");
    let to = folder.join("cuda_rs_ext.so");
    std::fs::create_dir_all(folder).map_err(|e| format!("{}: {e}", folder.display()))?;
    std::fs::copy(&from, &to).map_err(|e| format!("{}: {e}", from.display()))?;
    Ok(to)
}
