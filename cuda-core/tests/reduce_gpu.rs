//! Reductions on a GPU against a host reference in `f64`: every built-in reduction over every
//! axis set (adjacent, not adjacent, all, none), with and without `keepdims`, for several
//! element types (f16 and bf16 included), shapes that take each kernel (rows, short rows,
//! columns, split axes, vector loads), views, NaN and ties, empty inputs, `item`, the axis form
//! of `ReductionKernel`, and the typed errors of bad input; and the device-wide
//! `algorithms::reduce` (init values, built-in and C++ operators, segments, runs of equal keys,
//! NaN, inf and -0.0, more than 2^31 elements). Without a driver or device each test prints
//! `skipped: <why>` and passes, unless `CUDA_REQUIRE_GPU=1`.

mod common;

use cuda_core::{Arg, Bool, DeviceArray, Element, Error, ExprOps, MemoryPool, ReductionKernel, Slice};
use cuda_driver::Stream;
use half::{bf16, f16};

fn close(a: f64, b: f64, tolerance: f64) -> bool {
    (a.is_nan() && b.is_nan()) || a == b || (a - b).abs() <= tolerance * (1.0 + b.abs())
}

/// Folds the values (and indices along the reduced axes) reduced into one output.
type Fold<'a> = &'a dyn Fn(&[(f64, usize)]) -> f64;

/// Reduces a row-major `shape` array along `axes` on the host: `fold` over each output's
/// elements in row-major order, given their values and their indices along the reduced axes
/// (row-major over those axes).
fn host_reduce(data: &[f64], shape: &[usize], axes: &[usize], fold: Fold<'_>) -> Vec<f64> {
    let kept: Vec<usize> = (0..shape.len()).filter(|a| !axes.contains(a)).collect();
    let reduced: Vec<usize> = (0..shape.len()).filter(|a| axes.contains(a)).collect();
    let outputs: usize = kept.iter().map(|&a| shape[a]).product();
    let count: usize = reduced.iter().map(|&a| shape[a]).product();
    let strides: Vec<usize> = (0..shape.len()).map(|a| shape[a + 1..].iter().product()).collect();
    let unravel = |mut index: usize, axes: &[usize]| -> Vec<(usize, usize)> {
        let mut coords = Vec::new();
        for &a in axes.iter().rev() {
            coords.push((a, index % shape[a]));
            index /= shape[a];
        }
        coords
    };
    (0..outputs)
        .map(|o| {
            let base: usize = unravel(o, &kept).iter().map(|&(a, c)| c * strides[a]).sum();
            let items: Vec<(f64, usize)> = (0..count)
                .map(|r| {
                    let offset: usize = unravel(r, &reduced).iter().map(|&(a, c)| c * strides[a]).sum();
                    (data[base + offset], r)
                })
                .collect();
            fold(&items)
        })
        .collect()
}

fn sum(items: &[(f64, usize)]) -> f64 {
    items.iter().map(|i| i.0).sum()
}
fn prod(items: &[(f64, usize)]) -> f64 {
    items.iter().map(|i| i.0).product()
}
fn mean(items: &[(f64, usize)]) -> f64 {
    sum(items) / items.len() as f64
}
fn extreme(items: &[(f64, usize)], greatest: bool) -> (f64, usize) {
    let mut best = items[0];
    for &item in &items[1..] {
        if best.0.is_nan() {
            break;
        }
        if item.0.is_nan() || (greatest && item.0 > best.0) || (!greatest && item.0 < best.0) {
            best = item;
        }
    }
    best
}

fn check<T: Element>(what: &str, got: &DeviceArray<T>, shape: &[usize], expected: &[f64], tolerance: f64) {
    assert_eq!(got.shape(), shape, "{what}: shape");
    let values = got.to_vec().unwrap();
    assert_eq!(values.len(), expected.len(), "{what}: length");
    for (i, (g, e)) in values.iter().zip(expected).enumerate() {
        assert!(
            close(g.to_f64(), *e, tolerance),
            "{what}: element {i} is {}, expected {e}",
            g.to_f64()
        );
    }
}

/// Every reduction of a `(3, 4, 5)` array of `T` along every axis set, against the host.
fn every_reduction<T: Element>(stream: &Stream, tolerance: f64) {
    let shape = [3usize, 4, 5];
    // Small values so products stay exact in every type; zeros so `all` varies; repeats so
    // `argmax` has ties.
    let host: Vec<T> = (0..60)
        .map(|i| T::from_f64([1.0, 2.0, 0.0, 1.0, 3.0, 1.0, 2.0][(i * 5 + i / 7) % 7]))
        .collect();
    let data: Vec<f64> = host.iter().map(|v| v.to_f64()).collect();
    let x = DeviceArray::from_slice(stream, &host).unwrap().reshape(shape).unwrap();
    let name = T::DTYPE;
    let axis_sets: [&[usize]; 8] = [&[0], &[1], &[2], &[0, 1], &[1, 2], &[0, 2], &[0, 1, 2], &[]];
    for axes in axis_sets {
        for keepdims in [false, true] {
            let out_shape: Vec<usize> = (0..3)
                .filter_map(|a| match (axes.contains(&a), keepdims) {
                    (false, _) => Some(shape[a]),
                    (true, true) => Some(1),
                    (true, false) => None,
                })
                .collect();
            let what = |op: &str| format!("{op} of {name} along {axes:?} keepdims={keepdims}");
            let expect = |fold: Fold<'_>| host_reduce(&data, &shape, axes, fold);
            check(
                &what("sum"),
                &x.sum_axes(axes, keepdims).unwrap(),
                &out_shape,
                &expect(&sum),
                tolerance,
            );
            // Products over at most 20 elements: the host's f64 and the device's type agree.
            if axes.len() < 3 {
                let p = x.slice(&[Slice::from(..2), Slice::from(..), Slice::from(..)]).unwrap();
                let p_data: Vec<f64> = data[..40].to_vec();
                let mut p_shape = out_shape.clone();
                if !axes.contains(&0) {
                    p_shape[0] = 2;
                }
                let expected = host_reduce(&p_data, &[2, 4, 5], axes, &prod);
                check(
                    &what("prod"),
                    &p.prod_axes(axes, keepdims).unwrap(),
                    &p_shape,
                    &expected,
                    tolerance,
                );
            }
            check(
                &what("mean"),
                &x.mean_axes(axes, keepdims).unwrap(),
                &out_shape,
                &expect(&mean),
                tolerance,
            );
            let max = expect(&|items| extreme(items, true).0);
            check(
                &what("max"),
                &x.max_axes(axes, keepdims).unwrap(),
                &out_shape,
                &max,
                0.0,
            );
            let min = expect(&|items| extreme(items, false).0);
            check(
                &what("min"),
                &x.min_axes(axes, keepdims).unwrap(),
                &out_shape,
                &min,
                0.0,
            );
            let all = expect(&|items| items.iter().all(|i| i.0 != 0.0) as u8 as f64);
            check(
                &what("all"),
                &x.all_axes(axes, keepdims).unwrap(),
                &out_shape,
                &all,
                0.0,
            );
            let any = expect(&|items| items.iter().any(|i| i.0 != 0.0) as u8 as f64);
            check(
                &what("any"),
                &x.any_axes(axes, keepdims).unwrap(),
                &out_shape,
                &any,
                0.0,
            );
            if let [axis] = axes {
                let argmax = expect(&|items| extreme(items, true).1 as f64);
                check(
                    &what("argmax"),
                    &x.argmax_axis(*axis, keepdims).unwrap(),
                    &out_shape,
                    &argmax,
                    0.0,
                );
                let argmin = expect(&|items| extreme(items, false).1 as f64);
                check(
                    &what("argmin"),
                    &x.argmin_axis(*axis, keepdims).unwrap(),
                    &out_shape,
                    &argmin,
                    0.0,
                );
            }
        }
    }
    let whole = |fold: Fold<'_>| host_reduce(&data, &shape, &[0, 1, 2], fold);
    check(
        &format!("sum of {name}"),
        &x.sum().unwrap(),
        &[],
        &whole(&sum),
        tolerance,
    );
    check(
        &format!("max of {name}"),
        &x.max().unwrap(),
        &[],
        &whole(&|i| extreme(i, true).0),
        0.0,
    );
    check(
        &format!("argmax of {name}"),
        &x.argmax().unwrap(),
        &[],
        &whole(&|i| extreme(i, true).1 as f64),
        0.0,
    );
    check(
        &format!("argmin of {name}"),
        &x.argmin().unwrap(),
        &[],
        &whole(&|i| extreme(i, false).1 as f64),
        0.0,
    );
    check(
        &format!("all of {name}"),
        &x.all().unwrap(),
        &[],
        &whole(&|i| i.iter().all(|v| v.0 != 0.0) as u8 as f64),
        0.0,
    );
}

