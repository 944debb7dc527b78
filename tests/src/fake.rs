//! `fakecuda`: a **test double** for the CUDA driver.
//!
//! `libfakecuda.so` (C, in `tests/fakecuda/`, built by this package's build
//! script) exports the driver entry points the safe layers call, with
//! `cuda.h`'s signatures, over host memory: two H200-like devices, contexts,
//! memory, streams and events (run on the host in order, at once or, in
//! deferred mode, when waited for), modules
//! whose kernels are host functions (see `tests/fakecuda/kernels.c`), stream
//! capture and graphs. It counts live handles, refuses use after free and
//! double free (and counts them), and can make the Nth driver call, or every
//! call of one name, fail with a chosen error.
//!
//! Only tests load it: [`install`] points `cuda_sys::driver()` at it through
//! `CUDA_DRIVER_LIBRARY`. No user-facing code path knows about it.
//!
//! ```no_run
//! let fake = tests::fake::session();
//! fake.fail_nth(1, tests::fake::OUT_OF_MEMORY);
//! // ... the next driver call fails with CUDA_ERROR_OUT_OF_MEMORY ...
//! assert_eq!(fake.counts().live_handles(), 0);
//! ```

use std::ffi::{c_char, c_int, CString};
use std::fmt;
use std::path::Path;
use std::sync::{Mutex, MutexGuard, Once, OnceLock};

/// Where the build script put `libfakecuda.so`.
pub const LIBRARY_PATH: &str = env!("FAKECUDA_PATH");

/// A module image the stand-in understands (PTX entry declarations; the
/// bodies run on the host, see `tests/fakecuda/kernels.c`):
/// `vector_add(const float *a, const float *b, float *c, unsigned n)`,
/// `fill(float *out, float value, unsigned n)`,
/// `saxpy(float a, const float *x, float *y, unsigned n)`,
/// `affine(struct { float scale, offset; }, float *data, unsigned n)`, `noop()` and
/// `countdown(cudaGraphConditionalHandle handle, int *counter)` (decrements the counter and sets
/// the condition to whether it is still positive).
pub const KERNELS: &str = "\
.version 8.0
.target sm_90
.address_size 64
.visible .entry vector_add(.param .u64 a, .param .u64 b, .param .u64 c, .param .u32 n)
.visible .entry fill(.param .u64 out, .param .f32 value, .param .u32 n)
.visible .entry saxpy(.param .f32 a, .param .u64 x, .param .u64 y, .param .u32 n)
.visible .entry affine(.param .align 4 .b8 f[8], .param .u64 data, .param .u32 n)
.visible .entry noop()
.visible .entry countdown(.param .u64 handle, .param .u64 counter)
";

/// `CUDA_ERROR_OUT_OF_MEMORY`.
pub const OUT_OF_MEMORY: i32 = 2;
/// `CUDA_ERROR_NOT_INITIALIZED`.
pub const NOT_INITIALIZED: i32 = 3;
/// `CUDA_ERROR_LAUNCH_FAILED`.
pub const LAUNCH_FAILED: i32 = 719;
/// `CUDA_ERROR_UNKNOWN`.
pub const UNKNOWN: i32 = 999;
/// The errors the fault-injection suites inject at every failure point.
pub const INJECTED_ERRORS: [i32; 4] = [OUT_OF_MEMORY, LAUNCH_FAILED, NOT_INITIALIZED, UNKNOWN];

