//! Device memory: `cudaMalloc` and stream-ordered `cudaMallocAsync` buffers.

use std::ffi::c_void;
use std::marker::PhantomData;
use std::mem::size_of;

use std::ops::RangeBounds;

use cuda_sys::runtime::cudaStream_t;

use crate::device::make_current;
use crate::error::check;
use crate::slice::View;
use crate::stream::LEGACY;
use crate::{runtime, Device, DeviceSlice, DeviceSliceMut, Error, Result, Stream};

/// Plain data that may be copied to and from a device bit for bit, and
/// passed to kernels by value. (cuda-driver has its own trait with the same
/// contract; a type used with both crates implements both.)
///
/// # Safety
/// Implementors must be `#[repr(C)]` (or primitive) data with no pointers to
/// host memory, no references, no `Drop`, for which the all-zero bit pattern
/// is a valid value (buffers start zeroed).
pub unsafe trait DeviceCopy: Copy + 'static {}

macro_rules! device_copy {
    ($($t:ty),*) => { $(
        // SAFETY: a primitive number or bool: plain bits, zero is valid.
        unsafe impl DeviceCopy for $t {}
    )* };
}
device_copy!(u8, u16, u32, u64, u128, usize, i8, i16, i32, i64, i128, isize, f32, f64, bool);
// SAFETY: an array of plain data is plain data; zero for every element is valid.
unsafe impl<T: DeviceCopy, const N: usize> DeviceCopy for [T; N] {}

/// `len` elements of `T`, in bytes; an error on overflow.
pub(crate) fn byte_len<T>(len: usize) -> Result<usize> {
    len.checked_mul(size_of::<T>())
        .ok_or_else(|| Error::InvalidValue(format!("{len} elements of {} bytes overflow usize", size_of::<T>())))
}

/// `len` elements of `T` on one device, freed on drop.
///
/// Made by [`DeviceMemory::zeroed`] / [`from_slice`](DeviceMemory::from_slice)
/// (`cudaMalloc`, freed with `cudaFree`) or by
/// [`zeroed_async`](DeviceMemory::zeroed_async) (`cudaMallocAsync` on a
/// stream, freed with `cudaFreeAsync` on that same stream, which the buffer
/// keeps alive). The blocking methods order themselves after the allocation
/// stream's work and wait for their own, so they never read memory early.
#[derive(Debug)]
pub struct DeviceMemory<T: DeviceCopy> {
    ptr: *mut c_void,
    len: usize,
    device: Device,
    /// `Some` for stream-ordered memory: freed on this stream.
    stream: Option<Stream>,
    _element: PhantomData<T>,
}

// SAFETY: the buffer is device memory reached only through runtime calls,
// which select the buffer's device on whatever thread they run.
unsafe impl<T: DeviceCopy + Send> Send for DeviceMemory<T> {}
// SAFETY: `&self` methods only read the memory (copies to the host).
unsafe impl<T: DeviceCopy + Sync> Sync for DeviceMemory<T> {}

impl<T: DeviceCopy> DeviceMemory<T> {
    /// Allocates `len` elements without initialising them (`cudaMalloc`).
    ///
    /// # Safety
    /// The contents are undefined: write every element (a copy, a kernel)
    /// before any read back to the host.
    pub unsafe fn uninit(device: Device, len: usize) -> Result<Self> {
        let bytes = byte_len::<T>(len)?;
        let mut ptr = std::ptr::null_mut();
        if bytes > 0 {
            let runtime = runtime()?;
            make_current(runtime, device.raw_ordinal())?;
            // SAFETY: `ptr` is a valid out-pointer.
            check(runtime, unsafe { runtime.cudaMalloc()?(&mut ptr, bytes) })?;
        }
        Ok(Self::wrap(ptr, len, device, None))
    }

    /// Allocates `len` zeroed elements (`cudaMalloc` + `cudaMemset`).
    pub fn zeroed(device: Device, len: usize) -> Result<Self> {
        // SAFETY: every byte is set to zero before `self` is returned, and zero
        // is a valid `T` (DeviceCopy's contract).
        let mut memory = unsafe { Self::uninit(device, len)? };
        memory.set_zero()?;
        Ok(memory)
    }

    /// Allocates and fills from `data`.
    pub fn from_slice(device: Device, data: &[T]) -> Result<Self> {
        // SAFETY: every element is written by the copy before `self` is returned.
        let mut memory = unsafe { Self::uninit(device, data.len())? };
        memory.copy_from_host(data)?;
        Ok(memory)
    }

