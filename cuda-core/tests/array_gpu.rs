//! The pooled array layer on a GPU: pool reuse (same stream and across streams), arrays,
//! element-wise kernels, reductions and DLPack. Without a driver or device each test prints
//! `skipped: <why>` and passes, unless `CUDA_REQUIRE_GPU=1`, where that is a failure.

mod common;

use std::ffi::c_void;
use std::ptr;

use cuda_core::{
    launch, Arg, CompileTarget, DLDataType, DLDevice, DLDeviceType, DLManagedTensor, DLTensor, DType, Device,
    DeviceArray, ElementwiseKernel, Error, LaunchConfig, MemoryPool, Program, ProgramOptions, ReductionKernel,
};
use cuda_sys::driver::CUresult;

#[test]
fn pool_reuses_a_freed_block_on_its_stream_without_the_driver() {
    let Some(device) = common::device_or_skip("pool_reuses_a_freed_block_on_its_stream_without_the_driver") else {
        return;
    };
    let stream = device.create_stream().unwrap();
    let pool = MemoryPool::new(device.context());
    let first = pool.alloc(&stream, 1 << 20).unwrap();
    // SAFETY: the address is only compared.
    let address = unsafe { first.as_raw() };
    assert_eq!(first.reserved_bytes(), 1 << 20);
    drop(first);
    let stats = pool.stats();
    assert_eq!(
        (stats.used_bytes, stats.held_bytes, stats.cached_blocks),
        (0, 1 << 20, 1)
    );
    let second = pool.alloc(&stream, (1 << 20) - 100).unwrap();
    // SAFETY: as above.
    assert_eq!(unsafe { second.as_raw() }, address, "the cached block comes back");
    let stats = pool.stats();
    assert_eq!((stats.hits, stats.misses, stats.used_bytes), (1, 1, 1 << 20));
    let other_class = pool.alloc(&stream, 1 << 10).unwrap();
    assert_eq!(pool.stats().misses, 2);
    drop((second, other_class));
    pool.free_all_blocks().unwrap();
    let stats = pool.stats();
    assert_eq!((stats.used_bytes, stats.held_bytes, stats.cached_blocks), (0, 0, 0));
    stream.synchronize().unwrap();
    assert!(matches!(pool.alloc(&stream, 0), Err(Error::InvalidValue(_))));
}

#[test]
fn a_block_reused_on_another_stream_waits_for_the_first() {
    let Some(device) = common::device_or_skip("a_block_reused_on_another_stream_waits_for_the_first") else {
        return;
    };
    let (s1, s2) = (device.create_stream().unwrap(), device.create_stream().unwrap());
    let pool = MemoryPool::new(device.context());
    let n = 64 << 20; // 256 MiB of f32
    let mut a = DeviceArray::<f32>::empty_in(&pool, &s1, n).unwrap();
    // SAFETY: compared only.
    let address = unsafe { a.as_raw() };
    // Keep s1 busy writing 1.0 for a while, then free the array on s1 (no host wait).
    for _ in 0..40 {
        a.fill(1.0).unwrap();
    }
    drop(a);
    let mut b = DeviceArray::<f32>::empty_in(&pool, &s2, n).unwrap();
    // SAFETY: compared only.
    assert_eq!(unsafe { b.as_raw() }, address, "the block cached on s1 is handed to s2");
    b.fill(2.0).unwrap();
    let values = b.to_vec().unwrap();
    assert!(
        values.iter().all(|&v| v == 2.0),
        "s1's fills ran after s2's: {} elements are not 2.0",
        values.iter().filter(|&&v| v != 2.0).count()
    );
}

