//! Device memory of arrays: the stream-ordered caching [`MemoryPool`], the ordering of memory
//! used by several streams, memory imported from other libraries ([`ForeignMemory`]), overlap by
//! address ranges. The driver is reached through cuda-driver only (its raw-address stream
//! operations, `Stream::alloc_raw_async` and the like).

mod overlap;
mod pool;
mod pool_cupy;
mod stream_uses;

pub(crate) use overlap::{offset_range, overlap, overlap_measured, Overlap, Span};
pub(crate) use pool::{default_pool_contexts, order_after, release_default_pools, synchronize_context};
pub use pool::{size_class, MemoryPool, PoolStats, PooledBlock};
pub(crate) use stream_uses::{check_per_thread, StreamUses};

/// Memory an array views that the pool did not allocate (a tensor imported from another
/// library): what the array layer needs of it, the record of the streams that use it. Dropping
/// it hands the memory back to its owner, after the last use.
pub(crate) trait ForeignMemory: Send + Sync {
    fn uses(&self) -> &StreamUses;
}
