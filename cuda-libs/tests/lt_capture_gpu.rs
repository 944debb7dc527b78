//! cuBLASLt inside the caller's own stream capture. Alone in its binary: while a stream of the
//! context captures, nothing else in the process may synchronise the device, which destroying a
//! cuBLAS handle does, so this test must not run beside the others. It prints `skipped:` without
//! a GPU or without cuBLAS, and fails instead under `CUDA_REQUIRE_GPU=1`.

use cuda_driver::{CaptureMode, DeviceBuffer, StreamFlags};
use cuda_libs::blas::{Epilogue, Gemm, Lt};

mod common;

/// `relu(A B + C + bias)` into `C`, twice inside the caller's capture and the graph launched
/// twice, against four direct calls on another `C`.
#[test]
fn lt_calls_inside_the_callers_capture_are_recorded_into_its_graph() {
    let Some(stream) = common::stream_or_skip("lt_calls_inside_the_callers_capture_are_recorded_into_its_graph") else {
        return;
    };
    let stream = cuda_driver::Stream::with_options(stream.context(), StreamFlags::NON_BLOCKING, 0).unwrap();
    let context = stream.context();
    let mut lt = Lt::new(&stream).unwrap();
    // On, so that the repeated call below would be replayed outside a capture.
    lt.set_replay(true);
    let (m, n, k) = (96, 80, 64);
    let g = Gemm::new(m, n, k).alpha(0.25).beta(1.0);
    let host = |len: usize, seed: usize| -> Vec<f32> {
        (0..len)
            .map(|i| ((i * 7 + seed * 13) % 17) as f32 / 8.0 - 1.0)
            .collect()
    };
    let a = DeviceBuffer::from_slice(context, &host(m * k, 1)).unwrap();
    let b = DeviceBuffer::from_slice(context, &host(k * n, 2)).unwrap();
    let bias = DeviceBuffer::from_slice(context, &host(n, 3)).unwrap();
    let start = host(m * n, 4);
    let mut captured = DeviceBuffer::from_slice(context, &start).unwrap();
    let mut direct = DeviceBuffer::from_slice(context, &start).unwrap();
    // Twice: a repeated call, which the handle would replay on a stream that is not capturing.
    let graph = stream
        .capture(CaptureMode::ThreadLocal, |_| {
            for _ in 0..2 {
                lt.matmul(&g, Epilogue::ReluBias, &a, &b, Some(&bias), &mut captured)
                    .map_err(|error| cuda_driver::Error::InvalidValue(error.to_string()))?;
            }
            Ok(())
        })
        .unwrap();
    assert_eq!(lt.replayed_calls(), 0, "inside a capture the calls are made directly");
    let exec = graph.instantiate().unwrap();
    for _ in 0..2 {
        // SAFETY: the graph uses the four buffers above and the handle's workspace, all alive.
        unsafe { exec.launch(&stream).unwrap() };
    }
    lt.set_replay(false);
    for _ in 0..4 {
        lt.matmul(&g, Epilogue::ReluBias, &a, &b, Some(&bias), &mut direct)
            .unwrap();
    }
    stream.synchronize().unwrap();
    let (captured, direct) = (captured.to_vec().unwrap(), direct.to_vec().unwrap());
    assert_ne!(direct, start, "the products changed C");
    for (index, (got, expected)) in captured.iter().zip(&direct).enumerate() {
        let error = (got - expected).abs() / expected.abs().max(1.0);
        assert!(
            error <= 1e-5,
            "element {index}: the graph gave {got}, direct calls {expected}"
        );
    }
}
