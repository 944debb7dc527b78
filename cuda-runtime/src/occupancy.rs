//! Occupancy-chosen launch configurations for a [`Kernel`]: the block size
//! that keeps the most threads resident on a multiprocessor (the search
//! `cudaOccupancyMaxPotentialBlockSize` does in `cuda_runtime.h`, over
//! `cudaOccupancyMaxActiveBlocksPerMultiprocessor`), and a grid of exactly
//! the blocks the device holds at once.
//!
//! ```no_run
//! use cuda_runtime::{Device, Library};
//!
//! # fn main() -> cuda_runtime::Result<()> {
//! # let ptx = "";
//! let device = Device::get(0)?;
//! let kernel = Library::from_ptx(ptx)?.kernel("scale")?;
//! let config = kernel.occupancy_config(device, 1 << 20, 0)?;
//! assert!(config.grid.0 * config.block.0 >= 1 << 20);
//! # Ok(())
//! # }
//! ```

use crate::{Device, DeviceAttribute, Error, Kernel, LaunchConfig, Result};

impl Kernel {
    /// The block size, a whole number of warps up to the kernel's limit on
    /// `device`, that keeps the most threads resident on a multiprocessor
    /// with `shared_mem_bytes` of dynamic shared memory per block (the
    /// larger on a tie). [`Error::InvalidValue`] if no block fits.
    pub fn suggested_block_size(&self, device: Device, shared_mem_bytes: u32) -> Result<u32> {
        let warp = positive(device.attribute(DeviceAttribute::cudaDevAttrWarpSize)?);
        let per_multiprocessor = positive(device.attribute(DeviceAttribute::cudaDevAttrMaxThreadsPerMultiProcessor)?);
        let max_block = self.attributes(device)?.max_threads_per_block;
        let (mut best, mut best_threads) = (0, 0);
        let mut block = max_block / warp.max(1) * warp;
        while block > 0 {
            let blocks = self.max_active_blocks_per_multiprocessor(device, block, shared_mem_bytes as usize)?;
            let threads = blocks.saturating_mul(block);
            if threads > best_threads {
                (best, best_threads) = (block, threads);
                if threads >= per_multiprocessor {
                    break;
                }
            }
            block -= warp;
        }
        if best == 0 {
            return Err(Error::InvalidValue(format!(
                "no block of kernel `{}` with {shared_mem_bytes} bytes of dynamic shared memory fits on {device:?}",
                self.name()
            )));
        }
        Ok(best)
    }

    /// A one-dimensional launch covering `n` elements (one thread each) with
    /// [`Kernel::suggested_block_size`]. `n == 0` is [`Error::InvalidValue`].
    pub fn occupancy_config(&self, device: Device, n: u32, shared_mem_bytes: u32) -> Result<LaunchConfig> {
        if n == 0 {
            return Err(Error::InvalidValue("a launch must cover at least one element".into()));
        }
        let block = self.suggested_block_size(device, shared_mem_bytes)?;
        Ok(LaunchConfig {
            grid: (n.div_ceil(block), 1, 1),
            block: (block, 1, 1),
            shared_mem_bytes,
        })
    }

    /// Blocks of `block_size` threads, as many as `device` holds at once
    /// (resident blocks per multiprocessor times multiprocessors): the grid
    /// for grid-stride loops. [`Error::InvalidValue`] if none fits.
    pub fn resident_config(&self, device: Device, block_size: u32, shared_mem_bytes: u32) -> Result<LaunchConfig> {
        let blocks = self.max_active_blocks_per_multiprocessor(device, block_size, shared_mem_bytes as usize)?;
        if blocks == 0 {
            return Err(Error::InvalidValue(format!(
                "no block of {block_size} threads of kernel `{}` fits on {device:?}",
                self.name()
            )));
        }
        let multiprocessors = positive(device.attribute(DeviceAttribute::cudaDevAttrMultiProcessorCount)?);
        Ok(LaunchConfig {
            grid: (blocks.saturating_mul(multiprocessors), 1, 1),
            block: (block_size, 1, 1),
            shared_mem_bytes,
        })
    }
}

/// An attribute that is a count, as `u32` (0 for a nonsensical negative).
fn positive(value: i32) -> u32 {
    u32::try_from(value).unwrap_or(0)
}
