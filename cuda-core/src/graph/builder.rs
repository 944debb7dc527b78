//! [`GraphBuilder`]: cuda.core's graph builder, over stream capture, and [`Graph`], the
//! executable graph it completes into.

use std::marker::PhantomData;
use std::sync::{Arc, Mutex, PoisonError};

use cuda_driver::{
    CaptureBody, CaptureMode, ConditionHandle, ConditionalKind, Event, EventFlags, Function, GraphExec,
    GraphInstantiateFlags, KernelArgs, LaunchConfig, Stream, StreamFlags,
};

use crate::error::{Error, Result};
use crate::kernel::Kernel;

/// Where a builder's work goes.
enum Role {
    /// The builder a capture begins on: its capture makes the graph.
    Root,
    /// A side stream forked from a building builder, in the same capture until joined.
    Fork {
        /// The stream it joins back into when dropped unjoined.
        parent: Stream,
        joined: bool,
    },
    /// A body of a conditional node, captured from its own stream into the body's graph (the
    /// driver layer refuses to end the capture that holds it meanwhile).
    Body(CaptureBody),
}

/// Where a root or body builder is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    Idle,
    Building,
    Ended,
}

/// The kernels launched into the builders of one graph, kept loaded as long as the graph.
type Kept = Arc<Mutex<Vec<Function>>>;

/// Whether two functions are one (the same driver handle).
fn same_function(a: &Function, b: &Function) -> bool {
    // SAFETY: the handles are only compared, never used.
    unsafe { a.as_raw() == b.as_raw() }
}

fn keep(kept: &Kept, function: &Function) {
    let mut kept = kept.lock().unwrap_or_else(PoisonError::into_inner);
    if !kept.iter().any(|k| same_function(k, function)) {
        kept.push(function.clone());
    }
}

/// A graph under construction by stream capture, as cuda.core's `GraphBuilder`: made from a
/// stream ([`GraphBuilder::new`], cuda.core's `Stream.create_graph_builder()`), begun and ended
/// ([`begin_building`](Self::begin_building) and [`end_building`](Self::end_building), or
/// [`build`](Self::build) around a closure), then completed into an executable [`Graph`].
///
/// While it builds, everything queued on its [`stream`](Self::stream) is recorded instead of
/// run: kernels launched through [`launch`](Self::launch), and array operations on arrays of
/// that stream (see [the module's docs](crate::graph) for what arrays may do in a capture).
/// [`fork`](Self::fork) gives builders on side streams that are part of the same capture, and
/// [`join`](Self::join) brings them back; [`if_`](Self::if_), [`if_else`](Self::if_else),
/// [`while_`](Self::while_) and [`switch`](Self::switch) append a conditional node and give a
/// builder per body, on a condition from [`create_condition`](Self::create_condition) that a
/// kernel of the graph sets on the device.
///
/// Builders of bodies and forks borrow the builder they came from, so it cannot end while they
/// live. Dropping a builder that still builds ends its capture and discards what it recorded; a
/// fork dropped without [`join`](Self::join) is joined into its parent.
///
/// ```no_run
/// use cuda_core::graph::{CaptureMode, GraphBuilder};
/// use cuda_core::{Device, DeviceArray};
///
/// # fn main() -> cuda_core::Result<()> {
/// let device = Device::new(0)?;
/// let stream = device.create_stream()?;
/// let x = DeviceArray::<f32>::zeros(&stream, [1024])?;
/// let mut y = DeviceArray::<f32>::zeros(&stream, [1024])?;
/// let mut builder = GraphBuilder::new(&stream);
/// builder.build(CaptureMode::ThreadLocal, |_| y.assign(&x * 2.0 + 1.0))?;
/// let graph = builder.complete()?;
/// // SAFETY: `x` and `y`, the memory the captured work uses, outlive the launch.
/// unsafe { graph.launch(&stream)? };
/// # Ok(())
/// # }
/// ```
pub struct GraphBuilder<'p> {
    stream: Stream,
    role: Role,
    state: State,
    kept: Kept,
    /// The captured graph, once a root builder ended.
    graph: Option<cuda_driver::Graph<'static>>,
    /// Generated kernels captured on a forked stream are kept only by the registry: it must not
    /// unload them while their capture, or the captured graph waiting to complete, lives.
    #[cfg(feature = "array")]
    _generated: crate::array::GeneratedKernelsPin,
    _parent: PhantomData<&'p ()>,
}

