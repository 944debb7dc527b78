//! NumPy-style array code on a GPU: fused expressions against a host reference for every
//! operator and several element types (f16 and bf16 included), views, broadcasting (in
//! expressions and `ElementwiseKernel`), creation functions, and the typed errors of bad input.
//! Without a driver or device each test prints `skipped: <why>` and passes, unless
//! `CUDA_REQUIRE_GPU=1`.

mod common;

use cuda_core::{where_, Arg, Bool, DeviceArray, Element, ElementwiseKernel, Error, ExprOps, MemoryPool, Slice};
use cuda_driver::{Context, ContextFlags, Stream};
use half::{bf16, f16};

fn close(a: f64, b: f64, tolerance: f64) -> bool {
    (a.is_nan() && b.is_nan()) || a == b || (a - b).abs() <= tolerance * (1.0 + b.abs())
}

fn assert_close<T: Element>(what: &str, got: &[T], expected: &[f64], tolerance: f64) {
    assert_eq!(got.len(), expected.len(), "{what}: length");
    for (i, (g, e)) in got.iter().zip(expected).enumerate() {
        assert!(
            close(g.to_f64(), *e, tolerance),
            "{what}: element {i} is {}, expected {e}",
            g.to_f64()
        );
    }
}

#[test]
fn the_seed_snippet_runs_as_one_fused_kernel() {
    let Some(device) = common::device_or_skip("the_seed_snippet_runs_as_one_fused_kernel") else {
        return;
    };
    let stream = device.create_stream().unwrap();
    let n = 1 << 20;
    let xs: Vec<f32> = (0..n).map(|i| (i % 1000) as f32 / 1000.0).collect();
    let ys: Vec<f32> = (0..n).map(|i| (i % 7) as f32).collect();
    let x = DeviceArray::from_slice(&stream, &xs).unwrap();
    let y = DeviceArray::from_slice(&stream, &ys).unwrap();
    let z = (2.0 * &x + &y).eval().unwrap();
    let expected: Vec<f64> = xs.iter().zip(&ys).map(|(&a, &b)| (2.0 * a + b) as f64).collect();
    assert_close("2x+y", &z.to_vec().unwrap(), &expected, 0.0);
    let total = z.sum().unwrap().item().unwrap() as f64;
    let reference: f64 = expected.iter().sum();
    assert!(close(total, reference, 1e-5), "sum {total} vs {reference}");
}

/// Every operator over arrays of `A` and `B`, against the same operation on the host in `f64`.
macro_rules! every_operator {
    ($stream:expr, $a:ty, $b:ty, $tolerance:expr) => {{
        type A = $a;
        type B = $b;
        let (stream, tolerance): (&Stream, f64) = ($stream, $tolerance);
        let a_host: Vec<A> = (0..64).map(|i| A::from_f64(((i % 9) as f64 - 3.0) * 0.75)).collect();
        let b_host: Vec<B> = (0..64).map(|i| B::from_f64(((i % 5) as f64) * 0.5 + 0.5)).collect();
        let a = DeviceArray::from_slice(stream, &a_host).unwrap();
        let b = DeviceArray::from_slice(stream, &b_host).unwrap();
        let av: Vec<f64> = a_host.iter().map(|v| v.to_f64()).collect();
        let bv: Vec<f64> = b_host.iter().map(|v| v.to_f64()).collect();
        let name = format!("{} with {}", A::DTYPE, B::DTYPE);
        let map = |f: &dyn Fn(f64, f64) -> f64| -> Vec<f64> { av.iter().zip(&bv).map(|(&x, &y)| f(x, y)).collect() };
        let check = |what: &str, got: Vec<f64>, expected: Vec<f64>| {
            for (i, (g, e)) in got.iter().zip(&expected).enumerate() {
                assert!(close(*g, *e, tolerance), "{name}: {what}[{i}] = {g}, expected {e}");
            }
        };
        let as_f64 = |v: Vec<f64>| v;
        check("a + b", to_f64((&a + &b).eval().unwrap()), map(&|x, y| x + y));
        check("a - b", to_f64((&a - &b).eval().unwrap()), map(&|x, y| x - y));
        check("a * b", to_f64((&a * &b).eval().unwrap()), map(&|x, y| x * y));
        check("a / b", to_f64((&a / &b).eval().unwrap()), map(&|x, y| x / y));
        check(
            "-a",
            to_f64((-&a).eval().unwrap()),
            as_f64(av.iter().map(|x| -x).collect()),
        );
        check(
            "abs(a)",
            to_f64(a.abs().eval().unwrap()),
            av.iter().map(|x| x.abs()).collect(),
        );
        check(
            "sqrt(b)",
            to_f64(b.sqrt().eval().unwrap()),
            bv.iter().map(|x| x.sqrt()).collect(),
        );
        check(
            "exp(b)",
            to_f64(b.exp().eval().unwrap()),
            bv.iter().map(|x| x.exp()).collect(),
        );
        check(
            "log(b)",
            to_f64(b.log().eval().unwrap()),
            bv.iter().map(|x| x.ln()).collect(),
        );
        check(
            "sin(a)",
            to_f64(a.sin().eval().unwrap()),
            av.iter().map(|x| x.sin()).collect(),
        );
        check(
            "cos(a)",
            to_f64(a.cos().eval().unwrap()),
            av.iter().map(|x| x.cos()).collect(),
        );
        check(
            "tanh(a)",
            to_f64(a.tanh().eval().unwrap()),
            av.iter().map(|x| x.tanh()).collect(),
        );
        check(
            "max(a, b)",
            to_f64(a.maximum(&b).eval().unwrap()),
            map(&|x, y| x.max(y)),
        );
        check(
            "min(a, b)",
            to_f64(a.minimum(&b).eval().unwrap()),
            map(&|x, y| x.min(y)),
        );
        check(
            "b ** 2",
            to_f64(b.pow(&b).eval().unwrap()),
            bv.iter().map(|x| x.powf(*x)).collect(),
        );
        let truth = |e: cuda_core::Expr<'_, Bool>| -> Vec<f64> { to_f64(e.eval().unwrap()) };
        let flag = |c: bool| c as u8 as f64;
        check("a < b", truth(a.lt(&b)), map(&|x, y| flag(x < y)));
        check("a <= b", truth(a.le(&b)), map(&|x, y| flag(x <= y)));
        check("a > b", truth(a.gt(&b)), map(&|x, y| flag(x > y)));
        check("a >= b", truth(a.ge(&b)), map(&|x, y| flag(x >= y)));
        check("a == b", truth(a.eq(&b)), map(&|x, y| flag(x == y)));
        check("a != b", truth(a.ne(&b)), map(&|x, y| flag(x != y)));
        check(
            "where(a < b, a, b)",
            to_f64(where_(a.lt(&b), &a, &b).eval().unwrap()),
            map(&|x, y| if x < y { x } else { y }),
        );
        check(
            "fused 2a*b - a/3 + 1",
            to_f64((2.0 * &a * &b - &a / 3.0 + 1.0).eval().unwrap()),
            map(&|x, y| 2.0 * x * y - x / 3.0 + 1.0),
        );
    }};
}

