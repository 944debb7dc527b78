//! NCCL on the GPU against a host reference: every collective, in place and out of place, every
//! element type and reduction, on a one-rank communicator and on one over every device present
//! (one thread driving them all, in groups), so the same binary checks 2+ GPUs unchanged. Each
//! test prints `skipped:` without a GPU or without NCCL, and fails instead under
//! `CUDA_REQUIRE_GPU=1`. Runs keep NVLink SHARP off (`NCCL_NVLS_ENABLE=0`).

use std::time::{Duration, Instant};

use cuda_driver::{Context, ContextFlags, Device, DeviceBuffer, Stream};
use cuda_libs::nccl::{self, Communicator, NcclType, ReduceOp, UniqueId};
use cuda_libs::Error;
use half::{bf16, f16};

/// The primary context of every device, with NCCL loaded, or `None` after printing why the test
/// is skipped (a panic under `CUDA_REQUIRE_GPU=1`).
fn contexts_or_skip(test: &str) -> Option<Vec<Context>> {
    // NVLink SHARP (multicast) stays off; set before NCCL reads its environment.
    if std::env::var_os("NCCL_NVLS_ENABLE").is_none() {
        std::env::set_var("NCCL_NVLS_ENABLE", "0");
    }
    let contexts = Device::all()
        .map_err(Error::from)
        .and_then(|devices| match devices.len() {
            0 => Err(Error::InvalidValue("the driver reports no device".into())),
            _ => Ok(devices),
        })
        .and_then(|devices| {
            devices
                .iter()
                .map(|d| d.primary_context().map_err(Error::from))
                .collect::<Result<Vec<_>, _>>()
        })
        .and_then(|contexts| nccl::load().map(|()| contexts));
    match contexts {
        Ok(contexts) => Some(contexts),
        Err(error) if std::env::var("CUDA_REQUIRE_GPU").as_deref() == Ok("1") => {
            panic!("{test}: CUDA_REQUIRE_GPU=1 but there is no usable GPU with NCCL: {error}")
        }
        Err(error) => {
            println!("skipped: {test}: no usable GPU with NCCL ({error})");
            None
        }
    }
}

/// The element types as the host reference sees them.
trait Host: NcclType + PartialEq + std::fmt::Debug {
    /// `value` as this type (integers wrap, as NCCL's integer arithmetic does).
    fn from_i64(value: i64) -> Self;
    /// `value` as this type, for float averages.
    fn from_f64(value: f64) -> Self;
    fn to_f64(self) -> f64;
    const FLOAT: bool;
    /// Relative tolerance of a float average.
    const TOLERANCE: f64;
}

macro_rules! host_int {
    ($($ty:ty),*) => {$(
        impl Host for $ty {
            fn from_i64(value: i64) -> Self {
                value as $ty
            }
            fn from_f64(value: f64) -> Self {
                value as $ty
            }
            fn to_f64(self) -> f64 {
                self as f64
            }
            const FLOAT: bool = false;
            const TOLERANCE: f64 = 0.0;
        }
    )*};
}
host_int!(i8, u8, i32, u32, i64, u64);

impl Host for f32 {
    fn from_f64(value: f64) -> Self {
        value as f32
    }
    fn from_i64(value: i64) -> Self {
        value as f32
    }
    fn to_f64(self) -> f64 {
        f64::from(self)
    }
    const FLOAT: bool = true;
    const TOLERANCE: f64 = 1e-6;
}

impl Host for f64 {
    fn from_f64(value: f64) -> Self {
        value
    }
    fn from_i64(value: i64) -> Self {
        value as f64
    }
    fn to_f64(self) -> f64 {
        self
    }
    const FLOAT: bool = true;
    const TOLERANCE: f64 = 1e-12;
}

impl Host for f16 {
    fn from_f64(value: f64) -> Self {
        f16::from_f64(value)
    }
    fn from_i64(value: i64) -> Self {
        f16::from_f64(value as f64)
    }
    fn to_f64(self) -> f64 {
        f16::to_f64(self)
    }
    const FLOAT: bool = true;
    const TOLERANCE: f64 = 2e-3;
}

