//! Context-independent libraries (`cuLibrary*`): device code loaded once
//! and made available in every context that asks for one of its kernels.

use std::ffi::{c_char, CStr, CString};
use std::path::Path;
use std::ptr;
use std::sync::{Arc, Mutex};

use cuda_sys::driver::{CUlibrary, CUresult};

use crate::error::{check, DriverError, Error, Result};
use crate::init::api;
use crate::module::{prepared_image, JitLog};
use crate::{Context, Function, Module};

/// Device code (PTX, CUBIN or fatbin) loaded independently of any context
/// (`CUlibrary`). [`Library::function`] gives the kernel in a context of
/// your choice, so one library serves every device. Unloaded when the last
/// clone and the last function taken from it are dropped.
///
/// The driver may load a library lazily (`CUDA_MODULE_LOADING=LAZY`, the
/// default since CUDA 12.2): PTX is then compiled, and its errors found,
/// only at first use. Such errors come from [`Library::function`] and
/// [`Library::kernel_names`] as [`Error::ModuleLoad`], with the JIT log
/// where the driver writes one.
#[derive(Clone)]
pub struct Library {
    inner: Arc<LibraryInner>,
}

struct LibraryInner {
    raw: CUlibrary,
    /// The error log buffer given to the driver at load, kept as long as the
    /// library because a lazy load may write it later. The lock serialises
    /// the calls that may load (and write it) with reading it.
    jit_log: Mutex<JitLog>,
}

// SAFETY: library handles are context-independent and may be used from any
// thread; the log buffer is only read under its lock, which every call that
// may make the driver write it holds.
unsafe impl Send for LibraryInner {}
// SAFETY: as above; shared access only reads the handle.
unsafe impl Sync for LibraryInner {}

/// Codes with which the driver reports device code it cannot load.
const LOAD_FAILURES: [CUresult; 9] = [
    CUresult::CUDA_ERROR_INVALID_PTX,
    CUresult::CUDA_ERROR_INVALID_IMAGE,
    CUresult::CUDA_ERROR_NO_BINARY_FOR_GPU,
    CUresult::CUDA_ERROR_UNSUPPORTED_PTX_VERSION,
    CUresult::CUDA_ERROR_JIT_COMPILER_NOT_FOUND,
    CUresult::CUDA_ERROR_JIT_COMPILATION_DISABLED,
    CUresult::CUDA_ERROR_INVALID_SOURCE,
    CUresult::CUDA_ERROR_SHARED_OBJECT_SYMBOL_NOT_FOUND,
    CUresult::CUDA_ERROR_SHARED_OBJECT_INIT_FAILED,
];

impl Library {
    /// Loads PTX text. Text without the `.version` directive every PTX
    /// module begins with is refused at once, as [`Error::ModuleLoad`] with
    /// `CUDA_ERROR_INVALID_PTX`; other compile failures are
    /// [`Error::ModuleLoad`] with the JIT log, here or at first use (see
    /// [`Library`]).
    pub fn from_ptx(ptx: &str) -> Result<Library> {
        Self::from_image(ptx.as_bytes())
    }

    /// Loads a CUBIN, a fatbin, or PTX text given as bytes (checked as
    /// [`Library::from_ptx`] checks text).
    pub fn from_image(image: &[u8]) -> Result<Library> {
        check_ptx_text(image)?;
        let image = prepared_image(image)?;
        let driver = api()?;
        let mut raw = ptr::null_mut();
        let mut jit_log = JitLog::new();
        let (mut options, mut values) = jit_log.options();
        // SAFETY: the image is NUL-terminated or a complete binary and outlives the call (the
        // driver keeps its own copy); the JIT option arrays have equal length and name the log
        // buffer, which lives as long as the library; no library options.
        let result = unsafe {
            driver.cuLibraryLoadData()?(
                &mut raw,
                image.as_ptr().cast(),
                options.as_mut_ptr(),
                values.as_mut_ptr(),
                options.len() as u32,
                ptr::null_mut(),
                ptr::null_mut(),
                0,
            )
        };
        jit_log.check(result)?;
        Ok(Library {
            inner: Arc::new(LibraryInner {
                raw,
                jit_log: Mutex::new(jit_log),
            }),
        })
    }

    /// Reads a PTX, CUBIN or fatbin file and loads it.
    pub fn from_file(path: impl AsRef<Path>) -> Result<Library> {
        let path = path.as_ref();
        let image = std::fs::read(path)
            .map_err(|e| Error::InvalidValue(format!("cannot read library file {}: {e}", path.display())))?;
        Self::from_image(&image)
    }

