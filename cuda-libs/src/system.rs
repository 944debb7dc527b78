//! The system as NVML (`libnvidia-ml.so.1`, part of the driver package) reports it: driver and
//! CUDA versions, the devices with their names, UUIDs, PCI addresses, memory, utilisation,
//! temperature, clocks and power, the topology and peer-to-peer status between two devices,
//! NVLink states, and the processes using a device.
//!
//! ```no_run
//! use cuda_libs::system::System;
//!
//! # fn main() -> cuda_libs::Result<()> {
//! let system = System::new()?;
//! println!("driver {}", system.driver_version()?);
//! for device in system.devices()? {
//!     let memory = device.memory()?;
//!     println!("{} {}: {} of {} bytes used", device.name()?, device.uuid()?, memory.used, memory.total);
//! }
//! # Ok(())
//! # }
//! ```
//!
//! NVML numbers devices in PCI bus order, which is CUDA's order only with
//! `CUDA_DEVICE_ORDER=PCI_BUS_ID`; match devices by UUID or PCI bus id rather than by index.
//! Without the library (no NVIDIA driver), [`System::new`] is [`Error::Load`]; a function the
//! installed library lacks is [`Error::Symbol`]; a query the device does not support is
//! [`Error::Nvml`] with [`NvmlCode::NotSupported`].

use std::ffi::{c_char, c_uint, CStr};
use std::marker::PhantomData;

use cuda_sys::nvml::{
    nvmlClockType_enum, nvmlDevice_t, nvmlEnableState_enum, nvmlGpuLevel_enum, nvmlGpuP2PCapsIndex_enum,
    nvmlGpuP2PStatus_enum, nvmlMemory_t, nvmlPciInfo_t, nvmlProcessInfo_t, nvmlReturn_enum,
    nvmlTemperatureSensors_enum, nvmlUtilization_t, NVML_DEVICE_NAME_V2_BUFFER_SIZE, NVML_DEVICE_UUID_V2_BUFFER_SIZE,
    NVML_NVLINK_MAX_LINKS, NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE, NVML_SYSTEM_NVML_VERSION_BUFFER_SIZE,
};

use crate::error::{Error, Result};

/// An NVML status code (`nvmlReturn_t`), by name where it is one callers act on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum NvmlCode {
    /// The device or driver does not support the query (`NVML_ERROR_NOT_SUPPORTED`).
    NotSupported,
    /// The caller may not make the query (`NVML_ERROR_NO_PERMISSION`).
    NoPermission,
    /// The device fell off the bus or is lost (`NVML_ERROR_GPU_IS_LOST`).
    GpuIsLost,
    /// Any other code (`nvmlReturn_t` value).
    Other(u32),
}

impl NvmlCode {
    fn from_raw(code: nvmlReturn_enum) -> NvmlCode {
        match code {
            nvmlReturn_enum::NVML_ERROR_NOT_SUPPORTED => NvmlCode::NotSupported,
            nvmlReturn_enum::NVML_ERROR_NO_PERMISSION => NvmlCode::NoPermission,
            nvmlReturn_enum::NVML_ERROR_GPU_IS_LOST => NvmlCode::GpuIsLost,
            other => NvmlCode::Other(other.0),
        }
    }

    /// The `nvmlReturn_t` value.
    pub fn raw(self) -> u32 {
        match self {
            NvmlCode::NotSupported => nvmlReturn_enum::NVML_ERROR_NOT_SUPPORTED.0,
            NvmlCode::NoPermission => nvmlReturn_enum::NVML_ERROR_NO_PERMISSION.0,
            NvmlCode::GpuIsLost => nvmlReturn_enum::NVML_ERROR_GPU_IS_LOST.0,
            NvmlCode::Other(value) => value,
        }
    }
}

