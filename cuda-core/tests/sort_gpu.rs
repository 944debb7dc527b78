//! The device-wide radix sort and the routines on it (`sort`, `argsort`, `unique`,
//! `intersect1d`, `setdiff1d`, `setxor1d`) on a GPU,
//! against a host reference: Rust's stable sort in NumPy's order (NaN last, `-0.0` equal to
//! `0.0`), for every element type, sizes around the block and across many blocks, ties, NaN,
//! infinities and signed zeros, sorted and reversed input, every axis, descending order, and
//! the typed errors of bad input; complex keys in NumPy's order (NaN patterns last); segmented
//! sorts of variable-length segments (empty ones, gaps, clamped offsets, none at all); pairs
//! with 16-byte values; keys with bytes every key has alike (whose passes the sort skips on the
//! device); the merge sort by a C++ comparator the same ways, and of struct keys. Results are compared bit for bit (a stable sort has one
//! answer). Without a driver or device each test prints `skipped: <why>` and passes, unless
//! `CUDA_REQUIRE_GPU=1`.

mod common;

use std::cmp::Ordering;

use cuda_core::algorithms::sort::{self, SortOrder};
use cuda_core::{Bool, Complex, DeviceArray, DeviceBuffer, Element, Error, QuantileMethod};
use cuda_driver::Stream;
use half::{bf16, f16};

/// A test element: made from random bits, compared in NumPy's order.
trait Key: Element + Copy + std::fmt::Debug {
    /// An element from `bits`: mostly a few small values (ties), sometimes any value, and for
    /// floats NaN (either sign), infinities and both zeros.
    fn make(bits: u64) -> Self;
    /// NumPy's order.
    fn numpy_cmp(a: &Self, b: &Self) -> Ordering;
    /// Whether the value holds a NaN (for complex values, in either part).
    fn has_nan(&self) -> bool {
        self.to_f64().is_nan()
    }
}

macro_rules! int_key {
    ($($t:ty),*) => {$(
        impl Key for $t {
            fn make(bits: u64) -> Self {
                match bits % 4 {
                    0 => (bits >> 8) as $t,
                    // Small values, and (below zero for signed types) just under a wrap.
                    _ => {
                        let small = ((bits >> 8) % 16) as $t;
                        if bits & 4 == 0 { small } else { small.wrapping_sub(8) }
                    }
                }
            }
            fn numpy_cmp(a: &Self, b: &Self) -> Ordering {
                a.cmp(b)
            }
        }
    )*};
}
int_key!(i8, i16, i32, i64, u8, u16, u32, u64);

impl Key for Bool {
    fn make(bits: u64) -> Self {
        Bool(((bits >> 8) & 1) as u8)
    }
    fn numpy_cmp(a: &Self, b: &Self) -> Ordering {
        a.get().cmp(&b.get())
    }
}

/// A float from `bits` as `f64` (converted to the element type by `from_f64`).
fn float_value(bits: u64) -> f64 {
    const SPECIAL: [f64; 8] = [
        f64::NAN,
        -f64::NAN,
        f64::INFINITY,
        f64::NEG_INFINITY,
        0.0,
        -0.0,
        1.5,
        -2.25,
    ];
    match bits % 8 {
        0 => SPECIAL[((bits >> 8) % 8) as usize],
        1 | 2 => ((bits >> 8) % 1000) as f64 / 7.0 - 70.0,
        _ => ((bits >> 8) % 9) as f64 - 4.0,
    }
}

/// NumPy's order on `f64`: NaN last, `-0.0 == 0.0`.
fn float_cmp(a: f64, b: f64) -> Ordering {
    match (a.is_nan(), b.is_nan()) {
        (true, true) => Ordering::Equal,
        (true, false) => Ordering::Greater,
        (false, true) => Ordering::Less,
        (false, false) => a.partial_cmp(&b).unwrap_or(Ordering::Equal),
    }
}

macro_rules! float_key {
    ($($t:ty),*) => {$(
        impl Key for $t {
            fn make(bits: u64) -> Self {
                <$t as Element>::from_f64(float_value(bits))
            }
            fn numpy_cmp(a: &Self, b: &Self) -> Ordering {
                float_cmp(a.to_f64(), b.to_f64())
            }
        }
    )*};
}
float_key!(f16, bf16, f32, f64);

/// NumPy's documented order of complex values: `R + Rj < R + nanj < nan + Rj < nan + nanj`
/// (R not NaN), values of one NaN pattern by their parts, real first (`-0.0 == 0.0`).
fn complex_cmp(a: (f64, f64), b: (f64, f64)) -> Ordering {
    let pattern = |z: (f64, f64)| (z.0.is_nan(), z.1.is_nan());
    pattern(a)
        .cmp(&pattern(b))
        .then_with(|| float_cmp(a.0, b.0))
        .then_with(|| float_cmp(a.1, b.1))
}

macro_rules! complex_key {
    ($($t:ty),*) => {$(
        impl Key for Complex<$t> {
            /// Parts from two draws of `float_value`: NaN (either sign), infinities, both zeros
            /// and ties in each part.
            fn make(bits: u64) -> Self {
                Complex::new(float_value(bits) as $t, float_value(bits.rotate_right(23)) as $t)
            }
            fn numpy_cmp(a: &Self, b: &Self) -> Ordering {
                complex_cmp((f64::from(a.re), f64::from(a.im)), (f64::from(b.re), f64::from(b.im)))
            }
            fn has_nan(&self) -> bool {
                self.re.is_nan() || self.im.is_nan()
            }
        }
    )*};
}
complex_key!(f32, f64);

/// `len` pseudo-random elements from `seed` (a 64-bit LCG).
fn data<T: Key>(len: usize, seed: u64) -> Vec<T> {
    let mut state = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..len)
        .map(|_| {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            T::make(state >> 11)
        })
        .collect()
}

/// The bytes of `values`, to compare elements bit for bit (NaN, `-0.0`).
fn bytes<T: Element>(values: &[T]) -> Vec<u8> {
    // SAFETY: `T` is plain data (`DeviceCopy`); the slice covers exactly the values' bytes.
    unsafe { std::slice::from_raw_parts(values.as_ptr().cast::<u8>(), std::mem::size_of_val(values)) }.to_vec()
}

/// The stable permutation that sorts `values` in NumPy's order (reversed for descending).
fn host_argsort<T: Key>(values: &[T], order: SortOrder) -> Vec<i64> {
    let mut index: Vec<usize> = (0..values.len()).collect();
    match order {
        SortOrder::Ascending => index.sort_by(|&a, &b| T::numpy_cmp(&values[a], &values[b])),
        SortOrder::Descending => index.sort_by(|&a, &b| T::numpy_cmp(&values[b], &values[a])),
    }
    index.into_iter().map(|i| i as i64).collect()
}

/// Sorts `host` on the device every way (keys, pairs, argsort, 1-D routines) and compares
/// with the host's stable sort.
fn check_sorts<T: Key>(stream: &Stream, host: &[T], what: &str) {
    let n = host.len();
    for order in [SortOrder::Ascending, SortOrder::Descending] {
        let expected_index = host_argsort(host, order);
        let expected: Vec<T> = expected_index.iter().map(|&i| host[i as usize]).collect();
        let keys = DeviceArray::from_slice(stream, host).unwrap();
        let mut out = DeviceArray::<T>::empty(stream, n).unwrap();
        sort::sort_keys::<T>(stream, &keys, &mut out, n, order).unwrap();
        assert_eq!(
            bytes(&out.to_vec().unwrap()),
            bytes(&expected),
            "{what} {:?} sort_keys {order:?} of {n}",
            T::DTYPE
        );
        let mut index = DeviceArray::<i64>::empty(stream, n).unwrap();
        sort::argsort::<T>(stream, &keys, &mut index, n, order).unwrap();
        assert_eq!(
            index.to_vec().unwrap(),
            expected_index,
            "{what} {:?} argsort {order:?} of {n}",
            T::DTYPE
        );
        // Pairs: the payload is the position as u32, so it must come out as the argsort.
        let payload: Vec<u32> = (0..n as u32).collect();
        let values = DeviceArray::from_slice(stream, &payload).unwrap();
        let mut keys_out = DeviceArray::<T>::empty(stream, n).unwrap();
        let mut values_out = DeviceArray::<u32>::empty(stream, n).unwrap();
        sort::sort_pairs::<T, u32>(stream, (&keys, &values), (&mut keys_out, &mut values_out), n, order).unwrap();
        assert_eq!(
            bytes(&keys_out.to_vec().unwrap()),
            bytes(&expected),
            "{what} pairs keys"
        );
        let moved: Vec<i64> = values_out.to_vec().unwrap().into_iter().map(i64::from).collect();
        assert_eq!(moved, expected_index, "{what} {:?} pairs values {order:?}", T::DTYPE);
    }
    let keys = DeviceArray::from_slice(stream, host).unwrap();
    let ascending = host_argsort(host, SortOrder::Ascending);
    let expected: Vec<T> = ascending.iter().map(|&i| host[i as usize]).collect();
    assert_eq!(
        bytes(&keys.sort(-1).unwrap().to_vec().unwrap()),
        bytes(&expected),
        "{what} sort(-1)"
    );
    assert_eq!(
        keys.argsort(0).unwrap().to_vec().unwrap(),
        ascending,
        "{what} argsort(0)"
    );
}

fn every_size<T: Key>(stream: &Stream) {
    for (i, n) in [0usize, 1, 2, 31, 255, 256, 257, 1000, 4097, 65_537, 300_001]
        .into_iter()
        .enumerate()
    {
        check_sorts::<T>(stream, &data::<T>(n, i as u64 + 1), "random");
    }
    let mut sorted = data::<T>(5000, 99);
    sorted.sort_by(T::numpy_cmp);
    check_sorts::<T>(stream, &sorted, "sorted");
    sorted.reverse();
    check_sorts::<T>(stream, &sorted, "reversed");
    check_sorts::<T>(stream, &[T::make(8 * 256 + 1); 3000], "all equal");
}

#[test]
fn every_type_sorts_as_numpy_stable_sort() {
    let Some(device) = common::device_or_skip("every_type_sorts_as_numpy_stable_sort") else {
        return;
    };
    let stream = device.create_stream().unwrap();
    every_size::<Bool>(&stream);
    every_size::<i8>(&stream);
    every_size::<i16>(&stream);
    every_size::<i32>(&stream);
    every_size::<i64>(&stream);
    every_size::<u8>(&stream);
    every_size::<u16>(&stream);
    every_size::<u32>(&stream);
    every_size::<u64>(&stream);
    every_size::<f16>(&stream);
    every_size::<bf16>(&stream);
    every_size::<f32>(&stream);
    every_size::<f64>(&stream);
    every_size::<Complex<f32>>(&stream);
    every_size::<Complex<f64>>(&stream);
    println!("every type sorts as NumPy's stable sort");
}

#[test]
fn ten_million_keys_sort_across_every_block() {
    let Some(device) = common::device_or_skip("ten_million_keys_sort_across_every_block") else {
        return;
    };
    let stream = device.create_stream().unwrap();
    let n = 10_000_000;
    for seed in [5u64, 6] {
        let host = data::<f32>(n, seed);
        let keys = DeviceArray::from_slice(&stream, &host).unwrap();
        let expected = host_argsort(&host, SortOrder::Ascending);
        assert_eq!(
            keys.argsort(-1).unwrap().to_vec().unwrap(),
            expected,
            "argsort of 10^7 f32"
        );
        let sorted: Vec<f32> = expected.iter().map(|&i| host[i as usize]).collect();
        assert_eq!(
            bytes(&keys.sort(0).unwrap().to_vec().unwrap()),
            bytes(&sorted),
            "sort of 10^7 f32"
        );
    }
    let host = data::<i32>(n, 7);
    let keys = DeviceArray::from_slice(&stream, &host).unwrap();
    let mut expected = host.clone();
    expected.sort();
    assert_eq!(keys.sort(-1).unwrap().to_vec().unwrap(), expected, "sort of 10^7 i32");
    println!("10^7 keys sort");
}

/// The host's stable sort of a row-major `shape` array along `axis`: (values, indices).
fn host_sort_axis<T: Key>(host: &[T], shape: &[usize], axis: usize) -> (Vec<T>, Vec<i64>) {
    let outer: usize = shape[..axis].iter().product();
    let extent = shape[axis];
    let inner: usize = shape[axis + 1..].iter().product();
    let mut values = host.to_vec();
    let mut indices = vec![0i64; host.len()];
    for o in 0..outer {
        for i in 0..inner {
            let at = |k: usize| (o * extent + k) * inner + i;
            let line: Vec<T> = (0..extent).map(|k| host[at(k)]).collect();
            let order = host_argsort(&line, SortOrder::Ascending);
            for (k, &j) in order.iter().enumerate() {
                values[at(k)] = line[j as usize];
                indices[at(k)] = j;
            }
        }
    }
    (values, indices)
}

fn check_axes<T: Key>(stream: &Stream, shape: &[usize], seed: u64) {
    let len: usize = shape.iter().product();
    let host = data::<T>(len, seed);
    let x = DeviceArray::from_slice(stream, &host)
        .unwrap()
        .reshape(shape.to_vec())
        .unwrap();
    let ndim = shape.len() as isize;
    for axis in -ndim..ndim {
        let normal = axis.rem_euclid(ndim) as usize;
        let (values, indices) = host_sort_axis(&host, shape, normal);
        let sorted = x.sort(axis).unwrap();
        assert_eq!(sorted.shape(), shape);
        assert_eq!(
            bytes(&sorted.to_vec().unwrap()),
            bytes(&values),
            "sort {shape:?} axis {axis} {:?}",
            T::DTYPE
        );
        assert_eq!(
            x.argsort(axis).unwrap().to_vec().unwrap(),
            indices,
            "argsort {shape:?} axis {axis} {:?}",
            T::DTYPE
        );
    }
}

