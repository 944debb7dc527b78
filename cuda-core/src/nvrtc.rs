//! One NVRTC compilation: create the program, add name expressions, compile, fetch the
//! code, the log and the lowered names, destroy the program.

use std::ffi::{c_char, CStr, CString};
use std::ptr;

use cuda_sys::nvrtc::{nvrtcProgram, nvrtcResult};
use cuda_sys::Nvrtc;

use crate::error::{nvrtc_code_name, Error, Result};
use crate::options::CompileTarget;

/// What a successful compilation produced.
pub(crate) struct Compiled {
    pub(crate) code: Vec<u8>,
    pub(crate) lowered_names: Vec<(String, String)>,
    pub(crate) log: String,
}

/// The loaded NVRTC table.
pub(crate) fn library() -> Result<&'static Nvrtc> {
    cuda_sys::nvrtc().map_err(Error::NvrtcUnavailable)
}

/// NVRTC's version as `major * 1000 + minor * 10`, or -1 where it does not say.
pub(crate) fn version() -> Result<i32> {
    Ok(library()?.library_version().unwrap_or(-1))
}

/// The inputs of one compilation, already checked for NUL bytes.
pub(crate) struct Inputs<'a> {
    pub(crate) source: &'a str,
    pub(crate) name: &'a str,
    pub(crate) headers: &'a [(String, String)],
    pub(crate) options: &'a [String],
    pub(crate) name_expressions: &'a [String],
    pub(crate) target: CompileTarget,
}

/// Compiles `inputs` with NVRTC.
pub(crate) fn compile(inputs: &Inputs<'_>) -> Result<Compiled> {
    let nvrtc = library()?;
    let source = c_string("source", inputs.source)?;
    let name = c_string("program name", inputs.name)?;
    let header_contents = inputs
        .headers
        .iter()
        .map(|(_, contents)| c_string("header", contents))
        .collect::<Result<Vec<_>>>()?;
    let header_names = inputs
        .headers
        .iter()
        .map(|(name, _)| c_string("header name", name))
        .collect::<Result<Vec<_>>>()?;
    let options = inputs
        .options
        .iter()
        .map(|o| c_string("option", o))
        .collect::<Result<Vec<_>>>()?;
    let expressions = inputs
        .name_expressions
        .iter()
        .map(|e| c_string("name expression", e))
        .collect::<Result<Vec<_>>>()?;
    let header_count =
        i32::try_from(inputs.headers.len()).map_err(|_| Error::InvalidValue("too many headers for NVRTC".into()))?;
    let option_count =
        i32::try_from(options.len()).map_err(|_| Error::InvalidValue("too many options for NVRTC".into()))?;

    let content_pointers: Vec<*const c_char> = header_contents.iter().map(|c| c.as_ptr()).collect();
    let name_pointers: Vec<*const c_char> = header_names.iter().map(|c| c.as_ptr()).collect();
    let option_pointers: Vec<*const c_char> = options.iter().map(|c| c.as_ptr()).collect();

    let mut raw: nvrtcProgram = ptr::null_mut();
    // SAFETY: every pointer is a NUL-terminated string alive for the call; the two header
    // arrays have `header_count` entries each (NVRTC accepts null arrays only with a zero count,
    // and an empty Vec's pointer is dangling but never read when the count is zero).
    let code = unsafe {
        nvrtc.nvrtcCreateProgram()?(
            &mut raw,
            source.as_ptr(),
            name.as_ptr(),
            header_count,
            if header_count == 0 {
                ptr::null()
            } else {
                content_pointers.as_ptr()
            },
            if header_count == 0 {
                ptr::null()
            } else {
                name_pointers.as_ptr()
            },
        )
    };
    check(nvrtc, "nvrtcCreateProgram", code, String::new())?;
    let program = ProgramHandle { nvrtc, raw };

    for expression in &expressions {
        // SAFETY: `program.raw` is a live program; the expression is NUL-terminated.
        let code = unsafe { nvrtc.nvrtcAddNameExpression()?(program.raw, expression.as_ptr()) };
        check(nvrtc, "nvrtcAddNameExpression", code, String::new())?;
    }

    // SAFETY: live program; `option_pointers` holds `option_count` NUL-terminated strings.
    let code = unsafe {
        nvrtc.nvrtcCompileProgram()?(
            program.raw,
            option_count,
            if option_count == 0 {
                ptr::null()
            } else {
                option_pointers.as_ptr()
            },
        )
    };
    let log = program.log()?;
    check(nvrtc, "nvrtcCompileProgram", code, log.clone())?;

    let code = match inputs.target {
        CompileTarget::Ptx => program.output("nvrtcGetPTX", nvrtc.nvrtcGetPTXSize()?, nvrtc.nvrtcGetPTX()?)?,
        CompileTarget::Cubin => program.output("nvrtcGetCUBIN", nvrtc.nvrtcGetCUBINSize()?, nvrtc.nvrtcGetCUBIN()?)?,
        CompileTarget::LtoIr => program.output("nvrtcGetLTOIR", nvrtc.nvrtcGetLTOIRSize()?, nvrtc.nvrtcGetLTOIR()?)?,
    };
    let mut lowered_names = Vec::with_capacity(expressions.len());
    for (expression, c_expression) in inputs.name_expressions.iter().zip(&expressions) {
        let mut lowered: *const c_char = ptr::null();
        // SAFETY: live, compiled program; the expression was added before compiling.
        let code = unsafe { nvrtc.nvrtcGetLoweredName()?(program.raw, c_expression.as_ptr(), &mut lowered) };
        check(nvrtc, "nvrtcGetLoweredName", code, String::new())?;
        if lowered.is_null() {
            return Err(Error::InvalidValue(format!(
                "NVRTC gave no lowered name for `{expression}`"
            )));
        }
        // SAFETY: NVRTC returned a NUL-terminated string owned by the program, which is alive.
        let lowered = unsafe { CStr::from_ptr(lowered) }.to_string_lossy().into_owned();
        lowered_names.push((expression.clone(), lowered));
    }
    Ok(Compiled {
        code,
        lowered_names,
        log,
    })
}