impl GraphBuilder<'static> {
    /// A builder that captures `stream`'s work (cuda.core's `Stream.create_graph_builder()`).
    /// Nothing is captured until [`begin_building`](Self::begin_building).
    pub fn new(stream: &Stream) -> GraphBuilder<'static> {
        GraphBuilder::with_role(stream.clone(), Role::Root, Kept::default())
    }
}

impl<'p> GraphBuilder<'p> {
    fn with_role(stream: Stream, role: Role, kept: Kept) -> GraphBuilder<'p> {
        let state = match role {
            Role::Fork { .. } => State::Building,
            _ => State::Idle,
        };
        GraphBuilder {
            stream,
            role,
            state,
            kept,
            graph: None,
            #[cfg(feature = "array")]
            _generated: crate::array::GeneratedKernelsPin::new(),
            _parent: PhantomData,
        }
    }

    /// The stream whose work the builder captures.
    pub fn stream(&self) -> &Stream {
        &self.stream
    }

    /// Whether the builder is capturing now (for a fork: whether its stream is in a capture).
    pub fn is_building(&self) -> Result<bool> {
        Ok(self.state == State::Building && self.stream.is_capturing()?)
    }

    /// Whether the builder was made by [`fork`](Self::fork) and must be joined (cuda.core's
    /// `is_join_required`).
    pub fn is_join_required(&self) -> bool {
        matches!(self.role, Role::Fork { joined: false, .. })
    }

    /// Begins capturing (`cuStreamBeginCapture`, or `cuStreamBeginCaptureToGraph` for a body).
    /// `mode` says which other calls the driver forbids meanwhile: [`CaptureMode::ThreadLocal`]
    /// those of this thread that could synchronise, [`CaptureMode::Global`] those of every
    /// thread, [`CaptureMode::Relaxed`] none. A builder begins once; a fork captures with its
    /// parent and is refused.
    pub fn begin_building(&mut self, mode: CaptureMode) -> Result<&mut Self> {
        if matches!(self.role, Role::Fork { .. }) {
            return Err(forks_do_not("begin"));
        }
        match self.state {
            State::Building => return Err(Error::InvalidValue("the graph builder is already building".into())),
            State::Ended => {
                return Err(Error::InvalidValue(
                    "the graph builder has ended building; a builder builds once".into(),
                ))
            }
            State::Idle => {}
        }
        match &self.role {
            Role::Fork { .. } => return Err(forks_do_not("begin")),
            Role::Root => self.stream.begin_capture(mode)?,
            Role::Body(body) => self.stream.begin_capture_into(body, mode)?,
        }
        self.state = State::Building;
        Ok(self)
    }

    /// Ends capturing (`cuStreamEndCapture`). A root builder then holds the graph, for
    /// [`complete`](Self::complete); a body's work is in its conditional node. Work forked and
    /// not joined makes the driver refuse the end (`CUDA_ERROR_STREAM_CAPTURE_UNJOINED`).
    pub fn end_building(&mut self) -> Result<&mut Self> {
        if matches!(self.role, Role::Fork { .. }) {
            return Err(forks_do_not("end"));
        }
        if self.state != State::Building {
            return Err(Error::InvalidValue("the graph builder is not building".into()));
        }
        let ended = match &self.role {
            Role::Fork { .. } => return Err(forks_do_not("end")),
            Role::Root => self.stream.end_capture().map(|graph| self.graph = Some(graph)),
            Role::Body(body) => self.stream.end_capture_into(body),
        };
        // A failed end may leave the capture going (the driver says so): then it still builds.
        if ended.is_ok() || !matches!(self.stream.is_capturing(), Ok(true)) {
            self.state = State::Ended;
        }
        ended?;
        Ok(self)
    }

    /// Begins building, runs `record` with the builder, and ends building on every path: an
    /// error of `record` (or of the end) is returned, and what was recorded is discarded.
    pub fn build(&mut self, mode: CaptureMode, record: impl FnOnce(&Self) -> Result<()>) -> Result<&mut Self> {
        self.begin_building(mode)?;
        let recorded = record(self);
        let ended = self.end_building().map(|_| ());
        if recorded.is_err() {
            // What a failed closure recorded is not a graph to complete.
            self.graph = None;
        }
        recorded?;
        ended?;
        Ok(self)
    }

    /// Launches `kernel` into the graph (recorded, not run), on the builder's stream; the graph
    /// keeps the kernel's module loaded. Checked as [`launch`](crate::launch) checks; a builder
    /// that is not building is refused.
    ///
    /// # Safety
    /// As for [`launch`](crate::launch), for every launch of the graph: the memory the arguments
    /// name must be alive (at the same addresses) whenever the graph runs.
    pub unsafe fn launch<A: KernelArgs>(&self, config: &LaunchConfig, kernel: &Kernel, args: A) -> Result<()> {
        self.expect_building("launch")?;
        keep(&self.kept, kernel.function());
        // SAFETY: the caller's obligations, passed on.
        unsafe { crate::launch(&self.stream, config, kernel, args) }
    }

    /// `count` builders on new side streams, each starting after the work captured so far here
    /// (an event recorded on this stream, waited for by theirs): their work runs concurrently
    /// with this builder's until [`join`](Self::join)ed (cuda.core's `split`, without the
    /// original in the result).
    pub fn fork(&self, count: usize) -> Result<Vec<GraphBuilder<'_>>> {
        self.expect_building("fork")?;
        if count == 0 {
            return Err(Error::InvalidValue("fork needs at least one builder".into()));
        }
        let event = Event::new(self.stream.context(), EventFlags::DISABLE_TIMING)?;
        event.record(&self.stream)?;
        let mut forks = Vec::with_capacity(count);
        for _ in 0..count {
            let stream = side_stream(&self.stream)?;
            stream.wait_event(&event)?;
            forks.push(GraphBuilder::with_role(
                stream,
                Role::Fork {
                    parent: self.stream.clone(),
                    joined: false,
                },
                self.kept.clone(),
            ));
        }
        Ok(forks)
    }

    /// Joins `forks` (builders of [`fork`](Self::fork)) into this builder: its next work starts
    /// after all of theirs (an event recorded on each fork's stream, waited for by this one).
    /// A builder that is not a fork is refused.
    pub fn join<'f>(&self, forks: impl IntoIterator<Item = GraphBuilder<'f>>) -> Result<()> {
        self.expect_building("join")?;
        for mut fork in forks {
            match &mut fork.role {
                Role::Fork { joined, .. } => {
                    join_into(&fork.stream, &self.stream)?;
                    *joined = true;
                }
                _ => {
                    return Err(Error::InvalidValue(
                        "join takes builders made by fork; this one was not".into(),
                    ))
                }
            }
        }
        Ok(())
    }

    /// A condition for conditional nodes of this builder's graph (cuda.core's
    /// `create_conditional_handle`): `default` is set at the start of every launch when given,
    /// else the value persists between launches. A kernel of the graph sets it on the device:
    /// it takes [`ConditionHandle::value`] as a `cudaGraphConditionalHandle` argument and calls
    /// `cudaGraphSetConditional` (declared by [`CONDITION_PRELUDE`](crate::graph::CONDITION_PRELUDE)).
    pub fn create_condition(&self, default: Option<u32>) -> Result<ConditionHandle> {
        self.expect_building("create_condition")?;
        Ok(self.stream.capture_condition(default)?)
    }

    /// Appends a node that runs its body once if `condition` is non-zero when reached, and
    /// returns the builder of the body (to begin, fill and end).
    pub fn if_(&self, condition: &ConditionHandle) -> Result<GraphBuilder<'_>> {
        Ok(self.conditional(condition, ConditionalKind::If)?.remove(0))
    }

    /// Appends an if/else node and returns the builders of its two bodies: the first runs if
    /// `condition` is non-zero, the second otherwise (CUDA 12.8 and later).
    pub fn if_else(&self, condition: &ConditionHandle) -> Result<(GraphBuilder<'_>, GraphBuilder<'_>)> {
        let mut bodies = self.conditional(condition, ConditionalKind::IfElse)?;
        let otherwise = bodies.pop();
        match (bodies.pop(), otherwise) {
            (Some(then), Some(otherwise)) => Ok((then, otherwise)),
            _ => Err(Error::InvalidValue(
                "the driver gave an if/else node fewer than two bodies".into(),
            )),
        }
    }

    /// Appends a loop whose body runs while `condition` is non-zero (checked before each run; a
    /// kernel of the body sets it for the next), and returns the body's builder.
    pub fn while_(&self, condition: &ConditionHandle) -> Result<GraphBuilder<'_>> {
        Ok(self.conditional(condition, ConditionalKind::While)?.remove(0))
    }

    /// Appends a switch of `count` bodies and returns their builders: body `i` runs if
    /// `condition` is `i`, none if it is `count` or more (CUDA 12.8 and later).
    pub fn switch(&self, condition: &ConditionHandle, count: u32) -> Result<Vec<GraphBuilder<'_>>> {
        self.conditional(condition, ConditionalKind::Switch(count))
    }

    fn conditional(&self, condition: &ConditionHandle, kind: ConditionalKind) -> Result<Vec<GraphBuilder<'_>>> {
        self.expect_building("a conditional node")?;
        let bodies = self.stream.capture_conditional(condition, kind)?;
        let mut builders = Vec::with_capacity(bodies.len());
        for body in bodies {
            builders.push(GraphBuilder::with_role(
                side_stream(&self.stream)?,
                Role::Body(body),
                self.kept.clone(),
            ));
        }
        Ok(builders)
    }

    /// The graph captured by a root builder that ended building, for inspection
    /// ([`to_dot`](cuda_driver::Graph::to_dot), [`node_count`](cuda_driver::Graph::node_count)).
    pub fn graph(&self) -> Result<&cuda_driver::Graph<'static>> {
        self.graph.as_ref().ok_or_else(|| {
            Error::InvalidValue("the graph builder holds no graph: it has not ended building, its building failed, or it is not a root builder".into())
        })
    }

    /// Instantiates the captured graph (cuda.core's `complete()`); see
    /// [`complete_with`](Self::complete_with).
    pub fn complete(&self) -> Result<Graph> {
        self.complete_with(GraphInstantiateFlags::empty())
    }

    /// Instantiates the captured graph with `flags`
    /// ([`GraphInstantiateFlags::AUTO_FREE_ON_LAUNCH`] lets a graph whose allocations outlive it
    /// be launched again, ...). The builder may complete again, or serve as the source of an
    /// [`update`](Graph::update).
    pub fn complete_with(&self, flags: GraphInstantiateFlags) -> Result<Graph> {
        let graph = self.graph()?;
        Ok(Graph {
            exec: graph.instantiate_with(flags)?,
            kept: self.kept_kernels(),
            #[cfg(feature = "array")]
            _generated: crate::array::GeneratedKernelsPin::new(),
        })
    }

    fn kept_kernels(&self) -> Vec<Function> {
        self.kept.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    fn expect_building(&self, call: &str) -> Result<()> {
        if self.state == State::Building {
            return Ok(());
        }
        Err(Error::InvalidValue(format!(
            "{call} needs a graph builder that is building (begin_building first)"
        )))
    }
}

