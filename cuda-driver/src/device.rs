//! CUDA devices: enumeration, identity and attributes.

use std::ffi::c_char;

use cuda_sys::driver::{CUdevice, CUuuid};

use crate::error::{check, Result};
use crate::init::{api, is_no_device};
use crate::Context;

/// A device attribute (`CUdevice_attribute`), for [`Device::attribute`].
pub use cuda_sys::driver::CUdevice_attribute as DeviceAttribute;

/// A CUDA device, by ordinal. Cheap to copy; it owns nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Device {
    raw: CUdevice,
    ordinal: u32,
}

impl Device {
    /// The number of CUDA devices. `Err(Error::Load)` when there is no driver
    /// library; `Ok(0)` when the driver reports no device.
    pub fn count() -> Result<u32> {
        let driver = match api() {
            Ok(driver) => driver,
            Err(error) if is_no_device(&error) => return Ok(0),
            Err(error) => return Err(error),
        };
        let mut count = 0;
        // SAFETY: `count` is a valid out-pointer.
        check(unsafe { driver.cuDeviceGetCount()?(&mut count) })?;
        Ok(count.max(0) as u32)
    }

    /// The device with this ordinal (0 up to `count() - 1`).
    pub fn get(ordinal: u32) -> Result<Device> {
        let driver = api()?;
        let index = i32::try_from(ordinal)
            .map_err(|_| crate::Error::InvalidValue(format!("device ordinal {ordinal} is out of range")))?;
        let mut raw = 0;
        // SAFETY: `raw` is a valid out-pointer.
        check(unsafe { driver.cuDeviceGet()?(&mut raw, index) })?;
        Ok(Device { raw, ordinal })
    }

    /// Every device, in ordinal order.
    pub fn all() -> Result<Vec<Device>> {
        (0..Self::count()?).map(Device::get).collect()
    }

    /// The device's ordinal.
    pub fn ordinal(&self) -> u32 {
        self.ordinal
    }

    /// The driver's handle (`CUdevice`), for calls this crate does not wrap.
    pub fn as_raw(&self) -> CUdevice {
        self.raw
    }

    /// The device's name, e.g. `NVIDIA H200`.
    pub fn name(&self) -> Result<String> {
        let mut name = [0 as c_char; 256];
        // SAFETY: the buffer holds `len` bytes; the driver writes a NUL-terminated name into it.
        check(unsafe { api()?.cuDeviceGetName()?(name.as_mut_ptr(), name.len() as i32, self.raw) })?;
        let bytes: Vec<u8> = name.iter().take_while(|&&c| c != 0).map(|&c| c as u8).collect();
        Ok(String::from_utf8_lossy(&bytes).into_owned())
    }

    /// The device's 16-byte UUID.
    pub fn uuid(&self) -> Result<[u8; 16]> {
        let mut uuid = CUuuid { bytes: [0; 16] };
        // SAFETY: `uuid` is a valid out-pointer.
        check(unsafe { api()?.cuDeviceGetUuid_v2()?(&mut uuid, self.raw) })?;
        Ok(uuid.bytes.map(|b| b as u8))
    }

    /// Total memory on the device, in bytes.
    pub fn total_memory(&self) -> Result<usize> {
        let mut bytes = 0;
        // SAFETY: `bytes` is a valid out-pointer.
        check(unsafe { api()?.cuDeviceTotalMem_v2()?(&mut bytes, self.raw) })?;
        Ok(bytes)
    }

    /// The PCI bus id, e.g. `0000:3B:00.0`.
    pub fn pci_bus_id(&self) -> Result<String> {
        let mut id = [0 as c_char; 64];
        // SAFETY: the buffer holds `len` bytes; the driver writes a NUL-terminated id into it.
        check(unsafe { api()?.cuDeviceGetPCIBusId()?(id.as_mut_ptr(), id.len() as i32, self.raw) })?;
        let bytes: Vec<u8> = id.iter().take_while(|&&c| c != 0).map(|&c| c as u8).collect();
        Ok(String::from_utf8_lossy(&bytes).into_owned())
    }

    /// `(major, minor)` compute capability, e.g. `(9, 0)` for an H100 or H200.
    pub fn compute_capability(&self) -> Result<(u32, u32)> {
        let major = self.attribute(DeviceAttribute::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)?;
        let minor = self.attribute(DeviceAttribute::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)?;
        Ok((major as u32, minor as u32))
    }

    /// Any device attribute, as the driver reports it.
    pub fn attribute(&self, attribute: DeviceAttribute) -> Result<i32> {
        let mut value = 0;
        // SAFETY: `value` is a valid out-pointer; an unknown attribute is an error code, not UB.
        check(unsafe { api()?.cuDeviceGetAttribute()?(&mut value, attribute, self.raw) })?;
        Ok(value)
    }

