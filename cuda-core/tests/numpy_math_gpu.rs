//! The NumPy surface of issue 23 on a GPU against host references: `round` (NumPy's `around`,
//! ties to even, every decimals sign) and `nan_to_num` across integer, `f16`, `bf16`, `f32` and
//! `f64` arrays, views and fused reductions; `nanargmax`/`nanargmin` with their all-NaN error;
//! the weighted `average` with its weight sums and errors; and `.npy` round trips of every
//! dtype, `fortran_order` files and bytes laid out as NumPy writes them. Without a driver or
//! device each test prints `skipped: <why>` and passes, unless `CUDA_REQUIRE_GPU=1`.

mod common;

use cuda_core::{DeviceArray, Element, Error, ExprOps, NpyError, Slice};
use cuda_driver::Stream;
use half::{bf16, f16};

fn stream_or_skip(test: &str) -> Option<Stream> {
    common::device_or_skip(test).map(|device| device.create_stream().unwrap())
}

/// Equal as NumPy's `array_equal(equal_nan=True)` would say, and with the same sign of zero.
fn same(a: f64, b: f64) -> bool {
    (a.is_nan() && b.is_nan()) || (a == b && a.is_sign_negative() == b.is_sign_negative())
}

#[track_caller]
fn assert_values<T: Element>(what: &str, got: &DeviceArray<T>, expected: &[f64]) {
    let got: Vec<f64> = got.to_vec().unwrap().into_iter().map(Element::to_f64).collect();
    assert_eq!(got.len(), expected.len(), "{what}: length");
    for (i, (g, e)) in got.iter().zip(expected).enumerate() {
        assert!(same(*g, *e), "{what}: element {i} is {g}, the host says {e}");
    }
}

fn power_of_ten(n: u32) -> f64 {
    (0..n).fold(1.0, |p, _| p * 10.0)
}

/// NumPy's `around` in `f64`.
fn around_f64(x: f64, decimals: i32) -> f64 {
    let scale = power_of_ten(decimals.unsigned_abs());
    match decimals >= 0 {
        true => (x * scale).round_ties_even() / scale,
        false => (x / scale).round_ties_even() * scale,
    }
}

/// NumPy's `around` in `f32`.
fn around_f32(x: f32, decimals: i32) -> f32 {
    let scale = power_of_ten(decimals.unsigned_abs()) as f32;
    match decimals >= 0 {
        true => (x * scale).round_ties_even() / scale,
        false => (x / scale).round_ties_even() * scale,
    }
}

/// NumPy's `around` in a 16-bit float: computed in `f32`, rounded to the type after each step.
fn around_half<H: Element>(x: H, decimals: i32) -> H {
    let to = |v: f32| H::from_f64(f64::from(v)).to_f64() as f32;
    let scale = to(power_of_ten(decimals.unsigned_abs()) as f32);
    let x = x.to_f64() as f32;
    let scaled = match decimals >= 0 {
        true => to(x * scale),
        false => to(x / scale),
    };
    let rounded = to(scaled.round_ties_even());
    H::from_f64(f64::from(match decimals >= 0 {
        true => rounded / scale,
        false => rounded * scale,
    }))
}

const FLOATS: [f64; 14] = [
    0.125,
    2.5,
    -2.5,
    1.55,
    -1.55,
    2.675,
    1234.5678,
    0.5,
    1.5,
    -0.0,
    -0.4,
    f64::NAN,
    f64::INFINITY,
    65.25,
];

