//! cuBLAS and cuBLASLt on the GPU against a host reference (f64 accumulation). Each test prints
//! `skipped:` without a GPU or without cuBLAS, and fails instead under `CUDA_REQUIRE_GPU=1`.

use cuda_driver::{Context, ContextFlags, DeviceBuffer, Stream, StreamFlags};
use cuda_libs::blas::{Batch, Blas, Element, Epilogue, Gemm, Gemv, GemvElement, Lt, LtElement, Operand, RealElement};
use cuda_libs::Error;
use half::{bf16, f16};

mod common;
use common::stream_or_skip;

/// The element types as the host reference sees them, with each type's tolerance.
trait Host: Element {
    fn from_f64(value: f64) -> Self;
    fn to_f64(self) -> f64;
    /// Relative tolerance (against `max(1, |reference|)`).
    const TOLERANCE: f64;
}

impl Host for f32 {
    fn from_f64(value: f64) -> Self {
        value as f32
    }
    fn to_f64(self) -> f64 {
        f64::from(self)
    }
    const TOLERANCE: f64 = 1e-4;
}

impl Host for f64 {
    fn from_f64(value: f64) -> Self {
        value
    }
    fn to_f64(self) -> f64 {
        self
    }
    const TOLERANCE: f64 = 1e-12;
}

impl Host for f16 {
    fn from_f64(value: f64) -> Self {
        f16::from_f64(value)
    }
    fn to_f64(self) -> f64 {
        f16::to_f64(self)
    }
    // 11 significant bits: the result's rounding, f32 accumulation adds little.
    const TOLERANCE: f64 = 2e-3;
}

impl Host for bf16 {
    fn from_f64(value: f64) -> Self {
        bf16::from_f64(value)
    }
    fn to_f64(self) -> f64 {
        bf16::to_f64(self)
    }
    // 8 significant bits.
    const TOLERANCE: f64 = 1e-2;
}

/// `len` values, small multiples of 1/8, so exact in every element type.
fn values<T: Host>(len: usize, seed: usize) -> Vec<T> {
    (0..len)
        .map(|i| T::from_f64(((i * 7 + seed * 13) % 17) as f64 / 8.0 - 1.0))
        .collect()
}

/// The elements of a stored `rows x cols` matrix of leading dimension `ld`.
fn span(rows: usize, cols: usize, ld: usize) -> usize {
    (rows - 1) * ld + cols
}

/// Row-major `C = alpha * op(A) op(B) + beta * C` in f64, leaving the padding of `C` alone.
fn reference<T: Host>(g: &Gemm, a: &[T], b: &[T], c: &[T]) -> Vec<f64> {
    let lda = g.lda.unwrap_or(if g.transpose_a { g.m } else { g.k });
    let ldb = g.ldb.unwrap_or(if g.transpose_b { g.k } else { g.n });
    let ldc = g.ldc.unwrap_or(g.n);
    let mut out: Vec<f64> = c.iter().map(|v| v.to_f64()).collect();
    for i in 0..g.m {
        for j in 0..g.n {
            let mut sum = 0.0;
            for l in 0..g.k {
                let a_il = if g.transpose_a { a[l * lda + i] } else { a[i * lda + l] };
                let b_lj = if g.transpose_b { b[j * ldb + l] } else { b[l * ldb + j] };
                sum += a_il.to_f64() * b_lj.to_f64();
            }
            out[i * ldc + j] = g.alpha * sum + g.beta * c[i * ldc + j].to_f64();
        }
    }
    out
}

fn assert_close<T: Host>(what: &str, got: &[T], expected: &[f64], tolerance: f64) {
    assert_eq!(got.len(), expected.len(), "{what}");
    for (index, (got, expected)) in got.iter().zip(expected).enumerate() {
        let got = got.to_f64();
        let error = (got - expected).abs() / expected.abs().max(1.0);
        assert!(
            error <= tolerance,
            "{what}: element {index} is {got}, expected {expected} (tolerance {tolerance})"
        );
    }
}

