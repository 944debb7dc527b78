//! `docs/FROM_PYTHON.md`, compiled: every call in the Rust column of its tables is written out
//! below, in functions the compiler checks and nothing runs, and the test checks that each code
//! span of that column (with `...` standing for anything) is found in this file. A row naming a
//! call that does not exist, or with the wrong arguments or a missing `unsafe`, fails here.

// Compiled, never run: values are computed and dropped, and results are not all used.
#![allow(
    unused_must_use,
    unused_variables,
    clippy::no_effect,
    clippy::unnecessary_operation,
    clippy::let_unit_value
)]

use std::error::Error;
use std::ffi::c_void;
use std::ptr;

use cuda_core::{
    Arch, CompileTarget, DLPackFlags, DLPackTensor, DeviceArray, ElementwiseKernel, KernelCache, LinkTarget, Linker,
    LinkerOptions, MemoryPool, ObjectCode, Program, ProgramOptions, RawKernel, ReductionKernel, Slice, Std,
};
use cuda_driver::{
    Advice, CaptureMode, ConditionalKind, Context, ContextFlags, CudaArray, DeviceAttribute, DeviceBuffer, DeviceCopy,
    Global, Graph, GraphArgs, GraphInstantiateFlags, GraphNode, GreenContext, HostBuffer, Im2colTensorMap, IpcMemory,
    ManagedBuffer, MemoryLocation, MemsetValue, Module, Pitched, PitchedBuffer, Region, StreamFlags, SurfaceObject,
    TensorDataType, TensorSwizzle, TextureDesc, TextureObject, TiledTensorMap, VirtualBuffer,
};
use cuda_libs::system::{P2pCapability, Topology};

type Checked = Result<(), Box<dyn Error>>;

use cuda_core::algorithms::search::Side;
use cuda_core::algorithms::sort::{self, SortOrder};
use cuda_core::{BinRule, Interpolated, QuantileMethod, Unique};

/// Code spans of the Rust column that are not calls: values, file and variable names, types
/// and words, each listed once.
const NOT_CALLS: &[&str] = &[
    "libcuda",
    "cudaGraphSetConditional",
    "Send",
    "Sync",
    "*_workspace",
    "cufftMakePlanMany64",
    "cufftXtMakePlanMany",
    "CUFFT_INVALID_SIZE",
    "Error::Axis",
    "Error::NotSupported",
    "Error::Linalg { routine, index, failure: Singular / NotPositiveDefinite / NoConvergence / InvalidArgument }",
    "LoadError",
    "?",
    "cuda.h",
    "set_current",
    "(9, 0)",
    "sm_90",
    "cuda_driver::Device",
    "(free, total)",
    "&stream",
    "cuMemFreeAsync",
    "[f32]",
    "HostBuffer",
    "[a..b]",
    "T",
    "Ptx",
    "LtoIr",
    "CUDA_RS_CACHE_DIR",
    "CUDA_RS_CACHE=0",
    "cuLaunchKernelEx",
    "#[repr(C)]",
    "cuda_core",
    "Bool",
    "i64",
    "Result",
    "Error::InvalidValue",
    "Error::NotShareable",
    "Error::DeviceUnsupported",
    "*mut DLManagedTensor",
    "*mut DLManagedTensorVersioned",
    "__dlpack__",
    "__dlpack_device__",
    "__cuda_array_interface__",
    "(axes, keepdims)",
    "copy=True",
    // The `python` feature's calls, compiled by cuda-core's python doctests (`cargo xtask test`).
    "None",
    "out",
    "x.into_python_like(&torch_tensor)?",
    "x.into_python(py)?",
    "DeviceArray::<f32>::from_python(&obj)?",
];

fn raw_bindings() -> Checked {
    let cuda = cuda_sys::driver()?;
    let status = unsafe { cuda.cuInit()?(0) };
    let mut dev = 0;
    unsafe { cuda.cuDeviceGet()?(&mut dev, 0) };
    let mut ctx = ptr::null_mut();
    unsafe { cuda.cuCtxCreate_v4()?(&mut ctx, ptr::null_mut(), 0, dev) };
    let (mut ptr, size) = (0, 1024);
    unsafe { cuda.cuMemAlloc_v2()?(&mut ptr, size) };
    let (f, stream) = (ptr::null_mut(), ptr::null_mut());
    let (gx, gy, gz, bx, by, bz, shmem) = (1, 1, 1, 256, 1, 1, 0);
    let mut params: Vec<*mut c_void> = vec![ptr::addr_of_mut!(ptr).cast()];
    unsafe {
        cuda.cuLaunchKernel()?(
            f,
            gx,
            gy,
            gz,
            bx,
            by,
            bz,
            shmem,
            stream,
            params.as_mut_ptr(),
            ptr::null_mut(),
        )
    };
    let mut name = ptr::null();
    unsafe { cuda.cuGetErrorName()?(status, &mut name) };
    let mut program = ptr::null_mut();
    let nvrtc = cuda_sys::nvrtc()?;
    unsafe { nvrtc.nvrtcCreateProgram()?(&mut program, c"".as_ptr(), ptr::null(), 0, ptr::null(), ptr::null()) };
    let mut count = 0;
    unsafe { cuda_sys::runtime()?.cudaGetDeviceCount()?(&mut count) };
    cuda_runtime::device_count()?;
    let warp = cuda_sys::driver::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_WARP_SIZE;
    assert_eq!(warp, cuda_driver::DeviceAttribute::CU_DEVICE_ATTRIBUTE_WARP_SIZE);
    Ok(())
}

fn devices() -> Checked {
    cuda_core::Device::count()?;
    cuda_driver::Device::count()?;
    cuda_driver::driver_version()?;
    let dev = cuda_core::Device::new(0)?;
    dev.set_current()?;
    cuda_core::Device::current()?;
    dev.name()?;
    dev.uuid()?;
    dev.compute_capability()?;
    assert_eq!(dev.arch()?, Arch::Sm(90));
    dev.properties()?.multiprocessor_count;
    dev.attribute(DeviceAttribute::CU_DEVICE_ATTRIBUTE_WARP_SIZE)?;
    let device = cuda_driver::Device::get(0)?;
    (device.warp_size()?, device.l2_cache_size()?);
    cuda_driver::Device::get(0)?.total_memory()?;
    dev.context().memory_info()?;
    cuda_driver::Context::primary(&device)?;
    let ctx = cuda_driver::Context::new(&device, ContextFlags::SCHED_BLOCKING_SYNC)?;
    ctx.set_current()?;
    dev.sync()?;
    ctx.synchronize()?;
    Ok(())
}

fn streams_events_graphs(dev: cuda_core::Device, ctx: Context, priority: i32) -> Checked {
    let s = dev.create_stream()?;
    cuda_driver::Stream::with_options(&ctx, StreamFlags::NON_BLOCKING, priority)?;
    s.synchronize()?;
    s.query()?;
    let e = dev.create_event()?;
    e.record(&s)?;
    s.wait_event(&e)?;
    e.synchronize()?;
    let (e1, e2) = (&e, dev.create_event()?);
    e1.elapsed_ms(&e2)?;
    s.launch_host_func(move || println!("done"))?;
    let g = s.capture(CaptureMode::Global, |s| {
        s.wait_event(e1)?;
        s.wait_event(&e2)
    })?;
    let exec = g.instantiate()?;
    unsafe { exec.launch(&s)? }
    Ok(())
}

