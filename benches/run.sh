#!/usr/bin/env bash
# Runs the GPU bundle built by `cargo xtask gpu-bundle` on a machine with a GPU
# and no Rust toolchain: every test binary (GPU tests required, not skipped),
# every example, then the benchmarks (Rust, C++ built here with g++, Python),
# and prints a summary and one table.
#
# Usage: run.sh LOGDIR [all|tests|bench|sanitize]
#
# sanitize: instead of the above, every GPU test binary and example under compute-sanitizer
# (memcheck with --leak-check full; the kernel-running ones also racecheck and synccheck, a few
# initcheck), as sanitizer/expected.tsv lists, checked by sanitizer/check.py: a run passes with no
# device access error, race, barrier error or leak, and no API error but the expected ones (see
# docs/SANITIZER.md). One line per run and an overall line in summary.txt.
#
# LOGDIR gets few files (so a tool that fetches a handful of files gets them all):
#   run.log        everything this script printed
#   summary.txt    N passed, N failed, failing tests, skipped GPU tests, examples
#   failures.log   the full output of every failing test binary and example
#   bench.json     the benchmark table (rows with value, unit, ratio, reference, status)
#   bench.md       the same table in Markdown, for docs/BENCHMARKS.md
#   logs.tar.gz    every log: tests/NAME.log, examples/NAME.log, bench/NAME.log, bench/NAME.launch-R.log,
#                  sanitize/NAME.TOOL.log
#
# The Python interop tests (python-ext/test_interop.py against torch and CuPy, through the Rust
# extension module python-ext/cuda_rs_ext.so) run after the examples, once as they are and once
# under compute-sanitizer --tool memcheck; each counts with the tests.
#
# CUDA12_LIBS=DIR runs everything with CUDA 12's NVRTC, cudart and nvJitLink from DIR (see
# "environment" below); the programs print which libraries they loaded.
#
# Environment: TEST_TIMEOUT, LIB_TEST_TIMEOUT (the crates' unit-test binaries, NAME-lib),
# EXAMPLE_TIMEOUT, BENCH_TIMEOUT (seconds per binary), PYTHON_TIMEOUT,
# MEMCHECK_TIMEOUT (the Python interop run, plain and under memcheck), LAUNCH_ROUNDS
# (process rounds of the launch benchmarks, whose median is reported: default 3),
# TEST_BUDGET, RUN_BUDGET (seconds after which tests/examples, benchmarks not yet started are
# skipped: defaults 300 and 480),
# TEST_THREADS (libtest --test-threads; default libtest's), CUDA_HOME (default /usr/local/cuda).
# sanitize: COMPUTE_SANITIZER (default $CUDA_HOME/bin/compute-sanitizer), SANITIZE_JOBS (runs at
# once: default 6), SANITIZE_TIMEOUT (seconds per run: default 300), SANITIZE_DEADLINE (seconds
# after which no run starts and running ones are cut: default 540), SANITIZE_ONLY (space-separated
# shell patterns of the binaries and examples to run, to split the runs over several calls).
# tests: TESTS_ONLY (space-separated shell patterns of the test binaries, examples and
# `python_interop` to run, to run again what failed; the others are listed as not run).

set -uo pipefail

BUNDLE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
if [ $# -lt 1 ]; then
    echo "usage: $0 LOGDIR [all|tests|bench|sanitize]" >&2
    exit 2
fi
MODE="${2:-all}"
case "$MODE" in all | tests | bench | sanitize) ;; *) echo "run.sh: unknown mode '$MODE' (all, tests, bench or sanitize)" >&2; exit 2 ;; esac
mkdir -p "$1" || exit 2
LOGDIR="$(cd "$1" && pwd)"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/gpu-bundle-run.XXXXXX")"
mkdir -p "$WORK/tests" "$WORK/examples" "$WORK/bench"
exec > >(tee "$LOGDIR/run.log") 2>&1
TEE_PID=$!
# Ends the script after tee has written everything (a caller that kills leftover processes loses nothing).
finish() {
    exec 1>&- 2>&-
    wait "$TEE_PID" 2>/dev/null
    exit "$1"
}

TEST_TIMEOUT="${TEST_TIMEOUT:-120}"
# cuda-core's unit tests took over 120 s on the H200 (176 s on CI's 2 cores): NVRTC compiles.
LIB_TEST_TIMEOUT="${LIB_TEST_TIMEOUT:-300}"
EXAMPLE_TIMEOUT="${EXAMPLE_TIMEOUT:-60}"
BENCH_TIMEOUT="${BENCH_TIMEOUT:-180}"
PYTHON_TIMEOUT="${PYTHON_TIMEOUT:-180}"
MEMCHECK_TIMEOUT="${MEMCHECK_TIMEOUT:-420}"
# Past these many seconds, binaries not yet started are skipped (and reported), so one run fits a
# 10-minute call: tests and examples stop starting at TEST_BUDGET, benchmarks at RUN_BUDGET.
TEST_BUDGET="${TEST_BUDGET:-300}"
RUN_BUDGET="${RUN_BUDGET:-480}"
CUDA_HOME="${CUDA_HOME:-/usr/local/cuda}"
START_SECONDS=$SECONDS
have() { command -v "$1" >/dev/null 2>&1; }
OVER_BUDGET=()
over_budget() { # what [budget seconds] -> true (and noted) when that budget is spent
    local budget="${2:-$RUN_BUDGET}"
    if [ $((SECONDS - START_SECONDS)) -ge "$budget" ]; then
        OVER_BUDGET+=("$1")
        echo "  $1: not run, the budget of ${budget}s is spent"
        return 0
    fi
    return 1
}
with_timeout() { # seconds command...
    local seconds=$1
    shift
    if have timeout; then timeout --kill-after=10 "$seconds" "$@"; else "$@"; fi
}

