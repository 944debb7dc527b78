//! Managed (unified) memory: one allocation the host and the devices all
//! address (`cuMemAllocManaged`), migrated on demand or ahead of time with
//! prefetches (`cuMemPrefetchAsync`) and usage advice (`cuMemAdvise`).
//!
//! ```no_run
//! use cuda_driver::{Advice, Device, ManagedBuffer, MemoryLocation, Stream};
//!
//! # fn main() -> cuda_driver::Result<()> {
//! let device = Device::get(0)?;
//! let context = device.primary_context()?;
//! let stream = Stream::new(&context)?;
//! let mut data = ManagedBuffer::<f32>::from_slice(&context, &[1.0, 2.0, 3.0])?;
//! data.advise(Advice::SetPreferredLocation(MemoryLocation::Device(device)))?;
//! data.prefetch(MemoryLocation::Device(device), &stream)?;
//! // ... kernels on `stream` take `&mut data` as a pointer argument ...
//! data.prefetch(MemoryLocation::Host, &stream)?;
//! // Host access waits for the context's work first.
//! assert_eq!(data.host_slice()?[2], 3.0);
//! # Ok(())
//! # }
//! ```

use std::ffi::c_void;
use std::marker::PhantomData;
use std::mem::size_of;

use cuda_sys::driver::{CUdeviceptr, CUmemAttach_flags, CUmemLocation, CUmemLocationType, CUmem_advise};

use crate::context::synchronize_current;
use crate::device_copy::byte_len;
use crate::error::{check, Result};
use crate::launch::KernelArg;
use crate::memory::Allocation;
use crate::{Access, Context, Device, DeviceCopy, DeviceMemory, DeviceMemoryMut, Stream, StreamUse};

/// Where memory lives or is wanted: a device, or the host.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MemoryLocation {
    /// Memory of this device.
    Device(Device),
    /// Host memory.
    Host,
}

impl MemoryLocation {
    /// The driver's `CUmemLocation`.
    pub(crate) fn raw(self) -> CUmemLocation {
        match self {
            MemoryLocation::Device(device) => CUmemLocation {
                type_: CUmemLocationType::CU_MEM_LOCATION_TYPE_DEVICE,
                id: device.ordinal() as i32,
            },
            MemoryLocation::Host => CUmemLocation {
                type_: CUmemLocationType::CU_MEM_LOCATION_TYPE_HOST,
                id: 0,
            },
        }
    }
}

/// Usage advice for a range of managed memory (`CUmem_advise`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Advice {
    /// Mostly read: processors that read it may keep read-only copies.
    SetReadMostly,
    /// Undoes [`Advice::SetReadMostly`].
    UnsetReadMostly,
    /// Prefer keeping the pages at this location.
    SetPreferredLocation(MemoryLocation),
    /// Undoes [`Advice::SetPreferredLocation`].
    UnsetPreferredLocation,
    /// This location accesses the memory: keep it mapped there.
    SetAccessedBy(MemoryLocation),
    /// Undoes [`Advice::SetAccessedBy`] for the location.
    UnsetAccessedBy(MemoryLocation),
}

impl Advice {
    fn raw(self) -> (CUmem_advise, CUmemLocation) {
        // The location of the advice that take none is ignored by the driver; the host is given.
        let none = MemoryLocation::Host;
        match self {
            Advice::SetReadMostly => (CUmem_advise::CU_MEM_ADVISE_SET_READ_MOSTLY, none.raw()),
            Advice::UnsetReadMostly => (CUmem_advise::CU_MEM_ADVISE_UNSET_READ_MOSTLY, none.raw()),
            Advice::SetPreferredLocation(at) => (CUmem_advise::CU_MEM_ADVISE_SET_PREFERRED_LOCATION, at.raw()),
            Advice::UnsetPreferredLocation => (CUmem_advise::CU_MEM_ADVISE_UNSET_PREFERRED_LOCATION, none.raw()),
            Advice::SetAccessedBy(at) => (CUmem_advise::CU_MEM_ADVISE_SET_ACCESSED_BY, at.raw()),
            Advice::UnsetAccessedBy(at) => (CUmem_advise::CU_MEM_ADVISE_UNSET_ACCESSED_BY, at.raw()),
        }
    }
}

