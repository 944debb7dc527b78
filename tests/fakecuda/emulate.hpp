// fakecuda (test double): the CUDA C++ device dialect on the host, for emulation.c. A module
// whose NVRTC source came with its PTX (tests/fakenvrtc) is compiled by the host C++ compiler
// with this header first, and each kernel runs on launch over the fake's device memory (whose
// device addresses are host addresses, memory.c).
//
// A block's threads are fibers on the launching thread, run in turn: one runs until
// it reaches __syncthreads, a warp collective (ballot, shuffle, match, any/all, __syncwarp) or
// its end, then the next. __syncthreads completes when every thread of the block that has not
// returned reaches it; a warp collective when every unreturned lane of its mask has reached it,
// and it computes what the hardware would. The turn order alternates between rounds (first to
// last, then last to first), so code that reads what another thread writes without a barrier
// between them tends to see stale data, as it can on a GPU. A block that can make no progress
// (threads of a warp in different collectives, a barrier some threads never reach while others
// wait in a collective) fails the launch with a message on stderr. Blocks run one after another
// in the order of their linear index, so a block sees every earlier block's writes (a decoupled
// look-back never waits). Atomics are plain read-modify-writes (one thread runs at a time);
// fences do nothing.
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <ucontext.h>

#include <cmath>
#include <cstddef>
#include <tuple>
#include <type_traits>
#include <utility>

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __noinline__
#define __launch_bounds__(...)
#define __shared__ static
#define __constant__ static
#define __align__(n) __attribute__((aligned(n)))
#define __restrict__ __restrict
#define __grid_constant__

struct uint3 {
    unsigned int x, y, z;
};
struct dim3 {
    unsigned int x = 1, y = 1, z = 1;
};
static uint3 threadIdx, blockIdx;
static dim3 blockDim, gridDim;
static const int warpSize = 32;

// ---- vector types ------------------------------------------------------------------------
#define FAKECUDA_VECTOR2(name, type, align)                                                                     \
    struct alignas(align) name {                                                                               \
        type x, y;                                                                                             \
    };                                                                                                         \
    static inline name make_##name(type x, type y) { return name{x, y}; }
#define FAKECUDA_VECTOR4(name, type, align)                                                                     \
    struct alignas(align) name {                                                                               \
        type x, y, z, w;                                                                                       \
    };                                                                                                         \
    static inline name make_##name(type x, type y, type z, type w) { return name{x, y, z, w}; }
FAKECUDA_VECTOR2(int2, int, 8)
FAKECUDA_VECTOR2(uint2, unsigned int, 8)
FAKECUDA_VECTOR2(float2, float, 8)
FAKECUDA_VECTOR2(double2, double, 16)
FAKECUDA_VECTOR2(longlong2, long long, 16)
FAKECUDA_VECTOR2(ulonglong2, unsigned long long, 16)
FAKECUDA_VECTOR4(int4, int, 16)
FAKECUDA_VECTOR4(uint4, unsigned int, 16)
FAKECUDA_VECTOR4(float4, float, 16)
FAKECUDA_VECTOR4(ushort4, unsigned short, 8)
FAKECUDA_VECTOR4(uchar4, unsigned char, 4)