/// The kinds of handle the fake counts (`enum fake_kind` in `fakecuda.h`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Explicit contexts (`cuCtxCreate`).
    Context = 1,
    /// Primary-context retains (each retain counts once).
    PrimaryRetain = 2,
    /// Device memory (`cuMemAlloc`, `cuMemAllocAsync`).
    DeviceMemory = 3,
    /// Pinned or registered host memory.
    HostMemory = 4,
    /// Streams.
    Stream = 5,
    /// Events.
    Event = 6,
    /// Modules.
    Module = 7,
    /// Graphs (from stream capture).
    Graph = 8,
    /// Instantiated graphs.
    GraphExec = 9,
    /// Memory pools made with `cuMemPoolCreate` (not the devices' default pools).
    MemoryPool = 10,
    /// Context-independent libraries (`cuLibraryLoadData`).
    Library = 11,
    /// Reserved virtual address ranges (`cuMemAddressReserve`).
    AddressRange = 12,
    /// Physical memory of virtual memory management (`cuMemCreate`), until
    /// released and unmapped.
    PhysicalMemory = 13,
    /// CUDA arrays (`cuArray3DCreate`).
    Array = 14,
    /// Texture objects (`cuTexObjectCreate`).
    TextureObject = 15,
    /// Surface objects (`cuSurfObjectCreate`).
    SurfaceObject = 16,
    /// IPC memory handles opened (`cuIpcOpenMemHandle`).
    IpcMapping = 17,
}

impl Kind {
    /// Every kind a program must release.
    pub const ALL: [Kind; 17] = [
        Kind::Context,
        Kind::PrimaryRetain,
        Kind::DeviceMemory,
        Kind::HostMemory,
        Kind::Stream,
        Kind::Event,
        Kind::Module,
        Kind::Graph,
        Kind::GraphExec,
        Kind::MemoryPool,
        Kind::Library,
        Kind::AddressRange,
        Kind::PhysicalMemory,
        Kind::Array,
        Kind::TextureObject,
        Kind::SurfaceObject,
        Kind::IpcMapping,
    ];
}

/// Points the driver loader at the fake. Every test in a binary that uses the
/// fake must call this (directly or through [`session`]) before anything
/// touches the driver: `cuda_sys::driver()` reads `CUDA_DRIVER_LIBRARY` once
/// per process.
///
/// # Panics
/// If the driver was already loaded from another library.
pub fn install() {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| {
        // Soundness: setting the environment races with any other thread
        // reading it at the same moment. This runs once, inside `Once`, and
        // every test of a binary that uses the fake calls `install` before it
        // does anything else, so the other test threads are blocked here
        // rather than reading the environment.
        std::env::set_var("CUDA_DRIVER_LIBRARY", LIBRARY_PATH);
    });
    let driver = cuda_sys::driver().unwrap_or_else(|e| panic!("fakecuda did not load: {e}"));
    assert_eq!(
        driver.path(),
        Path::new(LIBRARY_PATH),
        "the driver was loaded before fake::install(); call it first in every test of this binary"
    );
}

/// The fake's control functions (`fakecuda_*` in `tests/fakecuda/registry.c`).
struct Controls {
    reset: unsafe extern "C" fn(),
    fail_nth: unsafe extern "C" fn(u64, c_int),
    fail_named: unsafe extern "C" fn(*const c_char, c_int),
    clear_faults: unsafe extern "C" fn(),
    fail_every: unsafe extern "C" fn(u64, c_int),
    destroy_all: unsafe extern "C" fn() -> i64,
    set_deferred: unsafe extern "C" fn(c_int),
    set_bodiless_kernels_noop: unsafe extern "C" fn(c_int),
    calls: unsafe extern "C" fn() -> u64,
    injected: unsafe extern "C" fn() -> u64,
    live: unsafe extern "C" fn(c_int) -> i64,
    double_frees: unsafe extern "C" fn() -> u64,
    invalid_handles: unsafe extern "C" fn() -> u64,
    orphaned: unsafe extern "C" fn() -> u64,
    pool_order_violations: unsafe extern "C" fn() -> u64,
    trace: unsafe extern "C" fn(*mut c_char, usize) -> usize,
    /// Keeps the library (already loaded by cuda-sys; this is a second reference) open.
    _library: libloading::Library,
}

