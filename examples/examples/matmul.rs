//! NumPy's `a @ b` on the GPU through cuBLAS: a 512 x 256 by 256 x 128 product in f32, the same
//! with the right operand given as a transposed view (no copy: cuBLAS's transpose flag), and a
//! stack of 8 matrices times one, and `relu(a @ b + bias)` as one cuBLASLt call with an
//! epilogue (`matmul_expr`), each checked against the host.
//!
//! `cargo run --release --example matmul`

use std::process::ExitCode;

use cuda_core::{Device, DeviceArray, ExprOps};

/// `a @ b` of row-major host matrices, in f64.
fn host_matmul(a: &[f32], b: &[f32], m: usize, k: usize, n: usize) -> Vec<f64> {
    let mut c = vec![0.0; m * n];
    for i in 0..m {
        for p in 0..k {
            let a_ip = f64::from(a[i * k + p]);
            for j in 0..n {
                c[i * n + j] += a_ip * f64::from(b[p * n + j]);
            }
        }
    }
    c
}

fn worst_error(got: &[f32], expected: &[f64]) -> f64 {
    got.iter()
        .zip(expected)
        .map(|(&g, &e)| (f64::from(g) - e).abs() / (1.0 + e.abs()))
        .fold(0.0, f64::max)
}

fn main() -> ExitCode {
    examples::run("matmul", || {
        let stream = Device::new(0)?.create_stream()?;
        let (m, k, n) = (512, 256, 128);
        let a_host: Vec<f32> = (0..m * k).map(|i| ((i * 7) % 13) as f32 / 13.0 - 0.5).collect();
        let b_host: Vec<f32> = (0..k * n).map(|i| ((i * 5) % 11) as f32 / 11.0 - 0.5).collect();
        let a = DeviceArray::from_slice(&stream, &a_host)?.reshape([m, k])?;
        let b = DeviceArray::from_slice(&stream, &b_host)?.reshape([k, n])?;
        let expected = host_matmul(&a_host, &b_host, m, k, n);

        let c = a.matmul(&b)?;
        let plain = worst_error(&c.to_vec()?, &expected);
        // The same right operand, stored transposed and viewed back: a flag for cuBLAS.
        let b_t = b.transpose().try_clone()?.transpose();
        let flagged = worst_error(&a.matmul(&b_t)?.to_vec()?, &expected);
        // A stack of 8 copies of `a` times `b`: the batch axis broadcasts.
        let stack = a.expand_dims(0)?.broadcast_to([8, m, k])?;
        let batched = stack.matmul(&b)?;
        let batched_error = batched
            .to_vec()?
            .chunks(m * n)
            .map(|matrix| worst_error(matrix, &expected))
            .fold(0.0, f64::max);
        // relu(a @ b + bias): one cublasLtMatmul with the RELU_BIAS epilogue, no extra kernel.
        let bias_host: Vec<f32> = (0..n).map(|j| (j % 5) as f32 / 5.0 - 0.4).collect();
        let bias = DeviceArray::from_slice(&stream, &bias_host)?;
        let fused = (a.matmul_expr(&b)? + &bias).maximum(0.0).eval()?;
        let expected_fused: Vec<f64> = expected
            .iter()
            .enumerate()
            .map(|(i, v)| (v + f64::from(bias_host[i % n])).max(0.0))
            .collect();
        let fused_error = worst_error(&fused.to_vec()?, &expected_fused);
        println!("a @ b: {:?}, worst relative error {plain:.2e}", c.shape());
        println!("relu(a @ b + bias), one epilogue call: worst relative error {fused_error:.2e}");
        println!("a @ (b^T)^T: worst relative error {flagged:.2e}");
        println!(
            "stack @ b: {:?}, worst relative error {batched_error:.2e}",
            batched.shape()
        );
        let tolerance = 1e-5;
        if [plain, flagged, batched_error, fused_error]
            .iter()
            .any(|&e| e > tolerance)
        {
            return Err(format!("matmul: an error above {tolerance:e}").into());
        }
        println!("matmul: all {} products correct", 11 * m * n);
        Ok(())
    })
}
