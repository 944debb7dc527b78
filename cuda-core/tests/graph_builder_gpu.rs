//! cuda.core's `GraphBuilder` on a GPU: forks joined back, a while loop whose trip count the
//! device decides, if/else bodies, array work (an expression, a reduction, a matrix product, a
//! sort) captured once and replayed on new input contents with the eager results, pool
//! allocations under a capture, host waits refused with a typed error, foreign conditions and
//! another context's stream refused, and `CapturedStep` replaying a training-like step. The
//! NVRTC compile of the condition kernels runs wherever NVRTC does. Without a driver or device
//! the GPU tests print `skipped: <why>` and pass, unless `CUDA_REQUIRE_GPU=1`. Alone in its
//! binary: while a capture is active, no other thread may synchronise the context.

mod common;

use cuda_core::graph::{CaptureMode, CapturedStep, GraphBuilder, CONDITION_PRELUDE};
use cuda_core::{
    Arch, CompileTarget, Device, DeviceArray, Error, Kernel, LaunchConfig, MemoryPool, Program, ProgramOptions,
};

const KERNELS: &str = r#"
// Before a loop: the trip count is read on the device; the loop runs while it is positive.
extern "C" __global__ void loop_start(cudaGraphConditionalHandle loop, const int *trips, int *left, int *done) {
    *left = *trips;
    *done = 0;
    cudaGraphSetConditional(loop, *trips > 0 ? 1u : 0u);
}

// One iteration: counts itself and decides whether another runs.
extern "C" __global__ void loop_step(cudaGraphConditionalHandle loop, int *left, int *done) {
    *done += 1;
    *left -= 1;
    cudaGraphSetConditional(loop, *left > 0 ? 1u : 0u);
}

// Sets a condition from device memory.
extern "C" __global__ void choose(cudaGraphConditionalHandle handle, const unsigned *value) {
    cudaGraphSetConditional(handle, *value);
}

extern "C" __global__ void fill(float *out, float value, unsigned n) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = value;
}

extern "C" __global__ void add(const float *a, const float *b, float *out, unsigned n) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = a[i] + b[i];
}
"#;

fn source() -> String {
    format!("{CONDITION_PRELUDE}{KERNELS}")
}

fn kernels(device: &Device) -> [Kernel; 5] {
    device.set_current().unwrap();
    let options = ProgramOptions {
        arch: Some(device.arch().unwrap()),
        ..ProgramOptions::default()
    };
    let code = Program::new(source(), options).compile(CompileTarget::Ptx).unwrap();
    ["loop_start", "loop_step", "choose", "fill", "add"].map(|name| code.get_kernel_on(device, name).unwrap())
}

const ONE: LaunchConfig = LaunchConfig {
    grid: (1, 1, 1),
    block: (1, 1, 1),
    shared_mem_bytes: 0,
};

#[test]
fn condition_kernels_compile_with_the_prelude() {
    if let Err(why) = cuda_sys::nvrtc() {
        println!("skipped: condition_kernels_compile_with_the_prelude: no NVRTC ({why})");
        return;
    }
    for target in [CompileTarget::Ptx, CompileTarget::Cubin] {
        let options = ProgramOptions {
            cache: false,
            ..ProgramOptions::for_arch(Arch::Sm(90))
        };
        let code = Program::new(source(), options).compile(target).unwrap();
        if target == CompileTarget::Ptx {
            let ptx = code.ptx().unwrap();
            assert!(ptx.contains("cudaGraphSetConditional"), "{ptx}");
            assert!(ptx.contains(".entry loop_step"), "{ptx}");
        }
    }
}

