//! Virtual memory management: a [`VirtualBuffer`] reserves a range of
//! device addresses once (`cuMemAddressReserve`) and backs more of it with
//! physical memory as it grows (`cuMemCreate`, `cuMemMap`,
//! `cuMemSetAccess`), so its base address never changes and pointers into it
//! stay valid: what growable arrays and allocators built on this crate need.
//!
//! ```no_run
//! use cuda_driver::{Device, VirtualBuffer};
//!
//! # fn main() -> cuda_driver::Result<()> {
//! let context = Device::get(0)?.primary_context()?;
//! // Room for a million floats, none of it backed yet.
//! let mut buffer = VirtualBuffer::<f32>::reserve(&context, 1 << 20)?;
//! buffer.grow(1000)?;
//! buffer.copy_from_host(0, &[1.0; 1000])?;
//! // SAFETY: only the address is read, to compare it.
//! let base = unsafe { buffer.as_raw() };
//! buffer.grow(500_000)?; // maps more physical memory after the first
//! assert_eq!(unsafe { buffer.as_raw() }, base);
//! assert_eq!(buffer.to_vec()?[..1000], [1.0; 1000]);
//! # Ok(())
//! # }
//! ```

use std::ffi::c_void;
use std::marker::PhantomData;
use std::mem::{size_of, size_of_val};
use std::ptr;
use std::sync::atomic::{AtomicBool, Ordering};

use cuda_sys::driver::{
    CUdeviceptr, CUmemAccessDesc, CUmemAccess_flags, CUmemAllocationGranularity_flags, CUmemAllocationHandleType,
    CUmemAllocationProp, CUmemAllocationProp_st__bindgen_ty_1, CUmemAllocationType, CUmemGenericAllocationHandle,
};

use crate::capture::release_when_safe;
use crate::device_copy::byte_len;
use crate::error::{check, check_resolved, Error, Result};
use crate::launch::KernelArg;
use crate::{Context, DeviceCopy, MemoryLocation, Stream};

/// One physical allocation mapped into the range.
struct Chunk {
    handle: CUmemGenericAllocationHandle,
    offset: usize,
    size: usize,
}

/// Device memory of up to `capacity` elements of `T` at one fixed base
/// address, of which the first `len` are backed by physical memory of the
/// context's device and readable and writable from it. Growing maps more
/// physical memory behind the mapped part; nothing moves. Contents of new
/// elements are unspecified until written.
///
/// Dropping it waits for the context's work (if a stream used it), then
/// unmaps and releases every piece and frees the address range.
pub struct VirtualBuffer<T: DeviceCopy> {
    base: CUdeviceptr,
    reserved: usize,
    granularity: usize,
    len: usize,
    chunks: Vec<Chunk>,
    context: Context,
    used_by_stream: AtomicBool,
    _marker: PhantomData<T>,
}

// SAFETY: the buffer owns its address range and physical memory like a `Vec<T>` owns its heap
// memory; the handles may be used from any thread (every operation makes the context current).
unsafe impl<T: DeviceCopy + Send> Send for VirtualBuffer<T> {}
// SAFETY: shared access only reads (device to host copies, the address); the flag is atomic.
unsafe impl<T: DeviceCopy + Sync> Sync for VirtualBuffer<T> {}

/// The allocation properties of plain device memory of `context`'s device.
fn properties(context: &Context) -> CUmemAllocationProp {
    CUmemAllocationProp {
        type_: CUmemAllocationType::CU_MEM_ALLOCATION_TYPE_PINNED,
        requestedHandleTypes: CUmemAllocationHandleType::CU_MEM_HANDLE_TYPE_NONE,
        location: MemoryLocation::Device(context.device()).raw(),
        win32HandleMetaData: ptr::null_mut(),
        allocFlags: CUmemAllocationProp_st__bindgen_ty_1::default(),
    }
}

/// `bytes` rounded up to a multiple of `granularity`, or an error on overflow.
fn round_up(bytes: usize, granularity: usize) -> Result<usize> {
    bytes
        .checked_next_multiple_of(granularity)
        .ok_or_else(|| Error::InvalidValue(format!("{bytes} bytes overflow when rounded to {granularity}")))
}

