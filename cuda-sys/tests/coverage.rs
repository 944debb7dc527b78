//! Coverage: every function each header declares resolves in the library
//! found here. NVRTC, cudart and nvJitLink are checked wherever they load
//! (`cargo xtask test` fetches them); the driver where one is installed; cuBLAS, cuBLASLt,
//! NCCL, cuFFT and cuSOLVER (features off by default) in builds that have them, where they are
//! installed.

/// The pinned headers' NCCL (2.28.9) as `ncclGetVersion` gives it:
/// `major * 10000 + minor * 100 + patch`.
#[cfg(feature = "nccl")]
const PINNED_NCCL: i32 = 22809;

fn report(name: &str, declared: usize, missing: Vec<&'static str>) {
    println!("{name}: {declared} declared, {} callable", declared - missing.len());
    assert!(
        missing.is_empty(),
        "{name} lacks {} declared functions: {missing:?}",
        missing.len()
    );
}

/// [`report`] for a library that may be a CUDA 12 build (the GPU bundle's CUDA 12 run): one
/// lacks what 13.0 added, and refuses what 13.0 changed, a small part of the table.
fn report_any_generation(name: &str, version: Option<i32>, declared: usize, missing: Vec<&'static str>) {
    if version.is_some_and(|v| v < 13000) {
        println!(
            "{name} {version:?}: {declared} declared, {} callable; added or changed in 13.0: {missing:?}",
            declared - missing.len()
        );
        assert!(missing.len() * 10 < declared, "{name} lacks {missing:?}");
        return;
    }
    report(name, declared, missing)
}

fn require(name: &str, variable: &str, error: cuda_sys::LoadError) {
    // NVRTC and nvJitLink of two generations (the GPU bundle's CUDA 12 run carries NVRTC 12 but
    // finds CUDA 13's nvJitLink): whichever this process loaded first refuses the other by name.
    if matches!(error.unusable, Some(cuda_sys::Unusable::MixedGenerations { .. })) {
        println!("skipped {name}: {error}");
        return;
    }
    if std::env::var_os(variable).is_some() {
        panic!("{variable} is set but {name} did not load: {error}");
    }
    println!("skipped {name}: not installed here ({error})");
}

#[test]
fn every_nvrtc_function_is_callable() {
    match cuda_sys::nvrtc() {
        Ok(lib) => report_any_generation(
            "nvrtc",
            lib.library_version(),
            lib.functions().len(),
            lib.missing_functions(),
        ),
        Err(e) => require("nvrtc", "CUDA_NVRTC_LIBRARY", e),
    }
}

#[test]
fn every_runtime_function_is_callable() {
    match cuda_sys::runtime() {
        Ok(lib) => {
            let missing = lib.missing_functions();
            if lib.library_version().is_some_and(|v| v < 13000) {
                // cudart 12's exports of these names have other parameter lists: refused.
                for changed in ["cudaMemAdvise", "cudaGetDeviceProperties", "cudaGraphAddNode"] {
                    assert!(missing.contains(&changed), "{changed} of cudart 12 must be refused");
                }
            }
            report_any_generation("runtime", lib.library_version(), lib.functions().len(), missing)
        }
        Err(e) => require("runtime", "CUDA_RUNTIME_LIBRARY", e),
    }
}

#[test]
fn every_nvjitlink_function_is_callable() {
    match cuda_sys::nvjitlink() {
        Ok(lib) => report_any_generation(
            "nvjitlink",
            lib.library_version(),
            lib.functions().len(),
            lib.missing_functions(),
        ),
        Err(e) => require("nvjitlink", "CUDA_NVJITLINK_LIBRARY", e),
    }
}

#[test]
fn every_driver_function_is_callable() {
    match cuda_sys::driver() {
        Ok(lib) => report("driver", lib.functions().len(), lib.missing_functions()),
        Err(e) => require("driver", "CUDA_REQUIRE_GPU", e),
    }
}

#[cfg(feature = "cublas")]
#[test]
fn every_cublas_function_is_callable() {
    match cuda_sys::cublas() {
        Ok(lib) => {
            // `cublasGetProperty`'s major and minor, as `major * 1000 + minor * 10`.
            let version = lib.library_version();
            assert!(version.is_some_and(|v| (12000..14000).contains(&v)), "{version:?}");
            report("cublas", lib.functions().len(), lib.missing_functions())
        }
        Err(e) => require("cublas", "CUDA_CUBLAS_LIBRARY", e),
    }
}

/// `cublasLt.h` (13.1.0.3) declares `cublasLtDisableCpuInstructionsSetMask`, which
/// `libcublasLt.so.13` of the same wheel does not export: its accessor returns a
/// `SymbolError`, as for any function a library lacks.
#[cfg(feature = "cublaslt")]
const CUBLASLT_DECLARED_NOT_EXPORTED: &[&str] = &["cublasLtDisableCpuInstructionsSetMask"];

