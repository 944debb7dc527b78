//! The device-memory contract against the stand-in driver: memory used on a second stream is
//! ordered with `cuStreamWaitEvent`, never a host wait (`cuStreamSynchronize`,
//! `cuCtxSynchronize`); one stream alone costs no event; frees wait for the recorded events.
//! The fake runs work deferred here (at a wait), so a missing wait shows as wrong values or a
//! kernel touching freed memory.

use cuda_driver::{
    Access, CaptureMode, Context, Device, DeviceBuffer, DeviceMemory, DeviceMemoryMut, Function, LaunchConfig, Module,
    Stream, StreamFlags,
};
use tests::fake::{self, Kind, Session};

const N: usize = 256;

struct Parts {
    fill: Function,
    saxpy: Function,
    _module: Module,
    context: Context,
}

fn parts(fake: &Session) -> Parts {
    fake.set_deferred(true);
    let context = Context::primary(&Device::get(0).unwrap()).unwrap();
    let module = Module::from_ptx(&context, fake::KERNELS).unwrap();
    Parts {
        fill: module.function("fill").unwrap(),
        saxpy: module.function("saxpy").unwrap(),
        _module: module,
        context,
    }
}

fn stream(context: &Context) -> Stream {
    Stream::with_options(context, StreamFlags::NON_BLOCKING, 0).unwrap()
}

/// How often `name` appears in the fake's call trace.
fn calls(trace: &str, name: &str) -> usize {
    trace.split_whitespace().filter(|call| *call == name).count()
}

fn host_waits(trace: &str) -> usize {
    calls(trace, "cuStreamSynchronize") + calls(trace, "cuCtxSynchronize") + calls(trace, "cuEventSynchronize")
}

fn finish(fake: &Session, parts: Parts) {
    drop(parts);
    fake.set_deferred(false);
    assert_eq!(fake.live(Kind::DeviceMemory), 0);
    let counts = fake.counts();
    assert_eq!(counts.double_frees, 0, "{counts}");
    assert_eq!(counts.invalid_handles, 0, "{counts}");
}

#[test]
fn a_read_on_a_second_stream_waits_on_the_device_for_the_write() {
    let fake = fake::session();
    let parts = parts(&fake);
    let config = LaunchConfig::for_num_elems(N as u32);
    let (a, b) = (stream(&parts.context), stream(&parts.context));
    for stream_ordered in [false, true] {
        let mut x = match stream_ordered {
            true => DeviceBuffer::<f32>::alloc_async(&a, N).unwrap(),
            false => DeviceBuffer::<f32>::alloc(&parts.context, N).unwrap(),
        };
        let mut y = DeviceBuffer::<f32>::zeroed(&parts.context, N).unwrap();
        // SAFETY (every launch here): fill and saxpy touch N floats of buffers of N.
        unsafe { a.launch(&parts.fill, &config, (&mut x, 1.0f32, N as u32)).unwrap() };
        a.synchronize().unwrap();
        fake.reset();
        // Queued on a, not run yet (deferred): b's read must wait for it.
        unsafe { a.launch(&parts.fill, &config, (&mut x, 3.0f32, N as u32)).unwrap() };
        unsafe { b.launch(&parts.saxpy, &config, (2.0f32, &x, &mut y, N as u32)).unwrap() };
        let trace = fake.trace();
        assert_eq!(host_waits(&trace), 0, "no host wait: {trace}");
        assert_eq!(calls(&trace, "cuStreamWaitEvent"), 1, "{trace}");
        assert!(calls(&trace, "cuEventRecord") >= 1, "{trace}");
        b.synchronize().unwrap();
        assert_eq!(y.to_vec().unwrap(), [6.0; N], "stream-ordered: {stream_ordered}");
        drop((x, y));
    }
    a.synchronize().unwrap();
    finish(&fake, parts);
}

