//! A spectrogram: the power spectrum of each windowed frame of a signal, ported from this NumPy
//! program:
//!
//! ```python
//! import numpy as np
//!
//! frames = signal.reshape(FRAMES, LEN)               # consecutive frames of LEN samples
//! window = np.hanning(LEN + 1)[:-1]                  # periodic Hann window
//! spectrum = np.fft.rfft(frames * window, axis=-1)   # LEN // 2 + 1 bins per frame
//! power = np.abs(spectrum) ** 2
//! peak = power.argmax(axis=-1)                       # the strongest bin of each frame
//! ```
//!
//! The signal is a tone whose frequency steps up every frame, plus a weaker fixed tone. The
//! windowed frames go into the transform as an expression, `&frames * &window`: one fused kernel
//! writes the product and cuFFT transforms it, which measured faster than cuFFT's load callback
//! (asked for with `fft::set_load_callbacks(true)`, where cuFFT takes LTO callbacks: then no
//! windowed copy of the signal is written). The example prints which path ran, the relative
//! error against the direct computation (the windowed frames evaluated into an array, then
//! transformed) and against a host DFT in f64 of a few frames, and checks that every frame's
//! peak is its tone's bin; it exits non-zero otherwise.
//!
//! `cargo run --release --example spectrogram`

use std::f64::consts::PI;
use std::process::ExitCode;

use cuda_core::fft::{self, FftNorm};
use cuda_core::{Complex, Device, DeviceArray, ExprOps};

/// Frames, and samples per frame.
const FRAMES: usize = 256;
const LEN: usize = 1024;
/// The bin of frame `f`'s stepping tone, and of the fixed one.
fn tone_bin(frame: usize) -> usize {
    16 + frame
}
const FIXED_BIN: usize = 400;

fn main() -> ExitCode {
    match run() {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(error) => {
            eprintln!("spectrogram: {error}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> cuda_core::Result<bool> {
    let stream = Device::new(0)?.create_stream()?;
    let mut signal = Vec::with_capacity(FRAMES * LEN);
    for frame in 0..FRAMES {
        for i in 0..LEN {
            let t = i as f64 / LEN as f64;
            let stepping = (2.0 * PI * tone_bin(frame) as f64 * t).sin();
            let fixed = 0.25 * (2.0 * PI * FIXED_BIN as f64 * t).cos();
            signal.push((stepping + fixed) as f32);
        }
    }
    let hann: Vec<f32> = (0..LEN)
        .map(|i| (0.5 - 0.5 * (2.0 * PI * i as f64 / LEN as f64).cos()) as f32)
        .collect();
    let frames = DeviceArray::from_slice(&stream, &signal)?.reshape([FRAMES, LEN])?;
    let window = DeviceArray::from_slice(&stream, &hann)?;

    let before = fft::plan_cache_info();
    let spectrum = fft::rfft(&(&frames * &window), None, -1, FftNorm::Backward)?;
    let info = fft::plan_cache_info();
    match info.load_callback_transforms > before.load_callback_transforms {
        true => println!("rfft(frames * window) ran with the product as cuFFT's load callback"),
        false => println!(
            "rfft(frames * window) took the fallback: {}",
            info.last_fallback.as_deref().unwrap_or("?")
        ),
    }
    let power = (&spectrum).abs().powi(2).eval()?;
    let peaks = power.argmax_axis(-1, false)?.to_vec()?;

    // The direct computation: the windowed frames as an array, then the transform.
    let direct = fft::rfft(&(&frames * &window).eval()?, None, -1, FftNorm::Backward)?;
    let (got, want) = (spectrum.to_vec()?, direct.to_vec()?);
    let against_direct = relative_error(&got, want.iter().map(|z| Complex::new(z.re as f64, z.im as f64)));
    // A host DFT in f64 of a few frames.
    let bins = LEN / 2 + 1;
    let mut host = Vec::new();
    let checked = [0, 1, FRAMES / 2, FRAMES - 1];
    for &frame in &checked {
        for k in 0..bins {
            let mut sum = Complex::new(0.0f64, 0.0);
            for i in 0..LEN {
                let x = signal[frame * LEN + i] as f64 * hann[i] as f64;
                sum += Complex::from_polar(x, -2.0 * PI * (k * i % LEN) as f64 / LEN as f64);
            }
            host.push(sum);
        }
    }
    let sampled: Vec<Complex<f32>> = checked
        .iter()
        .flat_map(|&frame| got[frame * bins..(frame + 1) * bins].iter().copied())
        .collect();
    let against_host = relative_error(&sampled, host.into_iter());
    let bound = 10.0 * ((LEN as f64).log2() + 1.0) * f32::EPSILON as f64;
    println!(
        "{FRAMES} frames of {LEN}: relative L2 error {against_direct:.2e} against the direct computation, \
         {against_host:.2e} against a host DFT (bound {bound:.2e})"
    );
    let wrong: Vec<usize> = (0..FRAMES).filter(|&f| peaks[f] as usize != tone_bin(f)).collect();
    println!(
        "peak bins: frame 0 -> {}, frame {} -> {} (tones at {} and {})",
        peaks[0],
        FRAMES - 1,
        peaks[FRAMES - 1],
        tone_bin(0),
        tone_bin(FRAMES - 1)
    );
    let ok = against_direct <= bound && against_host <= bound && wrong.is_empty();
    if !ok {
        eprintln!("spectrogram: errors over {bound:e}, or frames {wrong:?} peak away from their tone");
    }
    Ok(ok)
}

/// `|got - want| / |want|` in the L2 norm.
fn relative_error(got: &[Complex<f32>], want: impl Iterator<Item = Complex<f64>>) -> f64 {
    let (mut error, mut size) = (0.0, 0.0);
    for (g, w) in got.iter().zip(want) {
        error += (Complex::new(g.re as f64, g.im as f64) - w).norm_sqr();
        size += w.norm_sqr();
    }
    (error / size).sqrt()
}
