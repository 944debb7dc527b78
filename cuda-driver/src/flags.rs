//! Bit flags for contexts, streams, events and pinned host memory, and the
//! stream capture mode.

use cuda_sys::driver::{CUctx_flags, CUevent_flags, CUgraphInstantiate_flags, CUstreamCaptureMode, CUstream_flags};

bitflags::bitflags! {
    /// Flags for [`Context::new`](crate::Context::new) (`CU_CTX_*`).
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
    pub struct ContextFlags: u32 {
        /// Let the driver choose how the host thread waits (the default, 0).
        const SCHED_AUTO = CUctx_flags::CU_CTX_SCHED_AUTO.0;
        /// Spin while waiting for results.
        const SCHED_SPIN = CUctx_flags::CU_CTX_SCHED_SPIN.0;
        /// Yield the thread while waiting.
        const SCHED_YIELD = CUctx_flags::CU_CTX_SCHED_YIELD.0;
        /// Block on a synchronisation primitive while waiting.
        const SCHED_BLOCKING_SYNC = CUctx_flags::CU_CTX_SCHED_BLOCKING_SYNC.0;
        /// Allow mapping pinned host memory into the device's address space.
        const MAP_HOST = CUctx_flags::CU_CTX_MAP_HOST.0;
        /// Keep local memory allocated after a launch that resized it.
        const LMEM_RESIZE_TO_MAX = CUctx_flags::CU_CTX_LMEM_RESIZE_TO_MAX.0;
        /// Write a core dump when an exception occurs in this context.
        const COREDUMP_ENABLE = CUctx_flags::CU_CTX_COREDUMP_ENABLE.0;
        /// Enable user-triggered core dumps.
        const USER_COREDUMP_ENABLE = CUctx_flags::CU_CTX_USER_COREDUMP_ENABLE.0;
        /// Make synchronous memory operations always synchronous.
        const SYNC_MEMOPS = CUctx_flags::CU_CTX_SYNC_MEMOPS.0;
    }
}

bitflags::bitflags! {
    /// Flags for [`Stream::with_options`](crate::Stream::with_options) (`CU_STREAM_*`).
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
    pub struct StreamFlags: u32 {
        /// A stream that synchronises with the legacy default stream (0).
        const DEFAULT = CUstream_flags::CU_STREAM_DEFAULT.0;
        /// Work in this stream may run concurrently with the legacy default stream.
        const NON_BLOCKING = CUstream_flags::CU_STREAM_NON_BLOCKING.0;
    }
}

bitflags::bitflags! {
    /// Flags for [`Event::new`](crate::Event::new) (`CU_EVENT_*`).
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
    pub struct EventFlags: u32 {
        /// A timing event whose waits spin (0).
        const DEFAULT = CUevent_flags::CU_EVENT_DEFAULT.0;
        /// `synchronize` blocks the thread instead of spinning.
        const BLOCKING_SYNC = CUevent_flags::CU_EVENT_BLOCKING_SYNC.0;
        /// The event records no time, which makes it cheaper; `elapsed_ms` fails on it.
        const DISABLE_TIMING = CUevent_flags::CU_EVENT_DISABLE_TIMING.0;
        /// The event may be shared between processes (needs `DISABLE_TIMING`).
        const INTERPROCESS = CUevent_flags::CU_EVENT_INTERPROCESS.0;
    }
}

bitflags::bitflags! {
    /// Flags for [`HostBuffer::with_flags`](crate::HostBuffer::with_flags) (`CU_MEMHOSTALLOC_*`).
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
    pub struct HostAllocFlags: u32 {
        /// The memory is pinned for every context, not only the allocating one.
        const PORTABLE = cuda_sys::driver::CU_MEMHOSTALLOC_PORTABLE;
        /// Map the memory into the device's address space.
        const DEVICEMAP = cuda_sys::driver::CU_MEMHOSTALLOC_DEVICEMAP;
        /// Write-combined memory: fast for the device to read, slow for the host to read.
        const WRITECOMBINED = cuda_sys::driver::CU_MEMHOSTALLOC_WRITECOMBINED;
    }
}

/// How a stream capture interacts with unsafe API calls from other threads
/// (`CUstreamCaptureMode`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum CaptureMode {
    /// Unsafe calls from any thread are prohibited while capturing (the default).
    #[default]
    Global,
    /// Unsafe calls from this thread only are prohibited.
    ThreadLocal,
    /// Unsafe calls are not prohibited.
    Relaxed,
}

impl CaptureMode {
    pub(crate) fn raw(self) -> CUstreamCaptureMode {
        match self {
            CaptureMode::Global => CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_GLOBAL,
            CaptureMode::ThreadLocal => CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL,
            CaptureMode::Relaxed => CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_RELAXED,
        }
    }
}

bitflags::bitflags! {
    /// Flags for [`Graph::instantiate_with`](crate::Graph::instantiate_with)
    /// (`CUDA_GRAPH_INSTANTIATE_FLAG_*`).
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
    pub struct GraphInstantiateFlags: u64 {
        /// Memory a graph allocates and does not free is freed before each launch, so the graph
        /// can be launched again without freeing it.
        const AUTO_FREE_ON_LAUNCH = CUgraphInstantiate_flags::CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH.0 as u64;
        /// Upload the graph to the device as part of instantiation.
        const UPLOAD = CUgraphInstantiate_flags::CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD.0 as u64;
        /// Make the graph launchable from the device (kernel-side `cudaGraphLaunch`).
        const DEVICE_LAUNCH = CUgraphInstantiate_flags::CUDA_GRAPH_INSTANTIATE_FLAG_DEVICE_LAUNCH.0 as u64;
        /// Launch kernel nodes with the priorities of their launch attributes.
        const USE_NODE_PRIORITY = CUgraphInstantiate_flags::CUDA_GRAPH_INSTANTIATE_FLAG_USE_NODE_PRIORITY.0 as u64;
    }
}
