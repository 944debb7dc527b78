//! Every attribute of every device, like CUDA's `deviceQuery` sample: the driver version, then
//! per device its name, compute capability, PCI bus id, UUID, memory (total and free) and each
//! `CUdevice_attribute` value by name, as the driver reports it; last, each CUDA library loaded
//! (driver, NVRTC, nvJitLink, runtime) with its version and file (`cuda_sys::versions()`), so a
//! run says which CUDA generation it used. The list of attributes is checked
//! at compile time to be every value below `CU_DEVICE_ATTRIBUTE_MAX` of the pinned `cuda.h`; one
//! the installed driver does not know is printed as such. The figures read in two ways (an
//! attribute and the matching call, or `cuDeviceTotalMem` and `cuMemGetInfo`) must agree.
//!
//! What it mirrors (`cuda.bindings`):
//!
//! ```python
//! err, version = driver.cuDriverGetVersion()
//! err, count = driver.cuDeviceGetCount()
//! for ordinal in range(count):
//!     err, device = driver.cuDeviceGet(ordinal)
//!     err, name = driver.cuDeviceGetName(256, device)
//!     err, uuid = driver.cuDeviceGetUuid(device)
//!     err, total = driver.cuDeviceTotalMem(device)
//!     for attribute in driver.CUdevice_attribute:
//!         err, value = driver.cuDeviceGetAttribute(attribute, device)
//!         print(attribute.name, value)
//! ```
//!
//! `cargo run --release --example device_query`

use std::process::ExitCode;

use cuda_core::driver::{Device, DeviceAttribute};

macro_rules! attributes {
    ($($name:ident)*) => {
        /// Every device attribute, in value order (1, 2, ...), with its `cuda.h` name.
        const ATTRIBUTES: &[(&str, DeviceAttribute)] = &[$((stringify!($name), DeviceAttribute::$name)),*];
    };
}

