//! Histogram equalisation of a synthetic low-contrast 8-bit image, ported from this NumPy
//! program, then the result examined with the counting and set routines:
//!
//! ```python
//! import numpy as np
//!
//! hist = np.bincount(img.ravel(), minlength=256)            # pixels per grey level
//! cdf = hist.cumsum()
//! first = np.searchsorted(cdf, 0, side="right")               # the darkest level present
//! cdf_min, total = cdf[first], cdf[-1]
//! lut = np.round((cdf - cdf_min) * 255.0 / (total - cdf_min)).astype(np.uint8)
//! out = lut[img]                                               # gather through the table
//!
//! sums = np.bincount(img.ravel(), weights=out.ravel(), minlength=256)  # = lut * hist
//! bands = np.histogram(out, bins=[0, 64, 128, 192, 255])[0]
//! density = np.histogram(out, bins=8, range=(0, 256), density=True)[0]
//! joint = np.histogram2d(img.ravel(), out.ravel(), bins=16, range=[(0, 256), (0, 256)])[0]
//! kept, new = np.intersect1d(img, out), np.setdiff1d(out, img)
//! ```
//!
//! Everything runs on the device: `bincount`, `cumsum`, `searchsorted`, one fused kernel for the
//! table, `take`, then `bincount` with weights, `histogram` with edges and with `density`,
//! `histogram2d`, `intersect1d` and `setdiff1d`. The same steps run on the host (NumPy's
//! rounding: half to even); every result must be equal, else the example exits non-zero.
//!
//! `cargo run --release --example histogram_equalisation`

use std::process::ExitCode;

use cuda_core::algorithms::search::Side;
use cuda_core::{Device, DeviceArray, ExprOps, IndexMode, Slice};

/// The image's height and width.
const HEIGHT: usize = 192;
const WIDTH: usize = 256;
/// Grey levels.
const LEVELS: usize = 256;

/// A dim diagonal gradient with noise: grey levels between about 72 and 140 only.
fn image() -> Vec<u8> {
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    (0..HEIGHT * WIDTH)
        .map(|i| {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            let (y, x) = (i / WIDTH, i % WIDTH);
            let noise = (state >> 60) as usize; // 0..16
            (72 + (x + y) / 9 + noise) as u8
        })
        .collect()
}

/// The equalisation table on the host, as the NumPy program computes it.
fn host_table(img: &[u8]) -> (Vec<i64>, Vec<u8>) {
    let mut hist = vec![0i64; LEVELS];
    img.iter().for_each(|&v| hist[usize::from(v)] += 1);
    let cdf: Vec<i64> = hist
        .iter()
        .scan(0i64, |sum, &h| {
            *sum += h;
            Some(*sum)
        })
        .collect();
    let cdf_min = *cdf.iter().find(|&&c| c > 0).unwrap_or(&0);
    let total = cdf[LEVELS - 1];
    let lut = cdf
        .iter()
        .map(|&c| (((c - cdf_min) as f64 * 255.0) / (total - cdf_min) as f64).round_ties_even() as u8)
        .collect();
    (hist, lut)
}

/// The sorted distinct levels of `values`.
fn levels(values: &[u8]) -> Vec<u8> {
    let mut seen = [false; LEVELS];
    values.iter().for_each(|&v| seen[usize::from(v)] = true);
    (0..LEVELS).filter(|&l| seen[l]).map(|l| l as u8).collect()
}

/// `Err` naming `what` unless `got == want`.
fn same<T: PartialEq + std::fmt::Debug>(what: &str, got: &T, want: &T) -> Result<(), Box<dyn std::error::Error>> {
    match got == want {
        true => Ok(()),
        false => Err(format!("{what}: the device gives {got:?}, the host {want:?}").into()),
    }
}

