"""torch and CuPy references for bench-array's sort and algorithm rows: sort of 2^28 f32 and of
2^28 i32 keys, argsort of 2^26 f32, sort along the rows of 2^16 x 2^10 f32 (keys per second),
searchsorted of 2^20 queries in 2^26 sorted f32 (queries per second); unique of 2^26 i64 with 2^20
distinct values, bincount of 2^26 i64 into 1024 bins, histogram of 2^26 f32 into 256 bins, median
of 2^26 f32, the 90th percentile of 2^24 f32, fft of 2^24 complex64 ones, rfft2 of 4096^2
float32 ones and rfft of 256 x 2^16 float32 ones times a window of ones (the product evaluated
first, as both libraries do) (ms per call); and torch's side of the scan and
select bandwidth rows (cumsum of 2^28 f32 whole and by rows of 2^10, x[x > 0.5] of 2^26 f32,
nonzero of 2^26 u8 half nonzero), whose CuPy side is in bench_cupy.py. Timed with CUDA events like
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
# bench-array's ALGORITHM_ROWS (ms per call): (case, operation named in the implementation).
ALGORITHM_CASES = [("unique 2^26 i64, 2^20 distinct", "unique"), ("bincount 2^26 i64 into 1024 bins", "bincount"),
                   ("histogram 2^26 f32 into 256 bins", "histogram"), ("median 2^26 f32", "median"),
                   ("percentile 90 of 2^24 f32", "percentile"),
                   ("c2c fft 2^24 c64", "fft"), ("rfft2 4096^2 f32", "rfft2"),
                   ("rfft(x * window) 256 x 2^16 f32", "rfft(x * window)")]
DISTINCT = 1 << 20
BINS = 1024
# The transforms' inputs are ones: their zero frequency is the element count, 2^24 for both.
SPECTRUM_PEAK = float(1 << 24)
# rfft(x * window)'s rows are 2^16 ones: their zero frequency is 2^16.
WINDOWED_PEAK = float(1 << 16)
# bench-array's scan and select rows: (case, torch's implementation, bytes read and written per call,
# what moves); the selections' byte counts depend on how many are kept and are set when measured.
SCAN_SELECT_CASES = [("cumsum", "torch cumsum"), ("cumsum axis=1", "torch cumsum"),
                     ("x[x > 0.5]", "torch x[x > 0.5]"), ("nonzero", "torch nonzero")]


class CupyTimingEvent:
    """A CuPy event with torch's event methods (`record`, `synchronize`, `elapsed_time`), so
    `timed` serves both libraries."""

    def __init__(self, cupy):
        self.cupy = cupy
        self.event = cupy.cuda.Event()

    def record(self):
        self.event.record()

    def synchronize(self):
        self.event.synchronize()

    def elapsed_time(self, end):
        return self.cupy.cuda.get_elapsed_time(self.event, end.event)


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


def algorithm_rows(name, make_events, synchronize, ops, checks):
    """Emits one ms-per-call row per case of ALGORITHM_CASES; `checks[case](result)` raises on a
    wrong result of the last timed call."""
    for case, op in ALGORITHM_CASES:
        def figure(case=case):
            holder = {}

            def run():
                holder["result"] = ops[case]()

            median, p10, p90 = timed(make_events, synchronize, run)
            checks[case](holder["result"])
            return median, ("median of %d event-timed runs; p10..p90 %.3f..%.3f ms" % (BANDWIDTH_REPS, p10, p90))

        measure("algorithms", case, "%s %s" % (name, op), "ms", figure)


def bandwidth_figure(make_events, synchronize, op, bytes_moved, what):
    """A `measure` function: GB/s of `op` moving `bytes_moved()` bytes (called after the timing,
    so a selection can count what it kept)."""
    def figure():
        median, p10, p90 = timed(make_events, synchronize, op)
        moved = bytes_moved()
        gbps = lambda ms: moved / (ms * 1e-3) / 1e9
        return gbps(median), ("%s, %d bytes per op over the median of %d event-timed runs (%.3f ms); "
                              "p10..p90 %.0f..%.0f GB/s" % (what, moved, BANDWIDTH_REPS, median, gbps(p90), gbps(p10)))
    return figure


def expect(condition, what):
    if not condition:
        raise AssertionError(what)


def torch_scan_select_rows(torch, make_events):
    """torch's cumsum of 2^28 f32 ones (whole, and by rows of 2^10), x[x > 0.5] of 2^26 f32 and
    nonzero of 2^26 u8 half nonzero, as bench-array and bench_cupy.py measure them."""
    n, m = BIG, MID
    try:
        x = torch.ones(n, device="cuda")
        rows = x.view(n >> 10, 1 << 10)
        values = torch.rand(m, device="cuda", generator=torch.Generator(device="cuda").manual_seed(11))
        flags = (((torch.arange(m, device="cuda", dtype=torch.int64) * 2654435761) >> 13) & 1).to(torch.uint8)
    except Exception as error:
        for case, impl in SCAN_SELECT_CASES:
            emit("bandwidth", case, impl, "GB/s", status="failed: %s" % error)
        return
    holder = {}
    for case, array, dim, last in (("cumsum", x, 0, float(n)), ("cumsum axis=1", rows, 1, 1024.0)):
        def scan(array=array, dim=dim):
            holder["scan"] = torch.cumsum(array, dim=dim)

        def scan_bytes(last=last):
            largest = float(holder["scan"].max())
            expect(abs(largest - last) <= 1e-3 * last or largest == 2.0 ** 24,
                   "cumsum reaches %r, expected %r" % (largest, last))
            return 2 * n * 4

        measure("bandwidth", case, "torch cumsum", "GB/s",
                bandwidth_figure(make_events, torch.cuda.synchronize, scan, scan_bytes, "2^28 f32"))
    kept = int((values > 0.5).sum())

    def extract():
        holder["kept"] = values[values > 0.5]

    def extract_bytes():
        expect(holder["kept"].numel() == kept, "x[x > 0.5] kept %d, expected %d" % (holder["kept"].numel(), kept))
        return (m + kept) * 4

    measure("bandwidth", "x[x > 0.5]", "torch x[x > 0.5]", "GB/s",
            bandwidth_figure(make_events, torch.cuda.synchronize, extract, extract_bytes,
                             "2^26 f32, about half kept"))
    nonzero = int(torch.count_nonzero(flags))

    def flat():
        holder["indices"] = torch.nonzero(flags).flatten()

    def flat_bytes():
        expect(holder["indices"].numel() == nonzero,
               "nonzero found %d, expected %d" % (holder["indices"].numel(), nonzero))
        return m + nonzero * 8

    measure("bandwidth", "nonzero", "torch nonzero", "GB/s",
            bandwidth_figure(make_events, torch.cuda.synchronize, flat, flat_bytes,
                             "2^26 u8, half nonzero, i64 indices"))


def algorithm_checks(to_list):
    """The checks of ALGORITHM_CASES' results; `to_list(array)` copies one to a Python list."""
    def unique(result):
        got = to_list(result)
        expect(got == list(range(DISTINCT)), "unique gave %d values, want 0..%d" % (len(got), DISTINCT))

    def counts(bins):
        def check(result):
            got = to_list(result[0] if isinstance(result, tuple) else result)
            expect(len(got) == bins and sum(got) == MID, "%d bins holding %d" % (len(got), sum(got)))
        return check

    def between(result):
        value = float(result)
        expect(0.0 < value < 1.0, "a quantile of rand's values is %r" % value)

    def spectrum(result):
        # The transform of ones: 2^24 at frequency 0 (the first element), 0 elsewhere.
        first = complex(result.ravel()[0].item()) if hasattr(result, "ravel") else complex(result)
        expect(abs(first - SPECTRUM_PEAK) < 1e-3 * SPECTRUM_PEAK, "the zero frequency is %r" % first)

    def rows_spectrum(result):
        # Each row of 2^16 ones: 2^16 at its frequency 0.
        first = complex(result.ravel()[0].item())
        expect(abs(first - WINDOWED_PEAK) < 1e-3 * WINDOWED_PEAK, "the zero frequency is %r" % first)

    return {"unique 2^26 i64, 2^20 distinct": unique, "bincount 2^26 i64 into 1024 bins": counts(BINS),
            "histogram 2^26 f32 into 256 bins": counts(256), "median 2^26 f32": between,
            "percentile 90 of 2^24 f32": between, "c2c fft 2^24 c64": spectrum, "rfft2 4096^2 f32": spectrum,
            "rfft(x * window) 256 x 2^16 f32": rows_spectrum}


