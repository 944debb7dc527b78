// Which sorted numbers the q-th quantile of `count` numbers reads, and how it weighs them, by
// NumPy's `method` (statistics.rs's QuantileMethod::code): the number at rank `low` itself
// (`direct`), or the interpolation from rank `low` to rank `high` by `t` (NumPy's `_lerp`).
// Shared by the sorted read-out (quantile.cuh) and radix select (quantile_select.cuh). The
// virtual index is computed as NumPy writes it, in f64 with rounded operations (never fused).

struct quantile_plan {
    unsigned long long low, high;
    double t;
    bool direct;
};

// Index x clamped into [0, count - 1].
__device__ __forceinline__ unsigned long long quantile_clamp(const double x, const unsigned long long count) {
    return x <= 0.0 ? 0ull : (x >= (double)(count - 1) ? count - 1 : (unsigned long long)x);
}

// method: 0 linear, 1 lower, 2 higher, 3 nearest (ties to even), 4 midpoint, 5 inverted_cdf,
// 6 averaged_inverted_cdf, 7 closest_observation, 8 interpolated_inverted_cdf, 9 hazen,
// 10 weibull, 11 median_unbiased, 12 normal_unbiased. count > 0.
__device__ quantile_plan plan_quantile(const double q, const unsigned long long count, const int method) {
    quantile_plan p;
    p.t = 0.0;
    p.direct = true;
    const double n = (double)count;
    if (method <= 4) {
        const double virtual_index = __dmul_rn(q, (double)(count - 1));
        const double below = floor(virtual_index);
        p.low = p.high = quantile_clamp(below, count);
        if (method == 0) {
            p.high = quantile_clamp(below + 1.0, count);
            p.t = virtual_index - below;
            p.direct = false;
        } else if (method == 2) {
            p.low = p.high = quantile_clamp(ceil(virtual_index), count);
        } else if (method == 3) {
            p.low = p.high = quantile_clamp(rint(virtual_index), count);
        } else if (method == 4) {
            // Weight 0 at an integral index: NumPy still interpolates (NaN beside an infinity).
            p.high = quantile_clamp(below + 1.0, count);
            p.t = virtual_index == below ? 0.0 : 0.5;
            p.direct = false;
        }
        return p;
    }
    if (method == 5 || method == 7) {
        // One number, at the boundary NumPy's discrete methods pick: the index n q - 1
        // (closest_observation: less a half) rounded up, but kept where it is integral
        // (closest_observation: where it is also odd).
        double index = __dsub_rn(__dmul_rn(n, q), 1.0);
        if (method == 7) index = __dsub_rn(index, 0.5);
        const double previous = floor(index);
        bool keep = index == previous;
        if (method == 7) keep = keep && previous - 2.0 * floor(previous / 2.0) == 1.0;
        p.low = p.high = quantile_clamp(keep ? previous : previous + 1.0, count);
        return p;
    }
    // The interpolating methods: the virtual index n q + (alpha + q (1 - alpha - beta)) - 1
    // (averaged_inverted_cdf: n q - 1), its neighbours as NumPy's `_get_indexes` takes them (both
    // the first number below 0, both the last from n - 1 on), the weight from the neighbour's
    // index as NumPy writes it there (0, -1 or the floor).
    double virtual_index;
    if (method == 6) {
        virtual_index = __dsub_rn(__dmul_rn(n, q), 1.0);
    } else {
        const double alpha = method == 9 ? 0.5 : method == 11 ? 1.0 / 3.0 : method == 12 ? 3.0 / 8.0 : 0.0;
        const double beta = method == 8 ? 1.0 : method == 10 ? 0.0 : alpha;
        const double spread = __dsub_rn(__dsub_rn(1.0, alpha), beta);
        virtual_index = __dsub_rn(__dadd_rn(__dmul_rn(n, q), __dadd_rn(alpha, __dmul_rn(q, spread))), 1.0);
    }
    double previous;
    if (virtual_index < 0.0) {
        p.low = p.high = 0;
        previous = 0.0;
    } else if (virtual_index >= n - 1.0) {
        p.low = p.high = count - 1;
        previous = -1.0;
    } else {
        previous = floor(virtual_index);
        p.low = (unsigned long long)previous;
        p.high = p.low + 1;
    }
    p.t = __dsub_rn(virtual_index, previous);
    // averaged_inverted_cdf: the mean of the neighbours at an integral index, else the higher.
    if (method == 6) p.t = p.t == 0.0 ? 0.5 : 1.0;
    p.direct = false;
    return p;
}
