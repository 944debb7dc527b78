/*
 * fakecuda (test double): running work. Work submitted to a stream runs on
 * the host, in submission order.
 *
 * By default it runs at once. In deferred mode (fakecuda_set_deferred(1), or
 * FAKECUDA_DEFERRED=1 in the environment) it waits in its stream's queue, as
 * on a GPU, until something waits for it: synchronising the stream, its
 * context or an event recorded after it, querying them (which answers
 * CUDA_ERROR_NOT_READY while work was pending), a synchronous copy that
 * touches host memory, cuMemFree, cuMemFreeHost, destroying the stream,
 * unloading a module or releasing the context. Work on the legacy default
 * stream orders with the context's blocking streams. As the driver does,
 * asynchronous copies from pageable host memory take the bytes at
 * submission, and asynchronous copies into pageable memory complete before
 * they return. A failure of pending work is reported by the next call that
 * waits for the context's work.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "driver.h"

static int deferred = -1; /* -1: FAKECUDA_DEFERRED not read yet */

static int is_deferred(void) {
    if (deferred < 0) {
        const char *setting = getenv("FAKECUDA_DEFERRED");
        deferred = setting && setting[0] == '1';
    }
    return deferred;
}

/* Runs submitted work at once (0, the default) or when waited for (1).
 * Switching off first runs everything pending. */
EXPORT void fakecuda_set_deferred(int on) {
    fake_lock();
    if (!on) fake_flush_all();
    deferred = on != 0;
    fake_unlock();
}

/* 0 (the default): launching a kernel with no host implementation in kernels.c fails with
 * CUDA_ERROR_NOT_SUPPORTED when it runs; 1: it runs as a no-op, so the host side of generated
 * kernels the stand-in cannot emulate (the device-wide algorithms) can be exercised. */
static int bodiless_noop = 0;

EXPORT void fakecuda_set_bodiless_kernels_noop(int on) {
    fake_lock();
    bodiless_noop = on != 0;
    fake_unlock();
}

double fake_now_ms(void) {
    struct timespec time;
    clock_gettime(CLOCK_MONOTONIC, &time);
    return (double)time.tv_sec * 1e3 + (double)time.tv_nsec / 1e6;
}

static unsigned char *bytes_at(CUdeviceptr address, int space, size_t bytes) {
    unsigned char *found = fake_device_bytes(address, bytes);
    if (found || space == SPACE_DEVICE) return found;
    /* a host address: anything outside the fake device range (never a stale device pointer) */
    if (address == 0 || fake_is_device_address(address)) return NULL;
    return (unsigned char *)(uintptr_t)address;
}

CUresult fake_run_node(const struct fake_node *node) {
    switch (node->kind) {
    case NODE_COPY: {
        size_t bytes = node->u.copy.bytes;
        if (bytes == 0) return CUDA_SUCCESS;
        unsigned char *dst = bytes_at(node->u.copy.dst, node->u.copy.dst_space, bytes);
        unsigned char *src = bytes_at(node->u.copy.src, node->u.copy.src_space, bytes);
        if (!dst || !src) {
            fake_record_invalid();
            return CUDA_ERROR_INVALID_VALUE;
        }
        memmove(dst, src, bytes);
        return CUDA_SUCCESS;
    }
    case NODE_MEMSET: {
        size_t size = node->u.memset.element_size, count = node->u.memset.count;
        if (count == 0) return CUDA_SUCCESS;
        if (count > SIZE_MAX / size) return CUDA_ERROR_INVALID_VALUE;
        unsigned char *dst = fake_device_bytes(node->u.memset.dst, size * count);
        if (!dst) {
            fake_record_invalid();
            return CUDA_ERROR_INVALID_VALUE;
        }
        unsigned int value = node->u.memset.value;
        for (size_t i = 0; i < count; i++) memcpy(dst + i * size, &value, size); /* little-endian */
        return CUDA_SUCCESS;
    }
    case NODE_KERNEL: {
        struct fake_object *function = node->u.kernel.function;
        if (!function->live) {
            fake_record_invalid();
            return CUDA_ERROR_INVALID_HANDLE;
        }
        struct fake_launch launch = node->u.kernel.launch;
        launch.params = (void **)node->u.kernel.arg_pointers;
        /* the kernel's own source where it came with the image, else a host twin (kernels.c) */
        if (function->u.func.emulation) return fake_emulate(function, &launch);
        if (function->u.func.kernel) return function->u.func.kernel->run(&launch);
        /* neither */
        return bodiless_noop ? CUDA_SUCCESS : CUDA_ERROR_NOT_SUPPORTED;
    }
    case NODE_HOST:
        node->u.host.fn(node->u.host.data);
        return CUDA_SUCCESS;
    case NODE_RECORD: {
        struct fake_object *event = node->u.event;
        event->u.event.pending--;
        event->u.event.recorded = 1;
        event->u.event.time_ms = fake_now_ms();
        return CUDA_SUCCESS;
    }
    case NODE_FREE:
        return fake_free(node->u.free_address);
    case NODE_EMPTY:
        return CUDA_SUCCESS;
    case NODE_SET_CONDITION:
        fake_set_condition(node->u.set_condition.handle, node->u.set_condition.value);
        return CUDA_SUCCESS;
    case NODE_CONDITIONAL: {
        const struct fake_graph *const *bodies = (const struct fake_graph *const *)node->u.conditional.copies;
        unsigned int size = node->u.conditional.size;
        if (!bodies) return CUDA_ERROR_UNKNOWN; /* only copies run */
        uint64_t handle = node->u.conditional.handle;
        unsigned int value = fake_condition(handle);
        switch (node->u.conditional.type) {
        case 0: /* if, or if/else with two bodies */
            if (value) return fake_run_graph(bodies[0]);
            return size == 2 ? fake_run_graph(bodies[1]) : CUDA_SUCCESS;
        case 1: /* while: checked before each run */
            for (unsigned long iterations = 0; fake_condition(handle); iterations++) {
                if (iterations == 1000000) return CUDA_ERROR_LAUNCH_FAILED; /* a loop that never ends */
                CUresult result = fake_run_graph(bodies[0]);
                if (result != CUDA_SUCCESS) return result;
            }
            return CUDA_SUCCESS;
        default: /* switch */
            return value < size ? fake_run_graph(bodies[value]) : CUDA_SUCCESS;
        }
    }
    case NODE_COPY_3D: {
        const size_t width = node->u.copy_3d.width;
        for (size_t z = 0; z < node->u.copy_3d.depth; z++) {
            for (size_t y = 0; y < node->u.copy_3d.height; y++) {
                CUdeviceptr dst_row =
                    node->u.copy_3d.dst + (z * node->u.copy_3d.dst_rows + y) * node->u.copy_3d.dst_pitch;
                CUdeviceptr src_row =
                    node->u.copy_3d.src + (z * node->u.copy_3d.src_rows + y) * node->u.copy_3d.src_pitch;
                unsigned char *dst = fake_device_bytes(dst_row, width); /* pinned host memory too */
                unsigned char *src = fake_device_bytes(src_row, width);
                if (!dst || !src) {
                    fake_record_invalid();
                    return CUDA_ERROR_INVALID_VALUE;
                }
                memmove(dst, src, width);
            }
        }
        return CUDA_SUCCESS;
    }
    default:
        return CUDA_ERROR_UNKNOWN;
    }
}

