//! cuda-core's LU routines (`solve`, `inv`, `det`), `cholesky`, `eig`, and the complex forms of
//! the decompositions (`eigh`, `svd`, `pinv`, `lstsq`, ...: NumPy 2's shapes and real result
//! types, every complex kernel compiled) end to end against the stand-in cuSOLVER
//! (`fakelibs`) and driver (`fakecuda`), whose generated kernels run as no-ops: the `info` a
//! factorisation writes comes back from the array routine as a typed error naming the routine,
//! the cause and the matrix (NumPy's `LinAlgError`), never as a result; a determinant of a
//! singular matrix is no error; and every cuSOLVER and driver call of their life failing in
//! turn gives a typed error, no panic, no handle left or destroyed twice. Its own binary: the routines keep their cuSOLVER handle per
//! stream for the process, which the handle counts of `library_stand_ins` must not see. The
//! generated kernels are compiled by NVRTC; without it the test says so and passes.

use std::panic::{catch_unwind, AssertUnwindSafe};

use cuda_core::Complex;
use cuda_core::{DeviceArray, Error, ExprOps, Norm};
use cuda_driver::{Device, Stream};
use cuda_libs::LinalgFailure;
use tests::checks::nvrtc_available;
use tests::fake::{self, Session};
use tests::fake_libs::{self, Live};

/// `CUSOLVER_STATUS_INTERNAL_ERROR`: the status injected.
const CUSOLVER_INTERNAL_ERROR: i32 = 7;

/// The factorisation's failure inside `result`, or a panic naming what came instead.
#[track_caller]
fn linalg_failure<T: std::fmt::Debug>(result: cuda_core::Result<T>) -> (&'static str, usize, LinalgFailure) {
    match result {
        Err(Error::Library(cuda_libs::Error::Linalg {
            routine,
            index,
            failure,
        })) => (routine, index, failure),
        other => panic!("expected a linalg failure, got {other:?}"),
    }
}

/// The stand-in driver (generated kernels loaded as PTX, run as no-ops) and cuSOLVER, fresh;
/// `None` (the test skipped) without NVRTC.
fn stand_ins(test: &str) -> Option<Session> {
    if !nvrtc_available(test) {
        return None;
    }
    let fake = fake::session();
    fake.set_bodiless_kernels_noop(true);
    cuda_core::load_generated_as_ptx(true);
    fake_libs::install();
    fake_libs::reset();
    Some(fake)
}