fn graph_builder(
    dev: cuda_core::Device,
    s: cuda_driver::Stream,
    (config, kernel): (cuda_driver::LaunchConfig, cuda_core::Kernel),
    (x, x_new): (DeviceArray<f32>, DeviceArray<f32>),
    (n, gb2): (u32, cuda_core::GraphBuilder<'static>),
) -> Checked {
    use cuda_core::graph::{CapturedStep, GraphBuilder};
    let mut gb = GraphBuilder::new(&s);
    dev.create_graph_builder()?;
    gb.begin_building(CaptureMode::ThreadLocal)?;
    unsafe { gb.launch(&config, &kernel, (&x, n))? }
    gb.stream();
    if let Err(cuda_core::Error::HostWaitInCapture { call }) = x.to_vec() {}
    let forks = gb.fork(2)?;
    gb.join(forks)?;
    let h = gb.create_condition(None)?;
    let mut body = gb.while_(&h)?;
    body.build(CaptureMode::ThreadLocal, |b| Ok(()))?;
    drop(body);
    gb.if_(&h)?;
    gb.if_else(&h)?;
    let count = 3;
    gb.switch(&h, count)?;
    if let Err(cuda_core::Error::Driver(cuda_driver::Error::WrongGraph { .. })) = gb.if_(&h) {}
    h.value();
    let _ = cuda_core::graph::CONDITION_PRELUDE;
    gb.end_building()?;
    gb.graph()?.to_dot(false)?;
    let g = gb.complete()?;
    gb.build(CaptureMode::ThreadLocal, |gb| Ok(()))?;
    g.upload(&s)?;
    unsafe { g.launch(&s)? }
    if let Err(cuda_core::Error::Driver(cuda_driver::Error::WrongContext { .. })) = unsafe { g.launch(&s) } {}
    let mut g = g;
    g.update(&gb2)?;
    let mut step = unsafe { CapturedStep::new(&s, &[&x], |xs| Ok(vec![xs[0].try_clone()?]))? };
    let out = step.run(&[&x_new])?;
    Ok(())
}

#[allow(clippy::too_many_arguments)]
fn graphs_as_data(
    ctx: Context,
    s: cuda_driver::Stream,
    f: cuda_driver::Function,
    config: cuda_driver::LaunchConfig,
    (dep, last, deps): (GraphNode, GraphNode, Vec<GraphNode>),
    (x, y, dst, src): (
        DeviceBuffer<f32>,
        DeviceBuffer<f32>,
        DeviceBuffer<f32>,
        DeviceBuffer<f32>,
    ),
    buf: DeviceBuffer<u32>,
    (e, child): (cuda_driver::Event, Graph<'static>),
    (n, v, bytes, pitch, rows, (col, row, slice)): (u32, u32, usize, usize, usize, (usize, usize, usize)),
    verbose: bool,
) -> Checked {
    let mut g = Graph::new(&ctx)?;
    let mut nodes = g.nodes();
    let k = unsafe {
        nodes.kernel(
            &[dep],
            &f,
            &config,
            GraphArgs::new().value(2.0f32).read(&x).write(&y).value(n),
        )?
    };
    nodes.memcpy(&deps, &dst, &src, bytes)?;
    nodes.memcpy_3d(
        &deps,
        Region::pitched(&buf, pitch, rows).at(col, row, slice),
        Region::linear(&src),
        (bytes, 1, 1),
    )?;
    nodes.memset(&deps, &buf, MemsetValue::U32(v))?;
    nodes.host_function(&deps, || println!("ran"))?;
    nodes.event_record(&deps, &e)?;
    nodes.event_wait(&deps, &e)?;
    nodes.child_graph(&deps, &child)?;
    nodes.empty(&deps)?;
    let (node, mem) = nodes.mem_alloc(&deps, bytes)?;
    let with_memory = GraphArgs::new().graph_memory(&mem);
    nodes.mem_free(&[last], mem)?;
    let h = nodes.condition_handle(None)?;
    nodes.conditional(&deps, &h, ConditionalKind::While, |i, body| {
        println!("body {i}");
        body.empty(&[]).map(|_| ())
    })?;
    let setter = GraphArgs::new().condition(&h);
    if let Err(cuda_driver::Error::NotInConditionalBody { node }) = nodes.host_function(&deps, || {}) {
        println!("{node}");
    }
    nodes.capture(&deps, &s, CaptureMode::ThreadLocal, |s| {
        s.query()?;
        s.synchronize()
    })?;
    let mut exec = g.instantiate_with(GraphInstantiateFlags::AUTO_FREE_ON_LAUNCH)?;
    let graph = g.try_clone()?;
    exec.update(&graph)?;
    if let Err(cuda_driver::Error::GraphUpdate(failure)) = exec.update(&graph) {
        println!("{}", failure.reason);
    }
    unsafe { exec.set_kernel_args(&k, GraphArgs::new().value(3.0f32).read(&x).write(&y).value(n))? }
    exec.set_node_enabled(&k, false)?;
    let clone = g.try_clone()?;
    clone.find_in_clone(&k)?;
    g.to_dot(verbose)?;
    let exec = g.instantiate_uploaded(GraphInstantiateFlags::empty(), &s)?;
    exec.upload(&s)?;
    Ok(())
}

fn system(i: u32) -> Checked {
    let sys = cuda_libs::system::System::new()?;
    sys.driver_version()?;
    let d = sys.device(i)?;
    d.name()?;
    d.uuid()?;
    d.memory()?;
    d.utilization()?;
    d.temperature()?;
    d.clocks()?;
    d.power_usage_mw()?;
    d.pci_bus_id()?;
    let e = sys.device(i + 1)?;
    let level: Topology = d.topology_with(&e)?;
    d.p2p_status(&e, P2pCapability::NvLink)?;
    d.nvlinks()?;
    d.processes()?;
    Ok(())
}

#[allow(clippy::too_many_arguments)]
fn memory<T: DeviceCopy + Default>(
    ctx: Context,
    s: cuda_driver::Stream,
    device: cuda_driver::Device,
    module: Module,
    library: cuda_driver::Library,
    function: cuda_driver::Function,
    kernel: cuda_core::Kernel,
    (len, a, b): (usize, usize, usize),
    (n, shared): (u32, u32),
) -> Checked {
    DeviceBuffer::<f32>::alloc(&ctx, len)?;
    DeviceBuffer::<f32>::zeroed(&ctx, len)?;
    DeviceBuffer::<f32>::alloc_async(&s, len)?;
    let pinned = HostBuffer::<f32>::new(&ctx, len)?;
    let (mut host, mut buf) = (vec![0.0f32; len], DeviceBuffer::<f32>::zeroed(&ctx, len)?);
    buf.copy_from_host(&host)?;
    let src = DeviceBuffer::from_slice(&ctx, &host)?;
    buf.copy_to_host(&mut host)?;
    buf.to_vec()?;
    buf.copy_from_host_async(&pinned, &s)?;
    let mut dst = DeviceBuffer::<f32>::zeroed(&ctx, len)?;
    dst.copy_from_device_async(&src, &s)?;
    buf.memset_zero()?;
    buf.memset_zero_async(&s)?;
    buf.try_slice(a..b)?;
    buf.try_slice_mut(a..b)?;
    buf.slice(a..b);
    let pool = cuda_driver::MemPool::device_default(&device)?;
    pool.set_release_threshold(0)?;
    pool.trim_to(0)?;
    {
        let device = cuda_runtime::Device::get(0)?;
        cuda_runtime::DeviceMemory::<f32>::zeroed(device, len)?;
    }
    let (width, height, w, h, to, from, extent) = (64, 64, 8, 8, (0, 0), (0, 0), (8, 8));
    let mut dst = PitchedBuffer::<f32>::alloc(&ctx, width, height)?;
    dst.view_mut()
        .copy_2d_from(to, &Pitched::device(&src, w, h)?, from, extent, &s)?;
    let mut cube = PitchedBuffer::<f32>::alloc_3d(&ctx, w, h, 2)?;
    cube.view_mut()
        .copy_3d_from((0, 0, 0), &dst.view(), (0, 0, 0), (w, h, 1), &s)?;
    dst.view_mut()
        .copy_2d_from(to, &Pitched::host(&host, w, h)?, from, extent, &s)?;
    let (location, advice) = (MemoryLocation::Device(device), Advice::SetReadMostly);
    let managed = ManagedBuffer::<f32>::new(&ctx, len)?;
    managed.prefetch(location, &s)?;
    managed.advise(advice)?;
    managed.host_slice()?;
    let (mut v, mut global) = (vec![T::default()], Global::<T>::from_module(&module, "name")?);
    Global::<T>::from_library(&library, &ctx, "name")?;
    global.copy_from_host(&v)?;
    global.copy_to_host(&mut v)?;
    let capacity = len;
    let mut virtual_buffer = VirtualBuffer::<f32>::reserve(&ctx, capacity)?;
    virtual_buffer.grow(len)?;
    let handle = buf.ipc_handle()?;
    IpcMemory::<f32>::open(&ctx, &handle, len)?;
    {
        use cuda_driver::{MemPool, MemPoolOptions, PoolAccess, PoolPointerExport};
        use std::os::fd::AsFd;
        let pool = MemPool::with_options(
            &device,
            &MemPoolOptions {
                ipc_enabled: true,
                ..Default::default()
            },
        )?;
        let buf = DeviceBuffer::<f32>::alloc_from_pool_async(&pool, &s, len)?;
        let fd = pool.export_fd()?;
        let bytes = buf.export_pool_pointer()?.to_bytes();
        let imported = MemPool::import_fd(&ctx, fd.as_fd())?;
        // SAFETY: the bytes are those export_pool_pointer made.
        unsafe { imported.import_pointer::<f32>(&PoolPointerExport::from_bytes(bytes))? };
        let peer = device;
        pool.set_access(&peer, PoolAccess::ReadWrite)?;
    }
    let event = cuda_driver::Event::new(&ctx, cuda_driver::EventFlags::INTERPROCESS)?;
    cuda_driver::Event::open_ipc(&ctx, &cuda_driver::Event::ipc_handle(&event)?)?;
    let flags = Default::default();
    let array = CudaArray::<f32>::new(&ctx, (w, h, 0), flags)?;
    TextureObject::new(&array, &TextureDesc::default())?;
    SurfaceObject::new(&array)?;
    let config = function.occupancy_config(n, shared)?;
    function.occupancy(&config)?;
    function.resident_config(n, shared)?;
    kernel.occupancy_config(n, shared)?;
    kernel.resident_config(n, shared)?;
    Ok(())
}

fn compiling(
    code: &str,
    ctx: Context,
    dev: cuda_core::Device,
    (name, text, dir, path): (String, String, std::path::PathBuf, &std::path::Path),
) -> Checked {
    Program::new(code, ProgramOptions::for_arch(Arch::Sm(90)));
    let mut options = ProgramOptions {
        std: Some(Std::Cpp17),
        debug: true,
        lineinfo: true,
        fast_math: true,
        ..Default::default()
    };
    options = ProgramOptions {
        defines: vec![("N".into(), Some("256".into()))],
        include_paths: vec![dir.clone()],
        headers: vec![(name, text)],
        cuda_headers: true,
        relocatable_device_code: true,
        extra_options: vec!["--extra-device-vectorization".into()],
        ..options
    };
    let _ = ProgramOptions {
        cache: false,
        ..Default::default()
    };
    let source = code;
    let program = Program::new(source, options.clone());
    let code = program
        .with_name_expressions(["saxpy<float>"])
        .compile(CompileTarget::Cubin)?;
    let program = Program::new(source, options);
    let _ = (CompileTarget::Ptx, CompileTarget::LtoIr);
    code.log();
    if let Err(error) = program.compile(CompileTarget::Ptx) {
        error.log();
    }
    code.lowered_name("saxpy<float>")?;
    code.lowered_names();
    code.code();
    code.ptx();
    let bytes = code.code().to_vec();
    let a = ObjectCode::from_cubin(bytes)?;
    let b = ObjectCode::from_ptx("")?;
    let _ = (
        ObjectCode::from_fatbin(Vec::new()),
        ObjectCode::from_ltoir(Vec::new()),
        ObjectCode::from_file(path)?,
    );
    code.save(path)?;
    Linker::new(LinkerOptions::for_arch(Arch::Sm(90)))
        .add(&a)
        .add(&b)
        .link(LinkTarget::Cubin)?;
    let (ptx, cubin) = ("", code.code().to_vec());
    let module = Module::from_ptx(&ctx, ptx)?;
    Module::from_image(&ctx, &cubin)?;
    let library = cuda_driver::Library::from_image(&cubin)?;
    library.function(&ctx, "name")?;
    module.function("saxpy")?;
    let kernel = code.get_kernel("saxpy<float>")?;
    code.get_kernel_on(&dev, "saxpy<float>")?;
    kernel.num_params()?;
    kernel.param_info()?;
    kernel.attributes()?.num_registers;
    (
        kernel.attributes()?.max_threads_per_block,
        kernel.attributes()?.shared_memory_bytes,
    );
    KernelCache::global().stats();
    let target = CompileTarget::Cubin;
    program.compile_in(&KernelCache::with_dir(dir)?, target)?;
    Ok(())
}

/// A struct passed to kernels by value.
#[repr(C)]
#[derive(Clone, Copy)]
struct Params {
    scale: f32,
}

// SAFETY: plain old data of one `f32`.
unsafe impl DeviceCopy for Params {}

fn launching(
    stream: cuda_driver::Stream,
    kernel: cuda_core::Kernel,
    function: cuda_driver::Function,
    (g, b, s, n, a): (u32, u32, u32, u32, f32),
) -> Checked {
    use cuda_core::{LaunchAttributes, LaunchConfig};
    let (grid, block) = ((g, 1, 1), (b, 1, 1));
    let config = LaunchConfig {
        grid: (g, 1, 1),
        block: (b, 1, 1),
        shared_mem_bytes: s,
    };
    let attributes = LaunchAttributes {
        cluster_dim: Some((2, 1, 1)),
        cooperative: true,
        ..LaunchAttributes::default()
    };
    LaunchConfig::new(grid, block);
    LaunchConfig::new(grid, block).with_shared_mem(s);
    LaunchConfig::for_num_elems(n);
    let x = DeviceBuffer::<f32>::zeroed(stream.context(), n as usize)?;
    let mut y = DeviceBuffer::<f32>::zeroed(stream.context(), n as usize)?;
    // SAFETY: never run; only compiled.
    unsafe { cuda_core::launch(&stream, &config, &kernel, (a, &x, &mut y, n))? }
    unsafe { cuda_core::launch_ex(&stream, &config, &attributes, &kernel, (a, &x, &mut y, n))? }
    unsafe { stream.launch(&function, &cuda_driver::LaunchConfig::for_num_elems(n), (&x, n))? }
    let (shmem, mut params) = (0, vec![ptr::null_mut()]);
    unsafe { cuda_driver::launch_raw(&function, grid, block, shmem, &stream, &mut params)? }
    unsafe {
        stream.launch(
            &function,
            &cuda_driver::LaunchConfig::for_num_elems(1),
            (Params { scale: a },),
        )?
    }
    Ok(())
}

fn pool_and_arrays(dev: cuda_core::Device, ctx: Context, stream: cuda_driver::Stream, n: usize) -> Checked {
    use cuda_core::ExprOps;
    let pool = dev.memory_pool();
    MemoryPool::for_context(dev.context());
    let stats = pool.stats();
    (
        pool.used_bytes(),
        pool.total_bytes(),
        pool.free_bytes(),
        pool.n_free_blocks(),
    );
    (stats.held_bytes, stats.hits, stats.misses);
    pool.free_all_blocks()?;
    let (pool, bytes, shape) = (MemoryPool::new(&ctx), 1024, [2, 3]);
    pool.alloc(&stream, bytes)?;
    let _: DeviceArray<f32> = DeviceArray::empty_in(&pool, &stream, shape)?;
    DeviceArray::<f32>::empty(&stream, [2, 3])?;
    DeviceArray::<f64>::zeros(&stream, n)?;
    DeviceArray::<f64>::ones(&stream, n)?;
    DeviceArray::<f64>::full(&stream, n, 7.0)?;
    DeviceArray::<i32>::arange(&stream, 0, 10, 1)?;
    DeviceArray::<f64>::linspace(&stream, 0.0, 1.0, 5, true)?;
    let vec = vec![0.0f32; 6];
    let mut x = DeviceArray::from_host(&stream, [2, 3], &vec)?;
    DeviceArray::empty_like(&x)?;
    DeviceArray::zeros_like(&x)?;
    DeviceArray::ones_like(&x)?;
    DeviceArray::full_like(&x, 7.0)?;
    DeviceArray::<f32>::eye(&stream, 2, 3, 1)?;
    DeviceArray::<f32>::identity(&stream, 3)?;
    DeviceArray::<f32>::tri(&stream, 3, 2, -1)?;
    (x.tril(0)?, x.triu(1)?);
    {
        let y = x.try_clone()?;
        DeviceArray::concatenate(&[&x, &y], 0)?;
        DeviceArray::stack(&[&x, &y], 1)?;
        DeviceArray::hstack(&[&x, &y])?;
        DeviceArray::vstack(&[&x, &y])?;
    }
    (
        x.flip(0)?,
        x.flip(None)?,
        x.flip(cuda_core::Axes::EMPTY)?,
        x.flipud()?,
        x.fliplr()?,
    );
    let mut buf = vec![0.0f32; 6];
    x.to_vec()?;
    x.copy_to_host(&mut buf)?;
    x.copy_from_host(&vec)?;
    (x.shape(), x.ndim(), x.len(), x.size_bytes(), x.dtype(), x.strides());
    x.try_clone()?;
    x.to_contiguous()?;
    let mut y = DeviceArray::<f32>::zeros(&stream, [2, 3])?;
    y.copy_from(&x)?;
    x.fill(3.0)?;
    let z = (2.0 * &x + &y).eval()?;
    let mut z = z;
    z.assign(2.0 * &x + &y)?;
    x.update(|x| x + &y)?;
    x.update(|x| x * 2.0)?;
    x.sqrt().exp().abs().eval()?;
    z.assign(x.maximum(&y))?;
    x.pow(&y).eval()?;
    x.powi(2).eval()?;
    x.lt(&y);
    cuda_core::where_(x.gt(&y), &x, &y).eval()?;
    (
        x.gt(0.5),
        x.maximum(0.0),
        cuda_core::where_(x.lt(0.0), &x, 0.0),
        x.pow(2),
    );
    let a: f32 = 2.0;
    (&x * a).eval()?;
    (2.0 * &x).eval()?;
    let z = (&x + &y).eval_on(&stream)?;
    (x.isnan(), x.isinf(), x.isfinite(), x.signbit());
    (
        x.floor(),
        x.ceil(),
        x.trunc(),
        x.rint(),
        x.sign(),
        x.square(),
        x.reciprocal(),
    );
    (x.cbrt(), x.exp2(), x.expm1(), x.log2(), x.log10(), x.log1p());
    (
        x.sinh(),
        x.cosh(),
        x.tan(),
        x.arcsin(),
        x.arccos(),
        x.arctan(),
        x.arcsinh(),
        x.arccosh(),
        x.arctanh(),
    );
    x.clip(0.0, 1.0);
    (y.arctan2(&x), x.hypot(&y), x.copysign(&y));
    (x.floor_divide(&y), x.remainder(&y), x.fmod(&y));
    x.isclose(&y, 1e-5, 1e-8, false);
    cuda_core::allclose(&x, &y, 1e-5, 1e-8, false)?;
    cuda_core::array_equal(&x, &y, false)?;
    {
        let (a, b) = (x.gt(0.0).eval()?, y.gt(0.0).eval()?);
        (a.logical_and(&b), a.logical_or(&b), a.logical_xor(&b), a.logical_not());
        let (a, b) = (
            DeviceArray::<i32>::zeros(&stream, 3)?,
            DeviceArray::<i32>::zeros(&stream, 3)?,
        );
        (
            a.bitwise_and(&b),
            a.bitwise_or(&b),
            a.bitwise_xor(&b),
            a.invert(),
            a.left_shift(2),
            a.right_shift(2),
        );
    }
    ((&x * &y).sum()?, (&x - &y).abs().max_axes([1], false)?);
    (x.var(1)?, x.std_axes([0], true, 0)?);
    (x.nansum()?, x.nanmean()?, x.nanmax()?, x.nanmin()?);
    x.nansum_axes([0], false)?;
    (
        x.count_nonzero()?,
        x.count_nonzero_axes([1], false)?,
        x.ptp_axes([1], false)?,
    );
    (x.cumsum(None)?, x.cumprod(-1)?, x.nancumsum(0)?, x.diff(2, -1)?);
    (x.cumulative_sum(1, true)?, x.cumulative_prod(1, true)?);
    let (b, e) = (x.try_clone()?, x.try_clone()?);
    (x.ediff1d(None, None)?, x.ediff1d(Some(&b), Some(&e))?);
    (x.nonzero()?, x.flatnonzero()?, x.argwhere()?);
    {
        let mask = x.gt(0.5).eval()?;
        (x.extract(&mask)?, x.extract(x.gt(0.5))?);
        let c = DeviceArray::<cuda_core::Bool>::zeros(&stream, 2)?;
        x.compress(&c, 0)?;
        let (mut x, vals) = (x.try_clone()?, DeviceArray::<f32>::ones(&stream, 2)?);
        (x.place(&mask, &vals)?, x.putmask(&mask, &vals)?);
    }
    (x.nanargmax()?, x.nanargmin_axis(1, false)?);
    {
        let (w, w1d) = (x.try_clone()?, DeviceArray::<f32>::ones(&stream, 3)?);
        x.average(&w, None, false)?.average;
        use cuda_core::Average;
        let Average { average, weight_sum } = x.average(&w1d, 1, false)?;
        x.save_npy("x.npy")?;
        DeviceArray::<f32>::load_npy(&stream, "x.npy")?;
        x.write_npy(Vec::new())?;
        DeviceArray::<f32>::read_npy(&stream, [0u8; 0].as_slice())?;
    }
    (x.round(2), x.round(-1));
    (x.nan_to_num(0.0, None, None), x.nan_to_num(0.0, Some(1e6), Some(-1e6)));
    drop(z);
    x.astype::<f32>().eval()?;
    x.slice(&[Slice::from(1..), Slice::from(..).step(2)])?;
    x.slice(&[Slice::ALL.step(-1)])?;
    (Slice::ALL.step(-2), Slice::from(1..4).step(-1));
    let x = DeviceArray::<f32>::zeros(&stream, [2, 3, 4])?;
    x.transpose();
    x.permute([1, 0, 2])?;
    x.reshape([3, 4])?;
    x.broadcast_to([4, 3])?;
    x.squeeze();
    x.expand_dims(0)?;
    let (x, y) = (
        DeviceArray::<f32>::zeros(&stream, 3)?,
        DeviceArray::<f32>::zeros(&stream, 3)?,
    );
    let mut z = DeviceArray::<f32>::zeros(&stream, 3)?;
    let kernel = ElementwiseKernel::new("T x, T y", "T z", "z = (x - y) * (x - y)", "squared_diff")?;
    // SAFETY: the operation reads and writes only the elements it is given.
    unsafe { kernel.launch(&stream, &[Arg::from(&x), Arg::from(&y), Arg::from(&mut z)])? };
    // SAFETY: as above.
    unsafe { kernel.launch(&stream, &[Arg::from(&x), Arg::scalar(5.0f32), Arg::from(&mut z)])? };
    let mut y = DeviceArray::<f32>::zeros(&stream, [0usize; 0])?;
    let l2 = ReductionKernel::new("T x", "T y", "x * x", "a + b", "y = sqrt(a)", "0", "l2norm", None)?;
    // SAFETY: the map, reduction and post-map read only their operands and write only `y`.
    unsafe { l2.launch(&stream, &[Arg::from(&x), Arg::from(&mut y)])? };
    x.sum()?;
    let (a, b) = (
        DeviceArray::<f32>::zeros(&stream, [2, 3])?,
        DeviceArray::<f32>::zeros(&stream, [3, 2])?,
    );
    a.matmul(&b)?;
    let (m, n, k) = (2, 2, 3);
    let mut c = DeviceArray::<f32>::zeros(&stream, [m, n])?;
    use cuda_libs::blas::Gemm;
    cuda_libs::blas::Blas::new(&stream)?.gemm(&Gemm::new(m, n, k), &a, &b, &mut c)?;
    use cuda_core::Norm;
    use cuda_libs::blas::{Batch, Gemv};
    let mut blas = cuda_libs::blas::Blas::new(&stream)?;
    {
        let (count, gemm) = (2, Gemm::new(m, n, k));
        let (a, b, mut c) = (
            DeviceArray::<f32>::zeros(&stream, [count, m, k])?,
            DeviceArray::<f32>::zeros(&stream, [count, k, n])?,
            DeviceArray::<f32>::zeros(&stream, [count, m, n])?,
        );
        blas.gemm_strided_batched(&Gemm::new(m, n, k), &Batch::packed(&gemm, count)?, &a, &b, &mut c)?;
        a.matmul(&b)?;
    }
    {
        let (a, b) = (
            DeviceArray::<f32>::zeros(&stream, [k])?,
            DeviceArray::<f32>::zeros(&stream, [k])?,
        );
        (a.dot(&b)?, a.vdot(&b)?, a.inner(&b)?, a.outer(&b)?);
        let (x, m) = (DeviceArray::<f32>::zeros(&stream, [3, 3])?, &a);
        (x.trace()?, x.linalg_norm(Norm::Fro)?);
        let x = m;
        (
            x.linalg_norm(Norm::Default)?,
            x.linalg_norm(Norm::Ord(1.0))?,
            x.linalg_norm(Norm::Inf)?,
        );
        let m = DeviceArray::<f32>::zeros(&stream, [3, 3])?;
        m.linalg_norm(Norm::Fro)?;
        (
            m.linalg_norm(Norm::Ord(2.0))?,
            m.linalg_norm(Norm::Ord(-2.0))?,
            m.linalg_norm(Norm::Nuc)?,
        );
        {
            let (a, b) = (
                DeviceArray::<f64>::zeros(&stream, [4, 3, 3])?,
                DeviceArray::<f64>::zeros(&stream, [3])?,
            );
            (a.solve(&b)?, a.inv()?, a.det()?);
            let (sign, logabsdet) = a.slogdet()?;
            (a.cholesky(false)?, a.cholesky(true)?);
            let (w, v) = a.eigh(false)?;
            (
                a.eigh(true)?,
                a.eigvalsh(false)?,
                a.svdvals()?,
                a.cond()?,
                a.matrix_rank()?,
            );
            (a.matrix_power(5)?, a.inv()?.matrix_power(2)?);
            let (u, s, vh) = a.svd(true)?;
            a.pinv(1e-15)?;
            let (q, r) = a.qr(false)?;
            (a.qr(true)?, a.qr_r()?);
            let (a, b) = (
                DeviceArray::<f64>::zeros(&stream, [5, 3])?,
                DeviceArray::<f64>::zeros(&stream, [5])?,
            );
            let fit = a.lstsq(&b, None)?;
            (fit.x, fit.residuals, fit.rank, fit.singular_values);
            a.svd(false)?;
            let (x, b, c, y) = (
                DeviceArray::<f64>::zeros(&stream, [3])?,
                DeviceArray::<f64>::zeros(&stream, [3, 3])?,
                DeviceArray::<f64>::zeros(&stream, [3, 3])?,
                DeviceArray::<f64>::zeros(&stream, [3])?,
            );
            cuda_core::multi_dot(&[&x, &b, &c, &y])?;
            if let Err(cuda_core::Error::Library(cuda_libs::Error::Linalg {
                routine,
                index,
                failure: cuda_libs::LinalgFailure::Singular { pivot },
            })) = a.inv()
            {}
        }
        (
            x.linalg_norm(Norm::Ord(3.0))?,
            m.linalg_norm(Norm::Ord(1.0))?,
            m.linalg_norm(Norm::Inf)?,
        );
    }
    {
        use cuda_core::ExprOps;
        let (x, w, b) = (
            DeviceArray::<f32>::zeros(&stream, [4, 3])?,
            DeviceArray::<f32>::zeros(&stream, [3, 2])?,
            DeviceArray::<f32>::zeros(&stream, [2])?,
        );
        (x.matmul_expr(&w)? + &b).maximum(0.0).eval()?;
        let (a, b) = (
            DeviceArray::<f32>::zeros(&stream, [3, 4, 5])?,
            DeviceArray::<f32>::zeros(&stream, [4, 5, 2])?,
        );
        a.tensordot(&b, 2)?;
        let b = DeviceArray::<f32>::zeros(&stream, [4, 3, 2])?;
        a.tensordot(&b, ([1, 0], [0, 1]))?;
        // Or CUDA_RS_TF32=1 in the environment.
        cuda_core::set_tf32(true);
    }
    let (mut x, mut y, mut result) = (
        DeviceArray::<f32>::zeros(&stream, [n])?,
        DeviceArray::<f32>::zeros(&stream, [n])?,
        DeviceArray::<f32>::zeros(&stream, [0usize; 0])?,
    );
    blas.dot(n, &x, 1, &y, 1, &mut result)?;
    blas.dot_host(n, &x, 1, &y, 1)?;
    blas.nrm2(n, &x, 1, &mut result)?;
    blas.nrm2_host(n, &x, 1)?;
    let alpha = 2.0;
    blas.axpy(n, alpha, &x, 1, &mut y, 1)?;
    blas.scal(n, alpha, &mut x, 1)?;
    let a = DeviceArray::<f32>::zeros(&stream, [m, n])?;
    blas.gemv(&Gemv::new(m, n), &a, &x, &mut y)?;
    let x = DeviceArray::<f32>::zeros(&stream, [2, 3])?;
    (x.sum_axes(0, true)?, x.sum_axes([0, -1], false)?);
    (x.prod()?, x.mean()?, x.max()?, x.min()?, x.all()?, x.any()?);
    (x.prod_axes([0], true)?, x.mean_axes([0], true)?);
    x.argmax_axis(-1, false)?;
    x.argmax()?;
    x.sum()?.item()?;
    let seed = 1;
    cuda_core::random::rand::<f32>(&stream, [3, 4], seed)?;
    use cuda_core::random;
    random::randn::<f32>(&stream, 3, seed)?;
    random::uniform::<f32>(&stream, 3, 0.0, 1.0, seed)?;
    random::randint::<i32>(&stream, 3, 0, 10, seed)?;
    let mut generator = random::Generator::new(seed);
    random::Generator::normal::<f32>(&mut generator, &stream, 3, 0.0, 1.0)?;
    println!("{x}");
    let code = "extern \"C\" __global__ void my_add(const float *x1, const float *x2, float *y) {}";
    let my_add = RawKernel::new(code, "my_add", ProgramOptions::default())?;
    let (x1, x2) = (x.try_clone()?, x.try_clone()?);
    let mut y = DeviceArray::<f32>::zeros(&stream, [2, 3])?;
    // SAFETY: never run; only compiled.
    unsafe { my_add.launch(&stream, &LaunchConfig::new((5, 1, 1), (5, 1, 1)), (&x1, &x2, &mut y))? }
    let options = ProgramOptions::default();
    let compiled = Program::new(code, options)
        .with_name_expressions(["my_add"])
        .compile(CompileTarget::Cubin)?;
    compiled.get_kernel("my_add")?;
    let consumer_stream = dev.create_stream()?;
    let tensor = x.into_dlpack(Some(&consumer_stream))?;
    unsafe { DeviceArray::<f32>::from_dlpack(tensor, &stream)? };
    let x = DeviceArray::<f32>::zeros(&stream, 3)?;
    let versioned = x.into_dlpack_versioned(Some(&consumer_stream), DLPackFlags::NONE)?;
    let _ = (DLPackFlags::READ_ONLY, DLPackFlags::IS_COPIED);
    let ptr = ptr::null_mut();
    let tensor = unsafe { DLPackTensor::from_raw(ptr)? };
    let ptr = versioned;
    unsafe { DLPackTensor::from_raw_versioned(ptr)? };
    let producer_stream = None;
    let _: DeviceArray<f32> = DeviceArray::from_dlpack_tensor(tensor, &stream, producer_stream)?;
    let _refused = |error: &cuda_core::DLPackError| {
        matches!(
            error,
            cuda_core::DLPackError::NotDeviceMemory { .. } | cuda_core::DLPackError::OutOfAllocation { .. }
        )
    };
    Ok(())
}

use cuda_core::{Arg, LaunchConfig};

fn manipulation_and_indexing(stream: cuda_driver::Stream) -> Checked {
    use cuda_core::{IndexMode, MeshIndexing, PadMode, SplitAt};
    let x = DeviceArray::<f32>::zeros(&stream, [3, 4])?;
    let (y, v, m) = (x.try_clone()?, x.ravel()?, x.try_clone()?);
    DeviceArray::dstack(&[&x, &y])?;
    (x.append(&y, None)?, x.append(&y, 0)?);
    x.split(SplitAt::Sections(3), 1)?;
    x.split(SplitAt::Indices(&[2, 5]), 0)?;
    x.array_split(SplitAt::Sections(3), 0)?;
    (x.tile(&[2, 3])?, x.repeat(3, 1)?, x.repeat_each(&[1, 0, 2], None)?);
    (x.roll(2, None)?, x.roll(-1, 0)?);
    x.pad(&[(1, 2), (0, 3)], PadMode::Constant(0.0))?;
    x.pad(&[(2, 2)], PadMode::Edge)?;
    (x.moveaxis(0, -1)?, x.swapaxes(0, 1)?);
    (x.ravel()?, x.flatten()?);
    (x.atleast_1d(), x.atleast_2d(), x.atleast_3d());
    DeviceArray::broadcast_arrays(&[&x, &y])?;
    DeviceArray::meshgrid(&[&x, &y], MeshIndexing::Xy)?;
    DeviceArray::meshgrid(&[&x, &y], MeshIndexing::Ij)?;
    (x.at(2)?, x.index_axis(1, -1)?);
    let i: DeviceArray<i64> = DeviceArray::from_slice(&stream, &[0, 2])?;
    x.take(&i, 1, IndexMode::Raise)?;
    x.take(&i, None, IndexMode::Raise)?;
    (IndexMode::Wrap, IndexMode::Clip);
    let mut y = DeviceArray::<f32>::empty(&stream, [2])?;
    x.take_into(&i, None, IndexMode::Raise, &mut y)?;
    x.take_along_axis(&i, 1, IndexMode::Raise)?;
    let mut x = x;
    x.put(&i, &v, IndexMode::Raise)?;
    if let Err(cuda_core::Error::IndexOutOfBounds { .. }) = x.at(9) {}
    (x.diagonal(1, 0, 1)?, v.diag(0)?, m.diag(-1)?);
    x.reshape(x.infer_shape(&[-1, 4])?)?;
    x.reshape_view([3, 4])?;
    Ok(())
}

fn several_gpus(
    ctx: Context,
    contexts: Vec<Context>,
    stream: cuda_driver::Stream,
    (x, mut y, mut t, mut out): (
        DeviceBuffer<f32>,
        DeviceBuffer<f32>,
        DeviceBuffer<f32>,
        DeviceBuffer<f32>,
    ),
    (n, rank, nranks, peer, color, key): (usize, usize, usize, usize, u32, i32),
) -> Checked {
    use cuda_libs::nccl::{self, Communicator, ReduceOp, UniqueId};
    let id = UniqueId::new()?;
    let bytes = id.to_bytes();
    UniqueId::from_bytes(&bytes)?;
    let comm = Communicator::init_rank(&id, rank, nranks, &ctx)?;
    let comms = Communicator::init_all(&contexts)?;
    (comm.rank(), comm.count(), n * comm.count());
    comm.split(Some(color), key)?;
    comm.all_reduce::<f32>(&x, &mut y, n, ReduceOp::Sum, &stream)?;
    comm.all_reduce_in_place::<f32>(&mut t, n, ReduceOp::Avg, &stream)?;
    comm.reduce::<f32>(&x, &mut y, n, ReduceOp::Max, 0, &stream)?;
    comm.broadcast_in_place::<f32>(&mut t, n, 0, &stream)?;
    comm.all_gather::<f32>(&x, &mut out, n, &stream)?;
    comm.reduce_scatter::<f32>(&t, &mut out, n, ReduceOp::Sum, &stream)?;
    comm.send::<f32>(&x, n, peer, &stream)?;
    comm.recv::<f32>(&mut y, n, peer, &stream)?;
    nccl::group(|g| {
        g.all_reduce_in_place::<f32>(&comms[0], &mut t, n, ReduceOp::Sum, &stream)?;
        Ok(())
    })?;
    Ok(())
}

/// The buffers [`fft_and_solver`] works on: two f32 signals, a workspace, an f64 matrix batch,
/// its workspace and its results.
type FftSolverBuffers = (
    DeviceBuffer<f32>,
    DeviceBuffer<f32>,
    DeviceBuffer<u8>,
    DeviceBuffer<f64>,
    DeviceBuffer<u8>,
    DeviceBuffer<f64>,
);

fn fft_and_solver(
    ctx: Context,
    stream: cuda_driver::Stream,
    (mut x, mut y, mut workspace, mut a, mut ws, mut w): FftSolverBuffers,
    mut pivots: DeviceBuffer<i32>,
    (shape, inembed): (Vec<usize>, Vec<usize>),
    (istride, idist, b, n, count, capacity): (usize, usize, usize, usize, usize, usize),
) -> Checked {
    use cuda_libs::fft::{Direction, Kind, Layout, Plan, PlanCache, PlanDesc, Precision};
    use cuda_libs::solver::{Fill, Matrix, Solver};
    let mut plan = Plan::new(
        &ctx,
        &PlanDesc::new(Kind::C2C, Precision::F32, &shape)?
            .batch(b)
            .input_layout(Layout::strided(&inembed, istride, idist)?),
    )?;
    plan.workspace_size();
    plan.execute(&stream, Direction::Forward, &x, &mut y, Some(&mut workspace))?;
    {
        let (direction, workspace) = (Direction::Inverse, None);
        plan.execute_in_place(&stream, direction, &mut x, workspace)?;
    }
    {
        let mut plan = Plan::new(&ctx, &PlanDesc::new(Kind::C2R, Precision::F32, &shape)?)?;
        let workspace = None;
        plan.execute_c2r(&stream, &mut x, &mut y, workspace)?;
    }
    let mut cache = PlanCache::new(capacity)?;
    let desc = PlanDesc::new(Kind::R2C, Precision::F32, &shape)?;
    cache.plan(&stream, &desc)?;
    if let Err(cuda_libs::Error::Status {
        library: "cuFFT", name, ..
    }) = Plan::new(&ctx, &desc)
    {
        name == "CUFFT_INVALID_SIZE";
    }
    {
        use cuda_libs::fft::{supports_load_callbacks, LoadCallback};
        let (symbol, lto, info_words, direction) = ("load", vec![0u8; 4], 1, Direction::Forward);
        let mut plan = Plan::with_load_callback(
            &ctx,
            &desc,
            &LoadCallback {
                symbol,
                lto_ir: &lto,
                info_words,
            },
        )?;
        let (info, reads, workspace) = ([0u64], [&x as &dyn cuda_driver::DeviceMemory], None);
        // SAFETY: compiled, never run.
        unsafe { plan.execute_loaded(&stream, direction, &info, &reads, &mut y, workspace)? };
        supports_load_callbacks()?;
        let (key, make) = ([1u32], || {
            Ok(LoadCallback {
                symbol,
                lto_ir: &lto,
                info_words,
            })
        });
        cache.plan_with_load_callback(&stream, &desc, &key, make)?;
        use cuda_libs::fft::StoreCallback;
        // SAFETY: compiled, never run.
        let mut plan = unsafe {
            Plan::with_store_callback(
                &ctx,
                &desc,
                &StoreCallback {
                    symbol,
                    lto_ir: &lto,
                    info_words,
                },
            )?
        };
        plan.set_store_info(&info)?;
        plan.execute(&stream, direction, &x, &mut y, None)?;
        let make = || {
            Ok(StoreCallback {
                symbol,
                lto_ir: &lto,
                info_words,
            })
        };
        // SAFETY: compiled, never run.
        unsafe { cache.plan_with_store_callback(&stream, &desc, &key, make)? };
    }
    let mut solver = Solver::new(&stream)?;
    solver.potrf::<f64>(Fill::Lower, Matrix::square(n), &mut a, Some(&mut ws))?;
    solver.potrf_workspace::<f64>(Fill::Lower, Matrix::square(n))?;
    solver.syevj_batched::<f64>(true, Fill::Lower, Matrix::square(n), count, &mut a, &mut w, None)?;
    solver.syev_batched::<f64>(true, Fill::Lower, Matrix::square(n), count, &mut a, &mut w, None)?;
    solver.gesvdj_batched::<f64>(Matrix::square(n), count, &mut a, &mut w, None, None, None)?;
    let values_only = cuda_libs::solver::SvdVectors::None;
    solver.gesvdj::<f64>(values_only, Matrix::square(n), &mut a, &mut w, None, None, None)?;
    solver.potrf_batched::<f64>(Fill::Lower, Matrix::square(n), count, &mut a)?;
    solver.getrf_batched::<f64>(Matrix::square(n), count, &mut a, &mut pivots)?;
    solver.getrs_batched::<f64>(false, Matrix::square(n), count, &a, &pivots, Matrix::new(n, 1), &mut w)?;
    solver.getri_batched::<f64>(Matrix::square(n), count, &a, &pivots, Matrix::square(n), &mut w)?;
    solver.check_info()?;
    Ok(())
}

fn sorting_and_searching(stream: cuda_driver::Stream, n: usize) -> Checked {
    let x = DeviceArray::<f32>::from_slice(&stream, &[3.0, 1.0, 2.0])?;
    (x.sort(-1)?, x.sort(0)?, x.sort(None)?, x.sort_descending(-1)?);
    (x.argsort(-1)?, x.argsort(0)?);
    let (a, v) = (x.sort(-1)?, x.try_clone()?);
    let s: DeviceArray<i64> = x.argsort(-1)?;
    a.searchsorted(&v, Side::Left, None)?;
    a.searchsorted(&v, Side::Right, Some(&s))?;
    "left".parse::<Side>()?;
    x.unique()?;
    x.median(None)?;
    x.median(0)?;
    x.nanmedian(0)?;
    x.nanpercentile(90.0, -1, QuantileMethod::Linear)?;
    x.nanquantile(0.25, 1, QuantileMethod::Lower)?;
    x.partition(3, -1)?;
    let mut x = x.try_clone()?;
    (x.sort_in_place(-1)?, x.sort_in_place(0)?);
    (x.topk(5, 1, true)?, x.topk(3, 0, false)?);
    x.argpartition(-1, 0)?;
    let test = x.try_clone()?;
    x.isin(&test)?;
    let b = v.try_clone()?;
    a.union1d(&b)?;
    DeviceArray::lexsort(&[&b, &a])?;
    x.histogram(10, None)?;
    let bins = x.sort(-1)?;
    x.digitize(&bins, false)?;
    x.digitize(&bins, true)?;
    let (xp, fp) = (bins.reshape([bins.len()])?, x.reshape([x.len()])?);
    let _: DeviceArray<Interpolated<f32>> = x.interp(&xp, &fp, None, None)?;
    x.interp(&xp, &fp, Some(0.0), Some(1.0))?;
    x.interp_periodic(&xp, &fp, 360.0)?;
    let i = DeviceArray::<i64>::from_slice(&stream, &[0, 1, 1])?;
    (i.bincount(0)?, i.bincount(10)?);
    x.histogram(10, Some((0.0, 1.0)))?;
    let (w, edges) = (x.try_clone()?, x.sort(-1)?);
    x.histogram_weighted(10, None, &w)?;
    x.histogram_weighted_with_edges(&edges, &w)?;
    x.histogram(x.histogram_bin_count(BinRule::Auto, None)?, None)?;
    x.histogram_bin_edges(10, None)?;
    x.histogram_bin_edges(
        x.histogram_bin_count(BinRule::Auto, Some((0.0, 1.0)))?,
        Some((0.0, 1.0)),
    )?;
    "fd".parse::<BinRule>()?;
    let mut counts = DeviceArray::<i64>::empty(&stream, 10)?;
    cuda_core::algorithms::histogram::histogram_even::<f32, f32>(&stream, (&x, 3), (0.0, 1.0), &mut counts, 10)?;
    x.percentile(90.0, -1, QuantileMethod::Linear)?;
    x.quantile(0.25, 1, QuantileMethod::Lower)?;
    x.quantile(0.25, 1, "hazen".parse()?)?;
    x.percentiles(&[25.0, 50.0, 75.0], 0, QuantileMethod::Linear)?;
    let Unique {
        values,
        indices,
        inverse,
        counts,
    } = x.unique_all()?;
    let (keys, values) = (x.try_clone()?, DeviceArray::<u32>::from_slice(&stream, &[0, 1, 2])?);
    let (mut keys_out, mut values_out) = (
        DeviceArray::<f32>::empty(&stream, 3)?,
        DeviceArray::<u32>::empty(&stream, 3)?,
    );
    sort::sort_pairs::<f32, u32>(
        &stream,
        (&keys, &values),
        (&mut keys_out, &mut values_out),
        n,
        SortOrder::Ascending,
    )?;
    let mut index = DeviceArray::<i64>::empty(&stream, 3)?;
    sort::sort_keys::<f32>(&stream, &keys, &mut keys_out, n, SortOrder::Descending)?;
    sort::argsort::<f32>(&stream, &keys, &mut index, n, SortOrder::Ascending)?;
    sort::sort_rows::<f32>(&stream, &keys, &mut keys_out, (n, 1), SortOrder::Ascending)?;
    sort::argsort_rows::<f32>(&stream, &keys, &mut index, (n, 1), SortOrder::Ascending)?;
    cuda_core::algorithms::search::search_sorted::<f32>(&stream, (&a, 3), (&v, 3), &mut index, Side::Left)?;
    Ok(())
}

fn counting_sets_and_device_algorithms(stream: cuda_driver::Stream, n: usize, m: usize) -> Checked {
    let x = DeviceArray::<f32>::from_slice(&stream, &[3.0, 1.0, 2.0])?;
    let (a, b) = (x.try_clone()?, x.try_clone()?);
    (a.intersect1d(&b)?, a.setdiff1d(&b)?, a.unique()?, a.isin(&b)?);
    a.setxor1d(&b)?;
    (x.unique_axis(0)?, x.unique_axis(-1)?);
    let i = DeviceArray::<i64>::from_slice(&stream, &[0, 1, 1])?;
    let w = DeviceArray::<f32>::from_slice(&stream, &[0.5, 1.0, 2.0])?;
    (i.bincount_weighted(&w, 0)?, i.bincount_weighted(&w, 10)?);
    let edges = DeviceArray::<f32>::from_slice(&stream, &[0.0, 1.0, 4.0])?;
    x.histogram_with_edges(&edges)?;
    x.histogram_density(10, Some((0.0, 1.0)))?;
    x.histogram_density_with_edges(&edges)?;
    let y = x.try_clone()?;
    x.histogram2d(&y, (10, 20), Some([(0.0, 1.0), (0.0, 2.0)]))?;
    x.histogram2d(&y, (4, 4), None)?;
    let sample = DeviceArray::<f64>::zeros(&stream, [6, 3])?;
    sample.histogramdd(&[3, 2, 4], Some(&[(0.0, 1.0), (0.0, 2.0), (0.0, 4.0)]))?;
    let sample = DeviceArray::<f64>::zeros(&stream, [6, 2])?;
    sample.histogramdd(&[5, 5], None)?;
    x.sum()?;

    use cuda_core::algorithms::scan::{self, ScanKind, ScanOp, ScanOperator};
    use cuda_core::algorithms::select::{self, SelectIf};
    use cuda_core::algorithms::{histogram, search};
    let mut out = DeviceArray::<f32>::empty(&stream, 3)?;
    let mut y = DeviceArray::<f32>::empty(&stream, 3)?;
    let mut count = DeviceArray::<u64>::empty(&stream, 1)?;
    scan::scan::<f32, f32>(&stream, &x, &mut y, ScanOp::Sum, ScanKind::Inclusive, None)?;
    scan::scan::<f32, f32>(&stream, &x, &mut y, ScanOp::Max, ScanKind::Exclusive(0.0), None)?;
    let keys = DeviceArray::<i32>::from_slice(&stream, &[0, 0, 1])?;
    scan::scan_by_key::<i32, f32, f32>(&stream, &keys, &x, &mut y, ScanOp::Sum, ScanKind::Inclusive)?;
    let op = ScanOperator::new("running_max", "a > b ? a : b", "-3.4e38f")?;
    unsafe { op.scan::<f32, f32>(&stream, &x, &mut y, ScanKind::Inclusive, None)? };
    use cuda_core::algorithms::reduce::{self, ReduceOperator, Segments};
    let mut total = DeviceArray::<f32>::empty(&stream, 1)?;
    reduce::reduce::<f32, f32>(&stream, &x, &mut total, ScanOp::Sum, 0.0)?;
    reduce::reduce_segments::<f32, f32>(&stream, &x, Segments::Rows(3), &mut y, ScanOp::Max, f32::NEG_INFINITY)?;
    let offsets = DeviceArray::<i64>::from_slice(&stream, &[0, 1, 3])?;
    reduce::reduce_segments::<f32, f32>(&stream, &x, Segments::Offsets(&offsets), &mut y, ScanOp::Sum, 0.0)?;
    let absmax = ReduceOperator::new("absmax", "fmaxf(fabsf(a), fabsf(b))", "0.0f")?;
    unsafe { absmax.reduce::<f32, f32>(&stream, &x, &mut total, 0.0)? };
    let keys = x.try_clone()?;
    let mut keys_out = DeviceArray::<f32>::empty(&stream, 3)?;
    sort::sort_keys::<f32>(&stream, &keys, &mut keys_out, n, SortOrder::Descending)?;
    sort::sort_rows::<f32>(&stream, &keys, &mut keys_out, (n, 1), SortOrder::Ascending)?;
    let (begins, ends, segments) = (
        DeviceArray::<i64>::from_slice(&stream, &[0, 1])?,
        DeviceArray::<i64>::from_slice(&stream, &[1, 3])?,
        2,
    );
    sort::segmented_sort_keys::<f32>(
        &stream,
        &keys,
        &mut keys_out,
        n,
        (&begins, &ends),
        segments,
        SortOrder::Ascending,
    )?;
    let by_magnitude =
        cuda_core::algorithms::merge_sort::MergeSort::new("by_magnitude", "float", "fabsf(a) < fabsf(b)")?;
    let (mut values_out, values) = (
        DeviceArray::<i64>::empty(&stream, 3)?,
        DeviceArray::<i64>::from_slice(&stream, &[0, 1, 2])?,
    );
    unsafe { by_magnitude.sort_pairs::<f32, i64>(&stream, (&keys, &values), (&mut keys_out, &mut values_out), n)? };
    sort::segmented_sort_pairs::<f32, i64>(
        &stream,
        (&keys, &values),
        (&mut keys_out, &mut values_out),
        n,
        (&begins, &ends),
        segments,
        SortOrder::Descending,
    )?;
    let flags = DeviceArray::<u8>::from_slice(&stream, &[1, 0, 1])?;
    select::select_flagged::<f32, u8>(&stream, &x, &flags, &mut out, &mut count, false)?;
    let positive = SelectIf::new("positive", "x > 0")?;
    unsafe { positive.select::<f32>(&stream, &x, &mut out, &mut count, false)? };
    select::unique_sorted::<f32>(&stream, &keys, &mut out, &mut count)?;
    let (mut unique, mut lengths) = (
        DeviceArray::<f32>::empty(&stream, 3)?,
        DeviceArray::<u64>::empty(&stream, 3)?,
    );
    select::run_length_encode::<f32>(&stream, &keys, &mut unique, &mut lengths, &mut count)?;
    let values = DeviceArray::<i64>::from_slice(&stream, &[1, 2, 3])?;
    let (mut firsts, mut sums) = (
        DeviceArray::<i64>::empty(&stream, 3)?,
        DeviceArray::<i64>::empty(&stream, 3)?,
    );
    select::unique_by_key::<f32, i64>(&stream, (&keys, &values), (&mut unique, &mut firsts), &mut count)?;
    reduce::reduce_by_key::<f32, i64, i64>(
        &stream,
        (&keys, &values),
        (&mut unique, &mut sums),
        &mut count,
        ScanOp::Sum,
    )?;
    let op = ReduceOperator::new("first_nonzero", "a != 0 ? a : b", "0")?;
    unsafe { op.reduce_by_key::<f32, i64, i64>(&stream, (&keys, &values), (&mut unique, &mut sums), &mut count)? };
    let mut counts = DeviceArray::<i64>::empty(&stream, 10)?;
    histogram::histogram_even::<f32, f32>(&stream, (&x, n), (0.0, 1.0), &mut counts, 10)?;
    let queries = x.try_clone()?;
    let mut out = DeviceArray::<i64>::empty(&stream, 3)?;
    search::search_sorted::<f32>(&stream, (&keys, n), (&queries, m), &mut out, Side::Left)?;
    search::search_sorted::<f32>(&stream, (&keys, n), (&queries, m), &mut out, Side::Right)?;
    Ok(())
}

fn complex_arrays(stream: cuda_driver::Stream) -> Checked {
    use cuda_core::{Complex, ExprOps, Norm};
    let z = DeviceArray::<Complex<f32>>::zeros(&stream, 3)?;
    let w = DeviceArray::full(&stream, 3, Complex::new(1.5f64, -2.0))?;
    let x = DeviceArray::<f32>::zeros(&stream, 3)?;
    let y: DeviceArray<Complex<f32>> = (&z + &x).eval()?;
    (
        (&z).abs(),
        (&z).angle(),
        (&z).conj(),
        (&z + 1.0).real(),
        (&z * 2.0).imag(),
    );
    let (re, im): (DeviceArray<f32>, DeviceArray<f32>) = (z.real(), z.imag());
    z.imag().fill(0.0)?;
    (
        (&z).exp(),
        (&z).log(),
        (&z).sqrt(),
        (&z).sin(),
        (&z).arctanh(),
        (&z).isnan(),
        (&z).isfinite(),
    );
    ((&w).eq(&z), (&z).eq(&w), (&z).lt(&w));
    (&z).floor().eval();
    (z.sum()?, z.prod()?, z.mean()?, z.var(0)?);
    let (lo, hi) = (Complex::new(0.0f32, 0.0), Complex::new(1.0f32, 0.0));
    (
        z.max()?,
        z.argmax_axis(-1, false)?,
        z.nanargmin()?,
        z.ptp()?,
        x.sort_complex()?,
    );
    ((&z).maximum(&w), (&z).clip(lo, hi));
    let w = w.astype::<Complex<f32>>().eval()?;
    z.matmul(&w)?;
    {
        let a = DeviceArray::<f64>::zeros(&stream, [3, 3])?;
        let (w, v) = a.eig()?;
        a.eigvals()?;
        (
            a.matrix_rank_with(Some(0.5), None)?,
            a.matrix_rank_with(None, Some(1e-3))?,
            a.pinv_rtol(None)?,
        );
        let (z, y) = (
            DeviceArray::<Complex<f64>>::zeros(&stream, [3, 3])?,
            DeviceArray::<Complex<f64>>::zeros(&stream, [3])?,
        );
        z.solve(&y)?;
        let (sign, logabsdet) = z.slogdet()?;
        z.cholesky(false)?;
        let (w, v) = z.eigh(false)?;
        (z.svdvals()?, z.cond()?, z.pinv(1e-15)?);
        let h = &z;
        (h.pinv_hermitian(1e-15)?, h.matrix_rank_hermitian(None, None)?);
        let stack = DeviceArray::<Complex<f32>>::zeros(&stream, [2, 3, 3])?;
        let x = stack.reshape([18])?;
        (z.linalg_norm(Norm::Default)?, z.linalg_norm(Norm::Nuc)?);
        (x.vector_norm(Norm::Ord(3.0))?, stack.matrix_norm(Norm::Ord(1.0))?);
        let x = DeviceArray::<f64>::zeros(&stream, [2, 3, 4])?;
        (
            x.linalg_norm_axes(Norm::Default, -2, false)?,
            x.linalg_norm_axes(Norm::Ord(1.0), [2, 0], true)?,
        );
        let stack = x.reshape([2, 3, 4])?;
        (
            x.vector_norm_axes(Norm::Ord(1.0), [0, 2], true)?,
            stack.matrix_norm_keepdims(Norm::Default)?,
            x.vector_norm_axes(Norm::Default, cuda_core::Axes::ALL, false)?,
            x.vector_norm_axes(Norm::Default, cuda_core::Axes::EMPTY, false)?,
        );
        let i = DeviceArray::<i32>::zeros(&stream, [3])?;
        let _norm: DeviceArray<f64> = i.linalg_norm(Norm::Default)?;
        let h = DeviceArray::<cuda_core::f16>::zeros(&stream, [3])?;
        let _norm: DeviceArray<cuda_core::f16> = h.linalg_norm(Norm::Default)?;
        let (a, b) = (
            DeviceArray::<f64>::zeros(&stream, [3, 3])?,
            DeviceArray::<Complex<f32>>::zeros(&stream, [3])?,
        );
        let _solved: DeviceArray<Complex<f64>> = a.solve(&b)?;
    }
    {
        use cuda_libs::solver::{Matrix, Solver};
        let (n, mut solver) = (4, Solver::new(&stream)?);
        let shape = Matrix::square(n);
        let mut a = DeviceArray::<Complex<f32>>::zeros(&stream, [n, n])?;
        let mut pivots = DeviceArray::<i64>::zeros(&stream, [n])?;
        let mut ws = DeviceArray::<u8>::zeros(&stream, [solver.getrf_workspace::<Complex<f32>>(shape)?])?;
        solver.getrf::<Complex<f32>>(shape, &mut a, &mut pivots, Some(&mut ws))?;
        let (mut a, mut w, mut vr) = (
            DeviceArray::<Complex<f64>>::zeros(&stream, [n, n])?,
            DeviceArray::<Complex<f64>>::zeros(&stream, [n])?,
            DeviceArray::<Complex<f64>>::zeros(&stream, [n, n])?,
        );
        let mut ws = DeviceArray::<u8>::zeros(&stream, [solver.geev_workspace::<Complex<f64>>(true, shape)?])?;
        solver.geev::<Complex<f64>>(Matrix::square(n), &mut a, &mut w, Some(&mut vr), Some(&mut ws))?;
        solver.check_info()?;
        fn generic<T: cuda_libs::solver::SolverScalar>() {}
        generic::<Complex<f64>>();
        if let Err(cuda_libs::Error::Symbol(missing)) = solver.geev_workspace::<Complex<f64>>(false, shape) {}
    }
    Ok(())
}

fn fft_module(stream: cuda_driver::Stream, n: i64) -> Checked {
    use cuda_core::fft::{self, FftNorm};
    use cuda_core::{Axes, Complex};
    let x = DeviceArray::<f32>::zeros(&stream, [8, 8, 8])?;
    let z = DeviceArray::<Complex<f32>>::zeros(&stream, [8, 8])?;
    let y = DeviceArray::<Complex<f64>>::zeros(&stream, [8, 5])?;
    let s = [8i64, 8];
    let d = 0.5;
    (
        fft::fft(&x, None, -1, FftNorm::Backward)?,
        fft::fft(&x, Some(64), 0, FftNorm::Ortho)?,
        fft::ifft(&x, None, -1, FftNorm::Backward)?,
    );
    (
        fft::fft2(&x, None, Axes::ALL, FftNorm::Backward)?,
        fft::fftn(&x, Some(&[8, 8][..]), [0, 2], FftNorm::Backward)?,
        fft::ifftn(&x, None, Axes::ALL, FftNorm::Forward)?,
    );
    (
        fft::rfft(&x, None, -1, FftNorm::Backward)?,
        fft::irfft(&y, Some(n), -1, FftNorm::Backward)?,
        fft::rfftn(&x, None, Axes::ALL, FftNorm::Backward)?,
        fft::irfftn(&y, Some(&s[..]), Axes::ALL, FftNorm::Backward)?,
    );
    (
        fft::hfft(&y, Some(n), -1, FftNorm::Backward)?,
        fft::ihfft(&x, None, -1, FftNorm::Backward)?,
    );
    (
        fft::fftfreq(&stream, n, d)?,
        fft::rfftfreq(&stream, n, d)?,
        fft::fftshift(&x, Axes::ALL)?,
        fft::ifftshift(&x, 0)?,
    );
    {
        let (w, a, b) = (x.try_clone()?, z.try_clone()?, z.try_clone()?);
        (
            fft::rfft(&(&x * &w), None, -1, FftNorm::Backward)?,
            fft::fft(&a * &b, None, -1, FftNorm::Backward)?,
            fft::plan_cache_info(),
            fft::set_load_callbacks(true),
        );
    }
    fft::clear_plan_cache();
    let _ = (z, fft::PLAN_CACHE_CAPACITY);
    Ok(())
}

#[allow(clippy::too_many_arguments)]
fn green_contexts_and_tensor_maps(
    device: cuda_driver::Device,
    config: cuda_driver::LaunchConfig,
    f: cuda_driver::Function,
    s: cuda_driver::Stream,
    (mut buf, mut out): (DeviceBuffer<f32>, DeviceBuffer<f32>),
    (cols, rows, n): (u64, u64, u32),
    (dims, strides, lower, upper): (Vec<u64>, Vec<u64>, Vec<i32>, Vec<i32>),
    (channels, pixels): (u32, u32),
) -> Checked {
    let sm = device.sm_resource()?;
    sm.sm_count();
    sm.min_partition_size();
    sm.coscheduled_alignment();
    let split = sm.split(1, 16)?;
    let (groups, remainder) = (&split.groups, split.remainder);
    if let Err(cuda_driver::Error::SmSplit { available, .. }) = sm.split(1, 1000) {
        println!("{available}");
    }
    let green = GreenContext::new(&device, &split.groups)?;
    let gs = green.stream()?;
    unsafe { gs.launch(&f, &config, (&mut out, n))? };
    let primary = green.context();
    green.sm_resource()?;
    unsafe { green.raw_context()? };
    let map = TiledTensorMap::new(TensorDataType::F32, &[cols, rows], &[cols * 4], &[32, 16])
        .swizzle(TensorSwizzle::Bytes128)
        .encode(&buf)?;
    if let Err(cuda_driver::Error::TensorMap(rule)) =
        TiledTensorMap::new(TensorDataType::F32, &[3], &[], &[3]).encode(&buf)
    {
        println!("{rule}");
    }
    Im2colTensorMap::new(TensorDataType::F16, &dims, &strides, &lower, &upper, channels, pixels).encode(&buf)?;
    unsafe { s.launch(&f, &config, (&map, &mut out, cols))? };
    TiledTensorMap::new(TensorDataType::F32, &[cols, rows], &[cols * 4], &[32, 16]).encode_mut(&mut buf)?;
    Ok(())
}

/// Removes whitespace and trailing commas, so that line breaks and `rustfmt` do not matter.
fn squeeze(text: &str) -> String {
    let squeezed: String = text.chars().filter(|c| !c.is_whitespace()).collect();
    squeezed.replace(",)", ")").replace(",]", "]").replace(",}", "}")
}

/// Whether `span` occurs in `source`, with `...` and `…` in it matching anything. A span that
/// does not start with `unsafe` does not match code inside an `unsafe` block that starts right
/// before it: a row must not leave out the `unsafe` its call needs.
fn occurs(span: &str, source: &str) -> bool {
    let span = squeeze(span).replace('…', "...");
    let mut pieces = span.split("...").filter(|p| !p.is_empty());
    let Some(first) = pieces.next() else {
        return true;
    };
    let starts = source.match_indices(first).map(|(at, _)| at);
    let mut starts = starts.filter(|&at| first.starts_with("unsafe") || !source[..at].ends_with("unsafe{"));
    starts.any(|at| {
        let mut rest = &source[at + first.len()..];
        pieces.clone().all(|piece| match rest.find(piece) {
            Some(found) => {
                rest = &rest[found + piece.len()..];
                true
            }
            None => false,
        })
    })
}

/// The code spans of the Rust (last) column of every table after the examples' table.
fn rust_spans(markdown: &str) -> Vec<(usize, String)> {
    let start = markdown
        .find("## Raw bindings")
        .expect("FROM_PYTHON.md has its sections");
    let mut spans = Vec::new();
    for (number, line) in markdown.lines().enumerate() {
        let offset = line.as_ptr() as usize - markdown.as_ptr() as usize;
        if offset < start || !line.starts_with('|') || line.starts_with("|---") {
            continue;
        }
        let line = line.replace("\\|", "\u{1}");
        let cells: Vec<&str> = line.trim_matches('|').split('|').collect();
        if cells.len() < 2 {
            continue;
        }
        let rust = cells[cells.len() - 1];
        for (i, piece) in rust.split('`').enumerate() {
            if i % 2 == 1 {
                spans.push((number + 1, piece.replace('\u{1}', "|")));
            }
        }
    }
    spans
}

#[test]
fn every_call_of_the_from_python_table_is_compiled_here() {
    // Referenced so that the compiled functions are not dead code; none of them is run.
    let _ = (
        raw_bindings,
        devices,
        streams_events_graphs,
        graphs_as_data,
        graph_builder,
        system,
        memory::<u32>,
        compiling,
        launching,
        pool_and_arrays,
        manipulation_and_indexing,
        sorting_and_searching,
        counting_sets_and_device_algorithms,
        several_gpus,
        fft_and_solver,
        complex_arrays,
        fft_module,
        green_contexts_and_tensor_maps,
    );
    let markdown = include_str!("../../docs/FROM_PYTHON.md");
    let this = include_str!("from_python.rs");
    let code = squeeze(&this[..this.find("/// Removes whitespace").unwrap()]);
    let spans = rust_spans(markdown);
    assert!(spans.len() > 200, "{} spans found", spans.len());
    let missing: Vec<String> = spans
        .iter()
        .filter(|(_, span)| !NOT_CALLS.contains(&span.as_str()) && !occurs(span, &code))
        .map(|(line, span)| format!("FROM_PYTHON.md:{line}: `{span}`"))
        .collect();
    assert!(
        missing.is_empty(),
        "not compiled in tests/tests/from_python.rs:\n{}",
        missing.join("\n")
    );
}

#[test]
fn the_matcher_finds_what_is_there_and_only_that() {
    assert!(occurs("let x = f( a,\n b)?;", "letx=f(a,b)?;"));
    assert!(occurs("g(move || ...)?", "g(move||println!(\"done\"))?"));
    assert!(!occurs("unsafe { f()? }", "f()?"));
    assert!(!occurs("f()?", "unsafe{f()?}"), "a row must not leave out `unsafe`");
    assert!(occurs("f()?", "unsafe{g()};f()?"));
    assert!(!occurs("x.copy_2d_from(a)", "x.view_mut().copy_2d_from(a)"));
    assert!(occurs("f(a, b)", &squeeze("f(\n    a,\n    b,\n)")));
}
