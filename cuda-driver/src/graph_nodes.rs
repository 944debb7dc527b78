//! Building graphs node by node: [`GraphNodes`] adds kernel, memcpy, memset, host-function,
//! event, child-graph, memory and empty nodes, and conditional nodes whose bodies are built the
//! same way; [`GraphArgs`] is a kernel node's argument list; stream capture into an existing
//! graph or body.
//!
//! Every node records what it uses in the graph ([`Graph`]'s `Held`): functions and closures by
//! ownership, buffers and events by borrows of the graph's lifetime `'a`. Nodes, condition
//! handles and dependencies carry the identity of their graph or body, and one of another is
//! [`Error::WrongGraph`].

use std::ffi::c_void;
use std::mem::{size_of, MaybeUninit};
use std::panic::AssertUnwindSafe;
use std::ptr;
use std::sync::Arc;

use cuda_sys::driver::{
    CUdeviceptr, CUgraph, CUgraphConditionalHandle, CUgraphConditionalNodeType, CUgraphNode, CUgraphNodeParams,
    CUgraphNodeType, CUmemAllocationType, CUmemLocationType, CUmemorytype, CUDA_CONDITIONAL_NODE_PARAMS,
    CUDA_HOST_NODE_PARAMS, CUDA_KERNEL_NODE_PARAMS, CUDA_MEMCPY3D, CUDA_MEMSET_NODE_PARAMS, CUDA_MEM_ALLOC_NODE_PARAMS,
};
use cuda_sys::LaunchConfig;

use crate::error::{check, Error, Result};
use crate::graph::{next_graph_id, Graph, Held, HostClosure, NodeKind, NodeRecord};
use crate::launch::{check_args, check_config, KernelLimits};
use crate::{
    Access, CaptureMode, Context, DeviceCopy, DeviceMemory, DeviceMemoryMut, Event, Function, HostBuffer, Stream,
};

/// A node of a graph or conditional body (`CUgraphNode`), as the adding call returned it:
/// a dependency for later nodes of the same graph or body, and the key of per-node updates of
/// executable graphs made from it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct GraphNode {
    raw: CUgraphNode,
    graph: u64,
}

// SAFETY: the handle is only an identifier passed back to the driver with its graph, which
// makes its own context current; it is never dereferenced here.
unsafe impl Send for GraphNode {}
// SAFETY: as above.
unsafe impl Sync for GraphNode {}

impl GraphNode {
    pub(crate) fn new(raw: CUgraphNode, graph: u64) -> GraphNode {
        GraphNode { raw, graph }
    }

    pub(crate) fn raw(&self) -> CUgraphNode {
        self.raw
    }

    /// The identity of the graph or body the node belongs to.
    pub(crate) fn graph(&self) -> u64 {
        self.graph
    }
}

/// A condition of conditional nodes (`CUgraphConditionalHandle`), made by
/// [`GraphNodes::condition_handle`] for the graph or body whose conditional nodes use it. A
/// kernel of the graph sets it on the device (`cudaGraphSetConditional(handle, value)`, the
/// handle passed with [`GraphArgs::condition`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ConditionHandle {
    raw: CUgraphConditionalHandle,
    graph: u64,
}

impl ConditionHandle {
    pub(crate) fn new(raw: CUgraphConditionalHandle, graph: u64) -> ConditionHandle {
        ConditionHandle { raw, graph }
    }

    /// The identity of the graph, body or capture the handle was made for.
    pub(crate) fn graph(&self) -> u64 {
        self.graph
    }

    /// The handle's value, as a kernel receives it (`cudaGraphConditionalHandle`, 64 bits).
    pub fn value(&self) -> u64 {
        self.raw
    }
}

/// The kind of a conditional node, and so how many bodies it has.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ConditionalKind {
    /// One body, run once if the condition is non-zero.
    If,
    /// Two bodies: the first runs if the condition is non-zero, the second otherwise
    /// (CUDA 12.8 and later).
    IfElse,
    /// One body, run again and again while the condition is non-zero (checked before each
    /// run); the body's kernels set it.
    While,
    /// `n` bodies; body `i` runs if the condition equals `i`, none if it is `n` or more
    /// (CUDA 12.8 and later).
    Switch(u32),
}

impl ConditionalKind {
    pub(crate) fn raw(self) -> (CUgraphConditionalNodeType, u32) {
        match self {
            ConditionalKind::If => (CUgraphConditionalNodeType::CU_GRAPH_COND_TYPE_IF, 1),
            ConditionalKind::IfElse => (CUgraphConditionalNodeType::CU_GRAPH_COND_TYPE_IF, 2),
            ConditionalKind::While => (CUgraphConditionalNodeType::CU_GRAPH_COND_TYPE_WHILE, 1),
            ConditionalKind::Switch(n) => (CUgraphConditionalNodeType::CU_GRAPH_COND_TYPE_SWITCH, n),
        }
    }
}

/// Device memory a graph allocates (a memory-allocation node, `cuGraphAddMemAllocNode`): an
/// address and size that nodes after the allocation may use, until a memory-free node
/// ([`GraphNodes::mem_free`], which takes it) or, without one, until freed with the graph's
/// instantiation flags ([`GraphInstantiateFlags::AUTO_FREE_ON_LAUNCH`](crate::GraphInstantiateFlags)).
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct GraphMemory {
    ptr: CUdeviceptr,
    bytes: usize,
}

impl GraphMemory {
    /// The device address the graph gives the allocation.
    pub fn device_ptr(&self) -> CUdeviceptr {
        self.ptr
    }

    /// The size in bytes.
    pub fn byte_len(&self) -> usize {
        self.bytes
    }
}

/// Memory a memcpy or memset node uses: contract memory ([`DeviceMemory`], borrowed for the
/// graph's lifetime, its use begun at each launch) or a graph allocation ([`GraphMemory`]).
#[derive(Clone, Copy)]
pub struct NodeMemory<'a> {
    ptr: CUdeviceptr,
    bytes: usize,
    tracked: Option<&'a (dyn DeviceMemory + Sync)>,
}

