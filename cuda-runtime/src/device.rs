//! Devices: counting, selecting, synchronising, attributes and properties.

use std::ffi::{c_int, CStr};
use std::mem::MaybeUninit;

use cuda_sys::runtime::cudaDeviceProp;

use crate::error::check;
use crate::{runtime, Error, Result};

/// A device attribute for [`Device::attribute`] (`cudaDeviceAttr`).
pub use cuda_sys::runtime::cudaDeviceAttr as DeviceAttribute;

/// The number of devices the runtime sees (`cudaGetDeviceCount`).
///
/// Without a driver this is the runtime's typed error
/// (`cudaErrorInsufficientDriver` or `cudaErrorNoDevice`), never a panic.
pub fn device_count() -> Result<u32> {
    let runtime = runtime()?;
    let mut count: c_int = 0;
    // SAFETY: `count` is a valid out-pointer.
    check(runtime, unsafe { runtime.cudaGetDeviceCount()?(&mut count) })?;
    Ok(u32::try_from(count).unwrap_or(0))
}

/// Makes `device` current on the calling thread (`cudaSetDevice`): later
/// raw runtime calls on this thread use its primary context. The types of
/// this crate do not depend on it; they select their own device.
pub fn set_device(device: Device) -> Result<()> {
    let runtime = runtime()?;
    // SAFETY: the ordinal was checked by `Device::get`; the call takes no pointers.
    check(runtime, unsafe { runtime.cudaSetDevice()?(device.0) })
}

/// The calling thread's current device (`cudaGetDevice`).
pub fn current_device() -> Result<Device> {
    let runtime = runtime()?;
    let mut ordinal: c_int = 0;
    // SAFETY: `ordinal` is a valid out-pointer.
    check(runtime, unsafe { runtime.cudaGetDevice()?(&mut ordinal) })?;
    Ok(Device(ordinal))
}

/// Waits for all work on the calling thread's current device
/// (`cudaDeviceSynchronize`). [`Device::synchronize`] names the device.
pub fn device_synchronize() -> Result<()> {
    let runtime = runtime()?;
    // SAFETY: takes no arguments.
    check(runtime, unsafe { runtime.cudaDeviceSynchronize()?() })
}

/// Destroys `device`'s primary context and every resource in it
/// (`cudaDeviceReset`).
///
/// # Safety
/// Every allocation, stream, event and loaded library of this process on
/// that device becomes invalid, including those held by live
/// [`DeviceMemory`](crate::DeviceMemory), [`Stream`](crate::Stream),
/// [`Event`](crate::Event) and [`Library`](crate::Library) values (and by
/// cuda-driver objects in the primary context). The caller must ensure none
/// of them is used or dropped afterwards, on any thread.
pub unsafe fn device_reset(device: Device) -> Result<()> {
    let runtime = runtime()?;
    make_current(runtime, device.0)?;
    // SAFETY: the caller guarantees no live object of this device is used afterwards.
    check(runtime, unsafe { runtime.cudaDeviceReset()?() })
}

/// Makes `ordinal` the calling thread's device unless it already is. Cheap:
/// `cudaGetDevice` reads thread-local state.
#[inline]
pub(crate) fn make_current(runtime: &cuda_sys::Runtime, ordinal: c_int) -> Result<()> {
    let mut current: c_int = -1;
    // SAFETY: `current` is a valid out-pointer.
    let code = unsafe { runtime.cudaGetDevice()?(&mut current) };
    if code == cuda_sys::runtime::cudaError_t::cudaSuccess && current == ordinal {
        return Ok(());
    }
    // SAFETY: the call takes no pointers; a bad ordinal is an error code.
    check(runtime, unsafe { runtime.cudaSetDevice()?(ordinal) })
}

/// A device by ordinal, as the runtime numbers them (after
/// `CUDA_VISIBLE_DEVICES`). Same numbering as cuda-driver's `Device`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Device(c_int);

impl Device {
    /// The device with this ordinal; an error if there is no such device.
    pub fn get(ordinal: u32) -> Result<Device> {
        let count = device_count()?;
        if ordinal >= count {
            return Err(Error::InvalidValue(format!(
                "device {ordinal} does not exist ({count} devices)"
            )));
        }
        Ok(Device(ordinal as c_int))
    }

