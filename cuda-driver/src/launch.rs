//! Kernel launches: typed arguments checked against the kernel's parameter
//! layout, launch configuration checked against device and kernel limits,
//! `cuLaunchKernelEx` attributes, and the raw escape hatch.

use std::ffi::c_void;
use std::mem::size_of;
use std::ptr;

use cuda_sys::driver::{CUdeviceptr, CUlaunchAttribute, CUlaunchAttributeID, CUlaunchConfig};
use cuda_sys::LaunchConfig;

use crate::context::DeviceLimits;
use crate::error::{check, Error, LaunchError, Result};
use crate::{
    Access, Context, DeviceBuffer, DeviceCopy, DeviceSlice, DeviceSliceMut, Function, ParamInfo, Stream, StreamUse,
};

/// Extra launch attributes for [`Stream::launch_ex`] (`cuLaunchKernelEx`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct LaunchAttributes {
    /// Thread block cluster dimensions `(x, y, z)` (compute capability 9.0+);
    /// each grid dimension must be a multiple.
    pub cluster_dim: Option<(u32, u32, u32)>,
    /// Launch cooperatively: all blocks are resident at once and may synchronise grid-wide.
    pub cooperative: bool,
    /// Priority of this launch (see [`Context::stream_priority_range`]).
    pub priority: Option<i32>,
}

/// One kernel argument: its bytes as the kernel receives them.
///
/// Implemented for every [`DeviceCopy`] value (passed by value: scalars,
/// arrays, `#[repr(C)]` structs) and for device buffers (by reference) and
/// views (by value or reference), which pass their device address. Memory
/// passed by shared reference or as a [`DeviceSlice`] is a read of the
/// [device-memory contract](crate::DeviceMemory); by `&mut` or as a
/// [`DeviceSliceMut`] (owned or `&mut`), a write.
///
/// # Safety
/// `param_ptr` must point to `param_size` readable bytes that stay valid
/// while `self` is borrowed, `check_use` must fail for memory the launch
/// must not touch (another context's), and `begin_launch_use` must begin
/// the use of the device memory the argument passes, so that its free waits
/// for the launch.
pub unsafe trait KernelArg {
    /// Address of the argument's bytes.
    fn param_ptr(&self) -> *mut c_void;
    /// Size of the argument in bytes.
    fn param_size(&self) -> usize;
    /// Checks the argument may be used by a launch on `stream` of `context`; implementations
    /// that track memory themselves (rather than through [`KernelArg::begin_launch_use`]) note
    /// the use here.
    #[inline]
    fn check_use(&self, context: &Context, stream: &Stream) -> Result<()> {
        let _ = (context, stream);
        Ok(())
    }
    /// Checks as [`KernelArg::check_use`] does and begins the use of the device memory the
    /// argument passes ([`DeviceMemory::begin_use`](crate::DeviceMemory::begin_use)); the
    /// launch drops the guard once the kernel is queued. By default, `check_use` and no guard.
    #[inline]
    fn begin_launch_use(&self, context: &Context, stream: &Stream) -> Result<Option<StreamUse<'_>>> {
        self.check_use(context, stream).map(|()| None)
    }
}

// SAFETY: points at the value itself, which lives as long as the borrow.
unsafe impl<T: DeviceCopy> KernelArg for T {
    #[inline]
    fn param_ptr(&self) -> *mut c_void {
        (self as *const T).cast_mut().cast()
    }

    #[inline]
    fn param_size(&self) -> usize {
        size_of::<T>()
    }
}

