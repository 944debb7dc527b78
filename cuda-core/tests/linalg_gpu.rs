//! `DeviceArray::matmul` on a GPU against an f64 host reference: every element type cuBLAS
//! takes, small products (the generated tiled kernel) and larger ones (cuBLAS), transposed,
//! sliced and reversed operands (passed as flags and leading dimensions, or copied once), 1-D
//! operands, broadcast batches, empty contractions and the typed errors of bad shapes. Without
//! a driver or device each test prints `skipped: <why>` and passes, unless `CUDA_REQUIRE_GPU=1`.

mod common;

use common::products::{array, assert_close, host_matmul, values};
use cuda_core::{DeviceArray, Element, Error, MatmulElement, Norm, Slice, Stream};
use half::{bf16, f16};

/// Every operand layout at `m x k` times `k x n`.
fn every_layout<T: MatmulElement>(stream: &Stream, tolerance: f64, (m, k, n): (usize, usize, usize)) {
    let (a_host, b_host) = (values(m * k, 1), values(k * n, 2));
    let expected = host_matmul(&a_host, &b_host, m, k, n);
    let a = array::<T>(stream, &a_host, &[m, k]);
    let b = array::<T>(stream, &b_host, &[k, n]);
    let dtype = T::DTYPE;
    assert_close(&format!("{dtype} a @ b"), &a.matmul(&b).unwrap(), &expected, tolerance);
    // Transposed operands: (b^T)^T and (a^T)^T, stored column-major.
    let a_t = array::<T>(stream, &transpose(&a_host, m, k), &[k, m]).transpose();
    let b_t = array::<T>(stream, &transpose(&b_host, k, n), &[n, k]).transpose();
    assert_close(
        &format!("{dtype} a^T^T @ b^T^T"),
        &a_t.matmul(&b_t).unwrap(),
        &expected,
        tolerance,
    );
    // A slice of columns: rows padded (leading dimension larger than the width).
    let wide = array::<T>(stream, &values(m * (k + 5), 3), &[m, k + 5]);
    let sliced = wide.slice(&[Slice::ALL, Slice::from(2..k + 2)]).unwrap();
    let sliced_host: Vec<f64> = sliced.to_vec().unwrap().iter().map(|v| v.to_f64()).collect();
    let expected_sliced = host_matmul(&sliced_host, &b_host, m, k, n);
    assert_close(
        &format!("{dtype} sliced @ b"),
        &sliced.matmul(&b).unwrap(),
        &expected_sliced,
        tolerance,
    );
    // A step along the last axis: one compact copy for cuBLAS (the tiled kernel reads it in
    // place), same result.
    let stepped = wide.slice(&[Slice::ALL, Slice::from(0..k + 5).step(2)]).unwrap();
    let kk = stepped.shape()[1];
    let stepped_host: Vec<f64> = stepped.to_vec().unwrap().iter().map(|v| v.to_f64()).collect();
    let b2_host = values(kk * n, 4);
    let b2 = array::<T>(stream, &b2_host, &[kk, n]);
    assert_close(
        &format!("{dtype} stepped @ b"),
        &stepped.matmul(&b2).unwrap(),
        &host_matmul(&stepped_host, &b2_host, m, kk, n),
        tolerance,
    );
    // Reversed views (negative strides): cuBLAS walks forward, so one compact copy each.
    let a_flipped = a.flip([0, 1]).unwrap();
    let a_flipped_host: Vec<f64> = a_host.iter().rev().copied().collect();
    let b_rows = b.flip([0]).unwrap();
    let b_rows_host: Vec<f64> = (0..k).rev().flat_map(|r| b_host[r * n..(r + 1) * n].to_vec()).collect();
    assert_close(
        &format!("{dtype} a[::-1, ::-1] @ b[::-1]"),
        &a_flipped.matmul(&b_rows).unwrap(),
        &host_matmul(&a_flipped_host, &b_rows_host, m, k, n),
        tolerance,
    );
}

fn transpose(data: &[f64], rows: usize, cols: usize) -> Vec<f64> {
    (0..cols)
        .flat_map(|j| (0..rows).map(move |i| data[i * cols + j]))
        .collect()
}

#[test]
fn matmul_matches_the_host_for_every_type_and_layout() {
    let Some(device) = common::device_or_skip("matmul_matches_the_host_for_every_type_and_layout") else {
        return;
    };
    let stream = device.create_stream().unwrap();
    // Up to 64^3 multiply-adds the generated tiled kernel multiplies; above, cuBLAS.
    for shape in [(37, 64, 23), (37, 320, 23)] {
        every_layout::<f32>(&stream, 1e-5, shape);
        every_layout::<f64>(&stream, 1e-12, shape);
        every_layout::<f16>(&stream, 1e-2, shape);
        every_layout::<bf16>(&stream, 2e-2, shape);
    }
}

