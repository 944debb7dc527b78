//! cuda-driver's graphs built node by node, against the stand-in driver: results of launches,
//! per-node argument updates, enabling, updates from another graph, clones, capture into a
//! graph (a plain capture swapped in by its closure destroyed), captures into conditional bodies
//! ended only as the body they began in, and DOT output; bad input as typed errors (nodes and handles of another graph, a
//! launch on another context's stream, an update the topology forbids, arguments the kernel
//! does not take, blocks outside their memory), refused before the driver is asked where the
//! host can tell; every driver call of a built graph's life failing once, without a panic, leak
//! or double free.

use cuda_driver::{
    CaptureMode, ConditionalKind, Context, ContextFlags, Device, DeviceBuffer, Error, Event, EventFlags, Graph,
    GraphArgs, GraphInstantiateFlags, GraphUpdateReason, LaunchConfig, LaunchError, MemsetValue, Module, Region,
    Result, Stream,
};
use tests::checks::{assert_clean, assert_invalid, setup};
use tests::fake;
use tests::faults;
use tests::sequences::{expect, primary};

const N: u32 = 64;

/// Fills `out` with `value` (a graph of one kernel node).
fn fill_graph<'a>(
    context: &Context,
    fill: &cuda_driver::Function,
    out: &'a DeviceBuffer<f32>,
    value: f32,
) -> Result<Graph<'a>> {
    let mut graph = Graph::new(context)?;
    // SAFETY: `fill` writes N floats of `out`, which holds N.
    unsafe {
        graph.nodes().kernel(
            &[],
            fill,
            &LaunchConfig::for_num_elems(N),
            GraphArgs::new().write(out).value(value).value(N),
        )?
    };
    Ok(graph)
}

#[test]
fn built_graph_runs_its_nodes_in_order() {
    let (fake, context) = setup();
    {
        let stream = Stream::new(&context).unwrap();
        let module = Module::from_ptx(&context, fake::KERNELS).unwrap();
        let fill = module.function("fill").unwrap();
        let source = DeviceBuffer::<f32>::zeroed(&context, N as usize).unwrap();
        let pitched = DeviceBuffer::<f32>::zeroed(&context, N as usize).unwrap();
        let marks = DeviceBuffer::<u16>::zeroed(&context, 8).unwrap();
        let event = Event::new(&context, EventFlags::DEFAULT).unwrap();
        let mut graph = Graph::new(&context).unwrap();
        let mut nodes = graph.nodes();
        // SAFETY: `fill` writes N floats of `source`.
        let filled = unsafe {
            nodes
                .kernel(
                    &[],
                    &fill,
                    &LaunchConfig::for_num_elems(N),
                    GraphArgs::new().write(&source).value(4.0f32).value(N),
                )
                .unwrap()
        };
        // A 2-D block: rows 1..3 of 8-float rows, columns 2..6, to the same place in `pitched`.
        let block = nodes
            .memcpy_3d(
                &[filled],
                Region::pitched(&pitched, 32, 8).at(8, 1, 0),
                Region::pitched(&source, 32, 8).at(8, 1, 0),
                (16, 2, 1),
            )
            .unwrap();
        let marked = nodes.memset(&[block], &marks, MemsetValue::U16(0xbeef)).unwrap();
        let recorded = nodes.event_record(&[marked], &event).unwrap();
        let joined = nodes.empty(&[recorded, block]).unwrap();
        nodes.event_wait(&[joined], &event).unwrap();
        assert_eq!(graph.node_count().unwrap(), 6);
        let dot = graph.to_dot(false).unwrap();
        assert!(dot.contains("digraph") && dot.contains("kernel fill"), "{dot}");
        let exec = graph.instantiate().unwrap();
        exec.upload(&stream).unwrap();
        // SAFETY: the kernel writes inside `source`, which the graph borrows.
        unsafe { exec.launch(&stream).unwrap() };
        stream.synchronize().unwrap();
        let copied = pitched.to_vec().unwrap();
        for (i, value) in copied.iter().enumerate() {
            let (row, column) = (i / 8, i % 8);
            let inside = (1..3).contains(&row) && (2..6).contains(&column);
            assert_eq!(*value, if inside { 4.0 } else { 0.0 }, "element {i}");
        }
        assert_eq!(marks.to_vec().unwrap(), [0xbeef; 8]);
        assert!(event.query().unwrap());
    }
    drop(context);
    assert_clean(&fake);
}

