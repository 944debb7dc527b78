/*
 * fakecuda (test double): virtual memory management. A reserved range
 * (KIND_VA_RANGE) is backed by host memory of its whole size, but holds
 * memory only in the granules that are mapped to physical memory
 * (KIND_PHYSICAL, from cuMemCreate) and made accessible with cuMemSetAccess:
 * copies and kernels elsewhere in it fail as at an unknown address, and a
 * copy may span several mappings. Physical memory released while mapped
 * lives until its last granule is unmapped. Freeing a range drops the
 * mappings left in it (the stand-in's choice). Contents do not follow
 * physical memory from one mapping to another. Like cuMemFree, creating,
 * mapping, unmapping and freeing are refused where a stream capture forbids
 * them.
 */
#include <stdlib.h>

#include "driver.h"

#define GRANULARITY 65536ull

enum { ALLOCATION_PINNED = 1, LOCATION_DEVICE = 1, HANDLE_NONE = 0 };
enum { ACCESS_NONE = 0, ACCESS_READ = 1, ACCESS_READWRITE = 3 };

/* CUmemAllocationProp and CUmemAccessDesc of cuda.h. */
struct location {
    int type;
    int id;
};

struct allocation_prop {
    int type;
    int handle_types;
    struct location location;
    void *win32_metadata;
    unsigned char alloc_flags[8];
};

struct access_desc {
    struct location location;
    int flags;
};

static CUresult check_prop(const struct allocation_prop *prop) {
    if (!prop || prop->type != ALLOCATION_PINNED || prop->location.type != LOCATION_DEVICE) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (prop->location.id < 0 || prop->location.id >= FAKE_DEVICES) return CUDA_ERROR_INVALID_DEVICE;
    return prop->handle_types == HANDLE_NONE ? CUDA_SUCCESS : CUDA_ERROR_NOT_SUPPORTED;
}

static CUresult granularity(size_t *out, const struct allocation_prop *prop, int option) {
    if (!out || (option != 0 && option != 1)) return CUDA_ERROR_INVALID_VALUE;
    CUresult result = check_prop(prop);
    if (result == CUDA_SUCCESS) *out = GRANULARITY;
    return result;
}
EXPORT CUresult cuMemGetAllocationGranularity(size_t *granularity_out, const void *prop, int option)
    FAKE_API(cuMemGetAllocationGranularity, granularity(granularity_out, prop, option))

int fake_vmm_accessible(const struct fake_object *range, CUdeviceptr address, size_t bytes) {
    size_t first = (address - range->u.vmm.address) / GRANULARITY;
    size_t last = (address - range->u.vmm.address + (bytes ? bytes - 1 : 0)) / GRANULARITY;
    for (size_t g = first; g <= last; g++) {
        if (g * GRANULARITY >= range->u.vmm.size || !range->u.vmm.owners[g] || !range->u.vmm.access[g]) return 0;
    }
    return 1;
}