// ---- bits and arithmetic intrinsics -------------------------------------------------------
template <class To, class From> static inline To fakecuda_bits(From from) {
    static_assert(sizeof(To) == sizeof(From), "a bit cast keeps the size");
    To to;
    memcpy(&to, &from, sizeof to);
    return to;
}
static inline unsigned int __float_as_uint(float f) { return fakecuda_bits<unsigned int>(f); }
static inline int __float_as_int(float f) { return fakecuda_bits<int>(f); }
static inline float __uint_as_float(unsigned int u) { return fakecuda_bits<float>(u); }
static inline float __int_as_float(int i) { return fakecuda_bits<float>(i); }
static inline long long __double_as_longlong(double d) { return fakecuda_bits<long long>(d); }
static inline double __longlong_as_double(long long l) { return fakecuda_bits<double>(l); }
static inline int __popc(unsigned int x) { return __builtin_popcount(x); }
static inline int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
static inline int __clz(int x) { return x == 0 ? 32 : __builtin_clz((unsigned)x); }
static inline int __clzll(long long x) { return x == 0 ? 64 : __builtin_clzll((unsigned long long)x); }
static inline int __ffs(int x) { return __builtin_ffs(x); }
static inline int __ffsll(long long x) { return __builtin_ffsll(x); }
static inline unsigned int __brev(unsigned int x) {
    unsigned int r = 0;
    for (int i = 0; i < 32; ++i) r |= ((x >> i) & 1u) << (31 - i);
    return r;
}
static inline unsigned long long __brevll(unsigned long long x) {
    return (unsigned long long)__brev((unsigned)x) << 32 | __brev((unsigned)(x >> 32));
}
static inline unsigned int __umulhi(unsigned int a, unsigned int b) { return (unsigned)(((unsigned long long)a * b) >> 32); }
static inline int __mulhi(int a, int b) { return (int)(((long long)a * b) >> 32); }
static inline unsigned long long __umul64hi(unsigned long long a, unsigned long long b) {
    return (unsigned long long)(((unsigned __int128)a * b) >> 64);
}
static inline long long __mul64hi(long long a, long long b) { return (long long)(((__int128)a * b) >> 64); }
// The module is compiled with -ffp-contract=off, so these round once, as their names say.
static inline double __dadd_rn(double a, double b) { return a + b; }
static inline double __dsub_rn(double a, double b) { return a - b; }
static inline double __dmul_rn(double a, double b) { return a * b; }
static inline double __ddiv_rn(double a, double b) { return a / b; }
static inline double __drcp_rn(double a) { return 1.0 / a; }
static inline double __dsqrt_rn(double a) { return std::sqrt(a); }
static inline double __fma_rn(double a, double b, double c) { return std::fma(a, b, c); }
static inline float __fadd_rn(float a, float b) { return a + b; }
static inline float __fsub_rn(float a, float b) { return a - b; }
static inline float __fmul_rn(float a, float b) { return a * b; }
static inline float __fdiv_rn(float a, float b) { return a / b; }
static inline float __frcp_rn(float a) { return 1.0f / a; }
static inline float __fsqrt_rn(float a) { return std::sqrt(a); }
static inline float __fmaf_rn(float a, float b, float c) { return std::fma(a, b, c); }
// sin(pi x) and cos(pi x), with x reduced exactly to [-1/4, 1/4] around a multiple of 1/2 first
// (close to CUDA's, not bit for bit).
static inline void sincospi(double x, double *sine, double *cosine) {
    if (!std::isfinite(x)) {
        *sine = *cosine = NAN;
        return;
    }
    double r = std::fmod(x, 2.0), n = std::nearbyint(r * 2.0), t = (r - n * 0.5) * M_PI;
    double s = std::sin(t), c = std::cos(t);
    switch (((long long)n % 4 + 4) % 4) {
    case 0: *sine = s, *cosine = c; break;
    case 1: *sine = c, *cosine = -s; break;
    case 2: *sine = -s, *cosine = -c; break;
    default: *sine = -c, *cosine = s; break;
    }
    if (*sine == 0.0) *sine = std::copysign(0.0, x);
}
static inline void sincospif(float x, float *sine, float *cosine) {
    double s, c;
    sincospi((double)x, &s, &c);
    *sine = (float)s;
    *cosine = (float)c;
}
static inline float __fdividef(float a, float b) { return a / b; }
static inline float __saturatef(float x) { return x != x ? 0.0f : x < 0.0f ? 0.0f : x > 1.0f ? 1.0f : x; }
static inline float __double2float_rz(double d) {
    float f = (float)d;
    if (std::isfinite(d) && std::fabs((double)f) > std::fabs(d)) f = std::nextafter(f, 0.0f);
    return f;
}
template <class T> static inline T __ldg(const T *p) { return *p; }
template <class T> static inline T __ldcg(const T *p) { return *p; }
template <class T> static inline T __ldcs(const T *p) { return *p; }
template <class T> static inline void __stcs(T *p, T v) { *p = v; }
template <class T> static inline void __stcg(T *p, T v) { *p = v; }
template <class A, class B> static inline std::common_type_t<A, B> min(A a, B b) {
    typedef std::common_type_t<A, B> C;
    return (C)b < (C)a ? (C)b : (C)a;
}
template <class A, class B> static inline std::common_type_t<A, B> max(A a, B b) {
    typedef std::common_type_t<A, B> C;
    return (C)a < (C)b ? (C)b : (C)a;
}
static inline long long clock64() {
    static long long ticks;
    return ++ticks;
}