CUresult fake_run_graph(const struct fake_graph *graph) {
    for (size_t i = 0; i < graph->count; i++) {
        if (graph->nodes[i].disabled) continue;
        CUresult result = fake_run_node(&graph->nodes[i]);
        if (result != CUDA_SUCCESS) return result;
    }
    return CUDA_SUCCESS;
}

CUresult fake_append(struct fake_graph *graph, const struct fake_node *node) {
    if (graph->count == graph->capacity) {
        size_t capacity = graph->capacity ? graph->capacity * 2 : 8;
        struct fake_node *grown = realloc(graph->nodes, capacity * sizeof *grown);
        if (!grown) return CUDA_ERROR_OUT_OF_MEMORY;
        graph->nodes = grown;
        graph->capacity = capacity;
    }
    graph->nodes[graph->count++] = *node;
    return CUDA_SUCCESS;
}

void fake_aim_arguments(struct fake_node *node) {
    const struct fake_object *function = node->u.kernel.function;
    for (int i = 0; i < function->u.func.param_count; i++) {
        node->u.kernel.arg_pointers[i] = node->u.kernel.arg_bytes + function->u.func.param_offsets[i];
    }
}

/* ---- queues (deferred mode) ---------------------------------------------------------- */

static struct fake_graph **queue_of(struct fake_object *context, struct fake_object *stream) {
    return stream ? &stream->u.stream.queue : &context->u.ctx.legacy_queue;
}

static int is_blocking(const struct fake_object *stream) { return !(stream->u.stream.flags & 1u); }

/* Runs and empties a queue. Work it submits (host functions may) goes to a new queue. */
static void run_queue(struct fake_object *context, struct fake_graph **queue) {
    struct fake_graph *pending = *queue;
    if (!pending) return;
    *queue = NULL;
    for (size_t i = 0; i < pending->count; i++) {
        CUresult result = fake_run_node(&pending->nodes[i]);
        if (result != CUDA_SUCCESS && context->u.ctx.async_error == CUDA_SUCCESS) context->u.ctx.async_error = result;
    }
    fake_free_graph(pending);
}

/* The objects of `kind` (and `context`, unless NULL) present now: running work
 * may destroy objects (stream-ordered frees), which reorders the registry. */
static struct fake_object **collect(int kind, const struct fake_object *context, size_t *count) {
    struct fake_object **found = malloc((fake_present_count() + 1) * sizeof *found);
    *count = 0;
    for (size_t i = 0; found && i < fake_present_count(); i++) {
        struct fake_object *object = fake_present_at(i);
        if (object->live && (object->kind == kind || (kind == KIND_CONTEXT && object->kind == KIND_PRIMARY)) &&
            (!context || object->context == context)) {
            found[(*count)++] = object;
        }
    }
    return found;
}

