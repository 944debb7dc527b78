//! [`DeviceArray`]: an n-dimensional, C-contiguous array in pooled device memory.

use std::ffi::c_void;
use std::marker::PhantomData;
use std::mem::size_of;
use std::sync::Arc;

use cuda_driver::{Access, Context, KernelArg, Stream, StreamUse};
use cuda_sys::driver::CUdeviceptr;

use crate::array::dtype::{DType, Element};
use crate::array::memory::{overlap, ForeignMemory, MemoryPool, Overlap, PooledBlock, Span, StreamUses};
use crate::error::{Error, Result};

/// Something that gives an array shape: a length, an array or slice of extents.
pub trait IntoShape {
    /// The extents, outermost first.
    fn into_shape(self) -> Vec<usize>;
}

impl IntoShape for usize {
    fn into_shape(self) -> Vec<usize> {
        vec![self]
    }
}

impl<const N: usize> IntoShape for [usize; N] {
    fn into_shape(self) -> Vec<usize> {
        self.to_vec()
    }
}

impl IntoShape for &[usize] {
    fn into_shape(self) -> Vec<usize> {
        self.to_vec()
    }
}

impl IntoShape for Vec<usize> {
    fn into_shape(self) -> Vec<usize> {
        self
    }
}

/// Elements of `shape` (zero for a zero-size array), or an error for an overflowing product.
pub(crate) fn shape_len(shape: &[usize]) -> Result<usize> {
    shape
        .iter()
        .try_fold(1usize, |acc, &d| acc.checked_mul(d))
        .ok_or_else(|| Error::InvalidValue(format!("shape {shape:?} has more elements than usize holds")))
}

/// An empty `Vec` with room for exactly `len` elements, or an error when that many bytes
/// overflow or cannot be allocated.
pub(crate) fn host_vec<T>(len: usize) -> Result<Vec<T>> {
    let mut out = Vec::new();
    out.try_reserve_exact(len).map_err(|error| {
        Error::InvalidValue(format!(
            "cannot hold {len} elements of {} bytes in host memory: {error}",
            size_of::<T>()
        ))
    })?;
    Ok(out)
}

/// C-contiguous strides of `shape`, in elements (the shape of an array that exists: its
/// element count fits `isize`).
pub(crate) fn c_strides(shape: &[usize]) -> Vec<isize> {
    let mut strides = vec![1isize; shape.len()];
    for axis in (0..shape.len().saturating_sub(1)).rev() {
        strides[axis] = strides[axis + 1].wrapping_mul(shape[axis + 1].max(1) as isize);
    }
    strides
}

/// Whether `strides` lay `shape` out C-contiguously (extents of 1 may have any stride).
pub(crate) fn is_c_contiguous(shape: &[usize], strides: &[isize]) -> bool {
    let mut expected = 1isize;
    for (&extent, &stride) in shape.iter().zip(strides).rev() {
        if extent != 1 && stride != expected {
            // A zero-size array has no element to be out of place.
            return shape.contains(&0);
        }
        expected = expected.wrapping_mul(extent as isize);
    }
    true
}

/// A block of `pool` on `stream` for an array of `shape` with elements of `size` bytes, and the
/// element count: the part of [`DeviceArray::empty_in`] that does not depend on the element
/// type, so each type adds little code.
fn alloc_elements(pool: &MemoryPool, stream: &Stream, shape: &[usize], size: usize) -> Result<(PooledBlock, usize)> {
    let len = shape_len(shape)?;
    let bytes = len
        .checked_mul(size)
        .ok_or_else(|| Error::InvalidValue(format!("{len} elements overflow the byte size")))?;
    // A zero-size array still holds a (smallest) block: it keeps the stream and context.
    Ok((pool.alloc(stream, bytes.max(1))?, len))
}

/// What a view's memory belongs to: a pool block, or memory from another library.
pub(crate) enum Storage {
    Pooled(PooledBlock),
    Foreign(Box<dyn ForeignMemory>),
}

// SAFETY: storage is device memory and the handles that own it: the stream and pool handles
// may be used from any thread (each call makes the context current), and the stream-use list
// is behind a mutex; shared access only reads. An imported DLPack tensor's deleter may be
// called from any thread (the producer's obligation, documented at `from_dlpack`).
unsafe impl Send for Storage {}
// SAFETY: as above.
unsafe impl Sync for Storage {}

