//! [`Linker`]: links several [`ObjectCode`]s into one CUBIN (or PTX) with nvJitLink, with
//! link-time optimisation of LTO-IR inputs.

use std::ffi::{c_char, c_void, CString};
use std::ptr;

use cuda_sys::nvjitlink::{nvJitLinkHandle, nvJitLinkInputType, nvJitLinkResult};
use cuda_sys::NvJitLink;

use crate::arch::Arch;
use crate::code_kind::CodeKind;
use crate::error::{nvjitlink_code_name, Error, Result};
use crate::object_code::ObjectCode;

/// What [`Linker::link`] produces.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LinkTarget {
    /// A CUBIN for [`LinkerOptions::arch`].
    Cubin,
    /// PTX (nvJitLink `-ptx`); only with link-time optimisation, i.e. LTO-IR inputs.
    Ptx,
}

/// How to link.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct LinkerOptions {
    /// The architecture to link for (`-arch=sm_XY`); must be real (`Arch::Sm`).
    pub arch: Arch,
    /// Device debug information (`-g`).
    pub debug: bool,
    /// Line information (`-lineinfo`).
    pub lineinfo: bool,
    /// Optimisation level `-O0`..`-O3`; `None` leaves nvJitLink's default.
    pub optimization_level: Option<u32>,
    /// Other nvJitLink options, passed as given.
    pub extra_options: Vec<String>,
}

impl LinkerOptions {
    /// Options linking for `arch`, everything else default.
    pub fn for_arch(arch: Arch) -> Self {
        Self {
            arch,
            debug: false,
            lineinfo: false,
            optimization_level: None,
            extra_options: Vec::new(),
        }
    }
}

/// Links objects: LTO-IR, PTX, CUBIN and fatbins, into a CUBIN (or, for LTO, PTX).
///
/// ```no_run
/// use cuda_core::{Arch, CompileTarget, LinkTarget, Linker, LinkerOptions, Program, ProgramOptions};
///
/// # fn main() -> cuda_core::Result<()> {
/// let options = ProgramOptions { relocatable_device_code: true, ..ProgramOptions::for_arch(Arch::Sm(90)) };
/// let helper = Program::new("__device__ float twice(float x) { return 2 * x; }", options.clone());
/// let kernel = Program::new(
///     "extern __device__ float twice(float); extern \"C\" __global__ void k(float *x) { *x = twice(*x); }",
///     options,
/// );
/// let cubin = Linker::new(LinkerOptions::for_arch(Arch::Sm(90)))
///     .add(&helper.compile(CompileTarget::LtoIr)?)
///     .add(&kernel.compile(CompileTarget::LtoIr)?)
///     .link(LinkTarget::Cubin)?;
/// println!("{} bytes; linker said: {}", cubin.code().len(), cubin.log());
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Debug)]
pub struct Linker {
    options: LinkerOptions,
    inputs: Vec<ObjectCode>,
}

impl Linker {
    /// A linker with no inputs yet.
    pub fn new(options: LinkerOptions) -> Self {
        Self {
            options,
            inputs: Vec::new(),
        }
    }

    /// Adds an input.
    pub fn add(&mut self, code: &ObjectCode) -> &mut Self {
        self.inputs.push(code.clone());
        self
    }

    /// The inputs added so far.
    pub fn inputs(&self) -> &[ObjectCode] {
        &self.inputs
    }

