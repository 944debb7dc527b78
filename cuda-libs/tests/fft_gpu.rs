//! cuFFT on the GPU against an f64 host DFT. Each test prints `skipped:` without a GPU or
//! without cuFFT, and fails instead under `CUDA_REQUIRE_GPU=1`.

use cuda_driver::{DeviceBuffer, DeviceCopy, DeviceMemoryMut, Stream};
use cuda_libs::fft::{Direction, Kind, Layout, Plan, PlanCache, PlanDesc, Precision};
use cuda_libs::Error;
use half::f16;

mod common;

/// A stream on device 0 with cuFFT loaded, or `None` after printing why the test is skipped (a
/// panic under `CUDA_REQUIRE_GPU=1`).
fn stream_or_skip(test: &str) -> Option<Stream> {
    common::stream_with(test, "cuFFT", cuda_libs::fft::load)
}

/// A real type of a transform, as the host reference sees it.
trait Real: DeviceCopy + Default {
    const PRECISION: Precision;
    /// Machine epsilon.
    const EPS: f64;
    fn from_f64(value: f64) -> Self;
    fn to_f64(self) -> f64;
}

impl Real for f32 {
    const PRECISION: Precision = Precision::F32;
    const EPS: f64 = f32::EPSILON as f64;
    fn from_f64(value: f64) -> Self {
        value as f32
    }
    fn to_f64(self) -> f64 {
        f64::from(self)
    }
}

impl Real for f64 {
    const PRECISION: Precision = Precision::F64;
    const EPS: f64 = f64::EPSILON;
    fn from_f64(value: f64) -> Self {
        value
    }
    fn to_f64(self) -> f64 {
        self
    }
}

impl Real for f16 {
    const PRECISION: Precision = Precision::F16;
    const EPS: f64 = 9.765625e-4;
    fn from_f64(value: f64) -> Self {
        f16::from_f64(value)
    }
    fn to_f64(self) -> f64 {
        f16::to_f64(self)
    }
}

