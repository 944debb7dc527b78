//! On a GPU: pitched memory and 2-D/3-D copies, managed memory, module and
//! library globals, occupancy, virtual memory, IPC handles (with a child
//! process), and texture and surface objects, each checked against a host
//! reference. Without a GPU every test prints `skipped: ...` and passes
//! (fails under `CUDA_REQUIRE_GPU=1`).

mod common;

use cuda_driver::{
    AddressMode, Advice, ArrayFlags, CudaArray, DeviceBuffer, Error, Event, EventFlags, FilterMode, Global,
    IpcEventHandle, IpcMemHandle, IpcMemory, LaunchConfig, Library, ManagedBuffer, MemoryLocation, Module, Pitched,
    PitchedBuffer, PitchedMut, Stream, SurfaceObject, TextureDesc, TextureObject, VirtualBuffer,
};

/// The host reference of a block copy between packed `(width, height, depth)` arrays.
fn reference_copy<T: Copy>(
    destination: (&mut [T], (usize, usize)),
    to: (usize, usize, usize),
    source: (&[T], (usize, usize)),
    from: (usize, usize, usize),
    extent: (usize, usize, usize),
) {
    let ((destination, destination_shape), (source, source_shape)) = (destination, source);
    for z in 0..extent.2 {
        for y in 0..extent.1 {
            for x in 0..extent.0 {
                let s = ((from.2 + z) * source_shape.1 + from.1 + y) * source_shape.0 + from.0 + x;
                let d = ((to.2 + z) * destination_shape.1 + to.1 + y) * destination_shape.0 + to.0 + x;
                destination[d] = source[s];
            }
        }
    }
}

// ---------------------------------------------------------------- pitched memory, 2-D and 3-D copies

#[test]
fn pitched_2d_copies_between_host_and_device_match_the_reference() {
    let Some(context) = common::context() else { return };
    let stream = Stream::new(&context).unwrap();
    let (width, height) = (300, 70);
    let image: Vec<f32> = (0..width * height).map(|i| (i as f32).sin()).collect();
    let mut pitched = PitchedBuffer::<f32>::alloc(&context, width, height).unwrap();
    assert!(pitched.pitch_bytes() >= width * 4, "{pitched:?}");
    pitched.copy_from_host(&image).unwrap();
    assert_eq!(pitched.to_vec().unwrap(), image);

    // pitched -> packed device at an offset, then packed device -> host at another
    let (packed_width, packed_height) = (128, 40);
    let mut packed = DeviceBuffer::<f32>::zeroed(&context, packed_width * packed_height).unwrap();
    PitchedMut::device(packed.as_slice_mut(), packed_width, packed_height)
        .unwrap()
        .copy_2d_from((5, 7), &pitched.view(), (150, 20), (100, 30), &stream)
        .unwrap();
    let mut want = vec![0.0f32; packed_width * packed_height];
    reference_copy(
        (&mut want, (packed_width, packed_height)),
        (5, 7, 0),
        (&image, (width, height)),
        (150, 20, 0),
        (100, 30, 1),
    );
    stream.synchronize().unwrap();
    assert_eq!(packed.to_vec().unwrap(), want);

    let mut host = vec![-1.0f32; 64 * 64];
    PitchedMut::host(&mut host, 64, 64)
        .unwrap()
        .copy_2d_from(
            (3, 2),
            &Pitched::device(&packed, packed_width, packed_height).unwrap(),
            (10, 10),
            (50, 20),
            &stream,
        )
        .unwrap();
    let mut host_want = vec![-1.0f32; 64 * 64];
    reference_copy(
        (&mut host_want, (64, 64)),
        (3, 2, 0),
        (&want, (packed_width, packed_height)),
        (10, 10, 0),
        (50, 20, 1),
    );
    assert_eq!(host, host_want);

    // pitched -> pitched, device to device, overlapping rows of different buffers
    let mut second = PitchedBuffer::<f32>::alloc(&context, 200, 50).unwrap();
    second.copy_from_host(&vec![0.0; 200 * 50]).unwrap();
    second
        .view_mut()
        .copy_2d_from((1, 1), &pitched.view(), (0, 0), (199, 49), &stream)
        .unwrap();
    stream.synchronize().unwrap();
    let mut second_want = vec![0.0f32; 200 * 50];
    reference_copy(
        (&mut second_want, (200, 50)),
        (1, 1, 0),
        (&image, (width, height)),
        (0, 0, 0),
        (199, 49, 1),
    );
    assert_eq!(second.to_vec().unwrap(), second_want);
    context.synchronize().unwrap();
}