#[test]
fn every_axis_sorts_each_line_alone() {
    let Some(device) = common::device_or_skip("every_axis_sorts_each_line_alone") else {
        return;
    };
    let stream = device.create_stream().unwrap();
    check_axes::<f32>(&stream, &[5, 7, 9], 1);
    check_axes::<i16>(&stream, &[3, 1, 4, 2], 2);
    check_axes::<f16>(&stream, &[6, 300], 3);
    // Complex rows: short ones by the block sort, long ones (3000) by the radix passes.
    check_axes::<Complex<f32>>(&stream, &[40, 3000], 5);
    check_axes::<Complex<f64>>(&stream, &[333, 7, 5], 6);
    // Many short rows (one block sorts each row of up to 2048): 70000 rows of 3, 2^17 + 1 of 2,
    // and rows of exactly 2048 and of 1000 (padded to 1024).
    check_axes::<f64>(&stream, &[70_000, 3], 4);
    check_axes::<u8>(&stream, &[(1 << 17) + 1, 2], 5);
    check_axes::<f32>(&stream, &[40, 2048], 10);
    check_axes::<i64>(&stream, &[50, 1000], 11);
    // Long rows (the global sort and then passes over the row index): a few rows, across
    // blocks (one row pass), 300 rows of 2049 (two row passes).
    check_axes::<bf16>(&stream, &[3, 100_000], 6);
    check_axes::<i8>(&stream, &[300, 2049], 12);
    // Empty axes, one-element axes.
    check_axes::<i32>(&stream, &[4, 0, 3], 7);
    check_axes::<u64>(&stream, &[1, 1], 8);
    // The raw row sort of a matrix, with its own row length.
    let host = data::<f32>(1024 * 33, 9);
    let keys = DeviceBuffer::from_slice(stream.context(), &host).unwrap();
    let mut out = DeviceBuffer::<f32>::zeroed(stream.context(), host.len()).unwrap();
    let mut index = DeviceBuffer::<i64>::zeroed(stream.context(), host.len()).unwrap();
    sort::sort_rows::<f32>(&stream, &keys, &mut out, (host.len(), 33), SortOrder::Descending).unwrap();
    sort::argsort_rows::<f32>(&stream, &keys, &mut index, (host.len(), 33), SortOrder::Descending).unwrap();
    stream.synchronize().unwrap();
    let (out, index) = (out.to_vec().unwrap(), index.to_vec().unwrap());
    for row in 0..1024 {
        let line = &host[row * 33..(row + 1) * 33];
        let expected = host_argsort(line, SortOrder::Descending);
        assert_eq!(index[row * 33..(row + 1) * 33], expected, "row {row}");
        let values: Vec<f32> = expected.iter().map(|&i| line[i as usize]).collect();
        assert_eq!(bytes(&out[row * 33..(row + 1) * 33]), bytes(&values), "row {row}");
    }
    // The raw row sort with rows too long for one block: 260 rows of 2100, descending.
    let (rows, row_len) = (260usize, 2100usize);
    let host = data::<f64>(rows * row_len, 13);
    let keys = DeviceBuffer::from_slice(stream.context(), &host).unwrap();
    let mut out = DeviceBuffer::<f64>::zeroed(stream.context(), host.len()).unwrap();
    let mut index = DeviceBuffer::<i64>::zeroed(stream.context(), host.len()).unwrap();
    sort::sort_rows::<f64>(&stream, &keys, &mut out, (host.len(), row_len), SortOrder::Descending).unwrap();
    sort::argsort_rows::<f64>(&stream, &keys, &mut index, (host.len(), row_len), SortOrder::Descending).unwrap();
    stream.synchronize().unwrap();
    let (out, index) = (out.to_vec().unwrap(), index.to_vec().unwrap());
    for row in 0..rows {
        let span = row * row_len..(row + 1) * row_len;
        let line = &host[span.clone()];
        let expected = host_argsort(line, SortOrder::Descending);
        assert_eq!(index[span.clone()], expected, "long row {row}");
        let values: Vec<f64> = expected.iter().map(|&i| line[i as usize]).collect();
        assert_eq!(bytes(&out[span]), bytes(&values), "long row {row}");
    }
    println!("every axis sorts each line alone");
}

/// `sort_rows` and `argsort_rows` of `rows` rows of `row_len` keys (longer than one block
/// sorts: the key's passes, then the row's), both orders, against the host's sort of each row.
fn check_long_rows<T: Key>(stream: &Stream, (rows, row_len): (usize, usize), seed: u64) {
    check_rows_of(stream, &data::<T>(rows * row_len, seed), row_len);
}

/// `sort_rows` and `argsort_rows` of `host` in rows of `row_len`, both orders, against the
/// host's sort of each row.
fn check_rows_of<T: Key>(stream: &Stream, host: &[T], row_len: usize) {
    let rows = host.len() / row_len;
    let keys = DeviceBuffer::from_slice(stream.context(), host).unwrap();
    for order in [SortOrder::Ascending, SortOrder::Descending] {
        let mut out = DeviceBuffer::<T>::zeroed(stream.context(), host.len()).unwrap();
        let mut index = DeviceBuffer::<i64>::zeroed(stream.context(), host.len()).unwrap();
        sort::sort_rows::<T>(stream, &keys, &mut out, (host.len(), row_len), order).unwrap();
        sort::argsort_rows::<T>(stream, &keys, &mut index, (host.len(), row_len), order).unwrap();
        stream.synchronize().unwrap();
        let (out, index) = (out.to_vec().unwrap(), index.to_vec().unwrap());
        for row in 0..rows {
            let span = row * row_len..(row + 1) * row_len;
            let line = &host[span.clone()];
            let expected = host_argsort(line, order);
            assert_eq!(
                index[span.clone()],
                expected,
                "{:?} {rows} x {row_len} {order:?}: indices of row {row}",
                T::DTYPE
            );
            let values: Vec<T> = expected.iter().map(|&i| line[i as usize]).collect();
            assert_eq!(
                bytes(&out[span]),
                bytes(&values),
                "{:?} {rows} x {row_len} {order:?}: keys of row {row}",
                T::DTYPE
            );
        }
    }
}

#[test]
fn long_argsorts_write_i64_indices_after_every_pass_count() {
    let Some(device) = common::device_or_skip("long_argsorts_write_i64_indices_after_every_pass_count") else {
        return;
    };
    let stream = device.create_stream().unwrap();
    // The indices travel as u32 and the last pass writes them as i64 (within the row): after
    // one key pass and one row pass (u8), two and one (i16), four and two (f32: 300 rows),
    // eight and one (f64), with ties, NaN of both signs, infinities and signed zeros.
    check_long_rows::<u8>(&stream, (7, 3000), 31);
    check_long_rows::<i16>(&stream, (5, 4096), 32);
    check_long_rows::<f32>(&stream, (300, 2500), 33);
    check_long_rows::<f64>(&stream, (3, 70_000), 34);
    // One row (no row pass): the flat indices, from one pass (u8, generated and written by the
    // same pass), two (f16) and four (f32), both orders.
    check_long_rows::<u8>(&stream, (1, 100_003), 35);
    check_long_rows::<f16>(&stream, (1, 50_001), 36);
    check_long_rows::<f32>(&stream, (1, 1 << 20), 37);
    // argsort of more keys than one block sorts, descending, all ties but a few NaNs: the
    // stable order of the ties is the input order.
    let n = 70_001;
    let host: Vec<f32> = (0..n).map(|i| if i % 1000 == 7 { f32::NAN } else { 1.0 }).collect();
    let keys = DeviceArray::from_slice(&stream, &host).unwrap();
    for order in [SortOrder::Ascending, SortOrder::Descending] {
        let mut index = DeviceArray::<i64>::empty(&stream, n).unwrap();
        sort::argsort::<f32>(&stream, &keys, &mut index, n, order).unwrap();
        assert_eq!(
            index.to_vec().unwrap(),
            host_argsort(&host, order),
            "ties and NaN {order:?}"
        );
    }
    println!("long argsorts write i64 indices after every pass count");
}

/// `len` pseudo-random 64-bit words from `seed` (the LCG of [`data`]).
fn words(len: usize, seed: u64) -> Vec<u64> {
    let mut state = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..len)
        .map(|_| {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            state >> 11
        })
        .collect()
}

#[test]
fn passes_on_constant_key_bytes_are_skipped_and_sorts_stay_exact() {
    let Some(device) = common::device_or_skip("passes_on_constant_key_bytes_are_skipped_and_sorts_stay_exact") else {
        return;
    };
    let stream = device.create_stream().unwrap();
    // More keys than one block sorts (2048), so that argsort takes the radix passes too: the
    // passes whose byte is the same in every key (after the order-preserving map) are skipped
    // on the device, and the passes that run must still end in the outputs, the payloads and
    // the i64 indices with them, both orders (check_sorts).
    let n = 5000;
    let w = words(n, 41);
    // i64 below 2^20 (bytes 3..7 constant) and all equal (only pass 0 runs, writing the output).
    let small: Vec<i64> = w.iter().map(|&x| (x % (1 << 20)) as i64).collect();
    check_sorts::<i64>(&stream, &small, "i64 below 2^20");
    check_sorts::<i64>(&stream, &[-77i64; 4000], "i64 all equal");
    // u64 whose top byte alone varies (passes 1..6 skipped, the last runs), and whose byte 0 is
    // constant while byte 5 varies (pass 0 runs even though its byte is constant).
    let top: Vec<u64> = w.iter().map(|&x| (x % 256) << 56 | 0x0012_3456_789a_bcde).collect();
    check_sorts::<u64>(&stream, &top, "u64 top byte");
    let middle: Vec<u64> = w.iter().map(|&x| (x % 7) << 40 | 0x77).collect();
    check_sorts::<u64>(&stream, &middle, "u64 byte 5");
    // u32 all equal but byte 0; u32 with bytes 0 and 2 varying (1 and 3 skipped: an odd
    // count of passes runs, so the output is written from the first scratch buffer).
    let low: Vec<u32> = w.iter().map(|&x| 0xdead_be00 | (x & 0xff) as u32).collect();
    check_sorts::<u32>(&stream, &low, "u32 byte 0");
    let two: Vec<u32> = w.iter().map(|&x| (x & 0x00ff_00ff) as u32 | 0x4400_2200).collect();
    check_sorts::<u32>(&stream, &two, "u32 bytes 0 and 2");
    // i16 of one sign (byte 1 constant) and of both (it varies).
    let positive: Vec<i16> = w.iter().map(|&x| (x % 200) as i16).collect();
    check_sorts::<i16>(&stream, &positive, "i16 0..200");
    let signed: Vec<i16> = w.iter().map(|&x| (x % 200) as i16 - 100).collect();
    check_sorts::<i16>(&stream, &signed, "i16 -100..100");
    // f64 of one exponent ([1, 2) in steps of 2^-10: the low mantissa bytes constant), with
    // ties; signed zeros alone (one key after the map: every pass but the first skipped); and
    // the same with NaNs (which make every byte vary).
    let one_exponent: Vec<f64> = w.iter().map(|&x| 1.0 + (x % 1024) as f64 / 1024.0).collect();
    check_sorts::<f64>(&stream, &one_exponent, "f64 in [1, 2)");
    let zeros: Vec<f64> = w.iter().map(|&x| if x & 1 == 0 { 0.0 } else { -0.0 }).collect();
    check_sorts::<f64>(&stream, &zeros, "f64 signed zeros");
    let with_nan: Vec<f64> = one_exponent
        .iter()
        .enumerate()
        .map(|(i, &x)| if i % 97 == 3 { f64::NAN } else { x })
        .collect();
    check_sorts::<f64>(&stream, &with_nan, "f64 in [1, 2) and NaN");
    // f32 small integers, and complex128 keys (two words) whose parts are small integers.
    let floats: Vec<f32> = w.iter().map(|&x| (x % 50) as f32).collect();
    check_sorts::<f32>(&stream, &floats, "f32 small integers");
    let complex: Vec<Complex<f64>> = w
        .iter()
        .map(|&x| Complex::new((x % 5) as f64, ((x >> 8) % 3) as f64 - 1.0))
        .collect();
    check_sorts::<Complex<f64>>(&stream, &complex, "complex128 small parts");
    // Row sorts (key passes, some skipped, then the row passes, which always run) and one long
    // row, keys and i64 indices within the row.
    let rows: Vec<i64> = words(3 * 4000, 42).iter().map(|&x| (x % 1000) as i64).collect();
    check_rows_of::<i64>(&stream, &rows, 4000);
    check_rows_of::<u32>(&stream, &low, n);
    // Segmented sorts (key passes, then the label passes).
    let keys: Vec<i64> = words(20_000, 43).iter().map(|&x| (x % 300) as i64).collect();
    check_segmented::<i64>(&stream, &keys, &segments_of(20_000, 3000, 44), "i64 below 300");
    println!("passes on constant key bytes are skipped and sorts stay exact");
}

#[test]
fn unique_matches_numpy() {
    let Some(device) = common::device_or_skip("unique_matches_numpy") else {
        return;
    };
    let stream = device.create_stream().unwrap();
    fn check<T: Key>(stream: &Stream, host: &[T], shape: &[usize]) {
        let x = DeviceArray::from_slice(stream, host)
            .unwrap()
            .reshape(shape.to_vec())
            .unwrap();
        let (values, first, counts, inverse) = host_unique_all(host);
        assert_eq!(
            bytes(&x.unique().unwrap().to_vec().unwrap()),
            bytes(&host_unique(host)),
            "unique {:?}",
            T::DTYPE
        );
        let all = x.unique_all().unwrap();
        assert_eq!(bytes(&all.values.to_vec().unwrap()), bytes(&values));
        assert_eq!(all.indices.to_vec().unwrap(), first, "unique indices {:?}", T::DTYPE);
        assert_eq!(all.counts.to_vec().unwrap(), counts, "unique counts {:?}", T::DTYPE);
        assert_eq!(all.inverse.shape(), shape);
        assert_eq!(all.inverse.to_vec().unwrap(), inverse, "unique inverse {:?}", T::DTYPE);
    }
    check::<f32>(&stream, &data::<f32>(100_000, 1), &[100, 1000]);
    check::<f64>(&stream, &data::<f64>(777, 2), &[777]);
    check::<i64>(&stream, &data::<i64>(5000, 3), &[50, 100]);
    check::<u8>(&stream, &data::<u8>(300_000, 4), &[300_000]);
    check::<f16>(&stream, &data::<f16>(1, 5), &[1]);
    check::<i32>(&stream, &[], &[0]);
    check::<Bool>(&stream, &data::<Bool>(1000, 6), &[10, 100]);
    check::<Complex<f32>>(&stream, &data::<Complex<f32>>(100_000, 7), &[100, 1000]);
    check::<Complex<f64>>(&stream, &data::<Complex<f64>>(4001, 8), &[4001]);
    // NumPy 2.4: x = [nan+1j, 1+nanj, 2, nan+nanj, 1+1j, -0+0j, 0-0j, 1+nanj, nan-5j];
    // np.argsort(x, kind="stable") == [5, 6, 4, 2, 1, 7, 8, 0, 3]; np.unique(x) ==
    // [-0+0j, 1+1j, 2, nan+1j] (the first value holding a NaN, in input order), while with
    // return_index=True the values end in 1+nanj, with indices [5, 4, 2, 1], inverse
    // [3, 3, 2, 3, 1, 0, 0, 3, 3] and counts [2, 1, 1, 5].
    let z = numpy_complex_sample::<f64>();
    let x = DeviceArray::from_slice(&stream, &z).unwrap();
    assert_eq!(x.argsort(0).unwrap().to_vec().unwrap(), [5, 6, 4, 2, 1, 7, 8, 0, 3]);
    let plain = [z[5], z[4], z[2], z[0]];
    assert_eq!(bytes(&x.unique().unwrap().to_vec().unwrap()), bytes(&plain));
    let all = x.unique_all().unwrap();
    assert_eq!(bytes(&all.values.to_vec().unwrap()), bytes(&[z[5], z[4], z[2], z[1]]));
    assert_eq!(all.indices.to_vec().unwrap(), [5, 4, 2, 1]);
    assert_eq!(all.inverse.to_vec().unwrap(), [3, 3, 2, 3, 1, 0, 0, 3, 3]);
    assert_eq!(all.counts.to_vec().unwrap(), [2, 1, 1, 5]);
    // All NaNs are one element, as NumPy 2's equal_nan=True; -0.0 and 0.0 are one.
    let special = [f32::NAN, 0.0, -f32::NAN, -0.0, 1.0, f32::NAN, 0.0];
    let x = DeviceArray::from_slice(&stream, &special).unwrap();
    let unique = x.unique().unwrap().to_vec().unwrap();
    assert_eq!(unique.len(), 3);
    assert_eq!((unique[0].to_bits(), unique[1]), (0.0f32.to_bits(), 1.0));
    assert!(unique[2].is_nan());
    println!("unique matches numpy");
}

