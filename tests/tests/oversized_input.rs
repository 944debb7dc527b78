//! Sizes that overflow, or that no memory holds, are typed errors from cuda-core's manipulation
//! routines (`pad`, `split`, `array_split`, `repeat`, `repeat_each`, `tile`, `concatenate`):
//! never a panic on overflowing arithmetic or capacity, never an abort on a host allocation.
//! Against the stand-in driver; the size checks come before any kernel, most before any driver
//! call.

use cuda_core::{DeviceArray, Error, PadMode, SplitAt};
use cuda_driver::sys::driver::CUresult;
use cuda_driver::Stream;
use tests::checks::setup;

#[track_caller]
fn assert_invalid_core<T: std::fmt::Debug>(result: cuda_core::Result<T>, mentions: &str) {
    match result {
        Err(Error::InvalidValue(message)) => assert!(message.contains(mentions), "{message:?} lacks {mentions:?}"),
        other => panic!("expected InvalidValue mentioning {mentions:?}, got {other:?}"),
    }
}

#[track_caller]
fn assert_out_of_memory<T: cuda_core::Element>(result: cuda_core::Result<DeviceArray<T>>) {
    match result {
        Err(error) => assert_eq!(
            error.driver_code(),
            Some(CUresult::CUDA_ERROR_OUT_OF_MEMORY),
            "{error:?}"
        ),
        Ok(array) => panic!("a result of shape {:?}", array.shape()),
    }
}

#[test]
fn overflowing_sizes_are_typed_errors_before_any_driver_call() {
    let (fake, context) = setup();
    let stream = Stream::new(&context).unwrap();
    let one = DeviceArray::<f32>::zeros(&stream, [1]).unwrap();
    let pair = DeviceArray::<f32>::zeros(&stream, [2]).unwrap();
    let x = DeviceArray::<f32>::zeros(&stream, [3, 4]).unwrap();
    let hollow = DeviceArray::<f32>::zeros(&stream, [0]).unwrap();
    let quarter = DeviceArray::<u8>::zeros(&stream, [1])
        .unwrap()
        .broadcast_to([1usize << 62])
        .unwrap();
    let wide = DeviceArray::<f64>::zeros(&stream, [1]).unwrap();
    let calls = fake.calls();

    // 2^61 + 1 elements of 8 bytes.
    assert_invalid_core(wide.pad(&[(1 << 61, 0)], PadMode::Edge), "overflow");
    assert_invalid_core(wide.pad(&[(1 << 61, 0)], PadMode::Constant(1.0)), "overflow");
    assert_invalid_core(x.array_split(SplitAt::Sections(usize::MAX), 0), "sections");
    assert_invalid_core(x.array_split(SplitAt::Sections(usize::MAX - 1), 1), "cannot hold");
    assert_invalid_core(x.array_split(SplitAt::Sections(usize::MAX / 4), 1), "cannot hold");
    // An empty axis divides into any number of empty pieces.
    assert_invalid_core(hollow.split(SplitAt::Sections(usize::MAX), 0), "sections");
    assert_invalid_core(hollow.split(SplitAt::Sections(usize::MAX / 4), 0), "cannot hold");
    assert_invalid_core(pair.tile(&[1 << 63]), "overflow");
    assert_invalid_core(x.tile(&[1 << 62, 1]), "more elements than usize holds");
    assert_invalid_core(one.tile(&[1 << 63]), "overflow");
    assert_invalid_core(x.repeat(1 << 63, None), "overflow");
    assert_invalid_core(x.repeat(1 << 63, 1), "overflow");
    assert_invalid_core(one.repeat(1 << 62, 0), "overflow");
    assert_invalid_core(pair.repeat_each(&[usize::MAX, 1], 0), "add up");
    assert_invalid_core(pair.repeat_each(&[1 << 62, 0], None), "overflow");
    assert_invalid_core(DeviceArray::concatenate(&[&quarter; 4], 0), "add up");
    assert_invalid_core(DeviceArray::concatenate(&[&quarter; 5], 0), "add up");
    assert_eq!(fake.calls(), calls, "refused before any driver call");

    // Sizes that fit `usize` but no memory: the device refuses the result before the host makes
    // an index for each of its elements.
    assert_out_of_memory(one.repeat_each(&[1 << 40], 0));
    assert_out_of_memory(one.pad(&[(1 << 40, 0)], PadMode::Edge));
    assert_out_of_memory(one.pad(&[(1 << 61, 0)], PadMode::Edge));
    assert_out_of_memory(one.pad(&[(0, 1 << 61)], PadMode::Constant(1.0)));

    // Sizes that fit still work: views of an empty axis, and an empty tile.
    assert_eq!(hollow.split(SplitAt::Sections(3), 0).unwrap().len(), 3);
    assert_eq!(x.array_split(SplitAt::Sections(6), 1).unwrap().len(), 6);
    assert_eq!(pair.tile(&[0]).unwrap().shape(), [0]);
    let counts = fake.counts();
    assert!(counts.double_frees == 0 && counts.invalid_handles == 0, "{counts}");
}
