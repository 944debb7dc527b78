//! NumPy's `linalg.lstsq`: the least-squares solution of `A x = b` with the fewest norm, from
//! the reduced SVD (NumPy calls LAPACK's `gelsd`, also SVD-based): `x = V diag(1/S) U^H b`
//! with singular values at most `rcond * S.max()` taken as zero (`U^H` is the conjugate
//! transpose; `U^T` for real types). Residuals and singular values are real.

use super::handles::refuse_solver_in_capture;
use super::singular::conjugate_transpose;
use super::stacks::{LinalgInput, SolverElement};
use crate::array::device_array::DeviceArray;
use crate::array::promotion::Scalars;
use crate::array::routines::math::{where_, ExprOps};
use crate::error::{Error, Result};

/// What [`DeviceArray::lstsq`] returns, as NumPy's tuple `(x, residuals, rank, s)`.
#[derive(Debug)]
pub struct Lstsq<F: SolverElement> {
    /// The solution, `(n,)` for a 1-D `b`, else `(n, k)`.
    pub x: DeviceArray<F>,
    /// The squared 2-norms of the residuals `b - A x`, one per column of `b` (`(1,)` for a 1-D
    /// `b`), when the rank is `n` and `m > n`; otherwise empty, as NumPy's.
    pub residuals: DeviceArray<<F as Scalars>::Real>,
    /// The rank of `A` (singular values above the cut-off).
    pub rank: usize,
    /// The singular values of `A`, descending, `(min(m, n),)`.
    pub singular_values: DeviceArray<<F as Scalars>::Real>,
}

impl<T: LinalgInput> DeviceArray<T> {
    /// NumPy's `linalg.lstsq(a, b, rcond)` for a matrix `a` (`(m, n)`) and `b` of `(m,)` or
    /// `(m, k)`: see [`Lstsq`]. `rcond: None` is NumPy 2's default, `eps * max(m, n)`. The rank
    /// is read back to the host (one wait), as NumPy returns it as an integer and the residuals'
    /// shape depends on it.
    ///
    /// Errors: `a` not 2-D, `b` not 1-D or 2-D, or rows that differ
    /// ([`Error::InvalidValue`]); an SVD that did not converge ([`cuda_libs::Error::Linalg`]).
    pub fn lstsq<U: LinalgInput<Factored = T::Factored>>(
        &self,
        b: &DeviceArray<U>,
        rcond: Option<f64>,
    ) -> Result<Lstsq<T::Factored>> {
        let (m, n) = match self.shape() {
            &[m, n] => (m, n),
            shape => {
                return Err(Error::InvalidValue(format!(
                    "lstsq: a must be a matrix; its shape is {shape:?}"
                )))
            }
        };
        let vector = b.ndim() == 1;
        if !(1..=2).contains(&b.ndim()) || b.shape()[0] != m {
            return Err(Error::InvalidValue(format!(
                "lstsq: b must be (m,) or (m, k) with m = {m} rows like a; its shape is {:?}",
                b.shape()
            )));
        }
        refuse_solver_in_capture(self.stream())?;
        let stream = self.stream().clone();
        let b = match vector {
            true => b.reshape([m, 1])?,
            false => b.reshape(b.shape().to_vec())?,
        };
        let k = b.shape()[1];
        let b = (&b).astype::<T::Factored>().eval_on(&stream)?;
        let rcond = rcond.unwrap_or(<T::Factored as SolverElement>::EPSILON * m.max(n) as f64);
        let (u, s, vh) = self.svd(false)?;
        let (x, rank) = match m.min(n) {
            0 => (DeviceArray::zeros(&stream, [n, k])?, 0),
            _ => {
                let cutoff = s.max_axes([-1], true)?;
                let kept = (&s).gt(&cutoff * rcond);
                let rank = kept.count_nonzero()?.item()? as usize;
                let kept = (&s).gt(&cutoff * rcond);
                let inverse = where_(kept, (&s).reciprocal(), 0.0)
                    .astype::<T::Factored>()
                    .eval()?
                    .expand_dims(-1)?;
                let projected = (&inverse * &conjugate_transpose(&u)?.matmul(&b)?).eval()?;
                (conjugate_transpose(&vh)?.matmul(&projected)?, rank)
            }
        };
        let residuals = match rank == n && m > n {
            true => {
                let fitted = match n {
                    0 => DeviceArray::zeros(&stream, [m, k])?,
                    _ => self.astype::<T::Factored>().eval_on(&stream)?.matmul(&x)?,
                };
                (&b - &fitted).abs().square().sum_axes([0], false)?
            }
            false => DeviceArray::zeros(&stream, [0usize])?,
        };
        let x = match vector {
            true => x.reshape([n])?,
            false => x,
        };
        Ok(Lstsq {
            x,
            residuals,
            rank,
            singular_values: s,
        })
    }
}
