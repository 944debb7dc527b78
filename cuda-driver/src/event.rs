//! Events: markers in a stream, for ordering and timing.

use std::ptr;

use cuda_sys::driver::{CUevent, CUresult};

use crate::error::{check, check_resolved, Result};
use crate::flags::EventFlags;
use crate::{Context, Stream};

/// An event of a context (`CUevent`), destroyed on drop.
pub struct Event {
    raw: CUevent,
    context: Context,
}

// SAFETY: CUevent handles may be recorded, queried and waited on from any
// thread; every use makes the event's context current first.
unsafe impl Send for Event {}
// SAFETY: as above; the driver synchronises concurrent use of one event.
unsafe impl Sync for Event {}

impl Event {
    /// A new event with `flags`.
    pub fn new(context: &Context, flags: EventFlags) -> Result<Event> {
        let driver = context.bind()?;
        let mut raw = ptr::null_mut();
        // SAFETY: `raw` is a valid out-pointer; the context is current.
        check(unsafe { driver.cuEventCreate()?(&mut raw, flags.bits()) })?;
        Ok(Event {
            raw,
            context: context.clone(),
        })
    }

    /// Takes ownership of `raw`, an event of `context` (destroyed on drop).
    pub(crate) fn from_parts(raw: CUevent, context: Context) -> Event {
        Event { raw, context }
    }

    /// Records the event at the current end of `stream` (same context).
    pub fn record(&self, stream: &Stream) -> Result<()> {
        self.context.expect_same(stream.context(), "stream", "event")?;
        let driver = self.context.bind()?;
        // SAFETY: event and stream are alive and of the current context.
        check(unsafe { driver.cuEventRecord()?(self.raw, stream.raw()) })
    }

    /// Waits until the work before the last `record` completes, then
    /// returns errors kept from destructors (see [`Context::check_deferred`]).
    pub fn synchronize(&self) -> Result<()> {
        let driver = self.context.bind()?;
        // SAFETY: the event is alive.
        let result = check(unsafe { driver.cuEventSynchronize()?(self.raw) });
        self.context.check_deferred()?;
        result
    }

    /// Whether the work before the last `record` has completed.
    pub fn query(&self) -> Result<bool> {
        let driver = self.context.bind()?;
        // SAFETY: the event is alive.
        let result = unsafe { driver.cuEventQuery()?(self.raw) };
        if result == CUresult::CUDA_ERROR_NOT_READY {
            return Ok(false);
        }
        check(result).map(|()| true)
    }

    /// Milliseconds between this event and `end` (both recorded, completed,
    /// and created without [`EventFlags::DISABLE_TIMING`]).
    pub fn elapsed_ms(&self, end: &Event) -> Result<f32> {
        self.context.expect_same(&end.context, "end event", "start event")?;
        let driver = self.context.bind()?;
        let mut ms = 0.0f32;
        // Drivers before 12.8 have the same function under its 12.x name only.
        let elapsed = match driver.cuEventElapsedTime_v2() {
            Ok(elapsed) => elapsed,
            Err(missing) if missing.needs_version.is_some() => driver.cuEventElapsedTime_v1()?,
            Err(missing) => return Err(missing.into()),
        };
        // SAFETY: `ms` is a valid out-pointer; both events are alive.
        check(unsafe { elapsed(&mut ms, self.raw, end.raw) })?;
        Ok(ms)
    }

    /// The context the event belongs to.
    pub fn context(&self) -> &Context {
        &self.context
    }

    /// The driver's handle.
    ///
    /// # Safety
    /// Valid only while this event is alive; the caller must not destroy it.
    pub unsafe fn as_raw(&self) -> CUevent {
        self.raw
    }

    pub(crate) fn raw(&self) -> CUevent {
        self.raw
    }
}

impl Drop for Event {
    fn drop(&mut self) {
        let Some(driver) = self.context.bind_for_drop("cuEventDestroy") else {
            return;
        };
        // SAFETY: this is the only owner of the event.
        let result = driver.cuEventDestroy_v2().map(|destroy| unsafe { destroy(self.raw) });
        self.context
            .record_drop_result("cuEventDestroy", check_resolved(result));
    }
}

impl std::fmt::Debug for Event {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Event").field("raw", &self.raw).finish()
    }
}