#[test]
fn pitched_3d_copies_match_the_reference() {
    let Some(context) = common::context() else { return };
    let stream = Stream::new(&context).unwrap();
    let shape = (33, 17, 9);
    let volume: Vec<u32> = (0..(shape.0 * shape.1 * shape.2) as u32).collect();
    let mut pitched = PitchedBuffer::<u32>::alloc_3d(&context, 20, 12, 6).unwrap();
    pitched.copy_from_host(&vec![7; 20 * 12 * 6]).unwrap();
    pitched
        .view_mut()
        .copy_3d_from(
            (2, 3, 1),
            &Pitched::host(&volume, shape.0, shape.1).unwrap(),
            (10, 4, 3),
            (15, 8, 5),
            &stream,
        )
        .unwrap();
    let mut want = vec![7u32; 20 * 12 * 6];
    reference_copy(
        (&mut want, (20, 12)),
        (2, 3, 1),
        (&volume, (shape.0, shape.1)),
        (10, 4, 3),
        (15, 8, 5),
    );
    assert_eq!(pitched.to_vec().unwrap(), want);

    // device to device, into a packed volume
    let mut packed = DeviceBuffer::<u32>::zeroed(&context, 10 * 10 * 4).unwrap();
    PitchedMut::device(packed.as_slice_mut(), 10, 10)
        .unwrap()
        .copy_3d_from((0, 1, 0), &pitched.view(), (3, 3, 1), (10, 9, 4), &stream)
        .unwrap();
    stream.synchronize().unwrap();
    let mut packed_want = vec![0u32; 10 * 10 * 4];
    reference_copy(
        (&mut packed_want, (10, 10)),
        (0, 1, 0),
        (&want, (20, 12)),
        (3, 3, 1),
        (10, 9, 4),
    );
    assert_eq!(packed.to_vec().unwrap(), packed_want);

    // out of bounds: refused on the host
    let result = pitched.view_mut().copy_3d_from(
        (0, 0, 5),
        &pitched_source(&volume, shape),
        (0, 0, 0),
        (1, 1, 2),
        &stream,
    );
    assert!(matches!(result, Err(Error::InvalidValue(_))), "{result:?}");
    context.synchronize().unwrap();
}

fn pitched_source(volume: &[u32], shape: (usize, usize, usize)) -> Pitched<'_, u32> {
    Pitched::host(volume, shape.0, shape.1).unwrap()
}

// ---------------------------------------------------------------- managed memory

