//! DLPack 1.0 on a GPU: versioned and legacy export and import of strided, offset, broadcast,
//! f16/bf16/bool arrays without copies, the stream handshake (event waits, no host waits) and
//! the release of tensors back to the pool. Without a driver or device each test prints
//! `skipped: <why>` and passes, unless `CUDA_REQUIRE_GPU=1`, where that is a failure.

mod common;

use std::ffi::c_void;
use std::ptr;
use std::sync::atomic::{AtomicUsize, Ordering};

use cuda_core::{
    Arg, Bool, DLDataType, DLDevice, DLDeviceType, DLManagedTensor, DLManagedTensorVersioned, DLPackError, DLPackFlags,
    DLPackTensor, DLPackVersion, DLTensor, DType, Device, DeviceArray, ElementwiseKernel, Error, MemoryPool, Slice,
};

#[test]
fn versioned_round_trip_keeps_views_and_memory() {
    let Some(device) = common::device_or_skip("versioned_round_trip_keeps_views_and_memory") else {
        return;
    };
    let stream = device.create_stream().unwrap();
    let pool = MemoryPool::new(device.context());
    let host: Vec<f32> = (0..24).map(|i| i as f32 * 0.5 - 3.0).collect();
    let mut x = DeviceArray::<f32>::empty_in(&pool, &stream, [1, 2, 3, 4]).unwrap();
    x.copy_from_host(&host).unwrap();
    let used = pool.stats().used_bytes;
    // SAFETY: addresses are only compared.
    let base = unsafe { x.as_raw() };

    // A transposed view: strides travel, the address is the same.
    let t = x.permute([3, 2, 1, 0]).unwrap();
    let expected_t = t.to_vec().unwrap();
    let raw = t.into_dlpack_versioned(None, DLPackFlags::NONE).unwrap();
    // SAFETY: just exported; read before it is given to the importer below.
    unsafe {
        assert_eq!((*raw).version, DLPackVersion { major: 1, minor: 0 });
        assert_eq!((*raw).flags, DLPackFlags::NONE);
        let dl = &(*raw).dl_tensor;
        assert_eq!(std::slice::from_raw_parts(dl.shape, 4), [4, 3, 2, 1]);
        assert_eq!(std::slice::from_raw_parts(dl.strides, 4), [1, 4, 12, 24]);
        assert_eq!(dl.data as u64, base);
    }
    // SAFETY: the tensor was just exported and nobody else has it.
    let y = DeviceArray::<f32>::from_dlpack_tensor(
        unsafe { DLPackTensor::from_raw_versioned(raw) }.unwrap(),
        &stream,
        None,
    )
    .unwrap();
    assert_eq!((y.shape(), y.strides()), (&[4, 3, 2, 1][..], &[1, 4, 12, 24][..]));
    // SAFETY: compared only.
    assert_eq!(unsafe { y.as_raw() }, base, "no copy");
    assert_eq!(y.to_vec().unwrap(), expected_t);

    // A sliced view starts inside the block: the address moves, nothing is copied.
    let s = x
        .slice(&[Slice::ALL, Slice::from(1..2), Slice::from(1..).step(2)])
        .unwrap();
    let expected_s = s.to_vec().unwrap();
    let raw = s.into_dlpack(None).unwrap();
    // SAFETY: as above, legacy.
    let z = unsafe { DeviceArray::<f32>::from_dlpack(raw, &stream) }.unwrap();
    assert_eq!((z.shape(), z.strides()), (&[1, 1, 1, 4][..], &[24, 12, 8, 1][..]));
    // SAFETY: compared only.
    assert_eq!(unsafe { z.as_raw() }, base + (12 + 4) * 4);
    assert_eq!(z.to_vec().unwrap(), expected_s);
    assert_eq!(expected_s, host[16..20]);

    // A write through the import is seen by the original.
    let mut w = z;
    w.fill(42.0).unwrap();
    let after = x.to_vec().unwrap();
    assert_eq!(&after[16..20], [42.0; 4]);
    assert_eq!(&after[..16], &host[..16]);

    drop((x, y));
    assert_eq!(pool.stats().used_bytes, used, "the imported view still holds the block");
    drop(w);
    assert_eq!(pool.stats().used_bytes, 0, "the last deleter gave the block back");
}

