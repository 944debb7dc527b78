//! Random arrays on a GPU: values equal the host's Philox4x32-10 reference, mean, variance
//! and a chi-square goodness-of-fit statistic on 2^24 draws for `rand`, `randn` and `randint`,
//! seeds and successive calls that differ, reproducibility, and typed errors. Without a driver
//! or device each test prints `skipped: <why>` and passes, unless `CUDA_REQUIRE_GPU=1`.

mod common;

use cuda_core::random::{self, philox4x32_10, Generator};
use cuda_core::Error;
use half::{bf16, f16};

const N: usize = 1 << 24;

/// The 32-bit word the generator uses for element `i` of a 4-per-block call.
fn word(seed: u64, offset: u64, i: usize) -> u32 {
    let block = offset + (i / 4) as u64;
    philox4x32_10(
        [block as u32, (block >> 32) as u32, 0, 0],
        [seed as u32, (seed >> 32) as u32],
    )[i % 4]
}

fn mean_and_variance(values: &[f64]) -> (f64, f64) {
    let mean = values.iter().sum::<f64>() / values.len() as f64;
    let variance = values.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / values.len() as f64;
    (mean, variance)
}

/// Pearson's statistic of `counts` against `expected` probabilities, and its bound: the
/// degrees of freedom plus six standard deviations (a true fit exceeds it about once in 10^8).
fn chi_square(counts: &[u64], expected: &[f64], total: usize) -> (f64, f64) {
    let statistic = counts
        .iter()
        .zip(expected)
        .map(|(&c, &p)| {
            let e = p * total as f64;
            (c as f64 - e) * (c as f64 - e) / e
        })
        .sum();
    let df = (counts.len() - 1) as f64;
    (statistic, df + 6.0 * (2.0 * df).sqrt())
}

/// The standard normal distribution function (Abramowitz and Stegun 7.1.26, error < 1.5e-7).
fn normal_cdf(x: f64) -> f64 {
    let z = x.abs() / std::f64::consts::SQRT_2;
    let t = 1.0 / (1.0 + 0.3275911 * z);
    let poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))));
    let erf = 1.0 - poly * (-z * z).exp();
    0.5 * (1.0 + if x < 0.0 { -erf } else { erf })
}

#[test]
fn rand_matches_the_host_generator_and_is_uniform() {
    let Some(device) = common::device_or_skip("rand_matches_the_host_generator_and_is_uniform") else {
        return;
    };
    let stream = device.create_stream().unwrap();
    let seed = 0x1234_5678_9abc_def0;
    let values = random::rand::<f32>(&stream, N + 3, seed).unwrap().to_vec().unwrap();
    for i in (0..N + 3).step_by(4099).chain(N - 2..N + 3) {
        let expected = f32::from_bits(0x3f80_0000 | (word(seed, 0, i) >> 9)) - 1.0;
        assert_eq!(values[i], expected, "element {i}");
    }
    let as_f64: Vec<f64> = values.iter().map(|&v| f64::from(v)).collect();
    assert!(as_f64.iter().all(|&v| (0.0..1.0).contains(&v)));
    let (mean, variance) = mean_and_variance(&as_f64);
    assert!((mean - 0.5).abs() < 5.0 * (1.0 / 12.0 / N as f64).sqrt(), "mean {mean}");
    assert!((variance - 1.0 / 12.0).abs() < 1e-3 / 12.0 * 5.0, "variance {variance}");
    let mut counts = vec![0u64; 100];
    for &v in &as_f64 {
        counts[(v * 100.0) as usize] += 1;
    }
    let (statistic, bound) = chi_square(&counts, &[0.01; 100], as_f64.len());
    assert!(statistic < bound, "chi-square {statistic} over {bound}");
    println!("rand f32: mean {mean:.6}, variance {variance:.6}, chi-square {statistic:.1} (bound {bound:.1})");
    // The same seed gives the same values; another seed others.
    let again = random::rand::<f32>(&stream, 1000, seed).unwrap().to_vec().unwrap();
    assert_eq!(again, values[..1000]);
    let other = random::rand::<f32>(&stream, 1000, seed + 1).unwrap().to_vec().unwrap();
    assert!(other.iter().zip(&again).filter(|(a, b)| a == b).count() < 10);
}

