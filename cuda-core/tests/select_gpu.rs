//! Selection on a GPU against a host reference: `flatnonzero`, `argwhere`, `nonzero` for every
//! element type (NaN counts as nonzero, -0.0 as zero), sizes around the tile (2048 elements)
//! and 10^7 at half density (the look-back across thousands of tiles); `extract` (`x[mask]`)
//! with a bool array, a fused expression and a strided mask, and the typed error of a mask of
//! another shape; the algorithms' select and partition on plain device buffers, the count left
//! on the device; unique by key for every key type. Without a driver or device each test prints `skipped: <why>` and passes,
//! unless `CUDA_REQUIRE_GPU=1`.

mod common;

use cuda_core::algorithms::select::{
    run_length_encode, run_length_encode_count, select_flagged, select_flagged_count, unique_by_key, unique_sorted,
    unique_sorted_count, SelectIf,
};
use cuda_core::{Bool, DeviceArray, DeviceBuffer, Element, Error, ExprOps};
use cuda_driver::Stream;
use half::{bf16, f16};

fn host_nonzero(values: &[f64]) -> Vec<i64> {
    (0..values.len())
        .filter(|&i| values[i] != 0.0 || values[i].is_nan())
        .map(|i| i as i64)
        .collect()
}

fn nonzero_for<T: Element>(stream: &Stream) {
    for n in [0usize, 1, 2, 33, 2047, 2048, 2049, 6000, 100_003] {
        let data: Vec<T> = (0..n)
            .map(|i| T::from_f64(((i * 7 + i / 5) % 3 == 0) as u8 as f64 * 2.0))
            .collect();
        let host: Vec<f64> = data.iter().map(|&x| x.to_f64()).collect();
        let x = DeviceArray::from_slice(stream, &data).unwrap();
        let got = x.flatnonzero().unwrap();
        assert_eq!(
            got.to_vec().unwrap(),
            host_nonzero(&host),
            "flatnonzero of {n} {}",
            T::DTYPE
        );
        assert_eq!(got.shape(), [host_nonzero(&host).len()]);
    }
}

#[test]
fn flatnonzero_matches_the_host_for_every_type() {
    let Some(device) = common::device_or_skip("flatnonzero_matches_the_host_for_every_type") else {
        return;
    };
    let stream = device.create_stream().unwrap();
    nonzero_for::<Bool>(&stream);
    nonzero_for::<i8>(&stream);
    nonzero_for::<i16>(&stream);
    nonzero_for::<i32>(&stream);
    nonzero_for::<i64>(&stream);
    nonzero_for::<u8>(&stream);
    nonzero_for::<u16>(&stream);
    nonzero_for::<u32>(&stream);
    nonzero_for::<u64>(&stream);
    nonzero_for::<f16>(&stream);
    nonzero_for::<bf16>(&stream);
    nonzero_for::<f32>(&stream);
    nonzero_for::<f64>(&stream);
    let specials = DeviceArray::from_slice(&stream, &[0.0f32, -0.0, f32::NAN, f32::INFINITY, 1e-45]).unwrap();
    assert_eq!(specials.flatnonzero().unwrap().to_vec().unwrap(), [2i64, 3, 4]);
}

#[test]
fn twenty_million_at_half_density() {
    let Some(device) = common::device_or_skip("twenty_million_at_half_density") else {
        return;
    };
    let stream = device.create_stream().unwrap();
    // 4883 tiles of 4096: more than the 4096 tiles the offsets kernel of flatnonzero's counting
    // pass sums a round.
    let n = 20_000_000usize;
    // A pattern whose density varies from tile to tile (whole tiles empty or full too).
    let data: Vec<u8> = (0..n)
        .map(|i| match (i / 2048) % 4 {
            0 => (i % 2) as u8,
            1 => 0,
            2 => 1,
            _ => ((i * 2_654_435_761) >> 7) as u8 & 1,
        })
        .collect();
    let want: Vec<i64> = (0..n).filter(|&i| data[i] != 0).map(|i| i as i64).collect();
    let x = DeviceArray::from_slice(&stream, &data).unwrap();
    for run in 0..3 {
        assert_eq!(x.flatnonzero().unwrap().to_vec().unwrap(), want, "run {run}");
    }
    let values = DeviceArray::<f32>::arange(&stream, 0.0, n as f32, 1.0).unwrap();
    let mask: Vec<Bool> = data.iter().map(|&d| Bool(d)).collect();
    let mask = DeviceArray::from_slice(&stream, &mask).unwrap();
    let got = values.extract(&mask).unwrap().to_vec().unwrap();
    assert_eq!(got.len(), want.len());
    assert!(got.iter().zip(&want).all(|(&g, &w)| g == w as f32));
}

