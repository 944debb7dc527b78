//! Tests that need no GPU: error values and messages, flag values, the
//! no-driver path, and the NVRTC helper the GPU tests compile kernels with.

mod common;

use cuda_driver::sys::driver::CUresult;
use cuda_driver::{
    ContextFlags, Device, DeviceBuffer, DriverError, Error, EventFlags, HostAllocFlags, KernelArgs, LaunchConfig,
    LaunchError, StreamFlags,
};

#[test]
fn driver_error_carries_code_name_and_description() {
    let error = DriverError::new(CUresult::CUDA_ERROR_INVALID_VALUE);
    assert_eq!(error.code, CUresult::CUDA_ERROR_INVALID_VALUE);
    if cuda_sys::driver().is_ok() {
        assert_eq!(error.name, "CUDA_ERROR_INVALID_VALUE");
    } else {
        assert_eq!(error.name, "CUresult(1)");
    }
    assert!(!error.description.is_empty());
    let text = Error::from(error.clone()).to_string();
    assert!(text.contains(&error.name) && text.contains("(1)"), "{text}");
    assert_eq!(Error::from(error).code(), Some(CUresult::CUDA_ERROR_INVALID_VALUE));
}

#[test]
fn host_side_errors_have_no_code_and_say_what_is_wrong() {
    let wrong = Error::WrongContext {
        object: "buffer",
        used_with: "function",
    };
    assert_eq!(wrong.code(), None);
    assert_eq!(
        wrong.to_string(),
        "buffer belongs to a different context than the function it was used with"
    );
    let launch = Error::from(LaunchError::ArgumentSize {
        kernel: "saxpy".into(),
        index: 3,
        expected: 4,
        given: 8,
    });
    assert_eq!(launch.code(), None);
    assert_eq!(
        launch.to_string(),
        "argument 3 of kernel `saxpy` is 8 bytes, the parameter is 4 bytes"
    );
    let threads = LaunchError::TooManyThreads {
        kernel: "k".into(),
        requested: 2048,
        max: 1024,
    };
    assert!(threads.to_string().contains("2048") && threads.to_string().contains("1024"));
}

#[test]
fn deferred_errors_report_the_first_code() {
    let errors = vec![
        DriverError::new(CUresult::CUDA_ERROR_ILLEGAL_ADDRESS),
        DriverError::new(CUresult::CUDA_ERROR_INVALID_HANDLE),
    ];
    let error = Error::Deferred(errors);
    assert_eq!(error.code(), Some(CUresult::CUDA_ERROR_ILLEGAL_ADDRESS));
    assert!(
        error.to_string().starts_with("2 earlier destructor calls failed"),
        "{error}"
    );
    let empty = Error::Deferred(Vec::new());
    assert_eq!(empty.code(), None);
    assert_eq!(empty.to_string(), "an earlier destructor call failed");
}

#[test]
fn flags_match_the_header_values() {
    assert_eq!(ContextFlags::SCHED_AUTO.bits(), 0);
    assert_eq!(ContextFlags::SCHED_SPIN.bits(), 1);
    assert_eq!(ContextFlags::SCHED_YIELD.bits(), 2);
    assert_eq!(ContextFlags::SCHED_BLOCKING_SYNC.bits(), 4);
    assert_eq!(ContextFlags::MAP_HOST.bits(), 8);
    assert_eq!(ContextFlags::LMEM_RESIZE_TO_MAX.bits(), 0x10);
    assert_eq!(StreamFlags::DEFAULT.bits(), 0);
    assert_eq!(StreamFlags::NON_BLOCKING.bits(), 1);
    assert_eq!(EventFlags::BLOCKING_SYNC.bits(), 1);
    assert_eq!(EventFlags::DISABLE_TIMING.bits(), 2);
    assert_eq!(EventFlags::INTERPROCESS.bits(), 4);
    assert_eq!(
        (HostAllocFlags::PORTABLE | HostAllocFlags::DEVICEMAP | HostAllocFlags::WRITECOMBINED).bits(),
        7
    );
}

#[test]
fn argument_tuples_count_their_elements() {
    assert_eq!(<() as KernelArgs>::COUNT, 0);
    assert_eq!(<(f32,) as KernelArgs>::COUNT, 1);
    assert_eq!(
        <(&DeviceBuffer<f32>, &mut DeviceBuffer<f32>, u32) as KernelArgs>::COUNT,
        3
    );
    assert_eq!(
        <(u8, u16, u32, u64, i8, i16, i32, i64, f32, f64, [u8; 3], usize) as KernelArgs>::COUNT,
        12
    );
    assert_eq!(LaunchConfig::for_num_elems(1000).grid, (4, 1, 1));
}

