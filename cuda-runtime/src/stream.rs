//! Streams: ordered queues of work on one device.

use std::ffi::{c_int, c_uint, c_void};
use std::sync::Arc;

use cuda_sys::runtime::{cudaError_t, cudaStream_t};

use crate::device::make_current;
use crate::error::check;
use crate::{runtime, Device, Error, Event, Result};

bitflags::bitflags! {
    /// Stream creation flags (`cudaStreamCreateWithPriority`).
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
    pub struct StreamFlags: u32 {
        /// Work does not synchronise with the legacy default stream (`cudaStreamNonBlocking`).
        const NON_BLOCKING = cuda_sys::runtime::cudaStreamNonBlocking;
    }
}

/// A stream on one device. Cloning is cheap and shares the same stream; it
/// is destroyed when the last clone (and the last stream-ordered allocation
/// made on it) is gone.
///
/// # Interop with cuda-driver
/// A runtime `cudaStream_t` and a driver `CUstream` are the same handle
/// (bindgen gives them two Rust types; cast with `.cast()`). Streams made
/// here live in the device's primary context, the one cuda-driver's
/// `Context::primary` retains, so the driver API can use them and vice
/// versa: [`Stream::from_raw`] borrows a driver stream, and
/// [`Stream::as_raw`] hands this one to the driver.
#[derive(Clone, Debug)]
pub struct Stream {
    inner: Arc<StreamInner>,
}

#[derive(Debug)]
struct StreamInner {
    raw: cudaStream_t,
    device: Device,
    /// Destroyed on drop; false for borrowed and special streams.
    owned: bool,
}

// SAFETY: a stream handle is an opaque token that the runtime accepts from
// any thread; every call made through it selects its device first.
unsafe impl Send for StreamInner {}
// SAFETY: as above; the runtime serialises concurrent calls on one stream.
unsafe impl Sync for StreamInner {}

/// The legacy default stream's special handle (`cudaStreamLegacy`).
pub(crate) const LEGACY: usize = 0x1;
/// The per-thread default stream's special handle (`cudaStreamPerThread`).
const PER_THREAD: usize = 0x2;

impl Stream {
    /// A new stream with default flags and priority (`cudaStreamCreate`). It
    /// synchronises with the legacy default stream, as runtime streams do.
    pub fn new(device: Device) -> Result<Stream> {
        Stream::with_options(device, StreamFlags::empty(), 0)
    }

    /// A new stream with these flags and priority (lower numbers run first;
    /// see [`Device::stream_priority_range`]; out-of-range values are clamped
    /// by the runtime).
    pub fn with_options(device: Device, flags: StreamFlags, priority: i32) -> Result<Stream> {
        let runtime = runtime()?;
        make_current(runtime, device.raw_ordinal())?;
        let mut raw: cudaStream_t = std::ptr::null_mut();
        // SAFETY: `raw` is a valid out-pointer; flags are the header's bits.
        let code = unsafe { runtime.cudaStreamCreateWithPriority()?(&mut raw, flags.bits(), priority) };
        check(runtime, code)?;
        Ok(Stream::wrap(raw, device, true))
    }

    /// The device's legacy default stream (`cudaStreamLegacy`, the "null"
    /// stream), which synchronises with every blocking stream of the device.
    pub fn legacy_default(device: Device) -> Stream {
        Stream::wrap(LEGACY as cudaStream_t, device, false)
    }

    /// The calling thread's per-thread default stream (`cudaStreamPerThread`)
    /// on `device`. The handle means "the per-thread stream of whichever
    /// thread uses it", so a clone used from another thread names that
    /// thread's stream.
    pub fn per_thread(device: Device) -> Stream {
        Stream::wrap(PER_THREAD as cudaStream_t, device, false)
    }

    /// Borrows a stream made elsewhere (a cuda-driver `Stream`, another
    /// library): it is not destroyed when the last clone drops. The device
    /// comes from `cudaStreamGetDevice`.
    ///
    /// A driver `CUstream` converts with `raw.cast()`.
    ///
    /// # Safety
    /// `raw` must be a valid stream of a context the runtime can use (a
    /// primary context, or one current on the calling threads), or one of the
    /// special handles, and must outlive every clone of the returned stream
    /// and every allocation made on it.
    pub unsafe fn from_raw(raw: cudaStream_t) -> Result<Stream> {
        let runtime = runtime()?;
        let mut ordinal: c_int = 0;
        // SAFETY: the caller guarantees `raw` is valid; `ordinal` is a valid out-pointer.
        check(runtime, unsafe { runtime.cudaStreamGetDevice()?(raw, &mut ordinal) })?;
        Ok(Stream::wrap(raw, Device::from_runtime(ordinal), false))
    }

    /// The raw handle, also usable as a driver `CUstream` (`.cast()`).
    ///
    /// # Safety
    /// The handle is only valid while a clone of this stream is alive; the
    /// caller must not destroy it.
    pub unsafe fn as_raw(&self) -> cudaStream_t {
        self.inner.raw
    }

    fn wrap(raw: cudaStream_t, device: Device, owned: bool) -> Stream {
        Stream {
            inner: Arc::new(StreamInner { raw, device, owned }),
        }
    }

