//! Modules: device code (PTX, CUBIN or fatbin) loaded into a context.

use std::ffi::{c_void, CString};
use std::path::Path;
use std::ptr;
use std::sync::Arc;

use cuda_sys::driver::{CUjit_option, CUmodule, CUresult};

use crate::error::{check, check_resolved, DriverError, Error, Result};
use crate::{Context, Function, Library};

/// Device code loaded into a context (`CUmodule`), unloaded when the last
/// clone and the last [`Function`] taken from it are dropped.
#[derive(Clone)]
pub struct Module {
    pub(crate) inner: Arc<ModuleInner>,
}

pub(crate) struct ModuleInner {
    raw: CUmodule,
    context: Context,
    /// For a library's module in a context: the library, which owns the
    /// module (it is not unloaded on its own).
    library: Option<Library>,
}

// SAFETY: a CUmodule handle may be used from any thread; every use makes
// the module's context current first.
unsafe impl Send for ModuleInner {}
// SAFETY: as above; shared access only reads the handle.
unsafe impl Sync for ModuleInner {}

/// Size of the buffer the JIT compiler writes its error log into.
const JIT_LOG_BYTES: usize = 16 * 1024;

impl Module {
    /// Loads PTX text (JIT-compiled by the driver for the context's device).
    /// A compile failure is [`Error::ModuleLoad`] with the JIT log.
    pub fn from_ptx(context: &Context, ptx: &str) -> Result<Module> {
        let text = CString::new(ptx).map_err(|_| Error::InvalidValue("PTX contains a NUL byte".into()))?;
        Self::load(context, text.as_ptr().cast())
    }

    /// Loads a CUBIN, a fatbin, or PTX text given as bytes (a missing
    /// trailing NUL is added for PTX).
    pub fn from_image(context: &Context, image: &[u8]) -> Result<Module> {
        let image = prepared_image(image)?;
        Self::load(context, image.as_ptr().cast())
    }

    /// Reads a PTX, CUBIN or fatbin file and loads it (see [`Module::from_image`]).
    pub fn from_file(context: &Context, path: impl AsRef<Path>) -> Result<Module> {
        let path = path.as_ref();
        let image = std::fs::read(path)
            .map_err(|e| Error::InvalidValue(format!("cannot read module file {}: {e}", path.display())))?;
        Self::from_image(context, &image)
    }

    fn load(context: &Context, image: *const c_void) -> Result<Module> {
        let driver = context.bind()?;
        let mut raw = ptr::null_mut();
        let mut log = JitLog::new();
        let (mut options, mut values) = log.options();
        // SAFETY: `image` points to a NUL-terminated PTX text or a complete binary image that
        // outlives the call; the option arrays have equal length and name the live log buffer.
        let result = unsafe {
            driver.cuModuleLoadDataEx()?(
                &mut raw,
                image,
                options.len() as u32,
                options.as_mut_ptr(),
                values.as_mut_ptr(),
            )
        };
        log.check(result)?;
        Ok(Module {
            inner: Arc::new(ModuleInner {
                raw,
                context: context.clone(),
                library: None,
            }),
        })
    }

    /// The kernel named `name` (its symbol name: use `extern "C"` kernels or
    /// the mangled name).
    pub fn function(&self, name: &str) -> Result<Function> {
        let symbol = CString::new(name).map_err(|_| Error::InvalidValue("function name contains a NUL byte".into()))?;
        let driver = self.inner.context.bind()?;
        let mut raw = ptr::null_mut();
        // SAFETY: `raw` is a valid out-pointer, the name is NUL-terminated, the module is alive.
        check(unsafe { driver.cuModuleGetFunction()?(&mut raw, self.inner.raw, symbol.as_ptr()) })?;
        Ok(Function::new(raw, self.clone(), name.to_string()))
    }

    /// The context the module was loaded into.
    pub fn context(&self) -> &Context {
        &self.inner.context
    }

    /// The library this module belongs to, if it is a [`Library`]'s module in a context.
    pub fn library(&self) -> Option<&Library> {
        self.inner.library.as_ref()
    }

    /// Wraps the module a library has in `context`; the library owns it.
    pub(crate) fn of_library(raw: CUmodule, context: &Context, library: Library) -> Module {
        Module {
            inner: Arc::new(ModuleInner {
                raw,
                context: context.clone(),
                library: Some(library),
            }),
        }
    }

    /// The driver's handle.
    ///
    /// # Safety
    /// Valid only while this module (or a clone, or one of its functions) is
    /// alive; the caller must not unload it.
    pub unsafe fn as_raw(&self) -> CUmodule {
        self.inner.raw
    }
}

/// Copies an image into 8-byte-aligned memory with at least one NUL byte
/// after it, which serves PTX text (NUL-terminated) and binary images
/// (read through their headers, aligned) alike.
pub(crate) fn prepared_image(image: &[u8]) -> Result<Vec<u64>> {
    if image.is_empty() {
        return Err(Error::InvalidValue("module image is empty".into()));
    }
    let mut aligned = vec![0u64; (image.len() + 1).div_ceil(8)];
    // SAFETY: `aligned` holds more than `image.len()` bytes and does not overlap `image`.
    unsafe { ptr::copy_nonoverlapping(image.as_ptr(), aligned.as_mut_ptr().cast::<u8>(), image.len()) };
    Ok(aligned)
}

/// A buffer the JIT compiler writes its error log into, and the JIT
/// options that name it.
pub(crate) struct JitLog {
    buffer: Box<[u8]>,
}

impl JitLog {
    pub(crate) fn new() -> JitLog {
        JitLog {
            buffer: vec![0u8; JIT_LOG_BYTES].into_boxed_slice(),
        }
    }

    /// The options and values that hand the buffer to a loading call. The
    /// driver may write the log while the buffer lives (it does not move).
    pub(crate) fn options(&mut self) -> ([CUjit_option; 2], [*mut c_void; 2]) {
        (
            [
                CUjit_option::CU_JIT_ERROR_LOG_BUFFER,
                CUjit_option::CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
            ],
            [self.buffer.as_mut_ptr().cast(), JIT_LOG_BYTES as *mut c_void],
        )
    }

    /// The log written so far, up to its first NUL byte.
    fn text(&self) -> String {
        let end = self.buffer.iter().position(|&b| b == 0).unwrap_or(self.buffer.len());
        String::from_utf8_lossy(&self.buffer[..end]).trim_end().to_string()
    }

    /// `error` as a loading failure, with the log.
    pub(crate) fn load_error(&self, error: DriverError) -> Error {
        Error::ModuleLoad {
            error,
            log: self.text(),
        }
    }

    /// Turns a loading call's failure into [`Error::ModuleLoad`] with the log.
    pub(crate) fn check(&self, result: CUresult) -> Result<()> {
        match check(result) {
            Err(Error::Driver(error)) => Err(self.load_error(error)),
            other => other,
        }
    }
}

impl Drop for ModuleInner {
    fn drop(&mut self) {
        if self.library.is_some() {
            // The library owns its modules; unloading the library unloads them.
            return;
        }
        let Some(driver) = self.context.bind_for_drop("cuModuleUnload") else {
            return;
        };
        // SAFETY: this is the only owner of the module handle, and no function of it remains (each
        // holds the module, and so does every graph that captured one).
        let result = driver.cuModuleUnload().map(|unload| unsafe { unload(self.raw) });
        self.context
            .record_drop_result("cuModuleUnload", check_resolved(result));
    }
}

impl std::fmt::Debug for Module {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Module").field("raw", &self.inner.raw).finish()
    }
}
