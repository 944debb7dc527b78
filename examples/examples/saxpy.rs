//! A templated SAXPY (`y = a * x + y`) instantiated for `float` and `double` through NVRTC
//! name expressions, run on GPU 0 and checked.
//!
//! `cargo run --release --example saxpy`

use std::process::ExitCode;

use cuda_core::{
    launch, CompileTarget, Device, DeviceBuffer, DeviceCopy, LaunchConfig, ObjectCode, Program, ProgramOptions, Stream,
};

const SOURCE: &str = r#"
template <typename T>
__global__ void saxpy(T a, const T *x, T *y, unsigned n) {
    for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        y[i] = a * x[i] + y[i];
}
"#;

/// Runs `saxpy<T>` on `n` elements and returns how many results differ from the host's.
fn run_saxpy<T>(
    device: &Device,
    stream: &Stream,
    code: &ObjectCode,
    expression: &str,
    n: u32,
) -> cuda_core::Result<usize>
where
    T: DeviceCopy + From<u16> + PartialEq + std::ops::Mul<Output = T> + std::ops::Add<Output = T>,
{
    let kernel = code.get_kernel_on(device, expression)?;
    let a = T::from(3);
    let x: Vec<T> = (0..n).map(|i| T::from((i % 1000) as u16)).collect();
    let y: Vec<T> = (0..n).map(|i| T::from((i % 7) as u16)).collect();
    let x_device = DeviceBuffer::from_slice(device.context(), &x)?;
    let mut y_device = DeviceBuffer::from_slice(device.context(), &y)?;
    // A grid-stride loop: a fixed grid covers any n.
    let config = LaunchConfig::new((256, 1, 1), (256, 1, 1));
    // SAFETY: the kernel reads `n` elements of `x` and updates `n` of `y`; both hold `n`.
    unsafe { launch(stream, &config, &kernel, (a, &x_device, &mut y_device, n))? };
    stream.synchronize()?;
    let result = y_device.to_vec()?;
    Ok((0..n as usize).filter(|&i| result[i] != a * x[i] + y[i]).count())
}

fn main() -> ExitCode {
    examples::run("saxpy", || {
        let device = Device::new(0)?;
        device.set_current()?;
        let program =
            Program::new(SOURCE, ProgramOptions::default()).with_name_expressions(["saxpy<float>", "saxpy<double>"]);
        let code = program.compile(CompileTarget::Cubin)?;
        for (expression, symbol) in code.lowered_names() {
            println!("{expression} -> {symbol}");
        }
        let stream = device.create_stream()?;
        let n = 1_000_000;
        let wrong_f32 = run_saxpy::<f32>(&device, &stream, &code, "saxpy<float>", n)?;
        let wrong_f64 = run_saxpy::<f64>(&device, &stream, &code, "saxpy<double>", n)?;
        if wrong_f32 + wrong_f64 > 0 {
            return Err(format!("wrong results: {wrong_f32} (float), {wrong_f64} (double) of {n}").into());
        }
        println!("saxpy: float and double, {n} elements each, all correct");
        Ok(())
    })
}
