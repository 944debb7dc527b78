//! CUDA graphs in cuda.core's shape: [`GraphBuilder`] captures a stream's work (kernels launched
//! into it, array operations, forks and joins between streams, conditional `if`/`else`/`while`/
//! `switch` bodies) and completes into an executable [`Graph`]; [`CapturedStep`] (feature
//! `array`) records a closure over arrays once and replays it. Graphs built node by node are
//! cuda-driver's ([`cuda_driver::Graph`]).
//!
//! No capture begins unless asked for: a library call of this crate never starts one, so
//! graphs come only from a builder, a [`CapturedStep`], or the driver layer's captures.
//!
//! # Arrays under a capture
//! Array expressions, reductions, matrix products and the sorts and scans of
//! [`algorithms`](crate::algorithms) may run on a stream while it captures: their kernels and
//! library calls are recorded and replay correctly, reading whatever their arrays hold when the
//! graph runs.
//! - **Memory.** While its stream captures, the [`MemoryPool`](crate::MemoryPool) does not
//!   hand out cached blocks: an allocation is a stream-ordered `cuMemAllocAsync` recorded into
//!   the capture (a graph memory-allocation node), and its drop during the capture a graph free.
//!   The graph owns that memory, so no address baked into it can be handed out again by the
//!   pool. An array allocated during a capture that outlives it belongs to the graph (its memory
//!   exists while the graph's launches have it) and never returns to the pool; any use of it
//!   after the capture (a read-back, a kernel, a copy) is refused with an `InvalidValue` driver
//!   error, since its address is the graph's. Keep results in arrays allocated before the
//!   capture (write them with `assign` or `copy_from`), as [`CapturedStep`] does.
//! - **Host waits are refused.** A call that waits on the host for the device would invalidate
//!   the capture: reading back (`to_vec`, `item`, `copy_to_host`, printing), copying from host
//!   memory (`copy_from_host`), routines whose result size is counted on the device (`nonzero`,
//!   `argwhere`, `x[mask]`/`extract`, `compress`, `unique`), gathers that check indices
//!   ([`IndexMode::Raise`](crate::IndexMode::Raise)), a stream's first matrix product (making
//!   its cuBLAS handle synchronises the device) and every cuSOLVER routine of `linalg` (`solve`,
//!   `inv`, `det`, `cholesky`, `eigh`, `svd`, ...: each reads its `info` back once, to turn a
//!   singular or indefinite matrix into an error). On a capturing stream each is
//!   [`Error::HostWaitInCapture`](crate::Error::HostWaitInCapture) naming the call, and the
//!   capture stays valid (a `linalg` routine is refused before it copies or allocates
//!   anything, so nothing of it is queued).
//! - **Transforms are refused.** The transforms of the `fft` module on a capturing stream
//!   are [`Error::NotSupported`](crate::Error::NotSupported) before cuFFT is called: a graph
//!   would run on memory of a cached cuFFT plan (its tables, its callbacks' caller info), which
//!   the plan cache may destroy or rewrite while the graph lives.
//! - **First use.** Run the work once before capturing it (a warm-up, as torch asks too): a
//!   kernel's first use compiles and loads its module, and a stream's first product makes its
//!   library handles, neither of which belongs in a capture.
//! - **What may change between replays, and what may not.** The *contents* of every array the
//!   graph reads may change between launches; each launch reads them afresh. *Shapes*, element
//!   types, strides and *addresses* may not: the graph replays the kernels chosen for the
//!   captured shapes on the captured addresses. An input that was not given as a graph input (an
//!   array the captured closure reads directly) must stay alive, at its address, as long as the
//!   graph may run; new data goes into it (or into [`CapturedStep`]'s input arrays) by copying,
//!   never by replacing the array. Scalars given to expressions are baked into the kernels'
//!   arguments: a new scalar value needs a new capture (or an update, [`Graph::update`]).
//! - Uses of memory on a capturing stream are not tracked by the streams' event ordering (the
//!   graph's edges order them): streams forked from a builder are ordered with the root by
//!   [`GraphBuilder::fork`] and [`GraphBuilder::join`] alone, and a conditional body by its node.
//!   A launch of the graph is not tracked either: launch it on the stream its arrays are ordered
//!   on (their pool hands their memory out again in that stream's order), or order other
//!   streams after it yourself.
//!
//! # What a graph keeps
//! An executable [`Graph`] keeps loaded the kernels launched into its builders (through
//! [`GraphBuilder::launch`], and every kernel captured on the root stream or a body's stream);
//! while one or a builder lives, [`unload_generated_kernels`](crate::unload_generated_kernels)
//! leaves the crate's generated kernels loaded, since array work on a forked stream is kept
//! only by their registry. A conditional body's graph belongs to the capture that appended its node: that
//! capture refuses to end while the body is being captured (a body builder left building keeps
//! it going, leaked, rather than destroying the body under it).

mod builder;
#[cfg(feature = "array")]
mod replay;

pub use builder::{Graph, GraphBuilder};
#[doc(no_inline)]
pub use cuda_driver::{CaptureMode, ConditionHandle, GraphInstantiateFlags};
#[cfg(feature = "array")]
pub use replay::CapturedStep;

/// Declarations that kernels setting a graph condition need, for the start of their source:
/// NVRTC's implicit headers define `cudaGraphConditionalHandle` but do not declare the
/// device-runtime builtin `cudaGraphSetConditional(handle, value)`.
///
/// ```
/// let source = format!(
///     "{}\nextern \"C\" __global__ void stop_at(cudaGraphConditionalHandle loop, int *left) {{\n\
///      if (--*left <= 0) cudaGraphSetConditional(loop, 0u);\n}}",
///     cuda_core::graph::CONDITION_PRELUDE
/// );
/// assert!(source.contains("cudaGraphSetConditional"));
/// ```
pub const CONDITION_PRELUDE: &str = "extern \"C\" __device__ __cudart_builtin__ void \
     cudaGraphSetConditional(cudaGraphConditionalHandle handle, unsigned int value);\n";

/// The call named by the refusal of a selection whose size is counted on the device.
#[cfg(feature = "array")]
pub(crate) const COUNTED_SELECTION: &str =
    "a selection whose size is counted on the device (nonzero, argwhere, flatnonzero, extract or x[mask], compress, unique, select)";

/// [`Error::HostWaitInCapture`](crate::Error::HostWaitInCapture) naming `call` if `stream` is
/// capturing a graph (one atomic load while no capture is active in the process).
#[cfg(feature = "array")]
pub(crate) fn refuse_host_wait(stream: &cuda_driver::Stream, call: &'static str) -> crate::Result<()> {
    if stream.in_capture()? {
        return Err(crate::Error::HostWaitInCapture { call });
    }
    Ok(())
}