#[test]
fn a_singular_matrix_in_solve_and_inv_is_a_linalg_error() {
    let Some(fake) = stand_ins("a singular matrix in solve and inv") else {
        return;
    };
    let context = Device::get(0).unwrap().primary_context().unwrap();
    let stream = Stream::new(&context).unwrap();
    let a = DeviceArray::<i32>::from_slice(&stream, &[1, 2, 2, 4])
        .unwrap()
        .reshape([2, 2])
        .unwrap();
    // solve and inv go through cuSOLVER above 64 x 64 (the crate's kernels, which the stand-in
    // does not run, take smaller matrices): a 65 x 65 one, its values unread.
    let large = DeviceArray::<i32>::zeros(&stream, [65, 65]).unwrap();
    let b = DeviceArray::<f64>::zeros(&stream, [65]).unwrap();

    // The factorisation reports U(2, 2) == 0: solve and inv return that, not a result.
    fake_libs::set_info(2);
    let (routine, index, failure) = linalg_failure(large.solve(&b));
    assert_eq!((routine, index), ("cusolverDnXgetrf", 0));
    assert_eq!(failure, LinalgFailure::Singular { pivot: 2 });
    let (routine, _, failure) = linalg_failure(large.inv());
    assert_eq!(routine, "cusolverDnXgetrf");
    assert_eq!(failure, LinalgFailure::Singular { pivot: 2 });
    // det of a singular matrix is 0 in NumPy, so the same info is no error there; integers
    // promote to f64, and a matrix gives a 0-d result.
    let det = large.det().unwrap();
    assert_eq!(det.shape(), [0usize; 0]);

    // A clean factorisation: solve and inv return arrays of NumPy's shapes, and the handle's
    // infos were all read back (the next failure is reported by the routine that queued it).
    fake_libs::set_info(0);
    let x = large.solve(&b).unwrap();
    assert_eq!(x.shape(), [65]);
    let b_matrix = DeviceArray::<f64>::zeros(&stream, [65, 3]).unwrap();
    assert_eq!(large.solve(&b_matrix).unwrap().shape(), [65, 3]);
    // The crate's kernel at 2 x 2: the shapes alike (the stand-in runs no kernel).
    let small_b = DeviceArray::<f64>::from_slice(&stream, &[1.0, 2.0]).unwrap();
    assert_eq!(a.solve(&small_b).unwrap().shape(), [2]);
    assert_eq!(large.inv().unwrap().shape(), [65, 65]);
    fake_libs::set_info(1);
    let (_, _, failure) = linalg_failure(large.inv());
    assert_eq!(failure, LinalgFailure::Singular { pivot: 1 });

    // Cholesky: the info of a matrix that is not positive definite comes back through
    // `cholesky`, in either triangle; a clean one gives the factor's shape. Matrices up to 64 x
    // 64 are factored by the crate's own kernel (which the stand-in does not run), so these are
    // 65 x 65 (their values unread: the stand-in's info is the result).
    let spd = DeviceArray::<f32>::zeros(&stream, [65, 65]).unwrap();
    fake_libs::set_info(2);
    for upper in [false, true] {
        let (routine, index, failure) = linalg_failure(spd.cholesky(upper));
        assert_eq!((routine, index), ("cusolverDnXpotrf", 0));
        assert_eq!(failure, LinalgFailure::NotPositiveDefinite { order: 2 });
    }
    fake_libs::set_info(0);
    assert_eq!(spd.cholesky(false).unwrap().shape(), [65, 65]);

    // Complex stacks take the same path: the info of a singular complex matrix comes back from
    // solve (65 x 65: cuSOLVER's), and the complex kernels of det and slogdet compile (NVRTC)
    // and run.
    let z = DeviceArray::<Complex<f32>>::from_slice(&stream, &[Complex::new(1.0, 1.0); 4])
        .unwrap()
        .reshape([2, 2])
        .unwrap();
    let large_z = DeviceArray::<Complex<f32>>::zeros(&stream, [65, 65]).unwrap();
    fake_libs::set_info(2);
    let (routine, _, failure) = linalg_failure(large_z.solve(&large_z));
    assert_eq!(
        (routine, failure),
        ("cusolverDnXgetrf", LinalgFailure::Singular { pivot: 2 })
    );
    assert_eq!(z.det().unwrap().shape(), [0usize; 0]);
    let (sign, logabs) = z.slogdet().unwrap();
    assert_eq!(
        (sign.dtype(), logabs.dtype()),
        (cuda_core::DType::C64, cuda_core::DType::F32)
    );
    // A complex cholesky's info, and its zeroing kernel (NVRTC) for a clean factorisation.
    fake_libs::set_info(2);
    let (routine, _, failure) = linalg_failure(large_z.cholesky(true));
    assert_eq!(
        (routine, failure),
        ("cusolverDnXpotrf", LinalgFailure::NotPositiveDefinite { order: 2 })
    );
    fake_libs::set_info(0);
    assert_eq!(large_z.cholesky(false).unwrap().shape(), [65, 65]);
    // eig: the general solver's info, and complex results of a real matrix.
    fake_libs::set_info(1);
    let (routine, _, failure) = linalg_failure(a.eig());
    assert_eq!(
        (routine, failure),
        ("cusolverDnXgeev", LinalgFailure::NoConvergence { count: 1 })
    );
    fake_libs::set_info(0);
    let (w, v) = a.eig().unwrap();
    assert_eq!(
        (w.dtype(), w.shape(), v.shape()),
        (cuda_core::DType::C128, &[2][..], &[2, 2][..])
    );
    drop((z, sign, logabs, w, v));

    // Shape errors come before any library call.
    fake_libs::reset();
    let wide = DeviceArray::<f64>::zeros(&stream, [2, 3]).unwrap();
    assert!(matches!(wide.inv(), Err(Error::InvalidValue(m)) if m.contains("square")));
    assert!(matches!(wide.cholesky(false), Err(Error::InvalidValue(m)) if m.contains("cholesky")));
    let short = DeviceArray::<f64>::zeros(&stream, [3]).unwrap();
    assert!(matches!(a.solve(&short), Err(Error::InvalidValue(m)) if m.contains("b has 3 rows")));
    assert_eq!(fake_libs::calls(), 0, "refusals call no library");
    drop((a, b, x, b_matrix, spd, wide, short, det, stream, context));
    // The stream's cuSOLVER handle goes with the process caches, so the next test starts with
    // none alive.
    assert!(cuda_core::release_process_caches());
    assert_eq!(fake_libs::live(Live::Solvers), 0);
    let counts = fake.counts();
    assert!(counts.double_frees == 0 && counts.invalid_handles == 0, "{counts}");
}

