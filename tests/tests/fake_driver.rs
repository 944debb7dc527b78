//! The stand-in driver itself, through cuda-sys's raw calls: it must behave
//! like a driver (so tests of the safe layers mean something) and its
//! bookkeeping must be right (so their leak and double-free checks do).

use std::ffi::{c_uint, c_void, CStr};
use std::ptr;

use cuda_sys::driver::*;
use tests::fake::{self, Kind, Session};

/// Calls a driver function through cuda-sys and returns its raw result code.
macro_rules! cu {
    ($name:ident($($arg:expr),* $(,)?)) => {{
        let function = cuda_sys::driver().expect("driver").$name().expect(stringify!($name));
        // SAFETY: each test passes arguments that match the header declaration
        // (valid out-pointers, handles it created or deliberately stale ones,
        // which the fake refuses without dereferencing).
        unsafe { function($($arg),*) }.0 as i32
    }};
}

const SUCCESS: i32 = 0;
const INVALID_VALUE: i32 = 1;
const INVALID_HANDLE: i32 = 400;

const KERNELS: &str = "\
.version 8.0
.target sm_90
.visible .entry vector_add(.param .u64 a, .param .u64 b, .param .u64 c, .param .u32 n)
.visible .entry fill(.param .u64 .ptr .global .align 4 out, .param .f32 value, .param .u32 n)
.visible .entry affine(.param .align 4 .b8 f[8], .param .u64 data, .param .u32 n)
.visible .entry unimplemented(.param .u64 p)
\0";

/// Initialises the fake and makes device `ordinal`'s primary context current.
fn primary(fake: &Session, ordinal: i32) -> CUcontext {
    assert_eq!(cu!(cuInit(0)), SUCCESS);
    let mut context = ptr::null_mut();
    assert_eq!(cu!(cuDevicePrimaryCtxRetain(&mut context, ordinal)), SUCCESS);
    assert_eq!(cu!(cuCtxSetCurrent(context)), SUCCESS);
    assert_eq!(fake.live(Kind::PrimaryRetain), 1);
    context
}

fn release(ordinal: i32) {
    assert_eq!(cu!(cuCtxSetCurrent(ptr::null_mut())), SUCCESS);
    assert_eq!(cu!(cuDevicePrimaryCtxRelease_v2(ordinal)), SUCCESS);
}

fn load(image: &str) -> CUmodule {
    let mut module = ptr::null_mut();
    assert_eq!(cu!(cuModuleLoadData(&mut module, image.as_ptr().cast())), SUCCESS);
    module
}

fn function(module: CUmodule, name: &CStr) -> CUfunction {
    let mut function = ptr::null_mut();
    assert_eq!(cu!(cuModuleGetFunction(&mut function, module, name.as_ptr())), SUCCESS);
    function
}

/// Launches `function` on `grid` blocks of `block` threads (both along x, no dynamic shared
/// memory) and returns the raw result code.
fn launch_kernel(
    function: CUfunction,
    grid: u32,
    block: u32,
    stream: CUstream,
    params: *mut *mut c_void,
    extra: *mut *mut c_void,
) -> i32 {
    cu!(cuLaunchKernel(
        function, grid, 1, 1, block, 1, 1, 0, stream, params, extra
    ))
}

/// The parameter array of `fill(out, value, n)`: pointers to the three arguments.
fn fill_params(out: &mut CUdeviceptr, value: &mut f32, n: &mut u32) -> [*mut c_void; 3] {
    [
        (out as *mut CUdeviceptr).cast::<c_void>(),
        (value as *mut f32).cast(),
        (n as *mut u32).cast(),
    ]
}

fn assert_clean(fake: &Session) {
    let counts = fake.counts();
    assert!(counts.is_clean(), "{counts}\ncalls: {}", fake.trace());
}

