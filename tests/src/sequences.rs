//! Sequences of cuda-driver's safe operations that the failure-point suite
//! runs against the stand-in driver and that run unchanged on a real GPU:
//! allocate, copy, launch, synchronise, drop; stream-ordered pool churn;
//! graph capture and replay; peers and explicit contexts; host functions and
//! events; kernel attributes and extended launches; module loading;
//! context-independent libraries, context limits and occupancy. Each
//! checks its results, so a run that "succeeds" wrongly is an error.
//!
//! A sequence takes the PTX of the test kernels: [`crate::fake::KERNELS`]
//! for the stand-in, [`crate::kernels::compile_ptx`] for a GPU.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use cuda_core::{DeviceArray, MemoryPool};

use cuda_driver::{
    launch_raw, CaptureMode, Context, ContextFlags, ContextLimit, Device, DeviceBuffer, Error, Event, EventFlags,
    Function, Graph, GraphArgs, HostBuffer, LaunchAttributes, LaunchConfig, Library, MemPool, MemsetValue, Module,
    Result, Stream, StreamFlags,
};

/// Device 0's primary context.
pub fn primary() -> Result<Context> {
    Context::primary(&Device::get(0)?)
}

/// `Ok` if `got == want`, else an `InvalidValue` naming `what`.
pub fn expect<T: PartialEq + std::fmt::Debug>(what: &str, got: T, want: T) -> Result<()> {
    if got == want {
        Ok(())
    } else {
        Err(Error::InvalidValue(format!("{what}: got {got:?}, want {want:?}")))
    }
}

fn device_queries(_ptx: &str) -> Result<()> {
    let devices = Device::all()?;
    expect("device count", devices.len() as u32, Device::count()?)?;
    for device in &devices {
        device.name()?;
        device.uuid()?;
        device.total_memory()?;
        device.pci_bus_id()?;
        device.compute_capability()?;
        device.max_block_dim()?;
        device.max_grid_dim()?;
        device.can_access_peer(device)?;
    }
    Ok(())
}

fn allocate_copy_launch_synchronize_drop(ptx: &str) -> Result<()> {
    let context = primary()?;
    let module = Module::from_ptx(&context, ptx)?;
    let vector_add = module.function("vector_add")?;
    let stream = Stream::new(&context)?;
    let n = 1000usize;
    let x: Vec<f32> = (0..n).map(|i| i as f32).collect();
    let a = DeviceBuffer::from_slice(&context, &x)?;
    let b = DeviceBuffer::from_slice(&context, &x)?;
    let mut c = DeviceBuffer::<f32>::zeroed(&context, n)?;
    // SAFETY: vector_add reads n floats of a and b and writes n of c, all n long.
    unsafe {
        stream.launch(
            &vector_add,
            &LaunchConfig::for_num_elems(n as u32),
            (&a, &b, &mut c, n as u32),
        )?
    };
    stream.synchronize()?;
    let sums = c.to_vec()?;
    expect("sums", sums[n - 1], 2.0 * (n - 1) as f32)?;
    let mut copy = DeviceBuffer::<f32>::alloc(&context, n)?;
    copy.copy_from_device(&c)?;
    let mut back = vec![0f32; n];
    copy.slice(..).copy_to_host(&mut back)?;
    expect("copy", back, sums)?;
    context.synchronize()
}

fn async_copies_events_and_pinned_memory(_ptx: &str) -> Result<()> {
    let context = primary()?;
    let stream = Stream::with_options(&context, StreamFlags::NON_BLOCKING, -1)?;
    let n = 512usize;
    let data: Vec<u32> = (0..n as u32).collect();
    let host = HostBuffer::from_slice(&context, &data)?;
    let mut back = HostBuffer::<u32>::new(&context, n)?;
    let start = Event::new(&context, EventFlags::DEFAULT)?;
    let end = Event::new(&context, EventFlags::DEFAULT)?;
    start.record(&stream)?;
    let mut device = DeviceBuffer::<u32>::alloc_async(&stream, n)?;
    device.copy_from_host_async(&host, &stream)?;
    device.copy_to_host_async(&mut back, &stream)?;
    end.record(&stream)?;
    end.synchronize()?;
    start.elapsed_ms(&end)?;
    expect("pinned round trip", back.to_vec(), data.clone())?;
    let mut pageable = vec![0u32; n];
    device.memset_zero_async(&stream)?;
    device.copy_from_host_async(&data, &stream)?;
    device.copy_to_host_async(&mut pageable, &stream)?;
    stream.synchronize()?;
    expect("pageable round trip", pageable, data)
}