#[test]
fn every_reduction_along_every_axis_set_matches_the_host() {
    let Some(device) = common::device_or_skip("every_reduction_along_every_axis_set_matches_the_host") else {
        return;
    };
    let stream = device.create_stream().unwrap();
    every_reduction::<f32>(&stream, 1e-6);
    every_reduction::<f64>(&stream, 1e-12);
    every_reduction::<i32>(&stream, 0.0);
    every_reduction::<u8>(&stream, 0.0);
    every_reduction::<i64>(&stream, 0.0);
    every_reduction::<f16>(&stream, 1e-3);
    every_reduction::<bf16>(&stream, 1e-2);
    every_reduction::<Bool>(&stream, 1e-12);
}

#[test]
fn large_axis_reductions_take_every_kernel_and_match_the_host() {
    let Some(device) = common::device_or_skip("large_axis_reductions_take_every_kernel_and_match_the_host") else {
        return;
    };
    let stream = device.create_stream().unwrap();
    // (rows, columns): long rows (a block each), short rows (a warp each), very short rows (a
    // thread each), few long rows (split), odd lengths (no vector loads), and one column.
    let shapes = [
        (1000usize, 3000usize),
        (5000, 100),
        (1 << 16, 3),
        (2, 1 << 22),
        (7, 100_003),
        (300_001, 1),
    ];
    for (rows, columns) in shapes {
        let host: Vec<f32> = (0..rows * columns)
            .map(|i| ((i * 7919) % 1001) as f32 / 1000.0)
            .collect();
        let data: Vec<f64> = host.iter().map(|&v| f64::from(v)).collect();
        let x = DeviceArray::from_slice(&stream, &host)
            .unwrap()
            .reshape([rows, columns])
            .unwrap();
        for axis in [0usize, 1] {
            let expected = host_reduce(&data, &[rows, columns], &[axis], &sum);
            let what = format!("sum of ({rows}, {columns}) along {axis}");
            let shape = [[columns], [rows]][axis];
            check(&what, &x.sum_axes([axis], false).unwrap(), &shape, &expected, 1e-5);
            let argmax = host_reduce(&data, &[rows, columns], &[axis], &|i| extreme(i, true).1 as f64);
            check(
                &format!("arg{what}"),
                &x.argmax_axis(axis, false).unwrap(),
                &shape,
                &argmax,
                0.0,
            );
        }
    }
}

#[test]
fn views_nan_ties_and_empty_inputs_follow_numpy() {
    let Some(device) = common::device_or_skip("views_nan_ties_and_empty_inputs_follow_numpy") else {
        return;
    };
    let stream = device.create_stream().unwrap();
    // A transposed and a stepped view reduce their logical elements.
    let host: Vec<f64> = (0..24).map(|i| (i * i % 11) as f64).collect();
    let x = DeviceArray::from_slice(&stream, &host)
        .unwrap()
        .reshape([4, 6])
        .unwrap();
    let t = x.transpose();
    let expected = host_reduce(&host, &[4, 6], &[0], &sum);
    check(
        "sum of a transposed view along 1",
        &t.sum_axes([1], false).unwrap(),
        &[6],
        &expected,
        1e-12,
    );
    let stepped = x.slice(&[Slice::from(..), Slice::from(1..).step(2)]).unwrap();
    let picked: Vec<f64> = (0..4).flat_map(|r| [1, 3, 5].map(|c| host[r * 6 + c])).collect();
    check(
        "max of a stepped view",
        &stepped.max().unwrap(),
        &[],
        &[picked.iter().cloned().fold(f64::MIN, f64::max)],
        0.0,
    );
    let broadcast = DeviceArray::from_slice(&stream, &[1.0f32, 2.0])
        .unwrap()
        .broadcast_to([3, 2])
        .unwrap();
    check(
        "sum of a broadcast view along 0",
        &broadcast.sum_axes([0], false).unwrap(),
        &[2],
        &[3.0, 6.0],
        0.0,
    );
    // NaN propagates through max and min; argmax and argmin give the first NaN; ties the first.
    let nan = DeviceArray::from_slice(&stream, &[1.0f32, f32::NAN, 3.0, f32::NAN]).unwrap();
    assert!(nan.max().unwrap().item().unwrap().is_nan());
    assert!(nan.min().unwrap().item().unwrap().is_nan());
    assert_eq!(nan.argmax().unwrap().item().unwrap(), 1);
    assert_eq!(nan.argmin().unwrap().item().unwrap(), 1);
    let ties = DeviceArray::from_slice(&stream, &[3i32, 1, 3, 1]).unwrap();
    assert_eq!(ties.argmax().unwrap().item().unwrap(), 0);
    assert_eq!(ties.argmin().unwrap().item().unwrap(), 1);
    // Integer sums widen: 200 + 100 in u8 is 300 in u64.
    let bytes = DeviceArray::from_slice(&stream, &[200u8, 100]).unwrap();
    assert_eq!(bytes.sum().unwrap().item().unwrap(), 300u64);
    assert_eq!(bytes.mean().unwrap().item().unwrap(), 150.0f64);
    // Empty inputs give the identity, or an error where there is none.
    let empty = DeviceArray::<f32>::zeros(&stream, [0]).unwrap();
    assert_eq!(empty.sum().unwrap().item().unwrap(), 0.0);
    assert_eq!(empty.prod().unwrap().item().unwrap(), 1.0);
    assert!(empty.mean().unwrap().item().unwrap().is_nan());
    assert_eq!(empty.all().unwrap().item().unwrap(), true);
    assert_eq!(empty.any().unwrap().item().unwrap(), false);
    for error in [empty.max().unwrap_err(), empty.argmin().unwrap_err()] {
        assert!(matches!(error, Error::InvalidValue(_)), "{error}");
        assert!(error.to_string().contains("no identity"), "{error}");
    }
    let wide = DeviceArray::<i32>::zeros(&stream, [3, 0]).unwrap();
    check(
        "sum of (3, 0) along 1",
        &wide.sum_axes([1], false).unwrap(),
        &[3],
        &[0.0; 3],
        0.0,
    );
    assert_eq!(wide.sum_axes([0], false).unwrap().shape(), [0]);
    assert!(
        wide.max_axes([0], false).unwrap().is_empty(),
        "no outputs, nothing to reduce"
    );
}