#[test]
fn half_bfloat_and_bool_keep_their_codes() {
    let Some(device) = common::device_or_skip("half_bfloat_and_bool_keep_their_codes") else {
        return;
    };
    let stream = device.create_stream().unwrap();
    let halves: Vec<half::f16> = (0..10).map(|i| half::f16::from_f32(i as f32 / 4.0)).collect();
    let raw = DeviceArray::from_slice(&stream, &halves)
        .unwrap()
        .into_dlpack_versioned(None, DLPackFlags::NONE)
        .unwrap();
    // SAFETY: just exported.
    let tensor = unsafe { DLPackTensor::from_raw_versioned(raw) }.unwrap();
    assert_eq!(tensor.dtype(), Ok(DType::F16));
    let back = DeviceArray::<half::f16>::from_dlpack_tensor(tensor, &stream, None).unwrap();
    assert_eq!(back.to_vec().unwrap(), halves);

    let brains: Vec<half::bf16> = (0..10).map(|i| half::bf16::from_f32(i as f32 - 4.5)).collect();
    let raw = DeviceArray::from_slice(&stream, &brains)
        .unwrap()
        .into_dlpack(None)
        .unwrap();
    // SAFETY: just exported.
    unsafe { assert_eq!((*raw).dl_tensor.dtype, DLDataType::from(DType::BF16)) };
    // SAFETY: just exported.
    let tensor = unsafe { DLPackTensor::from_raw(raw) }.unwrap();
    assert_eq!(tensor.version(), None);
    let wrong = DeviceArray::<half::f16>::from_dlpack_tensor(tensor, &stream, None);
    assert!(
        matches!(
            wrong,
            Err(Error::DLPack(DLPackError::WrongDType {
                found: DType::BF16,
                expected: DType::F16
            }))
        ),
        "{wrong:?}"
    );

    let truths: Vec<Bool> = (0..7).map(|i| Bool::from(i % 3 == 0)).collect();
    let raw = DeviceArray::from_slice(&stream, &truths)
        .unwrap()
        .into_dlpack(None)
        .unwrap();
    // SAFETY: just exported.
    let back = unsafe { DeviceArray::<Bool>::from_dlpack(raw, &stream) }.unwrap();
    assert_eq!(back.to_vec().unwrap(), truths);
}

#[test]
fn broadcast_views_export_read_only_and_are_refused_back() {
    let Some(device) = common::device_or_skip("broadcast_views_export_read_only_and_are_refused_back") else {
        return;
    };
    let stream = device.create_stream().unwrap();
    let pool = MemoryPool::new(device.context());
    let row = DeviceArray::<i32>::empty_in(&pool, &stream, [1, 3]).unwrap();
    let wide = row.broadcast_to([5, 3]).unwrap();
    drop(row);
    let raw = wide.into_dlpack_versioned(None, DLPackFlags::IS_COPIED).unwrap();
    // SAFETY: just exported.
    unsafe {
        assert_eq!((*raw).flags, DLPackFlags::READ_ONLY | DLPackFlags::IS_COPIED);
        assert_eq!(std::slice::from_raw_parts((*raw).dl_tensor.strides, 2), [0, 1]);
    }
    // SAFETY: just exported; refused, so it stays ours.
    let refused = unsafe { DeviceArray::<i32>::from_dlpack_versioned(raw, &stream) };
    assert!(
        matches!(refused, Err(Error::DLPack(DLPackError::ReadOnly))),
        "{refused:?}"
    );
    assert_ne!(pool.stats().used_bytes, 0, "a refused tensor is left to the caller");
    // SAFETY: still ours; its deleter runs once.
    drop(unsafe { DLPackTensor::from_raw_versioned(raw) }.unwrap());
    assert_eq!(pool.stats().used_bytes, 0);
}

unsafe extern "C" fn count(tensor: *mut DLManagedTensorVersioned) {
    // SAFETY: the test sets `manager_ctx` to a live counter.
    unsafe { (*(*tensor).manager_ctx.cast::<AtomicUsize>()).fetch_add(1, Ordering::SeqCst) };
}

