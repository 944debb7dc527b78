//! Context-independent libraries (`cuLibrary*`): device code loaded once
//! and made available in every context that asks for one of its kernels.

use std::ffi::{c_char, CStr, CString};
use std::path::Path;
use std::ptr;
use std::sync::Arc;

use cuda_sys::driver::CUlibrary;

use crate::error::{check, Error, Result};
use crate::init::api;
use crate::module::{prepared_image, with_jit_log};
use crate::{Context, Function, Module};

/// Device code (PTX, CUBIN or fatbin) loaded independently of any context
/// (`CUlibrary`). [`Library::function`] gives the kernel in a context of
/// your choice, so one library serves every device. Unloaded when the last
/// clone and the last function taken from it are dropped.
#[derive(Clone)]
pub struct Library {
    inner: Arc<LibraryInner>,
}

struct LibraryInner {
    raw: CUlibrary,
}

// SAFETY: library handles are context-independent and may be used from any thread.
unsafe impl Send for LibraryInner {}
// SAFETY: as above; shared access only reads the handle.
unsafe impl Sync for LibraryInner {}

impl Library {
    /// Loads PTX text. A compile failure is [`Error::ModuleLoad`] with the JIT log.
    pub fn from_ptx(ptx: &str) -> Result<Library> {
        Self::from_image(ptx.as_bytes())
    }

    /// Loads a CUBIN, a fatbin, or PTX text given as bytes.
    pub fn from_image(image: &[u8]) -> Result<Library> {
        let image = prepared_image(image)?;
        let driver = api()?;
        let mut raw = ptr::null_mut();
        with_jit_log(|options, values| {
            // SAFETY: the image is NUL-terminated or a complete binary and outlives the call; the
            // JIT option arrays have equal length and name a live log buffer; no library options.
            Ok(unsafe {
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
            })
        })?;
        Ok(Library {
            inner: Arc::new(LibraryInner { raw }),
        })
    }

    /// Reads a PTX, CUBIN or fatbin file and loads it.
    pub fn from_file(path: impl AsRef<Path>) -> Result<Library> {
        let path = path.as_ref();
        let image = std::fs::read(path)
            .map_err(|e| Error::InvalidValue(format!("cannot read library file {}: {e}", path.display())))?;
        Self::from_image(&image)
    }

    /// The kernel named `name`, loaded into `context`.
    pub fn function(&self, context: &Context, name: &str) -> Result<Function> {
        let symbol = CString::new(name).map_err(|_| Error::InvalidValue("kernel name contains a NUL byte".into()))?;
        let driver = context.bind()?;
        let mut kernel = ptr::null_mut();
        // SAFETY: valid out-pointer, live library, NUL-terminated name.
        check(unsafe { driver.cuLibraryGetKernel()?(&mut kernel, self.inner.raw, symbol.as_ptr()) })?;
        let mut raw = ptr::null_mut();
        // SAFETY: valid out-pointer and kernel; the function is for the current context (`context`).
        check(unsafe { driver.cuKernelGetFunction()?(&mut raw, kernel) })?;
        let mut module = ptr::null_mut();
        // SAFETY: valid out-pointer and library; the module is the library's in the current context.
        check(unsafe { driver.cuLibraryGetModule()?(&mut module, self.inner.raw) })?;
        let module = Module::of_library(module, context, self.clone());
        Ok(Function::new(raw, module, name.to_string()))
    }

    /// The names of the kernels in the library.
    pub fn kernel_names(&self) -> Result<Vec<String>> {
        let driver = api()?;
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
