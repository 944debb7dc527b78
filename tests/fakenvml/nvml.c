/*
 * fakenvml: a TEST DOUBLE for NVML (libnvidia-ml), used only by the `tests` package's
 * `system_fake` binary. Two devices with fixed figures; NVML's initialisation count; a process
 * list that grows between the size query and the list (to exercise the retry); device 1 without
 * power readings (NVML_ERROR_NOT_SUPPORTED). `nvmlDeviceGetTemperature` is deliberately not
 * exported: a function the installed library lacks.
 */
#include <stdio.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))

typedef int nvmlReturn_t;
typedef struct fake_nvml_device *nvmlDevice_t;
typedef struct {
    unsigned long long total, free, used;
} nvmlMemory_t;
typedef struct {
    unsigned int pid;
    unsigned long long usedGpuMemory;
    unsigned int gpuInstanceId, computeInstanceId;
} nvmlProcessInfo_t;

enum {
    NVML_SUCCESS = 0,
    NVML_ERROR_UNINITIALIZED = 1,
    NVML_ERROR_INVALID_ARGUMENT = 2,
    NVML_ERROR_NOT_SUPPORTED = 3,
    NVML_ERROR_INSUFFICIENT_SIZE = 7,
    NVML_ERROR_NOT_FOUND = 6,
};

struct fake_nvml_device {
    int index;
};
static struct fake_nvml_device devices[2] = {{0}, {1}};
static int initialised;       /* nvmlInit_v2 calls not yet shut down */
static unsigned int listings; /* compute-process list calls: each sees one process more */

static int device_index(nvmlDevice_t device) {
    if (device == &devices[0]) return 0;
    if (device == &devices[1]) return 1;
    return -1;
}

