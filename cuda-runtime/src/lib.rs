//! Safe, RAII types over the CUDA runtime API (`libcudart`), which is found
//! and loaded at run time by `cuda-sys`: the Rust counterpart of
//! `cuda.bindings.runtime`.
//!
//! ```no_run
//! use cuda_runtime::{Device, DeviceMemory, Event, EventFlags, LaunchConfig, Library, Stream};
//!
//! # fn main() -> Result<(), cuda_runtime::Error> {
//! let device = Device::get(0)?;
//! let properties = device.properties()?;
//! println!("{} (sm_{}{})", properties.name, properties.major, properties.minor);
//!
//! // PTX from NVRTC or a file; CUBIN and fatbin images load the same way.
//! # let ptx = "";
//! let library = Library::load(ptx.as_bytes())?;
//! let scale = library.kernel("scale")?;
//!
//! let stream = Stream::new(device)?;
//! let input: Vec<f32> = (0..1024).map(|i| i as f32).collect();
//! let mut data = DeviceMemory::from_slice(device, &input)?;
//! let (start, end) = (Event::new(device, EventFlags::empty())?, Event::new(device, EventFlags::empty())?);
//! start.record(&stream)?;
//! // SAFETY: `scale(float* data, float factor, unsigned n)` writes data[0..n].
//! unsafe { stream.launch(&scale, &LaunchConfig::for_num_elems(1024), (&mut data, 2.0f32, 1024u32))? };
//! end.record(&stream)?;
//! stream.synchronize()?;
//! println!("{:.3} ms", start.elapsed_ms(&end)?);
//! assert_eq!(data.to_vec()?[3], 6.0);
//! # Ok(())
//! # }
//! ```
//!
//! # What is here
//! - Devices: [`device_count`], [`Device`] (typed [`DeviceProperties`],
//!   attributes, memory info, peer access), [`set_device`],
//!   [`device_synchronize`], `unsafe` [`device_reset`]; [`runtime_version`],
//!   [`driver_version`].
//! - Memory: [`DeviceMemory`] (`cudaMalloc`, or stream-ordered
//!   `cudaMallocAsync` freed with `cudaFreeAsync` on its stream), bounds-checked
//!   [`DeviceSlice`] / [`DeviceSliceMut`] views, pinned [`PinnedHostMemory`],
//!   the default [`MemPool`], and raw [`memcpy`] / [`memcpy_async`] /
//!   [`memset_async`] with a typed [`CopyKind`].
//! - Work: [`Stream`] (flags, priority, query, event waits, host callbacks,
//!   capture into a [`Graph`] / [`GraphExec`]), [`Event`] (timing).
//! - Kernels: [`Library`] (`cudaLibraryLoadData` of PTX, CUBIN or fatbin,
//!   checked on the host), [`Kernel`] (`cudaLibraryGetKernel`, parameter
//!   info, attributes, occupancy and occupancy-chosen launch configurations), launches through `cudaLaunchKernel` with
//!   typed arguments ([`Stream::launch`]) or raw ([`launch_raw`]), both
//!   checked against `cudaFuncGetParamInfo` and the device's limits;
//!   driver functions of kernels ([`Kernel::function_on`],
//!   [`function_by_symbol`]: `cudaGetFuncBySymbol`).
//! - Errors: [`get_last_error`], [`peek_at_last_error`], [`Error`].
//!
//! # Asynchronous work and memory
//! Blocking methods ([`DeviceMemory::to_vec`], [`DeviceMemory::copy_from_host`],
//! ...) run on the memory's own stream (its allocation stream, else the
//! legacy default stream) and wait for it, so they never read early or free
//! late. What the host cannot check is `unsafe`: `*_async` copies and fills
//! (the host buffers and the memory must outlive the queued work), kernel
//! launches (the kernel's code), graph replays and capture.
//!
//! # Devices and threads
//! There is no hidden current device deciding where work goes: every
//! [`DeviceMemory`], [`Stream`], [`Event`] and [`PinnedHostMemory`] records
//! the device it was made on and makes that device current
//! (`cudaGetDevice`, then `cudaSetDevice` only if it differs) before each
//! call that needs it, so all of them work from any thread. Objects of
//! different devices used together are an [`Error::WrongDevice`].
//!
//! # Sharing the primary context with cuda-driver
//! The runtime works in each device's primary context, the same context
//! cuda-driver's `Context::primary` retains; so memory, streams and events
//! made by either crate are valid for the other. A `cudaStream_t` is a driver
//! `CUstream` (the same pointer; `cuda-sys` gives them two Rust types, so
//! convert with `.cast()`): see [`Stream::from_raw`] and [`Stream::as_raw`].
//! A device pointer from [`DeviceMemory::as_raw`] is a `CUdeviceptr` after
//! `as u64`. When a thread has a non-primary driver context current, the
//! runtime uses that context for the device instead, as libcudart does.
//!
//! # Errors
//! Runtime failures are [`RuntimeError`]s with the `cudaError_t` code and
//! the runtime's name and description for it; a missing libcudart is an
//! [`Error::Load`] listing every path tried; bad input caught on the host
//! (lengths, launch shapes, malformed images) never reaches the runtime.

#![warn(missing_docs)]
// Where crates documented without this one (docs.rs builds each alone) link its items.
#![doc(html_root_url = "https://docs.rs/cudars-runtime/0.1.0")]

mod copy;
mod device;
mod device_prop12;
mod error;
mod event;
mod graph;
mod launch;
mod library;
mod memory;
mod occupancy;
mod pinned;
mod pool;
mod slice;
mod stream;
mod symbol;
mod version;

pub use copy::{memcpy, memcpy_async, memset_async, CopyKind};
pub use device::{
    current_device, device_count, device_reset, device_synchronize, set_device, Device, DeviceAttribute,
    DeviceProperties,
};
pub use error::{get_last_error, peek_at_last_error, Error, Result, RuntimeError};
pub use event::{Event, EventFlags};
pub use graph::{CaptureMode, Graph, GraphExec};
pub use launch::{launch_raw, KernelArg, KernelArgs};
pub use library::{Kernel, KernelAttributes, Library, ParamInfo};
pub use memory::{DeviceCopy, DeviceMemory};
pub use pinned::{HostAllocFlags, PinnedHostMemory};
pub use pool::MemPool;
pub use slice::{DeviceSlice, DeviceSliceMut};
pub use stream::{Stream, StreamFlags};
pub use symbol::{function_by_symbol, KernelFunction};
pub use version::{driver_version, runtime_version, Version};

/// The grid, block and dynamic shared memory of a launch: one type shared with cuda-driver and
/// cuda-core (defined in `cuda-sys`, the crate both API layers build on).
pub use cuda_sys::LaunchConfig;

/// The process-wide libcudart table (loaded on first use by `cuda-sys`).
pub(crate) fn runtime() -> Result<&'static cuda_sys::Runtime> {
    Ok(cuda_sys::runtime()?)
}
