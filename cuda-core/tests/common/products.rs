//! Matrix products checked against the host: an f64 reference product, test values, arrays
//! made from them, and the comparison (for `linalg_gpu` and `matmul_fusion_gpu`).

use cuda_core::{DeviceArray, Element, Stream};

/// `a @ b` of row-major `m x k` and `k x n` host matrices, in f64.
pub fn host_matmul(a: &[f64], b: &[f64], m: usize, k: usize, n: usize) -> Vec<f64> {
    let mut c = vec![0.0; m * n];
    for i in 0..m {
        for j in 0..n {
            c[i * n + j] = (0..k).map(|p| a[i * k + p] * b[p * n + j]).sum();
        }
    }
    c
}

/// `count` values in [-1, 1], varied by `seed`.
pub fn values(count: usize, seed: usize) -> Vec<f64> {
    (0..count)
        .map(|i| (((i * 7 + seed * 13) % 17) as f64 - 8.0) / 8.0)
        .collect()
}

/// An array of `T` holding `data` in `shape`.
pub fn array<T: Element>(stream: &Stream, data: &[f64], shape: &[usize]) -> DeviceArray<T> {
    let typed: Vec<T> = data.iter().map(|&v| T::from_f64(v)).collect();
    DeviceArray::from_slice(stream, &typed)
        .unwrap()
        .reshape(shape.to_vec())
        .unwrap()
}

/// Asserts that `got` holds `expected`, each element within `tolerance` relative to it.
pub fn assert_close<T: Element>(what: &str, got: &DeviceArray<T>, expected: &[f64], tolerance: f64) {
    let got: Vec<f64> = got.to_vec().unwrap().iter().map(|v| v.to_f64()).collect();
    assert_eq!(got.len(), expected.len(), "{what}: length");
    for (i, (g, e)) in got.iter().zip(expected).enumerate() {
        assert!(
            (g - e).abs() <= tolerance * (1.0 + e.abs()),
            "{what}: element {i} is {g}, expected {e}"
        );
    }
}
