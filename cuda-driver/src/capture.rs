//! Stream capture: beginning and ending it (plainly, as a scope that ends
//! on drop, or around a closure), the kernels a capture keeps loaded for
//! its graph, and the frees that destructors defer while a capture is
//! active.
//!
//! While a stream captures, the driver forbids calls that synchronise or
//! free memory (`cuCtxSynchronize`, `cuMemFree`, ... in global and
//! thread-local modes); making one invalidates the capture. So while any
//! capture this crate began is active, the destructors of device and pinned
//! host memory (and of virtual memory, IPC mappings, arrays, texture and
//! surface objects) do not free: they hand their release to a process-wide list,
//! which the end of the last active capture runs (waiting for the work that
//! may use the memory, then freeing it; stream-ordered memory is freed in
//! its stream's order, which returns it to its pool). Captures begun on a raw handle
//! (`Stream::as_raw`) are not known here.
//!
//! Conditional nodes join a capture as cuda.core's graph builder adds them: a condition made
//! for the capture's graph ([`Stream::capture_condition`]), a conditional node appended after the
//! capture's current dependencies ([`Stream::capture_conditional`], which makes it the one
//! dependency of what is captured next), and its bodies captured from other streams
//! ([`Stream::begin_capture_into`], [`Stream::end_capture_into`]). The capture that holds a
//! body refuses to end while the body is being captured (its graph owns the body); dropped
//! meanwhile, it is left going rather than destroying the body under the other capture.

use std::ffi::c_void;
use std::marker::PhantomData;
use std::mem::{self, ManuallyDrop};
use std::ptr;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard};

use cuda_sys::driver::{
    CUdeviceptr, CUgraph, CUgraphEdgeData, CUgraphNode, CUgraphNodeParams, CUgraphNodeType, CUresult, CUstream,
    CUstreamCaptureStatus, CUDA_CONDITIONAL_NODE_PARAMS,
};

use crate::context::synchronize_current;
use crate::error::{check, check_resolved, Result};
use crate::{CaptureMode, ConditionHandle, ConditionalKind, Context, Function, Graph, MemPool, Stream, StreamTracker};

/// Captures this crate began, on any stream of any context, and has not ended.
static ACTIVE_CAPTURES: AtomicUsize = AtomicUsize::new(0);

/// Frees deferred while a capture was active. Its lock also orders every
/// change of [`ACTIVE_CAPTURES`], so nothing is added after the list was run.
static DEFERRED: Mutex<Vec<DeferredFree>> = Mutex::new(Vec::new());

fn deferred() -> MutexGuard<'static, Vec<DeferredFree>> {
    DEFERRED.lock().unwrap_or_else(|e| e.into_inner())
}

fn capture_started() {
    let _order = deferred();
    ACTIVE_CAPTURES.fetch_add(1, Ordering::Relaxed);
}

/// Counts a capture as ended; the last one runs the deferred frees, holding
/// the list's lock so that no capture begins while they wait and free
/// (which would invalidate it, or record a free into it).
fn capture_ended() {
    let mut list = deferred();
    if ACTIVE_CAPTURES.fetch_sub(1, Ordering::Relaxed) == 1 {
        for free in mem::take(&mut *list) {
            free.run();
        }
    }
}

/// Whether a capture this crate began is active (one relaxed load).
#[inline]
pub(crate) fn capture_active() -> bool {
    ACTIVE_CAPTURES.load(Ordering::Relaxed) != 0
}

/// Keeps `free` until the active captures end, or runs it now if they
/// already have.
pub(crate) fn defer_free(free: DeferredFree) {
    let mut list = deferred();
    if ACTIVE_CAPTURES.load(Ordering::Relaxed) != 0 {
        list.push(free);
        return;
    }
    drop(list);
    free.run();
}

