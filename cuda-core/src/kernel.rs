//! [`Kernel`]: a loaded kernel with its attributes and parameter layout.

use std::fmt;

use cuda_driver::{Context, Function, LaunchConfig, ParamInfo};

use crate::error::Result;

/// A kernel loaded into one device's context, from [`ObjectCode::get_kernel`](crate::ObjectCode::get_kernel).
/// Cheap to clone; keeps its code loaded.
#[derive(Clone)]
pub struct Kernel {
    function: Function,
    name: String,
}

/// A kernel's resource use and limits (`cuFuncGetAttribute`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct KernelAttributes {
    /// Most threads a block of this kernel may have.
    pub max_threads_per_block: u32,
    /// Registers each thread uses.
    pub num_registers: u32,
    /// Static shared memory per block, in bytes.
    pub shared_memory_bytes: u32,
    /// Local memory per thread, in bytes.
    pub local_memory_bytes: u32,
    /// Dynamic shared memory a launch may ask for, in bytes.
    pub max_dynamic_shared_memory: u32,
    /// PTX version the kernel was compiled from (major * 10 + minor).
    pub ptx_version: u32,
    /// SASS version (major * 10 + minor).
    pub binary_version: u32,
}

impl Kernel {
    pub(crate) fn new(function: Function, name: &str) -> Kernel {
        Kernel {
            function,
            name: name.to_string(),
        }
    }

    /// The name the kernel was asked for by (a name expression stays as given).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The kernel's symbol (the lowered name for a name expression).
    pub fn symbol(&self) -> &str {
        self.function.name()
    }

    /// The `cuda-driver` function, for launching through `cuda-driver` directly.
    pub fn function(&self) -> &Function {
        &self.function
    }

    /// The context the kernel is loaded in.
    pub fn context(&self) -> &Context {
        self.function.context()
    }

    /// Offset and size of each parameter (`cuFuncGetParamInfo`, read once).
    pub fn param_info(&self) -> Result<&[ParamInfo]> {
        Ok(self.function.param_info()?)
    }

    /// The number of parameters.
    pub fn num_params(&self) -> Result<usize> {
        Ok(self.param_info()?.len())
    }

    /// Resource use and limits.
    pub fn attributes(&self) -> Result<KernelAttributes> {
        let f = &self.function;
        Ok(KernelAttributes {
            max_threads_per_block: f.max_threads_per_block()?,
            num_registers: f.num_registers()?,
            shared_memory_bytes: f.shared_memory_bytes()?,
            local_memory_bytes: f.local_memory_bytes()?,
            max_dynamic_shared_memory: f.max_dynamic_shared_memory()?,
            ptx_version: f.ptx_version()?,
            binary_version: f.binary_version()?,
        })
    }

    /// Lets launches ask for up to `bytes` of dynamic shared memory.
    pub fn set_max_dynamic_shared_memory(&self, bytes: u32) -> Result<()> {
        Ok(self.function.set_max_dynamic_shared_memory(bytes)?)
    }

    /// A one-dimensional launch covering `n` elements with the block size that maximises this
    /// kernel's occupancy given `shared_mem_bytes` of dynamic shared memory per block
    /// (`cuOccupancyMaxPotentialBlockSize`; see [`Function::occupancy_config`]).
    pub fn occupancy_config(&self, n: u32, shared_mem_bytes: u32) -> Result<LaunchConfig> {
        Ok(self.function.occupancy_config(n, shared_mem_bytes)?)
    }

    /// Blocks of `block_size` threads, as many as the device holds at once: the grid of a
    /// grid-stride loop, or the largest cooperative launch (see [`crate::launch_ex`] and
    /// [`Function::resident_config`]).
    pub fn resident_config(&self, block_size: u32, shared_mem_bytes: u32) -> Result<LaunchConfig> {
        Ok(self.function.resident_config(block_size, shared_mem_bytes)?)
    }
}

impl fmt::Debug for Kernel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Kernel")
            .field("name", &self.name)
            .field("symbol", &self.symbol())
            .finish()
    }
}
