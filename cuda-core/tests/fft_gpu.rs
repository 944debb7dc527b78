//! NumPy's fft module over arrays (`cuda_core::fft`, cuFFT) on a GPU, against a host DFT in f64:
//! complex, real and Hermitian transforms in one and several axes, odd and prime sizes, `n`/`s`
//! padding and cropping, every `norm` and its round trip, batched, strided, transposed and
//! reversed inputs, NumPy 2's promotion, the frequency helpers, and the plan cache across
//! streams. Each result must be within `10 (log2 N + 1) eps` of the reference in relative L2
//! norm (the error bound of an FFT). Without a driver or device each test prints
//! `skipped: <why>` and passes, unless `CUDA_REQUIRE_GPU=1`.

mod common;

use cuda_core::fft::{self, FftNorm};
use cuda_core::{f16, Axes, Complex, DType, DeviceArray, Element, ExprOps, Slice};
use cuda_driver::Stream;

type C64 = Complex<f32>;
type C128 = Complex<f64>;

const NORMS: [FftNorm; 3] = [FftNorm::Backward, FftNorm::Ortho, FftNorm::Forward];

/// A row-major host array of complex f64 values.
#[derive(Clone, Debug)]
struct Host {
    shape: Vec<usize>,
    data: Vec<C128>,
}

impl Host {
    fn random(shape: &[usize], seed: u64) -> Host {
        let count: usize = shape.iter().product();
        let mut state = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
        };
        let data = (0..count).map(|_| C128::new(next(), next())).collect();
        Host {
            shape: shape.to_vec(),
            data,
        }
    }

    fn real(mut self) -> Host {
        self.data.iter_mut().for_each(|z| z.im = 0.0);
        self
    }

    fn split(&self, axis: usize) -> (usize, usize, usize) {
        let outer = self.shape[..axis].iter().product();
        let inner = self.shape[axis + 1..].iter().product();
        (outer, self.shape[axis], inner)
    }

    /// Cropped or zero-padded to `n` along `axis`.
    fn resized(&self, axis: usize, n: usize) -> Host {
        let (outer, m, inner) = self.split(axis);
        let mut shape = self.shape.clone();
        shape[axis] = n;
        let mut data = vec![C128::new(0.0, 0.0); outer * n * inner];
        for o in 0..outer {
            for k in 0..m.min(n) {
                for i in 0..inner {
                    data[(o * n + k) * inner + i] = self.data[(o * m + k) * inner + i];
                }
            }
        }
        Host { shape, data }
    }

    /// The unnormalised DFT along `axis` (`exp(-2 pi i jk / n)`, `+` when `inverse`).
    fn dft(&self, axis: usize, inverse: bool) -> Host {
        let (outer, n, inner) = self.split(axis);
        let sign = if inverse { 1.0 } else { -1.0 };
        let twiddle: Vec<C128> = (0..n)
            .map(|r| C128::from_polar(1.0, sign * 2.0 * std::f64::consts::PI * r as f64 / n as f64))
            .collect();
        let mut data = vec![C128::new(0.0, 0.0); self.data.len()];
        for o in 0..outer {
            for i in 0..inner {
                for k in 0..n {
                    let mut sum = C128::new(0.0, 0.0);
                    for j in 0..n {
                        sum += self.data[(o * n + j) * inner + i] * twiddle[(j * k) % n];
                    }
                    data[(o * n + k) * inner + i] = sum;
                }
            }
        }
        Host {
            shape: self.shape.clone(),
            data,
        }
    }

    fn scaled(mut self, factor: f64) -> Host {
        self.data.iter_mut().for_each(|z| *z *= factor);
        self
    }

    fn conj(mut self) -> Host {
        self.data.iter_mut().for_each(|z| *z = z.conj());
        self
    }

    /// The DFT over `axes`, each resized to its `n` first.
    fn fftn(&self, axes: &[usize], sizes: &[usize], inverse: bool) -> Host {
        let mut out = self.clone();
        for (&axis, &n) in axes.iter().zip(sizes) {
            out = out.resized(axis, n).dft(axis, inverse);
        }
        out
    }

    /// NumPy's `irfft` along the last of `axes`, after the complex inverse transforms of the
    /// others: the Hermitian extension of `n / 2 + 1` values (imaginary parts of the zero and
    /// Nyquist values dropped), then the complex inverse.
    fn irfft_last(&self, axis: usize, n: usize) -> Host {
        let half = self.resized(axis, n / 2 + 1);
        let (outer, h, inner) = half.split(axis);
        let mut shape = half.shape.clone();
        shape[axis] = n;
        let mut full = vec![C128::new(0.0, 0.0); outer * n * inner];
        for o in 0..outer {
            for i in 0..inner {
                for k in 0..n {
                    let (source, conj) = if k < h { (k, false) } else { (n - k, true) };
                    let mut z = half.data[(o * h + source) * inner + i];
                    if source == 0 || (n % 2 == 0 && source == n / 2) {
                        z.im = 0.0;
                    }
                    full[(o * n + k) * inner + i] = if conj { z.conj() } else { z };
                }
            }
        }
        Host { shape, data: full }.dft(axis, true)
    }

    fn upload<T: Element>(&self, stream: &Stream, from: impl Fn(C128) -> T) -> DeviceArray<T> {
        let values: Vec<T> = self.data.iter().map(|&z| from(z)).collect();
        DeviceArray::from_slice(stream, &values)
            .unwrap()
            .reshape(self.shape.clone())
            .unwrap()
    }
}

