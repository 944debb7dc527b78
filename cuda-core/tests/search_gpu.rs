//! `searchsorted` and the device-wide bounds on a GPU, against a host binary search in NumPy's
//! order (NaN last, `-0.0` equal to `0.0`): both sides, every element type, queries between,
//! on and outside the keys, NaN queries, a sorter, empty inputs, and the typed errors of a bad
//! sorter or a bad side. Without a driver or device each test prints `skipped: <why>` and
//! passes, unless `CUDA_REQUIRE_GPU=1`.

mod common;

use std::cmp::Ordering;

use cuda_core::algorithms::search::{self, Side};
use cuda_core::{DeviceArray, DeviceBuffer, Element, Error};
use cuda_driver::Stream;
use half::{bf16, f16};

/// NumPy's order on `f64`: NaN last, `-0.0 == 0.0`.
fn numpy_cmp(a: f64, b: f64) -> Ordering {
    match (a.is_nan(), b.is_nan()) {
        (true, true) => Ordering::Equal,
        (true, false) => Ordering::Greater,
        (false, true) => Ordering::Less,
        (false, false) => a.partial_cmp(&b).unwrap_or(Ordering::Equal),
    }
}

/// The host's bound of `query` in the sorted `keys`.
fn host_bound(keys: &[f64], query: f64, side: Side) -> i64 {
    keys.partition_point(|&k| match side {
        Side::Left => numpy_cmp(k, query) == Ordering::Less,
        Side::Right => numpy_cmp(k, query) != Ordering::Greater,
    }) as i64
}

/// Values every type holds exactly (small integers), with floats' specials for float types.
fn values<T: Element>(len: usize, seed: u64, floats: bool) -> Vec<T> {
    let mut state = seed | 1;
    (0..len)
        .map(|_| {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            let bits = state >> 33;
            let value = match (floats, bits % 10) {
                (true, 0) => f64::NAN,
                (true, 1) => f64::INFINITY,
                (true, 2) => f64::NEG_INFINITY,
                (true, 3) => -0.0,
                _ => ((bits >> 8) % 60) as f64,
            };
            T::from_f64(value)
        })
        .collect()
}

fn check_type<T: Element>(stream: &Stream, floats: bool) {
    for (len, queries_len) in [(0usize, 5usize), (1, 7), (1000, 300), (100_003, 5000), (7, 0)] {
        let mut keys: Vec<T> = values(len, len as u64 + 3, floats);
        keys.sort_by(|a, b| numpy_cmp(a.to_f64(), b.to_f64()));
        let queries: Vec<T> = values(queries_len, 77, floats);
        let host_keys: Vec<f64> = keys.iter().map(|k| k.to_f64()).collect();
        let a = DeviceArray::from_slice(stream, &keys).unwrap();
        let v = DeviceArray::from_slice(stream, &queries).unwrap();
        for side in [Side::Left, Side::Right] {
            let expected: Vec<i64> = queries
                .iter()
                .map(|q| host_bound(&host_keys, q.to_f64(), side))
                .collect();
            let found = a.searchsorted(&v, side, None).unwrap();
            assert_eq!(found.to_vec().unwrap(), expected, "{:?} {len} keys {side:?}", T::DTYPE);
        }
    }
}

#[test]
fn bounds_match_a_host_binary_search_for_every_type() {
    let Some(device) = common::device_or_skip("bounds_match_a_host_binary_search_for_every_type") else {
        return;
    };
    let stream = device.create_stream().unwrap();
    check_type::<i8>(&stream, false);
    check_type::<i16>(&stream, false);
    check_type::<i32>(&stream, false);
    check_type::<i64>(&stream, false);
    check_type::<u8>(&stream, false);
    check_type::<u16>(&stream, false);
    check_type::<u32>(&stream, false);
    check_type::<u64>(&stream, false);
    check_type::<f16>(&stream, true);
    check_type::<bf16>(&stream, true);
    check_type::<f32>(&stream, true);
    check_type::<f64>(&stream, true);
    println!("bounds match a host binary search for every type");
}

