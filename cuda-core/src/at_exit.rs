//! Giving the process-wide caches back when the process exits: the default pools' cached blocks
//! ([`MemoryPool::for_context`](crate::MemoryPool::for_context)), the modules of generated
//! kernels, and the memory side of [`KernelCache::global`](crate::KernelCache::global) with the
//! modules loaded from it. Without this a leak checker (`compute-sanitizer --leak-check full`)
//! reports the caches as the program's leaks.
//!
//! ```no_run
//! use cuda_core::{Device, DeviceArray};
//!
//! # fn main() -> cuda_core::Result<()> {
//! let stream = Device::new(0)?.create_stream()?;
//! let x = DeviceArray::from_slice(&stream, &[1.0f32, 2.0])?; // a block of the default pool
//! assert_eq!((&x * 2.0).eval()?.to_vec()?, [2.0f32, 4.0]); // a generated kernel, loaded
//! drop(x); // the block goes back to the pool's cache
//! // At exit the cached block is freed and the module unloaded: nothing is left over.
//! # Ok(())
//! # }
//! ```
//!
//! The hook is registered once, with the C library's `atexit`, by the first default pool or
//! generated kernel, that is after the driver was loaded and initialised; exit handlers run in
//! the reverse order of their registration, so it runs before those the driver registered until
//! then. It only drops what the caches hold: a block still handed out, a kernel still held by
//! the program, stays, and a context that cannot be synchronised (a sticky error, a capture
//! under way, a driver already shut down) is left alone. It ignores errors (a cuda-driver
//! destructor may still log one to stderr) and never unwinds.

use std::ffi::c_int;
use std::sync::Once;

use cuda_driver::Context;

use crate::array::{
    default_pool_contexts, forget_kernels, loaded_contexts, release_all_imports, release_default_pools,
    synchronize_context, unload_loaded,
};
use crate::cache::release_global_memory;

extern "C" {
    /// The C library's `atexit`: runs `callback` when the process exits through `exit` (which
    /// returning from `main` does), after the handlers registered after it.
    fn atexit(callback: extern "C" fn()) -> c_int;
}

/// Registers [`release_at_exit`] with `atexit`, the first time only.
pub(crate) fn register() {
    static REGISTERED: Once = Once::new();
    REGISTERED.call_once(|| {
        // SAFETY: `release_at_exit` takes nothing, returns nothing and never unwinds, as an
        // `atexit` handler must. A failed registration (no memory) only leaves the caches for
        // the driver to tear down, as without the hook.
        unsafe { atexit(release_at_exit) };
    });
}

/// Registers [`release_at_exit`] once more, right after `library` made its first handle: cuBLAS,
/// cuBLASLt and cuFFT each carry the CUDA runtime, which registers its teardown on first use, and that
/// teardown leaves the context unusable (the H200's leak check listed the pools' blocks and
/// cuBLAS's own allocations when it ran first). Handlers run in the reverse order of
/// registration, so this one runs before that teardown, while the cached handles and blocks can
/// still be released. Releasing more than once is harmless: later runs find the caches empty.
#[cfg(any(feature = "blas", feature = "fft"))]
pub(crate) fn register_after_library(library: &'static str) {
    static REGISTERED: std::sync::Mutex<Vec<&'static str>> = std::sync::Mutex::new(Vec::new());
    let mut registered = REGISTERED.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    if !registered.contains(&library) {
        registered.push(library);
        // SAFETY: as in `register`.
        unsafe { atexit(release_at_exit) };
    }
}

/// The `atexit` handler. A panic must not unwind into the C library (nor turn a clean exit
/// into an abort): it is caught and dropped.
extern "C" fn release_at_exit() {
    let _ = std::panic::catch_unwind(release);
}

/// Gives back now what the exit hook gives back at exit: the default pools (their cached
/// blocks, and their hold on their contexts), the modules of generated kernels and the kernel
/// cache's memory side. For leak checkers and tests that count handles between runs; a later
/// call of a routine makes a pool and loads its kernels again. A block or kernel the program
/// still holds stays. Returns whether every context the caches use could be waited for: what
/// belongs to one that could not (a sticky error, a capture under way) stays cached, and a
/// later call tries again. Never panics; errors of the frees are ignored, as at exit.
pub fn release_process_caches() -> bool {
    release()
}

/// Waits for every context the caches use; then, for those that synchronised, unloads the
/// generated kernels and gives the default pools' cached blocks back, and, when all of them
/// did, empties the kernel cache's memory side (whose modules' contexts are not known here).
/// Whether all of them synchronised.
fn release() -> bool {
    // Imported tensors first: their deleters may give memory back to a default pool.
    release_all_imports();
    let mut contexts = default_pool_contexts();
    for context in loaded_contexts() {
        if !contexts.contains(&context) {
            contexts.push(context);
        }
    }
    if contexts.is_empty() {
        return true;
    }
    let count = contexts.len();
    let usable: Vec<Context> = contexts
        .into_iter()
        .filter(|context| synchronize_context(context).is_ok())
        .collect();
    let accepts = |context: &Context| usable.contains(context);
    if usable.len() == count {
        // The kernels and library handles the crate made (a handle's workspace is device memory).
        forget_kernels();
    }
    unload_loaded(accepts);
    if usable.len() == count {
        release_global_memory();
    }
    release_default_pools(accepts);
    usable.len() == count
}
