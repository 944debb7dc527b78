//! Replaying a repeated library call as a CUDA graph, when the handle's owner turns it on: the
//! same product on the same addresses, a second time, is captured once (on a side stream, so
//! nothing else queued on the caller's stream joins the capture) and from then on launched as
//! one graph, which costs the host a fraction of the library call (the H200: see
//! docs/BENCHMARKS.md).
//!
//! Off by default. While a capture is under way, a context-wide synchronise on any other
//! thread (`cuCtxSynchronize`, `cudaDeviceSynchronize`, a pool's wait for memory) fails with
//! `CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED` (and invalidates the capture): a library call must not
//! make another thread's legal call fail unasked, so capturing is the caller's choice
//! ([`Lt::set_replay`](super::Lt::set_replay)), made knowing what else the process runs.
//!
//! A graph replays the kernels the call launched with the arguments it launched them with, so
//! it stands for exactly one call: the key holds everything the call depends on (the plan, every
//! address, `alpha` and `beta`). A loop that multiplies the same operands into a pooled output
//! repeats its addresses and is replayed; one whose addresses never repeat pays one hash lookup
//! per call and is never captured. Addresses that do repeat, but too seldom for their graphs
//! to pay off (a long cycle of pooled blocks), stop the capturing: past [`FREE_CAPTURES`]
//! captures, a handle captures again only while its graphs have run [`REPLAYS_PER_CAPTURE`]
//! times per capture.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::{PoisonError, RwLock, RwLockReadGuard};

use cuda_driver::{CaptureMode, GraphExec, Stream, StreamFlags};

use crate::Result;

/// How many calls (seen once, or captured) a handle remembers; past that the least recently
/// used is forgotten and its graph destroyed.
pub const REMEMBERED_CALLS: usize = 64;

/// Making and destroying a cuBLAS or cuBLASLt handle synchronise the whole device
/// (`cublasDestroy` calls `cudaDeviceSynchronize`). No stream capture may be under way in the
/// context when that happens, or the capture is invalidated. On the H200, tests destroying their
/// handles beside a replay capture made the capture fail, and once crashed the process. So those
/// calls hold this lock shared ([`handle_lifecycle`]), and a capture holds it exclusively.
static HANDLE_LIFECYCLE: RwLock<()> = RwLock::new(());

/// Held while a handle is made or destroyed, so that no replay capture runs meanwhile.
pub(crate) fn handle_lifecycle() -> RwLockReadGuard<'static, ()> {
    HANDLE_LIFECYCLE.read().unwrap_or_else(PoisonError::into_inner)
}

/// Captures a handle makes before it asks whether they pay off.
pub(crate) const FREE_CAPTURES: u64 = 16;

/// Replays per capture a handle must have reached to capture again, past [`FREE_CAPTURES`]: a
/// capture and instantiation costs the host about what this many direct calls cost.
pub(crate) const REPLAYS_PER_CAPTURE: u64 = 4;

/// A remembered call: when it last ran, and its graph once it repeated.
struct Call {
    last_use: u64,
    graph: Option<GraphExec<'static>>,
}

/// The calls a handle has made and the graphs of those it made twice.
pub(crate) struct Replays<K> {
    /// The owner's switch (off by default).
    enabled: bool,
    /// A capture failed (the library did something a capture does not allow, or another thread
    /// synchronised the device meanwhile): every call is made directly until the switch is
    /// turned off and on again.
    failed: bool,
    /// The stream captures are recorded on, made on the first capture.
    side: Option<Stream>,
    calls: HashMap<K, Call>,
    clock: u64,
    captures: u64,
    replays: u64,
}

impl<K: Hash + Eq + Copy> Replays<K> {
    pub(crate) fn new() -> Self {
        Replays {
            enabled: false,
            failed: false,
            side: None,
            calls: HashMap::new(),
            clock: 0,
            captures: 0,
            replays: 0,
        }
    }

    /// Turns replaying on or off; off forgets every graph, and turning it on again forgets a
    /// failed capture. Setting the switch to what it is changes nothing (a caller may set it
    /// before every call).
    pub(crate) fn set_enabled(&mut self, enabled: bool) {
        if enabled == self.enabled {
            return;
        }
        self.enabled = enabled;
        self.failed = false;
        if !enabled {
            self.calls.clear();
        }
    }

    /// Whether calls are replayed now: switched on, and no capture failed since.
    pub(crate) fn enabled(&self) -> bool {
        self.enabled && !self.failed
    }

