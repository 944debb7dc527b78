//! NumPy's fft module over arrays and expressions (`cuda_core::fft`) against the stand-ins of
//! cuFFT (`fakelibs`) and of the driver (`fakecuda`): plans, the plan cache, load callbacks
//! (compiled by NVRTC here, handed to the stand-in's `cufftXtSetJITCallback`) and the fallback.
//! A binary of its own: the arrays come from the context's default pool, which keeps its blocks
//! (and the context) for the process, where the failure-point suites of `library_stand_ins`
//! destroy every context of the stand-in.

use std::panic::{catch_unwind, AssertUnwindSafe};

use cuda_driver::{Device, Stream};
use cuda_libs::Error;
use tests::checks::nvrtc_available;
use tests::fake::{self, Session};
use tests::fake_libs::{self, Live};

/// `CUFFT_INTERNAL_ERROR`: the status injected.
const CUFFT_INTERNAL_ERROR: i32 = 5;

fn session() -> Session {
    let fake = fake::session();
    fake_libs::install();
    fake_libs::reset();
    fake
}

/// NumPy's fft module over arrays runs a plan's life through the stand-in: made on the first
/// transform, found again in the calling thread's cache, a strided view (the columns of a
/// row-major array) planned in place, bad arguments refused before cuFFT is called, a plan
/// cuFFT refuses carried as its `cufftResult` name, and every plan destroyed by
/// `clear_plan_cache`. (Only transforms that need no generated kernel: the stand-in driver
/// runs none.)
#[test]
fn array_transforms_live_through_the_plan_cache() {
    use cuda_core::fft::{self, FftNorm};
    use cuda_core::{Axes, Complex, DeviceArray};
    let fake = session();
    let context = Device::get(0).unwrap().primary_context().unwrap();
    let stream = Stream::new(&context).unwrap();
    let x = DeviceArray::<Complex<f32>>::zeros(&stream, [4, 64]).unwrap();
    fake_libs::reset();
    let y = fft::fft(&x, None, -1, FftNorm::Backward).unwrap();
    assert_eq!((y.shape(), y.is_contiguous()), (&[4usize, 64][..], true));
    assert_eq!(fake_libs::live(Live::Plans), 1);
    let calls = fake_libs::calls();
    // The same transform again: the cached plan, only its stream, work area and execution.
    fft::ifft(&x, None, 1, FftNorm::Forward).unwrap();
    assert_eq!(fake_libs::live(Live::Plans), 1);
    assert_eq!(fake_libs::calls() - calls, 3, "a cache hit makes no plan");
    // Along axis 0: the columns, stride 64 and batch distance 1, read and written in place.
    let columns = fft::fft(&x, None, 0, FftNorm::Backward).unwrap();
    assert_eq!(columns.shape(), [4, 64]);
    assert_eq!(fake_libs::live(Live::Plans), 2);
    let both = fft::fft2(&x, None, Axes::ALL, FftNorm::Backward).unwrap();
    assert_eq!(both.shape(), [4, 64]);
    assert_eq!(fake_libs::live(Live::Plans), 3);

    // Bad arguments: typed errors before any library call.
    let before = fake_libs::calls();
    assert!(matches!(
        fft::rfft(&x, None, -1, FftNorm::Backward),
        Err(cuda_core::Error::NotSupported(_))
    ));
    assert!(matches!(
        fft::fft(&x, Some(0), -1, FftNorm::Backward),
        Err(cuda_core::Error::InvalidValue(m)) if m.contains("(0)")
    ));
    assert!(matches!(
        fft::fft(&x, None, 2, FftNorm::Backward),
        Err(cuda_core::Error::Axis { axis: 2, ndim: 2 })
    ));
    assert!(matches!(
        fft::fftn(&x, None, [0, -2], FftNorm::Backward),
        Err(cuda_core::Error::InvalidValue(m)) if m.contains("repeated")
    ));
    assert!(matches!(
        fft::irfftn(&x, Some(&[4, -6][..]), [0, 1], FftNorm::Backward),
        Err(cuda_core::Error::InvalidValue(m)) if m.contains("(-6)")
    ));
    assert_eq!(fake_libs::calls(), before);

    // A plan cuFFT refuses: its cufftResult name comes back; nothing is cached.
    let other = DeviceArray::<Complex<f32>>::zeros(&stream, [2, 32]).unwrap();
    fake_libs::fail_nth(1, CUFFT_INTERNAL_ERROR);
    match fft::fft(&other, None, -1, FftNorm::Backward) {
        Err(cuda_core::Error::Library(Error::Status { library, name, .. })) => {
            assert_eq!((library, name.as_str()), ("cuFFT", "CUFFT_INTERNAL_ERROR"))
        }
        other => panic!("a refused plan gave {other:?}"),
    }
    assert_eq!(fake_libs::live(Live::Plans), 3);
    fft::clear_plan_cache();
    assert_eq!(fake_libs::live(Live::Plans), 0);
    assert_eq!(fake_libs::live(Live::DoubleDestroys), 0);
    drop((x, y, columns, both, other));
    stream.synchronize().unwrap();
    let counts = fake.counts();
    assert!(counts.double_frees == 0 && counts.invalid_handles == 0, "{counts}");
}

