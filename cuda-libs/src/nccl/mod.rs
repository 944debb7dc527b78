//! NCCL: collectives (all-reduce, reduce, broadcast, all-gather, reduce-scatter) and
//! point-to-point transfers between GPUs, over [`cuda_driver`]'s device-memory contract.
//!
//! A [`Communicator`] is one rank of a group of GPUs. In one process that drives every GPU of
//! the machine, [`Communicator::init_all`] makes one per context; across processes, each
//! process makes one [`UniqueId`] exchange (rank 0 makes it, the others receive its
//! [`UniqueId::to_bytes`]) and calls [`Communicator::init_rank`].
//!
//! ```no_run
//! use cuda_driver::{Device, DeviceBuffer, Stream};
//! use cuda_libs::nccl::{self, Communicator, ReduceOp};
//!
//! # fn main() -> cuda_libs::Result<()> {
//! let contexts = Device::all()?
//!     .iter()
//!     .map(Device::primary_context)
//!     .collect::<Result<Vec<_>, _>>()?;
//! let comms = Communicator::init_all(&contexts)?;
//! let streams = contexts.iter().map(Stream::new).collect::<Result<Vec<_>, _>>()?;
//! let mut grads = contexts
//!     .iter()
//!     .map(|c| DeviceBuffer::from_slice(c, &[1.0f32; 1024]))
//!     .collect::<Result<Vec<_>, _>>()?;
//! // One thread drives every GPU: the calls go in one group.
//! nccl::group(|g| {
//!     for ((comm, grad), stream) in comms.iter().zip(&mut grads).zip(&streams) {
//!         g.all_reduce_in_place::<f32>(comm, grad, 1024, ReduceOp::Avg, stream)?;
//!     }
//!     Ok(())
//! })?;
//! Communicator::finalize_all(comms)?;
//! # Ok(())
//! # }
//! ```
//!
//! # Several processes
//! Rank 0 makes the id and sends its 128 bytes to the others (here over a local TCP socket);
//! every process then joins with its rank:
//!
//! ```no_run
//! use std::io::{Read, Write};
//! use std::net::{TcpListener, TcpStream};
//!
//! use cuda_driver::{Device, DeviceBuffer, Stream};
//! use cuda_libs::nccl::{Communicator, ReduceOp, UniqueId, UNIQUE_ID_BYTES};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let rank: usize = std::env::var("RANK")?.parse()?;
//! let nranks: usize = std::env::var("WORLD_SIZE")?.parse()?;
//! let id = if rank == 0 {
//!     let id = UniqueId::new()?;
//!     let listener = TcpListener::bind("127.0.0.1:29500")?;
//!     for _ in 1..nranks {
//!         listener.accept()?.0.write_all(&id.to_bytes())?;
//!     }
//!     id
//! } else {
//!     let mut bytes = [0u8; UNIQUE_ID_BYTES];
//!     TcpStream::connect("127.0.0.1:29500")?.read_exact(&mut bytes)?;
//!     UniqueId::from_bytes(&bytes)?
//! };
//! let context = Device::get(rank as u32)?.primary_context()?;
//! let comm = Communicator::init_rank(&id, rank, nranks, &context)?;
//! let stream = Stream::new(&context)?;
//! let mut grad = DeviceBuffer::from_slice(&context, &[rank as f32; 256])?;
//! comm.all_reduce_in_place::<f32>(&mut grad, 256, ReduceOp::Sum, &stream)?;
//! stream.synchronize()?;
//! # Ok(())
//! # }
//! ```
//! Run it as `NCCL_NVLS_ENABLE=0 RANK=r WORLD_SIZE=n program` for each `r`. (NVLink SHARP,
//! NCCL's multicast, stays off in this workspace's runs.)
//!
//! # Never waiting forever
//! Every communicator is made non-blocking (`ncclConfig_t::blocking = 0`): NCCL calls return at
//! once, and where NCCL answers `ncclInProgress` this crate polls `ncclCommGetAsyncError` until
//! the communicator is ready, for at most its [`timeout`](Communicator::set_timeout)
//! ([`DEFAULT_TIMEOUT`]), then returns [`Error::Timeout`]. A peer that never joins, or one thread
//! calling a collective on one of several communicators outside a [`group`], is a timeout, not
//! a hang.
//!
//! # Checks
//! Before NCCL is called: element counts against the buffers' lengths, each buffer's and the
//! stream's context against the communicator's ([`Error::WrongContext`]), ranks against the
//! communicator's size, and out-of-place buffers that overlap ([`Error::InvalidValue`]).
//! Every operand's use is recorded on the stream ([`DeviceMemory::begin_use`]) while the call is
//! queued, so buffers are not freed, and other streams not let in, before NCCL is done; memory
//! that is not one dense range (a strided, reversed or broadcast array view) is refused there,
//! before NCCL is called. A call in a [`group`] keeps its buffers borrowed, and their uses open,
//! until the group has been enqueued.
//!
//! # Threads
//! A [`Communicator`] may move to another thread (`Send`) but not be shared (`!Sync`): NCCL does
//! not allow two threads to use one communicator at once.

use std::cell::{Cell, RefCell};
use std::ffi::{c_int, c_void, CStr};
use std::marker::PhantomData;
use std::mem::ManuallyDrop;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use cuda_driver::{Access, Context, DeviceMemory, DeviceMemoryMut, Stream, StreamUse};
use cuda_sys::nccl::{ncclComm_t, ncclConfig_t, ncclDataType_t, ncclRedOp_t, ncclResult_t, ncclUniqueId};
use half::{bf16, f16};

use crate::{Error, Result};

mod check;

use check::Collective;

/// Bytes of a [`UniqueId`] (`NCCL_UNIQUE_ID_BYTES`).
pub const UNIQUE_ID_BYTES: usize = cuda_sys::nccl::NCCL_UNIQUE_ID_BYTES as usize;

/// How long a communicator waits for NCCL (init, a call answered `ncclInProgress`, the end of a
/// group, finalization) before [`Error::Timeout`]: 5 minutes, NCCL's own bootstrap timeout.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(300);

/// Loads NCCL now (it is loaded once per process, on first use), so a program can say early
/// that it is missing: [`Error::Load`] lists every place tried.
pub fn load() -> Result<()> {
    cuda_sys::nccl()?;
    Ok(())
}

/// NCCL's version as `(major, minor, patch)` (`ncclGetVersion`).
pub fn version() -> Result<(u32, u32, u32)> {
    let get = cuda_sys::nccl()?.ncclGetVersion()?;
    let mut code: c_int = 0;
    // SAFETY: `code` is a valid out-pointer.
    status("ncclGetVersion", unsafe { get(&mut code) })?;
    let code = code.max(0) as u32;
    Ok((code / 10000, code / 100 % 100, code % 100))
}

mod sealed {
    /// An element type's `ncclDataType_t`.
    pub trait Sealed: Copy {
        /// Its `ncclDataType_t` value.
        const DATA_TYPE: u32;
    }
}

/// An element type NCCL moves and reduces, with its `ncclDataType_t`:
///
/// | Rust | NCCL |
/// |---|---|
/// | `i8`, `u8` | `ncclInt8`, `ncclUint8` |
/// | `i32`, `u32` | `ncclInt32`, `ncclUint32` |
/// | `i64`, `u64` | `ncclInt64`, `ncclUint64` |
/// | [`half::f16`], [`half::bf16`] | `ncclFloat16`, `ncclBfloat16` |
/// | `f32`, `f64` | `ncclFloat32`, `ncclFloat64` |
pub trait NcclType: cuda_driver::DeviceCopy + sealed::Sealed {}

macro_rules! nccl_type {
    ($($ty:ty => $data:ident,)*) => {$(
        impl sealed::Sealed for $ty {
            const DATA_TYPE: u32 = ncclDataType_t::$data.0;
        }
        impl NcclType for $ty {}
    )*};
}

nccl_type! {
    i8 => ncclInt8,
    u8 => ncclUint8,
    i32 => ncclInt32,
    u32 => ncclUint32,
    i64 => ncclInt64,
    u64 => ncclUint64,
    f16 => ncclFloat16,
    bf16 => ncclBfloat16,
    f32 => ncclFloat32,
    f64 => ncclFloat64,
}

