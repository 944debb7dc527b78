//! [`LaunchConfig`]: the grid, block and dynamic shared memory of a kernel launch.
//!
//! Hand-written, not generated: it is no binding but the one launch shape that every layer above
//! shares. `cuLaunchKernel` (driver) and `cudaLaunchKernel` (runtime) take the same three
//! values, and cuda-driver and cuda-runtime are siblings that both depend on this crate only, so
//! the type is defined here once and re-exported by cuda-driver, cuda-runtime and cuda-core.
//! It is plain data: checking it against a device's and a kernel's limits is each launching
//! layer's work.

/// Grid, block and dynamic shared memory of a kernel launch.
///
/// ```
/// use cuda_sys::LaunchConfig;
///
/// // One thread per element, blocks of 256 threads.
/// let config = LaunchConfig::for_num_elems(1000);
/// assert_eq!((config.grid, config.block), ((4, 1, 1), (256, 1, 1)));
/// // A 2-D launch with 4 KiB of dynamic shared memory per block.
/// let tiled = LaunchConfig::new((64, 64, 1), (16, 16, 1)).with_shared_mem(4096);
/// assert_eq!(tiled.shared_mem_bytes, 4096);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct LaunchConfig {
    /// Blocks in the grid, `(x, y, z)`.
    pub grid: (u32, u32, u32),
    /// Threads in a block, `(x, y, z)`.
    pub block: (u32, u32, u32),
    /// Dynamic shared memory per block, in bytes.
    pub shared_mem_bytes: u32,
}

impl Default for LaunchConfig {
    /// One block of one thread, without dynamic shared memory.
    fn default() -> Self {
        LaunchConfig::new((1, 1, 1), (1, 1, 1))
    }
}

impl LaunchConfig {
    /// Threads per block that [`LaunchConfig::for_num_elems`] uses.
    pub const DEFAULT_BLOCK: u32 = 256;

    /// A one-dimensional launch with at least one thread per element: blocks of
    /// [`DEFAULT_BLOCK`](Self::DEFAULT_BLOCK) threads, enough blocks to cover `n`. `n == 0`
    /// gives an empty grid, which a launch refuses.
    pub const fn for_num_elems(n: u32) -> Self {
        LaunchConfig::new((n.div_ceil(Self::DEFAULT_BLOCK), 1, 1), (Self::DEFAULT_BLOCK, 1, 1))
    }

    /// A launch of `grid` blocks of `block` threads, without dynamic shared memory.
    pub const fn new(grid: (u32, u32, u32), block: (u32, u32, u32)) -> Self {
        LaunchConfig {
            grid,
            block,
            shared_mem_bytes: 0,
        }
    }

    /// The same launch with `bytes` of dynamic shared memory per block.
    pub const fn with_shared_mem(self, bytes: u32) -> Self {
        LaunchConfig {
            shared_mem_bytes: bytes,
            ..self
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn for_num_elems_covers_every_element() {
        assert_eq!(LaunchConfig::for_num_elems(1).grid, (1, 1, 1));
        assert_eq!(LaunchConfig::for_num_elems(256).grid, (1, 1, 1));
        assert_eq!(LaunchConfig::for_num_elems(257).grid, (2, 1, 1));
        assert_eq!(LaunchConfig::for_num_elems(u32::MAX).grid.0, u32::MAX.div_ceil(256));
        assert_eq!(LaunchConfig::for_num_elems(0).grid, (0, 1, 1));
    }

    #[test]
    fn constructors_and_default() {
        let config = LaunchConfig::new((4096, 2, 1), (32, 32, 1)).with_shared_mem(1024);
        assert_eq!(
            config,
            LaunchConfig {
                grid: (4096, 2, 1),
                block: (32, 32, 1),
                shared_mem_bytes: 1024
            }
        );
        assert_eq!(LaunchConfig::default(), LaunchConfig::new((1, 1, 1), (1, 1, 1)));
    }
}