fn to_f64<T: Element>(array: DeviceArray<T>) -> Vec<f64> {
    array.to_vec().unwrap().into_iter().map(Element::to_f64).collect()
}

#[test]
fn every_operator_matches_the_host_for_float_types() {
    let Some(device) = common::device_or_skip("every_operator_matches_the_host_for_float_types") else {
        return;
    };
    let stream = device.create_stream().unwrap();
    every_operator!(&stream, f32, f32, 1e-6);
    every_operator!(&stream, f64, f64, 1e-12);
    every_operator!(&stream, f32, f64, 1e-6);
    every_operator!(&stream, f16, f16, 2e-3);
    every_operator!(&stream, bf16, bf16, 1.6e-2);
    // Unary math of the f16 operand stays f16.
    every_operator!(&stream, f16, f32, 2e-3);
}

#[test]
fn integer_expressions_promote_and_wrap_like_numpy() {
    let Some(device) = common::device_or_skip("integer_expressions_promote_and_wrap_like_numpy") else {
        return;
    };
    let stream = device.create_stream().unwrap();
    let a = DeviceArray::from_slice(&stream, &[200u8, 100, 7]).unwrap();
    let b = DeviceArray::from_slice(&stream, &[100u8, 200, 2]).unwrap();
    assert_eq!((&a + &b).eval().unwrap().to_vec().unwrap(), [44, 44, 9], "uint8 wraps");
    let c = DeviceArray::from_slice(&stream, &[-1i8, 5, -128]).unwrap();
    let mixed = (&a + &c).eval().unwrap();
    assert_eq!(mixed.dtype(), cuda_core::DType::I16, "uint8 + int8 is int16");
    assert_eq!(mixed.to_vec().unwrap(), [199, 105, -121]);
    let halves = (&a / 2).eval().unwrap();
    assert_eq!(
        halves.dtype(),
        cuda_core::DType::F64,
        "uint8 / int is true division in float64, as in NumPy 2"
    );
    assert_eq!(to_f64(halves), [100.0, 50.0, 3.5]);
    let i = DeviceArray::from_slice(&stream, &[3i32, -4, 10]).unwrap();
    assert_eq!(
        i.pow(&DeviceArray::from_slice(&stream, &[3i32, 2, 0]).unwrap())
            .eval()
            .unwrap()
            .to_vec()
            .unwrap(),
        [27, 16, 1]
    );
    assert_eq!(
        (&i * 0.5).eval().unwrap().to_vec().unwrap(),
        [1.5, -2.0, 5.0],
        "int32 * float is float64"
    );
    assert_eq!(i.abs().eval().unwrap().to_vec().unwrap(), [3, 4, 10]);
    let nan = DeviceArray::from_slice(&stream, &[f32::NAN, 1.0]).unwrap();
    let one = DeviceArray::from_slice(&stream, &[0.0f32, f32::NAN]).unwrap();
    assert!(
        nan.maximum(&one)
            .eval()
            .unwrap()
            .to_vec()
            .unwrap()
            .iter()
            .all(|v| v.is_nan()),
        "NaN propagates"
    );
    let cast = (&nan * 0.0 + 3.7).astype::<i32>().eval().unwrap();
    assert_eq!(cast.to_vec().unwrap()[1], 3, "float to int truncates");
}

