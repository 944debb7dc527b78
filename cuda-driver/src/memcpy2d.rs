//! Pitched (row-padded) device memory and rectangular copies: 2-D
//! (`cuMemcpy2DAsync`) and 3-D (`cuMemcpy3DAsync`) blocks between host and
//! device memory or within device memory, at any offset in either.
//!
//! A [`Pitched`] (read-only) or [`PitchedMut`] (written) view describes
//! memory as `depth` slices of `height` rows of `width` elements, each row
//! `pitch` bytes from the next: a packed host slice, a packed
//! [`DeviceBuffer`](crate::DeviceBuffer) or a [`PitchedBuffer`] from
//! `cuMemAllocPitch`, whose rows the driver pads for aligned access.
//!
//! ```no_run
//! use cuda_driver::{Device, Pitched, PitchedBuffer, PitchedMut, Stream};
//!
//! # fn main() -> cuda_driver::Result<()> {
//! let context = Device::get(0)?.primary_context()?;
//! let stream = Stream::new(&context)?;
//! // A 64 x 32 image of f32, rows padded by the driver.
//! let mut image = PitchedBuffer::<f32>::alloc(&context, 64, 32)?;
//! let host: Vec<f32> = (0..64 * 32).map(|i| i as f32).collect();
//! image.copy_from_host(&host)?;
//! assert!(image.pitch_bytes() >= 64 * 4);
//!
//! // The 16 x 8 block at column 4, row 2, into a packed host array.
//! let mut block = vec![0.0f32; 16 * 8];
//! let mut destination = PitchedMut::host(&mut block, 16, 8)?;
//! destination.copy_2d_from((0, 0), &image.view(), (4, 2), (16, 8), &stream)?;
//! assert_eq!(block[0], host[2 * 64 + 4]);
//!
//! // The same block back into another place of the image, device to device.
//! let source = PitchedBuffer::<f32>::alloc(&context, 64, 32)?;
//! image.view_mut().copy_2d_from((40, 20), &source.view(), (4, 2), (16, 8), &stream)?;
//! stream.synchronize()?;
//! # let _ = Pitched::host(&host, 64, 32)?;
//! # Ok(())
//! # }
//! ```

use std::marker::PhantomData;
use std::mem::size_of;
use std::ptr;

use cuda_sys::driver::{CUdeviceptr, CUmemorytype, CUDA_MEMCPY2D, CUDA_MEMCPY3D};

use crate::device_copy::byte_len;
use crate::error::{check, Error, Result};
use crate::memory::Allocation;
use crate::{
    Access, AsDeviceSlice, Context, DeviceCopy, DeviceMemory, DeviceMemoryMut, DeviceSliceMut, Stream, StreamUse,
};

/// Where a view's memory is.
#[derive(Clone, Copy)]
enum Memory<'a> {
    /// Host memory (any: pageable, pinned or registered).
    Host(*const u8),
    /// Device memory inside a live allocation.
    Device { alloc: &'a Allocation, ptr: CUdeviceptr },
}

/// A read-only view of memory as `depth` slices of `height` rows of
/// `width` elements of `T`, rows `pitch` bytes apart: the source of a
/// rectangular copy.
#[derive(Clone, Copy)]
pub struct Pitched<'a, T: DeviceCopy> {
    memory: Memory<'a>,
    pitch: usize,
    width: usize,
    height: usize,
    depth: usize,
    _marker: PhantomData<&'a [T]>,
}

/// A writable view of memory laid out as [`Pitched`] describes: the
/// destination of a rectangular copy.
pub struct PitchedMut<'a, T: DeviceCopy> {
    view: Pitched<'a, T>,
    _marker: PhantomData<&'a mut [T]>,
}

