//! Stream-ordered memory pools (`CUmemoryPool`), the allocator behind
//! [`DeviceBuffer::alloc_async`](crate::DeviceBuffer::alloc_async).

use std::ffi::c_void;
use std::ptr;
use std::sync::Arc;

use cuda_sys::driver::{CUmemAllocationType, CUmemLocationType, CUmemPoolProps, CUmemPool_attribute, CUmemoryPool};

use crate::error::{check, Result};
use crate::init::api;
use crate::Device;

/// A memory pool of one device. Cheap to clone. The device's default pool
/// is borrowed (never destroyed); pools from [`MemPool::new`] are destroyed
/// when the last clone and the last buffer allocated from them are gone.
#[derive(Clone)]
pub struct MemPool {
    inner: Arc<MemPoolInner>,
}

struct MemPoolInner {
    raw: CUmemoryPool,
    device: Device,
    owned: bool,
}

// SAFETY: pool handles may be used from any thread; the driver synchronises
// allocations from one pool.
unsafe impl Send for MemPoolInner {}
// SAFETY: as above; shared access only reads the handle.
unsafe impl Sync for MemPoolInner {}

impl MemPool {
    /// The device's default pool (`cuDeviceGetDefaultMemPool`).
    pub fn device_default(device: &Device) -> Result<MemPool> {
        let driver = api()?;
        let mut raw = ptr::null_mut();
        // SAFETY: `raw` is a valid out-pointer.
        check(unsafe { driver.cuDeviceGetDefaultMemPool()?(&mut raw, device.as_raw()) })?;
        Ok(MemPool {
            inner: Arc::new(MemPoolInner {
                raw,
                device: *device,
                owned: false,
            }),
        })
    }

    /// A new pool of device memory on `device` (`cuMemPoolCreate`).
    pub fn new(device: &Device) -> Result<MemPool> {
        let driver = api()?;
        let mut props = CUmemPoolProps {
            allocType: CUmemAllocationType::CU_MEM_ALLOCATION_TYPE_PINNED,
            ..Default::default()
        };
        props.location.type_ = CUmemLocationType::CU_MEM_LOCATION_TYPE_DEVICE;
        props.location.id = device.as_raw();
        let mut raw = ptr::null_mut();
        // SAFETY: `raw` is a valid out-pointer and `props` a fully initialised description.
        check(unsafe { driver.cuMemPoolCreate()?(&mut raw, &props) })?;
        Ok(MemPool {
            inner: Arc::new(MemPoolInner {
                raw,
                device: *device,
                owned: true,
            }),
        })
    }

    /// The device the pool allocates on.
    pub fn device(&self) -> Device {
        self.inner.device
    }

    fn get_u64(&self, attribute: CUmemPool_attribute) -> Result<u64> {
        let mut value = 0u64;
        // SAFETY: every attribute read here is a 64-bit value; the pointer is a valid local.
        check(unsafe {
            api()?.cuMemPoolGetAttribute()?(self.inner.raw, attribute, (&mut value as *mut u64).cast::<c_void>())
        })?;
        Ok(value)
    }

    /// Bytes of reserved memory the pool keeps instead of releasing to the
    /// system at synchronisation points.
    pub fn release_threshold(&self) -> Result<u64> {
        self.get_u64(CUmemPool_attribute::CU_MEMPOOL_ATTR_RELEASE_THRESHOLD)
    }

    /// Sets the release threshold (`u64::MAX` keeps everything).
    pub fn set_release_threshold(&self, bytes: u64) -> Result<()> {
        let mut value = bytes;
        // SAFETY: the release threshold is a 64-bit value; the pointer is a valid local.
        check(unsafe {
            api()?.cuMemPoolSetAttribute()?(
                self.inner.raw,
                CUmemPool_attribute::CU_MEMPOOL_ATTR_RELEASE_THRESHOLD,
                (&mut value as *mut u64).cast::<c_void>(),
            )
        })
    }

    /// Bytes currently allocated from the pool.
    pub fn used_memory(&self) -> Result<u64> {
        self.get_u64(CUmemPool_attribute::CU_MEMPOOL_ATTR_USED_MEM_CURRENT)
    }

    /// Bytes of device memory the pool currently reserves.
    pub fn reserved_memory(&self) -> Result<u64> {
        self.get_u64(CUmemPool_attribute::CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT)
    }

    /// Releases reserved memory down to `keep_bytes` (`cuMemPoolTrimTo`).
    pub fn trim_to(&self, keep_bytes: usize) -> Result<()> {
        // SAFETY: the pool is alive.
        check(unsafe { api()?.cuMemPoolTrimTo()?(self.inner.raw, keep_bytes) })
    }

    /// The driver's handle.
    ///
    /// # Safety
    /// Valid only while this pool (or a clone) is alive; the caller must not destroy it.
    pub unsafe fn as_raw(&self) -> CUmemoryPool {
        self.inner.raw
    }

    pub(crate) fn raw(&self) -> CUmemoryPool {
        self.inner.raw
    }
}

impl Drop for MemPoolInner {
    fn drop(&mut self) {
        if !self.owned {
            return;
        }
        let result = api().and_then(|driver| {
            // SAFETY: this is the only owner of the pool, and every buffer from it (which keeps
            // a clone) is gone; their stream-ordered frees are handled by the driver.
            check(unsafe { driver.cuMemPoolDestroy()?(self.raw) })
        });
        if let Err(error) = result {
            eprintln!("cuda-driver: cuMemPoolDestroy failed while dropping: {error}");
        }
    }
}

impl std::fmt::Debug for MemPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemPool")
            .field("device", &self.inner.device.ordinal())
            .field("raw", &self.inner.raw)
            .finish()
    }
}
