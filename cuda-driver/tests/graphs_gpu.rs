//! Graphs built node by node on a GPU: a while loop whose trip count the device decides, if/else
//! and switch bodies, a kernel's scalar changed without a new instantiation, memory nodes,
//! child graphs, host functions and events, capture into a graph, updates the topology forbids,
//! and nodes the driver refuses in conditional bodies. `skipped: <why>` without a GPU (fails then
//! if `CUDA_REQUIRE_GPU=1`); the NVRTC compile of the conditional kernels runs wherever NVRTC does.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};

use cuda_driver::{
    CaptureMode, ConditionalKind, Context, DeviceBuffer, Error, Event, EventFlags, Graph, GraphArgs,
    GraphInstantiateFlags, GraphUpdateReason, LaunchConfig, MemsetValue, Module, Stream, StreamFlags,
};

/// Kernels that set conditions on the device. `cudaGraphSetConditional` is a device-runtime
/// builtin that NVRTC's implicit headers do not declare, so it is declared here.
const CONDITION_KERNELS: &str = r#"
extern "C" __device__ __cudart_builtin__ void cudaGraphSetConditional(cudaGraphConditionalHandle handle,
                                                                       unsigned int value);

// Before a loop: the trip count is read on the device; the loop runs while it is positive.
extern "C" __global__ void loop_start(cudaGraphConditionalHandle loop, const int *trips, int *left, int *done) {
    *left = *trips;
    *done = 0;
    cudaGraphSetConditional(loop, *trips > 0 ? 1u : 0u);
}

// One loop iteration: counts itself and decides whether another runs.
extern "C" __global__ void loop_step(cudaGraphConditionalHandle loop, int *left, int *done) {
    *done += 1;
    *left -= 1;
    cudaGraphSetConditional(loop, *left > 0 ? 1u : 0u);
}

// Sets a condition from device memory (if/else: non-zero or not; switch: the body index).
extern "C" __global__ void choose(cudaGraphConditionalHandle handle, const unsigned *value) {
    cudaGraphSetConditional(handle, *value);
}

extern "C" __global__ void fill_int(int *out, int value, unsigned n) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = value;
}

extern "C" __global__ void copy_floats(const float *from, float *to, unsigned n) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) to[i] = from[i];
}
"#;

fn condition_kernels(context: &Context) -> Module {
    let arch = context.device().compute_capability().expect("compute capability");
    let ptx = common::compile(CONDITION_KERNELS, arch).unwrap_or_else(|log| panic!("NVRTC failed:\n{log}"));
    Module::from_ptx(context, &ptx).expect("load PTX")
}

const ONE: LaunchConfig = LaunchConfig {
    grid: (1, 1, 1),
    block: (1, 1, 1),
    shared_mem_bytes: 0,
};

#[test]
fn conditional_kernels_compile_with_nvrtc() {
    if let Err(why) = cuda_sys::nvrtc() {
        common::skip::<()>(&format!("no NVRTC ({why})"));
        return;
    }
    let ptx = common::compile(CONDITION_KERNELS, (9, 0)).unwrap_or_else(|log| panic!("NVRTC failed:\n{log}"));
    assert!(ptx.contains("cudaGraphSetConditional"), "{ptx}");
    for entry in ["loop_start", "loop_step", "choose", "fill_int", "copy_floats"] {
        assert!(ptx.contains(&format!(".entry {entry}")), "{entry} missing");
    }
}

