//! [`launch`] and [`launch_ex`]: running a [`Kernel`] on a stream with a
//! [`LaunchConfig`](cuda_driver::LaunchConfig) (the one launch shape that cuda-driver and
//! cuda-runtime share), and, for thread block clusters and cooperative launches,
//! [`LaunchAttributes`].

use cuda_driver::{KernelArgs, LaunchAttributes, LaunchConfig, Stream};

use crate::error::{Error, Result};
use crate::kernel::Kernel;

/// Launches `kernel` on `stream` with `args` (a tuple of up to 12 arguments: values of
/// [`DeviceCopy`](cuda_driver::DeviceCopy) types, `&DeviceBuffer`, `&mut DeviceBuffer`, slices)
/// through `cuLaunchKernel`.
///
/// Checked on the host, returning `Err` without launching: the stream, kernel and buffers
/// share one context; argument count and sizes match the kernel's parameters; grid, block and
/// shared memory are within the device's and kernel's limits. No heap allocation.
///
/// # Safety
/// The kernel's device code is not checked: it must use the arguments as the types they are,
/// stay inside the buffers for this grid, and not race with other work on the same memory
/// (see [`cuda_driver::Stream::launch`]).
#[inline]
pub unsafe fn launch<A: KernelArgs>(stream: &Stream, config: &LaunchConfig, kernel: &Kernel, args: A) -> Result<()> {
    // SAFETY: the caller upholds the device code's obligations; the rest is checked.
    Ok(unsafe { stream.launch(kernel.function(), config, args) }?)
}

/// Like [`launch`], with [`LaunchAttributes`] (thread block clusters, a cooperative launch
/// whose grid may synchronise, priority) through `cuLaunchKernelEx`. A cluster must have no zero
/// dimension and divide the grid, else [`Error::InvalidValue`] before anything runs.
///
/// ```no_run
/// use cuda_core::{launch_ex, Kernel, LaunchAttributes, LaunchConfig, Stream};
///
/// # fn run(stream: &Stream, kernel: &Kernel, data: &mut cuda_core::DeviceBuffer<u32>) -> cuda_core::Result<()> {
/// // Clusters of two blocks (compute capability 9.0+).
/// let attributes = LaunchAttributes { cluster_dim: Some((2, 1, 1)), ..LaunchAttributes::default() };
/// // SAFETY: the kernel writes one element per thread of the 8 x 32 grid.
/// unsafe { launch_ex(stream, &LaunchConfig::new((8, 1, 1), (32, 1, 1)), &attributes, kernel, (data,))? };
/// # Ok(())
/// # }
/// ```
///
/// # Safety
/// As for [`launch`]; a cooperative kernel that synchronises the grid must also fit on the
/// device all at once (the driver refuses a cooperative grid that does not).
#[inline]
pub unsafe fn launch_ex<A: KernelArgs>(
    stream: &Stream,
    config: &LaunchConfig,
    attributes: &LaunchAttributes,
    kernel: &Kernel,
    args: A,
) -> Result<()> {
    check_cluster(config, attributes)?;
    // SAFETY: as for `launch`; the cluster shape was checked above.
    Ok(unsafe { stream.launch_ex(kernel.function(), config, attributes, args) }?)
}

/// A cluster, when asked for, has no zero dimension and divides the grid.
fn check_cluster(config: &LaunchConfig, attributes: &LaunchAttributes) -> Result<()> {
    let Some(cluster) = attributes.cluster_dim else {
        return Ok(());
    };
    let (grid, dims) = (
        [config.grid.0, config.grid.1, config.grid.2],
        [cluster.0, cluster.1, cluster.2],
    );
    if dims.contains(&0) || grid.iter().zip(dims).any(|(g, c)| g % c != 0) {
        return Err(Error::InvalidValue(format!(
            "cluster {cluster:?} must have no zero dimension and divide the grid {:?}",
            config.grid
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cluster_must_divide_the_grid() {
        let check = |grid, cluster| {
            let attributes = LaunchAttributes {
                cluster_dim: Some(cluster),
                ..LaunchAttributes::default()
            };
            check_cluster(&LaunchConfig::new(grid, (32, 1, 1)), &attributes)
        };
        assert!(check((4, 2, 1), (2, 1, 1)).is_ok());
        assert!(check((4, 2, 1), (2, 2, 1)).is_ok());
        assert!(matches!(check((3, 1, 1), (2, 1, 1)), Err(Error::InvalidValue(_))));
        assert!(matches!(check((4, 1, 1), (0, 1, 1)), Err(Error::InvalidValue(_))));
        assert!(
            check_cluster(&LaunchConfig::new((3, 1, 1), (1, 1, 1)), &LaunchAttributes::default()).is_ok(),
            "no cluster, nothing to check"
        );
    }

    #[test]
    fn the_launch_config_is_the_driver_s() {
        let config: cuda_driver::LaunchConfig = crate::LaunchConfig::for_num_elems(1000);
        assert_eq!((config.grid, config.block), ((4, 1, 1), (256, 1, 1)));
        assert_eq!(crate::LaunchConfig::default().grid, (1, 1, 1));
    }
}