#[test]
fn devices_look_like_h200s() {
    let fake = fake::session();
    assert_eq!(cu!(cuInit(0)), SUCCESS);
    let mut count = 0;
    assert_eq!(cu!(cuDeviceGetCount(&mut count)), SUCCESS);
    assert_eq!(count, 2);
    let mut name = [0 as std::ffi::c_char; 64];
    assert_eq!(cu!(cuDeviceGetName(name.as_mut_ptr(), 64, 1)), SUCCESS);
    // SAFETY: the fake NUL-terminates within the 64 bytes it was given.
    let name = unsafe { CStr::from_ptr(name.as_ptr()) }.to_str().unwrap();
    assert!(name.contains("fakecuda"), "{name}");
    let attribute = |attribute: CUdevice_attribute| {
        let mut value = -1;
        assert_eq!(cu!(cuDeviceGetAttribute(&mut value, attribute, 0)), SUCCESS);
        value
    };
    assert_eq!(
        attribute(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR),
        9
    );
    assert_eq!(
        attribute(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT),
        132
    );
    assert_eq!(
        attribute(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK),
        1024
    );
    assert_eq!(
        attribute(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN),
        232448
    );
    let mut value = 0;
    assert_eq!(
        cu!(cuDeviceGetAttribute(&mut value, CUdevice_attribute(0), 0)),
        INVALID_VALUE
    );
    assert_eq!(cu!(cuDeviceGetAttribute(&mut value, CUdevice_attribute(1), 2)), 101); // invalid device
    let mut total = 0;
    assert_eq!(cu!(cuDeviceTotalMem_v2(&mut total, 0)), SUCCESS);
    assert_eq!(total, 143771 << 20);
    let mut can = 0;
    assert_eq!(cu!(cuDeviceCanAccessPeer(&mut can, 0, 1)), SUCCESS);
    assert_eq!(can, 1);
    assert_clean(&fake);
}

#[test]
fn alloc_copy_launch_free_balances_and_computes() {
    let fake = fake::session();
    let context = primary(&fake, 0);
    let n = 1000u32;
    let bytes = n as usize * 4;
    let (mut a, mut b, mut c) = (0, 0, 0);
    for pointer in [&mut a, &mut b, &mut c] {
        assert_eq!(cu!(cuMemAlloc_v2(pointer, bytes)), SUCCESS);
    }
    assert_eq!(fake.live(Kind::DeviceMemory), 3);
    let x: Vec<f32> = (0..n).map(|i| i as f32).collect();
    let y: Vec<f32> = (0..n).map(|i| 2.0 * i as f32).collect();
    assert_eq!(cu!(cuMemcpyHtoD_v2(a, x.as_ptr().cast(), bytes)), SUCCESS);
    assert_eq!(cu!(cuMemcpyHtoD_v2(b, y.as_ptr().cast(), bytes)), SUCCESS);

    let module = load(KERNELS);
    let vector_add = function(module, c"vector_add");
    let mut stream = ptr::null_mut();
    assert_eq!(cu!(cuStreamCreate(&mut stream, 0)), SUCCESS);
    let mut n_arg = n;
    let mut params = [
        (&mut a as *mut CUdeviceptr).cast::<c_void>(),
        (&mut b as *mut CUdeviceptr).cast(),
        (&mut c as *mut CUdeviceptr).cast(),
        (&mut n_arg as *mut c_uint).cast(),
    ];
    let launch = |grid: u32, block: u32, params: *mut *mut c_void| {
        launch_kernel(vector_add, grid, block, stream, params, ptr::null_mut())
    };
    assert_eq!(launch(n.div_ceil(256), 256, params.as_mut_ptr()), SUCCESS);
    assert_eq!(cu!(cuStreamSynchronize(stream)), SUCCESS);
    let mut out = vec![0f32; n as usize];
    assert_eq!(cu!(cuMemcpyDtoH_v2(out.as_mut_ptr().cast(), c, bytes)), SUCCESS);
    assert!(
        out.iter().enumerate().all(|(i, &v)| v == 3.0 * i as f32),
        "{:?}",
        &out[..8]
    );

    // what the driver would refuse
    assert_eq!(launch(0, 256, params.as_mut_ptr()), INVALID_VALUE, "empty grid");
    assert_eq!(launch(1, 2048, params.as_mut_ptr()), INVALID_VALUE, "block too large");
    assert_eq!(launch(1, 256, ptr::null_mut()), INVALID_VALUE, "no arguments");
    assert_eq!(
        cu!(cuMemcpyDtoH_v2(out.as_mut_ptr().cast(), c + 8, bytes)),
        INVALID_VALUE,
        "past the end"
    );

    assert_eq!(cu!(cuStreamDestroy_v2(stream)), SUCCESS);
    assert_eq!(cu!(cuModuleUnload(module)), SUCCESS);
    for pointer in [a, b, c] {
        assert_eq!(cu!(cuMemFree_v2(pointer)), SUCCESS);
    }
    let _ = context;
    release(0);
    let counts = fake.counts();
    assert_eq!(
        counts.invalid_handles, 1,
        "the out-of-bounds copy is recorded: {counts}"
    );
    assert_eq!(
        (counts.live_handles(), counts.double_frees, counts.orphaned),
        (0, 0, 0),
        "{counts}"
    );
}