impl<'a, T: DeviceMemory + Sync> From<&'a T> for NodeMemory<'a> {
    fn from(memory: &'a T) -> Self {
        NodeMemory {
            ptr: memory.device_ptr(),
            bytes: memory.byte_len(),
            tracked: Some(memory),
        }
    }
}

// The graph owns its allocations: the node keeps no borrow of the `GraphMemory`, which
// `GraphNodes::mem_free` may then consume.
impl<'a> From<&GraphMemory> for NodeMemory<'a> {
    fn from(memory: &GraphMemory) -> Self {
        NodeMemory {
            ptr: memory.ptr,
            bytes: memory.bytes,
            tracked: None,
        }
    }
}

impl std::fmt::Debug for NodeMemory<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NodeMemory")
            .field("ptr", &self.ptr)
            .field("bytes", &self.bytes)
            .field("graph_allocation", &self.tracked.is_none())
            .finish()
    }
}

/// One side of a memcpy node: memory seen as slices of `rows` rows of `pitch` bytes, and the
/// block's origin in it (`x` in bytes, row `y`, slice `z`).
#[derive(Clone, Copy, Debug)]
pub struct Region<'a> {
    memory: NodeMemory<'a>,
    pitch: usize,
    rows: usize,
    origin: (usize, usize, usize),
}

impl<'a> Region<'a> {
    /// The whole of `memory` as one row (for 1-D copies).
    pub fn linear(memory: impl Into<NodeMemory<'a>>) -> Self {
        let memory = memory.into();
        Region {
            memory,
            pitch: memory.bytes,
            rows: 1,
            origin: (0, 0, 0),
        }
    }

    /// `memory` as rows of `pitch` bytes, `rows` rows to a slice (for 2-D and 3-D copies).
    pub fn pitched(memory: impl Into<NodeMemory<'a>>, pitch: usize, rows: usize) -> Self {
        Region {
            memory: memory.into(),
            pitch,
            rows,
            origin: (0, 0, 0),
        }
    }

    /// The same region with the block starting `x` bytes into row `y` of slice `z`.
    pub fn at(mut self, x: usize, y: usize, z: usize) -> Self {
        self.origin = (x, y, z);
        self
    }

    /// Checks that a block of `extent` (bytes, rows, slices) at the origin lies inside the memory.
    fn check(&self, what: &str, extent: (usize, usize, usize)) -> Result<()> {
        let (x, y, z) = self.origin;
        let (width, height, depth) = extent;
        let out = || {
            Error::InvalidValue(format!(
                "{what}: a block of {extent:?} (bytes, rows, slices) at {:?} does not fit {} bytes seen as rows of {} \
                 bytes, {} rows a slice",
                self.origin, self.memory.bytes, self.pitch, self.rows
            ))
        };
        let row_end = x.checked_add(width).ok_or_else(out)?;
        if (height > 1 || depth > 1 || y > 0 || z > 0) && row_end > self.pitch {
            return Err(out());
        }
        let rows_end = y.checked_add(height).ok_or_else(out)?;
        if (depth > 1 || z > 0) && rows_end > self.rows {
            return Err(out());
        }
        // The byte after the block's last row: its start plus the row's end.
        let end = z
            .checked_add(depth - 1)
            .and_then(|slice| slice.checked_mul(self.rows))
            .and_then(|rows| rows.checked_add(rows_end - 1))
            .and_then(|row| row.checked_mul(self.pitch))
            .and_then(|start| start.checked_add(row_end))
            .ok_or_else(out)?;
        if end > self.memory.bytes {
            return Err(out());
        }
        Ok(())
    }
}

/// The value and element size of a memset node.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MemsetValue {
    /// Every byte.
    U8(u8),
    /// Every 2-byte element.
    U16(u16),
    /// Every 4-byte element.
    U32(u32),
}

impl MemsetValue {
    fn parts(self) -> (u32, u32) {
        match self {
            MemsetValue::U8(v) => (u32::from(v), 1),
            MemsetValue::U16(v) => (u32::from(v), 2),
            MemsetValue::U32(v) => (v, 4),
        }
    }
}

/// The argument list of a kernel node: values copied now, device addresses of contract memory
/// borrowed for the graph's lifetime (read or written at each launch, as said here), graph
/// allocations and condition handles.
///
/// ```no_run
/// # use cuda_driver::{DeviceBuffer, GraphArgs};
/// # fn example(x: &DeviceBuffer<f32>, y: &DeviceBuffer<f32>) {
/// let args = GraphArgs::new().value(2.0f32).read(x).write(y).value(1024u32);
/// # }
/// ```
#[derive(Default)]
pub struct GraphArgs<'a> {
    /// The arguments' bytes, each at an offset aligned to 16.
    bytes: Vec<MaybeUninit<u8>>,
    /// `(offset, size)` of each argument in `bytes`.
    spans: Vec<(usize, usize)>,
    memory: Vec<(&'a (dyn DeviceMemory + Sync), Access)>,
    /// The graphs or bodies of the condition handles passed.
    conditions: Vec<u64>,
    /// The first bad argument, reported when the list is used.
    error: Option<Error>,
}

impl<'a> GraphArgs<'a> {
    /// An empty argument list.
    pub fn new() -> Self {
        Self::default()
    }

    /// Appends a value passed by copy (a scalar, an array, a `#[repr(C)]` struct).
    pub fn value<T: DeviceCopy>(mut self, value: T) -> Self {
        let offset = self.bytes.len().next_multiple_of(16);
        self.bytes.resize(offset + size_of::<T>(), MaybeUninit::uninit());
        // SAFETY: `bytes` has `size_of::<T>()` bytes at `offset` (resized above); the copy is
        // bytewise into `MaybeUninit` storage, so padding bytes are fine.
        unsafe {
            ptr::copy_nonoverlapping(
                (&value as *const T).cast::<MaybeUninit<u8>>(),
                self.bytes.as_mut_ptr().add(offset),
                size_of::<T>(),
            );
        }
        self.spans.push((offset, size_of::<T>()));
        self
    }

    /// Appends the device address of `memory`, which the kernel only reads.
    pub fn read(self, memory: &'a (impl DeviceMemory + Sync)) -> Self {
        self.memory_arg(memory, Access::Read)
    }

