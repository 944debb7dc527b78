//! NumPy's `linalg.eig` and `linalg.eigvals` over stacks `(..., n, n)` of general (not
//! symmetric) matrices, through cuSOLVER's `Xgeev` (CUDA 12.6 and later; an older cuSOLVER is
//! [`Error::NotSupported`] naming the symbol).
//!
//! The results are complex whatever the input (`Complex<f32>` for `f32`, `Complex<f64>` for
//! `f64`, the integers and `bool`): a real matrix is promoted before it is decomposed. NumPy
//! returns a real array where every eigenvalue is real; a type that depends on the values is
//! not one Rust can return, so this is a documented deviation (`docs/FROM_PYTHON.md`).
//!
//! cuSOLVER has no batched `geev`: a stack is one call per matrix, all on one workspace and
//! stream, with one read-back of the `info`s at the end. The copy the in-place routine needs
//! is of `A^T` (a transposing copy fused with the promotion), which read column-major is `A`;
//! the eigenvectors, the columns of the column-major result, are the rows of the row-major
//! buffer, so the vectors returned are that buffer's transposed view (no copy).

use cuda_driver::DeviceMemoryMut;
use cuda_libs::solver::Matrix;

use super::handles::{refuse_solver_in_capture, with_solver};
use super::stacks::{LinalgInput, SolverElement, SquareStack};
use crate::array::device_array::DeviceArray;
use crate::array::routines::math::ExprOps;
use crate::error::{Error, Result};

/// The complex type `eig` returns for an input `T`.
type EigType<T> = <<T as LinalgInput>::Factored as SolverElement>::Complex;

/// `eig`'s result: the eigenvalues `(..., n)` and the eigenvectors `(..., n, n)` as columns.
type EigPair<C> = (DeviceArray<C>, DeviceArray<C>);

/// `decompose`'s result: the eigenvalues and, when asked for, the vectors (as rows).
type Decomposed<C> = (DeviceArray<C>, Option<DeviceArray<C>>);

/// The symbol `eig` needs.
const GEEV: &str = "cusolverDnXgeev";

/// A cuSOLVER without `Xgeev` is [`Error::NotSupported`] naming it and the library loaded;
/// any other error as it is.
fn missing_geev(error: cuda_libs::Error) -> Error {
    match error {
        cuda_libs::Error::Symbol(missing) if missing.symbol.starts_with(GEEV) => Error::NotSupported(format!(
            "eig and eigvals need {GEEV} (cuSOLVER of CUDA 12.6 or later); the cuSOLVER loaded from {} lacks {}",
            missing.library.display(),
            missing.symbol
        )),
        other => other.into(),
    }
}

/// The eigenvalues (`(count, n)`) and, with `vectors`, the right eigenvectors (the compact
/// `(count, n, n)` buffer whose rows they are) of the non-empty stack `a`.
fn decompose<T: LinalgInput>(a: &DeviceArray<T>, stack: &SquareStack, vectors: bool) -> Result<Decomposed<EigType<T>>> {
    let stream = a.stream().clone();
    let (n, count) = (stack.n, stack.count());
    let m = a
        .swapaxes(-2, -1)?
        .astype::<EigType<T>>()
        .eval_on(&stream)?
        .reshape([count, n, n])?;
    let w = DeviceArray::<EigType<T>>::empty(&stream, [count, n])?;
    let vr = match vectors {
        true => Some(DeviceArray::<EigType<T>>::empty(&stream, [count, n, n])?),
        false => None,
    };
    let square = Matrix::square(n);
    with_solver(&stream, |solver| {
        let bytes = solver
            .geev_workspace::<EigType<T>>(vectors, square)
            .map_err(missing_geev)?;
        let mut workspace = DeviceArray::<u8>::empty(&stream, [bytes])?;
        for i in 0..count {
            let mut matrix = m.index_axis(0, i as i64)?;
            let mut values = w.index_axis(0, i as i64)?;
            let mut right = vr.as_ref().map(|v| v.index_axis(0, i as i64)).transpose()?;
            let right = right.as_mut().map(|r| r as &mut dyn DeviceMemoryMut);
            let workspace: Option<&mut dyn DeviceMemoryMut> = match bytes {
                0 => None,
                _ => Some(&mut workspace),
            };
            solver
                .geev::<EigType<T>>(square, &mut matrix, &mut values, right, workspace)
                .map_err(missing_geev)?;
        }
        Ok(solver.check_info()?)
    })?;
    Ok((w, vr))
}

impl<T: LinalgInput> DeviceArray<T> {
    /// NumPy's `linalg.eig(a)`: the eigenvalues (`(..., n)`, in no particular order) and the
    /// right eigenvectors (`(..., n, n)`, column `i` for eigenvalue `i`, each of norm 1) of each
    /// general square matrix of the stack, `A v = λ v`, always complex (see the module's
    /// documentation).
    ///
    /// Errors: a stack that is not square ([`Error::InvalidValue`]); a cuSOLVER without `Xgeev`
    /// ([`Error::NotSupported`] naming it); a solver that did not converge
    /// ([`cuda_libs::Error::Linalg`] with [`cuda_libs::LinalgFailure::NoConvergence`] and the
    /// matrix's index in the stack). `0 x 0` matrices give empty results.
    pub fn eig(&self) -> Result<EigPair<EigType<T>>> {
        let stack = SquareStack::of("eig", self.shape())?;
        refuse_solver_in_capture(self.stream())?;
        let values_shape = [&stack.batch[..], &[stack.n]].concat();
        if stack.is_empty() {
            return Ok((
                DeviceArray::zeros(self.stream(), values_shape)?,
                DeviceArray::zeros(self.stream(), stack.shape())?,
            ));
        }
        let (values, vectors) = decompose(self, &stack, true)?;
        let vectors = vectors.expect("asked for");
        Ok((
            values.reshape(values_shape)?,
            vectors.reshape(stack.shape())?.swapaxes(-2, -1)?,
        ))
    }

    /// NumPy's `linalg.eigvals(a)`: the eigenvalues alone (`(..., n)`, complex), as
    /// [`eig`](Self::eig) computes them without the vectors.
    pub fn eigvals(&self) -> Result<DeviceArray<EigType<T>>> {
        let stack = SquareStack::of("eigvals", self.shape())?;
        refuse_solver_in_capture(self.stream())?;
        let values_shape = [&stack.batch[..], &[stack.n]].concat();
        if stack.is_empty() {
            return DeviceArray::zeros(self.stream(), values_shape);
        }
        decompose(self, &stack, false)?.0.reshape(values_shape)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cusolver_without_geev_is_not_supported_naming_it() {
        let missing = cuda_sys::SymbolError {
            symbol: "cusolverDnXgeev_bufferSize",
            library: "/usr/lib/libcusolver.so.11".into(),
            library_version: Some(11_400),
            needs_version: None,
        };
        match missing_geev(cuda_libs::Error::Symbol(missing)) {
            Error::NotSupported(message) => {
                assert!(message.contains("cusolverDnXgeev_bufferSize"), "{message}");
                assert!(
                    message.contains("12.6") && message.contains("libcusolver.so.11"),
                    "{message}"
                );
            }
            other => panic!("{other:?}"),
        }
        let other = cuda_libs::Error::InvalidValue("A is 3 x 4".into());
        assert!(matches!(
            missing_geev(other),
            Error::Library(cuda_libs::Error::InvalidValue(_))
        ));
    }
}