#[test]
fn foreign_tensors_are_checked_and_released_once() {
    let Some(device) = common::device_or_skip("foreign_tensors_are_checked_and_released_once") else {
        return;
    };
    let stream = device.create_stream().unwrap();
    let backing = DeviceArray::from_slice(&stream, &(0..64).map(|i| i as u16).collect::<Vec<_>>()).unwrap();
    let released = AtomicUsize::new(0);
    // A 4x4 view of every other element of rows 0, 2, 4, 6, starting at element 2.
    let mut shape = [4i64, 4];
    let mut strides = [16i64, 2];
    let mut tensor = DLManagedTensorVersioned {
        version: DLPackVersion { major: 1, minor: 1 },
        manager_ctx: (&released as *const AtomicUsize).cast_mut().cast::<c_void>(),
        deleter: Some(count),
        flags: DLPackFlags::NONE,
        dl_tensor: DLTensor {
            // SAFETY: used while `backing` lives, on its stream.
            data: unsafe { backing.as_raw() } as *mut c_void,
            device: DLDevice {
                device_type: DLDeviceType::CPU,
                device_id: 0,
            },
            ndim: 2,
            dtype: DLDataType::from(DType::U16),
            shape: shape.as_mut_ptr(),
            strides: strides.as_mut_ptr(),
            byte_offset: 4,
        },
    };
    // SAFETY: the tensor describes memory of `backing`; refused tensors stay ours.
    let cpu = unsafe { DeviceArray::<u16>::from_dlpack_versioned(&mut tensor, &stream) };
    assert!(matches!(cpu, Err(Error::DLPack(DLPackError::NotCuda(_)))), "{cpu:?}");
    tensor.dl_tensor.device = DLDevice {
        device_type: DLDeviceType::CUDA,
        device_id: device.ordinal() as i32 + 1,
    };
    // SAFETY: as above.
    let other = unsafe { DeviceArray::<u16>::from_dlpack_versioned(&mut tensor, &stream) };
    assert!(
        matches!(other, Err(Error::DLPack(DLPackError::WrongDevice { .. }))),
        "{other:?}"
    );
    tensor.dl_tensor.device.device_id = device.ordinal() as i32;
    // SAFETY: as above.
    let wrong = unsafe { DeviceArray::<i16>::from_dlpack_versioned(&mut tensor, &stream) };
    assert!(
        matches!(wrong, Err(Error::DLPack(DLPackError::WrongDType { .. }))),
        "{wrong:?}"
    );
    assert_eq!(released.load(Ordering::SeqCst), 0, "refused tensors are not released");

    // SAFETY: as above; accepted now, and released when the array goes.
    let view = unsafe { DeviceArray::<u16>::from_dlpack_versioned(&mut tensor, &stream) }.unwrap();
    let expected: Vec<u16> = (0..4)
        .flat_map(|r| (0..4).map(move |c| (2 + 16 * r + 2 * c) as u16))
        .collect();
    assert_eq!(view.to_vec().unwrap(), expected);
    drop(view);
    assert_eq!(released.load(Ordering::SeqCst), 1, "the deleter ran exactly once");
    drop(backing);
}

#[test]
fn the_consumer_stream_waits_for_the_producer_on_the_device() {
    let Some(device) = common::device_or_skip("the_consumer_stream_waits_for_the_producer_on_the_device") else {
        return;
    };
    let producer = device.create_stream().unwrap();
    let consumer = device.create_stream().unwrap();
    let pool = MemoryPool::new(device.context());
    // A slow kernel on the producer's stream writes what the consumer then reads on its own
    // stream; only the handshake's event orders the two.
    let slow = ElementwiseKernel::new(
        "T seed",
        "T out",
        "T v = seed; for (int k = 0; k < 2000; ++k) v = v * 0.5f + 1.0f; out = v + (T)i",
        "dlpack_slow_fill",
    )
    .unwrap();
    let n = 1 << 20;
    let consumed = DeviceArray::<f32>::empty(&consumer, n).unwrap();
    for round in 0..3 {
        let mut x = DeviceArray::<f32>::empty_in(&pool, &producer, n).unwrap();
        // SAFETY: the operation computes from `seed` and `i` and assigns its element of `out`.
        unsafe { slow.launch(&producer, &[Arg::scalar(round as f32), Arg::from(&mut x)]) }.unwrap();
        let raw = x.into_dlpack_versioned(Some(&consumer), DLPackFlags::NONE).unwrap();
        // SAFETY: just exported for `consumer`.
        let tensor = unsafe { DLPackTensor::from_raw_versioned(raw) }.unwrap();
        // The consumer's copy, queued on its stream with no host wait in between.
        let y = DeviceArray::<f32>::from_dlpack_tensor(tensor, &consumer, Some(&producer)).unwrap();
        let mut out = DeviceArray::<f32>::empty_like(&consumed).unwrap();
        out.copy_from(&y).unwrap();
        drop(y); // released in stream order: the producer's stream waits for the consumer's copy
        let host = out.to_vec().unwrap();
        // v converges to 2.0 for every seed.
        for i in [0usize, 1, n / 2, n - 1] {
            assert!(
                (host[i] - (2.0 + i as f32)).abs() <= 1e-3 * (2.0 + i as f32),
                "round {round} [{i}] = {}",
                host[i]
            );
        }
    }
    producer.synchronize().unwrap();
    assert_eq!(pool.stats().used_bytes, 0, "every exported block came back");
    assert_ne!(pool.stats().hits, 0, "blocks came back in order and were reused");
}