#[test]
fn double_free_and_use_after_free_are_refused_and_counted() {
    let fake = fake::session();
    primary(&fake, 0);
    let mut memory = 0;
    assert_eq!(cu!(cuMemAlloc_v2(&mut memory, 64)), SUCCESS);
    assert_eq!(cu!(cuMemFree_v2(memory)), SUCCESS);
    assert_eq!(cu!(cuMemFree_v2(memory)), INVALID_VALUE);
    assert_eq!(fake.counts().double_frees, 1);
    let mut out = [0u8; 64];
    assert_eq!(cu!(cuMemcpyDtoH_v2(out.as_mut_ptr().cast(), memory, 64)), INVALID_VALUE);

    let mut stream = ptr::null_mut();
    assert_eq!(cu!(cuStreamCreate(&mut stream, 0)), SUCCESS);
    assert_eq!(cu!(cuStreamDestroy_v2(stream)), SUCCESS);
    assert_eq!(cu!(cuStreamSynchronize(stream)), INVALID_HANDLE);
    assert_eq!(cu!(cuStreamDestroy_v2(stream)), INVALID_HANDLE);

    let mut event = ptr::null_mut();
    assert_eq!(cu!(cuEventCreate(&mut event, 0)), SUCCESS);
    assert_eq!(cu!(cuEventDestroy_v2(event)), SUCCESS);
    assert_eq!(cu!(cuEventDestroy_v2(event)), INVALID_HANDLE);

    let mut host = ptr::null_mut();
    assert_eq!(cu!(cuMemHostAlloc(&mut host, 128, 0)), SUCCESS);
    assert_eq!(cu!(cuMemFreeHost(host)), SUCCESS);
    assert_eq!(cu!(cuMemFreeHost(host)), INVALID_VALUE);

    // a forged handle is refused, not dereferenced
    assert_eq!(cu!(cuStreamSynchronize(0xdead_beef_usize as CUstream)), INVALID_HANDLE);
    release(0);
    assert_eq!(cu!(cuDevicePrimaryCtxRelease_v2(0)), 201, "released once too often");

    let counts = fake.counts();
    assert_eq!(
        counts.double_frees, 5,
        "memory, stream, event, host memory, primary context: {counts}"
    );
    assert_eq!(
        counts.invalid_handles, 3,
        "stale copy, stale stream, forged stream: {counts}"
    );
    assert_eq!(counts.live_handles(), 0, "{counts}");
}

