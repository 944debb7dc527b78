//! Regression tests of the defects an outside audit found in the array layer (issue 20): each
//! failed before its fix. Without a driver or device each test prints `skipped: <why>` and
//! passes, unless `CUDA_REQUIRE_GPU=1`.

mod common;

use std::ffi::c_void;
use std::ptr;

use cuda_core::{
    random, DLDataType, DLDevice, DLDeviceType, DLManagedTensor, DLPackTensor, DLTensor, DType, DeviceArray, Error,
    MemoryPool, Slice,
};
use cuda_driver::{CaptureMode, Stream};

/// An array allocated and dropped while its stream captures is a graph allocation: it never
/// enters the pool's cache, so a later ordinary allocation does not get graph memory.
#[test]
fn allocations_during_a_capture_stay_out_of_the_pool() {
    let Some(device) = common::device_or_skip("allocations_during_a_capture_stay_out_of_the_pool") else {
        return;
    };
    let stream = device.create_stream().unwrap();
    let pool = MemoryPool::new(device.context());
    let n = 1 << 20;
    let warm = DeviceArray::<f32>::zeros(&stream, 16).unwrap(); // loads the fill path's code
    drop(warm);
    let before = pool.stats();
    let captured = stream
        .capture(CaptureMode::ThreadLocal, |s| {
            let as_driver = |e: Error| cuda_driver::Error::InvalidValue(e.to_string());
            let mut y = DeviceArray::<f32>::empty_in(&pool, s, n).map_err(as_driver)?;
            y.fill(1.0).map_err(as_driver)?;
            // Freeing the cache inside a capture leaves the capture valid.
            pool.free_all_blocks().map_err(as_driver)?;
            Ok(())
        })
        .unwrap();
    drop(captured);
    assert_eq!(pool.stats(), before, "the captured allocation is not in the pool");
    let mut z = DeviceArray::<f32>::empty_in(&pool, &stream, n).unwrap();
    z.fill(3.0).unwrap();
    assert!(z.to_vec().unwrap().iter().all(|&v| v == 3.0));
}

/// The per-thread default stream names another stream on each thread: memory can neither be
/// ordered on it nor used through it (its release could not be ordered after that use from
/// another thread): typed errors, never a release ordered against the wrong stream.
#[test]
fn the_per_thread_default_stream_is_refused() {
    let Some(device) = common::device_or_skip("the_per_thread_default_stream_is_refused") else {
        return;
    };
    // SAFETY: `CU_STREAM_PER_THREAD` (2) is a valid handle of every context, never destroyed.
    let per_thread = unsafe { Stream::from_raw(device.context(), 2 as cuda_sys::driver::CUstream) };
    assert!(per_thread.is_per_thread());
    let refused = |error: Error| assert!(error.to_string().contains("per-thread"), "{error}");
    refused(DeviceArray::<f32>::empty(&per_thread, 4).unwrap_err());
    let stream = device.create_stream().unwrap();
    let x = DeviceArray::from_slice(&stream, &[1.0f32, 2.0, 3.0]).unwrap();
    let mut z = DeviceArray::<f32>::zeros(&stream, 3).unwrap();
    let copy = cuda_core::ElementwiseKernel::new("T x", "T y", "y = x", "per_thread_copy").unwrap();
    // SAFETY: the operation only reads and writes the elements it is given.
    refused(unsafe { copy.launch(&per_thread, &[(&x).into(), (&mut z).into()]) }.unwrap_err());
    refused(x.try_clone().unwrap().into_dlpack(Some(&per_thread)).unwrap_err());
    assert_eq!(z.to_vec().unwrap(), [0.0, 0.0, 0.0], "nothing ran");
}

/// Strided element-wise kernels index in 32 bits only while the last index plus the grid's
/// stride fits: near 2^32 elements every element is updated exactly once (a wrapped index
/// visited some many times, or never left the loop).
#[test]
fn kernels_at_the_32_bit_index_boundary() {
    let Some(device) = common::device_or_skip("kernels_at_the_32_bit_index_boundary") else {
        return;
    };
    let stream = device.create_stream().unwrap();
    let one = DeviceArray::from_slice(&stream, &[1u8]).unwrap();
    for n in [(1usize << 32) - 16384, (1usize << 32) - 2, (1usize << 32) + 3] {
        // Strided element-wise (a broadcast operand), then contiguous element-wise.
        let mut z = DeviceArray::<u8>::zeros(&stream, n).unwrap();
        z.update(|v| v + &one).unwrap();
        assert_eq!(z.max().unwrap().item().unwrap(), 1, "strided, n = {n}");
        assert_eq!(z.min().unwrap().item().unwrap(), 1, "strided, n = {n}");
        z.update(|v| v + 1).unwrap();
        // Whole reduction (exact: integer sums are 64-bit).
        assert_eq!(z.sum().unwrap().item().unwrap(), 2 * n as u64, "sum, n = {n}");
        drop(z);
        // Random: every element written, each in range.
        let r = random::randint::<u8>(&stream, n, 1, 3, 7).unwrap();
        assert_eq!(r.min().unwrap().item().unwrap(), 1, "randint, n = {n}");
        assert_eq!(r.max().unwrap().item().unwrap(), 2, "randint, n = {n}");
        drop(r);
    }
    // Axis reduction and strided copy over 2^32 + 2 elements in two rows.
    let cols = (1usize << 31) + 1;
    let mut m = DeviceArray::<u8>::zeros(&stream, [2, cols]).unwrap();
    m.update(|v| v + 1).unwrap();
    let rows = m.sum_axes([1], false).unwrap().to_vec().unwrap();
    assert_eq!(rows, [cols as u64, cols as u64]);
    let mut t = DeviceArray::<u8>::zeros(&stream, [cols, 2]).unwrap();
    t.copy_from(&m.transpose()).unwrap();
    assert_eq!(t.min().unwrap().item().unwrap(), 1);
    assert_eq!(t.sum().unwrap().item().unwrap(), 2 * cols as u64);
}

