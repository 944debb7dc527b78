//! An NCCL that cannot be found is a typed error naming the file tried, not a panic. Alone in
//! its test binary: the environment variable it sets is process-wide, and NCCL is loaded once
//! per process.

use cuda_libs::nccl::{self, UniqueId};
use cuda_libs::Error;

#[test]
fn a_missing_nccl_names_the_path_it_tried() {
    let path = std::env::temp_dir().join(format!("no-such-dir-{}/libnccl.so.2", std::process::id()));
    std::env::set_var("CUDA_NCCL_LIBRARY", &path);
    let error = nccl::load().expect_err("a missing file must not load");
    let Error::Load(load) = &error else {
        panic!("expected Error::Load, got {error:?}");
    };
    assert_eq!(load.kind, cuda_sys::LibraryKind::Nccl);
    assert_eq!(load.tried.len(), 1, "{:?}", load.tried);
    assert_eq!(load.tried[0].0, path);
    let message = error.to_string();
    assert!(message.contains(&path.display().to_string()), "{message}");
    assert!(message.contains("CUDA_NCCL_LIBRARY"), "{message}");
    // Everything that needs NCCL says the same, never panics.
    assert!(matches!(UniqueId::new(), Err(Error::Load(_))));
    assert!(matches!(nccl::version(), Err(Error::Load(_))));
    assert!(matches!(nccl::group(|_| Ok(())), Err(Error::Load(_))));
    // The bytes of an id need no library.
    let id = UniqueId::from_bytes(&[7; nccl::UNIQUE_ID_BYTES]).unwrap();
    assert_eq!(id.to_bytes(), [7; nccl::UNIQUE_ID_BYTES]);
}