/// Transforms through the array API: rows, columns (a strided plan) and an inverse, each on a
/// plan of its own.
fn array_fft_life(stream: &Stream) -> cuda_core::Result<()> {
    use cuda_core::fft::{self, FftNorm};
    use cuda_core::{Complex, DeviceArray};
    let x = DeviceArray::<Complex<f32>>::zeros(stream, [4, 64])?;
    fft::fft(&x, None, -1, FftNorm::Backward)?;
    fft::fft(&x, None, 0, FftNorm::Backward)?;
    fft::ifft(&x, None, -1, FftNorm::Forward)?;
    stream.synchronize()?;
    Ok(())
}

/// A failure at every cuFFT call and at every driver call of `array_fft_life`: a typed error
/// (the cufftResult's for cuFFT's), never a panic, and no plan left once the cache is cleared.
#[test]
fn array_transforms_survive_a_failure_at_every_call() {
    survives_a_failure_at_every_call(array_fft_life, 12);
}

/// Transforms of expressions through load callbacks (asked for on the thread): `x * window`
/// into a real-to-complex plan and a complex product into a complex one.
fn expression_fft_life(stream: &Stream) -> cuda_core::Result<()> {
    use cuda_core::fft::{self, FftNorm};
    use cuda_core::{Complex, DeviceArray};
    fft::set_load_callbacks(true);
    let x = DeviceArray::<f32>::zeros(stream, [4, 64])?;
    let window = DeviceArray::<f32>::zeros(stream, [64])?;
    fft::rfft(&x * &window, None, -1, FftNorm::Ortho)?;
    let a = DeviceArray::<Complex<f32>>::zeros(stream, [4, 64])?;
    fft::fft(&a * &a, None, -1, FftNorm::Backward)?;
    stream.synchronize()?;
    Ok(())
}

/// The same for transforms of expressions: a failure at `cufftXtSetJITCallback`, at making the
/// plan after it, at the caller info's copy or the execution is a typed error, not a fallback.
#[test]
fn load_callback_transforms_survive_a_failure_at_every_call() {
    if !nvrtc_available("load callback failure points") {
        return;
    }
    survives_a_failure_at_every_call(expression_fft_life, 2 * 7);
}