fn forks_do_not(what: &str) -> Error {
    Error::InvalidValue(format!(
        "a forked graph builder does not {what} building: it captures with the builder it was forked from until joined"
    ))
}

/// A new stream of `stream`'s context for a fork or body: non-blocking, so that it never
/// synchronises with the legacy default stream (which a capture forbids).
fn side_stream(stream: &Stream) -> Result<Stream> {
    Ok(Stream::with_options(stream.context(), StreamFlags::NON_BLOCKING, 0)?)
}

/// Makes `into` wait for the work queued so far on `from`.
fn join_into(from: &Stream, into: &Stream) -> Result<()> {
    let event = Event::new(from.context(), EventFlags::DISABLE_TIMING)?;
    event.record(from)?;
    Ok(into.wait_event(&event)?)
}

impl Drop for GraphBuilder<'_> {
    fn drop(&mut self) {
        match (&self.role, self.state) {
            (Role::Fork { parent, joined: false }, _) => {
                if let Err(error) = join_into(&self.stream, parent) {
                    eprintln!("cuda-core: joining a dropped graph builder fork into its parent failed: {error}");
                }
            }
            (Role::Root, State::Building) => {
                // Ending discards what was recorded; an invalidated capture ends with an error,
                // and one that still holds a building body (a leaked body builder) is refused by
                // the driver layer and left going.
                let _ = self.stream.end_capture();
            }
            (Role::Body(body), State::Building) => {
                let _ = self.stream.end_capture_into(body);
            }
            _ => {}
        }
    }
}

