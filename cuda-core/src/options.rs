//! What to compile for and how: [`Arch`], [`Std`], [`CompileTarget`] and [`ProgramOptions`].

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;

use crate::error::{Error, Result};

/// A GPU architecture to compile for.
///
/// `Sm(90)` is real code for compute capability 9.0 (`sm_90`, what a CUBIN
/// needs); `Compute(90)` is the virtual architecture `compute_90`, whose PTX
/// the driver can JIT-compile for 9.0 and any newer device.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Arch {
    /// `sm_XY`: a real architecture, e.g. `Sm(90)` for `sm_90`.
    Sm(u32),
    /// `compute_XY`: a virtual architecture, e.g. `Compute(90)` for `compute_90`.
    Compute(u32),
}

impl Arch {
    /// The architecture of compute capability `major.minor` (`sm_XY`).
    pub fn from_compute_capability(major: u32, minor: u32) -> Self {
        Arch::Sm(major * 10 + minor)
    }

    /// The number, e.g. 90 for both `sm_90` and `compute_90`.
    pub fn number(self) -> u32 {
        match self {
            Arch::Sm(n) | Arch::Compute(n) => n,
        }
    }

    /// The compute capability as `(major, minor)`, e.g. `(9, 0)`.
    pub fn compute_capability(self) -> (u32, u32) {
        (self.number() / 10, self.number() % 10)
    }

    /// Whether this is a real (`sm_XY`) architecture.
    pub fn is_real(self) -> bool {
        matches!(self, Arch::Sm(_))
    }

    pub(crate) fn validate(self) -> Result<Self> {
        if (10..=999).contains(&self.number()) {
            Ok(self)
        } else {
            Err(Error::InvalidValue(format!(
                "architecture number {} is not a compute capability",
                self.number()
            )))
        }
    }
}

impl PartialEq<&str> for Arch {
    /// `Arch::Sm(90) == "sm_90"`.
    fn eq(&self, other: &&str) -> bool {
        other.parse::<Arch>().is_ok_and(|arch| arch == *self)
    }
}

impl fmt::Display for Arch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Arch::Sm(n) => write!(f, "sm_{n}"),
            Arch::Compute(n) => write!(f, "compute_{n}"),
        }
    }
}

impl FromStr for Arch {
    type Err = Error;

    /// Parses `sm_90` or `compute_90`.
    fn from_str(text: &str) -> Result<Self> {
        let invalid = || Error::InvalidValue(format!("`{text}` is not an architecture like `sm_90` or `compute_90`"));
        let (make, digits): (fn(u32) -> Arch, &str) = if let Some(digits) = text.strip_prefix("sm_") {
            (Arch::Sm, digits)
        } else if let Some(digits) = text.strip_prefix("compute_") {
            (Arch::Compute, digits)
        } else {
            return Err(invalid());
        };
        if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return Err(invalid());
        }
        make(digits.parse().map_err(|_| invalid())?).validate()
    }
}

/// The C++ dialect (`--std=`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Std {
    /// `--std=c++03`
    Cpp03,
    /// `--std=c++11`
    Cpp11,
    /// `--std=c++14`
    Cpp14,
    /// `--std=c++17` (NVRTC's default since CUDA 11)
    Cpp17,
    /// `--std=c++20`
    Cpp20,
}

impl Std {
    fn flag(self) -> &'static str {
        match self {
            Std::Cpp03 => "--std=c++03",
            Std::Cpp11 => "--std=c++11",
            Std::Cpp14 => "--std=c++14",
            Std::Cpp17 => "--std=c++17",
            Std::Cpp20 => "--std=c++20",
        }
    }
}

/// What [`Program::compile`](crate::Program::compile) produces.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CompileTarget {
    /// PTX text, loadable on the architecture compiled for and newer (JIT by the driver).
    Ptx,
    /// A CUBIN (SASS) for one real architecture; needs an [`Arch::Sm`].
    Cubin,
    /// LTO-IR (NVRTC's `-dlto`), to be linked by [`Linker`](crate::Linker) with link-time optimisation.
    LtoIr,
}

