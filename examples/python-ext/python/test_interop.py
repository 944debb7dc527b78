"""Python interop of cuda-core against the real PyTorch and CuPy, through the example extension
module `cuda_rs_ext` (examples/python-ext, built with `--features python`).

    CUDA_RS_EXT_DIR=folder/with/cuda_rs_ext.so python3 test_interop.py

The checks that need no GPU (bad objects, hand-made capsules of CPU memory, unsupported types,
other DLPack versions, consumed capsules, deleters called exactly once) always run. The torch and
CuPy checks need the library and a CUDA device: without them they print `skipped: ...` and pass,
unless CUDA_REQUIRE_GPU=1, where that is a failure. Prints `test NAME ... ok|FAILED|skipped`
lines and a closing `N passed, N failed` line; exits 1 when something failed.
"""

import ctypes
import gc
import os
import sys
import time
import traceback

if os.environ.get("CUDA_RS_EXT_DIR"):
    sys.path.insert(0, os.environ["CUDA_RS_EXT_DIR"])

import cuda_rs_ext as ext  # noqa: E402  (after the path is set)

REQUIRE_GPU = os.environ.get("CUDA_REQUIRE_GPU") == "1"
RESULTS = {"passed": 0, "failed": 0, "skipped": 0}


class Skip(Exception):
    """Raised by a check whose library or device is missing."""


def run(check):
    name = check.__name__
    try:
        check()
    except Skip as why:
        if REQUIRE_GPU:
            print(f"test {name} ... FAILED (CUDA_REQUIRE_GPU=1 but {why})")
            RESULTS["failed"] += 1
        else:
            print(f"skipped: {name}: {why}")
            print(f"test {name} ... skipped")
            RESULTS["skipped"] += 1
        return
    except Exception:  # noqa: BLE001 (every failure is reported, then counted)
        traceback.print_exc()
        print(f"test {name} ... FAILED")
        RESULTS["failed"] += 1
        return
    print(f"test {name} ... ok")
    RESULTS["passed"] += 1


def same_strides(shape, first, second):
    """Whether two stride tuples agree on every axis of more than one element (the only ones
    whose strides mean anything; libraries differ on the others)."""
    return len(first) == len(second) == len(shape) and all(
        x == y for extent, x, y in zip(shape, first, second) if extent > 1
    )


def raises(kind, call, *args, **kwargs):
    """Calls `call` and returns the exception of type `kind` it raised."""
    try:
        call(*args, **kwargs)
    except kind as error:
        error.__traceback__ = None  # its frames would keep the arguments alive
        return error
    names = "/".join(k.__name__ for k in (kind if isinstance(kind, tuple) else (kind,)))
    raise AssertionError(f"{getattr(call, '__name__', call)} did not raise {names}")


# ------------------------------------------------------------------ hand-made DLPack capsules


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("device", DLDevice),
        ("ndim", ctypes.c_int32),
        ("dtype", DLDataType),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("byte_offset", ctypes.c_uint64),
    ]


DELETER = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


class DLManagedTensor(ctypes.Structure):
    _fields_ = [("dl_tensor", DLTensor), ("manager_ctx", ctypes.c_void_p), ("deleter", DELETER)]


class DLPackVersion(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32)]


class DLManagedTensorVersioned(ctypes.Structure):
    _fields_ = [
        ("version", DLPackVersion),
        ("manager_ctx", ctypes.c_void_p),
        ("deleter", DELETER),
        ("flags", ctypes.c_uint64),
        ("dl_tensor", DLTensor),
    ]


DESTRUCTOR = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
capsule_new = ctypes.PYFUNCTYPE(ctypes.py_object, ctypes.c_void_p, ctypes.c_char_p, DESTRUCTOR)(
    ("PyCapsule_New", ctypes.pythonapi)
)
capsule_name = ctypes.PYFUNCTYPE(ctypes.c_char_p, ctypes.py_object)(("PyCapsule_GetName", ctypes.pythonapi))
capsule_set_name = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.py_object, ctypes.c_char_p)(
    ("PyCapsule_SetName", ctypes.pythonapi)
)
raw_is_valid = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p)(
    ("PyCapsule_IsValid", ctypes.pythonapi)
)
raw_pointer = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p, ctypes.c_char_p)(
    ("PyCapsule_GetPointer", ctypes.pythonapi)
)