/// `len` values of `T` in managed memory (`cuMemAllocManaged`, attached
/// globally: any stream of any device may use it), freed on drop after the
/// work that used it.
///
/// Kernels take `&ManagedBuffer` or `&mut ManagedBuffer` as a pointer
/// argument. The host reads and writes it through
/// [`host_slice`](ManagedBuffer::host_slice) and
/// [`host_slice_mut`](ManagedBuffer::host_slice_mut), which first wait for
/// all work of the buffer's context, so the host never races a kernel of it.
pub struct ManagedBuffer<T: DeviceCopy> {
    alloc: Allocation,
    len: usize,
    _marker: PhantomData<T>,
}

// SAFETY: the buffer owns its memory like a `Vec<T>`; host access goes through `&self`/`&mut self`
// after waiting for the context, and the allocation's bookkeeping is atomics and a mutex.
unsafe impl<T: DeviceCopy + Send> Send for ManagedBuffer<T> {}
// SAFETY: shared access only reads (host slices after waiting, or the address).
unsafe impl<T: DeviceCopy + Sync> Sync for ManagedBuffer<T> {}

impl<T: DeviceCopy> ManagedBuffer<T> {
    /// `len` elements of managed memory, zeroed. Zero `len` is an error;
    /// a device without managed memory gives the driver's
    /// `CUDA_ERROR_NOT_SUPPORTED`.
    pub fn new(context: &Context, len: usize) -> Result<Self> {
        let bytes = byte_len::<T>(len)?;
        let driver = context.bind()?;
        let mut ptr = 0;
        let flags = CUmemAttach_flags::CU_MEM_ATTACH_GLOBAL.0;
        // SAFETY: `ptr` is a valid out-pointer; the context is current.
        check(unsafe { driver.cuMemAllocManaged()?(&mut ptr, bytes, flags) })?;
        let buffer = ManagedBuffer {
            alloc: Allocation::new(ptr, context.clone()),
            len,
            _marker: PhantomData,
        };
        // SAFETY: no work has used the new allocation yet; it holds `bytes` host-accessible bytes.
        unsafe { std::ptr::write_bytes(ptr as usize as *mut u8, 0, bytes) };
        Ok(buffer)
    }