#[test]
fn numpy_cases_and_a_sorter() {
    let Some(device) = common::device_or_skip("numpy_cases_and_a_sorter") else {
        return;
    };
    let stream = device.create_stream().unwrap();
    // np.searchsorted([1,2,3,4,5], 3) == 2; side='right' == 3; [-10, 10, 2, 3] -> [0, 5, 1, 2].
    let a = DeviceArray::from_slice(&stream, &[1.0f64, 2.0, 3.0, 4.0, 5.0]).unwrap();
    let v = DeviceArray::from_slice(&stream, &[3.0f64, -10.0, 10.0, 2.0, f64::NAN, -0.0]).unwrap();
    assert_eq!(
        a.searchsorted(&v, Side::Left, None).unwrap().to_vec().unwrap(),
        [2, 0, 5, 1, 5, 0]
    );
    assert_eq!(
        a.searchsorted(&v, Side::Right, None).unwrap().to_vec().unwrap(),
        [3, 0, 5, 2, 5, 0]
    );
    // NaN keys sit last; -0.0 and 0.0 are one value.
    let a = DeviceArray::from_slice(&stream, &[-0.0f32, 0.0, 1.0, f32::NAN, f32::NAN]).unwrap();
    let v = DeviceArray::from_slice(&stream, &[0.0f32, -0.0, f32::NAN, f32::INFINITY]).unwrap();
    assert_eq!(
        a.searchsorted(&v, Side::Left, None).unwrap().to_vec().unwrap(),
        [0, 0, 3, 3]
    );
    assert_eq!(
        a.searchsorted(&v, Side::Right, None).unwrap().to_vec().unwrap(),
        [2, 2, 5, 3]
    );
    // A 2-D query array keeps its shape.
    let q = DeviceArray::from_slice(&stream, &[1.0f32, 2.0, 0.5, 9.0])
        .unwrap()
        .reshape(vec![2, 2])
        .unwrap();
    let found = a.searchsorted(&q, Side::Left, None).unwrap();
    assert_eq!(found.shape(), [2, 2]);
    assert_eq!(found.to_vec().unwrap(), [2, 3, 2, 3]);
    // Through a sorter: the same positions as in the sorted array.
    let host: Vec<i32> = (0..10_000i32).map(|i| i * 7919 % 1000).collect();
    let unsorted = DeviceArray::from_slice(&stream, &host).unwrap();
    let sorter = unsorted.argsort(-1).unwrap();
    let mut sorted = host.clone();
    sorted.sort();
    let queries: Vec<i32> = (-5..1005).collect();
    let v = DeviceArray::from_slice(&stream, &queries).unwrap();
    for side in [Side::Left, Side::Right] {
        let expected: Vec<i64> = queries
            .iter()
            .map(|&q| match side {
                Side::Left => sorted.partition_point(|&k| k < q) as i64,
                Side::Right => sorted.partition_point(|&k| k <= q) as i64,
            })
            .collect();
        let found = unsorted.searchsorted(&v, side, Some(&sorter)).unwrap();
        assert_eq!(found.to_vec().unwrap(), expected, "sorter {side:?}");
    }
    // The raw form, on driver buffers.
    let keys = DeviceBuffer::from_slice(stream.context(), &sorted).unwrap();
    let query_buffer = DeviceBuffer::from_slice(stream.context(), &queries).unwrap();
    let mut out = DeviceBuffer::<i64>::zeroed(stream.context(), queries.len()).unwrap();
    search::search_sorted::<i32>(
        &stream,
        (&keys, sorted.len()),
        (&query_buffer, queries.len()),
        &mut out,
        Side::Right,
    )
    .unwrap();
    stream.synchronize().unwrap();
    let expected: Vec<i64> = queries
        .iter()
        .map(|&q| sorted.partition_point(|&k| k <= q) as i64)
        .collect();
    assert_eq!(out.to_vec().unwrap(), expected);
    println!("numpy cases and a sorter");
}

