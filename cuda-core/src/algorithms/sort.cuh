// The radix sort of cuda-core's algorithms (sort.rs): an LSD radix sort over 8-bit digits, stable,
// in three kernels per pass (digit counts per block, one scan of the counts, a stable scatter),
// each pass of the key's bytes skipped on the device where every key has the same byte there,
// plus the helpers of argsort, row sorts and segmented sorts. Each block of a pass owns one
// contiguous range; the scatter moves it in tiles of up to 4096 elements (16 a thread, 8 with
// 16-byte keys or payloads), each warp ranking its own part of the tile with a row of digit
// counters of its own, and writes each tile's elements digit by digit from shared memory (see
// scatter_tiles). The host side prepends keys.cuh (with what it needs), warp_peers.cuh, the
// typedefs O (offsets) and I (flat indices: unsigned up to 2^32 - 1 elements, unsigned long
// long beyond), V (the payload, when PAIRS), and the constants SORT_BLOCKS_PER_SM (the resident
// blocks per SM the grid is sized to), PAIRS and INDICES (the payload is the keys' flat
// indices, V being I).
#define SORT_BLOCK 256
#define SORT_WARPS (SORT_BLOCK / 32)
#define SCAN_BLOCK 1024
#define SCAN_ITEMS 8

// The buffers a pass reads and writes: the sort's input (only pass 0 reads it), the scratch
// buffer, the staging buffer (the output, or a second scratch where the output is not wanted)
// and the output (written by the last pass that runs).
#define BUFFER_IN 0
#define BUFFER_ALTERNATE 1
#define BUFFER_STAGING 2
#define BUFFER_OUT 3

// A key's bits as two 64-bit words (lo, hi).
__device__ __forceinline__ void key_words(cuda_core_key128 b, unsigned long long &lo, unsigned long long &hi) {
    lo = b.lo;
    hi = b.hi;
}
template <typename B> __device__ __forceinline__ void key_words(B b, unsigned long long &lo, unsigned long long &hi) {
    lo = (unsigned long long)b;
    hi = 0ull;
}

// Which of the key passes 1..key_passes-1 (pass j takes the key's byte j) are skipped: bit j set
// where every key has the same byte j. span (null: none skipped) holds what the first pass's
// count kernel saw: the OR of every key's bits (words lo, hi) and the OR of their complements
// (words 2 and 3); a bit that is set in both varies. Pass 0 never is skipped.
__device__ __forceinline__ unsigned skipped_passes(const unsigned long long *span, unsigned key_passes) {
    if (!span) return 0u;
    const unsigned long long varying_lo = span[0] & span[2], varying_hi = span[1] & span[3];
    unsigned skipped = 0u;
    for (unsigned j = 1; j < key_passes; ++j) {
        const unsigned long long word = j < 8 ? varying_lo : varying_hi;
        if (((word >> (8u * (j & 7u))) & 255ull) == 0ull) skipped |= 1u << j;
    }
    return skipped;
}

// What pass `pass` of `passes` does: whether it runs, and which buffers it reads and writes.
// Passes that run alternate so that the last of them writes the output: one with `after`
// passes to run after it writes the output (after = 0), the scratch (odd) or the staging buffer
// (even), and reads what the one before it wrote (the input for pass 0).
struct pass_plan {
    bool run;
    unsigned src, dst;
};
__device__ __forceinline__ pass_plan plan_pass(const unsigned long long *span, unsigned pass, unsigned passes,
                                               unsigned key_passes) {
    const unsigned skipped = skipped_passes(span, key_passes);
    const unsigned after = passes - 1u - pass - (unsigned)__popc(skipped >> (pass + 1u));
    pass_plan plan;
    plan.run = ((skipped >> pass) & 1u) == 0u;
    plan.dst = after == 0u ? BUFFER_OUT : ((after & 1u) ? BUFFER_ALTERNATE : BUFFER_STAGING);
    plan.src = pass == 0u ? BUFFER_IN : (((after + 1u) & 1u) ? BUFFER_ALTERNATE : BUFFER_STAGING);
    return plan;
}

