//! Set-up checks and assertions the stand-in driver's test files share.

use cuda_driver::{Context, Device, Error, Result};

use crate::fake::{self, Session};

/// The stand-in driver, loaded, and device 0's primary context.
pub fn setup() -> (Session, Context) {
    let fake = fake::session();
    let context = Context::primary(&Device::get(0).unwrap()).unwrap();
    (fake, context)
}

/// Asserts that the stand-in holds no live handle and saw no misuse (with the calls made).
pub fn assert_clean(fake: &Session) {
    let counts = fake.counts();
    assert!(counts.is_clean(), "{counts}\ncalls: {}", fake.trace());
}

/// Asserts that `result` is an `InvalidValue` whose message mentions `mentions`.
#[track_caller]
pub fn assert_invalid<T: std::fmt::Debug>(result: Result<T>, mentions: &str) {
    match result {
        Err(Error::InvalidValue(message)) => assert!(message.contains(mentions), "{message:?} lacks {mentions:?}"),
        other => panic!("expected InvalidValue mentioning {mentions:?}, got {other:?}"),
    }
}

/// Whether NVRTC can be loaded (generated kernels are compiled at run time); without it, prints
/// `skipped: <test>: ...` for the test to return early.
pub fn nvrtc_available(test: &str) -> bool {
    match cuda_sys::nvrtc() {
        Ok(_) => true,
        Err(why) => {
            println!("skipped: {test}: NVRTC is not available ({why})");
            false
        }
    }
}
