/*
 * fakecuda (test double): the "kernels". A module entry whose name and
 * parameter sizes match one of these runs this host function on launch, over
 * the fake's device memory. Every thread index that CUDA would compute as
 * `blockIdx.x * blockDim.x + threadIdx.x` is visited once. A device pointer
 * outside any live allocation makes the launch fail with
 * CUDA_ERROR_ILLEGAL_ADDRESS, as an out-of-bounds access would on a GPU.
 *
 *   vector_add(const float *a, const float *b, float *c, unsigned n)  c[i] = a[i] + b[i]
 *   fill(float *out, float value, unsigned n)                         out[i] = value
 *   saxpy(float a, const float *x, float *y, unsigned n)              y[i] = a * x[i] + y[i]
 *   affine(struct { float scale, offset; } f, float *data, unsigned n) data[i] = scale * data[i] + offset
 *   add_one(int *data, unsigned n)                                    data[i] += 1
 *   noop()                                                            nothing
 *   countdown(cudaGraphConditionalHandle handle, int *counter)        --*counter; the condition = *counter > 0
 *     (what a `while` node's body runs: one thread's work, whatever the grid)
 *   cuda_core_expr(float a, const float *x, const float *y, float *out, unsigned long long n)
 *                                                                     out[i] = a * x[i] + y[i]
 *     (and its pack-wise twin cuda_core_expr_vec: what cuda-core generates for the expression
 *     `a * &x + &y` of f32 arrays, over all n elements whatever the grid, as the generated
 *     grid-stride loops do)
 *   cuda_core_expr(const float *x, const float *y, const float *z, float *out, unsigned long long n)
 *                                                                     out[i] = x[i] * y[i] + z[i]
 *     (and cuda_core_expr_vec: `&x * &y + &z` of f32 arrays, the same way; the stand-in runs
 *     these two expressions only)
 *   cuda_core_matmul_tiled(const int *a, const int *b, int *c, long long m, n, k, count,
 *                          a_offset, a_batch, a_row, a_col, b_offset, b_batch, b_row, b_col,
 *                          c_offset, c_batch)
 *                                                                     c[i] = a[i] @ b[i], int32
 *     (cuda-core's generated tiled matmul, its int32 instance: `count` products of an m x k
 *     and a k x n matrix read through their strides, written compact, wrapping as the kernel does)
 *   cuda_core_gather(const float *x, const long long *index, float *out, unsigned long long *flags,
 *                    unsigned long long n, struct { unsigned long long extent, x, index, index_extent, index_x; } l)
 *                                                                     out[e] = x[e * l.x + j * l.index_x],
 *     j = index[e * l.index] counted from the end when negative; an index outside
 *     0..l.index_extent is counted in flags[0] and kept in flags[1] (what cuda-core generates for
 *     `take` of an f32 array by i64 indices with one loop and one index axis in mode Raise; other
 *     modes pass no flags and are not run here)
 *
 * and, over texture and surface objects of 2-D float arrays (arrays.c), with
 * x and y from a 2-D grid:
 *   sample(texture, float *out, unsigned w, unsigned h, float dx)   out[y*w+x] = tex2D(texture, x+0.5+dx, y+0.5)
 *   scale_surface(surface, unsigned w, unsigned h, float factor)    element (x, y) *= factor
 */
#include <string.h>

#include "fakecuda.h"

static size_t thread_count(const struct fake_launch *launch, unsigned int n) {
    size_t threads = (size_t)launch->grid[0] * launch->block[0];
    return threads < n ? threads : n;
}

#define ARG(launch, i, type) (*(const type *)(launch)->params[i])

static float *floats(CUdeviceptr address, size_t count) {
    return (float *)fake_device_bytes(address, count * sizeof(float));
}

static CUresult vector_add(const struct fake_launch *launch) {
    size_t n = thread_count(launch, ARG(launch, 3, unsigned int));
    if (n == 0) return CUDA_SUCCESS;
    const float *a = floats(ARG(launch, 0, CUdeviceptr), n);
    const float *b = floats(ARG(launch, 1, CUdeviceptr), n);
    float *c = floats(ARG(launch, 2, CUdeviceptr), n);
    if (!a || !b || !c) return CUDA_ERROR_ILLEGAL_ADDRESS;
    for (size_t i = 0; i < n; i++) c[i] = a[i] + b[i];
    return CUDA_SUCCESS;
}

static CUresult fill(const struct fake_launch *launch) {
    size_t n = thread_count(launch, ARG(launch, 2, unsigned int));
    if (n == 0) return CUDA_SUCCESS;
    float *out = floats(ARG(launch, 0, CUdeviceptr), n);
    float value = ARG(launch, 1, float);
    if (!out) return CUDA_ERROR_ILLEGAL_ADDRESS;
    for (size_t i = 0; i < n; i++) out[i] = value;
    return CUDA_SUCCESS;
}

