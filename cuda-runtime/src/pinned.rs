//! Page-locked host memory (`cudaHostAlloc`), for truly asynchronous copies.

use std::ffi::c_void;
use std::ops::{Deref, DerefMut};
use std::ptr::NonNull;

use crate::device::make_current;
use crate::error::check;
use crate::memory::byte_len;
use crate::{runtime, Device, DeviceCopy, Result};

bitflags::bitflags! {
    /// Pinned allocation flags (`cudaHostAlloc`).
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
    pub struct HostAllocFlags: u32 {
        /// Pinned for every context, not only the allocating device's.
        const PORTABLE = cuda_sys::runtime::cudaHostAllocPortable;
        /// Mapped into the device address space.
        const MAPPED = cuda_sys::runtime::cudaHostAllocMapped;
        /// Write-combined: fast host writes and device reads, slow host reads.
        const WRITE_COMBINED = cuda_sys::runtime::cudaHostAllocWriteCombined;
    }
}

/// `len` elements of `T` in page-locked host memory, freed with
/// `cudaFreeHost` on drop. Dereferences to `[T]`; always initialised.
#[derive(Debug)]
pub struct PinnedHostMemory<T: DeviceCopy> {
    ptr: NonNull<T>,
    len: usize,
    device: Device,
    flags: HostAllocFlags,
}

// SAFETY: owned host memory like a `Box<[T]>`; freeing needs no particular thread.
unsafe impl<T: DeviceCopy + Send> Send for PinnedHostMemory<T> {}
// SAFETY: shared access only reads through `&[T]`.
unsafe impl<T: DeviceCopy + Sync> Sync for PinnedHostMemory<T> {}

impl<T: DeviceCopy> PinnedHostMemory<T> {
    /// Allocates `len` zeroed elements, pinned for `device`'s context (or for
    /// all with [`HostAllocFlags::PORTABLE`]).
    pub fn zeroed(device: Device, len: usize, flags: HostAllocFlags) -> Result<Self> {
        let bytes = byte_len::<T>(len)?;
        let mut ptr = NonNull::<T>::dangling();
        if bytes > 0 {
            let runtime = runtime()?;
            make_current(runtime, device.raw_ordinal())?;
            let mut raw: *mut c_void = std::ptr::null_mut();
            // SAFETY: `raw` is a valid out-pointer; flags are the header's bits.
            check(runtime, unsafe {
                runtime.cudaHostAlloc()?(&mut raw, bytes, flags.bits())
            })?;
            ptr = NonNull::new(raw.cast())
                .ok_or_else(|| crate::Error::InvalidValue("cudaHostAlloc returned null".into()))?;
            // SAFETY: a host allocation of `bytes` bytes, page aligned (so
            // aligned for `T`), owned by us; zero is a valid `T`.
            unsafe { std::ptr::write_bytes(ptr.as_ptr().cast::<u8>(), 0, bytes) };
        }
        Ok(Self {
            ptr,
            len,
            device,
            flags,
        })
    }

    /// Allocates and copies `data` in.
    pub fn from_slice(device: Device, data: &[T], flags: HostAllocFlags) -> Result<Self> {
        let mut memory = Self::zeroed(device, data.len(), flags)?;
        memory.copy_from_slice(data);
        Ok(memory)
    }

    /// The device it was pinned for.
    pub fn device(&self) -> Device {
        self.device
    }

    /// The allocation flags.
    pub fn flags(&self) -> HostAllocFlags {
        self.flags
    }
}

impl<T: DeviceCopy> Deref for PinnedHostMemory<T> {
    type Target = [T];

    fn deref(&self) -> &[T] {
        // SAFETY: `len` initialised elements (or dangling with len 0), owned by `self`.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

impl<T: DeviceCopy> DerefMut for PinnedHostMemory<T> {
    fn deref_mut(&mut self) -> &mut [T] {
        // SAFETY: as in `deref`, and `&mut self` is unique.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }
}

impl<T: DeviceCopy> Drop for PinnedHostMemory<T> {
    fn drop(&mut self) {
        if self.len == 0 || std::mem::size_of::<T>() == 0 {
            return;
        }
        let Ok(runtime) = runtime() else { return };
        if make_current(runtime, self.device.raw_ordinal()).is_err() {
            return;
        }
        if let Ok(free) = runtime.cudaFreeHost() {
            // SAFETY: allocated by `cudaHostAlloc` and owned only by `self`. An
            // error cannot be reported from `drop`; the memory leaks instead.
            let _ = unsafe { free(self.ptr.as_ptr().cast()) };
        }
    }
}
