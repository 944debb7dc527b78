// The quantile of one line by radix select (quantile_select.rs): the one or two order statistics
// a quantile needs, found by digit histograms (8 bits a pass, most significant first) with no
// sort. The host side prepends warp_peers.cuh, T (the element as stored), U (its bits, same
// size), KIND (0 unsigned, 1 signed, 2 float, 3 bool), SIGN and INF (as bits), M (the result), C
// (the computing type), MUL, ADD, SUB (rounded, never fused, as NumPy computes) and
// quantile_plan.cuh.
//
// State (unsigned long long words): 0 NaN count, 1 and 2 the ranks still wanted below the
// prefixes, 3 and 4 the prefixes (the keys' bits found so far), 5 whether the result is NaN, 6
// whether the result is the low element itself, 7 the interpolation weight t (a double's bits).
// Then two histograms of 256 counts.

// The key: unsigned order is a total order of the values: integers by value, floats by value
// with -0.0 before 0.0 and every NaN last (all NaN equal).
__device__ __forceinline__ U qs_key(const T x) {
    U b;
    memcpy(&b, &x, sizeof(U));
#if KIND == 1
    b = (U)(b ^ SIGN);
#elif KIND == 2
    if ((U)(b & (U)~SIGN) > INF) b = (U)~(U)0;
    else b = (b & SIGN) ? (U)~b : (U)(b | SIGN);
#elif KIND == 3
    b = (U)(b != 0);
#endif
    return b;
}

// The value of a key (not a NaN's) in the computing type.
__device__ __forceinline__ C qs_value(U key) {
#if KIND == 1
    key = (U)(key ^ SIGN);
#elif KIND == 2
    key = (key & SIGN) ? (U)(key ^ SIGN) : (U)~key;
#endif
    T x;
    memcpy(&x, &key, sizeof(U));
    return (C)(double)x;
}

__device__ __forceinline__ bool qs_is_nan(const T x) {
#if KIND == 2
    U b;
    memcpy(&b, &x, sizeof(U));
    return (U)(b & (U)~SIGN) > INF;
#else
    return false;
#endif
}

// Clears the state and the histograms.
extern "C" __global__ void qs_clear(unsigned long long *state) {
    for (unsigned i = threadIdx.x; i < 8 + 512; i += blockDim.x) state[i] = 0ull;
}

// The ranks of the one or two elements the quantile reads (as the sorted read-out does), from
// the count of numbers (skip_nan) or NaN when a NaN is there (not skip_nan) or no number is.
// method: NumPy's (plan_quantile's codes). One thread.
__device__ void qs_plan_state(unsigned long long *state, unsigned long long n, double q, int method, int skip_nan) {
    const unsigned long long nans = state[0];
    const unsigned long long count = n - nans;
    if (count == 0 || (!skip_nan && nans != 0)) {
        state[5] = 1ull;
        return;
    }
    const quantile_plan plan = plan_quantile(q, count, method);
    state[1] = plan.low;
    state[2] = plan.high;
    state[6] = plan.direct;
    state[7] = (unsigned long long)__double_as_longlong(plan.t);
}
extern "C" __global__ void qs_plan(unsigned long long *state, unsigned long long n, double q, int method, int skip_nan) {
    qs_plan_state(state, n, q, method, skip_nan);
}

// Adds one to counts[digit] for each lane that counts, a warp at a time: counting lanes with the
// same digit add their number once (most keys of a pass share a few digits), the lowest of them,
// found by eight ballots (warp_peers.cuh) among the lanes that count; nothing where no lane
// counts (most keys of the later passes match neither prefix). Every lane of the warp calls it,
// converged.
__device__ __forceinline__ void qs_count(unsigned *counts, const bool counts_key, const unsigned digit) {
    const unsigned counting = __ballot_sync(0xffffffffu, counts_key);
    if (!counting) return;
    const unsigned peers = warp_peers<8>(digit) & counting;
    const unsigned lower_lanes = (1u << (threadIdx.x & 31u)) - 1u;
    if (counts_key && (peers & lower_lanes) == 0u) atomicAdd(&counts[digit], (unsigned)__popc(peers));
}

