"""Shared by the Python benchmarks: the sizes, the timing method and the
`ROW {json}` output line, all kept in step with benches/src/lib.rs."""

import json
import sys
import time

LAUNCH_BATCH = 256
LAUNCH_WARMUP_BATCHES = 20
LAUNCH_BATCHES = 200
AXPY_N = 1 << 16
AXPY_BLOCK = 256
ALLOC_SIZES = [("1 KiB", 1 << 10), ("1 MiB", 1 << 20), ("256 MiB", 256 << 20)]
BANDWIDTH_ELEMS = 1 << 28
BANDWIDTH_REPS = 20
BANDWIDTH_WARMUP_MS = 300.0  # as in benches/src/lib.rs
NVRTC_REPS = 10


def alloc_batch(nbytes):
    """Alloc+free pairs per timed batch (the async/pool rows use four times this)."""
    return 8 if nbytes >= 64 << 20 else 64


def emit(bench, case, impl, unit, value=None, status="ok", detail=""):
    """Prints one `ROW {json}` line."""
    if value is None and status == "ok":
        status = "failed: no value"
    row = {"bench": bench, "case": case, "impl": impl, "value": value, "unit": unit,
           "status": status, "detail": detail}
    print("ROW " + json.dumps(row), flush=True)


def cuda_torch():
    """(torch, None) where torch is installed and sees a GPU; else (None, the rows' status,
    `not available: torch: <error type>: <error>`)."""
    try:
        import torch
        if not torch.cuda.is_available():
            raise RuntimeError("torch.cuda.is_available() is False")
        return torch, None
    except Exception as error:
        return None, "not available: torch: %s: %s" % (type(error).__name__, error)


def summarise(samples, per_sample):
    """(median, detail) of per-operation samples."""
    samples = sorted(samples)
    at = lambda q: samples[round((len(samples) - 1) * q)]
    return at(0.5), "median of %d samples of %d op(s); p10 %.4f, p90 %.4f" % (
        len(samples), per_sample, at(0.1), at(0.9))


def time_batches(warmup, batches, per_batch, sync, body):
    """Microseconds per call of `body`: median over `batches` timed batches of `per_batch`
    calls, after `warmup` batches; `sync` runs before each batch, outside the timed part."""
    samples = []
    clock = time.perf_counter
    for batch in range(warmup + batches):
        sync()
        start = clock()
        for _ in range(per_batch):
            body()
        elapsed = clock() - start
        if batch >= warmup:
            samples.append(elapsed * 1e6 / per_batch)
    sync()
    return summarise(samples, per_batch)


def measure(bench, case, impl, unit, fn):
    """Runs `fn() -> (value, detail)` and emits its row, or a 'failed' row with the exception."""
    try:
        value, detail = fn()
        emit(bench, case, impl, unit, value, "ok", detail)
    except Exception as error:  # a benchmark's failure must not stop the others
        emit(bench, case, impl, unit, None, "failed: %s: %s" % (type(error).__name__, error))


def read_kernels():
    """(kernel source, part): part is "launch" (the launch rows only), "other" (the rest) or "all"."""
    part = sys.argv[2] if len(sys.argv) == 3 else "all"
    if len(sys.argv) not in (2, 3) or part not in ("all", "launch", "other"):
        sys.exit("usage: %s KERNELS.cu [launch|other]" % sys.argv[0])
    with open(sys.argv[1]) as f:
        return f.read(), part
