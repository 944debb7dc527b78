//! Copying and filling arrays (NumPy's "array manipulation" chapter: `copyto`, `ndarray.copy`,
//! `ascontiguousarray`, `ndarray.fill`).

use std::mem::size_of;

use cuda_driver::Access;

use crate::array::device_array::DeviceArray;
use crate::array::dtype::Element;
use crate::array::kernels::copy;
use crate::array::memory::{bind, check, overlap, Overlap};
use crate::error::{Error, Result};

impl<T: Element> DeviceArray<T> {
    /// Queues a copy of `source` (same shape and context, any layout) into the array on the
    /// array's stream: one `cuMemcpyDtoDAsync` when both are contiguous, else a generated
    /// strided copy kernel. When the two overlap in memory (`x[1:]` from `x[:-1]`, a transpose
    /// of itself) the result is NumPy's, as if `source` were read whole before anything is
    /// written: the source goes through a compact temporary first.
    pub fn copy_from(&mut self, source: &DeviceArray<T>) -> Result<()> {
        if source.shape() != self.shape() {
            return Err(Error::InvalidValue(format!(
                "copy between arrays of shapes {:?} and {:?}",
                source.shape(),
                self.shape()
            )));
        }
        self.check_writable("copy")?;
        let stream = self.stream().clone();
        if source.context() != self.context() {
            return Err(cuda_driver::Error::WrongContext {
                object: "array",
                used_with: "array",
            }
            .into());
        }
        if self.is_empty() {
            return Ok(());
        }
        match overlap(self.span(), source.span()) {
            Overlap::SameView => return Ok(()),
            Overlap::Partial => {
                let mut staged = Self::empty(&stream, self.shape().to_vec())?;
                staged.copy_from(source)?;
                return self.copy_from(&staged);
            }
            Overlap::Disjoint => {}
        }
        if !(self.is_contiguous() && source.is_contiguous()) {
            return copy::copy(&stream, source, self);
        }
        let read = source.begin_use(&stream, Access::Read)?;
        let write = self.begin_use(&stream, Access::Write)?;
        let driver = bind(stream.context())?;
        // SAFETY: both arrays are runs of `size_bytes` bytes of one context; the copy is ordered
        // after the other streams' conflicting uses (begun above) and queued on this array's
        // stream; the uses end once it is queued.
        check(unsafe {
            driver.cuMemcpyDtoDAsync_v2()?(*self.ptr_ref(), *source.ptr_ref(), self.size_bytes(), stream.as_raw())
        })?;
        drop((read, write));
        Ok(())
    }

    /// A compact (C-contiguous) copy of the array, on the same stream.
    pub fn try_clone(&self) -> Result<Self> {
        let mut copy = Self::empty(self.stream(), self.shape().to_vec())?;
        copy.copy_from(self)?;
        Ok(copy)
    }

    /// The array itself (another view of it) when it is C-contiguous, else a compact copy
    /// ([`try_clone`](Self::try_clone)).
    pub fn to_contiguous(&self) -> Result<Self> {
        match self.is_contiguous() {
            true => Ok(self.view(*self.ptr_ref(), self.shape().to_vec(), self.strides().to_vec())),
            false => self.try_clone(),
        }
    }

    /// Sets every element to `value`, queued on the array's stream (`cuMemsetD8/16/32Async` for
    /// contiguous arrays of types of up to 4 bytes, a generated kernel otherwise).
    pub fn fill(&mut self, value: T) -> Result<()> {
        self.check_writable("fill")?;
        if self.is_empty() {
            return Ok(());
        }
        // SAFETY: `T` is plain data of `size_of::<T>()` bytes (`DeviceCopy`).
        let bytes = unsafe { std::slice::from_raw_parts((&value as *const T).cast::<u8>(), size_of::<T>()) };
        let stream = self.stream().clone();
        let driver = bind(stream.context())?;
        let (ptr, len) = (*self.ptr_ref(), self.len());
        let contiguous = self.is_contiguous();
        // SAFETY (all three): the array is one run of `len` elements of the memset's width;
        // queued on its stream.
        match *bytes {
            [b] if contiguous => check(unsafe { driver.cuMemsetD8Async()?(ptr, b, len, stream.as_raw()) })?,
            [a, b] if contiguous => {
                check(unsafe { driver.cuMemsetD16Async()?(ptr, u16::from_ne_bytes([a, b]), len, stream.as_raw()) })?
            }
            [a, b, c, d] if contiguous => check(unsafe {
                driver.cuMemsetD32Async()?(ptr, u32::from_ne_bytes([a, b, c, d]), len, stream.as_raw())
            })?,
            _ => copy::fill(&stream, self, value)?,
        }
        Ok(())
    }
}