/// The values of a result as `Complex<f64>`.
trait Wide: Element {
    fn wide(self) -> C128;
    const EPS: f64;
}
impl Wide for C64 {
    fn wide(self) -> C128 {
        C128::new(self.re as f64, self.im as f64)
    }
    const EPS: f64 = f32::EPSILON as f64;
}
impl Wide for C128 {
    fn wide(self) -> C128 {
        self
    }
    const EPS: f64 = f64::EPSILON;
}
impl Wide for f32 {
    fn wide(self) -> C128 {
        C128::new(self as f64, 0.0)
    }
    const EPS: f64 = f32::EPSILON as f64;
}
impl Wide for f64 {
    fn wide(self) -> C128 {
        C128::new(self, 0.0)
    }
    const EPS: f64 = f64::EPSILON;
}

/// `got` within `10 (log2 points + 1) eps` of `expected` in relative L2 norm, of its shape.
#[track_caller]
fn assert_fft_close<T: Wide>(what: &str, got: &DeviceArray<T>, expected: &Host, points: usize) {
    assert_eq!(got.shape(), expected.shape, "{what}: shape");
    let got = got.to_vec().unwrap();
    let (mut error, mut size) = (0.0f64, 0.0f64);
    for (g, e) in got.iter().zip(&expected.data) {
        error += (g.wide() - e).norm_sqr();
        size += e.norm_sqr();
    }
    let bound = 10.0 * ((points.max(2) as f64).log2() + 1.0) * T::EPS;
    let relative = error.sqrt() / size.sqrt().max(f64::MIN_POSITIVE);
    assert!(
        relative <= bound,
        "{what}: relative L2 error {relative:e} over {bound:e}"
    );
}

fn c64(z: C128) -> C64 {
    C64::new(z.re as f32, z.im as f32)
}

#[test]
fn complex_transforms_match_the_host_dft_at_odd_and_prime_sizes() {
    let Some(stream) = common::stream_or_skip("complex_transforms_match_the_host_dft_at_odd_and_prime_sizes") else {
        return;
    };
    for n in [1usize, 2, 7, 12, 97, 243, 1000, 4096, 4099] {
        let x = Host::random(&[3, n], n as u64);
        let expected = x.dft(1, false);
        let single = fft::fft(&x.upload(&stream, c64), None, -1, FftNorm::Backward).unwrap();
        assert_eq!(single.dtype(), DType::C64);
        assert_fft_close(&format!("fft c64 n={n}"), &single, &expected, n);
        let double = fft::fft(&x.upload(&stream, |z| z), None, 1, FftNorm::Backward).unwrap();
        assert_fft_close(&format!("fft c128 n={n}"), &double, &expected, n);
        let inverse = fft::ifft(&x.upload(&stream, |z| z), None, -1, FftNorm::Backward).unwrap();
        assert_fft_close(
            &format!("ifft n={n}"),
            &inverse,
            &x.dft(1, true).scaled(1.0 / n as f64),
            n,
        );
    }
}

#[test]
fn every_norm_scales_as_numpy_and_round_trips() {
    let Some(stream) = common::stream_or_skip("every_norm_scales_as_numpy_and_round_trips") else {
        return;
    };
    let n = 360;
    let x = Host::random(&[4, n], 5);
    let device = x.upload(&stream, |z| z);
    for norm in NORMS {
        let forward = fft::fft(&device, None, -1, norm).unwrap();
        assert_fft_close(
            &format!("{norm:?}"),
            &forward,
            &x.dft(1, false).scaled(norm.factor(false, n)),
            n,
        );
        let back = fft::ifft(&forward, None, -1, norm).unwrap();
        assert_fft_close(&format!("{norm:?} round trip"), &back, &x, n);
        let real = Host::random(&[4, n], 6).real();
        let spectrum = fft::rfft(&real.upload(&stream, |z| z.re), None, -1, norm).unwrap();
        let again = fft::irfft(&spectrum, Some(n as i64), -1, norm).unwrap();
        assert_fft_close(&format!("{norm:?} real round trip"), &again, &real, n);
        let spectrum = fft::fftn(&device, None, Axes::ALL, norm).unwrap();
        let back = fft::ifftn(&spectrum, None, Axes::ALL, norm).unwrap();
        assert_fft_close(&format!("{norm:?} fftn round trip"), &back, &x, 4 * n);
    }
}