/// Runs `life` once cleanly (at least `least` cuFFT calls), then again with each cuFFT call and
/// each driver call failing in turn.
fn survives_a_failure_at_every_call(life: fn(&Stream) -> cuda_core::Result<()>, least: i64) {
    use cuda_core::fft;
    let fake = session();
    let context = Device::get(0).unwrap().primary_context().unwrap();
    let stream = Stream::new(&context).unwrap();
    fft::clear_plan_cache();
    fake_libs::reset();
    fake.reset();
    life(&stream).expect("the clean run");
    let (library_calls, driver_calls) = (fake_libs::calls(), fake.calls());
    assert!(library_calls >= least, "at least {least} cuFFT calls: {library_calls}");
    fft::clear_plan_cache();
    let check_clean = |what: &str| {
        fft::clear_plan_cache();
        assert_eq!(fake_libs::live(Live::Plans), 0, "{what}: a plan left");
        assert_eq!(
            fake_libs::live(Live::DoubleDestroys),
            0,
            "{what}: a plan destroyed twice"
        );
        let counts = fake.counts();
        assert!(
            counts.double_frees == 0 && counts.invalid_handles == 0,
            "{what}: {counts}"
        );
    };
    for n in 1..=library_calls {
        fake_libs::reset();
        fake_libs::fail_nth(n, CUFFT_INTERNAL_ERROR);
        let outcome =
            catch_unwind(AssertUnwindSafe(|| life(&stream))).unwrap_or_else(|_| panic!("cuFFT call {n} panicked"));
        match outcome {
            Err(cuda_core::Error::Library(Error::Status { library, name, .. })) => {
                assert_eq!(
                    (library, name.as_str()),
                    ("cuFFT", "CUFFT_INTERNAL_ERROR"),
                    "cuFFT call {n}"
                )
            }
            other => panic!("cuFFT call {n} failing gave {other:?}"),
        }
        check_clean(&format!("cuFFT call {n}"));
    }
    for n in 1..=driver_calls {
        fake_libs::reset();
        fake.reset();
        fake.fail_nth(n, fake::OUT_OF_MEMORY);
        let outcome =
            catch_unwind(AssertUnwindSafe(|| life(&stream))).unwrap_or_else(|_| panic!("driver call {n} panicked"));
        if let Err(error) = &outcome {
            assert!(
                matches!(error, cuda_core::Error::Driver(_) | cuda_core::Error::Library(_)),
                "driver call {n}: {error:?}"
            );
        }
        fake.clear_faults();
        check_clean(&format!("driver call {n}"));
    }
    println!("failure points: {library_calls} cuFFT calls, {driver_calls} driver calls");
}

