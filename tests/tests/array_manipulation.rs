//! The shape rules and errors of cuda-core's manipulation and indexing chapters, against the
//! stand-in driver: views (split, moveaxis, atleast_*d, broadcast_arrays, index_axis,
//! diagonal, reshape) and their shapes, what runs by memset and memcpy alone (reshape of
//! compact arrays, roll and constant pad of 1-D arrays, append), and every typed error, raised
//! before any kernel is launched. The routines' results come from the context's default pool,
//! which keeps its blocks (and the context) for the process, so what is checked at the end is
//! that the driver saw no misuse, not that nothing is held.

use cuda_core::{DeviceArray, Error, IndexMode, MeshIndexing, PadMode, Slice, SplitAt};
use cuda_driver::{DeviceMemory, Stream};
use tests::checks::setup;
use tests::fake::Session;

#[track_caller]
fn assert_out_of_bounds<T: std::fmt::Debug>(result: cuda_core::Result<T>, index: Option<i64>, extent: usize) {
    match result {
        Err(Error::IndexOutOfBounds {
            index: got, extent: e, ..
        }) => assert_eq!((got, e), (index, extent)),
        other => panic!("expected IndexOutOfBounds({index:?}, {extent}), got {other:?}"),
    }
}

/// Asserts that the stand-in saw no double free, no use of a freed or unknown handle.
#[track_caller]
fn assert_no_misuse(fake: &Session) {
    let counts = fake.counts();
    assert!(counts.double_frees == 0 && counts.invalid_handles == 0, "{counts}");
}

#[track_caller]
fn assert_invalid_core<T: std::fmt::Debug>(result: cuda_core::Result<T>, mentions: &str) {
    match result {
        Err(Error::InvalidValue(message)) => assert!(message.contains(mentions), "{message:?} lacks {mentions:?}"),
        other => panic!("expected InvalidValue mentioning {mentions:?}, got {other:?}"),
    }
}

/// Asserts NumPy's `AxisError`: `axis` out of range for `ndim` dimensions.
#[track_caller]
fn assert_axis_error<T: std::fmt::Debug>(result: cuda_core::Result<T>, axis: i64, ndim: usize) {
    match result {
        Err(error @ Error::Axis { .. }) => {
            assert!(
                matches!(error, Error::Axis { axis: a, ndim: n } if (a, n) == (axis, ndim)),
                "{error:?}"
            );
            let message = format!("axis {axis} is out of bounds for array of dimension {ndim}");
            assert_eq!(error.to_string(), message);
        }
        other => panic!("expected Error::Axis {{ axis: {axis}, ndim: {ndim} }}, got {other:?}"),
    }
}

