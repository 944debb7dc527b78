//! [`DeviceArray`]: an n-dimensional, C-contiguous array in pooled device memory.

use std::ffi::c_void;
use std::marker::PhantomData;
use std::mem::size_of;
use std::sync::OnceLock;

use cuda_driver::{Context, KernelArg, Stream};
use cuda_sys::driver::CUdeviceptr;

use super::dlpack::ImportedTensor;
use super::dtype::Element;
use super::elementwise::ElementwiseKernel;
use super::generated::Arg;
use super::pool::{MemoryPool, PooledBlock, StreamUses};
use super::raw::{bind, check};
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

/// Elements of `shape`, or an error for an empty array or an overflowing product.
pub(crate) fn shape_len(shape: &[usize]) -> Result<usize> {
    let len = shape
        .iter()
        .try_fold(1usize, |acc, &d| acc.checked_mul(d))
        .ok_or_else(|| Error::InvalidValue(format!("shape {shape:?} has more elements than usize holds")))?;
    if len == 0 {
        return Err(Error::InvalidValue(format!(
            "shape {shape:?} has no elements; an array holds at least one"
        )));
    }
    Ok(len)
}

/// C-contiguous strides of `shape`, in elements.
fn c_strides(shape: &[usize]) -> Vec<usize> {
    let mut strides = vec![1; shape.len()];
    for axis in (0..shape.len().saturating_sub(1)).rev() {
        strides[axis] = strides[axis + 1] * shape[axis + 1];
    }
    strides
}

pub(crate) enum Storage {
    Pooled(PooledBlock),
    Imported(ImportedTensor),
}

impl Storage {
    fn uses(&self) -> &StreamUses {
        match self {
            Storage::Pooled(block) => block.uses(),
            Storage::Imported(tensor) => tensor.uses(),
        }
    }
}

/// An array of `T` in device memory, C-contiguous, ordered on one stream.
///
/// Memory comes from a [`MemoryPool`] and goes back to it on drop, in the stream's order
/// (never before queued work is done). Work on another stream may use the array: the first time
/// it does (through [`Arg`], [`KernelArg`] or a copy), that stream waits for the array's stream,
/// and on drop the array's stream waits for it. Ordering between later writes and reads on
/// different streams is the caller's, as with any CUDA memory.
///
/// ```no_run
/// use cuda_core::{Device, DeviceArray};
///
/// # fn main() -> cuda_core::Result<()> {
/// let device = Device::new(0)?;
/// let stream = device.create_stream()?;
/// let x = DeviceArray::from_slice(&stream, &[1.0f32, 2.0, 3.0, 4.0])?.reshape([2, 2])?;
/// assert_eq!(x.shape(), [2, 2]);
/// assert_eq!(x.to_vec()?, [1.0, 2.0, 3.0, 4.0]);
/// # Ok(())
/// # }
/// ```
pub struct DeviceArray<T: Element> {
    ptr: CUdeviceptr,
    shape: Vec<usize>,
    len: usize,
    storage: Storage,
    _marker: PhantomData<T>,
}

// SAFETY: the array owns its device memory like a `Vec<T>`; the stream and pool handles inside
// may be used from any thread (each call makes the context current), and the stream-use list is
// behind a mutex. An imported DLPack tensor's deleter may be called from any thread (the
// producer's obligation, documented at `from_dlpack`).
unsafe impl<T: Element + Send> Send for DeviceArray<T> {}
// SAFETY: shared access only reads the handle and shape or goes through the mutex.
unsafe impl<T: Element + Sync> Sync for DeviceArray<T> {}

impl<T: Element> DeviceArray<T> {
    /// An array of `shape` on `stream`, from the context's [`MemoryPool::for_context`], with
    /// unspecified contents (any bit pattern is a valid `T`).
    pub fn empty(stream: &Stream, shape: impl IntoShape) -> Result<Self> {
        Self::empty_in(&MemoryPool::for_context(stream.context()), stream, shape)
    }

    /// Like [`empty`](Self::empty), from `pool`.
    pub fn empty_in(pool: &MemoryPool, stream: &Stream, shape: impl IntoShape) -> Result<Self> {
        let shape = shape.into_shape();
        let len = shape_len(&shape)?;
        let bytes = len
            .checked_mul(size_of::<T>())
            .ok_or_else(|| Error::InvalidValue(format!("{len} elements overflow the byte size")))?;
        let block = pool.alloc(stream, bytes)?;
        Ok(DeviceArray {
            ptr: block.ptr(),
            shape,
            len,
            storage: Storage::Pooled(block),
            _marker: PhantomData,
        })
    }

    pub(crate) fn from_storage(ptr: CUdeviceptr, shape: Vec<usize>, storage: Storage) -> Result<Self> {
        let len = shape_len(&shape)?;
        Ok(DeviceArray {
            ptr,
            shape,
            len,
            storage,
            _marker: PhantomData,
        })
    }

