//! Memory pools shared between processes: a pool made with
//! [`MemPoolOptions::ipc_enabled`](crate::MemPoolOptions::ipc_enabled) is exported as a POSIX
//! file descriptor ([`MemPool::export_fd`], `cuMemPoolExportToShareableHandle`) and imported in
//! another process ([`MemPool::import_fd`]); each allocation from it is then exported as plain
//! bytes ([`DeviceBuffer::export_pool_pointer`], `cuMemPoolExportPointer`) and imported into the
//! imported pool ([`MemPool::import_pointer`], `cuMemPoolImportPointer`).
//!
//! The file descriptor travels like any other: over a Unix socket (`SCM_RIGHTS`), or inherited by
//! a child process (with `std` alone, as the child's standard input: `Stdio::from(fd)`).
//! Reopening `/proc/<pid>/fd/<n>` opens the file anew and does not share the pool.
//!
//! The rules of the driver that no type here can enforce across processes:
//! - the importer may use an allocation only after its allocation completed in the exporter
//!   (synchronise the allocating stream, or send an interprocess event, before exporting);
//! - every importer frees an imported allocation (drops its buffer) before the exporter frees it.
//!
//! ```no_run
//! use std::os::fd::AsFd;
//! use cuda_driver::{Device, DeviceBuffer, MemPool, MemPoolOptions, PoolPointerExport, Stream};
//!
//! # fn main() -> cuda_driver::Result<()> {
//! let device = Device::get(0)?;
//! let context = device.primary_context()?;
//! // In the exporting process:
//! let options = MemPoolOptions { ipc_enabled: true, ..Default::default() };
//! let pool = MemPool::with_options(&device, &options)?;
//! let stream = Stream::new(&context)?;
//! let mut buffer = DeviceBuffer::<u32>::alloc_from_pool_async(&pool, &stream, 3)?;
//! buffer.copy_from_host(&[1, 2, 3])?;
//! let fd = pool.export_fd()?;
//! let bytes = buffer.export_pool_pointer()?.to_bytes();
//! // ... send `fd` and `bytes` to another process, which does:
//! let imported = MemPool::import_fd(&context, fd.as_fd())?;
//! // SAFETY: `bytes` are those `export_pool_pointer` made, sent unchanged.
//! let shared = unsafe { imported.import_pointer::<u32>(&PoolPointerExport::from_bytes(bytes))? };
//! assert_eq!(shared.to_vec()?, [1, 2, 3]);
//! drop(shared); // before the exporter drops `buffer`
//! # Ok(())
//! # }
//! ```

use std::ffi::c_void;
use std::mem::size_of;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::ptr;

use cuda_sys::driver::{CUmemAllocationHandleType, CUmemPoolPtrExportData};

use crate::error::{check, Error, Result};
use crate::init::api;
use crate::pool::{require_fd_pools, PoolOrigin};
use crate::{Context, DeviceBuffer, DeviceCopy, MemPool, PoolAccess};

/// Bytes of a [`PoolPointerExport`]: the driver's 64 bytes and the allocation's size.
pub const POOL_POINTER_EXPORT_BYTES: usize = 72;

/// Names one allocation of an exported pool for another process: the driver's
/// `CUmemPoolPtrExportData` and the allocation's size in bytes. Plain bytes, to send any way
/// you like.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct PoolPointerExport {
    data: CUmemPoolPtrExportData,
    bytes: u64,
}

impl PoolPointerExport {
    /// The size of the allocation in bytes.
    pub fn byte_len(&self) -> u64 {
        self.bytes
    }

    /// The bytes to send: the driver's data, then the size (little-endian).
    pub fn to_bytes(&self) -> [u8; POOL_POINTER_EXPORT_BYTES] {
        let mut out = [0u8; POOL_POINTER_EXPORT_BYTES];
        out[..64].copy_from_slice(&self.data.reserved);
        out[64..].copy_from_slice(&self.bytes.to_le_bytes());
        out
    }