macro_rules! pointer_args {
    ($($ty:ty => $access:expr),*) => {
        $(
            // SAFETY: points at the view's or buffer's device address, which lives as long as the
            // borrow; `check_use` refuses other contexts' memory and `begin_launch_use` begins the
            // stream's use of the allocation.
            unsafe impl<T: DeviceCopy> KernelArg for $ty {
                #[inline]
                fn param_ptr(&self) -> *mut c_void {
                    (self.ptr_ref() as *const CUdeviceptr).cast_mut().cast()
                }

                #[inline]
                fn param_size(&self) -> usize {
                    size_of::<CUdeviceptr>()
                }

                #[inline]
                fn check_use(&self, context: &Context, _stream: &Stream) -> Result<()> {
                    self.allocation().context().expect_same(context, "buffer", "function")
                }

                #[inline]
                fn begin_launch_use(&self, context: &Context, stream: &Stream) -> Result<Option<StreamUse<'_>>> {
                    self.check_use(context, stream)?;
                    self.allocation().begin_use(stream, $access).map(Some)
                }
            }
        )*
    };
}

pointer_args!(
    &DeviceBuffer<T> => Access::Read,
    &mut DeviceBuffer<T> => Access::Write,
    DeviceSlice<'_, T> => Access::Read,
    &DeviceSlice<'_, T> => Access::Read,
    DeviceSliceMut<'_, T> => Access::Write,
    &DeviceSliceMut<'_, T> => Access::Read,
    &mut DeviceSliceMut<'_, T> => Access::Write
);

/// A whole argument list: implemented for tuples of up to 12 [`KernelArg`]s.
///
/// # Safety
/// `with_params` and `check_and_queue` must pass one pointer per argument,
/// each valid as [`KernelArg::param_ptr`] says, for the duration of the
/// call; `check_and_queue` must hold each argument's
/// [`begin_launch_use`](KernelArg::begin_launch_use) guard until `queue` has returned.
pub unsafe trait KernelArgs {
    /// Number of arguments.
    const COUNT: usize;
    /// Checks the count and sizes against `params` (when known) and each argument's context,
    /// begins each argument's use of device memory on `stream`, calls `queue` with the
    /// argument pointer array (built on the stack), then ends the uses (recording them for
    /// other streams where needed).
    fn check_and_queue<R>(
        &self,
        function: &Function,
        params: Option<&[ParamInfo]>,
        stream: &Stream,
        queue: impl FnOnce(&mut [*mut c_void]) -> Result<R>,
    ) -> Result<R>;
    /// Calls `f` with the argument pointer array (built on the stack).
    fn with_params<R>(&self, f: impl FnOnce(&mut [*mut c_void]) -> R) -> R;
}

macro_rules! kernel_args {
    ($count:expr; $($arg:ident),*) => {
        // SAFETY: the pointer array holds one pointer per element of the borrowed tuple, and the
        // use guards live until `queue` has returned.
        unsafe impl<$($arg: KernelArg),*> KernelArgs for ($($arg,)*) {
            const COUNT: usize = $count;

            #[inline]
            #[allow(non_snake_case)]
            fn check_and_queue<R>(
                &self,
                function: &Function,
                params: Option<&[ParamInfo]>,
                stream: &Stream,
                queue: impl FnOnce(&mut [*mut c_void]) -> Result<R>,
            ) -> Result<R> {
                let ($($arg,)*) = self;
                if let Some(params) = params {
                    let sizes: [usize; $count] = [$($arg.param_size()),*];
                    check_args(function.name(), params, &sizes)?;
                }
                let _context = function.context();
                // Dropped after `queue` returns, that is once the launch is queued.
                let _uses = ($($arg.begin_launch_use(_context, stream)?,)*);
                let _ = stream;
                let mut pointers: [*mut c_void; $count] = [$($arg.param_ptr()),*];
                queue(&mut pointers)
            }

            #[inline]
            #[allow(non_snake_case)]
            fn with_params<R>(&self, f: impl FnOnce(&mut [*mut c_void]) -> R) -> R {
                let ($($arg,)*) = self;
                let mut pointers: [*mut c_void; $count] = [$($arg.param_ptr()),*];
                f(&mut pointers)
            }
        }
    };
}

kernel_args!(0;);
kernel_args!(1; A);
kernel_args!(2; A, B);
kernel_args!(3; A, B, C);
kernel_args!(4; A, B, C, D);
kernel_args!(5; A, B, C, D, E);
kernel_args!(6; A, B, C, D, E, F);
kernel_args!(7; A, B, C, D, E, F, G);
kernel_args!(8; A, B, C, D, E, F, G, H);
kernel_args!(9; A, B, C, D, E, F, G, H, I);
kernel_args!(10; A, B, C, D, E, F, G, H, I, J);
kernel_args!(11; A, B, C, D, E, F, G, H, I, J, K);
kernel_args!(12; A, B, C, D, E, F, G, H, I, J, K, L);

