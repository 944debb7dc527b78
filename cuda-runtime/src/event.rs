//! Events: markers recorded on a stream, for waiting and timing.

use std::ffi::c_float;

use cuda_sys::runtime::{cudaError_t, cudaEvent_t};

use crate::device::make_current;
use crate::error::check;
use crate::{runtime, Device, Error, Result, Stream};

bitflags::bitflags! {
    /// Event creation flags (`cudaEventCreateWithFlags`).
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
    pub struct EventFlags: u32 {
        /// Waiting on the event blocks the thread instead of spinning.
        const BLOCKING_SYNC = cuda_sys::runtime::cudaEventBlockingSync;
        /// No timing data (cheaper); [`Event::elapsed_ms`] then fails.
        const DISABLE_TIMING = cuda_sys::runtime::cudaEventDisableTiming;
        /// Shareable between processes (needs `DISABLE_TIMING`).
        const INTERPROCESS = cuda_sys::runtime::cudaEventInterprocess;
    }
}

/// An event of one device, destroyed on drop.
#[derive(Debug)]
pub struct Event {
    raw: cudaEvent_t,
    device: Device,
}

// SAFETY: an event handle is an opaque token the runtime accepts from any
// thread; calls through it select its device first.
unsafe impl Send for Event {}
// SAFETY: as above; the runtime serialises concurrent calls on one event.
unsafe impl Sync for Event {}

impl Event {
    /// A new event on `device` (`cudaEventCreateWithFlags`).
    pub fn new(device: Device, flags: EventFlags) -> Result<Event> {
        let runtime = runtime()?;
        make_current(runtime, device.raw_ordinal())?;
        let mut raw: cudaEvent_t = std::ptr::null_mut();
        // SAFETY: `raw` is a valid out-pointer; flags are the header's bits.
        check(runtime, unsafe {
            runtime.cudaEventCreateWithFlags()?(&mut raw, flags.bits())
        })?;
        Ok(Event { raw, device })
    }

    pub(crate) fn raw(&self) -> cudaEvent_t {
        self.raw
    }

    /// The device the event belongs to.
    pub fn device(&self) -> Device {
        self.device
    }

    /// Records the event at the current end of `stream` (`cudaEventRecord`);
    /// the stream must be of the event's device.
    pub fn record(&self, stream: &Stream) -> Result<()> {
        stream.expect_device("event", self.device)?;
        let runtime = stream.enter()?;
        // SAFETY: both handles are valid while their owners live.
        check(runtime, unsafe { runtime.cudaEventRecord()?(self.raw, stream.raw()) })
    }

    /// Waits until the work before the last record has finished (`cudaEventSynchronize`).
    pub fn synchronize(&self) -> Result<()> {
        let runtime = self.enter()?;
        // SAFETY: the handle is valid while `self` lives.
        check(runtime, unsafe { runtime.cudaEventSynchronize()?(self.raw) })
    }

    /// `true` if the work before the last record has finished (`cudaEventQuery`).
    pub fn query(&self) -> Result<bool> {
        let runtime = self.enter()?;
        // SAFETY: the handle is valid while `self` lives.
        let code = unsafe { runtime.cudaEventQuery()?(self.raw) };
        if code == cudaError_t::cudaErrorNotReady {
            return Ok(false);
        }
        check(runtime, code).map(|()| true)
    }

    /// Milliseconds from this event to `end` (`cudaEventElapsedTime`); both
    /// must be recorded, completed, of one device and made without `DISABLE_TIMING`.
    pub fn elapsed_ms(&self, end: &Event) -> Result<f32> {
        if end.device != self.device {
            return Err(Error::WrongDevice {
                what: "end event".to_string(),
                expected: self.device.raw_ordinal(),
                found: end.device.raw_ordinal(),
            });
        }
        let runtime = self.enter()?;
        let mut ms: c_float = 0.0;
        // SAFETY: both handles are valid; `ms` is a valid out-pointer.
        check(runtime, unsafe {
            runtime.cudaEventElapsedTime()?(&mut ms, self.raw, end.raw)
        })?;
        Ok(ms)
    }

    fn enter(&self) -> Result<&'static cuda_sys::Runtime> {
        let runtime = runtime()?;
        make_current(runtime, self.device.raw_ordinal())?;
        Ok(runtime)
    }
}

impl Drop for Event {
    fn drop(&mut self) {
        let Ok(runtime) = self.enter() else { return };
        if let Ok(destroy) = runtime.cudaEventDestroy() {
            // SAFETY: we own the event; pending records complete before the
            // runtime releases it. An error here cannot be reported.
            let _ = unsafe { destroy(self.raw) };
        }
    }
}
