//! Expressions around a matrix product (`matmul_expr`), integer and `Bool` products,
//! `tensordot` and the TF32 setting on a GPU, against f64 host references: every cuBLASLt
//! epilogue (bias, ReLU, GELU and their combinations) for f32, f16 and bf16; the fallback (the
//! product, then one fused kernel) for expressions that match no epilogue, for f64, stacks,
//! column biases and unaligned views. Without a driver or device each test prints
//! `skipped: <why>` and passes, unless `CUDA_REQUIRE_GPU=1`.

mod common;

use common::products::{array, assert_close, host_matmul, values};
use cuda_core::{Bool, DeviceArray, ExprOps, MatmulElement, Promote, Slice, Stream, TensorAxes};
use half::{bf16, f16};

/// GELU in the tanh form cuBLASLt uses.
fn gelu(x: f64) -> f64 {
    0.5 * x * (1.0 + ((2.0 / std::f64::consts::PI).sqrt() * (x + 0.044715 * x * x * x)).tanh())
}

/// `c[i, j] + bias[j]` for an `m x n` matrix.
fn add_rows(c: &[f64], bias: &[f64], n: usize) -> Vec<f64> {
    c.iter().enumerate().map(|(i, v)| v + bias[i % n]).collect()
}

fn relu(c: &[f64]) -> Vec<f64> {
    c.iter().map(|v| v.max(0.0)).collect()
}

fn every_epilogue<T: MatmulElement + Promote<T, Output = T>>(stream: &Stream, tolerance: f64) {
    let (m, k, n) = (64, 96, 40);
    let (x_host, w_host, b_host) = (values(m * k, 1), values(k * n, 2), values(n, 3));
    let product = host_matmul(&x_host, &w_host, m, k, n);
    let biased = add_rows(&product, &b_host, n);
    let x = array::<T>(stream, &x_host, &[m, k]);
    let w = array::<T>(stream, &w_host, &[k, n]);
    let b = array::<T>(stream, &b_host, &[n]);
    let b_row = array::<T>(stream, &b_host, &[1, n]);
    let dtype = T::DTYPE;
    let p = || x.matmul_expr(&w).unwrap();
    assert_close(&format!("{dtype} P"), &p().eval().unwrap(), &product, tolerance);
    assert_close(
        &format!("{dtype} P + b"),
        &(p() + &b).eval().unwrap(),
        &biased,
        tolerance,
    );
    assert_close(
        &format!("{dtype} b + P"),
        &(&b + p()).eval().unwrap(),
        &biased,
        tolerance,
    );
    assert_close(
        &format!("{dtype} P + b[1, n]"),
        &(p() + &b_row).eval().unwrap(),
        &biased,
        tolerance,
    );
    assert_close(
        &format!("{dtype} relu(P)"),
        &p().maximum(0.0).eval().unwrap(),
        &relu(&product),
        tolerance,
    );
    assert_close(
        &format!("{dtype} relu(P + b)"),
        &(p() + &b).maximum(0.0).eval().unwrap(),
        &relu(&biased),
        tolerance,
    );
    let gelu_of = |c: &[f64]| c.iter().map(|&v| gelu(v)).collect::<Vec<_>>();
    // cuBLASLt's GELU may use the hardware's approximate tanh (about 2^-11 relative).
    let gelu_tolerance = tolerance.max(2e-3);
    assert_close(
        &format!("{dtype} gelu(P)"),
        &p().gelu().eval().unwrap(),
        &gelu_of(&product),
        gelu_tolerance,
    );
    assert_close(
        &format!("{dtype} gelu(P + b)"),
        &(p() + &b).gelu().eval().unwrap(),
        &gelu_of(&biased),
        gelu_tolerance,
    );
    // A transposed weight (a transpose flag in the epilogue call).
    let w_t = array::<T>(stream, &transpose(&w_host, k, n), &[n, k]).transpose();
    assert_close(
        &format!("{dtype} relu(x @ w^T^T + b)"),
        &(x.matmul_expr(&w_t).unwrap() + &b).maximum(0.0).eval().unwrap(),
        &relu(&biased),
        tolerance,
    );
    // Fallbacks: an expression that is no epilogue, a column bias, an unaligned bias view.
    let less: Vec<f64> = product.iter().enumerate().map(|(i, v)| v - b_host[i % n]).collect();
    assert_close(&format!("{dtype} P - b"), &(p() - &b).eval().unwrap(), &less, tolerance);
    let squared: Vec<f64> = biased.iter().map(|v| v * v).collect();
    assert_close(
        &format!("{dtype} (P + b)^2"),
        &(p() + &b).square().eval().unwrap(),
        &squared,
        tolerance,
    );
    let col_host = values(m, 4);
    let col = array::<T>(stream, &col_host, &[m, 1]);
    let by_column: Vec<f64> = product
        .iter()
        .enumerate()
        .map(|(i, v)| (v + col_host[i / n]).max(0.0))
        .collect();
    assert_close(
        &format!("{dtype} relu(P + column)"),
        &(p() + &col).maximum(0.0).eval().unwrap(),
        &by_column,
        tolerance,
    );
    let long = array::<T>(stream, &values(n + 1, 3), &[n + 1]);
    let offset = long.slice(&[Slice::from(1..n + 1)]).unwrap();
    let offset_host: Vec<f64> = offset.to_vec().unwrap().iter().map(|v| v.to_f64()).collect();
    assert_close(
        &format!("{dtype} relu(P + unaligned b)"),
        &(p() + &offset).maximum(0.0).eval().unwrap(),
        &relu(&add_rows(&product, &offset_host, n)),
        tolerance,
    );
    // A reduction of the expression evaluates it first.
    let total: f64 = relu(&biased).iter().sum();
    let summed = (p() + &b).maximum(0.0).sum().unwrap();
    assert_close(
        &format!("{dtype} sum(relu(P + b))"),
        &summed,
        &[total],
        tolerance * 10.0,
    );
    // Written into an existing array with assign.
    let mut out = DeviceArray::<T>::zeros(stream, [m, n]).unwrap();
    out.assign((p() + &b).maximum(0.0)).unwrap();
    assert_close(&format!("{dtype} assign relu(P + b)"), &out, &relu(&biased), tolerance);
}