CPU, CUDA = 1, 2
# What hand-made capsules point into, kept for the life of the process: a capsule may outlive
# the test that made it (a traceback holding it), and its destructor must still be there then.
KEEP_ALIVE = []
FLOAT, COMPLEX = 2, 5


class Producer:
    """A DLPack producer made by hand: 4 floats of host memory in a capsule whose destructor
    calls the tensor's deleter unless a consumer took it (renamed the capsule), as producers do."""

    def __init__(self, device_type=CPU, code=FLOAT, bits=32, versioned=True, major=1):
        self.released = 0
        self.memory = (ctypes.c_float * 4)(1, 2, 3, 4)
        self.shape = (ctypes.c_int64 * 1)(4)
        self.deleter = DELETER(self._release)
        tensor = DLTensor(
            ctypes.addressof(self.memory),
            DLDevice(device_type, 0),
            1,
            DLDataType(code, bits, 1),
            self.shape,
            None,
            0,
        )
        if versioned:
            self.managed = DLManagedTensorVersioned(DLPackVersion(major, 0), None, self.deleter, 0, tensor)
            self.name = b"dltensor_versioned"
        else:
            self.managed = DLManagedTensor(tensor, None, self.deleter)
            self.name = b"dltensor"
        self.destructor = DESTRUCTOR(self._destroy)
        self.capsule = capsule_new(ctypes.addressof(self.managed), self.name, self.destructor)
        KEEP_ALIVE.append((self.memory, self.shape, self.deleter, self.managed, self.destructor))

    def _release(self, _tensor):
        self.released += 1

    def _destroy(self, capsule):
        if raw_is_valid(capsule, self.name):
            self.deleter(raw_pointer(capsule, self.name))

    def drop_capsule(self):
        self.capsule = None
        gc.collect()


def test_objects_without_dlpack_are_type_errors():
    error = raises(TypeError, ext.from_dlpack, object())
    assert "has no __dlpack__" in str(error), error
    raises(TypeError, ext.squared_diff, 1.0, 2.0)
    assert ext.DeviceArray.__module__ == "cuda_core"


def test_cpu_capsules_are_refused_and_released_once():
    for versioned in (True, False):
        producer = Producer(CPU, versioned=versioned)
        error = raises(TypeError, ext.from_dlpack, producer.capsule)
        assert "CPU memory" in str(error), error
        assert capsule_name(producer.capsule) == producer.name, "a refused capsule is not consumed"
        assert producer.released == 0
        producer.drop_capsule()
        assert producer.released == 1, f"deleter called {producer.released} times"


def test_a_cpu_producer_is_refused_before_it_exports():
    class HostArray:
        exported = False

        def __dlpack_device__(self):
            return (CPU, 0)

        def __dlpack__(self, **kwargs):
            HostArray.exported = True
            raise AssertionError("asked for a capsule of host memory")

    raises(TypeError, ext.from_dlpack, HostArray())
    assert not HostArray.exported
    try:
        import numpy
    except ImportError:
        return
    if hasattr(numpy.ndarray, "__dlpack__"):
        raises(TypeError, ext.from_dlpack, numpy.arange(4.0))


def test_unsupported_types_and_versions_are_buffer_errors():
    # complex32 (kDLComplex of 32 bits) has no element type here; complex64 and complex128 do.
    for producer in (Producer(CUDA, code=COMPLEX, bits=32), Producer(CUDA, major=2)):
        raises(BufferError, ext.from_dlpack, producer.capsule)
        assert capsule_name(producer.capsule) == producer.name
        producer.drop_capsule()
        assert producer.released == 1, f"deleter called {producer.released} times"


