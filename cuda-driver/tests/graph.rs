//! A graph captured from a stream and replayed. Alone in its binary, so no
//! other test's calls meet the capture.

mod common;

use cuda_driver::{CaptureMode, DeviceBuffer, LaunchConfig, Stream, StreamFlags};

#[test]
fn captured_graph_replays_1000_times() {
    let Some(context) = common::context() else { return };
    let saxpy = common::kernels(&context).function("saxpy").unwrap();
    let n = 4096u32;
    let ones = DeviceBuffer::from_slice(&context, &vec![1.0f32; n as usize]).unwrap();
    let mut data = DeviceBuffer::<f32>::zeroed(&context, n as usize).unwrap();
    let stream = Stream::with_options(&context, StreamFlags::NON_BLOCKING, 0).unwrap();
    let config = LaunchConfig::for_num_elems(n);
    // data += 1 (saxpy with a = 1, x = ones), once outside the graph, which also warms up the checks.
    // SAFETY: saxpy reads `ones` and updates `data`, n floats each.
    unsafe { stream.launch(&saxpy, &config, (1.0f32, &ones, &mut data, n)) }.unwrap();
    stream.begin_capture(CaptureMode::ThreadLocal).unwrap();
    assert!(stream.is_capturing().unwrap());
    // SAFETY: as above; captured, not run.
    unsafe { stream.launch(&saxpy, &config, (1.0f32, &ones, &mut data, n)) }.unwrap();
    assert!(
        stream.launch_host_func(|| {}).is_err(),
        "host functions are refused while capturing"
    );
    let graph = stream.end_capture().unwrap();
    assert!(!stream.is_capturing().unwrap());
    assert_eq!(graph.node_count().unwrap(), 1);
    let exec = graph.instantiate().unwrap();
    exec.upload(&stream).unwrap();
    for _ in 0..1000 {
        // SAFETY: `ones` and `data`, the only memory the graph uses, outlive every replay.
        unsafe { exec.launch(&stream) }.unwrap();
    }
    stream.synchronize().unwrap();
    assert!(data.to_vec().unwrap().iter().all(|&v| v == 1001.0));
}
