//! Inter-process sharing: device memory and events of one process opened in
//! another (`cuIpcGetMemHandle` / `cuIpcOpenMemHandle`,
//! `cuIpcGetEventHandle` / `cuIpcOpenEventHandle`). A handle is 64 plain
//! bytes to send to the other process any way you like.
//!
//! ```no_run
//! use cuda_driver::{Device, DeviceBuffer, Event, EventFlags, IpcMemHandle, IpcMemory};
//!
//! # fn main() -> cuda_driver::Result<()> {
//! let context = Device::get(0)?.primary_context()?;
//! // In the exporting process:
//! let buffer = DeviceBuffer::from_slice(&context, &[1u32, 2, 3])?;
//! let bytes = buffer.ipc_handle()?.to_bytes();
//! let done = Event::new(&context, EventFlags::INTERPROCESS | EventFlags::DISABLE_TIMING)?;
//! let event_bytes = done.ipc_handle()?.to_bytes();
//! // ... send `bytes` and `event_bytes` to another process, which does:
//! let memory = IpcMemory::<u32>::open(&context, &IpcMemHandle::from_bytes(bytes), 3)?;
//! assert_eq!(memory.to_vec()?, [1, 2, 3]);
//! let _event = Event::open_ipc(&context, &cuda_driver::IpcEventHandle::from_bytes(event_bytes))?;
//! # Ok(())
//! # }
//! ```

use std::ffi::c_void;
use std::marker::PhantomData;
use std::mem::size_of;
use std::ptr;
use std::sync::atomic::{AtomicBool, Ordering};

use cuda_sys::driver::{CUdeviceptr, CUipcEventHandle, CUipcMemHandle, CUipcMem_flags};

use crate::capture::release_when_safe;
use crate::device_copy::byte_len;
use crate::error::{check, check_resolved, Error, Result};
use crate::launch::KernelArg;
use crate::{Context, DeviceBuffer, DeviceCopy, Event, Stream};

/// Bytes in an IPC handle.
pub const IPC_HANDLE_BYTES: usize = 64;

/// Names a device allocation of one process for another (`CUipcMemHandle`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct IpcMemHandle {
    raw: CUipcMemHandle,
}

/// Names an interprocess event of one process for another (`CUipcEventHandle`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct IpcEventHandle {
    raw: CUipcEventHandle,
}

macro_rules! handle_bytes {
    ($ty:ident, $raw:ident) => {
        impl $ty {
            /// The handle's bytes, to send to another process.
            pub fn to_bytes(&self) -> [u8; IPC_HANDLE_BYTES] {
                self.raw.reserved.map(|b| b as u8)
            }

            /// The handle from bytes another process sent. Bytes that name
            /// nothing are refused by the driver when opened.
            pub fn from_bytes(bytes: [u8; IPC_HANDLE_BYTES]) -> Self {
                $ty {
                    raw: $raw {
                        reserved: bytes.map(|b| b as std::ffi::c_char),
                    },
                }
            }
        }
    };
}

handle_bytes!(IpcMemHandle, CUipcMemHandle);
handle_bytes!(IpcEventHandle, CUipcEventHandle);

impl<T: DeviceCopy> DeviceBuffer<T> {
    /// A handle another process opens with [`IpcMemory::open`]
    /// (`cuIpcGetMemHandle`). It names the whole allocation, so this buffer
    /// must outlive the other process's use. Stream-ordered buffers and
    /// others of a memory pool cannot be shared this way (see
    /// [`DeviceBuffer::export_pool_pointer`]): [`Error::InvalidValue`].
    pub fn ipc_handle(&self) -> Result<IpcMemHandle> {
        if self.stream().is_some() || self.pool().is_some() {
            return Err(Error::InvalidValue(
                "stream-ordered (pool) allocations have no IPC memory handle".into(),
            ));
        }
        let driver = self.context().bind()?;
        let mut raw = CUipcMemHandle {
            reserved: [0; IPC_HANDLE_BYTES],
        };
        // SAFETY: valid out-pointer; the buffer's address is the base of a live cuMemAlloc allocation.
        check(unsafe { driver.cuIpcGetMemHandle()?(&mut raw, self.allocation().ptr) })?;
        Ok(IpcMemHandle { raw })
    }
}

