//! CUDA graphs: work captured from a stream or built node by node (see [`GraphNodes`]),
//! instantiated once, updated in place and replayed.
//!
//! A graph holds what its nodes refer to: the kernels' functions (and so their modules), the
//! host closures, and borrows of the buffers and events for its lifetime `'a`, so that no node
//! can outlive what it uses. An executable graph holds the same, and launching it begins the
//! streams' uses of the borrowed buffers under the [device-memory contract](crate::DeviceMemory).

use std::cell::RefCell;
use std::ffi::CString;
use std::ptr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use cuda_sys::driver::{CUgraph, CUgraphExec, CUgraphExecUpdateResult, CUgraphExecUpdateResultInfo, CUgraphNode};
use cuda_sys::LaunchConfig;

use crate::error::{check, check_resolved, DriverError, Error, GraphUpdateError, GraphUpdateReason, Result};
use crate::graph_nodes::{GraphArgs, GraphNode, GraphNodes};
use crate::{Access, Context, DeviceMemory, Event, Function, GraphInstantiateFlags, Stream};

/// Identities of graphs and conditional bodies, so that a node of one is refused by another.
static NEXT_GRAPH_ID: AtomicU64 = AtomicU64::new(1);

/// A fresh graph or body identity.
pub(crate) fn next_graph_id() -> u64 {
    NEXT_GRAPH_ID.fetch_add(1, Ordering::Relaxed)
}

/// A host closure of a host-function node.
pub(crate) type HostClosure<'a> = Box<dyn Fn() + Send + Sync + 'a>;

/// What kind of node a record is, with what an update of it needs.
#[derive(Clone)]
pub(crate) enum NodeKind {
    /// A kernel launch: its function, configuration, and the graphs whose condition handles it
    /// may set (its arguments change by update).
    Kernel {
        function: Function,
        config: LaunchConfig,
        scope: Vec<u64>,
    },
    /// Anything else, by name (`"memcpy"`, `"host function"`, ...).
    Other(&'static str),
}

/// One node this crate created.
#[derive(Clone)]
pub(crate) struct NodeRecord {
    pub(crate) node: GraphNode,
    pub(crate) kind: NodeKind,
}

impl NodeRecord {
    fn describe(&self, position: usize) -> String {
        match &self.kind {
            NodeKind::Kernel { function, .. } => format!("node {position} (kernel `{}`)", function.name()),
            NodeKind::Other(kind) => format!("node {position} ({kind})"),
        }
    }
}

/// What the nodes of a graph (its bodies and child graphs included) refer to, kept alive as
/// long as the graph and every executable graph made from it.
#[derive(Clone, Default)]
pub(crate) struct Held<'a> {
    /// Kernels launched during a capture into the graph.
    pub(crate) kernels: Vec<Function>,
    /// Memory the nodes read or write, with how.
    pub(crate) memory: Vec<(&'a (dyn DeviceMemory + Sync), Access)>,
    /// Closures of host-function nodes; the nodes point at them.
    pub(crate) host_functions: Vec<Arc<HostClosure<'a>>>,
    /// Events recorded or waited for.
    pub(crate) events: Vec<&'a Event>,
    /// The nodes created through [`GraphNodes`], in creation order.
    pub(crate) nodes: Vec<NodeRecord>,
    /// The first node kind the driver refuses in a conditional body, if the graph has one.
    pub(crate) not_for_bodies: Option<&'static str>,
    /// Whether memcpy nodes use pinned host memory (borrowed for `'a`): launches must be
    /// waited for before the borrow ends.
    pub(crate) host_memory: bool,
}

impl<'a> Held<'a> {
    /// Takes what `other` holds, except its node records (its nodes are not this graph's).
    pub(crate) fn absorb(&mut self, other: &Held<'a>) {
        self.kernels.extend(other.kernels.iter().cloned());
        self.memory.extend(other.memory.iter().copied());
        self.host_functions.extend(other.host_functions.iter().cloned());
        self.events.extend(other.events.iter().copied());
        self.not_for_bodies = self.not_for_bodies.or(other.not_for_bodies);
        self.host_memory |= other.host_memory;
    }