type SizeFn = unsafe extern "C" fn(nvrtcProgram, *mut usize) -> nvrtcResult;
type GetFn = unsafe extern "C" fn(nvrtcProgram, *mut c_char) -> nvrtcResult;

/// Owns an `nvrtcProgram`; destroys it on drop.
struct ProgramHandle {
    nvrtc: &'static Nvrtc,
    raw: nvrtcProgram,
}

impl ProgramHandle {
    fn log(&self) -> Result<String> {
        let bytes = self.output(
            "nvrtcGetProgramLog",
            self.nvrtc.nvrtcGetProgramLogSize()?,
            self.nvrtc.nvrtcGetProgramLog()?,
        )?;
        Ok(String::from_utf8_lossy(bytes.strip_suffix(b"\0").unwrap_or(&bytes)).into_owned())
    }

    fn output(&self, call: &'static str, size: SizeFn, get: GetFn) -> Result<Vec<u8>> {
        let mut length = 0usize;
        // SAFETY: live program; `length` is a valid out-pointer.
        let code = unsafe { size(self.raw, &mut length) };
        check(self.nvrtc, call, code, String::new())?;
        let mut buffer = vec![0u8; length];
        if length == 0 {
            return Ok(buffer);
        }
        // SAFETY: `buffer` has the `length` bytes the size query asked for.
        let code = unsafe { get(self.raw, buffer.as_mut_ptr().cast()) };
        check(self.nvrtc, call, code, String::new())?;
        Ok(buffer)
    }
}

impl Drop for ProgramHandle {
    fn drop(&mut self) {
        if let Ok(destroy) = self.nvrtc.nvrtcDestroyProgram() {
            // SAFETY: `raw` came from nvrtcCreateProgram and is destroyed only here. A failure
            // cannot be acted on in a destructor and is ignored.
            unsafe { destroy(&mut self.raw) };
        }
    }
}

fn c_string(what: &str, text: &str) -> Result<CString> {
    CString::new(text).map_err(|_| Error::InvalidValue(format!("the {what} contains a NUL byte")))
}

/// [`check`] for a call that makes no log.
pub(crate) fn check_code(nvrtc: &Nvrtc, call: &'static str, code: nvrtcResult) -> Result<()> {
    check(nvrtc, call, code, String::new())
}

/// `Ok` for success, otherwise the typed error with NVRTC's description and `log`.
fn check(nvrtc: &Nvrtc, call: &'static str, code: nvrtcResult, log: String) -> Result<()> {
    if code == nvrtcResult::NVRTC_SUCCESS {
        return Ok(());
    }
    let description = match nvrtc.nvrtcGetErrorString() {
        Ok(describe) => {
            // SAFETY: nvrtcGetErrorString takes any code and returns a static string or null.
            let text = unsafe { describe(code) };
            if text.is_null() {
                String::new()
            } else {
                // SAFETY: a non-null result is a static NUL-terminated string.
                unsafe { CStr::from_ptr(text) }.to_string_lossy().into_owned()
            }
        }
        Err(_) => String::new(),
    };
    Err(Error::Nvrtc {
        call,
        code,
        name: nvrtc_code_name(code),
        description,
        log,
    })
}