#[test]
fn round_matches_numpys_around_for_every_type_family_and_views() {
    let Some(stream) = stream_or_skip("round_matches_numpys_around_for_every_type_family_and_views") else {
        return;
    };
    for decimals in [-2, -1, 0, 1, 2, 3] {
        let x = DeviceArray::from_slice(&stream, &FLOATS).unwrap();
        let expected: Vec<f64> = FLOATS.iter().map(|&v| around_f64(v, decimals)).collect();
        assert_values(
            &format!("f64 round({decimals})"),
            &x.round(decimals).eval().unwrap(),
            &expected,
        );

        let host: Vec<f32> = FLOATS.iter().map(|&v| v as f32).collect();
        let x = DeviceArray::from_slice(&stream, &host).unwrap();
        let expected: Vec<f64> = host.iter().map(|&v| f64::from(around_f32(v, decimals))).collect();
        assert_values(
            &format!("f32 round({decimals})"),
            &x.round(decimals).eval().unwrap(),
            &expected,
        );

        let host: Vec<f16> = FLOATS.iter().map(|&v| f16::from_f64(v)).collect();
        let x = DeviceArray::from_slice(&stream, &host).unwrap();
        let expected: Vec<f64> = host.iter().map(|&v| around_half(v, decimals).to_f64()).collect();
        assert_values(
            &format!("f16 round({decimals})"),
            &x.round(decimals).eval().unwrap(),
            &expected,
        );

        let host: Vec<bf16> = FLOATS.iter().map(|&v| bf16::from_f64(v)).collect();
        let x = DeviceArray::from_slice(&stream, &host).unwrap();
        let expected: Vec<f64> = host.iter().map(|&v| around_half(v, decimals).to_f64()).collect();
        assert_values(
            &format!("bf16 round({decimals})"),
            &x.round(decimals).eval().unwrap(),
            &expected,
        );

        // Integers: unchanged for decimals >= 0, else to a multiple of 10^-decimals, ties to even.
        let ints = [-1250i32, -1350, 1250, 1350, 7, -7, 15, 25, 35, 123_456_789, 0, -5];
        let x = DeviceArray::from_slice(&stream, &ints).unwrap();
        let expected: Vec<f64> = ints
            .iter()
            .map(|&v| match decimals >= 0 {
                true => f64::from(v),
                // `+ 0.0`: an integer has no negative zero.
                false => around_f64(f64::from(v), decimals) + 0.0,
            })
            .collect();
        let rounded = x.round(decimals).eval().unwrap();
        assert_eq!(rounded.dtype(), cuda_core::DType::I32);
        assert_values(&format!("i32 round({decimals})"), &rounded, &expected);
        let small: Vec<u8> = vec![5, 15, 25, 250, 149, 0];
        let x = DeviceArray::from_slice(&stream, &small).unwrap();
        let expected: Vec<f64> = small
            .iter()
            .map(|&v| match decimals >= 0 {
                true => f64::from(v),
                false => around_f64(f64::from(v), decimals).min(255.0) + 0.0,
            })
            .collect();
        assert_values(
            &format!("u8 round({decimals})"),
            &x.round(decimals).eval().unwrap(),
            &expected,
        );
    }

    // A strided, transposed view, fused with more arithmetic and reduced without a temporary.
    let host: Vec<f32> = (0..48).map(|i| i as f32 * 0.37 - 7.0).collect();
    let matrix = DeviceArray::from_slice(&stream, &host)
        .unwrap()
        .reshape([6, 8])
        .unwrap();
    let view = matrix
        .slice(&[Slice::from(..), Slice::ALL.step(2)])
        .unwrap()
        .transpose();
    let mut expected = Vec::new();
    for j in (0..8).step_by(2) {
        for i in 0..6 {
            expected.push(f64::from(around_f32(host[i * 8 + j], 1) * 2.0));
        }
    }
    assert_values("round of a view", &(view.round(1) * 2.0).eval().unwrap(), &expected);
    let total = view.round(1).sum().unwrap().item().unwrap();
    let host_total: f64 = expected.iter().sum::<f64>() / 2.0;
    assert!((f64::from(total) - host_total).abs() < 1e-3, "{total} vs {host_total}");
}

