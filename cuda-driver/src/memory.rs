//! Device memory: owned buffers ([`DeviceBuffer`]) and borrowed views of
//! them ([`DeviceSlice`], [`DeviceSliceMut`]), with synchronous and
//! stream-ordered copies.

use std::marker::PhantomData;
use std::mem::size_of;
use std::ops::{Bound, Deref, RangeBounds};
use std::ptr;

use cuda_sys::driver::{CUdeviceptr, CUpointer_attribute, CUresult, CUstream};

use crate::capture::{capture_active, defer_free, DeferredFree, DeferredMemory};
use crate::device_copy::byte_len;
use crate::device_memory::{Access, DeviceMemory, DeviceMemoryMut, StreamTracker, StreamUse};
use crate::error::{check, check_resolved, Error, Result};
use crate::host::{HostBuffer, HostSlice, HostSliceMut};
use crate::{Context, DeviceCopy, MemPool, Stream};

fn same_len(what: &str, destination: usize, source: usize) -> Result<()> {
    if destination == source {
        Ok(())
    } else {
        Err(Error::InvalidValue(format!(
            "{what}: destination holds {destination} elements, source {source}"
        )))
    }
}

/// One device allocation and the streams that used it (its [`StreamTracker`]), so that it is
/// never freed while queued work may still touch it.
pub(crate) struct Allocation {
    pub(crate) ptr: CUdeviceptr,
    context: Context,
    /// Keeps a non-default pool alive while memory from it exists.
    pool: Option<MemPool>,
    /// The streams that used the memory; for stream-ordered memory, its owner stream too.
    uses: StreamTracker,
}

impl Allocation {
    /// Takes ownership of `ptr`, plain device memory of `context` (freed with `cuMemFree`).
    pub(crate) fn new(ptr: CUdeviceptr, context: Context) -> Allocation {
        Allocation {
            ptr,
            context,
            pool: None,
            uses: StreamTracker::new(),
        }
    }

    /// Begins a use by work queued on `stream` (see [`DeviceMemory::begin_use`]): `stream`
    /// waits on the device for conflicting uses on other streams (of this context or a peer's).
    #[inline]
    pub(crate) fn begin_use(&self, stream: &Stream, access: Access) -> Result<StreamUse<'_>> {
        self.uses.begin_use(stream, access)
    }

    /// Before a synchronous operation: waits on the host for the streams' uses (for
    /// stream-ordered memory, its allocation on the owner stream among them).
    fn settle(&self) -> Result<()> {
        self.uses.wait_for_uses()
    }

    pub(crate) fn context(&self) -> &Context {
        &self.context
    }

    fn owner(&self) -> Option<&Stream> {
        self.uses.owner()
    }
}

impl Drop for Allocation {
    /// Orders the free after every stream's use (stream-ordered memory: on the device, with
    /// its owner stream waiting for the others' events; other memory: on the host, waiting for
    /// each stream's event), then frees. A failure is recorded and the next step attempted
    /// anyway. While a stream capture is active, waiting and freeing would invalidate it: the
    /// free and its ordering are deferred to the end of the capture (see `capture`).
    fn drop(&mut self) {
        if capture_active() {
            // Later, as below: a stream-ordered allocation is freed in its stream's order.
            let memory = match self.owner() {
                Some(owner) => DeferredMemory::StreamOrdered(self.ptr, owner.clone()),
                None => DeferredMemory::Device(self.ptr),
            };
            defer_free(DeferredFree {
                context: self.context.clone(),
                memory,
                wait_for: Vec::new(),
                uses: Some(std::mem::take(&mut self.uses)),
                pool: self.pool.take(),
            });
            return;
        }
        self.uses.prepare_free();
        let Some(driver) = self.context.bind_for_drop("freeing device memory") else {
            return;
        };
        let result = match self.owner() {
            // SAFETY: this allocation owns `ptr`; freeing it in its stream's order runs after all
            // work queued on that stream, which waits (above) for other streams' uses.
            Some(owner) => driver
                .cuMemFreeAsync()
                .map(|free| unsafe { free(self.ptr, owner.raw()) }),
            // SAFETY: this allocation owns `ptr`; work that used it was waited for above.
            None => driver.cuMemFree_v2().map(|free| unsafe { free(self.ptr) }),
        };
        self.context
            .record_drop_result("freeing device memory", check_resolved(result));
    }
}

/// Anything that can be viewed as a [`DeviceSlice`]: buffers and views.
pub trait AsDeviceSlice<T: DeviceCopy> {
    /// The whole of `self` as a read-only view.
    fn as_device_slice(&self) -> DeviceSlice<'_, T>;
}

