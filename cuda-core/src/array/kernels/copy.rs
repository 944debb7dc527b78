//! The copy and fill family: `y = x` over any layouts and broadcasting, and `y = value` where a
//! memset cannot do it (element types wider than 4 bytes, strided views). Both are
//! [`ElementwiseKernel`]s the crate writes itself.

use cuda_driver::Stream;

use crate::array::device_array::DeviceArray;
use crate::array::dtype::Element;
use crate::array::kernels::registry::{kernel, KernelKey};
use crate::array::kernels::{Arg, ElementwiseKernel};
use crate::error::Result;

/// Queues `destination = source` (same shape, any layouts, not overlapping) on `stream`.
pub(crate) fn copy<T: Element>(
    stream: &Stream,
    source: &DeviceArray<T>,
    destination: &mut DeviceArray<T>,
) -> Result<()> {
    let copy = kernel(KernelKey::Named("cuda_core_copy"), || {
        ElementwiseKernel::new("T x", "T y", "y = x", "cuda_core_copy")
    })?;
    copy.launch_generated(stream, &[Arg::from(source), Arg::from(destination)])
}

/// Queues `destination = value` for every element on `stream`.
pub(crate) fn fill<T: Element>(stream: &Stream, destination: &mut DeviceArray<T>, value: T) -> Result<()> {
    let fill = kernel(KernelKey::Named("cuda_core_fill"), || {
        ElementwiseKernel::new("T value", "T y", "y = value", "cuda_core_fill")
    })?;
    fill.launch_generated(stream, &[Arg::scalar(value), Arg::from(destination)])
}