fn pool_churn(ptx: &str) -> Result<()> {
    let context = primary()?;
    let device = context.device();
    let pool = MemPool::device_default(&device)?;
    pool.set_release_threshold(u64::MAX)?;
    expect("release threshold", pool.release_threshold()?, u64::MAX)?;
    let stream = Stream::new(&context)?;
    let module = Module::from_ptx(&context, ptx)?;
    let fill = module.function("fill")?;
    for round in 0..4u32 {
        let len = 64usize << round;
        let mut buffer = DeviceBuffer::<f32>::alloc_async(&stream, len)?;
        // SAFETY: fill writes len floats of a buffer of len.
        unsafe {
            stream.launch(
                &fill,
                &LaunchConfig::for_num_elems(len as u32),
                (&mut buffer, round as f32, len as u32),
            )?
        };
        expect("filled", buffer.to_vec()?[len - 1], round as f32)?;
    }
    let own = MemPool::new(&device)?;
    let from_own = DeviceBuffer::<u8>::alloc_from_pool_async(&own, &stream, 4096)?;
    expect("pool in use", own.used_memory()? >= 4096, true)?;
    drop(from_own);
    stream.synchronize()?;
    pool.reserved_memory()?;
    pool.trim_to(0)
}

/// What both graph-capture sequences capture: `fill` then `saxpy` over two buffers of 256
/// floats. The fields are in drop order: the buffers first, the context last.
struct CaptureParts {
    y: DeviceBuffer<f32>,
    x: DeviceBuffer<f32>,
    saxpy: Function,
    fill: Function,
    _module: Module,
    stream: Stream,
    _context: Context,
}

impl CaptureParts {
    fn new(ptx: &str) -> Result<Self> {
        let context = primary()?;
        let stream = Stream::new(&context)?;
        let module = Module::from_ptx(&context, ptx)?;
        let fill = module.function("fill")?;
        let saxpy = module.function("saxpy")?;
        let x = DeviceBuffer::<f32>::zeroed(&context, 256)?;
        let y = DeviceBuffer::<f32>::zeroed(&context, 256)?;
        Ok(Self {
            y,
            x,
            saxpy,
            fill,
            _module: module,
            stream,
            _context: context,
        })
    }
}

/// Graph capture as it must be written with this API: the capture is ended
/// on every path, so nothing is dropped while the stream is capturing.
fn graph_capture_and_replay(ptx: &str) -> Result<()> {
    let mut parts = CaptureParts::new(ptx)?;
    let (stream, fill, saxpy) = (&parts.stream, &parts.fill, &parts.saxpy);
    stream.begin_capture(CaptureMode::Global)?;
    let config = LaunchConfig::for_num_elems(256);
    // SAFETY: both kernels touch 256 floats of buffers of 256.
    let captured = unsafe {
        stream
            .launch(fill, &config, (&mut parts.x, 1.0f32, 256u32))
            .and_then(|()| stream.launch(saxpy, &config, (2.0f32, &parts.x, &mut parts.y, 256u32)))
    };
    let graph = stream.end_capture();
    captured?;
    let graph = graph?;
    replay(&graph, stream)?;
    expect("replayed twice", parts.y.to_vec()?[255], 4.0)
}

fn replay(graph: &cuda_driver::Graph, stream: &Stream) -> Result<()> {
    expect("graph nodes", graph.node_count()?, 2)?;
    let exec = graph.instantiate()?;
    exec.upload(stream)?;
    // SAFETY: the buffers the captured kernels use outlive the replays.
    unsafe {
        exec.launch(stream)?;
        exec.launch(stream)?;
    }
    stream.synchronize()
}

