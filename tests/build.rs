//! Builds `libfakecuda.so`, the stand-in CUDA driver the tests load (a test
//! double; see `src/fake.rs`), and tells the tests its path through the
//! `FAKECUDA_PATH` environment variable at compile time.

use std::path::PathBuf;

const SOURCES: &[&str] = &[
    "devices.c",
    "errors.c",
    "functions.c",
    "kernels.c",
    "library.c",
    "memory.c",
    "module.c",
    "registry.c",
    "streams.c",
    "work.c",
];

fn main() {
    let folder =
        PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR")).join("fakecuda");
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let library = out.join("libfakecuda.so");

    // cc chooses the compiler and base flags (CC, CFLAGS, the profile); the
    // link to a shared object is ours, since cc builds static archives.
    let compiler = cc::Build::new().opt_level(1).debug(true).get_compiler();
    let mut command = compiler.to_command();
    command
        .args([
            "-std=gnu11",
            "-shared",
            "-fPIC",
            "-fvisibility=hidden",
            "-Wall",
            "-Wextra",
        ])
        .arg("-o")
        .arg(&library)
        .args(SOURCES.iter().map(|source| folder.join(source)))
        .arg("-lpthread");
    let output = command
        .output()
        .unwrap_or_else(|e| panic!("could not run the C compiler ({command:?}): {e}"));
    let diagnostics = String::from_utf8_lossy(&output.stderr);
    if !output.status.success() {
        panic!("building libfakecuda.so failed ({command:?}):\n{diagnostics}");
    }
    for line in diagnostics.lines().filter(|line| !line.trim().is_empty()) {
        println!("cargo:warning=fakecuda: {line}");
    }

    println!("cargo:rustc-env=FAKECUDA_PATH={}", library.display());
    println!("cargo:rerun-if-changed=fakecuda");
}