#[test]
fn kernel_arguments_and_enabling_change_without_a_new_instantiation() {
    let (fake, context) = setup();
    {
        let stream = Stream::new(&context).unwrap();
        let module = Module::from_ptx(&context, fake::KERNELS).unwrap();
        let fill = module.function("fill").unwrap();
        let out = DeviceBuffer::<f32>::zeroed(&context, N as usize).unwrap();
        let other = DeviceBuffer::<f32>::zeroed(&context, N as usize).unwrap();
        let graph = fill_graph(&context, &fill, &out, 1.0).unwrap();
        let node = graph.created_nodes()[0];
        let clone = graph.try_clone().unwrap();
        assert_eq!(clone.find_in_clone(&node).unwrap(), clone.created_nodes()[0]);
        assert!(matches!(graph.find_in_clone(&node), Err(Error::WrongGraph { .. })));
        // UPLOAD needs a stream: refused on the host without one, the params form with one.
        assert!(matches!(
            graph.instantiate_with(GraphInstantiateFlags::UPLOAD),
            Err(Error::InvalidValue(_))
        ));
        graph
            .instantiate_uploaded(GraphInstantiateFlags::empty(), &stream)
            .unwrap();
        assert_eq!(fake.trace().matches("cuGraphInstantiateWithParams").count(), 1);
        let mut exec = graph.instantiate().unwrap();
        let instantiations = fake.trace().matches("cuGraphInstantiateWithFlags").count();
        // SAFETY: `fill` writes N floats of `other`.
        unsafe {
            exec.set_kernel_args(&node, GraphArgs::new().write(&other).value(7.0f32).value(N))
                .unwrap();
            exec.launch(&stream).unwrap();
        }
        stream.synchronize().unwrap();
        assert_eq!(other.to_vec().unwrap(), vec![7.0; N as usize]);
        assert_eq!(out.to_vec().unwrap(), vec![0.0; N as usize]);
        exec.set_node_enabled(&node, false).unwrap();
        assert!(!exec.node_enabled(&node).unwrap());
        other.to_vec().unwrap();
        // SAFETY: as above; the node is disabled.
        unsafe {
            exec.set_kernel_args(&node, GraphArgs::new().write(&other).value(9.0f32).value(N))
                .unwrap();
            exec.launch(&stream).unwrap();
        }
        stream.synchronize().unwrap();
        assert_eq!(other.to_vec().unwrap()[0], 7.0, "a disabled node does not run");
        assert_eq!(
            fake.trace().matches("cuGraphInstantiateWithFlags").count(),
            instantiations
        );
        // Arguments the kernel does not take: refused on the host.
        // SAFETY: refused before anything runs.
        let wrong = unsafe { exec.set_kernel_args(&node, GraphArgs::new().write(&other).value(1.0f64).value(N)) };
        assert!(
            matches!(wrong, Err(Error::Launch(LaunchError::ArgumentSize { index: 1, .. }))),
            "{wrong:?}"
        );
    }
    drop(context);
    assert_clean(&fake);
}

#[test]
fn updates_the_topology_forbids_are_typed_errors() {
    let (fake, context) = setup();
    {
        let module = Module::from_ptx(&context, fake::KERNELS).unwrap();
        let fill = module.function("fill").unwrap();
        let out = DeviceBuffer::<f32>::zeroed(&context, N as usize).unwrap();
        let graph = fill_graph(&context, &fill, &out, 1.0).unwrap();
        let mut exec = graph.instantiate().unwrap();
        // One node more: the topology changed.
        let mut bigger = fill_graph(&context, &fill, &out, 2.0).unwrap();
        bigger.nodes().empty(&[]).unwrap();
        match exec.update(&bigger) {
            Err(Error::GraphUpdate(failure)) => {
                assert_eq!(failure.reason, GraphUpdateReason::TopologyChanged);
                assert!(failure.to_string().contains("topology"), "{failure}");
            }
            other => panic!("expected a topology change, got {other:?}"),
        }
        // Same count, another type: the node is named.
        let mut other_type = Graph::new(&context).unwrap();
        other_type.nodes().memset(&[], &out, MemsetValue::U8(0)).unwrap();
        match exec.update(&other_type) {
            Err(Error::GraphUpdate(failure)) => {
                assert_eq!(failure.reason, GraphUpdateReason::NodeTypeChanged);
                assert_eq!(failure.node.as_deref(), Some("node 0 (memset)"));
            }
            other => panic!("expected a node type change, got {other:?}"),
        }
        // Same shape: updated.
        let same = fill_graph(&context, &fill, &out, 5.0).unwrap();
        exec.update(&same).unwrap();
    }
    drop(context);
    assert_clean(&fake);
}

