//! Complex arrays (`Complex<f32>`, NumPy's complex64; `Complex<f64>`, complex128) on a GPU
//! against host references computed with `num-complex` in f64: creation and host transfers,
//! printing, `.npy` and DLPack round trips, NumPy 2's promotion with real types, the complex
//! ufuncs (`abs`, `angle`, `conj`, `real`/`imag` as expressions and as views, `exp`, `log`,
//! `sqrt`, trig, `isnan`, `isfinite`, ...), `==`/`!=` and NumPy's lexicographic order, the
//! reductions (`sum`, `prod`, `mean`, `var` and `std` real), the extremes (`max`, `argmax`,
//! the `nan` forms, `maximum`, `clip`, `ptp`, `sort_complex`) against NumPy 2's outputs and a
//! host model of its loops, matrix products through cuBLAS's
//! C and Z products and the tiled kernel, and the typed errors of what NumPy refuses. Without a
//! driver or device each test prints `skipped: <why>` and passes, unless `CUDA_REQUIRE_GPU=1`.

mod common;

use cuda_core::{Complex, DLPackFlags, DLPackTensor, DType, DeviceArray, Element, Error, ExprOps, Slice};
use cuda_driver::Stream;

type C64 = Complex<f32>;
type C128 = Complex<f64>;

fn stream_or_skip(test: &str) -> Option<Stream> {
    common::device_or_skip(test).map(|device| device.create_stream().unwrap())
}

/// Values spread over the four quadrants, away from branch cuts' edges and from 0.
fn values(n: usize, seed: u64) -> Vec<C128> {
    (0..n)
        .map(|i| {
            let t = (i as u64).wrapping_mul(2_654_435_761).wrapping_add(seed * 97) % 1000;
            let re = (t as f64 / 1000.0 - 0.5) * 3.0;
            let im = (((t * 7 + 13) % 1000) as f64 / 1000.0 - 0.5) * 2.5;
            C128::new(
                if re.abs() < 0.05 { 0.3 } else { re },
                if im.abs() < 0.05 { -0.4 } else { im },
            )
        })
        .collect()
}

fn narrow(values: &[C128]) -> Vec<C64> {
    values.iter().map(|z| C64::new(z.re as f32, z.im as f32)).collect()
}

/// A complex element as `Complex<f64>`.
trait Wide: Element {
    fn wide(self) -> C128;
}
impl Wide for C64 {
    fn wide(self) -> C128 {
        C128::new(self.re as f64, self.im as f64)
    }
}
impl Wide for C128 {
    fn wide(self) -> C128 {
        self
    }
}

/// Each element within `tolerance` of the reference, relative to the larger of 1 and its size.
#[track_caller]
fn assert_close<T: Wide>(what: &str, got: &DeviceArray<T>, expected: &[C128], tolerance: f64) {
    let got = got.to_vec().unwrap();
    assert_eq!(got.len(), expected.len(), "{what}: length");
    for (i, (g, e)) in got.iter().zip(expected).enumerate() {
        let g = g.wide();
        let error = (g - e).norm() / e.norm().max(1.0);
        assert!(
            error <= tolerance,
            "{what}: element {i} is {g}, the host says {e} (error {error:e})"
        );
    }
}

/// Each real element within `tolerance` of the reference (relative to the larger of 1 and it).
#[track_caller]
fn assert_real<T: Element>(what: &str, got: &DeviceArray<T>, expected: &[f64], tolerance: f64) {
    let got = got.to_vec().unwrap();
    assert_eq!(got.len(), expected.len(), "{what}: length");
    for (i, (g, e)) in got.iter().zip(expected).enumerate() {
        let g = g.to_f64();
        let error = (g - e).abs() / e.abs().max(1.0);
        assert!(error <= tolerance, "{what}: element {i} is {g}, the host says {e}");
    }
}

fn bools(array: &DeviceArray<cuda_core::Bool>) -> Vec<bool> {
    array.to_vec().unwrap().into_iter().map(bool::from).collect()
}

#[test]
fn creation_transfers_printing_npy_and_dlpack() {
    let Some(stream) = stream_or_skip("creation_transfers_printing_npy_and_dlpack") else {
        return;
    };
    let zeros = DeviceArray::<C64>::zeros(&stream, [2, 3]).unwrap();
    assert_eq!(zeros.to_vec().unwrap(), vec![C64::new(0.0, 0.0); 6]);
    let ones = DeviceArray::<C128>::ones(&stream, 4).unwrap();
    assert_eq!(ones.to_vec().unwrap(), vec![C128::new(1.0, 0.0); 4]);
    let full = DeviceArray::full(&stream, [3], C64::new(1.5, -2.0)).unwrap();
    assert_eq!(full.to_vec().unwrap(), vec![C64::new(1.5, -2.0); 3]);
    let steps =
        DeviceArray::<C64>::arange(&stream, C64::new(0.0, 0.0), C64::new(3.0, 0.0), C64::new(1.0, 0.0)).unwrap();
    assert_eq!(steps.to_vec().unwrap(), [0.0, 1.0, 2.0].map(|x| C64::new(x, 0.0)));
    let off_axis = DeviceArray::<C64>::arange(&stream, C64::new(0.0, 1.0), C64::new(3.0, 0.0), C64::new(1.0, 0.0));
    assert!(matches!(off_axis, Err(Error::NotSupported(_))));
    let host = [C64::new(1.0, 2.0), C64::new(3.5, -1.0)];
    let z = DeviceArray::from_slice(&stream, &host).unwrap();
    assert_eq!(z.to_vec().unwrap(), host);
    assert_eq!(z.to_string(), "[1. +2.j 3.5-1.j]", "as NumPy prints complex64");
    let grid = DeviceArray::from_slice(&stream, &[C128::new(1e10, 1.0), C128::new(0.0, -0.5)]).unwrap();
    assert_eq!(grid.to_string(), "[1.e+10+1.j  0.e+00-0.5j]");
    // A strided view copies into a compact array and back.
    let wide = DeviceArray::from_slice(&stream, &narrow(&values(12, 1)))
        .unwrap()
        .reshape([3, 4])
        .unwrap();
    let column = wide.slice(&[Slice::ALL, Slice::from(1..2)]).unwrap();
    let expected: Vec<C64> = (0..3).map(|r| wide.to_vec().unwrap()[r * 4 + 1]).collect();
    assert_eq!(column.to_contiguous().unwrap().to_vec().unwrap(), expected);

    // .npy: c8 and c16 files round trip, and their headers name NumPy's dtypes.
    let mut bytes = Vec::new();
    wide.write_npy(&mut bytes).unwrap();
    assert!(String::from_utf8_lossy(&bytes[..128]).contains("'descr': '<c8'"));
    let back = DeviceArray::<C64>::read_npy(&stream, bytes.as_slice()).unwrap();
    assert_eq!(
        (back.shape(), back.to_vec().unwrap()),
        (wide.shape(), wide.to_vec().unwrap())
    );
    let err = DeviceArray::<C128>::read_npy(&stream, bytes.as_slice()).unwrap_err();
    assert!(matches!(err, Error::Npy(_)), "a c8 file is not read as c16: {err:?}");
    let mut bytes = Vec::new();
    ones.write_npy(&mut bytes).unwrap();
    assert!(String::from_utf8_lossy(&bytes[..128]).contains("'descr': '<c16'"));

    // DLPack: kDLComplex of 64 bits, a transposed view travels as strides.
    let raw = wide.transpose().into_dlpack_versioned(None, DLPackFlags::NONE).unwrap();
    // SAFETY: `raw` was just exported, and nothing else uses it.
    let tensor = unsafe { DLPackTensor::from_raw_versioned(raw) }.unwrap();
    assert_eq!(tensor.dtype().unwrap(), DType::C64);
    let imported = DeviceArray::<C64>::from_dlpack_tensor(tensor, &stream, None).unwrap();
    assert_eq!(imported.shape(), [4, 3]);
    assert_eq!(
        imported.to_vec().unwrap(),
        wide.transpose().to_contiguous().unwrap().to_vec().unwrap()
    );
    let raw = ones
        .try_clone()
        .unwrap()
        .into_dlpack_versioned(None, DLPackFlags::NONE)
        .unwrap();
    // SAFETY: as above.
    let tensor = unsafe { DLPackTensor::from_raw_versioned(raw) }.unwrap();
    let wrong = DeviceArray::<f64>::from_dlpack_tensor(tensor, &stream, None);
    assert!(
        matches!(wrong, Err(Error::DLPack(_))),
        "complex128 is not imported as f64"
    );
}

