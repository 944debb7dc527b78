//! Occupancy: how many blocks of a kernel one multiprocessor holds at once
//! (`cuOccupancyMaxActiveBlocksPerMultiprocessor`), and launch
//! configurations chosen by it: the block size that maximises occupancy
//! (`cuOccupancyMaxPotentialBlockSize`), or a grid of exactly the blocks
//! that fit on the device at once.
//!
//! ```no_run
//! use cuda_driver::{Device, LaunchConfig, Module};
//!
//! # fn main() -> cuda_driver::Result<()> {
//! # let ptx = "";
//! let context = Device::get(0)?.primary_context()?;
//! let kernel = Module::from_ptx(&context, ptx)?.function("scale")?;
//! // Enough blocks of the best size to cover a million elements.
//! let config = kernel.occupancy_config(1 << 20, 0)?;
//! let occupancy = kernel.occupancy(&config)?;
//! println!("{} blocks per multiprocessor, {:.0}% of its threads",
//!          occupancy.blocks_per_multiprocessor, 100.0 * occupancy.fraction());
//! // Every block resident at once: for grid-stride loops and cooperative launches.
//! let resident: LaunchConfig = kernel.resident_config(256, 0)?;
//! # let _ = resident;
//! # Ok(())
//! # }
//! ```

use crate::error::{check, Error, Result};
use crate::{Function, LaunchConfig};

/// How full one multiprocessor is with blocks of a launch configuration.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Occupancy {
    /// Blocks resident on one multiprocessor at once.
    pub blocks_per_multiprocessor: u32,
    /// Threads those blocks hold.
    pub threads_per_multiprocessor: u32,
    /// Most threads one multiprocessor holds.
    pub max_threads_per_multiprocessor: u32,
}

impl Occupancy {
    /// The fraction of the multiprocessor's thread slots in use, 0 to 1.
    pub fn fraction(&self) -> f64 {
        if self.max_threads_per_multiprocessor == 0 {
            return 0.0;
        }
        f64::from(self.threads_per_multiprocessor) / f64::from(self.max_threads_per_multiprocessor)
    }
}

/// Threads in a block of `config`, as the driver's `int`; zero and
/// unrepresentable sizes are [`Error::InvalidValue`].
fn block_threads(config: &LaunchConfig) -> Result<u32> {
    let (x, y, z) = config.block;
    u64::from(x)
        .checked_mul(u64::from(y))
        .and_then(|t| t.checked_mul(u64::from(z)))
        .filter(|&t| t > 0 && t <= i32::MAX as u64)
        .map(|t| t as u32)
        .ok_or_else(|| Error::InvalidValue(format!("block {:?} has no threads or too many", config.block)))
}

impl Function {
    /// The occupancy `config`'s block shape and dynamic shared memory reach
    /// (the grid does not matter).
    pub fn occupancy(&self, config: &LaunchConfig) -> Result<Occupancy> {
        let threads = block_threads(config)?;
        let blocks = self.max_active_blocks_per_multiprocessor(threads, config.shared_mem_bytes as usize)?;
        Ok(Occupancy {
            blocks_per_multiprocessor: blocks,
            threads_per_multiprocessor: blocks.saturating_mul(threads),
            max_threads_per_multiprocessor: self.context().device().max_threads_per_multiprocessor()?,
        })
    }

    /// A one-dimensional launch covering `n` elements (one thread each)
    /// with the block size that maximises occupancy given
    /// `shared_mem_bytes` of dynamic shared memory per block. `n == 0` is
    /// [`Error::InvalidValue`].
    pub fn occupancy_config(&self, n: u32, shared_mem_bytes: u32) -> Result<LaunchConfig> {
        if n == 0 {
            return Err(Error::InvalidValue("a launch must cover at least one element".into()));
        }
        let (_, block) = self.max_potential_block_size(shared_mem_bytes as usize)?;
        if block == 0 {
            return Err(self.nothing_fits(shared_mem_bytes));
        }
        Ok(LaunchConfig::new((n.div_ceil(block), 1, 1), (block, 1, 1)).with_shared_mem(shared_mem_bytes))
    }

    /// A one-dimensional launch of blocks of `block_size` threads with as
    /// many blocks as the whole device holds at once (resident blocks per
    /// multiprocessor times multiprocessors): the grid for grid-stride loops
    /// and the largest cooperative launch. A block that fits nowhere is
    /// [`Error::InvalidValue`].
    pub fn resident_config(&self, block_size: u32, shared_mem_bytes: u32) -> Result<LaunchConfig> {
        let config = LaunchConfig::new((1, 1, 1), (block_size, 1, 1)).with_shared_mem(shared_mem_bytes);
        let occupancy = self.occupancy(&config)?;
        if occupancy.blocks_per_multiprocessor == 0 {
            return Err(self.nothing_fits(shared_mem_bytes));
        }
        let multiprocessors = self.context().device().multiprocessor_count()?;
        let grid = occupancy.blocks_per_multiprocessor.saturating_mul(multiprocessors);
        Ok(LaunchConfig {
            grid: (grid, 1, 1),
            ..config
        })
    }

    /// The most dynamic shared memory each block may use so that
    /// `blocks_per_multiprocessor` blocks of `block_size` threads are
    /// resident at once (`cuOccupancyAvailableDynamicSMemPerBlock`); 0 when
    /// that many never fit.
    pub fn available_dynamic_shared_memory(&self, blocks_per_multiprocessor: u32, block_size: u32) -> Result<usize> {
        let to_int = |what: &str, value: u32| {
            i32::try_from(value)
                .ok()
                .filter(|&v| v > 0)
                .ok_or_else(|| Error::InvalidValue(format!("{what} {value} must be between 1 and {}", i32::MAX)))
        };
        let (blocks, threads) = (
            to_int("blocks per multiprocessor", blocks_per_multiprocessor)?,
            to_int("block size", block_size)?,
        );
        let driver = self.context().bind()?;
        let mut bytes = 0;
        // SAFETY: `bytes` is a valid out-pointer; the function handle is alive and its context current.
        check(unsafe { driver.cuOccupancyAvailableDynamicSMemPerBlock()?(&mut bytes, self.raw(), blocks, threads) })?;
        Ok(bytes)
    }

    fn nothing_fits(&self, shared_mem_bytes: u32) -> Error {
        Error::InvalidValue(format!(
            "no block of kernel `{}` with {shared_mem_bytes} bytes of dynamic shared memory fits on a multiprocessor",
            self.name()
        ))
    }
}
