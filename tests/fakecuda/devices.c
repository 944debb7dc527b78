/*
 * fakecuda (test double): initialisation, the two fake devices (H200-like
 * attributes), primary and explicit contexts, the per-thread context stack
 * and peer access.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "driver.h"

#define CONTEXT_STACK_DEPTH 64
#define ATTRIBUTE_END 148

/* Each thread's context stack; entries point into the registry, whose
 * objects are never freed. */
static __thread struct fake_object *context_stack[CONTEXT_STACK_DEPTH];
static __thread int context_depth;

/* H200 (sm_90) values; attributes not listed are 0. */
static const int attributes[ATTRIBUTE_END] = {
    [1] = 1024,         /* MAX_THREADS_PER_BLOCK */
    [2] = 1024,         /* MAX_BLOCK_DIM_X */
    [3] = 1024,         /* MAX_BLOCK_DIM_Y */
    [4] = 64,           /* MAX_BLOCK_DIM_Z */
    [5] = 2147483647,   /* MAX_GRID_DIM_X */
    [6] = 65535,        /* MAX_GRID_DIM_Y */
    [7] = 65535,        /* MAX_GRID_DIM_Z */
    [8] = 49152,        /* MAX_SHARED_MEMORY_PER_BLOCK */
    [9] = 65536,        /* TOTAL_CONSTANT_MEMORY */
    [10] = 32,          /* WARP_SIZE */
    [11] = 2147483647,  /* MAX_PITCH */
    [12] = 65536,       /* MAX_REGISTERS_PER_BLOCK */
    [13] = 1980000,     /* CLOCK_RATE (kHz) */
    [14] = 512,         /* TEXTURE_ALIGNMENT */
    [15] = 1,           /* GPU_OVERLAP */
    [16] = FAKE_SM_COUNT, /* MULTIPROCESSOR_COUNT */
    [19] = 1,           /* CAN_MAP_HOST_MEMORY */
    [21] = 131072,      /* MAXIMUM_TEXTURE1D_WIDTH */
    [22] = 131072,      /* MAXIMUM_TEXTURE2D_WIDTH */
    [23] = 65536,       /* MAXIMUM_TEXTURE2D_HEIGHT */
    [24] = 16384,       /* MAXIMUM_TEXTURE3D_WIDTH */
    [25] = 16384,       /* MAXIMUM_TEXTURE3D_HEIGHT */
    [26] = 16384,       /* MAXIMUM_TEXTURE3D_DEPTH */
    [30] = 512,         /* SURFACE_ALIGNMENT */
    [31] = 1,           /* CONCURRENT_KERNELS */
    [32] = 1,           /* ECC_ENABLED */
    [33] = 0x18,        /* PCI_BUS_ID (device 1 adds 0x10) */
    [36] = 3201000,     /* MEMORY_CLOCK_RATE (kHz) */
    [37] = 6144,        /* GLOBAL_MEMORY_BUS_WIDTH */
    [38] = 52428800,    /* L2_CACHE_SIZE */
    [39] = 2048,        /* MAX_THREADS_PER_MULTIPROCESSOR */
    [40] = 3,           /* ASYNC_ENGINE_COUNT */
    [41] = 1,           /* UNIFIED_ADDRESSING */
    [51] = 32,          /* TEXTURE_PITCH_ALIGNMENT */
    [75] = 9,           /* COMPUTE_CAPABILITY_MAJOR */
    [76] = 0,           /* COMPUTE_CAPABILITY_MINOR */
    [78] = 1,           /* STREAM_PRIORITIES_SUPPORTED */
    [79] = 1,           /* GLOBAL_L1_CACHE_SUPPORTED */
    [80] = 1,           /* LOCAL_L1_CACHE_SUPPORTED */
    [81] = 233472,      /* MAX_SHARED_MEMORY_PER_MULTIPROCESSOR */
    [82] = 65536,       /* MAX_REGISTERS_PER_MULTIPROCESSOR */
    [83] = 1,           /* MANAGED_MEMORY */
    [87] = 2,           /* SINGLE_TO_DOUBLE_PRECISION_PERF_RATIO */
    [89] = 1,           /* CONCURRENT_MANAGED_ACCESS */
    [90] = 1,           /* COMPUTE_PREEMPTION_SUPPORTED */
    [91] = 1,           /* CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM */
    [95] = 1,           /* COOPERATIVE_LAUNCH */
    [97] = FAKE_MAX_SHARED_OPTIN, /* MAX_SHARED_MEMORY_PER_BLOCK_OPTIN */
    [98] = 1,           /* CAN_FLUSH_REMOTE_WRITES */
    [99] = 1,           /* HOST_REGISTER_SUPPORTED */
    [102] = 1,          /* VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED */
    [103] = 1,          /* HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED */
    [106] = 32,         /* MAX_BLOCKS_PER_MULTIPROCESSOR */
    [107] = 1,          /* GENERIC_COMPRESSION_SUPPORTED */
    [108] = 82837504,   /* MAX_PERSISTING_L2_CACHE_SIZE */
    [109] = 134213632,  /* MAX_ACCESS_POLICY_WINDOW_SIZE */
    [111] = 1024,       /* RESERVED_SHARED_MEMORY_PER_BLOCK */
    [112] = 1,          /* SPARSE_CUDA_ARRAY_SUPPORTED */
    [113] = 1,          /* READ_ONLY_HOST_REGISTER_SUPPORTED */
    [114] = 1,          /* TIMELINE_SEMAPHORE_INTEROP_SUPPORTED */
    [115] = 1,          /* MEMORY_POOLS_SUPPORTED */
    [119] = 1,          /* MEMPOOL_SUPPORTED_HANDLE_TYPES */
    [120] = 1,          /* CLUSTER_LAUNCH */
    [121] = 1,          /* DEFERRED_MAPPING_CUDA_ARRAY_SUPPORTED */
    [122] = 1,          /* CAN_USE_64_BIT_STREAM_MEM_OPS */
    [124] = 1,          /* DMA_BUF_SUPPORTED */
    [125] = 1,          /* IPC_EVENT_SUPPORTED */
    [126] = 4,          /* MEM_SYNC_DOMAIN_COUNT */
    [127] = 1,          /* TENSOR_MAP_ACCESS_SUPPORTED */
    [129] = 1,          /* UNIFIED_FUNCTION_POINTERS */
    [131] = -1,         /* NUMA_ID */
    [132] = 1,          /* MULTICAST_SUPPORTED */
    [134] = -1,         /* HOST_NUMA_ID */
};

