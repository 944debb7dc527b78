/*
 * fakecuda (test double): modules, functions and kernel launches. A module's
 * entries come from its PTX text (module.c); an entry runs on launch if a host
 * kernel of that name and parameter layout exists (kernels.c), and fails with
 * CUDA_ERROR_NOT_SUPPORTED otherwise. A launch checks what the driver checks:
 * dimensions, shared memory, the function's context, the argument pointers.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "driver.h"

#define JIT_INFO_LOG_BUFFER 3
#define JIT_INFO_LOG_BUFFER_SIZE_BYTES 4
#define JIT_ERROR_LOG_BUFFER 5
#define JIT_ERROR_LOG_BUFFER_SIZE_BYTES 6
#define DEFAULT_DYNAMIC_SHARED 49152

size_t fake_argument_bytes(const struct fake_object *function) {
    int count = function->u.func.param_count;
    return count ? function->u.func.param_offsets[count - 1] + function->u.func.param_sizes[count - 1] : 0;
}

/* ---- modules ------------------------------------------------------------------------ */

struct fake_object *fake_make_module(struct fake_object *context, const struct fake_entry *entries, int count,
                                     struct fake_object *library) {
    struct fake_object *module = fake_new(library ? KIND_LIBRARY_MODULE : KIND_MODULE, context);
    if (!module) return NULL;
    module->u.module.library = library;
    module->u.module.functions = calloc((size_t)count + 1, sizeof *module->u.module.functions);
    if (!module->u.module.functions) {
        fake_destroy(module);
        return NULL;
    }
    for (int i = 0; i < count; i++) {
        struct fake_object *function = fake_new(KIND_FUNCTION, context);
        char *name = strdup(entries[i].name);
        if (!function || !name) {
            if (function) fake_destroy(function);
            free(name);
            fake_destroy(module);
            return NULL;
        }
        function->u.func.module = module;
        function->u.func.name = name;
        function->u.func.param_count = entries[i].param_count;
        memcpy(function->u.func.param_offsets, entries[i].param_offsets, sizeof entries[i].param_offsets);
        memcpy(function->u.func.param_sizes, entries[i].param_sizes, sizeof entries[i].param_sizes);
        function->u.func.kernel = fake_find_kernel(name, entries[i].param_count, entries[i].param_sizes);
        function->u.func.emulation = entries[i].emulation;
        function->u.func.max_dynamic_shared = DEFAULT_DYNAMIC_SHARED;
        module->u.module.functions[module->u.module.function_count++] = function;
    }
    return module;
}

static void write_log(char *buffer, size_t size, void **size_slot, const char *text) {
    if (!buffer || size == 0) return;
    snprintf(buffer, size, "%s", text);
    if (size_slot) *size_slot = (void *)(uintptr_t)(strlen(buffer) + 1);
}

CUresult fake_read_jit_options(struct fake_jit_logs *logs, unsigned int count, int *options, void **values) {
    memset(logs, 0, sizeof *logs);
    if (count && (!options || !values)) return CUDA_ERROR_INVALID_VALUE;
    for (unsigned int i = 0; i < count; i++) {
        switch (options[i]) {
        case JIT_INFO_LOG_BUFFER:
            logs->info = values[i];
            break;
        case JIT_INFO_LOG_BUFFER_SIZE_BYTES:
            logs->info_size = (size_t)(uintptr_t)values[i];
            logs->info_size_slot = &values[i];
            break;
        case JIT_ERROR_LOG_BUFFER:
            logs->error = values[i];
            break;
        case JIT_ERROR_LOG_BUFFER_SIZE_BYTES:
            logs->error_size = (size_t)(uintptr_t)values[i];
            logs->error_size_slot = &values[i];
            break;
        default:
            if (options[i] < 0 || options[i] > 34) return CUDA_ERROR_INVALID_VALUE;
        }
    }
    return CUDA_SUCCESS;
}

CUresult fake_parse_image(const void *image, const struct fake_jit_logs *logs, struct fake_entry **entries, int *count) {
    char message[256] = "";
    CUresult result = fake_parse_module(image, entries, count, message, sizeof message);
    if (result != CUDA_SUCCESS) {
        if (logs) write_log(logs->error, logs->error_size, logs->error_size_slot, message);
        return result;
    }
    if (logs) {
        snprintf(message, sizeof message, "fakecuda: loaded %d entries", *count);
        write_log(logs->info, logs->info_size, logs->info_size_slot, message);
    }
    return CUDA_SUCCESS;
}