/// Argument count and sizes against the kernel's parameters.
pub(crate) fn check_args(kernel: &str, params: &[ParamInfo], sizes: &[usize]) -> Result<(), LaunchError> {
    if params.len() != sizes.len() {
        return Err(LaunchError::ArgumentCount {
            kernel: kernel.to_string(),
            expected: params.len(),
            given: sizes.len(),
        });
    }
    for (index, (param, &given)) in params.iter().zip(sizes).enumerate() {
        if param.size != given {
            return Err(LaunchError::ArgumentSize {
                kernel: kernel.to_string(),
                index,
                expected: param.size,
                given,
            });
        }
    }
    Ok(())
}

/// Kernel limits a configuration is checked against.
#[derive(Clone, Copy, Debug)]
pub(crate) struct KernelLimits {
    pub(crate) max_threads: u32,
    pub(crate) max_dynamic_shared: u32,
}

/// Grid, block and shared memory against device and kernel limits.
pub(crate) fn check_config(
    kernel: &str,
    config: &LaunchConfig,
    device: &DeviceLimits,
    limits: &KernelLimits,
) -> Result<(), LaunchError> {
    let (grid, block) = (config.grid, config.block);
    if [grid.0, grid.1, grid.2, block.0, block.1, block.2].contains(&0) {
        return Err(LaunchError::ZeroDimension { grid, block });
    }
    let axes = ['x', 'y', 'z'];
    let block_max = [device.max_block.0, device.max_block.1, device.max_block.2];
    for ((axis, requested), max) in axes.iter().zip([block.0, block.1, block.2]).zip(block_max) {
        if requested > max {
            return Err(LaunchError::BlockDimension {
                axis: *axis,
                requested,
                max,
            });
        }
    }
    let threads = u64::from(block.0) * u64::from(block.1) * u64::from(block.2);
    if threads > u64::from(limits.max_threads) {
        return Err(LaunchError::TooManyThreads {
            kernel: kernel.to_string(),
            requested: threads,
            max: limits.max_threads,
        });
    }
    let grid_max = [device.max_grid.0, device.max_grid.1, device.max_grid.2];
    for ((axis, requested), max) in axes.iter().zip([grid.0, grid.1, grid.2]).zip(grid_max) {
        if requested > max {
            return Err(LaunchError::GridDimension {
                axis: *axis,
                requested,
                max,
            });
        }
    }
    if config.shared_mem_bytes > limits.max_dynamic_shared {
        return Err(LaunchError::SharedMemory {
            kernel: kernel.to_string(),
            requested: config.shared_mem_bytes,
            max: limits.max_dynamic_shared,
        });
    }
    Ok(())
}

