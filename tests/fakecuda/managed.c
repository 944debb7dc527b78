/*
 * fakecuda (test double): managed memory. An allocation is host memory
 * (KIND_HOST_MEMORY, marked managed) that host code and the host kernels
 * address alike, freed with cuMemFree. Prefetches and advice check their
 * arguments and the range; there is nothing to migrate.
 */
#include <stdlib.h>
#include <string.h>

#include "driver.h"

enum { ATTACH_GLOBAL = 1, ATTACH_HOST = 2 };
enum { LOCATION_DEVICE = 1, LOCATION_HOST = 2 };
enum { ADVISE_FIRST = 1, ADVISE_LAST = 6 };

/* CUmemLocation of cuda.h. */
struct location {
    int type;
    int id;
};

static CUresult alloc_managed(CUdeviceptr *address, size_t bytes, unsigned int flags) {
    struct fake_object *context;
    CUresult result = fake_current_context(&context);
    if (result != CUDA_SUCCESS) return result;
    if (!address || bytes == 0 || (flags != ATTACH_GLOBAL && flags != ATTACH_HOST)) return CUDA_ERROR_INVALID_VALUE;
    if (fake_capture_forbids()) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    if (bytes > FAKE_BACKING_LIMIT) return CUDA_ERROR_OUT_OF_MEMORY;
    void *backing;
    if (posix_memalign(&backing, 4096, bytes) != 0) return CUDA_ERROR_OUT_OF_MEMORY;
    struct fake_object *memory = fake_new(KIND_HOST_MEMORY, context);
    if (!memory) {
        free(backing);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    memset(backing, 0xa5, bytes);
    memory->u.host.pointer = backing;
    memory->u.host.size = bytes;
    memory->u.host.flags = flags;
    memory->u.host.managed = 1;
    *address = (CUdeviceptr)(uintptr_t)backing;
    return CUDA_SUCCESS;
}
EXPORT CUresult cuMemAllocManaged(CUdeviceptr *dptr, size_t bytesize, unsigned int flags)
    FAKE_API(cuMemAllocManaged, alloc_managed(dptr, bytesize, flags))

/* Whether [address, address + bytes) lies inside one live managed allocation. */
static int is_managed_range(CUdeviceptr address, size_t bytes) {
    struct fake_object *memory = fake_memory_containing(address, bytes);
    return memory && memory->kind == KIND_HOST_MEMORY && memory->u.host.managed;
}

static int valid_location(struct location location) {
    if (location.type == LOCATION_HOST) return 1;
    return location.type == LOCATION_DEVICE && location.id >= 0 && location.id < FAKE_DEVICES;
}

static CUresult prefetch(CUdeviceptr address, size_t bytes, struct location location, unsigned int flags,
                         CUstream handle) {
    struct fake_object *context, *stream;
    CUresult result = fake_resolve_stream(handle, &context, &stream);
    if (result != CUDA_SUCCESS) return result;
    if (bytes == 0 || flags != 0 || !valid_location(location)) return CUDA_ERROR_INVALID_VALUE;
    if (!is_managed_range(address, bytes)) {
        fake_record_invalid();
        return CUDA_ERROR_INVALID_VALUE;
    }
    return CUDA_SUCCESS;
}
EXPORT CUresult cuMemPrefetchAsync_v2(CUdeviceptr devPtr, size_t count, struct location location,
                                      unsigned int flags, CUstream hStream)
    FAKE_API(cuMemPrefetchAsync_v2, prefetch(devPtr, count, location, flags, hStream))

static CUresult advise(CUdeviceptr address, size_t bytes, int advice, struct location location) {
    if (bytes == 0 || advice < ADVISE_FIRST || advice > ADVISE_LAST) return CUDA_ERROR_INVALID_VALUE;
    /* the location matters for the preferred-location and accessed-by advice (3, 5, 6) */
    if ((advice == 3 || advice == 5 || advice == 6) && !valid_location(location)) return CUDA_ERROR_INVALID_VALUE;
    if (!is_managed_range(address, bytes)) {
        fake_record_invalid();
        return CUDA_ERROR_INVALID_VALUE;
    }
    return CUDA_SUCCESS;
}
EXPORT CUresult cuMemAdvise_v2(CUdeviceptr devPtr, size_t count, int advice, struct location location)
    FAKE_API(cuMemAdvise_v2, advise(devPtr, count, advice, location))
