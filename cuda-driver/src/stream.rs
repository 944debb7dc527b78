//! Streams: ordered queues of work in one context.

use std::ffi::c_void;
use std::panic::AssertUnwindSafe;
use std::ptr;
use std::sync::Arc;

use cuda_sys::driver::{CUresult, CUstream};

use crate::capture::CaptureState;
use crate::error::{check, check_resolved, Error, Result};
use crate::flags::StreamFlags;
use crate::green_context::GreenContextInner;
use crate::{Context, Event};

/// The driver's handle of the per-thread default stream (`CU_STREAM_PER_THREAD`).
const PER_THREAD_HANDLE: usize = 0x2;

/// A stream of a context (`CUstream`). Cheap to clone: clones share one
/// stream, destroyed when the last clone and the last buffer allocated on it
/// are gone (pending work still completes).
#[derive(Clone)]
pub struct Stream {
    pub(crate) inner: Arc<StreamInner>,
}

pub(crate) struct StreamInner {
    raw: CUstream,
    context: Context,
    owned: bool,
    pub(crate) capture: CaptureState,
    /// The green context a stream of it keeps alive (dropped after the stream is destroyed).
    _green: Option<Arc<GreenContextInner>>,
}

// SAFETY: CUstream handles may be used from any thread; the driver
// serialises work submitted to one stream. Every use makes the stream's
// context current first.
unsafe impl Send for StreamInner {}
// SAFETY: as above; shared access only reads the handle.
unsafe impl Sync for StreamInner {}

impl Stream {
    /// A new stream with default flags (synchronising with the legacy
    /// default stream) and default priority.
    pub fn new(context: &Context) -> Result<Stream> {
        Self::with_options(context, StreamFlags::DEFAULT, 0)
    }

    /// A new stream with `flags` and `priority` (numerically lower is higher
    /// priority; see [`Context::stream_priority_range`]; values outside the
    /// range are clamped by the driver).
    pub fn with_options(context: &Context, flags: StreamFlags, priority: i32) -> Result<Stream> {
        let driver = context.bind()?;
        let mut raw = ptr::null_mut();
        // SAFETY: `raw` is a valid out-pointer; the context is current.
        check(unsafe { driver.cuStreamCreateWithPriority()?(&mut raw, flags.bits(), priority) })?;
        Ok(Stream {
            inner: Arc::new(StreamInner {
                raw,
                context: context.clone(),
                owned: true,
                capture: CaptureState::default(),
                _green: None,
            }),
        })
    }

    /// Wraps a stream this crate did not create. It is not destroyed on drop.
    /// A null handle is the context's legacy default stream.
    ///
    /// # Safety
    /// `raw` must be a stream of `context` (or null), and stay valid for as
    /// long as this `Stream`, its clones, buffers allocated on it and memory
    /// it used (whose [`StreamTracker`](crate::StreamTracker) keeps a clone) live.
    pub unsafe fn from_raw(context: &Context, raw: CUstream) -> Stream {
        Stream {
            inner: Arc::new(StreamInner {
                raw,
                context: context.clone(),
                owned: false,
                capture: CaptureState::default(),
                _green: None,
            }),
        }
    }

    /// A stream `cuGreenCtxStreamCreate` made; it belongs to the green context's primary context
    /// and keeps the green context alive.
    pub(crate) fn of_green_context(raw: CUstream, green: Arc<GreenContextInner>) -> Stream {
        Stream {
            inner: Arc::new(StreamInner {
                raw,
                context: green.context().clone(),
                owned: true,
                capture: CaptureState::default(),
                _green: Some(green),
            }),
        }
    }

    /// Whether this is the per-thread default stream (`CU_STREAM_PER_THREAD`), which names a
    /// different stream on each thread that uses it: work queued through it from two threads is
    /// not ordered, and the handle identifies no one stream.
    pub fn is_per_thread(&self) -> bool {
        self.inner.raw as usize == PER_THREAD_HANDLE
    }

    /// The context the stream belongs to.
    pub fn context(&self) -> &Context {
        &self.inner.context
    }

    /// Waits for all work queued so far, then returns errors kept from
    /// destructors of the context's objects (see [`Context::check_deferred`]).
    pub fn synchronize(&self) -> Result<()> {
        let driver = self.inner.context.bind()?;
        // SAFETY: the stream is alive while `self` is.
        let result = check(unsafe { driver.cuStreamSynchronize()?(self.inner.raw) });
        self.inner.context.check_deferred()?;
        result
    }

    /// Waits for the work queued so far on this stream (`cuStreamSynchronize`) without taking
    /// the errors kept from destructors: they stay for [`Stream::synchronize`] or
    /// [`Context::check_deferred`]. For a layer that waits on its own account (a pool waiting
    /// for the frees it queued), whose caller did not ask for those errors.
    pub fn synchronize_quiet(&self) -> Result<()> {
        let driver = self.inner.context.bind()?;
        // SAFETY: the stream is alive while `self` is.
        check(unsafe { driver.cuStreamSynchronize()?(self.inner.raw) })
    }