    /// A zeroed array of `shape` on `stream` (the memset is queued on `stream`).
    pub fn zeros(stream: &Stream, shape: impl IntoShape) -> Result<Self> {
        let array = Self::empty(stream, shape)?;
        let driver = bind(stream.context())?;
        // SAFETY: the block holds `size_bytes` bytes; the memset is queued on the array's stream.
        check(unsafe { driver.cuMemsetD8Async()?(array.ptr, 0, array.size_bytes(), stream.as_raw()) })?;
        Ok(array)
    }

    /// A one-dimensional array holding a copy of `data` (not empty). Returns once `data` has
    /// been read.
    pub fn from_slice(stream: &Stream, data: &[T]) -> Result<Self> {
        let mut array = Self::empty(stream, data.len())?;
        array.copy_from_host(data)?;
        Ok(array)
    }

    /// The same memory with another shape of as many elements.
    pub fn reshape(mut self, shape: impl IntoShape) -> Result<Self> {
        let shape = shape.into_shape();
        let len = shape_len(&shape)?;
        if len != self.len {
            return Err(Error::InvalidValue(format!(
                "cannot reshape {:?} ({} elements) to {shape:?} ({len} elements)",
                self.shape, self.len
            )));
        }
        self.shape = shape;
        Ok(self)
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Always false: arrays hold at least one element.
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

    /// C-contiguous strides, in elements.
    pub fn strides(&self) -> Vec<usize> {
        c_strides(&self.shape)
    }

    /// Size in bytes.
    pub fn size_bytes(&self) -> usize {
        self.len * size_of::<T>()
    }

    /// The stream the array is ordered on.
    pub fn stream(&self) -> &Stream {
        self.storage.uses().owner()
    }

    /// The context the memory belongs to.
    pub fn context(&self) -> &Context {
        self.stream().context()
    }

    /// The device address.
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

    /// Notes that `stream` uses the array (see the type's docs); checks its context first.
    pub(crate) fn note_use(&self, stream: &Stream) -> cuda_driver::Result<()> {
        if stream.context() != self.context() {
            return Err(cuda_driver::Error::WrongContext {
                object: "array",
                used_with: "stream",
            });
        }
        self.storage.uses().note(stream)
    }

    fn same_len(&self, what: &str, other: usize) -> Result<()> {
        if other == self.len {
            Ok(())
        } else {
            Err(Error::InvalidValue(format!(
                "{what}: the array holds {} elements, the other side {other}",
                self.len
            )))
        }
    }

    /// Copies `source` (as many elements) into the array; returns once `source` has been read
    /// (the copy is queued on the array's stream, which is then waited for).
    pub fn copy_from_host(&mut self, source: &[T]) -> Result<()> {
        self.same_len("copy from host", source.len())?;
        let stream = self.stream();
        let driver = bind(stream.context())?;
        // SAFETY: `source` holds `size_bytes` readable bytes and stays borrowed until the stream
        // is synchronised below; the array holds as many.
        check(unsafe {
            driver.cuMemcpyHtoDAsync_v2()?(
                self.ptr,
                source.as_ptr().cast::<c_void>(),
                self.size_bytes(),
                stream.as_raw(),
            )
        })?;
        Ok(stream.synchronize()?)
    }

    /// Copies the array into `destination` (as many elements), waiting for the array's stream.
    pub fn copy_to_host(&self, destination: &mut [T]) -> Result<()> {
        self.same_len("copy to host", destination.len())?;
        // SAFETY: `destination` holds `len` writable elements.
        unsafe { self.copy_to_host_raw(destination.as_mut_ptr()) }
    }

    /// # Safety
    /// `destination` must be valid for writes of `len` elements.
    unsafe fn copy_to_host_raw(&self, destination: *mut T) -> Result<()> {
        let stream = self.stream();
        let driver = bind(stream.context())?;
        // SAFETY: `destination` holds `size_bytes` writable bytes (the caller's promise) and the
        // stream is synchronised below, before it is used; `T` is valid for any bytes.
        check(unsafe {
            driver.cuMemcpyDtoHAsync_v2()?(
                destination.cast::<c_void>(),
                self.ptr,
                self.size_bytes(),
                stream.as_raw(),
            )
        })?;
        Ok(stream.synchronize()?)
    }

    /// The contents in a new `Vec` (waits for the array's stream).
    pub fn to_vec(&self) -> Result<Vec<T>> {
        let mut out = Vec::with_capacity(self.len);
        // SAFETY: the vector has room for `len` elements.
        unsafe {
            self.copy_to_host_raw(out.as_mut_ptr())?;
            // The copy wrote all `len` elements.
            out.set_len(self.len);
        }
        Ok(out)
    }

    /// Queues a copy of `source` (same shape and context) into the array on the array's stream.
    pub fn copy_from(&mut self, source: &DeviceArray<T>) -> Result<()> {
        if source.shape != self.shape {
            return Err(Error::InvalidValue(format!(
                "copy between arrays of shapes {:?} and {:?}",
                source.shape, self.shape
            )));
        }
        let stream = self.stream().clone();
        source.note_use(&stream)?;
        let driver = bind(stream.context())?;
        // SAFETY: both arrays hold `size_bytes` bytes of one context; the copy is ordered after
        // the source's stream (noted above) and queued on this array's stream.
        check(unsafe { driver.cuMemcpyDtoDAsync_v2()?(self.ptr, source.ptr, self.size_bytes(), stream.as_raw()) })?;
        Ok(())
    }

    /// A copy of the array, on the same stream.
    pub fn try_clone(&self) -> Result<Self> {
        let mut copy = Self::empty(self.stream(), self.shape.clone())?;
        copy.copy_from(self)?;
        Ok(copy)
    }

    /// Sets every element to `value`, queued on the array's stream (`cuMemsetD8/16/32Async` for
    /// types of up to 4 bytes, a generated kernel for 8-byte types).
    pub fn fill(&mut self, value: T) -> Result<()> {
        // SAFETY: `T` is plain data of `size_of::<T>()` bytes (`DeviceCopy`).
        let bytes = unsafe { std::slice::from_raw_parts((&value as *const T).cast::<u8>(), size_of::<T>()) };
        let stream = self.stream().clone();
        let driver = bind(stream.context())?;
        let (ptr, len) = (self.ptr, self.len);
        // SAFETY (all three): the array holds `len` elements of the memset's width; queued on its stream.
        match *bytes {
            [b] => check(unsafe { driver.cuMemsetD8Async()?(ptr, b, len, stream.as_raw()) })?,
            [a, b] => {
                check(unsafe { driver.cuMemsetD16Async()?(ptr, u16::from_ne_bytes([a, b]), len, stream.as_raw()) })?
            }
            [a, b, c, d] => check(unsafe {
                driver.cuMemsetD32Async()?(ptr, u32::from_ne_bytes([a, b, c, d]), len, stream.as_raw())
            })?,
            _ => {
                static FILL: OnceLock<ElementwiseKernel> = OnceLock::new();
                let kernel = match FILL.get() {
                    Some(kernel) => kernel,
                    None => {
                        let kernel = ElementwiseKernel::new("T value", "T out", "out = value", "cuda_core_fill")?;
                        FILL.get_or_init(|| kernel)
                    }
                };
                kernel.launch(&stream, &[Arg::scalar(value), Arg::from(self)])?;
            }
        }
        Ok(())
    }
}

impl<T: Element> std::fmt::Debug for DeviceArray<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeviceArray")
            .field("dtype", &T::DTYPE)
            .field("shape", &self.shape)
            .field("ptr", &format_args!("{:#x}", self.ptr))
            .finish()
    }
}