#[test]
fn arrays_round_trip_fill_copy_and_reshape() {
    let Some(device) = common::device_or_skip("arrays_round_trip_fill_copy_and_reshape") else {
        return;
    };
    let stream = device.create_stream().unwrap();
    let data: Vec<f64> = (0..1000).map(|i| i as f64 * 0.5).collect();
    let x = DeviceArray::from_slice(&stream, &data).unwrap();
    assert_eq!((x.len(), x.shape(), x.ndim()), (1000, &[1000][..], 1));
    assert_eq!(x.to_vec().unwrap(), data);
    let x = x.reshape([10, 100]).unwrap();
    assert_eq!((x.shape(), x.strides()), (&[10, 100][..], &[100, 1][..]));
    assert!(matches!(
        x.try_clone().unwrap().reshape([3, 3]),
        Err(Error::InvalidValue(_))
    ));
    let mut y = DeviceArray::<f64>::zeros(&stream, [10, 100]).unwrap();
    assert!(y.to_vec().unwrap().iter().all(|&v| v == 0.0));
    y.copy_from(&x).unwrap();
    assert_eq!(y.to_vec().unwrap(), data);
    let mut wrong = DeviceArray::<f64>::zeros(&stream, 1000).unwrap();
    assert!(
        matches!(wrong.copy_from(&x), Err(Error::InvalidValue(_))),
        "shapes differ"
    );
    assert!(matches!(wrong.copy_from_host(&data[..10]), Err(Error::InvalidValue(_))));
    y.fill(-3.25).unwrap();
    assert!(
        y.to_vec().unwrap().iter().all(|&v| v == -3.25),
        "8-byte fill (generated kernel)"
    );
    let mut bytes = DeviceArray::<u8>::empty(&stream, 77).unwrap();
    bytes.fill(0xab).unwrap();
    assert_eq!(bytes.to_vec().unwrap(), vec![0xab; 77]);
    let mut shorts = DeviceArray::<i16>::empty(&stream, 33).unwrap();
    shorts.fill(-1234).unwrap();
    assert_eq!(shorts.to_vec().unwrap(), vec![-1234; 33]);
    let mut ints = DeviceArray::<u32>::empty(&stream, 5).unwrap();
    ints.fill(0xdead_beef).unwrap();
    assert_eq!(ints.to_vec().unwrap(), vec![0xdead_beef; 5]);
    let empty = DeviceArray::<f32>::zeros(&stream, [4, 0]).unwrap();
    assert_eq!(
        (empty.len(), empty.shape(), empty.to_vec().unwrap()),
        (0, &[4, 0][..], vec![])
    );
    let empty = DeviceArray::<f32>::from_slice(&stream, &[]).unwrap();
    assert!(empty.is_empty());
    assert!(matches!(
        DeviceArray::<f32>::empty(&stream, [usize::MAX, 2]),
        Err(Error::InvalidValue(_))
    ));
}

fn axpy_checked<T>(device: &Device, n: usize, a: T, x_of: impl Fn(usize) -> T, y_of: impl Fn(usize) -> T)
where
    T: cuda_core::Element + PartialEq + std::fmt::Debug + std::ops::Mul<Output = T> + std::ops::Add<Output = T>,
{
    let stream = device.create_stream().unwrap();
    let kernel = ElementwiseKernel::new("T a, T x, T y", "T z", "z = a * x + y", "axpy_test").unwrap();
    let (hx, hy): (Vec<T>, Vec<T>) = ((0..n).map(&x_of).collect(), (0..n).map(&y_of).collect());
    let x = DeviceArray::from_slice(&stream, &hx).unwrap();
    let y = DeviceArray::from_slice(&stream, &hy).unwrap();
    let mut z = DeviceArray::<T>::empty(&stream, n).unwrap();
    // SAFETY: `z = a * x + y` reads its elements and assigns its element of `z` only.
    unsafe {
        kernel.launch(
            &stream,
            &[Arg::scalar(a), Arg::from(&x), Arg::from(&y), Arg::from(&mut z)],
        )
    }
    .unwrap();
    let result = z.to_vec().unwrap();
    for i in 0..n {
        assert_eq!(result[i], a * hx[i] + hy[i], "element {i} of {n}");
    }
}

#[test]
fn elementwise_axpy_f32_and_f64() {
    let Some(device) = common::device_or_skip("elementwise_axpy_f32_and_f64") else {
        return;
    };
    // Sizes around the vector width and unroll, and one large enough for many grid strides.
    for n in [1, 3, 4, 7, 8, 1023, 1_000_003, 3 << 20] {
        axpy_checked(&device, n, 2.0f32, |i| (i % 1000) as f32 * 0.25, |i| (i % 7) as f32);
        axpy_checked(&device, n, 2.0f64, |i| i as f64 * 0.125, |i| -(i as f64));
    }
}

