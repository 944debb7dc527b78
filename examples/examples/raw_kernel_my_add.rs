//! CuPy's `RawKernel` example: a hand-written `my_add` over two 5x5 `float32` arrays, launched
//! as 5 blocks of 5 threads, one thread per element.
//!
//! What it mirrors (CuPy):
//!
//! ```python
//! my_add = cp.RawKernel(source, "my_add")   # extern "C" my_add(const float*, const float*, float*)
//! x1 = cp.arange(25, dtype=cp.float32).reshape(5, 5)
//! x2 = cp.arange(25, dtype=cp.float32).reshape(5, 5)
//! y = cp.zeros((5, 5), dtype=cp.float32)
//! my_add((5,), (5,), (x1, x2, y))            # grid, block, arguments
//! ```
//!
//! `cargo run --release --example raw_kernel_my_add`

use std::process::ExitCode;

use cuda_core::{Device, DeviceArray, LaunchConfig, ProgramOptions, RawKernel};

const SOURCE: &str = r#"
extern "C" __global__ void my_add(const float *x1, const float *x2, float *y) {
    int i = blockDim.x * blockIdx.x + threadIdx.x;
    y[i] = x1[i] + x2[i];
}
"#;

fn main() -> ExitCode {
    examples::run("raw_kernel_my_add", || {
        let stream = Device::new(0)?.create_stream()?;
        // Compiled for the device's architecture (through the kernel cache) on first launch.
        let my_add = RawKernel::new(SOURCE, "my_add", ProgramOptions::default())?;

        let x1 = DeviceArray::<f32>::arange(&stream, 0.0, 25.0, 1.0)?.reshape([5, 5])?;
        let x2 = DeviceArray::<f32>::arange(&stream, 0.0, 25.0, 1.0)?.reshape([5, 5])?;
        let mut y = DeviceArray::<f32>::zeros(&stream, [5, 5])?;
        let config = LaunchConfig::new((5, 1, 1), (5, 1, 1));
        // SAFETY: my_add has 25 threads each read element i of x1 and x2 and write element i of
        // y; all three are compact 5x5 float arrays (25 elements).
        unsafe { my_add.launch(&stream, &config, (&x1, &x2, &mut y))? };

        let result = y.to_vec()?;
        let expected: Vec<f32> = (0..25).map(|i| 2.0 * i as f32).collect();
        for row in result.chunks(5) {
            println!("{row:?}");
        }
        if result != expected {
            return Err(format!("y = {result:?}, expected x1 + x2 = {expected:?}").into());
        }
        println!("raw_kernel_my_add: y = x1 + x2 on 5x5, all 25 correct");
        Ok(())
    })
}