#[test]
fn promotion_and_arithmetic_follow_numpy() {
    let Some(stream) = stream_or_skip("promotion_and_arithmetic_follow_numpy") else {
        return;
    };
    let a_host = values(257, 2);
    let b_host = values(257, 3);
    let a = DeviceArray::from_slice(&stream, &narrow(&a_host)).unwrap();
    let b = DeviceArray::from_slice(&stream, &b_host).unwrap();
    let r: Vec<f64> = (0..257).map(|i| i as f64 / 16.0 - 8.0).collect();
    let r32 = DeviceArray::from_slice(&stream, &r.iter().map(|&v| v as f32).collect::<Vec<_>>()).unwrap();
    let r64 = DeviceArray::from_slice(&stream, &r).unwrap();
    let ints = DeviceArray::from_slice(&stream, &(0..257).map(|i| i - 128).collect::<Vec<i32>>()).unwrap();
    let small = DeviceArray::from_slice(&stream, &(0..257).map(|i| (i % 100) as i16).collect::<Vec<_>>()).unwrap();
    let flags = DeviceArray::from_slice(
        &stream,
        &(0..257).map(|i| cuda_core::Bool::from(i % 3 == 0)).collect::<Vec<_>>(),
    )
    .unwrap();
    let a64: Vec<C128> = narrow(&a_host).iter().map(|z| z.wide()).collect();
    let eps32 = 4.0 * f32::EPSILON as f64;
    let eps64 = 8.0 * f64::EPSILON;

    let sum: DeviceArray<C64> = (&a + &r32).eval().unwrap();
    let expected: Vec<C128> = a64.iter().zip(&r).map(|(z, x)| z + x).collect();
    assert_close("c64 + f32 is c64", &sum, &expected, eps32);
    let product: DeviceArray<C128> = (&a * &r64).eval().unwrap();
    let expected: Vec<C128> = a64.iter().zip(&r).map(|(z, x)| z * x).collect();
    assert_close("c64 * f64 is c128", &product, &expected, eps64);
    let with_int: DeviceArray<C128> = (&a - &ints).eval().unwrap();
    let expected: Vec<C128> = a64.iter().enumerate().map(|(i, z)| z - (i as f64 - 128.0)).collect();
    assert_close("c64 - i32 is c128", &with_int, &expected, eps64);
    let with_i16: DeviceArray<C64> = (&a * &small).eval().unwrap();
    let expected: Vec<C128> = a64.iter().enumerate().map(|(i, z)| z * (i % 100) as f64).collect();
    assert_close("c64 * i16 is c64", &with_i16, &expected, eps32);
    let masked: DeviceArray<C64> = (&a * &flags).eval().unwrap();
    let expected: Vec<C128> = a64
        .iter()
        .enumerate()
        .map(|(i, z)| if i % 3 == 0 { *z } else { C128::new(0.0, 0.0) })
        .collect();
    assert_close("c64 * bool is c64", &masked, &expected, 0.0);
    let quotient: DeviceArray<C128> = (&a / &b).eval().unwrap();
    let expected: Vec<C128> = a64.iter().zip(&b_host).map(|(x, y)| x / y).collect();
    // Smith's division (as NumPy's) against num-complex's conjugate formula: a few ulps apart.
    assert_close("c64 / c128 is c128", &quotient, &expected, 16.0 * eps64);
    let scaled: DeviceArray<C64> = (2.5 * &a - 1).eval().unwrap();
    let expected: Vec<C128> = a64.iter().map(|z| z * 2.5 - 1.0).collect();
    assert_close("weak scalars keep c64", &scaled, &expected, eps32);
    // A complex scalar is weak too: with f32 it gives c64, with an integer c128 (NumPy 2).
    let rotated: DeviceArray<C64> = (&r32 * C64::new(0.0, 1.0) + &a).eval().unwrap();
    let expected: Vec<C128> = a64.iter().zip(&r).map(|(z, x)| z + C128::new(0.0, *x)).collect();
    assert_close("f32 * 1j is c64", &rotated, &expected, eps32);
    let shifted: DeviceArray<C128> = (C128::new(1.0, -2.0) - &ints).eval().unwrap();
    let expected: Vec<C128> = (0..257).map(|i| C128::new(1.0 - (i as f64 - 128.0), -2.0)).collect();
    assert_close("(1-2j) - i32 is c128", &shifted, &expected, 0.0);
    let picked: DeviceArray<C64> = cuda_core::where_(&flags, &a, C64::new(0.0, -1.0)).eval().unwrap();
    let expected: Vec<C128> = a64
        .iter()
        .enumerate()
        .map(|(i, z)| if i % 3 == 0 { *z } else { C128::new(0.0, -1.0) })
        .collect();
    assert_close("where with a complex scalar arm", &picked, &expected, 0.0);
    let power: DeviceArray<C128> = (&b).pow(&b).eval().unwrap();
    let expected: Vec<C128> = b_host.iter().map(|z| z.powc(*z)).collect();
    assert_close("z ** z", &power, &expected, 1e3 * eps64);
    let squared: DeviceArray<C128> = (&b).powi(3).eval().unwrap();
    let expected: Vec<C128> = b_host.iter().map(|z| z * z * z).collect();
    assert_close("z ** 3 by multiplication", &squared, &expected, 16.0 * eps64);
    // Into a complex array from a real expression (same_kind), not the other way round.
    let mut out = DeviceArray::<C64>::zeros(&stream, 257).unwrap();
    out.assign(&r32).unwrap();
    let expected: Vec<C128> = r.iter().map(|&x| C128::new(x, 0.0)).collect();
    assert_close("f32 into c64", &out, &expected, 0.0);
    let mut real = DeviceArray::<f64>::zeros(&stream, 257).unwrap();
    assert!(
        matches!(real.assign(&a), Err(Error::InvalidValue(_))),
        "complex into f64 is not same_kind"
    );
    let back: DeviceArray<f32> = (&a).astype::<f32>().eval().unwrap();
    assert_real(
        "astype keeps the real part",
        &back,
        &a64.iter().map(|z| z.re).collect::<Vec<_>>(),
        0.0,
    );
}

