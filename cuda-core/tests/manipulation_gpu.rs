//! NumPy's manipulation and indexing chapters on a GPU, each routine against a host reference
//! computed here: several element types (f16 and bf16 included), compact arrays and views
//! (transposed, sliced, broadcast), zero-size and 0-d arrays, and the typed errors of indices
//! out of range. Without a driver or device each test prints `skipped: <why>` and passes,
//! unless `CUDA_REQUIRE_GPU=1`, where that is a failure.

mod common;

use half::{bf16, f16};

use cuda_core::{DeviceArray, Element, Error, IndexMode, MeshIndexing, PadMode, Slice, SplitAt, Stream};

/// A host array in C order: the reference every routine is checked against.
#[derive(Clone, Debug, PartialEq)]
struct Host<T> {
    shape: Vec<usize>,
    data: Vec<T>,
}

impl<T: Copy> Host<T> {
    fn new(shape: &[usize], data: Vec<T>) -> Self {
        assert_eq!(shape.iter().product::<usize>(), data.len());
        Host {
            shape: shape.to_vec(),
            data,
        }
    }

    /// The element at coordinates `at`.
    fn get(&self, at: &[usize]) -> T {
        let mut offset = 0;
        for (&c, &d) in at.iter().zip(&self.shape) {
            assert!(c < d);
            offset = offset * d + c;
        }
        self.data[offset]
    }

    /// The array of `shape` whose element at each coordinate is `f(coordinates)`.
    fn from_fn(shape: &[usize], f: impl Fn(&[usize]) -> T) -> Self {
        let len = shape.iter().product();
        let data = (0..len).map(|i| f(&unravel(i, shape))).collect();
        Host::new(shape, data)
    }

    fn transpose(&self) -> Self {
        let shape: Vec<usize> = self.shape.iter().rev().copied().collect();
        Host::from_fn(&shape, |at| {
            let back: Vec<usize> = at.iter().rev().copied().collect();
            self.get(&back)
        })
    }
}

/// The coordinates of element `i` of `shape` in C order.
fn unravel(mut i: usize, shape: &[usize]) -> Vec<usize> {
    let mut at = vec![0; shape.len()];
    for d in (0..shape.len()).rev() {
        at[d] = i % shape[d].max(1);
        i /= shape[d].max(1);
    }
    at
}

/// Distinct small integers (exact in every element type) of `shape`, on the device and host.
fn iota<T: Element + Copy>(stream: &Stream, shape: &[usize]) -> (DeviceArray<T>, Host<T>) {
    let len: usize = shape.iter().product();
    let data: Vec<T> = (0..len).map(|i| T::from_f64((i % 200) as f64 + 1.0)).collect();
    let device = DeviceArray::from_slice(stream, &data)
        .unwrap()
        .reshape_view(shape.to_vec())
        .unwrap();
    (device, Host::new(shape, data))
}

/// The device array's elements and shape, as a host array.
fn host<T: Element + Copy>(array: &DeviceArray<T>) -> Host<T> {
    Host::new(array.shape(), array.to_vec().unwrap())
}

/// `index` brought into `0..extent` by `mode` (`None`: out of range under `Raise`).
fn resolve(index: i64, extent: usize, mode: IndexMode) -> Option<usize> {
    let n = extent as i64;
    match mode {
        IndexMode::Raise => {
            let j = if index < 0 { index + n } else { index };
            (0..n).contains(&j).then_some(j as usize)
        }
        IndexMode::Wrap => Some(index.rem_euclid(n) as usize),
        IndexMode::Clip => Some(index.clamp(0, n - 1) as usize),
    }
}

/// NumPy's `take(x, indices, axis)` on the host.
fn host_take<T: Copy>(x: &Host<T>, indices: &Host<i64>, axis: Option<usize>, mode: IndexMode) -> Host<T> {
    match axis {
        None => {
            let flat = Host::new(&[x.data.len()], x.data.clone());
            Host::new(
                &indices.shape,
                indices
                    .data
                    .iter()
                    .map(|&j| flat.data[resolve(j, flat.data.len(), mode).unwrap()])
                    .collect(),
            )
        }
        Some(axis) => {
            let shape = [&x.shape[..axis], &indices.shape[..], &x.shape[axis + 1..]].concat();
            let k = indices.shape.len();
            Host::from_fn(&shape, |at| {
                let j = indices.get(&at[axis..axis + k]);
                let mut source = at[..axis].to_vec();
                source.push(resolve(j, x.shape[axis], mode).unwrap());
                source.extend_from_slice(&at[axis + k..]);
                x.get(&source)
            })
        }
    }
}

