//! Statistics (NumPy's chapter): `histogram` with even bins (on
//! [`crate::algorithms::histogram`]) or explicit edges (binary searches, then even bins of the
//! bin numbers), with `density`, `histogram2d`, `bincount` with and without weights, and the
//! order statistics `median`, `percentile` and
//! `quantile` along an axis, by
//! the stable sort of [`sorting`](super::sorting) and one kernel that reads the one or two
//! sorted elements each output needs; lines of 512 to 2^16 - 1 elements by radix select, one
//! block a line, and one line of at least 2^16 elements (the whole array) by radix select across
//! the device, with no sort (see `quantile_select`; among equal zeros it picks `-0.0`
//! before `0.0`, where the sort keeps their input order). All thirteen of NumPy's methods
//! ([`QuantileMethod`], `linear` its default, one device function choosing the ranks and the
//! weight for both ways), one quantile or a sequence of them (`quantiles`, `percentiles` and
//! their `nan` forms, stacked along a new first axis as NumPy's); a line holding a NaN gives
//! NaN, as in NumPy, and the
//! `nan*` forms (`nanmedian`, `nanpercentile`, `nanquantile`) leave NaNs out (NaNs sort last: each
//! line's numbers are its first elements, found by bisection).
//!
//! Complex arrays: `median` and `nanmedian` in NumPy's order (see `complex_median`); the
//! quantiles refuse them, as NumPy does.
//!
//! Deviation: the median or a quantile of an empty axis is [`Error::InvalidValue`] (NumPy
//! returns NaN with a warning). The result's type is NumPy's: `f64` for integers and `bool`,
//! the float type itself for floats (deviation: the methods that pick one element, `lower`,
//! `higher`, `nearest`, `inverted_cdf` and `closest_observation`, also give `f64` for
//! integers, where NumPy keeps the integer type; the value is the same below 2^53), computed in `f64` for `f64` and integers and in `f32` for
//! the 32- and 16-bit floats (NumPy computes `f16` in `f16`: the last bit may differ).

use cuda_driver::Stream;

use crate::algorithms::histogram::{check_bins, count_small_values, even_edge, histogram_even, SHARED_BINS};
use crate::algorithms::scan::{scan_by_key, ScanKind, ScanOp};
use crate::algorithms::search::{search_sorted, Side};
use crate::algorithms::sort::{sort_pairs, SortOrder};
use crate::array::axis::OptionalAxis;
use crate::array::device_array::DeviceArray;
use crate::array::dtype::{DType, Element};
use crate::array::kernels::launch::Launch;
use crate::array::kernels::registry::{grid_for, kernel, KernelKey, LoadedTable};
use crate::array::kernels::signature::ArgType;
use crate::array::kernels::IndexMode;
use crate::array::kernels::{Arg, PRELUDE};
use crate::array::promotion::Scalars;
use crate::array::routines::math::{where_, ExprOps};
use crate::array::view::Slice;
use crate::error::{Error, Result};

use super::complex_median::complex_median;
use super::quantile_select::{quantile_of_line, quantile_of_rows, ROWS_SELECT_MIN_LEN, SELECT_MIN_LEN};
use super::SORTED_LINES;

/// The quantile read-out kernel.
const QUANTILE: &str = include_str!("quantile.cuh");
/// The ranks and weight each of NumPy's quantile methods reads (device code, before the
/// read-out and the radix select).
pub(super) const QUANTILE_PLAN: &str = include_str!("quantile_plan.cuh");
/// Threads per block of the quantile kernel.
const BLOCK: u32 = 256;
/// The fewest quantiles of one call for which the lines are sorted once rather than each
/// quantile found by radix select: on the H100 a select of 2^26 `f32` took 0.90 ms (`median`)
/// and a sort of them about 1.7 ms (39 Gkeys/s), so from three quantiles on one sort costs
/// less.
const SORT_ONCE_QUANTILES: usize = 3;

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

/// The quantile kernel for sorted lines of `input`, results of `output`.
fn source(input: DType, output: DType) -> String {
    let (compute, mul, add, sub) = rounded_arithmetic(input);
    // `Bool` is read as a byte: any byte but 0 is true (not every byte is a valid C++ `bool`).
    let (element, read) = match input {
        DType::Bool => ("unsigned char", "(C)(line[i] != 0)"),
        other => (other.c_name(), "(C)(double)line[i]"),
    };
    format!(
        "// generated by cuda-core: quantile of sorted {input} lines into {output}\n{PRELUDE}\
         typedef {element} T;\ntypedef {} M;\ntypedef {compute} C;\n#define READ(i) {read}\n\
         #define MUL {mul}\n#define ADD {add}\n#define SUB {sub}\n{SORTED_LINES}{QUANTILE_PLAN}{QUANTILE}",
        output.c_name(),
    )
}

