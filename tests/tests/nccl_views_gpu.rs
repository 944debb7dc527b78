//! NCCL with `DeviceArray`s on one GPU (a one-rank communicator): pooled arrays work in a group,
//! and every collective refuses, with a typed error before NCCL is called, an array view that is
//! not one dense range (strided, reversed, transposed, broadcast), as send or receive buffer, in
//! place, and in a group; the memory stays untouched. Without a GPU or NCCL each test prints
//! `skipped:` and passes, unless `CUDA_REQUIRE_GPU=1`. This binary never loads the stand-in
//! driver.

use cuda_core::{DeviceArray, Slice};
use cuda_driver::{Context, Device, Stream};
use cuda_libs::nccl::{self, Communicator, ReduceOp};
use cuda_libs::Error;

/// Elements of every buffer (a one-rank communicator's gathered and scattered sides hold as
/// many).
const N: usize = 4096;

/// Device 0's primary context with a one-rank communicator and a stream, or `None` after
/// printing why the test is skipped (a panic under `CUDA_REQUIRE_GPU=1`).
fn one_rank_or_skip(test: &str) -> Option<(Context, Vec<Communicator>, Stream)> {
    // NVLink SHARP (multicast) stays off; set before NCCL reads its environment.
    if std::env::var_os("NCCL_NVLS_ENABLE").is_none() {
        std::env::set_var("NCCL_NVLS_ENABLE", "0");
    }
    let context = Device::all()
        .map_err(Error::from)
        .and_then(|devices| match devices.first() {
            Some(device) => device.primary_context().map_err(Error::from),
            None => Err(Error::InvalidValue("the driver reports no device".into())),
        })
        .and_then(|context| nccl::load().map(|()| context));
    match context {
        Ok(context) => {
            let comms = Communicator::init_all(std::slice::from_ref(&context)).expect("init_all");
            let stream = Stream::new(&context).expect("stream");
            Some((context, comms, stream))
        }
        Err(error) if std::env::var("CUDA_REQUIRE_GPU").as_deref() == Ok("1") => {
            panic!("{test}: CUDA_REQUIRE_GPU=1 but there is no usable GPU with NCCL: {error}")
        }
        Err(error) => {
            println!("skipped: {test}: no usable GPU with NCCL ({error})");
            None
        }
    }
}

/// `len` values that differ from element to element (exact in f32).
fn ramp(len: usize) -> Vec<f32> {
    (0..len).map(|i| (i % 4093) as f32 + 1.0).collect()
}

#[test]
fn pooled_arrays_work_in_a_group() {
    let Some((_context, comms, stream)) = one_rank_or_skip("pooled_arrays_work_in_a_group") else {
        return;
    };
    let comm = &comms[0];
    let send = DeviceArray::from_slice(&stream, &ramp(N)).unwrap();
    let mut reduced = DeviceArray::<f32>::zeros(&stream, N).unwrap();
    let mut received = DeviceArray::<f32>::zeros(&stream, N).unwrap();
    nccl::group(|g| {
        g.all_reduce::<f32>(comm, &send, &mut reduced, N, ReduceOp::Sum, &stream)?;
        g.send::<f32>(comm, &send, N, 0, &stream)?;
        g.recv::<f32>(comm, &mut received, N, 0, &stream)?;
        Ok(())
    })
    .expect("a group of pooled arrays");
    assert_eq!(reduced.to_vec().unwrap(), ramp(N));
    assert_eq!(received.to_vec().unwrap(), ramp(N));
}

/// `result` is the contract's typed refusal (`NotDense`), raised before NCCL was called.
fn refused(what: &str, result: cuda_libs::Result<()>) {
    match result {
        Ok(()) => panic!("{what}: accepted"),
        Err(error @ Error::Driver(cuda_driver::Error::NotDense { .. })) => println!("{what}: {error}"),
        Err(error) => panic!("{what}: not refused as NotDense: {error}"),
    }
}