#[test]
fn nodes_and_streams_of_others_are_refused() {
    let (fake, context) = setup();
    {
        let module = Module::from_ptx(&context, fake::KERNELS).unwrap();
        let fill = module.function("fill").unwrap();
        let out = DeviceBuffer::<f32>::zeroed(&context, N as usize).unwrap();
        let odd = DeviceBuffer::<u8>::zeroed(&context, 3).unwrap();
        let mut first = Graph::new(&context).unwrap();
        let mut second = Graph::new(&context).unwrap();
        let foreign = first.nodes().empty(&[]).unwrap();
        let calls = fake.calls();
        assert!(matches!(
            second.nodes().empty(&[foreign]),
            Err(Error::WrongGraph { object: "dependency" })
        ));
        assert!(matches!(second.find_in_clone(&foreign), Err(Error::WrongGraph { .. })));
        let mut exec = second.instantiate().unwrap();
        assert!(matches!(
            exec.set_node_enabled(&foreign, false),
            Err(Error::WrongGraph { object: "node" })
        ));
        // A block outside its memory, an empty one, a memset that does not divide: no driver call.
        let before = fake.calls();
        let mut nodes = second.nodes();
        assert_invalid(nodes.memcpy(&[], &out, &out, N as usize * 4 + 1), "does not fit");
        assert_invalid(nodes.memcpy(&[], &out, &out, 0), "empty block");
        let after_alloc = fake.calls();
        assert_invalid(nodes.memset(&[], &odd, MemsetValue::U16(1)), "2-byte elements");
        assert_eq!(fake.calls(), before, "refused on the host");
        assert_eq!(after_alloc, before);
        assert!(calls > 0);
        // A launch on a stream of another context.
        let own = Context::new(&Device::get(0).unwrap(), ContextFlags::SCHED_AUTO).unwrap();
        let foreign_stream = Stream::new(&own).unwrap();
        let graph = fill_graph(&context, &fill, &out, 1.0).unwrap();
        let filled = graph.instantiate().unwrap();
        // SAFETY: refused before anything runs.
        let launched = unsafe { filled.launch(&foreign_stream) };
        assert!(matches!(launched, Err(Error::WrongContext { .. })), "{launched:?}");
        // A buffer of another context as a kernel argument.
        let elsewhere = DeviceBuffer::<f32>::zeroed(&own, N as usize).unwrap();
        let mut third = Graph::new(&context).unwrap();
        // SAFETY: refused before anything runs.
        let added = unsafe {
            third.nodes().kernel(
                &[],
                &fill,
                &LaunchConfig::for_num_elems(N),
                GraphArgs::new().write(&elsewhere).value(1.0f32).value(N),
            )
        };
        assert!(matches!(added, Err(Error::WrongContext { .. })), "{added:?}");
        // Too few arguments.
        // SAFETY: refused before anything runs.
        let short = unsafe {
            third.nodes().kernel(
                &[],
                &fill,
                &LaunchConfig::for_num_elems(N),
                GraphArgs::new().write(&out),
            )
        };
        assert!(
            matches!(short, Err(Error::Launch(LaunchError::ArgumentCount { .. }))),
            "{short:?}"
        );
        exec.upload(&Stream::new(&context).unwrap()).unwrap();
    }
    drop(context);
    assert_clean(&fake);
}

