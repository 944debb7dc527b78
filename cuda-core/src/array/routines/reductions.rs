//! NumPy's reductions as methods of [`DeviceArray`]: `sum`, `prod`, `mean`, `max`, `min`,
//! `all`, `any`, `argmax` and `argmin`, the statistics `var` and `std` (with `ddof`),
//! `nansum`, `nanmean`, `nanmax`, `nanmin`, `nanargmax`, `nanargmin`, `count_nonzero`, `ptp` and
//! the weighted `average`, over every element or along axes (with `keepdims`), and
//! [`item`](DeviceArray::item), which reads a one-element array back to the host.
//!
//! ```no_run
//! use cuda_core::{Device, DeviceArray};
//!
//! # fn main() -> cuda_core::Result<()> {
//! let stream = Device::new(0)?.create_stream()?;
//! let x = DeviceArray::from_slice(&stream, &[1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0])?.reshape([2, 3])?;
//! assert_eq!(x.sum()?.item()?, 21.0);
//! assert_eq!(x.sum_axes(&[0], false)?.to_vec()?, [5.0, 7.0, 9.0]);
//! assert_eq!(x.max_axes(&[1], true)?.shape(), [2, 1]);
//! assert_eq!(x.argmax()?.item()?, 5);
//! # Ok(())
//! # }
//! ```
//!
//! Each is one generated [`ReductionKernel`] per operation and element type, compiled once
//! through the kernel cache; a whole-array reduction is one pass over memory plus a pass over
//! one partial value per block, with no host round trip. Types follow NumPy: sums and products
//! of integers are 64-bit ([`Element::Sum`]), means of integers `f64` ([`Element::Mean`]);
//! `f16` and `bf16` are reduced in `f32`. `max` and `min` propagate NaN, `argmax` and `argmin`
//! return the first NaN or else the first extreme; `nanargmax` and `nanargmin` read a NaN as
//! `-inf` (`inf`), as NumPy does. Complex values compare lexicographically (real parts, then
//! imaginary parts) and their extremes are reduced with their indices, so that the value that
//! comes back is NumPy's to the bit: the first holding a NaN, else the first of equal extremes
//! (`0-0j` before a later `-0+0j`); `nanmax` and `nanmin` are NumPy's `fmax` and `fmin`
//! reductions, the first NaN of a line of NaNs only. Reducing no elements gives the identity
//! (`0` for `sum`, `1` for `prod`, NaN for `mean`, `true` for `all`, `false` for `any`); `max`,
//! `min`, `argmax` and `argmin` of no elements are an error, as in NumPy.
//!
//! Expressions reduce the same way, fused: `(&x * &y).sum()` and `(&x - &y).abs().max_axes(&[1],
//! false)` are one [`ReductionKernel`] whose map is the expression's element-wise code, reading
//! `x` and `y` once and writing no temporary (when the arrays are C-contiguous of the
//! expression's shape; a broadcast or strided operand makes it evaluate the expression first).

use std::sync::Arc;

use crate::array::axis::{Axes, Axis};
use crate::array::device_array::DeviceArray;
use crate::array::dtype::{Bool, DType, Element};
use crate::array::kernels::reduction::ReductionKernel;
use crate::array::kernels::reduction_axis::{reduced_axes, reduced_shape};
use crate::array::kernels::registry::{kernel, KernelKey};
use crate::array::kernels::Arg;
use crate::array::promotion::{Promote, Scalars};
use crate::array::routines::math::{binary, cast_to, BinaryOp, Expr, ExprOps, IntoExpr, EXPR_PRELUDE};
use crate::error::{Error, Result};
use cuda_driver::Stream;