    /// Appends the device address of `memory`, which the kernel may write. Writes happen at each
    /// launch, which orders other streams' work on the memory after it (the contract's write).
    pub fn write(self, memory: &'a (impl DeviceMemoryMut + Sync)) -> Self {
        self.memory_arg(memory, Access::Write)
    }

    /// Appends the device address of a graph allocation.
    pub fn graph_memory(self, memory: &GraphMemory) -> Self {
        self.value(memory.ptr)
    }

    /// Appends a condition handle (a `cudaGraphConditionalHandle` parameter): one of the graph
    /// or body the kernel node is added to, or of a graph that encloses that body (else
    /// [`Error::WrongGraph`] when the list is used).
    pub fn condition(mut self, handle: &ConditionHandle) -> Self {
        self.conditions.push(handle.graph);
        self.value(handle.raw)
    }

    fn memory_arg(mut self, memory: &'a (impl DeviceMemory + Sync), access: Access) -> Self {
        if let Err(error) = memory.check_dense() {
            self.error.get_or_insert(error);
        }
        self.memory.push((memory, access));
        self.value(memory.device_ptr())
    }

    /// Checks the list against `function`'s parameters, `context` and `scope` (the graphs
    /// whose condition handles the kernel may set); returns the argument bytes with their
    /// pointer array, and the memory to hold.
    pub(crate) fn check(
        self,
        function: &Function,
        context: &Context,
        scope: &[u64],
    ) -> Result<(KernelParams, Vec<HeldMemory<'a>>)> {
        if let Some(error) = self.error {
            return Err(error);
        }
        if self.conditions.iter().any(|graph| !scope.contains(graph)) {
            return Err(Error::WrongGraph {
                object: "condition handle",
            });
        }
        function.context().expect_same(context, "function", "graph")?;
        for (memory, _) in &self.memory {
            memory.context().expect_same(context, "buffer", "graph")?;
        }
        if let Some(params) = function.params_if_known()? {
            let sizes: Vec<usize> = self.spans.iter().map(|&(_, size)| size).collect();
            check_args(function.name(), params, &sizes)?;
        }
        let params = KernelParams::new(self.bytes, &self.spans);
        Ok((params, self.memory))
    }
}

impl std::fmt::Debug for GraphArgs<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GraphArgs")
            .field("sizes", &self.spans.iter().map(|&(_, size)| size).collect::<Vec<_>>())
            .field("memory", &self.memory.len())
            .finish()
    }
}

/// Memory a node uses, with how.
pub(crate) type HeldMemory<'a> = (&'a (dyn DeviceMemory + Sync), Access);

/// Argument bytes and the pointer array into them that `CUDA_KERNEL_NODE_PARAMS` takes.
pub(crate) struct KernelParams {
    _bytes: Box<[MaybeUninit<u8>]>,
    pointers: Vec<*mut c_void>,
}

impl KernelParams {
    fn new(bytes: Vec<MaybeUninit<u8>>, spans: &[(usize, usize)]) -> Self {
        let mut bytes = bytes.into_boxed_slice();
        let base = bytes.as_mut_ptr();
        // SAFETY: every span lies inside `bytes` (made by `GraphArgs::value`); the box does not
        // move its storage when `KernelParams` moves.
        let pointers = spans
            .iter()
            .map(|&(offset, _)| unsafe { base.add(offset) }.cast())
            .collect();
        KernelParams {
            _bytes: bytes,
            pointers,
        }
    }
}

/// A copy descriptor of one row of `bytes` bytes, both sides yet to be filled in.
fn linear_copy(bytes: usize) -> CUDA_MEMCPY3D {
    CUDA_MEMCPY3D {
        srcXInBytes: 0,
        srcY: 0,
        srcZ: 0,
        srcLOD: 0,
        srcMemoryType: CUmemorytype::CU_MEMORYTYPE_DEVICE,
        srcHost: ptr::null(),
        srcDevice: 0,
        srcArray: ptr::null_mut(),
        reserved0: ptr::null_mut(),
        srcPitch: bytes,
        srcHeight: 1,
        dstXInBytes: 0,
        dstY: 0,
        dstZ: 0,
        dstLOD: 0,
        dstMemoryType: CUmemorytype::CU_MEMORYTYPE_DEVICE,
        dstHost: ptr::null_mut(),
        dstDevice: 0,
        dstArray: ptr::null_mut(),
        reserved1: ptr::null_mut(),
        dstPitch: bytes,
        dstHeight: 1,
        WidthInBytes: bytes,
        Height: 1,
        Depth: 1,
    }
}

/// `CUDA_KERNEL_NODE_PARAMS` for `function` with `config`, pointing into `params`.
pub(crate) fn kernel_params(
    function: &Function,
    config: &LaunchConfig,
    params: &mut KernelParams,
    context: &Context,
) -> CUDA_KERNEL_NODE_PARAMS {
    CUDA_KERNEL_NODE_PARAMS {
        func: function.raw(),
        gridDimX: config.grid.0,
        gridDimY: config.grid.1,
        gridDimZ: config.grid.2,
        blockDimX: config.block.0,
        blockDimY: config.block.1,
        blockDimZ: config.block.2,
        sharedMemBytes: config.shared_mem_bytes,
        kernelParams: if params.pointers.is_empty() {
            ptr::null_mut()
        } else {
            params.pointers.as_mut_ptr()
        },
        extra: ptr::null_mut(),
        kern: ptr::null_mut(),
        ctx: context.raw(),
    }
}

/// The node list of a graph ([`Graph::nodes`]) or of a conditional node's body (given to the
/// closure of [`GraphNodes::conditional`]), to add nodes to. Each adding call takes the
/// nodes the new one depends on (of this graph or body, else [`Error::WrongGraph`]) and returns
/// the new node. Since a node's dependencies exist before it, the nodes of a graph are always
/// acyclic.
pub struct GraphNodes<'g, 'a> {
    raw: CUgraph,
    id: u64,
    context: &'g Context,
    held: &'g mut Held<'a>,
    /// The graph and the bodies that enclose this body, outermost first (empty for a graph).
    enclosing: Vec<u64>,
}

