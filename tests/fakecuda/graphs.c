/*
 * fakecuda (test double): graphs built node by node. A graph is the ordered node list of
 * fakecuda.h; a node handle is its position (1-based, as cuGraphGetNodes gives them). Since a
 * node's dependencies exist before it, creation order is a valid order to run the nodes in, so
 * edges are checked (they must name nodes of the graph) but not stored. Executable graphs copy
 * the list; their per-node calls take the position in the graph they were made from.
 *
 * Modelled: kernel, memset (one row), memcpy between device and pinned host memory (1-D, 2-D and
 * 3-D blocks),
 * host-function, event record and wait, and empty nodes; clone and cuGraphNodeFindInClone;
 * kernel-argument updates and enabling of executable-graph nodes; cuGraphExecUpdate (same node
 * count and types, kernels of the same context); cuGraphDebugDotPrint; conditional nodes (if,
 * if/else, while, switch) over condition handles, whose bodies are graphs owned by the node and
 * whose conditions the `countdown` host kernel (kernels.c) sets, defaults set as a launch begins.
 * Not modelled (not exported, so the safe layer returns its missing-symbol error): child-graph
 * and memory nodes.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "driver.h"

typedef struct CUDA_KERNEL_NODE_PARAMS_st {
    CUfunction func;
    unsigned int gridDimX, gridDimY, gridDimZ;
    unsigned int blockDimX, blockDimY, blockDimZ;
    unsigned int sharedMemBytes;
    void **kernelParams;
    void **extra;
    CUkernel kern;
    CUcontext ctx;
} CUDA_KERNEL_NODE_PARAMS;

typedef struct CUDA_MEMSET_NODE_PARAMS_st {
    CUdeviceptr dst;
    size_t pitch;
    unsigned int value, elementSize;
    size_t width, height;
} CUDA_MEMSET_NODE_PARAMS;

typedef struct CUDA_HOST_NODE_PARAMS_st {
    CUhostFn fn;
    void *userData;
} CUDA_HOST_NODE_PARAMS;

typedef struct CUDA_MEMCPY3D_st {
    size_t srcXInBytes, srcY, srcZ, srcLOD;
    int srcMemoryType;
    const void *srcHost;
    CUdeviceptr srcDevice;
    void *srcArray;
    void *reserved0;
    size_t srcPitch, srcHeight;
    size_t dstXInBytes, dstY, dstZ, dstLOD;
    int dstMemoryType;
    void *dstHost;
    CUdeviceptr dstDevice;
    void *dstArray;
    void *reserved1;
    size_t dstPitch, dstHeight;
    size_t WidthInBytes, Height, Depth;
} CUDA_MEMCPY3D;

typedef struct CUgraphExecUpdateResultInfo_st {
    int result;
    CUgraphNode errorNode;
    CUgraphNode errorFromNode;
} CUgraphExecUpdateResultInfo;

enum { MEMORYTYPE_HOST = 1, MEMORYTYPE_DEVICE = 2 };
/* CUgraphExecUpdateResult */
enum { UPDATE_SUCCESS = 0, UPDATE_TOPOLOGY_CHANGED = 2, UPDATE_NODE_TYPE_CHANGED = 3, UPDATE_FUNCTION_CHANGED = 4 };

static CUgraphNode position_handle(size_t position) { return (CUgraphNode)(uintptr_t)position; }

/* The node at handle `node` of `graph`, or NULL. */
static struct fake_node *node_at(const struct fake_graph *graph, CUgraphNode node) {
    uintptr_t position = (uintptr_t)node;
    return position >= 1 && position <= graph->count ? &graph->nodes[position - 1] : NULL;
}

struct fake_object *fake_lookup_graph(CUgraph handle) {
    struct fake_object *body = fake_lookup_quiet(handle, KIND_GRAPH_BODY);
    return body ? body : fake_lookup(handle, KIND_GRAPH);
}

CUresult fake_check_dependencies(const struct fake_graph *graph, const CUgraphNode *nodes, size_t count) {
    if (count && !nodes) return CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; i < count; i++) {
        if (!node_at(graph, nodes[i])) return CUDA_ERROR_INVALID_VALUE;
    }
    return CUDA_SUCCESS;
}