#[test]
fn views_have_numpy_shapes_and_share_storage() {
    let (fake, context) = setup();
    let stream = Stream::new(&context).unwrap();
    let data: Vec<f32> = (0..24).map(|i| i as f32).collect();
    let x = DeviceArray::from_slice(&stream, &data)
        .unwrap()
        .reshape([2, 3, 4])
        .unwrap();
    // moveaxis and swapaxes permute strides.
    let moved = x.moveaxis(0, 2).unwrap();
    assert_eq!(
        (moved.shape(), moved.strides()),
        (&[3usize, 4, 2][..], &[4isize, 1, 12][..])
    );
    assert_eq!(x.swapaxes(1, 2).unwrap().shape(), [2, 4, 3]);
    assert_axis_error(x.moveaxis(3, 0), 3, 3);
    assert_axis_error(x.swapaxes(0, 3), 3, 3);
    // split and array_split: views, as NumPy.
    let pieces = x.array_split(SplitAt::Sections(3), 2).unwrap();
    let extents: Vec<usize> = pieces.iter().map(|p| p.shape()[2]).collect();
    assert_eq!(extents, [2, 1, 1]);
    assert!(pieces.iter().all(|p| p.shares_storage(&x)));
    assert_invalid_core(x.split(SplitAt::Sections(3), 2), "equally");
    assert_axis_error(x.split(SplitAt::Sections(2), 3), 3, 3);
    assert_invalid_core(x.array_split(SplitAt::Sections(0), 0), "above 0");
    let rows = x.split(SplitAt::Indices(&[1]), 0).unwrap();
    assert_eq!(rows[1].to_vec().unwrap(), data[12..]);
    // atleast_*d.
    let scalar = x.at(1).unwrap().at(-1).unwrap().at(0).unwrap();
    assert_eq!((scalar.ndim(), scalar.to_vec().unwrap()), (0, vec![20.0]));
    assert_eq!(scalar.atleast_1d().shape(), [1]);
    assert_eq!(scalar.atleast_2d().shape(), [1, 1]);
    assert_eq!(scalar.atleast_3d().shape(), [1, 1, 1]);
    let line = x.at(0).unwrap().at(2).unwrap();
    assert_eq!(line.to_vec().unwrap(), [8.0, 9.0, 10.0, 11.0]);
    assert_eq!(line.atleast_2d().shape(), [1, 4]);
    assert_eq!(line.atleast_3d().shape(), [1, 4, 1]);
    assert_eq!(x.at(0).unwrap().atleast_3d().shape(), [3, 4, 1]);
    assert_eq!(x.atleast_3d().shape(), [2, 3, 4]);
    // broadcast_arrays.
    let column = DeviceArray::<f32>::zeros(&stream, [3, 1]).unwrap();
    let both = DeviceArray::broadcast_arrays(&[&line, &column, &scalar]).unwrap();
    assert!(both.iter().all(|b| b.shape() == [3, 4]));
    let three = x.at(0).unwrap().index_axis(1, 0).unwrap();
    assert_invalid_core(DeviceArray::broadcast_arrays(&[&three, &x]), "broadcast");
    // index_axis and at: negative from the end, out of range typed.
    assert_eq!(x.index_axis(2, -1).unwrap().shape(), [2, 3]);
    assert_out_of_bounds(x.index_axis(1, 3), Some(3), 3);
    assert_out_of_bounds(x.at(-3), Some(-3), 2);
    assert_out_of_bounds(scalar.atleast_1d().at(i64::MIN), Some(i64::MIN), 1);
    assert_axis_error(scalar.at(0), 0, 0);
    // diagonal: a view, strides summed; its length for every offset.
    let d = x.diagonal(1, 1, 2).unwrap();
    assert_eq!((d.shape(), d.strides()), (&[2usize, 3][..], &[12isize, 5][..]));
    assert_eq!(x.diagonal(-2, 1, 2).unwrap().shape(), [2, 1]);
    assert_eq!(x.diagonal(4, 1, 2).unwrap().shape(), [2, 0]);
    assert_eq!(x.diagonal(i64::MIN, 1, 2).unwrap().shape(), [2, 0]);
    assert_invalid_core(x.diagonal(0, 1, 1), "same");
    assert_invalid_core(x.diag(0), "1-D or 2-D");
    // reshape: views of compact arrays, -1 inferred; reshape_view refuses what needs a copy.
    let flat = x.reshape(x.infer_shape(&[-1]).unwrap()).unwrap();
    assert!(flat.shares_storage(&x));
    assert_eq!(
        x.reshape(x.infer_shape(&[4, -1, 2]).unwrap()).unwrap().shape(),
        [4, 3, 2]
    );
    assert_invalid_core(x.infer_shape(&[5, -1]), "cannot reshape");
    assert_invalid_core(x.reshape([5, 5]), "cannot reshape");
    assert_invalid_core(x.transpose().reshape_view([24]), "without a copy");
    assert!(x
        .slice(&[Slice::ALL, Slice::from(1..)])
        .unwrap()
        .reshape_view([2, 2, 2, 2])
        .is_ok());
    assert!(x.ravel().unwrap().shares_storage(&x));
    drop((
        x, moved, pieces, rows, scalar, line, column, both, d, flat, stream, context,
    ));
    assert_no_misuse(&fake);
}

/// The layout of a view: what decides which elements it reads.
fn layout(view: &DeviceArray<f32>) -> (Vec<usize>, Vec<isize>, u64) {
    (
        view.shape().to_vec(),
        view.strides().to_vec(),
        DeviceMemory::device_ptr(view),
    )
}

