//! Scans on a GPU against a host reference: `cumsum`, `cumprod`, `nancumsum`, `nancumprod` for
//! every element type, sizes around the tiles (2048 elements of 16-byte sums, 4096 of 8-byte
//! ones, 8192 of narrower ones) and far beyond them (10^7, so the look-back crosses thousands of
//! tiles), every axis of a 3-D array, NaN, infinities and -0.0;
//! and the algorithms' forms on plain device buffers (exclusive, segments, min and max, a C++
//! operator) with their typed errors. Without a driver or device each test prints
//! `skipped: <why>` and passes, unless `CUDA_REQUIRE_GPU=1`.

mod common;

use cuda_core::algorithms::scan::{scan, scan_by_key, ScanKind, ScanOp, ScanOperator};
use cuda_core::{Bool, DeviceArray, DeviceBuffer, Element, Error, ExprOps};
use cuda_driver::Stream;
use half::{bf16, f16};

/// Inclusive prefix sums of `data` on the host, restarting every `segment` elements.
fn host_scan(data: &[f64], segment: usize, op: &dyn Fn(f64, f64) -> f64) -> Vec<f64> {
    let mut out = Vec::with_capacity(data.len());
    let mut acc = 0.0;
    for (i, &x) in data.iter().enumerate() {
        acc = if i % segment == 0 { x } else { op(acc, x) };
        out.push(acc);
    }
    out
}

fn close(got: f64, want: f64, tolerance: f64) -> bool {
    (got.is_nan() && want.is_nan()) || got == want || (got - want).abs() <= tolerance * (1.0 + want.abs())
}

fn check<R: Element>(what: &str, got: &DeviceArray<R>, want: &[f64], tolerance: f64) {
    let got: Vec<f64> = got.to_vec().unwrap().into_iter().map(Element::to_f64).collect();
    assert_eq!(got.len(), want.len(), "{what}: length");
    if let Some(i) = (0..got.len()).find(|&i| !close(got[i], want[i], tolerance)) {
        panic!(
            "{what}: element {i} of {} is {}, the host gives {}",
            got.len(),
            got[i],
            want[i]
        );
    }
}

/// `cumsum` and `cumprod` of the flattened array for sizes around the tile, values small
/// enough that sums are exact in every type wide enough for them; the products are of the first
/// `product_len` elements (alternating ones and twos, so element `i` is `2^((i + 1) / 2)`).
fn flat_scans<T: Element>(stream: &Stream, sizes: &[usize], product_len: usize, tolerance: f64) {
    for &n in sizes {
        let data: Vec<T> = (0..n).map(|i| T::from_f64((i % 3) as f64)).collect();
        let host: Vec<f64> = data.iter().map(|&x| x.to_f64()).collect();
        let x = DeviceArray::from_slice(stream, &data).unwrap();
        let what = format!("cumsum of {n} {}", T::DTYPE);
        check(
            &what,
            &x.cumsum(None).unwrap(),
            &host_scan(&host, n.max(1), &|a, b| a + b),
            tolerance,
        );
        // Products of ones and twos, kept short of overflow by `product_len`.
        let short: Vec<T> = (0..n.min(product_len))
            .map(|i| T::from_f64(1.0 + (i % 2) as f64))
            .collect();
        let host: Vec<f64> = short.iter().map(|&x| x.to_f64()).collect();
        let y = DeviceArray::from_slice(stream, &short).unwrap();
        let what = format!("cumprod of {} {}", short.len(), T::DTYPE);
        check(
            &what,
            &y.cumprod(None).unwrap(),
            &host_scan(&host, short.len().max(1), &|a, b| a * b),
            tolerance,
        );
    }
}

#[test]
fn cumsum_and_cumprod_match_the_host_for_every_type() {
    let Some(device) = common::device_or_skip("cumsum_and_cumprod_match_the_host_for_every_type") else {
        return;
    };
    let stream = device.create_stream().unwrap();
    let sizes = [
        0, 1, 2, 31, 255, 2047, 2048, 2049, 4095, 4096, 4097, 5000, 8191, 8192, 8193, 16_385, 100_003,
    ];
    flat_scans::<i8>(&stream, &sizes, 40, 0.0);
    flat_scans::<i16>(&stream, &sizes, 40, 0.0);
    flat_scans::<i32>(&stream, &sizes, 40, 0.0);
    flat_scans::<i64>(&stream, &sizes, 40, 0.0);
    flat_scans::<u8>(&stream, &sizes, 40, 0.0);
    flat_scans::<u16>(&stream, &sizes, 40, 0.0);
    flat_scans::<u32>(&stream, &sizes, 40, 0.0);
    flat_scans::<u64>(&stream, &sizes, 40, 0.0);
    flat_scans::<f32>(&stream, &sizes, 40, 0.0);
    flat_scans::<f64>(&stream, &sizes, 40, 0.0);
    flat_scans::<Bool>(&stream, &sizes, 40, 0.0);
    // Sums of up to 8193 values of at most 2 stay below f16's largest value; each output is the
    // exact sum rounded once (within half a step: 4 for f16 and 32 for bf16 near 8192, inside
    // the tolerances). Products: f16's largest value is 65504, so 31 elements (up to
    // 2^15); element 31 (2^16) overflows to inf, as NumPy's float16 cumprod does.
    flat_scans::<f16>(&stream, &[0, 1, 31, 2048, 2049, 8191, 8192, 8193], 31, 1e-3);
    flat_scans::<bf16>(&stream, &[0, 1, 31, 2048, 2049, 8191, 8192, 8193], 40, 8e-3);
    let ones_and_twos: Vec<f16> = (0..32).map(|i| f16::from_f64(1.0 + (i % 2) as f64)).collect();
    let products = DeviceArray::from_slice(&stream, &ones_and_twos)
        .unwrap()
        .cumprod(None)
        .unwrap()
        .to_vec()
        .unwrap();
    assert_eq!(products[30], f16::from_f64(32768.0));
    assert_eq!(
        products[31],
        f16::INFINITY,
        "float16 cumprod past 65504 is inf in NumPy"
    );
    // Dtypes as NumPy's sum: bool and small integers widen.
    let b = DeviceArray::from_slice(&stream, &[Bool(1), Bool(1), Bool(0)]).unwrap();
    let sums: DeviceArray<i64> = b.cumsum(None).unwrap();
    assert_eq!(sums.to_vec().unwrap(), [1, 2, 2]);
    let small = DeviceArray::from_slice(&stream, &[100i8, 100, 100]).unwrap();
    assert_eq!(small.cumsum(None).unwrap().to_vec().unwrap(), [100i64, 200, 300]);
    let unsigned = DeviceArray::from_slice(&stream, &[255u8, 255]).unwrap();
    assert_eq!(unsigned.cumsum(None).unwrap().to_vec().unwrap(), [255u64, 510]);
}

