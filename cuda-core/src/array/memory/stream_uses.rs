//! [`StreamUses`]: how the array layer orders the streams that use a piece of its memory. The
//! memory is ordered on one stream (its owner: the stream it was allocated or imported on),
//! and as long as only that stream uses it nothing needs recording: a use costs a comparison.
//! When a second stream uses it, cuda-driver's [`StreamTracker`] (the device-memory contract's
//! event-based tracker) takes over for every later use: a read waits for the last write on
//! another stream, a write for the last write and the reads since, with events on the device;
//! and before the memory goes back, the owner waits for every other stream's uses.

use std::ptr::{self, NonNull};
use std::sync::atomic::{AtomicPtr, Ordering};

use cuda_driver::{Access, Stream, StreamTracker, StreamUse};

/// The stream memory is ordered on, and (once a second stream used it) the tracker of uses.
pub(crate) struct StreamUses {
    owner: Owner,
    /// Null until a second stream uses the memory, then a tracker from `Box::into_raw`, freed
    /// by `Drop`. Most memory never meets a second stream: a pool block stays small, and a use
    /// or a release checks one word.
    shared: AtomicPtr<StreamTracker>,
}

/// The stream memory is ordered on: a clone, or one that a pool's bins keep (which saves a
/// reference count update per block).
enum Owner {
    Held(Stream),
    Lent(NonNull<Stream>),
}

// SAFETY: a lent stream is only read, and `Stream` is `Send` and `Sync`; its keeper
// (`StreamUses::lent`) outlives the `StreamUses` whatever thread drops it.
unsafe impl Send for Owner {}
// SAFETY: as above.
unsafe impl Sync for Owner {}

/// Refuses the per-thread default stream for memory: it is another stream on each thread, so
/// ordering a release (on whatever thread drops the memory) after its work is impossible, and
/// the host wait that would replace it can deadlock against a capture on another thread.
pub(crate) fn check_per_thread(stream: &Stream) -> cuda_driver::Result<()> {
    match stream.is_per_thread() {
        true => Err(cuda_driver::Error::InvalidValue(
            "the per-thread default stream (CU_STREAM_PER_THREAD) is a different stream on each thread, so memory cannot be ordered on it; use a stream object (Device::create_stream)".into(),
        )),
        false => Ok(()),
    }
}

/// Whether two streams are the same stream (the same handle of the same context).
#[inline]
fn same_stream(a: &Stream, b: &Stream) -> bool {
    // SAFETY: the handles are only compared.
    unsafe { a.as_raw() == b.as_raw() }
}

impl StreamUses {
    pub(crate) fn new(owner: Stream) -> Self {
        StreamUses {
            owner: Owner::Held(owner),
            shared: AtomicPtr::new(ptr::null_mut()),
        }
    }

    /// Uses of memory ordered on a stream kept by someone else.
    ///
    /// # Safety
    /// `owner` must point at a stream that stays alive and in place, and is not mutated, as
    /// long as the returned value lives.
    pub(crate) unsafe fn lent(owner: NonNull<Stream>) -> Self {
        StreamUses {
            owner: Owner::Lent(owner),
            shared: AtomicPtr::new(ptr::null_mut()),
        }
    }

    #[inline]
    pub(crate) fn owner(&self) -> &Stream {
        match &self.owner {
            Owner::Held(stream) => stream,
            // SAFETY: `lent`'s contract keeps the stream alive and unchanged while `self` lives.
            Owner::Lent(stream) => unsafe { stream.as_ref() },
        }
    }

    /// Begins a use of the memory by work about to be queued on `stream` (see the module's
    /// docs); drop the guard once the work is queued.
    #[inline]
    pub(crate) fn begin_use(&self, stream: &Stream, access: Access) -> cuda_driver::Result<StreamUse<'_>> {
        if let Some(tracker) = self.tracker() {
            return tracker.begin_use(stream, access);
        }
        if same_stream(stream, self.owner()) {
            return Ok(StreamUse::untracked());
        }
        self.begin_shared_use(stream, access)
    }

    /// The first use by a second stream: from here on the tracker orders every use, starting
    /// from the owner's work so far (which counts as a write).
    #[cold]
    fn begin_shared_use(&self, stream: &Stream, access: Access) -> cuda_driver::Result<StreamUse<'_>> {
        check_per_thread(stream)?;
        self.tracker_or_start().begin_use(stream, access)
    }

    #[inline]
    fn tracker(&self) -> Option<&StreamTracker> {
        // SAFETY: a non-null pointer came from `Box::into_raw` in `tracker_or_start` and is freed
        // only by `Drop`, which `&self` outlives.
        unsafe { self.shared.load(Ordering::Acquire).as_ref() }
    }

    /// The tracker, made now if no use made it yet. Two threads that race here each build one;
    /// the loser drops its own (building one only clones the owner stream).
    fn tracker_or_start(&self) -> &StreamTracker {
        if let Some(tracker) = self.tracker() {
            return tracker;
        }
        let new = Box::into_raw(Box::new(StreamTracker::stream_ordered(self.owner())));
        match self
            .shared
            .compare_exchange(ptr::null_mut(), new, Ordering::AcqRel, Ordering::Acquire)
        {
            // SAFETY: `new` is now owned by `self.shared` and freed only by `Drop`.
            Ok(_) => unsafe { &*new },
            Err(winner) => {
                // SAFETY: `new` was never shared; `winner` is owned by `self.shared` as above.
                unsafe {
                    drop(Box::from_raw(new));
                    &*winner
                }
            }
        }
    }

    /// Right before the memory goes back (to its pool or its producer) in the owner's order:
    /// the owner waits on the device for every other stream's uses. A failure is recorded on
    /// the stream's context and replaced by a wait for the context (see
    /// [`StreamTracker::prepare_free`]).
    pub(crate) fn order_release(&self) {
        if let Some(tracker) = self.tracker() {
            tracker.prepare_free();
        }
    }
}

impl Drop for StreamUses {
    fn drop(&mut self) {
        let tracker = *self.shared.get_mut();
        if !tracker.is_null() {
            // SAFETY: a non-null pointer came from `Box::into_raw` and nothing else frees it.
            drop(unsafe { Box::from_raw(tracker) });
        }
    }
}