def test_a_consumed_capsule_is_a_value_error():
    producer = Producer(CUDA)
    assert capsule_set_name(producer.capsule, b"used_dltensor_versioned") == 0  # a consumer took it
    error = raises(ValueError, ext.from_dlpack, producer.capsule)
    assert "already consumed" in str(error), error
    producer.drop_capsule()
    assert producer.released == 0, "the consumer, not the capsule, releases a taken tensor"


# ------------------------------------------------------------------ PyTorch


def need_torch():
    try:
        import torch
    except ImportError as error:
        raise Skip(f"no torch ({error})")
    if not torch.cuda.is_available():
        raise Skip("torch has no CUDA device")
    return torch


def settle(torch):
    gc.collect()
    torch.cuda.synchronize()


def test_torch_round_trip_shares_memory():
    torch = need_torch()
    t = torch.randn(1, 2, 3, 4, device="cuda")
    a = ext.from_dlpack(t)
    assert (a.shape, a.strides, a.dtype) == ((1, 2, 3, 4), (24, 12, 4, 1), "float32"), a
    assert a.data_ptr == t.data_ptr(), "no copy into Rust"
    assert a.__dlpack_device__() == (2, t.device.index or 0)
    u = torch.from_dlpack(a)
    assert u.data_ptr() == t.data_ptr(), "no copy back"
    assert u.dtype == torch.float32 and u.shape == t.shape
    assert torch.equal(u, t)
    # The legacy capsule, as old consumers ask for it.
    legacy = a.__dlpack__()
    assert capsule_name(legacy) == b"dltensor"
    assert torch.utils.dlpack.from_dlpack(legacy).data_ptr() == t.data_ptr()
    assert capsule_name(legacy) == b"used_dltensor"
    # The versioned one, Rust to Rust.
    versioned = a.__dlpack__(max_version=(1, 0))
    assert capsule_name(versioned) == b"dltensor_versioned"
    assert ext.from_dlpack(versioned).data_ptr == t.data_ptr()
    # __cuda_array_interface__ too.
    interface = a.__cuda_array_interface__
    assert interface["data"] == (t.data_ptr(), False) and interface["typestr"] == "<f4", interface
    assert interface["shape"] == (1, 2, 3, 4) and interface["strides"] is None and interface["version"] == 3
    assert torch.as_tensor(a, device="cuda").data_ptr() == t.data_ptr()


def test_torch_writes_are_seen_both_ways():
    torch = need_torch()
    t = torch.randn(1, 2, 3, 4, device="cuda")
    a = ext.from_dlpack(t)
    u = torch.from_dlpack(a)
    u[0, 1, 2, 3] = 7.0
    assert t[0, 1, 2, 3].item() == 7.0, "a write through torch's view of the Rust array"
    a.fill(2.5)  # a Rust kernel (memset) on the legacy default stream
    assert torch.equal(t, torch.full_like(t, 2.5)), "a Rust write seen by torch"
    t.mul_(2.0)
    c = torch.from_dlpack(a.copy())  # a Rust copy reads what torch wrote
    assert c.data_ptr() != t.data_ptr() and torch.equal(c, torch.full_like(t, 5.0))


def test_torch_transposed_and_sliced_views_stay_views():
    torch = need_torch()
    t = torch.randn(1, 2, 3, 4, device="cuda")
    tt = t.permute(3, 2, 1, 0)
    a = ext.from_dlpack(tt)
    assert a.shape == tuple(tt.shape) and same_strides(a.shape, a.strides, tt.stride()), (a, tt.stride())
    assert a.strides[:3] == (1, 4, 12), "a transposed view, not a copy"
    assert a.data_ptr == tt.data_ptr()
    back = torch.from_dlpack(a)
    assert same_strides(a.shape, back.stride(), tt.stride()) and back.data_ptr() == tt.data_ptr()
    assert torch.equal(back, tt)
    half = tt * 0.5
    assert torch.allclose(ext.squared_diff(tt, half), (tt - half) ** 2)

    s = t[:, 1:, ::2, 1:3]
    a = ext.from_dlpack(s)
    assert a.data_ptr == s.data_ptr() and a.data_ptr == t.data_ptr() + 4 * (12 + 1), "an offset view"
    assert a.shape == tuple(s.shape) and same_strides(a.shape, a.strides, s.stride()), (a, s.stride())
    assert torch.equal(torch.from_dlpack(a), s)
    assert a.__cuda_array_interface__["strides"] == tuple(4 * x for x in a.strides)
    assert torch.allclose(ext.squared_diff(s, torch.zeros_like(s)), s * s)
    # Broadcasting: a (1, 2, 3, 4) against a (4,) row.
    row = torch.randn(4, device="cuda")
    assert torch.allclose(ext.squared_diff(t, row), (t - row) ** 2)


