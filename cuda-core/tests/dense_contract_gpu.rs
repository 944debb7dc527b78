//! The device-memory contract's dense rule with every cuBLAS wrapper family: an array view that
//! is not one dense run of elements (strided, transposed, reversed, broadcast) handed to
//! `cuda_libs::blas` (levels 1, 2 and 3, cuBLASLt) or to a routine that copies contract ranges
//! is refused with `NotDense` before anything is queued, and the memory stays as it was; a
//! compact slice still works, and `DeviceArray::matmul` still passes transposed views to cuBLAS
//! as layouts. Without a driver, a device or cuBLAS each test prints `skipped: <why>` and
//! passes, unless `CUDA_REQUIRE_GPU=1`.

mod common;

use cuda_core::{DeviceArray, Slice, Stream};
use cuda_driver::{Access, DeviceMemory, DeviceMemoryMut};
use cuda_libs::blas::{Batch, Blas, Epilogue, Gemm, Gemv, Lt};

/// 0, 1, 2, ... as `f32`.
fn counting(len: usize) -> Vec<f32> {
    (0..len).map(|i| i as f32).collect()
}

/// Asserts that a library call was refused as not dense.
#[track_caller]
fn assert_not_dense(what: &str, result: cuda_libs::Result<()>) {
    match result {
        Err(cuda_libs::Error::Driver(cuda_driver::Error::NotDense { .. })) => {}
        other => panic!("{what}: expected NotDense, got {other:?}"),
    }
}

/// The views of a 16-element `x` that are not dense: `x[::2]`, `x[::-1]`, `x[3]` broadcast to 8,
/// and `x` as a 4 x 4 matrix transposed.
fn not_dense(x: &DeviceArray<f32>) -> Vec<(&'static str, DeviceArray<f32>)> {
    let one = x.slice(&[Slice::from(3..4)]).unwrap();
    vec![
        ("x[::2]", x.slice(&[Slice::ALL.step(2)]).unwrap()),
        ("x[::-1]", x.flip([0]).unwrap()),
        ("x[3] broadcast", one.broadcast_to([8]).unwrap()),
        ("x.reshape(4, 4).T", x.reshape_view([4, 4]).unwrap().transpose()),
    ]
}

#[test]
fn blas_level_1_refuses_views_that_are_not_dense() {
    let Some(stream) = common::blas_stream_or_skip("blas_level_1_refuses_views_that_are_not_dense") else {
        return;
    };
    let mut blas = Blas::new(&stream).unwrap();
    let data = counting(16);
    let x = DeviceArray::from_slice(&stream, &data).unwrap();
    let y_data: Vec<f32> = (0..16).map(|i| 100.0 + i as f32).collect();
    let y = DeviceArray::from_slice(&stream, &y_data).unwrap();
    let mut result = DeviceArray::<f32>::from_slice(&stream, &[-1.0]).unwrap();
    for (what, mut view) in not_dense(&x) {
        // The example: scal(8, 0, x[::2], 1) zeroed x[0..8], odd elements included.
        assert_not_dense(&format!("scal {what}"), blas.scal(8, 0.0, &mut view, 1));
        assert_not_dense(&format!("dot {what}"), blas.dot(8, &view, 1, &y, 1, &mut result));
        assert_not_dense(&format!("nrm2 {what}"), blas.nrm2(8, &view, 1, &mut result));
        assert_not_dense(&format!("axpy into {what}"), blas.axpy(8, 2.0, &y, 1, &mut view, 1));
    }
    stream.synchronize().unwrap();
    assert_eq!(x.to_vec().unwrap(), data, "x untouched");
    assert_eq!(y.to_vec().unwrap(), y_data, "y untouched");
    assert_eq!(result.to_vec().unwrap(), [-1.0], "no result written");
    // A compact slice is dense: scal(8, 0, x[2..10], 1) zeroes exactly those.
    let mut compact = x.slice(&[Slice::from(2..10)]).unwrap();
    blas.scal(8, 0.0, &mut compact, 1).unwrap();
    let expected: Vec<f32> = (0..16)
        .map(|i| if (2..10).contains(&i) { 0.0 } else { i as f32 })
        .collect();
    assert_eq!(x.to_vec().unwrap(), expected);
    // Views cuda-core hands to cuBLAS with their increment still work: dot of x[::2] and y[::2].
    let strided = |a: &DeviceArray<f32>| a.slice(&[Slice::ALL.step(2)]).unwrap();
    let dot = strided(&x).dot(&strided(&y)).unwrap().to_vec().unwrap()[0];
    let host: f32 = (0..16).step_by(2).map(|i| expected[i] * y_data[i]).sum();
    assert!((dot - host).abs() <= 1e-3 * host.abs(), "dot {dot}, host {host}");
}