impl Storage {
    #[inline]
    fn uses(&self) -> &StreamUses {
        match self {
            Storage::Pooled(block) => block.uses(),
            Storage::Foreign(memory) => memory.uses(),
        }
    }

    /// Refuses a use of memory that is not the storage's now (a graph allocation after its
    /// capture).
    #[inline]
    fn check_use(&self) -> cuda_driver::Result<()> {
        match self {
            Storage::Pooled(block) => block.check_use(),
            Storage::Foreign(_) => Ok(()),
        }
    }
}

/// An n-dimensional array of `T` in pooled device memory, ordered on one stream.
///
/// An array is a view: a shape, strides in elements (zero along broadcast axes, negative along
/// reversed ones) and the address of its first element, over storage that views share
/// ([`slice`](Self::slice), [`transpose`](Self::transpose), [`flip`](Self::flip),
/// [`broadcast_to`](Self::broadcast_to), [`reshape`](Self::reshape) of a compact array, ...).
/// Zero-size arrays (shape `[0]`, `[3, 0]`) are valid, as in NumPy.
///
/// Memory comes from a [`MemoryPool`] and goes back to it when the last view is dropped, in the
/// stream's order (never before queued work is done). Work on another stream may use the array:
/// the first time it does (through [`Arg`](crate::Arg), [`KernelArg`] or a copy), that stream waits for the
/// array's stream, and on drop the array's stream waits for it. Ordering between later writes
/// and reads on different streams is the caller's, as with any CUDA memory; so is the order of
/// writes through two views of the same storage on different streams.
///
/// `Debug` prints the device address of the first element (and a [`PooledBlock`](crate::PooledBlock)'s `Debug`
/// its block's), which helps when comparing with a profiler or `compute-sanitizer` report. That
/// is harmless: an address is only a number, and safe code has no way to reach memory through
/// one. Everything safe that runs device code (expressions, reductions, copies, fills, random)
/// runs code the crate wrote, on the arrays it is given; everything that runs caller-written
/// device code or takes an address ([`RawKernel::launch`](crate::RawKernel::launch),
/// [`ElementwiseKernel::launch`](crate::ElementwiseKernel::launch),
/// [`ReductionKernel::launch`](crate::ReductionKernel::launch), `Stream::launch`,
/// [`DLPackTensor::from_raw`](crate::DLPackTensor::from_raw)) is `unsafe`, and its caller
/// promises the code touches only the memory it was given.
///
/// ```no_run
/// use cuda_core::{Device, DeviceArray};
///
/// # fn main() -> cuda_core::Result<()> {
/// let device = Device::new(0)?;
/// let stream = device.create_stream()?;
/// let x = DeviceArray::from_slice(&stream, &[1.0f32, 2.0, 3.0, 4.0])?.reshape([2, 2])?;
/// assert_eq!(x.shape(), [2, 2]);
/// assert_eq!(x.transpose().to_vec()?, [1.0, 3.0, 2.0, 4.0]);
/// # Ok(())
/// # }
/// ```
pub struct DeviceArray<T: Element> {
    ptr: CUdeviceptr,
    shape: Vec<usize>,
    strides: Vec<isize>,
    len: usize,
    storage: Arc<Storage>,
    _marker: PhantomData<T>,
}

impl<T: Element> DeviceArray<T> {
    /// An array of `shape` on `stream`, from the context's [`MemoryPool::for_context`], with
    /// unspecified contents (any bit pattern is a valid `T`).
    pub fn empty(stream: &Stream, shape: impl IntoShape) -> Result<Self> {
        Self::empty_in(&MemoryPool::for_context(stream.context()), stream, shape)
    }

    /// Like [`empty`](Self::empty), from `pool`.
    pub fn empty_in(pool: &MemoryPool, stream: &Stream, shape: impl IntoShape) -> Result<Self> {
        let shape = shape.into_shape();
        let (block, len) = alloc_elements(pool, stream, &shape, size_of::<T>())?;
        Ok(DeviceArray {
            ptr: block.ptr(),
            strides: c_strides(&shape),
            shape,
            len,
            storage: Arc::new(Storage::Pooled(block)),
            _marker: PhantomData,
        })
    }