fn transpose(data: &[f64], rows: usize, cols: usize) -> Vec<f64> {
    (0..cols)
        .flat_map(|j| (0..rows).map(move |i| data[i * cols + j]))
        .collect()
}

#[test]
fn expressions_around_a_product_match_the_host() {
    let Some(device) = common::device_or_skip("expressions_around_a_product_match_the_host") else {
        return;
    };
    let stream = device.create_stream().unwrap();
    every_epilogue::<f32>(&stream, 1e-4);
    every_epilogue::<f16>(&stream, 1e-2);
    every_epilogue::<bf16>(&stream, 3e-2);
    // f64 has no cuBLASLt epilogue here: the product, then one fused kernel.
    every_epilogue::<f64>(&stream, 1e-12);
}

#[test]
fn stacked_products_in_expressions_fall_back_to_one_kernel() {
    let Some(device) = common::device_or_skip("stacked_products_in_expressions_fall_back_to_one_kernel") else {
        return;
    };
    let stream = device.create_stream().unwrap();
    let (batch, m, k, n) = (3, 5, 7, 4);
    let x_host = values(batch * m * k, 1);
    let w_host = values(k * n, 2);
    let b_host = values(n, 3);
    let x = array::<f32>(&stream, &x_host, &[batch, m, k]);
    let w = array::<f32>(&stream, &w_host, &[k, n]);
    let b = array::<f32>(&stream, &b_host, &[n]);
    let got = (x.matmul_expr(&w).unwrap() + &b).maximum(0.0).eval().unwrap();
    assert_eq!(got.shape(), [batch, m, n]);
    let expected: Vec<f64> = (0..batch)
        .flat_map(|i| {
            relu(&add_rows(
                &host_matmul(&x_host[i * m * k..(i + 1) * m * k], &w_host, m, k, n),
                &b_host,
                n,
            ))
        })
        .collect();
    assert_close("relu(stack @ w + b)", &got, &expected, 1e-4);
    // Shapes are checked when the expression is made.
    assert!(x.matmul_expr(&b).is_err());
}