impl<T: DeviceCopy> AsDeviceSlice<T> for DeviceBuffer<T> {
    fn as_device_slice(&self) -> DeviceSlice<'_, T> {
        self.as_slice()
    }
}

impl<T: DeviceCopy> AsDeviceSlice<T> for DeviceSlice<'_, T> {
    fn as_device_slice(&self) -> DeviceSlice<'_, T> {
        *self
    }
}

impl<T: DeviceCopy> AsDeviceSlice<T> for DeviceSliceMut<'_, T> {
    fn as_device_slice(&self) -> DeviceSlice<'_, T> {
        self.view
    }
}

/// An owned array of `len` values of `T` in device memory of one context.
///
/// Implements the [device-memory contract](DeviceMemory): work queued
/// through this crate (launches, async copies, memsets) on several streams
/// is ordered with events, a read after the last write and a write after
/// every use, on the device.
///
/// Freed on drop without ever cutting short queued work: memory allocated
/// with [`DeviceBuffer::alloc_async`] is freed in its stream's order
/// (`cuMemFreeAsync`), after the events of other streams that used it;
/// other memory is freed once the host has waited for those streams' uses.
///
/// Synchronous methods (`copy_from_host`, `to_vec`, `memset_zero`, ...)
/// first wait on the host for the uses queued through this crate on any
/// stream, then run in order with the legacy default stream. Work the caller
/// queued through raw handles must be synchronised first, as in any CUDA
/// program.
pub struct DeviceBuffer<T: DeviceCopy> {
    alloc: Allocation,
    len: usize,
    _marker: PhantomData<T>,
}

/// A borrowed, read-only view of part of a [`DeviceBuffer`].
pub struct DeviceSlice<'a, T: DeviceCopy> {
    alloc: &'a Allocation,
    ptr: CUdeviceptr,
    len: usize,
    _marker: PhantomData<&'a [T]>,
}

/// A borrowed, writable view of part of a [`DeviceBuffer`]. Dereferences to
/// a [`DeviceSlice`] for the read-only operations.
pub struct DeviceSliceMut<'a, T: DeviceCopy> {
    view: DeviceSlice<'a, T>,
    _marker: PhantomData<&'a mut [T]>,
}

// SAFETY: the buffer owns its device memory like a `Vec<T>` owns its heap
// memory; the handles inside may be used from any thread (every operation
// makes the context current), and the usage flags are atomics or a mutex.
unsafe impl<T: DeviceCopy + Send> Send for DeviceBuffer<T> {}
// SAFETY: shared access only reads through `&self` methods; concurrent device
// access is ordered by the streams the caller chooses, as for any launch.
unsafe impl<T: DeviceCopy + Sync> Sync for DeviceBuffer<T> {}
// SAFETY: a view is a shared borrow of a `DeviceBuffer`; see above.
unsafe impl<T: DeviceCopy + Sync> Send for DeviceSlice<'_, T> {}
// SAFETY: as above.
unsafe impl<T: DeviceCopy + Sync> Sync for DeviceSlice<'_, T> {}
// SAFETY: a writable view is an exclusive borrow of a `DeviceBuffer`.
unsafe impl<T: DeviceCopy + Send> Send for DeviceSliceMut<'_, T> {}
// SAFETY: shared access to a writable view allows only the read-only operations.
unsafe impl<T: DeviceCopy + Sync> Sync for DeviceSliceMut<'_, T> {}

impl<T: DeviceCopy> DeviceBuffer<T> {
    /// Allocates `len` elements (`cuMemAlloc`) without initialising them: the
    /// contents are unspecified until written (any bit pattern is a valid
    /// `T`, see [`DeviceCopy`]). Zero `len` is an error.
    pub fn alloc(context: &Context, len: usize) -> Result<Self> {
        let bytes = byte_len::<T>(len)?;
        let driver = context.bind()?;
        let mut ptr = 0;
        // SAFETY: `ptr` is a valid out-pointer; the context is current.
        check(unsafe { driver.cuMemAlloc_v2()?(&mut ptr, bytes) })?;
        Ok(Self::from_allocation(ptr, len, context.clone(), None, None))
    }

    /// Allocates `len` zeroed elements.
    pub fn zeroed(context: &Context, len: usize) -> Result<Self> {
        let mut buffer = Self::alloc(context, len)?;
        buffer.memset_zero()?;
        Ok(buffer)
    }

    /// Allocates a buffer holding a copy of `data` (not empty).
    pub fn from_slice(context: &Context, data: &[T]) -> Result<Self> {
        let mut buffer = Self::alloc(context, data.len())?;
        buffer.copy_from_host(data)?;
        Ok(buffer)
    }