/// Deterministic values in [-1, 1).
fn values(count: usize, seed: u64) -> Vec<f64> {
    let mut state = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    (0..count)
        .map(|_| {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((state >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0
        })
        .collect()
}

/// The unnormalised DFT of row-major `shape` complex values along every axis, in f64.
fn host_dft(data: &[(f64, f64)], shape: &[usize], sign: f64) -> Vec<(f64, f64)> {
    let mut out = data.to_vec();
    let total: usize = shape.iter().product();
    for (axis, &n) in shape.iter().enumerate() {
        let inner: usize = shape[axis + 1..].iter().product();
        let mut next = vec![(0.0, 0.0); total];
        for outer in 0..total / (n * inner) {
            for i in 0..inner {
                let at = |k: usize| outer * n * inner + k * inner + i;
                for k in 0..n {
                    let (mut re, mut im) = (0.0, 0.0);
                    for j in 0..n {
                        let angle = sign * 2.0 * std::f64::consts::PI * ((j * k) % n) as f64 / n as f64;
                        let (x, y) = out[at(j)];
                        re += x * angle.cos() - y * angle.sin();
                        im += x * angle.sin() + y * angle.cos();
                    }
                    next[at(k)] = (re, im);
                }
            }
        }
        out = next;
    }
    out
}

/// `max |got - want| / max(1, max |want|)` must stay under `c log2(n) eps`.
fn assert_close(got: &[(f64, f64)], want: &[(f64, f64)], n: usize, eps: f64, what: &str) {
    assert_eq!(got.len(), want.len(), "{what}");
    let scale = want.iter().map(|(x, y)| x.hypot(*y)).fold(1.0, f64::max);
    let error = got
        .iter()
        .zip(want)
        .map(|((a, b), (x, y))| (a - x).hypot(b - y))
        .fold(0.0, f64::max);
    let bound = 8.0 * ((n as f64).log2() + 1.0) * eps * scale;
    assert!(error <= bound, "{what}: error {error:e} over {bound:e} (scale {scale})");
}

fn to_complex<T: Real>(data: &[(f64, f64)]) -> Vec<[T; 2]> {
    data.iter().map(|&(x, y)| [T::from_f64(x), T::from_f64(y)]).collect()
}

fn from_complex<T: Real>(data: &[[T; 2]]) -> Vec<(f64, f64)> {
    data.iter().map(|&[x, y]| (x.to_f64(), y.to_f64())).collect()
}

fn workspace(plan: &Plan, stream: &Stream) -> DeviceBuffer<u8> {
    DeviceBuffer::zeroed(stream.context(), plan.workspace_size().max(1)).unwrap()
}

/// C2C forward and inverse of a batch of `shape`, against the host DFT.
fn c2c_matches_the_host<T: Real>(stream: &Stream, shape: &[usize], batch: usize) {
    let per: usize = shape.iter().product();
    let raw = values(2 * per * batch, per as u64);
    let input: Vec<(f64, f64)> = raw.chunks(2).map(|c| (c[0], c[1])).collect();
    let context = stream.context();
    let desc = PlanDesc::new(Kind::C2C, T::PRECISION, shape).unwrap().batch(batch);
    let mut plan = Plan::new(context, &desc).unwrap();
    let mut ws = workspace(&plan, stream);
    let x = DeviceBuffer::from_slice(context, &to_complex::<T>(&input)).unwrap();
    let mut y = DeviceBuffer::<[T; 2]>::zeroed(context, per * batch).unwrap();
    for (direction, sign) in [(Direction::Forward, -1.0), (Direction::Inverse, 1.0)] {
        plan.execute(stream, direction, &x, &mut y, Some(&mut ws)).unwrap();
        stream.synchronize().unwrap();
        let got = from_complex(&y.to_vec().unwrap());
        // The input as the device saw it (rounded to T).
        let seen = from_complex(&x.to_vec().unwrap());
        for b in 0..batch {
            let want = host_dft(&seen[b * per..(b + 1) * per], shape, sign);
            assert_close(
                &got[b * per..(b + 1) * per],
                &want,
                per,
                T::EPS,
                &format!("{:?} {shape:?} transform {b} {direction:?}", T::PRECISION),
            );
        }
    }
}

#[test]
fn c2c_in_every_precision_and_rank_matches_the_host_dft() {
    let Some(stream) = stream_or_skip("c2c_in_every_precision_and_rank_matches_the_host_dft") else {
        return;
    };
    // Powers of two, odd and prime sizes, 1-D to 3-D, batched.
    for (shape, batch) in [
        (&[16][..], 1),
        (&[17][..], 3),
        (&[1000][..], 2),
        (&[6, 10][..], 2),
        (&[4, 5, 7][..], 2),
    ] {
        c2c_matches_the_host::<f32>(&stream, shape, batch);
        c2c_matches_the_host::<f64>(&stream, shape, batch);
    }
    c2c_matches_the_host::<f16>(&stream, &[64], 4);
    c2c_matches_the_host::<f16>(&stream, &[8, 16], 1);
}

/// R2C then C2R gives back `n` times the input; R2C matches the first `n / 2 + 1` host values.
fn real_round_trip<T: Real>(stream: &Stream, shape: &[usize], batch: usize) {
    let per: usize = shape.iter().product();
    let last = shape[shape.len() - 1];
    let half_shape: Vec<usize> = shape[..shape.len() - 1].iter().copied().chain([last / 2 + 1]).collect();
    let half: usize = half_shape.iter().product();
    let context = stream.context();
    let input: Vec<T> = values(per * batch, 7).into_iter().map(T::from_f64).collect();
    let x = DeviceBuffer::from_slice(context, &input).unwrap();
    let mut spectrum = DeviceBuffer::<[T; 2]>::zeroed(context, half * batch).unwrap();
    let mut back = DeviceBuffer::<T>::zeroed(context, per * batch).unwrap();
    let mut forward = Plan::new(
        context,
        &PlanDesc::new(Kind::R2C, T::PRECISION, shape).unwrap().batch(batch),
    )
    .unwrap();
    let mut inverse = Plan::new(
        context,
        &PlanDesc::new(Kind::C2R, T::PRECISION, shape).unwrap().batch(batch),
    )
    .unwrap();
    let mut ws = workspace(&forward, stream);
    forward
        .execute(stream, Direction::Forward, &x, &mut spectrum, Some(&mut ws))
        .unwrap();
    stream.synchronize().unwrap();
    let got = from_complex(&spectrum.to_vec().unwrap());
    for b in 0..batch {
        let seen: Vec<(f64, f64)> = input[b * per..(b + 1) * per]
            .iter()
            .map(|v| (v.to_f64(), 0.0))
            .collect();
        let full = host_dft(&seen, shape, -1.0);
        // Keep the first last / 2 + 1 values of every row.
        let want: Vec<(f64, f64)> = full.chunks(last).flat_map(|row| row[..last / 2 + 1].to_vec()).collect();
        assert_close(
            &got[b * half..(b + 1) * half],
            &want,
            per,
            T::EPS,
            &format!("r2c {shape:?} {b}"),
        );
    }
    let mut ws = workspace(&inverse, stream);
    inverse
        .execute_c2r(stream, &mut spectrum, &mut back, Some(&mut ws))
        .unwrap();
    stream.synchronize().unwrap();
    let got: Vec<(f64, f64)> = back
        .to_vec()
        .unwrap()
        .iter()
        .map(|v| (v.to_f64() / per as f64, 0.0))
        .collect();
    let want: Vec<(f64, f64)> = input.iter().map(|v| (v.to_f64(), 0.0)).collect();
    assert_close(&got, &want, per, T::EPS, &format!("c2r(r2c(x)) / n {shape:?}"));
}

#[test]
fn real_transforms_round_trip_in_odd_and_even_sizes() {
    let Some(stream) = stream_or_skip("real_transforms_round_trip_in_odd_and_even_sizes") else {
        return;
    };
    for (shape, batch) in [(&[32][..], 2), (&[31][..], 3), (&[6, 9][..], 2), (&[4, 6, 8][..], 1)] {
        real_round_trip::<f32>(&stream, shape, batch);
        real_round_trip::<f64>(&stream, shape, batch);
    }
    real_round_trip::<f16>(&stream, &[64], 2);
}

#[test]
fn interleaved_and_padded_layouts_match_the_packed_transform() {
    let Some(stream) = stream_or_skip("interleaved_and_padded_layouts_match_the_packed_transform") else {
        return;
    };
    let context = stream.context();
    // 4 transforms of 12 values interleaved (element i of transform b at b + 4 i) into rows
    // padded to 16 values, 2 apart.
    let (n, batch) = (12, 4);
    let input: Vec<(f64, f64)> = values(2 * n * batch, 3).chunks(2).map(|c| (c[0], c[1])).collect();
    let x = DeviceBuffer::from_slice(context, &to_complex::<f64>(&input)).unwrap();
    let mut y = DeviceBuffer::<[f64; 2]>::zeroed(context, 2 * 16 * batch).unwrap();
    let desc = PlanDesc::new(Kind::C2C, Precision::F64, &[n])
        .unwrap()
        .batch(batch)
        .input_layout(Layout::strided(&[n], batch, 1).unwrap())
        .output_layout(Layout::strided(&[16], 2, 32).unwrap());
    let mut plan = Plan::new(context, &desc).unwrap();
    assert_eq!(plan.output_bytes(), (3 * 32 + 11 * 2 + 1) * 16);
    let mut ws = workspace(&plan, &stream);
    plan.execute(&stream, Direction::Forward, &x, &mut y, Some(&mut ws))
        .unwrap();
    stream.synchronize().unwrap();
    let got = from_complex(&y.to_vec().unwrap());
    for b in 0..batch {
        let column: Vec<(f64, f64)> = (0..n).map(|i| input[b + batch * i]).collect();
        let want = host_dft(&column, &[n], -1.0);
        let row: Vec<(f64, f64)> = (0..n).map(|i| got[b * 32 + 2 * i]).collect();
        assert_close(&row, &want, n, f64::EPSILON, &format!("strided transform {b}"));
    }
}

#[test]
fn in_place_c2c_and_the_plan_cache() {
    let Some(stream) = stream_or_skip("in_place_c2c_and_the_plan_cache") else {
        return;
    };
    let context = stream.context();
    let other = Stream::new(context).unwrap();
    let desc = PlanDesc::new(Kind::C2C, Precision::F32, &[8, 8]).unwrap().batch(2);
    let mut cache = PlanCache::new(2).unwrap();
    let first = cache.plan(&stream, &desc).unwrap() as *const Plan;
    let again = cache.plan(&stream, &desc).unwrap() as *const Plan;
    assert_eq!(first, again, "a hit returns the cached plan");
    cache.plan(&other, &desc).unwrap();
    assert_eq!(cache.len(), 2, "another stream, another plan");
    cache.plan(&stream, &desc.batch(3)).unwrap();
    assert_eq!(cache.len(), 2, "bounded: the least recently used went");

    let input: Vec<(f64, f64)> = values(2 * 128, 5).chunks(2).map(|c| (c[0], c[1])).collect();
    let mut data = DeviceBuffer::from_slice(context, &to_complex::<f32>(&input)).unwrap();
    let plan = cache.plan(&stream, &desc).unwrap();
    let mut ws = DeviceBuffer::<u8>::zeroed(context, plan.workspace_size().max(1)).unwrap();
    plan.execute_in_place(&stream, Direction::Forward, &mut data, Some(&mut ws))
        .unwrap();
    plan.execute_in_place(&stream, Direction::Inverse, &mut data, Some(&mut ws))
        .unwrap();
    stream.synchronize().unwrap();
    let got: Vec<(f64, f64)> = from_complex(&data.to_vec().unwrap())
        .iter()
        .map(|(x, y)| (x / 64.0, y / 64.0))
        .collect();
    let seen = from_complex(&to_complex::<f32>(&input));
    assert_close(&got, &seen, 64, f32::EPSILON as f64, "inverse(forward(x)) / n in place");
}

#[test]
fn bad_calls_are_refused_before_cufft_runs() {
    let Some(stream) = stream_or_skip("bad_calls_are_refused_before_cufft_runs") else {
        return;
    };
    let context = stream.context();
    let desc = PlanDesc::new(Kind::R2C, Precision::F32, &[4096]).unwrap().batch(64);
    let mut plan = Plan::new(context, &desc).unwrap();
    let x = DeviceBuffer::<f32>::zeroed(context, 4096 * 64).unwrap();
    let short = DeviceBuffer::<f32>::zeroed(context, 4096).unwrap();
    let mut y = DeviceBuffer::<[f32; 2]>::zeroed(context, 2049 * 64).unwrap();
    let mut ws = DeviceBuffer::<u8>::zeroed(context, plan.workspace_size().max(1)).unwrap();
    let invalid = |result: cuda_libs::Result<()>, what: &str| match result {
        Err(Error::InvalidValue(message)) => message,
        other => panic!("{what}: expected InvalidValue, got {other:?}"),
    };
    let message = invalid(
        plan.execute(&stream, Direction::Forward, &short, &mut y, Some(&mut ws)),
        "short input",
    );
    assert!(message.contains("bytes"), "{message}");
    let message = invalid(
        plan.execute(&stream, Direction::Inverse, &x, &mut y, Some(&mut ws)),
        "direction",
    );
    assert!(message.contains("Forward only"), "{message}");
    if plan.workspace_size() > 0 {
        let message = invalid(
            plan.execute(&stream, Direction::Forward, &x, &mut y, None),
            "no workspace",
        );
        assert!(message.contains("workspace"), "{message}");
        let mut tiny = DeviceBuffer::<u8>::zeroed(context, 1).unwrap();
        let message = invalid(
            plan.execute(
                &stream,
                Direction::Forward,
                &x,
                &mut y,
                Some(&mut tiny as &mut dyn DeviceMemoryMut),
            ),
            "small workspace",
        );
        assert!(message.contains("workspace"), "{message}");
    }
    // A misaligned view: one f32 past the start of a complex buffer.
    let mut unaligned_host = DeviceBuffer::<f32>::zeroed(context, 2 * 2049 * 64 + 1).unwrap();
    let mut view = unaligned_host.slice_mut(1..);
    let message = invalid(
        plan.execute(&stream, Direction::Forward, &x, &mut view, Some(&mut ws)),
        "alignment",
    );
    assert!(message.contains("aligned"), "{message}");
    // C2R takes its input writable, through its own method.
    let mut inverse = Plan::new(context, &PlanDesc::new(Kind::C2R, Precision::F32, &[4096]).unwrap()).unwrap();
    let spectrum = DeviceBuffer::<[f32; 2]>::zeroed(context, 2049).unwrap();
    let mut out = DeviceBuffer::<f32>::zeroed(context, 4096).unwrap();
    let message = invalid(
        inverse.execute(&stream, Direction::Inverse, &spectrum, &mut out, None),
        "c2r",
    );
    assert!(message.contains("execute_c2r"), "{message}");
    // The plan still works after every refusal.
    plan.execute(&stream, Direction::Forward, &x, &mut y, Some(&mut ws))
        .unwrap();
    stream.synchronize().unwrap();
}

#[test]
fn batches_past_2_31_elements_take_the_64_bit_plan() {
    let Some(stream) = stream_or_skip("batches_past_2_31_elements_take_the_64_bit_plan") else {
        return;
    };
    let context = stream.context();
    // 2^15 + 1 transforms of 2^16 values: 2^31 + 2^16 complex f32 (16 GiB a side).
    let (n, batch) = (1usize << 16, (1usize << 15) + 1);
    let desc = PlanDesc::new(Kind::C2C, Precision::F32, &[n]).unwrap().batch(batch);
    let mut plan = Plan::new(context, &desc).unwrap();
    let mut x = DeviceBuffer::<[f32; 2]>::zeroed(context, n * batch).unwrap();
    // A unit impulse at the start of the last transform: its spectrum is all ones.
    x.slice_mut((batch - 1) * n..(batch - 1) * n + 1)
        .copy_from_host(&[[1.0, 0.0]])
        .unwrap();
    let mut y = DeviceBuffer::<[f32; 2]>::alloc(context, n * batch).unwrap();
    let mut ws = workspace(&plan, &stream);
    plan.execute(&stream, Direction::Forward, &x, &mut y, Some(&mut ws))
        .unwrap();
    stream.synchronize().unwrap();
    let last = y.slice((batch - 1) * n..).to_vec().unwrap();
    assert!(
        last.iter().all(|&[re, im]| re == 1.0 && im == 0.0),
        "the last spectrum is all ones"
    );
    let first = y.slice(..n).to_vec().unwrap();
    assert!(
        first.iter().all(|&[re, im]| re == 0.0 && im == 0.0),
        "the first is all zeros"
    );
}
