//! What NumPy's arguments ask of a transform, worked out on the host: the axes, the number of
//! points per axis (`n`/`s`, padding and cropping), the shapes each side takes, the order of the
//! cuFFT plans (at most 3 axes each), the `norm` factor, and whether a view's strides fit
//! cuFFT's advanced layout (so it is read without a copy).

use crate::array::Axes;
use crate::error::{Error, Result};

/// NumPy's `norm=`: which direction is scaled, and by how much.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum FftNorm {
    /// `"backward"` (NumPy's default): the forward transform is unscaled, the inverse scaled by
    /// `1/n`.
    #[default]
    Backward,
    /// `"ortho"`: both directions scaled by `1/sqrt(n)` (unitary).
    Ortho,
    /// `"forward"`: the forward transform scaled by `1/n`, the inverse unscaled.
    Forward,
}

impl FftNorm {
    /// The factor a transform over `points` values in all is multiplied by: `inverse` for
    /// `ifft`-like transforms.
    pub fn factor(self, inverse: bool, points: usize) -> f64 {
        let n = points as f64;
        match (self, inverse) {
            (FftNorm::Ortho, _) => 1.0 / n.sqrt(),
            (FftNorm::Backward, false) | (FftNorm::Forward, true) => 1.0,
            (FftNorm::Backward, true) | (FftNorm::Forward, false) => 1.0 / n,
        }
    }

    /// The other direction's name for the same scaling (NumPy's `hfft`/`ihfft` are `irfft`/`rfft`
    /// with the norm swapped).
    pub(crate) fn swapped(self) -> FftNorm {
        match self {
            FftNorm::Backward => FftNorm::Forward,
            FftNorm::Ortho => FftNorm::Ortho,
            FftNorm::Forward => FftNorm::Backward,
        }
    }
}

/// Which side of a transform is real.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Real {
    /// Complex to complex.
    Neither,
    /// Real input (`rfft`): the last axis gives `n / 2 + 1` values.
    Input,
    /// Real output (`irfft`): the last axis reads `n / 2 + 1` values and gives `n`.
    Output,
}

/// The shapes of one NumPy call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Shapes {
    /// The transformed axes, in the order given.
    pub(crate) axes: Vec<usize>,
    /// The points per transformed axis (the real side's for real transforms).
    pub(crate) points: Vec<usize>,
    /// The input's shape once padded or cropped to `points`.
    pub(crate) input: Vec<usize>,
    /// The result's shape.
    pub(crate) output: Vec<usize>,
    /// The product of `points`: the norm's `n`.
    pub(crate) total: usize,
}

/// Resolves `s` and `axes` against an input of `shape` as NumPy's `fftn` family does: with
/// `axes` every axis ([`Axes::ALL`]) and `s` given, the last `len(s)` axes; with `s` absent, the
/// input's extents (for a real output, `2 * (m - 1)` on the last axis).
pub(crate) fn shapes(shape: &[usize], s: Option<&[i64]>, axes: &Axes, real: Real) -> Result<Shapes> {
    let ndim = shape.len();
    let axes = match (axes.is_all(), s) {
        (true, Some(s)) => {
            if s.len() > ndim {
                return Err(Error::InvalidValue(format!(
                    "s has {} sizes but the array has {ndim} dimensions",
                    s.len()
                )));
            }
            (ndim - s.len()..ndim).collect()
        }
        _ => axes.indices(ndim)?,
    };
    if let Some(s) = s {
        if s.len() != axes.len() {
            return Err(Error::InvalidValue(format!(
                "s has {} sizes and axes {} axes: they must match",
                s.len(),
                axes.len()
            )));
        }
    }
    if axes.is_empty() && real != Real::Neither {
        return Err(Error::InvalidValue(
            "a real transform needs at least one axis (its last is the halved one)".into(),
        ));
    }
    let last = axes.len().wrapping_sub(1);
    let mut points = Vec::with_capacity(axes.len());
    for (k, &axis) in axes.iter().enumerate() {
        let n = match s {
            Some(s) => s[k],
            None if real == Real::Output && k == last => 2 * (shape[axis] as i64 - 1),
            None => shape[axis] as i64,
        };
        if n < 1 {
            return Err(Error::InvalidValue(format!(
                "invalid number of FFT data points ({n}) specified for axis {axis}: at least 1"
            )));
        }
        points.push(usize::try_from(n).map_err(|_| Error::InvalidValue(format!("{n} points overflow")))?);
    }
    let mut input = shape.to_vec();
    let mut output = shape.to_vec();
    for (k, (&axis, &n)) in axes.iter().zip(&points).enumerate() {
        input[axis] = n;
        output[axis] = n;
        if k == last {
            match real {
                Real::Neither => {}
                Real::Input => output[axis] = n / 2 + 1,
                Real::Output => input[axis] = n / 2 + 1,
            }
        }
    }
    let total = points
        .iter()
        .try_fold(1usize, |acc, &n| acc.checked_mul(n))
        .ok_or_else(|| Error::InvalidValue(format!("the transform's sizes {points:?} overflow")))?;
    for side in [&input, &output] {
        crate::array::device_array::shape_len(side)?;
    }
    Ok(Shapes {
        axes,
        points,
        input,
        output,
        total,
    })
}

