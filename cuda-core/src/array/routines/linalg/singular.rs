//! NumPy's `linalg.svd` and `linalg.svdvals` over stacks `(..., m, n)`, and what is computed
//! from singular values: the matrix 2-norm, -2-norm and nuclear norm, `cond`, `matrix_rank`
//! and `pinv`, and their `hermitian=True` forms, which NumPy computes from `eigh` instead.
//!
//! A stack of matrices up to [`JACOBI_BATCHED_MAX`] on each side is one Jacobi call for the
//! whole stack (`gesvdjBatched`); one matrix, or a stack of larger ones, goes through
//! cuSOLVER's Jacobi `gesvdj`, one call per matrix (no batched form), with one read-back at the
//! end; a matrix Jacobi did not converge on within cuSOLVER's sweeps is decomposed again by the
//! QR algorithm (`Xgesvd`), as torch does. Both take the matrix with at least as many rows as
//! columns (`Xgesvd` takes no other): a row-major `m x n` copy with `m <= n` is such a matrix
//! read column-major (its transpose, whose singular values are the same), and a taller one is
//! copied transposed instead: one copy either way, which the destructive routines need anyway.
//!
//! With vectors, `A^T = U' S V'^T` gives `A = V' S U'^T`: for the copy read as `A^T`, cuSOLVER's
//! `U'` buffer read row-major is `U'^T`, NumPy's `Vh`, and its `V'^T` buffer read row-major is
//! `V'`, NumPy's `U`, with no transpose at all; for the transposed copy both come back as
//! transposed views. Jacobi returns `V` rather than `V^T`, and its batched form full matrices
//! only: the reduced ones are views of their leading rows or columns.
//!
//! Complex matrices follow the same reading with `^H` (the conjugate transpose) in place of
//! `^T` where cuSOLVER conjugates: `A^T = U' S V'^H` gives `A = conj(V') S U'^T`, and the QR
//! algorithm's `V'^H` buffer read row-major is `conj(V')` already; only Jacobi's `V'` buffer is
//! conjugated (one element-wise copy). The singular values are real: `f32` of `Complex<f32>`.

use std::any::Any;

use cuda_driver::DeviceMemoryMut;
use cuda_libs::solver::{SvdVectors, JACOBI_BATCHED_MAX};
use cuda_libs::LinalgFailure;
use num_complex::Complex;

use super::handles::{refuse_solver_in_capture, with_solver};
use super::stacks::{LinalgInput, MatrixStack, SolverElement, SquareStack};
use crate::array::device_array::DeviceArray;
use crate::array::dtype::Element;
use crate::array::promotion::Scalars;
use crate::array::routines::math::{where_, ExprOps};
use crate::array::view::Slice;
use crate::error::{Error, Result};

/// The real type of `F`'s singular values.
type RealOf<F> = <F as Scalars>::Real;

/// `svd`'s result: `U`, the singular values, `Vh`.
type Svd<F> = (DeviceArray<F>, DeviceArray<RealOf<F>>, DeviceArray<F>);

/// The singular values and, when asked for, the vectors `U` and `Vh`.
type Decomposed<F> = (DeviceArray<RealOf<F>>, Option<(DeviceArray<F>, DeviceArray<F>)>);

/// How a stack's matrices are decomposed.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Method {
    /// One `gesvdjBatched` call for the whole stack: it writes full `U` and `V`.
    BatchedJacobi,
    /// `gesvdj` per matrix: `V` (not `V^H`), economic when asked.
    Jacobi,
    /// `Xgesvd` (the QR algorithm) per matrix: `V^H`.
    Qr,
}

/// The singular values of `stack` (`(count, k)`, descending) and, with `vectors`, `U` and `Vh`
/// (`(count, m, m)` and `(count, n, n)` when `full`, else `(count, m, k)` and `(count, k, n)`),
/// none of its extents 0. A stack of small matrices is one batched Jacobi call; otherwise each
/// matrix goes through Jacobi's `gesvdj`, and, as torch does, through the QR algorithm again
/// when Jacobi did not converge within cuSOLVER's sweeps.
fn decompose<T: LinalgInput>(
    a: &DeviceArray<T>,
    stack: &MatrixStack,
    vectors: Option<bool>,
) -> Result<Decomposed<T::Factored>> {
    if stack.count() > 1 && stack.m.max(stack.n) <= JACOBI_BATCHED_MAX {
        return decompose_by(a, stack, vectors, Method::BatchedJacobi);
    }
    match decompose_by(a, stack, vectors, Method::Jacobi) {
        Err(Error::Library(cuda_libs::Error::Linalg {
            failure: LinalgFailure::NoConvergence { .. },
            ..
        })) => decompose_by(a, stack, vectors, Method::Qr),
        decomposed => decomposed,
    }
}