#[test]
fn nth_call_and_named_calls_fail_on_demand() {
    let fake = fake::session();
    primary(&fake, 0);
    fake.reset();
    let mut memory = 0;
    fake.fail_nth(2, fake::OUT_OF_MEMORY);
    assert_eq!(cu!(cuMemAlloc_v2(&mut memory, 16)), SUCCESS);
    let mut second = 0;
    assert_eq!(cu!(cuMemAlloc_v2(&mut second, 16)), fake::OUT_OF_MEMORY);
    assert_eq!(second, 0, "a failed call has no effect");
    assert_eq!(cu!(cuMemAlloc_v2(&mut second, 16)), SUCCESS, "the fault fires once");
    assert_eq!((fake.calls(), fake.injected()), (3, 1));
    assert_eq!(fake.trace(), "cuMemAlloc_v2 cuMemAlloc_v2 cuMemAlloc_v2");

    fake.fail_named("cuMemFree_v2", fake::UNKNOWN);
    assert_eq!(cu!(cuMemFree_v2(memory)), fake::UNKNOWN);
    assert_eq!(cu!(cuMemFree_v2(memory)), fake::UNKNOWN);
    fake.clear_faults();
    assert_eq!(cu!(cuMemFree_v2(memory)), SUCCESS);
    assert_eq!(cu!(cuMemFree_v2(second)), SUCCESS);
    assert_eq!(fake.injected(), 3);

    // error names come from the fake and are not counted
    let calls = fake.calls();
    let mut name = ptr::null();
    assert_eq!(cu!(cuGetErrorName(CUresult(719), &mut name)), SUCCESS);
    // SAFETY: the fake returns a static NUL-terminated string.
    assert_eq!(unsafe { CStr::from_ptr(name) }, c"CUDA_ERROR_LAUNCH_FAILED");
    assert_eq!(cu!(cuGetErrorName(CUresult(12345), &mut name)), INVALID_VALUE);
    assert_eq!(fake.calls(), calls);
    release(0);
    assert_clean(&fake);
}

#[test]
fn kernels_read_parameters_by_layout() {
    let fake = fake::session();
    primary(&fake, 0);
    let module = load(KERNELS);
    let affine = function(module, c"affine");
    let info = |index: usize| {
        let (mut offset, mut size) = (0usize, 0usize);
        let result = cu!(cuFuncGetParamInfo(affine, index, &mut offset, &mut size));
        (result, offset, size)
    };
    assert_eq!(info(0), (SUCCESS, 0, 8));
    assert_eq!(info(1), (SUCCESS, 8, 8));
    assert_eq!(info(2), (SUCCESS, 16, 4));
    assert_eq!(info(3).0, INVALID_VALUE);

    let n = 100u32;
    let mut data = 0;
    assert_eq!(cu!(cuMemAlloc_v2(&mut data, n as usize * 4)), SUCCESS);
    let ones = vec![1f32; n as usize];
    assert_eq!(
        cu!(cuMemcpyHtoD_v2(data, ones.as_ptr().cast(), n as usize * 4)),
        SUCCESS
    );
    // the argument block through `extra`: {scale, offset} at 0, data at 8, n at 16
    let mut block = [0u8; 24];
    block[0..4].copy_from_slice(&3f32.to_ne_bytes());
    block[4..8].copy_from_slice(&0.5f32.to_ne_bytes());
    block[8..16].copy_from_slice(&data.to_ne_bytes());
    block[16..20].copy_from_slice(&n.to_ne_bytes());
    let mut size = block.len();
    let mut extra = [
        ptr::without_provenance_mut(1), // CU_LAUNCH_PARAM_BUFFER_POINTER (a tag, not an address)
        block.as_mut_ptr().cast(),
        ptr::without_provenance_mut(2), // CU_LAUNCH_PARAM_BUFFER_SIZE
        (&mut size as *mut usize).cast(),
        ptr::null_mut(),
    ];
    let launch = launch_kernel(affine, 1, 128, ptr::null_mut(), ptr::null_mut(), extra.as_mut_ptr());
    assert_eq!(launch, SUCCESS);
    let mut out = vec![0f32; n as usize];
    assert_eq!(
        cu!(cuMemcpyDtoH_v2(out.as_mut_ptr().cast(), data, n as usize * 4)),
        SUCCESS
    );
    assert!(out.iter().all(|&v| v == 3.5), "{:?}", &out[..4]);

    // an entry without a host implementation cannot run
    let unimplemented = function(module, c"unimplemented");
    let mut params = [(&mut data as *mut CUdeviceptr).cast::<c_void>()];
    let result = launch_kernel(
        unimplemented,
        1,
        1,
        ptr::null_mut(),
        params.as_mut_ptr(),
        ptr::null_mut(),
    );
    assert_eq!(result, 801);
    assert_eq!(
        cu!(cuModuleGetFunction(&mut ptr::null_mut(), module, c"missing".as_ptr())),
        500
    );
    assert_eq!(cu!(cuMemFree_v2(data)), SUCCESS);
    assert_eq!(cu!(cuModuleUnload(module)), SUCCESS);
    assert_eq!(
        cu!(cuFuncGetParamInfo(affine, 0, &mut 0, &mut 0)),
        INVALID_HANDLE,
        "functions die with their module"
    );
    release(0);
    assert_eq!(fake.counts().live_handles(), 0);
}

