/*
 * fakecuda (test double): streams, events, stream capture and graphs. Work
 * runs on the host in submission order, at once or deferred (work.c); a
 * capturing stream records it into a graph instead, and launching the
 * instantiated graph submits the recorded work again.
 */
#include <stdlib.h>
#include <string.h>

#include "driver.h"

#define STREAM_LEGACY ((CUstream)(uintptr_t)1)
#define STREAM_PER_THREAD ((CUstream)(uintptr_t)2)


CUresult fake_resolve_stream(CUstream handle, struct fake_object **context, struct fake_object **stream) {
    *stream = NULL;
    if (handle == NULL || handle == STREAM_LEGACY || handle == STREAM_PER_THREAD) return fake_current_context(context);
    *stream = fake_lookup(handle, KIND_STREAM);
    if (!*stream) return CUDA_ERROR_INVALID_HANDLE;
    *context = (*stream)->context;
    return CUDA_SUCCESS;
}

int fake_refuse_in_capture(struct fake_object *stream) {
    if (!stream || stream->u.stream.capture_status == CAPTURE_NONE) return 0;
    stream->u.stream.capture_status = CAPTURE_INVALIDATED;
    return 1;
}

int fake_capture_forbids(void) {
    int forbidden = 0;
    for (size_t i = 0; i < fake_present_count(); i++) {
        struct fake_object *stream = fake_present_at(i);
        if (stream->kind != KIND_STREAM || !stream->live || stream->u.stream.capture_status != CAPTURE_ACTIVE) continue;
        int own_thread = pthread_equal(stream->u.stream.capture_thread, pthread_self());
        int mode = stream->u.stream.capture_mode;
        if ((own_thread && mode != CAPTURE_MODE_RELAXED) || (!own_thread && mode == CAPTURE_MODE_GLOBAL)) {
            stream->u.stream.capture_status = CAPTURE_INVALIDATED;
            forbidden = 1;
        }
    }
    return forbidden;
}

/* ---- streams ------------------------------------------------------------------------ */

static CUresult stream_create(CUstream *out, unsigned int flags, int priority) {
    struct fake_object *context;
    CUresult result = fake_current_context(&context);
    if (result != CUDA_SUCCESS) return result;
    if (!out || (flags & ~1u)) return CUDA_ERROR_INVALID_VALUE;
    struct fake_object *stream = fake_new(KIND_STREAM, context);
    if (!stream) return CUDA_ERROR_OUT_OF_MEMORY;
    stream->u.stream.flags = flags;
    stream->u.stream.priority = priority < -5 ? -5 : priority > 0 ? 0 : priority;
    *out = fake_handle(stream);
    return CUDA_SUCCESS;
}
EXPORT CUresult cuStreamCreate(CUstream *phStream, unsigned int Flags)
    FAKE_API(cuStreamCreate, stream_create(phStream, Flags, 0))
EXPORT CUresult cuStreamCreateWithPriority(CUstream *phStream, unsigned int flags, int priority)
    FAKE_API(cuStreamCreateWithPriority, stream_create(phStream, flags, priority))

static CUresult stream_destroy(CUstream handle) {
    struct fake_object *stream = fake_lookup_for_destroy(handle, KIND_STREAM);
    if (!stream) return CUDA_ERROR_INVALID_HANDLE;
    fake_flush(stream->context, stream); /* queued work still completes */
    return fake_destroy(stream);
}
EXPORT CUresult cuStreamDestroy_v2(CUstream hStream) FAKE_API(cuStreamDestroy_v2, stream_destroy(hStream))

static CUresult stream_synchronize(CUstream handle) {
    struct fake_object *context, *stream;
    CUresult result = fake_resolve_stream(handle, &context, &stream);
    if (result != CUDA_SUCCESS) return result;
    if (!stream && fake_capture_forbids()) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED; /* the legacy stream */
    if (fake_refuse_in_capture(stream)) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    fake_flush(context, stream);
    return fake_take_async_error(context);
}
EXPORT CUresult cuStreamSynchronize(CUstream hStream) FAKE_API(cuStreamSynchronize, stream_synchronize(hStream))