impl Event {
    /// A handle another process opens with [`Event::open_ipc`]
    /// (`cuIpcGetEventHandle`). The event must have been created with
    /// [`EventFlags::INTERPROCESS`](crate::EventFlags::INTERPROCESS) and
    /// [`EventFlags::DISABLE_TIMING`](crate::EventFlags::DISABLE_TIMING);
    /// other events get the driver's `CUDA_ERROR_INVALID_VALUE`.
    pub fn ipc_handle(&self) -> Result<IpcEventHandle> {
        let driver = self.context().bind()?;
        let mut raw = CUipcEventHandle {
            reserved: [0; IPC_HANDLE_BYTES],
        };
        // SAFETY: valid out-pointer; the event is alive.
        check(unsafe { driver.cuIpcGetEventHandle()?(&mut raw, self.raw()) })?;
        Ok(IpcEventHandle { raw })
    }

    /// Opens another process's interprocess event in `context`
    /// (`cuIpcOpenEventHandle`): streams here may wait for it and it may be
    /// recorded here. Destroyed on drop like any event.
    pub fn open_ipc(context: &Context, handle: &IpcEventHandle) -> Result<Event> {
        let driver = context.bind()?;
        let mut raw = ptr::null_mut();
        // SAFETY: valid out-pointer; the handle is plain bytes the driver checks; the context is current.
        check(unsafe { driver.cuIpcOpenEventHandle()?(&mut raw, handle.raw) })?;
        Ok(Event::from_parts(raw, context.clone()))
    }
}

/// `len` values of `T` at the start of another process's allocation,
/// opened in `context` (`cuIpcOpenMemHandle`, enabling peer access lazily
/// when the allocation is on another device). Closed on drop, after the
/// work that used it.
///
/// The exporting process owns the memory: it must keep the allocation
/// alive, and order its own work on it, while this process uses it.
pub struct IpcMemory<T: DeviceCopy> {
    ptr: CUdeviceptr,
    len: usize,
    context: Context,
    used_by_stream: AtomicBool,
    _marker: PhantomData<T>,
}

// SAFETY: the mapping may be used and closed from any thread (every operation makes the context
// current); the flag is atomic.
unsafe impl<T: DeviceCopy + Send> Send for IpcMemory<T> {}
// SAFETY: shared access only reads through driver copies or passes the address.
unsafe impl<T: DeviceCopy + Sync> Sync for IpcMemory<T> {}

