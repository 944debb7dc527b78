/*
 * fakecuda (test double): CUDA arrays (packed host memory of their extent,
 * copied to and from by pitch.c), and texture and surface objects over them.
 * Creating and destroying them is refused where a stream capture forbids it,
 * as for device memory. An array may be destroyed while objects of it remain (a driver that refused
 * to destroy one leaves it so); using such an object is a use after free.
 * Two host kernels (see kernels.c) sample
 * 2-D float textures, with point or linear filtering, clamped or zero
 * addressing and unnormalized or normalized coordinates, and scale a 2-D
 * float surface in place.
 */
#include <math.h>
#include <stdlib.h>

#include "driver.h"

#define ARRAY3D_SURFACE_LDST 0x02u
#define TRSF_READ_AS_INTEGER 0x01u
#define TRSF_NORMALIZED_COORDINATES 0x02u
#define FORMAT_FLOAT 32
#define RESOURCE_TYPE_ARRAY 0
enum { ADDRESS_WRAP, ADDRESS_CLAMP, ADDRESS_MIRROR, ADDRESS_BORDER };

/* CUDA_ARRAY3D_DESCRIPTOR, and the array case of CUDA_RESOURCE_DESC and the start of
 * CUDA_TEXTURE_DESC, of cuda.h. */
struct array_descriptor {
    size_t width, height, depth;
    int format;
    unsigned int channels, flags;
};

struct resource_desc {
    int type;
    void *array; /* the union's first member: hArray */
};

struct texture_desc {
    int address_mode[3];
    int filter_mode;
    unsigned int flags;
};

/* Bytes of one channel of `format`, or 0 for formats the stand-in does not model. */
static size_t format_bytes(int format) {
    switch (format) {
    case 1: case 8: return 1;  /* UNSIGNED_INT8, SIGNED_INT8 */
    case 2: case 9: case 16: return 2; /* UNSIGNED_INT16, SIGNED_INT16, HALF */
    case 3: case 10: case FORMAT_FLOAT: return 4; /* UNSIGNED_INT32, SIGNED_INT32, FLOAT */
    default: return 0;
    }
}

struct fake_object *fake_lookup_array(const void *handle) { return fake_lookup(handle, KIND_ARRAY); }