    /// The ordinal.
    pub fn ordinal(self) -> u32 {
        self.0 as u32
    }

    pub(crate) fn raw_ordinal(self) -> c_int {
        self.0
    }

    /// Trusts an ordinal the runtime returned.
    pub(crate) fn from_runtime(ordinal: c_int) -> Device {
        Device(ordinal)
    }

    /// One attribute (`cudaDeviceGetAttribute`).
    pub fn attribute(self, attribute: DeviceAttribute) -> Result<i32> {
        let runtime = runtime()?;
        let mut value: c_int = 0;
        // SAFETY: `value` is a valid out-pointer; bad attributes are error codes.
        check(runtime, unsafe {
            runtime.cudaDeviceGetAttribute()?(&mut value, attribute, self.0)
        })?;
        Ok(value)
    }

    /// Every property the runtime reports (`cudaGetDeviceProperties`), typed. A CUDA 12
    /// runtime's struct, of another layout, is read field by field into CUDA 13's.
    pub fn properties(self) -> Result<DeviceProperties> {
        let runtime = runtime()?;
        let raw = match runtime.library_version() {
            // A CUDA 12 runtime fills CUDA 12's layout of the struct.
            Some(version) if version < 13000 => crate::device_prop12::properties(runtime, self.0)?,
            _ => {
                let mut raw = MaybeUninit::<cudaDeviceProp>::zeroed();
                // SAFETY: `raw` is a writable `cudaDeviceProp` of the headers' layout, the one a
                // CUDA 13 runtime writes.
                check(runtime, unsafe {
                    runtime.cudaGetDeviceProperties()?(raw.as_mut_ptr(), self.0)
                })?;
                // SAFETY: zero is valid for every field (integers and arrays), and the call filled it.
                unsafe { raw.assume_init() }
            }
        };
        // CUDA 13 removed the clock fields from `cudaDeviceProp`; they remain attributes.
        let clock_rate_khz = self
            .attribute(DeviceAttribute::cudaDevAttrClockRate)
            .ok()
            .map(non_negative);
        let memory_clock_rate_khz = self
            .attribute(DeviceAttribute::cudaDevAttrMemoryClockRate)
            .ok()
            .map(non_negative);
        Ok(DeviceProperties::from_raw(raw, clock_rate_khz, memory_clock_rate_khz))
    }

    /// Waits for all work on this device (`cudaDeviceSynchronize` with this device current).
    pub fn synchronize(self) -> Result<()> {
        let runtime = runtime()?;
        make_current(runtime, self.0)?;
        // SAFETY: takes no arguments.
        check(runtime, unsafe { runtime.cudaDeviceSynchronize()?() })
    }

    /// Free and total device memory in bytes (`cudaMemGetInfo`).
    pub fn memory_info(self) -> Result<(usize, usize)> {
        let runtime = runtime()?;
        make_current(runtime, self.0)?;
        let (mut free, mut total) = (0usize, 0usize);
        // SAFETY: both out-pointers are valid locals.
        check(runtime, unsafe { runtime.cudaMemGetInfo()?(&mut free, &mut total) })?;
        Ok((free, total))
    }

    /// The stream priorities this device allows, as `(least, greatest)`
    /// (`cudaDeviceGetStreamPriorityRange`); greater priority is the lower number.
    pub fn stream_priority_range(self) -> Result<(i32, i32)> {
        let runtime = runtime()?;
        make_current(runtime, self.0)?;
        let (mut least, mut greatest) = (0, 0);
        // SAFETY: both out-pointers are valid locals.
        check(runtime, unsafe {
            runtime.cudaDeviceGetStreamPriorityRange()?(&mut least, &mut greatest)
        })?;
        Ok((least, greatest))
    }