    /// Allocates `len` elements in `stream`'s order from the device's current
    /// memory pool (`cuMemAllocAsync`), contents unspecified. Freed in
    /// `stream`'s order (`cuMemFreeAsync`) on drop. The allocation counts as
    /// a write on `stream`: another stream's first use waits for it on the
    /// device (`cuStreamWaitEvent`).
    pub fn alloc_async(stream: &Stream, len: usize) -> Result<Self> {
        let bytes = byte_len::<T>(len)?;
        let driver = stream.context().bind()?;
        let mut ptr = 0;
        // SAFETY: `ptr` is a valid out-pointer; the stream is alive and of the current context.
        check(unsafe { driver.cuMemAllocAsync()?(&mut ptr, bytes, stream.raw()) })?;
        Ok(Self::from_allocation(
            ptr,
            len,
            stream.context().clone(),
            Some(stream.clone()),
            None,
        ))
    }

    /// Like [`DeviceBuffer::alloc_async`], from `pool` (of the stream's device).
    pub fn alloc_from_pool_async(pool: &MemPool, stream: &Stream, len: usize) -> Result<Self> {
        if pool.device() != stream.context().device() {
            return Err(Error::WrongContext {
                object: "memory pool",
                used_with: "stream",
            });
        }
        if pool.is_imported() {
            return Err(Error::InvalidValue(
                "a pool imported from another process hands out no allocations; import its pointers \
                 with MemPool::import_pointer"
                    .into(),
            ));
        }
        let bytes = byte_len::<T>(len)?;
        let driver = stream.context().bind()?;
        let mut ptr = 0;
        // SAFETY: `ptr` is a valid out-pointer; pool and stream are alive and of the same device.
        check(unsafe { driver.cuMemAllocFromPoolAsync()?(&mut ptr, bytes, pool.raw(), stream.raw()) })?;
        let pool = Some(pool.clone());
        Ok(Self::from_allocation(
            ptr,
            len,
            stream.context().clone(),
            Some(stream.clone()),
            pool,
        ))
    }

    /// Takes ownership of `ptr`, `len` elements imported into `pool` from another process
    /// (`cuMemPoolImportPointer`): freed with `cuMemFree` after its uses, the pool kept alive.
    #[cfg(unix)]
    pub(crate) fn from_pool_import(ptr: CUdeviceptr, len: usize, context: Context, pool: MemPool) -> Self {
        Self::from_allocation(ptr, len, context, None, Some(pool))
    }

    /// The pool the memory came from (or was imported into), unless the device's default pool
    /// or none.
    pub(crate) fn pool(&self) -> Option<&MemPool> {
        self.alloc.pool.as_ref()
    }

    fn from_allocation(
        ptr: CUdeviceptr,
        len: usize,
        context: Context,
        owner: Option<Stream>,
        pool: Option<MemPool>,
    ) -> Self {
        DeviceBuffer {
            alloc: Allocation {
                ptr,
                context,
                pool,
                uses: match owner {
                    Some(owner) => StreamTracker::stream_ordered(&owner),
                    None => StreamTracker::new(),
                },
            },
            len,
            _marker: PhantomData,
        }
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

    /// The context the memory belongs to.
    pub fn context(&self) -> &Context {
        &self.alloc.context
    }

    /// The stream a stream-ordered buffer was allocated on and is freed on.
    pub fn stream(&self) -> Option<&Stream> {
        self.alloc.owner()
    }

    /// A view of the whole buffer.
    pub fn as_slice(&self) -> DeviceSlice<'_, T> {
        DeviceSlice {
            alloc: &self.alloc,
            ptr: self.alloc.ptr,
            len: self.len,
            _marker: PhantomData,
        }
    }