impl Stream {
    /// Checks the stream against the function and the configuration against
    /// the limits, then makes the context current.
    #[inline]
    fn prepare_launch(&self, function: &Function, config: &LaunchConfig) -> Result<&'static cuda_sys::Driver> {
        self.context().expect_same(function.context(), "stream", "function")?;
        let limits = KernelLimits {
            max_threads: function.max_threads_per_block()?,
            max_dynamic_shared: function.max_dynamic_shared_memory()?,
        };
        check_config(function.name(), config, &self.context().limits()?, &limits)?;
        self.context().bind()
    }

    /// Launches `function` on this stream with typed `args`.
    ///
    /// Checked on the host first, returning `Err` without launching: the
    /// stream, function and every buffer argument share one context
    /// ([`Error::WrongContext`](crate::Error::WrongContext)); argument count
    /// and sizes match the kernel's parameters (when the driver reports
    /// them); grid, block and dynamic shared memory are within the device's
    /// and the kernel's limits ([`Error::Launch`](crate::Error::Launch)).
    /// No heap allocation.
    ///
    /// # Safety
    /// The kernel's device code is not checked: it must match the argument
    /// types (a pointer argument used as the element type it is), stay inside
    /// the buffers' bounds for this grid, and not race with other work on
    /// the same memory (host copies into a buffer while this kernel reads
    /// it, work on other streams that this crate does not order: raw
    /// addresses, memory outside the [contract](crate::DeviceMemory)). A
    /// buffer passed by shared reference (or as a [`DeviceSlice`]) counts as
    /// read, so the kernel must not write it: pass what it writes by `&mut`.
    #[inline]
    pub unsafe fn launch<A: KernelArgs>(&self, function: &Function, config: &LaunchConfig, args: A) -> Result<()> {
        let driver = self.prepare_launch(function, config)?;
        args.check_and_queue(function, function.params_if_known()?, self, |params| {
            // SAFETY: `prepare_launch` made the context current (beginning the arguments' uses
            // binds it again where they touched another); `params` holds one valid pointer per
            // kernel parameter (count and sizes checked when known); the device code's own
            // correctness is the caller's obligation.
            unsafe { self.launch_kernel(driver, function, config, params) }
        })
    }

    /// Calls `cuLaunchKernel` for `function` on this stream with `params`,
    /// first keeping `function` alive for a capture in progress.
    ///
    /// # Safety
    /// `prepare_launch` has passed for `function` and `config` (the context
    /// is current); each element of `params` points to a value of exactly the
    /// size and type of the corresponding kernel parameter, valid for the
    /// call; the device code's obligations are as for [`Stream::launch`].
    #[inline(always)]
    unsafe fn launch_kernel(
        &self,
        driver: &cuda_sys::Driver,
        function: &Function,
        config: &LaunchConfig,
        params: &mut [*mut c_void],
    ) -> Result<()> {
        let launch = driver.cuLaunchKernel()?;
        self.keep_if_capturing(function);
        let (grid, block) = (config.grid, config.block);
        // SAFETY: the function and stream are alive and of the current context; the parameter
        // pointers and the device code are the caller's obligation (see above).
        check(unsafe {
            launch(
                function.raw(),
                grid.0,
                grid.1,
                grid.2,
                block.0,
                block.1,
                block.2,
                config.shared_mem_bytes,
                self.raw(),
                params.as_mut_ptr(),
                ptr::null_mut(),
            )
        })
    }

    /// Like [`Stream::launch`], with extra [`LaunchAttributes`] (cluster
    /// dimensions, cooperative launch, priority) through `cuLaunchKernelEx`.
    ///
    /// # Safety
    /// As for [`Stream::launch`]; a cooperative kernel that synchronises the
    /// grid must also fit on the device all at once.
    pub unsafe fn launch_ex<A: KernelArgs>(
        &self,
        function: &Function,
        config: &LaunchConfig,
        attributes: &LaunchAttributes,
        args: A,
    ) -> Result<()> {
        let driver = self.prepare_launch(function, config)?;
        let mut attrs = [CUlaunchAttribute::default(); 3];
        let mut count = 0;
        if let Some((x, y, z)) = attributes.cluster_dim {
            attrs[count].id = CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
            attrs[count].value.clusterDim.x = x;
            attrs[count].value.clusterDim.y = y;
            attrs[count].value.clusterDim.z = z;
            count += 1;
        }
        if attributes.cooperative {
            attrs[count].id = CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_COOPERATIVE;
            attrs[count].value.cooperative = 1;
            count += 1;
        }
        if let Some(priority) = attributes.priority {
            attrs[count].id = CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_PRIORITY;
            attrs[count].value.priority = priority;
            count += 1;
        }
        let launch_config = CUlaunchConfig {
            gridDimX: config.grid.0,
            gridDimY: config.grid.1,
            gridDimZ: config.grid.2,
            blockDimX: config.block.0,
            blockDimY: config.block.1,
            blockDimZ: config.block.2,
            sharedMemBytes: config.shared_mem_bytes,
            hStream: self.raw(),
            attrs: attrs.as_mut_ptr(),
            numAttrs: count as u32,
        };
        let launch = driver.cuLaunchKernelEx()?;
        args.check_and_queue(function, function.params_if_known()?, self, |params| {
            self.keep_if_capturing(function);
            // SAFETY: as in `launch`; `launch_config` and `attrs` outlive the call and `numAttrs`
            // counts the initialised attributes.
            check(unsafe { launch(&launch_config, function.raw(), params.as_mut_ptr(), ptr::null_mut()) })
        })
    }
}

