//! Module variables (`__device__` and `__constant__` globals) as typed
//! symbols the host copies to and from (`cuModuleGetGlobal`,
//! `cuLibraryGetGlobal`).
//!
//! ```no_run
//! use cuda_driver::{Device, Global, Module};
//!
//! // __constant__ float coefficients[4]; __device__ unsigned int counter;
//! const PTX: &str = r#"
//! .version 8.0
//! .target sm_90
//! .address_size 64
//! .visible .const .align 4 .b8 coefficients[16];
//! .visible .global .align 4 .u32 counter;
//! "#;
//!
//! # fn main() -> cuda_driver::Result<()> {
//! let context = Device::get(0)?.primary_context()?;
//! let module = Module::from_ptx(&context, PTX)?;
//! let mut coefficients = Global::<f32>::from_module(&module, "coefficients")?;
//! assert_eq!(coefficients.len(), 4);
//! coefficients.copy_from_host(&[1.0, 0.5, 0.25, 0.125])?;
//! let counter = Global::<u32>::from_module(&module, "counter")?;
//! assert_eq!(counter.to_vec()?, [0]);
//! # Ok(())
//! # }
//! ```

use std::ffi::CString;
use std::marker::PhantomData;
use std::mem::size_of;

use cuda_sys::driver::CUdeviceptr;

use crate::error::{check, Error, Result};
use crate::{Context, DeviceCopy, Library, Module};

/// What keeps a variable's code loaded.
enum Owner {
    Module(Module),
    Library(Library),
}

/// A module's `__device__` or `__constant__` variable: `len` values of `T`
/// at a fixed device address of one context. Holds its module (or library)
/// loaded, so the address stays valid.
///
/// The copies are synchronous and run in order with the legacy default
/// stream, like [`DeviceBuffer`](crate::DeviceBuffer)'s; kernels reading the
/// variable on non-blocking streams must be ordered by the caller.
pub struct Global<T: DeviceCopy> {
    ptr: CUdeviceptr,
    len: usize,
    context: Context,
    owner: Owner,
    _marker: PhantomData<T>,
}

// SAFETY: the handles inside may be used from any thread (every operation makes the context
// current); the variable is device memory, reached only through driver copies.
unsafe impl<T: DeviceCopy + Send> Send for Global<T> {}
// SAFETY: shared access only reads the variable through driver copies.
unsafe impl<T: DeviceCopy + Sync> Sync for Global<T> {}

/// The NUL-terminated symbol name.
fn symbol(name: &str) -> Result<CString> {
    CString::new(name).map_err(|_| Error::InvalidValue("variable name contains a NUL byte".into()))
}

impl<T: DeviceCopy> Global<T> {
    /// The variable `name` (its symbol name: `extern "C"` or mangled) of
    /// `module`. A variable whose size is not a whole, non-zero number of
    /// `T` is [`Error::InvalidValue`]; an unknown name is the driver's
    /// `CUDA_ERROR_NOT_FOUND`.
    pub fn from_module(module: &Module, name: &str) -> Result<Self> {
        let symbol = symbol(name)?;
        let context = module.context();
        let driver = context.bind()?;
        let (mut ptr, mut bytes) = (0, 0);
        // SAFETY: both out-pointers are valid; the module is alive and its context current; the
        // name is NUL-terminated.
        check(unsafe { driver.cuModuleGetGlobal_v2()?(&mut ptr, &mut bytes, module.as_raw(), symbol.as_ptr()) })?;
        Self::new(name, ptr, bytes, context.clone(), Owner::Module(module.clone()))
    }

    /// The variable `name` of `library` in `context` (each context has its
    /// own copy). As [`Global::from_module`] otherwise.
    pub fn from_library(library: &Library, context: &Context, name: &str) -> Result<Self> {
        let symbol = symbol(name)?;
        let driver = context.bind()?;
        let (mut ptr, mut bytes) = (0, 0);
        // SAFETY: both out-pointers are valid; the library is alive; the variable is the one of
        // the current context (`context`); the name is NUL-terminated.
        check(unsafe { driver.cuLibraryGetGlobal()?(&mut ptr, &mut bytes, library.as_raw(), symbol.as_ptr()) })?;
        Self::new(name, ptr, bytes, context.clone(), Owner::Library(library.clone()))
    }