// The bits of a key above `shift + 8`, which must match a prefix's for the key to be counted at
// `shift`: none on the top digit.
__device__ __forceinline__ U qs_above(const int shift) {
    return shift + 8 >= (int)(8 * sizeof(U)) ? (U)0 : (U)(~0ull << (shift + 8));
}

// Counts `key` (nothing where !have) by its digit at `shift` into the histogram of each prefix
// (p0's in counts[0, 256), p1's in counts[256, 512)) whose bits `above` (qs_above) it matches;
// p1's only while the prefixes differ. Every lane of a warp calls it together (qs_count is
// warp-wide).
__device__ __forceinline__ void qs_count_key(unsigned *counts, const bool have, const U key, const int shift,
                                             const U above, const U p0, const U p1) {
    const unsigned digit = (unsigned)(key >> shift) & 255u;
    qs_count(counts, have && ((key ^ p0) & above) == 0, digit);
    if (p0 != p1) qs_count(counts + 256, have && ((key ^ p1) & above) == 0, digit);
}

// Elements a thread of qs_histogram loads before it counts any.
#define QS_ITEMS 8

// Counts the keys whose bits above `shift + 8` equal each prefix's, by their digit at `shift`
// (the second histogram only while the prefixes differ: qs_choose reads the first for both
// otherwise); with count_nans (the first pass, before qs_plan), also the NaNs into state[0].
// Every lane of a warp runs every iteration (blockDim is a multiple of 32).
extern "C" __global__ void qs_histogram(const T *x, unsigned long long n, unsigned long long *state, int shift,
                                        int count_nans) {
    __shared__ unsigned counts[512];
    if (state[5]) return;
    for (unsigned i = threadIdx.x; i < 512; i += blockDim.x) counts[i] = 0u;
    __syncthreads();
    const U p0 = (U)state[3], p1 = (U)state[4], above = qs_above(shift);
    const unsigned long long tile = (unsigned long long)blockDim.x * QS_ITEMS;
    unsigned long long nans = 0;
    for (unsigned long long base = (unsigned long long)blockIdx.x * tile; base < n; base += (unsigned long long)gridDim.x * tile) {
        T v[QS_ITEMS];
#pragma unroll
        for (int k = 0; k < QS_ITEMS; ++k) {
            const unsigned long long i = base + (unsigned long long)k * blockDim.x + threadIdx.x;
            if (i < n) v[k] = x[i];
        }
#pragma unroll
        for (int k = 0; k < QS_ITEMS; ++k) {
            const bool have = base + (unsigned long long)k * blockDim.x + threadIdx.x < n;
            if (count_nans && have) nans += qs_is_nan(v[k]);
            qs_count_key(counts, have, have ? qs_key(v[k]) : (U)0, shift, above, p0, p1);
        }
    }
    if (nans) atomicAdd(&state[0], nans);
    __syncthreads();
    for (unsigned i = threadIdx.x; i < 512; i += blockDim.x)
        if (counts[i]) atomicAdd(&state[8 + i], (unsigned long long)counts[i]);
}

// Picks each rank's digit at `shift` from its histogram, narrows the rank, and clears the
// histograms for the next pass. One thread.
extern "C" __global__ void qs_choose(unsigned long long *state, int shift) {
    if (state[5]) return;
    // Equal prefixes: qs_histogram counted the first histogram only, which serves both.
    const bool same = state[3] == state[4];
    for (int which = 0; which < 2; ++which) {
        unsigned long long *counts = state + 8 + 256 * (same ? 0 : which);
        unsigned long long rank = state[1 + which], before = 0ull;
        unsigned digit = 0u;
        // The rank is below the count of matching keys, so the walk stops at a digit; 255 when
        // the state is inconsistent (it cannot be: every matching key was counted).
        while (digit < 255u && before + counts[digit] <= rank) before += counts[digit++];
        state[1 + which] = rank - before;
        state[3 + which] |= (unsigned long long)digit << shift;
    }
    for (int d = 0; d < 512; ++d) state[8 + d] = 0ull;
}

