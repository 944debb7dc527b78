//! cuda-driver's pitched memory and 2-D/3-D copies, managed memory, module
//! variables, occupancy, raw-address stream operations and the JIT linker
//! against the stand-in driver: results checked
//! against a host reference, bad input refused before any driver call, and
//! every driver call of each sequence failing once (immediate and deferred
//! stream work) without a panic, leak or double free.

use cuda_driver::{
    Advice, ArrayFlags, CaptureMode, Context, ContextFlags, CudaArray, Device, DeviceBuffer, Error, Event, EventFlags,
    FilterMode, Global, IpcEventHandle, IpcMemHandle, IpcMemory, LaunchConfig, Library, ManagedBuffer, MemPool,
    MemPoolOptions, MemoryLocation, Module, Occupancy, Pitched, PitchedBuffer, PitchedMut, PoolAccess,
    PoolPointerExport, Result, Stream, SurfaceObject, TextureDesc, TextureObject, VirtualBuffer,
};
use tests::checks::{assert_clean, assert_invalid, setup};
use tests::fake;
use tests::faults;
use tests::sequences::{expect, primary};

/// The host reference of a block copy between packed `(width, height, depth)` arrays.
#[allow(clippy::too_many_arguments)]
fn reference_copy<T: Copy>(
    destination: &mut [T],
    destination_shape: (usize, usize),
    to: (usize, usize, usize),
    source: &[T],
    source_shape: (usize, usize),
    from: (usize, usize, usize),
    extent: (usize, usize, usize),
) {
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

/// Runs `sequence` once per failure point, immediate and deferred, and
/// fails on any broken promise.
fn every_failure_point(name: &str, sequence: fn() -> Result<()>) {
    faults::assert_every_failure_point_clean(&fake::session(), name, &sequence);
}

// ---------------------------------------------------------------- pitched memory, 2-D and 3-D copies

/// Host to pitched device memory and back, a sub-rectangle device to device
/// and device to host, and a 3-D block; each checked against the reference.
fn pitched_copies() -> Result<()> {
    let context = primary()?;
    let stream = Stream::new(&context)?;
    let (width, height) = (37, 5);
    let image: Vec<f32> = (0..width * height).map(|i| i as f32 * 0.5).collect();
    let mut pitched = PitchedBuffer::<f32>::alloc(&context, width, height)?;
    expect("pitch covers a row", pitched.pitch_bytes() >= width * 4, true)?;
    pitched.copy_from_host(&image)?;
    expect("round trip", pitched.to_vec()?, image.clone())?;

    // a 10 x 3 block at (20, 1) of the pitched image into a packed device buffer at (2, 4)
    let (packed_width, packed_height) = (16, 8);
    let mut packed = DeviceBuffer::<f32>::zeroed(&context, packed_width * packed_height)?;
    PitchedMut::device(packed.as_slice_mut(), packed_width, packed_height)?.copy_2d_from(
        (2, 4),
        &pitched.view(),
        (20, 1),
        (10, 3),
        &stream,
    )?;
    let mut want = vec![0.0f32; packed_width * packed_height];
    reference_copy(
        &mut want,
        (packed_width, packed_height),
        (2, 4, 0),
        &image,
        (width, height),
        (20, 1, 0),
        (10, 3, 1),
    );
    stream.synchronize()?;
    expect("device to device block", packed.to_vec()?, want.clone())?;

    // part of it back to the host, into the middle of a host image
    let mut host = vec![-1.0f32; 12 * 6];
    PitchedMut::host(&mut host, 12, 6)?.copy_2d_from(
        (1, 1),
        &Pitched::device(&packed, packed_width, packed_height)?,
        (3, 4),
        (9, 3),
        &stream,
    )?;
    let mut host_want = vec![-1.0f32; 12 * 6];
    reference_copy(
        &mut host_want,
        (12, 6),
        (1, 1, 0),
        &want,
        (packed_width, packed_height),
        (3, 4, 0),
        (9, 3, 1),
    );
    expect("device to host block", host, host_want)?;

    // 3-D: a 3 x 2 x 2 block at (2, 1, 1) of a packed 7 x 5 x 3 host volume into a pitched volume at (1, 2, 0)
    let volume: Vec<u32> = (0..7 * 5 * 3).collect();
    let mut pitched_volume = PitchedBuffer::<u32>::alloc_3d(&context, 6, 4, 2)?;
    let zeros = vec![0u32; 6 * 4 * 2];
    pitched_volume.copy_from_host(&zeros)?;
    pitched_volume
        .view_mut()
        .copy_3d_from((1, 2, 0), &Pitched::host(&volume, 7, 5)?, (2, 1, 1), (3, 2, 2), &stream)?;
    let mut volume_want = zeros;
    reference_copy(
        &mut volume_want,
        (6, 4),
        (1, 2, 0),
        &volume,
        (7, 5),
        (2, 1, 1),
        (3, 2, 2),
    );
    expect("3-D block", pitched_volume.to_vec()?, volume_want)?;
    context.synchronize()
}

#[test]
fn pitched_copies_match_the_host_reference() {
    let fake = fake::session();
    pitched_copies().unwrap();
    // The stand-in pads rows to 512 bytes.
    let context = primary().unwrap();
    let buffer = PitchedBuffer::<u8>::alloc(&context, 513, 2).unwrap();
    assert_eq!(buffer.pitch_bytes(), 1024);
    drop((buffer, context));
    assert_clean(&fake);
}

#[test]
fn pitched_copies_fail_cleanly_at_every_failure_point() {
    every_failure_point("pitched copies", pitched_copies);
}

#[test]
fn bad_blocks_and_shapes_are_refused_before_the_driver() {
    let (fake, context) = setup();
    let stream = Stream::new(&context).unwrap();
    let mut pitched = PitchedBuffer::<f32>::alloc(&context, 8, 4).unwrap();
    let host = vec![0.0f32; 8 * 4];
    let calls = fake.calls();
    assert_invalid(PitchedBuffer::<f32>::alloc(&context, 0, 4), "at least one");
    assert_invalid(PitchedBuffer::<f32>::alloc(&context, 4, 0), "empty");
    assert_invalid(PitchedBuffer::<f32>::alloc_3d(&context, 4, usize::MAX, 2), "overflows");
    assert_invalid(PitchedBuffer::<f32>::alloc(&context, usize::MAX / 2, 1), "overflow");
    assert_invalid(Pitched::host(&host, 5, 2), "whole number");
    assert_invalid(Pitched::host(&host, 0, 2), "empty");
    assert_invalid(Pitched::<f32>::host(&[], 1, 1), "whole number");
    let source = Pitched::host(&host, 8, 4).unwrap();
    assert_eq!((source.width(), source.height(), source.depth()), (8, 4, 1));
    let mut view = pitched.view_mut();
    assert_invalid(view.copy_2d_from((1, 0), &source, (0, 0), (8, 1), &stream), "exceeds");
    assert_invalid(view.copy_2d_from((0, 0), &source, (0, 3), (1, 2), &stream), "exceeds");
    assert_invalid(
        view.copy_2d_from((usize::MAX, 0), &source, (0, 0), (1, 1), &stream),
        "exceeds",
    );
    assert_invalid(
        view.copy_3d_from((0, 0, 1), &source, (0, 0, 0), (1, 1, 1), &stream),
        "exceeds",
    );
    // an empty block copies nothing and asks nothing of the driver
    view.copy_2d_from((8, 4), &source, (0, 0), (0, 0), &stream).unwrap();
    assert_invalid(pitched.copy_from_host(&host[1..]), "31 elements");
    assert_eq!(fake.calls(), calls, "refused before any driver call");

    // a stream of another context
    let other = Context::new(&Device::get(1).unwrap(), ContextFlags::empty()).unwrap();
    let other_stream = Stream::new(&other).unwrap();
    let result = pitched
        .view_mut()
        .copy_2d_from((0, 0), &source, (0, 0), (1, 1), &other_stream);
    assert!(matches!(result, Err(Error::WrongContext { .. })), "{result:?}");
    drop((other_stream, other, pitched, stream, context));
    assert_clean(&fake);
}

// ---------------------------------------------------------------- managed memory

/// Managed memory written by the host, advised, prefetched, filled by a
/// kernel in part and read back by the host after it.
fn managed_memory() -> Result<()> {
    let context = primary()?;
    let device = context.device();
    let fill = Module::from_ptx(&context, fake::KERNELS)?.function("fill")?;
    let stream = Stream::new(&context)?;
    let mut data = ManagedBuffer::<f32>::from_slice(&context, &[1.0; 1000])?;
    expect("length", (data.len(), data.size_bytes()), (1000, 4000))?;
    data.advise(Advice::SetPreferredLocation(MemoryLocation::Device(device)))?;
    data.advise(Advice::SetAccessedBy(MemoryLocation::Host))?;
    data.advise(Advice::SetReadMostly)?;
    data.prefetch(MemoryLocation::Device(device), &stream)?;
    // SAFETY: fill writes the first 500 floats of the 1000 `data` holds.
    unsafe { stream.launch(&fill, &LaunchConfig::for_num_elems(500), (&mut data, 4.5f32, 500u32))? };
    data.prefetch(MemoryLocation::Host, &stream)?;
    let mut want = vec![4.5f32; 500];
    want.extend([1.0; 500]);
    expect("after the kernel", data.host_slice()?, &want[..])?;
    data.host_slice_mut()?[999] = -2.0;
    want[999] = -2.0;
    let copy = DeviceBuffer::from_slice(&context, data.host_slice()?)?;
    expect("copied from managed memory", copy.to_vec()?, want)?;
    data.advise(Advice::UnsetReadMostly)?;
    context.synchronize()
}

#[test]
fn managed_memory_is_shared_by_host_and_kernels() {
    let fake = fake::session();
    managed_memory().unwrap();
    assert_clean(&fake);
}

#[test]
fn managed_memory_fails_cleanly_at_every_failure_point() {
    every_failure_point("managed memory", managed_memory);
}

#[test]
fn managed_memory_bad_input() {
    let (fake, context) = setup();
    let calls = fake.calls();
    assert_invalid(ManagedBuffer::<f32>::new(&context, 0), "at least one");
    assert_invalid(ManagedBuffer::<u64>::new(&context, usize::MAX / 4), "overflow");
    assert_invalid(ManagedBuffer::<u8>::from_slice(&context, &[]), "at least one");
    assert_eq!(fake.calls(), calls, "refused before any driver call");
    let data = ManagedBuffer::<u8>::new(&context, 64).unwrap();
    assert_eq!(data.host_slice().unwrap(), [0; 64], "zeroed");
    let other = Context::new(&Device::get(1).unwrap(), ContextFlags::empty()).unwrap();
    let other_stream = Stream::new(&other).unwrap();
    let result = data.prefetch(MemoryLocation::Host, &other_stream);
    assert!(matches!(result, Err(Error::WrongContext { .. })), "{result:?}");
    // a kernel of another context may not take it
    let fill = Module::from_ptx(&other, fake::KERNELS)
        .unwrap()
        .function("fill")
        .unwrap();
    let mut floats = ManagedBuffer::<f32>::new(&context, 4).unwrap();
    // SAFETY: refused before launching.
    let result = unsafe { other_stream.launch(&fill, &LaunchConfig::for_num_elems(4), (&mut floats, 1.0f32, 4u32)) };
    assert!(matches!(result, Err(Error::WrongContext { .. })), "{result:?}");
    // the driver's error, typed
    fake.fail_named("cuMemAdvise_v2", fake::UNKNOWN);
    let result = data.advise(Advice::SetAccessedBy(MemoryLocation::Device(Device::get(1).unwrap())));
    fake.clear_faults();
    assert_eq!(result.unwrap_err().code().map(|c| c.0), Some(fake::UNKNOWN as u32));
    drop((fill, floats, data, other_stream, other, context));
    assert_clean(&fake);
}

// ---------------------------------------------------------------- module and library variables

/// A `__constant__` array, a `__device__` scalar and a kernel, as NVRTC declares them.
const VARIABLES: &str = "\
.version 8.0
.target sm_90
.address_size 64
.visible .const .align 4 .b8 coefficients[16];
.visible .global .align 8 .u64 counter;
.visible .global .align 4 .f32 grid[4][8];
.visible .entry fill(.param .u64 out, .param .f32 value, .param .u32 n)
{
    ld.global.f32 %f1, [%rd1];
}
";

/// Variables of a module and of a library in two contexts: written, read
/// back, kept alive by their `Global`.
fn module_variables() -> Result<()> {
    let context = primary()?;
    let module = Module::from_ptx(&context, VARIABLES)?;
    let mut coefficients = Global::<f32>::from_module(&module, "coefficients")?;
    expect("constant array length", coefficients.len(), 4)?;
    expect("zeroed", coefficients.to_vec()?, vec![0.0; 4])?;
    coefficients.copy_from_host(&[1.0, 0.5, 0.25, 0.125])?;
    let mut counter = Global::<u64>::from_module(&module, "counter")?;
    counter.copy_from_host(&[41])?;
    let grid = Global::<[f32; 8]>::from_module(&module, "grid")?;
    expect("rows of a 2-D array", grid.len(), 4)?;
    drop(module);
    // the variables keep the module loaded
    let mut back = [0.0f32; 4];
    coefficients.copy_to_host(&mut back)?;
    expect("constant array", back, [1.0, 0.5, 0.25, 0.125])?;
    expect("scalar", counter.to_vec()?, vec![41])?;

    let library = Library::from_ptx(VARIABLES)?;
    let other = Context::new(&Device::get(1)?, ContextFlags::empty())?;
    let mut here = Global::<u64>::from_library(&library, &context, "counter")?;
    let mut there = Global::<u64>::from_library(&library, &other, "counter")?;
    here.copy_from_host(&[1])?;
    there.copy_from_host(&[2])?;
    expect(
        "one copy per context",
        (here.to_vec()?, there.to_vec()?),
        (vec![1], vec![2]),
    )?;
    expect(
        "owner",
        (here.library().is_some(), coefficients.module().is_some()),
        (true, true),
    )?;
    other.synchronize()?;
    context.synchronize()
}

#[test]
fn module_variables_are_typed_symbols() {
    let fake = fake::session();
    module_variables().unwrap();
    assert_clean(&fake);
}

#[test]
fn module_variables_fail_cleanly_at_every_failure_point() {
    every_failure_point("module variables", module_variables);
}

#[test]
fn module_variables_bad_input() {
    let (fake, context) = setup();
    let module = Module::from_ptx(&context, VARIABLES).unwrap();
    let calls = fake.calls();
    assert_invalid(Global::<f32>::from_module(&module, "coeff\0icients"), "NUL");
    assert_eq!(fake.calls(), calls, "refused before any driver call");
    assert_invalid(Global::<[f32; 3]>::from_module(&module, "coefficients"), "16 bytes");
    assert_invalid(Global::<[u8; 0]>::from_module(&module, "counter"), "whole number");
    let unknown = Global::<f32>::from_module(&module, "missing").unwrap_err();
    assert_eq!(
        unknown.code().map(|c| c.0),
        Some(500),
        "CUDA_ERROR_NOT_FOUND: {unknown}"
    );
    let mut coefficients = Global::<f32>::from_module(&module, "coefficients").unwrap();
    assert_invalid(coefficients.copy_from_host(&[1.0; 3]), "holds 4 elements");
    assert_invalid(coefficients.copy_to_host(&mut [0.0; 5]), "5 were given");
    // a kernel's name is not a variable
    assert!(Global::<u8>::from_module(&module, "fill").is_err());
    drop((coefficients, module, context));
    assert_clean(&fake);
}

// ---------------------------------------------------------------- occupancy

/// Occupancy of a configuration, the configurations chosen by it, and a
/// launch with each, checked by its result.
fn occupancy() -> Result<()> {
    let context = primary()?;
    let fill = Module::from_ptx(&context, fake::KERNELS)?.function("fill")?;
    let occupancy = fill.occupancy(&LaunchConfig::new((1, 1, 1), (16, 16, 1)))?;
    expect(
        "occupancy of 256-thread blocks",
        occupancy,
        Occupancy {
            blocks_per_multiprocessor: 8,
            threads_per_multiprocessor: 2048,
            max_threads_per_multiprocessor: 2048,
        },
    )?;
    expect("fraction", occupancy.fraction(), 1.0)?;
    let n = 5000;
    let config = fill.occupancy_config(n, 0)?;
    expect("suggested", config, LaunchConfig::new((5, 1, 1), (1024, 1, 1)))?;
    let resident = fill.resident_config(256, 1024)?;
    expect(
        "resident",
        resident,
        LaunchConfig::new((8 * 132, 1, 1), (256, 1, 1)).with_shared_mem(1024),
    )?;
    expect(
        "available shared memory",
        fill.available_dynamic_shared_memory(2, 256)?,
        115_712,
    )?;
    let stream = Stream::new(&context)?;
    let mut out = DeviceBuffer::<f32>::zeroed(&context, n as usize)?;
    // SAFETY: fill writes n floats of `out`, which holds n; the grid covers n.
    unsafe { stream.launch(&fill, &config, (&mut out, 2.5f32, n))? };
    stream.synchronize()?;
    expect("filled", out.to_vec()?, vec![2.5; n as usize])?;
    context.synchronize()
}

#[test]
fn occupancy_chooses_launch_configurations() {
    let fake = fake::session();
    occupancy().unwrap();
    assert_clean(&fake);
}

#[test]
fn occupancy_fails_cleanly_at_every_failure_point() {
    every_failure_point("occupancy", occupancy);
}

#[test]
fn occupancy_bad_input() {
    let (fake, context) = setup();
    let fill = Module::from_ptx(&context, fake::KERNELS)
        .unwrap()
        .function("fill")
        .unwrap();
    let calls = fake.calls();
    assert_invalid(fill.occupancy_config(0, 0), "at least one element");
    assert_invalid(fill.occupancy(&LaunchConfig::new((1, 1, 1), (0, 1, 1))), "no threads");
    assert_invalid(
        fill.occupancy(&LaunchConfig::new((1, 1, 1), (65536, 65536, 1))),
        "too many",
    );
    assert_invalid(
        fill.available_dynamic_shared_memory(0, 256),
        "blocks per multiprocessor",
    );
    assert_invalid(fill.available_dynamic_shared_memory(1, u32::MAX), "block size");
    assert_eq!(fake.calls(), calls, "refused before any driver call");
    // more shared memory than a multiprocessor has: nothing fits
    assert_invalid(fill.resident_config(256, 1 << 20), "fits");
    // the driver's refusal of a block above 1024 threads, typed
    let error = fill.resident_config(2048, 0).unwrap_err();
    assert_eq!(error.code().map(|c| c.0), Some(1), "{error}");
    assert_eq!(
        fill.available_dynamic_shared_memory(4, 1024).unwrap(),
        0,
        "4 x 1024 threads never fit"
    );
    drop((fill, context));
    assert_clean(&fake);
}

/// cuda-core's thin layer over the same: a `Kernel`'s launch configurations from occupancy, and a
/// launch with one.
#[test]
fn cuda_core_launch_configs_from_occupancy() {
    let fake = fake::session();
    {
        let code = cuda_core::ObjectCode::from_ptx(fake::KERNELS).unwrap();
        let kernel = code.get_kernel("fill").unwrap();
        let config = kernel.occupancy_config(5000, 0).unwrap();
        assert_eq!(config, cuda_core::LaunchConfig::new((5, 1, 1), (1024, 1, 1)));
        let resident = kernel.resident_config(128, 0).unwrap();
        assert_eq!(resident.grid, (16 * 132, 1, 1));
        assert!(kernel.occupancy_config(0, 0).is_err());
        let context = kernel.function().context().clone();
        let stream = Stream::new(&context).unwrap();
        let mut out = DeviceBuffer::<f32>::zeroed(&context, 5000).unwrap();
        // SAFETY: fill writes 5000 floats of `out`, which holds 5000; the grid covers them.
        unsafe { cuda_core::launch(&stream, &config, &kernel, (&mut out, 0.75f32, 5000u32)).unwrap() };
        stream.synchronize().unwrap();
        assert_eq!(out.to_vec().unwrap(), vec![0.75; 5000]);
    }
    assert_clean(&fake);
}

// ---------------------------------------------------------------- virtual memory management

/// A buffer reserved once and grown in pieces: the base stays, contents
/// are kept, a kernel writes across the boundary of two pieces.
fn virtual_buffer() -> Result<()> {
    let context = primary()?;
    let fill = Module::from_ptx(&context, fake::KERNELS)?.function("fill")?;
    let stream = Stream::new(&context)?;
    let mut buffer = VirtualBuffer::<f32>::reserve(&context, 100_000)?;
    let granularity = buffer.granularity();
    expect("granularity", granularity, 65536)?;
    expect("capacity rounded up", buffer.capacity(), 7 * granularity / 4)?;
    // SAFETY: the address is only compared.
    let base = unsafe { buffer.as_raw() };
    buffer.grow(1000)?;
    let first: Vec<f32> = (0..1000).map(|i| i as f32).collect();
    buffer.copy_from_host(0, &first)?;
    buffer.grow(40_000)?;
    expect("pieces", (buffer.len(), buffer.pieces()), (40_000, 2))?;
    // SAFETY: as above.
    expect("base", unsafe { buffer.as_raw() }, base)?;
    expect("kept", buffer.to_vec()?[..1000].to_vec(), first)?;
    // SAFETY: fill writes 40000 floats, all backed.
    unsafe {
        stream.launch(
            &fill,
            &LaunchConfig::for_num_elems(40_000),
            (&mut buffer, 2.0f32, 40_000u32),
        )?
    };
    stream.synchronize()?;
    let mut tail = [0.0f32; 10];
    buffer.copy_to_host(39_990, &mut tail)?;
    expect("tail", tail, [2.0; 10])?;
    expect("all", buffer.to_vec()?, vec![2.0; 40_000])?;
    buffer.grow(40_001)?;
    expect("no new piece within the last", buffer.pieces(), 2)?;
    context.synchronize()
}

#[test]
fn virtual_buffers_grow_without_moving() {
    let fake = fake::session();
    virtual_buffer().unwrap();
    assert_clean(&fake);
}

#[test]
fn virtual_buffers_fail_cleanly_at_every_failure_point() {
    every_failure_point("virtual buffer", virtual_buffer);
}

#[test]
fn virtual_buffers_bad_input() {
    let (fake, context) = setup();
    let calls = fake.calls();
    assert_invalid(VirtualBuffer::<f32>::reserve(&context, 0), "at least one");
    assert_invalid(VirtualBuffer::<u64>::reserve(&context, usize::MAX / 4), "overflow");
    assert_eq!(fake.calls(), calls, "refused before any driver call");
    let mut buffer = VirtualBuffer::<u32>::reserve(&context, 10).unwrap();
    assert_invalid(buffer.grow(buffer.capacity() + 1), "exceed the reserved capacity");
    assert_invalid(buffer.copy_from_host(0, &[1]), "exceed the 0 backed");
    buffer.grow(10).unwrap();
    assert_invalid(buffer.copy_from_host(5, &[1; 6]), "exceed the 10 backed");
    assert_invalid(buffer.copy_to_host(usize::MAX, &mut [0; 2]), "exceed");
    assert_eq!(buffer.to_vec().unwrap().len(), 10);
    // past the backed granule the stand-in holds no memory, as a device would fault
    // SAFETY: the copy only reads the device side, which the stand-in checks first.
    let beyond = unsafe {
        let mut out = [0u8; 4];
        cuda_driver::sys::driver().unwrap().cuMemcpyDtoH_v2().unwrap()(
            out.as_mut_ptr().cast(),
            buffer.as_raw() + 65536,
            4,
        )
    };
    assert_eq!(beyond.0, 1, "CUDA_ERROR_INVALID_VALUE");
    fake.reset(); // the refused copy counted as a use of an unknown address
    drop((buffer, context));
    assert_clean(&fake);
}

// ---------------------------------------------------------------- inter-process sharing

/// A buffer exported by one context and opened in another (the stand-in's
/// approximation of another process): both see each other's writes, and a
/// view longer than the allocation is refused.
fn ipc_memory() -> Result<()> {
    let context = primary()?;
    let data: Vec<u32> = (0..300).collect();
    let mut buffer = DeviceBuffer::from_slice(&context, &data)?;
    let handle = IpcMemHandle::from_bytes(buffer.ipc_handle()?.to_bytes());
    let other = Context::new(&Device::get(1)?, ContextFlags::empty())?;
    match IpcMemory::<u32>::open(&other, &handle, 301) {
        Err(Error::InvalidValue(_)) => {}
        Err(error) => return Err(error),
        Ok(_) => return Err(Error::InvalidValue("a view past the allocation was opened".into())),
    }
    let mut opened = IpcMemory::<u32>::open(&other, &handle, 300)?;
    expect("read through the handle", opened.to_vec()?, data)?;
    opened.copy_from_host(&[7; 300])?;
    expect("written through the handle", buffer.to_vec()?, vec![7; 300])?;
    buffer.copy_from_host(&[9; 300])?;
    expect("seen through the handle", opened.to_vec()?[299], 9)?;
    drop(opened);
    other.synchronize()?;
    context.synchronize()
}

#[test]
fn ipc_memory_is_shared_between_contexts() {
    let fake = fake::session();
    ipc_memory().unwrap();
    assert_clean(&fake);
}

#[test]
fn ipc_memory_fails_cleanly_at_every_failure_point() {
    every_failure_point("IPC memory", ipc_memory);
}

/// Handles are plain bytes that round-trip; what cannot be shared is
/// refused before the driver; the driver's refusals are typed; the stand-in
/// has no IPC events, a typed error too.
#[test]
fn ipc_bad_input() {
    let (fake, context) = setup();
    let bytes: [u8; 64] = std::array::from_fn(|i| (i * 7) as u8);
    assert_eq!(IpcMemHandle::from_bytes(bytes).to_bytes(), bytes);
    assert_eq!(IpcEventHandle::from_bytes(bytes).to_bytes(), bytes);
    let stream = Stream::new(&context).unwrap();
    let pooled = DeviceBuffer::<f32>::alloc_async(&stream, 16).unwrap();
    let calls = fake.calls();
    assert_invalid(pooled.ipc_handle(), "stream-ordered");
    assert_invalid(
        IpcMemory::<f32>::open(&context, &IpcMemHandle::from_bytes(bytes), 0),
        "at least one",
    );
    assert_eq!(fake.calls(), calls, "refused before any driver call");
    // bytes that name nothing, and a handle opened where it was made
    let nothing = IpcMemory::<f32>::open(&context, &IpcMemHandle::from_bytes(bytes), 16).unwrap_err();
    assert_eq!(nothing.code().map(|c| c.0), Some(1), "{nothing}");
    let buffer = DeviceBuffer::<f32>::zeroed(&context, 16).unwrap();
    let handle = buffer.ipc_handle().unwrap();
    let own = IpcMemory::<f32>::open(&context, &handle, 16).unwrap_err();
    assert_eq!(own.code().map(|c| c.0), Some(201), "CUDA_ERROR_INVALID_CONTEXT: {own}");
    let event = Event::new(&context, EventFlags::INTERPROCESS | EventFlags::DISABLE_TIMING).unwrap();
    assert!(matches!(event.ipc_handle(), Err(Error::Symbol(_))));
    assert!(matches!(
        Event::open_ipc(&context, &IpcEventHandle::from_bytes(bytes)),
        Err(Error::Symbol(_))
    ));
    drop((event, buffer, pooled, stream, context));
    assert_clean(&fake);
}

// ---------------------------------------------------------------- memory pools shared between processes

const IPC_POOL: MemPoolOptions = MemPoolOptions {
    ipc_enabled: true,
    max_size: 0,
};

/// A pool exported by one context and imported, with one of its allocations, in another context
/// of the same device (the stand-in's approximation of another process): both sides see each
/// other's writes; the import is freed before the imported pool is destroyed and before the
/// exporter frees the allocation, although the imported pool's handle is dropped first.
fn ipc_pool() -> Result<()> {
    let context = primary()?;
    let device = context.device();
    let pool = MemPool::with_options(&device, &IPC_POOL)?;
    expect("made shareable", pool.is_ipc_enabled(), true)?;
    let peer = Device::get(1)?;
    expect("no access from a peer at first", pool.access(&peer)?, PoolAccess::None)?;
    pool.set_access(&peer, PoolAccess::Read)?;
    expect("read access from the peer", pool.access(&peer)?, PoolAccess::Read)?;
    let stream = Stream::new(&context)?;
    let data: Vec<u32> = (0..300).collect();
    let mut buffer = DeviceBuffer::<u32>::alloc_from_pool_async(&pool, &stream, 300)?;
    buffer.copy_from_host(&data)?;
    let export = PoolPointerExport::from_bytes(buffer.export_pool_pointer()?.to_bytes());
    expect("the size travels with the pointer", export.byte_len(), 1200)?;
    let other = Context::new(&device, ContextFlags::empty())?;
    let imported = {
        let fd = pool.export_fd()?;
        MemPool::import_fd(&other, std::os::fd::AsFd::as_fd(&fd))?
    };
    expect(
        "imported",
        (imported.is_imported(), imported.is_ipc_enabled()),
        (true, false),
    )?;
    expect(
        "access granted on import",
        imported.access(&device)?,
        PoolAccess::ReadWrite,
    )?;
    // SAFETY: `export` is what export_pool_pointer made, unchanged.
    let mut shared = unsafe { imported.import_pointer::<u32>(&export)? };
    expect("the import's context", shared.context() == &other, true)?;
    drop(imported); // the imported buffer keeps the pool
    expect("read through the import", shared.to_vec()?, data)?;
    shared.copy_from_host(&[7; 300])?;
    expect("written through the import", buffer.to_vec()?, vec![7; 300])?;
    drop(shared);
    // again, through a pool imported again, as another type (the stand-in tells two imports of
    // one allocation in one context apart by nothing but their order)
    let again = MemPool::import_fd(&other, std::os::fd::AsFd::as_fd(&pool.export_fd()?))?;
    // SAFETY: as above.
    let halves = unsafe { again.import_pointer::<u16>(&export)? };
    expect(
        "the same bytes as another type",
        halves.to_vec()?[..4].to_vec(),
        vec![7, 0, 7, 0],
    )?;
    expect("as many halves", halves.len(), 600)?;
    drop(halves);
    drop(buffer);
    stream.synchronize()?;
    other.synchronize()?;
    context.synchronize()
}

#[test]
fn ipc_pools_are_shared_between_contexts_and_freed_in_order() {
    let fake = fake::session();
    let violations = fake.pool_order_violations();
    ipc_pool().unwrap();
    assert_eq!(fake.pool_order_violations(), violations, "frees in the driver's order");
    assert_clean(&fake);
}

#[test]
fn ipc_pools_fail_cleanly_at_every_failure_point() {
    every_failure_point("IPC pool", ipc_pool);
}

/// The stand-in notices an exporter that frees an allocation an import still holds (what the
/// test above proves does not happen).
#[test]
fn an_exporter_freeing_first_is_noticed() {
    let (fake, context) = setup();
    let device = context.device();
    let pool = MemPool::with_options(&device, &IPC_POOL).unwrap();
    let stream = Stream::new(&context).unwrap();
    let buffer = DeviceBuffer::<u32>::alloc_from_pool_async(&pool, &stream, 16).unwrap();
    let other = Context::new(&device, ContextFlags::empty()).unwrap();
    let imported = MemPool::import_fd(&other, std::os::fd::AsFd::as_fd(&pool.export_fd().unwrap())).unwrap();
    // SAFETY: the export is what export_pool_pointer made.
    let shared = unsafe { imported.import_pointer::<u32>(&buffer.export_pool_pointer().unwrap()) }.unwrap();
    let violations = fake.pool_order_violations();
    drop(buffer);
    stream.synchronize().unwrap();
    assert_eq!(fake.pool_order_violations(), violations + 1);
    drop((shared, imported, other, stream, pool, context));
    assert_clean(&fake);
}

/// What cannot be shared is refused before the driver with typed errors; a device without
/// shareable pool handles is `DeviceUnsupported`; the driver's refusals are typed.
#[test]
fn ipc_pool_bad_input() {
    let (fake, context) = setup();
    let device = context.device();
    let bytes: [u8; 72] = std::array::from_fn(|i| (i * 5) as u8);
    assert_eq!(PoolPointerExport::from_bytes(bytes).to_bytes(), bytes);
    let stream = Stream::new(&context).unwrap();
    let private = MemPool::new(&device).unwrap();
    let from_private = DeviceBuffer::<f32>::alloc_from_pool_async(&private, &stream, 16).unwrap();
    let from_default = DeviceBuffer::<f32>::alloc_async(&stream, 16).unwrap();
    let plain = DeviceBuffer::<f32>::zeroed(&context, 16).unwrap();
    let exportable = MemPool::with_options(&device, &IPC_POOL).unwrap();
    let calls = fake.calls();
    let not_shareable = |result: Result<_>| assert!(matches!(result, Err(Error::NotShareable { .. })), "{result:?}");
    not_shareable(private.export_fd().map(drop));
    not_shareable(MemPool::device_default(&device).unwrap().export_fd().map(drop));
    for buffer in [&from_private, &from_default, &plain] {
        not_shareable(buffer.export_pool_pointer().map(drop));
    }
    // SAFETY: refused before the driver is asked (the pool is not imported); nothing is reached.
    not_shareable(unsafe { exportable.import_pointer::<f32>(&PoolPointerExport::from_bytes(bytes)) }.map(drop));
    let calls = calls + 2; // device_default's cuDeviceGetDefaultMemPool and its context binding
    assert!(fake.calls() <= calls, "refused before the driver: {}", fake.trace());

    // device 1 of the stand-in shares no pools
    let second = Context::new(&Device::get(1).unwrap(), ContextFlags::empty()).unwrap();
    for result in [
        MemPool::with_options(&second.device(), &IPC_POOL).map(drop),
        MemPool::import_fd(&second, std::os::fd::AsFd::as_fd(&exportable.export_fd().unwrap())).map(drop),
    ] {
        match result {
            Err(Error::DeviceUnsupported { device: 1, feature }) => {
                assert!(feature.contains("MEMPOOL_SUPPORTED_HANDLE_TYPES"), "{feature}")
            }
            other => panic!("expected DeviceUnsupported for device 1, got {other:?}"),
        }
    }

    let other = Context::new(&device, ContextFlags::empty()).unwrap();
    let imported = MemPool::import_fd(&other, std::os::fd::AsFd::as_fd(&exportable.export_fd().unwrap())).unwrap();
    let other_stream = Stream::new(&other).unwrap();
    let calls = fake.calls();
    let mut sized = bytes;
    for size in [0u64, 6] {
        sized[64..].copy_from_slice(&size.to_le_bytes());
        // SAFETY: refused on the host (the size); nothing is reached.
        let result = unsafe { imported.import_pointer::<f32>(&PoolPointerExport::from_bytes(sized)) };
        assert_invalid(result, "whole, non-zero");
    }
    assert_invalid(
        DeviceBuffer::<f32>::alloc_from_pool_async(&imported, &other_stream, 4),
        "hands out no allocations",
    );
    assert_eq!(fake.calls(), calls, "refused before the driver: {}", fake.trace());
    // bytes that name nothing; a file that is no pool; an import where the memory was made
    sized[64..].copy_from_slice(&64u64.to_le_bytes());
    // SAFETY: bytes that name no allocation, which the driver refuses; nothing is reached.
    let nothing = unsafe { imported.import_pointer::<f32>(&PoolPointerExport::from_bytes(sized)) }.unwrap_err();
    assert_eq!(
        nothing.code().map(|c| c.0),
        Some(1),
        "CUDA_ERROR_INVALID_VALUE: {nothing}"
    );
    let null = std::fs::File::open("/dev/null").unwrap();
    let not_a_pool = MemPool::import_fd(&context, std::os::fd::AsFd::as_fd(&null)).unwrap_err();
    assert_eq!(
        not_a_pool.code().map(|c| c.0),
        Some(1),
        "CUDA_ERROR_INVALID_VALUE: {not_a_pool}"
    );
    let mine = DeviceBuffer::<f32>::alloc_from_pool_async(&exportable, &stream, 16).unwrap();
    let here = MemPool::import_fd(&context, std::os::fd::AsFd::as_fd(&exportable.export_fd().unwrap())).unwrap();
    // SAFETY: the export is what export_pool_pointer made (and the driver refuses it here).
    let own = unsafe { here.import_pointer::<f32>(&mine.export_pool_pointer().unwrap()) }.unwrap_err();
    assert_eq!(own.code().map(|c| c.0), Some(201), "CUDA_ERROR_INVALID_CONTEXT: {own}");
    // an imported buffer has no legacy IPC handle
    // SAFETY: the export is what export_pool_pointer made.
    let shared = unsafe { imported.import_pointer::<f32>(&mine.export_pool_pointer().unwrap()) }.unwrap();
    assert_invalid(shared.ipc_handle(), "pool");
    drop((shared, here, mine, imported, other_stream, other, second));
    drop((exportable, plain, from_default, from_private, private, stream, context));
    assert_clean(&fake);
}

// ---------------------------------------------------------------- CUDA arrays, textures and surfaces

/// The sampling and surface kernels the stand-in runs on the host (`fakecuda/arrays.c`).
const SAMPLING: &str = "\
.version 8.0
.target sm_90
.address_size 64
.visible .entry sample(.param .u64 texture, .param .u64 out, .param .u32 w, .param .u32 h, .param .f32 dx)
.visible .entry scale_surface(.param .u64 surface, .param .u32 w, .param .u32 h, .param .f32 factor)
";

/// A 2-D float array written and read, sampled through point and linear
/// textures, scaled through a surface; 3-D and 4-channel arrays round-trip.
fn arrays_textures_surfaces() -> Result<()> {
    let context = primary()?;
    let module = Module::from_ptx(&context, SAMPLING)?;
    let (sample, scale) = (module.function("sample")?, module.function("scale_surface")?);
    let stream = Stream::new(&context)?;
    let (width, height) = (20usize, 6usize);
    let image: Vec<f32> = (0..width * height).map(|i| (i % 7) as f32).collect();
    let array = CudaArray::<f32>::new(&context, (width, height, 0), ArrayFlags::SURFACE_LOAD_STORE)?;
    array.copy_from_host(&image)?;
    expect("round trip", array.to_vec()?, image.clone())?;
    let grid = LaunchConfig::new((2, 1, 1), (16, 8, 1));
    let mut out = DeviceBuffer::<f32>::zeroed(&context, width * height)?;
    let (w, h) = (width as u32, height as u32);
    let point = TextureObject::new(&array, &TextureDesc::default())?;
    // SAFETY: sample writes w * h floats of `out`, which holds that many.
    unsafe { stream.launch(&sample, &grid, (&point, &mut out, w, h, 0.0f32))? };
    stream.synchronize()?;
    expect("point sampling", out.to_vec()?, image.clone())?;
    let linear = TextureObject::new(
        &array,
        &TextureDesc {
            filter: FilterMode::Linear,
            ..TextureDesc::default()
        },
    )?;
    // SAFETY: as above.
    unsafe { stream.launch(&sample, &grid, (&linear, &mut out, w, h, 0.5f32))? };
    stream.synchronize()?;
    let mean: Vec<f32> = (0..width * height)
        .map(|i| (image[i] + image[if i % width == width - 1 { i } else { i + 1 }]) / 2.0)
        .collect();
    expect("linear sampling", out.to_vec()?, mean)?;
    let surface = SurfaceObject::new(&array)?;
    // SAFETY: scale_surface reads and writes w x h floats of the array.
    unsafe { stream.launch(&scale, &grid, (&surface, w, h, 3.0f32))? };
    stream.synchronize()?;
    expect(
        "scaled",
        array.to_vec()?,
        image.iter().map(|v| v * 3.0).collect::<Vec<_>>(),
    )?;
    drop((point, linear, surface));
    let volume = CudaArray::<u16>::new(&context, (5, 4, 3), ArrayFlags::empty())?;
    let data: Vec<u16> = (0..60).collect();
    volume.copy_from_host(&data)?;
    expect("3-D round trip", volume.to_vec()?, data)?;
    let pixels = CudaArray::<[u8; 4]>::new(&context, (3, 0, 0), ArrayFlags::empty())?;
    pixels.copy_from_host(&[[1, 2, 3, 4], [5, 6, 7, 8], [9, 10, 11, 12]])?;
    let mut back = [[0u8; 4]; 3];
    pixels.copy_to_host(&mut back)?;
    expect("1-D four channels", back, [[1, 2, 3, 4], [5, 6, 7, 8], [9, 10, 11, 12]])?;
    context.synchronize()
}

#[test]
fn arrays_are_sampled_by_textures_and_written_by_surfaces() {
    let fake = fake::session();
    arrays_textures_surfaces().unwrap();
    assert_clean(&fake);
}

#[test]
fn arrays_fail_cleanly_at_every_failure_point() {
    every_failure_point("arrays, textures and surfaces", arrays_textures_surfaces);
}

#[test]
fn arrays_bad_input() {
    let (fake, context) = setup();
    let calls = fake.calls();
    assert_invalid(CudaArray::<f32>::new(&context, (0, 4, 0), ArrayFlags::empty()), "width");
    assert_invalid(
        CudaArray::<[u8; 4]>::new(&context, (4, 0, 2), ArrayFlags::SURFACE_LOAD_STORE),
        "depth needs a height",
    );
    assert_eq!(fake.calls(), calls, "refused before any driver call");
    let plain = CudaArray::<f32>::new(&context, (8, 8, 0), ArrayFlags::empty()).unwrap();
    let calls = fake.calls();
    assert_invalid(SurfaceObject::new(&plain), "SURFACE_LOAD_STORE");
    assert_invalid(plain.copy_from_host(&[0.0; 63]), "holds 64 elements, 63");
    assert_invalid(plain.copy_to_host(&mut [0.0; 65]), "65 were given");
    assert_eq!(fake.calls(), calls, "refused before any driver call");
    // the driver's limits and refusals, typed
    let huge = CudaArray::<f32>::new(&context, (1 << 20, 1 << 20, 0), ArrayFlags::empty());
    assert_eq!(huge.unwrap_err().code().map(|c| c.0), Some(1));
    let integers = CudaArray::<u8>::new(&context, (8, 8, 0), ArrayFlags::empty()).unwrap();
    let linear_integers = TextureDesc {
        filter: FilterMode::Linear,
        read_as_integer: true,
        ..TextureDesc::default()
    };
    let refused = TextureObject::new(&integers, &linear_integers).unwrap_err();
    assert_eq!(
        refused.code().map(|c| c.0),
        Some(801),
        "CUDA_ERROR_NOT_SUPPORTED: {refused}"
    );
    // a texture keeps its array alive past the array's own handle
    let texture = TextureObject::new(&plain, &TextureDesc::default()).unwrap();
    drop(plain);
    assert_eq!(fake.live(fake::Kind::Array), 2);
    drop(texture);
    assert_eq!(fake.live(fake::Kind::Array), 1);
    drop((integers, context));
    assert_clean(&fake);
}

// ---------------------------------------------------------------- releases during a capture

/// Virtual memory, arrays and texture and surface objects dropped while a
/// stream captures are released when the capture ends: releasing them then
/// would invalidate it (the stand-in refuses their releases as the driver
/// refuses cuMemFree).
#[test]
fn releases_during_a_capture_wait_for_its_end() {
    let (fake, context) = setup();
    let fill = Module::from_ptx(&context, fake::KERNELS)
        .unwrap()
        .function("fill")
        .unwrap();
    let stream = Stream::new(&context).unwrap();
    let mut used = VirtualBuffer::<f32>::reserve(&context, 1000).unwrap();
    used.grow(1000).unwrap();
    // SAFETY: fill writes 1000 floats, all backed.
    unsafe {
        stream
            .launch(&fill, &LaunchConfig::for_num_elems(1000), (&mut used, 1.0f32, 1000u32))
            .unwrap()
    };
    stream.synchronize().unwrap();
    let mut unused = VirtualBuffer::<u8>::reserve(&context, 10).unwrap();
    unused.grow(10).unwrap();
    let array = CudaArray::<f32>::new(&context, (4, 4, 0), ArrayFlags::SURFACE_LOAD_STORE).unwrap();
    let texture = TextureObject::new(&array, &TextureDesc::default()).unwrap();
    let surface = SurfaceObject::new(&array).unwrap();
    let live = fake.counts().live_handles();

    let mut out = DeviceBuffer::<f32>::zeroed(&context, 16).unwrap();
    let graph = stream
        .capture(CaptureMode::Global, |stream| {
            drop((used, unused, texture, surface, array));
            // SAFETY: fill writes 16 floats of `out`, which holds 16.
            unsafe { stream.launch(&fill, &LaunchConfig::for_num_elems(16), (&mut out, 5.0f32, 16u32)) }
        })
        .unwrap();
    // nothing was released inside the capture, which stayed valid
    let exec = graph.instantiate().unwrap();
    // SAFETY: the graph writes `out`, which outlives the replay.
    unsafe { exec.launch(&stream).unwrap() };
    stream.synchronize().unwrap();
    assert_eq!(out.to_vec().unwrap(), vec![5.0; 16]);
    assert!(fake.counts().live_handles() < live, "released once the capture ended");
    assert_eq!(fake.live(fake::Kind::AddressRange), 0);
    assert_eq!(fake.live(fake::Kind::Array), 0);
    context.synchronize().unwrap();
    drop((exec, graph, out, stream, fill, context));
    assert_clean(&fake);
}

// ---------------------------------------------------------------- raw-address stream operations

/// cuda-driver's raw-address stream operations, which cuda-core's pool and arrays use: a block
/// allocated in stream order, filled by 1-, 2- and 4-byte memsets, copied host to device, device
/// to device and back, freed in stream order (on every path), and the context waited for.
fn raw_memory() -> Result<()> {
    const BYTES: usize = 64;
    // Declared first, so that they outlive the stream and any copy still queued on it.
    let source: Vec<u8> = (0..BYTES as u8).collect();
    let (mut first, mut second) = (vec![0u8; BYTES], vec![0u8; BYTES]);
    let context = primary()?;
    let stream = Stream::new(&context)?;
    let block = stream.alloc_raw_async(2 * BYTES)?;
    let (a, b) = (block, block + BYTES as u64);
    // SAFETY (all of the closure): `a` and `b` are the two BYTES-long halves of `block`, freed
    // only after the closure; the host buffers hold BYTES bytes each and outlive the stream.
    let worked = (|| unsafe {
        stream.memset_d8_raw_async(a, 0xab, BYTES)?;
        stream.memset_d16_raw_async(a, 0x0102, 8)?;
        stream.memset_d32_raw_async(a + 32, 0x0a0b_0c0d, 4)?;
        stream.copy_raw_from_host_async(b, source.as_ptr().cast(), BYTES)?;
        stream.copy_raw_async(b + 48, a, 16)?;
        stream.copy_raw_to_host_async(first.as_mut_ptr().cast(), a, BYTES)?;
        stream.copy_raw_to_host_async(second.as_mut_ptr().cast(), b, BYTES)?;
        stream.synchronize()
    })();
    // SAFETY: `block` came from `alloc_raw_async` on this stream and is freed once, after the
    // work queued above.
    let freed = unsafe { stream.free_raw_async(block) };
    worked.and(freed).and(context.synchronize_quiet())?;
    let mut want_first = [0xabu8; BYTES];
    want_first[..16].copy_from_slice(&[0x02, 0x01].repeat(8));
    want_first[32..48].copy_from_slice(&[0x0d, 0x0c, 0x0b, 0x0a].repeat(4));
    expect("memsets", &first[..], &want_first[..])?;
    let mut want_second = source.clone();
    want_second[48..].copy_from_slice(&want_first[..16]);
    expect("copies", second, want_second)
}

#[test]
fn raw_memory_operations_match_the_host_reference() {
    let fake = fake::session();
    raw_memory().unwrap();
    assert_clean(&fake);
}

#[test]
fn raw_memory_operations_fail_cleanly_at_every_failure_point() {
    every_failure_point("raw memory", raw_memory);
}

/// The driver's JIT linker, which the stand-in lacks: a typed error naming the function, no
/// panic and nothing left behind.
#[test]
fn jit_linker_without_the_linker_functions_is_a_typed_error() {
    let (fake, context) = setup();
    match cuda_driver::JitLinker::new(&context, 90) {
        Err(Error::Symbol(missing)) => assert!(missing.to_string().contains("cuLinkCreate"), "{missing}"),
        Ok(_) => println!("the stand-in links: nothing to refuse"),
        Err(other) => panic!("expected a missing-symbol error, got {other:?}"),
    }
    drop(context);
    assert_clean(&fake);
}
