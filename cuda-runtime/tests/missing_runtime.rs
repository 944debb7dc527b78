//! A missing libcudart is a clear, typed error (its own test binary, so the
//! process-wide table is loaded from the bad path below and nowhere else).

use cuda_runtime::Error;

#[test]
fn missing_libcudart_is_a_load_error_naming_the_path() {
    let bad = "/nonexistent/cuda-runtime-test/libcudart.so.13";
    // Only test of this binary: no other thread reads the environment.
    std::env::set_var("CUDA_RUNTIME_LIBRARY", bad);
    let error = cuda_runtime::device_count().expect_err("no libcudart at that path");
    let message = error.to_string();
    println!("{message}");
    match &error {
        Error::Load(load) => {
            assert_eq!(load.tried.len(), 1, "an explicit path is the only candidate");
            assert_eq!(load.tried[0].0, std::path::Path::new(bad));
        }
        other => panic!("expected Error::Load, got {other:?}"),
    }
    assert!(message.contains("libcudart") && message.contains(bad), "{message}");
    // Every entry point reports the same error instead of panicking.
    assert_eq!(cuda_runtime::runtime_version().unwrap_err(), error);
    assert_eq!(cuda_runtime::get_last_error().unwrap_err(), error);
}
