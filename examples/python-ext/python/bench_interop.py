"""The cost of a Rust kernel inside a PyTorch pipeline, through the example extension module
`cuda_rs_ext` (examples/python-ext), against torch itself and a CuPy RawKernel of the same body:

- how long the host is blocked by importing a torch tensor and dropping it, and by
  `squared_diff`, while 100 ms of work is queued on torch's stream;
- the per-call cost of `squared_diff(t, u)` on small tensors against `t * u` in torch;
- the bandwidth of `squared_diff` on 2^26 floats against the same body as a CuPy RawKernel
  called on `cupy.from_dlpack` of the same tensors.

    CUDA_RS_EXT_DIR=folder/with/cuda_rs_ext.so python3 bench_interop.py
"""

import gc
import os
import sys
import time

if os.environ.get("CUDA_RS_EXT_DIR"):
    sys.path.insert(0, os.environ["CUDA_RS_EXT_DIR"])

import cuda_rs_ext as ext  # noqa: E402
import cupy  # noqa: E402
import torch  # noqa: E402

SQUARED_DIFF = r"""
extern "C" __global__ void squared_diff(const float *a, const float *b, float *out, unsigned long long n) {
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
         i += (unsigned long long)gridDim.x * blockDim.x) {
        const float d = a[i] - b[i];
        out[i] = d * d;
    }
}
"""


def per_call_us(call, seconds=0.5):
    """Median of 9 rounds of the mean time of `call` over about `seconds`/9, in microseconds."""
    call()
    torch.cuda.synchronize()
    rounds = []
    for _ in range(9):
        count, start = 0, time.perf_counter()
        while time.perf_counter() - start < seconds / 9:
            call()
            count += 1
        torch.cuda.synchronize()
        rounds.append((time.perf_counter() - start) / count * 1e6)
    return sorted(rounds)[4]


def device_ms(call, repeats=9, batch=20):
    """Median over `repeats` of the device time per call of `batch` calls queued back to back
    (so the host's work per call overlaps the kernels before it), in milliseconds."""
    for _ in range(3):
        call()
    torch.cuda.synchronize()
    times = []
    for _ in range(repeats):
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(batch):
            call()
        stop.record()
        stop.synchronize()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(stop) / batch)
    return sorted(times)[len(times) // 2]


def main():
    print(f"device {torch.cuda.get_device_name()}, torch {torch.__version__}, cupy {cupy.__version__}")
    # 1. Host blocking with 100 ms queued on torch's stream.
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    torch.cuda._sleep(20_000_000)
    stop.record()
    stop.synchronize()
    cycles_per_ms = 20_000_000 / start.elapsed_time(stop)
    t = torch.randn(1 << 20, device="cuda")
    # Warm up: the first call compiles and loads the kernel, and loading a module waits for
    # the device.
    ext.squared_diff(t, t)
    torch.cuda.synchronize()
    torch.cuda._sleep(int(100 * cycles_per_ms))
    begin = time.perf_counter()
    a = ext.from_dlpack(t)
    del a
    import_ms = (time.perf_counter() - begin) * 1e3
    begin = time.perf_counter()
    out = ext.squared_diff(t, t)
    kernel_ms = (time.perf_counter() - begin) * 1e3
    torch.cuda.synchronize()
    del out
    print(f"host blocked with 100 ms queued: from_dlpack(t) dropped at once {import_ms:.2f} ms, squared_diff(t, u) {kernel_ms:.2f} ms")

    # 2. Per-call cost on small tensors.
    t, u = torch.randn(1024, device="cuda"), torch.randn(1024, device="cuda")
    ours = per_call_us(lambda: ext.squared_diff(t, u))
    torch_mul = per_call_us(lambda: t * u)
    print(f"per call (1024 floats): squared_diff {ours:.1f} us, torch t * u {torch_mul:.1f} us, ratio {ours / torch_mul:.2f}")

    # 3. Bandwidth on 2^26 floats: 3 * 4 bytes per element.
    n = 1 << 26
    t, u = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
    kernel = cupy.RawKernel(SQUARED_DIFF, "squared_diff")
    ct, cu = cupy.from_dlpack(t), cupy.from_dlpack(u)
    cout = cupy.empty_like(ct)
    blocks = 132 * 8

    def cupy_call():
        kernel((blocks,), (256,), (ct, cu, cout, cupy.uint64(n)))

    ext.squared_diff(t, u)
    torch.cuda.synchronize()
    rust = device_ms(lambda: ext.squared_diff(t, u))
    with cupy.cuda.ExternalStream(torch.cuda.current_stream().cuda_stream):
        raw = device_ms(cupy_call)
    gbs = lambda ms: 3 * 4 * n / (ms * 1e-3) / 1e9  # noqa: E731
    print(f"2^26 floats: squared_diff {gbs(rust):.0f} GB/s ({rust:.3f} ms), CuPy RawKernel {gbs(raw):.0f} GB/s ({raw:.3f} ms), ratio {gbs(rust) / gbs(raw):.3f}")
    del ct, cu, cout
    gc.collect()


if __name__ == "__main__":
    main()