// f16 conversions, each rounded once to nearest even (what the prelude's cvt.rn do).
static inline unsigned short fakecuda_f16_from_f32(float f) { return fakecuda_bits<unsigned short>((_Float16)f); }
static inline unsigned short fakecuda_f16_from_f64(double d) { return fakecuda_bits<unsigned short>((_Float16)d); }
static inline float fakecuda_f32_from_f16(unsigned short h) { return (float)fakecuda_bits<_Float16>(h); }

// ---- fences and atomics (one thread runs at a time) ---------------------------------------
static inline void __threadfence() {}
static inline void __threadfence_block() {}
static inline void __threadfence_system() {}
#define FAKECUDA_ATOMIC(name, expression)                                                                        \
    template <class T, class U> static inline T name(T *p, U v) {                                                \
        T old = *p;                                                                                              \
        *p = (T)(expression);                                                                                    \
        return old;                                                                                              \
    }                                                                                                            \
    template <class T, class U> static inline T name##_block(T *p, U v) { return name(p, v); }                \
    template <class T, class U> static inline T name##_system(T *p, U v) { return name(p, v); }
FAKECUDA_ATOMIC(atomicAdd, old + (T)v)
FAKECUDA_ATOMIC(atomicSub, old - (T)v)
FAKECUDA_ATOMIC(atomicExch, (T)v)
FAKECUDA_ATOMIC(atomicMin, (T)v < old ? (T)v : old)
FAKECUDA_ATOMIC(atomicMax, old < (T)v ? (T)v : old)
FAKECUDA_ATOMIC(atomicOr, old | (T)v)
FAKECUDA_ATOMIC(atomicAnd, old &(T)v)
FAKECUDA_ATOMIC(atomicXor, old ^ (T)v)
FAKECUDA_ATOMIC(atomicInc, old >= (T)v ? 0 : old + 1)
FAKECUDA_ATOMIC(atomicDec, (old == 0 || old > (T)v) ? (T)v : old - 1)
template <class T, class U, class V> static inline T atomicCAS(T *p, U compare, V value) {
    T old = *p;
    if (old == (T)compare) *p = (T)value;
    return old;
}