fn controls() -> &'static Controls {
    static CONTROLS: OnceLock<Controls> = OnceLock::new();
    CONTROLS.get_or_init(|| {
        // SAFETY: the fake's initialisers only set up static data.
        let library = unsafe { libloading::Library::new(LIBRARY_PATH) }
            .unwrap_or_else(|e| panic!("cannot open {LIBRARY_PATH}: {e}"));
        macro_rules! get {
            ($name:literal) => {
                // SAFETY: each field's type is the C declaration of the named
                // function in registry.c; the library outlives the pointer
                // because `Controls` owns it.
                *unsafe { library.get(concat!($name, "\0").as_bytes()) }
                    .unwrap_or_else(|e| panic!("{} is missing from {LIBRARY_PATH}: {e}", $name))
            };
        }
        Controls {
            reset: get!("fakecuda_reset"),
            fail_nth: get!("fakecuda_fail_nth"),
            fail_named: get!("fakecuda_fail_named"),
            clear_faults: get!("fakecuda_clear_faults"),
            fail_every: get!("fakecuda_fail_every"),
            destroy_all: get!("fakecuda_destroy_all"),
            set_deferred: get!("fakecuda_set_deferred"),
            set_bodiless_kernels_noop: get!("fakecuda_set_bodiless_kernels_noop"),
            calls: get!("fakecuda_calls"),
            injected: get!("fakecuda_injected"),
            live: get!("fakecuda_live"),
            double_frees: get!("fakecuda_double_frees"),
            invalid_handles: get!("fakecuda_invalid_handles"),
            orphaned: get!("fakecuda_orphaned"),
            pool_order_violations: get!("fakecuda_pool_order_violations"),
            trace: get!("fakecuda_trace"),
            _library: library,
        }
    })
}

/// Exclusive use of the fake: its counters and injected faults are process
/// wide, so tests that read or arm them run one at a time.
pub struct Session {
    _exclusive: MutexGuard<'static, ()>,
}

/// Installs the fake, waits for other sessions to end, and clears the
/// fake's counters and faults (live handles are kept, and still counted).
pub fn session() -> Session {
    static EXCLUSIVE: Mutex<()> = Mutex::new(());
    install();
    // A test that panicked while holding the lock has been reported already;
    // the fake's state is reset below either way.
    let guard = EXCLUSIVE.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    let session = Session { _exclusive: guard };
    session.reset();
    session.set_deferred(false);
    session.set_bodiless_kernels_noop(false);
    session
}

impl Session {
    /// Clears faults, the call counter, the trace and the misuse counters.
    pub fn reset(&self) {
        // SAFETY: the control functions take no pointers and only touch the fake's state under its lock.
        unsafe { (controls().reset)() }
    }

    /// The `n`-th counted driver call from now (1: the next) returns `code`, once.
    pub fn fail_nth(&self, n: u64, code: i32) {
        // SAFETY: as in `reset`.
        unsafe { (controls().fail_nth)(n, code) }
    }

    /// Every `k`-th counted call from now on returns `code` (0 stops); with
    /// several threads, which calls fail is up to the scheduler.
    pub fn fail_every(&self, k: u64, code: i32) {
        // SAFETY: as in `reset`.
        unsafe { (controls().fail_every)(k, code) }
    }

    /// Every call of driver function `name` (an exported name such as
    /// `cuMemAlloc_v2`) returns `code`; `code` 0 stops it.
    pub fn fail_named(&self, name: &str, code: i32) {
        let name = CString::new(name).expect("a driver function name has no NUL");
        // SAFETY: `name` is NUL-terminated and outlives the call, which copies it.
        unsafe { (controls().fail_named)(name.as_ptr(), code) }
    }

    /// Disarms every injected fault (counters are kept).
    pub fn clear_faults(&self) {
        // SAFETY: as in `reset`.
        unsafe { (controls().clear_faults)() }
    }

    /// Destroys every live object (memory, streams, ..., primary-context
    /// retains) as if released, so a test can start from nothing after a run
    /// that leaked. Returns how many handles were live. Objects the safe
    /// layer still owns must not be used afterwards.
    pub fn destroy_all(&self) -> i64 {
        // SAFETY: as in `reset`.
        unsafe { (controls().destroy_all)() }
    }

