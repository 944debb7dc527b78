//! cuda-core's `GraphBuilder` and `CapturedStep` against the stand-in driver: a builder's life
//! (idle, building, ended) with calls out of turn refused before the driver is asked, captures
//! ended on every path (a failing closure, a dropped builder), host waits on a capturing stream
//! refused with `Error::HostWaitInCapture` naming the call while the capture stays valid, a graph
//! launched on another context's stream refused, a captured step's inputs checked and its
//! replays following new input contents without calling its closure; a `while`
//! body captured by the builder running until its kernel clears the condition, the holding
//! capture's end refused while the body builds, conditions of another capture and bodies of an
//! ended capture refused, with no handle left behind.

use cuda_core::graph::{CaptureMode, CapturedStep, GraphBuilder};
use cuda_core::{DeviceArray, Error, Stream};
use cuda_driver::{Context, ContextFlags, Device};
use tests::checks::setup;
use tests::fake::Session;

#[track_caller]
fn assert_invalid<T: std::fmt::Debug>(result: cuda_core::Result<T>, mentions: &str) {
    match result {
        Err(Error::InvalidValue(message)) => assert!(message.contains(mentions), "{message:?} lacks {mentions:?}"),
        other => panic!("expected InvalidValue mentioning {mentions:?}, got {other:?}"),
    }
}

#[test]
fn a_builder_refuses_calls_out_of_turn() {
    let (_fake, context) = setup();
    let stream = Stream::new(&context).unwrap();
    let mut builder = GraphBuilder::new(&stream);
    assert!(!builder.is_building().unwrap());
    assert!(!builder.is_join_required());
    assert_invalid(builder.complete(), "holds no graph");
    assert_invalid(builder.end_building().map(drop), "not building");
    assert_invalid(builder.fork(1), "fork needs a graph builder that is building");
    assert_invalid(builder.create_condition(None), "create_condition");
    builder.begin_building(CaptureMode::ThreadLocal).unwrap();
    assert!(builder.is_building().unwrap() && stream.is_capturing().unwrap());
    assert_invalid(
        builder.begin_building(CaptureMode::ThreadLocal).map(drop),
        "already building",
    );
    assert_invalid(builder.fork(0), "at least one");
    builder.end_building().unwrap();
    assert!(!builder.is_building().unwrap() && !stream.is_capturing().unwrap());
    assert_invalid(
        builder.begin_building(CaptureMode::ThreadLocal).map(drop),
        "builds once",
    );
    let graph = builder.complete().unwrap();
    graph.upload(&stream).unwrap();
    // SAFETY: the graph is empty.
    unsafe { graph.launch(&stream).unwrap() };
    stream.synchronize().unwrap();
}

#[test]
fn captures_end_on_every_path() {
    let (_fake, context) = setup();
    let stream = Stream::new(&context).unwrap();
    let mut builder = GraphBuilder::new(&stream);
    let failed = builder.build(CaptureMode::ThreadLocal, |_| {
        Err(Error::InvalidValue("the closure's own".into()))
    });
    assert_invalid(failed.map(drop), "the closure's own");
    assert!(!stream.is_capturing().unwrap(), "a failing closure ends the capture");
    assert_invalid(builder.complete(), "holds no graph");
    let mut dropped = GraphBuilder::new(&stream);
    dropped.begin_building(CaptureMode::Global).unwrap();
    drop(dropped);
    assert!(!stream.is_capturing().unwrap(), "a dropped builder ends its capture");
    let mut again = GraphBuilder::new(&stream);
    again.build(CaptureMode::Relaxed, |_| Ok(())).unwrap();
    again.complete().unwrap();
}

