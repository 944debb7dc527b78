//! Safe, RAII wrappers over the CUDA driver API, loaded at run time through
//! [`cuda_sys`].
//!
//! ```no_run
//! use cuda_driver::{Context, Device, DeviceBuffer, LaunchConfig, Module, Stream};
//!
//! const PTX: &str = r#"
//! .version 8.0
//! .target sm_75
//! .address_size 64
//!
//! .visible .entry scale(.param .u64 data, .param .f32 factor, .param .u32 n)
//! {
//!     .reg .pred %p;
//!     .reg .b32 %r<5>;
//!     .reg .f32 %f<3>;
//!     .reg .b64 %rd<4>;
//!     ld.param.u64 %rd1, [data];
//!     ld.param.f32 %f1, [factor];
//!     ld.param.u32 %r1, [n];
//!     mov.u32 %r2, %ctaid.x;
//!     mov.u32 %r3, %ntid.x;
//!     mov.u32 %r4, %tid.x;
//!     mad.lo.s32 %r2, %r2, %r3, %r4;
//!     setp.ge.u32 %p, %r2, %r1;
//!     @%p bra DONE;
//!     cvta.to.global.u64 %rd2, %rd1;
//!     mul.wide.u32 %rd3, %r2, 4;
//!     add.s64 %rd2, %rd2, %rd3;
//!     ld.global.f32 %f2, [%rd2];
//!     mul.f32 %f2, %f2, %f1;
//!     st.global.f32 [%rd2], %f2;
//! DONE:
//!     ret;
//! }
//! "#;
//!
//! # fn main() -> cuda_driver::Result<()> {
//! let device = Device::get(0)?;
//! let context = device.primary_context()?;
//! let module = Module::from_ptx(&context, PTX)?;
//! let scale = module.function("scale")?;
//! let stream = Stream::new(&context)?;
//!
//! let mut data = DeviceBuffer::from_slice(&context, &[1.0f32, 2.0, 3.0])?;
//! // SAFETY: `scale` reads and writes `n` floats of `data`, which holds 3.
//! unsafe { stream.launch(&scale, &LaunchConfig::for_num_elems(3), (&mut data, 2.0f32, 3u32))? };
//! stream.synchronize()?;
//! assert_eq!(data.to_vec()?, [2.0, 4.0, 6.0]);
//! # Ok(())
//! # }
//! ```
//!
//! # Beyond buffers and launches
//! - Pitched memory and rectangular copies: [`PitchedBuffer`] (`cuMemAllocPitch`),
//!   [`Pitched`] / [`PitchedMut`] views of host, device and pitched memory, 2-D and
//!   3-D blocks at any offset (`cuMemcpy2DAsync`, `cuMemcpy3DAsync`).
//! - Managed memory: [`ManagedBuffer`] with prefetches and [`Advice`] at a
//!   [`MemoryLocation`].
//! - Module variables: [`Global`] over `__device__` and `__constant__` symbols of a
//!   [`Module`] or [`Library`].
//! - Occupancy: [`Function::occupancy`], [`Function::occupancy_config`] and
//!   [`Function::resident_config`] give [`LaunchConfig`]s chosen by it.
//! - Virtual memory management: [`VirtualBuffer`], growable at a fixed address.
//! - Inter-process sharing: [`IpcMemHandle`], [`IpcMemory`], [`IpcEventHandle`] and
//!   [`Event::open_ipc`]; memory pools shared between processes ([`MemPoolOptions::ipc_enabled`],
//!   [`MemPool::export_fd`], [`MemPool::import_fd`], [`DeviceBuffer::export_pool_pointer`],
//!   [`MemPool::import_pointer`]).
//! - CUDA arrays and what kernels read them through: [`CudaArray`],
//!   [`TextureObject`], [`SurfaceObject`].
//! - Graphs as data: [`Graph::new`] and [`Graph::nodes`] add kernel, memcpy, memset,
//!   host-function, event, child-graph, memory and empty nodes, and conditional nodes
//!   (`if`, `if`/`else`, `while`, `switch`) whose bodies are built the same way; capture into a
//!   graph; [`GraphExec::update`], [`GraphExec::set_kernel_args`] and
//!   [`GraphExec::set_node_enabled`] change an executable graph without a new instantiation.
//! - Green contexts: [`Device::sm_resource`] split into groups of SMs ([`SmResource::split`];
//!   more than the device has is [`Error::SmSplit`]), a [`GreenContext`] over a group, and its
//!   streams, where the usual launches run on the group's SMs only.
//! - Tensor maps for Hopper's bulk tensor copies: [`TiledTensorMap`] and [`Im2colTensorMap`]
//!   check every documented rule ([`TensorMapError`]) and encode a [`TensorMap`] that borrows its
//!   memory and passes to a kernel as a `__grid_constant__ CUtensorMap`.
//!
//! # The device-memory contract: what a library wrapper takes
//! [`DeviceMemory`] is device memory of one context that work on streams uses: its address
//! range (dense: a view that is not one run of elements is refused with [`Error::NotDense`]),
//! its context, and [`DeviceMemory::begin_use`], which orders a stream after the
//! conflicting uses on other streams (a read after the last write; a write after the last write
//! and every read since) with `cuStreamWaitEvent`, never a host wait, and returns a
//! [`StreamUse`] guard to drop once the work is queued. [`DeviceMemoryMut`] marks memory that
//! may be written through `&mut`. [`DeviceBuffer`], its views, [`ManagedBuffer`] and
//! stream-ordered buffers implement both; launches begin their buffer arguments' uses
//! themselves. Memory used on one stream only costs no event and no driver call; frees are
//! ordered after every stream's use (see [`StreamTracker`], which other memory types embed to
//! implement the contract). A wrapper of a library call takes the contract and begins each use:
//!
//! ```no_run
//! use cuda_driver::{Access, DeviceMemory, DeviceMemoryMut, Function, LaunchConfig, Result, Stream};
//!
//! /// `y = a * x + y` over `n` floats, on `stream`.
//! fn saxpy(
//!     stream: &Stream,
//!     kernel: &Function,
//!     a: f32,
//!     x: &impl DeviceMemory,
//!     y: &mut impl DeviceMemoryMut,
//! ) -> Result<()> {
//!     let n = y.byte_len().min(x.byte_len()) / 4;
//!     // `stream` waits (on the device) for the last write of x and for every use of y.
//!     let _x = x.begin_use(stream, Access::Read)?;
//!     let _y = y.begin_use(stream, Access::Write)?;
//!     let (x, y) = (x.device_ptr(), y.device_ptr());
//!     // SAFETY: the kernel reads n floats at x and updates n floats at y, memory the contract
//!     // keeps allocated until the work recorded by the guards (dropped after the launch) is done.
//!     unsafe { stream.launch(kernel, &LaunchConfig::for_num_elems(n as u32), (a, x, y, n as u32)) }
//! }
//! ```
//!
//! # What the safe layer guarantees
//! - Every handle has one owner and is freed on drop; `Drop` never panics.
//!   Errors in destructors are logged and kept on the [`Context`], and the
//!   next [`Context::synchronize`] (or stream/event synchronize, or
//!   [`Context::check_deferred`]) returns them.
//! - Objects carry their context and make it current themselves, so they
//!   work from any thread. Mixing objects of different contexts is
//!   [`Error::WrongContext`].
//! - Device memory is never freed while queued work may use it:
//!   stream-ordered buffers are freed with `cuMemFreeAsync` on their stream,
//!   which first waits (on the device) for the events of the other streams
//!   that used them; others after the host has waited for those events.
//! - A launch checks argument count and sizes (`cuFuncGetParamInfo`), grid,
//!   block and shared-memory limits on the host and returns
//!   [`Error::Launch`] instead of launching. Launching stays `unsafe`,
//!   because the kernel's device code cannot be checked.
//! - Structs pass to kernels by value through the [`DeviceCopy`] marker trait.
//! - Stream capture: [`Stream::capture`] and [`Stream::capture_scope`] end
//!   the capture on every path, destroying a partial graph. While a capture
//!   is active, device and pinned memory that is dropped is freed when it
//!   ends (freeing earlier would invalidate it). A [`Graph`] keeps the
//!   kernels launched during its capture, and so their modules, loaded.
//! - A graph built node by node holds what its nodes use: functions and host closures by
//!   ownership, buffers and events by borrows of its lifetime, so no node outlives what it
//!   refers to; each launch begins the buffers' uses under the contract. Nodes and condition
//!   handles of another graph or body are [`Error::WrongGraph`], an update the driver refuses
//!   is [`Error::GraphUpdate`] (what changed, at which node), and a graph launched on another
//!   context's stream is [`Error::WrongContext`].
//! - Without a driver library every call returns [`Error::Load`]; nothing panics.