/// A graph built node by node (memset, two kernels, a copy, a host function), instantiated,
/// launched, its kernel's scalar updated without a new instantiation, a node disabled, and
/// the executable graph updated from a clone.
fn graph_built_and_updated(ptx: &str) -> Result<()> {
    let context = primary()?;
    let stream = Stream::new(&context)?;
    let module = Module::from_ptx(&context, ptx)?;
    let (fill, saxpy) = (module.function("fill")?, module.function("saxpy")?);
    let x = DeviceBuffer::<f32>::zeroed(&context, 256)?;
    let y = DeviceBuffer::<f32>::zeroed(&context, 256)?;
    let z = DeviceBuffer::<f32>::zeroed(&context, 256)?;
    let calls = std::sync::atomic::AtomicUsize::new(0);
    let config = LaunchConfig::for_num_elems(256);
    let mut graph = Graph::new(&context)?;
    let mut nodes = graph.nodes();
    let clear = nodes.memset(&[], &y, MemsetValue::U32(0))?;
    // SAFETY: `fill` writes 256 floats of `x`, which holds 256.
    let filled = unsafe {
        nodes.kernel(
            &[],
            &fill,
            &config,
            GraphArgs::new().write(&x).value(1.0f32).value(256u32),
        )?
    };
    let axpy_args = |a: f32| GraphArgs::new().value(a).read(&x).write(&y).value(256u32);
    // SAFETY: `saxpy` reads 256 floats of `x` and updates 256 of `y`.
    let axpy = unsafe { nodes.kernel(&[clear, filled], &saxpy, &config, axpy_args(2.0))? };
    let copied = nodes.memcpy(&[axpy], &z, &y, 256 * 4)?;
    nodes.host_function(&[copied], || {
        calls.fetch_add(1, Ordering::SeqCst);
    })?;
    expect("graph nodes", graph.node_count()?, 5)?;
    let mut exec = graph.instantiate()?;
    // SAFETY: the kernels stay inside the buffers, which the graph borrows.
    unsafe { exec.launch(&stream)? };
    stream.synchronize()?;
    expect("z after a launch", z.to_vec()?[255], 2.0)?;
    // SAFETY: as for the node's first arguments.
    unsafe { exec.set_kernel_args(&axpy, axpy_args(3.0))? };
    exec.set_node_enabled(&copied, false)?;
    // SAFETY: as above.
    unsafe { exec.launch(&stream)? };
    stream.synchronize()?;
    expect("y after the scalar update", y.to_vec()?[0], 3.0)?;
    expect("z with its copy disabled", z.to_vec()?[0], 2.0)?;
    let clone = graph.try_clone()?;
    exec.update(&clone)?;
    // SAFETY: as above; the update brought back the scalar 2 and enabled copy node's parameters.
    unsafe { exec.launch(&stream)? };
    stream.synchronize()?;
    expect("y after the update from the clone", y.to_vec()?[7], 2.0)?;
    drop(exec);
    expect("host function calls", calls.load(Ordering::SeqCst), 3)
}

/// Graph capture written the natural way, leaving the capture region with
/// `?` on the first error: the buffers are dropped while the stream still
/// captures, when the driver forbids the synchronisation and free their
/// destructors need.
pub fn graph_capture_left_early_on_error(ptx: &str) -> Result<()> {
    let mut parts = CaptureParts::new(ptx)?;
    let (stream, fill, saxpy) = (&parts.stream, &parts.fill, &parts.saxpy);
    stream.begin_capture(CaptureMode::Global)?;
    let config = LaunchConfig::for_num_elems(256);
    // SAFETY: both kernels touch 256 floats of buffers of 256.
    unsafe {
        stream.launch(fill, &config, (&mut parts.x, 1.0f32, 256u32))?;
        stream.launch(saxpy, &config, (2.0f32, &parts.x, &mut parts.y, 256u32))?;
    }
    let graph = stream.end_capture()?;
    replay(&graph, stream)?;
    expect("replayed twice", parts.y.to_vec()?[255], 4.0)
}

/// Copies between contexts: an explicit one, and the primary contexts of
/// two devices with peer access (of one device twice, on a single GPU).
fn peers_and_explicit_contexts(_ptx: &str) -> Result<()> {
    let d0 = Device::get(0)?;
    let own = Context::new(&d0, ContextFlags::SCHED_AUTO)?;
    let c0 = Context::primary(&d0)?;
    let peer = if Device::count()? > 1 {
        let c1 = Context::primary(&Device::get(1)?)?;
        c0.enable_peer_access(&c1)?;
        Some(c1)
    } else {
        None
    };
    let data: Vec<u64> = (0..100).collect();
    let source = DeviceBuffer::from_slice(peer.as_ref().unwrap_or(&own), &data)?;
    let mut target = DeviceBuffer::<u64>::zeroed(&c0, data.len())?;
    target.copy_from_peer(&source)?;
    let stream = Stream::new(&c0)?;
    target.copy_from_peer_async(&source, &stream)?;
    stream.synchronize()?;
    let mut in_own = DeviceBuffer::<u64>::zeroed(&own, data.len())?;
    in_own.copy_from_peer(&target)?;
    expect("peer copies", in_own.to_vec()?, data)?;
    if let Some(c1) = &peer {
        c0.disable_peer_access(c1)?;
    }
    own.synchronize()
}