static CUresult saxpy(const struct fake_launch *launch) {
    size_t n = thread_count(launch, ARG(launch, 3, unsigned int));
    if (n == 0) return CUDA_SUCCESS;
    float a = ARG(launch, 0, float);
    const float *x = floats(ARG(launch, 1, CUdeviceptr), n);
    float *y = floats(ARG(launch, 2, CUdeviceptr), n);
    if (!x || !y) return CUDA_ERROR_ILLEGAL_ADDRESS;
    for (size_t i = 0; i < n; i++) y[i] = a * x[i] + y[i];
    return CUDA_SUCCESS;
}

struct affine_params {
    float scale, offset;
};

static CUresult affine(const struct fake_launch *launch) {
    size_t n = thread_count(launch, ARG(launch, 2, unsigned int));
    if (n == 0) return CUDA_SUCCESS;
    struct affine_params f;
    memcpy(&f, launch->params[0], sizeof f);
    float *data = floats(ARG(launch, 1, CUdeviceptr), n);
    if (!data) return CUDA_ERROR_ILLEGAL_ADDRESS;
    for (size_t i = 0; i < n; i++) data[i] = f.scale * data[i] + f.offset;
    return CUDA_SUCCESS;
}

static CUresult add_one(const struct fake_launch *launch) {
    size_t n = thread_count(launch, ARG(launch, 1, unsigned int));
    if (n == 0) return CUDA_SUCCESS;
    int *data = (int *)fake_device_bytes(ARG(launch, 0, CUdeviceptr), n * sizeof(int));
    if (!data) return CUDA_ERROR_ILLEGAL_ADDRESS;
    for (size_t i = 0; i < n; i++) data[i] += 1;
    return CUDA_SUCCESS;
}

/* The condition setter of conditional nodes (graphs.c), declared here to keep the kernels'
 * header-free of driver.h. */
void fake_set_condition(uint64_t handle, unsigned int value);

static CUresult countdown(const struct fake_launch *launch) {
    int *counter = (int *)fake_device_bytes(ARG(launch, 1, CUdeviceptr), sizeof(int));
    if (!counter) return CUDA_ERROR_ILLEGAL_ADDRESS;
    *counter -= 1;
    fake_set_condition(ARG(launch, 0, unsigned long long), *counter > 0);
    return CUDA_SUCCESS;
}

static CUresult noop(const struct fake_launch *launch) {
    (void)launch;
    return CUDA_SUCCESS;
}

static CUresult cuda_core_expr(const struct fake_launch *launch) {
    unsigned long long n = ARG(launch, 4, unsigned long long);
    if (n == 0) return CUDA_SUCCESS;
    float a = ARG(launch, 0, float);
    const float *x = floats(ARG(launch, 1, CUdeviceptr), n);
    const float *y = floats(ARG(launch, 2, CUdeviceptr), n);
    float *out = floats(ARG(launch, 3, CUdeviceptr), n);
    if (!x || !y || !out) return CUDA_ERROR_ILLEGAL_ADDRESS;
    for (unsigned long long i = 0; i < n; i++) out[i] = a * x[i] + y[i];
    return CUDA_SUCCESS;
}

static CUresult cuda_core_expr_fma(const struct fake_launch *launch) {
    unsigned long long n = ARG(launch, 4, unsigned long long);
    if (n == 0) return CUDA_SUCCESS;
    const float *x = floats(ARG(launch, 0, CUdeviceptr), n);
    const float *y = floats(ARG(launch, 1, CUdeviceptr), n);
    const float *z = floats(ARG(launch, 2, CUdeviceptr), n);
    float *out = floats(ARG(launch, 3, CUdeviceptr), n);
    if (!x || !y || !z || !out) return CUDA_ERROR_ILLEGAL_ADDRESS;
    for (unsigned long long i = 0; i < n; i++) out[i] = x[i] * y[i] + z[i];
    return CUDA_SUCCESS;
}

/* The int element at `index` of the array at `base`, or NULL outside every allocation. */
static int *int_at(CUdeviceptr base, long long index) {
    return (int *)fake_device_bytes(base + (CUdeviceptr)(index * (long long)sizeof(int)), sizeof(int));
}

