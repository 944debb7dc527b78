//! The device-memory contract: [`DeviceMemory`] (and [`DeviceMemoryMut`] for memory that may be
//! written), what every launch and library wrapper takes, and [`StreamTracker`], which orders
//! the streams that use one piece of memory with events.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard};

use cuda_sys::driver::CUdeviceptr;

use crate::context::synchronize_current;
use crate::error::{check, Error, Result};
use crate::{Context, Event, EventFlags, Stream};

/// How queued work uses memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    /// The work only reads the memory.
    Read,
    /// The work may write the memory (and read it).
    Write,
}

/// Device memory that work on streams uses: the contract every launch and library wrapper
/// takes (`&impl DeviceMemory` for inputs, `&mut impl DeviceMemoryMut` for outputs). How uses
/// are ordered: [`StreamTracker`].
///
/// Pinned host memory ([`HostBuffer`](crate::HostBuffer)) is not device memory under this
/// contract: the host itself reads and writes it, so its own bookkeeping waits on the host
/// before host access; device work reaches it through copies, whose device side is the
/// contract's.
///
/// # The range is dense
/// `device_ptr()..device_ptr() + byte_len()` is the memory itself, in its logical element
/// order: every byte belongs to it and may be read by the routine it is given to (and written,
/// for [`DeviceMemoryMut`]). Routines treat it as that many consecutive elements. A view whose
/// elements are not one such run (strided, transposed, reversed or broadcast) has no such
/// range: its `begin_use` returns [`Error::NotDense`] and its `byte_len` is 0, so no routine
/// reads it as memory. Such a view either goes to a routine together with its layout (BLAS
/// increments, leading dimensions and transposes), through a type that says so, or is copied
/// to compact memory first.
///
/// Every consumer calls `begin_use` before it queues work on the memory: that is where the
/// refusal comes, before anything runs.
///
/// # Safety
/// Implementors guarantee that `device_ptr()..device_ptr()+byte_len()` is device memory of
/// `context()`, dense as described above, that stays allocated while `self` lives and is not
/// freed before the work recorded through `begin_use` has completed (the free is ordered after
/// it); and that `begin_use` fails for a value that is not dense.
pub unsafe trait DeviceMemory {
    /// The context the memory belongs to.
    fn context(&self) -> &Context;
    /// The device address of the first byte (the first element's).
    fn device_ptr(&self) -> CUdeviceptr;
    /// The size in bytes of the dense range (0 for a view that is not dense).
    fn byte_len(&self) -> usize;
    /// Orders `stream` after conflicting earlier uses on other streams (a read waits for the
    /// last write; a write for the last write and every read since), with `cuStreamWaitEvent`,
    /// never a host wait; the returned guard records this use when dropped. Drop it once the
    /// work is queued. `stream` may belong to another context (a peer copy's); what the
    /// operation allows is the caller's to check. A view that is not dense is
    /// [`Error::NotDense`] (see the trait's docs).
    fn begin_use(&self, stream: &Stream, access: Access) -> Result<StreamUse<'_>>;
}

/// Memory that may be written through (`&mut` access given): what outputs take.
///
/// # Safety
/// As for [`DeviceMemory`]; and holding `&mut self` gives the right to write the range.
pub unsafe trait DeviceMemoryMut: DeviceMemory {}

/// The order of uses between stream entries, without a driver: which entries a new use must
/// wait for, and what it changes. Entries are indices into the tracker's stream list.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
struct UseOrder {
    /// The entry of the last write.
    last_write: Option<usize>,
    /// Entries that read since the last write, other than the writer's.
    reads: Vec<usize>,
}