/// The reduction of a reducing collective.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ReduceOp {
    /// `ncclSum`.
    Sum,
    /// `ncclProd`.
    Prod,
    /// `ncclMax`.
    Max,
    /// `ncclMin`.
    Min,
    /// `ncclAvg`: the sum divided by the number of ranks (integer division for integers).
    Avg,
}

impl ReduceOp {
    fn raw(self) -> ncclRedOp_t {
        match self {
            ReduceOp::Sum => ncclRedOp_t::ncclSum,
            ReduceOp::Prod => ncclRedOp_t::ncclProd,
            ReduceOp::Max => ncclRedOp_t::ncclMax,
            ReduceOp::Min => ncclRedOp_t::ncclMin,
            ReduceOp::Avg => ncclRedOp_t::ncclAvg,
        }
    }
}

/// The id every rank of one communicator is made with (`ncclUniqueId`, 128 bytes): made once
/// ([`UniqueId::new`]) and sent to the other processes as bytes.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct UniqueId([u8; UNIQUE_ID_BYTES]);

impl UniqueId {
    /// A new id (`ncclGetUniqueId`; NCCL opens its bootstrap socket here). Needs NCCL, not a GPU.
    pub fn new() -> Result<UniqueId> {
        let get = cuda_sys::nccl()?.ncclGetUniqueId()?;
        let mut raw = ncclUniqueId::default();
        // SAFETY: `raw` is a valid out-pointer to a `ncclUniqueId`.
        status("ncclGetUniqueId", unsafe { get(&mut raw) })?;
        Ok(UniqueId(raw.internal.map(|c| c as u8)))
    }

    /// The id's bytes, to send to the other ranks.
    pub fn to_bytes(&self) -> [u8; UNIQUE_ID_BYTES] {
        self.0
    }

    /// The id from the bytes [`UniqueId::to_bytes`] gave; any other length than
    /// [`UNIQUE_ID_BYTES`] is [`Error::InvalidValue`].
    pub fn from_bytes(bytes: &[u8]) -> Result<UniqueId> {
        let bytes: [u8; UNIQUE_ID_BYTES] = bytes.try_into().map_err(|_| {
            Error::InvalidValue(format!(
                "an NCCL unique id is {UNIQUE_ID_BYTES} bytes, not {}",
                bytes.len()
            ))
        })?;
        Ok(UniqueId(bytes))
    }

    fn raw(&self) -> ncclUniqueId {
        ncclUniqueId {
            internal: self.0.map(|b| b as std::ffi::c_char),
        }
    }
}

impl std::fmt::Debug for UniqueId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The bytes hold a socket address; the first few tell ids apart.
        write!(f, "UniqueId({:02x?}..)", &self.0[..8])
    }
}

/// The owned NCCL communicator: finalized and destroyed (or aborted) when dropped.
struct Inner {
    comm: ncclComm_t,
    context: Context,
    rank: usize,
    count: usize,
    /// `ncclCommFinalize` was called (by [`Communicator::finalize_all`]).
    finalized: AtomicBool,
}

impl Inner {
    /// The communicator's state (`ncclCommGetAsyncError`).
    fn state(&self) -> Result<ncclResult_t> {
        let get = cuda_sys::nccl()?.ncclCommGetAsyncError()?;
        let mut state = ncclResult_t::ncclSuccess;
        // SAFETY: the communicator is live; `state` is a valid out-pointer.
        status("ncclCommGetAsyncError", unsafe { get(self.comm, &mut state) })?;
        Ok(state)
    }

    /// `ncclCommUserRank` and `ncclCommCount`.
    fn rank_and_count(&self) -> Result<(usize, usize)> {
        let nccl = cuda_sys::nccl()?;
        let (user_rank, comm_count) = (nccl.ncclCommUserRank()?, nccl.ncclCommCount()?);
        let (mut rank, mut count): (c_int, c_int) = (0, 0);
        // SAFETY: the communicator is live and ready; both out-pointers are valid.
        status("ncclCommUserRank", unsafe { user_rank(self.comm, &mut rank) })?;
        // SAFETY: as above.
        status("ncclCommCount", unsafe { comm_count(self.comm, &mut count) })?;
        Ok((rank.max(0) as usize, count.max(0) as usize))
    }

    /// Polls the state until it is no longer `ncclInProgress`, for at most `timeout`.
    fn wait(&self, function: &'static str, timeout: Duration) -> Result<()> {
        wait_ready(function, timeout, || self.state())
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        let Ok(nccl) = cuda_sys::nccl() else { return };
        let _ = self.context.set_current();
        let healthy = matches!(self.state(), Ok(ncclResult_t::ncclSuccess));
        let finalized = healthy
            && (self.finalized.load(Ordering::SeqCst)
                || nccl.ncclCommFinalize().is_ok_and(|finalize| {
                    // SAFETY: the communicator is live and dropped only here.
                    let result = unsafe { finalize(self.comm) };
                    (result == ncclResult_t::ncclSuccess || result == ncclResult_t::ncclInProgress)
                        && self.wait("ncclCommFinalize", DROP_TIMEOUT).is_ok()
                }));
        let release = if finalized {
            nccl.ncclCommDestroy()
        } else {
            nccl.ncclCommAbort()
        };
        if let Ok(release) = release {
            // SAFETY: the communicator is live, and not used after this.
            let _ = unsafe { release(self.comm) };
        }
    }
}

/// How long a communicator's drop waits for `ncclCommFinalize` before aborting it.
const DROP_TIMEOUT: Duration = Duration::from_secs(30);

/// One rank of an NCCL communicator, bound to one context (one GPU).
///
/// Dropping it finalizes (`ncclCommFinalize`, waiting for its queued work, at most 30 s) and
/// destroys it (`ncclCommDestroy`); a communicator in error, or whose finalization fails or
/// times out, is aborted (`ncclCommAbort`) instead. One thread that drives several
/// communicators ends them together with [`Communicator::finalize_all`].
pub struct Communicator {
    inner: Inner,
    timeout: Duration,
    /// Not `Sync`: NCCL calls on one communicator never run on two threads at once.
    _not_sync: PhantomData<Cell<()>>,
}

// SAFETY: NCCL lets a communicator be used from any thread, one thread at a time.
unsafe impl Send for Inner {}

impl std::fmt::Debug for Communicator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Communicator")
            .field("rank", &self.inner.rank)
            .field("count", &self.inner.count)
            .field("device", &self.inner.context.device().ordinal())
            .finish()
    }
}

/// A non-blocking `ncclConfig_t` (`NCCL_CONFIG_INITIALIZER` with `blocking = 0`).
fn nonblocking_config() -> ncclConfig_t {
    const UNDEF: c_int = c_int::MIN;
    ncclConfig_t {
        size: std::mem::size_of::<ncclConfig_t>(),
        magic: 0xcafe_beef,
        version: cuda_sys::nccl::NCCL_VERSION_CODE,
        blocking: 0,
        cgaClusterSize: UNDEF,
        minCTAs: UNDEF,
        maxCTAs: UNDEF,
        netName: std::ptr::null(),
        splitShare: UNDEF,
        trafficClass: UNDEF,
        commName: std::ptr::null(),
        collnetEnable: UNDEF,
        CTAPolicy: UNDEF,
        shrinkShare: UNDEF,
        nvlsCTAs: UNDEF,
        nChannelsPerNetPeer: UNDEF,
        nvlinkCentricSched: UNDEF,
    }
}

/// A size as NCCL's `int`.
fn to_int(what: &str, value: usize) -> Result<c_int> {
    c_int::try_from(value).map_err(|_| Error::InvalidValue(format!("{what} {value} is over NCCL's `int` limit")))
}

