//! The pinned CUDA wheels from PyPI (`cuda-sys/cuda-wheels.txt`), each
//! installed with pip into its own folder under `target/cuda-wheels/`.

use std::path::{Path, PathBuf};
use std::process::Command;

/// One pinned wheel: its PyPI name and exact version.
pub struct Pin {
    pub name: String,
    pub version: String,
}

/// Reads the pins file.
pub fn pins(root: &Path) -> Result<Vec<Pin>, String> {
    let path = root.join("cuda-sys/cuda-wheels.txt");
    let text = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    text.lines()
        .map(str::trim)
        .filter(|line| !line.is_empty() && !line.starts_with('#'))
        .map(|line| {
            let (name, version) = line
                .split_once("==")
                .ok_or_else(|| format!("{}: `{line}` is not NAME==VERSION", path.display()))?;
            Ok(Pin {
                name: name.to_string(),
                version: version.to_string(),
            })
        })
        .collect()
}

/// The pin for a wheel name.
pub fn pin<'a>(pins: &'a [Pin], name: &str) -> Result<&'a Pin, String> {
    pins.iter()
        .find(|p| p.name == name)
        .ok_or_else(|| format!("no pin for {name} in cuda-sys/cuda-wheels.txt"))
}

/// The headers' folder inside an installed CUDA 13 toolkit wheel.
const INCLUDE: &str = "nvidia/cu13/include";

/// The headers' folder inside an installed wheel: `nvidia/cu13/include` for the toolkit's
/// wheels, `nvidia/<name>/include` for those that keep a folder of their own (NCCL's
/// `nvidia/nccl/include`), the first by name where several have one.
pub fn include(installed: &Path) -> PathBuf {
    let toolkit = installed.join(INCLUDE);
    if toolkit.is_dir() {
        return toolkit;
    }
    let mut own: Vec<PathBuf> = std::fs::read_dir(installed.join("nvidia"))
        .into_iter()
        .flatten()
        .filter_map(Result::ok)
        .map(|entry| entry.path().join("include"))
        .filter(|folder| folder.is_dir())
        .collect();
    own.sort();
    own.into_iter().next().unwrap_or(toolkit)
}

/// Installs the pinned wheel (once) and returns the folder it is installed in (what
/// `site-packages` would be: a row's `Wheel::folder` and [`include()`] are below it).
pub fn ensure(root: &Path, pin: &Pin) -> Result<PathBuf, String> {
    let folder = root
        .join("target/cuda-wheels")
        .join(format!("{}-{}", pin.name, pin.version));
    let done = folder.join(".installed");
    if done.exists() {
        return Ok(folder);
    }
    let _ = std::fs::remove_dir_all(&folder);
    std::fs::create_dir_all(&folder).map_err(|e| format!("{}: {e}", folder.display()))?;
    eprintln!("xtask: fetching {}=={} from PyPI", pin.name, pin.version);
    let status = Command::new(python())
        .args([
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            "--no-deps",
            "--only-binary=:all:",
        ])
        .arg("--target")
        .arg(&folder)
        .arg(format!("{}=={}", pin.name, pin.version))
        .status()
        .map_err(|e| format!("running pip: {e}"))?;
    if !status.success() {
        return Err(format!(
            "pip could not install {}=={} ({status})",
            pin.name, pin.version
        ));
    }
    std::fs::write(&done, b"").map_err(|e| format!("{}: {e}", done.display()))?;
    Ok(folder)
}

fn python() -> String {
    std::env::var("PYTHON").unwrap_or_else(|_| "python3".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_are_in_the_toolkit_folder_or_the_wheels_own() {
        let root = std::env::temp_dir().join(format!("xtask-include-{}", std::process::id()));
        let toolkit = root.join("runtime");
        let nccl = root.join("nccl");
        std::fs::create_dir_all(toolkit.join("nvidia/cu13/include")).unwrap();
        std::fs::create_dir_all(toolkit.join("nvidia/cu13/lib")).unwrap();
        std::fs::create_dir_all(nccl.join("nvidia/nccl/include")).unwrap();
        std::fs::create_dir_all(nccl.join("nvidia/nccl/lib")).unwrap();
        assert_eq!(include(&toolkit), toolkit.join("nvidia/cu13/include"));
        assert_eq!(include(&nccl), nccl.join("nvidia/nccl/include"));
        assert_eq!(include(&root.join("absent")), root.join("absent/nvidia/cu13/include"));
        std::fs::remove_dir_all(&root).unwrap();
    }
}
