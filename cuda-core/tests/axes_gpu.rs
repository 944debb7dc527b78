//! Negative axes on a GPU: for a routine of each family (reductions of arrays and of fused
//! expressions, arg-reductions, moments, averages, the axis form of `ReductionKernel`, gathers,
//! copies, views), an axis counted from the end gives what NumPy's positive axis gives, both
//! checked against the host; an axis out of range is `Error::Axis` and a repeated one an
//! `Error::InvalidValue`. Without a driver or device each test prints `skipped: <why>` and
//! passes, unless `CUDA_REQUIRE_GPU=1`.

mod common;

use cuda_core::{Arg, Axes, DeviceArray, Error, IndexMode, ReductionKernel, SplitAt};
use cuda_driver::Stream;

/// The host values of the (2, 3, 4) test array: distinct, so arg-reductions have one answer.
fn values() -> Vec<f32> {
    (0..24).map(|i| ((i * 7) % 24) as f32 - 10.0).collect()
}

/// Element `[i, j, k]` of [`values`].
fn at(data: &[f32], i: usize, j: usize, k: usize) -> f32 {
    data[(i * 3 + j) * 4 + k]
}

fn array(stream: &Stream) -> DeviceArray<f32> {
    DeviceArray::from_slice(stream, &values())
        .unwrap()
        .reshape([2, 3, 4])
        .unwrap()
}

#[track_caller]
fn assert_axis_error<T: std::fmt::Debug>(result: cuda_core::Result<T>, axis: i64, ndim: usize) {
    match result {
        Err(Error::Axis { axis: a, ndim: n }) => assert_eq!((a, n), (axis, ndim)),
        other => panic!("expected Error::Axis {{ axis: {axis}, ndim: {ndim} }}, got {other:?}"),
    }
}

