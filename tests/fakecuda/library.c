/*
 * fakecuda (test double): context-independent libraries (cuLibrary*) and
 * their kernels (cuKernel*). A library keeps its image's entries; the first
 * time a context asks for one of its kernels (or its module), the library
 * gets a module in that context, which it owns: unloading the library
 * unloads them, and a context going away takes its one with it.
 */
#include <stdlib.h>
#include <string.h>

#include "driver.h"

static CUresult library_load(void **out, const void *image, int *jit_options, void **jit_values,
                             unsigned int jit_count, unsigned int library_option_count) {
    if (!out) return CUDA_ERROR_INVALID_VALUE;
    if (library_option_count != 0) return CUDA_ERROR_NOT_SUPPORTED;
    struct fake_jit_logs logs;
    CUresult result = fake_read_jit_options(&logs, jit_count, jit_options, jit_values);
    if (result != CUDA_SUCCESS) return result;
    struct fake_entry *entries;
    int count;
    result = fake_parse_image(image, &logs, &entries, &count);
    if (result != CUDA_SUCCESS) return result;
    struct fake_variable *variables;
    int variable_count;
    result = fake_parse_variables(image, &variables, &variable_count);
    if (result != CUDA_SUCCESS) {
        fake_free_entries(entries, count);
        return result;
    }
    struct fake_object *library = fake_new(KIND_LIBRARY, NULL);
    struct fake_object **kernels = calloc((size_t)count + 1, sizeof *kernels);
    if (!library || !kernels) {
        if (library) fake_destroy(library);
        free(kernels);
        fake_free_entries(entries, count);
        fake_free_variables(variables, variable_count);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    library->u.library.variables = variables;
    library->u.library.variable_count = variable_count;
    library->u.library.entries = entries;
    library->u.library.entry_count = count;
    library->u.library.kernels = kernels;
    for (int i = 0; i < count; i++) {
        struct fake_object *kernel = fake_new(KIND_KERNEL, NULL);
        if (!kernel) {
            fake_destroy(library); /* and the kernels made so far */
            return CUDA_ERROR_OUT_OF_MEMORY;
        }
        kernel->u.kernel.library = library;
        kernel->u.kernel.entry = i;
        kernels[i] = kernel;
    }
    *out = fake_handle(library);
    return CUDA_SUCCESS;
}
EXPORT CUresult cuLibraryLoadData(CUlibrary *library, const void *code, int *jitOptions, void **jitOptionsValues,
                                  unsigned int numJitOptions, void *libraryOptions, void **libraryOptionValues,
                                  unsigned int numLibraryOptions)
    FAKE_API(cuLibraryLoadData, (void)libraryOptions, (void)libraryOptionValues,
             library_load((void **)library, code, jitOptions, jitOptionsValues, numJitOptions, numLibraryOptions))

static CUresult library_unload(void *handle) {
    struct fake_object *library = fake_lookup_for_destroy(handle, KIND_LIBRARY);
    if (!library) return CUDA_ERROR_INVALID_HANDLE;
    fake_flush_all(); /* queued launches of its kernels run first */
    return fake_destroy(library);
}
EXPORT CUresult cuLibraryUnload(CUlibrary library) FAKE_API(cuLibraryUnload, library_unload(library))

/* The library's module in the current context, made on first use. */
static CUresult module_here(struct fake_object *library, struct fake_object **module) {
    struct fake_object *context;
    CUresult result = fake_current_context(&context);
    if (result != CUDA_SUCCESS) return result;
    for (int i = 0; i < library->u.library.module_count; i++) {
        struct fake_object *candidate = library->u.library.modules[i];
        if (candidate->live && candidate->context == context) {
            *module = candidate;
            return CUDA_SUCCESS;
        }
    }
    struct fake_object **grown = realloc(library->u.library.modules,
                                         sizeof *grown * (size_t)(library->u.library.module_count + 1));
    if (!grown) return CUDA_ERROR_OUT_OF_MEMORY;
    library->u.library.modules = grown;
    *module = fake_make_module(context, library->u.library.entries, library->u.library.entry_count, library);
    if (!*module) return CUDA_ERROR_OUT_OF_MEMORY;
    result = fake_add_variables(*module, library->u.library.variables, library->u.library.variable_count);
    if (result != CUDA_SUCCESS) {
        fake_destroy(*module);
        return result;
    }
    grown[library->u.library.module_count++] = *module;
    return CUDA_SUCCESS;
}

static CUresult library_module(void **out, void *handle) {
    if (!out) return CUDA_ERROR_INVALID_VALUE;
    struct fake_object *library = fake_lookup(handle, KIND_LIBRARY);
    if (!library) return CUDA_ERROR_INVALID_HANDLE;
    struct fake_object *module;
    CUresult result = module_here(library, &module);
    if (result == CUDA_SUCCESS) *out = fake_handle(module);
    return result;
}
EXPORT CUresult cuLibraryGetModule(CUmodule *pMod, CUlibrary library)
    FAKE_API(cuLibraryGetModule, library_module((void **)pMod, library))

static CUresult library_kernel(void **out, void *handle, const char *name) {
    if (!out || !name) return CUDA_ERROR_INVALID_VALUE;
    struct fake_object *library = fake_lookup(handle, KIND_LIBRARY);
    if (!library) return CUDA_ERROR_INVALID_HANDLE;
    for (int i = 0; i < library->u.library.entry_count; i++) {
        if (strcmp(library->u.library.entries[i].name, name) == 0) {
            *out = fake_handle(library->u.library.kernels[i]);
            return CUDA_SUCCESS;
        }
    }
    return CUDA_ERROR_NOT_FOUND;
}
EXPORT CUresult cuLibraryGetKernel(CUkernel *pKernel, CUlibrary library, const char *name)
    FAKE_API(cuLibraryGetKernel, library_kernel((void **)pKernel, library, name))

static CUresult kernel_count(unsigned int *count, void *handle) {
    if (!count) return CUDA_ERROR_INVALID_VALUE;
    struct fake_object *library = fake_lookup(handle, KIND_LIBRARY);
    if (!library) return CUDA_ERROR_INVALID_HANDLE;
    *count = (unsigned int)library->u.library.entry_count;
    return CUDA_SUCCESS;
}
EXPORT CUresult cuLibraryGetKernelCount(unsigned int *count, CUlibrary lib)
    FAKE_API(cuLibraryGetKernelCount, kernel_count(count, lib))

static CUresult enumerate_kernels(void **kernels, unsigned int count, void *handle) {
    if (!kernels && count) return CUDA_ERROR_INVALID_VALUE;
    struct fake_object *library = fake_lookup(handle, KIND_LIBRARY);
    if (!library) return CUDA_ERROR_INVALID_HANDLE;
    if (count > (unsigned int)library->u.library.entry_count) return CUDA_ERROR_INVALID_VALUE;
    for (unsigned int i = 0; i < count; i++) kernels[i] = fake_handle(library->u.library.kernels[i]);
    return CUDA_SUCCESS;
}
EXPORT CUresult cuLibraryEnumerateKernels(CUkernel *kernels, unsigned int numKernels, CUlibrary lib)
    FAKE_API(cuLibraryEnumerateKernels, enumerate_kernels((void **)kernels, numKernels, lib))

static CUresult kernel_function(CUfunction *out, void *handle) {
    if (!out) return CUDA_ERROR_INVALID_VALUE;
    struct fake_object *kernel = fake_lookup(handle, KIND_KERNEL);
    if (!kernel) return CUDA_ERROR_INVALID_HANDLE;
    struct fake_object *module;
    CUresult result = module_here(kernel->u.kernel.library, &module);
    if (result == CUDA_SUCCESS) *out = fake_handle(module->u.module.functions[kernel->u.kernel.entry]);
    return result;
}
EXPORT CUresult cuKernelGetFunction(CUfunction *pFunc, CUkernel kernel)
    FAKE_API(cuKernelGetFunction, kernel_function(pFunc, kernel))

static CUresult kernel_name(const char **name, void *handle) {
    if (!name) return CUDA_ERROR_INVALID_VALUE;
    struct fake_object *kernel = fake_lookup(handle, KIND_KERNEL);
    if (!kernel) return CUDA_ERROR_INVALID_HANDLE;
    *name = kernel->u.kernel.library->u.library.entries[kernel->u.kernel.entry].name;
    return CUDA_SUCCESS;
}
EXPORT CUresult cuKernelGetName(const char **name, CUkernel hfunc) FAKE_API(cuKernelGetName, kernel_name(name, hfunc))

static CUresult library_global(CUdeviceptr *address, size_t *bytes, void *handle, const char *name) {
    struct fake_object *library = fake_lookup(handle, KIND_LIBRARY);
    if (!library) return CUDA_ERROR_INVALID_HANDLE;
    struct fake_object *module;
    CUresult result = module_here(library, &module);
    return result == CUDA_SUCCESS ? fake_module_variable(module, address, bytes, name) : result;
}
EXPORT CUresult cuLibraryGetGlobal(CUdeviceptr *dptr, size_t *bytes, CUlibrary library, const char *name)
    FAKE_API(cuLibraryGetGlobal, library_global(dptr, bytes, library, name))