#[test]
fn real_transforms_pad_crop_and_promote_as_numpy() {
    let Some(stream) = common::stream_or_skip("real_transforms_pad_crop_and_promote_as_numpy") else {
        return;
    };
    let x = Host::random(&[2, 30], 11).real();
    let values: Vec<f32> = x.data.iter().map(|z| z.re as f32).collect();
    let single = DeviceArray::from_slice(&stream, &values)
        .unwrap()
        .reshape([2, 30])
        .unwrap();
    for n in [30usize, 31, 17, 64, 1] {
        let full = x.resized(1, n).dft(1, false);
        let expected = full.resized(1, n / 2 + 1);
        let got = fft::rfft(&single, Some(n as i64), -1, FftNorm::Backward).unwrap();
        assert_eq!(got.dtype(), DType::C64);
        assert_fft_close(&format!("rfft n={n}"), &got, &expected, n);
        // irfft of the half spectrum, n odd and even, padded and cropped.
        for m in [n, n + 1, 2 * n + 3] {
            let back = fft::irfft(&got, Some(m as i64), -1, FftNorm::Backward).unwrap();
            assert_eq!(back.dtype(), DType::F32);
            let reference = Host {
                shape: expected.shape.clone(),
                data: expected.data.clone(),
            }
            .irfft_last(1, m)
            .scaled(1.0 / m as f64);
            assert_fft_close(&format!("irfft n={n} m={m}"), &back, &reference, m);
        }
    }
    // Promotion: f64 and integers give complex128, f16 complex64 (NumPy 2).
    let ints = DeviceArray::from_slice(&stream, &[1i32, 2, 3, 4, 5]).unwrap();
    let spectrum = fft::fft(&ints, None, 0, FftNorm::Backward).unwrap();
    assert_eq!(spectrum.dtype(), DType::C128);
    let host = Host {
        shape: vec![5],
        data: (1..=5).map(|v| C128::new(v as f64, 0.0)).collect(),
    };
    assert_fft_close("fft of i32", &spectrum, &host.dft(0, false), 5);
    let halves =
        DeviceArray::from_slice(&stream, &[f16::from_f32(1.0), f16::from_f32(-2.0), f16::from_f32(0.5)]).unwrap();
    let spectrum = fft::rfft(&halves, None, 0, FftNorm::Ortho).unwrap();
    assert_eq!(spectrum.dtype(), DType::C64);
    let host = Host {
        shape: vec![3],
        data: [1.0, -2.0, 0.5].iter().map(|&v| C128::new(v, 0.0)).collect(),
    };
    assert_fft_close(
        "rfft of f16, ortho",
        &spectrum,
        &host.dft(0, false).resized(0, 2).scaled(1.0 / 3f64.sqrt()),
        3,
    );
    let wide = fft::irfft(&spectrum, Some(3), 0, FftNorm::Ortho).unwrap();
    assert_eq!(wide.dtype(), DType::F32);
    assert_fft_close("irfft of the f16 spectrum", &wide, &host, 3);
    // Complex input to rfft is refused, as NumPy's TypeError.
    let complex = DeviceArray::<C64>::zeros(&stream, [4]).unwrap();
    assert!(matches!(
        fft::rfft(&complex, None, 0, FftNorm::Backward),
        Err(cuda_core::Error::NotSupported(_))
    ));
}

