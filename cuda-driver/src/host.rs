//! Pinned (page-locked) host memory, the source and destination of truly
//! asynchronous copies.

use std::mem::size_of;
use std::ops::{Deref, DerefMut};
use std::ptr::{self, NonNull};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use crate::capture::{capture_active, defer_free, DeferredFree, DeferredMemory};
use crate::device_copy::byte_len;
use crate::error::{check, check_resolved, Error, Result};
use crate::flags::HostAllocFlags;
use crate::{Context, DeviceCopy, Stream};

/// `len` values of `T` in pinned host memory (`cuMemHostAlloc`), zeroed at
/// allocation. Dereferences to `[T]`.
///
/// Asynchronous copies note the stream they were queued on; any host access
/// (`Deref`, `DerefMut`, drop) first waits for those streams, so the host
/// never races a pending copy. [`HostBuffer::synchronize`] does the same
/// wait and reports errors, which `Deref` cannot (it records them on the
/// context instead).
pub struct HostBuffer<T: DeviceCopy> {
    ptr: NonNull<T>,
    len: usize,
    context: Context,
    flags: HostAllocFlags,
    has_pending: AtomicBool,
    /// Streams with queued copies touching this memory, and whether the copy writes it.
    pending: Mutex<Vec<(Stream, bool)>>,
}

// SAFETY: the buffer owns its memory like a `Vec<T>`; pending-copy tracking is
// behind a mutex and an atomic.
unsafe impl<T: DeviceCopy + Send> Send for HostBuffer<T> {}
// SAFETY: shared access gives `&[T]` (after waiting for pending copies) and
// goes through the mutex for tracking.
unsafe impl<T: DeviceCopy + Sync> Sync for HostBuffer<T> {}

impl<T: DeviceCopy> HostBuffer<T> {
    /// `len` zeroed elements of pinned memory for `context`.
    pub fn new(context: &Context, len: usize) -> Result<Self> {
        Self::with_flags(context, len, HostAllocFlags::empty())
    }

    /// `len` zeroed elements of pinned memory allocated with `flags`.
    pub fn with_flags(context: &Context, len: usize, flags: HostAllocFlags) -> Result<Self> {
        let bytes = byte_len::<T>(len)?;
        let driver = context.bind()?;
        let mut raw = ptr::null_mut();
        // SAFETY: `raw` is a valid out-pointer; the context is current.
        check(unsafe { driver.cuMemHostAlloc()?(&mut raw, bytes, flags.bits()) })?;
        let ptr = NonNull::new(raw.cast::<T>())
            .ok_or_else(|| Error::InvalidValue("cuMemHostAlloc returned a null pointer".into()))?;
        // SAFETY: the allocation holds `bytes` writable bytes; zero is a valid `T` (DeviceCopy),
        // so the memory is initialised before it is ever read as `T`.
        unsafe { ptr::write_bytes(ptr.as_ptr().cast::<u8>(), 0, bytes) };
        Ok(HostBuffer {
            ptr,
            len,
            context: context.clone(),
            flags,
            has_pending: AtomicBool::new(false),
            pending: Mutex::new(Vec::new()),
        })
    }

    /// Pinned memory holding a copy of `data` (not empty).
    pub fn from_slice(context: &Context, data: &[T]) -> Result<Self> {
        let mut buffer = Self::new(context, data.len())?;
        buffer.copy_from_slice(data);
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

    /// The context the memory was allocated in.
    pub fn context(&self) -> &Context {
        &self.context
    }

    /// The flags it was allocated with.
    pub fn flags(&self) -> HostAllocFlags {
        self.flags
    }

    /// Waits for the queued copies that use this buffer, returning their errors.
    pub fn synchronize(&self) -> Result<()> {
        if !self.has_pending.load(Ordering::Acquire) {
            return Ok(());
        }
        let mut pending = self.pending.lock().unwrap_or_else(|e| e.into_inner());
        let mut first_error = None;
        for (stream, _) in pending.drain(..) {
            if let Err(error) = stream.synchronize_quiet() {
                first_error.get_or_insert(error);
            }
        }
        self.has_pending.store(false, Ordering::Release);
        first_error.map_or(Ok(()), Err)
    }

    fn wait_for_host_access(&self) {
        if let Err(error) = self.synchronize() {
            self.context
                .record_drop_error("waiting for copies before host access", error);
        }
    }

    /// Fails unless `stream` may copy this memory: same context, or the
    /// buffer was allocated `PORTABLE`.
    pub(crate) fn check_stream(&self, stream: &Stream) -> Result<()> {
        if self.flags.contains(HostAllocFlags::PORTABLE) {
            Ok(())
        } else {
            self.context
                .expect_same(stream.context(), "pinned host buffer", "stream")
        }
    }

    /// Before queuing a copy on `stream`: waits for conflicting copies queued
    /// on other streams (any for a copy that writes this memory; writers for
    /// one that reads it).
    pub(crate) fn prepare_async(&self, stream: &Stream, writes: bool) -> Result<()> {
        if !self.has_pending.load(Ordering::Acquire) {
            return Ok(());
        }
        let mut pending = self.pending.lock().unwrap_or_else(|e| e.into_inner());
        let mut kept = Vec::with_capacity(pending.len());
        for (other, other_writes) in pending.drain(..) {
            if other != *stream && (writes || other_writes) {
                other.synchronize_quiet()?;
            } else {
                kept.push((other, other_writes));
            }
        }
        *pending = kept;
        Ok(())
    }

    /// Notes a copy queued on `stream`. Copies captured into a graph are not
    /// noted: replaying a graph is `unsafe` and its caller keeps memory alive.
    pub(crate) fn note_pending(&self, stream: &Stream, writes: bool) -> Result<()> {
        if stream.is_capturing()? {
            return Ok(());
        }
        let mut pending = self.pending.lock().unwrap_or_else(|e| e.into_inner());
        match pending.iter_mut().find(|(s, _)| s == stream) {
            Some(entry) => entry.1 |= writes,
            None => pending.push((stream.clone(), writes)),
        }
        self.has_pending.store(true, Ordering::Release);
        Ok(())
    }

    pub(crate) fn as_ptr_no_wait(&self) -> *const T {
        self.ptr.as_ptr()
    }

    pub(crate) fn as_mut_ptr_no_wait(&mut self) -> *mut T {
        self.ptr.as_ptr()
    }
}

impl<T: DeviceCopy> Deref for HostBuffer<T> {
    type Target = [T];