static CUresult reserve(CUdeviceptr *out, size_t size, size_t alignment, unsigned long long flags) {
    if (!out || size == 0 || size % GRANULARITY != 0 || flags != 0) return CUDA_ERROR_INVALID_VALUE;
    if (alignment != 0 && (alignment & (alignment - 1)) != 0) return CUDA_ERROR_INVALID_VALUE;
    if (size > FAKE_BACKING_LIMIT) return CUDA_ERROR_OUT_OF_MEMORY;
    size_t granules = size / GRANULARITY;
    unsigned char *bytes = malloc(size), *access = calloc(granules, 1);
    struct fake_object **owners = calloc(granules, sizeof *owners);
    struct fake_object *range = bytes && access && owners ? fake_new(KIND_VA_RANGE, NULL) : NULL;
    if (!range) {
        free(bytes);
        free(access);
        free(owners);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    /* aligned to the granularity, as the driver's ranges are */
    CUdeviceptr address = fake_reserve_address(size + GRANULARITY);
    range->u.vmm.address = (address + GRANULARITY - 1) / GRANULARITY * GRANULARITY;
    range->u.vmm.size = size;
    range->u.vmm.bytes = bytes;
    range->u.vmm.owners = owners;
    range->u.vmm.access = access;
    *out = range->u.vmm.address;
    return CUDA_SUCCESS;
}
EXPORT CUresult cuMemAddressReserve(CUdeviceptr *ptr, size_t size, size_t alignment, CUdeviceptr addr,
                                    unsigned long long flags)
    FAKE_API(cuMemAddressReserve, (void)addr, reserve(ptr, size, alignment, flags))

/* The live range holding [address, address + size), both granule-aligned within it; NULL if none. */
static struct fake_object *range_of(CUdeviceptr address, size_t size) {
    if (size == 0 || size % GRANULARITY != 0) return NULL;
    for (size_t i = 0; i < fake_present_count(); i++) {
        struct fake_object *range = fake_present_at(i);
        if (!range->live || range->kind != KIND_VA_RANGE || address < range->u.vmm.address) continue;
        CUdeviceptr offset = address - range->u.vmm.address;
        if (offset < range->u.vmm.size && size <= range->u.vmm.size - offset) {
            return offset % GRANULARITY == 0 ? range : NULL;
        }
    }
    return NULL;
}

/* Unmaps granule `g` of `range`; destroys its physical memory if that was released and is now unmapped. */
static void unmap_granule(struct fake_object *range, size_t g) {
    struct fake_object *physical = range->u.vmm.owners[g];
    range->u.vmm.owners[g] = NULL;
    range->u.vmm.access[g] = 0;
    if (--physical->u.vmm.mapped == 0 && physical->u.vmm.released && physical->live) fake_destroy(physical);
}

static CUresult address_free(CUdeviceptr address, size_t size) {
    if (fake_capture_forbids()) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    int was_freed;
    struct fake_object *range = fake_memory_at_base(address, KIND_VA_RANGE, &was_freed);
    if (!range) {
        if (was_freed) {
            fake_record_double_free();
        } else {
            fake_record_invalid();
        }
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (size != range->u.vmm.size) return CUDA_ERROR_INVALID_VALUE;
    fake_flush_all(); /* work that may use the range runs first */
    for (size_t g = 0; g < size / GRANULARITY; g++) {
        if (range->u.vmm.owners[g]) unmap_granule(range, g);
    }
    return fake_destroy(range);
}
EXPORT CUresult cuMemAddressFree(CUdeviceptr ptr, size_t size) FAKE_API(cuMemAddressFree, address_free(ptr, size))

static CUresult create(unsigned long long *handle, size_t size, const struct allocation_prop *prop,
                       unsigned long long flags) {
    if (!handle || size == 0 || size % GRANULARITY != 0 || flags != 0) return CUDA_ERROR_INVALID_VALUE;
    CUresult result = check_prop(prop);
    if (result != CUDA_SUCCESS) return result;
    if (fake_capture_forbids()) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    if (size > FAKE_BACKING_LIMIT) return CUDA_ERROR_OUT_OF_MEMORY;
    struct fake_object *physical = fake_new(KIND_PHYSICAL, NULL);
    if (!physical) return CUDA_ERROR_OUT_OF_MEMORY;
    physical->u.vmm.size = size;
    *handle = (unsigned long long)(uintptr_t)fake_handle(physical);
    return CUDA_SUCCESS;
}
EXPORT CUresult cuMemCreate(unsigned long long *handle, size_t size, const void *prop, unsigned long long flags)
    FAKE_API(cuMemCreate, create(handle, size, prop, flags))

static CUresult release(unsigned long long handle) {
    if (fake_capture_forbids()) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    struct fake_object *physical = fake_lookup_for_destroy((void *)(uintptr_t)handle, KIND_PHYSICAL);
    if (!physical) return CUDA_ERROR_INVALID_VALUE;
    if (physical->u.vmm.released) {
        fake_record_double_free();
        return CUDA_ERROR_INVALID_VALUE;
    }
    physical->u.vmm.released = 1;
    return physical->u.vmm.mapped == 0 ? fake_destroy(physical) : CUDA_SUCCESS;
}
EXPORT CUresult cuMemRelease(unsigned long long handle) FAKE_API(cuMemRelease, release(handle))

static CUresult map(CUdeviceptr address, size_t size, size_t offset, unsigned long long handle,
                    unsigned long long flags) {
    struct fake_object *physical = fake_lookup((void *)(uintptr_t)handle, KIND_PHYSICAL);
    if (!physical || physical->u.vmm.released) return CUDA_ERROR_INVALID_HANDLE;
    struct fake_object *range = range_of(address, size);
    if (!range || flags != 0 || offset % GRANULARITY != 0 || offset > physical->u.vmm.size ||
        size > physical->u.vmm.size - offset) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (fake_capture_forbids()) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    size_t first = (address - range->u.vmm.address) / GRANULARITY, count = size / GRANULARITY;
    for (size_t g = first; g < first + count; g++) {
        if (range->u.vmm.owners[g]) return CUDA_ERROR_INVALID_VALUE; /* already mapped */
    }
    for (size_t g = first; g < first + count; g++) range->u.vmm.owners[g] = physical;
    physical->u.vmm.mapped += count;
    return CUDA_SUCCESS;
}
EXPORT CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset, unsigned long long handle,
                         unsigned long long flags)
    FAKE_API(cuMemMap, map(ptr, size, offset, handle, flags))

static CUresult unmap(CUdeviceptr address, size_t size) {
    struct fake_object *range = range_of(address, size);
    if (!range) return CUDA_ERROR_INVALID_VALUE;
    if (fake_capture_forbids()) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    size_t first = (address - range->u.vmm.address) / GRANULARITY, count = size / GRANULARITY;
    for (size_t g = first; g < first + count; g++) {
        if (!range->u.vmm.owners[g]) return CUDA_ERROR_INVALID_VALUE; /* not mapped */
    }
    fake_flush_all(); /* work that may use the range runs first */
    for (size_t g = first; g < first + count; g++) unmap_granule(range, g);
    return CUDA_SUCCESS;
}
EXPORT CUresult cuMemUnmap(CUdeviceptr ptr, size_t size) FAKE_API(cuMemUnmap, unmap(ptr, size))

static CUresult set_access(CUdeviceptr address, size_t size, const struct access_desc *desc, size_t count) {
    struct fake_object *range = range_of(address, size);
    if (!range || !desc || count == 0) return CUDA_ERROR_INVALID_VALUE;
    int allowed = 0;
    for (size_t i = 0; i < count; i++) {
        if (desc[i].location.type != LOCATION_DEVICE || desc[i].location.id < 0 ||
            desc[i].location.id >= FAKE_DEVICES) {
            return CUDA_ERROR_INVALID_DEVICE;
        }
        int flags = desc[i].flags;
        if (flags != ACCESS_NONE && flags != ACCESS_READ && flags != ACCESS_READWRITE) return CUDA_ERROR_INVALID_VALUE;
        allowed |= flags != ACCESS_NONE;
    }
    size_t first = (address - range->u.vmm.address) / GRANULARITY, granules = size / GRANULARITY;
    for (size_t g = first; g < first + granules; g++) {
        if (!range->u.vmm.owners[g]) return CUDA_ERROR_INVALID_VALUE; /* not mapped */
    }
    for (size_t g = first; g < first + granules; g++) range->u.vmm.access[g] = (unsigned char)allowed;
    return CUDA_SUCCESS;
}
EXPORT CUresult cuMemSetAccess(CUdeviceptr ptr, size_t size, const void *desc, size_t count)
    FAKE_API(cuMemSetAccess, set_access(ptr, size, desc, count))