    /// Whether launches must be waited for before what is held is let go: host closures may
    /// still be called, pinned host memory still copied to or from.
    fn waits_for_launches(&self) -> bool {
        !self.host_functions.is_empty() || self.host_memory
    }

    fn record(&self, node: &GraphNode) -> Option<(usize, &NodeRecord)> {
        self.nodes.iter().enumerate().find(|(_, record)| record.node == *node)
    }
}

/// A graph of work (`CUgraph`): captured from a stream ([`Stream::capture`], then `'a` is
/// `'static`) or built node by node through [`Graph::nodes`]. It keeps what its nodes use
/// alive: functions and closures by ownership, buffers and events by borrows of lifetime `'a`.
pub struct Graph<'a> {
    raw: CUgraph,
    id: u64,
    context: Context,
    held: Held<'a>,
    /// The graph this one was cloned from, for [`Graph::find_in_clone`].
    cloned_from: Option<u64>,
}

/// An instantiated graph (`CUgraphExec`), ready to launch many times. It keeps what the graph
/// it was made from (and every graph it was updated from) refers to.
pub struct GraphExec<'a> {
    raw: CUgraphExec,
    context: Context,
    /// The graph it was instantiated from: the nodes its per-node calls accept.
    graph: u64,
    held: Held<'a>,
    /// The streams it was launched on, waited for on drop when host closures or pinned host
    /// memory are held (the driver lets an executable graph destroyed in flight finish, calling
    /// the closures and copying the memory).
    launched: RefCell<Vec<Stream>>,
}

// SAFETY: a graph handle may be used from any thread; every use makes its context current.
// What the graph holds is `Send` (functions, `Sync` borrows, `Send + Sync` closures). Graph
// objects are not internally synchronised, so they are not `Sync`: calls on one graph are
// serialised by `&mut self` or one thread's `&self`.
unsafe impl Send for Graph<'_> {}
// SAFETY: as for `Graph`; an executable graph must not be launched from two threads at once,
// so it is `Send` but not `Sync`.
unsafe impl Send for GraphExec<'_> {}

