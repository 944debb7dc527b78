//! Copies and kernels on two streams overlap, timed with events. Alone in
//! its binary, so other tests do not disturb the timing.

mod common;

use std::time::Instant;

use cuda_driver::{DeviceBuffer, Event, EventFlags, HostBuffer, LaunchConfig, Stream};

#[test]
fn async_copies_on_two_streams_overlap_and_are_timed() {
    let Some(context) = common::context() else { return };
    let module = common::kernels(&context);
    let spin = module.function("spin").unwrap();
    let saxpy = module.function("saxpy").unwrap();
    // About 50 ms at the peak clock (the attribute may read 0 on newer drivers: assume 2 GHz then).
    let khz = context
        .device()
        .clock_rate_khz()
        .ok()
        .filter(|&k| k > 0)
        .unwrap_or(2_000_000);
    let cycles = u64::from(khz) * 50;
    let n = 8 << 20;
    let streams = [Stream::new(&context).unwrap(), Stream::new(&context).unwrap()];
    let mut hosts: Vec<HostBuffer<f32>> = (0..2)
        .map(|s| HostBuffer::from_slice(&context, &vec![s as f32 + 1.0; n]).unwrap())
        .collect();
    let mut devices: Vec<DeviceBuffer<f32>> = (0..2).map(|_| DeviceBuffer::alloc(&context, n).unwrap()).collect();
    let mut done: Vec<DeviceBuffer<i32>> = (0..2).map(|_| DeviceBuffer::zeroed(&context, 1).unwrap()).collect();
    let events: Vec<(Event, Event)> = (0..2)
        .map(|_| {
            (
                Event::new(&context, EventFlags::DEFAULT).unwrap(),
                Event::new(&context, EventFlags::DEFAULT).unwrap(),
            )
        })
        .collect();
    let start = Instant::now();
    for s in 0..2 {
        let stream = &streams[s];
        events[s].0.record(stream).unwrap();
        devices[s].copy_from_host_async(&hosts[s], stream).unwrap();
        // SAFETY: spin writes done[0] (one block); saxpy updates n floats of devices[s] in place.
        unsafe {
            stream
                .launch(&spin, &LaunchConfig::new((1, 1, 1), (32, 1, 1)), (cycles, &mut done[s]))
                .unwrap();
            let x = &devices[s];
            let y = x.as_slice();
            stream
                .launch(&saxpy, &LaunchConfig::for_num_elems(n as u32), (1.0f32, x, y, n as u32))
                .unwrap();
        }
        devices[s].copy_to_host_async(&mut hosts[s], stream).unwrap();
        events[s].1.record(stream).unwrap();
    }
    for (s, stream) in streams.iter().enumerate() {
        stream.synchronize().unwrap();
        assert!(events[s].1.query().unwrap());
    }
    let wall = start.elapsed().as_secs_f32() * 1000.0;
    let times: Vec<f32> = events.iter().map(|(a, b)| a.elapsed_ms(b).unwrap()).collect();
    let span = events[0]
        .0
        .elapsed_ms(&events[1].1)
        .unwrap()
        .max(events[1].0.elapsed_ms(&events[0].1).unwrap());
    println!("stream times {:?} ms, both {span:.2} ms, wall {wall:.2} ms", times);
    for (s, host) in hosts.iter().enumerate() {
        let expected = 2.0 * (s as f32 + 1.0);
        assert!(host.iter().all(|&v| v == expected), "stream {s}");
        assert!(
            times[s] >= 40.0,
            "stream {s} took {} ms, less than its 50 ms spin",
            times[s]
        );
    }
    assert!(
        span < 0.9 * (times[0] + times[1]),
        "streams did not overlap: {times:?}, together {span}"
    );
}
