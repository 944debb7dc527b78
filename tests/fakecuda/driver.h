/*
 * fakecuda (test double): helpers shared by the driver entry points
 * (devices.c, memory.c, streams.c, functions.c).
 */
#ifndef FAKECUDA_DRIVER_H
#define FAKECUDA_DRIVER_H

#include "registry.h"

#define EXPORT __attribute__((visibility("default")))

/* The body of a counted driver entry point: count the call (maybe fail it),
 * refuse before cuInit, then evaluate the expression under the lock. */
#define FAKE_API(name, ...)                                                                                             \
    {                                                                                                                  \
        CUresult result_ = fake_enter(#name, 1);                                                                       \
        if (result_ != CUDA_SUCCESS) return result_;                                                                   \
        if (!fake_initialized()) return CUDA_ERROR_NOT_INITIALIZED;                                                    \
        fake_lock();                                                                                                   \
        result_ = (__VA_ARGS__);                                                                                            \
        fake_unlock();                                                                                                 \
        return result_;                                                                                                \
    }

#define FAKE_TOTAL_MEMORY 150754820096ull /* 143771 MiB, an H200's */
#define FAKE_BACKING_LIMIT (1ull << 32)    /* larger allocations fail with out of memory */
#define FAKE_SM_COUNT 132
#define FAKE_MAX_SHARED_OPTIN 232448

/* devices.c (lock held) */
int fake_device_attribute(int device, int attribute);
/* The calling thread's current context, or CUDA_ERROR_INVALID_CONTEXT. */
CUresult fake_current_context(struct fake_object **context);

/* streams.c (lock held) */
/* A stream handle (NULL, CU_STREAM_LEGACY, CU_STREAM_PER_THREAD or a created
 * stream) and its context; *stream is NULL for the default streams. */
CUresult fake_resolve_stream(CUstream handle, struct fake_object **context, struct fake_object **stream);
/* Runs `node` now, or appends it to the stream's capture. Takes the node's
 * argument copy. */
CUresult fake_submit(struct fake_object *stream, struct fake_node *node);
CUresult fake_run_node(const struct fake_node *node);
/* Whether `stream` is capturing; if so the capture is invalidated (for calls
 * that are not allowed during capture). */
int fake_refuse_in_capture(struct fake_object *stream);

/* functions.c: the size of a function's argument block (offset + size of the last parameter). */
size_t fake_argument_bytes(const struct fake_object *function);

/* Whether the calling thread may not make a "potentially unsafe" call (a
 * synchronous allocation, free, copy or synchronisation) because a stream
 * capture forbids it: its own capture (unless relaxed) or another thread's
 * global-mode capture. If so, those captures are invalidated, as the driver
 * does, and the call must fail with CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED. */
int fake_capture_forbids(void);

/* memory.c (lock held) */
/* Device memory of `context`; `pool` is the pool of a stream-ordered allocation (or NULL). */
CUresult fake_allocate(struct fake_object *context, size_t bytes, struct fake_object *pool, CUdeviceptr *address);
/* A live default or created pool. */
struct fake_object *fake_lookup_pool(CUmemoryPool handle);
CUresult fake_free(CUdeviceptr address);

#endif
