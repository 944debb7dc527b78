// The even-bin histogram of cuda-core's algorithms (histogram.rs). The host side prepends T (the
// samples' type), E (the type the edges are rounded to), READ(x) (a sample as double) and
// SHARED_BINS (bins counted in shared memory, 0 for none).

// Edge i of `bins` even bins over [lower, upper], as NumPy's linspace gives it (i * step +
// lower in double, the last edge exactly `upper`) and rounded to E as NumPy's bin_type.
__device__ __forceinline__ double edge(unsigned long long i, unsigned long long bins, double lower, double upper,
                                       double step) {
    const double e = i == bins ? upper : __dadd_rn(__dmul_rn((double)i, step), lower);
    return (double)(E)e;
}

// counts[b] += the samples in bin b: [edge(b), edge(b + 1)), the last bin closed; samples
// outside [edge(0), edge(bins)] and NaN are not counted. The bin is NumPy's: a first guess from
// the sample's place in the range, corrected by one against the edges.
extern "C" __global__ void cuda_core_histogram_even(const T *samples, unsigned long long n, double lower, double upper,
                                                    unsigned long long bins, unsigned long long *counts) {
#if SHARED_BINS
    __shared__ unsigned int local[SHARED_BINS];
    for (unsigned b = threadIdx.x; b < bins; b += blockDim.x) local[b] = 0;
    __syncthreads();
#endif
    const double step = (upper - lower) / (double)bins;
    const double first = edge(0, bins, lower, upper, step), last = edge(bins, bins, lower, upper, step);
    const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        const double x = READ(samples[i]);
        if (!(x >= first && x <= last)) continue;
        const double guess = (x - lower) / (upper - lower) * (double)bins;
        long long b = guess < 0.0 ? 0 : (guess >= (double)bins ? (long long)bins - 1 : (long long)guess);
        if (b > 0 && x < edge((unsigned long long)b, bins, lower, upper, step)) b -= 1;
        else if ((unsigned long long)b + 1 < bins && x >= edge((unsigned long long)b + 1, bins, lower, upper, step)) b += 1;
#if SHARED_BINS
        atomicAdd(&local[b], 1u);
#else
        atomicAdd(&counts[b], 1ull);
#endif
    }
#if SHARED_BINS
    __syncthreads();
    for (unsigned b = threadIdx.x; b < bins; b += blockDim.x) {
        if (local[b]) atomicAdd(&counts[b], (unsigned long long)local[b]);
    }
#endif
}