#[test]
fn forks_run_beside_each_other_and_join_before_what_follows() {
    let Some(device) = common::device_or_skip("forks_run_beside_each_other_and_join_before_what_follows") else {
        return;
    };
    let [_, _, _, fill, add] = kernels(&device);
    let stream = device.create_stream().unwrap();
    let n = 1 << 16;
    let mut a = DeviceArray::<f32>::zeros(&stream, n).unwrap();
    let mut b = DeviceArray::<f32>::zeros(&stream, n).unwrap();
    let mut out = DeviceArray::<f32>::zeros(&stream, n).unwrap();
    let config = LaunchConfig::for_num_elems(n as u32);
    let mut builder = GraphBuilder::new(&stream);
    builder
        .build(CaptureMode::ThreadLocal, |root| {
            let forks = root.fork(2)?;
            assert!(forks.iter().all(GraphBuilder::is_join_required));
            let capture = root.stream().capture_id()?;
            assert!(capture.is_some());
            assert_eq!(
                forks[1].stream().capture_id()?,
                capture,
                "forks are in the root's capture"
            );
            // SAFETY: `fill` writes n floats of `a` and `b`, which hold n; they outlive the graph's launches.
            unsafe {
                forks[0].launch(&config, &fill, (&mut a, 1.5f32, n as u32))?;
                forks[1].launch(&config, &fill, (&mut b, 2.0f32, n as u32))?;
            }
            root.join(forks)?;
            // SAFETY: `add` reads n floats of `a` and `b` and writes n of `out`.
            unsafe { root.launch(&config, &add, (&a, &b, &mut out, n as u32)) }
        })
        .unwrap();
    assert!(builder.graph().unwrap().node_count().unwrap() >= 3);
    let graph = builder.complete().unwrap();
    graph.upload(&stream).unwrap();
    for _ in 0..3 {
        out.fill(0.0).unwrap();
        // SAFETY: `a`, `b` and `out` outlive the launch.
        unsafe { graph.launch(&stream).unwrap() };
        assert!(out.to_vec().unwrap().iter().all(|&v| v == 3.5));
    }
}

#[test]
fn a_while_loop_runs_as_many_times_as_the_device_decides() {
    let Some(device) = common::device_or_skip("a_while_loop_runs_as_many_times_as_the_device_decides") else {
        return;
    };
    let [loop_start, loop_step, ..] = kernels(&device);
    let stream = device.create_stream().unwrap();
    let mut trips = DeviceArray::<i32>::zeros(&stream, 1).unwrap();
    let mut left = DeviceArray::<i32>::zeros(&stream, 1).unwrap();
    let mut done = DeviceArray::<i32>::zeros(&stream, 1).unwrap();
    let mut builder = GraphBuilder::new(&stream);
    builder.begin_building(CaptureMode::ThreadLocal).unwrap();
    let condition = builder.create_condition(None).unwrap();
    // SAFETY: the kernels read and write one int of each array, which outlive the launches.
    unsafe {
        builder
            .launch(&ONE, &loop_start, (condition.value(), &trips, &mut left, &mut done))
            .unwrap()
    };
    let mut body = builder.while_(&condition).unwrap();
    body.build(CaptureMode::ThreadLocal, |body| {
        // SAFETY: as above.
        unsafe { body.launch(&ONE, &loop_step, (condition.value(), &mut left, &mut done)) }
    })
    .unwrap();
    drop(body);
    builder.end_building().unwrap();
    let graph = builder.complete().unwrap();
    for count in [0, 1, 5, 17] {
        trips.copy_from_host(&[count]).unwrap();
        // SAFETY: the arrays outlive the launch.
        unsafe { graph.launch(&stream).unwrap() };
        assert_eq!(done.to_vec().unwrap(), [count], "iterations for {count} trips");
    }
}