#[test]
fn products_on_many_streams_stay_right_as_handles_are_let_go() {
    let Some(device) = common::device_or_skip("products_on_many_streams_stay_right_as_handles_are_let_go") else {
        return;
    };
    // More streams than the handles kept per kind (8), twice over, each with a product (cuBLASLt)
    // and a vector product (cuBLAS); then the first streams again, whose handles were let go.
    let streams: Vec<Stream> = (0..20).map(|_| device.create_stream().unwrap()).collect();
    let (m, k, n) = (16, 24, 8);
    let (a_host, b_host) = (values(m * k, 1), values(k * n, 2));
    let expected = host_matmul(&a_host, &b_host, m, k, n);
    for round in 0..2 {
        for (index, stream) in streams.iter().enumerate().take(if round == 0 { 20 } else { 4 }) {
            let a = array::<f32>(stream, &a_host, &[m, k]);
            let b = array::<f32>(stream, &b_host, &[k, n]);
            assert_close(
                &format!("stream {index}, round {round}"),
                &a.matmul(&b).unwrap(),
                &expected,
                1e-5,
            );
            let x = array::<f32>(stream, &a_host[..k], &[k]);
            let dot = x.dot(&x).unwrap();
            let want: f64 = a_host[..k].iter().map(|v| v * v).sum();
            close(&format!("dot on stream {index}"), scalar(&dot), want, 1e-5);
        }
    }
}

#[test]
fn matmul_follows_numpy_for_vectors_batches_and_empty_axes() {
    let Some(device) = common::device_or_skip("matmul_follows_numpy_for_vectors_batches_and_empty_axes") else {
        return;
    };
    let stream = device.create_stream().unwrap();
    let (m, k, n) = (5, 4, 3);
    let a_host = values(m * k, 5);
    let b_host = values(k * n, 6);
    let a = array::<f64>(&stream, &a_host, &[m, k]);
    let b = array::<f64>(&stream, &b_host, &[k, n]);
    // 1-D operands: (k,) @ (k, n) -> (n,); (m, k) @ (k,) -> (m,); (k,) @ (k,) -> ().
    let v = array::<f64>(&stream, &a_host[..k], &[k]);
    let vb = v.matmul(&b).unwrap();
    assert_eq!(vb.shape(), [n]);
    assert_close("v @ b", &vb, &host_matmul(&a_host[..k], &b_host, 1, k, n), 1e-12);
    let w = array::<f64>(&stream, &b_host[..k], &[k]);
    let aw = a.matmul(&w).unwrap();
    assert_eq!(aw.shape(), [m]);
    assert_close("a @ w", &aw, &host_matmul(&a_host, &b_host[..k], m, k, 1), 1e-12);
    let vw = v.matmul(&w).unwrap();
    assert_eq!(vw.shape(), [0usize; 0]);
    assert_close("v @ w", &vw, &host_matmul(&a_host[..k], &b_host[..k], 1, k, 1), 1e-12);
    // A stack of 3 matrices times one matrix (broadcast batch).
    let stack_host = values(3 * m * k, 7);
    let stack = array::<f64>(&stream, &stack_host, &[3, m, k]);
    let product = stack.matmul(&b).unwrap();
    assert_eq!(product.shape(), [3, m, n]);
    let expected: Vec<f64> = (0..3)
        .flat_map(|i| host_matmul(&stack_host[i * m * k..(i + 1) * m * k], &b_host, m, k, n))
        .collect();
    assert_close("stack @ b", &product, &expected, 1e-12);
    // Batch axes broadcast both ways: (2, 1, m, k) @ (3, k, n) -> (2, 3, m, n).
    let left = array::<f64>(&stream, &values(2 * m * k, 8), &[2, 1, m, k]);
    let right = array::<f64>(&stream, &values(3 * k * n, 9), &[3, k, n]);
    assert_eq!(left.matmul(&right).unwrap().shape(), [2, 3, m, n]);
    // An empty contraction gives zeros; an empty row count an empty result.
    let empty_k = DeviceArray::<f32>::zeros(&stream, [m, 0]).unwrap();
    let zeros = empty_k
        .matmul(&DeviceArray::<f32>::zeros(&stream, [0, n]).unwrap())
        .unwrap();
    assert_eq!(
        (zeros.shape(), zeros.to_vec().unwrap()),
        (&[m, n][..], vec![0.0; m * n])
    );
    let none = DeviceArray::<f32>::zeros(&stream, [0, k]).unwrap();
    assert_eq!(
        none.matmul(&array::<f32>(&stream, &b_host, &[k, n])).unwrap().shape(),
        [0, n]
    );
}

#[test]
fn matmul_refuses_bad_shapes_with_typed_errors() {
    let Some(device) = common::device_or_skip("matmul_refuses_bad_shapes_with_typed_errors") else {
        return;
    };
    let stream = device.create_stream().unwrap();
    let a = DeviceArray::<f32>::zeros(&stream, [2, 3]).unwrap();
    let b = DeviceArray::<f32>::zeros(&stream, [4, 5]).unwrap();
    match a.matmul(&b) {
        Err(Error::InvalidValue(message)) => {
            assert!(message.contains("[2, 3]") && message.contains("[4, 5]"), "{message}")
        }
        other => panic!("expected a shape error, got {other:?}"),
    }
    let scalar = DeviceArray::<f32>::zeros(&stream, [0usize; 0]).unwrap();
    assert!(matches!(a.matmul(&scalar), Err(Error::InvalidValue(_))));
    let batch_a = DeviceArray::<f32>::zeros(&stream, [2, 2, 3]).unwrap();
    let batch_b = DeviceArray::<f32>::zeros(&stream, [3, 3, 2]).unwrap();
    assert!(matches!(batch_a.matmul(&batch_b), Err(Error::InvalidValue(_))));
}

