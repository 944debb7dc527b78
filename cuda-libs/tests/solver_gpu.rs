//! cuSOLVER and cuBLAS's batched LU on the GPU, checked by residuals on the host: `A x = b`,
//! orthogonality of `Q`, `U`, `V`, reconstruction of `A`, eigenvalues against a host Jacobi
//! solver; singular and indefinite input, and one bad matrix inside a batch, as typed errors.
//! Each test prints `skipped:` without a GPU or without cuSOLVER, and fails instead under
//! `CUDA_REQUIRE_GPU=1`. Matrices are column-major, as the solver module takes them.

use cuda_driver::{DeviceBuffer, DeviceCopy, DeviceMemoryMut, Stream};
use cuda_libs::solver::{Fill, Matrix, Solver, SolverScalar, SvdVectors};
use cuda_libs::{Error, LinalgFailure};
use num_complex::Complex;

mod common;

/// A stream on device 0 with cuSOLVER loaded, or `None` after printing why the test is skipped (a
/// panic under `CUDA_REQUIRE_GPU=1`).
fn stream_or_skip(test: &str) -> Option<Stream> {
    common::stream_with(test, "cuSOLVER", cuda_libs::solver::load)
}

trait Real: SolverScalar + DeviceCopy + Default + std::fmt::Debug {
    const EPS: f64;
    fn from_f64(value: f64) -> Self;
    fn to_f64(self) -> f64;
}

impl Real for f32 {
    const EPS: f64 = f32::EPSILON as f64;
    fn from_f64(value: f64) -> Self {
        value as f32
    }
    fn to_f64(self) -> f64 {
        f64::from(self)
    }
}

impl Real for f64 {
    const EPS: f64 = f64::EPSILON;
    fn from_f64(value: f64) -> Self {
        value
    }
    fn to_f64(self) -> f64 {
        self
    }
}