/// An expression feeding a transform becomes cuFFT's load callback where the thread asked for
/// load callbacks (`fft::set_load_callbacks`): the plan is made as cuFFT
/// asks (`cufftCreate`, `cufftSetAutoAllocation`, `cufftXtSetJITCallback`, then
/// `cufftMakePlanMany64`), cached by the expression's kernel key with the shape (another norm
/// or other arrays of the same shapes reuse it), and `plan_cache_info` says the callback ran.
/// A cuFFT that refuses the callback (`CUFFT_NOT_SUPPORTED`) gets the fallback, one fused
/// kernel writing the input and the plain plan, and is not asked again.
#[test]
fn expressions_become_load_callbacks_or_fall_back() {
    use cuda_core::fft::{self, FftNorm};
    use cuda_core::{Complex, DeviceArray};
    if !nvrtc_available("load callbacks") {
        return;
    }
    let fake = session();
    let context = Device::get(0).unwrap().primary_context().unwrap();
    let stream = Stream::new(&context).unwrap();
    let x = DeviceArray::<f32>::zeros(&stream, [4, 64]).unwrap();
    let window = DeviceArray::<f32>::zeros(&stream, [64]).unwrap();
    fft::clear_plan_cache();
    fake_libs::reset();
    assert!(!fft::set_load_callbacks(true), "off by default");
    let before = fft::plan_cache_info();
    let spectrum = fft::rfft(&(&x * &window), None, -1, FftNorm::Backward).unwrap();
    assert_eq!(spectrum.shape(), [4, 33]);
    let info = fft::plan_cache_info();
    assert_eq!(info.load_callback_transforms - before.load_callback_transforms, 1);
    assert_eq!((info.plans, info.load_callback_plans), (1, 1));
    assert_eq!(fake_libs::live(Live::CallbackPlans), 1);
    // cufftCreate, cufftSetAutoAllocation, cufftXtSetJITCallback, cufftMakePlanMany64, then
    // cufftSetStream, cufftSetWorkArea, cufftXtExec.
    assert_eq!(fake_libs::calls(), 7);
    let calls = fake_libs::calls();
    let other = DeviceArray::<f32>::zeros(&stream, [4, 64]).unwrap();
    fft::rfft(&other * &window, None, -1, FftNorm::Ortho).unwrap();
    assert_eq!(
        fake_libs::calls() - calls,
        3,
        "the cached plan: stream, work area, execution"
    );
    assert_eq!(fft::plan_cache_info().load_callback_plans, 1);
    // A complex product: a complex-to-complex plan with a callback of its own.
    let a = DeviceArray::<Complex<f32>>::zeros(&stream, [4, 64]).unwrap();
    let product = fft::fft(&a * &a, None, -1, FftNorm::Backward).unwrap();
    assert_eq!(product.shape(), [4, 64]);
    assert_eq!(fake_libs::live(Live::CallbackPlans), 2);
    let info = fft::plan_cache_info();
    assert_eq!(info.load_callback_transforms - before.load_callback_transforms, 3);

    // What evaluating the expression refuses, the transform refuses before calling cuFFT.
    let small = DeviceArray::<i8>::zeros(&stream, [4, 64]).unwrap();
    let calls = fake_libs::calls();
    assert!(matches!(
        fft::fft(&small * 1000, None, -1, FftNorm::Backward),
        Err(cuda_core::Error::InvalidValue(m)) if m.contains("out of bounds")
    ));
    assert!(matches!(
        fft::rfft(&a * &a, None, -1, FftNorm::Backward),
        Err(cuda_core::Error::NotSupported(_))
    ));
    assert_eq!(fake_libs::calls(), calls);

    // A cuFFT without LTO callbacks: the fallback (the stand-in runs `x * y + z` of f32, loaded
    // as PTX).
    cuda_core::load_generated_as_ptx(true);
    let [w, y, z] = [0.0f32, 1.0, 2.0].map(|v| DeviceArray::<f32>::full(&stream, [2, 32], v).unwrap());
    fake_libs::refuse_jit_callbacks(true);
    let plans = fake_libs::live(Live::Plans);
    let spectrum = fft::rfft(&w * &y + &z, None, -1, FftNorm::Backward).unwrap();
    assert_eq!(spectrum.shape(), [2, 17]);
    let info = fft::plan_cache_info();
    assert_eq!(info.fallback_transforms - before.fallback_transforms, 1);
    let why = info.last_fallback.unwrap_or_default();
    assert!(why.contains("CUFFT_NOT_SUPPORTED"), "{why}");
    assert_eq!(
        fake_libs::live(Live::CallbackPlans),
        2,
        "the refused plan was destroyed"
    );
    assert_eq!(
        fake_libs::live(Live::Plans),
        plans + 1,
        "the plain plan of the fallback"
    );
    // The refusal is remembered: no callback is offered again for that expression.
    let calls = fake_libs::calls();
    fft::rfft(&w * &y + &z, None, -1, FftNorm::Backward).unwrap();
    assert_eq!(fake_libs::calls() - calls, 3);
    let info = fft::plan_cache_info();
    assert_eq!(info.fallback_transforms - before.fallback_transforms, 2);
    assert!(info.last_fallback.unwrap_or_default().contains("refused"));
    fake_libs::refuse_jit_callbacks(false);

    fft::clear_plan_cache();
    assert_eq!(fake_libs::live(Live::Plans), 0);
    assert_eq!(fake_libs::live(Live::DoubleDestroys), 0);
    drop((x, window, other, a, small, spectrum, product, y, z, w));
    stream.synchronize().unwrap();
    let counts = fake.counts();
    assert!(counts.double_frees == 0 && counts.invalid_handles == 0, "{counts}");
}

