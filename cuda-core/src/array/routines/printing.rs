//! How arrays print: `Display` as NumPy prints (nested brackets, aligned columns, the middle
//! of large arrays elided), which waits for the array's stream and reads what it shows; `Debug`
//! as the array's metadata, without touching the device.
//!
//! ```no_run
//! use cuda_core::{Device, DeviceArray};
//!
//! # fn main() -> cuda_core::Result<()> {
//! let stream = Device::new(0)?.create_stream()?;
//! let x = DeviceArray::from_slice(&stream, &[0.5f32, 0.25, 1.0, 2.0])?.reshape([2, 2])?;
//! assert_eq!(x.to_string(), "[[0.5  0.25]\n [1.   2.  ]]");
//! # Ok(())
//! # }
//! ```

use std::fmt;

use crate::array::device_array::DeviceArray;
use crate::array::dtype::{int_value, DType, Element};
use crate::array::view::Slice;
use crate::error::Result;

/// Arrays of more elements than this print summarised.
const THRESHOLD: usize = 1000;
/// Elements shown at each end of a summarised axis.
const EDGE: usize = 3;
/// Lines longer than this wrap.
const LINE_WIDTH: usize = 75;
/// Fraction digits at most.
const PRECISION: usize = 8;

impl<T: Element> fmt::Display for DeviceArray<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match render(self) {
            Ok(text) => f.write_str(&text),
            Err(error) => write!(
                f,
                "<DeviceArray of shape {:?} and type {}: cannot be read: {error}>",
                self.shape(),
                T::DTYPE
            ),
        }
    }
}

impl<T: Element> fmt::Debug for DeviceArray<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DeviceArray")
            .field("dtype", &T::DTYPE)
            .field("shape", &self.shape())
            .field("strides", &self.strides())
            .field("ptr", &format_args!("{:#x}", self.ptr_ref()))
            .field("stream", self.stream())
            .finish()
    }
}

/// The printed form of `array`.
fn render<T: Element>(array: &DeviceArray<T>) -> Result<String> {
    if array.is_empty() {
        return Ok("[]".into());
    }
    let summarise = array.len() > THRESHOLD;
    let shown: Vec<usize> = array
        .shape()
        .iter()
        .map(|&d| match summarise && d > 2 * EDGE {
            true => 2 * EDGE,
            false => d,
        })
        .collect();
    let values = gather(array, &shown)?;
    let texts = format_values(&values);
    let width = texts.iter().map(String::len).max().unwrap_or(0);
    let elided: Vec<bool> = array.shape().iter().zip(&shown).map(|(&d, &s)| d != s).collect();
    let mut out = String::new();
    nest(&mut out, &texts, &shown, &elided, width, 0, 0);
    Ok(out)
}

/// The shown elements in row-major order: along each axis all of them, or the first and last
/// [`EDGE`] when `shown` is smaller than the extent (read through one view per block of them).
fn gather<T: Element>(array: &DeviceArray<T>, shown: &[usize]) -> Result<Vec<T>> {
    let shape = array.shape();
    let ndim = shape.len();
    let mut out: Vec<Option<T>> = vec![None; shown.iter().product()];
    let halves: Vec<usize> = shape
        .iter()
        .zip(shown)
        .map(|(&d, &s)| 1 + usize::from(d != s))
        .collect();
    let blocks: usize = halves.iter().product();
    for block in 0..blocks {
        // Which end of each elided axis this block takes.
        let mut rest = block;
        let mut slices = Vec::with_capacity(ndim);
        let mut offsets = Vec::with_capacity(ndim);
        for axis in (0..ndim).rev() {
            let end = rest % halves[axis];
            rest /= halves[axis];
            let (slice, offset) = match (halves[axis], end) {
                (1, _) => (Slice::from(..), 0),
                (_, 0) => (Slice::from(..EDGE), 0),
                _ => (Slice::from(shape[axis] - EDGE..), EDGE),
            };
            slices.push(slice);
            offsets.push(offset);
        }
        slices.reverse();
        offsets.reverse();
        let view = array.slice(&slices)?;
        let values = view.to_vec()?;
        for (index, value) in values.into_iter().enumerate() {
            let mut rest = index;
            let mut target = 0;
            let mut scale = 1;
            for axis in (0..ndim).rev() {
                let extent = view.shape()[axis];
                target += (offsets[axis] + rest % extent) * scale;
                rest /= extent;
                scale *= shown[axis];
            }
            out[target] = Some(value);
        }
    }
    Ok(out
        .into_iter()
        .map(|v| v.expect("every shown element is in one block"))
        .collect())
}