#[test]
fn argwhere_and_nonzero_give_coordinates_in_c_order() {
    let Some(device) = common::device_or_skip("argwhere_and_nonzero_give_coordinates_in_c_order") else {
        return;
    };
    let stream = device.create_stream().unwrap();
    let shape = [3usize, 4, 5];
    let data: Vec<i32> = (0..60).map(|i| (i % 7 == 0 || i % 11 == 3) as i32).collect();
    let x = DeviceArray::from_slice(&stream, &data).unwrap().reshape(shape).unwrap();
    let flat: Vec<usize> = (0..60).filter(|&i| data[i] != 0).collect();
    let rows: Vec<i64> = flat
        .iter()
        .flat_map(|&i| [(i / 20) as i64, ((i / 5) % 4) as i64, (i % 5) as i64])
        .collect();
    let argwhere = x.argwhere().unwrap();
    assert_eq!(argwhere.shape(), [flat.len(), 3]);
    assert_eq!(argwhere.to_vec().unwrap(), rows);
    let nonzero = x.nonzero().unwrap();
    assert_eq!(nonzero.len(), 3);
    for (d, axis) in nonzero.iter().enumerate() {
        let want: Vec<i64> = rows.iter().skip(d).step_by(3).copied().collect();
        assert_eq!(axis.to_vec().unwrap(), want, "axis {d}");
    }
    // A transposed view: C order of the view's own shape.
    let t = x.transpose();
    let want: Vec<i64> = {
        let host: Vec<i32> = (0..60)
            .map(|j| data[(j % 3) * 20 + ((j / 3) % 4) * 5 + j / 12])
            .collect();
        (0..60).filter(|&j| host[j] != 0).map(|j| j as i64).collect()
    };
    assert_eq!(t.flatnonzero().unwrap().to_vec().unwrap(), want);
    let empty = DeviceArray::<f32>::zeros(&stream, [0, 3]).unwrap();
    assert_eq!(empty.argwhere().unwrap().shape(), [0, 2]);
    let scalar = DeviceArray::from_slice(&stream, &[1.0f32])
        .unwrap()
        .reshape(Vec::<usize>::new())
        .unwrap();
    assert!(matches!(scalar.nonzero(), Err(Error::InvalidValue(_))));
    assert_eq!(scalar.flatnonzero().unwrap().to_vec().unwrap(), [0i64]);
}