impl UseOrder {
    /// The entries a use by `entry` must wait for: the last writer (for any access) and every
    /// reader since (for a write), never `entry` itself.
    fn conflicts(&self, entry: usize, access: Access) -> impl Iterator<Item = usize> + '_ {
        let reads: &[usize] = match access {
            Access::Read => &[],
            Access::Write => &self.reads,
        };
        self.last_write
            .into_iter()
            .chain(reads.iter().copied())
            .filter(move |&other| other != entry)
    }

    /// Notes a use by `entry`, after it waited for its conflicts. A read on the writer's
    /// stream is covered by waiting for that stream, so it is not listed.
    fn note(&mut self, entry: usize, access: Access) {
        match access {
            Access::Write => {
                self.last_write = Some(entry);
                self.reads.clear();
            }
            Access::Read => {
                if self.last_write != Some(entry) && !self.reads.contains(&entry) {
                    self.reads.push(entry);
                }
            }
        }
    }
}

/// One stream that used the memory.
struct Entry {
    stream: Stream,
    /// Recorded at the end of the stream's uses; created when first needed.
    event: Option<Event>,
    /// A use was queued on the stream after the event's last record (or before any).
    pending: bool,
}

impl Entry {
    /// The event marking the stream's uses so far: recorded now if `record_now`, or if a use
    /// is not yet covered by its last record (or it was never recorded; it is created then).
    fn recorded_event(&mut self, record_now: bool) -> Result<&Event> {
        let event = match self.event.take() {
            Some(event) => event,
            None => {
                self.pending = true;
                Event::new(self.stream.context(), EventFlags::DISABLE_TIMING)?
            }
        };
        let event = self.event.insert(event);
        if record_now || self.pending {
            if self.stream.in_capture()? {
                return Err(Error::InvalidValue(
                    "device memory was last used on a stream that is capturing now: its use cannot be ordered from outside the capture; end the capture first".into(),
                ));
            }
            event.record(&self.stream)?;
            self.pending = false;
        }
        Ok(event)
    }

    /// Waits on the host until the stream's uses have completed: its event if they are all
    /// recorded, otherwise the stream.
    fn wait_on_host(&self) -> Result<()> {
        match &self.event {
            Some(event) if !self.pending => {
                let driver = event.context().bind()?;
                // SAFETY: the event is alive while the entry is.
                check(unsafe { driver.cuEventSynchronize()?(event.raw()) })
            }
            _ => self.stream.synchronize_quiet(),
        }
    }
}

/// The stream handles that name a different stream per context or thread (null, the legacy
/// default stream, the per-thread default stream): never a tracker's `sole` stream.
const SPECIAL_HANDLES: usize = 2;

/// Makes `stream` wait on the device for `event`, which may be of another context.
fn wait_on_device(stream: &Stream, event: &Event) -> Result<()> {
    let driver = stream.context().bind()?;
    // SAFETY: stream and event are alive; an event of another context may be waited for; flags 0.
    check(unsafe { driver.cuStreamWaitEvent()?(stream.raw(), event.raw(), 0) })
}

struct State {
    entries: Vec<Entry>,
    order: UseOrder,
}

impl State {
    /// The entry of `stream`, added if new; `shared` is set once there are two.
    fn entry_of(&mut self, stream: &Stream, shared: &AtomicBool) -> usize {
        if let Some(index) = self.entries.iter().position(|entry| entry.stream == *stream) {
            return index;
        }
        self.entries.push(Entry {
            stream: stream.clone(),
            event: None,
            pending: false,
        });
        if self.entries.len() > 1 {
            shared.store(true, Ordering::SeqCst);
        }
        self.entries.len() - 1
    }
}

