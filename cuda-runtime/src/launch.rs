//! Kernel launches (`cudaLaunchKernel`) with host-side checks, raw and typed.

use std::ffi::c_void;
use std::mem::size_of;
use std::sync::Mutex;

use cuda_sys::runtime::dim3;
use cuda_sys::LaunchConfig;

use crate::error::check;
use crate::{
    Device, DeviceAttribute, DeviceCopy, DeviceMemory, DeviceSlice, DeviceSliceMut, Error, Kernel, Result, Stream,
};

/// The device limits a launch is checked against, read once per device.
#[derive(Clone, Copy, Debug)]
struct Limits {
    max_threads_per_block: u32,
    max_block: [u32; 3],
    max_grid: [u32; 3],
    max_shared_optin: u32,
}

static LIMITS: Mutex<Vec<(Device, Limits)>> = Mutex::new(Vec::new());

fn limits(device: Device) -> Result<Limits> {
    let cached = LIMITS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .iter()
        .find(|(d, _)| *d == device)
        .map(|(_, l)| *l);
    if let Some(limits) = cached {
        return Ok(limits);
    }
    let get = |attribute| device.attribute(attribute).map(|v| u32::try_from(v).unwrap_or(0));
    use DeviceAttribute as A;
    let limits = Limits {
        max_threads_per_block: get(A::cudaDevAttrMaxThreadsPerBlock)?,
        max_block: [
            get(A::cudaDevAttrMaxBlockDimX)?,
            get(A::cudaDevAttrMaxBlockDimY)?,
            get(A::cudaDevAttrMaxBlockDimZ)?,
        ],
        max_grid: [
            get(A::cudaDevAttrMaxGridDimX)?,
            get(A::cudaDevAttrMaxGridDimY)?,
            get(A::cudaDevAttrMaxGridDimZ)?,
        ],
        max_shared_optin: get(A::cudaDevAttrMaxSharedMemoryPerBlockOptin)?,
    };
    LIMITS.lock().unwrap_or_else(|e| e.into_inner()).push((device, limits));
    Ok(limits)
}

fn check_config(config: &LaunchConfig, device: Device) -> Result<()> {
    let limits = limits(device)?;
    let (grid, block) = (config.grid, config.block);
    let grid = [grid.0, grid.1, grid.2];
    let block = [block.0, block.1, block.2];
    if grid.contains(&0) || block.contains(&0) {
        return Err(Error::InvalidValue(format!(
            "grid {grid:?} and block {block:?} must not be zero"
        )));
    }
    let threads = block.iter().map(|&b| u64::from(b)).product::<u64>();
    if threads > u64::from(limits.max_threads_per_block) {
        return Err(Error::InvalidValue(format!(
            "block {block:?} has {threads} threads; the device allows {}",
            limits.max_threads_per_block
        )));
    }
    if block.iter().zip(limits.max_block).any(|(&b, max)| b > max) {
        return Err(Error::InvalidValue(format!(
            "block {block:?} exceeds the device's {:?}",
            limits.max_block
        )));
    }
    if grid.iter().zip(limits.max_grid).any(|(&g, max)| g > max) {
        return Err(Error::InvalidValue(format!(
            "grid {grid:?} exceeds the device's {:?}",
            limits.max_grid
        )));
    }
    if config.shared_mem_bytes > limits.max_shared_optin {
        return Err(Error::InvalidValue(format!(
            "{} bytes of dynamic shared memory; the device allows {}",
            config.shared_mem_bytes, limits.max_shared_optin
        )));
    }
    Ok(())
}

/// Launches `kernel` on `stream` with one pointer per parameter
/// (`cudaLaunchKernel`, the kernel handle passed as the function).
///
/// Checked first, returning an error instead of launching: the number of
/// pointers against the kernel's parameter count (`cudaFuncGetParamInfo`),
/// null pointers, and the grid, block and shared memory against the stream's
/// device limits.
///
/// # Safety
/// `args[i]` must point to a value of exactly parameter `i`'s size and type
/// (see [`Kernel::param_info`]), live for the call; device pointers among
/// them must be valid for everything the kernel does with them until it
/// finishes; the kernel's own code is not checked.
pub unsafe fn launch_raw(
    kernel: &Kernel,
    config: &LaunchConfig,
    stream: &Stream,
    args: &mut [*mut c_void],
) -> Result<()> {
    let params = kernel.param_info()?;
    if params.len() != args.len() {
        return Err(Error::ArgumentCount {
            kernel: kernel.name().to_string(),
            expected: params.len(),
            found: args.len(),
        });
    }
    if let Some(index) = args.iter().position(|p| p.is_null()) {
        return Err(Error::InvalidValue(format!(
            "kernel argument {index} is a null pointer"
        )));
    }
    // SAFETY: the count matches; the caller vouches for each value.
    unsafe { launch_checked_args(kernel, config, stream, args) }
}