#[test]
fn ufuncs_match_the_host() {
    let Some(stream) = stream_or_skip("ufuncs_match_the_host") else {
        return;
    };
    let host = values(1000, 4);
    let z = DeviceArray::from_slice(&stream, &host).unwrap();
    let z32 = DeviceArray::from_slice(&stream, &narrow(&host)).unwrap();
    let h32: Vec<C128> = narrow(&host).iter().map(|z| z.wide()).collect();
    type Reference = fn(&C128) -> C128;
    let cases: [(&str, Reference); 20] = [
        ("exp", |z| z.exp()),
        ("log", |z| z.ln()),
        ("sqrt", |z| z.sqrt()),
        ("sin", |z| z.sin()),
        ("cos", |z| z.cos()),
        ("tan", |z| z.tan()),
        ("arcsin", |z| z.asin()),
        ("arccos", |z| z.acos()),
        ("arctan", |z| z.atan()),
        ("sinh", |z| z.sinh()),
        ("cosh", |z| z.cosh()),
        ("tanh", |z| z.tanh()),
        ("arcsinh", |z| z.asinh()),
        ("arccosh", |z| z.acosh()),
        ("arctanh", |z| z.atanh()),
        ("exp2", |z| (z * std::f64::consts::LN_2).exp()),
        ("log2", |z| z.ln() / std::f64::consts::LN_2),
        ("log10", |z| z.ln() / std::f64::consts::LN_10),
        ("expm1", |z| z.exp() - 1.0),
        ("log1p", |z| (z + 1.0).ln()),
    ];
    for (name, reference) in cases {
        let expected: Vec<C128> = host.iter().map(reference).collect();
        let got: DeviceArray<C128> = match name {
            "exp" => (&z).exp(),
            "log" => (&z).log(),
            "sqrt" => (&z).sqrt(),
            "sin" => (&z).sin(),
            "cos" => (&z).cos(),
            "tan" => (&z).tan(),
            "arcsin" => (&z).arcsin(),
            "arccos" => (&z).arccos(),
            "arctan" => (&z).arctan(),
            "sinh" => (&z).sinh(),
            "cosh" => (&z).cosh(),
            "tanh" => (&z).tanh(),
            "arcsinh" => (&z).arcsinh(),
            "arccosh" => (&z).arccosh(),
            "arctanh" => (&z).arctanh(),
            "exp2" => (&z).exp2(),
            "log2" => (&z).log2(),
            "log10" => (&z).log10(),
            "expm1" => (&z).expm1(),
            _ => (&z).log1p(),
        }
        .eval()
        .unwrap();
        assert_close(&format!("{name} of c128"), &got, &expected, 1e-12);
        let expected32: Vec<C128> = h32.iter().map(reference).collect();
        let got32: DeviceArray<C64> = match name {
            "exp" => (&z32).exp(),
            "log" => (&z32).log(),
            "sqrt" => (&z32).sqrt(),
            "sin" => (&z32).sin(),
            "tanh" => (&z32).tanh(),
            "arcsinh" => (&z32).arcsinh(),
            _ => continue,
        }
        .eval()
        .unwrap();
        assert_close(&format!("{name} of c64"), &got32, &expected32, 1e-5);
    }
    // Real results: abs, angle, real, imag.
    let abs: DeviceArray<f64> = (&z).abs().eval().unwrap();
    assert_real("abs", &abs, &host.iter().map(|z| z.norm()).collect::<Vec<_>>(), 1e-15);
    let angle: DeviceArray<f32> = (&z32).angle().eval().unwrap();
    assert_real("angle", &angle, &h32.iter().map(|z| z.arg()).collect::<Vec<_>>(), 1e-6);
    // `z.real()` of an array is the view; the expression form is the ufunc.
    let re: DeviceArray<f64> = ExprOps::real(&z).eval().unwrap();
    assert_real("real", &re, &host.iter().map(|z| z.re).collect::<Vec<_>>(), 0.0);
    let im: DeviceArray<f64> = ((&z) * 2.0).imag().eval().unwrap();
    assert_real("imag", &im, &host.iter().map(|z| 2.0 * z.im).collect::<Vec<_>>(), 0.0);
    let conj: DeviceArray<C128> = (&z).conj().eval().unwrap();
    assert_close("conj", &conj, &host.iter().map(|z| z.conj()).collect::<Vec<_>>(), 0.0);
    let sign: DeviceArray<C128> = (&z).sign().eval().unwrap();
    assert_close(
        "sign is z / |z|",
        &sign,
        &host.iter().map(|z| z / z.norm()).collect::<Vec<_>>(),
        1e-15,
    );
    let reciprocal: DeviceArray<C128> = (&z).reciprocal().eval().unwrap();
    assert_close(
        "reciprocal",
        &reciprocal,
        &host.iter().map(|z| z.inv()).collect::<Vec<_>>(),
        4e-15,
    );
    let square: DeviceArray<C128> = (&z).square().eval().unwrap();
    assert_close(
        "square",
        &square,
        &host.iter().map(|z| z * z).collect::<Vec<_>>(),
        1e-15,
    );
    // The angle of real values is 0 or pi, in a float type.
    let reals = DeviceArray::from_slice(&stream, &[-2i32, 0, 3]).unwrap();
    let angle: DeviceArray<f64> = (&reals).angle().eval().unwrap();
    assert_real("angle of i32", &angle, &[std::f64::consts::PI, 0.0, 0.0], 0.0);

    // Predicates: NaN or infinite in either part.
    let special = DeviceArray::from_slice(
        &stream,
        &[
            C64::new(1.0, 2.0),
            C64::new(f32::NAN, 0.0),
            C64::new(0.0, f32::NAN),
            C64::new(f32::INFINITY, 1.0),
            C64::new(1.0, f32::NEG_INFINITY),
        ],
    )
    .unwrap();
    assert_eq!(
        bools(&(&special).isnan().eval().unwrap()),
        [false, true, true, false, false]
    );
    assert_eq!(
        bools(&(&special).isfinite().eval().unwrap()),
        [true, false, false, false, false]
    );
    assert_eq!(
        bools(&(&special).isinf().eval().unwrap()),
        [false, false, false, true, true]
    );
    // nan_to_num replaces each part, as NumPy does.
    let cleaned: DeviceArray<C64> = (&special).nan_to_num(0.0, Some(7.0), None).eval().unwrap();
    assert_eq!(
        cleaned.to_vec().unwrap(),
        [
            C64::new(1.0, 2.0),
            C64::new(0.0, 0.0),
            C64::new(0.0, 0.0),
            C64::new(7.0, 1.0),
            C64::new(1.0, -f32::MAX)
        ]
    );
}

