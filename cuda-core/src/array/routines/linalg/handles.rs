//! The cuBLAS, cuBLASLt and (feature `solver`) cuSOLVER handles of each stream, and the
//! process-wide TF32 and graph-replay settings they follow.
//!
//! A handle is made on a stream's first product and kept (with the stream) in the kernel
//! registry, as CuPy keeps one per device; its lock serialises the calls through it. The
//! registry keeps the handles of the last [`KEPT_HANDLES`] streams of each kind (each handle
//! holds a workspace): a program that runs products on ever new streams does not accumulate
//! them, and a stream whose handle was let go gets a new one on its next product. Each thread
//! remembers the handle it used last, so a run of products on one stream finds its handle
//! without the registry's lock or a hash (what a small `matmul` would otherwise spend most of
//! its host time on besides the library call).

use std::cell::RefCell;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::thread::LocalKey;

use cuda_driver::Stream;
use cuda_libs::blas::{Blas, Lt};

use crate::array::kernels::registry::{forget_kernel, kernel, KernelKey};
use crate::error::Result;

/// The environment variable that allows TF32 for `f32` products when set to `1` (CuPy's
/// `CUPY_TF32`), read once, on the first product, unless [`set_tf32`] was called before.
pub const TF32_ENV: &str = "CUDA_RS_TF32";

/// The TF32 setting: not decided yet, off, on.
static TF32: AtomicU8 = AtomicU8::new(UNSET);
const UNSET: u8 = 0;
const OFF: u8 = 1;
const ON: u8 = 2;

/// Lets `f32` matrix products of arrays ([`matmul`](crate::DeviceArray::matmul), `dot`,
/// `tensordot`, fused epilogues, ...) use TF32 tensor cores, process-wide: much faster, with
/// inputs rounded to 10 mantissa bits (cuBLAS's `CUBLAS_COMPUTE_32F_FAST_TF32`). Off by default:
/// `f32` is true single precision unless this or [`TF32_ENV`]`=1` says otherwise; a call here
/// overrides the environment. Other element types are unaffected.
///
/// ```
/// cuda_core::set_tf32(true);
/// assert!(cuda_core::tf32());
/// cuda_core::set_tf32(false);
/// ```
pub fn set_tf32(allow: bool) {
    TF32.store(if allow { ON } else { OFF }, Ordering::Relaxed);
}

/// Whether `f32` matrix products may use TF32 (see [`set_tf32`]).
pub fn tf32() -> bool {
    match TF32.load(Ordering::Relaxed) {
        UNSET => {
            let from_env = std::env::var(TF32_ENV).is_ok_and(|value| value.trim() == "1");
            // A concurrent `set_tf32` wins over the environment.
            let _ = TF32.compare_exchange(
                UNSET,
                if from_env { ON } else { OFF },
                Ordering::Relaxed,
                Ordering::Relaxed,
            );
            TF32.load(Ordering::Relaxed) == ON
        }
        state => state == ON,
    }
}

/// Whether 2-D products through cuBLASLt replay as CUDA graphs (see [`set_matmul_replay`]).
static MATMUL_REPLAY: AtomicBool = AtomicBool::new(false);

/// Lets a 2-D [`matmul`](crate::DeviceArray::matmul) (and a fused epilogue) that repeats on the
/// same arrays and output block be captured once as a CUDA graph and replayed from then on
/// ([`cuda_libs::blas::Lt::set_replay`]), process-wide: a fraction of the library call's host
/// cost. Off by default, because each capture lasts one library call during which any
/// context-wide synchronise on another thread of the process (`Context::synchronize`,
/// `cudaDeviceSynchronize`, another library's wait) fails with
/// `CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED`. Turn it on in programs where no other thread
/// synchronises the context while products run.
///
/// ```
/// cuda_core::set_matmul_replay(true);
/// assert!(cuda_core::matmul_replay());
/// cuda_core::set_matmul_replay(false);
/// ```
pub fn set_matmul_replay(replay: bool) {
    MATMUL_REPLAY.store(replay, Ordering::Relaxed);
}

/// Whether repeated products replay as graphs (see [`set_matmul_replay`]).
pub fn matmul_replay() -> bool {
    MATMUL_REPLAY.load(Ordering::Relaxed)
}

/// The (context, stream) a handle is kept for: a stream handle is unique while the stream
/// lives, and the registry keeps each stream it has a handle for alive; the context tells
/// apart the per-context default streams.
type StreamKey = (u64, u64);

fn stream_key(stream: &Stream) -> StreamKey {
    // SAFETY: both handles are only used as numbers, to key the caches.
    let (context, raw) = unsafe { (stream.context().as_raw(), stream.as_raw()) };
    (context as u64, raw as u64)
}

/// The handle a thread used last, by stream: weak, so it never outlives the registry's (which
/// the exit hook drops before the driver goes).
type LastUsed<H> = RefCell<Option<(StreamKey, Weak<Mutex<H>>)>>;

thread_local! {
    static LAST_BLAS: LastUsed<Blas> = const { RefCell::new(None) };
    static LAST_LT: LastUsed<Lt> = const { RefCell::new(None) };
}

#[cfg(feature = "solver")]
thread_local! {
    static LAST_SOLVER: LastUsed<cuda_libs::solver::Solver> = const { RefCell::new(None) };
}

/// Streams whose handles the registry keeps, per kind of handle.
pub(crate) const KEPT_HANDLES: usize = 8;