// The quantile from the two keys found (NaN as planned).
__device__ M qs_result(const unsigned long long *state) {
    if (state[5]) return (M)(C)__longlong_as_double(0x7ff8000000000000ll);
    const C a = qs_value((U)state[3]);
    C v = a;
    if (!state[6]) {
        const double t = __longlong_as_double((long long)state[7]);
        const C b = qs_value((U)state[4]), diff = SUB(b, a);
        v = t >= 0.5 ? SUB(b, MUL(diff, (C)(1.0 - t))) : ADD(a, MUL(diff, (C)t));
    }
    return (M)v;
}

// out[0] = the quantile from the two keys found (NaN as planned).
extern "C" __global__ void qs_finish(const unsigned long long *state, M *out) { out[0] = qs_result(state); }

// The quantile of each of `lines` compact lines of n elements (n < 2^32) of x, one block of
// QS_ROWS_BLOCK threads per line (blocks stride over the lines): the one-line kernels' plan,
// passes and read-out, with the state and the histograms in shared memory and the digits
// chosen by a scan of the histograms across the block instead of one thread's walk.
#define QS_ROWS_BLOCK 256
extern "C" __global__ void __launch_bounds__(QS_ROWS_BLOCK)
    qs_rows(const T *x, M *out, unsigned long long lines, unsigned long long n, double q, int method, int skip_nan) {
    __shared__ unsigned counts[512];
    __shared__ unsigned long long state[8];
    __shared__ unsigned long long warp_sums[2][QS_ROWS_BLOCK / 32];
    const unsigned lane = threadIdx.x & 31u, warp = threadIdx.x >> 5;
    for (unsigned long long line = blockIdx.x; line < lines; line += gridDim.x) {
        const T *row = x + line * n;
        if (threadIdx.x < 8) state[threadIdx.x] = 0ull;
        for (unsigned i = threadIdx.x; i < 512; i += QS_ROWS_BLOCK) counts[i] = 0u;
        __syncthreads();
        unsigned long long nans = 0;
        for (unsigned long long i = threadIdx.x; i < n; i += QS_ROWS_BLOCK) nans += qs_is_nan(row[i]);
        if (nans) atomicAdd(&state[0], nans);
        __syncthreads();
        if (threadIdx.x == 0) qs_plan_state(state, n, q, method, skip_nan);
        __syncthreads();
        for (int shift = (int)(8 * sizeof(U)) - 8; shift >= 0 && !state[5]; shift -= 8) {
            // The histograms of the keys matching each prefix above `shift + 8` (as qs_histogram).
            const U p0 = (U)state[3], p1 = (U)state[4], above = qs_above(shift);
            const bool same = p0 == p1;
            for (unsigned long long base = 0; base < n; base += QS_ROWS_BLOCK) {
                const unsigned long long i = base + threadIdx.x;
                qs_count_key(counts, i < n, i < n ? qs_key(row[i]) : (U)0, shift, above, p0, p1);
            }
            __syncthreads();
            // Thread d: digit d's count for each rank, and the matching keys with a smaller digit
            // (a scan over the digits); the thread whose digit holds the rank narrows it.
            const unsigned long long rank[2] = {state[1], state[2]};
            unsigned long long count[2], inclusive[2];
            for (int which = 0; which < 2; ++which) {
                count[which] = counts[(same ? 0 : 256 * which) + threadIdx.x];
                inclusive[which] = count[which];
                for (int offset = 1; offset < 32; offset <<= 1) {
                    const unsigned long long y = __shfl_up_sync(0xffffffffu, inclusive[which], offset);
                    if (lane >= (unsigned)offset) inclusive[which] += y;
                }
                if (lane == 31) warp_sums[which][warp] = inclusive[which];
            }
            __syncthreads();
            for (int which = 0; which < 2; ++which) {
                unsigned long long before = inclusive[which] - count[which];
                for (unsigned w = 0; w < warp; ++w) before += warp_sums[which][w];
                if (before <= rank[which] && rank[which] < before + count[which]) {
                    state[1 + which] = rank[which] - before;
                    state[3 + which] |= (unsigned long long)threadIdx.x << shift;
                }
            }
            for (unsigned i = threadIdx.x; i < 512; i += QS_ROWS_BLOCK) counts[i] = 0u;
            __syncthreads();
        }
        if (threadIdx.x == 0) out[line] = qs_result(state);
        // The next line clears the state and histograms.
        __syncthreads();
    }
}