#[test]
fn look_back_across_many_tiles_is_exact() {
    let Some(device) = common::device_or_skip("look_back_across_many_tiles_is_exact") else {
        return;
    };
    let stream = device.create_stream().unwrap();
    let n = 10_000_000usize;
    let data: Vec<i32> = (0..n).map(|i| (i % 7) as i32 - 3 + ((i / 1000) % 3) as i32).collect();
    let x = DeviceArray::from_slice(&stream, &data).unwrap();
    let got = x.cumsum(None).unwrap().to_vec().unwrap();
    let mut acc = 0i64;
    for (i, (&g, &d)) in got.iter().zip(&data).enumerate() {
        acc += i64::from(d);
        assert_eq!(g, acc, "cumsum of 10^7 i32: element {i}");
    }
    // Floats whose sums are exact (integers below 2^53): the order of combination cannot show.
    let floats: Vec<f64> = data.iter().map(|&d| f64::from(d)).collect();
    let y = DeviceArray::from_slice(&stream, &floats).unwrap();
    let want = host_scan(&floats, n, &|a, b| a + b);
    check("cumsum of 10^7 f64", &y.cumsum(None).unwrap(), &want, 0.0);
    // Repeated runs see the tiles finish in other orders.
    for run in 0..5 {
        let again = x.cumsum(None).unwrap().to_vec().unwrap();
        assert_eq!(again, got, "run {run}");
    }
}

#[test]
fn every_axis_of_a_3d_array_matches_the_host() {
    let Some(device) = common::device_or_skip("every_axis_of_a_3d_array_matches_the_host") else {
        return;
    };
    let stream = device.create_stream().unwrap();
    for shape in [[4usize, 5, 6], [3, 2049, 2], [2, 3, 3000], [1, 1, 1], [2, 0, 3]] {
        let len: usize = shape.iter().product();
        let data: Vec<i32> = (0..len).map(|i| (i * 7919 % 11) as i32 - 5).collect();
        let x = DeviceArray::from_slice(&stream, &data).unwrap().reshape(shape).unwrap();
        for axis in [0isize, 1, 2, -1, -2, -3] {
            let a = axis.rem_euclid(3) as usize;
            let strides = [shape[1] * shape[2], shape[2], 1];
            let mut want = vec![0i64; len];
            for i in 0..len {
                let coordinate = (i / strides[a]) % shape[a];
                let value = i64::from(data[i]);
                want[i] = match coordinate {
                    0 => value,
                    _ => want[i - strides[a]] + value,
                };
            }
            let got = x.cumsum(axis).unwrap();
            assert_eq!(got.shape(), shape, "cumsum along {axis} of {shape:?}: shape");
            assert_eq!(got.to_vec().unwrap(), want, "cumsum along {axis} of {shape:?}");
        }
        assert!(matches!(x.cumsum(3), Err(Error::Axis { axis: 3, .. })));
        assert!(matches!(x.cumsum(-4), Err(Error::Axis { axis: -4, .. })));
    }
    // A transposed (strided) view scans in its own order.
    let x = DeviceArray::from_slice(&stream, &[1i32, 2, 3, 4, 5, 6])
        .unwrap()
        .reshape([2, 3])
        .unwrap();
    let t = x.transpose();
    assert_eq!(t.cumsum(1).unwrap().to_vec().unwrap(), [1i64, 5, 2, 7, 3, 9]);
    assert_eq!(t.cumsum(None).unwrap().to_vec().unwrap(), [1i64, 5, 7, 12, 15, 21]);
}

