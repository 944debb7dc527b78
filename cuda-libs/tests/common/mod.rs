//! What the GPU test binaries share.

use cuda_driver::{Device, Stream};
use cuda_libs::Error;

/// A stream on device 0 with cuBLAS and cuBLASLt loaded, or `None` after printing why the test
/// is skipped (a panic under `CUDA_REQUIRE_GPU=1`).
#[cfg(feature = "blas")]
#[allow(dead_code)] // not every test binary that shares this module calls cuBLAS
pub fn stream_or_skip(test: &str) -> Option<Stream> {
    stream_with(test, "cuBLAS", cuda_libs::blas::load)
}

/// A stream on device 0 with `library` loaded by `load`, or `None` after printing why the test
/// is skipped (a panic under `CUDA_REQUIRE_GPU=1`).
pub fn stream_with(test: &str, library: &str, load: fn() -> cuda_libs::Result<()>) -> Option<Stream> {
    let stream = Device::count()
        .map_err(Error::from)
        .and_then(|count| match count {
            0 => Err(Error::InvalidValue("the driver reports no device".into())),
            _ => Ok(Device::get(0)?),
        })
        .and_then(|device| Ok(device.primary_context()?))
        .and_then(|context| Ok(Stream::new(&context)?))
        .and_then(|stream| load().map(|()| stream));
    match stream {
        Ok(stream) => Some(stream),
        Err(error) if std::env::var("CUDA_REQUIRE_GPU").as_deref() == Ok("1") => {
            panic!("{test}: CUDA_REQUIRE_GPU=1 but there is no usable GPU with {library}: {error}")
        }
        Err(error) => {
            println!("skipped: {test}: no usable GPU with {library} ({error})");
            None
        }
    }
}
