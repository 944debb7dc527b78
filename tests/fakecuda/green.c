/*
 * fakecuda (test double): SM resources, their splits and green contexts, and tensor map
 * encoding. A device has FAKE_SM_COUNT SMs (partitions of at least 8, rounded up to 4); a split
 * rounds each group up likewise and makes as many groups as fit. A green context retains its
 * device's primary context until destroyed (as the driver does), so a leaked one shows as a
 * live primary retain; its streams belong to that primary context. Tensor maps are checked for
 * the basics (rank, alignment, a current context) and filled with the address and rank.
 */
#include <string.h>

#include "driver.h"

#define MIN_PARTITION 8u
#define ALIGNMENT 4u
#define RESOURCE_TYPE_SM 1
#define GREEN_DEFAULT_STREAM 1u
#define STREAM_NON_BLOCKING 1u

/* cuda.h's CUdevResource: the fake keeps its device and split in the internal bytes. */
typedef struct {
    int type;
    unsigned char internal[92];
    union {
        struct {
            unsigned int smCount, minSmPartitionSize, smCoscheduledAlignment;
        } sm;
        unsigned char oversize[48];
    } u;
} CUdevResource;

struct resource_tag {
    int device;
    unsigned int split; /* 0: a device's or green context's resource */
};

typedef struct {
    _Alignas(64) unsigned long long opaque[16];
} CUtensorMap;

/* Descriptors live as long as the library (the driver has no call to destroy one). */
#define MAX_DESCRIPTORS 4096
static struct {
    int device;
    unsigned int sm_count;
} descriptors[MAX_DESCRIPTORS];
static unsigned int descriptor_count, split_count;

static void fill(CUdevResource *resource, int device, unsigned int split, unsigned int sm_count) {
    memset(resource, 0, sizeof *resource);
    resource->type = RESOURCE_TYPE_SM;
    struct resource_tag tag = {device, split};
    memcpy(resource->internal, &tag, sizeof tag);
    resource->u.sm.smCount = sm_count;
    resource->u.sm.minSmPartitionSize = MIN_PARTITION;
    resource->u.sm.smCoscheduledAlignment = ALIGNMENT;
}

static struct resource_tag tag_of(const CUdevResource *resource) {
    struct resource_tag tag;
    memcpy(&tag, resource->internal, sizeof tag);
    return tag;
}

static CUresult device_resource(CUdevice device, CUdevResource *resource, int type) {
    if (!resource || type != RESOURCE_TYPE_SM) return CUDA_ERROR_INVALID_VALUE;
    if (!fake_valid_device(device)) return CUDA_ERROR_INVALID_DEVICE;
    fill(resource, device, 0, FAKE_SM_COUNT);
    return CUDA_SUCCESS;
}
EXPORT CUresult cuDeviceGetDevResource(CUdevice device, CUdevResource *resource, int type)
    FAKE_API(cuDeviceGetDevResource, device_resource(device, resource, type))

static CUresult split_by_count(CUdevResource *result, unsigned int *groups, const CUdevResource *input,
                               CUdevResource *remaining, unsigned int flags, unsigned int min_count) {
    if (!groups || !input || input->type != RESOURCE_TYPE_SM || flags != 0) return CUDA_ERROR_INVALID_VALUE;
    unsigned int available = input->u.sm.smCount;
    if (min_count > available) return CUDA_ERROR_INVALID_VALUE;
    unsigned int size = min_count < MIN_PARTITION ? MIN_PARTITION : min_count;
    size = (size + ALIGNMENT - 1) / ALIGNMENT * ALIGNMENT;
    unsigned int fit = available / size;
    if (!result) {
        *groups = fit;
        return CUDA_SUCCESS;
    }
    unsigned int made = *groups < fit ? *groups : fit;
    unsigned int split = ++split_count;
    int device = tag_of(input).device;
    for (unsigned int i = 0; i < made; i++) fill(&result[i], device, split, size);
    if (remaining) fill(remaining, device, split, available - made * size);
    *groups = made;
    return CUDA_SUCCESS;
}
EXPORT CUresult cuDevSmResourceSplitByCount(CUdevResource *result, unsigned int *nbGroups, const CUdevResource *input,
                                            CUdevResource *remaining, unsigned int useFlags, unsigned int minCount)
    FAKE_API(cuDevSmResourceSplitByCount, split_by_count(result, nbGroups, input, remaining, useFlags, minCount))