// SAFETY: points at the array's device address, which lives as long as the borrow; `check_use`
// refuses another context's memory and orders the launch's stream after the array's stream.
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
    fn check_use(&self, context: &Context, stream: &Stream) -> cuda_driver::Result<()> {
        if context != self.context() {
            return Err(cuda_driver::Error::WrongContext {
                object: "array",
                used_with: "function",
            });
        }
        self.note_use(stream)
    }
}

// SAFETY: as for `&DeviceArray<T>`.
unsafe impl<T: Element> KernelArg for &mut DeviceArray<T> {
    #[inline]
    fn param_ptr(&self) -> *mut c_void {
        (&**self).param_ptr()
    }

    #[inline]
    fn param_size(&self) -> usize {
        (&**self).param_size()
    }

    #[inline]
    fn check_use(&self, context: &Context, stream: &Stream) -> cuda_driver::Result<()> {
        (&**self).check_use(context, stream)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_count_elements_and_refuse_empty_or_huge() {
        assert_eq!(shape_len(&[2, 3, 4]).unwrap(), 24);
        assert_eq!(shape_len(&[]).unwrap(), 1, "a zero-dimensional array holds one element");
        assert!(matches!(shape_len(&[3, 0]), Err(Error::InvalidValue(_))));
        assert!(matches!(shape_len(&[usize::MAX, 2]), Err(Error::InvalidValue(_))));
        assert_eq!(5usize.into_shape(), [5]);
        assert_eq!([2usize, 3].into_shape(), [2, 3]);
        assert_eq!(c_strides(&[2, 3, 4]), [12, 4, 1]);
        assert_eq!(c_strides(&[7]), [1]);
        assert!(c_strides(&[]).is_empty());
    }
}
