//! Stream-ordered memory pools (`CUmemoryPool`), the allocator behind
//! [`DeviceBuffer::alloc_async`](crate::DeviceBuffer::alloc_async). Pools that other processes
//! share are made with [`MemPoolOptions::ipc_enabled`]; exporting and importing them is in
//! `pool_ipc`.

use std::ffi::c_void;
use std::ptr;
use std::sync::Arc;

use cuda_sys::driver::{
    CUmemAccessDesc, CUmemAccess_flags, CUmemAllocationHandleType, CUmemAllocationType, CUmemLocation,
    CUmemLocationType, CUmemPoolProps, CUmemPool_attribute, CUmemoryPool,
};

use crate::error::{check, Error, Result};
use crate::init::api;
use crate::{Context, Device, DeviceAttribute};

/// A memory pool of one device. Cheap to clone. The device's default pool
/// is borrowed (never destroyed); pools from [`MemPool::new`],
/// [`MemPool::with_options`] and [`MemPool::import_fd`] are destroyed
/// when the last clone and the last buffer allocated from them (or imported into them) are gone.
#[derive(Clone)]
pub struct MemPool {
    inner: Arc<MemPoolInner>,
}

/// Where a pool comes from, which decides what may be done with it.
#[derive(Clone, Debug)]
pub(crate) enum PoolOrigin {
    /// The device's default pool: borrowed, never destroyed.
    DeviceDefault,
    /// Made by this process; `exportable` when made with [`MemPoolOptions::ipc_enabled`].
    Created { exportable: bool },
    /// Imported from another process, in this context: no allocations, only imported pointers.
    #[cfg_attr(not(unix), allow(dead_code))] // imports take file descriptors (`pool_ipc`)
    Imported(Context),
}

struct MemPoolInner {
    raw: CUmemoryPool,
    device: Device,
    origin: PoolOrigin,
}

// SAFETY: pool handles may be used from any thread; the driver synchronises
// allocations from one pool.
unsafe impl Send for MemPoolInner {}
// SAFETY: as above; shared access only reads the handle.
unsafe impl Sync for MemPoolInner {}

/// How [`MemPool::with_options`] makes a pool (`CUmemPoolProps`). The default is
/// [`MemPool::new`]'s pool: private to this process, no size limit.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MemPoolOptions {
    /// Whether other processes may import the pool (`handleTypes` =
    /// `CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR`): see [`MemPool::export_fd`]. A device that
    /// cannot share pools so is [`Error::DeviceUnsupported`].
    pub ipc_enabled: bool,
    /// The most bytes the pool may reserve (`maxSize`); 0: no limit but the device's memory.
    /// Drivers older than CUDA 12.2 have no such field and refuse any other value.
    pub max_size: usize,
}

/// Who may access a pool's memory from a device ([`MemPool::set_access`], `CUmemAccess_flags`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PoolAccess {
    /// No access.
    None,
    /// Reads only.
    Read,
    /// Reads and writes.
    ReadWrite,
}

impl PoolAccess {
    fn to_raw(self) -> CUmemAccess_flags {
        match self {
            PoolAccess::None => CUmemAccess_flags::CU_MEM_ACCESS_FLAGS_PROT_NONE,
            PoolAccess::Read => CUmemAccess_flags::CU_MEM_ACCESS_FLAGS_PROT_READ,
            PoolAccess::ReadWrite => CUmemAccess_flags::CU_MEM_ACCESS_FLAGS_PROT_READWRITE,
        }
    }

    fn from_raw(flags: CUmemAccess_flags) -> Result<PoolAccess> {
        match flags {
            CUmemAccess_flags::CU_MEM_ACCESS_FLAGS_PROT_NONE => Ok(PoolAccess::None),
            CUmemAccess_flags::CU_MEM_ACCESS_FLAGS_PROT_READ => Ok(PoolAccess::Read),
            CUmemAccess_flags::CU_MEM_ACCESS_FLAGS_PROT_READWRITE => Ok(PoolAccess::ReadWrite),
            other => Err(Error::InvalidValue(format!(
                "the driver reported pool access flags {} (none, read or read-write expected)",
                other.0
            ))),
        }
    }
}

/// The location of `device`'s memory, for access descriptors and queries.
fn device_location(device: &Device) -> CUmemLocation {
    CUmemLocation {
        type_: CUmemLocationType::CU_MEM_LOCATION_TYPE_DEVICE,
        id: device.as_raw(),
    }
}