#[test]
fn blas_levels_2_and_3_refuse_views_that_are_not_dense() {
    let Some(stream) = common::blas_stream_or_skip("blas_levels_2_and_3_refuse_views_that_are_not_dense") else {
        return;
    };
    let mut blas = Blas::new(&stream).unwrap();
    let data = counting(16);
    let a = DeviceArray::from_slice(&stream, &data).unwrap();
    let x = DeviceArray::from_slice(&stream, &[1.0f32, 2.0, 3.0, 4.0]).unwrap();
    let sentinel = vec![-7.0f32; 16];
    let mut c = DeviceArray::from_slice(&stream, &sentinel).unwrap();
    let mut y = DeviceArray::from_slice(&stream, &sentinel[..4]).unwrap();
    let square = a.reshape_view([4, 4]).unwrap();
    for (what, view) in not_dense(&a) {
        assert_not_dense(
            &format!("gemv A = {what}"),
            blas.gemv(&Gemv::new(4, 4), &view, &x, &mut y),
        );
    }
    let x_strided = a.slice(&[Slice::ALL.step(4)]).unwrap();
    assert_not_dense("gemv x[::4]", blas.gemv(&Gemv::new(4, 4), &square, &x_strided, &mut y));
    // The example: gemm with A = a.transpose() computed with A's memory order.
    let a_t = square.transpose();
    assert_not_dense("gemm A^T", blas.gemm(&Gemm::new(4, 4, 4), &a_t, &square, &mut c));
    assert_not_dense("gemm B^T", blas.gemm(&Gemm::new(4, 4, 4), &square, &a_t, &mut c));
    let reversed = square.flip([0, 1]).unwrap();
    assert_not_dense(
        "gemm A reversed",
        blas.gemm(&Gemm::new(4, 4, 4), &reversed, &square, &mut c),
    );
    let mut c_t = c.reshape_view([4, 4]).unwrap().transpose();
    assert_not_dense(
        "gemm into C^T",
        blas.gemm(&Gemm::new(4, 4, 4), &square, &square, &mut c_t),
    );
    let batch = Batch::packed(&Gemm::new(2, 2, 2), 4).unwrap();
    let stack = a.reshape_view([4, 2, 2]).unwrap();
    let broadcast = stack
        .slice(&[Slice::from(0..1)])
        .unwrap()
        .broadcast_to([4, 2, 2])
        .unwrap();
    assert_not_dense(
        "gemm_strided_batched A broadcast",
        blas.gemm_strided_batched(&Gemm::new(2, 2, 2), &batch, &broadcast, &stack, &mut c),
    );
    stream.synchronize().unwrap();
    assert_eq!(c.to_vec().unwrap(), sentinel, "C untouched");
    assert_eq!(y.to_vec().unwrap(), sentinel[..4], "y untouched");
    assert_eq!(a.to_vec().unwrap(), data, "A untouched");
    // matmul passes the transposed view as a layout (cuBLAS's transpose flag): the right
    // product. 96 x 96, above the small-product kernel's 64^3 multiply-adds, so cuBLAS runs it.
    let n = 96;
    let host: Vec<f32> = (0..n * n).map(|i| ((i * 7) % 13) as f32 - 6.0).collect();
    let m = DeviceArray::from_slice(&stream, &host)
        .unwrap()
        .reshape([n, n])
        .unwrap();
    let product = m.transpose().matmul(&m).unwrap().to_vec().unwrap();
    for i in 0..n {
        for j in 0..n {
            let expected: f32 = (0..n).map(|p| host[p * n + i] * host[p * n + j]).sum();
            let got = product[i * n + j];
            assert!(
                (got - expected).abs() <= 1e-3 * (1.0 + expected.abs()),
                "({i}, {j}): {got} vs {expected}"
            );
        }
    }
}