impl<'a> Graph<'a> {
    /// An empty graph of `context` (`cuGraphCreate`), to build with [`Graph::nodes`].
    pub fn new(context: &Context) -> Result<Graph<'a>> {
        let driver = context.bind()?;
        let mut raw = ptr::null_mut();
        // SAFETY: `raw` is a valid out-pointer; flags must be 0.
        check(unsafe { driver.cuGraphCreate()?(&mut raw, 0) })?;
        Ok(Graph {
            raw,
            id: next_graph_id(),
            context: context.clone(),
            held: Held::default(),
            cloned_from: None,
        })
    }

    /// Takes ownership of a graph handle of `context` whose kernel nodes
    /// launch `kernels`.
    ///
    /// # Safety
    /// `raw` must be a graph of `context` that nothing else destroys.
    pub(crate) unsafe fn from_owned(raw: CUgraph, context: Context, kernels: Vec<Function>) -> Graph<'a> {
        Graph {
            raw,
            id: next_graph_id(),
            context,
            held: Held {
                kernels,
                ..Held::default()
            },
            cloned_from: None,
        }
    }

    /// The graph's node list, to add nodes to (see [`GraphNodes`]).
    pub fn nodes(&mut self) -> GraphNodes<'_, 'a> {
        GraphNodes::new(self.raw, self.id, &self.context, &mut self.held, Vec::new())
    }

    /// Instantiates the graph for launching (`cuGraphInstantiateWithFlags`, no flags).
    pub fn instantiate(&self) -> Result<GraphExec<'a>> {
        self.instantiate_with(GraphInstantiateFlags::empty())
    }

    /// Instantiates the graph with `flags`: [`GraphInstantiateFlags::AUTO_FREE_ON_LAUNCH`]
    /// lets a graph that allocates memory without freeing it be launched again, and so on.
    /// [`GraphInstantiateFlags::UPLOAD`] needs the stream to upload on: it is
    /// [`Graph::instantiate_uploaded`]'s, and here an [`Error::InvalidValue`] (the driver
    /// refuses it without a stream).
    pub fn instantiate_with(&self, flags: GraphInstantiateFlags) -> Result<GraphExec<'a>> {
        if flags.contains(GraphInstantiateFlags::UPLOAD) {
            return Err(Error::InvalidValue(
                "GraphInstantiateFlags::UPLOAD needs a stream to upload on: use Graph::instantiate_uploaded".into(),
            ));
        }
        let driver = self.context.bind()?;
        let mut exec = ptr::null_mut();
        // SAFETY: `exec` is a valid out-pointer; the graph is alive; the flags are the driver's.
        check(unsafe { driver.cuGraphInstantiateWithFlags()?(&mut exec, self.raw, flags.bits()) })?;
        Ok(self.exec(exec))
    }

    /// Instantiates the graph with `flags` and uploads it on `stream` (same context, else
    /// [`Error::WrongContext`]) as part of instantiation (`cuGraphInstantiateWithParams` with
    /// [`GraphInstantiateFlags::UPLOAD`]), so its first launch on that stream starts at once.
    pub fn instantiate_uploaded(&self, flags: GraphInstantiateFlags, stream: &Stream) -> Result<GraphExec<'a>> {
        self.context.expect_same(stream.context(), "stream", "graph")?;
        let driver = self.context.bind()?;
        let mut params = cuda_sys::driver::CUDA_GRAPH_INSTANTIATE_PARAMS {
            flags: (flags | GraphInstantiateFlags::UPLOAD).bits(),
            hUploadStream: stream.raw(),
            hErrNode_out: ptr::null_mut(),
            result_out: cuda_sys::driver::CUgraphInstantiateResult::CUDA_GRAPH_INSTANTIATE_SUCCESS,
        };
        let mut exec = ptr::null_mut();
        // SAFETY: `exec` and `params` are valid for the call; the graph and the stream are alive
        // and of the current context; uploading runs nothing.
        check(unsafe { driver.cuGraphInstantiateWithParams()?(&mut exec, self.raw, &mut params) })?;
        Ok(self.exec(exec))
    }

    /// The executable graph `exec`, instantiated from this graph, holding what it holds.
    fn exec(&self, exec: CUgraphExec) -> GraphExec<'a> {
        GraphExec {
            raw: exec,
            context: self.context.clone(),
            graph: self.id,
            held: self.held.clone(),
            launched: RefCell::new(Vec::new()),
        }
    }

    /// A copy of the graph (`cuGraphClone`) holding the same things; its nodes are new ones,
    /// found from this graph's with [`Graph::find_in_clone`].
    pub fn try_clone(&self) -> Result<Graph<'a>> {
        let driver = self.context.bind()?;
        let mut raw = ptr::null_mut();
        // SAFETY: `raw` is a valid out-pointer; the graph is alive.
        check(unsafe { driver.cuGraphClone()?(&mut raw, self.raw) })?;
        let id = next_graph_id();
        let mut held = self.held.clone();
        held.nodes.clear();
        let mut clone = Graph {
            raw,
            id,
            context: self.context.clone(),
            held,
            cloned_from: Some(self.id),
        };
        for record in &self.held.nodes {
            if record.node.graph() == self.id {
                let node = clone.find_in_clone(&record.node)?;
                clone.held.nodes.push(NodeRecord {
                    node,
                    kind: record.kind.clone(),
                });
            }
        }
        Ok(clone)
    }

    /// The node of this clone that copies `original`, a node of the graph it was cloned from
    /// (`cuGraphNodeFindInClone`); [`Error::WrongGraph`] for any other node.
    pub fn find_in_clone(&self, original: &GraphNode) -> Result<GraphNode> {
        if self.cloned_from != Some(original.graph()) {
            return Err(Error::WrongGraph {
                object: "original node",
            });
        }
        let driver = self.context.bind()?;
        let mut raw = ptr::null_mut();
        // SAFETY: `raw` is a valid out-pointer; the original node belongs to the graph this one
        // was cloned from (checked above), and this graph is alive.
        check(unsafe { driver.cuGraphNodeFindInClone()?(&mut raw, original.raw(), self.raw) })?;
        Ok(GraphNode::new(raw, self.id))
    }

    /// The nodes created through [`Graph::nodes`] (conditional bodies' and captured ones
    /// included), in creation order: the keys of an executable graph's per-node calls.
    pub fn created_nodes(&self) -> Vec<GraphNode> {
        self.held.nodes.iter().map(|record| record.node).collect()
    }

    /// Number of nodes in the graph (not counting those inside child graphs and bodies).
    pub fn node_count(&self) -> Result<usize> {
        let driver = self.context.bind()?;
        let mut count = 0;
        // SAFETY: a null node array asks only for the count, written to a valid out-pointer.
        check(unsafe { driver.cuGraphGetNodes()?(self.raw, ptr::null_mut(), &mut count) })?;
        Ok(count)
    }

    /// The graph in Graphviz DOT form (`cuGraphDebugDotPrint`), for debugging; `verbose`
    /// adds every node's parameters. The driver writes a file: a temporary one, removed after.
    pub fn to_dot(&self, verbose: bool) -> Result<String> {
        static NEXT_FILE: AtomicU64 = AtomicU64::new(0);
        let path = std::env::temp_dir().join(format!(
            "cuda-driver-graph-{}-{}.dot",
            std::process::id(),
            NEXT_FILE.fetch_add(1, Ordering::Relaxed)
        ));
        let text = path
            .to_str()
            .ok_or_else(|| Error::InvalidValue(format!("temporary path {} is not UTF-8", path.display())))?;
        let c_path =
            CString::new(text).map_err(|_| Error::InvalidValue(format!("temporary path {text} holds a NUL byte")))?;
        // CU_GRAPH_DEBUG_DOT_FLAGS_VERBOSE sets every detail flag.
        let flags = if verbose {
            cuda_sys::driver::CUgraphDebugDot_flags::CU_GRAPH_DEBUG_DOT_FLAGS_VERBOSE.0
        } else {
            0
        };
        let driver = self.context.bind()?;
        // SAFETY: the graph is alive; `c_path` is a NUL-terminated path that outlives the call.
        check(unsafe { driver.cuGraphDebugDotPrint()?(self.raw, c_path.as_ptr(), flags) })?;
        let dot = std::fs::read_to_string(&path)
            .map_err(|e| Error::InvalidValue(format!("reading the DOT file {text}: {e}")));
        // The file was only a way to get the text; failing to remove it leaves a temporary file.
        let _ = std::fs::remove_file(&path);
        dot
    }

    /// The context the graph belongs to.
    pub fn context(&self) -> &Context {
        &self.context
    }

    pub(crate) fn raw(&self) -> CUgraph {
        self.raw
    }

    pub(crate) fn held(&self) -> &Held<'a> {
        &self.held
    }

    /// The driver's handle.
    ///
    /// # Safety
    /// Valid only while this graph is alive; the caller must not destroy it, and nodes added
    /// through it are not held by this graph (what they use must outlive it).
    pub unsafe fn as_raw(&self) -> CUgraph {
        self.raw
    }
}

