//! NVRTC compilation for real (no GPU needed): PTX, CUBIN, LTO-IR, name expressions, logs.

mod common;

use cuda_core::{Arch, CodeKind, CompileTarget, Error, ObjectCode, Program, ProgramOptions, Std};
use cuda_sys::nvrtc::nvrtcResult;

fn options() -> ProgramOptions {
    ProgramOptions {
        cache: false,
        ..ProgramOptions::for_arch(Arch::Sm(90))
    }
}

#[test]
fn compiles_ptx_for_sm_90() {
    let ptx = Program::new(common::MY_ADD, options())
        .compile(CompileTarget::Ptx)
        .unwrap();
    assert_eq!(ptx.kind(), CodeKind::Ptx);
    assert_eq!(ptx.arch(), Some(Arch::Sm(90)));
    let text = ptx.ptx().unwrap();
    assert!(text.contains(".target sm_90"), "{text}");
    assert!(text.contains(".visible .entry my_add("), "{text}");
    let reparsed = ObjectCode::from_ptx(ptx.code().to_vec()).unwrap();
    assert_eq!(reparsed.arch(), Some(Arch::Compute(90)));
}

#[test]
fn compiles_cubin_whose_elf_header_says_sm_90() {
    for sm in [80, 90, 100] {
        let cubin = Program::new(
            common::MY_ADD,
            ProgramOptions {
                arch: Some(Arch::Sm(sm)),
                ..options()
            },
        )
        .compile(CompileTarget::Cubin)
        .unwrap();
        assert_eq!(cubin.kind(), CodeKind::Cubin);
        assert!(cubin.code().starts_with(b"\x7fELF"));
        let reparsed = ObjectCode::from_cubin(cubin.code().to_vec()).unwrap();
        assert_eq!(reparsed.arch(), Some(Arch::Sm(sm)), "ELF header of an sm_{sm} CUBIN");
    }
}

#[test]
fn compiles_lto_ir() {
    let ltoir = Program::new(common::MY_ADD, options())
        .compile(CompileTarget::LtoIr)
        .unwrap();
    assert_eq!(ltoir.kind(), CodeKind::LtoIr);
    assert!(ltoir.code().len() > 64, "LTO-IR of {} bytes", ltoir.code().len());
}

#[test]
fn cubin_needs_a_real_arch() {
    let error = Program::new(
        common::MY_ADD,
        ProgramOptions {
            arch: Some(Arch::Compute(90)),
            ..options()
        },
    )
    .compile(CompileTarget::Cubin)
    .unwrap_err();
    assert!(matches!(error, Error::InvalidValue(_)), "{error}");
}

#[test]
fn name_expressions_give_lowered_names() {
    let program = Program::new(common::TEMPLATE_ADD, options()).with_name_expressions(["add<float>", "add<double>"]);
    let ptx = program.compile(CompileTarget::Ptx).unwrap();
    let float = ptx.lowered_name("add<float>").unwrap();
    let double = ptx.lowered_name("add<double>").unwrap();
    assert_eq!(float, "_Z3addIfEvPKT_S2_PS0_j");
    assert_eq!(double, "_Z3addIdEvPKT_S2_PS0_j");
    let text = ptx.ptx().unwrap();
    assert!(
        text.contains(float) && text.contains(double),
        "both instantiations are in the PTX"
    );
    assert!(ptx.lowered_name("add<int>").is_err());
}

#[test]
fn compile_error_carries_the_whole_log() {
    let source =
        "__global__ void broken(float *x) { x[0] = undeclared_one; }\n__global__ void worse() { also_undeclared(); }\n";
    let error = Program::new(
        source,
        ProgramOptions {
            name: Some("broken.cu".into()),
            ..options()
        },
    )
    .compile(CompileTarget::Ptx)
    .unwrap_err();
    println!("{error}");
    match &error {
        Error::Nvrtc {
            call, code, name, log, ..
        } => {
            assert_eq!(*call, "nvrtcCompileProgram");
            assert_eq!(*code, nvrtcResult::NVRTC_ERROR_COMPILATION);
            assert_eq!(*name, "NVRTC_ERROR_COMPILATION");
            assert!(log.contains("broken.cu"), "{log}");
            assert!(log.contains("undeclared_one"), "first error in the log: {log}");
            assert!(log.contains("also_undeclared"), "second error in the log: {log}");
        }
        other => panic!("expected an NVRTC error, got {other:?}"),
    }
    assert_eq!(error.nvrtc_code(), Some(nvrtcResult::NVRTC_ERROR_COMPILATION));
    assert!(error.to_string().contains("also_undeclared"));
}