#[test]
fn bad_input_is_a_typed_error() {
    let Some(device) = common::device_or_skip("bad_input_is_a_typed_error") else {
        return;
    };
    let stream = device.create_stream().unwrap();
    let a = DeviceArray::from_slice(&stream, &[1.0f32, 2.0, 3.0, 4.0]).unwrap();
    let v = DeviceArray::from_slice(&stream, &[2.5f32]).unwrap();
    // A sorter that does not sort the array, one with an index outside it, one of another length.
    let unsorted = DeviceArray::from_slice(&stream, &[1i64, 0, 2, 3]).unwrap();
    assert!(matches!(
        a.searchsorted(&v, Side::Left, Some(&unsorted)),
        Err(Error::InvalidValue(_))
    ));
    let outside = DeviceArray::from_slice(&stream, &[0i64, 1, 2, 4]).unwrap();
    assert!(matches!(
        a.searchsorted(&v, Side::Left, Some(&outside)),
        Err(Error::IndexOutOfBounds { .. })
    ));
    let negative = DeviceArray::from_slice(&stream, &[-1i64, 1, 2, 3]).unwrap();
    assert!(matches!(
        a.searchsorted(&v, Side::Left, Some(&negative)),
        Err(Error::IndexOutOfBounds { .. })
    ));
    let short = DeviceArray::from_slice(&stream, &[0i64, 1, 2]).unwrap();
    assert!(matches!(
        a.searchsorted(&v, Side::Left, Some(&short)),
        Err(Error::InvalidValue(_))
    ));
    // A good sorter passes.
    let good = DeviceArray::from_slice(&stream, &[0i64, 1, 2, 3]).unwrap();
    assert_eq!(
        a.searchsorted(&v, Side::Left, Some(&good)).unwrap().to_vec().unwrap(),
        [2]
    );
    // The array searched is 1-D; a side NumPy does not have is an error.
    let matrix = a.reshape(vec![2, 2]).unwrap();
    assert!(matches!(
        matrix.searchsorted(&v, Side::Left, None),
        Err(Error::InvalidValue(_))
    ));
    assert!(matches!("middle".parse::<Side>(), Err(Error::InvalidValue(_))));
    // Raw buffers too short for the lengths given.
    let keys = DeviceBuffer::from_slice(stream.context(), &[1.0f32, 2.0]).unwrap();
    let mut out = DeviceBuffer::<i64>::zeroed(stream.context(), 1).unwrap();
    assert!(matches!(
        search::search_sorted::<f32>(&stream, (&keys, 3), (&keys, 1), &mut out, Side::Left),
        Err(Error::InvalidValue(_))
    ));
    assert!(matches!(
        search::search_sorted::<f32>(&stream, (&keys, 2), (&keys, 2), &mut out, Side::Left),
        Err(Error::InvalidValue(_))
    ));
    println!("bad input is a typed error");
}

/// NumPy's `histogram(samples, bins, range)` counts, with edges rounded to `E`.
fn host_histogram<E: Element>(samples: &[f64], bins: usize, (lower, upper): (f64, f64)) -> (Vec<i64>, Vec<f64>) {
    let step = (upper - lower) / bins as f64;
    let edges: Vec<f64> = (0..=bins)
        .map(|i| if i == bins { upper } else { i as f64 * step + lower })
        .map(|e| E::from_f64(e).to_f64())
        .collect();
    let mut counts = vec![0i64; bins];
    for &x in samples {
        if !(x >= edges[0] && x <= edges[bins]) {
            continue;
        }
        // The bin whose half-open interval holds x, the last one closed.
        let b = edges[1..bins].partition_point(|&e| e <= x);
        counts[b] += 1;
    }
    (counts, edges)
}