/// Device helpers of the built-in reductions.
const PRELUDE: &str = r#"
template <typename T> __device__ __forceinline__ bool cc_isnan(const T v) { return v != v; }
__device__ __forceinline__ double cc_nan() { return __longlong_as_double(0x7ff8000000000000LL); }
__device__ __forceinline__ double cc_inf() { return __longlong_as_double(0x7ff0000000000000LL); }
template <typename T> __device__ __forceinline__ T cc_max(const T a, const T b) { return cc_isnan(a) ? a : cc_isnan(b) ? b : (a > b ? a : b); }
template <typename T> __device__ __forceinline__ T cc_min(const T a, const T b) { return cc_isnan(a) ? a : cc_isnan(b) ? b : (a < b ? a : b); }
template <typename T> __device__ __forceinline__ bool cc_truthy(const T v) { return v != 0; }
template <typename T> __device__ __forceinline__ T cc_lowest();
template <typename T> __device__ __forceinline__ T cc_highest();
template <> __device__ __forceinline__ bool cc_lowest<bool>() { return false; }
template <> __device__ __forceinline__ bool cc_highest<bool>() { return true; }
template <> __device__ __forceinline__ signed char cc_lowest<signed char>() { return -128; }
template <> __device__ __forceinline__ signed char cc_highest<signed char>() { return 127; }
template <> __device__ __forceinline__ short cc_lowest<short>() { return -32768; }
template <> __device__ __forceinline__ short cc_highest<short>() { return 32767; }
template <> __device__ __forceinline__ int cc_lowest<int>() { return -2147483647 - 1; }
template <> __device__ __forceinline__ int cc_highest<int>() { return 2147483647; }
template <> __device__ __forceinline__ long long cc_lowest<long long>() { return -9223372036854775807LL - 1; }
template <> __device__ __forceinline__ long long cc_highest<long long>() { return 9223372036854775807LL; }
template <> __device__ __forceinline__ unsigned char cc_lowest<unsigned char>() { return 0; }
template <> __device__ __forceinline__ unsigned char cc_highest<unsigned char>() { return 255; }
template <> __device__ __forceinline__ unsigned short cc_lowest<unsigned short>() { return 0; }
template <> __device__ __forceinline__ unsigned short cc_highest<unsigned short>() { return 65535; }
template <> __device__ __forceinline__ unsigned int cc_lowest<unsigned int>() { return 0; }
template <> __device__ __forceinline__ unsigned int cc_highest<unsigned int>() { return 4294967295u; }
template <> __device__ __forceinline__ unsigned long long cc_lowest<unsigned long long>() { return 0; }
template <> __device__ __forceinline__ unsigned long long cc_highest<unsigned long long>() { return 18446744073709551615ULL; }
template <> __device__ __forceinline__ float cc_lowest<float>() { return -__int_as_float(0x7f800000); }
template <> __device__ __forceinline__ float cc_highest<float>() { return __int_as_float(0x7f800000); }
template <> __device__ __forceinline__ double cc_lowest<double>() { return -__longlong_as_double(0x7ff0000000000000LL); }
template <> __device__ __forceinline__ double cc_highest<double>() { return __longlong_as_double(0x7ff0000000000000LL); }
template <typename V> struct cc_arg { V v; long long i; };
template <typename V, typename X> __device__ __forceinline__ cc_arg<V> cc_make_arg(const X x, const unsigned long long i) { cc_arg<V> r; r.v = (V)x; r.i = (long long)i; return r; }
template <typename V> __device__ __forceinline__ cc_arg<V> cc_no_arg() { cc_arg<V> r; r.v = V(0); r.i = -1; return r; }
// NumPy's nanargmax (nanargmin) reads a NaN as -inf (+inf; complex: -inf + 0j, inf + 0j), so a
// NaN can win against values no greater, and refuses only a line of NaNs: bit 62 of an index
// says that a value that is not NaN was seen.
#define CC_SEEN (1LL << 62)
template <typename V, typename X> __device__ __forceinline__ cc_arg<V> cc_make_nanarg(const X x, const unsigned long long i, const bool greatest) {
    cc_arg<V> r = cc_make_arg<V>(x, i);
    if (cc_isnan(r.v)) r.v = V(greatest ? -cc_inf() : cc_inf());
    else r.i |= CC_SEEN;
    return r;
}
// The better of two indexed values, whatever order they come in: a NaN (or, when `skip_nan`,
// any value that is not NaN), else the greatest (least) value; the first index among equals
// and among NaNs. A complex value with a NaN in either part is NaN, and equal complex values
// compare equal part by part (-0.0 equal to 0.0): NumPy's first NaN, first extreme.
template <typename V> __device__ __forceinline__ cc_arg<V> cc_arg_best(const cc_arg<V> a, const cc_arg<V> b, const bool greatest, const bool skip_nan) {
    if (a.i < 0) return b;
    if (b.i < 0) return a;
    const bool an = cc_isnan(a.v), bn = cc_isnan(b.v);
    const cc_arg<V> first = a.i < b.i ? a : b;
    if (an && bn) return first;
    if (an || bn) return (an != skip_nan) ? a : b;
    if (a.v == b.v) return first;
    return (greatest ? a.v > b.v : a.v < b.v) ? a : b;
}
template <typename V> __device__ __forceinline__ cc_arg<V> cc_nanarg_best(cc_arg<V> a, cc_arg<V> b, const bool greatest) {
    if (a.i < 0) return b;
    if (b.i < 0) return a;
    const long long seen = (a.i | b.i) & CC_SEEN;
    a.i &= ~CC_SEEN;
    b.i &= ~CC_SEEN;
    cc_arg<V> r = cc_arg_best(a, b, greatest, false);
    r.i |= seen;
    return r;
}
template <typename R, typename X> __device__ __forceinline__ R cc_nan_to_zero(const X x) { return cc_isnan(x) ? R(0) : R(x); }
template <typename T> __device__ __forceinline__ T cc_nanmax(const T a, const T b) { return cc_isnan(a) ? b : cc_isnan(b) ? a : (a > b ? a : b); }
template <typename T> __device__ __forceinline__ T cc_nanmin(const T a, const T b) { return cc_isnan(a) ? b : cc_isnan(b) ? a : (a < b ? a : b); }
struct cc_moments { double n; double mean; double m2; };
__device__ __forceinline__ cc_moments cc_no_moments() { cc_moments r; r.n = 0.0; r.mean = 0.0; r.m2 = 0.0; return r; }
template <typename X> __device__ __forceinline__ cc_moments cc_moment(const X x) { cc_moments r; r.n = 1.0; r.mean = (double)(float)x; r.m2 = 0.0; return r; }
__device__ __forceinline__ cc_moments cc_moment(const double x) { cc_moments r; r.n = 1.0; r.mean = x; r.m2 = 0.0; return r; }
__device__ __forceinline__ cc_moments cc_moment(const long long x) { cc_moments r; r.n = 1.0; r.mean = (double)x; r.m2 = 0.0; return r; }
__device__ __forceinline__ cc_moments cc_moment(const unsigned long long x) { cc_moments r; r.n = 1.0; r.mean = (double)x; r.m2 = 0.0; return r; }
__device__ __forceinline__ cc_moments cc_moment(const int x) { return cc_moment((long long)x); }
__device__ __forceinline__ cc_moments cc_moment(const unsigned x) { return cc_moment((long long)x); }
template <typename X> __device__ __forceinline__ cc_moments cc_nan_moment(const X x) { return cc_isnan(x) ? cc_no_moments() : cc_moment(x); }
// Chan et al.'s pairwise combination of counts, means and sums of squared deviations.
__device__ __forceinline__ cc_moments cc_combine(const cc_moments a, const cc_moments b) {
    if (a.n == 0.0) return b;
    if (b.n == 0.0) return a;
    cc_moments r;
    r.n = a.n + b.n;
    const double d = b.mean - a.mean;
    r.mean = a.mean + d * (b.n / r.n);
    r.m2 = a.m2 + b.m2 + d * d * (a.n * (b.n / r.n));
    return r;
}
__device__ __forceinline__ double cc_variance(const cc_moments a, const double ddof) {
    const double dof = a.n - ddof;
    return a.m2 / (dof > 0.0 ? dof : 0.0);
}
// The same for complex values: a complex mean, and squared distances |x - mean|^2 (NumPy's
// complex variance, the real parts' plus the imaginary parts').
struct cc_cmoments { double n; double re; double im; double m2; };
__device__ __forceinline__ cc_cmoments cc_no_cmoments() { cc_cmoments r; r.n = 0.0; r.re = 0.0; r.im = 0.0; r.m2 = 0.0; return r; }
template <typename Z> __device__ __forceinline__ cc_cmoments cc_cmoment(const Z z) { cc_cmoments r; r.n = 1.0; r.re = (double)z.re; r.im = (double)z.im; r.m2 = 0.0; return r; }
template <typename Z> __device__ __forceinline__ cc_cmoments cc_nan_cmoment(const Z z) { return cc_isnan(z) ? cc_no_cmoments() : cc_cmoment(z); }
__device__ __forceinline__ cc_cmoments cc_ccombine(const cc_cmoments a, const cc_cmoments b) {
    if (a.n == 0.0) return b;
    if (b.n == 0.0) return a;
    cc_cmoments r;
    r.n = a.n + b.n;
    const double dr = b.re - a.re, di = b.im - a.im, f = b.n / r.n;
    r.re = a.re + dr * f;
    r.im = a.im + di * f;
    r.m2 = a.m2 + b.m2 + (dr * dr + di * di) * (a.n * f);
    return r;
}
__device__ __forceinline__ double cc_cvariance(const cc_cmoments a, const double ddof) {
    const double dof = a.n - ddof;
    return a.m2 / (dof > 0.0 ? dof : 0.0);
}
"#;

/// Bytes of `cc_moments`: three doubles.
const MOMENTS_SIZE: usize = 24;

/// Bytes of `cc_cmoments`: four doubles.
const COMPLEX_MOMENTS_SIZE: usize = 32;

/// Bytes of `cc_arg<V>` for a `V` of `value_size` bytes: the value padded to 8, the index.
fn arg_size(value_size: usize) -> usize {
    value_size.max(8).next_multiple_of(8) + 8
}

/// A built-in reduction.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Op {
    Sum,
    Prod,
    Mean,
    Max,
    Min,
    All,
    Any,
    ArgMax,
    ArgMin,
    Var,
    Std,
    NanSum,
    NanMean,
    NanMax,
    NanMin,
    NanArgMax,
    NanArgMin,
    CountNonzero,
}

impl Op {
    fn name(self) -> &'static str {
        match self {
            Op::Sum => "sum",
            Op::Prod => "prod",
            Op::Mean => "mean",
            Op::Max => "max",
            Op::Min => "min",
            Op::All => "all",
            Op::Any => "any",
            Op::ArgMax => "argmax",
            Op::ArgMin => "argmin",
            Op::Var => "var",
            Op::Std => "std",
            Op::NanSum => "nansum",
            Op::NanMean => "nanmean",
            Op::NanMax => "nanmax",
            Op::NanMin => "nanmin",
            Op::NanArgMax => "nanargmax",
            Op::NanArgMin => "nanargmin",
            Op::CountNonzero => "count_nonzero",
        }
    }

    fn has_identity(self) -> bool {
        !matches!(
            self,
            Op::Max | Op::Min | Op::ArgMax | Op::ArgMin | Op::NanMax | Op::NanMin | Op::NanArgMax | Op::NanArgMin
        )
    }

    /// Whether the kernel takes `double ddof` after the map's parameters.
    fn has_ddof(self) -> bool {
        matches!(self, Op::Var | Op::Std)
    }

    /// Whether values reduce as `cc_moments` (count, mean, squared deviations).
    fn is_moments(self) -> bool {
        matches!(self, Op::Var | Op::Std | Op::NanMean)
    }

    fn is_arg(self) -> bool {
        matches!(self, Op::ArgMax | Op::ArgMin | Op::NanArgMax | Op::NanArgMin)
    }

    /// Whether values of `input` reduce as `cc_arg` (a value and its index): the indices of
    /// extremes, and the complex extremes, so that the first NaN and the first of equal
    /// extremes come back as NumPy's sequential loop finds them, whatever order the threads
    /// combine in (complex values that compare equal can differ in the signs of zero parts,
    /// and NaNs in their other part).
    fn is_indexed(self, input: DType) -> bool {
        self.is_arg() || (input.is_complex() && matches!(self, Op::Max | Op::Min | Op::NanMax | Op::NanMin))
    }

    /// Whether NaN values are skipped (the `nan` forms).
    fn skips_nan(self) -> bool {
        matches!(self, Op::NanMax | Op::NanMin | Op::NanArgMax | Op::NanArgMin)
    }

    /// Whether the greatest value is taken (else the least), for the extremes.
    fn is_greatest(self) -> bool {
        matches!(self, Op::Max | Op::NanMax | Op::ArgMax | Op::NanArgMax)
    }
}

