//! [`ObjectCode`]: compiled or loaded device code (PTX, CUBIN, fatbin or LTO-IR).

use std::fmt;
use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};

use cuda_driver::Module;

use crate::arch::Arch;
use crate::code_kind::CodeKind;
use crate::device::Device;
use crate::error::{Error, Result};
use crate::kernel::Kernel;

/// Device code: the output of [`Program::compile`](crate::Program::compile) or
/// [`Linker::link`](crate::Linker::link), or code read from bytes or a file.
///
/// Cloning is cheap (the code is shared). It knows its [`kind`](Self::kind), the
/// [`arch`](Self::arch) it was built for where that is known, the lowered (mangled) names of the
/// name expressions it was compiled with, and the compiler's log.
#[derive(Clone)]
pub struct ObjectCode {
    pub(crate) inner: Arc<ObjectInner>,
}

pub(crate) struct ObjectInner {
    pub(crate) kind: CodeKind,
    pub(crate) arch: Option<Arch>,
    /// The code; PTX keeps a terminating NUL here (not shown by `code()`) for the driver.
    pub(crate) image: Vec<u8>,
    pub(crate) lowered_names: Vec<(String, String)>,
    pub(crate) log: String,
    /// The module loaded from this code, one per context it was loaded into.
    modules: Mutex<Vec<Module>>,
}

const ELF_MAGIC: &[u8] = b"\x7fELF";
const FATBIN_MAGIC: &[u8] = &0xBA55_ED50u32.to_le_bytes();

impl ObjectCode {
    pub(crate) fn from_parts(
        kind: CodeKind,
        arch: Option<Arch>,
        mut code: Vec<u8>,
        lowered_names: Vec<(String, String)>,
        log: String,
    ) -> Self {
        if kind == CodeKind::Ptx {
            while code.last() == Some(&0) {
                code.pop();
            }
            code.push(0);
        }
        Self {
            inner: Arc::new(ObjectInner {
                kind,
                arch,
                image: code,
                lowered_names,
                log,
                modules: Mutex::new(Vec::new()),
            }),
        }
    }

    /// PTX text. The target architecture is read from its `.target` directive.
    pub fn from_ptx(ptx: impl Into<Vec<u8>>) -> Result<Self> {
        let ptx = ptx.into();
        let text = ptx.strip_suffix(b"\0").unwrap_or(&ptx);
        if text.is_empty() || text.contains(&0) {
            return Err(Error::InvalidValue("PTX is empty or contains a NUL byte".into()));
        }
        let text = std::str::from_utf8(text).map_err(|e| Error::InvalidValue(format!("PTX is not UTF-8: {e}")))?;
        let arch = ptx_target(text).map(Arch::Compute);
        Ok(Self::from_parts(CodeKind::Ptx, arch, ptx, Vec::new(), String::new()))
    }

    /// A CUBIN (ELF) image. Its architecture is read from the ELF header.
    pub fn from_cubin(cubin: impl Into<Vec<u8>>) -> Result<Self> {
        let cubin = cubin.into();
        if !cubin.starts_with(ELF_MAGIC) {
            return Err(Error::InvalidValue("CUBIN does not start with the ELF magic".into()));
        }
        let arch = cubin_arch(&cubin).map(Arch::Sm);
        Ok(Self::from_parts(
            CodeKind::Cubin,
            arch,
            cubin,
            Vec::new(),
            String::new(),
        ))
    }

    /// A fat binary (as written by `nvcc -fatbin` or `fatbinary`).
    pub fn from_fatbin(fatbin: impl Into<Vec<u8>>) -> Result<Self> {
        let fatbin = fatbin.into();
        if !fatbin.starts_with(FATBIN_MAGIC) {
            return Err(Error::InvalidValue(
                "fatbin does not start with the fatbin magic 0xBA55ED50".into(),
            ));
        }
        Ok(Self::from_parts(
            CodeKind::Fatbin,
            None,
            fatbin,
            Vec::new(),
            String::new(),
        ))
    }