    pub(crate) fn raw(&self) -> cudaStream_t {
        self.inner.raw
    }

    /// The device the stream runs on.
    pub fn device(&self) -> Device {
        self.inner.device
    }

    /// Makes this stream's device current on the calling thread.
    pub(crate) fn enter(&self) -> Result<&'static cuda_sys::Runtime> {
        let runtime = runtime()?;
        make_current(runtime, self.inner.device.raw_ordinal())?;
        Ok(runtime)
    }

    /// Waits until all work queued so far has finished (`cudaStreamSynchronize`).
    pub fn synchronize(&self) -> Result<()> {
        let runtime = self.enter()?;
        // SAFETY: the handle is valid while `self` lives.
        check(runtime, unsafe { runtime.cudaStreamSynchronize()?(self.raw()) })
    }

    /// `true` if all work queued so far has finished (`cudaStreamQuery`).
    pub fn query(&self) -> Result<bool> {
        let runtime = self.enter()?;
        // SAFETY: the handle is valid while `self` lives.
        let code = unsafe { runtime.cudaStreamQuery()?(self.raw()) };
        if code == cudaError_t::cudaErrorNotReady {
            return Ok(false);
        }
        check(runtime, code).map(|()| true)
    }

    /// Makes later work on this stream wait for `event`'s last record
    /// (`cudaStreamWaitEvent`); the event may be of another device.
    pub fn wait_event(&self, event: &Event) -> Result<()> {
        let runtime = self.enter()?;
        // SAFETY: both handles are valid while their owners live; flags 0 is the default.
        check(runtime, unsafe {
            runtime.cudaStreamWaitEvent()?(self.raw(), event.raw(), 0)
        })
    }

    /// Queues `callback` to run on a runtime thread once the work queued
    /// before it has finished (`cudaLaunchHostFunc`); later work waits for
    /// it. The callback must not call CUDA. A panic in it is caught (and
    /// printed), never unwound into the runtime.
    pub fn launch_host_func(&self, callback: impl FnOnce() + Send + 'static) -> Result<()> {
        let runtime = self.enter()?;
        let launch = runtime.cudaLaunchHostFunc()?;
        let boxed: Box<Box<dyn FnOnce() + Send>> = Box::new(Box::new(callback));
        let user_data = Box::into_raw(boxed).cast::<c_void>();
        // SAFETY: `trampoline` takes back the box exactly once when the runtime
        // runs it; the stream is valid while `self` lives.
        let code = unsafe { launch(self.raw(), Some(host_func_trampoline), user_data) };
        if code != cudaError_t::cudaSuccess {
            // SAFETY: the runtime refused the call, so it will never run the
            // trampoline; the box is still ours.
            drop(unsafe { Box::from_raw(user_data.cast::<Box<dyn FnOnce() + Send>>()) });
        }
        check(runtime, code)
    }

    /// The stream's priority (`cudaStreamGetPriority`).
    pub fn priority(&self) -> Result<i32> {
        let runtime = self.enter()?;
        let mut priority: c_int = 0;
        // SAFETY: the handle is valid; `priority` is a valid out-pointer.
        check(runtime, unsafe {
            runtime.cudaStreamGetPriority()?(self.raw(), &mut priority)
        })?;
        Ok(priority)
    }

    /// The stream's flags (`cudaStreamGetFlags`).
    pub fn flags(&self) -> Result<StreamFlags> {
        let runtime = self.enter()?;
        let mut flags: c_uint = 0;
        // SAFETY: the handle is valid; `flags` is a valid out-pointer.
        check(runtime, unsafe {
            runtime.cudaStreamGetFlags()?(self.raw(), &mut flags)
        })?;
        Ok(StreamFlags::from_bits_retain(flags))
    }

    /// An error unless `device` is this stream's device.
    pub(crate) fn expect_device(&self, what: &str, device: Device) -> Result<()> {
        if device == self.device() {
            Ok(())
        } else {
            Err(Error::WrongDevice {
                what: what.to_string(),
                expected: self.device().raw_ordinal(),
                found: device.raw_ordinal(),
            })
        }
    }
}

/// Runs a boxed callback queued by [`Stream::launch_host_func`].
unsafe extern "C" fn host_func_trampoline(user_data: *mut c_void) {
    // SAFETY: `user_data` came from `Box::into_raw` in `launch_host_func` and
    // the runtime calls this once per successful launch.
    let callback = unsafe { Box::from_raw(user_data.cast::<Box<dyn FnOnce() + Send>>()) };
    if std::panic::catch_unwind(std::panic::AssertUnwindSafe(callback)).is_err() {
        eprintln!("cuda-runtime: a host function queued on a stream panicked");
    }
}

impl Drop for StreamInner {
    fn drop(&mut self) {
        if !self.owned {
            return;
        }
        let Ok(runtime) = runtime() else { return };
        if make_current(runtime, self.device.raw_ordinal()).is_err() {
            return;
        }
        if let Ok(destroy) = runtime.cudaStreamDestroy() {
            // SAFETY: the stream was created by us and this is its last owner.
            // Queued work still completes; the error (if any) cannot be reported.
            let _ = unsafe { destroy(self.raw) };
        }
    }
}