/// `Err(Error::DeviceUnsupported)` unless `device` shares memory pools through POSIX file
/// descriptors (`CU_DEVICE_ATTRIBUTE_MEMPOOL_SUPPORTED_HANDLE_TYPES`).
pub(crate) fn require_fd_pools(device: &Device) -> Result<()> {
    let supported = device.attribute(DeviceAttribute::CU_DEVICE_ATTRIBUTE_MEMPOOL_SUPPORTED_HANDLE_TYPES)?;
    let fd = CUmemAllocationHandleType::CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR.0 as i32;
    if supported & fd == 0 {
        return Err(Error::DeviceUnsupported {
            device: device.ordinal(),
            feature: "memory pools shared through POSIX file descriptors \
                      (CU_DEVICE_ATTRIBUTE_MEMPOOL_SUPPORTED_HANDLE_TYPES lacks CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)",
        });
    }
    Ok(())
}

impl MemPool {
    /// The device's default pool (`cuDeviceGetDefaultMemPool`).
    pub fn device_default(device: &Device) -> Result<MemPool> {
        let driver = api()?;
        let mut raw = ptr::null_mut();
        // SAFETY: `raw` is a valid out-pointer.
        check(unsafe { driver.cuDeviceGetDefaultMemPool()?(&mut raw, device.as_raw()) })?;
        Ok(MemPool::from_parts(raw, *device, PoolOrigin::DeviceDefault))
    }

    /// A new pool of device memory on `device`, private to this process (`cuMemPoolCreate`).
    pub fn new(device: &Device) -> Result<MemPool> {
        MemPool::with_options(device, &MemPoolOptions::default())
    }

    /// A new pool of device memory on `device` made as `options` say (`cuMemPoolCreate`); with
    /// [`MemPoolOptions::ipc_enabled`], a device that cannot share it is
    /// [`Error::DeviceUnsupported`] before the pool is made.
    pub fn with_options(device: &Device, options: &MemPoolOptions) -> Result<MemPool> {
        let driver = api()?;
        let mut props = CUmemPoolProps {
            allocType: CUmemAllocationType::CU_MEM_ALLOCATION_TYPE_PINNED,
            location: device_location(device),
            maxSize: options.max_size,
            ..Default::default()
        };
        if options.ipc_enabled {
            require_fd_pools(device)?;
            props.handleTypes = CUmemAllocationHandleType::CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
        }
        let mut raw = ptr::null_mut();
        // SAFETY: `raw` is a valid out-pointer and `props` a fully initialised description.
        check(unsafe { driver.cuMemPoolCreate()?(&mut raw, &props) })?;
        let origin = PoolOrigin::Created {
            exportable: options.ipc_enabled,
        };
        Ok(MemPool::from_parts(raw, *device, origin))
    }

    /// Takes ownership of `raw` (unless it is the device's default pool).
    pub(crate) fn from_parts(raw: CUmemoryPool, device: Device, origin: PoolOrigin) -> MemPool {
        MemPool {
            inner: Arc::new(MemPoolInner { raw, device, origin }),
        }
    }

    /// The device the pool allocates on.
    pub fn device(&self) -> Device {
        self.inner.device
    }

    /// Whether other processes may import the pool and its allocations (made with
    /// [`MemPoolOptions::ipc_enabled`]).
    pub fn is_ipc_enabled(&self) -> bool {
        matches!(self.inner.origin, PoolOrigin::Created { exportable: true })
    }

    /// Whether the pool was imported from another process ([`MemPool::import_fd`]).
    pub fn is_imported(&self) -> bool {
        matches!(self.inner.origin, PoolOrigin::Imported(_))
    }

    pub(crate) fn origin(&self) -> &PoolOrigin {
        &self.inner.origin
    }

    /// Lets `device` access the pool's memory as `access` says (`cuMemPoolSetAccess`): memory
    /// the pool hands out later and memory already out of it. A device the driver cannot give
    /// that access is the driver's error.
    pub fn set_access(&self, device: &Device, access: PoolAccess) -> Result<()> {
        let descriptor = CUmemAccessDesc {
            location: device_location(device),
            flags: access.to_raw(),
        };
        // SAFETY: the pool is alive; one valid descriptor.
        check(unsafe { api()?.cuMemPoolSetAccess()?(self.inner.raw, &descriptor, 1) })
    }

    /// How `device` may access the pool's memory (`cuMemPoolGetAccess`).
    pub fn access(&self, device: &Device) -> Result<PoolAccess> {
        let mut location = device_location(device);
        let mut flags = CUmemAccess_flags::CU_MEM_ACCESS_FLAGS_PROT_NONE;
        // SAFETY: the pool is alive; both pointers are valid locals.
        check(unsafe { api()?.cuMemPoolGetAccess()?(&mut flags, self.inner.raw, &mut location) })?;
        PoolAccess::from_raw(flags)
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
        if matches!(self.origin, PoolOrigin::DeviceDefault) {
            return;
        }
        let result = api().and_then(|driver| {
            // SAFETY: this is the only owner of the pool, and every buffer from it or imported into
            // it (which keeps a clone) is gone; their stream-ordered frees are handled by the driver.
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
            .field("origin", &self.inner.origin)
            .field("raw", &self.inner.raw)
            .finish()
    }
}