/// Which streams used a piece of memory, as events: what orders later users and the free.
///
/// Memory types embed one and answer [`DeviceMemory::begin_use`] with
/// [`StreamTracker::begin_use`]; their destructor calls [`StreamTracker::prepare_free`]
/// right before freeing.
///
/// # Rules
/// Per piece of memory:
/// - A use begins ([`DeviceMemory::begin_use`]) before its work is queued and ends (the
///   [`StreamUse`] guard dropped) after. A read waits for the last write on another stream; a
///   write waits for the last write and for every read since, on other streams. The waits are
///   `cuStreamWaitEvent`: the host never waits on this path.
/// - Uses on one stream only need no event and no driver call (the stream's order suffices).
///   Once a second stream uses the memory, each use records its stream's event when it ends
///   (one event per stream, created on first need and recorded again each time); uses from
///   before that are covered by recording the event when a second stream first needs it.
/// - Stream-ordered memory counts its allocation as a write on its owner stream, so another
///   stream's first use waits for the allocation on the device; its free (`cuMemFreeAsync` on
///   the owner) is ordered after every other stream's last use with `cuStreamWaitEvent`.
///   Memory freed with `cuMemFree` host-waits for each stream's event (or the stream, for uses
///   not yet recorded) first: that is the free, not the hot path.
/// - Work queued on a capturing stream is recorded into a graph, not run: its uses are not
///   tracked (the graph's launches are ordered by whoever launches it, see
///   [`GraphExec::launch`](crate::GraphExec::launch)), and memory dropped while a capture is
///   active is freed when it ends (see [`Stream::begin_capture`]).
/// - Streams of other contexts (peer copies) are tracked like the context's own: events may be
///   waited for across contexts.
/// - Uses begun concurrently on two threads are not ordered with each other (they are
///   concurrent by the caller's choice); ordering applies to uses that begin after others ended.
/// - The per-thread default stream is refused: it names another stream on each thread.
/// - Synchronous access (copies on the legacy default stream, reading to the host) first
///   waits on the host for every stream's uses ([`StreamTracker::wait_for_uses`]).
pub struct StreamTracker {
    /// The stream a stream-ordered allocation was made on and is freed on.
    owner: Option<Stream>,
    state: Mutex<State>,
    /// Two streams or more used the memory: uses record their stream's event when they end.
    shared: AtomicBool,
    /// While one stream alone has used the memory: its handle (0 before any use). Its entry is
    /// pending and counts as the last writer, so its further uses need neither the lock nor a
    /// note: a second stream waits for everything it queued.
    sole: AtomicUsize,
}

impl Default for StreamTracker {
    fn default() -> Self {
        Self::new()
    }
}

impl StreamTracker {
    /// A tracker for memory that no stream has used yet (plain `cuMemAlloc` memory).
    pub const fn new() -> Self {
        StreamTracker {
            owner: None,
            state: Mutex::new(State {
                entries: Vec::new(),
                order: UseOrder {
                    last_write: None,
                    reads: Vec::new(),
                },
            }),
            shared: AtomicBool::new(false),
            sole: AtomicUsize::new(0),
        }
    }

    /// A tracker for memory allocated in `owner`'s order (`cuMemAllocAsync`) and freed in it:
    /// the allocation counts as a write on `owner`, which other streams' first use waits for.
    pub fn stream_ordered(owner: &Stream) -> Self {
        StreamTracker {
            owner: Some(owner.clone()),
            state: Mutex::new(State {
                entries: vec![Entry {
                    stream: owner.clone(),
                    event: None,
                    pending: true,
                }],
                order: UseOrder {
                    last_write: Some(0),
                    reads: Vec::new(),
                },
            }),
            shared: AtomicBool::new(false),
            sole: AtomicUsize::new(match owner.raw() as usize {
                raw if raw > SPECIAL_HANDLES => raw,
                _ => 0,
            }),
        }
    }