impl Host for bf16 {
    fn from_f64(value: f64) -> Self {
        bf16::from_f64(value)
    }
    fn from_i64(value: i64) -> Self {
        bf16::from_f64(value as f64)
    }
    fn to_f64(self) -> f64 {
        bf16::to_f64(self)
    }
    const FLOAT: bool = true;
    const TOLERANCE: f64 = 1e-2;
}

/// Rank `rank`'s element `i`: 1 or 2, so products of up to 8 ranks stay exact in every float
/// type (integers wrap like NCCL's).
fn value(rank: usize, i: usize) -> i64 {
    ((i * 7 + rank * 3) % 2 + 1) as i64
}

/// The reduction of element `i` over `nranks` ranks, each holding `value(rank, offset + i)`.
fn reference<T: Host>(op: ReduceOp, nranks: usize, index: usize) -> T {
    let values = (0..nranks).map(|rank| value(rank, index));
    match op {
        ReduceOp::Sum => T::from_i64(values.sum()),
        ReduceOp::Prod => T::from_i64(values.fold(1i64, i64::wrapping_mul)),
        ReduceOp::Max => T::from_i64(values.max().unwrap()),
        ReduceOp::Min => T::from_i64(values.min().unwrap()),
        // Exact in f64; the device's rounding is within the type's tolerance.
        ReduceOp::Avg if T::FLOAT => T::from_f64(values.sum::<i64>() as f64 / nranks as f64),
        ReduceOp::Avg => T::from_i64(values.sum::<i64>() / nranks as i64),
    }
}

fn assert_close<T: Host>(what: &str, got: &[T], want: impl Fn(usize) -> T) {
    for (i, &g) in got.iter().enumerate() {
        let w = want(i);
        let (g64, w64) = (g.to_f64(), w.to_f64());
        let ok = if T::FLOAT {
            (g64 - w64).abs() <= T::TOLERANCE * w64.abs().max(1.0)
        } else {
            g == w
        };
        assert!(ok, "{what}: element {i} is {g:?}, expected {w:?}");
    }
}

/// One rank's buffers and stream.
struct Rank<'a> {
    comm: &'a Communicator,
    stream: Stream,
}

fn upload<T: Host>(context: &Context, data: &[T]) -> DeviceBuffer<T> {
    DeviceBuffer::from_slice(context, data).expect("upload")
}

