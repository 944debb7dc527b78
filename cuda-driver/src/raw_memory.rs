//! Stream-ordered work on raw device addresses, for layers that manage device memory themselves
//! (cuda-core's caching pool and its array views): allocate and free bytes, copy between device
//! and host, fill. Each call makes the stream's context current first, as every method of this
//! crate does, and none of them tracks the memory: ordering it against other streams is the
//! caller's part (the [device-memory contract](crate::DeviceMemory) does it for the buffers of
//! this crate).

use std::ffi::c_void;

use cuda_sys::driver::CUdeviceptr;

use crate::error::{check, Result};
use crate::init::api;
use crate::Stream;

impl Stream {
    /// Allocates `bytes` of device memory in this stream's order (`cuMemAllocAsync`, from the
    /// device's current memory pool) and returns its address. The caller owns the memory: it is
    /// freed only by [`Stream::free_raw_async`] (or leaks).
    #[inline]
    pub fn alloc_raw_async(&self, bytes: usize) -> Result<CUdeviceptr> {
        let driver = self.context().bind()?;
        let mut ptr = 0;
        // SAFETY: `ptr` is a valid out-pointer; the stream is alive and of the current context.
        check(unsafe { driver.cuMemAllocAsync()?(&mut ptr, bytes, self.raw()) })?;
        Ok(ptr)
    }

    /// Frees `ptr` in this stream's order (`cuMemFreeAsync`). The driver takes the context from
    /// the stream, so a failure to make the stream's context current first does not keep the
    /// memory from being freed; the first error is returned.
    ///
    /// # Safety
    /// `ptr` is the address of a live allocation of this stream's context that nothing uses
    /// after the work queued so far on this stream, and it is freed once.
    #[inline]
    pub unsafe fn free_raw_async(&self, ptr: CUdeviceptr) -> Result<()> {
        let bound = self.context().bind();
        let driver = api()?;
        // SAFETY: the caller's promise: a live allocation freed once, after its last use in
        // this stream's order; the stream is alive.
        let freed = check(unsafe { driver.cuMemFreeAsync()?(ptr, self.raw()) });
        bound.and(freed)
    }

    /// Copies `bytes` from device address `source` to device address `destination` in this
    /// stream's order (`cuMemcpyDtoDAsync`).
    ///
    /// # Safety
    /// Both ranges are device memory of this stream's context (or memory it can address) and
    /// stay allocated until the copy has run, and no other work writes them meanwhile.
    #[inline]
    pub unsafe fn copy_raw_async(&self, destination: CUdeviceptr, source: CUdeviceptr, bytes: usize) -> Result<()> {
        let driver = self.context().bind()?;
        // SAFETY: the caller's promise on both ranges; the stream is alive and of the current
        // context.
        check(unsafe { driver.cuMemcpyDtoDAsync_v2()?(destination, source, bytes, self.raw()) })
    }

    /// Copies `bytes` from host memory at `source` to device address `destination` in this
    /// stream's order (`cuMemcpyHtoDAsync`).
    ///
    /// # Safety
    /// `source` is valid for reads of `bytes` bytes and `destination` a device range of as many,
    /// both until the copy has run (for pageable host memory the call returns once it has been
    /// read; pinned memory must stay until the stream gets there).
    #[inline]
    pub unsafe fn copy_raw_from_host_async(
        &self,
        destination: CUdeviceptr,
        source: *const c_void,
        bytes: usize,
    ) -> Result<()> {
        let driver = self.context().bind()?;
        // SAFETY: the caller's promise on both ranges; the stream is alive and of the current
        // context.
        check(unsafe { driver.cuMemcpyHtoDAsync_v2()?(destination, source, bytes, self.raw()) })
    }

    /// Copies `bytes` from device address `source` to host memory at `destination` in this
    /// stream's order (`cuMemcpyDtoHAsync`); the host memory holds them once the stream has got
    /// there (synchronise before reading it).
    ///
    /// # Safety
    /// `destination` is valid for writes of `bytes` bytes and `source` a device range of as
    /// many, both until the copy has run.
    #[inline]
    pub unsafe fn copy_raw_to_host_async(
        &self,
        destination: *mut c_void,
        source: CUdeviceptr,
        bytes: usize,
    ) -> Result<()> {
        let driver = self.context().bind()?;
        // SAFETY: the caller's promise on both ranges; the stream is alive and of the current
        // context.
        check(unsafe { driver.cuMemcpyDtoHAsync_v2()?(destination, source, bytes, self.raw()) })
    }

    /// Sets `count` bytes from device address `destination` to `value` in this stream's order
    /// (`cuMemsetD8Async`).
    ///
    /// # Safety
    /// `destination` is a device range of `count` bytes that stays allocated until the fill has
    /// run, and no other work uses it meanwhile.
    #[inline]
    pub unsafe fn memset_d8_raw_async(&self, destination: CUdeviceptr, value: u8, count: usize) -> Result<()> {
        let driver = self.context().bind()?;
        // SAFETY: the caller's promise on the range; the stream is alive and of the current context.
        check(unsafe { driver.cuMemsetD8Async()?(destination, value, count, self.raw()) })
    }

    /// Sets `count` 2-byte words from device address `destination` (2-byte aligned) to `value`
    /// in this stream's order (`cuMemsetD16Async`).
    ///
    /// # Safety
    /// As for [`Stream::memset_d8_raw_async`], for `2 * count` bytes.
    #[inline]
    pub unsafe fn memset_d16_raw_async(&self, destination: CUdeviceptr, value: u16, count: usize) -> Result<()> {
        let driver = self.context().bind()?;
        // SAFETY: the caller's promise on the range; the stream is alive and of the current context.
        check(unsafe { driver.cuMemsetD16Async()?(destination, value, count, self.raw()) })
    }

    /// Sets `count` 4-byte words from device address `destination` (4-byte aligned) to `value`
    /// in this stream's order (`cuMemsetD32Async`).
    ///
    /// # Safety
    /// As for [`Stream::memset_d8_raw_async`], for `4 * count` bytes.
    #[inline]
    pub unsafe fn memset_d32_raw_async(&self, destination: CUdeviceptr, value: u32, count: usize) -> Result<()> {
        let driver = self.context().bind()?;
        // SAFETY: the caller's promise on the range; the stream is alive and of the current context.
        check(unsafe { driver.cuMemsetD32Async()?(destination, value, count, self.raw()) })
    }
}
