//! On a GPU: pitched memory and 2-D/3-D copies, managed memory, module and
//! library globals, occupancy, virtual memory, IPC handles (with a child
//! process), and texture and surface objects, each checked against a host
//! reference. Without a GPU every test prints `skipped: ...` and passes
//! (fails under `CUDA_REQUIRE_GPU=1`).

mod common;

use cuda_driver::{
    Advice, DeviceBuffer, Error, LaunchConfig, ManagedBuffer, MemoryLocation, Pitched, PitchedBuffer, PitchedMut,
    Stream,
};

/// The host reference of a block copy between packed `(width, height, depth)` arrays.
fn reference_copy<T: Copy>(
    destination: (&mut [T], (usize, usize)),
    to: (usize, usize, usize),
    source: (&[T], (usize, usize)),
    from: (usize, usize, usize),
    extent: (usize, usize, usize),
) {
    let ((destination, destination_shape), (source, source_shape)) = (destination, source);
    for z in 0..extent.2 {
        for y in 0..extent.1 {
            for x in 0..extent.0 {
                let s = ((from.2 + z) * source_shape.1 + from.1 + y) * source_shape.0 + from.0 + x;
                let d = ((to.2 + z) * destination_shape.1 + to.1 + y) * destination_shape.0 + to.0 + x;
                destination[d] = source[s];
            }
        }
    }
}

// ---------------------------------------------------------------- pitched memory, 2-D and 3-D copies

#[test]
fn pitched_2d_copies_between_host_and_device_match_the_reference() {
    let Some(context) = common::context() else { return };
    let stream = Stream::new(&context).unwrap();
    let (width, height) = (300, 70);
    let image: Vec<f32> = (0..width * height).map(|i| (i as f32).sin()).collect();
    let mut pitched = PitchedBuffer::<f32>::alloc(&context, width, height).unwrap();
    assert!(pitched.pitch_bytes() >= width * 4, "{pitched:?}");
    pitched.copy_from_host(&image).unwrap();
    assert_eq!(pitched.to_vec().unwrap(), image);

    // pitched -> packed device at an offset, then packed device -> host at another
    let (packed_width, packed_height) = (128, 40);
    let mut packed = DeviceBuffer::<f32>::zeroed(&context, packed_width * packed_height).unwrap();
    PitchedMut::device(packed.as_slice_mut(), packed_width, packed_height)
        .unwrap()
        .copy_2d_from((5, 7), &pitched.view(), (150, 20), (100, 30), &stream)
        .unwrap();
    let mut want = vec![0.0f32; packed_width * packed_height];
    reference_copy(
        (&mut want, (packed_width, packed_height)),
        (5, 7, 0),
        (&image, (width, height)),
        (150, 20, 0),
        (100, 30, 1),
    );
    stream.synchronize().unwrap();
    assert_eq!(packed.to_vec().unwrap(), want);

    let mut host = vec![-1.0f32; 64 * 64];
    PitchedMut::host(&mut host, 64, 64)
        .unwrap()
        .copy_2d_from(
            (3, 2),
            &Pitched::device(&packed, packed_width, packed_height).unwrap(),
            (10, 10),
            (50, 20),
            &stream,
        )
        .unwrap();
    let mut host_want = vec![-1.0f32; 64 * 64];
    reference_copy(
        (&mut host_want, (64, 64)),
        (3, 2, 0),
        (&want, (packed_width, packed_height)),
        (10, 10, 0),
        (50, 20, 1),
    );
    assert_eq!(host, host_want);

    // pitched -> pitched, device to device, overlapping rows of different buffers
    let mut second = PitchedBuffer::<f32>::alloc(&context, 200, 50).unwrap();
    second.copy_from_host(&vec![0.0; 200 * 50]).unwrap();
    second
        .view_mut()
        .copy_2d_from((1, 1), &pitched.view(), (0, 0), (199, 49), &stream)
        .unwrap();
    stream.synchronize().unwrap();
    let mut second_want = vec![0.0f32; 200 * 50];
    reference_copy(
        (&mut second_want, (200, 50)),
        (1, 1, 0),
        (&image, (width, height)),
        (0, 0, 0),
        (199, 49, 1),
    );
    assert_eq!(second.to_vec().unwrap(), second_want);
    context.synchronize().unwrap();
}

