//! [`MemoryPool`]: a stream-ordered caching allocator of device memory, CuPy's pool for Rust.
//!
//! Sizes are rounded to a size class ([`size_class`]): multiples of 512 bytes up to 1 MiB,
//! then eight classes per power of two (less than 12.5 % slack). Each stream has its own
//! free lists, one per class. A block freed on stream S goes back to S's list and is handed
//! out again for S at once, since S runs its work in order. A block cached for another stream
//! is taken only after an event recorded on that stream is made to wait on (`cuStreamWaitEvent`).
//! Blocks are neither split nor merged: a miss allocates a new block of the class with
//! `cuMemAllocAsync` (the device's stream-ordered pool), so the cache keeps whole blocks.
//! On out-of-memory the pool frees its cached blocks, waits for the streams it freed them on
//! (never for the whole context: that would fail while another thread captures a graph) and
//! retries once.
//!
//! While a stream captures a graph, allocations for it bypass the cache: each is a graph
//! allocation (`cuMemAllocAsync` recorded into the capture) and its drop during the capture a
//! graph free, so memory that exists only while the graph runs never reaches the free lists.

use std::ptr::NonNull;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use cuda_driver::{Context, Event, EventFlags, Stream};
use cuda_sys::driver::{CUdeviceptr, CUresult};

use crate::array::memory::{check_per_thread, StreamUses};
use crate::error::{Error, Result};

/// Sizes up to this are rounded to [`SMALL_STEP`].
const SMALL_LIMIT: usize = 1 << 20;
/// Granularity of the small classes.
const SMALL_STEP: usize = 512;
/// Classes per power of two above [`SMALL_LIMIT`].
const LARGE_CLASSES_PER_DOUBLING: usize = 8;

/// The size class (bytes actually reserved) of a request of `bytes`: a multiple of 512 up to
/// 1 MiB, then the next of eight steps per power of two. `None` for zero or when rounding
/// overflows.
pub fn size_class(bytes: usize) -> Option<usize> {
    if bytes == 0 {
        return None;
    }
    let step = if bytes <= SMALL_LIMIT {
        SMALL_STEP
    } else {
        let floor_log2 = usize::BITS - 1 - (bytes - 1).leading_zeros();
        1usize << (floor_log2 - LARGE_CLASSES_PER_DOUBLING.trailing_zeros())
    };
    bytes.checked_next_multiple_of(step)
}

/// Number of classes up to [`SMALL_LIMIT`].
const SMALL_CLASSES: usize = SMALL_LIMIT / SMALL_STEP;

/// The position of size class `class` (a value of [`size_class`]) in a stream's free lists:
/// the classes in increasing order, numbered from 0.
#[inline]
fn class_index(class: usize) -> usize {
    if class <= SMALL_LIMIT {
        return class / SMALL_STEP - 1;
    }
    let floor_log2 = (usize::BITS - 1 - (class - 1).leading_zeros()) as usize;
    let shift = floor_log2 - LARGE_CLASSES_PER_DOUBLING.trailing_zeros() as usize;
    // `class >> shift` is one of the steps 9..=16 of the doubling above 2^floor_log2.
    SMALL_CLASSES
        + (floor_log2 - SMALL_LIMIT.trailing_zeros() as usize) * LARGE_CLASSES_PER_DOUBLING
        + ((class >> shift) - LARGE_CLASSES_PER_DOUBLING - 1)
}

/// The size class at position `index` (the inverse of [`class_index`]).
fn class_at(index: usize) -> usize {
    if index < SMALL_CLASSES {
        return (index + 1) * SMALL_STEP;
    }
    let large = index - SMALL_CLASSES;
    let floor_log2 = SMALL_LIMIT.trailing_zeros() as usize + large / LARGE_CLASSES_PER_DOUBLING;
    let steps = LARGE_CLASSES_PER_DOUBLING + 1 + large % LARGE_CLASSES_PER_DOUBLING;
    steps << (floor_log2 - LARGE_CLASSES_PER_DOUBLING.trailing_zeros() as usize)
}

/// Bytes the pool has in use and holds (`held - used` is cached, ready for reuse).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PoolStats {
    /// Bytes of blocks handed out and not yet returned (size classes, not requests).
    pub used_bytes: usize,
    /// Bytes of all blocks the pool got from the driver and has not given back.
    pub held_bytes: usize,
    /// Blocks cached in free lists.
    pub cached_blocks: usize,
    /// Allocations answered from a free list.
    pub hits: u64,
    /// Allocations that went to the driver.
    pub misses: u64,
}