/// NumPy's `unique(return_index=True, return_inverse=True, return_counts=True)` on the host:
/// the first of each run of equal elements in the stable order (every value holding a NaN equal
/// to every other, NumPy 2's `equal_nan`), its index, the counts, and each element's run.
fn host_unique_all<T: Key>(host: &[T]) -> (Vec<T>, Vec<i64>, Vec<i64>, Vec<i64>) {
    let (mut values, mut first, mut counts, mut inverse) =
        (Vec::<T>::new(), Vec::new(), Vec::new(), vec![0i64; host.len()]);
    for i in host_argsort(host, SortOrder::Ascending) {
        let v = host[i as usize];
        let repeated = values
            .last()
            .is_some_and(|last| T::numpy_cmp(last, &v) == Ordering::Equal || last.has_nan() && v.has_nan());
        if !repeated {
            values.push(v);
            first.push(i);
            counts.push(0i64);
        }
        *counts.last_mut().unwrap() += 1;
        inverse[i as usize] = values.len() as i64 - 1;
    }
    (values, first, counts, inverse)
}

/// NumPy 2.4's `unique` (values only) on the host: as [`host_unique_all`]'s values, the value
/// standing for those holding a NaN being the first of them in the input.
fn host_unique<T: Key>(host: &[T]) -> Vec<T> {
    let mut values = host_unique_all(host).0;
    if let (Some(last), Some(first_nan)) = (values.last_mut(), host.iter().find(|v| v.has_nan())) {
        if last.has_nan() {
            *last = *first_nan;
        }
    }
    values
}

/// Whether `v` equals an element of `test` (NaN equals nothing, as NumPy's `isin`).
fn host_isin<T: Key>(v: &T, test: &[T]) -> bool {
    !v.has_nan() && test.iter().any(|t| T::numpy_cmp(v, t) == Ordering::Equal)
}

#[test]
fn intersect1d_and_setdiff1d_match_numpy() {
    let Some(device) = common::device_or_skip("intersect1d_and_setdiff1d_match_numpy") else {
        return;
    };
    let stream = device.create_stream().unwrap();
    fn check<T: Key + cuda_core::Scalars + cuda_core::Promote<T>>(stream: &Stream, a: &[T], b: &[T]) {
        let x = DeviceArray::from_slice(stream, a).unwrap();
        let y = DeviceArray::from_slice(stream, b).unwrap();
        let distinct = host_unique(a);
        let both: Vec<T> = distinct.iter().copied().filter(|v| host_isin(v, b)).collect();
        let only: Vec<T> = distinct.iter().copied().filter(|v| !host_isin(v, b)).collect();
        let what = (T::DTYPE, a.len(), b.len());
        assert_eq!(
            bytes(&x.intersect1d(&y).unwrap().to_vec().unwrap()),
            bytes(&both),
            "intersect1d {what:?}"
        );
        assert_eq!(
            bytes(&x.setdiff1d(&y).unwrap().to_vec().unwrap()),
            bytes(&only),
            "setdiff1d {what:?}"
        );
        // NumPy's setxor1d: both arrays' distinct elements, sorted, each kept where it equals
        // neither neighbour (NaN equals nothing, so every NaN stays).
        let mut joined = distinct.clone();
        joined.extend(host_unique(b));
        joined.sort_by(T::numpy_cmp);
        let equal = |p: &T, q: &T| !p.has_nan() && !q.has_nan() && T::numpy_cmp(p, q) == Ordering::Equal;
        let either: Vec<T> = (0..joined.len())
            .filter(|&i| {
                (i == 0 || !equal(&joined[i - 1], &joined[i]))
                    && (i + 1 == joined.len() || !equal(&joined[i], &joined[i + 1]))
            })
            .map(|i| joined[i])
            .collect();
        let got = x.setxor1d(&y).unwrap().to_vec().unwrap();
        assert_eq!(got.len(), either.len(), "setxor1d {what:?}");
        // Equal values, or both holding a NaN (the two arrays' NaNs may differ in their bits).
        for (g, e) in got.iter().zip(&either) {
            assert!(equal(g, e) || (g.has_nan() && e.has_nan()), "setxor1d {what:?}");
        }
    }
    check::<f32>(&stream, &data::<f32>(100_000, 11), &data::<f32>(3000, 12));
    check::<f64>(&stream, &data::<f64>(777, 13), &data::<f64>(50, 14));
    check::<i64>(&stream, &data::<i64>(5000, 15), &data::<i64>(5000, 16));
    check::<u8>(&stream, &data::<u8>(300_000, 17), &data::<u8>(10, 18));
    check::<f16>(&stream, &data::<f16>(1, 19), &data::<f16>(1, 19));
    check::<i32>(&stream, &[], &data::<i32>(9, 20));
    check::<i32>(&stream, &data::<i32>(9, 21), &[]);
    check::<Complex<f32>>(
        &stream,
        &data::<Complex<f32>>(50_000, 22),
        &data::<Complex<f32>>(2000, 23),
    );
    check::<Complex<f64>>(&stream, &data::<Complex<f64>>(999, 24), &data::<Complex<f64>>(999, 25));
    // NumPy 2.4, x as in unique_matches_numpy: np.intersect1d(x, [1+nanj, 2, 0]) == [-0+0j, 2];
    // np.setdiff1d(x, [2]) == [-0+0j, 1+1j, nan+1j]; np.union1d(x, [3j]) ==
    // [-0+0j, 3j, 1+1j, 2, nan+1j]; np.isin(x, [1+nanj, 2, 0]) is true at 2, 5 and 6.
    let z = numpy_complex_sample::<f32>();
    let nan = f32::NAN;
    let x = DeviceArray::from_slice(&stream, &z).unwrap();
    let test = DeviceArray::from_slice(
        &stream,
        &[Complex::new(1.0, nan), Complex::new(2.0, 0.0), Complex::new(0.0, 0.0)],
    )
    .unwrap();
    assert_eq!(
        bytes(&x.intersect1d(&test).unwrap().to_vec().unwrap()),
        bytes(&[z[5], z[2]])
    );
    let two = DeviceArray::from_slice(&stream, &[Complex::new(2.0f32, 0.0)]).unwrap();
    assert_eq!(
        bytes(&x.setdiff1d(&two).unwrap().to_vec().unwrap()),
        bytes(&[z[5], z[4], z[0]])
    );
    let three = DeviceArray::from_slice(&stream, &[Complex::new(0.0f32, 3.0)]).unwrap();
    assert_eq!(
        bytes(&x.union1d(&three).unwrap().to_vec().unwrap()),
        bytes(&[z[5], Complex::new(0.0, 3.0), z[4], z[2], z[0]])
    );
    let found: Vec<bool> = x
        .isin(&test)
        .unwrap()
        .to_vec()
        .unwrap()
        .iter()
        .map(|b| b.get())
        .collect();
    assert_eq!(found, [false, false, true, false, false, true, true, false, false]);
    // np.intersect1d([1, 3, 4, 3], [3, 1, 2, 1]) == [1, 3]; np.setdiff1d([1, 2, 3, 2, 4, 1],
    // [3, 4, 5, 6]) == [1, 2]; NaN is in no intersection and stays in a difference, once.
    let a = DeviceArray::from_slice(&stream, &[1i32, 3, 4, 3]).unwrap();
    let b = DeviceArray::from_slice(&stream, &[3i32, 1, 2, 1]).unwrap();
    assert_eq!(a.intersect1d(&b).unwrap().to_vec().unwrap(), [1, 3]);
    let a = DeviceArray::from_slice(&stream, &[1i32, 2, 3, 2, 4, 1]).unwrap();
    let b = DeviceArray::from_slice(&stream, &[3i32, 4, 5, 6]).unwrap();
    assert_eq!(a.setdiff1d(&b).unwrap().to_vec().unwrap(), [1, 2]);
    let a = DeviceArray::from_slice(&stream, &[f32::NAN, 2.0, f32::NAN, -0.0]).unwrap();
    let b = DeviceArray::from_slice(&stream, &[f32::NAN, 0.0]).unwrap();
    let common = a.intersect1d(&b).unwrap().to_vec().unwrap();
    assert_eq!(common.len(), 1);
    assert_eq!(common[0], 0.0);
    let rest = a.setdiff1d(&b).unwrap().to_vec().unwrap();
    assert_eq!((rest.len(), rest[0]), (2, 2.0));
    assert!(rest[1].is_nan());
    // A 2-D argument is flattened, as NumPy's.
    let grid = DeviceArray::from_slice(&stream, &[5i64, 1, 5, 2, 9, 1])
        .unwrap()
        .reshape(vec![2, 3])
        .unwrap();
    let few = DeviceArray::from_slice(&stream, &[1i64, 9]).unwrap();
    assert_eq!(grid.intersect1d(&few).unwrap().to_vec().unwrap(), [1, 9]);
    assert_eq!(grid.setdiff1d(&few).unwrap().to_vec().unwrap(), [2, 5]);
    println!("intersect1d and setdiff1d match numpy");
}

/// NumPy's `unique(x, axis=0)` of the `rows x width` matrix `host`: the rows sorted
/// element by element in NumPy's order, a row dropped when it equals the one before (NaN equals
/// nothing there).
fn host_unique_rows<T: Key>(host: &[T], width: usize) -> Vec<T> {
    let mut rows: Vec<&[T]> = host.chunks(width).collect();
    rows.sort_by(|a, b| {
        a.iter()
            .zip(b.iter())
            .map(|(x, y)| T::numpy_cmp(x, y))
            .find(|o| *o != Ordering::Equal)
            .unwrap_or(Ordering::Equal)
    });
    let mut kept: Vec<&[T]> = Vec::new();
    for row in rows {
        let equal = |last: &&[T]| last.iter().zip(row.iter()).all(|(x, y)| x.to_f64() == y.to_f64());
        if !kept.last().is_some_and(equal) {
            kept.push(row);
        }
    }
    kept.concat()
}

#[test]
fn unique_along_an_axis_matches_numpy() {
    let Some(device) = common::device_or_skip("unique_along_an_axis_matches_numpy") else {
        return;
    };
    let stream = device.create_stream().unwrap();
    fn check<T: Key + cuda_core::Scalars + cuda_core::Promote<T>>(
        stream: &Stream,
        rows: usize,
        width: usize,
        seed: u64,
    ) {
        // Few distinct values so that rows repeat.
        let host: Vec<T> = data::<T>(rows * width, seed);
        let x = DeviceArray::from_slice(stream, &host)
            .unwrap()
            .reshape(vec![rows, width])
            .unwrap();
        let expected = host_unique_rows(&host, width);
        let got = x.unique_axis(0).unwrap();
        assert_eq!(got.shape(), [expected.len() / width.max(1), width], "{:?}", T::DTYPE);
        let got = got.to_vec().unwrap();
        let same = got.len() == expected.len()
            && got
                .iter()
                .zip(&expected)
                .all(|(a, b)| T::numpy_cmp(a, b) == Ordering::Equal);
        assert!(same, "unique rows {:?}: {got:?} != {expected:?}", T::DTYPE);
        // Along the last axis of the transpose: the same slices, as columns.
        let by_columns = x.transpose().unique_axis(-1).unwrap();
        assert_eq!(by_columns.transpose().to_vec().unwrap().len(), got.len());
        let columns = by_columns.transpose().to_contiguous().unwrap().to_vec().unwrap();
        assert!(columns
            .iter()
            .zip(&got)
            .all(|(a, b)| T::numpy_cmp(a, b) == Ordering::Equal));
    }
    check::<u8>(&stream, 3000, 2, 31);
    check::<i32>(&stream, 500, 3, 32);
    check::<f32>(&stream, 2000, 2, 33);
    check::<f64>(&stream, 1, 4, 34);
    check::<i64>(&stream, 7, 1, 35);
    // np.unique([[1, 0, 0], [1, 0, 0], [2, 3, 4]], axis=0) == [[1, 0, 0], [2, 3, 4]], and
    // axis=1 of it: the columns [0, 0, 3], [0, 0, 4], [1, 1, 2] (sorted), as a 3 x 3 array.
    let m = DeviceArray::from_slice(&stream, &[1i32, 0, 0, 1, 0, 0, 2, 3, 4])
        .unwrap()
        .reshape(vec![3, 3])
        .unwrap();
    let rows = m.unique_axis(0).unwrap();
    assert_eq!(rows.shape(), [2, 3]);
    assert_eq!(rows.to_vec().unwrap(), [1, 0, 0, 2, 3, 4]);
    let columns = m.unique_axis(1).unwrap();
    assert_eq!(columns.shape(), [3, 3]);
    assert_eq!(columns.to_vec().unwrap(), [0, 0, 1, 0, 0, 1, 3, 4, 2]);
    // 3-D along the middle axis: slices are 2 x 2 blocks.
    let cube = DeviceArray::from_slice(&stream, &[5i64, 1, 5, 9, 1, 5, 2, 1, 2, 5, 3, 3])
        .unwrap()
        .reshape(vec![2, 3, 2])
        .unwrap();
    // Slices j: [[5, 1], [2, 1]], [[5, 9], [2, 5]], [[1, 5], [3, 3]] in C order: sorted as
    // (1, 5, 3, 3), (5, 1, 2, 1), (5, 9, 2, 5).
    let middle = cube.unique_axis(-2).unwrap();
    assert_eq!(middle.shape(), [2, 3, 2]);
    assert_eq!(middle.to_vec().unwrap(), [1, 5, 5, 1, 5, 9, 3, 3, 2, 1, 2, 5]);
    // Rows holding NaN are each their own; -0.0 equals 0.0.
    let nan = DeviceArray::from_slice(&stream, &[f32::NAN, 1.0, f32::NAN, 1.0, -0.0, 2.0, 0.0, 2.0])
        .unwrap()
        .reshape(vec![4, 2])
        .unwrap();
    let kept = nan.unique_axis(0).unwrap();
    assert_eq!(kept.shape(), [3, 2]);
    let kept = kept.to_vec().unwrap();
    assert_eq!((kept[0], kept[1]), (0.0, 2.0));
    assert!(kept[2].is_nan() && kept[4].is_nan());
    // Empty and out-of-range axes.
    let empty = DeviceArray::<f32>::empty(&stream, vec![0, 3]).unwrap();
    assert_eq!(empty.unique_axis(0).unwrap().shape(), [0, 3]);
    assert_eq!(empty.unique_axis(1).unwrap().shape(), [0, 1]);
    assert!(matches!(m.unique_axis(2), Err(Error::Axis { .. })));
    println!("unique along an axis matches numpy");
}

