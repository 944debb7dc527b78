// The order-preserving map of sort keys to unsigned bits (sort.rs, search.rs). The host side
// defines K (the key), U (its bits, same size), KEY_BITS(k) (the bits of a key), KIND (0 unsigned or bool, 1 signed, 2 float),
// INF_BITS (a float's +inf, as bits) and DESCENDING before this.

// The key's bits, mapped so that unsigned order is NumPy's order: integers by value; floats by
// value with -0.0 equal to 0.0 and every NaN after +inf (all NaN equal, so they keep their input
// order). DESCENDING flips every bit: the exact reverse (NaN first), ties still stable.
__device__ __forceinline__ U key_bits(K key) {
    U b = KEY_BITS(key);
    const U sign = (U)((U)1 << (sizeof(U) * 8 - 1));
#if KIND == 1
    b = (U)(b ^ sign);
#elif KIND == 2
    const U magnitude = (U)(b & (U)~sign);
    if (magnitude > (U)INF_BITS) {
        b = (U)~(U)0;
    } else {
        if (magnitude == 0) b = 0;
        b = (b & sign) ? (U)~b : (U)(b | sign);
    }
#endif
#if DESCENDING
    b = (U)~b;
#endif
    return b;
}
