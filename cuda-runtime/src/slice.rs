//! Borrowed views of device memory (a whole [`DeviceMemory`] or a
//! sub-range), and the copies and fills all of them share.

use std::ffi::c_void;
use std::marker::PhantomData;
use std::mem::size_of;
use std::ops::{Bound, RangeBounds};

use cuda_sys::runtime::{cudaMemcpyKind, cudaStream_t};

use crate::device::make_current;
use crate::error::check;
use crate::{runtime, CopyKind, Device, DeviceCopy, Error, Result, Stream};

/// Where a run of elements lies and which stream orders its use.
#[derive(Clone, Copy, Debug)]
pub(crate) struct View {
    pub(crate) ptr: *mut c_void,
    pub(crate) len: usize,
    pub(crate) device: Device,
    /// The allocation stream of stream-ordered memory, else the legacy
    /// default stream; blocking operations run on it.
    pub(crate) order: cudaStream_t,
}

impl View {
    fn bytes<T>(&self) -> usize {
        self.len * size_of::<T>()
    }

    /// The elements `range` selects; an error if it is reversed or out of bounds.
    pub(crate) fn sub<T>(&self, range: impl RangeBounds<usize>) -> Result<View> {
        let start = match range.start_bound() {
            Bound::Included(&s) => Some(s),
            Bound::Excluded(&s) => s.checked_add(1),
            Bound::Unbounded => Some(0),
        };
        let end = match range.end_bound() {
            Bound::Included(&e) => e.checked_add(1),
            Bound::Excluded(&e) => Some(e),
            Bound::Unbounded => Some(self.len),
        };
        match (start, end) {
            (Some(start), Some(end)) if start <= end && end <= self.len => Ok(View {
                // Offsetting by address keeps this free of pointer provenance
                // rules: the device address is never dereferenced on the host.
                ptr: (self.ptr as usize + start * size_of::<T>()) as *mut c_void,
                len: end - start,
                ..*self
            }),
            _ => Err(Error::InvalidValue(format!(
                "range {:?}..{:?} is out of bounds for {} elements",
                range.start_bound(),
                range.end_bound(),
                self.len
            ))),
        }
    }

    fn expect_len(&self, found: usize) -> Result<()> {
        if found == self.len {
            Ok(())
        } else {
            Err(Error::LengthMismatch {
                expected: self.len,
                found,
            })
        }
    }

    /// Runs `op` on this view's order stream with its device current, then
    /// waits for that stream. `other` (a second view's order stream) is waited
    /// for first if it differs, so its pending work is complete.
    fn blocking(&self, other: Option<cudaStream_t>, op: impl FnOnce(&cuda_sys::Runtime) -> Result<()>) -> Result<()> {
        let runtime = runtime()?;
        make_current(runtime, self.device.raw_ordinal())?;
        if let Some(other) = other.filter(|&s| s != self.order) {
            // SAFETY: `other` belongs to live memory borrowed by the caller.
            check(runtime, unsafe { runtime.cudaStreamSynchronize()?(other) })?;
        }
        op(runtime)?;
        // SAFETY: the order stream is valid while the memory lives (or is the legacy handle).
        check(runtime, unsafe { runtime.cudaStreamSynchronize()?(self.order) })
    }

    fn copy(
        &self,
        dst: *mut c_void,
        src: *const c_void,
        bytes: usize,
        kind: cudaMemcpyKind,
        other: Option<cudaStream_t>,
    ) -> Result<()> {
        if bytes == 0 {
            return Ok(());
        }
        self.blocking(other, |runtime| {
            // SAFETY: the callers pass two ranges of `bytes` bytes that stay
            // borrowed until `blocking` has waited for the copy.
            check(runtime, unsafe {
                runtime.cudaMemcpyAsync()?(dst, src, bytes, kind, self.order)
            })
        })
    }

    pub(crate) fn copy_from_host<T>(&self, src: &[T]) -> Result<()> {
        self.expect_len(src.len())?;
        let kind = cudaMemcpyKind::cudaMemcpyHostToDevice;
        self.copy(self.ptr, src.as_ptr().cast(), self.bytes::<T>(), kind, None)
    }

    pub(crate) fn copy_to_host<T>(&self, dst: &mut [T]) -> Result<()> {
        self.expect_len(dst.len())?;
        let kind = cudaMemcpyKind::cudaMemcpyDeviceToHost;
        self.copy(dst.as_mut_ptr().cast(), self.ptr, self.bytes::<T>(), kind, None)
    }