/// The error of a median or quantile of an empty axis.
fn empty_axis(what: &str, axis: usize, shape: &[usize]) -> Error {
    Error::InvalidValue(format!(
        "{what} of an empty axis (axis {axis} of shape {shape:?}); NumPy gives NaN with a warning"
    ))
}

/// The fractions `values / top` (quantiles: `top` 1; percentiles: 100), each value checked to
/// be in `[0, top]`.
fn fractions(what: &str, values: &[f64], top: f64) -> Result<Vec<f64>> {
    values
        .iter()
        .map(|&value| check_fraction(what, value, top).map(|()| value / top))
        .collect()
}

/// Checks that `value` is in `[0, top]` (NaN is not).
fn check_fraction(what: &str, value: f64, top: f64) -> Result<()> {
    match (0.0..=top).contains(&value) {
        true => Ok(()),
        false => Err(Error::InvalidValue(format!("{what}: {value} is outside [0, {top}]"))),
    }
}

/// The loaded code of the quantile kernel.
#[derive(Default)]
struct QuantileKernels {
    loaded: LoadedTable,
}

impl<T: Element> DeviceArray<T> {
    /// NumPy's `np.histogram(a, bins, range)` with a bin count: the counts (`i64`) of the
    /// flattened array in `bins` even bins over `range`, and the `bins + 1` edges (in
    /// `T::Mean`: the float type itself, `f64` for integers, as NumPy's). Without a range, the
    /// array's least and greatest elements (read back: one wait; an empty array takes
    /// `(0, 1)`); a range of one point widens by 0.5 each way, as in NumPy. `bins` 0, a range
    /// whose lower end is above its upper end, or one that is not finite (NaN in the array) is
    /// [`Error::InvalidValue`]. Samples outside the range and NaN are not counted.
    pub fn histogram(
        &self,
        bins: usize,
        range: Option<(f64, f64)>,
    ) -> Result<(DeviceArray<i64>, DeviceArray<T::Mean>)> {
        real_samples::<T>("histogram")?;
        let range = self.histogram_range(range)?;
        check_bins(bins, range)?;
        let stream = self.stream();
        let samples = self.to_contiguous()?;
        let mut counts = DeviceArray::<i64>::empty(stream, bins)?;
        histogram_even::<T, T::Mean>(stream, (&samples, samples.len()), range, &mut counts, bins)?;
        let edges: Vec<T::Mean> = (0..=bins)
            .map(|i| <T::Mean as Element>::from_f64(even_edge(i, bins, range)))
            .collect();
        Ok((counts, DeviceArray::from_slice(stream, &edges)?))
    }

    /// NumPy's `np.histogram(a, bins, range, density=True)` with a bin count: as
    /// [`histogram`](Self::histogram), the counts divided by their total and by each bin's
    /// width (`f64`: a probability density, whose integral over the range is 1; NaN everywhere
    /// when nothing is counted, as NumPy's `0 / 0`). The counts are read back (one more wait)
    /// and divided on the host (`bins` values).
    pub fn histogram_density(
        &self,
        bins: usize,
        range: Option<(f64, f64)>,
    ) -> Result<(DeviceArray<f64>, DeviceArray<T::Mean>)> {
        let (counts, edges) = self.histogram(bins, range)?;
        let density = density_of(self.stream(), &counts, &edges.to_vec()?)?;
        Ok((density, edges))
    }

    /// NumPy's `np.histogram(a, bins=edges)`: the `i64` counts of the flattened array in the
    /// `edges.len() - 1` bins `[edges[i], edges[i + 1])`, the last one closed, compared in `T`
    /// (cast the edges to the samples' type first). `edges` is 1-D and monotonically increasing
    /// (equal neighbours allowed, as in NumPy); it is read back and checked on the host (one
    /// wait): decreasing edges or NaN among them, fewer than two edges (no bin; NumPy returns
    /// an empty histogram for one edge), or edges that are not 1-D are
    /// [`Error::InvalidValue`]. Samples outside the edges and NaN are not counted. Each sample's
    /// bin is two binary searches in the edges, then one even histogram of the bin numbers.
    /// Complex samples and edges compare in NumPy's lexicographic order, as NumPy's do (its
    /// histograms with a bin count drop imaginary parts with a `ComplexWarning`: here those,
    /// the densities and [`histogram2d`](Self::histogram2d) of complex arrays are
    /// [`Error::NotSupported`]).
    pub fn histogram_with_edges(&self, edges: &DeviceArray<T>) -> Result<DeviceArray<i64>> {
        let host_edges = checked_edges("histogram", edges)?;
        let stream = self.stream();
        let samples = self.to_contiguous()?;
        let bins = host_edges.len() - 1;
        let index = bin_index(&samples, &host_edges)?;
        // Bin numbers 0 (below) ..= bins + 1 (above, NaN): count all, keep 1..=bins.
        let mut counts = DeviceArray::<i64>::empty(stream, bins + 2)?;
        let all = (0.0, (bins + 2) as f64);
        histogram_even::<i64, f64>(stream, (&index, index.len()), all, &mut counts, bins + 2)?;
        counts.slice(&[Slice::new(1, Some(bins + 1))])?.try_clone()
    }