def torch_rows():
    try:
        import torch
        if not torch.cuda.is_available():
            raise RuntimeError("torch.cuda.is_available() is False")
    except Exception as error:
        for case, unit, _ in CASES:
            emit("sort", case, "torch " + case.split(" ")[0], unit, status="not available: %s" % error)
        for case, op in ALGORITHM_CASES:
            emit("algorithms", case, "torch " + op, "ms", status="not available: %s" % error)
        for case, impl in SCAN_SELECT_CASES:
            emit("bandwidth", case, impl, "GB/s", status="not available: %s" % error)
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
    del f32, i32, mid, matrix, keys, queries, ops
    torch.cuda.empty_cache()
    keys = torch.randint(0, DISTINCT, (MID,), device="cuda", dtype=torch.int64, generator=g)
    samples = torch.randint(0, BINS, (MID,), device="cuda", dtype=torch.int64, generator=g)
    values = torch.rand(MID, device="cuda", generator=g)
    small = torch.rand(1 << 24, device="cuda", generator=g)
    signal = torch.ones(1 << 24, device="cuda", dtype=torch.complex64)
    image = torch.ones(4096, 4096, device="cuda")
    frames = torch.ones(256, 1 << 16, device="cuda")
    window = torch.ones(1 << 16, device="cuda")
    # torch.histogram has no CUDA kernel: histc is torch's even-bin histogram on the GPU.
    ops = {"unique 2^26 i64, 2^20 distinct": lambda: torch.unique(keys, sorted=True),
           "bincount 2^26 i64 into 1024 bins": lambda: torch.bincount(samples, minlength=BINS),
           "histogram 2^26 f32 into 256 bins": lambda: torch.histc(values, bins=256, min=0.0, max=1.0),
           "median 2^26 f32": lambda: torch.median(values),
           "percentile 90 of 2^24 f32": lambda: torch.quantile(small, 0.9),
           "c2c fft 2^24 c64": lambda: torch.fft.fft(signal),
           "rfft2 4096^2 f32": lambda: torch.fft.rfft2(image),
           "rfft(x * window) 256 x 2^16 f32": lambda: torch.fft.rfft(frames * window)}
    checks = algorithm_checks(lambda t: [int(v) for v in t.tolist()])
    algorithm_rows("torch", events, torch.cuda.synchronize, ops, checks)
    del keys, samples, values, small, signal, image, frames, window, ops
    torch.cuda.empty_cache()
    torch_scan_select_rows(torch, events)


