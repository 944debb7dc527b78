//! Every function libfakecuda exports has the parameter list `cuda.h`
//! declares for it (count, and pointer depth of each parameter), so the
//! stand-in is called with the ABI the real driver has. Needs the pinned
//! header: from `CUDA_SYS_HEADERS` (the GPU bundle's copy) or the wheels that
//! `cargo xtask test` fetches into `target/cuda-wheels/`; prints
//! `skipped: <why>` without it. The stand-in's sources are embedded at build
//! time, so the binary needs no source tree beside it.

use std::collections::HashMap;
use std::io::Write;
use std::path::PathBuf;

// `SOURCES`: the C files of `tests/fakecuda` that build.rs compiles, as `(name, text)`.
include!(concat!(env!("OUT_DIR"), "/fakecuda_sources.rs"));

/// `cuda.h` from the folders in `CUDA_SYS_HEADERS` (set by `cargo xtask test`, and by the GPU
/// bundle's `run.sh` to the pinned headers it carries), else from the wheels fetched into the
/// `target/` folder this binary runs from (`target/<profile>/deps/fake_abi-...`).
fn cuda_h() -> Option<PathBuf> {
    if let Some(folders) = std::env::var_os("CUDA_SYS_HEADERS") {
        if let Some(found) = std::env::split_paths(&folders)
            .map(|folder| folder.join("cuda.h"))
            .find(|path| path.is_file())
        {
            return Some(found);
        }
    }
    let exe = std::env::current_exe().ok()?;
    let wheels = exe.ancestors().skip(1).take(3).find_map(|folder| {
        let wheels = folder.join("cuda-wheels");
        wheels.is_dir().then_some(wheels)
    })?;
    std::fs::read_dir(wheels)
        .ok()?
        .filter_map(Result::ok)
        .map(|entry| entry.path().join("nvidia/cu13/include/cuda.h"))
        .find(|path| path.exists())
}

/// The pointer depth of each parameter of a C parameter list (`void` is none).
fn shape(parameters: &str) -> Vec<usize> {
    let parameters = parameters.split_whitespace().collect::<Vec<_>>().join(" ");
    if parameters.trim() == "void" || parameters.trim().is_empty() {
        return Vec::new();
    }
    parameters.split(',').map(|p| p.matches('*').count()).collect()
}

/// `name -> parameter lists` of the declarations `prefix NAME(...)` in `text`.
fn declarations(text: &str, prefix: &str) -> HashMap<String, Vec<Vec<usize>>> {
    let mut found: HashMap<String, Vec<Vec<usize>>> = HashMap::new();
    for piece in text.split(prefix).skip(1) {
        let Some(open) = piece.find('(') else { continue };
        let name = piece[..open].trim();
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            continue;
        }
        let Some(close) = piece[open..].find(')') else { continue };
        found
            .entry(name.to_string())
            .or_default()
            .push(shape(&piece[open + 1..open + close]));
    }
    found
}

/// Exports of the 12.x ABI that CUDA 13's `cuda.h` no longer declares (cuda-sys's
/// `driver_abi12.rs` calls them on drivers older than the declared ABI), with their pointer
/// depths per parameter (`PFN_cuCtxCreate_v3020` of `cudaTypedefs.h`).
const OLDER_ABIS: &[(&str, &[usize])] = &[("cuCtxCreate_v2", &[1, 0, 0])];

#[test]
fn exports_match_cuda_h() {
    let Some(header) = cuda_h() else {
        let _ = writeln!(
            std::io::stdout(),
            "skipped: cuda.h not fetched (run `cargo xtask test`) and not in CUDA_SYS_HEADERS"
        );
        return;
    };
    let header = std::fs::read_to_string(header).unwrap();
    let declared = declarations(&header, "CUresult CUDAAPI ");
    // `#define cuMemAlloc cuMemAlloc_v2`: the header declares the exported name by its macro name
    let mut aliases: HashMap<String, Vec<String>> = HashMap::new();
    for line in header.lines().filter(|l| l.starts_with("#define cu")) {
        let words: Vec<&str> = line.split_whitespace().collect();
        if let [_, alias, target, ..] = words[..] {
            let target = target
                .trim_start_matches("__CUDA_API_PTDS(")
                .trim_start_matches("__CUDA_API_PTSZ(");
            aliases
                .entry(target.trim_end_matches(')').to_string())
                .or_default()
                .push(alias.to_string());
        }
    }
    let mut checked = 0;
    for (file, source) in SOURCES {
        for (name, shapes) in declarations(source, "EXPORT CUresult ") {
            if let Some((_, older)) = OLDER_ABIS.iter().find(|(older, _)| *older == name) {
                assert_eq!(&shapes[0][..], *older, "{name} (fakecuda/{file}): its 12.x ABI");
                checked += 1;
                continue;
            }
            let names = std::iter::once(name.clone()).chain(aliases.get(&name).cloned().unwrap_or_default());
            let candidates: Vec<&Vec<usize>> = names.filter_map(|n| declared.get(&n)).flatten().collect();
            assert!(
                !candidates.is_empty(),
                "{name} (fakecuda/{file}) is not declared in cuda.h"
            );
            assert!(
                candidates.contains(&&shapes[0]),
                "{name}: fakecuda takes {:?} (pointer depth per parameter), cuda.h declares {candidates:?}",
                shapes[0]
            );
            checked += 1;
        }
    }
    assert!(checked > 100, "only {checked} exports checked");
}