#[test]
fn nan_to_num_replaces_with_the_types_limits_or_given_values() {
    let Some(stream) = stream_or_skip("nan_to_num_replaces_with_the_types_limits_or_given_values") else {
        return;
    };
    let specials = [f64::NAN, f64::INFINITY, f64::NEG_INFINITY, 1.5, -0.0, -3.25];
    let replace = |v: f64, nan: f64, posinf: f64, neginf: f64| match v {
        v if v.is_nan() => nan,
        f64::INFINITY => posinf,
        f64::NEG_INFINITY => neginf,
        v => v,
    };
    fn run<T: Element + cuda_core::Scalars>(
        stream: &Stream,
        specials: &[f64],
        largest: f64,
        replace: &dyn Fn(f64, f64, f64, f64) -> f64,
    ) {
        let host: Vec<T> = specials.iter().map(|&v| T::from_f64(v)).collect();
        let x = DeviceArray::from_slice(stream, &host).unwrap();
        let expected: Vec<f64> = specials.iter().map(|&v| replace(v, 0.0, largest, -largest)).collect();
        assert_values(
            &format!("{} defaults", T::DTYPE),
            &x.nan_to_num(0.0, None, None).eval().unwrap(),
            &expected,
        );
        let expected: Vec<f64> = specials.iter().map(|&v| replace(v, -1.0, 100.0, -100.0)).collect();
        let given = x.nan_to_num(-1.0, Some(100.0), Some(-100.0)).eval().unwrap();
        assert_values(&format!("{} given", T::DTYPE), &given, &expected);
        // Fused into a reduction: one kernel, no temporary.
        let total = x
            .nan_to_num(-1.0, Some(100.0), Some(-100.0))
            .sum()
            .unwrap()
            .item()
            .unwrap();
        assert!(
            same(total.to_f64(), expected.iter().sum()),
            "{}: sum {}",
            T::DTYPE,
            total.to_f64()
        );
    }
    run::<f64>(&stream, &specials, f64::MAX, &replace);
    run::<f32>(&stream, &specials, f64::from(f32::MAX), &replace);
    run::<f16>(&stream, &specials, 65504.0, &replace);
    run::<bf16>(&stream, &specials, bf16::MAX.to_f64(), &replace);
    // Integers are unchanged; a value beyond f16's range becomes infinite, as NumPy's cast.
    let ints = DeviceArray::from_slice(&stream, &[i64::MAX, -3, 0]).unwrap();
    assert_eq!(
        ints.nan_to_num(0.0, None, None).eval().unwrap().to_vec().unwrap(),
        [i64::MAX, -3, 0]
    );
    let halves = DeviceArray::from_slice(&stream, &[f16::INFINITY]).unwrap();
    let out = halves
        .nan_to_num(0.0, Some(1e6), None)
        .eval()
        .unwrap()
        .to_vec()
        .unwrap();
    assert_eq!(out, [f16::INFINITY]);
}

