//! `cargo xtask test`: the one test command. Makes sure the pinned libraries that come in
//! wheels (the rows of `cuda_sys::LIBRARIES` that do and are default features: NVRTC, cudart,
//! nvJitLink; not cuBLAS, whose tests skip without it) can be found
//! (fetching the wheels into `target/cuda-wheels/` when the machine has none), runs the
//! workspace tests with the loader's environment variables pointing at them, then the
//! stand-in driver's suites under valgrind (`tests/leakcheck.sh`).
//! `cargo xtask test --no-leakcheck [cargo test args]` skips the last step. Between the two,
//! when no cargo test arguments are given, cuda-core's GPU tests listed in
//! [`crate::emulate::SUITES`] run against the stand-in with emulated kernels.
//!
//! Before the tests (when no cargo test arguments are given) the lint steps run, each failing
//! the command: `cargo fmt --check`, `cargo clippy --workspace --all-targets -D warnings`
//! (which also builds every example, test and benchmark), `cargo doc --workspace --no-deps`
//! with warnings as errors (broken links, missing docs of public items), and each library
//! crate's docs built alone, as docs.rs builds them, with no link left as text; then `cargo
//! package` of the library crates (published as `cudars-sys`, `cudars-driver`,
//! `cudars-runtime`, `cudars-core`, `cudars-libs`), each packaged crate built on its own.
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

/// The libraries whose CUDA 12 build the tests also load, each from `CUDA12_<NAME>_LIBRARY`
/// (the loader's own variable, `CUDA_<NAME>_LIBRARY`, names CUDA 13's).
const CUDA12_FETCHED: [cuda_sys::LibraryKind; 2] = [cuda_sys::LibraryKind::Nvrtc, cuda_sys::LibraryKind::Runtime];