#[test]
fn extract_reads_through_masks_and_fused_expressions() {
    let Some(device) = common::device_or_skip("extract_reads_through_masks_and_fused_expressions") else {
        return;
    };
    let stream = device.create_stream().unwrap();
    let n = 100_003usize;
    let data: Vec<f32> = (0..n).map(|i| ((i * 37) % 101) as f32 / 100.0).collect();
    let x = DeviceArray::from_slice(&stream, &data).unwrap();
    let want: Vec<f32> = data.iter().copied().filter(|&v| v > 0.5).collect();
    assert_eq!(
        x.extract(x.gt(0.5)).unwrap().to_vec().unwrap(),
        want,
        "x[x > 0.5], fused"
    );
    let mask = x.gt(0.5).eval().unwrap();
    assert_eq!(x.extract(&mask).unwrap().to_vec().unwrap(), want, "x[mask]");
    // An expression of two arrays and a scalar.
    let y = DeviceArray::from_slice(&stream, &data.iter().rev().copied().collect::<Vec<_>>()).unwrap();
    let want: Vec<f32> = (0..n)
        .filter(|&i| data[i] + data[n - 1 - i] > 1.2)
        .map(|i| data[i])
        .collect();
    assert_eq!(x.extract((&x + &y).gt(1.2)).unwrap().to_vec().unwrap(), want);
    // A strided mask (evaluated first) and a 2-D array.
    let m = DeviceArray::from_slice(&stream, &[1i32, 2, 3, 4, 5, 6])
        .unwrap()
        .reshape([2, 3])
        .unwrap();
    let mt = DeviceArray::from_slice(&stream, &[1i32, 0, 0, 1, 1, 0])
        .unwrap()
        .reshape([3, 2])
        .unwrap();
    let strided = mt.transpose();
    assert_eq!(m.extract(strided.ne(0)).unwrap().to_vec().unwrap(), [1, 3, 5]);
    // NaN is true in a bool cast; a mask of another shape is an error.
    let wrong = DeviceArray::<Bool>::zeros(&stream, [3, 2]).unwrap();
    assert!(matches!(m.extract(&wrong), Err(Error::InvalidValue(_))));
    let empty = DeviceArray::<f64>::zeros(&stream, [0]).unwrap();
    assert!(empty.extract(empty.gt(0.0)).unwrap().is_empty());
}

#[test]
fn select_and_partition_on_plain_buffers() {
    let Some(device) = common::device_or_skip("select_and_partition_on_plain_buffers") else {
        return;
    };
    let stream = device.create_stream().unwrap();
    let context = device.context();
    let n = 50_001usize;
    let data: Vec<u64> = (0..n as u64).map(|i| i * 3).collect();
    let flags: Vec<u8> = (0..n).map(|i| (i % 3 == 1 || i % 17 == 0) as u8).collect();
    let x = DeviceBuffer::from_slice(context, &data).unwrap();
    let f = DeviceBuffer::from_slice(context, &flags).unwrap();
    let mut out = DeviceBuffer::<u64>::zeroed(context, n).unwrap();
    let selected: Vec<u64> = (0..n).filter(|&i| flags[i] != 0).map(|i| data[i]).collect();
    let count = select_flagged_count::<u64, u8>(&stream, &x, &f, &mut out).unwrap();
    assert_eq!(count, selected.len());
    assert_eq!(&out.to_vec().unwrap()[..count], selected.as_slice());
    // Partition, the count left on the device: the rest after, in reverse order.
    let mut count_on_device = DeviceBuffer::<u64>::zeroed(context, 1).unwrap();
    select_flagged::<u64, u8>(&stream, &x, &f, &mut out, &mut count_on_device, true).unwrap();
    stream.synchronize().unwrap();
    assert_eq!(count_on_device.to_vec().unwrap(), [selected.len() as u64]);
    let mut want = selected.clone();
    want.extend((0..n).rev().filter(|&i| flags[i] == 0).map(|i| data[i]));
    assert_eq!(out.to_vec().unwrap(), want);
    // Typed errors: flags of another length, an output too small, the count overlapping the output.
    let short = DeviceBuffer::<u8>::zeroed(context, n - 1).unwrap();
    let error = select_flagged_count::<u64, u8>(&stream, &x, &short, &mut out);
    assert!(matches!(error, Err(Error::InvalidValue(_))), "{error:?}");
    let mut small = DeviceBuffer::<u64>::zeroed(context, n - 1).unwrap();
    let error = select_flagged_count::<u64, u8>(&stream, &x, &f, &mut small);
    assert!(matches!(error, Err(Error::InvalidValue(_))), "{error:?}");
    // Empty input: count 0.
    let none = DeviceBuffer::<u64>::zeroed(context, 0);
    if let (Ok(none), Ok(no_flags)) = (none, DeviceBuffer::<u8>::zeroed(context, 0)) {
        let mut no_out = DeviceBuffer::<u64>::zeroed(context, 1).unwrap();
        assert_eq!(
            select_flagged_count::<u64, u8>(&stream, &none, &no_flags, &mut no_out).unwrap(),
            0
        );
    }
}