impl<'a> GraphExec<'a> {
    /// Launches the graph on `stream` (same context, else [`Error::WrongContext`]).
    ///
    /// The graph holds what its nodes use (kernels, closures, borrowed buffers and events);
    /// each launch begins the stream's use of every borrowed buffer (a read or a write, as its
    /// node said), ordering it after other streams' conflicting work.
    ///
    /// # Safety
    /// The kernels' device code is not checked: their obligations of [`Stream::launch`] hold
    /// again for this run (for every kernel node, and for every argument set by
    /// [`GraphExec::set_kernel_args`]). A graph captured from a stream replays the captured
    /// work with the addresses it was captured with: every buffer (device or pinned host) the
    /// captured work used must still be alive, and kernels the captured work launched other
    /// than through this crate's launches (raw `cuLaunchKernel` on [`Stream::as_raw`]) must
    /// still be loaded.
    pub unsafe fn launch(&self, stream: &Stream) -> Result<()> {
        self.context.expect_same(stream.context(), "stream", "graph")?;
        let mut uses = Vec::with_capacity(self.held.memory.len());
        for (memory, access) in &self.held.memory {
            uses.push(memory.begin_use(stream, *access)?);
        }
        if self.held.waits_for_launches() && !self.launched.borrow().contains(stream) {
            self.launched.borrow_mut().push(stream.clone());
        }
        let driver = self.context.bind()?;
        // SAFETY: graph and stream are alive and of the current context; the memory the nodes
        // use is borrowed for `'a` and its uses are begun above (dropped after the launch is
        // queued); the host closures live until the launches are waited for (drop); the device
        // code is the caller's obligation.
        check(unsafe { driver.cuGraphLaunch()?(self.raw, stream.raw()) })
    }