impl Communicator {
    /// One communicator per context, ranks in order, all in this process (what
    /// `ncclCommInitAll` does: a fresh [`UniqueId`] and `ncclCommInitRankConfig` for each context
    /// in one group, here non-blocking so the wait has a timeout). An empty list, or a context
    /// listed twice, is [`Error::InvalidValue`].
    ///
    /// One thread driving several of these must put the collectives of one step in a
    /// [`group`]; one at a time, each would wait for the others until its timeout.
    pub fn init_all(contexts: &[Context]) -> Result<Vec<Communicator>> {
        if contexts.is_empty() {
            return Err(Error::InvalidValue("init_all needs at least one context".into()));
        }
        for (i, context) in contexts.iter().enumerate() {
            if contexts[..i].contains(context) {
                return Err(Error::InvalidValue(format!(
                    "context {i} (device {}) is listed twice: one rank per context",
                    context.device().ordinal()
                )));
            }
        }
        let id = UniqueId::new()?;
        let nranks = contexts.len();
        // Every rank is started inside one group (one thread starts them all); the ones started
        // are owned here, so a failure drops (aborts) them only after the group has ended.
        let mut started = Vec::with_capacity(nranks);
        let open = OpenGroup::start()?;
        let failed: Result<()> = contexts.iter().enumerate().try_for_each(|(rank, context)| {
            started.push(Communicator::start_rank(&id, rank, nranks, context, DEFAULT_TIMEOUT)?);
            Ok(())
        });
        let ended = open.end();
        failed?;
        ended?;
        for (communicator, result) in &started {
            communicator.finish("ncclCommInitRankConfig", *result)?;
        }
        Ok(started.into_iter().map(|(communicator, _)| communicator).collect())
    }

    /// This process's rank `rank` of `nranks` (`ncclCommInitRankConfig`, non-blocking), on
    /// `context`'s device; every rank passes the same `id`. Waits until every rank has joined,
    /// for at most [`DEFAULT_TIMEOUT`]: a rank that never joins is [`Error::Timeout`].
    pub fn init_rank(id: &UniqueId, rank: usize, nranks: usize, context: &Context) -> Result<Communicator> {
        Communicator::init_rank_with_timeout(id, rank, nranks, context, DEFAULT_TIMEOUT)
    }

    /// [`init_rank`](Self::init_rank), waiting at most `timeout` for the other ranks (and
    /// keeping it as the communicator's [`timeout`](Self::timeout)).
    pub fn init_rank_with_timeout(
        id: &UniqueId,
        rank: usize,
        nranks: usize,
        context: &Context,
        timeout: Duration,
    ) -> Result<Communicator> {
        let (communicator, result) = Communicator::start_rank(id, rank, nranks, context, timeout)?;
        communicator.finish("ncclCommInitRankConfig", result)?;
        Ok(communicator)
    }

    /// Calls `ncclCommInitRankConfig`: the communicator NCCL made, with the call's status for
    /// the caller to [`finish`](Self::finish) (after the group it was started in, if any).
    fn start_rank(
        id: &UniqueId,
        rank: usize,
        nranks: usize,
        context: &Context,
        timeout: Duration,
    ) -> Result<(Communicator, ncclResult_t)> {
        check::peer("rank", rank, nranks)?;
        let nranks_int = to_int("nranks", nranks)?;
        let init = cuda_sys::nccl()?.ncclCommInitRankConfig()?;
        context.set_current()?;
        let mut comm: ncclComm_t = std::ptr::null_mut();
        let mut config = nonblocking_config();
        // SAFETY: `comm` and `config` are valid pointers; the id is the 128 bytes NCCL made; the
        // context of the rank's device is current.
        let result = unsafe { init(&mut comm, nranks_int, id.raw(), rank as c_int, &mut config) };
        if comm.is_null() {
            status("ncclCommInitRankConfig", result)?;
            return Err(Error::InvalidValue(
                "ncclCommInitRankConfig returned no communicator".into(),
            ));
        }
        let communicator = Communicator {
            inner: Inner {
                comm,
                context: context.clone(),
                rank,
                count: nranks,
                finalized: AtomicBool::new(false),
            },
            timeout,
            _not_sync: PhantomData,
        };
        Ok((communicator, result))
    }

    /// Splits the communicator (`ncclCommSplit`, collective over all its ranks): the ranks
    /// that pass one `color` form a new communicator, ordered by `key` (then by their rank
    /// here); `None` leaves this rank out (`NCCL_SPLIT_NOCOLOR`) and returns `None`. Waits for
    /// the new communicator, so the parent's ranks call it each from its own thread or process.
    /// A color over `i32::MAX` is [`Error::InvalidValue`].
    pub fn split(&self, color: Option<u32>, key: i32) -> Result<Option<Communicator>> {
        let color = match color {
            Some(color) => to_int("color", color as usize)?,
            None => cuda_sys::nccl::NCCL_SPLIT_NOCOLOR,
        };
        let split = cuda_sys::nccl()?.ncclCommSplit()?;
        self.inner.context.set_current()?;
        let mut comm: ncclComm_t = std::ptr::null_mut();
        let mut config = nonblocking_config();
        // SAFETY: the parent is live; `comm` and `config` are valid pointers.
        let result = unsafe { split(self.inner.comm, color, key, &mut comm, &mut config) };
        if result != ncclResult_t::ncclInProgress {
            status("ncclCommSplit", result)?;
        }
        // The parent is busy with the split too (non-blocking) until every rank has called it;
        // some NCCL versions give the new communicator only then.
        self.inner.wait("ncclCommSplit", self.timeout)?;
        // Owned from here: dropped (aborted) on any error below.
        let inner = (!comm.is_null()).then(|| Inner {
            comm,
            context: self.inner.context.clone(),
            rank: 0,
            count: 0,
            finalized: AtomicBool::new(false),
        });
        let Some(mut inner) = inner else {
            return Ok(None);
        };
        inner.wait("ncclCommSplit", self.timeout)?;
        (inner.rank, inner.count) = inner.rank_and_count()?;
        Ok(Some(Communicator {
            inner,
            timeout: self.timeout,
            _not_sync: PhantomData,
        }))
    }

    /// This rank.
    pub fn rank(&self) -> usize {
        self.inner.rank
    }

    /// The number of ranks.
    pub fn count(&self) -> usize {
        self.inner.count
    }

    /// The device this rank runs on.
    pub fn device(&self) -> cuda_driver::Device {
        self.inner.context.device()
    }

    /// The context this rank's buffers and streams must belong to.
    pub fn context(&self) -> &Context {
        &self.inner.context
    }

    /// How long calls wait for NCCL before [`Error::Timeout`] ([`DEFAULT_TIMEOUT`] unless set).
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// Sets how long calls on this communicator wait for NCCL.
    pub fn set_timeout(&mut self, timeout: Duration) {
        self.timeout = timeout;
    }

    /// The communicator's state now (`ncclCommGetAsyncError`): `Ok` while healthy (or busy),
    /// the error NCCL reports otherwise (a peer that failed, a network error).
    pub fn check(&self) -> Result<()> {
        match self.inner.state()? {
            ncclResult_t::ncclInProgress => Ok(()),
            state => status("ncclCommGetAsyncError", state),
        }
    }

    /// Finalizes every communicator (`ncclCommFinalize`, in one NCCL group, then waits for all,
    /// each for at most its timeout) and destroys them: what one thread that drives several
    /// communicators does at the end, since NCCL may let one rank's finalization wait for the
    /// others'. A communicator that fails or times out is aborted (`ncclCommAbort`) and the
    /// first error returned.
    pub fn finalize_all(communicators: Vec<Communicator>) -> Result<()> {
        let finalize = cuda_sys::nccl()?.ncclCommFinalize()?;
        let open = OpenGroup::start()?;
        let mut results = Vec::with_capacity(communicators.len());
        let failed: Result<()> = communicators.iter().try_for_each(|communicator| {
            communicator.inner.context.set_current()?;
            // SAFETY: the communicator is live; it is only destroyed (or aborted) after this.
            let result = unsafe { finalize(communicator.inner.comm) };
            if result == ncclResult_t::ncclSuccess || result == ncclResult_t::ncclInProgress {
                communicator.inner.finalized.store(true, Ordering::SeqCst);
            }
            results.push(result);
            Ok(())
        });
        let ended = open.end();
        failed?;
        ended?;
        for (communicator, result) in communicators.iter().zip(results) {
            communicator.finish("ncclCommFinalize", result)?;
        }
        Ok(())
        // Dropped here, after the group: destroyed where finalized and ready, aborted otherwise.
    }

    /// After a call made outside a group: an error is [`Error::Nccl`]; `ncclInProgress` waits
    /// now (for at most the timeout) until the communicator is ready.
    fn finish(&self, function: &'static str, result: ncclResult_t) -> Result<()> {
        if result != ncclResult_t::ncclInProgress {
            return status(function, result);
        }
        self.inner.wait(function, self.timeout)
    }

