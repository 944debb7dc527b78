/*
 * fakecuda (test double): device memory (host-backed, at fake device
 * addresses that are never reused, so a stale pointer is recognised), pinned
 * host memory, copies, memsets, stream-ordered allocation and the default
 * memory pools. New device and pinned memory is filled with a pattern (0xA5,
 * 0x5A) so reading it before writing shows garbage, as on a GPU.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "driver.h"

#define HOST_ALLOC_FLAGS 0xfu   /* PORTABLE | DEVICEMAP | WRITECOMBINED | (13.0) NUMA */
#define HOST_REGISTER_FLAGS 0xfu /* PORTABLE | DEVICEMAP | IOMEMORY | READ_ONLY */

CUresult fake_allocate(struct fake_object *context, size_t bytes, struct fake_object *pool, CUdeviceptr *address) {
    if (!address || bytes == 0) return CUDA_ERROR_INVALID_VALUE;
    if (bytes > FAKE_BACKING_LIMIT) return CUDA_ERROR_OUT_OF_MEMORY;
    CUdeviceptr at = fake_reserve_address(bytes);
    unsigned char *backing;
    if (fake_emulation_enabled()) {
        /* emulated kernels dereference device pointers: the memory lives at its address */
        void *mapped = mmap((void *)(uintptr_t)at, bytes, PROT_READ | PROT_WRITE,
                            MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE | MAP_NORESERVE, -1, 0);
        if (mapped != MAP_FAILED && mapped != (void *)(uintptr_t)at) munmap(mapped, bytes);
        backing = mapped == (void *)(uintptr_t)at ? mapped : NULL;
    } else {
        backing = malloc(bytes);
    }
    if (!backing) return CUDA_ERROR_OUT_OF_MEMORY;
    struct fake_object *memory = fake_new(KIND_DEVICE_MEMORY, context);
    if (!memory) {
        if (fake_emulation_enabled()) {
            munmap(backing, bytes);
        } else {
            free(backing);
        }
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    memset(backing, 0xa5, bytes);
    memory->u.mem.bytes = backing;
    memory->u.mem.size = bytes;
    memory->u.mem.address = at;
    memory->u.mem.pool = pool;
    if (pool) {
        uint64_t used = fake_memory_used(0, pool);
        if (used > pool->u.pool.used_high) pool->u.pool.used_high = used;
        if (used > pool->u.pool.reserved_high) pool->u.pool.reserved_high = used;
    }
    *address = memory->u.mem.address;
    return CUDA_SUCCESS;
}

void fake_release_backing(struct fake_object *memory) {
    if (memory->kind == KIND_DEVICE_MEMORY && fake_emulation_enabled()) {
        if (memory->u.mem.bytes) munmap(memory->u.mem.bytes, memory->u.mem.size);
    } else {
        free(memory->u.mem.bytes);
    }
}

CUresult fake_free(CUdeviceptr address) {
    if (address == 0) return CUDA_ERROR_INVALID_VALUE;
    int was_freed;
    struct fake_object *memory = fake_memory_at_base(address, KIND_DEVICE_MEMORY, &was_freed);
    if (!memory) {
        /* managed memory is host memory the device addresses too (managed.c) */
        int managed_was_freed;
        struct fake_object *managed = fake_memory_at_base(address, KIND_HOST_MEMORY, &managed_was_freed);
        if (managed && managed->u.host.managed) return fake_destroy(managed);
        if (managed_was_freed) was_freed = 1;
        if (was_freed) {
            fake_record_double_free();
        } else {
            fake_record_invalid();
        }
        return CUDA_ERROR_INVALID_VALUE;
    }
    fake_check_pool_free(memory); /* importers free first (pool_ipc.c) */
    return fake_destroy(memory);
}

static CUresult mem_alloc(CUdeviceptr *address, size_t bytes) {
    struct fake_object *context;
    CUresult result = fake_current_context(&context);
    if (result != CUDA_SUCCESS) return result;
    if (fake_capture_forbids()) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    return fake_allocate(context, bytes, NULL, address);
}
EXPORT CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize) FAKE_API(cuMemAlloc_v2, mem_alloc(dptr, bytesize))
/* cuMemFree waits for the device's work first, as the driver does. An address imported into
 * an imported pool is that import, freed (pool_ipc.c). */
