//! Chains of matrix products: NumPy's `linalg.matrix_power` (square and multiply) and
//! `linalg.multi_dot` (the association with the fewest multiply-adds, by the classic dynamic
//! program over the chain's dimensions), both through [`DeviceArray::matmul`].

use crate::array::device_array::DeviceArray;
use crate::error::{Error, Result};

use super::MatmulType;

impl<T: MatmulType> DeviceArray<T> {
    /// NumPy's `linalg.matrix_power(a, n)` for `n >= 0`: `a @ a @ ... @ a` (`n` factors) of
    /// each square matrix of the stack `(..., m, m)`, by repeated squaring (about `2 log2 n`
    /// products), in the array's type (integers wrap as NumPy's do); `n = 0` gives identities.
    /// A negative power is `a.inv()?.matrix_power(-n)` (feature `solver`), as NumPy computes
    /// it. A stack that is not square is [`Error::InvalidValue`].
    pub fn matrix_power(&self, n: u64) -> Result<DeviceArray<T>> {
        let nd = self.ndim();
        if nd < 2 || self.shape()[nd - 2] != self.shape()[nd - 1] {
            return Err(Error::InvalidValue(format!(
                "matrix_power: the last 2 dimensions of the array must be square; its shape is {:?}",
                self.shape()
            )));
        }
        if n == 0 {
            let m = self.shape()[nd - 1];
            let identity = DeviceArray::<T>::identity(self.stream(), m)?;
            return identity.broadcast_to(self.shape().to_vec())?.try_clone();
        }
        // Square and multiply over the bits of n, lowest first.
        let mut result: Option<DeviceArray<T>> = None;
        let mut base = self.try_clone()?;
        let mut rest = n;
        loop {
            if rest & 1 == 1 {
                result = Some(match result {
                    None => base.try_clone()?,
                    Some(partial) => partial.matmul(&base)?,
                });
            }
            rest >>= 1;
            if rest == 0 {
                break;
            }
            base = base.matmul(&base)?;
        }
        Ok(result.expect("n > 0 sets a bit"))
    }
}

/// The cheapest association of a chain of matrices with these dimensions (`dims[i] x
/// dims[i + 1]` is matrix `i`): `split[i][j]` is where the product of matrices `i..=j` is split.
fn chain_order(dims: &[usize]) -> Vec<Vec<usize>> {
    let count = dims.len() - 1;
    let mut cost = vec![vec![0u128; count]; count];
    let mut split = vec![vec![0usize; count]; count];
    for length in 1..count {
        for i in 0..count - length {
            let j = i + length;
            cost[i][j] = u128::MAX;
            for k in i..j {
                let here = dims[i] as u128 * dims[k + 1] as u128 * dims[j + 1] as u128;
                let total = cost[i][k].saturating_add(cost[k + 1][j]).saturating_add(here);
                if total < cost[i][j] {
                    cost[i][j] = total;
                    split[i][j] = k;
                }
            }
        }
    }
    split
}

/// The product of `matrices[i..=j]` in the order `split` gives.
fn chain_product<T: MatmulType>(
    matrices: &[DeviceArray<T>],
    split: &[Vec<usize>],
    i: usize,
    j: usize,
) -> Result<DeviceArray<T>> {
    if i == j {
        return matrices[i].try_clone();
    }
    let k = split[i][j];
    chain_product(matrices, split, i, k)?.matmul(&chain_product(matrices, split, k + 1, j)?)
}

/// NumPy's `linalg.multi_dot`: the product of two or more arrays, associated so that the fewest
/// multiply-adds are done (for three, `(A B) C` or `A (B C)`; beyond, the dynamic program over
/// the dimensions). The first may be 1-D (a row vector) and the last 1-D (a column vector), as
/// in NumPy; the others must be 2-D. Fewer than two arrays, other dimensions and dimensions that
/// do not chain are [`Error::InvalidValue`].
pub fn multi_dot<T: MatmulType>(arrays: &[&DeviceArray<T>]) -> Result<DeviceArray<T>> {
    let count = arrays.len();
    if count < 2 {
        return Err(Error::InvalidValue(format!(
            "multi_dot: at least two arrays are needed; {count} given"
        )));
    }
    let (first_vector, last_vector) = (arrays[0].ndim() == 1, arrays[count - 1].ndim() == 1);
    let mut matrices = Vec::with_capacity(count);
    for (i, array) in arrays.iter().enumerate() {
        let matrix = match (array.ndim(), i) {
            (1, 0) => array.reshape([1, array.len()])?,
            (1, i) if i == count - 1 => array.reshape([array.len(), 1])?,
            (2, _) => array.to_view(),
            (nd, _) => {
                return Err(Error::InvalidValue(format!(
                "multi_dot: array {i} has {nd} dimensions; only the first and last may be 1-D, the others must be 2-D"
            )))
            }
        };
        matrices.push(matrix);
    }
    let mut dims = vec![matrices[0].shape()[0]];
    for (i, matrix) in matrices.iter().enumerate() {
        if matrix.shape()[0] != dims[i] {
            return Err(Error::InvalidValue(format!(
                "multi_dot: array {i} has {} rows where the product so far has {} columns",
                matrix.shape()[0],
                dims[i]
            )));
        }
        dims.push(matrix.shape()[1]);
    }
    let split = chain_order(&dims);
    let product = chain_product(&matrices, &split, 0, count - 1)?;
    let (rows, cols) = (dims[0], dims[count]);
    match (first_vector, last_vector) {
        (true, true) => product.reshape([0usize; 0]),
        (true, false) => product.reshape([cols]),
        (false, true) => product.reshape([rows]),
        (false, false) => Ok(product),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The association `split` gives, written out.
    fn written(split: &[Vec<usize>], i: usize, j: usize) -> String {
        if i == j {
            return format!("{i}");
        }
        let k = split[i][j];
        format!("({} {})", written(split, i, k), written(split, k + 1, j))
    }

    #[test]
    fn the_chain_is_associated_cheapest_first() {
        // 10x100 @ 100x5 @ 5x50: (A B) C costs 7500, A (B C) 75000.
        assert_eq!(written(&chain_order(&[10, 100, 5, 50]), 0, 2), "((0 1) 2)");
        // A row vector first: 1x50 @ 50x50 @ 50x50 is cheapest left to right.
        assert_eq!(written(&chain_order(&[1, 50, 50, 50]), 0, 2), "((0 1) 2)");
        // A column vector last: right to left.
        assert_eq!(written(&chain_order(&[50, 50, 50, 1]), 0, 2), "(0 (1 2))");
        // The textbook chain of six (CLRS 15.2): ((A1 (A2 A3)) ((A4 A5) A6)).
        let split = chain_order(&[30, 35, 15, 5, 10, 20, 25]);
        assert_eq!(written(&split, 0, 5), "((0 (1 2)) ((3 4) 5))");
        assert_eq!(written(&chain_order(&[3, 4, 5]), 0, 1), "(0 1)");
    }
}