/// Every collective for `T` over `comms` (ranks in order, one context each), against the host.
fn every_collective<T: Host>(contexts: &[Context], comms: &[Communicator]) {
    let n = comms.len();
    let count = 1000 + 3;
    let name = std::any::type_name::<T>();
    let ranks: Vec<Rank<'_>> = comms
        .iter()
        .zip(contexts)
        .map(|(comm, context)| Rank {
            comm,
            stream: Stream::new(context).expect("stream"),
        })
        .collect();
    let data = |rank: usize, len: usize| (0..len).map(|i| T::from_i64(value(rank, i))).collect::<Vec<T>>();

    for op in [
        ReduceOp::Sum,
        ReduceOp::Prod,
        ReduceOp::Max,
        ReduceOp::Min,
        ReduceOp::Avg,
    ] {
        // all_reduce, out of place and in place.
        let sends: Vec<_> = (0..n).map(|r| upload(&contexts[r], &data(r, count))).collect();
        let mut recvs: Vec<_> = (0..n)
            .map(|r| DeviceBuffer::<T>::zeroed(&contexts[r], count).unwrap())
            .collect();
        nccl::group(|g| {
            for (r, recv) in recvs.iter_mut().enumerate() {
                g.all_reduce::<T>(ranks[r].comm, &sends[r], recv, count, op, &ranks[r].stream)?;
            }
            Ok(())
        })
        .expect("all_reduce");
        let mut in_place: Vec<_> = (0..n).map(|r| upload(&contexts[r], &data(r, count))).collect();
        nccl::group(|g| {
            for (r, buffer) in in_place.iter_mut().enumerate() {
                g.all_reduce_in_place::<T>(ranks[r].comm, buffer, count, op, &ranks[r].stream)?;
            }
            Ok(())
        })
        .expect("all_reduce_in_place");
        for r in 0..n {
            ranks[r].stream.synchronize().unwrap();
            let what = format!("all_reduce {op:?} {name} rank {r}");
            assert_close(&what, &recvs[r].to_vec().unwrap(), |i| reference::<T>(op, n, i));
            assert_close(&format!("{what} in place"), &in_place[r].to_vec().unwrap(), |i| {
                reference::<T>(op, n, i)
            });
        }

        // reduce to the last rank, out of place and in place; other ranks' outputs stay 0.
        let root = n - 1;
        let mut recvs: Vec<_> = (0..n)
            .map(|r| DeviceBuffer::<T>::zeroed(&contexts[r], count).unwrap())
            .collect();
        nccl::group(|g| {
            for (r, recv) in recvs.iter_mut().enumerate() {
                g.reduce::<T>(ranks[r].comm, &sends[r], recv, count, op, root, &ranks[r].stream)?;
            }
            Ok(())
        })
        .expect("reduce");
        let mut in_place: Vec<_> = (0..n).map(|r| upload(&contexts[r], &data(r, count))).collect();
        nccl::group(|g| {
            for (r, buffer) in in_place.iter_mut().enumerate() {
                g.reduce_in_place::<T>(ranks[r].comm, buffer, count, op, root, &ranks[r].stream)?;
            }
            Ok(())
        })
        .expect("reduce_in_place");
        for r in 0..n {
            ranks[r].stream.synchronize().unwrap();
            let what = format!("reduce {op:?} {name} rank {r}");
            if r == root {
                assert_close(&what, &recvs[r].to_vec().unwrap(), |i| reference::<T>(op, n, i));
                assert_close(&format!("{what} in place"), &in_place[r].to_vec().unwrap(), |i| {
                    reference::<T>(op, n, i)
                });
            } else {
                assert_close(&what, &recvs[r].to_vec().unwrap(), |_| T::from_i64(0));
            }
        }

        // reduce_scatter: rank r's send holds count * n; its result is part r.
        let sends: Vec<_> = (0..n).map(|r| upload(&contexts[r], &data(r, count * n))).collect();
        let mut recvs: Vec<_> = (0..n)
            .map(|r| DeviceBuffer::<T>::zeroed(&contexts[r], count).unwrap())
            .collect();
        nccl::group(|g| {
            for (r, recv) in recvs.iter_mut().enumerate() {
                g.reduce_scatter::<T>(ranks[r].comm, &sends[r], recv, count, op, &ranks[r].stream)?;
            }
            Ok(())
        })
        .expect("reduce_scatter");
        let mut in_place: Vec<_> = (0..n).map(|r| upload(&contexts[r], &data(r, count * n))).collect();
        nccl::group(|g| {
            for (r, buffer) in in_place.iter_mut().enumerate() {
                g.reduce_scatter_in_place::<T>(ranks[r].comm, buffer, count, op, &ranks[r].stream)?;
            }
            Ok(())
        })
        .expect("reduce_scatter_in_place");
        for r in 0..n {
            ranks[r].stream.synchronize().unwrap();
            let what = format!("reduce_scatter {op:?} {name} rank {r}");
            assert_close(&what, &recvs[r].to_vec().unwrap(), |i| {
                reference::<T>(op, n, r * count + i)
            });
            let whole = in_place[r].to_vec().unwrap();
            assert_close(&format!("{what} in place"), &whole[r * count..(r + 1) * count], |i| {
                reference::<T>(op, n, r * count + i)
            });
        }
    }

    // broadcast from the last rank, out of place and in place.
    let root = n - 1;
    let sends: Vec<_> = (0..n).map(|r| upload(&contexts[r], &data(r, count))).collect();
    let mut recvs: Vec<_> = (0..n)
        .map(|r| DeviceBuffer::<T>::zeroed(&contexts[r], count).unwrap())
        .collect();
    let mut in_place: Vec<_> = (0..n).map(|r| upload(&contexts[r], &data(r, count))).collect();
    nccl::group(|g| {
        for (r, recv) in recvs.iter_mut().enumerate() {
            g.broadcast::<T>(ranks[r].comm, &sends[r], recv, count, root, &ranks[r].stream)?;
        }
        Ok(())
    })
    .expect("broadcast");
    nccl::group(|g| {
        for (r, buffer) in in_place.iter_mut().enumerate() {
            g.broadcast_in_place::<T>(ranks[r].comm, buffer, count, root, &ranks[r].stream)?;
        }
        Ok(())
    })
    .expect("broadcast_in_place");
    for r in 0..n {
        ranks[r].stream.synchronize().unwrap();
        let want = |i| T::from_i64(value(root, i));
        assert_close(&format!("broadcast {name} rank {r}"), &recvs[r].to_vec().unwrap(), want);
        assert_close(
            &format!("broadcast in place {name} rank {r}"),
            &in_place[r].to_vec().unwrap(),
            want,
        );
    }

    // all_gather: rank s's part of every output is s's data.
    let mut recvs: Vec<_> = (0..n)
        .map(|r| DeviceBuffer::<T>::zeroed(&contexts[r], count * n).unwrap())
        .collect();
    let mut in_place: Vec<_> = (0..n)
        .map(|r| {
            let mut whole = vec![T::from_i64(0); count * n];
            whole[r * count..(r + 1) * count].copy_from_slice(&data(r, count));
            upload(&contexts[r], &whole)
        })
        .collect();
    nccl::group(|g| {
        for (r, recv) in recvs.iter_mut().enumerate() {
            g.all_gather::<T>(ranks[r].comm, &sends[r], recv, count, &ranks[r].stream)?;
        }
        Ok(())
    })
    .expect("all_gather");
    nccl::group(|g| {
        for (r, buffer) in in_place.iter_mut().enumerate() {
            g.all_gather_in_place::<T>(ranks[r].comm, buffer, count, &ranks[r].stream)?;
        }
        Ok(())
    })
    .expect("all_gather_in_place");
    for r in 0..n {
        ranks[r].stream.synchronize().unwrap();
        let want = |i: usize| T::from_i64(value(i / count, i % count));
        assert_close(
            &format!("all_gather {name} rank {r}"),
            &recvs[r].to_vec().unwrap(),
            want,
        );
        assert_close(
            &format!("all_gather in place {name} rank {r}"),
            &in_place[r].to_vec().unwrap(),
            want,
        );
    }

    // send/recv around the ring (to itself on one rank), in one group.
    let mut recvs: Vec<_> = (0..n)
        .map(|r| DeviceBuffer::<T>::zeroed(&contexts[r], count).unwrap())
        .collect();
    nccl::group(|g| {
        for (r, recv) in recvs.iter_mut().enumerate() {
            g.send::<T>(ranks[r].comm, &sends[r], count, (r + 1) % n, &ranks[r].stream)?;
            g.recv::<T>(ranks[r].comm, recv, count, (r + n - 1) % n, &ranks[r].stream)?;
        }
        Ok(())
    })
    .expect("send/recv");
    for r in 0..n {
        ranks[r].stream.synchronize().unwrap();
        let from = (r + n - 1) % n;
        assert_close(&format!("recv {name} rank {r}"), &recvs[r].to_vec().unwrap(), |i| {
            T::from_i64(value(from, i))
        });
    }
}

