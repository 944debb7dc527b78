//! A least-squares polynomial fit, ported from this NumPy program:
//!
//! ```python
//! import numpy as np
//!
//! x = np.linspace(-1, 1, n)
//! y = 1.5 - 2.0 * x + 0.5 * x**2 + noise
//! A = np.stack([np.ones_like(x), x, x**2], axis=1)   # (n, 3) Vandermonde matrix
//! c_normal = np.linalg.solve(A.T @ A, A.T @ y)        # normal equations
//! c_pinv = np.linalg.pinv(A) @ y                      # pseudo-inverse (SVD)
//! L = np.linalg.cholesky(A.T @ A)                     # the Gram matrix is positive definite
//! print(np.linalg.cond(A), np.linalg.matrix_rank(A))
//! ```
//!
//! `solve` factors the Gram matrix with cuSOLVER's LU, `pinv` goes through the SVD, and
//! `cholesky` checks that the Gram matrix is positive definite; the two solutions must agree
//! with each other and with the coefficients the data were made from (to the noise), and a
//! singular system must come back as a typed error, else the example exits non-zero.
//!
//! `cargo run --release --example least_squares_fit`

use std::process::ExitCode;

use cuda_core::{Device, DeviceArray, Error};

/// Samples.
const N: usize = 4096;
/// The coefficients the data are made from.
const TRUE: [f64; 3] = [1.5, -2.0, 0.5];

fn main() -> ExitCode {
    match run() {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(error) => {
            eprintln!("least_squares_fit: {error}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> cuda_core::Result<bool> {
    let stream = Device::new(0)?.create_stream()?;
    // The design matrix and the noisy samples, built on the host with a fixed generator.
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut noise = move || {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        ((state >> 11) as f64 / (1u64 << 53) as f64 - 0.5) * 0.01
    };
    let mut design = Vec::with_capacity(N * 3);
    let mut samples = Vec::with_capacity(N);
    for i in 0..N {
        let x = -1.0 + 2.0 * i as f64 / (N - 1) as f64;
        design.extend([1.0, x, x * x]);
        samples.push(TRUE[0] + TRUE[1] * x + TRUE[2] * x * x + noise());
    }
    let a = DeviceArray::from_slice(&stream, &design)?.reshape([N, 3])?;
    let y = DeviceArray::from_slice(&stream, &samples)?;

    let a_t = a.transpose();
    let gram = a_t.matmul(&a)?;
    let c_normal = gram.solve(&a_t.matmul(&y)?)?.to_vec()?;
    let c_pinv = a.pinv(1e-15)?.matmul(&y)?.to_vec()?;
    let factor = gram.cholesky(false)?;
    let cond = a.cond()?.item()?;
    let rank = a.matrix_rank()?.item()?;
    println!("normal equations: {c_normal:.4?}");
    println!("pseudo-inverse:   {c_pinv:.4?}");
    println!(
        "cond(A) = {cond:.2}, rank(A) = {rank}, L[0, 0] = {:.4}",
        factor.to_vec()?[0]
    );

    let mut ok = rank == 3;
    for j in 0..3 {
        ok &= (c_normal[j] - c_pinv[j]).abs() < 1e-9 && (c_normal[j] - TRUE[j]).abs() < 1e-3;
    }
    // Two equal columns make the Gram matrix singular: solve says so instead of answering.
    let twice = DeviceArray::from_slice(&stream, &[1.0, 1.0, 1.0, 1.0])?.reshape([2, 2])?;
    match twice.solve(&DeviceArray::from_slice(&stream, &[1.0, 2.0])?) {
        Err(Error::Library(cuda_libs::Error::Linalg { routine, failure, .. })) => {
            println!("a singular system: {routine} reports that it {failure}");
        }
        other => {
            eprintln!("a singular system was not refused: {other:?}");
            ok = false;
        }
    }
    if !ok {
        eprintln!("least_squares_fit: the fits disagree with each other or with {TRUE:?}");
    }
    Ok(ok)
}