#[test]
fn bad_input_is_a_typed_error() {
    let Some(device) = common::device_or_skip("bad_input_is_a_typed_error") else {
        return;
    };
    let stream = device.create_stream().unwrap();
    let x = DeviceArray::from_slice(&stream, &[3.0f32, 1.0, 2.0, 0.0]).unwrap();
    // A 0-d array has no axis; axes past the dimensions are NumPy's AxisError.
    let scalar = x.reshape_view(vec![4]).unwrap().index_axis(0, 1).unwrap();
    assert_eq!(scalar.ndim(), 0);
    assert!(matches!(scalar.sort(-1), Err(Error::Axis { .. })));
    assert!(matches!(x.sort(1), Err(Error::Axis { .. })));
    assert!(matches!(x.argsort(-2), Err(Error::Axis { .. })));
    // Outputs that overlap an input, or are too short, are refused before anything runs.
    let mut alias = x.reshape_view(vec![2, 2]).unwrap();
    assert!(matches!(
        sort::sort_keys::<f32>(&stream, &x, &mut alias, 4, SortOrder::Ascending),
        Err(Error::InvalidValue(_))
    ));
    let mut short = DeviceArray::<f32>::empty(&stream, 3).unwrap();
    assert!(matches!(
        sort::sort_keys::<f32>(&stream, &x, &mut short, 4, SortOrder::Ascending),
        Err(Error::InvalidValue(_))
    ));
    let mut index = DeviceArray::<i64>::empty(&stream, 4).unwrap();
    assert!(matches!(
        sort::argsort_rows::<f32>(&stream, &x, &mut index, (4, 3), SortOrder::Ascending),
        Err(Error::InvalidValue(_))
    ));
    assert!(matches!(
        sort::sort_keys::<f32>(&stream, &x, &mut index, usize::MAX / 2, SortOrder::Ascending),
        Err(Error::InvalidValue(_))
    ));
    // A view that is not dense is refused by the device-memory contract.
    let matrix = DeviceArray::from_slice(&stream, &[1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0])
        .unwrap()
        .reshape(vec![2, 3])
        .unwrap();
    let mut six = DeviceArray::<f32>::empty(&stream, 6).unwrap();
    assert!(matches!(
        sort::sort_keys::<f32>(&stream, &matrix.transpose(), &mut six, 6, SortOrder::Ascending),
        Err(Error::Driver(cuda_core::driver::Error::NotDense { .. }))
    ));
    // In place, through a strided view: each column of a matrix sorted where it is.
    let mut matrix = DeviceArray::from_slice(&stream, &[3i32, 9, 1, 8, 2, 7])
        .unwrap()
        .reshape(vec![3, 2])
        .unwrap();
    matrix.sort_in_place(0).unwrap();
    assert_eq!(matrix.to_vec().unwrap(), [1, 7, 2, 8, 3, 9]);
    let mut other = DeviceArray::from_slice(&stream, &[1i32, 9, 2, 7, 3, 8])
        .unwrap()
        .reshape(vec![3, 2])
        .unwrap();
    let mut column = other
        .slice(&[cuda_core::Slice::new(0, None), cuda_core::Slice::at(1)])
        .unwrap();
    // `Slice::at` keeps the axis (shape [3, 1], NumPy's `other[:, 1:2]`): the column is axis 0;
    // axis -1 would sort rows of one element.
    assert_eq!(column.shape(), [3, 1]);
    column.sort_in_place(0).unwrap();
    assert_eq!(other.to_vec().unwrap(), [1, 7, 2, 8, 3, 9]);
    other.sort_in_place(0).unwrap();
    assert_eq!(other.to_vec().unwrap(), [1, 7, 2, 8, 3, 9]);
    // The input is untouched by the sorts above and by a good one.
    let mut out = DeviceArray::<f32>::empty(&stream, 4).unwrap();
    sort::sort_keys::<f32>(&stream, &x, &mut out, 4, SortOrder::Ascending).unwrap();
    assert_eq!(out.to_vec().unwrap(), [0.0, 1.0, 2.0, 3.0]);
    assert_eq!(x.to_vec().unwrap(), [3.0, 1.0, 2.0, 0.0]);
    println!("bad input is a typed error");
}

/// The complex values of the NumPy comparisons in `unique_matches_numpy` and
/// `intersect1d_and_setdiff1d_match_numpy`: NaN in either part or both, ties, signed zeros.
fn numpy_complex_sample<F: From<f32>>() -> [Complex<F>; 9] {
    let nan = f32::NAN;
    [
        (nan, 1.0),
        (1.0, nan),
        (2.0, 0.0),
        (nan, nan),
        (1.0, 1.0),
        (-0.0, 0.0),
        (0.0, -0.0),
        (1.0, nan),
        (nan, -5.0),
    ]
    .map(|(re, im)| Complex::new(F::from(re), F::from(im)))
}

/// Every quantile method (NumPy's thirteen).
const METHODS: [QuantileMethod; 13] = QuantileMethod::ALL;

/// NumPy's quantile of one line in `f64` (its `_lerp`; NaN if the line holds one).
fn host_quantile(line: &[f64], q: f64, method: QuantileMethod) -> f64 {
    host_quantile_in(line, q, method, |a, b, t| {
        let diff = b - a;
        if t >= 0.5 {
            b - diff * (1.0 - t)
        } else {
            a + diff * t
        }
    })
}

/// As `host_quantile` with NumPy's `float32` arithmetic (what `f32` lines compute in).
fn host_quantile_f32(line: &[f32], q: f64, method: QuantileMethod) -> f32 {
    host_quantile_in(line, q, method, |a, b, t| {
        let diff = b - a;
        if t >= 0.5 {
            b - diff * (1.0 - t) as f32
        } else {
            a + diff * t as f32
        }
    })
}

/// NumPy's quantile of one line, interpolated by `lerp` (NumPy's `_lerp` in the line's
/// arithmetic); NaN if the line is empty or holds one. As NumPy's `_quantile` computes it: the
/// method's virtual index in `f64`, then the element at it (the discrete methods), or its two
/// neighbours by `_get_indexes` (both the first element below 0, both the last, index -1, from
/// `n - 1` on) and the weight from the lower one's index by the method's `fix_gamma`.
fn host_quantile_in<F: Key + From<f32>>(
    line: &[F],
    q: f64,
    method: QuantileMethod,
    lerp: impl Fn(F, F, f64) -> F,
) -> F {
    let mut sorted = line.to_vec();
    sorted.sort_by(F::numpy_cmp);
    let n = sorted.len();
    if n == 0 || sorted[n - 1].has_nan() {
        return F::from(f32::NAN);
    }
    let count = n as f64;
    let take = |i: f64| sorted[i.clamp(0.0, count - 1.0) as usize];
    // `_discrete_interpolation_to_boundaries`: the index's floor where `keep` holds, else the
    // next one, clipped at 0.
    let boundary = |index: f64, keep: &dyn Fn(f64, f64) -> bool| {
        let previous = index.floor();
        take(match keep(index - previous, index) {
            true => previous,
            false => previous + 1.0,
        })
    };
    let hyndman_fan = |alpha: f64, beta: f64| count * q + (alpha + q * (1.0 - alpha - beta)) - 1.0;
    let linear = (count - 1.0) * q;
    let virtual_index = match method {
        QuantileMethod::Lower => return take(linear.floor()),
        QuantileMethod::Higher => return take(linear.ceil()),
        QuantileMethod::Nearest => return take(linear.round_ties_even()),
        QuantileMethod::InvertedCdf => return boundary(count * q - 1.0, &|gamma, _| gamma == 0.0),
        QuantileMethod::ClosestObservation => {
            return boundary(count * q - 1.0 - 0.5, &|gamma, index| {
                gamma == 0.0 && index.floor().rem_euclid(2.0) == 1.0
            })
        }
        QuantileMethod::Linear => linear,
        QuantileMethod::Midpoint => 0.5 * (linear.floor() + linear.ceil()),
        QuantileMethod::AveragedInvertedCdf => count * q - 1.0,
        QuantileMethod::InterpolatedInvertedCdf => hyndman_fan(0.0, 1.0),
        QuantileMethod::Hazen => hyndman_fan(0.5, 0.5),
        QuantileMethod::Weibull => hyndman_fan(0.0, 0.0),
        QuantileMethod::MedianUnbiased => hyndman_fan(1.0 / 3.0, 1.0 / 3.0),
        QuantileMethod::NormalUnbiased => hyndman_fan(3.0 / 8.0, 3.0 / 8.0),
    };
    let (mut previous, mut next) = (virtual_index.floor(), virtual_index.floor() + 1.0);
    if virtual_index >= count - 1.0 {
        (previous, next) = (-1.0, -1.0);
    }
    if virtual_index < 0.0 {
        (previous, next) = (0.0, 0.0);
    }
    let at = |i: f64| sorted[if i < 0.0 { n - 1 } else { i as usize }];
    let gamma = virtual_index - previous;
    let gamma = match method {
        QuantileMethod::Midpoint if virtual_index.fract() == 0.0 => 0.0,
        QuantileMethod::Midpoint => 0.5,
        QuantileMethod::AveragedInvertedCdf if gamma == 0.0 => 0.5,
        QuantileMethod::AveragedInvertedCdf => 1.0,
        _ => gamma,
    };
    lerp(at(previous), at(next), gamma)
}

#[test]
fn median_and_percentiles_match_numpy() {
    let Some(device) = common::device_or_skip("median_and_percentiles_match_numpy") else {
        return;
    };
    let stream = device.create_stream().unwrap();
    // f64 and i32 (whose quantiles are f64): exact against the host's f64 arithmetic.
    let shape = [7usize, 10, 3];
    let host: Vec<f64> = data::<i32>(210, 1).iter().map(|&v| f64::from(v % 1000)).collect();
    let ints: Vec<i32> = host.iter().map(|&v| v as i32).collect();
    let x = DeviceArray::from_slice(&stream, &host)
        .unwrap()
        .reshape(shape.to_vec())
        .unwrap();
    let xi = DeviceArray::from_slice(&stream, &ints)
        .unwrap()
        .reshape(shape.to_vec())
        .unwrap();
    for axis in [0isize, 1, -1] {
        let a = axis.rem_euclid(3) as usize;
        let mut out_shape = shape.to_vec();
        out_shape.remove(a);
        let strides = [30usize, 3, 1];
        // 210 / extent lines: 30 along axis 0, 21 along 1, 70 along 2.
        let lines: Vec<Vec<f64>> = (0..210 / shape[a])
            .map(|o| {
                // The o-th line along `a`: the other two coordinates from o in C order.
                let others: Vec<usize> = (0..3).filter(|&d| d != a).collect();
                let (i, j) = (o / shape[others[1]], o % shape[others[1]]);
                let base = i * strides[others[0]] + j * strides[others[1]];
                (0..shape[a]).map(|k| host[base + k * strides[a]]).collect()
            })
            .collect();
        for q in [0.0, 0.25, 0.3, 0.5, 0.9, 1.0] {
            for method in METHODS {
                let expected: Vec<f64> = lines.iter().map(|l| host_quantile(l, q, method)).collect();
                let got = x.quantile(q, axis, method).unwrap();
                assert_eq!(got.shape(), out_shape.as_slice());
                assert_eq!(got.to_vec().unwrap(), expected, "f64 q {q} axis {axis} {method:?}");
                let got = xi.percentile(q * 100.0, axis, method).unwrap().to_vec().unwrap();
                let close = got
                    .iter()
                    .zip(&expected)
                    .all(|(g, e)| (g - e).abs() <= 1e-9 * e.abs().max(1.0));
                assert!(
                    close,
                    "i32 percentile {} axis {axis} {method:?}: {got:?} vs {expected:?}",
                    q * 100.0
                );
            }
        }
        let medians: Vec<f64> = lines
            .iter()
            .map(|l| host_quantile(l, 0.5, QuantileMethod::Linear))
            .collect();
        assert_eq!(x.median(axis).unwrap().to_vec().unwrap(), medians);
    }
    // A NaN makes its line's median NaN; the others are unaffected. f32 computes in f32.
    let host = [3.0f32, 1.0, f32::NAN, 2.0, 5.0, 4.0, 7.0, 6.0];
    let x = DeviceArray::from_slice(&stream, &host)
        .unwrap()
        .reshape(vec![2, 4])
        .unwrap();
    let median = x.median(-1).unwrap().to_vec().unwrap();
    assert!(median[0].is_nan());
    assert_eq!(median[1], 5.5);
    let even = DeviceArray::from_slice(&stream, &[1.0f32, 2.0, 3.0, 4.0]).unwrap();
    assert_eq!(even.median(0).unwrap().to_vec().unwrap(), [2.5]);
    // The nan* forms leave NaNs out; a line of NaNs only gives NaN.
    let shape = [40usize, 33];
    let host: Vec<f64> = data::<f64>(40 * 33, 41)
        .into_iter()
        .enumerate()
        .map(|(i, v)| if i / 33 == 7 { f64::NAN } else { v })
        .collect();
    let x = DeviceArray::from_slice(&stream, &host)
        .unwrap()
        .reshape(shape.to_vec())
        .unwrap();
    for q in [0.0, 0.1, 0.5, 0.75, 1.0] {
        for method in METHODS {
            let expected: Vec<f64> = host
                .chunks(33)
                .map(|line| {
                    let numbers: Vec<f64> = line.iter().copied().filter(|v| !v.is_nan()).collect();
                    match numbers.is_empty() {
                        true => f64::NAN,
                        false => host_quantile(&numbers, q, method),
                    }
                })
                .collect();
            // Equal, or both NaN (inf - inf gives NaNs of different bits on host and device).
            let same = |got: &[f64]| {
                got.iter()
                    .zip(&expected)
                    .all(|(g, e)| g == e || g.is_nan() && e.is_nan())
            };
            let got = x.nanquantile(q, -1, method).unwrap().to_vec().unwrap();
            assert!(same(&got), "nanquantile {q} {method:?}: {got:?} vs {expected:?}");
            let got = x.nanpercentile(q * 100.0, 1, method).unwrap().to_vec().unwrap();
            assert!(same(&got), "nanpercentile {q} {method:?}: {got:?} vs {expected:?}");
        }
    }
    let f = DeviceArray::from_slice(&stream, &[f32::NAN, 1.0, 4.0, f32::NAN, 2.0]).unwrap();
    assert_eq!(f.nanmedian(0).unwrap().to_vec().unwrap(), [2.0]);
    assert!(f.median(0).unwrap().to_vec().unwrap()[0].is_nan());
    // Bad input: an empty axis, p outside [0, 100], q outside [0, 1], an axis out of range.
    let empty = DeviceArray::<f32>::empty(&stream, vec![3, 0]).unwrap();
    assert!(matches!(empty.median(-1), Err(Error::InvalidValue(_))));
    assert_eq!(empty.median(0).unwrap().shape(), [0]);
    assert!(matches!(
        x.percentile(100.5, -1, QuantileMethod::Linear),
        Err(Error::InvalidValue(_))
    ));
    assert!(matches!(
        x.percentile(-1.0, -1, QuantileMethod::Linear),
        Err(Error::InvalidValue(_))
    ));
    assert!(matches!(
        x.quantile(f64::NAN, -1, QuantileMethod::Linear),
        Err(Error::InvalidValue(_))
    ));
    assert!(matches!(x.median(2), Err(Error::Axis { .. })));
    assert!(matches!(
        x.nanpercentile(101.0, 0, QuantileMethod::Linear),
        Err(Error::InvalidValue(_))
    ));
    assert!(matches!(empty.nanmedian(-1), Err(Error::InvalidValue(_))));
    println!("median and percentiles match numpy");
}

