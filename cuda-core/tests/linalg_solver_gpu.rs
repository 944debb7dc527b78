//! NumPy's LU family (`solve`, `inv`, `det`, `slogdet`) and `cholesky` on a GPU against host references in
//! f64: residuals `||A x - b|| / (||A|| ||x||) <= c * eps` for single matrices (cuSOLVER) and
//! stacks (cuBLAS's batched LU) with vector and matrix right-hand sides and broadcast batches;
//! `A @ inv(A)` against the identity; determinants against a host elimination; integers
//! promoted to f64; empty stacks and `0 x 0` matrices as NumPy gives them; a singular matrix
//! (alone, and one inside a batch, with its index) as `Error::Linalg`, and its determinant 0;
//! Cholesky factors rebuilding `A` (lower and upper, one matrix and stacks) with the other
//! triangle zero, and indefinite matrices (alone, and one inside a batch) as `Error::Linalg`;
//! `eigh`/`eigvalsh` against a host Jacobi solver with orthonormal vectors; `svdvals`, the
//! full and reduced `svd` (reconstruction, orthonormal `U` and `Vh`), the matrix norms 2, -2
//! and nuclear, `cond`, `matrix_rank` and `pinv` against the host; `qr` (reduced, complete,
//! `r`: reconstruction, orthonormal `Q`, triangular `R`); `lstsq` (normal equations, residuals,
//! rank, the minimum-norm solution); `matrix_power` (with a
//! negative power through `inv`) and `multi_dot` against host products; the complex forms; the
//! real norms of complex arrays for every `ord` (and `vector_norm`, `matrix_norm` of stacks);
//! `solve` of a real matrix with complex right-hand sides and back (NumPy's promoted type);
//! `pinv_hermitian` and `matrix_rank_hermitian` against `inv`, the SVD's and the Penrose
//! conditions.
//! Without a driver or device each test prints `skipped: <why>` and passes, unless
//! `CUDA_REQUIRE_GPU=1`.

mod common;

use common::products::{array, host_matmul};
use cuda_core::graph::{CaptureMode, GraphBuilder};
use cuda_core::{DeviceArray, Error, LinalgInput, Norm, Scalars, SolverElement, Stream};
use cuda_libs::LinalgFailure;
use num_complex::Complex;

/// The real element types the real-matrix tests run in: their singular values, eigenvalues and
/// residuals are of the type itself.
trait RealSolverElement: SolverElement + Scalars<Real = Self> {}
impl RealSolverElement for f32 {}
impl RealSolverElement for f64 {}