macro_rules! for_types {
    ($test:ident, $stream:expr) => {
        $test::<f32>($stream);
        $test::<f64>($stream);
        $test::<f16>($stream);
        $test::<bf16>($stream);
        $test::<i64>($stream);
        $test::<i32>($stream);
        $test::<u8>($stream);
    };
}

fn takes_of<T: Element + Copy + PartialEq + std::fmt::Debug>(stream: &Stream) {
    let (x, hx) = iota::<T>(stream, &[2, 5, 3]);
    let raw = vec![4i64, 0, -1, 2, -5, 3];
    let hi = Host::new(&[2, 3], raw.clone());
    let i64s = DeviceArray::from_slice(stream, &raw)
        .unwrap()
        .reshape_view([2, 3])
        .unwrap();
    let i32s = DeviceArray::from_slice(stream, &raw.iter().map(|&v| v as i32).collect::<Vec<_>>())
        .unwrap()
        .reshape_view([2, 3])
        .unwrap();
    // Along each axis where every index is in range (axis 1 has 5 elements), both widths.
    let got = x.take(&i64s, 1, IndexMode::Raise).unwrap();
    assert_eq!(
        host(&got),
        host_take(&hx, &hi, Some(1), IndexMode::Raise),
        "{}",
        T::DTYPE
    );
    let got = x.take(&i32s, 1, IndexMode::Raise).unwrap();
    assert_eq!(host(&got), host_take(&hx, &hi, Some(1), IndexMode::Raise));
    for mode in [IndexMode::Wrap, IndexMode::Clip] {
        for axis in [0, 1, 2] {
            let got = x.take(&i64s, axis, mode).unwrap();
            assert_eq!(
                host(&got),
                host_take(&hx, &hi, Some(axis), mode),
                "{mode:?} axis {axis}"
            );
        }
        let got = x.take(&i64s, None, mode).unwrap();
        assert_eq!(host(&got), host_take(&hx, &hi, None, mode));
    }
    // A transposed view (strided) and a strided slice of the indices, read in place.
    let t = x.transpose();
    let ht = hx.transpose();
    let every_other = i64s.slice(&[Slice::ALL, Slice::from(..).step(2)]).unwrap();
    let h_other = Host::from_fn(&[2, 2], |at| hi.get(&[at[0], 2 * at[1]]));
    for axis in [0, 1, 2] {
        let got = t.take(&every_other, axis, IndexMode::Wrap).unwrap();
        assert_eq!(
            host(&got),
            host_take(&ht, &h_other, Some(axis), IndexMode::Wrap),
            "axis {axis}"
        );
    }
    let got = t.take(&i64s, None, IndexMode::Raise).unwrap();
    assert_eq!(host(&got), host_take(&ht, &hi, None, IndexMode::Raise));
    // Out of range under Raise: a typed error naming one offending index.
    let error = x.take(&i64s, 0, IndexMode::Raise).unwrap_err();
    assert!(
        matches!(error, Error::IndexOutOfBounds { index: Some(i), extent: 2, .. } if [4, -5, 3, 2].contains(&i)),
        "{error}"
    );
    // 0-d and zero-size indices.
    let scalar = DeviceArray::from_slice(stream, &[-2i64])
        .unwrap()
        .reshape_view(Vec::new())
        .unwrap();
    let got = x.take(&scalar, 1, IndexMode::Raise).unwrap();
    assert_eq!(got.shape(), [2, 3]);
    assert_eq!(host(&got), Host::from_fn(&[2, 3], |at| hx.get(&[at[0], 3, at[1]])));
    let none = DeviceArray::<i64>::zeros(stream, [0]).unwrap();
    assert_eq!(x.take(&none, 2, IndexMode::Raise).unwrap().shape(), [2, 5, 0]);
    let empty = DeviceArray::<T>::zeros(stream, [3, 0]).unwrap();
    assert!(matches!(
        empty.take(&i64s, 1, IndexMode::Wrap),
        Err(Error::IndexOutOfBounds { .. })
    ));
}

#[test]
fn take_matches_numpy_for_every_axis_mode_and_view() {
    let Some(device) = common::device_or_skip("take_matches_numpy_for_every_axis_mode_and_view") else {
        return;
    };
    let stream = device.create_stream().unwrap();
    for_types!(takes_of, &stream);
}