fn host_functions_and_stream_order(_ptx: &str) -> Result<()> {
    let context = primary()?;
    let first = Stream::new(&context)?;
    let second = Stream::with_options(&context, StreamFlags::DEFAULT, 0)?;
    let ran = Arc::new(AtomicBool::new(false));
    let flag = ran.clone();
    first.launch_host_func(move || flag.store(true, Ordering::SeqCst))?;
    let event = Event::new(&context, EventFlags::DISABLE_TIMING)?;
    event.record(&first)?;
    second.wait_event(&event)?;
    second.synchronize()?;
    expect("host function ran", ran.load(Ordering::SeqCst), true)?;
    expect("first idle", first.query()?, true)?;
    expect("event done", event.query()?, true)?;
    second.priority()?;
    second.flags()?;
    context.stream_priority_range()?;
    context.memory_info()?;
    Ok(())
}

fn kernel_attributes_and_launch_variants(ptx: &str) -> Result<()> {
    let context = primary()?;
    let module = Module::from_ptx(&context, ptx)?;
    let fill = module.function("fill")?;
    expect("fill parameters", fill.param_info()?.len(), 3)?;
    fill.max_threads_per_block()?;
    fill.num_registers()?;
    fill.shared_memory_bytes()?;
    fill.local_memory_bytes()?;
    fill.ptx_version()?;
    fill.binary_version()?;
    fill.set_max_dynamic_shared_memory(64 * 1024)?;
    expect("dynamic shared memory", fill.max_dynamic_shared_memory()?, 64 * 1024)?;
    let stream = Stream::new(&context)?;
    let mut data = DeviceBuffer::<f32>::zeroed(&context, 1024)?;
    let config = LaunchConfig::new((4, 1, 1), (256, 1, 1)).with_shared_mem(64 * 1024);
    let attributes = LaunchAttributes {
        cluster_dim: Some((2, 1, 1)),
        ..LaunchAttributes::default()
    };
    // SAFETY: fill writes 1024 floats of a buffer of 1024.
    unsafe { stream.launch_ex(&fill, &config, &attributes, (&mut data, 5.0f32, 1024u32))? };
    let affine = module.function("affine")?;
    let (mut pointer, mut scale, mut n) = (unsafe { data.as_raw() }, [2.0f32, 1.0], 1024u32);
    let mut params = [
        (&mut scale as *mut [f32; 2]).cast(),
        (&mut pointer as *mut u64).cast(),
        (&mut n as *mut u32).cast(),
    ];
    // SAFETY: the parameters point at a [f32; 2], a device pointer to 1024 floats and their count.
    unsafe { launch_raw(&affine, (4, 1, 1), (256, 1, 1), 0, &stream, &mut params)? };
    stream.synchronize()?;
    expect("fill then affine", data.to_vec()?[1023], 11.0)
}

fn module_loading(ptx: &str) -> Result<()> {
    let context = primary()?;
    let from_image = Module::from_image(&context, ptx.as_bytes())?;
    from_image.function("noop")?;
    let path = std::env::temp_dir().join(format!("fakecuda-kernels-{}.ptx", std::process::id()));
    std::fs::write(&path, ptx).map_err(|e| Error::InvalidValue(e.to_string()))?;
    let from_file = Module::from_file(&context, &path);
    let _ = std::fs::remove_file(&path);
    let noop = from_file?.function("noop")?;
    let stream = Stream::new(&context)?;
    // SAFETY: noop takes no parameters and does nothing.
    unsafe { stream.launch(&noop, &LaunchConfig::new((1, 1, 1), (1, 1, 1)), ())? };
    stream.synchronize()
}