/// Which cuFFT kind one plan is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Stage {
    /// Complex to complex.
    C2C,
    /// Real to complex (the first stage of a real-input transform).
    R2C,
    /// Complex to real (the last stage of a real-output transform).
    C2R,
}

/// The plans of a transform over `axes`, in order, at most 3 axes each (cuFFT's most): a real
/// input's R2C stage takes the last (up to) 3 axes first; a real output's C2R stage comes last;
/// the other axes go through complex stages.
pub(crate) fn stages(axes: &[usize], real: Real) -> Vec<(Stage, Vec<usize>)> {
    let mut groups: Vec<Vec<usize>> = axes.rchunks(3).map(<[usize]>::to_vec).collect();
    let mut stages: Vec<(Stage, Vec<usize>)> = Vec::with_capacity(groups.len());
    match real {
        Real::Neither => stages.extend(groups.into_iter().map(|g| (Stage::C2C, g))),
        Real::Input => {
            let mut groups = groups.into_iter();
            if let Some(first) = groups.next() {
                stages.push((Stage::R2C, first));
            }
            stages.extend(groups.map(|g| (Stage::C2C, g)));
        }
        Real::Output => {
            let last = if groups.is_empty() {
                None
            } else {
                Some(groups.remove(0))
            };
            stages.extend(groups.into_iter().map(|g| (Stage::C2C, g)));
            stages.extend(last.map(|g| (Stage::C2R, g)));
        }
    }
    stages
}

/// One side of a plan in cuFFT's advanced layout: the transform's storage sizes, stride,
/// batch distance and batch, in elements, from the view's first element.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Described {
    pub(crate) embed: Vec<usize>,
    pub(crate) stride: usize,
    pub(crate) distance: usize,
    pub(crate) batch: usize,
}