#[test]
fn transforms_over_several_axes_match_the_host_dft() {
    let Some(stream) = common::stream_or_skip("transforms_over_several_axes_match_the_host_dft") else {
        return;
    };
    let x = Host::random(&[6, 5, 8], 21);
    let device = x.upload(&stream, |z| z);
    // fft2 over the last two, fftn over the first and last (a middle batch axis: one copy),
    // fftn with s padding and cropping, in the order given.
    let got = fft::fft2(&device, None, Axes::ALL, FftNorm::Backward).unwrap();
    assert_fft_close("fft2", &got, &x.fftn(&[1, 2], &[5, 8], false), 40);
    let got = fft::fftn(&device, None, [0, -1], FftNorm::Backward).unwrap();
    assert_fft_close("fftn axes [0, -1]", &got, &x.fftn(&[0, 2], &[6, 8], false), 48);
    let got = fft::fftn(&device, Some(&[7, 3][..]), [2, 0], FftNorm::Backward).unwrap();
    assert_fft_close("fftn s [7, 3]", &got, &x.fftn(&[2, 0], &[7, 3], false), 21);
    let got = fft::ifftn(&device, None, Axes::ALL, FftNorm::Forward).unwrap();
    assert_fft_close("ifftn", &got, &x.fftn(&[0, 1, 2], &[6, 5, 8], true), 240);
    // Axes of one point leave the plan (a transform of one value is the value).
    let thin = Host::random(&[1, 7, 1], 24);
    let got = fft::fftn(&thin.upload(&stream, |z| z), None, Axes::ALL, FftNorm::Backward).unwrap();
    assert_fft_close("fftn of [1, 7, 1]", &got, &thin.fftn(&[0, 1, 2], &[1, 7, 1], false), 7);
    let spectrum = fft::rfftn(
        &thin.clone().real().upload(&stream, |z| z.re),
        None,
        Axes::ALL,
        FftNorm::Backward,
    )
    .unwrap();
    assert_eq!(spectrum.shape(), [1, 7, 1]);
    let back = fft::irfftn(&spectrum, Some(&[1, 7, 1][..]), Axes::ALL, FftNorm::Backward).unwrap();
    assert_fft_close("irfftn of [1, 7, 1]", &back, &thin.real(), 7);
    // Four axes: two cuFFT plans.
    let y = Host::random(&[3, 4, 2, 5], 22);
    let got = fft::fftn(&y.upload(&stream, |z| z), None, Axes::ALL, FftNorm::Backward).unwrap();
    assert_fft_close(
        "fftn of 4 axes",
        &got,
        &y.fftn(&[0, 1, 2, 3], &[3, 4, 2, 5], false),
        120,
    );
    // rfftn and irfftn: the last axis halved.
    let r = Host::random(&[6, 5, 8], 23).real();
    let real = r.upload(&stream, |z| z.re);
    let spectrum = fft::rfftn(&real, None, Axes::ALL, FftNorm::Backward).unwrap();
    assert_eq!(spectrum.shape(), [6, 5, 5]);
    assert_fft_close(
        "rfftn",
        &spectrum,
        &r.fftn(&[0, 1, 2], &[6, 5, 8], false).resized(2, 5),
        240,
    );
    let back = fft::irfftn(&spectrum, Some(&[6, 5, 8][..]), Axes::ALL, FftNorm::Backward).unwrap();
    assert_fft_close("irfftn round trip", &back, &r, 240);
    let spectrum = fft::rfft2(&real, None, [0, 1], FftNorm::Ortho).unwrap();
    assert_eq!(spectrum.shape(), [6, 3, 8]);
    let back = fft::irfft2(&spectrum, Some(&[6, 5][..]), [0, 1], FftNorm::Ortho).unwrap();
    assert_fft_close("irfft2 over axes [0, 1]", &back, &r, 30);
}

#[test]
fn batched_strided_transposed_and_reversed_inputs() {
    let Some(stream) = common::stream_or_skip("batched_strided_transposed_and_reversed_inputs") else {
        return;
    };
    let x = Host::random(&[64, 256], 31);
    let device = x.upload(&stream, |z| z);
    // Batched rows, then columns (axis 0: stride 256, distance 1, in place).
    let got = fft::fft(&device, None, -1, FftNorm::Backward).unwrap();
    assert_fft_close("rows", &got, &x.dft(1, false), 256);
    let got = fft::fft(&device, None, 0, FftNorm::Backward).unwrap();
    assert_fft_close("columns", &got, &x.dft(0, false), 64);
    // Every second column: stride 2, read in place.
    let strided = device.slice(&[Slice::ALL, Slice::from(..).step(2)]).unwrap();
    let host = Host {
        shape: vec![64, 128],
        data: strided.to_vec().unwrap(),
    };
    let got = fft::fft(&strided, None, -1, FftNorm::Backward).unwrap();
    assert_fft_close("x[:, ::2]", &got, &host.dft(1, false), 128);
    // The transpose, and a reversed view (copied once).
    let transposed = device.transpose();
    let host_t = Host {
        shape: vec![256, 64],
        data: transposed.to_vec().unwrap(),
    };
    let got = fft::fft(&transposed, None, -1, FftNorm::Backward).unwrap();
    assert_fft_close("x.T", &got, &host_t.dft(1, false), 64);
    let reversed = device.flip(-1).unwrap();
    let host_r = Host {
        shape: vec![64, 256],
        data: reversed.to_vec().unwrap(),
    };
    let got = fft::fft(&reversed, None, -1, FftNorm::Backward).unwrap();
    assert_fft_close("x[:, ::-1]", &got, &host_r.dft(1, false), 256);
    let got = fft::fft(&reversed, Some(300), -1, FftNorm::Ortho).unwrap();
    assert_fft_close(
        "x[:, ::-1] padded",
        &got,
        &host_r.resized(1, 300).dft(1, false).scaled(1.0 / 300f64.sqrt()),
        300,
    );
    // A middle axis of a 3-D array (batch axes that do not merge: output through a temporary).
    let y = Host::random(&[4, 9, 6], 32);
    let got = fft::fft(&y.upload(&stream, |z| z), None, 1, FftNorm::Backward).unwrap();
    assert_fft_close("middle axis", &got, &y.dft(1, false), 9);
}

