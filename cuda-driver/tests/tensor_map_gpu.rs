//! Tensor maps on a GPU: a kernel compiled by NVRTC copies a 2-D f32 tensor tile by tile with
//! Hopper's bulk tensor copy (`cp.async.bulk.tensor` through a `__grid_constant__` tensor map,
//! completed on an mbarrier, written in inline PTX so no CUDA headers are needed) into shared
//! memory and from there to an output buffer, which then equals the input. `skipped: <why>`
//! without a GPU of compute capability 9.0 or newer (fails then if `CUDA_REQUIRE_GPU=1`); the
//! NVRTC compile (and, with nvJitLink, the assembly for sm_90) runs wherever NVRTC does.

mod common;

use cuda_driver::{DeviceBuffer, LaunchConfig, Module, Stream, TensorDataType, TiledTensorMap};

const TILE_X: u32 = 32;
const TILE_Y: u32 = 16;

/// One block per tile: thread 0 arms the barrier with the tile's byte count and issues the bulk
/// tensor copy; every thread waits for phase 0 and copies the tile out.
const TMA_COPY: &str = r#"
#define TILE_X 32
#define TILE_Y 16

// The driver's CUtensorMap: 128 opaque bytes, passed by value.
struct alignas(64) TensorMap {
    unsigned long long opaque[16];
};

extern "C" __global__ void tma_copy(const __grid_constant__ TensorMap map, float *out, unsigned cols) {
    __shared__ alignas(128) float tile[TILE_Y * TILE_X];
    __shared__ alignas(8) unsigned long long barrier;
    const int x = blockIdx.x * TILE_X, y = blockIdx.y * TILE_Y;
    const unsigned bar = (unsigned)__cvta_generic_to_shared(&barrier);
    const unsigned dst = (unsigned)__cvta_generic_to_shared(tile);
    if (threadIdx.x == 0) {
        asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(bar) : "memory");
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;"
                     ::"r"(bar), "r"((unsigned)(TILE_X * TILE_Y * sizeof(float))) : "memory");
        asm volatile(
            "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];"
            ::"r"(dst), "l"((unsigned long long)&map), "r"(x), "r"(y), "r"(bar) : "memory");
    }
    unsigned ready = 0;
    while (!ready) {
        asm volatile("{\n\t.reg .pred done;\n\t"
                     "mbarrier.try_wait.parity.shared::cta.b64 done, [%1], 0;\n\t"
                     "selp.u32 %0, 1, 0, done;\n\t}"
                     : "=r"(ready) : "r"(bar) : "memory");
    }
    for (unsigned i = threadIdx.x; i < TILE_X * TILE_Y; i += blockDim.x) {
        const unsigned ty = i / TILE_X, tx = i % TILE_X;
        out[(size_t)(y + ty) * cols + x + tx] = tile[i];
    }
}
"#;

#[test]
fn tma_copy_kernel_compiles_with_nvrtc_for_sm_90() {
    if let Err(why) = cuda_sys::nvrtc() {
        common::skip::<()>(&format!("no NVRTC ({why})"));
        return;
    }
    let ptx = common::compile(TMA_COPY, (9, 0)).unwrap_or_else(|log| panic!("NVRTC failed:\n{log}"));
    assert!(ptx.contains(".entry tma_copy"), "{ptx}");
    assert!(ptx.contains("cp.async.bulk.tensor.2d"), "{ptx}");
    // The map is one 128-byte parameter, 64-byte aligned.
    assert!(ptx.contains(".param .align 64 .b8 tma_copy_param_0[128]"), "{ptx}");
    // The inline PTX assembles for sm_90 (where nvJitLink is available).
    match cuda_sys::nvjitlink() {
        Ok(_) => common::assemble(&ptx).unwrap_or_else(|log| panic!("ptxas refused the kernel:\n{log}")),
        Err(why) => println!("skipped: assembling (no nvJitLink: {why})"),
    }
}

#[test]
fn a_tma_copy_kernel_reproduces_its_input() {
    let Some(context) = common::context() else { return };
    let arch = context.device().compute_capability().unwrap();
    if arch.0 < 9 {
        common::skip::<()>(&format!(
            "tensor maps need sm_90, the device is sm_{}{}",
            arch.0, arch.1
        ));
        return;
    }
    let ptx = common::compile(TMA_COPY, arch).unwrap_or_else(|log| panic!("NVRTC failed:\n{log}"));
    let module = Module::from_ptx(&context, &ptx).unwrap();
    let kernel = module.function("tma_copy").unwrap();
    let stream = Stream::new(&context).unwrap();

    let (rows, cols) = (256u32, 512u32);
    let values: Vec<f32> = (0..rows * cols).map(|i| i as f32 * 0.5 - 7.0).collect();
    let input = DeviceBuffer::from_slice(&context, &values).unwrap();
    let mut output = DeviceBuffer::<f32>::zeroed(&context, values.len()).unwrap();
    let map = TiledTensorMap::new(
        TensorDataType::F32,
        &[cols as u64, rows as u64],
        &[cols as u64 * 4],
        &[TILE_X, TILE_Y],
    )
    .encode(&input)
    .unwrap();
    let config = LaunchConfig {
        grid: (cols / TILE_X, rows / TILE_Y, 1),
        block: (128, 1, 1),
        shared_mem_bytes: 0,
    };
    // SAFETY: each block reads one in-bounds tile through the map and writes the same tile of
    // `output`, which has the input's shape.
    unsafe { stream.launch(&kernel, &config, (&map, &mut output, cols)) }.unwrap();
    stream.synchronize().unwrap();
    assert!(
        output.to_vec().unwrap() == values,
        "the TMA copy differs from its input"
    );
}