#[test]
fn managed_memory_is_shared_by_host_and_kernels() {
    let Some(context) = common::context() else { return };
    let device = context.device();
    assert!(device.managed_memory().unwrap(), "an H200 has managed memory");
    let module = common::kernels(&context);
    let (fill, saxpy) = (module.function("fill").unwrap(), module.function("saxpy").unwrap());
    let stream = Stream::new(&context).unwrap();
    // 1 MiB of floats: small, so it never asks for more than the card has free.
    let n = 1 << 18;
    let initial: Vec<f32> = (0..n).map(|i| (i % 97) as f32).collect();
    let mut x = ManagedBuffer::<f32>::from_slice(&context, &initial).unwrap();
    x.advise(Advice::SetPreferredLocation(MemoryLocation::Device(device)))
        .unwrap();
    x.advise(Advice::SetAccessedBy(MemoryLocation::Device(device))).unwrap();
    x.prefetch(MemoryLocation::Device(device), &stream).unwrap();
    // SAFETY: fill writes the first n/2 floats of the n that `x` holds.
    unsafe {
        stream
            .launch(
                &fill,
                &LaunchConfig::for_num_elems(n as u32 / 2),
                (&mut x, 4.5f32, n as u32 / 2),
            )
            .unwrap()
    };
    x.prefetch(MemoryLocation::Host, &stream).unwrap();
    let mut want = initial.clone();
    want[..n / 2].fill(4.5);
    assert_eq!(x.host_slice().unwrap(), &want[..], "host reads the kernel's writes");

    // host writes, then a kernel reads them: y = 2 x + y
    x.advise(Advice::SetReadMostly).unwrap();
    for (i, value) in x.host_slice_mut().unwrap().iter_mut().enumerate().skip(n / 2) {
        *value = -(i as f32);
    }
    let mut y = DeviceBuffer::from_slice(&context, &vec![1.0f32; n]).unwrap();
    // SAFETY: saxpy reads n floats of x and reads and writes n of y.
    unsafe {
        stream
            .launch(
                &saxpy,
                &LaunchConfig::for_num_elems(n as u32),
                (2.0f32, &x, &mut y, n as u32),
            )
            .unwrap()
    };
    stream.synchronize().unwrap();
    let expected: Vec<f32> = x.host_slice().unwrap().iter().map(|v| 2.0 * v + 1.0).collect();
    assert_eq!(y.to_vec().unwrap(), expected);
    x.advise(Advice::UnsetReadMostly).unwrap();
    x.advise(Advice::UnsetPreferredLocation).unwrap();
    x.advise(Advice::UnsetAccessedBy(MemoryLocation::Device(device)))
        .unwrap();
    context.synchronize().unwrap();
}

// ---------------------------------------------------------------- module and library variables

/// A kernel that reads `__constant__` coefficients and counts its threads in a `__device__` counter.
const VARIABLES: &str = r#"
__constant__ float coefficients[4];
__device__ unsigned int counter;
__device__ float last[2] = {3.0f, 4.0f};

extern "C" __global__ void polynomial(const float *x, float *y, unsigned n) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float v = x[i];
        y[i] = coefficients[0] + v * (coefficients[1] + v * (coefficients[2] + v * coefficients[3]));
        atomicAdd(&counter, 1u);
        if (i == n - 1) last[1] = y[i];
    }
}
"#;

fn polynomial_reference(x: &[f32], c: [f32; 4]) -> Vec<f32> {
    x.iter().map(|&v| c[0] + v * (c[1] + v * (c[2] + v * c[3]))).collect()
}

