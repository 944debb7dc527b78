//! A loop that the GPU runs without the host: a graph whose `while` node repeats its body (one
//! Newton step towards `sqrt(a)`) until a kernel in the body decides it has converged. The host
//! launches the graph once per input and reads the root and the number of steps; a new input
//! is a per-node argument update, not a new graph.
//!
//! `cargo run --release --example while_loop_graph`

use std::process::ExitCode;

use cuda_core::{CompileTarget, Device, DeviceBuffer, LaunchConfig, Program, ProgramOptions};
use cuda_driver::{ConditionalKind, Graph, GraphArgs};

const SOURCE: &str = r#"
// A device-runtime builtin that NVRTC's implicit headers do not declare.
extern "C" __device__ __cudart_builtin__ void cudaGraphSetConditional(cudaGraphConditionalHandle handle,
                                                                       unsigned int value);

// state[0] = a, state[1] = the estimate (it starts at or above sqrt(a)).
extern "C" __global__ void start(cudaGraphConditionalHandle loop, double a, double *state, int *steps) {
    state[0] = a;
    state[1] = a > 1.0 ? a : 1.0;
    *steps = 0;
    cudaGraphSetConditional(loop, a > 0.0 ? 1u : 0u);
}

extern "C" __global__ void newton_step(cudaGraphConditionalHandle loop, double *state, int *steps) {
    double x = state[1];
    double next = 0.5 * (x + state[0] / x);
    state[1] = next;
    *steps += 1;
    bool converged = fabs(next - x) <= 1e-15 * next || *steps >= 200;
    cudaGraphSetConditional(loop, converged ? 0u : 1u);
}
"#;

fn main() -> ExitCode {
    examples::run("while_loop_graph", || {
        let device = Device::new(0)?;
        device.set_current()?;
        let code = Program::new(SOURCE, ProgramOptions::default()).compile(CompileTarget::Ptx)?;
        let (start, step) = (code.get_kernel("start")?, code.get_kernel("newton_step")?);
        let context = device.context();
        let state = DeviceBuffer::<f64>::zeroed(context, 2)?;
        let steps = DeviceBuffer::<i32>::zeroed(context, 1)?;
        let one = LaunchConfig::new((1, 1, 1), (1, 1, 1));

        let mut graph = Graph::new(context)?;
        let mut nodes = graph.nodes();
        let handle = nodes.condition_handle(None)?;
        let start_args = |a: f64| GraphArgs::new().condition(&handle).value(a).write(&state).write(&steps);
        // SAFETY: `start` writes two doubles of `state` and one int of `steps`, which hold that.
        let started = unsafe { nodes.kernel(&[], start.function(), &one, start_args(2.0))? };
        nodes.conditional(&[started], &handle, ConditionalKind::While, |_, body| {
            // SAFETY: `newton_step` updates two doubles of `state` and one int of `steps`.
            unsafe {
                body.kernel(
                    &[],
                    step.function(),
                    &one,
                    GraphArgs::new().condition(&handle).write(&state).write(&steps),
                )
            }
            .map(|_| ())
        })?;
        let mut exec = graph.instantiate()?;
        let stream = device.create_stream()?;
        let mut wrong = 0;
        for a in [2.0f64, 1e6, 0.25, 12345.678] {
            // SAFETY: as above, for the new `a`.
            unsafe {
                exec.set_kernel_args(&started, start_args(a))?;
                exec.launch(&stream)?;
            }
            stream.synchronize()?;
            let root = state.to_vec()?[1];
            let taken = steps.to_vec()?[0];
            println!("sqrt({a}) = {root:.15} after {taken} steps decided on the device");
            if (root - a.sqrt()).abs() > 1e-12 * a.sqrt() {
                wrong += 1;
            }
        }
        if wrong > 0 {
            return Err(format!("{wrong} roots were wrong").into());
        }
        Ok(())
    })
}