#[test]
fn place_and_putmask_write_through_masks() {
    let Some(device) = common::device_or_skip("place_and_putmask_write_through_masks") else {
        return;
    };
    let stream = device.create_stream().unwrap();
    let n = 10_007usize;
    let data: Vec<i32> = (0..n as i32).collect();
    let values = DeviceArray::from_slice(&stream, &[-1i32, -2, -3]).unwrap();
    let flags: Vec<bool> = (0..n).map(|i| i % 4 == 1 || i % 7 == 0).collect();
    let mask_host: Vec<Bool> = flags.iter().map(|&f| Bool(f as u8)).collect();
    let mask = DeviceArray::from_slice(&stream, &mask_host).unwrap();
    // place: the k-th selected element gets values[k % 3].
    let mut x = DeviceArray::from_slice(&stream, &data).unwrap();
    x.place(&mask, &values).unwrap();
    let mut want = data.clone();
    let mut k = 0;
    for i in 0..n {
        if flags[i] {
            want[i] = -1 - k % 3;
            k += 1;
        }
    }
    assert_eq!(x.to_vec().unwrap(), want, "place");
    // putmask: element i gets values[i % 3].
    let mut y = DeviceArray::from_slice(&stream, &data).unwrap();
    y.putmask(&mask, &values).unwrap();
    let want: Vec<i32> = (0..n)
        .map(|i| if flags[i] { -1 - (i % 3) as i32 } else { data[i] })
        .collect();
    assert_eq!(y.to_vec().unwrap(), want, "putmask");
    // A fused mask expression of another array; x[x > 5000] = 0 through a separate mask view.
    let z = DeviceArray::from_slice(&stream, &data).unwrap();
    let mut w = DeviceArray::from_slice(&stream, &data).unwrap();
    let zero = DeviceArray::from_slice(&stream, &[0i32]).unwrap();
    w.putmask(z.gt(5000), &zero).unwrap();
    let want: Vec<i32> = data.iter().map(|&v| if v > 5000 { 0 } else { v }).collect();
    assert_eq!(w.to_vec().unwrap(), want, "putmask(w, z > 5000, 0)");
    // Typed errors: empty values, a mask of another shape, values sharing the array's memory, a
    // strided array.
    let empty = DeviceArray::<i32>::zeros(&stream, [0]).unwrap();
    assert!(matches!(w.place(&mask, &empty), Err(Error::InvalidValue(_))));
    let short = DeviceArray::<Bool>::zeros(&stream, [n - 1]).unwrap();
    assert!(matches!(w.place(&short, &values), Err(Error::InvalidValue(_))));
    let alias = w.reshape_view([n]).unwrap();
    assert!(matches!(w.place(&mask, &alias), Err(Error::InvalidValue(_))));
    let mut square = DeviceArray::from_slice(&stream, &[1i32, 2, 3, 4])
        .unwrap()
        .reshape([2, 2])
        .unwrap();
    let square_mask = DeviceArray::from_slice(&stream, &[Bool(1), Bool(0), Bool(0), Bool(1)])
        .unwrap()
        .reshape([2, 2])
        .unwrap();
    let mut transposed = square.transpose();
    assert!(matches!(
        transposed.place(&square_mask, &values),
        Err(Error::InvalidValue(_))
    ));
    square.place(&square_mask, &values).unwrap();
    assert_eq!(square.to_vec().unwrap(), [-1, 2, 3, -2]);
}