#[test]
fn nan_infinities_and_negative_zero_follow_numpy() {
    let Some(device) = common::device_or_skip("nan_infinities_and_negative_zero_follow_numpy") else {
        return;
    };
    let stream = device.create_stream().unwrap();
    let nan = f64::NAN;
    let data = [1.0, nan, 2.0, f64::INFINITY, -1.0];
    let x = DeviceArray::from_slice(&stream, &data).unwrap();
    check("cumsum", &x.cumsum(None).unwrap(), &[1.0, nan, nan, nan, nan], 0.0);
    check(
        "nancumsum",
        &x.nancumsum(None).unwrap(),
        &[1.0, 1.0, 3.0, f64::INFINITY, f64::INFINITY],
        0.0,
    );
    check(
        "nancumprod",
        &x.nancumprod(None).unwrap(),
        &[1.0, 1.0, 2.0, f64::INFINITY, -f64::INFINITY],
        0.0,
    );
    let inf = DeviceArray::from_slice(&stream, &[f32::INFINITY, f32::NEG_INFINITY, 1.0]).unwrap();
    check("inf - inf", &inf.cumsum(None).unwrap(), &[f64::INFINITY, nan, nan], 0.0);
    let zero = DeviceArray::from_slice(&stream, &[-0.0f32, -0.0]).unwrap();
    let sums = zero.cumsum(None).unwrap().to_vec().unwrap();
    assert!(
        sums.iter().all(|s| *s == 0.0 && s.is_sign_negative()),
        "-0.0 + -0.0 is -0.0: {sums:?}"
    );
    let halves = DeviceArray::from_slice(&stream, &[f16::from_f32(1.0), f16::NAN, f16::from_f32(2.0)]).unwrap();
    let got: Vec<f32> = halves
        .nancumsum(None)
        .unwrap()
        .to_vec()
        .unwrap()
        .iter()
        .map(|h| h.to_f32())
        .collect();
    assert_eq!(got, [1.0, 1.0, 3.0]);
    let ints = DeviceArray::from_slice(&stream, &[3i32, 4]).unwrap();
    assert_eq!(ints.nancumprod(None).unwrap().to_vec().unwrap(), [3i64, 12]);
}

#[test]
fn algorithm_forms_on_plain_buffers() {
    let Some(device) = common::device_or_skip("algorithm_forms_on_plain_buffers") else {
        return;
    };
    let stream = device.create_stream().unwrap();
    let context = device.context();
    let n = 1_000_003usize;
    let data: Vec<i32> = (0..n).map(|i| ((i * 2_654_435_761) % 1000) as i32 - 500).collect();
    let x = DeviceBuffer::from_slice(context, &data).unwrap();
    let mut out = DeviceBuffer::<i64>::zeroed(context, n).unwrap();
    // Exclusive with an init value.
    scan::<i32, i64>(&stream, &x, &mut out, ScanOp::Sum, ScanKind::Exclusive(10), None).unwrap();
    stream.synchronize().unwrap();
    let got = out.to_vec().unwrap();
    let mut acc = 10i64;
    for (i, &d) in data.iter().enumerate() {
        assert_eq!(got[i], acc, "exclusive sum, element {i}");
        acc += i64::from(d);
    }
    // Segments of 1000 (the last shorter), inclusive min and max, and exclusive by segments.
    let segment = 1000;
    for (op, fold) in [
        (ScanOp::Min, &(|a: f64, b: f64| a.min(b)) as &dyn Fn(f64, f64) -> f64),
        (ScanOp::Max, &|a: f64, b: f64| a.max(b)),
        (ScanOp::Sum, &|a: f64, b: f64| a + b),
    ] {
        scan::<i32, i64>(&stream, &x, &mut out, op, ScanKind::Inclusive, Some(segment)).unwrap();
        stream.synchronize().unwrap();
        let host: Vec<f64> = data.iter().map(|&d| f64::from(d)).collect();
        let want = host_scan(&host, segment, fold);
        let got: Vec<f64> = out.to_vec().unwrap().into_iter().map(|v| v as f64).collect();
        assert_eq!(got, want, "{op:?} by segments of {segment}");
    }
    scan::<i32, i64>(
        &stream,
        &x,
        &mut out,
        ScanOp::Sum,
        ScanKind::Exclusive(0),
        Some(segment),
    )
    .unwrap();
    stream.synchronize().unwrap();
    let got = out.to_vec().unwrap();
    let mut acc = 0i64;
    for (i, &d) in data.iter().enumerate() {
        if i % segment == 0 {
            acc = 0;
        }
        assert_eq!(got[i], acc, "exclusive by segments, element {i}");
        acc += i64::from(d);
    }
    // Floats: min propagates NaN.
    let f = DeviceBuffer::from_slice(context, &[3.0f32, 1.0, f32::NAN, 0.0]).unwrap();
    let mut g = DeviceBuffer::<f32>::zeroed(context, 4).unwrap();
    scan::<f32, f32>(&stream, &f, &mut g, ScanOp::Min, ScanKind::Inclusive, None).unwrap();
    stream.synchronize().unwrap();
    let got = g.to_vec().unwrap();
    assert_eq!(&got[..2], [3.0, 1.0]);
    assert!(got[2].is_nan() && got[3].is_nan(), "{got:?}");
    // A C++ operator: the value of largest magnitude so far (the later one on ties), sign kept,
    // by segments of 5 (the data's first element, -500, has the largest magnitude of all). Its
    // identity 0 is neutral on both sides (`op(0, x) == x`), as `ScanOperator::new` asks.
    let op = ScanOperator::new("running_largest_magnitude", "abs(a) > abs(b) ? a : b", "0").unwrap();
    // SAFETY: the operator only computes with `a` and `b`.
    unsafe {
        op.scan::<i32, i64>(&stream, &x, &mut out, ScanKind::Inclusive, Some(5))
            .unwrap()
    };
    stream.synchronize().unwrap();
    let got = out.to_vec().unwrap();
    let mut acc = 0i64;
    for (i, &d) in data.iter().enumerate() {
        let d = i64::from(d);
        acc = if i % 5 != 0 && acc.abs() > d.abs() { acc } else { d };
        assert_eq!(got[i], acc, "running value of largest magnitude, element {i}");
    }
    // Typed errors: an output too small, segments of 0, a ragged byte length.
    let mut small = DeviceBuffer::<i64>::zeroed(context, n - 1).unwrap();
    let error = scan::<i32, i64>(&stream, &x, &mut small, ScanOp::Sum, ScanKind::Inclusive, None);
    assert!(matches!(error, Err(Error::InvalidValue(_))), "{error:?}");
    let error = scan::<i32, i64>(&stream, &x, &mut out, ScanOp::Sum, ScanKind::Inclusive, Some(0));
    assert!(matches!(error, Err(Error::InvalidValue(_))), "{error:?}");
    let bytes = DeviceBuffer::<u8>::zeroed(context, 7).unwrap();
    let error = scan::<i32, i64>(&stream, &bytes, &mut out, ScanOp::Sum, ScanKind::Inclusive, None);
    assert!(matches!(error, Err(Error::InvalidValue(_))), "{error:?}");
}