#[test]
fn complex_decompositions_follow_numpys_shapes_and_types() {
    use cuda_core::DType;
    let Some(fake) = stand_ins("complex decompositions") else {
        return;
    };
    fake_libs::set_info(0);
    let context = Device::get(0).unwrap().primary_context().unwrap();
    let stream = Stream::new(&context).unwrap();
    // Every kernel of the complex paths compiles (NVRTC) and runs (a no-op here); the results
    // have NumPy 2's types: real eigenvalues, singular values, cond and residuals.
    let h = DeviceArray::<Complex<f32>>::zeros(&stream, [3, 3]).unwrap();
    let (w, v) = h.eigh(false).unwrap();
    assert_eq!((w.dtype(), v.dtype(), v.shape()), (DType::F32, DType::C64, &[3, 3][..]));
    assert_eq!(h.eigvalsh(true).unwrap().dtype(), DType::F32);
    let wide = DeviceArray::<Complex<f64>>::zeros(&stream, [2, 3]).unwrap();
    let (u, s, vh) = wide.svd(false).unwrap();
    assert_eq!((u.shape(), s.shape(), vh.shape()), (&[2, 2][..], &[2][..], &[2, 3][..]));
    assert_eq!(
        (u.dtype(), s.dtype(), vh.dtype()),
        (DType::C128, DType::F64, DType::C128)
    );
    let (u_full, _, vh_full) = wide.svd(true).unwrap();
    assert_eq!((u_full.shape(), vh_full.shape()), (&[2, 2][..], &[3, 3][..]));
    assert_eq!(wide.svdvals().unwrap().dtype(), DType::F64);
    assert_eq!(wide.cond().unwrap().dtype(), DType::F64);
    assert_eq!(wide.pinv(1e-15).unwrap().shape(), [3, 2]);
    assert_eq!(wide.pinv_rtol(None).unwrap().shape(), [3, 2]);
    assert_eq!(wide.matrix_rank_with(Some(0.5), None).unwrap().dtype(), DType::I64);
    assert_eq!(wide.matrix_rank_with(None, Some(1e-3)).unwrap().shape(), [0usize; 0]);
    let tall = DeviceArray::<Complex<f64>>::zeros(&stream, [3, 2]).unwrap();
    let b = DeviceArray::<Complex<f64>>::zeros(&stream, [3]).unwrap();
    let fit = tall.lstsq(&b, None).unwrap();
    assert_eq!((fit.x.shape(), fit.x.dtype()), (&[2][..], DType::C128));
    assert_eq!(
        (fit.residuals.dtype(), fit.singular_values.dtype()),
        (DType::F64, DType::F64)
    );
    // Norms of complex arrays are real (NumPy 2), for every order that needs no cuBLAS `nrm2`;
    // the matrix norms of a stack are one per matrix.
    for ord in [
        Norm::Ord(1.0),
        Norm::Ord(-1.0),
        Norm::Inf,
        Norm::NegInf,
        Norm::Ord(2.0),
        Norm::Ord(-2.0),
        Norm::Nuc,
    ] {
        let norm = h.linalg_norm(ord).unwrap();
        assert_eq!((norm.dtype(), norm.shape()), (DType::F32, &[][..]), "{ord:?}");
    }
    let vector = DeviceArray::<Complex<f64>>::zeros(&stream, [4]).unwrap();
    for ord in [
        Norm::Ord(1.0),
        Norm::Inf,
        Norm::NegInf,
        Norm::Ord(0.0),
        Norm::Ord(3.0),
        Norm::Ord(-0.5),
    ] {
        assert_eq!(vector.linalg_norm(ord).unwrap().dtype(), DType::F64, "{ord:?}");
    }
    assert_eq!(h.vector_norm(Norm::Ord(3.0)).unwrap().dtype(), DType::F32);
    assert!(matches!(h.vector_norm(Norm::Fro), Err(Error::InvalidValue(_))));
    let stack = DeviceArray::<Complex<f64>>::zeros(&stream, [1, 2, 3]).unwrap();
    for ord in [
        Norm::Default,
        Norm::Fro,
        Norm::Ord(1.0),
        Norm::NegInf,
        Norm::Ord(2.0),
        Norm::Nuc,
    ] {
        let norm = stack.matrix_norm(ord).unwrap();
        assert_eq!((norm.dtype(), norm.shape()), (DType::F64, &[1][..]), "{ord:?}");
    }
    assert!(matches!(stack.matrix_norm(Norm::Ord(3.0)), Err(Error::InvalidValue(_))));
    assert!(matches!(vector.matrix_norm(Norm::Fro), Err(Error::InvalidValue(m)) if m.contains("two dimensions")));
    // solve promotes a and b together, as NumPy: a real matrix with a complex right-hand side
    // is solved in the complex type, and the other way round; integers with f32 in f64.
    let real = DeviceArray::<f64>::zeros(&stream, [3, 3]).unwrap();
    let rhs = DeviceArray::<Complex<f32>>::zeros(&stream, [3]).unwrap();
    assert_eq!(real.solve(&rhs).unwrap().dtype(), DType::C128);
    let real_rhs = DeviceArray::<f32>::zeros(&stream, [3, 2]).unwrap();
    let x = h.solve(&real_rhs).unwrap();
    assert_eq!((x.dtype(), x.shape()), (DType::C64, &[3, 2][..]));
    let small = DeviceArray::<i16>::zeros(&stream, [3]).unwrap();
    let single = DeviceArray::<f32>::zeros(&stream, [3, 3]).unwrap();
    assert_eq!(single.solve(&small).unwrap().dtype(), DType::F32);
    let ints = DeviceArray::<i32>::zeros(&stream, [3]).unwrap();
    assert_eq!(single.solve(&ints).unwrap().dtype(), DType::F64);
    // hermitian=True: pinv and matrix_rank from eigh, square stacks only.
    let p = h.pinv_hermitian(1e-15).unwrap();
    assert_eq!((p.dtype(), p.shape()), (DType::C64, &[3, 3][..]));
    let rank = h.matrix_rank_hermitian(None, None).unwrap();
    assert_eq!((rank.dtype(), rank.shape()), (DType::I64, &[][..]));
    assert_eq!(real.matrix_rank_hermitian(Some(0.5), None).unwrap().dtype(), DType::I64);
    assert!(matches!(wide.pinv_hermitian(1e-15), Err(Error::InvalidValue(m)) if m.contains("square")));
    assert!(matches!(wide.matrix_rank_hermitian(None, None), Err(Error::InvalidValue(m)) if m.contains("square")));
    drop((vector, stack, real, rhs, real_rhs, x, small, single, ints, p, rank));
    // The eigen-solver's info comes back from eigh, with its routine.
    fake_libs::set_info(4);
    let (routine, _, failure) = linalg_failure(h.eigh(false));
    assert_eq!(
        (routine, failure),
        ("cusolverDnXsyevd", LinalgFailure::NoConvergence { count: 4 })
    );
    // A stack of matrices larger than the Jacobi batch's is one XsyevBatched call, whose
    // failure names the matrix.
    let big = DeviceArray::<f32>::zeros(&stream, [2, 40, 40]).unwrap();
    let (routine, index, failure) = linalg_failure(big.eigh(false));
    assert_eq!(
        (routine, index, failure),
        ("cusolverDnXsyevBatched", 0, LinalgFailure::NoConvergence { count: 4 })
    );
    fake_libs::set_info(0);
    drop((
        h, w, v, wide, u, s, vh, u_full, vh_full, tall, b, fit, big, stream, context,
    ));
    assert!(cuda_core::release_process_caches());
    let counts = fake.counts();
    assert!(counts.double_frees == 0 && counts.invalid_handles == 0, "{counts}");
    fake.set_bodiless_kernels_noop(false);
    fake.destroy_all();
}

