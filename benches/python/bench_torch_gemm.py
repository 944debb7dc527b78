"""torch references for bench-libs: torch.matmul TFLOP/s in bf16 at 8192^3 and f32 at 4096^3
(full f32, and with TF32 allowed), and relu(x @ w + b) in bf16 at 8192^3, timed with CUDA
events like benches/src/bin/bench-libs.rs (2 n^3 flops per product, median of 20 after 3).
Usage: python3 bench_torch_gemm.py KERNELS.cu [launch|other] (the kernels are not used)."""

from common import emit, read_kernels, summarise

BENCH = "gemm"
UNIT = "TFLOP/s"
MATMUL = "torch.matmul (Python)"
MATMUL_TF32 = "torch.matmul (Python, TF32 allowed)"
FUSED = "torch relu(x @ w + b) (Python)"
WARMUP = 3
REPS = 20
ROWS = [("bf16 8192^3", MATMUL), ("bf16 8192^3", FUSED), ("f32 4096^3", MATMUL), ("f32 4096^3", MATMUL_TF32)]


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
        return
    print("torch", torch.__version__, "cuda", torch.version.cuda, "on", torch.cuda.get_device_name(0), flush=True)

    def inputs(n, dtype):
        values = ((torch.arange(n * n, device="cuda") * 7 % 17).to(torch.float32) - 8.0) / 8.0
        a = values.reshape(n, n).to(dtype)
        return a, a.clone()

    def figure(case, impl, n, run):
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
            tflops = lambda ms: 2.0 * n ** 3 / (ms * 1e-3) / 1e12
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
    torch.backends.cuda.matmul.allow_tf32 = previous


if __name__ == "__main__":
    main()