#[test]
fn item_and_bad_axes_are_typed_errors() {
    let Some(device) = common::device_or_skip("item_and_bad_axes_are_typed_errors") else {
        return;
    };
    let stream = device.create_stream().unwrap();
    let x = DeviceArray::from_slice(&stream, &[1.0f32, 2.0, 3.0, 4.0])
        .unwrap()
        .reshape([2, 2])
        .unwrap();
    let error = x.item().unwrap_err().to_string();
    assert!(error.contains("shape [2, 2] (4 elements)"), "{error}");
    assert_eq!(
        x.sum_axes([0], true)
            .unwrap()
            .slice(&[Slice::from(..), Slice::at(1)])
            .unwrap()
            .item()
            .unwrap(),
        6.0
    );
    let error = x.sum_axes([2], false).unwrap_err();
    assert!(matches!(error, Error::Axis { axis: 2, ndim: 2 }), "{error:?}");
    assert_eq!(error.to_string(), "axis 2 is out of bounds for array of dimension 2");
    let error = x.argmax_axis(5, false).unwrap_err().to_string();
    assert!(error.contains("axis 5 is out of bounds"), "{error}");
    assert!(matches!(
        x.argmax_axis(-3, false),
        Err(Error::Axis { axis: -3, ndim: 2 })
    ));
    assert!(x
        .mean_axes([1, 1], false)
        .unwrap_err()
        .to_string()
        .contains("repeated axis 1"));
    assert!(x
        .mean_axes([1, -1], false)
        .unwrap_err()
        .to_string()
        .contains("repeated axis -1"));
}