#[test]
fn hermitian_transforms_are_numpys() {
    let Some(stream) = common::stream_or_skip("hermitian_transforms_are_numpys") else {
        return;
    };
    let n = 21;
    let r = Host::random(&[3, n], 41).real();
    let real = r.upload(&stream, |z| z.re);
    for norm in NORMS {
        // ihfft(a) = conj(rfft(a)) scaled by the swapped norm; hfft inverts it.
        let half = fft::ihfft(&real, None, -1, norm).unwrap();
        let expected = r
            .dft(1, false)
            .resized(1, n / 2 + 1)
            .conj()
            .scaled(norm.factor(true, n));
        assert_fft_close(&format!("ihfft {norm:?}"), &half, &expected, n);
        let back = fft::hfft(&half, Some(n as i64), -1, norm).unwrap();
        assert_fft_close(&format!("hfft {norm:?}"), &back, &r, n);
    }
}

#[test]
fn frequencies_and_shifts_are_numpys() {
    let Some(stream) = common::stream_or_skip("frequencies_and_shifts_are_numpys") else {
        return;
    };
    assert_eq!(fft::fftfreq(&stream, 5, 0.1).unwrap().to_vec().unwrap().len(), 5);
    let freq = fft::fftfreq(&stream, 4, 1.0).unwrap().to_vec().unwrap();
    assert_eq!(freq, [0.0, 0.25, -0.5, -0.25]);
    assert_eq!(
        fft::rfftfreq(&stream, 4, 1.0).unwrap().to_vec().unwrap(),
        [0.0, 0.25, 0.5]
    );
    let x = DeviceArray::from_slice(&stream, &[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14])
        .unwrap()
        .reshape([3, 5])
        .unwrap();
    // numpy.fft.fftshift(np.arange(15).reshape(3, 5)) and its inverse.
    let shifted = fft::fftshift(&x, Axes::ALL).unwrap();
    assert_eq!(
        shifted.to_vec().unwrap(),
        [13, 14, 10, 11, 12, 3, 4, 0, 1, 2, 8, 9, 5, 6, 7]
    );
    assert_eq!(
        fft::ifftshift(&shifted, Axes::ALL).unwrap().to_vec().unwrap(),
        x.to_vec().unwrap()
    );
    assert_eq!(
        fft::fftshift(&x, -1).unwrap().to_vec().unwrap(),
        [3, 4, 0, 1, 2, 8, 9, 5, 6, 7, 13, 14, 10, 11, 12]
    );
}

#[test]
fn plans_are_cached_per_stream() {
    let Some(stream) = common::stream_or_skip("plans_are_cached_per_stream") else {
        return;
    };
    let other = stream.context().clone();
    let second = Stream::new(&other).unwrap();
    let x = Host::random(&[8, 128], 51);
    let on_first = x.upload(&stream, |z| z);
    let on_second = x.upload(&second, |z| z);
    for _ in 0..3 {
        let a = fft::fft(&on_first, None, -1, FftNorm::Backward).unwrap();
        let b = fft::fft(&on_second, None, -1, FftNorm::Backward).unwrap();
        assert_fft_close("first stream", &a, &x.dft(1, false), 128);
        assert_fft_close("second stream", &b, &x.dft(1, false), 128);
    }
    // More shapes than the cache keeps: evictions wait for their plans, results stay right.
    for n in 1..=fft::PLAN_CACHE_CAPACITY + 4 {
        let y = Host::random(&[n], n as u64);
        let got = fft::fft(&y.upload(&stream, |z| z), None, 0, FftNorm::Backward).unwrap();
        assert_fft_close(&format!("n={n}"), &got, &y.dft(0, false), n);
    }
    fft::clear_plan_cache();
}

/// A device result as a host array.
fn host_of<T: Wide>(a: &DeviceArray<T>) -> Host {
    Host {
        shape: a.shape().to_vec(),
        data: a.to_vec().unwrap().into_iter().map(Wide::wide).collect(),
    }
}

/// Whether the loaded cuFFT takes LTO load callbacks (cuFFT 12, CUDA 13): where the thread asked
/// for them (`fft::set_load_callbacks`) the fused path must then be the callback; with CUDA 12's
/// cuFFT 11 every expression takes the fallback.
fn callbacks_expected() -> bool {
    let why = cuda_libs::fft::supports_load_callbacks().unwrap();
    if let Some(why) = &why {
        println!("no load callbacks here: {why}");
    }
    why.is_none()
}