static CUresult mem_free(CUdeviceptr address) {
    if (fake_capture_forbids()) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    fake_flush_all();
    struct fake_object *import = fake_pool_import_at(address);
    return import ? fake_destroy(import) : fake_free(address);
}
EXPORT CUresult cuMemFree_v2(CUdeviceptr dptr) FAKE_API(cuMemFree_v2, mem_free(dptr))

static CUresult mem_info(size_t *free_bytes, size_t *total_bytes) {
    struct fake_object *context;
    CUresult result = fake_current_context(&context);
    if (result != CUDA_SUCCESS) return result;
    if (!free_bytes || !total_bytes) return CUDA_ERROR_INVALID_VALUE;
    *total_bytes = FAKE_TOTAL_MEMORY;
    *free_bytes = FAKE_TOTAL_MEMORY - fake_memory_used(context->u.ctx.device, NULL);
    return CUDA_SUCCESS;
}
EXPORT CUresult cuMemGetInfo_v2(size_t *free, size_t *total) FAKE_API(cuMemGetInfo_v2, mem_info(free, total))

/* ---- pinned host memory -------------------------------------------------------- */

static CUresult host_alloc(void **pointer, size_t bytes, unsigned int flags) {
    struct fake_object *context;
    CUresult result = fake_current_context(&context);
    if (result != CUDA_SUCCESS) return result;
    if (!pointer || bytes == 0 || (flags & ~HOST_ALLOC_FLAGS)) return CUDA_ERROR_INVALID_VALUE;
    if (fake_capture_forbids()) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    if (bytes > FAKE_BACKING_LIMIT) return CUDA_ERROR_OUT_OF_MEMORY;
    void *backing;
    if (posix_memalign(&backing, 4096, bytes) != 0) return CUDA_ERROR_OUT_OF_MEMORY;
    struct fake_object *host = fake_new(KIND_HOST_MEMORY, context);
    if (!host) {
        free(backing);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    memset(backing, 0x5a, bytes);
    host->u.host.pointer = backing;
    host->u.host.size = bytes;
    host->u.host.flags = flags;
    *pointer = backing;
    return CUDA_SUCCESS;
}
EXPORT CUresult cuMemAllocHost_v2(void **pp, size_t bytesize) FAKE_API(cuMemAllocHost_v2, host_alloc(pp, bytesize, 0))
EXPORT CUresult cuMemHostAlloc(void **pp, size_t bytesize, unsigned int Flags)
    FAKE_API(cuMemHostAlloc, host_alloc(pp, bytesize, Flags))

static CUresult host_free(void *pointer, int registered) {
    if (!pointer) return CUDA_ERROR_INVALID_VALUE;
    if (fake_capture_forbids()) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    fake_flush_all(); /* freeing pinned memory waits for the work that may use it */
    int was_freed;
    struct fake_object *host = fake_memory_at_base((CUdeviceptr)(uintptr_t)pointer, KIND_HOST_MEMORY, &was_freed);
    if (!host || host->u.host.registered != registered || host->u.host.managed) {
        if (was_freed) {
            fake_record_double_free();
        } else {
            fake_record_invalid();
        }
        return registered ? 713 /* HOST_MEMORY_NOT_REGISTERED */ : CUDA_ERROR_INVALID_VALUE;
    }
    return fake_destroy(host);
}
EXPORT CUresult cuMemFreeHost(void *p) FAKE_API(cuMemFreeHost, host_free(p, 0))

static CUresult host_register(void *pointer, size_t bytes, unsigned int flags) {
    struct fake_object *context;
    CUresult result = fake_current_context(&context);
    if (result != CUDA_SUCCESS) return result;
    if (!pointer || bytes == 0 || (flags & ~HOST_REGISTER_FLAGS)) return CUDA_ERROR_INVALID_VALUE;
    if (fake_memory_containing((CUdeviceptr)(uintptr_t)pointer, 1)) return 712; /* HOST_MEMORY_ALREADY_REGISTERED */
    struct fake_object *host = fake_new(KIND_HOST_MEMORY, context);
    if (!host) return CUDA_ERROR_OUT_OF_MEMORY;
    host->u.host.pointer = pointer;
    host->u.host.size = bytes;
    host->u.host.flags = flags;
    host->u.host.registered = 1;
    return CUDA_SUCCESS;
}
EXPORT CUresult cuMemHostRegister_v2(void *p, size_t bytesize, unsigned int Flags)
    FAKE_API(cuMemHostRegister_v2, host_register(p, bytesize, Flags))
EXPORT CUresult cuMemHostUnregister(void *p) FAKE_API(cuMemHostUnregister, host_free(p, 1))

static CUresult host_device_pointer(CUdeviceptr *address, void *pointer, unsigned int flags) {
    if (!address || flags != 0) return CUDA_ERROR_INVALID_VALUE;
    struct fake_object *host = fake_memory_containing((CUdeviceptr)(uintptr_t)pointer, 0);
    if (!host || host->kind != KIND_HOST_MEMORY) return CUDA_ERROR_INVALID_VALUE;
    *address = (CUdeviceptr)(uintptr_t)pointer; /* unified addressing: the same address */
    return CUDA_SUCCESS;
}
EXPORT CUresult cuMemHostGetDevicePointer_v2(CUdeviceptr *pdptr, void *p, unsigned int Flags)
    FAKE_API(cuMemHostGetDevicePointer_v2, host_device_pointer(pdptr, p, Flags))

/* ---- copies and memsets --------------------------------------------------------- */

static CUresult copy(CUdeviceptr dst, int dst_space, CUdeviceptr src, int src_space, size_t bytes, CUstream handle,
                     int synchronous) {
    struct fake_object *context, *stream = NULL;
    CUresult result = synchronous ? fake_current_context(&context) : fake_resolve_stream(handle, &context, &stream);
    if (result != CUDA_SUCCESS) return result;
    if (synchronous && fake_capture_forbids()) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    struct fake_node node = {.kind = NODE_COPY};
    node.u.copy.dst = dst;
    node.u.copy.src = src;
    node.u.copy.dst_space = dst_space;
    node.u.copy.src_space = src_space;
    node.u.copy.bytes = bytes;
    return synchronous ? fake_submit_synchronous(context, &node) : fake_submit(context, stream, &node);
}

#define HOST(p) ((CUdeviceptr)(uintptr_t)(p))

EXPORT CUresult cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount)
    FAKE_API(cuMemcpy, copy(dst, SPACE_UNIFIED, src, SPACE_UNIFIED, ByteCount, NULL, 1))