#[test]
fn nanargmax_and_nanargmin_skip_nans_and_refuse_all_nan_slices() {
    let Some(stream) = stream_or_skip("nanargmax_and_nanargmin_skip_nans_and_refuse_all_nan_slices") else {
        return;
    };
    let nan = f64::NAN;
    // (3, 4): NaNs scattered, ties resolved to the first.
    let data = [nan, 2.0, 7.0, 7.0, 3.0, nan, -1.0, 4.0, 5.0, 5.0, nan, -1.0];
    fn family<T: cuda_core::Scalars>(stream: &Stream, data: &[f64]) {
        let host: Vec<T> = data.iter().map(|&v| T::from_f64(v)).collect();
        let x = DeviceArray::from_slice(stream, &host).unwrap().reshape([3, 4]).unwrap();
        let name = T::DTYPE;
        assert_eq!(x.nanargmax().unwrap().item().unwrap(), 2, "{name}");
        assert_eq!(x.nanargmin().unwrap().item().unwrap(), 6, "{name}");
        assert_eq!(
            x.nanargmax_axis(1, false).unwrap().to_vec().unwrap(),
            [2, 3, 0],
            "{name}"
        );
        assert_eq!(
            x.nanargmin_axis(1, false).unwrap().to_vec().unwrap(),
            [1, 2, 3],
            "{name}"
        );
        let down = x.nanargmax_axis(0, true).unwrap();
        assert_eq!(down.shape(), [1, 4]);
        assert_eq!(down.to_vec().unwrap(), [2, 2, 0, 0], "{name}");
        assert_eq!(
            x.nanargmin_axis(0, false).unwrap().to_vec().unwrap(),
            [1, 0, 1, 2],
            "{name}"
        );
        // A transposed view: the axes swap.
        let t = x.transpose();
        assert_eq!(
            t.nanargmax_axis(0, false).unwrap().to_vec().unwrap(),
            [2, 3, 0],
            "{name}"
        );
        // An expression: fused.
        assert_eq!((&x * 2.0).nanargmax().unwrap().item().unwrap(), 2, "{name}");
    }
    family::<f32>(&stream, &data);
    family::<f64>(&stream, &data);
    family::<f16>(&stream, &data);
    // Integers have no NaN: the same as argmax.
    let ints = DeviceArray::from_slice(&stream, &[3i16, 9, -2, 9]).unwrap();
    assert_eq!(ints.nanargmax().unwrap().item().unwrap(), 1);
    assert_eq!(ints.nanargmin().unwrap().item().unwrap(), 2);
    // NumPy reads a NaN as -inf (inf): it ties with an infinity, and the first of them wins.
    let inf = f64::INFINITY;
    let edge = |values: &[f64]| DeviceArray::from_slice(&stream, values).unwrap();
    assert_eq!(edge(&[nan, -inf]).nanargmax().unwrap().item().unwrap(), 0);
    assert_eq!(edge(&[-inf, nan, -inf]).nanargmax().unwrap().item().unwrap(), 0);
    assert_eq!(edge(&[nan, inf]).nanargmin().unwrap().item().unwrap(), 0);
    assert_eq!(edge(&[inf, nan]).nanargmin().unwrap().item().unwrap(), 0);

    let all_nan = DeviceArray::from_slice(&stream, &[1.0f32, 2.0, nan as f32, nan as f32])
        .unwrap()
        .reshape([2, 2])
        .unwrap();
    assert!(matches!(all_nan.nanargmax_axis(1, false), Err(Error::InvalidValue(m)) if m.contains("all-NaN")));
    assert!(all_nan.nanargmin_axis(0, false).is_ok(), "each column has a number");
    let only_nan = DeviceArray::from_slice(&stream, &[nan]).unwrap();
    assert!(matches!(only_nan.nanargmin(), Err(Error::InvalidValue(m)) if m.contains("all-NaN")));
    let empty = DeviceArray::<f32>::empty(&stream, [0]).unwrap();
    assert!(matches!(empty.nanargmax(), Err(Error::InvalidValue(_))));
}

