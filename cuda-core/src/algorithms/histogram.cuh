// The even-bin histogram of cuda-core's algorithms (histogram.rs), and the one-read count of
// small integer values that bincount takes first. The host side prepends T (the samples' type),
// E (the type the edges are rounded to), READ(x) (a sample as double), SHARED_BINS (bins counted
// in shared memory, 0 for none) and, for integer samples, X (long long, or unsigned long long
// for unsigned samples: the type the extremes are kept in) with X_LEAST and X_GREATEST, its
// least and greatest values.

// Samples a thread loads before it counts any: independent loads in flight, so the kernels run
// at the memory's bandwidth rather than at one load's latency a sample.
#define ITEMS 8

// Edge i of `bins` even bins over [lower, upper], as NumPy's linspace gives it (i * step +
// lower in double, the last edge exactly `upper`) and rounded to E as NumPy's bin_type.
__device__ __forceinline__ double edge(unsigned long long i, unsigned long long bins, double lower, double upper,
                                       double step) {
    const double e = i == bins ? upper : __dadd_rn(__dmul_rn((double)i, step), lower);
    return (double)(E)e;
}

// Loads the block's next ITEMS samples a thread from `base` (striped: coalesced), those past
// `n` left unset; `have[k]` says which are real.
__device__ __forceinline__ void load_items(const T *samples, unsigned long long n, unsigned long long base,
                                           T (&v)[ITEMS], bool (&have)[ITEMS]) {
#pragma unroll
    for (int k = 0; k < ITEMS; ++k) {
        const unsigned long long i = base + (unsigned long long)k * blockDim.x + threadIdx.x;
        have[k] = i < n;
        if (have[k]) v[k] = samples[i];
    }
}

// counts[b] += the samples in bin b: [edge(b), edge(b + 1)), the last bin closed; samples
// outside [edge(0), edge(bins)] and NaN are not counted. The bin is NumPy's: a first guess from
// the sample's place in the range, corrected by one against the edges (as NumPy corrects its
// own guess, so a guess within one of the bin gives NumPy's bin).
extern "C" __global__ void cuda_core_histogram_even(const T *samples, unsigned long long n, double lower, double upper,
                                                    unsigned long long bins, unsigned long long *counts) {
#if SHARED_BINS
    __shared__ unsigned int local[SHARED_BINS];
    for (unsigned b = threadIdx.x; b < bins; b += blockDim.x) local[b] = 0;
    __syncthreads();
#endif
    const double step = (upper - lower) / (double)bins;
    const double first = edge(0, bins, lower, upper, step), last = edge(bins, bins, lower, upper, step);
    // The first guess needs to be within one of the bin only (the edges correct it): a product
    // with the scale, where NumPy divides by the range.
    const double scale = (double)bins / (upper - lower);
    const unsigned long long tile = (unsigned long long)blockDim.x * ITEMS;
    for (unsigned long long base = (unsigned long long)blockIdx.x * tile; base < n; base += (unsigned long long)gridDim.x * tile) {
        T v[ITEMS];
        bool have[ITEMS];
        load_items(samples, n, base, v, have);
#pragma unroll
        for (int k = 0; k < ITEMS; ++k) {
            const double x = READ(v[k]);
            if (!have[k] || !(x >= first && x <= last)) continue;
            const double guess = (x - lower) * scale;
            long long b = guess < 0.0 ? 0 : (guess >= (double)bins ? (long long)bins - 1 : (long long)guess);
            if (b > 0 && x < edge((unsigned long long)b, bins, lower, upper, step)) b -= 1;
            else if ((unsigned long long)b + 1 < bins && x >= edge((unsigned long long)b + 1, bins, lower, upper, step)) b += 1;
#if SHARED_BINS
            atomicAdd(&local[b], 1u);
#else
            atomicAdd(&counts[b], 1ull);
#endif
        }
    }
#if SHARED_BINS
    __syncthreads();
    for (unsigned b = threadIdx.x; b < bins; b += blockDim.x) {
        if (local[b]) atomicAdd(&counts[b], (unsigned long long)local[b]);
    }
#endif
}

#if defined(X_LEAST) && SHARED_BINS
// extremes[0] and [1] (as X): the least and the greatest sample, before any counting.
extern "C" __global__ void cuda_core_count_values_init(X *extremes) {
    if (blockIdx.x == 0 && threadIdx.x == 0) {
        extremes[0] = X_GREATEST;
        extremes[1] = X_LEAST;
    }
}

// One read of integer samples: counts[v] += the samples equal to v for every v below
// SHARED_BINS (counted in shared memory), and the least and the greatest sample into
// extremes[0] and [1]. When the greatest is below SHARED_BINS and the least not negative,
// counts is the whole of bincount's result.
extern "C" __global__ void cuda_core_count_values(const T *samples, unsigned long long n, unsigned long long *counts,
                                                  X *extremes) {
    __shared__ unsigned int local[SHARED_BINS];
    __shared__ X warp_low[32], warp_high[32];
    for (unsigned b = threadIdx.x; b < SHARED_BINS; b += blockDim.x) local[b] = 0;
    __syncthreads();
    X low = X_GREATEST, high = X_LEAST;
    const unsigned long long tile = (unsigned long long)blockDim.x * ITEMS;
    for (unsigned long long base = (unsigned long long)blockIdx.x * tile; base < n; base += (unsigned long long)gridDim.x * tile) {
        T v[ITEMS];
        bool have[ITEMS];
        load_items(samples, n, base, v, have);
#pragma unroll
        for (int k = 0; k < ITEMS; ++k) {
            if (!have[k]) continue;
            const X x = (X)v[k];
            low = x < low ? x : low;
            high = x > high ? x : high;
            if (x >= (X)0 && x < (X)SHARED_BINS) atomicAdd(&local[(unsigned)x], 1u);
        }
    }
#pragma unroll
    for (int d = 16; d > 0; d >>= 1) {
        const X l = __shfl_down_sync(0xffffffffu, low, d), h = __shfl_down_sync(0xffffffffu, high, d);
        low = l < low ? l : low;
        high = h > high ? h : high;
    }
    const unsigned lane = threadIdx.x & 31u, warp = threadIdx.x >> 5;
    if (lane == 0) {
        warp_low[warp] = low;
        warp_high[warp] = high;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        for (unsigned w = 1; w < (blockDim.x + 31u) / 32u; ++w) {
            low = warp_low[w] < low ? warp_low[w] : low;
            high = warp_high[w] > high ? warp_high[w] : high;
        }
        atomicMin(&extremes[0], low);
        atomicMax(&extremes[1], high);
    }
    for (unsigned b = threadIdx.x; b < SHARED_BINS; b += blockDim.x) {
        if (local[b]) atomicAdd(&counts[b], (unsigned long long)local[b]);
    }
}
#endif