#[test]
fn views_slice_transpose_and_broadcast_without_copies() {
    let Some(device) = common::device_or_skip("views_slice_transpose_and_broadcast_without_copies") else {
        return;
    };
    let stream = device.create_stream().unwrap();
    let pool = MemoryPool::for_context(device.context());
    let x = DeviceArray::<f32>::arange(&stream, 0.0, 24.0, 1.0)
        .unwrap()
        .reshape([2, 3, 4])
        .unwrap();
    let used = pool.stats().used_bytes;
    let t = x.transpose();
    let s = x
        .slice(&[Slice::from(1..), Slice::from(..).step(2), Slice::from(1..4).step(2)])
        .unwrap();
    let p = x.permute([1, 0, 2]).unwrap();
    let e = x.expand_dims(1).unwrap().squeeze();
    let b = DeviceArray::<f32>::arange(&stream, 0.0, 4.0, 1.0).unwrap();
    let used_views = pool.stats().used_bytes;
    assert!(used_views - used <= 4096, "views allocate nothing (the arange does)");
    assert_eq!(t.shape(), [4, 3, 2]);
    assert!(t.shares_storage(&x) && !t.is_contiguous());
    let host = |i: usize, j: usize, k: usize| (i * 12 + j * 4 + k) as f32;
    let mut expected_t = Vec::new();
    for k in 0..4 {
        for j in 0..3 {
            for i in 0..2 {
                expected_t.push(host(i, j, k));
            }
        }
    }
    assert_eq!(t.to_vec().unwrap(), expected_t);
    assert_eq!(s.shape(), [1, 2, 2]);
    assert_eq!(
        s.to_vec().unwrap(),
        [host(1, 0, 1), host(1, 0, 3), host(1, 2, 1), host(1, 2, 3)]
    );
    assert_eq!(p.to_vec().unwrap()[4..8], [12.0, 13.0, 14.0, 15.0]);
    assert_eq!(e.shape(), [2, 3, 4]);
    // Strided and broadcast operands in one expression.
    let sum_view = (&t + &t).eval().unwrap();
    assert_eq!(
        sum_view.to_vec().unwrap(),
        expected_t.iter().map(|v| v * 2.0).collect::<Vec<_>>()
    );
    let shifted = (&x + &b).eval().unwrap();
    assert_eq!(
        shifted.to_vec().unwrap()[..8],
        [0.0, 2.0, 4.0, 6.0, 4.0, 6.0, 8.0, 10.0]
    );
    let column = b.reshape([4, 1]).unwrap();
    let outer = (&column * &b).eval().unwrap();
    assert_eq!(outer.shape(), [4, 4]);
    assert_eq!(outer.to_vec().unwrap()[12..], [0.0, 3.0, 6.0, 9.0]);
    let broadcast = b.broadcast_to([3, 4]).unwrap();
    assert_eq!(broadcast.to_vec().unwrap()[8..], [0.0, 1.0, 2.0, 3.0]);
    assert!(
        matches!(t.reshape_view([24]), Err(Error::InvalidValue(_))),
        "a transposed view cannot be reshaped without a copy"
    );
    assert_eq!(t.reshape([24]).unwrap().to_vec().unwrap(), expected_t, "reshape copies");
    assert_eq!(
        t.to_contiguous().unwrap().reshape([24]).unwrap().to_vec().unwrap(),
        expected_t
    );
    // Writes through a view land in the base array.
    let mut corner = x.slice(&[Slice::from(0usize), Slice::from(0usize)]).unwrap();
    corner.fill(-1.0).unwrap();
    assert_eq!(x.to_vec().unwrap()[..5], [-1.0, -1.0, -1.0, -1.0, 4.0]);
    let mut transposed_target = DeviceArray::<f32>::zeros(&stream, [4, 3, 2]).unwrap();
    transposed_target.copy_from(&t).unwrap();
    let mut broadcast_write = b.broadcast_to([3, 4]).unwrap();
    assert!(
        matches!(broadcast_write.fill(1.0), Err(Error::InvalidValue(_))),
        "broadcast views are read-only"
    );
}