#[test]
fn if_else_bodies_follow_the_device_condition() {
    let Some(device) = common::device_or_skip("if_else_bodies_follow_the_device_condition") else {
        return;
    };
    let [_, _, choose, fill, _] = kernels(&device);
    let stream = device.create_stream().unwrap();
    let mut value = DeviceArray::<u32>::zeros(&stream, 1).unwrap();
    let mut out = DeviceArray::<f32>::zeros(&stream, 1).unwrap();
    let mut builder = GraphBuilder::new(&stream);
    builder.begin_building(CaptureMode::ThreadLocal).unwrap();
    let condition = builder.create_condition(Some(0)).unwrap();
    // SAFETY: `choose` reads one unsigned of `value`; `fill` writes one float of `out`.
    unsafe { builder.launch(&ONE, &choose, (condition.value(), &value)).unwrap() };
    let (mut then, mut otherwise) = builder.if_else(&condition).unwrap();
    then.begin_building(CaptureMode::ThreadLocal).unwrap();
    // SAFETY: `fill` writes one float of `out`.
    unsafe { then.launch(&ONE, &fill, (&mut out, 1.0f32, 1u32)).unwrap() };
    // The capture that holds the body cannot end under it, even through its stream.
    let refused = stream.end_capture().map(drop);
    assert!(
        matches!(refused, Err(cuda_core::driver::Error::InvalidValue(_))),
        "{refused:?}"
    );
    then.end_building().unwrap();
    otherwise
        .build(CaptureMode::ThreadLocal, |b| {
            // SAFETY: as above.
            unsafe { b.launch(&ONE, &fill, (&mut out, -1.0f32, 1u32)) }
        })
        .unwrap();
    drop((then, otherwise));
    builder.end_building().unwrap();
    let graph = builder.complete().unwrap();
    for (choice, expected) in [(1u32, 1.0f32), (0, -1.0), (7, 1.0)] {
        value.copy_from_host(&[choice]).unwrap();
        // SAFETY: the arrays outlive the launch.
        unsafe { graph.launch(&stream).unwrap() };
        assert_eq!(out.to_vec().unwrap(), [expected], "condition {choice}");
    }
}

/// The eager results of the array step on `x` (n) and `w` (n x n): an expression, its sum,
/// a matrix-vector product and a sort.
fn array_step(x: &DeviceArray<f32>, w: &DeviceArray<f32>) -> cuda_core::Result<[DeviceArray<f32>; 4]> {
    let n = x.len();
    let y = (x * 2.0f32 + 1.0f32).eval()?;
    let total = y.sum()?.reshape([1])?;
    let product = w.matmul(&y.reshape([n, 1])?)?.reshape([n])?;
    let sorted = x.sort(0)?;
    Ok([y, total, product, sorted])
}

fn inputs(n: usize, seed: u32) -> Vec<f32> {
    (0..n)
        .map(|i| (((i as u32).wrapping_mul(2654435761) ^ seed) % 1000) as f32 / 100.0 - 5.0)
        .collect()
}

fn assert_close(what: &str, got: &[f32], want: &[f32]) {
    assert_eq!(got.len(), want.len(), "{what}: lengths");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!((g - w).abs() <= 1e-3 * w.abs().max(1.0), "{what}[{i}]: {g} vs {w}");
    }
}

#[test]
fn array_work_captured_once_replays_new_inputs_like_eager_runs() {
    let Some(stream) = common::blas_stream_or_skip("array_work_captured_once_replays_new_inputs_like_eager_runs")
    else {
        return;
    };
    let n = 256;
    let mut x = DeviceArray::from_slice(&stream, &inputs(n, 1)).unwrap();
    let w = DeviceArray::from_slice(&stream, &inputs(n * n, 2))
        .unwrap()
        .reshape([n, n])
        .unwrap();
    // The warm-up: kernels loaded, the stream's cuBLAS handle made.
    let eager = array_step(&x, &w).unwrap();
    let mut outputs: Vec<DeviceArray<f32>> = eager
        .iter()
        .map(|a| DeviceArray::zeros(&stream, a.shape().to_vec()).unwrap())
        .collect();
    let pool = MemoryPool::for_context(stream.context());
    let before = pool.stats();
    let mut builder = GraphBuilder::new(&stream);
    builder
        .build(CaptureMode::ThreadLocal, |_| {
            let results = array_step(&x, &w)?;
            for (output, result) in outputs.iter_mut().zip(&results) {
                output.copy_from(result)?;
            }
            Ok(())
        })
        .unwrap();
    let after = pool.stats();
    assert_eq!(
        (after.used_bytes, after.held_bytes),
        (before.used_bytes, before.held_bytes),
        "allocations under the capture are graph memory, not pool blocks"
    );
    let graph = builder.complete().unwrap();
    for seed in [3, 4, 5] {
        let host = inputs(n, seed);
        x.copy_from_host(&host).unwrap();
        // SAFETY: `x`, `w` and `outputs` outlive the launch; the graph owns its temporaries.
        unsafe { graph.launch(&stream).unwrap() };
        let want = array_step(&x, &w).unwrap();
        for (index, (got, want)) in outputs.iter().zip(&want).enumerate() {
            assert_close(
                &format!("seed {seed}, output {index}"),
                &got.to_vec().unwrap(),
                &want.to_vec().unwrap(),
            );
        }
    }
}