/// Turns an NVML status into a `Result`, with NVML's description of a failure.
fn check(function: &'static str, code: nvmlReturn_enum) -> Result<()> {
    if code == nvmlReturn_enum::NVML_SUCCESS {
        return Ok(());
    }
    let message = cuda_sys::nvml()
        .ok()
        .and_then(|nvml| nvml.nvmlErrorString().ok())
        // SAFETY: `nvmlErrorString` takes any code and returns a static NUL-terminated string
        // (or null, checked below).
        .map(|describe| unsafe { describe(code) })
        .filter(|text| !text.is_null())
        // SAFETY: non-null, static and NUL-terminated (above).
        .map(|text| unsafe { CStr::from_ptr(text) }.to_string_lossy().into_owned())
        .unwrap_or_else(|| format!("nvmlReturn_t {}", code.0));
    Err(Error::Nvml {
        function,
        code: NvmlCode::from_raw(code),
        message,
    })
}

/// The text NVML wrote into `buffer` (up to its first NUL).
fn text(buffer: &[c_char]) -> String {
    let bytes: Vec<u8> = buffer.iter().take_while(|&&c| c != 0).map(|&c| c as u8).collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

/// NVML, initialised (`nvmlInit_v2`) for as long as this value lives (`nvmlShutdown` on drop;
/// NVML counts initialisations, so several may live at once).
pub struct System {
    nvml: &'static cuda_sys::Nvml,
}

impl System {
    /// Loads NVML and initialises it. [`Error::Load`] (naming what was tried and
    /// `CUDA_NVML_LIBRARY`) where the library is absent.
    pub fn new() -> Result<System> {
        let nvml = cuda_sys::nvml()?;
        // SAFETY: initialisation takes no arguments; it may be called from any thread.
        check("nvmlInit_v2", unsafe { nvml.nvmlInit_v2()?() })?;
        Ok(System { nvml })
    }

    /// The driver's version, as `nvidia-smi` prints it (`"580.65.06"`).
    pub fn driver_version(&self) -> Result<String> {
        let mut buffer = [0 as c_char; NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE as usize];
        // SAFETY: the buffer holds the length passed.
        check("nvmlSystemGetDriverVersion", unsafe {
            self.nvml.nvmlSystemGetDriverVersion()?(buffer.as_mut_ptr(), buffer.len() as c_uint)
        })?;
        Ok(text(&buffer))
    }

    /// NVML's own version (`"13.580.65.06"`).
    pub fn nvml_version(&self) -> Result<String> {
        let mut buffer = [0 as c_char; NVML_SYSTEM_NVML_VERSION_BUFFER_SIZE as usize];
        // SAFETY: the buffer holds the length passed.
        check("nvmlSystemGetNVMLVersion", unsafe {
            self.nvml.nvmlSystemGetNVMLVersion()?(buffer.as_mut_ptr(), buffer.len() as c_uint)
        })?;
        Ok(text(&buffer))
    }

    /// The CUDA version the driver supports, as `major * 1000 + minor * 10` (13000 for 13.0).
    pub fn cuda_driver_version(&self) -> Result<i32> {
        let mut version = 0;
        // SAFETY: `version` is a valid out-pointer.
        check("nvmlSystemGetCudaDriverVersion_v2", unsafe {
            self.nvml.nvmlSystemGetCudaDriverVersion_v2()?(&mut version)
        })?;
        Ok(version)
    }

    /// The number of devices NVML sees (all of the machine's, whatever `CUDA_VISIBLE_DEVICES` says).
    pub fn device_count(&self) -> Result<u32> {
        let mut count = 0;
        // SAFETY: `count` is a valid out-pointer.
        check("nvmlDeviceGetCount_v2", unsafe {
            self.nvml.nvmlDeviceGetCount_v2()?(&mut count)
        })?;
        Ok(count)
    }

    /// Device `index` in NVML's (PCI bus) order; an index past the last is [`Error::InvalidValue`].
    pub fn device(&self, index: u32) -> Result<NvmlDevice<'_>> {
        let count = self.device_count()?;
        if index >= count {
            return Err(Error::InvalidValue(format!(
                "NVML device {index} does not exist: there are {count}"
            )));
        }
        let mut raw = std::ptr::null_mut();
        // SAFETY: `raw` is a valid out-pointer; the index is in range.
        check("nvmlDeviceGetHandleByIndex_v2", unsafe {
            self.nvml.nvmlDeviceGetHandleByIndex_v2()?(index, &mut raw)
        })?;
        Ok(NvmlDevice {
            raw,
            index,
            nvml: self.nvml,
            _system: PhantomData,
        })
    }

    /// Every device, in NVML's order.
    pub fn devices(&self) -> Result<Vec<NvmlDevice<'_>>> {
        (0..self.device_count()?).map(|index| self.device(index)).collect()
    }

    /// The device whose UUID is `uuid`, as NVML and `nvidia-smi` write it (`"GPU-8c3e..."`).
    pub fn device_by_uuid(&self, uuid: &str) -> Result<NvmlDevice<'_>> {
        let text = std::ffi::CString::new(uuid)
            .map_err(|_| Error::InvalidValue(format!("the UUID {uuid:?} holds a NUL byte")))?;
        let mut raw = std::ptr::null_mut();
        // SAFETY: `text` is NUL-terminated and outlives the call; `raw` is a valid out-pointer.
        check("nvmlDeviceGetHandleByUUID", unsafe {
            self.nvml.nvmlDeviceGetHandleByUUID()?(text.as_ptr(), &mut raw)
        })?;
        let mut index = 0;
        // SAFETY: `raw` is the device NVML just returned; `index` is a valid out-pointer.
        check("nvmlDeviceGetIndex", unsafe {
            self.nvml.nvmlDeviceGetIndex()?(raw, &mut index)
        })?;
        Ok(NvmlDevice {
            raw,
            index,
            nvml: self.nvml,
            _system: PhantomData,
        })
    }

    /// The NVML device that is CUDA's `device` (matched by UUID: NVML's order is PCI bus order,
    /// CUDA's need not be, and `CUDA_VISIBLE_DEVICES` renumbers CUDA's).
    pub fn device_of(&self, device: &cuda_driver::Device) -> Result<NvmlDevice<'_>> {
        self.device_by_uuid(&uuid_text(&device.uuid()?))
    }
}