#[test]
fn every_collective_refuses_views_that_are_not_one_dense_range() {
    let Some((_context, comms, stream)) =
        one_rank_or_skip("every_collective_refuses_views_that_are_not_one_dense_range")
    else {
        return;
    };
    let comm = &comms[0];
    let original = ramp(2 * N);
    let base = DeviceArray::from_slice(&stream, &original).unwrap();
    let one = DeviceArray::from_slice(&stream, &[5.0f32]).unwrap();
    // Each view has N elements over `base`'s storage (or `one`'s).
    let mut views: Vec<(&str, DeviceArray<f32>)> = vec![
        ("strided", base.slice(&[Slice::from(..).step(2)]).unwrap()),
        ("reversed", base.slice(&[Slice::from(0..N).step(-1)]).unwrap()),
        (
            "transposed",
            base.slice(&[Slice::from(0..N)])
                .unwrap()
                .reshape_view([32, N / 32])
                .unwrap()
                .transpose(),
        ),
        ("broadcast", one.broadcast_to(N).unwrap()),
    ];
    let source = DeviceArray::from_slice(&stream, &vec![-1.0f32; N]).unwrap();
    let mut out = DeviceArray::<f32>::zeros(&stream, N).unwrap();
    let (sum, s) = (ReduceOp::Sum, &stream);
    for (name, view) in &mut views {
        assert_eq!(view.len(), N, "{name}");
        // The view as the send buffer.
        refused(
            &format!("all_reduce from {name}"),
            comm.all_reduce::<f32>(view, &mut out, N, sum, s),
        );
        refused(
            &format!("reduce from {name}"),
            comm.reduce::<f32>(view, &mut out, N, sum, 0, s),
        );
        refused(
            &format!("broadcast from {name}"),
            comm.broadcast::<f32>(view, &mut out, N, 0, s),
        );
        refused(
            &format!("all_gather from {name}"),
            comm.all_gather::<f32>(view, &mut out, N, s),
        );
        refused(
            &format!("reduce_scatter from {name}"),
            comm.reduce_scatter::<f32>(view, &mut out, N, sum, s),
        );
        refused(
            &format!("send from {name}"),
            nccl::group(|g| {
                g.send::<f32>(comm, &*view, N, 0, s)?;
                g.recv::<f32>(comm, &mut out, N, 0, s)
            }),
        );
        refused(
            &format!("all_reduce from {name} in a group"),
            nccl::group(|g| g.all_reduce::<f32>(comm, &*view, &mut out, N, sum, s)),
        );
        // The view as the receive buffer, out of place and in place.
        refused(
            &format!("all_reduce into {name}"),
            comm.all_reduce::<f32>(&source, view, N, sum, s),
        );
        refused(
            &format!("reduce into {name}"),
            comm.reduce::<f32>(&source, view, N, sum, 0, s),
        );
        refused(
            &format!("broadcast into {name}"),
            comm.broadcast::<f32>(&source, view, N, 0, s),
        );
        refused(
            &format!("all_gather into {name}"),
            comm.all_gather::<f32>(&source, view, N, s),
        );
        refused(
            &format!("reduce_scatter into {name}"),
            comm.reduce_scatter::<f32>(&source, view, N, sum, s),
        );
        refused(
            &format!("all_reduce in place in {name}"),
            comm.all_reduce_in_place::<f32>(view, N, sum, s),
        );
        refused(
            &format!("reduce in place in {name}"),
            comm.reduce_in_place::<f32>(view, N, sum, 0, s),
        );
        refused(
            &format!("broadcast in place in {name}"),
            comm.broadcast_in_place::<f32>(view, N, 0, s),
        );
        refused(
            &format!("all_gather in place in {name}"),
            comm.all_gather_in_place::<f32>(view, N, s),
        );
        refused(
            &format!("reduce_scatter in place in {name}"),
            comm.reduce_scatter_in_place::<f32>(view, N, sum, s),
        );
        refused(
            &format!("recv into {name}"),
            nccl::group(|g| {
                g.send::<f32>(comm, &source, N, 0, s)?;
                g.recv::<f32>(comm, &mut *view, N, 0, s)
            }),
        );
        refused(
            &format!("all_reduce into {name} in a group"),
            nccl::group(|g| g.all_reduce::<f32>(comm, &source, &mut *view, N, sum, s)),
        );
    }
    // Nothing was written: the views' storage and the dense output are as they were.
    stream.synchronize().unwrap();
    assert_eq!(base.to_vec().unwrap(), original, "a view's storage was written");
    assert_eq!(one.to_vec().unwrap(), [5.0], "the broadcast view's element was written");
    assert_eq!(out.to_vec().unwrap(), vec![0.0; N], "data from a refused view arrived");
}