#![warn(missing_docs)]
// Where crates documented without this one (docs.rs builds each alone) link its items.
#![doc(html_root_url = "https://docs.rs/cudars-driver/0.1.0")]

mod capture;
mod context;
mod device;
mod device_copy;
mod device_memory;
mod error;
mod event;
mod flags;
mod function;
mod global;
mod graph;
mod graph_nodes;
mod green_context;
mod host;
mod init;
mod ipc;
mod jit_link;
mod launch;
mod library;
mod managed;
mod memcpy2d;
mod memory;
mod module;
mod occupancy;
mod pointer;
mod pool;
#[cfg(unix)]
mod pool_ipc;
mod raw_memory;
mod stream;
mod tensor_map;
mod texture;
mod vmm;

pub use capture::{CaptureBody, CaptureScope};
pub use context::{Context, ContextLimit};
pub use device::{Device, DeviceAttribute};
pub use device_copy::DeviceCopy;
pub use device_memory::{Access, DeviceMemory, DeviceMemoryMut, StreamTracker, StreamUse};
pub use error::{DriverError, Error, GraphUpdateError, GraphUpdateReason, JitLinkError, LaunchError, Result};
pub use event::Event;
pub use flags::{CaptureMode, ContextFlags, EventFlags, GraphInstantiateFlags, HostAllocFlags, StreamFlags};
pub use function::{Function, FunctionAttribute, ParamInfo};
pub use global::Global;
pub use graph::{Graph, GraphExec};
pub use graph_nodes::{
    ConditionHandle, ConditionalKind, GraphArgs, GraphMemory, GraphNode, GraphNodes, MemsetValue, NodeMemory, Region,
};
pub use green_context::{GreenContext, SmResource, SmSplit};
pub use host::{HostBuffer, HostSlice, HostSliceMut};
pub use ipc::{IpcEventHandle, IpcMemHandle, IpcMemory, IPC_HANDLE_BYTES};
pub use jit_link::{JitInputKind, JitLinked, JitLinker};
pub use launch::{launch_checked, launch_raw, KernelArg, KernelArgs, LaunchAttributes};
pub use library::Library;
pub use managed::{Advice, ManagedBuffer, MemoryLocation};
pub use memcpy2d::{Pitched, PitchedBuffer, PitchedMut};
pub use memory::{AsDeviceSlice, DeviceBuffer, DeviceSlice, DeviceSliceMut};
pub use module::Module;
pub use occupancy::Occupancy;
pub use pointer::{MemoryType, PointerInfo};
pub use pool::{MemPool, MemPoolOptions, PoolAccess};
#[cfg(unix)]
pub use pool_ipc::{PoolPointerExport, POOL_POINTER_EXPORT_BYTES};
pub use stream::Stream;
pub use tensor_map::{
    Im2colTensorMap, L2Promotion, OobFill, TensorDataType, TensorInterleave, TensorMap, TensorMapError, TensorSwizzle,
    TiledTensorMap,
};
pub use texture::{
    AddressMode, ArrayElement, ArrayFlags, CudaArray, FilterMode, SurfaceObject, TextureDesc, TextureObject,
};
pub use vmm::VirtualBuffer;

/// The grid, block and dynamic shared memory of a launch: one type shared with cuda-runtime and
/// cuda-core (defined in `cuda-sys`, the crate all of them build on).
pub use cuda_sys::LaunchConfig;

/// The raw bindings this crate is built on.
pub use cuda_sys as sys;

/// The driver's version as `major * 1000 + minor * 10` (e.g. 13000 for 13.0).
pub fn driver_version() -> Result<i32> {
    let driver = cuda_sys::driver()?;
    let mut version = 0;
    // SAFETY: `version` is a valid out-pointer; the call needs no initialisation.
    error::check(unsafe { driver.cuDriverGetVersion()?(&mut version) })?;
    Ok(version)
}