/// Writes the nested brackets of the elements from `at` for axes `axis..`.
fn nest(out: &mut String, texts: &[String], shown: &[usize], elided: &[bool], width: usize, axis: usize, at: usize) {
    let ndim = shown.len();
    if ndim == 0 {
        out.push_str(texts[0].trim_start());
        return;
    }
    let per: usize = shown[axis + 1..].iter().product();
    out.push('[');
    if axis + 1 == ndim {
        let mut line = axis + 1;
        for i in 0..shown[axis] {
            let mut item = format!("{:>width$}", texts[at + i]);
            if elided[axis] && i == EDGE {
                item = format!("...{}{item}", if width > 0 { " " } else { "" });
            }
            if i > 0 {
                if line + 1 + item.len() + 1 > LINE_WIDTH {
                    out.push('\n');
                    out.push_str(&" ".repeat(axis + 1));
                    line = axis + 1;
                } else {
                    out.push(' ');
                    line += 1;
                }
            }
            out.push_str(&item);
            line += item.len();
        }
    } else {
        let gap = "\n".repeat(ndim - axis - 1);
        let indent = " ".repeat(axis + 1);
        for i in 0..shown[axis] {
            if i > 0 {
                out.push_str(&gap);
                out.push_str(&indent);
            }
            if elided[axis] && i == EDGE {
                out.push_str("...");
                out.push_str(&gap);
                out.push_str(&indent);
            }
            nest(out, texts, shown, elided, width, axis + 1, at + i * per);
        }
    }
    out.push(']');
}

/// Each value as NumPy prints it, before alignment.
fn format_values<T: Element>(values: &[T]) -> Vec<String> {
    match T::DTYPE {
        DType::Bool => values
            .iter()
            .map(|v| if v.to_f64() != 0.0 { "True" } else { "False" }.to_string())
            .collect(),
        d if d.is_float() => format_floats(values),
        d if d.is_complex() => complex_values(values),
        _ => values.iter().map(|&v| integer_text(v)).collect(),
    }
}

/// [`format_complex`] of complex elements (of either width).
fn complex_values<T: Element>(values: &[T]) -> Vec<String> {
    fn read<T, U: Copy>(values: &[T]) -> Vec<U> {
        assert_eq!(std::mem::size_of::<T>(), std::mem::size_of::<U>());
        // SAFETY: `T` is `U` (the caller matched `T::DTYPE`, sizes checked above); every bit
        // pattern of two floats is a valid complex value.
        values
            .iter()
            .map(|v| unsafe { std::ptr::read_unaligned((v as *const T).cast::<U>()) })
            .collect()
    }
    match T::DTYPE {
        DType::C64 => format_complex(&read::<T, num_complex::Complex<f32>>(values)),
        _ => format_complex(&read::<T, num_complex::Complex<f64>>(values)),
    }
}

/// An integer element exactly (through its own type, not `f64`).
fn integer_text<T: Element>(value: T) -> String {
    int_value(value).map_or_else(|| value.to_f64().to_string(), |v| v.to_string())
}

/// The fewest significant digits (1 to 17) that read back as `value` in `T`.
fn shortest_digits<T: Element>(value: T) -> usize {
    let exact = value.to_f64();
    (1..=17)
        .find(|&digits| {
            let text = format!("{:.*e}", digits - 1, exact);
            text.parse::<f64>().map(T::from_f64).map(|v| v.to_f64().to_bits()) == Ok(exact.to_bits())
        })
        .unwrap_or(17)
}