#[test]
fn histograms_match_numpy() {
    let Some(device) = common::device_or_skip("histograms_match_numpy") else {
        return;
    };
    let stream = device.create_stream().unwrap();
    // f32 samples on and between edges, NaN and outside values not counted.
    let host: Vec<f32> = values::<f32>(200_000, 5, true)
        .into_iter()
        .enumerate()
        .map(|(i, v)| if i % 3 == 0 { v } else { v / 7.0 })
        .collect();
    let wide: Vec<f64> = host.iter().map(|&v| f64::from(v)).collect();
    let x = DeviceArray::from_slice(&stream, &host).unwrap();
    for (bins, range) in [
        (10usize, (0.0, 60.0)),
        (7, (-0.5, 3.25)),
        (5000, (1.0, 9.0)),
        (1, (0.0, 1.0)),
    ] {
        let (counts, edges) = x.histogram(bins, Some(range)).unwrap();
        let (expected, expected_edges) = host_histogram::<f32>(&wide, bins, range);
        assert_eq!(counts.to_vec().unwrap(), expected, "f32 {bins} bins over {range:?}");
        let edges: Vec<f64> = edges.to_vec().unwrap().iter().map(|&e| f64::from(e)).collect();
        assert_eq!(edges, expected_edges);
    }
    // Integers: edges in f64, the range from the data when none is given.
    let ints: Vec<i32> = (0..100_000).map(|i| (i * 37 % 1001) - 500).collect();
    let wide: Vec<f64> = ints.iter().map(|&v| f64::from(v)).collect();
    let x = DeviceArray::from_slice(&stream, &ints)
        .unwrap()
        .reshape(vec![100, 1000])
        .unwrap();
    let (counts, edges) = x.histogram(13, None).unwrap();
    let (expected, expected_edges) = host_histogram::<f64>(&wide, 13, (-500.0, 500.0));
    assert_eq!(counts.to_vec().unwrap(), expected);
    assert_eq!(edges.to_vec().unwrap(), expected_edges);
    assert_eq!(expected.iter().sum::<i64>(), 100_000);
    // np.histogram([1, 2, 1], bins=3) and a one-point range, widened by 0.5.
    let x = DeviceArray::from_slice(&stream, &[1.0f64, 2.0, 1.0]).unwrap();
    let (counts, edges) = x.histogram(3, None).unwrap();
    assert_eq!(counts.to_vec().unwrap(), [2, 0, 1]);
    assert_eq!(edges.to_vec().unwrap(), [1.0, 1.0 + 1.0 / 3.0, 1.0 + 2.0 / 3.0, 2.0]);
    let point = DeviceArray::from_slice(&stream, &[4i64, 4]).unwrap();
    let (counts, edges) = point.histogram(2, None).unwrap();
    assert_eq!(
        (counts.to_vec().unwrap(), edges.to_vec().unwrap()),
        (vec![0, 2], vec![3.5, 4.0, 4.5])
    );
    // Bad input: no bins, a reversed or infinite range, NaN in the data without a range.
    assert!(matches!(x.histogram(0, None), Err(Error::InvalidValue(_))));
    assert!(matches!(x.histogram(3, Some((2.0, 1.0))), Err(Error::InvalidValue(_))));
    assert!(matches!(
        x.histogram(3, Some((0.0, f64::INFINITY))),
        Err(Error::InvalidValue(_))
    ));
    let nan = DeviceArray::from_slice(&stream, &[1.0f32, f32::NAN]).unwrap();
    assert!(matches!(nan.histogram(3, None), Err(Error::InvalidValue(_))));
    // An empty array: zero counts over (0, 1).
    let empty = DeviceArray::<f32>::empty(&stream, 0).unwrap();
    let (counts, edges) = empty.histogram(2, None).unwrap();
    assert_eq!(
        (counts.to_vec().unwrap(), edges.to_vec().unwrap()),
        (vec![0, 0], vec![0.0, 0.5, 1.0])
    );
    println!("histograms match numpy");
}