#[test]
fn more_than_2_31_elements_take_the_64_bit_path() {
    let Some(device) = common::device_or_skip("more_than_2_31_elements_take_the_64_bit_path") else {
        return;
    };
    let stream = device.create_stream().unwrap();
    // 2 GiB of u8 with three nonzero elements, one past 2^31 and the last.
    let n = (1usize << 31) + 4099;
    let mut host = vec![0u8; n];
    for i in [0, (1usize << 31) + 1, n - 1] {
        host[i] = 1;
    }
    let x = DeviceArray::from_slice(&stream, &host).unwrap();
    drop(host);
    let want = [0i64, (1i64 << 31) + 1, n as i64 - 1];
    assert_eq!(x.flatnonzero().unwrap().to_vec().unwrap(), want);
    assert_eq!(x.extract(x.gt(0u8)).unwrap().to_vec().unwrap(), [1u8, 1, 1]);
}

#[test]
fn unique_of_sorted_input_keeps_each_runs_first() {
    let Some(device) = common::device_or_skip("unique_of_sorted_input_keeps_each_runs_first") else {
        return;
    };
    let stream = device.create_stream().unwrap();
    let context = device.context();
    // Runs of lengths 1 to 5000, across tile boundaries.
    let mut data: Vec<i64> = Vec::new();
    let mut value = -1000i64;
    let mut length = 1usize;
    while data.len() < 300_000 {
        data.extend(std::iter::repeat_n(value, length));
        value += 1 + (length % 3) as i64;
        length = length * 7 % 5001 + 1;
    }
    let mut want = data.clone();
    want.dedup();
    let x = DeviceBuffer::from_slice(context, &data).unwrap();
    let mut out = DeviceBuffer::<i64>::zeroed(context, data.len()).unwrap();
    let count = unique_sorted_count::<i64>(&stream, &x, &mut out).unwrap();
    assert_eq!(count, want.len());
    assert_eq!(&out.to_vec().unwrap()[..count], want.as_slice());
    // NaNs are equal, as NumPy's unique; -0.0 equals 0.0 and keeps the first.
    let floats = DeviceBuffer::from_slice(context, &[-0.0f32, 0.0, 1.0, 1.0, f32::NAN, f32::NAN]).unwrap();
    let mut out = DeviceBuffer::<f32>::zeroed(context, 6).unwrap();
    let mut count = DeviceBuffer::<u64>::zeroed(context, 1).unwrap();
    unique_sorted::<f32>(&stream, &floats, &mut out, &mut count).unwrap();
    stream.synchronize().unwrap();
    assert_eq!(count.to_vec().unwrap(), [3]);
    let got = out.to_vec().unwrap();
    assert!(
        got[0] == 0.0 && got[0].is_sign_negative() && got[1] == 1.0 && got[2].is_nan(),
        "{got:?}"
    );
    let halves =
        DeviceBuffer::from_slice(context, &[f16::from_f32(2.0), f16::from_f32(2.0), bf16_to_f16(3.0)]).unwrap();
    let mut out = DeviceBuffer::<f16>::zeroed(context, 3).unwrap();
    assert_eq!(unique_sorted_count::<f16>(&stream, &halves, &mut out).unwrap(), 2);
}

fn bf16_to_f16(value: f32) -> f16 {
    f16::from_f32(bf16::from_f32(value).to_f32())
}