#[test]
fn while_graph_runs_as_many_iterations_as_the_device_decides() {
    let Some(context) = common::context() else { return };
    let module = condition_kernels(&context);
    let (start, step) = (
        module.function("loop_start").unwrap(),
        module.function("loop_step").unwrap(),
    );
    let stream = Stream::new(&context).unwrap();
    let (seven, three) = (
        DeviceBuffer::from_slice(&context, &[7i32]).unwrap(),
        DeviceBuffer::from_slice(&context, &[3i32]).unwrap(),
    );
    let left = DeviceBuffer::<i32>::zeroed(&context, 1).unwrap();
    let done = DeviceBuffer::<i32>::zeroed(&context, 1).unwrap();
    let mut graph = Graph::new(&context).unwrap();
    let mut nodes = graph.nodes();
    let handle = nodes.condition_handle(None).unwrap();
    // SAFETY: `loop_start` reads one int of `trips` and writes one of `left` and `done`.
    let started = unsafe {
        nodes
            .kernel(
                &[],
                &start,
                &ONE,
                GraphArgs::new()
                    .condition(&handle)
                    .read(&seven)
                    .write(&left)
                    .write(&done),
            )
            .unwrap()
    };
    nodes
        .conditional(&[started], &handle, ConditionalKind::While, |_, body| {
            // SAFETY: `loop_step` updates one int of `left` and `done`.
            unsafe {
                body.kernel(
                    &[],
                    &step,
                    &ONE,
                    GraphArgs::new().condition(&handle).write(&left).write(&done),
                )
            }
            .map(|_| ())
        })
        .unwrap();
    let mut exec = graph.instantiate().unwrap();
    // SAFETY: the kernels touch one int of each buffer, which the graph borrows.
    unsafe { exec.launch(&stream).unwrap() };
    stream.synchronize().unwrap();
    assert_eq!(done.to_vec().unwrap(), [7]);
    assert_eq!(left.to_vec().unwrap(), [0]);
    // Another trip count in the same executable graph: the start node reads another buffer.
    // SAFETY: as above.
    unsafe {
        exec.set_kernel_args(
            &started,
            GraphArgs::new()
                .condition(&handle)
                .read(&three)
                .write(&left)
                .write(&done),
        )
        .unwrap();
        exec.launch(&stream).unwrap();
        exec.launch(&stream).unwrap();
    }
    stream.synchronize().unwrap();
    assert_eq!(done.to_vec().unwrap(), [3]);
}

#[test]
fn if_else_and_switch_bodies_follow_the_device_condition() {
    let Some(context) = common::context() else { return };
    let module = condition_kernels(&context);
    let (choose, fill) = (module.function("choose").unwrap(), module.function("fill_int").unwrap());
    let stream = Stream::new(&context).unwrap();
    let mut value = DeviceBuffer::from_slice(&context, &[0u32]).unwrap();
    let out = DeviceBuffer::<i32>::zeroed(&context, 4).unwrap();
    for (kind, bodies) in [(ConditionalKind::IfElse, 2), (ConditionalKind::Switch(3), 3)] {
        for chosen in 0..bodies {
            value.copy_from_host(&[chosen as u32]).unwrap();
            let mut graph = Graph::new(&context).unwrap();
            let mut nodes = graph.nodes();
            let handle = nodes.condition_handle(None).unwrap();
            // SAFETY: `choose` reads one unsigned of `value`.
            let chosen_node = unsafe {
                nodes
                    .kernel(&[], &choose, &ONE, GraphArgs::new().condition(&handle).read(&value))
                    .unwrap()
            };
            nodes
                .conditional(&[chosen_node], &handle, kind, |index, body| {
                    // SAFETY: `fill_int` writes 4 ints of `out`, which holds 4.
                    unsafe {
                        body.kernel(
                            &[],
                            &fill,
                            &LaunchConfig::for_num_elems(4),
                            GraphArgs::new().write(&out).value(100 + index as i32).value(4u32),
                        )
                    }
                    .map(|_| ())
                })
                .unwrap();
            let exec = graph.instantiate().unwrap();
            // SAFETY: as above.
            unsafe { exec.launch(&stream).unwrap() };
            stream.synchronize().unwrap();
            // If/else runs its first body for a non-zero condition.
            let expected = match kind {
                ConditionalKind::IfElse => 100 + i32::from(chosen == 0),
                _ => 100 + chosen,
            };
            assert_eq!(out.to_vec().unwrap(), [expected; 4], "{kind:?} with condition {chosen}");
        }
    }
}