static CUresult generate_desc(CUdevResourceDesc *out, CUdevResource *resources, unsigned int count) {
    if (!out || !resources || count == 0) return CUDA_ERROR_INVALID_VALUE;
    if (descriptor_count == MAX_DESCRIPTORS) return CUDA_ERROR_OUT_OF_MEMORY;
    struct resource_tag first = tag_of(&resources[0]);
    unsigned int sm_count = 0;
    for (unsigned int i = 0; i < count; i++) {
        struct resource_tag tag = tag_of(&resources[i]);
        if (resources[i].type != RESOURCE_TYPE_SM || tag.device != first.device) return CUDA_ERROR_INVALID_VALUE;
        if (count > 1 && (tag.split == 0 || tag.split != first.split)) return CUDA_ERROR_INVALID_VALUE;
        sm_count += resources[i].u.sm.smCount;
    }
    descriptors[descriptor_count].device = first.device;
    descriptors[descriptor_count].sm_count = sm_count;
    *out = (CUdevResourceDesc)(uintptr_t)(++descriptor_count);
    return CUDA_SUCCESS;
}
EXPORT CUresult cuDevResourceGenerateDesc(CUdevResourceDesc *phDesc, CUdevResource *resources, unsigned int nbResources)
    FAKE_API(cuDevResourceGenerateDesc, generate_desc(phDesc, resources, nbResources))

