//! [`JitLinker`]: the driver's own linker (`cuLink*`), which links PTX, CUBIN and fatbin images
//! into one CUBIN for a real architecture (nvJitLink, which also links LTO-IR, is the library
//! a compile layer prefers; this is the fallback that every driver has).

use std::ffi::{c_uint, c_void, CString};
use std::ptr;

use cuda_sys::driver::{CUjitInputType, CUjit_option, CUlinkState, CUresult};

use crate::error::{DriverError, Error, JitLinkError, Result};
use crate::Context;

/// Bytes of each of the linker's two logs.
const LOG_BYTES: usize = 64 * 1024;

/// What a linker input is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum JitInputKind {
    /// PTX text (passed with its terminating NUL).
    Ptx,
    /// A CUBIN for one real architecture.
    Cubin,
    /// A fatbin.
    Fatbin,
}

/// A CUBIN the linker produced, and the linker's info log.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JitLinked {
    /// The linked CUBIN; empty when the driver returned none.
    pub cubin: Vec<u8>,
    /// The linker's info log.
    pub info_log: String,
}

/// One link in progress (a `CUlinkState`), destroyed on drop. A failed call is
/// [`Error::JitLink`], with the linker's logs.
///
/// ```no_run
/// use cuda_driver::{Context, Device, JitInputKind, JitLinker};
///
/// # fn main() -> cuda_driver::Result<()> {
/// # let ptx: &[u8] = b"\0";
/// let context = Context::primary(&Device::get(0)?)?;
/// let mut linker = JitLinker::new(&context, 90)?; // sm_90
/// linker.add(JitInputKind::Ptx, ptx, "kernels.ptx")?;
/// let linked = linker.complete()?;
/// println!("{} bytes of CUBIN", linked.cubin.len());
/// # Ok(())
/// # }
/// ```
pub struct JitLinker {
    driver: &'static cuda_sys::Driver,
    raw: CUlinkState,
    // The driver writes both logs while the state lives: heap buffers, so that they stay put
    // when the linker moves, dropped only after the state is destroyed (see `Drop`).
    error_log: Vec<u8>,
    info_log: Vec<u8>,
}

impl JitLinker {
    /// Starts a link for the real architecture `arch_number` (90 for `sm_90`) in `context`,
    /// which is made current (`cuLinkCreate`).
    pub fn new(context: &Context, arch_number: u32) -> Result<JitLinker> {
        let driver = context.bind()?;
        let mut error_log = vec![0u8; LOG_BYTES];
        let mut info_log = vec![0u8; LOG_BYTES];
        let mut options = [
            CUjit_option::CU_JIT_ERROR_LOG_BUFFER,
            CUjit_option::CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
            CUjit_option::CU_JIT_INFO_LOG_BUFFER,
            CUjit_option::CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES,
            CUjit_option::CU_JIT_TARGET,
        ];
        // The driver reads integer option values from the pointer-sized slots themselves.
        let mut values: [*mut c_void; 5] = [
            error_log.as_mut_ptr().cast(),
            LOG_BYTES as *mut c_void,
            info_log.as_mut_ptr().cast(),
            LOG_BYTES as *mut c_void,
            arch_number as usize as *mut c_void,
        ];
        let mut raw: CUlinkState = ptr::null_mut();
        // SAFETY: `options` and `values` have 5 entries each; the log buffers are LOG_BYTES long
        // and move into the linker, which destroys the state before dropping them.
        let code = unsafe {
            driver.cuLinkCreate_v2()?(
                options.len() as c_uint,
                options.as_mut_ptr(),
                values.as_mut_ptr(),
                &mut raw,
            )
        };
        if code != CUresult::CUDA_SUCCESS {
            // No state was made: nothing to destroy.
            return Err(link_error("cuLinkCreate", code, &error_log, &info_log));
        }
        Ok(JitLinker {
            driver,
            raw,
            error_log,
            info_log,
        })
    }

    /// Adds one input image (`cuLinkAddData`); `name` names it in the logs.
    pub fn add(&mut self, kind: JitInputKind, image: &[u8], name: &str) -> Result<()> {
        let input_type = match kind {
            JitInputKind::Ptx => CUjitInputType::CU_JIT_INPUT_PTX,
            JitInputKind::Cubin => CUjitInputType::CU_JIT_INPUT_CUBIN,
            JitInputKind::Fatbin => CUjitInputType::CU_JIT_INPUT_FATBINARY,
        };
        let name = CString::new(name).map_err(|_| Error::InvalidValue(format!("input name {name:?} holds a NUL")))?;
        // SAFETY: live link state; `image` is alive for the call and `image.len()` long (the
        // driver copies it); no options.
        let code = unsafe {
            self.driver.cuLinkAddData_v2()?(
                self.raw,
                input_type,
                image.as_ptr().cast_mut().cast(),
                image.len(),
                name.as_ptr(),
                0,
                ptr::null_mut(),
                ptr::null_mut(),
            )
        };
        self.check("cuLinkAddData", code)
    }

    /// Links what was added (`cuLinkComplete`) and returns a copy of the CUBIN.
    pub fn complete(self) -> Result<JitLinked> {
        let mut cubin: *mut c_void = ptr::null_mut();
        let mut size = 0usize;
        // SAFETY: live link state; both out-pointers are valid.
        let code = unsafe { self.driver.cuLinkComplete()?(self.raw, &mut cubin, &mut size) };
        self.check("cuLinkComplete", code)?;
        let cubin = if cubin.is_null() {
            Vec::new()
        } else {
            // SAFETY: the driver returned `size` bytes at `cubin`, owned by the link state,
            // which lives until `self` drops, after the copy.
            unsafe { std::slice::from_raw_parts(cubin.cast::<u8>(), size) }.to_vec()
        };
        Ok(JitLinked {
            cubin,
            info_log: text(&self.info_log),
        })
    }

    fn check(&self, call: &'static str, code: CUresult) -> Result<()> {
        match code {
            CUresult::CUDA_SUCCESS => Ok(()),
            code => Err(link_error(call, code, &self.error_log, &self.info_log)),
        }
    }
}

impl Drop for JitLinker {
    fn drop(&mut self) {
        if let Ok(destroy) = self.driver.cuLinkDestroy() {
            // SAFETY: `raw` came from cuLinkCreate and is destroyed only here; a failure cannot
            // be acted on in a destructor and is ignored.
            unsafe { destroy(self.raw) };
        }
    }
}

impl std::fmt::Debug for JitLinker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JitLinker").finish_non_exhaustive()
    }
}

/// [`Error::JitLink`] for a failed `call`, with both logs.
fn link_error(call: &'static str, code: CUresult, error_log: &[u8], info_log: &[u8]) -> Error {
    Error::JitLink(Box::new(JitLinkError {
        call,
        error: DriverError::new(code),
        error_log: text(error_log),
        info_log: text(info_log),
    }))
}

/// The NUL-terminated text at the start of a log buffer.
fn text(log: &[u8]) -> String {
    let end = log.iter().position(|&b| b == 0).unwrap_or(log.len());
    String::from_utf8_lossy(&log[..end]).into_owned()
}