#[test]
fn pitched_3d_copies_match_the_reference() {
    let Some(context) = common::context() else { return };
    let stream = Stream::new(&context).unwrap();
    let shape = (33, 17, 9);
    let volume: Vec<u32> = (0..(shape.0 * shape.1 * shape.2) as u32).collect();
    let mut pitched = PitchedBuffer::<u32>::alloc_3d(&context, 20, 12, 6).unwrap();
    pitched.copy_from_host(&vec![7; 20 * 12 * 6]).unwrap();
    pitched
        .view_mut()
        .copy_3d_from(
            (2, 3, 1),
            &Pitched::host(&volume, shape.0, shape.1).unwrap(),
            (10, 4, 3),
            (15, 8, 5),
            &stream,
        )
        .unwrap();
    let mut want = vec![7u32; 20 * 12 * 6];
    reference_copy(
        (&mut want, (20, 12)),
        (2, 3, 1),
        (&volume, (shape.0, shape.1)),
        (10, 4, 3),
        (15, 8, 5),
    );
    assert_eq!(pitched.to_vec().unwrap(), want);

    // device to device, into a packed volume
    let mut packed = DeviceBuffer::<u32>::zeroed(&context, 10 * 10 * 4).unwrap();
    PitchedMut::device(packed.as_slice_mut(), 10, 10)
        .unwrap()
        .copy_3d_from((0, 1, 0), &pitched.view(), (3, 3, 1), (10, 9, 4), &stream)
        .unwrap();
    stream.synchronize().unwrap();
    let mut packed_want = vec![0u32; 10 * 10 * 4];
    reference_copy(
        (&mut packed_want, (10, 10)),
        (0, 1, 0),
        (&want, (20, 12)),
        (3, 3, 1),
        (10, 9, 4),
    );
    assert_eq!(packed.to_vec().unwrap(), packed_want);

    // out of bounds: refused on the host
    let result = pitched.view_mut().copy_3d_from(
        (0, 0, 5),
        &pitched_source(&volume, shape),
        (0, 0, 0),
        (1, 1, 2),
        &stream,
    );
    assert!(matches!(result, Err(Error::InvalidValue(_))), "{result:?}");
    context.synchronize().unwrap();
}

fn pitched_source(volume: &[u32], shape: (usize, usize, usize)) -> Pitched<'_, u32> {
    Pitched::host(volume, shape.0, shape.1).unwrap()
}

// ---------------------------------------------------------------- managed memory

#[test]
fn managed_memory_is_shared_by_host_and_kernels() {
    let Some(context) = common::context() else { return };
    let device = context.device();
    assert!(device.managed_memory().unwrap(), "an H200 has managed memory");
    let module = common::kernels(&context);
    let (fill, saxpy) = (module.function("fill").unwrap(), module.function("saxpy").unwrap());
    let stream = Stream::new(&context).unwrap();
    // 1 MiB of floats: small, so it never asks for more than the card has free.
    let n = 1 << 18;
    let initial: Vec<f32> = (0..n).map(|i| (i % 97) as f32).collect();
    let mut x = ManagedBuffer::<f32>::from_slice(&context, &initial).unwrap();
    x.advise(Advice::SetPreferredLocation(MemoryLocation::Device(device)))
        .unwrap();
    x.advise(Advice::SetAccessedBy(MemoryLocation::Device(device))).unwrap();
    x.prefetch(MemoryLocation::Device(device), &stream).unwrap();
    // SAFETY: fill writes the first n/2 floats of the n that `x` holds.
    unsafe {
        stream
            .launch(
                &fill,
                &LaunchConfig::for_num_elems(n as u32 / 2),
                (&mut x, 4.5f32, n as u32 / 2),
            )
            .unwrap()
    };
    x.prefetch(MemoryLocation::Host, &stream).unwrap();
    let mut want = initial.clone();
    want[..n / 2].fill(4.5);
    assert_eq!(x.host_slice().unwrap(), &want[..], "host reads the kernel's writes");

    // host writes, then a kernel reads them: y = 2 x + y
    x.advise(Advice::SetReadMostly).unwrap();
    for (i, value) in x.host_slice_mut().unwrap().iter_mut().enumerate().skip(n / 2) {
        *value = -(i as f32);
    }
    let mut y = DeviceBuffer::from_slice(&context, &vec![1.0f32; n]).unwrap();
    // SAFETY: saxpy reads n floats of x and reads and writes n of y.
    unsafe {
        stream
            .launch(
                &saxpy,
                &LaunchConfig::for_num_elems(n as u32),
                (2.0f32, &x, &mut y, n as u32),
            )
            .unwrap()
    };
    stream.synchronize().unwrap();
    let expected: Vec<f32> = x.host_slice().unwrap().iter().map(|v| 2.0 * v + 1.0).collect();
    assert_eq!(y.to_vec().unwrap(), expected);
    x.advise(Advice::UnsetReadMostly).unwrap();
    x.advise(Advice::UnsetPreferredLocation).unwrap();
    x.advise(Advice::UnsetAccessedBy(MemoryLocation::Device(device)))
        .unwrap();
    context.synchronize().unwrap();
}