/// NumPy 2's `cumulative_sum` and `cumulative_prod`: `cumsum` and `cumprod` along an axis
/// (which only 0-d and 1-D arrays may leave out), and with `include_initial` the identity
/// before each line. The small cases are NumPy 2.4's printed results.
#[test]
fn cumulative_sum_and_prod_follow_numpy_2() {
    let Some(device) = common::device_or_skip("cumulative_sum_and_prod_follow_numpy_2") else {
        return;
    };
    let stream = device.create_stream().unwrap();
    let ints = DeviceArray::from_slice(&stream, &[1i32, 2, 3]).unwrap();
    assert_eq!(
        ints.cumulative_sum(None, true).unwrap().to_vec().unwrap(),
        [0i64, 1, 3, 6]
    );
    assert_eq!(
        ints.cumulative_sum(None, false).unwrap().to_vec().unwrap(),
        [1i64, 3, 6]
    );
    let x = DeviceArray::from_slice(&stream, &[0.0f64, 1.0, 2.0, 3.0, 4.0, 5.0])
        .unwrap()
        .reshape([2, 3])
        .unwrap();
    let sums = x.cumulative_sum(1, true).unwrap();
    assert_eq!(sums.shape(), [2, 4]);
    assert_eq!(sums.to_vec().unwrap(), [0.0, 0.0, 1.0, 3.0, 0.0, 3.0, 7.0, 12.0]);
    let products = x.cumulative_prod(-2, true).unwrap();
    assert_eq!(products.shape(), [3, 3]);
    assert_eq!(
        products.to_vec().unwrap(),
        [1.0, 1.0, 1.0, 0.0, 1.0, 2.0, 0.0, 4.0, 10.0]
    );
    assert!(matches!(x.cumulative_sum(None, false), Err(Error::InvalidValue(_))));
    let scalar = DeviceArray::from_slice(&stream, &[5i64])
        .unwrap()
        .reshape(Vec::<usize>::new())
        .unwrap();
    assert_eq!(scalar.cumulative_sum(None, false).unwrap().to_vec().unwrap(), [5]);
    let empty = DeviceArray::<f32>::empty(&stream, 0).unwrap();
    assert_eq!(empty.cumulative_sum(None, true).unwrap().to_vec().unwrap(), [0.0]);
    let bools = DeviceArray::from_slice(&stream, &[Bool(1), Bool(1)]).unwrap();
    assert_eq!(bools.cumulative_sum(0, true).unwrap().to_vec().unwrap(), [0i64, 1, 2]);
    // Larger: with the initial values left out, cumsum itself; with them, the identity first.
    let data: Vec<f32> = (0..3 * 5000).map(|i| (i % 7) as f32 - 3.0).collect();
    let y = DeviceArray::from_slice(&stream, &data)
        .unwrap()
        .reshape([3, 5000])
        .unwrap();
    let cumsum = y.cumsum(-1).unwrap().to_vec().unwrap();
    assert_eq!(y.cumulative_sum(-1, false).unwrap().to_vec().unwrap(), cumsum);
    let with_initial = y.cumulative_sum(-1, true).unwrap().to_vec().unwrap();
    for row in 0..3 {
        assert_eq!(with_initial[row * 5001], 0.0);
        assert_eq!(
            &with_initial[row * 5001 + 1..(row + 1) * 5001],
            &cumsum[row * 5000..(row + 1) * 5000]
        );
    }
}

