"""Collects the `ROW {json}` lines of every benchmark log into one table with
ratios to each benchmark's reference, prints it, and writes it as JSON and
Markdown.

Usage: python3 report.py --json OUT.json --markdown OUT.md [--meta KEY=VALUE ...] LOG...

Ratios: for times (us, ms) value / reference, so 1.05 is 5 % slower than the
reference; for bandwidth value / reference, the fraction of the copy's GB/s; for gemm
(TFLOP/s) value / torch.matmul's of the same case; for sort (keys or queries per second) value /
torch's of the same case; for algorithms (ms per call) value / torch's of the same case.
Rows in other units (the same-process paired ratios, in x, and the added host
costs, in ns/launch) carry their own figure and no ratio.

A row found in several logs (the launch rows, which run.sh measures in several
process rounds) gets the median of its values, with every round's value in
its detail."""

import argparse
import json
import statistics
import sys

# The table's rows in order: (bench, case, implementation). Rows a log adds beyond these are appended.
LAUNCH_IMPLS = ["C++ cuLaunchKernel", "cuda-sys cuLaunchKernel", "cuda-driver Stream::launch", "cuda-core launch",
                "CuPy RawKernel", "cuda.core launch (Python)"]
ALLOC_IMPLS = ["C++ cuMemAlloc+cuMemFree", "C++ cuMemAllocAsync+cuMemFreeAsync", "cuda-sys cuMemAlloc+cuMemFree",
               "cuda-sys cuMemAllocAsync+cuMemFreeAsync", "cuda-driver DeviceBuffer::alloc+drop",
               "cuda-driver DeviceBuffer::alloc_async+drop", "cuda-core pool", "CuPy pool",
               "cuda.core Device.allocate (Python)"]
# bench-array's sort rows and bench_sort.py's: (case, the torch/CuPy operation, cuda-core's implementation).
SORT_CASES = [("sort 2^28 f32", "sort", "cuda-core sort"), ("sort 2^28 i32", "sort", "cuda-core sort"),
              ("argsort 2^26 f32", "argsort", "cuda-core argsort"),
              ("sort rows 2^16x2^10 f32", "sort", "cuda-core sort axis=-1"),
              ("searchsorted 2^20 in 2^26 f32", "searchsorted", "cuda-core searchsorted")]
# bench-array's algorithm rows and bench_sort.py's (ms per call): (case, the operation in every implementation's name).
ALGORITHM_CASES = [("unique 2^26 i64, 2^20 distinct", "unique"), ("bincount 2^26 i64 into 1024 bins", "bincount"),
                   ("histogram 2^26 f32 into 256 bins", "histogram"), ("median 2^26 f32", "median"),
                   ("percentile 90 of 2^24 f32", "percentile"),
                   ("c2c fft 2^24 c64", "fft"), ("rfft2 4096^2 f32", "rfft2"),
                   ("rfft(x * window) 256 x 2^16 f32", "rfft(x * window)")]