pub fn run(root: &Path, args: &[String]) -> Result<(), String> {
    let leakcheck = args.first().map(String::as_str) != Some("--no-leakcheck");
    let cargo_args = if leakcheck { args } else { &args[1..] };
    if cargo_args.is_empty() {
        lint(root)?;
    }
    let library_env = library_env(root)?;
    let mut command = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    command.current_dir(root).args(["test", "--workspace"]).args(cargo_args);
    command.envs(library_env.iter().map(|(k, v)| (k, v)));
    let status = command.status().map_err(|e| format!("running cargo test: {e}"))?;
    if !status.success() {
        return Err(format!("cargo test failed ({status})"));
    }
    if cargo_args.is_empty() {
        let suites: Vec<(&str, Vec<&str>)> = crate::emulate::SUITES
            .iter()
            .map(|(binary, tests)| (*binary, tests.to_vec()))
            .collect();
        crate::emulate::run_suites(root, &suites, &library_env)?;
        python(root, &library_env)?;
    } else {
        eprintln!(
            "xtask: the emulated GPU tests and the `python` feature checks run only when no cargo test arguments are given"
        );
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

/// The loader's variables that point at the pinned wheels' libraries (fetched into
/// `target/cuda-wheels/` where the machine has none), CUDA 12's NVRTC and runtime as
/// `CUDA12_*_LIBRARY`, and the wheels' headers as `CUDA_SYS_HEADERS`; a variable already set
/// in the environment is kept.
pub fn library_env(root: &Path) -> Result<Vec<(String, OsString)>, String> {
    let pins = wheels::pins(root)?;
    let mut headers = Vec::new();
    let mut library_env: Vec<(String, OsString)> = Vec::new();
    // Every library of a default feature that comes in a wheel (the driver does not), as the
    // table says. The others (cuBLAS) are tested where they are found and skipped otherwise.
    for library in cuda_sys::LIBRARIES.iter().filter(|library| library.default_feature) {
        let cuda_sys::Install::Wheel(wheel) = library.install else {
            continue;
        };
        if std::env::var_os(library.env_var).is_some() {
            continue;
        }
        let installed = wheels::ensure(root, wheels::pin(&pins, wheel.name)?)?;
        let file = installed.join(wheel.folder).join(library.soname.linux);
        library_env.push((library.env_var.to_string(), file.into_os_string()));
        headers.push(wheels::include(&installed));
    }
    // CUDA 12's NVRTC and runtime as well (their pinned `-cu12` wheels, some 90 MB and 3 MB),
    // named by `CUDA12_NVRTC_LIBRARY` and `CUDA12_RUNTIME_LIBRARY`, so the tests compile a
    // kernel with each generation (cuda-sys's `generations`, tests' `driver_12_2`) and read
    // device properties through CUDA 12's layout (cuda-runtime's `cuda12_runtime`).
    for kind in CUDA12_FETCHED {
        let library = kind.library();
        let variable = library.env_var.replacen("CUDA_", "CUDA12_", 1);
        if let (Some(build), None) = (library.cuda12, std::env::var_os(&variable)) {
            let installed = wheels::ensure(root, wheels::pin(&pins, build.wheel.name)?)?;
            let file = installed.join(build.wheel.folder).join(build.soname.linux);
            library_env.push((variable, file.into_os_string()));
        }
    }
    if !headers.is_empty() {
        let joined = std::env::join_paths(&headers).map_err(|e| format!("header folders: {e}"))?;
        library_env.push(("CUDA_SYS_HEADERS".to_string(), joined));
    }
    Ok(library_env)
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
            what: "cargo clippy -D warnings (cuda-core without the array layer)",
            args: &[
                "clippy",
                "-p",
                "cudars-core",
                "--no-default-features",
                "--lib",
                "--",
                "-D",
                "warnings",
            ],
            env: None,
        },
        Step {
            what: "cargo doc -D warnings",
            args: &["doc", "--workspace", "--no-deps"],
            env: Some(("RUSTDOCFLAGS", "-D warnings")),
        },
    ];
    for Step { what, args, env } in steps {
        if args[0] == "doc" {
            // Each library alone first (they empty `target/doc`), then the workspace's docs,
            // which stay there.
            for (folder, package, lib, features) in LIBRARY_CRATES {
                docs_alone(root, &cargo, folder, package, lib, features)?;
            }
        }
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
    publishable(root, &cargo)
}

/// The library crates as crates.io would take them: each has the fields crates.io shows
/// (description, license, readme) and packages its readme, and `cargo package` builds each
/// packaged crate on its own (the workspace's unpublished ones come from cargo's local overlay
/// of the packages being packaged together).
fn publishable(root: &Path, cargo: &str) -> Result<(), String> {
    eprintln!("xtask: cargo package (the library crates)");
    let metadata = crate::workspace::metadata(root)?;
    let mut command = Command::new(cargo);
    command.current_dir(root).args(["package", "--allow-dirty"]);
    for (_, package, _, _) in LIBRARY_CRATES {
        let found = crate::workspace::packages(&metadata)
            .iter()
            .find(|p| p.get("name").as_str() == Some(package))
            .ok_or_else(|| format!("no package {package} in the workspace"))?;
        for field in ["description", "license", "readme"] {
            if !matches!(found.get(field).as_str(), Some(value) if !value.is_empty()) {
                return Err(format!("{package}: no {field} in its Cargo.toml"));
            }
        }
        let list = Command::new(cargo)
            .current_dir(root)
            .args(["package", "--list", "--allow-dirty", "-p", package])
            .output()
            .map_err(|e| format!("running cargo package --list: {e}"))?;
        if !list.status.success() || !String::from_utf8_lossy(&list.stdout).lines().any(|l| l == "README.md") {
            return Err(format!("cargo package --list -p {package} does not list README.md"));
        }
        command.args(["-p", package]);
    }
    forget_packaged_copies()?;
    // A target folder of its own, emptied first: cargo takes a registry crate's build for
    // current whatever its sources (they are meant never to change), so a verification in the
    // workspace's target folder could link a `cudars-sys` built from an earlier packaging (seen
    // here: a cuda-driver that did not find cuda-sys's newer `LaunchConfig`).
    let verify = root.join("target").join("package-verify");
    match std::fs::remove_dir_all(&verify) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            return Err(format!("emptying {}: {e}", verify.display()))
        }
        _ => {}
    }
    command.arg("--target-dir").arg(&verify);
    let status = command.status().map_err(|e| format!("running cargo package: {e}"))?;
    if !status.success() {
        return Err(format!("cargo package failed ({status})"));
    }
    // Nothing later reads the verification's builds (half a gigabyte): their disk goes back.
    std::fs::remove_dir_all(&verify).map_err(|e| format!("emptying {}: {e}", verify.display()))
}