#[test]
fn randn_is_standard_normal() {
    let Some(device) = common::device_or_skip("randn_is_standard_normal") else {
        return;
    };
    let stream = device.create_stream().unwrap();
    for double in [false, true] {
        let values: Vec<f64> = match double {
            false => random::randn::<f32>(&stream, N, 99)
                .unwrap()
                .to_vec()
                .unwrap()
                .iter()
                .map(|&v| f64::from(v))
                .collect(),
            true => random::randn::<f64>(&stream, N, 99).unwrap().to_vec().unwrap(),
        };
        let (mean, variance) = mean_and_variance(&values);
        assert!(mean.abs() < 5.0 / (N as f64).sqrt(), "mean {mean}");
        assert!(
            (variance - 1.0).abs() < 5.0 * (2.0 / N as f64).sqrt(),
            "variance {variance}"
        );
        // 60 bins over [-3, 3) and the two tails.
        let edges: Vec<f64> = (0..=60).map(|k| -3.0 + 0.1 * k as f64).collect();
        let mut counts = vec![0u64; 62];
        for &v in &values {
            let bin = match v {
                v if v < -3.0 => 0,
                v if v >= 3.0 => 61,
                v => 1 + (((v + 3.0) / 0.1) as usize).min(59),
            };
            counts[bin] += 1;
        }
        let mut expected = vec![normal_cdf(-3.0)];
        expected.extend(edges.windows(2).map(|w| normal_cdf(w[1]) - normal_cdf(w[0])));
        expected.push(1.0 - normal_cdf(3.0));
        let (statistic, bound) = chi_square(&counts, &expected, values.len());
        assert!(statistic < bound, "chi-square {statistic} over {bound} (f64: {double})");
        println!("randn (f64: {double}): mean {mean:.6}, variance {variance:.6}, chi-square {statistic:.1} (bound {bound:.1})");
    }
}

#[test]
fn randint_uniform_and_half_types_stay_in_range() {
    let Some(device) = common::device_or_skip("randint_uniform_and_half_types_stay_in_range") else {
        return;
    };
    let stream = device.create_stream().unwrap();
    let dice = random::randint::<i32>(&stream, N, 1, 7, 5).unwrap().to_vec().unwrap();
    let mut counts = vec![0u64; 6];
    for &d in &dice {
        assert!((1..7).contains(&d), "{d}");
        counts[(d - 1) as usize] += 1;
    }
    let (statistic, bound) = chi_square(&counts, &[1.0 / 6.0; 6], N);
    assert!(statistic < bound, "randint chi-square {statistic} over {bound}");
    let bytes = random::randint::<u8>(&stream, 10_000, 250, 256, 5)
        .unwrap()
        .to_vec()
        .unwrap();
    assert!(bytes.iter().all(|&b| b >= 250), "u8 in [250, 256)");
    let wide = random::randint::<i64>(&stream, 10_000, -(1 << 62), 1 << 62, 5)
        .unwrap()
        .to_vec()
        .unwrap();
    assert!(wide.iter().any(|&v| v < -(1 << 60)) && wide.iter().any(|&v| v > 1 << 60));
    let u = random::uniform::<f64>(&stream, 100_000, -2.0, 3.0, 8)
        .unwrap()
        .to_vec()
        .unwrap();
    assert!(u.iter().all(|&v| (-2.0..3.0).contains(&v)));
    let (mean, _) = mean_and_variance(&u);
    assert!((mean - 0.5).abs() < 0.05, "uniform mean {mean}");
    let h = random::rand::<f16>(&stream, 100_000, 3).unwrap().to_vec().unwrap();
    let b = random::rand::<bf16>(&stream, 100_000, 3).unwrap().to_vec().unwrap();
    for values in [
        h.iter().map(|v| v.to_f64()).collect::<Vec<_>>(),
        b.iter().map(|v| v.to_f64()).collect(),
    ] {
        assert!(
            values.iter().all(|&v| (0.0..1.0).contains(&v)),
            "half types never round up to 1"
        );
        let (mean, _) = mean_and_variance(&values);
        assert!((mean - 0.5).abs() < 0.01, "mean {mean}");
    }
}

#[test]
fn generators_advance_and_bad_requests_are_errors() {
    let Some(device) = common::device_or_skip("generators_advance_and_bad_requests_are_errors") else {
        return;
    };
    let stream = device.create_stream().unwrap();
    let mut generator = Generator::new(11);
    let first = generator.rand::<f32>(&stream, 10).unwrap().to_vec().unwrap();
    assert_eq!(generator.offset(), 3, "ten f32 values use three blocks");
    let second = generator.rand::<f32>(&stream, 10).unwrap().to_vec().unwrap();
    assert_ne!(first, second);
    let expected = f32::from_bits(0x3f80_0000 | (word(11, 3, 0) >> 9)) - 1.0;
    assert_eq!(second[0], expected, "the second call starts at block 3");
    assert!(generator.rand::<f32>(&stream, [0, 4]).unwrap().is_empty());
    for error in [
        generator.rand::<i32>(&stream, 4).unwrap_err(),
        generator.randint::<f32>(&stream, 4, 0, 3).unwrap_err(),
        generator.randint::<i32>(&stream, 4, 5, 5).unwrap_err(),
        generator.randint::<u8>(&stream, 4, 0, 300).unwrap_err(),
        generator.uniform::<f32>(&stream, 4, 1.0, f64::INFINITY).unwrap_err(),
        generator.normal::<f64>(&stream, 4, 0.0, -1.0).unwrap_err(),
    ] {
        assert!(matches!(error, Error::InvalidValue(_)), "{error}");
    }
}