/// The free lists of one stream, indexed by [`class_index`] (grown on demand), and the count
/// of its blocks handed out. While that count is not zero the entry stays, so its stream (at a
/// fixed address) can be lent to those blocks.
struct StreamBins<S> {
    key: usize,
    /// From `Box::leak`, freed on drop; only ever read through shared references.
    stream: NonNull<S>,
    free: Vec<Vec<CUdeviceptr>>,
    in_use: usize,
}

impl<S> StreamBins<S> {
    fn new(key: usize, stream: S) -> Self {
        StreamBins {
            key,
            stream: NonNull::from(Box::leak(Box::new(stream))),
            free: Vec::new(),
            in_use: 0,
        }
    }

    /// Adds `ptr` to the free list of `class`.
    #[inline]
    fn push_free(&mut self, class: usize, ptr: CUdeviceptr) {
        let index = class_index(class);
        if self.free.len() <= index {
            self.free.resize_with(index + 1, Vec::new);
        }
        self.free[index].push(ptr);
    }

    fn stream(&self) -> &S {
        // SAFETY: `stream` is a live allocation owned by `self`, never mutated.
        unsafe { self.stream.as_ref() }
    }
}

impl<S> Drop for StreamBins<S> {
    fn drop(&mut self) {
        // SAFETY: `stream` came from `Box::leak` in `new` and is freed only here.
        drop(unsafe { Box::from_raw(self.stream.as_ptr()) });
    }
}

// SAFETY: `StreamBins` owns its `S` as a `Box` would; shared access only reads it.
unsafe impl<S: Send> Send for StreamBins<S> {}
// SAFETY: as above.
unsafe impl<S: Sync> Sync for StreamBins<S> {}

/// The pool's bookkeeping, free of driver calls: per-stream free lists and the statistics.
/// `S` is what keeps a stream alive (a [`Stream`]; `()` in tests).
pub(crate) struct Bins<S> {
    streams: Vec<StreamBins<S>>,
    stats: PoolStats,
}

impl<S: Clone> Bins<S> {
    pub(crate) const fn new() -> Self {
        Bins {
            streams: Vec::new(),
            stats: PoolStats {
                used_bytes: 0,
                held_bytes: 0,
                cached_blocks: 0,
                hits: 0,
                misses: 0,
            },
        }
    }

    /// A cached block of `class` for stream `key`, ready to use there, with the stream as the
    /// pool keeps it: at that address until the block is given back or forgotten.
    #[inline]
    pub(crate) fn take(&mut self, key: usize, class: usize) -> Option<(CUdeviceptr, NonNull<S>)> {
        let bins = self.streams.iter_mut().find(|b| b.key == key)?;
        let ptr = bins.free.get_mut(class_index(class))?.pop()?;
        bins.in_use += 1;
        self.stats.used_bytes += class;
        self.stats.cached_blocks -= 1;
        self.stats.hits += 1;
        Some((ptr, bins.stream))
    }

    /// The entry of stream `key`, made (with a clone of `stream`) if it has none.
    #[inline]
    fn entry(&mut self, key: usize, stream: &S) -> &mut StreamBins<S> {
        match self.streams.iter().position(|b| b.key == key) {
            Some(position) => &mut self.streams[position],
            None => {
                self.streams.push(StreamBins::new(key, stream.clone()));
                self.streams.last_mut().expect("just pushed")
            }
        }
    }

    /// Counts a block obtained otherwise than by [`take`](Self::take) as handed out on stream
    /// `key`; returns the stream as in `take`.
    pub(crate) fn hand_out(&mut self, key: usize, stream: &S) -> NonNull<S> {
        let bins = self.entry(key, stream);
        bins.in_use += 1;
        bins.stream
    }

    /// A cached block of `class` from another stream than `key`, with that stream (which the
    /// caller must order before using the block).
    pub(crate) fn take_from_other(&mut self, key: usize, class: usize) -> Option<(CUdeviceptr, S)> {
        let index = class_index(class);
        let bins = self
            .streams
            .iter_mut()
            .find(|b| b.key != key && b.free.get(index).is_some_and(|list| !list.is_empty()))?;
        let ptr = bins.free.get_mut(index)?.pop()?;
        self.stats.used_bytes += class;
        self.stats.cached_blocks -= 1;
        self.stats.hits += 1;
        Some((ptr, bins.stream().clone()))
    }