def test_torch_half_and_bfloat16():
    torch = need_torch()
    for dtype, tolerance in ((torch.float16, 2e-3), (torch.bfloat16, 1e-2)):
        x = torch.randn(1, 2, 3, 4, device="cuda").to(dtype)
        y = torch.randn(1, 2, 3, 4, device="cuda").to(dtype)
        a = ext.from_dlpack(x)
        assert a.dtype == {torch.float16: "float16", torch.bfloat16: "bfloat16"}[dtype]
        assert a.data_ptr == x.data_ptr() and torch.equal(torch.from_dlpack(a), x)
        out = ext.squared_diff(x, y)
        assert out.dtype == dtype and out.shape == x.shape
        expected = (x.float() - y.float()) ** 2
        assert torch.allclose(out.float(), expected, rtol=tolerance, atol=1e-3), (out, expected)
    assert not hasattr(ext.from_dlpack(x), "__cuda_array_interface__"), "bfloat16 has no typestr"
    b = torch.rand(1, 2, 3, 4, device="cuda") > 0.5
    assert torch.equal(torch.from_dlpack(ext.from_dlpack(b)), b)


def test_the_rust_kernel_inside_a_torch_computation():
    torch = need_torch()
    torch.manual_seed(0)
    x = torch.randn(256, 1000, device="cuda")
    y = torch.randn(256, 1000, device="cuda")
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):  # torch's work on another stream: the handshake orders it
        h = torch.tanh(x)
        d = ext.squared_diff(h, y)
        loss = d.mean(dim=1).sqrt().sum()
    torch.cuda.synchronize()
    expected = ((torch.tanh(x) - y) ** 2).mean(dim=1).sqrt().sum()
    assert isinstance(d, torch.Tensor) and d.device == x.device
    assert torch.allclose(loss, expected, rtol=1e-4), (loss.item(), expected.item())


def test_torch_lifetimes_leave_the_pool_as_it_was():
    torch = need_torch()
    t = torch.randn(1, 2, 3, 4, device="cuda")
    settle(torch)
    base = ext.pool_used_bytes()
    # The Rust array dropped before the torch tensor over it.
    r = ext.from_dlpack(t).copy()
    assert ext.pool_used_bytes() > base, "the copy is pool memory"
    u = torch.from_dlpack(r)
    assert u.data_ptr() == r.data_ptr
    del r
    settle(torch)
    assert torch.equal(u, t), "torch's tensor keeps the Rust memory alive"
    assert ext.pool_used_bytes() > base
    del u
    settle(torch)
    assert ext.pool_used_bytes() == base, "the deleter gave the block back"
    # The torch tensor dropped before the Rust array.
    r = ext.squared_diff(t, t * 0 + 1)
    kept = ext.from_dlpack(r)  # a Rust view of a torch tensor over Rust memory
    expected = (t - 1) ** 2
    del r
    settle(torch)
    assert torch.allclose(torch.from_dlpack(kept), expected)
    del kept
    settle(torch)
    assert ext.pool_used_bytes() == base
    # A torch tensor dropped while Rust still uses its memory.
    source = torch.randn(1000, device="cuda")
    saved = source.clone()
    a = ext.from_dlpack(source)
    del source
    settle(torch)
    torch.cuda.empty_cache()
    assert torch.equal(torch.from_dlpack(a), saved)
    del a
    # Many round trips leak nothing.
    for _ in range(200):
        torch.from_dlpack(ext.squared_diff(t, t)).sum()
    settle(torch)
    assert ext.pool_used_bytes() == base