/// For destructors whose release the driver forbids during a capture: runs
/// `release` now, after waiting for the context's work if `used` (a stream
/// used the object), or, while a capture is active, hands both to the list
/// that the end of the last capture runs. `what` names the release in errors.
pub(crate) fn release_when_safe(
    context: &Context,
    what: &str,
    used: bool,
    release: impl FnOnce(&'static cuda_sys::Driver, &Context) + Send + 'static,
) {
    if capture_active() {
        defer_free(DeferredFree {
            context: context.clone(),
            memory: DeferredMemory::Release(Box::new(release)),
            wait_for: if used { vec![context.clone()] } else { Vec::new() },
            uses: None,
            pool: None,
        });
        return;
    }
    let Some(driver) = context.bind_for_drop(what) else {
        return;
    };
    if used {
        // Waiting here means no queued work still uses the object.
        context.record_drop_result(&format!("cuCtxSynchronize before {what}"), synchronize_current(driver));
    }
    release(driver, context);
}

/// Memory a destructor could not free during a capture.
pub(crate) enum DeferredMemory {
    /// Device memory from `cuMemAlloc`.
    Device(CUdeviceptr),
    /// Stream-ordered device memory, freed in the order of the stream it
    /// was allocated on (`cuMemFreeAsync`), which returns it to its pool.
    StreamOrdered(CUdeviceptr, Stream),
    /// Pinned host memory (`cuMemHostAlloc`).
    Host(*mut c_void),
    /// Any other release (virtual memory, IPC mappings, arrays, texture and
    /// surface objects), run with the context made current; it records its
    /// own failures on the context.
    Release(DeferredRelease),
}

/// A release a destructor could not run during a capture.
pub(crate) type DeferredRelease = Box<dyn FnOnce(&'static cuda_sys::Driver, &Context) + Send>;

/// A free deferred until the active captures end.
pub(crate) struct DeferredFree {
    /// The context the memory belongs to.
    pub(crate) context: Context,
    /// What to free.
    pub(crate) memory: DeferredMemory,
    /// Contexts whose queued work may still use the memory: waited for first.
    pub(crate) wait_for: Vec<Context>,
    /// The streams that used device memory: the free is ordered after their uses first.
    pub(crate) uses: Option<StreamTracker>,
    /// Keeps the pool of a stream-ordered allocation until its memory is freed.
    pub(crate) pool: Option<MemPool>,
}

// SAFETY: the pointer inside is only handed to the driver's free call, from
// whichever thread runs the list; the other fields are `Send`.
unsafe impl Send for DeferredFree {}

impl DeferredFree {
    /// Waits for the contexts that may use the memory, then frees it (in
    /// its stream's order, for stream-ordered memory). Failures are recorded
    /// on the contexts; every step is attempted.
    fn run(self) {
        let DeferredFree {
            context,
            memory,
            wait_for,
            uses,
            pool,
        } = self;
        if let Some(uses) = &uses {
            uses.prepare_free();
        }
        for waited in &wait_for {
            if let Some(driver) = waited.bind_for_drop("a deferred free") {
                waited.record_drop_result("cuCtxSynchronize before a deferred free", synchronize_current(driver));
            }
        }
        if let Some(driver) = context.bind_for_drop("a deferred free") {
            let result = match memory {
                // SAFETY: the destructor that deferred this owned the allocation and gave it up;
                // the work that may use it was waited for above.
                DeferredMemory::Device(ptr) => driver.cuMemFree_v2().map(|free| unsafe { free(ptr) }),
                // SAFETY: as above; the free runs after all work queued on the allocation's stream
                // (no capture is active, so it is not recorded), which waits for other streams'
                // uses of the memory (above).
                DeferredMemory::StreamOrdered(ptr, stream) => {
                    driver.cuMemFreeAsync().map(|free| unsafe { free(ptr, stream.raw()) })
                }
                // SAFETY: as above, for pinned host memory from `cuMemHostAlloc`.
                DeferredMemory::Host(ptr) => driver.cuMemFreeHost().map(|free| unsafe { free(ptr) }),
                DeferredMemory::Release(release) => {
                    release(driver, &context);
                    Ok(CUresult::CUDA_SUCCESS)
                }
            };
            context.record_drop_result("a deferred free", check_resolved(result));
        }
        // A pool may be destroyed only after its memory is freed.
        drop(pool);
    }
}

/// A stream's capture state.
#[derive(Default)]
pub(crate) struct CaptureState {
    /// Set while a capture this crate began on the stream is active.
    active: AtomicBool,
    /// The kernels launched on the stream during the capture, one clone
    /// each, for the graph to keep their modules loaded. The lock also
    /// serialises beginning and ending.
    kernels: Mutex<Vec<Function>>,
    /// Captures into bodies of conditional nodes of this capture that are active
    /// ([`Stream::begin_capture_into`]): while any is, this capture does not end (its graph owns
    /// their graphs).
    bodies: AtomicUsize,
    /// For a capture into a conditional body: the stream whose capture holds the body, on whose
    /// `bodies` this capture is counted until it ends.
    origin: Mutex<Option<Stream>>,
    /// Set while the capture is into an existing graph (`cuStreamBeginCaptureToGraph`: a graph
    /// built node by node, or a conditional body), which its owner keeps: its end hands out no
    /// graph.
    into_graph: AtomicBool,
}

/// What ending a capture gave: the driver's result, the graph it returned (null if none), the
/// kernels kept for the graph, and whether the capture was into an existing graph (then the
/// graph is not the caller's to own).
pub(crate) struct Finished {
    pub(crate) result: Result<()>,
    pub(crate) raw: CUgraph,
    pub(crate) kernels: Vec<Function>,
    pub(crate) into_graph: bool,
}

impl Finished {
    /// Destroys the graph the driver returned if it is the caller's (the capture was not into an
    /// existing graph), with the kernels kept for it: for ends that hand out no graph.
    pub(crate) fn destroy_owned_graph(&mut self, context: &Context) {
        if !self.raw.is_null() && !self.into_graph {
            // SAFETY: the driver created the graph for the caller (the capture was not into an
            // existing graph), in the stream's context; nothing else holds it; destroyed at once.
            drop(unsafe { Graph::from_owned(self.raw, context.clone(), mem::take(&mut self.kernels)) });
            self.raw = ptr::null_mut();
        }
    }
}

impl CaptureState {
    fn kernels(&self) -> MutexGuard<'_, Vec<Function>> {
        self.kernels.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Whether a capture this crate began is active on the stream.
    #[inline]
    pub(crate) fn is_active(&self) -> bool {
        self.active.load(Ordering::Relaxed)
    }

    /// For a capture that ended, with the kernels it kept: if it was into a conditional body,
    /// hands them to the capture that holds the body (whose graph owns the body) and stops
    /// counting it there; else returns them.
    fn release_origin(&self, kernels: Vec<Function>) -> Vec<Function> {
        let origin = self.origin.lock().unwrap_or_else(|e| e.into_inner()).take();
        let Some(origin) = origin else {
            return kernels;
        };
        if !kernels.is_empty() {
            let mut kept = origin.inner.capture.kernels();
            for function in kernels {
                if !kept.iter().any(|k| k.raw() == function.raw()) {
                    kept.push(function);
                }
            }
        }
        origin.inner.capture.bodies.fetch_sub(1, Ordering::AcqRel);
        Vec::new()
    }

    #[cold]
    fn keep(&self, function: &Function) {
        let mut kernels = self.kernels();
        if !kernels.iter().any(|kept| kept.raw() == function.raw()) {
            kernels.push(function.clone());
        }
    }

    fn begin(&self, driver: &cuda_sys::Driver, stream: CUstream, mode: CaptureMode) -> Result<()> {
        let begin = driver.cuStreamBeginCapture_v2()?;
        // SAFETY: the stream is alive while its owner is.
        self.begin_with(false, || unsafe { begin(stream, mode.raw()) })
    }

    /// Counts a capture as begun around `start`, the driver call that begins it on the stream
    /// (`into_graph`: into an existing graph), and as ended again if that call fails.
    pub(crate) fn begin_with(&self, into_graph: bool, start: impl FnOnce() -> CUresult) -> Result<()> {
        let _serial = self.kernels();
        let newly = !self.active.swap(true, Ordering::Relaxed);
        if newly {
            capture_started();
        }
        let result = check(start());
        if result.is_err() && newly {
            self.active.store(false, Ordering::Relaxed);
            capture_ended();
        }
        if result.is_ok() {
            self.into_graph.store(into_graph, Ordering::Relaxed);
        }
        result
    }

    /// Ends the capture and returns its graph, which keeps the captured
    /// kernels. The capture counts as ended unless the driver says it goes on.
    fn end(&self, driver: &'static cuda_sys::Driver, stream: CUstream, context: &Context) -> Result<Graph<'static>> {
        let Finished {
            result,
            raw,
            kernels,
            into_graph,
        } = self.finish(driver, stream)?;
        if into_graph {
            // The graph captured into is its owner's (a body's kernels went to the capture that
            // holds it): nothing here to hand out.
            result?;
            return Err(crate::Error::InvalidValue(
                "the capture was into an existing graph or conditional body, which keeps what it recorded: it is ended by the call that began it (Stream::end_capture_into, GraphNodes::capture)".into(),
            ));
        }
        if raw.is_null() {
            result?;
            return Err(crate::Error::InvalidValue("stream capture produced no graph".into()));
        }
        // SAFETY: the driver created `raw` for the caller, in the stream's context.
        let graph = unsafe { Graph::from_owned(raw, context.clone(), kernels) };
        result.map(|()| graph)
    }

    /// Ends the capture (`cuStreamEndCapture`): its result, the graph the driver returned
    /// (null if none) and the kernels kept for it. The capture counts as ended unless the
    /// driver says it goes on.
    pub(crate) fn finish(&self, driver: &'static cuda_sys::Driver, stream: CUstream) -> Result<Finished> {
        let end = driver.cuStreamEndCapture()?;
        let mut kernels = self.kernels();
        if self.bodies.load(Ordering::Acquire) != 0 {
            return Err(crate::Error::InvalidValue(
                "a capture into a conditional body of this capture is still active: end it first".into(),
            ));
        }
        let mut raw = ptr::null_mut();
        // SAFETY: `raw` is a valid out-pointer; the stream is alive while its owner is.
        let result = check(unsafe { end(stream, &mut raw) });
        if result.is_ok() || !still_capturing(driver, stream) {
            let kept = mem::take(&mut *kernels);
            let was_active = self.active.swap(false, Ordering::Relaxed);
            let into_graph = self.into_graph.swap(false, Ordering::Relaxed);
            drop(kernels);
            let kernels = self.release_origin(kept);
            if was_active {
                capture_ended();
            }
            return Ok(Finished {
                result,
                raw,
                kernels,
                into_graph,
            });
        }
        Ok(Finished {
            result,
            raw,
            kernels: Vec::new(),
            into_graph: self.into_graph.load(Ordering::Relaxed),
        })
    }

    /// Ends the capture and discards its graph, for error paths and drops.
    /// Failures are recorded on `context`, except that the capture was
    /// invalidated (what leaving it early often causes).
    fn abandon(&self, driver: &'static cuda_sys::Driver, stream: CUstream, context: &Context) {
        let result = match self.finish(driver, stream) {
            Ok(mut finished) => {
                finished.destroy_owned_graph(context);
                finished.result
            }
            // A body of this capture still captures: the capture (and its graph) is left going,
            // leaked, rather than destroyed under it.
            Err(crate::Error::InvalidValue(_)) if self.bodies.load(Ordering::Acquire) != 0 => Ok(()),
            Err(error) => Err(error),
        };
        match result {
            Ok(()) => {}
            Err(error) if error.code() == Some(CUresult::CUDA_ERROR_STREAM_CAPTURE_INVALIDATED) => {}
            Err(error) => context.record_drop_error("ending an abandoned stream capture", error),
        }
    }

    /// For a stream being destroyed: ends its capture, if one is active,
    /// and counts it as ended whatever the driver says.
    pub(crate) fn end_for_drop(&self, stream: CUstream, context: &Context) {
        if !self.is_active() {
            return;
        }
        if let Some(driver) = context.bind_for_drop("ending the capture of a dropped stream") {
            self.abandon(driver, stream, context);
        }
        let kept = mem::take(&mut *self.kernels());
        drop(self.release_origin(kept));
        self.into_graph.store(false, Ordering::Relaxed);
        if self.active.swap(false, Ordering::Relaxed) {
            capture_ended();
        }
    }
}

/// Whether the driver says `stream` still captures; `false` if it cannot say.
fn still_capturing(driver: &cuda_sys::Driver, stream: CUstream) -> bool {
    let mut status = CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE;
    let Ok(is_capturing) = driver.cuStreamIsCapturing() else {
        return false;
    };
    // SAFETY: `status` is a valid out-pointer; the stream is alive while its owner is.
    let result = unsafe { is_capturing(stream, &mut status) };
    result == CUresult::CUDA_SUCCESS && status != CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE
}

impl Stream {
    /// Starts capturing the work queued on this stream into a graph instead
    /// of running it. End with [`Stream::end_capture`] on every path, or use
    /// [`Stream::capture`] or [`Stream::capture_scope`], which end it for you.
    ///
    /// While a capture is active, device and pinned host memory dropped
    /// anywhere in the process is freed only when the capture ends (freeing
    /// would invalidate it), and kernels launched on this stream are kept
    /// loaded by the graph.
    pub fn begin_capture(&self, mode: CaptureMode) -> Result<()> {
        let driver = self.context().bind()?;
        self.inner.capture.begin(driver, self.raw(), mode)
    }

    /// Ends the capture started by [`Stream::begin_capture`] and returns the
    /// captured graph, which keeps the modules of the captured kernels
    /// loaded. Memory dropped during the capture is freed now (once no other
    /// capture is active).
    pub fn end_capture(&self) -> Result<Graph<'static>> {
        let driver = self.context().bind()?;
        self.inner.capture.end(driver, self.raw(), self.context())
    }

    /// Captures the work `record` queues on this stream into a graph. The
    /// capture is ended on every path: if `record` fails (or panics), the
    /// partial graph is destroyed and its error returned.
    ///
    /// ```no_run
    /// # use cuda_driver::{CaptureMode, DeviceBuffer, Function, LaunchConfig, Stream};
    /// # fn example(stream: &Stream, fill: &Function, data: &mut DeviceBuffer<f32>) -> cuda_driver::Result<()> {
    /// let graph = stream.capture(CaptureMode::ThreadLocal, |stream| {
    ///     // SAFETY: `fill` writes 1024 floats of `data`, which holds 1024.
    ///     unsafe { stream.launch(fill, &LaunchConfig::for_num_elems(1024), (&mut *data, 1.0f32, 1024u32)) }
    /// })?;
    /// let exec = graph.instantiate()?;
    /// // SAFETY: `data`, the only memory the graph uses, outlives the replay.
    /// unsafe { exec.launch(stream)? };
    /// # Ok(())
    /// # }
    /// ```
    pub fn capture(&self, mode: CaptureMode, record: impl FnOnce(&Stream) -> Result<()>) -> Result<Graph<'static>> {
        let scope = self.capture_scope(mode)?;
        record(self)?;
        scope.end()
    }

    /// Begins a capture that ends when the returned scope is dropped, which
    /// destroys the partial graph: leaving the capture region early (`?`, a
    /// panic) leaks nothing. [`CaptureScope::end`] ends it and returns the graph.
    pub fn capture_scope(&self, mode: CaptureMode) -> Result<CaptureScope<'_>> {
        self.begin_capture(mode)?;
        Ok(CaptureScope {
            stream: self,
            _same_thread: PhantomData,
        })
    }

    /// Whether the stream is capturing, as the driver reports it.
    pub fn is_capturing(&self) -> Result<bool> {
        let driver = self.context().bind()?;
        let mut status = CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE;
        // SAFETY: `status` is a valid out-pointer; the stream is alive.
        check(unsafe { driver.cuStreamIsCapturing()?(self.raw(), &mut status) })?;
        Ok(status != CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE)
    }

    /// Whether the stream is capturing, asking the driver only while a capture this crate began
    /// is active somewhere in the process (one atomic load otherwise): what an allocator checks
    /// on every allocation. A stream that joined such a capture (by waiting on an event of a
    /// capturing stream) is seen; a capture begun through a raw handle while none begun here
    /// is active is not.
    #[inline]
    pub fn in_capture(&self) -> Result<bool> {
        if !capture_active() {
            return Ok(false);
        }
        self.is_capturing()
    }

    /// The stream's capture state.
    pub(crate) fn capture_state(&self) -> &CaptureState {
        &self.inner.capture
    }

    /// Before a launch of `function` on this stream: while a capture is
    /// active, keeps a clone of it for the graph. One relaxed load otherwise.
    #[inline]
    pub(crate) fn keep_if_capturing(&self, function: &Function) {
        if self.inner.capture.is_active() {
            self.inner.capture.keep(function);
        }
    }
}