#[test]
fn negative_axes_reduce_like_positive_ones() {
    let Some(device) = common::device_or_skip("negative_axes_reduce_like_positive_ones") else {
        return;
    };
    let stream = device.create_stream().unwrap();
    let data = values();
    let x = array(&stream);

    // sum along the last axis, against the host.
    let host_last: Vec<f32> = (0..2)
        .flat_map(|i| (0..3).map(move |j| (i, j)))
        .map(|(i, j)| (0..4).map(|k| at(&data, i, j, k)).sum())
        .collect();
    let last = x.sum_axes(-1, false).unwrap();
    assert_eq!(last.shape(), [2, 3]);
    assert_eq!(last.to_vec().unwrap(), host_last);
    assert_eq!(x.sum_axes(2usize, false).unwrap().to_vec().unwrap(), host_last);
    // Lists mixing signs, keepdims, and None for every axis.
    let kept = x.sum_axes([0, -1], true).unwrap();
    assert_eq!(kept.shape(), [1, 3, 1]);
    assert_eq!(
        kept.to_vec().unwrap(),
        x.sum_axes([0usize, 2], true).unwrap().to_vec().unwrap()
    );
    let host_middle: Vec<f32> = (0..3)
        .map(|j| {
            (0..2)
                .flat_map(|i| (0..4).map(move |k| (i, k)))
                .map(|(i, k)| at(&data, i, j, k))
                .sum()
        })
        .collect();
    assert_eq!(kept.to_vec().unwrap(), host_middle);
    let every = x.max_axes(None, true).unwrap();
    assert_eq!(every.shape(), [1, 1, 1]);
    assert_eq!(every.to_vec().unwrap(), [13.0]);
    assert!(
        x.min_axes(Axes::EMPTY, false).unwrap().to_vec().unwrap() == data,
        "no axis: the array"
    );
    // Arg-reductions.
    let host_argmax: Vec<i64> = (0..2)
        .flat_map(|i| (0..4).map(move |k| (i, k)))
        .map(|(i, k)| {
            (0..3)
                .max_by(|&a, &b| at(&data, i, a, k).total_cmp(&at(&data, i, b, k)))
                .unwrap() as i64
        })
        .collect();
    let arg = x.argmax_axis(-2, false).unwrap();
    assert_eq!(arg.shape(), [2, 4]);
    assert_eq!(arg.to_vec().unwrap(), host_argmax);
    assert_eq!(x.argmax_axis(1u32, false).unwrap().to_vec().unwrap(), host_argmax);
    assert_eq!(
        x.argmin_axis(-3i64, true).unwrap().to_vec().unwrap(),
        x.argmin_axis(0, true).unwrap().to_vec().unwrap()
    );
    // Moments, ranges, weighted averages, fused expressions.
    assert_eq!(
        x.var_axes(-1, false, 1).unwrap().to_vec().unwrap(),
        x.var_axes(2, false, 1).unwrap().to_vec().unwrap()
    );
    assert_eq!(
        x.ptp_axes([-2], false).unwrap().to_vec().unwrap(),
        x.ptp_axes([1], false).unwrap().to_vec().unwrap()
    );
    let w = DeviceArray::from_slice(&stream, &[1.0f32, 2.0, 3.0, 4.0]).unwrap();
    let (negative, positive) = (x.average(&w, -1, false).unwrap(), x.average(&w, 2, false).unwrap());
    assert_eq!(negative.average.to_vec().unwrap(), positive.average.to_vec().unwrap());
    // Integer weighted sums, exact in f32, divided once by the weights' sum as the device does.
    let host_average: Vec<f32> = data
        .chunks(4)
        .map(|row| row.iter().zip(1..).map(|(v, k)| v * k as f32).sum::<f32>() / 10.0)
        .collect();
    assert_eq!(negative.average.to_vec().unwrap(), host_average);
    let squares = (&x * &x).sum_axes(-1, false).unwrap();
    let host_squares: Vec<f32> = data.chunks(4).map(|row| row.iter().map(|v| v * v).sum()).collect();
    assert_eq!(squares.to_vec().unwrap(), host_squares);
    assert_eq!(
        (&x * 2.0).argmax_axis(-2, false).unwrap().to_vec().unwrap(),
        host_argmax
    );
    // The axis form of a user's ReductionKernel.
    let total = ReductionKernel::new("T x", "T y", "x", "a + b", "y = a", "0", "axes_gpu_total", None).unwrap();
    let mut out = DeviceArray::<f32>::empty(&stream, [2, 3]).unwrap();
    // SAFETY: the expressions compute with the values they are given, and the post-map assigns
    // the output element it is given.
    unsafe { total.launch_axes(&stream, &[Arg::from(&x), Arg::from(&mut out)], -1) }.unwrap();
    assert_eq!(out.to_vec().unwrap(), host_last);

    // Out of range: NumPy's AxisError; named twice: its "repeated axis" ValueError.
    assert_axis_error(x.sum_axes(3, false), 3, 3);
    assert_axis_error(x.sum_axes([0, -4], false), -4, 3);
    assert_axis_error(x.argmax_axis(-4, false), -4, 3);
    assert_axis_error((&x * 2.0).mean_axes(3usize, true), 3, 3);
    assert_axis_error(x.std_axes(i64::MIN, false, 0), i64::MIN, 3);
    assert_axis_error(x.average(&w, 5, false), 5, 3);
    // SAFETY: as above; the call is refused before any launch.
    assert_axis_error(
        unsafe { total.launch_axes(&stream, &[Arg::from(&x), Arg::from(&mut out)], [-4]) },
        -4,
        3,
    );
    let error = x.max_axes([2, -1], false).unwrap_err();
    assert!(
        matches!(&error, Error::InvalidValue(m) if m.contains("repeated axis -1")),
        "{error:?}"
    );
}