    /// Lets kernels and copies on this device address `peer`'s memory
    /// (`cudaDeviceEnablePeerAccess` with this device current). Enabling it
    /// twice is not an error.
    pub fn enable_peer_access(self, peer: Device) -> Result<()> {
        let runtime = runtime()?;
        make_current(runtime, self.0)?;
        // SAFETY: the call takes no pointers; flags must be 0.
        let code = unsafe { runtime.cudaDeviceEnablePeerAccess()?(peer.0, 0) };
        if code == cuda_sys::runtime::cudaError_t::cudaErrorPeerAccessAlreadyEnabled {
            // That code is also recorded as the thread's last error; clear it.
            // SAFETY: takes no arguments.
            let _ = unsafe { runtime.cudaGetLastError()?() };
            return Ok(());
        }
        check(runtime, code)
    }

    /// Whether this device can address `peer`'s memory (`cudaDeviceCanAccessPeer`).
    pub fn can_access_peer(self, peer: Device) -> Result<bool> {
        let runtime = runtime()?;
        let mut can: c_int = 0;
        // SAFETY: `can` is a valid out-pointer.
        check(runtime, unsafe {
            runtime.cudaDeviceCanAccessPeer()?(&mut can, self.0, peer.0)
        })?;
        Ok(can != 0)
    }
}

fn non_negative(value: c_int) -> u32 {
    u32::try_from(value).unwrap_or(0)
}

/// What `cudaGetDeviceProperties` reports, as Rust types. Fields the
/// runtime leaves out are in [`DeviceProperties::raw`].
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct DeviceProperties {
    /// The marketing name, e.g. `"NVIDIA H200"`.
    pub name: String,
    /// The device's UUID.
    pub uuid: [u8; 16],
    /// Compute capability major version.
    pub major: u32,
    /// Compute capability minor version.
    pub minor: u32,
    /// Global memory in bytes.
    pub total_global_mem: usize,
    /// Constant memory in bytes.
    pub total_const_mem: usize,
    /// Static shared memory available to one block, in bytes.
    pub shared_mem_per_block: usize,
    /// Shared memory one block can opt in to, in bytes.
    pub shared_mem_per_block_optin: usize,
    /// Shared memory of one multiprocessor, in bytes.
    pub shared_mem_per_multiprocessor: usize,
    /// 32-bit registers available to one block.
    pub regs_per_block: u32,
    /// 32-bit registers of one multiprocessor.
    pub regs_per_multiprocessor: u32,
    /// Threads per warp.
    pub warp_size: u32,
    /// Largest block, in threads.
    pub max_threads_per_block: u32,
    /// Largest block extent per dimension.
    pub max_threads_dim: [u32; 3],
    /// Largest grid extent per dimension.
    pub max_grid_size: [u32; 3],
    /// Multiprocessors on the device.
    pub multiprocessor_count: u32,
    /// Resident threads per multiprocessor.
    pub max_threads_per_multiprocessor: u32,
    /// Resident blocks per multiprocessor.
    pub max_blocks_per_multiprocessor: u32,
    /// Peak core clock in kHz, where the driver reports it (an attribute since CUDA 13).
    pub clock_rate_khz: Option<u32>,
    /// Peak memory clock in kHz, where the driver reports it (an attribute since CUDA 13).
    pub memory_clock_rate_khz: Option<u32>,
    /// Memory bus width in bits.
    pub memory_bus_width: u32,
    /// L2 cache in bytes.
    pub l2_cache_size: usize,
    /// Largest persisting L2 cache set-aside, in bytes.
    pub persisting_l2_cache_max_size: usize,
    /// Pitch limit of `cudaMallocPitch`, in bytes.
    pub mem_pitch: usize,
    /// Alignment needed for textures, in bytes.
    pub texture_alignment: usize,
    /// PCI domain.
    pub pci_domain_id: u32,
    /// PCI bus.
    pub pci_bus_id: u32,
    /// PCI device (slot).
    pub pci_device_id: u32,
    /// Copy engines that can overlap with kernels.
    pub async_engine_count: u32,
    /// An integrated (shared memory) GPU.
    pub integrated: bool,
    /// Can map pinned host memory into the device's address space.
    pub can_map_host_memory: bool,
    /// Can run kernels concurrently.
    pub concurrent_kernels: bool,
    /// ECC is on.
    pub ecc_enabled: bool,
    /// Shares one address space with the host.
    pub unified_addressing: bool,
    /// Supports managed memory.
    pub managed_memory: bool,
    /// Host and device can access managed memory concurrently.
    pub concurrent_managed_access: bool,
    /// Can access pageable host memory.
    pub pageable_memory_access: bool,
    /// Supports cooperative launches.
    pub cooperative_launch: bool,
    /// Supports thread block clusters.
    pub cluster_launch: bool,
    /// Supports stream priorities.
    pub stream_priorities_supported: bool,
    /// Supports `cudaMallocAsync` memory pools.
    pub memory_pools_supported: bool,
    /// On a multi-GPU board.
    pub is_multi_gpu_board: bool,
    /// The runtime's structure as returned.
    pub raw: cudaDeviceProp,
}