fn every_type(contexts: &[Context], comms: &[Communicator]) {
    every_collective::<i8>(contexts, comms);
    every_collective::<u8>(contexts, comms);
    every_collective::<i32>(contexts, comms);
    every_collective::<u32>(contexts, comms);
    every_collective::<i64>(contexts, comms);
    every_collective::<u64>(contexts, comms);
    every_collective::<f16>(contexts, comms);
    every_collective::<bf16>(contexts, comms);
    every_collective::<f32>(contexts, comms);
    every_collective::<f64>(contexts, comms);
}

#[test]
fn one_rank_runs_every_collective_and_type() {
    let Some(contexts) = contexts_or_skip("one_rank_runs_every_collective_and_type") else {
        return;
    };
    let contexts = &contexts[..1];
    let comms = Communicator::init_all(contexts).expect("init_all");
    assert_eq!((comms[0].rank(), comms[0].count()), (0, 1));
    assert_eq!(comms[0].device(), contexts[0].device());
    let (major, minor, _) = nccl::version().expect("version");
    assert!((major, minor) >= (2, 28), "{major}.{minor}");
    every_type(contexts, &comms);
    Communicator::finalize_all(comms).expect("finalize_all");
}

#[test]
fn every_device_runs_every_collective_and_type() {
    let Some(contexts) = contexts_or_skip("every_device_runs_every_collective_and_type") else {
        return;
    };
    let comms = Communicator::init_all(&contexts).expect("init_all");
    println!("{} ranks, one per device", comms.len());
    for (r, comm) in comms.iter().enumerate() {
        assert_eq!((comm.rank(), comm.count()), (r, contexts.len()));
        assert_eq!(comm.device(), contexts[r].device());
    }
    every_type(&contexts, &comms);
    // One thread's communicators end together.
    let started = Instant::now();
    Communicator::finalize_all(comms).expect("finalize_all");
    assert!(started.elapsed() < Duration::from_secs(60), "{:?}", started.elapsed());
}

