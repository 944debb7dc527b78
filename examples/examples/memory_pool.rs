//! The memory pool walk-through of CuPy's memory-management docs: the context's default pool
//! (the one `DeviceArray` allocates from), its used and held bytes before an allocation, while
//! the array lives, after it is dropped (cached, still held) and after `free_all_blocks`.
//!
//! What it mirrors (CuPy):
//!
//! ```python
//! pool = cp.get_default_memory_pool()
//! print(pool.used_bytes(), pool.total_bytes())   # 0 0
//! a = cp.array(np.ones(100, dtype=np.float32))   # 400 bytes
//! print(pool.used_bytes(), pool.total_bytes())   # 512 512
//! del a
//! print(pool.used_bytes(), pool.total_bytes())   # 0 512: cached for reuse
//! pool.free_all_blocks()
//! print(pool.used_bytes(), pool.total_bytes())   # 0 0
//! ```
//!
//! The names are CuPy's: `device.memory_pool()` is `cp.get_default_memory_pool()` for a named
//! device, and `used_bytes`, `total_bytes`, `free_bytes` and `n_free_blocks` are there too (all
//! read from one `PoolStats`, where `total_bytes` is `held_bytes`). Sizes are rounded up to the
//! pool's size classes (`size_class`), so the expected figures are computed from it.
//!
//! `cargo run --release --example memory_pool`

use std::process::ExitCode;

use cuda_core::{size_class, Device, DeviceArray, MemoryPool, PoolStats};

/// Prints the pool's figures and fails unless they are `(used, held)`.
fn expect(pool: &MemoryPool, when: &str, used: usize, held: usize) -> Result<PoolStats, String> {
    let stats = pool.stats();
    let cupy = (
        pool.used_bytes(),
        pool.total_bytes(),
        pool.free_bytes(),
        pool.n_free_blocks(),
    );
    if cupy
        != (
            stats.used_bytes,
            stats.held_bytes,
            stats.held_bytes - stats.used_bytes,
            stats.cached_blocks,
        )
    {
        return Err(format!("{when}: CuPy's names say {cupy:?}, the stats {stats:?}"));
    }
    println!(
        "  {when:<28} used {:>9} B  held {:>9} B  cached blocks {}  hits {}  misses {}",
        stats.used_bytes, stats.held_bytes, stats.cached_blocks, stats.hits, stats.misses
    );
    if (pool.used_bytes(), pool.total_bytes()) != (used, held) {
        return Err(format!(
            "{when}: used {} and held {} bytes, expected {used} and {held}",
            stats.used_bytes, stats.held_bytes
        ));
    }
    Ok(stats)
}

fn main() -> ExitCode {
    examples::run("memory_pool", || {
        let device = Device::new(0)?;
        let stream = device.create_stream()?;
        // cp.get_default_memory_pool(): the pool DeviceArrays on this device allocate from, as
        // the figures while an array lives show.
        let pool = device.memory_pool();

        for len in [100usize, 1_000_000] {
            let bytes = len * size_of::<f32>();
            let class = size_class(bytes).ok_or("no size class")?;
            println!("{len} float32 ({bytes} bytes, size class {class} bytes):");
            expect(&pool, "before", 0, 0)?;

            let host: Vec<f32> = (0..len).map(|i| i as f32).collect();
            let a = DeviceArray::from_slice(&stream, &host)?;
            expect(&pool, "while the array lives", class, class)?;
            if a.to_vec()? != host {
                return Err("the array does not hold what was copied in".into());
            }

            drop(a);
            let cached = expect(&pool, "after drop (cached)", 0, class)?;
            if cached.cached_blocks != 1 {
                return Err(format!("{} blocks cached after the drop, expected 1", cached.cached_blocks).into());
            }

            // The same size again on the same stream: answered from the cache, no driver call.
            let b = DeviceArray::<f32>::zeros(&stream, len)?;
            let reused = expect(&pool, "same size again (a hit)", class, class)?;
            if reused.hits != cached.hits + 1 {
                return Err("the second allocation did not come from the cache".into());
            }
            drop(b);

            pool.free_all_blocks()?;
            expect(&pool, "after free_all_blocks", 0, 0)?;
        }
        println!("memory_pool: used and held bytes as expected at every step");
        Ok(())
    })
}
