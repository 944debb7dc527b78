//! A cuSOLVER that cannot be found is a typed error naming the file tried, not a panic. Alone
//! in its test binary: the environment variable it sets is process-wide, and cuSOLVER is loaded
//! once per process.

use cuda_libs::Error;

#[test]
fn a_missing_cusolver_names_the_path_it_tried() {
    let path = std::env::temp_dir().join(format!("no-such-dir-{}/libcusolver.so.12", std::process::id()));
    std::env::set_var("CUDA_CUSOLVER_LIBRARY", &path);
    let error = cuda_libs::solver::load().expect_err("a missing file must not load");
    let Error::Load(load) = &error else {
        panic!("expected Error::Load, got {error:?}");
    };
    assert_eq!(load.kind, cuda_sys::LibraryKind::Cusolver);
    assert_eq!(load.tried.len(), 1, "{:?}", load.tried);
    assert_eq!(load.tried[0].0, path);
    let message = error.to_string();
    assert!(message.contains(&path.display().to_string()), "{message}");
    assert!(message.contains("CUDA_CUSOLVER_LIBRARY"), "{message}");
    assert!(matches!(cuda_libs::solver::load(), Err(Error::Load(_))));
}
