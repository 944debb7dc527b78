/*
 * fakecuda (test double): module variables (`__device__` and `__constant__`,
 * `.global` and `.const` in PTX). Each module gets zeroed storage for every
 * variable its image declares, at a fake device address, owned by the module
 * and freed with it; cuModuleGetGlobal and cuLibraryGetGlobal (library.c)
 * find it by name. Initialisers in the PTX are not read.
 */
#include <stdlib.h>
#include <string.h>

#include "driver.h"

CUresult fake_add_variables(struct fake_object *module, const struct fake_variable *variables, int count) {
    if (count == 0) return CUDA_SUCCESS;
    module->u.module.variables = calloc((size_t)count, sizeof *module->u.module.variables);
    if (!module->u.module.variables) return CUDA_ERROR_OUT_OF_MEMORY;
    for (int i = 0; i < count; i++) {
        struct fake_object *variable = fake_new(KIND_GLOBAL, module->context);
        unsigned char *bytes = calloc(1, variables[i].size);
        char *name = strdup(variables[i].name);
        if (!variable || !bytes || !name) {
            if (variable) fake_destroy(variable);
            free(bytes);
            free(name);
            return CUDA_ERROR_OUT_OF_MEMORY;
        }
        variable->u.mem.bytes = bytes;
        variable->u.mem.name = name;
        variable->u.mem.size = variables[i].size;
        variable->u.mem.address = fake_reserve_address(variables[i].size);
        module->u.module.variables[module->u.module.variable_count++] = variable;
    }
    return CUDA_SUCCESS;
}

CUresult fake_module_variable(struct fake_object *module, CUdeviceptr *address, size_t *bytes, const char *name) {
    if (!name) return CUDA_ERROR_INVALID_VALUE;
    for (int i = 0; i < module->u.module.variable_count; i++) {
        struct fake_object *variable = module->u.module.variables[i];
        if (strcmp(variable->u.mem.name, name) != 0) continue;
        if (address) *address = variable->u.mem.address;
        if (bytes) *bytes = variable->u.mem.size;
        return CUDA_SUCCESS;
    }
    return CUDA_ERROR_NOT_FOUND;
}

static CUresult module_global(CUdeviceptr *address, size_t *bytes, CUmodule handle, const char *name) {
    struct fake_object *module = fake_lookup_quiet(handle, KIND_LIBRARY_MODULE);
    if (!module) module = fake_lookup(handle, KIND_MODULE);
    if (!module) return CUDA_ERROR_INVALID_HANDLE;
    return fake_module_variable(module, address, bytes, name);
}
EXPORT CUresult cuModuleGetGlobal_v2(CUdeviceptr *dptr, size_t *bytes, CUmodule hmod, const char *name)
    FAKE_API(cuModuleGetGlobal_v2, module_global(dptr, bytes, hmod, name))
