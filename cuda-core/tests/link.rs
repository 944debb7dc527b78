//! nvJitLink for real (no GPU needed): LTO of two objects, mixed PTX and CUBIN inputs, link
//! errors with their log, and the error when nvJitLink is missing.

mod common;

use std::process::Command;

use cuda_core::{Arch, CodeKind, CompileTarget, Error, LinkTarget, Linker, LinkerOptions, Program, ProgramOptions};
use cuda_sys::nvjitlink::nvJitLinkResult;

const HELPER: &str = "__device__ float twice(float x) { return 2.0f * x; }";
const KERNEL: &str = r#"
extern __device__ float twice(float x);
template <typename T> __global__ void apply(T *x) { x[threadIdx.x] = twice(x[threadIdx.x]); }
"#;

fn rdc() -> ProgramOptions {
    ProgramOptions {
        relocatable_device_code: true,
        cache: false,
        ..ProgramOptions::for_arch(Arch::Sm(90))
    }
}

fn kernel() -> Program {
    Program::new(KERNEL, rdc()).with_name_expressions(["apply<float>"])
}

#[test]
fn lto_links_two_lto_ir_objects_into_a_cubin() {
    let helper = Program::new(HELPER, rdc()).compile(CompileTarget::LtoIr).unwrap();
    let kernel = kernel().compile(CompileTarget::LtoIr).unwrap();
    let cubin = Linker::new(LinkerOptions::for_arch(Arch::Sm(90)))
        .add(&helper)
        .add(&kernel)
        .link(LinkTarget::Cubin)
        .unwrap();
    assert_eq!(cubin.kind(), CodeKind::Cubin);
    assert_eq!(cubin.arch(), Some(Arch::Sm(90)));
    assert!(cubin.code().starts_with(b"\x7fELF"));
    let reparsed = cuda_core::ObjectCode::from_cubin(cubin.code().to_vec()).unwrap();
    assert_eq!(reparsed.arch(), Some(Arch::Sm(90)), "the linked CUBIN is for sm_90");
    let lowered = cubin.lowered_name("apply<float>").unwrap();
    assert!(
        cubin.code().windows(lowered.len()).any(|w| w == lowered.as_bytes()),
        "{lowered} is in the CUBIN"
    );
}

#[test]
fn lto_can_produce_ptx() {
    let helper = Program::new(HELPER, rdc()).compile(CompileTarget::LtoIr).unwrap();
    let kernel = kernel().compile(CompileTarget::LtoIr).unwrap();
    let ptx = Linker::new(LinkerOptions::for_arch(Arch::Sm(90)))
        .add(&helper)
        .add(&kernel)
        .link(LinkTarget::Ptx)
        .unwrap();
    let text = ptx.ptx().unwrap();
    assert!(text.contains(".target sm_90"), "{text}");
    assert!(text.contains(ptx.lowered_name("apply<float>").unwrap()), "{text}");
    assert!(
        !text.contains(".func twice") && !text.contains("call.uni"),
        "LTO inlined `twice`:\n{text}"
    );
}

#[test]
fn links_ptx_with_a_cubin() {
    let helper = Program::new(HELPER, rdc()).compile(CompileTarget::Cubin).unwrap();
    let kernel = kernel().compile(CompileTarget::Ptx).unwrap();
    let cubin = Linker::new(LinkerOptions::for_arch(Arch::Sm(90)))
        .add(&kernel)
        .add(&helper)
        .link(LinkTarget::Cubin)
        .unwrap();
    assert_eq!(cubin.kind(), CodeKind::Cubin);
    assert!(cubin.code().starts_with(b"\x7fELF"));
}

#[test]
fn unresolved_symbol_is_an_error_with_the_log() {
    let kernel = kernel().compile(CompileTarget::LtoIr).unwrap();
    let error = Linker::new(LinkerOptions::for_arch(Arch::Sm(90)))
        .add(&kernel)
        .link(LinkTarget::Cubin)
        .unwrap_err();
    println!("{error}");
    match &error {
        Error::NvJitLink { code, error_log, .. } => {
            assert_ne!(*code, nvJitLinkResult::NVJITLINK_SUCCESS);
            assert!(
                error_log.contains("twice"),
                "the log names the missing symbol: {error_log}"
            );
        }
        other => panic!("expected an nvJitLink error, got {other:?}"),
    }
}

