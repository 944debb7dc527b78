//! `cargo xtask cuda12-libs [OUT]`: CUDA 12's NVRTC (with its builtins), runtime and nvJitLink
//! from their pinned `-cu12` wheels, each xz-compressed into OUT (default
//! `target/cuda12-libs/`), the wheels' `.alt` copies left out: what the GPU bundle's CUDA 12 run
//! takes (`run.sh LOGDIR` with `CUDA12_LIBS=OUT`, which unpacks them). Small enough to carry to
//! a GPU machine: the libraries of CUDA 12 that are not (cuBLAS, NCCL) are checked on the CPU.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::wheels;

/// The libraries carried, by row.
const CARRIED: [cuda_sys::LibraryKind; 3] = [
    cuda_sys::LibraryKind::Nvrtc,
    cuda_sys::LibraryKind::Runtime,
    cuda_sys::LibraryKind::NvJitLink,
];

pub fn run(root: &Path, args: &[String]) -> Result<(), String> {
    let out = args
        .first()
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target/cuda12-libs"));
    std::fs::create_dir_all(&out).map_err(|e| format!("{}: {e}", out.display()))?;
    let pins = wheels::pins(root)?;
    for kind in CARRIED {
        let library = kind.library();
        let build = library
            .cuda12
            .ok_or_else(|| format!("{} has no CUDA 12 build in the table", library.short_name))?;
        let installed = wheels::ensure(root, wheels::pin(&pins, build.wheel.name)?)?;
        let folder = installed.join(build.wheel.folder);
        // The library and its companions (NVRTC's builtins), not the `.alt` copies.
        let mut prefixes = vec![build.soname.linux];
        prefixes.extend(library.companions);
        for entry in std::fs::read_dir(&folder).map_err(|e| format!("{}: {e}", folder.display()))? {
            let path = entry.map_err(|e| format!("{}: {e}", folder.display()))?.path();
            let name = path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            if name.contains(".alt.") || !prefixes.iter().any(|prefix| name.starts_with(prefix)) {
                continue;
            }
            compress(&path, &out.join(format!("{name}.xz")))?;
        }
    }
    eprintln!(
        "xtask: CUDA 12 libraries in {} (run.sh: CUDA12_LIBS={0})",
        out.display()
    );
    Ok(())
}

fn compress(from: &Path, to: &Path) -> Result<(), String> {
    let file = std::fs::File::create(to).map_err(|e| format!("{}: {e}", to.display()))?;
    let status = Command::new("xz")
        .args(["-T0", "-6", "-c"])
        .arg(from)
        .stdout(file)
        .status()
        .map_err(|e| format!("running xz: {e}"))?;
    if !status.success() {
        return Err(format!("xz could not compress {} ({status})", from.display()));
    }
    let size = std::fs::metadata(to).map(|m| m.len()).unwrap_or(0);
    eprintln!("xtask: {} ({:.1} MB)", to.display(), size as f64 / 1e6);
    Ok(())
}
