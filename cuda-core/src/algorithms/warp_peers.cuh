// The lanes of the warp holding the same small value as this lane (below 2^BITS), as
// __match_any_sync would give, from one ballot per value bit (sort.cuh, quantile_select.cuh).
// match.any's cost grows with the number of distinct values in the warp (on an H200, the radix
// sort of 2^28 uniform i32 keys took 24.2 ms against 19.9 ms for f32 in [0, 1), whose top digit
// is nearly constant); BITS ballots cost the same on every input. Every lane of the warp calls
// it, converged.
template <int BITS> __device__ __forceinline__ unsigned warp_peers(unsigned value) {
    unsigned peers = 0xffffffffu;
#pragma unroll
    for (int bit = 0; bit < BITS; ++bit) {
        const bool set = ((value >> bit) & 1u) != 0;
        const unsigned lanes_set = __ballot_sync(0xffffffffu, set);
        peers &= set ? lanes_set : ~lanes_set;
    }
    return peers;
}
