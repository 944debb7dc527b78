//! `cargo xtask gpu-bundle`: everything the GPU machine (no Rust toolchain)
//! needs, built here in release: every test binary of the workspace, the
//! examples and the benchmark binaries, stripped, plus `run.sh`, the C++ and
//! Python benchmarks, the kernel source and the sanitizer check (`sanitizer/`: the
//! expected findings and their log checker), in `target/gpu-bundle/`.
//!
//! The binaries travel packed in `binaries.tar.xz` (`run.sh` unpacks them).
//! `manifest.tsv` lists what is in it: `kind<TAB>name<TAB>package folder`
//! (kind `test`, `example` or `bench`; kind `file` for a build-script output
//! that tests name by absolute path, with that path in the third column), and
//! A target that does not compile is left out and named in
//! `not-built.txt`; for tests and examples the command then fails unless
//! `--keep-going` is given, for a benchmark it warns (each layer's benchmark
//! is a feature of the `benches` package and joins when its crate builds).
//!
//! The bundle is self-contained: a bundled binary whose bytes hold the build root's absolute
//! path (what `env!("CARGO_MANIFEST_DIR")` read at run time leaves behind) is refused, naming
//! the binary and the path, since it would fail with the checkout moved away. The build-script
//! files of kind `file` are the exception: `run.sh` puts them back at their build path.
//!
//! The Python extension module of `examples/python-ext` (release, `--features python`, abi3,
//! built with `PYO3_NO_PYTHON`, so no interpreter is needed here) travels in `python-ext/` with
//! its tests (`test_interop.py`), which `run.sh` runs against torch and CuPy, once as they are
//! and once under `compute-sanitizer --tool memcheck`.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::json::Json;
use crate::workspace::{metadata, packages};

/// The bundle's size limit (what the GPU machine's working-tree transfer takes).
const SIZE_LIMIT: u64 = 64 << 20;
/// Above this, warn: the repository's own files travel in the same transfer.
const SIZE_WARNING: u64 = 48 << 20;

/// One binary to copy: its kind, bundle name, package folder (relative to the root) and built file.
struct Binary {
    kind: &'static str,
    name: String,
    package_dir: String,
    path: PathBuf,
}

pub fn run(root: &Path, args: &[String]) -> Result<(), String> {
    let keep_going = args.iter().any(|a| a == "--keep-going");
    if let Some(other) = args.iter().find(|a| *a != "--keep-going") {
        return Err(format!("gpu-bundle: unknown argument `{other}` (only --keep-going)"));
    }
    let bundle = build(root)?;
    if bundle.broken.is_empty() {
        return Ok(());
    }
    let message = format!(
        "{} target(s) did not build and are not in the bundle: {}",
        bundle.broken.len(),
        bundle.broken.join("; ")
    );
    if keep_going {
        eprintln!("xtask: warning: {message}");
        Ok(())
    } else {
        Err(format!(
            "{message} (the rest is in {}; --keep-going accepts this)",
            bundle.dir.display()
        ))
    }
}

/// What [`build`] produced.
pub struct Bundle {
    pub dir: PathBuf,
    /// `what: why` for each test or example target that failed to build (benchmarks only warn).
    pub broken: Vec<String>,
}

