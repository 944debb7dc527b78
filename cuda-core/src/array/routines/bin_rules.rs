//! NumPy's estimators of a histogram's bin count (`np.histogram(a, bins="auto")` and the other
//! names `bins` takes), from the array's size, extremes, spread, skewness or quartiles, each a
//! device reduction read back.

use std::str::FromStr;

use crate::array::axis::OptionalAxis;
use crate::array::device_array::DeviceArray;
use crate::array::dtype::Element;
use crate::array::promotion::Scalars;
use crate::array::routines::math::ExprOps;
use crate::array::routines::quantile_method::QuantileMethod;
use crate::error::{Error, Result};

/// A rule for the width of a histogram's even bins: NumPy's string `bins` (all but `"stone"`,
/// whose search over bin counts is not provided). Each gives a width `h` from the `n` samples;
/// the bin count is `ceil(range / h)`, or 1 where `h` is 0.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BinRule {
    /// The smaller of `Sturges` and `Fd`, `Fd` raised to at least half of `Sqrt`'s width
    /// (NumPy's default estimator).
    Auto,
    /// Freedman and Diaconis: `2 IQR n^(-1/3)`, from the interquartile range.
    Fd,
    /// Doane: `ptp / (1 + log2(n) + log2(1 + |g1| / sigma_g1))`, Sturges corrected for the
    /// skewness `g1`.
    Doane,
    /// Scott: `(24 sqrt(pi) / n)^(1/3) std`.
    Scott,
    /// Rice: `ptp / (2 n^(1/3))`.
    Rice,
    /// Sturges: `ptp / (log2(n) + 1)`.
    Sturges,
    /// The square root of the size: `ptp / sqrt(n)`.
    Sqrt,
}

impl BinRule {
    /// Every rule, in NumPy's documentation order.
    pub const ALL: [BinRule; 7] = [
        BinRule::Auto,
        BinRule::Fd,
        BinRule::Doane,
        BinRule::Scott,
        BinRule::Rice,
        BinRule::Sturges,
        BinRule::Sqrt,
    ];

    /// NumPy's name of the rule.
    pub fn name(self) -> &'static str {
        match self {
            BinRule::Auto => "auto",
            BinRule::Fd => "fd",
            BinRule::Doane => "doane",
            BinRule::Scott => "scott",
            BinRule::Rice => "rice",
            BinRule::Sturges => "sturges",
            BinRule::Sqrt => "sqrt",
        }
    }
}

impl FromStr for BinRule {
    type Err = Error;

    /// NumPy's name of a rule; `"stone"` is [`Error::NotSupported`], any other name
    /// [`Error::InvalidValue`] (NumPy's `ValueError`).
    fn from_str(name: &str) -> Result<BinRule> {
        if name == "stone" {
            return Err(Error::NotSupported(
                "bins=\"stone\": its search over bin counts is not provided; give a count".into(),
            ));
        }
        BinRule::ALL
            .into_iter()
            .find(|rule| rule.name() == name)
            .ok_or_else(|| {
                Error::InvalidValue(format!(
                    "{name:?} is not a valid estimator for bins; NumPy's are {} and stone",
                    BinRule::ALL.map(BinRule::name).join(", ")
                ))
            })
    }
}

impl<T: Scalars> DeviceArray<T> {
    /// The bin count NumPy's `np.histogram(a, bins=rule.name(), range)` takes: the rule's
    /// width over the samples inside `range` (the array's extremes without one), the count
    /// `ceil(range / width)`, or 1 for no samples or a width of 0 (integer samples: a width of at
    /// least 1). Give it to [`histogram`](Self::histogram) with the same range. The extremes,
    /// the spread and the quartiles are device reductions read back (a few waits); the widths
    /// are computed in `f64` on the host, where NumPy computes some in the array's own float
    /// type, so for `f16` and `f32` samples a count on the edge of an integer may differ by one.
    /// Complex samples are [`Error::NotSupported`], as [`histogram`](Self::histogram)'s.
    pub fn histogram_bin_count(&self, rule: BinRule, range: Option<(f64, f64)>) -> Result<usize> {
        if T::DTYPE.is_complex() {
            return Err(Error::NotSupported(format!(
                "histogram bins by a rule of {} samples (NumPy drops the imaginary parts)",
                T::DTYPE
            )));
        }
        let (lower, upper) = self.histogram_range(range)?;
        if !lower.is_finite() || !upper.is_finite() {
            return Err(Error::InvalidValue(format!(
                "histogram: the range [{lower}, {upper}] is not finite"
            )));
        }
        let flat = self.ravel()?;
        let samples = match range {
            Some(_) => {
                let inside = ExprOps::ge(&flat, lower).logical_and(ExprOps::le(&flat, upper));
                flat.extract(inside)?
            }
            None => flat,
        };
        if samples.is_empty() {
            return Ok(1);
        }
        let width = samples.bin_width(rule)?;
        if width == 0.0 || width.is_nan() {
            return Ok(1);
        }
        let width = match T::DTYPE.is_float() {
            false => width.max(1.0),
            true => width,
        };
        Ok(((upper - lower) / width).ceil() as usize)
    }

    /// The width `rule` gives this 1-D array of samples (at least one).
    fn bin_width(&self, rule: BinRule) -> Result<f64> {
        let n = self.len() as f64;
        // The extremes are read back once a call, even where `Auto` takes two widths from them.
        let ptp = || -> Result<f64> { Ok(self.max()?.item()?.to_f64() - self.min()?.item()?.to_f64()) };
        let sqrt = |ptp: f64| ptp / n.sqrt();
        let sturges = |ptp: f64| ptp / (n.log2() + 1.0);
        let fd = || -> Result<f64> {
            let quartiles = self
                .percentiles(&[75.0, 25.0], OptionalAxis::from(None), QuantileMethod::Linear)?
                .to_vec()?;
            Ok(2.0 * (quartiles[0].to_f64() - quartiles[1].to_f64()) * n.powf(-1.0 / 3.0))
        };
        Ok(match rule {
            BinRule::Sqrt => sqrt(ptp()?),
            BinRule::Sturges => sturges(ptp()?),
            BinRule::Rice => ptp()? / (2.0 * n.powf(1.0 / 3.0)),
            BinRule::Scott => (24.0 * std::f64::consts::PI.sqrt() / n).powf(1.0 / 3.0) * self.std(0)?.item()?.to_f64(),
            BinRule::Fd => fd()?,
            BinRule::Auto => {
                let ptp = ptp()?;
                fd()?.max(sqrt(ptp) / 2.0).min(sturges(ptp))
            }
            BinRule::Doane => {
                if self.len() <= 2 {
                    return Ok(0.0);
                }
                let sigma = self.std(0)?.item()?.to_f64();
                if sigma <= 0.0 {
                    return Ok(0.0);
                }
                let sigma_g1 = (6.0 * (n - 2.0) / ((n + 1.0) * (n + 3.0))).sqrt();
                let mean = self.mean()?.item()?.to_f64();
                let g1: f64 = ((ExprOps::astype::<f64>(self) - mean) / sigma).powi(3).mean()?.item()?;
                ptp()? / (1.0 + n.log2() + (1.0 + g1.abs() / sigma_g1).log2())
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_parse_as_numpy_spells_them() {
        for rule in BinRule::ALL {
            assert_eq!(rule.name().parse::<BinRule>().unwrap(), rule);
        }
        assert!(matches!("stone".parse::<BinRule>(), Err(Error::NotSupported(_))));
        assert!(matches!(
            "blocks".parse::<BinRule>(),
            Err(Error::InvalidValue(message)) if message.contains("sturges")
        ));
    }
}