/// [`decompose`] by one [`Method`].
fn decompose_by<T: LinalgInput>(
    a: &DeviceArray<T>,
    stack: &MatrixStack,
    vectors: Option<bool>,
    method: Method,
) -> Result<Decomposed<T::Factored>> {
    let stream = a.stream().clone();
    let (count, k) = (stack.count(), stack.k());
    let (operand, as_is) = stack.svd_operand();
    let (rows, cols) = (operand.rows, operand.cols);
    let source = match as_is {
        true => a.to_view(),
        false => a.swapaxes(-2, -1)?,
    };
    let mut copy = source
        .astype::<T::Factored>()
        .eval_on(&stream)?
        .reshape([count, cols, rows])?;
    let mut s = DeviceArray::<RealOf<T::Factored>>::empty(&stream, [count, k])?;
    let full = vectors.unwrap_or(false);
    // cuSOLVER's left vectors (rows x ucols) and right ones (vt_rows x cols for the QR
    // algorithm's V^H, cols x cols for Jacobi's V), column-major, one matrix after another;
    // none without vectors. The operand has at least as many rows as columns, so the economic
    // sizes are `cols`.
    let (ucols, vt_rows) = match (vectors.is_some(), method, full) {
        (false, _, _) => (0, 0),
        (true, Method::BatchedJacobi, _) | (true, _, true) => (rows, cols),
        (true, _, false) => (cols, cols),
    };
    let mut left = DeviceArray::<T::Factored>::empty(&stream, [count, ucols, rows])?;
    let mut right = DeviceArray::<T::Factored>::empty(&stream, [count, cols, vt_rows])?;
    let job = match (vectors, full) {
        (None, _) => SvdVectors::None,
        (Some(_), true) => SvdVectors::All,
        (Some(_), false) => SvdVectors::Thin,
    };
    with_solver(&stream, |solver| {
        if method == Method::BatchedJacobi {
            let with = vectors.is_some();
            let bytes = solver.gesvdj_batched_workspace::<T::Factored>(with, operand, count)?;
            let mut workspace = DeviceArray::<u8>::empty(&stream, [bytes])?;
            let workspace: Option<&mut dyn DeviceMemoryMut> = match bytes {
                0 => None,
                _ => Some(&mut workspace),
            };
            let (u, v): (Option<&mut dyn DeviceMemoryMut>, Option<&mut dyn DeviceMemoryMut>) = match with {
                true => (Some(&mut left), Some(&mut right)),
                false => (None, None),
            };
            solver.gesvdj_batched::<T::Factored>(operand, count, &mut copy, &mut s, u, v, workspace)?;
        } else {
            let bytes = match method {
                Method::Jacobi => solver.gesvdj_workspace::<T::Factored>(job, operand)?,
                _ => solver.gesvd_workspace::<T::Factored>(job, operand)?,
            };
            let mut workspace = DeviceArray::<u8>::empty(&stream, [bytes])?;
            for i in 0..count {
                let index = i as i64;
                let mut matrix = copy.index_axis(0, index)?;
                let mut values = s.index_axis(0, index)?;
                let (mut u, mut vt) = (left.index_axis(0, index)?, right.index_axis(0, index)?);
                let (u, vt): (Option<&mut dyn DeviceMemoryMut>, Option<&mut dyn DeviceMemoryMut>) = match job {
                    SvdVectors::None => (None, None),
                    _ => (Some(&mut u), Some(&mut vt)),
                };
                let workspace: Option<&mut dyn DeviceMemoryMut> = match bytes {
                    0 => None,
                    _ => Some(&mut workspace),
                };
                match method {
                    Method::Jacobi => {
                        solver.gesvdj::<T::Factored>(job, operand, &mut matrix, &mut values, u, vt, workspace)?
                    }
                    _ => solver.gesvd::<T::Factored>(job, operand, &mut matrix, &mut values, u, vt, workspace)?,
                }
            }
        }
        Ok(solver.check_info()?)
    })?;
    if vectors.is_none() {
        return Ok((s, None));
    }
    // Read row-major, `left` is U'^T, and `right` is conj(V') (the QR algorithm wrote V'^H) or
    // V'^T (Jacobi wrote V'; conjugated here for complex types, so that it reads conj(V')^T).
    let jacobi = method != Method::Qr;
    let right = match jacobi && T::Factored::DTYPE.is_complex() {
        true => (&right).conj().eval_on(&stream)?,
        false => right,
    };
    let (u, vh) = match (as_is, jacobi) {
        // The operand was A^T = U' S V'^H, so A = conj(V') S U'^T: U = conj(V'), Vh = U'^T.
        (true, false) => (right, left),
        (true, true) => (right.swapaxes(-2, -1)?, left),
        // The operand was A = U' S V'^H: U = U', Vh = V'^H.
        (false, false) => (left.swapaxes(-2, -1)?, right.swapaxes(-2, -1)?),
        (false, true) => (left.swapaxes(-2, -1)?, right),
    };
    // Only the batched routine wrote full vectors where reduced ones were asked for.
    let (u, vh) = match full || method != Method::BatchedJacobi {
        true => (u, vh),
        false => (
            u.slice(&[Slice::ALL, Slice::ALL, Slice::new(0, Some(k))])?,
            vh.slice(&[Slice::ALL, Slice::new(0, Some(k))])?,
        ),
    };
    Ok((s, Some((u, vh))))
}

