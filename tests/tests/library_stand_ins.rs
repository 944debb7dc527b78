//! cuFFT plans and cuSOLVER handles against stand-ins of the libraries (`fakelibs`) and of the
//! driver (`fakecuda`): argument checks before any library call, a failure at every library
//! and driver call of a plan's and a handle's life (typed errors, no panic, no leaked or doubly
//! destroyed plan or handle), and `info` values read back into typed errors.

use std::panic::{catch_unwind, AssertUnwindSafe};

use cuda_core::Complex;
use cuda_driver::{Device, DeviceBuffer, DeviceMemoryMut, Stream};
use cuda_libs::fft::{Direction, Kind, Plan, PlanCache, PlanDesc, Precision};
use cuda_libs::solver::{Fill, Matrix, Solver};
use cuda_libs::{Error, LinalgFailure};
use tests::fake::{self, Session};
use tests::fake_libs::{self, Live};

/// `CUFFT_INTERNAL_ERROR` and `CUSOLVER_STATUS_INTERNAL_ERROR`: the status injected.
const CUFFT_INTERNAL_ERROR: i32 = 5;
const CUSOLVER_INTERNAL_ERROR: i32 = 7;

fn session() -> Session {
    let fake = fake::session();
    fake_libs::install();
    fake_libs::reset();
    fake
}

/// A plan's life: made, executed out of place and in place, found again in a cache, dropped.
fn fft_life() -> cuda_libs::Result<()> {
    let context = Device::get(0)?.primary_context()?;
    let stream = Stream::new(&context)?;
    let desc = PlanDesc::new(Kind::C2C, Precision::F32, &[64]).unwrap().batch(2);
    let mut plan = Plan::new(&context, &desc)?;
    let x = DeviceBuffer::<[f32; 2]>::zeroed(&context, 128)?;
    let mut y = DeviceBuffer::<[f32; 2]>::zeroed(&context, 128)?;
    let mut ws = DeviceBuffer::<u8>::zeroed(&context, plan.workspace_size())?;
    plan.execute(&stream, Direction::Forward, &x, &mut y, Some(&mut ws))?;
    plan.execute_in_place(&stream, Direction::Inverse, &mut y, Some(&mut ws))?;
    let mut cache = PlanCache::new(1)?;
    cache.plan(&stream, &desc)?;
    cache.plan(&stream, &desc.batch(1))?;
    stream.synchronize()?;
    Ok(())
}

/// A solver's life: made, two factorisations queued, their `info` read back, dropped.
fn solver_life() -> cuda_libs::Result<()> {
    let context = Device::get(0)?.primary_context()?;
    let stream = Stream::new(&context)?;
    let mut solver = Solver::new(&stream)?;
    let shape = Matrix::square(4);
    let mut a = DeviceBuffer::<f64>::zeroed(&context, 16)?;
    let mut pivots = DeviceBuffer::<i64>::zeroed(&context, 4)?;
    let mut ws = DeviceBuffer::<u8>::zeroed(&context, solver.potrf_workspace::<f64>(Fill::Lower, shape)?)?;
    solver.potrf::<f64>(Fill::Lower, shape, &mut a, Some(&mut ws))?;
    solver.getrf::<f64>(shape, &mut a, &mut pivots, Some(&mut ws))?;
    // The complex types take the same generic path, and the general eigen-solver its own.
    let mut z = DeviceBuffer::<Complex<f64>>::zeroed(&context, 16)?;
    let mut w = DeviceBuffer::<Complex<f64>>::zeroed(&context, 4)?;
    let mut vr = DeviceBuffer::<Complex<f64>>::zeroed(&context, 16)?;
    solver.getrf::<Complex<f64>>(shape, &mut z, &mut pivots, Some(&mut ws))?;
    let geev_bytes = solver.geev_workspace::<Complex<f64>>(true, shape)?;
    assert!(geev_bytes <= fake_libs::WORKSPACE);
    solver.geev::<Complex<f64>>(shape, &mut z, &mut w, Some(&mut vr), Some(&mut ws))?;
    solver.check_info()
}