impl<'g, 'a> GraphNodes<'g, 'a> {
    pub(crate) fn new(
        raw: CUgraph,
        id: u64,
        context: &'g Context,
        held: &'g mut Held<'a>,
        enclosing: Vec<u64>,
    ) -> Self {
        GraphNodes {
            raw,
            id,
            context,
            held,
            enclosing,
        }
    }

    /// Whether these are a conditional body's nodes.
    fn in_body(&self) -> bool {
        !self.enclosing.is_empty()
    }

    /// The graphs whose condition handles kernels here may set: the enclosing ones and this.
    fn scope(&self) -> Vec<u64> {
        let mut scope = self.enclosing.clone();
        scope.push(self.id);
        scope
    }

    /// The handles of `dependencies`, checked to be nodes of this graph or body.
    fn dependencies(&self, dependencies: &[GraphNode]) -> Result<Vec<CUgraphNode>> {
        dependencies
            .iter()
            .map(|node| {
                if node.graph == self.id {
                    Ok(node.raw)
                } else {
                    Err(Error::WrongGraph { object: "dependency" })
                }
            })
            .collect()
    }

    /// Refuses `node` inside a conditional body; notes it for graphs that might become bodies' children.
    fn allow(&mut self, node: &'static str) -> Result<()> {
        if self.in_body() {
            return Err(Error::NotInConditionalBody { node });
        }
        self.held.not_for_bodies.get_or_insert(node);
        Ok(())
    }

    /// Records the node the driver created (`raw`, after `result`).
    fn added(&mut self, result: Result<()>, raw: CUgraphNode, kind: NodeKind) -> Result<GraphNode> {
        result?;
        let node = GraphNode::new(raw, self.id);
        self.held.nodes.push(NodeRecord { node, kind });
        Ok(node)
    }

    /// Adds a kernel launch of `function` with `config` and `args` (`cuGraphAddKernelNode`),
    /// checked as [`Stream::launch`] checks a launch: the function's and buffers' context, the
    /// argument count and sizes, grid, block and shared-memory limits. The graph keeps the
    /// function (and its module) loaded and borrows the buffers.
    ///
    /// # Safety
    /// As for [`Stream::launch`], for every launch of the graph: the kernel's device code must
    /// match the arguments, stay inside the buffers, write only memory passed with
    /// [`GraphArgs::write`], and use graph allocations only between their allocation and free
    /// nodes (in dependency order).
    pub unsafe fn kernel(
        &mut self,
        dependencies: &[GraphNode],
        function: &Function,
        config: &LaunchConfig,
        args: GraphArgs<'a>,
    ) -> Result<GraphNode> {
        let deps = self.dependencies(dependencies)?;
        let limits = KernelLimits {
            max_threads: function.max_threads_per_block()?,
            max_dynamic_shared: function.max_dynamic_shared_memory()?,
        };
        check_config(function.name(), config, &self.context.limits()?, &limits)?;
        let scope = self.scope();
        let (mut params, memory) = args.check(function, self.context, &scope)?;
        let node_params = kernel_params(function, config, &mut params, self.context);
        let driver = self.context.bind()?;
        let mut raw = ptr::null_mut();
        // SAFETY: `raw` is a valid out-pointer; the graph and dependencies (checked to be its
        // own) are alive; `node_params` points at argument copies that outlive the call (the
        // driver copies them), counted and sized against the kernel's parameters.
        let result = check(unsafe {
            driver.cuGraphAddKernelNode_v2()?(&mut raw, self.raw, deps.as_ptr(), deps.len(), &node_params)
        });
        let node = self.added(
            result,
            raw,
            NodeKind::Kernel {
                function: function.clone(),
                config: *config,
                scope,
            },
        )?;
        self.held.memory.extend(memory);
        Ok(node)
    }

    /// Adds a copy of `bytes` bytes from the start of `source` to the start of `destination`
    /// (a 1-D memcpy node).
    pub fn memcpy(
        &mut self,
        dependencies: &[GraphNode],
        destination: impl Into<NodeMemory<'a>>,
        source: impl Into<NodeMemory<'a>>,
        bytes: usize,
    ) -> Result<GraphNode> {
        self.memcpy_3d(
            dependencies,
            Region::linear(destination),
            Region::linear(source),
            (bytes, 1, 1),
        )
    }

    /// Adds a copy of a block of `extent` (bytes per row, rows, slices) between device regions
    /// (`cuGraphAddMemcpyNode`): 1-D with one row and slice, 2-D with one slice. A block outside
    /// either region is [`Error::InvalidValue`], as is an empty one.
    pub fn memcpy_3d(
        &mut self,
        dependencies: &[GraphNode],
        destination: Region<'a>,
        source: Region<'a>,
        extent: (usize, usize, usize),
    ) -> Result<GraphNode> {
        let deps = self.dependencies(dependencies)?;
        if extent.0 == 0 || extent.1 == 0 || extent.2 == 0 {
            return Err(Error::InvalidValue(format!("memcpy node of an empty block {extent:?}")));
        }
        destination.check("memcpy node destination", extent)?;
        source.check("memcpy node source", extent)?;
        self.check_memory(&destination.memory)?;
        self.check_memory(&source.memory)?;
        let copy = CUDA_MEMCPY3D {
            srcXInBytes: source.origin.0,
            srcY: source.origin.1,
            srcZ: source.origin.2,
            srcLOD: 0,
            srcMemoryType: CUmemorytype::CU_MEMORYTYPE_DEVICE,
            srcHost: ptr::null(),
            srcDevice: source.memory.ptr,
            srcArray: ptr::null_mut(),
            reserved0: ptr::null_mut(),
            srcPitch: source.pitch,
            srcHeight: source.rows,
            dstXInBytes: destination.origin.0,
            dstY: destination.origin.1,
            dstZ: destination.origin.2,
            dstLOD: 0,
            dstMemoryType: CUmemorytype::CU_MEMORYTYPE_DEVICE,
            dstHost: ptr::null_mut(),
            dstDevice: destination.memory.ptr,
            dstArray: ptr::null_mut(),
            reserved1: ptr::null_mut(),
            dstPitch: destination.pitch,
            dstHeight: destination.rows,
            WidthInBytes: extent.0,
            Height: extent.1,
            Depth: extent.2,
        };
        // SAFETY: both sides are device memory of the graph's context with the block inside
        // them (checked above), borrowed (or graph-allocated) for the graph's life.
        unsafe { self.copy_node(&deps, &copy, Some(source.memory), Some(destination.memory)) }
    }