impl std::fmt::Debug for GraphBuilder<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let role = match self.role {
            Role::Root => "root",
            Role::Fork { .. } => "fork",
            Role::Body(_) => "conditional body",
        };
        f.debug_struct("GraphBuilder")
            .field("stream", &self.stream)
            .field("role", &role)
            .field("state", &self.state)
            .finish()
    }
}

/// An executable graph from [`GraphBuilder::complete`] (cuda.core's `Graph`): uploaded ahead of
/// time, launched on streams of its context, updated in place from another builder's graph of
/// the same shape. It keeps the kernels launched into it loaded.
pub struct Graph {
    exec: GraphExec<'static>,
    kept: Vec<Function>,
    /// Generated kernels launched on forked streams are kept only by the registry: it must not
    /// unload them while this graph lives.
    #[cfg(feature = "array")]
    _generated: crate::array::GeneratedKernelsPin,
}

impl Graph {
    /// Uploads the graph to the device ahead of its first launch (`cuGraphUpload`).
    pub fn upload(&self, stream: &Stream) -> Result<()> {
        Ok(self.exec.upload(stream)?)
    }

    /// Launches the graph on `stream` (`cuGraphLaunch`); a stream of another context is
    /// [`cuda_driver::Error::WrongContext`].
    ///
    /// # Safety
    /// The captured work replays with the addresses it was captured with: every array and
    /// buffer it used that the graph did not allocate itself must still be alive, and stay so
    /// until this launch has run (the launch is not tracked by their stream ordering: on a
    /// stream other than the one their memory is ordered on, order their drop after it), and
    /// the kernels' device code must be correct for this run (see
    /// [`GraphExec::launch`](cuda_driver::GraphExec::launch)).
    pub unsafe fn launch(&self, stream: &Stream) -> Result<()> {
        // SAFETY: the caller's obligations, passed on; the kernels launched into the builder are
        // kept loaded by `self.kept`, the rest by the driver's graph.
        Ok(unsafe { self.exec.launch(stream) }?)
    }

    /// Updates this graph in place from `builder`'s (`cuGraphExecUpdate`): same nodes and
    /// edges, other parameters (addresses, scalars). A change the driver refuses is
    /// [`cuda_driver::Error::GraphUpdate`], naming what changed. The graph then also keeps
    /// `builder`'s kernels.
    pub fn update(&mut self, builder: &GraphBuilder<'_>) -> Result<()> {
        self.exec.update(builder.graph()?)?;
        for function in builder.kept_kernels() {
            if !self.kept.iter().any(|k| same_function(k, &function)) {
                self.kept.push(function);
            }
        }
        Ok(())
    }

    /// The driver's executable graph, for its per-node calls.
    pub fn as_exec(&self) -> &GraphExec<'static> {
        &self.exec
    }
}

impl std::fmt::Debug for Graph {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Graph")
            .field("exec", &self.exec)
            .field("kernels", &self.kept.len())
            .finish()
    }
}
