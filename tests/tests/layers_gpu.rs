//! On a GPU, through cuda-runtime (libcudart): launch configurations chosen
//! by occupancy, and the driver function of a runtime kernel
//! (`cudaGetFuncBySymbol`) used through the driver API, each launched and
//! checked by its results. Without a GPU or
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

#[test]
fn a_runtime_kernel_is_a_driver_function() {
    use cuda_sys::driver::{CUfunction_attribute, CUresult};

    let Some(device) = gpu() else { return };
    let fill = library().kernel("fill").unwrap();
    let function = fill.function_on(device).unwrap();
    assert_eq!(function.device(), device);
    // The runtime works in the primary context, which cuda-driver retains and makes current.
    let context = cuda_driver::Device::get(device.ordinal())
        .unwrap()
        .primary_context()
        .unwrap();
    context.set_current().unwrap();
    let driver = cuda_sys::driver().unwrap();
    // SAFETY: the function lives while `function` does; the primary context is current.
    let raw: cuda_sys::driver::CUfunction = unsafe { function.as_raw() }.cast();
    let mut max_threads = 0;
    // SAFETY: valid out-pointer and function handle.
    let result = unsafe {
        driver.cuFuncGetAttribute().unwrap()(
            &mut max_threads,
            CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK,
            raw,
        )
    };
    assert_eq!(result, CUresult::CUDA_SUCCESS);
    assert_eq!(
        max_threads as u32,
        fill.attributes(device).unwrap().max_threads_per_block
    );

    // launch it through the driver on memory of the runtime
    let n = 10_000u32;
    let out = DeviceMemory::<f32>::zeroed(device, n as usize).unwrap();
    // SAFETY: the address is only passed to the kernel below, while `out` lives.
    let (mut address, mut value, mut count) = (unsafe { out.as_raw() } as u64, 7.5f32, n);
    let mut params = [
        (&mut address as *mut u64).cast::<std::ffi::c_void>(),
        (&mut value as *mut f32).cast(),
        (&mut count as *mut u32).cast(),
    ];
    // SAFETY: fill(float *out, float value, unsigned n) gets exactly those three parameters and
    // writes n floats of `out`, which holds n; the null stream is the primary context's.
    let launched = unsafe {
        driver.cuLaunchKernel().unwrap()(
            raw,
            n.div_ceil(256),
            1,
            1,
            256,
            1,
            1,
            0,
            std::ptr::null_mut(),
            params.as_mut_ptr(),
            std::ptr::null_mut(),
        )
    };
    assert_eq!(launched, CUresult::CUDA_SUCCESS);
    context.synchronize().unwrap();
    assert!(out.to_vec().unwrap().iter().all(|&v| v == 7.5));
}

#[test]
fn cuda_core_launch_configs_from_occupancy_launch() {
    let available = cuda_driver::Device::count().map_err(|e| e.to_string());
    if available.as_ref().map_or(true, |&n| n == 0) {
        let why = available.err().unwrap_or_else(|| "no CUDA device".into());
        assert!(
            std::env::var("CUDA_REQUIRE_GPU").as_deref() != Ok("1"),
            "CUDA_REQUIRE_GPU=1 but the driver is unusable: {why}"
        );
        println!("skipped: {}", why.lines().next().unwrap_or_default());
        return;
    }
    let ptx = tests::kernels::compile_ptx().unwrap_or_else(|why| panic!("NVRTC: {why}"));
    let kernel = cuda_core::ObjectCode::from_ptx(ptx)
        .unwrap()
        .get_kernel("fill")
        .unwrap();
    let n = 123_457u32;
    let config = kernel.occupancy_config(n, 0).unwrap();
    let block = config.block.0;
    assert!(
        block >= 32 && block % 32 == 0 && config.grid.0 * block >= n,
        "{config:?}"
    );
    let context = kernel.function().context().clone();
    let stream = cuda_driver::Stream::new(&context).unwrap();
    let mut out = cuda_driver::DeviceBuffer::<f32>::zeroed(&context, n as usize).unwrap();
    // SAFETY: fill writes n floats of `out`, which holds n.
    unsafe { cuda_core::launch(&stream, &config, &kernel, (&mut out, 0.25f32, n)).unwrap() };
    stream.synchronize().unwrap();
    assert!(out.to_vec().unwrap().iter().all(|&v| v == 0.25));
    let resident = kernel.resident_config(256, 0).unwrap();
    let per_sm = kernel.function().max_active_blocks_per_multiprocessor(256, 0).unwrap();
    let sms = context.device().multiprocessor_count().unwrap();
    assert_eq!(resident.grid, (per_sm * sms, 1, 1));
}