#[test]
fn host_waits_on_a_capturing_stream_are_typed_errors_naming_the_call() {
    let (_fake, context) = setup();
    let stream = Stream::new(&context).unwrap();
    let x = DeviceArray::from_slice(&stream, &[1.0f32, 2.0, 3.0]).unwrap();
    let mut y = DeviceArray::from_slice(&stream, &[0.0f32; 3]).unwrap();
    let mut builder = GraphBuilder::new(&stream);
    builder
        .build(CaptureMode::ThreadLocal, |_| {
            let wait = |result: cuda_core::Result<()>| match result {
                Err(Error::HostWaitInCapture { call }) => call,
                other => panic!("expected HostWaitInCapture, got {other:?}"),
            };
            assert_eq!(wait(x.to_vec().map(drop)), "to_vec");
            assert_eq!(wait(x.copy_to_host(&mut [0.0; 3])), "copy_to_host");
            assert_eq!(wait(y.copy_from_host(&[4.0, 5.0, 6.0])), "copy_from_host");
            let message = Error::HostWaitInCapture { call: "to_vec" }.to_string();
            assert!(message.contains("to_vec") && message.contains("capture"), "{message}");
            Ok(())
        })
        .unwrap();
    // The refusals queued nothing: the capture ended valid, with no node.
    assert_eq!(builder.graph().unwrap().node_count().unwrap(), 0);
    assert_eq!(x.to_vec().unwrap(), [1.0, 2.0, 3.0]);
}

#[test]
fn a_graph_on_another_contexts_stream_is_refused() {
    let (_fake, context) = setup();
    let stream = Stream::new(&context).unwrap();
    let mut builder = GraphBuilder::new(&stream);
    builder.build(CaptureMode::ThreadLocal, |_| Ok(())).unwrap();
    let graph = builder.complete().unwrap();
    let own = Context::new(&Device::get(0).unwrap(), ContextFlags::SCHED_AUTO).unwrap();
    let foreign = Stream::new(&own).unwrap();
    // SAFETY: refused before anything runs.
    let launched = unsafe { graph.launch(&foreign) };
    assert!(
        matches!(launched, Err(Error::Driver(cuda_driver::Error::WrongContext { .. }))),
        "{launched:?}"
    );
    assert!(matches!(
        graph.upload(&foreign),
        Err(Error::Driver(cuda_driver::Error::WrongContext { .. }))
    ));
}

#[test]
fn a_captured_step_checks_its_inputs_before_anything_runs() {
    let (_fake, context) = setup();
    let stream = Stream::new(&context).unwrap();
    let x = DeviceArray::from_slice(&stream, &[1.0f32, 2.0, 3.0]).unwrap();
    let calls = std::cell::Cell::new(0);
    // SAFETY: the closure reaches no array but its inputs.
    let mut step = unsafe {
        CapturedStep::new(&stream, &[&x], |_inputs: &[DeviceArray<f32>]| {
            calls.set(calls.get() + 1);
            Ok(Vec::new())
        })
    }
    .unwrap();
    assert_eq!(
        step.inputs()[0].to_vec().unwrap(),
        [1.0, 2.0, 3.0],
        "inputs are copied in"
    );
    assert_invalid(step.run(&[]).map(drop), "0 inputs given, it was made with 1");
    let longer = DeviceArray::from_slice(&stream, &[1.0f32, 2.0, 3.0, 4.0]).unwrap();
    assert_invalid(step.run(&[&longer]).map(drop), "has shape [4]");
    assert_eq!(calls.get(), 0, "refused before the closure runs");
    assert!(!step.is_recorded() && step.replays() == 0);
}

/// Asserts that the stand-in holds no more live handles than `before` (other tests of the
/// binary leave cached pool blocks behind) and saw no misuse.
#[track_caller]
fn assert_no_new_handles(fake: &Session, before: &tests::fake::Counts) {
    let after = fake.counts();
    assert_eq!(after.live, before.live, "{after}\ncalls: {}", fake.trace());
    assert_eq!(
        (after.double_frees, after.invalid_handles, after.orphaned),
        (0, 0, 0),
        "{after}"
    );
}

/// The stand-in's `countdown` kernel as a cuda-core kernel.
fn countdown() -> cuda_core::Kernel {
    let code = cuda_core::ObjectCode::from_ptx(tests::fake::KERNELS.as_bytes().to_vec()).unwrap();
    code.get_kernel_on(&cuda_core::Device::new(0).unwrap(), "countdown")
        .unwrap()
}