#[test]
fn elementwise_reads_outputs_uses_the_index_and_checks_arguments() {
    let Some(device) = common::device_or_skip("elementwise_reads_outputs_uses_the_index_and_checks_arguments") else {
        return;
    };
    let stream = device.create_stream().unwrap();
    let accumulate = ElementwiseKernel::new("T x", "T z", "z += x * (T)(i % 3)", "accumulate_test").unwrap();
    let n = 10_001;
    let x = DeviceArray::from_slice(&stream, &vec![2i32; n]).unwrap();
    let mut z = DeviceArray::from_slice(&stream, &(0..n as i32).collect::<Vec<_>>()).unwrap();
    // SAFETY: `z += x * (T)(i % 3)` reads its elements and updates its element of `z` only.
    let accumulate = |args: &[Arg<'_>]| unsafe { accumulate.launch(&stream, args) };
    accumulate(&[Arg::from(&x), Arg::from(&mut z)]).unwrap();
    let result = z.to_vec().unwrap();
    for (i, &v) in result.iter().enumerate() {
        assert_eq!(v, i as i32 + 2 * (i as i32 % 3), "element {i}");
    }
    let short = DeviceArray::<i32>::zeros(&stream, n - 1).unwrap();
    let error = accumulate(&[Arg::from(&short), Arg::from(&mut z)]).unwrap_err();
    assert!(error.to_string().contains("cannot be broadcast together"), "{error}");
    let error = accumulate(&[Arg::from(&x), Arg::from(&z)]).unwrap_err();
    assert!(error.to_string().contains("&mut array"), "{error}");
    let floats = DeviceArray::<f32>::zeros(&stream, n).unwrap();
    let error = accumulate(&[Arg::from(&floats), Arg::from(&mut z)]).unwrap_err();
    assert!(error.to_string().contains("already float"), "{error}");
    let error = accumulate(&[Arg::from(&x)]).unwrap_err();
    assert!(error.to_string().contains("takes 2 arguments"), "{error}");
}

#[test]
fn elementwise_on_another_stream_is_ordered_after_the_arrays_stream() {
    let Some(device) = common::device_or_skip("elementwise_on_another_stream_is_ordered_after_the_arrays_stream")
    else {
        return;
    };
    let (s1, s2) = (device.create_stream().unwrap(), device.create_stream().unwrap());
    let n = 32 << 20;
    let mut x = DeviceArray::<f32>::empty(&s1, n).unwrap();
    for _ in 0..20 {
        x.fill(3.0).unwrap(); // queued on s1
    }
    let mut z = DeviceArray::<f32>::empty(&s2, n).unwrap();
    let double = ElementwiseKernel::new("T x", "T z", "z = x + x", "double_test").unwrap();
    // SAFETY: `z = x + x` reads its element of `x` and assigns its element of `z` only.
    unsafe { double.launch(&s2, &[Arg::from(&x), Arg::from(&mut z)]) }.unwrap();
    assert!(
        z.to_vec().unwrap().iter().all(|&v| v == 6.0),
        "s2 waited for s1's fills"
    );
    drop(x); // freed on s1 after s2's use
    s1.synchronize().unwrap();
}

#[test]
fn unaligned_arrays_use_the_scalar_kernel() {
    let Some(device) = common::device_or_skip("unaligned_arrays_use_the_scalar_kernel") else {
        return;
    };
    let stream = device.create_stream().unwrap();
    let n = 1001usize;
    let backing = DeviceArray::from_slice(&stream, &(0..=n as i32).map(|i| i as f32).collect::<Vec<_>>()).unwrap();
    let mut shape = [n as i64];
    let mut view = DLManagedTensor {
        dl_tensor: DLTensor {
            // SAFETY: the address is used while `backing` lives, on its stream.
            data: unsafe { backing.as_raw() } as *mut c_void,
            device: DLDevice {
                device_type: DLDeviceType::CUDA,
                device_id: device.ordinal() as i32,
            },
            ndim: 1,
            dtype: DLDataType::from(DType::F32),
            shape: shape.as_mut_ptr(),
            strides: ptr::null_mut(),
            byte_offset: 4,
        },
        manager_ctx: ptr::null_mut(),
        deleter: None,
    };
    // SAFETY: the tensor describes elements 1..=n of `backing`, which outlives the view; no
    // deleter; used on `backing`'s stream only.
    let shifted = unsafe { DeviceArray::<f32>::from_dlpack(&mut view, &stream) }.unwrap();
    let mut out = DeviceArray::<f32>::empty(&stream, n).unwrap();
    let kernel = ElementwiseKernel::new("T x", "T z", "z = x * 2", "scale_unaligned_test").unwrap();
    // SAFETY: `z = x * 2` reads its element of `x` and assigns its element of `z` only.
    unsafe { kernel.launch(&stream, &[Arg::from(&shifted), Arg::from(&mut out)]) }.unwrap();
    let expected: Vec<f32> = (1..=n).map(|i| i as f32 * 2.0).collect();
    assert_eq!(out.to_vec().unwrap(), expected);
    drop(shifted);
    drop(backing);
}

#[test]
fn sum_f32_and_f64_match_the_host() {
    let Some(device) = common::device_or_skip("sum_f32_and_f64_match_the_host") else {
        return;
    };
    let stream = device.create_stream().unwrap();
    for n in [1usize, 5, 1000, 1 << 20, (1 << 24) + 3] {
        let h32: Vec<f32> = (0..n).map(|i| ((i * 7919) % 1000) as f32 / 1000.0).collect();
        let x = DeviceArray::from_slice(&stream, &h32).unwrap();
        let total = x.sum().unwrap().item().unwrap();
        let expected: f64 = h32.iter().map(|&v| f64::from(v)).sum();
        let tolerance = 1e-5 * expected.abs().max(1.0);
        assert!(
            (f64::from(total) - expected).abs() <= tolerance,
            "f32 n={n}: {total} vs {expected}"
        );
        let h64: Vec<f64> = (0..n).map(|i| (i as f64).sin()).collect();
        let x = DeviceArray::from_slice(&stream, &h64).unwrap();
        let total = x.sum().unwrap().item().unwrap();
        let expected: f64 = h64.iter().sum();
        assert!(
            (total - expected).abs() <= 1e-9 * (n as f64).max(1.0),
            "f64 n={n}: {total} vs {expected}"
        );
    }
}

#[test]
fn custom_reductions_with_post_map_and_scalars() {
    let Some(device) = common::device_or_skip("custom_reductions_with_post_map_and_scalars") else {
        return;
    };
    let stream = device.create_stream().unwrap();
    let norm = ReductionKernel::new("T x", "T y", "x * x", "a + b", "y = sqrt(a)", "0", "l2_test", None).unwrap();
    let x = DeviceArray::from_slice(&stream, &[3.0f64, 4.0, 12.0]).unwrap();
    let mut y = DeviceArray::<f64>::empty(&stream, 1).unwrap();
    // SAFETY: the expressions compute with the values given; `y = sqrt(a)` assigns the output.
    unsafe { norm.launch(&stream, &[Arg::from(&x), Arg::from(&mut y)]) }.unwrap();
    assert_eq!(y.to_vec().unwrap(), [13.0]);
    let max = ReductionKernel::new(
        "T x, T bias",
        "T y",
        "x + bias",
        "max(a, b)",
        "y = a",
        "-2147483647 - 1",
        "max_test",
        None,
    )
    .unwrap();
    let values: Vec<i32> = (0..100_000).map(|i| (i * 7919) % 100_003 - 50_000).collect();
    let x = DeviceArray::from_slice(&stream, &values).unwrap();
    let mut y = DeviceArray::<i32>::empty(&stream, 1).unwrap();
    // SAFETY: as for `norm`.
    unsafe { max.launch(&stream, &[Arg::from(&x), Arg::scalar(10i32), Arg::from(&mut y)]) }.unwrap();
    assert_eq!(y.to_vec().unwrap()[0], values.iter().max().unwrap() + 10);
}

#[test]
fn dlpack_export_and_import_round_trip() {
    let Some(device) = common::device_or_skip("dlpack_export_and_import_round_trip") else {
        return;
    };
    let stream = device.create_stream().unwrap();
    let pool = MemoryPool::new(device.context());
    let data: Vec<i64> = (0..600).map(|i| i * i).collect();
    let mut x = DeviceArray::<i64>::empty_in(&pool, &stream, [20, 30]).unwrap();
    x.copy_from_host(&data).unwrap();
    let used_before = pool.stats().used_bytes;
    assert_eq!(used_before, cuda_core::size_class(600 * 8).unwrap(), "one block in use");
    let tensor = x.into_dlpack(None).unwrap();
    // SAFETY: `tensor` was just exported and is valid until its deleter runs.
    unsafe {
        let t = &(*tensor).dl_tensor;
        assert_eq!(
            (t.ndim, t.device.device_type, t.byte_offset),
            (2, DLDeviceType::CUDA, 0)
        );
        assert_eq!(std::slice::from_raw_parts(t.shape, 2), [20, 30]);
        assert_eq!(std::slice::from_raw_parts(t.strides, 2), [30, 1]);
        assert_eq!(t.dtype, DLDataType::from(DType::I64));
    }
    // SAFETY: the tensor is ours; importing it with the wrong type fails and leaves it to us.
    assert!(matches!(
        unsafe { DeviceArray::<f64>::from_dlpack(tensor, &stream) },
        Err(Error::DLPack(cuda_core::DLPackError::WrongDType { .. }))
    ));
    // SAFETY: as above, with the right type: the array takes the tensor over.
    let y = unsafe { DeviceArray::<i64>::from_dlpack(tensor, &stream) }.unwrap();
    assert_eq!(y.shape(), [20, 30]);
    assert_eq!(y.to_vec().unwrap(), data);
    assert_eq!(pool.stats().used_bytes, used_before, "still in use through the tensor");
    drop(y); // calls the deleter, which returns the memory to the pool
    assert_eq!(pool.stats().used_bytes, 0, "the deleter gave the block back");
}

#[test]
fn arrays_pass_to_user_kernels() {
    let Some(device) = common::device_or_skip("arrays_pass_to_user_kernels") else {
        return;
    };
    device.set_current().unwrap();
    let source = r#"extern "C" __global__ void iota(int *out, unsigned n) {
        unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n) out[i] = 3 * i;
    }"#;
    let code = Program::new(source, ProgramOptions::default())
        .compile(CompileTarget::Cubin)
        .unwrap();
    let kernel = code.get_kernel_on(&device, "iota").unwrap();
    let stream = device.create_stream().unwrap();
    let mut out = DeviceArray::<i32>::zeros(&stream, 300).unwrap();
    // SAFETY: iota writes 300 ints of `out`, one per thread below n.
    unsafe { launch(&stream, &LaunchConfig::for_num_elems(300), &kernel, (&mut out, 300u32)) }.unwrap();
    assert_eq!(out.to_vec().unwrap(), (0..300).map(|i| 3 * i).collect::<Vec<i32>>());
}