static CUresult green_create(CUgreenCtx *out, CUdevResourceDesc desc, CUdevice device, unsigned int flags) {
    uintptr_t index = (uintptr_t)desc;
    if (!out || index == 0 || index > descriptor_count || flags != GREEN_DEFAULT_STREAM) return CUDA_ERROR_INVALID_VALUE;
    if (!fake_valid_device(device) || descriptors[index - 1].device != device) return CUDA_ERROR_INVALID_DEVICE;
    struct fake_object *primary;
    CUresult result = fake_retain_primary(device, &primary);
    if (result != CUDA_SUCCESS) return result;
    struct fake_object *green = fake_new(KIND_GREEN_CONTEXT, NULL);
    if (!green) {
        fake_release_primary(device);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    green->u.green.device = device;
    green->u.green.sm_count = descriptors[index - 1].sm_count;
    *out = fake_handle(green);
    return CUDA_SUCCESS;
}
EXPORT CUresult cuGreenCtxCreate(CUgreenCtx *phCtx, CUdevResourceDesc desc, CUdevice dev, unsigned int flags)
    FAKE_API(cuGreenCtxCreate, green_create(phCtx, desc, dev, flags))

static CUresult green_destroy(CUgreenCtx handle) {
    struct fake_object *green = fake_lookup_for_destroy(handle, KIND_GREEN_CONTEXT);
    if (!green) return CUDA_ERROR_INVALID_HANDLE;
    CUresult result = fake_destroy(green);
    if (result == CUDA_SUCCESS) result = fake_release_primary(green->u.green.device);
    return result;
}
EXPORT CUresult cuGreenCtxDestroy(CUgreenCtx hCtx) FAKE_API(cuGreenCtxDestroy, green_destroy(hCtx))

static CUresult green_context(CUcontext *out, CUgreenCtx handle) {
    if (!out) return CUDA_ERROR_INVALID_VALUE;
    struct fake_object *green = fake_lookup(handle, KIND_GREEN_CONTEXT);
    if (!green) return CUDA_ERROR_INVALID_HANDLE;
    *out = fake_handle(fake_primary(green->u.green.device));
    return CUDA_SUCCESS;
}
EXPORT CUresult cuCtxFromGreenCtx(CUcontext *pContext, CUgreenCtx hCtx)
    FAKE_API(cuCtxFromGreenCtx, green_context(pContext, hCtx))

static CUresult green_resource(CUgreenCtx handle, CUdevResource *resource, int type) {
    if (!resource || type != RESOURCE_TYPE_SM) return CUDA_ERROR_INVALID_VALUE;
    struct fake_object *green = fake_lookup(handle, KIND_GREEN_CONTEXT);
    if (!green) return CUDA_ERROR_INVALID_HANDLE;
    fill(resource, green->u.green.device, 0, green->u.green.sm_count);
    return CUDA_SUCCESS;
}
EXPORT CUresult cuGreenCtxGetDevResource(CUgreenCtx hCtx, CUdevResource *resource, int type)
    FAKE_API(cuGreenCtxGetDevResource, green_resource(hCtx, resource, type))

static CUresult green_stream(CUstream *out, CUgreenCtx handle, unsigned int flags, int priority) {
    if (!out || flags != STREAM_NON_BLOCKING) return CUDA_ERROR_INVALID_VALUE;
    struct fake_object *green = fake_lookup(handle, KIND_GREEN_CONTEXT);
    if (!green) return CUDA_ERROR_INVALID_HANDLE;
    struct fake_object *stream = fake_new(KIND_STREAM, fake_primary(green->u.green.device));
    if (!stream) return CUDA_ERROR_OUT_OF_MEMORY;
    stream->u.stream.flags = flags;
    stream->u.stream.priority = priority < -5 ? -5 : priority > 0 ? 0 : priority;
    *out = fake_handle(stream);
    return CUDA_SUCCESS;
}
EXPORT CUresult cuGreenCtxStreamCreate(CUstream *phStream, CUgreenCtx greenCtx, unsigned int flags, int priority)
    FAKE_API(cuGreenCtxStreamCreate, green_stream(phStream, greenCtx, flags, priority))

/* ---- tensor maps ---------------------------------------------------------------- */

static CUresult encode(CUtensorMap *map, unsigned int rank, unsigned int min_rank, void *address,
                       const unsigned long long *dims) {
    struct fake_object *context;
    CUresult result = fake_current_context(&context);
    if (result != CUDA_SUCCESS) return result;
    if (!map || ((uintptr_t)map % 64) || rank < min_rank || rank > 5 || !dims) return CUDA_ERROR_INVALID_VALUE;
    if ((uintptr_t)address % 16 || !fake_device_bytes((CUdeviceptr)(uintptr_t)address, 1)) return CUDA_ERROR_INVALID_VALUE;
    memset(map, 0, sizeof *map);
    map->opaque[0] = (uintptr_t)address;
    map->opaque[1] = rank;
    for (unsigned int i = 0; i < rank; i++) map->opaque[2 + i] = dims[i];
    return CUDA_SUCCESS;
}

EXPORT CUresult cuTensorMapEncodeTiled(CUtensorMap *tensorMap, int tensorDataType, unsigned int tensorRank,
                                       void *globalAddress, const unsigned long long *globalDim,
                                       const unsigned long long *globalStrides, const unsigned int *boxDim,
                                       const unsigned int *elementStrides, int interleave, int swizzle,
                                       int l2Promotion, int oobFill)
    FAKE_API(cuTensorMapEncodeTiled, ((void)tensorDataType, (void)globalStrides, (void)boxDim, (void)elementStrides,
                                      (void)interleave, (void)swizzle, (void)l2Promotion, (void)oobFill,
                                      encode(tensorMap, tensorRank, 1, globalAddress, globalDim)))

EXPORT CUresult cuTensorMapEncodeIm2col(CUtensorMap *tensorMap, int tensorDataType, unsigned int tensorRank,
                                        void *globalAddress, const unsigned long long *globalDim,
                                        const unsigned long long *globalStrides, const int *pixelBoxLowerCorner,
                                        const int *pixelBoxUpperCorner, unsigned int channelsPerPixel,
                                        unsigned int pixelsPerColumn, const unsigned int *elementStrides,
                                        int interleave, int swizzle, int l2Promotion, int oobFill)
    FAKE_API(cuTensorMapEncodeIm2col,
             ((void)tensorDataType, (void)globalStrides, (void)pixelBoxLowerCorner, (void)pixelBoxUpperCorner,
              (void)channelsPerPixel, (void)pixelsPerColumn, (void)elementStrides, (void)interleave, (void)swizzle,
              (void)l2Promotion, (void)oobFill, encode(tensorMap, tensorRank, 3, globalAddress, globalDim)))