#[test]
fn constant_and_device_variables_are_read_and_written_by_kernels() {
    let Some(context) = common::context() else { return };
    let arch = context.device().compute_capability().unwrap();
    let ptx = common::compile(VARIABLES, arch).unwrap_or_else(|log| panic!("NVRTC failed:\n{log}"));
    let n = 5000u32;
    let x: Vec<f32> = (0..n).map(|i| i as f32 / 1000.0).collect();
    let c = [1.0f32, -0.5, 0.25, 0.125];

    // a module
    let module = Module::from_ptx(&context, &ptx).unwrap();
    let polynomial = module.function("polynomial").unwrap();
    let mut coefficients = Global::<f32>::from_module(&module, "coefficients").unwrap();
    assert_eq!(coefficients.len(), 4);
    coefficients.copy_from_host(&c).unwrap();
    let mut counter = Global::<u32>::from_module(&module, "counter").unwrap();
    counter.copy_from_host(&[100]).unwrap();
    let last = Global::<f32>::from_module(&module, "last").unwrap();
    assert_eq!(last.to_vec().unwrap(), [3.0, 4.0], "the initialiser");
    let input = DeviceBuffer::from_slice(&context, &x).unwrap();
    let mut output = DeviceBuffer::<f32>::zeroed(&context, n as usize).unwrap();
    let stream = Stream::new(&context).unwrap();
    // SAFETY: polynomial reads n floats of input and writes n of output.
    unsafe {
        stream
            .launch(&polynomial, &LaunchConfig::for_num_elems(n), (&input, &mut output, n))
            .unwrap()
    };
    stream.synchronize().unwrap();
    let want = polynomial_reference(&x, c);
    let got = output.to_vec().unwrap();
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        assert!((g - w).abs() <= 1e-5 * w.abs().max(1.0), "y[{i}] = {g}, want {w}");
    }
    assert_eq!(counter.to_vec().unwrap(), [100 + n], "every thread counted once");
    assert_eq!(last.to_vec().unwrap(), [3.0, got[n as usize - 1]]);

    // the same code as a library: its own copy of the variables in this context
    let library = Library::from_ptx(&ptx).unwrap();
    let from_library = library.function(&context, "polynomial").unwrap();
    let mut library_counter = Global::<u32>::from_library(&library, &context, "counter").unwrap();
    assert_eq!(
        library_counter.to_vec().unwrap(),
        [0],
        "zero-initialised, apart from the module's"
    );
    library_counter.copy_from_host(&[7]).unwrap();
    let mut library_coefficients = Global::<f32>::from_library(&library, &context, "coefficients").unwrap();
    library_coefficients.copy_from_host(&[2.0, 0.0, 0.0, 0.0]).unwrap();
    // SAFETY: as above.
    unsafe {
        stream
            .launch(&from_library, &LaunchConfig::for_num_elems(n), (&input, &mut output, n))
            .unwrap()
    };
    stream.synchronize().unwrap();
    assert!(output.to_vec().unwrap().iter().all(|&v| v == 2.0));
    assert_eq!(library_counter.to_vec().unwrap(), [7 + n]);
    assert_eq!(
        counter.to_vec().unwrap(),
        [100 + n],
        "the module's counter is untouched"
    );

    // bad input: typed errors
    let wrong = Global::<[f32; 3]>::from_module(&module, "coefficients");
    assert!(matches!(wrong, Err(Error::InvalidValue(_))), "{wrong:?}");
    let missing = Global::<f32>::from_module(&module, "missing").unwrap_err();
    assert_eq!(
        missing.code().map(|c| c.0),
        Some(500),
        "CUDA_ERROR_NOT_FOUND: {missing}"
    );
    assert!(matches!(
        coefficients.copy_from_host(&[0.0; 2]),
        Err(Error::InvalidValue(_))
    ));
    context.synchronize().unwrap();
}

// ---------------------------------------------------------------- occupancy