    /// Adds a copy of the whole of `source`, pinned host memory borrowed for the graph's life
    /// (the host cannot write it meanwhile), to the start of `destination`.
    pub fn memcpy_from_host<T: DeviceCopy + Sync>(
        &mut self,
        dependencies: &[GraphNode],
        destination: impl Into<NodeMemory<'a>>,
        source: &'a HostBuffer<T>,
    ) -> Result<GraphNode> {
        let deps = self.dependencies(dependencies)?;
        let destination = destination.into();
        let bytes = std::mem::size_of_val::<[T]>(source);
        Region::linear(destination).check("memcpy node destination", (bytes, 1, 1))?;
        self.check_memory(&destination)?;
        source.context().expect_same(self.context, "host buffer", "graph")?;
        let mut copy = linear_copy(bytes);
        copy.srcMemoryType = CUmemorytype::CU_MEMORYTYPE_HOST;
        copy.srcHost = source.as_ptr().cast();
        copy.dstMemoryType = CUmemorytype::CU_MEMORYTYPE_DEVICE;
        copy.dstDevice = destination.ptr;
        // SAFETY: the source is pinned memory of `bytes` bytes that the graph borrows for its
        // life and the host cannot write meanwhile; the destination is device memory of the
        // graph's context holding them (checked above).
        let node = unsafe { self.copy_node(&deps, &copy, None, Some(destination))? };
        self.held.host_memory = true;
        Ok(node)
    }

    /// Adds a copy from the start of `source` to the whole of `destination`, pinned host memory
    /// borrowed exclusively for the graph's life (the host cannot read it while a launch may
    /// write it; an executable graph waits for its launches before it is dropped).
    pub fn memcpy_to_host<T: DeviceCopy + Send>(
        &mut self,
        dependencies: &[GraphNode],
        destination: &'a mut HostBuffer<T>,
        source: impl Into<NodeMemory<'a>>,
    ) -> Result<GraphNode> {
        let deps = self.dependencies(dependencies)?;
        let source = source.into();
        destination
            .context()
            .expect_same(self.context, "host buffer", "graph")?;
        let bytes = std::mem::size_of_val::<[T]>(destination);
        Region::linear(source).check("memcpy node source", (bytes, 1, 1))?;
        self.check_memory(&source)?;
        let mut copy = linear_copy(bytes);
        copy.srcMemoryType = CUmemorytype::CU_MEMORYTYPE_DEVICE;
        copy.srcDevice = source.ptr;
        copy.dstMemoryType = CUmemorytype::CU_MEMORYTYPE_HOST;
        copy.dstHost = destination.as_mut_ptr().cast();
        // SAFETY: the destination is pinned memory of `bytes` bytes borrowed exclusively for the
        // graph's life; the source is device memory of the graph's context holding them.
        let node = unsafe { self.copy_node(&deps, &copy, Some(source), None)? };
        self.held.host_memory = true;
        Ok(node)
    }

    /// Adds the memcpy node `copy` and holds the device memory it reads and writes.
    ///
    /// # Safety
    /// Every address `copy` names must stay valid, for the block it describes, while the graph
    /// and its executable graphs live (borrowed for `'a`, or graph-allocated).
    unsafe fn copy_node(
        &mut self,
        deps: &[CUgraphNode],
        copy: &CUDA_MEMCPY3D,
        reads: Option<NodeMemory<'a>>,
        writes: Option<NodeMemory<'a>>,
    ) -> Result<GraphNode> {
        let driver = self.context.bind()?;
        let mut raw = ptr::null_mut();
        // SAFETY: `raw` is a valid out-pointer; graph and dependencies are alive; the addresses
        // are the caller's obligation.
        let result = check(unsafe {
            driver.cuGraphAddMemcpyNode()?(&mut raw, self.raw, deps.as_ptr(), deps.len(), copy, self.context.raw())
        });
        let node = self.added(result, raw, NodeKind::Other("memcpy"))?;
        if let Some(memory) = reads {
            self.hold_memory(&memory, Access::Read);
        }
        if let Some(memory) = writes {
            self.hold_memory(&memory, Access::Write);
        }
        Ok(node)
    }

    /// Adds a memset of the whole of `destination` to `value` (`cuGraphAddMemsetNode`); its size
    /// must be a multiple of the value's.
    pub fn memset(
        &mut self,
        dependencies: &[GraphNode],
        destination: impl Into<NodeMemory<'a>>,
        value: MemsetValue,
    ) -> Result<GraphNode> {
        let deps = self.dependencies(dependencies)?;
        let destination = destination.into();
        self.check_memory(&destination)?;
        let (bits, element_size) = value.parts();
        let size = element_size as usize;
        if destination.bytes == 0 || destination.bytes % size != 0 {
            return Err(Error::InvalidValue(format!(
                "memset node of {} bytes with {size}-byte elements",
                destination.bytes
            )));
        }
        let params = CUDA_MEMSET_NODE_PARAMS {
            dst: destination.ptr,
            pitch: destination.bytes,
            value: bits,
            elementSize: element_size,
            width: destination.bytes / size,
            height: 1,
        };
        let driver = self.context.bind()?;
        let mut raw = ptr::null_mut();
        // SAFETY: `raw` is a valid out-pointer; graph and dependencies are alive; the memory is
        // device memory of the graph's context, held for the graph's life, of exactly
        // `width * elementSize` bytes.
        let result = check(unsafe {
            driver.cuGraphAddMemsetNode()?(
                &mut raw,
                self.raw,
                deps.as_ptr(),
                deps.len(),
                &params,
                self.context.raw(),
            )
        });
        let node = self.added(result, raw, NodeKind::Other("memset"))?;
        self.hold_memory(&destination, Access::Write);
        Ok(node)
    }