EXPORT CUresult cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount, CUstream hStream)
    FAKE_API(cuMemcpyAsync, copy(dst, SPACE_UNIFIED, src, SPACE_UNIFIED, ByteCount, hStream, 0))
EXPORT CUresult cuMemcpyHtoD_v2(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount)
    FAKE_API(cuMemcpyHtoD_v2, copy(dstDevice, SPACE_DEVICE, HOST(srcHost), SPACE_HOST, ByteCount, NULL, 1))
EXPORT CUresult cuMemcpyDtoH_v2(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount)
    FAKE_API(cuMemcpyDtoH_v2, copy(HOST(dstHost), SPACE_HOST, srcDevice, SPACE_DEVICE, ByteCount, NULL, 1))
EXPORT CUresult cuMemcpyDtoD_v2(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount)
    FAKE_API(cuMemcpyDtoD_v2, copy(dstDevice, SPACE_DEVICE, srcDevice, SPACE_DEVICE, ByteCount, NULL, 1))
EXPORT CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount, CUstream hStream)
    FAKE_API(cuMemcpyHtoDAsync_v2, copy(dstDevice, SPACE_DEVICE, HOST(srcHost), SPACE_HOST, ByteCount, hStream, 0))
EXPORT CUresult cuMemcpyDtoHAsync_v2(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount, CUstream hStream)
    FAKE_API(cuMemcpyDtoHAsync_v2, copy(HOST(dstHost), SPACE_HOST, srcDevice, SPACE_DEVICE, ByteCount, hStream, 0))