/// Builds and writes the bundle; targets that fail to compile are listed in `broken`.
pub fn build(root: &Path) -> Result<Bundle, String> {
    let dir = root.join("target/gpu-bundle");
    let mut broken = Vec::new();
    let mut optional = Vec::new();
    let mut binaries = Vec::new();
    let metadata = metadata(root)?;

    eprintln!("xtask: building the workspace's test binaries (release)");
    match cargo_artifacts(
        root,
        &["test", "--workspace", "--exclude", "xtask", "--release", "--no-run"],
    ) {
        Ok(artifacts) => binaries.extend(tests(&artifacts).chain(build_files(&artifacts))),
        Err(why) => {
            eprintln!("xtask: the workspace's tests did not all build; building them package by package");
            for package in workspace_packages(&metadata) {
                if package == "xtask" {
                    continue;
                }
                match cargo_artifacts(root, &["test", "-p", &package, "--release", "--no-run"]) {
                    Ok(artifacts) => binaries.extend(tests(&artifacts).chain(build_files(&artifacts))),
                    Err(why) => broken.push(format!("tests of {package}: {why}")),
                }
            }
            if broken.is_empty() {
                broken.push(format!("workspace tests: {why}"));
            }
        }
    }

    eprintln!("xtask: building the examples (release)");
    match cargo_artifacts(
        root,
        &[
            "build",
            "--workspace",
            "--exclude",
            "xtask",
            "--exclude",
            "benches",
            "--release",
            "--examples",
            "--bins",
        ],
    ) {
        Ok(artifacts) => binaries.extend(examples(&artifacts)),
        Err(why) => broken.push(format!("examples: {why}")),
    }

    eprintln!("xtask: building the Python extension module (release, --features python)");
    let python_ext = match build_python_ext(root) {
        Ok(module) => Some(module),
        Err(why) => {
            broken.push(format!("python extension module: {why}"));
            None
        }
    };

    eprintln!("xtask: building the benchmark binaries (release)");
    let features = bench_features(&metadata);
    for bench in bench_names(root)? {
        let mut args = vec!["build", "-p", "benches", "--release", "--bin", &bench];
        if let Some(feature) = bench.strip_prefix("bench-").filter(|f| features.iter().any(|x| x == f)) {
            args.extend(["--features", feature]);
        }
        match cargo_artifacts(root, &args) {
            Ok(artifacts) => binaries.extend(
                artifacts
                    .iter()
                    .filter(|a| a.kinds.iter().any(|k| k == "bin") && a.target == bench)
                    .map(|a| Binary {
                        kind: "bench",
                        name: bench.clone(),
                        package_dir: "benches".into(),
                        path: a.executable.clone(),
                    }),
            ),
            // A layer's benchmark that does not build yet leaves a warning, not a failed bundle.
            Err(why) => optional.push(format!("bench {bench}: {why}")),
        }
    }

    let not_built: Vec<String> = broken.iter().chain(&optional).cloned().collect();
    write_bundle(root, &dir, &binaries, &not_built, python_ext.as_deref())?;
    for why in &optional {
        eprintln!("xtask: warning: not in the bundle: {why}");
    }
    Ok(Bundle { dir, broken })
}

/// Builds `examples/python-ext` as an extension module (no libpython linked, abi3 without asking
/// an interpreter) and returns the module file, named as Python imports it.
fn build_python_ext(root: &Path) -> Result<PathBuf, String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let status = Command::new(&cargo)
        .current_dir(root)
        .args(["build", "-p", "python-ext", "--release", "--features", "python"])
        .env("PYO3_BUILD_EXTENSION_MODULE", "1")
        .env("PYO3_NO_PYTHON", "1")
        .status()
        .map_err(|e| format!("running {cargo}: {e}"))?;
    if !status.success() {
        return Err(format!(
            "cargo build -p python-ext --release --features python failed ({status})"
        ));
    }
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("target"));
    let release = root.join(target).join("release");
    crate::test::install_module(&release, &release.join("python-ext"))
}

/// One executable cargo reported.
pub(crate) struct Artifact {
    pub(crate) package: String,
    package_dir: String,
    pub(crate) target: String,
    kinds: Vec<String>,
    pub(crate) test: bool,
    pub(crate) executable: PathBuf,
}

/// Runs cargo with `--message-format=json` and returns the executables it built; on a
/// compile error, the error lines.
pub(crate) fn cargo_artifacts(root: &Path, args: &[&str]) -> Result<Vec<Artifact>, String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let output = Command::new(&cargo)
        .current_dir(root)
        .args(args)
        .arg("--message-format=json-render-diagnostics")
        .stderr(Stdio::inherit())
        .output()
        .map_err(|e| format!("running {cargo}: {e}"))?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    let mut artifacts = Vec::new();
    for line in stdout.lines().filter(|l| l.starts_with('{')) {
        let message = Json::parse(line).map_err(|e| format!("cargo printed a line that is not JSON ({e}): {line}"))?;
        if message.get("reason").as_str() == Some("build-script-executed") {
            artifacts.extend(build_script_files(root, &message));
            continue;
        }
        if message.get("reason").as_str() != Some("compiler-artifact") {
            continue;
        }
        let Some(executable) = message.get("executable").as_str() else {
            continue;
        };
        let manifest = PathBuf::from(message.get("manifest_path").as_str().unwrap_or_default());
        let package_dir = manifest
            .parent()
            .and_then(|p| p.strip_prefix(root).ok())
            .map(|p| p.to_string_lossy().into_owned())
            .unwrap_or_default();
        artifacts.push(Artifact {
            package: package_name(message.get("package_id").as_str().unwrap_or_default(), &manifest),
            package_dir,
            target: message
                .get("target")
                .get("name")
                .as_str()
                .unwrap_or_default()
                .to_string(),
            kinds: message
                .get("target")
                .get("kind")
                .strings()
                .into_iter()
                .map(String::from)
                .collect(),
            test: message.get("profile").get("test").as_bool() == Some(true),
            executable: PathBuf::from(executable),
        });
    }
    if output.status.success() {
        Ok(artifacts)
    } else {
        Err(format!(
            "cargo {} failed ({}): see the errors above",
            args.join(" "),
            output.status
        ))
    }
}