    fn deref(&self) -> &[T] {
        self.wait_for_host_access();
        // SAFETY: the allocation holds `len` initialised elements, and no queued copy still
        // touches it (waited for above).
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

impl<T: DeviceCopy> DerefMut for HostBuffer<T> {
    fn deref_mut(&mut self) -> &mut [T] {
        self.wait_for_host_access();
        // SAFETY: as for `deref`, and `&mut self` makes the access exclusive.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }
}

impl<T: DeviceCopy> Drop for HostBuffer<T> {
    /// Waits for the copies queued on the memory, then frees it; a failed
    /// wait is recorded and the free attempted anyway. While a stream
    /// capture is active (when waiting and freeing would invalidate it), the
    /// free is deferred to the end of the capture, after waiting for the
    /// contexts of those copies.
    fn drop(&mut self) {
        if capture_active() {
            let pending = std::mem::take(self.pending.get_mut().unwrap_or_else(|e| e.into_inner()));
            let mut wait_for: Vec<Context> = Vec::new();
            for (stream, _) in pending {
                if !wait_for.contains(stream.context()) {
                    wait_for.push(stream.context().clone());
                }
            }
            defer_free(DeferredFree {
                context: self.context.clone(),
                memory: DeferredMemory::Host(self.ptr.as_ptr().cast()),
                wait_for,
                uses: None,
                pool: None,
            });
            return;
        }
        self.wait_for_host_access();
        let Some(driver) = self.context.bind_for_drop("cuMemFreeHost") else {
            return;
        };
        // SAFETY: this buffer owns the pinned allocation, and no queued copy uses it any more.
        let result = driver
            .cuMemFreeHost()
            .map(|free| unsafe { free(self.ptr.as_ptr().cast()) });
        self.context.record_drop_result("cuMemFreeHost", check_resolved(result));
    }
}

impl<T: DeviceCopy + std::fmt::Debug> std::fmt::Debug for HostBuffer<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HostBuffer")
            .field("len", &self.len)
            .field("bytes", &(self.len * size_of::<T>()))
            .finish()
    }
}

/// Host memory a device buffer can be copied from: a [`HostBuffer`]
/// (pinned; truly asynchronous copies), a slice, an array or a `Vec`.
pub trait HostSlice<T: DeviceCopy> {
    /// Start, length, and the pinned buffer behind it if there is one.
    #[doc(hidden)]
    fn host_parts(&self) -> (*const T, usize, Option<&HostBuffer<T>>);
}

/// Host memory a device buffer can be copied into: a [`HostBuffer`], a
/// mutable slice, an array or a `Vec`.
pub trait HostSliceMut<T: DeviceCopy> {
    /// Start, length, and the pinned buffer behind it if there is one.
    #[doc(hidden)]
    fn host_parts_mut(&mut self) -> (*mut T, usize, Option<&HostBuffer<T>>);
}

impl<T: DeviceCopy> HostSlice<T> for HostBuffer<T> {
    fn host_parts(&self) -> (*const T, usize, Option<&HostBuffer<T>>) {
        (self.as_ptr_no_wait(), self.len, Some(self))
    }
}

impl<T: DeviceCopy> HostSliceMut<T> for HostBuffer<T> {
    fn host_parts_mut(&mut self) -> (*mut T, usize, Option<&HostBuffer<T>>) {
        let ptr = self.as_mut_ptr_no_wait();
        (ptr, self.len, Some(self))
    }
}

impl<T: DeviceCopy> HostSlice<T> for [T] {
    fn host_parts(&self) -> (*const T, usize, Option<&HostBuffer<T>>) {
        (self.as_ptr(), self.len(), None)
    }
}

impl<T: DeviceCopy> HostSliceMut<T> for [T] {
    fn host_parts_mut(&mut self) -> (*mut T, usize, Option<&HostBuffer<T>>) {
        (self.as_mut_ptr(), self.len(), None)
    }
}

impl<T: DeviceCopy> HostSlice<T> for Vec<T> {
    fn host_parts(&self) -> (*const T, usize, Option<&HostBuffer<T>>) {
        self.as_slice().host_parts()
    }
}

impl<T: DeviceCopy> HostSliceMut<T> for Vec<T> {
    fn host_parts_mut(&mut self) -> (*mut T, usize, Option<&HostBuffer<T>>) {
        self.as_mut_slice().host_parts_mut()
    }
}

impl<T: DeviceCopy, const N: usize> HostSlice<T> for [T; N] {
    fn host_parts(&self) -> (*const T, usize, Option<&HostBuffer<T>>) {
        self.as_slice().host_parts()
    }
}

impl<T: DeviceCopy, const N: usize> HostSliceMut<T> for [T; N] {
    fn host_parts_mut(&mut self) -> (*mut T, usize, Option<&HostBuffer<T>>) {
        self.as_mut_slice().host_parts_mut()
    }
}