    /// Adds a call of `function` on a driver thread (`cuGraphAddHostNode`), once per launch. It
    /// must not call CUDA. A panic is caught and logged. The graph and every executable graph
    /// made from it own the closure; dropping an executable graph waits for its launches first.
    pub fn host_function(
        &mut self,
        dependencies: &[GraphNode],
        function: impl Fn() + Send + Sync + 'a,
    ) -> Result<GraphNode> {
        self.allow("host function")?;
        let deps = self.dependencies(dependencies)?;
        let closure: Arc<HostClosure<'a>> = Arc::new(Box::new(function));
        let params = CUDA_HOST_NODE_PARAMS {
            fn_: Some(run_graph_host_function),
            userData: Arc::as_ptr(&closure).cast_mut().cast(),
        };
        let driver = self.context.bind()?;
        let mut raw = ptr::null_mut();
        // SAFETY: `raw` is a valid out-pointer; graph and dependencies are alive; `userData`
        // points at the closure, which the graph and its executable graphs keep alive.
        let result =
            check(unsafe { driver.cuGraphAddHostNode()?(&mut raw, self.raw, deps.as_ptr(), deps.len(), &params) });
        let node = self.added(result, raw, NodeKind::Other("host function"))?;
        self.held.host_functions.push(closure);
        Ok(node)
    }

    /// Adds a record of `event` (`cuGraphAddEventRecordNode`), borrowed for the graph's life.
    pub fn event_record(&mut self, dependencies: &[GraphNode], event: &'a Event) -> Result<GraphNode> {
        self.event_node(dependencies, event, true)
    }

    /// Adds a wait for `event` (`cuGraphAddEventWaitNode`), borrowed for the graph's life.
    pub fn event_wait(&mut self, dependencies: &[GraphNode], event: &'a Event) -> Result<GraphNode> {
        self.event_node(dependencies, event, false)
    }

    fn event_node(&mut self, dependencies: &[GraphNode], event: &'a Event, record: bool) -> Result<GraphNode> {
        let kind = if record { "event record" } else { "event wait" };
        self.allow(kind)?;
        let deps = self.dependencies(dependencies)?;
        event.context().expect_same(self.context, "event", "graph")?;
        let driver = self.context.bind()?;
        let mut raw = ptr::null_mut();
        // SAFETY: `raw` is a valid out-pointer; graph, dependencies and the event (of the
        // graph's context, borrowed for the graph's life) are alive.
        let result = check(unsafe {
            if record {
                driver.cuGraphAddEventRecordNode()?(&mut raw, self.raw, deps.as_ptr(), deps.len(), event.raw())
            } else {
                driver.cuGraphAddEventWaitNode()?(&mut raw, self.raw, deps.as_ptr(), deps.len(), event.raw())
            }
        });
        let node = self.added(result, raw, NodeKind::Other(kind))?;
        self.held.events.push(event);
        Ok(node)
    }

    /// Adds `child` as a node (`cuGraphAddChildGraphNode`, which copies it); this graph then
    /// holds what `child` holds, so `child` may be dropped.
    pub fn child_graph(&mut self, dependencies: &[GraphNode], child: &Graph<'a>) -> Result<GraphNode> {
        let deps = self.dependencies(dependencies)?;
        child.context().expect_same(self.context, "child graph", "graph")?;
        if let (true, Some(node)) = (self.in_body(), child.held().not_for_bodies) {
            return Err(Error::NotInConditionalBody { node });
        }
        let driver = self.context.bind()?;
        let mut raw = ptr::null_mut();
        // SAFETY: `raw` is a valid out-pointer; both graphs and the dependencies are alive; the
        // driver copies the child.
        let result = check(unsafe {
            driver.cuGraphAddChildGraphNode()?(&mut raw, self.raw, deps.as_ptr(), deps.len(), child.raw())
        });
        let node = self.added(result, raw, NodeKind::Other("child graph"))?;
        self.held.absorb(child.held());
        Ok(node)
    }

    /// Adds an allocation of `bytes` bytes of device memory on the graph's device
    /// (`cuGraphAddMemAllocNode`); nodes that depend on it may use the returned memory.
    pub fn mem_alloc(&mut self, dependencies: &[GraphNode], bytes: usize) -> Result<(GraphNode, GraphMemory)> {
        self.allow("memory allocation")?;
        let deps = self.dependencies(dependencies)?;
        if bytes == 0 {
            return Err(Error::InvalidValue("a graph allocation of 0 bytes".into()));
        }
        let mut params = CUDA_MEM_ALLOC_NODE_PARAMS {
            poolProps: cuda_sys::driver::CUmemPoolProps {
                allocType: CUmemAllocationType::CU_MEM_ALLOCATION_TYPE_PINNED,
                handleTypes: cuda_sys::driver::CUmemAllocationHandleType(0),
                location: cuda_sys::driver::CUmemLocation {
                    type_: CUmemLocationType::CU_MEM_LOCATION_TYPE_DEVICE,
                    id: self.context.device().ordinal() as i32,
                },
                win32SecurityAttributes: ptr::null_mut(),
                maxSize: 0,
                usage: 0,
                reserved: [0; 54],
            },
            accessDescs: ptr::null(),
            accessDescCount: 0,
            bytesize: bytes,
            dptr: 0,
        };
        let driver = self.context.bind()?;
        let mut raw = ptr::null_mut();
        // SAFETY: `raw` and `params` are valid (the driver writes `dptr`); graph and
        // dependencies are alive.
        let result = check(unsafe {
            driver.cuGraphAddMemAllocNode()?(&mut raw, self.raw, deps.as_ptr(), deps.len(), &mut params)
        });
        let node = self.added(result, raw, NodeKind::Other("memory allocation"))?;
        Ok((
            node,
            GraphMemory {
                ptr: params.dptr,
                bytes,
            },
        ))
    }