#[test]
fn negative_axes_count_from_the_end_in_every_view_routine() {
    let (fake, context) = setup();
    let stream = Stream::new(&context).unwrap();
    let data: Vec<f32> = (0..24).map(|i| i as f32).collect();
    let x = DeviceArray::from_slice(&stream, &data)
        .unwrap()
        .reshape([2, 3, 4])
        .unwrap();
    let calls = fake.calls();
    // Each pair: the same view by negative axes and by the positive ones NumPy resolves them to.
    let same = |negative: cuda_core::Result<DeviceArray<f32>>, positive: cuda_core::Result<DeviceArray<f32>>| {
        assert_eq!(layout(&negative.unwrap()), layout(&positive.unwrap()));
    };
    same(x.moveaxis(-3, -1), x.moveaxis(0, 2));
    same(x.moveaxis(0, -1), x.moveaxis(0, 2));
    same(x.swapaxes(-1, 0i64), x.swapaxes(2, 0));
    same(x.flip(-1), x.flip([2]));
    same(x.flip([-3isize, 1]), x.flip(vec![0u8, 1]));
    same(x.flip(None), x.flip([0, 1, 2]));
    same(x.flip(cuda_core::Axes::EMPTY), x.slice(&[]));
    same(x.permute([-1, 0, -2]), x.permute([2usize, 0, 1]));
    same(x.permute(None), Ok(x.transpose()));
    same(x.expand_dims(-1), x.expand_dims(3));
    same(x.expand_dims(-4), x.expand_dims(0));
    same(x.expand_dims(-2).unwrap().squeeze_axis(-2), x.slice(&[]));
    same(x.index_axis(-2, 1), x.index_axis(1, 1));
    same(x.diagonal(1, -2, -1), x.diagonal(1, 1, 2));
    same(x.diagonal(0, -1, 0), x.diagonal(0, 2, 0));
    let (negative, positive) = (
        x.array_split(SplitAt::Sections(3), -1).unwrap(),
        x.array_split(SplitAt::Sections(3), 2).unwrap(),
    );
    assert_eq!(negative.len(), 3);
    for (n, p) in negative.iter().zip(&positive) {
        assert_eq!(layout(n), layout(p));
    }
    same(
        Ok(x.split(SplitAt::Indices(&[1]), -3).unwrap().remove(1)),
        Ok(x.split(SplitAt::Indices(&[1]), 0).unwrap().remove(1)),
    );
    // Out of range by one either way, named with the dimensions counted for the routine:
    // expand_dims and stack count the result's.
    assert_axis_error(x.moveaxis(0, -4), -4, 3);
    assert_axis_error(x.swapaxes(-4, 0), -4, 3);
    assert_axis_error(x.flip([0, -4]), -4, 3);
    assert_axis_error(x.permute([0, 1, 3]), 3, 3);
    assert_axis_error(x.expand_dims(-5), -5, 4);
    assert_axis_error(x.expand_dims(4), 4, 4);
    assert_axis_error(x.squeeze_axis(-4), -4, 3);
    assert_axis_error(x.index_axis(3usize, 0), 3, 3);
    assert_axis_error(x.diagonal(0, 0, -4), -4, 3);
    assert_axis_error(x.split(SplitAt::Sections(1), i64::MIN), i64::MIN, 3);
    assert_axis_error(x.array_split(SplitAt::Sections(1), u64::MAX), i64::MAX, 3);
    assert_axis_error(DeviceArray::concatenate(&[&x, &x], -4), -4, 3);
    assert_axis_error(DeviceArray::stack(&[&x, &x], 4), 4, 4);
    assert_axis_error(DeviceArray::stack(&[&x, &x], -5), -5, 4);
    // A repeated axis (after resolving) is NumPy's ValueError, not an AxisError.
    assert_invalid_core(x.flip([2, -1]), "repeated axis -1");
    assert_invalid_core(x.permute([0, -3, 1]), "repeated axis -3");
    assert_invalid_core(x.diagonal(0, 1, -2), "same");
    assert_invalid_core(x.squeeze_axis(-1), "extent 1");
    assert_eq!(fake.calls(), calls, "views only: no driver call");
    drop((x, negative, positive, stream, context));
    assert_no_misuse(&fake);
}