EXPORT CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount, CUstream hStream)
    FAKE_API(cuMemcpyDtoDAsync_v2, copy(dstDevice, SPACE_DEVICE, srcDevice, SPACE_DEVICE, ByteCount, hStream, 0))

static CUresult copy_peer(CUdeviceptr dst, CUcontext dst_context, CUdeviceptr src, CUcontext src_context,
                          size_t bytes, CUstream handle, int synchronous) {
    if (!fake_lookup_context(dst_context) || !fake_lookup_context(src_context)) return CUDA_ERROR_INVALID_CONTEXT;
    return copy(dst, SPACE_DEVICE, src, SPACE_DEVICE, bytes, handle, synchronous);
}
EXPORT CUresult cuMemcpyPeer(CUdeviceptr dstDevice, CUcontext dstContext, CUdeviceptr srcDevice,
                             CUcontext srcContext, size_t ByteCount)
    FAKE_API(cuMemcpyPeer, copy_peer(dstDevice, dstContext, srcDevice, srcContext, ByteCount, NULL, 1))
EXPORT CUresult cuMemcpyPeerAsync(CUdeviceptr dstDevice, CUcontext dstContext, CUdeviceptr srcDevice,
                                  CUcontext srcContext, size_t ByteCount, CUstream hStream)
    FAKE_API(cuMemcpyPeerAsync, copy_peer(dstDevice, dstContext, srcDevice, srcContext, ByteCount, hStream, 0))

static CUresult memset_elements(CUdeviceptr dst, unsigned int value, size_t element_size, size_t count,
                                CUstream handle, int synchronous) {
    struct fake_object *context, *stream = NULL;
    CUresult result = synchronous ? fake_current_context(&context) : fake_resolve_stream(handle, &context, &stream);
    if (result != CUDA_SUCCESS) return result;
    if (dst % element_size != 0) return CUDA_ERROR_INVALID_VALUE;
    if (synchronous && fake_capture_forbids()) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    struct fake_node node = {.kind = NODE_MEMSET};
    node.u.memset.dst = dst;
    node.u.memset.value = value;
    node.u.memset.element_size = element_size;
    node.u.memset.count = count;
    return synchronous ? fake_submit_synchronous(context, &node) : fake_submit(context, stream, &node);
}
EXPORT CUresult cuMemsetD8_v2(CUdeviceptr dstDevice, unsigned char uc, size_t N)
    FAKE_API(cuMemsetD8_v2, memset_elements(dstDevice, uc, 1, N, NULL, 1))
EXPORT CUresult cuMemsetD16_v2(CUdeviceptr dstDevice, unsigned short us, size_t N)
    FAKE_API(cuMemsetD16_v2, memset_elements(dstDevice, us, 2, N, NULL, 1))
EXPORT CUresult cuMemsetD32_v2(CUdeviceptr dstDevice, unsigned int ui, size_t N)
    FAKE_API(cuMemsetD32_v2, memset_elements(dstDevice, ui, 4, N, NULL, 1))
EXPORT CUresult cuMemsetD8Async(CUdeviceptr dstDevice, unsigned char uc, size_t N, CUstream hStream)
    FAKE_API(cuMemsetD8Async, memset_elements(dstDevice, uc, 1, N, hStream, 0))
