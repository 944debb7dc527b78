//! [`Device`]: a GPU together with its primary context, the shape of `cuda.core.Device`.

use std::cell::RefCell;
use std::fmt;

use cuda_driver::{Context, DeviceAttribute, Event, EventFlags, Stream, StreamFlags};

use crate::arch::Arch;
use crate::error::Result;
#[cfg(feature = "array")]
use crate::MemoryPool;

thread_local! {
    /// The device [`Device::set_current`] last chose on this thread.
    static CURRENT: RefCell<Option<Device>> = const { RefCell::new(None) };
}

/// A GPU and its primary context. Cheap to clone. Everything made from it (streams, events,
/// kernels) belongs to its context.
///
/// ```no_run
/// # fn main() -> cuda_core::Result<()> {
/// let device = cuda_core::Device::new(0)?;
/// device.set_current()?;
/// println!("{} ({}), {} SMs", device.name()?, device.arch()?, device.properties()?.multiprocessor_count);
/// let stream = device.create_stream()?;
/// stream.synchronize()?;
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct Device {
    device: cuda_driver::Device,
    context: Context,
}

/// Commonly needed properties of a device, read in one call.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct DeviceProperties {
    /// The device's name.
    pub name: String,
    /// Compute capability `(major, minor)`.
    pub compute_capability: (u32, u32),
    /// Global memory in bytes.
    pub total_memory: usize,
    /// Streaming multiprocessors.
    pub multiprocessor_count: u32,
    /// Threads in a warp.
    pub warp_size: u32,
    /// Threads a block may have.
    pub max_threads_per_block: u32,
    /// Threads resident per multiprocessor.
    pub max_threads_per_multiprocessor: u32,
    /// Static shared memory a block may use, in bytes.
    pub max_shared_memory_per_block: u32,
    /// Shared memory a block may use after opting in, in bytes.
    pub max_shared_memory_per_block_optin: u32,
    /// 32-bit registers a block may use.
    pub max_registers_per_block: u32,
    /// L2 cache in bytes.
    pub l2_cache_size: u32,
    /// Whether cooperative launches (grid-wide sync) are supported.
    pub cooperative_launch: bool,
    /// Whether thread-block clusters are supported.
    pub cluster_launch: bool,
}

impl Device {
    /// Device `ordinal` with its primary context (retained now, released when the last clone
    /// and the last object made from it are gone).
    pub fn new(ordinal: u32) -> Result<Device> {
        let device = cuda_driver::Device::get(ordinal)?;
        let context = Context::primary(&device)?;
        Ok(Device { device, context })
    }

    /// The device [`set_current`](Self::set_current) last chose on this thread, else device 0.
    pub fn current() -> Result<Device> {
        match CURRENT.with(|current| current.borrow().clone()) {
            Some(device) => Ok(device),
            None => Device::new(0),
        }
    }

    /// The number of devices.
    pub fn count() -> Result<u32> {
        Ok(cuda_driver::Device::count()?)
    }

    /// Makes this device's primary context current on the calling thread, and this device the
    /// one [`Device::current`] returns there.
    pub fn set_current(&self) -> Result<()> {
        self.context.set_current()?;
        CURRENT.with(|current| *current.borrow_mut() = Some(self.clone()));
        Ok(())
    }

    /// The ordinal.
    pub fn ordinal(&self) -> u32 {
        self.device.ordinal()
    }

    /// The device's name.
    pub fn name(&self) -> Result<String> {
        Ok(self.device.name()?)
    }

    /// The device's UUID.
    pub fn uuid(&self) -> Result<[u8; 16]> {
        Ok(self.device.uuid()?)
    }

    /// Compute capability `(major, minor)`.
    pub fn compute_capability(&self) -> Result<(u32, u32)> {
        Ok(self.device.compute_capability()?)
    }

    /// The device's architecture, e.g. `sm_90` (compares equal to the string `"sm_90"`).
    pub fn arch(&self) -> Result<Arch> {
        let (major, minor) = self.compute_capability()?;
        Ok(Arch::from_compute_capability(major, minor))
    }

    /// One device attribute (`cuDeviceGetAttribute`).
    pub fn attribute(&self, attribute: DeviceAttribute) -> Result<i32> {
        Ok(self.device.attribute(attribute)?)
    }