attributes! {
    CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK
    CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X
    CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y
    CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z
    CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X
    CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y
    CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z
    CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK
    CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY
    CU_DEVICE_ATTRIBUTE_WARP_SIZE
    CU_DEVICE_ATTRIBUTE_MAX_PITCH
    CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK
    CU_DEVICE_ATTRIBUTE_CLOCK_RATE
    CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT
    CU_DEVICE_ATTRIBUTE_GPU_OVERLAP
    CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT
    CU_DEVICE_ATTRIBUTE_KERNEL_EXEC_TIMEOUT
    CU_DEVICE_ATTRIBUTE_INTEGRATED
    CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY
    CU_DEVICE_ATTRIBUTE_COMPUTE_MODE
    CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_WIDTH
    CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_WIDTH
    CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_HEIGHT
    CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_WIDTH
    CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_HEIGHT
    CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_DEPTH
    CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LAYERED_WIDTH
    CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LAYERED_HEIGHT
    CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LAYERED_LAYERS
    CU_DEVICE_ATTRIBUTE_SURFACE_ALIGNMENT
    CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS
    CU_DEVICE_ATTRIBUTE_ECC_ENABLED
    CU_DEVICE_ATTRIBUTE_PCI_BUS_ID
    CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID
    CU_DEVICE_ATTRIBUTE_TCC_DRIVER
    CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE
    CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH
    CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE
    CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR
    CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT
    CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING
    CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_LAYERED_WIDTH
    CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_LAYERED_LAYERS
    CU_DEVICE_ATTRIBUTE_CAN_TEX2D_GATHER
    CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_GATHER_WIDTH
    CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_GATHER_HEIGHT
    CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_WIDTH_ALTERNATE
    CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_HEIGHT_ALTERNATE
    CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_DEPTH_ALTERNATE
    CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID
    CU_DEVICE_ATTRIBUTE_TEXTURE_PITCH_ALIGNMENT
    CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURECUBEMAP_WIDTH
    CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURECUBEMAP_LAYERED_WIDTH
    CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURECUBEMAP_LAYERED_LAYERS
    CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE1D_WIDTH
    CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE2D_WIDTH
    CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE2D_HEIGHT
    CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE3D_WIDTH
    CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE3D_HEIGHT
    CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE3D_DEPTH
    CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE1D_LAYERED_WIDTH
    CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE1D_LAYERED_LAYERS
    CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE2D_LAYERED_WIDTH
    CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE2D_LAYERED_HEIGHT
    CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE2D_LAYERED_LAYERS
    CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACECUBEMAP_WIDTH
    CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACECUBEMAP_LAYERED_WIDTH
    CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACECUBEMAP_LAYERED_LAYERS
    CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_LINEAR_WIDTH
    CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LINEAR_WIDTH
    CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LINEAR_HEIGHT
    CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LINEAR_PITCH
    CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_MIPMAPPED_WIDTH
    CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_MIPMAPPED_HEIGHT
    CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR
    CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR
    CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_MIPMAPPED_WIDTH
    CU_DEVICE_ATTRIBUTE_STREAM_PRIORITIES_SUPPORTED
    CU_DEVICE_ATTRIBUTE_GLOBAL_L1_CACHE_SUPPORTED
    CU_DEVICE_ATTRIBUTE_LOCAL_L1_CACHE_SUPPORTED
    CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR
    CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR
    CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY
    CU_DEVICE_ATTRIBUTE_MULTI_GPU_BOARD
    CU_DEVICE_ATTRIBUTE_MULTI_GPU_BOARD_GROUP_ID
    CU_DEVICE_ATTRIBUTE_HOST_NATIVE_ATOMIC_SUPPORTED
    CU_DEVICE_ATTRIBUTE_SINGLE_TO_DOUBLE_PRECISION_PERF_RATIO
    CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS
    CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS
    CU_DEVICE_ATTRIBUTE_COMPUTE_PREEMPTION_SUPPORTED
    CU_DEVICE_ATTRIBUTE_CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM
    CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_MEM_OPS_V1
    CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS_V1
    CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_WAIT_VALUE_NOR_V1
    CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH
    CU_DEVICE_ATTRIBUTE_COOPERATIVE_MULTI_DEVICE_LAUNCH
    CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN
    CU_DEVICE_ATTRIBUTE_CAN_FLUSH_REMOTE_WRITES
    CU_DEVICE_ATTRIBUTE_HOST_REGISTER_SUPPORTED
    CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES
    CU_DEVICE_ATTRIBUTE_DIRECT_MANAGED_MEM_ACCESS_FROM_HOST
    CU_DEVICE_ATTRIBUTE_VIRTUAL_ADDRESS_MANAGEMENT_SUPPORTED
    CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED
    CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_WIN32_HANDLE_SUPPORTED
    CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_WIN32_KMT_HANDLE_SUPPORTED
    CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR
    CU_DEVICE_ATTRIBUTE_GENERIC_COMPRESSION_SUPPORTED
    CU_DEVICE_ATTRIBUTE_MAX_PERSISTING_L2_CACHE_SIZE
    CU_DEVICE_ATTRIBUTE_MAX_ACCESS_POLICY_WINDOW_SIZE
    CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WITH_CUDA_VMM_SUPPORTED
    CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK
    CU_DEVICE_ATTRIBUTE_SPARSE_CUDA_ARRAY_SUPPORTED
    CU_DEVICE_ATTRIBUTE_READ_ONLY_HOST_REGISTER_SUPPORTED
    CU_DEVICE_ATTRIBUTE_TIMELINE_SEMAPHORE_INTEROP_SUPPORTED
    CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED
    CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_SUPPORTED
    CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_FLUSH_WRITES_OPTIONS
    CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WRITES_ORDERING
    CU_DEVICE_ATTRIBUTE_MEMPOOL_SUPPORTED_HANDLE_TYPES
    CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH
    CU_DEVICE_ATTRIBUTE_DEFERRED_MAPPING_CUDA_ARRAY_SUPPORTED
    CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS
    CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_WAIT_VALUE_NOR
    CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED
    CU_DEVICE_ATTRIBUTE_IPC_EVENT_SUPPORTED
    CU_DEVICE_ATTRIBUTE_MEM_SYNC_DOMAIN_COUNT
    CU_DEVICE_ATTRIBUTE_TENSOR_MAP_ACCESS_SUPPORTED
    CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_FABRIC_SUPPORTED
    CU_DEVICE_ATTRIBUTE_UNIFIED_FUNCTION_POINTERS
    CU_DEVICE_ATTRIBUTE_NUMA_CONFIG
    CU_DEVICE_ATTRIBUTE_NUMA_ID
    CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED
    CU_DEVICE_ATTRIBUTE_MPS_ENABLED
    CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID
    CU_DEVICE_ATTRIBUTE_D3D12_CIG_SUPPORTED
    CU_DEVICE_ATTRIBUTE_MEM_DECOMPRESS_ALGORITHM_MASK
    CU_DEVICE_ATTRIBUTE_MEM_DECOMPRESS_MAXIMUM_LENGTH
    CU_DEVICE_ATTRIBUTE_VULKAN_CIG_SUPPORTED
    CU_DEVICE_ATTRIBUTE_GPU_PCI_DEVICE_ID
    CU_DEVICE_ATTRIBUTE_GPU_PCI_SUBSYSTEM_ID
    CU_DEVICE_ATTRIBUTE_HOST_NUMA_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED
    CU_DEVICE_ATTRIBUTE_HOST_NUMA_MEMORY_POOLS_SUPPORTED
    CU_DEVICE_ATTRIBUTE_HOST_NUMA_MULTINODE_IPC_SUPPORTED
    CU_DEVICE_ATTRIBUTE_HOST_MEMORY_POOLS_SUPPORTED
    CU_DEVICE_ATTRIBUTE_HOST_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED
    CU_DEVICE_ATTRIBUTE_HOST_ALLOC_DMA_BUF_SUPPORTED
    CU_DEVICE_ATTRIBUTE_ONLY_PARTIAL_HOST_NATIVE_ATOMIC_SUPPORTED
}