/// Runs `g` on the GPU and compares with the host, padding included.
fn check_gemm<T: Host>(blas: &mut Blas, context: &Context, g: Gemm, tolerance: f64) {
    let (a_rows, a_cols) = if g.transpose_a { (g.k, g.m) } else { (g.m, g.k) };
    let (b_rows, b_cols) = if g.transpose_b { (g.n, g.k) } else { (g.k, g.n) };
    let a = values::<T>(span(a_rows, a_cols, g.lda.unwrap_or(a_cols)), 1);
    let b = values::<T>(span(b_rows, b_cols, g.ldb.unwrap_or(b_cols)), 2);
    let c = values::<T>(span(g.m, g.n, g.ldc.unwrap_or(g.n)), 3);
    let expected = reference(&g, &a, &b, &c);
    let a_device = DeviceBuffer::from_slice(context, &a).unwrap();
    let b_device = DeviceBuffer::from_slice(context, &b).unwrap();
    let mut c_device = DeviceBuffer::from_slice(context, &c).unwrap();
    blas.gemm(&g, &a_device, &b_device, &mut c_device).unwrap();
    blas.stream().synchronize().unwrap();
    let what = format!("{} {g:?}", std::any::type_name::<T>());
    assert_close(&what, &c_device.to_vec().unwrap(), &expected, tolerance);
}

/// Every transpose combination, a non-square shape, padded leading dimensions, alpha and beta.
fn gemm_cases() -> Vec<Gemm> {
    let mut cases = Vec::new();
    for (transpose_a, transpose_b) in [(false, false), (true, false), (false, true), (true, true)] {
        let mut g = Gemm::new(37, 19, 53).alpha(1.5).beta(0.5);
        g.transpose_a = transpose_a;
        g.transpose_b = transpose_b;
        cases.push(g);
        let (a_cols, b_cols) = (if transpose_a { 37 } else { 53 }, if transpose_b { 53 } else { 19 });
        cases.push(g.lda(a_cols + 3).ldb(b_cols + 5).ldc(19 + 2));
    }
    cases.push(Gemm::new(1, 1, 1));
    cases.push(Gemm::new(64, 1, 128));
    cases
}

fn gemm_for<T: Host>(test: &str) {
    let Some(stream) = stream_or_skip(test) else {
        return;
    };
    let mut blas = Blas::new(&stream).unwrap();
    for g in gemm_cases() {
        check_gemm::<T>(&mut blas, stream.context(), g, T::TOLERANCE);
    }
}

#[test]
fn gemm_f32() {
    gemm_for::<f32>("gemm_f32");
}

#[test]
fn gemm_f64() {
    gemm_for::<f64>("gemm_f64");
}

#[test]
fn gemm_f16() {
    gemm_for::<f16>("gemm_f16");
}

#[test]
fn gemm_bf16() {
    gemm_for::<bf16>("gemm_bf16");
}

#[test]
fn gemm_f32_with_tf32_allowed() {
    let Some(stream) = stream_or_skip("gemm_f32_with_tf32_allowed") else {
        return;
    };
    let mut blas = Blas::new(&stream).unwrap();
    assert!(!blas.allow_tf32());
    blas.set_allow_tf32(true);
    // Inputs are multiples of 1/8, exact in TF32 too; only the rounding of sums differs.
    for g in gemm_cases() {
        check_gemm::<f32>(&mut blas, stream.context(), g, 1e-3);
    }
}