/// Files a build script made in its `OUT_DIR` and handed to the code by path (`cargo:rustc-env=KEY=PATH`,
/// like the tests' `FAKECUDA_PATH`): compiled-in absolute paths that must exist where the tests run.
/// `run.sh` puts each back at its path when it is missing there.
fn build_script_files(root: &Path, message: &Json) -> Vec<Artifact> {
    let Some(out_dir) = message.get("out_dir").as_str() else {
        return Vec::new();
    };
    let Json::Array(pairs) = message.get("env") else {
        return Vec::new();
    };
    let manifest_dir = package_dir_from_id(message.get("package_id").as_str().unwrap_or_default());
    pairs
        .iter()
        .filter_map(|pair| match pair {
            Json::Array(kv) if kv.len() == 2 => Some((kv[0].as_str()?, kv[1].as_str()?)),
            _ => None,
        })
        .filter(|(_, value)| Path::new(value).starts_with(out_dir) && Path::new(value).is_file())
        .map(|(key, value)| Artifact {
            package: String::new(),
            package_dir: manifest_dir
                .as_deref()
                .and_then(|d| d.strip_prefix(root).ok())
                .map(|p| p.to_string_lossy().into_owned())
                .unwrap_or_default(),
            target: key.to_string(),
            kinds: vec![BUILD_FILE.to_string()],
            test: false,
            executable: PathBuf::from(value),
        })
        .collect()
}

/// The kind given to [`build_script_files`]' artifacts.
const BUILD_FILE: &str = "build-file";

/// The package folder of a `path+file:///...#...` package id.
fn package_dir_from_id(id: &str) -> Option<PathBuf> {
    let url = id.split('#').next()?;
    url.strip_prefix("path+file://").map(PathBuf::from)
}

/// The package name from a package id (`path+file:///x/cuda-sys#0.1.0` or `...#name@0.1.0`).
fn package_name(id: &str, manifest: &Path) -> String {
    if let Some((url, fragment)) = id.rsplit_once('#') {
        if let Some((name, _version)) = fragment.split_once('@') {
            return name.to_string();
        }
        if let Some(last) = url.rsplit('/').next() {
            return last.to_string();
        }
    }
    manifest
        .parent()
        .and_then(Path::file_name)
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "unknown".into())
}

/// Test executables, named `folder-target` after the package's folder (`cuda_sys-raw_launch`; a
/// library's unit tests `cuda_sys-lib`), which stays when a package is renamed for publishing
/// (the folder `cuda-sys` holds the package `cudars-sys`).
fn tests(artifacts: &[Artifact]) -> impl Iterator<Item = Binary> + '_ {
    artifacts.iter().filter(|a| a.test).map(|a| {
        let folder = Path::new(&a.package_dir)
            .file_name()
            .map(|f| f.to_string_lossy().into_owned());
        let package = folder.unwrap_or_else(|| a.package.clone()).replace('-', "_");
        let target = a.target.replace('-', "_");
        let name = if a.kinds.iter().any(|k| k == "lib") {
            format!("{package}-lib")
        } else if a.kinds.iter().any(|k| k == "bin") {
            format!("{package}-bin_{target}")
        } else if a.kinds.iter().any(|k| k == "example") {
            format!("{package}-example_{target}")
        } else {
            format!("{package}-{target}")
        };
        Binary {
            kind: "test",
            name,
            package_dir: a.package_dir.clone(),
            path: a.executable.clone(),
        }
    })
}