#[test]
fn an_impossible_allocation_is_a_driver_error_after_the_cache_is_freed() {
    let Some(device) = common::device_or_skip("an_impossible_allocation_is_a_driver_error_after_the_cache_is_freed")
    else {
        return;
    };
    let stream = device.create_stream().unwrap();
    let pool = MemoryPool::new(device.context());
    drop(pool.alloc(&stream, 4096).unwrap());
    assert_eq!(pool.stats().cached_blocks, 1);
    let error = pool.alloc(&stream, 1 << 50).unwrap_err();
    assert!(error.driver_code().is_some(), "{error}");
    if error.driver_code() == Some(CUresult::CUDA_ERROR_OUT_OF_MEMORY) {
        assert_eq!(pool.stats().cached_blocks, 0, "the cache was freed before retrying");
    }
    assert!(pool.alloc(&stream, 4096).is_ok(), "the pool still works");
}

#[test]
fn raw_kernels_compile_per_context_and_instantiate_templates() {
    let Some(device) = common::device_or_skip("raw_kernels_compile_per_context_and_instantiate_templates") else {
        return;
    };
    let source = r#"
    extern "C" __global__ void iota_raw(int *out, unsigned n) {
        unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n) out[i] = i;
    }
    template <typename T> __global__ void scale_raw(T *data, T factor, unsigned n) {
        unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n) data[i] *= factor;
    }"#;
    let stream = device.create_stream().unwrap();
    let iota = cuda_core::RawKernel::new(source, "iota_raw", ProgramOptions::default()).unwrap();
    let mut ints = DeviceArray::<i32>::empty(&stream, 1000).unwrap();
    // SAFETY: iota_raw writes `n` ints of `ints`, one per thread below `n`.
    unsafe { iota.launch(&stream, &LaunchConfig::for_num_elems(1000), (&mut ints, 1000u32)) }.unwrap();
    assert_eq!(ints.to_vec().unwrap(), (0..1000).collect::<Vec<i32>>());
    let first = iota.kernel_for(device.context()).unwrap();
    let again = iota.kernel_for(device.context()).unwrap();
    assert!(std::sync::Arc::ptr_eq(&first, &again), "loaded once per context");
    let scale = cuda_core::RawKernel::new(source, "scale_raw<double>", ProgramOptions::default()).unwrap();
    let mut doubles = DeviceArray::from_slice(&stream, &[1.0f64, 2.0, 3.0]).unwrap();
    // SAFETY: scale_raw<double> scales `n` doubles of `doubles` in place.
    unsafe { scale.launch(&stream, &LaunchConfig::for_num_elems(3), (&mut doubles, 2.5f64, 3u32)) }.unwrap();
    assert_eq!(doubles.to_vec().unwrap(), [2.5, 5.0, 7.5]);
    // SAFETY: never launched: the argument count is refused on the host.
    let error = unsafe { scale.launch(&stream, &LaunchConfig::for_num_elems(3), (&mut doubles, 3u32)) }.unwrap_err();
    assert!(error.to_string().contains("parameters"), "{error}");
}

