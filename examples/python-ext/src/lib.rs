//! `cuda_rs_ext`, an example Python extension module (feature `python`): one Rust
//! [`ElementwiseKernel`](cuda_core::ElementwiseKernel) registered as the Python function `squared_diff(a, b)`, which takes two
//! torch tensors (or CuPy arrays) of one float type on one GPU and returns `(a - b) ** 2` as a
//! tensor of the same library, zero-copy both ways (DLPack in, DLPack out), so it mixes into an
//! otherwise-PyTorch computation. The module also has `cuda_core`'s `DeviceArray`,
//! `from_dlpack` and `pool_used_bytes` (see `cuda_core::python`).
//!
//! ```python
//! import torch, cuda_rs_ext
//! a, b = torch.randn(1, 2, 3, 4, device="cuda"), torch.randn(1, 2, 3, 4, device="cuda")
//! assert torch.allclose(cuda_rs_ext.squared_diff(a, b), (a - b) ** 2)
//! ```
#![cfg(feature = "python")]

use std::sync::OnceLock;

use cuda_core::python::{register, PyDeviceArray, PyElement};
use cuda_core::{broadcast_shapes, Arg, DeviceArray, ElementwiseKernel};
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;

/// `out = (a - b)^2`, generated for each element type on first use.
fn kernel() -> cuda_core::Result<&'static ElementwiseKernel> {
    static KERNEL: OnceLock<ElementwiseKernel> = OnceLock::new();
    if let Some(kernel) = KERNEL.get() {
        return Ok(kernel);
    }
    let kernel = ElementwiseKernel::new("T a, T b", "T out", "out = (a - b) * (a - b)", "squared_diff")?;
    Ok(KERNEL.get_or_init(|| kernel))
}

/// `(a - b)^2` into a new array of the broadcast shape, on `a`'s stream.
fn run<T: PyElement>(a: &DeviceArray<T>, b: &DeviceArray<T>) -> cuda_core::Result<DeviceArray<T>> {
    let stream = a.stream();
    let mut out = DeviceArray::<T>::empty(stream, broadcast_shapes(a.shape(), b.shape())?)?;
    // SAFETY: the operation reads its two input elements and assigns its output element only.
    unsafe { kernel()?.launch(stream, &[Arg::from(a), Arg::from(b), Arg::from(&mut out)])? };
    Ok(out)
}

/// The result for element type `T`, or `None` when the arrays are not both of it.
fn typed<'py, T: PyElement>(
    a: &PyDeviceArray,
    b: &PyDeviceArray,
    like: &Bound<'py, PyAny>,
) -> Option<PyResult<Bound<'py, PyAny>>> {
    let (a, b) = (a.as_array::<T>()?, b.as_array::<T>()?);
    Some(
        run(a, b)
            .map_err(PyErr::from)
            .and_then(|out| out.into_python_like(like)),
    )
}

/// `squared_diff(a, b)`: `(a - b) ** 2` of two CUDA tensors of one float type (float16,
/// bfloat16, float32, float64; any strides, broadcasting), computed by a Rust kernel on the
/// legacy default stream, returned as a tensor of `a`'s library.
#[pyfunction]
fn squared_diff<'py>(a: &Bound<'py, PyAny>, b: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    let (x, y) = (PyDeviceArray::from_python(a)?, PyDeviceArray::from_python(b)?);
    typed::<f32>(&x, &y, a)
        .or_else(|| typed::<f64>(&x, &y, a))
        .or_else(|| typed::<half::f16>(&x, &y, a))
        .or_else(|| typed::<half::bf16>(&x, &y, a))
        .unwrap_or_else(|| {
            Err(PyTypeError::new_err(format!(
                "squared_diff takes two tensors of one float type (float16, bfloat16, float32, float64), not {} and {}",
                x.dtype(),
                y.dtype()
            )))
        })
}

/// A Rust CUDA kernel as a Python function: `squared_diff(a, b)`; and cuda-core's
/// `DeviceArray`, `from_dlpack(obj)` and `pool_used_bytes(device=0)`.
#[pymodule]
fn cuda_rs_ext(module: &Bound<'_, PyModule>) -> PyResult<()> {
    register(module)?;
    module.add_function(wrap_pyfunction!(squared_diff, module)?)
}