    /// Adds the free of a graph allocation (`cuGraphAddMemFreeNode`), which it consumes.
    pub fn mem_free(&mut self, dependencies: &[GraphNode], memory: GraphMemory) -> Result<GraphNode> {
        self.allow("memory free")?;
        let deps = self.dependencies(dependencies)?;
        let driver = self.context.bind()?;
        let mut raw = ptr::null_mut();
        // SAFETY: `raw` is a valid out-pointer; graph and dependencies are alive; `memory` came
        // from a graph allocation node and is consumed, so it is freed once.
        let result = check(unsafe {
            driver.cuGraphAddMemFreeNode()?(&mut raw, self.raw, deps.as_ptr(), deps.len(), memory.ptr)
        });
        self.added(result, raw, NodeKind::Other("memory free"))
    }

    /// Adds a node that does nothing (`cuGraphAddEmptyNode`): a join point for dependencies.
    pub fn empty(&mut self, dependencies: &[GraphNode]) -> Result<GraphNode> {
        let deps = self.dependencies(dependencies)?;
        let driver = self.context.bind()?;
        let mut raw = ptr::null_mut();
        // SAFETY: `raw` is a valid out-pointer; graph and dependencies are alive.
        let result = check(unsafe { driver.cuGraphAddEmptyNode()?(&mut raw, self.raw, deps.as_ptr(), deps.len()) });
        self.added(result, raw, NodeKind::Other("empty"))
    }

    /// A condition for conditional nodes of this graph or body
    /// (`cuGraphConditionalHandleCreate`); `default` is set at the start of every launch when
    /// given (else the value persists between launches, starting at 0).
    pub fn condition_handle(&mut self, default: Option<u32>) -> Result<ConditionHandle> {
        let driver = self.context.bind()?;
        let mut raw = 0;
        let flags = if default.is_some() {
            cuda_sys::driver::CU_GRAPH_COND_ASSIGN_DEFAULT
        } else {
            0
        };
        // SAFETY: `raw` is a valid out-pointer; the graph and its context are alive.
        check(unsafe {
            driver.cuGraphConditionalHandleCreate()?(
                &mut raw,
                self.raw,
                self.context.raw(),
                default.unwrap_or(0),
                flags,
            )
        })?;
        Ok(ConditionHandle { raw, graph: self.id })
    }

    /// Adds a conditional node on `handle` (a handle of this graph or body, else
    /// [`Error::WrongGraph`]) through `cuGraphAddNode`, and builds each of its bodies with
    /// `build(index, body)`. Bodies may hold kernel, memcpy, memset, empty, child-graph and
    /// conditional nodes; the others are [`Error::NotInConditionalBody`]. An error of `build`
    /// is returned as is (the bodies built so far stay in the graph).
    pub fn conditional(
        &mut self,
        dependencies: &[GraphNode],
        handle: &ConditionHandle,
        kind: ConditionalKind,
        mut build: impl FnMut(usize, &mut GraphNodes<'_, 'a>) -> Result<()>,
    ) -> Result<GraphNode> {
        let deps = self.dependencies(dependencies)?;
        if handle.graph != self.id {
            return Err(Error::WrongGraph {
                object: "condition handle",
            });
        }
        let (type_, size) = kind.raw();
        if size == 0 {
            return Err(Error::InvalidValue("a switch node needs at least one body".into()));
        }
        // SAFETY: `CUgraphNodeParams` is plain data (integers, pointers, unions of them): all
        // zeroes is a valid value, the one the driver asks reserved fields to hold.
        let mut params: CUgraphNodeParams = unsafe { std::mem::zeroed() };
        params.type_ = CUgraphNodeType::CU_GRAPH_NODE_TYPE_CONDITIONAL;
        params.__bindgen_anon_1.conditional = CUDA_CONDITIONAL_NODE_PARAMS {
            handle: handle.raw,
            type_,
            size,
            phGraph_out: ptr::null_mut(),
            ctx: self.context.raw(),
        };
        let driver = self.context.bind()?;
        let mut raw = ptr::null_mut();
        // SAFETY: `raw` and `params` are valid; graph and dependencies are alive; the handle
        // belongs to this graph (checked above).
        let result = check(unsafe {
            driver.cuGraphAddNode_v2()?(&mut raw, self.raw, deps.as_ptr(), ptr::null(), deps.len(), &mut params)
        });
        let node = self.added(result, raw, NodeKind::Other("conditional"))?;
        // SAFETY: on success the driver set `phGraph_out` to its array of `size` body graphs,
        // owned by the node (and so by this graph, which outlives this call).
        let bodies: Vec<CUgraph> = unsafe {
            let out = params.__bindgen_anon_1.conditional.phGraph_out;
            if out.is_null() {
                return Err(Error::InvalidValue("the driver returned no conditional bodies".into()));
            }
            std::slice::from_raw_parts(out, size as usize).to_vec()
        };
        for (index, body) in bodies.into_iter().enumerate() {
            let mut nodes = GraphNodes::new(body, next_graph_id(), self.context, self.held, self.scope());
            build(index, &mut nodes)?;
        }
        Ok(node)
    }

    /// Captures the work `record` queues on `stream` into this graph or body after
    /// `dependencies` (`cuStreamBeginCaptureToGraph`), and returns the nodes it added. The
    /// capture ends on every path; captured kernels stay loaded with the graph. As with every
    /// capture, the memory the captured work uses is not held: launching the graph is then
    /// under [`GraphExec::launch`](crate::GraphExec::launch)'s obligations for captured work.
    pub fn capture(
        &mut self,
        dependencies: &[GraphNode],
        stream: &Stream,
        mode: CaptureMode,
        record: impl FnOnce(&Stream) -> Result<()>,
    ) -> Result<Vec<GraphNode>> {
        let deps = self.dependencies(dependencies)?;
        stream.context().expect_same(self.context, "stream", "graph")?;
        let before = self.node_handles()?;
        let driver = self.context.bind()?;
        let begin = driver.cuStreamBeginCaptureToGraph()?;
        let (graph, stream_raw) = (self.raw, stream.raw());
        // SAFETY: stream, graph and dependencies are alive; no edge data (null) for `deps.len()` edges.
        stream.capture_state().begin_with(true, || unsafe {
            begin(stream_raw, graph, deps.as_ptr(), ptr::null(), deps.len(), mode.raw())
        })?;
        let recorded = std::panic::catch_unwind(AssertUnwindSafe(|| record(stream)));
        let finished = stream.capture_state().finish(driver, stream_raw);
        // The capture was ended (or could not be) above; a panic of `record` goes on.
        let recorded = match recorded {
            Ok(result) => result,
            Err(panic) => std::panic::resume_unwind(panic),
        };
        let mut finished = finished?;
        // A capture `record` swapped for a plain one hands its graph to this end: destroyed.
        finished.destroy_owned_graph(stream.context());
        self.held.kernels.extend(std::mem::take(&mut finished.kernels));
        recorded?;
        finished.result?;
        if finished.raw != self.raw {
            return Err(Error::InvalidValue("the capture ended in another graph".into()));
        }
        let after = self.node_handles()?;
        let mut added = Vec::new();
        for raw in after.into_iter().filter(|raw| !before.contains(raw)) {
            added.push(self.added(Ok(()), raw, NodeKind::Other("captured"))?);
        }
        Ok(added)
    }

