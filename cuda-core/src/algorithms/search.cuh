// The searches of cuda-core's algorithms (search.rs): lower and upper bounds of many queries in a
// sorted array, optionally through a permutation `sorter` (NumPy's searchsorted), and the check
// of such a permutation. The host side prepends keys.cuh (with what it needs) and SEARCH_BITS, the
// map the bounds compare keys by: key_bits, NumPy's order (NaN last, -0.0 equal to 0.0), or
// unique_bits (every key with a NaN one value), and SEARCH_TREE_LEVELS (the steps of a search
// taken in shared memory: SEARCH_TREE_NODES = 2^levels - 1 keys' bits of at most 32 KiB). The
// sorter's check compares by key_bits.

// The bits of the key at position `middle` of the search order: a[middle], or a[sorter[middle]]
// with the sorter's entry clamped into [0, n) (the host checks them first).
__device__ __forceinline__ U search_key_at(const K *a, const long long *sorter, unsigned long long n,
                                          unsigned long long middle) {
    unsigned long long at = middle;
    if (sorter) {
        const long long s = sorter[middle];
        at = s < 0 ? 0 : ((unsigned long long)s >= n ? n - 1 : (unsigned long long)s);
    }
    return SEARCH_BITS(a[at]);
}

// Whether a key of bits `value` lies before the query's bound: below the query (right == 0),
// or not above it (right != 0).
__device__ __forceinline__ bool search_before(U value, U query, int right) {
    return right ? value <= query : value < query;
}

// The binary search of `query` in positions [low, high) of the search order, for the first
// position p in [low, high] whose key is not before the query's bound.
__device__ __forceinline__ unsigned long long search_rest(const K *a, const long long *sorter, unsigned long long n,
                                                          U query, int right, unsigned long long low,
                                                          unsigned long long high) {
    while (low < high) {
        const unsigned long long middle = low + (high - low) / 2;
        if (search_before(search_key_at(a, sorter, n, middle), query, right)) low = middle + 1;
        else high = middle;
    }
    return low;
}

// out[j] = the first position p in [0, n] where a[sorter[p]] (a[p] without a sorter) is not below
// queries[j] (right == 0) or is above it (right != 0). With `order` (not null), the queries are
// sorted and query j is the caller's query order[j]: out[order[j]] is written (neighbouring
// threads then walk mostly the same path through a, in cache).
extern "C" __global__ void cuda_core_search_bounds(const K *a, const long long *sorter, unsigned long long n,
                                                   const K *queries, const unsigned *order, long long *out,
                                                   unsigned long long m, int right) {
    const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    for (unsigned long long j = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; j < m; j += stride) {
        const U query = SEARCH_BITS(queries[j]);
        out[order ? (unsigned long long)order[j] : j] = (long long)search_rest(a, sorter, n, query, right, 0, n);
    }
}

// The first SEARCH_TREE_LEVELS steps of every binary search in [0, n) visit the nodes of one
// tree, numbered breadth first from 1 (node i's children 2i, taken where the key is not before
// the bound, and 2i + 1): tree[i - 1] = the bits of node i's middle key, or zero bits for a node
// no search reaches (its range empty). One thread a node.
extern "C" __global__ void cuda_core_search_tree(const K *a, const long long *sorter, unsigned long long n, U *tree) {
    const unsigned node = blockIdx.x * blockDim.x + threadIdx.x + 1;
    if (node > SEARCH_TREE_NODES) return;
    unsigned long long low = 0, high = n;
    for (unsigned level = 31 - __clz(node); level-- > 0 && low < high;) {
        const unsigned long long middle = low + (high - low) / 2;
        if ((node >> level) & 1u) low = middle + 1;
        else high = middle;
    }
    tree[node - 1] = low < high ? search_key_at(a, sorter, n, low + (high - low) / 2) : key_zero();
}

// cuda_core_search_bounds with the first SEARCH_TREE_LEVELS steps of each search taken in the
// block's shared copy of `tree` (cuda_core_search_tree's nodes for the same a, sorter and n):
// without it, a warp's 32 scattered queries read 32 cache lines at each of those steps.
extern "C" __global__ void cuda_core_search_bounds_in_tree(const K *a, const long long *sorter, unsigned long long n,
                                                           const U *tree, const K *queries, const unsigned *order,
                                                           long long *out, unsigned long long m, int right) {
    __shared__ U top[SEARCH_TREE_NODES];
    for (unsigned i = threadIdx.x; i < SEARCH_TREE_NODES; i += blockDim.x) top[i] = tree[i];
    __syncthreads();
    const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    for (unsigned long long j = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; j < m; j += stride) {
        const U query = SEARCH_BITS(queries[j]);
        unsigned long long low = 0, high = n;
        unsigned node = 1;
        for (unsigned level = 0; level < SEARCH_TREE_LEVELS && low < high; ++level) {
            const unsigned long long middle = low + (high - low) / 2;
            const bool before = search_before(top[node - 1], query, right);
            if (before) low = middle + 1;
            else high = middle;
            node = 2 * node + (before ? 1u : 0u);
        }
        out[order ? (unsigned long long)order[j] : j] = (long long)search_rest(a, sorter, n, query, right, low, high);
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