/// `count` well-conditioned `n x n` matrices (diagonally dominant), row-major one after another.
fn matrices(count: usize, n: usize, seed: u64) -> Vec<f64> {
    let mut state = seed
        .wrapping_mul(6_364_136_223_846_793_005)
        .wrapping_add(1_442_695_040_888_963_407);
    let mut next = move || {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        ((state >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0
    };
    let mut out = Vec::with_capacity(count * n * n);
    for _ in 0..count {
        for i in 0..n {
            for j in 0..n {
                let value = next();
                // Alternating signs on the diagonal, so determinants of both signs occur.
                let diagonal = if i % 2 == 0 { n as f64 } else { -(n as f64) };
                out.push(if i == j { diagonal + value } else { value });
            }
        }
    }
    out
}

fn host<T: RealSolverElement>(array: &DeviceArray<T>) -> Vec<f64> {
    array.to_vec().unwrap().iter().map(|v| v.to_f64()).collect()
}

fn frobenius(values: &[f64]) -> f64 {
    values.iter().map(|v| v * v).sum::<f64>().sqrt()
}

/// The determinant of a row-major `n x n` matrix by elimination with partial pivoting.
fn host_det(a: &[f64], n: usize) -> f64 {
    let promoted: Vec<_> = a.iter().map(|&x| Complex::new(x, 0.0)).collect();
    complex_det(&promoted, n).re
}

/// Asserts `||A x - b|| / (||A|| ||x||) <= c * eps` for each system of a stack.
#[track_caller]
fn assert_residuals(what: &str, a: &[f64], x: &[f64], b: &[f64], (count, n, k): (usize, usize, usize), eps: f64) {
    for i in 0..count {
        let a_i = &a[i * n * n..(i + 1) * n * n];
        let x_i = &x[i * n * k..(i + 1) * n * k];
        let b_i = &b[i * n * k..(i + 1) * n * k];
        let ax = host_matmul(a_i, x_i, n, n, k);
        let r: Vec<f64> = ax.iter().zip(b_i).map(|(p, q)| p - q).collect();
        let relative = frobenius(&r) / (frobenius(a_i) * frobenius(x_i)).max(f64::MIN_POSITIVE);
        assert!(
            relative <= 50.0 * n as f64 * eps,
            "{what}: system {i}: relative residual {relative:e}"
        );
    }
}

fn epsilon<T: RealSolverElement>() -> f64 {
    match std::mem::size_of::<T>() {
        4 => f32::EPSILON as f64,
        _ => f64::EPSILON,
    }
}

fn solves<T: RealSolverElement + LinalgInput<Factored = T>>(stream: &Stream) {
    let eps = epsilon::<T>();
    let dtype = T::DTYPE;
    // One matrix (cuSOLVER), one vector.
    for n in [1, 7, 64, 300] {
        let a_host = matrices(1, n, n as u64);
        let b_host = common::products::values(n, 3);
        let a = array::<T>(stream, &a_host, &[n, n]);
        let b = array::<T>(stream, &b_host, &[n]);
        let x = a.solve(&b).unwrap();
        assert_eq!(x.shape(), [n]);
        assert_residuals(
            &format!("{dtype} solve {n}"),
            &a_host,
            &host(&x),
            &b_host,
            (1, n, 1),
            eps,
        );
    }
    // One matrix, several right-hand sides.
    let (n, k) = (48, 5);
    let a_host = matrices(1, n, 11);
    let b_host = common::products::values(n * k, 4);
    let x = array::<T>(stream, &a_host, &[n, n])
        .solve(&array::<T>(stream, &b_host, &[n, k]))
        .unwrap();
    assert_eq!(x.shape(), [n, k]);
    let x = x.to_contiguous().unwrap();
    assert_residuals(
        &format!("{dtype} solve {n}x{k}"),
        &a_host,
        &host(&x),
        &b_host,
        (1, n, k),
        eps,
    );
    // A stack (the batched LU): (3, 2, n, n) with b (n, k) broadcast over the batch.
    let (count, n, k) = (6, 9, 3);
    let a_host = matrices(count, n, 5);
    let b_one = common::products::values(n * k, 6);
    let a = array::<T>(stream, &a_host, &[3, 2, n, n]);
    let x = a.solve(&array::<T>(stream, &b_one, &[n, k])).unwrap();
    assert_eq!(x.shape(), [3, 2, n, k]);
    let b_host: Vec<f64> = (0..count).flat_map(|_| b_one.iter().copied()).collect();
    let x = host(&x.to_contiguous().unwrap());
    assert_residuals(
        &format!("{dtype} stacked solve"),
        &a_host,
        &x,
        &b_host,
        (count, n, k),
        eps,
    );
    // A stack with one vector: (count, n).
    let b_vector = common::products::values(n, 8);
    let x = a.solve(&array::<T>(stream, &b_vector, &[n])).unwrap();
    assert_eq!(x.shape(), [3, 2, n]);
    let b_host: Vec<f64> = (0..count).flat_map(|_| b_vector.iter().copied()).collect();
    assert_residuals(
        &format!("{dtype} stacked vector solve"),
        &a_host,
        &host(&x),
        &b_host,
        (count, n, 1),
        eps,
    );
    // Past the crate's kernel (64 x 64, 64 right-hand sides), cuBLAS's batched LU.
    stacked_solves::<T>(stream, &[(3, 70, 2), (2, 9, 65)]);
}

/// Stacks of `count` systems `n x n` (rows shuffled) with `k` right-hand sides each, for each
/// `(count, n, k)` of `cases`, solved in `T` and checked by their residuals.
fn stacked_solves<T: RealSolverElement + LinalgInput<Factored = T>>(stream: &Stream, cases: &[(usize, usize, usize)]) {
    for &(count, n, k) in cases {
        let a_host = shuffled_rows(count, n, (7 * n + k) as u64);
        let b_host = common::products::values(count * n * k, k);
        let a = array::<T>(stream, &a_host, &[count, n, n]);
        let x = a.solve(&array::<T>(stream, &b_host, &[count, n, k])).unwrap();
        assert_eq!(x.shape(), [count, n, k]);
        let what = format!("{} solve {count}x{n}x{k}", T::DTYPE);
        assert_residuals(&what, &a_host, &host(&x), &b_host, (count, n, k), epsilon::<T>());
    }
}

/// `count` matrices `n x n` of [`matrices`] with their rows shuffled (a seeded permutation per
/// matrix), so partial pivoting swaps rows back: the dominant diagonal moved off it.
fn shuffled_rows(count: usize, n: usize, seed: u64) -> Vec<f64> {
    let mut a = matrices(count, n, seed);
    let mut state = seed ^ 0x9e37_79b9_7f4a_7c15;
    for matrix in a.chunks_mut(n * n) {
        for i in (1..n).rev() {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            let j = (state >> 33) as usize % (i + 1);
            for c in 0..n {
                matrix.swap(i * n + c, j * n + c);
            }
        }
    }
    a
}

/// `inv`, `det` and `slogdet` of stacks of `count` matrices `n x n` (of `sizes`, rows shuffled)
/// in `T` against the host: `A @ inv(A)` against the identity, determinants and their logarithms
/// against a host elimination.
fn inverses_and_determinants<T: RealSolverElement + LinalgInput<Factored = T>>(
    stream: &Stream,
    sizes: &[(usize, usize)],
) {
    let eps = epsilon::<T>();
    let dtype = T::DTYPE;
    for &(count, n) in sizes {
        let a_host = shuffled_rows(count, n, (count * n) as u64);
        let shape = if count == 1 { vec![n, n] } else { vec![count, n, n] };
        let a = array::<T>(stream, &a_host, &shape);
        let inverse = a.inv().unwrap();
        assert_eq!(inverse.shape(), shape);
        let identity: Vec<f64> = (0..count)
            .flat_map(|_| (0..n * n).map(|i| if i / n == i % n { 1.0 } else { 0.0 }))
            .collect();
        assert_residuals(
            &format!("{dtype} inv {count}x{n}"),
            &a_host,
            &host(&inverse),
            &identity,
            (count, n, n),
            eps,
        );

        let det = host(&a.det().unwrap());
        let (sign, logabs) = a.slogdet().unwrap();
        let (sign, logabs) = (host(&sign), host(&logabs));
        assert_eq!(det.len(), count);
        for i in 0..count {
            let expected = host_det(&a_host[i * n * n..(i + 1) * n * n], n);
            let tolerance = 100.0 * n as f64 * eps;
            if expected.abs().log10() < 30.0 {
                assert!(
                    ((det[i] - expected) / expected).abs() <= tolerance,
                    "{dtype} det {count}x{n} [{i}]: {} vs {expected}",
                    det[i]
                );
            }
            assert_eq!(sign[i], expected.signum(), "{dtype} slogdet sign {count}x{n} [{i}]");
            assert!(
                (logabs[i] - expected.abs().ln()).abs() <= tolerance * expected.abs().ln().abs().max(1.0),
                "{dtype} slogdet {count}x{n} [{i}]: {} vs {}",
                logabs[i],
                expected.abs().ln()
            );
        }
    }
}

#[test]
fn solve_residuals_are_small_in_f32_and_f64() {
    let Some(stream) = common::stream_or_skip("solve_residuals_are_small_in_f32_and_f64") else {
        return;
    };
    solves::<f32>(&stream);
    solves::<f64>(&stream);
}

#[test]
fn inverses_and_determinants_match_the_host() {
    let Some(stream) = common::stream_or_skip("inverses_and_determinants_match_the_host") else {
        return;
    };
    // Up to 64 x 64 the crate's kernels; above, cuSOLVER for one matrix and cuBLAS's batched
    // LU for a stack.
    let sizes = [(1, 5), (1, 100), (4, 6), (64, 33), (3, 70)];
    inverses_and_determinants::<f32>(&stream, &sizes);
    inverses_and_determinants::<f64>(&stream, &sizes);
}

#[test]
fn integers_promote_and_empty_stacks_follow_numpy() {
    let Some(stream) = common::stream_or_skip("integers_promote_and_empty_stacks_follow_numpy") else {
        return;
    };
    let a = DeviceArray::<i32>::from_slice(&stream, &[2, 1, 1, 3])
        .unwrap()
        .reshape([2, 2])
        .unwrap();
    let b = DeviceArray::<i64>::from_slice(&stream, &[3, 5]).unwrap();
    let x: DeviceArray<f64> = a.solve(&b).unwrap();
    let x = x.to_vec().unwrap();
    assert!((x[0] - 0.8).abs() < 1e-14 && (x[1] - 1.4).abs() < 1e-14, "{x:?}");
    assert!((a.det().unwrap().item().unwrap() - 5.0).abs() < 1e-14);
    let inverse = a.inv().unwrap().to_vec().unwrap();
    let expected = [0.6, -0.2, -0.2, 0.4];
    assert!(
        inverse.iter().zip(expected).all(|(g, e)| (g - e).abs() < 1e-14),
        "{inverse:?}"
    );

    // 0 x 0 matrices: inv gives 0 x 0, det 1, slogdet (1, 0); an empty stack gives empty results.
    let empty = DeviceArray::<f64>::zeros(&stream, [0, 0]).unwrap();
    assert_eq!(empty.inv().unwrap().shape(), [0, 0]);
    assert_eq!(empty.det().unwrap().item().unwrap(), 1.0);
    let (sign, logabs) = empty.slogdet().unwrap();
    assert_eq!((sign.item().unwrap(), logabs.item().unwrap()), (1.0, 0.0));
    let stack = DeviceArray::<f32>::zeros(&stream, [0, 3, 3]).unwrap();
    assert_eq!(stack.det().unwrap().shape(), [0]);
    assert_eq!(stack.inv().unwrap().shape(), [0, 3, 3]);
    let b = DeviceArray::<f32>::zeros(&stream, [3, 2]).unwrap();
    assert_eq!(stack.solve(&b).unwrap().shape(), [0, 3, 2]);
    let none = DeviceArray::<f32>::zeros(&stream, [3, 0]).unwrap();
    let square = DeviceArray::<f32>::ones(&stream, [3, 3]).unwrap();
    assert_eq!(square.solve(&none).unwrap().shape(), [3, 0]);

    // Shapes NumPy refuses.
    let wide = DeviceArray::<f64>::zeros(&stream, [2, 3]).unwrap();
    assert!(matches!(wide.inv(), Err(Error::InvalidValue(m)) if m.contains("square")));
    assert!(matches!(wide.det(), Err(Error::InvalidValue(m)) if m.contains("square")));
    let rows = DeviceArray::<f64>::zeros(&stream, [3, 1]).unwrap();
    assert!(matches!(a.solve(&rows), Err(Error::InvalidValue(m)) if m.contains("b has 3 rows")));
}

#[test]
fn singular_matrices_are_errors_with_their_index() {
    let Some(stream) = common::stream_or_skip("singular_matrices_are_errors_with_their_index") else {
        return;
    };
    // One singular matrix (cuSOLVER's getrf): row 3 = row 1 + row 2. Its entries and LU
    // multipliers are small powers of two, so every step of the elimination is exact and `U`'s
    // last pivot is exactly 0 under any rounding; a dependence whose elimination rounds (say
    // 1/3 as a multiplier) leaves a pivot of about 1e-16 where the GPU fuses multiply-adds,
    // which is no singular matrix to getrf.
    let singular = [4.0, 2.0, 1.0, 0.0, 2.0, 1.0, 4.0, 4.0, 2.0];
    let a = array::<f64>(&stream, &singular, &[3, 3]);
    let b = array::<f64>(&stream, &[1.0, 2.0, 3.0], &[3]);
    let calls = [
        ("solve", a.solve(&b).map(drop), SMALL_SOLVE),
        ("inv", a.inv().map(drop), SMALL_INV),
    ];
    for (what, result, expected) in calls {
        match result {
            Err(Error::Library(cuda_libs::Error::Linalg {
                routine,
                index: 0,
                failure: LinalgFailure::Singular { pivot },
            })) => assert_eq!((routine, pivot), (expected, 3), "{what}"),
            other => panic!("{what} of a singular matrix: {other:?}"),
        }
    }
    // Its determinant is 0 and its slogdet (0, -inf), as NumPy's.
    assert_eq!(a.det().unwrap().item().unwrap(), 0.0);
    let (sign, logabs) = a.slogdet().unwrap();
    assert_eq!(sign.item().unwrap(), 0.0);
    assert_eq!(logabs.item().unwrap(), f64::NEG_INFINITY);

    // One bad matrix inside a batch of five (the crate's kernels): its index comes back.
    let mut stack = matrices(5, 3, 9);
    stack[2 * 9..3 * 9].copy_from_slice(&singular);
    for dtype_f32 in [false, true] {
        let (result, expected) = match dtype_f32 {
            false => (array::<f64>(&stream, &stack, &[5, 3, 3]).inv().map(drop), SMALL_INV),
            true => (
                array::<f32>(&stream, &stack, &[5, 3, 3])
                    .solve(&array::<f32>(&stream, &[1.0, 2.0, 3.0], &[3]))
                    .map(drop),
                SMALL_SOLVE,
            ),
        };
        match result {
            Err(Error::Library(cuda_libs::Error::Linalg {
                routine,
                index,
                failure: LinalgFailure::Singular { .. },
            })) => assert_eq!((routine, index), (expected, 2)),
            other => panic!("a batch with a singular matrix: {other:?}"),
        }
    }
    // Above 64 x 64, inv goes through cuBLAS's batched LU, which reads the row-major matrix as
    // its transpose: matrix 1 of three has a zero row 5, a zero column of what cuBLAS factors,
    // which elimination leaves exactly zero, so getrf's sixth pivot is 0. (A zero column 5
    // instead is a zero row there, swapped down to the last pivot: 70, as its first GPU run
    // found.)
    let n = 70;
    let mut large = matrices(3, n, 11);
    large[n * n + 5 * n..n * n + 6 * n].fill(0.0);
    let large = array::<f64>(&stream, &large, &[3, n, n]);
    let rhs = array::<f64>(&stream, &vec![1.0; n], &[n]);
    for (what, result) in [("inv", large.inv().map(drop)), ("solve", large.solve(&rhs).map(drop))] {
        match result {
            Err(Error::Library(cuda_libs::Error::Linalg {
                routine,
                index,
                failure: LinalgFailure::Singular { pivot },
            })) => assert_eq!((routine, index, pivot), ("cublas<t>getrfBatched", 1, 6), "{what}"),
            other => panic!("{what} of a batch of 70 x 70 with a singular matrix: {other:?}"),
        }
    }
    let det = host(&array::<f64>(&stream, &stack, &[5, 3, 3]).det().unwrap());
    assert_eq!(det[2], 0.0);
    assert!(det.iter().enumerate().all(|(i, d)| i == 2 || *d != 0.0), "{det:?}");
    // The handle is clean afterwards: the next solve on the stream succeeds.
    let good = array::<f64>(&stream, &matrices(1, 3, 1), &[3, 3]);
    assert_eq!(good.solve(&b).unwrap().shape(), [3]);
}

/// `count` symmetric positive definite `n x n` matrices, `M M^T + n I`.
fn positive_definite(count: usize, n: usize, seed: u64) -> Vec<f64> {
    let m = matrices(count, n, seed);
    let mut out = Vec::with_capacity(count * n * n);
    for i in 0..count {
        let m_i = &m[i * n * n..(i + 1) * n * n];
        let m_t: Vec<f64> = (0..n * n).map(|p| m_i[(p % n) * n + p / n]).collect();
        let product = host_matmul(m_i, &m_t, n, n, n);
        out.extend((0..n * n).map(|p| product[p] + if p / n == p % n { n as f64 } else { 0.0 }));
    }
    out
}

/// Factors stacks of `count` matrices `n x n` for each of `sizes` in `T`, lower and upper, and
/// checks the other triangle is zero and the product rebuilds `A`.
fn cholesky_factors<T: RealSolverElement + LinalgInput<Factored = T>>(stream: &Stream, sizes: &[(usize, usize)]) {
    let eps = epsilon::<T>();
    let dtype = T::DTYPE;
    for &(count, n) in sizes {
        let a_host = positive_definite(count, n, (count + n) as u64);
        let shape = if count == 1 { vec![n, n] } else { vec![count, n, n] };
        let a = array::<T>(stream, &a_host, &shape);
        for upper in [false, true] {
            let factor = a.cholesky(upper).unwrap();
            assert_eq!(factor.shape(), shape);
            let factor = host(&factor);
            for i in 0..count {
                let f = &factor[i * n * n..(i + 1) * n * n];
                let f_t: Vec<f64> = (0..n * n).map(|p| f[(p % n) * n + p / n]).collect();
                // The other triangle is zero, and the product rebuilds A.
                for (p, value) in f.iter().enumerate() {
                    let (row, col) = (p / n, p % n);
                    if (upper && row > col) || (!upper && row < col) {
                        assert_eq!(
                            *value, 0.0,
                            "{dtype} cholesky {count}x{n} upper={upper} [{i}]: ({row}, {col})"
                        );
                    }
                }
                let rebuilt = match upper {
                    false => host_matmul(f, &f_t, n, n, n),
                    true => host_matmul(&f_t, f, n, n, n),
                };
                let a_i = &a_host[i * n * n..(i + 1) * n * n];
                let r: Vec<f64> = rebuilt.iter().zip(a_i).map(|(p, q)| p - q).collect();
                let relative = frobenius(&r) / frobenius(a_i);
                assert!(
                    relative <= 50.0 * n as f64 * eps,
                    "{dtype} cholesky {count}x{n} upper={upper} [{i}]: {relative:e}"
                );
            }
        }
    }
}

#[test]
fn cholesky_factors_rebuild_their_matrices() {
    let Some(stream) = common::stream_or_skip("cholesky_factors_rebuild_their_matrices") else {
        return;
    };
    // Up to 64 x 64 the crate's kernel; above, Xpotrf for one matrix and potrfBatched for more.
    let sizes = [(1, 1), (1, 9), (1, 200), (3, 8), (64, 32), (2, 64), (3, 80)];
    cholesky_factors::<f32>(&stream, &sizes);
    cholesky_factors::<f64>(&stream, &sizes);
    // Integers promote to f64: [[4, 2], [2, 3]] = L L^T with L = [[2, 0], [1, sqrt(2)]].
    let a = DeviceArray::<i64>::from_slice(&stream, &[4, 2, 2, 3])
        .unwrap()
        .reshape([2, 2])
        .unwrap();
    let l: Vec<f64> = a.cholesky(false).unwrap().to_vec().unwrap();
    let expected = [2.0, 0.0, 1.0, 2f64.sqrt()];
    assert!(l.iter().zip(expected).all(|(g, e)| (g - e).abs() < 1e-14), "{l:?}");
    let empty = DeviceArray::<f64>::zeros(&stream, [2, 0, 0]).unwrap();
    assert_eq!(empty.cholesky(false).unwrap().shape(), [2, 0, 0]);
}

#[test]
fn matrices_that_are_not_positive_definite_are_errors_with_their_index() {
    let Some(stream) = common::stream_or_skip("matrices_that_are_not_positive_definite_are_errors_with_their_index")
    else {
        return;
    };
    // Indefinite: eigenvalues 3 and -1; its leading minor of order 2 is negative.
    let indefinite = [1.0, 2.0, 2.0, 1.0];
    expect(
        array::<f64>(&stream, &indefinite, &[2, 2]).cholesky(false),
        (SMALL, 0),
        Some(2),
    );
    // One indefinite matrix (index 3) in a batch of six: the crate's kernel.
    let mut stack = positive_definite(6, 2, 4);
    stack[3 * 4..4 * 4].copy_from_slice(&indefinite);
    for upper in [false, true] {
        expect(
            array::<f32>(&stream, &stack, &[6, 2, 2]).cholesky(upper),
            (SMALL, 3),
            Some(2),
        );
    }
    // Above 64 x 64, cuSOLVER: one matrix (Xpotrf) and a batch (potrfBatched), negated so the
    // first pivot fails.
    let n = 70;
    let mut large = positive_definite(3, n, 5);
    for v in &mut large[n * n..2 * n * n] {
        *v = -*v;
    }
    let one = array::<f64>(&stream, &large[n * n..2 * n * n], &[n, n]).cholesky(false);
    expect(one, ("cusolverDnXpotrf", 0), Some(1));
    let batch = array::<f64>(&stream, &large, &[3, n, n]).cholesky(true);
    expect(batch, ("cusolverDn<t>potrfBatched", 1), None);
}

/// Asserts `result` is a matrix that is not positive definite, `want` its routine and index
/// in the stack, and `order` (where given) the order of its failing minor.
#[track_caller]
fn expect<T: cuda_core::Element>(result: cuda_core::Result<DeviceArray<T>>, want: (&str, usize), order: Option<i64>) {
    match result {
        Err(Error::Library(cuda_libs::Error::Linalg {
            routine,
            index,
            failure: LinalgFailure::NotPositiveDefinite { order: got },
        })) => {
            assert_eq!((routine, index), want);
            assert!(order.map_or(true, |order| order == got), "{routine}: order {got}");
        }
        Err(other) => panic!("{want:?}: {other:?}"),
        Ok(_) => panic!("{want:?}: factored"),
    }
}

/// The routine a failure of the crate's small-matrix Cholesky kernel names.
const SMALL: &str = "cuda_core_cholesky_small";

/// The crate's Cholesky kernel alone (matrices up to 64 x 64, no cuSOLVER call, so the test
/// also runs emulated): every order class of its tiles in f32 and f64, lower and upper; complex
/// Hermitian stacks; a strided stack (read through a copy) and an integer one; the first of two
/// failing matrices of a stack with the order of its failing minor, and a NaN pivot.
#[test]
fn small_choleskys_run_in_one_kernel() {
    let Some(stream) = common::stream_or_skip("small_choleskys_run_in_one_kernel") else {
        return;
    };
    let sizes = [
        (1, 1),
        (3, 2),
        (5, 7),
        (3, 8),
        (4, 9),
        (2, 16),
        (3, 31),
        (9, 32),
        (2, 33),
        (2, 64),
    ];
    cholesky_factors::<f32>(&stream, &sizes);
    cholesky_factors::<f64>(&stream, &sizes);
    complex_choleskys::<Complex<f32>>(&stream, &[(1, 3), (4, 6), (2, 32), (1, 64)]);
    complex_choleskys::<Complex<f64>>(&stream, &[(1, 3), (4, 6), (2, 32)]);

    // A stack (2, 3, n, n) with its batch axes swapped: each matrix factors as its copy does.
    let n = 5;
    let a = array::<f64>(&stream, &positive_definite(6, n, 8), &[2, 3, n, n]);
    let swapped = a.swapaxes(0, 1).unwrap();
    let factor = swapped.cholesky(false).unwrap();
    assert_eq!(factor.shape(), [3, 2, n, n]);
    let expected = swapped.to_contiguous().unwrap().cholesky(false).unwrap();
    assert_eq!(host(&factor), host(&expected));
    // i32 promotes to f64: [[4, 2], [2, 3]] = L L^T, and the upper factor is L^T.
    let ints = DeviceArray::<i32>::from_slice(&stream, &[4, 2, 2, 3])
        .unwrap()
        .reshape([1, 2, 2])
        .unwrap();
    let u: Vec<f64> = ints.cholesky(true).unwrap().to_vec().unwrap();
    let expected = [2.0, 1.0, 0.0, 2f64.sqrt()];
    assert!(u.iter().zip(expected).all(|(g, e)| (g - e).abs() < 1e-15), "{u:?}");

    // Matrices 3 and 5 of seven fail, 3 first at its minor of order 3 (diag(1, 1, -1, 1, 1)).
    let mut stack = positive_definite(7, n, 9);
    let negative_third: Vec<f64> = (0..n * n)
        .map(|p| match (p / n, p % n) {
            (2, 2) => -1.0,
            (r, c) if r == c => 1.0,
            _ => 0.0,
        })
        .collect();
    stack[3 * n * n..4 * n * n].copy_from_slice(&negative_third);
    stack[5 * n * n] = -1.0;
    for upper in [false, true] {
        match array::<f32>(&stream, &stack, &[7, n, n]).cholesky(upper) {
            Err(Error::Library(cuda_libs::Error::Linalg {
                routine,
                index,
                failure: LinalgFailure::NotPositiveDefinite { order },
            })) => assert_eq!((routine, index, order), (SMALL, 3, 3), "upper={upper}"),
            other => panic!("a stack with two indefinite matrices (upper={upper}): {other:?}"),
        }
    }
    // A NaN pivot fails as LAPACK's potrf fails it.
    let mut with_nan = positive_definite(2, n, 10);
    with_nan[n * n + n + 1] = f64::NAN;
    match array::<f64>(&stream, &with_nan, &[2, n, n]).cholesky(false) {
        Err(Error::Library(cuda_libs::Error::Linalg {
            index,
            failure: LinalgFailure::NotPositiveDefinite { order },
            ..
        })) => assert_eq!((index, order), (1, 2)),
        other => panic!("a NaN pivot: {other:?}"),
    }
}

/// The routine a singular matrix in the crate's small-matrix inverse kernel names.
const SMALL_INV: &str = "cuda_core_inv_small";

/// The crate's `inv`, `det` and `slogdet` kernels alone (matrices up to 64 x 64, no library
/// call, so the test also runs emulated): every order class of their tiles in f32 and f64 with
/// rows to swap back, complex stacks, a strided stack, and the first of two singular matrices
/// of a stack (a zero column) with its step, whose determinants are 0 and `(0, -inf)`.
#[test]
fn small_inverses_and_determinants_run_in_one_kernel() {
    let Some(stream) = common::stream_or_skip("small_inverses_and_determinants_run_in_one_kernel") else {
        return;
    };
    let sizes = [
        (1, 1),
        (3, 2),
        (5, 7),
        (2, 8),
        (4, 9),
        (2, 16),
        (3, 31),
        (9, 32),
        (2, 33),
        (2, 64),
    ];
    inverses_and_determinants::<f32>(&stream, &sizes);
    inverses_and_determinants::<f64>(&stream, &sizes);
    complex_inverses_and_determinants::<Complex<f32>>(&stream, &[(1, 3), (4, 6), (2, 32), (1, 64)]);
    complex_inverses_and_determinants::<Complex<f64>>(&stream, &[(1, 3), (4, 6), (2, 32)]);

    // A stack (2, 3, n, n) with its batch axes swapped gives what its copy gives.
    let n = 6;
    let a = array::<f64>(&stream, &shuffled_rows(6, n, 12), &[2, 3, n, n]);
    let swapped = a.swapaxes(0, 1).unwrap();
    let copy = swapped.to_contiguous().unwrap();
    assert_eq!(host(&swapped.inv().unwrap()), host(&copy.inv().unwrap()));
    assert_eq!(host(&swapped.det().unwrap()), host(&copy.det().unwrap()));
    assert_eq!(swapped.det().unwrap().shape(), [3, 2]);

    // Matrices 2 and 4 of seven are singular (zero columns 3 and 0): inv names matrix 2 and its
    // fourth step; det and slogdet give 0 and (0, -inf) for both and the host's for the rest.
    let mut stack = shuffled_rows(7, n, 13);
    for r in 0..n {
        stack[2 * n * n + r * n + 3] = 0.0;
        stack[4 * n * n + r * n] = 0.0;
    }
    let a = array::<f32>(&stream, &stack, &[7, n, n]);
    match a.inv() {
        Err(Error::Library(cuda_libs::Error::Linalg {
            routine,
            index,
            failure: LinalgFailure::Singular { pivot },
        })) => assert_eq!((routine, index, pivot), (SMALL_INV, 2, 4)),
        other => panic!("a stack with two singular matrices: {other:?}"),
    }
    let det = host(&a.det().unwrap());
    let (sign, logabs) = a.slogdet().unwrap();
    let (sign, logabs) = (host(&sign), host(&logabs));
    for i in 0..7 {
        if i == 2 || i == 4 {
            assert_eq!((det[i], sign[i], logabs[i]), (0.0, 0.0, f64::NEG_INFINITY), "[{i}]");
        } else {
            let expected = host_det(&stack[i * n * n..(i + 1) * n * n], n);
            assert!(
                ((det[i] - expected) / expected).abs() < 1e-5,
                "[{i}]: {} vs {expected}",
                det[i]
            );
            assert_eq!(sign[i], expected.signum(), "[{i}]");
        }
    }
}

/// `det` and `slogdet` of small matrices queue one kernel and no host wait, so a graph captures
/// them and its replays follow new inputs like eager calls; a 65 x 65 matrix's (cuSOLVER, its
/// `info` read back) are refused under the capture with a typed error that leaves it valid.
#[test]
fn small_determinants_are_captured_into_a_graph() {
    let Some(stream) = common::stream_or_skip("small_determinants_are_captured_into_a_graph") else {
        return;
    };
    let (count, n) = (5, 8);
    let mut a = array::<f64>(&stream, &shuffled_rows(count, n, 21), &[count, n, n]);
    let large = array::<f64>(&stream, &matrices(1, 65, 22), &[65, 65]);
    // The warm-up: the kernels are loaded before the capture.
    a.det().unwrap();
    a.slogdet().unwrap();
    let mut det = DeviceArray::<f64>::zeros(&stream, [count]).unwrap();
    let mut sign = DeviceArray::<f64>::zeros(&stream, [count]).unwrap();
    let mut logabs = DeviceArray::<f64>::zeros(&stream, [count]).unwrap();
    let mut builder = GraphBuilder::new(&stream);
    builder
        .build(CaptureMode::ThreadLocal, |_| {
            assert!(matches!(large.det(), Err(Error::HostWaitInCapture { .. })));
            assert!(matches!(large.slogdet(), Err(Error::HostWaitInCapture { .. })));
            det.copy_from(&a.det()?)?;
            let (s, l) = a.slogdet()?;
            sign.copy_from(&s)?;
            logabs.copy_from(&l)
        })
        .unwrap();
    let graph = builder.complete().unwrap();
    for seed in [23, 24] {
        let values = shuffled_rows(count, n, seed);
        a.copy_from_host(&values).unwrap();
        // SAFETY: `a`, `det`, `sign` and `logabs` outlive the launch; the graph owns its
        // temporaries.
        unsafe { graph.launch(&stream).unwrap() };
        let (det, sign, logabs) = (host(&det), host(&sign), host(&logabs));
        for i in 0..count {
            let expected = host_det(&values[i * n * n..(i + 1) * n * n], n);
            assert!(
                ((det[i] - expected) / expected).abs() < 1e-12,
                "seed {seed} [{i}]: {} vs {expected}",
                det[i]
            );
            assert_eq!(sign[i], expected.signum(), "seed {seed} [{i}]");
            assert!(
                (logabs[i] - expected.abs().ln()).abs() < 1e-12,
                "seed {seed} [{i}]: log {}",
                logabs[i]
            );
        }
    }
}

/// The routine a singular matrix in the crate's small-system solve kernel names.
const SMALL_SOLVE: &str = "cuda_core_solve_small";

/// The crate's `solve` kernel alone (systems up to 64 x 64 with up to 64 right-hand sides, no
/// library call, so the test also runs emulated): every order class of its tiles and chunk
/// counts (1, 16, 17, 40, 64 right-hand sides) in f32 and f64 with rows to swap back, complex
/// systems, a vector `b` broadcast over a stack, real `A` with complex `b` and integers with
/// floats (NumPy's promoted types), and the first singular matrix of a stack with its step.
#[test]
fn small_solves_run_in_one_kernel() {
    let Some(stream) = common::stream_or_skip("small_solves_run_in_one_kernel") else {
        return;
    };
    let cases = [
        (1, 1, 1),
        (3, 2, 1),
        (2, 7, 5),
        (2, 8, 8),
        (4, 9, 16),
        (2, 16, 17),
        (3, 31, 40),
        (2, 33, 64),
        (1, 64, 3),
    ];
    stacked_solves::<f32>(&stream, &cases);
    stacked_solves::<f64>(&stream, &cases);
    complex_solves::<Complex<f32>>(&stream, &[(1, 6, 2), (5, 8, 3), (2, 32, 20), (1, 64, 1)]);
    complex_solves::<Complex<f64>>(&stream, &[(1, 6, 2), (3, 32, 17)]);

    // A vector b broadcast over a (2, 3) stack: x has the stack's batch and n.
    let n = 6;
    let a_host = shuffled_rows(6, n, 14);
    let b_vector = common::products::values(n, 15);
    let x = array::<f64>(&stream, &a_host, &[2, 3, n, n])
        .solve(&array::<f64>(&stream, &b_vector, &[n]))
        .unwrap();
    assert_eq!(x.shape(), [2, 3, n]);
    let b_host: Vec<f64> = (0..6).flat_map(|_| b_vector.iter().copied()).collect();
    assert_residuals(
        "f64 broadcast vector solve",
        &a_host,
        &host(&x),
        &b_host,
        (6, n, 1),
        f64::EPSILON,
    );
    // i32 A and f32 b solve in f64; f64 A and Complex<f32> b in Complex<f64>.
    let ints = DeviceArray::<i32>::from_slice(&stream, &[2, 1, 1, 3])
        .unwrap()
        .reshape([2, 2])
        .unwrap();
    let x: DeviceArray<f64> = ints
        .solve(&DeviceArray::<f32>::from_slice(&stream, &[3.0, 5.0]).unwrap())
        .unwrap();
    let x = x.to_vec().unwrap();
    assert!((x[0] - 0.8).abs() < 1e-14 && (x[1] - 1.4).abs() < 1e-14, "{x:?}");
    let reals = array::<f64>(&stream, &[2.0, 1.0, 1.0, 3.0], &[2, 2]);
    let z = DeviceArray::from_slice(&stream, &[Complex::new(3.0f32, 1.0), Complex::new(5.0, -2.0)]).unwrap();
    let x: DeviceArray<Complex<f64>> = reals.solve(&z).unwrap();
    let x = x.to_vec().unwrap();
    let expected = [Complex::new(0.8, 1.0), Complex::new(1.4, -1.0)];
    assert!(x.iter().zip(expected).all(|(g, e)| (g - e).norm() < 1e-6), "{x:?}");

    // Matrices 1 and 3 of four are singular (zero columns 2 and 0): matrix 1 and its third step.
    let mut stack = shuffled_rows(4, n, 16);
    for r in 0..n {
        stack[n * n + r * n + 2] = 0.0;
        stack[3 * n * n + r * n] = 0.0;
    }
    let b = array::<f32>(&stream, &common::products::values(4 * n * 2, 17), &[4, n, 2]);
    match array::<f32>(&stream, &stack, &[4, n, n]).solve(&b) {
        Err(Error::Library(cuda_libs::Error::Linalg {
            routine,
            index,
            failure: LinalgFailure::Singular { pivot },
        })) => assert_eq!((routine, index, pivot), (SMALL_SOLVE, 1, 3)),
        other => panic!("a stack with two singular matrices: {other:?}"),
    }
}

/// The eigenvalues of a symmetric row-major `n x n` matrix, ascending, by cyclic Jacobi
/// rotations on the host.
fn host_eigenvalues(a: &[f64], n: usize) -> Vec<f64> {
    let mut m = a.to_vec();
    for _sweep in 0..100 {
        let off: f64 = (0..n * n).filter(|p| p / n != p % n).map(|p| m[p] * m[p]).sum();
        if off < 1e-30 {
            break;
        }
        for p in 0..n {
            for q in p + 1..n {
                if m[p * n + q].abs() < 1e-300 {
                    continue;
                }
                let theta = (m[q * n + q] - m[p * n + p]) / (2.0 * m[p * n + q]);
                let t = theta.signum() / (theta.abs() + (theta * theta + 1.0).sqrt());
                let t = if theta == 0.0 { 1.0 } else { t };
                let (c, s) = (1.0 / (t * t + 1.0).sqrt(), t / (t * t + 1.0).sqrt());
                for k in 0..n {
                    let (kp, kq) = (m[k * n + p], m[k * n + q]);
                    m[k * n + p] = c * kp - s * kq;
                    m[k * n + q] = s * kp + c * kq;
                }
                for k in 0..n {
                    let (pk, qk) = (m[p * n + k], m[q * n + k]);
                    m[p * n + k] = c * pk - s * qk;
                    m[q * n + k] = s * pk + c * qk;
                }
            }
        }
    }
    let mut values: Vec<f64> = (0..n).map(|i| m[i * n + i]).collect();
    values.sort_by(f64::total_cmp);
    values
}

/// The singular values of a row-major `m x n` matrix, descending, from `A^T A` on the host.
fn host_singular_values(a: &[f64], m: usize, n: usize) -> Vec<f64> {
    let a_t: Vec<f64> = (0..n * m).map(|p| a[(p % m) * n + p / m]).collect();
    let gram = if m >= n {
        host_matmul(&a_t, a, n, m, n)
    } else {
        host_matmul(a, &a_t, m, n, m)
    };
    let mut values: Vec<f64> = host_eigenvalues(&gram, m.min(n))
        .iter()
        .map(|v| v.max(0.0).sqrt())
        .collect();
    values.reverse();
    values
}

fn eigen_decompositions<T: RealSolverElement + LinalgInput<Factored = T>>(stream: &Stream) {
    let eps = epsilon::<T>();
    let dtype = T::DTYPE;
    for (count, n) in [(1, 6), (1, 70), (5, 12), (3, 40)] {
        let a_host = positive_definite(count, n, (3 * count + n) as u64);
        let a_host: Vec<f64> = a_host
            .iter()
            .enumerate()
            // Shifted on each matrix's own diagonal (position `p % (n * n)` within it), so every
            // matrix of the stack stays symmetric.
            .map(|(p, v)| {
                v - if (p % (n * n)) % (n + 1) == 0 {
                    2.0 * n as f64
                } else {
                    0.0
                }
            })
            .collect();
        let shape = if count == 1 { vec![n, n] } else { vec![count, n, n] };
        let a = array::<T>(stream, &a_host, &shape);
        for upper in [false, true] {
            let (w, v) = a.eigh(upper).unwrap();
            assert_eq!(w.shape(), &shape[..shape.len() - 1]);
            assert_eq!(v.shape(), shape);
            let (w, v) = (host(&w), host(&v.to_contiguous().unwrap()));
            let values_only = host(&a.eigvalsh(upper).unwrap());
            for i in 0..count {
                let a_i = &a_host[i * n * n..(i + 1) * n * n];
                let (w_i, v_i) = (&w[i * n..(i + 1) * n], &v[i * n * n..(i + 1) * n * n]);
                let scale = frobenius(a_i);
                let expected = host_eigenvalues(a_i, n);
                for (j, (got, e)) in w_i.iter().zip(&expected).enumerate() {
                    assert!(
                        (got - e).abs() <= 100.0 * n as f64 * eps * scale,
                        "{dtype} eigh {count}x{n} [{i}] value {j}: {got} vs {e}"
                    );
                    assert!(
                        (values_only[i * n + j] - e).abs() <= 100.0 * n as f64 * eps * scale,
                        "{dtype} eigvalsh [{i}] {j}"
                    );
                }
                // A V = V diag(w), and V^T V = I.
                let av = host_matmul(a_i, v_i, n, n, n);
                let vw: Vec<f64> = (0..n * n).map(|p| v_i[p] * w_i[p % n]).collect();
                let r: Vec<f64> = av.iter().zip(&vw).map(|(x, y)| x - y).collect();
                assert!(
                    frobenius(&r) <= 100.0 * n as f64 * eps * scale,
                    "{dtype} eigh {count}x{n} [{i}]: A V - V W"
                );
                let v_t: Vec<f64> = (0..n * n).map(|p| v_i[(p % n) * n + p / n]).collect();
                let gram = host_matmul(&v_t, v_i, n, n, n);
                let off: Vec<f64> = gram
                    .iter()
                    .enumerate()
                    .map(|(p, g)| g - if p / n == p % n { 1.0 } else { 0.0 })
                    .collect();
                assert!(
                    frobenius(&off) <= 100.0 * n as f64 * eps,
                    "{dtype} eigh {count}x{n} [{i}]: V^T V - I"
                );
            }
        }
    }
}

fn singular_value_routines<T: RealSolverElement + LinalgInput<Factored = T>>(stream: &Stream) {
    let eps = epsilon::<T>();
    let dtype = T::DTYPE;
    for (count, m, n) in [(1, 5, 9), (1, 60, 20), (4, 7, 3), (4, 3, 7), (2, 50, 50), (3, 40, 6)] {
        let a_host = common::products::values(count * m * n, m + n)
            .iter()
            .enumerate()
            .map(|(p, v)| v + 0.01 * (p % 7) as f64)
            .collect::<Vec<f64>>();
        let shape = if count == 1 { vec![m, n] } else { vec![count, m, n] };
        let a = array::<T>(stream, &a_host, &shape);
        let s = a.svdvals().unwrap();
        let k = m.min(n);
        assert_eq!(s.shape()[s.ndim() - 1], k);
        let s = host(&s);
        for i in 0..count {
            let a_i = &a_host[i * m * n..(i + 1) * m * n];
            let expected = host_singular_values(a_i, m, n);
            // The host reference goes through A^T A, which squares the condition number: it
            // agrees to about sqrt(eps) of the matrix's norm, not eps.
            let tolerance = 10.0 * eps.sqrt() * frobenius(a_i);
            for (j, (got, e)) in s[i * k..(i + 1) * k].iter().zip(&expected).enumerate() {
                assert!(
                    (got - e).abs() <= tolerance,
                    "{dtype} svdvals {count}x{m}x{n} [{i}] {j}: {got} vs {e}"
                );
            }
        }
        for full in [false, true] {
            let (u, s_again, vh) = a.svd(full).unwrap();
            let (u_cols, vh_rows) = if full { (m, n) } else { (k, k) };
            let batch = &shape[..shape.len() - 2];
            assert_eq!(u.shape(), [batch, &[m, u_cols]].concat(), "{dtype} svd U");
            assert_eq!(vh.shape(), [batch, &[vh_rows, n]].concat(), "{dtype} svd Vh");
            let (u, vh) = (host(&u.to_contiguous().unwrap()), host(&vh.to_contiguous().unwrap()));
            let s_again = host(&s_again);
            for i in 0..count {
                let u_i = &u[i * m * u_cols..(i + 1) * m * u_cols];
                let vh_i = &vh[i * vh_rows * n..(i + 1) * vh_rows * n];
                let a_i = &a_host[i * m * n..(i + 1) * m * n];
                // U[:, :k] diag(S) Vh[:k, :] rebuilds A.
                let us: Vec<f64> = (0..m * k)
                    .map(|p| u_i[(p / k) * u_cols + p % k] * s_again[i * k + p % k])
                    .collect();
                let rebuilt = host_matmul(&us, &vh_i[..k * n], m, k, n);
                let r: Vec<f64> = rebuilt.iter().zip(a_i).map(|(x, y)| x - y).collect();
                assert!(
                    frobenius(&r) <= 100.0 * m.max(n) as f64 * eps * frobenius(a_i),
                    "{dtype} svd {count}x{m}x{n} full={full} [{i}]: U S Vh - A"
                );
                // U^T U = I and Vh Vh^T = I.
                let u_t: Vec<f64> = (0..u_cols * m).map(|p| u_i[(p % m) * u_cols + p / m]).collect();
                let vh_t: Vec<f64> = (0..n * vh_rows)
                    .map(|p| vh_i[(p % vh_rows) * n + p / vh_rows])
                    .collect();
                for (what, gram, size) in [
                    ("U^T U", host_matmul(&u_t, u_i, u_cols, m, u_cols), u_cols),
                    ("Vh Vh^T", host_matmul(vh_i, &vh_t, vh_rows, n, vh_rows), vh_rows),
                ] {
                    let off: Vec<f64> = gram
                        .iter()
                        .enumerate()
                        .map(|(p, g)| g - if p / size == p % size { 1.0 } else { 0.0 })
                        .collect();
                    assert!(
                        frobenius(&off) <= 100.0 * m.max(n) as f64 * eps,
                        "{dtype} svd {count}x{m}x{n} full={full} [{i}]: {what}"
                    );
                }
            }
        }
        // pinv: A pinv(A) A = A, (n, m) per matrix. The cutoff is the array API's default
        // (max(m, n) * eps of the type): 1e-15 keeps float32's noise-level singular values of the
        // 50 x 50 stack, whose inverses then dominate (NumPy's float32 pinv does the same).
        let pinv = a.pinv(m.max(n) as f64 * eps).unwrap();
        assert_eq!(
            pinv.shape(),
            [&shape[..shape.len() - 2], &[n, m]].concat(),
            "{dtype} pinv"
        );
        let pinv = host(&pinv);
        for i in 0..count {
            let a_i = &a_host[i * m * n..(i + 1) * m * n];
            let p_i = &pinv[i * n * m..(i + 1) * n * m];
            let again = host_matmul(&host_matmul(a_i, p_i, m, n, m), a_i, m, m, n);
            let r: Vec<f64> = again.iter().zip(a_i).map(|(x, y)| x - y).collect();
            let bound = 1e4 * m.max(n) as f64 * eps * frobenius(a_i);
            assert!(frobenius(&r) <= bound, "{dtype} pinv {count}x{m}x{n} [{i}]: A A+ A - A");
        }
        if count == 1 {
            let expected = host_singular_values(&a_host, m, n);
            let close = |what: &str, got: f64, e: f64| {
                assert!(
                    (got - e).abs() <= 1e-3 * e.abs().max(1.0),
                    "{dtype} {what}: {got} vs {e}"
                )
            };
            close(
                "norm 2",
                a.linalg_norm(Norm::Ord(2.0)).unwrap().item().unwrap().to_f64(),
                expected[0],
            );
            close(
                "norm -2",
                a.linalg_norm(Norm::Ord(-2.0)).unwrap().item().unwrap().to_f64(),
                expected[k - 1],
            );
            close(
                "norm nuc",
                a.linalg_norm(Norm::Nuc).unwrap().item().unwrap().to_f64(),
                expected.iter().sum(),
            );
            close(
                "cond",
                a.cond().unwrap().item().unwrap().to_f64(),
                expected[0] / expected[k - 1],
            );
            assert_eq!(
                a.matrix_rank().unwrap().item().unwrap(),
                k as i64,
                "{dtype} matrix_rank"
            );
        }
    }
}

#[test]
fn eigh_matches_a_host_solver_with_orthonormal_vectors() {
    let Some(stream) = common::stream_or_skip("eigh_matches_a_host_solver_with_orthonormal_vectors") else {
        return;
    };
    eigen_decompositions::<f32>(&stream);
    eigen_decompositions::<f64>(&stream);
    let empty = DeviceArray::<f64>::zeros(&stream, [0, 0]).unwrap();
    let (w, v) = empty.eigh(false).unwrap();
    assert_eq!((w.shape(), v.shape()), (&[0usize][..], &[0usize, 0][..]));
}

#[test]
fn singular_values_norms_cond_and_rank_match_the_host() {
    let Some(stream) = common::stream_or_skip("singular_values_norms_cond_and_rank_match_the_host") else {
        return;
    };
    singular_value_routines::<f32>(&stream);
    singular_value_routines::<f64>(&stream);
    // A rank-1 matrix (integers, promoted): rank 1, cond huge or infinite.
    let outer = DeviceArray::<i32>::from_slice(&stream, &[1, 2, 3, 2, 4, 6, 3, 6, 9])
        .unwrap()
        .reshape([3, 3])
        .unwrap();
    assert_eq!(outer.matrix_rank().unwrap().item().unwrap(), 1);
    assert!(outer.cond().unwrap().item().unwrap() > 1e14);
    let vector = DeviceArray::<f64>::zeros(&stream, [4]).unwrap();
    assert_eq!(vector.matrix_rank().unwrap().item().unwrap(), 0);
    assert_eq!(
        DeviceArray::<f32>::zeros(&stream, [2, 0, 3])
            .unwrap()
            .svdvals()
            .unwrap()
            .shape(),
        [2, 0]
    );
}

#[test]
fn matrix_powers_and_multi_dot_match_host_products() {
    let Some(stream) = common::stream_or_skip("matrix_powers_and_multi_dot_match_host_products") else {
        return;
    };
    let n = 6;
    let a_host: Vec<f64> = matrices(2, n, 21).iter().map(|v| v / n as f64).collect();
    let a = array::<f64>(&stream, &a_host, &[2, n, n]);
    for power in [0u64, 1, 2, 5, 8] {
        let got = host(&a.matrix_power(power).unwrap());
        for i in 0..2 {
            let a_i = &a_host[i * n * n..(i + 1) * n * n];
            let mut expected: Vec<f64> = (0..n * n).map(|p| if p / n == p % n { 1.0 } else { 0.0 }).collect();
            for _ in 0..power {
                expected = host_matmul(&expected, a_i, n, n, n);
            }
            let r: Vec<f64> = got[i * n * n..(i + 1) * n * n]
                .iter()
                .zip(&expected)
                .map(|(g, e)| g - e)
                .collect();
            assert!(
                frobenius(&r) <= 1e-12 * frobenius(&expected).max(1.0),
                "a^{power} [{i}]"
            );
        }
    }
    // A negative power: the inverse's power, as NumPy computes it.
    let minus_two = host(&a.inv().unwrap().matrix_power(2).unwrap());
    let square = host(&a.matrix_power(2).unwrap());
    for i in 0..2 {
        let product = host_matmul(
            &square[i * n * n..(i + 1) * n * n],
            &minus_two[i * n * n..(i + 1) * n * n],
            n,
            n,
            n,
        );
        let off: Vec<f64> = product
            .iter()
            .enumerate()
            .map(|(p, g)| g - if p / n == p % n { 1.0 } else { 0.0 })
            .collect();
        assert!(frobenius(&off) <= 1e-10, "a^2 a^-2 [{i}]");
    }
    assert!(matches!(
        array::<f64>(&stream, &[1.0; 6], &[2, 3]).matrix_power(2),
        Err(Error::InvalidValue(_))
    ));

    // multi_dot: a row vector, two matrices and a column vector; the association does not
    // change the value.
    let (x, b, c, y) = (
        common::products::values(4, 1),
        common::products::values(4 * 30, 2),
        common::products::values(30 * 3, 3),
        common::products::values(3, 4),
    );
    let arrays = [
        array::<f64>(&stream, &x, &[4]),
        array::<f64>(&stream, &b, &[4, 30]),
        array::<f64>(&stream, &c, &[30, 3]),
        array::<f64>(&stream, &y, &[3]),
    ];
    let got = cuda_core::multi_dot(&arrays.iter().collect::<Vec<_>>()).unwrap();
    assert_eq!(got.shape(), [0usize; 0]);
    let expected = host_matmul(&host_matmul(&host_matmul(&x, &b, 1, 4, 30), &c, 1, 30, 3), &y, 1, 3, 1)[0];
    assert!((got.item().unwrap() - expected).abs() <= 1e-12 * expected.abs().max(1.0));
    let matrix = cuda_core::multi_dot(&[&arrays[1], &arrays[2]]).unwrap();
    assert_eq!(matrix.shape(), [4, 3]);
    assert!(matches!(
        cuda_core::multi_dot(&[&arrays[1]]),
        Err(Error::InvalidValue(_))
    ));
    assert!(matches!(
        cuda_core::multi_dot(&[&arrays[2], &arrays[1]]),
        Err(Error::InvalidValue(_))
    ));
}

fn qr_factors<T: RealSolverElement + LinalgInput<Factored = T>>(stream: &Stream) {
    let eps = epsilon::<T>();
    let dtype = T::DTYPE;
    for (count, m, n) in [(1, 9, 4), (1, 4, 9), (3, 6, 6), (2, 30, 5)] {
        let a_host = common::products::values(count * m * n, 2 * m + n)
            .iter()
            .enumerate()
            .map(|(p, v)| v + 0.02 * (p % 5) as f64)
            .collect::<Vec<f64>>();
        let shape = if count == 1 { vec![m, n] } else { vec![count, m, n] };
        let batch = &shape[..shape.len() - 2];
        let a = array::<T>(stream, &a_host, &shape);
        let k = m.min(n);
        for complete in [false, true] {
            let (q, r) = a.qr(complete).unwrap();
            let (q_cols, r_rows) = if complete { (m, m) } else { (k, k) };
            assert_eq!(q.shape(), [batch, &[m, q_cols]].concat(), "{dtype} qr Q");
            assert_eq!(r.shape(), [batch, &[r_rows, n]].concat(), "{dtype} qr R");
            let (q, r) = (host(&q.to_contiguous().unwrap()), host(&r));
            for i in 0..count {
                let a_i = &a_host[i * m * n..(i + 1) * m * n];
                let q_i = &q[i * m * q_cols..(i + 1) * m * q_cols];
                let r_i = &r[i * r_rows * n..(i + 1) * r_rows * n];
                for (p, value) in r_i.iter().enumerate() {
                    if p / n > p % n {
                        assert_eq!(*value, 0.0, "{dtype} qr R [{i}] below the diagonal");
                    }
                }
                let rebuilt = host_matmul(q_i, r_i, m, q_cols, n);
                let residual: Vec<f64> = rebuilt.iter().zip(a_i).map(|(x, y)| x - y).collect();
                assert!(
                    frobenius(&residual) <= 100.0 * m.max(n) as f64 * eps * frobenius(a_i),
                    "{dtype} qr {count}x{m}x{n} complete={complete} [{i}]: Q R - A"
                );
                let q_t: Vec<f64> = (0..q_cols * m).map(|p| q_i[(p % m) * q_cols + p / m]).collect();
                let gram = host_matmul(&q_t, q_i, q_cols, m, q_cols);
                let off: Vec<f64> = gram
                    .iter()
                    .enumerate()
                    .map(|(p, g)| g - if p / q_cols == p % q_cols { 1.0 } else { 0.0 })
                    .collect();
                assert!(
                    frobenius(&off) <= 100.0 * m.max(n) as f64 * eps,
                    "{dtype} qr {count}x{m}x{n} complete={complete} [{i}]: Q^T Q - I"
                );
            }
        }
        // mode='r': the reduced R, without Q.
        let r_only = host(&a.qr_r().unwrap());
        let reduced = host(&a.qr(false).unwrap().1);
        assert_eq!(r_only, reduced, "{dtype} qr mode r");
    }
}

#[test]
fn qr_factors_rebuild_their_matrices_with_orthonormal_q() {
    let Some(stream) = common::stream_or_skip("qr_factors_rebuild_their_matrices_with_orthonormal_q") else {
        return;
    };
    qr_factors::<f32>(&stream);
    qr_factors::<f64>(&stream);
    let (q, r) = DeviceArray::<f64>::zeros(&stream, [3, 0]).unwrap().qr(true).unwrap();
    assert_eq!((q.shape(), r.shape()), (&[3usize, 3][..], &[3usize, 0][..]));
}

#[test]
fn lstsq_fits_with_residuals_rank_and_minimum_norm() {
    let Some(stream) = common::stream_or_skip("lstsq_fits_with_residuals_rank_and_minimum_norm") else {
        return;
    };
    // Overdetermined, full rank: x solves the normal equations; residuals are ||b - A x||^2.
    let (m, n, k) = (40, 4, 2);
    let a_host = common::products::values(m * n, 5)
        .iter()
        .enumerate()
        .map(|(p, v)| v + 0.03 * (p % 11) as f64)
        .collect::<Vec<f64>>();
    let b_host = common::products::values(m * k, 6);
    let a = array::<f64>(&stream, &a_host, &[m, n]);
    let fit = a.lstsq(&array::<f64>(&stream, &b_host, &[m, k]), None).unwrap();
    assert_eq!((fit.x.shape(), fit.rank), (&[n, k][..], n));
    assert_eq!(
        (fit.residuals.shape(), fit.singular_values.shape()),
        (&[k][..], &[n][..])
    );
    let x = host(&fit.x.to_contiguous().unwrap());
    let a_t: Vec<f64> = (0..n * m).map(|p| a_host[(p % m) * n + p / m]).collect();
    // A^T (A x - b) = 0.
    let r: Vec<f64> = host_matmul(&a_host, &x, m, n, k)
        .iter()
        .zip(&b_host)
        .map(|(p, q)| p - q)
        .collect();
    let normal = host_matmul(&a_t, &r, n, m, k);
    assert!(
        frobenius(&normal) <= 1e-10 * frobenius(&a_host) * frobenius(&b_host),
        "normal equations"
    );
    let residuals = host(&fit.residuals);
    for j in 0..k {
        let expected: f64 = (0..m).map(|i| r[i * k + j] * r[i * k + j]).sum();
        assert!(
            (residuals[j] - expected).abs() <= 1e-10 * expected.max(1.0),
            "residual {j}"
        );
    }
    // Underdetermined: A x = b exactly, with the least norm (x in the row space: x = A^T y).
    let wide = array::<f64>(&stream, &a_t, &[n, m]);
    let b_short = common::products::values(n, 7);
    let fit = wide.lstsq(&array::<f64>(&stream, &b_short, &[n]), None).unwrap();
    assert_eq!(
        (fit.x.shape(), fit.rank, fit.residuals.shape()),
        (&[m][..], n, &[0usize][..])
    );
    let x = host(&fit.x);
    let ax = host_matmul(&a_t, &x, n, m, 1);
    assert!(ax.iter().zip(&b_short).all(|(p, q)| (p - q).abs() < 1e-10), "A x = b");
    let pinv_x = host(
        &wide
            .pinv(1e-15)
            .unwrap()
            .matmul(&array::<f64>(&stream, &b_short, &[n]))
            .unwrap(),
    );
    assert!(
        x.iter().zip(&pinv_x).all(|(p, q)| (p - q).abs() < 1e-10),
        "the minimum-norm solution"
    );
    // A rank-deficient matrix: rank 1, no residuals.
    let outer = array::<f64>(&stream, &[1.0, 2.0, 2.0, 4.0, 3.0, 6.0], &[3, 2]);
    let fit = outer
        .lstsq(&array::<f64>(&stream, &[1.0, 2.0, 3.0], &[3]), None)
        .unwrap();
    assert_eq!((fit.rank, fit.residuals.shape()), (1, &[0usize][..]));
    assert!(matches!(
        outer.lstsq(&array::<f64>(&stream, &[1.0, 2.0], &[2]), None),
        Err(Error::InvalidValue(_))
    ));
}

/// The complex element types on the host, through `Complex<f64>`.
trait HostComplex: cuda_core::SolverElement + LinalgInput<Factored = Self> {
    const EPS: f64;
    /// The largest finite modulus of a part.
    const MAX: f64;
    fn from_c128(z: Complex<f64>) -> Self;
    fn to_c128(self) -> Complex<f64>;
}

impl HostComplex for Complex<f32> {
    const EPS: f64 = f32::EPSILON as f64;
    const MAX: f64 = f32::MAX as f64;
    fn from_c128(z: Complex<f64>) -> Self {
        Complex::new(z.re as f32, z.im as f32)
    }
    fn to_c128(self) -> Complex<f64> {
        Complex::new(self.re as f64, self.im as f64)
    }
}

impl HostComplex for Complex<f64> {
    const EPS: f64 = f64::EPSILON;
    const MAX: f64 = f64::MAX;
    fn from_c128(z: Complex<f64>) -> Self {
        z
    }
    fn to_c128(self) -> Complex<f64> {
        self
    }
}

/// `count` well-conditioned complex `n x n` matrices (diagonally dominant), row-major.
fn complex_matrices(count: usize, n: usize, seed: u64) -> Vec<Complex<f64>> {
    let re = matrices(count, n, seed);
    let im = matrices(count, n, seed + 1);
    re.iter()
        .zip(&im)
        .enumerate()
        .map(|(i, (&r, &m))| {
            // The imaginary parts off the diagonal only: the real diagonal keeps dominance.
            let diagonal = (i % (n * n)) % (n + 1) == 0;
            Complex::new(r, if diagonal { 0.5 } else { m })
        })
        .collect()
}

fn complex_array<C: HostComplex>(stream: &Stream, values: &[Complex<f64>], shape: &[usize]) -> DeviceArray<C> {
    let host: Vec<C> = values.iter().map(|&z| C::from_c128(z)).collect();
    DeviceArray::from_slice(stream, &host)
        .unwrap()
        .reshape(shape.to_vec())
        .unwrap()
}

fn complex_host<C: HostComplex>(array: &DeviceArray<C>) -> Vec<Complex<f64>> {
    array.to_vec().unwrap().into_iter().map(C::to_c128).collect()
}

/// `a (m x k) @ b (k x n)`, row-major complex.
fn complex_matmul(a: &[Complex<f64>], b: &[Complex<f64>], m: usize, k: usize, n: usize) -> Vec<Complex<f64>> {
    let mut out = vec![Complex::new(0.0, 0.0); m * n];
    for i in 0..m {
        for j in 0..n {
            out[i * n + j] = (0..k).map(|l| a[i * k + l] * b[l * n + j]).sum();
        }
    }
    out
}

fn complex_norm(values: &[Complex<f64>]) -> f64 {
    values.iter().map(|z| z.norm_sqr()).sum::<f64>().sqrt()
}

/// The determinant of a row-major complex `n x n` matrix by elimination with partial pivoting.
fn complex_det(a: &[Complex<f64>], n: usize) -> Complex<f64> {
    let mut m = a.to_vec();
    let mut det = Complex::new(1.0, 0.0);
    for col in 0..n {
        let pivot = (col..n)
            .max_by(|&x, &y| m[x * n + col].norm().total_cmp(&m[y * n + col].norm()))
            .unwrap();
        if m[pivot * n + col].norm() == 0.0 {
            return Complex::new(0.0, 0.0);
        }
        if pivot != col {
            for j in 0..n {
                m.swap(pivot * n + j, col * n + j);
            }
            det = -det;
        }
        det *= m[col * n + col];
        for row in col + 1..n {
            let factor = m[row * n + col] / m[col * n + col];
            for j in col..n {
                let above = m[col * n + j];
                m[row * n + j] -= factor * above;
            }
        }
    }
    det
}

/// `|A X - T| / (|A| |X|)` (Frobenius norms) of one `n x n` matrix `a` and `n x k` `x`, the
/// target `t` the identity where `None`.
fn complex_relative_residual(
    a: &[Complex<f64>],
    x: &[Complex<f64>],
    t: Option<&[Complex<f64>]>,
    n: usize,
    k: usize,
) -> f64 {
    let mut product = complex_matmul(a, x, n, n, k);
    match t {
        Some(t) => product.iter_mut().zip(t).for_each(|(p, t)| *p -= t),
        None => (0..n).for_each(|d| product[d * k + d] -= 1.0),
    }
    complex_norm(&product) / (complex_norm(a) * complex_norm(x))
}

/// Complex `inv`, `det` and `slogdet` of stacks (`count`, `n` of `sizes`) against the host:
/// `A @ inv(A)` against the identity, determinants, and slogdet's sign of modulus 1 with
/// `sign * exp(logabs) == det`.
fn complex_inverses_and_determinants<C: HostComplex>(stream: &Stream, sizes: &[(usize, usize)]) {
    let (eps, dtype) = (C::EPS, C::DTYPE);
    for &(count, n) in sizes {
        let a_host = complex_matrices(count, n, 21);
        let a = complex_array::<C>(stream, &a_host, &[count, n, n]);
        let inverse = complex_host(&a.inv().unwrap());
        let det = complex_host(&a.det().unwrap());
        let (sign, logabs) = a.slogdet().unwrap();
        let (sign, logabs) = (complex_host(&sign), logabs.to_vec().unwrap());
        for i in 0..count {
            let a_i = &a_host[i * n * n..(i + 1) * n * n];
            let inv_i = &inverse[i * n * n..(i + 1) * n * n];
            let off = complex_relative_residual(a_i, inv_i, None, n, n);
            assert!(off <= 20.0 * n as f64 * eps, "{dtype} inv {count}x{n}: {off}");
            let expected = complex_det(a_i, n);
            if expected.re.abs().max(expected.im.abs()) > C::MAX {
                // Past the type's range (complex64's 40 x 40 determinants, about 40^40): NumPy's
                // det overflows to inf too; slogdet below still holds.
                assert!(
                    det[i].re.is_infinite() || det[i].im.is_infinite(),
                    "{dtype} det {count}x{n}: {}",
                    det[i]
                );
            } else {
                let error = (det[i] - expected).norm() / expected.norm();
                assert!(error <= 50.0 * n as f64 * eps, "{dtype} det {count}x{n}: {error}");
            }
            // slogdet: a sign of modulus 1 and a real logarithm, sign * exp(logabs) == det.
            assert!((sign[i].norm() - 1.0).abs() <= 10.0 * eps, "{dtype} |sign| {}", sign[i]);
            let rebuilt = sign[i] * cuda_core::Element::to_f64(logabs[i]).exp();
            let error = (rebuilt - expected).norm() / expected.norm();
            assert!(error <= 50.0 * n as f64 * eps, "{dtype} slogdet {count}x{n}: {error}");
        }
    }
}

/// Complex stacks of `count` systems `n x n` with `k` right-hand sides (of `cases`) against the
/// host, by their residuals.
fn complex_solves<C: HostComplex>(stream: &Stream, cases: &[(usize, usize, usize)]) {
    let (eps, dtype) = (C::EPS, C::DTYPE);
    for &(count, n, k) in cases {
        let a_host = complex_matrices(count, n, 21);
        // `n x k` values from matrices of the larger side (more right-hand sides than rows too).
        let side = n.max(k);
        let b_host = complex_matrices(count, side, 22)
            .chunks(side * side)
            .flat_map(|m| m[..n * k].to_vec())
            .collect::<Vec<_>>();
        let a = complex_array::<C>(stream, &a_host, &[count, n, n]);
        let b = complex_array::<C>(stream, &b_host, &[count, n, k]);
        let x = complex_host(&a.solve(&b).unwrap());
        for i in 0..count {
            let a_i = &a_host[i * n * n..(i + 1) * n * n];
            let x_i = &x[i * n * k..(i + 1) * n * k];
            let b_i = &b_host[i * n * k..(i + 1) * n * k];
            let relative = complex_relative_residual(a_i, x_i, Some(b_i), n, k);
            assert!(
                relative <= 20.0 * n as f64 * eps,
                "{dtype} solve {count}x{n}x{k}: {relative}"
            );
        }
    }
}

fn complex_lu_family<C: HostComplex>(stream: &Stream) {
    let (eps, dtype) = (C::EPS, C::DTYPE);
    // solve: the crate's kernel up to 64 x 64 (32 x 32 in Complex<f64>) and 64 right-hand
    // sides; one matrix (cuSOLVER's getrf) and stacks (cuBLAS's batched LU) past that.
    complex_solves::<C>(stream, &[(1, 6, 2), (5, 8, 3), (3, 40, 1), (1, 70, 2), (2, 5, 65)]);
    // inv, det, slogdet: the crate's kernels up to 64 x 64 (32 x 32 in Complex<f64>), cuSOLVER
    // and cuBLAS above.
    complex_inverses_and_determinants::<C>(stream, &[(1, 6), (5, 8), (3, 40), (1, 70)]);
    // One singular matrix inside a complex batch: its index comes back, for solve and inv. Its
    // row 1 is zero, which partial pivoting never picks and elimination leaves exactly zero, so
    // `U`'s last pivot is exactly 0. A row that is a multiple of another is no such matrix: the
    // complex division of the multiplier rounds (2i * a / a is not exactly 2i in complex64),
    // leaving a pivot of rounding size that getrf takes as non-singular.
    let n = 4;
    let mut stack = complex_matrices(4, n, 23);
    for j in 0..n {
        stack[2 * n * n + n + j] = Complex::new(0.0, 0.0);
    }
    let a = complex_array::<C>(stream, &stack, &[4, n, n]);
    let b = complex_array::<C>(stream, &stack[..n], &[n]);
    let calls = [
        ("solve", a.solve(&b).map(drop), SMALL_SOLVE),
        ("inv", a.inv().map(drop), SMALL_INV),
    ];
    for (what, result, expected) in calls {
        match result {
            Err(Error::Library(cuda_libs::Error::Linalg {
                routine,
                index,
                failure: LinalgFailure::Singular { .. },
            })) => assert_eq!((routine, index), (expected, 2), "{dtype} {what}"),
            other => panic!("{dtype} {what} of a batch with a singular matrix: {other:?}"),
        }
    }
    // Its determinant is 0 (not an error), the others' are not.
    let det = complex_host(&a.det().unwrap());
    assert!(det[2].norm() <= 1e3 * eps * det[0].norm(), "{dtype}: {det:?}");
}

#[test]
fn complex_solve_inv_det_and_slogdet_match_the_host() {
    let Some(stream) = common::stream_or_skip("complex_solve_inv_det_and_slogdet_match_the_host") else {
        return;
    };
    complex_lu_family::<Complex<f32>>(&stream);
    complex_lu_family::<Complex<f64>>(&stream);
}

/// `eig`'s result, `None` (the test says why) where the loaded cuSOLVER has no `Xgeev`.
fn eig_or_skip<C: cuda_core::Element>(
    result: cuda_core::Result<(DeviceArray<C>, DeviceArray<C>)>,
) -> Option<(DeviceArray<C>, DeviceArray<C>)> {
    match result {
        Err(Error::NotSupported(why)) => {
            println!("skipped: eig: {why}");
            None
        }
        other => Some(other.unwrap()),
    }
}

/// Checks `A v = λ v` and `|v| = 1` for every pair of each matrix of the stack `a_host`.
fn check_pairs(w: &[Complex<f64>], v: &[Complex<f64>], a_host: &[Complex<f64>], n: usize, eps: f64) {
    for (i, a_i) in a_host.chunks(n * n).enumerate() {
        let v_i = &v[i * n * n..(i + 1) * n * n];
        let av = complex_matmul(a_i, v_i, n, n, n);
        for col in 0..n {
            let lambda = w[i * n + col];
            let residual: Vec<_> = (0..n).map(|r| av[r * n + col] - lambda * v_i[r * n + col]).collect();
            let column: Vec<_> = (0..n).map(|r| v_i[r * n + col]).collect();
            assert!(
                (complex_norm(&column) - 1.0).abs() <= 100.0 * eps,
                "vector {col} has norm 1"
            );
            let relative = complex_norm(&residual) / complex_norm(a_i);
            assert!(
                relative <= 100.0 * n as f64 * eps,
                "A v = λ v, matrix {i} pair {col}: {relative}"
            );
        }
    }
}

/// `eig` and `eigvals` of a non-symmetric complex stack: `None` without `Xgeev`.
fn complex_eig<C: HostComplex + cuda_core::SolverElement<Complex = C>>(stream: &Stream) -> Option<()> {
    let (count, n) = (3, 7);
    let host = complex_matrices(count, n, 31);
    let a = complex_array::<C>(stream, &host, &[count, n, n]);
    let (w, v) = eig_or_skip(a.eig())?;
    assert_eq!((w.shape(), v.shape()), (&[count, n][..], &[count, n, n][..]));
    let (w, v) = (complex_host(&w), complex_host(&v.to_contiguous().unwrap()));
    check_pairs(&w, &v, &host, n, C::EPS);
    // eigvals: the same values (geev is deterministic on one device), without the vectors.
    let values = complex_host(&a.eigvals().unwrap());
    for (x, y) in values.iter().zip(&w) {
        assert!(
            (x - y).norm() <= 100.0 * n as f64 * C::EPS * y.norm().max(1.0),
            "{x} vs {y}"
        );
    }
    Some(())
}

#[test]
fn eig_gives_eigenpairs_of_non_symmetric_matrices() {
    let Some(stream) = common::stream_or_skip("eig_gives_eigenpairs_of_non_symmetric_matrices") else {
        return;
    };
    if complex_eig::<Complex<f32>>(&stream).is_none() {
        return;
    }
    complex_eig::<Complex<f64>>(&stream).expect("geev was found for c64");
    // A real matrix of known spectrum, promoted to complex results: upper triangular with
    // 1..n on the diagonal, in f32 (c64 results) and f64 (c128).
    let n = 5;
    let mut triangular = vec![0.0; n * n];
    for i in 0..n {
        for j in i..n {
            triangular[i * n + j] = if i == j { (i + 1) as f64 } else { 0.5 };
        }
    }
    let as_complex: Vec<_> = triangular.iter().map(|&x| Complex::new(x, 0.0)).collect();
    let single: Vec<f32> = triangular.iter().map(|&x| x as f32).collect();
    let single = DeviceArray::from_slice(&stream, &single)
        .unwrap()
        .reshape([1, n, n])
        .unwrap();
    let double = array::<f64>(&stream, &triangular, &[1, n, n]);
    let (w32, v32) = single.eig().unwrap();
    let (w64, v64) = double.eig().unwrap();
    let results = [
        (
            complex_host(&w32),
            complex_host(&v32.to_contiguous().unwrap()),
            f32::EPSILON as f64,
        ),
        (
            complex_host(&w64),
            complex_host(&v64.to_contiguous().unwrap()),
            f64::EPSILON,
        ),
    ];
    for (mut values, vectors, eps) in results {
        check_pairs(&values, &vectors, &as_complex, n, eps);
        values.sort_by(|x, y| x.re.total_cmp(&y.re));
        for (i, value) in values.iter().enumerate() {
            assert!((value - (i + 1) as f64).norm() <= 1e3 * eps, "{values:?}");
        }
    }
    // A rotation: eigenvalues ±i from a real matrix.
    let rotation = array::<f64>(&stream, &[0.0, -1.0, 1.0, 0.0], &[2, 2]);
    let mut values = complex_host(&rotation.eigvals().unwrap());
    values.sort_by(|x, y| x.im.total_cmp(&y.im));
    assert!((values[0] - Complex::new(0.0, -1.0)).norm() <= 1e-12, "{values:?}");
    assert!((values[1] - Complex::new(0.0, 1.0)).norm() <= 1e-12, "{values:?}");
    // Empty stacks and 0 x 0 matrices give empty results; a matrix that is not square is an error.
    let (w, v) = DeviceArray::<f64>::zeros(&stream, [2, 0, 0]).unwrap().eig().unwrap();
    assert_eq!((w.shape(), v.shape()), (&[2, 0][..], &[2, 0, 0][..]));
    assert!(matches!(
        DeviceArray::<f64>::zeros(&stream, [2, 3]).unwrap().eigvals(),
        Err(Error::InvalidValue(_))
    ));
}

/// The conjugate transpose of each row-major `r x c` matrix of a stack.
fn adjoint(x: &[Complex<f64>], r: usize, c: usize) -> Vec<Complex<f64>> {
    x.chunks(r * c)
        .flat_map(|m| (0..c).flat_map(move |j| (0..r).map(move |i| m[i * c + j].conj())))
        .collect()
}

/// `‖x - y‖ / ‖y‖`.
fn complex_relative(x: &[Complex<f64>], y: &[Complex<f64>]) -> f64 {
    let difference: Vec<_> = x.iter().zip(y).map(|(a, b)| a - b).collect();
    complex_norm(&difference) / complex_norm(y).max(f64::MIN_POSITIVE)
}

/// `‖X^H X - I‖` of a row-major `r x c` matrix with orthonormal columns.
fn unitarity_error(x: &[Complex<f64>], r: usize, c: usize) -> f64 {
    let mut gram = complex_matmul(&adjoint(x, r, c), x, c, r, c);
    for d in 0..c {
        gram[d * c + d] -= 1.0;
    }
    complex_norm(&gram)
}

/// `count` Hermitian positive definite matrices `B B^H + n I`.
fn hermitian_positive(count: usize, n: usize, seed: u64) -> Vec<Complex<f64>> {
    complex_matrices(count, n, seed)
        .chunks(n * n)
        .flat_map(|b| {
            let mut h = complex_matmul(b, &adjoint(b, n, n), n, n, n);
            for d in 0..n {
                h[d * n + d] += n as f64;
            }
            h
        })
        .collect()
}

/// Complex Cholesky factors of Hermitian stacks (`count`, `n` of `sizes`), lower and upper: the
/// other triangle zero, and the product rebuilding `A`.
fn complex_choleskys<C: HostComplex>(stream: &Stream, sizes: &[(usize, usize)]) {
    let (eps, dtype) = (C::EPS, C::DTYPE);
    for &(count, n) in sizes {
        let h = hermitian_positive(count, n, 41);
        let a = complex_array::<C>(stream, &h, &[count, n, n]);
        for upper in [false, true] {
            let factor = complex_host(&a.cholesky(upper).unwrap().to_contiguous().unwrap());
            for (i, f) in factor.chunks(n * n).enumerate() {
                let h_i = &h[i * n * n..(i + 1) * n * n];
                for r in 0..n {
                    for c in 0..n {
                        let zero = if upper { c < r } else { c > r };
                        assert!(!zero || f[r * n + c].norm() == 0.0, "{dtype} other triangle");
                    }
                }
                let rebuilt = match upper {
                    false => complex_matmul(f, &adjoint(f, n, n), n, n, n),
                    true => complex_matmul(&adjoint(f, n, n), f, n, n, n),
                };
                let error = complex_relative(&rebuilt, h_i);
                assert!(
                    error <= 20.0 * n as f64 * eps,
                    "{dtype} cholesky upper={upper}: {error}"
                );
            }
        }
    }
}

fn complex_factorizations<C: HostComplex>(stream: &Stream) {
    let (eps, dtype) = (C::EPS, C::DTYPE);
    // Cholesky: the crate's kernel up to 64 x 64 (32 x 32 in Complex<f64>), cuSOLVER's Xpotrf
    // and potrfBatched above.
    complex_choleskys::<C>(stream, &[(1, 9), (4, 6), (1, 70), (2, 40)]);
    // One indefinite matrix inside a complex batch: its index comes back.
    let n = 5;
    let mut h = hermitian_positive(3, n, 42);
    for z in &mut h[n * n..2 * n * n] {
        *z = -*z;
    }
    match complex_array::<C>(stream, &h, &[3, n, n]).cholesky(false) {
        Err(Error::Library(cuda_libs::Error::Linalg {
            routine,
            index,
            failure: LinalgFailure::NotPositiveDefinite { .. },
        })) => assert_eq!((routine, index), (SMALL, 1)),
        other => panic!("{dtype} cholesky of a batch with an indefinite matrix: {other:?}"),
    }

    // eigh / eigvalsh: Jacobi for a small stack, divide and conquer for one larger matrix, one
    // batched call for a stack of larger ones.
    for (count, n) in [(4, 5), (1, 40), (2, 36)] {
        let h = hermitian_positive(count, n, 43);
        let a = complex_array::<C>(stream, &h, &[count, n, n]);
        for upper in [false, true] {
            let (w, v) = a.eigh(upper).unwrap();
            let w: Vec<f64> = w
                .to_vec()
                .unwrap()
                .into_iter()
                .map(cuda_core::Element::to_f64)
                .collect();
            let v = complex_host(&v.to_contiguous().unwrap());
            let values = a.eigvalsh(upper).unwrap().to_vec().unwrap();
            for i in 0..count {
                let (h_i, v_i) = (&h[i * n * n..(i + 1) * n * n], &v[i * n * n..(i + 1) * n * n]);
                let w_i = &w[i * n..(i + 1) * n];
                assert!(w_i.windows(2).all(|p| p[0] <= p[1]), "{dtype} ascending");
                let hv = complex_matmul(h_i, v_i, n, n, n);
                let vw: Vec<_> = (0..n * n).map(|e| v_i[e] * w_i[e % n]).collect();
                let error = complex_relative(&hv, &vw);
                assert!(error <= 50.0 * n as f64 * eps, "{dtype} eigh H v = v w: {error}");
                assert!(unitarity_error(v_i, n, n) <= 50.0 * n as f64 * eps, "{dtype} V^H V");
                for (x, y) in values[i * n..(i + 1) * n].iter().zip(w_i) {
                    assert!((cuda_core::Element::to_f64(*x) - y).abs() <= 50.0 * n as f64 * eps * y.abs());
                }
            }
        }
    }
    // A known spectrum: [[2, i], [-i, 2]] has eigenvalues 1 and 3.
    let known = [
        Complex::new(2.0, 0.0),
        Complex::new(0.0, 1.0),
        Complex::new(0.0, -1.0),
        Complex::new(2.0, 0.0),
    ];
    let w = complex_array::<C>(stream, &known, &[2, 2])
        .eigvalsh(false)
        .unwrap()
        .to_vec()
        .unwrap();
    let w: Vec<f64> = w.into_iter().map(cuda_core::Element::to_f64).collect();
    assert!(
        (w[0] - 1.0).abs() <= 10.0 * eps && (w[1] - 3.0).abs() <= 10.0 * eps,
        "{dtype}: {w:?}"
    );

    // qr, svd, pinv, cond and matrix_rank of tall and wide stacks.
    for (count, m, n) in [(1, 9, 6), (1, 6, 9), (3, 7, 4), (3, 4, 7), (1, 40, 30)] {
        let k = m.min(n);
        let host = complex_matrices(count, m.max(n), 44)
            .chunks(m.max(n) * m.max(n))
            .flat_map(|x| x[..m * n].to_vec())
            .collect::<Vec<_>>();
        let a = complex_array::<C>(stream, &host, &[count, m, n]);
        let tolerance = 50.0 * m.max(n) as f64 * eps;
        for complete in [false, true] {
            let (q, r) = a.qr(complete).unwrap();
            let q_cols = if complete { m } else { k };
            let (q, r) = (
                complex_host(&q.to_contiguous().unwrap()),
                complex_host(&r.to_contiguous().unwrap()),
            );
            for i in 0..count {
                let q_i = &q[i * m * q_cols..(i + 1) * m * q_cols];
                let r_i = &r[i * q_cols * n..(i + 1) * q_cols * n];
                assert!(unitarity_error(q_i, m, q_cols) <= tolerance, "{dtype} Q^H Q");
                let rebuilt = complex_matmul(q_i, r_i, m, q_cols, n);
                let error = complex_relative(&rebuilt, &host[i * m * n..(i + 1) * m * n]);
                assert!(error <= tolerance, "{dtype} QR {m}x{n}: {error}");
            }
        }
        for full in [false, true] {
            let (u, s, vh) = a.svd(full).unwrap();
            let (u_cols, vh_rows) = if full { (m, n) } else { (k, k) };
            let u = complex_host(&u.to_contiguous().unwrap());
            let vh = complex_host(&vh.to_contiguous().unwrap());
            let s: Vec<f64> = s
                .to_vec()
                .unwrap()
                .into_iter()
                .map(cuda_core::Element::to_f64)
                .collect();
            for i in 0..count {
                let u_i = &u[i * m * u_cols..(i + 1) * m * u_cols];
                let vh_i = &vh[i * vh_rows * n..(i + 1) * vh_rows * n];
                let s_i = &s[i * k..(i + 1) * k];
                assert!(unitarity_error(u_i, m, u_cols) <= tolerance, "{dtype} U^H U {m}x{n}");
                assert!(
                    unitarity_error(&adjoint(vh_i, vh_rows, n), n, vh_rows) <= tolerance,
                    "{dtype} Vh"
                );
                // A = U[:, :k] diag(S) Vh[:k, :].
                let us: Vec<_> = (0..m * k).map(|e| u_i[(e / k) * u_cols + e % k] * s_i[e % k]).collect();
                let rebuilt = complex_matmul(&us, &vh_i[..k * n], m, k, n);
                let error = complex_relative(&rebuilt, &host[i * m * n..(i + 1) * m * n]);
                assert!(error <= tolerance, "{dtype} U S Vh {m}x{n} full={full}: {error}");
            }
            let values = a.svdvals().unwrap().to_vec().unwrap();
            for (x, y) in values.iter().zip(&s) {
                assert!(
                    (cuda_core::Element::to_f64(*x) - y).abs() <= tolerance * s[0],
                    "{dtype} svdvals"
                );
            }
            let cond = a.cond().unwrap().to_vec().unwrap();
            for (i, c) in cond.iter().enumerate() {
                let expected = s[i * k] / s[(i + 1) * k - 1];
                assert!(
                    (cuda_core::Element::to_f64(*c) - expected).abs() <= tolerance * expected,
                    "{dtype} cond"
                );
            }
        }
        // pinv: A pinv(A) A == A.
        let p = complex_host(&a.pinv(1e-15).unwrap().to_contiguous().unwrap());
        for i in 0..count {
            let a_i = &host[i * m * n..(i + 1) * m * n];
            let p_i = &p[i * n * m..(i + 1) * n * m];
            let rebuilt = complex_matmul(&complex_matmul(a_i, p_i, m, n, m), a_i, m, m, n);
            let error = complex_relative(&rebuilt, a_i);
            assert!(error <= 10.0 * tolerance, "{dtype} A pinv(A) A {m}x{n}: {error}");
        }
        assert!(a
            .matrix_rank()
            .unwrap()
            .to_vec()
            .unwrap()
            .iter()
            .all(|&r| r == k as i64));
    }
    // A rank-deficient complex matrix: row 2 is i times row 1.
    let mut deficient = complex_matrices(1, 4, 45);
    for j in 0..4 {
        deficient[4 + j] = deficient[j] * Complex::new(0.0, 1.0);
    }
    let rank = complex_array::<C>(stream, &deficient, &[4, 4]).matrix_rank().unwrap();
    assert_eq!(rank.item().unwrap(), 3, "{dtype}");

    // NumPy's tol and rtol on diag(4, 3, 2, 1): an absolute cut-off, a relative one, pinv's.
    let mut diagonal = vec![Complex::new(0.0, 0.0); 16];
    for d in 0..4 {
        diagonal[d * 5] = Complex::new(0.0, (4 - d) as f64);
    }
    let a = complex_array::<C>(stream, &diagonal, &[4, 4]);
    assert_eq!(
        a.matrix_rank_with(Some(2.5), Some(0.9)).unwrap().item().unwrap(),
        2,
        "tol wins"
    );
    assert_eq!(a.matrix_rank_with(None, Some(0.4)).unwrap().item().unwrap(), 3);
    assert_eq!(a.matrix_rank_with(None, None).unwrap().item().unwrap(), 4);
    let p = complex_host(&a.pinv_rtol(Some(0.3)).unwrap().to_contiguous().unwrap());
    for (e, z) in p.iter().enumerate() {
        let (r, c) = (e / 4, e % 4);
        // pinv of diag(i d) is diag(-i / d), the values at most 0.3 * 4 dropped.
        let expected = match r == c && r < 3 {
            true => Complex::new(0.0, -1.0 / (4 - r) as f64),
            false => Complex::new(0.0, 0.0),
        };
        assert!(
            (z - expected).norm() <= 100.0 * eps,
            "{dtype} pinv_rtol[{r}, {c}] = {z}"
        );
    }

    // lstsq of a tall system: the normal equations A^H (A x - b) = 0 hold, residuals are real.
    let (m, n) = (8, 5);
    let host = complex_matrices(1, m, 46)[..m * n].to_vec();
    let b_host = complex_matrices(1, m, 47)[..m].to_vec();
    let a = complex_array::<C>(stream, &host, &[m, n]);
    let b = complex_array::<C>(stream, &b_host, &[m]);
    let fit = a.lstsq(&b, None).unwrap();
    assert_eq!(
        (fit.rank, fit.x.shape(), fit.residuals.shape()),
        (n, &[n][..], &[1][..])
    );
    let x = complex_host(&fit.x);
    let residual: Vec<_> = complex_matmul(&host, &x, m, n, 1)
        .iter()
        .zip(&b_host)
        .map(|(ax, b)| ax - b)
        .collect();
    let normal = complex_matmul(&adjoint(&host, m, n), &residual, n, m, 1);
    let scale = complex_norm(&host) * complex_norm(&b_host);
    assert!(
        complex_norm(&normal) <= 100.0 * m as f64 * eps * scale,
        "{dtype} lstsq normal equations"
    );
    let squared = cuda_core::Element::to_f64(fit.residuals.to_vec().unwrap()[0]);
    let expected = residual.iter().map(|z| z.norm_sqr()).sum::<f64>();
    assert!(
        (squared - expected).abs() <= 1e3 * eps * expected.max(1.0),
        "{dtype} residuals"
    );
}

#[test]
fn complex_factorizations_rebuild_their_matrices() {
    let Some(stream) = common::stream_or_skip("complex_factorizations_rebuild_their_matrices") else {
        return;
    };
    complex_factorizations::<Complex<f32>>(&stream);
    complex_factorizations::<Complex<f64>>(&stream);
}

/// The singular values of a row-major complex `m x n` matrix (`m >= n`), descending: the square
/// roots of the eigenvalues of `A^H A`, from its real form `[[X, -Y], [Y, X]]`, which has each
/// of them twice.
fn complex_singular_values(a: &[Complex<f64>], m: usize, n: usize) -> Vec<f64> {
    let gram = complex_matmul(&adjoint(a, m, n), a, n, m, n);
    let size = 2 * n;
    let mut real = vec![0.0; size * size];
    for i in 0..n {
        for j in 0..n {
            let z = gram[i * n + j];
            real[i * size + j] = z.re;
            real[(i + n) * size + j + n] = z.re;
            real[i * size + j + n] = -z.im;
            real[(i + n) * size + j] = z.im;
        }
    }
    let values = host_eigenvalues(&real, size);
    values.iter().rev().step_by(2).map(|v| v.max(0.0).sqrt()).collect()
}

#[test]
fn the_host_complex_singular_values_match_known_ones() {
    let (i, one, zero) = (Complex::new(0.0, 1.0), Complex::new(1.0, 0.0), Complex::new(0.0, 0.0));
    // [[3i, 0], [0, 2], [0, 0]]: 3 and 2.
    let s = complex_singular_values(&[i * 3.0, zero, zero, one * 2.0, zero, zero], 3, 2);
    assert!((s[0] - 3.0).abs() < 1e-12 && (s[1] - 2.0).abs() < 1e-12, "{s:?}");
    // [[1, i], [0, 1]]: A^H A has trace 3 and determinant 1, so s = phi and 1 / phi.
    let phi = (1.0 + 5f64.sqrt()) / 2.0;
    let s = complex_singular_values(&[one, i, zero, one], 2, 2);
    assert!((s[0] - phi).abs() < 1e-12 && (s[1] - 1.0 / phi).abs() < 1e-12, "{s:?}");
}

/// The values of a real norm array, after checking it is `real_type` of the input.
fn norm_values<R: cuda_core::Element>(norm: &DeviceArray<R>, input: cuda_core::DType) -> Vec<f64> {
    assert_eq!(norm.dtype(), input.real_type(), "the norm of {input} is real");
    norm.to_vec().unwrap().iter().map(|v| v.to_f64()).collect()
}

fn complex_norms<C: HostComplex>(stream: &Stream) {
    let (eps, dtype) = (C::EPS, C::DTYPE);
    let close = |what: &str, got: f64, expected: f64, tolerance: f64| {
        assert!(
            (got - expected).abs() <= tolerance * expected.abs().max(1.0),
            "{dtype} {what}: {got} vs {expected}"
        )
    };
    // Vector norms of every order, against the moduli on the host; one element is 0.
    let mut v_host = complex_matrices(1, 7, 51)[..7].to_vec();
    v_host[3] = Complex::new(0.0, 0.0);
    let v = complex_array::<C>(stream, &v_host, &[7]);
    let moduli: Vec<f64> = complex_host(&v).iter().map(|z| z.norm()).collect();
    let power = |p: f64| moduli.iter().map(|m| m.powf(p)).sum::<f64>().powf(1.0 / p);
    let vector_cases = [
        (Norm::Default, power(2.0)),
        (Norm::Ord(2.0), power(2.0)),
        (Norm::Ord(1.0), moduli.iter().sum()),
        (Norm::Inf, moduli.iter().cloned().fold(0.0, f64::max)),
        (Norm::NegInf, 0.0),
        (Norm::Ord(0.0), 6.0),
        (Norm::Ord(3.0), power(3.0)),
        (Norm::Ord(0.5), power(0.5)),
    ];
    for (ord, expected) in vector_cases {
        let got = norm_values(&v.linalg_norm(ord).unwrap(), dtype)[0];
        close(&format!("vector {ord:?}"), got, expected, 100.0 * eps);
        let got = norm_values(&v.vector_norm(ord).unwrap(), dtype)[0];
        close(&format!("vector_norm {ord:?}"), got, expected, 100.0 * eps);
    }
    // Matrix norms of a 5 x 3 matrix: Frobenius (also of its transposed view), line sums,
    // and the singular-value norms against the host's.
    let (m, n) = (5, 3);
    let stack_host: Vec<Complex<f64>> = complex_matrices(3, m, 52)
        .chunks(m * m)
        .flat_map(|c| c[..m * n].to_vec())
        .collect();
    let stack = complex_array::<C>(stream, &stack_host, &[3, m, n]);
    let stack_used = complex_host(&stack);
    let expected_norms = |a: &[Complex<f64>]| {
        let moduli: Vec<f64> = a.iter().map(|z| z.norm()).collect();
        let columns: Vec<f64> = (0..n).map(|j| (0..m).map(|i| moduli[i * n + j]).sum()).collect();
        let rows: Vec<f64> = (0..m).map(|i| moduli[i * n..(i + 1) * n].iter().sum()).collect();
        let s = complex_singular_values(a, m, n);
        let greatest = |x: &[f64]| x.iter().cloned().fold(f64::MIN, f64::max);
        let least = |x: &[f64]| x.iter().cloned().fold(f64::MAX, f64::min);
        vec![
            (Norm::Default, complex_norm(a), 100.0),
            (Norm::Fro, complex_norm(a), 100.0),
            (Norm::Ord(1.0), greatest(&columns), 100.0),
            (Norm::Ord(-1.0), least(&columns), 100.0),
            (Norm::Inf, greatest(&rows), 100.0),
            (Norm::NegInf, least(&rows), 100.0),
            (Norm::Ord(2.0), s[0], 1e3),
            (Norm::Ord(-2.0), s[n - 1], 1e3),
            (Norm::Nuc, s.iter().sum(), 1e3),
        ]
    };
    let a = stack.index_axis(0, 0).unwrap();
    let a_used = &stack_used[..m * n];
    for (ord, expected, tolerance) in expected_norms(a_used) {
        let got = norm_values(&a.linalg_norm(ord).unwrap(), dtype)[0];
        close(&format!("matrix {ord:?}"), got, expected, tolerance * eps);
    }
    let transposed = norm_values(&a.swapaxes(0, 1).unwrap().linalg_norm(Norm::Fro).unwrap(), dtype)[0];
    close(
        "Frobenius of a transposed view",
        transposed,
        complex_norm(a_used),
        100.0 * eps,
    );
    let sum = norm_values(&a.vector_norm(Norm::Ord(1.0)).unwrap(), dtype)[0];
    let moduli_sum: f64 = a_used.iter().map(|z| z.norm()).sum();
    close("vector_norm of a matrix", sum, moduli_sum, 100.0 * eps);
    // matrix_norm: one norm per matrix of the stack (the singular values in one Jacobi call).
    for (index, (ord, _, tolerance)) in expected_norms(a_used).into_iter().enumerate() {
        let got = stack.matrix_norm(ord).unwrap();
        assert_eq!(got.shape(), [3], "{dtype} matrix_norm {ord:?}");
        for (i, got) in norm_values(&got, dtype).into_iter().enumerate() {
            let expected = expected_norms(&stack_used[i * m * n..(i + 1) * m * n])[index].1;
            close(&format!("matrix_norm {ord:?} [{i}]"), got, expected, tolerance * eps);
        }
    }
}

#[test]
fn complex_norms_are_real_and_match_the_host_for_every_order() {
    let Some(stream) = common::stream_or_skip("complex_norms_are_real_and_match_the_host_for_every_order") else {
        return;
    };
    complex_norms::<Complex<f32>>(&stream);
    complex_norms::<Complex<f64>>(&stream);
}

/// `‖A X - B‖ / (‖A‖ ‖X‖)` of one row-major complex system `(n x n) (n x k)`.
fn complex_residual(a: &[Complex<f64>], x: &[Complex<f64>], b: &[Complex<f64>], n: usize, k: usize) -> f64 {
    let r: Vec<_> = complex_matmul(a, x, n, n, k)
        .iter()
        .zip(b)
        .map(|(p, q)| p - q)
        .collect();
    complex_norm(&r) / (complex_norm(a) * complex_norm(x))
}

fn real_as_complex(values: &[f64]) -> Vec<Complex<f64>> {
    values.iter().map(|&v| Complex::new(v, 0.0)).collect()
}

#[test]
fn solve_promotes_real_and_complex_operands_together() {
    let Some(stream) = common::stream_or_skip("solve_promotes_real_and_complex_operands_together") else {
        return;
    };
    let stream = &stream;
    let n = 6;
    let (eps32, eps64) = (f32::EPSILON as f64, f64::EPSILON);
    let bound = |eps: f64| 20.0 * n as f64 * eps;
    // A real f64 matrix with complex64 right-hand sides: complex128, as NumPy.
    let a_real = matrices(1, n, 61);
    let b = complex_array::<Complex<f32>>(stream, &complex_matrices(1, n, 62)[..n * 2], &[n, 2]);
    let x = array::<f64>(stream, &a_real, &[n, n]).solve(&b).unwrap();
    assert_eq!((x.dtype(), x.shape()), (cuda_core::DType::C128, &[n, 2][..]));
    let r = complex_residual(&real_as_complex(&a_real), &complex_host(&x), &complex_host(&b), n, 2);
    assert!(r <= bound(eps64), "f64 a, c64 b: {r}");
    // A complex64 matrix with an f32 vector: complex64.
    let a = complex_array::<Complex<f32>>(stream, &complex_matrices(1, n, 63), &[n, n]);
    let b_real = common::products::values(n, 5);
    let b = array::<f32>(stream, &b_real, &[n]);
    let x = a.solve(&b).unwrap();
    assert_eq!(x.dtype(), cuda_core::DType::C64);
    let b_used = real_as_complex(&host(&b));
    let r = complex_residual(&complex_host(&a), &complex_host(&x), &b_used, n, 1);
    assert!(r <= bound(eps32), "c64 a, f32 b: {r}");
    // A complex128 stack (batched LU) with one f64 vector broadcast over it.
    let a_stack = complex_matrices(3, n, 64);
    let a = complex_array::<Complex<f64>>(stream, &a_stack, &[3, n, n]);
    let b = array::<f64>(stream, &b_real, &[n]);
    let x = complex_host(&a.solve(&b).unwrap());
    for i in 0..3 {
        let a_i = &a_stack[i * n * n..(i + 1) * n * n];
        let r = complex_residual(a_i, &x[i * n..(i + 1) * n], &real_as_complex(&b_real), n, 1);
        assert!(r <= bound(eps64), "c128 stack, f64 b [{i}]: {r}");
    }
    // f32 with int16 stays f32 (NumPy's promotion), int32 with f32 is f64.
    let a32 = array::<f32>(stream, &a_real, &[n, n]);
    let b16: Vec<i16> = (0..n as i16).map(|i| 3 - i).collect();
    let b16 = DeviceArray::from_slice(stream, &b16).unwrap();
    let x = a32.solve(&b16).unwrap();
    assert_eq!(x.dtype(), cuda_core::DType::F32);
    let b_used: Vec<f64> = (0..n).map(|i| 3.0 - i as f64).collect();
    let r = complex_residual(
        &real_as_complex(&host(&a32)),
        &real_as_complex(&host(&x)),
        &real_as_complex(&b_used),
        n,
        1,
    );
    assert!(r <= bound(eps32), "f32 a, i16 b: {r}");
    let ints = DeviceArray::from_slice(stream, &[1i32, -2, 3, 0, 5, 1]).unwrap();
    assert_eq!(a32.solve(&ints).unwrap().dtype(), cuda_core::DType::F64);
}

/// `count` indefinite Hermitian matrices `B + B^H`.
fn hermitian_indefinite(count: usize, n: usize, seed: u64) -> Vec<Complex<f64>> {
    let b = complex_matrices(count, n, seed);
    let b_h = adjoint(&b, n, n);
    b.iter().zip(&b_h).map(|(x, y)| x + y).collect()
}

fn hermitian_pinv_and_rank<C: HostComplex>(stream: &Stream) {
    let (eps, dtype) = (C::EPS, C::DTYPE);
    // Full rank, one matrix (syevd) and a stack (Jacobi): the pseudo-inverse is the inverse.
    for count in [1, 4] {
        let n = 5;
        let h = hermitian_indefinite(count, n, 81);
        let a = complex_array::<C>(stream, &h, &[count, n, n]);
        let pinv = complex_host(&a.pinv_hermitian(1e-15).unwrap());
        let inverse = complex_host(&a.inv().unwrap());
        let error = complex_relative(&pinv, &inverse);
        assert!(error <= 1e3 * eps, "{dtype} pinv_hermitian {count}x{n}: {error}");
        let ranks = a.matrix_rank_hermitian(None, None).unwrap().to_vec().unwrap();
        assert_eq!(ranks, vec![n as i64; count], "{dtype} full rank");
    }
    // Rank 2, indefinite: u u^H - w w^H. The Penrose conditions, the SVD pseudo-inverse, rank 2.
    let n = 6;
    let vectors = complex_matrices(1, n, 82);
    let (u, w) = (&vectors[..n], &vectors[n..2 * n]);
    let h: Vec<Complex<f64>> = (0..n * n)
        .map(|p| u[p / n] * u[p % n].conj() - w[p / n] * w[p % n].conj())
        .collect();
    let a = complex_array::<C>(stream, &h, &[n, n]);
    let h = complex_host(&a);
    // The copy in C rounds H, so its four zero eigenvalues become O(eps ‖H‖): cut them at 1e-3.
    let p = complex_host(&a.pinv_hermitian(1e-3).unwrap());
    let hph = complex_matmul(&complex_matmul(&h, &p, n, n, n), &h, n, n, n);
    assert!(complex_relative(&hph, &h) <= 1e3 * eps, "{dtype} H P H = H");
    let php = complex_matmul(&complex_matmul(&p, &h, n, n, n), &p, n, n, n);
    assert!(complex_relative(&php, &p) <= 1e3 * eps, "{dtype} P H P = P");
    let svd_pinv = complex_host(&a.pinv(1e-3).unwrap());
    assert!(
        complex_relative(&p, &svd_pinv) <= 1e3 * eps,
        "{dtype} against the SVD's"
    );
    assert_eq!(
        a.matrix_rank_hermitian(None, Some(1e-3)).unwrap().item().unwrap(),
        2,
        "{dtype} rank"
    );
    if dtype == cuda_core::DType::C128 {
        // In f64 the rounding is far below 1e-10 * max |w|; eigvalsh and svdvals agree.
        assert_eq!(a.matrix_rank_hermitian(None, Some(1e-10)).unwrap().item().unwrap(), 2);
        assert_eq!(a.matrix_rank_with(None, Some(1e-10)).unwrap().item().unwrap(), 2);
    }
    assert_eq!(a.matrix_rank_hermitian(Some(1e9), None).unwrap().item().unwrap(), 0);
}

#[test]
fn hermitian_pinv_and_matrix_rank_follow_eigh() {
    let Some(stream) = common::stream_or_skip("hermitian_pinv_and_matrix_rank_follow_eigh") else {
        return;
    };
    hermitian_pinv_and_rank::<Complex<f32>>(&stream);
    hermitian_pinv_and_rank::<Complex<f64>>(&stream);
    // A real symmetric indefinite matrix: the same through the real eigen-solver.
    let n = 5;
    let m = matrices(1, n, 83);
    let symmetric: Vec<f64> = (0..n * n).map(|p| m[p] + m[(p % n) * n + p / n]).collect();
    let a = array::<f64>(&stream, &symmetric, &[n, n]);
    let (pinv, inverse) = (host(&a.pinv_hermitian(1e-15).unwrap()), host(&a.inv().unwrap()));
    let difference: Vec<f64> = pinv.iter().zip(&inverse).map(|(p, q)| p - q).collect();
    assert!(
        frobenius(&difference) <= 1e3 * f64::EPSILON * frobenius(&inverse),
        "f64 pinv_hermitian"
    );
    assert_eq!(a.matrix_rank_hermitian(None, None).unwrap().item().unwrap(), n as i64);
}