    /// LTO-IR (from NVRTC `-dlto` or `nvcc -dlto`), for [`Linker`](crate::Linker) input.
    pub fn from_ltoir(ltoir: impl Into<Vec<u8>>) -> Result<Self> {
        let ltoir = ltoir.into();
        if ltoir.is_empty() {
            return Err(Error::InvalidValue("LTO-IR is empty".into()));
        }
        Ok(Self::from_parts(
            CodeKind::LtoIr,
            None,
            ltoir,
            Vec::new(),
            String::new(),
        ))
    }

    /// Code of the given kind from bytes.
    pub fn from_bytes(kind: CodeKind, bytes: impl Into<Vec<u8>>) -> Result<Self> {
        match kind {
            CodeKind::Ptx => Self::from_ptx(bytes),
            CodeKind::Cubin => Self::from_cubin(bytes),
            CodeKind::Fatbin => Self::from_fatbin(bytes),
            CodeKind::LtoIr => Self::from_ltoir(bytes),
        }
    }

    /// Reads a file, its kind taken from the extension (`.ptx`, `.cubin`, `.fatbin`, `.ltoir`).
    pub fn from_file(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref();
        let extension = path.extension().and_then(|e| e.to_str()).unwrap_or("");
        let kind = [CodeKind::Ptx, CodeKind::Cubin, CodeKind::Fatbin, CodeKind::LtoIr]
            .into_iter()
            .find(|k| k.extension() == extension)
            .ok_or_else(|| {
                Error::InvalidValue(format!(
                    "cannot tell the code kind of {} (use .ptx, .cubin, .fatbin or .ltoir, or from_file_as)",
                    path.display()
                ))
            })?;
        Self::from_file_as(path, kind)
    }

    /// Reads a file holding code of the given kind.
    pub fn from_file_as(path: impl AsRef<Path>, kind: CodeKind) -> Result<Self> {
        let path = path.as_ref();
        let bytes = std::fs::read(path).map_err(|source| Error::Io {
            path: path.to_path_buf(),
            source,
        })?;
        Self::from_bytes(kind, bytes)
    }

    /// The kind of code.
    pub fn kind(&self) -> CodeKind {
        self.inner.kind
    }

    /// The architecture the code is for, where known: what it was compiled for, a PTX
    /// `.target`, a CUBIN's ELF header. `None` for fatbins and loaded LTO-IR.
    pub fn arch(&self) -> Option<Arch> {
        self.inner.arch
    }

    /// The code's bytes (PTX without a terminating NUL).
    pub fn code(&self) -> &[u8] {
        match self.inner.kind {
            CodeKind::Ptx => &self.inner.image[..self.inner.image.len() - 1],
            _ => &self.inner.image,
        }
    }

    /// PTX text, for PTX code.
    pub fn ptx(&self) -> Option<&str> {
        match self.inner.kind {
            CodeKind::Ptx => std::str::from_utf8(self.code()).ok(),
            _ => None,
        }
    }

    /// The lowered (mangled) name of a name expression the program was compiled with, e.g.
    /// `"add<float>"` -> `"_Z3addIfEvPKT_S2_PS0_"`.
    pub fn lowered_name(&self, name_expression: &str) -> Result<&str> {
        self.inner
            .lowered_names
            .iter()
            .find(|(expression, _)| expression == name_expression)
            .map(|(_, lowered)| lowered.as_str())
            .ok_or_else(|| {
                let known: Vec<&str> = self.inner.lowered_names.iter().map(|(e, _)| e.as_str()).collect();
                Error::InvalidValue(format!(
                    "`{name_expression}` was not a name expression of this program (known: {known:?})"
                ))
            })
    }

    /// Every `(name expression, lowered name)` pair.
    pub fn lowered_names(&self) -> impl Iterator<Item = (&str, &str)> {
        self.inner.lowered_names.iter().map(|(e, l)| (e.as_str(), l.as_str()))
    }

    /// The compiler's (or linker's) log from building this code: warnings, or empty.
    pub fn log(&self) -> &str {
        &self.inner.log
    }