// The list is every attribute: values 1 up to (not including) CU_DEVICE_ATTRIBUTE_MAX, in order.
const _: () = {
    assert!(ATTRIBUTES.len() + 1 == DeviceAttribute::CU_DEVICE_ATTRIBUTE_MAX.0 as usize);
    let mut i = 0;
    while i < ATTRIBUTES.len() {
        assert!(ATTRIBUTES[i].1 .0 as usize == i + 1);
        i += 1;
    }
};

/// A UUID as `nvidia-smi` prints it: `GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx`.
fn format_uuid(uuid: &[u8; 16]) -> String {
    let hex: String = uuid.iter().map(|b| format!("{b:02x}")).collect();
    format!(
        "GPU-{}-{}-{}-{}-{}",
        &hex[..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..]
    )
}

/// Prints one device and checks what can be read two ways.
fn query(device: &Device) -> Result<(), Box<dyn std::error::Error>> {
    let ordinal = device.ordinal();
    let name = device.name()?;
    let (major, minor) = device.compute_capability()?;
    let uuid = device.uuid()?;
    let total = device.total_memory()?;
    let (free, context_total) = device.primary_context()?.memory_info()?;
    println!("Device {ordinal}: \"{name}\"");
    println!("  compute capability      {major}.{minor}");
    println!("  PCI bus id              {}", device.pci_bus_id()?);
    println!("  UUID                    {}", format_uuid(&uuid));
    println!(
        "  total memory            {total} bytes ({:.1} GiB)",
        total as f64 / (1u64 << 30) as f64
    );
    println!(
        "  free memory             {free} bytes ({:.1} GiB)",
        free as f64 / (1u64 << 30) as f64
    );

    let mut values = Vec::with_capacity(ATTRIBUTES.len());
    let mut unknown = 0;
    for &(attribute_name, attribute) in ATTRIBUTES {
        match device.attribute(attribute) {
            Ok(value) => {
                println!("  {attribute_name:<70} {value}");
                values.push(Some(value));
            }
            Err(error) => {
                println!("  {attribute_name:<70} (not available: {error})");
                values.push(None);
                unknown += 1;
            }
        }
    }
    println!(
        "  {} attributes read, {unknown} not available from this driver",
        ATTRIBUTES.len() - unknown
    );

    let value = |attribute: DeviceAttribute| values[attribute.0 as usize - 1];
    let mut wrong = Vec::new();
    if name.is_empty() {
        wrong.push("the name is empty".to_string());
    }
    if uuid == [0; 16] {
        wrong.push("the UUID is all zeros".to_string());
    }
    if !(free <= context_total && context_total <= total && total > 0) {
        wrong.push(format!(
            "cuMemGetInfo says {free} free of {context_total}, cuDeviceTotalMem {total}"
        ));
    }
    let capability = (
        value(DeviceAttribute::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR),
        value(DeviceAttribute::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR),
    );
    if capability != (Some(major as i32), Some(minor as i32)) {
        wrong.push(format!("compute capability {major}.{minor}, attributes {capability:?}"));
    }
    let (x, y, z) = device.max_block_dim()?;
    let block = [
        DeviceAttribute::CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X,
        DeviceAttribute::CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y,
        DeviceAttribute::CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z,
    ]
    .map(value);
    if block != [Some(x as i32), Some(y as i32), Some(z as i32)] {
        wrong.push(format!("max block ({x}, {y}, {z}), attributes {block:?}"));
    }
    if !matches!(
        value(DeviceAttribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT),
        Some(1..)
    ) {
        wrong.push("no multiprocessors".to_string());
    }
    if !wrong.is_empty() {
        return Err(format!("device {ordinal}: {}", wrong.join("; ")).into());
    }
    Ok(())
}

fn main() -> ExitCode {
    examples::run("device_query", || {
        let version = cuda_core::driver::driver_version()?;
        let library = cuda_core::sys::driver()?.path().display().to_string();
        println!("CUDA driver {}.{} ({library})", version / 1000, version % 1000 / 10);
        let devices = Device::all()?;
        if devices.is_empty() {
            return Err("the driver reports no CUDA device".into());
        }
        println!("{} CUDA device(s)\n", devices.len());
        for device in &devices {
            query(device)?;
            println!();
        }
        // Which CUDA generation this run uses: every library loaded so far, and NVRTC, nvJitLink
        // and the runtime, loaded here to report them (each is found by the same search as in a
        // program that uses it: CUDA 12's build first on a CUDA 12 driver).
        for (name, loaded) in [
            ("NVRTC", cuda_core::sys::nvrtc().map(drop)),
            ("nvJitLink", cuda_core::sys::nvjitlink().map(drop)),
            ("the CUDA runtime", cuda_core::sys::runtime().map(drop)),
        ] {
            if let Err(error) = loaded {
                println!("{name} not loaded: {error}");
            }
        }
        println!("loaded libraries:");
        for library in cuda_core::sys::versions() {
            println!("  {library}");
        }
        println!(
            "device_query: {} device(s), {} attributes each",
            devices.len(),
            ATTRIBUTES.len()
        );
        Ok(())
    })
}