// SAFETY: a view is a shared borrow of host or device memory of `T`; the allocation bookkeeping it
// reaches is atomics and a mutex.
unsafe impl<T: DeviceCopy + Sync> Send for Pitched<'_, T> {}
// SAFETY: as above; shared access only reads the description.
unsafe impl<T: DeviceCopy + Sync> Sync for Pitched<'_, T> {}
// SAFETY: a writable view is an exclusive borrow of memory of `T`.
unsafe impl<T: DeviceCopy + Send> Send for PitchedMut<'_, T> {}
// SAFETY: shared access to a writable view only reads its description.
unsafe impl<T: DeviceCopy + Sync> Sync for PitchedMut<'_, T> {}

/// `(width, height, depth)` of `len` packed elements in rows of `width` and
/// slices of `height` rows; the length must be a whole number of slices.
fn packed_shape<T>(len: usize, width: usize, height: usize) -> Result<(usize, usize, usize)> {
    if size_of::<T>() == 0 {
        return Err(Error::InvalidValue("zero-sized element types cannot be copied".into()));
    }
    let slice = width
        .checked_mul(height)
        .filter(|&s| s > 0)
        .ok_or_else(|| Error::InvalidValue(format!("a {width} x {height} slice is empty or overflows")))?;
    if len == 0 || len % slice != 0 {
        return Err(Error::InvalidValue(format!(
            "{len} elements are not a whole number of {width} x {height} slices"
        )));
    }
    Ok((width, height, len / slice))
}

impl<'a, T: DeviceCopy> Pitched<'a, T> {
    /// Packed host memory: `data.len() / (width * height)` slices of
    /// `height` rows of `width` elements (a 2-D image is one slice).
    pub fn host(data: &'a [T], width: usize, height: usize) -> Result<Self> {
        let (width, height, depth) = packed_shape::<T>(data.len(), width, height)?;
        Ok(Self::new(
            Memory::Host(data.as_ptr().cast()),
            width * size_of::<T>(),
            width,
            height,
            depth,
        ))
    }

    /// Packed device memory (a buffer or a view of one), shaped as
    /// [`Pitched::host`] shapes host memory.
    pub fn device<S: AsDeviceSlice<T> + ?Sized>(source: &'a S, width: usize, height: usize) -> Result<Self> {
        let slice = source.as_device_slice();
        let (width, height, depth) = packed_shape::<T>(slice.len(), width, height)?;
        let memory = Memory::Device {
            alloc: slice.allocation(),
            ptr: *slice.ptr_ref(),
        };
        Ok(Self::new(memory, width * size_of::<T>(), width, height, depth))
    }

    fn new(memory: Memory<'a>, pitch: usize, width: usize, height: usize, depth: usize) -> Self {
        Pitched {
            memory,
            pitch,
            width,
            height,
            depth,
            _marker: PhantomData,
        }
    }

    /// Elements in a row.
    pub fn width(&self) -> usize {
        self.width
    }

    /// Rows in a slice.
    pub fn height(&self) -> usize {
        self.height
    }

    /// Slices (1 for 2-D memory).
    pub fn depth(&self) -> usize {
        self.depth
    }

    /// Bytes from the start of one row to the start of the next.
    pub fn pitch_bytes(&self) -> usize {
        self.pitch
    }

    fn context(&self) -> Option<&'a Context> {
        match self.memory {
            Memory::Host(_) => None,
            Memory::Device { alloc, .. } => Some(alloc.context()),
        }
    }

    /// Checks that the block of `extent` at `origin` lies inside `limits`
    /// (the view's `(width, rows, slices)`).
    fn check_block(what: &str, origin: [usize; 3], extent: [usize; 3], limits: [usize; 3]) -> Result<()> {
        for axis in 0..3 {
            let inside = origin[axis]
                .checked_add(extent[axis])
                .is_some_and(|end| end <= limits[axis]);
            if !inside {
                return Err(Error::InvalidValue(format!(
                    "{what}: block {extent:?} at {origin:?} exceeds the view's {limits:?} (elements, rows, slices)"
                )));
            }
        }
        Ok(())
    }

    /// `(width, rows, slices)` as a 2-D copy sees the view: its slices stacked.
    fn limits_2d(&self) -> [usize; 3] {
        [self.width, self.height * self.depth, 1]
    }

    fn limits_3d(&self) -> [usize; 3] {
        [self.width, self.height, self.depth]
    }
}