#[test]
fn take_of_many_random_indices_matches_the_host() {
    let Some(device) = common::device_or_skip("take_of_many_random_indices_matches_the_host") else {
        return;
    };
    let stream = device.create_stream().unwrap();
    let n = 1 << 20;
    let data: Vec<f32> = (0..n).map(|i| i as f32).collect();
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let raw: Vec<i64> = (0..n)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state % n as u64) as i64
        })
        .collect();
    let x = DeviceArray::from_slice(&stream, &data).unwrap();
    let indices = DeviceArray::from_slice(&stream, &raw).unwrap();
    let got = x.take(&indices, 0, IndexMode::Raise).unwrap().to_vec().unwrap();
    let want: Vec<f32> = raw.iter().map(|&j| data[j as usize]).collect();
    assert_eq!(got, want);
}

#[test]
fn take_indexes_in_64_bits_past_2_to_the_32_elements() {
    let Some(device) = common::device_or_skip("take_indexes_in_64_bits_past_2_to_the_32_elements") else {
        return;
    };
    let stream = device.create_stream().unwrap();
    // A broadcast view of 2^33 elements (one in memory): its offsets and length need 64 bits.
    let huge = 1i64 << 33;
    let x = DeviceArray::from_slice(&stream, &[7.0f32])
        .unwrap()
        .broadcast_to([huge as usize])
        .unwrap();
    let indices = DeviceArray::from_slice(&stream, &[0i64, huge - 1, -1, -huge]).unwrap();
    assert_eq!(
        x.take(&indices, None, IndexMode::Raise).unwrap().to_vec().unwrap(),
        [7.0; 4]
    );
    assert_eq!(
        x.take(&indices, 0, IndexMode::Wrap).unwrap().to_vec().unwrap(),
        [7.0; 4]
    );
    let beyond = DeviceArray::from_slice(&stream, &[huge]).unwrap();
    assert!(matches!(
        x.take(&beyond, None, IndexMode::Raise),
        Err(Error::IndexOutOfBounds { index: Some(i), .. }) if i == huge
    ));
}

fn along_axis_of<T: Element + Copy + PartialEq + std::fmt::Debug>(stream: &Stream) {
    let (x, hx) = iota::<T>(stream, &[4, 6]);
    let raw: Vec<i64> = vec![5, 0, -1, 3, 2, 2, 1, 4];
    let indices = DeviceArray::from_slice(stream, &raw)
        .unwrap()
        .reshape_view([4, 2])
        .unwrap();
    let got = x.take_along_axis(&indices, 1, IndexMode::Raise).unwrap();
    let want = Host::from_fn(&[4, 2], |at| {
        hx.get(&[at[0], resolve(raw[at[0] * 2 + at[1]], 6, IndexMode::Raise).unwrap()])
    });
    assert_eq!(host(&got), want, "{}", T::DTYPE);
    // Indices broadcast along axis 0; the array transposed.
    let row = DeviceArray::from_slice(stream, &[3i32, 0])
        .unwrap()
        .reshape_view([2, 1])
        .unwrap();
    let got = x.transpose().take_along_axis(&row, 0, IndexMode::Raise).unwrap();
    let ht = hx.transpose();
    let want = Host::from_fn(&[2, 4], |at| ht.get(&[[3, 0][at[0]], at[1]]));
    assert_eq!(host(&got), want);
    let bad = DeviceArray::from_slice(stream, &[9i64])
        .unwrap()
        .reshape_view([1, 1])
        .unwrap();
    assert!(matches!(
        x.take_along_axis(&bad, 1, IndexMode::Raise),
        Err(Error::IndexOutOfBounds {
            index: Some(9),
            extent: 6,
            ..
        })
    ));
    assert_eq!(
        host(&x.take_along_axis(&bad, 1, IndexMode::Clip).unwrap()),
        Host::from_fn(&[4, 1], |at| hx.get(&[at[0], 5]))
    );
}

#[test]
fn take_along_axis_matches_numpy() {
    let Some(device) = common::device_or_skip("take_along_axis_matches_numpy") else {
        return;
    };
    let stream = device.create_stream().unwrap();
    for_types!(along_axis_of, &stream);
}

