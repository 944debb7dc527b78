//! A memory pool shared between two processes on one GPU: the parent allocates two buffers from
//! a pool made with `ipc_enabled`, fills one with a pattern, and runs this test binary again as
//! the child (`--exact` this test, the role chosen by an environment variable), handing it the
//! pool's file descriptor as its standard input and the two pointer exports in the environment.
//! The child imports the pool and both pointers, checks the pattern, writes its answer into the
//! second buffer from the host and adds one to it with a kernel, frees its imports and exits 0;
//! the parent checks the exit status and the answer. `skipped: <why>` without a GPU (fails then if
//! `CUDA_REQUIRE_GPU=1`) or when the device shares no pools through file descriptors. Unix only,
//! as pools are shared through file descriptors.
#![cfg(unix)]

mod common;

use std::io::Read;
use std::os::fd::AsFd;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use cuda_driver::{
    DeviceBuffer, Error, LaunchConfig, MemPool, MemPoolOptions, PoolPointerExport, Stream, POOL_POINTER_EXPORT_BYTES,
};

/// Set in the child: the two pointer exports (input, output) in hex, joined by `:`.
const CHILD: &str = "CUDA_DRIVER_TEST_IPC_POOL_CHILD";
const TEST: &str = "an_ipc_pool_moves_data_between_two_processes";
/// Elements of each buffer: 4 MiB of `i32`.
const N: usize = 1 << 20;
/// How long the child may take: it starts a CUDA context and compiles a kernel, in a second or
/// two, longer under compute-sanitizer, which follows it. Below the bundle's 120 s per test binary
/// (`run.sh`), so that a hung child ends with this test's message and both its outputs.
const CHILD_TIMEOUT: Duration = Duration::from_secs(100);
/// What the child prints last when every check passed.
const CHILD_OK: &str = "ipc pool child: ok";

fn pattern(i: usize) -> i32 {
    (i as i32).wrapping_mul(7) ^ 0x5a5a
}

/// What the child writes from the host (the parent then expects one more, added by a kernel).
fn answer(i: usize) -> i32 {
    pattern(i).wrapping_mul(3) - 11
}

fn to_hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn export_from_hex(text: &str) -> PoolPointerExport {
    assert_eq!(text.len(), 2 * POOL_POINTER_EXPORT_BYTES, "export {text:?}");
    let bytes = std::array::from_fn(|i| u8::from_str_radix(&text[2 * i..2 * i + 2], 16).expect("hex export"));
    PoolPointerExport::from_bytes(bytes)
}

/// Reads a child's pipe to the end on a thread of its own (so a full pipe never blocks it).
fn drain(mut pipe: impl Read + Send + 'static) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        let mut text = Vec::new();
        let _ = pipe.read_to_end(&mut text);
        String::from_utf8_lossy(&text).into_owned()
    })
}