# ---------------------------------------------------------------- environment
export CUDA_REQUIRE_GPU=1
export PYTHONUNBUFFERED=1
# The libraries the tests load: the toolkit's, where it has them (else the loader's search decides).
pick_library() { # variable, file names...
    local variable=$1
    shift
    if [ -n "${!variable:-}" ]; then
        echo "  $variable=${!variable} (already set)"
        return
    fi
    local name
    for name in "$@"; do
        if [ -f "$CUDA_HOME/lib64/$name" ]; then
            export "$variable=$CUDA_HOME/lib64/$name"
            echo "  $variable=$CUDA_HOME/lib64/$name"
            return
        fi
    done
    echo "  $variable not set: none of $* in $CUDA_HOME/lib64 (the loader's search decides)"
}
echo "== environment"
# The CUDA 12 run: CUDA12_LIBS=DIR names a folder with CUDA 12's libnvrtc.so.12 (and its
# libnvrtc-builtins.so.12.*), libcudart.so.12 and libnvJitLink.so.12, each as is or xz-compressed
# (NAME.xz, unpacked here; the cu12 wheels' `.alt` copies are not needed). The tests, examples and
# Python interop then load those; cuBLAS and NCCL stay CUDA 13's (CUDA 12's do not fit a call).
if [ -n "${CUDA12_LIBS:-}" ]; then
    CUDA12_DIR="$WORK/cuda12-libs"
    mkdir -p "$CUDA12_DIR"
    for file in "$CUDA12_LIBS"/*; do
        case "$file" in
            *.xz) xz -dc "$file" >"$CUDA12_DIR/$(basename "${file%.xz}")" || echo "  could not unpack $file" ;;
            *) cp "$file" "$CUDA12_DIR/" ;;
        esac
    done
    # cuda-sys's `generations`, tests' `driver_12_2` and cuda-runtime's `cuda12_runtime` read
    # CUDA 12's NVRTC and runtime from these too.
    if [ -f "$CUDA12_DIR/libnvrtc.so.12" ]; then export CUDA12_NVRTC_LIBRARY="$CUDA12_DIR/libnvrtc.so.12"; fi
    if [ -f "$CUDA12_DIR/libcudart.so.12" ]; then export CUDA12_RUNTIME_LIBRARY="$CUDA12_DIR/libcudart.so.12"; fi
    for pair in NVRTC:libnvrtc.so.12 RUNTIME:libcudart.so.12 NVJITLINK:libnvJitLink.so.12; do
        variable="CUDA_${pair%%:*}_LIBRARY"
        name="${pair#*:}"
        if [ -f "$CUDA12_DIR/$name" ]; then
            export "$variable=$CUDA12_DIR/$name"
            echo "  $variable=$CUDA12_DIR/$name (CUDA 12)"
        else
            echo "  CUDA12_LIBS ($CUDA12_LIBS) has no $name: $variable is left to the search below"
        fi
    done
fi
pick_library CUDA_NVRTC_LIBRARY libnvrtc.so.13 libnvrtc.so
pick_library CUDA_RUNTIME_LIBRARY libcudart.so.13 libcudart.so
pick_library CUDA_NVJITLINK_LIBRARY libnvJitLink.so.13 libnvJitLink.so
pick_library CUDA_CUBLAS_LIBRARY libcublas.so.13
pick_library CUDA_CUBLASLT_LIBRARY libcublasLt.so.13
pick_library CUDA_CUFFT_LIBRARY libcufft.so.12
pick_library CUDA_CUSOLVER_LIBRARY libcusolver.so.12
# NCCL: the toolkit's where it has one, else the search (the loader, a `nvidia-nccl-cu13` wheel's
# nvidia/nccl/lib under site-packages). NVLink SHARP (multicast) stays off in every run.
pick_library CUDA_NCCL_LIBRARY libnccl.so.2
export NCCL_NVLS_ENABLE=0
for folder in /usr/local/nvidia/lib64 "$CUDA_HOME/lib64"; do
    if [ -d "$folder" ]; then
        export LD_LIBRARY_PATH="$folder${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    fi
done
# The pinned headers the bindings were generated from, for cuda-sys's fingerprint test.
if [ -z "${CUDA_SYS_HEADERS:-}" ] && [ -f "$BUNDLE/headers/cuda.h" ]; then
    export CUDA_SYS_HEADERS="$BUNDLE/headers"
fi
echo "  NCCL_NVLS_ENABLE=0 CUDA_REQUIRE_GPU=1 CUDA_SYS_HEADERS=${CUDA_SYS_HEADERS:-} LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-}"

# Every binary runs from the bundle alone (gpu-bundle refuses one that names the build root), so
# nothing here links or enters a source tree: a test that read one would pass only beside a checkout.

echo "== device"
if have nvidia-smi; then
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem --format=csv,noheader 2>&1 \
        || echo "nvidia-smi failed"
    DEVICE="$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n1)"
    DRIVER="$(nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>/dev/null | head -n1)"
else
    echo "nvidia-smi: not available (no NVIDIA driver here?)"
fi
DEVICE="${DEVICE:-unknown}"
DRIVER="${DRIVER:-unknown}"
DATE="$(date -u +%Y-%m-%dT%H:%M:%SZ)"
echo "date: $DATE"

# The binaries: packed by `cargo xtask gpu-bundle` into binaries.tar.xz (unpacked here, into the work folder).
BIN="$BUNDLE"
if [ -f "$BUNDLE/binaries.tar.xz" ]; then
    BIN="$WORK/bin"
    mkdir -p "$BIN"
    if ! tar -xJf "$BUNDLE/binaries.tar.xz" -C "$BIN" 2>"$WORK/unpack.log"; then
        echo "tar -xJf failed ($(head -c 200 "$WORK/unpack.log")); unpacking with python3"
        python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' \
            "$BUNDLE/binaries.tar.xz" "$BIN" || echo "could not unpack binaries.tar.xz: nothing will run"
    fi
fi

manifest() { # kind -> "name<TAB>package folder" lines
    awk -F'\t' -v kind="$1" '$1 == kind { print $2 "\t" $3 }' "$BUNDLE/manifest.tsv"
}

# Build-script outputs that tests name by the absolute path they were built at (the fake driver
# library, say): put each back there when it is missing.
while IFS=$'\t' read -r name path; do
    [ -n "$name" ] || continue
    if [ ! -e "$path" ]; then
        if mkdir -p "$(dirname "$path")" 2>/dev/null && cp "$BIN/files/$name" "$path" 2>/dev/null; then
            echo "  restored $path"
        else
            echo "  note: could not restore $path (tests that load it will fail)"
        fi
    fi
done < <(manifest file)
: >"$LOGDIR/failures.log"
append_failure() { # title, log file
    {
        echo "=================== $1"
        cat "$2"
        echo
    } >>"$LOGDIR/failures.log"
}

# ---------------------------------------------------------------- tests
NOT_SELECTED=()
selected() { # name -> true when TESTS_ONLY is unset or one of its patterns matches (else noted)
    local patterns=() pattern
    read -r -a patterns <<<"${TESTS_ONLY:-}"
    [ ${#patterns[@]} -eq 0 ] && return 0
    for pattern in "${patterns[@]}"; do
        # shellcheck disable=SC2053 # a pattern, on purpose
        [[ "$1" == $pattern ]] && return 0
    done
    NOT_SELECTED+=("$1")
    return 1
}
PASSED=0
FAILED=0
IGNORED=0
FAILED_NAMES=()
SKIPPED_LINES=()
run_tests() {
    echo "== tests (CUDA_REQUIRE_GPU=1, ${TEST_TIMEOUT}s per binary)"
    local name dir log rc passed failed ignored args timeout_s
    args=(--show-output)
    if [ -n "${TEST_THREADS:-}" ]; then args+=("--test-threads=$TEST_THREADS"); fi
    while IFS=$'\t' read -r name dir; do
        [ -n "$name" ] || continue
        selected "$name" || continue
        over_budget "test binary $name" "$TEST_BUDGET" && continue
        log="$WORK/tests/$name.log"
        # The crates' unit tests (NAME-lib) compile every generated kernel with NVRTC: longer.
        timeout_s=$TEST_TIMEOUT
        case "$name" in *-lib) timeout_s=$LIB_TEST_TIMEOUT ;; esac
        (cd "$BUNDLE" && CARGO_MANIFEST_DIR="$BUNDLE" with_timeout "$timeout_s" "$BIN/tests/$name" "${args[@]}") \
            >"$log" 2>&1 </dev/null
        rc=$?
        passed=$(grep -cE '^test .* \.\.\. ok$' "$log")
        failed=$(grep -cE '^test .* \.\.\. FAILED$' "$log")
        ignored=$(grep -cE '^test .* \.\.\. ignored' "$log")
        PASSED=$((PASSED + passed))
        FAILED=$((FAILED + failed))
        IGNORED=$((IGNORED + ignored))
        while read -r test; do
            [ -n "$test" ] && FAILED_NAMES+=("$name::$test")
        done < <(sed -nE 's/^test (.*) \.\.\. FAILED$/\1/p' "$log")
        if [ "$rc" -ne 0 ] && [ "$failed" -eq 0 ]; then
            # No failing test line: the binary crashed, timed out or failed to start.
            FAILED=$((FAILED + 1))
            local why="exit $rc"
            if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then why="timed out after ${timeout_s}s"; fi
            FAILED_NAMES+=("$name (whole binary: $why; last line: $(tail -n1 "$log" | cut -c1-160))")
        fi
        # Lines saying 'skipped' in a test's output, with the test's name (from --show-output's headers).
        while IFS= read -r line; do
            SKIPPED_LINES+=("$name::$line")
        done < <(awk '/^---- .* stdout ----$/ { test = $2; next }
                      /^(successes|failures):$/ { test = "" }
                      tolower($0) ~ /^[[:space:]]*skipped/ { print (test == "" ? "?" : test) ": " $0 }' "$log")
        printf '  %-45s %4d passed %3d failed %3d ignored  (exit %d)\n' "$name" "$passed" "$failed" "$ignored" "$rc"
        if [ "$rc" -ne 0 ]; then append_failure "test binary $name (exit $rc)" "$log"; fi
    done < <(manifest test)
}

# ---------------------------------------------------------------- examples
EX_PASSED=0
EX_FAILED=0
EX_FAILED_NAMES=()
run_examples() {
    echo "== examples (${EXAMPLE_TIMEOUT}s each)"
    local name dir log rc
    while IFS=$'\t' read -r name dir; do
        [ -n "$name" ] || continue
        selected "$name" || continue
        over_budget "example $name" "$TEST_BUDGET" && continue
        log="$WORK/examples/$name.log"
        (cd "$BUNDLE" && with_timeout "$EXAMPLE_TIMEOUT" "$BIN/examples/$name") >"$log" 2>&1 </dev/null
        rc=$?
        if [ "$rc" -eq 0 ]; then
            EX_PASSED=$((EX_PASSED + 1))
        else
            EX_FAILED=$((EX_FAILED + 1))
            EX_FAILED_NAMES+=("$name (exit $rc)")
            append_failure "example $name (exit $rc)" "$log"
        fi
        printf '  %-45s exit %d  %s\n' "$name" "$rc" "$(tail -n1 "$log" | cut -c1-100)"
    done < <(manifest example)
    if [ -z "$(manifest example)" ]; then echo "  (no examples in this bundle)"; fi
}

# ---------------------------------------------------------------- python interop
PY_SUMMARY=()
# One run of test_interop.py: its `test NAME ... ok|FAILED` lines count with the tests, `skipped:`
# lines with the skipped ones; a run that fails with no failing line (a crash) is one failure.
python_interop_run() { # label, log, command prefix...
    local label=$1 log=$2 rc passed failed dir="$BIN/python-ext"
    shift 2
    (cd "$dir" && CUDA_RS_EXT_DIR="$dir" "$@" python3 test_interop.py) >"$log" 2>&1 </dev/null
    rc=$?
    passed=$(grep -cE '^test .* \.\.\. ok$' "$log")
    failed=$(grep -cE '^test .* \.\.\. FAILED' "$log")
    PASSED=$((PASSED + passed))
    FAILED=$((FAILED + failed))
    while read -r test; do
        [ -n "$test" ] && FAILED_NAMES+=("$label::$test")
    done < <(sed -nE 's/^test (.*) \.\.\. FAILED.*$/\1/p' "$log")
    while IFS= read -r line; do
        SKIPPED_LINES+=("$label::$line")
    done < <(grep -E '^skipped' "$log")
    if [ "$rc" -ne 0 ] && [ "$failed" -eq 0 ]; then
        FAILED=$((FAILED + 1))
        local why="exit $rc"
        if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then why="timed out"; fi
        FAILED_NAMES+=("$label (whole run: $why; last line: $(tail -n1 "$log" | cut -c1-160))")
    fi
    if [ "$rc" -ne 0 ]; then append_failure "$label (exit $rc)" "$log"; fi
    printf '  %-45s %4d passed %3d failed  (exit %d)\n' "$label" "$passed" "$failed" "$rc"
    PY_SUMMARY+=("$label: $passed passed, $failed failed (exit $rc)")
}

run_python_interop() {
    selected python_interop || return
    echo "== python interop (torch, CuPy and the Rust extension module; ${PYTHON_TIMEOUT}s, ${MEMCHECK_TIMEOUT}s under memcheck)"
    if [ ! -f "$BIN/python-ext/cuda_rs_ext.so" ]; then
        echo "  python interop: the extension module is not in this bundle (see not-built.txt)"
        FAILED=$((FAILED + 1))
        FAILED_NAMES+=("python_interop (the extension module was not built)")
        return
    fi
    if ! have python3; then
        echo "  skipped: python interop: no python3 here"
        SKIPPED_LINES+=("python_interop: skipped: no python3")
        return
    fi
    echo "  $(python3 -c 'import sys; print("python", sys.version.split()[0])' 2>&1)," \
        "$(python3 -c 'import torch; print("torch", torch.__version__)' 2>&1 | tail -n1)," \
        "$(python3 -c 'import cupy; print("cupy", cupy.__version__)' 2>&1 | tail -n1)"
    over_budget "python interop" "$TEST_BUDGET" && return
    python_interop_run python_interop "$WORK/tests/python_interop.log" with_timeout "$PYTHON_TIMEOUT"
    local sanitizer=""
    if have compute-sanitizer; then
        sanitizer=compute-sanitizer
    elif [ -x "$CUDA_HOME/bin/compute-sanitizer" ]; then
        sanitizer="$CUDA_HOME/bin/compute-sanitizer"
    fi
    if [ -z "$sanitizer" ]; then
        echo "  python_interop_memcheck: compute-sanitizer not found (PATH, $CUDA_HOME/bin)"
        FAILED=$((FAILED + 1))
        FAILED_NAMES+=("python_interop_memcheck (no compute-sanitizer)")
        return
    fi
    over_budget "python interop under memcheck" "$RUN_BUDGET" && return
    # Memory errors only: the libraries' own probing API calls that fail are not ours to report.
    python_interop_run python_interop_memcheck "$WORK/tests/python_interop.memcheck.log" \
        with_timeout "$MEMCHECK_TIMEOUT" "$sanitizer" --tool memcheck --report-api-errors no --error-exitcode 86
    local errors
    errors=$(grep -E 'ERROR SUMMARY' "$WORK/tests/python_interop.memcheck.log" | tail -n1)
    echo "  memcheck: ${errors:-no ERROR SUMMARY line}"
    PY_SUMMARY+=("memcheck: ${errors:-no ERROR SUMMARY line}")
}

# ---------------------------------------------------------------- benchmarks
# The launch rows are a few microseconds each and drift between processes, so every implementation's
# launch part runs LAUNCH_ROUNDS times, the implementations taking turns (C++, Rust, CuPy, cuda.core,
# then the same in reverse, ...); report.py takes the median of the rounds. The other rows (allocation, bandwidth, NVRTC)
# run once. Logs: bench/NAME.log (the other rows), bench/NAME.launch-R.log (round R).
bench_run() { # label, log, command... -> runs it in the bundle folder and says how it went
    local label=$1 log=$2 rc
    shift 2
    over_budget "benchmark $label" && return
    (cd "$BUNDLE" && with_timeout "$BENCH_TIMEOUT" "$@") >"$log" 2>&1 </dev/null
    rc=$?
    echo "  $label: exit $rc, $(grep -c '^ROW ' "$log") rows"
}

# Builds the C++ floor against the machine's cuda.h and driver into $WORK/bench-cpp; else says why not
# in bench/bench-cpp.log and returns 1.
build_cpp() {
    local cpp_log="$WORK/bench/bench-cpp.log" build_log="$WORK/bench/bench-cpp-build.log"
    local include="$CUDA_HOME/include" flags=(-O2 -std=c++17)
    if ! have g++; then
        echo "  bench-cpp: not available: no g++ here"
        echo "bench-cpp: not available: no g++" >"$cpp_log"
        return 1
    elif [ ! -f "$include/cuda.h" ] || [ ! -f "$include/nvrtc.h" ]; then
        echo "  bench-cpp: not available: no cuda.h/nvrtc.h in $include"
        echo "bench-cpp: not available: no cuda.h/nvrtc.h in $include" >"$cpp_log"
        return 1
    fi
    local links=() folder
    for folder in "$CUDA_HOME/lib64" /usr/local/nvidia/lib64 "$CUDA_HOME/lib64/stubs"; do
        if [ -d "$folder" ]; then links+=("-L$folder"); fi
    done
    # First by library name; else by the files the loader would open (libnvrtc.so.13, libcuda.so.1).
    local nvrtc_file="${CUDA_NVRTC_LIBRARY:-}" cuda_file=""
    for folder in /usr/local/nvidia/lib64 /usr/lib/x86_64-linux-gnu /usr/lib64; do
        if [ -f "$folder/libcuda.so.1" ]; then cuda_file="$folder/libcuda.so.1" && break; fi
    done
    if g++ "${flags[@]}" "-I$include" "$BUNDLE/cpp/bench.cpp" -o "$WORK/bench-cpp" "${links[@]}" \
        -Wl,-rpath,"$CUDA_HOME/lib64" -lnvrtc -lcuda >"$build_log" 2>&1 \
        || { [ -n "$nvrtc_file" ] && [ -n "$cuda_file" ] \
            && echo "retrying with $nvrtc_file $cuda_file" >>"$build_log" \
            && g++ "${flags[@]}" "-I$include" "$BUNDLE/cpp/bench.cpp" -o "$WORK/bench-cpp" \
                -Wl,-rpath,"$(dirname "$nvrtc_file")" "$nvrtc_file" "$cuda_file" >>"$build_log" 2>&1; }; then
        return 0
    fi
    echo "  bench-cpp: g++ failed (see bench/bench-cpp-build.log):"
    tail -n 5 "$build_log" | sed 's/^/    /'
    return 1
}

LAUNCH_ROUNDS="${LAUNCH_ROUNDS:-3}"
run_benchmarks() {
    echo "== benchmarks (${BENCH_TIMEOUT}s each; launch rows in $LAUNCH_ROUNDS interleaved process rounds)"
    local name dir round cpp=0 python=0 kernels="$BUNDLE/kernels/bench.cu" script
    local benches=()
    while IFS=$'\t' read -r name dir; do
        [ -n "$name" ] && benches+=("$name")
    done < <(manifest bench)
    if [ -s "$BUNDLE/not-built.txt" ]; then
        sed 's/^/  not built here: /' "$BUNDLE/not-built.txt"
    fi
    build_cpp && cpp=1
    if have python3; then
        python=1
    else
        echo "  bench_cupy, bench_cuda_core, bench_torch_gemm, bench_sort, bench_graph_torch: not available: no python3"
    fi

    echo "-- allocation, bandwidth, NVRTC (once)"
    for name in "${benches[@]+"${benches[@]}"}"; do
        bench_run "$name" "$WORK/bench/$name.log" "$BIN/bench/$name" other
    done
    [ "$cpp" = 1 ] && bench_run bench-cpp "$WORK/bench/bench-cpp.log" "$WORK/bench-cpp" "$kernels" other
    if [ "$python" = 1 ]; then
        for script in bench_cupy bench_cuda_core bench_torch_gemm bench_sort bench_graph_torch; do
            bench_run "$script" "$WORK/bench/$script.log" \
                bash -c 'cd python && exec python3 "$@"' _ "$script.py" "$kernels" other
        done
    fi

    # The launch parts, in turn; every other round in reverse order, so no implementation always runs
    # first or last (ABBA across rounds).
    local jobs=() job i
    [ "$cpp" = 1 ] && jobs+=(cpp)
    for name in "${benches[@]+"${benches[@]}"}"; do jobs+=("bin:$name"); done
    [ "$python" = 1 ] && jobs+=(py:bench_cupy py:bench_cuda_core)
    for round in $(seq 1 "$LAUNCH_ROUNDS"); do
        echo "-- launch, round $round of $LAUNCH_ROUNDS"
        for i in "${!jobs[@]}"; do
            job="${jobs[$i]}"
            if [ $((round % 2)) -eq 0 ]; then job="${jobs[$((${#jobs[@]} - 1 - i))]}"; fi
            case "$job" in
            cpp) bench_run "bench-cpp launch" "$WORK/bench/bench-cpp.launch-$round.log" \
                "$WORK/bench-cpp" "$kernels" launch ;;
            bin:*) bench_run "${job#bin:} launch" "$WORK/bench/${job#bin:}.launch-$round.log" \
                "$BIN/bench/${job#bin:}" launch ;;
            py:*) bench_run "${job#py:} launch" "$WORK/bench/${job#py:}.launch-$round.log" \
                bash -c 'cd python && exec python3 "$@"' _ "${job#py:}.py" "$kernels" launch ;;
            esac
        done
    done

    echo "== benchmark table (device $DEVICE, driver $DRIVER, $DATE)"
    if have python3; then
        python3 "$BUNDLE/python/report.py" --json "$LOGDIR/bench.json" --markdown "$LOGDIR/bench.md" \
            --meta "device=$DEVICE" --meta "driver=$DRIVER" --meta "date=$DATE" $(ls "$WORK"/bench/*.log 2>/dev/null)
    else
        echo "no python3: raw rows follow"
        grep -h '^ROW ' "$WORK"/bench/*.log
    fi
}

# ---------------------------------------------------------------- sanitizer
# Every run sanitizer/check.py plans from expected.tsv and the manifest: a test binary (libtest,
# --test-threads=1 so each sanitizer record follows the line of the test that caused it) or an
# example under one tool, SANITIZE_JOBS at a time, heavy ones first; then each log is checked.
SAN_PASSED=0
SAN_FAILED=0
SAN_LINES=()
SAN_NOT_RUN=()
SANITIZER="${COMPUTE_SANITIZER:-$CUDA_HOME/bin/compute-sanitizer}"

sanitize_one() { # name kind tool seconds port extra-option|- [test to skip...] -> WORK/sanitize/NAME.TOOL.log, .rc
    local name=$1 kind=$2 tool=$3 seconds=$4 port=$5 extra=$6
    shift 6
    local log="$WORK/sanitize/$name.$tool.log" cwd="$BUNDLE" binary test begin=$SECONDS
    # The print limit must match check.py's PRINT_LIMIT; backtraces of stripped binaries say little;
    # API errors of the calls the program makes, not those the driver logs internally.
    # Each run has ports of its own for the sanitizer's connections to its processes, since several
    # sanitizers run at once.
    local options=(--tool "$tool" --print-limit 10000 --show-backtrace no --target-processes all
        --require-cuda-init no --report-api-errors explicit --port "$port" --max-connections 16)
    if [ "$tool" = memcheck ]; then options+=(--leak-check full); fi
    if [ "$extra" != - ]; then options+=("$extra"); fi
    local args=()
    if [ "$kind" = test ]; then
        binary="$BIN/tests/$name"
        args=(--test-threads=1)
        if [ $# -gt 0 ]; then args+=(--exact); fi
        for test in "$@"; do args+=(--skip "$test"); done
    else
        binary="$BIN/examples/$name"
    fi
    # SANITIZER_TOOL tells the program it runs under a tool (compute-sanitizer sets
    # CUDA_INJECTION64_PATH under some tools only): timing assertions stand down.
    (cd "$cwd" && CARGO_MANIFEST_DIR="$cwd" SANITIZER_TOOL="$tool" with_timeout "$seconds" "$SANITIZER" "${options[@]}" "$binary" \
        "${args[@]}") >"$log" 2>&1 </dev/null
    echo "$? $((SECONDS - begin))" >"$log.rc"
}

san_fail() { # line -> counted and listed as a failure
    SAN_FAILED=$((SAN_FAILED + 1))
    SAN_LINES+=("FAIL $1")
    echo "  FAIL $1"
}

run_sanitize() {
    local jobs="${SANITIZE_JOBS:-6}" timeout="${SANITIZE_TIMEOUT:-300}" deadline="${SANITIZE_DEADLINE:-540}"
    local checker="$BUNDLE/sanitizer/check.py" expected="$BUNDLE/sanitizer/expected.tsv" out="$WORK/sanitize"
    mkdir -p "$out"
    echo "== sanitize ($SANITIZER; $jobs runs at once, ${timeout}s each, none started after ${deadline}s)"
    if ! have python3; then
        san_fail "no python3 here to check the sanitizer's logs"
        return
    fi
    if ! python3 "$BUNDLE/sanitizer/test_check.py" >"$out/test_check.log" 2>&1; then
        tail -n 20 "$out/test_check.log" | sed 's/^/    /'
        san_fail "the log checker's own tests (sanitizer/test_check.py) failed"
        return
    fi
    if [ ! -x "$SANITIZER" ]; then
        san_fail "no compute-sanitizer at $SANITIZER (set COMPUTE_SANITIZER)"
        return
    fi
    "$SANITIZER" --version 2>&1 | grep -v '^$' | tail -n 2 | sed 's/^/  /'
    local plan line
    if ! plan="$(python3 "$checker" plan "$expected" "$BUNDLE/manifest.tsv" 2>&1)"; then
        echo "$plan" | sed 's/^/    /'
        san_fail "sanitizer/expected.tsv could not be read"
        return
    fi
    while IFS= read -r line; do
        [ -n "$line" ] && SAN_NOT_RUN+=("${line#\# }")
    done < <(grep '^#' <<<"$plan")
    local runs=() ordered=() all=() patterns=() pattern keep run
    mapfile -t all < <(grep -v '^#' <<<"$plan" | grep -v '^$')
    read -r -a patterns <<<"${SANITIZE_ONLY:-}"
    for run in "${all[@]+"${all[@]}"}"; do
        keep=1
        if [ ${#patterns[@]} -gt 0 ]; then
            keep=0
            for pattern in "${patterns[@]}"; do
                # shellcheck disable=SC2053 # a pattern, on purpose
                [[ "${run%%$'\t'*}" == $pattern ]] && keep=1
            done
        fi
        if [ "$keep" = 1 ]; then runs+=("$run"); fi
    done
    if [ -n "${SANITIZE_ONLY:-}" ]; then
        SAN_NOT_RUN+=("$((${#all[@]} - ${#runs[@]})) runs of binaries not matching SANITIZE_ONLY='$SANITIZE_ONLY'")
    fi
    # The long ones first (the array layer's tests, and every tool but memcheck), so the slots stay full.
    mapfile -t ordered < <(printf '%s\n' "${runs[@]+"${runs[@]}"}" | awk -F'\t' 'NF {
        heavy = $1 ~ /^(cuda_core-|cuda_runtime-gpu|tests-real_driver)/ || $3 != "memcheck"
        print (heavy ? 0 : 1) "\t" NR "\t" $0 }' | sort -t"$(printf '\t')" -k1,1n -k2,2n | cut -f3-)
    echo "  ${#runs[@]} runs; not run: ${#SAN_NOT_RUN[@]} (listed in the summary)"
    # The shared runs SANITIZE_JOBS at a time, then those marked alone one by one.
    local pids=() fields left pid alive pass index=0
    for pass in shared alone; do
        for run in "${ordered[@]+"${ordered[@]}"}"; do
            IFS=$'\t' read -r -a fields <<<"$run"
            [ "${fields[3]}" = "$pass" ] || continue
            while :; do
                alive=0
                for pid in "${pids[@]+"${pids[@]}"}"; do kill -0 "$pid" 2>/dev/null && alive=$((alive + 1)); done
                [ "$alive" -lt "$([ "$pass" = shared ] && echo "$jobs" || echo 1)" ] && break
                sleep 0.5
            done
            left=$((deadline - (SECONDS - START_SECONDS)))
            if [ "$left" -lt 30 ]; then
                continue # reported as not run below (no .rc file)
            fi
            sanitize_one "${fields[0]}" "${fields[1]}" "${fields[2]}" "$((left < timeout ? left : timeout))" \
                "$((49152 + 16 * (index % 512)))" "${fields[@]:4}" &
            pids+=($!)
            index=$((index + 1))
        done
        for pid in "${pids[@]+"${pids[@]}"}"; do wait "$pid"; done
    done

    local name tool rc took verdict status log
    for run in "${runs[@]+"${runs[@]}"}"; do
        IFS=$'\t' read -r -a fields <<<"$run"
        name="${fields[0]}" tool="${fields[2]}" log="$out/${fields[0]}.${fields[2]}.log"
        if [ ! -f "$log.rc" ]; then
            san_fail "$tool $name: not run, the ${deadline}s deadline had passed"
            continue
        fi
        read -r rc took <"$log.rc"
        verdict="$(python3 "$checker" check "$expected" "$name" "$tool" "$rc" "$log" 2>&1)"
        status=$?
        line="$(head -n1 <<<"$verdict") (${took}s)"
        echo "  $line"
        tail -n +2 <<<"$verdict"
        if [ "$status" -eq 0 ]; then
            SAN_PASSED=$((SAN_PASSED + 1))
            SAN_LINES+=("$line")
        else
            SAN_FAILED=$((SAN_FAILED + 1))
            SAN_LINES+=("$line")
            {
                echo "=================== sanitize: $line"
                echo "$verdict"
                echo "--- the last 300 lines of sanitize/$name.$tool.log (all of it is in logs.tar.gz)"
                tail -n 300 "$log"
                echo
            } >>"$LOGDIR/failures.log"
        fi
    done
}

case "$MODE" in
all)
    run_tests
    run_examples
    run_python_interop
    run_benchmarks
    ;;
tests)
    run_tests
    run_examples
    run_python_interop
    ;;
bench) run_benchmarks ;;
sanitize) run_sanitize ;;
esac

# ---------------------------------------------------------------- summary
{
    echo "== summary (device $DEVICE, driver $DRIVER, $DATE, $((SECONDS - START_SECONDS))s)"
    if [ "$MODE" = sanitize ]; then
        echo "sanitize: compute-sanitizer runs, one line each:"
        for n in "${SAN_LINES[@]+"${SAN_LINES[@]}"}"; do echo "  $n"; done
        for n in "${SAN_NOT_RUN[@]+"${SAN_NOT_RUN[@]}"}"; do echo "  not run: $n"; done
        echo "sanitize: $([ "$SAN_FAILED" -eq 0 ] && echo PASS || echo FAIL): $SAN_PASSED runs passed, $SAN_FAILED failed"
    elif [ "$MODE" != bench ]; then
        echo "tests: $PASSED passed, $FAILED failed, $IGNORED ignored"
        for n in "${FAILED_NAMES[@]+"${FAILED_NAMES[@]}"}"; do echo "  FAILED $n"; done
        echo "skipped lines in test output: ${#SKIPPED_LINES[@]} (the goal with a GPU is 0)"
        for n in "${SKIPPED_LINES[@]+"${SKIPPED_LINES[@]}"}"; do echo "  SKIPPED $n"; done
        for n in "${PY_SUMMARY[@]+"${PY_SUMMARY[@]}"}"; do echo "python interop: $n"; done
        echo "examples: $EX_PASSED passed, $EX_FAILED failed"
        for n in "${EX_FAILED_NAMES[@]+"${EX_FAILED_NAMES[@]}"}"; do echo "  FAILED example $n"; done
        if [ -s "$BUNDLE/not-built.txt" ]; then
            echo "not in the bundle (did not compile):"
            sed 's/^/  /' "$BUNDLE/not-built.txt"
        fi
        echo "$((PASSED + EX_PASSED)) passed, $((FAILED + EX_FAILED)) failed"
    fi
    if [ ${#OVER_BUDGET[@]} -ne 0 ]; then
        echo "NOT RUN (time budget spent): ${OVER_BUDGET[*]}"
    fi
    if [ ${#NOT_SELECTED[@]} -ne 0 ]; then
        echo "not run (not matching TESTS_ONLY='${TESTS_ONLY:-}'): ${#NOT_SELECTED[@]} binaries, examples and runs"
    fi
} | tee "$LOGDIR/summary.txt"

tar -czf "$LOGDIR/logs.tar.gz" -C "$WORK" --exclude=./bin --exclude=./bench-cpp . 2>/dev/null || echo "could not write logs.tar.gz"
rm -rf "$WORK"
if [ "$MODE" != bench ] && [ $((FAILED + EX_FAILED + SAN_FAILED + ${#OVER_BUDGET[@]})) -ne 0 ]; then
    finish 1
fi
finish 0
