//! NumPy's axis arguments: one axis ([`Axis`]), a list of axes or every axis ([`Axes`]), and
//! an axis or the flattened array ([`OptionalAxis`]). Integers of every primitive type but
//! `u128` convert into each of them, and negative axes count from the end (`-1` is the last
//! axis); [`Axis::index`] and [`Axes::indices`] are the one place that resolves them against a
//! number of dimensions.

use crate::error::{Error, Result};

/// One axis of an array, as NumPy's `axis=` takes it: `0..ndim` from the front, `-ndim..0`
/// from the end. Every integer type but `u128` converts into it, so `x.argmax_axis(-1, false)`
/// and `x.argmax_axis(k, false)` with `k: usize` both read as in NumPy. A value beyond `i64`'s
/// range (a `u64` above `i64::MAX`, say), out of range for every array, is held as `i64::MAX`
/// or `i64::MIN`, the axis its [`Error::Axis`] names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Axis(i64);

impl Axis {
    /// The axis as given, negative or not.
    pub fn get(self) -> i64 {
        self.0
    }

    /// The axis as an index below `ndim` (a negative axis plus `ndim`), or NumPy's `AxisError`:
    /// [`Error::Axis`], naming the axis and `ndim`, for an axis outside `-ndim..ndim`.
    ///
    /// ```
    /// use cuda_core::Axis;
    /// assert_eq!(Axis::from(-1).index(3).unwrap(), 2);
    /// assert_eq!(Axis::from(1usize).index(3).unwrap(), 1);
    /// let error = Axis::from(-4).index(3).unwrap_err();
    /// assert_eq!(error.to_string(), "axis -4 is out of bounds for array of dimension 3");
    /// ```
    pub fn index(self, ndim: usize) -> Result<usize> {
        // `ndim` counts the axes of an array in memory, far below `i64::MAX`; a negative axis
        // plus it cannot overflow either.
        let ndim_wide = ndim as i64;
        let index = match self.0 < 0 {
            true => self.0 + ndim_wide,
            false => self.0,
        };
        match (0..ndim_wide).contains(&index) {
            // Below `ndim`, so it fits `usize`.
            true => Ok(index as usize),
            false => Err(Error::Axis { axis: self.0, ndim }),
        }
    }
}

/// NumPy's `axis=` argument of the routines that take several axes (reductions, `flip`,
/// `transpose`): a list of axes, each converting into [`Axis`], or every axis (NumPy's
/// `axis=None`).
///
/// From a single integer (one axis), an array, slice or `Vec` of integers or of [`Axis`]
/// (those axes in that order), or `None` (every axis, as [`Axes::ALL`]); the empty list is
/// [`Axes::EMPTY`] (a bare `[]` has no element type to infer).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Axes(Option<Vec<Axis>>);

impl Axes {
    /// Every axis, in order (NumPy's `axis=None`).
    pub const ALL: Axes = Axes(None);

    /// No axis (NumPy's `axis=()`).
    pub const EMPTY: Axes = Axes(Some(Vec::new()));

    /// Whether this is [`Axes::ALL`] rather than a list (which may name every axis too).
    pub fn is_all(&self) -> bool {
        self.0.is_none()
    }

    /// The axes as indices below `ndim`, in the order given (`0..ndim` for [`Axes::ALL`]): an
    /// [`Error::Axis`] for an axis out of range, and an [`Error::InvalidValue`] for an axis
    /// named twice (`1` and `-1` of two dimensions, say), as NumPy's "repeated axis".
    ///
    /// ```
    /// use cuda_core::Axes;
    /// assert_eq!(Axes::from([-1, 0]).indices(3).unwrap(), [2, 0]);
    /// assert_eq!(Axes::ALL.indices(2).unwrap(), [0, 1]);
    /// assert!(Axes::from([1, -1]).indices(2).is_err());
    /// ```
    pub fn indices(&self, ndim: usize) -> Result<Vec<usize>> {
        let Some(axes) = &self.0 else {
            return Ok((0..ndim).collect());
        };
        let mut seen = vec![false; ndim];
        axes.iter()
            .map(|&axis| {
                let index = axis.index(ndim)?;
                match std::mem::replace(&mut seen[index], true) {
                    false => Ok(index),
                    true => Err(Error::InvalidValue(format!(
                        "repeated axis {} in axes {:?} of an array of dimension {ndim}",
                        axis.0,
                        axes.iter().map(|a| a.0).collect::<Vec<_>>()
                    ))),
                }
            })
            .collect()
    }
}

impl From<Axis> for Axes {
    fn from(axis: Axis) -> Axes {
        Axes(Some(vec![axis]))
    }
}

impl From<Option<Axes>> for Axes {
    /// `None` is every axis ([`Axes::ALL`]), as NumPy's `axis=None`.
    fn from(axes: Option<Axes>) -> Axes {
        axes.unwrap_or(Axes::ALL)
    }
}

impl<A: Into<Axis>> From<Vec<A>> for Axes {
    fn from(axes: Vec<A>) -> Axes {
        Axes(Some(axes.into_iter().map(Into::into).collect()))
    }
}

impl<A: Into<Axis> + Copy> From<&Vec<A>> for Axes {
    fn from(axes: &Vec<A>) -> Axes {
        Axes::from(axes.as_slice())
    }
}

impl<A: Into<Axis> + Copy> From<&[A]> for Axes {
    fn from(axes: &[A]) -> Axes {
        Axes(Some(axes.iter().map(|&a| a.into()).collect()))
    }
}

impl<A: Into<Axis> + Copy, const N: usize> From<[A; N]> for Axes {
    fn from(axes: [A; N]) -> Axes {
        Axes::from(&axes[..])
    }
}