/// Matrix `i` (`rows` x `cols`, compact) of a host stack.
fn host_matrix(data: &[f64], i: usize, rows: usize, cols: usize) -> &[f64] {
    &data[i * rows * cols..(i + 1) * rows * cols]
}

#[test]
fn matmul_batches_every_stack_layout() {
    let Some(device) = common::device_or_skip("matmul_batches_every_stack_layout") else {
        return;
    };
    let stream = device.create_stream().unwrap();
    let (m, k, n) = (7, 6, 5);
    let b_host = values(k * n, 20);
    let b = array::<f32>(&stream, &b_host, &[k, n]);
    // Both batch axes broadcast: (2, 1, m, k) @ (3, k, n), a loop of strided batches.
    let (left_host, right_host) = (values(2 * m * k, 21), values(3 * k * n, 22));
    let left = array::<f32>(&stream, &left_host, &[2, 1, m, k]);
    let right = array::<f32>(&stream, &right_host, &[3, k, n]);
    let expected: Vec<f64> = (0..2)
        .flat_map(|i| (0..3).map(move |j| (i, j)))
        .flat_map(|(i, j)| {
            host_matmul(
                host_matrix(&left_host, i, m, k),
                host_matrix(&right_host, j, k, n),
                m,
                k,
                n,
            )
        })
        .collect();
    assert_close("(2,1,m,k) @ (3,k,n)", &left.matmul(&right).unwrap(), &expected, 1e-5);
    // Every other matrix of a stack (a batch stride of two matrices) times one matrix.
    let stack_host = values(4 * m * k, 23);
    let stack = array::<f32>(&stream, &stack_host, &[4, m, k]);
    let every_other = stack.slice(&[Slice::from(0..4).step(2)]).unwrap();
    let expected: Vec<f64> = [0, 2]
        .iter()
        .flat_map(|&i| host_matmul(host_matrix(&stack_host, i, m, k), &b_host, m, k, n))
        .collect();
    assert_close("stack[::2] @ b", &every_other.matmul(&b).unwrap(), &expected, 1e-5);
    // A stack of transposed matrices (a cuBLAS flag for the whole batch) times a stack.
    let base_host = values(3 * k * m, 24);
    let transposed = array::<f32>(&stream, &base_host, &[3, k, m])
        .permute([0, 2, 1])
        .unwrap();
    let expected: Vec<f64> = (0..3)
        .flat_map(|i| {
            let a_i = transpose(host_matrix(&base_host, i, k, m), k, m);
            host_matmul(&a_i, host_matrix(&right_host, i, k, n), m, k, n)
        })
        .collect();
    assert_close("stack^T @ stack", &transposed.matmul(&right).unwrap(), &expected, 1e-5);
    // Permuted batch axes (no single stride): (3, 2, m, k) seen as (2, 3, m, k).
    let swapped_host = values(6 * m * k, 25);
    let swapped = array::<f32>(&stream, &swapped_host, &[3, 2, m, k])
        .permute([1, 0, 2, 3])
        .unwrap();
    let expected: Vec<f64> = (0..2)
        .flat_map(|i| (0..3).map(move |j| j * 2 + i))
        .flat_map(|index| host_matmul(host_matrix(&swapped_host, index, m, k), &b_host, m, k, n))
        .collect();
    let product = swapped.matmul(&b).unwrap();
    assert_eq!(product.shape(), [2, 3, m, n]);
    assert_close("permuted stack @ b", &product, &expected, 1e-5);
    // A step along the last axis: copied compact once, then batched.
    let wide_host = values(2 * m * 2 * k, 26);
    let stepped = array::<f32>(&stream, &wide_host, &[2, m, 2 * k])
        .slice(&[Slice::ALL, Slice::ALL, Slice::from(0..2 * k).step(2)])
        .unwrap();
    let expected: Vec<f64> = (0..2)
        .flat_map(|i| {
            let a_i: Vec<f64> = host_matrix(&wide_host, i, m, 2 * k)
                .iter()
                .step_by(2)
                .copied()
                .collect();
            host_matmul(&a_i, &b_host, m, k, n)
        })
        .collect();
    assert_close("stepped stack @ b", &stepped.matmul(&b).unwrap(), &expected, 1e-5);
}

fn scalar<T: Element>(array: &DeviceArray<T>) -> f64 {
    assert_eq!(array.shape(), [0usize; 0], "a 0-d result");
    array.to_vec().unwrap()[0].to_f64()
}

fn close(what: &str, got: f64, expected: f64, tolerance: f64) {
    assert!(
        (got - expected).abs() <= tolerance * (1.0 + expected.abs()),
        "{what}: {got}, expected {expected}"
    );
}