    /// The kernel `name` on [`Device::current`]; see [`get_kernel_on`](Self::get_kernel_on).
    pub fn get_kernel(&self, name: &str) -> Result<Kernel> {
        self.get_kernel_on(&Device::current()?, name)
    }

    /// The kernel `name` (an `extern "C"` name, a mangled name, or one of the program's name
    /// expressions such as `"add<float>"`) on `device`. The code is loaded into the device's
    /// context on first use and kept loaded while this `ObjectCode` (or a clone) lives.
    ///
    /// Code the device cannot run is [`Error::WrongArch`]: a CUBIN for another SM major or a
    /// newer minor, PTX for a newer architecture. LTO-IR must be [linked](crate::Linker) first.
    pub fn get_kernel_on(&self, device: &Device, name: &str) -> Result<Kernel> {
        let module = self.module_for(device)?;
        let symbol = self
            .inner
            .lowered_names
            .iter()
            .find(|(e, _)| e == name)
            .map_or(name, |(_, l)| l.as_str());
        Ok(Kernel::new(module.function(symbol)?, name))
    }

    fn module_for(&self, device: &Device) -> Result<Module> {
        // The list only ever holds loaded modules, so it is consistent even after a panic elsewhere.
        let mut modules = self.inner.modules.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(module) = modules.iter().find(|m| m.context() == device.context()) {
            return Ok(module.clone());
        }
        check_runs_on(self.inner.kind, self.inner.arch, device.arch()?, device.ordinal())?;
        let module = Module::from_image(device.context(), &self.inner.image)?;
        modules.push(module.clone());
        Ok(module)
    }

    /// Writes the code to a file.
    pub fn save(&self, path: impl AsRef<Path>) -> Result<()> {
        let path = path.as_ref();
        std::fs::write(path, self.code()).map_err(|source| Error::Io {
            path: path.to_path_buf(),
            source,
        })
    }
}

impl fmt::Debug for ObjectCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ObjectCode")
            .field("kind", &self.inner.kind)
            .field("arch", &self.inner.arch)
            .field("bytes", &self.code().len())
            .field("lowered_names", &self.inner.lowered_names)
            .finish()
    }
}

/// Whether code of `kind` built for `code_arch` can run on a device of `device_arch`.
fn check_runs_on(kind: CodeKind, code_arch: Option<Arch>, device_arch: Arch, device: u32) -> Result<()> {
    let device_cc = device_arch.compute_capability();
    let runs = match (kind, code_arch) {
        (CodeKind::LtoIr, _) => {
            return Err(Error::InvalidValue(
                "LTO-IR cannot be loaded; link it into a CUBIN with Linker first".into(),
            ))
        }
        // SASS runs on the same major version with an equal or newer minor.
        (CodeKind::Cubin, Some(arch)) => {
            let (major, minor) = arch.compute_capability();
            major == device_cc.0 && minor <= device_cc.1
        }
        // PTX is JIT-compiled for the device, which must be at least as new as its target.
        (CodeKind::Ptx, Some(arch)) => arch.compute_capability() <= device_cc,
        _ => true,
    };
    match (runs, code_arch) {
        (false, Some(code_arch)) => Err(Error::WrongArch {
            kind,
            code_arch,
            device_arch,
            device,
        }),
        _ => Ok(()),
    }
}