static CUresult load(CUmodule *out, const char *image, const struct fake_jit_logs *logs) {
    if (!out) return CUDA_ERROR_INVALID_VALUE;
    struct fake_object *context;
    CUresult result = fake_current_context(&context);
    if (result != CUDA_SUCCESS) return result;
    struct fake_entry *entries;
    int count;
    result = fake_parse_image(image, logs, &entries, &count);
    if (result != CUDA_SUCCESS) return result;
    struct fake_object *module = fake_make_module(context, entries, count, NULL);
    fake_free_entries(entries, count);
    if (!module) return CUDA_ERROR_OUT_OF_MEMORY;
    struct fake_variable *variables;
    result = fake_parse_variables(image, &variables, &count);
    if (result == CUDA_SUCCESS) {
        result = fake_add_variables(module, variables, count);
        fake_free_variables(variables, count);
    }
    if (result != CUDA_SUCCESS) {
        fake_destroy(module);
        return result;
    }
    *out = fake_handle(module);
    return CUDA_SUCCESS;
}

EXPORT CUresult cuModuleLoadData(CUmodule *module, const void *image) FAKE_API(cuModuleLoadData, load(module, image, NULL))

static CUresult load_ex(CUmodule *out, const void *image, unsigned int count, int *options, void **values) {
    struct fake_jit_logs logs;
    CUresult result = fake_read_jit_options(&logs, count, options, values);
    return result != CUDA_SUCCESS ? result : load(out, image, &logs);
}
EXPORT CUresult cuModuleLoadDataEx(CUmodule *module, const void *image, unsigned int numOptions, int *options,
                                   void **optionValues)
    FAKE_API(cuModuleLoadDataEx, load_ex(module, image, numOptions, options, optionValues))

static CUresult load_file(CUmodule *out, const char *path) {
    if (!path) return CUDA_ERROR_INVALID_VALUE;
    FILE *file = fopen(path, "rb");
    if (!file) return CUDA_ERROR_FILE_NOT_FOUND;
    char *text = NULL;
    size_t length = 0, capacity = 0;
    for (;;) {
        if (length + 4097 > capacity) {
            capacity = capacity ? capacity * 2 : 8192;
            char *grown = realloc(text, capacity);
            if (!grown) {
                free(text);
                fclose(file);
                return CUDA_ERROR_OUT_OF_MEMORY;
            }
            text = grown;
        }
        size_t read = fread(text + length, 1, 4096, file);
        length += read;
        if (read < 4096) break;
    }
    fclose(file);
    text[length] = 0;
    CUresult result = load(out, text, NULL);
    free(text);
    return result;
}
EXPORT CUresult cuModuleLoad(CUmodule *module, const char *fname) FAKE_API(cuModuleLoad, load_file(module, fname))

static CUresult unload(CUmodule handle) {
    struct fake_object *module = fake_lookup_for_destroy(handle, KIND_MODULE);
    if (!module) return CUDA_ERROR_INVALID_HANDLE;
    fake_flush_context(module->context); /* queued launches of its kernels run first */
    return fake_destroy(module);
}
EXPORT CUresult cuModuleUnload(CUmodule hmod) FAKE_API(cuModuleUnload, unload(hmod))

static CUresult get_function(CUfunction *out, CUmodule handle, const char *name) {
    if (!out || !name) return CUDA_ERROR_INVALID_VALUE;
    struct fake_object *module = fake_lookup_quiet(handle, KIND_LIBRARY_MODULE);
    if (!module) module = fake_lookup(handle, KIND_MODULE);
    if (!module) return CUDA_ERROR_INVALID_HANDLE;
    for (int i = 0; i < module->u.module.function_count; i++) {
        if (strcmp(module->u.module.functions[i]->u.func.name, name) == 0) {
            *out = fake_handle(module->u.module.functions[i]);
            return CUDA_SUCCESS;
        }
    }
    return CUDA_ERROR_NOT_FOUND;
}
EXPORT CUresult cuModuleGetFunction(CUfunction *hfunc, CUmodule hmod, const char *name)
    FAKE_API(cuModuleGetFunction, get_function(hfunc, hmod, name))