    /// The owner stream of stream-ordered memory.
    pub fn owner(&self) -> Option<&Stream> {
        self.owner.as_ref()
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Orders `stream` after the conflicting earlier uses on other streams (see
    /// [`DeviceMemory::begin_use`]) and notes this use; drop the guard once its work is queued.
    /// On one stream alone this is a lock and no driver call. The per-thread default stream is
    /// [`Error::InvalidValue`]; a capturing stream's use is not tracked.
    pub fn begin_use(&self, stream: &Stream, access: Access) -> Result<StreamUse<'_>> {
        if stream.is_per_thread() {
            return Err(Error::InvalidValue(
                "the per-thread default stream (CU_STREAM_PER_THREAD) is a different stream on each thread, so memory cannot be ordered on it; use a stream object (Stream::new)".into(),
            ));
        }
        // The sole stream's further uses: ordered by the stream alone (see `sole`).
        let raw = stream.raw() as usize;
        if !self.shared.load(Ordering::SeqCst) && self.sole.load(Ordering::Acquire) == raw && raw > SPECIAL_HANDLES {
            return Ok(StreamUse::untracked());
        }
        if stream.in_capture()? {
            return Ok(StreamUse::untracked());
        }
        let mut state = self.state();
        let entry = state.entry_of(stream, &self.shared);
        let State { entries, order } = &mut *state;
        for other in order.conflicts(entry, access) {
            let event = entries[other].recorded_event(false)?;
            wait_on_device(stream, event)?;
        }
        order.note(entry, access);
        entries[entry].pending = true;
        if entries.len() == 1 && raw > SPECIAL_HANDLES {
            // The first stream: from now on its uses skip the lock, so any of them may be a
            // write; a second stream waits for all of them.
            order.last_write = Some(entry);
            self.sole.store(raw, Ordering::Release);
        }
        Ok(StreamUse {
            tracker: Some(self),
            entry,
        })
    }

    /// Ends a use by `entry`: once two streams share the memory, records the stream's event.
    fn end_use(&self, entry: usize) {
        if !self.shared.load(Ordering::SeqCst) {
            return;
        }
        let mut state = self.state();
        let Some(entry) = state.entries.get_mut(entry) else {
            return;
        };
        if let Err(error) = entry.recorded_event(true) {
            // The use stays pending: the next user that needs it records the event again.
            entry
                .stream
                .context()
                .record_drop_error("recording a stream's use of device memory", error);
        }
    }

    /// Waits on the host until every tracked use has completed: before synchronous access
    /// (copies on the legacy default stream, host reads) and plain frees.
    pub fn wait_for_uses(&self) -> Result<()> {
        let state = self.state();
        state.entries.iter().try_for_each(Entry::wait_on_host)
    }

    /// Right before the memory is freed (not while a capture is active): stream-ordered memory
    /// makes its owner stream wait on the device for every other stream's uses; other memory
    /// waits on the host for each stream's uses. Made for destructors: a failure is recorded
    /// on the stream's context (see [`Context::check_deferred`]) and replaced by waiting for
    /// that context.
    pub fn prepare_free(&self) {
        let mut state = self.state();
        for entry in &mut state.entries {
            let result = match &self.owner {
                Some(owner) if entry.stream == *owner => continue,
                Some(owner) => entry
                    .recorded_event(false)
                    .and_then(|event| wait_on_device(owner, event)),
                None => entry.wait_on_host(),
            };
            if let Err(error) = result {
                let context = entry.stream.context();
                context.record_drop_error("ordering a free after a stream's use of the memory", error);
                if let Some(driver) = context.bind_for_drop("waiting for a stream's use before a free") {
                    context.record_drop_result(
                        "cuCtxSynchronize before freeing device memory",
                        synchronize_current(driver),
                    );
                }
            }
        }
    }
}

impl std::fmt::Debug for StreamTracker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut out = f.debug_struct("StreamTracker");
        out.field("owner", &self.owner);
        // Not waiting for the lock: a holder on this thread would deadlock.
        match self.state.try_lock() {
            Ok(state) => out
                .field("streams", &state.entries.len())
                .field("last_write", &state.order.last_write)
                .field("reads", &state.order.reads),
            Err(_) => out.field("streams", &format_args!("<in use>")),
        };
        out.finish()
    }
}

/// A use of memory by work being queued on a stream: created by `begin_use` (which made the
/// stream wait, on the device, for conflicting earlier work on other streams); dropped after
/// the work is queued, it records an event on the stream when needed, so later users on other
/// streams and the free wait for this work.
#[must_use = "drop the guard after the work that uses the memory is queued"]
pub struct StreamUse<'a> {
    /// `None` for a use that is not tracked (on a capturing stream).
    tracker: Option<&'a StreamTracker>,
    entry: usize,
}