#[test]
fn capture_into_a_graph_adds_after_built_nodes() {
    let (fake, context) = setup();
    {
        let stream = Stream::new(&context).unwrap();
        let module = Module::from_ptx(&context, fake::KERNELS).unwrap();
        let fill = module.function("fill").unwrap();
        let saxpy = module.function("saxpy").unwrap();
        let x = DeviceBuffer::<f32>::zeroed(&context, N as usize).unwrap();
        let mut y = DeviceBuffer::<f32>::zeroed(&context, N as usize).unwrap();
        let mut graph = fill_graph(&context, &fill, &x, 3.0).unwrap();
        let first = graph.created_nodes()[0];
        let captured = graph
            .nodes()
            .capture(&[first], &stream, CaptureMode::ThreadLocal, |stream| {
                // SAFETY: `saxpy` reads N floats of `x` and updates N of `y`.
                unsafe { stream.launch(&saxpy, &LaunchConfig::for_num_elems(N), (2.0f32, &x, &mut y, N)) }
            })
            .unwrap();
        assert_eq!(captured.len(), 1);
        assert!(!stream.is_capturing().unwrap());
        assert_eq!(graph.node_count().unwrap(), 2);
        let exec = graph.instantiate().unwrap();
        // SAFETY: `y`, the memory the captured kernel uses, outlives the launch.
        unsafe { exec.launch(&stream).unwrap() };
        stream.synchronize().unwrap();
        drop(exec);
        drop(graph);
        assert_eq!(y.to_vec().unwrap(), vec![6.0; N as usize]);
    }
    drop(context);
    assert_clean(&fake);
}

/// A built graph's life: nodes, instantiation, launches, argument updates, clone and update.
fn built_graph_life() -> Result<()> {
    let context = primary()?;
    let stream = Stream::new(&context)?;
    let module = Module::from_ptx(&context, fake::KERNELS)?;
    let fill = module.function("fill")?;
    let out = DeviceBuffer::<f32>::zeroed(&context, N as usize)?;
    let copy = DeviceBuffer::<f32>::zeroed(&context, N as usize)?;
    let mut host = cuda_driver::HostBuffer::<f32>::new(&context, N as usize)?;
    {
        let mut graph = fill_graph(&context, &fill, &out, 1.0)?;
        let node = graph.created_nodes()[0];
        let copied = graph.nodes().memcpy(&[node], &copy, &out, N as usize * 4)?;
        graph.nodes().memcpy_to_host(&[copied], &mut host, &copy)?;
        let mut exec = graph.instantiate()?;
        // SAFETY: the kernel writes N floats of buffers of N.
        unsafe {
            exec.launch(&stream)?;
            exec.set_kernel_args(&node, GraphArgs::new().write(&out).value(2.0f32).value(N))?;
            exec.launch(&stream)?;
        }
        exec.set_node_enabled(&copied, true)?;
        let clone = graph.try_clone()?;
        exec.update(&clone)?;
        // Dropping the executable graph waits for its launches: they write `host`.
    }
    expect("copy", copy.to_vec()?[3], 2.0)?;
    expect("host copy", host[3], 2.0)
}

/// A while graph's life: a condition handle, a conditional node whose body counts down on the
/// device, instantiation, two launches.
fn while_graph_life() -> Result<()> {
    let context = primary()?;
    let stream = Stream::new(&context)?;
    let module = Module::from_ptx(&context, fake::KERNELS)?;
    let countdown = module.function("countdown")?;
    let counter = DeviceBuffer::from_slice(&context, &[3i32])?;
    let mut graph = Graph::new(&context)?;
    let mut nodes = graph.nodes();
    let handle = nodes.condition_handle(Some(1))?;
    nodes.conditional(&[], &handle, ConditionalKind::While, |_, body| {
        // SAFETY: `countdown` updates one int of `counter`.
        unsafe {
            body.kernel(
                &[],
                &countdown,
                &LaunchConfig::for_num_elems(1),
                GraphArgs::new().condition(&handle).write(&counter),
            )
        }
        .map(|_| ())
    })?;
    let exec = graph.instantiate()?;
    // SAFETY: as above.
    unsafe {
        exec.launch(&stream)?;
        exec.launch(&stream)?;
    }
    stream.synchronize()?;
    expect("counter", counter.to_vec()?[0], -1)
}

/// A sequence the failure-point suite runs.
type Life = fn() -> Result<()>;

#[test]
fn every_failure_of_a_built_graph_is_clean() {
    let fake = fake::session();
    let lives: [(&str, Life); 2] = [("built graph", built_graph_life), ("while graph", while_graph_life)];
    for (name, life) in lives {
        faults::assert_every_failure_point_clean(&fake, name, &life);
    }
}