/* ---- functions -------------------------------------------------------------------------- */

enum {
    FUNC_MAX_THREADS_PER_BLOCK,
    FUNC_SHARED_SIZE_BYTES,
    FUNC_CONST_SIZE_BYTES,
    FUNC_LOCAL_SIZE_BYTES,
    FUNC_NUM_REGS,
    FUNC_PTX_VERSION,
    FUNC_BINARY_VERSION,
    FUNC_CACHE_MODE_CA,
    FUNC_MAX_DYNAMIC_SHARED_SIZE_BYTES,
    FUNC_PREFERRED_SHARED_MEMORY_CARVEOUT,
    FUNC_NON_PORTABLE_CLUSTER_SIZE_ALLOWED = 14,
    FUNC_CLUSTER_SCHEDULING_POLICY_PREFERENCE = 15,
};

static CUresult function_attribute(int *value, int attribute, CUfunction handle) {
    if (!value) return CUDA_ERROR_INVALID_VALUE;
    struct fake_object *function = fake_lookup(handle, KIND_FUNCTION);
    if (!function) return CUDA_ERROR_INVALID_HANDLE;
    switch (attribute) {
    case FUNC_MAX_THREADS_PER_BLOCK: *value = 1024; break;
    case FUNC_NUM_REGS: *value = 32; break;
    case FUNC_PTX_VERSION:
    case FUNC_BINARY_VERSION: *value = 90; break;
    case FUNC_MAX_DYNAMIC_SHARED_SIZE_BYTES: *value = function->u.func.max_dynamic_shared; break;
    case FUNC_PREFERRED_SHARED_MEMORY_CARVEOUT: *value = -1; break;
    default:
        if (attribute < 0 || attribute > FUNC_CLUSTER_SCHEDULING_POLICY_PREFERENCE) return CUDA_ERROR_INVALID_VALUE;
        *value = 0;
    }
    return CUDA_SUCCESS;
}
EXPORT CUresult cuFuncGetAttribute(int *pi, int attrib, CUfunction hfunc)
    FAKE_API(cuFuncGetAttribute, function_attribute(pi, attrib, hfunc))

static CUresult set_function_attribute(CUfunction handle, int attribute, int value) {
    struct fake_object *function = fake_lookup(handle, KIND_FUNCTION);
    if (!function) return CUDA_ERROR_INVALID_HANDLE;
    switch (attribute) {
    case FUNC_MAX_DYNAMIC_SHARED_SIZE_BYTES:
        if (value < 0 || value > FAKE_MAX_SHARED_OPTIN) return CUDA_ERROR_INVALID_VALUE;
        function->u.func.max_dynamic_shared = value;
        return CUDA_SUCCESS;
    case FUNC_PREFERRED_SHARED_MEMORY_CARVEOUT:
        return value < -1 || value > 100 ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
    case FUNC_NON_PORTABLE_CLUSTER_SIZE_ALLOWED:
    case FUNC_CLUSTER_SCHEDULING_POLICY_PREFERENCE:
        return CUDA_SUCCESS;
    default:
        return CUDA_ERROR_INVALID_VALUE;
    }
}
EXPORT CUresult cuFuncSetAttribute(CUfunction hfunc, int attrib, int value)
    FAKE_API(cuFuncSetAttribute, set_function_attribute(hfunc, attrib, value))

static CUresult set_cache_config(CUfunction handle, int config) {
    if (!fake_lookup(handle, KIND_FUNCTION)) return CUDA_ERROR_INVALID_HANDLE;
    return config < 0 || config > 3 ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
}
EXPORT CUresult cuFuncSetCacheConfig(CUfunction hfunc, int config)
    FAKE_API(cuFuncSetCacheConfig, set_cache_config(hfunc, config))

