//! `searchsorted` and the device-wide bounds on a GPU, against a host binary search in NumPy's
//! order (NaN last, `-0.0` equal to `0.0`; complex values lexicographically, NaN patterns
//! last): both sides, every element type, queries between,
//! on and outside the keys, NaN queries, a sorter, empty inputs, and the typed errors of a bad
//! sorter or a bad side; and the histograms on them (`histogram` with a bin count or edges,
//! NumPy's bin-count rules, `density`, `histogram2d`, `histogramdd`, `digitize`, `bincount` with and without weights),
//! and `interp` against a port of NumPy's loop. Without a driver or device each test prints `skipped: <why>` and
//! passes, unless `CUDA_REQUIRE_GPU=1`.

mod common;

use std::cmp::Ordering;

use cuda_core::algorithms::search::{self, Side};
use cuda_core::{BinRule, Complex, DeviceArray, DeviceBuffer, Element, Error};
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

/// NumPy's documented order of complex values: `R + Rj < R + nanj < nan + Rj < nan + nanj`
/// (R not NaN), values of one NaN pattern by their parts, real first (`-0.0 == 0.0`).
fn complex_cmp(a: Complex<f64>, b: Complex<f64>) -> Ordering {
    let pattern = |z: Complex<f64>| (z.re.is_nan(), z.im.is_nan());
    pattern(a)
        .cmp(&pattern(b))
        .then_with(|| numpy_cmp(a.re, b.re))
        .then_with(|| numpy_cmp(a.im, b.im))
}