fn host_int_matmul(a: &[i64], b: &[i64], m: usize, k: usize, n: usize) -> Vec<i64> {
    let mut c = vec![0i64; m * n];
    for i in 0..m {
        for j in 0..n {
            c[i * n + j] = (0..k).fold(0i64, |s, p| s.wrapping_add(a[i * k + p].wrapping_mul(b[p * n + j])));
        }
    }
    c
}

#[test]
fn integer_and_bool_products_wrap_as_numpy() {
    let Some(device) = common::device_or_skip("integer_and_bool_products_wrap_as_numpy") else {
        return;
    };
    let stream = device.create_stream().unwrap();
    let (m, k, n) = (19, 37, 21);
    let a_host: Vec<i64> = (0..m * k).map(|i| (i as i64 * 31 % 251) - 125).collect();
    let b_host: Vec<i64> = (0..k * n).map(|i| (i as i64 * 17 % 241) - 120).collect();
    let exact = host_int_matmul(&a_host, &b_host, m, k, n);
    // i8: products and sums wrap in 8 bits.
    let a8: Vec<i8> = a_host.iter().map(|&v| v as i8).collect();
    let b8: Vec<i8> = b_host.iter().map(|&v| v as i8).collect();
    let a = DeviceArray::from_slice(&stream, &a8).unwrap().reshape([m, k]).unwrap();
    let b = DeviceArray::from_slice(&stream, &b8).unwrap().reshape([k, n]).unwrap();
    let expected8: Vec<i8> = exact.iter().map(|&v| v as i8).collect();
    assert_eq!(a.matmul(&b).unwrap().to_vec().unwrap(), expected8);
    // i32 and u64, a transposed view, and a broadcast stack.
    let a32: Vec<i32> = a_host.iter().map(|&v| v as i32).collect();
    let b32: Vec<i32> = b_host.iter().map(|&v| v as i32).collect();
    let a = DeviceArray::from_slice(&stream, &a32).unwrap().reshape([m, k]).unwrap();
    let b = DeviceArray::from_slice(&stream, &b32).unwrap().reshape([k, n]).unwrap();
    let expected32: Vec<i32> = exact.iter().map(|&v| v as i32).collect();
    assert_eq!(a.matmul(&b).unwrap().to_vec().unwrap(), expected32);
    let b_t_host: Vec<i32> = (0..n * k).map(|i| b32[(i % k) * n + i / k]).collect();
    let b_t = DeviceArray::from_slice(&stream, &b_t_host)
        .unwrap()
        .reshape([n, k])
        .unwrap();
    assert_eq!(a.matmul(&b_t.transpose()).unwrap().to_vec().unwrap(), expected32);
    let stack = a.broadcast_to([3, m, k]).unwrap();
    let stacked = stack.matmul(&b).unwrap();
    assert_eq!(stacked.shape(), [3, m, n]);
    assert_eq!(stacked.to_vec().unwrap(), expected32.repeat(3));
    let a64: Vec<u64> = a_host.iter().map(|&v| v as u64).collect();
    let b64: Vec<u64> = b_host.iter().map(|&v| v as u64).collect();
    let a = DeviceArray::from_slice(&stream, &a64).unwrap().reshape([m, k]).unwrap();
    let b = DeviceArray::from_slice(&stream, &b64).unwrap().reshape([k, n]).unwrap();
    let expected64: Vec<u64> = exact.iter().map(|&v| v as u64).collect();
    assert_eq!(a.matmul(&b).unwrap().to_vec().unwrap(), expected64);
    // Vectors, and an empty contraction (zeros).
    let v = DeviceArray::from_slice(&stream, &[1i16, 2, 3]).unwrap();
    assert_eq!(v.matmul(&v).unwrap().to_vec().unwrap(), [14]);
    let e = DeviceArray::<i32>::zeros(&stream, [2, 0]).unwrap();
    let f = DeviceArray::<i32>::zeros(&stream, [0, 3]).unwrap();
    assert_eq!(e.matmul(&f).unwrap().to_vec().unwrap(), [0; 6]);
    // Bool: the logical product.
    let p = DeviceArray::from_slice(
        &stream,
        &[
            Bool::from(true),
            Bool::from(false),
            Bool::from(false),
            Bool::from(false),
        ],
    )
    .unwrap()
    .reshape([2, 2])
    .unwrap();
    let q = DeviceArray::from_slice(
        &stream,
        &[Bool::from(true), Bool::from(true), Bool::from(false), Bool::from(true)],
    )
    .unwrap()
    .reshape([2, 2])
    .unwrap();
    let got: Vec<bool> = p
        .matmul(&q)
        .unwrap()
        .to_vec()
        .unwrap()
        .into_iter()
        .map(bool::from)
        .collect();
    assert_eq!(got, [true, true, false, false]);
}