#[test]
fn comparisons_order_lexicographically_and_refusals_are_typed() {
    let Some(stream) = stream_or_skip("comparisons_order_lexicographically_and_refusals_are_typed") else {
        return;
    };
    let a = DeviceArray::from_slice(
        &stream,
        &[
            C64::new(1.0, 2.0),
            C64::new(1.0, 2.0),
            C64::new(2.0, -5.0),
            C64::new(f32::NAN, 0.0),
        ],
    )
    .unwrap();
    let b = DeviceArray::from_slice(
        &stream,
        &[
            C64::new(1.0, 2.0),
            C64::new(1.0, 3.0),
            C64::new(1.0, 9.0),
            C64::new(0.0, 0.0),
        ],
    )
    .unwrap();
    assert_eq!(bools(&(&a).eq(&b).eval().unwrap()), [true, false, false, false]);
    assert_eq!(bools(&(&a).ne(&b).eval().unwrap()), [false, true, true, true]);
    // NumPy 2 orders complex values by real part, then imaginary part; NaN compares false.
    assert_eq!(bools(&(&a).lt(&b).eval().unwrap()), [false, true, false, false]);
    assert_eq!(bools(&(&a).ge(&b).eval().unwrap()), [true, false, true, false]);
    let greatest: DeviceArray<C64> = (&a).maximum(&b).eval().unwrap();
    let got = greatest.to_vec().unwrap();
    assert_eq!(&got[..3], [C64::new(1.0, 2.0), C64::new(1.0, 3.0), C64::new(2.0, -5.0)]);
    assert!(got[3].re.is_nan(), "maximum propagates NaN");
    // What NumPy has no complex loop for is a typed error when evaluated.
    let refused = [
        (&a).floor().eval().err(),
        (&a).cbrt().eval().err(),
        (&a).fmod(&b).eval().err(),
        (&a).hypot(&b).eval().err(),
        (&a).signbit().eval().err(),
    ];
    for error in refused {
        assert!(
            matches!(error, Some(Error::InvalidValue(ref m)) if m.contains("complex")),
            "{error:?}"
        );
    }
    // Extremes are lexicographic too (NaN propagates; the nan forms skip it), and so are their
    // indices (the first NaN's; see `extremes_match_numpy`).
    assert_eq!(b.max().unwrap().item().unwrap(), C64::new(1.0, 9.0));
    assert_eq!(b.min().unwrap().item().unwrap(), C64::new(0.0, 0.0));
    assert!(a.max().unwrap().item().unwrap().re.is_nan());
    assert_eq!(a.nanmax().unwrap().item().unwrap(), C64::new(2.0, -5.0));
    assert_eq!(a.nanmin().unwrap().item().unwrap(), C64::new(1.0, 2.0));
    assert_eq!(a.argmin().unwrap().item().unwrap(), 3);
    // Sorting is NumPy's: lexicographic, the value holding a NaN last.
    let sorted = b.sort(-1).unwrap().to_vec().unwrap();
    assert_eq!(
        sorted,
        [
            C64::new(0.0, 0.0),
            C64::new(1.0, 2.0),
            C64::new(1.0, 3.0),
            C64::new(1.0, 9.0)
        ]
    );
    assert_eq!(a.argsort(0).unwrap().to_vec().unwrap().last(), Some(&3));
}

#[test]
fn real_and_imag_are_views() {
    let Some(stream) = stream_or_skip("real_and_imag_are_views") else {
        return;
    };
    let host = values(24, 5);
    let z = DeviceArray::from_slice(&stream, &host)
        .unwrap()
        .reshape([4, 6])
        .unwrap();
    let (re, im) = (z.real(), z.imag());
    assert_eq!((re.shape(), re.strides()), (&[4, 6][..], &[12, 2][..]));
    assert_eq!(re.to_vec().unwrap(), host.iter().map(|z| z.re).collect::<Vec<_>>());
    assert_eq!(im.to_vec().unwrap(), host.iter().map(|z| z.im).collect::<Vec<_>>());
    // A view of a view: the parts of a transposed slice.
    let part = z
        .slice(&[Slice::from(1..3), Slice::from(0..6).step(2)])
        .unwrap()
        .transpose();
    let expected: Vec<f64> = (0..3)
        .flat_map(|c| (1..3).map(move |r| (r, 2 * c)))
        .map(|(r, c)| host[r * 6 + c].im)
        .collect();
    assert_eq!(part.imag().to_contiguous().unwrap().to_vec().unwrap(), expected);
    // Writes through the views change the complex array.
    let mut im = z.imag();
    im.fill(-1.0).unwrap();
    let mut re = z.real();
    re.update(|x| x * 2.0).unwrap();
    let expected: Vec<C128> = host.iter().map(|w| C128::new(2.0 * w.re, -1.0)).collect();
    assert_close("written through the views", &z, &expected, 0.0);
    let z32 = DeviceArray::from_slice(&stream, &narrow(&host)).unwrap();
    let sum = z32.imag().sum().unwrap().item().unwrap();
    let expected: f64 = narrow(&host).iter().map(|w| w.im as f64).sum();
    assert!((sum as f64 - expected).abs() < 1e-4, "{sum} vs {expected}");
}