    /// [`histogram_with_edges`](Self::histogram_with_edges) with `density=True`: the counts
    /// divided by their total and by each bin's width, `f64` (see
    /// [`histogram_density`](Self::histogram_density); a bin of width 0 holding samples gives
    /// inf, as NumPy's division).
    pub fn histogram_density_with_edges(&self, edges: &DeviceArray<T>) -> Result<DeviceArray<f64>> {
        real_samples::<T>("histogram with density")?;
        let counts = self.histogram_with_edges(edges)?;
        density_of(self.stream(), &counts, &edges.to_vec()?)
    }

    /// The range of a histogram: the given one, or the array's least and greatest elements
    /// (read back: one wait; `(0, 1)` when empty), a one-point range widened by 0.5 each way,
    /// as NumPy. A lower end above the upper end is [`Error::InvalidValue`].
    pub(super) fn histogram_range(&self, range: Option<(f64, f64)>) -> Result<(f64, f64)> {
        let (lower, upper) = match range {
            Some(range) => range,
            None if self.is_empty() => (0.0, 1.0),
            None => (self.min()?.item()?.to_f64(), self.max()?.item()?.to_f64()),
        };
        if lower > upper {
            return Err(Error::InvalidValue(format!(
                "histogram: the range's lower end {lower} is above its upper end {upper}"
            )));
        }
        Ok(match lower == upper {
            true => (lower - 0.5, upper + 0.5),
            false => (lower, upper),
        })
    }

    /// How many times each value `0..=max` occurs in this 1-D array of non-negative
    /// integers: NumPy's `np.bincount(x, minlength)` without weights, `i64` counts of length
    /// `max(x.max() + 1, minlength)`. One read counts the values below
    /// [`SHARED_BINS`](crate::algorithms::histogram::SHARED_BINS) and finds the least and
    /// greatest elements, which are read back (one wait); only a greater maximum takes a second
    /// read. A negative element, a float or `Bool` array, or an array that is not 1-D is
    /// [`Error::InvalidValue`].
    pub fn bincount(&self, minlength: usize) -> Result<DeviceArray<i64>> {
        self.check_bincount()?;
        let stream = self.stream();
        if self.is_empty() {
            return DeviceArray::<i64>::zeros(stream, minlength);
        }
        let samples = self.to_contiguous()?;
        let small = SHARED_BINS.max(minlength);
        let mut counts = DeviceArray::<i64>::empty(stream, small)?;
        let mut extremes = DeviceArray::<i64>::empty(stream, 2)?;
        count_small_values::<T>(stream, (&samples, samples.len()), (&mut counts, small), &mut extremes)?;
        let extremes = extremes.to_vec()?;
        // The extremes' bits: u64 for unsigned elements. Values outside the element type's
        // range, or out of order, are none the kernel found.
        let bits = 8 * T::DTYPE.size() as u32;
        let ((least, greatest), (lowest, highest)) = match T::DTYPE.is_unsigned_int() {
            true => (
                (extremes[0] as u64 as i128, extremes[1] as u64 as i128),
                (0, (1i128 << bits) - 1),
            ),
            false => (
                (i128::from(extremes[0]), i128::from(extremes[1])),
                (-(1i128 << (bits - 1)), (1i128 << (bits - 1)) - 1),
            ),
        };
        if least < lowest || greatest > highest || least > greatest {
            return Err(Error::InvalidValue(format!(
                "bincount: the device reported {least} and {greatest} as the least and greatest of {} \
                 elements (a failed kernel or corrupted memory)",
                T::DTYPE
            )));
        }
        if least < 0 {
            return Err(Error::InvalidValue(format!(
                "bincount: the array holds a negative value ({least})"
            )));
        }
        // Bin v is [v, v + 1): even bins of width 1 from 0, their edges exact in f64.
        let bins = usize::try_from(greatest + 1)
            .map_err(|_| Error::InvalidValue(format!("bincount: {greatest} + 1 bins do not fit in memory")))?
            .max(minlength);
        if greatest < SHARED_BINS as i128 {
            return match bins == small {
                true => Ok(counts),
                false => counts.slice(&[Slice::new(0, Some(bins))]),
            };
        }
        drop(counts);
        let mut counts = DeviceArray::<i64>::empty(stream, bins)?;
        histogram_even::<T, f64>(stream, (&samples, samples.len()), (0.0, bins as f64), &mut counts, bins)?;
        Ok(counts)
    }