#[test]
fn integer_creation_is_exact_and_linspace_floors() {
    let Some(device) = common::device_or_skip("integer_creation_is_exact_and_linspace_floors") else {
        return;
    };
    let stream = device.create_stream().unwrap();
    let big = 1i64 << 60;
    let a = DeviceArray::<i64>::arange(&stream, big, big + 10, 1).unwrap();
    assert_eq!(a.to_vec().unwrap(), (big..big + 10).collect::<Vec<_>>());
    let top = DeviceArray::<u64>::arange(&stream, u64::MAX - 4, u64::MAX, 2).unwrap();
    assert_eq!(top.to_vec().unwrap(), [u64::MAX - 4, u64::MAX - 2]);
    let down = DeviceArray::<i64>::arange(&stream, (1 << 53) + 3, 1 << 53, -1).unwrap();
    assert_eq!(down.to_vec().unwrap(), [(1 << 53) + 3, (1 << 53) + 2, (1 << 53) + 1]);
    let small = DeviceArray::<i8>::arange(&stream, 127, -128, -100).unwrap();
    assert_eq!(small.to_vec().unwrap(), [127, 27, -73]);
    assert!(matches!(
        DeviceArray::<i32>::arange(&stream, 0, 5, 0),
        Err(Error::InvalidValue(_))
    ));
    let lin = DeviceArray::<i32>::linspace(&stream, -5.0, 0.0, 4, true).unwrap();
    assert_eq!(lin.to_vec().unwrap(), [-5, -4, -2, 0]);
    let lin = DeviceArray::<i32>::linspace(&stream, 0.0, -2.5, 2, true).unwrap();
    assert_eq!(lin.to_vec().unwrap(), [0, -3], "the endpoint is floored too");
}