#[test]
fn copies_between_pinned_host_memory_and_the_device() {
    let (fake, context) = setup();
    {
        let stream = Stream::new(&context).unwrap();
        let input = cuda_driver::HostBuffer::from_slice(&context, &[1.5f32, 2.5, 3.5, 4.5]).unwrap();
        let mut output = cuda_driver::HostBuffer::<f32>::new(&context, 4).unwrap();
        let device = DeviceBuffer::<f32>::zeroed(&context, 4).unwrap();
        let too_small = DeviceBuffer::<f32>::zeroed(&context, 2).unwrap();
        {
            let mut graph = Graph::new(&context).unwrap();
            let mut nodes = graph.nodes();
            let up = nodes.memcpy_from_host(&[], &device, &input).unwrap();
            nodes.memcpy_to_host(&[up], &mut output, &device).unwrap();
            let before = fake.calls();
            assert_invalid(graph.nodes().memcpy_from_host(&[], &too_small, &input), "does not fit");
            assert_eq!(fake.calls(), before);
            let exec = graph.instantiate().unwrap();
            // SAFETY: no kernels.
            unsafe { exec.launch(&stream).unwrap() };
            // Dropping the executable graph waits for the launch: the host memory's borrow ends.
        }
        assert_eq!(&output[..], &[1.5, 2.5, 3.5, 4.5]);
    }
    drop(context);
    assert_clean(&fake);
}

#[test]
fn a_capture_into_a_graph_ends_when_its_closure_fails_or_panics() {
    let (fake, context) = setup();
    {
        let stream = Stream::new(&context).unwrap();
        let mut graph = Graph::new(&context).unwrap();
        let failed = graph.nodes().capture(&[], &stream, CaptureMode::Global, |_| {
            Err(Error::InvalidValue("the closure's own error".into()))
        });
        assert_invalid(failed, "the closure's own error");
        assert!(!stream.is_capturing().unwrap());
        let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            graph
                .nodes()
                .capture(&[], &stream, CaptureMode::Global, |_| panic!("inside a capture"))
        }));
        assert!(panicked.is_err());
        assert!(!stream.is_capturing().unwrap());
        // The stream and the graph still work.
        let node = graph.nodes().empty(&[]).unwrap();
        assert_eq!(graph.created_nodes(), [node]);
    }
    drop(context);
    assert_clean(&fake);
}

#[test]
fn a_capture_into_a_graph_that_its_closure_swaps_for_a_plain_one_leaks_no_graph() {
    let (fake, context) = setup();
    {
        let stream = Stream::new(&context).unwrap();
        let mut graph = Graph::new(&context).unwrap();
        // The closure ends the capture into `graph` (refused: it hands out nothing) and begins a
        // plain one, whose graph the driver hands to the end of `capture`.
        let swapped = graph.nodes().capture(&[], &stream, CaptureMode::Global, |stream| {
            assert!(stream.end_capture().is_err());
            stream.begin_capture(CaptureMode::Global)
        });
        assert_invalid(swapped, "another graph");
        assert!(!stream.is_capturing().unwrap());
    }
    drop(context);
    assert_clean(&fake);
}

#[test]
fn ending_a_plain_capture_as_a_conditional_body_is_refused_and_leaves_it_going() {
    let (fake, context) = setup();
    {
        let (holder, other) = (Stream::new(&context).unwrap(), Stream::new(&context).unwrap());
        holder.begin_capture(CaptureMode::ThreadLocal).unwrap();
        let condition = holder.capture_condition(Some(0)).unwrap();
        let bodies = holder.capture_conditional(&condition, ConditionalKind::If).unwrap();
        other.begin_capture(CaptureMode::ThreadLocal).unwrap();
        assert_invalid(other.end_capture_into(&bodies[0]), "not into this conditional body");
        assert!(other.is_capturing().unwrap(), "the plain capture goes on");
        drop(other.end_capture().unwrap());
        // A stream capturing nothing is refused the same way.
        assert_invalid(other.end_capture_into(&bodies[0]), "not into this conditional body");
        // A capture into one body of an if/else is not ended as the other's.
        let bodies = holder.capture_conditional(&condition, ConditionalKind::IfElse).unwrap();
        other.begin_capture_into(&bodies[0], CaptureMode::ThreadLocal).unwrap();
        assert_invalid(other.end_capture_into(&bodies[1]), "not into this conditional body");
        assert!(other.is_capturing().unwrap());
        other.end_capture_into(&bodies[0]).unwrap();
        drop(bodies);
        drop(holder.end_capture().unwrap());
    }
    drop(context);
    assert_clean(&fake);
}