#[test]
fn one_matrix_goes_through_jacobi_and_the_qr_algorithm_when_jacobi_does_not_converge() {
    let Some(fake) = stand_ins("one matrix's svd by Jacobi") else {
        return;
    };
    let context = Device::get(0).unwrap().primary_context().unwrap();
    let stream = Stream::new(&context).unwrap();
    // One 40 x 3 matrix (too large for the batched routine): gesvdj, economic and full, with
    // and without vectors; the stand-in checks U's and V's leading dimensions and that neither
    // is null (scratch without vectors).
    let tall = DeviceArray::<f32>::zeros(&stream, [40, 3]).unwrap();
    let (u, s, vh) = tall.svd(false).unwrap();
    assert_eq!(
        (u.shape(), s.shape(), vh.shape()),
        (&[40, 3][..], &[3][..], &[3, 3][..])
    );
    let (u, _, vh) = tall.svd(true).unwrap();
    assert_eq!((u.shape(), vh.shape()), (&[40, 40][..], &[3, 3][..]));
    assert_eq!(tall.svdvals().unwrap().shape(), [3]);
    let calls = fake_libs::calls();
    // Jacobi reports no convergence (info min(m, n) + 1): the same matrix goes through the QR
    // algorithm, whose failure (the stand-in writes the same info) is the one returned.
    fake_libs::set_info(4);
    let (routine, index, failure) = linalg_failure(tall.svdvals());
    assert_eq!(
        (routine, index, failure),
        ("cusolverDnXgesvd", 0, LinalgFailure::NoConvergence { count: 4 })
    );
    assert!(fake_libs::calls() > calls + 2, "both routines were called");
    // A stack of two 40 x 3 matrices: one gesvdj call each, the failure's index kept.
    let stack = DeviceArray::<Complex<f64>>::zeros(&stream, [2, 40, 3]).unwrap();
    fake_libs::set_info(0);
    assert_eq!(stack.svd(false).unwrap().1.shape(), [2, 3]);
    fake_libs::set_info(1);
    let (routine, _, failure) = linalg_failure(stack.svdvals());
    assert_eq!(
        (routine, failure),
        ("cusolverDnXgesvd", LinalgFailure::NoConvergence { count: 1 })
    );
    fake_libs::set_info(0);
    drop((u, s, vh, tall, stack, stream, context));
    assert!(cuda_core::release_process_caches());
    let counts = fake.counts();
    assert!(counts.double_frees == 0 && counts.invalid_handles == 0, "{counts}");
    fake.set_bodiless_kernels_noop(false);
    fake.destroy_all();
}

