//! Device code loaded with `cudaLibraryLoadData`, and its kernels.

use std::borrow::Cow;
use std::ffi::{c_int, c_uint, c_void, CString};
use std::mem::MaybeUninit;
use std::ptr::null_mut;
use std::sync::{Arc, OnceLock};

use cuda_sys::runtime::{cudaError_t, cudaFuncAttribute, cudaFuncAttributes, cudaKernel_t, cudaLibrary_t};

use crate::device::make_current;
use crate::error::check;
use crate::{runtime, Device, Error, Result};

/// A loaded library of device code (`cudaLibrary_t`), unloaded when it and
/// every [`Kernel`] taken from it are dropped.
///
/// Libraries are not tied to a context: the runtime loads the code into a
/// device's primary context the first time a kernel runs there, so one
/// library serves every device.
#[derive(Clone, Debug)]
pub struct Library {
    inner: Arc<LibraryInner>,
}

#[derive(Debug)]
struct LibraryInner {
    raw: cudaLibrary_t,
}

// SAFETY: a library handle is a context-independent token the runtime accepts
// from any thread.
unsafe impl Send for LibraryInner {}
// SAFETY: as above; lookups and unloading are serialised by the runtime.
unsafe impl Sync for LibraryInner {}

impl Library {
    /// Loads a CUBIN, a fatbin or PTX text (`cudaLibraryLoadData`).
    ///
    /// ELF and fatbin images are checked on the host first (headers, and
    /// section and payload extents within `image`), so a truncated image is
    /// an error instead of an out-of-bounds read. Anything else is taken as
    /// PTX and given a terminating NUL if it lacks one.
    pub fn load(image: &[u8]) -> Result<Library> {
        let code: Cow<[u8]> = match image_kind(image)? {
            ImageKind::Binary => Cow::Borrowed(image),
            ImageKind::Ptx if image.last() == Some(&0) => Cow::Borrowed(image),
            ImageKind::Ptx => {
                let mut text = Vec::with_capacity(image.len() + 1);
                text.extend_from_slice(image);
                text.push(0);
                Cow::Owned(text)
            }
        };
        let runtime = runtime()?;
        let mut raw: cudaLibrary_t = std::ptr::null_mut();
        let load = runtime.cudaLibraryLoadData()?;
        let code_ptr = code.as_ptr().cast::<c_void>();
        // SAFETY: `code` is a checked binary image or NUL-terminated text that
        // outlives the call; no options are passed (null arrays, count 0).
        let result = unsafe { load(&mut raw, code_ptr, null_mut(), null_mut(), 0, null_mut(), null_mut(), 0) };
        check(runtime, result)?;
        Ok(Library {
            inner: Arc::new(LibraryInner { raw }),
        })
    }

    /// Loads PTX text; an error if it holds a NUL byte.
    pub fn from_ptx(ptx: &str) -> Result<Library> {
        let text = CString::new(ptx)
            .map_err(|e| Error::InvalidValue(format!("PTX has a NUL byte at {}", e.nul_position())))?;
        Library::load(text.as_bytes_with_nul())
    }

    /// The kernel named `name` (its mangled name for C++ kernels)
    /// (`cudaLibraryGetKernel`).
    pub fn kernel(&self, name: &str) -> Result<Kernel> {
        let c_name =
            CString::new(name).map_err(|_| Error::InvalidValue(format!("kernel name {name:?} has a NUL byte")))?;
        let runtime = runtime()?;
        let mut raw: cudaKernel_t = std::ptr::null_mut();
        // SAFETY: the library is valid while `self` lives; the name is NUL-terminated.
        check(runtime, unsafe {
            runtime.cudaLibraryGetKernel()?(&mut raw, self.inner.raw, c_name.as_ptr())
        })?;
        Ok(Kernel {
            raw,
            shared: Arc::new(KernelShared {
                name: name.to_string(),
                params: OnceLock::new(),
                _library: self.inner.clone(),
            }),
        })
    }