    /// Undoes [`take_from_other`](Self::take_from_other): the block goes back to stream
    /// `key`'s list, untouched, and is not counted as a hit.
    pub(crate) fn put_back(&mut self, key: usize, stream: &S, class: usize, ptr: CUdeviceptr) {
        self.entry(key, stream).push_free(class, ptr);
        self.stats.used_bytes -= class;
        self.stats.cached_blocks += 1;
        self.stats.hits -= 1;
    }

    /// Counts a block of `class` just obtained from the driver, handed out.
    pub(crate) fn note_new_block(&mut self, class: usize) {
        self.stats.held_bytes += class;
        self.stats.used_bytes += class;
        self.stats.misses += 1;
    }

    /// Returns a block of `class`, handed out on stream `key`, to that stream's free list.
    #[inline]
    pub(crate) fn give_back(&mut self, key: usize, stream: &S, class: usize, ptr: CUdeviceptr) {
        let bins = self.entry(key, stream);
        bins.in_use -= 1;
        bins.push_free(class, ptr);
        self.stats.used_bytes -= class;
        self.stats.cached_blocks += 1;
    }

    /// Puts a block [`drain`](Self::drain) took out back into stream `key`'s free list.
    pub(crate) fn keep_cached(&mut self, key: usize, stream: &S, class: usize, ptr: CUdeviceptr) {
        self.entry(key, stream).push_free(class, ptr);
        self.stats.held_bytes += class;
        self.stats.cached_blocks += 1;
    }

    /// Takes every cached block out, with the stream it is ordered on, for freeing; streams
    /// left without blocks, cached or handed out, are dropped from the table.
    pub(crate) fn drain(&mut self) -> Vec<(S, usize, CUdeviceptr)> {
        let mut blocks = Vec::new();
        self.streams.retain_mut(|bins| {
            for (index, list) in std::mem::take(&mut bins.free).into_iter().enumerate() {
                let class = class_at(index);
                blocks.extend(list.into_iter().map(|ptr| (bins.stream().clone(), class, ptr)));
            }
            bins.in_use > 0
        });
        for (_, class, _) in &blocks {
            self.stats.held_bytes -= class;
        }
        self.stats.cached_blocks = 0;
        blocks
    }

    pub(crate) fn stats(&self) -> PoolStats {
        self.stats
    }
}

/// A stream-ordered caching allocator of one context's device memory. Cheap to clone.
///
/// ```no_run
/// use cuda_core::{Device, MemoryPool};
///
/// # fn main() -> cuda_core::Result<()> {
/// let device = Device::new(0)?;
/// let stream = device.create_stream()?;
/// let pool = MemoryPool::for_context(device.context());
/// let block = pool.alloc(&stream, 1 << 20)?; // from the driver the first time
/// drop(block); // back to the stream's free list, in stream order
/// let again = pool.alloc(&stream, 1 << 20)?; // a cache hit: no driver call
/// assert_eq!(pool.stats().hits, 1);
/// # drop(again);
/// # Ok(())
/// # }
/// ```
///
/// The pool for a context ([`MemoryPool::for_context`], used by [`DeviceArray`](crate::DeviceArray))
/// lives for the whole process and keeps its context alive, like CuPy's default pool; call
/// [`free_all_blocks`](Self::free_all_blocks) to give cached memory back. When the process
/// exits, the default pools give their cached blocks back and let go of their contexts (blocks
/// still in use stay where they are), so a leak checker sees only what the program kept. A pool
/// from [`MemoryPool::new`] frees its cache when its last clone and last block are gone.
#[derive(Clone)]
pub struct MemoryPool {
    inner: Arc<PoolInner>,
}

struct PoolInner {
    context: Context,
    bins: Mutex<Bins<Stream>>,
}

/// The pools [`MemoryPool::for_context`] hands out, one per context.
static CONTEXT_POOLS: Mutex<Vec<MemoryPool>> = Mutex::new(Vec::new());

/// The key of a stream's free lists: its handle. The lists hold a clone of the stream, so a
/// handle cannot be reused by a new stream while it has lists.
#[inline]
fn stream_key(stream: &Stream) -> usize {
    // SAFETY: the handle is only used as a number.
    unsafe { stream.as_raw() as usize }
}

impl MemoryPool {
    /// A new, empty pool for `context`'s device memory.
    pub fn new(context: &Context) -> MemoryPool {
        MemoryPool {
            inner: Arc::new(PoolInner {
                context: context.clone(),
                bins: Mutex::new(Bins::new()),
            }),
        }
    }

