// The quantile read-out of statistics.rs: for each sorted line (NaN last) the quantile q by
// NumPy's method. The host side prepends T (the element as stored), M (the result), C (the
// computing type), READ(i) (line[i] as C) and MUL, ADD, SUB (rounded, never fused, as NumPy
// computes).

// Index x clamped into [0, count - 1].
__device__ __forceinline__ unsigned long long clamp_index(double x, unsigned long long count) {
    return x <= 0.0 ? 0ull : (x >= (double)(count - 1) ? count - 1 : (unsigned long long)x);
}

// method: 0 linear, 1 lower, 2 higher, 3 nearest (ties to even), 4 midpoint. skip_nan: the
// quantile of the line's numbers (NaN when it has none), else NaN for a line holding one.
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
        const double virtual_index = q * (double)(count - 1);
        const double below = floor(virtual_index);
        unsigned long long low = clamp_index(below, count), high = low;
        double t = 0.0;
        bool direct = true;
        if (method == 0) {
            high = clamp_index(below + 1.0, count);
            t = virtual_index - below;
            direct = false;
        } else if (method == 2) {
            low = high = clamp_index(ceil(virtual_index), count);
        } else if (method == 3) {
            low = high = clamp_index(rint(virtual_index), count);
        } else if (method == 4 && virtual_index != below) {
            high = clamp_index(below + 1.0, count);
            t = 0.5;
            direct = false;
        }
        const C a = READ(low);
        C v = a;
        if (!direct) {
            const C b = READ(high), diff = SUB(b, a);
            v = t >= 0.5 ? SUB(b, MUL(diff, (C)(1.0 - t))) : ADD(a, MUL(diff, (C)t));
        }
        out[r] = (M)v;
    }
}