impl<'a, T: DeviceCopy> PitchedMut<'a, T> {
    /// Packed, writable host memory (see [`Pitched::host`]).
    pub fn host(data: &'a mut [T], width: usize, height: usize) -> Result<Self> {
        let (width, height, depth) = packed_shape::<T>(data.len(), width, height)?;
        let memory = Memory::Host(data.as_mut_ptr().cast_const().cast());
        Ok(Self::from_view(Pitched::new(
            memory,
            width * size_of::<T>(),
            width,
            height,
            depth,
        )))
    }

    /// Packed, writable device memory (see [`Pitched::host`]).
    pub fn device(destination: DeviceSliceMut<'a, T>, width: usize, height: usize) -> Result<Self> {
        let (width, height, depth) = packed_shape::<T>(destination.len(), width, height)?;
        let memory = Memory::Device {
            alloc: destination.allocation(),
            ptr: *destination.ptr_ref(),
        };
        Ok(Self::from_view(Pitched::new(
            memory,
            width * size_of::<T>(),
            width,
            height,
            depth,
        )))
    }

    fn from_view(view: Pitched<'a, T>) -> Self {
        PitchedMut {
            view,
            _marker: PhantomData,
        }
    }

    /// The same memory as a read-only view.
    pub fn as_view(&self) -> Pitched<'_, T> {
        self.view
    }

    /// Queues a copy of the `(width, height)` block of `source` at column
    /// and row `from` to `to` in this view, on `stream` (`cuMemcpy2DAsync`).
    /// A view of several slices is seen as `height * depth` rows.
    ///
    /// Device memory on either side must belong to the stream's context.
    /// Between device memory the copy is asynchronous; with host memory on
    /// either side the call waits for `stream`, so the borrowed host memory
    /// is free again when it returns. Out-of-bounds blocks are
    /// [`Error::InvalidValue`]; an empty block copies nothing.
    pub fn copy_2d_from(
        &mut self,
        to: (usize, usize),
        source: &Pitched<'_, T>,
        from: (usize, usize),
        extent: (usize, usize),
        stream: &Stream,
    ) -> Result<()> {
        let (to, from, extent) = ([to.0, to.1, 0], [from.0, from.1, 0], [extent.0, extent.1, 1]);
        let destination = self.view;
        Pitched::<T>::check_block("copy_2d_from", to, extent, destination.limits_2d())?;
        Pitched::<T>::check_block("copy_2d_from", from, extent, source.limits_2d())?;
        self.queue(source, stream, extent, |driver, dst, src| {
            let copy = CUDA_MEMCPY2D {
                srcXInBytes: from[0] * size_of::<T>(),
                srcY: from[1],
                srcMemoryType: src.kind,
                srcHost: src.host,
                srcDevice: src.device,
                srcArray: ptr::null_mut(),
                srcPitch: source.pitch,
                dstXInBytes: to[0] * size_of::<T>(),
                dstY: to[1],
                dstMemoryType: dst.kind,
                dstHost: dst.host.cast_mut(),
                dstDevice: dst.device,
                dstArray: ptr::null_mut(),
                dstPitch: destination.pitch,
                WidthInBytes: extent[0] * size_of::<T>(),
                Height: extent[1],
            };
            // SAFETY: the block lies inside both views (checked above), whose memory is borrowed
            // for this call; device memory stays allocated until the copy has run (the stream's
            // use is noted), and host memory is not released before the caller waits for it.
            check(unsafe { driver.cuMemcpy2DAsync_v2()?(&copy, stream.raw()) })
        })
    }

    /// Queues a copy of the `(width, height, depth)` block of `source` at
    /// `from` (column, row, slice) to `to` in this view, on `stream`
    /// (`cuMemcpy3DAsync`). As [`PitchedMut::copy_2d_from`] otherwise.
    pub fn copy_3d_from(
        &mut self,
        to: (usize, usize, usize),
        source: &Pitched<'_, T>,
        from: (usize, usize, usize),
        extent: (usize, usize, usize),
        stream: &Stream,
    ) -> Result<()> {
        let (to, from, extent) = (
            [to.0, to.1, to.2],
            [from.0, from.1, from.2],
            [extent.0, extent.1, extent.2],
        );
        let destination = self.view;
        Pitched::<T>::check_block("copy_3d_from", to, extent, destination.limits_3d())?;
        Pitched::<T>::check_block("copy_3d_from", from, extent, source.limits_3d())?;
        self.queue(source, stream, extent, |driver, dst, src| {
            let copy = CUDA_MEMCPY3D {
                srcXInBytes: from[0] * size_of::<T>(),
                srcY: from[1],
                srcZ: from[2],
                srcLOD: 0,
                srcMemoryType: src.kind,
                srcHost: src.host,
                srcDevice: src.device,
                srcArray: ptr::null_mut(),
                reserved0: ptr::null_mut(),
                srcPitch: source.pitch,
                srcHeight: source.height,
                dstXInBytes: to[0] * size_of::<T>(),
                dstY: to[1],
                dstZ: to[2],
                dstLOD: 0,
                dstMemoryType: dst.kind,
                dstHost: dst.host.cast_mut(),
                dstDevice: dst.device,
                dstArray: ptr::null_mut(),
                reserved1: ptr::null_mut(),
                dstPitch: destination.pitch,
                dstHeight: destination.height,
                WidthInBytes: extent[0] * size_of::<T>(),
                Height: extent[1],
                Depth: extent[2],
            };
            // SAFETY: as in `copy_2d_from`.
            check(unsafe { driver.cuMemcpy3DAsync_v2()?(&copy, stream.raw()) })
        })
    }

    /// The checks and bookkeeping both copies share around `copy`: contexts,
    /// nothing for an empty block, the streams' use of device memory, and the
    /// wait when host memory is involved.
    fn queue(
        &mut self,
        source: &Pitched<'_, T>,
        stream: &Stream,
        extent: [usize; 3],
        copy: impl FnOnce(&cuda_sys::Driver, Side, Side) -> Result<()>,
    ) -> Result<()> {
        for context in [self.view.context(), source.context()].into_iter().flatten() {
            context.expect_same(stream.context(), "stream", "memory")?;
        }
        if extent.contains(&0) {
            return Ok(());
        }
        // Dropped at the end, once the copy is queued.
        let _uses = (
            self.view.memory.begin_use(stream, Access::Write)?,
            source.memory.begin_use(stream, Access::Read)?,
        );
        let driver = stream.context().bind()?;
        copy(driver, Side::of(self.view.memory), Side::of(source.memory))?;
        if matches!(self.view.memory, Memory::Host(_)) || matches!(source.memory, Memory::Host(_)) {
            stream.synchronize_quiet()?;
        }
        Ok(())
    }
}