impl<T: DeviceCopy> VirtualBuffer<T> {
    /// Reserves addresses for `capacity` elements (rounded up to the
    /// device's allocation granularity), with none backed yet. Zero
    /// `capacity` is [`Error::InvalidValue`].
    pub fn reserve(context: &Context, capacity: usize) -> Result<Self> {
        let bytes = byte_len::<T>(capacity)?;
        let driver = context.bind()?;
        let properties = properties(context);
        let mut granularity = 0;
        // SAFETY: valid out-pointer and properties; the context is current.
        check(unsafe {
            driver.cuMemGetAllocationGranularity()?(
                &mut granularity,
                &properties,
                CUmemAllocationGranularity_flags::CU_MEM_ALLOC_GRANULARITY_MINIMUM,
            )
        })?;
        if granularity == 0 {
            return Err(Error::InvalidValue(
                "the driver reports an allocation granularity of 0".into(),
            ));
        }
        let reserved = round_up(bytes, granularity)?;
        let mut base = 0;
        // SAFETY: valid out-pointer; alignment 0 and address 0 let the driver choose; flags must be 0.
        check(unsafe { driver.cuMemAddressReserve()?(&mut base, reserved, 0, 0, 0) })?;
        Ok(VirtualBuffer {
            base,
            reserved,
            granularity,
            len: 0,
            chunks: Vec::new(),
            context: context.clone(),
            used_by_stream: AtomicBool::new(false),
            _marker: PhantomData,
        })
    }

    /// Backs the first `len` elements with physical memory, mapping one new
    /// piece after the mapped part if they are not backed yet; the earlier
    /// elements keep their address and contents. A `len` beyond
    /// [`capacity`](VirtualBuffer::capacity) is [`Error::InvalidValue`]; a
    /// smaller `len` than now is ignored (the buffer never shrinks).
    pub fn grow(&mut self, len: usize) -> Result<()> {
        if len <= self.len {
            return Ok(());
        }
        if len > self.capacity() {
            return Err(Error::InvalidValue(format!(
                "{len} elements exceed the reserved capacity of {}",
                self.capacity()
            )));
        }
        let needed = round_up(len * size_of::<T>(), self.granularity)?;
        let mapped = self.mapped_bytes();
        if needed > mapped {
            self.map(mapped, needed - mapped)?;
        }
        self.len = len;
        Ok(())
    }

    /// Creates `size` bytes of physical memory and maps them at `offset`,
    /// readable and writable from the device; undoes what it did on failure.
    fn map(&mut self, offset: usize, size: usize) -> Result<()> {
        let driver = self.context.bind()?;
        let properties = properties(&self.context);
        let mut handle = 0;
        // SAFETY: valid out-pointer and properties; `size` is a multiple of the granularity; flags must be 0.
        check(unsafe { driver.cuMemCreate()?(&mut handle, size, &properties, 0) })?;
        let address = self.base + offset as CUdeviceptr;
        // SAFETY: [address, address + size) lies inside the reserved range and is not mapped yet;
        // the handle holds `size` bytes; offset 0 and flags 0.
        let mapped = check_resolved(driver.cuMemMap().map(|map| unsafe { map(address, size, 0, handle, 0) }));
        let accessible = mapped.and_then(|()| {
            let access = CUmemAccessDesc {
                location: properties.location,
                flags: CUmemAccess_flags::CU_MEM_ACCESS_FLAGS_PROT_READWRITE,
            };
            // SAFETY: the range was just mapped; one access descriptor.
            let result = check_resolved(
                driver
                    .cuMemSetAccess()
                    .map(|set| unsafe { set(address, size, &access, 1) }),
            );
            if result.is_err() {
                // SAFETY: the range was mapped above and nothing used it; unmapping undoes that.
                let _ = driver.cuMemUnmap().map(|unmap| unsafe { unmap(address, size) });
            }
            result
        });
        if let Err(error) = accessible {
            // SAFETY: the handle was created above and is no longer mapped anywhere.
            let _ = driver.cuMemRelease().map(|release| unsafe { release(handle) });
            return Err(error);
        }
        self.chunks.push(Chunk { handle, offset, size });
        Ok(())
    }

    fn mapped_bytes(&self) -> usize {
        self.chunks.last().map_or(0, |chunk| chunk.offset + chunk.size)
    }

    /// Elements backed by physical memory.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether no element is backed yet.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Most elements the reserved range holds.
    pub fn capacity(&self) -> usize {
        self.reserved / size_of::<T>()
    }

    /// The device's allocation granularity in bytes: the unit of growth.
    pub fn granularity(&self) -> usize {
        self.granularity
    }

    /// Physical pieces mapped so far (one per growth that needed memory).
    pub fn pieces(&self) -> usize {
        self.chunks.len()
    }

    /// The context whose device backs the memory.
    pub fn context(&self) -> &Context {
        &self.context
    }

    /// The `[offset, offset + count)` elements, checked against `len`.
    fn range(&self, what: &str, offset: usize, count: usize) -> Result<CUdeviceptr> {
        match offset.checked_add(count) {
            Some(end) if end <= self.len => Ok(self.base + (offset * size_of::<T>()) as CUdeviceptr),
            _ => Err(Error::InvalidValue(format!(
                "{what}: {count} elements at {offset} exceed the {} backed ones",
                self.len
            ))),
        }
    }