fn main() -> ExitCode {
    examples::run("histogram_equalisation", || {
        let stream = Device::new(0)?.create_stream()?;
        let host = image();
        let img = DeviceArray::from_slice(&stream, &host)?.reshape([HEIGHT, WIDTH])?;
        let flat = img.ravel()?;

        // The table: counts, their running sum, the first level present, one fused kernel.
        let hist = flat.bincount(LEVELS)?;
        let cdf = hist.cumsum(None)?;
        let zero = DeviceArray::from_slice(&stream, &[0i64])?;
        let first = cdf.searchsorted(&zero, Side::Right, None)?;
        let cdf_min = cdf.take(&first, None, IndexMode::Raise)?;
        let total = cdf.slice(&[Slice::new(LEVELS - 1, None)])?;
        let lut = (((&cdf - &cdf_min) * 255.0) / (&total - &cdf_min))
            .round(0)
            .astype::<u8>()
            .eval()?;
        let out = lut.take(&img.astype::<i64>().eval()?, None, IndexMode::Raise)?;

        // What the equalised image holds.
        let sums = flat.bincount_weighted(&out.ravel()?, LEVELS)?;
        let band_edges = DeviceArray::from_slice(&stream, &[0u8, 64, 128, 192, 255])?;
        let bands = out.histogram_with_edges(&band_edges)?;
        let (density, _) = out.histogram_density(8, Some((0.0, 256.0)))?;
        let (joint, _, _) = flat.histogram2d(&out.ravel()?, (16, 16), Some([(0.0, 256.0), (0.0, 256.0)]))?;
        let kept = img.intersect1d(&out)?;
        let new = out.setdiff1d(&img)?;

        let input_levels = levels(&host);
        println!(
            "input: {HEIGHT}x{WIDTH} pixels, {} grey levels in {}..={}",
            input_levels.len(),
            input_levels[0],
            input_levels[input_levels.len() - 1]
        );
        let got_out = out.to_vec()?;
        let output_levels = levels(&got_out);
        println!(
            "equalised: {} grey levels in {}..={}",
            output_levels.len(),
            output_levels[0],
            output_levels[output_levels.len() - 1]
        );
        println!(
            "pixels per band [0,64) [64,128) [128,192) [192,255]: {:?}",
            bands.to_vec()?
        );
        let density = density.to_vec()?;
        println!("density of 8 bins over [0, 256): {density:.6?}");
        println!("levels kept from the input: {}; new levels: {}", kept.len(), new.len());

        // The same on the host.
        let (host_hist, host_lut) = host_table(&host);
        same("histogram", &hist.to_vec()?, &host_hist)?;
        same("table", &lut.to_vec()?, &host_lut)?;
        let host_out: Vec<u8> = host.iter().map(|&v| host_lut[usize::from(v)]).collect();
        same("equalised image", &got_out, &host_out)?;
        let host_sums: Vec<f64> = (0..LEVELS)
            .map(|l| f64::from(host_lut[l]) * host_hist[l] as f64)
            .collect();
        same("weighted bincount", &sums.to_vec()?, &host_sums)?;
        let mut host_bands = vec![0i64; 4];
        for &v in &host_out {
            host_bands[(usize::from(v) / 64).min(3)] += 1;
        }
        same("bands", &bands.to_vec()?, &host_bands)?;
        let mut host_density = [0i64; 8];
        host_out.iter().for_each(|&v| host_density[usize::from(v) / 32] += 1);
        let pixels = host_out.len() as f64;
        let host_density: Vec<f64> = host_density.iter().map(|&c| c as f64 / 32.0 / pixels).collect();
        same("density", &density, &host_density)?;
        let mut host_joint = vec![0.0f64; 16 * 16];
        for (&a, &b) in host.iter().zip(&host_out) {
            host_joint[usize::from(a) / 16 * 16 + usize::from(b) / 16] += 1.0;
        }
        same("joint histogram", &joint.to_vec()?, &host_joint)?;
        let host_kept: Vec<u8> = input_levels
            .iter()
            .copied()
            .filter(|l| output_levels.contains(l))
            .collect();
        let host_new: Vec<u8> = output_levels
            .iter()
            .copied()
            .filter(|l| !input_levels.contains(l))
            .collect();
        same("intersect1d", &kept.to_vec()?, &host_kept)?;
        same("setdiff1d", &new.to_vec()?, &host_new)?;
        if output_levels.first() != Some(&0) || output_levels.last() != Some(&255) {
            return Err(format!("the equalised levels do not span 0..=255: {output_levels:?}").into());
        }
        println!("check: every result equals the host's");
        Ok(())
    })
}