static int valid_device(CUdevice device) { return device >= 0 && device < FAKE_DEVICES; }

int fake_device_attribute(int device, int attribute) {
    if (attribute == 33) return attributes[33] + 0x10 * device;
    if (attribute == 119 && device == 1) return 0; /* device 1 shares no memory pools (pool_ipc.c) */
    return attributes[attribute];
}

CUresult fake_current_context(struct fake_object **context) {
    *context = NULL;
    if (context_depth == 0) return CUDA_ERROR_INVALID_CONTEXT;
    struct fake_object *top = context_stack[context_depth - 1];
    if (!top->live) {
        fake_record_invalid();
        return CUDA_ERROR_CONTEXT_IS_DESTROYED;
    }
    *context = top;
    return CUDA_SUCCESS;
}

/* ---- initialisation and devices ---------------------------------------- */

EXPORT CUresult cuInit(unsigned int Flags) {
    CUresult result = fake_enter("cuInit", 1);
    if (result != CUDA_SUCCESS) return result;
    if (Flags != 0) return CUDA_ERROR_INVALID_VALUE;
    fake_lock();
    fake_set_initialized();
    fake_unlock();
    return CUDA_SUCCESS;
}

EXPORT CUresult cuDriverGetVersion(int *driverVersion) {
    CUresult result = fake_enter("cuDriverGetVersion", 0);
    if (result != CUDA_SUCCESS) return result;
    if (!driverVersion) return CUDA_ERROR_INVALID_VALUE;
    /* FAKECUDA_DRIVER_VERSION=12020 emulates a CUDA 12.2 driver (R535): cuda-sys then treats
       every function whose declared ABI is newer as absent, as such a driver's
       cuGetProcAddress does. Read on every call, so one process can try several. */
    const char *emulated = getenv("FAKECUDA_DRIVER_VERSION");
    *driverVersion = emulated && *emulated ? atoi(emulated) : 13000;
    return CUDA_SUCCESS;
}

