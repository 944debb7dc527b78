/*
 * fakecuda (test double): pitched allocation (cuMemAllocPitch) and 2-D and
 * 3-D copies between host, device and unified addresses. A copy is checked
 * whole (every device row inside one live allocation) before any of it is
 * submitted, then runs as one copy per row, in stream order. A CUDA array
 * (arrays.c) is packed host memory to a copy, bounds-checked by its extent;
 * only whole-level copies (LOD 0) are modelled.
 */
#include "driver.h"

#define PITCH_ALIGNMENT 512

enum { MEMORYTYPE_HOST = 1, MEMORYTYPE_DEVICE = 2, MEMORYTYPE_ARRAY = 3, MEMORYTYPE_UNIFIED = 4 };

/* CUDA_MEMCPY2D and CUDA_MEMCPY3D of cuda.h. */
struct memcpy2d {
    size_t srcXInBytes, srcY;
    int srcMemoryType;
    const void *srcHost;
    CUdeviceptr srcDevice;
    void *srcArray;
    size_t srcPitch;
    size_t dstXInBytes, dstY;
    int dstMemoryType;
    void *dstHost;
    CUdeviceptr dstDevice;
    void *dstArray;
    size_t dstPitch;
    size_t WidthInBytes, Height;
};

struct memcpy3d {
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
};

static CUresult alloc_pitch(CUdeviceptr *address, size_t *pitch, size_t width, size_t height, unsigned int element) {
    struct fake_object *context;
    CUresult result = fake_current_context(&context);
    if (result != CUDA_SUCCESS) return result;
    if (!address || !pitch || width == 0 || height == 0) return CUDA_ERROR_INVALID_VALUE;
    if (element != 4 && element != 8 && element != 16) return CUDA_ERROR_INVALID_VALUE;
    if (fake_capture_forbids()) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    if (width > SIZE_MAX - PITCH_ALIGNMENT) return CUDA_ERROR_INVALID_VALUE;
    size_t padded = (width + PITCH_ALIGNMENT - 1) / PITCH_ALIGNMENT * PITCH_ALIGNMENT;
    if (height > SIZE_MAX / padded) return CUDA_ERROR_OUT_OF_MEMORY;
    result = fake_allocate(context, padded * height, NULL, address);
    if (result == CUDA_SUCCESS) *pitch = padded;
    return result;
}
EXPORT CUresult cuMemAllocPitch_v2(CUdeviceptr *dptr, size_t *pPitch, size_t WidthInBytes, size_t Height,
                                   unsigned int ElementSizeBytes)
    FAKE_API(cuMemAllocPitch_v2, alloc_pitch(dptr, pPitch, WidthInBytes, Height, ElementSizeBytes))

/* The copy space of a memory type (arrays are host memory to a copy), or -1 with the error in *result. */
static int space_of(int memory_type, CUresult *result) {
    switch (memory_type) {
    case MEMORYTYPE_HOST:
    case MEMORYTYPE_ARRAY: return SPACE_HOST;
    case MEMORYTYPE_DEVICE: return SPACE_DEVICE;
    case MEMORYTYPE_UNIFIED: return SPACE_UNIFIED;
    default: *result = CUDA_ERROR_INVALID_VALUE; return -1;
    }
}

/* One side of a copy from or to an array: its base, pitch and slice height, checked against the
 * block; the error, if any, in *result. */
static CUdeviceptr array_side(void *handle, size_t x, size_t y, size_t z, const struct memcpy3d *copy, size_t *pitch,
                              size_t *slice_rows, CUresult *result) {
    struct fake_object *array = fake_lookup_array(handle);
    if (!array) {
        *result = CUDA_ERROR_INVALID_HANDLE;
        return 0;
    }
    size_t rows = array->u.array.height ? array->u.array.height : 1;
    size_t slices = array->u.array.depth ? array->u.array.depth : 1;
    *pitch = array->u.array.width * array->u.array.element_bytes;
    *slice_rows = rows;
    if (x > *pitch || copy->WidthInBytes > *pitch - x || y > rows || copy->Height > rows - y || z > slices ||
        copy->Depth > slices - z) {
        *result = CUDA_ERROR_INVALID_VALUE;
        return 0;
    }
    return (CUdeviceptr)(uintptr_t)array->u.array.bytes;
}

/* The address of row (y, z) of one side: base + x + (z * slice_rows + y) * pitch, or 0 on overflow. */
static CUdeviceptr row_address(CUdeviceptr base, size_t x, size_t y, size_t z, size_t pitch, size_t slice_rows) {
    size_t row;
    if (__builtin_mul_overflow(z, slice_rows, &row) || __builtin_add_overflow(row, y, &row)) return 0;
    size_t offset;
    if (__builtin_mul_overflow(row, pitch, &offset) || __builtin_add_overflow(offset, x, &offset)) return 0;
    CUdeviceptr address;
    if (__builtin_add_overflow(base, (CUdeviceptr)offset, &address)) return 0;
    return address;
}