#[test]
fn weighted_average_matches_the_host_with_its_weight_sums() {
    let Some(stream) = stream_or_skip("weighted_average_matches_the_host_with_its_weight_sums") else {
        return;
    };
    let values: Vec<i32> = (0..12).map(|i| (i * 7) % 11 - 3).collect();
    let weights: Vec<f32> = (0..12).map(|i| 0.5 + (i % 4) as f32).collect();
    let x = DeviceArray::from_slice(&stream, &values)
        .unwrap()
        .reshape([3, 4])
        .unwrap();
    let w = DeviceArray::from_slice(&stream, &weights)
        .unwrap()
        .reshape([3, 4])
        .unwrap();
    let at = |i: usize, j: usize| (f64::from(values[i * 4 + j]), f64::from(weights[i * 4 + j]));

    // Every element: i32 values with f32 weights average in f64, as NumPy.
    let whole = x.average(&w, None, false).unwrap();
    assert_eq!(whole.average.dtype(), cuda_core::DType::F64);
    let (num, den) = (0..3)
        .flat_map(|i| (0..4).map(move |j| (i, j)))
        .map(|(i, j)| at(i, j))
        .fold((0.0, 0.0), |(n, d), (v, w)| (n + v * w, d + w));
    assert!((whole.average.item().unwrap() - num / den).abs() < 1e-12);
    assert_eq!(whole.weight_sum.item().unwrap(), den);

    // Along each axis, with full-shape weights and keepdims.
    let rows = x.average(&w, -1, true).unwrap();
    assert_eq!(rows.average.shape(), [3, 1]);
    let expected: Vec<f64> = (0..3)
        .map(|i| {
            let (n, d) = (0..4)
                .map(|j| at(i, j))
                .fold((0.0, 0.0), |(n, d), (v, w)| (n + v * w, d + w));
            n / d
        })
        .collect();
    for (g, e) in rows.average.to_vec().unwrap().iter().zip(&expected) {
        assert!((g - e).abs() < 1e-12, "{g} vs {e}");
    }

    // 1-D weights along axis 0 of a transposed view (a (4, 3) view of x).
    let line = DeviceArray::from_slice(&stream, &[1.0f64, 2.0, 3.0, 4.0]).unwrap();
    let t = x.transpose();
    let down = t.average(&line, [0], false).unwrap();
    assert_eq!(down.average.shape(), [3]);
    assert_eq!(
        down.weight_sum.to_vec().unwrap(),
        [10.0; 3],
        "the weight sum has the average's shape"
    );
    let expected: Vec<f64> = (0..3)
        .map(|i| {
            (0..4)
                .map(|j| f64::from(values[i * 4 + j]) * (j + 1) as f64)
                .sum::<f64>()
                / 10.0
        })
        .collect();
    for (g, e) in down.average.to_vec().unwrap().iter().zip(&expected) {
        assert!((g - e).abs() < 1e-12, "{g} vs {e}");
    }

    // f16 values with f16 weights stay f16 (accumulated in f32).
    let hv: Vec<f16> = (0..8).map(|i| f16::from_f32(i as f32 * 0.5)).collect();
    let hw: Vec<f16> = (0..8).map(|i| f16::from_f32(1.0 + (i % 2) as f32)).collect();
    let h = DeviceArray::from_slice(&stream, &hv).unwrap();
    let hweights = DeviceArray::from_slice(&stream, &hw).unwrap();
    let avg = h.average(&hweights, None, false).unwrap();
    assert_eq!(avg.average.dtype(), cuda_core::DType::F16);
    let (n, d) = hv.iter().zip(&hw).fold((0.0, 0.0), |(n, d), (v, w)| {
        (n + v.to_f64() * w.to_f64(), d + w.to_f64())
    });
    assert!((avg.average.item().unwrap().to_f64() - n / d).abs() < 1e-2);

    // Errors: weights summing to zero, weights that fit no axis, axes out of range.
    let zero = DeviceArray::from_slice(&stream, &[1.0f32, -1.0, 2.0, -2.0]).unwrap();
    let flat = x.reshape([12]).unwrap();
    let four = flat.slice(&[Slice::from(..4)]).unwrap();
    assert!(matches!(four.average(&zero, None, false), Err(Error::InvalidValue(m)) if m.contains("sum to zero")));
    assert!(matches!(x.average(&line, None, false), Err(Error::InvalidValue(m)) if m.contains("do not fit")));
    assert!(matches!(x.average(&line, 0, false), Err(Error::InvalidValue(_))));
    assert!(matches!(x.average(&w, 2, false), Err(Error::Axis { axis: 2, ndim: 2 })));
    assert!(matches!(
        x.average(&line, [-3], false),
        Err(Error::Axis { axis: -3, ndim: 2 })
    ));
}

/// Writes `x` as `.npy` bytes, reads them back, and compares.
/// NumPy 2 compares an array with a Python int beyond its type exactly (`u8 < 300` is true
/// everywhere), while arithmetic with such an int raises.
#[test]
fn comparisons_with_integers_beyond_the_type_are_exact() {
    let Some(stream) = stream_or_skip("comparisons_with_integers_beyond_the_type_are_exact") else {
        return;
    };
    let u = DeviceArray::from_slice(&stream, &[0u8, 7, 255]).unwrap();
    assert_values("u8 < 300", &u.lt(300).eval().unwrap(), &[1.0, 1.0, 1.0]);
    assert_values("u8 == -129", &u.eq(-129).eval().unwrap(), &[0.0, 0.0, 0.0]);
    assert_values("u8 >= -1", &u.ge(-1).eval().unwrap(), &[1.0, 1.0, 1.0]);
    assert_values("u8 != 300", &u.ne(300).eval().unwrap(), &[1.0, 1.0, 1.0]);
    assert_values("u8 > 1000", &u.gt(1000).eval().unwrap(), &[0.0, 0.0, 0.0]);
    assert_values("u8 < 255 (in range)", &u.lt(255).eval().unwrap(), &[1.0, 1.0, 0.0]);
    let i = DeviceArray::from_slice(&stream, &[-5i64, 0, i64::MAX]).unwrap();
    assert_values("i64 < 2^64 - 1", &i.lt(u64::MAX).eval().unwrap(), &[1.0, 1.0, 1.0]);
    assert_values("i64 == 2^63", &i.eq(1u64 << 63).eval().unwrap(), &[0.0, 0.0, 0.0]);
    let big = DeviceArray::from_slice(&stream, &[0u64, u64::MAX]).unwrap();
    assert_values("u64 > -1", &big.gt(-1).eval().unwrap(), &[1.0, 1.0]);
    assert_values("u64 == -1", &big.eq(-1).eval().unwrap(), &[0.0, 0.0]);
    let small = DeviceArray::from_slice(&stream, &[-128i8, 127]).unwrap();
    assert_values("i8 > -129", &small.gt(-129).eval().unwrap(), &[1.0, 1.0]);
    assert_values("i8 <= 127 (in range)", &small.le(127).eval().unwrap(), &[1.0, 1.0]);
    assert_values("i8 == 200", &small.eq(200).eval().unwrap(), &[0.0, 0.0]);
    // Arithmetic with such an int is still refused (NumPy: OverflowError).
    assert!(matches!((&u + 300).eval(), Err(Error::InvalidValue(_))));
}