static CUresult device_get(CUdevice *device, int ordinal) {
    if (!device) return CUDA_ERROR_INVALID_VALUE;
    if (!valid_device(ordinal)) return CUDA_ERROR_INVALID_DEVICE;
    *device = ordinal;
    return CUDA_SUCCESS;
}
EXPORT CUresult cuDeviceGet(CUdevice *device, int ordinal) FAKE_API(cuDeviceGet, device_get(device, ordinal))

static CUresult device_count(int *count) {
    if (!count) return CUDA_ERROR_INVALID_VALUE;
    *count = FAKE_DEVICES;
    return CUDA_SUCCESS;
}
EXPORT CUresult cuDeviceGetCount(int *count) FAKE_API(cuDeviceGetCount, device_count(count))

static CUresult device_name(char *name, int length, CUdevice device) {
    if (!name || length <= 0) return CUDA_ERROR_INVALID_VALUE;
    if (!valid_device(device)) return CUDA_ERROR_INVALID_DEVICE;
    snprintf(name, (size_t)length, "fakecuda H200 stand-in %d", device);
    return CUDA_SUCCESS;
}
EXPORT CUresult cuDeviceGetName(char *name, int len, CUdevice dev) FAKE_API(cuDeviceGetName, device_name(name, len, dev))

static CUresult device_uuid(CUuuid *uuid, CUdevice device) {
    if (!uuid) return CUDA_ERROR_INVALID_VALUE;
    if (!valid_device(device)) return CUDA_ERROR_INVALID_DEVICE;
    for (int i = 0; i < 16; i++) uuid->bytes[i] = (char)(0xf0 + i + 0x20 * device);
    return CUDA_SUCCESS;
}
EXPORT CUresult cuDeviceGetUuid(CUuuid *uuid, CUdevice dev) FAKE_API(cuDeviceGetUuid, device_uuid(uuid, dev))
EXPORT CUresult cuDeviceGetUuid_v2(CUuuid *uuid, CUdevice dev) FAKE_API(cuDeviceGetUuid_v2, device_uuid(uuid, dev))

static CUresult pci_bus_id(char *id, int length, CUdevice device) {
    if (!id || length <= 0) return CUDA_ERROR_INVALID_VALUE;
    if (!valid_device(device)) return CUDA_ERROR_INVALID_DEVICE;
    snprintf(id, (size_t)length, "0000:%02x:00.0", fake_device_attribute(device, 33));
    return CUDA_SUCCESS;
}
EXPORT CUresult cuDeviceGetPCIBusId(char *pciBusId, int len, CUdevice dev)
    FAKE_API(cuDeviceGetPCIBusId, pci_bus_id(pciBusId, len, dev))

static CUresult total_memory(size_t *bytes, CUdevice device) {
    if (!bytes) return CUDA_ERROR_INVALID_VALUE;
    if (!valid_device(device)) return CUDA_ERROR_INVALID_DEVICE;
    *bytes = FAKE_TOTAL_MEMORY;
    return CUDA_SUCCESS;
}
EXPORT CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice dev) FAKE_API(cuDeviceTotalMem_v2, total_memory(bytes, dev))

