//! cuda-core's `GraphBuilder` against the stand-in driver's fault injection: a builder's whole
//! life (a capture with a condition and a `while` body, completed and launched) with every
//! driver call failing once, in turn, returns that failure as an error, without a panic, leak
//! or double free, and leaves the driver usable. Alone in its binary: the process-wide caches
//! other tests fill (pools, loaded kernels) would be destroyed under them between runs.

use cuda_core::graph::{CaptureMode, GraphBuilder};
use cuda_core::{Error, Stream};
/// A cuda-core error as the driver layer's, keeping the driver's code for the failure-point
/// suite.
fn as_driver(error: Error) -> cuda_driver::Error {
    match error {
        Error::Driver(error) => error,
        other => cuda_driver::Error::InvalidValue(other.to_string()),
    }
}

/// A builder's whole life: a capture with a condition and a `while` body, completed, launched.
fn while_builder_life() -> cuda_driver::Result<()> {
    let context = tests::sequences::primary()?;
    let stream = Stream::new(&context)?;
    let code = cuda_core::ObjectCode::from_ptx(tests::fake::KERNELS.as_bytes().to_vec()).map_err(as_driver)?;
    let device = cuda_core::Device::new(0).map_err(as_driver)?;
    let countdown = code.get_kernel_on(&device, "countdown").map_err(as_driver)?;
    let mut counter = cuda_driver::DeviceBuffer::from_slice(&context, &[3i32])?;
    let one = cuda_core::LaunchConfig::for_num_elems(1);
    let mut builder = GraphBuilder::new(&stream);
    builder
        .build(CaptureMode::ThreadLocal, |root| {
            let condition = root.create_condition(Some(1))?;
            let mut body = root.while_(&condition)?;
            body.build(CaptureMode::ThreadLocal, |body| {
                // SAFETY: `countdown` updates the one int of `counter`, which outlives the launch.
                unsafe { body.launch(&one, &countdown, (condition.value(), &mut counter)) }
            })?;
            Ok(())
        })
        .map_err(as_driver)?;
    let graph = builder.complete().map_err(as_driver)?;
    // SAFETY: as above.
    unsafe { graph.launch(&stream) }.map_err(as_driver)?;
    stream.synchronize()?;
    tests::sequences::expect("counter", counter.to_vec()?[0], 0)
}

#[test]
fn every_failure_of_a_builders_life_is_clean() {
    let fake = tests::fake::session();
    tests::faults::assert_every_failure_point_clean(&fake, "while builder", &while_builder_life);
}