fn puts_of<T: Element + Copy + PartialEq + std::fmt::Debug>(stream: &Stream) {
    let (x, hx) = iota::<T>(stream, &[3, 4]);
    let mut y = x.try_clone().unwrap();
    let indices = DeviceArray::from_slice(stream, &[0i64, 5, -1, 7]).unwrap();
    let values = DeviceArray::from_slice(stream, &[T::from_f64(100.0), T::from_f64(101.0)]).unwrap();
    y.put(&indices, &values, IndexMode::Raise).unwrap();
    let mut want = hx.clone();
    for (k, &j) in [0usize, 5, 11, 7].iter().enumerate() {
        want.data[j] = T::from_f64(100.0 + (k % 2) as f64);
    }
    assert_eq!(host(&y), want, "{}", T::DTYPE);
    // Into a transposed view: the flat index runs over the view's C order.
    let base = x.try_clone().unwrap();
    let mut t = base.transpose();
    t.put(
        &DeviceArray::from_slice(stream, &[1i32, 14]).unwrap(),
        &values,
        IndexMode::Wrap,
    )
    .unwrap();
    let mut want_t = hx.transpose();
    want_t.data[1] = T::from_f64(100.0);
    want_t.data[2] = T::from_f64(101.0);
    assert_eq!(host(&t), want_t);
    assert_eq!(host(&base), want_t.transpose(), "written in place");
    // Out of range: a typed error.
    let mut z = x.try_clone().unwrap();
    let bad = DeviceArray::from_slice(stream, &[12i64]).unwrap();
    assert!(matches!(
        z.put(&bad, &values, IndexMode::Raise),
        Err(Error::IndexOutOfBounds {
            index: Some(12),
            extent: 12,
            ..
        })
    ));
    z.put(&bad, &values, IndexMode::Clip).unwrap();
    assert_eq!(z.to_vec().unwrap()[11], T::from_f64(100.0));
}

#[test]
fn put_matches_numpy_on_compact_arrays_and_views() {
    let Some(device) = common::device_or_skip("put_matches_numpy_on_compact_arrays_and_views") else {
        return;
    };
    let stream = device.create_stream().unwrap();
    for_types!(puts_of, &stream);
    // A broadcast view cannot be written.
    let mut b = DeviceArray::<f32>::zeros(&stream, [3])
        .unwrap()
        .broadcast_to([2, 3])
        .unwrap();
    let i = DeviceArray::from_slice(&stream, &[0i64]).unwrap();
    let v = DeviceArray::from_slice(&stream, &[1.0f32]).unwrap();
    assert!(matches!(b.put(&i, &v, IndexMode::Raise), Err(Error::InvalidValue(_))));
}

fn indices_and_diagonals_of<T: Element + Copy + PartialEq + std::fmt::Debug>(stream: &Stream) {
    let (x, hx) = iota::<T>(stream, &[3, 4]);
    assert_eq!(
        x.at(-1).unwrap().to_vec().unwrap(),
        (0..4).map(|c| hx.get(&[2, c])).collect::<Vec<_>>()
    );
    assert_eq!(
        x.index_axis(1, -4).unwrap().to_vec().unwrap(),
        (0..3).map(|r| hx.get(&[r, 0])).collect::<Vec<_>>()
    );
    assert!(matches!(
        x.at(3),
        Err(Error::IndexOutOfBounds {
            index: Some(3),
            extent: 3,
            ..
        })
    ));
    assert!(matches!(x.index_axis(1, -5), Err(Error::IndexOutOfBounds { .. })));
    assert!(matches!(x.index_axis(2, 0), Err(Error::Axis { axis: 2, ndim: 2 })));
    let element = x.at(1).unwrap().at(2).unwrap();
    assert_eq!((element.ndim(), element.to_vec().unwrap()), (0, vec![hx.get(&[1, 2])]));
    for k in [-2i64, -1, 0, 1, 3, 4, -3] {
        let want: Vec<T> = (0..3)
            .filter_map(|r| {
                let c = r as i64 + k;
                (0..4).contains(&c).then(|| hx.get(&[r, c as usize]))
            })
            .collect();
        assert_eq!(x.diagonal(k, 0, 1).unwrap().to_vec().unwrap(), want, "k {k}");
        assert_eq!(x.diag(k).unwrap().to_vec().unwrap(), want, "k {k}");
    }
    // Diagonal of the transposed plane, and a 3-D stack's diagonals as the last axis.
    let (s, hs) = iota::<T>(stream, &[2, 3, 3]);
    let d = s.diagonal(0, 1, 2).unwrap();
    assert_eq!(d.shape(), [2, 3]);
    assert_eq!(host(&d), Host::from_fn(&[2, 3], |at| hs.get(&[at[0], at[1], at[1]])));
    // 1-D to 2-D.
    let v = DeviceArray::from_slice(stream, &[T::from_f64(1.0), T::from_f64(2.0)]).unwrap();
    for k in [-1i64, 0, 2] {
        let m = v.diag(k).unwrap();
        let n = 2 + k.unsigned_abs() as usize;
        let want = Host::from_fn(&[n, n], |at| match at[1] as i64 - at[0] as i64 == k {
            true => T::from_f64(1.0 + at[0].min(at[1]) as f64),
            false => T::from_f64(0.0),
        });
        assert_eq!(host(&m), want, "k {k}");
    }
}