#[test]
fn bodies_refuse_what_the_driver_refuses_and_foreign_handles() {
    let Some(context) = common::context() else { return };
    let module = condition_kernels(&context);
    let choose = module.function("choose").unwrap();
    let value = DeviceBuffer::from_slice(&context, &[1u32]).unwrap();
    let event = Event::new(&context, EventFlags::DEFAULT).unwrap();
    let mut other = Graph::new(&context).unwrap();
    let foreign = other.nodes().condition_handle(Some(0)).unwrap();
    let mut graph = Graph::new(&context).unwrap();
    let mut nodes = graph.nodes();
    let handle = nodes.condition_handle(Some(0)).unwrap();
    let refused = nodes.conditional(&[], &foreign, ConditionalKind::If, |_, _| Ok(()));
    assert!(
        matches!(
            refused,
            Err(Error::WrongGraph {
                object: "condition handle"
            })
        ),
        "{refused:?}"
    );
    // A kernel may set only handles of its graph or of graphs enclosing its body.
    // SAFETY: refused before anything is added.
    let setter = unsafe { nodes.kernel(&[], &choose, &ONE, GraphArgs::new().condition(&foreign).read(&value)) };
    assert!(
        matches!(
            setter,
            Err(Error::WrongGraph {
                object: "condition handle"
            })
        ),
        "{setter:?}"
    );
    let mut child = Graph::new(&context).unwrap();
    child.nodes().host_function(&[], || {}).unwrap();
    let mut seen = Vec::new();
    let result = nodes.conditional(&[], &handle, ConditionalKind::If, |_, body| {
        seen.push(matches!(
            body.host_function(&[], || {}),
            Err(Error::NotInConditionalBody { node: "host function" })
        ));
        seen.push(matches!(
            body.event_record(&[], &event),
            Err(Error::NotInConditionalBody { .. })
        ));
        seen.push(matches!(
            body.mem_alloc(&[], 64),
            Err(Error::NotInConditionalBody { .. })
        ));
        seen.push(matches!(
            body.child_graph(&[], &child),
            Err(Error::NotInConditionalBody { node: "host function" })
        ));
        // A handle of the outer graph is not one of the body's.
        seen.push(matches!(
            body.conditional(&[], &handle, ConditionalKind::If, |_, _| Ok(())),
            Err(Error::WrongGraph { .. })
        ));
        body.empty(&[]).map(|_| ())
    });
    result.unwrap();
    assert_eq!(seen, [true; 5]);
    let outer = graph.created_nodes()[0];
    // Dependencies of another body or graph are refused too.
    let exec = graph.instantiate().unwrap();
    drop(exec);
    assert!(matches!(
        other.nodes().empty(&[outer]),
        Err(Error::WrongGraph { object: "dependency" })
    ));
}

#[test]
fn a_scalar_changes_without_a_new_instantiation() {
    let Some(context) = common::context() else { return };
    let fill = common::kernels(&context).function("fill").unwrap();
    let stream = Stream::new(&context).unwrap();
    let n = 1000u32;
    let out = DeviceBuffer::<f32>::zeroed(&context, n as usize).unwrap();
    let config = LaunchConfig::for_num_elems(n);
    let mut graph = Graph::new(&context).unwrap();
    // SAFETY: `fill` writes n floats of `out`, which holds n.
    let node = unsafe {
        graph
            .nodes()
            .kernel(&[], &fill, &config, GraphArgs::new().write(&out).value(1.0f32).value(n))
    }
    .unwrap();
    let mut exec = graph.instantiate().unwrap();
    for value in [2.0f32, 3.0, 4.0] {
        // SAFETY: as above.
        unsafe {
            exec.set_kernel_args(&node, GraphArgs::new().write(&out).value(value).value(n))
                .unwrap();
            exec.launch(&stream).unwrap();
        }
        stream.synchronize().unwrap();
        assert!(out.to_vec().unwrap().iter().all(|&v| v == value), "{value}");
    }
    // An update from a graph of the same shape changes it too; another shape is a typed error.
    let mut same = Graph::new(&context).unwrap();
    // SAFETY: as above.
    unsafe {
        same.nodes()
            .kernel(&[], &fill, &config, GraphArgs::new().write(&out).value(9.0f32).value(n))
    }
    .unwrap();
    exec.update(&same).unwrap();
    // SAFETY: as above.
    unsafe { exec.launch(&stream).unwrap() };
    stream.synchronize().unwrap();
    assert_eq!(out.to_vec().unwrap()[n as usize - 1], 9.0);
    let mut bigger = Graph::new(&context).unwrap();
    let mut nodes = bigger.nodes();
    // SAFETY: as above.
    let first =
        unsafe { nodes.kernel(&[], &fill, &config, GraphArgs::new().write(&out).value(5.0f32).value(n)) }.unwrap();
    nodes.empty(&[first]).unwrap();
    match exec.update(&bigger) {
        Err(Error::GraphUpdate(failure)) => {
            assert_eq!(failure.reason, GraphUpdateReason::TopologyChanged, "{failure}")
        }
        other => panic!("expected a topology change, got {other:?}"),
    }
    exec.set_node_enabled(&node, false).unwrap();
    assert!(!exec.node_enabled(&node).unwrap());
}