    /// Checks that this is a 1-D array of integers, for `bincount`.
    fn check_bincount(&self) -> Result<()> {
        match T::DTYPE.is_int() && self.ndim() == 1 {
            true => Ok(()),
            false => Err(Error::InvalidValue(format!(
                "bincount: needs a 1-D array of integers, not {} of shape {:?}",
                T::DTYPE,
                self.shape()
            ))),
        }
    }

    /// The median along `axis` (negative counts from the end; `None`: of the flattened array,
    /// a 0-d result, NumPy's default): NumPy's `np.median(a, axis)`, of `T::Mean` (`f64` for
    /// integers), the axis removed. A line with a NaN gives NaN; an empty axis is an error (see
    /// the module's docs). The quantiles take `axis` the same way.
    pub fn median(&self, axis: impl Into<OptionalAxis>) -> Result<DeviceArray<T::Mean>> {
        self.median_along("median", axis, false)
    }

    /// The median of the numbers along `axis`, NaNs left out: NumPy's `np.nanmedian(a, axis)`
    /// (NaN for a line of NaNs only, where NumPy also warns).
    pub fn nanmedian(&self, axis: impl Into<OptionalAxis>) -> Result<DeviceArray<T::Mean>> {
        self.median_along("nanmedian", axis, true)
    }

    /// The median: of complex values by their own kernel (see `complex_median`), else the
    /// quantile 0.5.
    fn median_along(&self, what: &str, axis: impl Into<OptionalAxis>, skip_nan: bool) -> Result<DeviceArray<T::Mean>> {
        if !T::DTYPE.is_complex() {
            return self.quantile_along(what, 0.5, axis, QuantileMethod::Linear, skip_nan);
        }
        let Some(axis) = axis.into().get() else {
            return self.ravel()?.median_along(what, 0, skip_nan);
        };
        let axis = axis.index(self.ndim())?;
        if self.shape()[axis] == 0 {
            return Err(empty_axis(what, axis, self.shape()));
        }
        complex_median::<T, T::Mean>(self, axis, skip_nan)
    }

    /// The `p`-th percentile along `axis`: NumPy's `np.percentile(a, p, axis, method)`. `p`
    /// outside `[0, 100]` (or NaN) is an error.
    pub fn percentile(
        &self,
        p: f64,
        axis: impl Into<OptionalAxis>,
        method: QuantileMethod,
    ) -> Result<DeviceArray<T::Mean>> {
        check_fraction("percentile", p, 100.0)?;
        self.quantile_along("percentile", p / 100.0, axis, method, false)
    }

    /// As [`percentile`](Self::percentile), NaNs left out: NumPy's `np.nanpercentile`.
    pub fn nanpercentile(
        &self,
        p: f64,
        axis: impl Into<OptionalAxis>,
        method: QuantileMethod,
    ) -> Result<DeviceArray<T::Mean>> {
        check_fraction("nanpercentile", p, 100.0)?;
        self.quantile_along("nanpercentile", p / 100.0, axis, method, true)
    }

    /// The `q`-th quantile along `axis`: NumPy's `np.quantile(a, q, axis, method)`. `q`
    /// outside `[0, 1]` (or NaN) is an error.
    pub fn quantile(
        &self,
        q: f64,
        axis: impl Into<OptionalAxis>,
        method: QuantileMethod,
    ) -> Result<DeviceArray<T::Mean>> {
        check_fraction("quantile", q, 1.0)?;
        self.quantile_along("quantile", q, axis, method, false)
    }

    /// As [`quantile`](Self::quantile), NaNs left out: NumPy's `np.nanquantile`.
    pub fn nanquantile(
        &self,
        q: f64,
        axis: impl Into<OptionalAxis>,
        method: QuantileMethod,
    ) -> Result<DeviceArray<T::Mean>> {
        check_fraction("nanquantile", q, 1.0)?;
        self.quantile_along("nanquantile", q, axis, method, true)
    }

    /// The quantiles `qs` along `axis`, stacked along a new first axis: NumPy's
    /// `np.quantile(a, qs, axis, method)` with a sequence of quantiles (from three of them on,
    /// the lines are sorted once for all, where one or two are found by radix select). A `q`
    /// outside `[0, 1]` (or NaN) is an error.
    pub fn quantiles(
        &self,
        qs: &[f64],
        axis: impl Into<OptionalAxis>,
        method: QuantileMethod,
    ) -> Result<DeviceArray<T::Mean>> {
        let qs = fractions("quantile", qs, 1.0)?;
        self.quantiles_along("quantile", &qs, axis, method, false)
    }