#[test]
fn occupancy_configurations_launch_and_fill_the_device() {
    let Some(context) = common::context() else { return };
    let device = context.device();
    let module = common::kernels(&context);
    let (fill, limited) = (module.function("fill").unwrap(), module.function("limited").unwrap());
    let stream = Stream::new(&context).unwrap();
    let warp = device.warp_size().unwrap();
    let max_threads = device.max_threads_per_multiprocessor().unwrap();

    let n = 1_000_003u32;
    let config = fill.occupancy_config(n, 0).unwrap();
    let block = config.block.0;
    assert!(
        block >= warp && block % warp == 0 && block <= fill.max_threads_per_block().unwrap(),
        "{config:?}"
    );
    assert!(
        u64::from(config.grid.0) * u64::from(block) >= u64::from(n),
        "{config:?}"
    );
    let occupancy = fill.occupancy(&config).unwrap();
    assert!(occupancy.blocks_per_multiprocessor >= 1, "{occupancy:?}");
    assert_eq!(
        occupancy.threads_per_multiprocessor,
        occupancy.blocks_per_multiprocessor * block
    );
    assert_eq!(occupancy.max_threads_per_multiprocessor, max_threads);
    assert!(
        occupancy.fraction() > 0.0 && occupancy.fraction() <= 1.0,
        "{occupancy:?}"
    );
    let mut out = DeviceBuffer::<f32>::zeroed(&context, n as usize).unwrap();
    // SAFETY: fill writes n floats of `out`, which holds n.
    unsafe { stream.launch(&fill, &config, (&mut out, 1.5f32, n)).unwrap() };
    stream.synchronize().unwrap();
    assert!(out.to_vec().unwrap().iter().all(|&v| v == 1.5));

    // the kernel's __launch_bounds__(128) caps the suggestion
    let capped = limited.occupancy_config(4096, 0).unwrap();
    assert!(capped.block.0 <= 128 && capped.block.0 % warp == 0, "{capped:?}");

    // every block resident at once: blocks per multiprocessor times multiprocessors
    let resident = fill.resident_config(256, 0).unwrap();
    let per_sm = fill.max_active_blocks_per_multiprocessor(256, 0).unwrap();
    assert_eq!(resident.grid.0, per_sm * device.multiprocessor_count().unwrap());
    let total = resident.grid.0 * 256;
    let mut all = DeviceBuffer::<f32>::zeroed(&context, total as usize).unwrap();
    // SAFETY: the grid has exactly `total` threads and fill writes `total` floats of `all`.
    unsafe { stream.launch(&fill, &resident, (&mut all, -1.0f32, total)).unwrap() };
    stream.synchronize().unwrap();
    assert!(all.to_vec().unwrap().iter().all(|&v| v == -1.0));

    // shared memory per block for one resident block: at least the 48 KiB every block may have
    let one = fill.available_dynamic_shared_memory(1, 256).unwrap();
    assert!(one >= 48 * 1024, "{one}");
    assert!(fill.available_dynamic_shared_memory(per_sm, 256).unwrap() <= one);
    assert!(matches!(fill.occupancy_config(0, 0), Err(Error::InvalidValue(_))));
    context.synchronize().unwrap();
}

// ---------------------------------------------------------------- virtual memory management

