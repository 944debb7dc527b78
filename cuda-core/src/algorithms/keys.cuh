// The order-preserving map of sort keys to unsigned bits (sort.rs, search.rs). The host side
// defines K (the key), U (its bits), KIND (0 unsigned or bool, 1 signed, 2 float, 3 complex) and
// DESCENDING before this; for KIND < 3, KEY_BITS(k) (the bits of a key, U of the key's size) and
// INF_BITS (a float's +inf, as bits); for KIND 3, C (the bits of one part), INF_BITS (a part's
// +inf) and WIDE_KEY (U is the two-word struct cuda_core_key128 below, else a 64-bit integer).

// Two 64-bit words compared as one 128-bit unsigned integer (hi first): the bits of a complex128
// key, without __int128 (which NVRTC only takes behind a flag, on Linux).
struct cuda_core_key128 {
    unsigned long long hi, lo;
};
__device__ __forceinline__ bool operator==(cuda_core_key128 a, cuda_core_key128 b) { return a.hi == b.hi && a.lo == b.lo; }
__device__ __forceinline__ bool operator!=(cuda_core_key128 a, cuda_core_key128 b) { return !(a == b); }
__device__ __forceinline__ bool operator<(cuda_core_key128 a, cuda_core_key128 b) {
    return a.hi < b.hi || (a.hi == b.hi && a.lo < b.lo);
}
__device__ __forceinline__ bool operator>(cuda_core_key128 a, cuda_core_key128 b) { return b < a; }
__device__ __forceinline__ bool operator<=(cuda_core_key128 a, cuda_core_key128 b) { return !(b < a); }
__device__ __forceinline__ cuda_core_key128 operator~(cuda_core_key128 a) {
    cuda_core_key128 r = {~a.hi, ~a.lo};
    return r;
}
// The 8 bits of a key's bits from `shift`.
__device__ __forceinline__ unsigned key_digit(cuda_core_key128 b, unsigned shift) {
    return (unsigned)((shift < 64 ? b.lo >> shift : b.hi >> (shift - 64)) & 255u);
}
template <typename B> __device__ __forceinline__ unsigned key_digit(B b, unsigned shift) {
    return (unsigned)((b >> shift) & 255u);
}

// Bits of zero.
__device__ __forceinline__ U key_zero() {
#if WIDE_KEY
    U r = {0ull, 0ull};
    return r;
#else
    return (U)0;
#endif
}

// A float's bits (unsigned B) mapped so that unsigned order is its order: -0.0 equal to 0.0,
// every NaN the largest value, all-ones (no other value maps there: +inf maps below it).
template <typename B> __device__ __forceinline__ B float_order(B b, B inf) {
    const B sign = (B)((B)1 << (sizeof(B) * 8 - 1));
    const B magnitude = (B)(b & (B)~sign);
    if (magnitude > inf) return (B)~(B)0;
    if (magnitude == 0) b = 0;
    return (b & sign) ? (B)~b : (B)(b | sign);
}

#if KIND == 3
// Complex keys in NumPy's order: by real part, then imaginary part, among values without NaN;
// then R + nanj by real part, nan + Rj by imaginary part, and nan + nanj (all equal). As two
// words (hi, lo) of part bits, each part by float_order (which leaves all-ones for NaN alone):
// (re, im) without NaN; (~0 - 1, re) for R + nanj; (~0, im) for nan + Rj; (~0, ~0) for both NaN.
__device__ __forceinline__ U key_pair(C hi, C lo) {
#if WIDE_KEY
    U r = {hi, lo};
    return r;
#else
    return ((U)hi << (sizeof(C) * 8)) | (U)lo;
#endif
}
__device__ __forceinline__ C part_bits(float x) { return __float_as_uint(x); }
__device__ __forceinline__ C part_bits(double x) { return (C)__double_as_longlong(x); }
__device__ __forceinline__ U ascending_bits(K key) {
    const C nan = (C)~(C)0;
    const C re = float_order<C>(part_bits(key.re), (C)INF_BITS), im = float_order<C>(part_bits(key.im), (C)INF_BITS);
    if (re != nan && im != nan) return key_pair(re, im);
    if (re != nan) return key_pair((C)(nan - 1), re);
    return key_pair(nan, im);
}
// Whether a key holds a NaN (in either part): its high word is one of the two NaN classes'.
__device__ __forceinline__ bool ascending_is_nan(U b) {
#if WIDE_KEY
    return b.hi >= (C)~(C)0 - 1;
#else
    return (C)(b >> (sizeof(C) * 8)) >= (C)~(C)0 - 1;
#endif
}
#else
__device__ __forceinline__ U ascending_bits(K key) {
    U b = KEY_BITS(key);
#if KIND == 1
    b = (U)(b ^ (U)((U)1 << (sizeof(U) * 8 - 1)));
#elif KIND == 2
    b = float_order<U>(b, (U)INF_BITS);
#endif
    return b;
}
// Every NaN already maps to one value, the largest.
__device__ __forceinline__ bool ascending_is_nan(U) { return false; }
#endif

// The key's bits, mapped so that unsigned order is NumPy's order: integers by value; floats by
// value with -0.0 equal to 0.0 and every NaN after +inf (all NaN equal, so they keep their input
// order); complex as above. DESCENDING flips every bit: the exact reverse (NaN first), ties
// still stable.
__device__ __forceinline__ U key_bits(K key) {
    U b = ascending_bits(key);
#if DESCENDING
    b = ~b;
#endif
    return b;
}

// As key_bits, with every key holding a NaN one value (the largest): NumPy's equality in unique
// (equal_nan; complex values with a NaN in either part are one). The NaNs sort last, together,
// so this order agrees with key_bits' on sorted keys.
__device__ __forceinline__ U unique_bits(K key) {
    U b = ascending_bits(key);
    if (ascending_is_nan(b)) b = ~key_zero();
#if DESCENDING
    b = ~b;
#endif
    return b;
}

// The largest bits, after every key's.
__device__ __forceinline__ U key_max() { return ~key_zero(); }