#[test]
fn reductions_match_the_host() {
    let Some(stream) = stream_or_skip("reductions_match_the_host") else {
        return;
    };
    for n in [1usize, 1000, 100_003] {
        let host = values(n, 6);
        let z = DeviceArray::from_slice(&stream, &host).unwrap();
        let sum: C128 = host.iter().sum();
        let tolerance = 1e-12 * (n as f64).sqrt();
        assert_close(&format!("sum of {n}"), &z.sum().unwrap(), &[sum], tolerance);
        let mean = sum / n as f64;
        assert_close(&format!("mean of {n}"), &z.mean().unwrap(), &[mean], tolerance);
        let var = host.iter().map(|w| (w - mean).norm_sqr()).sum::<f64>() / n as f64;
        let v: DeviceArray<f64> = z.var(0).unwrap();
        assert_real(&format!("var of {n} is real"), &v, &[var], tolerance);
        assert_real(&format!("std of {n}"), &z.std(0).unwrap(), &[var.sqrt()], tolerance);
        let z32 = DeviceArray::from_slice(&stream, &narrow(&host)).unwrap();
        let v32: DeviceArray<f32> = z32.var(0).unwrap();
        assert_real(&format!("var of {n} c64"), &v32, &[var], 1e-5);
        let fused: C128 = host.iter().map(|w| w.conj() * 2.0).sum();
        assert_close(
            &format!("sum of conj(z) * 2 fused, {n}"),
            &((&z).conj() * 2.0).sum().unwrap(),
            &[fused],
            tolerance,
        );
    }
    // Products of values near the unit circle stay finite.
    let unit: Vec<C128> = (0..64)
        .map(|i| C128::from_polar(1.0 + (i % 5) as f64 * 1e-3, i as f64 * 0.1))
        .collect();
    let z = DeviceArray::from_slice(&stream, &unit).unwrap();
    assert_close("prod", &z.prod().unwrap(), &[unit.iter().product()], 1e-12);
    // Along axes, with keepdims.
    let host = values(60, 7);
    let z = DeviceArray::from_slice(&stream, &host)
        .unwrap()
        .reshape([3, 4, 5])
        .unwrap();
    let along: Vec<C128> = (0..3)
        .flat_map(|i| (0..5).map(move |k| (i, k)))
        .map(|(i, k)| (0..4).map(|j| host[i * 20 + j * 5 + k]).sum())
        .collect();
    let got = z.sum_axes([1], true).unwrap();
    assert_eq!(got.shape(), [3, 1, 5]);
    assert_close("sum along axis 1", &got, &along, 1e-14);
    let vars = z.var_axes([-1], false, 1).unwrap();
    let expected: Vec<f64> = (0..12)
        .map(|row| {
            let line = &host[row * 5..row * 5 + 5];
            let mean: C128 = line.iter().sum::<C128>() / 5.0;
            line.iter().map(|w| (w - mean).norm_sqr()).sum::<f64>() / 4.0
        })
        .collect();
    assert_real("var along the last axis, ddof 1", &vars, &expected, 1e-13);
}

/// `a @ b` of row-major `m x k` and `k x n` complex matrices on the host.
fn host_matmul(a: &[C128], b: &[C128], (m, k, n): (usize, usize, usize)) -> Vec<C128> {
    (0..m * n)
        .map(|idx| (0..k).map(|l| a[idx / n * k + l] * b[l * n + idx % n]).sum())
        .collect()
}

#[test]
fn matmul_goes_through_complex_gemm_and_the_tiled_kernel() {
    let Some(stream) = stream_or_skip("matmul_goes_through_complex_gemm_and_the_tiled_kernel") else {
        return;
    };
    // 8x8x8 runs the tiled kernel, 96x80x72 cuBLAS (cgemm / zgemm through GemmEx).
    for (m, k, n) in [(8, 8, 8), (96, 80, 72)] {
        let (a_host, b_host) = (values(m * k, 8), values(k * n, 9));
        let expected = host_matmul(&a_host, &b_host, (m, k, n));
        let a = DeviceArray::from_slice(&stream, &a_host)
            .unwrap()
            .reshape([m, k])
            .unwrap();
        let b = DeviceArray::from_slice(&stream, &b_host)
            .unwrap()
            .reshape([k, n])
            .unwrap();
        assert_close(&format!("c128 {m}x{k}x{n}"), &a.matmul(&b).unwrap(), &expected, 1e-13);
        let a32 = DeviceArray::from_slice(&stream, &narrow(&a_host))
            .unwrap()
            .reshape([m, k])
            .unwrap();
        let b32 = DeviceArray::from_slice(&stream, &narrow(&b_host))
            .unwrap()
            .reshape([k, n])
            .unwrap();
        let expected32 = host_matmul(
            &narrow(&a_host).iter().map(|z| z.wide()).collect::<Vec<_>>(),
            &narrow(&b_host).iter().map(|z| z.wide()).collect::<Vec<_>>(),
            (m, k, n),
        );
        assert_close(
            &format!("c64 {m}x{k}x{n}"),
            &a32.matmul(&b32).unwrap(),
            &expected32,
            1e-5,
        );
        // A transposed operand goes as a flag (no conjugation: NumPy's matmul conjugates nothing).
        let b_t = DeviceArray::from_slice(&stream, &b_host)
            .unwrap()
            .reshape([n, k])
            .unwrap()
            .transpose();
        let b_t_host: Vec<C128> = (0..k * n).map(|i| b_host[(i % n) * k + i / n]).collect();
        assert_close(
            &format!("c128 {m}x{k}x{n}, b transposed"),
            &a.matmul(&b_t).unwrap(),
            &host_matmul(&a_host, &b_t_host, (m, k, n)),
            1e-13,
        );
    }
    // A stack of products (strided batched GemmEx).
    let (batch, m, k, n) = (3, 40, 70, 50);
    let (a_host, b_host) = (values(batch * m * k, 10), values(batch * k * n, 11));
    let a = DeviceArray::from_slice(&stream, &a_host)
        .unwrap()
        .reshape([batch, m, k])
        .unwrap();
    let b = DeviceArray::from_slice(&stream, &b_host)
        .unwrap()
        .reshape([batch, k, n])
        .unwrap();
    let expected: Vec<C128> = (0..batch)
        .flat_map(|i| {
            host_matmul(
                &a_host[i * m * k..(i + 1) * m * k],
                &b_host[i * k * n..(i + 1) * k * n],
                (m, k, n),
            )
        })
        .collect();
    assert_close("c128 batched", &a.matmul(&b).unwrap(), &expected, 1e-13);
    // vdot conjugates its first operand and flattens both (here a 3-D array and a transposed
    // view of the same elements): conj(a) . b over the row-major order.
    let c_host = values(batch * m * k, 12);
    let c = DeviceArray::from_slice(&stream, &c_host).unwrap();
    let expected: C128 = a_host.iter().zip(&c_host).map(|(x, y)| x.conj() * y).sum();
    assert_close("c128 vdot", &a.vdot(&c).unwrap(), &[expected], 1e-10);
    let squares: f64 = a_host.iter().map(|x| x.norm_sqr()).sum();
    assert_close(
        "c128 vdot(a, a)",
        &a.vdot(&a).unwrap(),
        &[C128::new(squares, 0.0)],
        1e-10,
    );
    let t = a.reshape([batch * m, k]).unwrap().transpose();
    let t_rows = t.to_contiguous().unwrap().to_vec().unwrap();
    let expected: C128 = t_rows.iter().zip(&t_rows).map(|(x, y)| x.conj() * y).sum();
    assert_close(
        "c128 vdot of a transposed view",
        &t.vdot(&t).unwrap(),
        &[expected],
        1e-10,
    );
}