/// The magnitude from which floats of `dtype` print in scientific notation, as NumPy 2.3 and
/// later: `10^min(8, precision)` with the type's decimal precision (`finfo(dtype).precision`),
/// so `f16` from 1e3, `bf16` from 1e2, `f32` from 1e6 and `f64` from 1e8.
fn scientific_above(dtype: DType) -> f64 {
    let digits = dtype.decimal_precision().unwrap_or(8).min(8);
    10f64.powi(digits as i32)
}

/// Floats as NumPy 2 prints them: the shortest digits that read back in the element type (at
/// most [`PRECISION`] after the point), positional with the points aligned, or scientific when
/// the magnitudes are very large for the type ([`scientific_above`]), very small (below 1e-4)
/// or far apart (a ratio above 1e3).
fn format_floats<T: Element>(values: &[T]) -> Vec<String> {
    format_signed_floats(values, false)
}

/// [`format_floats`], with a `+` before values that are not negative when `plus` is set (the
/// imaginary parts of complex values), padded as NumPy pads them: every finite value to the
/// widest whole part, NaN and infinities to the width of the others.
fn format_signed_floats<T: Element>(values: &[T], plus: bool) -> Vec<String> {
    let finite: Vec<f64> = values
        .iter()
        .map(|v| v.to_f64().abs())
        .filter(|v| v.is_finite() && *v != 0.0)
        .collect();
    let max = finite.iter().cloned().fold(0.0, f64::max);
    let min = finite.iter().cloned().fold(f64::INFINITY, f64::min);
    let scientific = !finite.is_empty() && (max >= scientific_above(T::DTYPE) || min < 1e-4 || max / min > 1e3);
    let sign = |x: f64| match plus && !x.is_sign_negative() {
        true => "+",
        false => "",
    };
    // Each finite value as (whole part with its sign, the rest after the point).
    let parts: Vec<Option<(String, String)>> = match scientific {
        true => {
            let precision = values
                .iter()
                .filter(|v| v.to_f64().is_finite())
                .map(|&v| shortest_digits(v) - 1)
                .max()
                .unwrap_or(0)
                .min(PRECISION);
            values
                .iter()
                .map(|&v| {
                    let x = v.to_f64();
                    if !x.is_finite() {
                        return None;
                    }
                    let text = format!("{}{x:.precision$e}", sign(x));
                    let (mantissa, exponent) = text.split_once('e').expect("scientific form");
                    let (whole, fraction) = mantissa.split_once('.').unwrap_or((mantissa, ""));
                    let (exponent_sign, digits) = match exponent.strip_prefix('-') {
                        Some(digits) => ('-', digits),
                        None => ('+', exponent),
                    };
                    Some((whole.to_string(), format!("{fraction}e{exponent_sign}{digits:0>2}")))
                })
                .collect()
        }
        false => values
            .iter()
            .map(|&v| {
                let x = v.to_f64();
                if !x.is_finite() {
                    return None;
                }
                let digits = shortest_digits(v);
                let exponent = match x {
                    0.0 => 0,
                    x => x.abs().log10().floor() as i64,
                };
                let fraction = (digits as i64 - 1 - exponent).clamp(0, PRECISION as i64) as usize;
                let text = format!("{}{x:.fraction$}", sign(x));
                let (whole, frac) = text.split_once('.').unwrap_or((&text, ""));
                Some((whole.to_string(), frac.trim_end_matches('0').to_string()))
            })
            .collect(),
    };
    let mut whole_width = parts.iter().flatten().map(|(w, _)| w.len()).max().unwrap_or(0);
    let rest_width = parts.iter().flatten().map(|(_, f)| f.len()).max().unwrap_or(0);
    let special = |x: f64| match x {
        x if x.is_nan() => format!("{}nan", if plus { "+" } else { "" }),
        x if x < 0.0 => "-inf".to_string(),
        _ => format!("{}inf", if plus { "+" } else { "" }),
    };
    let non_finite: Vec<String> = values
        .iter()
        .map(|v| v.to_f64())
        .filter(|x| !x.is_finite())
        .map(special)
        .collect();
    if !non_finite.is_empty() {
        // NaN and infinities widen the whole part so that they fit the others' width.
        let longest = non_finite.iter().map(String::len).max().unwrap_or(0);
        whole_width = whole_width.max(longest.saturating_sub(rest_width + 1));
    }
    parts
        .iter()
        .zip(values)
        .map(|(part, &v)| match part {
            Some((whole, rest)) => format!("{whole:>whole_width$}.{rest:<rest_width$}"),
            None => format!("{:>width$}", special(v.to_f64()), width = whole_width + rest_width + 1),
        })
        .collect()
}

