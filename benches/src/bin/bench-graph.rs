//! A training-like step of 20 array operations (19 fused element-wise kernels and one sum, on
//! 2^16 f32 elements, every result written into an array made beforehand) run two ways: as 20
//! eager launches, and captured once by cuda-core's `GraphBuilder` and replayed as one graph
//! launch. Rows, for each way: host microseconds per step (the time to queue a step, median over
//! batches of 100 back-to-back steps, synchronised between batches) and device microseconds per
//! step (CUDA events around 1000 steps). torch's CUDA-graph replay of the same step is
//! `python/bench_graph_torch.py`. Prints `ROW {json}` lines (see the `benches` crate docs);
//! built with `--features graph`. Every row is in the `other` part.

use std::time::Instant;

use benches::{Part, Row, Stats};
use cuda_core::graph::{CaptureMode, GraphBuilder};
use cuda_core::{DeviceArray, Event, EventFlags, ExprOps, Stream};

const BENCH: &str = "graph";
const N: usize = 1 << 16;
const EAGER: &str = "cuda-core DeviceArray, 20 launches";
const GRAPH: &str = "cuda-core GraphBuilder, one graph launch";
const HOST_CASE: &str = "20-op array step 2^16 f32, host time";
const DEVICE_CASE: &str = "20-op array step 2^16 f32, device time";
const UNIT: &str = "us/step";
/// Steps per host-time batch, batches (after the warm-up batches) and steps timed by events.
const PER_BATCH: usize = 100;
const WARMUP_BATCHES: usize = 3;
const BATCHES: usize = 20;
const DEVICE_STEPS: usize = 1000;

/// The step's arrays: inputs `x` and `t`, parameters `w`, `b`, momentum `v`, and the
/// intermediates, all made before the step, so that the step allocates only the sum's result.
struct State {
    x: DeviceArray<f32>,
    t: DeviceArray<f32>,
    w: DeviceArray<f32>,
    b: DeviceArray<f32>,
    v: DeviceArray<f32>,
    z: DeviceArray<f32>,
    a: DeviceArray<f32>,
    e: DeviceArray<f32>,
    g: DeviceArray<f32>,
}

impl State {
    fn new(stream: &Stream) -> cuda_core::Result<State> {
        let ramp: Vec<f32> = (0..N).map(|i| (i % 1000) as f32 / 500.0 - 1.0).collect();
        let array = |value: f32| DeviceArray::full(stream, [N], value);
        Ok(State {
            x: DeviceArray::from_slice(stream, &ramp)?,
            t: array(0.25)?,
            w: array(0.5)?,
            b: array(0.0)?,
            v: array(0.0)?,
            z: array(0.0)?,
            a: array(0.0)?,
            e: array(0.0)?,
            g: array(0.0)?,
        })
    }

    /// Twenty launches: two gradient steps with momentum, then a smoothed error and its sum.
    fn step(&mut self) -> cuda_core::Result<()> {
        let State {
            x,
            t,
            w,
            b,
            v,
            z,
            a,
            e,
            g,
        } = self;
        for _ in 0..2 {
            z.assign(&*w * &*x + &*b)?; // 1, 8
            a.assign(z.tanh())?; // 2, 9
            e.assign(&*a - &*t)?; // 3, 10
            g.assign(&*e * (1.0 - &*a * &*a))?; // 4, 11
            v.update(|v| v * 0.9f32 + &*g * &*x)?; // 5, 12
            w.update(|w| w - &*v * 0.01f32)?; // 6, 13
            b.update(|b| b - &*g * 0.01f32)?; // 7, 14
        }
        g.assign(&*e * &*e)?; // 15
        g.update(|g| (g + 1e-8f32).sqrt())?; // 16
        e.update(|e| e * 0.5f32 + &*g * 0.5f32)?; // 17
        a.assign(&*e * &*t)?; // 18
        z.assign(&*a - &*e)?; // 19
        z.sum()?; // 20
        Ok(())
    }
}

fn main() {
    let part = Part::from_args();
    if !part.other() {
        return;
    }
    let rows = [HOST_CASE, DEVICE_CASE]
        .map(|case| [(case, EAGER), (case, GRAPH)])
        .concat();
    let Some(stream) = benches::stream_or_unavailable(BENCH, UNIT, &rows) else {
        return;
    };
    match run(&stream) {
        Ok(rows) => rows.iter().for_each(Row::emit),
        Err(why) => {
            for case in [HOST_CASE, DEVICE_CASE] {
                for implementation in [EAGER, GRAPH] {
                    Row::measured(BENCH, case, implementation, UNIT, Err(format!("failed: {why}"))).emit();
                }
            }
        }
    }
    println!("reference: torch's CUDA-graph replay of the same step in python/bench_graph_torch.py");
}

fn run(stream: &Stream) -> cuda_core::Result<Vec<Row>> {
    let mut eager = State::new(stream)?;
    eager.step()?; // warm-up: kernels compiled and loaded
    let mut captured = State::new(stream)?;
    captured.step()?;
    stream.synchronize()?;
    let mut builder = GraphBuilder::new(stream);
    builder.build(CaptureMode::ThreadLocal, |_| captured.step())?;
    let graph = builder.complete()?;
    graph.upload(stream)?;
    let sync = || stream.synchronize().map_err(|e| e.to_string());
    let eager_host = benches::time_batches(WARMUP_BATCHES, BATCHES, PER_BATCH, sync, || {
        eager.step().map_err(|e| e.to_string())
    });
    let graph_host = benches::time_batches(WARMUP_BATCHES, BATCHES, PER_BATCH, sync, || {
        // SAFETY: the graph uses `captured`'s arrays, alive until the end of this function, and
        // memory it allocates itself.
        unsafe { graph.launch(stream) }.map_err(|e| e.to_string())
    });
    let eager_device = device_time(stream, || eager.step())?;
    // SAFETY: as above.
    let graph_device = device_time(stream, || unsafe { graph.launch(stream) })?;
    Ok(vec![
        Row::measured(BENCH, HOST_CASE, EAGER, UNIT, eager_host),
        Row::measured(BENCH, HOST_CASE, GRAPH, UNIT, graph_host),
        Row::measured(BENCH, DEVICE_CASE, EAGER, UNIT, Ok(eager_device)),
        Row::measured(BENCH, DEVICE_CASE, GRAPH, UNIT, Ok(graph_device)),
    ])
}

/// Device microseconds per step: events around [`DEVICE_STEPS`] steps queued back to back.
fn device_time(stream: &Stream, mut step: impl FnMut() -> cuda_core::Result<()>) -> cuda_core::Result<Stats> {
    let (start, end) = (
        Event::new(stream.context(), EventFlags::DEFAULT)?,
        Event::new(stream.context(), EventFlags::DEFAULT)?,
    );
    stream.synchronize()?;
    let began = Instant::now();
    start.record(stream)?;
    for _ in 0..DEVICE_STEPS {
        step()?;
    }
    end.record(stream)?;
    end.synchronize()?;
    let wall_us = began.elapsed().as_secs_f64() * 1e6 / DEVICE_STEPS as f64;
    let device_us = f64::from(start.elapsed_ms(&end)?) * 1e3 / DEVICE_STEPS as f64;
    println!("{DEVICE_STEPS} steps: {device_us:.2} us/step on the device, {wall_us:.2} us/step wall-clock");
    Stats::from_samples(vec![device_us], DEVICE_STEPS).map_err(cuda_core::Error::InvalidValue)
}
