//! NumPy's quantile methods: [`QuantileMethod`], its names, and the device code that applies
//! one (which sorted numbers a quantile reads and how it weighs them, `quantile_plan.cuh`) with
//! NumPy's rounded arithmetic, shared by the sorted read-out (`statistics`) and radix select
//! (`quantile_select`).

use crate::array::dtype::DType;
use crate::error::{Error, Result};

/// The ranks and weight each of NumPy's quantile methods reads (device code, before the
/// read-out and the radix select).
pub(super) const QUANTILE_PLAN: &str = include_str!("quantile_plan.cuh");

/// How a quantile between two sorted elements is chosen: NumPy's `method`, each of its
/// thirteen. The continuous ones of Hyndman and Fan take the virtual index
/// `n q + (alpha + q (1 - alpha - beta)) - 1` of the `n` sorted numbers and interpolate between
/// its neighbours (the first number below 0, the last from `n - 1` on), as NumPy does.
/// `"hazen".parse::<QuantileMethod>()` takes NumPy's spelling.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum QuantileMethod {
    /// Linear interpolation between the two neighbours of the virtual index `q * (n - 1)`
    /// (NumPy's default; alpha = beta = 1).
    #[default]
    Linear,
    /// The lower neighbour.
    Lower,
    /// The higher neighbour.
    Higher,
    /// The nearer neighbour (ties to the even index, as NumPy rounds).
    Nearest,
    /// The mean of the two neighbours (at an integral index, the element itself; beside an
    /// infinity NumPy's interpolation there gives NaN, and so does this).
    Midpoint,
    /// The inverse of the empirical distribution function: the number at the index `n q - 1`
    /// rounded up, or kept where it is integral.
    InvertedCdf,
    /// As `InvertedCdf`, but the mean of the two neighbours where the index is integral.
    AveragedInvertedCdf,
    /// The number nearest the index `n q - 1.5`, an odd index where it lies halfway.
    ClosestObservation,
    /// Interpolation with alpha = 0, beta = 1: the linear interpolation of the empirical
    /// distribution function.
    InterpolatedInvertedCdf,
    /// Interpolation with alpha = beta = 1/2 (Hazen).
    Hazen,
    /// Interpolation with alpha = beta = 0 (Weibull).
    Weibull,
    /// Interpolation with alpha = beta = 1/3: medians unbiased whatever the distribution.
    MedianUnbiased,
    /// Interpolation with alpha = beta = 3/8: unbiased for normally distributed numbers.
    NormalUnbiased,
}

impl QuantileMethod {
    /// Every method, in NumPy's documentation order of the names `FromStr` takes.
    pub const ALL: [QuantileMethod; 13] = [
        QuantileMethod::InvertedCdf,
        QuantileMethod::AveragedInvertedCdf,
        QuantileMethod::ClosestObservation,
        QuantileMethod::InterpolatedInvertedCdf,
        QuantileMethod::Hazen,
        QuantileMethod::Weibull,
        QuantileMethod::Linear,
        QuantileMethod::MedianUnbiased,
        QuantileMethod::NormalUnbiased,
        QuantileMethod::Lower,
        QuantileMethod::Higher,
        QuantileMethod::Midpoint,
        QuantileMethod::Nearest,
    ];

    /// NumPy's name of the method.
    pub fn name(self) -> &'static str {
        match self {
            QuantileMethod::Linear => "linear",
            QuantileMethod::Lower => "lower",
            QuantileMethod::Higher => "higher",
            QuantileMethod::Nearest => "nearest",
            QuantileMethod::Midpoint => "midpoint",
            QuantileMethod::InvertedCdf => "inverted_cdf",
            QuantileMethod::AveragedInvertedCdf => "averaged_inverted_cdf",
            QuantileMethod::ClosestObservation => "closest_observation",
            QuantileMethod::InterpolatedInvertedCdf => "interpolated_inverted_cdf",
            QuantileMethod::Hazen => "hazen",
            QuantileMethod::Weibull => "weibull",
            QuantileMethod::MedianUnbiased => "median_unbiased",
            QuantileMethod::NormalUnbiased => "normal_unbiased",
        }
    }

    /// The method's number in the device code (`plan_quantile` in `quantile_plan.cuh`).
    pub(super) fn code(self) -> i32 {
        match self {
            QuantileMethod::Linear => 0,
            QuantileMethod::Lower => 1,
            QuantileMethod::Higher => 2,
            QuantileMethod::Nearest => 3,
            QuantileMethod::Midpoint => 4,
            QuantileMethod::InvertedCdf => 5,
            QuantileMethod::AveragedInvertedCdf => 6,
            QuantileMethod::ClosestObservation => 7,
            QuantileMethod::InterpolatedInvertedCdf => 8,
            QuantileMethod::Hazen => 9,
            QuantileMethod::Weibull => 10,
            QuantileMethod::MedianUnbiased => 11,
            QuantileMethod::NormalUnbiased => 12,
        }
    }
}

impl std::str::FromStr for QuantileMethod {
    type Err = Error;

    /// NumPy's name of a method (`"linear"`, `"hazen"`, ...); any other is
    /// [`Error::InvalidValue`], as NumPy raises `ValueError`.
    fn from_str(name: &str) -> Result<QuantileMethod> {
        QuantileMethod::ALL
            .into_iter()
            .find(|method| method.name() == name)
            .ok_or_else(|| {
                Error::InvalidValue(format!(
                    "quantile: {name:?} is not a method; NumPy's are {}",
                    QuantileMethod::ALL.map(QuantileMethod::name).join(", ")
                ))
            })
    }
}

/// The type a quantile of `input` is computed in and its rounded operations (never contracted
/// into a fused multiply-add, as NumPy computes): multiply, add, subtract.
pub(super) fn rounded_arithmetic(input: DType) -> (&'static str, &'static str, &'static str, &'static str) {
    match input {
        DType::F16 | DType::BF16 | DType::F32 => ("float", "__fmul_rn", "__fadd_rn", "__fsub_rn"),
        _ => ("double", "__dmul_rn", "__dadd_rn", "__dsub_rn"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn methods_parse_as_numpy_spells_them() {
        for method in QuantileMethod::ALL {
            assert_eq!(method.name().parse::<QuantileMethod>().unwrap(), method);
        }
        let codes: std::collections::BTreeSet<i32> = QuantileMethod::ALL.iter().map(|m| m.code()).collect();
        assert_eq!(codes, (0..13).collect());
        assert_eq!("hazen".parse::<QuantileMethod>().unwrap(), QuantileMethod::Hazen);
        assert!(matches!(
            "Linear".parse::<QuantileMethod>(),
            Err(Error::InvalidValue(message)) if message.contains("normal_unbiased")
        ));
    }
}