/// Complex values as NumPy prints them: the real parts formatted together as floats, the
/// imaginary parts together with a sign, joined with `j` before the imaginary part's padding.
fn format_complex<P: Element>(values: &[num_complex::Complex<P>]) -> Vec<String> {
    let real: Vec<P> = values.iter().map(|z| z.re).collect();
    let imag: Vec<P> = values.iter().map(|z| z.im).collect();
    format_floats(&real)
        .into_iter()
        .zip(format_signed_floats(&imag, true))
        .map(|(re, im)| {
            let digits = im.trim_end();
            format!("{re}{digits}j{}", &im[digits.len()..])
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn floats(values: &[f64]) -> Vec<String> {
        format_floats(values)
    }

    #[test]
    fn floats_align_their_points_and_switch_to_scientific_like_numpy() {
        assert_eq!(floats(&[0.5, 0.25, 1.0]), ["0.5 ", "0.25", "1.  "]);
        assert_eq!(floats(&[1.0, 2.0, -3.0]), [" 1.", " 2.", "-3."]);
        assert_eq!(floats(&[0.1, 100.0]), ["  0.1", "100. "]);
        assert_eq!(floats(&[1e-5, 1.0]), ["1.e-05", "1.e+00"]);
        assert_eq!(floats(&[1.5e-5, 1000.0]), ["1.5e-05", "1.0e+03"]);
        assert_eq!(floats(&[1.0 / 3.0]), ["0.33333333"]);
        assert_eq!(floats(&[f64::NAN, 1.5, f64::NEG_INFINITY]), [" nan", " 1.5", "-inf"]);
        // Shortest digits in the element's own type: f32's 0.1 is 0.1, not 0.100000001.
        assert_eq!(format_floats(&[0.1f32, 0.2]), ["0.1", "0.2"]);
        assert_eq!(format_floats(&[half::f16::from_f64(0.1)]), ["0.1"]);
    }

    #[test]
    fn large_values_turn_scientific_at_the_types_precision_like_numpy_2() {
        assert_eq!(format_floats(&[half::f16::from_f64(2048.0)]), ["2.048e+03"]);
        assert_eq!(format_floats(&[half::f16::from_f64(999.0)]), ["999."]);
        assert_eq!(format_floats(&[1e7f32]), ["1.e+07"]);
        assert_eq!(format_floats(&[999_999.0f32]), ["999999."]);
        assert_eq!(format_floats(&[half::bf16::from_f64(128.0)]), ["1.28e+02"]);
        assert_eq!(floats(&[1e7]), ["10000000."], "f64 keeps 1e8");
        assert_eq!(floats(&[1e8]), ["1.e+08"]);
    }

    #[test]
    fn integers_print_exactly_and_booleans_as_python() {
        assert_eq!(format_values(&[i64::MAX, -1]), ["9223372036854775807", "-1"]);
        assert_eq!(format_values(&[u64::MAX]), ["18446744073709551615"]);
        assert_eq!(
            format_values(&[crate::array::Bool::TRUE, crate::array::Bool::FALSE]),
            ["True", "False"]
        );
    }

    fn complex(values: &[(f64, f64)]) -> String {
        let values: Vec<num_complex::Complex<f64>> = values
            .iter()
            .map(|&(re, im)| num_complex::Complex::new(re, im))
            .collect();
        let texts = format_complex(&values);
        let width = texts.iter().map(String::len).max().unwrap();
        let mut out = String::new();
        nest(&mut out, &texts, &[values.len()], &[false], width, 0, 0);
        out
    }

    #[test]
    fn complex_values_print_like_numpy() {
        // Each expected line is NumPy 2.4's `str` of the same complex128 array.
        assert_eq!(complex(&[(1.0, 2.0), (3.5, -1.0)]), "[1. +2.j 3.5-1.j]");
        assert_eq!(complex(&[(0.0, 0.0)]), "[0.+0.j]");
        assert_eq!(complex(&[(1.0, 1.0), (2.0, 0.0), (3.0, 0.0)]), "[1.+1.j 2.+0.j 3.+0.j]");
        assert_eq!(complex(&[(0.1, 0.2), (0.0, 1e-5)]), "[0.1+2.e-01j 0. +1.e-05j]");
        assert_eq!(complex(&[(1.5, 0.0), (-2.25, 100.0)]), "[ 1.5   +0.j -2.25+100.j]");
        assert_eq!(
            complex(&[(f64::NAN, f64::NAN), (f64::NEG_INFINITY, 1.0)]),
            "[ nan+nanj -inf +1.j]"
        );
        assert_eq!(complex(&[(1e20, 1e-20)]), "[1.e+20+1.e-20j]");
        assert_eq!(complex(&[(-1.0, -1.0), (10.0, -100.0)]), "[-1.  -1.j 10.-100.j]");
        assert_eq!(complex(&[(1.5, -0.0)]), "[1.5-0.j]");
        let single = [
            num_complex::Complex::new(1.0f32, 2.0),
            num_complex::Complex::new(3.5, -1.0),
        ];
        assert_eq!(format_values(&single), ["1. +2.j", "3.5-1.j"]);
    }

    fn nested(values: &[&str], shown: &[usize], elided: &[bool]) -> String {
        let texts: Vec<String> = values.iter().map(|s| s.to_string()).collect();
        let width = texts.iter().map(String::len).max().unwrap();
        let mut out = String::new();
        nest(&mut out, &texts, shown, elided, width, 0, 0);
        out
    }

    #[test]
    fn nesting_wrapping_and_elision_follow_numpy() {
        assert_eq!(
            nested(&["1", "2", "3", "4", "5", "6"], &[2, 3], &[false, false]),
            "[[1 2 3]\n [4 5 6]]"
        );
        assert_eq!(
            nested(&["1", "2", "3", "4", "5", "6", "7", "8"], &[2, 2, 2], &[false; 3]),
            "[[[1 2]\n  [3 4]]\n\n [[5 6]\n  [7 8]]]"
        );
        assert_eq!(nested(&["7"], &[], &[]), "7");
        let six: Vec<String> = (0..6).map(|i| format!("{}", [0, 1, 2, 997, 998, 999][i])).collect();
        let six: Vec<&str> = six.iter().map(String::as_str).collect();
        assert_eq!(nested(&six, &[6], &[true]), "[  0   1   2 ... 997 998 999]");
        let many: Vec<String> = (0..30).map(|i| format!("{i:>4}")).collect();
        let many: Vec<&str> = many.iter().map(String::as_str).collect();
        let wrapped = nested(&many, &[30], &[false]);
        assert!(wrapped.lines().all(|l| l.len() <= LINE_WIDTH), "{wrapped}");
        assert!(wrapped.lines().nth(1).unwrap().starts_with("  "), "{wrapped}");
        let rows: Vec<&str> = vec!["1"; 12];
        assert_eq!(
            nested(&rows, &[6, 2], &[true, false]),
            "[[1 1]\n [1 1]\n [1 1]\n ...\n [1 1]\n [1 1]\n [1 1]]"
        );
    }
}
