//! Shared by the integration tests: kernels, a fresh cache folder per test and the GPU-test gate.

#![allow(dead_code)]

pub mod products;

use std::path::PathBuf;

use cuda_core::{Device, Error, Stream};

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

/// A cooperative kernel: phase one fills `data`, a grid-wide barrier (safe only when every
/// block is resident, which a cooperative launch guarantees), then each thread reads an element
/// written by a thread of another block.
pub const GRID_SYNC: &str = r#"
extern "C" __global__ void reverse_after_grid_sync(unsigned *data, unsigned *out, unsigned *arrived, unsigned n) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) data[i] = 3 * i + 1;
    __threadfence();
    __syncthreads();
    if (threadIdx.x == 0) {
        atomicAdd(arrived, 1u);
        while (atomicAdd(arrived, 0u) < gridDim.x) {}
    }
    __syncthreads();
    if (i < n) out[i] = __ldcg(&data[n - 1 - i]);
}
"#;

/// A kernel run in clusters of two blocks: each block reports its rank in the cluster and the
/// cluster's size, and reads its partner block's shared memory (distributed shared memory).
pub const CLUSTER: &str = r#"
extern "C" __global__ void cluster_ranks(unsigned *rank, unsigned *size, unsigned *partner_value) {
    __shared__ unsigned mine;
    if (threadIdx.x == 0) mine = 1000 + blockIdx.x;
    __cluster_barrier_arrive();
    __cluster_barrier_wait();
    if (threadIdx.x == 0) {
        unsigned me = __clusterRelativeBlockRank();
        unsigned *remote = (unsigned *)__cluster_map_shared_rank((void *)&mine, me ^ 1);
        rank[blockIdx.x] = me;
        size[blockIdx.x] = __clusterSizeInBlocks();
        partner_value[blockIdx.x] = *remote;
    }
    __cluster_barrier_arrive();
    __cluster_barrier_wait();
}
"#;

/// An empty folder under the system temp dir, unique to this process and `name`.
pub fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("cuda-core-test-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("create temp dir");
    dir
}

/// Device 0, or `None` after printing why it is skipped (a panic under `CUDA_REQUIRE_GPU=1`).
pub fn device_or_skip(test: &str) -> Option<Device> {
    let device = Device::count().and_then(|count| match count {
        0 => Err(Error::InvalidValue("the driver reports no device".into())),
        _ => Device::new(0),
    });
    match device {
        Ok(device) => Some(device),
        Err(error) if std::env::var("CUDA_REQUIRE_GPU").as_deref() == Ok("1") => {
            panic!("{test}: CUDA_REQUIRE_GPU=1 but there is no usable GPU: {error}")
        }
        Err(error) => {
            println!("skipped: {test}: no usable GPU ({error})");
            None
        }
    }
}

/// A new stream on device 0, or `None` after printing why the test is skipped.
pub fn stream_or_skip(test: &str) -> Option<Stream> {
    device_or_skip(test).map(|device| device.create_stream().unwrap())
}

/// A stream on device 0 with cuBLAS loaded, or `None` after printing why the test is skipped
/// (a panic under `CUDA_REQUIRE_GPU=1`).
#[cfg(feature = "blas")]
pub fn blas_stream_or_skip(test: &str) -> Option<Stream> {
    let device = device_or_skip(test)?;
    match cuda_libs::blas::load() {
        Ok(()) => Some(device.create_stream().unwrap()),
        Err(error) if std::env::var("CUDA_REQUIRE_GPU").as_deref() == Ok("1") => {
            panic!("{test}: CUDA_REQUIRE_GPU=1 but cuBLAS is missing: {error}")
        }
        Err(error) => {
            println!("skipped: {test}: no cuBLAS ({error})");
            None
        }
    }
}