#[test]
fn one_stream_alone_records_no_event() {
    let fake = fake::session();
    let parts = parts(&fake);
    let config = LaunchConfig::for_num_elems(N as u32);
    let a = stream(&parts.context);
    let mut x = DeviceBuffer::<f32>::alloc_async(&a, N).unwrap();
    let mut y = DeviceBuffer::<f32>::alloc(&parts.context, N).unwrap();
    fake.reset();
    for _ in 0..10 {
        // SAFETY: fill and saxpy touch N floats of buffers of N.
        unsafe {
            a.launch(&parts.fill, &config, (&mut x, 1.0f32, N as u32)).unwrap();
            a.launch(&parts.fill, &config, (&mut y, 2.0f32, N as u32)).unwrap();
            a.launch(&parts.saxpy, &config, (2.0f32, &x, &mut y, N as u32)).unwrap();
        }
        x.memset_zero_async(&a).unwrap();
    }
    let trace = fake.trace();
    assert_eq!(calls(&trace, "cuLaunchKernel"), 30, "{trace}");
    assert_eq!(calls(&trace, "cuMemsetD8Async"), 10, "{trace}");
    for name in ["cuEventCreate", "cuEventRecord", "cuStreamWaitEvent"] {
        assert_eq!(calls(&trace, name), 0, "{name}: {trace}");
    }
    assert_eq!(host_waits(&trace), 0, "{trace}");
    assert_eq!(y.to_vec().unwrap(), [4.0; N]);
    drop((x, y));
    a.synchronize().unwrap();
    finish(&fake, parts);
}

#[test]
fn a_write_waits_for_every_reader_since_the_last_write() {
    let fake = fake::session();
    let parts = parts(&fake);
    let config = LaunchConfig::for_num_elems(N as u32);
    let (a, b, c) = (stream(&parts.context), stream(&parts.context), stream(&parts.context));
    let mut x = DeviceBuffer::<f32>::alloc(&parts.context, N).unwrap();
    let mut y = DeviceBuffer::<f32>::zeroed(&parts.context, N).unwrap();
    let mut z = DeviceBuffer::<f32>::zeroed(&parts.context, N).unwrap();
    fake.reset();
    // SAFETY (every launch here): fill and saxpy touch N floats of buffers of N.
    unsafe {
        a.launch(&parts.fill, &config, (&mut x, 1.0f32, N as u32)).unwrap();
        b.launch(&parts.saxpy, &config, (1.0f32, &x, &mut y, N as u32)).unwrap();
        c.launch(&parts.saxpy, &config, (1.0f32, &x, &mut z, N as u32)).unwrap();
    }
    assert_eq!(
        calls(&fake.trace(), "cuStreamWaitEvent"),
        2,
        "each reader waits for the write"
    );
    fake.reset();
    // The new write on a must not overwrite x before b and c have read it.
    unsafe { a.launch(&parts.fill, &config, (&mut x, 5.0f32, N as u32)).unwrap() };
    let trace = fake.trace();
    assert_eq!(calls(&trace, "cuStreamWaitEvent"), 2, "waits for b and c: {trace}");
    assert_eq!(host_waits(&trace), 0, "{trace}");
    for s in [&a, &b, &c] {
        s.synchronize().unwrap();
    }
    assert_eq!(y.to_vec().unwrap(), [1.0; N]);
    assert_eq!(z.to_vec().unwrap(), [1.0; N]);
    assert_eq!(x.to_vec().unwrap(), [5.0; N]);
    drop((x, y, z));
    finish(&fake, parts);
}

#[test]
fn frees_are_ordered_after_other_streams_with_events() {
    let fake = fake::session();
    let parts = parts(&fake);
    let config = LaunchConfig::for_num_elems(N as u32);
    let (a, b) = (stream(&parts.context), stream(&parts.context));

    // Stream-ordered memory of a, written on b: a waits for b's event on the device, then frees.
    let mut x = DeviceBuffer::<f32>::alloc_async(&a, N).unwrap();
    // SAFETY (every launch here): fill touches N floats of a buffer of N.
    unsafe { b.launch(&parts.fill, &config, (&mut x, 1.0f32, N as u32)).unwrap() };
    fake.reset();
    drop(x);
    let trace = fake.trace();
    assert_eq!(host_waits(&trace), 0, "{trace}");
    assert_eq!(calls(&trace, "cuStreamWaitEvent"), 1, "{trace}");
    assert_eq!(calls(&trace, "cuMemFreeAsync"), 1, "{trace}");
    // b's kernel ran before the free (a kernel on freed memory would fail the wait).
    a.synchronize().unwrap();
    b.synchronize().unwrap();

    // Plain memory used on a and b: the free waits for their events, not the context.
    let mut x = DeviceBuffer::<f32>::alloc(&parts.context, N).unwrap();
    unsafe {
        a.launch(&parts.fill, &config, (&mut x, 1.0f32, N as u32)).unwrap();
        b.launch(&parts.fill, &config, (&mut x, 2.0f32, N as u32)).unwrap();
    }
    fake.reset();
    drop(x);
    let trace = fake.trace();
    assert_eq!(calls(&trace, "cuCtxSynchronize"), 0, "{trace}");
    assert_eq!(calls(&trace, "cuStreamSynchronize"), 0, "{trace}");
    assert_eq!(calls(&trace, "cuEventSynchronize"), 2, "{trace}");
    assert_eq!(calls(&trace, "cuMemFree_v2"), 1, "{trace}");
    a.synchronize().unwrap();
    b.synchronize().unwrap();
    finish(&fake, parts);
}