impl<A: Into<Axis> + Copy, const N: usize> From<&[A; N]> for Axes {
    fn from(axes: &[A; N]) -> Axes {
        Axes::from(&axes[..])
    }
}

/// NumPy's `axis=` argument of the routines where `None` means the flattened array (`take`,
/// `repeat`, `append`, `roll`): one axis, or `None`. Integers of every type but `u128` and
/// [`Axis`] convert into it, and so does `None` (`x.roll(1, None)`, `x.roll(1, -1)`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct OptionalAxis(Option<Axis>);

impl OptionalAxis {
    /// The axis, or `None` for the flattened array.
    pub fn get(self) -> Option<Axis> {
        self.0
    }
}

impl From<Axis> for OptionalAxis {
    fn from(axis: Axis) -> OptionalAxis {
        OptionalAxis(Some(axis))
    }
}

impl From<Option<Axis>> for OptionalAxis {
    fn from(axis: Option<Axis>) -> OptionalAxis {
        OptionalAxis(axis)
    }
}

macro_rules! integer_axes {
    ($($int:ty),*) => {$(
        impl From<$int> for Axis {
            fn from(axis: $int) -> Axis {
                // Past `i64`'s range only above `i64::MAX` or below `i64::MIN`: saturate there.
                Axis(i64::try_from(axis).unwrap_or(if axis > 0 { i64::MAX } else { i64::MIN }))
            }
        }

        impl From<$int> for Axes {
            /// One axis.
            fn from(axis: $int) -> Axes {
                Axes::from(Axis::from(axis))
            }
        }

        impl From<$int> for OptionalAxis {
            fn from(axis: $int) -> OptionalAxis {
                OptionalAxis(Some(Axis::from(axis)))
            }
        }
    )*};
}

integer_axes!(i8, i16, i32, i64, i128, isize, u8, u16, u32, u64, usize);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn negative_axes_count_from_the_end() {
        assert_eq!(Axis::from(-1).index(3).unwrap(), 2);
        assert_eq!(Axis::from(-3i64).index(3).unwrap(), 0);
        assert_eq!(Axis::from(2u8).index(3).unwrap(), 2);
        assert_eq!(Axis::from(0isize).index(1).unwrap(), 0);
        assert_eq!(Axis::from(-1i128).index(1).unwrap(), 0);
        assert_eq!(Axis::from(u64::MAX).get(), i64::MAX, "saturated");
        assert_eq!(Axis::from(i128::MIN).get(), i64::MIN, "saturated");
    }

    #[test]
    fn out_of_range_axes_are_axis_errors_naming_axis_and_ndim() {
        for (axis, ndim) in [
            (Axis::from(3), 3),
            (Axis::from(-4), 3),
            (Axis::from(0), 0),
            (Axis::from(-1), 0),
        ] {
            match axis.index(ndim) {
                Err(Error::Axis { axis: a, ndim: n }) => assert_eq!((a, n), (axis.get(), ndim)),
                other => panic!("{axis:?} of {ndim} dimensions: {other:?}"),
            }
        }
        let error = Axis::from(-3).index(2).unwrap_err().to_string();
        assert_eq!(error, "axis -3 is out of bounds for array of dimension 2");
        // The extremes of the widest types are out of range, not wrapped into it.
        let error = Axis::from(usize::MAX).index(2).unwrap_err().to_string();
        assert_eq!(
            error,
            format!("axis {} is out of bounds for array of dimension 2", i64::MAX)
        );
        assert!(Axis::from(i128::MIN).index(1 << 40).is_err());
        assert!(Axis::from(i128::MAX).index(2).is_err());
        assert!(Axis::from(i64::MIN).index(2).is_err());
    }

    #[test]
    fn lists_resolve_in_order_and_refuse_repeats() {
        assert_eq!(Axes::from([0, -1]).indices(3).unwrap(), [0, 2]);
        assert_eq!(Axes::from(&[2usize, 0][..]).indices(3).unwrap(), [2, 0]);
        assert_eq!(Axes::from(vec![-2i64]).indices(2).unwrap(), [0]);
        assert_eq!(Axes::from(&vec![1u32]).indices(2).unwrap(), [1]);
        assert_eq!(Axes::from(&[-1i16; 1]).indices(4).unwrap(), [3]);
        assert_eq!(Axes::from(-1).indices(2).unwrap(), [1]);
        assert_eq!(Axes::from([Axis::from(1), Axis::from(-3)]).indices(3).unwrap(), [1, 0]);
        assert_eq!(Axes::ALL.indices(3).unwrap(), [0, 1, 2]);
        assert_eq!(Axes::from(None).indices(2).unwrap(), [0, 1]);
        assert!(Axes::EMPTY.indices(3).unwrap().is_empty());
        assert!(Axes::ALL.is_all() && !Axes::from([0, 1]).is_all() && !Axes::EMPTY.is_all());
        let error = Axes::from([1, -1]).indices(2).unwrap_err();
        assert!(matches!(error, Error::InvalidValue(_)), "{error:?}");
        assert!(
            error.to_string().contains("repeated axis -1 in axes [1, -1]"),
            "{error}"
        );
        assert!(matches!(
            Axes::from([0, 5]).indices(2),
            Err(Error::Axis { axis: 5, ndim: 2 })
        ));
    }

    #[test]
    fn optional_axes_take_integers_and_none() {
        fn get(axis: impl Into<OptionalAxis>) -> Option<Axis> {
            axis.into().get()
        }
        assert_eq!(get(None), None);
        assert_eq!(get(-1), Some(Axis::from(-1)));
        assert_eq!(get(2usize), Some(Axis::from(2)));
        assert_eq!(get(Axis::from(0)), Some(Axis::from(0u64)));
    }
}
