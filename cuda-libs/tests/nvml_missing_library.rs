//! An NVML that cannot be found is a typed error naming the file tried, not a panic. Alone in
//! its test binary: the environment variable it sets is process-wide, and NVML is loaded once
//! per process.

use cuda_libs::system::System;
use cuda_libs::Error;

#[test]
fn a_missing_nvml_names_the_path_it_tried() {
    let path = std::env::temp_dir().join(format!("no-such-dir-{}/libnvidia-ml.so.1", std::process::id()));
    std::env::set_var("CUDA_NVML_LIBRARY", &path);
    let error = System::new().expect_err("a missing file must not load");
    let Error::Load(load) = &error else {
        panic!("expected Error::Load, got {error:?}");
    };
    assert_eq!(load.kind, cuda_sys::LibraryKind::Nvml);
    assert_eq!(load.tried.len(), 1, "{:?}", load.tried);
    assert_eq!(load.tried[0].0, path);
    let message = error.to_string();
    assert!(message.contains(&path.display().to_string()), "{message}");
    assert!(message.contains("CUDA_NVML_LIBRARY"), "{message}");
    // Asked again, the same error; never a panic.
    assert!(matches!(System::new(), Err(Error::Load(_))));
}
