// The radix sort of cuda-core's algorithms (sort.rs): an LSD radix sort over 8-bit digits,
// stable, "onesweep": one histogram kernel counts the digits of every pass on the key's bytes in
// one read of the keys, one small kernel turns the counts into where each digit starts and
// finds the passes on bytes that every key has alike (skipped on the device), and each pass is
// then one kernel. A pass's blocks each take the next tile of up to 4096 elements (16 a thread; 20
// in long sorts of up to 4-byte keys and payloads, 8 with 16-byte ones) from a counter, rank its
// elements (each warp its own part, with a row of digit counters of its own), learn where each
// digit of the tile goes from the tiles before it by a decoupled look-back over per-digit status
// words, and write the tile out digit by digit from shared memory (see scatter_tile). Plus the
// helpers of argsort, row sorts and segmented sorts. The host side prepends keys.cuh (with what it
// needs), warp_peers.cuh, the typedefs O (offsets and status words: unsigned below 2^30 elements,
// unsigned long long from there), I (flat indices: unsigned up to 2^32 - 1 elements, unsigned long
// long beyond), V (the payload, when PAIRS), and the constants SORT_BLOCKS_PER_SM (the resident
// blocks per SM the scatter's registers are bounded for), SORT_LONG_TILES (1: 20-item tiles where
// keys and payloads take at most 4 bytes), PAIRS and INDICES (the payload is the keys' flat
// indices, V being I).
#define SORT_BLOCK 256
#define SORT_WARPS (SORT_BLOCK / 32)

// The buffers a pass reads and writes: the sort's input (only pass 0 reads it), the scratch
// buffer, the staging buffer (the output, or a second scratch where the output is not wanted)
// and the output (written by the last pass that runs).
#define BUFFER_IN 0
#define BUFFER_ALTERNATE 1
#define BUFFER_STAGING 2
#define BUFFER_OUT 3

// Which passes are skipped: bit j set where pass j is a pass on the key's byte j that every key
// has alike (never pass 0), as cuda_core_sort_starts found; a null skip: none. SORT_DONE set
// (by cuda_core_sort_segments, before the sort): the output is written already, and every pass
// is skipped.
#define SORT_DONE 0x80000000u
__device__ __forceinline__ unsigned skipped_passes(const unsigned *skip) { return skip ? *skip : 0u; }