#[test]
fn integer_indices_diagonal_and_diag_match_numpy() {
    let Some(device) = common::device_or_skip("integer_indices_diagonal_and_diag_match_numpy") else {
        return;
    };
    let stream = device.create_stream().unwrap();
    for_types!(indices_and_diagonals_of, &stream);
}

fn reshapes_and_joins_of<T: Element + Copy + PartialEq + std::fmt::Debug>(stream: &Stream) {
    let (x, hx) = iota::<T>(stream, &[4, 6]);
    let t = x.transpose();
    let ht = hx.transpose();
    // Copying reshape of a view, -1 inferred, ravel and flatten.
    let r = t.reshape(t.infer_shape(&[-1, 8]).unwrap()).unwrap();
    assert_eq!((r.shape(), r.to_vec().unwrap()), (&[3usize, 8][..], ht.data.clone()));
    assert!(x.reshape_view([8, 3]).unwrap().shares_storage(&x));
    assert!(
        x.slice(&[Slice::from(..).step(2)])
            .unwrap()
            .reshape_view([2, 2, 3])
            .is_ok(),
        "rows split, no copy"
    );
    assert_eq!(t.ravel().unwrap().to_vec().unwrap(), ht.data);
    assert!(x.ravel().unwrap().shares_storage(&x));
    let f = x.flatten().unwrap();
    assert!(!f.shares_storage(&x));
    assert_eq!(f.to_vec().unwrap(), hx.data);
    // dstack and append.
    let d = DeviceArray::dstack(&[&x, &t.transpose()]).unwrap();
    assert_eq!(d.shape(), [4, 6, 2]);
    assert_eq!(host(&d), Host::from_fn(&[4, 6, 2], |at| hx.get(&at[..2])));
    let a = x.append(&t, None).unwrap();
    assert_eq!(a.to_vec().unwrap(), [hx.data.clone(), ht.data.clone()].concat());
    let a = x.append(&x.slice(&[Slice::from(..1)]).unwrap(), 0).unwrap();
    assert_eq!(host(&a), Host::from_fn(&[5, 6], |at| hx.get(&[at[0] % 4, at[1]])));
    // tile and repeat (from a strided view).
    let tiled = t.tile(&[2, 1, 2]).unwrap();
    assert_eq!(tiled.shape(), [2, 6, 8]);
    assert_eq!(
        host(&tiled),
        Host::from_fn(&[2, 6, 8], |at| ht.get(&[at[1], at[2] % 4]))
    );
    let rep = t.repeat(3, 1).unwrap();
    assert_eq!(host(&rep), Host::from_fn(&[6, 12], |at| ht.get(&[at[0], at[1] / 3])));
    let rep = t.repeat(2, None).unwrap();
    assert_eq!(
        rep.to_vec().unwrap(),
        ht.data.iter().flat_map(|&v| [v, v]).collect::<Vec<_>>()
    );
    let each = t.repeat_each(&[0, 2, 1, 3], 1).unwrap();
    let columns = [1usize, 1, 2, 3, 3, 3];
    assert_eq!(
        host(&each),
        Host::from_fn(&[6, 6], |at| ht.get(&[at[0], columns[at[1]]]))
    );
    // roll, with and without an axis, both directions.
    for shift in [-7i64, -1, 0, 2, 6, 25] {
        let rolled = t.roll(shift, 1).unwrap();
        let want = Host::from_fn(&[6, 4], |at| {
            ht.get(&[at[0], (at[1] as i64 - shift).rem_euclid(4) as usize])
        });
        assert_eq!(host(&rolled), want, "shift {shift}");
        let rolled = t.roll(shift, None).unwrap();
        assert_eq!(rolled.shape(), [6, 4]);
        let n = ht.data.len() as i64;
        let want: Vec<T> = (0..n).map(|i| ht.data[(i - shift).rem_euclid(n) as usize]).collect();
        assert_eq!(rolled.to_vec().unwrap(), want, "flat shift {shift}");
    }
    // pad: constant and edge, per-axis widths, from a view.
    let padded = t.pad(&[(1, 0), (2, 1)], PadMode::Constant(T::from_f64(0.0))).unwrap();
    let want = Host::from_fn(&[7, 7], |at| match (at[0] >= 1, (2..6).contains(&at[1])) {
        (true, true) => ht.get(&[at[0] - 1, at[1] - 2]),
        _ => T::from_f64(0.0),
    });
    assert_eq!(host(&padded), want);
    let padded = t.pad(&[(2, 1)], PadMode::Edge).unwrap();
    let want = Host::from_fn(&[9, 7], |at| {
        ht.get(&[(at[0].max(2) - 2).min(5), (at[1].max(2) - 2).min(3)])
    });
    assert_eq!(host(&padded), want);
}

