//! Raw copies and fills by address, with a typed direction. The buffer types'
//! methods are the safe way; these are for memory this crate did not allocate.

use std::ffi::c_void;

use cuda_sys::runtime::cudaMemcpyKind;

use crate::error::check;
use crate::{runtime, Result, Stream};

/// The direction of a copy (`cudaMemcpyKind`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CopyKind {
    /// Host to host.
    HostToHost,
    /// Host to device.
    HostToDevice,
    /// Device to host.
    DeviceToHost,
    /// Device to device.
    DeviceToDevice,
    /// Inferred from the pointers (unified addressing, every 64-bit platform).
    Default,
}

impl CopyKind {
    pub(crate) fn raw(self) -> cudaMemcpyKind {
        match self {
            CopyKind::HostToHost => cudaMemcpyKind::cudaMemcpyHostToHost,
            CopyKind::HostToDevice => cudaMemcpyKind::cudaMemcpyHostToDevice,
            CopyKind::DeviceToHost => cudaMemcpyKind::cudaMemcpyDeviceToHost,
            CopyKind::DeviceToDevice => cudaMemcpyKind::cudaMemcpyDeviceToDevice,
            CopyKind::Default => cudaMemcpyKind::cudaMemcpyDefault,
        }
    }
}

/// Copies `bytes` bytes (`cudaMemcpy`, legacy default stream semantics: a
/// device-to-device copy may still be running when this returns).
///
/// # Safety
/// `src` must be readable and `dst` writable for `bytes` bytes in the memory
/// `kind` names, and the two ranges must not overlap.
pub unsafe fn memcpy(dst: *mut c_void, src: *const c_void, bytes: usize, kind: CopyKind) -> Result<()> {
    let runtime = runtime()?;
    // SAFETY: the caller guarantees both ranges.
    check(runtime, unsafe { runtime.cudaMemcpy()?(dst, src, bytes, kind.raw()) })
}

/// Queues a copy of `bytes` bytes on `stream` (`cudaMemcpyAsync`), with
/// `stream`'s device current. Zero bytes is a no-op.
///
/// # Safety
/// As [`memcpy`], and both ranges must stay valid, and untouched by the host,
/// until `stream` has finished the copy.
pub unsafe fn memcpy_async(
    dst: *mut c_void,
    src: *const c_void,
    bytes: usize,
    kind: CopyKind,
    stream: &Stream,
) -> Result<()> {
    if bytes == 0 {
        return Ok(());
    }
    let runtime = stream.enter()?;
    // SAFETY: the caller guarantees both ranges and their lifetime.
    check(runtime, unsafe {
        runtime.cudaMemcpyAsync()?(dst, src, bytes, kind.raw(), stream.raw())
    })
}

/// Queues a fill of `bytes` bytes of device memory with `value` on `stream`
/// (`cudaMemsetAsync`).
///
/// # Safety
/// `dst` must be device memory writable for `bytes` bytes until `stream` has
/// finished the fill.
pub unsafe fn memset_async(dst: *mut c_void, value: u8, bytes: usize, stream: &Stream) -> Result<()> {
    if bytes == 0 {
        return Ok(());
    }
    let runtime = stream.enter()?;
    // SAFETY: the caller guarantees the range and its lifetime.
    check(runtime, unsafe {
        runtime.cudaMemsetAsync()?(dst, value.into(), bytes, stream.raw())
    })
}
