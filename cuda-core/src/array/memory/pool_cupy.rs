//! CuPy's names for the memory pool's figures (`cupy.cuda.MemoryPool`), beside [`PoolStats`].

use crate::array::memory::{MemoryPool, PoolStats};

impl MemoryPool {
    /// Bytes of blocks handed out and not yet returned: CuPy's `used_bytes()`
    /// ([`PoolStats::used_bytes`]).
    pub fn used_bytes(&self) -> usize {
        self.stats().used_bytes
    }

    /// Bytes the pool holds, in use or cached: CuPy's `total_bytes()` ([`PoolStats::held_bytes`]).
    #[doc(alias = "held_bytes")]
    pub fn total_bytes(&self) -> usize {
        self.stats().held_bytes
    }

    /// Bytes cached, ready for reuse (what [`free_all_blocks`](Self::free_all_blocks) gives
    /// back): CuPy's `free_bytes()`.
    pub fn free_bytes(&self) -> usize {
        let PoolStats {
            used_bytes, held_bytes, ..
        } = self.stats();
        held_bytes.saturating_sub(used_bytes)
    }

    /// Blocks cached in free lists: CuPy's `n_free_blocks()` ([`PoolStats::cached_blocks`]).
    pub fn n_free_blocks(&self) -> usize {
        self.stats().cached_blocks
    }
}