#[test]
fn diff_and_ediff1d_follow_numpy() {
    let Some(device) = common::device_or_skip("diff_and_ediff1d_follow_numpy") else {
        return;
    };
    let stream = device.create_stream().unwrap();
    let x = DeviceArray::from_slice(&stream, &[1i32, 4, 9, 16, 25, 36])
        .unwrap()
        .reshape([2, 3])
        .unwrap();
    assert_eq!(x.diff(1, -1).unwrap().to_vec().unwrap(), [3, 5, 9, 11]);
    assert_eq!(x.diff(1, -1).unwrap().shape(), [2, 2]);
    assert_eq!(x.diff(2, 1).unwrap().to_vec().unwrap(), [2, 2]);
    assert_eq!(x.diff(1, 0).unwrap().to_vec().unwrap(), [15, 21, 27]);
    assert_eq!(x.diff(0, 0).unwrap().to_vec().unwrap(), [1, 4, 9, 16, 25, 36]);
    // Past the axis's length: an empty axis, as in NumPy.
    assert_eq!(x.diff(5, 1).unwrap().shape(), [2, 0]);
    // Integers wrap; bools compare.
    let u = DeviceArray::from_slice(&stream, &[5u8, 3]).unwrap();
    assert_eq!(u.diff(1, 0).unwrap().to_vec().unwrap(), [254]);
    let b = DeviceArray::from_slice(&stream, &[Bool(1), Bool(1), Bool(0)]).unwrap();
    assert_eq!(b.diff(1, 0).unwrap().to_vec().unwrap(), [Bool(0), Bool(1)]);
    // The inverse of cumsum.
    let data: Vec<i64> = (0..5000).map(|i| (i * 31 % 17) - 8).collect();
    let y = DeviceArray::from_slice(&stream, &data).unwrap();
    assert_eq!(
        y.cumsum(None).unwrap().diff(1, 0).unwrap().to_vec().unwrap(),
        &data[1..]
    );
    assert!(matches!(x.diff(1, 2), Err(Error::Axis { axis: 2, .. })));
    let scalar = DeviceArray::from_slice(&stream, &[1.0f32])
        .unwrap()
        .reshape(Vec::<usize>::new())
        .unwrap();
    assert!(matches!(scalar.diff(1, 0), Err(Error::Axis { axis: 0, ndim: 0 })));
    // ediff1d: the flattened differences, with `to_begin` and `to_end` around them.
    assert_eq!(x.ediff1d(None, None).unwrap().to_vec().unwrap(), [3, 5, 7, 9, 11]);
    let begin = DeviceArray::from_slice(&stream, &[-1i32, -2]).unwrap();
    let end = DeviceArray::from_slice(&stream, &[100i32])
        .unwrap()
        .reshape([1, 1])
        .unwrap();
    assert_eq!(
        x.ediff1d(Some(&begin), Some(&end)).unwrap().to_vec().unwrap(),
        [-1, -2, 3, 5, 7, 9, 11, 100]
    );
    assert_eq!(x.ediff1d(None, Some(&end)).unwrap().shape(), [6]);
    // A transposed view is read in C order; one element (and a 0-d array) gives no differences.
    assert_eq!(
        x.transpose().ediff1d(None, None).unwrap().to_vec().unwrap(),
        [15, -12, 21, -16, 27]
    );
    assert_eq!(scalar.ediff1d(None, None).unwrap().shape(), [0]);
    let one = DeviceArray::from_slice(&stream, &[7u8]).unwrap();
    assert_eq!(one.ediff1d(Some(&one), None).unwrap().to_vec().unwrap(), [7]);
    // NaN and infinities as NumPy's subtract; booleans are a typed error, as in NumPy.
    let f = DeviceArray::from_slice(&stream, &[1.0f32, f32::INFINITY, f32::INFINITY, f32::NAN]).unwrap();
    let got = f.ediff1d(None, None).unwrap().to_vec().unwrap();
    assert!(got[0] == f32::INFINITY && got[1].is_nan() && got[2].is_nan(), "{got:?}");
    assert!(matches!(b.ediff1d(None, None), Err(Error::InvalidValue(_))));
}

#[test]
fn more_than_2_31_elements_take_the_64_bit_path() {
    let Some(device) = common::device_or_skip("more_than_2_31_elements_take_the_64_bit_path") else {
        return;
    };
    let stream = device.create_stream().unwrap();
    // 2^31 + 4099 ones (2 GiB) into u64 sums (16 GiB): indices, tile numbers and counts past
    // 2^31.
    let n = (1usize << 31) + 4099;
    let x = DeviceArray::<u8>::full(&stream, n, 1).unwrap();
    let sums = x.cumsum(None).unwrap();
    drop(x);
    for start in [0, (1usize << 31) - 2, n - 3] {
        let got = sums
            .slice(&[cuda_core::Slice::new(start, Some(start + 3))])
            .unwrap()
            .to_vec()
            .unwrap();
        let want: Vec<u64> = (start as u64 + 1..start as u64 + 4).collect();
        assert_eq!(got, want, "sums from {start}");
    }
}

#[test]
fn scans_of_expressions_read_their_operands_once() {
    let Some(device) = common::device_or_skip("scans_of_expressions_read_their_operands_once") else {
        return;
    };
    let stream = device.create_stream().unwrap();
    let n = 100_003usize;
    let a: Vec<i32> = (0..n).map(|i| (i % 13) as i32 - 6).collect();
    let b: Vec<i32> = (0..n).map(|i| (i % 5) as i32).collect();
    let x = DeviceArray::from_slice(&stream, &a).unwrap();
    let y = DeviceArray::from_slice(&stream, &b).unwrap();
    // Fused, flattened: sum of x * y + 3.
    let mut acc = 0i64;
    let want: Vec<i64> = (0..n)
        .map(|i| {
            acc += i64::from(a[i] * b[i] + 3);
            acc
        })
        .collect();
    assert_eq!((&x * &y + 3).cumsum(None).unwrap().to_vec().unwrap(), want);
    // Fused along the last axis of a 2-D view, and along the first (evaluated first).
    let rows = [101usize, 990];
    let xr = x
        .slice(&[cuda_core::Slice::new(0, Some(rows[0] * rows[1]))])
        .unwrap()
        .reshape(rows)
        .unwrap();
    let yr = y
        .slice(&[cuda_core::Slice::new(0, Some(rows[0] * rows[1]))])
        .unwrap()
        .reshape(rows)
        .unwrap();
    let value = |i: usize| i64::from(a[i] * b[i] + 3);
    let mut last = vec![0i64; rows[0] * rows[1]];
    let mut first = vec![0i64; rows[0] * rows[1]];
    for i in 0..rows[0] * rows[1] {
        last[i] = if i % rows[1] == 0 {
            value(i)
        } else {
            last[i - 1] + value(i)
        };
        first[i] = if i < rows[1] {
            value(i)
        } else {
            first[i - rows[1]] + value(i)
        };
    }
    assert_eq!((&xr * &yr + 3).cumsum(-1).unwrap().to_vec().unwrap(), last);
    assert_eq!((&xr * &yr + 3).cumsum(0).unwrap().to_vec().unwrap(), first);
    // A bool expression counts; a float one skips NaN.
    let f = DeviceArray::from_slice(&stream, &[0.25f32, f32::NAN, 0.75, 1.0]).unwrap();
    assert_eq!(f.gt(0.5).cumsum(None).unwrap().to_vec().unwrap(), [0i64, 0, 1, 2]);
    assert_eq!(
        (&f * 2.0f32).nancumsum(None).unwrap().to_vec().unwrap(),
        [0.5f32, 0.5, 2.0, 4.0]
    );
    assert!(matches!((&x + 1).cumsum(1), Err(Error::Axis { axis: 1, ndim: 1 })));
}