    /// Number of kernels in the library (`cudaLibraryGetKernelCount`).
    pub fn kernel_count(&self) -> Result<u32> {
        let runtime = runtime()?;
        let mut count: c_uint = 0;
        // SAFETY: the library is valid; `count` is a valid out-pointer.
        check(runtime, unsafe {
            runtime.cudaLibraryGetKernelCount()?(&mut count, self.inner.raw)
        })?;
        Ok(count)
    }

    /// The raw handle (also a driver `CUlibrary`, after `.cast()`).
    ///
    /// # Safety
    /// Valid while a clone of this library or one of its kernels lives; the
    /// caller must not unload it.
    pub unsafe fn as_raw(&self) -> cudaLibrary_t {
        self.inner.raw
    }
}

impl Drop for LibraryInner {
    fn drop(&mut self) {
        let Ok(runtime) = runtime() else { return };
        if let Ok(unload) = runtime.cudaLibraryUnload() {
            // SAFETY: loaded by us; no kernel of it is alive (they hold this Arc).
            // An error cannot be reported from `drop`.
            let _ = unsafe { unload(self.raw) };
        }
    }
}

enum ImageKind {
    Binary,
    Ptx,
}

const ELF_MAGIC: &[u8; 4] = b"\x7fELF";
const FATBIN_MAGIC: u32 = 0xBA55_ED50;

fn image_kind(image: &[u8]) -> Result<ImageKind> {
    if image.is_empty() || image == [0] {
        return Err(Error::InvalidValue("empty device code image".into()));
    }
    if image.starts_with(ELF_MAGIC) {
        check_elf(image)?;
        return Ok(ImageKind::Binary);
    }
    if image.len() >= 4 && read_u32(image, 0) == Some(FATBIN_MAGIC) {
        check_fatbin(image)?;
        return Ok(ImageKind::Binary);
    }
    Ok(ImageKind::Ptx)
}

fn read_u16(bytes: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_le_bytes(bytes.get(at..at.checked_add(2)?)?.try_into().ok()?))
}

fn read_u32(bytes: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(bytes.get(at..at.checked_add(4)?)?.try_into().ok()?))
}

fn read_u64(bytes: &[u8], at: usize) -> Option<usize> {
    let value = u64::from_le_bytes(bytes.get(at..at.checked_add(8)?)?.try_into().ok()?);
    usize::try_from(value).ok()
}

/// A 64-bit little-endian ELF whose header tables and sections lie within the image.
fn check_elf(image: &[u8]) -> Result<()> {
    let bad = |why: &str| Error::InvalidValue(format!("malformed CUBIN (ELF) image: {why}"));
    if image.len() < 64 || image[4] != 2 || image[5] != 1 {
        return Err(bad("not a complete 64-bit little-endian ELF header"));
    }
    let table = |offset: usize, entry: usize, count: usize| {
        let end = entry.checked_mul(count).and_then(|size| size.checked_add(offset));
        end.is_some_and(|end| end <= image.len())
    };
    let field = |value: Option<usize>| value.ok_or_else(|| bad("header truncated"));
    let ph_offset = field(read_u64(image, 0x20))?;
    let sh_offset = field(read_u64(image, 0x28))?;
    let ph_entry = field(read_u16(image, 0x36).map(usize::from))?;
    let ph_count = field(read_u16(image, 0x38).map(usize::from))?;
    let sh_entry = field(read_u16(image, 0x3A).map(usize::from))?;
    let sh_count = field(read_u16(image, 0x3C).map(usize::from))?;
    if !table(ph_offset, ph_entry, ph_count) {
        return Err(bad("program header table past the end"));
    }
    if !table(sh_offset, sh_entry, sh_count) {
        return Err(bad("section header table past the end"));
    }
    if sh_count > 0 && sh_entry < 0x28 {
        return Err(bad("section header entries too small"));
    }
    const SHT_NOBITS: u32 = 8;
    for index in 0..sh_count {
        let header = sh_offset + index * sh_entry;
        let kind = field(read_u32(image, header + 4).map(|k| k as usize))? as u32;
        let offset = field(read_u64(image, header + 0x18))?;
        let size = field(read_u64(image, header + 0x20))?;
        if kind != SHT_NOBITS && !table(offset, size, 1) {
            return Err(bad(&format!("section {index} past the end")));
        }
    }
    Ok(())
}