static CUresult stream_query(CUstream handle) {
    struct fake_object *context, *stream;
    CUresult result = fake_resolve_stream(handle, &context, &stream);
    if (result != CUDA_SUCCESS) return result;
    if (fake_refuse_in_capture(stream)) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    if (!fake_has_pending(context, stream)) return CUDA_SUCCESS;
    fake_flush(context, stream); /* busy now, done by the next query */
    return CUDA_ERROR_NOT_READY;
}
EXPORT CUresult cuStreamQuery(CUstream hStream) FAKE_API(cuStreamQuery, stream_query(hStream))

static CUresult stream_wait_event(CUstream handle, CUevent event, unsigned int flags) {
    struct fake_object *context, *stream;
    CUresult result = fake_resolve_stream(handle, &context, &stream);
    if (result != CUDA_SUCCESS) return result;
    struct fake_object *awaited = fake_lookup(event, KIND_EVENT);
    if (!awaited) return CUDA_ERROR_INVALID_HANDLE;
    if (flags & ~1u) return CUDA_ERROR_INVALID_VALUE;
    /* later work of the stream waits for the event: run what it marks now */
    if (awaited->u.event.pending) fake_flush(awaited->context, awaited->u.event.record_stream);
    return CUDA_SUCCESS;
}
EXPORT CUresult cuStreamWaitEvent(CUstream hStream, CUevent hEvent, unsigned int Flags)
    FAKE_API(cuStreamWaitEvent, stream_wait_event(hStream, hEvent, Flags))

static CUresult stream_context(CUstream handle, CUcontext *out) {
    if (!out) return CUDA_ERROR_INVALID_VALUE;
    struct fake_object *context, *stream;
    CUresult result = fake_resolve_stream(handle, &context, &stream);
    if (result == CUDA_SUCCESS) *out = fake_handle(context);
    return result;
}
EXPORT CUresult cuStreamGetCtx(CUstream hStream, CUcontext *pctx) FAKE_API(cuStreamGetCtx, stream_context(hStream, pctx))

static CUresult stream_property(CUstream handle, int *priority, unsigned int *flags) {
    struct fake_object *context, *stream;
    CUresult result = fake_resolve_stream(handle, &context, &stream);
    if (result != CUDA_SUCCESS) return result;
    if (priority) *priority = stream ? stream->u.stream.priority : 0;
    if (flags) *flags = stream ? stream->u.stream.flags : 0;
    return CUDA_SUCCESS;
}
EXPORT CUresult cuStreamGetPriority(CUstream hStream, int *priority)
    FAKE_API(cuStreamGetPriority, priority ? stream_property(hStream, priority, NULL) : CUDA_ERROR_INVALID_VALUE)
EXPORT CUresult cuStreamGetFlags(CUstream hStream, unsigned int *flags)
    FAKE_API(cuStreamGetFlags, flags ? stream_property(hStream, NULL, flags) : CUDA_ERROR_INVALID_VALUE)

static CUresult launch_host_func(CUstream handle, CUhostFn fn, void *data) {
    struct fake_object *context, *stream;
    CUresult result = fake_resolve_stream(handle, &context, &stream);
    if (result != CUDA_SUCCESS) return result;
    if (!fn) return CUDA_ERROR_INVALID_VALUE;
    struct fake_node node = {.kind = NODE_HOST};
    node.u.host.fn = fn;
    node.u.host.data = data;
    return fake_submit(context, stream, &node);
}
EXPORT CUresult cuLaunchHostFunc(CUstream hStream, CUhostFn fn, void *userData)
    FAKE_API(cuLaunchHostFunc, launch_host_func(hStream, fn, userData))

/* ---- events ------------------------------------------------------------------------- */

#define EVENT_DISABLE_TIMING 2u
#define EVENT_INTERPROCESS 4u

static CUresult event_create(CUevent *out, unsigned int flags) {
    struct fake_object *context;
    CUresult result = fake_current_context(&context);
    if (result != CUDA_SUCCESS) return result;
    if (!out || (flags & ~7u)) return CUDA_ERROR_INVALID_VALUE;
    if ((flags & EVENT_INTERPROCESS) && !(flags & EVENT_DISABLE_TIMING)) return CUDA_ERROR_INVALID_VALUE;
    struct fake_object *event = fake_new(KIND_EVENT, context);
    if (!event) return CUDA_ERROR_OUT_OF_MEMORY;
    event->u.event.flags = flags;
    *out = fake_handle(event);
    return CUDA_SUCCESS;
}
EXPORT CUresult cuEventCreate(CUevent *phEvent, unsigned int Flags) FAKE_API(cuEventCreate, event_create(phEvent, Flags))

