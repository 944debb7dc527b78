/*
 * fakecuda (test double): memory pools shared between processes, within one process.
 * A pool created with handleTypes = POSIX file descriptor exports a real file descriptor (a
 * memfd holding a magic and the pool's handle, so duplicates and inherited copies name the same
 * pool); importing it makes a new KIND_MEMORY_POOL that refers to the exporter's pool, destroyed
 * with cuMemPoolDestroy and handing out no allocations. A pool allocation exports as its
 * address; importing it into the imported pool in a context other than the allocation's (which
 * stands in for another process, as in ipc.c) makes a KIND_IPC_MAPPING at the allocation's own
 * address, freed by cuMemFree (memory.c: while an import of an address is live, cuMemFree of it
 * frees an import, the calling context's first, since addresses are the process's in the
 * driver; the exporter frees its pool memory with cuMemFreeAsync). Two orders are counted as violations
 * (fakecuda_pool_order_violations; apart from the invalid-use count, since a release the
 * fault injector refuses leaves an import behind on purpose): an exporter freeing an allocation
 * before every import of it is freed (the driver's rule), and an imported pool destroyed before
 * its imports are freed (the driver would defer the release; the stand-in is stricter, to check
 * the safe layer's order). Device 1 reports no shareable handle types (devices.c).
 */
#define _GNU_SOURCE
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "driver.h"

#define POOL_MAGIC "fakepool"
#define POINTER_MAGIC "fakeptr"
#define HANDLE_TYPE_POSIX_FD 1
#define ACCESS_READWRITE 3
#define LOCATION_DEVICE 1

/* CUmemPoolPtrExportData of cuda.h: 64 opaque bytes, here the magic and the allocation's address. */
typedef struct {
    unsigned char reserved[64];
} pointer_export;

/* CUmemLocation and CUmemAccessDesc of cuda.h. */
struct location {
    int type;
    int id;
};
struct access_desc {
    struct location location;
    int flags;
};

static uint64_t order_violations;

/* Control API: the violations of the orders above so far. */
EXPORT uint64_t fakecuda_pool_order_violations(void) {
    fake_lock();
    uint64_t count = order_violations;
    fake_unlock();
    return count;
}

struct fake_object *fake_pool_import_at(CUdeviceptr address) {
    if (fake_live(KIND_IPC_MAPPING) == 0) return NULL;
    struct fake_object *context = NULL, *found = NULL;
    fake_current_context(&context);
    for (size_t i = 0; i < fake_present_count(); i++) {
        struct fake_object *mapping = fake_present_at(i);
        if (mapping->live && mapping->kind == KIND_IPC_MAPPING && mapping->u.ipc.pool &&
            mapping->u.ipc.address == address && (!found || mapping->context == context)) {
            found = mapping;
        }
    }
    return found;
}

/* Imports not freed yet: of `memory` (if not NULL) or into `pool` (if not NULL). */
static size_t live_imports(const struct fake_object *memory, const struct fake_object *pool) {
    size_t count = 0;
    for (size_t i = 0; i < fake_present_count(); i++) {
        struct fake_object *mapping = fake_present_at(i);
        if (mapping->live && mapping->kind == KIND_IPC_MAPPING && mapping->u.ipc.pool &&
            (!memory || mapping->u.ipc.allocation == memory) && (!pool || mapping->u.ipc.pool == pool)) {
            count++;
        }
    }
    return count;
}

void fake_check_pool_free(const struct fake_object *memory) {
    const struct fake_object *pool = memory->u.mem.pool;
    if (pool && pool->kind == KIND_MEMORY_POOL && live_imports(memory, NULL)) order_violations++;
}

