//! An error a destructor hits is kept on the context and returned by its
//! next checked call. Alone in its binary: it faults a context on purpose.

mod common;

use cuda_driver::sys::driver::CUresult;
use cuda_driver::{Context, ContextFlags, DeviceBuffer, Error, LaunchConfig, Module, Stream};

const FAULT: &str = r#"
extern "C" __global__ void fault(int *data) {
    data[0] = 1;
    *(volatile int *)(8) = 1;  // an illegal address
}
"#;

#[test]
fn destructor_errors_are_returned_by_the_next_synchronize() {
    let Some(primary) = common::context() else { return };
    let device = primary.device();
    let arch = device.compute_capability().unwrap();
    let context = Context::new(&device, ContextFlags::empty()).unwrap();
    let ptx = common::compile(FAULT, arch).unwrap();
    let fault = Module::from_ptx(&context, &ptx).unwrap().function("fault").unwrap();
    let stream = Stream::new(&context).unwrap();
    let mut data = DeviceBuffer::<i32>::zeroed(&context, 1).unwrap();
    // SAFETY: deliberately faults; the context is an explicit one made for this test.
    unsafe { stream.launch(&fault, &LaunchConfig::new((1, 1, 1), (1, 1, 1)), (&mut data,)) }.unwrap();
    // The buffer was used by the stream, so its drop waits for the context and hits the fault.
    drop(data);
    let error = context.synchronize().unwrap_err();
    println!("first synchronize after the faulting drop: {error}");
    match &error {
        Error::Deferred(errors) => assert_eq!(errors[0].code, CUresult::CUDA_ERROR_ILLEGAL_ADDRESS),
        other => panic!("expected the destructor's error, got {other:?}"),
    }
    // Reported once; the context itself is still broken (sticky error).
    let again = context.synchronize().unwrap_err();
    assert_eq!(again.code(), Some(CUresult::CUDA_ERROR_ILLEGAL_ADDRESS), "{again}");
    assert!(!matches!(again, Error::Deferred(_)));
}