EXPECTED = (
    [("launch", case, impl) for case in ("empty", "axpy") for impl in LAUNCH_IMPLS]
    + [("alloc", case, impl) for case in ("1 KiB", "1 MiB", "256 MiB") for impl in ALLOC_IMPLS]
    + [("bandwidth", "D2D copy", impl) for impl in ("C++ cuMemcpyDtoDAsync", "cuda-sys cuMemcpyDtoDAsync",
                                                    "cuda-driver copy_from_device_async", "CuPy copyto")]
    + [("bandwidth", "2.0*x+y", impl) for impl in ("cuda-core elementwise", "cuda-core expression",
                                                   "CuPy ElementwiseKernel", "CuPy expression")]
    + [("bandwidth", "sum", impl) for impl in ("cuda-core reduction", "CuPy sum")]
    + [("bandwidth", case, impl) for case in ("sum axis=0", "sum axis=1")
       for impl in ("cuda-core sum_axes", "CuPy sum")]
    + [("bandwidth", "(x*y).sum", impl) for impl in ("cuda-core fused reduction", "CuPy sum(x*y)")]
    + [("bandwidth", "std", impl) for impl in ("cuda-core std", "CuPy std")]
    + [("bandwidth", "concatenate", impl) for impl in ("cuda-core concatenate", "CuPy concatenate")]
    + [("bandwidth", "take", impl) for impl in ("cuda-core take (wrap)", "cuda-core take (raise)", "CuPy take")]
    + [("bandwidth", case, impl) for case in ("cumsum", "cumsum axis=1")
       for impl in ("cuda-core cumsum", "torch cumsum", "CuPy cumsum")]
    + [("bandwidth", "x[x > 0.5]", impl) for impl in ("cuda-core extract (fused mask)", "torch x[x > 0.5]",
                                                      "CuPy x[x > 0.5]")]
    + [("bandwidth", "nonzero", impl) for impl in ("cuda-core flatnonzero", "torch nonzero", "CuPy flatnonzero")]
    + [("bandwidth", "fill", impl) for impl in ("cuda-core fill", "CuPy fill")]
    + [("bandwidth", "rand", impl) for impl in ("cuda-core random::rand", "CuPy random.rand")]
    + [("nvrtc", "cold compile", impl) for impl in ("C++ NVRTC", "cuda-sys NVRTC", "cuda-core Program",
                                                    "cuda.core Program (Python)", "CuPy RawModule")]
    + [("nvrtc", case, "cuda-core Program") for case in ("disk cache hit", "memory cache hit")]
    + [("gemm", "%s %s" % (dtype, shape), impl)
       for dtype in ("bf16", "f16", "tf32", "f32", "f64") for shape in ("8192^3", "4096^3", "8192x8192x64")
       for impl in ("torch.matmul (Python)", "CuPy matmul (Python)", "cuda-libs Blas::gemm")]
    + [("gemm", "bf16 8192^3", impl) for impl in ("torch relu(x @ w + b) (Python)",
                                                  "cuda-libs Lt::matmul (bias+ReLU epilogue)")]
    + [("sort", case, impl) for case, op, ours in SORT_CASES
       for impl in ("torch " + op, "CuPy " + op, ours)]
    + [("algorithms", case, impl) for case, op in ALGORITHM_CASES
       for impl in ("torch " + op, "CuPy " + op, "cuda-core " + op)]
)
UNITS = {"launch": "us/launch", "alloc": "us/pair", "bandwidth": "GB/s", "nvrtc": "ms", "gemm": "TFLOP/s",
         "sort": "Gkeys/s", "algorithms": "ms"}
BENCH_ORDER = ["launch", "alloc", "bandwidth", "nvrtc", "gemm", "sort", "algorithms"]


def reference(bench, case):
    """(case, [implementations, first present wins]) of the reference a row is divided by."""
    if bench == "launch":
        return case, ["C++ cuLaunchKernel", "cuda-sys cuLaunchKernel"]
    if bench == "alloc":
        return case, ["C++ cuMemAllocAsync+cuMemFreeAsync", "cuda-sys cuMemAllocAsync+cuMemFreeAsync"]
    if bench == "bandwidth":
        return "D2D copy", ["cuda-sys cuMemcpyDtoDAsync", "C++ cuMemcpyDtoDAsync"]
    if bench == "gemm":
        return case, ["torch.matmul (Python)"]
    if bench == "sort":
        return case, ["torch " + op for c, op, _ in SORT_CASES if c == case]
    if bench == "algorithms":
        return case, ["torch " + op for c, op in ALGORITHM_CASES if c == case]
    return "cold compile", ["C++ NVRTC", "cuda-sys NVRTC"]


def read_rows(paths):
    rows, notes = [], []
    for path in paths:
        try:
            with open(path, errors="replace") as f:
                for number, line in enumerate(f, 1):
                    line = line.strip()
                    if line.startswith("ROW "):
                        try:
                            row = json.loads(line[4:])
                            row["log"] = path
                            rows.append(row)
                        except ValueError as error:
                            notes.append("%s:%d: bad ROW line (%s)" % (path, number, error))
                    elif line.startswith("device: "):
                        notes.append("%s: %s" % (path, line))
        except OSError as error:
            notes.append("%s: %s" % (path, error))
    return rows, notes


def merge_rounds(rows):
    """One row from the runs of one row in several logs: the median of the values measured, or the
    last row when none has a value."""
    measured = [r for r in rows if r.get("status") == "ok" and isinstance(r.get("value"), (int, float))]
    if len(rows) == 1 or not measured:
        return rows[-1]
    merged = dict(measured[0])
    merged["value"] = statistics.median(r["value"] for r in measured)
    merged["rounds"] = [r["value"] for r in measured]
    failed = len(rows) - len(measured)
    merged["detail"] = "median of %d process rounds (%s)%s; round 1: %s" % (
        len(measured), ", ".join("%.4g" % r["value"] for r in measured),
        "; %d round(s) without a figure" % failed if failed else "", measured[0].get("detail", ""))
    return merged