/// A CUDA UUID as NVML writes it: `GPU-` and the 16 bytes in groups of 4, 2, 2, 2 and 6.
fn uuid_text(bytes: &[u8; 16]) -> String {
    let hex = |range: std::ops::Range<usize>| bytes[range].iter().map(|b| format!("{b:02x}")).collect::<String>();
    format!(
        "GPU-{}-{}-{}-{}-{}",
        hex(0..4),
        hex(4..6),
        hex(6..8),
        hex(8..10),
        hex(10..16)
    )
}

impl Drop for System {
    fn drop(&mut self) {
        // SAFETY: this value initialised NVML once; shutting down once balances it. A failure
        // leaves NVML initialised, which only keeps its resources until the process ends.
        if let Ok(shutdown) = self.nvml.nvmlShutdown() {
            let _ = unsafe { shutdown() };
        }
    }
}

impl std::fmt::Debug for System {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("System").finish_non_exhaustive()
    }
}

// SAFETY: NVML is thread-safe (its documentation says every function may be called from any
// thread); the value only holds the library's table.
unsafe impl Send for System {}
// SAFETY: as above.
unsafe impl Sync for System {}

/// Device memory as NVML counts it, in bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct MemoryInfo {
    /// Installed memory.
    pub total: u64,
    /// Memory not allocated.
    pub free: u64,
    /// Memory allocated (by any process, and by the driver).
    pub used: u64,
}

/// How busy a device was over NVML's last sample period, in percent.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Utilization {
    /// Of the time, how much one or more kernels ran.
    pub gpu: u32,
    /// Of the time, how much device memory was read or written.
    pub memory: u32,
}

/// A device's clocks, in MHz.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Clocks {
    /// The graphics clock.
    pub graphics: u32,
    /// The streaming multiprocessors' clock.
    pub sm: u32,
    /// The memory clock.
    pub memory: u32,
}