/// A capture begun by [`Stream::capture_scope`]. Dropping it ends the
/// capture and destroys what was recorded (errors go to the context, see
/// [`Context::check_deferred`]); [`CaptureScope::end`] returns the graph
/// instead. Not `Send`: global and thread-local captures end on the thread
/// that began them.
#[must_use = "dropping the scope ends the capture and discards its graph"]
pub struct CaptureScope<'a> {
    stream: &'a Stream,
    _same_thread: PhantomData<*const ()>,
}

impl<'a> CaptureScope<'a> {
    /// The capturing stream.
    pub fn stream(&self) -> &'a Stream {
        self.stream
    }

    /// Ends the capture and returns the graph (see [`Stream::end_capture`]).
    pub fn end(self) -> Result<Graph<'static>> {
        match self.stream.context().bind() {
            Ok(driver) => {
                let scope = ManuallyDrop::new(self);
                let stream = scope.stream;
                stream.inner.capture.end(driver, stream.raw(), stream.context())
            }
            // Dropping the scope still ends the capture.
            Err(error) => Err(error),
        }
    }
}

impl Drop for CaptureScope<'_> {
    fn drop(&mut self) {
        let context = self.stream.context();
        if let Some(driver) = context.bind_for_drop("ending an abandoned stream capture") {
            self.stream.inner.capture.abandon(driver, self.stream.raw(), context);
        }
    }
}

