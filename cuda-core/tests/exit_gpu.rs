//! The exit hook, without a sanitizer: a child process fills the default pool's cache and keeps
//! the pool; an exit handler it registered before cuda-core registered its own (so it runs after
//! cuda-core's) reads the pool once the hook has run, and must find nothing cached and nothing held.

mod common;

use std::io::Write;
use std::process::Command;
use std::sync::{Mutex, PoisonError};

use cuda_core::{Device, DeviceArray, MemoryPool};

const CHILD: &str = "CUDA_CORE_TEST_EXIT_CHILD";

/// The child's default pool, kept past the end of its test for the late exit handler.
static KEPT: Mutex<Option<MemoryPool>> = Mutex::new(None);

extern "C" {
    fn atexit(callback: extern "C" fn()) -> std::ffi::c_int;
}

/// Runs at the child's exit, after cuda-core's hook: prints what the pool still holds.
extern "C" fn report_after_the_hook() {
    let kept = KEPT.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(pool) = kept.as_ref() {
        let stats = pool.stats();
        // Written, not printed: nothing may panic in an exit handler.
        let _ = writeln!(
            std::io::stderr(),
            "after exit: cached_blocks={} held_bytes={} used_bytes={}",
            stats.cached_blocks,
            stats.held_bytes,
            stats.used_bytes
        );
    }
}

#[test]
fn default_pools_give_their_cache_back_at_exit() {
    if common::device_or_skip("default_pools_give_their_cache_back_at_exit").is_none() {
        return;
    }
    let output = Command::new(std::env::current_exe().unwrap())
        .args(["exit_child", "--exact", "--ignored", "--nocapture", "--test-threads=1"])
        .env(CHILD, "1")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    println!("{stdout}{stderr}");
    assert!(output.status.success(), "the child failed:\n{stdout}\n{stderr}");
    assert!(
        stdout.contains("exit child: the pool caches"),
        "the child filled the cache: {stdout}"
    );
    assert!(
        stderr.contains("after exit: cached_blocks=0 held_bytes=0 used_bytes=0"),
        "the hook gave every cached block back: {stderr}"
    );
}

#[test]
#[ignore = "run by default_pools_give_their_cache_back_at_exit"]
fn exit_child() {
    if std::env::var_os(CHILD).is_none() {
        println!("exit_child only runs as a child of default_pools_give_their_cache_back_at_exit");
        return;
    }
    // Registered before anything of cuda-core, so it runs after cuda-core's hook.
    // SAFETY: the handler takes and returns nothing and cannot unwind (it only takes a lock,
    // tolerating poison, and writes, ignoring errors).
    unsafe { atexit(report_after_the_hook) };
    let device = Device::new(0).unwrap();
    let stream = device.create_stream().unwrap();
    let pool = MemoryPool::for_context(device.context());
    {
        let x: Vec<f32> = (0..300_000).map(|i| (i % 100) as f32).collect();
        let a = DeviceArray::from_slice(&stream, &x).unwrap();
        let b = (2.0 * &a + 1.0).eval().unwrap();
        let expected: Vec<f32> = x.iter().map(|v| 2.0 * v + 1.0).collect();
        assert_eq!(b.to_vec().unwrap(), expected);
    }
    let stats = pool.stats();
    assert!(
        stats.cached_blocks >= 2 && stats.used_bytes == 0 && stats.held_bytes > 0,
        "{stats:?}"
    );
    println!(
        "exit child: the pool caches {} blocks of {} bytes",
        stats.cached_blocks, stats.held_bytes
    );
    *KEPT.lock().unwrap_or_else(PoisonError::into_inner) = Some(pool);
}