    /// A writable view of the whole buffer.
    pub fn as_slice_mut(&mut self) -> DeviceSliceMut<'_, T> {
        DeviceSliceMut {
            view: self.as_slice(),
            _marker: PhantomData,
        }
    }

    /// A view of `range`.
    ///
    /// # Panics
    /// If the range is out of bounds, like slice indexing; use
    /// [`DeviceBuffer::try_slice`] for an error instead.
    pub fn slice(&self, range: impl RangeBounds<usize>) -> DeviceSlice<'_, T> {
        self.as_slice().slice(range)
    }

    /// A view of `range`, or `Error::InvalidValue` if it is out of bounds.
    pub fn try_slice(&self, range: impl RangeBounds<usize>) -> Result<DeviceSlice<'_, T>> {
        self.as_slice().try_slice(range)
    }

    /// A writable view of `range`.
    ///
    /// # Panics
    /// If the range is out of bounds; use [`DeviceBuffer::try_slice_mut`] for an error instead.
    pub fn slice_mut(&mut self, range: impl RangeBounds<usize>) -> DeviceSliceMut<'_, T> {
        self.as_slice_mut().into_slice_mut(range)
    }

    /// A writable view of `range`, or `Error::InvalidValue` if it is out of bounds.
    pub fn try_slice_mut(&mut self, range: impl RangeBounds<usize>) -> Result<DeviceSliceMut<'_, T>> {
        self.as_slice_mut().try_into_slice_mut(range)
    }

    /// Copies `source` (same length) into the buffer, waiting until done.
    pub fn copy_from_host(&mut self, source: &[T]) -> Result<()> {
        self.as_slice_mut().copy_from_host(source)
    }

    /// Copies the buffer into `destination` (same length), waiting until done.
    pub fn copy_to_host(&self, destination: &mut [T]) -> Result<()> {
        self.as_slice().copy_to_host(destination)
    }

    /// The buffer's contents in a new `Vec`.
    pub fn to_vec(&self) -> Result<Vec<T>> {
        self.as_slice().to_vec()
    }

    /// Copies `source` (same context and length) into the buffer, waiting until done.
    pub fn copy_from_device<S: AsDeviceSlice<T> + ?Sized>(&mut self, source: &S) -> Result<()> {
        self.as_slice_mut().copy_from_device(source)
    }

    /// Copies a buffer of another context (another device) into this one
    /// (`cuMemcpyPeer`; works without peer access, faster with it).
    pub fn copy_from_peer<S: AsDeviceSlice<T> + ?Sized>(&mut self, source: &S) -> Result<()> {
        self.as_slice_mut().copy_from_peer(source)
    }

    /// Sets every byte to zero, waiting until done.
    pub fn memset_zero(&mut self) -> Result<()> {
        self.as_slice_mut().memset_zero()
    }

    /// Queues a copy from `source` on `stream` (see
    /// [`DeviceSliceMut::copy_from_host_async`] for when `source` is free again).
    pub fn copy_from_host_async<S: HostSlice<T> + ?Sized>(&mut self, source: &S, stream: &Stream) -> Result<()> {
        self.as_slice_mut().copy_from_host_async(source, stream)
    }

    /// Queues a copy into `destination` on `stream` (see
    /// [`DeviceSlice::copy_to_host_async`] for when it may be read).
    pub fn copy_to_host_async<D: HostSliceMut<T> + ?Sized>(&self, destination: &mut D, stream: &Stream) -> Result<()> {
        self.as_slice().copy_to_host_async(destination, stream)
    }

    /// Queues a device-to-device copy on `stream` (all of one context).
    pub fn copy_from_device_async<S: AsDeviceSlice<T> + ?Sized>(&mut self, source: &S, stream: &Stream) -> Result<()> {
        self.as_slice_mut().copy_from_device_async(source, stream)
    }

    /// Queues a copy from a buffer of another context on `stream` (of this
    /// buffer's context) with `cuMemcpyPeerAsync`.
    pub fn copy_from_peer_async<S: AsDeviceSlice<T> + ?Sized>(&mut self, source: &S, stream: &Stream) -> Result<()> {
        self.as_slice_mut().copy_from_peer_async(source, stream)
    }

    /// Queues zeroing every byte on `stream`.
    pub fn memset_zero_async(&mut self, stream: &Stream) -> Result<()> {
        self.as_slice_mut().memset_zero_async(stream)
    }

    /// The device address.
    ///
    /// # Safety
    /// The address is valid only while the buffer lives; work using it must
    /// be ordered before the buffer's drop.
    pub unsafe fn as_raw(&self) -> CUdeviceptr {
        self.alloc.ptr
    }

    pub(crate) fn allocation(&self) -> &Allocation {
        &self.alloc
    }

    pub(crate) fn ptr_ref(&self) -> &CUdeviceptr {
        &self.alloc.ptr
    }
}

impl<T: DeviceCopy> std::fmt::Debug for DeviceBuffer<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeviceBuffer")
            .field("ptr", &format_args!("{:#x}", self.alloc.ptr))
            .field("len", &self.len)
            .finish()
    }
}

impl<T: DeviceCopy> std::fmt::Debug for DeviceSlice<'_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeviceSlice")
            .field("len", &self.len)
            .field("device", &self.alloc.context.device().ordinal())
            .finish()
    }
}

impl<T: DeviceCopy> std::fmt::Debug for DeviceSliceMut<'_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeviceSliceMut")
            .field("len", &self.view.len)
            .field("device", &self.view.alloc.context.device().ordinal())
            .finish()
    }
}