    pub(crate) fn read_vec<T>(&self) -> Result<Vec<T>> {
        let mut host: Vec<T> = Vec::with_capacity(self.len);
        let kind = cudaMemcpyKind::cudaMemcpyDeviceToHost;
        self.copy(host.as_mut_ptr().cast(), self.ptr, self.bytes::<T>(), kind, None)?;
        // SAFETY: the copy wrote all `len` elements (or there are no bytes to write).
        unsafe { host.set_len(self.len) };
        Ok(host)
    }

    pub(crate) fn copy_from_device<T>(&self, src: &View) -> Result<()> {
        self.expect_len(src.len)?;
        let kind = cudaMemcpyKind::cudaMemcpyDefault;
        self.copy(self.ptr, src.ptr, self.bytes::<T>(), kind, Some(src.order))
    }

    /// # Safety
    /// `value` repeated must make valid `T`s.
    pub(crate) unsafe fn set_bytes<T>(&self, value: u8) -> Result<()> {
        let bytes = self.bytes::<T>();
        if bytes == 0 {
            return Ok(());
        }
        self.blocking(None, |runtime| {
            // SAFETY: the range is this view's, borrowed until the fill is waited for.
            check(runtime, unsafe {
                runtime.cudaMemsetAsync()?(self.ptr, value.into(), bytes, self.order)
            })
        })
    }

    /// # Safety
    /// As the public `copy_from_host_async` methods.
    pub(crate) unsafe fn copy_from_host_async<T>(&self, src: &[T], stream: &Stream) -> Result<()> {
        self.expect_len(src.len())?;
        stream.expect_device("destination buffer", self.device)?;
        // SAFETY: same lengths; the caller keeps both alive until the copy ends.
        unsafe {
            crate::memcpy_async(
                self.ptr,
                src.as_ptr().cast(),
                self.bytes::<T>(),
                CopyKind::HostToDevice,
                stream,
            )
        }
    }

    /// # Safety
    /// As the public `copy_to_host_async` methods.
    pub(crate) unsafe fn copy_to_host_async<T>(&self, dst: &mut [T], stream: &Stream) -> Result<()> {
        self.expect_len(dst.len())?;
        stream.expect_device("source buffer", self.device)?;
        // SAFETY: same lengths; the caller keeps both alive until the copy ends.
        unsafe {
            crate::memcpy_async(
                dst.as_mut_ptr().cast(),
                self.ptr,
                self.bytes::<T>(),
                CopyKind::DeviceToHost,
                stream,
            )
        }
    }

    /// # Safety
    /// As the public `copy_from_device_async` methods.
    pub(crate) unsafe fn copy_from_device_async<T>(&self, src: &View, stream: &Stream) -> Result<()> {
        self.expect_len(src.len)?;
        // SAFETY: two live ranges of equal size; the caller orders their lifetimes.
        unsafe { crate::memcpy_async(self.ptr, src.ptr, self.bytes::<T>(), CopyKind::DeviceToDevice, stream) }
    }

    /// # Safety
    /// As the public `set_zero_async` methods.
    pub(crate) unsafe fn set_zero_async<T>(&self, stream: &Stream) -> Result<()> {
        stream.expect_device("buffer", self.device)?;
        // SAFETY: the range is this view's; the caller keeps it alive.
        unsafe { crate::memset_async(self.ptr, 0, self.bytes::<T>(), stream) }
    }
}

/// The accessors both views share, read from their `view`.
macro_rules! view_accessors {
    () => {
        pub(crate) fn view(&self) -> &View {
            &self.view
        }

        /// Number of elements.
        pub fn len(&self) -> usize {
            self.view.len
        }

        /// `true` if there are no elements.
        pub fn is_empty(&self) -> bool {
            self.view.len == 0
        }

        /// The device the memory is on.
        pub fn device(&self) -> Device {
            self.view.device
        }
    };
}

/// The blocking reads both views share.
macro_rules! view_reads {
    () => {
        /// Copies into `dst` and waits; the lengths must match.
        pub fn copy_to_host(&self, dst: &mut [T]) -> Result<()> {
            self.view.copy_to_host(dst)
        }

        /// The contents as a `Vec`.
        pub fn to_vec(&self) -> Result<Vec<T>> {
            self.view.read_vec()
        }
    };
}