static CUresult event_destroy(CUevent handle) {
    struct fake_object *event = fake_lookup_for_destroy(handle, KIND_EVENT);
    return event ? fake_destroy(event) : CUDA_ERROR_INVALID_HANDLE;
}
EXPORT CUresult cuEventDestroy_v2(CUevent hEvent) FAKE_API(cuEventDestroy_v2, event_destroy(hEvent))

static CUresult event_record(CUevent handle, CUstream stream_handle, unsigned int flags) {
    struct fake_object *event = fake_lookup(handle, KIND_EVENT);
    if (!event) return CUDA_ERROR_INVALID_HANDLE;
    struct fake_object *context, *stream;
    CUresult result = fake_resolve_stream(stream_handle, &context, &stream);
    if (result != CUDA_SUCCESS) return result;
    if (flags & ~1u) return CUDA_ERROR_INVALID_VALUE;
    if (context != event->context) return CUDA_ERROR_INVALID_HANDLE;
    if (stream && stream->u.stream.capture_status != CAPTURE_NONE) return CUDA_SUCCESS; /* a join point only */
    struct fake_node node = {.kind = NODE_RECORD};
    node.u.event = event;
    event->u.event.pending++;
    event->u.event.record_stream = stream;
    result = fake_submit(context, stream, &node);
    if (result != CUDA_SUCCESS) event->u.event.pending--;
    return result;
}
EXPORT CUresult cuEventRecord(CUevent hEvent, CUstream hStream) FAKE_API(cuEventRecord, event_record(hEvent, hStream, 0))
EXPORT CUresult cuEventRecordWithFlags(CUevent hEvent, CUstream hStream, unsigned int flags)
    FAKE_API(cuEventRecordWithFlags, event_record(hEvent, hStream, flags))

static CUresult event_synchronize(CUevent handle) {
    struct fake_object *event = fake_lookup(handle, KIND_EVENT);
    if (!event) return CUDA_ERROR_INVALID_HANDLE;
    if (event->u.event.pending) fake_flush(event->context, event->u.event.record_stream);
    return fake_take_async_error(event->context);
}
EXPORT CUresult cuEventSynchronize(CUevent hEvent) FAKE_API(cuEventSynchronize, event_synchronize(hEvent))

static CUresult event_query(CUevent handle) {
    struct fake_object *event = fake_lookup(handle, KIND_EVENT);
    if (!event) return CUDA_ERROR_INVALID_HANDLE;
    if (!event->u.event.pending) return CUDA_SUCCESS;
    fake_flush(event->context, event->u.event.record_stream); /* busy now, done by the next query */
    return CUDA_ERROR_NOT_READY;
}
EXPORT CUresult cuEventQuery(CUevent hEvent) FAKE_API(cuEventQuery, event_query(hEvent))

static CUresult event_elapsed(float *ms, CUevent start_handle, CUevent end_handle) {
    if (!ms) return CUDA_ERROR_INVALID_VALUE;
    struct fake_object *start = fake_lookup(start_handle, KIND_EVENT);
    struct fake_object *end = fake_lookup(end_handle, KIND_EVENT);
    if (!start || !end) return CUDA_ERROR_INVALID_HANDLE;
    if (start->u.event.pending || end->u.event.pending) return CUDA_ERROR_NOT_READY;
    if (!start->u.event.recorded || !end->u.event.recorded) return CUDA_ERROR_INVALID_HANDLE;
    if ((start->u.event.flags | end->u.event.flags) & EVENT_DISABLE_TIMING) return CUDA_ERROR_INVALID_HANDLE;
    *ms = (float)(end->u.event.time_ms - start->u.event.time_ms);
    return CUDA_SUCCESS;
}
EXPORT CUresult cuEventElapsedTime_v2(float *pMilliseconds, CUevent hStart, CUevent hEnd)
    FAKE_API(cuEventElapsedTime_v2, event_elapsed(pMilliseconds, hStart, hEnd))