#[test]
fn elementwise_kernels_broadcast_and_take_views() {
    let Some(device) = common::device_or_skip("elementwise_kernels_broadcast_and_take_views") else {
        return;
    };
    let stream = device.create_stream().unwrap();
    let kernel = ElementwiseKernel::new("T x, T y, T z", "T out", "out = x + 10 * y + 100 * z", "mix3").unwrap();
    let x = DeviceArray::<f64>::arange(&stream, 0.0, 25.0, 1.0)
        .unwrap()
        .reshape([5, 5])
        .unwrap();
    let row = DeviceArray::<f64>::arange(&stream, 0.0, 5.0, 1.0).unwrap();
    let column = DeviceArray::<f64>::arange(&stream, 0.0, 5.0, 1.0)
        .unwrap()
        .reshape([5, 1])
        .unwrap();
    let mut out = DeviceArray::<f64>::empty(&stream, [5, 5]).unwrap();
    // SAFETY: `out = x + 10 * y + 100 * z` reads its elements and assigns its element of `out`
    // only.
    let mix3 = |args: &[Arg<'_>]| unsafe { kernel.launch(&stream, args) };
    mix3(&[Arg::from(&x), Arg::from(&row), Arg::from(&column), Arg::from(&mut out)]).unwrap();
    let got = out.to_vec().unwrap();
    for i in 0..5 {
        for j in 0..5 {
            assert_eq!(
                got[i * 5 + j],
                (i * 5 + j) as f64 + 10.0 * j as f64 + 100.0 * i as f64,
                "({i}, {j})"
            );
        }
    }
    let xt = x.transpose();
    mix3(&[Arg::from(&xt), Arg::from(&row), Arg::from(&column), Arg::from(&mut out)]).unwrap();
    assert_eq!(out.to_vec().unwrap()[1], 5.0 + 10.0, "x.T[0, 1] is x[1, 0]");
    let wrong = DeviceArray::<f64>::zeros(&stream, 4).unwrap();
    let error = mix3(&[
        Arg::from(&x),
        Arg::from(&wrong),
        Arg::from(&column),
        Arg::from(&mut out),
    ])
    .unwrap_err()
    .to_string();
    assert!(error.contains("[5, 5]") && error.contains("[4]"), "{error}");
}

#[test]
fn assign_update_and_overlap_behave_like_numpy() {
    let Some(device) = common::device_or_skip("assign_update_and_overlap_behave_like_numpy") else {
        return;
    };
    let stream = device.create_stream().unwrap();
    let mut x = DeviceArray::<f32>::arange(&stream, 0.0, 6.0, 1.0)
        .unwrap()
        .reshape([2, 3])
        .unwrap();
    let y = DeviceArray::<f32>::full(&stream, [3], 0.5).unwrap();
    x.update(|x| x * 2.0 + &y).unwrap();
    assert_eq!(x.to_vec().unwrap(), [0.5, 2.5, 4.5, 6.5, 8.5, 10.5]);
    let mut square = DeviceArray::<f32>::arange(&stream, 0.0, 9.0, 1.0)
        .unwrap()
        .reshape([3, 3])
        .unwrap();
    let view = square.transpose();
    square.assign(&view).unwrap();
    assert_eq!(
        square.to_vec().unwrap(),
        [0.0, 3.0, 6.0, 1.0, 4.0, 7.0, 2.0, 5.0, 8.0],
        "x = x.T reads before writing"
    );
    let mut ints = DeviceArray::<i32>::zeros(&stream, [3]).unwrap();
    let floats = DeviceArray::<f32>::ones(&stream, [3]).unwrap();
    assert!(
        matches!(ints.assign(&floats), Err(Error::InvalidValue(_))),
        "float into int is not same-kind"
    );
    let mut doubles = DeviceArray::<f64>::zeros(&stream, [2, 3]).unwrap();
    doubles.assign(&floats * 2.0).unwrap();
    assert_eq!(doubles.to_vec().unwrap(), [2.0; 6], "broadcast into the target");
    // An operand that does not broadcast to the target: other extents, or more axes.
    let four = DeviceArray::<f32>::ones(&stream, [4]).unwrap();
    let error = doubles.assign(&four * 2.0).unwrap_err().to_string();
    assert!(error.contains("[4]") && error.contains("[2, 3]"), "{error}");
    let mut three = DeviceArray::<f64>::zeros(&stream, [3]).unwrap();
    let error = three.assign(&x + 1.0).unwrap_err().to_string();
    assert!(error.contains("[2, 3]") && error.contains("[3]"), "{error}");
    assert_eq!(three.to_vec().unwrap(), [0.0; 3], "nothing written");
    let error = (&x + &DeviceArray::<f32>::ones(&stream, [4]).unwrap())
        .eval()
        .unwrap_err()
        .to_string();
    assert!(error.contains("[2, 3]") && error.contains("[4]"), "{error}");
    let empty = DeviceArray::<f32>::zeros(&stream, [3, 0]).unwrap();
    let still_empty = (&empty * 2.0).eval().unwrap();
    assert_eq!((still_empty.shape(), still_empty.len()), (&[3, 0][..], 0));
    let lin = DeviceArray::<f64>::linspace(&stream, 0.0, 1.0, 5, true).unwrap();
    assert_eq!(lin.to_vec().unwrap(), [0.0, 0.25, 0.5, 0.75, 1.0]);
    let ones = DeviceArray::<i64>::ones(&stream, [2, 2]).unwrap();
    assert_eq!(ones.to_vec().unwrap(), [1; 4]);
    assert!(DeviceArray::<f32>::arange(&stream, 0.0, 1.0, 0.0).is_err());
}

#[test]
fn expressions_over_two_contexts_are_refused() {
    let Some(device) = common::device_or_skip("expressions_over_two_contexts_are_refused") else {
        return;
    };
    let stream = device.create_stream().unwrap();
    let other = Context::new(&device.context().device(), ContextFlags::empty()).unwrap();
    let other_stream = Stream::new(&other).unwrap();
    let x = DeviceArray::<f32>::ones(&stream, 8).unwrap();
    let y = DeviceArray::<f32>::ones(&other_stream, 8).unwrap();
    let used = MemoryPool::for_context(device.context()).stats().used_bytes;
    let error = (&x + &y).eval();
    assert!(
        matches!(error, Err(Error::Driver(cuda_driver::Error::WrongContext { .. }))),
        "{error:?}"
    );
    assert_eq!(
        MemoryPool::for_context(device.context()).stats().used_bytes,
        used,
        "the refused evaluation's output went back to the pool"
    );
}

#[test]
fn integer_true_division_is_f64_and_out_of_range_scalars_are_errors() {
    let Some(device) = common::device_or_skip("integer_true_division_is_f64_and_out_of_range_scalars_are_errors")
    else {
        return;
    };
    let stream = device.create_stream().unwrap();
    let x = DeviceArray::from_slice(&stream, &[1u8, 2, 255]).unwrap();
    let scaled = (&x / 255).eval().unwrap();
    assert_eq!(scaled.dtype(), cuda_core::DType::F64);
    assert_eq!(
        scaled.to_vec().unwrap(),
        [1.0 / 255.0, 2.0 / 255.0, 1.0],
        "not rounded to f16"
    );
    let i = DeviceArray::from_slice(&stream, &[1i16, 7]).unwrap();
    assert_eq!((&i / &i).eval().unwrap().dtype(), cuda_core::DType::F64);
    let one_third = (&DeviceArray::from_slice(&stream, &[1i16]).unwrap() / 3)
        .eval()
        .unwrap();
    assert_eq!(one_third.to_vec().unwrap(), [1.0 / 3.0]);
    let b = DeviceArray::from_slice(&stream, &[Bool::TRUE, Bool::TRUE]).unwrap();
    assert_eq!((&b / &b).eval().unwrap().to_vec().unwrap(), [1.0, 1.0]);
    for error in [
        (&x + 300).eval().unwrap_err(),
        (&x - (-1)).eval().unwrap_err(),
        (&x * 256).eval().unwrap_err(),
    ] {
        assert!(matches!(error, Error::InvalidValue(_)), "{error}");
    }
    let mut y = x.try_clone().unwrap();
    assert!(matches!(y.update(|y| y + 300), Err(Error::InvalidValue(_))));
    assert_eq!(y.to_vec().unwrap(), [1, 2, 255], "nothing was written");
    assert_eq!(
        (&x + 254).eval().unwrap().to_vec().unwrap(),
        [255u8, 0, 253],
        "in range: wraps as NumPy"
    );
    let float = (&x + 300.0).eval().unwrap();
    assert_eq!(
        float.to_vec().unwrap(),
        [301.0, 302.0, 555.0],
        "a float scalar gives f64"
    );
}

#[test]
fn u64_and_i64_compare_exactly() {
    let Some(device) = common::device_or_skip("u64_and_i64_compare_exactly") else {
        return;
    };
    let stream = device.create_stream().unwrap();
    let u = DeviceArray::from_slice(&stream, &[1u64 << 63, (1 << 53) + 1, 5, 0]).unwrap();
    let s = DeviceArray::from_slice(&stream, &[i64::MAX, 1 << 53, 5, -1]).unwrap();
    let truth = |e: cuda_core::Expr<'_, Bool>| -> Vec<bool> {
        e.eval()
            .unwrap()
            .to_vec()
            .unwrap()
            .into_iter()
            .map(bool::from)
            .collect()
    };
    assert_eq!(truth(u.eq(&s)), [false, false, true, false]);
    assert_eq!(truth(u.ne(&s)), [true, true, false, true]);
    assert_eq!(truth(u.gt(&s)), [true, true, false, true]);
    assert_eq!(truth(s.lt(&u)), [true, true, false, true]);
    assert_eq!(truth(s.ge(&u)), [false, false, true, false]);
    assert_eq!(truth(u.le(&s)), [false, false, true, false]);
    let small = DeviceArray::from_slice(&stream, &[-1i8, 0, 5, 0]).unwrap();
    assert_eq!(truth(small.lt(&u)), [true, true, false, false]);
}