impl<T: DeviceCopy> IpcMemory<T> {
    /// Opens `handle` (from another process) in `context` and views its
    /// first `len` elements. `len` must be at least one and fit in the
    /// allocation (checked with `cuMemGetAddressRange`), else
    /// [`Error::InvalidValue`]; opening a handle of this same process is
    /// the driver's error.
    pub fn open(context: &Context, handle: &IpcMemHandle, len: usize) -> Result<Self> {
        let bytes = byte_len::<T>(len)?;
        let driver = context.bind()?;
        let mut ptr = 0;
        let flags = CUipcMem_flags::CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS.0;
        // SAFETY: valid out-pointer; the handle is plain bytes the driver checks; the context is current.
        check(unsafe { driver.cuIpcOpenMemHandle_v2()?(&mut ptr, handle.raw, flags) })?;
        let memory = IpcMemory {
            ptr,
            len,
            context: context.clone(),
            used_by_stream: AtomicBool::new(false),
            _marker: PhantomData,
        };
        let (mut base, mut size) = (0, 0);
        // SAFETY: both out-pointers are valid; `ptr` was just mapped.
        check(unsafe { driver.cuMemGetAddressRange_v2()?(&mut base, &mut size, ptr) })?;
        let available = size.saturating_sub((ptr - base) as usize);
        if bytes > available {
            return Err(Error::InvalidValue(format!(
                "{len} elements ({bytes} bytes) do not fit in the {available} bytes shared"
            )));
        }
        Ok(memory)
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Always false: the view holds at least one element.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The context the memory is opened in.
    pub fn context(&self) -> &Context {
        &self.context
    }

    fn bytes(&self) -> usize {
        self.len * size_of::<T>()
    }

    /// Writes `data` (the view's length), waiting until done.
    pub fn copy_from_host(&mut self, data: &[T]) -> Result<()> {
        if data.len() != self.len {
            return Err(Error::InvalidValue(format!(
                "copy_from_host: the memory holds {} elements, {} were given",
                self.len,
                data.len()
            )));
        }
        let driver = self.context.bind()?;
        // SAFETY: the mapping holds `bytes` (checked at open); `data` holds as many.
        check(unsafe { driver.cuMemcpyHtoD_v2()?(self.ptr, data.as_ptr().cast(), self.bytes()) })
    }

    /// The contents in a new `Vec`, waiting until read.
    pub fn to_vec(&self) -> Result<Vec<T>> {
        let mut out = Vec::<T>::with_capacity(self.len);
        let driver = self.context.bind()?;
        // SAFETY: the mapping holds `bytes` (checked at open); `out` has room for them.
        check(unsafe { driver.cuMemcpyDtoH_v2()?(out.as_mut_ptr().cast(), self.ptr, self.bytes()) })?;
        // SAFETY: the copy wrote `len` elements; any bytes are a valid `T` (DeviceCopy).
        unsafe { out.set_len(self.len) };
        Ok(out)
    }

    /// The address in this process.
    ///
    /// # Safety
    /// Valid while this view lives and the exporter keeps the allocation.
    pub unsafe fn as_raw(&self) -> CUdeviceptr {
        self.ptr
    }
}

macro_rules! ipc_args {
    ($($ty:ty),*) => {
        $(
            // SAFETY: points at the mapped address, which lives as long as the borrow; `check_use`
            // refuses other contexts' kernels and notes that a stream used the memory.
            unsafe impl<T: DeviceCopy> KernelArg for $ty {
                #[inline]
                fn param_ptr(&self) -> *mut c_void {
                    (&self.ptr as *const CUdeviceptr).cast_mut().cast()
                }

                #[inline]
                fn param_size(&self) -> usize {
                    size_of::<CUdeviceptr>()
                }

                #[inline]
                fn check_use(&self, context: &Context, _stream: &Stream) -> Result<()> {
                    self.context.expect_same(context, "IPC memory", "function")?;
                    self.used_by_stream.store(true, Ordering::Relaxed);
                    Ok(())
                }
            }
        )*
    };
}

ipc_args!(&IpcMemory<T>, &mut IpcMemory<T>);

impl<T: DeviceCopy> Drop for IpcMemory<T> {
    /// Closes the mapping after the work that used it (while a capture is
    /// active, when it ends); a failure is recorded on the context.
    fn drop(&mut self) {
        let (ptr, used) = (self.ptr, *self.used_by_stream.get_mut());
        release_when_safe(&self.context, "closing IPC memory", used, move |driver, context| {
            // SAFETY: this view opened the mapping and no work uses it any more.
            let closed = driver.cuIpcCloseMemHandle().map(|close| unsafe { close(ptr) });
            context.record_drop_result("cuIpcCloseMemHandle", check_resolved(closed));
        });
    }
}

impl<T: DeviceCopy> std::fmt::Debug for IpcMemory<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IpcMemory")
            .field("ptr", &format_args!("{:#x}", self.ptr))
            .field("len", &self.len)
            .finish()
    }
}