#[test]
fn a_while_body_runs_until_its_kernel_clears_the_condition() {
    let (fake, context) = setup();
    let before = fake.counts();
    {
        let stream = Stream::new(&context).unwrap();
        let countdown = countdown();
        let mut counter = cuda_driver::DeviceBuffer::from_slice(&context, &[3i32]).unwrap();
        let one = cuda_core::LaunchConfig::for_num_elems(1);
        let mut builder = GraphBuilder::new(&stream);
        builder.begin_building(CaptureMode::ThreadLocal).unwrap();
        let capture = stream.capture_id().unwrap();
        assert!(capture.is_some());
        let condition = builder.create_condition(Some(1)).unwrap();
        let mut body = builder.while_(&condition).unwrap();
        assert!(!body.is_join_required());
        body.begin_building(CaptureMode::ThreadLocal).unwrap();
        // SAFETY: `countdown` updates the one int of `counter`, which outlives the launches.
        unsafe {
            body.launch(&one, &countdown, (condition.value(), &mut counter))
                .unwrap()
        };
        // The capture that holds the body does not end under it.
        assert!(matches!(stream.end_capture(), Err(cuda_driver::Error::InvalidValue(_))));
        assert_eq!(stream.capture_id().unwrap(), capture, "still the same capture");
        body.end_building().unwrap();
        drop(body);
        builder.end_building().unwrap();
        let graph = builder.complete().unwrap();
        // SAFETY: as above.
        unsafe {
            graph.launch(&stream).unwrap();
            graph.launch(&stream).unwrap();
        }
        stream.synchronize().unwrap();
        // Three turns from 3, then (the condition 1 again at the launch's start) one more.
        assert_eq!(counter.to_vec().unwrap(), [-1]);
    }
    assert_no_new_handles(&fake, &before);
}

#[test]
fn conditions_of_another_capture_and_bodies_of_an_ended_one_are_refused() {
    let (fake, context) = setup();
    let before = fake.counts();
    {
        let (first, second) = (Stream::new(&context).unwrap(), Stream::new(&context).unwrap());
        let mut a = GraphBuilder::new(&first);
        let mut b = GraphBuilder::new(&second);
        a.begin_building(CaptureMode::ThreadLocal).unwrap();
        b.begin_building(CaptureMode::ThreadLocal).unwrap();
        let foreign = a.create_condition(Some(0)).unwrap();
        let refused = b.if_(&foreign).map(drop);
        assert!(
            matches!(refused, Err(Error::Driver(cuda_driver::Error::WrongGraph { .. }))),
            "{refused:?}"
        );
        let mut body = a.if_(&foreign).unwrap();
        // The capture that holds the body ends (through its stream) before the body begins.
        drop(first.end_capture().unwrap());
        let refused = body.begin_building(CaptureMode::ThreadLocal).map(drop);
        assert!(
            matches!(&refused, Err(Error::Driver(cuda_driver::Error::InvalidValue(m))) if m.contains("has ended")),
            "{refused:?}"
        );
        drop(body);
        b.end_building().unwrap();
    }
    assert_no_new_handles(&fake, &before);
}

#[test]
fn a_captured_step_replays_with_its_inputs_rebound() {
    let (_fake, context) = setup();
    let stream = Stream::new(&context).unwrap();
    let first = DeviceArray::from_slice(&stream, &[1.0f32, 2.0, 3.0]).unwrap();
    let calls = std::cell::Cell::new(0);
    // SAFETY: the closure reaches no array but its inputs.
    let mut step = unsafe {
        CapturedStep::new(&stream, &[&first], |inputs: &[DeviceArray<f32>]| {
            calls.set(calls.get() + 1);
            Ok(vec![inputs[0].reshape([3, 1])?])
        })
    }
    .unwrap();
    let out = step.run(&[&first]).unwrap();
    assert_eq!(
        (out[0].shape(), out[0].to_vec().unwrap()),
        (&[3, 1][..], vec![1.0, 2.0, 3.0])
    );
    assert!(step.is_recorded());
    assert_eq!(calls.get(), 2, "run eagerly, then captured");
    for k in 0..3 {
        let values = [k as f32, 10.0 + k as f32, -(k as f32)];
        let x = DeviceArray::from_slice(&stream, &values).unwrap();
        assert_eq!(step.run(&[&x]).unwrap()[0].to_vec().unwrap(), values, "replay {k}");
    }
    assert_eq!((calls.get(), step.replays()), (2, 3), "replays do not call the closure");
}