fn libraries_limits_and_occupancy(ptx: &str) -> Result<()> {
    let context = primary()?;
    let library = Library::from_ptx(ptx)?;
    let names = library.kernel_names()?;
    expect("library kernels", names.iter().any(|name| name == "fill"), true)?;
    let fill = library.function(&context, "fill")?;
    let stream = Stream::new(&context)?;
    let mut data = DeviceBuffer::<f32>::zeroed(&context, 64)?;
    // SAFETY: fill writes 64 floats of a buffer of 64.
    unsafe { stream.launch(&fill, &LaunchConfig::for_num_elems(64), (&mut data, 6.0f32, 64u32))? };
    stream.synchronize()?;
    expect("filled through a library", data.to_vec()?[63], 6.0)?;
    expect(
        "resident blocks",
        fill.max_active_blocks_per_multiprocessor(256, 0)? > 0,
        true,
    )?;
    let (grid, block) = fill.max_potential_block_size(0)?;
    expect("occupancy", grid > 0 && block > 0, true)?;
    let stack = context.limit(ContextLimit::CU_LIMIT_STACK_SIZE)?;
    context.set_limit(ContextLimit::CU_LIMIT_STACK_SIZE, stack.max(1024))?;
    expect(
        "stack size",
        context.limit(ContextLimit::CU_LIMIT_STACK_SIZE)?,
        stack.max(1024),
    )
}

/// Memory two streams share, ordered with events: a read on another stream after a write, a
/// write after that read, a plain buffer's and a stream-ordered buffer's free after both.
fn streams_share_memory(ptx: &str) -> Result<()> {
    let context = primary()?;
    let module = Module::from_ptx(&context, ptx)?;
    let fill = module.function("fill")?;
    let saxpy = module.function("saxpy")?;
    let a = Stream::with_options(&context, StreamFlags::NON_BLOCKING, 0)?;
    let b = Stream::with_options(&context, StreamFlags::NON_BLOCKING, 0)?;
    let n = 256usize;
    let config = LaunchConfig::for_num_elems(n as u32);
    let mut x = DeviceBuffer::<f32>::alloc_async(&a, n)?;
    let mut y = DeviceBuffer::<f32>::zeroed(&context, n)?;
    // SAFETY: fill and saxpy touch n floats of buffers of n.
    unsafe {
        a.launch(&fill, &config, (&mut x, 3.0f32, n as u32))?;
        b.launch(&saxpy, &config, (2.0f32, &x, &mut y, n as u32))?;
        a.launch(&fill, &config, (&mut x, 1.0f32, n as u32))?;
    }
    b.synchronize()?;
    expect("a read on b after a write on a", y.to_vec()?, vec![6.0; n])?;
    expect("a write on a after a read on b", x.to_vec()?, vec![1.0; n])?;
    let mut z = DeviceBuffer::<f32>::alloc(&context, n)?;
    z.copy_from_device_async(&y, &a)?;
    drop((x, y, z));
    a.synchronize()?;
    b.synchronize()
}

/// A sequence of safe calls, given the PTX of the test kernels.
pub type Sequence = fn(&str) -> Result<()>;

/// cuda-core's NumPy-style layer on the driver: `z = 2 * x + y` over arrays of an explicit
/// pool, one fused kernel generated, compiled by NVRTC, loaded (as PTX, which the stand-in
/// reads) and launched; then the arrays and the pool dropped and the generated module unloaded,
/// on every path, so nothing of cuda-core's outlives a run.
fn fused_array_expression(_ptx: &str) -> Result<()> {
    // The kernel is generated and compiled at run time: without NVRTC (valgrind's runs leave it
    // out) there is nothing to exercise, and the report shows 0 driver calls.
    if let Err(why) = cuda_sys::nvrtc() {
        static SAID: std::sync::Once = std::sync::Once::new();
        SAID.call_once(|| println!("skipped: fused array expression: NVRTC is not available ({why})"));
        return Ok(());
    }
    cuda_core::load_generated_as_ptx(true);
    let context = primary()?;
    let stream = Stream::new(&context)?;
    let evaluated = (|| -> cuda_core::Result<()> {
        let pool = MemoryPool::new(&context);
        let n = 1000usize;
        let xs: Vec<f32> = (0..n).map(|i| i as f32).collect();
        let ys: Vec<f32> = (0..n).map(|i| (i % 7) as f32).collect();
        let mut x = DeviceArray::<f32>::empty_in(&pool, &stream, n)?;
        let mut y = DeviceArray::<f32>::empty_in(&pool, &stream, n)?;
        let mut z = DeviceArray::<f32>::empty_in(&pool, &stream, n)?;
        x.copy_from_host(&xs)?;
        y.copy_from_host(&ys)?;
        z.assign(2.0 * &x + &y)?;
        let got = z.to_vec()?;
        let want: Vec<f32> = xs.iter().zip(&ys).map(|(a, b)| 2.0 * a + b).collect();
        if got != want {
            return Err(cuda_core::Error::InvalidValue(format!(
                "2 * x + y: got {:?}.., want {:?}..",
                &got[..4],
                &want[..4]
            )));
        }
        drop((x, y, z));
        pool.free_all_blocks()?;
        Ok(())
    })();
    // The launch is done (its result was read, or it failed): its module may go.
    let synchronized = stream.synchronize();
    cuda_core::unload_generated_kernels();
    evaluated.map_err(|error| match error {
        cuda_core::Error::Driver(error) => error,
        other => Error::InvalidValue(other.to_string()),
    })?;
    synchronized
}

