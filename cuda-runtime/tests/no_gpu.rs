//! Tests that run everywhere: libcudart loads (from the wheel in CI), the
//! "no driver / no device" case is a typed runtime error, and host-side
//! checks reject bad input before any runtime call.

mod common;

use cuda_runtime::{Error, Library, RuntimeError};
use cuda_sys::runtime::cudaError_t;

fn driver_present() -> bool {
    cuda_sys::driver().is_ok()
}

#[test]
fn libcudart_loads_and_reports_its_version() {
    let table = cuda_sys::runtime().expect("libcudart loads (set CUDA_RUNTIME_LIBRARY to the wheel's copy)");
    let version = cuda_runtime::runtime_version().expect("cudaRuntimeGetVersion needs no driver");
    println!("libcudart {} from {}", version, table.path().display());
    assert!(
        version.major >= 12,
        "runtime {version} is older than the 12.x headers need"
    );
    let driver = cuda_runtime::driver_version().expect("cudaDriverGetVersion succeeds without a driver");
    println!("driver supports CUDA {driver}");
    if !driver_present() {
        assert_eq!(driver, cuda_runtime::Version { major: 0, minor: 0 });
    }
}

#[test]
fn device_count_without_a_driver_is_a_typed_runtime_error() {
    match cuda_runtime::device_count() {
        Ok(count) => {
            assert!(driver_present(), "the runtime counted {count} devices without a driver");
            println!("driver present: {count} devices");
        }
        Err(Error::Runtime(e)) => {
            println!("device_count: {e}");
            let expected = [cudaError_t::cudaErrorInsufficientDriver, cudaError_t::cudaErrorNoDevice];
            assert!(expected.contains(&e.code), "unexpected code {e:?}");
            assert!(e.name.starts_with("cudaError"), "name from cudaGetErrorName: {e:?}");
            assert!(
                !e.description.is_empty() && !e.description.contains("unrecognized"),
                "{e:?}"
            );
            assert_eq!(Error::Runtime(e.clone()).code(), Some(e.code));
            // The failed call is also the thread's (sticky) last error.
            let last = cuda_runtime::peek_at_last_error().expect_err("the failure is recorded as the last error");
            assert_eq!(last.code(), Some(e.code));
        }
        Err(other) => panic!("expected a runtime error, got {other:?}"),
    }
}

#[test]
fn runtime_errors_carry_the_runtimes_name_and_description() {
    let table = cuda_sys::runtime().unwrap();
    let e = RuntimeError::new(table, cudaError_t::cudaErrorInvalidValue);
    assert_eq!(e.name, "cudaErrorInvalidValue");
    assert_eq!(e.description, "invalid argument");
    assert_eq!(e.to_string(), "cudaErrorInvalidValue (1): invalid argument");
}

#[test]
fn malformed_images_are_rejected_on_the_host() {
    let invalid = |r: Result<Library, Error>| match r {
        Err(Error::InvalidValue(why)) => why,
        other => panic!("expected InvalidValue, got {other:?}"),
    };
    println!("{}", invalid(Library::load(&[])));
    println!("{}", invalid(Library::load(b"\x7fELF\x02\x01")));
    // A fatbin header declaring a payload longer than the image.
    let mut fatbin = 0xBA55_ED50u32.to_le_bytes().to_vec();
    fatbin.extend_from_slice(&[1, 0, 16, 0]);
    fatbin.extend_from_slice(&1_000_000u64.to_le_bytes());
    println!("{}", invalid(Library::load(&fatbin)));
    println!("{}", invalid(Library::from_ptx("// \0 nul")));
}

#[test]
fn nvrtc_cubin_passes_the_image_check_and_a_truncated_one_does_not() {
    let cubin = common::compile(common::SCALE_ADD, common::Output::Cubin("sm_90".into()));
    assert!(cubin.starts_with(b"\x7fELF"), "NVRTC returned a CUBIN");
    match Library::load(&cubin[..cubin.len() / 2]) {
        Err(Error::InvalidValue(why)) => println!("truncated: {why}"),
        other => panic!("a truncated CUBIN must be rejected on the host, got {other:?}"),
    }
    // The whole image passes the host check and reaches the runtime: with a
    // driver it loads; without one the runtime's own error comes back.
    match Library::load(&cubin) {
        Ok(library) => {
            assert!(driver_present());
            assert_eq!(library.kernel_count().unwrap(), 1);
        }
        Err(Error::Runtime(e)) => {
            assert!(!driver_present(), "{e}");
            println!("cudaLibraryLoadData without a driver: {e}");
        }
        Err(other) => panic!("the CUBIN was rejected on the host: {other:?}"),
    }
}

#[test]
fn launch_config_covers_every_element() {
    let config = cuda_runtime::LaunchConfig::for_num_elems(1000);
    assert_eq!(config.block, (256, 1, 1));
    assert_eq!(config.grid, (4, 1, 1));
    // The type the driver layer shares: no element, an empty grid, which a launch refuses.
    assert_eq!(cuda_runtime::LaunchConfig::for_num_elems(0).grid, (0, 1, 1));
    assert_eq!(
        cuda_runtime::LaunchConfig::for_num_elems(0),
        cuda_driver::LaunchConfig::for_num_elems(0)
    );
}