// The buffer `which` of a pass's candidates.
template <typename T>
__device__ __forceinline__ const T *source_of(unsigned which, const T *in, const T *alternate, const T *staging) {
    return which == BUFFER_IN ? in : (which == BUFFER_ALTERNATE ? alternate : staging);
}
template <typename T> __device__ __forceinline__ T *destination_of(unsigned which, T *alternate, T *staging, T *out) {
    return which == BUFFER_OUT ? out : (which == BUFFER_ALTERNATE ? alternate : staging);
}

// The digit of element i for a pass: mode 0 the key's 8 bits from `shift`; mode 1 whether the
// key differs from its predecessor (0) or equals it (1) by unique_bits, for unique; mode 2 the 8
// bits from `shift` of the row of the flat index rows[i] (rows of `row_len`), for row sorts;
// mode 3 the 8 bits from `shift` of labels[rows[i]] (the index clamped below n), for segmented
// sorts. In modes 2 and 3 row_len and every index are below n, so they fit I.
__device__ __forceinline__ unsigned digit_of(const K *keys, const I *rows, const I *labels, unsigned long long i,
                                             unsigned long long n, int mode, unsigned shift,
                                             unsigned long long row_len) {
    if (mode == 0) return key_digit(key_bits(keys[i]), shift);
    if (mode == 1) return (i == 0 || unique_bits(keys[i]) != unique_bits(keys[i - 1])) ? 0u : 1u;
    if (mode == 2) return (unsigned)(((rows[i] / (I)row_len) >> shift) & 255u);
    const I at = rows[i];
    return (unsigned)((labels[at < n ? at : n - 1] >> shift) & 255u);
}

// The lanes of the warp whose digit equals this lane's (digits below 512: 0..255, or 256 for
// no element). Every lane of the warp calls it, converged.
__device__ __forceinline__ unsigned digit_peers(unsigned digit) { return warp_peers<9>(digit); }

// Elements a thread reads per round of the count kernel, all loaded before any is counted.
constexpr int COUNT_ITEMS = sizeof(K) > 8 ? 8 : 16;