impl<'a> Memory<'a> {
    /// Begins the use of device memory by `stream` (nothing for host memory).
    fn begin_use(self, stream: &Stream, access: Access) -> Result<Option<StreamUse<'a>>> {
        match self {
            Memory::Host(_) => Ok(None),
            Memory::Device { alloc, .. } => alloc.begin_use(stream, access).map(Some),
        }
    }
}

/// One side of a copy descriptor.
struct Side {
    kind: CUmemorytype,
    host: *const std::ffi::c_void,
    device: CUdeviceptr,
}

impl Side {
    fn of(memory: Memory<'_>) -> Side {
        match memory {
            Memory::Host(host) => Side {
                kind: CUmemorytype::CU_MEMORYTYPE_HOST,
                host: host.cast(),
                device: 0,
            },
            Memory::Device { ptr, .. } => Side {
                kind: CUmemorytype::CU_MEMORYTYPE_DEVICE,
                host: ptr::null(),
                device: ptr,
            },
        }
    }
}

/// Device memory of `depth` slices of `height` rows of `width` elements,
/// each row padded to the pitch the driver chose (`cuMemAllocPitch`) for
/// aligned access. Contents are unspecified until written. Freed on drop,
/// after the work that used it (as [`DeviceBuffer`](crate::DeviceBuffer)).
pub struct PitchedBuffer<T: DeviceCopy> {
    alloc: Allocation,
    pitch: usize,
    width: usize,
    height: usize,
    depth: usize,
    _marker: PhantomData<T>,
}