#[test]
fn reduction_kernels_have_an_axis_form() {
    let Some(device) = common::device_or_skip("reduction_kernels_have_an_axis_form") else {
        return;
    };
    let stream = device.create_stream().unwrap();
    let l2 = ReductionKernel::new("T x", "T y", "x * x", "a + b", "y = sqrt(a)", "0", "l2_axes", None).unwrap();
    // SAFETY: the expressions compute with the values given; `y = sqrt(a)` assigns the output
    // element it is given.
    let l2 = |args: &[Arg<'_>], axes: &[usize]| unsafe { l2.launch_axes(&stream, args, axes) };
    let host: Vec<f64> = (0..60).map(|i| (i % 7) as f64 - 3.0).collect();
    let x = DeviceArray::from_slice(&stream, &host)
        .unwrap()
        .reshape([3, 4, 5])
        .unwrap();
    for (axes, shape) in [
        (&[1usize][..], vec![3usize, 5]),
        (&[0, 2][..], vec![4]),
        (&[2][..], vec![3, 1, 1]),
    ] {
        let mut y = DeviceArray::<f64>::empty(&stream, shape.clone()).unwrap();
        if shape.len() == 3 {
            // keepdims-style outputs take 1 in place of the reduced axis; here (3, 1, 1) is not
            // (3, 4, 1), so the call is refused.
            let error = l2(&[Arg::from(&x), Arg::from(&mut y)], axes).unwrap_err();
            assert!(error.to_string().contains("gives [3, 4]"), "{error}");
            continue;
        }
        l2(&[Arg::from(&x), Arg::from(&mut y)], axes).unwrap();
        let expected: Vec<f64> = host_reduce(&host, &[3, 4, 5], axes, &|i| {
            i.iter().map(|v| v.0 * v.0).sum::<f64>().sqrt()
        });
        check(&format!("l2 along {axes:?}"), &y, &shape, &expected, 1e-12);
    }
    let mut kept = DeviceArray::<f64>::empty(&stream, [3, 4, 1]).unwrap();
    l2(&[Arg::from(&x), Arg::from(&mut kept)], &[2]).unwrap();
    let expected = host_reduce(&host, &[3, 4, 5], &[2], &|i| {
        i.iter().map(|v| v.0 * v.0).sum::<f64>().sqrt()
    });
    check("l2 along [2] keepdims", &kept, &[3, 4, 1], &expected, 1e-12);
    // The output may not be one of the inputs.
    let mut same = x.try_clone().unwrap();
    let alias = same.reshape([3, 4, 5]).unwrap();
    let error = l2(&[Arg::from(&alias), Arg::from(&mut same)], &[]).unwrap_err();
    assert!(error.to_string().contains("shares memory"), "{error}");
}

/// Allocations `f` makes from `stream`'s pool (hits and misses).
/// The fewest pool allocations `f` made in five runs: the pool is the context's, shared with the
/// tests running beside this one, whose allocations can only add to a run's count.
fn allocations<R>(stream: &Stream, f: impl Fn() -> R) -> (u64, R) {
    let pool = MemoryPool::for_context(stream.context());
    let count = || {
        let before = pool.stats();
        let result = f();
        let after = pool.stats();
        (after.hits + after.misses - before.hits - before.misses, result)
    };
    let (mut fewest, mut result) = count();
    for _ in 1..5 {
        let (made, again) = count();
        if made < fewest {
            (fewest, result) = (made, again);
        }
    }
    (fewest, result)
}

#[test]
fn reductions_of_expressions_are_one_kernel_without_a_temporary() {
    let Some(device) = common::device_or_skip("reductions_of_expressions_are_one_kernel_without_a_temporary") else {
        return;
    };
    let stream = device.create_stream().unwrap();
    let shape = [6usize, 70];
    let n = shape[0] * shape[1];
    let xs: Vec<f32> = (0..n).map(|i| ((i * 37) % 101) as f32 / 10.0 - 5.0).collect();
    let ys: Vec<f32> = (0..n).map(|i| ((i * 11) % 29) as f32 / 4.0 - 3.0).collect();
    let x = DeviceArray::from_slice(&stream, &xs).unwrap().reshape(shape).unwrap();
    let y = DeviceArray::from_slice(&stream, &ys).unwrap().reshape(shape).unwrap();
    let product: Vec<f64> = xs.iter().zip(&ys).map(|(&a, &b)| a as f64 * b as f64).collect();
    let distance: Vec<f64> = xs.iter().zip(&ys).map(|(&a, &b)| (a as f64 - b as f64).abs()).collect();
    let all = [0usize, 1];
    check(
        "sum(x*y)",
        &(&x * &y).sum().unwrap(),
        &[],
        &host_reduce(&product, &shape, &all, &sum),
        1e-5,
    );
    check(
        "max(|x-y|, axis 1)",
        &(&x - &y).abs().max_axes([1], false).unwrap(),
        &[6],
        &host_reduce(&distance, &shape, &[1], &|v| extreme(v, true).0),
        // x - y rounds to f32 on the device, as NumPy's float32 subtraction does.
        1e-6,
    );
    check(
        "mean(x*y, axis 0, keepdims)",
        &(&x * &y).mean_axes([0], true).unwrap(),
        &[1, 70],
        &host_reduce(&product, &shape, &[0], &mean),
        1e-5,
    );
    check(
        "min(x-y)",
        &(&x - &y).min().unwrap(),
        &[],
        &[xs.iter()
            .zip(&ys)
            .map(|(&a, &b)| a as f64 - b as f64)
            .fold(f64::INFINITY, f64::min)],
        0.0,
    );
    let scaled: Vec<f64> = xs.iter().map(|&a| (a as f64 * 0.5).abs() + 1.0).collect();
    check(
        "prod(|x*0.5|+1, axis 0)",
        &((&x * 0.5).abs() + 1.0).prod_axes([0], false).unwrap(),
        &[70],
        &host_reduce(&scaled, &shape, &[0], &prod),
        1e-5,
    );
    let positive = |v: f64| if v > 0.0 { 1.0 } else { 0.0 };
    let gt: Vec<f64> = xs.iter().map(|&a| positive(a as f64)).collect();
    check("any(x > 0)", &x.gt(0.0).any().unwrap(), &[], &[1.0], 0.0);
    check("all(x > -6)", &x.gt(-6.0).all().unwrap(), &[], &[1.0], 0.0);
    check(
        "all(x > 0, axis 1)",
        &x.gt(0.0).all_axes([1], false).unwrap(),
        &[6],
        &host_reduce(&gt, &shape, &[1], &|v| v.iter().all(|p| p.0 != 0.0) as u8 as f64),
        0.0,
    );
    let argmax = (&x * &y).argmax().unwrap().item().unwrap();
    let first_greatest = product
        .iter()
        .enumerate()
        .fold(0, |best, (i, &v)| if v > product[best] { i } else { best });
    assert_eq!(argmax as usize, first_greatest);
    let argmin = (&x - &y).argmin_axis(1, false).unwrap();
    assert_eq!(argmin.shape(), [6]);

    // No temporary: as many allocations (output and partials) as reducing an array.
    let _ = (&x * &y).sum().unwrap();
    let (plain, _) = allocations(&stream, || x.sum().unwrap());
    let (fused, _) = allocations(&stream, || (&x * &y).sum().unwrap());
    assert_eq!(
        fused, plain,
        "a reduction of an expression allocates only its output and partials"
    );
    let (plain, _) = allocations(&stream, || x.max_axes([1], false).unwrap());
    let (fused, _) = allocations(&stream, || (&x - &y).abs().max_axes([1], false).unwrap());
    assert_eq!(fused, plain);

    // Broadcast operands: evaluated first, still the right values.
    let row = DeviceArray::from_slice(&stream, &ys[..70]).unwrap();
    let broadcast: Vec<f64> = (0..n).map(|i| xs[i] as f64 * ys[i % 70] as f64).collect();
    check(
        "sum(x*row, axis 1)",
        &(&x * &row).sum_axes([1], false).unwrap(),
        &[6],
        &host_reduce(&broadcast, &shape, &[1], &sum),
        1e-5,
    );
    // Empty and typed errors as for arrays.
    let empty = DeviceArray::<f32>::zeros(&stream, [0usize, 3]).unwrap();
    check("sum of nothing", &(&empty * 2.0).sum().unwrap(), &[], &[0.0], 0.0);
    assert!(matches!((&empty * 2.0).max(), Err(Error::InvalidValue(_))));
    assert!(matches!(
        (&x * 2.0).sum_axes([2], false),
        Err(Error::Axis { axis: 2, ndim: 2 })
    ));
    let u = DeviceArray::from_slice(&stream, &[1u8, 2]).unwrap();
    assert!(matches!((&u + 300).sum(), Err(Error::InvalidValue(_))));
    // f16 products accumulate in f32.
    let h = DeviceArray::from_slice(&stream, &[f16::from_f32(0.5); 1000]).unwrap();
    check("sum(h*h)", &(&h * &h).sum().unwrap(), &[], &[250.0], 1e-3);
}

fn host_var(values: &[(f64, usize)], ddof: usize) -> f64 {
    let n = values.len() as f64;
    let mean = values.iter().map(|v| v.0).sum::<f64>() / n;
    values.iter().map(|v| (v.0 - mean).powi(2)).sum::<f64>() / (n - ddof as f64).max(0.0)
}

#[test]
fn statistics_match_the_host() {
    let Some(device) = common::device_or_skip("statistics_match_the_host") else {
        return;
    };
    let stream = device.create_stream().unwrap();
    let shape = [5usize, 3, 200];
    let n: usize = shape.iter().product();
    // f32 data around 1e4 with a spread of about 1: a sum of squares in f32 would lose it all.
    let xs: Vec<f32> = (0..n)
        .map(|i| 1.0e4 + ((i * 7919) % 1000) as f32 / 500.0 - 1.0)
        .collect();
    let host: Vec<f64> = xs.iter().map(|&v| v as f64).collect();
    let x = DeviceArray::from_slice(&stream, &xs).unwrap().reshape(shape).unwrap();
    for ddof in [0usize, 1] {
        check(
            "var",
            &x.var(ddof).unwrap(),
            &[],
            &host_reduce(&host, &shape, &[0, 1, 2], &|v| host_var(v, ddof)),
            1e-5,
        );
        for axes in [&[0usize][..], &[2], &[0, 2], &[1]] {
            check(
                &format!("var along {axes:?}, ddof {ddof}"),
                &x.var_axes(axes, false, ddof).unwrap(),
                &reduced(&shape, axes),
                &host_reduce(&host, &shape, axes, &|v| host_var(v, ddof)),
                1e-5,
            );
            check(
                &format!("std along {axes:?}, ddof {ddof}"),
                &x.std_axes(axes, true, ddof).unwrap(),
                &kept(&shape, axes),
                &host_reduce(&host, &shape, axes, &|v| host_var(v, ddof).sqrt()),
                1e-5,
            );
        }
    }
    // Expressions, f16, integers (f64 results), one element with ddof 1 (NaN), empty (NaN).
    let centred: Vec<f64> = host.iter().map(|v| (v - 1.0e4) * 2.0).collect();
    check(
        "var of an expression",
        &((&x - 1.0e4) * 2.0).var(0).unwrap(),
        &[],
        &[host_var(&centred.iter().map(|&v| (v, 0)).collect::<Vec<_>>(), 0)],
        1e-4,
    );
    let h = DeviceArray::from_slice(&stream, &[f16::from_f32(1.0), f16::from_f32(3.0)]).unwrap();
    check("var f16", &h.var(0).unwrap(), &[], &[1.0], 0.0);
    let i = DeviceArray::from_slice(&stream, &[1i32, 2, 3, 4]).unwrap();
    assert_eq!(i.std(1).unwrap().dtype(), cuda_core::DType::F64);
    check("var i32", &i.var(1).unwrap(), &[], &[5.0 / 3.0], 1e-12);
    let one = DeviceArray::from_slice(&stream, &[2.0f64]).unwrap();
    assert!(one.var(1).unwrap().item().unwrap().is_nan());
    let empty = DeviceArray::<f32>::zeros(&stream, 0).unwrap();
    assert!(empty.var(0).unwrap().item().unwrap().is_nan());
    assert!(matches!(
        x.var_axes([3], false, 0),
        Err(Error::Axis { axis: 3, ndim: 3 })
    ));

    // NaN-aware reductions.
    let nan = f32::NAN;
    let v = DeviceArray::from_slice(&stream, &[1.0f32, nan, 3.0, -2.0, nan, nan])
        .unwrap()
        .reshape([2, 3])
        .unwrap();
    assert_eq!(v.nansum().unwrap().item().unwrap(), 2.0);
    assert_eq!(v.nanmax().unwrap().item().unwrap(), 3.0);
    assert_eq!(v.nanmin().unwrap().item().unwrap(), -2.0);
    assert!((v.nanmean().unwrap().item().unwrap() - 2.0 / 3.0).abs() < 1e-6);
    assert_eq!(v.nansum_axes([1], false).unwrap().to_vec().unwrap(), [4.0, -2.0]);
    let columns = v.nanmax_axes([0], false).unwrap().to_vec().unwrap();
    assert_eq!((columns[0], columns[2]), (1.0, 3.0));
    assert!(columns[1].is_nan(), "all NaN: NaN");
    let means = v.nanmean_axes([0], false).unwrap().to_vec().unwrap();
    assert!(means[1].is_nan() && means[0] == -0.5 && means[2] == 3.0, "{means:?}");
    assert_eq!(v.count_nonzero().unwrap().item().unwrap(), 6, "NaN is nonzero");
    let ints = DeviceArray::from_slice(&stream, &[0u8, 5, 0, 7, 250, 1])
        .unwrap()
        .reshape([2, 3])
        .unwrap();
    assert_eq!(ints.count_nonzero_axes([1], false).unwrap().to_vec().unwrap(), [1, 3]);
    assert_eq!(ints.nanmax().unwrap().item().unwrap(), 250);
    assert_eq!(ints.ptp().unwrap().item().unwrap(), 250);
    assert_eq!(ints.ptp_axes([1], false).unwrap().to_vec().unwrap(), [5, 249]);
    assert!(matches!(empty.nanmax(), Err(Error::InvalidValue(_))));
    assert_eq!(empty.nansum().unwrap().item().unwrap(), 0.0);
    // A strided view.
    let t = x.transpose();
    check(
        "var of a transposed view",
        &t.var_axes([0], false, 0).unwrap(),
        &[3, 5],
        &{
            let by_row = host_reduce(&host, &shape, &[2], &|v| host_var(v, 0));
            (0..15).map(|k| by_row[(k % 5) * 3 + k / 5]).collect::<Vec<_>>()
        },
        1e-5,
    );
}

fn reduced(shape: &[usize], axes: &[usize]) -> Vec<usize> {
    (0..shape.len())
        .filter(|a| !axes.contains(a))
        .map(|a| shape[a])
        .collect()
}

fn kept(shape: &[usize], axes: &[usize]) -> Vec<usize> {
    (0..shape.len())
        .map(|a| if axes.contains(&a) { 1 } else { shape[a] })
        .collect()
}

/// `algorithms::reduce::reduce` of `T` with each built-in operation and an init value against
/// a host fold, for sizes around the tile (2048) and many tiles; values small enough that sums
/// are exact in every type wide enough for them.
fn device_reduce_of<T: Element>(stream: &Stream, sizes: &[usize], tolerance: f64) {
    use cuda_core::algorithms::reduce::reduce;
    use cuda_core::algorithms::scan::ScanOp;
    for &n in sizes {
        let data: Vec<T> = (0..n).map(|i| T::from_f64(((i * 7) % 5) as f64)).collect();
        let host: Vec<f64> = data.iter().map(|&v| v.to_f64()).collect();
        let x = DeviceArray::from_slice(stream, &data).unwrap();
        let what = |op: &str| format!("reduce {op} of {n} {}", T::DTYPE);
        let mut sum = DeviceArray::<T::Sum>::zeros(stream, 1).unwrap();
        reduce::<T, T::Sum>(stream, &x, &mut sum, ScanOp::Sum, T::Sum::from_f64(1.0)).unwrap();
        let want = 1.0 + host.iter().sum::<f64>();
        let got = sum.to_vec().unwrap()[0].to_f64();
        assert!(
            close(got, want, tolerance),
            "{}: {got}, the host gives {want}",
            what("sum")
        );
        // Min and max into T with an init inside the values' range, so both the init and the
        // elements can win.
        let mut out = DeviceArray::<T>::zeros(stream, 1).unwrap();
        reduce::<T, T>(stream, &x, &mut out, ScanOp::Max, T::from_f64(1.0)).unwrap();
        let want = host.iter().fold(1.0f64, |a, &b| a.max(b));
        assert_eq!(out.to_vec().unwrap()[0].to_f64(), want, "{}", what("max"));
        reduce::<T, T>(stream, &x, &mut out, ScanOp::Min, T::from_f64(1.0)).unwrap();
        let want = host.iter().fold(1.0f64, |a, &b| a.min(b));
        assert_eq!(out.to_vec().unwrap()[0].to_f64(), want, "{}", what("min"));
    }
    // A product of ones and a few twos (all ones as `Bool`): exact in every type.
    let n = 5000usize;
    let data: Vec<T> = (0..n)
        .map(|i| T::from_f64(if i % 1000 == 999 { 2.0 } else { 1.0 }))
        .collect();
    let x = DeviceArray::from_slice(stream, &data).unwrap();
    let mut out = DeviceArray::<T::Sum>::zeros(stream, 1).unwrap();
    cuda_core::algorithms::reduce::reduce::<T, T::Sum>(
        stream,
        &x,
        &mut out,
        cuda_core::algorithms::scan::ScanOp::Prod,
        T::Sum::from_f64(3.0),
    )
    .unwrap();
    let want = 3.0 * data.iter().map(|&v| v.to_f64()).product::<f64>();
    assert_eq!(out.to_vec().unwrap()[0].to_f64(), want, "reduce prod of {}", T::DTYPE);
}

#[test]
fn device_reduce_matches_the_host_for_every_type() {
    let Some(device) = common::device_or_skip("device_reduce_matches_the_host_for_every_type") else {
        return;
    };
    let stream = device.create_stream().unwrap();
    let sizes = [0, 1, 2, 31, 255, 2047, 2048, 2049, 4096, 100_003, 3_000_001];
    device_reduce_of::<i8>(&stream, &sizes, 0.0);
    device_reduce_of::<i16>(&stream, &sizes, 0.0);
    device_reduce_of::<i32>(&stream, &sizes, 0.0);
    device_reduce_of::<i64>(&stream, &sizes, 0.0);
    device_reduce_of::<u8>(&stream, &sizes, 0.0);
    device_reduce_of::<u16>(&stream, &sizes, 0.0);
    device_reduce_of::<u32>(&stream, &sizes, 0.0);
    device_reduce_of::<u64>(&stream, &sizes, 0.0);
    device_reduce_of::<f32>(&stream, &sizes, 0.0);
    device_reduce_of::<f64>(&stream, &sizes, 0.0);
    device_reduce_of::<Bool>(&stream, &sizes, 0.0);
    // Sums of up to 2049 values of at most 4 are exact in `float` and rounded once.
    device_reduce_of::<f16>(&stream, &[0, 1, 31, 2048, 2049], 1e-3);
    device_reduce_of::<bf16>(&stream, &[0, 1, 31, 2048, 2049], 8e-3);
}

#[test]
fn device_reduce_follows_numpy_on_nan_inf_and_signed_zero() {
    use cuda_core::algorithms::reduce::reduce;
    use cuda_core::algorithms::scan::ScanOp;
    let Some(device) = common::device_or_skip("device_reduce_follows_numpy_on_nan_inf_and_signed_zero") else {
        return;
    };
    let stream = device.create_stream().unwrap();
    let one = |data: &[f32], op: ScanOp, init: f32| -> f32 {
        let x = DeviceArray::from_slice(&stream, data).unwrap();
        let mut out = DeviceArray::<f32>::zeros(&stream, 1).unwrap();
        reduce::<f32, f32>(&stream, &x, &mut out, op, init).unwrap();
        out.to_vec().unwrap()[0]
    };
    // NaN propagates through min and max wherever it is (np.min, np.max), init included.
    let mut long = vec![1.0f32; 100_003];
    long[77_777] = f32::NAN;
    assert!(one(&long, ScanOp::Min, 0.0).is_nan());
    assert!(one(&long, ScanOp::Max, 0.0).is_nan());
    assert!(one(&[1.0, 2.0], ScanOp::Max, f32::NAN).is_nan());
    assert!(one(&[f32::INFINITY, f32::NEG_INFINITY], ScanOp::Sum, 0.0).is_nan());
    assert_eq!(one(&[f32::INFINITY, 1.0], ScanOp::Sum, 0.0), f32::INFINITY);
    assert_eq!(one(&[3.0, f32::NEG_INFINITY], ScanOp::Min, 0.0), f32::NEG_INFINITY);
    // -0.0 keeps its sign through a max from -inf and a sum with -0.0.
    let max = one(&[-0.0], ScanOp::Max, f32::NEG_INFINITY);
    assert!(max == 0.0 && max.is_sign_negative(), "{max}");
    let sum = one(&[-0.0, -0.0], ScanOp::Sum, -0.0);
    assert!(sum == 0.0 && sum.is_sign_negative(), "{sum}");
    // An empty input gives init, NaN included.
    assert_eq!(one(&[], ScanOp::Sum, 5.0), 5.0);
    assert!(one(&[], ScanOp::Max, f32::NAN).is_nan());
}

/// The C++ operator "the first non-zero" is associative but not commutative: the reduction
/// must keep the elements' order across threads, warps, tiles and blocks.
#[test]
fn device_reduce_with_an_operator_keeps_the_order() {
    use cuda_core::algorithms::reduce::{ReduceOperator, Segments};
    let Some(device) = common::device_or_skip("device_reduce_with_an_operator_keeps_the_order") else {
        return;
    };
    let stream = device.create_stream().unwrap();
    let first = ReduceOperator::new("first_nonzero", "a != 0 ? a : b", "0").unwrap();
    for (n, at) in [
        (1usize, 0usize),
        (2048, 2047),
        (2049, 2048),
        (100_003, 70_001),
        (5_000_000, 4_321_987),
    ] {
        let mut data = vec![0i32; n];
        data[at] = 5;
        for later in (at + 1..n).step_by(997) {
            data[later] = 7;
        }
        let x = DeviceArray::from_slice(&stream, &data).unwrap();
        let mut out = DeviceArray::<i64>::zeros(&stream, 1).unwrap();
        // SAFETY: the operator only computes with `a` and `b`.
        unsafe { first.reduce::<i32, i64>(&stream, &x, &mut out, 0).unwrap() };
        assert_eq!(out.to_vec().unwrap(), [5], "first non-zero of {n} at {at}");
        // The init comes first.
        unsafe { first.reduce::<i32, i64>(&stream, &x, &mut out, 9).unwrap() };
        assert_eq!(out.to_vec().unwrap(), [9], "init before the elements, {n}");
    }
    // Segments: rows of 3000 (two tiles each), each row's first non-zero.
    let (rows, len) = (7usize, 3000usize);
    let mut data = vec![0i32; rows * len];
    for r in 0..rows {
        data[r * len + (r * 431) % len] = r as i32 + 1;
        data[r * len + len - 1] = 100;
    }
    let x = DeviceArray::from_slice(&stream, &data).unwrap();
    let mut out = DeviceArray::<i32>::zeros(&stream, rows).unwrap();
    // SAFETY: as above.
    unsafe {
        first
            .reduce_segments::<i32, i32>(&stream, &x, Segments::Rows(len), &mut out, 0)
            .unwrap()
    };
    let want: Vec<i32> = (0..rows)
        .map(|r| if (r * 431) % len == len - 1 { 100 } else { r as i32 + 1 })
        .collect();
    assert_eq!(out.to_vec().unwrap(), want);
}

#[test]
fn device_segmented_reduce_matches_the_host() {
    use cuda_core::algorithms::reduce::{reduce, reduce_segments, Segments};
    use cuda_core::algorithms::scan::ScanOp;
    let Some(device) = common::device_or_skip("device_segmented_reduce_matches_the_host") else {
        return;
    };
    let stream = device.create_stream().unwrap();
    let n = 10_007usize;
    let data: Vec<i32> = (0..n).map(|i| (i % 13) as i32 - 6).collect();
    let x = DeviceArray::from_slice(&stream, &data).unwrap();
    // Rows: the last is shorter; rows of one element, of every element, longer than the input.
    for len in [1usize, 100, 2048, 5000, n, n + 5] {
        let count = n.div_ceil(len);
        let mut out = DeviceArray::<i64>::zeros(&stream, count).unwrap();
        reduce_segments::<i32, i64>(&stream, &x, Segments::Rows(len), &mut out, ScanOp::Sum, 10).unwrap();
        let want: Vec<i64> = data
            .chunks(len)
            .map(|row| 10 + row.iter().map(|&v| i64::from(v)).sum::<i64>())
            .collect();
        assert_eq!(out.to_vec().unwrap(), want, "sums of rows of {len}");
        let mut out = DeviceArray::<i32>::zeros(&stream, count).unwrap();
        reduce_segments::<i32, i32>(&stream, &x, Segments::Rows(len), &mut out, ScanOp::Min, 100).unwrap();
        let want: Vec<i32> = data.chunks(len).map(|row| *row.iter().min().unwrap()).collect();
        assert_eq!(out.to_vec().unwrap(), want, "minima of rows of {len}");
    }
    // Offsets: ordinary, empty, reversed, below 0 and past the end (clamped into [0, n]).
    let offsets = [0i64, 5, 5, 3, 20_000, -4, 9_000, n as i64];
    let bounds = DeviceArray::from_slice(&stream, &offsets).unwrap();
    let mut out = DeviceArray::<i64>::zeros(&stream, offsets.len() - 1).unwrap();
    reduce_segments::<i32, i64>(&stream, &x, Segments::Offsets(&bounds), &mut out, ScanOp::Sum, 1000).unwrap();
    let clamp = |o: i64| o.clamp(0, n as i64) as usize;
    let want: Vec<i64> = offsets
        .windows(2)
        .map(|w| {
            let (b, e) = (clamp(w[0]), clamp(w[1]));
            1000 + if e > b {
                data[b..e].iter().map(|&v| i64::from(v)).sum::<i64>()
            } else {
                0
            }
        })
        .collect();
    assert_eq!(out.to_vec().unwrap(), want, "sums by offsets");
    // Typed errors: no room for the result, an output overlapping the input, rows of 0, no
    // offsets, too few outputs for the segments.
    let mut none = DeviceArray::<i64>::zeros(&stream, 0).unwrap();
    let error = reduce::<i32, i64>(&stream, &x, &mut none, ScanOp::Sum, 0);
    assert!(matches!(error, Err(Error::InvalidValue(_))), "{error:?}");
    let mut alias = x.reshape_view([n]).unwrap();
    let error = reduce::<i32, i32>(&stream, &x, &mut alias, ScanOp::Sum, 0);
    assert!(matches!(error, Err(Error::InvalidValue(_))), "{error:?}");
    let mut out = DeviceArray::<i64>::zeros(&stream, 4).unwrap();
    let error = reduce_segments::<i32, i64>(&stream, &x, Segments::Rows(0), &mut out, ScanOp::Sum, 0);
    assert!(matches!(error, Err(Error::InvalidValue(_))), "{error:?}");
    let no_bounds = DeviceArray::<i64>::zeros(&stream, 0).unwrap();
    let error = reduce_segments::<i32, i64>(&stream, &x, Segments::Offsets(&no_bounds), &mut out, ScanOp::Sum, 0);
    assert!(matches!(error, Err(Error::InvalidValue(_))), "{error:?}");
    let error = reduce_segments::<i32, i64>(&stream, &x, Segments::Rows(100), &mut out, ScanOp::Sum, 0);
    assert!(matches!(error, Err(Error::InvalidValue(_))), "{error:?}");
}

/// More than 2^31 elements: 64-bit indices through both passes.
#[test]
fn device_reduce_of_more_than_2_to_the_31_elements() {
    use cuda_core::algorithms::reduce::{reduce, reduce_segments, Segments};
    use cuda_core::algorithms::scan::ScanOp;
    let Some(device) = common::device_or_skip("device_reduce_of_more_than_2_to_the_31_elements") else {
        return;
    };
    let stream = device.create_stream().unwrap();
    let n = (1usize << 31) + 3;
    let x = DeviceArray::<u8>::ones(&stream, [n]).unwrap();
    let mut out = DeviceArray::<u64>::zeros(&stream, 1).unwrap();
    reduce::<u8, u64>(&stream, &x, &mut out, ScanOp::Sum, 2).unwrap();
    assert_eq!(out.to_vec().unwrap(), [n as u64 + 2]);
    // Two rows: the second starts past 2^31.
    let mut rows = DeviceArray::<u64>::zeros(&stream, 2).unwrap();
    reduce_segments::<u8, u64>(&stream, &x, Segments::Rows((1 << 31) + 1), &mut rows, ScanOp::Sum, 0).unwrap();
    assert_eq!(rows.to_vec().unwrap(), [(1u64 << 31) + 1, 2]);
}

/// `reduce_by_key` against a host fold of each run of equal keys (NaNs equal): sums (counts by
/// key with ones), minima and maxima, runs of varied lengths across tiles and blocks, NaN and
/// -0.0, a C++ operator that is not commutative, and the typed errors.
#[test]
fn device_reduce_by_key_matches_the_host() {
    use cuda_core::algorithms::reduce::{reduce_by_key, ReduceOperator};
    use cuda_core::algorithms::scan::ScanOp;
    let Some(device) = common::device_or_skip("device_reduce_by_key_matches_the_host") else {
        return;
    };
    let stream = device.create_stream().unwrap();
    let same = |a: f64, b: f64| a == b || (a.is_nan() && b.is_nan());
    for target in [1usize, 2, 2047, 2049, 300_000] {
        let mut keys: Vec<f32> = Vec::with_capacity(target);
        let (mut run, mut length) = (0usize, 1usize);
        while keys.len() < target {
            let take = length.min(target - keys.len());
            let key = if run % 11 == 5 { f32::NAN } else { (run % 40) as f32 };
            keys.extend(std::iter::repeat(key).take(take));
            run += 1;
            length = length * 7 % 5001 + 1;
        }
        let values: Vec<i32> = (0..target).map(|i| (i % 17) as i32 - 8).collect();
        let starts: Vec<usize> = (0..target)
            .filter(|&i| i == 0 || !same(f64::from(keys[i]), f64::from(keys[i - 1])))
            .collect();
        let bounds: Vec<(usize, usize)> = starts
            .iter()
            .enumerate()
            .map(|(r, &s)| (s, starts.get(r + 1).copied().unwrap_or(target)))
            .collect();
        let k = DeviceArray::from_slice(&stream, &keys).unwrap();
        let v = DeviceArray::from_slice(&stream, &values).unwrap();
        let mut unique_keys = DeviceArray::<f32>::zeros(&stream, target).unwrap();
        let mut count = DeviceArray::<u64>::zeros(&stream, 1).unwrap();
        let what = format!("reduce_by_key of {target}");
        let mut sums = DeviceArray::<i64>::zeros(&stream, target).unwrap();
        reduce_by_key::<f32, i32, i64>(
            &stream,
            (&k, &v),
            (&mut unique_keys, &mut sums),
            &mut count,
            ScanOp::Sum,
        )
        .unwrap();
        let runs = count.to_vec().unwrap()[0] as usize;
        assert_eq!(runs, starts.len(), "{what}: runs");
        let got_keys = unique_keys.to_vec().unwrap();
        for (r, &s) in starts.iter().enumerate() {
            assert!(same(f64::from(got_keys[r]), f64::from(keys[s])), "{what}: key {r}");
        }
        let want: Vec<i64> = bounds
            .iter()
            .map(|&(b, e)| values[b..e].iter().map(|&x| i64::from(x)).sum())
            .collect();
        assert_eq!(&sums.to_vec().unwrap()[..runs], want.as_slice(), "{what}: sums");
        let mut maxima = DeviceArray::<i32>::zeros(&stream, target).unwrap();
        reduce_by_key::<f32, i32, i32>(
            &stream,
            (&k, &v),
            (&mut unique_keys, &mut maxima),
            &mut count,
            ScanOp::Max,
        )
        .unwrap();
        let want: Vec<i32> = bounds
            .iter()
            .map(|&(b, e)| *values[b..e].iter().max().unwrap())
            .collect();
        assert_eq!(&maxima.to_vec().unwrap()[..runs], want.as_slice(), "{what}: maxima");
        // Counts by key: sums of ones.
        let ones = DeviceArray::<u8>::ones(&stream, [target]).unwrap();
        let mut counts = DeviceArray::<u64>::zeros(&stream, target).unwrap();
        reduce_by_key::<f32, u8, u64>(
            &stream,
            (&k, &ones),
            (&mut unique_keys, &mut counts),
            &mut count,
            ScanOp::Sum,
        )
        .unwrap();
        let want: Vec<u64> = bounds.iter().map(|&(b, e)| (e - b) as u64).collect();
        assert_eq!(&counts.to_vec().unwrap()[..runs], want.as_slice(), "{what}: counts");
        // The first non-zero value of each run: the order of the values is kept.
        let first = ReduceOperator::new("first_nonzero", "a != 0 ? a : b", "0").unwrap();
        let mut firsts = DeviceArray::<i32>::zeros(&stream, target).unwrap();
        // SAFETY: the operator only computes with `a` and `b`.
        unsafe {
            first
                .reduce_by_key::<f32, i32, i32>(&stream, (&k, &v), (&mut unique_keys, &mut firsts), &mut count)
                .unwrap()
        };
        let want: Vec<i32> = bounds
            .iter()
            .map(|&(b, e)| values[b..e].iter().copied().find(|&x| x != 0).unwrap_or(0))
            .collect();
        assert_eq!(
            &firsts.to_vec().unwrap()[..runs],
            want.as_slice(),
            "{what}: first non-zero"
        );
    }
    // NaN values propagate through max; -0.0 keeps its sign through a sum.
    let k = DeviceArray::from_slice(&stream, &[1i64, 1, 2, 2, 3]).unwrap();
    let v = DeviceArray::from_slice(&stream, &[f64::NAN, 1.0, -0.0, -0.0, f64::INFINITY]).unwrap();
    let mut unique_keys = DeviceArray::<i64>::zeros(&stream, 5).unwrap();
    let mut out = DeviceArray::<f64>::zeros(&stream, 5).unwrap();
    let mut count = DeviceArray::<u64>::zeros(&stream, 1).unwrap();
    reduce_by_key::<i64, f64, f64>(&stream, (&k, &v), (&mut unique_keys, &mut out), &mut count, ScanOp::Max).unwrap();
    let got = out.to_vec().unwrap();
    assert_eq!(count.to_vec().unwrap(), [3]);
    assert!(got[0].is_nan() && got[2] == f64::INFINITY, "{got:?}");
    reduce_by_key::<i64, f64, f64>(&stream, (&k, &v), (&mut unique_keys, &mut out), &mut count, ScanOp::Sum).unwrap();
    let got = out.to_vec().unwrap();
    assert!(got[1] == 0.0 && got[1].is_sign_negative(), "{got:?}");
    assert_eq!(&unique_keys.to_vec().unwrap()[..3], [1, 2, 3]);
    // Typed errors: values of another length, outputs too small, an output overlapping the
    // values.
    let short = DeviceArray::from_slice(&stream, &[1.0f64; 4]).unwrap();
    let error = reduce_by_key::<i64, f64, f64>(
        &stream,
        (&k, &short),
        (&mut unique_keys, &mut out),
        &mut count,
        ScanOp::Sum,
    );
    assert!(matches!(error, Err(Error::InvalidValue(_))), "{error:?}");
    let mut small = DeviceArray::<f64>::zeros(&stream, 4).unwrap();
    let error = reduce_by_key::<i64, f64, f64>(
        &stream,
        (&k, &v),
        (&mut unique_keys, &mut small),
        &mut count,
        ScanOp::Sum,
    );
    assert!(matches!(error, Err(Error::InvalidValue(_))), "{error:?}");
    let mut alias = v.reshape_view([5]).unwrap();
    let error = reduce_by_key::<i64, f64, f64>(
        &stream,
        (&k, &v),
        (&mut unique_keys, &mut alias),
        &mut count,
        ScanOp::Sum,
    );
    assert!(matches!(error, Err(Error::InvalidValue(_))), "{error:?}");
}