/// No axis (NumPy's `axis=None`): `sort`, `argsort`, `partition` and `argpartition` of the
/// flattened array, a 0-d array's too.
#[test]
fn no_axis_sorts_the_flattened_array() {
    let Some(device) = common::device_or_skip("no_axis_sorts_the_flattened_array") else {
        return;
    };
    let stream = device.create_stream().unwrap();
    let host = data::<f32>(6 * 50, 61);
    let x = DeviceArray::from_slice(&stream, &host)
        .unwrap()
        .reshape([6, 50])
        .unwrap();
    let transposed = x.transpose();
    let flat_host: Vec<f32> = (0..300).map(|i| host[(i % 6) * 50 + i / 6]).collect();
    let mut sorted = flat_host.clone();
    sorted.sort_by(f32::numpy_cmp);
    let got = transposed.sort(None).unwrap();
    assert_eq!(got.shape(), [300]);
    assert_eq!(bytes(&got.to_vec().unwrap()), bytes(&sorted));
    let order: Vec<i64> = host_argsort(&flat_host, SortOrder::Ascending);
    assert_eq!(transposed.argsort(None).unwrap().to_vec().unwrap(), order);
    assert_eq!(
        bytes(&transposed.partition(-3, None).unwrap().to_vec().unwrap()),
        bytes(&sorted)
    );
    assert_eq!(transposed.argpartition(7, None).unwrap().to_vec().unwrap(), order);
    let mut descending = sorted.clone();
    descending.reverse();
    let got = transposed.sort_descending(None).unwrap().to_vec().unwrap();
    assert_eq!(got.len(), 300);
    assert!(got
        .iter()
        .zip(&descending)
        .all(|(g, d)| f32::numpy_cmp(g, d) == Ordering::Equal));
    assert!(matches!(transposed.partition(300, None), Err(Error::InvalidValue(_))));
    let scalar = DeviceArray::from_slice(&stream, &[4i32])
        .unwrap()
        .reshape(Vec::<usize>::new())
        .unwrap();
    assert_eq!(scalar.sort(None).unwrap().to_vec().unwrap(), [4]);
    assert!(scalar.sort(0).is_err());
}

#[test]
fn isin_and_union1d_match_numpy() {
    let Some(device) = common::device_or_skip("isin_and_union1d_match_numpy") else {
        return;
    };
    let stream = device.create_stream().unwrap();
    let x = data::<i32>(100_000, 21);
    let test = data::<i32>(3001, 22);
    let dx = DeviceArray::from_slice(&stream, &x)
        .unwrap()
        .reshape(vec![250, 400])
        .unwrap();
    let dtest = DeviceArray::from_slice(&stream, &test)
        .unwrap()
        .reshape(vec![3001, 1])
        .unwrap();
    let found = dx.isin(&dtest).unwrap();
    assert_eq!(found.shape(), [250, 400]);
    let members: std::collections::HashSet<i32> = test.iter().copied().collect();
    let expected: Vec<Bool> = x.iter().map(|v| Bool(u8::from(members.contains(v)))).collect();
    assert_eq!(found.to_vec().unwrap(), expected);
    // NaN is in nothing; -0.0 is in [0.0]; an empty test array holds nothing.
    let f = DeviceArray::from_slice(&stream, &[f32::NAN, -0.0, 1.0, 2.5, f32::INFINITY]).unwrap();
    let t = DeviceArray::from_slice(&stream, &[0.0f32, f32::NAN, 2.5, f32::INFINITY]).unwrap();
    let found: Vec<bool> = f.isin(&t).unwrap().to_vec().unwrap().iter().map(|b| b.get()).collect();
    assert_eq!(found, [false, true, false, true, true]);
    let none = DeviceArray::<f32>::empty(&stream, 0).unwrap();
    assert!(f.isin(&none).unwrap().to_vec().unwrap().iter().all(|b| !b.get()));
    // union1d: the sorted distinct elements of both.
    let a = DeviceArray::from_slice(&stream, &[-1i64, 0, 1]).unwrap();
    let b = DeviceArray::from_slice(&stream, &[-2i64, 0, 2, 2])
        .unwrap()
        .reshape(vec![2, 2])
        .unwrap();
    assert_eq!(a.union1d(&b).unwrap().to_vec().unwrap(), [-2, -1, 0, 1, 2]);
    println!("isin and union1d match numpy");
}

#[test]
fn partition_and_lexsort_match_numpy() {
    let Some(device) = common::device_or_skip("partition_and_lexsort_match_numpy") else {
        return;
    };
    let stream = device.create_stream().unwrap();
    // NumPy's lexsort example: a primary, b breaking ties.
    let a = DeviceArray::from_slice(&stream, &[1i32, 5, 1, 4, 3, 4, 4]).unwrap();
    let b = DeviceArray::from_slice(&stream, &[9i32, 4, 0, 4, 0, 2, 1]).unwrap();
    let order = DeviceArray::lexsort(&[&b, &a]).unwrap();
    assert_eq!(order.to_vec().unwrap(), [2, 0, 4, 6, 5, 3, 1]);
    // Three keys against the host's stable sort by (c, b, a) with c primary.
    let n = 20_000;
    let (ka, kb, kc) = (data::<i32>(n, 31), data::<i32>(n, 32), data::<i32>(n, 33));
    let keys: Vec<DeviceArray<i32>> = [&ka, &kb, &kc]
        .iter()
        .map(|k| DeviceArray::from_slice(&stream, k).unwrap())
        .collect();
    let order = DeviceArray::lexsort(&[&keys[0], &keys[1], &keys[2]]).unwrap();
    let mut expected: Vec<usize> = (0..n).collect();
    expected.sort_by_key(|&i| (kc[i], kb[i], ka[i]));
    let expected: Vec<i64> = expected.into_iter().map(|i| i as i64).collect();
    assert_eq!(order.to_vec().unwrap(), expected);
    // partition: the kth element is in place, none before it greater, none after it smaller.
    let host = data::<f32>(5000, 34);
    let x = DeviceArray::from_slice(&stream, &host).unwrap();
    let mut sorted = host.clone();
    sorted.sort_by(f32::numpy_cmp);
    for kth in [0isize, 17, 2500, -1] {
        let k = kth.rem_euclid(5000) as usize;
        let parted = x.partition(kth, -1).unwrap().to_vec().unwrap();
        assert_eq!(parted[k].to_bits(), sorted[k].to_bits(), "kth {kth}");
        assert!(parted[..k]
            .iter()
            .all(|v| f32::numpy_cmp(v, &parted[k]) != Ordering::Greater));
        assert!(parted[k + 1..]
            .iter()
            .all(|v| f32::numpy_cmp(v, &parted[k]) != Ordering::Less));
        let index = x.argpartition(kth, 0).unwrap().to_vec().unwrap();
        assert_eq!(host[index[k] as usize].to_bits(), sorted[k].to_bits());
    }
    // topk along each axis of a matrix: the first k of the stable descending (or ascending)
    // order of each line, NaN largest.
    let host = data::<f32>(30 * 50, 35);
    let m = DeviceArray::from_slice(&stream, &host)
        .unwrap()
        .reshape(vec![30, 50])
        .unwrap();
    for (axis, k, largest) in [(1isize, 5usize, true), (0, 3, false), (-1, 50, false), (0, 0, true)] {
        let (values, indices) = m.topk(k, axis, largest).unwrap();
        let a = axis.rem_euclid(2) as usize;
        let (lines, extent) = if a == 1 { (30, 50) } else { (50, 30) };
        let at = |line: usize, e: usize| if a == 1 { line * 50 + e } else { e * 50 + line };
        let mut shape = vec![30, 50];
        shape[a] = k;
        assert_eq!(values.shape(), shape.as_slice());
        let (values, indices) = (values.to_vec().unwrap(), indices.to_vec().unwrap());
        for line in 0..lines {
            let items: Vec<f32> = (0..extent).map(|e| host[at(line, e)]).collect();
            let order = match largest {
                true => SortOrder::Descending,
                false => SortOrder::Ascending,
            };
            let expected = host_argsort(&items, order);
            let out_at = |e: usize| if a == 1 { line * k + e } else { e * 50 + line };
            for e in 0..k {
                assert_eq!(indices[out_at(e)], expected[e], "topk axis {axis} line {line}");
                assert_eq!(values[out_at(e)].to_bits(), items[expected[e] as usize].to_bits());
            }
        }
    }
    assert!(matches!(m.topk(51, 1, true), Err(Error::InvalidValue(_))));
    // Bad input.
    assert!(matches!(x.partition(5000, -1), Err(Error::InvalidValue(_))));
    assert!(matches!(x.partition(-5001, -1), Err(Error::InvalidValue(_))));
    assert!(matches!(x.argpartition(0, 1), Err(Error::Axis { .. })));
    assert!(matches!(DeviceArray::<i32>::lexsort(&[]), Err(Error::InvalidValue(_))));
    assert!(matches!(
        DeviceArray::lexsort(&[&a, &keys[0]]),
        Err(Error::InvalidValue(_))
    ));
    println!("partition and lexsort match numpy");
}

#[test]
fn more_than_u32_max_keys_take_the_wide_path() {
    let Some(device) = common::device_or_skip("more_than_u32_max_keys_take_the_wide_path") else {
        return;
    };
    let stream = device.create_stream().unwrap();
    // 2^32 + 4097 one-byte keys (64-bit offsets), made and counted on the device.
    let n = (1usize << 32) + 4097;
    let keys = cuda_core::random::Generator::new(3)
        .randint::<u8>(&stream, n, 0, 251)
        .unwrap();
    let counts = keys.bincount(0).unwrap().to_vec().unwrap();
    assert_eq!(counts.iter().sum::<i64>() as usize, n);
    let mut out = DeviceArray::<u8>::empty(&stream, n).unwrap();
    sort::sort_keys::<u8>(&stream, &keys, &mut out, n, SortOrder::Ascending).unwrap();
    // Each value's run starts where the counts of the smaller values end: each run holds only
    // its value, and its neighbours are smaller before and greater after.
    let mut start = 0usize;
    for (value, &count) in counts.iter().enumerate() {
        let count = count as usize;
        if count == 0 {
            continue;
        }
        let from = start.saturating_sub(1);
        let to = (start + count + 1).min(n);
        let window = out
            .slice(&[cuda_core::Slice::new(from, Some(to))])
            .unwrap()
            .to_vec()
            .unwrap();
        let inside = &window[start - from..start - from + count];
        assert!(inside.iter().all(|&v| v == value as u8), "the run of value {value}");
        if start > 0 {
            assert!(window[0] < value as u8, "before value {value}");
        }
        if start + count < n {
            assert!(*window.last().unwrap() > value as u8, "after value {value}");
        }
        start += count;
    }
    drop(out);
    // argsort of the same keys: the indices travel as u64 (generated by the one pass and
    // written as i64). Each run's first and last indices increase (stable) and point at its
    // value; indices above u32::MAX come out whole.
    let mut index = DeviceArray::<i64>::empty(&stream, n).unwrap();
    sort::argsort::<u8>(&stream, &keys, &mut index, n, SortOrder::Ascending).unwrap();
    let (mut start, mut largest) = (0usize, 0i64);
    for (value, &count) in counts.iter().enumerate() {
        let count = count as usize;
        let edge = count.min(32);
        for from in [start, start + count - edge].into_iter().filter(|_| count > 0) {
            let window = index
                .slice(&[cuda_core::Slice::new(from, Some(from + edge))])
                .unwrap()
                .to_vec()
                .unwrap();
            assert!(
                window.windows(2).all(|w| w[0] < w[1]),
                "argsort run of value {value}: {window:?}"
            );
            largest = largest.max(*window.last().unwrap());
            let at = DeviceArray::from_slice(&stream, &window).unwrap();
            let picked = keys
                .take(&at, None, cuda_core::IndexMode::Raise)
                .unwrap()
                .to_vec()
                .unwrap();
            assert!(picked.iter().all(|&v| v == value as u8), "argsort run of value {value}");
        }
        start += count;
    }
    assert!(
        largest > u32::MAX as i64,
        "the largest index seen, {largest}, fits 32 bits"
    );
    println!("more than u32::MAX keys take the wide path");
}