#[test]
fn singular_values_of_a_small_stack_give_gesvdj_batched_its_u_and_v() {
    let Some(fake) = stand_ins("singular values of a small stack") else {
        return;
    };
    let context = Device::get(0).unwrap().primary_context().unwrap();
    let stream = Stream::new(&context).unwrap();
    // Three 2 x 2 matrices: one Jacobi call for the stack, values only. cuSOLVER writes U and V
    // even then (null ones fault on the GPU); the stand-in refuses null ones.
    let stack = DeviceArray::<f64>::zeros(&stream, [3, 2, 2]).unwrap();
    assert_eq!(stack.svdvals().unwrap().shape(), [3, 2]);
    // The 2-norm over two axes takes the same path; its info is read back too.
    let x = DeviceArray::<f64>::zeros(&stream, [2, 3, 4]).unwrap();
    assert_eq!(x.linalg_norm_axes(Norm::Ord(2.0), [2, 0], false).unwrap().shape(), [3]);
    // The 2-norms as sums of products under a square root (kernels compiled by NVRTC).
    let each = x
        .vector_norm_axes(Norm::Default, cuda_core::Axes::EMPTY, false)
        .unwrap();
    assert_eq!(each.shape(), [2, 3, 4]);
    assert_eq!(x.linalg_norm_axes(Norm::Fro, [2, 0], false).unwrap().shape(), [3]);
    let z = DeviceArray::<Complex<f32>>::zeros(&stream, [2, 3]).unwrap();
    assert_eq!(z.vector_norm_axes(Norm::Default, 1, true).unwrap().shape(), [2, 1]);
    fake_libs::set_info(3);
    let (routine, index, failure) = linalg_failure(stack.svdvals());
    assert_eq!(
        (routine, index, failure),
        (
            "cusolverDn<t>gesvdjBatched",
            0,
            LinalgFailure::NoConvergence { count: 3 }
        )
    );
    fake_libs::set_info(0);
    drop((stack, x, each, z, stream, context));
    assert!(cuda_core::release_process_caches());
    let counts = fake.counts();
    assert!(counts.double_frees == 0 && counts.invalid_handles == 0, "{counts}");
    fake.set_bodiless_kernels_noop(false);
    fake.destroy_all();
}