impl StreamUse<'static> {
    /// A use that needs no record: for memory that only its own stream has used, where the
    /// stream's order is all the ordering there is (what an implementor with a cheaper
    /// single-stream path returns).
    pub const fn untracked() -> StreamUse<'static> {
        StreamUse {
            tracker: None,
            entry: 0,
        }
    }
}

impl StreamUse<'_> {
    /// Whether ending the use records anything (memory shared by streams); an untracked use
    /// may be dropped at once.
    pub fn is_tracked(&self) -> bool {
        self.tracker.is_some()
    }
}

impl Drop for StreamUse<'_> {
    #[inline]
    fn drop(&mut self) {
        if let Some(tracker) = self.tracker {
            tracker.end_use(self.entry);
        }
    }
}

impl std::fmt::Debug for StreamUse<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StreamUse")
            .field("tracked", &self.tracker.is_some())
            .field("entry", &self.entry)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use Access::{Read, Write};

    /// Applies `uses` in turn; returns, per use, the entries it waited for.
    fn run(order: &mut UseOrder, uses: &[(usize, Access)]) -> Vec<Vec<usize>> {
        uses.iter()
            .map(|&(entry, access)| {
                let waits: Vec<usize> = order.conflicts(entry, access).collect();
                order.note(entry, access);
                waits
            })
            .collect()
    }

    #[test]
    fn one_stream_never_waits() {
        let mut order = UseOrder::default();
        let waits = run(&mut order, &[(0, Write), (0, Read), (0, Write), (0, Read), (0, Read)]);
        assert!(waits.iter().all(Vec::is_empty), "{waits:?}");
        assert_eq!(
            order.reads,
            Vec::<usize>::new(),
            "reads on the writer's stream are not listed"
        );
    }

    #[test]
    fn read_after_write_waits_for_the_writer() {
        let mut order = UseOrder::default();
        assert_eq!(run(&mut order, &[(0, Write), (1, Read)]), [vec![], vec![0]]);
        // Another read waits for the same write, not for the first reader.
        assert_eq!(run(&mut order, &[(2, Read)]), [vec![0]]);
    }

    #[test]
    fn write_after_read_waits_for_every_reader_and_the_writer() {
        let mut order = UseOrder::default();
        run(&mut order, &[(0, Write), (1, Read), (2, Read)]);
        assert_eq!(run(&mut order, &[(3, Write)]), [vec![0, 1, 2]]);
        // The write replaced them: the next read waits for it alone.
        assert_eq!(run(&mut order, &[(1, Read)]), [vec![3]]);
    }

    #[test]
    fn a_writer_does_not_wait_for_itself() {
        let mut order = UseOrder::default();
        run(&mut order, &[(0, Write), (1, Read)]);
        // Stream 0 writes again: waits for the reader on 1, not for its own write.
        assert_eq!(run(&mut order, &[(0, Write)]), [vec![1]]);
        // Stream 1 reads again, then writes: waits for 0's write only.
        assert_eq!(run(&mut order, &[(1, Read), (1, Write)]), [vec![0], vec![0]]);
    }

    #[test]
    fn reads_do_not_wait_for_reads() {
        let mut order = UseOrder::default();
        assert_eq!(
            run(&mut order, &[(0, Read), (1, Read), (0, Read)]),
            [vec![], vec![], vec![]]
        );
        assert_eq!(order.reads, [0, 1], "each reader listed once");
        assert_eq!(run(&mut order, &[(1, Write)]), [vec![0]]);
    }

    #[test]
    fn stream_ordered_memory_starts_written_by_its_owner() {
        let mut order = UseOrder {
            last_write: Some(0),
            reads: Vec::new(),
        };
        assert_eq!(run(&mut order, &[(0, Read), (0, Write)]), [vec![], vec![]]);
        assert_eq!(run(&mut order, &[(1, Read)]), [vec![0]]);
    }
}