#[test]
fn scans_by_key_restart_where_the_key_changes() {
    let Some(device) = common::device_or_skip("scans_by_key_restart_where_the_key_changes") else {
        return;
    };
    let stream = device.create_stream().unwrap();
    let context = device.context();
    for n in [1usize, 7, 2048, 2049, 4097, 8193, 1_000_003] {
        let data: Vec<i32> = (0..n).map(|i| (i % 11) as i32 - 5).collect();
        // Runs of growing length, some across tile boundaries, and a key that comes back later.
        let keys: Vec<u16> = (0..n).map(|i| ((i * i / 3001) % 7) as u16).collect();
        let x = DeviceBuffer::from_slice(context, &data).unwrap();
        let k = DeviceBuffer::from_slice(context, &keys).unwrap();
        let mut out = DeviceBuffer::<i64>::zeroed(context, n).unwrap();
        for exclusive in [false, true] {
            let kind = match exclusive {
                true => ScanKind::Exclusive(100),
                false => ScanKind::Inclusive,
            };
            scan_by_key::<u16, i32, i64>(&stream, &k, &x, &mut out, ScanOp::Sum, kind).unwrap();
            stream.synchronize().unwrap();
            let got = out.to_vec().unwrap();
            let mut acc = 0i64;
            for i in 0..n {
                let head = i == 0 || keys[i] != keys[i - 1];
                let want = match (exclusive, head) {
                    (true, true) => 100,
                    (true, false) => 100 + acc,
                    (false, _) => 0,
                };
                acc = if head {
                    i64::from(data[i])
                } else {
                    acc + i64::from(data[i])
                };
                let want = if exclusive { want } else { acc };
                assert_eq!(got[i], want, "n {n}, exclusive {exclusive}, element {i}");
            }
        }
    }
    // Keys of another length are a typed error.
    let x = DeviceBuffer::from_slice(context, &[1i32, 2, 3]).unwrap();
    let k = DeviceBuffer::from_slice(context, &[0u16, 0]).unwrap();
    let mut out = DeviceBuffer::<i64>::zeroed(context, 3).unwrap();
    let error = scan_by_key::<u16, i32, i64>(&stream, &k, &x, &mut out, ScanOp::Sum, ScanKind::Inclusive);
    assert!(matches!(error, Err(Error::InvalidValue(_))), "{error:?}");
}

type C64 = num_complex::Complex<f64>;

/// Whether each part of `got` is `want`'s (NaN matching NaN), within `tolerance` relative.
fn complex_close(got: &[C64], want: &[C64], tolerance: f64) -> Result<(), String> {
    if got.len() != want.len() {
        return Err(format!("{} elements, {} wanted", got.len(), want.len()));
    }
    match (0..got.len()).find(|&i| !close(got[i].re, want[i].re, tolerance) || !close(got[i].im, want[i].im, tolerance))
    {
        Some(i) => Err(format!("element {i} is {}, {} wanted", got[i], want[i])),
        None => Ok(()),
    }
}

