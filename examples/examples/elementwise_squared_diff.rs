//! CuPy's `ElementwiseKernel` example: one generic `squared_diff` kernel (type placeholder `T`)
//! run on `float32`, `float64` and `int32`, with a `(2, 5)` array broadcast against a `(5,)`
//! array and against a scalar. Each element type compiles its own kernel on first use.
//!
//! What it mirrors (CuPy):
//!
//! ```python
//! squared_diff = cp.ElementwiseKernel("T x, T y", "T z", "z = (x - y) * (x - y)", "squared_diff")
//! x = cp.arange(10, dtype=np.float32).reshape(2, 5)
//! y = cp.arange(5, dtype=np.float32)
//! squared_diff(x, y)   # y broadcast over the rows of x
//! squared_diff(x, 5)   # a scalar
//! ```
//!
//! Unlike CuPy, outputs are passed in (here `z`, of the broadcast shape) rather than allocated,
//! and a scalar has the kernel's type (`Arg::scalar(5.0f32)`). And the launch is `unsafe`: the
//! operation is C++ the crate cannot check, so the caller states why it touches only the
//! elements it is given.
//!
//! `cargo run --release --example elementwise_squared_diff`

use std::fmt::Debug;
use std::ops::{Mul, Sub};
use std::process::ExitCode;

use cuda_core::{Arg, Device, DeviceArray, Element, ElementwiseKernel, Stream};

/// Runs `squared_diff` (`kernel`, built in `main`) on `T` against `y` and against a scalar;
/// returns a description of any result that differs from the host's.
fn check<T>(kernel: &ElementwiseKernel, stream: &Stream) -> Result<(), Box<dyn std::error::Error>>
where
    T: Element + Sub<Output = T> + Mul<Output = T> + PartialEq + Debug,
{
    let at = T::from_f64;
    let x = DeviceArray::<T>::arange(stream, at(0.0), at(10.0), at(1.0))?.reshape([2, 5])?;
    let y = DeviceArray::<T>::arange(stream, at(0.0), at(5.0), at(1.0))?;
    let mut z = DeviceArray::<T>::empty(stream, [2, 5])?;
    let squared = |a: T, b: T| (a - b) * (a - b);

    // SAFETY: `kernel` is main's `squared_diff`, whose operation reads its elements of `x` and
    // `y` and assigns its element of `z`, nothing else.
    unsafe { kernel.launch(stream, &[Arg::from(&x), Arg::from(&y), Arg::from(&mut z)])? };
    let with_array = z.to_vec()?;
    let expected: Vec<T> = (0..10).map(|i| squared(at(i as f64), at((i % 5) as f64))).collect();
    println!("  {}: squared_diff(x, y) = {with_array:?}", T::DTYPE);
    if with_array != expected {
        return Err(format!(
            "{}: squared_diff(x, y) = {with_array:?}, expected {expected:?}",
            T::DTYPE
        )
        .into());
    }

    // SAFETY: as above, with a scalar for `y`.
    unsafe { kernel.launch(stream, &[Arg::from(&x), Arg::scalar(at(5.0)), Arg::from(&mut z)])? };
    let with_scalar = z.to_vec()?;
    let expected: Vec<T> = (0..10).map(|i| squared(at(i as f64), at(5.0))).collect();
    println!("  {}: squared_diff(x, 5) = {with_scalar:?}", T::DTYPE);
    if with_scalar != expected {
        return Err(format!(
            "{}: squared_diff(x, 5) = {with_scalar:?}, expected {expected:?}",
            T::DTYPE
        )
        .into());
    }
    Ok(())
}

fn main() -> ExitCode {
    examples::run("elementwise_squared_diff", || {
        let stream = Device::new(0)?.create_stream()?;
        let squared_diff = ElementwiseKernel::new("T x, T y", "T z", "z = (x - y) * (x - y)", "squared_diff")?;
        check::<f32>(&squared_diff, &stream)?;
        check::<f64>(&squared_diff, &stream)?;
        check::<i32>(&squared_diff, &stream)?;
        println!("squared_diff: float32, float64 and int32, array and scalar operands, all correct");
        Ok(())
    })
}
