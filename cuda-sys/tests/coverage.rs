//! Coverage: every function each header declares resolves in the library
//! found here. NVRTC, cudart and nvJitLink are checked wherever they load
//! (`cargo xtask test` fetches them); the driver where one is installed.

fn report(name: &str, declared: usize, missing: Vec<&'static str>) {
    println!("{name}: {declared} declared, {} callable", declared - missing.len());
    assert!(
        missing.is_empty(),
        "{name} lacks {} declared functions: {missing:?}",
        missing.len()
    );
}

fn require(name: &str, variable: &str, error: cuda_sys::LoadError) {
    if std::env::var_os(variable).is_some() {
        panic!("{variable} is set but {name} did not load: {error}");
    }
    println!("skipped {name}: not installed here ({error})");
}

#[test]
fn every_nvrtc_function_is_callable() {
    match cuda_sys::nvrtc() {
        Ok(lib) => report("nvrtc", lib.functions().len(), lib.missing_functions()),
        Err(e) => require("nvrtc", "CUDA_NVRTC_LIBRARY", e),
    }
}

#[test]
fn every_runtime_function_is_callable() {
    match cuda_sys::runtime() {
        Ok(lib) => report("runtime", lib.functions().len(), lib.missing_functions()),
        Err(e) => require("runtime", "CUDA_RUNTIME_LIBRARY", e),
    }
}

#[test]
fn every_nvjitlink_function_is_callable() {
    match cuda_sys::nvjitlink() {
        Ok(lib) => report("nvjitlink", lib.functions().len(), lib.missing_functions()),
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