    /// As [`quantiles`](Self::quantiles), NaNs left out: NumPy's `np.nanquantile` with a
    /// sequence of quantiles.
    pub fn nanquantiles(
        &self,
        qs: &[f64],
        axis: impl Into<OptionalAxis>,
        method: QuantileMethod,
    ) -> Result<DeviceArray<T::Mean>> {
        let qs = fractions("nanquantile", qs, 1.0)?;
        self.quantiles_along("nanquantile", &qs, axis, method, true)
    }

    /// The percentiles `ps` along `axis`, stacked along a new first axis: NumPy's
    /// `np.percentile(a, ps, axis, method)` with a sequence (`[25.0, 50.0, 75.0]`, say). A `p`
    /// outside `[0, 100]` (or NaN) is an error.
    pub fn percentiles(
        &self,
        ps: &[f64],
        axis: impl Into<OptionalAxis>,
        method: QuantileMethod,
    ) -> Result<DeviceArray<T::Mean>> {
        let qs = fractions("percentile", ps, 100.0)?;
        self.quantiles_along("percentile", &qs, axis, method, false)
    }

    /// As [`percentiles`](Self::percentiles), NaNs left out: NumPy's `np.nanpercentile` with a
    /// sequence.
    pub fn nanpercentiles(
        &self,
        ps: &[f64],
        axis: impl Into<OptionalAxis>,
        method: QuantileMethod,
    ) -> Result<DeviceArray<T::Mean>> {
        let qs = fractions("nanpercentile", ps, 100.0)?;
        self.quantiles_along("nanpercentile", &qs, axis, method, true)
    }

    /// One quantile: [`quantiles_along`](Self::quantiles_along)'s result for `[q]`, without
    /// its first axis.
    fn quantile_along(
        &self,
        what: &str,
        q: f64,
        axis: impl Into<OptionalAxis>,
        method: QuantileMethod,
        skip_nan: bool,
    ) -> Result<DeviceArray<T::Mean>> {
        self.each_quantile(what, &[q], axis, method, skip_nan)?
            .pop()
            .ok_or_else(|| Error::InvalidValue(format!("{what}: no quantile")))
    }

    /// The quantiles `qs` (checked) along `axis`, stacked along a new first axis.
    fn quantiles_along(
        &self,
        what: &str,
        qs: &[f64],
        axis: impl Into<OptionalAxis>,
        method: QuantileMethod,
        skip_nan: bool,
    ) -> Result<DeviceArray<T::Mean>> {
        let Some(axis) = axis.into().get() else {
            return self.ravel()?.quantiles_along(what, qs, 0, method, skip_nan);
        };
        let each = self.each_quantile(what, qs, axis, method, skip_nan)?;
        if each.is_empty() {
            let mut shape = self.shape().to_vec();
            shape.remove(axis.index(self.ndim())?);
            shape.insert(0, 0);
            return DeviceArray::<T::Mean>::empty(self.stream(), shape);
        }
        DeviceArray::stack(&each.iter().collect::<Vec<_>>(), 0)
    }