#[test]
fn run_length_encoding_gives_values_and_lengths() {
    let Some(device) = common::device_or_skip("run_length_encoding_gives_values_and_lengths") else {
        return;
    };
    let stream = device.create_stream().unwrap();
    let context = device.context();
    for target in [1usize, 2, 2048, 2049, 300_000] {
        let mut data: Vec<u16> = Vec::new();
        let (mut value, mut length) = (0u16, 1usize);
        while data.len() < target {
            let take = length.min(target - data.len());
            data.extend(std::iter::repeat_n(value, take));
            value = value.wrapping_add(1 + (length % 3) as u16);
            length = length * 7 % 3001 + 1;
        }
        let mut values: Vec<u16> = Vec::new();
        let mut lengths: Vec<u64> = Vec::new();
        for &d in &data {
            match values.last() {
                Some(&last) if last == d => *lengths.last_mut().unwrap() += 1,
                _ => {
                    values.push(d);
                    lengths.push(1);
                }
            }
        }
        let x = DeviceBuffer::from_slice(context, &data).unwrap();
        let mut unique = DeviceBuffer::<u16>::zeroed(context, data.len()).unwrap();
        let mut runs = DeviceBuffer::<u64>::zeroed(context, data.len()).unwrap();
        let count = run_length_encode_count::<u16>(&stream, &x, &mut unique, &mut runs).unwrap();
        assert_eq!(count, values.len(), "runs of {target}");
        assert_eq!(
            &unique.to_vec().unwrap()[..count],
            values.as_slice(),
            "values of {target}"
        );
        assert_eq!(
            &runs.to_vec().unwrap()[..count],
            lengths.as_slice(),
            "lengths of {target}"
        );
    }
    // Floats: NaNs are one run; the count left on the device.
    let x = DeviceBuffer::from_slice(context, &[f64::NAN, f64::NAN, 1.0, 2.0, 2.0]).unwrap();
    let mut unique = DeviceBuffer::<f64>::zeroed(context, 5).unwrap();
    let mut runs = DeviceBuffer::<u64>::zeroed(context, 5).unwrap();
    let mut count = DeviceBuffer::<u64>::zeroed(context, 1).unwrap();
    run_length_encode::<f64>(&stream, &x, &mut unique, &mut runs, &mut count).unwrap();
    stream.synchronize().unwrap();
    assert_eq!(count.to_vec().unwrap(), [3]);
    assert_eq!(&runs.to_vec().unwrap()[..3], [2, 1, 2]);
    // Outputs too small are typed errors.
    let mut short = DeviceBuffer::<u64>::zeroed(context, 4).unwrap();
    let error = run_length_encode::<f64>(&stream, &x, &mut unique, &mut short, &mut count);
    assert!(matches!(error, Err(Error::InvalidValue(_))), "{error:?}");
}

#[test]
fn compress_selects_slices_along_an_axis() {
    let Some(device) = common::device_or_skip("compress_selects_slices_along_an_axis") else {
        return;
    };
    let stream = device.create_stream().unwrap();
    let x = DeviceArray::<f32>::arange(&stream, 0.0, 12.0, 1.0)
        .unwrap()
        .reshape([3, 4])
        .unwrap();
    let rows = DeviceArray::from_slice(&stream, &[Bool(1), Bool(0), Bool(1)]).unwrap();
    let got = x.compress(&rows, 0).unwrap();
    assert_eq!(got.shape(), [2, 4]);
    assert_eq!(got.to_vec().unwrap(), [0.0, 1.0, 2.0, 3.0, 8.0, 9.0, 10.0, 11.0]);
    let columns = DeviceArray::from_slice(&stream, &[Bool(0), Bool(1)]).unwrap();
    let got = x.compress(&columns, -1).unwrap();
    assert_eq!(got.shape(), [3, 1]);
    assert_eq!(got.to_vec().unwrap(), [1.0, 5.0, 9.0]);
    let flat = DeviceArray::from_slice(&stream, &[Bool(0), Bool(0), Bool(0), Bool(0), Bool(0), Bool(1)]).unwrap();
    assert_eq!(x.compress(&flat, None).unwrap().to_vec().unwrap(), [5.0]);
    // A true entry past the axis, a 2-D condition and a bad axis are errors.
    let long = DeviceArray::from_slice(&stream, &[Bool(0), Bool(0), Bool(0), Bool(1)]).unwrap();
    assert!(x.compress(&long, 0).is_err());
    let square = DeviceArray::<Bool>::zeros(&stream, [2, 2]).unwrap();
    assert!(matches!(x.compress(&square, 0), Err(Error::InvalidValue(_))));
    assert!(matches!(x.compress(&rows, 2), Err(Error::Axis { axis: 2, .. })));
}