#[test]
fn init_rank_and_split_on_one_rank() {
    let Some(contexts) = contexts_or_skip("init_rank_and_split_on_one_rank") else {
        return;
    };
    let id = UniqueId::new().expect("id");
    let id = UniqueId::from_bytes(&id.to_bytes()).expect("the id's bytes");
    let comm = Communicator::init_rank(&id, 0, 1, &contexts[0]).expect("init_rank");
    assert_eq!((comm.rank(), comm.count()), (0, 1));
    comm.check().expect("healthy");
    let split = comm
        .split(Some(3), 0)
        .expect("split")
        .expect("a color gives a communicator");
    assert_eq!((split.rank(), split.count()), (0, 1));
    assert!(comm.split(None, 0).expect("split without a color").is_none());
    // The split communicator works.
    let stream = Stream::new(&contexts[0]).unwrap();
    let mut buffer = upload(&contexts[0], &[1.5f32, -2.0, 4.0]);
    split
        .all_reduce_in_place::<f32>(&mut buffer, 3, ReduceOp::Sum, &stream)
        .unwrap();
    stream.synchronize().unwrap();
    assert_eq!(buffer.to_vec().unwrap(), [1.5, -2.0, 4.0]);
}

#[test]
fn bad_arguments_are_typed_errors_before_nccl() {
    let Some(contexts) = contexts_or_skip("bad_arguments_are_typed_errors_before_nccl") else {
        return;
    };
    let context = &contexts[0];
    let comms = Communicator::init_all(&contexts[..1]).expect("init_all");
    let comm = &comms[0];
    let stream = Stream::new(context).unwrap();
    let send = upload(context, &[1.0f32; 16]);
    let mut recv = DeviceBuffer::<f32>::zeroed(context, 16).unwrap();
    let invalid = |result: cuda_libs::Result<()>, what: &str| {
        assert!(matches!(result, Err(Error::InvalidValue(_))), "{what}: {result:?}");
    };
    invalid(
        comm.all_reduce::<f32>(&send, &mut recv, 17, ReduceOp::Sum, &stream),
        "count over the buffers",
    );
    invalid(
        comm.all_reduce::<f64>(&send, &mut recv, 9, ReduceOp::Sum, &stream),
        "f64 count over f32 bytes",
    );
    invalid(
        comm.all_reduce_in_place::<f32>(&mut recv, 17, ReduceOp::Max, &stream),
        "in place",
    );
    invalid(
        comm.reduce::<f32>(&send, &mut recv, 16, ReduceOp::Sum, 1, &stream),
        "root 1 of 1",
    );
    invalid(comm.broadcast_in_place::<f32>(&mut recv, 16, 5, &stream), "root 5 of 1");
    invalid(comm.send::<f32>(&send, 16, 1, &stream), "peer 1 of 1");
    invalid(comm.recv::<f32>(&mut recv, 16, 2, &stream), "peer 2 of 1");
    invalid(
        comm.all_gather::<f32>(&send, &mut recv, 17, &stream),
        "all_gather count",
    );
    invalid(
        comm.reduce_scatter_in_place::<f32>(&mut recv, 17, ReduceOp::Sum, &stream),
        "reduce_scatter count",
    );
    // Another context on the same device: its buffers and streams are refused.
    let other = Context::new(&context.device(), ContextFlags::empty()).expect("a second context");
    let foreign = upload(&other, &[1.0f32; 16]);
    let result = comm.all_reduce::<f32>(&foreign, &mut recv, 16, ReduceOp::Sum, &stream);
    assert!(matches!(result, Err(Error::WrongContext { .. })), "{result:?}");
    let other_stream = Stream::new(&other).unwrap();
    let result = comm.all_reduce::<f32>(&send, &mut recv, 16, ReduceOp::Sum, &other_stream);
    assert!(
        matches!(result, Err(Error::WrongContext { object: "stream", .. })),
        "{result:?}"
    );
    // Nothing was queued: the output is still zero, and the communicator still works.
    assert_eq!(recv.to_vec().unwrap(), [0.0; 16]);
    comm.all_reduce::<f32>(&send, &mut recv, 16, ReduceOp::Sum, &stream)
        .unwrap();
    stream.synchronize().unwrap();
    assert_eq!(recv.to_vec().unwrap(), [1.0; 16]);
    // init_all refuses an empty list and a context listed twice.
    assert!(matches!(Communicator::init_all(&[]), Err(Error::InvalidValue(_))));
    let twice = [context.clone(), context.clone()];
    assert!(matches!(Communicator::init_all(&twice), Err(Error::InvalidValue(_))));
    let id = UniqueId::new().unwrap();
    assert!(matches!(
        Communicator::init_rank(&id, 2, 2, context),
        Err(Error::InvalidValue(_))
    ));
}