/// The closest link between two devices (`nvmlGpuTopologyLevel_t`), nearest first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Topology {
    /// The same board (two GPUs on one card).
    Internal,
    /// One PCIe switch apart.
    SingleSwitch,
    /// Several PCIe switches apart, without the host bridge.
    MultipleSwitches,
    /// Through one host bridge.
    HostBridge,
    /// Through host bridges of one NUMA node.
    NumaNode,
    /// Across NUMA nodes (SMP interconnect).
    System,
}

impl Topology {
    fn from_raw(level: nvmlGpuLevel_enum) -> Option<Topology> {
        Some(match level {
            nvmlGpuLevel_enum::NVML_TOPOLOGY_INTERNAL => Topology::Internal,
            nvmlGpuLevel_enum::NVML_TOPOLOGY_SINGLE => Topology::SingleSwitch,
            nvmlGpuLevel_enum::NVML_TOPOLOGY_MULTIPLE => Topology::MultipleSwitches,
            nvmlGpuLevel_enum::NVML_TOPOLOGY_HOSTBRIDGE => Topology::HostBridge,
            nvmlGpuLevel_enum::NVML_TOPOLOGY_NODE => Topology::NumaNode,
            nvmlGpuLevel_enum::NVML_TOPOLOGY_SYSTEM => Topology::System,
            _ => return None,
        })
    }
}

/// A kind of peer-to-peer access between two devices (`nvmlGpuP2PCapsIndex_t`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum P2pCapability {
    /// Reading the peer's memory.
    Read,
    /// Writing the peer's memory.
    Write,
    /// Access over NVLink.
    NvLink,
    /// Atomics on the peer's memory.
    Atomics,
    /// Access over PCIe.
    Pci,
}

impl P2pCapability {
    fn raw(self) -> nvmlGpuP2PCapsIndex_enum {
        match self {
            P2pCapability::Read => nvmlGpuP2PCapsIndex_enum::NVML_P2P_CAPS_INDEX_READ,
            P2pCapability::Write => nvmlGpuP2PCapsIndex_enum::NVML_P2P_CAPS_INDEX_WRITE,
            P2pCapability::NvLink => nvmlGpuP2PCapsIndex_enum::NVML_P2P_CAPS_INDEX_NVLINK,
            P2pCapability::Atomics => nvmlGpuP2PCapsIndex_enum::NVML_P2P_CAPS_INDEX_ATOMICS,
            P2pCapability::Pci => nvmlGpuP2PCapsIndex_enum::NVML_P2P_CAPS_INDEX_PCI,
        }
    }
}

/// Whether a peer-to-peer capability is there (`nvmlGpuP2PStatus_t`), and if not, why.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum P2pStatus {
    /// Supported.
    Ok,
    /// The chipset does not support it.
    ChipsetNotSupported,
    /// The GPU does not support it.
    GpuNotSupported,
    /// The I/O hub's topology does not allow it.
    IohTopologyNotSupported,
    /// Disabled by a registry key (driver setting).
    DisabledByRegistryKey,
    /// Not supported, for another reason.
    NotSupported,
    /// NVML could not tell.
    Unknown,
}

impl P2pStatus {
    fn from_raw(status: nvmlGpuP2PStatus_enum) -> P2pStatus {
        match status {
            nvmlGpuP2PStatus_enum::NVML_P2P_STATUS_OK => P2pStatus::Ok,
            nvmlGpuP2PStatus_enum::NVML_P2P_STATUS_CHIPSET_NOT_SUPPORTED => P2pStatus::ChipsetNotSupported,
            nvmlGpuP2PStatus_enum::NVML_P2P_STATUS_GPU_NOT_SUPPORTED => P2pStatus::GpuNotSupported,
            nvmlGpuP2PStatus_enum::NVML_P2P_STATUS_IOH_TOPOLOGY_NOT_SUPPORTED => P2pStatus::IohTopologyNotSupported,
            nvmlGpuP2PStatus_enum::NVML_P2P_STATUS_DISABLED_BY_REGKEY => P2pStatus::DisabledByRegistryKey,
            nvmlGpuP2PStatus_enum::NVML_P2P_STATUS_NOT_SUPPORTED => P2pStatus::NotSupported,
            _ => P2pStatus::Unknown,
        }
    }
}