    /// Managed memory holding a copy of `data` (not empty).
    pub fn from_slice(context: &Context, data: &[T]) -> Result<Self> {
        let mut buffer = Self::new(context, data.len())?;
        buffer.host_slice_mut()?.copy_from_slice(data);
        Ok(buffer)
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Always false: buffers hold at least one element.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Size in bytes.
    pub fn size_bytes(&self) -> usize {
        self.len * size_of::<T>()
    }

    /// The context the memory was allocated in.
    pub fn context(&self) -> &Context {
        self.alloc.context()
    }

    /// Waits for all work of the context, then gives the contents to the host.
    pub fn host_slice(&self) -> Result<&[T]> {
        self.wait_for_context()?;
        // SAFETY: the allocation holds `len` elements, any bytes are a valid `T` (DeviceCopy), and
        // no work of the context is running; new work that writes it needs a launch, which is
        // `unsafe` and must not race host access (see `Stream::launch`).
        Ok(unsafe { std::slice::from_raw_parts(self.alloc.ptr as usize as *const T, self.len) })
    }

    /// Waits for all work of the context, then gives the contents to the
    /// host for writing.
    pub fn host_slice_mut(&mut self) -> Result<&mut [T]> {
        self.wait_for_context()?;
        // SAFETY: as in `host_slice`; `&mut self` makes this the only access from the host.
        Ok(unsafe { std::slice::from_raw_parts_mut(self.alloc.ptr as usize as *mut T, self.len) })
    }

    fn wait_for_context(&self) -> Result<()> {
        let driver = self.alloc.context().bind()?;
        synchronize_current(driver)
    }

    /// Queues migrating the whole buffer to `location` on `stream`
    /// (`cuMemPrefetchAsync`; needs a device with concurrent managed access).
    pub fn prefetch(&self, location: MemoryLocation, stream: &Stream) -> Result<()> {
        self.alloc
            .context()
            .expect_same(stream.context(), "stream", "managed buffer")?;
        // A migration moves the data without changing it; dropped once the prefetch is queued.
        let _use = self.alloc.begin_use(stream, Access::Read)?;
        let driver = self.alloc.context().bind()?;
        // SAFETY: the range is the live allocation, which stays allocated until the stream's work
        // is done (its use is noted); flags must be 0.
        check(unsafe {
            driver.cuMemPrefetchAsync_v2()?(self.alloc.ptr, self.size_bytes(), location.raw(), 0, stream.raw())
        })
    }

    /// Gives the driver usage advice for the whole buffer (`cuMemAdvise`).
    pub fn advise(&self, advice: Advice) -> Result<()> {
        let (advice, location) = advice.raw();
        let driver = self.alloc.context().bind()?;
        // SAFETY: the range is the live allocation; advice changes performance, not contents.
        check(unsafe { driver.cuMemAdvise_v2()?(self.alloc.ptr, self.size_bytes(), advice, location) })
    }

    /// The address, valid on the host and on every device.
    ///
    /// # Safety
    /// As [`DeviceBuffer::as_raw`](crate::DeviceBuffer::as_raw); host access
    /// through it must not race device work.
    pub unsafe fn as_raw(&self) -> CUdeviceptr {
        self.alloc.ptr
    }
}

macro_rules! managed_args {
    ($($ty:ty => $access:expr),*) => {
        $(
            // SAFETY: points at the buffer's address, which lives as long as the borrow;
            // `check_use` refuses other contexts' kernels and `begin_launch_use` begins the
            // stream's use.
            unsafe impl<T: DeviceCopy> KernelArg for $ty {
                #[inline]
                fn param_ptr(&self) -> *mut c_void {
                    (&self.alloc.ptr as *const CUdeviceptr).cast_mut().cast()
                }

                #[inline]
                fn param_size(&self) -> usize {
                    size_of::<CUdeviceptr>()
                }

                #[inline]
                fn check_use(&self, context: &Context, _stream: &Stream) -> Result<()> {
                    self.alloc.context().expect_same(context, "managed buffer", "function")
                }

                #[inline]
                fn begin_launch_use(&self, context: &Context, stream: &Stream) -> Result<Option<StreamUse<'_>>> {
                    self.check_use(context, stream)?;
                    self.alloc.begin_use(stream, $access).map(Some)
                }
            }
        )*
    };
}

managed_args!(&ManagedBuffer<T> => Access::Read, &mut ManagedBuffer<T> => Access::Write);

// SAFETY: the range is the buffer's own allocation, of its context, and dense (its elements one
// after another); `Allocation`'s drop orders the free after every use begun through its tracker.
unsafe impl<T: DeviceCopy> DeviceMemory for ManagedBuffer<T> {
    fn context(&self) -> &Context {
        self.alloc.context()
    }

    fn device_ptr(&self) -> CUdeviceptr {
        self.alloc.ptr
    }

    fn byte_len(&self) -> usize {
        self.size_bytes()
    }

    #[inline]
    fn begin_use(&self, stream: &Stream, access: Access) -> Result<StreamUse<'_>> {
        self.alloc.begin_use(stream, access)
    }
}

// SAFETY: `&mut ManagedBuffer` is the only access to the buffer.
unsafe impl<T: DeviceCopy> DeviceMemoryMut for ManagedBuffer<T> {}

impl<T: DeviceCopy> std::fmt::Debug for ManagedBuffer<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ManagedBuffer")
            .field("ptr", &format_args!("{:#x}", self.alloc.ptr))
            .field("len", &self.len)
            .finish()
    }
}