/// A library-style wrapper: any contract memory in, any writable contract memory out.
fn copy(out: &mut impl DeviceMemoryMut, input: &impl DeviceMemory, stream: &Stream) -> cuda_driver::Result<()> {
    let bytes = out.byte_len().min(input.byte_len());
    let _read = input.begin_use(stream, Access::Read)?;
    let _write = out.begin_use(stream, Access::Write)?;
    stream.context().set_current()?;
    let driver = cuda_driver::sys::driver()?;
    // SAFETY: both ranges are live device memory of the stream's context (the contract), at
    // least `bytes` long, kept until the copy has run (the guards record the use once queued).
    let result =
        unsafe { driver.cuMemcpyDtoDAsync_v2()?(out.device_ptr(), input.device_ptr(), bytes, stream.as_raw()) };
    match result.0 {
        0 => Ok(()),
        code => Err(cuda_driver::Error::InvalidValue(format!("cuMemcpyDtoDAsync: {code}"))),
    }
}

#[test]
fn the_contract_orders_a_library_style_caller() {
    // What a library wrapper does: begin the uses, queue its work, drop the guards.
    let fake = fake::session();
    let parts = parts(&fake);
    let (a, b) = (stream(&parts.context), stream(&parts.context));
    let mut x = DeviceBuffer::<f32>::alloc(&parts.context, N).unwrap();
    let mut y = DeviceBuffer::<f32>::zeroed(&parts.context, N).unwrap();
    // SAFETY: fill touches N floats of a buffer of N.
    unsafe {
        a.launch(
            &parts.fill,
            &LaunchConfig::for_num_elems(N as u32),
            (&mut x, 7.0f32, N as u32),
        )
        .unwrap()
    };
    fake.reset();
    copy(&mut y, &x, &b).unwrap();
    assert_eq!(x.byte_len(), N * 4);
    assert_eq!(DeviceMemory::context(&x), &parts.context);
    assert_eq!(host_waits(&fake.trace()), 0, "{}", fake.trace());
    b.synchronize().unwrap();
    assert_eq!(y.to_vec().unwrap(), [7.0; N]);
    drop((x, y));
    a.synchronize().unwrap();
    finish(&fake, parts);
}

#[test]
fn the_per_thread_default_stream_is_refused() {
    let fake = fake::session();
    let parts = parts(&fake);
    let x = DeviceBuffer::<f32>::alloc(&parts.context, N).unwrap();
    // SAFETY: the per-thread default stream handle is valid in every context.
    let per_thread = unsafe { Stream::from_raw(&parts.context, 0x2 as cuda_driver::sys::driver::CUstream) };
    assert!(per_thread.is_per_thread());
    let error = x.begin_use(&per_thread, Access::Read).unwrap_err();
    assert!(matches!(error, cuda_driver::Error::InvalidValue(_)), "{error}");
    drop((x, per_thread));
    finish(&fake, parts);
}

#[test]
fn a_pool_refuses_the_per_thread_default_stream_with_or_without_cached_blocks() {
    let fake = fake::session();
    let parts = parts(&fake);
    let pool = cuda_core::MemoryPool::new(&parts.context);
    // SAFETY: the per-thread default stream handle is valid in every context.
    let per_thread = unsafe { Stream::from_raw(&parts.context, 0x2 as cuda_driver::sys::driver::CUstream) };
    let refused = |pool: &cuda_core::MemoryPool| match pool.alloc(&per_thread, 1024) {
        Err(cuda_core::Error::Driver(cuda_driver::Error::InvalidValue(why))) => {
            assert!(why.contains("per-thread"), "{why}")
        }
        other => panic!("expected the per-thread stream refused, got {other:?}"),
    };
    refused(&pool);
    // A block of the same class cached for another stream is not handed to it either.
    let other = stream(&parts.context);
    drop(pool.alloc(&other, 1024).unwrap());
    assert_eq!(pool.stats().cached_blocks, 1);
    refused(&pool);
    assert_eq!(pool.stats().cached_blocks, 1);
    pool.free_all_blocks().unwrap();
    other.synchronize().unwrap();
    drop((pool, other, per_thread));
    finish(&fake, parts);
}

