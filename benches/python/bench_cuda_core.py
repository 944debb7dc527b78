"""cuda.core (NVIDIA's cuda-python) references: launch cost, Device.allocate
and NVRTC compile through Program, with the method of benches/src/lib.rs.
Usage: python3 bench_cuda_core.py KERNELS.cu"""

import time

from common import (ALLOC_SIZES, AXPY_BLOCK, AXPY_N, LAUNCH_BATCH, LAUNCH_BATCHES, LAUNCH_WARMUP_BATCHES,
                    NVRTC_REPS, alloc_batch, emit, measure, read_kernels, summarise, time_batches)

LAUNCH = "cuda.core launch (Python)"
ALLOC = "cuda.core Device.allocate (Python)"
COMPILE = "cuda.core Program (Python)"


def import_cuda_core():
    """The cuda.core namespace (top-level in new releases, `experimental` in old ones) and its version."""
    try:
        import cuda.core as core
        core.Device  # noqa: B018 - raises AttributeError where only `experimental` exists
    except (ImportError, AttributeError):
        from cuda.core import experimental as core
    try:
        from importlib.metadata import version
        release = version("cuda-core")
    except Exception:
        release = getattr(core, "__version__", "unknown")
    return core, release


def main():
    source, part = read_kernels()
    try:
        core, release = import_cuda_core()
        import numpy as np
        device = core.Device(0)
        device.set_current()
        stream = device.create_stream()
    except Exception as error:
        why = "not available: cuda.core: %s: %s" % (type(error).__name__, error)
        if part != "other":
            for case in ("empty", "axpy"):
                emit("launch", case, LAUNCH, "us/launch", status=why)
        if part != "launch":
            for case, _ in ALLOC_SIZES:
                emit("alloc", case, ALLOC, "us/pair", status=why)
            emit("nvrtc", "cold compile", COMPILE, "ms", status=why)
        return
    print("cuda.core", release, "on", device.name, "sm_%s" % device.arch, flush=True)
    arch = "sm_%s" % device.arch

    def compile_kernels():
        program = core.Program(source, code_type="c++", options=core.ProgramOptions(arch=arch))
        return program.compile("cubin")

    try:
        module = compile_kernels()
        empty = module.get_kernel("empty")
        axpy = module.get_kernel("axpy")
    except Exception as error:
        if part != "other":
            for case in ("empty", "axpy"):
                emit("launch", case, LAUNCH, "us/launch", status="failed: %s: %s" % (type(error).__name__, error))
        empty = axpy = None

    if empty is not None and part != "other":
        one = core.LaunchConfig(grid=1, block=1)
        measure("launch", "empty", LAUNCH, "us/launch",
                lambda: time_batches(LAUNCH_WARMUP_BATCHES, LAUNCH_BATCHES, LAUNCH_BATCH, stream.sync,
                                     lambda: core.launch(stream, one, empty)))

        def run_axpy():
            n = AXPY_N
            x = device.allocate(n * 4, stream=stream)
            y = device.allocate(n * 4, stream=stream)
            checked = check_axpy(core, device, stream, axpy, x, y, n)
            config = core.LaunchConfig(grid=(n + AXPY_BLOCK - 1) // AXPY_BLOCK, block=AXPY_BLOCK)
            a, length = np.float32(2.0), np.uint64(n)
            median, detail = time_batches(LAUNCH_WARMUP_BATCHES, LAUNCH_BATCHES, LAUNCH_BATCH, stream.sync,
                                          lambda: core.launch(stream, config, axpy, a, x, y, length))
            x.close(stream)
            y.close(stream)
            return median, detail + ("" if checked is True else "; result not checked: " + checked)

        measure("launch", "axpy", LAUNCH, "us/launch", run_axpy)
    if part == "launch":
        return

    for case, nbytes in ALLOC_SIZES:
        measure("alloc", case, ALLOC, "us/pair",
                lambda nbytes=nbytes: time_batches(
                    3, 100, alloc_batch(nbytes) * 4, stream.sync,
                    lambda: device.allocate(nbytes, stream=stream).close(stream)))

    def cold():
        compile_kernels()  # warm-up
        samples = []
        for _ in range(NVRTC_REPS):
            start = time.perf_counter()
            compile_kernels()
            samples.append((time.perf_counter() - start) * 1e3)
        return summarise(samples, 1)

    measure("nvrtc", "cold compile", COMPILE, "ms", cold)


def check_axpy(core, device, stream, axpy, x, y, n):
    """Launches axpy once on known data and compares on the host through CuPy; True, or why not checked."""
    try:
        import cupy
        import numpy as np
    except ImportError as error:
        return "CuPy is missing (%s)" % error
    try:
        got, expected = axpy_on_known_data(core, cupy, np, stream, axpy, x, y, n)
    except Exception as error:  # CuPy interop differs between releases: report, do not fail the timing
        return "CuPy interop failed (%s: %s)" % (type(error).__name__, error)
    if not (got == expected).all():
        raise AssertionError("axpy is wrong at %d" % int((got != expected).argmax()))
    return True


def axpy_on_known_data(core, cupy, np, stream, axpy, x, y, n):
    with cupy.cuda.ExternalStream(int(stream.handle)):
        def view(buffer):
            memory = cupy.cuda.UnownedMemory(int(buffer.handle), n * 4, buffer)
            return cupy.ndarray((n,), dtype=cupy.float32, memptr=cupy.cuda.MemoryPointer(memory, 0))
        xs, ys = view(x), view(y)
        i = cupy.arange(n, dtype=cupy.uint64)
        xs[...] = (i % 7).astype(cupy.float32) * cupy.float32(0.5)
        ys[...] = (i % 13).astype(cupy.float32)
        expected = (2 * xs + ys).get()
        config = core.LaunchConfig(grid=(n + AXPY_BLOCK - 1) // AXPY_BLOCK, block=AXPY_BLOCK)
        core.launch(stream, config, axpy, np.float32(2.0), x, y, np.uint64(n))
        stream.sync()
        return ys.get(), expected


if __name__ == "__main__":
    main()