/// Build-script files the tests name by absolute path; the manifest's third column is that path.
fn build_files(artifacts: &[Artifact]) -> impl Iterator<Item = Binary> + '_ {
    artifacts
        .iter()
        .filter(|a| a.kinds.iter().any(|k| k == BUILD_FILE))
        .map(|a| Binary {
            kind: "file",
            name: format!(
                "{}-{}",
                a.target,
                a.executable.file_name().unwrap_or_default().to_string_lossy()
            ),
            package_dir: a.executable.display().to_string(),
            path: a.executable.clone(),
        })
}

/// Examples (`--examples` targets, and the binaries of the `examples` package).
fn examples(artifacts: &[Artifact]) -> impl Iterator<Item = Binary> + '_ {
    artifacts
        .iter()
        .filter(|a| !a.test)
        .filter(|a| {
            a.kinds.iter().any(|k| k == "example") || (a.package == "examples" && a.kinds.iter().any(|k| k == "bin"))
        })
        .map(|a| Binary {
            kind: "example",
            name: a.target.clone(),
            package_dir: a.package_dir.clone(),
            path: a.executable.clone(),
        })
}

/// The workspace members' package names.
fn workspace_packages(metadata: &Json) -> Vec<String> {
    packages(metadata)
        .iter()
        .filter_map(|p| p.get("name").as_str().map(String::from))
        .collect()
}

/// The features of the `benches` package: `bench-NAME` is built with `--features NAME` when it is one.
fn bench_features(metadata: &Json) -> Vec<String> {
    let benches = packages(metadata)
        .iter()
        .find(|p| p.get("name").as_str() == Some("benches"));
    match benches.map(|p| p.get("features")) {
        Some(Json::Object(features)) => features.keys().cloned().collect(),
        _ => Vec::new(),
    }
}

/// The benchmark binaries: `benches/src/bin/*.rs`.
fn bench_names(root: &Path) -> Result<Vec<String>, String> {
    let folder = root.join("benches/src/bin");
    let mut names: Vec<String> = fs::read_dir(&folder)
        .map_err(|e| format!("{}: {e}", folder.display()))?
        .filter_map(Result::ok)
        .filter_map(|e| {
            let path = e.path();
            if path.extension()? != "rs" {
                return None;
            }
            Some(path.file_stem()?.to_string_lossy().into_owned())
        })
        .collect();
    names.sort();
    Ok(names)
}