    /// Uploads the graph to the device ahead of its first launch.
    pub fn upload(&self, stream: &Stream) -> Result<()> {
        self.context.expect_same(stream.context(), "stream", "graph")?;
        let driver = self.context.bind()?;
        // SAFETY: graph and stream are alive and of the current context; uploading runs nothing.
        check(unsafe { driver.cuGraphUpload()?(self.raw, stream.raw()) })
    }

    /// Updates this executable graph in place from `graph` (`cuGraphExecUpdate`), which must
    /// have the same shape as the graph it was made from (nodes of the same types, created in
    /// the same order, with the same edges); parameters may differ. What the driver refuses is
    /// [`Error::GraphUpdate`], naming what changed and the node. Afterwards this executable
    /// graph holds what `graph` refers to as well (a launch queued before may still use the
    /// old).
    pub fn update(&mut self, graph: &Graph<'a>) -> Result<()> {
        self.context.expect_same(graph.context(), "graph", "executable graph")?;
        let driver = self.context.bind()?;
        let update = driver.cuGraphExecUpdate_v2()?;
        let mut info = CUgraphExecUpdateResultInfo {
            result: CUgraphExecUpdateResult::CU_GRAPH_EXEC_UPDATE_SUCCESS,
            errorNode: ptr::null_mut(),
            errorFromNode: ptr::null_mut(),
        };
        // SAFETY: both graphs are alive and of the current context; `info` is a valid out-pointer.
        let result = unsafe { update(self.raw, graph.raw(), &mut info) };
        if result != cuda_sys::driver::CUresult::CUDA_SUCCESS {
            return Err(update_error(graph.held(), &info, result));
        }
        // Nodes pair up in creation order: the kernels' functions and configurations are the new
        // ones. A graph without the same records (captured) leaves its kernels unknown here.
        let fresh = graph.held();
        self.held.absorb(fresh);
        let same_records = fresh.nodes.len() == self.held.nodes.len();
        for (position, record) in self.held.nodes.iter_mut().enumerate() {
            record.kind = match (same_records, &record.kind) {
                (true, _) => fresh.nodes[position].kind.clone(),
                (false, NodeKind::Kernel { .. }) => {
                    NodeKind::Other("kernel of unknown arguments (updated from a captured graph)")
                }
                (false, other) => other.clone(),
            };
        }
        Ok(())
    }