/// The LU and Cholesky routines' life on a fresh stream (one matrix: the crate's small-matrix
/// kernels at 2 x 2, the cuSOLVER stand-in's routines at 65 x 65 and for `solve`), then the
/// process caches (pool, modules, the stream's cuSOLVER handle) given back.
fn linalg_life() -> cuda_core::Result<()> {
    let context = Device::get(0)?.primary_context()?;
    let stream = Stream::new(&context)?;
    let outcome = (|| {
        let a = DeviceArray::<f64>::from_slice(&stream, &[4.0, 2.0, 2.0, 3.0])?.reshape([2, 2])?;
        let b = DeviceArray::<f64>::from_slice(&stream, &[1.0, 2.0])?;
        a.solve(&b)?;
        a.inv()?;
        a.det()?;
        a.cholesky(false)?;
        let large = DeviceArray::<f64>::zeros(&stream, [65, 65])?;
        large.solve(&DeviceArray::<f64>::zeros(&stream, [65])?)?;
        large.inv()?;
        large.cholesky(true)?;
        let z = a.astype::<Complex<f64>>().eval()?;
        z.solve(&z)?;
        z.slogdet()?;
        a.eig()?;
        stream.synchronize()?;
        Ok(())
    })();
    drop(stream);
    if !cuda_core::release_process_caches() {
        cuda_core::release_process_caches();
    }
    drop(context);
    outcome
}

#[test]
fn the_routines_survive_a_failure_at_every_library_and_driver_call() {
    let Some(fake) = stand_ins("failure points of the linalg routines") else {
        return;
    };
    fake.reset();
    linalg_life().expect("the clean run");
    let (library_calls, driver_calls) = (fake_libs::calls(), fake.calls());
    assert!(library_calls > 5 && driver_calls > 5, "{library_calls} {driver_calls}");
    println!("failure points: {library_calls} cuSOLVER calls, {driver_calls} driver calls");
    let check_clean = |what: &str| {
        assert_eq!(fake_libs::live(Live::Solvers), 0, "{what}: a cuSOLVER handle left");
        assert_eq!(fake_libs::live(Live::Params), 0, "{what}: a parameter object left");
        assert_eq!(
            fake_libs::live(Live::DoubleDestroys),
            0,
            "{what}: a handle destroyed twice"
        );
        let counts = fake.counts();
        assert!(
            counts.double_frees == 0 && counts.invalid_handles == 0,
            "{what}: {counts}"
        );
    };
    check_clean("the clean run");
    for n in 1..=library_calls {
        fake_libs::reset();
        fake_libs::fail_nth(n, CUSOLVER_INTERNAL_ERROR);
        let outcome =
            catch_unwind(AssertUnwindSafe(linalg_life)).unwrap_or_else(|_| panic!("library call {n} panicked"));
        match outcome {
            Err(Error::Library(cuda_libs::Error::Status { library, code, .. })) => {
                assert_eq!(
                    (library, code as i32),
                    ("cuSOLVER", CUSOLVER_INTERNAL_ERROR),
                    "library call {n}"
                )
            }
            other => panic!("library call {n} failing gave {other:?}"),
        }
        check_clean(&format!("library call {n}"));
    }
    for n in 1..=driver_calls {
        fake_libs::reset();
        fake.reset();
        fake.fail_nth(n, fake::OUT_OF_MEMORY);
        let outcome =
            catch_unwind(AssertUnwindSafe(linalg_life)).unwrap_or_else(|_| panic!("driver call {n} panicked"));
        if let Err(error) = &outcome {
            assert!(
                matches!(error, Error::Driver(_) | Error::Library(_)),
                "driver call {n}: {error:?}"
            );
        }
        fake.clear_faults();
        check_clean(&format!("driver call {n}"));
    }
    fake.set_bodiless_kernels_noop(false);
    fake.destroy_all();
}