    /// Checks the stream and each operand and begins their uses on the stream; then, for
    /// [`Target::Now`], makes the call with the communicator's context current and ends the
    /// uses once it is queued, or, for a group, queues the call and the uses in it: the group
    /// makes the call and ends the uses after `ncclGroupEnd` (see [`group`]).
    fn enqueue<'a>(
        &'a self,
        target: Target<'_, 'a>,
        function: &'static str,
        stream: &'a Stream,
        operands: &[Operand<'a>],
        call: impl FnOnce(cuda_sys::nccl::cudaStream_t) -> Result<ncclResult_t> + 'a,
    ) -> Result<()> {
        if stream.context() != &self.inner.context {
            return Err(Error::WrongContext {
                object: "stream",
                used_with: "NCCL communicator",
            });
        }
        for operand in operands {
            if operand.memory.context() != &self.inner.context {
                return Err(Error::WrongContext {
                    object: operand.name,
                    used_with: "NCCL communicator",
                });
            }
        }
        // Refuses memory that is not one dense range (a strided, reversed, transposed or
        // broadcast view: `NotDense`) before its length is read.
        let uses = operands
            .iter()
            .map(|operand| operand.memory.begin_use(stream, operand.access))
            .collect::<std::result::Result<Vec<StreamUse<'a>>, _>>()?;
        for operand in operands {
            check::fits(operand.name, operand.bytes, operand.memory.byte_len())?;
        }
        match target {
            Target::Now => {
                let result = self.call(stream, call)?;
                self.finish(function, result)
                // The uses end here, after the call is queued.
            }
            Target::Group(queue) => {
                let mut queue = queue.borrow_mut();
                queue.calls.push(QueuedCall {
                    communicator: self,
                    function,
                    stream,
                    call: Box::new(call),
                });
                queue.uses.extend(uses);
                Ok(())
            }
        }
    }

    /// Makes `call` on `stream` with the communicator's context current.
    fn call(
        &self,
        stream: &Stream,
        call: impl FnOnce(cuda_sys::nccl::cudaStream_t) -> Result<ncclResult_t>,
    ) -> Result<ncclResult_t> {
        self.inner.context.set_current()?;
        // SAFETY: the stream is alive for the call; NCCL only queues work on it.
        let raw_stream = unsafe { stream.as_raw() }.cast();
        call(raw_stream)
    }
}

/// One operand of a call: its memory, how the call uses it, and the bytes it uses from its start.
struct Operand<'a> {
    name: &'static str,
    memory: &'a dyn DeviceMemory,
    access: Access,
    bytes: usize,
}

impl<'a> Operand<'a> {
    fn new(name: &'static str, memory: &'a dyn DeviceMemory, access: Access, bytes: usize) -> Self {
        Operand {
            name,
            memory,
            access,
            bytes,
        }
    }

    /// The address of byte `offset`.
    fn at(memory: &dyn DeviceMemory, offset: usize) -> *mut c_void {
        (memory.device_ptr() as usize + offset) as *mut c_void
    }
}

/// Bytes of `count` elements of `T`.
fn bytes<T>(what: &str, count: usize) -> Result<usize> {
    count
        .checked_mul(std::mem::size_of::<T>())
        .ok_or_else(|| Error::InvalidValue(format!("{what}: {count} elements overflow")))
}