/// A shared view of `len` elements of device memory, borrowed from a
/// [`DeviceMemory`](crate::DeviceMemory). `Copy`; usable as a kernel argument.
#[derive(Debug)]
pub struct DeviceSlice<'a, T: DeviceCopy> {
    view: View,
    _borrow: PhantomData<&'a [T]>,
}

impl<T: DeviceCopy> Clone for DeviceSlice<'_, T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T: DeviceCopy> Copy for DeviceSlice<'_, T> {}

/// An exclusive view of `len` elements of device memory, borrowed from a
/// [`DeviceMemory`](crate::DeviceMemory); usable as a kernel argument.
#[derive(Debug)]
pub struct DeviceSliceMut<'a, T: DeviceCopy> {
    view: View,
    _borrow: PhantomData<&'a mut [T]>,
}

// SAFETY: like `&[T]`: only reads device memory through runtime calls that
// select the device on whichever thread they run.
unsafe impl<T: DeviceCopy + Sync> Send for DeviceSlice<'_, T> {}
// SAFETY: as above.
unsafe impl<T: DeviceCopy + Sync> Sync for DeviceSlice<'_, T> {}
// SAFETY: like `&mut [T]`.
unsafe impl<T: DeviceCopy + Send> Send for DeviceSliceMut<'_, T> {}
// SAFETY: `&self` methods only read.
unsafe impl<T: DeviceCopy + Sync> Sync for DeviceSliceMut<'_, T> {}

impl<'a, T: DeviceCopy> DeviceSlice<'a, T> {
    /// # Safety
    /// `view` must describe initialised memory that stays valid and is not
    /// written through another path for `'a`.
    pub(crate) unsafe fn new(view: View) -> Self {
        Self {
            view,
            _borrow: PhantomData,
        }
    }

    view_accessors!();

    /// A sub-range; an error if out of bounds.
    pub fn slice(&self, range: impl RangeBounds<usize>) -> Result<DeviceSlice<'a, T>> {
        // SAFETY: a sub-range of this view, under the same borrow.
        Ok(unsafe { DeviceSlice::new(self.view.sub::<T>(range)?) })
    }

    /// The device address of the first element.
    ///
    /// # Safety
    /// Valid only while the borrowed memory lives; must not be written through.
    pub unsafe fn as_raw(&self) -> *const T {
        self.view.ptr.cast()
    }

    view_reads!();

    /// Queues a copy into `dst` on `stream`; does not wait.
    ///
    /// # Safety
    /// `dst` must stay alive and unread by the host, and the memory alive,
    /// until `stream` has finished the copy.
    pub unsafe fn copy_to_host_async(&self, dst: &mut [T], stream: &Stream) -> Result<()> {
        // SAFETY: forwarded to the caller.
        unsafe { self.view.copy_to_host_async(dst, stream) }
    }
}

impl<'a, T: DeviceCopy> DeviceSliceMut<'a, T> {
    /// # Safety
    /// `view` must describe initialised memory that stays valid and is not
    /// accessed through another path for `'a`.
    pub(crate) unsafe fn new(view: View) -> Self {
        Self {
            view,
            _borrow: PhantomData,
        }
    }

    view_accessors!();