    /// The process-wide pool of `context` (made on first use, kept for the life of the process;
    /// its cached blocks are given back when the process exits).
    pub fn for_context(context: &Context) -> MemoryPool {
        let mut pools = CONTEXT_POOLS.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(pool) = pools.iter().find(|p| &p.inner.context == context) {
            return pool.clone();
        }
        let pool = MemoryPool::new(context);
        pools.push(pool.clone());
        drop(pools);
        crate::at_exit::register();
        pool
    }

    /// The context the memory belongs to.
    pub fn context(&self) -> &Context {
        &self.inner.context
    }

    #[inline]
    fn bins(&self) -> MutexGuard<'_, Bins<Stream>> {
        // The bins are consistent after every statement, so a panic elsewhere leaves them usable.
        self.inner.bins.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Used and held bytes, cached blocks, hits and misses.
    pub fn stats(&self) -> PoolStats {
        self.bins().stats()
    }

    /// A block of at least `bytes` for work on `stream` (of the pool's context). A block cached
    /// for `stream` costs no driver call; one cached for another stream is ordered after that
    /// stream's work first; otherwise the driver allocates (`cuMemAllocAsync` on `stream`), and
    /// if it is out of memory the pool frees its cache, waits for the streams those frees were
    /// queued on and `stream` (not the whole context, so a capture on another thread is not
    /// disturbed) and tries again once. The block goes back to the pool, in `stream`'s order,
    /// when dropped.
    #[inline]
    pub fn alloc(&self, stream: &Stream, bytes: usize) -> Result<PooledBlock> {
        let class = size_class(bytes).ok_or_else(|| {
            Error::InvalidValue(format!(
                "cannot allocate {bytes} bytes from the pool (zero or too large)"
            ))
        })?;
        if stream.context() != &self.inner.context {
            return Err(cuda_driver::Error::WrongContext {
                object: "stream",
                used_with: "memory pool",
            }
            .into());
        }
        if stream.in_capture()? {
            return self.alloc_in_capture(stream, bytes, class);
        }
        // The per-thread default stream is refused where a block is first handed to a stream
        // (`alloc_slow`), so it never has cached blocks and the cached path need not check it.
        let key = stream_key(stream);
        let cached = self.bins().take(key, class);
        let (ptr, owner) = match cached {
            Some(cached) => cached,
            None => self.alloc_slow(stream, key, class)?,
        };
        Ok(PooledBlock {
            pool: self.clone(),
            ptr,
            bytes,
            class,
            // SAFETY: the bins keep `owner` alive and in place while the block is handed out,
            // and the block keeps the pool, so the bins, alive.
            uses: unsafe { StreamUses::lent(owner) },
            graph_capture: None,
        })
    }

    /// A block for a capturing `stream`: a graph allocation, outside the cache and the
    /// statistics (see the module's docs).
    #[cold]
    fn alloc_in_capture(&self, stream: &Stream, bytes: usize, class: usize) -> Result<PooledBlock> {
        check_per_thread(stream)?;
        let capture = GraphCapture::of(stream);
        let ptr = self.driver_alloc(stream, class)?;
        Ok(PooledBlock {
            pool: self.clone(),
            ptr,
            bytes,
            class,
            uses: StreamUses::new(stream.clone()),
            graph_capture: Some(capture),
        })
    }

    #[cold]
    fn alloc_slow(&self, stream: &Stream, key: usize, class: usize) -> Result<(CUdeviceptr, NonNull<Stream>)> {
        check_per_thread(stream)?;
        let stolen = self.bins().take_from_other(key, class);
        // A block cached for a stream that is capturing stays there: ordering after that stream
        // would fork the capture into this one (unjoined work when the capture ends).
        let stolen = match stolen {
            Some((ptr, other)) if !matches!(other.in_capture(), Ok(false)) => {
                self.bins().put_back(stream_key(&other), &other, class, ptr);
                None
            }
            stolen => stolen,
        };
        if let Some((ptr, other)) = stolen {
            return match order_after(&other, stream) {
                Ok(()) => Ok((ptr, self.bins().hand_out(key, stream))),
                Err(error) => {
                    // The block cannot be ordered: put it back where it was and report.
                    let other_key = stream_key(&other);
                    let mut bins = self.bins();
                    bins.hand_out(other_key, &other);
                    bins.give_back(other_key, &other, class, ptr);
                    Err(error.into())
                }
            };
        }
        let ptr = match self.driver_alloc(stream, class) {
            Err(error) if error.code() == Some(CUresult::CUDA_ERROR_OUT_OF_MEMORY) => {
                let (mut freed_on, freed) = self.free_cached_blocks();
                freed?;
                // Wait for those frees (and `stream`'s own queued ones) to complete, so that
                // the memory is the driver's again: stream by stream, never `cuCtxSynchronize`,
                // which fails while another thread captures a graph in the context.
                if !freed_on.contains(stream) {
                    freed_on.push(stream.clone());
                }
                for freed_stream in &freed_on {
                    freed_stream.synchronize_quiet()?;
                }
                self.driver_alloc(stream, class)?
            }
            other => other?,
        };
        let mut bins = self.bins();
        bins.note_new_block(class);
        Ok((ptr, bins.hand_out(key, stream)))
    }