    /// An array over `storage`, whose first element is at `ptr`, laid out by `strides`
    /// (`None`: C-contiguous).
    pub(crate) fn from_storage(
        ptr: CUdeviceptr,
        shape: Vec<usize>,
        strides: Option<Vec<isize>>,
        storage: Storage,
    ) -> Result<Self> {
        let len = shape_len(&shape)?;
        let strides = strides.unwrap_or_else(|| c_strides(&shape));
        if strides.len() != shape.len() {
            return Err(Error::InvalidValue(format!(
                "strides {strides:?} do not match shape {shape:?}"
            )));
        }
        Ok(DeviceArray {
            ptr,
            shape,
            strides,
            len,
            storage: Arc::new(storage),
            _marker: PhantomData,
        })
    }

    /// The pool the array's memory came from (the context's default pool for memory from
    /// another library): where routines that write into it take their scratch memory.
    pub(crate) fn pool(&self) -> MemoryPool {
        match &*self.storage {
            Storage::Pooled(block) => block.pool().clone(),
            Storage::Foreign(_) => MemoryPool::for_context(self.context()),
        }
    }

    /// A view of the same storage: first element at `ptr`, with `shape` and `strides`.
    pub(crate) fn view(&self, ptr: CUdeviceptr, shape: Vec<usize>, strides: Vec<isize>) -> Self {
        DeviceArray {
            ptr,
            len: shape.iter().product(),
            shape,
            strides,
            storage: self.storage.clone(),
            _marker: PhantomData,
        }
    }

    /// A view of the same storage as elements of `U`: first element at `ptr`, `strides` in
    /// elements of `U` (the parts of complex elements, see `DeviceArray::real`).
    pub(crate) fn view_as<U: Element>(
        &self,
        ptr: CUdeviceptr,
        shape: Vec<usize>,
        strides: Vec<isize>,
    ) -> DeviceArray<U> {
        DeviceArray {
            ptr,
            len: shape.iter().product(),
            shape,
            strides,
            storage: self.storage.clone(),
            _marker: PhantomData,
        }
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the array has no elements (some extent is zero).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The extents, outermost first.
    pub fn shape(&self) -> &[usize] {
        &self.shape
    }

    /// Number of dimensions.
    pub fn ndim(&self) -> usize {
        self.shape.len()
    }

    /// The strides, in elements: zero along broadcast axes, negative along reversed ones
    /// (a negative step, [`flip`](Self::flip)).
    pub fn strides(&self) -> &[isize] {
        &self.strides
    }

    /// The element type.
    pub fn dtype(&self) -> DType {
        T::DTYPE
    }

    /// Whether the elements are laid out C-contiguously (row-major, no gaps), so the array is
    /// one run of `len` elements from its first.
    pub fn is_contiguous(&self) -> bool {
        is_c_contiguous(&self.shape, &self.strides)
    }

    /// Whether two elements share an address (a broadcast view), so it cannot be written.
    pub(crate) fn is_broadcast(&self) -> bool {
        self.len > 1 && self.shape.iter().zip(&self.strides).any(|(&d, &s)| d > 1 && s == 0)
    }

    /// Size in bytes of the elements (`len * size_of::<T>()`; views are created only where
    /// that fits, and it saturates at `usize::MAX` rather than wrap).
    pub fn size_bytes(&self) -> usize {
        self.len.saturating_mul(size_of::<T>())
    }

    /// The stream the array is ordered on.
    pub fn stream(&self) -> &Stream {
        self.storage.uses().owner()
    }

    /// The context the memory belongs to.
    pub fn context(&self) -> &Context {
        self.stream().context()
    }

    /// Whether `other` views the same storage object (the same pool block or the same import).
    /// Two imports of one tensor are different storage over the same memory: use
    /// [`may_share_memory`](Self::may_share_memory) to ask about memory.
    pub fn shares_storage<U: Element>(&self, other: &DeviceArray<U>) -> bool {
        Arc::ptr_eq(&self.storage, &other.storage)
    }

    /// Whether the device bytes the two views can reach intersect, as NumPy's
    /// `may_share_memory` (address ranges: views interleaving without a common element, such
    /// as `x[::2]` and `x[1::2]`, count as sharing). Zero-size views share nothing.
    pub fn may_share_memory<U: Element>(&self, other: &DeviceArray<U>) -> bool {
        overlap(self.span(), other.span()) != Overlap::Disjoint
    }

    /// The memory the view reaches, for overlap checks.
    pub(crate) fn span(&self) -> Span<'_> {
        Span {
            ptr: self.ptr,
            element_size: size_of::<T>(),
            shape: &self.shape,
            strides: &self.strides,
        }
    }