#[test]
fn virtual_buffers_grow_without_moving() {
    let Some(context) = common::context() else { return };
    let module = common::kernels(&context);
    let (fill, add_one) = (module.function("fill").unwrap(), module.function("add_one").unwrap());
    let stream = Stream::new(&context).unwrap();
    // 64 MiB of addresses, backed a piece at a time.
    let mut buffer = VirtualBuffer::<f32>::reserve(&context, 16 << 20).unwrap();
    let granularity = buffer.granularity();
    assert!(granularity > 0 && granularity.is_power_of_two(), "{granularity}");
    assert!(buffer.capacity() >= 16 << 20);
    assert_eq!((buffer.len(), buffer.pieces()), (0, 0));
    // SAFETY: the address is only compared.
    let base = unsafe { buffer.as_raw() };
    assert_eq!(base % granularity as u64, 0);

    buffer.grow(1000).unwrap();
    assert_eq!((buffer.len(), buffer.pieces()), (1000, 1));
    let first: Vec<f32> = (0..1000).map(|i| i as f32).collect();
    buffer.copy_from_host(0, &first).unwrap();

    // past the first piece: a second one right behind it, the base unchanged
    let len = granularity / 4 * 3 / 2 + 17;
    buffer.grow(len).unwrap();
    assert_eq!((buffer.len(), buffer.pieces()), (len, 2));
    // SAFETY: as above.
    assert_eq!(unsafe { buffer.as_raw() }, base);
    let all = buffer.to_vec().unwrap();
    assert_eq!(all[..1000], first[..], "contents kept across growth");
    // a kernel writes across the boundary of the two pieces
    // SAFETY: fill writes `len` floats, all backed.
    unsafe {
        stream
            .launch(
                &fill,
                &LaunchConfig::for_num_elems(len as u32),
                (&mut buffer, 0.5f32, len as u32),
            )
            .unwrap()
    };
    stream.synchronize().unwrap();
    assert!(buffer.to_vec().unwrap().iter().all(|&v| v == 0.5));
    let mut tail = vec![0.0f32; 100];
    buffer.copy_to_host(len - 100, &mut tail).unwrap();
    assert_eq!(tail, vec![0.5; 100]);

    // growing within the backed part maps nothing; shrinking is ignored
    buffer.grow(len + 1).unwrap();
    assert_eq!(buffer.pieces(), 2);
    buffer.grow(10).unwrap();
    assert_eq!(buffer.len(), len + 1);
    assert!(matches!(
        buffer.grow(buffer.capacity() + 1),
        Err(Error::InvalidValue(_))
    ));
    assert!(matches!(
        buffer.copy_from_host(len, &[0.0; 2]),
        Err(Error::InvalidValue(_))
    ));

    // integers in another buffer, incremented in place by a kernel, across three pieces
    let mut counts = VirtualBuffer::<i32>::reserve(&context, granularity).unwrap();
    let n = granularity / 4 * 2 + 5;
    for step in [n / 3, 2 * n / 3, n] {
        counts.grow(step).unwrap();
    }
    assert_eq!(counts.pieces(), 3);
    let values: Vec<i32> = (0..n as i32).collect();
    counts.copy_from_host(0, &values).unwrap();
    // SAFETY: add_one reads and writes n ints, all backed.
    unsafe {
        stream
            .launch(
                &add_one,
                &LaunchConfig::for_num_elems(n as u32),
                (&mut counts, n as u32),
            )
            .unwrap()
    };
    stream.synchronize().unwrap();
    let want: Vec<i32> = values.iter().map(|v| v + 1).collect();
    assert_eq!(counts.to_vec().unwrap(), want);
    drop((buffer, counts));
    context.synchronize().unwrap();
}

// ---------------------------------------------------------------- inter-process sharing

/// Set in the child process: the IPC handles and the element count, as `MEMORY:EVENT:N` in hex.
const IPC_CHILD: &str = "CUDA_DRIVER_TEST_IPC_CHILD";
const IPC_TEST: &str = "ipc_memory_and_events_are_shared_with_a_child_process";

fn to_hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn from_hex(text: &str) -> [u8; 64] {
    let mut bytes = [0u8; 64];
    for (i, byte) in bytes.iter_mut().enumerate() {
        *byte = u8::from_str_radix(&text[2 * i..2 * i + 2], 16).expect("hex handle");
    }
    bytes
}

/// The parent exports a buffer it has incremented once and an event marking
/// that; this test binary, run again as the child, waits for the event,
/// increments the buffer twice more through the opened handle and checks it.
#[test]
fn ipc_memory_and_events_are_shared_with_a_child_process() {
    if let Ok(handles) = std::env::var(IPC_CHILD) {
        ipc_child(&handles);
        return;
    }
    let Some(context) = common::context() else { return };
    let add_one = common::kernels(&context).function("add_one").unwrap();
    // 4 MiB: a whole allocation of its own, not a piece of a shared one
    let n = 1u32 << 20;
    let values: Vec<i32> = (0..n as i32).map(|i| i * 3).collect();
    let mut buffer = DeviceBuffer::from_slice(&context, &values).unwrap();
    let stream = Stream::new(&context).unwrap();
    let done = Event::new(&context, EventFlags::INTERPROCESS | EventFlags::DISABLE_TIMING).unwrap();
    // SAFETY: add_one reads and writes n ints of `buffer`, which holds n.
    unsafe {
        stream
            .launch(&add_one, &LaunchConfig::for_num_elems(n), (&mut buffer, n))
            .unwrap()
    };
    done.record(&stream).unwrap();
    let handles = format!(
        "{}:{}:{n}",
        to_hex(&buffer.ipc_handle().unwrap().to_bytes()),
        to_hex(&done.ipc_handle().unwrap().to_bytes())
    );
    // a timing event has no IPC handle: the driver's error, typed
    let timed = Event::new(&context, EventFlags::DEFAULT).unwrap();
    assert!(timed.ipc_handle().unwrap_err().code().is_some());

    let child = std::process::Command::new(std::env::current_exe().unwrap())
        .args([IPC_TEST, "--exact", "--nocapture", "--test-threads=1"])
        .env(IPC_CHILD, handles)
        .output()
        .unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&child.stdout),
        String::from_utf8_lossy(&child.stderr),
    );
    assert!(child.status.success(), "the child failed:\n{stdout}\n{stderr}");
    assert!(
        stdout.contains("ipc child: ok"),
        "the child did not run the test:\n{stdout}"
    );
    stream.synchronize().unwrap();
    let want: Vec<i32> = values.iter().map(|v| v + 3).collect();
    assert_eq!(
        buffer.to_vec().unwrap(),
        want,
        "the child's increments are visible here"
    );
    context.synchronize().unwrap();
}