impl std::fmt::Debug for CaptureScope<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CaptureScope").field("stream", self.stream).finish()
    }
}

/// Identities of conditions made for captures: the capture's id with the top bit set, apart from
/// the identities of built graphs and bodies (counted up from 1).
const CAPTURE_IDENTITY: u64 = 1 << 63;

/// A body of a conditional node appended to a capture ([`Stream::capture_conditional`]): a graph
/// owned by its node, and so by the graph being captured, to capture into with
/// [`Stream::begin_capture_into`].
#[derive(Debug)]
pub struct CaptureBody {
    raw: CUgraph,
    context: Context,
    /// The stream whose capture holds the conditional node, and that capture's identity: the
    /// body lives while that capture is active.
    origin: Stream,
    identity: u64,
}

// SAFETY: the handle is only passed back to the driver, which makes its context current first.
unsafe impl Send for CaptureBody {}
// SAFETY: as above; nothing here mutates through a shared reference.
unsafe impl Sync for CaptureBody {}

/// What `cuStreamGetCaptureInfo` says of an active capture: its identity (as conditions carry
/// it), its graph, and the nodes that work captured next depends on, with their edge data.
struct ActiveCapture {
    identity: u64,
    graph: CUgraph,
    dependencies: Vec<CUgraphNode>,
    edges: Option<Vec<CUgraphEdgeData>>,
}