/// A stream capturing in a capture this crate did not begin on it (one that joined another
/// stream's capture, as a fork does; here begun through the raw handle) holds no conditional
/// bodies: the count that keeps the holding capture from ending under a body's capture lives on
/// the stream that began it, which a joined stream does not know.
#[test]
fn conditional_bodies_are_appended_only_from_the_stream_that_began_the_capture() {
    let (fake, context) = setup();
    {
        let (root, joined) = (Stream::new(&context).unwrap(), Stream::new(&context).unwrap());
        root.begin_capture(CaptureMode::Relaxed).unwrap();
        let driver = cuda_sys::driver().unwrap();
        // SAFETY: `joined` is alive; its capture is ended below through the same handle.
        let raw = unsafe { joined.as_raw() };
        let mode = cuda_sys::driver::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_RELAXED;
        // SAFETY: as above.
        let begun = unsafe { driver.cuStreamBeginCapture_v2().unwrap()(raw, mode) };
        assert_eq!(begun, cuda_sys::driver::CUresult::CUDA_SUCCESS);
        let condition = joined.capture_condition(Some(0)).unwrap();
        assert_invalid(
            joined.capture_conditional(&condition, ConditionalKind::If).map(drop),
            "began the capture",
        );
        let mut graph = std::ptr::null_mut();
        // SAFETY: as above; the graph the driver hands out is destroyed at once.
        unsafe {
            assert_eq!(
                driver.cuStreamEndCapture().unwrap()(raw, &mut graph),
                cuda_sys::driver::CUresult::CUDA_SUCCESS
            );
            assert_eq!(
                driver.cuGraphDestroy().unwrap()(graph),
                cuda_sys::driver::CUresult::CUDA_SUCCESS
            );
        }
        let condition = root.capture_condition(Some(0)).unwrap();
        assert_eq!(
            root.capture_conditional(&condition, ConditionalKind::If).unwrap().len(),
            1
        );
        drop(root.end_capture().unwrap());
    }
    drop(context);
    assert_clean(&fake);
}

#[test]
fn conditional_nodes_follow_conditions_set_by_kernels() {
    let (fake, context) = setup();
    {
        let stream = Stream::new(&context).unwrap();
        let module = Module::from_ptx(&context, fake::KERNELS).unwrap();
        let (countdown, fill) = (module.function("countdown").unwrap(), module.function("fill").unwrap());
        let counter = DeviceBuffer::from_slice(&context, &[5i32]).unwrap();
        let out = DeviceBuffer::<f32>::zeroed(&context, N as usize).unwrap();
        let one = LaunchConfig::for_num_elems(1);
        // while (condition) countdown: five runs from 5, the condition 1 at each launch's start.
        let mut graph = Graph::new(&context).unwrap();
        let mut nodes = graph.nodes();
        let handle = nodes.condition_handle(Some(1)).unwrap();
        nodes
            .conditional(&[], &handle, ConditionalKind::While, |_, body| {
                // SAFETY: `countdown` updates one int of `counter`.
                unsafe {
                    body.kernel(
                        &[],
                        &countdown,
                        &one,
                        GraphArgs::new().condition(&handle).write(&counter),
                    )
                }
                .map(|_| ())
            })
            .unwrap();
        let exec = graph.instantiate().unwrap();
        // SAFETY: as above.
        unsafe { exec.launch(&stream).unwrap() };
        stream.synchronize().unwrap();
        assert_eq!(counter.to_vec().unwrap(), [0]);
        // The default starts the next launch again: one run more, down to -1.
        // SAFETY: as above.
        unsafe { exec.launch(&stream).unwrap() };
        stream.synchronize().unwrap();
        assert_eq!(counter.to_vec().unwrap(), [-1]);
        drop(exec);
        drop(graph);
        // if/else and switch on a default: the bodies that run fill with their index.
        for (kind, value, expected) in [
            (ConditionalKind::IfElse, 1, 0.0),
            (ConditionalKind::IfElse, 0, 1.0),
            (ConditionalKind::Switch(3), 2, 2.0),
            (ConditionalKind::Switch(3), 7, -1.0),
        ] {
            let mut graph = Graph::new(&context).unwrap();
            let mut nodes = graph.nodes();
            let cleared = nodes.memset(&[], &out, MemsetValue::U32((-1.0f32).to_bits())).unwrap();
            let handle = nodes.condition_handle(Some(value)).unwrap();
            nodes
                .conditional(&[cleared], &handle, kind, |index, body| {
                    // SAFETY: `fill` writes N floats of `out`.
                    unsafe {
                        body.kernel(
                            &[],
                            &fill,
                            &LaunchConfig::for_num_elems(N),
                            GraphArgs::new().write(&out).value(index as f32).value(N),
                        )
                    }
                    .map(|_| ())
                })
                .unwrap();
            let exec = graph.instantiate().unwrap();
            // SAFETY: as above.
            unsafe { exec.launch(&stream).unwrap() };
            stream.synchronize().unwrap();
            assert_eq!(out.to_vec().unwrap()[N as usize - 1], expected, "{kind:?} on {value}");
        }
    }
    drop(context);
    assert_clean(&fake);
}