fn vector_routines<T: MatmulElement>(stream: &Stream, tolerance: f64) {
    let dtype = T::DTYPE;
    let (x_host, y_host) = (values(300, 30), values(600, 31));
    let x = array::<T>(stream, &x_host, &[300]);
    // Every other element of y: a stride of 2 goes to cuBLAS as the increment.
    let y = array::<T>(stream, &y_host, &[600])
        .slice(&[Slice::from(0..600).step(2)])
        .unwrap();
    let ys: Vec<f64> = y_host.iter().step_by(2).copied().collect();
    let dot: f64 = x_host.iter().zip(&ys).map(|(a, b)| a * b).sum();
    close(&format!("{dtype} dot"), scalar(&x.dot(&y).unwrap()), dot, tolerance);
    // A reversed vector (a negative stride) is copied once, not passed as an increment.
    let reversed: f64 = x_host.iter().rev().zip(&ys).map(|(a, b)| a * b).sum();
    let x_reversed = x.flip([0]).unwrap();
    close(
        &format!("{dtype} dot reversed"),
        scalar(&x_reversed.dot(&y).unwrap()),
        reversed,
        tolerance,
    );
    close(&format!("{dtype} inner"), scalar(&x.inner(&y).unwrap()), dot, tolerance);
    // vdot flattens: a 15 x 20 matrix against the vector.
    let matrix = array::<T>(stream, &x_host, &[15, 20]);
    close(
        &format!("{dtype} vdot"),
        scalar(&matrix.vdot(&y).unwrap()),
        dot,
        tolerance,
    );
    // Norms.
    let two = x_host.iter().map(|v| v * v).sum::<f64>().sqrt();
    let one: f64 = x_host.iter().map(|v| v.abs()).sum();
    let max = x_host.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    let min = x_host.iter().fold(f64::INFINITY, |m, v| m.min(v.abs()));
    close(
        &format!("{dtype} norm"),
        scalar(&x.linalg_norm(Norm::Default).unwrap()),
        two,
        tolerance,
    );
    close(
        &format!("{dtype} norm 2"),
        scalar(&x.linalg_norm(Norm::Ord(2.0)).unwrap()),
        two,
        tolerance,
    );
    close(
        &format!("{dtype} norm 1"),
        scalar(&x.linalg_norm(Norm::Ord(1.0)).unwrap()),
        one,
        tolerance,
    );
    close(
        &format!("{dtype} norm inf"),
        scalar(&x.linalg_norm(Norm::Inf).unwrap()),
        max,
        tolerance,
    );
    close(
        &format!("{dtype} norm -inf"),
        scalar(&x.linalg_norm(Norm::NegInf).unwrap()),
        min,
        tolerance,
    );
    close(
        &format!("{dtype} fro"),
        scalar(&matrix.linalg_norm(Norm::Fro).unwrap()),
        two,
        tolerance,
    );
    // The Frobenius norm of a transposed (non-contiguous) matrix.
    close(
        &format!("{dtype} fro of a transpose"),
        scalar(&matrix.transpose().linalg_norm(Norm::Default).unwrap()),
        two,
        tolerance,
    );
    // Outer: (4,) x (2, 3) flattened -> (4, 6).
    let a_host = values(4, 32);
    let b_host = values(6, 33);
    let outer = array::<T>(stream, &a_host, &[4])
        .outer(&array::<T>(stream, &b_host, &[2, 3]))
        .unwrap();
    assert_eq!(outer.shape(), [4, 6]);
    let expected: Vec<f64> = a_host.iter().flat_map(|a| b_host.iter().map(move |b| a * b)).collect();
    assert_close(&format!("{dtype} outer"), &outer, &expected, tolerance);
}

#[test]
fn dot_inner_outer_and_norms_match_the_host() {
    let Some(device) = common::device_or_skip("dot_inner_outer_and_norms_match_the_host") else {
        return;
    };
    let stream = device.create_stream().unwrap();
    vector_routines::<f32>(&stream, 1e-5);
    vector_routines::<f64>(&stream, 1e-12);
    vector_routines::<f16>(&stream, 4e-3);
    vector_routines::<bf16>(&stream, 3e-2);
}

