//! On a GPU, through cuda-runtime (libcudart): launch configurations chosen
//! by occupancy, launched and checked by their results. Without a GPU or
//! libcudart this prints `skipped: <why>` and passes, unless
//! `CUDA_REQUIRE_GPU=1`. This binary never loads the stand-in driver.

use cuda_runtime::{Device, DeviceMemory, Library, Stream};

/// Device 0, or `None` after printing why not (a panic under `CUDA_REQUIRE_GPU=1`).
fn gpu() -> Option<Device> {
    let why = match cuda_runtime::device_count() {
        Ok(0) => "the runtime sees no device".to_string(),
        Ok(_) => match Device::get(0) {
            Ok(device) => return Some(device),
            Err(error) => format!("device 0: {error}"),
        },
        Err(error) => error.to_string().lines().next().unwrap_or_default().to_string(),
    };
    assert!(
        std::env::var("CUDA_REQUIRE_GPU").as_deref() != Ok("1"),
        "CUDA_REQUIRE_GPU=1 but the runtime is unusable: {why}"
    );
    println!("skipped: {why}");
    None
}

fn library() -> Library {
    let ptx = tests::kernels::compile_ptx().unwrap_or_else(|why| panic!("NVRTC: {why}"));
    Library::from_ptx(&ptx).unwrap()
}

#[test]
fn occupancy_configurations_launch() {
    let Some(device) = gpu() else { return };
    let fill = library().kernel("fill").unwrap();
    let stream = Stream::new(device).unwrap();
    let warp = device
        .attribute(cuda_runtime::DeviceAttribute::cudaDevAttrWarpSize)
        .unwrap() as u32;

    let block = fill.suggested_block_size(device, 0).unwrap();
    assert!(block >= warp && block % warp == 0 && block <= 1024, "{block}");
    let blocks = fill.max_active_blocks_per_multiprocessor(device, block, 0).unwrap();
    // no other whole number of warps keeps more threads resident
    for other in (warp..=1024).step_by(warp as usize) {
        let resident = fill.max_active_blocks_per_multiprocessor(device, other, 0).unwrap() * other;
        assert!(
            resident <= blocks * block,
            "{other} threads keep {resident} resident, {block} only {}",
            blocks * block
        );
    }

    let n = 300_001u32;
    let config = fill.occupancy_config(device, n, 0).unwrap();
    assert_eq!(config.block, (block, 1, 1));
    assert!(config.grid.0 * block >= n, "{config:?}");
    let mut out = DeviceMemory::<f32>::zeroed(device, n as usize).unwrap();
    // SAFETY: fill writes n floats of `out`, which holds n.
    unsafe { stream.launch(&fill, &config, (&mut out, 3.25f32, n)).unwrap() };
    stream.synchronize().unwrap();
    assert!(out.to_vec().unwrap().iter().all(|&v| v == 3.25));

    let resident = fill.resident_config(device, 128, 0).unwrap();
    let per_sm = fill.max_active_blocks_per_multiprocessor(device, 128, 0).unwrap();
    let sms = device
        .attribute(cuda_runtime::DeviceAttribute::cudaDevAttrMultiProcessorCount)
        .unwrap() as u32;
    assert_eq!(resident.grid, (per_sm * sms, 1, 1));
    assert!(fill.occupancy_config(device, 0, 0).is_err());
    assert!(
        fill.resident_config(device, 128, 1 << 30).is_err(),
        "a GiB of shared memory fits nowhere"
    );
}