/// The singular values of an `f32`, `f64`, `Complex<f32>` or `Complex<f64>` stack, in its real
/// type `T::Real` (`f32` of `Complex<f32>`), for callers generic over more types (the matrix
/// norms); `None` for any other type.
pub(super) fn singular_values_as_real<T: Scalars>(a: &DeviceArray<T>) -> Option<Result<DeviceArray<T::Real>>> {
    fn same<S: Element, R: Element>(s: DeviceArray<S>) -> DeviceArray<R> {
        let boxed: Box<dyn Any> = Box::new(s);
        *boxed.downcast::<DeviceArray<R>>().expect("T::Real is S")
    }
    let any: &dyn Any = a;
    if let Some(a) = any.downcast_ref::<DeviceArray<f32>>() {
        return Some(a.svdvals().map(same));
    }
    if let Some(a) = any.downcast_ref::<DeviceArray<f64>>() {
        return Some(a.svdvals().map(same));
    }
    if let Some(a) = any.downcast_ref::<DeviceArray<Complex<f32>>>() {
        return Some(a.svdvals().map(same));
    }
    any.downcast_ref::<DeviceArray<Complex<f64>>>()
        .map(|a| a.svdvals().map(same))
}

/// `x^H` of a stack: a transposed view of a real `x`, a conjugated compact copy of a complex one.
pub(super) fn conjugate_transpose<F: SolverElement>(x: &DeviceArray<F>) -> Result<DeviceArray<F>> {
    let transposed = x.swapaxes(-2, -1)?;
    match F::DTYPE.is_complex() {
        true => (&transposed).conj().eval(),
        false => Ok(transposed),
    }
}

/// `x` (a `(count, r, c)` stack, perhaps a transposed or sliced view) in the shape `batch + [r,
/// c]`: a view when the batch is one axis of `count` or none, a compact copy otherwise.
fn reshape_view<F: Element>(x: DeviceArray<F>, shape: Vec<usize>) -> Result<DeviceArray<F>> {
    match shape.len() {
        2 => x.index_axis(0, 0),
        3 => Ok(x),
        _ => x.reshape(shape),
    }
}

impl<T: LinalgInput> DeviceArray<T> {
    /// NumPy's `linalg.svdvals`: the singular values of each matrix of the stack `(..., m, n)`,
    /// descending, of shape `(..., min(m, n))`, in the promoted type. Under two dimensions is
    /// [`Error::InvalidValue`](crate::Error::InvalidValue); an SVD that did not converge is
    /// [`cuda_libs::Error::Linalg`] with [`cuda_libs::LinalgFailure::NoConvergence`] and the
    /// matrix's index. Empty matrices give empty results.
    pub fn svdvals(&self) -> Result<DeviceArray<RealOf<T::Factored>>> {
        let stack = MatrixStack::of("svdvals", self.shape())?;
        refuse_solver_in_capture(self.stream())?;
        let shape = [&stack.batch[..], &[stack.k()]].concat();
        if stack.count() == 0 || stack.k() == 0 {
            return DeviceArray::zeros(self.stream(), shape);
        }
        decompose(self, &stack, None)?.0.reshape(shape)
    }