impl Stream {
    /// The stream's active capture, or [`crate::Error::InvalidValue`] naming `call` if it has none.
    fn active_capture(&self, call: &str) -> Result<ActiveCapture> {
        let driver = self.context().bind()?;
        let mut status = CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE;
        let (mut id, mut graph, mut count) = (0, ptr::null_mut(), 0);
        let (mut dependencies, mut edges): (*const CUgraphNode, *const CUgraphEdgeData) = (ptr::null(), ptr::null());
        // SAFETY: every out-pointer is valid; the stream is alive.
        check(unsafe {
            driver.cuStreamGetCaptureInfo_v3()?(
                self.raw(),
                &mut status,
                &mut id,
                &mut graph,
                &mut dependencies,
                &mut edges,
                &mut count,
            )
        })?;
        if status != CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_ACTIVE || graph.is_null() {
            return Err(crate::Error::InvalidValue(format!(
                "{call} needs a stream that is capturing, and this one is not (or its capture was invalidated)"
            )));
        }
        // SAFETY: the driver returned `count` dependencies (and as many edges, unless null), valid
        // until the next call on the stream; they are copied before any.
        let (dependencies, edges) = unsafe {
            let dependencies = if count == 0 || dependencies.is_null() {
                Vec::new()
            } else {
                std::slice::from_raw_parts(dependencies, count).to_vec()
            };
            let edges = (!edges.is_null() && count != 0).then(|| std::slice::from_raw_parts(edges, count).to_vec());
            (dependencies, edges)
        };
        Ok(ActiveCapture {
            identity: id | CAPTURE_IDENTITY,
            graph,
            dependencies,
            edges,
        })
    }

