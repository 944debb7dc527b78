//! The copy and fill family: `y = x` over any layouts and broadcasting, and `y = value` where a
//! memset cannot do it (element types wider than 4 bytes, strided views). Both are
//! [`ElementwiseKernel`]s the crate writes itself.

use std::sync::OnceLock;

use cuda_driver::Stream;

use crate::array::device_array::DeviceArray;
use crate::array::dtype::Element;
use crate::array::kernels::{Arg, ElementwiseKernel};
use crate::error::Result;

/// The kernel of `body` named `name`, made on first use.
fn kernel(
    cell: &'static OnceLock<ElementwiseKernel>,
    params: &str,
    body: &str,
    name: &str,
) -> Result<&'static ElementwiseKernel> {
    if let Some(kernel) = cell.get() {
        return Ok(kernel);
    }
    let kernel = ElementwiseKernel::new(params, "T y", body, name)?;
    Ok(cell.get_or_init(|| kernel))
}

/// Queues `destination = source` (same shape, any layouts, not overlapping) on `stream`.
pub(crate) fn copy<T: Element>(
    stream: &Stream,
    source: &DeviceArray<T>,
    destination: &mut DeviceArray<T>,
) -> Result<()> {
    static COPY: OnceLock<ElementwiseKernel> = OnceLock::new();
    kernel(&COPY, "T x", "y = x", "cuda_core_copy")?
        .launch_generated(stream, &[Arg::from(source), Arg::from(destination)])
}

/// Queues `destination = value` for every element on `stream`.
pub(crate) fn fill<T: Element>(stream: &Stream, destination: &mut DeviceArray<T>, value: T) -> Result<()> {
    static FILL: OnceLock<ElementwiseKernel> = OnceLock::new();
    kernel(&FILL, "T value", "y = value", "cuda_core_fill")?
        .launch_generated(stream, &[Arg::scalar(value), Arg::from(destination)])
}