impl DeviceProperties {
    fn from_raw(raw: cudaDeviceProp, clock_rate_khz: Option<u32>, memory_clock_rate_khz: Option<u32>) -> Self {
        let dims = |d: [c_int; 3]| d.map(non_negative);
        let flag = |v: c_int| v != 0;
        let size = |v: c_int| usize::try_from(v).unwrap_or(0);
        Self {
            name: c_chars_to_string(&raw.name),
            uuid: raw.uuid.bytes.map(|b| b as u8),
            major: non_negative(raw.major),
            minor: non_negative(raw.minor),
            total_global_mem: raw.totalGlobalMem,
            total_const_mem: raw.totalConstMem,
            shared_mem_per_block: raw.sharedMemPerBlock,
            shared_mem_per_block_optin: raw.sharedMemPerBlockOptin,
            shared_mem_per_multiprocessor: raw.sharedMemPerMultiprocessor,
            regs_per_block: non_negative(raw.regsPerBlock),
            regs_per_multiprocessor: non_negative(raw.regsPerMultiprocessor),
            warp_size: non_negative(raw.warpSize),
            max_threads_per_block: non_negative(raw.maxThreadsPerBlock),
            max_threads_dim: dims(raw.maxThreadsDim),
            max_grid_size: dims(raw.maxGridSize),
            multiprocessor_count: non_negative(raw.multiProcessorCount),
            max_threads_per_multiprocessor: non_negative(raw.maxThreadsPerMultiProcessor),
            max_blocks_per_multiprocessor: non_negative(raw.maxBlocksPerMultiProcessor),
            clock_rate_khz,
            memory_clock_rate_khz,
            memory_bus_width: non_negative(raw.memoryBusWidth),
            l2_cache_size: size(raw.l2CacheSize),
            persisting_l2_cache_max_size: size(raw.persistingL2CacheMaxSize),
            mem_pitch: raw.memPitch,
            texture_alignment: raw.textureAlignment,
            pci_domain_id: non_negative(raw.pciDomainID),
            pci_bus_id: non_negative(raw.pciBusID),
            pci_device_id: non_negative(raw.pciDeviceID),
            async_engine_count: non_negative(raw.asyncEngineCount),
            integrated: flag(raw.integrated),
            can_map_host_memory: flag(raw.canMapHostMemory),
            concurrent_kernels: flag(raw.concurrentKernels),
            ecc_enabled: flag(raw.ECCEnabled),
            unified_addressing: flag(raw.unifiedAddressing),
            managed_memory: flag(raw.managedMemory),
            concurrent_managed_access: flag(raw.concurrentManagedAccess),
            pageable_memory_access: flag(raw.pageableMemoryAccess),
            cooperative_launch: flag(raw.cooperativeLaunch),
            cluster_launch: flag(raw.clusterLaunch),
            stream_priorities_supported: flag(raw.streamPrioritiesSupported),
            memory_pools_supported: flag(raw.memoryPoolsSupported),
            is_multi_gpu_board: flag(raw.isMultiGpuBoard),
            raw,
        }
    }

    /// `(major, minor)`.
    pub fn compute_capability(&self) -> (u32, u32) {
        (self.major, self.minor)
    }
}

/// The text up to the first NUL (or the whole array if none).
fn c_chars_to_string(chars: &[std::ffi::c_char]) -> String {
    let bytes: Vec<u8> = chars.iter().map(|&c| c as u8).collect();
    match CStr::from_bytes_until_nul(&bytes) {
        Ok(text) => text.to_string_lossy().into_owned(),
        Err(_) => String::from_utf8_lossy(&bytes).into_owned(),
    }
}