/// Runs `transform`, and checks it took the load callback (where cuFFT has them) or the
/// fallback, as `plan_cache_info` counts them.
#[track_caller]
fn through<R>(what: &str, callback: bool, transform: impl FnOnce() -> R) -> R {
    let before = fft::plan_cache_info();
    let result = transform();
    let after = fft::plan_cache_info();
    let loaded = after.load_callback_transforms - before.load_callback_transforms;
    let fallen = after.fallback_transforms - before.fallback_transforms;
    assert_eq!(
        (loaded, fallen),
        if callback { (1, 0) } else { (0, 1) },
        "{what}: callback {callback} expected; last fallback: {:?}",
        after.last_fallback
    );
    result
}

#[test]
fn expressions_load_through_cufft_callbacks() {
    let Some(stream) = common::stream_or_skip("expressions_load_through_cufft_callbacks") else {
        return;
    };
    let callback = callbacks_expected();
    // `rfft(x * window)`: a Hann window broadcast over a batch of 8 rows of 1024.
    let n = 1024;
    let x = Host::random(&[8, n], 41).real();
    let hann: Vec<f32> = (0..n)
        .map(|i| (0.5 - 0.5 * (2.0 * std::f64::consts::PI * i as f64 / n as f64).cos()) as f32)
        .collect();
    let xs = x.upload(&stream, |z| z.re as f32);
    let window = DeviceArray::from_slice(&stream, &hann).unwrap();
    // Off unless asked for: the product is written first.
    let written = through("rfft(x * window), load callbacks off", false, || {
        fft::rfft(&(&xs * &window), None, -1, FftNorm::Backward).unwrap()
    });
    let why = fft::plan_cache_info().last_fallback.unwrap();
    assert!(why.contains("load callbacks are off"), "{why}");
    assert!(!fft::set_load_callbacks(true), "off by default");
    let fused = through("rfft(x * window)", callback, || {
        fft::rfft(&(&xs * &window), None, -1, FftNorm::Backward).unwrap()
    });
    let unfused = fft::rfft(&(&xs * &window).eval().unwrap(), None, -1, FftNorm::Backward).unwrap();
    assert_fft_close("rfft(x * window) against unfused", &fused, &host_of(&unfused), n);
    assert_fft_close("rfft(x * window) written first", &written, &host_of(&unfused), n);
    let windowed = host_of(&(&xs * &window).eval().unwrap());
    assert_fft_close(
        "rfft(x * window) against the host",
        &fused,
        &windowed.dft(1, false).resized(1, n / 2 + 1),
        n,
    );
    if callback {
        assert!(fft::plan_cache_info().load_callback_plans >= 1);
    }
    // Every norm rides in the callback; the cached plan serves each.
    for norm in NORMS {
        let got = through("rfft(x * window, norm)", callback, || {
            fft::rfft(&xs * &window, None, -1, norm).unwrap()
        });
        assert_fft_close(
            &format!("rfft(x * window) {norm:?}"),
            &got,
            &windowed
                .dft(1, false)
                .resized(1, n / 2 + 1)
                .scaled(norm.factor(false, n)),
            n,
        );
    }

    // `fft(a * b)` of complex operands, and `ifft` of a conjugate product.
    let a = Host::random(&[4, 600], 42);
    let b = Host::random(&[4, 600], 43);
    let (da, db) = (a.upload(&stream, c64), b.upload(&stream, c64));
    let fused = through("fft(a * b)", callback, || {
        fft::fft(&da * &db, None, -1, FftNorm::Backward).unwrap()
    });
    let product = host_of(&(&da * &db).eval().unwrap());
    assert_fft_close("fft(a * b)", &fused, &product.dft(1, false), 600);
    let fused = through("ifft(a * conj(b))", callback, || {
        fft::ifft(&da * (&db).conj(), None, -1, FftNorm::Ortho).unwrap()
    });
    let unfused = fft::ifft(&(&da * (&db).conj()).eval().unwrap(), None, -1, FftNorm::Ortho).unwrap();
    assert_fft_close("ifft(a * conj(b))", &fused, &host_of(&unfused), 600);

    // A window broadcast down the columns, transformed along axis 0 (the result's memory is
    // written through cuFFT's strided output layout).
    let y = Host::random(&[256, 48], 44).real();
    let ys = y.upload(&stream, |z| z.re);
    let column: Vec<f64> = (0..256).map(|i| 1.0 + (i % 7) as f64).collect();
    let column = DeviceArray::from_slice(&stream, &column)
        .unwrap()
        .reshape([256, 1])
        .unwrap();
    let fused = through("rfft(y * column, axis 0)", callback, || {
        fft::rfft(&(&ys * &column), None, 0, FftNorm::Forward).unwrap()
    });
    let unfused = fft::rfft(&(&ys * &column).eval().unwrap(), None, 0, FftNorm::Forward).unwrap();
    assert_fft_close("rfft(y * column, axis 0)", &fused, &host_of(&unfused), 256);

    // f64 with scalars (read from the caller info), cropped by `n`, and a 2-D transform of a
    // transposed operand; `ihfft` conjugates after the callback.
    let fused = through("rfft(2.5 * y + 1, n = 200)", callback, || {
        fft::rfft(2.5 * &ys + 1.0, Some(200), 0, FftNorm::Backward).unwrap()
    });
    let unfused = fft::rfft(&(2.5 * &ys + 1.0).eval().unwrap(), Some(200), 0, FftNorm::Backward).unwrap();
    assert_fft_close("rfft(2.5 * y + 1, n = 200)", &fused, &host_of(&unfused), 200);
    let t = ys.transpose();
    let fused = through("fft2(y.T - 1)", callback, || {
        fft::fft2(&t - 1.0, None, Axes::ALL, FftNorm::Backward).unwrap()
    });
    let unfused = fft::fft2(&(&t - 1.0).eval().unwrap(), None, Axes::ALL, FftNorm::Backward).unwrap();
    assert_fft_close("fft2(y.T - 1)", &fused, &host_of(&unfused), 256 * 48);
    let fused = through("ihfft(y * 3)", callback, || {
        fft::ihfft(&ys * 3.0, None, -1, FftNorm::Backward).unwrap()
    });
    let unfused = fft::ihfft(&(&ys * 3.0).eval().unwrap(), None, -1, FftNorm::Backward).unwrap();
    assert_fft_close("ihfft(y * 3)", &fused, &host_of(&unfused), 48);
}