    /// The device address of the first element (with negative strides, not the lowest address
    /// the view reaches).
    ///
    /// # Safety
    /// Valid only while the array lives; work using it must be queued on the array's stream or
    /// ordered before the array's drop by the caller.
    pub unsafe fn as_raw(&self) -> CUdeviceptr {
        self.ptr
    }

    pub(crate) fn ptr_ref(&self) -> &CUdeviceptr {
        &self.ptr
    }

    /// Begins a use of the array by work about to be queued on `stream` (see the type's docs);
    /// checks its context first. Drop the guard once the work is queued.
    #[inline]
    pub(crate) fn begin_use(&self, stream: &Stream, access: Access) -> cuda_driver::Result<StreamUse<'_>> {
        if stream.context() != self.context() {
            return Err(cuda_driver::Error::WrongContext {
                object: "array",
                used_with: "stream",
            });
        }
        self.check_storage()?;
        self.storage.uses().begin_use(stream, access)
    }

    /// Refuses work on memory that is not the array's now: a graph allocation (made during a
    /// stream capture) after its capture. Work queued on the array's own stream without
    /// [`begin_use`](Self::begin_use) checks this first.
    #[inline]
    pub(crate) fn check_storage(&self) -> cuda_driver::Result<()> {
        self.storage.check_use()
    }

    pub(crate) fn same_len(&self, what: &str, other: usize) -> Result<()> {
        if other == self.len {
            Ok(())
        } else {
            Err(Error::InvalidValue(format!(
                "{what}: the array holds {} elements, the other side {other}",
                self.len
            )))
        }
    }

    pub(crate) fn check_writable(&self, what: &str) -> Result<()> {
        if self.is_broadcast() {
            return Err(Error::InvalidValue(format!(
                "{what}: the array of shape {:?} and strides {:?} is a broadcast view, whose elements share memory; it cannot be written",
                self.shape, self.strides
            )));
        }
        Ok(())
    }
}

/// Checks that a launch of `context` may use `array`.
fn same_context<T: Element>(array: &DeviceArray<T>, context: &Context) -> cuda_driver::Result<()> {
    match context == array.context() {
        true => Ok(()),
        false => Err(cuda_driver::Error::WrongContext {
            object: "array",
            used_with: "function",
        }),
    }
}

// SAFETY: points at the array's device address, which lives as long as the borrow;
// `begin_launch_use` refuses another context's memory and begins the stream's use (a read)
// through the array's tracker, whose guard the launch keeps until the kernel is queued.
unsafe impl<T: Element> KernelArg for &DeviceArray<T> {
    #[inline]
    fn param_ptr(&self) -> *mut c_void {
        (self.ptr_ref() as *const CUdeviceptr).cast_mut().cast()
    }

    #[inline]
    fn param_size(&self) -> usize {
        size_of::<CUdeviceptr>()
    }

    #[inline]
    fn check_use(&self, context: &Context, _stream: &Stream) -> cuda_driver::Result<()> {
        same_context(self, context)
    }

    #[inline]
    fn begin_launch_use(&self, context: &Context, stream: &Stream) -> cuda_driver::Result<Option<StreamUse<'_>>> {
        same_context(self, context)?;
        self.begin_use(stream, Access::Read).map(Some)
    }
}

// SAFETY: as for `&DeviceArray<T>`, the use being a write.
unsafe impl<T: Element> KernelArg for &mut DeviceArray<T> {
    #[inline]
    fn param_ptr(&self) -> *mut c_void {
        (&**self).param_ptr()
    }