CUresult fake_copy_node(const struct fake_node *source, struct fake_node *out) {
    *out = *source;
    if (source->kind == NODE_COPY) out->u.copy.snapshot = NULL; /* graph copies read memory when they run */
    if (source->kind == NODE_KERNEL) {
        size_t size = fake_argument_bytes(source->u.kernel.function);
        out->u.kernel.arg_bytes = malloc(size ? size : 1);
        if (!out->u.kernel.arg_bytes) return CUDA_ERROR_OUT_OF_MEMORY;
        memcpy(out->u.kernel.arg_bytes, source->u.kernel.arg_bytes, size);
        fake_aim_arguments(out);
    }
    if (source->kind == NODE_CONDITIONAL) {
        unsigned int size = source->u.conditional.size;
        out->u.conditional.bodies = NULL;
        out->u.conditional.handles = NULL;
        out->u.conditional.copies = calloc(size, sizeof *out->u.conditional.copies);
        if (!out->u.conditional.copies) return CUDA_ERROR_OUT_OF_MEMORY;
        for (unsigned int i = 0; i < size; i++) {
            const struct fake_graph *body = source->u.conditional.bodies ? source->u.conditional.bodies[i]->u.graph.graph
                                                                         : source->u.conditional.copies[i];
            out->u.conditional.copies[i] = fake_copy_graph(body);
            if (!out->u.conditional.copies[i]) {
                fake_free_node(out);
                return CUDA_ERROR_OUT_OF_MEMORY;
            }
        }
    }
    return CUDA_SUCCESS;
}

struct fake_graph *fake_copy_graph(const struct fake_graph *source) {
    struct fake_graph *copy = calloc(1, sizeof *copy);
    if (!copy) return NULL;
    for (size_t i = 0; i < source->count; i++) {
        struct fake_node node;
        if (fake_copy_node(&source->nodes[i], &node) != CUDA_SUCCESS) {
            fake_free_graph(copy);
            return NULL;
        }
        if (fake_append(copy, &node) != CUDA_SUCCESS) {
            fake_free_node(&node);
            fake_free_graph(copy);
            return NULL;
        }
        if (node.kind == NODE_KERNEL) fake_aim_arguments(&copy->nodes[copy->count - 1]);
    }
    return copy;
}

/* ---- conditions ------------------------------------------------------------------------ */

#define FAKE_MAX_CONDITIONS 4096

struct fake_condition {
    unsigned int value;
    unsigned int default_value;
    int has_default;
};
static struct fake_condition conditions[FAKE_MAX_CONDITIONS];
static size_t condition_count;

void fake_set_condition(uint64_t handle, unsigned int value) {
    if (handle >= 1 && handle <= condition_count) conditions[handle - 1].value = value;
}

unsigned int fake_condition(uint64_t handle) {
    return handle >= 1 && handle <= condition_count ? conditions[handle - 1].value : 0;
}

CUresult fake_submit_conditions(struct fake_object *context, struct fake_object *stream, const struct fake_graph *graph) {
    for (size_t i = 0; i < graph->count; i++) {
        const struct fake_node *node = &graph->nodes[i];
        if (node->kind != NODE_CONDITIONAL) continue;
        uint64_t handle = node->u.conditional.handle;
        if (handle >= 1 && handle <= condition_count && conditions[handle - 1].has_default) {
            struct fake_node set = {.kind = NODE_SET_CONDITION};
            set.u.set_condition.handle = handle;
            set.u.set_condition.value = conditions[handle - 1].default_value;
            CUresult result = fake_submit(context, stream, &set);
            if (result != CUDA_SUCCESS) return result;
        }
        for (unsigned int b = 0; b < node->u.conditional.size; b++) {
            const struct fake_graph *body = node->u.conditional.bodies ? node->u.conditional.bodies[b]->u.graph.graph
                                                                       : node->u.conditional.copies[b];
            CUresult result = fake_submit_conditions(context, stream, body);
            if (result != CUDA_SUCCESS) return result;
        }
    }
    return CUDA_SUCCESS;
}