/// The collectives and point-to-point calls. Each is queued on `stream`, which, like every
/// buffer, must belong to the communicator's context; `count` is in elements of `T`.
impl Communicator {
    /// Out-of-place operands: sizes from [`Counts`], then the overlap check.
    fn pair<'a, T>(
        &self,
        kind: Collective,
        count: usize,
        send: &'a dyn DeviceMemory,
        recv: &'a dyn DeviceMemory,
    ) -> Result<[Operand<'a>; 2]> {
        let counts = kind.counts(count, self.count())?;
        let (send_bytes, recv_bytes) = (bytes::<T>("send", counts.send)?, bytes::<T>("recv", counts.recv)?);
        check::disjoint((send.device_ptr(), send_bytes), (recv.device_ptr(), recv_bytes))?;
        Ok([
            Operand::new("send buffer", send, Access::Read, send_bytes),
            Operand::new("receive buffer", recv, Access::Write, recv_bytes),
        ])
    }

    /// `recv = op over ranks of send` on every rank (`ncclAllReduce`); both hold `count`.
    pub fn all_reduce<T: NcclType>(
        &self,
        send: &impl DeviceMemory,
        recv: &mut impl DeviceMemoryMut,
        count: usize,
        op: ReduceOp,
        stream: &Stream,
    ) -> Result<()> {
        self.all_reduce_on::<T>(Target::Now, send, recv, count, op, stream)
    }

    fn all_reduce_on<'a, T: NcclType>(
        &'a self,
        target: Target<'_, 'a>,
        send: &'a impl DeviceMemory,
        recv: &'a mut impl DeviceMemoryMut,
        count: usize,
        op: ReduceOp,
        stream: &'a Stream,
    ) -> Result<()> {
        let operands = self.pair::<T>(Collective::AllReduce, count, send, recv)?;
        self.all_reduce_raw::<T>(target, &operands, count, op, stream)
    }

    /// [`all_reduce`](Self::all_reduce) in place: `buffer` is both send and receive buffer.
    pub fn all_reduce_in_place<T: NcclType>(
        &self,
        buffer: &mut impl DeviceMemoryMut,
        count: usize,
        op: ReduceOp,
        stream: &Stream,
    ) -> Result<()> {
        self.all_reduce_in_place_on::<T>(Target::Now, buffer, count, op, stream)
    }

    fn all_reduce_in_place_on<'a, T: NcclType>(
        &'a self,
        target: Target<'_, 'a>,
        buffer: &'a mut impl DeviceMemoryMut,
        count: usize,
        op: ReduceOp,
        stream: &'a Stream,
    ) -> Result<()> {
        let bytes = bytes::<T>("buffer", count)?;
        let operands = [Operand::new("buffer", buffer, Access::Write, bytes)];
        self.all_reduce_raw::<T>(target, &operands, count, op, stream)
    }

    fn all_reduce_raw<'a, T: NcclType>(
        &'a self,
        target: Target<'_, 'a>,
        operands: &[Operand<'a>],
        count: usize,
        op: ReduceOp,
        stream: &'a Stream,
    ) -> Result<()> {
        let f = cuda_sys::nccl()?.ncclAllReduce()?;
        let (send, recv) = (operands[0].memory, operands[operands.len() - 1].memory);
        self.enqueue(target, "ncclAllReduce", stream, operands, move |stream| {
            // SAFETY: both buffers hold `count` elements of `T` of this context and are in use
            // on `stream` until the call is queued; the communicator is live.
            Ok(unsafe {
                f(
                    Operand::at(send, 0),
                    Operand::at(recv, 0),
                    count,
                    ncclDataType_t(T::DATA_TYPE),
                    op.raw(),
                    self.inner.comm,
                    stream,
                )
            })
        })
    }

    /// `recv = op over ranks of send` on rank `root` only (`ncclReduce`); every rank passes a
    /// receive buffer of `count` (only the root's is written).
    pub fn reduce<T: NcclType>(
        &self,
        send: &impl DeviceMemory,
        recv: &mut impl DeviceMemoryMut,
        count: usize,
        op: ReduceOp,
        root: usize,
        stream: &Stream,
    ) -> Result<()> {
        self.reduce_on::<T>(Target::Now, send, recv, count, op, root, stream)
    }

    #[allow(clippy::too_many_arguments)] // `reduce`'s arguments and where the call goes
    fn reduce_on<'a, T: NcclType>(
        &'a self,
        target: Target<'_, 'a>,
        send: &'a impl DeviceMemory,
        recv: &'a mut impl DeviceMemoryMut,
        count: usize,
        op: ReduceOp,
        root: usize,
        stream: &'a Stream,
    ) -> Result<()> {
        check::peer("root", root, self.count())?;
        let operands = self.pair::<T>(Collective::Reduce, count, send, recv)?;
        self.reduce_raw::<T>(target, &operands, count, op, root, stream)
    }

    /// [`reduce`](Self::reduce) in place.
    pub fn reduce_in_place<T: NcclType>(
        &self,
        buffer: &mut impl DeviceMemoryMut,
        count: usize,
        op: ReduceOp,
        root: usize,
        stream: &Stream,
    ) -> Result<()> {
        self.reduce_in_place_on::<T>(Target::Now, buffer, count, op, root, stream)
    }

    fn reduce_in_place_on<'a, T: NcclType>(
        &'a self,
        target: Target<'_, 'a>,
        buffer: &'a mut impl DeviceMemoryMut,
        count: usize,
        op: ReduceOp,
        root: usize,
        stream: &'a Stream,
    ) -> Result<()> {
        check::peer("root", root, self.count())?;
        let operands = [Operand::new(
            "buffer",
            buffer,
            Access::Write,
            bytes::<T>("buffer", count)?,
        )];
        self.reduce_raw::<T>(target, &operands, count, op, root, stream)
    }

    fn reduce_raw<'a, T: NcclType>(
        &'a self,
        target: Target<'_, 'a>,
        operands: &[Operand<'a>],
        count: usize,
        op: ReduceOp,
        root: usize,
        stream: &'a Stream,
    ) -> Result<()> {
        let f = cuda_sys::nccl()?.ncclReduce()?;
        let (send, recv) = (operands[0].memory, operands[operands.len() - 1].memory);
        self.enqueue(target, "ncclReduce", stream, operands, move |stream| {
            // SAFETY: as in `all_reduce_raw`; `root` is a rank of the communicator.
            Ok(unsafe {
                f(
                    Operand::at(send, 0),
                    Operand::at(recv, 0),
                    count,
                    ncclDataType_t(T::DATA_TYPE),
                    op.raw(),
                    root as c_int,
                    self.inner.comm,
                    stream,
                )
            })
        })
    }

    /// Copies `root`'s `send` into every rank's `recv` (`ncclBroadcast`); both hold `count`
    /// (other ranks' `send` is not read, but still checked).
    pub fn broadcast<T: NcclType>(
        &self,
        send: &impl DeviceMemory,
        recv: &mut impl DeviceMemoryMut,
        count: usize,
        root: usize,
        stream: &Stream,
    ) -> Result<()> {
        self.broadcast_on::<T>(Target::Now, send, recv, count, root, stream)
    }

    fn broadcast_on<'a, T: NcclType>(
        &'a self,
        target: Target<'_, 'a>,
        send: &'a impl DeviceMemory,
        recv: &'a mut impl DeviceMemoryMut,
        count: usize,
        root: usize,
        stream: &'a Stream,
    ) -> Result<()> {
        check::peer("root", root, self.count())?;
        let operands = self.pair::<T>(Collective::Broadcast, count, send, recv)?;
        self.broadcast_raw::<T>(target, &operands, count, root, stream)
    }

    /// [`broadcast`](Self::broadcast) in place: the root's `buffer` is sent, every other
    /// rank's is overwritten.
    pub fn broadcast_in_place<T: NcclType>(
        &self,
        buffer: &mut impl DeviceMemoryMut,
        count: usize,
        root: usize,
        stream: &Stream,
    ) -> Result<()> {
        self.broadcast_in_place_on::<T>(Target::Now, buffer, count, root, stream)
    }

    fn broadcast_in_place_on<'a, T: NcclType>(
        &'a self,
        target: Target<'_, 'a>,
        buffer: &'a mut impl DeviceMemoryMut,
        count: usize,
        root: usize,
        stream: &'a Stream,
    ) -> Result<()> {
        check::peer("root", root, self.count())?;
        let operands = [Operand::new(
            "buffer",
            buffer,
            Access::Write,
            bytes::<T>("buffer", count)?,
        )];
        self.broadcast_raw::<T>(target, &operands, count, root, stream)
    }

    fn broadcast_raw<'a, T: NcclType>(
        &'a self,
        target: Target<'_, 'a>,
        operands: &[Operand<'a>],
        count: usize,
        root: usize,
        stream: &'a Stream,
    ) -> Result<()> {
        let f = cuda_sys::nccl()?.ncclBroadcast()?;
        let (send, recv) = (operands[0].memory, operands[operands.len() - 1].memory);
        self.enqueue(target, "ncclBroadcast", stream, operands, move |stream| {
            // SAFETY: as in `all_reduce_raw`; `root` is a rank of the communicator.
            Ok(unsafe {
                f(
                    Operand::at(send, 0),
                    Operand::at(recv, 0),
                    count,
                    ncclDataType_t(T::DATA_TYPE),
                    root as c_int,
                    self.inner.comm,
                    stream,
                )
            })
        })
    }

    /// Gathers every rank's `count` elements of `send` into `recv`, rank `r`'s at
    /// `r * count` (`ncclAllGather`): `recv` holds `count * self.count()`.
    pub fn all_gather<T: NcclType>(
        &self,
        send: &impl DeviceMemory,
        recv: &mut impl DeviceMemoryMut,
        count: usize,
        stream: &Stream,
    ) -> Result<()> {
        self.all_gather_on::<T>(Target::Now, send, recv, count, stream)
    }

    fn all_gather_on<'a, T: NcclType>(
        &'a self,
        target: Target<'_, 'a>,
        send: &'a impl DeviceMemory,
        recv: &'a mut impl DeviceMemoryMut,
        count: usize,
        stream: &'a Stream,
    ) -> Result<()> {
        let operands = self.pair::<T>(Collective::AllGather, count, send, recv)?;
        self.all_gather_raw::<T>(target, &operands, 0, count, stream)
    }

    /// [`all_gather`](Self::all_gather) in place: `buffer` holds `count * self.count()`, and
    /// this rank's part (at `rank * count`) is what it sends.
    pub fn all_gather_in_place<T: NcclType>(
        &self,
        buffer: &mut impl DeviceMemoryMut,
        count: usize,
        stream: &Stream,
    ) -> Result<()> {
        self.all_gather_in_place_on::<T>(Target::Now, buffer, count, stream)
    }

    fn all_gather_in_place_on<'a, T: NcclType>(
        &'a self,
        target: Target<'_, 'a>,
        buffer: &'a mut impl DeviceMemoryMut,
        count: usize,
        stream: &'a Stream,
    ) -> Result<()> {
        let counts = Collective::AllGather.counts(count, self.count())?;
        let operands = [Operand::new(
            "buffer",
            buffer,
            Access::Write,
            bytes::<T>("buffer", counts.recv)?,
        )];
        let offset = bytes::<T>("rank offset", count * self.rank())?;
        self.all_gather_raw::<T>(target, &operands, offset, count, stream)
    }

    fn all_gather_raw<'a, T: NcclType>(
        &'a self,
        target: Target<'_, 'a>,
        operands: &[Operand<'a>],
        send_offset: usize,
        count: usize,
        stream: &'a Stream,
    ) -> Result<()> {
        let f = cuda_sys::nccl()?.ncclAllGather()?;
        let (send, recv) = (operands[0].memory, operands[operands.len() - 1].memory);
        self.enqueue(target, "ncclAllGather", stream, operands, move |stream| {
            // SAFETY: `send` holds `count` elements from `send_offset`, `recv` `count * nranks`,
            // all of this context and in use on `stream` until the call is queued.
            Ok(unsafe {
                f(
                    Operand::at(send, send_offset),
                    Operand::at(recv, 0),
                    count,
                    ncclDataType_t(T::DATA_TYPE),
                    self.inner.comm,
                    stream,
                )
            })
        })
    }

    /// Reduces every rank's `send` (of `count * self.count()`) and leaves part `r` (of `count`,
    /// from `r * count`) on rank `r`'s `recv` (`ncclReduceScatter`).
    pub fn reduce_scatter<T: NcclType>(
        &self,
        send: &impl DeviceMemory,
        recv: &mut impl DeviceMemoryMut,
        count: usize,
        op: ReduceOp,
        stream: &Stream,
    ) -> Result<()> {
        self.reduce_scatter_on::<T>(Target::Now, send, recv, count, op, stream)
    }

    fn reduce_scatter_on<'a, T: NcclType>(
        &'a self,
        target: Target<'_, 'a>,
        send: &'a impl DeviceMemory,
        recv: &'a mut impl DeviceMemoryMut,
        count: usize,
        op: ReduceOp,
        stream: &'a Stream,
    ) -> Result<()> {
        let operands = self.pair::<T>(Collective::ReduceScatter, count, send, recv)?;
        self.reduce_scatter_raw::<T>(target, &operands, 0, count, op, stream)
    }

    /// [`reduce_scatter`](Self::reduce_scatter) in place: `buffer` holds `count * self.count()`
    /// and this rank's part (at `rank * count`) receives the result.
    pub fn reduce_scatter_in_place<T: NcclType>(
        &self,
        buffer: &mut impl DeviceMemoryMut,
        count: usize,
        op: ReduceOp,
        stream: &Stream,
    ) -> Result<()> {
        self.reduce_scatter_in_place_on::<T>(Target::Now, buffer, count, op, stream)
    }

    fn reduce_scatter_in_place_on<'a, T: NcclType>(
        &'a self,
        target: Target<'_, 'a>,
        buffer: &'a mut impl DeviceMemoryMut,
        count: usize,
        op: ReduceOp,
        stream: &'a Stream,
    ) -> Result<()> {
        let counts = Collective::ReduceScatter.counts(count, self.count())?;
        let operands = [Operand::new(
            "buffer",
            buffer,
            Access::Write,
            bytes::<T>("buffer", counts.send)?,
        )];
        let offset = bytes::<T>("rank offset", count * self.rank())?;
        self.reduce_scatter_raw::<T>(target, &operands, offset, count, op, stream)
    }

    fn reduce_scatter_raw<'a, T: NcclType>(
        &'a self,
        target: Target<'_, 'a>,
        operands: &[Operand<'a>],
        recv_offset: usize,
        count: usize,
        op: ReduceOp,
        stream: &'a Stream,
    ) -> Result<()> {
        let f = cuda_sys::nccl()?.ncclReduceScatter()?;
        let (send, recv) = (operands[0].memory, operands[operands.len() - 1].memory);
        self.enqueue(target, "ncclReduceScatter", stream, operands, move |stream| {
            // SAFETY: `send` holds `count * nranks` elements, `recv` `count` from `recv_offset`,
            // all of this context and in use on `stream` until the call is queued.
            Ok(unsafe {
                f(
                    Operand::at(send, 0),
                    Operand::at(recv, recv_offset),
                    count,
                    ncclDataType_t(T::DATA_TYPE),
                    op.raw(),
                    self.inner.comm,
                    stream,
                )
            })
        })
    }

    /// Sends `count` elements of `send` to rank `peer` (`ncclSend`), which calls
    /// [`recv`](Self::recv) with this rank. A send and receive between two ranks driven by one
    /// thread (or a rank with itself) go in one [`group`].
    pub fn send<T: NcclType>(
        &self,
        send: &impl DeviceMemory,
        count: usize,
        peer: usize,
        stream: &Stream,
    ) -> Result<()> {
        self.send_on::<T>(Target::Now, send, count, peer, stream)
    }

    fn send_on<'a, T: NcclType>(
        &'a self,
        target: Target<'_, 'a>,
        send: &'a impl DeviceMemory,
        count: usize,
        peer: usize,
        stream: &'a Stream,
    ) -> Result<()> {
        check::peer("peer", peer, self.count())?;
        let f = cuda_sys::nccl()?.ncclSend()?;
        let operands = [Operand::new(
            "send buffer",
            send,
            Access::Read,
            bytes::<T>("send", count)?,
        )];
        self.enqueue(target, "ncclSend", stream, &operands, move |stream| {
            // SAFETY: the buffer holds `count` elements of this context, in use on `stream`.
            Ok(unsafe {
                f(
                    Operand::at(send, 0),
                    count,
                    ncclDataType_t(T::DATA_TYPE),
                    peer as c_int,
                    self.inner.comm,
                    stream,
                )
            })
        })
    }

    /// Receives `count` elements from rank `peer` into `recv` (`ncclRecv`).
    pub fn recv<T: NcclType>(
        &self,
        recv: &mut impl DeviceMemoryMut,
        count: usize,
        peer: usize,
        stream: &Stream,
    ) -> Result<()> {
        self.recv_on::<T>(Target::Now, recv, count, peer, stream)
    }

    fn recv_on<'a, T: NcclType>(
        &'a self,
        target: Target<'_, 'a>,
        recv: &'a mut impl DeviceMemoryMut,
        count: usize,
        peer: usize,
        stream: &'a Stream,
    ) -> Result<()> {
        check::peer("peer", peer, self.count())?;
        let f = cuda_sys::nccl()?.ncclRecv()?;
        let recv: &dyn DeviceMemory = recv;
        let operands = [Operand::new(
            "receive buffer",
            recv,
            Access::Write,
            bytes::<T>("recv", count)?,
        )];
        self.enqueue(target, "ncclRecv", stream, &operands, move |stream| {
            // SAFETY: the buffer holds `count` elements of this context, in use on `stream`, and
            // may be written (it was borrowed exclusively).
            Ok(unsafe {
                f(
                    Operand::at(recv, 0),
                    count,
                    ncclDataType_t(T::DATA_TYPE),
                    peer as c_int,
                    self.inner.comm,
                    stream,
                )
            })
        })
    }
}