/// One NVLink of a device.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct NvLink {
    /// The link's number on the device.
    pub link: u32,
    /// Whether the link is up.
    pub active: bool,
    /// The PCI bus id of the device at the other end (a GPU or an NVSwitch), for active links.
    pub remote_pci_bus_id: Option<String>,
}

/// Whether a process uses a device for compute (CUDA) or graphics.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ProcessKind {
    /// A compute (CUDA) context.
    Compute,
    /// A graphics context.
    Graphics,
}

/// A process with a context on a device.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ProcessInfo {
    /// The process id (in the host's namespace).
    pub pid: u32,
    /// Device memory the process uses, in bytes; `None` where NVML may not say (in a container
    /// without the permission, or on Windows WDDM).
    pub used_memory: Option<u64>,
    /// Compute or graphics.
    pub kind: ProcessKind,
}

/// A device as NVML sees it, valid while its [`System`] is (NVML stays initialised).
pub struct NvmlDevice<'s> {
    raw: nvmlDevice_t,
    index: u32,
    nvml: &'static cuda_sys::Nvml,
    _system: PhantomData<&'s System>,
}

// SAFETY: an NVML device handle is an opaque identifier that NVML's thread-safe functions accept
// from any thread while NVML is initialised (the borrow of `System` keeps it so).
unsafe impl Send for NvmlDevice<'_> {}
// SAFETY: as above.
unsafe impl Sync for NvmlDevice<'_> {}