/// cuda-core's `.npy` chapter on the driver: an array of an explicit pool written as `.npy`
/// bytes and read back into a new array of the pool (allocations, copies both ways,
/// synchronisation), the values and shape checked; everything dropped on every path.
fn npy_round_trip(_ptx: &str) -> Result<()> {
    let context = primary()?;
    let stream = Stream::new(&context)?;
    let round_trip = (|| -> cuda_core::Result<()> {
        let pool = MemoryPool::new(&context);
        let values: Vec<i32> = (0..12).map(|i| i * 3 - 7).collect();
        let mut x = DeviceArray::<i32>::empty_in(&pool, &stream, [3, 4])?;
        x.copy_from_host(&values)?;
        let mut bytes = Vec::new();
        x.write_npy(&mut bytes)?;
        let y = DeviceArray::<i32>::read_npy_in(&pool, &stream, bytes.as_slice())?;
        if y.shape() != [3, 4] || y.to_vec()? != values {
            return Err(cuda_core::Error::InvalidValue(format!(
                "npy round trip: got shape {:?}",
                y.shape()
            )));
        }
        drop((x, y));
        pool.free_all_blocks()?;
        Ok(())
    })();
    let synchronized = stream.synchronize();
    round_trip.map_err(|error| match error {
        cuda_core::Error::Driver(error) => error,
        other => Error::InvalidValue(other.to_string()),
    })?;
    synchronized
}

/// cuda-core's linear algebra on the driver: an int32 matrix product of a matrix and a
/// transposed view (the generated integer kernel, which reads strides, so nothing is copied),
/// its result read back and checked; then the arrays dropped and the generated module unloaded,
/// on every path.
fn integer_matmul(_ptx: &str) -> Result<()> {
    if let Err(why) = cuda_sys::nvrtc() {
        static SAID: std::sync::Once = std::sync::Once::new();
        SAID.call_once(|| println!("skipped: integer matmul: NVRTC is not available ({why})"));
        return Ok(());
    }
    cuda_core::load_generated_as_ptx(true);
    let context = primary()?;
    let stream = Stream::new(&context)?;
    let evaluated = (|| -> cuda_core::Result<()> {
        let (m, k, n) = (3usize, 4usize, 2usize);
        let a_host: Vec<i32> = (0..(m * k) as i32).map(|v| v - 5).collect();
        let b_t_host: Vec<i32> = (0..(n * k) as i32).map(|v| 2 * v + 1).collect();
        let pool = MemoryPool::new(&context);
        let mut a = DeviceArray::<i32>::empty_in(&pool, &stream, [m, k])?;
        let mut b_t = DeviceArray::<i32>::empty_in(&pool, &stream, [n, k])?;
        a.copy_from_host(&a_host)?;
        b_t.copy_from_host(&b_t_host)?;
        let mut c = DeviceArray::<i32>::empty_in(&pool, &stream, [m, n])?;
        c.assign(a.matmul_expr(&b_t.transpose())?)?;
        let got = c.to_vec()?;
        let want: Vec<i32> = (0..m * n)
            .map(|i| {
                (0..k)
                    .map(|l| a_host[(i / n) * k + l] * b_t_host[(i % n) * k + l])
                    .sum()
            })
            .collect();
        if got != want {
            return Err(cuda_core::Error::InvalidValue(format!(
                "a @ b: got {got:?}, want {want:?}"
            )));
        }
        drop((a, b_t, c));
        pool.free_all_blocks()?;
        Ok(())
    })();
    let synchronized = stream.synchronize();
    cuda_core::unload_generated_kernels();
    evaluated.map_err(|error| match error {
        cuda_core::Error::Driver(error) => error,
        other => Error::InvalidValue(other.to_string()),
    })?;
    synchronized
}