/// Where a call goes: made now, or queued in a [`Group`].
enum Target<'g, 'a> {
    /// Made now; its uses end once it is queued on the stream.
    Now,
    /// Queued in a group, which makes it at its end.
    Group(&'g RefCell<ManuallyDrop<Queue<'a>>>),
}

/// The calls of a [`Group`] and the stream uses of their buffers.
#[derive(Default)]
struct Queue<'a> {
    calls: Vec<QueuedCall<'a>>,
    /// Ended (dropped) only after every call has been enqueued.
    uses: Vec<StreamUse<'a>>,
}

/// One call of a group, made at its end.
struct QueuedCall<'a> {
    communicator: &'a Communicator,
    function: &'static str,
    stream: &'a Stream,
    call: Box<dyn FnOnce(cuda_sys::nccl::cudaStream_t) -> Result<ncclResult_t> + 'a>,
}

/// The calls that one [`group`] makes together; given to its closure, as
/// [`std::thread::scope`] gives its [`Scope`](std::thread::Scope).
///
/// Every buffer, stream and communicator a call names is borrowed for `'scope`, which outlasts
/// the closure: the compiler refuses a buffer made, dropped or moved inside the closure, so
/// each one stays allocated (and a mutable one unused elsewhere) until the group has been
/// enqueued. Its checks run (and its uses begin) when the call is queued, so a bad argument is
/// an error then; the calls are made by [`group`] after the closure returns. Each method is the
/// [`Communicator`] method of the same name with the communicator first.
pub struct Group<'scope, 'env: 'scope> {
    /// Taken out by [`group`] (and dropped there) once the closure has returned; the
    /// `ManuallyDrop` keeps `Group` free of drop glue, so it may be borrowed for `'scope`.
    queue: RefCell<ManuallyDrop<Queue<'scope>>>,
    /// Invariant in both, as `std::thread::Scope` is: `'scope` can neither shrink nor grow.
    scope: PhantomData<&'scope mut &'scope ()>,
    env: PhantomData<&'env mut &'env ()>,
}

impl std::fmt::Debug for Group<'_, '_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let calls = self.queue.try_borrow().map(|queue| queue.calls.len());
        f.debug_struct("Group").field("calls", &calls.ok()).finish()
    }
}