static void run_streams(struct fake_object *context, int blocking_only) {
    size_t count;
    struct fake_object **streams = collect(KIND_STREAM, context, &count);
    for (size_t i = 0; i < count; i++) {
        if (!streams[i]->live || (blocking_only && !is_blocking(streams[i]))) continue;
        run_queue(context, &streams[i]->u.stream.queue);
    }
    free(streams);
}

void fake_flush(struct fake_object *context, struct fake_object *stream) {
    if (!stream) run_streams(context, 1); /* the legacy stream waits for the blocking streams */
    run_queue(context, queue_of(context, stream));
}

int fake_has_pending(struct fake_object *context, struct fake_object *stream) {
    struct fake_graph *queue = *queue_of(context, stream);
    return queue && queue->count > 0;
}

void fake_flush_context(struct fake_object *context) {
    run_queue(context, &context->u.ctx.legacy_queue);
    run_streams(context, 0);
    run_queue(context, &context->u.ctx.legacy_queue); /* what host functions added */
}

void fake_flush_all(void) {
    size_t count;
    struct fake_object **contexts = collect(KIND_CONTEXT, NULL, &count);
    for (size_t i = 0; i < count; i++) {
        if (contexts[i]->live) fake_flush_context(contexts[i]);
    }
    free(contexts);
}

CUresult fake_take_async_error(struct fake_object *context) {
    CUresult result = context->u.ctx.async_error;
    context->u.ctx.async_error = CUDA_SUCCESS;
    return result;
}

/* Whether a copy's side is host memory, and whether that memory is pageable. */
static int is_host(CUdeviceptr address, int space, size_t bytes) {
    if (space == SPACE_HOST) return 1;
    if (space == SPACE_DEVICE) return 0;
    struct fake_object *memory = fake_memory_containing(address, bytes);
    if (memory) return memory->kind == KIND_HOST_MEMORY;
    return !fake_is_device_address(address);
}

static int is_pageable(CUdeviceptr address, int space, size_t bytes) {
    return is_host(address, space, bytes) && !fake_memory_containing(address, bytes);
}

static CUresult run_now(struct fake_node *node) {
    CUresult result = fake_run_node(node);
    fake_free_node(node);
    return result;
}

/* ---- submission ------------------------------------------------------------------------ */

CUresult fake_submit(struct fake_object *context, struct fake_object *stream, struct fake_node *node) {
    if (stream && stream->u.stream.capture_status == CAPTURE_INVALIDATED) {
        fake_free_node(node);
        return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
    }
    if (node->kind == NODE_KERNEL) fake_aim_arguments(node); /* into the heap copy: valid when the node is copied */
    if (stream && stream->u.stream.capture_status == CAPTURE_ACTIVE) {
        CUresult result = fake_append(stream->u.stream.capture, node);
        if (result != CUDA_SUCCESS) fake_free_node(node);
        return result;
    }
    if (!is_deferred()) return run_now(node);
    if (node->kind == NODE_COPY && node->u.copy.bytes > 0) {
        if (is_pageable(node->u.copy.dst, node->u.copy.dst_space, node->u.copy.bytes)) {
            fake_flush(context, stream); /* into pageable memory: done before the call returns */
            return run_now(node);
        }
        if (is_pageable(node->u.copy.src, node->u.copy.src_space, node->u.copy.bytes)) {
            unsigned char *snapshot = malloc(node->u.copy.bytes);
            if (!snapshot) return CUDA_ERROR_OUT_OF_MEMORY;
            memcpy(snapshot, (const void *)(uintptr_t)node->u.copy.src, node->u.copy.bytes);
            node->u.copy.snapshot = snapshot;
            node->u.copy.src = (CUdeviceptr)(uintptr_t)snapshot;
            node->u.copy.src_space = SPACE_HOST;
        }
    }
    if (!stream) {
        run_streams(context, 1);
    } else if (is_blocking(stream)) {
        run_queue(context, &context->u.ctx.legacy_queue);
    }
    struct fake_graph **queue = queue_of(context, stream);
    if (!*queue && !(*queue = calloc(1, sizeof **queue))) {
        fake_free_node(node);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    CUresult result = fake_append(*queue, node);
    if (result != CUDA_SUCCESS) fake_free_node(node);
    return result;
}

CUresult fake_submit_synchronous(struct fake_object *context, struct fake_node *node) {
    if (!is_deferred()) return run_now(node);
    int touches_host = node->kind == NODE_COPY && node->u.copy.bytes > 0 &&
                       (is_host(node->u.copy.dst, node->u.copy.dst_space, node->u.copy.bytes) ||
                        is_host(node->u.copy.src, node->u.copy.src_space, node->u.copy.bytes));
    if (!touches_host) return fake_submit(context, NULL, node); /* device-side work: asynchronous */
    fake_flush(context, NULL);
    CUresult result = run_now(node);
    return result != CUDA_SUCCESS ? result : fake_take_async_error(context);
}