    /// From bytes another process sent. Data that names no allocation of the imported pool is
    /// refused by the driver when imported.
    pub fn from_bytes(bytes: [u8; POOL_POINTER_EXPORT_BYTES]) -> Self {
        let mut data = CUmemPoolPtrExportData { reserved: [0; 64] };
        data.reserved.copy_from_slice(&bytes[..64]);
        let mut size = [0u8; 8];
        size.copy_from_slice(&bytes[64..]);
        PoolPointerExport {
            data,
            bytes: u64::from_le_bytes(size),
        }
    }
}

const FD_HANDLE: CUmemAllocationHandleType = CUmemAllocationHandleType::CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;

impl MemPool {
    /// A file descriptor another process imports the pool with ([`MemPool::import_fd`];
    /// `cuMemPoolExportToShareableHandle`). Closed when dropped; the pool stays shared with the
    /// processes that imported it. A pool made without
    /// [`MemPoolOptions::ipc_enabled`](crate::MemPoolOptions::ipc_enabled), and an imported
    /// one, is [`Error::NotShareable`].
    pub fn export_fd(&self) -> Result<OwnedFd> {
        if !self.is_ipc_enabled() {
            return Err(Error::NotShareable {
                reason: "only a pool made with MemPoolOptions::ipc_enabled exports a file descriptor",
            });
        }
        let mut fd: i32 = -1;
        // SAFETY: the pool is alive; for a POSIX file descriptor the driver writes an `int`
        // through the out-pointer; flags must be 0.
        check(unsafe {
            api()?.cuMemPoolExportToShareableHandle()?((&mut fd as *mut i32).cast::<c_void>(), self.raw(), FD_HANDLE, 0)
        })?;
        if fd < 0 {
            return Err(Error::InvalidValue(format!(
                "cuMemPoolExportToShareableHandle succeeded but gave file descriptor {fd}"
            )));
        }
        // SAFETY: the driver just opened `fd` for the caller, who owns it and must close it.
        Ok(unsafe { OwnedFd::from_raw_fd(fd) })
    }

    /// Imports another process's pool from the file descriptor it exported
    /// ([`MemPool::export_fd`]; `cuMemPoolImportFromShareableHandle`) into `context`, and makes
    /// its memory readable and writable from `context`'s device (`cuMemPoolSetAccess`, when it
    /// is not already). The pool is of `context`'s device, which must be the exporter's device
    /// (as this process numbers it). The descriptor stays the caller's to close (descriptor 0 is
    /// duplicated for the call, since the driver would read its number as no handle). Destroyed on
    /// drop, once the pointers imported into it are freed; it hands out no allocations of its
    /// own. A device that cannot share pools through file descriptors is
    /// [`Error::DeviceUnsupported`].
    pub fn import_fd(context: &Context, fd: BorrowedFd<'_>) -> Result<MemPool> {
        let device = context.device();
        require_fd_pools(&device)?;
        // The driver takes the descriptor's number in the pointer-sized argument, where 0 (a
        // child's standard input, say) would read as no handle: that one is duplicated first.
        let duplicate = match fd.as_raw_fd() {
            0 => Some(fd.try_clone_to_owned().map_err(|error| {
                Error::InvalidValue(format!(
                    "duplicating file descriptor 0 to import a pool failed: {error}"
                ))
            })?),
            _ => None,
        };
        let number = duplicate.as_ref().map_or(fd.as_raw_fd(), AsRawFd::as_raw_fd);
        let driver = context.bind()?;
        let mut raw = ptr::null_mut();
        let handle = number as usize as *mut c_void;
        // SAFETY: valid out-pointer; the descriptor is open for the call; flags must be 0.
        check(unsafe { driver.cuMemPoolImportFromShareableHandle()?(&mut raw, handle, FD_HANDLE, 0) })?;
        let pool = MemPool::from_parts(raw, device, PoolOrigin::Imported(context.clone()));
        if pool.access(&device)? != PoolAccess::ReadWrite {
            pool.set_access(&device, PoolAccess::ReadWrite)?;
        }
        Ok(pool)
    }