#[test]
fn bodies_refuse_nodes_and_handles_the_driver_refuses() {
    let (fake, context) = setup();
    {
        let module = Module::from_ptx(&context, fake::KERNELS).unwrap();
        let countdown = module.function("countdown").unwrap();
        let counter = DeviceBuffer::from_slice(&context, &[1i32]).unwrap();
        let event = Event::new(&context, EventFlags::DEFAULT).unwrap();
        let one = LaunchConfig::for_num_elems(1);
        let mut other = Graph::new(&context).unwrap();
        let foreign = other.nodes().condition_handle(None).unwrap();
        let mut child = Graph::new(&context).unwrap();
        child.nodes().host_function(&[], || {}).unwrap();
        let mut graph = Graph::new(&context).unwrap();
        let mut nodes = graph.nodes();
        let handle = nodes.condition_handle(None).unwrap();
        let calls = fake.calls();
        assert!(matches!(
            nodes.conditional(&[], &foreign, ConditionalKind::If, |_, _| Ok(())),
            Err(Error::WrongGraph {
                object: "condition handle"
            })
        ));
        // SAFETY: refused before anything is added.
        let setter = unsafe {
            nodes.kernel(
                &[],
                &countdown,
                &one,
                GraphArgs::new().condition(&foreign).write(&counter),
            )
        };
        assert!(
            matches!(
                setter,
                Err(Error::WrongGraph {
                    object: "condition handle"
                })
            ),
            "{setter:?}"
        );
        assert_invalid(
            nodes.conditional(&[], &handle, ConditionalKind::Switch(0), |_, _| Ok(())),
            "at least one body",
        );
        let refused_calls = fake.calls() - calls;
        let outer = nodes.empty(&[]).unwrap();
        let mut seen = Vec::new();
        nodes
            .conditional(&[outer], &handle, ConditionalKind::If, |_, body| {
                seen.push(matches!(
                    body.host_function(&[], || {}),
                    Err(Error::NotInConditionalBody { node: "host function" })
                ));
                seen.push(matches!(
                    body.event_record(&[], &event),
                    Err(Error::NotInConditionalBody { node: "event record" })
                ));
                seen.push(matches!(
                    body.event_wait(&[], &event),
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
                seen.push(matches!(
                    body.empty(&[outer]),
                    Err(Error::WrongGraph { object: "dependency" })
                ));
                seen.push(matches!(
                    body.conditional(&[], &handle, ConditionalKind::If, |_, _| Ok(())),
                    Err(Error::WrongGraph {
                        object: "condition handle"
                    })
                ));
                // The enclosing graph's handle may be set by a kernel of the body.
                // SAFETY: `countdown` updates one int of `counter`.
                unsafe {
                    body.kernel(
                        &[],
                        &countdown,
                        &one,
                        GraphArgs::new().condition(&handle).write(&counter),
                    )
                }
                .map(|_| ())
            })
            .unwrap();
        assert_eq!(seen, [true; 7]);
        // Two refusals asked the context's limits and the kernel's attributes at most; none added.
        assert!(refused_calls <= 20, "{refused_calls} calls");
        assert_eq!(graph.node_count().unwrap(), 2);
    }
    drop(context);
    assert_clean(&fake);
}