/* The name drivers before 12.8 export (the same parameters). */
EXPORT CUresult cuEventElapsedTime(float *pMilliseconds, CUevent hStart, CUevent hEnd)
    FAKE_API(cuEventElapsedTime, event_elapsed(pMilliseconds, hStart, hEnd))

/* ---- capture ------------------------------------------------------------------------- */

/* Identities of capture sequences, counted from 1. */
static uint64_t capture_ids;

static CUresult begin_capture(CUstream handle, int mode) {
    if (handle == NULL || handle == STREAM_LEGACY || handle == STREAM_PER_THREAD) {
        return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    }
    struct fake_object *stream = fake_lookup(handle, KIND_STREAM);
    if (!stream) return CUDA_ERROR_INVALID_HANDLE;
    if (mode < CAPTURE_MODE_GLOBAL || mode > CAPTURE_MODE_RELAXED) return CUDA_ERROR_INVALID_VALUE;
    if (stream->u.stream.capture_status != CAPTURE_NONE) return CUDA_ERROR_ILLEGAL_STATE;
    struct fake_graph *graph = calloc(1, sizeof *graph);
    if (!graph) return CUDA_ERROR_OUT_OF_MEMORY;
    stream->u.stream.capture = graph;
    stream->u.stream.capture_id = ++capture_ids;
    stream->u.stream.capture_status = CAPTURE_ACTIVE;
    stream->u.stream.capture_mode = mode;
    stream->u.stream.capture_thread = pthread_self();
    return CUDA_SUCCESS;
}
EXPORT CUresult cuStreamBeginCapture_v2(CUstream hStream, int mode)
    FAKE_API(cuStreamBeginCapture_v2, begin_capture(hStream, mode))

/* Capture into an existing graph (dependencies are accepted and, as work runs in order, need no edges). */
static CUresult begin_capture_to_graph(CUstream handle, CUgraph graph_handle, const CUgraphNode *dependencies,
                                       size_t count, int mode) {
    struct fake_object *graph = fake_lookup_graph(graph_handle);
    if (!graph) return CUDA_ERROR_INVALID_HANDLE;
    CUresult result = fake_check_dependencies(graph->u.graph.graph, dependencies, count);
    if (result != CUDA_SUCCESS) return result;
    if (handle == NULL || handle == STREAM_LEGACY || handle == STREAM_PER_THREAD) {
        return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    }
    struct fake_object *stream = fake_lookup(handle, KIND_STREAM);
    if (!stream) return CUDA_ERROR_INVALID_HANDLE;
    if (stream->context != graph->context) return CUDA_ERROR_INVALID_VALUE;
    if (mode < CAPTURE_MODE_GLOBAL || mode > CAPTURE_MODE_RELAXED) return CUDA_ERROR_INVALID_VALUE;
    if (stream->u.stream.capture_status != CAPTURE_NONE) return CUDA_ERROR_ILLEGAL_STATE;
    stream->u.stream.capture = graph->u.graph.graph;
    stream->u.stream.capture_target = graph;
    stream->u.stream.capture_id = ++capture_ids;
    stream->u.stream.capture_status = CAPTURE_ACTIVE;
    stream->u.stream.capture_mode = mode;
    stream->u.stream.capture_thread = pthread_self();
    return CUDA_SUCCESS;
}
EXPORT CUresult cuStreamBeginCaptureToGraph(CUstream hStream, CUgraph hGraph, const CUgraphNode *dependencies,
                                            const void *dependencyData, size_t numDependencies, int mode)
    FAKE_API(cuStreamBeginCaptureToGraph,
             dependencyData ? CUDA_ERROR_NOT_SUPPORTED
                            : begin_capture_to_graph(hStream, hGraph, dependencies, numDependencies, mode))

static void release_capture(struct fake_object *stream) {
    if (stream->u.stream.capture_owned) { /* the object made for a plain capture goes with it */
        fake_destroy(stream->u.stream.capture_target);
    } else if (!stream->u.stream.capture_target) { /* a graph captured into keeps what was recorded */
        struct fake_object dropped = {.kind = KIND_STREAM};
        dropped.u.stream.capture = stream->u.stream.capture;
        fake_release_memory(&dropped); /* frees the recorded graph */
    }
    stream->u.stream.capture = NULL;
    stream->u.stream.capture_target = NULL;
    stream->u.stream.capture_owned = 0;
    stream->u.stream.capture_status = CAPTURE_NONE;
}