/// cuda-core's indexing chapter on the driver: `take` of an f32 array by i64 indices in mode
/// Raise into an array of an explicit pool (a zeroed flag array from that pool, one generated
/// gather kernel, the flags read back), checked
/// against the host, then the same with an index out of range, which must be the typed
/// `IndexOutOfBounds` error; arrays, pool and generated module released on every path.
fn take_with_indices_checked_on_the_device(_ptx: &str) -> Result<()> {
    if let Err(why) = cuda_sys::nvrtc() {
        static SAID: std::sync::Once = std::sync::Once::new();
        SAID.call_once(|| println!("skipped: take with indices checked on the device: NVRTC is not available ({why})"));
        return Ok(());
    }
    cuda_core::load_generated_as_ptx(true);
    let context = primary()?;
    let stream = Stream::new(&context)?;
    let evaluated = (|| -> cuda_core::Result<()> {
        let pool = MemoryPool::new(&context);
        let n = 500usize;
        let xs: Vec<f32> = (0..n).map(|i| i as f32 * 0.5).collect();
        let picks: Vec<i64> = (0..n as i64).map(|i| (i * 7) % n as i64 - 250).collect();
        let mut x = DeviceArray::<f32>::empty_in(&pool, &stream, n)?;
        let mut indices = DeviceArray::<i64>::empty_in(&pool, &stream, n)?;
        x.copy_from_host(&xs)?;
        indices.copy_from_host(&picks)?;
        let mut out = DeviceArray::<f32>::empty_in(&pool, &stream, n)?;
        x.take_into(&indices, 0, cuda_core::IndexMode::Raise, &mut out)?;
        let got = out.to_vec()?;
        let want: Vec<f32> = picks.iter().map(|&j| xs[j.rem_euclid(n as i64) as usize]).collect();
        if got != want {
            return Err(cuda_core::Error::InvalidValue(format!(
                "take: got {:?}.., want {:?}..",
                &got[..4],
                &want[..4]
            )));
        }
        indices.copy_from_host(&vec![n as i64; n])?;
        match x.take_into(&indices, 0, cuda_core::IndexMode::Raise, &mut out) {
            Err(cuda_core::Error::IndexOutOfBounds { index: Some(i), .. }) if i == n as i64 => {}
            Err(cuda_core::Error::IndexOutOfBounds { .. }) | Ok(_) => {
                return Err(cuda_core::Error::InvalidValue(
                    "take of an index out of range: no IndexOutOfBounds naming it".into(),
                ))
            }
            Err(other) => return Err(other),
        }
        drop((x, indices, out));
        pool.free_all_blocks()?;
        Ok(())
    })();
    let synchronized = stream.synchronize();
    cuda_core::unload_generated_kernels();
    evaluated.map_err(|error| match error {
        cuda_core::Error::Driver(error) => error,
        other => Error::InvalidValue(other.to_string()),
    })?;
    synchronized
}

/// The sequences the failure-point suite runs, by name.
pub const SEQUENCES: [(&str, Sequence); 16] = [
    ("device queries", device_queries),
    (
        "allocate, copy, launch, synchronize, drop",
        allocate_copy_launch_synchronize_drop,
    ),
    (
        "async copies, events, pinned memory",
        async_copies_events_and_pinned_memory,
    ),
    ("pool churn", pool_churn),
    ("graph capture and replay", graph_capture_and_replay),
    ("graph built, instantiated and updated", graph_built_and_updated),
    ("peers and explicit contexts", peers_and_explicit_contexts),
    ("host functions and stream order", host_functions_and_stream_order),
    ("streams share memory", streams_share_memory),
    (
        "kernel attributes and launch variants",
        kernel_attributes_and_launch_variants,
    ),
    ("module loading", module_loading),
    ("libraries, limits and occupancy", libraries_limits_and_occupancy),
    ("fused array expression", fused_array_expression),
    ("npy round trip", npy_round_trip),
    ("integer matmul", integer_matmul),
    (
        "take with indices checked on the device",
        take_with_indices_checked_on_the_device,
    ),
];