/// The merge sort with `less` (NumPy's order in C++, over `a` and `b` of `T`'s C++ type) of
/// `host`, keys alone and with their indices as values, ascending and descending (the
/// comparator's arguments swapped), against the host's stable sort, bit for bit.
fn check_merge_sort<T: Key>(stream: &Stream, host: &[T], less: &str, what: &str) {
    use cuda_core::algorithms::merge_sort::MergeSort;
    let n = host.len();
    let ty = T::DTYPE.c_name();
    let prelude =
        format!("__device__ __forceinline__ bool numpy_before(const {ty} a, const {ty} b) {{ return {less}; }}");
    let keys = DeviceArray::from_slice(stream, host).unwrap();
    let values = DeviceArray::from_slice(stream, &(0..n as i64).collect::<Vec<i64>>()).unwrap();
    for (order, before) in [
        (SortOrder::Ascending, "numpy_before(a, b)"),
        (SortOrder::Descending, "numpy_before(b, a)"),
    ] {
        let name = format!("numpy_{}_{order:?}", T::DTYPE.name()).to_lowercase();
        let sorter = MergeSort::new(&name, ty, before).unwrap().with_prelude(&prelude);
        let index = host_argsort(host, order);
        let want: Vec<T> = index.iter().map(|&i| host[i as usize]).collect();
        let mut keys_out = DeviceArray::<T>::zeros(stream, n).unwrap();
        let mut values_out = DeviceArray::<i64>::zeros(stream, n).unwrap();
        // SAFETY: the comparator only computes with `a` and `b`; `T` is the C++ type's
        // counterpart.
        unsafe {
            sorter
                .sort_pairs::<T, i64>(stream, (&keys, &values), (&mut keys_out, &mut values_out), n)
                .unwrap()
        };
        stream.synchronize().unwrap();
        let what = format!("merge sort of {n} {} ({what}, {order:?})", T::DTYPE);
        assert_eq!(values_out.to_vec().unwrap(), index, "{what}: the permutation");
        assert_eq!(bytes(&keys_out.to_vec().unwrap()), bytes(&want), "{what}: the keys");
        let mut alone = DeviceArray::<T>::zeros(stream, n).unwrap();
        // SAFETY: as above.
        unsafe { sorter.sort_keys::<T>(stream, &keys, &mut alone, n).unwrap() };
        stream.synchronize().unwrap();
        assert_eq!(bytes(&alone.to_vec().unwrap()), bytes(&want), "{what}: keys alone");
    }
}

fn merge_sort_every_size<T: Key>(stream: &Stream, less: &str) {
    for (i, n) in [0usize, 1, 2, 31, 2047, 2048, 2049, 4097, 65_537, 300_001]
        .into_iter()
        .enumerate()
    {
        check_merge_sort::<T>(stream, &data::<T>(n, i as u64 + 7), less, "random");
    }
    let mut sorted = data::<T>(5000, 98);
    sorted.sort_by(T::numpy_cmp);
    check_merge_sort::<T>(stream, &sorted, less, "sorted");
    sorted.reverse();
    check_merge_sort::<T>(stream, &sorted, less, "reversed");
    check_merge_sort::<T>(stream, &[T::make(8 * 256 + 1); 3000], less, "all equal");
}

#[test]
fn merge_sort_by_a_cpp_comparator_is_numpys_stable_sort_for_every_type() {
    let Some(device) = common::device_or_skip("merge_sort_by_a_cpp_comparator_is_numpys_stable_sort_for_every_type")
    else {
        return;
    };
    let stream = device.create_stream().unwrap();
    let plain = "a < b";
    // NaN last, -0.0 equal to 0.0: a strict weak order.
    let float = "(a == a) && (b != b || a < b)";
    let half = "((float)a == (float)a) && ((float)b != (float)b || (float)a < (float)b)";
    merge_sort_every_size::<Bool>(&stream, plain);
    merge_sort_every_size::<i8>(&stream, plain);
    merge_sort_every_size::<i16>(&stream, plain);
    merge_sort_every_size::<i32>(&stream, plain);
    merge_sort_every_size::<i64>(&stream, plain);
    merge_sort_every_size::<u8>(&stream, plain);
    merge_sort_every_size::<u16>(&stream, plain);
    merge_sort_every_size::<u32>(&stream, plain);
    merge_sort_every_size::<u64>(&stream, plain);
    merge_sort_every_size::<f16>(&stream, half);
    merge_sort_every_size::<bf16>(&stream, half);
    merge_sort_every_size::<f32>(&stream, float);
    merge_sort_every_size::<f64>(&stream, float);
    // Many merge passes over global memory.
    check_merge_sort::<f32>(&stream, &data::<f32>(1_000_003, 5), float, "a million");
}

/// A struct key (`#[repr(C)]`, its C++ twin in the prelude) radix sort cannot take, sorted by
/// two fields with ties kept in order; and the typed errors.
#[test]
fn merge_sort_takes_struct_keys_and_checks_its_buffers() {
    use cuda_core::algorithms::merge_sort::MergeSort;
    let Some(device) = common::device_or_skip("merge_sort_takes_struct_keys_and_checks_its_buffers") else {
        return;
    };
    #[repr(C)]
    #[derive(Clone, Copy, Debug, PartialEq)]
    struct Point {
        x: f32,
        y: i32,
        id: u32,
    }
    // SAFETY: plain data of fixed layout (`repr(C)`), every bit pattern valid.
    unsafe impl cuda_driver::DeviceCopy for Point {}
    let stream = device.create_stream().unwrap();
    let context = device.context();
    let n = 100_003usize;
    let points: Vec<Point> = (0..n)
        .map(|i| Point {
            x: ((i * 7919) % 101) as f32 / 4.0,
            y: ((i * 104_729) % 13) as i32 - 6,
            id: i as u32,
        })
        .collect();
    let by_x_then_y = MergeSort::new("by_x_then_y", "point", "a.x < b.x || (a.x == b.x && a.y < b.y)")
        .unwrap()
        .with_prelude("struct point { float x; int y; unsigned id; };");
    let keys = DeviceBuffer::from_slice(context, &points).unwrap();
    let mut out = DeviceBuffer::<Point>::zeroed(context, n).unwrap();
    // SAFETY: the comparator only reads the two keys' fields; `Point` is `point`'s twin.
    unsafe { by_x_then_y.sort_keys::<Point>(&stream, &keys, &mut out, n).unwrap() };
    let mut want = points.clone();
    want.sort_by(|a, b| a.x.partial_cmp(&b.x).unwrap().then(a.y.cmp(&b.y)));
    assert_eq!(out.to_vec().unwrap(), want, "points by x then y, ties in input order");
    // A comparator that is no strict weak order leaves the order unspecified, but every output
    // element is a copy of an input element, and the sort writes nothing else (memcheck).
    let bogus = MergeSort::new(
        "bogus",
        "float",
        "((__float_as_uint(a) ^ __float_as_uint(b)) & 4u) != 0u",
    )
    .unwrap();
    let floats: Vec<f32> = (0..n).map(|i| ((i * 7919) % 100_003) as f32).collect();
    let input = DeviceBuffer::from_slice(context, &floats).unwrap();
    let mut scrambled = DeviceBuffer::<f32>::zeroed(context, n).unwrap();
    // SAFETY: the comparator only computes with the two keys' bits.
    unsafe { bogus.sort_keys::<f32>(&stream, &input, &mut scrambled, n).unwrap() };
    let known: std::collections::HashSet<u32> = floats.iter().map(|x| x.to_bits()).collect();
    assert!(scrambled.to_vec().unwrap().iter().all(|x| known.contains(&x.to_bits())));
    // Typed errors: more keys than the buffers hold, an output overlapping the input, values
    // too short.
    // SAFETY: as above; each call fails its checks before anything runs.
    let error = unsafe { by_x_then_y.sort_keys::<Point>(&stream, &keys, &mut out, n + 1) };
    assert!(matches!(error, Err(Error::InvalidValue(_))), "{error:?}");
    let shared = DeviceArray::from_slice(&stream, &[3.0f32, 1.0, 2.0]).unwrap();
    let mut alias = shared.reshape_view([3]).unwrap();
    let floats = MergeSort::new("floats", "float", "a < b").unwrap();
    let error = unsafe { floats.sort_keys::<f32>(&stream, &shared, &mut alias, 3) };
    assert!(matches!(error, Err(Error::InvalidValue(_))), "{error:?}");
    let short = DeviceBuffer::from_slice(context, &[0i64; 2]).unwrap();
    let mut keys_out = DeviceBuffer::<f32>::zeroed(context, 3).unwrap();
    let mut values_out = DeviceBuffer::<i64>::zeroed(context, 3).unwrap();
    let error =
        unsafe { floats.sort_pairs::<f32, i64>(&stream, (&shared, &short), (&mut keys_out, &mut values_out), 3) };
    assert!(matches!(error, Err(Error::InvalidValue(_))), "{error:?}");
}

/// The quantile of one line of at least 2^16 elements (radix select, no sort) against the
/// sorted read-out of the same line (two copies stacked: more than one line takes the sort) for
/// every type, method and `q`, NaN in or left out, sorted, reversed and all-equal input; equal
/// values, or both NaN (among equal zeros the select takes `-0.0` first, the sort its input
/// order: the same value).
fn check_select_quantiles<T: Key>(stream: &Stream, host: &[T], what: &str) {
    let line = DeviceArray::from_slice(stream, host).unwrap();
    let lines = DeviceArray::stack(&[&line, &line], 0).unwrap();
    let same = |a: f64, b: f64| a == b || (a.is_nan() && b.is_nan());
    for q in [0.0, 0.1, 0.25, 0.5, 0.9, 0.999, 1.0] {
        for method in METHODS {
            let whole = line.quantile(q, 0, method).unwrap().to_vec().unwrap()[0].to_f64();
            let sorted = lines.quantile(q, 1, method).unwrap().to_vec().unwrap()[0].to_f64();
            assert!(
                same(whole, sorted),
                "{what} {}: quantile {q} {method:?}: select {whole}, sort {sorted}",
                T::DTYPE
            );
            let whole = line.nanquantile(q, 0, method).unwrap().to_vec().unwrap()[0].to_f64();
            let sorted = lines.nanquantile(q, 1, method).unwrap().to_vec().unwrap()[0].to_f64();
            assert!(
                same(whole, sorted),
                "{what} {}: nanquantile {q} {method:?}: select {whole}, sort {sorted}",
                T::DTYPE
            );
        }
    }
    let whole = line.median(0).unwrap().to_vec().unwrap()[0].to_f64();
    let sorted = lines.median(1).unwrap().to_vec().unwrap()[0].to_f64();
    assert!(
        same(whole, sorted),
        "{what} {}: median: select {whole}, sort {sorted}",
        T::DTYPE
    );
}

fn select_quantiles_of<T: Key>(stream: &Stream) {
    let n = (1usize << 16) + 37;
    let random = data::<T>(n, 77);
    check_select_quantiles::<T>(stream, &random, "random");
    // Without NaN (the `make` of floats draws some): the NaN-free path of `median`.
    let numbers: Vec<T> = random.iter().copied().filter(|v| !v.to_f64().is_nan()).collect();
    check_select_quantiles::<T>(stream, &numbers, "no NaN");
    let mut sorted = numbers.clone();
    sorted.sort_by(T::numpy_cmp);
    check_select_quantiles::<T>(stream, &sorted, "sorted");
    sorted.reverse();
    check_select_quantiles::<T>(stream, &sorted, "reversed");
    check_select_quantiles::<T>(stream, &vec![T::make(8 * 256 + 1); n], "all equal");
}

#[test]
fn quantiles_of_one_long_line_by_radix_select_match_the_sort() {
    let Some(device) = common::device_or_skip("quantiles_of_one_long_line_by_radix_select_match_the_sort") else {
        return;
    };
    let stream = device.create_stream().unwrap();
    select_quantiles_of::<Bool>(&stream);
    select_quantiles_of::<i8>(&stream);
    select_quantiles_of::<i16>(&stream);
    select_quantiles_of::<i32>(&stream);
    select_quantiles_of::<i64>(&stream);
    select_quantiles_of::<u8>(&stream);
    select_quantiles_of::<u16>(&stream);
    select_quantiles_of::<u32>(&stream);
    select_quantiles_of::<u64>(&stream);
    select_quantiles_of::<f16>(&stream);
    select_quantiles_of::<bf16>(&stream);
    select_quantiles_of::<f32>(&stream);
    select_quantiles_of::<f64>(&stream);
    // f64 against the host's NumPy arithmetic, exactly (or both NaN: the line holds several
    // -inf and inf, so q = 0.0 and 1.0 interpolate between equal infinities, inf - inf, which
    // NumPy's `np.quantile(x, 0.0)` and `np.quantile(x, 1.0)` also give as NaN); a NaN makes
    // `median` NaN, a line of NaNs only makes `nanmedian` NaN; zeros of both signs give a zero.
    let host: Vec<f64> = data::<f64>(1 << 17, 3).into_iter().filter(|v| !v.is_nan()).collect();
    let x = DeviceArray::from_slice(&stream, &host).unwrap();
    for q in [0.0, 0.3, 0.5, 0.75, 1.0] {
        let got = x.quantile(q, 0, QuantileMethod::Linear).unwrap().to_vec().unwrap()[0];
        let want = host_quantile(&host, q, QuantileMethod::Linear);
        assert!(
            got == want || got.is_nan() && want.is_nan(),
            "f64 quantile {q}: {got} vs {want}"
        );
    }
    assert!(host_quantile(&host, 0.0, QuantileMethod::Linear).is_nan());
    let mut with_nan = host.clone();
    with_nan[12_345] = f64::NAN;
    let y = DeviceArray::from_slice(&stream, &with_nan).unwrap();
    assert!(y.median(0).unwrap().to_vec().unwrap()[0].is_nan());
    assert_eq!(y.nanmedian(0).unwrap().to_vec().unwrap()[0], {
        let numbers: Vec<f64> = with_nan.iter().copied().filter(|v| !v.is_nan()).collect();
        host_quantile(&numbers, 0.5, QuantileMethod::Linear)
    });
    let nans = DeviceArray::from_slice(&stream, &vec![f32::NAN; 1 << 16]).unwrap();
    assert!(nans.nanmedian(0).unwrap().to_vec().unwrap()[0].is_nan());
    let zeros: Vec<f32> = (0..1 << 16).map(|i| if i % 3 == 0 { -0.0 } else { 0.0 }).collect();
    let z = DeviceArray::from_slice(&stream, &zeros).unwrap();
    assert_eq!(z.median(0).unwrap().to_vec().unwrap(), [0.0]);
}