// counts[d * gridDim.x + b] = how many elements of block b's range of the pass's source have
// digit d. Block b's range is [b * per_block, min(n, (b + 1) * per_block)). The source is
// keys_in for pass 0, else keys_alternate or keys_staging as plan_pass says (rows likewise, the
// payload of flat indices, read by row and segment passes). A skipped pass returns at once. The
// first pass (pass 0, mode 0) with a span ORs every key's bits and their complements into it
// (zeroed before it).
extern "C" __global__ void __launch_bounds__(SORT_BLOCK) cuda_core_sort_upsweep(
    const K *keys_in, const K *keys_alternate, const K *keys_staging, const I *rows_alternate, const I *rows_staging,
    const I *labels, O *counts, unsigned long long *span, unsigned pass, unsigned passes, unsigned key_passes,
    unsigned long long n, unsigned long long per_block, int mode, unsigned shift, unsigned long long row_len) {
    const K *keys = keys_in;
    const I *rows = nullptr;
    if (pass > 0u) {
        const pass_plan plan = plan_pass(span, pass, passes, key_passes);
        if (!plan.run) return;
        keys = source_of(plan.src, keys_in, keys_alternate, keys_staging);
        rows = source_of<I>(plan.src, nullptr, rows_alternate, rows_staging);
    }
    const bool note_span = span && pass == 0u && mode == 0;
    __shared__ O bins[256];
    // The block's OR of the keys' bits (lo, hi) and of their complements.
    __shared__ unsigned long long block_span[4];
    bins[threadIdx.x] = 0;
    if (threadIdx.x < 4) block_span[threadIdx.x] = 0ull;
    __syncthreads();
    unsigned long long seen[4] = {0ull, 0ull, 0ull, 0ull};
    const unsigned long long start = (unsigned long long)blockIdx.x * per_block;
    const unsigned long long end = n - start < per_block ? n : start + per_block;
    const unsigned lower_lanes = (1u << (threadIdx.x & 31u)) - 1u;
    // COUNT_ITEMS elements a thread per round, all read before any is counted, so that each
    // thread has that many loads in flight. Lanes with the same digit add once (sorted or
    // few-valued input would otherwise queue on one shared counter); the loop is uniform so that
    // every lane takes part in the ballots.
    for (unsigned long long base = start; base < end; base += SORT_BLOCK * COUNT_ITEMS) {
        unsigned digit[COUNT_ITEMS];
#pragma unroll
        for (int j = 0; j < COUNT_ITEMS; ++j) {
            const unsigned long long i = base + j * SORT_BLOCK + threadIdx.x;
            if (i >= end) {
                digit[j] = 256u;
            } else if (mode == 0) {
                const U b = key_bits(keys[i]);
                digit[j] = key_digit(b, shift);
                unsigned long long lo, hi, not_lo, not_hi;
                key_words(b, lo, hi);
                key_words((U)~b, not_lo, not_hi);
                seen[0] |= lo;
                seen[1] |= hi;
                seen[2] |= not_lo;
                seen[3] |= not_hi;
            } else {
                digit[j] = digit_of(keys, rows, labels, i, n, mode, shift, row_len);
            }
        }
#pragma unroll
        for (int j = 0; j < COUNT_ITEMS; ++j) {
            const unsigned peers = digit_peers(digit[j]);
            if (digit[j] < 256u && (peers & lower_lanes) == 0) atomicAdd(&bins[digit[j]], (O)__popc(peers));
        }
    }
    if (note_span) {
#pragma unroll
        for (int w = 0; w < 4; ++w) {
#pragma unroll
            for (int offset = 16; offset > 0; offset >>= 1) seen[w] |= __shfl_xor_sync(0xffffffffu, seen[w], offset);
            if ((threadIdx.x & 31u) == 0 && seen[w]) atomicOr(&block_span[w], seen[w]);
        }
    }
    __syncthreads();
    counts[(unsigned long long)threadIdx.x * gridDim.x + blockIdx.x] = bins[threadIdx.x];
    if (note_span && threadIdx.x < 4 && block_span[threadIdx.x]) atomicOr(&span[threadIdx.x], block_span[threadIdx.x]);
}

// The exclusive prefix sum of counts[0..m], in place, by one block of SCAN_BLOCK threads;
// nothing where pass `pass` is skipped (see skipped_passes).
extern "C" __global__ void __launch_bounds__(SCAN_BLOCK) cuda_core_sort_scan(O *counts, unsigned long long m,
                                                                             const unsigned long long *span,
                                                                             unsigned pass, unsigned key_passes) {
    if (pass > 0u && ((skipped_passes(span, key_passes) >> pass) & 1u)) return;
    __shared__ O warp_sums[SCAN_BLOCK / 32];
    const unsigned lane = threadIdx.x & 31u, warp = threadIdx.x >> 5;
    O carry = 0;
    for (unsigned long long base = 0; base < m; base += SCAN_BLOCK * SCAN_ITEMS) {
        O local[SCAN_ITEMS];
        O sum = 0;
        const unsigned long long first = base + (unsigned long long)threadIdx.x * SCAN_ITEMS;
#pragma unroll
        for (int j = 0; j < SCAN_ITEMS; ++j) {
            local[j] = first + j < m ? counts[first + j] : (O)0;
            sum += local[j];
        }
        O x = sum;
#pragma unroll
        for (int offset = 1; offset < 32; offset <<= 1) {
            const O y = __shfl_up_sync(0xffffffffu, x, offset);
            if (lane >= (unsigned)offset) x += y;
        }
        if (lane == 31) warp_sums[warp] = x;
        __syncthreads();
        if (warp == 0) {
            O w = warp_sums[lane];
#pragma unroll
            for (int offset = 1; offset < 32; offset <<= 1) {
                const O y = __shfl_up_sync(0xffffffffu, w, offset);
                if (lane >= (unsigned)offset) w += y;
            }
            warp_sums[lane] = w;
        }
        __syncthreads();
        O prefix = carry + (warp > 0 ? warp_sums[warp - 1] : (O)0) + x - sum;
#pragma unroll
        for (int j = 0; j < SCAN_ITEMS; ++j) {
            if (first + j < m) counts[first + j] = prefix;
            prefix += local[j];
        }
        carry += warp_sums[SCAN_BLOCK / 32 - 1];
        // warp_sums is written again in the next round.
        __syncthreads();
    }
}