#[test]
fn bad_ptx_fails_with_a_log() {
    let fake = fake::session();
    primary(&fake, 0);
    let mut log = [0u8; 256];
    let mut options = [
        CUjit_option::CU_JIT_ERROR_LOG_BUFFER,
        CUjit_option::CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
    ];
    let mut values = [log.as_mut_ptr().cast::<c_void>(), 256usize as *mut c_void];
    let mut module = ptr::null_mut();
    let result = cu!(cuModuleLoadDataEx(
        &mut module,
        c"this is not PTX".as_ptr().cast(),
        2,
        options.as_mut_ptr(),
        values.as_mut_ptr()
    ));
    assert_eq!(result, 218); // CUDA_ERROR_INVALID_PTX
    let text = CStr::from_bytes_until_nul(&log).unwrap().to_str().unwrap();
    assert!(text.contains("not PTX"), "{text}");
    assert_eq!(values[1] as usize, text.len() + 1, "the log size is written back");
    release(0);
    assert_clean(&fake);
}

#[test]
fn kernels_of_another_context_are_refused() {
    let fake = fake::session();
    primary(&fake, 0);
    let module = load(KERNELS);
    let fill = function(module, c"fill");
    let mut other = ptr::null_mut();
    assert_eq!(cu!(cuCtxCreate_v4(&mut other, ptr::null_mut(), 0, 0)), SUCCESS);
    let mut stream = ptr::null_mut();
    assert_eq!(cu!(cuStreamCreate(&mut stream, 0)), SUCCESS); // in `other`, now current
    let mut memory = 0;
    assert_eq!(cu!(cuMemAlloc_v2(&mut memory, 16)), SUCCESS);
    let (mut value, mut n) = (1f32, 4u32);
    let mut params = fill_params(&mut memory, &mut value, &mut n);
    let result = launch_kernel(fill, 1, 4, stream, params.as_mut_ptr(), ptr::null_mut());
    assert_eq!(result, INVALID_HANDLE);
    assert_eq!(
        cu!(cuCtxDestroy_v2(other)),
        SUCCESS,
        "destroying the context takes its stream and memory"
    );
    assert_eq!(fake.counts().orphaned, 2);
    assert_eq!(cu!(cuMemFree_v2(memory)), INVALID_VALUE, "freed with its context");
    assert_eq!(cu!(cuModuleUnload(module)), SUCCESS);
    release(0);
    assert_eq!(fake.counts().live_handles(), 0);
}