#[test]
fn captured_uses_are_not_ordered_from_outside_the_capture() {
    let fake = fake::session();
    let parts = parts(&fake);
    let config = LaunchConfig::for_num_elems(N as u32);
    let (a, b) = (stream(&parts.context), stream(&parts.context));
    let mut x = DeviceBuffer::<f32>::alloc(&parts.context, N).unwrap();
    // SAFETY (every launch here): fill touches N floats of a buffer of N.
    unsafe { b.launch(&parts.fill, &config, (&mut x, 1.0f32, N as u32)).unwrap() };
    b.synchronize().unwrap();
    fake.reset();
    // A capturing stream must not wait for an event recorded outside the capture (the driver
    // refuses it), nor record one that streams outside would wait for.
    let graph = a
        .capture(CaptureMode::Global, |a| unsafe {
            a.launch(&parts.fill, &config, (&mut x, 2.0f32, N as u32))
        })
        .unwrap();
    let trace = fake.trace();
    for name in ["cuStreamWaitEvent", "cuEventRecord", "cuEventCreate"] {
        assert_eq!(calls(&trace, name), 0, "{name}: {trace}");
    }
    let exec = graph.instantiate().unwrap();
    // SAFETY: x, which the graph writes, outlives the replay.
    unsafe { exec.launch(&a).unwrap() };
    a.synchronize().unwrap();
    assert_eq!(x.to_vec().unwrap(), [2.0; N]);

    // Outside the capture, a's use is ordered after b's again.
    fake.reset();
    unsafe { a.launch(&parts.fill, &config, (&mut x, 3.0f32, N as u32)).unwrap() };
    assert_eq!(calls(&fake.trace(), "cuStreamWaitEvent"), 1, "{}", fake.trace());

    // Dropped during a capture: freed when it ends, after waiting for a's and b's events.
    let c = stream(&parts.context);
    unsafe { b.launch(&parts.fill, &config, (&mut x, 4.0f32, N as u32)).unwrap() };
    let scope = c.capture_scope(CaptureMode::Global).unwrap();
    fake.reset();
    drop(x);
    assert_eq!(fake.live(Kind::DeviceMemory), 1, "deferred: {}", fake.trace());
    drop(scope);
    let trace = fake.trace();
    assert_eq!(calls(&trace, "cuCtxSynchronize"), 0, "{trace}");
    assert_eq!(calls(&trace, "cuEventSynchronize"), 2, "{trace}");
    assert_eq!(calls(&trace, "cuMemFree_v2"), 1, "{trace}");
    drop(exec);
    finish(&fake, parts);
}