    /// Allocates `len` elements ordered on `stream` (`cudaMallocAsync`):
    /// usable by work queued on `stream` after this call; freed with
    /// `cudaFreeAsync` on `stream` when dropped.
    ///
    /// # Safety
    /// The contents are undefined: write every element before any read back.
    /// Work on other streams must wait for `stream` (an [`Event`](crate::Event))
    /// before using the memory, and must be finished before it is dropped.
    pub unsafe fn uninit_async(stream: &Stream, len: usize) -> Result<Self> {
        let bytes = byte_len::<T>(len)?;
        let mut ptr = std::ptr::null_mut();
        if bytes > 0 {
            let runtime = stream.enter()?;
            // SAFETY: `ptr` is a valid out-pointer; the stream is valid while `stream` lives.
            check(runtime, unsafe {
                runtime.cudaMallocAsync()?(&mut ptr, bytes, stream.raw())
            })?;
        }
        Ok(Self::wrap(ptr, len, stream.device(), Some(stream.clone())))
    }

    /// Allocates `len` elements ordered on `stream` and queues a zero fill
    /// there (`cudaMallocAsync` + `cudaMemsetAsync`). Does not wait.
    pub fn zeroed_async(stream: &Stream, len: usize) -> Result<Self> {
        // SAFETY: the fill is queued on the allocation stream before any other
        // use this crate can make of the memory (blocking reads wait for that
        // stream; async uses are `unsafe` and must order themselves).
        let memory = unsafe { Self::uninit_async(stream, len)? };
        let bytes = memory.size_bytes();
        if bytes > 0 {
            let runtime = stream.enter()?;
            // SAFETY: the range is this allocation, freed only after the fill on the same stream.
            check(runtime, unsafe {
                runtime.cudaMemsetAsync()?(memory.ptr, 0, bytes, stream.raw())
            })?;
        }
        Ok(memory)
    }

    fn wrap(ptr: *mut c_void, len: usize, device: Device, stream: Option<Stream>) -> Self {
        Self {
            ptr,
            len,
            device,
            stream,
            _element: PhantomData,
        }
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// `true` if there are no elements.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Size in bytes.
    pub fn size_bytes(&self) -> usize {
        self.len * size_of::<T>()
    }

    /// The device the memory is on.
    pub fn device(&self) -> Device {
        self.device
    }

    /// The stream a stream-ordered buffer is ordered on (and freed on).
    pub fn stream(&self) -> Option<&Stream> {
        self.stream.as_ref()
    }

    /// The device address (null for an empty buffer).
    ///
    /// # Safety
    /// Valid while `self` lives; the caller must not free it, and must not use
    /// it to break the element type's validity.
    pub unsafe fn as_raw(&self) -> *mut T {
        self.ptr.cast()
    }

    pub(crate) fn view(&self) -> View {
        View {
            ptr: self.ptr,
            len: self.len,
            device: self.device,
            order: match &self.stream {
                Some(stream) => stream.raw(),
                None => LEGACY as cudaStream_t,
            },
        }
    }

    /// A shared view of all elements.
    pub fn as_slice(&self) -> DeviceSlice<'_, T> {
        // SAFETY: borrows `self` shared; the contents are initialised.
        unsafe { DeviceSlice::new(self.view()) }
    }