#[test]
fn capture_records_and_graphs_replay() {
    let fake = fake::session();
    primary(&fake, 0);
    let module = load(KERNELS);
    let fill = function(module, c"fill");
    let mut stream = ptr::null_mut();
    assert_eq!(cu!(cuStreamCreate(&mut stream, 1)), SUCCESS);
    let mut memory = 0;
    assert_eq!(cu!(cuMemAlloc_v2(&mut memory, 64)), SUCCESS);
    assert_eq!(cu!(cuMemsetD32_v2(memory, 0, 16)), SUCCESS);

    assert_eq!(
        cu!(cuStreamBeginCapture_v2(
            stream,
            CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_GLOBAL
        )),
        SUCCESS
    );
    let mut status = CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE;
    assert_eq!(cu!(cuStreamIsCapturing(stream, &mut status)), SUCCESS);
    assert_eq!(status, CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_ACTIVE);
    let (mut value, mut n) = (7f32, 16u32);
    let mut params = fill_params(&mut memory, &mut value, &mut n);
    let result = launch_kernel(fill, 1, 16, stream, params.as_mut_ptr(), ptr::null_mut());
    assert_eq!(result, SUCCESS);
    // SAFETY: params[1] points at `value`, still alive; the launch copied the arguments it read.
    unsafe { *params[1].cast::<f32>() = 1.0 };
    let mut graph = ptr::null_mut();
    assert_eq!(cu!(cuStreamEndCapture(stream, &mut graph)), SUCCESS);
    let mut out = [0f32; 16];
    assert_eq!(cu!(cuMemcpyDtoH_v2(out.as_mut_ptr().cast(), memory, 64)), SUCCESS);
    assert_eq!(out, [0.0; 16], "captured work does not run");

    let mut exec = ptr::null_mut();
    assert_eq!(cu!(cuGraphInstantiateWithFlags(&mut exec, graph, 0)), SUCCESS);
    assert_eq!(cu!(cuGraphDestroy(graph)), SUCCESS);
    assert_eq!(cu!(cuGraphLaunch(exec, stream)), SUCCESS);
    assert_eq!(cu!(cuMemcpyDtoH_v2(out.as_mut_ptr().cast(), memory, 64)), SUCCESS);
    assert_eq!(out, [7.0; 16]);
    assert_eq!((fake.live(Kind::Graph), fake.live(Kind::GraphExec)), (0, 1));

    // synchronising a capturing stream is refused and invalidates the capture
    assert_eq!(
        cu!(cuStreamBeginCapture_v2(
            stream,
            CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_GLOBAL
        )),
        SUCCESS
    );
    assert_eq!(cu!(cuStreamSynchronize(stream)), 900);
    assert_eq!(cu!(cuStreamEndCapture(stream, &mut graph)), 901);
    assert!(graph.is_null());

    assert_eq!(cu!(cuGraphExecDestroy(exec)), SUCCESS);
    assert_eq!(cu!(cuMemFree_v2(memory)), SUCCESS);
    assert_eq!(cu!(cuStreamDestroy_v2(stream)), SUCCESS);
    assert_eq!(cu!(cuModuleUnload(module)), SUCCESS);
    release(0);
    assert_clean(&fake);
}

#[test]
fn events_pools_and_pinned_memory() {
    let fake = fake::session();
    primary(&fake, 1);
    let mut stream = ptr::null_mut();
    assert_eq!(cu!(cuStreamCreateWithPriority(&mut stream, 0, -3)), SUCCESS);
    let (mut start, mut end, mut untimed) = (ptr::null_mut(), ptr::null_mut(), ptr::null_mut());
    assert_eq!(cu!(cuEventCreate(&mut start, 0)), SUCCESS);
    assert_eq!(cu!(cuEventCreate(&mut end, 0)), SUCCESS);
    assert_eq!(cu!(cuEventCreate(&mut untimed, 2)), SUCCESS);
    let mut ms = -1f32;
    assert_eq!(
        cu!(cuEventElapsedTime_v2(&mut ms, start, end)),
        INVALID_HANDLE,
        "not recorded yet"
    );
    assert_eq!(cu!(cuEventRecord(start, stream)), SUCCESS);

    let mut pool = ptr::null_mut();
    assert_eq!(cu!(cuDeviceGetDefaultMemPool(&mut pool, 1)), SUCCESS);
    let mut threshold = 1u64 << 30;
    let attribute = CUmemPool_attribute::CU_MEMPOOL_ATTR_RELEASE_THRESHOLD;
    assert_eq!(
        cu!(cuMemPoolSetAttribute(
            pool,
            attribute,
            (&mut threshold as *mut u64).cast()
        )),
        SUCCESS
    );
    let mut memory = 0;
    assert_eq!(cu!(cuMemAllocAsync(&mut memory, 4096, stream)), SUCCESS);
    let mut used = 0u64;
    let attribute = CUmemPool_attribute::CU_MEMPOOL_ATTR_USED_MEM_CURRENT;
    assert_eq!(
        cu!(cuMemPoolGetAttribute(pool, attribute, (&mut used as *mut u64).cast())),
        SUCCESS
    );
    assert_eq!(used, 4096);

    let mut pinned = ptr::null_mut();
    assert_eq!(cu!(cuMemHostAlloc(&mut pinned, 4096, 0)), SUCCESS);
    // SAFETY: the fake returned 4096 writable bytes.
    unsafe { ptr::write_bytes(pinned.cast::<u8>(), 9, 4096) };
    assert_eq!(cu!(cuMemcpyHtoDAsync_v2(memory, pinned, 4096, stream)), SUCCESS);
    assert_eq!(cu!(cuMemsetD8Async(memory, 1, 16, stream)), SUCCESS);
    let mut back = vec![0u8; 4096];
    assert_eq!(
        cu!(cuMemcpyDtoHAsync_v2(back.as_mut_ptr().cast(), memory, 4096, stream)),
        SUCCESS
    );
    assert_eq!(cu!(cuEventRecord(end, stream)), SUCCESS);
    assert_eq!(cu!(cuEventSynchronize(end)), SUCCESS);
    assert!(back[..16].iter().all(|&b| b == 1) && back[16..].iter().all(|&b| b == 9));
    assert_eq!(cu!(cuEventElapsedTime_v2(&mut ms, start, end)), SUCCESS);
    assert!(ms >= 0.0);
    assert_eq!(cu!(cuEventRecord(untimed, stream)), SUCCESS);
    assert_eq!(
        cu!(cuEventElapsedTime_v2(&mut ms, start, untimed)),
        INVALID_HANDLE,
        "timing disabled"
    );

    assert_eq!(cu!(cuMemFreeAsync(memory, stream)), SUCCESS);
    assert_eq!(cu!(cuMemFreeHost(pinned)), SUCCESS);
    for event in [start, end, untimed] {
        assert_eq!(cu!(cuEventDestroy_v2(event)), SUCCESS);
    }
    assert_eq!(cu!(cuStreamDestroy_v2(stream)), SUCCESS);
    release(1);
    assert_clean(&fake);
}