    /// A new block of `class` bytes from the driver, in `stream`'s order (`stream` is of the
    /// pool's context, checked by `alloc`).
    fn driver_alloc(&self, stream: &Stream, class: usize) -> cuda_driver::Result<CUdeviceptr> {
        stream.alloc_raw_async(class)
    }

    /// Gives every cached block back to the driver (`cuMemFreeAsync` on the stream it is
    /// ordered on). Blocks in use are not affected, nor are blocks cached for a stream that is
    /// capturing a graph (a free there would be recorded into the graph): they stay cached.
    /// Stops at the first driver error, after trying every block.
    pub fn free_all_blocks(&self) -> Result<()> {
        self.free_cached_blocks().1
    }

    /// [`free_all_blocks`](Self::free_all_blocks), and the streams the frees were queued on.
    fn free_cached_blocks(&self) -> (Vec<Stream>, Result<()>) {
        let blocks = self.bins().drain();
        let mut first_error = None;
        let mut freed_on: Vec<Stream> = Vec::new();
        for (stream, class, ptr) in blocks {
            let freed = match stream.in_capture() {
                Ok(true) => {
                    self.bins().keep_cached(stream_key(&stream), &stream, class, ptr);
                    continue;
                }
                Ok(false) => free_cached(&stream, ptr),
                Err(error) => Err(error),
            };
            match freed {
                Ok(()) if !freed_on.contains(&stream) => freed_on.push(stream),
                Ok(()) => {}
                Err(error) => {
                    first_error.get_or_insert(error);
                }
            }
        }
        let result = match first_error {
            Some(error) => Err(error.into()),
            None => Ok(()),
        };
        (freed_on, result)
    }

    /// Returns a block to `stream`'s lists.
    #[inline]
    fn give_back(&self, stream: &Stream, class: usize, ptr: CUdeviceptr) {
        self.bins().give_back(stream_key(stream), stream, class, ptr);
    }
}

/// The contexts that have a pool from [`MemoryPool::for_context`].
pub(crate) fn default_pool_contexts() -> Vec<Context> {
    let pools = CONTEXT_POOLS.lock().unwrap_or_else(PoisonError::into_inner);
    pools.iter().map(|p| p.inner.context.clone()).collect()
}

/// Takes the default pools of the contexts `usable` accepts out of the process-wide table,
/// gives their cached blocks back (`cuMemFreeAsync`) and waits for the context, ignoring
/// errors; then drops the pools, which lets go of their contexts unless blocks are still in use
/// (those keep their pool, and their memory, as before). For the exit hook.
pub(crate) fn release_default_pools(usable: impl Fn(&Context) -> bool) {
    let released: Vec<MemoryPool> = {
        let mut pools = CONTEXT_POOLS.lock().unwrap_or_else(PoisonError::into_inner);
        let (released, kept) = std::mem::take(&mut *pools)
            .into_iter()
            .partition(|p| usable(&p.inner.context));
        *pools = kept;
        released
    };
    for pool in released {
        // Only cached blocks are freed: nothing else refers to them (see `free_all_blocks`).
        let _ = pool.free_all_blocks();
        // Waiting lets the stream-ordered frees finish before the context may go.
        let _ = synchronize_context(&pool.inner.context);
    }
}

/// Frees a cached block in the order of `stream`, the stream it was returned on (so after every
/// use of it); `stream` is of the pool's context. A failure to make that context current first
/// does not keep the block from being freed; the first error is returned.
fn free_cached(stream: &Stream, ptr: CUdeviceptr) -> cuda_driver::Result<()> {
    // SAFETY: the pool owns `ptr` (cached, no longer handed out, so nothing else refers to it),
    // a live allocation of the stream's context freed only here; freeing in the stream's order
    // runs after every use of the block.
    unsafe { stream.free_raw_async(ptr) }
}