/// The launches that `cuda_driver`'s GPU test `cross_stream_order` times, on the stand-in: a
/// write on `a` behind other work, a read of it on `b` behind other work, an overwrite on `a`,
/// for plain and pool memory. Queueing them makes only the calls that queue work and order it
/// on the device: no host wait of any kind (synchronising, a blocking copy, a free), which is
/// what its "queueing took ... of ...: a host wait?" check would catch on a GPU.
#[test]
fn the_cross_stream_launches_queue_without_a_host_wait() {
    let fake = fake::session();
    let parts = parts(&fake);
    let config = LaunchConfig::for_num_elems(N as u32);
    let one = LaunchConfig::for_num_elems(2);
    let (a, b) = (stream(&parts.context), stream(&parts.context));
    let pool = cuda_driver::MemPool::new(&parts.context.device()).unwrap();
    for stream_ordered in [false, true] {
        let mut x = match stream_ordered {
            true => DeviceBuffer::<f32>::alloc_from_pool_async(&pool, &a, N).unwrap(),
            false => DeviceBuffer::<f32>::alloc(&parts.context, N).unwrap(),
        };
        let mut y = DeviceBuffer::<f32>::zeroed(&parts.context, N).unwrap();
        let mut done = DeviceBuffer::<f32>::zeroed(&parts.context, 2).unwrap();
        let mut done_b = DeviceBuffer::<f32>::zeroed(&parts.context, 2).unwrap();
        // SAFETY (every launch here): fill and saxpy touch the element counts of their buffers.
        unsafe {
            a.launch(&parts.fill, &config, (&mut x, 1.0f32, N as u32)).unwrap();
            a.launch(&parts.fill, &one, (&mut done, 0.0f32, 2u32)).unwrap();
            b.launch(&parts.saxpy, &config, (0.0f32, &x, &mut y, N as u32)).unwrap();
        }
        a.synchronize().unwrap();
        b.synchronize().unwrap();
        fake.reset();
        unsafe {
            a.launch(&parts.fill, &one, (&mut done, 1.0f32, 2u32)).unwrap();
            a.launch(&parts.fill, &config, (&mut x, 3.0f32, N as u32)).unwrap();
            b.launch(&parts.fill, &one, (&mut done_b, 1.0f32, 2u32)).unwrap();
            b.launch(&parts.saxpy, &config, (2.0f32, &x, &mut y, N as u32)).unwrap();
            a.launch(&parts.fill, &config, (&mut x, 5.0f32, N as u32)).unwrap();
        }
        let trace = fake.trace();
        let queueing = [
            "cuCtxGetCurrent",
            "cuLaunchKernel",
            "cuEventRecord",
            "cuStreamWaitEvent",
        ];
        let others: Vec<&str> = trace
            .split_whitespace()
            .filter(|call| !queueing.contains(call))
            .collect();
        assert!(
            others.is_empty(),
            "stream-ordered: {stream_ordered}: {others:?} in {trace}"
        );
        assert_eq!(calls(&trace, "cuLaunchKernel"), 5, "{trace}");
        assert_eq!(calls(&trace, "cuStreamWaitEvent"), 3, "{trace}");
        b.synchronize().unwrap();
        a.synchronize().unwrap();
        assert_eq!(y.to_vec().unwrap(), [6.0; N], "stream-ordered: {stream_ordered}");
        assert_eq!(x.to_vec().unwrap(), [5.0; N], "stream-ordered: {stream_ordered}");
        drop((x, y, done, done_b));
    }
    a.synchronize().unwrap();
    drop(pool);
    finish(&fake, parts);
}

/// Out of memory, the pool frees its cached blocks and waits for the streams it freed them on
/// (and the allocating stream) before it retries: never `cuCtxSynchronize`, which fails while
/// another thread captures a graph in the context.
#[test]
fn a_pool_out_of_memory_waits_for_its_own_frees_not_the_context() {
    let fake = fake::session();
    let parts = parts(&fake);
    let pool = cuda_core::MemoryPool::new(&parts.context);
    let (a, b, c) = (stream(&parts.context), stream(&parts.context), stream(&parts.context));
    // A block of one class cached for `a`; the allocations below are of another class.
    drop(pool.alloc(&a, 1024).unwrap());
    assert_eq!(pool.stats().cached_blocks, 1);
    // Where `cuMemAllocAsync` comes in an allocation that misses the cache: measured on `c`.
    fake.reset();
    let measured = pool.alloc(&c, 8192).unwrap();
    let trace = fake.trace();
    let position = trace
        .split_whitespace()
        .position(|call| call == "cuMemAllocAsync")
        .unwrap_or_else(|| panic!("no cuMemAllocAsync in {trace}"));
    // The same path on `b`, whose driver allocation runs out of memory once.
    fake.reset();
    fake.fail_nth(position as u64 + 1, fake::OUT_OF_MEMORY);
    let block = pool
        .alloc(&b, 8192)
        .expect("the retry after freeing the cache succeeds");
    let trace = fake.trace();
    assert_eq!(fake.injected(), 1, "{trace}");
    assert_eq!(calls(&trace, "cuMemAllocAsync"), 2, "{trace}");
    assert_eq!(calls(&trace, "cuMemFreeAsync"), 1, "the cached block is freed: {trace}");
    assert_eq!(calls(&trace, "cuCtxSynchronize"), 0, "no context-wide wait: {trace}");
    assert_eq!(
        calls(&trace, "cuStreamSynchronize"),
        2,
        "a wait for the stream the free was queued on and for the allocating one: {trace}"
    );
    assert_eq!(pool.stats().cached_blocks, 0);
    drop((block, measured));
    pool.free_all_blocks().unwrap();
    for s in [&a, &b, &c] {
        s.synchronize().unwrap();
    }
    drop((pool, a, b, c));
    finish(&fake, parts);
}

