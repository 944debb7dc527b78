// The lanes of the warp holding the same small value as this lane (below 2^BITS), as
// __match_any_sync would give, from one ballot per value bit (sort.cuh, quantile_select.cuh).
// match.any's cost grows with the number of distinct values in the warp (on an H200, the radix
// sort of 2^28 uniform i32 keys took 24.2 ms against 19.9 ms for f32 in [0, 1), whose top digit
// is nearly constant); BITS ballots cost the same on every input. Every lane of the warp calls
// it, converged.
//
// Each bit is one statement of PTX: the bit moved to the sign (a sign test, one predicate), its
// ballot, inverted where this lane's bit is clear: the lanes whose bit equals this lane's. Written
// in C++ (a ballot and a select on the bit), ptxas on CUDA 13.0 spent 7 instructions a bit, the
// bit tested twice for want of predicate registers across the unrolled items of a sort tile; this
// takes 5 (shift, sign test, ballot, predicated inversion, and). (A bit test by `and` and
// `setp.ne` instead lets ptxas gather seven bits into the predicates at once, which failed
// register allocation inside the sort's scatter.)
template <int BITS> __device__ __forceinline__ unsigned warp_peers(unsigned value) {
    unsigned peers = 0xffffffffu;
#pragma unroll
    for (int bit = 0; bit < BITS; ++bit) {
        unsigned lanes;
        asm("{.reg .pred p; setp.lt.s32 p, %1, 0; vote.sync.ballot.b32 %0, p, 0xffffffff; @!p not.b32 %0, %0;}"
            : "=r"(lanes)
            : "r"(value << (31 - bit)));
        peers &= lanes;
    }
    return peers;
}