static CUresult param_info(CUfunction handle, size_t index, size_t *offset, size_t *size) {
    struct fake_object *function = fake_lookup(handle, KIND_FUNCTION);
    if (!function) return CUDA_ERROR_INVALID_HANDLE;
    if (index >= (size_t)function->u.func.param_count) return CUDA_ERROR_INVALID_VALUE;
    if (offset) *offset = function->u.func.param_offsets[index];
    if (size) *size = function->u.func.param_sizes[index];
    return CUDA_SUCCESS;
}
EXPORT CUresult cuFuncGetParamInfo(CUfunction func, size_t paramIndex, size_t *paramOffset, size_t *paramSize)
    FAKE_API(cuFuncGetParamInfo, param_info(func, paramIndex, paramOffset, paramSize))

static CUresult function_name(const char **name, CUfunction handle) {
    if (!name) return CUDA_ERROR_INVALID_VALUE;
    struct fake_object *function = fake_lookup(handle, KIND_FUNCTION);
    if (!function) return CUDA_ERROR_INVALID_HANDLE;
    *name = function->u.func.name;
    return CUDA_SUCCESS;
}
EXPORT CUresult cuFuncGetName(const char **name, CUfunction hfunc) FAKE_API(cuFuncGetName, function_name(name, hfunc))

static CUresult function_module(CUmodule *module, CUfunction handle) {
    if (!module) return CUDA_ERROR_INVALID_VALUE;
    struct fake_object *function = fake_lookup(handle, KIND_FUNCTION);
    if (!function) return CUDA_ERROR_INVALID_HANDLE;
    *module = fake_handle(function->u.func.module);
    return CUDA_SUCCESS;
}
EXPORT CUresult cuFuncGetModule(CUmodule *hmod, CUfunction hfunc) FAKE_API(cuFuncGetModule, function_module(hmod, hfunc))

/* Resident blocks per SM for a block size and dynamic shared memory. */
static int blocks_per_sm(int block_size, size_t shared) {
    int by_threads = 2048 / block_size;
    int by_shared = shared ? (int)(233472 / (shared + 1024)) : 32;
    int blocks = by_threads < by_shared ? by_threads : by_shared;
    return blocks < 32 ? blocks : 32;
}

static CUresult occupancy_blocks(int *blocks, CUfunction handle, int block_size, size_t shared) {
    if (!blocks) return CUDA_ERROR_INVALID_VALUE;
    struct fake_object *function = fake_lookup(handle, KIND_FUNCTION);
    if (!function) return CUDA_ERROR_INVALID_HANDLE;
    if (block_size <= 0 || block_size > 1024) return CUDA_ERROR_INVALID_VALUE;
    *blocks = blocks_per_sm(block_size, shared);
    return CUDA_SUCCESS;
}
EXPORT CUresult cuOccupancyMaxActiveBlocksPerMultiprocessor(int *numBlocks, CUfunction func, int blockSize,
                                                            size_t dynamicSMemSize)
    FAKE_API(cuOccupancyMaxActiveBlocksPerMultiprocessor, occupancy_blocks(numBlocks, func, blockSize, dynamicSMemSize))

static CUresult potential_block_size(int *min_grid, int *block_size, CUfunction handle, size_t shared, int limit) {
    if (!min_grid || !block_size) return CUDA_ERROR_INVALID_VALUE;
    if (!fake_lookup(handle, KIND_FUNCTION)) return CUDA_ERROR_INVALID_HANDLE;
    *block_size = limit > 0 && limit < 1024 ? limit : 1024;
    *min_grid = FAKE_SM_COUNT * blocks_per_sm(*block_size, shared);
    return CUDA_SUCCESS;
}
EXPORT CUresult cuOccupancyMaxPotentialBlockSize(int *minGridSize, int *blockSize, CUfunction func,
                                                 CUoccupancyB2DSize callback,
                                                 size_t dynamicSMemSize, int blockSizeLimit)
    FAKE_API(cuOccupancyMaxPotentialBlockSize,
             (void)callback, potential_block_size(minGridSize, blockSize, func, dynamicSMemSize, blockSizeLimit))

