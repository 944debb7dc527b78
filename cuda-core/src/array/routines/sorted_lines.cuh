// Device helpers of the read-outs of sorted lines (quantile.cuh, complex_median.cuh), which the
// host side places after its typedefs.

// How many values of a line of n, sorted with its NaN values last, come before the first one
// that is_nan(i) (position i of the line) holds for: by bisection.
template <typename IsNan>
__device__ __forceinline__ unsigned long long count_before_nan(unsigned long long n, IsNan is_nan) {
    unsigned long long low = 0, high = n;
    while (low < high) {
        const unsigned long long middle = low + (high - low) / 2;
        if (is_nan(middle)) high = middle;
        else low = middle + 1;
    }
    return low;
}
