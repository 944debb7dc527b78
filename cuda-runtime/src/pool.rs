//! The stream-ordered allocator's per-device pool (`cudaMemPool_t`).

use std::ffi::c_void;

use cuda_sys::runtime::{cudaMemPoolAttr, cudaMemPool_t};

use crate::error::check;
use crate::{runtime, Device, Result};

/// A device's default memory pool, the one
/// [`DeviceMemory::zeroed_async`](crate::DeviceMemory::zeroed_async) and
/// [`uninit_async`](crate::DeviceMemory::uninit_async) allocate from. The
/// device owns it; this is a handle to it.
#[derive(Clone, Copy, Debug)]
pub struct MemPool {
    raw: cudaMemPool_t,
    device: Device,
}

// SAFETY: a pool handle is a token the runtime accepts from any thread, and
// the runtime synchronises its attribute calls.
unsafe impl Send for MemPool {}
// SAFETY: as above.
unsafe impl Sync for MemPool {}

impl MemPool {
    /// `device`'s default pool (`cudaDeviceGetDefaultMemPool`).
    pub fn device_default(device: Device) -> Result<MemPool> {
        let runtime = runtime()?;
        let mut raw: cudaMemPool_t = std::ptr::null_mut();
        // SAFETY: `raw` is a valid out-pointer.
        check(runtime, unsafe {
            runtime.cudaDeviceGetDefaultMemPool()?(&mut raw, device.raw_ordinal())
        })?;
        Ok(MemPool { raw, device })
    }

    /// The device the pool belongs to.
    pub fn device(&self) -> Device {
        self.device
    }

    fn get(&self, attribute: cudaMemPoolAttr) -> Result<u64> {
        let runtime = runtime()?;
        let mut value = 0u64;
        let out = std::ptr::addr_of_mut!(value).cast::<c_void>();
        // SAFETY: every attribute read here is a 64-bit value, written to `value`.
        check(runtime, unsafe {
            runtime.cudaMemPoolGetAttribute()?(self.raw, attribute, out)
        })?;
        Ok(value)
    }

    /// Bytes the pool keeps reserved at a synchronisation instead of giving
    /// back to the system (`cudaMemPoolAttrReleaseThreshold`; 0 by default).
    pub fn release_threshold(&self) -> Result<u64> {
        self.get(cudaMemPoolAttr::cudaMemPoolAttrReleaseThreshold)
    }

    /// Sets the release threshold; `u64::MAX` keeps everything, which makes
    /// repeated stream-ordered allocations as cheap as a pool hit.
    pub fn set_release_threshold(&self, bytes: u64) -> Result<()> {
        let runtime = runtime()?;
        let mut value = bytes;
        let attribute = cudaMemPoolAttr::cudaMemPoolAttrReleaseThreshold;
        let input = std::ptr::addr_of_mut!(value).cast::<c_void>();
        // SAFETY: the threshold is a 64-bit value read from `value`.
        check(runtime, unsafe {
            runtime.cudaMemPoolSetAttribute()?(self.raw, attribute, input)
        })
    }

    /// Bytes the pool holds from the system now (`cudaMemPoolAttrReservedMemCurrent`).
    pub fn reserved_bytes(&self) -> Result<u64> {
        self.get(cudaMemPoolAttr::cudaMemPoolAttrReservedMemCurrent)
    }

    /// Bytes handed out to allocations now (`cudaMemPoolAttrUsedMemCurrent`).
    pub fn used_bytes(&self) -> Result<u64> {
        self.get(cudaMemPoolAttr::cudaMemPoolAttrUsedMemCurrent)
    }

    /// Gives reserved but unused memory back until at most `keep_bytes`
    /// remain reserved (`cudaMemPoolTrimTo`).
    pub fn trim_to(&self, keep_bytes: usize) -> Result<()> {
        let runtime = runtime()?;
        // SAFETY: the pool is valid while the device is; the call takes no pointers.
        check(runtime, unsafe { runtime.cudaMemPoolTrimTo()?(self.raw, keep_bytes) })
    }
}