// SAFETY: the buffer owns its device memory as `DeviceBuffer` does; see there.
unsafe impl<T: DeviceCopy + Send> Send for PitchedBuffer<T> {}
// SAFETY: as for `DeviceBuffer`.
unsafe impl<T: DeviceCopy + Sync> Sync for PitchedBuffer<T> {}

impl<T: DeviceCopy> PitchedBuffer<T> {
    /// `height` rows of `width` elements (`cuMemAllocPitch`). Zero sizes are
    /// [`Error::InvalidValue`].
    pub fn alloc(context: &Context, width: usize, height: usize) -> Result<Self> {
        Self::alloc_3d(context, width, height, 1)
    }

    /// `depth` slices of `height` rows of `width` elements, the slices
    /// stacked as `height * depth` pitched rows.
    pub fn alloc_3d(context: &Context, width: usize, height: usize, depth: usize) -> Result<Self> {
        let row_bytes = byte_len::<T>(width)?;
        let rows = height
            .checked_mul(depth)
            .filter(|&rows| rows > 0)
            .ok_or_else(|| Error::InvalidValue(format!("{height} rows x {depth} slices is empty or overflows")))?;
        // The widest access kernels make to it: 4, 8 or 16 bytes.
        let element_bytes = match size_of::<T>() {
            s if s % 16 == 0 => 16,
            s if s % 8 == 0 => 8,
            _ => 4,
        };
        let driver = context.bind()?;
        let (mut ptr, mut pitch) = (0, 0);
        // SAFETY: both are valid out-pointers; the context is current.
        check(unsafe { driver.cuMemAllocPitch_v2()?(&mut ptr, &mut pitch, row_bytes, rows, element_bytes) })?;
        let alloc = Allocation::new(ptr, context.clone());
        if pitch < row_bytes {
            return Err(Error::InvalidValue(format!(
                "cuMemAllocPitch returned a pitch of {pitch} bytes for rows of {row_bytes}"
            )));
        }
        Ok(PitchedBuffer {
            alloc,
            pitch,
            width,
            height,
            depth,
            _marker: PhantomData,
        })
    }

    /// Elements in a row.
    pub fn width(&self) -> usize {
        self.width
    }

    /// Rows in a slice.
    pub fn height(&self) -> usize {
        self.height
    }

    /// Slices (1 for [`PitchedBuffer::alloc`]).
    pub fn depth(&self) -> usize {
        self.depth
    }

    /// Bytes from one row to the next, at least `width * size_of::<T>()`.
    pub fn pitch_bytes(&self) -> usize {
        self.pitch
    }

    /// The context the memory belongs to.
    pub fn context(&self) -> &Context {
        self.alloc.context()
    }