    /// The largest block dimensions `(x, y, z)`.
    pub fn max_block_dim(&self) -> Result<(u32, u32, u32)> {
        Ok((
            self.attribute(DeviceAttribute::CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X)? as u32,
            self.attribute(DeviceAttribute::CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y)? as u32,
            self.attribute(DeviceAttribute::CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z)? as u32,
        ))
    }

    /// The largest grid dimensions `(x, y, z)`.
    pub fn max_grid_dim(&self) -> Result<(u32, u32, u32)> {
        Ok((
            self.attribute(DeviceAttribute::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X)? as u32,
            self.attribute(DeviceAttribute::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y)? as u32,
            self.attribute(DeviceAttribute::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z)? as u32,
        ))
    }

    /// The primary context of this device, retained (see [`Context::primary`]).
    pub fn primary_context(&self) -> Result<Context> {
        Context::primary(self)
    }

    /// Whether this device can access memory of `peer` directly
    /// (`cuDeviceCanAccessPeer`). A device is not its own peer.
    pub fn can_access_peer(&self, peer: &Device) -> Result<bool> {
        let mut can = 0;
        // SAFETY: `can` is a valid out-pointer.
        check(unsafe { api()?.cuDeviceCanAccessPeer()?(&mut can, self.raw, peer.raw) })?;
        Ok(can != 0)
    }
}

macro_rules! typed_attributes {
    ($($(#[$doc:meta])* $name:ident: $ty:ty = $attribute:ident;)*) => {
        impl Device {
            $(
                $(#[$doc])*
                pub fn $name(&self) -> Result<$ty> {
                    self.attribute(DeviceAttribute::$attribute).map(|v| v as $ty)
                }
            )*
        }
    };
}

macro_rules! bool_attributes {
    ($($(#[$doc:meta])* $name:ident = $attribute:ident;)*) => {
        impl Device {
            $(
                $(#[$doc])*
                pub fn $name(&self) -> Result<bool> {
                    self.attribute(DeviceAttribute::$attribute).map(|v| v != 0)
                }
            )*
        }
    };
}

typed_attributes! {
    /// Most threads in one block.
    max_threads_per_block: u32 = CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK;
    /// Number of streaming multiprocessors.
    multiprocessor_count: u32 = CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT;
    /// Shared memory a block may use without opting in, in bytes.
    max_shared_memory_per_block: u32 = CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK;
    /// Shared memory a block may use after opting in, in bytes.
    max_shared_memory_per_block_optin: u32 = CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN;
    /// Shared memory per multiprocessor, in bytes.
    max_shared_memory_per_multiprocessor: u32 = CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR;
    /// Threads in a warp.
    warp_size: u32 = CU_DEVICE_ATTRIBUTE_WARP_SIZE;
    /// Most resident threads per multiprocessor.
    max_threads_per_multiprocessor: u32 = CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR;
    /// Most resident blocks per multiprocessor.
    max_blocks_per_multiprocessor: u32 = CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR;
    /// 32-bit registers available to a block.
    max_registers_per_block: u32 = CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK;
    /// Constant memory, in bytes.
    total_constant_memory: u32 = CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY;
    /// L2 cache size, in bytes.
    l2_cache_size: u32 = CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE;
    /// Global memory bus width, in bits.
    global_memory_bus_width: u32 = CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH;
    /// Peak memory clock, in kHz.
    memory_clock_rate_khz: u32 = CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE;
    /// Peak clock, in kHz.
    clock_rate_khz: u32 = CU_DEVICE_ATTRIBUTE_CLOCK_RATE;
    /// Copy engines that can overlap copies with kernels.
    async_engine_count: u32 = CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT;
    /// PCI bus number.
    pci_bus: u32 = CU_DEVICE_ATTRIBUTE_PCI_BUS_ID;
    /// PCI device number.
    pci_device: u32 = CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID;
    /// PCI domain number.
    pci_domain: u32 = CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID;
}

bool_attributes! {
    /// Kernels of one context may run concurrently.
    concurrent_kernels = CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS;
    /// The device shares one address space with the host.
    unified_addressing = CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING;
    /// Pinned host memory can be mapped into the device's address space.
    can_map_host_memory = CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY;
    /// Managed (unified) memory is supported.
    managed_memory = CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY;
    /// Cooperative launches are supported.
    cooperative_launch = CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH;
    /// Thread block clusters are supported.
    cluster_launch = CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH;
    /// `cuMemAllocAsync` and memory pools are supported.
    memory_pools_supported = CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED;
    /// Stream priorities are supported.
    stream_priorities_supported = CU_DEVICE_ATTRIBUTE_STREAM_PRIORITIES_SUPPORTED;
    /// ECC is on.
    ecc_enabled = CU_DEVICE_ATTRIBUTE_ECC_ENABLED;
    /// The device is integrated with the host memory system.
    integrated = CU_DEVICE_ATTRIBUTE_INTEGRATED;
}