#[test]
fn an_ipc_pool_moves_data_between_two_processes() {
    if let Ok(exports) = std::env::var(CHILD) {
        child(&exports);
        return;
    }
    let Some(context) = common::context() else { return };
    let device = context.device();
    let options = MemPoolOptions {
        ipc_enabled: true,
        ..Default::default()
    };
    let pool = match MemPool::with_options(&device, &options) {
        Err(Error::DeviceUnsupported { feature, .. }) => {
            common::skip::<()>(&format!("the device lacks {feature}"));
            return;
        }
        made => made.expect("an IPC-enabled pool"),
    };
    let stream = Stream::new(&context).unwrap();
    let values: Vec<i32> = (0..N).map(pattern).collect();
    let mut input = DeviceBuffer::<i32>::alloc_from_pool_async(&pool, &stream, N).unwrap();
    input.copy_from_host(&values).unwrap();
    let mut output = DeviceBuffer::<i32>::alloc_from_pool_async(&pool, &stream, N).unwrap();
    output.memset_zero().unwrap();
    // the child may use the memory only once its allocations have completed here
    stream.synchronize().unwrap();
    // The pool is shared first, then its allocations (the order cuMemPoolExportToShareableHandle's
    // documentation gives).
    let fd = pool.export_fd().expect("the pool's file descriptor");
    let exports = format!(
        "{}:{}",
        to_hex(&input.export_pool_pointer().unwrap().to_bytes()),
        to_hex(&output.export_pool_pointer().unwrap().to_bytes())
    );
    // memory of a pool made without ipc_enabled does not export (refused before the driver)
    let private = DeviceBuffer::<i32>::alloc_async(&stream, 4).unwrap();
    assert!(matches!(private.export_pool_pointer(), Err(Error::NotShareable { .. })));

    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([TEST, "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD, exports)
        .stdin(Stdio::from(fd))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run this test binary again as the child");
    let (stdout, stderr) = (drain(child.stdout.take().unwrap()), drain(child.stderr.take().unwrap()));
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break Some(status);
        }
        if started.elapsed() > CHILD_TIMEOUT {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let (stdout, stderr) = (stdout.join().unwrap(), stderr.join().unwrap());
    let Some(status) = status else {
        panic!("the child did not finish within {CHILD_TIMEOUT:?}; killed.\nstdout:\n{stdout}\nstderr:\n{stderr}");
    };
    assert!(
        status.success(),
        "the child failed ({status}):\nstdout:\n{stdout}\nstderr:\n{stderr}"
    );
    assert!(
        stdout.contains(CHILD_OK),
        "the child exited 0 without running its checks:\nstdout:\n{stdout}\nstderr:\n{stderr}"
    );

    // the child freed its imports before exiting: read its answer, then free here
    let got = output.to_vec().unwrap();
    if let Some(i) = (0..N).find(|&i| got[i] != answer(i) + 1) {
        panic!(
            "output[{i}] is {}, the child's answer plus one is {} ({} of {N} differ)",
            got[i],
            answer(i) + 1,
            (0..N).filter(|&i| got[i] != answer(i) + 1).count()
        );
    }
    assert_eq!(input.to_vec().unwrap(), values, "the input is as the parent wrote it");
    drop((input, output, private));
    stream.synchronize().unwrap();
    drop(pool);
    context.synchronize().unwrap();
}

/// The child's side: imports the pool from its standard input and both pointers from the
/// environment, checks the input and answers in the output.
fn child(exports: &str) {
    let context = common::context().expect("the child has a GPU");
    let (input, output) = exports.split_once(':').expect("two exports");
    let stdin = std::io::stdin();
    let pool = MemPool::import_fd(&context, stdin.as_fd()).expect("import the pool from standard input");
    assert!(pool.is_imported());
    // SAFETY: both exports are what the parent's export_pool_pointer made, sent unchanged.
    let (input, mut output) = unsafe {
        (
            pool.import_pointer::<i32>(&export_from_hex(input))
                .expect("import the input"),
            pool.import_pointer::<i32>(&export_from_hex(output))
                .expect("import the output"),
        )
    };
    assert_eq!((input.len(), output.len()), (N, N), "the sizes travel with the exports");
    let seen = input.to_vec().unwrap();
    if let Some(i) = (0..N).find(|&i| seen[i] != pattern(i)) {
        panic!("child: input[{i}] is {}, the parent wrote {}", seen[i], pattern(i));
    }
    let stream = Stream::new(&context).unwrap();
    // an imported pool hands out no allocations (refused before the driver)
    assert!(matches!(
        DeviceBuffer::<i32>::alloc_from_pool_async(&pool, &stream, 4),
        Err(Error::InvalidValue(_))
    ));
    output.copy_from_host(&(0..N).map(answer).collect::<Vec<_>>()).unwrap();
    let add_one = common::kernels(&context).function("add_one").unwrap();
    // SAFETY: add_one reads and writes n ints of `output`, which holds n.
    unsafe {
        stream
            .launch(
                &add_one,
                &LaunchConfig::for_num_elems(N as u32),
                (&mut output, N as u32),
            )
            .unwrap()
    };
    stream.synchronize().unwrap();
    // imports are freed before the parent frees the allocations (it waits for this process)
    drop((input, output, pool));
    context.synchronize().unwrap();
    println!("{CHILD_OK}");
}