impl<'scope> Group<'scope, '_> {
    fn target(&self) -> Target<'_, 'scope> {
        Target::Group(&self.queue)
    }

    /// [`Communicator::all_reduce`] in this group.
    pub fn all_reduce<T: NcclType>(
        &self,
        communicator: &'scope Communicator,
        send: &'scope impl DeviceMemory,
        recv: &'scope mut impl DeviceMemoryMut,
        count: usize,
        op: ReduceOp,
        stream: &'scope Stream,
    ) -> Result<()> {
        communicator.all_reduce_on::<T>(self.target(), send, recv, count, op, stream)
    }

    /// [`Communicator::all_reduce_in_place`] in this group.
    pub fn all_reduce_in_place<T: NcclType>(
        &self,
        communicator: &'scope Communicator,
        buffer: &'scope mut impl DeviceMemoryMut,
        count: usize,
        op: ReduceOp,
        stream: &'scope Stream,
    ) -> Result<()> {
        communicator.all_reduce_in_place_on::<T>(self.target(), buffer, count, op, stream)
    }

    /// [`Communicator::reduce`] in this group.
    #[allow(clippy::too_many_arguments)] // the communicator's arguments, and the communicator
    pub fn reduce<T: NcclType>(
        &self,
        communicator: &'scope Communicator,
        send: &'scope impl DeviceMemory,
        recv: &'scope mut impl DeviceMemoryMut,
        count: usize,
        op: ReduceOp,
        root: usize,
        stream: &'scope Stream,
    ) -> Result<()> {
        communicator.reduce_on::<T>(self.target(), send, recv, count, op, root, stream)
    }

    /// [`Communicator::reduce_in_place`] in this group.
    pub fn reduce_in_place<T: NcclType>(
        &self,
        communicator: &'scope Communicator,
        buffer: &'scope mut impl DeviceMemoryMut,
        count: usize,
        op: ReduceOp,
        root: usize,
        stream: &'scope Stream,
    ) -> Result<()> {
        communicator.reduce_in_place_on::<T>(self.target(), buffer, count, op, root, stream)
    }

    /// [`Communicator::broadcast`] in this group.
    pub fn broadcast<T: NcclType>(
        &self,
        communicator: &'scope Communicator,
        send: &'scope impl DeviceMemory,
        recv: &'scope mut impl DeviceMemoryMut,
        count: usize,
        root: usize,
        stream: &'scope Stream,
    ) -> Result<()> {
        communicator.broadcast_on::<T>(self.target(), send, recv, count, root, stream)
    }

    /// [`Communicator::broadcast_in_place`] in this group.
    pub fn broadcast_in_place<T: NcclType>(
        &self,
        communicator: &'scope Communicator,
        buffer: &'scope mut impl DeviceMemoryMut,
        count: usize,
        root: usize,
        stream: &'scope Stream,
    ) -> Result<()> {
        communicator.broadcast_in_place_on::<T>(self.target(), buffer, count, root, stream)
    }

    /// [`Communicator::all_gather`] in this group.
    pub fn all_gather<T: NcclType>(
        &self,
        communicator: &'scope Communicator,
        send: &'scope impl DeviceMemory,
        recv: &'scope mut impl DeviceMemoryMut,
        count: usize,
        stream: &'scope Stream,
    ) -> Result<()> {
        communicator.all_gather_on::<T>(self.target(), send, recv, count, stream)
    }

    /// [`Communicator::all_gather_in_place`] in this group.
    pub fn all_gather_in_place<T: NcclType>(
        &self,
        communicator: &'scope Communicator,
        buffer: &'scope mut impl DeviceMemoryMut,
        count: usize,
        stream: &'scope Stream,
    ) -> Result<()> {
        communicator.all_gather_in_place_on::<T>(self.target(), buffer, count, stream)
    }

    /// [`Communicator::reduce_scatter`] in this group.
    pub fn reduce_scatter<T: NcclType>(
        &self,
        communicator: &'scope Communicator,
        send: &'scope impl DeviceMemory,
        recv: &'scope mut impl DeviceMemoryMut,
        count: usize,
        op: ReduceOp,
        stream: &'scope Stream,
    ) -> Result<()> {
        communicator.reduce_scatter_on::<T>(self.target(), send, recv, count, op, stream)
    }

    /// [`Communicator::reduce_scatter_in_place`] in this group.
    pub fn reduce_scatter_in_place<T: NcclType>(
        &self,
        communicator: &'scope Communicator,
        buffer: &'scope mut impl DeviceMemoryMut,
        count: usize,
        op: ReduceOp,
        stream: &'scope Stream,
    ) -> Result<()> {
        communicator.reduce_scatter_in_place_on::<T>(self.target(), buffer, count, op, stream)
    }

    /// [`Communicator::send`] in this group.
    pub fn send<T: NcclType>(
        &self,
        communicator: &'scope Communicator,
        send: &'scope impl DeviceMemory,
        count: usize,
        peer: usize,
        stream: &'scope Stream,
    ) -> Result<()> {
        communicator.send_on::<T>(self.target(), send, count, peer, stream)
    }

    /// [`Communicator::recv`] in this group.
    pub fn recv<T: NcclType>(
        &self,
        communicator: &'scope Communicator,
        recv: &'scope mut impl DeviceMemoryMut,
        count: usize,
        peer: usize,
        stream: &'scope Stream,
    ) -> Result<()> {
        communicator.recv_on::<T>(self.target(), recv, count, peer, stream)
    }
}

/// Queues NCCL calls with `calls`, then makes them all between `ncclGroupStart` and
/// `ncclGroupEnd`: NCCL launches the calls of a group together, which one thread driving several
/// GPUs needs (and send/recv pairs, a rank with itself included). Then it waits (each
/// communicator for at most its timeout) until every communicator called is ready again, and
/// only then ends the stream uses of the buffers, so later users on other streams wait for the
/// calls.
///
/// The buffers, streams and communicators passed to the [`Group`] are borrowed until then: they
/// must outlive the closure, as with [`std::thread::scope`].
///
/// Nothing is made unless `calls` returns `Ok`: an error (the first check that failed, or the
/// closure's own) is returned with no NCCL call made, and a panic in `calls` resumes after the
/// uses it began have ended, again with no call made. Calls made on a [`Communicator`] itself
/// inside the closure are made at once, not in the group; a `group` inside the closure is a
/// group of its own, made when it returns. Other work queued inside the closure comes before
/// the group's calls: a stream that reads a group's receive buffer through another handle (a
/// view of the same storage) is ordered after the receive only once the group has returned.
///
/// If a communicator is not ready within its timeout after `ncclGroupEnd`, [`Error::Timeout`]
/// is returned while NCCL may still be queueing the calls; such a communicator is best dropped
/// (aborted) before the buffers are.
///
/// ```no_run
/// use cuda_driver::{Device, DeviceBuffer, Stream};
/// use cuda_libs::nccl::{self, Communicator};
///
/// # fn main() -> cuda_libs::Result<()> {
/// let context = Device::get(0)?.primary_context()?;
/// let comms = Communicator::init_all(std::slice::from_ref(&context))?;
/// let stream = Stream::new(&context)?;
/// let send = DeviceBuffer::from_slice(&context, &[1.0f32; 1024])?;
/// let mut recv = DeviceBuffer::<f32>::zeroed(&context, 1024)?;
/// // A rank sends to itself: the send and the receive go in one group.
/// nccl::group(|g| {
///     g.send::<f32>(&comms[0], &send, 1024, 0, &stream)?;
///     g.recv::<f32>(&comms[0], &mut recv, 1024, 0, &stream)?;
///     Ok(())
/// })?;
/// # Ok(())
/// # }
/// ```
///
/// A buffer that does not outlive the group does not compile (it would be freed before NCCL
/// writes it):
///
/// ```compile_fail
/// use cuda_driver::{Context, DeviceBuffer, Stream};
/// use cuda_libs::nccl::{self, Communicator, ReduceOp};
///
/// fn step(comm: &Communicator, context: &Context, stream: &Stream) -> cuda_libs::Result<()> {
///     nccl::group(|g| {
///         let mut grad = DeviceBuffer::<f32>::zeroed(context, 1024)?;
///         g.all_reduce_in_place::<f32>(comm, &mut grad, 1024, ReduceOp::Sum, stream)?;
///         Ok(())
///     }) // error[E0597]: `grad` does not live long enough
/// }
/// ```
///
/// and neither does dropping one inside the closure:
///
/// ```compile_fail
/// use cuda_driver::{DeviceBuffer, Stream};
/// use cuda_libs::nccl::{self, Communicator, ReduceOp};
///
/// fn step(comm: &Communicator, mut grad: DeviceBuffer<f32>, stream: &Stream) -> cuda_libs::Result<()> {
///     nccl::group(|g| {
///         g.all_reduce_in_place::<f32>(comm, &mut grad, 1024, ReduceOp::Sum, stream)?;
///         drop(grad); // error[E0505]: cannot move out of `grad` because it is borrowed
///         Ok(())
///     })
/// }
/// ```
pub fn group<'env, R>(calls: impl for<'scope> FnOnce(&'scope Group<'scope, 'env>) -> Result<R>) -> Result<R> {
    cuda_sys::nccl()?;
    let group = Group {
        queue: RefCell::new(ManuallyDrop::new(Queue::default())),
        scope: PhantomData,
        env: PhantomData,
    };
    let outcome = std::panic::catch_unwind(AssertUnwindSafe(|| calls(&group)));
    let queue: Queue<'_> = std::mem::take(&mut **group.queue.borrow_mut());
    let value = match outcome {
        Ok(result) => result?,
        // The uses begun so far end (`queue` dropped) before the panic goes on.
        Err(panic) => {
            drop(queue);
            std::panic::resume_unwind(panic)
        }
    };
    if !queue.calls.is_empty() {
        make_calls(queue.calls)?;
    }
    // The uses end here, after the calls were enqueued.
    drop(queue.uses);
    Ok(value)
}