/// What a reduction's map reads: its input parameters, the C++ value of one element (of
/// `input`'s compute type), and a key of both.
struct MapText<'m> {
    params: &'m str,
    value: &'m str,
    key: &'m [u32],
    prelude: &'static str,
}

/// A plain array `x` as the map.
fn array_map(input: DType) -> (String, [u32; 0]) {
    (format!("{} x", input.c_name()), [])
}

/// The reduction of `op` over values of type `input` read by `map`, giving `output` values:
/// kernels are made once per operation, type and map.
fn kernel_for(op: Op, input: DType, output: DType, map: &MapText<'_>) -> Result<Arc<ReductionKernel>> {
    let mut key = vec![op as u32, input as u32];
    key.extend_from_slice(map.key);
    kernel(KernelKey::Encoded("reduction", key), || {
        make_kernel(op, input, output, map)
    })
}

/// The reduction of `op` over values of type `input` read by `map`, giving `output` values.
fn make_kernel(op: Op, input: DType, output: DType, map: &MapText<'_>) -> Result<ReductionKernel> {
    let compute = input.compute_c_name();
    // Sums, products and means accumulate in the output's type, `f32` for the half types.
    let accumulate = match output {
        DType::F16 | DType::BF16 => "float",
        other => other.c_name(),
    };
    let x = format!("({})", map.value);
    let (map_expr, reduce, post, identity, reduce_type) = match op {
        _ if op.is_indexed(input) => (
            match (op.is_arg() && op.skips_nan(), op.is_greatest()) {
                (true, true) => format!("cc_make_nanarg<_type_value>({x}, i, true)"),
                (true, false) => format!("cc_make_nanarg<_type_value>({x}, i, false)"),
                (false, _) => format!("cc_make_arg<_type_value>({x}, i)"),
            },
            match (op, op.is_greatest()) {
                (Op::NanArgMax | Op::NanArgMin, true) => "cc_nanarg_best(a, b, true)",
                (Op::NanArgMax | Op::NanArgMin, false) => "cc_nanarg_best(a, b, false)",
                (Op::NanMax | Op::NanMin, true) => "cc_arg_best(a, b, true, true)",
                (Op::NanMax | Op::NanMin, false) => "cc_arg_best(a, b, false, true)",
                (_, true) => "cc_arg_best(a, b, true, false)",
                (_, false) => "cc_arg_best(a, b, false, false)",
            },
            match op {
                // The values: NumPy's extreme (the first NaN; for the `nan` forms, NumPy's
                // `fmax` and `fmin` reductions, the first NaN of a line of NaNs only).
                Op::Max | Op::Min | Op::NanMax | Op::NanMin => "y = a.v",
                // `-1` marks a line of NaNs only.
                Op::NanArgMax | Op::NanArgMin => {
                    "y = (a.i >= 0 && (a.i & CC_SEEN)) ? ((a.i & ~CC_SEEN) / (long long)inner) % (long long)n : -1"
                }
                _ => "y = (a.i / (long long)inner) % (long long)n",
            },
            "cc_no_arg<_type_value>()",
            "cc_arg<_type_value>".to_string(),
        ),
        Op::Sum => (x, "a + b", "y = a", "0", accumulate.to_string()),
        Op::Prod => (x, "a * b", "y = a", "1", accumulate.to_string()),
        Op::Mean => (x, "a + b", "y = a / (_type_reduce)n", "0", accumulate.to_string()),
        Op::Max => (
            x,
            "cc_max(a, b)",
            "y = a",
            "cc_lowest<_type_reduce>()",
            compute.to_string(),
        ),
        Op::Min => (
            x,
            "cc_min(a, b)",
            "y = a",
            "cc_highest<_type_reduce>()",
            compute.to_string(),
        ),
        Op::All => (format!("cc_truthy{x}"), "a && b", "y = a", "true", "bool".to_string()),
        Op::Any => (format!("cc_truthy{x}"), "a || b", "y = a", "false", "bool".to_string()),
        Op::NanSum => (
            format!("cc_nan_to_zero<_type_reduce>{x}"),
            "a + b",
            "y = a",
            "0",
            accumulate.to_string(),
        ),
        Op::NanMax | Op::NanMin => (
            x,
            if op == Op::NanMax {
                "cc_nanmax(a, b)"
            } else {
                "cc_nanmin(a, b)"
            },
            "y = a",
            match (input.is_float(), op) {
                (true, _) => "cc_nan()",
                (false, Op::NanMax) => "cc_lowest<_type_reduce>()",
                (false, _) => "cc_highest<_type_reduce>()",
            },
            compute.to_string(),
        ),
        Op::CountNonzero => (
            format!("(long long)cc_truthy{x}"),
            "a + b",
            "y = a",
            "0",
            "long long".to_string(),
        ),
        Op::Var | Op::Std | Op::NanMean if input.is_complex() => (
            match op {
                Op::NanMean => format!("cc_nan_cmoment{x}"),
                _ => format!("cc_cmoment{x}"),
            },
            "cc_ccombine(a, b)",
            match op {
                Op::Var => "y = cc_cvariance(a, ddof)",
                Op::Std => "y = sqrt(cc_cvariance(a, ddof))",
                _ => "y = a.n > 0.0 ? _type_y(a.re, a.im) : _type_y(cc_nan(), cc_nan())",
            },
            "cc_no_cmoments()",
            "cc_cmoments".to_string(),
        ),
        Op::Var | Op::Std | Op::NanMean => (
            match op {
                Op::NanMean => format!("cc_nan_moment{x}"),
                _ => format!("cc_moment{x}"),
            },
            "cc_combine(a, b)",
            match op {
                Op::Var => "y = cc_variance(a, ddof)",
                Op::Std => "y = sqrt(cc_variance(a, ddof))",
                _ => "y = a.n > 0.0 ? a.mean : cc_nan()",
            },
            "cc_no_moments()",
            "cc_moments".to_string(),
        ),
        Op::ArgMax | Op::ArgMin | Op::NanArgMax | Op::NanArgMin => unreachable!("indexed above"),
    };
    let in_params = match (op.is_arg(), op.has_ddof()) {
        (true, _) => format!("{}, unsigned long long inner", map.params),
        (_, true) => format!("{}, double ddof", map.params),
        _ => map.params.to_string(),
    };
    let name = match map.key.is_empty() {
        true => format!("cuda_core_{}_{}", op.name(), input.name()),
        false => format!("cuda_core_{}_expr_{}", op.name(), input.name()),
    };
    let indexed = op.is_indexed(input);
    let declared = match indexed || op.is_moments() {
        true => None,
        false => Some(reduce_type.as_str()),
    };
    let reduction = ReductionKernel::new(
        &in_params,
        &format!("{} y", output.c_name()),
        &map_expr,
        reduce,
        post,
        identity,
        &name,
        declared,
    )?;
    Ok(match (indexed, op.is_moments()) {
        (true, _) => reduction
            .with_prelude(&format!("typedef {compute} _type_value;\n{PRELUDE}{}", map.prelude))
            // The compute type (`float` for the half types) has at most 8 bytes when the
            // input has.
            .with_struct_reduce_type(&reduce_type, arg_size(input.size())),
        (_, true) => reduction
            .with_prelude(&format!(
                "typedef {} _type_y;\n{PRELUDE}{}",
                output.c_name(),
                map.prelude
            ))
            .with_struct_reduce_type(
                &reduce_type,
                match input.is_complex() {
                    true => COMPLEX_MOMENTS_SIZE,
                    false => MOMENTS_SIZE,
                },
            ),
        _ => reduction.with_prelude(&format!("{PRELUDE}{}", map.prelude)),
    })
}