#if PAIRS
// The payload of element i: values_in[i], or for a sort carrying flat indices, i itself where
// values_in is null (its first pass generates them).
__device__ __forceinline__ V payload_in(const V *values_in, unsigned long long i) {
#if INDICES
    return values_in ? values_in[i] : (V)i;
#else
    return values_in[i];
#endif
}

// Writes payload v to out[at] as carried.
__device__ __forceinline__ void store_payload(V *out, O at, V v, unsigned long long) { out[at] = v; }
#if INDICES
// Writes flat index v to out[at] as an i64: within its row of `row_len` elements, or as it is
// where row_len is 0.
__device__ __forceinline__ void store_payload(long long *out, O at, V v, unsigned long long row_len) {
    out[at] = (long long)(row_len != 0 ? v % (V)row_len : v);
}
#endif
#endif

// The stable scatter of one pass. Block b moves its range in tiles of SORT_TILE elements, warp
// w owning the tile's elements [w * SORT_ITEMS * 32, (w + 1) * SORT_ITEMS * 32): its item j at
// lane l is element w * SORT_ITEMS * 32 + j * 32 + l, so each item's loads are coalesced and
// index order is (warp, item, lane). Ranking: each warp counts its digits in a row of shared
// counters of its own, item after item; the lanes with equal digits (a match of the digits) take
// the count their lowest lane reads and adds to, each ranked by the peers below it. Then thread
// d turns digit d's counts into exclusive prefixes over the warps, the digits' tile totals are
// scanned, and the tile is staged in shared memory in digit order, at the digit's start in the
// tile plus its warp's prefix plus the rank: stable. It is written out from the stage (the keys,
// then, PAIRS, the payloads through the same buffer): consecutive threads write consecutive
// positions of a digit's run, at offsets[d * gridDim.x + b] (the scanned counts) plus what the
// block's earlier tiles wrote of that digit. A tile takes three barriers (five with a payload).
// A null keys_out (PAIRS: or values_out) is not written: the last pass of a sort that wants
// only the payload (or only the keys). W is the payload's type as written (V, or long long for
// flat indices written as i64; unused without PAIRS).
//
// Items per thread: as many as keep the stage, the staged digits and the counters within the
// 48 KiB of static shared memory: at most 42 KiB with 16 items of up to 8-byte keys and
// payloads (4096 elements) or 8 items of 16-byte ones (2048), wide offsets included.
#if PAIRS
constexpr unsigned SORT_STAGE_BYTES = sizeof(K) > sizeof(V) ? sizeof(K) : sizeof(V);
#else
constexpr unsigned SORT_STAGE_BYTES = sizeof(K);
#endif
constexpr int SORT_ITEMS = SORT_STAGE_BYTES > 8 ? 8 : 16;
constexpr unsigned SORT_TILE = SORT_BLOCK * SORT_ITEMS;
template <typename W>
__device__ __forceinline__ void scatter_tiles(const K *keys_in, K *keys_out,
#if PAIRS
                                              const V *values_in, W *values_out, unsigned long long index_row_len,
#endif
                                              const I *rows, const I *labels, const O *offsets, unsigned long long n,
                                              unsigned long long per_block, int mode, unsigned shift,
                                              unsigned long long row_len) {
    // warp_counts[w][d]: warp w's elements with digit d so far; then where they start in the
    // tile: the digit's start within its group of 32 digits plus the earlier warps' counts.
    __shared__ unsigned short warp_counts[SORT_WARPS][256];
    // The digit totals of each group of 32 digits (one warp of threads).
    __shared__ unsigned group_totals[SORT_WARPS];
    // The block's next output position of digit d less where its run starts in the staged tile.
    __shared__ O delta[256];
    // The stage holds the tile's keys, then (PAIRS) its values: one buffer of the larger.
    __shared__ __align__(16) unsigned char stage[SORT_TILE * SORT_STAGE_BYTES];
    K *staged_keys = (K *)stage;
#if PAIRS
    V *staged_values = (V *)stage;
#endif
    __shared__ unsigned char staged_digit[SORT_TILE];
    const unsigned lane = threadIdx.x & 31u, warp = threadIdx.x >> 5;
    const unsigned lower_lanes = (1u << lane) - 1u;
    const unsigned first = warp * SORT_ITEMS * 32u + lane;
    // The block's next output position of digit threadIdx.x.
    O running = offsets[(unsigned long long)threadIdx.x * gridDim.x + blockIdx.x];
    const unsigned long long start = (unsigned long long)blockIdx.x * per_block;
    const unsigned long long end = n - start < per_block ? n : start + per_block;
    // No barrier ends a tile: the counter rows and group_totals, which the next tile writes
    // before its second barrier, are read by this one only before its third; the stage, the
    // staged digits and delta, read to the tile's end, are written after the next one's second.
    for (unsigned long long base = start; base < end; base += SORT_TILE) {
        const unsigned tile_len = end - base < SORT_TILE ? (unsigned)(end - base) : SORT_TILE;
        // The warp's row of 256 two-byte counters, zeroed as 128 words: four a lane.
        unsigned *row = (unsigned *)&warp_counts[warp][0];
#pragma unroll
        for (int c = 0; c < 256 / 2 / 32; ++c) row[c * 32 + lane] = 0u;
        // This thread's items j < items are elements of the range, the first at `at`.
        const unsigned items = tile_len > first ? (tile_len - first + 31u) / 32u : 0u;
        const unsigned long long at = base + first;
        K key[SORT_ITEMS];
        // Per item: the digit (256: no element) in the low half, the rank in the warp above;
        // after staging, the staged position (~0u: none).
        unsigned placed[SORT_ITEMS];
#pragma unroll
        for (int j = 0; j < SORT_ITEMS; ++j) {
            if ((unsigned)j < items) key[j] = keys_in[at + j * 32];
        }
#pragma unroll
        for (int j = 0; j < SORT_ITEMS; ++j) {
            if ((unsigned)j >= items) {
                placed[j] = 256u;
            } else if (mode == 0) {
                placed[j] = key_digit(key_bits(key[j]), shift);
            } else {
                placed[j] = digit_of(keys_in, rows, labels, at + j * 32, n, mode, shift, row_len);
            }
        }
        // The row's zeros before its first count.
        __syncwarp();
#pragma unroll
        for (int j = 0; j < SORT_ITEMS; ++j) {
            const unsigned digit = placed[j];
            const unsigned peers = digit_peers(digit);
            const int leader = __ffs(peers) - 1;
            unsigned count = 0u;
            if (digit < 256u && (int)lane == leader) {
                count = warp_counts[warp][digit];
                warp_counts[warp][digit] = (unsigned short)(count + __popc(peers));
            }
            count = __shfl_sync(0xffffffffu, count, leader);
            placed[j] = digit | ((count + __popc(peers & lower_lanes)) << 16);
            // The next item's leader reads what this one's stored.
            __syncwarp();
        }
        __syncthreads();
        // Thread d: digit d's exclusive prefixes over the warps, and its tile total.
        unsigned short count[SORT_WARPS];
        unsigned total = 0;
#pragma unroll
        for (int w = 0; w < SORT_WARPS; ++w) {
            count[w] = warp_counts[w][threadIdx.x];
            total += count[w];
        }
        // The exclusive scan of the totals within each group of 32 digits, folded into the
        // prefixes; the groups' totals are added after the barrier.
        unsigned inclusive = total;
#pragma unroll
        for (int offset = 1; offset < 32; offset <<= 1) {
            const unsigned y = __shfl_up_sync(0xffffffffu, inclusive, offset);
            if (lane >= (unsigned)offset) inclusive += y;
        }
        unsigned prefix = inclusive - total;
#pragma unroll
        for (int w = 0; w < SORT_WARPS; ++w) {
            warp_counts[w][threadIdx.x] = (unsigned short)prefix;
            prefix += count[w];
        }
        if (lane == 31) group_totals[warp] = inclusive;
        __syncthreads();
        // Lane g < SORT_WARPS: where digit group g starts in the tile.
        const unsigned group_total = lane < SORT_WARPS ? group_totals[lane] : 0u;
        unsigned group_start = group_total;
#pragma unroll
        for (int offset = 1; offset < SORT_WARPS; offset <<= 1) {
            const unsigned y = __shfl_up_sync(0xffffffffu, group_start, offset);
            if (lane >= (unsigned)offset) group_start += y;
        }
        group_start -= group_total;
        const unsigned tile_start = __shfl_sync(0xffffffffu, group_start, warp) + inclusive - total;
        delta[threadIdx.x] = running - (O)tile_start;
        running += (O)total;
        // Staged in digit order.
#pragma unroll
        for (int j = 0; j < SORT_ITEMS; ++j) {
            const unsigned digit = placed[j] & 0xffffu;
            const unsigned group = __shfl_sync(0xffffffffu, group_start, (digit >> 5) & (SORT_WARPS - 1));
            if (digit < 256u) {
                const unsigned to = group + warp_counts[warp][digit] + (placed[j] >> 16);
                if (keys_out) staged_keys[to] = key[j];
                staged_digit[to] = (unsigned char)digit;
                placed[j] = to;
            } else {
                placed[j] = ~0u;
            }
        }
        __syncthreads();
        // Written out from the stage: consecutive threads, consecutive positions of a run.
        if (keys_out) {
            for (unsigned s = threadIdx.x; s < tile_len; s += SORT_BLOCK) {
                keys_out[delta[staged_digit[s]] + (O)s] = staged_keys[s];
            }
        }
#if PAIRS
        // The values through the same stage, once every key has left it.
        if (values_out) {
            V value[SORT_ITEMS];
#pragma unroll
            for (int j = 0; j < SORT_ITEMS; ++j) {
                if (placed[j] != ~0u) value[j] = payload_in(values_in, at + j * 32);
            }
            __syncthreads();
#pragma unroll
            for (int j = 0; j < SORT_ITEMS; ++j) {
                if (placed[j] != ~0u) staged_values[placed[j]] = value[j];
            }
            __syncthreads();
            for (unsigned s = threadIdx.x; s < tile_len; s += SORT_BLOCK) {
                store_payload(values_out, delta[staged_digit[s]] + (O)s, staged_values[s], index_row_len);
            }
        }
#endif
    }
}