impl NvmlDevice<'_> {
    /// The index this device was opened by, in NVML's order.
    pub fn index(&self) -> u32 {
        self.index
    }

    /// The product name (`"NVIDIA H200"`).
    pub fn name(&self) -> Result<String> {
        let mut buffer = [0 as c_char; NVML_DEVICE_NAME_V2_BUFFER_SIZE as usize];
        // SAFETY: the device is valid while NVML is initialised; the buffer holds the length passed.
        check("nvmlDeviceGetName", unsafe {
            self.nvml.nvmlDeviceGetName()?(self.raw, buffer.as_mut_ptr(), buffer.len() as c_uint)
        })?;
        Ok(text(&buffer))
    }

    /// The UUID, as `nvidia-smi` prints it (`"GPU-8c3e..."`).
    pub fn uuid(&self) -> Result<String> {
        let mut buffer = [0 as c_char; NVML_DEVICE_UUID_V2_BUFFER_SIZE as usize];
        // SAFETY: as in `name`.
        check("nvmlDeviceGetUUID", unsafe {
            self.nvml.nvmlDeviceGetUUID()?(self.raw, buffer.as_mut_ptr(), buffer.len() as c_uint)
        })?;
        Ok(text(&buffer))
    }

    /// The PCI bus id (`"00000000:19:00.0"`), which CUDA's `cuDeviceGetPCIBusId` also gives.
    pub fn pci_bus_id(&self) -> Result<String> {
        let mut info = nvmlPciInfo_t {
            busIdLegacy: [0; 16],
            domain: 0,
            bus: 0,
            device: 0,
            pciDeviceId: 0,
            pciSubSystemId: 0,
            busId: [0; 32],
        };
        // SAFETY: the device is valid; `info` is a valid out-pointer.
        check("nvmlDeviceGetPciInfo_v3", unsafe {
            self.nvml.nvmlDeviceGetPciInfo_v3()?(self.raw, &mut info)
        })?;
        Ok(text(&info.busId))
    }

    /// The CUDA compute capability `(major, minor)`.
    pub fn compute_capability(&self) -> Result<(u32, u32)> {
        let (mut major, mut minor) = (0, 0);
        // SAFETY: the device is valid; both are valid out-pointers.
        check("nvmlDeviceGetCudaComputeCapability", unsafe {
            self.nvml.nvmlDeviceGetCudaComputeCapability()?(self.raw, &mut major, &mut minor)
        })?;
        Ok((major as u32, minor as u32))
    }

    /// Total, free and used device memory.
    pub fn memory(&self) -> Result<MemoryInfo> {
        let mut memory = nvmlMemory_t::default();
        // SAFETY: the device is valid; `memory` is a valid out-pointer.
        check("nvmlDeviceGetMemoryInfo", unsafe {
            self.nvml.nvmlDeviceGetMemoryInfo()?(self.raw, &mut memory)
        })?;
        Ok(MemoryInfo {
            total: memory.total,
            free: memory.free,
            used: memory.used,
        })
    }

    /// GPU and memory utilisation over the last sample period.
    pub fn utilization(&self) -> Result<Utilization> {
        let mut rates = nvmlUtilization_t::default();
        // SAFETY: the device is valid; `rates` is a valid out-pointer.
        check("nvmlDeviceGetUtilizationRates", unsafe {
            self.nvml.nvmlDeviceGetUtilizationRates()?(self.raw, &mut rates)
        })?;
        Ok(Utilization {
            gpu: rates.gpu,
            memory: rates.memory,
        })
    }

    /// The GPU's temperature in degrees Celsius.
    pub fn temperature(&self) -> Result<u32> {
        let mut celsius = 0;
        // SAFETY: the device is valid; `celsius` is a valid out-pointer.
        check("nvmlDeviceGetTemperature", unsafe {
            self.nvml.nvmlDeviceGetTemperature()?(
                self.raw,
                nvmlTemperatureSensors_enum::NVML_TEMPERATURE_GPU,
                &mut celsius,
            )
        })?;
        Ok(celsius)
    }

    /// The current clocks.
    pub fn clocks(&self) -> Result<Clocks> {
        self.clocks_with("nvmlDeviceGetClockInfo", |nvml| nvml.nvmlDeviceGetClockInfo())
    }

    /// The highest clocks the device runs at.
    pub fn max_clocks(&self) -> Result<Clocks> {
        self.clocks_with("nvmlDeviceGetMaxClockInfo", |nvml| nvml.nvmlDeviceGetMaxClockInfo())
    }

    fn clocks_with(
        &self,
        function: &'static str,
        resolve: impl Fn(
            &cuda_sys::Nvml,
        ) -> std::result::Result<
            unsafe extern "C" fn(nvmlDevice_t, nvmlClockType_enum, *mut c_uint) -> nvmlReturn_enum,
            cuda_sys::SymbolError,
        >,
    ) -> Result<Clocks> {
        let get = resolve(self.nvml)?;
        let read = |clock| {
            let mut mhz = 0;
            // SAFETY: the device is valid; `mhz` is a valid out-pointer.
            check(function, unsafe { get(self.raw, clock, &mut mhz) }).map(|()| mhz)
        };
        Ok(Clocks {
            graphics: read(nvmlClockType_enum::NVML_CLOCK_GRAPHICS)?,
            sm: read(nvmlClockType_enum::NVML_CLOCK_SM)?,
            memory: read(nvmlClockType_enum::NVML_CLOCK_MEM)?,
        })
    }

    /// The power the board draws now, in milliwatts.
    pub fn power_usage_mw(&self) -> Result<u32> {
        let mut milliwatts = 0;
        // SAFETY: the device is valid; `milliwatts` is a valid out-pointer.
        check("nvmlDeviceGetPowerUsage", unsafe {
            self.nvml.nvmlDeviceGetPowerUsage()?(self.raw, &mut milliwatts)
        })?;
        Ok(milliwatts)
    }

    /// The power limit the driver enforces, in milliwatts.
    pub fn power_limit_mw(&self) -> Result<u32> {
        let mut milliwatts = 0;
        // SAFETY: as in `power_usage_mw`.
        check("nvmlDeviceGetEnforcedPowerLimit", unsafe {
            self.nvml.nvmlDeviceGetEnforcedPowerLimit()?(self.raw, &mut milliwatts)
        })?;
        Ok(milliwatts)
    }

    /// The closest link between this device and `other`. The same device is
    /// [`Topology::Internal`], answered here: NVML says `NotSupported` for it on some systems
    /// (an H200 with driver 580).
    pub fn topology_with(&self, other: &NvmlDevice<'_>) -> Result<Topology> {
        if self.raw == other.raw {
            return Ok(Topology::Internal);
        }
        let mut level = nvmlGpuLevel_enum::NVML_TOPOLOGY_SYSTEM;
        // SAFETY: both devices are valid; `level` is a valid out-pointer.
        check("nvmlDeviceGetTopologyCommonAncestor", unsafe {
            self.nvml.nvmlDeviceGetTopologyCommonAncestor()?(self.raw, other.raw, &mut level)
        })?;
        Topology::from_raw(level)
            .ok_or_else(|| Error::InvalidValue(format!("NVML reported an unknown topology level {}", level.0)))
    }

    /// Whether this device can use `capability` with `other`'s memory.
    pub fn p2p_status(&self, other: &NvmlDevice<'_>, capability: P2pCapability) -> Result<P2pStatus> {
        let mut status = nvmlGpuP2PStatus_enum::NVML_P2P_STATUS_UNKNOWN;
        // SAFETY: both devices are valid; `status` is a valid out-pointer.
        check("nvmlDeviceGetP2PStatus", unsafe {
            self.nvml.nvmlDeviceGetP2PStatus()?(self.raw, other.raw, capability.raw(), &mut status)
        })?;
        Ok(P2pStatus::from_raw(status))
    }

    /// The device's NVLinks, up or down (none on a device without NVLink).
    pub fn nvlinks(&self) -> Result<Vec<NvLink>> {
        let state = self.nvml.nvmlDeviceGetNvLinkState()?;
        let mut links = Vec::new();
        for link in 0..NVML_NVLINK_MAX_LINKS {
            let mut active = nvmlEnableState_enum::NVML_FEATURE_DISABLED;
            // SAFETY: the device is valid; `active` is a valid out-pointer.
            let result = unsafe { state(self.raw, link, &mut active) };
            // Links past the device's last, or a device without NVLink, answer so.
            if result == nvmlReturn_enum::NVML_ERROR_NOT_SUPPORTED
                || result == nvmlReturn_enum::NVML_ERROR_INVALID_ARGUMENT
            {
                break;
            }
            check("nvmlDeviceGetNvLinkState", result)?;
            let active = active == nvmlEnableState_enum::NVML_FEATURE_ENABLED;
            let remote_pci_bus_id = if active { Some(self.nvlink_remote(link)?) } else { None };
            links.push(NvLink {
                link,
                active,
                remote_pci_bus_id,
            });
        }
        Ok(links)
    }

    fn nvlink_remote(&self, link: u32) -> Result<String> {
        let mut info = nvmlPciInfo_t {
            busIdLegacy: [0; 16],
            domain: 0,
            bus: 0,
            device: 0,
            pciDeviceId: 0,
            pciSubSystemId: 0,
            busId: [0; 32],
        };
        // SAFETY: the device is valid; `info` is a valid out-pointer.
        check("nvmlDeviceGetNvLinkRemotePciInfo_v2", unsafe {
            self.nvml.nvmlDeviceGetNvLinkRemotePciInfo_v2()?(self.raw, link, &mut info)
        })?;
        Ok(text(&info.busId))
    }

    /// The processes with a compute or graphics context on the device.
    pub fn processes(&self) -> Result<Vec<ProcessInfo>> {
        let mut all = self.processes_of(ProcessKind::Compute)?;
        all.extend(self.processes_of(ProcessKind::Graphics)?);
        Ok(all)
    }

    fn processes_of(&self, kind: ProcessKind) -> Result<Vec<ProcessInfo>> {
        let (function, get) = match kind {
            ProcessKind::Compute => (
                "nvmlDeviceGetComputeRunningProcesses_v3",
                self.nvml.nvmlDeviceGetComputeRunningProcesses_v3()?,
            ),
            ProcessKind::Graphics => (
                "nvmlDeviceGetGraphicsRunningProcesses_v3",
                self.nvml.nvmlDeviceGetGraphicsRunningProcesses_v3()?,
            ),
        };
        // Processes come and go between the size query and the list: ask again while it grew.
        let mut capacity = 8u32;
        loop {
            let mut infos = vec![nvmlProcessInfo_t::default(); capacity as usize];
            let mut count = capacity;
            // SAFETY: the device is valid; `infos` holds `count` entries.
            let result = unsafe { get(self.raw, &mut count, infos.as_mut_ptr()) };
            if result == nvmlReturn_enum::NVML_ERROR_INSUFFICIENT_SIZE {
                capacity = count.max(capacity).saturating_mul(2);
                continue;
            }
            check(function, result)?;
            infos.truncate(count.min(capacity) as usize);
            return Ok(infos.iter().map(|info| process_info(info, kind)).collect());
        }
    }
}