#[cfg(feature = "cublaslt")]
#[test]
fn every_cublaslt_function_is_callable() {
    match cuda_sys::cublaslt() {
        Ok(lib) => {
            let mut missing = lib.missing_functions();
            for known in CUBLASLT_DECLARED_NOT_EXPORTED {
                assert!(
                    missing.contains(known),
                    "{known} is exported now: drop it from the list"
                );
            }
            missing.retain(|symbol| !CUBLASLT_DECLARED_NOT_EXPORTED.contains(symbol));
            report(
                "cublaslt",
                lib.functions().len() - CUBLASLT_DECLARED_NOT_EXPORTED.len(),
                missing,
            )
        }
        Err(e) => require("cublaslt", "CUDA_CUBLASLT_LIBRARY", e),
    }
}

#[cfg(feature = "nccl")]
#[test]
fn every_nccl_function_is_callable() {
    match cuda_sys::nccl() {
        Ok(lib) => {
            // `library_version` keeps major and minor (`major * 1000 + minor * 10`); functions
            // come in patch releases too, so the patch level is read from `ncclGetVersion`.
            let version = lib.library_version();
            assert!(version.is_some_and(|v| (2000..3000).contains(&v)), "{version:?}");
            let get_version = lib.ncclGetVersion().expect("every NCCL 2 has ncclGetVersion");
            let mut code = 0;
            // SAFETY: `code` is a valid out-pointer; the call has no other precondition.
            let status = unsafe { get_version(&mut code) };
            assert_eq!(status, cuda_sys::nccl::ncclResult_t::ncclSuccess);
            // An NCCL older than the pinned headers (2.28.9), such as the one a PyTorch wheel
            // brings, lacks the newer functions: each is then a typed error when called.
            match Some(code) {
                Some(v) if v < PINNED_NCCL => {
                    let missing = lib.missing_functions();
                    println!(
                        "nccl {v}: older than the pinned headers; {} declared functions it lacks: {missing:?}",
                        missing.len()
                    );
                    assert!(missing.len() < lib.functions().len() / 4, "{missing:?}");
                }
                _ => report("nccl", lib.functions().len(), lib.missing_functions()),
            }
        }
        Err(e) => require("nccl", "CUDA_NCCL_LIBRARY", e),
    }
}

#[cfg(feature = "cufft")]
#[test]
fn every_cufft_function_is_callable() {
    match cuda_sys::cufft() {
        Ok(lib) => {
            // `cufftGetProperty`'s major and minor: cuFFT 12 ships with CUDA 13.
            let version = lib.library_version();
            assert!(version.is_some_and(|v| (12000..13000).contains(&v)), "{version:?}");
            report("cufft", lib.functions().len(), lib.missing_functions())
        }
        Err(e) => require("cufft", "CUDA_CUFFT_LIBRARY", e),
    }
}

/// `cusolverDn.h` (12.0.4.66) declares the logger functions of cuSOLVER's older releases, which
/// `libcusolver.so.12` of the same wheel does not export: each accessor returns a
/// `SymbolError`, as for any function a library lacks.
#[cfg(feature = "cusolver")]
const CUSOLVER_DECLARED_NOT_EXPORTED: &[&str] = &[
    "cusolverDnLoggerForceDisable",
    "cusolverDnLoggerOpenFile",
    "cusolverDnLoggerSetCallback",
    "cusolverDnLoggerSetFile",
    "cusolverDnLoggerSetLevel",
    "cusolverDnLoggerSetMask",
];

#[cfg(feature = "cusolver")]
#[test]
fn every_cusolver_function_is_callable() {
    match cuda_sys::cusolver() {
        Ok(lib) => {
            // `cusolverGetProperty`'s major and minor: cuSOLVER 12 ships with CUDA 13.
            let version = lib.library_version();
            assert!(version.is_some_and(|v| (12000..13000).contains(&v)), "{version:?}");
            let mut missing = lib.missing_functions();
            for known in CUSOLVER_DECLARED_NOT_EXPORTED {
                assert!(
                    missing.contains(known),
                    "{known} is exported now: drop it from the list"
                );
            }
            missing.retain(|symbol| !CUSOLVER_DECLARED_NOT_EXPORTED.contains(symbol));
            report(
                "cusolver",
                lib.functions().len() - CUSOLVER_DECLARED_NOT_EXPORTED.len(),
                missing,
            )
        }
        Err(e) => require("cusolver", "CUDA_CUSOLVER_LIBRARY", e),
    }
}