static CUresult device_attribute(int *value, int attribute, CUdevice device) {
    if (!value || attribute <= 0 || attribute >= ATTRIBUTE_END) return CUDA_ERROR_INVALID_VALUE;
    if (!valid_device(device)) return CUDA_ERROR_INVALID_DEVICE;
    *value = fake_device_attribute(device, attribute);
    return CUDA_SUCCESS;
}
EXPORT CUresult cuDeviceGetAttribute(int *pi, int attrib, CUdevice dev)
    FAKE_API(cuDeviceGetAttribute, device_attribute(pi, attrib, dev))

static CUresult can_access_peer(int *can, CUdevice device, CUdevice peer) {
    if (!can) return CUDA_ERROR_INVALID_VALUE;
    if (!valid_device(device) || !valid_device(peer)) return CUDA_ERROR_INVALID_DEVICE;
    *can = device != peer;
    return CUDA_SUCCESS;
}
EXPORT CUresult cuDeviceCanAccessPeer(int *canAccessPeer, CUdevice dev, CUdevice peerDev)
    FAKE_API(cuDeviceCanAccessPeer, can_access_peer(canAccessPeer, dev, peerDev))

/* ---- primary contexts ----------------------------------------------------- */

static CUresult primary_retain(CUcontext *context, CUdevice device) {
    if (!context) return CUDA_ERROR_INVALID_VALUE;
    if (!valid_device(device)) return CUDA_ERROR_INVALID_DEVICE;
    struct fake_object *primary = fake_primary(device);
    if (!primary) {
        primary = fake_new(KIND_PRIMARY, NULL);
        if (!primary) return CUDA_ERROR_OUT_OF_MEMORY;
        primary->u.ctx.device = device;
        primary->u.ctx.primary = 1;
        fake_set_primary(device, primary);
    } else {
        primary->live = 1;
        fake_count_live(KIND_PRIMARY, 1);
    }
    primary->u.ctx.retains++;
    *context = fake_handle(primary);
    return CUDA_SUCCESS;
}
EXPORT CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev)
    FAKE_API(cuDevicePrimaryCtxRetain, primary_retain(pctx, dev))

static CUresult primary_release(CUdevice device) {
    if (!valid_device(device)) return CUDA_ERROR_INVALID_DEVICE;
    struct fake_object *primary = fake_primary(device);
    if (!primary || primary->u.ctx.retains == 0) {
        fake_record_double_free();
        return CUDA_ERROR_INVALID_CONTEXT;
    }
    primary->u.ctx.retains--;
    fake_count_live(KIND_PRIMARY, -1);
    if (primary->u.ctx.retains == 0) {
        fake_flush_context(primary); /* queued work completes first */
        fake_teardown_context(primary);
        fake_free_graph(primary->u.ctx.legacy_queue);
        primary->u.ctx.legacy_queue = NULL;
        primary->u.ctx.async_error = CUDA_SUCCESS;
        primary->u.ctx.peers = 0;
        primary->live = 0;
    }
    return CUDA_SUCCESS;
}
EXPORT CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev) FAKE_API(cuDevicePrimaryCtxRelease_v2, primary_release(dev))
EXPORT CUresult cuDevicePrimaryCtxRelease(CUdevice dev) FAKE_API(cuDevicePrimaryCtxRelease, primary_release(dev))

static CUresult primary_state(CUdevice device, unsigned int *flags, int *active) {
    if (!flags || !active) return CUDA_ERROR_INVALID_VALUE;
    if (!valid_device(device)) return CUDA_ERROR_INVALID_DEVICE;
    struct fake_object *primary = fake_primary(device);
    *flags = primary ? primary->u.ctx.flags : 0;
    *active = primary && primary->u.ctx.retains > 0;
    return CUDA_SUCCESS;
}
EXPORT CUresult cuDevicePrimaryCtxGetState(CUdevice dev, unsigned int *flags, int *active)
    FAKE_API(cuDevicePrimaryCtxGetState, primary_state(dev, flags, active))

