//! `fakelibs`: a **test double** for cuFFT and cuSOLVER, loaded in their place beside the
//! fakecuda driver ([`crate::fake`]).
//!
//! `libfakelibs.so` (C, `tests/fakelibs/fakelibs.c`, built by this package's build script)
//! exports the cuFFT and cuSOLVER entry points `cuda_libs::fft` and `cuda_libs::solver` call,
//! checks their handles, counts the live ones, can fail the Nth call with a chosen status, and
//! writes a chosen `info` into fakecuda's device memory, so the wrappers' argument checks,
//! failure paths and `info` read-back run on a machine without a GPU. It computes nothing.
//!
//! Only tests load it: [`install`] points `cuda_sys::cufft()` and `cuda_sys::cusolver()` at it
//! through `CUDA_CUFFT_LIBRARY` and `CUDA_CUSOLVER_LIBRARY`.

use std::ffi::c_int;
use std::path::Path;
use std::sync::{Once, OnceLock};

/// Where the build script put `libfakelibs.so`.
pub const LIBRARY_PATH: &str = env!("FAKELIBS_PATH");

/// Bytes of device workspace the stand-in's plans and factorisations ask for.
pub const WORKSPACE: usize = 4096;

/// What [`live`] counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Live {
    /// cuFFT plans made and not destroyed.
    Plans = 0,
    /// cuSOLVER handles.
    Solvers = 1,
    /// cuSOLVER parameter objects.
    Params = 2,
    /// Destroys of a plan already destroyed.
    DoubleDestroys = 3,
    /// cuFFT plans made with a load callback (`cufftXtSetJITCallback`) and not destroyed.
    CallbackPlans = 4,
    /// cuFFT plans made with a store callback and not destroyed.
    StoreCallbackPlans = 5,
}

/// Points cuFFT and cuSOLVER at the stand-in, and the driver at fakecuda. Every test of a
/// binary that uses it calls this first (the libraries are loaded once per process).
///
/// # Panics
/// If either library was already loaded from another file.
pub fn install() {
    crate::fake::install();
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| {
        // Soundness: as in `fake::install`, this runs once, inside `Once`, before any test of the
        // binary reads the environment.
        std::env::set_var("CUDA_CUFFT_LIBRARY", LIBRARY_PATH);
        std::env::set_var("CUDA_CUSOLVER_LIBRARY", LIBRARY_PATH);
    });
    let cufft = cuda_sys::cufft().unwrap_or_else(|e| panic!("fakelibs did not load as cuFFT: {e}"));
    assert_eq!(
        cufft.path(),
        Path::new(LIBRARY_PATH),
        "cuFFT was loaded before fake_libs::install()"
    );
    let cusolver = cuda_sys::cusolver().unwrap_or_else(|e| panic!("fakelibs did not load as cuSOLVER: {e}"));
    assert_eq!(
        cusolver.path(),
        Path::new(LIBRARY_PATH),
        "cuSOLVER was loaded before fake_libs::install()"
    );
}

struct Controls {
    reset: unsafe extern "C" fn(),
    fail_nth: unsafe extern "C" fn(i64, c_int),
    calls: unsafe extern "C" fn() -> i64,
    live: unsafe extern "C" fn(c_int) -> i64,
    set_info: unsafe extern "C" fn(c_int),
    refuse_jit_callbacks: unsafe extern "C" fn(c_int),
    _library: libloading::Library,
}

fn controls() -> &'static Controls {
    static CONTROLS: OnceLock<Controls> = OnceLock::new();
    CONTROLS.get_or_init(|| {
        // SAFETY: the stand-in's initialisers only set up static data.
        let library = unsafe { libloading::Library::new(LIBRARY_PATH) }
            .unwrap_or_else(|e| panic!("cannot open {LIBRARY_PATH}: {e}"));
        macro_rules! get {
            ($name:literal) => {
                // SAFETY: each field's type is the C declaration of the named function in
                // fakelibs.c; the library outlives the pointer because `Controls` owns it.
                *unsafe { library.get(concat!($name, "\0").as_bytes()) }
                    .unwrap_or_else(|e| panic!("{} is missing from {LIBRARY_PATH}: {e}", $name))
            };
        }
        Controls {
            reset: get!("fakelibs_reset"),
            fail_nth: get!("fakelibs_fail_nth"),
            calls: get!("fakelibs_calls"),
            live: get!("fakelibs_live"),
            set_info: get!("fakelibs_set_info"),
            refuse_jit_callbacks: get!("fakelibs_refuse_jit_callbacks"),
            _library: library,
        }
    })
}

/// Clears the call counter, the armed failure, the `info` to write and a refusal of load
/// callbacks (live handles stay).
pub fn reset() {
    // SAFETY: takes no arguments; the stand-in locks its own state.
    unsafe { (controls().reset)() }
}

/// Makes the `n`th library call from now fail with `status` (a `cufftResult` or
/// `cusolverStatus_t`).
pub fn fail_nth(n: i64, status: i32) {
    // SAFETY: plain values.
    unsafe { (controls().fail_nth)(n, status) }
}

/// Library calls counted since the last [`reset`] (destroys are not counted: they never fail).
pub fn calls() -> i64 {
    // SAFETY: takes no arguments.
    unsafe { (controls().calls)() }
}

/// How many of `what` there are now.
pub fn live(what: Live) -> i64 {
    // SAFETY: a plain value.
    unsafe { (controls().live)(what as c_int) }
}

/// The `info` the next factorisations write.
pub fn set_info(info: i32) {
    // SAFETY: a plain value.
    unsafe { (controls().set_info)(info) }
}

/// Makes `cufftXtSetJITCallback` answer `CUFFT_NOT_SUPPORTED` (a cuFFT without LTO callbacks),
/// or take callbacks again.
pub fn refuse_jit_callbacks(refuse: bool) {
    // SAFETY: a plain value.
    unsafe { (controls().refuse_jit_callbacks)(c_int::from(refuse)) }
}