    /// The identity of the capture this stream takes part in (the one the driver gives the
    /// capture sequence, shared by streams forked into it), or `None` if it is not capturing or
    /// its capture was invalidated.
    pub fn capture_id(&self) -> Result<Option<u64>> {
        if !self.is_capturing()? {
            return Ok(None);
        }
        match self.active_capture("capture_id") {
            Ok(capture) => Ok(Some(capture.identity & !CAPTURE_IDENTITY)),
            Err(crate::Error::InvalidValue(_)) => Ok(None),
            Err(error) => Err(error),
        }
    }

    /// A condition for conditional nodes of the graph this stream is capturing into
    /// (`cuGraphConditionalHandleCreate` on the capture's graph); `default` is set at the start
    /// of every launch when given. A kernel captured into the same graph sets it
    /// (`cudaGraphSetConditional`, with [`ConditionHandle::value`] as its argument).
    pub fn capture_condition(&self, default: Option<u32>) -> Result<ConditionHandle> {
        let capture = self.active_capture("capture_condition")?;
        let driver = self.context().bind()?;
        let flags = if default.is_some() {
            cuda_sys::driver::CU_GRAPH_COND_ASSIGN_DEFAULT
        } else {
            0
        };
        let mut raw = 0;
        // SAFETY: `raw` is a valid out-pointer; the capture's graph lives while it is active.
        check(unsafe {
            driver.cuGraphConditionalHandleCreate()?(
                &mut raw,
                capture.graph,
                self.context().raw(),
                default.unwrap_or(0),
                flags,
            )
        })?;
        Ok(ConditionHandle::new(raw, capture.identity))
    }

