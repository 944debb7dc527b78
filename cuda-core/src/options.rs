//! How to compile: [`Std`], [`CompileTarget`] and [`ProgramOptions`] (what for is an [`Arch`]).

use std::path::PathBuf;

use crate::arch::Arch;

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
    /// compiling without an explicit arch is an [`Error::InvalidValue`](crate::Error::InvalidValue) rather than a guess.
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
    /// an [`Error::InvalidValue`](crate::Error::InvalidValue) when none is found. The folders' paths are part of the cache
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