/// The norms that need no solver, against NumPy 2.4's `np.linalg.norm` of the same arrays.
#[test]
fn norms_without_a_solver_match_numpy() {
    let Some(device) = common::device_or_skip("norms_without_a_solver_match_numpy") else {
        return;
    };
    let stream = device.create_stream().unwrap();
    let x_host = [3.0, -4.0, 0.0, 1.5];
    let x = array::<f64>(&stream, &x_host, &[4]);
    let norm = |a: &DeviceArray<f64>, ord| scalar(&a.linalg_norm(ord).unwrap());
    // Vector p-norms: any p; 0 counts nonzeros; a zero element makes negative p give 0.
    for (ord, expected) in [
        (3.0, 4.552874245617287),
        (0.5, 24.56982340296115),
        (0.0, 3.0),
        (-1.0, 0.0),
        (-0.5, 0.0),
        (f64::INFINITY, 4.0),
        (f64::NEG_INFINITY, 0.0),
    ] {
        close(
            &format!("vector norm ord {ord}"),
            norm(&x, Norm::Ord(ord)),
            expected,
            1e-14,
        );
    }
    let x32 = array::<f32>(&stream, &x_host, &[4]);
    close(
        "f32 vector norm ord 3",
        scalar(&x32.linalg_norm(Norm::Ord(3.0)).unwrap()),
        4.5528746,
        1e-6,
    );
    let positive = array::<f64>(&stream, &[1.0, 2.0, 4.0], &[3]);
    close("vector norm ord -1", norm(&positive, Norm::Ord(-1.0)), 4.0 / 7.0, 1e-14);
    let empty = array::<f64>(&stream, &[], &[0]);
    assert_eq!(norm(&empty, Norm::Ord(3.0)), 0.0);
    assert_eq!(norm(&empty, Norm::Ord(0.0)), 0.0);
    // Matrix 1- and inf-norms: greatest/least column and row sums of |x|.
    let m = array::<f64>(&stream, &[1.0, -2.0, 3.0, -4.0, 5.0, -6.0], &[2, 3]);
    assert_eq!(norm(&m, Norm::Ord(1.0)), 9.0);
    assert_eq!(norm(&m, Norm::Ord(-1.0)), 5.0);
    assert_eq!(norm(&m, Norm::Inf), 15.0);
    assert_eq!(norm(&m, Norm::NegInf), 6.0);
    assert_eq!(norm(&m.transpose(), Norm::Ord(1.0)), 15.0, "a transposed view");
    assert_eq!(norm(&m.transpose(), Norm::Inf), 9.0);
    // The default norm of a 3-D array and of a 0-d one: the 2-norm of the flattened elements.
    let t_host: Vec<f64> = (0..24).map(|i| f64::from(i) - 10.0).collect();
    let t = array::<f64>(&stream, &t_host, &[2, 3, 4]);
    close("3-D default norm", norm(&t, Norm::Default), 34.698703145794944, 1e-14);
    let zero_d = array::<f64>(&stream, &[-3.0], &[]);
    assert_eq!(norm(&zero_d, Norm::Default), 3.0);
    // What NumPy refuses stays refused; what needs singular values needs feature `solver`.
    assert!(matches!(t.linalg_norm(Norm::Ord(1.0)), Err(Error::InvalidValue(_))));
    assert!(matches!(m.linalg_norm(Norm::Ord(3.0)), Err(Error::InvalidValue(_))));
    let two = m.linalg_norm(Norm::Ord(2.0));
    match cfg!(feature = "solver") {
        true => assert!(two.is_ok(), "{two:?}"),
        false => assert!(matches!(two, Err(Error::NotSupported(_))), "{two:?}"),
    }
}

#[test]
fn dot_and_inner_follow_numpy_for_matrices_and_stacks() {
    let Some(device) = common::device_or_skip("dot_and_inner_follow_numpy_for_matrices_and_stacks") else {
        return;
    };
    let stream = device.create_stream().unwrap();
    let (m, k, n) = (4, 3, 5);
    let (a_host, b_host) = (values(2 * m * k, 40), values(3 * k * n, 41));
    let a = array::<f64>(&stream, &a_host[..m * k], &[m, k]);
    let b = array::<f64>(&stream, &b_host[..k * n], &[k, n]);
    let expected = host_matmul(&a_host[..m * k], &b_host[..k * n], m, k, n);
    assert_close("dot 2-D", &a.dot(&b).unwrap(), &expected, 1e-12);
    // N-D: (2, m, k) . (3, k, n) -> (2, m, 3, n).
    let stack_a = array::<f64>(&stream, &a_host, &[2, m, k]);
    let stack_b = array::<f64>(&stream, &b_host, &[3, k, n]);
    let product = stack_a.dot(&stack_b).unwrap();
    assert_eq!(product.shape(), [2, m, 3, n]);
    let mut expected = Vec::new();
    for i in 0..2 {
        for r in 0..m {
            for j in 0..3 {
                let full = host_matmul(host_matrix(&a_host, i, m, k), host_matrix(&b_host, j, k, n), m, k, n);
                expected.extend_from_slice(&full[r * n..(r + 1) * n]);
            }
        }
    }
    assert_close("dot N-D", &product, &expected, 1e-12);
    // inner: (2, m, k) with (n, k) -> (2, m, n): rows against rows.
    let rows_b = array::<f64>(&stream, &b_host[..n * k], &[n, k]);
    let inner = stack_a.inner(&rows_b).unwrap();
    assert_eq!(inner.shape(), [2, m, n]);
    let expected: Vec<f64> = (0..2 * m)
        .flat_map(|r| {
            let (row, b_host) = (&a_host[r * k..(r + 1) * k], &b_host);
            (0..n).map(move |j| (0..k).map(|p| row[p] * b_host[j * k + p]).sum::<f64>())
        })
        .collect();
    assert_close("inner", &inner, &expected, 1e-12);
    // A 0-d operand scales the other.
    let two = DeviceArray::<f64>::from_slice(&stream, &[2.0])
        .unwrap()
        .reshape([0usize; 0])
        .unwrap();
    let scaled: Vec<f64> = a_host[..m * k].iter().map(|v| 2.0 * v).collect();
    let doubled = two.dot(&a).unwrap();
    assert_eq!(doubled.shape(), [m, k]);
    assert_close("0-d dot", &doubled, &scaled, 1e-12);
    assert_close("inner 0-d", &a.inner(&two).unwrap(), &scaled, 1e-12);
    // Misaligned shapes are typed errors.
    assert!(matches!(a.dot(&a), Err(Error::InvalidValue(_))));
    assert!(matches!(a.inner(&b), Err(Error::InvalidValue(_))));
    assert!(matches!(a.vdot(&b), Err(Error::InvalidValue(_))));
    let nuclear = a.linalg_norm(Norm::Nuc);
    match cfg!(feature = "solver") {
        true => assert!(nuclear.is_ok(), "{nuclear:?}"),
        false => assert!(matches!(nuclear, Err(Error::NotSupported(_))), "{nuclear:?}"),
    }
}

