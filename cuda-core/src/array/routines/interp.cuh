// NumPy's np.interp (interp.rs): each x[i] placed among the len sample points xp (sorted
// ascending, float64) and given the value of the line through its two neighbours' fp, in
// float64 (O double) or complex128 (O the complex type, COMPLEX 1), with NumPy's arithmetic and
// its special cases: a NaN x gives NaN (NaN + 0j); below xp[0] `left`, above xp[len - 1]
// `right` (fp[0] and fp[len - 1] unless given); on a sample point, or at the last, its fp; where
// the line's value is NaN (an infinite fp or slope), the line from the other neighbour, then
// the shared value of two equal neighbours. One sample point: below it `left`, above `right`,
// else (NaN included, as NumPy) fp[0]. The host side prepends O and COMPLEX.

// slope * (x - x0) + y0, rounded as NumPy's C computes it; where NaN, from (x1, y1); where
// still NaN and y0 == y1, y0.
__device__ __forceinline__ double line_part(double slope, double x, double x0, double y0, double x1, double y1) {
    double value = __dadd_rn(__dmul_rn(slope, __dsub_rn(x, x0)), y0);
    if (value != value) {
        value = __dadd_rn(__dmul_rn(slope, __dsub_rn(x, x1)), y1);
        if (value != value && y0 == y1) value = y0;
    }
    return value;
}

#if COMPLEX
// NumPy's complex loop scales each part's difference by 1 / (x1 - x0).
__device__ __forceinline__ O between(double x, double x0, double x1, O y0, O y1) {
    const double inverse = __ddiv_rn(1.0, __dsub_rn(x1, x0));
    return O(line_part(__dmul_rn(__dsub_rn(y1.re, y0.re), inverse), x, x0, y0.re, x1, y1.re),
             line_part(__dmul_rn(__dsub_rn(y1.im, y0.im), inverse), x, x0, y0.im, x1, y1.im));
}
__device__ __forceinline__ O not_a_number(double x) { return O(x, 0.0); }
#else
__device__ __forceinline__ O between(double x, double x0, double x1, O y0, O y1) {
    return line_part(__ddiv_rn(__dsub_rn(y1, y0), __dsub_rn(x1, x0)), x, x0, y0, x1, y1);
}
__device__ __forceinline__ O not_a_number(double x) { return x; }
#endif

extern "C" __global__ void cuda_core_interp(const double *x, const double *xp, const O *fp, O *out,
                                            unsigned long long n, unsigned long long len, O left, O right,
                                            int has_left, int has_right) {
    const O below = has_left ? left : fp[0], above = has_right ? right : fp[len - 1];
    const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        const double v = x[i];
        if (len == 1) {
            out[i] = v < xp[0] ? below : (v > xp[0] ? above : fp[0]);
            continue;
        }
        if (v != v) {
            out[i] = not_a_number(v);
            continue;
        }
        if (v > xp[len - 1]) {
            out[i] = above;
            continue;
        }
        if (v < xp[0]) {
            out[i] = below;
            continue;
        }
        // The first sample point above v: v's interval starts one before it.
        unsigned long long low = 0, high = len;
        while (low < high) {
            const unsigned long long middle = low + (high - low) / 2;
            if (v >= xp[middle]) low = middle + 1;
            else high = middle;
        }
        if (low == 0) {
            out[i] = below;  // only where xp is not sorted (a NaN first): NumPy's -1
            continue;
        }
        const unsigned long long j = low - 1;
        out[i] = (j == len - 1 || xp[j] == v) ? fp[j] : between(v, xp[j], xp[j + 1], fp[j], fp[j + 1]);
    }
}
