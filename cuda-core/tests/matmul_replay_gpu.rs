//! `DeviceArray::matmul` with graph replay switched on (`set_matmul_replay(true)`): a product
//! repeated on the same arrays and the same output block, whose input changes between calls,
//! gives the right result every time (a replayed graph reads memory when it runs). Alone in its
//! binary: while a replay captures, no other thread may synchronise the context. Without a
//! driver, a device or cuBLAS it prints `skipped: <why>` and passes, unless
//! `CUDA_REQUIRE_GPU=1`.

mod common;

use common::products::{array, assert_close, host_matmul, values};

#[test]
fn repeated_products_with_replay_on_follow_their_inputs() {
    let Some(stream) = common::blas_stream_or_skip("repeated_products_with_replay_on_follow_their_inputs") else {
        return;
    };
    assert!(!cuda_core::matmul_replay(), "off by default");
    // 128^3 multiply-adds: above the small-product kernel, so cuBLASLt runs it.
    let n = 128;
    let b_host = values(n * n, 2);
    let b = array::<f32>(&stream, &b_host, &[n, n]);
    let mut a = array::<f32>(&stream, &values(n * n, 1), &[n, n]);
    cuda_core::set_matmul_replay(true);
    for call in 0..6 {
        let a_host = values(n * n, call + 1);
        let typed: Vec<f32> = a_host.iter().map(|&v| v as f32).collect();
        a.copy_from_host(&typed).unwrap();
        // Dropped at the end of each turn: the next product gets the same block, so the call
        // repeats its addresses and is captured on its second time, replayed after.
        let product = a.matmul(&b).unwrap();
        assert_close(
            &format!("call {call}"),
            &product,
            &host_matmul(&a_host, &b_host, n, n, n),
            1e-4,
        );
    }
    cuda_core::set_matmul_replay(false);
    let product = a.matmul(&b).unwrap();
    assert_close(
        "replay off again",
        &product,
        &host_matmul(&values(n * n, 6), &b_host, n, n, n),
        1e-4,
    );
}