/// A fatbin whose header-declared size lies within the image.
fn check_fatbin(image: &[u8]) -> Result<()> {
    let bad = || Error::InvalidValue("malformed fatbin image: declared size past the end".into());
    let header = read_u16(image, 6).map(usize::from).ok_or_else(bad)?;
    let payload = read_u64(image, 8).ok_or_else(bad)?;
    match header.checked_add(payload) {
        Some(end) if end <= image.len() => Ok(()),
        _ => Err(bad()),
    }
}

/// Where a kernel parameter lies in the parameter buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ParamInfo {
    /// Offset in bytes.
    pub offset: usize,
    /// Size in bytes.
    pub size: usize,
}

/// What a kernel's compiled code needs per launch, on one device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct KernelAttributes {
    /// Largest block this kernel can be launched with.
    pub max_threads_per_block: u32,
    /// Registers per thread.
    pub num_regs: u32,
    /// Static shared memory per block, in bytes.
    pub shared_size_bytes: usize,
    /// Constant memory, in bytes.
    pub const_size_bytes: usize,
    /// Local memory per thread, in bytes.
    pub local_size_bytes: usize,
    /// Largest dynamic shared memory a launch may ask for, in bytes.
    pub max_dynamic_shared_size_bytes: u32,
    /// PTX virtual architecture it was compiled for (e.g. 90).
    pub ptx_version: u32,
    /// Binary architecture of the loaded code (e.g. 90).
    pub binary_version: u32,
}

/// A kernel of a [`Library`] (`cudaKernel_t`). Keeps its library loaded.
/// Cloning is cheap.
#[derive(Clone, Debug)]
pub struct Kernel {
    raw: cudaKernel_t,
    shared: Arc<KernelShared>,
}

#[derive(Debug)]
struct KernelShared {
    name: String,
    params: OnceLock<Vec<ParamInfo>>,
    _library: Arc<LibraryInner>,
}

// SAFETY: a kernel handle is a context-independent token the runtime accepts
// from any thread; the rest is immutable or a `OnceLock`.
unsafe impl Send for Kernel {}
// SAFETY: as above.
unsafe impl Sync for Kernel {}

/// More parameters than a kernel can have (the parameter space is at most 32 KiB).
const MAX_PARAMS: usize = 32 * 1024;

impl Kernel {
    /// The name it was looked up by.
    pub fn name(&self) -> &str {
        &self.shared.name
    }

    /// The kernel's parameters, in order (`cudaFuncGetParamInfo`), queried
    /// once and cached.
    pub fn param_info(&self) -> Result<&[ParamInfo]> {
        if let Some(params) = self.shared.params.get() {
            return Ok(params);
        }
        let params = self.query_params()?;
        Ok(self.shared.params.get_or_init(|| params))
    }

    fn query_params(&self) -> Result<Vec<ParamInfo>> {
        let runtime = runtime()?;
        let get = runtime.cudaFuncGetParamInfo()?;
        let peek = runtime.cudaPeekAtLastError()?;
        // SAFETY: takes no arguments.
        let earlier_error = unsafe { peek() } != cudaError_t::cudaSuccess;
        let mut params = Vec::new();
        loop {
            let (mut offset, mut size) = (0usize, 0usize);
            // SAFETY: the kernel handle is valid while `self` lives (it holds the
            // library); both out-pointers are valid locals.
            let code = unsafe { get(self.function(), params.len(), &mut offset, &mut size) };
            if code == cudaError_t::cudaErrorInvalidValue {
                break;
            }
            check(runtime, code)?;
            params.push(ParamInfo { offset, size });
            if params.len() > MAX_PARAMS {
                return Err(Error::InvalidValue(format!(
                    "kernel `{}` reports over {MAX_PARAMS} parameters",
                    self.name()
                )));
            }
        }
        if !earlier_error {
            // The probe past the last parameter recorded cudaErrorInvalidValue
            // as the thread's last error; clear it so the caller's
            // `get_last_error` does not see it.
            // SAFETY: takes no arguments.
            let _ = unsafe { runtime.cudaGetLastError()?() };
        }
        Ok(params)
    }