#[test]
fn reshape_joins_repeats_rolls_and_pads_match_numpy() {
    let Some(device) = common::device_or_skip("reshape_joins_repeats_rolls_and_pads_match_numpy") else {
        return;
    };
    let stream = device.create_stream().unwrap();
    for_types!(reshapes_and_joins_of, &stream);
}

#[test]
fn views_split_move_and_broadcast_like_numpy() {
    let Some(device) = common::device_or_skip("views_split_move_and_broadcast_like_numpy") else {
        return;
    };
    let stream = device.create_stream().unwrap();
    let (x, hx) = iota::<f32>(&stream, &[2, 7, 3]);
    let pieces = x.array_split(SplitAt::Sections(3), 1).unwrap();
    let extents: Vec<usize> = pieces.iter().map(|p| p.shape()[1]).collect();
    assert_eq!(extents, [3, 2, 2]);
    assert_eq!(
        host(&pieces[1]),
        Host::from_fn(&[2, 2, 3], |at| hx.get(&[at[0], at[1] + 3, at[2]]))
    );
    assert!(pieces.iter().all(|p| p.shares_storage(&x)));
    assert!(x.split(SplitAt::Sections(3), 1).is_err());
    let pieces = x.split(SplitAt::Indices(&[1, 5]), 1).unwrap();
    assert_eq!(
        host(&pieces[2]),
        Host::from_fn(&[2, 2, 3], |at| hx.get(&[at[0], at[1] + 5, at[2]]))
    );
    let moved = x.moveaxis(2, 0).unwrap();
    assert_eq!(moved.shape(), [3, 2, 7]);
    assert_eq!(
        host(&moved),
        Host::from_fn(&[3, 2, 7], |at| hx.get(&[at[1], at[2], at[0]]))
    );
    let swapped = x.swapaxes(0, 2).unwrap();
    assert_eq!(
        host(&swapped),
        Host::from_fn(&[3, 7, 2], |at| hx.get(&[at[2], at[1], at[0]]))
    );
    let row = DeviceArray::from_slice(&stream, &[1.0f32, 2.0, 3.0]).unwrap();
    let column = DeviceArray::from_slice(&stream, &[10.0f32, 20.0])
        .unwrap()
        .reshape_view([2, 1])
        .unwrap();
    let both = DeviceArray::broadcast_arrays(&[&row, &column]).unwrap();
    assert_eq!(both[0].to_vec().unwrap(), [1.0, 2.0, 3.0, 1.0, 2.0, 3.0]);
    assert_eq!(both[1].to_vec().unwrap(), [10.0, 10.0, 10.0, 20.0, 20.0, 20.0]);
    assert_eq!(row.atleast_3d().shape(), [1, 3, 1]);
    let scalar = row.at(0).unwrap();
    assert_eq!(
        (scalar.atleast_1d().shape(), scalar.atleast_2d().shape()),
        (&[1usize][..], &[1usize, 1][..])
    );
    // meshgrid, both orders, three inputs (one a strided view).
    let z = DeviceArray::from_slice(&stream, &[5.0f32, 6.0, 7.0, 8.0]).unwrap();
    let z = z.slice(&[Slice::from(..).step(2)]).unwrap();
    let xy = DeviceArray::meshgrid(&[&row, &column, &z], MeshIndexing::Xy).unwrap();
    assert_eq!(xy[0].shape(), [2, 3, 2]);
    assert_eq!(host(&xy[0]), Host::from_fn(&[2, 3, 2], |at| [1.0, 2.0, 3.0][at[1]]));
    assert_eq!(host(&xy[1]), Host::from_fn(&[2, 3, 2], |at| [10.0, 20.0][at[0]]));
    assert_eq!(host(&xy[2]), Host::from_fn(&[2, 3, 2], |at| [5.0, 7.0][at[2]]));
    let ij = DeviceArray::meshgrid(&[&row, &column], MeshIndexing::Ij).unwrap();
    assert_eq!(host(&ij[1]), Host::from_fn(&[3, 2], |at| [10.0, 20.0][at[1]]));
}