#[test]
fn memory_nodes_allocate_use_and_free_inside_the_graph() {
    let Some(context) = common::context() else { return };
    let module = condition_kernels(&context);
    let copy = module.function("copy_floats").unwrap();
    let stream = Stream::new(&context).unwrap();
    let n = 4096u32;
    let out = DeviceBuffer::<f32>::zeroed(&context, n as usize).unwrap();
    let mut graph = Graph::new(&context).unwrap();
    let mut nodes = graph.nodes();
    let (allocated, scratch) = nodes.mem_alloc(&[], n as usize * 4).unwrap();
    // 0x3f800000 is 1.0f.
    let set = nodes
        .memset(&[allocated], &scratch, MemsetValue::U32(0x3f80_0000))
        .unwrap();
    // SAFETY: `copy_floats` reads n floats of the graph allocation (between its allocation and
    // free nodes) and writes n of `out`.
    let copied = unsafe {
        nodes.kernel(
            &[set],
            &copy,
            &LaunchConfig::for_num_elems(n),
            GraphArgs::new().graph_memory(&scratch).write(&out).value(n),
        )
    }
    .unwrap();
    nodes.mem_free(&[copied], scratch).unwrap();
    let exec = graph
        .instantiate_uploaded(GraphInstantiateFlags::empty(), &stream)
        .unwrap();
    for _ in 0..3 {
        // SAFETY: as above.
        unsafe { exec.launch(&stream).unwrap() };
    }
    stream.synchronize().unwrap();
    assert!(out.to_vec().unwrap().iter().all(|&v| v == 1.0));
    // Without a free node the graph needs AUTO_FREE_ON_LAUNCH to run again.
    let kept = DeviceBuffer::<f32>::zeroed(&context, 1).unwrap();
    let mut leaky = Graph::new(&context).unwrap();
    let (_, unfreed) = leaky.nodes().mem_alloc(&[], 256).unwrap();
    leaky.nodes().memset(&[], &kept, MemsetValue::U32(0)).unwrap();
    let exec = leaky
        .instantiate_with(GraphInstantiateFlags::AUTO_FREE_ON_LAUNCH)
        .unwrap();
    for _ in 0..2 {
        // SAFETY: no kernels.
        unsafe { exec.launch(&stream).unwrap() };
    }
    // The last launch's allocation outlives it: another graph's free node frees it (memcheck's
    // leak check at exit sees none).
    let mut release = Graph::new(&context).unwrap();
    release.nodes().mem_free(&[], unfreed).unwrap();
    let release = release.instantiate().unwrap();
    // SAFETY: no kernels; the free is ordered after the launches on the same stream.
    unsafe { release.launch(&stream).unwrap() };
    stream.synchronize().unwrap();
}