#[test]
fn trace_sums_the_diagonal_view() {
    let Some(device) = common::device_or_skip("trace_sums_the_diagonal_view") else {
        return;
    };
    let stream = device.create_stream().unwrap();
    let host: Vec<f64> = (0..24).map(f64::from).collect();
    let matrix = array::<f64>(&stream, &host[..12], &[3, 4]);
    assert_eq!(scalar(&matrix.trace().unwrap()), 0.0 + 5.0 + 10.0);
    assert_eq!(scalar(&matrix.transpose().trace().unwrap()), 15.0);
    // A stack in the first two axes: (2, 3, 4) -> (4,), NumPy's trace over axes 0 and 1.
    let stack = array::<f64>(&stream, &host, &[2, 3, 4]);
    let expected: Vec<f64> = (0..4).map(|j| host[j] + host[12 + 4 + j]).collect();
    assert_eq!(stack.trace().unwrap().to_vec().unwrap(), expected);
    // Integers sum in i64.
    let ints = DeviceArray::<i32>::from_slice(&stream, &[1, 2, 3, 4])
        .unwrap()
        .reshape([2, 2])
        .unwrap();
    assert_eq!(ints.trace().unwrap().to_vec().unwrap(), [5i64]);
    assert!(matches!(
        DeviceArray::<f32>::zeros(&stream, [3]).unwrap().trace(),
        Err(Error::InvalidValue(_))
    ));
}

/// Each element of `got` within `tolerance` (relative) of `expected`.
fn close_all(what: &str, got: &DeviceArray<f64>, expected: &[f64], tolerance: f64) {
    let got = got.to_vec().unwrap();
    assert_eq!(got.len(), expected.len(), "{what}: length");
    for (i, (&g, &e)) in got.iter().zip(expected).enumerate() {
        assert!(
            g == e || (g - e).abs() <= tolerance * e.abs().max(1.0),
            "{what}: element {i} is {g}, NumPy gives {e}"
        );
    }
}

#[test]
fn norms_along_axes_follow_numpy() {
    let Some(device) = common::device_or_skip("norms_along_axes_follow_numpy") else {
        return;
    };
    let stream = device.create_stream().unwrap();
    // NumPy 2.4: x = np.arange(24.0).reshape(2, 3, 4) - 7; x[0, 1, 2] = 0.
    let mut host: Vec<f64> = (0..24).map(|i| f64::from(i) - 7.0).collect();
    host[6] = 0.0;
    let x = array::<f64>(&stream, &host, &[2, 3, 4]);
    // np.linalg.norm(x, ord, axis=-2): vector norms along the middle axis, shape (2, 4).
    let vectors: [(Norm, [f64; 8]); 7] = [
        (
            Norm::Default,
            [
                7.68114575,
                6.63324958,
                5.83095189,
                5.65685425,
                16.58312395,
                18.22086716,
                19.87460691,
                21.54065923,
            ],
        ),
        (Norm::Ord(1.0), [11.0, 10.0, 8.0, 8.0, 27.0, 30.0, 33.0, 36.0]),
        (Norm::Inf, [7.0, 6.0, 5.0, 4.0, 13.0, 14.0, 15.0, 16.0]),
        (Norm::NegInf, [1.0, 2.0, 0.0, 0.0, 5.0, 6.0, 7.0, 8.0]),
        (Norm::Ord(0.0), [3.0, 3.0, 2.0, 2.0, 3.0, 3.0, 3.0, 3.0]),
        (
            Norm::Ord(3.0),
            [
                7.18551615,
                6.14463365,
                5.3368033,
                5.0396842,
                14.50376438,
                15.82091979,
                17.15543719,
                18.50426004,
            ],
        ),
        (
            Norm::Ord(-1.0),
            [
                0.67741935, 0.85714286, 0.0, 0.0, 2.57709251, 2.95774648, 3.32853026, 3.69230769,
            ],
        ),
    ];
    for (ord, expected) in vectors {
        let got = x.linalg_norm_axes(ord, -2, false).unwrap();
        assert_eq!(got.shape(), [2, 4]);
        close_all(&format!("{ord:?} along axis -2"), &got, &expected, 1e-8);
    }
    // np.linalg.norm(x, ord, axis=(2, 0)): rows along axis 2, columns along axis 0, shape (3,).
    let mut matrices = vec![
        (Norm::Default, [17.32050808, 21.42428529, 29.59729717]),
        (Norm::Fro, [17.32050808, 21.42428529, 29.59729717]),
        (Norm::Ord(1.0), [26.0, 42.0, 58.0]),
        (Norm::Ord(-1.0), [22.0, 5.0, 10.0]),
        (Norm::Inf, [12.0, 12.0, 20.0]),
        (Norm::NegInf, [12.0, 11.0, 14.0]),
    ];
    if cfg!(feature = "solver") {
        matrices.extend([
            (Norm::Ord(2.0), [17.03148292, 21.23777025, 29.54149449]),
            (Norm::Ord(-2.0), [3.15096646, 2.82083583, 1.81661871]),
            (Norm::Nuc, [20.18244938, 24.05860608, 31.35811319]),
        ]);
    }
    for (ord, expected) in matrices {
        close_all(
            &format!("{ord:?} over axes (2, 0)"),
            &x.linalg_norm_axes(ord, [2, 0], false).unwrap(),
            &expected,
            1e-8,
        );
    }
    // keepdims leaves the reduced axes of length 1; axis=None is the norm of everything.
    assert_eq!(x.linalg_norm_axes(Norm::Default, 1, true).unwrap().shape(), [2, 1, 4]);
    assert_eq!(
        x.linalg_norm_axes(Norm::Ord(1.0), [0, 2], true).unwrap().shape(),
        [1, 3, 1]
    );
    let all = x.linalg_norm_axes(Norm::Default, cuda_core::Axes::ALL, true).unwrap();
    assert_eq!(all.shape(), [1, 1, 1]);
    close_all(
        "axis=None",
        &all,
        &[scalar(&x.linalg_norm(Norm::Default).unwrap())],
        1e-14,
    );
    // Complex: np.linalg.norm([[3+4j, 1j], [0, 2-2j]], axis=0) = [5, 3], ord=inf over (1, 0) = 5.
    let c = cuda_core::Complex::new;
    let z = DeviceArray::from_slice(&stream, &[c(3.0, 4.0), c(0.0, 1.0), c(0.0, 0.0), c(2.0, -2.0)])
        .unwrap()
        .reshape([2, 2])
        .unwrap();
    close_all(
        "complex along axis 0",
        &z.linalg_norm_axes(Norm::Default, 0, false).unwrap(),
        &[5.0, 3.0],
        1e-14,
    );
    close_all(
        "complex inf over (1, 0)",
        &z.linalg_norm_axes(Norm::Inf, [1, 0], false).unwrap(),
        &[5.0],
        1e-14,
    );
    // NumPy's ValueErrors: a matrix order along one axis, three axes, none, a repeated axis.
    for refused in [
        x.linalg_norm_axes(Norm::Fro, 0, false),
        x.linalg_norm_axes(Norm::Default, [0, 1, 2], false),
        x.linalg_norm_axes(Norm::Default, cuda_core::Axes::EMPTY, false),
        x.linalg_norm_axes(Norm::Default, [1, -2], false),
        x.linalg_norm_axes(Norm::Ord(3.0), [0, 1], false),
    ] {
        assert!(matches!(refused, Err(Error::InvalidValue(_))), "{refused:?}");
    }
    assert!(
        matches!(x.linalg_norm_axes(Norm::Default, 3, false), Err(Error::Axis { .. })),
        "axis 3 of 3 dimensions"
    );
}