#[test]
fn many_threads_balance() {
    let fake = fake::session();
    assert_eq!(cu!(cuInit(0)), SUCCESS);
    let threads: Vec<_> = (0..8)
        .map(|t| {
            std::thread::spawn(move || {
                let mut context = ptr::null_mut();
                assert_eq!(cu!(cuDevicePrimaryCtxRetain(&mut context, t % 2)), SUCCESS);
                assert_eq!(cu!(cuCtxSetCurrent(context)), SUCCESS);
                let module = load(KERNELS);
                let fill = function(module, c"fill");
                for i in 0..200u32 {
                    let mut memory = 0;
                    assert_eq!(cu!(cuMemAlloc_v2(&mut memory, 256)), SUCCESS);
                    let (mut value, mut n) = (i as f32, 64u32);
                    let mut params = fill_params(&mut memory, &mut value, &mut n);
                    let launch = launch_kernel(fill, 1, 64, ptr::null_mut(), params.as_mut_ptr(), ptr::null_mut());
                    assert_eq!(launch, SUCCESS);
                    let mut out = [0f32; 64];
                    assert_eq!(cu!(cuMemcpyDtoH_v2(out.as_mut_ptr().cast(), memory, 256)), SUCCESS);
                    assert!(out.iter().all(|&v| v == i as f32));
                    assert_eq!(cu!(cuMemFree_v2(memory)), SUCCESS);
                }
                assert_eq!(cu!(cuModuleUnload(module)), SUCCESS);
                assert_eq!(cu!(cuCtxSetCurrent(ptr::null_mut())), SUCCESS);
                assert_eq!(cu!(cuDevicePrimaryCtxRelease_v2(t % 2)), SUCCESS);
            })
        })
        .collect();
    for thread in threads {
        thread.join().expect("a worker panicked");
    }
    assert_clean(&fake);
    assert!(fake.calls() > 8 * 200 * 4);
}