#[test]
fn child_graphs_host_functions_events_and_captures_run_in_order() {
    let Some(context) = common::context() else { return };
    let kernels = common::kernels(&context);
    let (fill, saxpy) = (kernels.function("fill").unwrap(), kernels.function("saxpy").unwrap());
    // Captured below: a non-blocking stream, so that the other tests' synchronous copies (on
    // the legacy stream, in other threads) do not depend on it while it captures, which the
    // driver refuses (CUDA_ERROR_STREAM_CAPTURE_IMPLICIT there, the capture invalidated here).
    let stream = Stream::with_options(&context, StreamFlags::NON_BLOCKING, 0).unwrap();
    let n = 256u32;
    let config = LaunchConfig::for_num_elems(n);
    let x = DeviceBuffer::<f32>::zeroed(&context, n as usize).unwrap();
    let mut y = DeviceBuffer::<f32>::zeroed(&context, n as usize).unwrap();
    let event = Event::new(&context, EventFlags::DEFAULT).unwrap();
    let calls = AtomicUsize::new(0);
    let mut child = Graph::new(&context).unwrap();
    // SAFETY: `fill` writes n floats of `x`.
    unsafe {
        child
            .nodes()
            .kernel(&[], &fill, &config, GraphArgs::new().write(&x).value(2.0f32).value(n))
    }
    .unwrap();
    let mut graph = Graph::new(&context).unwrap();
    let mut nodes = graph.nodes();
    let filled = nodes.child_graph(&[], &child).unwrap();
    drop(child);
    let recorded = nodes.event_record(&[filled], &event).unwrap();
    let counted = nodes
        .host_function(&[recorded], || {
            calls.fetch_add(1, Ordering::SeqCst);
        })
        .unwrap();
    let captured = nodes
        .capture(&[counted], &stream, CaptureMode::ThreadLocal, |stream| {
            // SAFETY: `saxpy` reads n floats of `x` and updates n of `y`.
            unsafe { stream.launch(&saxpy, &config, (3.0f32, &x, &mut y, n)) }
        })
        .unwrap();
    assert_eq!(captured.len(), 1);
    let dot = graph.to_dot(true).unwrap();
    assert!(dot.contains("digraph"), "{dot}");
    let exec = graph.instantiate().unwrap();
    for _ in 0..2 {
        // SAFETY: `x` and `y` outlive the launches.
        unsafe { exec.launch(&stream).unwrap() };
    }
    stream.synchronize().unwrap();
    drop(exec);
    assert_eq!(calls.load(Ordering::SeqCst), 2);
    assert!(event.query().unwrap());
    drop(graph);
    assert!(y.to_vec().unwrap().iter().all(|&v| v == 12.0));
}

#[test]
fn a_graph_launched_on_another_contexts_stream_is_refused() {
    let Some(context) = common::context() else { return };
    let own = Context::new(&context.device(), cuda_driver::ContextFlags::SCHED_AUTO).unwrap();
    let foreign = Stream::new(&own).unwrap();
    let mut graph = Graph::new(&context).unwrap();
    graph.nodes().empty(&[]).unwrap();
    let exec = graph.instantiate().unwrap();
    // SAFETY: refused before anything runs.
    let launched = unsafe { exec.launch(&foreign) };
    assert!(matches!(launched, Err(Error::WrongContext { .. })), "{launched:?}");
}

#[test]
fn pinned_host_memory_goes_through_a_graph_and_back() {
    let Some(context) = common::context() else { return };
    let saxpy = common::kernels(&context).function("saxpy").unwrap();
    let stream = Stream::new(&context).unwrap();
    let n = 4096u32;
    let input = cuda_driver::HostBuffer::from_slice(&context, &vec![2.0f32; n as usize]).unwrap();
    let mut output = cuda_driver::HostBuffer::<f32>::new(&context, n as usize).unwrap();
    let x = DeviceBuffer::<f32>::zeroed(&context, n as usize).unwrap();
    let y = DeviceBuffer::<f32>::zeroed(&context, n as usize).unwrap();
    {
        let mut graph = Graph::new(&context).unwrap();
        let mut nodes = graph.nodes();
        let up = nodes.memcpy_from_host(&[], &x, &input).unwrap();
        let cleared = nodes.memset(&[], &y, MemsetValue::U32(0)).unwrap();
        // SAFETY: `saxpy` reads n floats of `x` and updates n of `y`.
        let scaled = unsafe {
            nodes.kernel(
                &[up, cleared],
                &saxpy,
                &LaunchConfig::for_num_elems(n),
                GraphArgs::new().value(3.0f32).read(&x).write(&y).value(n),
            )
        }
        .unwrap();
        nodes.memcpy_to_host(&[scaled], &mut output, &y).unwrap();
        let exec = graph.instantiate().unwrap();
        for _ in 0..3 {
            // SAFETY: as above.
            unsafe { exec.launch(&stream).unwrap() };
        }
        // Dropping the executable graph waits for the launches that write `output`.
    }
    assert!(output.iter().all(|&v| v == 6.0));
}