    /// Appends a conditional node on `handle` to this stream's capture, after the work captured
    /// so far, and makes it what the stream's next work depends on (`cuGraphAddNode`, then
    /// `cuStreamUpdateCaptureDependencies`); returns its bodies, one for [`ConditionalKind::If`]
    /// and [`ConditionalKind::While`], two for [`ConditionalKind::IfElse`], `n` for
    /// [`ConditionalKind::Switch`]. A condition made for another graph or capture is
    /// [`crate::Error::WrongGraph`].
    ///
    /// The stream must be the one that began the capture ([`Stream::begin_capture`] and the
    /// calls over it, or [`Stream::begin_capture_into`]), not one that joined it (by waiting on
    /// an event of a capturing stream): only the former refuses to end while a body of it is
    /// captured, so a body appended from a joined stream could be destroyed under its capture
    /// ([`crate::Error::InvalidValue`]).
    pub fn capture_conditional(&self, handle: &ConditionHandle, kind: ConditionalKind) -> Result<Vec<CaptureBody>> {
        if !self.inner.capture.is_active() {
            return Err(crate::Error::InvalidValue(
                "capture_conditional needs the stream that began the capture (a stream that joined another's \
                 capture cannot hold conditional bodies)"
                    .into(),
            ));
        }
        let capture = self.active_capture("capture_conditional")?;
        if handle.graph() != capture.identity {
            return Err(crate::Error::WrongGraph {
                object: "condition handle",
            });
        }
        let (type_, size) = kind.raw();
        if size == 0 {
            return Err(crate::Error::InvalidValue(
                "a switch node needs at least one body".into(),
            ));
        }
        // SAFETY: `CUgraphNodeParams` is plain data (integers, pointers, unions of them): all
        // zeroes is a valid value, the one the driver asks reserved fields to hold.
        let mut params: CUgraphNodeParams = unsafe { mem::zeroed() };
        params.type_ = CUgraphNodeType::CU_GRAPH_NODE_TYPE_CONDITIONAL;
        params.__bindgen_anon_1.conditional = CUDA_CONDITIONAL_NODE_PARAMS {
            handle: handle.value(),
            type_,
            size,
            phGraph_out: ptr::null_mut(),
            ctx: self.context().raw(),
        };
        let driver = self.context().bind()?;
        let edges = capture.edges.as_ref().map_or(ptr::null(), |edges| edges.as_ptr());
        let mut node = ptr::null_mut();
        // SAFETY: `node` and `params` are valid; the capture's graph and its dependencies are
        // alive while the capture is; the handle was made for this graph (checked above).
        check(unsafe {
            driver.cuGraphAddNode_v2()?(
                &mut node,
                capture.graph,
                capture.dependencies.as_ptr(),
                edges,
                capture.dependencies.len(),
                &mut params,
            )
        })?;
        // SAFETY: on success the driver set `phGraph_out` to its array of `size` bodies, owned by
        // the node; they are copied now.
        let bodies: Vec<CUgraph> = unsafe {
            let out = params.__bindgen_anon_1.conditional.phGraph_out;
            if out.is_null() {
                return Err(crate::Error::InvalidValue(
                    "the driver returned no conditional bodies".into(),
                ));
            }
            std::slice::from_raw_parts(out, size as usize).to_vec()
        };
        let mut after = [node];
        // SAFETY: one dependency, a node of the capture's graph; no edge data.
        check(unsafe {
            driver.cuStreamUpdateCaptureDependencies_v2()?(
                self.raw(),
                after.as_mut_ptr(),
                ptr::null(),
                1,
                cuda_sys::driver::CUstreamUpdateCaptureDependencies_flags::CU_STREAM_SET_CAPTURE_DEPENDENCIES.0,
            )
        })?;
        Ok(bodies
            .into_iter()
            .map(|raw| CaptureBody {
                raw,
                context: self.context().clone(),
                origin: self.clone(),
                identity: capture.identity,
            })
            .collect())
    }