#[test]
fn huge_views_are_errors_not_panics() {
    let Some(device) = common::device_or_skip("huge_views_are_errors_not_panics") else {
        return;
    };
    let stream = device.create_stream().unwrap();
    let x = DeviceArray::<f64>::zeros(&stream, 1).unwrap();
    assert!(matches!(x.broadcast_to([1usize << 62]), Err(Error::InvalidValue(_))));
    let wide = x.broadcast_to([1usize << 59]).unwrap();
    assert_eq!(wide.size_bytes(), 1 << 62);
    assert!(
        matches!(wide.to_vec(), Err(Error::InvalidValue(_))),
        "4 EiB do not fit the host"
    );
    let y = DeviceArray::<f32>::arange(&stream, 0.0, 8.0, 1.0).unwrap();
    let first = y.slice(&[cuda_core::Slice::from(..).step(isize::MAX)]).unwrap();
    assert_eq!((first.shape(), first.strides()), (&[1][..], &[1][..]));
    assert_eq!(first.to_vec().unwrap(), [0.0]);
    let none = y.slice(&[cuda_core::Slice::from(usize::MAX)]).unwrap();
    assert!(none.is_empty());
}

#[test]
fn floats_print_scientific_from_their_types_precision() {
    let Some(device) = common::device_or_skip("floats_print_scientific_from_their_types_precision") else {
        return;
    };
    let stream = device.create_stream().unwrap();
    let h = DeviceArray::from_slice(&stream, &[half::f16::from_f32(2048.0)]).unwrap();
    assert_eq!(h.to_string(), "[2.048e+03]");
    let f = DeviceArray::from_slice(&stream, &[1e7f32]).unwrap();
    assert_eq!(f.to_string(), "[1.e+07]");
}