// What pass `pass` of `passes` does: whether it runs, and which buffers it reads and writes.
// Passes that run alternate so that the last of them writes the output: one with `after`
// passes to run after it writes the output (after = 0), the scratch (odd) or the staging buffer
// (even), and reads what the one before it wrote (the input for pass 0).
struct pass_plan {
    bool run;
    unsigned src, dst;
};
__device__ __forceinline__ pass_plan plan_pass(const unsigned *skip, unsigned pass, unsigned passes) {
    const unsigned word = skipped_passes(skip), skipped = word & ~SORT_DONE;
    const unsigned after = passes - 1u - pass - (unsigned)__popc(skipped >> (pass + 1u));
    pass_plan plan;
    plan.run = ((skipped >> pass) & 1u) == 0u && (word & SORT_DONE) == 0u;
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

// The lanes of the warp whose digit (below 256) equals this lane's. Every lane of the warp calls
// it, converged.
__device__ __forceinline__ unsigned digit_peers(unsigned digit) { return warp_peers<8>(digit); }

// Elements a thread of the histogram reads per round, all loaded before any is counted.
constexpr int COUNT_ITEMS = sizeof(K) > 8 ? 8 : 16;
// The most passes one histogram launch counts: one per byte of the widest key.
#define MAX_KEY_PASSES 16

// Copies of each pass's 256 shared counters in the histogram: lane l counts into copy l %
// HIST_PARTS, so lanes with equal digits (a byte nearly every key shares) and lanes whose digits
// share a bank spread over more words. As many copies (up to 8) as keep the counters within 32
// KiB; one row of counters per byte of the mapped key.
constexpr unsigned HIST_ROWS = sizeof(U) < MAX_KEY_PASSES ? (unsigned)sizeof(U) : MAX_KEY_PASSES;
__host__ __device__ constexpr unsigned hist_parts(unsigned copy_bytes) {
    return copy_bytes * 8u <= 32768u ? 8u : copy_bytes * 4u <= 32768u ? 4u : copy_bytes * 2u <= 32768u ? 2u : 1u;
}
constexpr unsigned HIST_PARTS = hist_parts(HIST_ROWS * 256u * (unsigned)sizeof(O));

// Adds each run of equal digits among a thread's items (256: no element, not counted) to `row`,
// its copy of one pass's counters (copies HIST_PARTS apart), once a run.
__device__ __forceinline__ void count_runs(O *row, const unsigned (&digit)[COUNT_ITEMS]) {
    unsigned run_digit = 256u, run = 0u;
#pragma unroll
    for (int j = 0; j < COUNT_ITEMS; ++j) {
        if (digit[j] != run_digit) {
            if (run && run_digit < 256u) atomicAdd(&row[run_digit * HIST_PARTS], (O)run);
            run_digit = digit[j];
            run = 0u;
        }
        ++run;
    }
    if (run && run_digit < 256u) atomicAdd(&row[run_digit * HIST_PARTS], (O)run);
}

// Adds one to `part` (a thread's copy of the counters, copies HIST_PARTS apart) for the digit of
// pass p of the mapped key `bits`.
__device__ __forceinline__ void count_digit(O *part, unsigned p, U bits) {
    atomicAdd(&part[(p * 256u + key_digit(bits, 8u * p)) * HIST_PARTS], (O)1);
}

// counts[p * 256 + d] += how many elements have digit d in pass p (counts zeroed before the
// sort). With mode 0 (pass 0) it counts every pass on the key's bytes, p < key_passes (byte p of
// the mapped key), in one read of keys_in: a pass only moves keys, so its counts are the
// input's. Otherwise it counts pass `pass` alone, from the source plan_pass picks (keys, or the
// payload of flat indices that row and segment passes read). Blocks stride over the elements.
// In the single-pass modes each thread adds a run of equal digits among its items once (row
// and segment labels repeat along the elements).
extern "C" __global__ void __launch_bounds__(SORT_BLOCK, HISTOGRAM_BLOCKS_PER_SM) cuda_core_sort_histogram(
    const K *keys_in, const K *keys_alternate, const K *keys_staging, const I *rows_alternate, const I *rows_staging,
    const I *labels, O *counts, const unsigned *skip, unsigned pass, unsigned passes, unsigned key_passes,
    unsigned long long n, int mode, unsigned shift, unsigned long long row_len) {
    const pass_plan plan = plan_pass(skip, pass, passes);
    if (!plan.run) return;
    // Pass 0 reads the input (and no flat indices: it generates them).
    const K *keys = source_of(plan.src, keys_in, keys_alternate, keys_staging);
    const I *rows = source_of<I>(plan.src, nullptr, rows_alternate, rows_staging);
    const unsigned counted = mode == 0 ? key_passes : 1u;
    // bins[(p * 256 + d) * HIST_PARTS + part]: copy `part` of pass p's counter of digit d.
    __shared__ O bins[HIST_ROWS * 256u * HIST_PARTS];
    for (unsigned i = threadIdx.x; i < counted * 256u * HIST_PARTS; i += SORT_BLOCK) bins[i] = 0;
    __syncthreads();
    O *part = bins + (threadIdx.x & 31u) % HIST_PARTS;
    const unsigned long long stride = (unsigned long long)gridDim.x * SORT_BLOCK * COUNT_ITEMS;
    for (unsigned long long base = (unsigned long long)blockIdx.x * SORT_BLOCK * COUNT_ITEMS; base < n;
         base += stride) {
        if (mode == 0 && base + SORT_BLOCK * COUNT_ITEMS <= n) {
            // A whole round: every key's digits of every pass counted, one shared atomic each,
            // the passes unrolled (a loop over a runtime count of passes, and looking for runs
            // of equal digits, took 2.4 times as long: H100, 2^28 f32 keys).
            U bits[COUNT_ITEMS];
#pragma unroll
            for (int j = 0; j < COUNT_ITEMS; ++j) bits[j] = key_bits(keys[base + j * SORT_BLOCK + threadIdx.x]);
#pragma unroll
            for (unsigned p = 0; p < HIST_ROWS; ++p) {
                if (p < counted) {
#pragma unroll
                    for (int j = 0; j < COUNT_ITEMS; ++j) count_digit(part, p, bits[j]);
                }
            }
        } else if (mode == 0) {
            for (int j = 0; j < COUNT_ITEMS; ++j) {
                const unsigned long long i = base + j * SORT_BLOCK + threadIdx.x;
                if (i < n) {
                    const U b = key_bits(keys[i]);
                    for (unsigned p = 0; p < counted; ++p) count_digit(part, p, b);
                }
            }
        } else {
            unsigned digit[COUNT_ITEMS];
#pragma unroll
            for (int j = 0; j < COUNT_ITEMS; ++j) {
                const unsigned long long i = base + j * SORT_BLOCK + threadIdx.x;
                digit[j] = i < n ? digit_of(keys, rows, labels, i, n, mode, shift, row_len) : 256u;
            }
            count_runs(part, digit);
        }
    }
    __syncthreads();
    const unsigned first = mode == 0 ? 0u : pass;
    for (unsigned p = 0; p < counted; ++p) {
        O c = 0;
#pragma unroll
        for (unsigned k = 0; k < HIST_PARTS; ++k) c += bins[(p * 256u + threadIdx.x) * HIST_PARTS + k];
        if (c) atomicAdd(&counts[(first + p) * 256u + threadIdx.x], c);
    }
}

// For passes p in [pass, pass + count): starts[p * 256 + d] = where digit d starts in the pass's
// output, the exclusive prefix sum of counts[p * 256 + ..] over the digits. With a skip word (the
// key passes, from pass 0) it sets bit p of *skip (zeroed before) for each pass p >= 1 in which
// one digit holds all n elements: its byte is the same in every key, and the pass would move
// nothing. One block of SORT_BLOCK threads, thread d for digit d.
extern "C" __global__ void __launch_bounds__(SORT_BLOCK) cuda_core_sort_starts(const O *counts, O *starts,
                                                                              unsigned *skip, unsigned pass,
                                                                              unsigned count, unsigned long long n) {
    __shared__ O warp_sums[SORT_WARPS];
    const unsigned lane = threadIdx.x & 31u, warp = threadIdx.x >> 5;
    for (unsigned p = pass; p < pass + count; ++p) {
        const O c = counts[p * 256u + threadIdx.x];
        if (skip && p > 0u && (unsigned long long)c == n) atomicOr(skip, 1u << p);
        O x = c;
#pragma unroll
        for (int offset = 1; offset < 32; offset <<= 1) {
            const O y = __shfl_up_sync(0xffffffffu, x, offset);
            if (lane >= (unsigned)offset) x += y;
        }
        if (lane == 31u) warp_sums[warp] = x;
        __syncthreads();
        O before = 0;
        for (unsigned w = 0; w < warp; ++w) before += warp_sums[w];
        starts[p * 256u + threadIdx.x] = before + x - c;
        // warp_sums is written again for the next pass.
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

// A pass's look-back: a tile counter (the first 16 bytes), then a status word per tile and
// digit, status[tile * 256 + d], zeroed before the pass. The top two bits say what the rest
// holds: nothing yet (0), the tile's count of digit d (STATUS_AGGREGATE), or the tile's
// inclusive prefix, where in the output the tiles up to this one have written digit d up to
// (STATUS_PREFIX). A value fits the low bits: O has 30 of them below 2^30 elements, 62 above.
#define STATUS_AGGREGATE ((O)1 << (sizeof(O) * 8 - 2))
#define STATUS_PREFIX ((O)2 << (sizeof(O) * 8 - 2))
#define STATUS_VALUE (STATUS_AGGREGATE - 1)
// Tiles a digit's look-back reads at once, nearest first: a prefix SORT_LOOK tiles back costs
// one round trip instead of SORT_LOOK.
#define SORT_LOOK 4
__device__ __forceinline__ unsigned *tile_counter(void *lookback) { return (unsigned *)lookback; }
__device__ __forceinline__ volatile O *tile_status(void *lookback) {
    return (volatile O *)((unsigned char *)lookback + 16);
}

// The stable scatter of one pass. The block takes the next tile from the counter (so that every
// tile it waits for in its look-back belongs to a block already running), SORT_TILE elements
// from tile * SORT_TILE, warp w owning the tile's elements [w * SORT_ITEMS * 32, (w + 1) *
// SORT_ITEMS * 32): its item j at lane l is element w * SORT_ITEMS * 32 + j * 32 + l, so each
// item's loads are coalesced and index order is (warp, item, lane). Ranking: each warp counts
// its digits in a row of shared counters of its own, item after item; the lanes with equal
// digits (found by eight ballots, warp_peers.cuh) all read their digit's count, the lowest of
// them adds their number, and each is ranked by the peers below it. Then thread d turns digit
// d's counts into exclusive prefixes over the warps, publishes the tile's count of digit d, and
// the digits' tile totals are scanned; the tile is staged in shared memory in digit order, at
// the digit's start in the tile plus its warp's prefix plus the rank: stable. Meanwhile thread d looks back over the tiles before this
// one, adding their counts of digit d back to the nearest published prefix (tile 0's is where
// digit d starts in the pass, `starts[d]`), and publishes this tile's prefix. The tile is
// written out from the stage (the keys, then, PAIRS, the payloads through the same buffer):
// consecutive threads write consecutive positions of a digit's run. A tile takes three
// barriers (five with a payload). A null keys_out (PAIRS: or values_out) is not written: the
// last pass of a sort that wants only the payload (or only the keys). W is the payload's type as
// written (V, or long long for flat indices written as i64; unused without PAIRS).
//
// Items per thread: as many as keep the stage, the staged digits and the counters within the
// 48 KiB of static shared memory: at most 42 KiB with 16 items of up to 8-byte keys and
// payloads (4096 elements) or 8 items of 16-byte ones (2048), wide offsets included. Up to
// 4-byte keys and payloads take 20 in long sorts (SORT_LONG_TILES; 5120 elements, 31 KiB): the
// tile's fixed work (counters, prefixes, look-back) over more elements, at a few spilled bytes
// within the registers of three blocks an SM (H100, 2^28 keys: i32 +4.6 %, f32 +2 % against
// 16; 24 items at two blocks an SM lost 8 %).
#if PAIRS
constexpr unsigned SORT_STAGE_BYTES = sizeof(K) > sizeof(V) ? sizeof(K) : sizeof(V);
#else
constexpr unsigned SORT_STAGE_BYTES = sizeof(K);
#endif
constexpr int SORT_ITEMS = SORT_STAGE_BYTES > 8 ? 8 : (SORT_STAGE_BYTES > 4 || !SORT_LONG_TILES ? 16 : 20);
constexpr unsigned SORT_TILE = SORT_BLOCK * SORT_ITEMS;
template <typename W>
__device__ __forceinline__ void scatter_tile(const K *keys_in, K *keys_out,
#if PAIRS
                                             const V *values_in, W *values_out, unsigned long long index_row_len,
#endif
                                             const I *rows, const I *labels, const O *starts, void *lookback,
                                             unsigned long long n, int mode, unsigned shift,
                                             unsigned long long row_len) {
    // warp_counts[w][d]: warp w's elements with digit d; then where they start in the tile: the
    // digit's start within its group of 32 digits plus the earlier warps' counts.
    __shared__ unsigned short warp_counts[SORT_WARPS][256];
    // The digit totals of each group of 32 digits (one warp of threads).
    __shared__ unsigned group_totals[SORT_WARPS];
    // Where digit d's run of this tile goes in the output, less where it starts in the stage.
    __shared__ O delta[256];
    // The stage holds the tile's keys, then (PAIRS) its values: one buffer of the larger.
    __shared__ __align__(16) unsigned char stage[SORT_TILE * SORT_STAGE_BYTES];
    K *staged_keys = (K *)stage;
#if PAIRS
    V *staged_values = (V *)stage;
#endif
    __shared__ unsigned char staged_digit[SORT_TILE];
    __shared__ unsigned tile_of_block;
    const unsigned lane = threadIdx.x & 31u, warp = threadIdx.x >> 5;
    const unsigned lower_lanes = (1u << lane) - 1u;
    const unsigned first = warp * SORT_ITEMS * 32u + lane;
    if (threadIdx.x == 0) tile_of_block = atomicAdd(tile_counter(lookback), 1u);
    // The warp's row of 256 two-byte counters, zeroed as 128 words: four a lane.
    unsigned *row = (unsigned *)&warp_counts[warp][0];
#pragma unroll
    for (int c = 0; c < 256 / 2 / 32; ++c) row[c * 32 + lane] = 0u;
    __syncthreads();
    const unsigned long long tile = tile_of_block;
    const unsigned long long base = tile * SORT_TILE;
    const unsigned tile_len = n - base < SORT_TILE ? (unsigned)(n - base) : SORT_TILE;
    // This thread's items j < items are elements of the tile, the first at `at`.
    const unsigned items = tile_len > first ? (tile_len - first + 31u) / 32u : 0u;
    const unsigned long long at = base + first;
    K key[SORT_ITEMS];
    // Per item: the digit in the low half, the rank in the warp above; after staging, the staged
    // position (~0u: none). Items past the tile's end (only in the last tile) take digit 255:
    // being their warp's last elements in index order, they rank after its elements of digit 255,
    // and are taken off its count of them before the counts are used.
    unsigned placed[SORT_ITEMS];
#pragma unroll
    for (int j = 0; j < SORT_ITEMS; ++j) {
        if ((unsigned)j < items) key[j] = keys_in[at + j * 32];
    }
#pragma unroll
    for (int j = 0; j < SORT_ITEMS; ++j) {
        if ((unsigned)j >= items) {
            placed[j] = 255u;
        } else if (mode == 0) {
            placed[j] = key_digit(key_bits(key[j]), shift);
        } else {
            placed[j] = digit_of(keys_in, rows, labels, at + j * 32, n, mode, shift, row_len);
        }
    }
#pragma unroll
    for (int j = 0; j < SORT_ITEMS; ++j) {
        const unsigned digit = placed[j];
        const unsigned peers = digit_peers(digit);
        const unsigned below = __popc(peers & lower_lanes);
        // The peers read the warp's count of their digit (one address: a broadcast); once all
        // have, the lowest of them adds their number.
        const unsigned count = warp_counts[warp][digit];
        __syncwarp();
        if (below == 0u) warp_counts[warp][digit] = (unsigned short)(count + __popc(peers));
        placed[j] = digit | ((count + below) << 16);
        // The next item's lanes read what this one's lowest stored.
        __syncwarp();
    }
    __syncthreads();
    // Thread d: digit d's exclusive prefixes over the warps, and its tile total, published.
    unsigned short count[SORT_WARPS];
    unsigned total = 0;
#pragma unroll
    for (int w = 0; w < SORT_WARPS; ++w) {
        count[w] = warp_counts[w][threadIdx.x];
        if (threadIdx.x == 255u) {
            // Warp w's items past the tile's end, counted as digit 255.
            const unsigned owned = SORT_ITEMS * 32u, from = w * owned;
            count[w] -= (unsigned short)(tile_len >= from + owned ? 0u : (tile_len > from ? from + owned - tile_len : owned));
        }
        total += count[w];
    }
    volatile O *status = tile_status(lookback) + tile * 256u + threadIdx.x;
    const O start = tile == 0ull ? starts[threadIdx.x] : (O)0;
    *status = tile == 0ull ? (STATUS_PREFIX | (start + (O)total)) : (STATUS_AGGREGATE | (O)total);
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
    // Staged in digit order.
#pragma unroll
    for (int j = 0; j < SORT_ITEMS; ++j) {
        const unsigned digit = placed[j] & 0xffffu;
        const unsigned group = __shfl_sync(0xffffffffu, group_start, (digit >> 5) & (SORT_WARPS - 1));
        if ((unsigned)j < items) {
            const unsigned to = group + warp_counts[warp][digit] + (placed[j] >> 16);
            if (keys_out) staged_keys[to] = key[j];
            staged_digit[to] = (unsigned char)digit;
            placed[j] = to;
        } else {
            placed[j] = ~0u;
        }
    }
    // The look-back of digit threadIdx.x: the counts of the tiles before this one back to the
    // nearest published prefix. Each tile publishes its count before it looks back itself, so
    // the wait ends.
    O before = start;
    if (tile > 0ull) {
        // SORT_LOOK tiles a round trip, nearest first, read again until those up to the
        // nearest prefix among them have published (those beyond it need not have; before
        // tile 0, itself a prefix, nothing is read), their counts summed in the same pass.
        for (long long q = (long long)tile - 1;; q -= SORT_LOOK) {
            O sum;
            bool ready, found;
            do {
                O word[SORT_LOOK];
#pragma unroll
                for (int j = 0; j < SORT_LOOK; ++j) {
                    word[j] = q - j >= 0 ? status[(q - j - (long long)tile) * 256] : STATUS_PREFIX;
                }
                sum = 0;
                ready = true;
                found = false;
#pragma unroll
                for (int j = 0; j < SORT_LOOK; ++j) {
                    if (!found) {
                        ready = ready && (word[j] & (STATUS_AGGREGATE | STATUS_PREFIX)) != 0;
                        sum += word[j] & STATUS_VALUE;
                    }
                    found = found || (word[j] & STATUS_PREFIX) != 0;
                }
            } while (!ready);
            before += sum;
            if (found) break;
        }
        *status = STATUS_PREFIX | (before + (O)total);
    }
    delta[threadIdx.x] = before - (O)tile_start;
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

// The scatter of a pass, one tile a block (the grid has one block a tile), from and to the
// buffers plan_pass says, the payload (PAIRS) written as carried; nothing where the pass is
// skipped, or where it is the last to run and defer_last is set (cuda_core_sort_scatter_indices
// writes that one). starts: where each digit starts in the pass (256); lookback: the pass's,
// zeroed.
extern "C" __global__ void __launch_bounds__(SORT_BLOCK, SORT_BLOCKS_PER_SM) cuda_core_sort_scatter(
    const K *keys_in, K *keys_alternate, K *keys_staging, K *keys_out,
#if PAIRS
    const V *values_in, V *values_alternate, V *values_staging, V *values_out,
#endif
    const I *labels, const O *starts, void *lookback, const unsigned *skip, unsigned pass, unsigned passes,
    int defer_last, unsigned long long n, int mode, unsigned shift, unsigned long long row_len) {
    const pass_plan plan = plan_pass(skip, pass, passes);
    if (!plan.run || (defer_last && plan.dst == BUFFER_OUT)) return;
    const K *keys_src = source_of<K>(plan.src, keys_in, keys_alternate, keys_staging);
    K *keys_dst = destination_of(plan.dst, keys_alternate, keys_staging, keys_out);
#if PAIRS
    const V *values_src = source_of<V>(plan.src, values_in, values_alternate, values_staging);
    V *values_dst = destination_of(plan.dst, values_alternate, values_staging, values_out);
    // The flat indices a row or segment pass reads (V is I there).
    const I *rows = (const I *)values_src;
    scatter_tile<V>(keys_src, keys_dst, values_src, values_dst, 0ull, rows, labels, starts, lookback, n, mode, shift,
                    row_len);
#else
    scatter_tile<void>(keys_src, keys_dst, nullptr, labels, starts, lookback, n, mode, shift, row_len);
#endif
}

#if INDICES
// The scatter of the last pass that runs of a sort carrying flat indices, writing them to
// indices_out as i64: within their row of index_row_len elements, or flat where index_row_len
// is 0. Nothing where the pass is skipped or another runs after it.
extern "C" __global__ void __launch_bounds__(SORT_BLOCK, SORT_BLOCKS_PER_SM) cuda_core_sort_scatter_indices(
    const K *keys_in, K *keys_alternate, K *keys_staging, K *keys_out, const V *values_in, V *values_alternate,
    V *values_staging, long long *indices_out, unsigned long long index_row_len, const I *labels, const O *starts,
    void *lookback, const unsigned *skip, unsigned pass, unsigned passes, unsigned long long n, int mode,
    unsigned shift, unsigned long long row_len) {
    const pass_plan plan = plan_pass(skip, pass, passes);
    if (!plan.run || plan.dst != BUFFER_OUT) return;
    const V *values_src = source_of<V>(plan.src, values_in, values_alternate, values_staging);
    scatter_tile<long long>(source_of<K>(plan.src, keys_in, keys_alternate, keys_staging), keys_out, values_src,
                            indices_out, index_row_len, (const I *)values_src, labels, starts, lookback, n, mode,
                            shift, row_len);
}
#endif

// labels[i] = i, the labels of a segmented sort before its segments are marked; and where
// keys_out is not null keys_out[i] = keys[i], and perm[i] = i where perm is not null: the output
// of a segmented sort whose segments cuda_core_sort_segments then sorts in place.
extern "C" __global__ void cuda_core_sort_identity(I *labels, const K *keys, K *keys_out, I *perm,
                                                   unsigned long long n) {
    const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        labels[i] = (I)i;
        if (keys_out) keys_out[i] = keys[i];
        if (perm) perm[i] = (I)i;
    }
}

// Segment s of a segmented sort, [begins[s], ends[s]) clamped into [0, n).
struct segment_range {
    unsigned long long begin, len;
};
__device__ __forceinline__ segment_range segment_at(const long long *begins, const long long *ends,
                                                    unsigned long long s, unsigned long long n) {
    const long long b = begins[s], e = ends[s];
    const unsigned long long begin = b < 0 ? 0ull : ((unsigned long long)b > n ? n : (unsigned long long)b);
    const unsigned long long end = e < 0 ? 0ull : ((unsigned long long)e > n ? n : (unsigned long long)e);
    segment_range r = {begin, end > begin ? end - begin : 0ull};
    return r;
}

// labels[i] = the least begin offset of the segments holding i, or i where none does (the caller
// fills labels with 0..n first): segment s as segment_at clamps it, empty when its end is not
// after its begin. Blocks (x, y) share segments x, x + gridDim.x, ...: block y covers the y-th
// of gridDim.y chunks of each. atomicMin makes overlapping segments defined.
extern "C" __global__ void cuda_core_sort_label_segments(I *labels, const long long *begins,
                                                          const long long *ends, unsigned long long segments,
                                                          unsigned long long n) {
    for (unsigned long long s = blockIdx.x; s < segments; s += gridDim.x) {
        const segment_range r = segment_at(begins, ends, s, n);
        if (r.len == 0ull) continue;
        const unsigned long long end = r.begin + r.len, chunk = (r.len + gridDim.y - 1) / gridDim.y;
        const unsigned long long first = r.begin + blockIdx.y * chunk;
        if (first >= end) continue;
        const unsigned long long last = end - first < chunk ? end : first + chunk;
        for (unsigned long long i = first + threadIdx.x; i < last; i += blockDim.x) atomicMin(&labels[i], (I)r.begin);
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

// Sorts rows of `row_len` keys (row_len <= ROW_SORT_MAX) of `padded` slots each (row_len's next
// power of two), ROW_SORT_MAX / padded rows at a time a block: a bitonic network over (key_bits,
// position in the row) pairs, the padding slots holding pairs after every real one, so that
// equal keys keep their order. Thread t holds the N slots [t * N, (t + 1) * N) in registers: the
// network's steps between slots fewer than N apart run inside a thread, those fewer than 32 * N
// apart between the lanes of a warp by shuffles, and only the steps from 32 * N apart through
// shared memory. The host defines ROWS_ITEMS, the N of cuda_core_sort_rows_block (16 for keys of
// up to 4 bytes, 8 for wider ones; blocks of ROW_SORT_MAX / N threads), and ROW_PACKED (1 for
// keys of up to 4 bytes: a pair is one 8-byte word, the key's bits above the position, compared
// at once). cuda_core_sort_segments (segments a warp can sort) takes 8 slots a thread in blocks
// of ROW_SORT_BLOCK; cuda_core_sort_segments_block takes cuda_core_sort_rows_block's.
#define ROW_SORT_MAX 2048
#define ROW_SORT_BLOCK 256
#define SEGMENT_ITEMS (ROW_SORT_MAX / ROW_SORT_BLOCK)
#define ROWS_THREADS (ROW_SORT_MAX / ROWS_ITEMS)

// A slot's index in the shared arrays: one spare slot every 32, so that the N consecutive slots
// of each lane of a warp fall in distinct banks.
__device__ __forceinline__ unsigned row_slot(unsigned s) { return s + (s >> 5); }

#if ROW_PACKED
struct row_item {
    unsigned long long word;
    __device__ __forceinline__ U key() const { return (U)(word >> 32); }
    __device__ __forceinline__ unsigned pos() const { return (unsigned)word; }
};
__device__ __forceinline__ row_item make_row_item(U bits, unsigned position) {
    row_item r;
    r.word = ((unsigned long long)bits << 32) | position;
    return r;
}
// Whether a sorts after b: by key bits, then by position (distinct within a row).
__device__ __forceinline__ bool row_after(row_item a, row_item b) { return a.word > b.word; }
// The pair of the lane `lanes` away (lane ^ lanes) of the converged warp.
__device__ __forceinline__ row_item shfl_xor_item(row_item a, unsigned lanes) {
    a.word = __shfl_xor_sync(0xffffffffu, a.word, lanes);
    return a;
}
#else
struct row_item {
    U bits;
    unsigned position;
    __device__ __forceinline__ U key() const { return bits; }
    __device__ __forceinline__ unsigned pos() const { return position; }
};
__device__ __forceinline__ row_item make_row_item(U bits, unsigned position) {
    row_item r;
    r.bits = bits;
    r.position = position;
    return r;
}
// Whether a sorts after b: by key bits, then by position (distinct within a row).
__device__ __forceinline__ bool row_after(row_item a, row_item b) {
    return a.bits > b.bits || (a.bits == b.bits && a.position > b.position);
}
// Key bits from the lane `lanes` away (lane ^ lanes) of the converged warp.
__device__ __forceinline__ unsigned long long shfl_xor_bits(unsigned long long b, unsigned lanes) {
    return __shfl_xor_sync(0xffffffffu, b, lanes);
}
__device__ __forceinline__ cuda_core_key128 shfl_xor_bits(cuda_core_key128 b, unsigned lanes) {
    b.lo = __shfl_xor_sync(0xffffffffu, b.lo, lanes);
    b.hi = __shfl_xor_sync(0xffffffffu, b.hi, lanes);
    return b;
}
// The pair of the lane `lanes` away (lane ^ lanes) of the converged warp.
__device__ __forceinline__ row_item shfl_xor_item(row_item a, unsigned lanes) {
    a.bits = shfl_xor_bits(a.bits, lanes);
    a.position = __shfl_xor_sync(0xffffffffu, a.position, lanes);
    return a;
}
#endif

// Whether slot s keeps the smaller of its pair in the step of span k and distance j: the lower
// slot of a pair does in the spans sorted ascending (bit k of s clear, or k a whole row).
__device__ __forceinline__ bool row_keeps_min(unsigned s, unsigned j, unsigned k, unsigned padded) {
    const bool lower = (s & j) == 0u;
    const bool descending = k < padded && (s & k) != 0u;
    return lower != descending;
}

// A step of distance J < N: both slots of each pair are the thread's.
template <unsigned N, unsigned J>
__device__ __forceinline__ void row_step_in_thread(row_item (&item)[N], unsigned first, unsigned k,
                                                   unsigned padded) {
#pragma unroll
    for (unsigned i = 0; i < N; ++i) {
        if ((i & J) == 0u) {
            const row_item a = item[i], b = item[i | J];
            if (row_after(a, b) == row_keeps_min(first + i, J, k, padded)) {
                item[i] = b;
                item[i | J] = a;
            }
        }
    }
}

// The steps of span k from distance min(k / 2, J) down to 1 inside the thread (J < N).
template <unsigned N, unsigned J>
__device__ __forceinline__ void row_steps_in_thread(row_item (&item)[N], unsigned first, unsigned k,
                                                    unsigned padded) {
    if (k > J) row_step_in_thread<N, J>(item, first, k, padded);
    if constexpr (J > 1u) row_steps_in_thread<N, J / 2u>(item, first, k, padded);
}

// The thread's slots to and from the shared arrays.
template <unsigned N>
__device__ __forceinline__ void row_store(row_item (&item)[N], unsigned first, U *bits, unsigned short *position) {
#pragma unroll
    for (unsigned i = 0; i < N; ++i) {
        bits[row_slot(first + i)] = item[i].key();
        position[row_slot(first + i)] = (unsigned short)item[i].pos();
    }
}
template <unsigned N>
__device__ __forceinline__ void row_load(row_item (&item)[N], unsigned first, const U *bits,
                                         const unsigned short *position) {
#pragma unroll
    for (unsigned i = 0; i < N; ++i) item[i] = make_row_item(bits[row_slot(first + i)], position[row_slot(first + i)]);
}

// The network's steps of span k from distance j (below 32 * N) down to 1, which pair slots of
// one warp: those N apart and more between lanes by shuffles (slot s pairs with the same item of
// lane lane ^ (j / N)), the others inside the thread.
template <unsigned N>
__device__ __forceinline__ void row_steps_in_warp(row_item (&item)[N], unsigned first, unsigned k, unsigned j,
                                                  unsigned padded) {
    for (; j >= N; j >>= 1) {
#pragma unroll
        for (unsigned i = 0; i < N; ++i) {
            const row_item other = shfl_xor_item(item[i], j / N);
            if (row_after(item[i], other) == row_keeps_min(first + i, j, k, padded)) item[i] = other;
        }
    }
    row_steps_in_thread<N, N / 2u>(item, first, k, padded);
}

// The whole network over the block's first `slots` slots (a multiple of 32 * N; the warps past
// them only take part in the barriers) by `threads` threads, groups of `padded` slots each
// sorted: the steps from 32 * N apart through the shared arrays, the others in the warps. Every
// thread of the block calls it.
template <unsigned N>
__device__ __forceinline__ void row_network_block(row_item (&item)[N], unsigned first, unsigned padded,
                                                  unsigned slots, unsigned threads, U *bits,
                                                  unsigned short *position) {
    const bool mine = first < slots;
    for (unsigned k = 2; k <= padded; k <<= 1) {
        unsigned j = k >> 1;
        if (j >= 32u * N) {
            // Every thread has loaded the shared arrays (or, first, read them) before any stores.
            __syncthreads();
            if (mine) row_store(item, first, bits, position);
            __syncthreads();
            for (; j >= 32u * N; j >>= 1) {
                // Pair q of the slots / 2 is (i, i + j), i the q-th slot with bit j clear.
                for (unsigned q = threadIdx.x; q < slots / 2u; q += threads) {
                    const unsigned i = ((q & ~(j - 1u)) << 1) | (q & (j - 1u));
                    const row_item a = make_row_item(bits[row_slot(i)], position[row_slot(i)]);
                    const row_item b = make_row_item(bits[row_slot(i | j)], position[row_slot(i | j)]);
                    if (row_after(a, b) == row_keeps_min(i, j, k, padded)) {
                        bits[row_slot(i)] = b.key();
                        position[row_slot(i)] = (unsigned short)b.pos();
                        bits[row_slot(i | j)] = a.key();
                        position[row_slot(i | j)] = (unsigned short)a.pos();
                    }
                }
                __syncthreads();
            }
            if (mine) row_load(item, first, bits, position);
        }
        if (mine) row_steps_in_warp(item, first, k, j, padded);
    }
    __syncthreads();
    if (mine) row_store(item, first, bits, position);
    __syncthreads();
}

// Registers bounded for 8 blocks an SM (packed pairs: 64 a thread, 12 bytes spilled) or 4 (80
// a thread unbounded, 3 blocks): on an H100, rows of 4 to 2048 keys sorted 4 to 10 % faster
// (f32) and 1 to 21 % faster (f64) than unbounded.
#if ROW_PACKED
#define ROWS_BOUNDS ROWS_THREADS, 8
#else
#define ROWS_BOUNDS ROWS_THREADS, 4
#endif
extern "C" __global__ void __launch_bounds__(ROWS_BOUNDS) cuda_core_sort_rows_block(
    const K *keys, K *keys_out, long long *indices_out, unsigned long long rows, unsigned row_len, unsigned padded) {
    __shared__ U bits[ROW_SORT_MAX + ROW_SORT_MAX / 32];
    __shared__ unsigned short position[ROW_SORT_MAX + ROW_SORT_MAX / 32];
    const unsigned together = ROW_SORT_MAX / padded;
    const unsigned first = threadIdx.x * ROWS_ITEMS;
    for (unsigned long long group = blockIdx.x; group * together < rows; group += gridDim.x) {
        const unsigned long long first_row = group * together;
        // Striped loads: consecutive threads read consecutive keys of a row.
        for (unsigned s = threadIdx.x; s < ROW_SORT_MAX; s += ROWS_THREADS) {
            const unsigned long long row = first_row + s / padded;
            const unsigned p = s & (padded - 1u);
            bits[row_slot(s)] = row < rows && p < row_len ? key_bits(keys[row * row_len + p]) : key_max();
            position[row_slot(s)] = (unsigned short)p;
        }
        __syncthreads();
        row_item item[ROWS_ITEMS];
        row_load(item, first, bits, position);
        row_network_block(item, first, padded, ROW_SORT_MAX, ROWS_THREADS, bits, position);
        for (unsigned s = threadIdx.x; s < ROW_SORT_MAX; s += ROWS_THREADS) {
            const unsigned long long row = first_row + s / padded;
            const unsigned p = s & (padded - 1u);
            if (row >= rows || p >= row_len) continue;
            const unsigned from = position[row_slot(s)];
            if (keys_out) keys_out[row * row_len + p] = keys[row * row_len + from];
            if (indices_out) indices_out[row * row_len + p] = (long long)from;
        }
        // The next group overwrites the shared arrays.
        __syncthreads();
    }
}

// Whether this thread's share (from `from`, every `step`-th) of the checks that segment r owns
// its elements holds: each is labelled with its begin (no segment that starts before it holds
// one of them) and, checked by the share from 0, the element after it is not (no other segment
// starting there runs further). Segments that own their elements are disjoint, but for copies of
// one segment, which sort to the same output.
__device__ __forceinline__ bool segment_owned_part(const I *labels, segment_range r, unsigned long long n,
                                                   unsigned from, unsigned step) {
    bool owned = true;
    for (unsigned long long p = from; p < r.len; p += step) owned &= labels[r.begin + p] == (I)r.begin;
    if (from == 0u && r.begin + r.len < n) owned &= labels[r.begin + r.len] != (I)r.begin;
    return owned;
}

// The sorted element `p` of segment r came from position `from` of it: written to the output.
__device__ __forceinline__ void segment_put(const K *keys, K *keys_out, I *perm, segment_range r, unsigned p,
                                            unsigned from) {
    keys_out[r.begin + p] = keys[r.begin + from];
    if (perm) perm[r.begin + p] = (I)(r.begin + from);
}

// Sorts each segment of 2 to 32 * SEGMENT_ITEMS elements of a segmented sort in place, in
// keys_out (and its source positions in perm, where not null), both filled by
// cuda_core_sort_identity, with labels marked by cuda_core_sort_label_segments: a warp a segment
// (the network in registers and shuffles; warps take segments in turn).
// cuda_core_sort_segments_block sorts the longer ones. A segment that does not own its elements
// (it overlaps another: segment_owned_part) is left, as are segments longer than ROW_SORT_MAX;
// either clears SORT_DONE in *done (set before), and the sort by key then label that follows
// runs and rewrites the whole output; otherwise that sort's passes all return at once.
extern "C" __global__ void __launch_bounds__(ROW_SORT_BLOCK) cuda_core_sort_segments(
    const K *keys, K *keys_out, I *perm, const I *labels, const long long *begins, const long long *ends,
    unsigned long long segments, unsigned long long n, unsigned *done) {
    const unsigned lane = threadIdx.x & 31u;
    const unsigned long long warps = (unsigned long long)gridDim.x * (ROW_SORT_BLOCK / 32);
    for (unsigned long long s = (unsigned long long)blockIdx.x * (ROW_SORT_BLOCK / 32) + threadIdx.x / 32u;
         s < segments; s += warps) {
        const segment_range r = segment_at(begins, ends, s, n);
        if (r.len < 2ull || r.len > 32u * SEGMENT_ITEMS) continue;
        if (!__all_sync(0xffffffffu, segment_owned_part(labels, r, n, lane, 32u))) {
            if (lane == 0u) atomicAnd(done, ~SORT_DONE);
            continue;
        }
        const unsigned len = (unsigned)r.len, padded = 1u << (32 - __clz(len - 1u)), first = lane * SEGMENT_ITEMS;
        row_item item[SEGMENT_ITEMS];
#pragma unroll
        for (unsigned i = 0; i < SEGMENT_ITEMS; ++i) {
            const unsigned p = first + i;
            item[i] = make_row_item(p < len ? key_bits(keys[r.begin + p]) : key_max(), p);
        }
        for (unsigned k = 2; k <= padded; k <<= 1) row_steps_in_warp(item, first, k, k >> 1, padded);
#pragma unroll
        for (unsigned i = 0; i < SEGMENT_ITEMS; ++i) {
            if (first + i < len) segment_put(keys, keys_out, perm, r, first + i, item[i].pos());
        }
    }
}

// As cuda_core_sort_segments, for the segments of 32 * SEGMENT_ITEMS + 1 to ROW_SORT_MAX
// elements: a block a segment (the row sort's network, ROWS_ITEMS slots a thread, in blocks of
// ROWS_THREADS), blocks handed to the SMs as earlier ones finish.
extern "C" __global__ void __launch_bounds__(ROWS_BOUNDS) cuda_core_sort_segments_block(
    const K *keys, K *keys_out, I *perm, const I *labels, const long long *begins, const long long *ends,
    unsigned long long segments, unsigned long long n, unsigned *done) {
    __shared__ U bits[ROW_SORT_MAX + ROW_SORT_MAX / 32];
    __shared__ unsigned short position[ROW_SORT_MAX + ROW_SORT_MAX / 32];
    const unsigned first = threadIdx.x * ROWS_ITEMS;
    for (unsigned long long s = blockIdx.x; s < segments; s += gridDim.x) {
        const segment_range r = segment_at(begins, ends, s, n);
        if (r.len <= 32u * SEGMENT_ITEMS) continue;
        // r.len is the block's alike, so every thread reaches __syncthreads_and or none does.
        if (r.len > ROW_SORT_MAX || !__syncthreads_and(segment_owned_part(labels, r, n, threadIdx.x, ROWS_THREADS))) {
            if (threadIdx.x == 0u) atomicAnd(done, ~SORT_DONE);
            continue;
        }
        const unsigned len = (unsigned)r.len, padded = 1u << (32 - __clz(len - 1u));
        for (unsigned p = threadIdx.x; p < padded; p += ROWS_THREADS) {
            bits[row_slot(p)] = p < len ? key_bits(keys[r.begin + p]) : key_max();
            position[row_slot(p)] = (unsigned short)p;
        }
        __syncthreads();
        row_item item[ROWS_ITEMS];
        if (first < padded) row_load(item, first, bits, position);
        row_network_block(item, first, padded, padded, ROWS_THREADS, bits, position);
        for (unsigned p = threadIdx.x; p < len; p += ROWS_THREADS) {
            segment_put(keys, keys_out, perm, r, p, position[row_slot(p)]);
        }
        // The next segment overwrites the shared arrays.
        __syncthreads();
    }
}