/// A routine that takes contract memory as a dense range, as library wrappers do: copies
/// `source`'s range over the start of `destination`'s (`cuMemcpyDtoDAsync`).
fn copy_range(
    stream: &Stream,
    source: &impl DeviceMemory,
    destination: &mut impl DeviceMemoryMut,
) -> cuda_driver::Result<()> {
    let _read = source.begin_use(stream, Access::Read)?;
    let _write = destination.begin_use(stream, Access::Write)?;
    if destination.byte_len() < source.byte_len() {
        return Err(cuda_driver::Error::InvalidValue("the destination is shorter".into()));
    }
    // SAFETY: both ranges are contract memory of the stream's context, alive for the borrows,
    // in use on the stream (begun above); the destination holds the source's length.
    unsafe { stream.copy_raw_async(destination.device_ptr(), source.device_ptr(), source.byte_len()) }
}

/// Strided, transposed, reversed and broadcast views are not dense ranges: the contract
/// refuses them with `NotDense` (and gives no range), so a routine that copies ranges leaves
/// both sides untouched; a compact slice (`x[2..10]`) is a range and is copied.
#[test]
fn views_that_are_not_dense_are_refused_by_the_contract() {
    let fake = fake::session();
    let context = Context::primary(&Device::get(0).unwrap()).unwrap();
    let stream = stream(&context);
    // A pool of the test's own, emptied at the end (the context's default pool keeps its blocks).
    let pool = cuda_core::MemoryPool::new(&context);
    let data: Vec<f32> = (0..16).map(|i| i as f32).collect();
    let mut x = cuda_core::DeviceArray::<f32>::empty_in(&pool, &stream, [16]).unwrap();
    x.copy_from_host(&data).unwrap();
    let matrix = x.reshape_view([4, 4]).unwrap();
    let one = x.slice(&[cuda_core::Slice::from(3..4)]).unwrap();
    let not_dense = [
        ("strided x[::2]", x.slice(&[cuda_core::Slice::ALL.step(2)]).unwrap()),
        ("transposed", matrix.transpose()),
        ("reversed x[::-1]", x.flip([0]).unwrap()),
        ("broadcast", one.broadcast_to([8]).unwrap()),
        (
            "padded rows x[:, :2]",
            matrix
                .slice(&[cuda_core::Slice::ALL, cuda_core::Slice::from(..2)])
                .unwrap(),
        ),
    ];
    let mut out = cuda_core::DeviceArray::<f32>::zeros_in(&pool, &stream, [16]).unwrap();
    for (what, view) in &not_dense {
        assert_eq!(DeviceMemory::byte_len(view), 0, "{what}: no dense range");
        match DeviceMemory::begin_use(view, &stream, Access::Read) {
            Err(cuda_driver::Error::NotDense { shape, strides }) => {
                assert_eq!(
                    (shape.as_slice(), strides.as_slice()),
                    (view.shape(), view.strides()),
                    "{what}"
                )
            }
            other => panic!("{what}: expected NotDense, got {other:?}"),
        }
        assert!(
            matches!(
                copy_range(&stream, view, &mut out),
                Err(cuda_driver::Error::NotDense { .. })
            ),
            "{what}"
        );
        // As the destination too (the broadcast view aside, views of `x` are writable).
        let mut target = view.slice(&[]).unwrap();
        let source = cuda_core::DeviceArray::<f32>::zeros_in(&pool, &stream, [view.len()]).unwrap();
        assert!(
            matches!(
                copy_range(&stream, &source, &mut target),
                Err(cuda_driver::Error::NotDense { .. })
            ),
            "{what} as the destination"
        );
    }
    assert_eq!(out.to_vec().unwrap(), vec![0.0; 16], "nothing was copied");
    assert_eq!(x.to_vec().unwrap(), data, "x is untouched");
    // A compact slice is a dense range: its elements, from its first.
    let compact = x.slice(&[cuda_core::Slice::from(2..10)]).unwrap();
    assert_eq!(DeviceMemory::byte_len(&compact), 8 * 4);
    copy_range(&stream, &compact, &mut out).unwrap();
    let copied = out.to_vec().unwrap();
    assert_eq!(copied[..8], data[2..10]);
    assert_eq!(copied[8..], [0.0; 8]);
    drop((not_dense, one, matrix, compact, out, x));
    pool.free_all_blocks().unwrap();
    stream.synchronize().unwrap();
    assert_eq!(fake.live(Kind::DeviceMemory), 0);
    let counts = fake.counts();
    assert!(counts.double_frees == 0 && counts.invalid_handles == 0, "{counts}");
}