    /// NumPy's `linalg.svd(a, full_matrices)`: `(U, S, Vh)` with `A = U diag(S) Vh` for each
    /// matrix of the stack `(..., m, n)`: `S` descending, `(..., k)` with `k = min(m, n)`;
    /// `U` `(..., m, m)` and `Vh` `(..., n, n)` with `full_matrices`, else `(..., m, k)` and
    /// `(..., k, n)`; in the promoted type, `S` in its real type. (`compute_uv=False` is
    /// [`svdvals`](Self::svdvals).) `U` and `Vh` may be transposed or sliced views.
    ///
    /// Errors: under two dimensions ([`Error::InvalidValue`](crate::Error::InvalidValue)); an
    /// SVD that did not converge ([`cuda_libs::Error::Linalg`] with the matrix's index). Empty
    /// matrices give NumPy's shapes (identities for the full vectors of an empty side).
    pub fn svd(&self, full_matrices: bool) -> Result<Svd<T::Factored>> {
        let stack = MatrixStack::of("svd", self.shape())?;
        refuse_solver_in_capture(self.stream())?;
        let (m, n, k) = (stack.m, stack.n, stack.k());
        let with = |tail: &[usize]| [&stack.batch[..], tail].concat();
        let stream = self.stream().clone();
        if stack.count() == 0 || k == 0 {
            let s = DeviceArray::zeros(&stream, with(&[k]))?;
            let (u, vh) = match full_matrices {
                true => (
                    DeviceArray::<T::Factored>::identity(&stream, m)?
                        .broadcast_to(with(&[m, m]))?
                        .try_clone()?,
                    DeviceArray::<T::Factored>::identity(&stream, n)?
                        .broadcast_to(with(&[n, n]))?
                        .try_clone()?,
                ),
                false => (
                    DeviceArray::zeros(&stream, with(&[m, k]))?,
                    DeviceArray::zeros(&stream, with(&[k, n]))?,
                ),
            };
            return Ok((u, s, vh));
        }
        let (s, vectors) = decompose(self, &stack, Some(full_matrices))?;
        let (u, vh) = vectors.expect("asked for vectors");
        let (u_cols, vh_rows) = match full_matrices {
            true => (m, n),
            false => (k, k),
        };
        Ok((
            reshape_view(u, with(&[m, u_cols]))?,
            s.reshape(with(&[k]))?,
            reshape_view(vh, with(&[vh_rows, n]))?,
        ))
    }

    /// NumPy's `linalg.pinv(a, rcond)`: the Moore-Penrose pseudo-inverse of each matrix of the
    /// stack `(..., m, n)`, of shape `(..., n, m)`, from the reduced SVD: `Vh^H diag(1/S) U^H`,
    /// singular values at most `rcond * S.max()` taken as zero (NumPy's default `rcond` is
    /// `1e-15`). The reciprocals scale `U^H` in one fused kernel; one batched product follows
    /// (after a conjugating copy of `Vh^H` for complex types).
    /// [`pinv_rtol`](Self::pinv_rtol) takes NumPy 2's `rtol` instead.
    pub fn pinv(&self, rcond: f64) -> Result<DeviceArray<T::Factored>> {
        let stack = MatrixStack::of("pinv", self.shape())?;
        let (u, s, vh) = self.svd(false)?;
        if stack.count() == 0 || stack.k() == 0 {
            let shape = [&stack.batch[..], &[stack.n, stack.m]].concat();
            return DeviceArray::zeros(self.stream(), shape);
        }
        let cutoff = s.max_axes([-1], true)?;
        let kept = (&s).gt(&cutoff * rcond);
        let inverse = where_(kept, (&s).reciprocal(), 0.0)
            .astype::<T::Factored>()
            .eval()?
            .expand_dims(-1)?;
        let scaled = (&inverse * (&u.swapaxes(-2, -1)?).conj()).eval()?;
        conjugate_transpose(&vh)?.matmul(&scaled)
    }

    /// NumPy's `linalg.pinv(a, rcond, hermitian=True)`: the pseudo-inverse of each Hermitian
    /// (real: symmetric) matrix of the square stack `(..., n, n)` from its eigenvalues `w` and
    /// eigenvectors `U` ([`eigh`](Self::eigh), lower triangle): `U diag(1/w) U^H`, eigenvalues
    /// of modulus at most `rcond * max |w|` taken as zero. A stack that is not square is
    /// [`Error::InvalidValue`](crate::Error::InvalidValue); the eigen-solver's failure as in
    /// `eigh`.
    pub fn pinv_hermitian(&self, rcond: f64) -> Result<DeviceArray<T::Factored>> {
        let stack = SquareStack::of("pinv", self.shape())?;
        if stack.is_empty() {
            return DeviceArray::zeros(self.stream(), stack.shape());
        }
        let (w, u) = self.eigh(false)?;
        let magnitudes = (&w).abs().eval()?;
        let cutoff = magnitudes.max_axes([-1], true)?;
        let kept = (&magnitudes).gt(&cutoff * rcond);
        let inverse = where_(kept, (&w).reciprocal(), 0.0)
            .astype::<T::Factored>()
            .eval()?
            .expand_dims(-1)?;
        let scaled = (&inverse * (&u.swapaxes(-2, -1)?).conj()).eval()?;
        u.matmul(&scaled)
    }