#[test]
fn complex_scans_follow_numpy() {
    let Some(device) = common::device_or_skip("complex_scans_follow_numpy") else {
        return;
    };
    let stream = device.create_stream().unwrap();
    let c = C64::new;
    let (nan, inf) = (f64::NAN, f64::INFINITY);
    // NumPy 2.4: x = [1+2j, nan+1j, 2-1j, 1+nan*1j (nan+nanj), inf+0j, 3j]; a NaN in either
    // part makes the value NaN for the nan forms.
    let data = [
        c(1.0, 2.0),
        c(nan, 1.0),
        c(2.0, -1.0),
        c(1.0, nan),
        c(inf, 0.0),
        c(0.0, 3.0),
    ];
    let x = DeviceArray::from_slice(&stream, &data).unwrap();
    let nn = c(nan, nan);
    let cases: [(&str, DeviceArray<C64>, [C64; 6]); 4] = [
        (
            "cumsum",
            x.cumsum(None).unwrap(),
            [c(1.0, 2.0), c(nan, 3.0), c(nan, 2.0), nn, nn, nn],
        ),
        ("cumprod", x.cumprod(None).unwrap(), [c(1.0, 2.0), nn, nn, nn, nn, nn]),
        (
            "nancumsum",
            x.nancumsum(None).unwrap(),
            [
                c(1.0, 2.0),
                c(1.0, 2.0),
                c(3.0, 1.0),
                c(3.0, 1.0),
                c(inf, 1.0),
                c(inf, 4.0),
            ],
        ),
        (
            "nancumprod",
            x.nancumprod(None).unwrap(),
            [c(1.0, 2.0), c(1.0, 2.0), c(4.0, 3.0), c(4.0, 3.0), c(inf, inf), nn],
        ),
    ];
    for (what, got, want) in cases {
        complex_close(&got.to_vec().unwrap(), &want, 0.0).unwrap_or_else(|e| panic!("{what}: {e}"));
    }
    // y = [[1+1j, 2-1j, nan*1j], [0.5j, nan+0j, -1+0j]] along axis 0, -1 and flattened.
    let y = DeviceArray::from_slice(
        &stream,
        &[c(1.0, 1.0), c(2.0, -1.0), nn, c(0.0, 0.5), c(nan, 0.0), c(-1.0, 0.0)],
    )
    .unwrap()
    .reshape([2, 3])
    .unwrap();
    let axis_cases: [(&str, DeviceArray<C64>, [C64; 6]); 3] = [
        (
            "cumsum(axis=0)",
            y.cumsum(0).unwrap(),
            [c(1.0, 1.0), c(2.0, -1.0), nn, c(1.0, 1.5), c(nan, -1.0), nn],
        ),
        (
            "nancumprod(axis=-1)",
            y.nancumprod(-1).unwrap(),
            [
                c(1.0, 1.0),
                c(3.0, 1.0),
                c(3.0, 1.0),
                c(0.0, 0.5),
                c(0.0, 0.5),
                c(-0.0, -0.5),
            ],
        ),
        (
            "cumprod(axis=None)",
            y.cumprod(None).unwrap(),
            [c(1.0, 1.0), c(3.0, 1.0), nn, nn, nn, nn],
        ),
    ];
    for (what, got, want) in axis_cases {
        complex_close(&got.to_vec().unwrap(), &want, 0.0).unwrap_or_else(|e| panic!("{what}: {e}"));
    }
    // Many tiles of complex64 along the middle axis, against a sequential host sum.
    let (rows, mid, cols) = (3usize, 3000usize, 2usize);
    let values: Vec<num_complex::Complex<f32>> = (0..rows * mid * cols)
        .map(|i| num_complex::Complex::new(((i * 7) % 11) as f32 - 5.0, ((i * 5) % 13) as f32 - 6.0))
        .collect();
    let z = DeviceArray::from_slice(&stream, &values)
        .unwrap()
        .reshape([rows, mid, cols])
        .unwrap();
    let got: Vec<C64> = z
        .cumsum(-2)
        .unwrap()
        .to_vec()
        .unwrap()
        .iter()
        .map(|v| c(f64::from(v.re), f64::from(v.im)))
        .collect();
    let mut want = vec![c(0.0, 0.0); values.len()];
    for r in 0..rows {
        for k in 0..cols {
            let mut acc = c(0.0, 0.0);
            for m in 0..mid {
                let i = (r * mid + m) * cols + k;
                acc += c(f64::from(values[i].re), f64::from(values[i].im));
                want[i] = acc;
            }
        }
    }
    complex_close(&got, &want, 0.0).unwrap_or_else(|e| panic!("complex64 cumsum along axis -2: {e}"));
    // The fused form: a complex expression scanned without a temporary.
    let w = DeviceArray::from_slice(&stream, &[c(1.0, 1.0), c(0.0, 2.0)]).unwrap();
    let fused = (&w * &w).cumsum(None).unwrap().to_vec().unwrap();
    complex_close(&fused, &[c(0.0, 2.0), c(-4.0, 2.0)], 0.0).unwrap_or_else(|e| panic!("fused: {e}"));
    // What the scan does not take for complex values: Min/Max.
    let buffer = DeviceBuffer::from_slice(device.context(), &data).unwrap();
    let mut out = DeviceBuffer::<C64>::zeroed(device.context(), data.len()).unwrap();
    let refused = scan::<C64, C64>(&stream, &buffer, &mut out, ScanOp::Max, ScanKind::Inclusive, None);
    assert!(matches!(refused, Err(Error::NotSupported(_))), "{refused:?}");
    // A reduction takes a complex128 initial value (its two 8-byte parameters): NumPy 2.4,
    // init + x.sum() and init + x.reshape(2, 2).sum(axis=1) for x = [1+2j, 2-1j, 0.5+0.5j,
    // -1+3j], init = 0.25-0.5j: (2.75+4j) and [3.25+0.5j, -0.25+3j]; an empty input gives init.
    use cuda_core::algorithms::reduce::{reduce, reduce_segments, Segments};
    let init = c(0.25, -0.5);
    let finite = DeviceArray::from_slice(&stream, &[c(1.0, 2.0), c(2.0, -1.0), c(0.5, 0.5), c(-1.0, 3.0)]).unwrap();
    let mut total = DeviceArray::<C64>::zeros(&stream, 1).unwrap();
    reduce::<C64, C64>(&stream, &finite, &mut total, ScanOp::Sum, init).unwrap();
    complex_close(&total.to_vec().unwrap(), &[c(2.75, 4.0)], 0.0).unwrap_or_else(|e| panic!("complex128 reduce: {e}"));
    let mut rows = DeviceArray::<C64>::zeros(&stream, 2).unwrap();
    reduce_segments::<C64, C64>(&stream, &finite, Segments::Rows(2), &mut rows, ScanOp::Sum, init).unwrap();
    complex_close(&rows.to_vec().unwrap(), &[c(3.25, 0.5), c(-0.25, 3.0)], 0.0)
        .unwrap_or_else(|e| panic!("complex128 reduce_segments: {e}"));
    let empty = DeviceArray::<C64>::zeros(&stream, 0).unwrap();
    reduce::<C64, C64>(&stream, &empty, &mut total, ScanOp::Prod, init).unwrap();
    complex_close(&total.to_vec().unwrap(), &[init], 0.0).unwrap_or_else(|e| panic!("empty complex128 reduce: {e}"));
}

