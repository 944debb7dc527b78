// The complex median of statistics.rs (complex_median.rs): for each line sorted in NumPy's order
// (values holding a NaN last), NumPy's np.median: the middle value, or the mean of the two middle
// ones ((a + b) / 2 per part, rounded as NumPy's mean); a line holding a NaN gives its last
// value, as NumPy's does. skip_nan (np.nanmedian): the median of the values without NaN, NaN for
// a line of none. The host side prepends T (the complex type), P (its part), ADD and MUL (the
// part's rounded add and multiply).

__device__ __forceinline__ bool has_nan(T z) { return z.re != z.re || z.im != z.im; }

extern "C" __global__ void cuda_core_complex_median(const T *sorted, T *out, unsigned long long lines,
                                                    unsigned long long n, int skip_nan) {
    const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    for (unsigned long long r = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; r < lines; r += stride) {
        const T *line = sorted + r * n;
        unsigned long long count = n;
        if (skip_nan) {
            count = count_before_nan(n, [&](unsigned long long i) { return has_nan(line[i]); });
        } else if (has_nan(line[n - 1])) {
            out[r] = line[n - 1];
            continue;
        }
        if (count == 0) {
            out[r] = T((P)__longlong_as_double(0x7ff8000000000000ll), (P)0);
            continue;
        }
        const T a = line[(count - 1) / 2], b = line[count / 2];
        out[r] = count % 2 ? a : T(MUL(ADD(a.re, b.re), (P)0.5), MUL(ADD(a.im, b.im), (P)0.5));
    }
}