static CUresult primary_set_flags(CUdevice device, unsigned int flags) {
    if (!valid_device(device)) return CUDA_ERROR_INVALID_DEVICE;
    if (flags & ~0xffu) return CUDA_ERROR_INVALID_VALUE;
    struct fake_object *primary = fake_primary(device);
    if (primary) primary->u.ctx.flags = flags;
    return CUDA_SUCCESS;
}
EXPORT CUresult cuDevicePrimaryCtxSetFlags_v2(CUdevice dev, unsigned int flags)
    FAKE_API(cuDevicePrimaryCtxSetFlags_v2, primary_set_flags(dev, flags))

static CUresult primary_reset(CUdevice device) {
    if (!valid_device(device)) return CUDA_ERROR_INVALID_DEVICE;
    struct fake_object *primary = fake_primary(device);
    if (primary && primary->live) {
        fake_flush_context(primary);
        fake_teardown_context(primary);
    }
    return CUDA_SUCCESS;
}
EXPORT CUresult cuDevicePrimaryCtxReset_v2(CUdevice dev) FAKE_API(cuDevicePrimaryCtxReset_v2, primary_reset(dev))

/* ---- explicit contexts and the context stack -------------------------------- */

struct context_create_params {
    void *exec_affinity_params;
    int exec_affinity_count;
    void *cig_params;
};

static CUresult push(struct fake_object *context) {
    if (context_depth == CONTEXT_STACK_DEPTH) return CUDA_ERROR_OUT_OF_MEMORY;
    context_stack[context_depth++] = context;
    return CUDA_SUCCESS;
}

static CUresult context_create(CUcontext *out, const struct context_create_params *params, unsigned int flags,
                               CUdevice device) {
    if (!out || (flags & ~0xffu)) return CUDA_ERROR_INVALID_VALUE;
    if (!valid_device(device)) return CUDA_ERROR_INVALID_DEVICE;
    if (params && (params->exec_affinity_count != 0 || params->cig_params)) return CUDA_ERROR_NOT_SUPPORTED;
    if (context_depth == CONTEXT_STACK_DEPTH) return CUDA_ERROR_OUT_OF_MEMORY;
    struct fake_object *context = fake_new(KIND_CONTEXT, NULL);
    if (!context) return CUDA_ERROR_OUT_OF_MEMORY;
    context->u.ctx.device = device;
    context->u.ctx.flags = flags;
    push(context);
    *out = fake_handle(context);
    return CUDA_SUCCESS;
}
EXPORT CUresult cuCtxCreate_v4(CUcontext *pctx, void *ctxCreateParams, unsigned int flags, CUdevice dev)
    FAKE_API(cuCtxCreate_v4, context_create(pctx, ctxCreateParams, flags, dev))
/* The 12.x ABI (no creation parameters), which drivers before 12.5 have instead of _v4. */
EXPORT CUresult cuCtxCreate_v2(CUcontext *pctx, unsigned int flags, CUdevice dev)
    FAKE_API(cuCtxCreate_v2, context_create(pctx, NULL, flags, dev))

static CUresult context_destroy(CUcontext handle) {
    struct fake_object *context = fake_lookup_for_destroy(handle, KIND_CONTEXT);
    if (!context) {
        /* a primary context cannot be destroyed, only released */
        return CUDA_ERROR_INVALID_CONTEXT;
    }
    fake_flush_context(context); /* queued work completes first */
    fake_teardown_context(context);
    fake_destroy(context);
    if (context_depth > 0 && context_stack[context_depth - 1] == context) context_depth--;
    return CUDA_SUCCESS;
}
EXPORT CUresult cuCtxDestroy_v2(CUcontext ctx) FAKE_API(cuCtxDestroy_v2, context_destroy(ctx))

static CUresult set_current(CUcontext handle) {
    if (!handle) {
        if (context_depth > 0) context_depth--;
        return CUDA_SUCCESS;
    }
    struct fake_object *context = fake_lookup_context(handle);
    if (!context) return CUDA_ERROR_INVALID_CONTEXT;
    if (context_depth == 0) return push(context);
    context_stack[context_depth - 1] = context;
    return CUDA_SUCCESS;
}
EXPORT CUresult cuCtxSetCurrent(CUcontext ctx) FAKE_API(cuCtxSetCurrent, set_current(ctx))

