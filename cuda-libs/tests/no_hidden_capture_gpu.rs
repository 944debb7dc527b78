//! A library call never makes another thread's legal CUDA call fail: repeated cuBLASLt products
//! (which, with graph replay on, would capture on a side stream) run while another thread
//! synchronises the whole context in a loop, and every synchronise succeeds. Alone in its
//! binary: the synchronising thread would break any test that captures on purpose. It prints
//! `skipped:` without a GPU or without cuBLAS, and fails instead under `CUDA_REQUIRE_GPU=1`.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use cuda_driver::{DeviceBuffer, Stream, StreamFlags};
use cuda_libs::blas::{Epilogue, Gemm, Lt};

mod common;

#[test]
fn products_leave_another_threads_context_synchronize_working() {
    let Some(stream) = common::stream_or_skip("products_leave_another_threads_context_synchronize_working") else {
        return;
    };
    let stream = Stream::with_options(stream.context(), StreamFlags::NON_BLOCKING, 0).unwrap();
    let context = stream.context().clone();
    let mut lt = Lt::new(&stream).unwrap();
    let (m, n, k) = (256, 256, 256);
    let g = Gemm::new(m, n, k);
    let host = |len: usize| -> Vec<f32> { (0..len).map(|i| (i % 7) as f32 / 7.0).collect() };
    let a = DeviceBuffer::from_slice(&context, &host(m * k)).unwrap();
    let b = DeviceBuffer::from_slice(&context, &host(k * n)).unwrap();
    let bias = DeviceBuffer::from_slice(&context, &host(n)).unwrap();
    // Many outputs, each multiplied into six times in a row: with replay on, each new output
    // would be captured on its second call (and replayed four times, which keeps capturing).
    let mut outputs: Vec<DeviceBuffer<f32>> = (0..16)
        .map(|_| DeviceBuffer::zeroed(&context, m * n).unwrap())
        .collect();
    let stop = AtomicBool::new(false);
    let (synchronised, failures) = std::thread::scope(|scope| {
        let syncer = scope.spawn(|| {
            let (mut count, mut failures) = (0u64, Vec::new());
            while !stop.load(Ordering::Relaxed) {
                if let Err(error) = context.synchronize() {
                    failures.push(error.to_string());
                }
                count += 1;
            }
            (count, failures)
        });
        let start = Instant::now();
        while start.elapsed() < Duration::from_secs(3) {
            for out in &mut outputs {
                for _ in 0..6 {
                    lt.matmul(&g, Epilogue::ReluBias, &a, &b, Some(&bias), out).unwrap();
                }
            }
        }
        stream.synchronize().unwrap();
        stop.store(true, Ordering::Relaxed);
        syncer.join().unwrap()
    });
    println!(
        "{synchronised} context synchronises beside the products, {} failed",
        failures.len()
    );
    assert!(synchronised > 0);
    assert!(
        failures.is_empty(),
        "{} of {synchronised} context synchronises failed beside the products; first: {}",
        failures.len(),
        failures[0]
    );
    assert_eq!(
        lt.replayed_calls(),
        0,
        "nothing was captured: replay is off unless asked for"
    );
}