fn write_bundle(
    root: &Path,
    dir: &Path,
    binaries: &[Binary],
    broken: &[String],
    python_ext: Option<&Path>,
) -> Result<(), String> {
    let io = |what: &Path| {
        let what = what.display().to_string();
        move |e: std::io::Error| format!("{what}: {e}")
    };
    if dir.exists() {
        fs::remove_dir_all(dir).map_err(io(dir))?;
    }
    for sub in [
        "tests",
        "examples",
        "bench",
        "files",
        "python",
        "python-ext",
        "cpp",
        "kernels",
        "sanitizer",
    ] {
        fs::create_dir_all(dir.join(sub)).map_err(io(&dir.join(sub)))?;
    }
    let strip = Command::new("strip")
        .arg("--version")
        .stdout(Stdio::null())
        .status()
        .is_ok();
    if !strip {
        eprintln!("xtask: `strip` not found; binaries are copied unstripped");
    }
    let mut manifest =
        String::from("# kind\tname\tpackage folder (relative to the workspace root; for a file, its build path)\n");
    let mut seen = BTreeMap::new();
    let mut empty = Vec::new();
    let mut written = Vec::new();
    let restored: Vec<&Path> = binaries
        .iter()
        .filter(|b| b.kind == "file")
        .map(|b| b.path.as_path())
        .collect();
    let mut embedding = Vec::new();
    for binary in binaries {
        let folder = match binary.kind {
            "test" => "tests",
            "example" => "examples",
            "file" => "files",
            _ => "bench",
        };
        // Two artifacts with one name (a package built twice) would overwrite each other: keep the first.
        if seen.insert((folder, binary.name.clone()), ()).is_some() {
            continue;
        }
        if binary.kind == "test" && test_count(&binary.path) == Some(0) {
            empty.push(binary.name.as_str());
            continue;
        }
        let target = dir.join(folder).join(&binary.name);
        fs::copy(&binary.path, &target).map_err(io(&binary.path))?;
        if strip && binary.kind != "file" {
            let status = Command::new("strip")
                .arg("--strip-all")
                .arg(&target)
                .status()
                .map_err(|e| format!("strip: {e}"))?;
            if !status.success() {
                return Err(format!("strip {} failed ({status})", target.display()));
            }
        }
        if binary.kind != "file" {
            let mentions = build_root_mentions(&target, root, &restored)?;
            if !mentions.is_empty() {
                embedding.push(format!("{folder}/{}: {}", binary.name, mentions.join(", ")));
            }
        }
        manifest.push_str(&format!("{}\t{}\t{}\n", binary.kind, binary.name, binary.package_dir));
        written.push(binary.kind);
    }
    let copies = [
        ("benches/run.sh", "run.sh"),
        ("benches/kernels/bench.cu", "kernels/bench.cu"),
        ("benches/cpp/bench.cpp", "cpp/bench.cpp"),
        ("benches/python/common.py", "python/common.py"),
        ("benches/python/bench_cupy.py", "python/bench_cupy.py"),
        ("benches/python/bench_cuda_core.py", "python/bench_cuda_core.py"),
        ("benches/python/bench_torch_gemm.py", "python/bench_torch_gemm.py"),
        ("benches/python/bench_sort.py", "python/bench_sort.py"),
        ("benches/python/bench_graph_torch.py", "python/bench_graph_torch.py"),
        ("benches/python/report.py", "python/report.py"),
        ("benches/sanitizer/check.py", "sanitizer/check.py"),
        ("benches/sanitizer/test_check.py", "sanitizer/test_check.py"),
        ("benches/sanitizer/expected.tsv", "sanitizer/expected.tsv"),
    ];
    for (from, to) in copies {
        fs::copy(root.join(from), dir.join(to)).map_err(io(&root.join(from)))?;
    }
    set_executable(&dir.join("run.sh"))?;
    if let Some(module) = python_ext {
        let to = dir.join("python-ext/cuda_rs_ext.so");
        fs::copy(module, &to).map_err(io(module))?;
        if strip {
            // Only the local symbols go: the module's `PyInit_cuda_rs_ext` must stay.
            let status = Command::new("strip")
                .arg("--strip-unneeded")
                .arg(&to)
                .status()
                .map_err(|e| format!("strip: {e}"))?;
            if !status.success() {
                return Err(format!("strip {} failed ({status})", to.display()));
            }
        }
        let mentions = build_root_mentions(&to, root, &restored)?;
        if !mentions.is_empty() {
            embedding.push(format!("python-ext/cuda_rs_ext.so: {}", mentions.join(", ")));
        }
        for script in ["test_interop.py", "bench_interop.py"] {
            let from = root.join("examples/python-ext/python").join(script);
            fs::copy(&from, dir.join("python-ext").join(script)).map_err(io(&from))?;
        }
    }
    if !embedding.is_empty() {
        return Err(format!(
            "{} bundled binaries hold the build root {} and would fail with the checkout moved away \
             (a path read at run time, such as env!(\"CARGO_MANIFEST_DIR\"); embed the file with \
             include_str! or find it from the executable): {}",
            embedding.len(),
            root.display(),
            embedding.join("; ")
        ));
    }
    copy_pinned_headers(root, &dir.join("headers"))?;
    if !empty.is_empty() {
        eprintln!(
            "xtask: left out {} test binaries that hold no tests: {}",
            empty.len(),
            empty.join(", ")
        );
    }
    fs::write(dir.join("manifest.tsv"), manifest).map_err(io(&dir.join("manifest.tsv")))?;
    let not_built: String = broken.iter().map(|b| format!("{}\n", b.replace('\n', " "))).collect();
    fs::write(dir.join("not-built.txt"), not_built).map_err(io(&dir.join("not-built.txt")))?;

    pack_binaries(dir);
    let size = folder_size(dir)?;
    let count = |kind: &str| written.iter().filter(|k| **k == kind).count();
    eprintln!(
        "xtask: {}: {} test binaries, {} examples, {} benchmarks, {}; {:.1} MiB (limit {} MiB)",
        dir.display(),
        count("test"),
        count("example"),
        count("bench"),
        match python_ext {
            Some(_) => "the Python extension module",
            None => "no Python extension module",
        },
        size as f64 / (1 << 20) as f64,
        SIZE_LIMIT >> 20
    );
    if size > SIZE_WARNING && size <= SIZE_LIMIT {
        eprintln!(
            "xtask: warning: the bundle is over {} MiB; with the repository it may not fit one transfer",
            SIZE_WARNING >> 20
        );
    }
    if size > SIZE_LIMIT {
        return Err(format!(
            "the bundle is {:.1} MiB, over the {} MiB the GPU machine takes",
            size as f64 / (1 << 20) as f64,
            SIZE_LIMIT >> 20
        ));
    }
    Ok(())
}