static CUresult export_pool(int *fd_out, CUmemoryPool handle, int type, unsigned long long flags) {
    struct fake_object *pool = fake_lookup_quiet(handle, KIND_MEMORY_POOL);
    if (!fd_out || !pool || flags != 0 || type != HANDLE_TYPE_POSIX_FD) return CUDA_ERROR_INVALID_VALUE;
    if (!(pool->u.pool.handle_types & HANDLE_TYPE_POSIX_FD) || pool->u.pool.imported_from) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    int fd = memfd_create("fakecuda-pool", MFD_CLOEXEC);
    if (fd < 0) return CUDA_ERROR_OUT_OF_MEMORY;
    unsigned char content[16] = {0};
    void *value = fake_handle(pool);
    memcpy(content, POOL_MAGIC, 8);
    memcpy(content + 8, &value, sizeof value);
    if (write(fd, content, sizeof content) != (ssize_t)sizeof content) {
        close(fd);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    *fd_out = fd;
    return CUDA_SUCCESS;
}
EXPORT CUresult cuMemPoolExportToShareableHandle(void *handle_out, CUmemoryPool pool, int handleType,
                                                 unsigned long long flags)
    FAKE_API(cuMemPoolExportToShareableHandle, export_pool(handle_out, pool, handleType, flags))

static CUresult import_pool(CUmemoryPool *out, void *handle, int type, unsigned long long flags) {
    if (!out || flags != 0 || type != HANDLE_TYPE_POSIX_FD) return CUDA_ERROR_INVALID_VALUE;
    unsigned char content[16];
    if (pread((int)(intptr_t)handle, content, sizeof content, 0) != (ssize_t)sizeof content ||
        memcmp(content, POOL_MAGIC, 8) != 0) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    void *value;
    memcpy(&value, content + 8, sizeof value);
    struct fake_object *exporter = fake_lookup_quiet(value, KIND_MEMORY_POOL);
    if (!exporter) return CUDA_ERROR_INVALID_VALUE;
    struct fake_object *pool = fake_new(KIND_MEMORY_POOL, NULL);
    if (!pool) return CUDA_ERROR_OUT_OF_MEMORY;
    pool->u.pool.device = exporter->u.pool.device;
    pool->u.pool.handle_types = exporter->u.pool.handle_types;
    pool->u.pool.imported_from = exporter;
    /* the importer's device has no access until cuMemPoolSetAccess grants it */
    *out = fake_handle(pool);
    return CUDA_SUCCESS;
}
EXPORT CUresult cuMemPoolImportFromShareableHandle(CUmemoryPool *pool_out, void *handle, int handleType,
                                                   unsigned long long flags)
    FAKE_API(cuMemPoolImportFromShareableHandle, import_pool(pool_out, handle, handleType, flags))

static CUresult export_pointer(pointer_export *out, CUdeviceptr address) {
    int was_freed;
    struct fake_object *memory = fake_memory_at_base(address, KIND_DEVICE_MEMORY, &was_freed);
    if (!out || !memory) return CUDA_ERROR_INVALID_VALUE;
    struct fake_object *pool = memory->u.mem.pool;
    if (!pool || pool->kind != KIND_MEMORY_POOL || !(pool->u.pool.handle_types & HANDLE_TYPE_POSIX_FD)) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    memset(out, 0, sizeof *out);
    memcpy(out->reserved, POINTER_MAGIC, sizeof POINTER_MAGIC);
    memcpy(out->reserved + 8, &address, sizeof address);
    return CUDA_SUCCESS;
}
EXPORT CUresult cuMemPoolExportPointer(pointer_export *shareData_out, CUdeviceptr ptr)
    FAKE_API(cuMemPoolExportPointer, export_pointer(shareData_out, ptr))

static CUresult import_pointer(CUdeviceptr *out, CUmemoryPool handle, pointer_export *data) {
    struct fake_object *context;
    CUresult result = fake_current_context(&context);
    if (result != CUDA_SUCCESS) return result;
    struct fake_object *pool = fake_lookup(handle, KIND_MEMORY_POOL);
    if (!out || !data || !pool || !pool->u.pool.imported_from) return CUDA_ERROR_INVALID_VALUE;
    if (memcmp(data->reserved, POINTER_MAGIC, sizeof POINTER_MAGIC) != 0) return CUDA_ERROR_INVALID_VALUE;
    CUdeviceptr address;
    memcpy(&address, data->reserved + 8, sizeof address);
    int was_freed;
    struct fake_object *memory = fake_memory_at_base(address, KIND_DEVICE_MEMORY, &was_freed);
    if (!memory || memory->u.mem.pool != pool->u.pool.imported_from) return CUDA_ERROR_INVALID_VALUE;
    if (memory->context == context) return CUDA_ERROR_INVALID_CONTEXT; /* the exporting "process" */
    struct fake_object *mapping = fake_new(KIND_IPC_MAPPING, context);
    if (!mapping) return CUDA_ERROR_OUT_OF_MEMORY;
    mapping->u.ipc.address = address;
    mapping->u.ipc.allocation = memory;
    mapping->u.ipc.pool = pool;
    *out = address;
    return CUDA_SUCCESS;
}
EXPORT CUresult cuMemPoolImportPointer(CUdeviceptr *ptr_out, CUmemoryPool pool, pointer_export *shareData)
    FAKE_API(cuMemPoolImportPointer, import_pointer(ptr_out, pool, shareData))

static CUresult set_access(CUmemoryPool handle, const struct access_desc *map, size_t count) {
    struct fake_object *pool = fake_lookup_pool(handle);
    if (!pool || (!map && count)) return CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; i < count; i++) {
        const struct access_desc *desc = &map[i];
        if (desc->location.type != LOCATION_DEVICE || desc->location.id < 0 || desc->location.id >= FAKE_DEVICES ||
            desc->flags < 0 || desc->flags > ACCESS_READWRITE || desc->flags == 2) {
            return CUDA_ERROR_INVALID_VALUE;
        }
    }
    for (size_t i = 0; i < count; i++) pool->u.pool.access[map[i].location.id] = map[i].flags;
    return CUDA_SUCCESS;
}
EXPORT CUresult cuMemPoolSetAccess(CUmemoryPool pool, const void *map, size_t count)
    FAKE_API(cuMemPoolSetAccess, set_access(pool, map, count))

static CUresult get_access(int *flags, CUmemoryPool handle, struct location *location) {
    struct fake_object *pool = fake_lookup_pool(handle);
    if (!flags || !pool || !location || location->type != LOCATION_DEVICE || location->id < 0 ||
        location->id >= FAKE_DEVICES) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    /* the default pools' own device: read-write (created pools record it at creation) */
    int own = pool->kind == KIND_DEFAULT_POOL && location->id == pool->u.pool.device;
    *flags = own ? ACCESS_READWRITE : pool->u.pool.access[location->id];
    return CUDA_SUCCESS;
}
EXPORT CUresult cuMemPoolGetAccess(int *flags, CUmemoryPool memPool, struct location *location)
    FAKE_API(cuMemPoolGetAccess, get_access(flags, memPool, location))

void fake_check_pool_destroy(const struct fake_object *pool) {
    if (pool->u.pool.imported_from && live_imports(NULL, pool)) order_violations++;
}