/// Makes a group's calls between `ncclGroupStart` and `ncclGroupEnd`, then waits until every
/// communicator called is ready: the calls are then on their streams. The first error ends the
/// calls (NCCL drops the group's calls when one of them failed) and is returned, after the wait
/// for those made.
fn make_calls(calls: Vec<QueuedCall<'_>>) -> Result<()> {
    let mut called: Vec<(&Communicator, &'static str)> = Vec::new();
    let open = OpenGroup::start()?;
    let made: Result<()> = calls.into_iter().try_for_each(|queued| {
        let result = queued.communicator.call(queued.stream, queued.call)?;
        if result != ncclResult_t::ncclInProgress {
            status(queued.function, result)?;
        }
        let communicator = queued.communicator;
        if !called.iter().any(|(c, _)| c.inner.comm == communicator.inner.comm) {
            called.push((communicator, queued.function));
        }
        Ok(())
    });
    let ended = open.end();
    let waited = called
        .into_iter()
        .map(|(communicator, function)| communicator.inner.wait(function, communicator.timeout))
        .fold(Ok(()), Result::and);
    made.and(ended).and(waited)
}

/// `ncclGroupStart` until [`OpenGroup::end`], or until dropped (an error or a panic on the way):
/// the thread's NCCL group never stays open.
struct OpenGroup {
    end: unsafe extern "C" fn() -> ncclResult_t,
    open: bool,
}

impl OpenGroup {
    fn start() -> Result<OpenGroup> {
        let nccl = cuda_sys::nccl()?;
        let (start, end) = (nccl.ncclGroupStart()?, nccl.ncclGroupEnd()?);
        // SAFETY: takes no arguments; balanced by `ncclGroupEnd` in `end` or `drop`.
        status("ncclGroupStart", unsafe { start() })?;
        Ok(OpenGroup { end, open: true })
    }

    /// `ncclGroupEnd`: an error is [`Error::Nccl`]; `ncclInProgress` is left to the caller's
    /// wait on each communicator.
    fn end(mut self) -> Result<()> {
        self.open = false;
        // SAFETY: ends the group this one started.
        let ended = unsafe { (self.end)() };
        if ended == ncclResult_t::ncclInProgress {
            return Ok(());
        }
        status("ncclGroupEnd", ended)
    }
}

impl Drop for OpenGroup {
    fn drop(&mut self) {
        if self.open {
            // SAFETY: ends the group this one started; its status is the caller's error's.
            let _ = unsafe { (self.end)() };
        }
    }
}

/// Polls `state` until it is not `ncclInProgress`: `Ok` on success, [`Error::Nccl`] on an error,
/// [`Error::Timeout`] after `timeout`.
fn wait_ready(
    function: &'static str,
    timeout: Duration,
    mut state: impl FnMut() -> Result<ncclResult_t>,
) -> Result<()> {
    let started = Instant::now();
    let mut spins = 0u32;
    loop {
        match state()? {
            ncclResult_t::ncclInProgress => {}
            done => return status(function, done),
        }
        if started.elapsed() >= timeout {
            return Err(Error::Timeout {
                operation: function,
                after: timeout,
            });
        }
        spins += 1;
        if spins < 1000 {
            std::thread::yield_now();
        } else {
            std::thread::sleep(Duration::from_micros(100));
        }
    }
}

/// `Ok` for `ncclSuccess`, otherwise [`Error::Nccl`] with `ncclGetErrorString`'s text.
fn status(function: &'static str, result: ncclResult_t) -> Result<()> {
    if result == ncclResult_t::ncclSuccess {
        return Ok(());
    }
    Err(Error::Nccl {
        function,
        code: result.0,
        message: error_string(result).unwrap_or_else(|| format!("NCCL status {}", result.0)),
    })
}

/// `ncclGetErrorString`; `None` where NCCL is not loaded.
fn error_string(result: ncclResult_t) -> Option<String> {
    let get = cuda_sys::nccl().ok()?.ncclGetErrorString().ok()?;
    // SAFETY: takes any status value and returns a static string (or null).
    let text = unsafe { get(result) };
    if text.is_null() {
        return None;
    }
    // SAFETY: a non-null result is a NUL-terminated static string.
    Some(unsafe { CStr::from_ptr(text) }.to_string_lossy().into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unique_id_bytes_round_trip_without_the_library() {
        let bytes: Vec<u8> = (0..UNIQUE_ID_BYTES).map(|i| (i * 7 % 256) as u8).collect();
        let id = UniqueId::from_bytes(&bytes).unwrap();
        assert_eq!(id.to_bytes().as_slice(), bytes.as_slice());
        assert_eq!(UniqueId::from_bytes(&id.to_bytes()).unwrap(), id);
        // Through the raw `ncclUniqueId` and back: every byte, the high ones included.
        let raw = id.raw();
        assert_eq!(UniqueId(raw.internal.map(|c| c as u8)), id);
    }

    #[test]
    fn unique_id_of_another_length_is_refused() {
        for len in [0, 127, 129] {
            let error = UniqueId::from_bytes(&vec![0; len]).unwrap_err();
            assert!(
                matches!(&error, Error::InvalidValue(m) if m.contains("128") && m.contains(&len.to_string())),
                "{error:?}"
            );
        }
    }

    #[test]
    fn a_communicator_moves_between_threads() {
        fn send<T: Send>() {}
        send::<Communicator>();
        send::<UniqueId>();
    }

    #[test]
    fn element_types_map_to_nccl_types() {
        assert_eq!(<i8 as sealed::Sealed>::DATA_TYPE, 0);
        assert_eq!(<u8 as sealed::Sealed>::DATA_TYPE, 1);
        assert_eq!(<i32 as sealed::Sealed>::DATA_TYPE, 2);
        assert_eq!(<u32 as sealed::Sealed>::DATA_TYPE, 3);
        assert_eq!(<i64 as sealed::Sealed>::DATA_TYPE, 4);
        assert_eq!(<u64 as sealed::Sealed>::DATA_TYPE, 5);
        assert_eq!(<f16 as sealed::Sealed>::DATA_TYPE, 6);
        assert_eq!(<f32 as sealed::Sealed>::DATA_TYPE, 7);
        assert_eq!(<f64 as sealed::Sealed>::DATA_TYPE, 8);
        assert_eq!(<bf16 as sealed::Sealed>::DATA_TYPE, 9);
        let ops = [
            ReduceOp::Sum,
            ReduceOp::Prod,
            ReduceOp::Max,
            ReduceOp::Min,
            ReduceOp::Avg,
        ];
        assert_eq!(ops.map(|op| op.raw().0), [0, 1, 2, 3, 4]);
    }

    #[test]
    fn the_config_is_the_headers_initializer_made_non_blocking() {
        let config = nonblocking_config();
        assert_eq!(config.size, std::mem::size_of::<ncclConfig_t>());
        assert_eq!((config.magic, config.version, config.blocking), (0xcafe_beef, 22809, 0));
        assert_eq!(config.minCTAs, i32::MIN);
    }

    #[test]
    fn waiting_ends_in_success_an_error_or_a_timeout() {
        let mut polls = 0;
        let ready = wait_ready("test", Duration::from_secs(5), || {
            polls += 1;
            Ok(if polls < 3 {
                ncclResult_t::ncclInProgress
            } else {
                ncclResult_t::ncclSuccess
            })
        });
        assert!(ready.is_ok() && polls == 3, "{ready:?} after {polls}");
        let failed = wait_ready("test", Duration::from_secs(5), || Ok(ncclResult_t::ncclRemoteError));
        assert!(
            matches!(
                failed,
                Err(Error::Nccl {
                    code: 6,
                    function: "test",
                    ..
                })
            ),
            "{failed:?}"
        );
        let stuck = wait_ready("ncclCommInitRankConfig", Duration::from_millis(20), || {
            Ok(ncclResult_t::ncclInProgress)
        });
        assert!(
            matches!(
                stuck,
                Err(Error::Timeout {
                    operation: "ncclCommInitRankConfig",
                    ..
                })
            ),
            "{stuck:?}"
        );
    }
}