    fn new(name: &str, ptr: CUdeviceptr, bytes: usize, context: Context, owner: Owner) -> Result<Self> {
        if size_of::<T>() == 0 || bytes == 0 || bytes % size_of::<T>() != 0 {
            return Err(Error::InvalidValue(format!(
                "variable `{name}` is {bytes} bytes, not a whole number of {}-byte elements",
                size_of::<T>()
            )));
        }
        Ok(Global {
            ptr,
            len: bytes / size_of::<T>(),
            context,
            owner,
            _marker: PhantomData,
        })
    }

    /// Number of elements (1 for a scalar variable).
    pub fn len(&self) -> usize {
        self.len
    }

    /// Always false: a variable holds at least one element.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Size in bytes.
    pub fn size_bytes(&self) -> usize {
        self.len * size_of::<T>()
    }

    /// The module the variable came from, if it came from a [`Module`].
    pub fn module(&self) -> Option<&Module> {
        match &self.owner {
            Owner::Module(module) => Some(module),
            Owner::Library(_) => None,
        }
    }

    /// The library the variable came from, if it came from a [`Library`].
    pub fn library(&self) -> Option<&Library> {
        match &self.owner {
            Owner::Library(library) => Some(library),
            Owner::Module(_) => None,
        }
    }

    /// The context whose copy of the variable this is.
    pub fn context(&self) -> &Context {
        &self.context
    }

    fn same_len(&self, what: &str, given: usize) -> Result<()> {
        if given == self.len {
            Ok(())
        } else {
            Err(Error::InvalidValue(format!(
                "{what}: the variable holds {} elements, {given} were given",
                self.len
            )))
        }
    }

    /// Writes `data` (the variable's length) into the variable, waiting until done.
    pub fn copy_from_host(&mut self, data: &[T]) -> Result<()> {
        self.same_len("copy_from_host", data.len())?;
        let driver = self.context.bind()?;
        // SAFETY: `data` holds exactly the variable's size in readable bytes; the variable lives
        // while its module (held) is loaded.
        check(unsafe { driver.cuMemcpyHtoD_v2()?(self.ptr, data.as_ptr().cast(), self.size_bytes()) })
    }

    /// Reads the variable into `destination` (its length), waiting until done.
    pub fn copy_to_host(&self, destination: &mut [T]) -> Result<()> {
        self.same_len("copy_to_host", destination.len())?;
        let driver = self.context.bind()?;
        // SAFETY: `destination` holds exactly the variable's size in writable bytes; any bytes are
        // a valid `T` (DeviceCopy).
        check(unsafe { driver.cuMemcpyDtoH_v2()?(destination.as_mut_ptr().cast(), self.ptr, self.size_bytes()) })
    }

    /// The variable's contents in a new `Vec`.
    pub fn to_vec(&self) -> Result<Vec<T>> {
        let mut out = Vec::<T>::with_capacity(self.len);
        let driver = self.context.bind()?;
        // SAFETY: `out` has capacity for the variable's size; the variable is alive (see above).
        check(unsafe { driver.cuMemcpyDtoH_v2()?(out.as_mut_ptr().cast(), self.ptr, self.size_bytes()) })?;
        // SAFETY: the copy wrote all `len` elements, and any bytes are a valid `T` (DeviceCopy).
        unsafe { out.set_len(self.len) };
        Ok(out)
    }

    /// The variable's device address (for kernels that take it as a pointer).
    ///
    /// # Safety
    /// Valid only while this `Global` (which keeps the module loaded) lives.
    pub unsafe fn as_raw(&self) -> CUdeviceptr {
        self.ptr
    }
}

impl<T: DeviceCopy> std::fmt::Debug for Global<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Global")
            .field("ptr", &format_args!("{:#x}", self.ptr))
            .field("len", &self.len)
            .field("library", &self.library().is_some())
            .finish()
    }
}