def test_torch_bad_inputs():
    torch = need_torch()
    raises(TypeError, ext.from_dlpack, torch.randn(3))  # a CPU tensor
    raises(TypeError, ext.squared_diff, torch.randn(3), torch.randn(3))
    raises(TypeError, ext.squared_diff, torch.ones(3, device="cuda", dtype=torch.int32), torch.ones(3, device="cuda", dtype=torch.int32))
    raises(TypeError, ext.squared_diff, torch.ones(3, device="cuda"), torch.ones(3, device="cuda", dtype=torch.float64))
    raises(ValueError, ext.squared_diff, torch.ones(3, device="cuda"), torch.ones(4, device="cuda"))
    t = torch.randn(3, device="cuda")
    capsule = torch.utils.dlpack.to_dlpack(t)
    assert ext.from_dlpack(capsule).data_ptr == t.data_ptr()
    raises(ValueError, ext.from_dlpack, capsule)  # consumed twice
    a = ext.from_dlpack(t)
    raises(ValueError, a.__dlpack__, stream=0)
    raises(BufferError, a.__dlpack__, dl_device=(1, 0))
    copied = a.__dlpack__(max_version=(1, 0), copy=True)
    assert ext.from_dlpack(copied).data_ptr != t.data_ptr()


def test_torch_complex_both_ways():
    torch = need_torch()
    for dtype, name in ((torch.complex64, "complex64"), (torch.complex128, "complex128")):
        t = torch.randn(3, 4, device="cuda", dtype=dtype)
        a = ext.from_dlpack(t)
        assert (a.shape, a.dtype, a.data_ptr) == ((3, 4), name, t.data_ptr()), a
        back = torch.from_dlpack(a)
        assert back.dtype == dtype and back.data_ptr() == t.data_ptr() and torch.equal(back, t)
        a.fill(2.5)
        settle(torch)
        assert torch.equal(t, torch.full_like(t, 2.5)), "a Rust write seen by torch, imaginary parts zero"
        # A transposed view stays a view: its strides travel in elements of the complex type.
        v = ext.from_dlpack(t.t())
        assert v.data_ptr == t.data_ptr() and same_strides((4, 3), v.strides, t.t().stride()), v


# ------------------------------------------------------------------ CuPy


def sleep_cycles_per_ms(torch):
    """GPU clock cycles of `torch.cuda._sleep` per millisecond, measured with events."""
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda._sleep(1_000_000)
    start.record()
    torch.cuda._sleep(20_000_000)
    stop.record()
    stop.synchronize()
    return 20_000_000 / start.elapsed_time(stop)


def test_torch_release_never_waits_on_the_host():
    """Dropping an import whose last use is still queued returns at once, and the tensor goes
    back to torch only after that use (it was a 101 ms host wait with 100 ms of queued work)."""
    torch = need_torch()
    settle(torch)
    cycles = sleep_cycles_per_ms(torch)
    n = 1 << 24
    t = torch.ones(n, device="cuda")
    held = torch.cuda.memory_allocated()
    torch.cuda._sleep(int(100 * cycles))  # 100 ms of work queued on torch's stream
    start = time.perf_counter()
    a = ext.from_dlpack(t)
    del a
    blocked_import = time.perf_counter() - start
    start = time.perf_counter()
    out = ext.squared_diff(t, t)
    blocked_kernel = time.perf_counter() - start
    del t
    gc.collect()
    assert torch.cuda.memory_allocated() >= held, "torch's tensor went back before its last use"
    print(f"  host blocked: from_dlpack + drop {blocked_import * 1e3:.2f} ms, squared_diff {blocked_kernel * 1e3:.2f} ms (100 ms queued)")
    assert blocked_import < 0.03 and blocked_kernel < 0.03, (blocked_import, blocked_kernel)
    torch.cuda.synchronize()
    assert float(out.abs().max()) == 0.0
    del out
    ext.release_completed_imports()
    gc.collect()
    assert torch.cuda.memory_allocated() < held, "the tensor went back to torch after its last use"