/// Runs `life` with library call `n` failing, then driver call `n`; each run must end in `Ok` or
/// a typed error, never a panic, and leave no plan, handle or parameter object alive.
fn every_failure_point(fake: &Session, life: fn() -> cuda_libs::Result<()>, status: i32, library: &str) {
    fake_libs::reset();
    fake.reset();
    life().expect("the clean run");
    let (library_calls, driver_calls) = (fake_libs::calls(), fake.calls());
    assert!(library_calls > 3 && driver_calls > 3, "{library_calls} {driver_calls}");
    println!("failure points: {library} {library_calls} library calls, {driver_calls} driver calls");
    let check_clean = |what: &str| {
        for kind in [Live::Plans, Live::Solvers, Live::Params, Live::DoubleDestroys] {
            assert_eq!(fake_libs::live(kind), 0, "{what}: {kind:?} left");
        }
        let counts = fake.counts();
        assert_eq!(counts.double_frees, 0, "{what}: {counts}");
        assert_eq!(counts.invalid_handles, 0, "{what}: {counts}");
    };
    for n in 1..=library_calls {
        fake_libs::reset();
        fake_libs::fail_nth(n, status);
        let outcome = catch_unwind(AssertUnwindSafe(life)).unwrap_or_else(|_| panic!("library call {n} panicked"));
        match outcome {
            Err(Error::Status { library: got, code, .. }) => {
                assert_eq!((got, code as i32), (library, status), "library call {n}")
            }
            other => panic!("library call {n} failing gave {other:?}"),
        }
        check_clean(&format!("library call {n}"));
    }
    for n in 1..=driver_calls {
        fake_libs::reset();
        fake.reset();
        fake.fail_nth(n, fake::OUT_OF_MEMORY);
        let outcome = catch_unwind(AssertUnwindSafe(life)).unwrap_or_else(|_| panic!("driver call {n} panicked"));
        if let Err(error) = &outcome {
            assert!(
                matches!(error, Error::Driver(_) | Error::Status { .. }),
                "driver call {n}: {error:?}"
            );
        }
        fake.clear_faults();
        check_clean(&format!("driver call {n}"));
    }
    fake.destroy_all();
}

#[test]
fn a_plan_survives_a_failure_at_every_call() {
    let fake = session();
    every_failure_point(&fake, fft_life, CUFFT_INTERNAL_ERROR, "cuFFT");
}

#[test]
fn a_solver_survives_a_failure_at_every_call() {
    let fake = session();
    every_failure_point(&fake, solver_life, CUSOLVER_INTERNAL_ERROR, "cuSOLVER");
}