// ---- the scheduler ------------------------------------------------------------------------
namespace fakecuda {

// What the fake passes for a launch (struct fake_launch in fakecuda.h).
struct Launch {
    unsigned int grid[3];
    unsigned int block[3];
    unsigned int shared_mem;
    void **params;
};

enum State { RUNNABLE, AT_BARRIER, IN_COLLECTIVE, RETURNED };
enum Collective { BALLOT, SHFL_IDX, SHFL_UP, SHFL_DOWN, SHFL_XOR, MATCH_ANY, SYNCWARP };

// Switching between fibers: on x86-64 a switch of stacks that saves the callee-saved registers
// (no system call, unlike swapcontext, which saves the signal mask); elsewhere ucontext.
#if defined(__x86_64__)
extern "C" void fakecuda_switch(void **save_stack, void *next_stack);
asm(".text\n"
    ".p2align 4\n"
    "fakecuda_switch:\n"
    "    pushq %rbp\n"
    "    pushq %rbx\n"
    "    pushq %r12\n"
    "    pushq %r13\n"
    "    pushq %r14\n"
    "    pushq %r15\n"
    "    movq %rsp, (%rdi)\n"
    "    movq %rsi, %rsp\n"
    "    popq %r15\n"
    "    popq %r14\n"
    "    popq %r13\n"
    "    popq %r12\n"
    "    popq %rbx\n"
    "    popq %rbp\n"
    "    ret\n");
struct Context {
    void *stack;
};
#else
struct Context {
    ucontext_t context;
};
#endif

struct Fiber {
    Context context;
    State state;
    uint3 index;
    // The collective it waits in: which, the lanes taking part, its value and argument.
    Collective collective;
    unsigned int mask;
    unsigned long long value;
    int argument, width;
    unsigned long long result;
};

const size_t STACK_BYTES = 256 * 1024;
const unsigned int MAX_THREADS = 1024;

static Fiber fibers[MAX_THREADS];
static unsigned char *stacks;
static Context scheduler;
static Fiber *current;
static void (*body)(void *);
static void *body_data;
static const char *failure;

static void switch_context(Context *save, Context *next) {
#if defined(__x86_64__)
    fakecuda_switch(&save->stack, next->stack);
#else
    swapcontext(&save->context, &next->context);
#endif
}

static void fiber_main() {
    body(body_data);
    current->state = RETURNED;
    switch_context(&current->context, &scheduler);
    __builtin_unreachable(); // a returned fiber is never resumed
}

// Makes `fiber` start at fiber_main on the stack [stack, stack + bytes).
static void start_context(Fiber &fiber, unsigned char *stack, size_t bytes) {
#if defined(__x86_64__)
    // fakecuda_switch pops six registers and returns: into fiber_main, with the stack as a
    // call leaves it (16-byte aligned before the return address was pushed).
    void **top = (void **)(((uintptr_t)(stack + bytes) & ~(uintptr_t)15) - 8 * sizeof(void *));
    for (int i = 0; i < 6; ++i) top[i] = nullptr;
    top[6] = (void *)&fiber_main;
    top[7] = nullptr;
    fiber.context.stack = top;
#else
    getcontext(&fiber.context.context);
    fiber.context.context.uc_stack.ss_sp = stack;
    fiber.context.context.uc_stack.ss_size = bytes;
    fiber.context.context.uc_link = nullptr;
    makecontext(&fiber.context.context, fiber_main, 0);
#endif
}

// Gives the turn back to the scheduler until this fiber is runnable again.
static void yield() { switch_context(&current->context, &scheduler); }

static unsigned long long collective(Collective which, unsigned int mask, unsigned long long value, int argument,
                                     int width) {
    Fiber *self = current;
    self->collective = which;
    self->mask = mask;
    self->value = value;
    self->argument = argument;
    self->width = width;
    self->state = IN_COLLECTIVE;
    yield();
    return self->result;
}

// Completes a collective of warp `warp` (lanes first .. first + 32 of `count` threads) whose
// taking-part lanes have all arrived; false where none can complete.
static bool complete_collective(unsigned int first, unsigned int count) {
    unsigned int lanes = count - first < 32 ? count - first : 32;
    for (unsigned int l = 0; l < lanes; ++l) {
        Fiber &lead = fibers[first + l];
        if (lead.state != IN_COLLECTIVE) continue;
        unsigned int mask = lead.mask, ready = 0;
        bool complete = true;
        for (unsigned int m = 0; m < lanes; ++m) {
            if (!(mask >> m & 1u)) continue;
            Fiber &lane = fibers[first + m];
            if (lane.state == RETURNED) continue;
            if (lane.state != IN_COLLECTIVE || lane.collective != lead.collective) {
                complete = false;
                break;
            }
            ready |= 1u << m;
        }
        if (!complete) continue;
        unsigned int ballot = 0;
        for (unsigned int m = 0; m < lanes; ++m) {
            if (ready >> m & 1u && fibers[first + m].value != 0) ballot |= 1u << m;
        }
        for (unsigned int m = 0; m < lanes; ++m) {
            if (!(ready >> m & 1u)) continue;
            Fiber &lane = fibers[first + m];
            int width = lane.width, segment = (int)m / width * width, from = (int)m;
            switch (lane.collective) {
            case BALLOT: lane.result = ballot; break;
            case SHFL_IDX: from = segment + lane.argument % width; break;
            case SHFL_UP: from = (int)m - lane.argument >= segment ? (int)m - lane.argument : (int)m; break;
            case SHFL_DOWN: from = (int)m + lane.argument < segment + width ? (int)m + lane.argument : (int)m; break;
            case SHFL_XOR: from = ((int)m ^ lane.argument) < segment + width ? (int)m ^ lane.argument : (int)m; break;
            case MATCH_ANY: {
                unsigned int same = 0;
                for (unsigned int o = 0; o < lanes; ++o) {
                    if (ready >> o & 1u && fibers[first + o].value == lane.value) same |= 1u << o;
                }
                lane.result = same;
                break;
            }
            case SYNCWARP: lane.result = 0; break;
            }
            if (lane.collective >= SHFL_IDX && lane.collective <= SHFL_XOR) {
                lane.result = (unsigned)from < lanes && ready >> from & 1u ? fibers[first + from].value : lane.value;
            }
        }
        for (unsigned int m = 0; m < lanes; ++m) {
            if (ready >> m & 1u) fibers[first + m].state = RUNNABLE;
        }
        return true;
    }
    return false;
}

// Runs one block to its end; false (with `failure` set) where it cannot make progress.
static bool run_block(unsigned int count) {
    for (unsigned int t = 0; t < count; ++t) {
        Fiber &fiber = fibers[t];
        start_context(fiber, stacks + (size_t)t * STACK_BYTES, STACK_BYTES);
        fiber.state = RUNNABLE;
        fiber.index = uint3{t % blockDim.x, t / blockDim.x % blockDim.y, t / (blockDim.x * blockDim.y)};
    }
    bool forward = true;
    for (;;) {
        for (unsigned int k = 0; k < count; ++k) {
            Fiber &fiber = fibers[forward ? k : count - 1 - k];
            if (fiber.state != RUNNABLE) continue;
            current = &fiber;
            threadIdx = fiber.index;
            switch_context(&scheduler, &fiber.context);
        }
        forward = !forward;
        bool progress = false, live = false, all_at_barrier = true;
        for (unsigned int first = 0; first < count; first += 32) {
            while (complete_collective(first, count)) progress = true;
        }
        for (unsigned int t = 0; t < count; ++t) {
            if (fibers[t].state == RETURNED) continue;
            live = true;
            if (fibers[t].state == RUNNABLE) progress = true;
            if (fibers[t].state != AT_BARRIER) all_at_barrier = false;
        }
        if (!live) return true;
        if (progress) continue;
        if (all_at_barrier) {
            for (unsigned int t = 0; t < count; ++t) {
                if (fibers[t].state == AT_BARRIER) fibers[t].state = RUNNABLE;
            }
            continue;
        }
        failure = "the block cannot make progress: threads wait in different barriers or collectives";
        return false;
    }
}

template <class... A, size_t... I>
static void load(std::tuple<A...> &arguments, void **params, std::index_sequence<I...>) {
    (memcpy((void *)&std::get<I>(arguments), params[I], sizeof(A)), ...);
}

// Runs `kernel` over the launch's grid; 0, or CUDA_ERROR_LAUNCH_FAILED (719) after printing why.
template <class... A> static int run(void (*kernel)(A...), const Launch *launch, const char *name) {
    typedef std::tuple<std::remove_cv_t<A>...> Arguments;
    struct Call {
        void (*kernel)(A...);
        Arguments arguments;
    } call{kernel, Arguments{}};
    load(call.arguments, launch->params, std::index_sequence_for<A...>{});
    unsigned int count = launch->block[0] * launch->block[1] * launch->block[2];
    if (count == 0 || count > MAX_THREADS) {
        fprintf(stderr, "fakecuda emulation: %s: %u threads a block\n", name, count);
        return 719;
    }
    if (!stacks) {
        void *mapped = mmap(nullptr, STACK_BYTES * MAX_THREADS, PROT_READ | PROT_WRITE,
                            MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (mapped == MAP_FAILED) return 2; /* CUDA_ERROR_OUT_OF_MEMORY */
        stacks = (unsigned char *)mapped;
    }
    body = [](void *data) {
        Call *c = (Call *)data;
        std::apply(c->kernel, c->arguments);
    };
    body_data = &call;
    blockDim = dim3{launch->block[0], launch->block[1], launch->block[2]};
    gridDim = dim3{launch->grid[0], launch->grid[1], launch->grid[2]};
    for (unsigned int z = 0; z < gridDim.z; ++z) {
        for (unsigned int y = 0; y < gridDim.y; ++y) {
            for (unsigned int x = 0; x < gridDim.x; ++x) {
                blockIdx = uint3{x, y, z};
                if (!run_block(count)) {
                    fprintf(stderr, "fakecuda emulation: %s, block (%u, %u, %u): %s\n", name, x, y, z, failure);
                    return 719;
                }
            }
        }
    }
    return 0;
}

template <class T> static inline unsigned long long widen(T value) {
    static_assert(sizeof(T) <= 8, "a shuffle moves at most 8 bytes");
    unsigned long long bits = 0;
    memcpy(&bits, &value, sizeof value);
    return bits;
}
template <class T> static inline T narrow(unsigned long long bits) {
    T value;
    memcpy(&value, &bits, sizeof value);
    return value;
}
} // namespace fakecuda

static inline void __syncthreads() {
    fakecuda::current->state = fakecuda::AT_BARRIER;
    fakecuda::yield();
}
// __syncthreads that also counts the threads whose predicate holds, of those that reach it: a
// barrier, the tallies reset by thread 0, a barrier, every thread's vote, a barrier (the next
// call's reset waits for every read of this one behind its first barrier).
namespace fakecuda {
static int block_votes, block_voters;
}
static inline int __syncthreads_count(int predicate) {
    __syncthreads();
    if (threadIdx.x == 0 && threadIdx.y == 0 && threadIdx.z == 0) fakecuda::block_votes = fakecuda::block_voters = 0;
    __syncthreads();
    fakecuda::block_votes += predicate != 0;
    fakecuda::block_voters += 1;
    __syncthreads();
    return fakecuda::block_votes;
}
static inline int __syncthreads_and(int predicate) {
    const int votes = __syncthreads_count(predicate);
    return votes == fakecuda::block_voters;
}
static inline int __syncthreads_or(int predicate) { return __syncthreads_count(predicate) != 0; }
static inline void __syncwarp(unsigned int mask = 0xffffffffu) {
    fakecuda::collective(fakecuda::SYNCWARP, mask, 0, 0, 32);
}
static inline unsigned int __ballot_sync(unsigned int mask, int predicate) {
    return (unsigned int)fakecuda::collective(fakecuda::BALLOT, mask, predicate != 0, 0, 32);
}
static inline int __any_sync(unsigned int mask, int predicate) { return __ballot_sync(mask, predicate) != 0; }
static inline int __all_sync(unsigned int mask, int predicate) {
    return (__ballot_sync(mask, predicate) & mask) == (__ballot_sync(mask, 1) & mask);
}
static inline unsigned int __activemask() { return __ballot_sync(0xffffffffu, 1); }
// warp_peers.cuh's PTX: the lanes whose sign of `x` equals this lane's.
static inline unsigned int fakecuda_sign_peers(int x) {
    const unsigned int negative = __ballot_sync(0xffffffffu, x < 0);
    return x < 0 ? negative : ~negative;
}
template <class T> static inline unsigned int __match_any_sync(unsigned int mask, T value) {
    return (unsigned int)fakecuda::collective(fakecuda::MATCH_ANY, mask, fakecuda::widen(value), 0, 32);
}
template <class T> static inline T __shfl_sync(unsigned int mask, T value, int lane, int width = 32) {
    return fakecuda::narrow<T>(fakecuda::collective(fakecuda::SHFL_IDX, mask, fakecuda::widen(value), lane, width));
}
template <class T> static inline T __shfl_up_sync(unsigned int mask, T value, unsigned int delta, int width = 32) {
    return fakecuda::narrow<T>(
        fakecuda::collective(fakecuda::SHFL_UP, mask, fakecuda::widen(value), (int)delta, width));
}
template <class T> static inline T __shfl_down_sync(unsigned int mask, T value, unsigned int delta, int width = 32) {
    return fakecuda::narrow<T>(
        fakecuda::collective(fakecuda::SHFL_DOWN, mask, fakecuda::widen(value), (int)delta, width));
}
template <class T> static inline T __shfl_xor_sync(unsigned int mask, T value, int lane_mask, int width = 32) {
    return fakecuda::narrow<T>(
        fakecuda::collective(fakecuda::SHFL_XOR, mask, fakecuda::widen(value), lane_mask, width));
}