#[test]
fn vdot_conjugates_the_first_operand_as_numpy() {
    let Some(stream) = stream_or_skip("vdot_conjugates_the_first_operand_as_numpy") else {
        return;
    };
    // NumPy 2.4: vdot([1+2j, 3-1j], [2-1j, 1+1j]) = (2-1j), for complex128 and complex64 (a
    // 2-D first operand flattened).
    let x = DeviceArray::from_slice(&stream, &[C128::new(1.0, 2.0), C128::new(3.0, -1.0)]).unwrap();
    let y = DeviceArray::from_slice(&stream, &[C128::new(2.0, -1.0), C128::new(1.0, 1.0)]).unwrap();
    assert_eq!(x.vdot(&y).unwrap().to_vec().unwrap(), [C128::new(2.0, -1.0)]);
    assert_eq!(y.vdot(&x).unwrap().to_vec().unwrap(), [C128::new(2.0, 1.0)]);
    let x = DeviceArray::from_slice(&stream, &[C64::new(1.0, 2.0), C64::new(3.0, -1.0)])
        .unwrap()
        .reshape([1, 2])
        .unwrap();
    let y = DeviceArray::from_slice(&stream, &[C64::new(2.0, -1.0), C64::new(1.0, 1.0)]).unwrap();
    assert_eq!(x.vdot(&y).unwrap().to_vec().unwrap(), [C64::new(2.0, -1.0)]);
    assert!(matches!(
        x.vdot(&x.reshape([2]).unwrap().slice(&[Slice::new(0, Some(1))]).unwrap()),
        Err(Error::InvalidValue(_))
    ));
}

/// Whether two complex values are NumPy's same value: equal parts with equal signs, or NaN
/// in the same parts.
fn same(a: C128, b: C128) -> bool {
    let part = |x: f64, y: f64| (x.is_nan() && y.is_nan()) || (x == y && x.is_sign_negative() == y.is_sign_negative());
    part(a.re, b.re) && part(a.im, b.im)
}

#[track_caller]
fn assert_same<T: Wide>(what: &str, got: &DeviceArray<T>, expected: &[C128]) {
    let got: Vec<C128> = got.to_vec().unwrap().into_iter().map(Wide::wide).collect();
    assert_eq!(got.len(), expected.len(), "{what}: length");
    for (i, (g, e)) in got.iter().zip(expected).enumerate() {
        assert!(same(*g, *e), "{what}: element {i} is {g}, NumPy gives {e}");
    }
}

fn z(re: f64, im: f64) -> C128 {
    C128::new(re, im)
}

/// NumPy's loops over complex values, on the host: the index `maximum.reduce`
/// (`minimum.reduce`, `argmax`, `argmin`) keeps, the first NaN or the first extreme; with
/// `skip_nan` the one `fmax.reduce` (`fmin.reduce`) keeps, the first NaN of NaNs only.
fn numpy_extreme(values: &[C128], greatest: bool, skip_nan: bool) -> usize {
    let nan = |w: C128| w.re.is_nan() || w.im.is_nan();
    // NumPy's CGE: the real parts, then the imaginary ones; a NaN compares false.
    let ge = |a: C128, b: C128| (a.re > b.re && !a.im.is_nan() && !b.im.is_nan()) || (a.re == b.re && a.im >= b.im);
    let mut best = 0;
    for (i, &w) in values.iter().enumerate().skip(1) {
        let b = values[best];
        let keeps = match greatest {
            true => ge(b, w),
            false => ge(w, b),
        };
        let replace = match skip_nan {
            true => !nan(w) && (nan(b) || !keeps),
            false => !nan(b) && (nan(w) || !keeps),
        };
        if replace {
            best = i;
        }
    }
    best
}

/// NumPy's `nanargmax` (`nanargmin`): `argmax` of the values with each NaN read as `-inf + 0j`
/// (`inf + 0j`), `None` (ValueError) for NaNs only.
fn numpy_nanarg(values: &[C128], greatest: bool) -> Option<usize> {
    let nan = |w: &C128| w.re.is_nan() || w.im.is_nan();
    if values.iter().all(nan) {
        return None;
    }
    let fill = z(if greatest { f64::NEG_INFINITY } else { f64::INFINITY }, 0.0);
    let read: Vec<C128> = values.iter().map(|w| if nan(w) { fill } else { *w }).collect();
    Some(numpy_extreme(&read, greatest, false))
}