#[test]
fn expressions_fall_back_where_no_callback_fits() {
    let Some(stream) = common::stream_or_skip("expressions_fall_back_where_no_callback_fits") else {
        return;
    };
    // With load callbacks asked for, these still fall back, each for its own reason.
    fft::set_load_callbacks(true);
    let x = Host::random(&[4, 100], 51).real();
    let xs = x.upload(&stream, |z| z.re as f32);
    let w = x.upload(&stream, |z| (z.re * 0.5) as f32);
    // Padding by `n`: the expression is written once into the zero-padded input.
    let fused = through("rfft(x * w, n = 160)", false, || {
        fft::rfft(&xs * &w, Some(160), -1, FftNorm::Ortho).unwrap()
    });
    let why = fft::plan_cache_info().last_fallback.unwrap();
    assert!(why.contains("pads"), "{why}");
    let unfused = fft::rfft(&(&xs * &w).eval().unwrap(), Some(160), -1, FftNorm::Ortho).unwrap();
    assert_fft_close("rfft(x * w, n = 160)", &fused, &host_of(&unfused), 160);
    // A complex-to-real transform (cuFFT overwrites its input) of an expression, and `hfft`.
    let spectrum = fft::rfft(&xs, None, -1, FftNorm::Backward).unwrap();
    let fused = through("irfft(2 * X)", false, || {
        fft::irfft(&spectrum * 2.0, Some(100), -1, FftNorm::Backward).unwrap()
    });
    assert_fft_close("irfft(2 * X)", &fused, &x.clone().scaled(2.0), 100);
    let fused = through("hfft(X + 0)", false, || {
        fft::hfft(&spectrum + 0.0, Some(100), -1, FftNorm::Forward).unwrap()
    });
    let unfused = fft::hfft(&spectrum, Some(100), -1, FftNorm::Forward).unwrap();
    assert_fft_close("hfft(X + 0)", &fused, &host_of(&unfused), 100);
    // Four axes: two cuFFT plans, the first of which would need the callback.
    let z = Host::random(&[3, 4, 5, 6], 52);
    let zs = z.upload(&stream, c64);
    let fused = through("fftn(z * z) over 4 axes", false, || {
        fft::fftn(&zs * &zs, None, Axes::ALL, FftNorm::Backward).unwrap()
    });
    let unfused = fft::fftn(&(&zs * &zs).eval().unwrap(), None, Axes::ALL, FftNorm::Backward).unwrap();
    assert_fft_close("fftn(z * z)", &fused, &host_of(&unfused), 360);
    // f16 promotes to complex f32 in the staging pass.
    let h = x.upload(&stream, |v| f16::from_f64(v.re));
    let fused = fft::fft(&h * 2.0, None, -1, FftNorm::Backward).unwrap();
    assert_eq!(fused.dtype(), DType::C64);
    let unfused = fft::fft(&(&h * 2.0).eval().unwrap(), None, -1, FftNorm::Backward).unwrap();
    assert_fft_close("fft(h * 2) of f16", &fused, &host_of(&unfused), 100);
}

/// Runs `transform` and checks how many cuFFT executions scaled their result in a store
/// callback: `stores` where cuFFT has LTO callbacks, none otherwise.
#[track_caller]
fn stored<R>(what: &str, callback: bool, stores: u64, transform: impl FnOnce() -> R) -> R {
    let before = fft::plan_cache_info();
    let result = transform();
    let after = fft::plan_cache_info();
    let got = after.store_callback_transforms - before.store_callback_transforms;
    let expected = if callback { stores } else { 0 };
    assert_eq!(
        got, expected,
        "{what}: store callbacks; last scale pass: {:?}",
        after.last_scale_pass
    );
    result
}