    /// Each of the quantiles `qs` (checked) along `axis`, an array of the other axes each.
    fn each_quantile(
        &self,
        what: &str,
        qs: &[f64],
        axis: impl Into<OptionalAxis>,
        method: QuantileMethod,
        skip_nan: bool,
    ) -> Result<Vec<DeviceArray<T::Mean>>> {
        if T::DTYPE.is_complex() {
            return Err(Error::InvalidValue(format!(
                "{what}: a must be an array of real numbers, not {} (NumPy raises TypeError)",
                T::DTYPE
            )));
        }
        let Some(axis) = axis.into().get() else {
            return self.ravel()?.each_quantile(what, qs, 0, method, skip_nan);
        };
        let axis = axis.index(self.ndim())?;
        let n = self.shape()[axis];
        if n == 0 {
            return Err(empty_axis(what, axis, self.shape()));
        }
        let mut shape = self.shape().to_vec();
        shape.remove(axis);
        let stream = self.stream();
        let lines = shape.iter().product::<usize>();
        let method = method.code();
        let mut each = Vec::with_capacity(qs.len());
        if lines == 0 {
            for _ in qs {
                each.push(DeviceArray::<T::Mean>::empty(stream, shape.clone())?);
            }
            return Ok(each);
        }
        // One long line (the whole array): radix select, no sort, unless so many quantiles
        // are asked that one sort costs less.
        let select = qs.len() < SORT_ONCE_QUANTILES;
        if select && lines == 1 && n >= SELECT_MIN_LEN {
            let line = self.ravel()?;
            for &q in qs {
                let mut out = DeviceArray::<T::Mean>::empty(stream, shape.clone())?;
                quantile_of_line(&line, &mut out, q, method, skip_nan)?;
                each.push(out);
            }
            return Ok(each);
        }
        // Lines of a middle length: radix select of each by one block, no sort (longer lines,
        // more than one, are sorted: a block each would leave most of the device idle).
        if select && (ROWS_SELECT_MIN_LEN..SELECT_MIN_LEN).contains(&n) {
            let rows = self.moveaxis(axis, self.ndim() - 1)?.to_contiguous()?;
            for &q in qs {
                let mut out = DeviceArray::<T::Mean>::empty(stream, shape.clone())?;
                quantile_of_rows(&rows, &mut out, n, (q, method, skip_nan))?;
                each.push(out);
            }
            return Ok(each);
        }
        // The lines sorted (once for every quantile), the axis last and compact.
        let sorted = self.moveaxis(axis, self.ndim() - 1)?.sort(-1)?;
        let kernels = kernel(
            KernelKey::Named("cuda_core_quantile"),
            || Ok(QuantileKernels::default()),
        )?;
        let signature = [ArgType::Array(T::DTYPE), ArgType::Array(<T::Mean as Element>::DTYPE)];
        let loaded = kernels.loaded.get_or_load(stream.context(), &signature, 0, || {
            Ok((
                source(T::DTYPE, <T::Mean as Element>::DTYPE),
                vec!["cuda_core_quantile".to_string()],
            ))
        })?;
        let grid = grid_for(lines as u64, BLOCK, loaded.sm_count, 8);
        for &q in qs {
            let mut out = DeviceArray::<T::Mean>::empty(stream, shape.clone())?;
            let arrays = [Arg::from(&sorted), Arg::from(&mut out)];
            let mut launch = Launch::on(stream);
            launch.args(&arrays)?;
            launch
                .value(lines as u64)
                .value(n as u64)
                .value(q)
                .value(method)
                .value(i32::from(skip_nan));
            // SAFETY: cuda_core_quantile(sorted, out, lines, n, q, method, skip_nan) reads line
            // r (r < lines) of the compact `sorted` at positions below n (bisection in [0, n),
            // and positions clamped into [0, count - 1] with 0 < count <= n), inside its
            // `lines * n` elements (n > 0, checked above), and writes out[r], inside the `lines`
            // elements of the compact `out`; both are borrowed for the launch.
            unsafe { launch.run(&loaded.functions[0], (grid, 1), (BLOCK, 1))? };
            drop(launch);
            each.push(out);
        }
        Ok(each)
    }
}

impl<T: Scalars> DeviceArray<T> {
    /// NumPy's `np.bincount(x, weights, minlength)`: for each value `v` in `0..=max`, the sum
    /// of the weights (converted to `f64`) of the elements equal to `v`, `f64` of length
    /// `max(x.max() + 1, minlength)`. `weights` has this array's shape; otherwise, or for an
    /// array as [`bincount`](Self::bincount) refuses, [`Error::InvalidValue`]. The least and
    /// greatest elements are read back (one wait). A stable sort of the pairs, a sum scan by
    /// runs of equal values and two searches per value (no new kernel); the sums are in a tree
    /// order within tiles, so they may differ from NumPy's sequential sums in the last bits.
    pub fn bincount_weighted<W: Scalars>(
        &self,
        weights: &DeviceArray<W>,
        minlength: usize,
    ) -> Result<DeviceArray<f64>> {
        self.check_bincount()?;
        if weights.shape() != self.shape() {
            return Err(Error::InvalidValue(format!(
                "bincount: {:?} weights for an array of shape {:?}",
                weights.shape(),
                self.shape()
            )));
        }
        let stream = self.stream();
        if self.is_empty() {
            return DeviceArray::<f64>::zeros(stream, minlength);
        }
        let (least, greatest) = (self.min()?.item()?, self.max()?.item()?);
        if least.to_f64() < 0.0 {
            return Err(Error::InvalidValue(format!(
                "bincount: the array holds a negative value ({})",
                least.to_f64()
            )));
        }
        let n = self.len();
        let keys = self.to_contiguous()?;
        let values = ExprOps::astype::<f64>(weights).eval()?;
        let mut sorted_keys = DeviceArray::<T>::empty(stream, n)?;
        let mut sorted_values = DeviceArray::<f64>::empty(stream, n)?;
        sort_pairs::<T, f64>(
            stream,
            (&keys, &values),
            (&mut sorted_keys, &mut sorted_values),
            n,
            SortOrder::Ascending,
        )?;
        // Running sums within each run of equal values: a run's last is its total.
        let mut sums = DeviceArray::<f64>::empty(stream, n)?;
        scan_by_key::<T, f64, f64>(
            stream,
            &sorted_keys,
            &sorted_values,
            &mut sums,
            ScanOp::Sum,
            ScanKind::Inclusive,
        )?;
        // Every value 0..=greatest is one of T (they lie between two of its elements).
        let used = (greatest.to_f64() as usize)
            .checked_add(1)
            .ok_or_else(|| Error::InvalidValue("bincount: the number of bins overflows".into()))?;
        let queries: Vec<T> = (0..used).map(|v| T::from_f64(v as f64)).collect();
        let queries = DeviceArray::from_slice(stream, &queries)?;
        let mut starts = DeviceArray::<i64>::empty(stream, used)?;
        let mut ends = DeviceArray::<i64>::empty(stream, used)?;
        search_sorted::<T>(stream, (&sorted_keys, n), (&queries, used), &mut starts, Side::Left)?;
        search_sorted::<T>(stream, (&sorted_keys, n), (&queries, used), &mut ends, Side::Right)?;
        // A run's total sits before its end; an absent value (an empty run) sums to 0.
        let last = (&ends - 1i64).eval()?;
        let totals = sums.take(&last, None, IndexMode::Clip)?;
        let sums = where_(ExprOps::gt(&ends, &starts), &totals, 0.0).eval()?;
        match minlength > used {
            true => {
                let padding = DeviceArray::<f64>::zeros(stream, minlength - used)?;
                DeviceArray::concatenate(&[&sums, &padding], 0)
            }
            false => Ok(sums),
        }
    }

