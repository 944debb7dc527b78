// The quantile read-out of statistics.rs: for each sorted line (NaN last) the quantile q by
// NumPy's method. The host side prepends T (the element as stored), M (the result), C (the
// computing type), READ(i) (line[i] as C) and MUL, ADD, SUB (rounded, never fused, as NumPy
// computes) and quantile_plan.cuh.

// method: NumPy's (plan_quantile's codes). skip_nan: the quantile of the line's numbers (NaN
// when it has none), else NaN for a line holding one.
extern "C" __global__ void cuda_core_quantile(const T *sorted, M *out, unsigned long long lines, unsigned long long n,
                                              double q, int method, int skip_nan) {
    const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    for (unsigned long long r = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; r < lines; r += stride) {
        const T *line = sorted + r * n;
        unsigned long long count = n;
        if (skip_nan) {
            count = count_before_nan(n, [&](unsigned long long i) {
                const C value = READ(i);
                return value != value;
            });
        }
        const C last = count == 0 ? (C)0 : READ(count - 1);
        if (count == 0 || last != last) {
            out[r] = (M)(C)__longlong_as_double(0x7ff8000000000000ll);
            continue;
        }
        const quantile_plan plan = plan_quantile(q, count, method);
        const C a = READ(plan.low);
        C v = a;
        if (!plan.direct) {
            const double t = plan.t;
            const C b = READ(plan.high), diff = SUB(b, a);
            v = t >= 0.5 ? SUB(b, MUL(diff, (C)(1.0 - t))) : ADD(a, MUL(diff, (C)t));
        }
        out[r] = (M)v;
    }
}
