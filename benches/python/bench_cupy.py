"""CuPy references: RawKernel launch cost, the memory pool, copy / 2x+y /
sum / concatenate / take bandwidth and NVRTC compile, with the method of benches/src/lib.rs.
Usage: python3 bench_cupy.py KERNELS.cu"""

import os
import tempfile
import time

from common import (ALLOC_SIZES, AXPY_BLOCK, AXPY_N, BANDWIDTH_ELEMS, BANDWIDTH_REPS, BANDWIDTH_WARMUP_MS, LAUNCH_BATCH,
                    LAUNCH_BATCHES, LAUNCH_WARMUP_BATCHES, NVRTC_REPS, alloc_batch, emit, measure,
                    read_kernels, summarise, time_batches)

LAUNCH = "CuPy RawKernel"
POOL = "CuPy pool"


SCAN_SELECT_CASES = (("cumsum", "CuPy cumsum"), ("cumsum axis=1", "CuPy cumsum"), ("x[x > 0.5]", "CuPy x[x > 0.5]"),
                     ("nonzero", "CuPy flatnonzero"))
# Elements of the selections' input (bench-array's SELECT_ELEMS).
SELECT_ELEMS = 1 << 26
BANDWIDTH_CASES = (("D2D copy", "CuPy copyto"), ("2.0*x+y", "CuPy ElementwiseKernel"),
                   ("2.0*x+y", "CuPy expression"), ("sum", "CuPy sum"), ("sum axis=0", "CuPy sum"),
                   ("sum axis=1", "CuPy sum"), ("(x*y).sum", "CuPy sum(x*y)"), ("std", "CuPy std"),
                   ("fill", "CuPy fill"), ("rand", "CuPy random.rand"),
                   ("concatenate", "CuPy concatenate"), ("take", "CuPy take")) + SCAN_SELECT_CASES
# Elements of take's source array and of its random indices (bench-array's TAKE_ELEMS).
TAKE_ELEMS = 1 << 26


def unavailable(why, part):
    if part != "other":
        for case in ("empty", "axpy"):
            emit("launch", case, LAUNCH, "us/launch", status="not available: " + why)
    if part == "launch":
        return
    for case, _ in ALLOC_SIZES:
        emit("alloc", case, POOL, "us/pair", status="not available: " + why)
    for case, impl in BANDWIDTH_CASES:
        emit("bandwidth", case, impl, "GB/s", status="not available: " + why)
    emit("nvrtc", "cold compile", "CuPy RawModule", "ms", status="not available: " + why)


def main():
    source, part = read_kernels()
    # A private kernel cache, so 'cold' compiles are cold and nothing is left behind.
    os.environ.setdefault("CUPY_CACHE_DIR", tempfile.mkdtemp(prefix="cupy-cache-"))
    try:
        import cupy
        cupy.cuda.runtime.getDeviceCount()
    except Exception as error:
        unavailable("%s: %s" % (type(error).__name__, error), part)
        return
    print("cupy", cupy.__version__, "CUDA runtime", cupy.cuda.runtime.runtimeGetVersion(), flush=True)
    stream = cupy.cuda.Stream(non_blocking=True)
    with stream:
        if part != "other":
            launch_rows(cupy, source, stream)
        if part == "launch":
            return
        alloc_rows(cupy, stream)
        bandwidth_rows(cupy, stream)
    nvrtc_rows(cupy, source)