/* The dynamic shared memory each of `blocks` resident blocks may have (the inverse of blocks_per_sm). */
static CUresult available_shared(size_t *bytes, CUfunction handle, int blocks, int block_size) {
    if (!bytes) return CUDA_ERROR_INVALID_VALUE;
    if (!fake_lookup(handle, KIND_FUNCTION)) return CUDA_ERROR_INVALID_HANDLE;
    if (blocks <= 0 || block_size <= 0 || block_size > 1024) return CUDA_ERROR_INVALID_VALUE;
    if (blocks > 32 || blocks * block_size > 2048 || 233472 / blocks <= 1024) {
        *bytes = 0;
        return CUDA_SUCCESS;
    }
    size_t available = 233472 / (size_t)blocks - 1024;
    *bytes = available < FAKE_MAX_SHARED_OPTIN ? available : FAKE_MAX_SHARED_OPTIN;
    return CUDA_SUCCESS;
}
EXPORT CUresult cuOccupancyAvailableDynamicSMemPerBlock(size_t *dynamicSmemSize, CUfunction func, int numBlocks,
                                                        int blockSize)
    FAKE_API(cuOccupancyAvailableDynamicSMemPerBlock, available_shared(dynamicSmemSize, func, numBlocks, blockSize))

/* ---- launches ----------------------------------------------------------------------------- */

#define LAUNCH_ATTRIBUTE_COOPERATIVE 2
#define LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION 4
#define LAUNCH_ATTRIBUTE_MAX 16
#define LAUNCH_PARAM_BUFFER_POINTER ((void *)(uintptr_t)1)
#define LAUNCH_PARAM_BUFFER_SIZE ((void *)(uintptr_t)2)

struct launch_request {
    CUfunction function;
    unsigned int grid[3], block[3], shared;
    CUstream stream;
    void **params, **extra;
    int cooperative;
    unsigned int cluster[3];
};