#[test]
fn cublaslt_refuses_views_that_are_not_dense() {
    let Some(stream) = common::blas_stream_or_skip("cublaslt_refuses_views_that_are_not_dense") else {
        return;
    };
    let mut lt = Lt::new(&stream).unwrap();
    let (m, n, k) = (64, 64, 64);
    let a = DeviceArray::from_slice(&stream, &counting(m * k))
        .unwrap()
        .reshape([m, k])
        .unwrap();
    let b = DeviceArray::from_slice(&stream, &counting(k * n))
        .unwrap()
        .reshape([k, n])
        .unwrap();
    let bias = DeviceArray::from_slice(&stream, &counting(n)).unwrap();
    let sentinel = vec![-7.0f32; m * n];
    let mut c = DeviceArray::from_slice(&stream, &sentinel)
        .unwrap()
        .reshape([m, n])
        .unwrap();
    let g = Gemm::new(m, n, k);
    let a_t = a.transpose();
    assert_not_dense("Lt A^T", lt.matmul(&g, Epilogue::None, &a_t, &b, None, &mut c));
    let b_strided = DeviceArray::from_slice(&stream, &counting(2 * k * n))
        .unwrap()
        .reshape([k, 2 * n])
        .unwrap();
    let b_strided = b_strided.slice(&[Slice::ALL, Slice::ALL.step(2)]).unwrap();
    assert_not_dense(
        "Lt B[:, ::2]",
        lt.matmul(&g, Epilogue::None, &a, &b_strided, None, &mut c),
    );
    let one = bias.slice(&[Slice::from(0..1)]).unwrap().broadcast_to([n]).unwrap();
    assert_not_dense(
        "Lt broadcast bias",
        lt.matmul(&g, Epilogue::Bias, &a, &b, Some(&one), &mut c),
    );
    let reversed = bias.flip([0]).unwrap();
    assert_not_dense(
        "Lt reversed bias",
        lt.matmul(&g, Epilogue::ReluBias, &a, &b, Some(&reversed), &mut c),
    );
    stream.synchronize().unwrap();
    assert_eq!(c.to_vec().unwrap(), sentinel, "C untouched");
    assert!(!lt.replay(), "graph replay is off unless asked for");
}

/// A routine that takes contract memory as a dense range: copies `source`'s range over the
/// start of `destination`'s.
fn copy_range(
    stream: &Stream,
    source: &impl DeviceMemory,
    destination: &mut impl DeviceMemoryMut,
) -> cuda_driver::Result<()> {
    let _read = source.begin_use(stream, Access::Read)?;
    let _write = destination.begin_use(stream, Access::Write)?;
    if destination.byte_len() < source.byte_len() {
        return Err(cuda_driver::Error::InvalidValue("the destination is shorter".into()));
    }
    // SAFETY: both ranges are contract memory of the stream's context, alive for the borrows and
    // in use on the stream (begun above); the destination holds the source's length.
    unsafe { stream.copy_raw_async(destination.device_ptr(), source.device_ptr(), source.byte_len()) }
}

#[test]
fn raw_range_copies_refuse_views_that_are_not_dense() {
    let Some(stream) = common::blas_stream_or_skip("raw_range_copies_refuse_views_that_are_not_dense") else {
        return;
    };
    let data = counting(16);
    let x = DeviceArray::from_slice(&stream, &data).unwrap();
    let mut out = DeviceArray::<f32>::zeros(&stream, [16]).unwrap();
    for (what, mut view) in not_dense(&x) {
        match copy_range(&stream, &view, &mut out) {
            Err(cuda_driver::Error::NotDense { shape, strides }) => {
                assert_eq!(
                    (shape.as_slice(), strides.as_slice()),
                    (view.shape(), view.strides()),
                    "{what}"
                )
            }
            other => panic!("{what}: expected NotDense, got {other:?}"),
        }
        let source = DeviceArray::<f32>::zeros(&stream, [view.len()]).unwrap();
        assert!(
            matches!(
                copy_range(&stream, &source, &mut view),
                Err(cuda_driver::Error::NotDense { .. })
            ),
            "{what} as the destination"
        );
    }
    stream.synchronize().unwrap();
    assert_eq!(out.to_vec().unwrap(), vec![0.0; 16], "nothing copied out");
    assert_eq!(x.to_vec().unwrap(), data, "nothing copied in");
    let compact = x.slice(&[Slice::from(2..10)]).unwrap();
    copy_range(&stream, &compact, &mut out).unwrap();
    let copied = out.to_vec().unwrap();
    assert_eq!((&copied[..8], &copied[8..]), (&data[2..10], &[0.0; 8][..]));
}
