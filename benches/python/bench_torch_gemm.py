"""torch references for bench-libs: torch.matmul TFLOP/s in bf16 at 8192^3 and f32 at 4096^3
(full f32, and with TF32 allowed), relu(x @ w + b) in bf16 at 8192^3, and `a @ b` of two
stacks of 256 f32 128 x 128 matrices, timed with CUDA events like benches/src/bin/bench-libs.rs
(2 m n k flops per product, median of 20 after 3); and the host cost of `a @ b` at 64x64 and
512x512 f32 (us/call: median over batches of 100 back-to-back calls, synchronised between
batches), beside DeviceArray::matmul's.
Usage: python3 bench_torch_gemm.py KERNELS.cu [launch|other] (the kernels are not used)."""

from common import emit, measure, read_kernels, summarise, time_batches

BENCH = "gemm"
UNIT = "TFLOP/s"
MATMUL = "torch.matmul (Python)"
MATMUL_TF32 = "torch.matmul (Python, TF32 allowed)"
FUSED = "torch relu(x @ w + b) (Python)"
WARMUP = 3
REPS = 20
AT = "torch a @ b (Python)"
BATCHED = "f32 256 x 128^3 batched"
ROWS = [("bf16 8192^3", MATMUL), ("bf16 8192^3", FUSED), ("f32 4096^3", MATMUL), ("f32 4096^3", MATMUL_TF32),
        (BATCHED, AT)]
HOST_SIZES = [64, 512]


def main():
    _, part = read_kernels()
    if part == "launch":
        return
    try:
        import torch
        if not torch.cuda.is_available():
            raise RuntimeError("torch.cuda.is_available() is False")
    except Exception as error:
        for case, impl in ROWS:
            emit(BENCH, case, impl, UNIT, status="not available: torch: %s: %s" % (type(error).__name__, error))
        for n in HOST_SIZES:
            emit("host", "matmul %dx%d f32" % (n, n), AT, "us/call",
                 status="not available: torch: %s: %s" % (type(error).__name__, error))
        return
    print("torch", torch.__version__, "cuda", torch.version.cuda, "on", torch.cuda.get_device_name(0), flush=True)

    def inputs(n, dtype):
        values = ((torch.arange(n * n, device="cuda") * 7 % 17).to(torch.float32) - 8.0) / 8.0
        a = values.reshape(n, n).to(dtype)
        return a, a.clone()

    def figure(case, impl, n, run, products=1):
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
            tflops = lambda ms: products * 2.0 * n ** 3 / (ms * 1e-3) / 1e12
            ordered = sorted(samples)
            p10, p90 = ordered[round((len(ordered) - 1) * 0.1)], ordered[round((len(ordered) - 1) * 0.9)]
            detail = "median of %d products of %.3f ms; p10 %.1f, p90 %.1f TFLOP/s (event-timed, after %d warm-up)" % (
                len(samples), median, tflops(p90), tflops(p10), WARMUP)
            emit(BENCH, case, impl, UNIT, tflops(median), detail=detail)
        except Exception as error:
            emit(BENCH, case, impl, UNIT, status="failed: %s: %s" % (type(error).__name__, error))

    a, b = inputs(8192, torch.bfloat16)
    bias = torch.full((8192,), 0.5, device="cuda", dtype=torch.bfloat16)
    figure("bf16 8192^3", MATMUL, 8192, lambda: torch.matmul(a, b))
    figure("bf16 8192^3", FUSED, 8192, lambda: torch.relu(torch.addmm(bias, a, b)))
    del a, b
    a, b = inputs(4096, torch.float32)
    previous = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = False
    figure("f32 4096^3", MATMUL, 4096, lambda: torch.matmul(a, b))
    torch.backends.cuda.matmul.allow_tf32 = True
    figure("f32 4096^3", MATMUL_TF32, 4096, lambda: torch.matmul(a, b))
    del a, b
    # Full f32 for the rest, as DeviceArray::matmul computes.
    torch.backends.cuda.matmul.allow_tf32 = False
    values = ((torch.arange(256 * 128 * 128, device="cuda") * 7 % 17).to(torch.float32) - 8.0) / 8.0
    a = values.reshape(256, 128, 128)
    b = a.clone()
    figure(BATCHED, AT, 128, lambda: a @ b, products=256)
    del a, b
    for n in HOST_SIZES:
        def host(n=n):
            values = ((torch.arange(n * n, device="cuda") * 7 % 17).to(torch.float32) - 8.0) / 8.0
            a = values.reshape(n, n)
            b = a.clone()
            median, detail = time_batches(3, 20, 100, torch.cuda.synchronize, lambda: a @ b)
            return median, "host time per call (output allocated per call; sync between batches); " + detail
        measure("host", "matmul %dx%d f32" % (n, n), AT, "us/call", host)
    torch.backends.cuda.matmul.allow_tf32 = previous


if __name__ == "__main__":
    main()