// SAFETY: the range is the buffer's own allocation, of its context, and dense (its `len`
// elements one after another, so `begin_use` has no view to refuse); `Allocation`'s drop orders
// the free after every use begun through its tracker.
unsafe impl<T: DeviceCopy> DeviceMemory for DeviceBuffer<T> {
    fn context(&self) -> &Context {
        &self.alloc.context
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

// SAFETY: `&mut DeviceBuffer` is the only access to the buffer.
unsafe impl<T: DeviceCopy> DeviceMemoryMut for DeviceBuffer<T> {}

// SAFETY: the range lies inside the borrowed allocation (bounds checked when the view was made)
// and is dense (a slice is a run of consecutive elements); the allocation outlives the view and
// orders its free after the uses begun through its tracker.
unsafe impl<T: DeviceCopy> DeviceMemory for DeviceSlice<'_, T> {
    fn context(&self) -> &Context {
        &self.alloc.context
    }

    fn device_ptr(&self) -> CUdeviceptr {
        self.ptr
    }

    fn byte_len(&self) -> usize {
        self.bytes()
    }

    #[inline]
    fn begin_use(&self, stream: &Stream, access: Access) -> Result<StreamUse<'_>> {
        self.alloc.begin_use(stream, access)
    }
}

// SAFETY: as for `DeviceSlice`.
unsafe impl<T: DeviceCopy> DeviceMemory for DeviceSliceMut<'_, T> {
    fn context(&self) -> &Context {
        &self.view.alloc.context
    }

    fn device_ptr(&self) -> CUdeviceptr {
        self.view.ptr
    }

    fn byte_len(&self) -> usize {
        self.view.bytes()
    }

    #[inline]
    fn begin_use(&self, stream: &Stream, access: Access) -> Result<StreamUse<'_>> {
        self.view.alloc.begin_use(stream, access)
    }
}

// SAFETY: a writable view borrows its buffer exclusively.
unsafe impl<T: DeviceCopy> DeviceMemoryMut for DeviceSliceMut<'_, T> {}

fn bounds(range: impl RangeBounds<usize>, len: usize) -> Result<(usize, usize)> {
    let start = match range.start_bound() {
        Bound::Included(&s) => Some(s),
        Bound::Excluded(&s) => s.checked_add(1),
        Bound::Unbounded => Some(0),
    };
    let end = match range.end_bound() {
        Bound::Included(&e) => e.checked_add(1),
        Bound::Excluded(&e) => Some(e),
        Bound::Unbounded => Some(len),
    };
    match (start, end) {
        (Some(start), Some(end)) if start <= end && end <= len => Ok((start, end)),
        _ => Err(Error::InvalidValue(format!(
            "range {:?}..{:?} is out of bounds for {len} elements",
            range.start_bound(),
            range.end_bound()
        ))),
    }
}

impl<T: DeviceCopy> Clone for DeviceSlice<'_, T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T: DeviceCopy> Copy for DeviceSlice<'_, T> {}