// The scatter of a pass, from and to the buffers plan_pass says, the payload (PAIRS) written as
// carried; nothing where the pass is skipped, or where it is the last to run and defer_last is
// set (cuda_core_sort_scatter_indices writes that one).
extern "C" __global__ void __launch_bounds__(SORT_BLOCK, SORT_BLOCKS_PER_SM) cuda_core_sort_scatter(
    const K *keys_in, K *keys_alternate, K *keys_staging, K *keys_out,
#if PAIRS
    const V *values_in, V *values_alternate, V *values_staging, V *values_out,
#endif
    const I *labels, const O *offsets, const unsigned long long *span, unsigned pass, unsigned passes,
    unsigned key_passes, int defer_last, unsigned long long n, unsigned long long per_block, int mode, unsigned shift,
    unsigned long long row_len) {
    const pass_plan plan = plan_pass(span, pass, passes, key_passes);
    if (!plan.run || (defer_last && plan.dst == BUFFER_OUT)) return;
    const K *keys_src = source_of<K>(plan.src, keys_in, keys_alternate, keys_staging);
    K *keys_dst = destination_of(plan.dst, keys_alternate, keys_staging, keys_out);
#if PAIRS
    const V *values_src = source_of<V>(plan.src, values_in, values_alternate, values_staging);
    V *values_dst = destination_of(plan.dst, values_alternate, values_staging, values_out);
    // The flat indices a row or segment pass reads (V is I there).
    const I *rows = (const I *)values_src;
    scatter_tiles<V>(keys_src, keys_dst, values_src, values_dst, 0ull, rows, labels, offsets, n, per_block, mode, shift,
                     row_len);
#else
    scatter_tiles<void>(keys_src, keys_dst, nullptr, labels, offsets, n, per_block, mode, shift, row_len);
#endif
}