    /// The whole buffer as the source of a copy.
    pub fn view(&self) -> Pitched<'_, T> {
        Pitched::new(
            Memory::Device {
                alloc: &self.alloc,
                ptr: self.alloc.ptr,
            },
            self.pitch,
            self.width,
            self.height,
            self.depth,
        )
    }

    /// The whole buffer as the destination of a copy.
    pub fn view_mut(&mut self) -> PitchedMut<'_, T> {
        PitchedMut::from_view(self.view())
    }

    /// Fills the buffer from packed host data of `width * height * depth`
    /// elements, waiting until done.
    pub fn copy_from_host(&mut self, data: &[T]) -> Result<()> {
        let (width, height, depth) = (self.width, self.height, self.depth);
        let source = self.packed_host(data, width, height, depth)?;
        let stream = self.legacy_stream();
        self.view_mut()
            .copy_3d_from((0, 0, 0), &source, (0, 0, 0), (width, height, depth), &stream)
    }

    /// The contents, packed (`width * height * depth` elements), in a new `Vec`.
    pub fn to_vec(&self) -> Result<Vec<T>> {
        let len = self.width * self.height * self.depth;
        let mut out = Vec::<T>::with_capacity(len);
        let stream = self.legacy_stream();
        {
            // The vector's spare capacity, packed: only written through the pointer, never read.
            let memory = Memory::Host(out.as_mut_ptr().cast_const().cast());
            let row = self.width * size_of::<T>();
            let mut destination = PitchedMut::from_view(Pitched::new(memory, row, self.width, self.height, self.depth));
            destination.copy_3d_from(
                (0, 0, 0),
                &self.view(),
                (0, 0, 0),
                (self.width, self.height, self.depth),
                &stream,
            )?;
        }
        // SAFETY: the copy wrote all `len` elements (it has finished: host memory makes it wait),
        // and any bytes are a valid `T` (DeviceCopy).
        unsafe { out.set_len(len) };
        Ok(out)
    }

    fn packed_host<'d>(&self, data: &'d [T], width: usize, height: usize, depth: usize) -> Result<Pitched<'d, T>> {
        if data.len() != width * height * depth {
            return Err(Error::InvalidValue(format!(
                "{} elements given for a {width} x {height} x {depth} buffer",
                data.len()
            )));
        }
        Pitched::host(data, width, height)
    }

    /// The context's legacy default stream, where synchronous copies run.
    fn legacy_stream(&self) -> Stream {
        // SAFETY: the null stream is the legacy default stream of every context; it lives as long
        // as the context, which the returned stream holds.
        unsafe { Stream::from_raw(self.alloc.context(), ptr::null_mut()) }
    }

    /// The device address of the first row.
    ///
    /// # Safety
    /// As [`DeviceBuffer::as_raw`](crate::DeviceBuffer::as_raw).
    pub unsafe fn as_raw(&self) -> CUdeviceptr {
        self.alloc.ptr
    }
}

// SAFETY: the range is the buffer's own allocation (`pitch` bytes for each of its
// `height * depth` rows, as `cuMemAllocPitch` made it), of its context: dense bytes that all
// belong to the buffer, the rows' padding included (a routine that takes it as consecutive
// elements sees the padding as elements; one that takes a leading dimension is given `pitch`);
// `Allocation`'s drop orders the free after every use begun through its tracker.
unsafe impl<T: DeviceCopy> DeviceMemory for PitchedBuffer<T> {
    fn context(&self) -> &Context {
        self.alloc.context()
    }

    fn device_ptr(&self) -> CUdeviceptr {
        self.alloc.ptr
    }

    fn byte_len(&self) -> usize {
        self.pitch * self.height * self.depth
    }

    #[inline]
    fn begin_use(&self, stream: &Stream, access: Access) -> Result<StreamUse<'_>> {
        self.alloc.begin_use(stream, access)
    }
}

// SAFETY: `&mut PitchedBuffer` is the only access to the buffer.
unsafe impl<T: DeviceCopy> DeviceMemoryMut for PitchedBuffer<T> {}

impl<T: DeviceCopy> std::fmt::Debug for PitchedBuffer<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PitchedBuffer")
            .field("ptr", &format_args!("{:#x}", self.alloc.ptr))
            .field("width", &self.width)
            .field("height", &self.height)
            .field("depth", &self.depth)
            .field("pitch", &self.pitch)
            .finish()
    }
}

impl<T: DeviceCopy> std::fmt::Debug for Pitched<'_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pitched")
            .field("host", &matches!(self.memory, Memory::Host(_)))
            .field("width", &self.width)
            .field("height", &self.height)
            .field("depth", &self.depth)
            .field("pitch", &self.pitch)
            .finish()
    }
}

impl<T: DeviceCopy> std::fmt::Debug for PitchedMut<'_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.view.fmt(f)
    }
}
