//! Finding the CUDA toolkit's headers (`cooperative_groups.h`, `cuda_fp16.h`, ...) for NVRTC,
//! which knows only its built-in ones.

use std::path::{Path, PathBuf};

/// The CUDA toolkit's header folders: the first folder holding `cuda_runtime.h`, searched in
/// order `$CUDA_HOME/include`, `$CUDA_PATH/include`, the `include` folder beside the loaded NVRTC
/// library and beside `$CUDA_RUNTIME_LIBRARY` (the layout of NVIDIA's Python wheels),
/// `/usr/local/cuda/include`; followed by its `cccl` subfolder where there is one (CUDA 13
/// keeps libcu++, CUB and Thrust there). Empty when none is found.
pub fn find_cuda_include_dirs() -> Vec<PathBuf> {
    let mut candidates = Vec::new();
    for variable in ["CUDA_HOME", "CUDA_PATH"] {
        if let Some(root) = std::env::var_os(variable).filter(|v| !v.is_empty()) {
            candidates.push(PathBuf::from(root).join("include"));
        }
    }
    if let Ok(nvrtc) = cuda_sys::nvrtc() {
        candidates.extend(beside_library(nvrtc.path()));
    }
    if let Some(runtime) = std::env::var_os("CUDA_RUNTIME_LIBRARY").filter(|v| !v.is_empty()) {
        candidates.extend(beside_library(Path::new(&runtime)));
    }
    candidates.push(PathBuf::from("/usr/local/cuda/include"));
    let Some(include) = candidates.into_iter().find(|dir| dir.join("cuda_runtime.h").is_file()) else {
        return Vec::new();
    };
    let cccl = include.join("cccl");
    if cccl.is_dir() {
        vec![include, cccl]
    } else {
        vec![include]
    }
}

/// `<lib>/../include` for a library file in `<lib>`.
fn beside_library(library: &Path) -> Option<PathBuf> {
    Some(library.parent()?.parent()?.join("include"))
}