#[test]
fn cusolver_routines_under_a_capture_are_refused_leaving_it_valid() {
    let Some(_fake) = stand_ins("cuSOLVER routines under a capture") else {
        return;
    };
    let context = Device::get(0).unwrap().primary_context().unwrap();
    let stream = Stream::new(&context).unwrap();
    let a = DeviceArray::<f32>::from_slice(&stream, &[2.0, 1.0, 1.0, 3.0])
        .unwrap()
        .reshape([2, 2])
        .unwrap();
    let b = DeviceArray::<f32>::from_slice(&stream, &[1.0, 2.0]).unwrap();
    // `det` and `slogdet` of matrices up to 64 x 64 are a kernel of the crate's with no host
    // wait, allowed in a capture; past that they are cuSOLVER's.
    let large = DeviceArray::<f32>::zeros(&stream, [65, 65]).unwrap();
    let mut builder = cuda_core::graph::GraphBuilder::new(&stream);
    builder
        .build(cuda_core::graph::CaptureMode::ThreadLocal, |_| {
            // Each routine reads its `info` back once (a host wait): refused before it copies or
            // allocates anything (the stand-in refuses allocations in a capture, so a routine
            // that queued its input's copy first would fail with a driver error instead), the
            // capture intact.
            let refusals: [(&str, cuda_core::Result<()>); 21] = [
                ("cholesky", a.cholesky(false).map(drop)),
                ("eigh", a.eigh(false).map(drop)),
                ("eigvalsh", a.eigvalsh(false).map(drop)),
                ("qr", a.qr(false).map(drop)),
                ("qr_r", a.qr_r().map(drop)),
                ("svd", a.svd(false).map(drop)),
                ("svdvals", a.svdvals().map(drop)),
                ("lstsq", a.lstsq(&b, None).map(drop)),
                ("pinv", a.pinv(1e-15).map(drop)),
                ("pinv_rtol", a.pinv_rtol(None).map(drop)),
                ("pinv_hermitian", a.pinv_hermitian(1e-15).map(drop)),
                ("matrix_rank", a.matrix_rank().map(drop)),
                ("matrix_rank_hermitian", a.matrix_rank_hermitian(None, None).map(drop)),
                ("cond", a.cond().map(drop)),
                ("det", large.det().map(drop)),
                ("slogdet", large.slogdet().map(drop)),
                ("inv", a.inv().map(drop)),
                ("solve", a.solve(&b).map(drop)),
                ("eig", a.eig().map(drop)),
                ("eigvals", a.eigvals().map(drop)),
                ("solve (matrix b)", a.solve(&a).map(drop)),
            ];
            for (routine, result) in refusals {
                match result {
                    Err(Error::HostWaitInCapture { call }) => {
                        assert!(call.contains("cuSOLVER"), "{routine}: {call}")
                    }
                    other => panic!("{routine}: expected HostWaitInCapture, got {other:?}"),
                }
            }
            Ok(())
        })
        .unwrap();
    assert_eq!(builder.graph().unwrap().node_count().unwrap(), 0);
}