#[test]
fn f64_rounds_once_to_f16_and_bf16_on_the_device() {
    let Some(device) = common::device_or_skip("f64_rounds_once_to_f16_and_bf16_on_the_device") else {
        return;
    };
    let stream = device.create_stream().unwrap();
    let p = |e: i32| 2f64.powi(e);
    let x = DeviceArray::from_slice(&stream, &[1.0 + p(-11) + p(-40), 1.0 + p(-8) + p(-40), 65520.0, -0.0]).unwrap();
    let halves: Vec<u16> = x
        .astype::<f16>()
        .eval()
        .unwrap()
        .to_vec()
        .unwrap()
        .iter()
        .map(|h| h.to_bits())
        .collect();
    assert_eq!(halves, [0x3c01, 0x3c04, 0x7c00, 0x8000]);
    let brains: Vec<u16> = x
        .astype::<bf16>()
        .eval()
        .unwrap()
        .to_vec()
        .unwrap()
        .iter()
        .map(|h| h.to_bits())
        .collect();
    assert_eq!(brains, [0x3f80, 0x3f81, 0x4780, 0x8000]);
    // Wide integers round once too: 2^24 + 2^16 + 1 is above the bf16 tie.
    let wide = DeviceArray::from_slice(&stream, &[(1i32 << 24) + (1 << 16) + 1]).unwrap();
    assert_eq!(
        wide.astype::<bf16>().eval().unwrap().to_vec().unwrap()[0].to_f64(),
        (1 << 24) as f64 + (1 << 17) as f64
    );
    // Scalars and creation go through the same rounding.
    let lin = DeviceArray::<f16>::linspace(&stream, 1.0 + p(-11) + p(-40), 2.0, 2, true).unwrap();
    assert_eq!(lin.to_vec().unwrap()[0].to_bits(), 0x3c01);
}

#[test]
fn integer_powers_take_weak_exponents_and_refuse_negative_ones() {
    let Some(device) = common::device_or_skip("integer_powers_take_weak_exponents_and_refuse_negative_ones") else {
        return;
    };
    let stream = device.create_stream().unwrap();
    let x = DeviceArray::from_slice(&stream, &[2u8, 3, 15]).unwrap();
    let squared = x.powi(2).eval().unwrap();
    assert_eq!(squared.to_vec().unwrap(), [4, 9, 225]);
    let error = x.powi(-1).eval().unwrap_err();
    assert!(matches!(error, Error::InvalidValue(_)), "{error}");
    let f = DeviceArray::from_slice(&stream, &[2.0f32, 4.0]).unwrap();
    assert_eq!(f.powi(-1).eval().unwrap().to_vec().unwrap(), [0.5, 0.25]);
}