static CUresult copy_3d(const struct memcpy3d *copy, CUstream handle, int synchronous) {
    struct fake_object *context, *stream = NULL;
    CUresult result = synchronous ? fake_current_context(&context) : fake_resolve_stream(handle, &context, &stream);
    if (result != CUDA_SUCCESS) return result;
    if (!copy) return CUDA_ERROR_INVALID_VALUE;
    int src_space = space_of(copy->srcMemoryType, &result);
    int dst_space = space_of(copy->dstMemoryType, &result);
    if (src_space < 0 || dst_space < 0) return result;
    if (copy->srcLOD != 0 || copy->dstLOD != 0) return CUDA_ERROR_INVALID_VALUE;
    size_t width = copy->WidthInBytes, height = copy->Height, depth = copy->Depth;
    if (width == 0 || height == 0 || depth == 0) return CUDA_SUCCESS;
    if (synchronous && fake_capture_forbids()) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    CUdeviceptr src_base = src_space == SPACE_HOST ? (CUdeviceptr)(uintptr_t)copy->srcHost : copy->srcDevice;
    CUdeviceptr dst_base = dst_space == SPACE_HOST ? (CUdeviceptr)(uintptr_t)copy->dstHost : copy->dstDevice;
    size_t src_pitch = copy->srcPitch, src_rows = copy->srcHeight, dst_pitch = copy->dstPitch, dst_rows = copy->dstHeight;
    if (copy->srcMemoryType == MEMORYTYPE_ARRAY) {
        src_base = array_side(copy->srcArray, copy->srcXInBytes, copy->srcY, copy->srcZ, copy, &src_pitch, &src_rows,
                              &result);
        if (!src_base) return result;
    }
    if (copy->dstMemoryType == MEMORYTYPE_ARRAY) {
        dst_base = array_side(copy->dstArray, copy->dstXInBytes, copy->dstY, copy->dstZ, copy, &dst_pitch, &dst_rows,
                              &result);
        if (!dst_base) return result;
    }
    int rows = height > 1 || depth > 1;
    if (rows && (src_pitch < width || dst_pitch < width)) return CUDA_ERROR_INVALID_VALUE;
    if (depth > 1 && (src_rows < height || dst_rows < height)) return CUDA_ERROR_INVALID_VALUE;
    /* every row first: a copy that would leave its memory fails before it writes anything */
    for (size_t z = 0; z < depth; z++) {
        for (size_t y = 0; y < height; y++) {
            CUdeviceptr src = row_address(src_base, copy->srcXInBytes, copy->srcY + y, copy->srcZ + z, src_pitch, src_rows);
            CUdeviceptr dst = row_address(dst_base, copy->dstXInBytes, copy->dstY + y, copy->dstZ + z, dst_pitch, dst_rows);
            int bad = !src || !dst || (src_space == SPACE_DEVICE && !fake_device_bytes(src, width)) ||
                      (dst_space == SPACE_DEVICE && !fake_device_bytes(dst, width));
            if (bad) {
                fake_record_invalid();
                return CUDA_ERROR_INVALID_VALUE;
            }
        }
    }
    for (size_t z = 0; z < depth; z++) {
        for (size_t y = 0; y < height; y++) {
            struct fake_node node = {.kind = NODE_COPY};
            node.u.copy.src = row_address(src_base, copy->srcXInBytes, copy->srcY + y, copy->srcZ + z, src_pitch, src_rows);
            node.u.copy.dst = row_address(dst_base, copy->dstXInBytes, copy->dstY + y, copy->dstZ + z, dst_pitch, dst_rows);
            node.u.copy.src_space = src_space;
            node.u.copy.dst_space = dst_space;
            node.u.copy.bytes = width;
            result = synchronous ? fake_submit_synchronous(context, &node) : fake_submit(context, stream, &node);
            if (result != CUDA_SUCCESS) return result;
        }
    }
    return CUDA_SUCCESS;
}

static CUresult copy_2d(const struct memcpy2d *copy, CUstream handle, int synchronous) {
    if (!copy) return CUDA_ERROR_INVALID_VALUE;
    struct memcpy3d whole = {
        .srcXInBytes = copy->srcXInBytes,
        .srcY = copy->srcY,
        .srcMemoryType = copy->srcMemoryType,
        .srcHost = copy->srcHost,
        .srcDevice = copy->srcDevice,
        .srcArray = copy->srcArray,
        .srcPitch = copy->srcPitch,
        .srcHeight = copy->srcY + copy->Height,
        .dstXInBytes = copy->dstXInBytes,
        .dstY = copy->dstY,
        .dstMemoryType = copy->dstMemoryType,
        .dstHost = copy->dstHost,
        .dstDevice = copy->dstDevice,
        .dstArray = copy->dstArray,
        .dstPitch = copy->dstPitch,
        .dstHeight = copy->dstY + copy->Height,
        .WidthInBytes = copy->WidthInBytes,
        .Height = copy->Height,
        .Depth = 1,
    };
    return copy_3d(&whole, handle, synchronous);
}

EXPORT CUresult cuMemcpy2D_v2(const void *pCopy) FAKE_API(cuMemcpy2D_v2, copy_2d(pCopy, NULL, 1))
EXPORT CUresult cuMemcpy2DAsync_v2(const void *pCopy, CUstream hStream)
    FAKE_API(cuMemcpy2DAsync_v2, copy_2d(pCopy, hStream, 0))
EXPORT CUresult cuMemcpy3D_v2(const void *pCopy) FAKE_API(cuMemcpy3D_v2, copy_3d(pCopy, NULL, 1))
EXPORT CUresult cuMemcpy3DAsync_v2(const void *pCopy, CUstream hStream)
    FAKE_API(cuMemcpy3DAsync_v2, copy_3d(pCopy, hStream, 0))