    /// NumPy 2's `linalg.pinv(a, rtol=rtol)`: [`pinv`](Self::pinv) with the cut-off
    /// `rtol * S.max()`, `rtol` defaulting (`None`) to `max(M, N) * eps` as NumPy's `rtol=None`.
    pub fn pinv_rtol(&self, rtol: Option<f64>) -> Result<DeviceArray<T::Factored>> {
        let stack = MatrixStack::of("pinv", self.shape())?;
        let eps = <T::Factored as SolverElement>::EPSILON;
        self.pinv(rtol.unwrap_or(stack.m.max(stack.n) as f64 * eps))
    }

    /// NumPy's `linalg.cond(x)` (the 2-norm condition number, `ord=None`): the greatest
    /// singular value over the least, of shape `self.shape[:-2]` (infinite for a singular
    /// matrix, as NumPy's), real.
    pub fn cond(&self) -> Result<DeviceArray<RealOf<T::Factored>>> {
        let s = self.svdvals()?;
        let greatest = s.max_axes(-1, false)?;
        let least = s.min_axes(-1, false)?;
        (&greatest / &least).eval()
    }

    /// NumPy's `linalg.matrix_rank(A)` with its default tolerance: the number of singular
    /// values above `S.max() * max(M, N) * eps` per matrix, of shape `self.shape[:-2]`
    /// (`i64`). A 1-D array is a vector: its rank is 1 unless it is all zeros; 0-d is
    /// [`Error::InvalidValue`](crate::Error::InvalidValue). [`matrix_rank_with`](Self::matrix_rank_with)
    /// takes NumPy's `tol` and `rtol`.
    pub fn matrix_rank(&self) -> Result<DeviceArray<i64>> {
        self.matrix_rank_with(None, None)
    }

    /// NumPy's `linalg.matrix_rank(A, tol, rtol=rtol)`: the number of singular values above the
    /// absolute `tol` when it is given (`rtol` is then unused, as in NumPy), otherwise above
    /// `S.max() * rtol`, `rtol` defaulting to `max(M, N) * eps`. Otherwise as
    /// [`matrix_rank`](Self::matrix_rank).
    pub fn matrix_rank_with(&self, tol: Option<f64>, rtol: Option<f64>) -> Result<DeviceArray<i64>> {
        if self.ndim() == 1 {
            return self.ne(0).any()?.astype::<i64>().eval();
        }
        let stack = MatrixStack::of("matrix_rank", self.shape())?;
        count_above::<T::Factored>(&self.svdvals()?, tol, rtol, stack.m.max(stack.n))
    }

    /// NumPy's `linalg.matrix_rank(A, tol, hermitian=True, rtol=rtol)`: as
    /// [`matrix_rank_with`](Self::matrix_rank_with) with the moduli of the eigenvalues of each
    /// Hermitian (real: symmetric) matrix ([`eigvalsh`](Self::eigvalsh), lower triangle) in
    /// place of its singular values. The stack must be square
    /// ([`Error::InvalidValue`](crate::Error::InvalidValue)); a 1-D array is a vector, as there.
    pub fn matrix_rank_hermitian(&self, tol: Option<f64>, rtol: Option<f64>) -> Result<DeviceArray<i64>> {
        if self.ndim() == 1 {
            return self.ne(0).any()?.astype::<i64>().eval();
        }
        let stack = SquareStack::of("matrix_rank", self.shape())?;
        let magnitudes = (&self.eigvalsh(false)?).abs().eval()?;
        count_above::<T::Factored>(&magnitudes, tol, rtol, stack.n)
    }
}

/// `matrix_rank`'s count of the values `s` (`(..., k)`, none negative) above the absolute `tol`
/// when given, else above `s.max() * rtol`, `rtol` defaulting to `largest_side * eps`.
fn count_above<F: SolverElement>(
    s: &DeviceArray<RealOf<F>>,
    tol: Option<f64>,
    rtol: Option<f64>,
    largest_side: usize,
) -> Result<DeviceArray<i64>> {
    if let Some(tol) = tol {
        return s.gt(tol).count_nonzero_axes(-1, false);
    }
    let rtol = rtol.unwrap_or(largest_side as f64 * F::EPSILON);
    let greatest = s.max_axes([-1], true)?;
    s.gt(&greatest * rtol).count_nonzero_axes(-1, false)
}