#[test]
fn legacy_tensors_hand_made_with_an_offset_import_as_views() {
    let Some(device) = common::device_or_skip("legacy_tensors_hand_made_with_an_offset_import_as_views") else {
        return;
    };
    let stream = device.create_stream().unwrap();
    let backing = DeviceArray::from_slice(&stream, &(0..12).map(|i| i as f64).collect::<Vec<_>>()).unwrap();
    let mut shape = [3i64, 2];
    let mut strides = [1i64, 4];
    let mut tensor = DLManagedTensor {
        dl_tensor: DLTensor {
            // SAFETY: used while `backing` lives, on its stream.
            data: unsafe { backing.as_raw() } as *mut c_void,
            device: DLDevice {
                device_type: DLDeviceType::CUDA,
                device_id: device.ordinal() as i32,
            },
            ndim: 2,
            dtype: DLDataType::from(DType::F64),
            shape: shape.as_mut_ptr(),
            strides: strides.as_mut_ptr(),
            byte_offset: 8,
        },
        manager_ctx: ptr::null_mut(),
        deleter: None,
    };
    // SAFETY: a column-major 3x2 view of elements 1.. of `backing`, which outlives it.
    let view = unsafe { DeviceArray::<f64>::from_dlpack(&mut tensor, &stream) }.unwrap();
    assert!(!view.is_contiguous());
    assert_eq!(view.to_vec().unwrap(), [1.0, 5.0, 2.0, 6.0, 3.0, 7.0]);
    drop(view);
    drop(backing);
}

/// A legacy `f32` tensor on `device` over `data` (no deleter: the test owns the memory).
fn f32_tensor(
    device: &Device,
    data: u64,
    shape: &mut [i64],
    strides: Option<&mut [i64]>,
    byte_offset: u64,
) -> DLManagedTensor {
    DLManagedTensor {
        dl_tensor: DLTensor {
            data: data as *mut c_void,
            device: DLDevice {
                device_type: DLDeviceType::CUDA,
                device_id: device.ordinal() as i32,
            },
            ndim: shape.len() as i32,
            dtype: DLDataType::from(DType::F32),
            shape: shape.as_mut_ptr(),
            strides: strides.map_or(ptr::null_mut(), <[i64]>::as_mut_ptr),
            byte_offset,
        },
        manager_ctx: ptr::null_mut(),
        deleter: None,
    }
}

/// Imports `tensor` with the safe `from_dlpack_tensor`.
fn import_f32(tensor: &mut DLManagedTensor, stream: &cuda_driver::Stream) -> cuda_core::Result<DeviceArray<f32>> {
    // SAFETY: the tensors of these tests outlive the import and have no deleter; where their
    // memory is real it is alive until the array is dropped and used by nobody else; where it
    // is not, the import must refuse it, which is what the tests check.
    let tensor = unsafe { DLPackTensor::from_raw(tensor) }.unwrap();
    DeviceArray::<f32>::from_dlpack_tensor(tensor, stream, None)
}

