//! Compiles a vector addition with NVRTC, runs it on GPU 0 and checks the result.
//!
//! `cargo run --release --example vector_add`

use std::process::ExitCode;

use cuda_core::{launch, CompileTarget, Device, DeviceBuffer, LaunchConfig, Program, ProgramOptions};

const SOURCE: &str = r#"
extern "C" __global__ void vector_add(const float *a, const float *b, float *c, unsigned n) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}
"#;

fn main() -> ExitCode {
    examples::run("vector_add", || {
        let device = Device::new(0)?;
        device.set_current()?;
        println!("device 0: {} ({})", device.name()?, device.arch()?);

        // No arch given: NVRTC compiles for the current device's.
        let (code, outcome) =
            Program::new(SOURCE, ProgramOptions::default()).compile_with_outcome(CompileTarget::Cubin)?;
        println!("compiled vector_add: {} byte CUBIN ({outcome:?})", code.code().len());
        let kernel = code.get_kernel_on(&device, "vector_add")?;

        let n: u32 = 1 << 20;
        let a: Vec<f32> = (0..n).map(|i| i as f32).collect();
        let b: Vec<f32> = (0..n).map(|i| 2.0 * i as f32).collect();
        let stream = device.create_stream()?;
        let a_device = DeviceBuffer::from_slice(device.context(), &a)?;
        let b_device = DeviceBuffer::from_slice(device.context(), &b)?;
        let mut c_device = DeviceBuffer::<f32>::zeroed(device.context(), n as usize)?;

        let config = LaunchConfig::for_num_elems(n);
        // SAFETY: the kernel reads `n` floats from `a` and `b` and writes `n` to `c`; all three
        // buffers hold `n` elements.
        unsafe { launch(&stream, &config, &kernel, (&a_device, &b_device, &mut c_device, n))? };
        stream.synchronize()?;

        let c = c_device.to_vec()?;
        let wrong = (0..n as usize).filter(|&i| c[i] != a[i] + b[i]).count();
        if wrong > 0 {
            return Err(format!(
                "{wrong} of {n} sums are wrong (c[1] = {}, expected {})",
                c[1],
                a[1] + b[1]
            )
            .into());
        }
        println!("c[0..4] = {:?} ... c[{}] = {}", &c[..4], n - 1, c[n as usize - 1]);
        println!("vector_add: all {n} sums correct");
        Ok(())
    })
}