/// Launches `function` with a raw parameter array, as `cuLaunchKernel` takes
/// it. The stream/function context, the grid, block and shared memory
/// limits and the parameter count (when the driver reports it) are still
/// checked.
///
/// # Safety
/// Each element of `params` must point to a value of exactly the size and
/// type of the corresponding kernel parameter, valid for the call; the
/// device code's obligations are as for [`Stream::launch`]; device memory
/// the kernel uses must stay allocated until it has run.
pub unsafe fn launch_raw(
    function: &Function,
    grid: (u32, u32, u32),
    block: (u32, u32, u32),
    shared_mem: u32,
    stream: &Stream,
    params: &mut [*mut c_void],
) -> Result<()> {
    let config = LaunchConfig {
        grid,
        block,
        shared_mem_bytes: shared_mem,
    };
    let driver = stream.prepare_launch(function, &config)?;
    if let Some(info) = function.params_if_known()? {
        if info.len() != params.len() {
            return Err(LaunchError::ArgumentCount {
                kernel: function.name().to_string(),
                expected: info.len(),
                given: params.len(),
            }
            .into());
        }
    }
    // SAFETY: `prepare_launch` made the context current and checked the parameter count when
    // known; the parameter pointers and the device code are the caller's obligation (see above).
    unsafe { stream.launch_kernel(driver, function, &config, params) }
}

/// Launches `function` with parameters given as pointers and the size of each, as a
/// dynamically built argument list has them: the count and every size are checked against the
/// kernel's parameters (`cuFuncGetParamInfo`, when the driver reports them) exactly as a typed
/// [`Stream::launch`] checks them, and the context, grid, block and shared memory limits too,
/// before anything runs.
///
/// # Safety
/// Each element of `params` must point to `sizes[i]` readable bytes holding a valid value of
/// the corresponding kernel parameter's type, for the call; the device code's obligations are
/// as for [`Stream::launch`]; device memory the kernel uses must stay allocated until it has run.
pub unsafe fn launch_checked(
    function: &Function,
    config: &LaunchConfig,
    stream: &Stream,
    params: &mut [*mut c_void],
    sizes: &[usize],
) -> Result<()> {
    if params.len() != sizes.len() {
        return Err(Error::InvalidValue(format!(
            "{} parameter pointers but {} sizes",
            params.len(),
            sizes.len()
        )));
    }
    let driver = stream.prepare_launch(function, config)?;
    if let Some(info) = function.params_if_known()? {
        check_args(function.name(), info, sizes)?;
    }
    // SAFETY: `prepare_launch` made the context current; the count and sizes match the
    // kernel's parameters when the driver reports them; the values and the device code are the
    // caller's obligation (see above).
    unsafe { stream.launch_kernel(driver, function, config, params) }
}

#[cfg(test)]
mod tests {
    use super::*;

    const H200: DeviceLimits = DeviceLimits {
        max_block: (1024, 1024, 64),
        max_grid: (2_147_483_647, 65535, 65535),
    };
    const KERNEL: KernelLimits = KernelLimits {
        max_threads: 1024,
        max_dynamic_shared: 48 * 1024,
    };

    #[test]
    fn config_within_limits_passes() {
        let config = LaunchConfig::new((4096, 2, 1), (32, 32, 1)).with_shared_mem(1024);
        assert_eq!(check_config("k", &config, &H200, &KERNEL), Ok(()));
    }