    /// Sets the arguments of the kernel node `node` (a node of the graph this was instantiated
    /// from) for later launches, without a new instantiation (`cuGraphExecKernelNodeSetParams`):
    /// checked as [`GraphNodes::kernel`] checks them. The executable graph then also holds the
    /// memory `args` borrows.
    ///
    /// # Safety
    /// As for [`GraphNodes::kernel`]: the kernel's device code must be correct for these
    /// arguments at every later launch.
    pub unsafe fn set_kernel_args(&mut self, node: &GraphNode, args: GraphArgs<'a>) -> Result<()> {
        let (function, config, scope) = match self.record_of(node)? {
            NodeKind::Kernel {
                function,
                config,
                scope,
            } => (function.clone(), *config, scope.clone()),
            NodeKind::Other(kind) => {
                return Err(Error::InvalidValue(format!(
                    "set_kernel_args needs a kernel node, this is a {kind} node"
                )))
            }
        };
        let (mut pointers, memory) = args.check(&function, &self.context, &scope)?;
        let params = crate::graph_nodes::kernel_params(&function, &config, &mut pointers, &self.context);
        let driver = self.context.bind()?;
        // SAFETY: the executable graph and node are alive (the node is a kernel node of the graph
        // it was made from, checked above); `params` points at argument copies that outlive the
        // call (the driver copies them), counted and sized against the kernel's parameters.
        check(unsafe { driver.cuGraphExecKernelNodeSetParams_v2()?(self.raw, node.raw(), &params) })?;
        self.held.memory.extend(memory);
        Ok(())
    }

    /// Enables or disables `node` (a kernel, memcpy or memset node of the graph this was
    /// instantiated from) for later launches (`cuGraphNodeSetEnabled`); a disabled node acts as
    /// an empty one.
    pub fn set_node_enabled(&mut self, node: &GraphNode, enabled: bool) -> Result<()> {
        self.record_of(node)?;
        let driver = self.context.bind()?;
        // SAFETY: the executable graph and the node (of the graph it was made from) are alive.
        check(unsafe { driver.cuGraphNodeSetEnabled()?(self.raw, node.raw(), u32::from(enabled)) })
    }

    /// Whether `node` is enabled (`cuGraphNodeGetEnabled`).
    pub fn node_enabled(&self, node: &GraphNode) -> Result<bool> {
        self.record_of(node)?;
        let driver = self.context.bind()?;
        let mut enabled = 0;
        // SAFETY: as in `set_node_enabled`; `enabled` is a valid out-pointer.
        check(unsafe { driver.cuGraphNodeGetEnabled()?(self.raw, node.raw(), &mut enabled) })?;
        Ok(enabled != 0)
    }

    /// The record of `node`, which must be a node of the graph this was instantiated from.
    fn record_of(&self, node: &GraphNode) -> Result<&NodeKind> {
        if node.graph() != self.graph {
            return Err(Error::WrongGraph { object: "node" });
        }
        self.held
            .record(node)
            .map(|(_, record)| &record.kind)
            .ok_or(Error::WrongGraph { object: "node" })
    }

    /// The context the graph belongs to.
    pub fn context(&self) -> &Context {
        &self.context
    }

    /// The driver's handle.
    ///
    /// # Safety
    /// Valid only while this object is alive; the caller must not destroy it.
    pub unsafe fn as_raw(&self) -> CUgraphExec {
        self.raw
    }
}

/// The typed error of a refused update: the reason, and the node of `graph` the driver named.
fn update_error(graph: &Held<'_>, info: &CUgraphExecUpdateResultInfo, result: cuda_sys::driver::CUresult) -> Error {
    let reason = update_reason(info.result);
    let node = [info.errorNode, info.errorFromNode]
        .into_iter()
        .filter(|raw| !raw.is_null())
        .find_map(|raw| describe_node(graph, raw));
    Error::GraphUpdate(Box::new(GraphUpdateError {
        reason,
        node,
        error: DriverError::new(result),
    }))
}