impl<'a, T: DeviceCopy> DeviceSlice<'a, T> {
    /// Number of elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the view is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The context the memory belongs to.
    pub fn context(&self) -> &'a Context {
        &self.alloc.context
    }

    /// A sub-view of `range`.
    ///
    /// # Panics
    /// If the range is out of bounds; use [`DeviceSlice::try_slice`] for an error instead.
    pub fn slice(&self, range: impl RangeBounds<usize>) -> DeviceSlice<'a, T> {
        match self.try_slice(range) {
            Ok(view) => view,
            Err(error) => panic!("{error}"),
        }
    }

    /// A sub-view of `range`, or `Error::InvalidValue` if it is out of bounds.
    pub fn try_slice(&self, range: impl RangeBounds<usize>) -> Result<DeviceSlice<'a, T>> {
        let (start, end) = bounds(range, self.len)?;
        Ok(DeviceSlice {
            alloc: self.alloc,
            ptr: self.ptr + (start * size_of::<T>()) as CUdeviceptr,
            len: end - start,
            _marker: PhantomData,
        })
    }

    fn bytes(&self) -> usize {
        self.len * size_of::<T>()
    }

    /// Copies the view into `destination` (same length), waiting until done.
    pub fn copy_to_host(&self, destination: &mut [T]) -> Result<()> {
        same_len("copy_to_host", destination.len(), self.len)?;
        if self.len == 0 {
            return Ok(());
        }
        self.alloc.settle()?;
        let driver = self.alloc.context.bind()?;
        // SAFETY: `destination` holds exactly `bytes` writable bytes; the device range lies inside
        // the live allocation; any bytes are a valid `T` (DeviceCopy).
        check(unsafe { driver.cuMemcpyDtoH_v2()?(destination.as_mut_ptr().cast(), self.ptr, self.bytes()) })
    }

    /// The view's contents in a new `Vec`.
    pub fn to_vec(&self) -> Result<Vec<T>> {
        let mut out = Vec::<T>::with_capacity(self.len);
        if self.len == 0 {
            return Ok(out);
        }
        self.alloc.settle()?;
        let driver = self.alloc.context.bind()?;
        // SAFETY: `out` has capacity for `len` elements (`bytes` bytes); the device range lies
        // inside the live allocation.
        check(unsafe { driver.cuMemcpyDtoH_v2()?(out.as_mut_ptr().cast(), self.ptr, self.bytes()) })?;
        // SAFETY: the copy wrote all `len` elements, and any bytes are a valid `T` (DeviceCopy).
        unsafe { out.set_len(self.len) };
        Ok(out)
    }

    /// Queues a copy into `destination` on `stream`. Into a [`HostBuffer`](crate::HostBuffer)
    /// the copy is truly asynchronous and host access to the buffer first
    /// waits for `stream`; into other memory the call returns once the copy
    /// is done (pageable memory: the driver's behaviour; registered memory:
    /// this call waits for `stream`).
    pub fn copy_to_host_async<D: HostSliceMut<T> + ?Sized>(&self, destination: &mut D, stream: &Stream) -> Result<()> {
        let (host, len, pinned) = destination.host_parts_mut();
        self.host_copy_async(
            "copy_to_host_async",
            (host.cast_const(), len, pinned),
            stream,
            true,
            |driver| {
                // SAFETY: the destination holds `bytes` writable bytes. A HostBuffer is not freed or
                // accessed by the host until `stream` has run the copy (it waits for noted streams);
                // other memory is not accessed before this call returns, which is after the copy (the
                // driver's rule for pageable memory, an explicit wait for registered memory). The device
                // memory stays alive until work using it finishes (see `Allocation`).
                check(unsafe { driver.cuMemcpyDtoHAsync_v2()?(host.cast(), self.ptr, self.bytes(), stream.raw()) })
            },
        )
    }

    /// The part `copy_to_host_async` (`to_host`) and `copy_from_host_async`
    /// share around `copy`, the driver call itself: the length, context and
    /// stream checks against the host memory's parts (pointer, length,
    /// pinned buffer), nothing for an empty view, the stream-use and pinned
    /// buffer bookkeeping, and afterwards the wait that registered host
    /// memory needs.
    fn host_copy_async(
        &self,
        what: &str,
        (host, host_len, pinned): (*const T, usize, Option<&HostBuffer<T>>),
        stream: &Stream,
        to_host: bool,
        copy: impl FnOnce(&cuda_sys::Driver) -> Result<()>,
    ) -> Result<()> {
        if to_host {
            same_len(what, host_len, self.len)?;
        } else {
            same_len(what, self.len, host_len)?;
        }
        self.alloc.context.expect_same(stream.context(), "stream", "buffer")?;
        if let Some(pinned) = pinned {
            pinned.check_stream(stream)?;
        }
        if self.len == 0 {
            return Ok(());
        }
        let access = if to_host { Access::Read } else { Access::Write };
        // Dropped at the end, after the copy is queued.
        let _use = self.alloc.begin_use(stream, access)?;
        if let Some(pinned) = pinned {
            pinned.prepare_async(stream, to_host)?;
        }
        let driver = self.alloc.context.bind()?;
        let registered = pinned.is_none() && is_registered_host_memory(driver, host.cast());
        copy(driver)?;
        match pinned {
            Some(pinned) => pinned.note_pending(stream, to_host),
            None if registered => stream.synchronize_quiet(),
            None => Ok(()),
        }
    }

    /// The device address of the view's first element.
    ///
    /// # Safety
    /// As [`DeviceBuffer::as_raw`].
    pub unsafe fn as_raw(&self) -> CUdeviceptr {
        self.ptr
    }

    pub(crate) fn allocation(&self) -> &'a Allocation {
        self.alloc
    }

    pub(crate) fn ptr_ref(&self) -> &CUdeviceptr {
        &self.ptr
    }
}

impl<'a, T: DeviceCopy> Deref for DeviceSliceMut<'a, T> {
    type Target = DeviceSlice<'a, T>;

    fn deref(&self) -> &DeviceSlice<'a, T> {
        &self.view
    }
}