def cupy_rows():
    try:
        import cupy
        cupy.cuda.runtime.getDeviceCount()
    except Exception as error:
        for case, unit, _ in CASES:
            emit("sort", case, "CuPy " + case.split(" ")[0], unit, status="not available: %s" % error)
        for case, op in ALGORITHM_CASES:
            emit("algorithms", case, "CuPy " + op, "ms", status="not available: %s" % error)
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
    events = lambda: (CupyTimingEvent(cupy), CupyTimingEvent(cupy))
    rows("CuPy", events, cupy.cuda.Device().synchronize, ops)
    del f32, i32, mid, matrix, keys, queries, ops
    cupy.get_default_memory_pool().free_all_blocks()
    keys = rng.integers(0, DISTINCT, MID, dtype=cupy.int64)
    samples = rng.integers(0, BINS, MID, dtype=cupy.int64)
    values = rng.random(MID, dtype=cupy.float32)
    small = rng.random(1 << 24, dtype=cupy.float32)
    signal = cupy.ones(1 << 24, dtype=cupy.complex64)
    image = cupy.ones((4096, 4096), dtype=cupy.float32)
    frames = cupy.ones((256, 1 << 16), dtype=cupy.float32)
    window = cupy.ones(1 << 16, dtype=cupy.float32)
    ops = {"unique 2^26 i64, 2^20 distinct": lambda: cupy.unique(keys),
           "bincount 2^26 i64 into 1024 bins": lambda: cupy.bincount(samples, minlength=BINS),
           "histogram 2^26 f32 into 256 bins": lambda: cupy.histogram(values, bins=256, range=(0.0, 1.0)),
           "median 2^26 f32": lambda: cupy.median(values),
           "percentile 90 of 2^24 f32": lambda: cupy.percentile(small, 90),
           "c2c fft 2^24 c64": lambda: cupy.fft.fft(signal),
           "rfft2 4096^2 f32": lambda: cupy.fft.rfft2(image),
           "rfft(x * window) 256 x 2^16 f32": lambda: cupy.fft.rfft(frames * window)}
    checks = algorithm_checks(lambda a: [int(v) for v in a.get().tolist()])
    algorithm_rows("CuPy", events, cupy.cuda.Device().synchronize, ops, checks)


def main():
    _, part = read_kernels()
    if part == "launch":
        return
    torch_rows()
    cupy_rows()


if __name__ == "__main__":
    main()