#[test]
fn select_if_takes_a_cpp_predicate() {
    let Some(device) = common::device_or_skip("select_if_takes_a_cpp_predicate") else {
        return;
    };
    let stream = device.create_stream().unwrap();
    let context = device.context();
    let n = 123_457usize;
    let data: Vec<f32> = (0..n).map(|i| ((i * 37) % 1000) as f32 - 500.0).collect();
    let x = DeviceBuffer::from_slice(context, &data).unwrap();
    let far = SelectIf::new("far_from_zero", "far(x) && i % 2 == 0")
        .unwrap()
        .with_prelude("__device__ bool far(float v) { return fabsf(v) > 400.0f; }");
    let mut out = DeviceBuffer::<f32>::zeroed(context, n).unwrap();
    // SAFETY: the predicate only computes with `x` and `i`.
    let count = unsafe { far.select_count::<f32>(&stream, &x, &mut out).unwrap() };
    let want: Vec<f32> = (0..n)
        .filter(|&i| data[i].abs() > 400.0 && i % 2 == 0)
        .map(|i| data[i])
        .collect();
    assert_eq!(count, want.len());
    assert_eq!(&out.to_vec().unwrap()[..count], want.as_slice());
    // Partition with the count on the device.
    let mut on_device = DeviceBuffer::<u64>::zeroed(context, 1).unwrap();
    // SAFETY: as above.
    unsafe { far.select::<f32>(&stream, &x, &mut out, &mut on_device, true).unwrap() };
    stream.synchronize().unwrap();
    assert_eq!(on_device.to_vec().unwrap(), [want.len() as u64]);
    let mut all = want.clone();
    all.extend(
        (0..n)
            .rev()
            .filter(|&i| !(data[i].abs() > 400.0 && i % 2 == 0))
            .map(|i| data[i]),
    );
    assert_eq!(out.to_vec().unwrap(), all);
}

/// The runs of equal keys (NaNs equal) of `keys`: each run's start.
fn run_starts(keys: &[f64]) -> Vec<usize> {
    let same = |a: f64, b: f64| a == b || (a.is_nan() && b.is_nan());
    (0..keys.len())
        .filter(|&i| i == 0 || !same(keys[i], keys[i - 1]))
        .collect()
}

/// `unique_by_key` of keys of `K` in runs of varied lengths with their indices as values: each
/// run's first key and the index where it starts.
fn unique_by_key_of<K: Element>(stream: &Stream) {
    let context = stream.context();
    for target in [0usize, 1, 2, 2047, 2048, 2049, 300_000] {
        let mut keys: Vec<K> = Vec::with_capacity(target);
        let (mut run, mut length) = (0usize, 1usize);
        while keys.len() < target {
            let take = length.min(target - keys.len());
            keys.extend(std::iter::repeat(K::from_f64((run % 50) as f64)).take(take));
            run += 1;
            length = length * 7 % 3001 + 1;
        }
        let host: Vec<f64> = keys.iter().map(|&k| k.to_f64()).collect();
        let starts = run_starts(&host);
        let values: Vec<i64> = (0..target as i64).collect();
        let (k, v) = match (
            DeviceBuffer::from_slice(context, &keys),
            DeviceBuffer::from_slice(context, &values),
        ) {
            (Ok(k), Ok(v)) => (k, v),
            // A zero-byte allocation is refused by some drivers: nothing to select then.
            _ if target == 0 => continue,
            (k, v) => panic!("{:?} {:?}", k.err(), v.err()),
        };
        let mut unique_keys = DeviceBuffer::<K>::zeroed(context, target.max(1)).unwrap();
        let mut unique_values = DeviceBuffer::<i64>::zeroed(context, target.max(1)).unwrap();
        let mut count = DeviceBuffer::<u64>::zeroed(context, 1).unwrap();
        unique_by_key::<K, i64>(stream, (&k, &v), (&mut unique_keys, &mut unique_values), &mut count).unwrap();
        stream.synchronize().unwrap();
        let what = format!("unique_by_key of {target} {}", K::DTYPE);
        let runs = count.to_vec().unwrap()[0] as usize;
        assert_eq!(runs, starts.len(), "{what}: count");
        let got_keys: Vec<f64> = unique_keys.to_vec().unwrap()[..runs]
            .iter()
            .map(|k| k.to_f64())
            .collect();
        let want_keys: Vec<f64> = starts.iter().map(|&s| host[s]).collect();
        assert_eq!(got_keys, want_keys, "{what}: keys");
        let want_values: Vec<i64> = starts.iter().map(|&s| s as i64).collect();
        assert_eq!(
            &unique_values.to_vec().unwrap()[..runs],
            want_values.as_slice(),
            "{what}: values"
        );
    }
}