static CUresult get_current(CUcontext *out) {
    if (!out) return CUDA_ERROR_INVALID_VALUE;
    *out = context_depth ? fake_handle(context_stack[context_depth - 1]) : NULL;
    return CUDA_SUCCESS;
}
EXPORT CUresult cuCtxGetCurrent(CUcontext *pctx) FAKE_API(cuCtxGetCurrent, get_current(pctx))

static CUresult push_current(CUcontext handle) {
    struct fake_object *context = fake_lookup_context(handle);
    if (!context) return CUDA_ERROR_INVALID_CONTEXT;
    return push(context);
}
EXPORT CUresult cuCtxPushCurrent_v2(CUcontext ctx) FAKE_API(cuCtxPushCurrent_v2, push_current(ctx))

static CUresult pop_current(CUcontext *out) {
    if (context_depth == 0) return CUDA_ERROR_INVALID_CONTEXT;
    struct fake_object *context = context_stack[--context_depth];
    if (out) *out = fake_handle(context);
    return CUDA_SUCCESS;
}
EXPORT CUresult cuCtxPopCurrent_v2(CUcontext *pctx) FAKE_API(cuCtxPopCurrent_v2, pop_current(pctx))

static CUresult context_synchronize(void) {
    struct fake_object *context;
    CUresult result = fake_current_context(&context);
    if (result != CUDA_SUCCESS) return result;
    if (fake_capture_forbids()) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    fake_flush_context(context);
    return fake_take_async_error(context);
}
EXPORT CUresult cuCtxSynchronize(void) FAKE_API(cuCtxSynchronize, context_synchronize())

static CUresult context_device(CUdevice *device) {
    if (!device) return CUDA_ERROR_INVALID_VALUE;
    struct fake_object *context;
    CUresult result = fake_current_context(&context);
    if (result == CUDA_SUCCESS) *device = context->u.ctx.device;
    return result;
}
EXPORT CUresult cuCtxGetDevice(CUdevice *device) FAKE_API(cuCtxGetDevice, context_device(device))

static CUresult context_flags(unsigned int *flags) {
    if (!flags) return CUDA_ERROR_INVALID_VALUE;
    struct fake_object *context;
    CUresult result = fake_current_context(&context);
    if (result == CUDA_SUCCESS) *flags = context->u.ctx.flags;
    return result;
}
EXPORT CUresult cuCtxGetFlags(unsigned int *flags) FAKE_API(cuCtxGetFlags, context_flags(flags))

static CUresult api_version(CUcontext handle, unsigned int *version) {
    if (!version) return CUDA_ERROR_INVALID_VALUE;
    struct fake_object *context;
    CUresult result = handle ? (fake_lookup_context(handle) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT)
                             : fake_current_context(&context);
    if (result == CUDA_SUCCESS) *version = 13000;
    return result;
}
EXPORT CUresult cuCtxGetApiVersion(CUcontext ctx, unsigned int *version)
    FAKE_API(cuCtxGetApiVersion, api_version(ctx, version))

/* ---- limits --------------------------------------------------------------------------- */

enum { LIMIT_STACK_SIZE, LIMIT_PRINTF_FIFO_SIZE, LIMIT_MALLOC_HEAP_SIZE, LIMIT_SYNC_DEPTH, LIMIT_PENDING_LAUNCHES,
       LIMIT_SHMEM_SIZE = 7, LIMIT_END = 10 };
#define CUDA_ERROR_UNSUPPORTED_LIMIT 215

static size_t default_limit(int limit) {
    switch (limit) {
    case LIMIT_STACK_SIZE: return 1024;
    case LIMIT_PRINTF_FIFO_SIZE: return 1 << 20;
    case LIMIT_MALLOC_HEAP_SIZE: return 8 << 20;
    case LIMIT_SYNC_DEPTH: return 2;
    case LIMIT_PENDING_LAUNCHES: return 2048;
    case LIMIT_SHMEM_SIZE: return FAKE_MAX_SHARED_OPTIN;
    default: return 0;
    }
}

