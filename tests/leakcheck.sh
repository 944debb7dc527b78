#!/usr/bin/env bash
# Runs the FFI-facing test binaries of the `tests` package (everything that
# calls the driver, through the fakecuda test double) under valgrind memcheck.
# Fails on any invalid read or write, use of uninitialised memory, or leak
# (definite or possible) in the Rust code, the safe layers or the fake.
#
# Usage: tests/leakcheck.sh   (from anywhere; installs valgrind if missing)
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v valgrind >/dev/null; then
    echo "leakcheck: installing valgrind" >&2
    if [ "$(id -u)" = 0 ]; then apt-get install -y valgrind; else sudo apt-get install -y valgrind; fi
fi

# Build the test binaries and collect their paths from cargo's JSON messages (the package's
# examples are built too and reported with theirs: left out, they are not test harnesses).
# real_driver and layers_gpu talk to NVIDIA's libcuda and libcudart, not to our code under
# test: left out.
mapfile -t binaries < <(
    cargo test -p tests --no-run --message-format=json 2>/dev/null |
        grep -o '"executable":"[^"]*"' | sed 's/"executable":"\(.*\)"/\1/' | grep -v -e '/examples/' -e '/real_driver-' -e '/layers_gpu-'
)
if [ "${#binaries[@]}" -eq 0 ]; then
    echo "leakcheck: no test binaries were built" >&2
    exit 1
fi

status=0
for binary in "${binaries[@]}"; do
    echo "leakcheck: $(basename "$binary")"
    # NVRTC (NVIDIA's compiler) is not ours to check and is slow under valgrind:
    # the test that needs it reports itself skipped here.
    if ! env -u CUDA_NVRTC_LIBRARY valgrind --quiet --error-exitcode=1 --leak-check=full \
        --show-leak-kinds=definite,possible --errors-for-leak-kinds=definite,possible \
        --suppressions=tests/valgrind.supp "$binary" --test-threads=4 >"${TMPDIR:-/tmp}/leakcheck.log" 2>&1; then
        cat "${TMPDIR:-/tmp}/leakcheck.log"
        echo "leakcheck: FAILED: $binary" >&2
        status=1
    else
        grep -E "^test result|failure points" "${TMPDIR:-/tmp}/leakcheck.log" || true
    fi
done
[ "$status" = 0 ] && echo "leakcheck: clean (${#binaries[@]} binaries)"
exit "$status"