/// The output of reducing `shape` with `op` along `axes` (`None`: all of them) on `stream`,
/// the axes as indices, and whether a kernel must run (`false`: the output is empty); errors for
/// bad axes and for reductions without identity of no elements.
fn prepare<R: Element>(
    op: Op,
    shape: &[usize],
    stream: &Stream,
    axes: Option<&Axes>,
    keepdims: bool,
) -> Result<(DeviceArray<R>, Vec<usize>, bool)> {
    let ndim = shape.len();
    let axes = axes.unwrap_or(&Axes::ALL).indices(ndim)?;
    let reduced = reduced_axes(op.name(), ndim, &axes)?;
    let count: usize = axes.iter().map(|&a| shape[a]).product();
    let out = DeviceArray::<R>::empty(stream, reduced_shape(shape, &reduced, keepdims))?;
    if out.is_empty() {
        return Ok((out, axes, false));
    }
    if count == 0 && !op.has_identity() {
        return Err(Error::InvalidValue(format!(
            "{}: an array of shape {shape:?} has no elements along axes {axes:?}, and {0} has no identity",
            op.name(),
        )));
    }
    Ok((out, axes, true))
}

/// Launches `kernel` over `inputs` (C-contiguous, of `shape`) into `out`, with the `ddof` of
/// `var` and `std`.
#[allow(clippy::too_many_arguments)]
fn launch<'o, R: Element>(
    kernel: &ReductionKernel,
    op: Op,
    shape: &[usize],
    stream: &Stream,
    mut args: Vec<Arg<'o>>,
    axes: &[usize],
    ddof: f64,
    out: &'o mut DeviceArray<R>,
) -> Result<()> {
    let inner: u64 = match axes {
        [axis] => shape[axis + 1..].iter().product::<usize>() as u64,
        _ => 1,
    };
    if op.is_arg() {
        args.push(Arg::from(inner));
    }
    if op.has_ddof() {
        args.push(Arg::scalar(ddof));
    }
    args.push(Arg::from(out));
    let axes = match axes.len() == shape.len() {
        true => None,
        false => Some(axes),
    };
    kernel.launch_generated(stream, &args, axes)
}

/// Reduces `array` with `op` along `axes` (`None`: all of them) into a new array on its stream.
fn reduce<T: Element, R: Element>(
    array: &DeviceArray<T>,
    op: Op,
    axes: Option<&Axes>,
    keepdims: bool,
    ddof: f64,
) -> Result<DeviceArray<R>> {
    let stream = array.stream().clone();
    let (mut out, axes, run) = prepare::<R>(op, array.shape(), &stream, axes, keepdims)?;
    if !run {
        return Ok(out);
    }
    let (params, key) = array_map(T::DTYPE);
    let map = MapText {
        params: &params,
        value: "x",
        key: &key,
        prelude: "",
    };
    let kernel = kernel_for(op, T::DTYPE, R::DTYPE, &map)?;
    let copy;
    let input = match array.is_contiguous() {
        true => array,
        false => {
            copy = array.to_contiguous()?;
            &copy
        }
    };
    launch(
        &kernel,
        op,
        array.shape(),
        &stream,
        vec![Arg::from(input)],
        &axes,
        ddof,
        &mut out,
    )?;
    Ok(out)
}

/// Reduces the values of `expr` with `op` along `axes`: one kernel whose map is the expression
/// (no temporary) when its arrays are C-contiguous of its shape; otherwise the expression is
/// evaluated once into a temporary that is then reduced.
fn reduce_expr<T: Scalars, R: Element>(
    expr: Expr<'_, T>,
    op: Op,
    axes: Option<&Axes>,
    keepdims: bool,
    ddof: f64,
) -> Result<DeviceArray<R>> {
    expr.check()?;
    let Some(fused) = expr.fused_map()? else {
        return reduce(&expr.eval()?, op, axes, keepdims, ddof);
    };
    let (mut out, axes, run) = prepare::<R>(op, &fused.shape, &fused.stream, axes, keepdims)?;
    if !run {
        return Ok(out);
    }
    let map = MapText {
        params: &fused.params,
        value: &fused.value,
        key: &fused.key,
        prelude: EXPR_PRELUDE,
    };
    let kernel = kernel_for(op, T::DTYPE, R::DTYPE, &map)?;
    launch(
        &kernel,
        op,
        &fused.shape,
        &fused.stream,
        fused.args,
        &axes,
        ddof,
        &mut out,
    )?;
    Ok(out)
}