#[test]
fn options_reach_nvrtc() {
    let source = r#"
#include "config.h"
#if __cplusplus < 202002L
#error "not C++20"
#endif
extern "C" __global__ void k(float *x) { x[0] = SCALE * OFFSET; }
"#;
    let program = Program::new(
        source,
        ProgramOptions {
            std: Some(Std::Cpp20),
            defines: vec![("SCALE".into(), Some("3.0f".into()))],
            headers: vec![("config.h".into(), "#define OFFSET 2.0f\n".into())],
            lineinfo: true,
            fast_math: true,
            ..options()
        },
    );
    let ptx = program.compile(CompileTarget::Ptx).unwrap();
    let text = ptx.ptx().unwrap();
    let six = 6.0f32.to_bits().to_string();
    assert!(
        text.contains(&six),
        "SCALE * OFFSET = 6.0 stored as the constant {six}:\n{text}"
    );
    assert!(text.contains(".loc"), "lineinfo gives .loc directives:\n{text}");
    let error = Program::new(
        source,
        ProgramOptions {
            std: Some(Std::Cpp17),
            ..program.options().clone()
        },
    )
    .compile(CompileTarget::Ptx)
    .unwrap_err();
    assert!(error.log().unwrap_or("").contains("not C++20"), "{error}");
}

#[test]
fn unknown_option_is_an_nvrtc_error() {
    let error = Program::new(
        common::MY_ADD,
        ProgramOptions {
            extra_options: vec!["--no-such-flag".into()],
            ..options()
        },
    )
    .compile(CompileTarget::Ptx)
    .unwrap_err();
    assert_eq!(
        error.nvrtc_code(),
        Some(nvrtcResult::NVRTC_ERROR_INVALID_OPTION),
        "{error}"
    );
}

#[test]
fn nul_in_source_is_invalid_value() {
    let error = Program::new("__global__ void k() {}\0", options())
        .compile(CompileTarget::Ptx)
        .unwrap_err();
    assert!(matches!(error, Error::InvalidValue(_)), "{error}");
}

#[test]
fn warnings_are_kept_in_the_log() {
    let source = "extern \"C\" __global__ void k(int *x) { int unused_variable; x[0] = 1; }";
    let ptx = Program::new(source, options()).compile(CompileTarget::Ptx).unwrap();
    assert!(ptx.log().contains("unused_variable"), "log: {:?}", ptx.log());
}

#[test]
fn code_round_trips_through_files() {
    let dir = common::temp_dir("files");
    let cubin = Program::new(common::MY_ADD, options())
        .compile(CompileTarget::Cubin)
        .unwrap();
    let path = dir.join("my_add.cubin");
    cubin.save(&path).unwrap();
    let loaded = ObjectCode::from_file(&path).unwrap();
    assert_eq!(loaded.kind(), CodeKind::Cubin);
    assert_eq!(loaded.code(), cubin.code());
    assert_eq!(loaded.arch(), Some(Arch::Sm(90)));
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn gpu_test_kernels_compile_for_sm_90() {
    for (name, source) in [("grid sync", common::GRID_SYNC), ("cluster", common::CLUSTER)] {
        let cubin = Program::new(source, options()).compile(CompileTarget::Cubin);
        assert!(cubin.is_ok(), "{name}: {}", cubin.unwrap_err());
    }
}

#[test]
fn cuda_headers_option_finds_the_toolkit_headers() {
    let source =
        "#include <cuComplex.h>\nextern \"C\" __global__ void k(cuFloatComplex *z) { z[0] = cuCmulf(z[0], z[0]); }";
    let without = Program::new(source, options()).compile(CompileTarget::Ptx);
    assert!(without.is_err(), "NVRTC alone has no cuComplex.h");
    let dirs = cuda_core::find_cuda_include_dirs();
    let with = Program::new(
        source,
        ProgramOptions {
            cuda_headers: true,
            ..options()
        },
    )
    .compile(CompileTarget::Ptx);
    if dirs.is_empty() {
        assert!(matches!(with, Err(Error::InvalidValue(_))), "{with:?}");
        println!("skipped: no CUDA headers on this machine (set CUDA_HOME or CUDA_RUNTIME_LIBRARY)");
    } else {
        assert!(with.is_ok(), "with {dirs:?}: {}", with.unwrap_err());
    }
}

#[test]
fn default_arch_is_the_devices_or_a_clear_error() {
    let program = Program::new(
        common::MY_ADD,
        ProgramOptions {
            cache: false,
            ..ProgramOptions::default()
        },
    );
    let compiled = program.compile(CompileTarget::Cubin);
    match cuda_core::Device::new(0) {
        Ok(device) => assert_eq!(compiled.unwrap().arch(), Some(device.arch().unwrap())),
        Err(no_device) => {
            let error = compiled.unwrap_err();
            assert!(matches!(error, Error::InvalidValue(_)), "{error}");
            assert!(error.to_string().contains("ProgramOptions::arch is not set"), "{error}");
            println!("without a device ({no_device}): {error}");
        }
    }
}