/// The advanced layout of a view whose last `rank` axes are transformed and whose other axes are
/// the batch, or `None` where cuFFT cannot describe it (a negative or zero stride, axes that do
/// not nest, batch axes that do not merge into one distance): then the view is copied.
pub(crate) fn describe(shape: &[usize], strides: &[isize], rank: usize) -> Option<Described> {
    let ndim = shape.len();
    let split = ndim - rank;
    // Extents of 1 may have any stride; such axes are dropped from the batch and given the
    // stride that nests in the transform.
    let mut transform: Vec<(usize, usize)> = Vec::with_capacity(rank);
    for k in split..ndim {
        match shape[k] {
            1 => transform.push((1, 0)),
            _ => transform.push((1, usize::try_from(strides[k]).ok().filter(|&s| s > 0)?)),
        }
    }
    for (k, &n) in shape[split..].iter().enumerate() {
        transform[k].0 = n;
    }
    // The last axis's stride; a length-1 last axis takes 1.
    let stride = match transform[rank - 1] {
        (_, 0) => 1,
        (_, s) => s,
    };
    let mut embed = vec![0usize; rank];
    embed[0] = transform[0].0;
    let mut inner = stride;
    for k in (1..rank).rev() {
        let n = transform[k].0;
        embed[k] = match transform[k - 1] {
            // An outer extent of 1 nests at any stride.
            (1, _) => n,
            (_, outer) => {
                if outer % inner != 0 || outer / inner < n {
                    return None;
                }
                outer / inner
            }
        };
        inner = inner.checked_mul(embed[k])?;
    }
    let mut batch_axes: Vec<(usize, usize)> = Vec::new();
    for k in 0..split {
        if shape[k] != 1 {
            batch_axes.push((shape[k], usize::try_from(strides[k]).ok().filter(|&s| s > 0)?));
        }
    }
    let per_transform = inner.checked_mul(embed[0])?;
    let (batch, distance) = match batch_axes.as_slice() {
        [] => (1, per_transform),
        _ => {
            for pair in batch_axes.windows(2) {
                if pair[0].1 != pair[1].1.checked_mul(pair[1].0)? {
                    return None;
                }
            }
            let batch = batch_axes.iter().try_fold(1usize, |acc, &(n, _)| acc.checked_mul(n))?;
            (batch, batch_axes.last()?.1)
        }
    };
    Some(Described {
        embed,
        stride,
        distance,
        batch,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::array::device_array::c_strides;

    fn axes(list: &[i64]) -> Axes {
        Axes::from(list)
    }

    #[test]
    fn n_pads_crops_and_defaults_as_numpy() {
        let s = shapes(&[4, 6], None, &axes(&[-1]), Real::Neither).unwrap();
        assert_eq!(
            (s.axes, s.points, s.input, s.output, s.total),
            (vec![1], vec![6], vec![4, 6], vec![4, 6], 6)
        );
        let s = shapes(&[4, 6], Some(&[9]), &axes(&[0]), Real::Neither).unwrap();
        assert_eq!((s.input, s.output, s.total), (vec![9, 6], vec![9, 6], 9));
        // rfft: n = 7 real values give 4 complex ones.
        let s = shapes(&[3, 10], Some(&[7]), &axes(&[-1]), Real::Input).unwrap();
        assert_eq!((s.input, s.output), (vec![3, 7], vec![3, 4]));
        // irfft: n defaults to 2 (m - 1) and reads n / 2 + 1 values.
        let s = shapes(&[3, 5], None, &axes(&[1]), Real::Output).unwrap();
        assert_eq!((s.points, s.input, s.output), (vec![8], vec![3, 5], vec![3, 8]));
        let s = shapes(&[3, 5], Some(&[9]), &axes(&[1]), Real::Output).unwrap();
        assert_eq!((s.input, s.output), (vec![3, 5], vec![3, 9]));
        let s = shapes(&[3, 5], Some(&[4]), &axes(&[1]), Real::Output).unwrap();
        assert_eq!((s.input, s.output), (vec![3, 3], vec![3, 4]));
        // fftn: s without axes takes the last len(s) axes; axes ALL without s every axis.
        let s = shapes(&[2, 3, 4], Some(&[5, 6]), &Axes::ALL, Real::Neither).unwrap();
        assert_eq!((s.axes, s.output, s.total), (vec![1, 2], vec![2, 5, 6], 30));
        let s = shapes(&[2, 3, 4], None, &Axes::ALL, Real::Input).unwrap();
        assert_eq!((s.axes, s.output, s.total), (vec![0, 1, 2], vec![2, 3, 3], 24));
        let s = shapes(&[2, 3, 4], None, &axes(&[2, 0]), Real::Output).unwrap();
        assert_eq!((s.points, s.output), (vec![4, 2], vec![2, 3, 4]));
    }

    #[test]
    fn bad_arguments_are_typed_errors() {
        let invalid = |r: Result<Shapes>| match r {
            Err(Error::InvalidValue(m)) => m,
            other => panic!("{other:?}"),
        };
        assert!(invalid(shapes(&[4], Some(&[0]), &axes(&[0]), Real::Neither)).contains("(0)"));
        assert!(invalid(shapes(&[4], Some(&[-3]), &axes(&[0]), Real::Neither)).contains("(-3)"));
        // irfft of one value: n = 2 (1 - 1) = 0.
        assert!(invalid(shapes(&[1], None, &axes(&[0]), Real::Output)).contains("(0)"));
        assert!(invalid(shapes(&[0], None, &axes(&[0]), Real::Neither)).contains("(0)"));
        assert!(matches!(
            shapes(&[4, 4], None, &axes(&[2]), Real::Neither),
            Err(Error::Axis { axis: 2, ndim: 2 })
        ));
        assert!(matches!(
            shapes(&[4, 4], None, &axes(&[-3]), Real::Neither),
            Err(Error::Axis { axis: -3, ndim: 2 })
        ));
        assert!(invalid(shapes(&[4, 4], None, &axes(&[1, -1]), Real::Neither)).contains("repeated"));
        assert!(invalid(shapes(&[4, 4], Some(&[4]), &axes(&[0, 1]), Real::Neither)).contains("must match"));
        assert!(invalid(shapes(&[4], Some(&[4, 4]), &Axes::ALL, Real::Neither)).contains("2 sizes"));
        assert!(invalid(shapes(&[4], None, &Axes::EMPTY, Real::Input)).contains("at least one axis"));
        let huge = i64::MAX / 2;
        assert!(invalid(shapes(&[4, 4], Some(&[huge, huge]), &axes(&[0, 1]), Real::Neither)).contains("overflow"));
    }

    #[test]
    fn norms_scale_as_numpy() {
        assert_eq!(FftNorm::Backward.factor(false, 8), 1.0);
        assert_eq!(FftNorm::Backward.factor(true, 8), 0.125);
        assert_eq!(FftNorm::Forward.factor(false, 8), 0.125);
        assert_eq!(FftNorm::Forward.factor(true, 8), 1.0);
        assert_eq!(FftNorm::Ortho.factor(false, 16), 0.25);
        assert_eq!(FftNorm::Ortho.factor(true, 16), 0.25);
        assert_eq!(FftNorm::Backward.swapped(), FftNorm::Forward);
        assert_eq!(FftNorm::Ortho.swapped(), FftNorm::Ortho);
        assert_eq!(FftNorm::default(), FftNorm::Backward);
    }

    #[test]
    fn stages_take_three_axes_at_most() {
        assert_eq!(stages(&[0], Real::Neither), [(Stage::C2C, vec![0])]);
        assert_eq!(
            stages(&[0, 1, 2, 3], Real::Neither),
            [(Stage::C2C, vec![1, 2, 3]), (Stage::C2C, vec![0])]
        );
        assert_eq!(
            stages(&[0, 1, 2, 3], Real::Input),
            [(Stage::R2C, vec![1, 2, 3]), (Stage::C2C, vec![0])]
        );
        assert_eq!(
            stages(&[3, 0, 1, 2, 4], Real::Output),
            [(Stage::C2C, vec![3, 0]), (Stage::C2R, vec![1, 2, 4])]
        );
        assert!(stages(&[], Real::Neither).is_empty());
    }

    #[test]
    fn layouts_describe_views_without_copies() {
        // A compact batch of rows.
        let d = describe(&[8, 16], &c_strides(&[8, 16]), 1).unwrap();
        assert_eq!(
            d,
            Described {
                embed: vec![16],
                stride: 1,
                distance: 16,
                batch: 8
            }
        );
        // The columns of a row-major matrix (fft along axis 0, moved last): stride 16, distance 1.
        let d = describe(&[16, 8], &[1, 16], 1).unwrap();
        assert_eq!(
            d,
            Described {
                embed: vec![8],
                stride: 16,
                distance: 1,
                batch: 16
            }
        );
        // Every second column of a padded 2-D batch: x[:, :, ::2] of shape [3, 4, 10].
        let d = describe(&[3, 4, 5], &[40, 10, 2], 2).unwrap();
        assert_eq!(
            d,
            Described {
                embed: vec![4, 5],
                stride: 2,
                distance: 40,
                batch: 3
            }
        );
        // Two batch axes that merge into one distance.
        let d = describe(&[2, 3, 4], &c_strides(&[2, 3, 4]), 1).unwrap();
        assert_eq!((d.batch, d.distance), (6, 4));
        // A whole 3-D transform, no batch.
        let d = describe(&[2, 3, 4], &c_strides(&[2, 3, 4]), 3).unwrap();
        assert_eq!(
            d,
            Described {
                embed: vec![2, 3, 4],
                stride: 1,
                distance: 24,
                batch: 1
            }
        );
        // Extents of 1 take any stride.
        let d = describe(&[1, 4, 1], &[99, 1, 77], 2).unwrap();
        assert_eq!((d.embed, d.stride, d.batch), (vec![4, 1], 1, 1));
        // Not describable: a reversed view, a broadcast one, a middle axis moved last, axes
        // that do not nest.
        assert_eq!(describe(&[8], &[-1], 1), None);
        assert_eq!(describe(&[4, 8], &[0, 1], 1), None);
        assert_eq!(describe(&[2, 4, 3], &[12, 1, 4], 1), None);
        assert_eq!(describe(&[4, 8], &[1, 4], 2), None);
    }
}