static CUresult array_create(void **out, const struct array_descriptor *desc) {
    struct fake_object *context;
    CUresult result = fake_current_context(&context);
    if (result != CUDA_SUCCESS) return result;
    if (!out || !desc || desc->width == 0 || (desc->height == 0 && desc->depth != 0)) return CUDA_ERROR_INVALID_VALUE;
    size_t channel = format_bytes(desc->format);
    if (channel == 0 || (desc->channels != 1 && desc->channels != 2 && desc->channels != 4)) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (desc->flags & ~ARRAY3D_SURFACE_LDST) return CUDA_ERROR_NOT_SUPPORTED;
    size_t element = channel * desc->channels, bytes = element;
    size_t extent[3] = {desc->width, desc->height ? desc->height : 1, desc->depth ? desc->depth : 1};
    for (int i = 0; i < 3; i++) {
        if (extent[i] > 65536 || __builtin_mul_overflow(bytes, extent[i], &bytes)) return CUDA_ERROR_INVALID_VALUE;
    }
    if (bytes > FAKE_BACKING_LIMIT) return CUDA_ERROR_OUT_OF_MEMORY;
    if (fake_capture_forbids()) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    unsigned char *backing = malloc(bytes);
    struct fake_object *array = backing ? fake_new(KIND_ARRAY, context) : NULL;
    if (!array) {
        free(backing);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    for (size_t i = 0; i < bytes; i++) backing[i] = 0xa5;
    array->u.array.width = desc->width;
    array->u.array.height = desc->height;
    array->u.array.depth = desc->depth;
    array->u.array.format = desc->format;
    array->u.array.channels = desc->channels;
    array->u.array.flags = desc->flags;
    array->u.array.element_bytes = element;
    array->u.array.bytes = backing;
    *out = fake_handle(array);
    return CUDA_SUCCESS;
}
EXPORT CUresult cuArray3DCreate_v2(CUarray *pHandle, const void *pAllocateArray)
    FAKE_API(cuArray3DCreate_v2, array_create((void **)pHandle, pAllocateArray))

static CUresult array_destroy(void *handle) {
    if (fake_capture_forbids()) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    struct fake_object *array = fake_lookup_for_destroy(handle, KIND_ARRAY);
    if (!array) return CUDA_ERROR_INVALID_HANDLE;
    fake_flush_all(); /* work that may use it runs first */
    return fake_destroy(array);
}
EXPORT CUresult cuArrayDestroy(CUarray hArray) FAKE_API(cuArrayDestroy, array_destroy(hArray))

static CUresult view_create(unsigned long long *out, const struct resource_desc *resource,
                            const struct texture_desc *texture, const void *view, int kind) {
    if (!out || !resource || (kind == KIND_TEXTURE && !texture)) return CUDA_ERROR_INVALID_VALUE;
    if (view) return CUDA_ERROR_NOT_SUPPORTED; /* resource views are not modelled */
    if (fake_capture_forbids()) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    if (resource->type != RESOURCE_TYPE_ARRAY) return CUDA_ERROR_NOT_SUPPORTED;
    struct fake_object *array = fake_lookup(resource->array, KIND_ARRAY);
    if (!array) return CUDA_ERROR_INVALID_HANDLE;
    if (kind == KIND_SURFACE && !(array->u.array.flags & ARRAY3D_SURFACE_LDST)) return CUDA_ERROR_INVALID_VALUE;
    if (texture) {
        for (int i = 0; i < 3; i++) {
            if (texture->address_mode[i] < ADDRESS_WRAP || texture->address_mode[i] > ADDRESS_BORDER) {
                return CUDA_ERROR_INVALID_VALUE;
            }
        }
        if (texture->filter_mode != 0 && texture->filter_mode != 1) return CUDA_ERROR_INVALID_VALUE;
        /* linear filtering returns floats: not of integers read as integers */
        int integer = array->u.array.format != FORMAT_FLOAT && array->u.array.format != 16;
        if (texture->filter_mode == 1 && integer && (texture->flags & TRSF_READ_AS_INTEGER)) {
            return CUDA_ERROR_NOT_SUPPORTED;
        }
    }
    struct fake_object *object = fake_new(kind, array->context);
    if (!object) return CUDA_ERROR_OUT_OF_MEMORY;
    object->u.view.array = array;
    if (texture) {
        object->u.view.filter = texture->filter_mode;
        object->u.view.address_mode = texture->address_mode[0];
        object->u.view.flags = texture->flags;
    }
    *out = (unsigned long long)(uintptr_t)fake_handle(object);
    return CUDA_SUCCESS;
}
EXPORT CUresult cuTexObjectCreate(unsigned long long *pTexObject, const void *pResDesc, const void *pTexDesc,
                                  const void *pResViewDesc)
    FAKE_API(cuTexObjectCreate, view_create(pTexObject, pResDesc, pTexDesc, pResViewDesc, KIND_TEXTURE))
EXPORT CUresult cuSurfObjectCreate(unsigned long long *pSurfObject, const void *pResDesc)
    FAKE_API(cuSurfObjectCreate, view_create(pSurfObject, pResDesc, NULL, NULL, KIND_SURFACE))

static CUresult view_destroy(unsigned long long handle, int kind) {
    if (fake_capture_forbids()) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    fake_flush_all(); /* launches that read it run first */
    struct fake_object *object = fake_lookup_for_destroy((void *)(uintptr_t)handle, kind);
    return object ? fake_destroy(object) : CUDA_ERROR_INVALID_HANDLE;
}
EXPORT CUresult cuTexObjectDestroy(unsigned long long texObject)
    FAKE_API(cuTexObjectDestroy, view_destroy(texObject, KIND_TEXTURE))
EXPORT CUresult cuSurfObjectDestroy(unsigned long long surfObject)
    FAKE_API(cuSurfObjectDestroy, view_destroy(surfObject, KIND_SURFACE))

/* ---- host kernels ------------------------------------------------------------------------------ */

#define ARG(launch, i, type) (*(const type *)(launch)->params[i])

/* The 2-D float array of a live object of `kind`, or NULL. */
static struct fake_object *float_image(unsigned long long handle, int kind, struct fake_object **object) {
    *object = fake_lookup((void *)(uintptr_t)handle, kind);
    if (!*object) return NULL;
    struct fake_object *array = (*object)->u.view.array;
    if (!array->live) {
        fake_record_invalid(); /* the object outlived its array */
        *object = NULL;
        return NULL;
    }
    int image = array->u.array.format == FORMAT_FLOAT && array->u.array.channels == 1 &&
                array->u.array.height != 0 && array->u.array.depth == 0;
    return image ? array : NULL;
}

/* Element (x, y) of `texture`'s array at integer coordinates, addressed by its mode (clamp or border). */
static float texel(const struct fake_object *texture, const struct fake_object *array, long x, long y) {
    long width = (long)array->u.array.width, height = (long)array->u.array.height;
    if (x < 0 || y < 0 || x >= width || y >= height) {
        if (texture->u.view.address_mode == ADDRESS_BORDER) return 0.0f;
        x = x < 0 ? 0 : x >= width ? width - 1 : x;
        y = y < 0 ? 0 : y >= height ? height - 1 : y;
    }
    return ((const float *)array->u.array.bytes)[y * width + x];
}

/* tex2D<float>(texture, u, v): point or linear filtering (weights of 8 fractional bits, as the hardware). */
static float sample_2d(const struct fake_object *texture, const struct fake_object *array, float u, float v) {
    if (texture->u.view.flags & TRSF_NORMALIZED_COORDINATES) {
        u *= (float)array->u.array.width;
        v *= (float)array->u.array.height;
    }
    if (texture->u.view.filter == 0) return texel(texture, array, (long)floorf(u), (long)floorf(v));
    float x = u - 0.5f, y = v - 0.5f;
    long x0 = (long)floorf(x), y0 = (long)floorf(y);
    float a = roundf((x - (float)x0) * 256.0f) / 256.0f, b = roundf((y - (float)y0) * 256.0f) / 256.0f;
    return (1 - a) * (1 - b) * texel(texture, array, x0, y0) + a * (1 - b) * texel(texture, array, x0 + 1, y0) +
           (1 - a) * b * texel(texture, array, x0, y0 + 1) + a * b * texel(texture, array, x0 + 1, y0 + 1);
}

CUresult fake_sample_kernel(const struct fake_launch *launch) {
    struct fake_object *texture;
    struct fake_object *array = float_image(ARG(launch, 0, unsigned long long), KIND_TEXTURE, &texture);
    if (!array) return texture ? CUDA_ERROR_NOT_SUPPORTED : CUDA_ERROR_ILLEGAL_ADDRESS;
    unsigned int width = ARG(launch, 2, unsigned int), height = ARG(launch, 3, unsigned int);
    float dx = ARG(launch, 4, float);
    size_t columns = (size_t)launch->grid[0] * launch->block[0], rows = (size_t)launch->grid[1] * launch->block[1];
    if (columns < width) width = (unsigned int)columns;
    if (rows < height) height = (unsigned int)rows;
    if (width == 0 || height == 0) return CUDA_SUCCESS;
    float *out = (float *)fake_device_bytes(ARG(launch, 1, CUdeviceptr), (size_t)width * height * sizeof(float));
    if (!out) return CUDA_ERROR_ILLEGAL_ADDRESS;
    for (unsigned int y = 0; y < height; y++) {
        for (unsigned int x = 0; x < width; x++) {
            out[(size_t)y * width + x] = sample_2d(texture, array, (float)x + 0.5f + dx, (float)y + 0.5f);
        }
    }
    return CUDA_SUCCESS;
}

CUresult fake_scale_surface_kernel(const struct fake_launch *launch) {
    struct fake_object *surface;
    struct fake_object *array = float_image(ARG(launch, 0, unsigned long long), KIND_SURFACE, &surface);
    if (!array) return surface ? CUDA_ERROR_NOT_SUPPORTED : CUDA_ERROR_ILLEGAL_ADDRESS;
    size_t width = ARG(launch, 1, unsigned int), height = ARG(launch, 2, unsigned int);
    float factor = ARG(launch, 3, float);
    size_t columns = (size_t)launch->grid[0] * launch->block[0], rows = (size_t)launch->grid[1] * launch->block[1];
    if (columns < width) width = columns;
    if (rows < height) height = rows;
    if (width > array->u.array.width || height > array->u.array.height) return CUDA_ERROR_ILLEGAL_ADDRESS;
    float *data = (float *)array->u.array.bytes;
    for (size_t y = 0; y < height; y++) {
        for (size_t x = 0; x < width; x++) data[y * array->u.array.width + x] *= factor;
    }
    return CUDA_SUCCESS;
}