    /// The graph's node handles (`cuGraphGetNodes`).
    fn node_handles(&self) -> Result<Vec<CUgraphNode>> {
        let driver = self.context.bind()?;
        let get = driver.cuGraphGetNodes()?;
        let mut count = 0;
        // SAFETY: a null array asks for the count only.
        check(unsafe { get(self.raw, ptr::null_mut(), &mut count) })?;
        let mut nodes = vec![ptr::null_mut(); count];
        // SAFETY: `nodes` has room for `count` handles.
        check(unsafe { get(self.raw, nodes.as_mut_ptr(), &mut count) })?;
        nodes.truncate(count);
        Ok(nodes)
    }

    fn check_memory(&self, memory: &NodeMemory<'a>) -> Result<()> {
        match memory.tracked {
            Some(tracked) => {
                tracked.check_dense()?;
                tracked.context().expect_same(self.context, "buffer", "graph")
            }
            None => Ok(()),
        }
    }

    fn hold_memory(&mut self, memory: &NodeMemory<'a>, access: Access) {
        if let Some(tracked) = memory.tracked {
            self.held.memory.push((tracked, access));
        }
    }
}

impl std::fmt::Debug for GraphNodes<'_, '_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GraphNodes")
            .field("nodes", &self.held.nodes.len())
            .field("conditional_body", &self.in_body())
            .finish()
    }
}

/// Runs the closure of a host-function node.
unsafe extern "C" fn run_graph_host_function(data: *mut c_void) {
    // SAFETY: `data` points at a closure that the graph (and its executable graphs, which wait
    // for their launches before dropping it) keeps alive; the driver calls this with the node's
    // `userData`, shared access only.
    let closure = unsafe { &*data.cast::<HostClosure<'_>>() };
    if std::panic::catch_unwind(AssertUnwindSafe(closure)).is_err() {
        eprintln!("cuda-driver: a graph host function panicked; the panic was caught");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn region(bytes: usize, pitch: usize, rows: usize) -> Region<'static> {
        Region {
            memory: NodeMemory {
                ptr: 0x1000,
                bytes,
                tracked: None,
            },
            pitch,
            rows,
            origin: (0, 0, 0),
        }
    }

    #[test]
    fn blocks_inside_a_region_pass() {
        assert!(region(64, 64, 1).check("t", (64, 1, 1)).is_ok());
        // 4 rows of 16 bytes, a 2x2 block at the bottom right.
        assert!(region(64, 16, 4).at(8, 2, 0).check("t", (8, 2, 1)).is_ok());
        // 2 slices of 3 rows of 8 bytes: the whole volume.
        assert!(region(48, 8, 3).check("t", (8, 3, 2)).is_ok());
        assert!(region(48, 8, 3).at(0, 1, 1).check("t", (8, 2, 1)).is_ok());
    }

    #[test]
    fn blocks_outside_a_region_are_refused() {
        assert!(region(64, 64, 1).check("t", (65, 1, 1)).is_err());
        assert!(region(64, 16, 4).at(9, 0, 0).check("t", (8, 2, 1)).is_err());
        assert!(region(64, 16, 4).at(0, 3, 0).check("t", (16, 2, 1)).is_err());
        assert!(region(48, 8, 3).at(0, 2, 0).check("t", (8, 2, 2)).is_err());
        assert!(region(48, 8, 3).at(0, 0, 1).check("t", (8, 3, 2)).is_err());
        // Overflowing origins and extents are errors, not panics.
        assert!(region(64, 16, 4).at(usize::MAX, 0, 0).check("t", (2, 1, 1)).is_err());
        assert!(region(64, 16, 4).at(0, usize::MAX, 0).check("t", (1, 2, 1)).is_err());
        assert!(region(64, 16, usize::MAX).at(0, 0, 2).check("t", (1, 1, 2)).is_err());
    }

    #[test]
    fn graph_args_lay_out_aligned_copies() {
        let handle = ConditionHandle { raw: 77, graph: 1 };
        let args = GraphArgs::new().value(1.5f32).value([1u8, 2, 3]).condition(&handle);
        assert_eq!(args.spans, [(0, 4), (16, 3), (32, 8)]);
        let params = KernelParams::new(args.bytes, &args.spans);
        assert_eq!(params.pointers.len(), 3);
        // SAFETY: each pointer points at the copy of the matching argument, alive with `params`.
        unsafe {
            assert_eq!(params.pointers[0].cast::<f32>().read_unaligned(), 1.5);
            assert_eq!(params.pointers[1].cast::<[u8; 3]>().read_unaligned(), [1, 2, 3]);
            assert_eq!(params.pointers[2].cast::<u64>().read_unaligned(), 77);
        }
    }

    #[test]
    fn conditional_kinds_give_body_counts() {
        assert_eq!(ConditionalKind::If.raw().1, 1);
        assert_eq!(ConditionalKind::IfElse.raw().1, 2);
        assert_eq!(
            ConditionalKind::While.raw().0,
            CUgraphConditionalNodeType::CU_GRAPH_COND_TYPE_WHILE
        );
        assert_eq!(ConditionalKind::Switch(5).raw().1, 5);
        assert_eq!(MemsetValue::U16(0xabcd).parts(), (0xabcd, 2));
    }
}