static CUresult condition_create(uint64_t *out, CUgraph graph_handle, CUcontext context_handle, unsigned int value,
                                 unsigned int flags) {
    struct fake_object *graph = fake_lookup_graph(graph_handle);
    if (!out) return CUDA_ERROR_INVALID_VALUE;
    if (!graph) return CUDA_ERROR_INVALID_HANDLE;
    if (fake_lookup_context(context_handle) != graph->context || (flags & ~1u)) return CUDA_ERROR_INVALID_VALUE;
    if (condition_count == FAKE_MAX_CONDITIONS) return CUDA_ERROR_OUT_OF_MEMORY;
    conditions[condition_count] = (struct fake_condition){
        .value = flags ? value : 0, .default_value = value, .has_default = (int)(flags & 1u)};
    *out = ++condition_count;
    return CUDA_SUCCESS;
}
EXPORT CUresult cuGraphConditionalHandleCreate(uint64_t *pHandle_out, CUgraph hGraph, CUcontext ctx,
                                               unsigned int defaultLaunchValue, unsigned int flags)
    FAKE_API(cuGraphConditionalHandleCreate, condition_create(pHandle_out, hGraph, ctx, defaultLaunchValue, flags))

/* ---- creating graphs and nodes --------------------------------------------------------- */

static CUresult graph_create(CUgraph *out, unsigned int flags) {
    if (!out || flags) return CUDA_ERROR_INVALID_VALUE;
    struct fake_object *context;
    CUresult result = fake_current_context(&context);
    if (result != CUDA_SUCCESS) return result;
    struct fake_graph *nodes = calloc(1, sizeof *nodes);
    if (!nodes) return CUDA_ERROR_OUT_OF_MEMORY;
    struct fake_object *graph = fake_new(KIND_GRAPH, context);
    if (!graph) {
        free(nodes);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    graph->u.graph.graph = nodes;
    *out = fake_handle(graph);
    return CUDA_SUCCESS;
}
EXPORT CUresult cuGraphCreate(CUgraph *phGraph, unsigned int flags) FAKE_API(cuGraphCreate, graph_create(phGraph, flags))

/* The graph behind `handle` after checking the out-pointer and dependencies; NULL with *result set. */
static struct fake_object *graph_for_node(CUgraph handle, CUgraphNode *out, const CUgraphNode *dependencies,
                                          size_t count, CUresult *result) {
    struct fake_object *graph = fake_lookup_graph(handle);
    *result = !out ? CUDA_ERROR_INVALID_VALUE : !graph ? CUDA_ERROR_INVALID_HANDLE : CUDA_SUCCESS;
    if (*result == CUDA_SUCCESS) *result = fake_check_dependencies(graph->u.graph.graph, dependencies, count);
    return *result == CUDA_SUCCESS ? graph : NULL;
}

/* Appends `node` (taking what it owns) and returns its handle. */
static CUresult add_node(struct fake_object *graph, struct fake_node *node, CUgraphNode *out) {
    CUresult result = fake_append(graph->u.graph.graph, node);
    if (result != CUDA_SUCCESS) {
        fake_free_node(node);
        return result;
    }
    *out = position_handle(graph->u.graph.graph->count);
    return CUDA_SUCCESS;
}

/* A kernel node of `function` in `context` from the parameters (arguments copied). */
static CUresult kernel_node(const CUDA_KERNEL_NODE_PARAMS *params, struct fake_object *context, struct fake_node *node) {
    if (!params || params->extra || params->kern) return CUDA_ERROR_INVALID_VALUE;
    struct fake_object *function = fake_lookup(params->func, KIND_FUNCTION);
    if (!function) return CUDA_ERROR_INVALID_HANDLE;
    if (function->context != context || (params->ctx && fake_lookup_context(params->ctx) != context)) {
        return CUDA_ERROR_INVALID_CONTEXT;
    }
    const unsigned int grid[3] = {params->gridDimX, params->gridDimY, params->gridDimZ};
    const unsigned int block[3] = {params->blockDimX, params->blockDimY, params->blockDimZ};
    for (int d = 0; d < 3; d++) {
        if (grid[d] == 0 || block[d] == 0) return CUDA_ERROR_INVALID_VALUE;
    }
    if ((uint64_t)block[0] * block[1] * block[2] > 1024) return CUDA_ERROR_INVALID_VALUE;
    if (params->sharedMemBytes > (unsigned int)function->u.func.max_dynamic_shared) return CUDA_ERROR_INVALID_VALUE;
    int count = function->u.func.param_count;
    if (count > 0 && !params->kernelParams) return CUDA_ERROR_INVALID_VALUE;
    size_t bytes = fake_argument_bytes(function);
    unsigned char *arguments = malloc(bytes ? bytes : 1);
    if (!arguments) return CUDA_ERROR_OUT_OF_MEMORY;
    for (int i = 0; i < count; i++) {
        if (!params->kernelParams[i]) {
            free(arguments);
            return CUDA_ERROR_INVALID_VALUE;
        }
        memcpy(arguments + function->u.func.param_offsets[i], params->kernelParams[i], function->u.func.param_sizes[i]);
    }
    memset(node, 0, sizeof *node);
    node->kind = NODE_KERNEL;
    node->u.kernel.function = function;
    node->u.kernel.arg_bytes = arguments;
    memcpy(node->u.kernel.launch.grid, grid, sizeof grid);
    memcpy(node->u.kernel.launch.block, block, sizeof block);
    node->u.kernel.launch.shared_mem = params->sharedMemBytes;
    fake_aim_arguments(node);
    return CUDA_SUCCESS;
}

static CUresult add_kernel(CUgraphNode *out, CUgraph handle, const CUgraphNode *dependencies, size_t count,
                           const CUDA_KERNEL_NODE_PARAMS *params) {
    CUresult result;
    struct fake_object *graph = graph_for_node(handle, out, dependencies, count, &result);
    if (!graph) return result;
    struct fake_node node;
    result = kernel_node(params, graph->context, &node);
    return result == CUDA_SUCCESS ? add_node(graph, &node, out) : result;
}
EXPORT CUresult cuGraphAddKernelNode_v2(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,
                                        size_t numDependencies, const CUDA_KERNEL_NODE_PARAMS *nodeParams)
    FAKE_API(cuGraphAddKernelNode_v2, add_kernel(phGraphNode, hGraph, dependencies, numDependencies, nodeParams))

static CUresult add_memset(CUgraphNode *out, CUgraph handle, const CUgraphNode *dependencies, size_t count,
                           const CUDA_MEMSET_NODE_PARAMS *params, CUcontext context) {
    CUresult result;
    struct fake_object *graph = graph_for_node(handle, out, dependencies, count, &result);
    if (!graph) return result;
    if (!params || fake_lookup_context(context) != graph->context) return CUDA_ERROR_INVALID_VALUE;
    unsigned int size = params->elementSize;
    if ((size != 1 && size != 2 && size != 4) || params->width == 0 || params->height == 0) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (params->height != 1) return CUDA_ERROR_NOT_SUPPORTED; /* one row is what the tests build */
    if (params->width > SIZE_MAX / size || !fake_device_bytes(params->dst, params->width * size)) {
        fake_record_invalid();
        return CUDA_ERROR_INVALID_VALUE;
    }
    struct fake_node node = {.kind = NODE_MEMSET};
    node.u.memset.dst = params->dst;
    node.u.memset.value = params->value;
    node.u.memset.element_size = size;
    node.u.memset.count = params->width;
    return add_node(graph, &node, out);
}
EXPORT CUresult cuGraphAddMemsetNode(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,
                                     size_t numDependencies, const CUDA_MEMSET_NODE_PARAMS *memsetParams,
                                     CUcontext ctx)
    FAKE_API(cuGraphAddMemsetNode, add_memset(phGraphNode, hGraph, dependencies, numDependencies, memsetParams, ctx))

/* The address of the block's first byte on one side, if the whole block lies in one allocation
 * (device memory) or one pinned allocation (host memory: a pinned allocation's host address). */
static int copy_side(CUdeviceptr base, int host, size_t x, size_t y, size_t z, size_t pitch, size_t rows,
                     const CUDA_MEMCPY3D *copy, CUdeviceptr *start) {
    size_t first = (z * rows + y) * pitch + x;
    size_t last = ((z + copy->Depth - 1) * rows + y + copy->Height - 1) * pitch + x + copy->WidthInBytes;
    if ((copy->Height > 1 || copy->Depth > 1) && x + copy->WidthInBytes > pitch) return 0;
    struct fake_object *memory = fake_memory_containing(base + first, last - first);
    if (!memory || (memory->kind == KIND_HOST_MEMORY) != host) return 0;
    *start = base + first;
    return 1;
}

static CUresult add_memcpy(CUgraphNode *out, CUgraph handle, const CUgraphNode *dependencies, size_t count,
                           const CUDA_MEMCPY3D *copy, CUcontext context) {
    CUresult result;
    struct fake_object *graph = graph_for_node(handle, out, dependencies, count, &result);
    if (!graph) return result;
    if (!copy || fake_lookup_context(context) != graph->context) return CUDA_ERROR_INVALID_VALUE;
    int src_host = copy->srcMemoryType == MEMORYTYPE_HOST, dst_host = copy->dstMemoryType == MEMORYTYPE_HOST;
    if ((!src_host && copy->srcMemoryType != MEMORYTYPE_DEVICE) || (!dst_host && copy->dstMemoryType != MEMORYTYPE_DEVICE)) {
        return CUDA_ERROR_NOT_SUPPORTED; /* device and pinned host memory are what the safe layer builds */
    }
    if (copy->WidthInBytes == 0 || copy->Height == 0 || copy->Depth == 0) return CUDA_ERROR_INVALID_VALUE;
    struct fake_node node = {.kind = NODE_COPY_3D};
    CUdeviceptr src_base = src_host ? (CUdeviceptr)(uintptr_t)copy->srcHost : copy->srcDevice;
    CUdeviceptr dst_base = dst_host ? (CUdeviceptr)(uintptr_t)copy->dstHost : copy->dstDevice;
    if (!copy_side(src_base, src_host, copy->srcXInBytes, copy->srcY, copy->srcZ, copy->srcPitch, copy->srcHeight,
                   copy, &node.u.copy_3d.src) ||
        !copy_side(dst_base, dst_host, copy->dstXInBytes, copy->dstY, copy->dstZ, copy->dstPitch, copy->dstHeight,
                   copy, &node.u.copy_3d.dst)) {
        fake_record_invalid();
        return CUDA_ERROR_INVALID_VALUE;
    }
    node.u.copy_3d.src_pitch = copy->srcPitch;
    node.u.copy_3d.dst_pitch = copy->dstPitch;
    node.u.copy_3d.src_rows = copy->srcHeight;
    node.u.copy_3d.dst_rows = copy->dstHeight;
    node.u.copy_3d.width = copy->WidthInBytes;
    node.u.copy_3d.height = copy->Height;
    node.u.copy_3d.depth = copy->Depth;
    return add_node(graph, &node, out);
}
EXPORT CUresult cuGraphAddMemcpyNode(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,
                                     size_t numDependencies, const CUDA_MEMCPY3D *copyParams, CUcontext ctx)
    FAKE_API(cuGraphAddMemcpyNode, add_memcpy(phGraphNode, hGraph, dependencies, numDependencies, copyParams, ctx))

static CUresult add_host(CUgraphNode *out, CUgraph handle, const CUgraphNode *dependencies, size_t count,
                         const CUDA_HOST_NODE_PARAMS *params) {
    CUresult result;
    struct fake_object *graph = graph_for_node(handle, out, dependencies, count, &result);
    if (!graph) return result;
    if (!params || !params->fn) return CUDA_ERROR_INVALID_VALUE;
    struct fake_node node = {.kind = NODE_HOST};
    node.u.host.fn = params->fn;
    node.u.host.data = params->userData;
    return add_node(graph, &node, out);
}
EXPORT CUresult cuGraphAddHostNode(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,
                                   size_t numDependencies, const CUDA_HOST_NODE_PARAMS *nodeParams)
    FAKE_API(cuGraphAddHostNode, add_host(phGraphNode, hGraph, dependencies, numDependencies, nodeParams))

/* CUgraphNodeParams of cuda.h: only conditional nodes (CU_GRAPH_NODE_TYPE_CONDITIONAL) are modelled. */
typedef struct CUgraphNodeParams_st {
    int type;
    int reserved0[3];
    union {
        long long reserved1[29];
        struct {
            uint64_t handle;
            int type;
            unsigned int size;
            CUgraph *phGraph_out;
            CUcontext ctx;
        } conditional;
    } u;
    long long reserved2;
} CUgraphNodeParams;

enum { NODE_TYPE_CONDITIONAL = 13 };

static CUresult add_generic(CUgraphNode *out, CUgraph handle, const CUgraphNode *dependencies, const void *edges,
                            size_t count, CUgraphNodeParams *params) {
    CUresult result;
    struct fake_object *graph = graph_for_node(handle, out, dependencies, count, &result);
    if (!graph) return result;
    if (!params) return CUDA_ERROR_INVALID_VALUE;
    if (edges || params->type != NODE_TYPE_CONDITIONAL) return CUDA_ERROR_NOT_SUPPORTED;
    uint64_t condition = params->u.conditional.handle;
    int type = params->u.conditional.type;
    unsigned int size = params->u.conditional.size;
    if (condition < 1 || condition > condition_count || type < 0 || type > 2 || size == 0 ||
        (type == 0 && size > 2) || (type == 1 && size != 1) ||
        fake_lookup_context(params->u.conditional.ctx) != graph->context) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    struct fake_node node = {.kind = NODE_CONDITIONAL};
    node.u.conditional.handle = condition;
    node.u.conditional.type = type;
    node.u.conditional.size = size;
    node.u.conditional.bodies = calloc(size, sizeof *node.u.conditional.bodies);
    node.u.conditional.handles = calloc(size, sizeof *node.u.conditional.handles);
    if (!node.u.conditional.bodies || !node.u.conditional.handles) {
        free(node.u.conditional.bodies);
        free(node.u.conditional.handles);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    for (unsigned int i = 0; i < size; i++) {
        struct fake_graph *nodes = calloc(1, sizeof *nodes);
        struct fake_object *body = nodes ? fake_new(KIND_GRAPH_BODY, graph->context) : NULL;
        if (!body) {
            free(nodes);
            node.u.conditional.size = i; /* the bodies made so far */
            fake_free_node(&node);
            return CUDA_ERROR_OUT_OF_MEMORY;
        }
        body->u.graph.graph = nodes;
        node.u.conditional.bodies[i] = body;
        node.u.conditional.handles[i] = fake_handle(body);
    }
    params->u.conditional.phGraph_out = node.u.conditional.handles;
    return add_node(graph, &node, out);
}
EXPORT CUresult cuGraphAddNode_v2(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,
                                  const void *dependencyData, size_t numDependencies, CUgraphNodeParams *nodeParams)
    FAKE_API(cuGraphAddNode_v2,
             add_generic(phGraphNode, hGraph, dependencies, dependencyData, numDependencies, nodeParams))

/* An empty node, or (event not NULL) an event record (record) or wait (runs in order: empty). */
static CUresult add_simple(CUgraphNode *out, CUgraph handle, const CUgraphNode *dependencies, size_t count,
                           CUevent event_handle, int record) {
    CUresult result;
    struct fake_object *graph = graph_for_node(handle, out, dependencies, count, &result);
    if (!graph) return result;
    struct fake_node node = {.kind = NODE_EMPTY};
    if (event_handle) {
        struct fake_object *event = fake_lookup(event_handle, KIND_EVENT);
        if (!event) return CUDA_ERROR_INVALID_HANDLE;
        if (event->context != graph->context) return CUDA_ERROR_INVALID_VALUE;
        if (record) {
            node.kind = NODE_RECORD;
            node.u.event = event;
        }
    }
    return add_node(graph, &node, out);
}
EXPORT CUresult cuGraphAddEmptyNode(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,
                                    size_t numDependencies)
    FAKE_API(cuGraphAddEmptyNode, add_simple(phGraphNode, hGraph, dependencies, numDependencies, NULL, 0))
EXPORT CUresult cuGraphAddEventRecordNode(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,
                                          size_t numDependencies, CUevent event)
    FAKE_API(cuGraphAddEventRecordNode, event ? add_simple(phGraphNode, hGraph, dependencies, numDependencies, event, 1)
                                              : CUDA_ERROR_INVALID_VALUE)
EXPORT CUresult cuGraphAddEventWaitNode(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,
                                        size_t numDependencies, CUevent event)
    FAKE_API(cuGraphAddEventWaitNode, event ? add_simple(phGraphNode, hGraph, dependencies, numDependencies, event, 0)
                                            : CUDA_ERROR_INVALID_VALUE)

/* ---- clones ------------------------------------------------------------------------------ */

static CUresult graph_clone(CUgraph *out, CUgraph handle) {
    if (!out) return CUDA_ERROR_INVALID_VALUE;
    struct fake_object *graph = fake_lookup(handle, KIND_GRAPH);
    if (!graph) return CUDA_ERROR_INVALID_HANDLE;
    struct fake_graph *nodes = fake_copy_graph(graph->u.graph.graph);
    if (!nodes) return CUDA_ERROR_OUT_OF_MEMORY;
    struct fake_object *clone = fake_new(KIND_GRAPH, graph->context);
    if (!clone) {
        fake_free_graph(nodes);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    clone->u.graph.graph = nodes;
    *out = fake_handle(clone);
    return CUDA_SUCCESS;
}
EXPORT CUresult cuGraphClone(CUgraph *phGraphClone, CUgraph originalGraph)
    FAKE_API(cuGraphClone, graph_clone(phGraphClone, originalGraph))

/* A clone's nodes are at the positions of the original's. */
static CUresult find_in_clone(CUgraphNode *out, CUgraphNode original, CUgraph clone_handle) {
    struct fake_object *clone = fake_lookup(clone_handle, KIND_GRAPH);
    if (!out) return CUDA_ERROR_INVALID_VALUE;
    if (!clone) return CUDA_ERROR_INVALID_HANDLE;
    if (!node_at(clone->u.graph.graph, original)) return CUDA_ERROR_INVALID_VALUE;
    *out = original;
    return CUDA_SUCCESS;
}
EXPORT CUresult cuGraphNodeFindInClone(CUgraphNode *phNode, CUgraphNode hOriginalNode, CUgraph hClonedGraph)
    FAKE_API(cuGraphNodeFindInClone, find_in_clone(phNode, hOriginalNode, hClonedGraph))

/* ---- executable graphs: per-node updates ------------------------------------------------- */

static CUresult exec_kernel_params(CUgraphExec handle, CUgraphNode node_handle, const CUDA_KERNEL_NODE_PARAMS *params) {
    struct fake_object *exec = fake_lookup(handle, KIND_GRAPH_EXEC);
    if (!exec) return CUDA_ERROR_INVALID_HANDLE;
    struct fake_node *node = node_at(exec->u.graph.graph, node_handle);
    if (!node || node->kind != NODE_KERNEL) return CUDA_ERROR_INVALID_VALUE;
    struct fake_node updated;
    CUresult result = kernel_node(params, exec->context, &updated);
    if (result != CUDA_SUCCESS) return result;
    updated.disabled = node->disabled;
    fake_free_node(node);
    *node = updated;
    fake_aim_arguments(node);
    return CUDA_SUCCESS;
}
EXPORT CUresult cuGraphExecKernelNodeSetParams_v2(CUgraphExec hGraphExec, CUgraphNode hNode,
                                                  const CUDA_KERNEL_NODE_PARAMS *nodeParams)
    FAKE_API(cuGraphExecKernelNodeSetParams_v2, exec_kernel_params(hGraphExec, hNode, nodeParams))

/* Kernel, memcpy and memset nodes may be disabled, as the driver says. */
static CUresult node_enabled(CUgraphExec handle, CUgraphNode node_handle, unsigned int *get, int set) {
    struct fake_object *exec = fake_lookup(handle, KIND_GRAPH_EXEC);
    if (!exec) return CUDA_ERROR_INVALID_HANDLE;
    struct fake_node *node = node_at(exec->u.graph.graph, node_handle);
    if (!node) return CUDA_ERROR_INVALID_VALUE;
    int kind = node->kind;
    if (kind != NODE_KERNEL && kind != NODE_MEMSET && kind != NODE_COPY && kind != NODE_COPY_3D) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (get) {
        *get = !node->disabled;
    } else {
        node->disabled = !set;
    }
    return CUDA_SUCCESS;
}
EXPORT CUresult cuGraphNodeSetEnabled(CUgraphExec hGraphExec, CUgraphNode hNode, unsigned int isEnabled)
    FAKE_API(cuGraphNodeSetEnabled, node_enabled(hGraphExec, hNode, NULL, isEnabled != 0))
EXPORT CUresult cuGraphNodeGetEnabled(CUgraphExec hGraphExec, CUgraphNode hNode, unsigned int *isEnabled)
    FAKE_API(cuGraphNodeGetEnabled, isEnabled ? node_enabled(hGraphExec, hNode, isEnabled, 0) : CUDA_ERROR_INVALID_VALUE)

/* Same node count and kinds, kernels of the exec's context: the nodes' parameters are taken over. */
static CUresult exec_update(CUgraphExec handle, CUgraph graph_handle, CUgraphExecUpdateResultInfo *info) {
    struct fake_object *exec = fake_lookup(handle, KIND_GRAPH_EXEC);
    struct fake_object *graph = fake_lookup(graph_handle, KIND_GRAPH);
    if (!info) return CUDA_ERROR_INVALID_VALUE;
    if (!exec || !graph) return CUDA_ERROR_INVALID_HANDLE;
    struct fake_graph *target = exec->u.graph.graph;
    const struct fake_graph *source = graph->u.graph.graph;
    info->result = UPDATE_SUCCESS;
    info->errorNode = info->errorFromNode = NULL;
    if (source->count != target->count) {
        info->result = UPDATE_TOPOLOGY_CHANGED;
        return CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE;
    }
    for (size_t i = 0; i < source->count; i++) {
        int changed = source->nodes[i].kind != target->nodes[i].kind   ? UPDATE_NODE_TYPE_CHANGED
                      : source->nodes[i].kind == NODE_KERNEL &&
                              source->nodes[i].u.kernel.function->context != exec->context
                          ? UPDATE_FUNCTION_CHANGED
                          : UPDATE_SUCCESS;
        if (changed != UPDATE_SUCCESS) {
            info->result = changed;
            info->errorNode = position_handle(i + 1);
            info->errorFromNode = position_handle(i + 1);
            return CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE;
        }
    }
    struct fake_graph *fresh = fake_copy_graph(source);
    if (!fresh) return CUDA_ERROR_OUT_OF_MEMORY;
    for (size_t i = 0; i < fresh->count; i++) fresh->nodes[i].disabled = target->nodes[i].disabled;
    fake_free_graph(target);
    exec->u.graph.graph = fresh;
    return CUDA_SUCCESS;
}
EXPORT CUresult cuGraphExecUpdate_v2(CUgraphExec hGraphExec, CUgraph hGraph, CUgraphExecUpdateResultInfo *resultInfo)
    FAKE_API(cuGraphExecUpdate_v2, exec_update(hGraphExec, hGraph, resultInfo))

/* ---- DOT ------------------------------------------------------------------------------- */

static CUresult dot_print(CUgraph handle, const char *path) {
    static const char *names[] = {"kernel", "memcpy", "memset", "host",   "event record",
                                  "free",   "empty",  "memcpy", "conditional", "set condition"};
    struct fake_object *graph = fake_lookup(handle, KIND_GRAPH);
    if (!graph) return CUDA_ERROR_INVALID_HANDLE;
    if (!path) return CUDA_ERROR_INVALID_VALUE;
    FILE *file = fopen(path, "w");
    if (!file) return CUDA_ERROR_OPERATING_SYSTEM;
    const struct fake_graph *nodes = graph->u.graph.graph;
    fprintf(file, "digraph fakecuda {\n");
    for (size_t i = 0; i < nodes->count; i++) {
        const struct fake_node *node = &nodes->nodes[i];
        fprintf(file, "  n%zu [label=\"%s", i + 1, names[node->kind]);
        if (node->kind == NODE_KERNEL) fprintf(file, " %s", node->u.kernel.function->u.func.name);
        fprintf(file, "\"];\n");
    }
    fprintf(file, "}\n");
    return fclose(file) == 0 ? CUDA_SUCCESS : CUDA_ERROR_OPERATING_SYSTEM;
}
EXPORT CUresult cuGraphDebugDotPrint(CUgraph hGraph, const char *path, unsigned int flags)
    FAKE_API(cuGraphDebugDotPrint, ((void)flags, dot_print(hGraph, path)))