fn values(count: usize, seed: u64) -> Vec<f64> {
    let mut state = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    (0..count)
        .map(|_| {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((state >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0
        })
        .collect()
}

/// Column-major `rows x cols` product of `a` (`rows x inner`) and `b` (`inner x cols`).
fn matmul(a: &[f64], b: &[f64], rows: usize, inner: usize, cols: usize) -> Vec<f64> {
    let mut c = vec![0.0; rows * cols];
    for j in 0..cols {
        for k in 0..inner {
            for i in 0..rows {
                c[i + j * rows] += a[i + k * rows] * b[k + j * inner];
            }
        }
    }
    c
}

fn transpose(a: &[f64], rows: usize, cols: usize) -> Vec<f64> {
    let mut t = vec![0.0; rows * cols];
    for j in 0..cols {
        for i in 0..rows {
            t[j + i * cols] = a[i + j * rows];
        }
    }
    t
}

fn norm(a: &[f64]) -> f64 {
    a.iter().map(|x| x * x).sum::<f64>().sqrt()
}

fn diff(a: &[f64], b: &[f64]) -> f64 {
    norm(&a.iter().zip(b).map(|(x, y)| x - y).collect::<Vec<_>>())
}

/// A symmetric positive definite `n x n` matrix: `M M^T + n I`.
fn spd(n: usize, seed: u64) -> Vec<f64> {
    let m = values(n * n, seed);
    let mut a = matmul(&m, &transpose(&m, n, n), n, n, n);
    for i in 0..n {
        a[i + i * n] += n as f64;
    }
    a
}

fn symmetric(n: usize, seed: u64) -> Vec<f64> {
    let m = values(n * n, seed);
    let t = transpose(&m, n, n);
    m.iter().zip(&t).map(|(x, y)| x + y).collect()
}

/// Eigenvalues of a symmetric matrix by cyclic Jacobi rotations on the host, ascending.
fn host_eigenvalues(a: &[f64], n: usize) -> Vec<f64> {
    let mut a = a.to_vec();
    for _sweep in 0..100 {
        let off: f64 = (0..n)
            .flat_map(|j| (0..n).filter(move |&i| i != j).map(move |i| (i, j)))
            .map(|(i, j)| a[i + j * n].powi(2))
            .sum();
        if off < 1e-30 {
            break;
        }
        for p in 0..n {
            for q in p + 1..n {
                let apq = a[p + q * n];
                if apq.abs() < 1e-300 {
                    continue;
                }
                let theta = (a[q + q * n] - a[p + p * n]) / (2.0 * apq);
                let t = theta.signum() / (theta.abs() + (theta * theta + 1.0).sqrt());
                let t = if theta == 0.0 { 1.0 } else { t };
                let c = 1.0 / (t * t + 1.0).sqrt();
                let s = t * c;
                for k in 0..n {
                    let (akp, akq) = (a[k + p * n], a[k + q * n]);
                    a[k + p * n] = c * akp - s * akq;
                    a[k + q * n] = s * akp + c * akq;
                }
                for k in 0..n {
                    let (apk, aqk) = (a[p + k * n], a[q + k * n]);
                    a[p + k * n] = c * apk - s * aqk;
                    a[q + k * n] = s * apk + c * aqk;
                }
            }
        }
    }
    let mut eig: Vec<f64> = (0..n).map(|i| a[i + i * n]).collect();
    eig.sort_by(f64::total_cmp);
    eig
}

fn upload<T: Real>(stream: &Stream, data: &[f64]) -> DeviceBuffer<T> {
    let host: Vec<T> = data.iter().map(|&v| T::from_f64(v)).collect();
    DeviceBuffer::from_slice(stream.context(), &host).unwrap()
}

fn download<T: Real>(buffer: &DeviceBuffer<T>) -> Vec<f64> {
    buffer.to_vec().unwrap().into_iter().map(T::to_f64).collect()
}

fn workspace(stream: &Stream, bytes: usize) -> DeviceBuffer<u8> {
    DeviceBuffer::zeroed(stream.context(), bytes.max(1)).unwrap()
}

/// The residual `‖A x - b‖ / (‖A‖ ‖x‖)` of a computed solution.
fn residual(a: &[f64], x: &[f64], b: &[f64], n: usize, nrhs: usize) -> f64 {
    diff(&matmul(a, x, n, n, nrhs), b) / (norm(a) * norm(x))
}

fn cholesky_and_lu_solve<T: Real>(stream: &Stream) {
    let mut solver = Solver::new(stream).unwrap();
    let (n, nrhs) = (40, 3);
    let shape = Matrix::square(n);
    let b_shape = Matrix::new(n, nrhs);
    let a_host = spd(n, 1);
    let b_host = values(n * nrhs, 2);
    for fill in [Fill::Lower, Fill::Upper] {
        let mut a = upload::<T>(stream, &a_host);
        let mut b = upload::<T>(stream, &b_host);
        let mut ws = workspace(stream, solver.potrf_workspace::<T>(fill, shape).unwrap());
        solver.potrf::<T>(fill, shape, &mut a, Some(&mut ws)).unwrap();
        solver.potrs::<T>(fill, shape, &a, b_shape, &mut b).unwrap();
        solver.check_info().unwrap();
        let r = residual(&a_host, &download(&b), &b_host, n, nrhs);
        assert!(r <= 50.0 * T::EPS, "potrs {fill:?}: residual {r:e}");
    }
    // LU of a general matrix.
    let a_host = values(n * n, 3);
    let mut a = upload::<T>(stream, &a_host);
    let mut b = upload::<T>(stream, &b_host);
    let mut pivots = DeviceBuffer::<i64>::zeroed(stream.context(), n).unwrap();
    let mut ws = workspace(stream, solver.getrf_workspace::<T>(shape).unwrap());
    solver.getrf::<T>(shape, &mut a, &mut pivots, Some(&mut ws)).unwrap();
    solver.getrs::<T>(false, shape, &a, &pivots, b_shape, &mut b).unwrap();
    solver.check_info().unwrap();
    let r = residual(&a_host, &download(&b), &b_host, n, nrhs);
    assert!(r <= 100.0 * T::EPS, "getrs: residual {r:e}");
    // A^T x = b from the same factors.
    let mut b = upload::<T>(stream, &b_host);
    solver.getrs::<T>(true, shape, &a, &pivots, b_shape, &mut b).unwrap();
    solver.check_info().unwrap();
    let r = residual(&transpose(&a_host, n, n), &download(&b), &b_host, n, nrhs);
    assert!(r <= 100.0 * T::EPS, "getrs transposed: residual {r:e}");
}

#[test]
fn cholesky_and_lu_solves_have_small_residuals() {
    let Some(stream) = stream_or_skip("cholesky_and_lu_solves_have_small_residuals") else {
        return;
    };
    cholesky_and_lu_solve::<f32>(&stream);
    cholesky_and_lu_solve::<f64>(&stream);
}

#[test]
fn singular_and_indefinite_matrices_are_typed_errors() {
    let Some(stream) = stream_or_skip("singular_and_indefinite_matrices_are_typed_errors") else {
        return;
    };
    let mut solver = Solver::new(&stream).unwrap();
    let n = 8;
    let shape = Matrix::square(n);
    // Indefinite: the identity with a -1 in position 3 (leading minor of order 4 fails).
    let mut indefinite = vec![0.0; n * n];
    for i in 0..n {
        indefinite[i + i * n] = if i == 3 { -1.0 } else { 1.0 };
    }
    let mut a = upload::<f64>(&stream, &indefinite);
    let mut ws = workspace(&stream, solver.potrf_workspace::<f64>(Fill::Lower, shape).unwrap());
    solver.potrf::<f64>(Fill::Lower, shape, &mut a, Some(&mut ws)).unwrap();
    assert_eq!(solver.pending_infos(), 1);
    match solver.check_info() {
        Err(Error::Linalg {
            routine,
            index,
            failure,
        }) => {
            assert_eq!((routine, index), ("cusolverDnXpotrf", 0));
            assert_eq!(failure, LinalgFailure::NotPositiveDefinite { order: 4 });
        }
        other => panic!("expected NotPositiveDefinite, got {other:?}"),
    }
    assert_eq!(solver.pending_infos(), 0);
    // Singular: column 5 is zero.
    let mut singular = values(n * n, 9);
    for i in 0..n {
        singular[i + 5 * n] = 0.0;
    }
    let mut a = upload::<f64>(&stream, &singular);
    let mut pivots = DeviceBuffer::<i64>::zeroed(stream.context(), n).unwrap();
    let mut ws = workspace(&stream, solver.getrf_workspace::<f64>(shape).unwrap());
    solver.getrf::<f64>(shape, &mut a, &mut pivots, Some(&mut ws)).unwrap();
    match solver.check_info() {
        Err(Error::Linalg {
            failure: LinalgFailure::Singular { pivot },
            ..
        }) => assert!((1..=n as i64).contains(&pivot), "{pivot}"),
        other => panic!("expected Singular, got {other:?}"),
    }
    // Host checks come first: a wrong right-hand side, a non-square matrix.
    let mut b = DeviceBuffer::<f64>::zeroed(stream.context(), 7).unwrap();
    let refused = solver.getrs::<f64>(false, shape, &a, &pivots, Matrix::new(7, 1), &mut b);
    assert!(matches!(refused, Err(Error::InvalidValue(m)) if m.contains("8 equations")));
    let refused = solver.potrf::<f64>(Fill::Lower, Matrix::new(8, 7), &mut a, None);
    assert!(matches!(refused, Err(Error::InvalidValue(m)) if m.contains("square")));
    let short = solver.potrf::<f64>(
        Fill::Lower,
        Matrix::square(9),
        &mut a,
        Some(&mut ws as &mut dyn DeviceMemoryMut),
    );
    assert!(matches!(short, Err(Error::InvalidValue(_))), "{short:?}");
    assert_eq!(solver.pending_infos(), 0, "refused calls queue nothing");
}

fn qr_svd_and_eigen<T: Real>(stream: &Stream) {
    let mut solver = Solver::new(stream).unwrap();
    let (m, n) = (30, 20);
    let shape = Matrix::new(m, n);
    let a_host = values(m * n, 11);
    let tolerance = 200.0 * T::EPS;

    // QR: Q^T Q = I and Q R = A.
    let mut a = upload::<T>(stream, &a_host);
    let mut tau = DeviceBuffer::<T>::zeroed(stream.context(), n).unwrap();
    let mut ws = workspace(stream, solver.geqrf_workspace::<T>(shape).unwrap());
    solver.geqrf::<T>(shape, &mut a, &mut tau, Some(&mut ws)).unwrap();
    solver.check_info().unwrap();
    let factored = download(&a);
    let mut r = vec![0.0; n * n];
    for j in 0..n {
        for i in 0..=j {
            r[i + j * n] = factored[i + j * m];
        }
    }
    let mut ws = workspace(stream, solver.orgqr_workspace::<T>(shape, n).unwrap());
    solver.orgqr::<T>(shape, n, &mut a, &tau, Some(&mut ws)).unwrap();
    solver.check_info().unwrap();
    let q = download(&a);
    let qtq = matmul(&transpose(&q, m, n), &q, n, m, n);
    let identity: Vec<f64> = (0..n * n).map(|k| if k % (n + 1) == 0 { 1.0 } else { 0.0 }).collect();
    assert!(diff(&qtq, &identity) <= tolerance * n as f64, "Q^T Q");
    assert!(
        diff(&matmul(&q, &r, m, n, n), &a_host) / norm(&a_host) <= tolerance,
        "Q R"
    );

    // SVD: U S V^T = A, U and V orthogonal, values descending.
    let mut a = upload::<T>(stream, &a_host);
    let mut s = DeviceBuffer::<T>::zeroed(stream.context(), n).unwrap();
    let mut u = DeviceBuffer::<T>::zeroed(stream.context(), m * n).unwrap();
    let mut vt = DeviceBuffer::<T>::zeroed(stream.context(), n * n).unwrap();
    let mut ws = workspace(stream, solver.gesvd_workspace::<T>(SvdVectors::Thin, shape).unwrap());
    solver
        .gesvd::<T>(
            SvdVectors::Thin,
            shape,
            &mut a,
            &mut s,
            Some(&mut u),
            Some(&mut vt),
            Some(&mut ws),
        )
        .unwrap();
    solver.check_info().unwrap();
    let (s, u, vt) = (download(&s), download(&u), download(&vt));
    assert!(s.windows(2).all(|w| w[0] >= w[1]), "descending: {s:?}");
    let mut us = u.clone();
    for j in 0..n {
        for i in 0..m {
            us[i + j * m] *= s[j];
        }
    }
    assert!(
        diff(&matmul(&us, &vt, m, n, n), &a_host) / norm(&a_host) <= tolerance,
        "U S V^T"
    );
    assert!(
        diff(&matmul(&transpose(&u, m, n), &u, n, m, n), &identity) <= tolerance * n as f64,
        "U^T U"
    );
    assert!(
        diff(&matmul(&vt, &transpose(&vt, n, n), n, n, n), &identity) <= tolerance * n as f64,
        "V^T V"
    );

    // Jacobi SVD of the wide A^T (n x m: gesvdj takes any shape), economic: A^T = U S V^T with
    // U n x n and V m x n, so A = V S U^T.
    let a_t = transpose(&a_host, m, n);
    let mut a = upload::<T>(stream, &a_t);
    let wide = Matrix::new(n, m);
    let mut s = DeviceBuffer::<T>::zeroed(stream.context(), n).unwrap();
    let mut u = DeviceBuffer::<T>::zeroed(stream.context(), n * n).unwrap();
    let mut v = DeviceBuffer::<T>::zeroed(stream.context(), m * n).unwrap();
    let mut ws = workspace(stream, solver.gesvdj_workspace::<T>(SvdVectors::Thin, wide).unwrap());
    solver
        .gesvdj::<T>(
            SvdVectors::Thin,
            wide,
            &mut a,
            &mut s,
            Some(&mut u),
            Some(&mut v),
            Some(&mut ws),
        )
        .unwrap();
    solver.check_info().unwrap();
    let (s, u, v) = (download(&s), download(&u), download(&v));
    assert!(s.windows(2).all(|w| w[0] >= w[1]), "gesvdj descending: {s:?}");
    let mut vs = v.clone();
    for j in 0..n {
        for i in 0..m {
            vs[i + j * m] *= s[j];
        }
    }
    assert!(
        diff(&matmul(&vs, &transpose(&u, n, n), m, n, n), &a_host) / norm(&a_host) <= tolerance,
        "gesvdj: V S U^T"
    );
    assert!(
        diff(&matmul(&transpose(&v, m, n), &v, n, m, n), &identity) <= tolerance * n as f64,
        "gesvdj: V^T V"
    );
    // Values only: the same singular values (cuSOLVER is given scratch for U and V).
    let mut a = upload::<T>(stream, &a_t);
    let mut values_only = DeviceBuffer::<T>::zeroed(stream.context(), n).unwrap();
    let mut ws = workspace(stream, solver.gesvdj_workspace::<T>(SvdVectors::None, wide).unwrap());
    solver
        .gesvdj::<T>(
            SvdVectors::None,
            wide,
            &mut a,
            &mut values_only,
            None,
            None,
            Some(&mut ws),
        )
        .unwrap();
    solver.check_info().unwrap();
    assert!(
        diff(&download(&values_only), &s) <= tolerance * s[0],
        "gesvdj values only"
    );

    // Symmetric eigenvalues: A V = V diag(w), against host Jacobi.
    let k = 16;
    let sym = symmetric(k, 13);
    let mut a = upload::<T>(stream, &sym);
    let mut w = DeviceBuffer::<T>::zeroed(stream.context(), k).unwrap();
    let square = Matrix::square(k);
    let mut ws = workspace(stream, solver.syevd_workspace::<T>(true, Fill::Upper, square).unwrap());
    solver
        .syevd::<T>(true, Fill::Upper, square, &mut a, &mut w, Some(&mut ws))
        .unwrap();
    solver.check_info().unwrap();
    let (v, w) = (download(&a), download(&w));
    let want = host_eigenvalues(&sym, k);
    let scale = want.iter().fold(1.0f64, |m, x| m.max(x.abs()));
    for (got, want) in w.iter().zip(&want) {
        assert!((got - want).abs() <= tolerance * scale, "eigenvalue {got} vs {want}");
    }
    let mut vw = v.clone();
    for j in 0..k {
        for i in 0..k {
            vw[i + j * k] *= w[j];
        }
    }
    assert!(
        diff(&matmul(&sym, &v, k, k, k), &vw) / norm(&sym) <= tolerance,
        "A V = V W"
    );
}

#[test]
fn qr_svd_and_eigenvalues_reconstruct_and_are_orthogonal() {
    let Some(stream) = stream_or_skip("qr_svd_and_eigenvalues_reconstruct_and_are_orthogonal") else {
        return;
    };
    qr_svd_and_eigen::<f32>(&stream);
    qr_svd_and_eigen::<f64>(&stream);
}

fn batched<T: Real>(stream: &Stream) {
    let mut solver = Solver::new(stream).unwrap();
    let tolerance = 200.0 * T::EPS;
    // Jacobi eigenvalues of 5 symmetric 8 x 8 matrices.
    let (n, count) = (8, 5);
    let shape = Matrix::square(n);
    let matrices: Vec<Vec<f64>> = (0..count).map(|i| symmetric(n, 20 + i as u64)).collect();
    let mut a = upload::<T>(stream, &matrices.concat());
    let mut w = DeviceBuffer::<T>::zeroed(stream.context(), n * count).unwrap();
    let bytes = solver
        .syevj_batched_workspace::<T>(false, Fill::Lower, shape, count)
        .unwrap();
    let mut ws = workspace(stream, bytes);
    solver
        .syevj_batched::<T>(false, Fill::Lower, shape, count, &mut a, &mut w, Some(&mut ws))
        .unwrap();
    solver.check_info().unwrap();
    let w = download(&w);
    for (i, matrix) in matrices.iter().enumerate() {
        let want = host_eigenvalues(matrix, n);
        for (got, want) in w[i * n..(i + 1) * n].iter().zip(&want) {
            assert!((got - want).abs() <= tolerance * 10.0, "matrix {i}: {got} vs {want}");
        }
    }
    // Jacobi SVDs of 4 matrices of 6 x 5: U S V^T = A.
    let (rows, cols, count) = (6, 5, 4);
    let shape = Matrix::new(rows, cols);
    let a_host = values(rows * cols * count, 21);
    let mut a = upload::<T>(stream, &a_host);
    let mut s = DeviceBuffer::<T>::zeroed(stream.context(), cols * count).unwrap();
    let mut u = DeviceBuffer::<T>::zeroed(stream.context(), rows * rows * count).unwrap();
    let mut v = DeviceBuffer::<T>::zeroed(stream.context(), cols * cols * count).unwrap();
    let mut ws = workspace(
        stream,
        solver.gesvdj_batched_workspace::<T>(true, shape, count).unwrap(),
    );
    solver
        .gesvdj_batched::<T>(shape, count, &mut a, &mut s, Some(&mut u), Some(&mut v), Some(&mut ws))
        .unwrap();
    solver.check_info().unwrap();
    let (s, u, v) = (download(&s), download(&u), download(&v));
    for i in 0..count {
        let original = &a_host[i * rows * cols..(i + 1) * rows * cols];
        let ui = &u[i * rows * rows..(i + 1) * rows * rows];
        let vi = &v[i * cols * cols..(i + 1) * cols * cols];
        let mut us = vec![0.0; rows * cols];
        for j in 0..cols {
            for r in 0..rows {
                us[r + j * rows] = ui[r + j * rows] * s[i * cols + j];
            }
        }
        let rebuilt = matmul(&us, &transpose(vi, cols, cols), rows, cols, cols);
        assert!(
            diff(&rebuilt, original) / norm(original) <= tolerance * 10.0,
            "gesvdj matrix {i}"
        );
    }
    // Batched Cholesky with matrix 2 indefinite: the error names it.
    let (n, count) = (16, 4);
    let shape = Matrix::square(n);
    let mut matrices: Vec<Vec<f64>> = (0..count).map(|i| spd(n, 30 + i as u64)).collect();
    matrices[2][0] = -1.0;
    let mut a = upload::<T>(stream, &matrices.concat());
    solver.potrf_batched::<T>(Fill::Lower, shape, count, &mut a).unwrap();
    match solver.check_info() {
        Err(Error::Linalg { index, failure, .. }) => {
            assert_eq!(index, 2);
            assert_eq!(failure, LinalgFailure::NotPositiveDefinite { order: 1 });
        }
        other => panic!("expected matrix 2 not positive definite, got {other:?}"),
    }
    // Batched LU: solve and invert 6 matrices of 12 x 12.
    let (n, count) = (12, 6);
    let shape = Matrix::square(n);
    let a_host: Vec<f64> = (0..count).flat_map(|i| spd(n, 40 + i as u64)).collect();
    let b_host = values(n * 2 * count, 41);
    let mut a = upload::<T>(stream, &a_host);
    let mut pivots = DeviceBuffer::<i32>::zeroed(stream.context(), n * count).unwrap();
    solver.getrf_batched::<T>(shape, count, &mut a, &mut pivots).unwrap();
    let mut b = upload::<T>(stream, &b_host);
    solver
        .getrs_batched::<T>(false, shape, count, &a, &pivots, Matrix::new(n, 2), &mut b)
        .unwrap();
    let mut inverse = DeviceBuffer::<T>::zeroed(stream.context(), n * n * count).unwrap();
    solver
        .getri_batched::<T>(shape, count, &a, &pivots, shape, &mut inverse)
        .unwrap();
    solver.check_info().unwrap();
    let (x, inverse) = (download(&b), download(&inverse));
    let identity: Vec<f64> = (0..n * n).map(|k| if k % (n + 1) == 0 { 1.0 } else { 0.0 }).collect();
    for i in 0..count {
        let ai = &a_host[i * n * n..(i + 1) * n * n];
        let r = residual(
            ai,
            &x[i * 2 * n..(i + 1) * 2 * n],
            &b_host[i * 2 * n..(i + 1) * 2 * n],
            n,
            2,
        );
        assert!(r <= tolerance, "getrs_batched matrix {i}: residual {r:e}");
        let product = matmul(ai, &inverse[i * n * n..(i + 1) * n * n], n, n, n);
        assert!(
            diff(&product, &identity) <= tolerance * n as f64 * 10.0,
            "getri_batched matrix {i}"
        );
    }
    // Matrix 1 singular (a zero column): named by getrfBatched.
    let mut singular = a_host.clone();
    for r in 0..n {
        singular[n * n + r + 3 * n] = 0.0;
    }
    let mut a = upload::<T>(stream, &singular);
    solver.getrf_batched::<T>(shape, count, &mut a, &mut pivots).unwrap();
    match solver.check_info() {
        Err(Error::Linalg {
            index,
            failure: LinalgFailure::Singular { .. },
            ..
        }) => assert_eq!(index, 1),
        other => panic!("expected matrix 1 singular, got {other:?}"),
    }
}

#[test]
fn batched_routines_match_the_host_and_name_the_bad_matrix() {
    let Some(stream) = stream_or_skip("batched_routines_match_the_host_and_name_the_bad_matrix") else {
        return;
    };
    batched::<f32>(&stream);
    batched::<f64>(&stream);
}

#[test]
fn many_routines_are_read_back_at_once() {
    let Some(stream) = stream_or_skip("many_routines_are_read_back_at_once") else {
        return;
    };
    let mut solver = Solver::new(&stream).unwrap();
    let n = 4;
    let shape = Matrix::square(n);
    let mut a = upload::<f64>(&stream, &spd(n, 50));
    let mut ws = workspace(&stream, solver.potrf_workspace::<f64>(Fill::Lower, shape).unwrap());
    // More routines than the first info buffer holds (64 slots): it is read back and grown.
    for _ in 0..100 {
        let mut copy = upload::<f64>(&stream, &spd(n, 50));
        solver
            .potrf::<f64>(Fill::Lower, shape, &mut copy, Some(&mut ws))
            .unwrap();
    }
    solver.potrf::<f64>(Fill::Lower, shape, &mut a, Some(&mut ws)).unwrap();
    assert!(solver.pending_infos() >= 1);
    solver.check_info().unwrap();
    assert_eq!(solver.pending_infos(), 0);
    // A solver moves to another thread.
    std::thread::spawn(move || {
        solver.check_info().unwrap();
        drop(solver);
    })
    .join()
    .unwrap();
}

/// The complex element types, through `Complex<f64>` on the host.
trait ComplexScalar: SolverScalar + DeviceCopy + std::fmt::Debug {
    const EPS: f64;
    fn from_c128(z: Complex<f64>) -> Self;
    fn to_c128(self) -> Complex<f64>;
}

impl ComplexScalar for Complex<f32> {
    const EPS: f64 = f32::EPSILON as f64;
    fn from_c128(z: Complex<f64>) -> Self {
        Complex::new(z.re as f32, z.im as f32)
    }
    fn to_c128(self) -> Complex<f64> {
        Complex::new(f64::from(self.re), f64::from(self.im))
    }
}

impl ComplexScalar for Complex<f64> {
    const EPS: f64 = f64::EPSILON;
    fn from_c128(z: Complex<f64>) -> Self {
        z
    }
    fn to_c128(self) -> Complex<f64> {
        self
    }
}

fn complex_values(count: usize, seed: u64) -> Vec<Complex<f64>> {
    let (re, im) = (values(count, seed), values(count, seed + 1000));
    re.into_iter().zip(im).map(|(r, i)| Complex::new(r, i)).collect()
}

/// Column-major complex product, `rows x inner` by `inner x cols`.
fn complex_matmul(a: &[Complex<f64>], b: &[Complex<f64>], rows: usize, inner: usize, cols: usize) -> Vec<Complex<f64>> {
    let mut c = vec![Complex::new(0.0, 0.0); rows * cols];
    for j in 0..cols {
        for k in 0..inner {
            for i in 0..rows {
                c[i + j * rows] += a[i + k * rows] * b[k + j * inner];
            }
        }
    }
    c
}

fn complex_norm(a: &[Complex<f64>]) -> f64 {
    a.iter().map(|z| z.norm_sqr()).sum::<f64>().sqrt()
}

/// `|A V - V diag(w)| / |A|` for the `n x n` `a`, eigenvectors `v` (columns) and eigenvalues `w`.
fn eigen_residual<W: Copy>(a: &[Complex<f64>], v: &[Complex<f64>], w: &[W], n: usize) -> f64
where
    Complex<f64>: std::ops::Mul<W, Output = Complex<f64>>,
{
    let av = complex_matmul(a, v, n, n, n);
    let vw: Vec<_> = (0..n * n).map(|e| v[e] * w[e / n]).collect();
    complex_diff(&av, &vw) / complex_norm(a)
}

fn complex_diff(a: &[Complex<f64>], b: &[Complex<f64>]) -> f64 {
    complex_norm(&a.iter().zip(b).map(|(x, y)| x - y).collect::<Vec<_>>())
}

/// A Hermitian positive definite `n x n` matrix: `M M^H + n I`.
fn hermitian_positive(n: usize, seed: u64) -> Vec<Complex<f64>> {
    let m = complex_values(n * n, seed);
    let adjoint: Vec<_> = (0..n * n).map(|e| m[(e / n) + (e % n) * n].conj()).collect();
    let mut a = complex_matmul(&m, &adjoint, n, n, n);
    for i in 0..n {
        a[i + i * n] += n as f64;
    }
    a
}

fn complex_upload<C: ComplexScalar>(stream: &Stream, data: &[Complex<f64>]) -> DeviceBuffer<C> {
    let host: Vec<C> = data.iter().map(|&z| C::from_c128(z)).collect();
    DeviceBuffer::from_slice(stream.context(), &host).unwrap()
}

fn complex_download<C: ComplexScalar>(buffer: &DeviceBuffer<C>) -> Vec<Complex<f64>> {
    buffer.to_vec().unwrap().into_iter().map(C::to_c128).collect()
}

fn complex_routines<C: ComplexScalar>(stream: &Stream)
where
    C::Real: Real,
{
    let mut solver = Solver::new(stream).unwrap();
    let (n, nrhs) = (24, 2);
    let (shape, b_shape) = (Matrix::square(n), Matrix::new(n, nrhs));
    let b_host = complex_values(n * nrhs, 61);
    let residual = |a: &[Complex<f64>], x: &[Complex<f64>]| {
        complex_diff(&complex_matmul(a, x, n, n, nrhs), &b_host) / (complex_norm(a) * complex_norm(x))
    };
    // Cholesky of a Hermitian matrix (both triangles) and LU of a general one.
    let h = hermitian_positive(n, 62);
    for fill in [Fill::Lower, Fill::Upper] {
        let (mut a, mut b) = (complex_upload::<C>(stream, &h), complex_upload::<C>(stream, &b_host));
        let mut ws = workspace(stream, solver.potrf_workspace::<C>(fill, shape).unwrap());
        solver.potrf::<C>(fill, shape, &mut a, Some(&mut ws)).unwrap();
        solver.potrs::<C>(fill, shape, &a, b_shape, &mut b).unwrap();
        solver.check_info().unwrap();
        let r = residual(&h, &complex_download(&b));
        assert!(r <= 50.0 * C::EPS, "complex potrs {fill:?}: {r:e}");
    }
    let general = complex_values(n * n, 63);
    let (mut a, mut b) = (
        complex_upload::<C>(stream, &general),
        complex_upload::<C>(stream, &b_host),
    );
    let mut pivots = DeviceBuffer::<i64>::zeroed(stream.context(), n).unwrap();
    let mut ws = workspace(stream, solver.getrf_workspace::<C>(shape).unwrap());
    solver.getrf::<C>(shape, &mut a, &mut pivots, Some(&mut ws)).unwrap();
    solver.getrs::<C>(false, shape, &a, &pivots, b_shape, &mut b).unwrap();
    solver.check_info().unwrap();
    let r = residual(&general, &complex_download(&b));
    assert!(r <= 100.0 * C::EPS, "complex getrs: {r:e}");

    // Hermitian eigenvalues: real, into a buffer of the real type; H V = V diag(w).
    let mut a = complex_upload::<C>(stream, &h);
    let mut w = DeviceBuffer::<C::Real>::zeroed(stream.context(), n).unwrap();
    let mut ws = workspace(stream, solver.syevd_workspace::<C>(true, Fill::Lower, shape).unwrap());
    solver
        .syevd::<C>(true, Fill::Lower, shape, &mut a, &mut w, Some(&mut ws))
        .unwrap();
    solver.check_info().unwrap();
    let (v, w) = (complex_download(&a), download(&w));
    let error = eigen_residual(&h, &v, &w, n);
    assert!(error <= 50.0 * n as f64 * C::EPS, "complex syevd: {error:e}");

    // The general eigen-solver: A V = V diag(w) with complex eigenvalues (where cuSOLVER has it).
    match solver.geev_workspace::<C>(true, shape) {
        Err(Error::Symbol(missing)) => println!("skipped: geev: {missing}"),
        bytes => {
            let mut ws = workspace(stream, bytes.unwrap());
            let mut a = complex_upload::<C>(stream, &general);
            let mut w = DeviceBuffer::<C>::zeroed(stream.context(), n).unwrap();
            let mut vr = DeviceBuffer::<C>::zeroed(stream.context(), n * n).unwrap();
            solver
                .geev::<C>(shape, &mut a, &mut w, Some(&mut vr), Some(&mut ws))
                .unwrap();
            solver.check_info().unwrap();
            let (w, v) = (complex_download(&w), complex_download(&vr));
            let error = eigen_residual(&general, &v, &w, n);
            assert!(error <= 100.0 * n as f64 * C::EPS, "complex geev: {error:e}");
        }
    }

    // One singular matrix inside a complex batch (cuBLAS's batched LU) names its index.
    let (count, n) = (3, 4);
    let mut batch = complex_values(count * n * n, 64);
    for r in 0..n {
        // Column-major: the last column of matrix 1 is zero, so its last pivot is exactly 0
        // (rows that are multiples of each other leave a rounded, nonzero pivot).
        batch[n * n + r + (n - 1) * n] = Complex::new(0.0, 0.0);
    }
    let mut a = complex_upload::<C>(stream, &batch);
    let mut pivots = DeviceBuffer::<i32>::zeroed(stream.context(), count * n).unwrap();
    solver
        .getrf_batched::<C>(Matrix::square(n), count, &mut a, &mut pivots)
        .unwrap();
    match solver.check_info() {
        Err(Error::Linalg {
            routine,
            index,
            failure: LinalgFailure::Singular { .. },
        }) => assert_eq!((routine, index), ("cublas<t>getrfBatched", 1)),
        other => panic!("a complex batch with a singular matrix: {other:?}"),
    }
}

#[test]
fn complex_routines_have_small_residuals_and_name_the_bad_matrix() {
    let Some(stream) = stream_or_skip("complex_routines_have_small_residuals_and_name_the_bad_matrix") else {
        return;
    };
    complex_routines::<Complex<f32>>(&stream);
    complex_routines::<Complex<f64>>(&stream);
}