/// Removes the copies of this workspace's unpublished crates (`cudars-*`) that an earlier
/// `cargo package` left in cargo's registry caches. Cargo extracts the packages of its local
/// overlay there once per version and path and never again, so a later verification of the
/// same version would compile the old sources (seen here: a cuda-sys without its newer tables).
fn forget_packaged_copies() -> Result<(), String> {
    let home = match std::env::var_os("CARGO_HOME") {
        Some(home) => PathBuf::from(home),
        None => match std::env::var_os("HOME") {
            Some(home) => PathBuf::from(home).join(".cargo"),
            None => return Ok(()),
        },
    };
    for cache in ["src", "cache"] {
        let Ok(registries) = std::fs::read_dir(home.join("registry").join(cache)) else {
            continue;
        };
        for registry in registries.flatten() {
            let Ok(entries) = std::fs::read_dir(registry.path()) else {
                continue;
            };
            for entry in entries.flatten() {
                if !entry.file_name().to_string_lossy().starts_with("cudars-") {
                    continue;
                }
                let path = entry.path();
                let removed = match path.is_dir() {
                    true => std::fs::remove_dir_all(&path),
                    false => std::fs::remove_file(&path),
                };
                removed.map_err(|e| format!("removing the stale packaged copy {}: {e}", path.display()))?;
            }
        }
    }
    Ok(())
}

/// The published library crates: folder, package, library name, and the features their docs.rs
/// build turns on (`[package.metadata.docs.rs]`).
pub const LIBRARY_CRATES: [(&str, &str, &str, &[&str]); 5] = [
    ("cuda-sys", "cudars-sys", "cuda_sys", &[]),
    ("cuda-driver", "cudars-driver", "cuda_driver", &[]),
    ("cuda-runtime", "cudars-runtime", "cuda_runtime", &[]),
    ("cuda-core", "cudars-core", "cuda_core", &["python"]),
    ("cuda-libs", "cudars-libs", "cuda_libs", &[]),
];

