//! A loaded library and its lazily resolved function addresses.
//!
//! Each declared function has one slot. A slot starts unresolved; the first
//! call of its accessor looks the symbol up (for the driver through
//! `cuGetProcAddress` at the version of the declared ABI, then by exported name)
//! and stores the address, or marks it missing so the error is cheap to
//! repeat. Nothing is looked up at load time, so a library older than the
//! headers loads and serves every function it has.

use std::ffi::{c_uint, c_void, CString};
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;

use crate::{FunctionName, Library, SymbolError, VersionQuery};

const UNRESOLVED: usize = 0;
const MISSING: usize = 1;

/// `cuGetProcAddress_v2` as `cuda.h` declares it, its two enums (`CUresult` and
/// `CUdriverProcAddressQueryResult`, both `unsigned int` wide) as their values, so this works
/// in builds without the driver's module.
pub(crate) type GetProcAddress =
    unsafe extern "C" fn(*const std::ffi::c_char, *mut *mut c_void, i32, u64, *mut c_uint) -> c_uint;

/// `CUDA_SUCCESS` and `CU_GET_PROC_ADDRESS_SUCCESS`.
const SUCCESS: c_uint = 0;

pub(crate) struct SymbolTable {
    /// Kept open for the table's life; the addresses in `slots` point into it.
    library: libloading::Library,
    /// Libraries that had to be loaded first and must stay loaded (NVRTC's builtins).
    _companions: Vec<libloading::Library>,
    path: PathBuf,
    names: &'static [FunctionName],
    slots: Box<[AtomicUsize]>,
    proc_address: Option<GetProcAddress>,
    /// Whether `FunctionName::proc_version` says which driver version each function needs (the
    /// driver's table).
    versioned: bool,
    /// Whether exports carry the library's version (`__nvJitLinkCreate_13_0`; see
    /// `Library::versioned_exports`).
    versioned_exports: bool,
    /// Exports whose CUDA 13 ABI differs from a CUDA 12 build's (`Library::changed_in_13`).
    changed_in_13: &'static [&'static str],
    version_query: VersionQuery,
    version: OnceLock<Option<i32>>,
}

impl SymbolTable {
    /// The table of `names` over `library` opened from `path`, resolved as its `row` of the
    /// library table says.
    pub(crate) fn new(
        library: libloading::Library,
        companions: Vec<libloading::Library>,
        path: PathBuf,
        names: &'static [FunctionName],
        row: &'static Library,
    ) -> Self {
        let proc_address = if row.proc_address {
            // SAFETY: `cuGetProcAddress_v2` has had this signature since CUDA 12.0;
            // the type above is the header's declaration.
            unsafe { library.get::<GetProcAddress>(b"cuGetProcAddress_v2\0") }
                .ok()
                .map(|f| *f)
        } else {
            None
        };
        Self {
            library,
            _companions: companions,
            path,
            names,
            slots: names.iter().map(|_| AtomicUsize::new(UNRESOLVED)).collect(),
            proc_address,
            versioned: row.proc_address,
            versioned_exports: row.versioned_exports,
            changed_in_13: row.changed_in_13,
            version_query: row.version,
            version: OnceLock::new(),
        }
    }

    pub(crate) fn path(&self) -> &std::path::Path {
        &self.path
    }

    pub(crate) fn library_version(&self) -> Option<i32> {
        *self
            .version
            .get_or_init(|| crate::query_version(&self.library, self.version_query))
    }

    /// The address of function `index`, resolving it on first use.
    #[inline]
    pub(crate) fn address(&self, index: usize) -> Result<*mut c_void, SymbolError> {
        match self.slots[index].load(Ordering::Acquire) {
            UNRESOLVED => self.resolve(index),
            MISSING => Err(self.missing(index)),
            address => Ok(address as *mut c_void),
        }
    }

    /// The version `name`'s declared ABI needs, where the loaded library is older: a driver
    /// older than the function's `cuGetProcAddress` version, or a CUDA 12 build of a function
    /// whose ABI changed in 13.0. It is missing then, whatever the library exports under its
    /// name.
    fn needs_newer_version(&self, name: &FunctionName) -> Option<i32> {
        let has = self.library_version()?;
        if self.versioned && name.proc_version > has {
            return Some(name.proc_version);
        }
        (has < 13000 && self.changed_in_13.contains(&name.symbol)).then_some(13000)
    }