#[test]
fn unique_by_key_keeps_each_runs_first_value_for_every_key_type() {
    let Some(device) = common::device_or_skip("unique_by_key_keeps_each_runs_first_value_for_every_key_type") else {
        return;
    };
    let stream = device.create_stream().unwrap();
    unique_by_key_of::<Bool>(&stream);
    unique_by_key_of::<i8>(&stream);
    unique_by_key_of::<i16>(&stream);
    unique_by_key_of::<i32>(&stream);
    unique_by_key_of::<i64>(&stream);
    unique_by_key_of::<u8>(&stream);
    unique_by_key_of::<u16>(&stream);
    unique_by_key_of::<u32>(&stream);
    unique_by_key_of::<u64>(&stream);
    unique_by_key_of::<f16>(&stream);
    unique_by_key_of::<bf16>(&stream);
    unique_by_key_of::<f32>(&stream);
    unique_by_key_of::<f64>(&stream);
    // NaN keys are one run, -0.0 equals 0.0; values of another type.
    let context = device.context();
    let keys = DeviceBuffer::from_slice(context, &[f32::NAN, f32::NAN, -0.0, 0.0, 1.0]).unwrap();
    let values = DeviceBuffer::from_slice(context, &[1.5f64, 2.5, 3.5, 4.5, 5.5]).unwrap();
    let mut unique_keys = DeviceBuffer::<f32>::zeroed(context, 5).unwrap();
    let mut unique_values = DeviceBuffer::<f64>::zeroed(context, 5).unwrap();
    let mut count = DeviceBuffer::<u64>::zeroed(context, 1).unwrap();
    unique_by_key::<f32, f64>(
        &stream,
        (&keys, &values),
        (&mut unique_keys, &mut unique_values),
        &mut count,
    )
    .unwrap();
    stream.synchronize().unwrap();
    assert_eq!(count.to_vec().unwrap(), [3]);
    let got = unique_keys.to_vec().unwrap();
    assert!(
        got[0].is_nan() && got[1] == 0.0 && got[1].is_sign_negative() && got[2] == 1.0,
        "{got:?}"
    );
    assert_eq!(&unique_values.to_vec().unwrap()[..3], [1.5, 3.5, 5.5]);
    // Typed errors: values of another length, a value output too small, an output overlapping
    // the values.
    let short = DeviceBuffer::from_slice(context, &[1.0f64; 4]).unwrap();
    let error = unique_by_key::<f32, f64>(
        &stream,
        (&keys, &short),
        (&mut unique_keys, &mut unique_values),
        &mut count,
    );
    assert!(matches!(error, Err(Error::InvalidValue(_))), "{error:?}");
    let mut small = DeviceBuffer::<f64>::zeroed(context, 4).unwrap();
    let error = unique_by_key::<f32, f64>(&stream, (&keys, &values), (&mut unique_keys, &mut small), &mut count);
    assert!(matches!(error, Err(Error::InvalidValue(_))), "{error:?}");
    let shared = DeviceArray::from_slice(&stream, &[1.5f64, 2.5, 3.5, 4.5, 5.5]).unwrap();
    let mut alias = shared.reshape_view([5]).unwrap();
    let error = unique_by_key::<f32, f64>(&stream, (&keys, &shared), (&mut unique_keys, &mut alias), &mut count);
    assert!(matches!(error, Err(Error::InvalidValue(_))), "{error:?}");
}