/// The host's segmented sort of `keys` with `values`: each segment (clamped into the keys, empty
/// when its end is not after its begin) sorted stably in NumPy's order (its reverse for
/// descending), the rest in place.
fn host_segmented<T: Key, V: Copy>(
    keys: &[T],
    values: &[V],
    segments: &[(i64, i64)],
    order: SortOrder,
) -> (Vec<T>, Vec<V>) {
    let (mut keys_out, mut values_out) = (keys.to_vec(), values.to_vec());
    let n = keys.len() as i64;
    for &(begin, end) in segments {
        let (begin, end) = (begin.clamp(0, n) as usize, end.clamp(0, n) as usize);
        if end <= begin {
            continue;
        }
        for (k, i) in host_argsort(&keys[begin..end], order).into_iter().enumerate() {
            keys_out[begin + k] = keys[begin + i as usize];
            values_out[begin + k] = values[begin + i as usize];
        }
    }
    (keys_out, values_out)
}

/// Segments of `n` elements from `seed`: lengths from 0 to `longest`, with gaps, listed in a
/// scrambled order.
fn segments_of(n: usize, longest: usize, seed: u64) -> Vec<(i64, i64)> {
    let mut state = seed | 1;
    let mut next = |m: u64| {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (state >> 33) % m
    };
    let mut segments = Vec::new();
    let mut at = 0usize;
    while at < n {
        let len = (next(longest as u64 + 1) as usize).min(n - at);
        segments.push((at as i64, (at + len) as i64));
        // A gap now and then: elements of no segment.
        at += len + usize::from(next(4) == 0) * next(5) as usize;
    }
    for i in (1..segments.len()).rev() {
        segments.swap(i, next(i as u64 + 1) as usize);
    }
    segments
}

/// The keys and values (on the host) of the segmented pairs sort of `(keys, values)` by the
/// segments `(begins, ends)`, into outputs of zeros (keys of no segment are copied).
fn segmented_pairs<T: Key, V: Element + Copy>(
    stream: &Stream,
    (keys, values): (&DeviceArray<T>, &DeviceArray<V>),
    segments: (&DeviceArray<i64>, &DeviceArray<i64>),
    count: usize,
    order: SortOrder,
) -> (Vec<T>, Vec<V>) {
    let n = keys.len();
    let mut keys_out = DeviceArray::<T>::zeros(stream, n).unwrap();
    let mut values_out = DeviceArray::<V>::zeros(stream, n).unwrap();
    sort::segmented_sort_pairs::<T, V>(
        stream,
        (keys, values),
        (&mut keys_out, &mut values_out),
        n,
        segments,
        count,
        order,
    )
    .unwrap();
    (keys_out.to_vec().unwrap(), values_out.to_vec().unwrap())
}

/// Sorts `keys` by `segments` on the device, keys alone and with two kinds of values (`i64`
/// positions and 16-byte complex values), both orders, against [`host_segmented`].
fn check_segmented<T: Key>(stream: &Stream, keys: &[T], segments: &[(i64, i64)], what: &str) {
    let n = keys.len();
    let begins: Vec<i64> = segments.iter().map(|s| s.0).collect();
    let ends: Vec<i64> = segments.iter().map(|s| s.1).collect();
    let d_begins = DeviceArray::from_slice(stream, &begins).unwrap();
    let d_ends = DeviceArray::from_slice(stream, &ends).unwrap();
    let d_keys = DeviceArray::from_slice(stream, keys).unwrap();
    let positions: Vec<i64> = (0..n as i64).collect();
    let wide: Vec<Complex<f64>> = (0..n).map(|i| Complex::new(i as f64, -(i as f64))).collect();
    let d_positions = DeviceArray::from_slice(stream, &positions).unwrap();
    let d_wide = DeviceArray::from_slice(stream, &wide).unwrap();
    let count = segments.len();
    for order in [SortOrder::Ascending, SortOrder::Descending] {
        let (expected, moved) = host_segmented(keys, &positions, segments, order);
        let label = format!("{what} {:?} {order:?} n={n} segments={count}", T::DTYPE);
        // Keys of no segment are copied: start from another value to see it.
        let mut keys_out = DeviceArray::<T>::zeros(stream, n).unwrap();
        sort::segmented_sort_keys::<T>(stream, &d_keys, &mut keys_out, n, (&d_begins, &d_ends), count, order).unwrap();
        assert_eq!(bytes(&keys_out.to_vec().unwrap()), bytes(&expected), "keys {label}");
        let segments = (&d_begins, &d_ends);
        let (pair_keys, values) = segmented_pairs(stream, (&d_keys, &d_positions), segments, count, order);
        assert_eq!(bytes(&pair_keys), bytes(&expected), "pairs keys {label}");
        assert_eq!(values, moved, "pairs values {label}");
        let (_, wide_values) = segmented_pairs(stream, (&d_keys, &d_wide), segments, count, order);
        let wide_moved: Vec<Complex<f64>> = moved.iter().map(|&i| wide[i as usize]).collect();
        assert_eq!(wide_values, wide_moved, "16-byte values {label}");
    }
}

#[test]
fn segmented_sorts_match_a_host_sort_of_each_segment() {
    let Some(device) = common::device_or_skip("segmented_sorts_match_a_host_sort_of_each_segment") else {
        return;
    };
    let stream = device.create_stream().unwrap();
    // Many short segments, some empty, with gaps, listed out of order.
    check_segmented::<f32>(&stream, &data::<f32>(100_000, 1), &segments_of(100_000, 40, 2), "short");
    check_segmented::<i64>(&stream, &data::<i64>(50_000, 3), &segments_of(50_000, 3000, 4), "mixed");
    check_segmented::<u8>(&stream, &data::<u8>(70_000, 5), &segments_of(70_000, 20_000, 6), "long");
    check_segmented::<Bool>(&stream, &data::<Bool>(5000, 7), &segments_of(5000, 100, 8), "bool");
    check_segmented::<f16>(&stream, &data::<f16>(9000, 9), &segments_of(9000, 500, 10), "f16");
    check_segmented::<bf16>(&stream, &data::<bf16>(9000, 11), &segments_of(9000, 500, 12), "bf16");
    check_segmented::<f64>(&stream, &data::<f64>(300_001, 13), &[(0, 300_001)], "one segment");
    check_segmented::<Complex<f32>>(
        &stream,
        &data::<Complex<f32>>(20_000, 14),
        &segments_of(20_000, 700, 15),
        "c64",
    );
    check_segmented::<Complex<f64>>(
        &stream,
        &data::<Complex<f64>>(20_000, 16),
        &segments_of(20_000, 700, 17),
        "c128",
    );
    check_segmented::<i8>(&stream, &data::<i8>(3000, 18), &segments_of(3000, 64, 19), "i8");
    check_segmented::<u32>(&stream, &data::<u32>(4096, 20), &segments_of(4096, 300, 21), "u32");
    check_segmented::<i16>(&stream, &data::<i16>(4096, 22), &segments_of(4096, 300, 23), "i16");
    check_segmented::<u16>(&stream, &data::<u16>(4096, 24), &segments_of(4096, 300, 25), "u16");
    check_segmented::<i32>(&stream, &data::<i32>(4096, 26), &segments_of(4096, 300, 27), "i32");
    check_segmented::<u64>(&stream, &data::<u64>(4096, 28), &segments_of(4096, 300, 29), "u64");
    // No segments: every key stays where it is. Empty segments only, and offsets outside the
    // keys (clamped: [-5, 3) is [0, 3), [90, 1000) is [90, 100)).
    let keys = data::<f32>(100, 30);
    check_segmented::<f32>(&stream, &keys, &[], "no segments");
    check_segmented::<f32>(&stream, &keys, &[(5, 5), (9, 2), (100, 100)], "empty segments");
    check_segmented::<f32>(&stream, &keys, &[(-5, 3), (90, 1000), (40, 60)], "clamped");
    // No keys at all, with and without segments.
    check_segmented::<f32>(&stream, &[], &[], "nothing");
    check_segmented::<f32>(&stream, &[], &[(0, 0), (0, 5)], "no keys");
    let d_keys = DeviceArray::from_slice(&stream, &keys).unwrap();
    let mut out = DeviceArray::<f32>::empty(&stream, 100).unwrap();
    let d_begins = DeviceArray::from_slice(&stream, &[0i64, 10]).unwrap();
    let d_ends = DeviceArray::from_slice(&stream, &[50i64, 80]).unwrap();
    // An offsets array shorter than the segment count is a typed error.
    assert!(matches!(
        sort::segmented_sort_keys::<f32>(
            &stream,
            &d_keys,
            &mut out,
            100,
            (&d_begins, &d_ends),
            3,
            SortOrder::Ascending
        ),
        Err(Error::InvalidValue(_))
    ));
    println!("segmented sorts match a host sort of each segment");
}

#[test]
fn short_segments_sort_alone_and_long_or_overlapping_ones_fall_back() {
    let what = "short_segments_sort_alone_and_long_or_overlapping_ones_fall_back";
    let Some(device) = common::device_or_skip(what) else {
        return;
    };
    let stream = device.create_stream().unwrap();
    // Segments of up to 2048 (each sorted by a warp or a block, the sort after them skipped),
    // and the same with one segment past 2048 (the sort after them runs).
    let up_to_2048 = segments_of(20_000, 2048, 31);
    check_segmented::<f32>(&stream, &data::<f32>(20_000, 32), &up_to_2048, "up to 2048");
    let wide = data::<Complex<f64>>(20_000, 33);
    check_segmented::<Complex<f64>>(&stream, &wide, &up_to_2048, "c128 up to 2048");
    let mut one_long = up_to_2048.clone();
    one_long.retain(|&(b, e)| b >= 2149 || e <= 100);
    one_long.push((100, 2149));
    check_segmented::<f32>(&stream, &data::<f32>(20_000, 34), &one_long, "one of 2049");
    // Copies of one segment sort it once.
    check_segmented::<u16>(
        &stream,
        &data::<u16>(5000, 35),
        &[(5, 40), (700, 2000), (5, 40)],
        "copies",
    );
    let keys = data::<f32>(100, 30);
    // Overlapping segments are not refused; the output is a permutation of the keys: crossing,
    // sharing a begin, nested, and the short segments' path (found on the device) beside them.
    let d_keys = DeviceArray::from_slice(&stream, &keys).unwrap();
    let mut out = DeviceArray::<f32>::empty(&stream, 100).unwrap();
    let overlapping: [&[(i64, i64)]; 4] = [
        &[(0, 50), (10, 80)],
        &[(0, 30), (0, 60), (70, 75)],
        &[(0, 90), (20, 30)],
        &[(60, 70), (30, 65), (0, 20)],
    ];
    for segments in overlapping {
        let begins: Vec<i64> = segments.iter().map(|s| s.0).collect();
        let ends: Vec<i64> = segments.iter().map(|s| s.1).collect();
        let d_begins = DeviceArray::from_slice(&stream, &begins).unwrap();
        let d_ends = DeviceArray::from_slice(&stream, &ends).unwrap();
        let count = segments.len();
        let order = SortOrder::Ascending;
        sort::segmented_sort_keys::<f32>(&stream, &d_keys, &mut out, 100, (&d_begins, &d_ends), count, order).unwrap();
        let mut got = out.to_vec().unwrap();
        let mut want = keys.clone();
        // By their bits: NaNs of other signs and the two zeros apart, whatever their order.
        got.sort_by_key(|v| v.to_bits());
        want.sort_by_key(|v| v.to_bits());
        assert_eq!(
            bytes(&got),
            bytes(&want),
            "overlapping segments {segments:?} permute the keys"
        );
    }
    println!("short segments sort alone; long or overlapping ones fall back");
}

#[test]
fn pairs_move_16_byte_values() {
    let Some(device) = common::device_or_skip("pairs_move_16_byte_values") else {
        return;
    };
    let stream = device.create_stream().unwrap();
    for (n, seed) in [(1usize, 1u64), (5000, 2), (300_001, 3)] {
        let keys = data::<Complex<f64>>(n, seed);
        let values: Vec<Complex<f64>> = (0..n).map(|i| Complex::new(i as f64, 0.5 - i as f64)).collect();
        for order in [SortOrder::Ascending, SortOrder::Descending] {
            let index = host_argsort(&keys, order);
            let d_keys = DeviceArray::from_slice(&stream, &keys).unwrap();
            let d_values = DeviceArray::from_slice(&stream, &values).unwrap();
            let mut keys_out = DeviceArray::<Complex<f64>>::empty(&stream, n).unwrap();
            let mut values_out = DeviceArray::<Complex<f64>>::empty(&stream, n).unwrap();
            sort::sort_pairs::<Complex<f64>, Complex<f64>>(
                &stream,
                (&d_keys, &d_values),
                (&mut keys_out, &mut values_out),
                n,
                order,
            )
            .unwrap();
            let expected: Vec<Complex<f64>> = index.iter().map(|&i| keys[i as usize]).collect();
            let moved: Vec<Complex<f64>> = index.iter().map(|&i| values[i as usize]).collect();
            assert_eq!(
                bytes(&keys_out.to_vec().unwrap()),
                bytes(&expected),
                "{n} {order:?} keys"
            );
            assert_eq!(values_out.to_vec().unwrap(), moved, "{n} {order:?} values");
        }
    }
    println!("pairs move 16-byte values");
}