#if INDICES
// The scatter of the last pass that runs of a sort carrying flat indices, writing them to
// indices_out as i64: within their row of index_row_len elements, or flat where index_row_len
// is 0. Nothing where the pass is skipped or another runs after it.
extern "C" __global__ void __launch_bounds__(SORT_BLOCK, SORT_BLOCKS_PER_SM) cuda_core_sort_scatter_indices(
    const K *keys_in, K *keys_alternate, K *keys_staging, K *keys_out, const V *values_in, V *values_alternate,
    V *values_staging, long long *indices_out, unsigned long long index_row_len, const I *labels, const O *offsets,
    const unsigned long long *span, unsigned pass, unsigned passes, unsigned key_passes, unsigned long long n,
    unsigned long long per_block, int mode, unsigned shift, unsigned long long row_len) {
    const pass_plan plan = plan_pass(span, pass, passes, key_passes);
    if (!plan.run || plan.dst != BUFFER_OUT) return;
    const V *values_src = source_of<V>(plan.src, values_in, values_alternate, values_staging);
    scatter_tiles<long long>(source_of<K>(plan.src, keys_in, keys_alternate, keys_staging), keys_out, values_src,
                             indices_out, index_row_len, (const I *)values_src, labels, offsets, n, per_block, mode,
                             shift, row_len);
}
#endif