    /// An exclusive view of all elements.
    pub fn as_mut_slice(&mut self) -> DeviceSliceMut<'_, T> {
        // SAFETY: borrows `self` exclusively; the contents are initialised.
        unsafe { DeviceSliceMut::new(self.view()) }
    }

    /// A shared view of `range`; an error if out of bounds.
    pub fn slice(&self, range: impl RangeBounds<usize>) -> Result<DeviceSlice<'_, T>> {
        self.as_slice().slice(range)
    }

    /// An exclusive view of `range`; an error if out of bounds.
    pub fn slice_mut(&mut self, range: impl RangeBounds<usize>) -> Result<DeviceSliceMut<'_, T>> {
        let view = self.view().sub::<T>(range)?;
        // SAFETY: a sub-range, borrowing `self` exclusively.
        Ok(unsafe { DeviceSliceMut::new(view) })
    }

    /// Copies `src` into this buffer and waits; `src.len()` must equal `self.len()`.
    pub fn copy_from_host(&mut self, src: &[T]) -> Result<()> {
        self.view().copy_from_host(src)
    }

    /// Copies this buffer into `dst` and waits; `dst.len()` must equal `self.len()`.
    pub fn copy_to_host(&self, dst: &mut [T]) -> Result<()> {
        self.view().copy_to_host(dst)
    }

    /// The contents as a `Vec`.
    pub fn to_vec(&self) -> Result<Vec<T>> {
        self.view().read_vec()
    }

    /// Copies `src` (of any device) into this buffer and waits.
    pub fn copy_from_device(&mut self, src: &DeviceMemory<T>) -> Result<()> {
        self.view().copy_from_device::<T>(&src.view())
    }

    /// Sets every byte to zero and waits (`cudaMemsetAsync` + synchronise).
    pub fn set_zero(&mut self) -> Result<()> {
        // SAFETY: zero is a valid `T` (DeviceCopy's contract).
        unsafe { self.view().set_bytes::<T>(0) }
    }

    /// Sets every byte to `value` and waits.
    ///
    /// # Safety
    /// A `T` made of `value` bytes must be a valid `T` (any value for integers
    /// and floats; only 0 and 1 for `bool`).
    pub unsafe fn set_bytes(&mut self, value: u8) -> Result<()> {
        // SAFETY: forwarded to the caller.
        unsafe { self.view().set_bytes::<T>(value) }
    }

    /// Queues a copy from `src` into this buffer on `stream`; does not wait.
    ///
    /// # Safety
    /// `src` must stay alive and unchanged, and `self` alive, until `stream`
    /// has finished the copy (synchronise the stream or an event recorded
    /// after it). Work on other streams using `self` must be ordered with
    /// events.
    pub unsafe fn copy_from_host_async(&mut self, src: &[T], stream: &Stream) -> Result<()> {
        // SAFETY: forwarded to the caller.
        unsafe { self.view().copy_from_host_async(src, stream) }
    }

    /// Queues a copy from this buffer into `dst` on `stream`; does not wait.
    ///
    /// # Safety
    /// `dst` must stay alive and unread by the host, and `self` alive and
    /// fully written, until `stream` has finished the copy.
    pub unsafe fn copy_to_host_async(&self, dst: &mut [T], stream: &Stream) -> Result<()> {
        // SAFETY: forwarded to the caller.
        unsafe { self.view().copy_to_host_async(dst, stream) }
    }

    /// Queues a copy from `src` into this buffer on `stream`; does not wait.
    ///
    /// # Safety
    /// Both buffers must stay alive until `stream` has finished the copy, and
    /// pending work on other streams touching either must be ordered before it.
    pub unsafe fn copy_from_device_async(&mut self, src: &DeviceMemory<T>, stream: &Stream) -> Result<()> {
        // SAFETY: forwarded to the caller.
        unsafe { self.view().copy_from_device_async::<T>(&src.view(), stream) }
    }

    /// Queues a zero fill on `stream`; does not wait.
    ///
    /// # Safety
    /// `self` must stay alive until `stream` has finished the fill.
    pub unsafe fn set_zero_async(&mut self, stream: &Stream) -> Result<()> {
        // SAFETY: forwarded to the caller.
        unsafe { self.view().set_zero_async::<T>(stream) }
    }
}

impl<T: DeviceCopy> Drop for DeviceMemory<T> {
    fn drop(&mut self) {
        if self.ptr.is_null() {
            return;
        }
        let Ok(runtime) = runtime() else { return };
        if make_current(runtime, self.device.raw_ordinal()).is_err() {
            return;
        }
        // Errors cannot be reported from `drop`; the memory is leaked instead.
        match &self.stream {
            Some(stream) => {
                if let Ok(free) = runtime.cudaFreeAsync() {
                    // SAFETY: allocated by `cudaMallocAsync` on this stream, which is
                    // still alive (we hold a clone); freed after its queued work.
                    let _ = unsafe { free(self.ptr, stream.raw()) };
                }
            }
            None => {
                if let Ok(free) = runtime.cudaFree() {
                    // SAFETY: allocated by `cudaMalloc` and owned only by `self`.
                    let _ = unsafe { free(self.ptr) };
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Host-side checks need no device: device 0 is never touched below.
    fn device() -> Device {
        Device::from_runtime(0)
    }

    #[test]
    fn overflowing_sizes_are_invalid_values() {
        match DeviceMemory::<u64>::zeroed(device(), usize::MAX / 4) {
            Err(Error::InvalidValue(why)) => assert!(why.contains("overflow"), "{why}"),
            other => panic!("expected InvalidValue, got {other:?}"),
        }
        let pinned = crate::PinnedHostMemory::<u32>::zeroed(device(), usize::MAX, crate::HostAllocFlags::empty());
        assert!(matches!(pinned, Err(Error::InvalidValue(_))), "{pinned:?}");
    }

    #[test]
    fn empty_buffers_need_no_runtime_call_and_check_lengths() {
        let mut empty = DeviceMemory::<f32>::zeroed(device(), 0).unwrap();
        assert!(empty.is_empty() && empty.size_bytes() == 0);
        assert_eq!(empty.to_vec().unwrap(), Vec::<f32>::new());
        empty.copy_from_host(&[]).unwrap();
        assert_eq!(
            empty.copy_from_host(&[1.0, 2.0]),
            Err(Error::LengthMismatch { expected: 0, found: 2 })
        );
        assert_eq!(
            empty.copy_to_host(&mut [0.0]),
            Err(Error::LengthMismatch { expected: 0, found: 1 })
        );
        let pinned = crate::PinnedHostMemory::<u8>::from_slice(device(), &[], crate::HostAllocFlags::empty()).unwrap();
        assert!(pinned.is_empty());
    }
}