def launch_rows(cupy, source, stream):
    try:
        module = cupy.RawModule(code=source, backend="nvrtc")
        empty = module.get_function("empty")
        axpy = module.get_function("axpy")
    except Exception as error:
        for case in ("empty", "axpy"):
            emit("launch", case, LAUNCH, "us/launch", status="failed: %s" % error)
        return

    def run_empty():
        return time_batches(LAUNCH_WARMUP_BATCHES, LAUNCH_BATCHES, LAUNCH_BATCH, stream.synchronize,
                            lambda: empty((1,), (1,), ()))

    def run_axpy():
        n = AXPY_N
        i = cupy.arange(n, dtype=cupy.uint64)
        x = ((i % 7).astype(cupy.float32) * cupy.float32(0.5))
        y = (i % 13).astype(cupy.float32)
        expected = (2 * x + y).get()
        grid = ((n + AXPY_BLOCK - 1) // AXPY_BLOCK,)
        block = (AXPY_BLOCK,)
        args = (cupy.float32(2.0), x, y, cupy.uint64(n))
        axpy(grid, block, args)
        stream.synchronize()
        got = y.get()
        if not (got == expected).all():
            raise AssertionError("axpy is wrong at %d" % int((got != expected).argmax()))
        return time_batches(LAUNCH_WARMUP_BATCHES, LAUNCH_BATCHES, LAUNCH_BATCH, stream.synchronize,
                            lambda: axpy(grid, block, args))

    measure("launch", "empty", LAUNCH, "us/launch", run_empty)
    measure("launch", "axpy", LAUNCH, "us/launch", run_axpy)


def alloc_rows(cupy, stream):
    pool = cupy.get_default_memory_pool()
    for case, nbytes in ALLOC_SIZES:
        # The pointer returned by malloc is dropped at once, which returns the block to the pool.
        measure("alloc", case, POOL, "us/pair",
                lambda nbytes=nbytes: time_batches(3, 100, alloc_batch(nbytes) * 4, stream.synchronize,
                                                   lambda: pool.malloc(nbytes)))


def event_time(cupy, stream, op, reps=BANDWIDTH_REPS):
    """(median ms, p10 ms, p90 ms) of `op` over `reps` event-timed runs on `stream`, after the
    warm-up of benches/src/lib.rs (at least 3 runs and BANDWIDTH_WARMUP_MS of them)."""
    start, end = cupy.cuda.Event(), cupy.cuda.Event()

    def run():
        start.record(stream)
        op()
        end.record(stream)
        end.synchronize()
        return cupy.cuda.get_elapsed_time(start, end)

    began, calls = time.perf_counter(), 0
    while calls < 3 or (time.perf_counter() - began) * 1e3 < BANDWIDTH_WARMUP_MS:
        run()
        calls += 1
    samples = [run() for _ in range(reps)]
    samples.sort()
    at = lambda q: samples[round((len(samples) - 1) * q)]
    return at(0.5), at(0.1), at(0.9)


def bandwidth_rows(cupy, stream):
    n = BANDWIDTH_ELEMS
    try:
        x = cupy.full(n, 1.5, dtype=cupy.float32)
        y = cupy.full(n, 0.25, dtype=cupy.float32)
        z = cupy.empty(n, dtype=cupy.float32)
    except Exception as error:
        for case, impl in BANDWIDTH_CASES:
            emit("bandwidth", case, impl, "GB/s", status="failed: %s" % error)
        return

    def figure(op, bytes_moved, check, what="2^28 f32"):
        def run():
            median, p10, p90 = event_time(cupy, stream, op)
            check()
            gbps = lambda ms: bytes_moved / (ms * 1e-3) / 1e9
            return gbps(median), ("%s, %d bytes per op over the median of %d event-timed runs "
                                  "(%.3f ms); p10..p90 %.0f..%.0f GB/s"
                                  % (what, bytes_moved, BANDWIDTH_REPS, median, gbps(p90), gbps(p10)))
        return run

    def expect(array, value):
        def check():
            ends = cupy.concatenate([array[:1024], array[-1024:]]).get()
            if not (ends == value).all():
                raise AssertionError("expected %r at both ends, found %r" % (value, ends[ends != value][:4]))
        return check

    nbytes = n * 4
    measure("bandwidth", "D2D copy", "CuPy copyto", "GB/s",
            figure(lambda: cupy.copyto(z, x), 2 * nbytes, expect(z, 1.5)))
    axpy = cupy.ElementwiseKernel("float32 x, float32 y", "float32 z", "z = 2.0f * x + y", "bench_axpy")
    measure("bandwidth", "2.0*x+y", "CuPy ElementwiseKernel", "GB/s",
            figure(lambda: axpy(x, y, z), 3 * nbytes, expect(z, 3.25)))
    holder = {}

    def expression():
        holder["out"] = 2.0 * x + y

    measure("bandwidth", "2.0*x+y", "CuPy expression", "GB/s",
            figure(expression, 3 * nbytes, lambda: expect(holder["out"], 3.25)()))
    holder.clear()

    def total():
        holder["sum"] = cupy.sum(x)

    def check_sum():
        got = float(holder["sum"].get())
        if abs(got - 1.5 * n) > 1e-5 * 1.5 * n:
            raise AssertionError("sum is %r, expected %r" % (got, 1.5 * n))

    measure("bandwidth", "sum", "CuPy sum", "GB/s", figure(total, nbytes, check_sum))

    side = 1 << 14
    square = x.reshape(side, side)
    for axis in (0, 1):
        def along(axis=axis):
            holder["sums"] = cupy.sum(square, axis=axis)

        def check_along():
            got = holder["sums"].get()
            if not (got == 1.5 * side).all():
                raise AssertionError("sum along an axis is %r, expected %r" % (got[:4], 1.5 * side))

        measure("bandwidth", "sum axis=%d" % axis, "CuPy sum", "GB/s", figure(along, nbytes, check_along))

    # What NumPy code writes without cupy.fuse: a temporary for x*y, then its sum.
    def product_sum():
        holder["dot"] = cupy.sum(x * y)

    def check_product_sum():
        got = float(holder["dot"].get())
        if abs(got - 0.375 * n) > 1e-5 * 0.375 * n:
            raise AssertionError("sum(x*y) is %r, expected %r" % (got, 0.375 * n))

    measure("bandwidth", "(x*y).sum", "CuPy sum(x*y)", "GB/s", figure(product_sum, 2 * nbytes, check_product_sum))

    def deviation():
        holder["std"] = cupy.std(x)

    def check_deviation():
        got = float(holder["std"].get())
        if got != 0.0:
            raise AssertionError("std of equal values is %r" % got)

    measure("bandwidth", "std", "CuPy std", "GB/s", figure(deviation, nbytes, check_deviation))
    holder.clear()

    measure("bandwidth", "fill", "CuPy fill", "GB/s", figure(lambda: z.fill(0.5), nbytes, expect(z, 0.5)))

    def rand():
        holder["rand"] = cupy.random.rand(n, dtype=cupy.float32)

    def check_rand():
        mean = float(holder["rand"].mean())
        if abs(mean - 0.5) > 1e-3:
            raise AssertionError("rand's mean is %r" % mean)

    measure("bandwidth", "rand", "CuPy random.rand", "GB/s", figure(rand, nbytes, check_rand))
    del x, y, z, square
    holder.clear()
    gather_rows(cupy, figure, holder)
    holder.clear()
    scan_select_rows(cupy, figure, holder)


def gather_rows(cupy, figure, holder):
    """concatenate of two 2^27 f32 arrays, and take of 2^26 random int64 indices from 2^26 f32."""
    n = BANDWIDTH_ELEMS
    try:
        a = cupy.full(n // 2, 1.5, dtype=cupy.float32)
        b = cupy.full(n // 2, 0.25, dtype=cupy.float32)
        source = cupy.arange(TAKE_ELEMS, dtype=cupy.float32)
        indices = cupy.random.randint(0, TAKE_ELEMS, size=TAKE_ELEMS, dtype=cupy.int64)
    except Exception as error:
        for case, impl in (("concatenate", "CuPy concatenate"), ("take", "CuPy take")):
            emit("bandwidth", case, impl, "GB/s", status="failed: %s" % error)
        return

    def concatenate():
        holder["joined"] = cupy.concatenate([a, b])

    def check_concatenate():
        joined = holder["joined"]
        ends = [float(joined[0]), float(joined[n // 2 - 1]), float(joined[n // 2]), float(joined[-1])]
        if ends != [1.5, 1.5, 0.25, 0.25]:
            raise AssertionError("concatenate is wrong at its ends: %r" % ends)

    measure("bandwidth", "concatenate", "CuPy concatenate", "GB/s",
            figure(concatenate, 2 * n * 4, check_concatenate, "two 2^27 f32 into 2^28"))

    def take():
        holder["taken"] = cupy.take(source, indices)

    def check_take():
        if not (holder["taken"] == source[indices]).all():
            raise AssertionError("take is wrong")

    measure("bandwidth", "take", "CuPy take", "GB/s",
            figure(take, TAKE_ELEMS * (8 + 4 + 4), check_take, "2^26 random i64 indices into 2^26 f32"))


def nvrtc_rows(cupy, source):
    def cold():
        # A unique comment per compile defeats CuPy's memory and disk caches.
        cupy.RawModule(code=source + "\n// warm-up\n", backend="nvrtc").compile()
        samples = []
        for i in range(NVRTC_REPS):
            module = cupy.RawModule(code=source + "\n// cold %d %d\n" % (os.getpid(), i), backend="nvrtc")
            start = time.perf_counter()
            module.compile()
            samples.append((time.perf_counter() - start) * 1e3)
        return summarise(samples, 1)

    measure("nvrtc", "cold compile", "CuPy RawModule", "ms", cold)


def scan_select_rows(cupy, figure, holder):
    """cumsum of 2^28 f32 (whole, and the rows of its (2^18, 2^10) view), x[x > 0.5] on 2^26 f32
    and flatnonzero of 2^26 uint8 half nonzero, as bench-array measures them."""
    n, m = BANDWIDTH_ELEMS, SELECT_ELEMS
    try:
        x = cupy.ones(n, dtype=cupy.float32)
        rows = x.reshape(n >> 10, 1 << 10)
        values = cupy.random.rand(m, dtype=cupy.float32)
        flags = ((cupy.arange(m, dtype=cupy.uint64) * 2654435761) >> 13).astype(cupy.uint8) & 1
    except Exception as error:
        for case, impl in SCAN_SELECT_CASES:
            emit("bandwidth", case, impl, "GB/s", status="failed: %s" % error)
        return
    for case, array, axis, last in (("cumsum", x, None, float(n)), ("cumsum axis=1", rows, 1, 1024.0)):
        def scan(array=array, axis=axis):
            holder["scan"] = cupy.cumsum(array, axis=axis)

        def check_scan(last=last):
            largest = float(holder["scan"].max())
            if abs(largest - last) > 1e-3 * last and largest != 2.0 ** 24:
                raise AssertionError("cumsum reaches %r, expected %r" % (largest, last))

        measure("bandwidth", case, "CuPy cumsum", "GB/s", figure(scan, 2 * n * 4, check_scan))
    kept = int((values > 0.5).sum())

    def extract():
        holder["kept"] = values[values > 0.5]

    def check_extract():
        if holder["kept"].size != kept:
            raise AssertionError("x[x > 0.5] kept %d, expected %d" % (holder["kept"].size, kept))

    measure("bandwidth", "x[x > 0.5]", "CuPy x[x > 0.5]", "GB/s",
            figure(extract, (m + kept) * 4, check_extract, "2^26 f32, about half kept"))
    nonzero = int(cupy.count_nonzero(flags))

    def flat():
        holder["indices"] = cupy.flatnonzero(flags)

    def check_flat():
        if holder["indices"].size != nonzero:
            raise AssertionError("flatnonzero found %d, expected %d" % (holder["indices"].size, nonzero))

    measure("bandwidth", "nonzero", "CuPy flatnonzero", "GB/s",
            figure(flat, m + nonzero * 8, check_flat, "2^26 u8, half nonzero, i64 indices"))


if __name__ == "__main__":
    main()