def build_table(rows):
    runs = {}
    for row in rows:
        runs.setdefault((row["bench"], row["case"], row["impl"]), []).append(row)
    found = {key: merge_rounds(runs_of_key) for key, runs_of_key in runs.items()}
    impls_seen = {row["impl"] for row in rows}
    table = []
    keys = list(EXPECTED) + [k for k in found if k not in EXPECTED]
    case_order = {}
    for bench, case, _ in keys:
        case_order.setdefault((bench, case), len(case_order))
    keys.sort(key=lambda k: (BENCH_ORDER.index(k[0]) if k[0] in BENCH_ORDER else 99, case_order[(k[0], k[1])]))
    for key in keys:
        bench, case, impl = key
        row = dict(found.get(key) or {})
        if not row:
            crate_row = impl.startswith(("cuda-core ", "cuda-driver ", "cuda-libs "))
            status = "not built yet" if crate_row and impl not in impls_seen else "no result (see the logs)"
            row = {"bench": bench, "case": case, "impl": impl, "value": None, "unit": UNITS.get(bench, ""),
                   "status": status, "detail": ""}
        ref_case, candidates = reference(bench, case)
        ref = next((found[(bench, ref_case, c)] for c in candidates
                    if (bench, ref_case, c) in found and found[(bench, ref_case, c)].get("value")), None)
        row["reference"] = "%s / %s" % (ref_case, ref["impl"]) if ref else None
        value = row.get("value")
        same_unit = ref is not None and row.get("unit") == ref.get("unit")
        row["ratio"] = value / ref["value"] if same_unit and isinstance(value, (int, float)) else None
        row["is_reference"] = bool(ref) and ref["impl"] == impl and ref_case == case
        table.append(row)
    return table


def fmt_value(value):
    if not isinstance(value, (int, float)):
        return "-"
    if value >= 100:
        return "%.0f" % value
    return "%.4g" % value


def fmt_ratio(row):
    if row["is_reference"]:
        return "1 (ref)"
    return "%.3g" % row["ratio"] if isinstance(row["ratio"], (int, float)) else "-"


def text_table(table):
    header = ("bench", "case", "implementation", "value", "unit", "ratio", "status")
    lines = [header] + [(r["bench"], r["case"], r["impl"], fmt_value(r.get("value")), r.get("unit", ""),
                         fmt_ratio(r), r.get("status", "").replace("\n", " ")[:60]) for r in table]
    widths = [max(len(str(line[i])) for line in lines) for i in range(len(header) - 1)]
    out = []
    for n, line in enumerate(lines):
        out.append("  ".join(str(c).ljust(w) for c, w in zip(line, widths)) + "  " + line[-1])
        if n == 0:
            out.append("-" * (sum(widths) + 2 * len(widths) + 6))
    return "\n".join(out)


def markdown_table(table):
    out = ["| bench | case | implementation | value | unit | ratio | status |", "|---|---|---|---:|---|---:|---|"]
    for r in table:
        status = r.get("status", "").replace("|", "/").replace("\n", " ")[:120]
        out.append("| %s | %s | %s | %s | %s | %s | %s |" % (r["bench"], r["case"], r["impl"],
                                                              fmt_value(r.get("value")), r.get("unit", ""),
                                                              fmt_ratio(r), status))
    return "\n".join(out)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", required=True)
    parser.add_argument("--markdown", required=True)
    parser.add_argument("--meta", action="append", default=[], help="KEY=VALUE added to the JSON's meta")
    parser.add_argument("logs", nargs="*")
    args = parser.parse_args()
    rows, notes = read_rows(args.logs)
    table = build_table(rows)
    meta = dict(item.split("=", 1) for item in args.meta if "=" in item)
    meta["notes"] = notes
    meta["ratio"] = ("times: value / reference (lower is better); bandwidth: value / D2D copy GB/s "
                     "(the fraction of the copy); gemm: TFLOP/s / torch.matmul's (higher is better)")
    with open(args.json, "w") as f:
        json.dump({"meta": meta, "rows": table}, f, indent=1)
    with open(args.markdown, "w") as f:
        f.write(markdown_table(table) + "\n")
    print(text_table(table))
    print("ratio: " + meta["ratio"])
    for note in notes:
        print("note: " + note)
    ok = sum(1 for r in table if r.get("status") == "ok")
    print("benchmark rows: %d ok, %d without a figure" % (ok, len(table) - ok))
    return 0


if __name__ == "__main__":
    sys.exit(main())