#[test]
fn negative_axes_gather_copy_and_view_like_positive_ones() {
    let Some(device) = common::device_or_skip("negative_axes_gather_copy_and_view_like_positive_ones") else {
        return;
    };
    let stream = device.create_stream().unwrap();
    let data = values();
    let x = array(&stream);
    let same = |negative: cuda_core::Result<DeviceArray<f32>>, positive: cuda_core::Result<DeviceArray<f32>>| {
        let (negative, positive) = (negative.unwrap(), positive.unwrap());
        assert_eq!(negative.shape(), positive.shape());
        assert_eq!(negative.to_vec().unwrap(), positive.to_vec().unwrap());
        negative
    };

    // Gathers.
    let i = DeviceArray::from_slice(&stream, &[3i64, 0, -1]).unwrap();
    let taken = same(x.take(&i, -1, IndexMode::Raise), x.take(&i, 2, IndexMode::Raise));
    let host_taken: Vec<f32> = data.chunks(4).flat_map(|row| [row[3], row[0], row[3]]).collect();
    assert_eq!(taken.to_vec().unwrap(), host_taken);
    let best = x.argmax_axis(-1, true).unwrap();
    let along = same(
        x.take_along_axis(&best, -1, IndexMode::Raise),
        x.take_along_axis(&best, 2, IndexMode::Raise),
    );
    assert_eq!(along.to_vec().unwrap(), x.max_axes(-1, true).unwrap().to_vec().unwrap());
    // Copies.
    let joined = same(
        DeviceArray::concatenate(&[&x, &x], -2),
        DeviceArray::concatenate(&[&x, &x], 1),
    );
    assert_eq!(joined.shape(), [2, 6, 4]);
    let stacked = same(DeviceArray::stack(&[&x, &x], -1), DeviceArray::stack(&[&x, &x], 3));
    assert_eq!(stacked.shape(), [2, 3, 4, 2]);
    assert_eq!(stacked.to_vec().unwrap()[..4], [data[0], data[0], data[1], data[1]]);
    let rolled = same(x.roll(1, -1), x.roll(1, 2));
    let host_rolled: Vec<f32> = data
        .chunks(4)
        .flat_map(|row| [row[3], row[0], row[1], row[2]])
        .collect();
    assert_eq!(rolled.to_vec().unwrap(), host_rolled);
    same(x.repeat(2, -3), x.repeat(2, 0));
    same(x.repeat_each(&[1, 0, 2], -2), x.repeat_each(&[1, 0, 2], 1));
    same(x.append(&x, -1), x.append(&x, 2));
    // Views, read back through strided copies.
    let flipped = same(x.flip(-1), x.flip([2]));
    assert_eq!(flipped.to_vec().unwrap()[..4], [data[3], data[2], data[1], data[0]]);
    let reversed: Vec<f32> = data.iter().rev().copied().collect();
    assert_eq!(same(x.flip(None), x.flip([0, 1, 2])).to_vec().unwrap(), reversed);
    same(x.moveaxis(-1, 0), x.moveaxis(2, 0));
    same(x.swapaxes(0, -1), x.swapaxes(0, 2));
    same(x.permute([-1, -3, -2]), x.permute([2, 0, 1]));
    same(x.diagonal(0, -2, -1), x.diagonal(0, 1, 2));
    same(x.index_axis(-1, 2), x.index_axis(2, 2));
    same(x.expand_dims(-1).unwrap().squeeze_axis(-1), Ok(x.try_clone().unwrap()));
    let halves = x.split(SplitAt::Sections(2), -1).unwrap();
    same(
        Ok(halves[1].try_clone().unwrap()),
        Ok(x.split(SplitAt::Sections(2), 2).unwrap()[1].try_clone().unwrap()),
    );

    // Out of range, each family.
    assert_axis_error(x.take(&i, -4, IndexMode::Raise), -4, 3);
    assert_axis_error(x.take_along_axis(&best, 3, IndexMode::Raise), 3, 3);
    assert_axis_error(DeviceArray::concatenate(&[&x, &x], 3), 3, 3);
    assert_axis_error(DeviceArray::stack(&[&x, &x], -5), -5, 4);
    assert_axis_error(x.roll(1, -4), -4, 3);
    assert_axis_error(x.repeat(2, 3u8), 3, 3);
    assert_axis_error(x.flip([0, 3]), 3, 3);
    assert_axis_error(x.moveaxis(0, 3), 3, 3);
    assert_axis_error(x.expand_dims(-5), -5, 4);
    assert!(matches!(x.flip([0, -3]), Err(Error::InvalidValue(m)) if m.contains("repeated axis")));
}