#[test]
fn digitize_and_bincount_match_numpy() {
    let Some(device) = common::device_or_skip("digitize_and_bincount_match_numpy") else {
        return;
    };
    let stream = device.create_stream().unwrap();
    // np.digitize([0.2, 6.4, 3.0, 1.6], [0.0, 1.0, 2.5, 4.0, 10.0]) == [1, 4, 3, 2].
    let x = DeviceArray::from_slice(&stream, &[0.2f64, 6.4, 3.0, 1.6, 1.0, -1.0, 10.0]).unwrap();
    let increasing = DeviceArray::from_slice(&stream, &[0.0f64, 1.0, 2.5, 4.0, 10.0]).unwrap();
    assert_eq!(
        x.digitize(&increasing, false).unwrap().to_vec().unwrap(),
        [1, 4, 3, 2, 2, 0, 5]
    );
    assert_eq!(
        x.digitize(&increasing, true).unwrap().to_vec().unwrap(),
        [1, 4, 3, 2, 1, 0, 4]
    );
    // Decreasing bins: np.digitize(x, [10, 4, 2.5, 1, 0]) and with right=True.
    let decreasing = DeviceArray::from_slice(&stream, &[10.0f64, 4.0, 2.5, 1.0, 0.0]).unwrap();
    assert_eq!(
        x.digitize(&decreasing, false).unwrap().to_vec().unwrap(),
        [4, 1, 2, 3, 3, 5, 0]
    );
    assert_eq!(
        x.digitize(&decreasing, true).unwrap().to_vec().unwrap(),
        [4, 1, 2, 3, 4, 5, 1]
    );
    // A 2-D x keeps its shape; bins that are not monotonic, or not 1-D, are errors.
    let grid = x
        .slice(&[cuda_core::Slice::new(0, Some(6))])
        .unwrap()
        .reshape(vec![2, 3])
        .unwrap();
    assert_eq!(grid.digitize(&increasing, false).unwrap().shape(), [2, 3]);
    let bumpy = DeviceArray::from_slice(&stream, &[0.0f64, 2.0, 1.0]).unwrap();
    assert!(matches!(x.digitize(&bumpy, false), Err(Error::InvalidValue(_))));
    let with_nan = DeviceArray::from_slice(&stream, &[0.0f64, f64::NAN, 1.0]).unwrap();
    assert!(matches!(x.digitize(&with_nan, false), Err(Error::InvalidValue(_))));
    let square = increasing
        .slice(&[cuda_core::Slice::new(0, Some(4))])
        .unwrap()
        .reshape(vec![2, 2])
        .unwrap();
    assert!(matches!(x.digitize(&square, false), Err(Error::InvalidValue(_))));
    // bincount: np.bincount([0, 1, 1, 3, 2, 1, 7]) == [1, 3, 1, 1, 0, 0, 0, 1]; minlength pads.
    let values = DeviceArray::from_slice(&stream, &[0i64, 1, 1, 3, 2, 1, 7]).unwrap();
    assert_eq!(values.bincount(0).unwrap().to_vec().unwrap(), [1, 3, 1, 1, 0, 0, 0, 1]);
    assert_eq!(values.bincount(10).unwrap().len(), 10);
    let many: Vec<u16> = (0..300_000u32).map(|i| (i * 7919 % 5003) as u16).collect();
    let mut expected = vec![0i64; 5003];
    many.iter().for_each(|&v| expected[usize::from(v)] += 1);
    let counted = DeviceArray::from_slice(&stream, &many).unwrap().bincount(0).unwrap();
    assert_eq!(counted.to_vec().unwrap(), expected);
    assert_eq!(
        DeviceArray::<i32>::empty(&stream, 0)
            .unwrap()
            .bincount(3)
            .unwrap()
            .to_vec()
            .unwrap(),
        [0, 0, 0]
    );
    // Negative values, floats and 2-D arrays are errors.
    let negative = DeviceArray::from_slice(&stream, &[1i32, -1]).unwrap();
    assert!(matches!(negative.bincount(0), Err(Error::InvalidValue(_))));
    assert!(matches!(x.bincount(0), Err(Error::InvalidValue(_))));
    let matrix = values
        .slice(&[cuda_core::Slice::new(0, Some(6))])
        .unwrap()
        .reshape(vec![2, 3])
        .unwrap();
    assert!(matches!(matrix.bincount(0), Err(Error::InvalidValue(_))));
    println!("digitize and bincount match numpy");
}