    /// How many of the remembered calls have a graph.
    pub(crate) fn graphs(&self) -> usize {
        self.calls.values().filter(|call| call.graph.is_some()).count()
    }

    /// Queues the call `key` stands for on `stream`: `call(stream)` the first time, its graph
    /// (captured from `call(side stream)`) from the second time on. A stream that is itself
    /// being captured gets the direct call, so the user's graph holds the library's kernels.
    ///
    /// # Safety
    /// `key` must determine everything `call` queues: the same key must mean the same kernels
    /// with the same arguments, reading and writing memory that is alive whenever the key is
    /// given again (the caller passes, with the key, the operands the addresses belong to).
    pub(crate) unsafe fn run(&mut self, key: K, stream: &Stream, call: impl Fn(&Stream) -> Result<()>) -> Result<()> {
        if !self.enabled() || stream.in_capture()? {
            return call(stream);
        }
        self.clock += 1;
        let now = self.clock;
        match self.calls.get_mut(&key) {
            Some(Call {
                last_use,
                graph: Some(graph),
            }) => {
                *last_use = now;
                self.replays += 1;
                // SAFETY: the graph is this key's call, whose memory is alive (the caller's
                // obligation); the graph and `stream` share a context (checked by `launch`).
                return Ok(unsafe { graph.launch(stream) }?);
            }
            Some(remembered) => {
                remembered.last_use = now;
                if self.captures >= FREE_CAPTURES && self.replays < REPLAYS_PER_CAPTURE * self.captures {
                    return call(stream);
                }
            }
            None => {
                self.remember(key, now);
                return call(stream);
            }
        }
        self.captures += 1;
        match self.capture(stream.context(), &call) {
            Ok(graph) => {
                // SAFETY: as above: the graph holds exactly this call.
                let launched = unsafe { graph.launch(stream) };
                if let Some(remembered) = self.calls.get_mut(&key) {
                    remembered.graph = Some(graph);
                }
                Ok(launched?)
            }
            Err(_) => {
                self.failed = true;
                self.calls.clear();
                call(stream)
            }
        }
    }

    fn capture(
        &mut self,
        context: &cuda_driver::Context,
        call: &impl Fn(&Stream) -> Result<()>,
    ) -> Result<GraphExec<'static>> {
        let side = match &self.side {
            Some(side) => side,
            None => self
                .side
                .insert(Stream::with_options(context, StreamFlags::NON_BLOCKING, 0)?),
        };
        let mut recorded = Ok(());
        let exclusive = HANDLE_LIFECYCLE.write().unwrap_or_else(PoisonError::into_inner);
        let graph = side.capture(CaptureMode::ThreadLocal, |side| {
            recorded = call(side);
            Ok(())
        });
        drop(exclusive);
        let graph = graph?;
        recorded?;
        Ok(graph.instantiate()?)
    }

    /// Remembers `key` as seen once, forgetting the least recently used call when full.
    fn remember(&mut self, key: K, now: u64) {
        if self.calls.len() >= REMEMBERED_CALLS {
            let oldest = self
                .calls
                .iter()
                .min_by_key(|(_, call)| call.last_use)
                .map(|(key, _)| *key);
            if let Some(oldest) = oldest {
                self.calls.remove(&oldest);
            }
        }
        self.calls.insert(
            key,
            Call {
                last_use: now,
                graph: None,
            },
        );
    }

    /// Forgets every call and destroys their graphs (before the handle they came from goes).
    pub(crate) fn clear(&mut self) {
        self.calls.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replay_is_off_until_switched_on_and_a_failure_holds_until_switched_again() {
        let mut replays = Replays::<u32>::new();
        assert!(
            !replays.enabled(),
            "off by default: no capture the caller did not ask for"
        );
        replays.set_enabled(true);
        assert!(replays.enabled());
        // A failed capture stops replaying; setting the switch to what it is does not undo that.
        replays.failed = true;
        assert!(!replays.enabled());
        replays.set_enabled(true);
        assert!(!replays.enabled(), "setting the switch again is a no-op");
        replays.set_enabled(false);
        replays.set_enabled(true);
        assert!(replays.enabled(), "off and on again forgets the failure");
        // Off forgets the remembered calls.
        replays.remember(7, 1);
        replays.set_enabled(false);
        assert!(replays.calls.is_empty());
    }
}