/// How NVRTC compiles a [`Program`](crate::Program). Fields map one to one onto NVRTC options;
/// build one with struct-update syntax:
///
/// ```
/// use cuda_core::{Arch, ProgramOptions, Std};
///
/// let options = ProgramOptions {
///     arch: Some(Arch::Sm(90)),
///     std: Some(Std::Cpp17),
///     defines: vec![("BLOCK".into(), Some("256".into()))],
///     ..ProgramOptions::default()
/// };
/// assert!(options.to_nvrtc_options(Arch::Sm(90), cuda_core::CompileTarget::Ptx).contains(&"-DBLOCK=256".to_string()));
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ProgramOptions {
    /// The architecture (`-arch`). `None` means the `sm_XY` of [`Device::current`](crate::Device::current)
    /// (the device last made current on this thread, else device 0). With no driver or no device,
    /// compiling without an explicit arch is an [`Error::InvalidValue`] rather than a guess.
    pub arch: Option<Arch>,
    /// The C++ dialect; `None` leaves NVRTC's default (C++17).
    pub std: Option<Std>,
    /// Device debug information (`-G`).
    pub debug: bool,
    /// Line information for profilers (`-lineinfo`).
    pub lineinfo: bool,
    /// Macros: `(name, None)` is `-Dname`, `(name, Some(value))` is `-Dname=value`.
    pub defines: Vec<(String, Option<String>)>,
    /// Folders searched for `#include` (`-I`). Their files are not part of the cache key: put headers
    /// whose changes must invalidate cached kernels in [`headers`](Self::headers), or turn the cache off.
    pub include_paths: Vec<PathBuf>,
    /// Add the CUDA toolkit's header folders ([`find_cuda_include_dirs`](crate::find_cuda_include_dirs))
    /// to the include path, for `cooperative_groups.h`, `cuda_fp16.h` and the like; compiling is
    /// an [`Error::InvalidValue`] when none is found. The folders' paths are part of the cache
    /// key, their files are not.
    pub cuda_headers: bool,
    /// In-memory headers as `(include name, contents)`, found by `#include "name"`.
    pub headers: Vec<(String, String)>,
    /// Fast, less precise math (`--use_fast_math`).
    pub fast_math: bool,
    /// Relocatable device code (`-rdc=true`), for linking several objects.
    pub relocatable_device_code: bool,
    /// Any other NVRTC options, passed as given after the ones above.
    pub extra_options: Vec<String>,
    /// The program's file name, as it appears in the log (default `program.cu`).
    pub name: Option<String>,
    /// Use the kernel cache ([`KernelCache::global`](crate::KernelCache::global)); on by default.
    /// `CUDA_RS_CACHE=0` in the environment turns the global cache off for every program.
    pub cache: bool,
}

impl Default for ProgramOptions {
    fn default() -> Self {
        Self {
            arch: None,
            std: None,
            debug: false,
            lineinfo: false,
            defines: Vec::new(),
            include_paths: Vec::new(),
            cuda_headers: false,
            headers: Vec::new(),
            fast_math: false,
            relocatable_device_code: false,
            extra_options: Vec::new(),
            name: None,
            cache: true,
        }
    }
}

impl ProgramOptions {
    /// Options compiling for `arch`, everything else default.
    pub fn for_arch(arch: Arch) -> Self {
        Self {
            arch: Some(arch),
            ..Self::default()
        }
    }

    /// The NVRTC command line these options give for `arch` and `target`.
    pub fn to_nvrtc_options(&self, arch: Arch, target: CompileTarget) -> Vec<String> {
        let mut options = vec![format!("-arch={arch}")];
        if let Some(std) = self.std {
            options.push(std.flag().to_string());
        }
        if self.debug {
            options.push("-G".to_string());
        }
        if self.lineinfo {
            options.push("-lineinfo".to_string());
        }
        for (name, value) in &self.defines {
            options.push(match value {
                Some(value) => format!("-D{name}={value}"),
                None => format!("-D{name}"),
            });
        }
        for path in &self.include_paths {
            options.push(format!("-I{}", path.display()));
        }
        if self.fast_math {
            options.push("--use_fast_math".to_string());
        }
        if self.relocatable_device_code {
            options.push("-rdc=true".to_string());
        }
        if target == CompileTarget::LtoIr {
            options.push("-dlto".to_string());
        }
        options.extend(self.extra_options.iter().cloned());
        options
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arch_parses_and_prints() {
        assert_eq!("sm_90".parse::<Arch>().unwrap(), Arch::Sm(90));
        assert_eq!("compute_120".parse::<Arch>().unwrap(), Arch::Compute(120));
        assert_eq!(Arch::Sm(90).to_string(), "sm_90");
        assert_eq!(Arch::Sm(90), "sm_90");
        assert_ne!(Arch::Sm(90), "compute_90");
        assert_eq!(Arch::Compute(86).compute_capability(), (8, 6));
        assert_eq!(Arch::from_compute_capability(10, 0), Arch::Sm(100));
        for bad in ["sm90", "sm_", "sm_9x", "compute_+90", "sm_5", ""] {
            assert!(matches!(bad.parse::<Arch>(), Err(Error::InvalidValue(_))), "{bad}");
        }
    }

    #[test]
    fn options_map_to_flags_in_order() {
        let options = ProgramOptions {
            std: Some(Std::Cpp20),
            debug: true,
            lineinfo: true,
            defines: vec![("A".into(), None), ("B".into(), Some("2".into()))],
            include_paths: vec![PathBuf::from("/inc")],
            fast_math: true,
            relocatable_device_code: true,
            extra_options: vec!["--extra-device-vectorization".into()],
            ..ProgramOptions::default()
        };
        assert_eq!(
            options.to_nvrtc_options(Arch::Compute(90), CompileTarget::LtoIr),
            [
                "-arch=compute_90",
                "--std=c++20",
                "-G",
                "-lineinfo",
                "-DA",
                "-DB=2",
                "-I/inc",
                "--use_fast_math",
                "-rdc=true",
                "-dlto",
                "--extra-device-vectorization"
            ]
        );
        assert_eq!(
            ProgramOptions::default().to_nvrtc_options(Arch::Sm(80), CompileTarget::Cubin),
            ["-arch=sm_80"]
        );
    }
}