#[test]
fn complex_bounds_match_numpy() {
    let Some(device) = common::device_or_skip("complex_bounds_match_numpy") else {
        return;
    };
    let stream = device.create_stream().unwrap();
    // Parts with NaN, infinities and -0.0, so every NaN pattern and ties occur.
    let complex = |len: usize, seed: u64| -> Vec<Complex<f64>> {
        let re: Vec<f64> = values(len, seed, true);
        let im: Vec<f64> = values(len, seed + 1000, true);
        re.into_iter().zip(im).map(|(re, im)| Complex::new(re, im)).collect()
    };
    for (len, queries_len) in [(0usize, 5usize), (1, 9), (1000, 3000), (70_001, 5000)] {
        let unsorted = complex(len, len as u64 + 5);
        let mut keys = unsorted.clone();
        keys.sort_by(|a, b| complex_cmp(*a, *b));
        let queries = complex(queries_len, 91);
        for side in [Side::Left, Side::Right] {
            let expected: Vec<i64> = queries
                .iter()
                .map(|&q| {
                    keys.partition_point(|&k| match side {
                        Side::Left => complex_cmp(k, q) == Ordering::Less,
                        Side::Right => complex_cmp(k, q) != Ordering::Greater,
                    }) as i64
                })
                .collect();
            let a = DeviceArray::from_slice(&stream, &keys).unwrap();
            let v = DeviceArray::from_slice(&stream, &queries).unwrap();
            assert_eq!(
                a.searchsorted(&v, side, None).unwrap().to_vec().unwrap(),
                expected,
                "{len} {side:?}"
            );
            // The same in f32 parts (every value here is exact in f32).
            let narrow = |z: &[Complex<f64>]| -> Vec<Complex<f32>> {
                z.iter().map(|z| Complex::new(z.re as f32, z.im as f32)).collect()
            };
            let a32 = DeviceArray::from_slice(&stream, &narrow(&keys)).unwrap();
            let v32 = DeviceArray::from_slice(&stream, &narrow(&queries)).unwrap();
            assert_eq!(
                a32.searchsorted(&v32, side, None).unwrap().to_vec().unwrap(),
                expected,
                "f32 {len} {side:?}"
            );
            // Through a sorter of the unsorted keys (checked on the device).
            let u = DeviceArray::from_slice(&stream, &unsorted).unwrap();
            let sorter = u.argsort(0).unwrap();
            assert_eq!(
                u.searchsorted(&v, side, Some(&sorter)).unwrap().to_vec().unwrap(),
                expected,
                "sorter {len} {side:?}"
            );
        }
    }
    // NumPy 2.4: a = np.sort([nan+1j, 1+nanj, 2, nan+nanj, 1+1j, -0+0j, 1+nanj, nan-5j]) is
    // [-0+0j, 1+1j, 2, 1+nanj, 1+nanj, nan-5j, nan+1j, nan+nanj]; for the queries
    // [0, 1+1j, 1+2j, 5+nanj, 1+nanj, nan+0j, nan+nanj, inf] searchsorted gives
    // [0, 1, 2, 5, 3, 6, 7, 3] (left) and [1, 2, 2, 5, 5, 6, 8, 3] (right).
    let nan = f64::NAN;
    let a = [
        Complex::new(-0.0, 0.0),
        Complex::new(1.0, 1.0),
        Complex::new(2.0, 0.0),
        Complex::new(1.0, nan),
        Complex::new(1.0, nan),
        Complex::new(nan, -5.0),
        Complex::new(nan, 1.0),
        Complex::new(nan, nan),
    ];
    let q = [
        Complex::new(0.0, 0.0),
        Complex::new(1.0, 1.0),
        Complex::new(1.0, 2.0),
        Complex::new(5.0, nan),
        Complex::new(1.0, nan),
        Complex::new(nan, 0.0),
        Complex::new(nan, nan),
        Complex::new(f64::INFINITY, 0.0),
    ];
    let a = DeviceArray::from_slice(&stream, &a).unwrap();
    let q = DeviceArray::from_slice(&stream, &q).unwrap();
    assert_eq!(
        a.searchsorted(&q, Side::Left, None).unwrap().to_vec().unwrap(),
        [0, 1, 2, 5, 3, 6, 7, 3]
    );
    assert_eq!(
        a.searchsorted(&q, Side::Right, None).unwrap().to_vec().unwrap(),
        [1, 2, 2, 5, 5, 6, 8, 3]
    );
    // np.digitize refuses complex values (TypeError).
    assert!(matches!(q.digitize(&a, false), Err(Error::InvalidValue(_))));
    println!("complex bounds match numpy");
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
    // A minlength beyond the values counted in the first read: the same counts, zero-padded.
    let padded = values.bincount(5000).unwrap().to_vec().unwrap();
    assert_eq!(
        (padded.len(), &padded[..8], padded[8..].iter().sum::<i64>()),
        (5000, &[1, 3, 1, 1, 0, 0, 0, 1][..], 0)
    );
    // Unsigned extremes: 255 of u8 is a count, u64::MAX needs more bins than memory holds.
    let bytes = DeviceArray::from_slice(&stream, &[255u8, 0, 255])
        .unwrap()
        .bincount(0)
        .unwrap();
    let bytes = bytes.to_vec().unwrap();
    assert_eq!(
        (bytes.len(), bytes[0], bytes[255], bytes.iter().sum::<i64>()),
        (256, 1, 2, 3)
    );
    let huge = DeviceArray::from_slice(&stream, &[3u64, u64::MAX]).unwrap();
    assert!(matches!(huge.bincount(0), Err(Error::InvalidValue(_))));
    let least = DeviceArray::from_slice(&stream, &[5i64, i64::MIN, 2]).unwrap();
    assert!(matches!(least.bincount(0), Err(Error::InvalidValue(_))));
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

/// NumPy's `histogram(samples, bins=edges)` counts: bin `i` holds `edges[i] <= x <
/// edges[i + 1]`, the last bin `edges[m - 1] <= x <= edges[m]`.
fn host_histogram_edges(samples: &[f64], edges: &[f64]) -> Vec<i64> {
    let bins = edges.len() - 1;
    (0..bins)
        .map(|i| {
            let last = i + 1 == bins;
            samples
                .iter()
                .filter(|&&x| x >= edges[i] && (x < edges[i + 1] || (last && x == edges[i + 1])))
                .count() as i64
        })
        .collect()
}

/// NumPy's density: `counts / widths / counts.sum()`, the widths subtracted in `f32` (as
/// NumPy's `diff` of `f32` edges).
fn host_density(counts: &[i64], edges: &[f32]) -> Vec<f64> {
    let total = counts.iter().sum::<i64>() as f64;
    counts
        .iter()
        .zip(edges.windows(2))
        .map(|(&c, w)| c as f64 / f64::from(w[1] - w[0]) / total)
        .collect()
}

#[test]
fn histograms_with_edges_and_densities_match_numpy() {
    let Some(device) = common::device_or_skip("histograms_with_edges_and_densities_match_numpy") else {
        return;
    };
    let stream = device.create_stream().unwrap();
    // f32 samples (NaN, infinities, values on edges) in uneven edges, a repeated edge included.
    let host: Vec<f32> = values::<f32>(100_000, 9, true)
        .into_iter()
        .enumerate()
        .map(|(i, v)| if i % 2 == 0 { v } else { v / 4.0 })
        .collect();
    let wide: Vec<f64> = host.iter().map(|&v| f64::from(v)).collect();
    let x = DeviceArray::from_slice(&stream, &host)
        .unwrap()
        .reshape(vec![1000, 100])
        .unwrap();
    for edges in [
        vec![0.0f32, 1.0, 2.5, 2.5, 10.0, 40.0],
        vec![-1.0, 59.0],
        vec![3.0, 3.25, 3.5, 4.0, 8.0, 14.75, 15.0],
        vec![f32::NEG_INFINITY, 0.0, f32::INFINITY],
    ] {
        let wide_edges: Vec<f64> = edges.iter().map(|&e| f64::from(e)).collect();
        let device_edges = DeviceArray::from_slice(&stream, &edges).unwrap();
        let counts = x.histogram_with_edges(&device_edges).unwrap().to_vec().unwrap();
        let expected = host_histogram_edges(&wide, &wide_edges);
        assert_eq!(counts, expected, "edges {edges:?}");
        if edges.iter().all(|e| e.is_finite()) {
            let density = x.histogram_density_with_edges(&device_edges).unwrap().to_vec().unwrap();
            let expected = host_density(&expected, &edges);
            for (got, want) in density.iter().zip(&expected) {
                assert!(
                    got == want || (got.is_nan() && want.is_nan()),
                    "density {edges:?}: {density:?} != {expected:?}"
                );
            }
        }
    }
    // Integers in integer edges: np.histogram([1, 2, 1, 7, 9, 3], bins=[1, 2, 3, 9]) ==
    // [2, 1, 3] (9 is on the last, closed edge).
    let ints = DeviceArray::from_slice(&stream, &[1i32, 2, 1, 7, 9, 3]).unwrap();
    let edges = DeviceArray::from_slice(&stream, &[1i32, 2, 3, 9]).unwrap();
    assert_eq!(ints.histogram_with_edges(&edges).unwrap().to_vec().unwrap(), [2, 1, 3]);
    // Density with even bins: np.histogram([1, 2, 1], bins=2, range=(0, 4), density=True) ==
    // ([1/3, 1/6], [0, 2, 4]) (2 is on the inner edge, so in the second bin: counts [2, 1],
    // each divided by 3 samples and the width 2) and the integral over the range is 1.
    let few = DeviceArray::from_slice(&stream, &[1.0f64, 2.0, 1.0]).unwrap();
    let (density, edges) = few.histogram_density(2, Some((0.0, 4.0))).unwrap();
    assert_eq!(density.to_vec().unwrap(), [1.0 / 3.0, 1.0 / 6.0]);
    assert_eq!(edges.to_vec().unwrap(), [0.0, 2.0, 4.0]);
    let (density, edges) = x.histogram_density(37, Some((0.5, 41.0))).unwrap();
    let (counts, _) = x.histogram(37, Some((0.5, 41.0))).unwrap();
    let host_edges = edges.to_vec().unwrap();
    let expected = host_density(&counts.to_vec().unwrap(), &host_edges);
    assert_eq!(density.to_vec().unwrap(), expected);
    let integral: f64 = expected
        .iter()
        .zip(host_edges.windows(2))
        .map(|(d, w)| d * f64::from(w[1] - w[0]))
        .sum();
    assert!((integral - 1.0).abs() < 1e-6, "integral {integral}");
    // Nothing counted: 0 / 0 is NaN, as NumPy.
    let (density, _) = few.histogram_density(2, Some((10.0, 11.0))).unwrap();
    assert!(density.to_vec().unwrap().iter().all(|d| d.is_nan()));
    // Bad edges: decreasing, NaN, fewer than two, not 1-D.
    for bad in [vec![0.0f64, 2.0, 1.0], vec![0.0, f64::NAN, 1.0], vec![1.0]] {
        let bad = DeviceArray::from_slice(&stream, &bad).unwrap();
        assert!(
            matches!(few.histogram_with_edges(&bad), Err(Error::InvalidValue(_))),
            "{bad:?}"
        );
        assert!(matches!(
            few.histogram_density_with_edges(&bad),
            Err(Error::InvalidValue(_))
        ));
    }
    let square = DeviceArray::from_slice(&stream, &[0.0f64, 1.0, 2.0, 3.0])
        .unwrap()
        .reshape(vec![2, 2])
        .unwrap();
    assert!(matches!(few.histogram_with_edges(&square), Err(Error::InvalidValue(_))));
    assert!(matches!(few.histogram_density(0, None), Err(Error::InvalidValue(_))));
    // An empty array: zero counts.
    let empty = DeviceArray::<f64>::empty(&stream, 0).unwrap();
    let edges = DeviceArray::from_slice(&stream, &[0.0f64, 1.0, 2.0]).unwrap();
    assert_eq!(empty.histogram_with_edges(&edges).unwrap().to_vec().unwrap(), [0, 0]);
    println!("histograms with edges and densities match numpy");
}

/// NumPy's `histogram2d(x, y, bins, range)` counts (row-major, `bins.0` rows).
fn host_histogram2d(x: &[f64], y: &[f64], bins: (usize, usize), range: [(f64, f64); 2]) -> Vec<f64> {
    let bin = |v: f64, count: usize, (lower, upper): (f64, f64)| -> Option<usize> {
        let edges: Vec<f64> = (0..=count)
            .map(|i| {
                if i == count {
                    upper
                } else {
                    i as f64 * ((upper - lower) / count as f64) + lower
                }
            })
            .collect();
        (v >= edges[0] && v <= edges[count]).then(|| edges[1..count].partition_point(|&e| e <= v))
    };
    let mut counts = vec![0.0; bins.0 * bins.1];
    for (&a, &b) in x.iter().zip(y) {
        if let (Some(i), Some(j)) = (bin(a, bins.0, range[0]), bin(b, bins.1, range[1])) {
            counts[i * bins.1 + j] += 1.0;
        }
    }
    counts
}

/// NumPy's string `bins` (its bin-count estimators) against the counts NumPy 2.4 gives
/// (`len(np.histogram_bin_edges(x, bins=name, range=range)) - 1`) for spread, integer, skewed,
/// truncated, two-sample and constant data; names as NumPy spells them, `"stone"` refused.
#[test]
fn bin_rules_give_numpys_bin_counts() {
    let Some(device) = common::device_or_skip("bin_rules_give_numpys_bin_counts") else {
        return;
    };
    let stream = device.create_stream().unwrap();
    let spread: Vec<f64> = (0..5000)
        .map(|i| ((i * 7919) % 1000) as f64 / 10.0 + (i % 3) as f64 * 0.37)
        .collect();
    let ints: Vec<i32> = (0..1000).map(|i| (i * 31) % 97).collect();
    let skewed: Vec<f64> = (0..2000).map(|i| (i as f64 / 2000.0).powi(3) * 100.0).collect();
    let rules = BinRule::ALL;
    // (what, samples, range, NumPy's counts by the rules in BinRule::ALL's order)
    type Case = (&'static str, Vec<f64>, Option<(f64, f64)>, [usize; 7]);
    let cases: [Case; 5] = [
        ("spread", spread, None, [18, 18, 14, 18, 35, 14, 71]),
        ("skewed", skewed.clone(), None, [16, 16, 17, 13, 26, 12, 45]),
        (
            "skewed in [10, 60]",
            skewed,
            Some((10.0, 60.0)),
            [11, 10, 14, 10, 19, 11, 28],
        ),
        ("two samples", vec![1.0, 2.0], None, [2, 2, 1, 1, 3, 2, 2]),
        ("constant", vec![3.0; 10], None, [1; 7]),
    ];
    for (what, host, range, want) in cases {
        let x = DeviceArray::from_slice(&stream, &host).unwrap();
        let got: Vec<usize> = rules
            .iter()
            .map(|&rule| x.histogram_bin_count(rule, range).unwrap())
            .collect();
        assert_eq!(got, want, "{what}");
    }
    let x = DeviceArray::from_slice(&stream, &ints).unwrap();
    let got: Vec<usize> = rules
        .iter()
        .map(|&rule| x.histogram_bin_count(rule, None).unwrap())
        .collect();
    assert_eq!(got, [11, 10, 11, 10, 20, 11, 32], "integers");
    let names: Vec<BinRule> = ["auto", "fd", "doane", "scott", "rice", "sturges", "sqrt"]
        .iter()
        .map(|name| name.parse().unwrap())
        .collect();
    assert_eq!(names, rules);
    assert!(matches!("stone".parse::<BinRule>(), Err(Error::NotSupported(_))));
    assert!(matches!("Auto".parse::<BinRule>(), Err(Error::InvalidValue(_))));
    let with_nan = DeviceArray::from_slice(&stream, &[1.0f32, f32::NAN]).unwrap();
    assert!(matches!(
        with_nan.histogram_bin_count(BinRule::Auto, None),
        Err(Error::InvalidValue(_))
    ));
    let empty = DeviceArray::<f32>::empty(&stream, 0).unwrap();
    assert_eq!(empty.histogram_bin_count(BinRule::Fd, None).unwrap(), 1);
    // np.histogram_bin_edges: NumPy 2.4's edges, and those histogram counts in.
    let small = DeviceArray::from_slice(&stream, &[1i32, 2, 3, 10]).unwrap();
    assert_eq!(
        small.histogram_bin_edges(3, None).unwrap().to_vec().unwrap(),
        [1.0, 4.0, 7.0, 10.0]
    );
    let halves = DeviceArray::from_slice(&stream, &[0.5f32, 0.25]).unwrap();
    let edges = halves.histogram_bin_edges(4, Some((0.0, 1.0))).unwrap();
    assert_eq!(edges.to_vec().unwrap(), [0.0f32, 0.25, 0.5, 0.75, 1.0]);
    let two = DeviceArray::from_slice(&stream, &[1.0, 2.0]).unwrap();
    let auto = two.histogram_bin_count(BinRule::Auto, None).unwrap();
    assert_eq!(
        two.histogram_bin_edges(auto, None).unwrap().to_vec().unwrap(),
        [1.0, 1.5, 2.0]
    );
    let (_, counted_in) = x.histogram(7, None).unwrap();
    assert_eq!(
        x.histogram_bin_edges(7, None).unwrap().to_vec().unwrap(),
        counted_in.to_vec().unwrap()
    );
    assert!(matches!(x.histogram_bin_edges(0, None), Err(Error::InvalidValue(_))));
    assert!(matches!(
        with_nan.histogram_bin_edges(3, None),
        Err(Error::InvalidValue(_))
    ));
}

/// NumPy's `np.histogram(x, bins, range, weights=w)`, by a bin count and by edges, against
/// NumPy 2.4's sums (weights in halves: exact in any order), samples outside the range, NaN
/// and inf left out; weights of ones give the counts; weights of another shape are refused.
#[test]
fn weighted_histograms_match_numpy() {
    let Some(device) = common::device_or_skip("weighted_histograms_match_numpy") else {
        return;
    };
    let stream = device.create_stream().unwrap();
    let mut samples: Vec<f64> = (0..1000).map(|i| ((i * 37) % 101) as f64 / 10.0 - 2.0).collect();
    samples[7] = f64::NAN;
    samples[11] = f64::INFINITY;
    let weights: Vec<f32> = (0..1000).map(|i| ((i % 7) as f32 - 3.0) * 0.5).collect();
    let x = DeviceArray::from_slice(&stream, &samples).unwrap();
    let w = DeviceArray::from_slice(&stream, &weights).unwrap();
    let (sums, edges) = x.histogram_weighted(5, Some((0.0, 8.0)), &w).unwrap();
    assert_eq!(sums.to_vec().unwrap(), [2.0f32, -1.0, 1.0, 0.5, 0.5]);
    assert_eq!(edges.to_vec().unwrap(), [0.0, 1.6, 3.2, 4.800000000000001, 6.4, 8.0]);
    let bounds = DeviceArray::from_slice(&stream, &[0.0, 1.0, 2.5, 6.0, 8.0]).unwrap();
    let sums = x.histogram_weighted_with_edges(&bounds, &w).unwrap();
    assert_eq!(sums.to_vec().unwrap(), [2.5f32, 0.5, 0.0, 0.0]);
    // Integers, no range: NumPy's edges from the extremes.
    let ints: Vec<i32> = (0..1000).map(|i| (i * 13) % 50).collect();
    let int_weights: Vec<i64> = (0..1000).map(|i| i % 5).collect();
    let xi = DeviceArray::from_slice(&stream, &ints)
        .unwrap()
        .reshape([40, 25])
        .unwrap();
    let wi = DeviceArray::from_slice(&stream, &int_weights)
        .unwrap()
        .reshape([40, 25])
        .unwrap();
    let (sums, edges) = xi.histogram_weighted(7, None, &wi).unwrap();
    assert_eq!(sums.to_vec().unwrap(), [240i64, 300, 260, 320, 280, 240, 360]);
    assert_eq!(edges.to_vec().unwrap(), [0.0, 7.0, 14.0, 21.0, 28.0, 35.0, 42.0, 49.0]);
    // Weights of ones count.
    let ones = DeviceArray::<f64>::full(&stream, [40, 25], 1.0).unwrap();
    let (counts, _) = xi.histogram(7, None).unwrap();
    let (sums, _) = xi.histogram_weighted(7, None, &ones).unwrap();
    let counts: Vec<f64> = counts.to_vec().unwrap().iter().map(|&c| c as f64).collect();
    assert_eq!(sums.to_vec().unwrap(), counts);
    let short = DeviceArray::from_slice(&stream, &[1.0f32; 999]).unwrap();
    assert!(matches!(
        x.histogram_weighted(5, Some((0.0, 8.0)), &short),
        Err(Error::InvalidValue(_))
    ));
    assert!(matches!(
        x.histogram_weighted_with_edges(&bounds, &short),
        Err(Error::InvalidValue(_))
    ));
}

/// `histogramdd` against NumPy 2.4's counts and edges: 50 points of 3 coordinates with a NaN
/// (not counted) in given ranges, the same points without it in ranges from the data, 1-D
/// samples, and the typed errors.
#[test]
fn histogramdd_matches_numpy() {
    let Some(device) = common::device_or_skip("histogramdd_matches_numpy") else {
        return;
    };
    let stream = device.create_stream().unwrap();
    let mut points: Vec<f64> = (0..50)
        .flat_map(|i| {
            [
                (i * 7 % 13) as f64 / 2.0,
                (i * 5 % 11) as f64 - 3.0,
                (i * 3 % 17) as f64 / 4.0,
            ]
        })
        .collect();
    points[4 * 3 + 1] = f64::NAN;
    let sample = DeviceArray::from_slice(&stream, &points)
        .unwrap()
        .reshape([50, 3])
        .unwrap();
    let numpy: Vec<f64> = [1, 0, 0, 0, 2, 5, 4, 3, 1, 3, 2, 2, 4, 1, 0, 2, 2, 2, 4, 6, 2, 1, 2, 0]
        .iter()
        .map(|&c| f64::from(c))
        .collect();
    let ranges = [(0.0, 6.0), (-3.0, 7.0), (0.0, 4.0)];
    let (counts, edges) = sample.histogramdd(&[3, 2, 4], Some(&ranges)).unwrap();
    assert_eq!(counts.shape(), [3, 2, 4]);
    assert_eq!(counts.to_vec().unwrap(), numpy);
    assert_eq!(edges[0].to_vec().unwrap(), [0.0, 2.0, 4.0, 6.0]);
    assert_eq!(edges[1].to_vec().unwrap(), [-3.0, 2.0, 7.0]);
    assert_eq!(edges[2].to_vec().unwrap(), [0.0, 1.0, 2.0, 3.0, 4.0]);
    // Without the NaN point, ranges from the data: the same bins.
    let without: Vec<f64> = points
        .iter()
        .enumerate()
        .filter(|(k, _)| k / 3 != 4)
        .map(|(_, &v)| v)
        .collect();
    let sample = DeviceArray::from_slice(&stream, &without)
        .unwrap()
        .reshape([49, 3])
        .unwrap();
    let (counts, edges) = sample.histogramdd(&[3, 2, 4], None).unwrap();
    assert_eq!(counts.to_vec().unwrap(), numpy);
    assert_eq!(edges[1].to_vec().unwrap(), [-3.0, 2.0, 7.0]);
    // A 1-D sample: points of one coordinate (np.histogramdd(s[:, 0], bins=[5])), as histogram.
    let first: Vec<f64> = points.iter().step_by(3).copied().collect();
    let line = DeviceArray::from_slice(&stream, &first).unwrap();
    let (counts, edges) = line.histogramdd(&[5], None).unwrap();
    assert_eq!(counts.to_vec().unwrap(), [12.0, 8.0, 11.0, 8.0, 11.0]);
    assert_eq!(
        edges[0].to_vec().unwrap(),
        [0.0, 1.2, 2.4, 3.5999999999999996, 4.8, 6.0]
    );
    let (histogram, _) = line.histogram(5, None).unwrap();
    let histogram: Vec<f64> = histogram.to_vec().unwrap().iter().map(|&c| c as f64).collect();
    assert_eq!(counts.to_vec().unwrap(), histogram);
    // Typed errors: bins or ranges of another length, a bin count of 0, NaN in an
    // automatic range, a 3-D sample.
    let with_nan = DeviceArray::from_slice(&stream, &points)
        .unwrap()
        .reshape([50, 3])
        .unwrap();
    assert!(matches!(
        with_nan.histogramdd(&[3, 2], Some(&ranges)),
        Err(Error::InvalidValue(_))
    ));
    assert!(matches!(
        with_nan.histogramdd(&[3, 2, 4], Some(&ranges[..2])),
        Err(Error::InvalidValue(_))
    ));
    assert!(matches!(
        with_nan.histogramdd(&[3, 0, 4], Some(&ranges)),
        Err(Error::InvalidValue(_))
    ));
    assert!(matches!(
        with_nan.histogramdd(&[3, 2, 4], None),
        Err(Error::InvalidValue(_))
    ));
    let cube = DeviceArray::<f64>::zeros(&stream, [2, 2, 2]).unwrap();
    assert!(matches!(
        cube.histogramdd(&[1, 1, 1], None),
        Err(Error::InvalidValue(_))
    ));
}

#[test]
fn histogram2d_matches_numpy() {
    let Some(device) = common::device_or_skip("histogram2d_matches_numpy") else {
        return;
    };
    let stream = device.create_stream().unwrap();
    let xs: Vec<f32> = values::<f32>(50_000, 21, true);
    let ys: Vec<f32> = values::<f32>(50_000, 22, true).iter().map(|v| v / 3.0).collect();
    let (wx, wy): (Vec<f64>, Vec<f64>) = (
        xs.iter().map(|&v| f64::from(v)).collect(),
        ys.iter().map(|&v| f64::from(v)).collect(),
    );
    let x = DeviceArray::from_slice(&stream, &xs).unwrap();
    let y = DeviceArray::from_slice(&stream, &ys).unwrap();
    for (bins, range) in [
        ((10usize, 7usize), [(0.0, 60.0), (0.0, 20.0)]),
        ((1, 1), [(-1.0, 1.0), (0.0, 1.0)]),
        ((64, 33), [(2.5, 40.0), (-3.0, 9.5)]),
    ] {
        let (counts, x_edges, y_edges) = x.histogram2d(&y, bins, Some(range)).unwrap();
        assert_eq!(counts.shape(), [bins.0, bins.1]);
        assert_eq!(
            counts.to_vec().unwrap(),
            host_histogram2d(&wx, &wy, bins, range),
            "{bins:?} {range:?}"
        );
        assert_eq!((x_edges.len(), y_edges.len()), (bins.0 + 1, bins.1 + 1));
        assert_eq!(x_edges.to_vec().unwrap()[0], range[0].0);
        assert_eq!(y_edges.to_vec().unwrap()[bins.1], range[1].1);
    }
    // Integers, the ranges from the data: np.histogram2d([0, 1, 2, 2], [5, 5, 6, 9], bins=2)
    // == [[1, 0], [2, 1]] over x in [0, 2] and y in [5, 9] (2 and 9 are on the last, closed edges).
    let xi = DeviceArray::from_slice(&stream, &[0i32, 1, 2, 2]).unwrap();
    let yi = DeviceArray::from_slice(&stream, &[5i32, 5, 6, 9]).unwrap();
    let (counts, x_edges, y_edges) = xi.histogram2d(&yi, (2, 2), None).unwrap();
    assert_eq!(counts.to_vec().unwrap(), [1.0, 0.0, 2.0, 1.0]);
    assert_eq!(x_edges.to_vec().unwrap(), [0.0, 1.0, 2.0]);
    assert_eq!(y_edges.to_vec().unwrap(), [5.0, 7.0, 9.0]);
    // Bad input: unequal shapes, no bins, a reversed range, NaN without a range.
    let short = DeviceArray::from_slice(&stream, &[1i32, 2, 3]).unwrap();
    assert!(matches!(
        xi.histogram2d(&short, (2, 2), None),
        Err(Error::InvalidValue(_))
    ));
    assert!(matches!(xi.histogram2d(&yi, (0, 2), None), Err(Error::InvalidValue(_))));
    assert!(matches!(
        xi.histogram2d(&yi, (2, 2), Some([(1.0, 0.0), (0.0, 1.0)])),
        Err(Error::InvalidValue(_))
    ));
    assert!(matches!(x.histogram2d(&y, (2, 2), None), Err(Error::InvalidValue(_))));
    println!("histogram2d matches numpy");
}

#[test]
fn weighted_bincount_matches_numpy() {
    let Some(device) = common::device_or_skip("weighted_bincount_matches_numpy") else {
        return;
    };
    let stream = device.create_stream().unwrap();
    // np.bincount([0, 1, 1, 2, 2, 2], weights=[0.3, 0.5, 0.2, 0.7, 1., -0.6]) ==
    // [0.3, 0.7, 1.1].
    let x = DeviceArray::from_slice(&stream, &[0i64, 1, 1, 2, 2, 2]).unwrap();
    let w = DeviceArray::from_slice(&stream, &[0.3f64, 0.5, 0.2, 0.7, 1.0, -0.6]).unwrap();
    let sums = x.bincount_weighted(&w, 0).unwrap().to_vec().unwrap();
    for (got, want) in sums.iter().zip([0.3, 0.7, 1.1]) {
        assert!((got - want).abs() < 1e-12, "{sums:?}");
    }
    assert_eq!(sums.len(), 3);
    // Many values with gaps (absent values sum to 0), integer weights (exact sums), minlength.
    let n = 300_000u32;
    let many: Vec<u16> = (0..n).map(|i| (i * 7919 % 5003 * 2) as u16).collect();
    let weights: Vec<i32> = (0..n).map(|i| (i % 17) as i32 - 8).collect();
    let mut expected = vec![0.0f64; 10_100];
    for (&v, &w) in many.iter().zip(&weights) {
        expected[usize::from(v)] += f64::from(w);
    }
    let x = DeviceArray::from_slice(&stream, &many).unwrap();
    let w = DeviceArray::from_slice(&stream, &weights).unwrap();
    assert_eq!(x.bincount_weighted(&w, 10_100).unwrap().to_vec().unwrap(), expected);
    assert_eq!(
        x.bincount_weighted(&w, 0).unwrap().to_vec().unwrap(),
        expected[..10_005]
    );
    // f32 weights: sums of up to ~60 values, near the host's sequential f64 sums.
    let fw: Vec<f32> = (0..n).map(|i| (i % 1000) as f32 / 7.0).collect();
    let mut expected = vec![0.0f64; 10_005];
    for (&v, &w) in many.iter().zip(&fw) {
        expected[usize::from(v)] += f64::from(w);
    }
    let w = DeviceArray::from_slice(&stream, &fw).unwrap();
    let sums = x.bincount_weighted(&w, 0).unwrap().to_vec().unwrap();
    for (i, (got, want)) in sums.iter().zip(&expected).enumerate() {
        assert!(
            (got - want).abs() <= 1e-9 * want.abs().max(1.0),
            "bin {i}: {got} != {want}"
        );
    }
    // Empty: zeros of minlength. Bad input: mismatched weights, negatives, floats, 2-D.
    let empty = DeviceArray::<u8>::empty(&stream, 0).unwrap();
    let none = DeviceArray::<f64>::empty(&stream, 0).unwrap();
    assert_eq!(empty.bincount_weighted(&none, 2).unwrap().to_vec().unwrap(), [0.0, 0.0]);
    let three = DeviceArray::from_slice(&stream, &[1.0f64, 2.0, 3.0]).unwrap();
    let two = DeviceArray::from_slice(&stream, &[1i32, 0]).unwrap();
    assert!(matches!(two.bincount_weighted(&three, 0), Err(Error::InvalidValue(_))));
    let negative = DeviceArray::from_slice(&stream, &[1i32, -1]).unwrap();
    let pair = DeviceArray::from_slice(&stream, &[1.0f64, 1.0]).unwrap();
    assert!(matches!(
        negative.bincount_weighted(&pair, 0),
        Err(Error::InvalidValue(_))
    ));
    assert!(matches!(pair.bincount_weighted(&pair, 0), Err(Error::InvalidValue(_))));
    let grid = DeviceArray::from_slice(&stream, &[0u32, 1, 2, 3])
        .unwrap()
        .reshape(vec![2, 2])
        .unwrap();
    let grid_weights = DeviceArray::from_slice(&stream, &[1.0f64; 4])
        .unwrap()
        .reshape(vec![2, 2])
        .unwrap();
    assert!(matches!(
        grid.bincount_weighted(&grid_weights, 0),
        Err(Error::InvalidValue(_))
    ));
    println!("weighted bincount matches numpy");
}

/// Checks the bounds of `queries` in the sorted `keys` on both sides against the host's, found
/// directly and through a sorter: the same keys reversed, and the permutation that sorts them
/// back.
fn check_bounds_with_and_without_a_sorter(stream: &Stream, keys: &[f32], queries: &[f32]) {
    let len = keys.len();
    let host_keys: Vec<f64> = keys.iter().map(|&k| f64::from(k)).collect();
    let a = DeviceArray::from_slice(stream, keys).unwrap();
    let v = DeviceArray::from_slice(stream, queries).unwrap();
    let reversed: Vec<f32> = keys.iter().rev().copied().collect();
    let r = DeviceArray::from_slice(stream, &reversed).unwrap();
    let back: Vec<i64> = (0..len as i64).rev().collect();
    let sorter = DeviceArray::from_slice(stream, &back).unwrap();
    let differing = |found: &[i64], want: &[i64]| found.iter().zip(want).filter(|(f, w)| f != w).count();
    for side in [Side::Left, Side::Right] {
        let want: Vec<i64> = queries
            .iter()
            .map(|&q| host_bound(&host_keys, f64::from(q), side))
            .collect();
        let found = a.searchsorted(&v, side, None).unwrap().to_vec().unwrap();
        assert!(found == want, "{side:?}: {} bounds differ", differing(&found, &want));
        let through = r.searchsorted(&v, side, Some(&sorter)).unwrap().to_vec().unwrap();
        assert!(
            through == want,
            "{side:?} through a sorter: {} bounds differ",
            differing(&through, &want)
        );
    }
}

/// More queries than one round of the bounds kernel takes (one a thread over the whole grid:
/// 1056 x 256 on a 132-SM card, fewer on smaller ones), with and without a sorter, against a host
/// binary search.
#[test]
fn many_queries_take_several_rounds_of_the_grid() {
    let Some(device) = common::device_or_skip("many_queries_take_several_rounds_of_the_grid") else {
        return;
    };
    let stream = device.create_stream().unwrap();
    let len = 1001;
    let queries_len = 5_000_003;
    let mut keys: Vec<f32> = values(len, 11, false);
    keys.sort_by(|a, b| numpy_cmp(f64::from(*a), f64::from(*b)));
    let queries: Vec<f32> = values(queries_len, 12, false);
    check_bounds_with_and_without_a_sorter(&stream, &keys, &queries);
    println!("{queries_len} queries match a host binary search on both sides, with and without a sorter");
}

#[test]
fn many_queries_into_keys_past_the_l2_cache_are_sorted_first() {
    let what = "many_queries_into_keys_past_the_l2_cache_are_sorted_first";
    let Some(device) = common::device_or_skip(what) else {
        return;
    };
    let stream = device.create_stream().unwrap();
    // 2^26 + 5 f32 keys (256 MiB and more) of any bits, and 2^20 + 7 queries, some of them keys,
    // with NaN, infinities and signed zeros among both: the queries are sorted before the
    // search, and each bound must land in its query's place.
    let mut state = 0x5eed_u64;
    let mut next = move || {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        state >> 32
    };
    let special = [f32::NAN, f32::INFINITY, f32::NEG_INFINITY, -0.0, 0.0];
    let mut any = || match next() % 50 {
        k @ 0..=4 => special[k as usize],
        _ => f32::from_bits(next() as u32),
    };
    let len = (1 << 26) + 5;
    let mut keys: Vec<f32> = (0..len).map(|_| any()).collect();
    keys.sort_unstable_by(|a, b| numpy_cmp(f64::from(*a), f64::from(*b)));
    let mut queries: Vec<f32> = (0..(1 << 20) + 7).map(|_| any()).collect();
    for (i, q) in queries.iter_mut().enumerate().step_by(97) {
        *q = keys[(i * 61) % len];
    }
    check_bounds_with_and_without_a_sorter(&stream, &keys, &queries);
    println!("2^20 + 7 sorted queries into 2^26 + 5 keys match a host binary search, with and without a sorter");
}

#[test]
fn sorted_queries_meet_runs_of_equal_keys_and_of_equal_queries() {
    let what = "sorted_queries_meet_runs_of_equal_keys_and_of_equal_queries";
    let Some(device) = common::device_or_skip(what) else {
        return;
    };
    let stream = device.create_stream().unwrap();
    // 2^25 + 3 i64 keys (256 MiB and more) in long runs of equal values, and 2^20 + 1 queries,
    // sorted before the search: a third of them one value (a long run of equal sorted queries),
    // the rest below, inside and above the keys' range, on the runs and between them.
    let len = (1usize << 25) + 3;
    let keys: Vec<i64> = (0..len).map(|i| 2 * (i as i64 / 40_000)).collect();
    let top = keys[len - 1];
    let queries: Vec<i64> = (0..(1usize << 20) + 1)
        .map(|i| match i % 3 {
            0 => 500,
            _ => (i as i64).wrapping_mul(2_654_435_761) % (top + 20) - 10,
        })
        .collect();
    let a = DeviceArray::from_slice(&stream, &keys).unwrap();
    let v = DeviceArray::from_slice(&stream, &queries).unwrap();
    for side in [Side::Left, Side::Right] {
        let want: Vec<i64> = queries
            .iter()
            .map(|&q| {
                keys.partition_point(|&k| match side {
                    Side::Left => k < q,
                    Side::Right => k <= q,
                }) as i64
            })
            .collect();
        let found = a.searchsorted(&v, side, None).unwrap().to_vec().unwrap();
        let differing = found.iter().zip(&want).filter(|(f, w)| f != w).count();
        assert!(found == want, "{side:?}: {differing} bounds differ");
    }
    println!("2^20 + 1 sorted queries into 2^25 + 3 i64 keys in runs match a host binary search on both sides");
}

/// One part of NumPy's line through (x0, y0) and (x1, y1) at `x` with `slope` (its C loop).
fn numpy_line_part(slope: f64, x: f64, (x0, y0): (f64, f64), (x1, y1): (f64, f64)) -> f64 {
    let value = slope * (x - x0) + y0;
    if !value.is_nan() {
        return value;
    }
    let value = slope * (x - x1) + y1;
    if value.is_nan() && y0 == y1 {
        y0
    } else {
        value
    }
}

/// A port of NumPy's `interp` loop (its bisection; `xp` sorted) for values of `V`, the line
/// between neighbours given by `between(x, j)`.
fn numpy_interp<V: Copy>(
    x: &[f64],
    (xp, fp): (&[f64], &[V]),
    (left, right): (Option<V>, Option<V>),
    nan: impl Fn(f64) -> V,
    between: impl Fn(f64, usize) -> V,
) -> Vec<V> {
    let len = xp.len();
    let (below, above) = (left.unwrap_or(fp[0]), right.unwrap_or(fp[len - 1]));
    x.iter()
        .map(|&v| {
            if len == 1 {
                return if v < xp[0] {
                    below
                } else if v > xp[0] {
                    above
                } else {
                    fp[0]
                };
            }
            if v.is_nan() {
                return nan(v);
            }
            if v > xp[len - 1] {
                return above;
            }
            if v < xp[0] {
                return below;
            }
            let j = xp.partition_point(|&p| v >= p) - 1;
            if j == len - 1 || xp[j] == v {
                fp[j]
            } else {
                between(v, j)
            }
        })
        .collect()
}

fn numpy_interp_real(x: &[f64], xp: &[f64], fp: &[f64], fill: (Option<f64>, Option<f64>)) -> Vec<f64> {
    numpy_interp(
        x,
        (xp, fp),
        fill,
        |v| v,
        |v, j| {
            let slope = (fp[j + 1] - fp[j]) / (xp[j + 1] - xp[j]);
            numpy_line_part(slope, v, (xp[j], fp[j]), (xp[j + 1], fp[j + 1]))
        },
    )
}

fn numpy_interp_complex(x: &[f64], xp: &[f64], fp: &[Complex<f64>]) -> Vec<Complex<f64>> {
    numpy_interp(
        x,
        (xp, fp),
        (None, None),
        |v| Complex::new(v, 0.0),
        |v, j| {
            let inverse = 1.0 / (xp[j + 1] - xp[j]);
            let (a, b) = (fp[j], fp[j + 1]);
            Complex::new(
                numpy_line_part((b.re - a.re) * inverse, v, (xp[j], a.re), (xp[j + 1], b.re)),
                numpy_line_part((b.im - a.im) * inverse, v, (xp[j], a.im), (xp[j + 1], b.im)),
            )
        },
    )
}

/// Bit-for-bit equality, every NaN equal.
fn same_bits(found: &[f64], want: &[f64]) -> bool {
    found.len() == want.len()
        && found
            .iter()
            .zip(want)
            .all(|(f, w)| f.to_bits() == w.to_bits() || (f.is_nan() && w.is_nan()))
}

/// `interp` against NumPy 2.4's values (printed by it) and against a port of its loop: NaN,
/// infinities and -0.0 among `x`, repeated sample points, infinite values (NaN lines and
/// NumPy's way around them), `left`/`right`, one sample point, complex values, integer and f32
/// inputs, `period`, random inputs, and the typed errors.
#[test]
fn interp_matches_numpy() {
    let Some(device) = common::device_or_skip("interp_matches_numpy") else {
        return;
    };
    let stream = device.create_stream().unwrap();
    let (nan, inf) = (f64::NAN, f64::INFINITY);
    let xp_host = [-2.0, -0.5, 0.0, 1.0, 1.0, 3.5, 7.25];
    let fp_host = [4.0, inf, 1.0, -2.0, 5.0, 5.0, 0.125];
    let x_host = [
        nan, -inf, -3.0, -2.0, -1.0, -0.5, -0.25, 0.0, 0.5, 1.0, 2.0, 3.5, 5.0, 7.25, 8.0, inf, -0.0,
    ];
    let x = DeviceArray::from_slice(&stream, &x_host).unwrap();
    let xp = DeviceArray::from_slice(&stream, &xp_host).unwrap();
    let fp = DeviceArray::from_slice(&stream, &fp_host).unwrap();
    // np.interp(x, xp, fp) and with left=-9.0, right=9.5.
    let numpy = [
        nan, 4.0, 4.0, 4.0, inf, inf, inf, 1.0, -0.5, 5.0, 5.0, 5.0, 3.05, 0.125, 0.125, 0.125, 1.0,
    ];
    let found = x.interp(&xp, &fp, None, None).unwrap().to_vec().unwrap();
    assert!(same_bits(&found, &numpy), "{found:?}");
    assert!(same_bits(
        &numpy_interp_real(&x_host, &xp_host, &fp_host, (None, None)),
        &numpy
    ));
    let mut filled = numpy;
    (filled[1], filled[2], filled[14], filled[15]) = (-9.0, -9.0, 9.5, 9.5);
    let found = x.interp(&xp, &fp, Some(-9.0), Some(9.5)).unwrap().to_vec().unwrap();
    assert!(same_bits(&found, &filled), "{found:?}");
    // One sample point: a NaN takes its value, as NumPy's.
    let one = DeviceArray::from_slice(&stream, &[2.0]).unwrap();
    let six = DeviceArray::from_slice(&stream, &[6.0]).unwrap();
    let found = x.interp(&one, &six, Some(-1.0), Some(1.0)).unwrap().to_vec().unwrap();
    let mut want = [-1.0; 17];
    (want[0], want[10]) = (6.0, 6.0);
    for k in [11, 12, 13, 14, 15] {
        want[k] = 1.0;
    }
    assert_eq!(found, want);
    // Infinite neighbours: NaN lines, the other neighbour's line, the shared value.
    let (xq, pq) = ([0.0, 1.0, 2.0, 3.0], [inf, inf, 1.0, -inf]);
    let found = DeviceArray::from_slice(&stream, &[0.5, 2.5])
        .unwrap()
        .interp(
            &DeviceArray::from_slice(&stream, &xq).unwrap(),
            &DeviceArray::from_slice(&stream, &pq).unwrap(),
            None,
            None,
        )
        .unwrap();
    assert_eq!(found.to_vec().unwrap(), [inf, -inf]);
    // Complex values: NaN + 0j for a NaN, each part on its own line.
    let parts = [
        (4.0, 0.0),
        (inf, 1.0),
        (1.0, 2.0),
        (-2.0, inf),
        (5.0, 3.0),
        (5.0, -1.0),
        (0.125, 0.5),
    ];
    let fc_host: Vec<Complex<f64>> = parts.iter().map(|&(re, im)| Complex::new(re, im)).collect();
    let fc = DeviceArray::from_slice(&stream, &fc_host).unwrap();
    let numpy_complex = [
        (nan, 0.0),
        (4.0, 0.0),
        (4.0, 0.0),
        (4.0, 0.0),
        (inf, 0.6666666666666666),
        (inf, 1.0),
        (inf, 1.5),
        (1.0, 2.0),
        (-0.5, inf),
        (5.0, 3.0),
        (5.0, 1.4),
        (5.0, -1.0),
        (3.05, -0.3999999999999999),
        (0.125, 0.5),
        (0.125, 0.5),
        (0.125, 0.5),
        (1.0, 2.0),
    ];
    let split = |values: &[Complex<f64>]| -> (Vec<f64>, Vec<f64>) { values.iter().map(|z| (z.re, z.im)).unzip() };
    let (want_re, want_im): (Vec<f64>, Vec<f64>) = numpy_complex.iter().copied().unzip();
    let (found_re, found_im) = split(&x.interp(&xp, &fc, None, None).unwrap().to_vec().unwrap());
    assert!(
        same_bits(&found_re, &want_re) && same_bits(&found_im, &want_im),
        "{found_re:?} {found_im:?}"
    );
    let (port_re, port_im) = split(&numpy_interp_complex(&x_host, &xp_host, &fc_host));
    assert!(same_bits(&port_re, &want_re) && same_bits(&port_im, &want_im));
    // Integer x and points, f32 values: converted to f64, as NumPy.
    let xi = DeviceArray::from_slice(&stream, &[0i32, 1, 2, 5]).unwrap();
    let xpi = DeviceArray::from_slice(&stream, &[1u8, 3, 4]).unwrap();
    let fpf = DeviceArray::from_slice(&stream, &[0.1f32, 0.2, 0.7]).unwrap();
    let want = numpy_interp_real(
        &[0.0, 1.0, 2.0, 5.0],
        &[1.0, 3.0, 4.0],
        &[0.1f32, 0.2, 0.7].map(f64::from),
        (None, None),
    );
    assert_eq!(xi.interp(&xpi, &fpf, None, None).unwrap().to_vec().unwrap(), want);
    // period=-360 (np.interp(xs, [350, 10, 190, 0], [1, 2, 3, 4], period=-360)).
    let xs = DeviceArray::from_slice(&stream, &[-1.0, 0.0, 0.3, 359.0, 361.0, 725.0, -725.0, 180.0]).unwrap();
    let points = DeviceArray::from_slice(&stream, &[350.0, 10.0, 190.0, 0.0]).unwrap();
    let values = DeviceArray::from_slice(&stream, &[1.0, 2.0, 3.0, 4.0]).unwrap();
    let found = xs.interp_periodic(&points, &values, -360.0).unwrap().to_vec().unwrap();
    let numpy_periodic = [
        3.6999999999999997,
        4.0,
        3.94,
        3.6999999999999997,
        3.8,
        3.0,
        2.5,
        2.9444444444444446,
    ];
    assert_eq!(found, numpy_periodic);
    // Random: 200,003 values (a 2-D x) into 1,000 sorted points with repeats, some values infinite.
    let mut state = 0x1e7e_u64;
    let mut next = move || {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        ((state >> 11) as f64) / (1u64 << 53) as f64
    };
    let mut points: Vec<f64> = (0..1000).map(|_| (next() * 200.0).round() / 2.0 - 50.0).collect();
    points.sort_by(f64::total_cmp);
    let values: Vec<f64> = (0..1000)
        .map(|k| if k % 97 == 0 { inf } else { next() * 10.0 - 5.0 })
        .collect();
    let queries: Vec<f64> = (0..200_003).map(|_| next() * 120.0 - 60.0).collect();
    let want = numpy_interp_real(&queries, &points, &values, (Some(-1.5), None));
    let found = DeviceArray::from_slice(&stream, &queries)
        .unwrap()
        .reshape([1, 200_003])
        .unwrap()
        .interp(
            &DeviceArray::from_slice(&stream, &points).unwrap(),
            &DeviceArray::from_slice(&stream, &values).unwrap(),
            Some(-1.5),
            None,
        )
        .unwrap();
    assert_eq!(found.shape(), [1, 200_003]);
    assert!(same_bits(&found.to_vec().unwrap(), &want));
    // Typed errors: no points, lengths that differ, 2-D points, a complex x, a zero period.
    let empty = DeviceArray::<f64>::from_slice(&stream, &[]).unwrap();
    assert!(matches!(
        x.interp(&empty, &empty, None, None),
        Err(Error::InvalidValue(_))
    ));
    assert!(matches!(x.interp(&xp, &six, None, None), Err(Error::InvalidValue(_))));
    let square = xp
        .slice(&[cuda_core::Slice::new(0, Some(4))])
        .unwrap()
        .reshape([2, 2])
        .unwrap();
    assert!(matches!(
        x.interp(&square, &square, None, None),
        Err(Error::InvalidValue(_))
    ));
    assert!(matches!(fc.interp(&xp, &fp, None, None), Err(Error::InvalidValue(_))));
    assert!(matches!(x.interp_periodic(&xp, &fp, 0.0), Err(Error::InvalidValue(_))));
    // An empty x gives an empty result.
    assert_eq!(empty.interp(&xp, &fp, None, None).unwrap().len(), 0);
}