def pool_back_to(base, seconds=10.0):
    """Whether the Rust pool's used bytes come back to `base` within `seconds`: a consumer may
    release a capsule's deleter after its own stream work (slow under compute-sanitizer)."""
    deadline = time.monotonic() + seconds
    while ext.pool_used_bytes() != base and time.monotonic() < deadline:
        gc.collect()
        time.sleep(0.05)
    return ext.pool_used_bytes() == base


def need_cupy():
    try:
        import cupy
    except ImportError as error:
        raise Skip(f"no cupy ({error})")
    try:
        if cupy.cuda.runtime.getDeviceCount() == 0:
            raise Skip("cupy sees no CUDA device")
    except cupy.cuda.runtime.CUDARuntimeError as error:
        raise Skip(f"cupy sees no CUDA device ({error})")
    return cupy


def test_cupy_round_trip_shares_memory():
    cupy = need_cupy()
    try:
        import torch

        host = torch.randn(1, 2, 3, 4).numpy()
    except ImportError:
        import numpy

        host = numpy.random.default_rng(0).standard_normal((1, 2, 3, 4)).astype(numpy.float32)
    x = cupy.asarray(host)
    a = ext.from_dlpack(x)
    assert (a.shape, a.dtype, a.data_ptr) == ((1, 2, 3, 4), "float32", x.data.ptr), a
    y = cupy.from_dlpack(a)
    assert isinstance(y, cupy.ndarray) and y.data.ptr == x.data.ptr and bool((y == x).all())
    y[0, 0, 0, 0] = 9.0
    assert float(x[0, 0, 0, 0]) == 9.0, "a write through cupy's view of the Rust array"
    a.fill(-1.0)
    assert bool((x == -1.0).all()), "a Rust write seen by cupy"
    assert cupy.asarray(a).data.ptr == x.data.ptr, "through __cuda_array_interface__"
    out = ext.squared_diff(x, cupy.zeros_like(x) + 2)
    assert isinstance(out, cupy.ndarray) and bool(cupy.allclose(out, 9.0))