#[test]
fn a_body_ended_through_its_stream_stays_its_graphs() {
    let (fake, context) = setup();
    let before = fake.counts();
    {
        let stream = Stream::new(&context).unwrap();
        let countdown = countdown();
        let mut counter = cuda_driver::DeviceBuffer::from_slice(&context, &[2i32]).unwrap();
        let one = cuda_core::LaunchConfig::for_num_elems(1);
        let mut builder = GraphBuilder::new(&stream);
        builder.begin_building(CaptureMode::ThreadLocal).unwrap();
        let condition = builder.create_condition(Some(1)).unwrap();
        let mut body = builder.while_(&condition).unwrap();
        body.begin_building(CaptureMode::ThreadLocal).unwrap();
        // SAFETY: `countdown` updates the one int of `counter`, which outlives the launches.
        unsafe {
            body.launch(&one, &countdown, (condition.value(), &mut counter))
                .unwrap()
        };
        // A plain end of the body's capture hands out no graph (the body is its node's) ...
        let ended = body.stream().end_capture().map(drop);
        assert!(matches!(ended, Err(cuda_driver::Error::InvalidValue(_))), "{ended:?}");
        assert!(!body.stream().is_capturing().unwrap());
        // ... and the builder's own end finds it over.
        assert!(body.end_building().is_err());
        drop(body);
        builder.end_building().unwrap();
        let graph = builder.complete().unwrap();
        // SAFETY: as above.
        unsafe { graph.launch(&stream).unwrap() };
        stream.synchronize().unwrap();
        assert_eq!(counter.to_vec().unwrap(), [0], "the body ran from 2 down to 0");
    }
    assert_no_new_handles(&fake, &before);
}

/// Generated kernels stay loaded while a graph builder lives, not only once its graph is
/// complete: array work captured on a fork is kept by the kernel registry alone, and the graph
/// a builder captured waits in it until `complete` instantiates it.
#[test]
fn generated_kernels_stay_loaded_while_a_builder_lives() {
    if !tests::checks::nvrtc_available("generated kernels under a graph builder") {
        return;
    }
    let (fake, context) = setup();
    // The stand-in loads PTX only, and runs the generated kernel as a no-op.
    cuda_core::load_generated_as_ptx(true);
    fake.set_bodiless_kernels_noop(true);
    let stream = Stream::new(&context).unwrap();
    let x = DeviceArray::from_slice(&stream, &[1.0f32, 2.0, 3.0]).unwrap();
    let mut y = DeviceArray::<f32>::zeros(&stream, [3]).unwrap();
    y.assign(&x * 2.0f32 + 0.5f32).unwrap();
    stream.synchronize().unwrap();
    let loaded = || fake.live(tests::fake::Kind::Module) + fake.live(tests::fake::Kind::Library);
    let with_kernel = loaded();
    assert!(with_kernel > 0, "the expression's kernel is loaded");
    let mut builder = GraphBuilder::new(&stream);
    builder.build(CaptureMode::ThreadLocal, |_| Ok(())).unwrap();
    cuda_core::unload_generated_kernels();
    assert_eq!(
        loaded(),
        with_kernel,
        "unloaded while a builder holds its captured graph"
    );
    let graph = builder.complete().unwrap();
    drop(builder);
    cuda_core::unload_generated_kernels();
    assert_eq!(loaded(), with_kernel, "unloaded while the graph lives");
    drop(graph);
}
