"""torch and CuPy references for bench-libs: torch.matmul and cupy.matmul TFLOP/s over the
matrix of element types (bf16, f16, tf32 = f32 with TF32 allowed, f32, f64) and shapes (8192^3,
4096^3, 8192 x 8192 x 64), relu(x @ w + b) in bf16 at 8192^3, and `a @ b` of two stacks of 256
f32 128 x 128 matrices, timed with CUDA events like benches/src/bin/bench-libs.rs (2 m n k flops
per product, median of 20 after 3); and the host cost of `a @ b` at 64x64 and 512x512 f32
(us/call: median over batches of 100 back-to-back calls queued behind torch.cuda._sleep, so the
device's time does not count, synchronised between batches), beside
DeviceArray::matmul's. CuPy's TF32 is chosen once, at import, by CUPY_TF32: its tf32 rows run in
a child process with CUPY_TF32=1.
Usage: python3 bench_torch_gemm.py KERNELS.cu [launch|other] (the kernels are not used)."""

from common import cuda_torch, emit, measure, read_kernels, summarise, time_batches

BENCH = "gemm"
UNIT = "TFLOP/s"
MATMUL = "torch.matmul (Python)"
CUPY = "CuPy matmul (Python)"
DTYPES = ["bf16", "f16", "tf32", "f32", "f64"]
SHAPES = [("8192^3", 8192, 8192, 8192), ("4096^3", 4096, 4096, 4096), ("8192x8192x64", 8192, 8192, 64)]
MATRIX = ["%s %s" % (dtype, shape) for dtype in DTYPES for shape, _, _, _ in SHAPES]
FUSED = "torch relu(x @ w + b) (Python)"
WARMUP = 3
REPS = 20
AT = "torch a @ b (Python)"
BATCHED = "f32 256 x 128^3 batched"
ROWS = [(case, MATMUL) for case in MATRIX] + [("bf16 8192^3", FUSED), (BATCHED, AT)]
HOST_SIZES = [64, 512]
# Clock cycles the device spins for while a host-cost batch queues (bench-libs's SPIN_CYCLES).
SPIN_CYCLES = 20_000_000


def main():
    _, part = read_kernels()
    if part == "launch":
        return
    torch, unavailable = cuda_torch()
    if unavailable:
        for case, impl in ROWS:
            emit(BENCH, case, impl, UNIT, status=unavailable)
        for n in HOST_SIZES:
            emit("host", "matmul %dx%d f32" % (n, n), AT, "us/call", status=unavailable)
        cupy_matrix()
        return
    print("torch", torch.__version__, "cuda", torch.version.cuda, "on", torch.cuda.get_device_name(0), flush=True)

    def inputs(n, dtype):
        values = ((torch.arange(n * n, device="cuda") * 7 % 17).to(torch.float32) - 8.0) / 8.0
        a = values.reshape(n, n).to(dtype)
        return a, a.clone()

    def figure(case, impl, n, run, products=1, flops=None):
        try:
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            for _ in range(WARMUP):
                run()
            torch.cuda.synchronize()
            samples = []
            for _ in range(REPS):
                start.record()
                run()
                end.record()
                end.synchronize()
                samples.append(start.elapsed_time(end))
            median, _ = summarise(samples, 1)
            work = flops if flops is not None else products * 2.0 * n ** 3
            tflops = lambda ms: work / (ms * 1e-3) / 1e12
            ordered = sorted(samples)
            p10, p90 = ordered[round((len(ordered) - 1) * 0.1)], ordered[round((len(ordered) - 1) * 0.9)]
            detail = "median of %d products of %.3f ms; p10 %.1f, p90 %.1f TFLOP/s (event-timed, after %d warm-up)" % (
                len(samples), median, tflops(p90), tflops(p10), WARMUP)
            emit(BENCH, case, impl, UNIT, tflops(median), detail=detail)
        except Exception as error:
            emit(BENCH, case, impl, UNIT, status="failed: %s: %s" % (type(error).__name__, error))

    previous = torch.backends.cuda.matmul.allow_tf32
    # The host rows first, in full f32 as DeviceArray::matmul's (quick; bench-libs runs its own
    # first too).
    torch.backends.cuda.matmul.allow_tf32 = False
    for n in HOST_SIZES:
        def host(n=n):
            values = ((torch.arange(n * n, device="cuda") * 7 % 17).to(torch.float32) - 8.0) / 8.0
            a = values.reshape(n, n)
            b = a.clone()
            def hold():
                # The calls queue behind a spinning kernel, as bench-libs's do: host time alone.
                torch.cuda.synchronize()
                torch.cuda._sleep(SPIN_CYCLES)

            median, detail = time_batches(3, 20, 100, hold, lambda: a @ b)
            return median, "host time per call, queued behind a spinning kernel (output allocated per call; sync between batches); " + detail
        measure("host", "matmul %dx%d f32" % (n, n), AT, "us/call", host)
    dtypes = {"bf16": torch.bfloat16, "f16": torch.float16, "tf32": torch.float32, "f32": torch.float32,
              "f64": torch.float64}
    for dtype in DTYPES:
        torch.backends.cuda.matmul.allow_tf32 = dtype == "tf32"
        for shape, m, n, k in SHAPES:
            def values(rows, cols):
                flat = ((torch.arange(rows * cols, device="cuda") * 7 % 17).to(torch.float32) - 8.0) / 8.0
                return flat.reshape(rows, cols).to(dtypes[dtype])
            a, b = values(m, k), values(k, n)
            figure("%s %s" % (dtype, shape), MATMUL, n, lambda: torch.matmul(a, b), flops=2.0 * m * n * k)
            del a, b
    torch.backends.cuda.matmul.allow_tf32 = False
    a, b = inputs(8192, torch.bfloat16)
    bias = torch.full((8192,), 0.5, device="cuda", dtype=torch.bfloat16)
    figure("bf16 8192^3", FUSED, 8192, lambda: torch.relu(torch.addmm(bias, a, b)))
    del a, b, bias
    torch.cuda.empty_cache()
    cupy_matrix()
    # Full f32 for the rest, as DeviceArray::matmul computes.
    torch.backends.cuda.matmul.allow_tf32 = False
    values = ((torch.arange(256 * 128 * 128, device="cuda") * 7 % 17).to(torch.float32) - 8.0) / 8.0
    a = values.reshape(256, 128, 128)
    b = a.clone()
    figure(BATCHED, AT, 128, lambda: a @ b, products=256)
    del a, b
    torch.backends.cuda.matmul.allow_tf32 = previous