static int known_limit(int limit) { return limit >= 0 && limit < LIMIT_END && limit != 5 && limit != 6; }

static CUresult get_limit(size_t *value, int limit) {
    if (!value) return CUDA_ERROR_INVALID_VALUE;
    struct fake_object *context;
    CUresult result = fake_current_context(&context);
    if (result != CUDA_SUCCESS) return result;
    if (!known_limit(limit)) return CUDA_ERROR_UNSUPPORTED_LIMIT;
    size_t set = context->u.ctx.limits[limit];
    *value = set ? set : default_limit(limit);
    return CUDA_SUCCESS;
}
EXPORT CUresult cuCtxGetLimit(size_t *pvalue, int limit) FAKE_API(cuCtxGetLimit, get_limit(pvalue, limit))

static CUresult set_limit(int limit, size_t value) {
    struct fake_object *context;
    CUresult result = fake_current_context(&context);
    if (result != CUDA_SUCCESS) return result;
    if (!known_limit(limit)) return CUDA_ERROR_UNSUPPORTED_LIMIT;
    if (limit == LIMIT_SHMEM_SIZE && value > FAKE_MAX_SHARED_OPTIN) return CUDA_ERROR_INVALID_VALUE;
    context->u.ctx.limits[limit] = value ? value : default_limit(limit);
    return CUDA_SUCCESS;
}
EXPORT CUresult cuCtxSetLimit(int limit, size_t value) FAKE_API(cuCtxSetLimit, set_limit(limit, value))

static CUresult priority_range(int *least, int *greatest) {
    if (least) *least = 0;
    if (greatest) *greatest = -5;
    return CUDA_SUCCESS;
}
EXPORT CUresult cuCtxGetStreamPriorityRange(int *leastPriority, int *greatestPriority)
    FAKE_API(cuCtxGetStreamPriorityRange, priority_range(leastPriority, greatestPriority))

/* ---- peer access --------------------------------------------------------------- */

static CUresult peer_access(CUcontext peer_handle, unsigned int flags, int enable) {
    if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
    struct fake_object *context;
    CUresult result = fake_current_context(&context);
    if (result != CUDA_SUCCESS) return result;
    struct fake_object *peer = fake_lookup_context(peer_handle);
    if (!peer) return CUDA_ERROR_INVALID_CONTEXT;
    if (peer->u.ctx.device == context->u.ctx.device) return CUDA_ERROR_INVALID_DEVICE;
    unsigned int bit = 1u << peer->u.ctx.device;
    if (enable) {
        if (context->u.ctx.peers & bit) return CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED;
        context->u.ctx.peers |= bit;
    } else {
        if (!(context->u.ctx.peers & bit)) return CUDA_ERROR_PEER_ACCESS_NOT_ENABLED;
        context->u.ctx.peers &= ~bit;
    }
    return CUDA_SUCCESS;
}
EXPORT CUresult cuCtxEnablePeerAccess(CUcontext peerContext, unsigned int Flags)
    FAKE_API(cuCtxEnablePeerAccess, peer_access(peerContext, Flags, 1))
EXPORT CUresult cuCtxDisablePeerAccess(CUcontext peerContext)
    FAKE_API(cuCtxDisablePeerAccess, peer_access(peerContext, 0, 0))

/* ---- for green contexts (green.c), lock held ------------------------------------- */

int fake_valid_device(CUdevice device) { return valid_device(device); }

CUresult fake_retain_primary(CUdevice device, struct fake_object **primary) {
    CUcontext handle;
    CUresult result = primary_retain(&handle, device);
    if (result == CUDA_SUCCESS) *primary = fake_primary(device);
    return result;
}

CUresult fake_release_primary(CUdevice device) { return primary_release(device); }