fn ipc_child(handles: &str) {
    let mut parts = handles.split(':');
    let (memory, event, n) = (
        from_hex(parts.next().unwrap()),
        from_hex(parts.next().unwrap()),
        parts.next().unwrap().parse::<u32>().unwrap(),
    );
    let context = common::context().expect("the child has a GPU");
    let handle = IpcMemHandle::from_bytes(memory);
    assert_eq!(handle.to_bytes(), memory);
    // more than was shared: refused after checking the allocation's size
    let too_long = IpcMemory::<i32>::open(&context, &handle, 1 << 28);
    assert!(matches!(too_long, Err(Error::InvalidValue(_))), "{too_long:?}");
    let mut shared = IpcMemory::<i32>::open(&context, &handle, n as usize).unwrap();
    let ready = Event::open_ipc(&context, &IpcEventHandle::from_bytes(event)).unwrap();
    let stream = Stream::new(&context).unwrap();
    stream.wait_event(&ready).unwrap();
    let add_one = common::kernels(&context).function("add_one").unwrap();
    for _ in 0..2 {
        // SAFETY: add_one reads and writes n ints of the shared memory, which holds n.
        unsafe {
            stream
                .launch(&add_one, &LaunchConfig::for_num_elems(n), (&mut shared, n))
                .unwrap()
        };
    }
    stream.synchronize().unwrap();
    let want: Vec<i32> = (0..n as i32).map(|i| i * 3 + 3).collect();
    assert_eq!(shared.to_vec().unwrap(), want);
    drop((shared, ready));
    context.synchronize().unwrap();
    println!("ipc child: ok");
}

// ---------------------------------------------------------------- textures and surfaces

/// Samples a 2-D float texture at each element's centre shifted by `dx`; scales a surface in place.
const SAMPLING: &str = r#"
extern "C" __global__ void sample(cudaTextureObject_t texture, float *out, unsigned width, unsigned height, float dx) {
    unsigned x = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x < width && y < height) out[y * width + x] = tex2D<float>(texture, x + 0.5f + dx, y + 0.5f);
}

extern "C" __global__ void scale_surface(cudaSurfaceObject_t surface, unsigned width, unsigned height, float factor) {
    unsigned x = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x < width && y < height) {
        float v;
        surf2Dread(&v, surface, x * sizeof(float), y);
        surf2Dwrite(v * factor, surface, x * sizeof(float), y);
    }
}
"#;