#[test]
fn without_a_driver_every_entry_point_is_a_load_error() {
    const NO_DRIVER: &str = "/nonexistent/libcuda.so.1";
    if cuda_sys::driver().is_ok() {
        // A driver is installed: run this test again in a child process whose
        // loader is pointed at a file that does not exist.
        assert!(Device::count().is_ok());
        let child = std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "without_a_driver_every_entry_point_is_a_load_error",
                "--nocapture",
            ])
            .env("CUDA_DRIVER_LIBRARY", NO_DRIVER)
            .output()
            .unwrap();
        let output = String::from_utf8_lossy(&child.stdout);
        assert!(child.status.success(), "the no-driver child failed:\n{output}");
        assert!(output.contains("1 passed"), "{output}");
        return;
    }
    assert!(matches!(Device::count(), Err(Error::Load(_))), "{:?}", Device::count());
    assert!(matches!(Device::get(0), Err(Error::Load(_))));
    assert!(matches!(cuda_driver::driver_version(), Err(Error::Load(_))));
    let message = Device::count().unwrap_err().to_string();
    assert!(message.contains("libcuda"), "{message}");
}

#[test]
fn nvrtc_compiles_the_test_kernels() {
    if cuda_sys::nvrtc().is_err() {
        common::skip::<()>("NVRTC is not available (set CUDA_NVRTC_LIBRARY)");
        return;
    }
    let ptx = common::compile(common::KERNELS, (9, 0)).unwrap_or_else(|log| panic!("{log}"));
    for name in [
        "vector_add",
        "saxpy",
        "affine",
        "mixed",
        "transpose",
        "add_one",
        "spin",
        "limited",
    ] {
        assert!(ptx.contains(&format!(".entry {name}(")), "{name} missing from the PTX");
    }
    let log = common::compile("extern \"C\" __global__ void broken() { undeclared(); }", (9, 0)).unwrap_err();
    assert!(log.contains("undeclared"), "{log}");
}

#[test]
fn handwritten_ptx_of_the_docs_assembles() {
    if cuda_sys::nvjitlink().is_err() {
        common::skip::<()>("nvJitLink is not available (set CUDA_NVJITLINK_LIBRARY)");
        return;
    }
    common::assemble(common::SCALE_PTX).unwrap_or_else(|log| panic!("the example PTX does not assemble:\n{log}"));
    let lib_rs = include_str!("../src/lib.rs");
    let doc_ptx: String = lib_rs
        .lines()
        .filter_map(|line| line.strip_prefix("//!"))
        .skip_while(|line| !line.contains("const PTX"))
        .skip(1)
        .take_while(|line| !line.contains("\"#;"))
        .map(|line| format!("{}\n", line.strip_prefix(' ').unwrap_or(line)))
        .collect();
    assert_eq!(
        doc_ptx.trim(),
        common::SCALE_PTX.trim(),
        "the crate example and the tested PTX differ"
    );
    let broken = common::SCALE_PTX.replace("mul.f32", "mul.bogus");
    assert!(common::assemble(&broken).is_err());
}

#[test]
fn handles_are_send_and_sync_where_documented() {
    fn send_sync<T: Send + Sync>() {}
    fn send<T: Send>() {}
    send_sync::<Error>();
    send_sync::<cuda_driver::Context>();
    send_sync::<cuda_driver::Module>();
    send_sync::<cuda_driver::Library>();
    send_sync::<cuda_driver::Function>();
    send_sync::<cuda_driver::Stream>();
    send_sync::<cuda_driver::Event>();
    send_sync::<cuda_driver::MemPool>();
    send_sync::<DeviceBuffer<f32>>();
    send_sync::<cuda_driver::DeviceSlice<'static, f32>>();
    send_sync::<cuda_driver::HostBuffer<u8>>();
    send::<cuda_driver::Graph>();
    send::<cuda_driver::GraphExec>();
    send_sync::<cuda_driver::GraphNode>();
    send_sync::<cuda_driver::ConditionHandle>();
    send_sync::<cuda_driver::CaptureBody>();
    send_sync::<cuda_driver::GraphArgs<'static>>();
}