/// NumPy 2 has no bool form of `-`, `negative`, `sign` (TypeError) and gives int8 for
/// `square`, `reciprocal`, `power`, `//`, `%` and `fmod` of bools.
#[test]
fn bool_arithmetic_follows_numpy() {
    let Some(stream) = stream_or_skip("bool_arithmetic_follows_numpy") else {
        return;
    };
    use cuda_core::Bool;
    let a = DeviceArray::from_slice(&stream, &[Bool::TRUE, Bool::FALSE]).unwrap();
    let b = DeviceArray::from_slice(&stream, &[Bool::FALSE, Bool::TRUE]).unwrap();
    let square: DeviceArray<i8> = a.square().eval().unwrap();
    assert_values("square", &square, &[1.0, 0.0]);
    let reciprocal: DeviceArray<i8> = a.reciprocal().eval().unwrap();
    assert_values("reciprocal", &reciprocal, &[1.0, 0.0]);
    let power: DeviceArray<i8> = a.pow(&b).eval().unwrap();
    assert_values("power", &power, &[1.0, 0.0]);
    let floor_divide: DeviceArray<i8> = a.floor_divide(&b).eval().unwrap();
    assert_values("floor_divide", &floor_divide, &[0.0, 0.0]);
    let remainder: DeviceArray<i8> = a.remainder(&b).eval().unwrap();
    assert_values("remainder", &remainder, &[0.0, 0.0]);
    let fmod: DeviceArray<i8> = a.fmod(&b).eval().unwrap();
    assert_values("fmod", &fmod, &[0.0, 0.0]);
    let with_int: DeviceArray<i64> = a.pow(2).eval().unwrap();
    assert_values("np.power(bool, 2)", &with_int, &[1.0, 0.0]);
    let sum: DeviceArray<Bool> = (&a + &b).eval().unwrap();
    assert_values("bool + bool", &sum, &[1.0, 1.0]);
    for (what, result) in [
        ("a - b", (&a - &b).eval()),
        ("-a", (-&a).eval()),
        ("sign", a.sign().eval()),
        ("ptp", a.ptp()),
    ] {
        assert!(matches!(result, Err(Error::InvalidValue(_))), "{what}: {result:?}");
    }
}

fn round_trip<T: Element + PartialEq + std::fmt::Debug>(stream: &Stream, host: &[T], shape: &[usize]) {
    let x = DeviceArray::from_slice(stream, host)
        .unwrap()
        .reshape(shape.to_vec())
        .unwrap();
    let mut bytes = Vec::new();
    x.write_npy(&mut bytes).unwrap();
    assert_eq!(bytes.len() % 64, std::mem::size_of_val(host) % 64, "64-byte header");
    let y = DeviceArray::<T>::read_npy(stream, bytes.as_slice()).unwrap();
    assert_eq!(y.shape(), shape, "{}", T::DTYPE);
    assert_eq!(y.to_vec().unwrap(), host, "{}", T::DTYPE);
}