/// The places where `file` holds `root`'s absolute path other than as the start of one of
/// `restored` (the build-script files `run.sh` puts back at their build path): each as the
/// printable text that starts there (at most 120 bytes), without repeats.
fn build_root_mentions(file: &Path, root: &Path, restored: &[&Path]) -> Result<Vec<String>, String> {
    let bytes = fs::read(file).map_err(|e| format!("{}: {e}", file.display()))?;
    let root = root.to_string_lossy().into_owned().into_bytes();
    let restored: Vec<Vec<u8>> = restored
        .iter()
        .map(|p| p.to_string_lossy().into_owned().into_bytes())
        .collect();
    let mut mentions: Vec<String> = Vec::new();
    let Some(&first) = root.first() else {
        return Ok(mentions);
    };
    let mut at = 0;
    while let Some(offset) = bytes[at..].iter().position(|&b| b == first) {
        let rest = &bytes[at + offset..];
        at += offset + 1;
        if !rest.starts_with(&root) || restored.iter().any(|path| rest.starts_with(path)) {
            continue;
        }
        let end = rest
            .iter()
            .position(|b| !b.is_ascii_graphic())
            .unwrap_or(rest.len())
            .min(120);
        let mention = String::from_utf8_lossy(&rest[..end]).into_owned();
        if !mentions.contains(&mention) {
            mentions.push(mention);
        }
        at += root.len() - 1;
    }
    Ok(mentions)
}

/// Packs `tests/`, `examples/`, `bench/`, `files/` and `python-ext/` into `binaries.tar.xz` (about a tenth of their size, which
/// matters because the bundle and the repository travel to the GPU machine in one 64 MiB transfer);
/// `run.sh` unpacks it. Without `tar`/`xz` here the folders stay as they are.
fn pack_binaries(dir: &Path) {
    let packed = Command::new("tar")
        .current_dir(dir)
        .env("XZ_OPT", "-6 -T0")
        .args([
            "-cJf",
            "binaries.tar.xz",
            "tests",
            "examples",
            "bench",
            "files",
            "python-ext",
        ])
        .status();
    match packed {
        Ok(status) if status.success() => {
            for sub in ["tests", "examples", "bench", "files", "python-ext"] {
                if let Err(e) = fs::remove_dir_all(dir.join(sub)) {
                    eprintln!("xtask: warning: could not remove {sub}/ after packing it: {e}");
                }
            }
        }
        other => {
            let _ = fs::remove_file(dir.join("binaries.tar.xz"));
            eprintln!("xtask: warning: tar -cJf failed ({other:?}); the binaries stay unpacked");
        }
    }
}

/// Runs `binary --list` (which runs no test) and counts the tests; `None` if it cannot be listed here.
fn test_count(binary: &Path) -> Option<usize> {
    let output = Command::new(binary).arg("--list").stderr(Stdio::null()).output().ok()?;
    if !output.status.success() {
        return None;
    }
    Some(
        String::from_utf8_lossy(&output.stdout)
            .lines()
            .filter(|l| l.ends_with(": test"))
            .count(),
    )
}