    /// The allocation `export` names ([`DeviceBuffer::export_pool_pointer`] in the process that
    /// exported this pool; `cuMemPoolImportPointer`), as a buffer of this pool's context holding
    /// `export.byte_len() / size_of::<T>()` elements. The buffer keeps this pool alive and frees
    /// the import (`cuMemFree`, after the streams that used it) when dropped, which must happen
    /// before the exporter frees the allocation. Import each export once per process. A pool
    /// that was not imported is [`Error::NotShareable`]; a size that is zero or not a whole
    /// number of `T` is [`Error::InvalidValue`].
    ///
    /// # Safety
    /// The size is the exporter's word: it is not checked against the allocation here (no
    /// driver query is documented to give a pool allocation's own extent), and the buffer's safe
    /// copies and launches reach as far as it says. `export` must be what
    /// [`DeviceBuffer::export_pool_pointer`] made for an allocation of the pool this one was
    /// imported from, its size unchanged (as [`PoolPointerExport::to_bytes`] sent it).
    pub unsafe fn import_pointer<T: DeviceCopy>(&self, export: &PoolPointerExport) -> Result<DeviceBuffer<T>> {
        let PoolOrigin::Imported(context) = self.origin() else {
            return Err(Error::NotShareable {
                reason: "pointers are imported into a pool imported from another process (MemPool::import_fd)",
            });
        };
        let bytes = usize::try_from(export.bytes)
            .map_err(|_| Error::InvalidValue(format!("{} bytes do not fit in this process", export.bytes)))?;
        let element = size_of::<T>().max(1);
        if bytes == 0 || bytes % element != 0 {
            return Err(Error::InvalidValue(format!(
                "an imported allocation of {bytes} bytes is not a whole, non-zero number of {element}-byte elements"
            )));
        }
        let driver = context.bind()?;
        let mut data = export.data;
        let mut address = 0;
        // SAFETY: valid out-pointer; the pool is alive and imported; the data is plain bytes the
        // driver checks.
        check(unsafe { driver.cuMemPoolImportPointer()?(&mut address, self.raw(), &mut data) })?;
        Ok(DeviceBuffer::from_pool_import(
            address,
            bytes / element,
            context.clone(),
            self.clone(),
        ))
    }
}

impl<T: DeviceCopy> DeviceBuffer<T> {
    /// Names this buffer for a process that imported its pool ([`MemPool::import_pointer`];
    /// `cuMemPoolExportPointer`). The other process may use the memory only once its allocation
    /// has completed here (synchronise the buffer's stream first, or send an interprocess
    /// event), and must drop its import before this buffer is dropped. A buffer not allocated
    /// from a pool made with
    /// [`MemPoolOptions::ipc_enabled`](crate::MemPoolOptions::ipc_enabled) (plain, from the
    /// device's pool, or itself imported) is [`Error::NotShareable`].
    pub fn export_pool_pointer(&self) -> Result<PoolPointerExport> {
        if !self.pool().is_some_and(MemPool::is_ipc_enabled) {
            return Err(Error::NotShareable {
                reason: "only memory allocated from a pool made with MemPoolOptions::ipc_enabled exports a pointer",
            });
        }
        let driver = self.context().bind()?;
        let mut data = CUmemPoolPtrExportData { reserved: [0; 64] };
        // SAFETY: valid out-pointer; the buffer's address is the base of a live allocation of an
        // exportable pool.
        check(unsafe { driver.cuMemPoolExportPointer()?(&mut data, self.allocation().ptr) })?;
        Ok(PoolPointerExport {
            data,
            bytes: self.size_bytes() as u64,
        })
    }
}
