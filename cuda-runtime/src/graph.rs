//! CUDA graphs recorded by stream capture, instantiated and replayed.

use cuda_sys::runtime::{cudaGraphExec_t, cudaGraph_t, cudaStreamCaptureMode, cudaStreamCaptureStatus};

use crate::device::make_current;
use crate::error::check;
use crate::{runtime, Device, Result, Stream};

/// Which other threads' calls a capture forbids (`cudaStreamCaptureMode`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CaptureMode {
    /// Unsafe calls (legacy-stream work, synchronous allocation, ...) from any
    /// thread are errors while the capture runs.
    Global,
    /// Only this thread's unsafe calls are errors.
    ThreadLocal,
    /// Nothing is forbidden.
    Relaxed,
}

impl CaptureMode {
    fn raw(self) -> cudaStreamCaptureMode {
        match self {
            CaptureMode::Global => cudaStreamCaptureMode::cudaStreamCaptureModeGlobal,
            CaptureMode::ThreadLocal => cudaStreamCaptureMode::cudaStreamCaptureModeThreadLocal,
            CaptureMode::Relaxed => cudaStreamCaptureMode::cudaStreamCaptureModeRelaxed,
        }
    }
}

impl Stream {
    /// Starts recording the work queued on this stream into a graph instead
    /// of running it (`cudaStreamBeginCapture`); [`Stream::end_capture`]
    /// returns the graph.
    ///
    /// # Safety
    /// Until the capture ends nothing queued here runs: blocking reads of
    /// memory ordered on this stream fail, and stream-ordered allocations made
    /// on it belong to the graph: they must not be used outside it, and must
    /// not be dropped before the graph has been launched.
    pub unsafe fn begin_capture(&self, mode: CaptureMode) -> Result<()> {
        let runtime = self.enter()?;
        // SAFETY: the stream is valid while `self` lives; the caller accepts the capture's rules.
        check(runtime, unsafe {
            runtime.cudaStreamBeginCapture()?(self.raw(), mode.raw())
        })
    }

    /// Ends a capture begun on this stream and returns the recorded graph
    /// (`cudaStreamEndCapture`). An invalidated capture is an error.
    pub fn end_capture(&self) -> Result<Graph> {
        let runtime = self.enter()?;
        let mut raw: cudaGraph_t = std::ptr::null_mut();
        // SAFETY: the stream is valid; `raw` is a valid out-pointer.
        check(runtime, unsafe {
            runtime.cudaStreamEndCapture()?(self.raw(), &mut raw)
        })?;
        Ok(Graph {
            raw,
            device: self.device(),
        })
    }

    /// `true` while a capture is active on this stream (`cudaStreamIsCapturing`).
    pub fn is_capturing(&self) -> Result<bool> {
        let runtime = self.enter()?;
        let mut status = cudaStreamCaptureStatus::cudaStreamCaptureStatusNone;
        // SAFETY: the stream is valid; `status` is a valid out-pointer.
        check(runtime, unsafe {
            runtime.cudaStreamIsCapturing()?(self.raw(), &mut status)
        })?;
        Ok(status == cudaStreamCaptureStatus::cudaStreamCaptureStatusActive)
    }
}

/// A recorded graph (`cudaGraph_t`), destroyed on drop. Not `Sync`: the
/// runtime does not synchronise concurrent use of one graph.
#[derive(Debug)]
pub struct Graph {
    raw: cudaGraph_t,
    device: Device,
}

// SAFETY: a graph may be used from any one thread at a time.
unsafe impl Send for Graph {}

impl Graph {
    /// The device the graph was captured on.
    pub fn device(&self) -> Device {
        self.device
    }

    /// Number of nodes (`cudaGraphGetNodes`).
    pub fn node_count(&self) -> Result<usize> {
        let runtime = runtime()?;
        let mut count = 0usize;
        // SAFETY: a null node array asks only for the count, written to a valid local.
        check(runtime, unsafe {
            runtime.cudaGraphGetNodes()?(self.raw, std::ptr::null_mut(), &mut count)
        })?;
        Ok(count)
    }

    /// An executable form of the graph (`cudaGraphInstantiate`).
    pub fn instantiate(&self) -> Result<GraphExec> {
        let runtime = runtime()?;
        make_current(runtime, self.device.raw_ordinal())?;
        let mut raw: cudaGraphExec_t = std::ptr::null_mut();
        // SAFETY: the graph is valid while `self` lives; `raw` is a valid out-pointer; flags 0.
        check(runtime, unsafe {
            runtime.cudaGraphInstantiate()?(&mut raw, self.raw, 0)
        })?;
        Ok(GraphExec {
            raw,
            device: self.device,
        })
    }
}

impl Drop for Graph {
    fn drop(&mut self) {
        let Ok(runtime) = runtime() else { return };
        if let Ok(destroy) = runtime.cudaGraphDestroy() {
            // SAFETY: we own the graph; executable graphs made from it are
            // independent of it. An error cannot be reported from `drop`.
            let _ = unsafe { destroy(self.raw) };
        }
    }
}

/// An instantiated graph (`cudaGraphExec_t`), destroyed on drop. Not
/// `Sync`: the runtime does not synchronise concurrent use of one.
#[derive(Debug)]
pub struct GraphExec {
    raw: cudaGraphExec_t,
    device: Device,
}

// SAFETY: an executable graph may be used from any one thread at a time.
unsafe impl Send for GraphExec {}

impl GraphExec {
    /// Queues one run of the graph on `stream` (`cudaGraphLaunch`).
    ///
    /// # Safety
    /// The graph replays the captured work with the captured arguments: every
    /// buffer it touches must be alive (and not otherwise in use) until
    /// `stream` has finished this run.
    pub unsafe fn launch(&self, stream: &Stream) -> Result<()> {
        stream.expect_device("graph", self.device)?;
        let runtime = stream.enter()?;
        // SAFETY: both handles are valid; the caller keeps the graph's buffers alive.
        check(runtime, unsafe { runtime.cudaGraphLaunch()?(self.raw, stream.raw()) })
    }

    /// Uploads the graph's work to the device ahead of its first launch (`cudaGraphUpload`).
    pub fn upload(&self, stream: &Stream) -> Result<()> {
        stream.expect_device("graph", self.device)?;
        let runtime = stream.enter()?;
        // SAFETY: both handles are valid; uploading runs no captured work.
        check(runtime, unsafe { runtime.cudaGraphUpload()?(self.raw, stream.raw()) })
    }
}

impl Drop for GraphExec {
    fn drop(&mut self) {
        let Ok(runtime) = runtime() else { return };
        if let Ok(destroy) = runtime.cudaGraphExecDestroy() {
            // SAFETY: we own it; runs already queued complete first. An error
            // cannot be reported from `drop`.
            let _ = unsafe { destroy(self.raw) };
        }
    }
}