// out[i] = i: the labels of a segmented sort before its segments are marked.
extern "C" __global__ void cuda_core_sort_iota(I *out, unsigned long long n) {
    const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        out[i] = (I)i;
    }
}

// labels[i] = the least begin offset of the segments holding i, or i where none does (the caller
// fills labels with 0..n first): segment s is [begins[s], ends[s]) clamped into [0, n), empty
// when its end is not after its begin. Blocks (x, y) share segments x, x + gridDim.x, ...: block
// y covers the y-th of gridDim.y chunks of each. atomicMin makes overlapping segments defined.
extern "C" __global__ void cuda_core_sort_label_segments(I *labels, const long long *begins,
                                                          const long long *ends, unsigned long long segments,
                                                          unsigned long long n) {
    for (unsigned long long s = blockIdx.x; s < segments; s += gridDim.x) {
        const long long b = begins[s], e = ends[s];
        const unsigned long long begin = b < 0 ? 0ull : ((unsigned long long)b > n ? n : (unsigned long long)b);
        const unsigned long long end = e < 0 ? 0ull : ((unsigned long long)e > n ? n : (unsigned long long)e);
        if (end <= begin) continue;
        const unsigned long long chunk = (end - begin + gridDim.y - 1) / gridDim.y;
        const unsigned long long first = begin + blockIdx.y * chunk;
        if (first >= end) continue;
        const unsigned long long last = end - first < chunk ? end : first + chunk;
        for (unsigned long long i = first + threadIdx.x; i < last; i += blockDim.x) atomicMin(&labels[i], (I)begin);
    }
}