#[test]
fn zero_size_and_zero_d_arrays_go_through_every_routine() {
    let Some(device) = common::device_or_skip("zero_size_and_zero_d_arrays_go_through_every_routine") else {
        return;
    };
    let stream = device.create_stream().unwrap();
    let empty = DeviceArray::<f32>::zeros(&stream, [0, 3]).unwrap();
    assert_eq!(empty.tile(&[2, 2]).unwrap().shape(), [0, 6]);
    assert_eq!(empty.repeat(4, 1).unwrap().shape(), [0, 12]);
    assert_eq!(empty.roll(3, 1).unwrap().shape(), [0, 3]);
    assert_eq!(empty.roll(3, None).unwrap().shape(), [0, 3]);
    assert_eq!(
        empty.pad(&[(1, 1)], PadMode::Constant(2.0)).unwrap().to_vec().unwrap(),
        [2.0; 10]
    );
    assert!(empty.pad(&[(1, 1)], PadMode::Edge).is_err(), "no edge to repeat");
    assert_eq!(empty.reshape([3, 0]).unwrap().shape(), [3, 0]);
    assert_eq!(empty.diagonal(0, 0, 1).unwrap().shape(), [0]);
    let scalar = DeviceArray::from_slice(&stream, &[4.0f32])
        .unwrap()
        .reshape_view(Vec::new())
        .unwrap();
    assert_eq!(scalar.tile(&[3]).unwrap().to_vec().unwrap(), [4.0; 3]);
    assert_eq!(scalar.repeat(2, None).unwrap().to_vec().unwrap(), [4.0; 2]);
    assert_eq!(scalar.roll(1, None).unwrap().shape(), [] as [usize; 0]);
    assert_eq!(scalar.ravel().unwrap().shape(), [1]);
    assert_eq!(scalar.pad(&[], PadMode::Edge).unwrap().to_vec().unwrap(), [4.0]);
    let i = DeviceArray::from_slice(&stream, &[0i64, -1]).unwrap();
    assert_eq!(
        scalar.take(&i, None, IndexMode::Raise).unwrap().to_vec().unwrap(),
        [4.0, 4.0]
    );
    assert!(scalar.take(&i, 0, IndexMode::Raise).is_err(), "a 0-d array has no axis");
    assert!(scalar.diag(0).is_err());
}

/// NumPy's `flip` of a host array along `axes`.
fn host_flip<T: Copy>(x: &Host<T>, axes: &[usize]) -> Host<T> {
    Host::from_fn(&x.shape, |at| {
        let mut source = at.to_vec();
        for &axis in axes {
            source[axis] = x.shape[axis] - 1 - at[axis];
        }
        x.get(&source)
    })
}