    /// Deferred mode: submitted work waits in its stream's queue until
    /// something waits for it (synchronising, querying, events, synchronous
    /// copies, frees), as on a GPU; off (the default), it runs at once.
    /// Switching it off runs everything pending.
    pub fn set_deferred(&self, on: bool) {
        // SAFETY: as in `reset`.
        unsafe { (controls().set_deferred)(c_int::from(on)) }
    }

    /// On, a launched kernel the stand-in has no host body for (see `tests/fakecuda/kernels.c`)
    /// runs as a no-op, leaving its outputs as they were (new memory holds the byte 0xa5);
    /// off (the default, and what [`session`] sets), it fails with `CUDA_ERROR_NOT_SUPPORTED`.
    /// For exercising the host side of generated kernels the stand-in cannot run.
    pub fn set_bodiless_kernels_noop(&self, on: bool) {
        // SAFETY: as in `reset`.
        unsafe { (controls().set_bodiless_kernels_noop)(c_int::from(on)) }
    }

    /// Counted driver calls since the last reset.
    pub fn calls(&self) -> u64 {
        // SAFETY: as in `reset`.
        unsafe { (controls().calls)() }
    }

    /// Faults that fired since the last reset.
    pub fn injected(&self) -> u64 {
        // SAFETY: as in `reset`.
        unsafe { (controls().injected)() }
    }

    /// Live handles of one kind.
    pub fn live(&self, kind: Kind) -> i64 {
        // SAFETY: as in `reset`.
        unsafe { (controls().live)(kind as c_int) }
    }

    /// Live handles by kind and the misuse counters.
    pub fn counts(&self) -> Counts {
        let c = controls();
        // SAFETY: as in `reset`.
        unsafe {
            Counts {
                live: Kind::ALL.map(|kind| (c.live)(kind as c_int)),
                double_frees: (c.double_frees)(),
                invalid_handles: (c.invalid_handles)(),
                orphaned: (c.orphaned)(),
            }
        }
    }

    /// Frees in the wrong order of memory shared through pools, ever (not reset): an exporter
    /// freeing an allocation that an import still holds, an imported pool destroyed before the
    /// pointers imported into it (`tests/fakecuda/pool_ipc.c`).
    pub fn pool_order_violations(&self) -> u64 {
        // SAFETY: as in `reset`.
        unsafe { (controls().pool_order_violations)() }
    }

    /// The names of the driver calls since the last reset (the last 1024).
    pub fn trace(&self) -> String {
        let c = controls();
        // SAFETY: a null buffer of size 0 asks for the length only.
        let length = unsafe { (c.trace)(std::ptr::null_mut(), 0) };
        let mut buffer = vec![0u8; length + 1];
        // SAFETY: `buffer` has room for `length` bytes and the NUL.
        unsafe { (c.trace)(buffer.as_mut_ptr().cast(), buffer.len()) };
        buffer.truncate(length);
        String::from_utf8_lossy(&buffer).into_owned()
    }
}

/// A snapshot of the fake's bookkeeping.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Counts {
    /// Live handles, in the order of [`Kind::ALL`].
    pub live: [i64; 17],
    /// Frees of handles or pointers already freed.
    pub double_frees: u64,
    /// Uses of unknown or already destroyed handles and pointers.
    pub invalid_handles: u64,
    /// Objects destroyed because their context went away first.
    pub orphaned: u64,
}

impl Counts {
    /// All live handles.
    pub fn live_handles(&self) -> i64 {
        self.live.iter().sum()
    }

    /// Nothing live, nothing misused.
    pub fn is_clean(&self) -> bool {
        self.live_handles() == 0 && self.double_frees == 0 && self.invalid_handles == 0 && self.orphaned == 0
    }
}

impl fmt::Display for Counts {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "live:")?;
        for (kind, count) in Kind::ALL.iter().zip(self.live) {
            if count != 0 {
                write!(f, " {kind:?}={count}")?;
            }
        }
        write!(
            f,
            " (total {}); double frees: {}; invalid handles: {}; orphaned: {}",
            self.live_handles(),
            self.double_frees,
            self.invalid_handles,
            self.orphaned
        )
    }
}