    /// Links the inputs. The result's [`log`](ObjectCode::log) is the linker's info log, and
    /// its lowered names are those of all inputs. Uses nvJitLink; when nvJitLink cannot be
    /// loaded, inputs without LTO-IR are linked by the driver's `cuLink*` in the primary
    /// context of [`Device::current`](crate::Device::current); LTO-IR inputs (or no driver either)
    /// give [`Error::NvJitLinkUnavailable`].
    pub fn link(&self, target: LinkTarget) -> Result<ObjectCode> {
        if self.inputs.is_empty() {
            return Err(Error::InvalidValue("the linker has no inputs".into()));
        }
        let arch = self.options.arch.validate()?;
        if !arch.is_real() {
            return Err(Error::InvalidValue(format!(
                "linking needs a real architecture (sm_XY), not {arch}"
            )));
        }
        let lto = self.inputs.iter().any(|input| input.kind() == CodeKind::LtoIr);
        if target == LinkTarget::Ptx && !lto {
            return Err(Error::InvalidValue(
                "PTX output needs link-time optimisation, i.e. LTO-IR inputs".into(),
            ));
        }
        let nvjitlink = match cuda_sys::nvjitlink() {
            Ok(nvjitlink) => nvjitlink,
            Err(source) if lto => {
                return Err(Error::NvJitLinkUnavailable {
                    source,
                    lto_inputs: true,
                })
            }
            Err(source) => return crate::driver_link::link(&self.inputs, arch, source),
        };
        let mut options = vec![format!("-arch={arch}")];
        if lto {
            options.push("-lto".into());
        }
        if target == LinkTarget::Ptx {
            options.push("-ptx".into());
        }
        if self.options.debug {
            options.push("-g".into());
        }
        if self.options.lineinfo {
            options.push("-lineinfo".into());
        }
        if let Some(level) = self.options.optimization_level {
            options.push(format!("-O{level}"));
        }
        options.extend(self.options.extra_options.iter().cloned());

        let handle = LinkHandle::create(nvjitlink, &options)?;
        for (index, input) in self.inputs.iter().enumerate() {
            handle.add(index, input)?;
        }
        // SAFETY: `handle.raw` is a live link state with all inputs added.
        let code = unsafe { nvjitlink.nvJitLinkComplete()?(handle.raw) };
        handle.check("nvJitLinkComplete", code)?;
        let image = match target {
            LinkTarget::Cubin => handle.output(
                "nvJitLinkGetLinkedCubin",
                nvjitlink.nvJitLinkGetLinkedCubinSize()?,
                nvjitlink.nvJitLinkGetLinkedCubin()?,
            )?,
            LinkTarget::Ptx => {
                let size = nvjitlink.nvJitLinkGetLinkedPtxSize()?;
                let get = nvjitlink.nvJitLinkGetLinkedPtx()?;
                // SAFETY: the two signatures differ only in `*mut c_char` vs `*mut c_void` for
                // the output buffer, which have the same ABI.
                let get: OutputFn = unsafe { std::mem::transmute::<PtxFn, OutputFn>(get) };
                handle.output("nvJitLinkGetLinkedPtx", size, get)?
            }
        };
        let info_log = handle.info_log();
        let lowered_names = self
            .inputs
            .iter()
            .flat_map(|input| input.lowered_names().map(|(e, l)| (e.to_string(), l.to_string())))
            .collect();
        let kind = match target {
            LinkTarget::Cubin => CodeKind::Cubin,
            LinkTarget::Ptx => CodeKind::Ptx,
        };
        Ok(ObjectCode::from_parts(kind, Some(arch), image, lowered_names, info_log))
    }
}

type SizeFn = unsafe extern "C" fn(nvJitLinkHandle, *mut usize) -> nvJitLinkResult;
type OutputFn = unsafe extern "C" fn(nvJitLinkHandle, *mut c_void) -> nvJitLinkResult;
type PtxFn = unsafe extern "C" fn(nvJitLinkHandle, *mut c_char) -> nvJitLinkResult;
type LogFn = unsafe extern "C" fn(nvJitLinkHandle, *mut c_char) -> nvJitLinkResult;

/// Owns an `nvJitLinkHandle`; destroys it on drop.
struct LinkHandle {
    nvjitlink: &'static NvJitLink,
    raw: nvJitLinkHandle,
}