/// The headers the bindings were generated from (fetched by `cargo xtask test` into `target/cuda-wheels/`),
/// so cuda-sys's fingerprint test runs on the GPU machine too (`run.sh` sets `CUDA_SYS_HEADERS`).
fn copy_pinned_headers(root: &Path, to: &Path) -> Result<(), String> {
    let wheels = root.join("target/cuda-wheels");
    let Ok(entries) = fs::read_dir(&wheels) else {
        eprintln!(
            "xtask: no {} (run `cargo xtask test` once): the bundle has no pinned headers",
            wheels.display()
        );
        return Ok(());
    };
    let wheel_dirs: Vec<PathBuf> = entries.filter_map(Result::ok).map(|e| e.path()).collect();
    fs::create_dir_all(to).map_err(|e| format!("{}: {e}", to.display()))?;
    for bindings in cuda_sys::LIBRARIES.iter().map(|library| &library.bindings) {
        let header = bindings.header;
        // The wheel that ships the header, at its pinned generation: `nvidia-cuda-runtime-13.0.96`,
        // not the CUDA 12 wheel `nvidia-cuda-runtime-cu12-12.9.79` fetched beside it for the
        // CUDA 12 tests (its headers differ).
        let ships = |dir: &PathBuf| {
            let name = dir.file_name().and_then(|n| n.to_str()).unwrap_or("");
            bindings.wheels.first().is_some_and(|wheel| {
                name.strip_prefix(wheel)
                    .and_then(|rest| rest.strip_prefix('-'))
                    .is_some_and(|version| version.starts_with(|c: char| c.is_ascii_digit()))
            })
        };
        let found = wheel_dirs
            .iter()
            .filter(|dir| ships(dir))
            .map(|dir| crate::wheels::include(dir).join(header))
            .find(|p| p.is_file());
        match found {
            Some(found) => {
                fs::copy(&found, to.join(header)).map_err(|e| format!("{}: {e}", found.display()))?;
            }
            None => eprintln!(
                "xtask: {header} is in no wheel under {}: left out of the bundle",
                wheels.display()
            ),
        }
    }
    Ok(())
}

fn set_executable(path: &Path) -> Result<(), String> {
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(path, fs::Permissions::from_mode(0o755)).map_err(|e| format!("{}: {e}", path.display()))
}

fn folder_size(dir: &Path) -> Result<u64, String> {
    let mut total = 0;
    for entry in fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))? {
        let entry = entry.map_err(|e| e.to_string())?;
        let meta = entry.metadata().map_err(|e| e.to_string())?;
        total += if meta.is_dir() {
            folder_size(&entry.path())?
        } else {
            meta.len()
        };
    }
    Ok(total)
}

#[cfg(test)]
mod tests {
    use super::{build_root_mentions, package_name, tests, Artifact};
    use std::path::Path;

    #[test]
    fn binaries_that_hold_the_build_root_are_found() {
        let dir = std::env::temp_dir().join(format!("xtask-build-root-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let root = Path::new("/w/checkout");
        let restored = Path::new("/w/checkout/target/release/build/tests-1/out/libfakecuda.so");
        let file = dir.join("binary");
        let mentions = |bytes: &[u8]| {
            std::fs::write(&file, bytes).unwrap();
            build_root_mentions(&file, root, &[restored]).unwrap()
        };
        // A manifest folder read at run time, twice, beside other strings.
        let found = mentions(b"\x7fELF\0/w/checkout/cuda-sysCargo.toml\0x/w/checkout/cuda-sysCargo.toml\0/w/other");
        assert_eq!(found, ["/w/checkout/cuda-sysCargo.toml"]);
        assert_eq!(mentions(b"/w/checkout"), ["/w/checkout"], "at the very end");
        // A restored build-script file is allowed; relative panic paths and other roots are not the root.
        assert!(mentions(b"\0/w/checkout/target/release/build/tests-1/out/libfakecuda.so\0").is_empty());
        assert!(mentions(b"cuda-core/src/lib.rs\0/w/checkou\0/root/.cargo/registry/x.rs").is_empty());
        assert_eq!(
            mentions(b"/w/checkout/target/release/build/tests-1/out/other.so"),
            ["/w/checkout/target/release/build/tests-1/out/other.so"]
        );
        assert!(build_root_mentions(&dir.join("missing"), root, &[]).is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn test_binaries_are_named_after_the_package_folder() {
        let artifact = |kind: &str, target: &str| Artifact {
            package: "cudars-core".into(),
            package_dir: "cuda-core".into(),
            target: target.into(),
            kinds: vec![kind.into()],
            test: true,
            executable: "/t/x".into(),
        };
        let built = [artifact("lib", "cuda_core"), artifact("test", "array_gpu")];
        let names: Vec<String> = tests(&built).map(|b| b.name).collect();
        assert_eq!(names, ["cuda_core-lib", "cuda_core-array_gpu"]);
    }

    #[test]
    fn package_names_from_both_id_forms() {
        let manifest = Path::new("/w/cuda-sys/Cargo.toml");
        assert_eq!(package_name("path+file:///w/cuda-sys#0.1.0", manifest), "cuda-sys");
        assert_eq!(
            package_name("path+file:///w/dir#cuda-core@0.1.0", manifest),
            "cuda-core"
        );
        assert_eq!(package_name("", manifest), "cuda-sys");
    }
}