#[test]
fn deferred_work_waits_until_waited_for() {
    let fake = fake::session();
    fake.set_deferred(true);
    primary(&fake, 0);
    let module = load(KERNELS);
    let fill = function(module, c"fill");
    let mut stream = ptr::null_mut();
    assert_eq!(cu!(cuStreamCreate(&mut stream, 1)), SUCCESS); // non-blocking
    let mut memory = 0;
    assert_eq!(cu!(cuMemAlloc_v2(&mut memory, 64)), SUCCESS);
    assert_eq!(cu!(cuMemsetD32_v2(memory, 0, 16)), SUCCESS); // device work: queued on the legacy stream
    let (mut value, mut n) = (5f32, 16u32);
    let mut params = fill_params(&mut memory, &mut value, &mut n);
    assert_eq!(cu!(cuStreamSynchronize(ptr::null_mut())), SUCCESS);
    let result = launch_kernel(fill, 1, 16, stream, params.as_mut_ptr(), ptr::null_mut());
    assert_eq!(result, SUCCESS);
    let mut pinned = ptr::null_mut();
    assert_eq!(cu!(cuMemHostAlloc(&mut pinned, 64, 0)), SUCCESS);
    // SAFETY: 64 writable bytes from the fake.
    unsafe { ptr::write_bytes(pinned.cast::<u8>(), 0, 64) };
    assert_eq!(cu!(cuMemcpyDtoHAsync_v2(pinned, memory, 64, stream)), SUCCESS);
    let mut event = ptr::null_mut();
    assert_eq!(cu!(cuEventCreate(&mut event, 0)), SUCCESS);
    assert_eq!(cu!(cuEventRecord(event, stream)), SUCCESS);
    // SAFETY: the fake's pinned memory, 16 floats; nothing runs concurrently (the fake is single-threaded here).
    let read = || unsafe { std::slice::from_raw_parts(pinned.cast::<f32>(), 16).to_vec() };
    assert_eq!(read(), [0.0; 16], "nothing ran yet");
    assert_eq!(cu!(cuEventQuery(event)), 600, "CUDA_ERROR_NOT_READY while pending");
    assert_eq!(cu!(cuEventSynchronize(event)), SUCCESS);
    assert_eq!(read(), [5.0; 16]);
    assert_eq!(cu!(cuStreamQuery(stream)), SUCCESS);

    // pageable sources are taken at submission, pageable destinations filled before return
    let mut source = [1f32; 16];
    assert_eq!(
        cu!(cuMemcpyHtoDAsync_v2(memory, source.as_ptr().cast(), 64, stream)),
        SUCCESS
    );
    source.fill(2.0);
    let mut back = vec![0f32; 16];
    assert_eq!(
        cu!(cuMemcpyDtoHAsync_v2(back.as_mut_ptr().cast(), memory, 64, stream)),
        SUCCESS
    );
    assert_eq!(back, [1.0; 16]);

    // a failure of queued work is reported by the next wait
    let mut dangling = memory + (1 << 20);
    params[0] = (&mut dangling as *mut CUdeviceptr).cast();
    let result = launch_kernel(fill, 1, 16, stream, params.as_mut_ptr(), ptr::null_mut());
    assert_eq!(result, SUCCESS, "queued, not yet run");
    assert_eq!(cu!(cuStreamSynchronize(stream)), 700, "CUDA_ERROR_ILLEGAL_ADDRESS");
    assert_eq!(cu!(cuStreamSynchronize(stream)), SUCCESS, "reported once");

    // stream-ordered frees happen in stream order
    let mut ordered = 0;
    assert_eq!(cu!(cuMemAllocAsync(&mut ordered, 64, stream)), SUCCESS);
    assert_eq!(cu!(cuMemFreeAsync(ordered, stream)), SUCCESS);
    assert_eq!(fake.live(Kind::DeviceMemory), 2, "the free is queued");
    assert_eq!(cu!(cuStreamSynchronize(stream)), SUCCESS);
    assert_eq!(fake.live(Kind::DeviceMemory), 1);

    assert_eq!(cu!(cuEventDestroy_v2(event)), SUCCESS);
    assert_eq!(cu!(cuMemFreeHost(pinned)), SUCCESS);
    assert_eq!(cu!(cuMemFree_v2(memory)), SUCCESS);
    assert_eq!(cu!(cuStreamDestroy_v2(stream)), SUCCESS);
    assert_eq!(cu!(cuModuleUnload(module)), SUCCESS);
    release(0);
    fake.set_deferred(false);
    assert_clean(&fake);
}