impl LinkHandle {
    fn create(nvjitlink: &'static NvJitLink, options: &[String]) -> Result<Self> {
        let options = options
            .iter()
            .map(|o| CString::new(o.as_str()))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|_| Error::InvalidValue("a linker option contains a NUL byte".into()))?;
        let pointers: Vec<*const c_char> = options.iter().map(|o| o.as_ptr()).collect();
        let count = u32::try_from(pointers.len()).map_err(|_| Error::InvalidValue("too many linker options".into()))?;
        let mut raw: nvJitLinkHandle = ptr::null_mut();
        // SAFETY: `pointers` holds `count` NUL-terminated strings alive for the call; `raw` is a
        // valid out-pointer.
        let code = unsafe { nvjitlink.nvJitLinkCreate()?(&mut raw, count, pointers.as_ptr()) };
        if code != nvJitLinkResult::NVJITLINK_SUCCESS {
            // No handle exists, so there is no log to fetch.
            return Err(Error::NvJitLink {
                call: "nvJitLinkCreate",
                code,
                name: nvjitlink_code_name(code),
                error_log: format!("options: {}", options_text(&options)),
                info_log: String::new(),
            });
        }
        Ok(Self { nvjitlink, raw })
    }

    fn add(&self, index: usize, input: &ObjectCode) -> Result<()> {
        let input_type = match input.kind() {
            CodeKind::Ptx => nvJitLinkInputType::NVJITLINK_INPUT_PTX,
            CodeKind::Cubin => nvJitLinkInputType::NVJITLINK_INPUT_CUBIN,
            CodeKind::Fatbin => nvJitLinkInputType::NVJITLINK_INPUT_FATBIN,
            CodeKind::LtoIr => nvJitLinkInputType::NVJITLINK_INPUT_LTOIR,
        };
        let name =
            CString::new(format!("input{index}.{}", input.kind().extension())).expect("no NUL in a formatted name");
        let bytes = input.code();
        // SAFETY: live handle; `bytes` is alive and `bytes.len()` long (nvJitLink copies it);
        // `name` is NUL-terminated.
        let code = unsafe {
            self.nvjitlink.nvJitLinkAddData()?(self.raw, input_type, bytes.as_ptr().cast(), bytes.len(), name.as_ptr())
        };
        self.check("nvJitLinkAddData", code)
    }

    fn output(&self, call: &'static str, size: SizeFn, get: OutputFn) -> Result<Vec<u8>> {
        let mut length = 0usize;
        // SAFETY: live, completed handle; `length` is a valid out-pointer.
        let code = unsafe { size(self.raw, &mut length) };
        self.check(call, code)?;
        let mut buffer = vec![0u8; length];
        if length > 0 {
            // SAFETY: `buffer` has the `length` bytes the size query asked for.
            let code = unsafe { get(self.raw, buffer.as_mut_ptr().cast()) };
            self.check(call, code)?;
        }
        Ok(buffer)
    }

    fn log(&self, size: Result<SizeFn, cuda_sys::SymbolError>, get: Result<LogFn, cuda_sys::SymbolError>) -> String {
        let (Ok(size), Ok(get)) = (size, get) else {
            return String::new();
        };
        let mut length = 0usize;
        // SAFETY: live handle; `length` is a valid out-pointer.
        if unsafe { size(self.raw, &mut length) } != nvJitLinkResult::NVJITLINK_SUCCESS || length == 0 {
            return String::new();
        }
        let mut buffer = vec![0u8; length];
        // SAFETY: `buffer` has the `length` bytes the size query asked for.
        if unsafe { get(self.raw, buffer.as_mut_ptr().cast()) } != nvJitLinkResult::NVJITLINK_SUCCESS {
            return String::new();
        }
        String::from_utf8_lossy(buffer.strip_suffix(b"\0").unwrap_or(&buffer)).into_owned()
    }

    fn error_log(&self) -> String {
        self.log(
            self.nvjitlink.nvJitLinkGetErrorLogSize(),
            self.nvjitlink.nvJitLinkGetErrorLog(),
        )
    }

    fn info_log(&self) -> String {
        self.log(
            self.nvjitlink.nvJitLinkGetInfoLogSize(),
            self.nvjitlink.nvJitLinkGetInfoLog(),
        )
    }

    fn check(&self, call: &'static str, code: nvJitLinkResult) -> Result<()> {
        if code == nvJitLinkResult::NVJITLINK_SUCCESS {
            return Ok(());
        }
        Err(Error::NvJitLink {
            call,
            code,
            name: nvjitlink_code_name(code),
            error_log: self.error_log(),
            info_log: self.info_log(),
        })
    }
}

impl Drop for LinkHandle {
    fn drop(&mut self) {
        if let Ok(destroy) = self.nvjitlink.nvJitLinkDestroy() {
            // SAFETY: `raw` came from nvJitLinkCreate and is destroyed only here; a failure
            // cannot be acted on in a destructor and is ignored.
            unsafe { destroy(&mut self.raw) };
        }
    }
}

fn options_text(options: &[CString]) -> String {
    options
        .iter()
        .map(|o| o.to_string_lossy())
        .collect::<Vec<_>>()
        .join(" ")
}
