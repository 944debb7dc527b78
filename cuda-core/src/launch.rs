//! [`LaunchConfig`] and [`launch`]: running a [`Kernel`] on a stream.

use cuda_driver::{KernelArgs, LaunchAttributes, Stream};

use crate::error::{Error, Result};
use crate::kernel::Kernel;

/// How to launch a kernel: grid and block shape, dynamic shared memory, and optionally thread
/// block clusters or a cooperative (grid-synchronising) launch.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct LaunchConfig {
    /// Blocks in the grid, `(x, y, z)`.
    pub grid: (u32, u32, u32),
    /// Threads in a block, `(x, y, z)`.
    pub block: (u32, u32, u32),
    /// Dynamic shared memory per block, in bytes.
    pub shared_mem: u32,
    /// Thread block cluster shape (compute capability 9.0+); each grid dimension must be a
    /// multiple of it.
    pub cluster: Option<(u32, u32, u32)>,
    /// A cooperative launch: all blocks resident at once, so the grid may synchronise
    /// (`cooperative_groups::this_grid().sync()`).
    pub cooperative: bool,
}

impl Default for LaunchConfig {
    /// One block of one thread.
    fn default() -> Self {
        LaunchConfig {
            grid: (1, 1, 1),
            block: (1, 1, 1),
            shared_mem: 0,
            cluster: None,
            cooperative: false,
        }
    }
}

impl LaunchConfig {
    /// Threads per block that [`LaunchConfig::for_num_elems`] uses.
    pub const DEFAULT_BLOCK: u32 = cuda_driver::LaunchConfig::DEFAULT_BLOCK;

    /// A one-dimensional launch covering `n` elements with blocks of 256 threads.
    pub const fn for_num_elems(n: u32) -> Self {
        Self::from_driver(cuda_driver::LaunchConfig::for_num_elems(n))
    }

    /// `grid` blocks of `block` threads.
    pub const fn new(grid: (u32, u32, u32), block: (u32, u32, u32)) -> Self {
        LaunchConfig {
            grid,
            block,
            shared_mem: 0,
            cluster: None,
            cooperative: false,
        }
    }

    /// A one-dimensional launch covering `n` elements with the block size
    /// that maximises `kernel`'s occupancy given `shared_mem` bytes of dynamic
    /// shared memory per block (`cuOccupancyMaxPotentialBlockSize`; see
    /// [`cuda_driver::Function::occupancy_config`]).
    pub fn for_occupancy(kernel: &Kernel, n: u32, shared_mem: u32) -> Result<Self> {
        Ok(Self::from_driver(kernel.function().occupancy_config(n, shared_mem)?))
    }

    /// Blocks of `block_size` threads, as many as the device holds at once:
    /// the grid of a grid-stride loop, or the largest cooperative launch
    /// (set [`LaunchConfig::cooperative`]); see
    /// [`cuda_driver::Function::resident_config`].
    pub fn resident(kernel: &Kernel, block_size: u32, shared_mem: u32) -> Result<Self> {
        Ok(Self::from_driver(
            kernel.function().resident_config(block_size, shared_mem)?,
        ))
    }

    const fn from_driver(config: cuda_driver::LaunchConfig) -> Self {
        LaunchConfig {
            grid: config.grid,
            block: config.block,
            shared_mem: config.shared_mem_bytes,
            cluster: None,
            cooperative: false,
        }
    }

    fn check_cluster(&self) -> Result<()> {
        let Some(cluster) = self.cluster else {
            return Ok(());
        };
        let (grid, dims) = (
            [self.grid.0, self.grid.1, self.grid.2],
            [cluster.0, cluster.1, cluster.2],
        );
        if dims.contains(&0) || grid.iter().zip(dims).any(|(g, c)| g % c != 0) {
            return Err(Error::InvalidValue(format!(
                "cluster {cluster:?} must have no zero dimension and divide the grid {:?}",
                self.grid
            )));
        }
        Ok(())
    }
}

/// Launches `kernel` on `stream` with `args` (a tuple of up to 12 arguments: values of
/// [`DeviceCopy`](cuda_driver::DeviceCopy) types, `&DeviceBuffer`, `&mut DeviceBuffer`, slices).
///
/// Checked on the host, returning `Err` without launching: the stream, kernel and buffers
/// share one context; argument count and sizes match the kernel's parameters; grid, block and
/// shared memory are within the device's and kernel's limits; a cluster divides the grid. A
/// plain launch is `cuLaunchKernel`; clusters and cooperative launches use `cuLaunchKernelEx`.
/// No heap allocation.
///
/// # Safety
/// The kernel's device code is not checked: it must use the arguments as the types they are,
/// stay inside the buffers for this grid, and not race with other work on the same memory
/// (see [`cuda_driver::Stream::launch`]).
#[inline]
pub unsafe fn launch<A: KernelArgs>(stream: &Stream, config: &LaunchConfig, kernel: &Kernel, args: A) -> Result<()> {
    let driver_config = cuda_driver::LaunchConfig {
        grid: config.grid,
        block: config.block,
        shared_mem_bytes: config.shared_mem,
    };
    if config.cluster.is_none() && !config.cooperative {
        // SAFETY: the caller upholds the device code's obligations; the rest is checked.
        return Ok(unsafe { stream.launch(kernel.function(), &driver_config, args) }?);
    }
    config.check_cluster()?;
    let attributes = LaunchAttributes {
        cluster_dim: config.cluster,
        cooperative: config.cooperative,
        priority: None,
    };
    // SAFETY: as above; a cooperative grid that does not fit on the device is refused by the driver.
    Ok(unsafe { stream.launch_ex(kernel.function(), &driver_config, &attributes, args) }?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cluster_must_divide_the_grid() {
        let clustered = |grid, cluster| LaunchConfig {
            cluster: Some(cluster),
            ..LaunchConfig::new(grid, (32, 1, 1))
        };
        assert!(clustered((4, 2, 1), (2, 1, 1)).check_cluster().is_ok());
        assert!(clustered((4, 2, 1), (2, 2, 1)).check_cluster().is_ok());
        assert!(matches!(
            clustered((3, 1, 1), (2, 1, 1)).check_cluster(),
            Err(Error::InvalidValue(_))
        ));
        assert!(matches!(
            clustered((4, 1, 1), (0, 1, 1)).check_cluster(),
            Err(Error::InvalidValue(_))
        ));
        assert!(
            LaunchConfig::new((3, 1, 1), (1, 1, 1)).check_cluster().is_ok(),
            "no cluster, nothing to check"
        );
    }

    #[test]
    fn for_num_elems_matches_the_driver() {
        let config = LaunchConfig::for_num_elems(1000);
        assert_eq!((config.grid, config.block), ((4, 1, 1), (256, 1, 1)));
        assert_eq!(LaunchConfig::default().grid, (1, 1, 1));
    }
}