#[test]
fn npy_round_trips_every_dtype_and_reads_numpys_layout() {
    let Some(stream) = stream_or_skip("npy_round_trips_every_dtype_and_reads_numpys_layout") else {
        return;
    };
    round_trip(&stream, &[cuda_core::Bool::TRUE, cuda_core::Bool::FALSE], &[2]);
    round_trip(&stream, &[-1i8, 2, 3, -4, 5, 6], &[2, 3]);
    round_trip(&stream, &[-1i16, 300], &[2]);
    round_trip(&stream, &[i32::MIN, 7, i32::MAX, 0], &[2, 2]);
    round_trip(&stream, &[i64::MIN, i64::MAX], &[1, 2]);
    round_trip(&stream, &[255u8], &[]);
    round_trip(&stream, &[65535u16, 1], &[2, 1]);
    round_trip(&stream, &[u32::MAX], &[1]);
    round_trip(&stream, &[u64::MAX, 3], &[2]);
    round_trip(&stream, &[f16::from_f32(1.5), f16::NEG_INFINITY], &[2]);
    round_trip(&stream, &[1.25f32, -0.0, 3.0e38], &[3, 1, 1]);
    round_trip(&stream, &[std::f64::consts::PI; 6], &[3, 2]);
    round_trip::<f32>(&stream, &[], &[0, 3]);

    // A view saves in C order; through a file and back.
    let host: Vec<f32> = (0..6).map(|i| i as f32).collect();
    let x = DeviceArray::from_slice(&stream, &host)
        .unwrap()
        .reshape([2, 3])
        .unwrap();
    let path = common::temp_dir("npy").join("t.npy");
    x.transpose().save_npy(&path).unwrap();
    let y = DeviceArray::<f32>::load_npy(&stream, &path).unwrap();
    assert_eq!(y.shape(), [3, 2]);
    assert_eq!(y.to_vec().unwrap(), [0.0, 3.0, 1.0, 4.0, 2.0, 5.0]);

    // The bytes of `np.save(f, np.arange(6, dtype='<i2').reshape(2, 3))`, written out by hand.
    let mut numpy = b"\x93NUMPY\x01\x00v\x00{'descr': '<i2', 'fortran_order': False, 'shape': (2, 3), }".to_vec();
    numpy.resize(127, b' ');
    numpy.push(b'\n');
    numpy.extend([0u8, 0, 1, 0, 2, 0, 3, 0, 4, 0, 5, 0]);
    let z = DeviceArray::<i16>::read_npy(&stream, numpy.as_slice()).unwrap();
    assert_eq!(z.shape(), [2, 3]);
    assert_eq!(z.to_vec().unwrap(), [0, 1, 2, 3, 4, 5]);

    // `np.save(f, np.asfortranarray(...))` of the same values: column-major data, a transposed view.
    let mut fortran = b"\x93NUMPY\x01\x00v\x00{'descr': '<i2', 'fortran_order': True, 'shape': (2, 3), }".to_vec();
    fortran.resize(127, b' ');
    fortran.push(b'\n');
    fortran.extend([0u8, 0, 3, 0, 1, 0, 4, 0, 2, 0, 5, 0]);
    let f = DeviceArray::<i16>::read_npy(&stream, fortran.as_slice()).unwrap();
    assert_eq!(f.shape(), [2, 3]);
    assert_eq!(f.to_vec().unwrap(), [0, 1, 2, 3, 4, 5]);
    assert!(!f.is_contiguous(), "a view of the data, not a copy");

    // Typed errors: another dtype, truncated data, bf16, a missing file.
    assert!(matches!(
        DeviceArray::<i32>::read_npy(&stream, numpy.as_slice()),
        Err(Error::Npy(NpyError::Dtype { .. }))
    ));
    assert!(matches!(
        DeviceArray::<i16>::read_npy(&stream, &numpy[..numpy.len() - 3]),
        Err(Error::Npy(NpyError::Truncated { expected: 12, found: 9 }))
    ));
    let b = DeviceArray::from_slice(&stream, &[bf16::ONE]).unwrap();
    assert!(matches!(
        b.write_npy(Vec::new()),
        Err(Error::Npy(NpyError::NoNumpyDtype(_)))
    ));
    assert!(matches!(
        DeviceArray::<f32>::load_npy(&stream, path.with_extension("missing")),
        Err(Error::Npy(NpyError::Io { path: Some(_), .. }))
    ));
}
