//! Host work of a cache-hit array expression against a raw launch of the same kernel, for
//! counting instructions (no timing): `expression_cost MODE COUNT` runs COUNT calls of one kind
//! on the stand-in driver inside `measured`, after a warm-up call, so that
//!
//! ```text
//! valgrind --tool=callgrind --collect-atstart=no --toggle-collect='*measured*' \
//!     target/debug/examples/expression_cost assign 1000
//! ```
//!
//! counts only those calls. MODE is `raw` (a kernel compiled from source with the expression
//! kernel's name and parameters, found in a locked list per context as `RawKernel` finds its
//! own, then `cuda_core::launch`), `assign` (`w.assign(&x * &y + &z)`, what bench-array times
//! against `RawKernel`) or `eval` (`(&x * &y + &z).eval()`, a new array each call). The stand-in
//! runs both kernels on the host over N elements. Needs NVRTC (`CUDA_NVRTC_LIBRARY`).

use std::sync::{Arc, Mutex, PoisonError};

use cuda_core::{CompileTarget, DeviceArray, Kernel, LaunchConfig, Program, ProgramOptions};
use cuda_driver::{Context, Stream};

/// Elements per array: few, so that the stand-in's host kernel adds little to the count.
const N: usize = 8;

const RAW_SOURCE: &str = r#"extern "C" __global__ void cuda_core_expr(const float *x, const float *y, const float *z, float *out, unsigned long long n) {
    unsigned long long i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = x[i] * y[i] + z[i];
}"#;

/// The kernels loaded per context, found as `RawKernel::kernel_for` finds its own.
struct Loaded(Mutex<Vec<Arc<Kernel>>>);

impl Loaded {
    fn get(&self, context: &Context) -> Arc<Kernel> {
        let loaded = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        loaded.iter().find(|k| k.context() == context).cloned().expect("loaded")
    }
}

#[inline(never)]
fn measured(count: usize, mut call: impl FnMut()) {
    for _ in 0..count {
        call();
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let mode = args.get(1).map_or("assign", String::as_str);
    if !["raw", "assign", "eval"].contains(&mode) {
        eprintln!("expression_cost: unknown mode {mode}: raw, assign or eval");
        std::process::exit(2);
    }
    let count: usize = args.get(2).and_then(|c| c.parse().ok()).unwrap_or(1000);
    cuda_core::load_generated_as_ptx(true);
    let (_fake, context) = tests::checks::setup();
    let stream = Stream::new(&context).unwrap();
    let xs: Vec<f32> = (0..N).map(|i| i as f32).collect();
    let x = DeviceArray::from_slice(&stream, &xs).unwrap();
    let y = DeviceArray::full(&stream, N, 2.0f32).unwrap();
    let z = DeviceArray::full(&stream, N, 1.0f32).unwrap();
    let mut w = DeviceArray::<f32>::empty(&stream, N).unwrap();
    match mode {
        "raw" => {
            let code = Program::new(RAW_SOURCE, ProgramOptions::default())
                .compile(CompileTarget::Ptx)
                .unwrap();
            let loaded = Loaded(Mutex::new(vec![Arc::new(code.get_kernel("cuda_core_expr").unwrap())]));
            let config = LaunchConfig::for_num_elems(N as u32);
            let mut launch = || {
                let kernel = loaded.get(stream.context());
                // SAFETY: the kernel reads N floats of x, y and z and writes N of w.
                unsafe { cuda_core::launch(&stream, &config, &kernel, (&x, &y, &z, &mut w, N as u64)) }.unwrap();
            };
            launch();
            measured(count, launch);
        }
        "assign" => {
            let mut assign = || w.assign(&x * &y + &z).unwrap();
            assign();
            measured(count, assign);
        }
        "eval" => {
            let eval = || drop(std::hint::black_box((&x * &y + &z).eval().unwrap()));
            eval();
            measured(count, eval);
        }
        _ => unreachable!("the mode was checked above"),
    }
    stream.synchronize().unwrap();
    assert!(w
        .to_vec()
        .unwrap()
        .iter()
        .enumerate()
        .all(|(i, &v)| mode == "eval" || v == 2.0 * i as f32 + 1.0));
}