    /// The kernel named `name`, loaded into `context`. Device code the
    /// driver loads only now and cannot load is [`Error::ModuleLoad`].
    pub fn function(&self, context: &Context, name: &str) -> Result<Function> {
        let symbol = CString::new(name).map_err(|_| Error::InvalidValue("kernel name contains a NUL byte".into()))?;
        let driver = context.bind()?;
        let (raw, module) = self.may_load(|| {
            let mut kernel = ptr::null_mut();
            // SAFETY: valid out-pointer, live library, NUL-terminated name.
            check(unsafe { driver.cuLibraryGetKernel()?(&mut kernel, self.inner.raw, symbol.as_ptr()) })?;
            let mut raw = ptr::null_mut();
            // SAFETY: valid out-pointer and kernel; the function is for the current context (`context`).
            check(unsafe { driver.cuKernelGetFunction()?(&mut raw, kernel) })?;
            // Lazy loading may leave the function unloaded until its first launch: load it now
            // (`cuFuncLoad`, CUDA 12.4 and later), so that code that cannot load fails here.
            if let Ok(load) = driver.cuFuncLoad() {
                // SAFETY: `raw` is a live function of the current context; loading a loaded one does nothing.
                check(unsafe { load(raw) })?;
            }
            let mut module = ptr::null_mut();
            // SAFETY: valid out-pointer and library; the module is the library's in the current context.
            check(unsafe { driver.cuLibraryGetModule()?(&mut module, self.inner.raw) })?;
            Ok((raw, module))
        })?;
        let module = Module::of_library(module, context, self.clone());
        Ok(Function::new(raw, module, name.to_string()))
    }

    /// The names of the kernels in the library. Device code the driver
    /// loads only now and cannot load is [`Error::ModuleLoad`].
    pub fn kernel_names(&self) -> Result<Vec<String>> {
        let driver = api()?;
        self.may_load(|| {
            let mut count = 0;
            // SAFETY: valid out-pointer and library.
            check(unsafe { driver.cuLibraryGetKernelCount()?(&mut count, self.inner.raw) })?;
            let mut kernels = vec![ptr::null_mut(); count as usize];
            // SAFETY: `kernels` holds `count` slots.
            check(unsafe { driver.cuLibraryEnumerateKernels()?(kernels.as_mut_ptr(), count, self.inner.raw) })?;
            kernels
                .into_iter()
                .map(|kernel| {
                    let mut name: *const c_char = ptr::null();
                    // SAFETY: valid out-pointer; the kernel belongs to this live library.
                    check(unsafe { driver.cuKernelGetName()?(&mut name, kernel) })?;
                    if name.is_null() {
                        return Err(Error::InvalidValue("the driver returned no kernel name".into()));
                    }
                    // SAFETY: the driver returned a NUL-terminated name owned by the library.
                    Ok(unsafe { CStr::from_ptr(name) }.to_string_lossy().into_owned())
                })
                .collect()
        })
    }

    /// Runs driver calls that may load the library lazily, holding the JIT
    /// log; a loading failure becomes [`Error::ModuleLoad`] with the log.
    fn may_load<T>(&self, calls: impl FnOnce() -> Result<T>) -> Result<T> {
        let jit_log = self.inner.jit_log.lock().unwrap_or_else(|e| e.into_inner());
        calls().map_err(|error| match error {
            Error::Driver(error) if LOAD_FAILURES.contains(&error.code) => jit_log.load_error(error),
            other => other,
        })
    }

    /// The driver's handle.
    ///
    /// # Safety
    /// Valid only while this library (or a clone, or one of its functions) is
    /// alive; the caller must not unload it.
    pub unsafe fn as_raw(&self) -> CUlibrary {
        self.inner.raw
    }
}

/// Refuses text that cannot be PTX: every PTX module begins with a
/// `.version` directive. Images with a CUBIN (ELF) or fatbin header, or
/// with NUL bytes inside (binary), are left to the driver. The driver may
/// load lazily and would report this only at first use.
fn check_ptx_text(image: &[u8]) -> Result<()> {
    const ELF: &[u8] = b"\x7fELF";
    const FATBIN: &[u8] = &0xBA55_ED50u32.to_le_bytes();
    const FATBIN_WRAPPER: &[u8] = &0x4662_43B1u32.to_le_bytes();
    const VERSION: &[u8] = b".version";
    let end = image.iter().rposition(|&b| b != 0).map_or(0, |last| last + 1);
    let text = &image[..end];
    let binary = [ELF, FATBIN, FATBIN_WRAPPER]
        .iter()
        .any(|magic| text.starts_with(magic))
        || text.contains(&0);
    if text.is_empty() || binary || text.windows(VERSION.len()).any(|w| w == VERSION) {
        return Ok(());
    }
    Err(Error::ModuleLoad {
        error: DriverError::new(CUresult::CUDA_ERROR_INVALID_PTX),
        log: "not PTX: the text has no .version directive (checked before loading)".into(),
    })
}

impl Drop for LibraryInner {
    fn drop(&mut self) {
        let result = api().and_then(|driver| {
            // SAFETY: this is the only owner of the library and no function of it remains.
            check(unsafe { driver.cuLibraryUnload()?(self.raw) })
        });
        if let Err(error) = result {
            eprintln!("cuda-driver: cuLibraryUnload failed while dropping: {error}");
        }
    }
}

impl std::fmt::Debug for Library {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Library").field("raw", &self.inner.raw).finish()
    }
}