static nvmlReturn_t copy_text(char *out, unsigned int length, const char *text) {
    if (!out) return NVML_ERROR_INVALID_ARGUMENT;
    if (strlen(text) + 1 > length) return NVML_ERROR_INSUFFICIENT_SIZE;
    memcpy(out, text, strlen(text) + 1);
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlInit_v2(void) {
    initialised++;
    return NVML_SUCCESS;
}
EXPORT nvmlReturn_t nvmlShutdown(void) {
    if (!initialised) return NVML_ERROR_UNINITIALIZED;
    initialised--;
    return NVML_SUCCESS;
}
EXPORT const char *nvmlErrorString(nvmlReturn_t result) {
    switch (result) {
    case NVML_ERROR_UNINITIALIZED: return "Uninitialized";
    case NVML_ERROR_NOT_SUPPORTED: return "Not Supported";
    default: return "Unknown Error";
    }
}
EXPORT nvmlReturn_t nvmlSystemGetDriverVersion(char *version, unsigned int length) {
    return initialised ? copy_text(version, length, "580.65.06") : NVML_ERROR_UNINITIALIZED;
}
EXPORT nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int *version) {
    if (!version) return NVML_ERROR_INVALID_ARGUMENT;
    *version = 13000;
    return NVML_SUCCESS;
}
EXPORT nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *count) {
    if (!initialised) return NVML_ERROR_UNINITIALIZED;
    if (!count) return NVML_ERROR_INVALID_ARGUMENT;
    *count = 2;
    return NVML_SUCCESS;
}
EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t *device) {
    if (!initialised) return NVML_ERROR_UNINITIALIZED;
    if (index >= 2 || !device) return NVML_ERROR_INVALID_ARGUMENT;
    *device = &devices[index];
    return NVML_SUCCESS;
}
EXPORT nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char *name, unsigned int length) {
    if (!initialised) return NVML_ERROR_UNINITIALIZED;
    return device_index(device) < 0 ? NVML_ERROR_INVALID_ARGUMENT : copy_text(name, length, "NVIDIA H200");
}
EXPORT nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char *uuid, unsigned int length) {
    if (!initialised) return NVML_ERROR_UNINITIALIZED;
    int index = device_index(device);
    if (index < 0) return NVML_ERROR_INVALID_ARGUMENT;
    char text[64];
    snprintf(text, sizeof text, "GPU-00000000-0000-0000-0000-00000000000%d", index);
    return copy_text(uuid, length, text);
}
EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t *memory) {
    if (!initialised) return NVML_ERROR_UNINITIALIZED;
    if (device_index(device) < 0 || !memory) return NVML_ERROR_INVALID_ARGUMENT;
    memory->total = 150754820096ull;
    memory->used = 1ull << 30;
    memory->free = memory->total - memory->used;
    return NVML_SUCCESS;
}
EXPORT nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t device, unsigned int *milliwatts) {
    if (!initialised) return NVML_ERROR_UNINITIALIZED;
    int index = device_index(device);
    if (index < 0 || !milliwatts) return NVML_ERROR_INVALID_ARGUMENT;
    if (index == 1) return NVML_ERROR_NOT_SUPPORTED;
    *milliwatts = 123456;
    return NVML_SUCCESS;
}
EXPORT nvmlReturn_t nvmlDeviceGetTopologyCommonAncestor(nvmlDevice_t first, nvmlDevice_t second, int *level) {
    if (!initialised) return NVML_ERROR_UNINITIALIZED;
    if (device_index(first) < 0 || device_index(second) < 0 || !level) return NVML_ERROR_INVALID_ARGUMENT;
    *level = first == second ? 0 : 40; /* internal, or one NUMA node apart */
    return NVML_SUCCESS;
}
/* Each call sees one more process than the last: a list sized by an earlier call is too small. */
EXPORT nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t device, unsigned int *count,
                                                            nvmlProcessInfo_t *infos) {
    if (!initialised) return NVML_ERROR_UNINITIALIZED;
    if (device_index(device) < 0 || !count) return NVML_ERROR_INVALID_ARGUMENT;
    unsigned int present = 8 + ++listings;
    if (*count < present) {
        *count = present;
        return NVML_ERROR_INSUFFICIENT_SIZE;
    }
    for (unsigned int i = 0; i < present; i++) {
        infos[i].pid = 1000 + i;
        infos[i].usedGpuMemory = i == 0 ? ~0ull : (unsigned long long)i << 20; /* the first: not available */
        infos[i].gpuInstanceId = infos[i].computeInstanceId = ~0u;
    }
    *count = present;
    return NVML_SUCCESS;
}
EXPORT nvmlReturn_t nvmlDeviceGetGraphicsRunningProcesses_v3(nvmlDevice_t device, unsigned int *count,
                                                             nvmlProcessInfo_t *infos) {
    (void)infos;
    if (!initialised) return NVML_ERROR_UNINITIALIZED;
    if (device_index(device) < 0 || !count) return NVML_ERROR_INVALID_ARGUMENT;
    *count = 0;
    return NVML_SUCCESS;
}
/* The initialisation count, for the tests (not an NVML function). */
EXPORT int fakenvml_initialised(void) { return initialised; }
EXPORT nvmlReturn_t nvmlDeviceGetHandleByUUID(const char *uuid, nvmlDevice_t *device) {
    if (!initialised) return NVML_ERROR_UNINITIALIZED;
    if (!uuid || !device) return NVML_ERROR_INVALID_ARGUMENT;
    for (int index = 0; index < 2; index++) {
        char text[64];
        snprintf(text, sizeof text, "GPU-00000000-0000-0000-0000-00000000000%d", index);
        if (strcmp(text, uuid) == 0) {
            *device = &devices[index];
            return NVML_SUCCESS;
        }
    }
    return NVML_ERROR_NOT_FOUND;
}
EXPORT nvmlReturn_t nvmlDeviceGetIndex(nvmlDevice_t device, unsigned int *index) {
    if (!initialised) return NVML_ERROR_UNINITIALIZED;
    int found = device_index(device);
    if (found < 0 || !index) return NVML_ERROR_INVALID_ARGUMENT;
    *index = (unsigned int)found;
    return NVML_SUCCESS;
}