#[test]
fn info_values_come_back_as_typed_errors_with_their_routine() {
    let fake = session();
    let context = Device::get(0).unwrap().primary_context().unwrap();
    let stream = Stream::new(&context).unwrap();
    let mut solver = Solver::new(&stream).unwrap();
    let shape = Matrix::square(4);
    let mut a = DeviceBuffer::<f32>::zeroed(&context, 16).unwrap();
    let mut pivots = DeviceBuffer::<i64>::zeroed(&context, 4).unwrap();
    let mut ws = DeviceBuffer::<u8>::zeroed(&context, fake_libs::WORKSPACE).unwrap();

    fake_libs::set_info(3);
    solver.potrf::<f32>(Fill::Upper, shape, &mut a, Some(&mut ws)).unwrap();
    assert_eq!(solver.pending_infos(), 1);
    match solver.check_info() {
        Err(Error::Linalg {
            routine,
            index,
            failure,
        }) => {
            assert_eq!((routine, index), ("cusolverDnXpotrf", 0));
            assert_eq!(failure, LinalgFailure::NotPositiveDefinite { order: 3 });
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(solver.pending_infos(), 0);

    // Two routines queued: the first clean, the second singular; one read-back names the second.
    fake_libs::set_info(0);
    solver.potrf::<f32>(Fill::Lower, shape, &mut a, Some(&mut ws)).unwrap();
    fake_libs::set_info(2);
    solver.getrf::<f32>(shape, &mut a, &mut pivots, Some(&mut ws)).unwrap();
    assert_eq!(solver.pending_infos(), 2);
    match solver.check_info() {
        Err(Error::Linalg {
            routine,
            failure: LinalgFailure::Singular { pivot: 2 },
            ..
        }) => assert_eq!(routine, "cusolverDnXgetrf"),
        other => panic!("{other:?}"),
    }

    // More routines than the info buffer's first 64 slots: it is read back, then grown.
    fake_libs::set_info(0);
    for _ in 0..70 {
        solver.potrf::<f32>(Fill::Lower, shape, &mut a, Some(&mut ws)).unwrap();
    }
    assert!(solver.pending_infos() < 70, "read back once the buffer filled");
    fake_libs::set_info(-5);
    solver.potrf::<f32>(Fill::Lower, shape, &mut a, Some(&mut ws)).unwrap();
    match solver.check_info() {
        Err(Error::Linalg {
            failure: LinalgFailure::InvalidArgument { position: 5 },
            ..
        }) => {}
        other => panic!("{other:?}"),
    }
    assert!(solver.check_info().is_ok(), "nothing pending");

    // A complex general matrix whose eigen-solver did not converge: `geev`'s info names it.
    let mut z = DeviceBuffer::<Complex<f32>>::zeroed(&context, 16).unwrap();
    let mut w = DeviceBuffer::<Complex<f32>>::zeroed(&context, 4).unwrap();
    fake_libs::set_info(3);
    solver
        .geev::<Complex<f32>>(shape, &mut z, &mut w, None, Some(&mut ws))
        .unwrap();
    match solver.check_info() {
        Err(Error::Linalg {
            routine,
            index: 0,
            failure: LinalgFailure::NoConvergence { count: 3 },
        }) => assert_eq!(routine, "cusolverDnXgeev"),
        other => panic!("{other:?}"),
    }
    // Eigenvalues in a buffer too short for n complex values are refused before the call.
    fake_libs::set_info(0);
    let mut short = DeviceBuffer::<Complex<f32>>::zeroed(&context, 3).unwrap();
    let refused = solver.geev::<Complex<f32>>(shape, &mut z, &mut short, None, Some(&mut ws));
    assert!(matches!(refused, Err(Error::InvalidValue(m)) if m.contains("W spans 32 bytes")));
    drop(solver);
    assert_eq!(fake_libs::live(Live::Solvers), 0);
    assert_eq!(fake_libs::live(Live::Params), 0);
    drop((a, pivots, ws, z, w, short, stream, context));
    fake.destroy_all();
}

#[test]
fn bad_operands_are_refused_before_the_library_is_called() {
    let fake = session();
    let context = Device::get(0).unwrap().primary_context().unwrap();
    let other_context = Device::get(1).unwrap().primary_context().unwrap();
    let stream = Stream::new(&context).unwrap();
    let invalid = |result: cuda_libs::Result<()>, what: &str| match result {
        Err(Error::InvalidValue(message)) => message,
        other => panic!("{what}: expected InvalidValue, got {other:?}"),
    };

    let desc = PlanDesc::new(Kind::R2C, Precision::F64, &[64]).unwrap().batch(2);
    let mut plan = Plan::new(&context, &desc).unwrap();
    assert_eq!(plan.workspace_size(), fake_libs::WORKSPACE);
    assert_eq!((plan.input_bytes(), plan.output_bytes()), (128 * 8, 66 * 16));
    let x = DeviceBuffer::<f64>::zeroed(&context, 128).unwrap();
    let short = DeviceBuffer::<f64>::zeroed(&context, 127).unwrap();
    let mut y = DeviceBuffer::<[f64; 2]>::zeroed(&context, 66).unwrap();
    let mut ws = DeviceBuffer::<u8>::zeroed(&context, fake_libs::WORKSPACE).unwrap();
    let mut small_ws = DeviceBuffer::<u8>::zeroed(&context, fake_libs::WORKSPACE - 1).unwrap();
    let elsewhere = DeviceBuffer::<f64>::zeroed(&other_context, 128).unwrap();
    let mut bytes = DeviceBuffer::<u8>::zeroed(&context, 66 * 16 + 8).unwrap();
    fake_libs::reset();
    let message = invalid(
        plan.execute(&stream, Direction::Forward, &short, &mut y, Some(&mut ws)),
        "short",
    );
    assert!(message.contains("1024 bytes") && message.contains("1016"), "{message}");
    let message = invalid(
        plan.execute(&stream, Direction::Forward, &x, &mut y, None),
        "no workspace",
    );
    assert!(message.contains("4096 bytes of workspace"), "{message}");
    let message = invalid(
        plan.execute(
            &stream,
            Direction::Forward,
            &x,
            &mut y,
            Some(&mut small_ws as &mut dyn DeviceMemoryMut),
        ),
        "small workspace",
    );
    assert!(message.contains("workspace"), "{message}");
    let message = invalid(
        plan.execute(&stream, Direction::Inverse, &x, &mut y, Some(&mut ws)),
        "direction",
    );
    assert!(message.contains("Forward only"), "{message}");
    // An output 8 bytes into a buffer: aligned to f64 but not to 16-byte complex f64.
    let mut misaligned = bytes.slice_mut(8..);
    let message = invalid(
        plan.execute(&stream, Direction::Forward, &x, &mut misaligned, Some(&mut ws)),
        "alignment",
    );
    assert!(message.contains("aligned"), "{message}");
    match plan.execute(&stream, Direction::Forward, &elsewhere, &mut y, Some(&mut ws)) {
        Err(Error::WrongContext { object: "input", .. }) => {}
        other => panic!("another context's input: {other:?}"),
    }
    assert_eq!(fake_libs::calls(), 0, "no refusal called cuFFT");
    plan.execute(&stream, Direction::Forward, &x, &mut y, Some(&mut ws))
        .unwrap();
    assert_eq!(fake_libs::calls(), 3, "set stream, set work area, execute");

    let mut solver = Solver::new(&stream).unwrap();
    let mut a = DeviceBuffer::<f64>::zeroed(&context, 16).unwrap();
    let mut b = DeviceBuffer::<f64>::zeroed(&context, 3).unwrap();
    fake_libs::reset();
    let message = invalid(
        solver.potrf::<f64>(Fill::Lower, Matrix::new(4, 3), &mut a, Some(&mut ws)),
        "not square",
    );
    assert!(message.contains("square"), "{message}");
    let message = invalid(
        solver.potrf::<f64>(Fill::Lower, Matrix::square(5), &mut a, Some(&mut ws)),
        "short matrix",
    );
    assert!(message.contains("200 bytes"), "{message}");
    let message = invalid(
        solver.potrf::<f64>(Fill::Lower, Matrix::square(4), &mut a, None),
        "workspace",
    );
    assert!(message.contains("workspace"), "{message}");
    let message = invalid(
        solver.potrs::<f64>(Fill::Lower, Matrix::square(4), &a, Matrix::new(3, 1), &mut b),
        "right-hand side",
    );
    assert!(message.contains("4 equations"), "{message}");
    assert_eq!(solver.pending_infos(), 0, "refusals queue nothing");
    drop((
        plan,
        solver,
        x,
        short,
        y,
        ws,
        small_ws,
        elsewhere,
        bytes,
        a,
        b,
        stream,
        context,
        other_context,
    ));
    fake.destroy_all();
}