#[test]
fn a_rank_that_never_joins_is_a_timeout() {
    let Some(contexts) = contexts_or_skip("a_rank_that_never_joins_is_a_timeout") else {
        return;
    };
    let id = UniqueId::new().unwrap();
    let started = Instant::now();
    let result = Communicator::init_rank_with_timeout(&id, 0, 2, &contexts[0], Duration::from_secs(3));
    let waited = started.elapsed();
    assert!(
        matches!(
            result,
            Err(Error::Timeout {
                operation: "ncclCommInitRankConfig",
                ..
            })
        ),
        "{result:?}"
    );
    // The half-made communicator was aborted, not waited for.
    assert!(waited < Duration::from_secs(40), "{waited:?}");
}

/// Needs NCCL, not a GPU: runs wherever NCCL loads.
#[test]
fn a_unique_id_needs_no_gpu() {
    if let Err(error) = nccl::load() {
        if std::env::var_os("CUDA_NCCL_LIBRARY").is_some() || std::env::var("CUDA_REQUIRE_GPU").as_deref() == Ok("1") {
            panic!("NCCL is asked for but did not load: {error}");
        }
        println!("skipped: a_unique_id_needs_no_gpu: no NCCL ({error})");
        return;
    }
    let (first, second) = (UniqueId::new().unwrap(), UniqueId::new().unwrap());
    assert_ne!(first, second, "two ids are two bootstrap addresses");
    assert_eq!(UniqueId::from_bytes(&first.to_bytes()).unwrap(), first);
    let (major, minor, _) = nccl::version().unwrap();
    assert!((major, minor) >= (2, 28), "{major}.{minor}");
}

/// `len` values that differ from element to element (exact in f32).
fn ramp(len: usize) -> Vec<f32> {
    (0..len).map(|i| (i % 4093) as f32 + 1.0).collect()
}

/// The elements of `got` that differ from `want`.
fn differing(got: &[f32], want: &[f32]) -> usize {
    assert_eq!(got.len(), want.len());
    got.iter().zip(want).filter(|(g, w)| g != w).count()
}