EXPORT CUresult cuMemsetD16Async(CUdeviceptr dstDevice, unsigned short us, size_t N, CUstream hStream)
    FAKE_API(cuMemsetD16Async, memset_elements(dstDevice, us, 2, N, hStream, 0))
EXPORT CUresult cuMemsetD32Async(CUdeviceptr dstDevice, unsigned int ui, size_t N, CUstream hStream)
    FAKE_API(cuMemsetD32Async, memset_elements(dstDevice, ui, 4, N, hStream, 0))

/* ---- stream-ordered allocation and pools ------------------------------------------ */

struct fake_object *fake_lookup_pool(CUmemoryPool handle) {
    struct fake_object *pool = fake_lookup_quiet(handle, KIND_MEMORY_POOL);
    return pool ? pool : fake_lookup(handle, KIND_DEFAULT_POOL);
}

static CUresult alloc_async(CUdeviceptr *address, size_t bytes, CUmemoryPool pool_handle, CUstream handle) {
    struct fake_object *context, *stream;
    CUresult result = fake_resolve_stream(handle, &context, &stream);
    if (result != CUDA_SUCCESS) return result;
    struct fake_object *pool = pool_handle ? fake_lookup_pool(pool_handle) : fake_pool(context->u.ctx.device);
    if (!pool) return pool_handle ? CUDA_ERROR_INVALID_VALUE : CUDA_ERROR_OUT_OF_MEMORY;
    if (pool->u.pool.device != context->u.ctx.device) return CUDA_ERROR_INVALID_VALUE;
    if (pool->u.pool.imported_from) return CUDA_ERROR_INVALID_VALUE; /* imported pools hand out nothing */
    if (fake_refuse_in_capture(stream)) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    return fake_allocate(context, bytes, pool, address);
}
EXPORT CUresult cuMemAllocAsync(CUdeviceptr *dptr, size_t bytesize, CUstream hStream)
    FAKE_API(cuMemAllocAsync, alloc_async(dptr, bytesize, NULL, hStream))
EXPORT CUresult cuMemAllocFromPoolAsync(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool, CUstream hStream)
    FAKE_API(cuMemAllocFromPoolAsync, alloc_async(dptr, bytesize, pool, hStream))

static CUresult free_async(CUdeviceptr address, CUstream handle) {
    struct fake_object *context, *stream;
    CUresult result = fake_resolve_stream(handle, &context, &stream);
    if (result != CUDA_SUCCESS) return result;
    if (fake_refuse_in_capture(stream)) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    int was_freed;
    if (!fake_memory_at_base(address, KIND_DEVICE_MEMORY, &was_freed)) return fake_free(address); /* the error */
    struct fake_node node = {.kind = NODE_FREE};
    node.u.free_address = address;
    return fake_submit(context, stream, &node); /* freed in stream order */
}
EXPORT CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream hStream) FAKE_API(cuMemFreeAsync, free_async(dptr, hStream))

static CUresult default_pool(CUmemoryPool *out, CUdevice device) {
    if (!out) return CUDA_ERROR_INVALID_VALUE;
    if (device < 0 || device >= FAKE_DEVICES) return CUDA_ERROR_INVALID_DEVICE;
    struct fake_object *pool = fake_pool(device);
    if (!pool) return CUDA_ERROR_OUT_OF_MEMORY;
    *out = fake_handle(pool);
    return CUDA_SUCCESS;
}
EXPORT CUresult cuDeviceGetDefaultMemPool(CUmemoryPool *pool_out, CUdevice dev)
    FAKE_API(cuDeviceGetDefaultMemPool, default_pool(pool_out, dev))
EXPORT CUresult cuDeviceGetMemPool(CUmemoryPool *pool, CUdevice dev) FAKE_API(cuDeviceGetMemPool, default_pool(pool, dev))