/// `x[1:] = x[:-1]` gives NumPy's `[x0, x0, x1, ...]` (one overlapping cuMemcpy gave wrong
/// elements), and a strided copy of a transpose into its own memory works (it was refused).
#[test]
fn overlapping_copies_read_the_source_first() {
    let Some(device) = common::device_or_skip("overlapping_copies_read_the_source_first") else {
        return;
    };
    let stream = device.create_stream().unwrap();
    let n = 1 << 24;
    let values: Vec<i32> = (0..n as i32).collect();
    let x = DeviceArray::from_slice(&stream, &values).unwrap();
    let mut tail = x.slice(&[Slice::from(1..)]).unwrap();
    tail.copy_from(&x.slice(&[Slice::from(..n - 1)]).unwrap()).unwrap();
    let got = x.to_vec().unwrap();
    assert_eq!(got[0], 0);
    assert!(
        got[1..].iter().enumerate().all(|(i, &v)| v == i as i32),
        "shifted by one"
    );

    let side = 1024;
    let square: Vec<i32> = (0..(side * side) as i32).collect();
    let mut m = DeviceArray::from_slice(&stream, &square)
        .unwrap()
        .reshape([side, side])
        .unwrap();
    let transposed = m.transpose();
    m.copy_from(&transposed).unwrap();
    let got = m.to_vec().unwrap();
    for (i, row) in got.chunks(side).enumerate() {
        for (j, &v) in row.iter().enumerate() {
            assert_eq!(v, (j * side + i) as i32, "element ({i}, {j})");
        }
    }
}

/// A DLPack tensor over `array`'s memory (a second, independent storage of the same bytes),
/// with no deleter.
fn second_import(array: &DeviceArray<f32>, stream: &Stream) -> DeviceArray<f32> {
    let shape = Box::leak(
        array
            .shape()
            .iter()
            .map(|&d| d as i64)
            .collect::<Vec<_>>()
            .into_boxed_slice(),
    );
    let managed = Box::leak(Box::new(DLManagedTensor {
        dl_tensor: DLTensor {
            // SAFETY: the address is handed to a tensor the test keeps within `array`'s life.
            data: unsafe { array.as_raw() } as *mut c_void,
            device: DLDevice {
                device_type: DLDeviceType::CUDA,
                device_id: 0,
            },
            ndim: shape.len() as i32,
            dtype: DLDataType::from(DType::F32),
            shape: shape.as_mut_ptr(),
            strides: ptr::null_mut(),
            byte_offset: 0,
        },
        manager_ctx: ptr::null_mut(),
        deleter: None,
    }));
    // SAFETY: the struct is valid and lives for the process; its memory is `array`'s, which
    // the test keeps alive while the import is used, ordered on the same stream.
    let tensor = unsafe { DLPackTensor::from_raw(managed) }.unwrap();
    DeviceArray::from_dlpack_tensor(tensor, stream, None).unwrap()
}

/// Overlap is decided by address ranges: assigning the transpose of one import of a matrix to
/// another import of the same memory goes through a temporary (it raced before, 1,860,786 of
/// 4,194,304 elements wrong on the H200).
#[test]
fn overlap_is_found_across_imports_of_the_same_memory() {
    let Some(device) = common::device_or_skip("overlap_is_found_across_imports_of_the_same_memory") else {
        return;
    };
    let stream = device.create_stream().unwrap();
    let side = 2048;
    let values: Vec<f32> = (0..side * side).map(|i| i as f32).collect();
    let owner = DeviceArray::from_slice(&stream, &values)
        .unwrap()
        .reshape([side, side])
        .unwrap();
    let mut a = second_import(&owner, &stream);
    let b = second_import(&owner, &stream);
    assert!(!a.shares_storage(&b) && a.may_share_memory(&b));
    a.assign(&b.transpose()).unwrap();
    let got = a.to_vec().unwrap();
    let wrong = got
        .iter()
        .enumerate()
        .filter(|&(k, &v)| v != ((k % side) * side + k / side) as f32)
        .count();
    assert_eq!(
        wrong, 0,
        "elements wrong after an in-place transpose through two imports"
    );
    drop((a, b));
    drop(owner);
}