#[test]
fn bad_requests_are_invalid_values() {
    let ptx = Program::new(common::MY_ADD, rdc()).compile(CompileTarget::Ptx).unwrap();
    let linker = |arch| Linker::new(LinkerOptions::for_arch(arch));
    assert!(
        matches!(
            linker(Arch::Sm(90)).link(LinkTarget::Cubin),
            Err(Error::InvalidValue(_))
        ),
        "no inputs"
    );
    assert!(matches!(
        linker(Arch::Compute(90)).add(&ptx).link(LinkTarget::Cubin),
        Err(Error::InvalidValue(_))
    ));
    assert!(
        matches!(
            linker(Arch::Sm(90)).add(&ptx).link(LinkTarget::Ptx),
            Err(Error::InvalidValue(_))
        ),
        "PTX out needs LTO"
    );
}

const MISSING_CHILD: &str = "CUDA_CORE_TEST_MISSING_NVJITLINK";

/// Runs [`missing_nvjitlink_child`] in a process whose nvJitLink path points nowhere.
#[test]
fn missing_nvjitlink_is_a_typed_error() {
    let output = Command::new(std::env::current_exe().unwrap())
        .args(["missing_nvjitlink_child", "--exact", "--ignored", "--nocapture"])
        .env("CUDA_NVJITLINK_LIBRARY", "/nonexistent/libnvJitLink.so.13")
        .env(MISSING_CHILD, "1")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    println!("{stdout}");
    assert!(
        output.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        stdout.contains("missing-nvjitlink: checked"),
        "the child ran its checks: {stdout}"
    );
}

#[test]
#[ignore = "run by missing_nvjitlink_is_a_typed_error"]
fn missing_nvjitlink_child() {
    if std::env::var_os(MISSING_CHILD).is_none() {
        println!("missing_nvjitlink_child only runs as a child of missing_nvjitlink_is_a_typed_error");
        return;
    }
    let ltoir = Program::new(common::MY_ADD, rdc())
        .compile(CompileTarget::LtoIr)
        .unwrap();
    let error = Linker::new(LinkerOptions::for_arch(Arch::Sm(90)))
        .add(&ltoir)
        .link(LinkTarget::Cubin)
        .unwrap_err();
    println!("{error}");
    match &error {
        Error::NvJitLinkUnavailable { source, lto_inputs } => {
            assert!(*lto_inputs);
            assert!(
                source
                    .tried
                    .iter()
                    .any(|(path, _)| path.ends_with("libnvJitLink.so.13")),
                "{source}"
            );
        }
        other => panic!("expected NvJitLinkUnavailable, got {other:?}"),
    }
    assert!(error.to_string().contains("LTO-IR inputs need it"), "{error}");

    // Without LTO-IR the driver's cuLink* links instead, where there is a driver and a device.
    let ptx = Program::new(KERNEL, rdc())
        .with_name_expressions(["apply<float>"])
        .compile(CompileTarget::Ptx)
        .unwrap();
    let helper = Program::new(HELPER, rdc()).compile(CompileTarget::Cubin).unwrap();
    let linked = Linker::new(LinkerOptions::for_arch(Arch::Sm(90)))
        .add(&ptx)
        .add(&helper)
        .link(LinkTarget::Cubin);
    match cuda_core::Device::count() {
        Ok(count) if count > 0 => {
            let cubin = linked.expect("the driver links PTX and CUBIN without nvJitLink");
            assert!(cubin.code().starts_with(b"\x7fELF"));
            assert!(cubin.lowered_name("apply<float>").is_ok());
            println!("driver fallback linked {} bytes", cubin.code().len());
        }
        _ => match linked {
            Err(Error::NvJitLinkUnavailable { lto_inputs: false, .. }) => {
                println!("no driver either: {}", linked.unwrap_err())
            }
            other => panic!("expected NvJitLinkUnavailable without LTO inputs, got {other:?}"),
        },
    }
    println!("missing-nvjitlink: checked");
}
