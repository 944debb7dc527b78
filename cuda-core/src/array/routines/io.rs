//! Moving array elements between host and device memory (CuPy's `asnumpy`/`set`; NumPy's
//! "input and output" chapter).

use std::ffi::c_void;

use crate::array::device_array::{host_vec, DeviceArray};
use crate::array::dtype::Element;
use crate::error::Result;
use crate::graph::refuse_host_wait;

impl<T: Element> DeviceArray<T> {
    /// Copies `source` (as many elements, in row-major order) into the array; returns once
    /// `source` has been read (the copy is queued on the array's stream, which is then waited
    /// for). A non-contiguous view is filled through a compact staging array.
    pub fn copy_from_host(&mut self, source: &[T]) -> Result<()> {
        self.same_len("copy from host", source.len())?;
        self.check_writable("copy from host")?;
        if self.is_empty() {
            return Ok(());
        }
        refuse_host_wait(self.stream(), "copy_from_host")?;
        self.check_storage()?;
        if !self.is_contiguous() {
            let staged = DeviceArray::from_slice(self.stream(), source)?.reshape(self.shape().to_vec())?;
            return self.copy_from(&staged);
        }
        let stream = self.stream();
        // SAFETY: `source` holds `size_bytes` readable bytes and stays borrowed until the stream
        // is synchronised below; the array is one run of as many.
        unsafe {
            stream.copy_raw_from_host_async(*self.ptr_ref(), source.as_ptr().cast::<c_void>(), self.size_bytes())
        }?;
        Ok(stream.synchronize()?)
    }

    /// Copies the array's elements, in row-major order, into `destination` (as many elements),
    /// waiting for the array's stream.
    pub fn copy_to_host(&self, destination: &mut [T]) -> Result<()> {
        self.same_len("copy to host", destination.len())?;
        // SAFETY: `destination` holds `len` writable elements.
        unsafe { self.copy_to_host_raw(destination.as_mut_ptr(), "copy_to_host") }
    }

    /// `call` names the user's call in the error of a capturing stream.
    ///
    /// # Safety
    /// `destination` must be valid for writes of `len` elements.
    unsafe fn copy_to_host_raw(&self, destination: *mut T, call: &'static str) -> Result<()> {
        if self.is_empty() {
            return Ok(());
        }
        refuse_host_wait(self.stream(), call)?;
        self.check_storage()?;
        if !self.is_contiguous() {
            // SAFETY: the caller's promise, passed on; the compact copy holds `len` elements.
            return unsafe { self.to_contiguous()?.copy_to_host_raw(destination, call) };
        }
        let stream = self.stream();
        // SAFETY: `destination` holds `size_bytes` writable bytes (the caller's promise) and the
        // stream is synchronised below, before it is used; `T` is valid for any bytes; the array
        // is one run of `len` elements.
        unsafe { stream.copy_raw_to_host_async(destination.cast::<c_void>(), *self.ptr_ref(), self.size_bytes()) }?;
        Ok(stream.synchronize()?)
    }

    /// The elements in row-major order in a new `Vec` (waits for the array's stream). An
    /// array too large for host memory (a large broadcast view) is an
    /// [`InvalidValue`](crate::Error::InvalidValue) error, not an abort.
    pub fn to_vec(&self) -> Result<Vec<T>> {
        let mut out = host_vec::<T>(self.len())?;
        // SAFETY: the vector has room for `len` elements.
        unsafe {
            self.copy_to_host_raw(out.as_mut_ptr(), "to_vec")?;
            // The copy wrote all `len` elements.
            out.set_len(self.len());
        }
        Ok(out)
    }
}