/// The launch itself, after the arguments have been checked.
///
/// # Safety
/// As [`launch_raw`], with the count already checked.
unsafe fn launch_checked_args(
    kernel: &Kernel,
    config: &LaunchConfig,
    stream: &Stream,
    args: &mut [*mut c_void],
) -> Result<()> {
    check_config(config, stream.device())?;
    let runtime = stream.enter()?;
    let grid = dim3 {
        x: config.grid.0,
        y: config.grid.1,
        z: config.grid.2,
    };
    let block = dim3 {
        x: config.block.0,
        y: config.block.1,
        z: config.block.2,
    };
    let args_ptr = if args.is_empty() {
        std::ptr::null_mut()
    } else {
        args.as_mut_ptr()
    };
    let function = kernel.raw().cast_const().cast::<c_void>();
    let shared = config.shared_mem_bytes as usize;
    // SAFETY: the runtime accepts a `cudaKernel_t` as the function (CUDA 12+);
    // argument count and launch limits are checked; the caller vouches for the
    // argument values. The stream is valid while `stream` lives.
    let code = unsafe { runtime.cudaLaunchKernel()?(function, grid, block, args_ptr, shared, stream.raw()) };
    check(runtime, code)
}

/// One kernel argument: what is passed and how big it is.
///
/// Implemented for every [`DeviceCopy`] value (passed by value) and for
/// `&DeviceMemory<T>`, `&mut DeviceMemory<T>`, [`DeviceSlice`] and
/// [`DeviceSliceMut`] (by value or reference; passed as the device pointer
/// of the first element, which must be on the launch stream's device).
pub trait KernelArg {
    /// The value placed in the parameter buffer.
    type Param: Copy;

    /// The parameter value for a launch on `device`; `index` is for errors.
    fn param(&self, device: Device, index: usize) -> Result<Self::Param>;
}

impl<T: DeviceCopy> KernelArg for T {
    type Param = T;

    fn param(&self, _device: Device, _index: usize) -> Result<T> {
        Ok(*self)
    }
}

fn pointer_param(ptr: *mut c_void, owner: Device, device: Device, index: usize) -> Result<*mut c_void> {
    if owner != device {
        return Err(Error::WrongDevice {
            what: format!("kernel argument {index}"),
            expected: device.raw_ordinal(),
            found: owner.raw_ordinal(),
        });
    }
    Ok(ptr)
}