#[test]
fn integer_and_bool_norms_are_f64_as_numpy() {
    let Some(device) = common::device_or_skip("integer_and_bool_norms_are_f64_as_numpy") else {
        return;
    };
    let stream = device.create_stream().unwrap();
    // NumPy 2.4: x = np.array([[3, -4, 0], [1, 2, -2]], dtype=np.int32); every norm is float64.
    let x = DeviceArray::from_slice(&stream, &[3i32, -4, 0, 1, 2, -2])
        .unwrap()
        .reshape([2, 3])
        .unwrap();
    let f64_norm = |norm: DeviceArray<f64>| scalar(&norm);
    assert_eq!(f64_norm(x.linalg_norm(Norm::Default).unwrap()), 5.830951894845301);
    assert_eq!(f64_norm(x.linalg_norm(Norm::Ord(1.0)).unwrap()), 6.0);
    assert_eq!(f64_norm(x.linalg_norm(Norm::Inf).unwrap()), 7.0);
    close_all(
        "vector_norm ord 3",
        &x.vector_norm(Norm::Ord(3.0)).unwrap(),
        &[4.762203155904598],
        1e-14,
    );
    for (ord, expected) in [(Norm::Ord(0.0), 5.0), (Norm::Inf, 4.0), (Norm::NegInf, 0.0)] {
        assert_eq!(f64_norm(x.vector_norm(ord).unwrap()), expected, "vector_norm {ord:?}");
    }
    close_all(
        "int64 along axis 0",
        &cuda_core::ExprOps::astype::<i64>(&x)
            .eval()
            .unwrap()
            .linalg_norm_axes(Norm::Default, 0, false)
            .unwrap(),
        &[3.1622776601683795, 4.47213595499958, 2.0],
        1e-14,
    );
    close_all(
        "ord 3 along axis 1",
        &x.linalg_norm_axes(Norm::Ord(3.0), 1, false).unwrap(),
        &[4.497941445275415, 2.571281590658235],
        1e-14,
    );
    close_all(
        "matrix_norm",
        &x.matrix_norm(Norm::Default).unwrap(),
        &[5.830951894845301],
        1e-14,
    );
    let kept = x.matrix_norm_keepdims(Norm::Ord(1.0)).unwrap();
    assert_eq!(kept.shape(), [1, 1]);
    close_all("matrix_norm ord 1 keepdims", &kept, &[6.0], 0.0);
    // Computed in f64: no uint8 overflow in the squares or the sum.
    let u = DeviceArray::from_slice(&stream, &[255u8, 255]).unwrap();
    close_all(
        "uint8",
        &u.linalg_norm(Norm::Default).unwrap(),
        &[360.62445840513925],
        1e-15,
    );
    close_all("uint8 ord 1", &u.vector_norm(Norm::Ord(1.0)).unwrap(), &[510.0], 0.0);
    let b = DeviceArray::from_slice(&stream, &[cuda_core::Bool(1), cuda_core::Bool(0), cuda_core::Bool(1)]).unwrap();
    close_all(
        "bool",
        &b.linalg_norm(Norm::Default).unwrap(),
        &[std::f64::consts::SQRT_2],
        1e-15,
    );
    close_all("bool ord 1", &b.vector_norm(Norm::Ord(1.0)).unwrap(), &[2.0], 0.0);
    // float16 stays float16, as NumPy's norm of a float16 array.
    let h = DeviceArray::from_slice(&stream, &[f16::from_f64(3.0), f16::from_f64(4.0)]).unwrap();
    let h_norm: DeviceArray<f16> = h.linalg_norm(Norm::Default).unwrap();
    assert_eq!(scalar(&h_norm), 5.0);
    let h_sum: DeviceArray<f16> = h.vector_norm(Norm::Ord(1.0)).unwrap();
    assert_eq!(scalar(&h_sum), 7.0);
}