/// `CUgraphExecUpdateResult` as a reason.
pub(crate) fn update_reason(result: CUgraphExecUpdateResult) -> GraphUpdateReason {
    match result {
        CUgraphExecUpdateResult::CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED => GraphUpdateReason::TopologyChanged,
        CUgraphExecUpdateResult::CU_GRAPH_EXEC_UPDATE_ERROR_NODE_TYPE_CHANGED => GraphUpdateReason::NodeTypeChanged,
        CUgraphExecUpdateResult::CU_GRAPH_EXEC_UPDATE_ERROR_FUNCTION_CHANGED => GraphUpdateReason::FunctionChanged,
        CUgraphExecUpdateResult::CU_GRAPH_EXEC_UPDATE_ERROR_PARAMETERS_CHANGED => GraphUpdateReason::ParametersChanged,
        CUgraphExecUpdateResult::CU_GRAPH_EXEC_UPDATE_ERROR_NOT_SUPPORTED => GraphUpdateReason::NotSupported,
        CUgraphExecUpdateResult::CU_GRAPH_EXEC_UPDATE_ERROR_UNSUPPORTED_FUNCTION_CHANGE => {
            GraphUpdateReason::UnsupportedFunctionChange
        }
        CUgraphExecUpdateResult::CU_GRAPH_EXEC_UPDATE_ERROR_ATTRIBUTES_CHANGED => GraphUpdateReason::AttributesChanged,
        other => GraphUpdateReason::Other(other.0),
    }
}

/// A node of `graph` by handle, described by its position in creation order and its kind.
fn describe_node(graph: &Held<'_>, raw: CUgraphNode) -> Option<String> {
    graph
        .nodes
        .iter()
        .enumerate()
        .find(|(_, record)| record.node.raw() == raw)
        .map(|(position, record)| record.describe(position))
}

impl Drop for Graph<'_> {
    fn drop(&mut self) {
        let Some(driver) = self.context.bind_for_drop("cuGraphDestroy") else {
            return;
        };
        // SAFETY: this is the only owner of the graph; executable graphs made from it are independent.
        let result = driver.cuGraphDestroy().map(|destroy| unsafe { destroy(self.raw) });
        self.context
            .record_drop_result("cuGraphDestroy", check_resolved(result));
    }
}

impl Drop for GraphExec<'_> {
    fn drop(&mut self) {
        // Launches in flight may still call the host closures, which are dropped with `self`, or
        // copy pinned host memory whose borrow ends with `self`.
        for stream in self.launched.get_mut().drain(..) {
            if let Err(error) = stream.synchronize_quiet() {
                self.context.record_drop_error(
                    "waiting for a graph's launches before dropping its host closures",
                    error,
                );
            }
        }
        let Some(driver) = self.context.bind_for_drop("cuGraphExecDestroy") else {
            return;
        };
        // SAFETY: this is the only owner; the driver lets queued launches of it finish (those
        // that call host closures were waited for above).
        let result = driver.cuGraphExecDestroy().map(|destroy| unsafe { destroy(self.raw) });
        self.context
            .record_drop_result("cuGraphExecDestroy", check_resolved(result));
    }
}

impl std::fmt::Debug for Graph<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Graph")
            .field("device", &self.context.device().ordinal())
            .field("nodes", &self.held.nodes.len())
            .field("kernels", &self.held.kernels.len())
            .finish()
    }
}

impl std::fmt::Debug for GraphExec<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GraphExec")
            .field("device", &self.context.device().ordinal())
            .field("nodes", &self.held.nodes.len())
            .field("kernels", &self.held.kernels.len())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn update_results_name_what_changed() {
        assert_eq!(
            update_reason(CUgraphExecUpdateResult::CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED),
            GraphUpdateReason::TopologyChanged
        );
        assert_eq!(
            update_reason(CUgraphExecUpdateResult::CU_GRAPH_EXEC_UPDATE_ERROR_FUNCTION_CHANGED),
            GraphUpdateReason::FunctionChanged
        );
        assert_eq!(update_reason(CUgraphExecUpdateResult(99)), GraphUpdateReason::Other(99));
        let error = GraphUpdateError {
            reason: GraphUpdateReason::TopologyChanged,
            node: Some("node 2 (kernel `scale`)".into()),
            error: DriverError {
                code: cuda_sys::driver::CUresult::CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE,
                name: "CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE".into(),
                description: "the graph update was not performed".into(),
            },
        };
        let text = error.to_string();
        assert!(
            text.contains("topology changed") && text.contains("node 2 (kernel `scale`)"),
            "{text}"
        );
    }
}