/// The handles the registry keeps, oldest first: (kind, the stream's key as registry words).
static KEPT: Mutex<VecDeque<(&'static str, [u32; 4])>> = Mutex::new(VecDeque::new());

/// Notes a handle just made for `key` under `family` in `kept`, and returns the oldest of that
/// family when there are more than `limit` of it: the one to let go.
fn keep(
    kept: &mut VecDeque<(&'static str, [u32; 4])>,
    family: &'static str,
    key: [u32; 4],
    limit: usize,
) -> Option<[u32; 4]> {
    kept.push_back((family, key));
    if kept.iter().filter(|(f, _)| *f == family).count() <= limit {
        return None;
    }
    let oldest = kept.iter().position(|(f, _)| *f == family)?;
    kept.remove(oldest).map(|(_, key)| key)
}

/// The handle of `stream` kept under `family`: the thread's last one when it is the stream's,
/// else the registry's (made by `make` on first use).
fn cached<H: Send + 'static>(
    last: &'static LocalKey<LastUsed<H>>,
    family: &'static str,
    stream: &Stream,
    make: impl FnOnce() -> Result<H>,
) -> Result<Arc<Mutex<H>>> {
    let key = stream_key(stream);
    // `try_with`: during the thread's teardown there is no cache, only the registry.
    let hit = last
        .try_with(|last| match &*last.borrow() {
            Some((used, handle)) if *used == key => handle.upgrade(),
            _ => None,
        })
        .ok()
        .flatten();
    if let Some(handle) = hit {
        return Ok(handle);
    }
    let words = [key.0 as u32, (key.0 >> 32) as u32, key.1 as u32, (key.1 >> 32) as u32];
    let mut made = false;
    let handle = kernel(KernelKey::Encoded(family, words.to_vec()), || {
        made = true;
        // Making a library handle synchronises the device (and allocates its workspace).
        crate::graph::refuse_host_wait(
            stream,
            "a stream's first matrix product or factorisation (making its cuBLAS/cuSOLVER handle; run one before the capture)",
        )?;
        Ok(Mutex::new(make()?))
    })?;
    if made {
        crate::at_exit::register_after_library(family);
        let evicted = keep(
            &mut KEPT.lock().unwrap_or_else(std::sync::PoisonError::into_inner),
            family,
            words,
            KEPT_HANDLES,
        );
        if let Some(oldest) = evicted {
            forget_kernel(family, &oldest);
        }
    }
    let _ = last.try_with(|last| *last.borrow_mut() = Some((key, Arc::downgrade(&handle))));
    Ok(handle)
}

/// The cuBLAS handle of `stream`.
pub(super) fn blas(stream: &Stream) -> Result<Arc<Mutex<Blas>>> {
    cached(&LAST_BLAS, "cublas handle", stream, || Ok(Blas::new(stream)?))
}

/// The cuBLASLt handle of `stream` (its plans: descriptors and algorithms per shape).
pub(super) fn lt(stream: &Stream) -> Result<Arc<Mutex<Lt>>> {
    cached(&LAST_LT, "cublaslt handle", stream, || Ok(Lt::new(stream)?))
}

/// The cuSOLVER handle of `stream` (with its cuBLAS for the batched LU and its `info` slots).
#[cfg(feature = "solver")]
pub(super) fn solver(stream: &Stream) -> Result<Arc<Mutex<cuda_libs::solver::Solver>>> {
    refuse_solver_in_capture(stream)?;
    cached(&LAST_SOLVER, "cusolver handle", stream, || {
        Ok(cuda_libs::solver::Solver::new(stream)?)
    })
}

/// [`Error::HostWaitInCapture`](crate::Error::HostWaitInCapture) if `stream` is capturing a
/// graph: every cuSOLVER routine reads its `info` back once (NumPy's `LinAlgError`), a host
/// wait. Each routine calls it before it copies or allocates anything on its way to cuSOLVER,
/// so a refused routine leaves the capture as it found it (`det` and `slogdet` of small
/// matrices, one kernel of the crate's with no host wait, are not refused).
#[cfg(feature = "solver")]
pub(super) fn refuse_solver_in_capture(stream: &Stream) -> Result<()> {
    crate::graph::refuse_host_wait(stream, "a cuSOLVER routine (its info is read back once, a host wait)")
}

/// Runs `routine` with the cuSOLVER handle of `stream`, locked for the whole routine (the `info`
/// slots it queues belong to it until read back).
#[cfg(feature = "solver")]
pub(super) fn with_solver<R>(
    stream: &Stream,
    routine: impl FnOnce(&mut cuda_libs::solver::Solver) -> Result<R>,
) -> Result<R> {
    let handle = solver(stream)?;
    let mut solver = handle.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    routine(&mut solver)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_oldest_handle_of_a_kind_goes_past_the_limit() {
        let mut kept = VecDeque::new();
        assert_eq!(keep(&mut kept, "blas", [1; 4], 2), None);
        assert_eq!(keep(&mut kept, "lt", [1; 4], 2), None);
        assert_eq!(keep(&mut kept, "blas", [2; 4], 2), None);
        assert_eq!(keep(&mut kept, "lt", [2; 4], 2), None);
        // A third of a kind lets the first of that kind go, not the other kind's.
        assert_eq!(keep(&mut kept, "blas", [3; 4], 2), Some([1; 4]));
        assert_eq!(keep(&mut kept, "lt", [3; 4], 2), Some([1; 4]));
        assert_eq!(keep(&mut kept, "blas", [4; 4], 2), Some([2; 4]));
        assert_eq!(kept.len(), 4);
    }

    #[test]
    fn matmul_replay_is_off_until_asked_for() {
        assert!(!matmul_replay(), "no hidden captures: off by default");
        set_matmul_replay(true);
        assert!(matmul_replay());
        set_matmul_replay(false);
        assert!(!matmul_replay());
    }

    #[test]
    fn the_tf32_setter_overrides_the_default() {
        set_tf32(true);
        assert!(tf32());
        set_tf32(false);
        assert!(!tf32());
    }
}
