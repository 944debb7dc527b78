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
int fake_valid_device(CUdevice device);
/* A retain of `device`'s primary context (as cuDevicePrimaryCtxRetain), and its release. */
CUresult fake_retain_primary(CUdevice device, struct fake_object **primary);
CUresult fake_release_primary(CUdevice device);
/* The calling thread's current context, or CUDA_ERROR_INVALID_CONTEXT. */
CUresult fake_current_context(struct fake_object **context);

/* Stream capture states and modes (cuda.h's CUstreamCaptureStatus, CUstreamCaptureMode). */
enum { CAPTURE_NONE, CAPTURE_ACTIVE, CAPTURE_INVALIDATED };
enum { CAPTURE_MODE_GLOBAL, CAPTURE_MODE_THREAD_LOCAL, CAPTURE_MODE_RELAXED };

/* streams.c (lock held) */
/* A stream handle (NULL, CU_STREAM_LEGACY, CU_STREAM_PER_THREAD or a created
 * stream) and its context; *stream is NULL for the default streams. */
CUresult fake_resolve_stream(CUstream handle, struct fake_object **context, struct fake_object **stream);
/* Whether `stream` is capturing; if so the capture is invalidated (for calls
 * that are not allowed during capture). */
int fake_refuse_in_capture(struct fake_object *stream);
/* Whether the calling thread may not make a "potentially unsafe" call (a
 * synchronous allocation, free, copy or synchronisation) because a stream
 * capture forbids it: its own capture (unless relaxed) or another thread's
 * global-mode capture. If so, those captures are invalidated, as the driver
 * does, and the call must fail with CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED. */
int fake_capture_forbids(void);

/* work.c (lock held): running work, at once or deferred (see work.c) */
/* Work for `stream` (NULL: the context's legacy default stream): recorded if
 * the stream captures, else run or queued. Takes what the node owns. */
CUresult fake_submit(struct fake_object *context, struct fake_object *stream, struct fake_node *node);
/* A synchronous copy or memset (cuMemcpyHtoD, cuMemsetD8, ...). */
CUresult fake_submit_synchronous(struct fake_object *context, struct fake_node *node);
CUresult fake_run_node(const struct fake_node *node);
CUresult fake_append(struct fake_graph *graph, const struct fake_node *node);
/* Points a kernel node's argument pointers into its own argument copy. */
void fake_aim_arguments(struct fake_node *node);
/* Runs pending work: of one stream (NULL: the legacy stream, after the
 * context's blocking streams), of a context, of everything. */
void fake_flush(struct fake_object *context, struct fake_object *stream);
void fake_flush_context(struct fake_object *context);
void fake_flush_all(void);
int fake_has_pending(struct fake_object *context, struct fake_object *stream);
/* The first failure of pending work since the last call, cleared. */
CUresult fake_take_async_error(struct fake_object *context);
double fake_now_ms(void);

/* graphs.c (lock held) */
/* A live graph or conditional body behind `handle`, or NULL (and an invalid-handle record). */
struct fake_object *fake_lookup_graph(CUgraph handle);
/* A deep copy of `graph` (argument copies and conditional bodies included), or NULL without memory. */
struct fake_graph *fake_copy_graph(const struct fake_graph *graph);
/* A copy of `node` that owns its own argument bytes and body copies (what fake_submit takes). */
CUresult fake_copy_node(const struct fake_node *node, struct fake_node *out);
/* Submits, for every condition with a default used by `graph`'s conditional nodes (bodies
 * included), the setting of that default. */
CUresult fake_submit_conditions(struct fake_object *context, struct fake_object *stream, const struct fake_graph *graph);
/* Conditions of conditional nodes: set (by NODE_SET_CONDITION and the `countdown` host kernel)
 * and read (by NODE_CONDITIONAL); an unknown handle reads as 0 and is not set. */
void fake_set_condition(uint64_t handle, unsigned int value);
unsigned int fake_condition(uint64_t handle);
/* Runs the nodes of a conditional node's body copy in order (work.c's fake_run_node on each). */
CUresult fake_run_graph(const struct fake_graph *graph);
/* Whether `count` node handles are nodes of `graph` (positions 1..count). */
CUresult fake_check_dependencies(const struct fake_graph *graph, const CUgraphNode *nodes, size_t count);

/* functions.c: the size of a function's argument block (offset + size of the last parameter). */
size_t fake_argument_bytes(const struct fake_object *function);
/* JIT log buffers named by cuModuleLoadDataEx / cuLibraryLoadData options. */
struct fake_jit_logs {
    char *info, *error;
    size_t info_size, error_size;
    void **info_size_slot, **error_size_slot;
};
CUresult fake_read_jit_options(struct fake_jit_logs *logs, unsigned int count, int *options, void **values);
/* Parses a module image, writing the JIT logs; the caller frees the entries. */
CUresult fake_parse_image(const void *image, const struct fake_jit_logs *logs, struct fake_entry **entries, int *count);
/* A module of `context` with a function per entry (a library's if `library`). */
struct fake_object *fake_make_module(struct fake_object *context, const struct fake_entry *entries, int count,
                                     struct fake_object *library);

/* globals.c (lock held): gives `module` storage for each variable; on failure the caller destroys the module. */
CUresult fake_add_variables(struct fake_object *module, const struct fake_variable *variables, int count);
/* The address and size of the variable `name` of `module`, or CUDA_ERROR_NOT_FOUND; either out-pointer may be NULL. */
CUresult fake_module_variable(struct fake_object *module, CUdeviceptr *address, size_t *bytes, const char *name);

/* memory.c (lock held) */
/* Device memory of `context`; `pool` is the pool of a stream-ordered allocation (or NULL). */
CUresult fake_allocate(struct fake_object *context, size_t bytes, struct fake_object *pool, CUdeviceptr *address);
/* A live default or created pool. */
struct fake_object *fake_lookup_pool(CUmemoryPool handle);
/* Frees device memory at once (cuMemFree, and stream-ordered frees when they run). */
CUresult fake_free(CUdeviceptr address);

/* pool_ipc.c (lock held) */
/* A live import of a pool allocation at `address` (the calling thread's context's first), or NULL. */
struct fake_object *fake_pool_import_at(CUdeviceptr address);
/* Count an order violation if imports of `memory` (freed now) or into `pool` (an imported pool
 * destroyed now) are not freed yet. */
void fake_check_pool_free(const struct fake_object *memory);
void fake_check_pool_destroy(const struct fake_object *pool);

#endif