#[test]
fn complex_exclusive_scans_and_scans_by_key_follow_numpy() {
    let Some(device) = common::device_or_skip("complex_exclusive_scans_and_scans_by_key_follow_numpy") else {
        return;
    };
    let (stream, context) = (device.create_stream().unwrap(), device.context());
    let c = C64::new;
    // NumPy 2.4: x = [1+2j, 2-1j, 0.5+0.5j, -1+3j, 2, 1j], keys = [0, 0, 0, 5, 5, 7]; a scan by
    // key is np.cumsum / np.cumprod of each run of equal keys, an exclusive one
    // init (+ or *) the scan of the run without its last element, init at each run's start.
    let data = [
        c(1.0, 2.0),
        c(2.0, -1.0),
        c(0.5, 0.5),
        c(-1.0, 3.0),
        c(2.0, 0.0),
        c(0.0, 1.0),
    ];
    let x = DeviceBuffer::from_slice(context, &data).unwrap();
    let keys = DeviceBuffer::from_slice(context, &[0i32, 0, 0, 5, 5, 7]).unwrap();
    let mut out = DeviceBuffer::<C64>::zeroed(context, data.len()).unwrap();
    let cases = [
        (
            "by key inclusive sum",
            ScanOp::Sum,
            ScanKind::Inclusive,
            [
                c(1.0, 2.0),
                c(3.0, 1.0),
                c(3.5, 1.5),
                c(-1.0, 3.0),
                c(1.0, 3.0),
                c(0.0, 1.0),
            ],
        ),
        (
            "by key inclusive product",
            ScanOp::Prod,
            ScanKind::Inclusive,
            [
                c(1.0, 2.0),
                c(4.0, 3.0),
                c(0.5, 3.5),
                c(-1.0, 3.0),
                c(-2.0, 6.0),
                c(0.0, 1.0),
            ],
        ),
        (
            "by key exclusive sum from 1-1j",
            ScanOp::Sum,
            ScanKind::Exclusive(c(1.0, -1.0)),
            [
                c(1.0, -1.0),
                c(2.0, 1.0),
                c(4.0, 0.0),
                c(1.0, -1.0),
                c(0.0, 2.0),
                c(1.0, -1.0),
            ],
        ),
        (
            "by key exclusive product from 2-1j",
            ScanOp::Prod,
            ScanKind::Exclusive(c(2.0, -1.0)),
            [
                c(2.0, -1.0),
                c(4.0, 3.0),
                c(11.0, 2.0),
                c(2.0, -1.0),
                c(1.0, 7.0),
                c(2.0, -1.0),
            ],
        ),
    ];
    for (what, op, kind, want) in cases {
        scan_by_key::<i32, C64, C64>(&stream, &keys, &x, &mut out, op, kind).unwrap();
        stream.synchronize().unwrap();
        complex_close(&out.to_vec().unwrap(), &want, 0.0).unwrap_or_else(|e| panic!("{what}: {e}"));
    }
    // complex64 values by u64 keys, summed into complex128.
    let x32: Vec<num_complex::Complex<f32>> = data
        .iter()
        .map(|z| num_complex::Complex::new(z.re as f32, z.im as f32))
        .collect();
    let x32 = DeviceBuffer::from_slice(context, &x32).unwrap();
    let keys64 = DeviceBuffer::from_slice(context, &[0u64, 0, 0, 5, 5, 7]).unwrap();
    scan_by_key::<u64, num_complex::Complex<f32>, C64>(
        &stream,
        &keys64,
        &x32,
        &mut out,
        ScanOp::Sum,
        ScanKind::Inclusive,
    )
    .unwrap();
    stream.synchronize().unwrap();
    complex_close(
        &out.to_vec().unwrap(),
        &[
            c(1.0, 2.0),
            c(3.0, 1.0),
            c(3.5, 1.5),
            c(-1.0, 3.0),
            c(1.0, 3.0),
            c(0.0, 1.0),
        ],
        0.0,
    )
    .unwrap_or_else(|e| panic!("complex64 by key into complex128: {e}"));
    // Exclusive complex128 scans from an initial value (16 bytes, in two parameter words): the
    // whole buffer summed from 1+0j, and rows of 4 multiplied from 2-1j.
    scan::<C64, C64>(
        &stream,
        &x,
        &mut out,
        ScanOp::Sum,
        ScanKind::Exclusive(c(1.0, 0.0)),
        None,
    )
    .unwrap();
    stream.synchronize().unwrap();
    complex_close(
        &out.to_vec().unwrap(),
        &[
            c(1.0, 0.0),
            c(2.0, 2.0),
            c(4.0, 1.0),
            c(4.5, 1.5),
            c(3.5, 4.5),
            c(5.5, 4.5),
        ],
        0.0,
    )
    .unwrap_or_else(|e| panic!("exclusive sum from 1+0j: {e}"));
    scan::<C64, C64>(
        &stream,
        &x,
        &mut out,
        ScanOp::Prod,
        ScanKind::Exclusive(c(2.0, -1.0)),
        Some(4),
    )
    .unwrap();
    stream.synchronize().unwrap();
    complex_close(
        &out.to_vec().unwrap(),
        &[
            c(2.0, -1.0),
            c(4.0, 3.0),
            c(11.0, 2.0),
            c(4.5, 6.5),
            c(2.0, -1.0),
            c(4.0, -2.0),
        ],
        0.0,
    )
    .unwrap_or_else(|e| panic!("exclusive product of rows of 4 from 2-1j: {e}"));
    // Complex Min/Max by key stay refused; so do complex keys.
    let refused = scan_by_key::<i32, C64, C64>(&stream, &keys, &x, &mut out, ScanOp::Min, ScanKind::Inclusive);
    assert!(matches!(refused, Err(Error::NotSupported(_))), "{refused:?}");
    let refused = scan_by_key::<C64, C64, C64>(&stream, &x, &x, &mut out, ScanOp::Sum, ScanKind::Inclusive);
    assert!(matches!(refused, Err(Error::NotSupported(_))), "{refused:?}");
}
