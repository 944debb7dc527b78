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

// One test: it sets `CUDA_NVRTC_LIBRARY` for the process-wide loader, which no other thread may
// read meanwhile.
#[test]
fn each_generation_compiles_and_mixing_them_is_refused() {
    let (Some(nvrtc13), Some(nvrtc12)) = (
        std::env::var_os("CUDA_NVRTC_LIBRARY"),
        std::env::var_os("CUDA12_NVRTC_LIBRARY"),
    ) else {
        return skipped(
            "CUDA_NVRTC_LIBRARY and CUDA12_NVRTC_LIBRARY name NVRTC 13 and 12 (`cargo xtask test` sets both)",
        );
    };
    for (path, major, isa) in [(&nvrtc13, 13, ".version 9."), (&nvrtc12, 12, ".version 8.")] {
        let nvrtc = Nvrtc::open(path).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            nvrtc.library_version().map(|v| v / 1000),
            Some(major),
            "{}",
            nvrtc.path().display()
        );
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

    // The process-wide NVRTC is CUDA 12's; nvJitLink of CUDA 13 beside it is refused.
    let nvjitlink13: Option<OsString> = std::env::var_os("CUDA_NVJITLINK_LIBRARY");
    std::env::set_var("CUDA_NVRTC_LIBRARY", &nvrtc12);
    let nvrtc = common::nvrtc();
    assert_eq!(nvrtc.library_version().map(|v| v / 1000), Some(12));
    let loaded = cuda_sys::versions();
    assert!(
        loaded
            .iter()
            .any(|l| l.kind == LibraryKind::Nvrtc && l.path == nvrtc.path()),
        "{loaded:?}"
    );
    let Some(nvjitlink13) = nvjitlink13 else {
        return skipped("mixed generations (CUDA_NVJITLINK_LIBRARY unset)");
    };
    let error = NvJitLink::open(&nvjitlink13)
        .err()
        .expect("nvJitLink 13 beside NVRTC 12");
    assert!(
        matches!(
            error.unusable,
            Some(Unusable::MixedGenerations { library, other: LibraryKind::Nvrtc, other_version })
                if library / 1000 == 13 && other_version / 1000 == 12
        ),
        "{error:?}"
    );
    let message = error.to_string();
    assert!(
        message.contains("nvidia-nvjitlink-cu12==12.*") && message.contains("CUDA_NVJITLINK_LIBRARY"),
        "{message}"
    );
}