/// A call after a group: a one-rank all-reduce (a copy) of `n` elements, made at once on this
/// thread, and a send/recv to itself in a group of its own; returns how many elements each
/// delivered. Both are all `n` only if no NCCL group was left open on the thread (one left
/// open defers every call to an end that never comes).
fn later_calls_deliver(comm: &Communicator, context: &Context, n: usize) -> (usize, usize) {
    let stream = Stream::new(context).unwrap();
    let want = ramp(n);
    let send = upload(context, &want);
    let mut direct = DeviceBuffer::<f32>::zeroed(context, n).unwrap();
    comm.all_reduce::<f32>(&send, &mut direct, n, ReduceOp::Sum, &stream)
        .expect("a call after the group");
    let mut received = DeviceBuffer::<f32>::zeroed(context, n).unwrap();
    nccl::group(|g| {
        g.send::<f32>(comm, &send, n, 0, &stream)?;
        g.recv::<f32>(comm, &mut received, n, 0, &stream)?;
        Ok(())
    })
    .expect("a group after the group");
    stream.synchronize().unwrap();
    (
        n - differing(&direct.to_vec().unwrap(), &want),
        n - differing(&received.to_vec().unwrap(), &want),
    )
}

#[test]
fn a_reader_on_another_stream_waits_for_the_groups_calls() {
    let Some(contexts) = contexts_or_skip("a_reader_on_another_stream_waits_for_the_groups_calls") else {
        return;
    };
    let context = &contexts[0];
    let comms = Communicator::init_all(&contexts[..1]).expect("init_all");
    let comm = &comms[0];
    let (a, b) = (Stream::new(context).unwrap(), Stream::new(context).unwrap());
    const N: usize = 4 << 20;
    let want = ramp(N);
    let send = upload(context, &want);
    let mut received = DeviceBuffer::<f32>::zeroed(context, N).unwrap();
    // `received` was last written on `b`: the receive on `a` makes the buffer shared by two
    // streams, so each use records its stream's event when it ends.
    received.memset_zero_async(&b).unwrap();
    // Keeps `a` busy, so a reader ordered only after the work queued before the receive
    // would run ahead of it.
    let big = DeviceBuffer::<f32>::zeroed(context, 64 << 20).unwrap();
    let mut scratch = DeviceBuffer::<f32>::zeroed(context, 64 << 20).unwrap();
    for _ in 0..20 {
        scratch.copy_from_device_async(&big, &a).unwrap();
    }
    nccl::group(|g| {
        g.send::<f32>(comm, &send, N, 0, &a)?;
        g.recv::<f32>(comm, &mut received, N, 0, &a)?;
        Ok(())
    })
    .expect("send/recv to itself");
    // The reader on `b` is ordered after the receive through the buffer's uses alone.
    let mut read = DeviceBuffer::<f32>::zeroed(context, N).unwrap();
    read.copy_from_device_async(&received, &b).unwrap();
    b.synchronize().unwrap();
    let stale = differing(&read.to_vec().unwrap(), &want);
    assert_eq!(stale, 0, "{stale} of {N} elements read before the receive wrote them");
    a.synchronize().unwrap();
    assert_eq!(differing(&received.to_vec().unwrap(), &want), 0);
}