/// One crate's docs built alone, as docs.rs builds them: into an empty `target/doc`, with
/// warnings (broken intra-doc links included) as errors; then its pages are read for links
/// rustdoc left as text (`[Foo]`, `href="other_crate::Foo"`), which it does without a warning
/// for items of a dependency whose docs are not beside it. Dependencies name their docs.rs
/// pages with `html_root_url`, so links to them resolve.
fn docs_alone(
    root: &Path,
    cargo: &str,
    folder: &str,
    package: &str,
    lib: &str,
    features: &[&str],
) -> Result<(), String> {
    let what = format!("cargo doc -p {package} alone");
    eprintln!("xtask: {what}");
    let manifest = std::fs::read_to_string(root.join("Cargo.toml")).map_err(|e| format!("Cargo.toml: {e}"))?;
    let version = manifest
        .split("[workspace.package]")
        .nth(1)
        .and_then(|table| table.lines().find_map(|l| l.trim().strip_prefix("version = ")))
        .map(|v| v.trim_matches('"'))
        .ok_or("no version in Cargo.toml's [workspace.package]")?;
    let lib_rs = root.join(folder).join("src/lib.rs");
    let source = std::fs::read_to_string(&lib_rs).map_err(|e| format!("{}: {e}", lib_rs.display()))?;
    let root_url = format!("html_root_url = \"https://docs.rs/{package}/{version}\"");
    if !source.contains(&root_url) {
        return Err(format!("{}: wants #![doc({root_url})]", lib_rs.display()));
    }
    let target = std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| root.join("target"), PathBuf::from);
    let doc = target.join("doc");
    if doc.exists() {
        std::fs::remove_dir_all(&doc).map_err(|e| format!("{}: {e}", doc.display()))?;
    }
    let mut command = Command::new(cargo);
    command.current_dir(root).args(["doc", "--no-deps", "-p", package]);
    if !features.is_empty() {
        command.args(["--features", &features.join(",")]);
    }
    let status = command
        .env("RUSTDOCFLAGS", "-D warnings")
        .status()
        .map_err(|e| format!("running {what}: {e}"))?;
    if !status.success() {
        return Err(format!("{what} failed ({status})"));
    }
    let mut broken = Vec::new();
    let mut folders = vec![doc.join(lib)];
    while let Some(folder) = folders.pop() {
        let entries = std::fs::read_dir(&folder).map_err(|e| format!("{}: {e}", folder.display()))?;
        for entry in entries.filter_map(Result::ok) {
            let path = entry.path();
            if path.is_dir() {
                folders.push(path);
            } else if path.extension().is_some_and(|e| e == "html") {
                let html = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
                let page = path.strip_prefix(&doc).unwrap_or(&path).display().to_string();
                broken.extend(
                    unresolved_links(&html)
                        .into_iter()
                        .map(|link| format!("{page}: {link}")),
                );
            }
        }
    }
    if broken.is_empty() {
        Ok(())
    } else {
        broken.sort();
        Err(format!("{what}: links left as text:\n  {}", broken.join("\n  ")))
    }
}

/// Links rustdoc could not turn into URLs: a `[`code`]` left in brackets, or an `href` that is a
/// Rust path. bitflags' own docs of its `Flags` trait, shown on every flags type, are not ours.
fn unresolved_links(html: &str) -> Vec<String> {
    const NOT_OURS: [&str; 3] = ["Flags::insert", "Flags::remove", "Self::FLAGS"];
    let mut found = Vec::new();
    for piece in html.split("[<code>").skip(1) {
        if let Some((name, rest)) = piece.split_once("</code>]") {
            let is_path = !name.is_empty() && name.chars().all(|c| c.is_alphanumeric() || c == '_' || c == ':');
            if is_path && !rest.starts_with('(') && !NOT_OURS.contains(&name) {
                found.push(format!("[{name}]"));
            }
        }
    }
    for piece in html.split("href=\"").skip(1) {
        let target = piece.split('"').next().unwrap_or_default();
        if target.contains("::") && !target.contains('/') {
            found.push(format!("href=\"{target}\""));
        }
    }
    found
}

/// The `python` feature: cuda-core's unit tests with it, then the example extension module built
/// (in its own target folder, since an extension module links no libpython and the tests do)
/// and its Python tests run; first the sanitizer log checker's tests. Skipped, loudly, without
/// a `python3`.
fn python(root: &Path, library_env: &[(String, OsString)]) -> Result<(), String> {
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
        "cargo test -p cudars-core --features python --lib",
        Command::new(&cargo).args(["test", "-p", "cudars-core", "--features", "python", "--lib"]),
    )?;
    run(
        "cargo test -p cudars-core --features python --doc python",
        Command::new(&cargo).args(["test", "-p", "cudars-core", "--features", "python", "--doc", "python"]),
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

#[cfg(test)]
mod tests {
    use super::unresolved_links;

    #[test]
    fn finds_links_rustdoc_left_as_text() {
        let html = r#"<p>[<code>Event::elapsed_ms</code>] and <a href="cuda_driver::DeviceCopy">x</a>
            and [<code>Flags::insert</code>] and <a href="../cuda_driver/struct.Stream.html">Stream</a>
            and [<code>not a path</code>]</p>"#;
        assert_eq!(
            unresolved_links(html),
            ["[Event::elapsed_ms]", "href=\"cuda_driver::DeviceCopy\""]
        );
    }
}