static CUresult end_capture(CUstream handle, CUgraph *out) {
    if (!out) return CUDA_ERROR_INVALID_VALUE;
    struct fake_object *stream = fake_lookup(handle, KIND_STREAM);
    if (!stream) return CUDA_ERROR_INVALID_HANDLE;
    if (stream->u.stream.capture_status == CAPTURE_NONE) return CUDA_ERROR_ILLEGAL_STATE;
    if (stream->u.stream.capture_mode != CAPTURE_MODE_RELAXED &&
        !pthread_equal(stream->u.stream.capture_thread, pthread_self())) {
        return CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD;
    }
    *out = NULL;
    if (stream->u.stream.capture_status == CAPTURE_INVALIDATED) {
        release_capture(stream);
        return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
    }
    if (stream->u.stream.capture_target) { /* cuStreamBeginCaptureToGraph: the nodes are in its graph */
        *out = fake_handle(stream->u.stream.capture_target);
        stream->u.stream.capture = NULL;
        stream->u.stream.capture_target = NULL;
        stream->u.stream.capture_owned = 0; /* the caller's now */
        stream->u.stream.capture_status = CAPTURE_NONE;
        return CUDA_SUCCESS;
    }
    struct fake_object *graph = fake_new(KIND_GRAPH, stream->context);
    if (!graph) {
        release_capture(stream);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    graph->u.graph.graph = stream->u.stream.capture;
    stream->u.stream.capture = NULL;
    stream->u.stream.capture_status = CAPTURE_NONE;
    *out = fake_handle(graph);
    return CUDA_SUCCESS;
}
/* Ends a capture that an injected failure of cuStreamEndCapture cut short:
 * the driver leaves capture mode whatever cuStreamEndCapture returns. */
static CUresult abandon_capture(CUstream handle) {
    struct fake_object *stream = fake_lookup_quiet(handle, KIND_STREAM);
    if (stream && stream->u.stream.capture_status != CAPTURE_NONE) release_capture(stream);
    return CUDA_SUCCESS;
}

EXPORT CUresult cuStreamEndCapture(CUstream hStream, CUgraph *phGraph) {
    CUresult injected = fake_enter("cuStreamEndCapture", 1);
    if (injected != CUDA_SUCCESS) {
        fake_lock();
        abandon_capture(hStream);
        fake_unlock();
        return injected;
    }
    if (!fake_initialized()) return CUDA_ERROR_NOT_INITIALIZED;
    fake_lock();
    CUresult result = end_capture(hStream, phGraph);
    fake_unlock();
    return result;
}

static CUresult is_capturing(CUstream handle, int *status) {
    if (!status) return CUDA_ERROR_INVALID_VALUE;
    struct fake_object *context, *stream;
    CUresult result = fake_resolve_stream(handle, &context, &stream);
    if (result == CUDA_SUCCESS) *status = stream ? stream->u.stream.capture_status : CAPTURE_NONE;
    return result;
}
EXPORT CUresult cuStreamIsCapturing(CUstream hStream, int *captureStatus)
    FAKE_API(cuStreamIsCapturing, is_capturing(hStream, captureStatus))

/* The capture's status, identity and graph: a plain capture's graph gets its object on the first
 * ask, and its end hands out that object. No dependencies are reported: work runs in order. */
static CUresult capture_info(CUstream handle, int *status, uint64_t *id, CUgraph *graph_out,
                             const CUgraphNode **dependencies, const void **edges, size_t *count) {
    if (!status) return CUDA_ERROR_INVALID_VALUE;
    struct fake_object *context, *stream;
    CUresult result = fake_resolve_stream(handle, &context, &stream);
    if (result != CUDA_SUCCESS) return result;
    *status = stream ? stream->u.stream.capture_status : CAPTURE_NONE;
    if (id) *id = *status == CAPTURE_NONE ? 0 : stream->u.stream.capture_id;
    if (dependencies) *dependencies = NULL;
    if (edges) *edges = NULL;
    if (count) *count = 0;
    if (!graph_out) return CUDA_SUCCESS;
    *graph_out = NULL;
    if (*status != CAPTURE_ACTIVE) return CUDA_SUCCESS;
    if (!stream->u.stream.capture_target) {
        struct fake_object *graph = fake_new(KIND_GRAPH, stream->context);
        if (!graph) return CUDA_ERROR_OUT_OF_MEMORY;
        graph->u.graph.graph = stream->u.stream.capture;
        stream->u.stream.capture_target = graph;
        stream->u.stream.capture_owned = 1;
    }
    *graph_out = fake_handle(stream->u.stream.capture_target);
    return CUDA_SUCCESS;
}
EXPORT CUresult cuStreamGetCaptureInfo_v3(CUstream hStream, int *captureStatus_out, uint64_t *id_out,
                                          CUgraph *graph_out, const CUgraphNode **dependencies_out,
                                          const void **edgeData_out, size_t *numDependencies_out)
    FAKE_API(cuStreamGetCaptureInfo_v3, capture_info(hStream, captureStatus_out, id_out, graph_out,
                                                     dependencies_out, edgeData_out, numDependencies_out))

/* Later work depends on the nodes given: accepted (work runs in order), for a capturing stream. */
static CUresult update_capture_dependencies(CUstream handle, size_t count, unsigned int flags) {
    struct fake_object *context, *stream;
    CUresult result = fake_resolve_stream(handle, &context, &stream);
    if (result != CUDA_SUCCESS) return result;
    if (flags > 1) return CUDA_ERROR_INVALID_VALUE;
    if (!stream || stream->u.stream.capture_status != CAPTURE_ACTIVE) return CUDA_ERROR_ILLEGAL_STATE;
    (void)count;
    return CUDA_SUCCESS;
}
EXPORT CUresult cuStreamUpdateCaptureDependencies_v2(CUstream hStream, CUgraphNode *dependencies,
                                                     const void *dependencyData, size_t numDependencies,
                                                     unsigned int flags)
    FAKE_API(cuStreamUpdateCaptureDependencies_v2,
             (numDependencies && !dependencies) || dependencyData
                 ? CUDA_ERROR_INVALID_VALUE
                 : update_capture_dependencies(hStream, numDependencies, flags))

/* ---- graphs ---------------------------------------------------------------------------- */

static CUresult instantiate(CUgraphExec *out, CUgraph handle, unsigned long long flags) {
    if (!out) return CUDA_ERROR_INVALID_VALUE;
    struct fake_object *graph = fake_lookup(handle, KIND_GRAPH);
    if (!graph) return CUDA_ERROR_INVALID_HANDLE;
    if (flags & ~0xfull) return CUDA_ERROR_INVALID_VALUE;
    struct fake_graph *copy = fake_copy_graph(graph->u.graph.graph);
    if (!copy) return CUDA_ERROR_OUT_OF_MEMORY;
    struct fake_object *exec = fake_new(KIND_GRAPH_EXEC, graph->context);
    if (!exec) {
        struct fake_object dropped = {.kind = KIND_GRAPH_EXEC};
        dropped.u.graph.graph = copy;
        fake_release_memory(&dropped);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    exec->u.graph.graph = copy;
    *out = fake_handle(exec);
    return CUDA_SUCCESS;
}
/* As the real driver: UPLOAD (2) needs an upload stream, which only the params form carries. */
EXPORT CUresult cuGraphInstantiateWithFlags(CUgraphExec *phGraphExec, CUgraph hGraph, unsigned long long flags)
    FAKE_API(cuGraphInstantiateWithFlags,
             (flags & CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD) ? CUDA_ERROR_INVALID_VALUE
                                                          : instantiate(phGraphExec, hGraph, flags))

static CUresult instantiate_with_params(CUgraphExec *out, CUgraph handle, CUDA_GRAPH_INSTANTIATE_PARAMS *params) {
    if (!params) return CUDA_ERROR_INVALID_VALUE;
    if (params->flags & CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD) {
        struct fake_object *context, *stream;
        CUresult result = fake_resolve_stream(params->hUploadStream, &context, &stream);
        if (result != CUDA_SUCCESS) return result;
    }
    CUresult result = instantiate(out, handle, params->flags);
    params->result_out = result == CUDA_SUCCESS ? CUDA_GRAPH_INSTANTIATE_SUCCESS : CUDA_GRAPH_INSTANTIATE_ERROR;
    return result;
}
EXPORT CUresult cuGraphInstantiateWithParams(CUgraphExec *phGraphExec, CUgraph hGraph,
                                             CUDA_GRAPH_INSTANTIATE_PARAMS *instantiateParams)
    FAKE_API(cuGraphInstantiateWithParams, instantiate_with_params(phGraphExec, hGraph, instantiateParams))

static CUresult graph_launch(CUgraphExec handle, CUstream stream_handle) {
    struct fake_object *exec = fake_lookup(handle, KIND_GRAPH_EXEC);
    if (!exec) return CUDA_ERROR_INVALID_HANDLE;
    struct fake_object *context, *stream;
    CUresult result = fake_resolve_stream(stream_handle, &context, &stream);
    if (result != CUDA_SUCCESS) return result;
    if (context != exec->context) return CUDA_ERROR_INVALID_HANDLE;
    if (fake_refuse_in_capture(stream)) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    const struct fake_graph *graph = exec->u.graph.graph;
    result = fake_submit_conditions(context, stream, graph); /* defaults first, as a launch begins */
    if (result != CUDA_SUCCESS) return result;
    for (size_t i = 0; i < graph->count; i++) {
        if (graph->nodes[i].disabled || graph->nodes[i].kind == NODE_EMPTY) continue;
        struct fake_node node;
        result = fake_copy_node(&graph->nodes[i], &node);
        if (result != CUDA_SUCCESS) return result;
        if (node.kind == NODE_RECORD) {
            node.u.event->u.event.pending++;
            node.u.event->u.event.record_stream = stream;
        }
        result = fake_submit(context, stream, &node);
        if (result != CUDA_SUCCESS) {
            if (node.kind == NODE_RECORD) node.u.event->u.event.pending--;
            return result;
        }
    }
    return CUDA_SUCCESS;
}
EXPORT CUresult cuGraphLaunch(CUgraphExec hGraphExec, CUstream hStream)
    FAKE_API(cuGraphLaunch, graph_launch(hGraphExec, hStream))

/* Node handles are positions (1-based), enough for counting and identity. */
static CUresult graph_nodes(CUgraph handle, CUgraphNode *nodes, size_t *count) {
    if (!count) return CUDA_ERROR_INVALID_VALUE;
    struct fake_object *graph = fake_lookup_graph(handle);
    if (!graph) return CUDA_ERROR_INVALID_HANDLE;
    size_t total = graph->u.graph.graph->count;
    if (nodes) {
        for (size_t i = 0; i < *count; i++) nodes[i] = i < total ? (CUgraphNode)(uintptr_t)(i + 1) : NULL;
        if (*count > total) *count = total;
    } else {
        *count = total;
    }
    return CUDA_SUCCESS;
}
EXPORT CUresult cuGraphGetNodes(CUgraph hGraph, CUgraphNode *nodes, size_t *numNodes)
    FAKE_API(cuGraphGetNodes, graph_nodes(hGraph, nodes, numNodes))

static CUresult graph_upload(CUgraphExec handle, CUstream stream_handle) {
    struct fake_object *exec = fake_lookup(handle, KIND_GRAPH_EXEC);
    if (!exec) return CUDA_ERROR_INVALID_HANDLE;
    struct fake_object *context, *stream;
    CUresult result = fake_resolve_stream(stream_handle, &context, &stream);
    if (result != CUDA_SUCCESS) return result;
    return context == exec->context ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}
EXPORT CUresult cuGraphUpload(CUgraphExec hGraphExec, CUstream hStream)
    FAKE_API(cuGraphUpload, graph_upload(hGraphExec, hStream))

static CUresult graph_destroy(void *handle, int kind) {
    struct fake_object *graph = fake_lookup_for_destroy(handle, kind);
    return graph ? fake_destroy(graph) : CUDA_ERROR_INVALID_HANDLE;
}
EXPORT CUresult cuGraphExecDestroy(CUgraphExec hGraphExec)
    FAKE_API(cuGraphExecDestroy, graph_destroy(hGraphExec, KIND_GRAPH_EXEC))
EXPORT CUresult cuGraphDestroy(CUgraph hGraph) FAKE_API(cuGraphDestroy, graph_destroy(hGraph, KIND_GRAPH))