#[test]
fn scalars_of_any_rust_type_are_weak_operands_everywhere() {
    let Some(device) = common::device_or_skip("scalars_of_any_rust_type_are_weak_operands_everywhere") else {
        return;
    };
    let stream = device.create_stream().unwrap();
    let xs = [-1.5f32, 0.25, 0.75, 2.0];
    let x = DeviceArray::from_slice(&stream, &xs).unwrap();
    let a = 3.0f32;
    assert_eq!((&x * a).eval().unwrap().to_vec().unwrap(), [-4.5, 0.75, 2.25, 6.0]);
    assert_eq!((2.0 * &x).eval().unwrap().to_vec().unwrap(), [-3.0, 0.5, 1.5, 4.0]);
    assert_eq!(
        x.gt(0.5).eval().unwrap().to_vec().unwrap(),
        [Bool::FALSE, Bool::FALSE, Bool::TRUE, Bool::TRUE]
    );
    assert_eq!(
        x.maximum(0.0).eval().unwrap().to_vec().unwrap(),
        [0.0f32, 0.25, 0.75, 2.0]
    );
    assert_eq!(
        x.minimum(1u8).eval().unwrap().to_vec().unwrap(),
        [-1.5, 0.25, 0.75, 1.0]
    );
    assert_eq!(
        where_(x.lt(0.0), &x, 0.0).eval().unwrap().to_vec().unwrap(),
        [-1.5f32, 0.0, 0.0, 0.0]
    );
    assert_eq!(
        where_(x.lt(0.0), 1, &x).eval().unwrap().to_vec().unwrap(),
        [1.0f32, 0.25, 0.75, 2.0]
    );
    assert_eq!(
        x.pow(2).eval().unwrap().to_vec().unwrap(),
        [2.25f32, 0.0625, 0.5625, 4.0]
    );
    let h = DeviceArray::from_slice(&stream, &[f16::from_f32(1.5), f16::from_f32(-2.0)]).unwrap();
    let doubled = (&h * 2.0f64).eval().unwrap();
    assert_eq!(doubled.to_vec().unwrap(), [f16::from_f32(3.0), f16::from_f32(-4.0)]);
    let u = DeviceArray::from_slice(&stream, &[1u64 << 63, 5]).unwrap();
    assert_eq!(
        u.eq(1u64 << 63).eval().unwrap().to_vec().unwrap(),
        [Bool::TRUE, Bool::FALSE],
        "u64 scalars above i64::MAX stay exact"
    );
    let small = DeviceArray::from_slice(&stream, &[1u8, 2]).unwrap();
    assert!(matches!((&small + 300u16).eval(), Err(Error::InvalidValue(_))));
    assert_eq!(
        small.gt(-1i64).eval().unwrap().to_vec().unwrap(),
        [Bool::TRUE, Bool::TRUE],
        "a comparison with an int beyond the type is exact, as NumPy 2's"
    );
}

#[test]
fn eval_on_computes_on_the_given_stream_after_the_operands_streams() {
    let Some(device) = common::device_or_skip("eval_on_computes_on_the_given_stream_after_the_operands_streams") else {
        return;
    };
    let first = device.create_stream().unwrap();
    let second = device.create_stream().unwrap();
    let n = 1 << 22;
    let x = DeviceArray::<f32>::full(&first, n, 1.0).unwrap();
    let mut y = DeviceArray::<f32>::zeros(&first, n).unwrap();
    // Queued on `first`; the evaluation on `second` must see it.
    y.assign(&x * 3.0).unwrap();
    let z = (&x + &y).eval_on(&second).unwrap();
    assert!(z.stream() == &second);
    let values = z.to_vec().unwrap();
    assert!(values.iter().all(|&v| v == 4.0), "{:?}", &values[..4]);
    let default = (&y + &x).eval().unwrap();
    assert!(default.stream() == &first, "default: the first array stream");
}