#[test]
fn extremes_match_numpy() {
    let Some(stream) = stream_or_skip("extremes_match_numpy") else {
        return;
    };
    let (nan, inf) = (f64::NAN, f64::INFINITY);
    // NumPy 2.4's outputs for small inputs, in both widths.
    let mixed = [z(1.0, 2.0), z(3.0, nan), z(nan, 1.0), z(5.0, 0.0)];
    // One body per width (a macro: the element type of every array changes with it).
    macro_rules! small_inputs {
        ($t:ty) => {{
            let load = |values: &[C128]| -> DeviceArray<$t> {
                (&DeviceArray::from_slice(&stream, values).unwrap())
                    .astype::<$t>()
                    .eval()
                    .unwrap()
            };
            let a = load(&mixed);
            assert_same("max: the first NaN", &a.max().unwrap(), &[z(3.0, nan)]);
            assert_same("min: the first NaN", &a.min().unwrap(), &[z(3.0, nan)]);
            assert_eq!(a.argmax().unwrap().item().unwrap(), 1);
            assert_eq!(a.argmin().unwrap().item().unwrap(), 1);
            assert_same("nanmax", &a.nanmax().unwrap(), &[z(5.0, 0.0)]);
            assert_same("nanmin", &a.nanmin().unwrap(), &[z(1.0, 2.0)]);
            assert_eq!(a.nanargmax().unwrap().item().unwrap(), 3);
            assert_eq!(a.nanargmin().unwrap().item().unwrap(), 0);
            assert_same("ptp", &a.ptp().unwrap(), &[z(0.0, nan)]);
            let signed_zeros = load(&[z(0.0, -0.0), z(-0.0, 0.0), z(0.0, 0.0)]);
            assert_same(
                "max of equal values: the first",
                &signed_zeros.max().unwrap(),
                &[z(0.0, -0.0)],
            );
            assert_same(
                "min of equal values: the first",
                &signed_zeros.min().unwrap(),
                &[z(0.0, -0.0)],
            );
            let ties = load(&[z(1.0, 2.0), z(3.0, 1.0), z(3.0, 1.0), z(3.0, 0.0), z(-0.0, -1.0)]);
            assert_eq!(ties.argmax().unwrap().item().unwrap(), 1);
            assert_eq!(ties.argmin().unwrap().item().unwrap(), 4);
            let infinities = load(&[z(inf, -inf), z(inf, inf), z(-inf, inf), z(0.0, 0.0)]);
            assert_eq!(infinities.argmax().unwrap().item().unwrap(), 1);
            assert_same("min with infinities", &infinities.min().unwrap(), &[z(-inf, inf)]);
            assert_same("ptp with infinities", &infinities.ptp().unwrap(), &[z(inf, nan)]);
            let all_nan = load(&[z(nan, 1.0), z(3.0, nan), z(nan, nan)]);
            assert_same("nanmax of NaNs: the first", &all_nan.nanmax().unwrap(), &[z(nan, 1.0)]);
            assert_same("nanmin of NaNs: the first", &all_nan.nanmin().unwrap(), &[z(nan, 1.0)]);
            assert!(matches!(all_nan.nanargmax(), Err(Error::InvalidValue(_))));
            assert!(matches!(all_nan.nanargmin(), Err(Error::InvalidValue(_))));
            // nanargmax reads a NaN as -inf + 0j, which beats -inf - 1j.
            let filled = load(&[z(-inf, -1.0), z(nan, 1.0), z(-inf, 0.0)]);
            assert_eq!(filled.nanargmax().unwrap().item().unwrap(), 1);
            assert_eq!(filled.nanargmin().unwrap().item().unwrap(), 0);
            // Along axes, negative and with keepdims.
            let m = load(&[
                z(1.0, 1.0),
                z(nan, 2.0),
                z(3.0, 0.0),
                z(2.0, 5.0),
                z(2.0, 5.0),
                z(0.0, nan),
            ])
            .reshape([2, 3])
            .unwrap();
            assert_eq!(m.argmax_axis(0, false).unwrap().to_vec().unwrap(), [1, 0, 1]);
            assert_eq!(m.argmin_axis(0, false).unwrap().to_vec().unwrap(), [0, 0, 1]);
            let last = m.argmax_axis(-1, true).unwrap();
            assert_eq!((last.shape(), last.to_vec().unwrap()), (&[2, 1][..], vec![1, 2]));
            assert_eq!(m.nanargmax_axis(0, false).unwrap().to_vec().unwrap(), [1, 1, 0]);
            assert_eq!(m.nanargmax_axis(-1, true).unwrap().to_vec().unwrap(), [2, 0]);
            assert_eq!(m.nanargmin_axis(-1, false).unwrap().to_vec().unwrap(), [0, 0]);
            assert_same(
                "max along 0",
                &m.max_axes([0], false).unwrap(),
                &[z(2.0, 5.0), z(nan, 2.0), z(0.0, nan)],
            );
            assert_same(
                "nanmax along 0",
                &m.nanmax_axes([0], false).unwrap(),
                &[z(2.0, 5.0), z(2.0, 5.0), z(3.0, 0.0)],
            );
            assert_same(
                "nanmin along -1",
                &m.nanmin_axes([-1], true).unwrap(),
                &[z(1.0, 1.0), z(2.0, 5.0)],
            );
            // Element-wise: the NaN operand (the first of two), else the first of equal ones.
            let x = load(&[
                z(nan, 1.0),
                z(3.0, nan),
                z(1.0, 1.0),
                z(nan, nan),
                z(2.0, 0.0),
                z(1.0, 2.0),
                z(0.0, -0.0),
            ]);
            let y = load(&[
                z(3.0, nan),
                z(nan, 1.0),
                z(1.0, 2.0),
                z(1.0, 0.0),
                z(nan, nan),
                z(1.0, 2.0),
                z(-0.0, 0.0),
            ]);
            let head = [z(nan, 1.0), z(3.0, nan)];
            let tail = [z(nan, nan), z(nan, nan), z(1.0, 2.0), z(0.0, -0.0)];
            let maximum: Vec<C128> = head.iter().chain(&[z(1.0, 2.0)]).chain(&tail).copied().collect();
            let minimum: Vec<C128> = head.iter().chain(&[z(1.0, 1.0)]).chain(&tail).copied().collect();
            assert_same("maximum", &(&x).maximum(&y).eval().unwrap(), &maximum);
            assert_same("minimum", &(&x).minimum(&y).eval().unwrap(), &minimum);
            // clip compares as NumPy's clip loop: a bound equal to x replaces it, and a bound's NaN
            // imaginary part counts only against an equal real part.
            let x = load(&[
                z(0.5, 3.0),
                z(2.0, 0.0),
                z(1.0, -5.0),
                z(nan, 1.0),
                z(1.5, nan),
                z(0.0, -0.0),
            ]);
            let clipped = (&x).clip(C128::new(1.0, 0.0), C128::new(1.5, 1.0)).eval().unwrap();
            let expected = [
                z(1.0, 0.0),
                z(1.5, 1.0),
                z(1.0, 0.0),
                z(nan, 1.0),
                z(1.5, nan),
                z(1.0, 0.0),
            ];
            assert_same("clip", &clipped, &expected);
            let x = load(&[z(-0.0, -0.0), z(2.0, 0.0), z(0.5, 7.0)]);
            let clipped = (&x).clip(C128::new(-0.0, 0.0), C128::new(1.0, nan)).eval().unwrap();
            assert_same("clip, a NaN bound", &clipped, &[z(-0.0, 0.0), z(1.0, nan), z(0.5, 7.0)]);
        }};
    }
    small_inputs!(C64);
    small_inputs!(C128);
    // sort_complex: NumPy's result types, and its order (values holding a NaN last).
    let small = DeviceArray::from_slice(&stream, &[3i8, 1, 2])
        .unwrap()
        .sort_complex()
        .unwrap();
    assert_eq!(small.dtype(), DType::C64);
    assert_eq!(
        small.to_vec().unwrap(),
        [C64::new(1.0, 0.0), C64::new(2.0, 0.0), C64::new(3.0, 0.0)]
    );
    let floats = DeviceArray::from_slice(&stream, &[3.0f32, f32::NAN, -1.0, 0.5])
        .unwrap()
        .reshape([2, 2])
        .unwrap()
        .sort_complex()
        .unwrap();
    assert_eq!(floats.dtype(), DType::C128, "float32 sorts as complex128, as in NumPy");
    assert_same(
        "sort_complex of rows",
        &floats,
        &[z(3.0, 0.0), z(nan, 0.0), z(-1.0, 0.0), z(0.5, 0.0)],
    );
    let complex = DeviceArray::from_slice(
        &stream,
        &[
            z(nan, 1.0),
            z(2.0, 0.0),
            z(1.0, nan),
            z(1.0, 1.0),
            z(nan, nan),
            z(nan, 0.0),
        ],
    )
    .unwrap();
    assert_same(
        "sort_complex",
        &complex.sort_complex().unwrap(),
        &[
            z(1.0, 1.0),
            z(2.0, 0.0),
            z(1.0, nan),
            z(nan, 0.0),
            z(nan, 1.0),
            z(nan, nan),
        ],
    );
}