    /// Whether all queued work has finished.
    pub fn query(&self) -> Result<bool> {
        let driver = self.inner.context.bind()?;
        // SAFETY: the stream is alive while `self` is.
        let result = unsafe { driver.cuStreamQuery()?(self.inner.raw) };
        if result == CUresult::CUDA_ERROR_NOT_READY {
            return Ok(false);
        }
        check(result).map(|()| true)
    }

    /// Makes later work in this stream wait until `event` completes. The
    /// event must belong to this stream's context.
    pub fn wait_event(&self, event: &Event) -> Result<()> {
        self.inner.context.expect_same(event.context(), "event", "stream")?;
        let driver = self.inner.context.bind()?;
        // SAFETY: stream and event are alive; flags must be 0.
        check(unsafe { driver.cuStreamWaitEvent()?(self.inner.raw, event.raw(), 0) })
    }

    /// Runs `f` on a driver thread once all work queued before it is done;
    /// work queued after it waits for it. `f` must not call CUDA (nor read a
    /// [`HostBuffer`](crate::HostBuffer) with copies pending, which waits on a
    /// stream). A panic in `f` is caught and logged. Not allowed while the
    /// stream is capturing (a graph could run `f` more than once).
    pub fn launch_host_func<F: FnOnce() + Send + 'static>(&self, f: F) -> Result<()> {
        if self.is_capturing()? {
            return Err(Error::InvalidValue(
                "a host function cannot be queued on a capturing stream".into(),
            ));
        }
        let driver = self.inner.context.bind()?;
        let callback: Box<Box<dyn FnOnce() + Send>> = Box::new(Box::new(f));
        let data = Box::into_raw(callback);
        // SAFETY: `data` is a leaked box that `run_host_func` takes back exactly once.
        let result = unsafe { driver.cuLaunchHostFunc()?(self.inner.raw, Some(run_host_func), data.cast()) };
        if result != CUresult::CUDA_SUCCESS {
            // SAFETY: the driver refused the call, so it will never run the callback; reclaim it.
            drop(unsafe { Box::from_raw(data) });
        }
        check(result)
    }

    /// The stream's priority.
    pub fn priority(&self) -> Result<i32> {
        let driver = self.inner.context.bind()?;
        let mut priority = 0;
        // SAFETY: `priority` is a valid out-pointer; the stream is alive.
        check(unsafe { driver.cuStreamGetPriority()?(self.inner.raw, &mut priority) })?;
        Ok(priority)
    }

    /// The stream's flags.
    pub fn flags(&self) -> Result<StreamFlags> {
        let driver = self.inner.context.bind()?;
        let mut flags = 0;
        // SAFETY: `flags` is a valid out-pointer; the stream is alive.
        check(unsafe { driver.cuStreamGetFlags()?(self.inner.raw, &mut flags) })?;
        Ok(StreamFlags::from_bits_retain(flags))
    }

    /// The driver's handle.
    ///
    /// # Safety
    /// Valid only while this stream (or a clone) is alive; the caller must
    /// not destroy it. A capture begun on the raw handle is unknown to this
    /// crate: memory dropped while it is active is freed at once, which
    /// invalidates it, and the graph does not keep its kernels loaded.
    pub unsafe fn as_raw(&self) -> CUstream {
        self.inner.raw
    }

    pub(crate) fn raw(&self) -> CUstream {
        self.inner.raw
    }
}

/// Runs a host function queued by [`Stream::launch_host_func`].
unsafe extern "C" fn run_host_func(data: *mut c_void) {
    // SAFETY: `data` came from `Box::into_raw` in `launch_host_func`, and the driver calls this
    // exactly once per successful `cuLaunchHostFunc` (capturing streams are refused).
    let callback = unsafe { Box::from_raw(data.cast::<Box<dyn FnOnce() + Send>>()) };
    if std::panic::catch_unwind(AssertUnwindSafe(callback)).is_err() {
        eprintln!("cuda-driver: a stream host function panicked; the panic was caught");
    }
}

impl Drop for StreamInner {
    fn drop(&mut self) {
        // A capture left active ends here, and the frees it deferred run.
        self.capture.end_for_drop(self.raw, &self.context);
        if !self.owned {
            return;
        }
        let Some(driver) = self.context.bind_for_drop("cuStreamDestroy") else {
            return;
        };
        // SAFETY: this is the only owner of the stream; queued work still completes.
        let result = driver.cuStreamDestroy_v2().map(|destroy| unsafe { destroy(self.raw) });
        self.context
            .record_drop_result("cuStreamDestroy", check_resolved(result));
    }
}

impl PartialEq for Stream {
    fn eq(&self, other: &Stream) -> bool {
        self.inner.raw == other.inner.raw && self.inner.context == other.inner.context
    }
}

impl Eq for Stream {}

impl std::fmt::Debug for Stream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Stream")
            .field("raw", &self.inner.raw)
            .field("context", &self.inner.context)
            .finish()
    }
}