#[test]
fn ufuncs_match_the_host() {
    let Some(device) = common::device_or_skip("ufuncs_match_the_host") else {
        return;
    };
    let stream = device.create_stream().unwrap();
    let xs = [-2.5f64, -1.0, -0.5, -0.0, 0.0, 0.3, 0.5, 0.9, 1.5, 2.5, 7.0];
    let x = DeviceArray::from_slice(&stream, &xs).unwrap();
    let f = |e: cuda_core::Expr<'_, f64>| e.eval().unwrap().to_vec().unwrap();
    let host = |g: fn(f64) -> f64| xs.iter().map(|&v| g(v)).collect::<Vec<f64>>();
    let unary: [(&str, Vec<f64>, Vec<f64>); 16] = [
        ("floor", f(x.floor()), host(f64::floor)),
        ("ceil", f(x.ceil()), host(f64::ceil)),
        ("trunc", f(x.trunc()), host(f64::trunc)),
        ("rint", f(x.rint()), host(f64::round_ties_even)),
        ("square", f(x.square()), host(|v| v * v)),
        ("reciprocal", f(x.reciprocal()), host(|v| 1.0 / v)),
        ("cbrt", f(x.cbrt()), host(f64::cbrt)),
        ("exp2", f(x.exp2()), host(f64::exp2)),
        ("expm1", f(x.expm1()), host(f64::exp_m1)),
        ("log1p", f(x.log1p()), host(f64::ln_1p)),
        ("sinh", f(x.sinh()), host(f64::sinh)),
        ("cosh", f(x.cosh()), host(f64::cosh)),
        ("arctan", f(x.arctan()), host(f64::atan)),
        ("arcsinh", f(x.arcsinh()), host(f64::asinh)),
        ("arctanh", f(x.arctanh()), host(f64::atanh)),
        (
            "sign",
            f(x.sign()),
            host(|v| {
                if v > 0.0 {
                    1.0
                } else if v < 0.0 {
                    -1.0
                } else {
                    0.0
                }
            }),
        ),
    ];
    for (name, got, expected) in unary {
        assert_close(name, &got, &expected, 1e-14);
    }
    assert_close("log2", &f(x.abs().log2()), &host(|v| v.abs().log2()), 1e-14);
    assert_close("log10", &f(x.abs().log10()), &host(|v| v.abs().log10()), 1e-14);
    assert_close(
        "arcsin",
        &f(x.clip(-1.0, 1.0).arcsin()),
        &host(|v| v.clamp(-1.0, 1.0).asin()),
        1e-14,
    );
    assert_close(
        "arccos",
        &f(x.clip(-1, 1).arccos()),
        &host(|v| v.clamp(-1.0, 1.0).acos()),
        1e-14,
    );
    assert_close(
        "arccosh",
        &f((x.abs() + 1).arccosh()),
        &host(|v| (v.abs() + 1.0).acosh()),
        1e-14,
    );
    let signbits: Vec<Bool> = x.signbit().eval().unwrap().to_vec().unwrap();
    assert_eq!(signbits[3], Bool::TRUE, "-0.0 has its sign bit");
    assert_eq!(signbits[4], Bool::FALSE);
    // Predicates of specials.
    let s = DeviceArray::from_slice(&stream, &[f32::NAN, f32::INFINITY, -1.0, f32::NEG_INFINITY]).unwrap();
    let b = |e: cuda_core::Expr<'_, Bool>| -> Vec<bool> {
        e.eval()
            .unwrap()
            .to_vec()
            .unwrap()
            .into_iter()
            .map(|v| v == Bool::TRUE)
            .collect()
    };
    assert_eq!(b(s.isnan()), [true, false, false, false]);
    assert_eq!(b(s.isinf()), [false, true, false, true]);
    assert_eq!(b(s.isfinite()), [false, false, true, false]);
    assert_eq!(b(s.logical_not()), [false, false, false, false]);
    let h = DeviceArray::from_slice(&stream, &[f16::NAN, f16::from_f32(2.0)]).unwrap();
    assert_eq!(b(h.isnan()), [true, false]);

    // Binary operations with NumPy's sign rules, floats and integers.
    let a_host = [7.0f64, -7.0, 7.0, -7.0, 5.5, -5.5, 1.0];
    let d_host = [2.0f64, 2.0, -2.0, -2.0, 1.5, 1.5, 0.0];
    let a = DeviceArray::from_slice(&stream, &a_host).unwrap();
    let d = DeviceArray::from_slice(&stream, &d_host).unwrap();
    let pairs = |g: fn(f64, f64) -> f64| a_host.iter().zip(&d_host).map(|(&p, &q)| g(p, q)).collect::<Vec<f64>>();
    assert_close(
        "floor_divide",
        &f(a.floor_divide(&d)),
        &pairs(|p, q| (p / q).floor()),
        0.0,
    );
    let python_mod = |p: f64, q: f64| if q == 0.0 { f64::NAN } else { p - q * (p / q).floor() };
    assert_close("remainder", &f(a.remainder(&d)), &pairs(python_mod), 0.0);
    assert_close("fmod", &f(a.fmod(&d)), &pairs(|p, q| p % q), 0.0);
    assert_close("arctan2", &f(a.arctan2(&d)), &pairs(f64::atan2), 1e-14);
    assert_close("hypot", &f(a.hypot(&d)), &pairs(f64::hypot), 1e-14);
    assert_close("copysign", &f(a.copysign(&d)), &pairs(f64::copysign), 0.0);
    let i = DeviceArray::from_slice(&stream, &[7i32, -7, 7, -7, i32::MIN, 5]).unwrap();
    let j = DeviceArray::from_slice(&stream, &[2i32, 2, -2, -2, -1, 0]).unwrap();
    assert_eq!(
        i.floor_divide(&j).eval().unwrap().to_vec().unwrap(),
        [3, -4, -4, 3, i32::MIN, 0]
    );
    assert_eq!(i.remainder(&j).eval().unwrap().to_vec().unwrap(), [1, 1, -1, -1, 0, 0]);
    assert_eq!(i.fmod(&j).eval().unwrap().to_vec().unwrap(), [1, -1, 1, -1, 0, 0]);
    assert_eq!(i.floor().eval().unwrap().dtype(), cuda_core::DType::I32);
    // Bitwise and shifts.
    let u = DeviceArray::from_slice(&stream, &[0b1100u8, 0b1010, 255]).unwrap();
    assert_eq!(
        u.bitwise_and(0b1010).eval().unwrap().to_vec().unwrap(),
        [0b1000u8, 0b1010, 0b1010]
    );
    assert_eq!(
        u.bitwise_or(1).eval().unwrap().to_vec().unwrap(),
        [0b1101u8, 0b1011, 255]
    );
    assert_eq!(u.bitwise_xor(&u).eval().unwrap().to_vec().unwrap(), [0, 0, 0]);
    assert_eq!(u.invert().eval().unwrap().to_vec().unwrap(), [!0b1100u8, !0b1010, 0]);
    assert_eq!(
        u.left_shift(4).eval().unwrap().to_vec().unwrap(),
        [0b1100_0000u8, 0b1010_0000, 0xf0]
    );
    assert_eq!(
        u.left_shift(8).eval().unwrap().to_vec().unwrap(),
        [0u8, 0, 0],
        "by the width: 0"
    );
    assert_eq!(
        i.right_shift(40).eval().unwrap().to_vec().unwrap(),
        [0, -1, 0, -1, -1, 0]
    );
    // Logical operations.
    assert_eq!(b(s.isnan().logical_or(s.lt(0.0))), [true, false, true, true]);
    assert_eq!(b(s.logical_and(0)), [false; 4]);
    assert_eq!(b(s.logical_xor(&s)), [false; 4]);
    // A strided view and a broadcast scalar in one fused kernel.
    let m = DeviceArray::from_slice(&stream, &[1.0f32, -2.0, 3.0, -4.0, 5.0, -6.0])
        .unwrap()
        .reshape([2, 3])
        .unwrap();
    let t = m.transpose();
    assert_eq!(
        t.clip(-3.0, 2.0).eval().unwrap().to_vec().unwrap(),
        [1.0f32, -3.0, -2.0, 2.0, 2.0, -3.0]
    );
    // Zero-size and 0-d.
    let empty = DeviceArray::<f32>::zeros(&stream, [0usize, 4]).unwrap();
    assert_eq!(empty.isnan().eval().unwrap().shape(), [0, 4]);
    let scalar = DeviceArray::from_slice(&stream, &[2.0f32])
        .unwrap()
        .reshape([0usize; 0])
        .unwrap();
    assert_eq!(scalar.exp2().eval().unwrap().item().unwrap(), 4.0);
}