static CUresult cuda_core_matmul_tiled(const struct fake_launch *launch) {
    CUdeviceptr a = ARG(launch, 0, CUdeviceptr), b = ARG(launch, 1, CUdeviceptr), c = ARG(launch, 2, CUdeviceptr);
    long long m = ARG(launch, 3, long long), n = ARG(launch, 4, long long), k = ARG(launch, 5, long long);
    long long count = ARG(launch, 6, long long);
    long long a_offset = ARG(launch, 7, long long), a_batch = ARG(launch, 8, long long);
    long long a_row = ARG(launch, 9, long long), a_col = ARG(launch, 10, long long);
    long long b_offset = ARG(launch, 11, long long), b_batch = ARG(launch, 12, long long);
    long long b_row = ARG(launch, 13, long long), b_col = ARG(launch, 14, long long);
    long long c_offset = ARG(launch, 15, long long), c_batch = ARG(launch, 16, long long);
    for (long long matrix = 0; matrix < count; matrix++) {
        for (long long row = 0; row < m; row++) {
            for (long long col = 0; col < n; col++) {
                unsigned long long sum = 0;
                for (long long l = 0; l < k; l++) {
                    const int *x = int_at(a, a_offset + matrix * a_batch + row * a_row + l * a_col);
                    const int *y = int_at(b, b_offset + matrix * b_batch + l * b_row + col * b_col);
                    if (!x || !y) return CUDA_ERROR_ILLEGAL_ADDRESS;
                    sum += (unsigned long long)(long long)*x * (unsigned long long)(long long)*y;
                }
                int *out = int_at(c, c_offset + matrix * c_batch + row * n + col);
                if (!out) return CUDA_ERROR_ILLEGAL_ADDRESS;
                *out = (int)(unsigned int)sum;
            }
        }
    }
    return CUDA_SUCCESS;
}

/* The layout struct of cuda_core_gather with one loop and one index axis. */
struct gather_layout {
    unsigned long long extent, x, index, index_extent, index_x;
};

static CUresult cuda_core_gather(const struct fake_launch *launch) {
    unsigned long long n = ARG(launch, 4, unsigned long long);
    struct gather_layout l;
    memcpy(&l, launch->params[5], sizeof l);
    CUdeviceptr flags_address = ARG(launch, 3, CUdeviceptr);
    if (flags_address == 0) return CUDA_ERROR_NOT_SUPPORTED; /* only mode Raise runs here */
    if (n == 0) return CUDA_SUCCESS;
    if (l.extent != n || l.index_extent == 0) return CUDA_ERROR_INVALID_VALUE;
    size_t x_len = (size_t)((n - 1) * l.x + (l.index_extent - 1) * l.index_x + 1);
    const float *x = floats(ARG(launch, 0, CUdeviceptr), x_len);
    const long long *index = (const long long *)fake_device_bytes(ARG(launch, 1, CUdeviceptr),
                                                                    (size_t)((n - 1) * l.index + 1) * sizeof(long long));
    float *out = floats(ARG(launch, 2, CUdeviceptr), (size_t)n);
    unsigned long long *flags = (unsigned long long *)fake_device_bytes(flags_address, 2 * sizeof(unsigned long long));
    if (!x || !index || !out || !flags) return CUDA_ERROR_ILLEGAL_ADDRESS;
    long long size = (long long)l.index_extent;
    for (unsigned long long e = 0; e < n; e++) {
        long long j = index[e * l.index];
        if (j < 0) j += size;
        if (j < 0 || j >= size) {
            flags[0] += 1;
            flags[1] = (unsigned long long)index[e * l.index];
            continue;
        }
        out[e] = x[e * l.x + (unsigned long long)j * l.index_x];
    }
    return CUDA_SUCCESS;
}

static const struct fake_kernel kernels[] = {
    {"vector_add", 4, {8, 8, 8, 4}, vector_add},
    {"fill", 3, {8, 4, 4}, fill},
    {"saxpy", 4, {4, 8, 8, 4}, saxpy},
    {"affine", 3, {8, 8, 4}, affine},
    {"add_one", 2, {8, 4}, add_one},
    {"noop", 0, {0}, noop},
    {"countdown", 2, {8, 8}, countdown},
    {"cuda_core_expr", 5, {4, 8, 8, 8, 8}, cuda_core_expr},
    {"cuda_core_expr_vec", 5, {4, 8, 8, 8, 8}, cuda_core_expr},
    {"cuda_core_expr", 5, {8, 8, 8, 8, 8}, cuda_core_expr_fma},
    {"cuda_core_expr_vec", 5, {8, 8, 8, 8, 8}, cuda_core_expr_fma},
    {"cuda_core_matmul_tiled", 17, {8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8}, cuda_core_matmul_tiled},
    {"cuda_core_gather", 6, {8, 8, 8, 8, 8, 40}, cuda_core_gather},
    {"sample", 5, {8, 8, 4, 4, 4}, fake_sample_kernel},
    {"scale_surface", 4, {8, 4, 4, 4}, fake_scale_surface_kernel},
};

const struct fake_kernel *fake_find_kernel(const char *name, int param_count, const size_t *param_sizes) {
    for (size_t k = 0; k < sizeof kernels / sizeof kernels[0]; k++) {
        const struct fake_kernel *kernel = &kernels[k];
        if (strcmp(kernel->name, name) != 0 || kernel->param_count != param_count) continue;
        if (memcmp(kernel->param_sizes, param_sizes, sizeof(size_t) * (size_t)param_count) == 0) return kernel;
    }
    return NULL;
}