fn reversed_views_of<T: Element + Copy + PartialEq + std::fmt::Debug>(stream: &Stream) {
    let (x, hx) = iota::<T>(stream, &[4, 5, 3]);
    for axes in [&[0][..], &[1], &[2], &[0, 2], &[2, 1, 0]] {
        let view = x.flip(axes).unwrap();
        assert!(view.shares_storage(&x), "flip is a view");
        assert!(view.strides().iter().any(|&s| s < 0));
        assert_eq!(host(&view), host_flip(&hx, axes), "flip {axes:?}");
        // Reversed twice: the array itself, strides positive again.
        let back = view.flip(axes).unwrap();
        assert_eq!((back.strides(), host(&back)), (x.strides(), hx.clone()));
        // A compact copy of a reversed view, and a reversed view of a transposed one.
        assert_eq!(host(&view.try_clone().unwrap()), host_flip(&hx, axes));
        assert_eq!(
            host(&x.transpose().flip(axes).unwrap()),
            host_flip(&hx.transpose(), axes)
        );
    }
    // Negative steps: x[::-2, 3:0:-1, :] (the range 1..4 of axis 1 walked down).
    let stepped = x.slice(&[Slice::ALL.step(-2), Slice::from(1..4).step(-1)]).unwrap();
    assert_eq!(stepped.shape(), [2, 3, 3]);
    assert_eq!(
        host(&stepped),
        Host::from_fn(&[2, 3, 3], |at| hx.get(&[3 - 2 * at[0], 3 - at[1], at[2]]))
    );
    // Written through: a copy into a reversed view lands mirrored in its storage.
    let target = DeviceArray::<T>::zeros(stream, [4, 5, 3]).unwrap();
    target.flip([0, 2]).unwrap().copy_from(&x).unwrap();
    assert_eq!(host(&target), host_flip(&hx, &[0, 2]));
    let mut reversed = target.flip([1]).unwrap();
    reversed.fill(T::from_f64(7.0)).unwrap();
    assert!(target.to_vec().unwrap().iter().all(|&v| v == T::from_f64(7.0)));
    // A reversed 1-D view reshapes without a copy, and its ravel is one.
    let line = x.ravel().unwrap().flip([0]).unwrap();
    let grid = line.reshape_view([6, 10]).unwrap();
    assert!(grid.shares_storage(&x));
    let reversed_data: Vec<T> = hx.data.iter().rev().copied().collect();
    assert_eq!(grid.to_vec().unwrap(), reversed_data);
    assert_eq!(
        x.flip([0]).unwrap().ravel().unwrap().to_vec().unwrap(),
        host_flip(&hx, &[0]).data
    );
    // take and put read and write reversed views in place.
    let raw = vec![4i64, 0, -1, 2];
    let indices = DeviceArray::from_slice(stream, &raw).unwrap();
    let hi = Host::new(&[4], raw.clone());
    let view = x.flip([1, 2]).unwrap();
    let hview = host_flip(&hx, &[1, 2]);
    for axis in [None, Some(1)] {
        assert_eq!(
            host(
                &view
                    .take(&indices, axis.map(cuda_core::Axis::from), IndexMode::Wrap)
                    .unwrap()
            ),
            host_take(&hview, &hi, axis, IndexMode::Wrap),
            "take along {axis:?}"
        );
    }
    let target = DeviceArray::<T>::zeros(stream, [4, 5, 3]).unwrap();
    let values = DeviceArray::from_slice(stream, &[T::from_f64(1.0), T::from_f64(2.0)]).unwrap();
    let flat = DeviceArray::from_slice(stream, &[0i64, 59]).unwrap();
    target
        .flip([0, 1, 2])
        .unwrap()
        .put(&flat, &values, IndexMode::Raise)
        .unwrap();
    let written = target.to_vec().unwrap();
    assert_eq!((written[59], written[0]), (T::from_f64(1.0), T::from_f64(2.0)));
    // A copy from its own reversed view reads the source whole first, as NumPy's does.
    let mut same = x.try_clone().unwrap();
    let mirror = same.flip([0]).unwrap();
    same.copy_from(&mirror).unwrap();
    assert_eq!(host(&same), host_flip(&hx, &[0]));
}

#[test]
fn reversed_views_go_through_every_routine() {
    let Some(device) = common::device_or_skip("reversed_views_go_through_every_routine") else {
        return;
    };
    let stream = device.create_stream().unwrap();
    for_types!(reversed_views_of, &stream);
    // Expressions, reductions and DLPack over reversed f32 views.
    let (x, hx) = iota::<f32>(&stream, &[6, 7]);
    let rows = x.flip([0]).unwrap();
    let hrows = host_flip(&hx, &[0]);
    let sum = (&rows * 2.0 + &x).eval().unwrap();
    let expected: Vec<f32> = hrows.data.iter().zip(&hx.data).map(|(&r, &v)| r * 2.0 + v).collect();
    assert_eq!(sum.to_vec().unwrap(), expected);
    let both = x.flip([0, 1]).unwrap();
    assert_eq!(both.sum().unwrap().item().unwrap(), hx.data.iter().sum::<f32>());
    let columns = both.sum_axes([0], false).unwrap().to_vec().unwrap();
    let expected: Vec<f32> = (0..7).map(|c| (0..6).map(|r| hx.get(&[r, 6 - c])).sum()).collect();
    assert_eq!(columns, expected);
    // argmax counts in the view's order: the largest element of x (its last) is the view's first.
    assert_eq!(x.argmax().unwrap().item().unwrap(), 41);
    assert_eq!(both.argmax().unwrap().item().unwrap(), 0);
    let raw = both.into_dlpack(None).unwrap();
    // SAFETY: `raw` is the tensor just exported, taken back once.
    let back = unsafe { DeviceArray::<f32>::from_dlpack(raw, &stream) }.unwrap();
    assert_eq!(
        (back.strides(), back.to_vec().unwrap()),
        (&[-7isize, -1][..], host_flip(&hx, &[0, 1]).data)
    );
}