    /// NumPy's `np.histogram2d(x, y, bins, range)` with bin counts: the counts of the pairs
    /// `(self[i], y[i])` (both flattened; the shapes must be equal) in `bins.0` even bins of
    /// the first over `bins.1` of the second, as an `f64` matrix of shape `bins` (NumPy's
    /// type), and the two axes' edges (`f64`). Each axis's range is as in
    /// [`histogram`](Self::histogram) (from the data when `range` is `None`: up to two waits);
    /// its bins are half-open, the last closed. Pairs with a coordinate outside its range or NaN
    /// are not counted. A bin count of 0, an unusable range or unequal shapes are
    /// [`Error::InvalidValue`]. NumPy rounds the edges of a range found in `f32` data to `f32`;
    /// here edges are always `f64`.
    #[allow(clippy::type_complexity)]
    pub fn histogram2d(
        &self,
        y: &DeviceArray<T>,
        bins: (usize, usize),
        range: Option<[(f64, f64); 2]>,
    ) -> Result<(DeviceArray<f64>, DeviceArray<f64>, DeviceArray<f64>)> {
        real_samples::<T>("histogram2d")?;
        if y.shape() != self.shape() {
            return Err(Error::InvalidValue(format!(
                "histogram2d: x of shape {:?} and y of shape {:?} differ",
                self.shape(),
                y.shape()
            )));
        }
        let stream = self.stream();
        let mut indices = Vec::with_capacity(2);
        let mut edges = Vec::with_capacity(2);
        for (axis, (samples, count)) in [(self, bins.0), (y, bins.1)].into_iter().enumerate() {
            let range = samples.histogram_range(range.map(|r| r[axis]))?;
            check_bins(count, range)?;
            let host: Vec<f64> = (0..=count).map(|i| even_edge(i, count, range)).collect();
            let wide = ExprOps::astype::<f64>(samples).eval()?.ravel()?;
            indices.push(bin_index(&wide, &host)?);
            edges.push(DeviceArray::from_slice(stream, &host)?);
        }
        // Bin numbers with the outliers' bins: 0 ..= bins + 1 on each axis.
        let (rows, columns) = (bins.0 + 2, bins.1 + 2);
        let cells = rows
            .checked_mul(columns)
            .ok_or_else(|| Error::InvalidValue(format!("histogram2d: {bins:?} bins overflow")))?;
        let flat = (&indices[0] * columns as i64 + &indices[1]).eval()?;
        let mut counts = DeviceArray::<i64>::empty(stream, cells)?;
        histogram_even::<i64, f64>(stream, (&flat, flat.len()), (0.0, cells as f64), &mut counts, cells)?;
        let inner = counts
            .reshape([rows, columns])?
            .slice(&[Slice::new(1, Some(bins.0 + 1)), Slice::new(1, Some(bins.1 + 1))])?;
        let counts = ExprOps::astype::<f64>(&inner).eval()?;
        let y_edges = edges.pop().expect("two axes");
        let x_edges = edges.pop().expect("two axes");
        Ok((counts, x_edges, y_edges))
    }
}

/// [`Error::NotSupported`] for complex samples where NumPy bins their real parts only (with a
/// `ComplexWarning`: histograms with a bin count, 2-D ones) or returns a complex density.
fn real_samples<T: Element>(what: &str) -> Result<()> {
    match T::DTYPE.is_complex() {
        true => Err(Error::NotSupported(format!(
            "{what} of {} (NumPy drops the imaginary parts with a ComplexWarning; bin `real()`, \
             or give complex edges to histogram_with_edges)",
            T::DTYPE
        ))),
        false => Ok(()),
    }
}