    #[cold]
    fn resolve(&self, index: usize) -> Result<*mut c_void, SymbolError> {
        let name = &self.names[index];
        // A library older than the ABI the header declares either lacks the function or has only
        // an older ABI of it (`cuGetProcAddress("cuMemAdvise")` below 12020, or cudart 12's
        // `cudaMemAdvise`, takes a device, not a location): it is never looked up.
        let address = match self.needs_newer_version(name) {
            Some(_) => None,
            None => self
                .by_proc_address(name)
                .or_else(|| self.by_export(name.symbol))
                // nvJitLink 12.x under its own version's name: the parameter lists and the
                // enums' values it shares with 13.0 are the same (checked against 12.9's header).
                .or_else(|| self.by_export(&self.at_library_version(name.symbol)?)),
        };
        match address {
            Some(address) => {
                self.slots[index].store(address as usize, Ordering::Release);
                Ok(address)
            }
            None => {
                self.slots[index].store(MISSING, Ordering::Release);
                Err(self.missing(index))
            }
        }
    }

    fn by_proc_address(&self, name: &FunctionName) -> Option<*mut c_void> {
        let get_proc_address = self.proc_address?;
        if name.proc_version == 0 {
            return None;
        }
        let proc_name = CString::new(name.proc_name).ok()?;
        let mut address = std::ptr::null_mut();
        let mut status = SUCCESS;
        // SAFETY: the name is NUL-terminated and both out-pointers are valid
        // locals; flags 0 is CU_GET_PROC_ADDRESS_DEFAULT. The driver writes the
        // ABI of `proc_name` at `proc_version`, which is the one the header declares.
        let result = unsafe { get_proc_address(proc_name.as_ptr(), &mut address, name.proc_version, 0, &mut status) };
        let found = result == SUCCESS && status == SUCCESS;
        (found && !address.is_null()).then_some(address)
    }

    /// `symbol` under the loaded library's version where exports carry it
    /// (`__nvJitLinkCreate_13_0` as `__nvJitLinkCreate_12_9` in nvJitLink 12.9); `None` where
    /// they do not, or the name is already that.
    fn at_library_version(&self, symbol: &str) -> Option<String> {
        if !self.versioned_exports {
            return None;
        }
        let version = self.library_version()?;
        let mut parts = symbol.rsplitn(3, '_');
        let (minor, major, stem) = (parts.next()?, parts.next()?, parts.next()?);
        let numeric = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
        let own = format!("{stem}_{}_{}", version / 1000, version % 1000 / 10);
        (numeric(major) && numeric(minor) && own != symbol).then_some(own)
    }

    fn by_export(&self, symbol: &str) -> Option<*mut c_void> {
        let name = CString::new(symbol).ok()?;
        // SAFETY: the address is only read here as an opaque pointer; it is
        // turned into a typed function pointer by the generated accessor,
        // which knows the header's signature for this symbol.
        let found = unsafe { self.library.get::<*mut c_void>(name.as_bytes_with_nul()) };
        found.ok().map(|s| *s).filter(|p| !p.is_null())
    }

    fn missing(&self, index: usize) -> SymbolError {
        self.missing_name(&self.names[index])
    }

    fn missing_name(&self, name: &FunctionName) -> SymbolError {
        SymbolError {
            symbol: name.symbol,
            library: self.path.clone(),
            library_version: self.library_version(),
            needs_version: self.needs_newer_version(name),
        }
    }

    /// The address of a function outside the declared table (an older ABI of a driver or
    /// runtime function, see `driver_abi12.rs` and `runtime_abi12.rs`), looked up on every call: these serve old drivers
    /// where the declared one is missing, off the hot path.
    #[cfg_attr(not(any(feature = "driver", feature = "runtime")), allow(dead_code))]
    pub(crate) fn address_of(&self, name: &FunctionName) -> Result<*mut c_void, SymbolError> {
        if self.needs_newer_version(name).is_some() {
            return Err(self.missing_name(name));
        }
        self.by_proc_address(name)
            .or_else(|| self.by_export(name.symbol))
            .ok_or_else(|| self.missing_name(name))
    }

    /// The declared functions the library does not provide (resolving every slot).
    pub(crate) fn missing_symbols(&self) -> Vec<&'static str> {
        (0..self.names.len())
            .filter(|&i| self.address(i).is_err())
            .map(|i| self.names[i].symbol)
            .collect()
    }
}

#[cfg(all(test, feature = "driver"))]
mod tests {
    use crate::driver::{CUdriverProcAddressQueryResult, CUresult};

    #[test]
    fn get_proc_address_enums_are_the_declared_values() {
        assert_eq!(CUresult::CUDA_SUCCESS.0, super::SUCCESS);
        assert_eq!(
            CUdriverProcAddressQueryResult::CU_GET_PROC_ADDRESS_SUCCESS.0,
            super::SUCCESS
        );
        assert_eq!(size_of::<CUresult>(), size_of::<super::c_uint>());
        assert_eq!(size_of::<CUdriverProcAddressQueryResult>(), size_of::<super::c_uint>());
    }
}
