//! What the transforms take: an array, or a lazy expression ([`Expr`]) whose value they
//! transform without writing it to memory first where cuFFT can load it itself.

use super::FftElement;
use crate::array::device_array::DeviceArray;
use crate::array::routines::math::Expr;
use crate::error::{Error, Result};

/// The input of a transform: `&DeviceArray<T>`, an [`Expr`] (by value or by reference: the
/// reference transforms a copy of the expression, which borrows the same arrays), for every
/// element type the transforms take ([`FftElement`]).
pub trait FftInput<'a>: sealed::Sealed {
    /// The element type of the input.
    type Elem: FftElement;
    #[doc(hidden)]
    fn into_input(self) -> Input<'a, Self::Elem>;
}

mod sealed {
    pub trait Sealed {}
}

/// An input as the module runs it (public, but not exported, as the type of [`FftInput`]'s
/// hidden method).
#[doc(hidden)]
// An expression is held in place (no allocation per call); the input is moved once, into the
// transform.
#[allow(clippy::large_enum_variant)]
pub enum Input<'a, T: FftElement> {
    Array(&'a DeviceArray<T>),
    Expr(Expr<'a, T>),
}

impl<T: FftElement> Input<'_, T> {
    /// The shape of the input (an expression's broadcast shape).
    pub(super) fn shape(&self) -> Result<Vec<usize>> {
        match self {
            Input::Array(a) => Ok(a.shape().to_vec()),
            Input::Expr(e) => e.shape(),
        }
    }

    /// [`Error::NotSupported`] where the input's stream is capturing a graph, before anything
    /// is queued: the graph would replay cuFFT's kernels on memory of a cached plan (its tables,
    /// its callback's caller info), which the plan cache rewrites or destroys (evicting the
    /// plan, cleared, its thread ending) while the graph may still run.
    pub(super) fn refuse_capture(&self) -> Result<()> {
        let stream = match self {
            Input::Array(a) => a.stream(),
            Input::Expr(e) => e.stream()?,
        };
        if stream.in_capture()? {
            return Err(Error::NotSupported(
                "an fft on a stream that is capturing a graph: the graph would use memory of a cached \
                 cuFFT plan, which the plan cache may destroy while the graph lives; run the \
                 transform outside the capture"
                    .into(),
            ));
        }
        Ok(())
    }
}

impl<T: FftElement> sealed::Sealed for &DeviceArray<T> {}
impl<T: FftElement> sealed::Sealed for Expr<'_, T> {}
impl<T: FftElement> sealed::Sealed for &Expr<'_, T> {}

impl<'a, T: FftElement> FftInput<'a> for &'a DeviceArray<T> {
    type Elem = T;
    fn into_input(self) -> Input<'a, T> {
        Input::Array(self)
    }
}

impl<'a, T: FftElement> FftInput<'a> for Expr<'a, T> {
    type Elem = T;
    fn into_input(self) -> Input<'a, T> {
        Input::Expr(self)
    }
}

impl<'a, T: FftElement> FftInput<'a> for &Expr<'a, T> {
    type Elem = T;
    fn into_input(self) -> Input<'a, T> {
        Input::Expr(self.duplicate())
    }
}