macro_rules! pointer_arg {
    ($($(#[$doc:meta])* $arg:ty => |$this:ident| $view:expr;)*) => { $(
        $(#[$doc])*
        impl<T: DeviceCopy> KernelArg for $arg {
            type Param = *mut c_void;

            fn param(&self, device: Device, index: usize) -> Result<*mut c_void> {
                let $this = self;
                let view = $view;
                pointer_param(view.ptr, view.device, device, index)
            }
        }
    )* };
}

pointer_arg! {
    &DeviceMemory<T> => |m| m.view();
    &mut DeviceMemory<T> => |m| m.view();
    DeviceSlice<'_, T> => |s| *s.view();
    &DeviceSlice<'_, T> => |s| *s.view();
    DeviceSliceMut<'_, T> => |s| *s.view();
    &mut DeviceSliceMut<'_, T> => |s| *s.view();
}

/// A tuple of [`KernelArg`]s (up to 12), checked against the kernel's
/// parameter count and sizes, passed without heap allocation.
pub trait KernelArgs {
    /// Checks the arguments and launches.
    ///
    /// # Safety
    /// As [`Stream::launch`].
    unsafe fn launch(self, kernel: &Kernel, config: &LaunchConfig, stream: &Stream) -> Result<()>;
}

fn expect_size(kernel: &Kernel, index: usize, expected: usize, found: usize) -> Result<()> {
    if expected == found {
        Ok(())
    } else {
        Err(Error::ArgumentSize {
            kernel: kernel.name().to_string(),
            index,
            expected,
            found,
        })
    }
}

macro_rules! kernel_args {
    ($count:expr; $($arg:ident $value:ident $index:tt),*) => {
        impl<$($arg: KernelArg),*> KernelArgs for ($($arg,)*) {
            #[allow(unused_variables, unused_mut)]
            unsafe fn launch(self, kernel: &Kernel, config: &LaunchConfig, stream: &Stream) -> Result<()> {
                let params = kernel.param_info()?;
                if params.len() != $count {
                    return Err(Error::ArgumentCount {
                        kernel: kernel.name().to_string(),
                        expected: params.len(),
                        found: $count,
                    });
                }
                let device = stream.device();
                $(
                    let mut $value = self.$index.param(device, $index)?;
                    expect_size(kernel, $index, params[$index].size, size_of::<$arg::Param>())?;
                )*
                let args: &mut [*mut c_void] = &mut [$(std::ptr::addr_of_mut!($value).cast::<c_void>()),*];
                // SAFETY: one pointer per parameter, each to a live local of the
                // parameter's size; the caller vouches for the values' meaning.
                unsafe { launch_checked_args(kernel, config, stream, args) }
            }
        }
    };
}

kernel_args!(0;);
kernel_args!(1; A0 a0 0);
kernel_args!(2; A0 a0 0, A1 a1 1);
kernel_args!(3; A0 a0 0, A1 a1 1, A2 a2 2);
kernel_args!(4; A0 a0 0, A1 a1 1, A2 a2 2, A3 a3 3);
kernel_args!(5; A0 a0 0, A1 a1 1, A2 a2 2, A3 a3 3, A4 a4 4);
kernel_args!(6; A0 a0 0, A1 a1 1, A2 a2 2, A3 a3 3, A4 a4 4, A5 a5 5);
kernel_args!(7; A0 a0 0, A1 a1 1, A2 a2 2, A3 a3 3, A4 a4 4, A5 a5 5, A6 a6 6);
kernel_args!(8; A0 a0 0, A1 a1 1, A2 a2 2, A3 a3 3, A4 a4 4, A5 a5 5, A6 a6 6, A7 a7 7);
kernel_args!(9; A0 a0 0, A1 a1 1, A2 a2 2, A3 a3 3, A4 a4 4, A5 a5 5, A6 a6 6, A7 a7 7, A8 a8 8);
kernel_args!(10; A0 a0 0, A1 a1 1, A2 a2 2, A3 a3 3, A4 a4 4, A5 a5 5, A6 a6 6, A7 a7 7, A8 a8 8, A9 a9 9);
kernel_args!(11; A0 a0 0, A1 a1 1, A2 a2 2, A3 a3 3, A4 a4 4, A5 a5 5, A6 a6 6, A7 a7 7, A8 a8 8, A9 a9 9, A10 a10 10);
kernel_args!(12; A0 a0 0, A1 a1 1, A2 a2 2, A3 a3 3, A4 a4 4, A5 a5 5, A6 a6 6, A7 a7 7, A8 a8 8, A9 a9 9, A10 a10 10, A11 a11 11);

impl Stream {
    /// Launches `kernel` on this stream with typed arguments, e.g.
    /// `stream.launch(&kernel, &config, (&mut out, &input, n))`.
    ///
    /// Checked first, returning an error instead of launching: the argument
    /// count and each argument's size against `cudaFuncGetParamInfo`, buffer
    /// devices against the stream's, and grid, block and shared memory
    /// against the device's limits.
    ///
    /// # Safety
    /// The kernel's code is not checked: it must only access the buffers
    /// within their lengths and treat each argument as the type it is. The
    /// launch does not wait: the buffers must outlive the kernel's run, and
    /// their blocking methods only wait for their own stream, so synchronise
    /// this stream (or wait on an event) before reading results or dropping
    /// the buffers.
    pub unsafe fn launch<A: KernelArgs>(&self, kernel: &Kernel, config: &LaunchConfig, args: A) -> Result<()> {
        // SAFETY: forwarded to the caller.
        unsafe { args.launch(kernel, config, self) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffers_of_another_device_are_rejected_as_arguments() {
        let (zero, one) = (Device::from_runtime(0), Device::from_runtime(1));
        let ptr = 0x1000 as *mut c_void;
        assert_eq!(pointer_param(ptr, zero, zero, 0), Ok(ptr));
        match pointer_param(ptr, one, zero, 3) {
            Err(Error::WrongDevice {
                what,
                expected: 0,
                found: 1,
            }) => assert_eq!(what, "kernel argument 3"),
            other => panic!("expected WrongDevice, got {other:?}"),
        }
    }
}
