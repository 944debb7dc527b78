//! Builds `libfakecuda.so`, the stand-in CUDA driver the tests load (a test
//! double; see `src/fake.rs`), `libfakenvml.so`, the stand-in NVML
//! (`fakenvml/nvml.c`), and `libfakelibs.so`, the stand-in cuFFT and cuSOLVER
//! (`fakelibs/fakelibs.c`), and tells the tests their paths through the
//! `FAKECUDA_PATH`, `FAKENVML_PATH` and `FAKELIBS_PATH` environment variables at compile time. It also writes
//! `fakecuda_sources.rs` into `OUT_DIR`: the C sources by name, embedded with
//! `include_str!`, so tests that read them (`fake_abi`) carry them in the
//! binary and run without the source tree (the GPU bundle runs them elsewhere).

use std::path::PathBuf;

const SOURCES: &[&str] = &[
    "arrays.c",
    "devices.c",
    "emulation.c",
    "errors.c",
    "functions.c",
    "globals.c",
    "graphs.c",
    "green.c",
    "ipc.c",
    "kernels.c",
    "managed.c",
    "library.c",
    "memory.c",
    "module.c",
    "pitch.c",
    "pool_ipc.c",
    "registry.c",
    "streams.c",
    "vmm.c",
    "work.c",
];

fn main() {
    let folder =
        PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR")).join("fakecuda");
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let library = out.join("libfakecuda.so");

    // cc chooses the compiler and base flags (CC, CFLAGS, the profile); the link to a shared
    // object is ours, since cc builds static archives.
    let compiler = cc::Build::new().opt_level(1).debug(true).get_compiler();
    let sources: Vec<PathBuf> = SOURCES.iter().map(|source| folder.join(source)).collect();
    // emulation.c embeds emulate.hpp (`.incbin`), named here.
    let emulate_hpp = format!("-DFAKECUDA_EMULATE_HPP=\"{}\"", folder.join("emulate.hpp").display());
    build_library(&compiler, &sources, &library, &[emulate_hpp]);
    // The NVML stand-in, one file.
    let nvml_folder = folder.with_file_name("fakenvml");
    let nvml_library = out.join("libfakenvml.so");
    build_library(&compiler, &[nvml_folder.join("nvml.c")], &nvml_library, &[]);
    // NVRTC that hands out its source with the PTX, for emulated kernels (`fakenvrtc/nvrtc.c`).
    let nvrtc_library = out.join("libfakenvrtc.so");
    build_library(
        &compiler,
        &[folder.with_file_name("fakenvrtc").join("nvrtc.c")],
        &nvrtc_library,
        &[],
    );
    // The cuFFT and cuSOLVER stand-ins (see `src/fake_libs.rs`), one file.
    let libs_library = out.join("libfakelibs.so");
    build_library(
        &compiler,
        &[folder.with_file_name("fakelibs").join("fakelibs.c")],
        &libs_library,
        &[],
    );

    // Every C file of the folder is built (and so embedded and checked by fake_abi).
    for entry in std::fs::read_dir(&folder).expect("tests/fakecuda is readable") {
        let name = entry.expect("tests/fakecuda is readable").file_name();
        let name = name.to_string_lossy();
        if name.ends_with(".c") && !SOURCES.contains(&name.as_ref()) {
            panic!("tests/fakecuda/{name} is not in build.rs's SOURCES");
        }
    }
    let mut embedded =
        String::from("/// The stand-in's C sources: `(file name, text)`.\npub const SOURCES: &[(&str, &str)] = &[\n");
    for source in SOURCES {
        embedded.push_str(&format!("    ({source:?}, include_str!({:?})),\n", folder.join(source)));
    }
    embedded.push_str("];\n");
    std::fs::write(out.join("fakecuda_sources.rs"), embedded)
        .unwrap_or_else(|e| panic!("cannot write fakecuda_sources.rs into {}: {e}", out.display()));

    println!("cargo:rustc-env=FAKECUDA_PATH={}", library.display());
    println!("cargo:rustc-env=FAKENVML_PATH={}", nvml_library.display());
    println!("cargo:rustc-env=FAKELIBS_PATH={}", libs_library.display());
    println!("cargo:rustc-env=FAKENVRTC_PATH={}", nvrtc_library.display());
    println!("cargo:rerun-if-changed=fakecuda");
    println!("cargo:rerun-if-changed=fakenvml");
    println!("cargo:rerun-if-changed=fakelibs");
    println!("cargo:rerun-if-changed=fakenvrtc");
}

/// Compiles and links `sources` into the shared object `library`; compiler warnings become
/// cargo warnings, errors a failed build.
fn build_library(compiler: &cc::Tool, sources: &[PathBuf], library: &std::path::Path, defines: &[String]) {
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
        .args(defines)
        .arg("-o")
        .arg(library)
        .args(sources)
        .args(["-ldl", "-lpthread", "-lm"]);
    let output = command
        .output()
        .unwrap_or_else(|e| panic!("could not run the C compiler ({command:?}): {e}"));
    let diagnostics = String::from_utf8_lossy(&output.stderr);
    if !output.status.success() {
        panic!("building {} failed ({command:?}):\n{diagnostics}", library.display());
    }
    for line in diagnostics.lines().filter(|line| !line.trim().is_empty()) {
        println!("cargo:warning={}: {line}", library.display());
    }
}
