//! Where each CUDA library is looked for, in order:
//!
//! 1. the library's environment variable (`CUDA_DRIVER_LIBRARY`, ...), a path
//!    to the file; when it is set, nothing else is tried;
//! 2. the platform loader's default name (`libcuda.so.1`, ...);
//! 3. `lib64`/`lib` under `CUDA_HOME`, `CUDA_PATH` and `/usr/local/cuda`;
//! 4. the library's wheel folder ([`Wheel::folder`](crate::Wheel::folder), `nvidia/cu13/lib`) under each `site-packages` folder found
//!    through `PYTHONPATH`, `VIRTUAL_ENV`, `CONDA_PREFIX`, the `python3` on `PATH`
//!    (a venv there need not be activated), pyenv's interpreters, the usual conda
//!    installs, and the system and user prefixes (`/usr/local`, `/usr`, `~/.local`).
//!    Only the file system is read, once per library: no Python interpreter is run.
//!
//! Steps 2 to 4 are taken for the library's CUDA 13 file name (`libnvrtc.so.13`, wheel
//! folder `nvidia/cu13/lib`), then for its CUDA 12 one (`libnvrtc.so.12`, the `-cu12` wheel's
//! own folder `nvidia/cuda_nvrtc/lib`): CUDA 12 first where the driver supports CUDA 12 only
//! (see [`candidates_preferring`]).
//!
//! The driver ([`crate::Install::DriverPackage`]) is never in a
//! toolkit's `lib64` or in a wheel: for it steps 3 and 4 are
//! replaced by WSL's `/usr/lib/wsl/lib` and the forward-compatibility package's `compat`
//! folder under those CUDA roots (Linux only).

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use crate::{Install, LibraryKind};

/// A place to try: a name for the platform loader's own search, or a file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Candidate {
    /// Passed to the loader as is, so its search path applies.
    LoaderName(&'static str),
    /// A file path, opened directly.
    File(PathBuf),
}

impl Candidate {
    /// The candidate as a path, for listing in errors.
    pub fn as_path(&self) -> &Path {
        match self {
            Self::LoaderName(name) => Path::new(name),
            Self::File(path) => path,
        }
    }
}

/// The process's environment, as [`candidates`] reads it when loading: one function, so every
/// library's loader shares one copy of the search.
pub(crate) fn process_environment(name: &str) -> Option<OsString> {
    std::env::var_os(name)
}

/// The candidates for `kind`, in search order (its row of [`crate::LIBRARIES`] says where it is
/// installed from), the CUDA 13 build's before the CUDA 12 one's, reading the environment
/// through `env` (so the order can be tested without touching the process).
pub fn candidates(kind: LibraryKind, env: impl Fn(&str) -> Option<OsString>) -> Vec<Candidate> {
    candidates_preferring(kind, env, 13)
}

/// The candidates for `kind` with the build of CUDA `prefer` (12 or 13) first: every place of
/// its file name (loader, toolkits, its wheel's folder), then every place of the other's. The
/// loader picks 12 where the driver supports CUDA 12 only, or where a partner library of CUDA
/// 12 is loaded (see [`crate::LibraryKind::partner`]).
pub fn candidates_preferring(kind: LibraryKind, env: impl Fn(&str) -> Option<OsString>, prefer: i32) -> Vec<Candidate> {
    if let Some(explicit) = env(kind.env_var()).filter(|v| !v.is_empty()) {
        return vec![Candidate::File(PathBuf::from(explicit))];
    }
    let roots: Vec<PathBuf> = ["CUDA_HOME", "CUDA_PATH"]
        .into_iter()
        .filter_map(&env)
        .map(PathBuf::from)
        .chain([PathBuf::from("/usr/local/cuda")])
        .collect();
    let library = kind.library();
    let mut found = Vec::new();
    let mut push = |candidate: Candidate| {
        if !found.contains(&candidate) {
            found.push(candidate);
        }
    };
    match library.install {
        Install::DriverPackage => {
            // The driver is installed with the GPU's driver package, which the loader finds; beyond
            // that only WSL's folder and the CUDA forward-compatibility package hold one. Toolkits
            // ship a stub only, and wheels none.
            let name = library.loader_name();
            push(Candidate::LoaderName(name));
            if cfg!(target_os = "linux") {
                push(Candidate::File(PathBuf::from("/usr/lib/wsl/lib").join(name)));
                for root in &roots {
                    push(Candidate::File(root.join("compat").join(name)));
                }
            }
        }
        Install::Wheel(wheel) => {
            let mut builds = vec![(library.loader_name(), wheel.folder)];
            if let Some(build) = library.cuda12 {
                builds.push((build.soname.here(), build.wheel.folder));
            }
            if prefer == 12 {
                builds.reverse();
            }
            let site_packages = site_packages_folders(&env);
            for (name, wheel_folder) in builds {
                push(Candidate::LoaderName(name));
                for root in &roots {
                    push(Candidate::File(root.join("lib64").join(name)));
                    push(Candidate::File(root.join("lib").join(name)));
                }
                for site in &site_packages {
                    push(Candidate::File(site.join(wheel_folder).join(name)));
                }
            }
        }
    }
    found
}