    /// Writes `data` at element `offset`, waiting until done.
    pub fn copy_from_host(&mut self, offset: usize, data: &[T]) -> Result<()> {
        let address = self.range("copy_from_host", offset, data.len())?;
        if data.is_empty() {
            return Ok(());
        }
        let driver = self.context.bind()?;
        // SAFETY: the range is backed and mapped read-write (checked above); `data` holds its bytes.
        check(unsafe { driver.cuMemcpyHtoD_v2()?(address, data.as_ptr().cast(), size_of_val(data)) })
    }

    /// Reads `destination.len()` elements at `offset`, waiting until done.
    pub fn copy_to_host(&self, offset: usize, destination: &mut [T]) -> Result<()> {
        let address = self.range("copy_to_host", offset, destination.len())?;
        if destination.is_empty() {
            return Ok(());
        }
        let driver = self.context.bind()?;
        // SAFETY: the range is backed (checked above); `destination` has room for its bytes, and
        // any bytes are a valid `T` (DeviceCopy).
        check(unsafe { driver.cuMemcpyDtoH_v2()?(destination.as_mut_ptr().cast(), address, size_of_val(destination)) })
    }

    /// The backed elements in a new `Vec`.
    pub fn to_vec(&self) -> Result<Vec<T>> {
        let mut out = Vec::<T>::with_capacity(self.len);
        if self.len == 0 {
            return Ok(out);
        }
        let driver = self.context.bind()?;
        // SAFETY: the first `len` elements are backed; `out` has room for them.
        check(unsafe { driver.cuMemcpyDtoH_v2()?(out.as_mut_ptr().cast(), self.base, self.len * size_of::<T>()) })?;
        // SAFETY: the copy wrote `len` elements; any bytes are a valid `T` (DeviceCopy).
        unsafe { out.set_len(self.len) };
        Ok(out)
    }

    /// The base address, the same for the buffer's whole life.
    ///
    /// # Safety
    /// Valid while the buffer lives; only the first `len` elements are
    /// backed, and work using it must be ordered before the drop.
    pub unsafe fn as_raw(&self) -> CUdeviceptr {
        self.base
    }
}

macro_rules! virtual_args {
    ($($ty:ty),*) => {
        $(
            // SAFETY: points at the base address, which lives as long as the borrow; `check_use`
            // refuses other contexts' kernels and notes that a stream used the memory.
            unsafe impl<T: DeviceCopy> KernelArg for $ty {
                #[inline]
                fn param_ptr(&self) -> *mut c_void {
                    (&self.base as *const CUdeviceptr).cast_mut().cast()
                }

                #[inline]
                fn param_size(&self) -> usize {
                    size_of::<CUdeviceptr>()
                }

                #[inline]
                fn check_use(&self, context: &Context, _stream: &Stream) -> Result<()> {
                    self.context.expect_same(context, "virtual buffer", "function")?;
                    self.used_by_stream.store(true, Ordering::Relaxed);
                    Ok(())
                }
            }
        )*
    };
}

virtual_args!(&VirtualBuffer<T>, &mut VirtualBuffer<T>);

impl<T: DeviceCopy> Drop for VirtualBuffer<T> {
    /// Unmaps and releases every piece and frees the range, after the work
    /// that used it (while a capture is active, when it ends). Each step is
    /// attempted; failures are recorded on the context.
    fn drop(&mut self) {
        let (base, reserved, chunks) = (self.base, self.reserved, std::mem::take(&mut self.chunks));
        let used = *self.used_by_stream.get_mut();
        release_when_safe(
            &self.context,
            "releasing virtual memory",
            used,
            move |driver, context| {
                for chunk in chunks {
                    let address = base + chunk.offset as CUdeviceptr;
                    // SAFETY: the piece is mapped at `address` and no work uses it any more.
                    let unmapped = driver.cuMemUnmap().map(|unmap| unsafe { unmap(address, chunk.size) });
                    context.record_drop_result("cuMemUnmap", check_resolved(unmapped));
                    // SAFETY: this buffer owned the handle; the memory is freed once it is unmapped too.
                    let released = driver.cuMemRelease().map(|release| unsafe { release(chunk.handle) });
                    context.record_drop_result("cuMemRelease", check_resolved(released));
                }
                // SAFETY: this buffer reserved the range, and nothing is mapped in it any more.
                let freed = driver.cuMemAddressFree().map(|free| unsafe { free(base, reserved) });
                context.record_drop_result("cuMemAddressFree", check_resolved(freed));
            },
        );
    }
}

impl<T: DeviceCopy> std::fmt::Debug for VirtualBuffer<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VirtualBuffer")
            .field("base", &format_args!("{:#x}", self.base))
            .field("len", &self.len)
            .field("capacity", &self.capacity())
            .field("pieces", &self.chunks.len())
            .finish()
    }
}