#[test]
fn bad_operands_are_refused_before_any_call() {
    let Some(stream) = stream_or_skip("bad_operands_are_refused_before_any_call") else {
        return;
    };
    let context = stream.context();
    let mut blas = Blas::new(&stream).unwrap();
    let a = DeviceBuffer::from_slice(context, &[1.0f32; 6]).unwrap();
    let b = DeviceBuffer::from_slice(context, &[1.0f32; 6]).unwrap();
    let mut c = DeviceBuffer::from_slice(context, &[7.0f32; 4]).unwrap();
    // A 2x3 times B 3x2 fits; A 2x4 does not.
    blas.gemm(&Gemm::new(2, 2, 3), &a, &b, &mut c).unwrap();
    stream.synchronize().unwrap();
    assert_eq!(c.to_vec().unwrap(), [3.0; 4]);
    match blas.gemm(&Gemm::new(2, 2, 4), &a, &b, &mut c) {
        Err(Error::InvalidValue(message)) => assert!(message.contains("A spans 8 elements"), "{message}"),
        other => panic!("{other:?}"),
    }
    match blas.gemm(&Gemm::new(2, 3, 3), &a, &b, &mut c) {
        Err(Error::InvalidValue(message)) => assert!(message.contains("B spans 9"), "{message}"),
        other => panic!("{other:?}"),
    }
    match blas.gemm(&Gemm::new(2, 2, 3).ldc(3), &a, &b, &mut c) {
        Err(Error::InvalidValue(message)) => assert!(message.contains("C spans 5"), "{message}"),
        other => panic!("{other:?}"),
    }
    // C is untouched by the refused calls.
    stream.synchronize().unwrap();
    assert_eq!(c.to_vec().unwrap(), [3.0; 4]);
    // A buffer of another context.
    let other = Context::new(&context.device(), ContextFlags::empty()).unwrap();
    let foreign = DeviceBuffer::from_slice(&other, &[1.0f32; 6]).unwrap();
    context.set_current().unwrap();
    match blas.gemm(&Gemm::new(2, 2, 3), &foreign, &b, &mut c) {
        Err(Error::WrongContext { object, .. }) => assert_eq!(object, "A"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_handle_moves_to_another_thread() {
    let Some(stream) = stream_or_skip("a_handle_moves_to_another_thread") else {
        return;
    };
    let context = stream.context().clone();
    let mut blas = Blas::new(&stream).unwrap();
    let result = std::thread::spawn(move || {
        let a = DeviceBuffer::from_slice(&context, &[2.0f64; 4]).unwrap();
        let b = DeviceBuffer::from_slice(&context, &[3.0f64; 4]).unwrap();
        let mut c = DeviceBuffer::<f64>::zeroed(&context, 4).unwrap();
        blas.gemm(&Gemm::new(2, 2, 2), &a, &b, &mut c).unwrap();
        blas.stream().synchronize().unwrap();
        c.to_vec().unwrap()
    })
    .join()
    .unwrap();
    assert_eq!(result, [12.0; 4]);
}

/// GELU, tanh approximation, as cuBLASLt computes it.
fn gelu(x: f64) -> f64 {
    0.5 * x * (1.0 + ((2.0 / std::f64::consts::PI).sqrt() * (x + 0.044715 * x * x * x)).tanh())
}

fn lt_for<T: Host + LtElement>(test: &str) {
    let Some(stream) = stream_or_skip(test) else {
        return;
    };
    let context = stream.context();
    let mut lt = Lt::new(&stream).unwrap();
    let (m, n, k) = (45, 24, 72);
    let base = Gemm::new(m, n, k);
    for (epilogue, g) in [
        (Epilogue::ReluBias, base),
        (Epilogue::Bias, base),
        (Epilogue::GeluBias, base),
        (Epilogue::Relu, base),
        (Epilogue::None, base.alpha(0.5).beta(1.0)),
        (Epilogue::ReluBias, base.transpose_b()),
        (Epilogue::ReluBias, base.transpose_a().lda(m + 11).ldc(n + 8)),
    ] {
        let (a_rows, a_cols) = if g.transpose_a { (k, m) } else { (m, k) };
        let (b_rows, b_cols) = if g.transpose_b { (n, k) } else { (k, n) };
        let a = values::<T>(span(a_rows, a_cols, g.lda.unwrap_or(a_cols)), 4);
        let b = values::<T>(span(b_rows, b_cols, g.ldb.unwrap_or(b_cols)), 5);
        let c = values::<T>(span(m, n, g.ldc.unwrap_or(n)), 6);
        let bias = values::<T>(n, 7);
        let ldc = g.ldc.unwrap_or(n);
        let mut expected = reference(&g, &a, &b, &c);
        for i in 0..m {
            for j in 0..n {
                let x = &mut expected[i * ldc + j];
                if epilogue.has_bias() {
                    *x += bias[j].to_f64();
                }
                match epilogue {
                    Epilogue::Relu | Epilogue::ReluBias => *x = x.max(0.0),
                    Epilogue::Gelu | Epilogue::GeluBias => *x = gelu(*x),
                    Epilogue::None | Epilogue::Bias => {}
                }
            }
        }
        let a_device = DeviceBuffer::from_slice(context, &a).unwrap();
        let b_device = DeviceBuffer::from_slice(context, &b).unwrap();
        let bias_device = DeviceBuffer::from_slice(context, &bias).unwrap();
        let mut c_device = DeviceBuffer::from_slice(context, &c).unwrap();
        let bias_arg = epilogue.has_bias().then_some(&bias_device);
        lt.matmul(
            &g,
            epilogue,
            &a_device,
            &b_device,
            bias_arg.map(|b| b as &dyn Operand<T>),
            &mut c_device,
        )
        .unwrap();
        stream.synchronize().unwrap();
        // GELU's approximation on the GPU differs slightly from the host's.
        let tolerance = T::TOLERANCE.max(if epilogue == Epilogue::GeluBias { 5e-3 } else { 0.0 });
        let what = format!("{} {epilogue:?} {g:?}", std::any::type_name::<T>());
        assert_close(&what, &c_device.to_vec().unwrap(), &expected, tolerance);
    }
    let cached = lt.cached_algorithms();
    assert_eq!(cached, 7, "one heuristic answer per distinct problem");
    // The same problem again uses the cached algorithm.
    let a = DeviceBuffer::from_slice(context, &values::<T>(m * k, 1)).unwrap();
    let b = DeviceBuffer::from_slice(context, &values::<T>(k * n, 2)).unwrap();
    let bias = DeviceBuffer::from_slice(context, &values::<T>(n, 3)).unwrap();
    let mut c = DeviceBuffer::<T>::zeroed(context, m * n).unwrap();
    lt.matmul(&base, Epilogue::ReluBias, &a, &b, Some(&bias), &mut c)
        .unwrap();
    assert_eq!(lt.cached_algorithms(), cached);
    // A bias where the epilogue takes none, none where it takes one, and a short bias.
    assert!(matches!(
        lt.matmul(&base, Epilogue::None, &a, &b, Some(&bias), &mut c),
        Err(Error::InvalidValue(_))
    ));
    assert!(matches!(
        lt.matmul(&base, Epilogue::GeluBias, &a, &b, None, &mut c),
        Err(Error::InvalidValue(_))
    ));
    let short = DeviceBuffer::from_slice(context, &values::<T>(n - 1, 3)).unwrap();
    match lt.matmul(&base, Epilogue::Bias, &a, &b, Some(&short), &mut c) {
        Err(Error::InvalidValue(message)) => assert!(message.contains("bias spans 24"), "{message}"),
        other => panic!("{other:?}"),
    }
    stream.synchronize().unwrap();
}

#[test]
fn lt_bf16_epilogues() {
    lt_for::<bf16>("lt_bf16_epilogues");
}

#[test]
fn lt_f16_epilogues() {
    lt_for::<f16>("lt_f16_epilogues");
}

#[test]
fn lt_f32_epilogues() {
    lt_for::<f32>("lt_f32_epilogues");
}

/// `relu(A B + C + bias)` into `C` again and again: each call's result depends on the last, so
/// a replayed graph that did not run, or ran twice, shows. Replay is off until switched on.
#[test]
fn repeated_lt_calls_replay_as_graphs() {
    let Some(stream) = stream_or_skip("repeated_lt_calls_replay_as_graphs") else {
        return;
    };
    // Non-blocking, as the handle's own capture stream is: while a blocking stream captures, the
    // legacy stream (which the other tests' synchronous copies use) may not be used anywhere.
    let stream = Stream::with_options(stream.context(), StreamFlags::NON_BLOCKING, 0).unwrap();
    let context = stream.context();
    let mut lt = Lt::new(&stream).unwrap();
    assert!(!lt.replay(), "replay is off by default");
    let (m, n, k) = (96, 80, 64);
    let g = Gemm::new(m, n, k).alpha(0.25).beta(1.0);
    let mut a = values::<f32>(m * k, 1);
    let b = values::<f32>(k * n, 2);
    let bias = values::<f32>(n, 3);
    let mut a_device = DeviceBuffer::from_slice(context, &a).unwrap();
    let b_device = DeviceBuffer::from_slice(context, &b).unwrap();
    let bias_device = DeviceBuffer::from_slice(context, &bias).unwrap();
    let mut c = values::<f32>(m * n, 4);
    let mut c_device = DeviceBuffer::from_slice(context, &c).unwrap();
    let step = |a: &[f32], c: &[f32]| -> Vec<f32> {
        let mut next = reference(&g, a, &b, c);
        for (index, x) in next.iter_mut().enumerate() {
            *x = (*x + f64::from(bias[index % n])).max(0.0);
        }
        next.into_iter().map(|x| x as f32).collect()
    };
    // The one product of the test: `c = relu(0.25 a b + c + bias)` on the GPU.
    let product = |lt: &mut Lt, a: &DeviceBuffer<f32>, c: &mut DeviceBuffer<f32>| {
        lt.matmul(&g, Epilogue::ReluBias, a, &b_device, Some(&bias_device), c)
            .unwrap()
    };
    // Off by default: repeated calls run directly, and nothing is captured.
    for _ in 0..2 {
        product(&mut lt, &a_device, &mut c_device);
        c = step(&a, &c);
    }
    stream.synchronize().unwrap();
    assert_close("replay off by default", &c_device.to_vec().unwrap(), &to_f64(&c), 1e-4);
    assert_eq!(lt.replayed_calls(), 0, "no capture unless asked for");
    lt.set_replay(true);
    assert!(lt.replay());
    for call in 1..=4 {
        product(&mut lt, &a_device, &mut c_device);
        c = step(&a, &c);
        stream.synchronize().unwrap();
        assert_close(&format!("call {call}"), &c_device.to_vec().unwrap(), &to_f64(&c), 1e-4);
        assert_eq!(lt.replayed_calls(), usize::from(call >= 2), "after call {call}");
    }
    // The graph reads memory when it runs: new contents of A are used.
    a = values::<f32>(m * k, 5);
    a_device.copy_from_host(&a).unwrap();
    product(&mut lt, &a_device, &mut c_device);
    c = step(&a, &c);
    stream.synchronize().unwrap();
    assert_close("new A", &c_device.to_vec().unwrap(), &to_f64(&c), 1e-4);
    // Another output is another call: made directly, not replayed.
    let mut other = DeviceBuffer::from_slice(context, &c).unwrap();
    product(&mut lt, &a_device, &mut other);
    stream.synchronize().unwrap();
    assert_close("other output", &other.to_vec().unwrap(), &to_f64(&step(&a, &c)), 1e-4);
    assert_eq!(lt.replayed_calls(), 1);
    // Off: the graphs are forgotten, and the calls are direct.
    lt.set_replay(false);
    assert_eq!(lt.replayed_calls(), 0);
    for _ in 0..2 {
        product(&mut lt, &a_device, &mut c_device);
        c = step(&a, &c);
    }
    stream.synchronize().unwrap();
    assert_close("replay off", &c_device.to_vec().unwrap(), &to_f64(&c), 1e-4);
    assert_eq!(lt.replayed_calls(), 0);
}

fn to_f64(values: &[f32]) -> Vec<f64> {
    values.iter().map(|&x| f64::from(x)).collect()
}

/// Strided batches, packed and with a broadcast operand (stride 0), against the host product of
/// each matrix.
fn batched_for<T: Host>(test: &str) {
    let Some(stream) = stream_or_skip(test) else {
        return;
    };
    let context = stream.context();
    let mut blas = Blas::new(&stream).unwrap();
    let (m, n, k, count) = (13, 9, 21, 5);
    for (transpose_a, broadcast_a, broadcast_b) in [(false, false, false), (true, false, true), (false, true, false)] {
        let mut g = Gemm::new(m, n, k).alpha(0.5).beta(0.25);
        g.transpose_a = transpose_a;
        let packed = Batch::packed(&g, count).unwrap();
        let batch = Batch {
            stride_a: if broadcast_a { 0 } else { packed.stride_a },
            stride_b: if broadcast_b { 0 } else { packed.stride_b },
            // Padding between C's matrices stays as it was.
            stride_c: packed.stride_c + 3,
            ..packed
        };
        let a = values::<T>((count - 1) * batch.stride_a + m * k, 4);
        let b = values::<T>((count - 1) * batch.stride_b + k * n, 5);
        let c = values::<T>((count - 1) * batch.stride_c + m * n, 6);
        let mut expected: Vec<f64> = c.iter().map(|v| v.to_f64()).collect();
        for i in 0..count {
            let (sa, sb, sc) = (i * batch.stride_a, i * batch.stride_b, i * batch.stride_c);
            let product = reference(&g, &a[sa..sa + m * k], &b[sb..sb + k * n], &c[sc..sc + m * n]);
            expected[sc..sc + m * n].copy_from_slice(&product);
        }
        let a_device = DeviceBuffer::from_slice(context, &a).unwrap();
        let b_device = DeviceBuffer::from_slice(context, &b).unwrap();
        let mut c_device = DeviceBuffer::from_slice(context, &c).unwrap();
        blas.gemm_strided_batched(&g, &batch, &a_device, &b_device, &mut c_device)
            .unwrap();
        stream.synchronize().unwrap();
        let what = format!("{test} {g:?} {batch:?}");
        assert_close(&what, &c_device.to_vec().unwrap(), &expected, T::TOLERANCE);
    }
    // A C too short for the batch is refused before any call.
    let g = Gemm::new(m, n, k);
    let batch = Batch::packed(&g, count).unwrap();
    let a = DeviceBuffer::<T>::zeroed(context, count * m * k).unwrap();
    let b = DeviceBuffer::<T>::zeroed(context, count * k * n).unwrap();
    let mut short = DeviceBuffer::<T>::zeroed(context, count * m * n - 1).unwrap();
    let error = blas.gemm_strided_batched(&g, &batch, &a, &b, &mut short).unwrap_err();
    assert!(matches!(error, Error::InvalidValue(_)), "{error}");
}

#[test]
fn gemm_strided_batched_f32() {
    batched_for::<f32>("gemm_strided_batched_f32");
}

#[test]
fn gemm_strided_batched_f64() {
    batched_for::<f64>("gemm_strided_batched_f64");
}

#[test]
fn gemm_strided_batched_f16() {
    batched_for::<f16>("gemm_strided_batched_f16");
}

#[test]
fn gemm_strided_batched_bf16() {
    batched_for::<bf16>("gemm_strided_batched_bf16");
}

/// dot, nrm2, axpy and scal with unit and wider increments; results read back from the device
/// and through the waiting `_host` forms.
fn level1_for<T: Host + RealElement>(test: &str, tolerance: f64) {
    let Some(stream) = stream_or_skip(test) else {
        return;
    };
    let context = stream.context();
    let mut blas = Blas::new(&stream).unwrap();
    for (n, incx, incy) in [(1000, 1, 1), (77, 3, 2), (0, 1, 1)] {
        let x = values::<T>((n.max(1) - 1) * incx + 1, 7);
        let y = values::<T>((n.max(1) - 1) * incy + 1, 8);
        let xs: Vec<f64> = (0..n).map(|i| x[i * incx].to_f64()).collect();
        let ys: Vec<f64> = (0..n).map(|i| y[i * incy].to_f64()).collect();
        let dot: f64 = xs.iter().zip(&ys).map(|(a, b)| a * b).sum();
        let norm = xs.iter().map(|a| a * a).sum::<f64>().sqrt();
        let x_device = DeviceBuffer::from_slice(context, &x).unwrap();
        let mut y_device = DeviceBuffer::from_slice(context, &y).unwrap();
        let what = format!("{test} n = {n}, incx = {incx}, incy = {incy}");

        let mut result = DeviceBuffer::<T>::zeroed(context, 1).unwrap();
        blas.dot(n, &x_device, incx, &y_device, incy, &mut result).unwrap();
        stream.synchronize().unwrap();
        assert_close(&format!("{what} dot"), &result.to_vec().unwrap(), &[dot], tolerance);
        let host = blas.dot_host(n, &x_device, incx, &y_device, incy).unwrap();
        assert_close(&format!("{what} dot_host"), &[host], &[dot], tolerance);
        blas.nrm2(n, &x_device, incx, &mut result).unwrap();
        stream.synchronize().unwrap();
        assert_close(&format!("{what} nrm2"), &result.to_vec().unwrap(), &[norm], tolerance);
        let host = blas.nrm2_host(n, &x_device, incx).unwrap();
        assert_close(&format!("{what} nrm2_host"), &[host], &[norm], tolerance);

        // y = 0.5 x + y, then x = -2 x; elements between the strided ones stay.
        blas.axpy(n, 0.5, &x_device, incx, &mut y_device, incy).unwrap();
        let mut expected_y: Vec<f64> = y.iter().map(|v| v.to_f64()).collect();
        for i in 0..n {
            expected_y[i * incy] += 0.5 * xs[i];
        }
        let mut x_scaled = DeviceBuffer::from_slice(context, &x).unwrap();
        blas.scal(n, -2.0, &mut x_scaled, incx).unwrap();
        let mut expected_x: Vec<f64> = x.iter().map(|v| v.to_f64()).collect();
        for i in 0..n {
            expected_x[i * incx] *= -2.0;
        }
        stream.synchronize().unwrap();
        assert_close(
            &format!("{what} axpy"),
            &y_device.to_vec().unwrap(),
            &expected_y,
            T::TOLERANCE,
        );
        assert_close(
            &format!("{what} scal"),
            &x_scaled.to_vec().unwrap(),
            &expected_x,
            T::TOLERANCE,
        );
    }
    // Short operands and a zero increment are refused before any call.
    let x = DeviceBuffer::<T>::zeroed(context, 10).unwrap();
    let mut result = DeviceBuffer::<T>::zeroed(context, 1).unwrap();
    let error = blas.dot(11, &x, 1, &x, 1, &mut result).unwrap_err();
    assert!(matches!(error, Error::InvalidValue(_)), "{error}");
    let error = blas.nrm2(5, &x, 0, &mut result).unwrap_err();
    assert!(matches!(error, Error::InvalidValue(_)), "{error}");
}

#[test]
fn level1_f32() {
    level1_for::<f32>("level1_f32", 1e-4);
}

#[test]
fn level1_f64() {
    level1_for::<f64>("level1_f64", 1e-12);
}

#[test]
fn level1_f16() {
    // Sums of 1000 products rounded once to f16.
    level1_for::<f16>("level1_f16", 4e-3);
}

#[test]
fn level1_bf16() {
    level1_for::<bf16>("level1_bf16", 2e-2);
}

fn gemv_for<T: Host + GemvElement>(test: &str) {
    let Some(stream) = stream_or_skip(test) else {
        return;
    };
    let context = stream.context();
    let mut blas = Blas::new(&stream).unwrap();
    let (m, n, lda) = (23, 17, 20);
    for transpose in [false, true] {
        let mut g = Gemv::new(m, n).lda(lda).alpha(1.5).beta(-0.5);
        g.transpose = transpose;
        g.incx = 2;
        let (x_len, y_len) = if transpose { (m, n) } else { (n, m) };
        let a = values::<T>(span(m, n, lda), 9);
        let x = values::<T>((x_len - 1) * 2 + 1, 10);
        let y = values::<T>(y_len, 11);
        let expected: Vec<f64> = (0..y_len)
            .map(|i| {
                let sum: f64 = (0..x_len)
                    .map(|j| {
                        let a_ij = if transpose { a[j * lda + i] } else { a[i * lda + j] };
                        a_ij.to_f64() * x[j * 2].to_f64()
                    })
                    .sum();
                1.5 * sum - 0.5 * y[i].to_f64()
            })
            .collect();
        let a_device = DeviceBuffer::from_slice(context, &a).unwrap();
        let x_device = DeviceBuffer::from_slice(context, &x).unwrap();
        let mut y_device = DeviceBuffer::from_slice(context, &y).unwrap();
        blas.gemv(&g, &a_device, &x_device, &mut y_device).unwrap();
        stream.synchronize().unwrap();
        assert_close(
            &format!("{test} {g:?}"),
            &y_device.to_vec().unwrap(),
            &expected,
            T::TOLERANCE,
        );
    }
}

#[test]
fn gemv_f32() {
    gemv_for::<f32>("gemv_f32");
}

#[test]
fn gemv_f64() {
    gemv_for::<f64>("gemv_f64");
}

#[test]
fn dotc_conjugates_x() {
    let Some(stream) = stream_or_skip("dotc_conjugates_x") else {
        return;
    };
    let context = stream.context();
    let mut blas = Blas::new(&stream).unwrap();
    // x = [1+2j, 3-1j], y = [2-1j, 1+1j]: (1-2j)(2-1j) = -5j, (3+1j)(1+1j) = 2+4j, so 2-1j
    // (NumPy's vdot);
    // without the conjugate, (1+2j)(2-1j) + (3-1j)(1+1j) = (4+3j) + (4+2j) = 8+5j.
    let x = [
        num_complex::Complex::new(1.0f64, 2.0),
        num_complex::Complex::new(3.0, -1.0),
    ];
    let y = [
        num_complex::Complex::new(2.0f64, -1.0),
        num_complex::Complex::new(1.0, 1.0),
    ];
    let (x, y) = (
        DeviceBuffer::from_slice(context, &x).unwrap(),
        DeviceBuffer::from_slice(context, &y).unwrap(),
    );
    let mut result = DeviceBuffer::<num_complex::Complex<f64>>::zeroed(context, 1).unwrap();
    blas.dotc(2, &x, 1, &y, 1, &mut result).unwrap();
    stream.synchronize().unwrap();
    assert_eq!(result.to_vec().unwrap(), [num_complex::Complex::new(2.0, -1.0)]);
    blas.dot(2, &x, 1, &y, 1, &mut result).unwrap();
    stream.synchronize().unwrap();
    assert_eq!(result.to_vec().unwrap(), [num_complex::Complex::new(8.0, 5.0)]);
    // Every other element of a complex64 vector.
    let x: Vec<num_complex::Complex<f32>> = (0..6).map(|i| num_complex::Complex::new(i as f32, 1.0)).collect();
    let x = DeviceBuffer::from_slice(context, &x).unwrap();
    let mut result = DeviceBuffer::<num_complex::Complex<f32>>::zeroed(context, 1).unwrap();
    blas.dotc(3, &x, 2, &x, 2, &mut result).unwrap();
    stream.synchronize().unwrap();
    // |0+1j|^2 + |2+1j|^2 + |4+1j|^2 = 1 + 5 + 17.
    assert_eq!(result.to_vec().unwrap(), [num_complex::Complex::new(23.0, 0.0)]);
}

/// A complex element type built from and read as its two parts.
trait HostComplex: Element + PartialEq + std::fmt::Debug {
    fn new(re: f64, im: f64) -> Self;
    fn parts(self) -> (f64, f64);
}

impl HostComplex for num_complex::Complex<f32> {
    fn new(re: f64, im: f64) -> Self {
        num_complex::Complex::new(re as f32, im as f32)
    }
    fn parts(self) -> (f64, f64) {
        (f64::from(self.re), f64::from(self.im))
    }
}

impl HostComplex for num_complex::Complex<f64> {
    fn new(re: f64, im: f64) -> Self {
        num_complex::Complex::new(re, im)
    }
    fn parts(self) -> (f64, f64) {
        (self.re, self.im)
    }
}

/// dot and dotc of every other element of a complex vector, which cuBLAS executes in the
/// complex type itself (a real execution type is refused), against NumPy. (`nrm2`, `axpy` and
/// `scal` take real types only: see `RealElement`.)
fn level1_complex_for<T: HostComplex>(test: &str) {
    let Some(stream) = stream_or_skip(test) else {
        return;
    };
    let context = stream.context();
    let mut blas = Blas::new(&stream).unwrap();
    let complex = |values: &[(f64, f64)]| -> Vec<T> { values.iter().map(|&(re, im)| T::new(re, im)).collect() };
    // x[::2] = [1+2j, 2+4j]; the 9+9j between them are not read.
    let x = DeviceBuffer::from_slice(context, &complex(&[(1.0, 2.0), (9.0, 9.0), (2.0, 4.0), (9.0, 9.0)])).unwrap();
    let y = DeviceBuffer::from_slice(context, &complex(&[(1.0, -1.0), (0.0, 0.5)])).unwrap();
    // NumPy: dot(x[::2], y) = (1+2j)(1-1j) + (2+4j)(0.5j) = (3+1j) + (-2+1j) = 1+2j.
    assert_eq!(
        blas.dot_host(2, &x, 2, &y, 1).unwrap().parts(),
        (1.0, 2.0),
        "{test} dot"
    );
    // vdot: (1-2j)(1-1j) + (2-4j)(0.5j) = (-1-3j) + (2+1j) = 1-2j.
    let mut result = DeviceBuffer::from_slice(context, &complex(&[(7.0, 7.0)])).unwrap();
    blas.dotc(2, &x, 2, &y, 1, &mut result).unwrap();
    stream.synchronize().unwrap();
    assert_eq!(result.to_vec().unwrap()[0].parts(), (1.0, -2.0), "{test} dotc");
}

#[test]
fn level1_complex64() {
    level1_complex_for::<num_complex::Complex<f32>>("level1_complex64");
}

#[test]
fn level1_complex128() {
    level1_complex_for::<num_complex::Complex<f64>>("level1_complex128");
}