def cupy_matrix():
    """cupy.matmul over the matrix, event-timed like the torch rows. CuPy reads CUPY_TF32 once, at
    import: without it set, the tf32 rows run in a child process that sets it."""
    import os
    import subprocess
    import sys
    tf32_here = os.environ.get("CUPY_TF32") == "1"
    try:
        import cupy
    except Exception as error:
        for case in MATRIX:
            emit(BENCH, case, CUPY, UNIT, status="not available: cupy: %s: %s" % (type(error).__name__, error))
        return
    dtypes = {"bf16": None, "f16": cupy.float16, "tf32": cupy.float32, "f32": cupy.float32, "f64": cupy.float64}
    for dtype in DTYPES:
        if (dtype == "tf32") != tf32_here:
            continue
        for shape, m, n, k in SHAPES:
            case = "%s %s" % (dtype, shape)
            if dtypes[dtype] is None:
                emit(BENCH, case, CUPY, UNIT, status="not available: CuPy has no bfloat16 dtype")
                continue
            try:
                def values(rows, cols):
                    flat = ((cupy.arange(rows * cols) * 7 % 17).astype(cupy.float32) - 8.0) / 8.0
                    return flat.reshape(rows, cols).astype(dtypes[dtype])
                a, b = values(m, k), values(k, n)
                start, end = cupy.cuda.Event(), cupy.cuda.Event()
                for _ in range(WARMUP):
                    cupy.matmul(a, b)
                cupy.cuda.Device().synchronize()
                samples = []
                for _ in range(REPS):
                    start.record()
                    cupy.matmul(a, b)
                    end.record()
                    end.synchronize()
                    samples.append(cupy.cuda.get_elapsed_time(start, end))
                del a, b
                cupy.get_default_memory_pool().free_all_blocks()
                median, _ = summarise(samples, 1)
                tflops = lambda ms: 2.0 * m * n * k / (ms * 1e-3) / 1e12
                ordered = sorted(samples)
                p10, p90 = ordered[round((len(ordered) - 1) * 0.1)], ordered[round((len(ordered) - 1) * 0.9)]
                detail = "median of %d products of %.3f ms; p10 %.1f, p90 %.1f TFLOP/s (event-timed, after %d warm-up)" % (
                    len(samples), median, tflops(p90), tflops(p10), WARMUP)
                emit(BENCH, case, CUPY, UNIT, tflops(median), detail=detail)
            except Exception as error:
                emit(BENCH, case, CUPY, UNIT, status="failed: %s: %s" % (type(error).__name__, error))
    if not tf32_here:
        child = subprocess.run([sys.executable, __file__, "--cupy-tf32"], env=dict(os.environ, CUPY_TF32="1"),
                               capture_output=True, text=True, timeout=300)
        sys.stdout.write(child.stdout)
        if child.returncode != 0:
            for shape, _, _, _ in SHAPES:
                last = (child.stderr.strip().splitlines() or [""])[-1]
                emit(BENCH, "tf32 %s" % shape, CUPY, UNIT,
                     status="failed: the CUPY_TF32=1 child exited %d: %s" % (child.returncode, last))


if __name__ == "__main__":
    import sys as _sys
    if _sys.argv[1:] == ["--cupy-tf32"]:
        cupy_matrix()
    else:
        main()
