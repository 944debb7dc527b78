//! The helpers of NumPy's fft module: the sample frequencies of a transform's values
//! (`fftfreq`, `rfftfreq`) and the shifts that move the zero frequency to the centre and back
//! (`fftshift`, `ifftshift`).

use cuda_driver::Stream;

use crate::array::device_array::DeviceArray;
use crate::array::dtype::Element;
use crate::array::Axes;
use crate::error::{Error, Result};

fn window(n: i64, d: f64) -> Result<(usize, f64)> {
    if n < 1 {
        return Err(Error::InvalidValue(format!(
            "a frequency grid of {n} values: n must be at least 1"
        )));
    }
    if d == 0.0 || !d.is_finite() {
        return Err(Error::InvalidValue(format!(
            "a sample spacing of {d}: d must be finite and not 0"
        )));
    }
    let n = usize::try_from(n).map_err(|_| Error::InvalidValue(format!("{n} values overflow")))?;
    Ok((n, 1.0 / (n as f64 * d)))
}

/// The frequencies, in cycles per unit of `d` (the sample spacing), of the `n` values of
/// [`fft`](super::fft) (NumPy's `fft.fftfreq`): `[0, 1, ..., (n - 1) / 2, -(n / 2), ..., -1] /
/// (d n)`, as `f64`. `n` below 1 and a `d` of 0 (or not finite) are [`Error::InvalidValue`].
pub fn fftfreq(stream: &Stream, n: i64, d: f64) -> Result<DeviceArray<f64>> {
    DeviceArray::from_slice(stream, &fftfreq_values(n, d)?)
}

/// The frequencies of the `n / 2 + 1` values of [`rfft`](super::rfft) of `n` points (NumPy's
/// `fft.rfftfreq`): `[0, 1, ..., n / 2] / (d n)`, as `f64`.
pub fn rfftfreq(stream: &Stream, n: i64, d: f64) -> Result<DeviceArray<f64>> {
    DeviceArray::from_slice(stream, &rfftfreq_values(n, d)?)
}

fn fftfreq_values(n: i64, d: f64) -> Result<Vec<f64>> {
    let (count, scale) = window(n, d)?;
    let positive = (count - 1) / 2 + 1;
    Ok((0..count)
        .map(|k| match k < positive {
            true => k as f64 * scale,
            false => -((count - k) as f64) * scale,
        })
        .collect())
}

fn rfftfreq_values(n: i64, d: f64) -> Result<Vec<f64>> {
    let (count, scale) = window(n, d)?;
    Ok((0..count / 2 + 1).map(|k| k as f64 * scale).collect())
}

/// `x` with the zero frequency moved to the centre of each of `axes` (NumPy's `fft.fftshift`:
/// a roll by `n / 2`; [`Axes::ALL`] is every axis). A new compact array.
pub fn fftshift<T: Element>(x: &DeviceArray<T>, axes: impl Into<Axes>) -> Result<DeviceArray<T>> {
    shift(x, &axes.into(), false)
}

/// The inverse of [`fftshift`] (NumPy's `fft.ifftshift`: a roll by `-(n / 2)`), which differs
/// from it on odd extents.
pub fn ifftshift<T: Element>(x: &DeviceArray<T>, axes: impl Into<Axes>) -> Result<DeviceArray<T>> {
    shift(x, &axes.into(), true)
}

fn shift<T: Element>(x: &DeviceArray<T>, axes: &Axes, inverse: bool) -> Result<DeviceArray<T>> {
    let axes = axes.indices(x.ndim())?;
    let mut out = x.try_clone()?;
    for axis in axes {
        let half = (x.shape()[axis] / 2) as i64;
        out = out.roll(if inverse { -half } else { half }, axis)?;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frequencies_are_numpys() {
        // numpy.fft.fftfreq(5, 0.1), numpy.fft.fftfreq(4), numpy.fft.rfftfreq(5, 0.5)
        let close = |a: Vec<f64>, b: &[f64]| {
            assert_eq!(a.len(), b.len());
            for (x, y) in a.iter().zip(b) {
                assert!((x - y).abs() < 1e-12, "{a:?} vs {b:?}");
            }
        };
        close(fftfreq_values(5, 0.1).unwrap(), &[0.0, 2.0, 4.0, -4.0, -2.0]);
        close(fftfreq_values(4, 1.0).unwrap(), &[0.0, 0.25, -0.5, -0.25]);
        close(fftfreq_values(1, 1.0).unwrap(), &[0.0]);
        close(rfftfreq_values(5, 0.5).unwrap(), &[0.0, 0.4, 0.8]);
        close(rfftfreq_values(4, 1.0).unwrap(), &[0.0, 0.25, 0.5]);
        assert!(matches!(fftfreq_values(0, 1.0), Err(Error::InvalidValue(_))));
        assert!(matches!(rfftfreq_values(-2, 1.0), Err(Error::InvalidValue(_))));
        assert!(matches!(fftfreq_values(4, 0.0), Err(Error::InvalidValue(_))));
    }
}