macro_rules! reductions {
    ($($(#[$doc:meta])* $whole:ident, $(#[$axes_doc:meta])* $along:ident => $op:ident, $out:ty;)*) => {
        impl<T: Element> DeviceArray<T> {
            $(
                $(#[$doc])*
                pub fn $whole(&self) -> Result<DeviceArray<$out>> {
                    reduce(self, Op::$op, None, false, 0.0)
                }

                $(#[$axes_doc])*
                pub fn $along(&self, axes: impl Into<Axes>, keepdims: bool) -> Result<DeviceArray<$out>> {
                    reduce(self, Op::$op, Some(&axes.into()), keepdims, 0.0)
                }
            )*
        }

        /// Reductions of an expression's values: one [`ReductionKernel`] whose map is the
        /// expression (the code its element-wise kernel would run), reading the operands once
        /// and writing no temporary, when every array operand is C-contiguous with the
        /// expression's shape; otherwise (broadcast or strided operands) the expression is
        /// evaluated once and the result reduced. They run on the stream of the first array.
        impl<'a, T: Scalars> Expr<'a, T> {
            $(
                $(#[$doc])*
                pub fn $whole(self) -> Result<DeviceArray<$out>> {
                    reduce_expr(self, Op::$op, None, false, 0.0)
                }

                $(#[$axes_doc])*
                pub fn $along(self, axes: impl Into<Axes>, keepdims: bool) -> Result<DeviceArray<$out>> {
                    reduce_expr(self, Op::$op, Some(&axes.into()), keepdims, 0.0)
                }
            )*
        }
    };
}

reductions! {
    /// The sum of every element, a 0-d array (NumPy's `x.sum()`), in [`Element::Sum`].
    sum,
    /// Sums along `axes`: the shape without them, or with extent 1 in their place when
    /// `keepdims` (NumPy's `x.sum(axis=..., keepdims=...)`). `axes` is one axis, a list, or
    /// `None` / [`Axes::ALL`] for every axis; negative axes count from the end, and an axis
    /// named twice is an error.
    sum_axes => Sum, T::Sum;
    /// The product of every element, a 0-d array, in [`Element::Sum`].
    prod,
    /// Products along `axes` (see [`sum_axes`](Self::sum_axes)).
    prod_axes => Prod, T::Sum;
    /// The arithmetic mean of every element, a 0-d array, in [`Element::Mean`] (NaN when empty).
    mean,
    /// Means along `axes` (see [`sum_axes`](Self::sum_axes)).
    mean_axes => Mean, T::Mean;
    /// The greatest element, a 0-d array; NaN if any is NaN; an error when empty. Complex values
    /// compare lexicographically (real parts, then imaginary parts), as in NumPy, which returns
    /// the first value holding a NaN, else the first of equal greatest ones.
    max,
    /// Greatest elements along `axes` (see [`sum_axes`](Self::sum_axes)).
    max_axes => Max, T;
    /// The least element, a 0-d array; NaN if any is NaN; an error when empty.
    min,
    /// Least elements along `axes` (see [`sum_axes`](Self::sum_axes)).
    min_axes => Min, T;
    /// Whether every element is nonzero, a 0-d array (`true` when empty).
    all,
    /// Whether every element along `axes` is nonzero (see [`sum_axes`](Self::sum_axes)).
    all_axes => All, Bool;
    /// Whether any element is nonzero, a 0-d array (`false` when empty).
    any,
    /// Whether any element along `axes` is nonzero (see [`sum_axes`](Self::sum_axes)).
    any_axes => Any, Bool;
    /// The sum of every element that is not NaN, a 0-d array (NumPy's `nansum`; `0` when
    /// all are NaN).
    nansum,
    /// Sums without NaNs along `axes` (see [`sum_axes`](Self::sum_axes)).
    nansum_axes => NanSum, T::Sum;
    /// The mean of the elements that are not NaN (NumPy's `nanmean`: NaN when there are none),
    /// accumulated in `f64` as [`var`](Self::var) is.
    nanmean,
    /// Means without NaNs along `axes` (see [`sum_axes`](Self::sum_axes)).
    nanmean_axes => NanMean, T::Mean;
    /// The greatest element ignoring NaNs (NumPy's `nanmax`: NaN when all are NaN; an error
    /// when empty).
    nanmax,
    /// Greatest elements ignoring NaNs along `axes` (see [`sum_axes`](Self::sum_axes)).
    nanmax_axes => NanMax, T;
    /// The least element ignoring NaNs (NumPy's `nanmin`).
    nanmin,
    /// Least elements ignoring NaNs along `axes` (see [`sum_axes`](Self::sum_axes)).
    nanmin_axes => NanMin, T;
    /// The number of nonzero elements, a 0-d `i64` array (NumPy's `count_nonzero`).
    count_nonzero,
    /// Nonzero elements counted along `axes` (see [`sum_axes`](Self::sum_axes)).
    count_nonzero_axes => CountNonzero, i64;
}

macro_rules! moments {
    ($($(#[$doc:meta])* $whole:ident, $(#[$axes_doc:meta])* $along:ident => $op:ident;)*) => {
        impl<T: Element> DeviceArray<T> {
            $(
                $(#[$doc])*
                pub fn $whole(&self, ddof: usize) -> Result<DeviceArray<T::Var>> {
                    reduce(self, Op::$op, None, false, ddof as f64)
                }

                $(#[$axes_doc])*
                pub fn $along(&self, axes: impl Into<Axes>, keepdims: bool, ddof: usize) -> Result<DeviceArray<T::Var>> {
                    reduce(self, Op::$op, Some(&axes.into()), keepdims, ddof as f64)
                }
            )*
        }

        impl<'a, T: Scalars> Expr<'a, T> {
            $(
                $(#[$doc])*
                pub fn $whole(self, ddof: usize) -> Result<DeviceArray<T::Var>> {
                    reduce_expr(self, Op::$op, None, false, ddof as f64)
                }

                $(#[$axes_doc])*
                pub fn $along(self, axes: impl Into<Axes>, keepdims: bool, ddof: usize) -> Result<DeviceArray<T::Var>> {
                    reduce_expr(self, Op::$op, Some(&axes.into()), keepdims, ddof as f64)
                }
            )*
        }
    };
}

moments! {
    /// The variance of every element, `sum(|x - mean|^2) / (n - ddof)`, a 0-d array of
    /// [`Element::Var`] (real for complex elements: the real parts' variance plus the imaginary
    /// parts'; NumPy's `var(ddof=...)`; NaN when `n - ddof <= 0` and every element is
    /// equal, else inf, as NumPy divides by `max(n - ddof, 0)`).
    ///
    /// One pass over memory: each thread keeps a count, a mean and a sum of squared
    /// deviations in `f64` and the partial results are merged by Chan et al.'s pairwise
    /// formula (Welford's update for single values). Unlike a sum and a sum of squares, this
    /// does not cancel catastrophically when the mean is large against the spread (f32 data
    /// around 1e4 keeps its variance exact to f64 rounding of the inputs), and `f64` for every
    /// input type costs little next to reading the memory.
    var,
    /// Variances along `axes` (see [`sum_axes`](Self::sum_axes)).
    var_axes => Var;
    /// The standard deviation, `sqrt` of [`var`](Self::var).
    std,
    /// Standard deviations along `axes` (see [`sum_axes`](Self::sum_axes)).
    std_axes => Std;
}

impl<T: Element> DeviceArray<T> {
    /// The row-major index of the greatest element (the first NaN if there is one, else the
    /// first of equal greatest ones), a 0-d array; an error when empty.
    pub fn argmax(&self) -> Result<DeviceArray<i64>> {
        reduce(self, Op::ArgMax, None, false, 0.0)
    }

    /// The index along `axis` of the greatest element of each line along it (see
    /// [`argmax`](Self::argmax)); `keepdims` keeps `axis` with extent 1. A negative `axis`
    /// counts from the end.
    pub fn argmax_axis(&self, axis: impl Into<Axis>, keepdims: bool) -> Result<DeviceArray<i64>> {
        reduce(self, Op::ArgMax, Some(&Axes::from(axis.into())), keepdims, 0.0)
    }

    /// The row-major index of the least element (the first NaN if there is one, else the first
    /// of equal least ones), a 0-d array; an error when empty.
    pub fn argmin(&self) -> Result<DeviceArray<i64>> {
        reduce(self, Op::ArgMin, None, false, 0.0)
    }

    /// The index along `axis` of the least element of each line along it (see
    /// [`argmin`](Self::argmin)); `keepdims` keeps `axis` with extent 1.
    pub fn argmin_axis(&self, axis: impl Into<Axis>, keepdims: bool) -> Result<DeviceArray<i64>> {
        reduce(self, Op::ArgMin, Some(&Axes::from(axis.into())), keepdims, 0.0)
    }
}

impl<T: Element> DeviceArray<T> {
    /// The row-major index of the greatest element ignoring NaNs (NumPy's `nanargmax`), a 0-d
    /// array. Like NumPy, it reads each NaN as `-inf` (complex: `-inf + 0j`), so a NaN's index
    /// comes back when no other value is greater. As NumPy raises `ValueError`, an array whose elements are all NaN is an
    /// [`Error::InvalidValue`]; for float types that check reads the result back (it waits for
    /// the array's stream). Empty arrays are an error.
    pub fn nanargmax(&self) -> Result<DeviceArray<i64>> {
        without_all_nan(reduce(self, Op::NanArgMax, None, false, 0.0)?, Op::NanArgMax, T::DTYPE)
    }

    /// The index along `axis` of the greatest element of each line ignoring NaNs (see
    /// [`nanargmax`](Self::nanargmax): a line of NaNs only is an error, found with one more
    /// small reduction and a read back).
    pub fn nanargmax_axis(&self, axis: impl Into<Axis>, keepdims: bool) -> Result<DeviceArray<i64>> {
        let indices = reduce(self, Op::NanArgMax, Some(&Axes::from(axis.into())), keepdims, 0.0)?;
        without_all_nan(indices, Op::NanArgMax, T::DTYPE)
    }

    /// The row-major index of the least element ignoring NaNs (NumPy's `nanargmin`, which reads
    /// NaN as `inf`; see [`nanargmax`](Self::nanargmax)).
    pub fn nanargmin(&self) -> Result<DeviceArray<i64>> {
        without_all_nan(reduce(self, Op::NanArgMin, None, false, 0.0)?, Op::NanArgMin, T::DTYPE)
    }

    /// The index along `axis` of the least element of each line ignoring NaNs (see
    /// [`nanargmax_axis`](Self::nanargmax_axis)).
    pub fn nanargmin_axis(&self, axis: impl Into<Axis>, keepdims: bool) -> Result<DeviceArray<i64>> {
        let indices = reduce(self, Op::NanArgMin, Some(&Axes::from(axis.into())), keepdims, 0.0)?;
        without_all_nan(indices, Op::NanArgMin, T::DTYPE)
    }
}

/// `indices` of a `nanargmax`/`nanargmin` of `dtype` values, or NumPy's error for a line that is
/// all NaN (the kernel marks it `-1`); integer types have no NaN, so nothing is read back.
fn without_all_nan(indices: DeviceArray<i64>, op: Op, dtype: DType) -> Result<DeviceArray<i64>> {
    if !(dtype.is_float() || dtype.is_complex()) || indices.is_empty() {
        return Ok(indices);
    }
    let least = match indices.len() {
        1 => indices.item()?,
        _ => indices.min()?.item()?,
    };
    match least < 0 {
        true => Err(Error::InvalidValue(format!(
            "{}: all-NaN slice encountered (NumPy raises ValueError)",
            op.name()
        ))),
        false => Ok(indices),
    }
}

/// The type of a weighted average of `T` values with `W` weights, as NumPy's `average`:
/// the promoted type with `f64` for integer and `Bool` values (`f64` unless both are floats).
pub type AverageOf<T, W> = <<T as Scalars>::WithFloat as Promote<W>>::Output;

/// A weighted average and the sum of its weights, of the average's shape (NumPy's
/// `average(..., returned=True)`), from [`DeviceArray::average`].
#[derive(Debug)]
pub struct Average<R: Element> {
    /// `sum(x * w) / sum(w)` over the reduced axes.
    pub average: DeviceArray<R>,
    /// `sum(w)` over the reduced axes.
    pub weight_sum: DeviceArray<R>,
}

impl<T: Scalars> DeviceArray<T> {
    /// NumPy's weighted `average` over `axes` (`None`: every element; negative axes count from
    /// the end) with `keepdims`:
    /// `sum(x * w) / sum(w)` in [`AverageOf`] (the unweighted average is
    /// [`mean`](Self::mean)). `weights` has the array's shape (then `sum(x * w)` is one fused
    /// reduction reading both once), or is 1-D with the length of the one axis in `axes`, as in
    /// NumPy. Weights that sum to zero along a line are an [`Error::InvalidValue`] (NumPy's
    /// `ZeroDivisionError`; the check reads back whether any weight sum is zero, so it waits for
    /// the stream).
    ///
    /// ```no_run
    /// # use cuda_core::{Device, DeviceArray};
    /// # fn main() -> cuda_core::Result<()> {
    /// # let stream = Device::new(0)?.create_stream()?;
    /// let x = DeviceArray::from_slice(&stream, &[1i32, 2, 3, 4])?.reshape([2, 2])?;
    /// let w = DeviceArray::from_slice(&stream, &[3.0f32, 1.0])?;
    /// let along_rows = x.average(&w, -1, false)?;
    /// assert_eq!(along_rows.average.to_vec()?, [1.25, 3.25]); // f64, as NumPy
    /// assert_eq!(along_rows.weight_sum.to_vec()?, [4.0, 4.0]);
    /// # Ok(())
    /// # }
    /// ```
    pub fn average<W>(
        &self,
        weights: &DeviceArray<W>,
        axes: impl Into<Axes>,
        keepdims: bool,
    ) -> Result<Average<AverageOf<T, W>>>
    where
        W: Scalars,
        T::WithFloat: Promote<W>,
    {
        let axes = axes.into();
        let values: Expr<'_, AverageOf<T, W>> = cast_to(self.into_expr());
        if weights.shape() == self.shape() {
            let weighted: Expr<'_, AverageOf<T, W>> = binary(
                BinaryOp::Mul,
                values,
                cast_to::<_, AverageOf<T, W>>(weights.into_expr()),
            );
            let total: DeviceArray<AverageOf<T, W>> = reduce_expr(weighted, Op::Sum, Some(&axes), keepdims, 0.0)?;
            let weight_sum: DeviceArray<AverageOf<T, W>> = reduce_expr(
                cast_to::<_, AverageOf<T, W>>(weights.into_expr()),
                Op::Sum,
                Some(&axes),
                keepdims,
                0.0,
            )?;
            nonzero_weights(&weight_sum)?;
            let average = binary(BinaryOp::Div, total.into_expr(), weight_sum.into_expr()).eval()?;
            return Ok(Average { average, weight_sum });
        }
        let indices = axes.indices(self.ndim())?;
        let axis = match indices[..] {
            [axis] if !axes.is_all() && weights.ndim() == 1 && weights.len() == self.shape()[axis] => axis,
            _ => {
                return Err(Error::InvalidValue(format!(
                    "average: weights of shape {:?} do not fit an array of shape {:?} along axes {indices:?} (the array's shape, or 1-D with the length of the one axis)",
                    weights.shape(),
                    self.shape()
                )))
            }
        };
        // 1-D weights stand along `axis`: a view with extent 1 elsewhere, broadcast.
        let mut along = vec![1; self.ndim()];
        along[axis] = weights.len();
        let compact;
        let line = match weights.is_contiguous() {
            true => weights,
            false => {
                compact = weights.to_contiguous()?;
                &compact
            }
        };
        let line = line.reshape(along)?;
        let weighted: Expr<'_, AverageOf<T, W>> =
            binary(BinaryOp::Mul, values, cast_to::<_, AverageOf<T, W>>(line.into_expr()));
        let total: DeviceArray<AverageOf<T, W>> =
            reduce_expr(weighted, Op::Sum, Some(&Axes::from(axis)), keepdims, 0.0)?;
        let sum: DeviceArray<AverageOf<T, W>> = reduce_expr(
            cast_to::<_, AverageOf<T, W>>(weights.into_expr()),
            Op::Sum,
            None,
            false,
            0.0,
        )?;
        nonzero_weights(&sum)?;
        let weight_sum = sum.broadcast_to(total.shape().to_vec())?.to_contiguous()?;
        let average = binary(BinaryOp::Div, total.into_expr(), sum.into_expr()).eval()?;
        Ok(Average { average, weight_sum })
    }
}

/// NumPy's `ZeroDivisionError` of `average` when a weight sum is zero.
fn nonzero_weights<R: Scalars>(weight_sum: &DeviceArray<R>) -> Result<()> {
    if weight_sum.is_empty() || weight_sum.eq(0).any()?.item()? == Bool::FALSE {
        return Ok(());
    }
    Err(Error::InvalidValue(
        "average: the weights sum to zero, so the average cannot be normalized (NumPy raises ZeroDivisionError)".into(),
    ))
}

impl<T: Scalars + Promote<T, Output = T>> DeviceArray<T> {
    /// The range of the values, `max - min`, a 0-d array of `T` (NumPy's `ptp`: integers wrap,
    /// NaN if any is NaN; an error when empty, and for `Bool`, whose subtraction NumPy refuses):
    /// two reductions and a subtraction.
    pub fn ptp(&self) -> Result<DeviceArray<T>> {
        let (high, low) = (self.max()?, self.min()?);
        (&high - &low).eval()
    }

    /// Ranges along `axes` (see [`sum_axes`](Self::sum_axes)).
    pub fn ptp_axes(&self, axes: impl Into<Axes>, keepdims: bool) -> Result<DeviceArray<T>> {
        let axes = axes.into();
        let (high, low) = (self.max_axes(axes.clone(), keepdims)?, self.min_axes(axes, keepdims)?);
        (&high - &low).eval()
    }
}

/// NumPy's `allclose`: whether every pair of `a` and `b` (broadcast together) is close by
/// [`ExprOps::isclose`]'s rule, as a host `bool`: one fused reduction, then a wait for its
/// stream.
pub fn allclose<'a, A, B>(a: A, b: B, rtol: f64, atol: f64, equal_nan: bool) -> Result<bool>
where
    A: IntoExpr<'a>,
    B: IntoExpr<'a>,
    A::Elem: Promote<B::Elem>,
{
    Ok(a.isclose(b, rtol, atol, equal_nan).all()?.item()? == Bool::TRUE)
}

/// NumPy's `array_equal`: whether `a` and `b` have the same shape and equal elements (compared
/// in the promoted type; with `equal_nan`, NaNs in the same places count as equal), as a host
/// `bool`. Different shapes are `false`, not broadcast.
pub fn array_equal<A, B>(a: &DeviceArray<A>, b: &DeviceArray<B>, equal_nan: bool) -> Result<bool>
where
    A: Scalars + Promote<B>,
    B: Scalars,
{
    if a.shape() != b.shape() {
        return Ok(false);
    }
    let same = match equal_nan {
        true => a.eq(b).logical_or(a.isnan().logical_and(b.isnan())).all()?,
        false => a.eq(b).all()?,
    };
    Ok(same.item()? == Bool::TRUE)
}

impl<T: Scalars> Expr<'_, T> {
    /// The row-major index of the greatest value of the expression, fused as
    /// [`sum`](Self::sum) is (see [`DeviceArray::argmax`]).
    pub fn argmax(self) -> Result<DeviceArray<i64>> {
        reduce_expr(self, Op::ArgMax, None, false, 0.0)
    }

    /// The index along `axis` of the greatest value of each line (see [`DeviceArray::argmax_axis`]).
    pub fn argmax_axis(self, axis: impl Into<Axis>, keepdims: bool) -> Result<DeviceArray<i64>> {
        reduce_expr(self, Op::ArgMax, Some(&Axes::from(axis.into())), keepdims, 0.0)
    }

    /// The row-major index of the least value of the expression (see [`DeviceArray::argmin`]).
    pub fn argmin(self) -> Result<DeviceArray<i64>> {
        reduce_expr(self, Op::ArgMin, None, false, 0.0)
    }

    /// The index along `axis` of the least value of each line (see [`DeviceArray::argmin_axis`]).
    pub fn argmin_axis(self, axis: impl Into<Axis>, keepdims: bool) -> Result<DeviceArray<i64>> {
        reduce_expr(self, Op::ArgMin, Some(&Axes::from(axis.into())), keepdims, 0.0)
    }

    /// The row-major index of the greatest value ignoring NaNs (see [`DeviceArray::nanargmax`]).
    pub fn nanargmax(self) -> Result<DeviceArray<i64>> {
        without_all_nan(
            reduce_expr(self, Op::NanArgMax, None, false, 0.0)?,
            Op::NanArgMax,
            T::DTYPE,
        )
    }

    /// The row-major index of the least value ignoring NaNs (see [`DeviceArray::nanargmin`]).
    pub fn nanargmin(self) -> Result<DeviceArray<i64>> {
        without_all_nan(
            reduce_expr(self, Op::NanArgMin, None, false, 0.0)?,
            Op::NanArgMin,
            T::DTYPE,
        )
    }
}

impl<T: Element> DeviceArray<T> {
    /// The value of a one-element array (NumPy's `x.item()`, the `float(cp.sum(z))` of CuPy):
    /// waits for the array's stream and reads it back. Arrays of any other size are an error.
    pub fn item(&self) -> Result<T> {
        if self.len() != 1 {
            return Err(Error::InvalidValue(format!(
                "item: the array has shape {:?} ({} elements); only a one-element array converts to a value",
                self.shape(),
                self.len()
            )));
        }
        Ok(self.to_vec()?[0])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::array::ArgType;
    use crate::{Arch, CompileTarget, Program, ProgramOptions};

    const ALL_OPS: [Op; 18] = [
        Op::Sum,
        Op::Prod,
        Op::Mean,
        Op::Max,
        Op::Min,
        Op::All,
        Op::Any,
        Op::ArgMax,
        Op::ArgMin,
        Op::Var,
        Op::Std,
        Op::NanSum,
        Op::NanMean,
        Op::NanMax,
        Op::NanMin,
        Op::NanArgMax,
        Op::NanArgMin,
        Op::CountNonzero,
    ];

    fn output_of<T: Element>(op: Op) -> DType {
        match op {
            Op::Sum | Op::Prod | Op::NanSum => <T::Sum as Element>::DTYPE,
            Op::Mean | Op::NanMean => <T::Mean as Element>::DTYPE,
            Op::Var | Op::Std => <T::Var as Element>::DTYPE,
            Op::Max | Op::Min | Op::NanMax | Op::NanMin => T::DTYPE,
            Op::All | Op::Any => DType::Bool,
            Op::ArgMax | Op::ArgMin | Op::NanArgMax | Op::NanArgMin | Op::CountNonzero => DType::I64,
        }
    }

    /// A one-operand expression of type `T` (a host scalar standing in for an array).
    fn value<'a, T: Element>() -> Expr<'a, T> {
        Expr::scalar(T::DTYPE, crate::array::routines::math::ScalarValue::int(1))
    }

    /// Every reduction of `expr` generates the expression as its map (no temporary: the
    /// kernel's inputs are the expression's operands) and compiles, whole and along axes.
    fn expression_reductions_compile<T: Scalars>(expr: Expr<'_, T>, fragment: &str) {
        let options = ProgramOptions {
            cache: false,
            ..ProgramOptions::for_arch(Arch::Sm(90))
        };
        let (params, value, key) = crate::array::routines::math::map_text(&expr);
        assert!(value.contains(fragment), "{value}");
        let map = MapText {
            params: &params,
            value: &value,
            key: &key,
            prelude: EXPR_PRELUDE,
        };
        for op in ALL_OPS {
            let output = output_of::<T>(op);
            let kernel = kernel_for(op, T::DTYPE, output, &map).unwrap();
            let (plain_params, plain_key) = array_map(T::DTYPE);
            let plain_map = MapText {
                params: &plain_params,
                value: "x",
                key: &plain_key,
                prelude: "",
            };
            let plain = kernel_for(op, T::DTYPE, output, &plain_map).unwrap();
            assert!(!Arc::ptr_eq(&kernel, &plain), "another kernel than the array's");
            let mut signature: Vec<ArgType> = params
                .split(", ")
                .map(|p| ArgType::Array(DType::from_c_name(p.rsplit_once(' ').unwrap().0).unwrap()))
                .collect();
            if op.is_arg() {
                signature.push(ArgType::Scalar(DType::U64));
            }
            if op.has_ddof() {
                signature.push(ArgType::Scalar(DType::F64));
            }
            signature.push(ArgType::Array(output));
            for source in [
                kernel.source_for(&signature).unwrap(),
                kernel.axis_source_for(&signature).unwrap(),
            ] {
                assert!(source.contains(&value), "the map is the expression: {source}");
                if let Err(error) = Program::new(source.clone(), options.clone()).compile(CompileTarget::Ptx) {
                    panic!("{} of {}: {error}\n{source}", op.name(), T::DTYPE);
                }
            }
        }
    }

    #[test]
    fn reductions_of_expressions_fuse_the_expression_into_the_map() {
        use crate::array::routines::math::ExprOps;
        expression_reductions_compile((value::<f32>() - value::<f32>()).abs(), "_cc_abs");
        expression_reductions_compile(value::<half::f16>() * value::<half::f16>(), "cuda_core_f16");
        expression_reductions_compile(value::<i32>().pow(value::<u8>()), "_cc_pow");
        expression_reductions_compile(value::<half::bf16>().gt(0.5), ">");
        expression_reductions_compile((value::<u8>() + value::<i8>()).maximum(2), "_cc_max");
        expression_reductions_compile(value::<num_complex::Complex<f32>>().conj() * value::<f64>(), "_cc_conj");
    }

    /// Compiles the whole-array and axis forms of every built-in reduction of `T`.
    fn compiles_for<T: Element>() {
        let options = ProgramOptions {
            cache: false,
            ..ProgramOptions::for_arch(Arch::Sm(90))
        };
        for op in ALL_OPS {
            let output = output_of::<T>(op);
            let (params, key) = array_map(T::DTYPE);
            let map = MapText {
                params: &params,
                value: "x",
                key: &key,
                prelude: "",
            };
            let kernel = kernel_for(op, T::DTYPE, output, &map).unwrap();
            let mut signature = vec![ArgType::Array(T::DTYPE)];
            if op.is_arg() {
                signature.push(ArgType::Scalar(DType::U64));
            }
            if op.has_ddof() {
                signature.push(ArgType::Scalar(DType::F64));
            }
            signature.push(ArgType::Array(output));
            for source in [
                kernel.source_for(&signature).unwrap(),
                kernel.axis_source_for(&signature).unwrap(),
            ] {
                if let Err(error) = Program::new(source.clone(), options.clone()).compile(CompileTarget::Ptx) {
                    panic!("{} of {}: {error}\n{source}", op.name(), T::DTYPE);
                }
            }
        }
    }

    #[test]
    fn every_reduction_compiles_for_every_element_type() {
        // One thread per element type: NVRTC compiles concurrently, and this is the longest
        // test of the crate on one thread.
        let types: [fn(); 15] = [
            compiles_for::<Bool>,
            compiles_for::<i8>,
            compiles_for::<i16>,
            compiles_for::<i32>,
            compiles_for::<i64>,
            compiles_for::<u8>,
            compiles_for::<u16>,
            compiles_for::<u32>,
            compiles_for::<u64>,
            compiles_for::<half::f16>,
            compiles_for::<half::bf16>,
            compiles_for::<f32>,
            compiles_for::<f64>,
            compiles_for::<num_complex::Complex<f32>>,
            compiles_for::<num_complex::Complex<f64>>,
        ];
        std::thread::scope(|scope| {
            for compile in types {
                scope.spawn(compile);
            }
        });
    }

    /// The host mirror of the prelude's `cc_arg` rules for complex values, so that they can be
    /// checked against NumPy in any combination order the threads use.
    mod indexed_model {
        use num_complex::Complex;

        pub type Z = Complex<f64>;
        const SEEN: i64 = 1 << 62;

        #[derive(Clone, Copy, Debug)]
        pub struct Indexed {
            pub v: Z,
            pub i: i64,
        }

        fn is_nan(z: Z) -> bool {
            z.re.is_nan() || z.im.is_nan()
        }

        /// `_cc_cx_lt` of complex.cuh.
        fn lt(a: Z, b: Z) -> bool {
            (a.re < b.re && !a.im.is_nan() && !b.im.is_nan()) || (a.re == b.re && a.im < b.im)
        }

        /// `cc_arg_best`.
        pub fn best(a: Indexed, b: Indexed, greatest: bool, skip_nan: bool) -> Indexed {
            if a.i < 0 {
                return b;
            }
            if b.i < 0 {
                return a;
            }
            let (an, bn) = (is_nan(a.v), is_nan(b.v));
            let first = if a.i < b.i { a } else { b };
            if an && bn {
                return first;
            }
            if an || bn {
                return if an != skip_nan { a } else { b };
            }
            if a.v == b.v {
                return first;
            }
            let better = if greatest { lt(b.v, a.v) } else { lt(a.v, b.v) };
            if better {
                a
            } else {
                b
            }
        }

        /// `cc_make_nanarg`.
        pub fn make_nanarg(v: Z, i: i64, greatest: bool) -> Indexed {
            match is_nan(v) {
                true => Indexed {
                    v: Z::new(if greatest { f64::NEG_INFINITY } else { f64::INFINITY }, 0.0),
                    i,
                },
                false => Indexed { v, i: i | SEEN },
            }
        }

        /// `cc_nanarg_best`.
        pub fn nanarg_best(mut a: Indexed, mut b: Indexed, greatest: bool) -> Indexed {
            if a.i < 0 {
                return b;
            }
            if b.i < 0 {
                return a;
            }
            let seen = (a.i | b.i) & SEEN;
            a.i &= !SEEN;
            b.i &= !SEEN;
            let mut r = best(a, b, greatest, false);
            r.i |= seen;
            r
        }

        /// The post-map of `nanargmax` and `nanargmin`: the index, or `-1` for NaNs only.
        pub fn nanarg_index(r: Indexed) -> i64 {
            match r.i >= 0 && r.i & SEEN != 0 {
                true => r.i & !SEEN,
                false => -1,
            }
        }

        /// `values` combined with `combine` as the kernels may: each of `threads` threads
        /// folding a grid-stride share from the identity, then the threads' results pairwise
        /// as a warp's shuffles do.
        pub fn reduce(values: &[Indexed], threads: usize, combine: &dyn Fn(Indexed, Indexed) -> Indexed) -> Indexed {
            let none = Indexed {
                v: Z::new(0.0, 0.0),
                i: -1,
            };
            let mut partial: Vec<Indexed> = (0..threads)
                .map(|t| {
                    values
                        .iter()
                        .skip(t)
                        .step_by(threads)
                        .fold(none, |acc, &x| combine(acc, x))
                })
                .collect();
            let mut d = threads.next_power_of_two() / 2;
            while d > 0 {
                for t in 0..d {
                    let other = partial.get(t + d).copied().unwrap_or(none);
                    partial[t] = combine(partial[t], other);
                }
                d /= 2;
            }
            partial[0]
        }
    }

    /// The extremes of complex values by index (the rule of the kernels' `cc_arg`), combined
    /// in several orders, are NumPy 2's: the first NaN and the first of equal extremes for
    /// `max`/`argmax`, the `fmax` reduction for `nanmax` (the first NaN of NaNs only), and
    /// `nanargmax` reading a NaN as `-inf + 0j` (so it can win) and refusing NaNs only.
    #[test]
    fn complex_extremes_by_index_are_numpys_in_any_combination_order() {
        use indexed_model::{best, make_nanarg, nanarg_best, nanarg_index, reduce, Indexed, Z};
        let (nan, inf) = (f64::NAN, f64::INFINITY);
        // Inputs, then NumPy's max, min, nanmax, nanmin (as indices of the value returned),
        // nanargmax, nanargmin (-1: ValueError); argmax and argmin are max's and min's.
        #[allow(clippy::type_complexity)]
        let cases: [(&[Z], [i64; 6]); 9] = [
            (
                &[Z::new(1.0, 2.0), Z::new(3.0, nan), Z::new(nan, 1.0), Z::new(5.0, 0.0)],
                [1, 1, 3, 0, 3, 0],
            ),
            (
                &[Z::new(1.0, 2.0), Z::new(nan, 1.0), Z::new(3.0, nan), Z::new(5.0, 0.0)],
                [1, 1, 3, 0, 3, 0],
            ),
            (
                &[
                    Z::new(1.0, 2.0),
                    Z::new(3.0, 1.0),
                    Z::new(3.0, 1.0),
                    Z::new(3.0, 0.0),
                    Z::new(-0.0, -1.0),
                ],
                [1, 4, 1, 4, 1, 4],
            ),
            (
                &[Z::new(inf, -inf), Z::new(inf, inf), Z::new(-inf, inf), Z::new(0.0, 0.0)],
                [1, 2, 1, 2, 1, 2],
            ),
            (
                &[Z::new(0.0, -0.0), Z::new(-0.0, 0.0), Z::new(0.0, 0.0)],
                [0, 0, 0, 0, 0, 0],
            ),
            (
                &[Z::new(nan, 1.0), Z::new(3.0, nan), Z::new(nan, nan)],
                [0, 0, 0, 0, -1, -1],
            ),
            (&[Z::new(nan, 1.0), Z::new(-inf, -1.0)], [0, 0, 1, 1, 0, 1]),
            (
                &[Z::new(-inf, -1.0), Z::new(nan, 1.0), Z::new(-inf, 0.0)],
                [1, 1, 2, 0, 1, 0],
            ),
            (
                &[Z::new(1.0, nan), Z::new(inf, 1.0), Z::new(inf, 0.0)],
                [0, 0, 1, 2, 1, 0],
            ),
        ];
        for (values, expected) in cases {
            let indexed: Vec<Indexed> = values
                .iter()
                .enumerate()
                .map(|(i, &v)| Indexed { v, i: i as i64 })
                .collect();
            for threads in [1, 2, 3, 32] {
                let got = [
                    reduce(&indexed, threads, &|a, b| best(a, b, true, false)).i,
                    reduce(&indexed, threads, &|a, b| best(a, b, false, false)).i,
                    reduce(&indexed, threads, &|a, b| best(a, b, true, true)).i,
                    reduce(&indexed, threads, &|a, b| best(a, b, false, true)).i,
                    nanarg_index(reduce(
                        &values
                            .iter()
                            .enumerate()
                            .map(|(i, &v)| make_nanarg(v, i as i64, true))
                            .collect::<Vec<_>>(),
                        threads,
                        &|a, b| nanarg_best(a, b, true),
                    )),
                    nanarg_index(reduce(
                        &values
                            .iter()
                            .enumerate()
                            .map(|(i, &v)| make_nanarg(v, i as i64, false))
                            .collect::<Vec<_>>(),
                        threads,
                        &|a, b| nanarg_best(a, b, false),
                    )),
                ];
                assert_eq!(got, expected, "{values:?} on {threads} threads");
            }
        }
    }

    #[test]
    fn result_types_follow_numpy() {
        assert_eq!(<<i8 as Element>::Sum as Element>::DTYPE, DType::I64);
        assert_eq!(<<Bool as Element>::Sum as Element>::DTYPE, DType::I64);
        assert_eq!(<<u16 as Element>::Sum as Element>::DTYPE, DType::U64);
        assert_eq!(<<half::f16 as Element>::Sum as Element>::DTYPE, DType::F16);
        assert_eq!(<<i32 as Element>::Mean as Element>::DTYPE, DType::F64);
        assert_eq!(<<f32 as Element>::Mean as Element>::DTYPE, DType::F32);
        type C64 = num_complex::Complex<f32>;
        assert_eq!(<<C64 as Element>::Sum as Element>::DTYPE, DType::C64);
        assert_eq!(<<C64 as Element>::Mean as Element>::DTYPE, DType::C64);
        assert_eq!(
            <<C64 as Element>::Var as Element>::DTYPE,
            DType::F32,
            "var of complex is real"
        );
        assert_eq!(
            <<num_complex::Complex<f64> as Element>::Var as Element>::DTYPE,
            DType::F64
        );
        assert_eq!(<<i8 as Element>::Var as Element>::DTYPE, DType::F64);
    }
}