/// Waits for all work of `context` (made current on this thread), leaving the errors its
/// destructors kept for the caller's own synchronise.
pub(crate) fn synchronize_context(context: &Context) -> cuda_driver::Result<()> {
    context.synchronize_quiet()
}

impl Drop for PoolInner {
    fn drop(&mut self) {
        let blocks = self.bins.get_mut().unwrap_or_else(PoisonError::into_inner).drain();
        for (stream, _, ptr) in blocks {
            if let Err(error) = free_cached(&stream, ptr) {
                eprintln!("cuda-core: freeing a cached pool block failed while dropping the pool: {error}");
            }
        }
    }
}

impl std::fmt::Debug for MemoryPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryPool")
            .field("context", &self.inner.context)
            .field("stats", &self.stats())
            .finish()
    }
}

/// Makes `later` wait (on the device) for the work queued so far on `earlier`.
pub(crate) fn order_after(earlier: &Stream, later: &Stream) -> cuda_driver::Result<()> {
    if earlier == later {
        return Ok(());
    }
    if earlier.context() != later.context() {
        return Err(cuda_driver::Error::WrongContext {
            object: "stream",
            used_with: "stream",
        });
    }
    let event = Event::new(earlier.context(), EventFlags::DISABLE_TIMING)?;
    event.record(earlier)?;
    later.wait_event(&event)
    // Destroying a recorded event is allowed: the wait keeps what it needs.
}

/// The capture that made a graph allocation: its identity where the driver reports one
/// (`cuStreamGetCaptureInfo_v3`, CUDA 12.3 and later), else only that it was a capture.
#[derive(Clone, Copy, Debug)]
struct GraphCapture(Option<u64>);

impl GraphCapture {
    fn of(stream: &Stream) -> GraphCapture {
        GraphCapture(stream.capture_id().ok().flatten())
    }

    /// Whether `owner`, the stream that allocated in this capture, still captures it.
    fn is_current(self, owner: &Stream) -> bool {
        match self.0 {
            Some(capture) => matches!(owner.capture_id(), Ok(Some(now)) if now == capture),
            None => matches!(owner.in_capture(), Ok(true)),
        }
    }
}

/// A block of device memory from a [`MemoryPool`], returned to the pool (in its stream's order)
/// on drop.
pub struct PooledBlock {
    pool: MemoryPool,
    ptr: CUdeviceptr,
    bytes: usize,
    class: usize,
    uses: StreamUses,
    /// For a graph allocation (made while its stream captured): that capture, outside which the
    /// memory is the graph's, not the block's. Never cached.
    graph_capture: Option<GraphCapture>,
}

impl PooledBlock {
    /// The device address.
    ///
    /// # Safety
    /// Valid only while the block lives; work using it must be queued on the block's stream
    /// (or ordered before its drop by the caller).
    pub unsafe fn as_raw(&self) -> CUdeviceptr {
        self.ptr
    }

    pub(crate) fn ptr(&self) -> CUdeviceptr {
        self.ptr
    }

    /// Bytes asked for.
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// Bytes reserved (the size class).
    pub fn reserved_bytes(&self) -> usize {
        self.class
    }

    /// The stream the block is ordered on (and returned on).
    pub fn stream(&self) -> &Stream {
        self.uses.owner()
    }

    /// The pool it came from.
    pub fn pool(&self) -> &MemoryPool {
        &self.pool
    }

    pub(crate) fn uses(&self) -> &StreamUses {
        &self.uses
    }

    /// Refuses a use of a graph allocation outside the capture that made it: its address is
    /// the graph's (backed only while the graph's launches run, and handed to other graph
    /// allocations otherwise), so no work outside that capture may touch it.
    #[inline]
    pub(crate) fn check_use(&self) -> cuda_driver::Result<()> {
        match self.graph_capture {
            None => Ok(()),
            Some(capture) => self.check_graph_use(capture),
        }
    }

    #[cold]
    fn check_graph_use(&self, capture: GraphCapture) -> cuda_driver::Result<()> {
        if capture.is_current(self.uses.owner()) {
            return Ok(());
        }
        Err(cuda_driver::Error::InvalidValue(
            "an array allocated during a stream capture was used outside that capture: its memory belongs to \
             the graph (it exists only while the graph's launches run); keep results in arrays allocated \
             before the capture"
                .into(),
        ))
    }
}