    #[test]
    fn zero_dimensions_are_refused() {
        let config = LaunchConfig::for_num_elems(0);
        assert!(matches!(
            check_config("k", &config, &H200, &KERNEL),
            Err(LaunchError::ZeroDimension { .. })
        ));
        let config = LaunchConfig::new((1, 1, 1), (32, 0, 1));
        assert!(matches!(
            check_config("k", &config, &H200, &KERNEL),
            Err(LaunchError::ZeroDimension { .. })
        ));
    }

    #[test]
    fn too_many_threads_are_refused() {
        let config = LaunchConfig::new((1, 1, 1), (1024, 2, 1));
        let error = check_config("k", &config, &H200, &KERNEL).unwrap_err();
        assert_eq!(
            error,
            LaunchError::TooManyThreads {
                kernel: "k".into(),
                requested: 2048,
                max: 1024
            }
        );
        let limited = KernelLimits {
            max_threads: 640,
            ..KERNEL
        };
        let config = LaunchConfig::new((1, 1, 1), (768, 1, 1));
        assert!(matches!(
            check_config("k", &config, &H200, &limited),
            Err(LaunchError::TooManyThreads { max: 640, .. })
        ));
    }

    #[test]
    fn block_and_grid_axes_are_checked() {
        let config = LaunchConfig::new((1, 1, 1), (1, 1, 65));
        assert_eq!(
            check_config("k", &config, &H200, &KERNEL),
            Err(LaunchError::BlockDimension {
                axis: 'z',
                requested: 65,
                max: 64
            })
        );
        let config = LaunchConfig::new((1, 65536, 1), (1, 1, 1));
        assert_eq!(
            check_config("k", &config, &H200, &KERNEL),
            Err(LaunchError::GridDimension {
                axis: 'y',
                requested: 65536,
                max: 65535
            })
        );
    }

    #[test]
    fn dynamic_shared_memory_is_checked() {
        let config = LaunchConfig::new((1, 1, 1), (32, 1, 1)).with_shared_mem(48 * 1024 + 1);
        assert!(matches!(
            check_config("k", &config, &H200, &KERNEL),
            Err(LaunchError::SharedMemory {
                requested: 49153,
                max: 49152,
                ..
            })
        ));
    }

    #[test]
    fn argument_count_and_sizes_are_checked() {
        let params = [ParamInfo { offset: 0, size: 8 }, ParamInfo { offset: 8, size: 4 }];
        assert_eq!(check_args("k", &params, &[8, 4]), Ok(()));
        assert_eq!(
            check_args("k", &params, &[8]),
            Err(LaunchError::ArgumentCount {
                kernel: "k".into(),
                expected: 2,
                given: 1
            })
        );
        assert_eq!(
            check_args("k", &params, &[8, 8]),
            Err(LaunchError::ArgumentSize {
                kernel: "k".into(),
                index: 1,
                expected: 4,
                given: 8
            })
        );
    }

    #[test]
    fn tuple_arguments_point_at_their_values() {
        #[derive(Clone, Copy)]
        #[repr(C)]
        struct Pair {
            a: f32,
            b: u64,
        }
        // SAFETY: repr(C) plain numbers.
        unsafe impl DeviceCopy for Pair {}
        let args = (1.5f32, 7u64, Pair { a: 2.0, b: 3 }, [1u8; 3]);
        assert_eq!(<(f32, u64, Pair, [u8; 3]) as KernelArgs>::COUNT, 4);
        let sizes = [
            args.0.param_size(),
            args.1.param_size(),
            args.2.param_size(),
            args.3.param_size(),
        ];
        assert_eq!(sizes, [4, 8, 16, 3]);
        args.with_params(|params| {
            assert_eq!(params.len(), 4);
            // SAFETY: each pointer points at the matching tuple element, alive for this closure.
            unsafe {
                assert_eq!(*params[0].cast::<f32>(), 1.5);
                assert_eq!(*params[1].cast::<u64>(), 7);
                assert_eq!((*params[2].cast::<Pair>()).b, 3);
                assert_eq!(*params[3].cast::<[u8; 3]>(), [1, 1, 1]);
            }
        });
        ().with_params(|params| assert!(params.is_empty()));
    }
}