#[test]
fn copies_by_memcpy_alone_match_numpy() {
    let (fake, context) = setup();
    let stream = Stream::new(&context).unwrap();
    let x = DeviceArray::from_slice(&stream, &[1.0f32, 2.0, 3.0, 4.0, 5.0]).unwrap();
    assert_eq!(x.roll(2, None).unwrap().to_vec().unwrap(), [4.0, 5.0, 1.0, 2.0, 3.0]);
    assert_eq!(x.roll(-6, 0).unwrap().to_vec().unwrap(), [2.0, 3.0, 4.0, 5.0, 1.0]);
    assert_eq!(x.roll(0, None).unwrap().to_vec().unwrap(), [1.0, 2.0, 3.0, 4.0, 5.0]);
    assert_eq!(x.roll(1, -1).unwrap().to_vec().unwrap(), [5.0, 1.0, 2.0, 3.0, 4.0]);
    assert_eq!(
        x.pad(&[(2, 1)], PadMode::Constant(-1.0)).unwrap().to_vec().unwrap(),
        [-1.0, -1.0, 1.0, 2.0, 3.0, 4.0, 5.0, -1.0]
    );
    let y = DeviceArray::from_slice(&stream, &[6.0f32]).unwrap();
    assert_eq!(
        x.append(&y, None).unwrap().to_vec().unwrap(),
        [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
    );
    assert_eq!(x.append(&y, 0).unwrap().len(), 6);
    assert_eq!(
        x.append(&y, -1).unwrap().to_vec().unwrap(),
        [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
    );
    assert_eq!(
        DeviceArray::concatenate(&[&y, &x], -1).unwrap().to_vec().unwrap(),
        [6.0, 1.0, 2.0, 3.0, 4.0, 5.0]
    );
    assert_eq!(x.flatten().unwrap().to_vec().unwrap(), x.to_vec().unwrap());
    assert!(!x.flatten().unwrap().shares_storage(&x));
    let two = x.slice(&[Slice::from(..4)]).unwrap().reshape([2, 2]).unwrap();
    assert_eq!(two.to_vec().unwrap(), [1.0, 2.0, 3.0, 4.0]);
    let m = DeviceArray::from_host(&stream, [2, 3], &[1i32, 2, 3, 4, 5, 6]).unwrap();
    assert_eq!((m.shape(), m.to_vec().unwrap()), (&[2, 3][..], vec![1, 2, 3, 4, 5, 6]));
    assert_invalid_core(DeviceArray::from_host(&stream, [2, 3], &[1i32, 2, 3]), "shape [2, 3]");
    assert_eq!(
        DeviceArray::<u8>::from_host(&stream, [0, 4], &[]).unwrap().shape(),
        [0, 4]
    );
    drop((x, y, two, m, stream, context));
    assert_no_misuse(&fake);
}

#[test]
fn bad_shapes_axes_and_indices_are_typed_errors_before_any_launch() {
    let (fake, context) = setup();
    let stream = Stream::new(&context).unwrap();
    let x = DeviceArray::<f32>::zeros(&stream, [3, 4]).unwrap();
    let indices = DeviceArray::<i64>::zeros(&stream, [2]).unwrap();
    let small = DeviceArray::<i32>::zeros(&stream, [2, 1]).unwrap();
    assert_axis_error(x.take(&indices, 2, IndexMode::Raise), 2, 2);
    assert_invalid_core(x.take_along_axis(&indices, 0, IndexMode::Raise), "dimensions");
    assert_invalid_core(x.take_along_axis(&small, 1, IndexMode::Wrap), "broadcast");
    assert_axis_error(x.take_along_axis(&small, 2, IndexMode::Wrap), 2, 2);
    let mut out = DeviceArray::<f32>::zeros(&stream, [3, 3]).unwrap();
    let empty_values = DeviceArray::<f32>::zeros(&stream, [0]).unwrap();
    let mut target = DeviceArray::<f32>::zeros(&stream, [3]).unwrap();
    let far = DeviceArray::from_slice(&stream, &[0i64, 99]).unwrap();
    let calls = fake.calls();
    assert_axis_error(x.take(&indices, 2, IndexMode::Raise), 2, 2);
    assert_invalid_core(x.reshape([5, 5]), "cannot reshape");
    assert_invalid_core(x.take_into(&indices, 1, IndexMode::Raise, &mut out), "shape");
    let mut rows = x.slice(&[Slice::from(..2)]).unwrap();
    assert_invalid_core(x.take_into(&indices, 0, IndexMode::Raise, &mut rows), "shares memory");
    let mut broadcast = target.broadcast_to([2, 3]).unwrap();
    assert_invalid_core(
        broadcast.put(&indices, &x.ravel().unwrap(), IndexMode::Clip),
        "broadcast",
    );
    // NumPy refuses a read-only destination even with nothing to put.
    assert_invalid_core(broadcast.put(&indices, &empty_values, IndexMode::Raise), "broadcast");
    // Empty values put nothing, as in NumPy, even at indices out of bounds.
    target.put(&far, &empty_values, IndexMode::Raise).unwrap();
    // Reductions resolve their axes before compiling or launching anything.
    assert_axis_error(x.sum_axes(-3, false), -3, 2);
    assert_axis_error(x.argmax_axis(2usize, true), 2, 2);
    assert_axis_error((&x * 2.0).var_axes([0, 2], false, 0), 2, 2);
    assert_invalid_core(x.mean_axes([0, -2], false), "repeated axis -2");
    assert_eq!(fake.calls(), calls, "refused before any driver call");
    // An empty axis cannot be taken from (when there is something to take).
    let hollow = DeviceArray::<f32>::zeros(&stream, [3, 0]).unwrap();
    assert_out_of_bounds(hollow.take(&indices, 1, IndexMode::Clip), None, 0);
    assert_eq!(hollow.take(&indices, 0, IndexMode::Raise).unwrap().shape(), [2, 0]);
    // Manipulation errors.
    assert_invalid_core(x.pad(&[(1, 1); 3], PadMode::Edge), "width pairs");
    assert_invalid_core(x.pad(&[(usize::MAX, 1)], PadMode::Constant(0.0)), "overflow");
    assert_axis_error(x.repeat(2, 2), 2, 2);
    assert_invalid_core(x.repeat_each(&[1, 2], 0), "counts");
    assert_axis_error(x.roll(1, -3), -3, 2);
    assert_invalid_core(DeviceArray::<f32>::dstack(&[]), "at least one");
    assert_axis_error(x.append(&x, 2), 2, 2);
    drop((
        x,
        indices,
        small,
        out,
        empty_values,
        target,
        broadcast,
        hollow,
        stream,
        context,
    ));
    assert_no_misuse(&fake);
}

#[test]
fn meshgrid_orders_axes_as_numpy() {
    let (fake, context) = setup();
    let stream = Stream::new(&context).unwrap();
    let a = DeviceArray::<f32>::zeros(&stream, [0]).unwrap();
    let b = DeviceArray::<f32>::zeros(&stream, [4, 0]).unwrap();
    // Zero-size inputs: the copies have nothing to move, so only the shapes are checked here.
    let xy = DeviceArray::meshgrid(&[&a, &b], MeshIndexing::Xy).unwrap();
    assert!(xy.iter().all(|g| g.shape() == [0, 0]));
    let c = DeviceArray::<f32>::zeros(&stream, [3]).unwrap();
    let ij = DeviceArray::meshgrid(&[&a, &c], MeshIndexing::Ij).unwrap();
    assert!(ij.iter().all(|g| g.shape() == [0, 3]));
    let xy = DeviceArray::meshgrid(&[&c, &a], MeshIndexing::Xy).unwrap();
    assert!(xy.iter().all(|g| g.shape() == [0, 3]));
    assert!(DeviceArray::<f32>::meshgrid(&[], MeshIndexing::Xy).unwrap().is_empty());
    drop((a, b, c, xy, ij, stream, context));
    assert_no_misuse(&fake);
}