    #[inline]
    fn param_size(&self) -> usize {
        size_of::<CUdeviceptr>()
    }

    #[inline]
    fn check_use(&self, context: &Context, _stream: &Stream) -> cuda_driver::Result<()> {
        same_context(self, context)
    }

    #[inline]
    fn begin_launch_use(&self, context: &Context, stream: &Stream) -> cuda_driver::Result<Option<StreamUse<'_>>> {
        same_context(self, context)?;
        self.begin_use(stream, Access::Write).map(Some)
    }
}

impl<T: Element> DeviceArray<T> {
    /// [`cuda_driver::Error::NotDense`] unless the elements are one run from the first, in
    /// order (C-contiguous: not strided, transposed, reversed or broadcast): the device-memory
    /// contract's gate.
    fn check_dense(&self) -> cuda_driver::Result<()> {
        match self.is_contiguous() {
            true => Ok(()),
            false => Err(cuda_driver::Error::NotDense {
                shape: self.shape.clone(),
                strides: self.strides.clone(),
            }),
        }
    }
}

// SAFETY: a compact array's range is its `len` elements from the first, in order, inside its
// storage (a pool block or an imported tensor), which lives as long as the array; the storage
// goes back only after the owner stream waited for every use begun here (the pool's and the
// import's release order after `StreamUses`). A view that is not compact (strided, transposed,
// reversed, broadcast) has no dense range: its `byte_len` is 0 and `begin_use` refuses it with
// `NotDense`, so no routine reads it as memory (cuda-core's own cuBLAS calls, which pass such a
// view's layout, go through a type of their own).
unsafe impl<T: Element> cuda_driver::DeviceMemory for DeviceArray<T> {
    fn context(&self) -> &Context {
        DeviceArray::context(self)
    }

    fn device_ptr(&self) -> CUdeviceptr {
        self.ptr
    }

    fn byte_len(&self) -> usize {
        match self.is_contiguous() {
            true => self.size_bytes(),
            false => 0,
        }
    }

    fn begin_use(&self, stream: &Stream, access: Access) -> cuda_driver::Result<StreamUse<'_>> {
        DeviceArray::check_dense(self)?;
        DeviceArray::begin_use(self, stream, access)
    }

    fn check_dense(&self) -> cuda_driver::Result<()> {
        DeviceArray::check_dense(self)
    }
}

// SAFETY: as above (only a compact array gives a range); `&mut` to an array gives the right to
// write its elements, which a compact array holds each at its own address.
unsafe impl<T: Element> cuda_driver::DeviceMemoryMut for DeviceArray<T> {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_count_elements_and_refuse_empty_or_huge() {
        assert_eq!(shape_len(&[2, 3, 4]).unwrap(), 24);
        assert_eq!(shape_len(&[]).unwrap(), 1, "a zero-dimensional array holds one element");
        assert_eq!(shape_len(&[3, 0]).unwrap(), 0, "zero-size arrays are valid");
        assert!(matches!(shape_len(&[usize::MAX, 2]), Err(Error::InvalidValue(_))));
        assert_eq!(5usize.into_shape(), [5]);
        assert_eq!([2usize, 3].into_shape(), [2, 3]);
        assert_eq!(c_strides(&[2, 3, 4]), [12, 4, 1]);
        assert_eq!(c_strides(&[7]), [1]);
        assert!(c_strides(&[]).is_empty());
        assert_eq!(c_strides(&[2, 0, 3]), [3, 3, 1]);
        assert!(is_c_contiguous(&[2, 3], &[3, 1]));
        assert!(is_c_contiguous(&[2, 1], &[1, 7]), "extents of 1 may have any stride");
        assert!(!is_c_contiguous(&[2, 3], &[1, 2]));
        assert!(!is_c_contiguous(&[4], &[2]));
    }

    #[test]
    fn host_vectors_too_large_are_errors() {
        assert!(
            matches!(host_vec::<f64>(1 << 62), Err(Error::InvalidValue(_))),
            "bytes overflow"
        );
        assert!(
            matches!(host_vec::<f64>(1 << 60), Err(Error::InvalidValue(_))),
            "over isize::MAX"
        );
        assert!(host_vec::<f64>(16).unwrap().capacity() >= 16);
    }
}
