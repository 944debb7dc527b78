//! Shared by the integration tests: kernels and a fresh cache folder per test.

#![allow(dead_code)]

use std::path::PathBuf;

/// The seed's element-wise add, `out = x1 + x2`.
pub const MY_ADD: &str = r#"
extern "C" __global__ void my_add(const float *x1, const float *x2, float *out, unsigned n) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = x1[i] + x2[i];
}
"#;

/// A template kernel, instantiated through name expressions.
pub const TEMPLATE_ADD: &str = r#"
template <typename T>
__global__ void add(const T *x, const T *y, T *out, unsigned n) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = x[i] + y[i];
}
"#;

/// An empty folder under the system temp dir, unique to this process and `name`.
pub fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("cuda-core-test-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("create temp dir");
    dir
}
