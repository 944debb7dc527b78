//! A cuFFT that cannot be found is a typed error naming the file tried, not a panic. Alone in
//! its test binary: the environment variable it sets is process-wide, and cuFFT is loaded once
//! per process.

use cuda_libs::fft::{Kind, PlanDesc, Precision};
use cuda_libs::Error;

#[test]
fn a_missing_cufft_names_the_path_it_tried() {
    let path = std::env::temp_dir().join(format!("no-such-dir-{}/libcufft.so.12", std::process::id()));
    std::env::set_var("CUDA_CUFFT_LIBRARY", &path);
    let error = cuda_libs::fft::load().expect_err("a missing file must not load");
    let Error::Load(load) = &error else {
        panic!("expected Error::Load, got {error:?}");
    };
    assert_eq!(load.kind, cuda_sys::LibraryKind::Cufft);
    assert_eq!(load.tried.len(), 1, "{:?}", load.tried);
    assert_eq!(load.tried[0].0, path);
    let message = error.to_string();
    assert!(message.contains(&path.display().to_string()), "{message}");
    assert!(message.contains("CUDA_CUFFT_LIBRARY"), "{message}");
    // The same error again, not a panic; a description is checked without the library.
    assert!(matches!(cuda_libs::fft::load(), Err(Error::Load(_))));
    assert!(PlanDesc::new(Kind::C2C, Precision::F32, &[64]).is_ok());
}
