// The searches of cuda-core's algorithms (search.rs): lower and upper bounds of many queries in a
// sorted array, optionally through a permutation `sorter` (NumPy's searchsorted), and the check
// of such a permutation. The host side prepends keys.cuh (with what it needs) and SEARCH_BITS, the
// map the bounds compare keys by: key_bits, NumPy's order (NaN last, -0.0 equal to 0.0), or
// unique_bits (every key with a NaN one value). The sorter's check compares by key_bits.

// Queries one thread searches together: their steps' loads are independent, so a thread keeps
// that many in flight where one search waits on each load before the next (a binary search is a
// chain of dependent loads, most of them misses in the lower levels).
#define SEARCH_QUERIES 4

// out[j] = the first position p in [0, n] where a[sorter[p]] (a[p] without a sorter) is not below
// queries[j] (right == 0) or is above it (right != 0). Sorter entries outside [0, n) are clamped
// (the host checks them first). A thread searches queries first, first + stride, ... (up to
// SEARCH_QUERIES of them) step by step together; m is at least 1.
extern "C" __global__ void cuda_core_search_bounds(const K *a, const long long *sorter, unsigned long long n,
                                                   const K *queries, long long *out, unsigned long long m, int right) {
    const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    for (unsigned long long first = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; first < m;
         first += SEARCH_QUERIES * stride) {
        U query[SEARCH_QUERIES];
        unsigned long long low[SEARCH_QUERIES], high[SEARCH_QUERIES];
#pragma unroll
        for (int q = 0; q < SEARCH_QUERIES; ++q) {
            const unsigned long long j = first + q * stride;
            // A slot past the queries searches nothing (reading the first query, which exists).
            query[q] = SEARCH_BITS(queries[j < m ? j : 0ull]);
            low[q] = 0ull;
            high[q] = j < m ? n : 0ull;
        }
        bool searching = true;
        while (searching) {
            // Each live search's middle, and where it reads a (through the sorter, if any).
            unsigned long long middle[SEARCH_QUERIES], at[SEARCH_QUERIES];
#pragma unroll
            for (int q = 0; q < SEARCH_QUERIES; ++q) at[q] = middle[q] = low[q] + (high[q] - low[q]) / 2;
            if (sorter) {
#pragma unroll
                for (int q = 0; q < SEARCH_QUERIES; ++q) {
                    if (low[q] < high[q]) {
                        const long long s = sorter[at[q]];
                        at[q] = s < 0 ? 0 : ((unsigned long long)s >= n ? n - 1 : (unsigned long long)s);
                    }
                }
            }
            U value[SEARCH_QUERIES];
#pragma unroll
            for (int q = 0; q < SEARCH_QUERIES; ++q) {
                if (low[q] < high[q]) value[q] = SEARCH_BITS(a[at[q]]);
            }
            searching = false;
#pragma unroll
            for (int q = 0; q < SEARCH_QUERIES; ++q) {
                if (low[q] < high[q]) {
                    if (right ? value[q] <= query[q] : value[q] < query[q]) low[q] = middle[q] + 1;
                    else high[q] = middle[q];
                    searching = searching || low[q] < high[q];
                }
            }
        }
#pragma unroll
        for (int q = 0; q < SEARCH_QUERIES; ++q) {
            const unsigned long long j = first + q * stride;
            if (j < m) out[j] = (long long)low[q];
        }
    }
}

// Checks a sorter of a: flags[0] counts entries outside [0, n), flags[1] counts positions p
// where a[sorter[p + 1]] is below a[sorter[p]] (both in range).
extern "C" __global__ void cuda_core_search_check_sorter(const K *a, const long long *sorter, unsigned long long n,
                                                         unsigned long long *flags) {
    const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    for (unsigned long long p = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; p < n; p += stride) {
        const long long s = sorter[p];
        const bool inside = s >= 0 && (unsigned long long)s < n;
        if (!inside) atomicAdd(&flags[0], 1ull);
        if (inside && p + 1 < n) {
            const long long t = sorter[p + 1];
            if (t >= 0 && (unsigned long long)t < n && key_bits(a[t]) < key_bits(a[s])) atomicAdd(&flags[1], 1ull);
        }
    }
}