/// The number of the first `.target sm_XY` directive.
fn ptx_target(ptx: &str) -> Option<u32> {
    let line = ptx.lines().map(str::trim_start).find(|l| l.starts_with(".target"))?;
    let rest = line.strip_prefix(".target")?.trim_start().strip_prefix("sm_")?;
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

/// The SM number in a CUBIN's ELF header: `e_flags` holds it in bits 0..8 for ELF ABI version 7
/// and earlier, in bits 8..16 from ABI version 8 (CUDA 12.8) on.
fn cubin_arch(elf: &[u8]) -> Option<u32> {
    const EI_CLASS: usize = 4;
    const EI_ABIVERSION: usize = 8;
    const E_FLAGS_64: usize = 0x30;
    if elf.get(EI_CLASS) != Some(&2) {
        return None;
    }
    let flags = u32::from_le_bytes(elf.get(E_FLAGS_64..E_FLAGS_64 + 4)?.try_into().ok()?);
    let sm = if *elf.get(EI_ABIVERSION)? >= 8 {
        (flags >> 8) & 0xff
    } else {
        flags & 0xff
    };
    (sm >= 10).then_some(sm)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ptx_arch_comes_from_target() {
        let code = ObjectCode::from_ptx(".version 9.0\n.target sm_90\n.address_size 64\n").unwrap();
        assert_eq!(code.arch(), Some(Arch::Compute(90)));
        assert_eq!(code.kind(), CodeKind::Ptx);
        assert!(code.ptx().unwrap().ends_with("64\n"));
    }

    #[test]
    fn bad_bytes_are_refused() {
        assert!(matches!(ObjectCode::from_ptx(""), Err(Error::InvalidValue(_))));
        assert!(matches!(
            ObjectCode::from_ptx(&b"a\0b"[..]),
            Err(Error::InvalidValue(_))
        ));
        assert!(matches!(
            ObjectCode::from_cubin(&b"not elf"[..]),
            Err(Error::InvalidValue(_))
        ));
        assert!(matches!(
            ObjectCode::from_fatbin(&b"\x7fELF"[..]),
            Err(Error::InvalidValue(_))
        ));
        assert!(matches!(
            ObjectCode::from_ltoir(Vec::new()),
            Err(Error::InvalidValue(_))
        ));
        assert!(matches!(
            ObjectCode::from_file("kernel.txt"),
            Err(Error::InvalidValue(_))
        ));
        assert!(matches!(
            ObjectCode::from_file("/nonexistent/kernel.ptx"),
            Err(Error::Io { .. })
        ));
    }

    #[test]
    fn code_runs_only_where_the_architecture_allows() {
        let runs = |kind, arch, device| check_runs_on(kind, Some(arch), device, 0).is_ok();
        assert!(runs(CodeKind::Cubin, Arch::Sm(90), Arch::Sm(90)));
        assert!(
            runs(CodeKind::Cubin, Arch::Sm(80), Arch::Sm(86)),
            "same major, newer minor"
        );
        assert!(
            !runs(CodeKind::Cubin, Arch::Sm(86), Arch::Sm(80)),
            "newer minor than the device"
        );
        assert!(!runs(CodeKind::Cubin, Arch::Sm(80), Arch::Sm(90)), "another major");
        assert!(!runs(CodeKind::Cubin, Arch::Sm(100), Arch::Sm(90)), "newer major");
        assert!(runs(CodeKind::Ptx, Arch::Compute(80), Arch::Sm(90)), "PTX JITs forward");
        assert!(runs(CodeKind::Ptx, Arch::Sm(90), Arch::Sm(90)));
        assert!(
            !runs(CodeKind::Ptx, Arch::Compute(100), Arch::Sm(90)),
            "PTX for a newer device"
        );
        assert!(
            runs(CodeKind::Fatbin, Arch::Sm(100), Arch::Sm(90)),
            "fatbins are left to the driver"
        );
        let error = check_runs_on(CodeKind::Cubin, Some(Arch::Sm(100)), Arch::Sm(90), 3).unwrap_err();
        assert!(matches!(error, Error::WrongArch { device: 3, .. }), "{error}");
        assert_eq!(
            error.to_string(),
            "CUBIN built for sm_100 cannot run on device 3, which is sm_90"
        );
        assert!(matches!(
            check_runs_on(CodeKind::LtoIr, None, Arch::Sm(90), 0),
            Err(Error::InvalidValue(_))
        ));
    }

    #[test]
    fn unknown_name_expression_is_an_error_listing_known_ones() {
        let code = ObjectCode::from_parts(
            CodeKind::Ptx,
            None,
            b".target sm_90".to_vec(),
            vec![("f<int>".into(), "_Z1fIiEvv".into())],
            String::new(),
        );
        assert_eq!(code.lowered_name("f<int>").unwrap(), "_Z1fIiEvv");
        let error = code.lowered_name("f<float>").unwrap_err().to_string();
        assert!(error.contains("f<int>"), "{error}");
    }
}