/// Every norm of a transform of an array, where its factor is not 1 and nothing else writes
/// the result after cuFFT, is applied by a store callback (where cuFFT has LTO callbacks):
/// fft/ifft in both precisions, rfft, rfftn's last (complex) plan and irfftn's complex-to-real
/// plan over 4 axes; irfft and hfft, whose input is copied anyway (cuFFT overwrites it), scale
/// in that copy. Each result and its round trip against the f64 host DFT.
#[test]
fn norms_scale_in_cufft_store_callbacks() {
    let Some(stream) = common::stream_or_skip("norms_scale_in_cufft_store_callbacks") else {
        return;
    };
    let callback = callbacks_expected();
    let scales = |factor: f64| u64::from(factor != 1.0);
    let n = 360;
    let x = Host::random(&[4, n], 61);
    let (single, double) = (x.upload(&stream, c64), x.upload(&stream, |z| z));
    for norm in NORMS {
        let (forward, inverse) = (norm.factor(false, n), norm.factor(true, n));
        let expected = x.dft(1, false).scaled(forward);
        let got = stored("fft c64", callback, scales(forward), || {
            fft::fft(&single, None, -1, norm).unwrap()
        });
        assert_fft_close(&format!("fft c64 {norm:?}"), &got, &expected, n);
        let back = stored("ifft c64", callback, scales(inverse), || {
            fft::ifft(&got, None, -1, norm).unwrap()
        });
        assert_fft_close(&format!("ifft c64 {norm:?} round trip"), &back, &x, n);
        let got = stored("fft c128", callback, scales(forward), || {
            fft::fft(&double, None, -1, norm).unwrap()
        });
        assert_fft_close(&format!("fft c128 {norm:?}"), &got, &expected, n);
        let back = stored("ifft c128", callback, scales(inverse), || {
            fft::ifft(&got, None, -1, norm).unwrap()
        });
        assert_fft_close(&format!("ifft c128 {norm:?} round trip"), &back, &x, n);

        // rfft of f32 (the real-to-complex plan's output), irfft back (scaled in its copy).
        let r = Host::random(&[4, n], 62).real();
        let real = r.upload(&stream, |z| z.re as f32);
        let spectrum = stored("rfft", callback, scales(forward), || {
            fft::rfft(&real, None, -1, norm).unwrap()
        });
        assert_fft_close(
            &format!("rfft {norm:?}"),
            &spectrum,
            &r.dft(1, false).resized(1, n / 2 + 1).scaled(forward),
            n,
        );
        let again = stored("irfft", callback, 0, || {
            fft::irfft(&spectrum, Some(n as i64), -1, norm).unwrap()
        });
        assert_fft_close(&format!("irfft {norm:?} round trip"), &again, &r, n);

        // rfftn / irfftn of f64 over 4 axes (two cuFFT plans each way): the factor in the last
        // plan's store callback, the inverse's a complex-to-real plan (a real store type).
        let dims = [3usize, 4, 5, 8];
        let points: usize = dims.iter().product();
        let (forward4, inverse4) = (norm.factor(false, points), norm.factor(true, points));
        let p = Host::random(&dims, 63).real();
        let volume = p.upload(&stream, |z| z.re);
        let spectrum = stored("rfftn", callback, scales(forward4), || {
            fft::rfftn(&volume, None, Axes::ALL, norm).unwrap()
        });
        let expected = p
            .fftn(&[0, 1, 2, 3], &dims, false)
            .resized(3, dims[3] / 2 + 1)
            .scaled(forward4);
        assert_fft_close(&format!("rfftn {norm:?}"), &spectrum, &expected, points);
        let sizes: Vec<i64> = dims.iter().map(|&d| d as i64).collect();
        let again = stored("irfftn", callback, scales(inverse4), || {
            fft::irfftn(&spectrum, Some(&sizes[..]), Axes::ALL, norm).unwrap()
        });
        assert_fft_close(&format!("irfftn {norm:?} round trip"), &again, &p, points);

        // hfft (its conjugated input copy takes the factor) round trips ihfft.
        let m = 21;
        let h = Host::random(&[3, m], 64).real();
        let half = fft::ihfft(&h.upload(&stream, |z| z.re), None, -1, norm).unwrap();
        let back = stored("hfft", callback, 0, || {
            fft::hfft(&half, Some(m as i64), -1, norm).unwrap()
        });
        assert_fft_close(&format!("hfft {norm:?} round trip"), &back, &h, m);
    }
    if callback {
        let info = fft::plan_cache_info();
        assert!(info.store_callback_plans >= 1, "{info:?}");
    }
}