/// A complex-to-real transform of an expression takes the fallback (cuFFT overwrites its
/// input, which a load callback does not have): one kernel writes the expression into an
/// array of its own, which the complex-to-real plan then reads and overwrites, with no second
/// copy. `irfft`, `hfft` (conjugated in that kernel) and `irfft2` (one complex-to-real plan of
/// two axes) each launch that one kernel; `irfftn` over 4 axes runs a complex plan first. (The
/// stand-in driver runs generated kernels as no-ops here: only the plans and launches count.)
#[test]
fn complex_to_real_transforms_of_expressions_read_their_staged_input() {
    use cuda_core::fft::{self, FftNorm};
    use cuda_core::{Axes, Complex, DeviceArray, ExprOps};
    if !nvrtc_available("complex-to-real transforms of expressions") {
        return;
    }
    let fake = session();
    let context = Device::get(0).unwrap().primary_context().unwrap();
    let stream = Stream::new(&context).unwrap();
    cuda_core::load_generated_as_ptx(true);
    fake.set_bodiless_kernels_noop(true);
    let spectrum = DeviceArray::<Complex<f32>>::zeros(&stream, [4, 51]).unwrap();
    let wide = DeviceArray::<Complex<f64>>::zeros(&stream, [2, 3, 4, 9]).unwrap();
    fft::clear_plan_cache();
    let launches = |fake: &Session| fake.trace().matches("cuLaunchKernel").count();
    let before = fft::plan_cache_info();
    type Transform<'a> = &'a dyn Fn() -> cuda_core::Result<DeviceArray<f32>>;
    let transforms: [(&str, Transform<'_>, &[usize]); 3] = [
        (
            "irfft(X * X)",
            &|| fft::irfft(&spectrum * &spectrum, Some(100), -1, FftNorm::Backward),
            &[4, 100],
        ),
        (
            "hfft(conj(X))",
            &|| fft::hfft((&spectrum).conj(), Some(100), -1, FftNorm::Forward),
            &[4, 100],
        ),
        (
            "irfft2(X * X)",
            &|| fft::irfft2(&spectrum * &spectrum, None, Axes::ALL, FftNorm::Ortho),
            &[4, 100],
        ),
    ];
    let check = |what: &str, shape: &[usize], got: Vec<usize>| {
        assert_eq!(got, shape, "{what}");
        assert_eq!(launches(&fake), 1, "{what}: the staging kernel only");
        fake.reset();
    };
    fake.reset();
    for (what, transform, shape) in transforms {
        let got = transform().unwrap_or_else(|error| panic!("{what}: {error:?}"));
        check(what, shape, got.shape().to_vec());
    }
    let got = fft::irfftn(&wide * &wide, None, Axes::ALL, FftNorm::Backward).unwrap();
    check("irfftn(Z * Z) over 4 axes", &[2, 3, 4, 16], got.shape().to_vec());
    let info = fft::plan_cache_info();
    assert_eq!(info.fallback_transforms - before.fallback_transforms, 4);
    assert_eq!(info.load_callback_transforms, before.load_callback_transforms);
    assert!(
        info.last_fallback.unwrap_or_default().contains("complex-to-real"),
        "the fallback names its reason"
    );
    fake.set_bodiless_kernels_noop(false);
    fft::clear_plan_cache();
    assert_eq!(fake_libs::live(Live::Plans), 0);
    assert_eq!(fake_libs::live(Live::DoubleDestroys), 0);
    drop((spectrum, wide));
    stream.synchronize().unwrap();
    let counts = fake.counts();
    assert!(counts.double_frees == 0 && counts.invalid_handles == 0, "{counts}");
}

/// The `norm` factor of a transform of an array becomes cuFFT's store callback: the plan is
/// made as cuFFT asks (`cufftCreate`, `cufftSetAutoAllocation`, `cufftXtSetJITCallback` with a
/// store type, then `cufftMakePlanMany64`), cached for every norm of that shape (the factor is
/// caller info), and `plan_cache_info` counts it; a factor of 1 keeps the plain plan. A cuFFT
/// that refuses the callback gets the plain plan and the element-wise pass, and is not asked
/// again. (Complex-to-complex transforms only: the stand-in driver runs no generated kernel,
/// which the complex-to-real transforms' input copies are.)
#[test]
fn norm_factors_become_store_callbacks_or_fall_back() {
    use cuda_core::fft::{self, FftNorm};
    use cuda_core::{Complex, DeviceArray};
    if !nvrtc_available("store callbacks") {
        return;
    }
    let fake = session();
    let context = Device::get(0).unwrap().primary_context().unwrap();
    let stream = Stream::new(&context).unwrap();
    let x = DeviceArray::<Complex<f32>>::zeros(&stream, [4, 64]).unwrap();
    fft::clear_plan_cache();
    fake_libs::reset();
    let before = fft::plan_cache_info();
    let y = fft::fft(&x, None, -1, FftNorm::Ortho).unwrap();
    assert_eq!(y.shape(), [4, 64]);
    let info = fft::plan_cache_info();
    assert_eq!(info.store_callback_transforms - before.store_callback_transforms, 1);
    assert_eq!(
        (info.plans, info.store_callback_plans, info.load_callback_plans),
        (1, 1, 0)
    );
    assert_eq!(fake_libs::live(Live::StoreCallbackPlans), 1);
    assert_eq!(fake_libs::live(Live::CallbackPlans), 0, "no load callback");
    // cufftCreate, cufftSetAutoAllocation, cufftXtSetJITCallback, cufftMakePlanMany64, then
    // cufftSetStream, cufftSetWorkArea, cufftXtExec.
    assert_eq!(fake_libs::calls(), 7);
    // Another factor (ifft's backward 1/n): the cached plan, its caller info written anew.
    let calls = fake_libs::calls();
    fft::ifft(&x, None, -1, FftNorm::Backward).unwrap();
    assert_eq!(
        fake_libs::calls() - calls,
        3,
        "the cached plan: stream, work area, execution"
    );
    // A factor of 1: the plain plan, no callback.
    fft::fft(&x, None, -1, FftNorm::Backward).unwrap();
    let info = fft::plan_cache_info();
    assert_eq!((info.plans, info.store_callback_plans), (2, 1));
    assert_eq!(info.store_callback_transforms - before.store_callback_transforms, 2);
    // Double precision along the columns (a strided output written in place): a plan of its own.
    let z = DeviceArray::<Complex<f64>>::zeros(&stream, [16, 8]).unwrap();
    fft::fft(&z, None, 0, FftNorm::Forward).unwrap();
    assert_eq!(fake_libs::live(Live::StoreCallbackPlans), 2);

    // A cuFFT that refuses the callback: the plain plan, then the element-wise scale pass
    // (which the stand-in driver cannot run: its launch is refused as not supported).
    fake_libs::refuse_jit_callbacks(true);
    let other = DeviceArray::<Complex<f32>>::zeros(&stream, [4, 32]).unwrap();
    let plans = fake_libs::live(Live::Plans);
    let scaled = fft::fft(&other, None, -1, FftNorm::Ortho);
    assert!(matches!(scaled, Err(cuda_core::Error::Driver(_))), "{scaled:?}");
    let info = fft::plan_cache_info();
    assert_eq!(info.store_callback_transforms - before.store_callback_transforms, 3);
    let why = info.last_scale_pass.unwrap_or_default();
    assert!(why.contains("CUFFT_NOT_SUPPORTED"), "{why}");
    assert_eq!(
        fake_libs::live(Live::StoreCallbackPlans),
        2,
        "the refused plan was destroyed"
    );
    assert_eq!(fake_libs::live(Live::Plans), plans + 1, "the plain plan");
    // The refusal is remembered: the store callback is not offered again on this thread.
    let calls = fake_libs::calls();
    assert!(fft::fft(&other, None, -1, FftNorm::Ortho).is_err());
    assert_eq!(fake_libs::calls() - calls, 3, "the cached plain plan");
    assert!(fft::plan_cache_info()
        .last_scale_pass
        .unwrap_or_default()
        .contains("refused"));
    fake_libs::refuse_jit_callbacks(false);

    fft::clear_plan_cache();
    assert_eq!(fake_libs::live(Live::Plans), 0);
    assert_eq!(fake_libs::live(Live::DoubleDestroys), 0);
    drop((x, y, z, other));
    stream.synchronize().unwrap();
    let counts = fake.counts();
    assert!(counts.double_frees == 0 && counts.invalid_handles == 0, "{counts}");
}

/// Transforms of arrays scaled in store callbacks: `fft` in `ortho` and, on another shape,
/// `ifft` in `backward`.
fn store_fft_life(stream: &Stream) -> cuda_core::Result<()> {
    use cuda_core::fft::{self, FftNorm};
    use cuda_core::{Complex, DeviceArray};
    let x = DeviceArray::<Complex<f32>>::zeros(stream, [4, 64])?;
    fft::fft(&x, None, -1, FftNorm::Ortho)?;
    let y = DeviceArray::<Complex<f64>>::zeros(stream, [2, 32])?;
    fft::ifft(&y, None, -1, FftNorm::Backward)?;
    stream.synchronize()?;
    Ok(())
}

/// A failure at `cufftXtSetJITCallback` with a store type, at making the plan after it, at the
/// caller info's copy or at the execution is a typed error, not a fallback, and leaves no plan.
#[test]
fn store_callback_transforms_survive_a_failure_at_every_call() {
    if !nvrtc_available("store callback failure points") {
        return;
    }
    survives_a_failure_at_every_call(store_fft_life, 2 * 7);
}

/// A plan with a load or store callback on a capturing stream is refused before cuFFT is
/// called: a captured execution would replay its caller info's write from host words the
/// caller may have freed, into the plan's one buffer that the next execution rewrites. A plain
/// plan still runs there, and the capture stays valid.
#[test]
fn callback_plans_refuse_a_capturing_stream() {
    use cuda_driver::{CaptureMode, DeviceBuffer, DeviceMemory};
    use cuda_libs::fft::{Direction, Kind, LoadCallback, Plan, PlanDesc, Precision, StoreCallback};
    let fake = session();
    let context = Device::get(0).unwrap().primary_context().unwrap();
    let stream = Stream::new(&context).unwrap();
    let desc = PlanDesc::new(Kind::C2C, Precision::F32, &[64]).unwrap();
    let lto = [0u8; 4];
    let mut loaded = Plan::with_load_callback(
        &context,
        &desc,
        &LoadCallback {
            symbol: "load",
            lto_ir: &lto,
            info_words: 1,
        },
    )
    .unwrap();
    // SAFETY: never run (the stand-in runs no callback).
    let mut stored = unsafe {
        Plan::with_store_callback(
            &context,
            &desc,
            &StoreCallback {
                symbol: "store",
                lto_ir: &lto,
                info_words: 1,
            },
        )
        .unwrap()
    };
    let mut plain = Plan::new(&context, &desc).unwrap();
    let x = DeviceBuffer::<[f32; 2]>::zeroed(&context, 64).unwrap();
    let mut y = DeviceBuffer::<[f32; 2]>::zeroed(&context, 64).unwrap();
    let mut ws = DeviceBuffer::<u8>::zeroed(&context, plain.workspace_size().max(1)).unwrap();
    let forward = Direction::Forward;
    let scope = stream.capture_scope(CaptureMode::ThreadLocal).unwrap();
    let calls = fake_libs::calls();
    let refused = |result: cuda_libs::Result<()>| match result {
        Err(Error::InvalidValue(message)) => assert!(message.contains("capturing"), "{message}"),
        other => panic!("a callback plan on a capturing stream gave {other:?}"),
    };
    let reads = [&x as &dyn DeviceMemory];
    // SAFETY: refused before anything is queued.
    refused(unsafe { loaded.execute_loaded(&stream, forward, &[0], &reads, &mut y, None) });
    refused(stored.execute(&stream, forward, &x, &mut y, None));
    refused(stored.execute_in_place(&stream, forward, &mut y, None));
    assert_eq!(fake_libs::calls(), calls, "nothing reached cuFFT");
    plain.execute(&stream, forward, &x, &mut y, Some(&mut ws)).unwrap();
    scope.end().unwrap();
    // Outside the capture the callback plans run again.
    // SAFETY: never run (the stand-in runs no callback).
    unsafe { loaded.execute_loaded(&stream, forward, &[0], &reads, &mut y, Some(&mut ws)) }.unwrap();
    stored.execute(&stream, forward, &x, &mut y, Some(&mut ws)).unwrap();
    stream.synchronize().unwrap();
    drop((loaded, stored, plain));
    assert_eq!(fake_libs::live(Live::Plans), 0);
    let counts = fake.counts();
    assert!(counts.double_frees == 0 && counts.invalid_handles == 0, "{counts}");
}

/// NumPy's transforms on a capturing stream are `NotSupported` before cuFFT is called (a graph
/// would run on memory of a cached plan, which the cache may destroy while the graph lives):
/// arrays, a norm factor that would take a store callback and, where NVRTC compiles the load
/// callback, an expression; the capture stays valid and the same transforms run after it.
#[test]
fn transforms_refuse_a_capturing_stream() {
    use cuda_core::fft::{self, FftNorm};
    use cuda_core::{Complex, DeviceArray};
    use cuda_driver::CaptureMode;
    let fake = session();
    let context = Device::get(0).unwrap().primary_context().unwrap();
    let stream = Stream::new(&context).unwrap();
    let x = DeviceArray::<Complex<f32>>::zeros(&stream, [4, 64]).unwrap();
    let with_expression = nvrtc_available("a captured expression's transform");
    fft::clear_plan_cache();
    fake_libs::reset();
    let refused = |result: cuda_core::Result<DeviceArray<Complex<f32>>>| match result {
        Err(cuda_core::Error::NotSupported(message)) => assert!(message.contains("capturing"), "{message}"),
        other => panic!("a transform on a capturing stream gave {other:?}"),
    };
    let scope = stream.capture_scope(CaptureMode::ThreadLocal).unwrap();
    refused(fft::fft(&x, None, -1, FftNorm::Backward));
    refused(fft::ifft(&x, None, -1, FftNorm::Backward));
    refused(fft::fft(&x, None, 0, FftNorm::Ortho));
    let real = fft::irfft(&x, None, -1, FftNorm::Backward);
    assert!(matches!(real, Err(cuda_core::Error::NotSupported(_))), "{real:?}");
    if with_expression {
        refused(fft::fft(&x * 2.0f32, None, -1, FftNorm::Backward));
    }
    assert_eq!(fake_libs::calls(), 0, "nothing reached cuFFT");
    assert_eq!(fake_libs::live(Live::Plans), 0);
    scope.end().unwrap();
    fft::fft(&x, None, -1, FftNorm::Backward).unwrap();
    assert_eq!(fake_libs::live(Live::Plans), 1);
    fft::clear_plan_cache();
    drop(x);
    stream.synchronize().unwrap();
    let counts = fake.counts();
    assert!(counts.double_frees == 0 && counts.invalid_handles == 0, "{counts}");
}