enum {
    POOL_REUSE_FOLLOW_EVENT_DEPENDENCIES = 1,
    POOL_REUSE_ALLOW_OPPORTUNISTIC,
    POOL_REUSE_ALLOW_INTERNAL_DEPENDENCIES,
    POOL_RELEASE_THRESHOLD,
    POOL_RESERVED_MEM_CURRENT,
    POOL_RESERVED_MEM_HIGH,
    POOL_USED_MEM_CURRENT,
    POOL_USED_MEM_HIGH,
};

static CUresult pool_attribute(CUmemoryPool handle, int attribute, void *value, int set) {
    struct fake_object *pool = fake_lookup_pool(handle);
    if (!pool || !value) return CUDA_ERROR_INVALID_VALUE;
    uint64_t used = fake_memory_used(0, pool);
    switch (attribute) {
    case POOL_REUSE_FOLLOW_EVENT_DEPENDENCIES:
    case POOL_REUSE_ALLOW_OPPORTUNISTIC:
    case POOL_REUSE_ALLOW_INTERNAL_DEPENDENCIES:
        if (set) {
            pool->u.pool.reuse[attribute - 1] = *(int *)value != 0;
        } else {
            *(int *)value = pool->u.pool.reuse[attribute - 1];
        }
        return CUDA_SUCCESS;
    case POOL_RELEASE_THRESHOLD:
        if (set) {
            pool->u.pool.release_threshold = *(uint64_t *)value;
        } else {
            *(uint64_t *)value = pool->u.pool.release_threshold;
        }
        return CUDA_SUCCESS;
    case POOL_RESERVED_MEM_HIGH:
    case POOL_USED_MEM_HIGH: {
        uint64_t *high = attribute == POOL_USED_MEM_HIGH ? &pool->u.pool.used_high : &pool->u.pool.reserved_high;
        if (set) {
            if (*(uint64_t *)value != 0) return CUDA_ERROR_INVALID_VALUE;
            *high = used;
        } else {
            *(uint64_t *)value = *high;
        }
        return CUDA_SUCCESS;
    }
    case POOL_RESERVED_MEM_CURRENT:
    case POOL_USED_MEM_CURRENT:
        if (set) return CUDA_ERROR_INVALID_VALUE;
        *(uint64_t *)value = used;
        return CUDA_SUCCESS;
    default:
        return CUDA_ERROR_INVALID_VALUE;
    }
}
EXPORT CUresult cuMemPoolGetAttribute(CUmemoryPool pool, int attr, void *value)
    FAKE_API(cuMemPoolGetAttribute, pool_attribute(pool, attr, value, 0))
EXPORT CUresult cuMemPoolSetAttribute(CUmemoryPool pool, int attr, void *value)
    FAKE_API(cuMemPoolSetAttribute, pool_attribute(pool, attr, value, 1))

static CUresult pool_trim(CUmemoryPool handle, size_t keep) {
    (void)keep;
    return fake_lookup_pool(handle) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}
EXPORT CUresult cuMemPoolTrimTo(CUmemoryPool pool, size_t minBytesToKeep)
    FAKE_API(cuMemPoolTrimTo, pool_trim(pool, minBytesToKeep))

struct pool_props {
    int alloc_type;   /* CU_MEM_ALLOCATION_TYPE_PINNED = 1 */
    int handle_types;
    int location_type; /* CU_MEM_LOCATION_TYPE_DEVICE = 1 */
    int location_id;
    void *win32_security_attributes;
    size_t max_size;
    unsigned short usage;
    unsigned char reserved[54];
};