#[test]
fn isclose_allclose_and_array_equal_follow_numpy() {
    let Some(device) = common::device_or_skip("isclose_allclose_and_array_equal_follow_numpy") else {
        return;
    };
    let stream = device.create_stream().unwrap();
    let a = DeviceArray::from_slice(&stream, &[1.0f32, 1e10, f32::NAN, f32::INFINITY, 0.0]).unwrap();
    let b = DeviceArray::from_slice(&stream, &[1.000001f32, 1.000005e10, f32::NAN, f32::INFINITY, 1e-9]).unwrap();
    let close: Vec<Bool> = a.isclose(&b, 1e-5, 1e-8, false).eval().unwrap().to_vec().unwrap();
    assert_eq!(close, [Bool::TRUE, Bool::TRUE, Bool::FALSE, Bool::TRUE, Bool::TRUE]);
    let close: Vec<Bool> = a.isclose(&b, 1e-5, 1e-8, true).eval().unwrap().to_vec().unwrap();
    assert_eq!(close[2], Bool::TRUE, "equal_nan");
    assert!(!cuda_core::allclose(&a, &b, 1e-5, 1e-8, false).unwrap());
    assert!(cuda_core::allclose(&a, &b, 1e-5, 1e-8, true).unwrap());
    let c = DeviceArray::from_slice(&stream, &[1.0f32, 1.1]).unwrap();
    let d = DeviceArray::from_slice(&stream, &[1.0f32, 1.0]).unwrap();
    assert!(!cuda_core::allclose(&c, &d, 1e-5, 1e-8, false).unwrap());
    assert!(cuda_core::allclose(&c, &d, 0.0, 0.11, false).unwrap(), "atol");
    let i = DeviceArray::from_slice(&stream, &[1i32, 2, 3]).unwrap();
    let f = DeviceArray::from_slice(&stream, &[1.0f64, 2.0, 3.0]).unwrap();
    assert!(cuda_core::array_equal(&i, &f, false).unwrap());
    let g = DeviceArray::from_slice(&stream, &[1.0f64, 2.0, 3.5]).unwrap();
    assert!(!cuda_core::array_equal(&i, &g, false).unwrap());
    assert!(
        !cuda_core::array_equal(&i, &i.reshape([3, 1]).unwrap(), false).unwrap(),
        "shapes differ"
    );
    assert!(!cuda_core::array_equal(&a, &a, false).unwrap(), "NaN != NaN");
    assert!(cuda_core::array_equal(&a, &a, true).unwrap());
    let e = DeviceArray::<f32>::zeros(&stream, 0).unwrap();
    assert!(cuda_core::array_equal(&e, &e, false).unwrap());
}

#[test]
fn expressions_past_the_inline_capacity_match_the_host() {
    let Some(device) = common::device_or_skip("expressions_past_the_inline_capacity_match_the_host") else {
        return;
    };
    let stream = device.create_stream().unwrap();
    let n = 1000;
    // Multiples of 0.25 of small integers: every sum below is exact in f32.
    let hosts: Vec<Vec<f32>> = (0..8)
        .map(|k| (0..n).map(|i| ((i * (k + 3)) % 17) as f32 * 0.25 - 1.0).collect())
        .collect();
    let arrays: Vec<DeviceArray<f32>> = hosts
        .iter()
        .map(|h| DeviceArray::from_slice(&stream, h).unwrap())
        .collect();
    // 8 arrays times 8 scalars, a `where_` and `abs`: 37 steps over 19 operands (an expression
    // keeps 16 steps and 6 operands in place; the rest goes to the heap).
    let mut sum = &arrays[0] * 1.0;
    for (k, a) in arrays.iter().enumerate().skip(1) {
        sum = sum + a * (k as f32 + 1.0);
    }
    let picked = where_(arrays[0].gt(0.0), sum, &arrays[1]).abs();
    let got = picked.eval().unwrap().to_vec().unwrap();
    let expected: Vec<f64> = (0..n)
        .map(|i| {
            let sum: f32 = (0..8).fold(0.0, |s, k| s + hosts[k][i] * (k as f32 + 1.0));
            f64::from(if hosts[0][i] > 0.0 { sum } else { hosts[1][i] }.abs())
        })
        .collect();
    assert_close("a long where_", &got, &expected, 0.0);
    // The checks see past the inline steps: a negative integer power at the end is refused.
    let ints = DeviceArray::from_slice(&stream, &[1i32, 2, 3]).unwrap();
    let long = || (1..12).fold(&ints + 0, |e, k| e + k);
    let error = long().powi(-1).eval().unwrap_err();
    assert!(matches!(error, Error::InvalidValue(_)), "{error}");
    assert_eq!(
        long().powi(2).eval().unwrap().to_vec().unwrap(),
        [67 * 67, 68 * 68, 69 * 69]
    );
}