#[test]
fn textures_sample_and_surfaces_write_cuda_arrays() {
    let Some(context) = common::context() else { return };
    let arch = context.device().compute_capability().unwrap();
    let ptx = common::compile(SAMPLING, arch).unwrap_or_else(|log| panic!("NVRTC failed:\n{log}"));
    let module = Module::from_ptx(&context, &ptx).unwrap();
    let (sample, scale_surface) = (
        module.function("sample").unwrap(),
        module.function("scale_surface").unwrap(),
    );
    let stream = Stream::new(&context).unwrap();
    let (width, height) = (100usize, 37usize);
    let image: Vec<f32> = (0..width * height)
        .map(|i| ((i % width) * 3 + (i / width) * 7) as f32 % 50.0)
        .collect();
    let array = CudaArray::<f32>::new(&context, (width, height, 0), ArrayFlags::SURFACE_LOAD_STORE).unwrap();
    assert_eq!((array.extent(), array.len()), ((width, height, 0), width * height));
    array.copy_from_host(&image).unwrap();
    assert_eq!(array.to_vec().unwrap(), image);
    let grid = LaunchConfig::new(
        ((width as u32).div_ceil(16), (height as u32).div_ceil(16), 1),
        (16, 16, 1),
    );
    let mut out = DeviceBuffer::<f32>::zeroed(&context, width * height).unwrap();
    let (w, h) = (width as u32, height as u32);

    // point sampling at the centres: the image itself
    let point = TextureObject::new(&array, &TextureDesc::default()).unwrap();
    // SAFETY: sample writes width * height floats of `out`, which holds that many.
    unsafe { stream.launch(&sample, &grid, (&point, &mut out, w, h, 0.0f32)).unwrap() };
    stream.synchronize().unwrap();
    assert_eq!(out.to_vec().unwrap(), image);

    // linear filtering half-way to the right neighbour: their mean, the edge clamped
    let linear = TextureObject::new(
        &array,
        &TextureDesc {
            filter: FilterMode::Linear,
            address_mode: AddressMode::Clamp,
            ..TextureDesc::default()
        },
    )
    .unwrap();
    // SAFETY: as above.
    unsafe {
        stream
            .launch(&sample, &grid, (&linear, &mut out, w, h, 0.5f32))
            .unwrap()
    };
    stream.synchronize().unwrap();
    let mean: Vec<f32> = (0..width * height)
        .map(|i| {
            let right = if i % width == width - 1 { i } else { i + 1 };
            (image[i] + image[right]) / 2.0
        })
        .collect();
    for (i, (got, want)) in out.to_vec().unwrap().iter().zip(&mean).enumerate() {
        assert!((got - want).abs() < 1e-3, "element {i}: {got}, want {want}");
    }

    // a surface scales the array in place; the texture then sees the new values
    let surface = SurfaceObject::new(&array).unwrap();
    // SAFETY: scale_surface reads and writes width x height floats of the array.
    unsafe { stream.launch(&scale_surface, &grid, (&surface, w, h, 2.0f32)).unwrap() };
    stream.synchronize().unwrap();
    let doubled: Vec<f32> = image.iter().map(|v| v * 2.0).collect();
    assert_eq!(array.to_vec().unwrap(), doubled);
    // SAFETY: as above.
    unsafe { stream.launch(&sample, &grid, (&point, &mut out, w, h, 0.0f32)).unwrap() };
    stream.synchronize().unwrap();
    assert_eq!(out.to_vec().unwrap(), doubled);

    // an array without surface access has no surface object; a 3-D array round-trips
    let plain = CudaArray::<[u8; 4]>::new(&context, (8, 8, 0), ArrayFlags::empty()).unwrap();
    assert!(matches!(SurfaceObject::new(&plain), Err(Error::InvalidValue(_))));
    let volume = CudaArray::<u16>::new(&context, (9, 5, 3), ArrayFlags::empty()).unwrap();
    let data: Vec<u16> = (0..9 * 5 * 3).collect();
    volume.copy_from_host(&data).unwrap();
    assert_eq!(volume.to_vec().unwrap(), data);
    assert!(matches!(volume.copy_from_host(&data[1..]), Err(Error::InvalidValue(_))));
    drop((point, linear, surface, array));
    context.synchronize().unwrap();
}