#[test]
fn imports_are_checked_against_the_memory_the_driver_knows() {
    let Some(device) = common::device_or_skip("imports_are_checked_against_the_memory_the_driver_knows") else {
        return;
    };
    let stream = device.create_stream().unwrap();
    // Made-up memory: the crate once accepted this as a writable megabyte of floats.
    match import_f32(&mut f32_tensor(&device, 0x1000, &mut [1 << 20], None, 0), &stream) {
        Err(Error::DLPack(DLPackError::NotDeviceMemory { address: 0x1000, .. })) => {}
        other => panic!("expected NotDeviceMemory at 0x1000, got {other:?}"),
    }
    // A real allocation (2 MiB, so no rounding hides its end) and a tensor one element longer.
    let n = 1 << 19;
    let mut buffer = cuda_driver::DeviceBuffer::<f32>::alloc(device.context(), n).unwrap();
    buffer
        .copy_from_host(&(0..n).map(|i| i as f32).collect::<Vec<_>>())
        .unwrap();
    // SAFETY: only the address is read, to describe the buffer.
    let base = unsafe { buffer.as_raw() };
    let info = cuda_driver::PointerInfo::query(device.context(), base).unwrap();
    assert_eq!(info.memory_type, cuda_driver::MemoryType::Device);
    assert_eq!(info.device_ordinal, device.ordinal() as i32);
    let end = info.range_end();
    assert!(end >= base + 4 * n as u64, "{info:?}");
    let fits = ((end - base) / 4) as i64;
    match import_f32(&mut f32_tensor(&device, base, &mut [fits + 1], None, 0), &stream) {
        Err(Error::DLPack(DLPackError::OutOfAllocation {
            first,
            last,
            end: found,
            ..
        })) => {
            assert_eq!((first, last, found), (base, end + 3, end));
        }
        other => panic!("expected OutOfAllocation, got {other:?}"),
    }
    // A valid strided, offset import still works, and reads the buffer's elements.
    let (mut shape, mut strides) = ([2i64, 3], [1i64, 1000]);
    let view = import_f32(
        &mut f32_tensor(&device, base, &mut shape, Some(&mut strides), 8),
        &stream,
    )
    .unwrap();
    assert_eq!(view.to_vec().unwrap(), [2.0, 1002.0, 2002.0, 3.0, 1003.0, 2003.0]);
    drop(view);
    // The whole allocation, up to its last element, is fine too.
    let whole = import_f32(&mut f32_tensor(&device, base, &mut [n as i64], None, 0), &stream).unwrap();
    assert_eq!(whole.len(), n);
    drop(whole);
    stream.synchronize().unwrap();
    drop(buffer);
}

#[test]
fn imports_of_virtual_memory_stop_where_the_mapping_does() {
    let Some(device) = common::device_or_skip("imports_of_virtual_memory_stop_where_the_mapping_does") else {
        return;
    };
    let stream = device.create_stream().unwrap();
    let context = device.context();
    let probe = cuda_driver::VirtualBuffer::<f32>::reserve(context, 1).unwrap();
    let granule = probe.granularity() / 4;
    drop(probe);
    // Room for two granules, one mapped: a tensor one element past it reaches reserved,
    // unmapped addresses.
    let mut buffer = cuda_driver::VirtualBuffer::<f32>::reserve(context, 2 * granule).unwrap();
    buffer.grow(granule).unwrap();
    // SAFETY: only the address is read, to describe the buffer.
    let base = unsafe { buffer.as_raw() };
    let mapped_end = base + 4 * granule as u64;
    match import_f32(
        &mut f32_tensor(&device, base, &mut [granule as i64 + 1], None, 0),
        &stream,
    ) {
        Err(Error::DLPack(DLPackError::OutOfAllocation { end, .. })) => assert_eq!(end, mapped_end),
        other => panic!("expected OutOfAllocation at {mapped_end:#x}, got {other:?}"),
    }
    // A second piece mapped right after the first: one tensor over both (as PyTorch's
    // expandable segments make) is accepted and reads both.
    buffer.grow(2 * granule).unwrap();
    assert_eq!(buffer.pieces(), 2);
    buffer
        .copy_from_host(0, &(0..2 * granule).map(|i| i as f32).collect::<Vec<_>>())
        .unwrap();
    let (mut shape, mut strides) = ([2i64], [granule as i64]);
    let across = import_f32(
        &mut f32_tensor(&device, base, &mut shape, Some(&mut strides), 4),
        &stream,
    )
    .unwrap();
    assert_eq!(across.to_vec().unwrap(), [1.0, (granule + 1) as f32]);
    drop(across);
    stream.synchronize().unwrap();
    drop(buffer);
}
