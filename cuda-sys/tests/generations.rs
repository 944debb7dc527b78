//! Both CUDA generations of NVRTC, with no GPU: each compiles a kernel (PTX of its own ISA:
//! 8.x for CUDA 12, 9.x for CUDA 13), and NVRTC of one generation with nvJitLink of the other
//! is refused with a typed error. CUDA 12's NVRTC comes from `CUDA12_NVRTC_LIBRARY` (`cargo
//! xtask test` fetches the pinned `nvidia-cuda-nvrtc-cu12` wheel and sets it); `skipped:`
//! without it.

mod common;

use common::compile_with;
use cuda_sys::nvrtc::nvrtcResult;
use cuda_sys::{LibraryKind, NvJitLink, Nvrtc, Unusable};
use std::ffi::OsString;

const KERNEL: &str = r#"extern "C" __global__ void scale(float* x, float a, unsigned n) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] *= a;
}"#;

fn skipped(why: &str) {
    println!("skipped: {why}");
}

/// NVRTC of each generation named by `CUDA_NVRTC_LIBRARY` and `CUDA12_NVRTC_LIBRARY` (which is
/// which depends on the run: the bundle's CUDA 12 run points both at CUDA 12's), by major.
fn nvrtc_by_generation() -> Vec<(i32, OsString)> {
    let mut found: Vec<(i32, OsString)> = Vec::new();
    for variable in ["CUDA_NVRTC_LIBRARY", "CUDA12_NVRTC_LIBRARY"] {
        let Some(path) = std::env::var_os(variable) else {
            continue;
        };
        let nvrtc = Nvrtc::open(&path).unwrap_or_else(|e| panic!("{variable}: {e}"));
        let major = nvrtc.library_version().expect("NVRTC reports its version") / 1000;
        if !found.iter().any(|(m, _)| *m == major) {
            found.push((major, path));
        }
    }
    found.sort();
    found
}

// One test: it sets `CUDA_NVRTC_LIBRARY` for the process-wide loader, which no other thread may
// read meanwhile.
#[test]
fn each_generation_compiles_and_mixing_them_is_refused() {
    let generations = nvrtc_by_generation();
    let [(12, nvrtc12), (13, nvrtc13)] = &generations[..] else {
        return skipped(&format!(
            "NVRTC of CUDA 12 and 13 are needed (CUDA_NVRTC_LIBRARY, CUDA12_NVRTC_LIBRARY; `cargo xtask test` sets both); found {generations:?}"
        ));
    };
    for (path, major, isa) in [(nvrtc13, 13, ".version 9."), (nvrtc12, 12, ".version 8.")] {
        let nvrtc = Nvrtc::open(path).unwrap_or_else(|e| panic!("{e}"));
        let (result, log, ptx) = compile_with(&nvrtc, KERNEL);
        assert_eq!(result, nvrtcResult::NVRTC_SUCCESS, "NVRTC {major}: {log}");
        let ptx = ptx.unwrap();
        assert!(
            ptx.contains(isa) && ptx.contains(".visible .entry scale("),
            "NVRTC {major}:\n{ptx}"
        );
        let isa_line = ptx.lines().find(|l| l.starts_with(".version")).unwrap_or_default();
        println!("NVRTC {major}: {isa_line}");
    }

    // The process-wide NVRTC is of the other generation than the nvJitLink at hand, which is
    // then refused beside it.
    let Some(nvjitlink) = std::env::var_os("CUDA_NVJITLINK_LIBRARY") else {
        return skipped("mixed generations (CUDA_NVJITLINK_LIBRARY unset)");
    };
    let linker_major = NvJitLink::open(&nvjitlink)
        .unwrap_or_else(|e| panic!("{e}"))
        .library_version()
        .expect("nvJitLink reports its version")
        / 1000;
    let (other_major, other_nvrtc) = if linker_major == 13 {
        (12, nvrtc12)
    } else {
        (13, nvrtc13)
    };
    std::env::set_var("CUDA_NVRTC_LIBRARY", other_nvrtc);
    let nvrtc = common::nvrtc();
    assert_eq!(nvrtc.library_version().map(|v| v / 1000), Some(other_major));
    let loaded = cuda_sys::versions();
    assert!(
        loaded
            .iter()
            .any(|l| l.kind == LibraryKind::Nvrtc && l.path == nvrtc.path()),
        "{loaded:?}"
    );
    let error = NvJitLink::open(&nvjitlink)
        .err()
        .expect("nvJitLink beside NVRTC of another generation");
    assert!(
        matches!(
            error.unusable,
            Some(Unusable::MixedGenerations { library, other: LibraryKind::Nvrtc, other_version })
                if library / 1000 == linker_major && other_version / 1000 == other_major
        ),
        "{error:?}"
    );
    let message = error.to_string();
    let wheel = LibraryKind::NvJitLink.pip_requirement(other_major);
    assert!(
        message.contains(&wheel) && message.contains("CUDA_NVJITLINK_LIBRARY"),
        "{message}"
    );
}