/* The argument bytes from `extra` (CU_LAUNCH_PARAM_BUFFER_POINTER/SIZE). */
static CUresult extra_buffer(void **extra, const unsigned char **buffer, size_t *size) {
    *buffer = NULL;
    *size = 0;
    int has_size = 0;
    for (size_t i = 0; extra[i] != NULL; i += 2) {
        if (extra[i] == LAUNCH_PARAM_BUFFER_POINTER) {
            *buffer = extra[i + 1];
        } else if (extra[i] == LAUNCH_PARAM_BUFFER_SIZE) {
            if (!extra[i + 1]) return CUDA_ERROR_INVALID_VALUE;
            *size = *(size_t *)extra[i + 1];
            has_size = 1;
        } else {
            return CUDA_ERROR_INVALID_VALUE;
        }
    }
    return *buffer && has_size ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

static CUresult launch(const struct launch_request *request) {
    struct fake_object *function = fake_lookup(request->function, KIND_FUNCTION);
    if (!function) return CUDA_ERROR_INVALID_HANDLE;
    struct fake_object *context, *stream;
    CUresult result = fake_resolve_stream(request->stream, &context, &stream);
    if (result != CUDA_SUCCESS) return result;
    if (function->context != context) return CUDA_ERROR_INVALID_HANDLE;
    const unsigned int *grid = request->grid, *block = request->block;
    for (int d = 0; d < 3; d++) {
        if (grid[d] == 0 || block[d] == 0) return CUDA_ERROR_INVALID_VALUE;
        if ((int64_t)grid[d] > fake_device_attribute(0, 5 + d)) return CUDA_ERROR_INVALID_VALUE;
        if ((int64_t)block[d] > fake_device_attribute(0, 2 + d)) return CUDA_ERROR_INVALID_VALUE;
    }
    uint64_t threads = (uint64_t)block[0] * block[1] * block[2];
    if (threads > 1024) return CUDA_ERROR_INVALID_VALUE;
    if (request->shared > (unsigned int)function->u.func.max_dynamic_shared) return CUDA_ERROR_INVALID_VALUE;
    if (request->cooperative) {
        uint64_t blocks = (uint64_t)grid[0] * grid[1] * grid[2];
        if (blocks > (uint64_t)FAKE_SM_COUNT * (uint64_t)blocks_per_sm((int)threads, request->shared)) {
            return CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE;
        }
    }
    if (request->cluster[0]) {
        const unsigned int *cluster = request->cluster;
        uint64_t size = (uint64_t)cluster[0] * cluster[1] * cluster[2];
        if (size == 0 || size > 8) return CUDA_ERROR_INVALID_CLUSTER_SIZE;
        for (int d = 0; d < 3; d++) {
            if (grid[d] % cluster[d] != 0) return CUDA_ERROR_INVALID_CLUSTER_SIZE;
        }
    }
    /* copy the arguments, as the driver does before the launch call returns */
    int count = function->u.func.param_count;
    size_t bytes = fake_argument_bytes(function);
    unsigned char *arguments = malloc(bytes ? bytes : 1);
    if (!arguments) return CUDA_ERROR_OUT_OF_MEMORY;
    if (request->params) {
        for (int i = 0; i < count; i++) {
            if (!request->params[i]) {
                free(arguments);
                return CUDA_ERROR_INVALID_VALUE;
            }
            memcpy(arguments + function->u.func.param_offsets[i], request->params[i], function->u.func.param_sizes[i]);
        }
    } else if (request->extra) {
        const unsigned char *buffer;
        size_t size;
        result = extra_buffer(request->extra, &buffer, &size);
        if (result != CUDA_SUCCESS || size < bytes) {
            free(arguments);
            return CUDA_ERROR_INVALID_VALUE;
        }
        memcpy(arguments, buffer, bytes);
    } else if (count > 0) {
        free(arguments);
        return CUDA_ERROR_INVALID_VALUE;
    }
    struct fake_node node = {.kind = NODE_KERNEL};
    node.u.kernel.function = function;
    node.u.kernel.arg_bytes = arguments;
    memcpy(node.u.kernel.launch.grid, grid, sizeof node.u.kernel.launch.grid);
    memcpy(node.u.kernel.launch.block, block, sizeof node.u.kernel.launch.block);
    node.u.kernel.launch.shared_mem = request->shared;
    return fake_submit(context, stream, &node);
}

EXPORT CUresult cuLaunchKernel(CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ,
                               unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ,
                               unsigned int sharedMemBytes, CUstream hStream, void **kernelParams, void **extra)
    FAKE_API(cuLaunchKernel,
             launch(&(struct launch_request){f, {gridDimX, gridDimY, gridDimZ}, {blockDimX, blockDimY, blockDimZ},
                                              sharedMemBytes, hStream, kernelParams, extra, 0, {0, 0, 0}}))

EXPORT CUresult cuLaunchCooperativeKernel(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
                                          unsigned int gridDimZ, unsigned int blockDimX, unsigned int blockDimY,
                                          unsigned int blockDimZ, unsigned int sharedMemBytes, CUstream hStream,
                                          void **kernelParams)
    FAKE_API(cuLaunchCooperativeKernel,
             launch(&(struct launch_request){f, {gridDimX, gridDimY, gridDimZ}, {blockDimX, blockDimY, blockDimZ},
                                              sharedMemBytes, hStream, kernelParams, NULL, 1, {0, 0, 0}}))

static CUresult launch_ex(const CUlaunchConfig *config, CUfunction f, void **params, void **extra) {
    if (!config || (config->numAttrs && !config->attrs)) return CUDA_ERROR_INVALID_VALUE;
    struct launch_request request = {f,
                                     {config->gridDimX, config->gridDimY, config->gridDimZ},
                                     {config->blockDimX, config->blockDimY, config->blockDimZ},
                                     config->sharedMemBytes,
                                     config->hStream,
                                     params,
                                     extra,
                                     0,
                                     {0, 0, 0}};
    for (unsigned int i = 0; i < config->numAttrs; i++) {
        const CUlaunchAttribute *attribute = &config->attrs[i];
        if (attribute->id < 0 || attribute->id > LAUNCH_ATTRIBUTE_MAX) return CUDA_ERROR_INVALID_VALUE;
        if (attribute->id == LAUNCH_ATTRIBUTE_COOPERATIVE) request.cooperative = attribute->value.cooperative != 0;
        if (attribute->id == LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION) {
            request.cluster[0] = attribute->value.clusterDim.x;
            request.cluster[1] = attribute->value.clusterDim.y;
            request.cluster[2] = attribute->value.clusterDim.z;
            if (!request.cluster[0]) return CUDA_ERROR_INVALID_CLUSTER_SIZE;
        }
    }
    return launch(&request);
}
EXPORT CUresult cuLaunchKernelEx(const CUlaunchConfig *config, CUfunction f, void **kernelParams, void **extra)
    FAKE_API(cuLaunchKernelEx, launch_ex(config, f, kernelParams, extra))