static CUresult pool_create(CUmemoryPool *out, const struct pool_props *props) {
    if (!out || !props) return CUDA_ERROR_INVALID_VALUE;
    if (props->alloc_type != 1 || props->location_type != 1) return CUDA_ERROR_INVALID_VALUE;
    if (props->location_id < 0 || props->location_id >= FAKE_DEVICES) return CUDA_ERROR_INVALID_DEVICE;
    if (props->handle_types & ~1) return CUDA_ERROR_NOT_SUPPORTED; /* POSIX file descriptors only */
    if (props->handle_types && !fake_device_attribute(props->location_id, 119)) return CUDA_ERROR_NOT_SUPPORTED;
    struct fake_object *pool = fake_new(KIND_MEMORY_POOL, NULL);
    if (!pool) return CUDA_ERROR_OUT_OF_MEMORY;
    pool->u.pool.device = props->location_id;
    pool->u.pool.handle_types = props->handle_types;
    pool->u.pool.access[props->location_id] = 3; /* CU_MEM_ACCESS_FLAGS_PROT_READWRITE */
    *out = fake_handle(pool);
    return CUDA_SUCCESS;
}
EXPORT CUresult cuMemPoolCreate(CUmemoryPool *pool, const void *poolProps)
    FAKE_API(cuMemPoolCreate, pool_create(pool, poolProps))

/* Memory still allocated from the pool stays valid; the driver releases the
 * pool's resources once it is freed. */
static CUresult pool_destroy(CUmemoryPool handle) {
    struct fake_object *pool = fake_lookup_for_destroy(handle, KIND_MEMORY_POOL);
    if (pool) fake_check_pool_destroy(pool);
    return pool ? fake_destroy(pool) : CUDA_ERROR_INVALID_VALUE;
}
EXPORT CUresult cuMemPoolDestroy(CUmemoryPool pool) FAKE_API(cuMemPoolDestroy, pool_destroy(pool))

/* ---- pointer attributes -------------------------------------------------------------------- */

enum {
    POINTER_CONTEXT = 1,
    POINTER_MEMORY_TYPE = 2,
    POINTER_DEVICE_POINTER = 3,
    POINTER_HOST_POINTER = 4,
    POINTER_IS_MANAGED = 8,
    POINTER_DEVICE_ORDINAL = 9,
    POINTER_RANGE_START_ADDR = 11,
    POINTER_RANGE_SIZE = 12,
    POINTER_MAPPED = 13,
};

static CUresult pointer_attribute(void *data, int attribute, CUdeviceptr address) {
    if (!data) return CUDA_ERROR_INVALID_VALUE;
    /* pageable host memory (and anything else unknown) is not the driver's: invalid value */
    struct fake_object *memory = fake_memory_containing(address, 0);
    if (!memory) return CUDA_ERROR_INVALID_VALUE;
    int device_memory = memory->kind != KIND_HOST_MEMORY;
    CUdeviceptr base = device_memory ? memory->u.mem.address : (CUdeviceptr)(uintptr_t)memory->u.host.pointer;
    size_t size = device_memory ? memory->u.mem.size : memory->u.host.size;
    if (memory->kind == KIND_VA_RANGE) {
        base = memory->u.vmm.address;
        size = memory->u.vmm.size;
    }
    switch (attribute) {
    case POINTER_CONTEXT: *(CUcontext *)data = fake_handle(memory->context); break;
    case POINTER_MEMORY_TYPE: *(unsigned int *)data = device_memory ? 2 : 1; break;
    case POINTER_DEVICE_POINTER: *(CUdeviceptr *)data = address; break;
    case POINTER_HOST_POINTER:
        if (device_memory) return CUDA_ERROR_INVALID_VALUE;
        *(void **)data = (void *)(uintptr_t)address;
        break;
    case POINTER_IS_MANAGED: *(int *)data = !device_memory && memory->u.host.managed; break;
    case POINTER_DEVICE_ORDINAL: *(int *)data = memory->context ? memory->context->u.ctx.device : 0; break;
    case POINTER_RANGE_START_ADDR: *(CUdeviceptr *)data = base; break;
    case POINTER_RANGE_SIZE: *(size_t *)data = size; break;
    case POINTER_MAPPED: *(int *)data = 1; break;
    default: return CUDA_ERROR_INVALID_VALUE;
    }
    return CUDA_SUCCESS;
}
EXPORT CUresult cuPointerGetAttribute(void *data, int attribute, CUdeviceptr ptr)
    FAKE_API(cuPointerGetAttribute, pointer_attribute(data, attribute, ptr))