    /// Begins capturing this stream's work into `body` (`cuStreamBeginCaptureToGraph`); end it
    /// with [`Stream::end_capture_into`]. Like every capture this crate begins, it defers frees
    /// and keeps the launched kernels until its end. The capture that made `body` must still be
    /// active (else [`crate::Error::InvalidValue`]), and it cannot end until this one has: its
    /// end is refused meanwhile, since its graph owns the body.
    pub fn begin_capture_into(&self, body: &CaptureBody, mode: CaptureMode) -> Result<()> {
        body.context.expect_same(self.context(), "stream", "conditional body")?;
        if *self == body.origin {
            return Err(crate::Error::InvalidValue(
                "a conditional body is captured from another stream than the one whose capture holds it".into(),
            ));
        }
        let driver = self.context().bind()?;
        let begin = driver.cuStreamBeginCaptureToGraph()?;
        let origin = &body.origin.inner.capture;
        // Held until this capture is counted on the origin: its end waits for the lock.
        let _origin_serial = origin.kernels();
        let holding = match body.origin.active_capture("begin_capture_into") {
            Ok(capture) => Some(capture.identity),
            // Not capturing (or invalidated): ended, as far as the body is concerned.
            Err(crate::Error::InvalidValue(_)) => None,
            Err(error) => return Err(error),
        };
        if holding != Some(body.identity) {
            return Err(crate::Error::InvalidValue(
                "the capture that holds this conditional body has ended".into(),
            ));
        }
        let (stream, graph) = (self.raw(), body.raw);
        let mut counted = self.inner.capture.origin.lock().unwrap_or_else(|e| e.into_inner());
        if counted.is_some() || self.inner.capture.is_active() {
            return Err(crate::Error::InvalidValue("the stream is capturing already".into()));
        }
        // Counted before the capture begins, so that no end of it can miss the count.
        origin.bodies.fetch_add(1, Ordering::AcqRel);
        *counted = Some(body.origin.clone());
        drop(counted);
        // SAFETY: the stream is alive; the body is alive, owned by the graph of the origin's
        // capture, which is active (checked above, under its lock) and cannot end while this
        // capture is counted on it; no dependencies.
        let begun = self.inner.capture.begin_with(true, || unsafe {
            begin(stream, graph, ptr::null(), ptr::null(), 0, mode.raw())
        });
        if begun.is_err() {
            drop(self.inner.capture.release_origin(Vec::new()));
        }
        begun
    }

    /// Ends the capture into `body` begun by [`Stream::begin_capture_into`]. The kernels it
    /// launched are kept loaded by the capture that holds the body, and so by its graph.
    /// A stream whose capture is not one begun into `body` by [`Stream::begin_capture_into`] is
    /// [`crate::Error::InvalidValue`], and its capture goes on.
    pub fn end_capture_into(&self, body: &CaptureBody) -> Result<()> {
        let driver = self.context().bind()?;
        let not_into_body = || {
            crate::Error::InvalidValue(
                "the stream's capture is not into this conditional body (begin it with begin_capture_into)".into(),
            )
        };
        if self
            .inner
            .capture
            .origin
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_ref()
            != Some(&body.origin)
        {
            return Err(not_into_body());
        }
        // Another body of the same capture is told apart by the capture's graph when the driver
        // gives it; an invalidated capture (or a failed query) is ended all the same.
        if self
            .active_capture("end_capture_into")
            .is_ok_and(|capture| capture.graph != body.raw)
        {
            return Err(not_into_body());
        }
        let mut finished = self.inner.capture.finish(driver, self.raw())?;
        finished.destroy_owned_graph(self.context());
        finished.result?;
        if !finished.into_graph || finished.raw != body.raw {
            return Err(crate::Error::InvalidValue(
                "the capture ended in another graph than the conditional body".into(),
            ));
        }
        Ok(())
    }
}