/// The extremes of each row of `shaped` (its lines `lines` on the host) against the model.
#[track_caller]
fn check_lines<T: Wide>(name: &str, shaped: &DeviceArray<T>, lines: &[&[C128]]) {
    let pick = |greatest: bool, skip_nan: bool| -> Vec<C128> {
        lines.iter().map(|l| l[numpy_extreme(l, greatest, skip_nan)]).collect()
    };
    let index =
        |greatest: bool| -> Vec<i64> { lines.iter().map(|l| numpy_extreme(l, greatest, false) as i64).collect() };
    let nanarg = |greatest: bool| -> Vec<i64> {
        lines
            .iter()
            .map(|l| numpy_nanarg(l, greatest).map_or(-1, |i| i as i64))
            .collect()
    };
    let what = |op: &str| format!("{op} of {name}, {} lines of {}", lines.len(), lines[0].len());
    assert_same(&what("max"), &shaped.max_axes([-1], false).unwrap(), &pick(true, false));
    assert_same(
        &what("min"),
        &shaped.min_axes([-1], false).unwrap(),
        &pick(false, false),
    );
    assert_same(
        &what("nanmax"),
        &shaped.nanmax_axes([-1], false).unwrap(),
        &pick(true, true),
    );
    assert_same(
        &what("nanmin"),
        &shaped.nanmin_axes([-1], false).unwrap(),
        &pick(false, true),
    );
    let argmax = shaped.argmax_axis(-1, false).unwrap().to_vec().unwrap();
    assert_eq!(argmax, index(true), "{}", what("argmax"));
    let argmin = shaped.argmin_axis(-1, false).unwrap().to_vec().unwrap();
    assert_eq!(argmin, index(false), "{}", what("argmin"));
    // No line is all NaN (one element in 97 holds a NaN at most).
    let nanargmax = shaped.nanargmax_axis(-1, false).unwrap().to_vec().unwrap();
    assert_eq!(nanargmax, nanarg(true), "{}", what("nanargmax"));
    let nanargmin = shaped.nanargmin_axis(-1, false).unwrap().to_vec().unwrap();
    assert_eq!(nanargmin, nanarg(false), "{}", what("nanargmin"));
    // The whole array, as one line.
    let all: Vec<C128> = lines.concat();
    assert_same(
        &what("max of all"),
        &shaped.max().unwrap(),
        &[all[numpy_extreme(&all, true, false)]],
    );
    assert_same(
        &what("nanmin of all"),
        &shaped.nanmin().unwrap(),
        &[all[numpy_extreme(&all, false, true)]],
    );
    assert_eq!(
        shaped.argmin().unwrap().item().unwrap(),
        numpy_extreme(&all, false, false) as i64
    );
    assert_eq!(
        shaped.nanargmax().unwrap().item().unwrap(),
        numpy_nanarg(&all, true).unwrap() as i64
    );
}

#[test]
fn extremes_of_random_values_match_the_host_model() {
    let Some(stream) = stream_or_skip("extremes_of_random_values_match_the_host_model") else {
        return;
    };
    // Parts from a few values, so that ties, signed zeros and infinities are common; NaN in
    // one part of some of every 97th element, so that some lines have none.
    let parts = [-0.0, 0.0, 1.0, -1.0, 2.0, f64::INFINITY, f64::NEG_INFINITY];
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    for (n, rows) in [(1000usize, 1usize), (100_003, 1), (4096, 64)] {
        let host: Vec<C128> = (0..n)
            .map(|i| {
                let (r, k) = (next(), next());
                let mut w = z(parts[(r % 7) as usize], parts[(k % 7) as usize]);
                match (i % 97, r % 3) {
                    (0, 0) => w.re = f64::NAN,
                    (0, 1) => w.im = f64::NAN,
                    _ => {}
                }
                w
            })
            .collect();
        let z128 = DeviceArray::from_slice(&stream, &host).unwrap();
        // The parts are exact in f32: the model of `host` is the model of the narrowed values.
        let z64 = (&z128).astype::<C64>().eval().unwrap();
        let lines: Vec<&[C128]> = host.chunks(n / rows).collect();
        check_lines("c128", &z128.reshape([rows, n / rows]).unwrap(), &lines);
        check_lines("c64", &z64.reshape([rows, n / rows]).unwrap(), &lines);
        // Element-wise against the model of NumPy's maximum, pairing each value with the next.
        let shifted = z128.slice(&[Slice::from(1..n)]).unwrap();
        let first = z128.slice(&[Slice::from(0..n - 1)]).unwrap();
        let expected: Vec<C128> = host.windows(2).map(|p| p[numpy_extreme(p, true, false)]).collect();
        assert_same("maximum", &(&first).maximum(&shifted).eval().unwrap(), &expected);
        let expected: Vec<C128> = host.windows(2).map(|p| p[numpy_extreme(p, false, false)]).collect();
        assert_same("minimum", &(&first).minimum(&shifted).eval().unwrap(), &expected);
    }
}

#[test]
fn histograms_of_complex_arrays_follow_numpy_or_are_refused() {
    let Some(stream) = stream_or_skip("histograms_of_complex_arrays_follow_numpy_or_are_refused") else {
        return;
    };
    let c = C128::new;
    // NumPy 2.4: np.histogram(x, bins=[0, 1+2j, 3]) compares lexicographically: [2, 4] (NaN,
    // 3+1j above and -1j below are not counted; 3+0j is in the closed last bin).
    let x = DeviceArray::from_slice(
        &stream,
        &[
            c(1.0, 1.0),
            c(1.0, 3.0),
            c(2.0, 0.0),
            c(0.5, 5.0),
            c(f64::NAN, 0.0),
            c(3.0, 0.0),
            c(3.0, 1.0),
            c(1.0, 2.0),
            c(0.0, -1.0),
        ],
    )
    .unwrap();
    let edges = DeviceArray::from_slice(&stream, &[c(0.0, 0.0), c(1.0, 2.0), c(3.0, 0.0)]).unwrap();
    assert_eq!(x.histogram_with_edges(&edges).unwrap().to_vec().unwrap(), [2i64, 4]);
    // Edges decreasing in the imaginary part only: NumPy's ValueError.
    let decreasing = DeviceArray::from_slice(&stream, &[c(1.0, 2.0), c(1.0, 1.0)]).unwrap();
    assert!(matches!(
        x.histogram_with_edges(&decreasing),
        Err(Error::InvalidValue(_))
    ));
    // Where NumPy drops the imaginary parts (a bin count, 2-D) or gives a complex density.
    let refusals = [
        x.histogram(4, None).err(),
        x.histogram(4, Some((0.0, 1.0))).err(),
        x.histogram_density(4, None).err(),
        x.histogram_density_with_edges(&edges).err(),
        x.histogram2d(&x, (2, 2), None).err(),
    ];
    for error in refusals {
        assert!(matches!(error, Some(Error::NotSupported(_))), "{error:?}");
    }
}
