/*
 * fakecuda (test double): inter-process memory handles, within one process.
 * A handle names a cuMemAlloc allocation (not pool memory); it may be opened
 * in a context other than the allocation's, standing in for another process
 * (opening it in its own context is refused, as the driver refuses opening a
 * handle in the process that made it). The opened memory is the allocation
 * itself at its own address; each opening is a handle (KIND_IPC_MAPPING)
 * closed with cuIpcCloseMemHandle. Event handles are not modelled.
 */
#include <string.h>

#include "driver.h"

#define IPC_MAGIC "fakeipc"
#define IPC_LAZY_ENABLE_PEER_ACCESS 1u

/* CUipcMemHandle of cuda.h: 64 opaque bytes, here the magic and the allocation's address. */
typedef struct {
    char reserved[64];
} ipc_handle;

static CUresult get_handle(ipc_handle *handle, CUdeviceptr address) {
    if (!handle) return CUDA_ERROR_INVALID_VALUE;
    int was_freed;
    struct fake_object *memory = fake_memory_at_base(address, KIND_DEVICE_MEMORY, &was_freed);
    if (!memory) {
        fake_record_invalid();
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (memory->u.mem.pool) return CUDA_ERROR_INVALID_VALUE; /* pool memory is exported through the pool */
    memset(handle, 0, sizeof *handle);
    memcpy(handle->reserved, IPC_MAGIC, sizeof IPC_MAGIC);
    memcpy(handle->reserved + 8, &address, sizeof address);
    return CUDA_SUCCESS;
}
EXPORT CUresult cuIpcGetMemHandle(ipc_handle *pHandle, CUdeviceptr dptr)
    FAKE_API(cuIpcGetMemHandle, get_handle(pHandle, dptr))

static CUresult open_handle(CUdeviceptr *out, ipc_handle handle, unsigned int flags) {
    struct fake_object *context;
    CUresult result = fake_current_context(&context);
    if (result != CUDA_SUCCESS) return result;
    if (!out || (flags & ~IPC_LAZY_ENABLE_PEER_ACCESS)) return CUDA_ERROR_INVALID_VALUE;
    if (memcmp(handle.reserved, IPC_MAGIC, sizeof IPC_MAGIC) != 0) return CUDA_ERROR_INVALID_VALUE;
    CUdeviceptr address;
    memcpy(&address, handle.reserved + 8, sizeof address);
    int was_freed;
    struct fake_object *memory = fake_memory_at_base(address, KIND_DEVICE_MEMORY, &was_freed);
    if (!memory) return CUDA_ERROR_INVALID_VALUE;
    if (memory->context == context) return CUDA_ERROR_INVALID_CONTEXT; /* the exporting "process" */
    struct fake_object *mapping = fake_new(KIND_IPC_MAPPING, context);
    if (!mapping) return CUDA_ERROR_OUT_OF_MEMORY;
    mapping->u.ipc.address = address;
    mapping->u.ipc.allocation = memory;
    *out = address;
    return CUDA_SUCCESS;
}
EXPORT CUresult cuIpcOpenMemHandle_v2(CUdeviceptr *pdptr, ipc_handle handle, unsigned int Flags)
    FAKE_API(cuIpcOpenMemHandle_v2, open_handle(pdptr, handle, Flags))

static CUresult close_handle(CUdeviceptr address) {
    struct fake_object *context;
    CUresult result = fake_current_context(&context);
    if (result != CUDA_SUCCESS) return result;
    if (fake_capture_forbids()) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    for (size_t i = 0; i < fake_present_count(); i++) {
        struct fake_object *mapping = fake_present_at(i);
        if (mapping->live && mapping->kind == KIND_IPC_MAPPING && mapping->context == context &&
            mapping->u.ipc.address == address) {
            fake_flush_all(); /* work that may use it runs first */
            return fake_destroy(mapping);
        }
    }
    fake_record_invalid();
    return CUDA_ERROR_INVALID_VALUE;
}
EXPORT CUresult cuIpcCloseMemHandle(CUdeviceptr dptr) FAKE_API(cuIpcCloseMemHandle, close_handle(dptr))

static CUresult address_range(CUdeviceptr *base, size_t *size, CUdeviceptr address) {
    struct fake_object *memory = fake_memory_containing(address, 0);
    if (!memory || memory->kind != KIND_DEVICE_MEMORY) return CUDA_ERROR_NOT_FOUND;
    if (base) *base = memory->u.mem.address;
    if (size) *size = memory->u.mem.size;
    return CUDA_SUCCESS;
}
EXPORT CUresult cuMemGetAddressRange_v2(CUdeviceptr *pbase, size_t *psize, CUdeviceptr dptr)
    FAKE_API(cuMemGetAddressRange_v2, address_range(pbase, psize, dptr))