#[test]
fn vector_norm_axes_and_matrix_norm_keepdims_follow_numpy() {
    let Some(device) = common::device_or_skip("vector_norm_axes_and_matrix_norm_keepdims_follow_numpy") else {
        return;
    };
    let stream = device.create_stream().unwrap();
    // NumPy 2.4: a = np.arange(24.0).reshape(2, 3, 4) - 7.
    let host: Vec<f64> = (0..24).map(|i| f64::from(i) - 7.0).collect();
    let a = array::<f64>(&stream, &host, &[2, 3, 4]);
    // np.linalg.vector_norm(a, axis=(0, 2)), and with keepdims=True.
    let expected = [17.320508075688775, 21.447610589527216, 29.597297173897484];
    let got = a.vector_norm_axes(Norm::Default, [0, 2], false).unwrap();
    assert_eq!(got.shape(), [3]);
    close_all("axis (0, 2)", &got, &expected, 1e-14);
    let kept = a.vector_norm_axes(Norm::Default, [0, 2], true).unwrap();
    assert_eq!(kept.shape(), [1, 3, 1]);
    close_all("axis (0, 2) keepdims", &kept, &expected, 1e-14);
    close_all(
        "ord 1 axis (2, 0)",
        &a.vector_norm_axes(Norm::Ord(1.0), [2, 0], false).unwrap(),
        &[48.0, 48.0, 68.0],
        0.0,
    );
    close_all(
        "ord -inf axis (-1, 0)",
        &a.vector_norm_axes(Norm::NegInf, [-1, 0], false).unwrap(),
        &[4.0, 0.0, 1.0],
        0.0,
    );
    close_all(
        "ord 3 axis (1, 2)",
        &a.vector_norm_axes(Norm::Ord(3.0), [1, 2], false).unwrap(),
        &[9.597337224450664, 26.398209244924086],
        1e-14,
    );
    let inf = a.vector_norm_axes(Norm::Inf, 1, true).unwrap();
    assert_eq!(inf.shape(), [2, 1, 4]);
    close_all(
        "inf axis 1 keepdims",
        &inf,
        &[7.0, 6.0, 5.0, 4.0, 13.0, 14.0, 15.0, 16.0],
        0.0,
    );
    let all = a.vector_norm_axes(Norm::Default, cuda_core::Axes::ALL, true).unwrap();
    assert_eq!(all.shape(), [1, 1, 1]);
    close_all("axis=None keepdims", &all, &[40.44749683231337], 1e-14);
    let zeros = a.vector_norm_axes(Norm::Ord(0.0), [0, 1, 2], false).unwrap();
    assert_eq!(zeros.shape(), [0usize; 0]);
    close_all("ord 0 over every axis", &zeros, &[23.0], 0.0);
    // axis=(): the norm of each element alone, |a|.
    let each = a
        .vector_norm_axes(Norm::Default, cuda_core::Axes::EMPTY, false)
        .unwrap();
    assert_eq!(each.shape(), [2, 3, 4]);
    let moduli: Vec<f64> = host.iter().map(|v| v.abs()).collect();
    close_all("axis=()", &each, &moduli, 0.0);
    // np.linalg.matrix_norm(a, keepdims=True), and ord=1.
    let fro = a.matrix_norm_keepdims(Norm::Default).unwrap();
    assert_eq!(fro.shape(), [2, 1, 1]);
    close_all(
        "matrix_norm keepdims",
        &fro,
        &[13.038404810405298, 38.28837943815329],
        1e-14,
    );
    close_all(
        "matrix_norm ord 1 keepdims",
        &a.matrix_norm_keepdims(Norm::Ord(1.0)).unwrap(),
        &[11.0, 36.0],
        0.0,
    );
    // NumPy's ValueErrors: a matrix order, a repeated axis; an axis out of range.
    for refused in [
        a.vector_norm_axes(Norm::Fro, 0, false),
        a.vector_norm_axes(Norm::Nuc, [0, 1], false),
        a.vector_norm_axes(Norm::Default, [0, 0], false),
    ] {
        assert!(matches!(refused, Err(Error::InvalidValue(_))), "{refused:?}");
    }
    assert!(matches!(
        a.vector_norm_axes(Norm::Default, 3, false),
        Err(Error::Axis { .. })
    ));
    let v = array::<f64>(&stream, &[1.0, 2.0], &[2]);
    assert!(matches!(
        v.matrix_norm_keepdims(Norm::Default),
        Err(Error::InvalidValue(_))
    ));
}