/// One process entry; NVML's "not available" value (all ones) is `None`.
fn process_info(info: &nvmlProcessInfo_t, kind: ProcessKind) -> ProcessInfo {
    ProcessInfo {
        pid: info.pid,
        used_memory: (info.usedGpuMemory != u64::MAX).then_some(info.usedGpuMemory),
        kind,
    }
}

impl std::fmt::Debug for NvmlDevice<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NvmlDevice").field("index", &self.index).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn texts_stop_at_the_first_nul() {
        let mut buffer = [0 as c_char; 16];
        for (slot, byte) in buffer.iter_mut().zip(b"NVIDIA H200\0junk") {
            *slot = *byte as c_char;
        }
        assert_eq!(text(&buffer), "NVIDIA H200");
        assert_eq!(text(&[0; 4]), "");
    }

    #[test]
    fn cuda_uuids_are_written_as_nvml_writes_them() {
        let bytes = [
            0x8c, 0x3e, 0x01, 0x02, 0xa0, 0xb1, 0x4c, 0x5d, 0x9e, 0x0f, 0x10, 0x21, 0x32, 0x43, 0x54, 0x65,
        ];
        assert_eq!(uuid_text(&bytes), "GPU-8c3e0102-a0b1-4c5d-9e0f-102132435465");
    }

    #[test]
    fn levels_and_statuses_map_to_their_names() {
        assert_eq!(
            Topology::from_raw(nvmlGpuLevel_enum::NVML_TOPOLOGY_NODE),
            Some(Topology::NumaNode)
        );
        assert_eq!(Topology::from_raw(nvmlGpuLevel_enum(7)), None);
        assert!(Topology::Internal < Topology::System);
        assert_eq!(
            P2pStatus::from_raw(nvmlGpuP2PStatus_enum::NVML_P2P_STATUS_DISABLED_BY_REGKEY),
            P2pStatus::DisabledByRegistryKey
        );
        assert_eq!(
            NvmlCode::from_raw(nvmlReturn_enum::NVML_ERROR_NOT_SUPPORTED),
            NvmlCode::NotSupported
        );
        assert_eq!(NvmlCode::from_raw(nvmlReturn_enum(999)).raw(), 999);
    }

    #[test]
    fn unavailable_process_memory_is_none() {
        let info = nvmlProcessInfo_t {
            pid: 42,
            usedGpuMemory: u64::MAX,
            gpuInstanceId: 0,
            computeInstanceId: 0,
        };
        assert_eq!(process_info(&info, ProcessKind::Compute).used_memory, None);
        let info = nvmlProcessInfo_t {
            usedGpuMemory: 1 << 30,
            ..info
        };
        assert_eq!(
            process_info(&info, ProcessKind::Graphics),
            ProcessInfo {
                pid: 42,
                used_memory: Some(1 << 30),
                kind: ProcessKind::Graphics
            }
        );
    }
}