#[test]
fn creation_and_joining_routines_match_numpy() {
    let Some(device) = common::device_or_skip("creation_and_joining_routines_match_numpy") else {
        return;
    };
    let stream = device.create_stream().unwrap();
    assert_eq!(
        cuda_core::DeviceArray::<f32>::eye(&stream, 2, 3, 1)
            .unwrap()
            .to_vec()
            .unwrap(),
        [0.0, 1.0, 0.0, 0.0, 0.0, 1.0]
    );
    assert_eq!(
        cuda_core::DeviceArray::<i32>::identity(&stream, 3)
            .unwrap()
            .to_vec()
            .unwrap(),
        [1, 0, 0, 0, 1, 0, 0, 0, 1]
    );
    assert_eq!(
        cuda_core::DeviceArray::<u8>::tri(&stream, 3, 2, -1)
            .unwrap()
            .to_vec()
            .unwrap(),
        [0, 0, 1, 0, 1, 1]
    );
    assert_eq!(
        cuda_core::DeviceArray::<f32>::eye(&stream, 0, 4, 0).unwrap().shape(),
        [0, 4]
    );
    let h = cuda_core::DeviceArray::<half::f16>::identity(&stream, 2).unwrap();
    assert_eq!(h.to_vec().unwrap()[3], half::f16::ONE);
    let x = cuda_core::DeviceArray::from_slice(&stream, &[1i64, 2, 3, 4, 5, 6])
        .unwrap()
        .reshape([2, 3])
        .unwrap();
    assert_eq!(cuda_core::DeviceArray::ones_like(&x).unwrap().to_vec().unwrap(), [1; 6]);
    assert_eq!(cuda_core::DeviceArray::full_like(&x, 7).unwrap().shape(), [2, 3]);
    // Triangles, of a matrix, of a transposed view, of a 1-D array, batched.
    assert_eq!(x.tril(0).unwrap().to_vec().unwrap(), [1, 0, 0, 4, 5, 0]);
    assert_eq!(x.triu(1).unwrap().to_vec().unwrap(), [0, 2, 3, 0, 0, 6]);
    assert_eq!(x.transpose().tril(-1).unwrap().to_vec().unwrap(), [0, 0, 2, 0, 3, 6]);
    let v = cuda_core::DeviceArray::from_slice(&stream, &[1.0f32, 2.0]).unwrap();
    assert_eq!(v.triu(0).unwrap().to_vec().unwrap(), [1.0, 2.0, 0.0, 2.0]);
    let batch = cuda_core::DeviceArray::<f64>::ones(&stream, [2, 2, 2]).unwrap();
    assert_eq!(
        batch.tril(0).unwrap().to_vec().unwrap(),
        [1.0, 0.0, 1.0, 1.0, 1.0, 0.0, 1.0, 1.0]
    );
    assert!(matches!(
        cuda_core::DeviceArray::from_slice(&stream, &[1.0f32])
            .unwrap()
            .reshape([0usize; 0])
            .unwrap()
            .tril(0),
        Err(Error::InvalidValue(_))
    ));
    // Joining.
    let y = cuda_core::DeviceArray::from_slice(&stream, &[7i64, 8, 9])
        .unwrap()
        .reshape([1, 3])
        .unwrap();
    let joined = cuda_core::DeviceArray::concatenate(&[&x, &y], 0).unwrap();
    assert_eq!(joined.shape(), [3, 3]);
    assert_eq!(joined.to_vec().unwrap(), [1, 2, 3, 4, 5, 6, 7, 8, 9]);
    let side = cuda_core::DeviceArray::concatenate(
        &[
            &x,
            &x.slice(&[cuda_core::Slice::from(..), cuda_core::Slice::from(1..)])
                .unwrap(),
        ],
        1,
    )
    .unwrap();
    assert_eq!(side.to_vec().unwrap(), [1, 2, 3, 2, 3, 4, 5, 6, 5, 6]);
    assert!(matches!(
        cuda_core::DeviceArray::concatenate(&[&x, &y], 1),
        Err(Error::InvalidValue(_))
    ));
    assert!(matches!(
        cuda_core::DeviceArray::<i64>::concatenate(&[], 0),
        Err(Error::InvalidValue(_))
    ));
    let stacked = cuda_core::DeviceArray::stack(&[&x, &x], 2).unwrap();
    assert_eq!(stacked.shape(), [2, 3, 2]);
    assert_eq!(stacked.to_vec().unwrap()[..4], [1, 1, 2, 2]);
    let a = cuda_core::DeviceArray::from_slice(&stream, &[1u8, 2]).unwrap();
    let b = cuda_core::DeviceArray::from_slice(&stream, &[3u8]).unwrap();
    assert_eq!(
        cuda_core::DeviceArray::hstack(&[&a, &b]).unwrap().to_vec().unwrap(),
        [1, 2, 3]
    );
    let rows = cuda_core::DeviceArray::vstack(&[&a, &a]).unwrap();
    assert_eq!(
        (rows.shape(), rows.to_vec().unwrap()),
        (&[2usize, 2][..], vec![1, 2, 1, 2])
    );
    // flip: a copy.
    assert_eq!(x.flip([1]).unwrap().to_vec().unwrap(), [3, 2, 1, 6, 5, 4]);
    assert_eq!(x.flip([0, 1]).unwrap().to_vec().unwrap(), [6, 5, 4, 3, 2, 1]);
    assert_eq!(x.transpose().flip([0]).unwrap().to_vec().unwrap(), [3, 6, 2, 5, 1, 4]);
    assert_eq!(
        x.flip(cuda_core::Axes::EMPTY).unwrap().to_vec().unwrap(),
        x.to_vec().unwrap()
    );
    // NumPy's axis=None reverses every axis; negative axes count from the end.
    assert_eq!(x.flip(None).unwrap().to_vec().unwrap(), [6, 5, 4, 3, 2, 1]);
    assert_eq!(x.flip(-1).unwrap().to_vec().unwrap(), [3, 2, 1, 6, 5, 4]);
    assert_eq!(x.flip([-2, 1]).unwrap().to_vec().unwrap(), [6, 5, 4, 3, 2, 1]);
    assert!(matches!(x.flip([2]), Err(Error::Axis { axis: 2, ndim: 2 })));
    assert!(matches!(x.flip([1, -1]), Err(Error::InvalidValue(m)) if m.contains("repeated axis")));
    let cube = cuda_core::DeviceArray::<i32>::arange(&stream, 0, 32, 1)
        .unwrap()
        .reshape([2, 2, 2, 2, 2])
        .unwrap();
    let all = cube.flip([0, 1, 2, 3, 4]).unwrap().to_vec().unwrap();
    assert_eq!(all, (0..32).rev().collect::<Vec<i32>>(), "five axes: two gathers");
}