#[test]
fn an_error_in_a_group_makes_none_of_its_calls() {
    let Some(contexts) = contexts_or_skip("an_error_in_a_group_makes_none_of_its_calls") else {
        return;
    };
    let context = &contexts[0];
    let comms = Communicator::init_all(&contexts[..1]).expect("init_all");
    let comm = &comms[0];
    let stream = Stream::new(context).unwrap();
    const N: usize = 1 << 20;
    let send = upload(context, &ramp(N));
    let mut recv = DeviceBuffer::<f32>::zeroed(context, N).unwrap();
    let mut other = DeviceBuffer::<f32>::zeroed(context, N).unwrap();
    // The closure's own error, after a call was queued.
    let result: cuda_libs::Result<()> = nccl::group(|g| {
        g.all_reduce::<f32>(comm, &send, &mut recv, N, ReduceOp::Sum, &stream)?;
        Err(Error::InvalidValue("the closure's own error".into()))
    });
    assert!(
        matches!(&result, Err(Error::InvalidValue(m)) if m == "the closure's own error"),
        "{result:?}"
    );
    // A check that fails on the second call: the first is not made either.
    let result = nccl::group(|g| {
        g.all_reduce::<f32>(comm, &send, &mut recv, N, ReduceOp::Sum, &stream)?;
        g.all_reduce::<f32>(comm, &send, &mut other, N + 1, ReduceOp::Sum, &stream)
    });
    assert!(matches!(result, Err(Error::InvalidValue(_))), "{result:?}");
    stream.synchronize().unwrap();
    assert_eq!(
        differing(&recv.to_vec().unwrap(), &vec![0.0; N]),
        0,
        "a call of a failed group was made"
    );
    let delivered = later_calls_deliver(comm, context, N);
    assert_eq!(delivered, (N, N), "elements delivered after the failed groups, of {N}");
}

#[test]
fn a_panic_in_a_group_makes_none_of_its_calls_and_ends_it() {
    let Some(contexts) = contexts_or_skip("a_panic_in_a_group_makes_none_of_its_calls_and_ends_it") else {
        return;
    };
    let context = &contexts[0];
    let comms = Communicator::init_all(&contexts[..1]).expect("init_all");
    let comm = &comms[0];
    let stream = Stream::new(context).unwrap();
    const N: usize = 1 << 20;
    let send = upload(context, &ramp(N));
    let mut recv = DeviceBuffer::<f32>::zeroed(context, N).unwrap();
    let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        nccl::group(|g| -> cuda_libs::Result<()> {
            g.all_reduce::<f32>(comm, &send, &mut recv, N, ReduceOp::Sum, &stream)?;
            panic!("a panic inside the group");
        })
    }));
    let payload = panicked.expect_err("the panic goes on out of the group");
    assert_eq!(payload.downcast_ref::<&str>(), Some(&"a panic inside the group"));
    stream.synchronize().unwrap();
    assert_eq!(
        differing(&recv.to_vec().unwrap(), &vec![0.0; N]),
        0,
        "a call of a panicked group was made"
    );
    let delivered = later_calls_deliver(comm, context, N);
    assert_eq!(delivered, (N, N), "elements delivered after the panic, of {N}");
}

#[test]
fn init_all_failing_part_way_leaves_no_group_open() {
    let Some(contexts) = contexts_or_skip("init_all_failing_part_way_leaves_no_group_open") else {
        return;
    };
    let primary = contexts[0].clone();
    // A second context on the same device: NCCL refuses two ranks of one communicator on one
    // GPU, after the first rank has started. On a thread of its own, so that a hang is a
    // failure here rather than a stuck run.
    let (done, outcome) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let second = Context::new(&primary.device(), ContextFlags::empty()).expect("a second context");
        let started = Instant::now();
        let result = Communicator::init_all(&[primary.clone(), second]);
        let failed = match result {
            Ok(comms) => {
                println!("NCCL accepted two ranks on one device");
                Communicator::finalize_all(comms).expect("finalize_all");
                None
            }
            Err(error) => Some(error),
        };
        let waited = started.elapsed();
        // Then, on the same thread, a one-rank communicator's calls are made.
        let comms = Communicator::init_all(std::slice::from_ref(&primary)).expect("init_all after the failure");
        let delivered = later_calls_deliver(&comms[0], &primary, 1 << 20);
        let _ = done.send((failed.map(|e| e.to_string()), waited, delivered));
    });
    let (failed, waited, delivered) = outcome
        .recv_timeout(Duration::from_secs(240))
        .expect("init_all and the calls after it finish (or fail) in time");
    println!("init_all over two contexts of one device: {failed:?} after {waited:?}");
    if let Some(error) = &failed {
        assert!(!error.is_empty());
    }
    assert_eq!(
        delivered,
        (1 << 20, 1 << 20),
        "elements delivered after init_all, of 1048576"
    );
}
