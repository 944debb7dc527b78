//! Two streams overlapping copies and kernels, timed with events. The data is cut into chunks;
//! each chunk is copied to the device (pinned memory, so the copy is truly asynchronous),
//! transformed by a kernel and copied back. On one stream every step waits for the previous
//! one; with chunks alternating between two streams, one chunk's copies run while the other's
//! kernel does. Both runs are checked against the host.
//!
//! What it mirrors (CuPy streams and events):
//!
//! ```python
//! s1, s2 = cp.cuda.Stream(non_blocking=True), cp.cuda.Stream(non_blocking=True)
//! start, end = cp.cuda.Event(), cp.cuda.Event()
//! start.record(s1); s2.wait_event(start)
//! for k, (host_in, host_out) in enumerate(chunks):  # pinned (cupyx.empty_pinned) arrays
//!     s = (s1, s2)[k % 2]
//!     with s:
//!         d = cp.empty(n, dtype=cp.uint32)
//!         d.set(host_in, stream=s)
//!         mix((blocks,), (threads,), (d, n, rounds))
//!         d.get(stream=s, out=host_out)
//! s1.wait_event(s2.record())
//! end.record(s1); end.synchronize()
//! print(cp.cuda.get_elapsed_time(start, end))
//! ```
//!
//! `cargo run --release --example streams_overlap`

use std::process::ExitCode;

use cuda_core::{Device, DeviceBuffer, HostBuffer, LaunchConfig, ProgramOptions, RawKernel, Stream};

const SOURCE: &str = r#"
extern "C" __global__ void mix(unsigned *data, unsigned n, unsigned rounds) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    unsigned v = data[i];
    for (unsigned r = 0; r < rounds; ++r) v = v * 1664525u + 1013904223u;
    data[i] = v;
}
"#;

const CHUNKS: usize = 8;
const CHUNK_LEN: usize = 1 << 20;
/// Steps of the kernel's loop: enough that a chunk's kernel takes about as long as its copies.
const ROUNDS: u32 = 4000;

/// What the kernel computes, `ROUNDS` steps of `v * 1664525 + 1013904223` (mod 2^32), as one
/// affine map `v * a + c` (composing the steps on the host), so checking is cheap.
fn mix_map() -> (u32, u32) {
    (0..ROUNDS).fold((1u32, 0u32), |(a, c), _| {
        (
            a.wrapping_mul(1_664_525),
            c.wrapping_mul(1_664_525).wrapping_add(1_013_904_223),
        )
    })
}

/// One chunk: pinned input and output, and device memory.
struct Chunk {
    input: HostBuffer<u32>,
    output: HostBuffer<u32>,
    device: DeviceBuffer<u32>,
}

/// Runs every chunk, chunk `k` on `streams[k % streams.len()]`, and returns the milliseconds
/// from an event before the first step to one after the last, on the first stream.
fn run(device: &Device, kernel: &RawKernel, streams: &[&Stream], chunks: &mut [Chunk]) -> cuda_core::Result<f32> {
    let (start, end) = (device.create_event()?, device.create_event()?);
    let first = streams[0];
    start.record(first)?;
    for stream in &streams[1..] {
        stream.wait_event(&start)?;
    }
    let config = LaunchConfig::for_num_elems(CHUNK_LEN as u32);
    for (k, chunk) in chunks.iter_mut().enumerate() {
        let stream = streams[k % streams.len()];
        chunk.device.copy_from_host_async(&chunk.input, stream)?;
        // SAFETY: `mix` reads and writes element i < n of `data`, which holds n = CHUNK_LEN.
        unsafe { kernel.launch(stream, &config, (&mut chunk.device, CHUNK_LEN as u32, ROUNDS))? };
        chunk.device.copy_to_host_async(&mut chunk.output, stream)?;
    }
    // The first stream waits for the others, so `end` follows every chunk.
    for stream in &streams[1..] {
        let done = device.create_event()?;
        done.record(stream)?;
        first.wait_event(&done)?;
    }
    end.record(first)?;
    end.synchronize()?;
    Ok(start.elapsed_ms(&end)?)
}

/// The index of the first output element that differs from the host's, if any.
fn first_wrong(chunks: &[Chunk], expected: &[Vec<u32>]) -> Option<(usize, usize)> {
    chunks
        .iter()
        .zip(expected)
        .enumerate()
        .find_map(|(k, (chunk, expected))| {
            let output: &[u32] = &chunk.output; // waits for the copy into it
            output.iter().zip(expected).position(|(a, b)| a != b).map(|i| (k, i))
        })
}

fn main() -> ExitCode {
    examples::run("streams_overlap", || {
        let device = Device::new(0)?;
        device.set_current()?;
        let kernel = RawKernel::new(SOURCE, "mix", ProgramOptions::default())?;
        let (s1, s2) = (device.create_stream()?, device.create_stream()?);

        let (scale, offset) = mix_map();
        let mut chunks = Vec::with_capacity(CHUNKS);
        let mut expected = Vec::with_capacity(CHUNKS);
        for k in 0..CHUNKS {
            let input: Vec<u32> = (0..CHUNK_LEN).map(|i| (k * CHUNK_LEN + i) as u32).collect();
            expected.push(
                input
                    .iter()
                    .map(|&v| v.wrapping_mul(scale).wrapping_add(offset))
                    .collect::<Vec<u32>>(),
            );
            chunks.push(Chunk {
                input: HostBuffer::from_slice(device.context(), &input)?,
                output: HostBuffer::new(device.context(), CHUNK_LEN)?,
                device: DeviceBuffer::alloc(device.context(), CHUNK_LEN)?,
            });
        }

        // A first run loads the kernel and warms the clocks; the timed runs follow.
        run(&device, &kernel, &[&s1], &mut chunks)?;
        let mut times = Vec::new();
        for (label, streams) in [("one stream", vec![&s1]), ("two streams", vec![&s1, &s2])] {
            for chunk in &mut chunks {
                chunk.output.fill(0);
            }
            let ms = run(&device, &kernel, &streams, &mut chunks)?;
            if let Some((k, i)) = first_wrong(&chunks, &expected) {
                return Err(format!(
                    "{label}: chunk {k} element {i} is {}, expected {}",
                    chunks[k].output[i], expected[k][i]
                )
                .into());
            }
            let mib = (CHUNKS * CHUNK_LEN * size_of::<u32>()) as f64 / (1 << 20) as f64;
            println!("{label:<12}: {ms:8.3} ms for {CHUNKS} chunks ({mib} MiB in, out and through the kernel)");
            times.push(ms);
        }
        println!(
            "two streams took {:.0}% of the one-stream time ({} copy engines)",
            100.0 * times[1] / times[0],
            device.as_driver_device().async_engine_count()?
        );
        println!("streams_overlap: every chunk correct on one and on two streams");
        Ok(())
    })
}
