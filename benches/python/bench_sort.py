"""torch and CuPy references for bench-array's sort rows: sort of 2^28 f32 and of 2^28 i32 keys,
argsort of 2^26 f32, sort along the rows of 2^16 x 2^10 f32 (keys per second), and searchsorted
of 2^20 queries in 2^26 sorted f32 (queries per second), timed with CUDA events like
benches/src/bin/bench-array.rs (median of 20 after the warm-up of benches/src/lib.rs).
Usage: python3 bench_sort.py KERNELS.cu [launch|other] (the kernels are not used)."""

import time

from common import BANDWIDTH_REPS, BANDWIDTH_WARMUP_MS, emit, measure, read_kernels

BIG = 1 << 28
MID = 1 << 26
QUERIES = 1 << 20
# (case, unit, elements per op) in bench-array's order.
CASES = [("sort 2^28 f32", "Gkeys/s", BIG), ("sort 2^28 i32", "Gkeys/s", BIG),
         ("argsort 2^26 f32", "Gkeys/s", MID), ("sort rows 2^16x2^10 f32", "Gkeys/s", MID),
         ("searchsorted 2^20 in 2^26 f32", "Gqueries/s", QUERIES)]


def timed(make_events, synchronize, op):
    """(median ms, p10 ms, p90 ms) of `op` over BANDWIDTH_REPS event-timed runs, after the warm-up."""
    start, end = make_events()

    def run():
        start.record()
        op()
        end.record()
        end.synchronize()
        return start.elapsed_time(end)

    synchronize()
    began, calls = time.perf_counter(), 0
    while calls < 3 or (time.perf_counter() - began) * 1e3 < BANDWIDTH_WARMUP_MS:
        run()
        calls += 1
    samples = sorted(run() for _ in range(BANDWIDTH_REPS))
    at = lambda q: samples[round((len(samples) - 1) * q)]
    return at(0.5), at(0.1), at(0.9)


def rows(name, make_events, synchronize, ops):
    """Emits one row per case of `ops` (case -> zero-argument op), for implementation `name`."""
    for case, unit, elements in CASES:
        impl = "%s %s" % (name, case.split(" ")[0])

        def figure(op=ops[case], elements=elements):
            median, p10, p90 = timed(make_events, synchronize, op)
            rate = lambda ms: elements / (ms * 1e-3) / 1e9
            return rate(median), ("%d per op, median of %d event-timed runs (%.3f ms); p10..p90 %.2f..%.2f"
                                  % (elements, BANDWIDTH_REPS, median, rate(p90), rate(p10)))

        measure("sort", case, impl, unit, figure)


def torch_rows():
    try:
        import torch
        if not torch.cuda.is_available():
            raise RuntimeError("torch.cuda.is_available() is False")
    except Exception as error:
        for case, unit, _ in CASES:
            emit("sort", case, "torch " + case.split(" ")[0], unit, status="not available: %s" % error)
        return
    print("torch", torch.__version__, flush=True)
    g = torch.Generator(device="cuda").manual_seed(1)
    f32 = torch.rand(BIG, device="cuda", generator=g)
    i32 = torch.randint(-2**31, 2**31 - 1, (BIG,), device="cuda", dtype=torch.int32, generator=g)
    mid = torch.rand(MID, device="cuda", generator=g)
    matrix = torch.rand(1 << 16, 1 << 10, device="cuda", generator=g)
    keys = torch.sort(torch.rand(MID, device="cuda", generator=g)).values
    queries = torch.rand(QUERIES, device="cuda", generator=g)
    ops = {"sort 2^28 f32": lambda: torch.sort(f32, stable=True),
           "sort 2^28 i32": lambda: torch.sort(i32, stable=True),
           "argsort 2^26 f32": lambda: torch.argsort(mid, stable=True),
           "sort rows 2^16x2^10 f32": lambda: torch.sort(matrix, dim=-1, stable=True),
           "searchsorted 2^20 in 2^26 f32": lambda: torch.searchsorted(keys, queries)}
    events = lambda: (torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
    rows("torch", events, torch.cuda.synchronize, ops)


def cupy_rows():
    try:
        import cupy
        cupy.cuda.runtime.getDeviceCount()
    except Exception as error:
        for case, unit, _ in CASES:
            emit("sort", case, "CuPy " + case.split(" ")[0], unit, status="not available: %s" % error)
        return
    print("cupy", cupy.__version__, flush=True)
    rng = cupy.random.default_rng(1)
    f32 = rng.random(BIG, dtype=cupy.float32)
    i32 = rng.integers(-2**31, 2**31 - 1, BIG, dtype=cupy.int32)
    mid = rng.random(MID, dtype=cupy.float32)
    matrix = rng.random((1 << 16, 1 << 10), dtype=cupy.float32)
    keys = cupy.sort(rng.random(MID, dtype=cupy.float32))
    queries = rng.random(QUERIES, dtype=cupy.float32)
    ops = {"sort 2^28 f32": lambda: cupy.sort(f32),
           "sort 2^28 i32": lambda: cupy.sort(i32),
           "argsort 2^26 f32": lambda: cupy.argsort(mid),
           "sort rows 2^16x2^10 f32": lambda: cupy.sort(matrix, axis=-1),
           "searchsorted 2^20 in 2^26 f32": lambda: cupy.searchsorted(keys, queries)}
    events = lambda: (cupy.cuda.Event(), cupy.cuda.Event())
    rows("CuPy", events, cupy.cuda.Device().synchronize, ops)


def main():
    _, part = read_kernels()
    if part == "launch":
        return
    torch_rows()
    cupy_rows()


if __name__ == "__main__":
    main()