impl<'a, T: DeviceCopy> DeviceSliceMut<'a, T> {
    /// A writable sub-view of `range`, borrowing this one.
    ///
    /// # Panics
    /// If the range is out of bounds; use [`DeviceSliceMut::try_slice_mut`] for an error instead.
    pub fn slice_mut(&mut self, range: impl RangeBounds<usize>) -> DeviceSliceMut<'_, T> {
        match self.try_slice_mut(range) {
            Ok(view) => view,
            Err(error) => panic!("{error}"),
        }
    }

    /// A writable sub-view of `range`, or `Error::InvalidValue` if it is out of bounds.
    pub fn try_slice_mut(&mut self, range: impl RangeBounds<usize>) -> Result<DeviceSliceMut<'_, T>> {
        let view = self.view.try_slice(range)?;
        Ok(DeviceSliceMut {
            view,
            _marker: PhantomData,
        })
    }

    fn into_slice_mut(self, range: impl RangeBounds<usize>) -> DeviceSliceMut<'a, T> {
        match self.try_into_slice_mut(range) {
            Ok(view) => view,
            Err(error) => panic!("{error}"),
        }
    }

    fn try_into_slice_mut(self, range: impl RangeBounds<usize>) -> Result<DeviceSliceMut<'a, T>> {
        let view = self.view.try_slice(range)?;
        Ok(DeviceSliceMut {
            view,
            _marker: PhantomData,
        })
    }

    /// Copies `source` (same length) into the view, waiting until done.
    pub fn copy_from_host(&mut self, source: &[T]) -> Result<()> {
        same_len("copy_from_host", self.len, source.len())?;
        if self.len == 0 {
            return Ok(());
        }
        self.alloc.settle()?;
        let driver = self.alloc.context.bind()?;
        // SAFETY: `source` holds exactly `bytes` readable bytes; the device range lies inside the
        // live allocation, which this exclusive view may write.
        check(unsafe { driver.cuMemcpyHtoD_v2()?(self.ptr, source.as_ptr().cast(), self.bytes()) })
    }

    /// Copies `source` (same context and length) into the view, waiting until done.
    pub fn copy_from_device<S: AsDeviceSlice<T> + ?Sized>(&mut self, source: &S) -> Result<()> {
        let source = &source.as_device_slice();
        same_len("copy_from_device", self.len, source.len)?;
        self.alloc
            .context
            .expect_same(&source.alloc.context, "source buffer", "destination buffer")?;
        if self.len == 0 {
            return Ok(());
        }
        self.alloc.settle()?;
        source.alloc.settle()?;
        let driver = self.alloc.context.bind()?;
        // SAFETY: both ranges lie inside live allocations of the current context; they cannot
        // overlap because this view borrows its buffer exclusively.
        check(unsafe { driver.cuMemcpyDtoD_v2()?(self.ptr, source.ptr, self.bytes()) })?;
        wait_legacy_stream(driver)
    }

    /// Copies from a view of another context (another device), waiting until
    /// done (`cuMemcpyPeer`; works without peer access, faster with it). A
    /// source of the same context is copied as [`copy_from_device`](Self::copy_from_device).
    pub fn copy_from_peer<S: AsDeviceSlice<T> + ?Sized>(&mut self, source: &S) -> Result<()> {
        let source = &source.as_device_slice();
        if self.alloc.context == source.alloc.context {
            return self.copy_from_device(source);
        }
        same_len("copy_from_peer", self.len, source.len)?;
        if self.len == 0 {
            return Ok(());
        }
        self.alloc.settle()?;
        source.alloc.settle()?;
        let driver = self.alloc.context.bind()?;
        let (dst_ctx, src_ctx) = (self.alloc.context.raw(), source.alloc.context.raw());
        // SAFETY: both ranges lie inside live allocations of the contexts given with them.
        check(unsafe { driver.cuMemcpyPeer()?(self.ptr, dst_ctx, source.ptr, src_ctx, self.bytes()) })?;
        for context in [&source.alloc.context, &self.alloc.context] {
            let driver = context.bind()?;
            // SAFETY: the context is current; this waits for the copy in either context's queue.
            check(unsafe { driver.cuCtxSynchronize()?() })?;
        }
        Ok(())
    }

    /// Sets every byte to zero, waiting until done.
    pub fn memset_zero(&mut self) -> Result<()> {
        if self.len == 0 {
            return Ok(());
        }
        self.alloc.settle()?;
        let driver = self.alloc.context.bind()?;
        // SAFETY: the range lies inside the live allocation, which this exclusive view may write.
        check(unsafe { driver.cuMemsetD8_v2()?(self.ptr, 0, self.bytes()) })?;
        wait_legacy_stream(driver)
    }

    /// Queues a copy from `source` on `stream`. From a [`HostBuffer`](crate::HostBuffer) the
    /// copy is truly asynchronous and host writes to the buffer first wait
    /// for `stream`; from other memory the source may be reused as soon as
    /// the call returns (pageable memory is staged by the driver before it
    /// returns; for registered memory this call waits for `stream`).
    pub fn copy_from_host_async<S: HostSlice<T> + ?Sized>(&mut self, source: &S, stream: &Stream) -> Result<()> {
        let (host, len, pinned) = source.host_parts();
        self.host_copy_async("copy_from_host_async", (host, len, pinned), stream, false, |driver| {
            // SAFETY: the source holds `bytes` readable bytes. A HostBuffer is not freed or written by
            // the host until `stream` has run the copy (it waits for noted streams); other memory is
            // staged before this call returns (pageable) or waited for (registered). The device memory
            // stays alive until work using it finishes (see `Allocation`); this view may write it.
            check(unsafe { driver.cuMemcpyHtoDAsync_v2()?(self.ptr, host.cast(), self.bytes(), stream.raw()) })
        })
    }

    /// Queues a device-to-device copy on `stream` (all of one context).
    pub fn copy_from_device_async<S: AsDeviceSlice<T> + ?Sized>(&mut self, source: &S, stream: &Stream) -> Result<()> {
        let source = &source.as_device_slice();
        same_len("copy_from_device_async", self.len, source.len)?;
        self.alloc.context.expect_same(stream.context(), "stream", "buffer")?;
        self.alloc
            .context
            .expect_same(&source.alloc.context, "source buffer", "destination buffer")?;
        if self.len == 0 {
            return Ok(());
        }
        let _write = self.alloc.begin_use(stream, Access::Write)?;
        let _read = source.alloc.begin_use(stream, Access::Read)?;
        let driver = self.alloc.context.bind()?;
        // SAFETY: both ranges lie inside live allocations kept alive until the copy has run.
        check(unsafe { driver.cuMemcpyDtoDAsync_v2()?(self.ptr, source.ptr, self.bytes(), stream.raw()) })
    }

    /// Queues a copy from a view of another context on `stream` (of this
    /// view's context) with `cuMemcpyPeerAsync`.
    pub fn copy_from_peer_async<S: AsDeviceSlice<T> + ?Sized>(&mut self, source: &S, stream: &Stream) -> Result<()> {
        let source = &source.as_device_slice();
        if self.alloc.context == source.alloc.context {
            return self.copy_from_device_async(source, stream);
        }
        same_len("copy_from_peer_async", self.len, source.len)?;
        self.alloc.context.expect_same(stream.context(), "stream", "buffer")?;
        if self.len == 0 {
            return Ok(());
        }
        let _write = self.alloc.begin_use(stream, Access::Write)?;
        // A stream of this context reads the source, of another context: a peer's use.
        let _read = source.alloc.begin_use(stream, Access::Read)?;
        let driver = self.alloc.context.bind()?;
        let (dst_ctx, src_ctx) = (self.alloc.context.raw(), source.alloc.context.raw());
        // SAFETY: both ranges lie inside live allocations of the contexts given with them, kept
        // alive until the copy has run (the source waits for this context before it is freed).
        check(unsafe {
            driver.cuMemcpyPeerAsync()?(self.ptr, dst_ctx, source.ptr, src_ctx, self.bytes(), stream.raw())
        })
    }

    /// Queues zeroing every byte on `stream`.
    pub fn memset_zero_async(&mut self, stream: &Stream) -> Result<()> {
        self.alloc.context.expect_same(stream.context(), "stream", "buffer")?;
        if self.len == 0 {
            return Ok(());
        }
        let _write = self.alloc.begin_use(stream, Access::Write)?;
        let driver = self.alloc.context.bind()?;
        // SAFETY: the range lies inside the live allocation, kept alive until the memset has run.
        check(unsafe { driver.cuMemsetD8Async()?(self.ptr, 0, self.bytes(), stream.raw()) })
    }
}

/// Whether the driver knows `host` (pinned, registered or managed memory),
/// as opposed to pageable memory. Unknown answers count as known, which
/// makes the caller wait.
fn is_registered_host_memory(driver: &cuda_sys::Driver, host: *const u8) -> bool {
    let mut memory_type = 0u32;
    let Ok(get) = driver.cuPointerGetAttribute() else {
        return true;
    };
    // SAFETY: the memory-type attribute is a 32-bit value written to a valid local; the pointer is
    // only looked up, not dereferenced.
    let result = unsafe {
        get(
            (&mut memory_type as *mut u32).cast(),
            CUpointer_attribute::CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
            host as CUdeviceptr,
        )
    };
    result != CUresult::CUDA_ERROR_INVALID_VALUE
}

/// Waits for the current context's legacy default stream, where the
/// "synchronous" device-to-device copies and memsets run without blocking the host.
fn wait_legacy_stream(driver: &cuda_sys::Driver) -> Result<()> {
    let legacy: CUstream = ptr::null_mut();
    // SAFETY: the null stream is the current context's legacy default stream.
    check(unsafe { driver.cuStreamSynchronize()?(legacy) })
}