// out[i] = in[from] for from = perm[i] clamped below n, elements of `bytes` bytes (1, 2, 4, 8 or
// 16, the last as two 8-byte words): a payload moved by a permutation.
extern "C" __global__ void cuda_core_sort_gather(const void *in, void *out, const I *perm,
                                                 unsigned long long n, unsigned bytes) {
    const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        const unsigned long long p = perm[i], from = p < n ? p : n - 1;
        switch (bytes) {
        case 1: ((unsigned char *)out)[i] = ((const unsigned char *)in)[from]; break;
        case 2: ((unsigned short *)out)[i] = ((const unsigned short *)in)[from]; break;
        case 4: ((unsigned *)out)[i] = ((const unsigned *)in)[from]; break;
        case 8: ((unsigned long long *)out)[i] = ((const unsigned long long *)in)[from]; break;
        default:
            ((unsigned long long *)out)[2 * i] = ((const unsigned long long *)in)[2 * from];
            ((unsigned long long *)out)[2 * i + 1] = ((const unsigned long long *)in)[2 * from + 1];
        }
    }
}

// Sorts each of `rows` rows of `row_len` keys (row_len <= ROW_SORT_MAX) inside one block: a
// bitonic network over (key_bits, position in the row) pairs in shared memory, padded to
// `padded` (a power of two) with pairs after every real one, so equal keys keep their order.
// Writes the sorted keys (when keys_out is not null) and the positions within the row (when
// indices_out is not null).
#define ROW_SORT_MAX 2048
#define ROW_SORT_BLOCK 512
extern "C" __global__ void __launch_bounds__(ROW_SORT_BLOCK) cuda_core_sort_rows_block(
    const K *keys, K *keys_out, long long *indices_out, unsigned long long rows, unsigned row_len, unsigned padded) {
    __shared__ U bits[ROW_SORT_MAX];
    __shared__ unsigned position[ROW_SORT_MAX];
    for (unsigned long long row = blockIdx.x; row < rows; row += gridDim.x) {
        const K *line = keys + row * row_len;
        for (unsigned i = threadIdx.x; i < padded; i += ROW_SORT_BLOCK) {
            bits[i] = i < row_len ? key_bits(line[i]) : key_max();
            position[i] = i;
        }
        __syncthreads();
        for (unsigned k = 2; k <= padded; k <<= 1) {
            for (unsigned j = k >> 1; j > 0; j >>= 1) {
                // Pair q of the padded / 2 is (i, i + j), i the q-th index with bit j clear:
                // every thread has a pair, none idles on an index that is a partner.
                for (unsigned q = threadIdx.x; q < padded / 2; q += ROW_SORT_BLOCK) {
                    const unsigned i = ((q & ~(j - 1)) << 1) | (q & (j - 1));
                    const unsigned partner = i | j;
                    const U a = bits[i], b = bits[partner];
                    const unsigned pa = position[i], pb = position[partner];
                    const bool after = a > b || (a == b && pa > pb);
                    // Ascending where bit k of i is clear, descending where it is set.
                    if (((i & k) == 0) == after) {
                        bits[i] = b;
                        bits[partner] = a;
                        position[i] = pb;
                        position[partner] = pa;
                    }
                }
                __syncthreads();
            }
        }
        for (unsigned i = threadIdx.x; i < row_len; i += ROW_SORT_BLOCK) {
            const unsigned from = position[i];
            if (keys_out) keys_out[row * row_len + i] = line[from];
            if (indices_out) indices_out[row * row_len + i] = (long long)from;
        }
        // The next row overwrites the shared arrays.
        __syncthreads();
    }
}