#[test]
fn host_waits_under_a_capture_are_typed_errors_and_leave_it_valid() {
    let Some(device) = common::device_or_skip("host_waits_under_a_capture_are_typed_errors_and_leave_it_valid") else {
        return;
    };
    let stream = device.create_stream().unwrap();
    let x = DeviceArray::from_slice(&stream, &[1.0f32, 0.0, 2.0]).unwrap();
    let mut y = DeviceArray::<f32>::zeros(&stream, 3).unwrap();
    // The warm-up: the kernels used below are loaded before the capture.
    y.assign(&x * 3.0f32).unwrap();
    assert_eq!(x.sum().unwrap().item().unwrap(), 3.0);
    assert_eq!(x.nonzero().unwrap()[0].to_vec().unwrap(), [0, 2]);
    let mut builder = GraphBuilder::new(&stream);
    builder
        .build(CaptureMode::ThreadLocal, |_| {
            assert!(matches!(x.to_vec(), Err(Error::HostWaitInCapture { call: "to_vec" })));
            assert!(matches!(x.nonzero(), Err(Error::HostWaitInCapture { .. })));
            assert!(matches!(
                x.sum().and_then(|s| s.item()),
                Err(Error::HostWaitInCapture { .. })
            ));
            let mut staged = DeviceArray::<f32>::zeros(&stream, 3)?;
            assert!(matches!(
                staged.copy_from_host(&[1.0, 2.0, 3.0]),
                Err(Error::HostWaitInCapture { .. })
            ));
            y.assign(&x * 3.0f32)
        })
        .unwrap();
    let graph = builder.complete().unwrap();
    // SAFETY: `x` and `y` outlive the launch.
    unsafe { graph.launch(&stream).unwrap() };
    assert_eq!(y.to_vec().unwrap(), [3.0, 0.0, 6.0]);
}

#[test]
fn foreign_conditions_and_another_contexts_stream_are_refused() {
    let Some(device) = common::device_or_skip("foreign_conditions_and_another_contexts_stream_are_refused") else {
        return;
    };
    let [_, _, _, fill, _] = kernels(&device);
    let mut out = DeviceArray::<f32>::zeros(&device.create_stream().unwrap(), 1).unwrap();
    let (first, second) = (device.create_stream().unwrap(), device.create_stream().unwrap());
    let mut a = GraphBuilder::new(&first);
    let mut b = GraphBuilder::new(&second);
    a.begin_building(CaptureMode::ThreadLocal).unwrap();
    b.begin_building(CaptureMode::ThreadLocal).unwrap();
    let foreign = a.create_condition(Some(0)).unwrap();
    let refused = b.while_(&foreign).map(drop);
    assert!(
        matches!(refused, Err(Error::Driver(cuda_core::driver::Error::WrongGraph { .. }))),
        "{refused:?}"
    );
    let mut body = a.if_(&foreign).unwrap();
    body.build(CaptureMode::ThreadLocal, |b| {
        // SAFETY: `fill` writes the one float of `out`, which outlives the graph.
        unsafe { b.launch(&ONE, &fill, (&mut out, 1.0f32, 1u32)) }
    })
    .unwrap();
    drop(body);
    a.end_building().unwrap();
    b.end_building().unwrap();
    let graph = a.complete().unwrap();
    let other = cuda_core::driver::Context::new(device.as_driver_device(), cuda_core::driver::ContextFlags::SCHED_AUTO)
        .unwrap();
    let foreign_stream = cuda_core::Stream::new(&other).unwrap();
    // SAFETY: refused before anything runs.
    let launched = unsafe { graph.launch(&foreign_stream) };
    assert!(
        matches!(
            launched,
            Err(Error::Driver(cuda_core::driver::Error::WrongContext { .. }))
        ),
        "{launched:?}"
    );
    // Not building: refused before the driver is asked.
    assert!(matches!(
        a.begin_building(CaptureMode::ThreadLocal),
        Err(Error::InvalidValue(_))
    ));
    assert!(matches!(b.fork(1), Err(Error::InvalidValue(_))));
}