    /// Raises the dynamic shared memory a launch of this kernel on `device`
    /// may ask for (`cudaKernelSetAttributeForDevice` with
    /// `cudaFuncAttributeMaxDynamicSharedMemorySize`); needed above 48 KiB.
    pub fn set_max_dynamic_shared_memory(&self, device: Device, bytes: u32) -> Result<()> {
        let value = i32::try_from(bytes).map_err(|_| Error::InvalidValue(format!("{bytes} bytes of shared memory")))?;
        let runtime = runtime()?;
        let attribute = cudaFuncAttribute::cudaFuncAttributeMaxDynamicSharedMemorySize;
        // SAFETY: the kernel handle is valid while `self` lives; the call takes no pointers.
        let code =
            unsafe { runtime.cudaKernelSetAttributeForDevice()?(self.raw, attribute, value, device.raw_ordinal()) };
        check(runtime, code)
    }

    /// What the kernel's code needs on `device` (`cudaFuncGetAttributes`
    /// with `device` current; loads the kernel there if needed).
    pub fn attributes(&self, device: Device) -> Result<KernelAttributes> {
        let runtime = runtime()?;
        make_current(runtime, device.raw_ordinal())?;
        let mut raw = MaybeUninit::<cudaFuncAttributes>::zeroed();
        // SAFETY: the runtime accepts a `cudaKernel_t` as the function (CUDA 12+);
        // `raw` is a writable struct of the headers' layout.
        check(runtime, unsafe {
            runtime.cudaFuncGetAttributes()?(raw.as_mut_ptr(), self.function())
        })?;
        // SAFETY: all fields are integers (zero is valid) and the call filled them.
        let raw = unsafe { raw.assume_init() };
        let count = |v: c_int| u32::try_from(v).unwrap_or(0);
        Ok(KernelAttributes {
            max_threads_per_block: count(raw.maxThreadsPerBlock),
            num_regs: count(raw.numRegs),
            shared_size_bytes: raw.sharedSizeBytes,
            const_size_bytes: raw.constSizeBytes,
            local_size_bytes: raw.localSizeBytes,
            max_dynamic_shared_size_bytes: count(raw.maxDynamicSharedSizeBytes),
            ptx_version: count(raw.ptxVersion),
            binary_version: count(raw.binaryVersion),
        })
    }

    /// How many blocks of `block_size` threads using `dynamic_shared_mem`
    /// bytes fit on one multiprocessor of `device`
    /// (`cudaOccupancyMaxActiveBlocksPerMultiprocessor`).
    pub fn max_active_blocks_per_multiprocessor(
        &self,
        device: Device,
        block_size: u32,
        dynamic_shared_mem: usize,
    ) -> Result<u32> {
        let block = c_int::try_from(block_size).map_err(|_| Error::InvalidValue(format!("block size {block_size}")))?;
        let runtime = runtime()?;
        make_current(runtime, device.raw_ordinal())?;
        let occupancy = runtime.cudaOccupancyMaxActiveBlocksPerMultiprocessor()?;
        let mut blocks: c_int = 0;
        // SAFETY: the kernel handle is accepted as the function; `blocks` is a valid out-pointer.
        check(runtime, unsafe {
            occupancy(&mut blocks, self.function(), block, dynamic_shared_mem)
        })?;
        Ok(u32::try_from(blocks).unwrap_or(0))
    }

    /// The handle as the `const void*` function the `cudaFunc*` calls take.
    fn function(&self) -> *const c_void {
        self.raw.cast_const().cast()
    }

    pub(crate) fn raw(&self) -> cudaKernel_t {
        self.raw
    }

    /// The raw handle; `cudaLaunchKernel` and the other `cudaFunc*` calls
    /// accept it cast to `*const c_void`, and it is a driver `CUkernel` after `.cast()`.
    ///
    /// # Safety
    /// Valid while a clone of this kernel lives.
    pub unsafe fn as_raw(&self) -> cudaKernel_t {
        self.raw
    }
}