/// Python `site-packages` (and Debian `dist-packages`) folders that exist, from these prefixes
/// in order: `VIRTUAL_ENV`, `CONDA_PREFIX`, the `python3` first on `PATH` (the folder above its
/// `bin`, before and after following links, so an unactivated venv on `PATH` and the
/// interpreter it was made from both count), every pyenv interpreter (`PYENV_ROOT`, by default
/// `~/.pyenv`, `versions/*`), the usual conda installs (`~/miniforge3`, `~/miniconda3`,
/// `~/anaconda3`, `/opt/conda`), `/usr/local`, `/usr` and the user site `~/.local`; under each,
/// `lib` and `lib64` `python3*/{site,dist}-packages`. `PYTHONPATH`'s folders come first.
///
/// Only the file system is read: no interpreter is run.
fn site_packages_folders(env: &impl Fn(&str) -> Option<OsString>) -> Vec<PathBuf> {
    let home = env("HOME").map(PathBuf::from);
    let mut prefixes: Vec<PathBuf> = ["VIRTUAL_ENV", "CONDA_PREFIX"]
        .into_iter()
        .filter_map(env)
        .map(PathBuf::from)
        .collect();
    if let Some(python) = env("PATH").and_then(|path| {
        std::env::split_paths(&path)
            .map(|dir| dir.join("python3"))
            .find(|python| python.is_file())
    }) {
        let resolved = std::fs::canonicalize(&python).ok();
        for python in [Some(python), resolved].into_iter().flatten() {
            if let Some(prefix) = python.parent().and_then(Path::parent) {
                prefixes.push(prefix.to_path_buf());
            }
        }
    }
    let pyenv = env("PYENV_ROOT")
        .map(PathBuf::from)
        .or_else(|| home.as_ref().map(|h| h.join(".pyenv")));
    if let Some(versions) = pyenv.and_then(|root| std::fs::read_dir(root.join("versions")).ok()) {
        let mut versions: Vec<PathBuf> = versions.filter_map(Result::ok).map(|e| e.path()).collect();
        versions.sort();
        prefixes.extend(versions);
    }
    if let Some(home) = &home {
        prefixes.extend(["miniforge3", "miniconda3", "anaconda3"].map(|conda| home.join(conda)));
    }
    prefixes.extend(["/opt/conda", "/usr/local", "/usr"].map(PathBuf::from));
    if let Some(home) = &home {
        prefixes.push(home.join(".local"));
    }
    let mut folders: Vec<PathBuf> = env("PYTHONPATH")
        .map(|p| std::env::split_paths(&p).collect())
        .unwrap_or_default();
    for lib in prefixes
        .iter()
        .flat_map(|prefix| [prefix.join("lib"), prefix.join("lib64")])
    {
        let Ok(entries) = std::fs::read_dir(lib) else {
            continue;
        };
        let mut pythons: Vec<PathBuf> = entries
            .filter_map(Result::ok)
            .filter(|e| e.file_name().to_string_lossy().starts_with("python3"))
            .map(|e| e.path())
            .collect();
        pythons.sort();
        for python in pythons {
            folders.push(python.join("site-packages"));
            folders.push(python.join("dist-packages"));
        }
    }
    folders.retain(|f| f.is_dir());
    let mut seen = Vec::new();
    folders.retain(|f| {
        let key = std::fs::canonicalize(f).unwrap_or_else(|_| f.clone());
        let new = !seen.contains(&key);
        seen.push(key);
        new
    });
    folders
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env_of<const N: usize>(pairs: [(&'static str, OsString); N]) -> impl Fn(&str) -> Option<OsString> {
        move |name| pairs.iter().find(|(k, _)| *k == name).map(|(_, v)| v.clone())
    }

    #[test]
    fn explicit_variable_is_the_only_candidate() {
        let found = candidates(
            LibraryKind::Nvrtc,
            env_of([("CUDA_NVRTC_LIBRARY", "/opt/x/libnvrtc.so.13".into())]),
        );
        assert_eq!(found, vec![Candidate::File("/opt/x/libnvrtc.so.13".into())]);
    }

    #[test]
    fn loader_name_then_cuda_home_then_default_prefix() {
        let found = candidates(LibraryKind::Runtime, env_of([("CUDA_HOME", "/opt/cuda-13".into())]));
        assert_eq!(found[0], Candidate::LoaderName("libcudart.so.13"));
        assert_eq!(found[1], Candidate::File("/opt/cuda-13/lib64/libcudart.so.13".into()));
        assert_eq!(found[2], Candidate::File("/opt/cuda-13/lib/libcudart.so.13".into()));
        assert_eq!(
            found[3],
            Candidate::File("/usr/local/cuda/lib64/libcudart.so.13".into())
        );
    }

    #[test]
    fn the_driver_is_not_looked_for_in_wheels_or_toolkits() {
        let venv = std::env::temp_dir().join(format!("cuda-sys-driver-venv-{}", std::process::id()));
        std::fs::create_dir_all(venv.join("lib/python3.12/site-packages")).unwrap();
        let found = candidates(
            LibraryKind::Driver,
            env_of([
                ("VIRTUAL_ENV", venv.clone().into_os_string()),
                ("CUDA_HOME", "/opt/cuda-13".into()),
            ]),
        );
        std::fs::remove_dir_all(&venv).unwrap();
        assert_eq!(found[0], Candidate::LoaderName("libcuda.so.1"));
        for candidate in &found[1..] {
            let path = candidate.as_path().to_string_lossy();
            assert!(!path.contains("-packages") && !path.contains("/lib64/"), "{path}");
        }
        if cfg!(target_os = "linux") {
            assert!(found.contains(&Candidate::File("/opt/cuda-13/compat/libcuda.so.1".into())));
            assert!(found.contains(&Candidate::File("/usr/lib/wsl/lib/libcuda.so.1".into())));
        }
    }

    #[cfg(unix)]
    #[test]
    fn wheels_of_the_python3_on_path_pyenv_conda_and_the_user_site_are_found() {
        let root = std::env::temp_dir().join(format!("cuda-sys-pythons-{}", std::process::id()));
        let site = |prefix: &str, lib: &str| root.join(prefix).join(lib).join("python3.12/site-packages");
        // An unactivated venv first on PATH, whose python3 links to a base interpreter.
        let (venv, base) = (site("venv", "lib"), site("base", "lib64"));
        let (pyenv, conda, user) = (
            site("home/.pyenv/versions/3.12.4", "lib"),
            site("home/miniforge3", "lib"),
            site("home/.local", "lib"),
        );
        for folder in [&venv, &base, &pyenv, &conda, &user] {
            std::fs::create_dir_all(folder).unwrap();
        }
        std::fs::create_dir_all(root.join("base/bin")).unwrap();
        std::fs::create_dir_all(root.join("venv/bin")).unwrap();
        std::fs::write(root.join("base/bin/python3.12"), b"").unwrap();
        std::os::unix::fs::symlink(root.join("base/bin/python3.12"), root.join("venv/bin/python3")).unwrap();
        let path = std::env::join_paths([root.join("empty"), root.join("venv/bin")]).unwrap();
        let found = candidates(
            LibraryKind::Nvrtc,
            env_of([("PATH", path), ("HOME", root.join("home").into_os_string())]),
        );
        std::fs::remove_dir_all(&root).unwrap();
        let position = |folder: &PathBuf| {
            let file = Candidate::File(folder.join("nvidia/cu13/lib/libnvrtc.so.13"));
            found.iter().position(|c| *c == file)
        };
        let positions: Vec<_> = [&venv, &base, &pyenv, &conda, &user].map(position).into();
        assert!(positions.iter().all(Option::is_some), "{positions:?} in {found:?}");
        assert!(positions.windows(2).all(|w| w[0] < w[1]), "{positions:?}");
    }

    #[test]
    fn cuda_13_names_come_first_then_cuda_12_unless_12_is_preferred() {
        let venv = std::env::temp_dir().join(format!("cuda-sys-generations-{}", std::process::id()));
        let site = venv.join("lib/python3.12/site-packages");
        std::fs::create_dir_all(&site).unwrap();
        let env = || env_of([("VIRTUAL_ENV", venv.clone().into_os_string())]);
        let cu13 = Candidate::File(site.join("nvidia/cu13/lib/libnvrtc.so.13"));
        let cu12 = Candidate::File(site.join("nvidia/cuda_nvrtc/lib/libnvrtc.so.12"));
        let first13 = candidates(LibraryKind::Nvrtc, env());
        let first12 = candidates_preferring(LibraryKind::Nvrtc, env(), 12);
        std::fs::remove_dir_all(&venv).unwrap();
        let at = |found: &[Candidate], c: &Candidate| found.iter().position(|f| f == c).expect("listed");
        assert_eq!(first13[0], Candidate::LoaderName("libnvrtc.so.13"));
        assert!(at(&first13, &cu13) < at(&first13, &Candidate::LoaderName("libnvrtc.so.12")));
        assert!(at(&first13, &Candidate::LoaderName("libnvrtc.so.12")) < at(&first13, &cu12));
        assert_eq!(first12[0], Candidate::LoaderName("libnvrtc.so.12"));
        assert!(at(&first12, &cu12) < at(&first12, &Candidate::LoaderName("libnvrtc.so.13")));
        let mut sorted13 = first13.clone();
        let mut sorted12 = first12.clone();
        sorted13.sort_by_key(|c| c.as_path().to_path_buf());
        sorted12.sort_by_key(|c| c.as_path().to_path_buf());
        assert_eq!(sorted13, sorted12, "the same places, in another order");
        // NCCL's file name and folder are one in both generations: listed once.
        let nccl = candidates(LibraryKind::Nccl, env_of([]));
        let loader = nccl
            .iter()
            .filter(|c| **c == Candidate::LoaderName("libnccl.so.2"))
            .count();
        assert_eq!(loader, 1, "{nccl:?}");
        // The explicit variable is still the only candidate.
        let explicit = candidates_preferring(
            LibraryKind::Cublas,
            env_of([("CUDA_CUBLAS_LIBRARY", "/x/libcublas.so.12".into())]),
            12,
        );
        assert_eq!(explicit, vec![Candidate::File("/x/libcublas.so.12".into())]);
    }

    #[test]
    fn wheel_folders_come_from_python_prefixes() {
        let venv = std::env::temp_dir().join(format!("cuda-sys-venv-{}", std::process::id()));
        let site = venv.join("lib/python3.12/site-packages");
        std::fs::create_dir_all(&site).unwrap();
        let found = candidates(
            LibraryKind::Nvrtc,
            env_of([("VIRTUAL_ENV", venv.clone().into_os_string())]),
        );
        assert!(
            found.contains(&Candidate::File(site.join("nvidia/cu13/lib/libnvrtc.so.13"))),
            "{found:?}"
        );
        std::fs::remove_dir_all(&venv).unwrap();
    }
}