/// The edges of a histogram read back and checked: 1-D, at least two, monotonically
/// increasing (NaN is not; complex edges lexicographically, as NumPy compares them).
fn checked_edges<T: Element>(what: &str, edges: &DeviceArray<T>) -> Result<Vec<T>> {
    if edges.ndim() != 1 || edges.len() < 2 {
        return Err(Error::InvalidValue(format!(
            "{what}: the edges must be 1-D with at least two (one bin), not of shape {:?}",
            edges.shape()
        )));
    }
    let host = edges.to_vec()?;
    // Complex edges in NumPy's lexicographic order (real parts, then imaginary); NaN is not.
    let increasing = |a: T, b: T| match T::DTYPE.is_complex() {
        true => a.to_f64() < b.to_f64() || (a.to_f64() == b.to_f64() && a.imaginary_f64() <= b.imaginary_f64()),
        false => a.to_f64() <= b.to_f64(),
    };
    match host.windows(2).all(|w| increasing(w[0], w[1])) {
        true => Ok(host),
        false => Err(Error::InvalidValue(format!(
            "{what}: the edges must increase monotonically"
        ))),
    }
}

/// Each compact sample's bin among the increasing `edges` (NumPy's `histogramdd` numbering):
/// `1..=bins` inside, the last bin closed; 0 below the first edge; `bins + 1` above the last
/// or NaN. The number of edges at or below the sample among all but the last edge, plus one if
/// the sample is above the last edge.
fn bin_index<K: Element>(samples: &DeviceArray<K>, edges: &[K]) -> Result<DeviceArray<i64>> {
    let stream = samples.stream();
    let (n, bins) = (samples.len(), edges.len() - 1);
    let inner = DeviceArray::from_slice(stream, &edges[..bins])?;
    let last = DeviceArray::from_slice(stream, &edges[bins..])?;
    let mut below = DeviceArray::<i64>::empty(stream, n)?;
    let mut past = DeviceArray::<i64>::empty(stream, n)?;
    search_sorted::<K>(stream, (&inner, bins), (samples, n), &mut below, Side::Right)?;
    search_sorted::<K>(stream, (&last, 1), (samples, n), &mut past, Side::Left)?;
    (&below + &past).eval()
}

/// NumPy's density: `counts / widths / counts.sum()`, each width computed in the edges' type
/// `E` (as NumPy's `diff`) and divided in `f64`.
fn density_of<E: Element>(stream: &Stream, counts: &DeviceArray<i64>, edges: &[E]) -> Result<DeviceArray<f64>> {
    let counts = counts.to_vec()?;
    let total = counts.iter().sum::<i64>() as f64;
    let density: Vec<f64> = counts
        .iter()
        .zip(edges.windows(2))
        .map(|(&count, pair)| {
            let width = E::from_f64(pair[1].to_f64() - pair[0].to_f64()).to_f64();
            count as f64 / width / total
        })
        .collect();
    DeviceArray::from_slice(stream, &density)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Arch, CompileTarget, Program, ProgramOptions};

    #[test]
    fn complex_samples_are_refused_where_numpy_drops_imaginary_parts() {
        let error = real_samples::<num_complex::Complex<f32>>("histogram").unwrap_err();
        assert!(
            matches!(error, Error::NotSupported(ref m) if m.contains("complex64")),
            "{error}"
        );
        assert!(real_samples::<num_complex::Complex<f64>>("histogram2d").is_err());
        assert!(real_samples::<f64>("histogram").is_ok());
        assert!(real_samples::<i8>("histogram").is_ok());
    }

    #[test]
    fn fractions_are_checked() {
        assert!(check_fraction("q", 0.0, 1.0).is_ok());
        assert!(check_fraction("q", 1.0, 1.0).is_ok());
        assert!(check_fraction("p", 100.0, 100.0).is_ok());
        assert!(matches!(check_fraction("p", 100.5, 100.0), Err(Error::InvalidValue(_))));
        assert!(matches!(check_fraction("q", -0.1, 1.0), Err(Error::InvalidValue(_))));
        assert!(matches!(
            check_fraction("q", f64::NAN, 1.0),
            Err(Error::InvalidValue(_))
        ));
    }

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

    #[test]
    fn every_type_compiles() {
        let options = ProgramOptions {
            cache: false,
            ..ProgramOptions::for_arch(Arch::Sm(90))
        };
        for (input, output) in [
            (DType::Bool, DType::F64),
            (DType::I8, DType::F64),
            (DType::U64, DType::F64),
            (DType::I64, DType::F64),
            (DType::F16, DType::F16),
            (DType::BF16, DType::BF16),
            (DType::F32, DType::F32),
            (DType::F64, DType::F64),
        ] {
            let text = source(input, output);
            if let Err(error) = Program::new(text.clone(), options.clone()).compile(CompileTarget::Ptx) {
                panic!("{input} -> {output}: {error}\n{text}");
            }
        }
    }
}