/// Several quantiles at once (NumPy's `q` as a sequence) stack along a new first axis, each as
/// the quantile alone gives it, on each of the three ways (sorted lines, a block a line, one
/// long line; from three quantiles on, the lines sorted once); percentiles are quantiles of p / 100; no quantiles give an empty first axis; a
/// bad one is refused; no axis means the flattened array.
#[test]
fn several_quantiles_stack_along_a_new_first_axis() {
    let Some(device) = common::device_or_skip("several_quantiles_stack_along_a_new_first_axis") else {
        return;
    };
    let stream = device.create_stream().unwrap();
    let same =
        |a: &[f64], b: &[f64]| a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x == y || (x.is_nan() && y.is_nan()));
    for (shape, axis, seed) in [
        (vec![6usize, 40], -1isize, 5u64),
        (vec![600, 3], 0, 6),
        (vec![70_000], 0, 7),
    ] {
        let len = shape.iter().product();
        let x = DeviceArray::from_slice(&stream, &data::<f64>(len, seed))
            .unwrap()
            .reshape(shape.clone())
            .unwrap();
        let mut reduced = shape.clone();
        reduced.remove(axis.rem_euclid(shape.len() as isize) as usize);
        // Five quantiles (the lines sorted once, against each quantile's radix select where
        // the line is long enough) and two (each by radix select there).
        let five = [0.9, 0.0, 0.5, 0.25, 1.0];
        let two = [0.3, 0.99];
        for (qs, method) in [
            (&five[..], QuantileMethod::Linear),
            (&five[..], QuantileMethod::Hazen),
            (&two[..], QuantileMethod::Linear),
            (&two[..], QuantileMethod::ClosestObservation),
        ] {
            let all = x.quantiles(qs, axis, method).unwrap();
            let nan_all = x.nanquantiles(qs, axis, method).unwrap();
            let percent: Vec<f64> = qs.iter().map(|q| q * 100.0).collect();
            let by_percent = x.percentiles(&percent, axis, method).unwrap();
            let nan_by_percent = x.nanpercentiles(&percent, axis, method).unwrap();
            let mut expected_shape = vec![qs.len()];
            expected_shape.extend(&reduced);
            for stacked in [&all, &nan_all, &by_percent, &nan_by_percent] {
                assert_eq!(stacked.shape(), expected_shape.as_slice(), "{shape:?} {method:?}");
            }
            let (all, nan_all) = (all.to_vec().unwrap(), nan_all.to_vec().unwrap());
            let (by_percent, nan_by_percent) = (by_percent.to_vec().unwrap(), nan_by_percent.to_vec().unwrap());
            let each = len / shape[axis.rem_euclid(shape.len() as isize) as usize];
            for (i, &q) in qs.iter().enumerate() {
                let one = x.quantile(q, axis, method).unwrap().to_vec().unwrap();
                let nan_one = x.nanquantile(q, axis, method).unwrap().to_vec().unwrap();
                let part = i * each..(i + 1) * each;
                assert!(same(&all[part.clone()], &one), "{shape:?} {method:?} q {q}");
                assert!(
                    same(&by_percent[part.clone()], &one),
                    "{shape:?} {method:?} p {}",
                    q * 100.0
                );
                assert!(same(&nan_all[part.clone()], &nan_one), "{shape:?} {method:?} nan q {q}");
                assert!(same(&nan_by_percent[part], &nan_one), "{shape:?} {method:?} nan p");
            }
        }
        // No axis: of the flattened array, as NumPy's default (a 0-d median, the quantiles
        // along one axis).
        let flat = x.ravel().unwrap();
        let median = x.median(None).unwrap();
        assert_eq!(median.shape(), &[] as &[usize]);
        assert!(same(
            &median.to_vec().unwrap(),
            &flat.median(0).unwrap().to_vec().unwrap()
        ));
        let along_none = x.nanpercentiles(&[10.0, 60.0], None, QuantileMethod::Weibull).unwrap();
        assert_eq!(along_none.shape(), &[2]);
        let flat_ones = flat.nanpercentiles(&[10.0, 60.0], 0, QuantileMethod::Weibull).unwrap();
        assert!(same(&along_none.to_vec().unwrap(), &flat_ones.to_vec().unwrap()));
        assert_eq!(x.quantiles(&[], None, QuantileMethod::Linear).unwrap().shape(), &[0]);
        let none = x.quantiles(&[], axis, QuantileMethod::Linear).unwrap();
        let mut empty_shape = vec![0];
        empty_shape.extend(&reduced);
        assert_eq!(none.shape(), empty_shape.as_slice());
        assert!(matches!(
            x.quantiles(&[0.5, 1.5], axis, QuantileMethod::Linear),
            Err(Error::InvalidValue(_))
        ));
        assert!(matches!(
            x.percentiles(&[f64::NAN], axis, QuantileMethod::Linear),
            Err(Error::InvalidValue(_))
        ));
    }
}

#[test]
fn complex_medians_match_numpy() {
    let Some(device) = common::device_or_skip("complex_medians_match_numpy") else {
        return;
    };
    let stream = device.create_stream().unwrap();
    let nan = f32::NAN;
    let c = Complex::new;
    let a = [
        [c(3.0, 1.0), c(1.0, 2.0), c(1.0, -1.0), c(-0.0, 5.0)],
        [c(2.0, 0.0), c(nan, 1.0), c(1.0, 1.0), c(0.0, 0.0)],
        [c(1.0, 1.0), c(1.0, 1.0), c(1.0, nan), c(0.0, -2.0)],
    ];
    let x = DeviceArray::from_slice(&stream, a.as_flattened())
        .unwrap()
        .reshape(vec![3, 4])
        .unwrap();
    // NumPy 2.4 (complex64): np.median(a, axis=1) == [1+0.5j, nan+1j, 1+nanj] (a line with a
    // NaN gives its greatest value, NaN patterns last); axis=0: [2, nan+1j, 1+nanj, 0];
    // np.nanmedian(a, axis=1) == [1+0.5j, 1+1j, 1+1j]; axis=0: [2, 1+1.5j, 1, 0].
    let check = |got: DeviceArray<Complex<f32>>, want: &[Complex<f32>], what: &str| {
        assert_eq!(bytes(&got.to_vec().unwrap()), bytes(want), "{what}");
    };
    check(
        x.median(1).unwrap(),
        &[c(1.0, 0.5), c(nan, 1.0), c(1.0, nan)],
        "median axis 1",
    );
    check(
        x.median(0).unwrap(),
        &[c(2.0, 0.0), c(nan, 1.0), c(1.0, nan), c(0.0, 0.0)],
        "median axis 0",
    );
    check(
        x.nanmedian(-1).unwrap(),
        &[c(1.0, 0.5), c(1.0, 1.0), c(1.0, 1.0)],
        "nanmedian axis 1",
    );
    check(
        x.nanmedian(0).unwrap(),
        &[c(2.0, 0.0), c(1.0, 1.5), c(1.0, 0.0), c(0.0, 0.0)],
        "nanmedian axis 0",
    );
    // complex128; a line of NaN values only: nanmedian gives nan+0j (NumPy along an axis).
    let b = DeviceArray::from_slice(
        &stream,
        &[
            Complex::new(f64::NAN, 1.0),
            Complex::new(1.0, f64::NAN),
            Complex::new(1.0, 1.0),
            Complex::new(3.0, 5.0),
        ],
    )
    .unwrap()
    .reshape(vec![2, 2])
    .unwrap();
    let nanmedian = b.nanmedian(1).unwrap().to_vec().unwrap();
    assert_eq!(
        bytes(&nanmedian),
        bytes(&[Complex::new(f64::NAN, 0.0), Complex::new(2.0, 3.0)])
    );
    let median = b.median(1).unwrap().to_vec().unwrap();
    assert_eq!(
        bytes(&median),
        bytes(&[Complex::new(f64::NAN, 1.0), Complex::new(2.0, 3.0)])
    );
    // Against a host median of random lines (odd and even lengths, NaN patterns, ties).
    for (lines, n, seed) in [(50usize, 7usize, 1u64), (20, 10, 2), (3, 3001, 3), (1, 1, 4)] {
        let host = data::<Complex<f64>>(lines * n, seed);
        let x = DeviceArray::from_slice(&stream, &host)
            .unwrap()
            .reshape(vec![lines, n])
            .unwrap();
        let (median, nanmedian) = (
            x.median(1).unwrap().to_vec().unwrap(),
            x.nanmedian(1).unwrap().to_vec().unwrap(),
        );
        for (r, line) in host.chunks(n).enumerate() {
            let mut sorted = line.to_vec();
            sorted.sort_by(Key::numpy_cmp);
            let middle = |values: &[Complex<f64>]| match values.len() {
                0 => Complex::new(f64::NAN, 0.0),
                m if m % 2 == 1 => values[m / 2],
                m => (values[m / 2 - 1] + values[m / 2]) * 0.5,
            };
            let want = match sorted.last().is_some_and(Key::has_nan) {
                true => *sorted.last().unwrap(),
                false => middle(&sorted),
            };
            assert_eq!(bytes(&[median[r]]), bytes(&[want]), "median line {r} of {lines} x {n}");
            let numbers: Vec<Complex<f64>> = sorted.iter().copied().filter(|v| !v.has_nan()).collect();
            assert_eq!(
                bytes(&[nanmedian[r]]),
                bytes(&[middle(&numbers)]),
                "nanmedian line {r} of {lines} x {n}"
            );
        }
    }
    // NumPy refuses percentile and quantile of complex arrays (TypeError).
    assert!(matches!(
        x.percentile(50.0, 1, QuantileMethod::Linear),
        Err(Error::InvalidValue(_))
    ));
    assert!(matches!(
        x.nanquantile(0.5, 0, QuantileMethod::Lower),
        Err(Error::InvalidValue(_))
    ));
    println!("complex medians match numpy");
}

#[test]
fn quantiles_of_many_lines_by_radix_select_match_the_host() {
    let Some(device) = common::device_or_skip("quantiles_of_many_lines_by_radix_select_match_the_host") else {
        return;
    };
    let stream = device.create_stream().unwrap();
    // Equal values, or both NaN (among equal zeros the select takes -0.0 first).
    let same = |a: f64, b: f64| a == b || (a.is_nan() && b.is_nan());
    // Lines of 512 to 2^16 - 1 (one block each): f64, i32 (quantiles in f64) and f32 (in f32),
    // NaN in or left out, every method; the lines along the last axis and along the first.
    for (lines, n, seed) in [
        (300usize, 512usize, 1u64),
        (64, 1000, 2),
        (5, 20_001, 3),
        (1, 65_535, 4),
    ] {
        let f64s = data::<f64>(lines * n, seed);
        let i32s = data::<i32>(lines * n, seed + 10);
        let f32s = data::<f32>(lines * n, seed + 20);
        let xf64 = DeviceArray::from_slice(&stream, &f64s)
            .unwrap()
            .reshape(vec![lines, n])
            .unwrap();
        let xi32 = DeviceArray::from_slice(&stream, &i32s)
            .unwrap()
            .reshape(vec![lines, n])
            .unwrap();
        let xf32 = DeviceArray::from_slice(&stream, &f32s)
            .unwrap()
            .reshape(vec![lines, n])
            .unwrap();
        // The same lines along axis 0 of the transpose (moved and copied to rows first).
        let tf64 = xf64.transpose().try_clone().unwrap();
        for q in [0.0, 0.1, 0.5, 0.77, 1.0] {
            for method in METHODS {
                let what = format!("{lines} x {n} q {q} {method:?}");
                let got = xf64.quantile(q, -1, method).unwrap().to_vec().unwrap();
                let along_0 = tf64.quantile(q, 0, method).unwrap().to_vec().unwrap();
                let skipping = xf64.nanquantile(q, 1, method).unwrap().to_vec().unwrap();
                let ints = xi32.quantile(q, 1, method).unwrap().to_vec().unwrap();
                let floats = xf32.quantile(q, 1, method).unwrap().to_vec().unwrap();
                let floats_skipping = xf32.nanquantile(q, 1, method).unwrap().to_vec().unwrap();
                for r in 0..lines {
                    let line = &f64s[r * n..(r + 1) * n];
                    let want = host_quantile(line, q, method);
                    assert!(same(got[r], want), "f64 {what} line {r}: {} vs {want}", got[r]);
                    assert!(same(along_0[r], want), "f64 axis 0 {what} line {r}");
                    let numbers: Vec<f64> = line.iter().copied().filter(|v| !v.is_nan()).collect();
                    let want = match numbers.is_empty() {
                        true => f64::NAN,
                        false => host_quantile(&numbers, q, method),
                    };
                    assert!(same(skipping[r], want), "f64 nanquantile {what} line {r}");
                    let line: Vec<f64> = i32s[r * n..(r + 1) * n].iter().map(|&v| f64::from(v)).collect();
                    let want = host_quantile(&line, q, method);
                    assert!(same(ints[r], want), "i32 {what} line {r}: {} vs {want}", ints[r]);
                    let line = &f32s[r * n..(r + 1) * n];
                    let want = host_quantile_f32(line, q, method);
                    assert!(same(f64::from(floats[r]), f64::from(want)), "f32 {what} line {r}");
                    let numbers: Vec<f32> = line.iter().copied().filter(|v| !v.is_nan()).collect();
                    let want = host_quantile_f32(&numbers, q, method);
                    assert!(
                        same(f64::from(floats_skipping[r]), f64::from(want)),
                        "f32 nanquantile {what} line {r}"
                    );
                }
            }
        }
        let medians = xf64.median(1).unwrap().to_vec().unwrap();
        for (r, median) in medians.iter().enumerate() {
            let want = host_quantile(&f64s[r * n..(r + 1) * n], 0.5, QuantileMethod::Linear);
            assert!(same(*median, want), "median {lines} x {n} line {r}");
        }
    }
    // Every key width and kind: the picks (lower, higher, nearest: one element each, exact in
    // the result type) of lines of 1024 against the host's sort of each line.
    fn against_sort<T: Key>(stream: &Stream) {
        let (lines, n) = (40usize, 1024usize);
        let host = data::<T>(lines * n, 50);
        let x = DeviceArray::from_slice(stream, &host)
            .unwrap()
            .reshape(vec![lines, n])
            .unwrap();
        for q in [0.0, 0.3, 0.5, 1.0] {
            for method in [QuantileMethod::Lower, QuantileMethod::Higher, QuantileMethod::Nearest] {
                let got = x.quantile(q, 1, method).unwrap().to_vec().unwrap();
                for (r, line) in host.chunks(n).enumerate() {
                    let mut sorted = line.to_vec();
                    sorted.sort_by(T::numpy_cmp);
                    let want = match sorted[n - 1].to_f64().is_nan() {
                        true => f64::NAN,
                        false => host_quantile(&sorted.iter().map(|v| v.to_f64()).collect::<Vec<_>>(), q, method),
                    };
                    let got = got[r].to_f64();
                    assert!(
                        got == want || (got.is_nan() && want.is_nan()),
                        "{:?} q {q} {method:?} line {r}: {got} vs {want}",
                        T::DTYPE
                    );
                }
            }
        }
    }
    against_sort::<Bool>(&stream);
    against_sort::<i8>(&stream);
    against_sort::<u8>(&stream);
    against_sort::<i16>(&stream);
    against_sort::<u16>(&stream);
    against_sort::<u32>(&stream);
    against_sort::<i64>(&stream);
    against_sort::<u64>(&stream);
    against_sort::<f16>(&stream);
    against_sort::<bf16>(&stream);
    println!("quantiles of many lines by radix select match the host");
}
