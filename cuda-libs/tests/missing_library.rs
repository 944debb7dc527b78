//! A cuBLAS that cannot be found is a typed error naming the file tried, not a panic. Alone in
//! its test binary: the environment variable it sets is process-wide, and cuBLAS is loaded once
//! per process.

use cuda_libs::Error;

#[test]
fn a_missing_cublas_names_the_path_it_tried() {
    let path = std::env::temp_dir().join(format!("no-such-dir-{}/libcublas.so.13", std::process::id()));
    std::env::set_var("CUDA_CUBLAS_LIBRARY", &path);
    let error = cuda_libs::blas::load().expect_err("a missing file must not load");
    let Error::Load(load) = &error else {
        panic!("expected Error::Load, got {error:?}");
    };
    assert_eq!(load.kind, cuda_sys::LibraryKind::Cublas);
    assert_eq!(load.tried.len(), 1, "{:?}", load.tried);
    assert_eq!(load.tried[0].0, path);
    let message = error.to_string();
    assert!(message.contains(&path.display().to_string()), "{message}");
    assert!(message.contains("CUDA_CUBLAS_LIBRARY"), "{message}");
    // The same error again, not a panic.
    assert!(matches!(cuda_libs::blas::load(), Err(Error::Load(_))));
}