    /// A shared view of the same elements.
    pub fn as_slice(&self) -> DeviceSlice<'_, T> {
        // SAFETY: shared reborrow of this exclusive view.
        unsafe { DeviceSlice::new(self.view) }
    }

    /// A sub-range; an error if out of bounds.
    pub fn slice_mut(&mut self, range: impl RangeBounds<usize>) -> Result<DeviceSliceMut<'_, T>> {
        // SAFETY: a sub-range of this view, under a reborrow of it.
        Ok(unsafe { DeviceSliceMut::new(self.view.sub::<T>(range)?) })
    }

    /// The device address of the first element.
    ///
    /// # Safety
    /// Valid only while the borrowed memory lives; writes through it must
    /// keep every element a valid `T`.
    pub unsafe fn as_raw(&self) -> *mut T {
        self.view.ptr.cast()
    }

    /// Copies `src` in and waits; the lengths must match.
    pub fn copy_from_host(&mut self, src: &[T]) -> Result<()> {
        self.view.copy_from_host(src)
    }

    view_reads!();

    /// Copies `src` (of any device) in and waits; the lengths must match.
    pub fn copy_from_device(&mut self, src: DeviceSlice<'_, T>) -> Result<()> {
        self.view.copy_from_device::<T>(src.view())
    }

    /// Sets every byte to zero and waits.
    pub fn set_zero(&mut self) -> Result<()> {
        // SAFETY: zero is a valid `T` (DeviceCopy's contract).
        unsafe { self.view.set_bytes::<T>(0) }
    }

    /// Sets every byte to `value` and waits.
    ///
    /// # Safety
    /// A `T` made of `value` bytes must be a valid `T` (any value for integers
    /// and floats; only 0 and 1 for `bool`).
    pub unsafe fn set_bytes(&mut self, value: u8) -> Result<()> {
        // SAFETY: forwarded to the caller.
        unsafe { self.view.set_bytes::<T>(value) }
    }

    /// Queues a copy from `src` on `stream`; does not wait.
    ///
    /// # Safety
    /// `src` must stay alive and unchanged, and the memory alive, until
    /// `stream` has finished the copy (synchronise the stream or an event
    /// recorded after it).
    pub unsafe fn copy_from_host_async(&mut self, src: &[T], stream: &Stream) -> Result<()> {
        // SAFETY: forwarded to the caller.
        unsafe { self.view.copy_from_host_async(src, stream) }
    }

    /// Queues a copy from `src` on `stream`; does not wait.
    ///
    /// # Safety
    /// Both ranges must stay alive until `stream` has finished the copy, and
    /// pending work on other streams touching either must be ordered before it.
    pub unsafe fn copy_from_device_async(&mut self, src: DeviceSlice<'_, T>, stream: &Stream) -> Result<()> {
        // SAFETY: forwarded to the caller.
        unsafe { self.view.copy_from_device_async::<T>(src.view(), stream) }
    }

    /// Queues a zero fill on `stream`; does not wait.
    ///
    /// # Safety
    /// The memory must stay alive until `stream` has finished the fill.
    pub unsafe fn set_zero_async(&mut self, stream: &Stream) -> Result<()> {
        // SAFETY: forwarded to the caller.
        unsafe { self.view.set_zero_async::<T>(stream) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn view(len: usize) -> View {
        View {
            ptr: 0x1000 as *mut c_void,
            len,
            device: Device::from_runtime(0),
            order: crate::stream::LEGACY as cudaStream_t,
        }
    }

    #[test]
    fn sub_ranges_offset_by_element_and_reject_out_of_bounds() {
        let all = view(10);
        let middle = all.sub::<u32>(2..5).unwrap();
        assert_eq!((middle.ptr as usize, middle.len), (0x1000 + 8, 3));
        assert_eq!(all.sub::<u64>(..=9).unwrap().len, 10);
        assert_eq!(all.sub::<u64>(10..).unwrap().len, 0);
        for bad in [all.sub::<u8>(3..11), all.sub::<u8>(11..), all.sub::<u8>(..usize::MAX)] {
            assert!(matches!(bad, Err(Error::InvalidValue(_))), "{bad:?}");
        }
        #[allow(clippy::reversed_empty_ranges)]
        let reversed = all.sub::<u8>(5..2);
        assert!(matches!(reversed, Err(Error::InvalidValue(_))));
        assert!(matches!(all.sub::<u8>(..=usize::MAX), Err(Error::InvalidValue(_))));
    }

    #[test]
    fn slices_check_lengths_before_any_call() {
        let slice = view(4);
        let mut short = [0u32; 3];
        assert_eq!(
            slice.copy_to_host(&mut short),
            Err(Error::LengthMismatch { expected: 4, found: 3 })
        );
        assert_eq!(
            slice.copy_from_host(&[1u32; 5]),
            Err(Error::LengthMismatch { expected: 4, found: 5 })
        );
        assert_eq!(
            slice.copy_from_device::<u32>(&view(2)),
            Err(Error::LengthMismatch { expected: 4, found: 2 })
        );
    }

    #[test]
    fn async_operations_refuse_a_stream_of_another_device() {
        let other = Stream::legacy_default(Device::from_runtime(1));
        let mut host = [0u8; 4];
        // SAFETY: rejected before any copy is queued.
        let result = unsafe { view(4).copy_to_host_async(&mut host, &other) };
        match result {
            Err(Error::WrongDevice {
                expected: 1, found: 0, ..
            }) => {}
            other => panic!("expected WrongDevice, got {other:?}"),
        }
    }
}