#[test]
fn tensordot_matches_the_host() {
    let Some(device) = common::device_or_skip("tensordot_matches_the_host") else {
        return;
    };
    let stream = device.create_stream().unwrap();
    let (p, q, r, s) = (3, 4, 5, 6);
    let a_host = values(p * q * r, 1);
    let b_host = values(q * r * s, 2);
    let a = array::<f64>(&stream, &a_host, &[p, q, r]);
    let b = array::<f64>(&stream, &b_host, &[q, r, s]);
    // axes = 2: a as p x (q r), b as (q r) x s.
    let expected = host_matmul(&a_host, &b_host, p, q * r, s);
    assert_close("tensordot axes=2", &a.tensordot(&b, 2).unwrap(), &expected, 1e-12);
    // The same contraction written as pairs, and with the pairs swapped in order (a copy of a).
    let pairs = a.tensordot(&b, ([1, 2], [0, 1])).unwrap();
    assert_close("tensordot pairs", &pairs, &expected, 1e-12);
    let swapped = a.tensordot(&b.permute([1, 0, 2]).unwrap(), ([2, 1], [0, 1])).unwrap();
    assert_close("tensordot reordered pairs", &swapped, &expected, 1e-12);
    // axes = 0: the outer product.
    let outer = a.tensordot(&b, TensorAxes::Count(0)).unwrap();
    assert_eq!(outer.shape(), [p, q, r, q, r, s]);
    // Integers go through the generated kernel.
    let ai = DeviceArray::from_slice(&stream, &(0..24).collect::<Vec<i32>>())
        .unwrap()
        .reshape([2, 3, 4])
        .unwrap();
    let bi = DeviceArray::from_slice(&stream, &(0..12).collect::<Vec<i32>>())
        .unwrap()
        .reshape([3, 4])
        .unwrap();
    let got = ai.tensordot(&bi, ([1, 2], [0, 1])).unwrap().to_vec().unwrap();
    let expected: Vec<i32> = (0..2).map(|i| (0..12).map(|j| (i * 12 + j) * j).sum()).collect();
    assert_eq!(got, expected);
    // A mismatch names both shapes.
    let message = a.tensordot(&b, 1).unwrap_err().to_string();
    assert!(
        message.contains("[3, 4, 5]") && message.contains("[4, 5, 6]"),
        "{message}"
    );
}

#[test]
fn tf32_is_opt_in() {
    let Some(device) = common::device_or_skip("tf32_is_opt_in") else {
        return;
    };
    let stream = device.create_stream().unwrap();
    let (m, k, n) = (128, 256, 64);
    let (a_host, b_host) = (values(m * k, 5), values(k * n, 6));
    let expected = host_matmul(&a_host, &b_host, m, k, n);
    let a = array::<f32>(&stream, &a_host, &[m, k]);
    let b = array::<f32>(&stream, &b_host, &[k, n]);
    assert!(!cuda_core::tf32() || std::env::var(cuda_core::TF32_ENV).as_deref() == Ok("1"));
    cuda_core::set_tf32(true);
    let fast = a.matmul(&b).unwrap();
    cuda_core::set_tf32(false);
    // TF32 keeps 10 mantissa bits of the inputs (these values are exact in them anyway).
    assert_close("tf32 a @ b", &fast, &expected, 1e-2);
    assert_close("f32 a @ b", &a.matmul(&b).unwrap(), &expected, 1e-5);
}