#[test]
fn a_captured_step_replays_a_training_step_like_eager_runs() {
    let Some(device) = common::device_or_skip("a_captured_step_replays_a_training_step_like_eager_runs") else {
        return;
    };
    let stream = device.create_stream().unwrap();
    let n = 4096;
    let start = inputs(n, 9);
    let mut eager_w = DeviceArray::from_slice(&stream, &start).unwrap();
    let mut graph_w = DeviceArray::from_slice(&stream, &start).unwrap();
    let step = |w: &mut DeviceArray<f32>, x: &DeviceArray<f32>| -> cuda_core::Result<DeviceArray<f32>> {
        let error = (&*w * x - 1.0f32).eval()?;
        let loss = (&error * &error).eval()?.mean()?.reshape([1])?;
        let grad = (&error * x * 0.01f32).eval()?;
        w.update(|w| w - &grad)?;
        Ok(loss)
    };
    let first = DeviceArray::from_slice(&stream, &inputs(n, 10)).unwrap();
    // SAFETY: the closure reaches `graph_w` by a unique borrow, alive as long as the step.
    let mut captured = unsafe {
        CapturedStep::new(&stream, &[&first], |x: &[DeviceArray<f32>]| {
            Ok(vec![step(&mut graph_w, &x[0])?])
        })
    }
    .unwrap();
    for seed in 10..16 {
        let x = DeviceArray::from_slice(&stream, &inputs(n, seed)).unwrap();
        let want = step(&mut eager_w, &x).unwrap().to_vec().unwrap();
        let got = captured.run(&[&x]).unwrap()[0].to_vec().unwrap();
        assert_close(&format!("loss at seed {seed}"), &got, &want);
    }
    assert_eq!(captured.replays(), 5);
    let wrong = DeviceArray::<f32>::zeros(&stream, n + 1).unwrap();
    assert!(matches!(captured.run(&[&wrong]), Err(Error::InvalidValue(_))));
    drop(captured);
    assert_close("weights", &graph_w.to_vec().unwrap(), &eager_w.to_vec().unwrap());
}

/// An array allocated during a capture and kept past it holds the graph's memory: every use
/// after the capture (a read-back, a write, a read by a kernel, a fill) is a typed error, not an
/// access to an address the graph owns.
#[test]
fn an_array_allocated_in_a_capture_is_refused_after_it() {
    let Some(device) = common::device_or_skip("an_array_allocated_in_a_capture_is_refused_after_it") else {
        return;
    };
    let stream = device.create_stream().unwrap();
    let x = DeviceArray::from_slice(&stream, &[1.0f32, 0.0, 2.0]).unwrap();
    let mut y = DeviceArray::<f32>::zeros(&stream, 3).unwrap();
    // The warm-up: the kernel used below is loaded before the capture.
    y.assign(&x * 3.0f32).unwrap();
    let mut kept = None;
    let mut builder = GraphBuilder::new(&stream);
    builder
        .build(CaptureMode::ThreadLocal, |_| {
            let mut inside = (&x * 3.0f32).eval()?;
            // Inside its capture the array is usable.
            inside.assign(&x * 3.0f32)?;
            kept = Some(inside);
            Ok(())
        })
        .unwrap();
    let mut kept = kept.unwrap();
    let refused = |result: cuda_core::Result<()>| match result {
        Err(error) => assert!(error.to_string().contains("outside that capture"), "{error}"),
        Ok(()) => panic!("a use of the graph's memory after its capture was not refused"),
    };
    refused(kept.to_vec().map(drop));
    refused(kept.assign(&x * 3.0f32));
    refused(y.assign(&kept * 3.0f32));
    refused(kept.fill(1.0));
    refused(kept.copy_from_host(&[1.0, 2.0, 3.0]));
    // The arrays allocated before the capture are untouched.
    assert_eq!(y.to_vec().unwrap(), [3.0, 0.0, 6.0]);
}