def test_cupy_views_half_and_bad_inputs():
    cupy = need_cupy()
    x = cupy.arange(24, dtype=cupy.float32).reshape(1, 2, 3, 4)
    for view in (x.T, x[:, 1:, ::2, 1:3]):
        a = ext.from_dlpack(view)
        assert a.data_ptr == view.data.ptr
        elements = tuple(s // view.itemsize for s in view.strides)
        assert same_strides(view.shape, a.strides, elements), (a, view.strides)
        back = cupy.from_dlpack(a)
        assert same_strides(view.shape, back.strides, view.strides) and bool((back == view).all())
        assert bool(cupy.allclose(ext.squared_diff(view, view * 3), (2 * view) ** 2))
    h = cupy.linspace(-2, 2, 24, dtype=cupy.float16).reshape(1, 2, 3, 4)
    out = ext.squared_diff(h, h * 0)
    assert out.dtype == cupy.float16 and bool(cupy.allclose(out.astype(cupy.float32), (h * h).astype(cupy.float32), rtol=2e-3))
    # Negative strides: a reversed view is a view here too. CuPy 14.2 exports them divided as
    # unsigned numbers (-12 elements as 2^62 - 12), a layout past the address space: refused,
    # never read.
    reversed_view = x[:, ::-1, :, ::-2]
    try:
        a = ext.from_dlpack(reversed_view)
    except BufferError as error:
        assert "overflows the address space" in str(error), error
    else:
        assert a.data_ptr == reversed_view.data.ptr
        elements = tuple(s // reversed_view.itemsize for s in reversed_view.strides)
        assert same_strides(reversed_view.shape, a.strides, elements) and elements[1] < 0 and elements[3] < 0, (a, reversed_view.strides)
        out = ext.squared_diff(reversed_view, reversed_view * 3)
        assert bool(cupy.allclose(out, (2 * reversed_view) ** 2))
    raises(TypeError, ext.squared_diff, cupy.zeros(3, dtype=cupy.complex64), cupy.zeros(3, dtype=cupy.complex64))


def test_cupy_complex_both_ways():
    cupy = need_cupy()
    for dtype, name in ((cupy.complex64, "complex64"), (cupy.complex128, "complex128")):
        x = (cupy.arange(6, dtype=cupy.float64) + 1j * cupy.arange(6, 12, dtype=cupy.float64)).astype(dtype).reshape(2, 3)
        a = ext.from_dlpack(x)
        assert (a.shape, a.dtype, a.data_ptr) == ((2, 3), name, x.data.ptr), a
        y = cupy.from_dlpack(a)
        assert y.dtype == dtype and y.data.ptr == x.data.ptr and bool((y == x).all())
        y[1, 2] = 7 - 8j
        assert complex(x[1, 2]) == 7 - 8j, "a write through cupy's view of the Rust array"
        assert cupy.asarray(a).data.ptr == x.data.ptr, "through __cuda_array_interface__ (typestr <c8/<c16)"


def test_cupy_lifetimes_leave_the_pool_as_it_was():
    cupy = need_cupy()
    x = cupy.arange(1000, dtype=cupy.float32)
    cupy.cuda.Device().synchronize()
    gc.collect()
    base = ext.pool_used_bytes()
    r = ext.squared_diff(x, x * 0)  # cupy array over Rust pool memory
    assert ext.pool_used_bytes() > base
    kept = ext.from_dlpack(r)
    del r
    gc.collect()
    # `==`, not cupy.allclose: under compute-sanitizer, CuPy 14.2's isclose of an array it took by
    # DLPack keeps frames that refer to that array alive (gc.get_referrers showed them on the
    # H200; not so without the sanitizer), and with it the Rust block this check counts.
    assert bool((cupy.from_dlpack(kept) == x * x).all())
    del kept
    gc.collect()
    cupy.cuda.Device().synchronize()
    assert pool_back_to(base), (ext.pool_used_bytes(), base)
    source = cupy.arange(500, dtype=cupy.float64)
    a = ext.from_dlpack(source)
    del source
    gc.collect()
    cupy.get_default_memory_pool().free_all_blocks()
    assert bool((cupy.from_dlpack(a) == cupy.arange(500, dtype=cupy.float64)).all()), "Rust keeps cupy's memory"


CHECKS = [
    test_objects_without_dlpack_are_type_errors,
    test_cpu_capsules_are_refused_and_released_once,
    test_a_cpu_producer_is_refused_before_it_exports,
    test_unsupported_types_and_versions_are_buffer_errors,
    test_a_consumed_capsule_is_a_value_error,
    test_torch_round_trip_shares_memory,
    test_torch_writes_are_seen_both_ways,
    test_torch_transposed_and_sliced_views_stay_views,
    test_torch_half_and_bfloat16,
    test_the_rust_kernel_inside_a_torch_computation,
    test_torch_lifetimes_leave_the_pool_as_it_was,
    test_torch_bad_inputs,
    test_torch_release_never_waits_on_the_host,
    test_torch_complex_both_ways,
    test_cupy_round_trip_shares_memory,
    test_cupy_views_half_and_bad_inputs,
    test_cupy_complex_both_ways,
    test_cupy_lifetimes_leave_the_pool_as_it_was,
]

if __name__ == "__main__":
    wanted = sys.argv[1:]
    for check in CHECKS:
        if not wanted or any(w in check.__name__ for w in wanted):
            run(check)
    print(f"{RESULTS['passed']} passed, {RESULTS['failed']} failed, {RESULTS['skipped']} skipped")
    sys.exit(1 if RESULTS["failed"] else 0)
