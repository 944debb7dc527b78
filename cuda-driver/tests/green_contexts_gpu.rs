//! Green contexts on a GPU: a compute-bound kernel of many blocks on a stream of a 16-SM green
//! context takes about (device SMs / group SMs) times as long as on an ordinary stream, and
//! computes the same values. The time ratio is not asserted under a tool that injects itself into
//! the driver, which slows kernels by its own measure (profilers and some of compute-sanitizer's
//! tools set `CUDA_INJECTION64_PATH`; racecheck does not, and the bundle's `run.sh` sets
//! `SANITIZER_TOOL` for every sanitizer run); the values are. `skipped: <why>` without a GPU or without a driver for CUDA 12.5
//! (fails then if `CUDA_REQUIRE_GPU=1`); the NVRTC compile of the kernel runs wherever NVRTC does.

mod common;

use cuda_driver::{DeviceBuffer, Error, Event, EventFlags, GreenContext, LaunchConfig, Module, Stream};

/// A dependent chain of integer multiply-adds per thread: compute-bound, no memory traffic but
/// one store.
const SPIN: &str = r#"
extern "C" __global__ void spin(unsigned *out, unsigned iterations) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned x = i;
    for (unsigned k = 0; k < iterations; ++k) {
        x = x * 1664525u + 1013904223u;
    }
    out[i] = x;
}
"#;

const THREADS: u32 = 256;
const ITERATIONS: u32 = 50_000;

/// What `spin` leaves at index `i`.
fn expected(i: u32) -> u32 {
    (0..ITERATIONS).fold(i, |x, _| x.wrapping_mul(1664525).wrapping_add(1013904223))
}

#[test]
fn spin_kernel_compiles_with_nvrtc() {
    if let Err(why) = cuda_sys::nvrtc() {
        common::skip::<()>(&format!("no NVRTC ({why})"));
        return;
    }
    let ptx = common::compile(SPIN, (9, 0)).unwrap_or_else(|log| panic!("NVRTC failed:\n{log}"));
    assert!(ptx.contains(".entry spin"), "{ptx}");
}

/// Milliseconds `blocks` blocks of `spin` take on `stream` (after one untimed launch).
fn time_spin(stream: &Stream, module: &Module, out: &mut DeviceBuffer<u32>, blocks: u32) -> f32 {
    let spin = module.function("spin").unwrap();
    let config = LaunchConfig {
        grid: (blocks, 1, 1),
        block: (THREADS, 1, 1),
        shared_mem_bytes: 0,
    };
    let context = stream.context();
    let (start, end) = (
        Event::new(context, EventFlags::empty()).unwrap(),
        Event::new(context, EventFlags::empty()).unwrap(),
    );
    // SAFETY: `spin` writes one u32 per thread, blocks * THREADS of them, which `out` holds.
    unsafe { stream.launch(&spin, &config, (&mut *out, ITERATIONS)) }.unwrap();
    start.record(stream).unwrap();
    // SAFETY: as above.
    unsafe { stream.launch(&spin, &config, (&mut *out, ITERATIONS)) }.unwrap();
    end.record(stream).unwrap();
    end.synchronize().unwrap();
    start.elapsed_ms(&end).unwrap()
}

#[test]
fn a_kernel_on_a_16_sm_green_context_takes_its_share_of_the_device() {
    let Some(context) = common::context() else { return };
    let device = context.device();
    let sms = match device.sm_resource() {
        Ok(sms) => sms,
        Err(error @ Error::NotSupported { .. }) => {
            common::skip::<()>(&format!("no green contexts: {error}"));
            return;
        }
        Err(error) => panic!("{error}"),
    };
    let device_sms = device.multiprocessor_count().unwrap();
    assert_eq!(sms.sm_count(), device_sms);
    let split = sms.split(1, 16).unwrap();
    let group = split.groups[0];
    assert!(group.sm_count() >= 16, "{group:?}");
    assert_eq!(
        group.sm_count() + split.remainder.map_or(0, |r| r.sm_count()),
        device_sms,
        "{split:?}"
    );
    let green = match GreenContext::new(&device, &split.groups) {
        Ok(green) => green,
        Err(error) => panic!("cuGreenCtxCreate: {error}"),
    };
    assert_eq!(green.sm_resource().unwrap().sm_count(), group.sm_count());
    let green_stream = match green.stream() {
        Ok(stream) => stream,
        Err(error @ Error::NotSupported { .. }) => {
            common::skip::<()>(&format!("no green context streams: {error}"));
            return;
        }
        Err(error) => panic!("{error}"),
    };
    let stream = Stream::new(&context).unwrap();

    let arch = device.compute_capability().unwrap();
    let ptx = common::compile(SPIN, arch).unwrap_or_else(|log| panic!("NVRTC failed:\n{log}"));
    let module = Module::from_ptx(&context, &ptx).unwrap();
    // Many waves on either: 16 x 8 blocks per SM of the whole device.
    let blocks = device_sms * 16 * 8;
    let n = (blocks * THREADS) as usize;
    let mut on_device = DeviceBuffer::<u32>::zeroed(&context, n).unwrap();
    let mut on_green = DeviceBuffer::<u32>::zeroed(&context, n).unwrap();
    let whole = time_spin(&stream, &module, &mut on_device, blocks);
    let partition = time_spin(&green_stream, &module, &mut on_green, blocks);

    let predicted = device_sms as f32 / group.sm_count() as f32;
    let ratio = partition / whole;
    println!(
        "green context of {} of {device_sms} SMs: {partition:.2} ms, whole device {whole:.2} ms, \
         ratio {ratio:.2} (predicted {predicted:.2})",
        group.sm_count()
    );
    if ["CUDA_INJECTION64_PATH", "SANITIZER_TOOL"]
        .iter()
        .any(|tool| std::env::var_os(tool).is_some())
    {
        println!("the ratio is not asserted: a tool is injected (CUDA_INJECTION64_PATH or SANITIZER_TOOL)");
    } else {
        assert!(
            (0.5 * predicted..=1.5 * predicted).contains(&ratio),
            "ratio {ratio:.2} is not within 0.5..1.5 of the predicted {predicted:.2}"
        );
    }
    let (device_values, green_values) = (on_device.to_vec().unwrap(), on_green.to_vec().unwrap());
    assert!(device_values == green_values, "the green context computed other values");
    for i in [0, 1, 255, 256, n as u32 / 2, n as u32 - 1] {
        assert_eq!(green_values[i as usize], expected(i), "index {i}");
    }
}