impl PooledBlock {
    /// Drops a graph allocation: a graph free (`cuMemFreeAsync` recorded into the capture) while
    /// its stream still captures. After the capture the memory belongs to the graph (it exists
    /// while the graph runs), so it is neither freed here nor cached: it is left to the graph.
    #[cold]
    fn drop_graph_allocation(&mut self, capture: GraphCapture) {
        self.uses.order_release();
        let owner = self.uses.owner();
        match capture.is_current(owner) {
            true => {
                if let Err(error) = free_cached(owner, self.ptr) {
                    eprintln!("cuda-core: freeing a graph allocation inside its capture failed: {error}");
                }
            }
            false => eprintln!(
                "cuda-core: an array allocated during a stream capture outlived the capture; its memory belongs to the graph and is not returned to the pool"
            ),
        }
    }
}

impl Drop for PooledBlock {
    #[inline]
    fn drop(&mut self) {
        if let Some(capture) = self.graph_capture {
            return self.drop_graph_allocation(capture);
        }
        self.uses.order_release();
        self.pool.give_back(self.uses.owner(), self.class, self.ptr);
    }
}

impl std::fmt::Debug for PooledBlock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PooledBlock")
            .field("ptr", &format_args!("{:#x}", self.ptr))
            .field("bytes", &self.bytes)
            .field("reserved_bytes", &self.class)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_round_to_512_then_eight_classes_per_doubling() {
        assert_eq!(size_class(0), None);
        assert_eq!(size_class(1), Some(512));
        assert_eq!(size_class(512), Some(512));
        assert_eq!(size_class(513), Some(1024));
        assert_eq!(size_class(1000 * 1000), Some((1000 * 1000usize).div_ceil(512) * 512));
        assert_eq!(size_class(1 << 20), Some(1 << 20));
        assert_eq!(size_class((1 << 20) + 1), Some((1 << 20) + (1 << 17)));
        assert_eq!(size_class(256 << 20), Some(256 << 20));
        assert_eq!(size_class((256 << 20) + 1), Some((256 << 20) + (32 << 20)));
        assert_eq!(size_class(usize::MAX), None);
        for bytes in [1usize, 700, 4097, 1 << 21, 3 << 22, (5 << 28) + 77, 1 << 40] {
            let class = size_class(bytes).unwrap();
            assert!(class >= bytes && class % 512 == 0, "{bytes} -> {class}");
            assert!(
                (class - bytes) as f64 <= (bytes as f64 / 8.0).max(511.0),
                "{bytes} -> {class}"
            );
        }
    }

    #[test]
    fn class_positions_are_consecutive_and_invertible() {
        let mut classes = Vec::new();
        let mut bytes = 1usize;
        while let Some(class) = size_class(bytes) {
            classes.push(class);
            if class > usize::MAX / 2 {
                break;
            }
            bytes = class + 1;
        }
        assert_eq!(classes[SMALL_CLASSES - 1], SMALL_LIMIT);
        for (index, &class) in classes.iter().enumerate() {
            assert_eq!(class_index(class), index, "class {class}");
            assert_eq!(class_at(index), class, "index {index}");
        }
    }

    /// A block from the driver, handed out on stream `key` (named `name`).
    fn new_block(bins: &mut Bins<&'static str>, key: usize, name: &'static str, class: usize) -> NonNull<&'static str> {
        bins.note_new_block(class);
        bins.hand_out(key, &name)
    }

    fn take_ptr(bins: &mut Bins<&'static str>, key: usize, class: usize) -> Option<CUdeviceptr> {
        bins.take(key, class).map(|(ptr, _)| ptr)
    }

    #[test]
    fn a_freed_block_is_reused_only_by_its_class_and_stream() {
        let mut bins = Bins::<&str>::new();
        assert_eq!(take_ptr(&mut bins, 1, 512), None);
        new_block(&mut bins, 1, "s1", 1024);
        bins.give_back(1, &"s1", 1024, 0x1000);
        assert_eq!(take_ptr(&mut bins, 1, 512), None, "another class");
        assert_eq!(take_ptr(&mut bins, 2, 1024), None, "another stream");
        assert_eq!(take_ptr(&mut bins, 1, 1024), Some(0x1000));
        assert_eq!(take_ptr(&mut bins, 1, 1024), None, "handed out once");
        let stats = bins.stats();
        assert_eq!(
            (stats.used_bytes, stats.held_bytes, stats.cached_blocks),
            (1024, 1024, 0)
        );
        assert_eq!((stats.hits, stats.misses), (1, 1));
    }

    #[test]
    fn another_streams_block_comes_with_that_stream() {
        let mut bins = Bins::<&str>::new();
        new_block(&mut bins, 1, "s1", 512);
        bins.give_back(1, &"s1", 512, 0xa00);
        let cached = bins.stats();
        assert_eq!(bins.take_from_other(1, 512), None, "its own stream is not another");
        assert_eq!(bins.take_from_other(2, 1024), None);
        assert_eq!(bins.take_from_other(2, 512), Some((0xa00, "s1")));
        assert_eq!(bins.stats().used_bytes, 512);
        // Put back untouched (its stream was capturing): as if never taken.
        bins.put_back(1, &"s1", 512, 0xa00);
        assert_eq!(bins.stats(), cached);
        assert_eq!(bins.take_from_other(2, 512), Some((0xa00, "s1")));
    }

    #[test]
    fn a_handed_out_blocks_stream_stays_in_place_until_it_comes_back() {
        let mut bins = Bins::<&str>::new();
        let lent = new_block(&mut bins, 1, "s1", 512);
        new_block(&mut bins, 2, "s2", 512);
        bins.give_back(2, &"s2", 512, 0x2000);
        for key in 3..40 {
            new_block(&mut bins, key, "other", 512); // the table grows and moves
        }
        assert_eq!(bins.drain().len(), 1);
        // SAFETY: stream 1 has a block handed out, so its entry (and stream) is kept.
        assert_eq!(unsafe { *lent.as_ref() }, "s1");
        bins.give_back(1, &"s1", 512, 0x1000);
        let (ptr, again) = bins.take(1, 512).unwrap();
        assert_eq!((ptr, again), (0x1000, lent), "same entry, same stream");
        bins.give_back(1, &"s1", 512, ptr);
        assert_eq!(bins.drain().len(), 1);
        assert!(
            bins.streams.iter().all(|b| b.key != 1 && b.key != 2),
            "no blocks: entries dropped"
        );
        assert!(
            bins.streams.iter().all(|b| b.in_use == 1),
            "streams with blocks out stay"
        );
    }

    #[test]
    fn a_drained_block_kept_for_a_capturing_stream_is_cached_again() {
        let mut bins = Bins::<&str>::new();
        new_block(&mut bins, 1, "s1", 1024);
        bins.give_back(1, &"s1", 1024, 0x4000);
        let drained = bins.drain();
        assert_eq!(bins.stats().held_bytes, 0);
        let (stream, class, ptr) = drained[0];
        bins.keep_cached(1, &stream, class, ptr);
        let stats = bins.stats();
        assert_eq!((stats.held_bytes, stats.cached_blocks, stats.used_bytes), (1024, 1, 0));
        assert_eq!(take_ptr(&mut bins, 1, 1024), Some(0x4000));
    }

    #[test]
    fn stats_follow_blocks_and_drain_empties_the_cache() {
        let mut bins = Bins::<&str>::new();
        for (i, class) in [512usize, 512, 4096].into_iter().enumerate() {
            new_block(&mut bins, i % 2, "s", class);
            bins.give_back(i % 2, &"s", class, 0x1000 * (i as u64 + 1));
        }
        new_block(&mut bins, 5, "s5", 2048); // in use
        let stats = bins.stats();
        assert_eq!(
            (stats.used_bytes, stats.held_bytes, stats.cached_blocks),
            (2048, 512 + 512 + 4096 + 2048, 3)
        );
        let mut drained: Vec<_> = bins.drain().into_iter().map(|(_, class, ptr)| (class, ptr)).collect();
        drained.sort();
        assert_eq!(drained, [(512, 0x1000), (512, 0x2000), (4096, 0x3000)]);
        let stats = bins.stats();
        assert_eq!(
            (stats.used_bytes, stats.held_bytes, stats.cached_blocks),
            (2048, 2048, 0)
        );
        assert_eq!(take_ptr(&mut bins, 0, 512), None);
        bins.give_back(5, &"s5", 2048, 0x5000);
        assert_eq!(bins.drain().len(), 1);
        assert_eq!(bins.stats().held_bytes, 0);
        assert!(bins.streams.is_empty(), "no stream has blocks out any more");
    }
}