    /// Commonly needed properties.
    pub fn properties(&self) -> Result<DeviceProperties> {
        let count = |attribute| -> Result<u32> { Ok(u32::try_from(self.attribute(attribute)?).unwrap_or(0)) };
        let flag = |attribute| -> Result<bool> { Ok(self.attribute(attribute)? != 0) };
        Ok(DeviceProperties {
            name: self.name()?,
            compute_capability: self.compute_capability()?,
            total_memory: self.device.total_memory()?,
            multiprocessor_count: count(DeviceAttribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?,
            warp_size: count(DeviceAttribute::CU_DEVICE_ATTRIBUTE_WARP_SIZE)?,
            max_threads_per_block: count(DeviceAttribute::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK)?,
            max_threads_per_multiprocessor: count(DeviceAttribute::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR)?,
            max_shared_memory_per_block: count(DeviceAttribute::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK)?,
            max_shared_memory_per_block_optin: count(
                DeviceAttribute::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
            )?,
            max_registers_per_block: count(DeviceAttribute::CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK)?,
            l2_cache_size: count(DeviceAttribute::CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE)?,
            cooperative_launch: flag(DeviceAttribute::CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH)?,
            cluster_launch: flag(DeviceAttribute::CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH)?,
        })
    }

    /// The primary context everything made from this device belongs to.
    pub fn context(&self) -> &Context {
        &self.context
    }

    /// The `cuda-driver` device.
    pub fn as_driver_device(&self) -> &cuda_driver::Device {
        &self.device
    }

    /// The process-wide memory pool of this device's context, the one [`DeviceArray`]s made on
    /// its streams allocate from: CuPy's `cp.get_default_memory_pool()` (which picks the current
    /// device; here the device is named). The same as
    /// [`MemoryPool::for_context`]`(self.context())`.
    ///
    /// [`DeviceArray`]: crate::DeviceArray
    #[doc(alias = "get_default_memory_pool")]
    #[cfg(feature = "array")]
    pub fn memory_pool(&self) -> MemoryPool {
        MemoryPool::for_context(&self.context)
    }

    /// A new stream that does not synchronise with the legacy default stream.
    pub fn create_stream(&self) -> Result<Stream> {
        Ok(Stream::with_options(&self.context, StreamFlags::NON_BLOCKING, 0)?)
    }

    /// A graph builder on a new stream of the device (cuda.core's
    /// `Device.create_graph_builder()`); see [`GraphBuilder`](crate::GraphBuilder).
    pub fn create_graph_builder(&self) -> Result<crate::GraphBuilder<'static>> {
        Ok(crate::GraphBuilder::new(&self.create_stream()?))
    }

    /// A new event that records time (for [`Event::elapsed_ms`]).
    pub fn create_event(&self) -> Result<Event> {
        Ok(Event::new(&self.context, EventFlags::DEFAULT)?)
    }

    /// A new event with the given flags.
    pub fn create_event_with(&self, flags: EventFlags) -> Result<Event> {
        Ok(Event::new(&self.context, flags)?)
    }

    /// Waits for all work on the device's context.
    pub fn sync(&self) -> Result<()> {
        Ok(self.context.synchronize()?)
    }
}

impl PartialEq for Device {
    fn eq(&self, other: &Self) -> bool {
        self.context == other.context
    }
}

impl Eq for Device {}

impl fmt::Debug for Device {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Device").field("ordinal", &self.ordinal()).finish()
    }
}

/// The architecture [`ProgramOptions::arch`](crate::ProgramOptions::arch) defaults to: that of
/// [`Device::current`] (read without retaining a context). `Err` says why there is none.
pub(crate) fn current_arch() -> Result<Arch, String> {
    let from_thread = CURRENT.with(|current| current.borrow().as_ref().map(|d| d.device));
    let device = match from_thread {
        Some(device) => device,
        None => cuda_driver::Device::get(0).map_err(|e| format!("there is no CUDA device ({e})"))?,
    };
    let (major, minor) = device
        .compute_capability()
        .map_err(|e| format!("the device's compute capability is unknown ({e})"))?;
    Ok(Arch::from_compute_capability(major, minor))
}
