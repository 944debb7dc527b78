// The searches of cuda-core's algorithms (search.rs): lower and upper bounds of many queries in a
// sorted array, optionally through a permutation `sorter` (NumPy's searchsorted), and the check
// of such a permutation. The host side prepends keys.cuh (with what it needs) and SEARCH_BITS, the
// map the bounds compare keys by: key_bits, NumPy's order (NaN last, -0.0 equal to 0.0), or
// unique_bits (every key with a NaN one value). The sorter's check compares by key_bits.

// out[j] = the first position p in [0, n] where a[sorter[p]] (a[p] without a sorter) is not below
// queries[j] (right == 0) or is above it (right != 0). Sorter entries outside [0, n) are clamped
// (the host checks them first). With `order` (not null), the queries are sorted and query j is
// the caller's query order[j]: out[order[j]] is written (neighbouring threads then walk mostly
// the same path through a, in cache).
extern "C" __global__ void cuda_core_search_bounds(const K *a, const long long *sorter, unsigned long long n,
                                                   const K *queries, const unsigned *order, long long *out,
                                                   unsigned long long m, int right) {
    const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    for (unsigned long long j = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; j < m; j += stride) {
        const U query = SEARCH_BITS(queries[j]);
        unsigned long long low = 0, high = n;
        while (low < high) {
            const unsigned long long middle = low + (high - low) / 2;
            unsigned long long at = middle;
            if (sorter) {
                const long long s = sorter[middle];
                at = s < 0 ? 0 : ((unsigned long long)s >= n ? n - 1 : (unsigned long long)s);
            }
            const U value = SEARCH_BITS(a[at]);
            if (right ? value <= query : value < query) low = middle + 1;
            else high = middle;
        }
        out[order ? (unsigned long long)order[j] : j] = (long long)low;
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
