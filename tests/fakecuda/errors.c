/*
 * fakecuda (test double): error names and descriptions (cuGetErrorName,
 * cuGetErrorString). These two calls are not counted and never fail by
 * number, so an error path that describes its error sees the same text each
 * time; a test may still fail them by name.
 */
#include "driver.h"

static const struct {
    CUresult code;
    const char *name;
    const char *description;
} errors[] = {
    {0, "CUDA_SUCCESS", "fakecuda: no error"},
    {1, "CUDA_ERROR_INVALID_VALUE", "fakecuda: invalid value"},
    {2, "CUDA_ERROR_OUT_OF_MEMORY", "fakecuda: out of memory"},
    {3, "CUDA_ERROR_NOT_INITIALIZED", "fakecuda: not initialized"},
    {4, "CUDA_ERROR_DEINITIALIZED", "fakecuda: deinitialized"},
    {5, "CUDA_ERROR_PROFILER_DISABLED", "fakecuda: profiler disabled"},
    {6, "CUDA_ERROR_PROFILER_NOT_INITIALIZED", "fakecuda: profiler not initialized"},
    {7, "CUDA_ERROR_PROFILER_ALREADY_STARTED", "fakecuda: profiler already started"},
    {8, "CUDA_ERROR_PROFILER_ALREADY_STOPPED", "fakecuda: profiler already stopped"},
    {34, "CUDA_ERROR_STUB_LIBRARY", "fakecuda: stub library"},
    {36, "CUDA_ERROR_CALL_REQUIRES_NEWER_DRIVER", "fakecuda: call requires newer driver"},
    {46, "CUDA_ERROR_DEVICE_UNAVAILABLE", "fakecuda: device unavailable"},
    {100, "CUDA_ERROR_NO_DEVICE", "fakecuda: no device"},
    {101, "CUDA_ERROR_INVALID_DEVICE", "fakecuda: invalid device"},
    {102, "CUDA_ERROR_DEVICE_NOT_LICENSED", "fakecuda: device not licensed"},
    {200, "CUDA_ERROR_INVALID_IMAGE", "fakecuda: invalid image"},
    {201, "CUDA_ERROR_INVALID_CONTEXT", "fakecuda: invalid context"},
    {202, "CUDA_ERROR_CONTEXT_ALREADY_CURRENT", "fakecuda: context already current"},
    {205, "CUDA_ERROR_MAP_FAILED", "fakecuda: map failed"},
    {206, "CUDA_ERROR_UNMAP_FAILED", "fakecuda: unmap failed"},
    {207, "CUDA_ERROR_ARRAY_IS_MAPPED", "fakecuda: array is mapped"},
    {208, "CUDA_ERROR_ALREADY_MAPPED", "fakecuda: already mapped"},
    {209, "CUDA_ERROR_NO_BINARY_FOR_GPU", "fakecuda: no binary for gpu"},
    {210, "CUDA_ERROR_ALREADY_ACQUIRED", "fakecuda: already acquired"},
    {211, "CUDA_ERROR_NOT_MAPPED", "fakecuda: not mapped"},
    {212, "CUDA_ERROR_NOT_MAPPED_AS_ARRAY", "fakecuda: not mapped as array"},
    {213, "CUDA_ERROR_NOT_MAPPED_AS_POINTER", "fakecuda: not mapped as pointer"},
    {214, "CUDA_ERROR_ECC_UNCORRECTABLE", "fakecuda: ecc uncorrectable"},
    {215, "CUDA_ERROR_UNSUPPORTED_LIMIT", "fakecuda: unsupported limit"},
    {216, "CUDA_ERROR_CONTEXT_ALREADY_IN_USE", "fakecuda: context already in use"},
    {217, "CUDA_ERROR_PEER_ACCESS_UNSUPPORTED", "fakecuda: peer access unsupported"},
    {218, "CUDA_ERROR_INVALID_PTX", "fakecuda: invalid ptx"},
    {219, "CUDA_ERROR_INVALID_GRAPHICS_CONTEXT", "fakecuda: invalid graphics context"},
    {220, "CUDA_ERROR_NVLINK_UNCORRECTABLE", "fakecuda: nvlink uncorrectable"},
    {221, "CUDA_ERROR_JIT_COMPILER_NOT_FOUND", "fakecuda: jit compiler not found"},
    {222, "CUDA_ERROR_UNSUPPORTED_PTX_VERSION", "fakecuda: unsupported ptx version"},
    {223, "CUDA_ERROR_JIT_COMPILATION_DISABLED", "fakecuda: jit compilation disabled"},
    {224, "CUDA_ERROR_UNSUPPORTED_EXEC_AFFINITY", "fakecuda: unsupported exec affinity"},
    {225, "CUDA_ERROR_UNSUPPORTED_DEVSIDE_SYNC", "fakecuda: unsupported devside sync"},
    {226, "CUDA_ERROR_CONTAINED", "fakecuda: contained"},
    {300, "CUDA_ERROR_INVALID_SOURCE", "fakecuda: invalid source"},
    {301, "CUDA_ERROR_FILE_NOT_FOUND", "fakecuda: file not found"},
    {302, "CUDA_ERROR_SHARED_OBJECT_SYMBOL_NOT_FOUND", "fakecuda: shared object symbol not found"},
    {303, "CUDA_ERROR_SHARED_OBJECT_INIT_FAILED", "fakecuda: shared object init failed"},
    {304, "CUDA_ERROR_OPERATING_SYSTEM", "fakecuda: operating system"},
    {400, "CUDA_ERROR_INVALID_HANDLE", "fakecuda: invalid handle"},
    {401, "CUDA_ERROR_ILLEGAL_STATE", "fakecuda: illegal state"},
    {402, "CUDA_ERROR_LOSSY_QUERY", "fakecuda: lossy query"},
    {500, "CUDA_ERROR_NOT_FOUND", "fakecuda: not found"},
    {600, "CUDA_ERROR_NOT_READY", "fakecuda: not ready"},
    {700, "CUDA_ERROR_ILLEGAL_ADDRESS", "fakecuda: illegal address"},
    {701, "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES", "fakecuda: launch out of resources"},
    {702, "CUDA_ERROR_LAUNCH_TIMEOUT", "fakecuda: launch timeout"},
    {703, "CUDA_ERROR_LAUNCH_INCOMPATIBLE_TEXTURING", "fakecuda: launch incompatible texturing"},
    {704, "CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED", "fakecuda: peer access already enabled"},
    {705, "CUDA_ERROR_PEER_ACCESS_NOT_ENABLED", "fakecuda: peer access not enabled"},
    {708, "CUDA_ERROR_PRIMARY_CONTEXT_ACTIVE", "fakecuda: primary context active"},
    {709, "CUDA_ERROR_CONTEXT_IS_DESTROYED", "fakecuda: context is destroyed"},
    {710, "CUDA_ERROR_ASSERT", "fakecuda: assert"},
    {711, "CUDA_ERROR_TOO_MANY_PEERS", "fakecuda: too many peers"},
    {712, "CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED", "fakecuda: host memory already registered"},
    {713, "CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED", "fakecuda: host memory not registered"},
    {714, "CUDA_ERROR_HARDWARE_STACK_ERROR", "fakecuda: hardware stack error"},
    {715, "CUDA_ERROR_ILLEGAL_INSTRUCTION", "fakecuda: illegal instruction"},
    {716, "CUDA_ERROR_MISALIGNED_ADDRESS", "fakecuda: misaligned address"},
    {717, "CUDA_ERROR_INVALID_ADDRESS_SPACE", "fakecuda: invalid address space"},
    {718, "CUDA_ERROR_INVALID_PC", "fakecuda: invalid pc"},
    {719, "CUDA_ERROR_LAUNCH_FAILED", "fakecuda: launch failed"},
    {720, "CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE", "fakecuda: cooperative launch too large"},
    {721, "CUDA_ERROR_TENSOR_MEMORY_LEAK", "fakecuda: tensor memory leak"},
    {800, "CUDA_ERROR_NOT_PERMITTED", "fakecuda: not permitted"},
    {801, "CUDA_ERROR_NOT_SUPPORTED", "fakecuda: not supported"},
    {802, "CUDA_ERROR_SYSTEM_NOT_READY", "fakecuda: system not ready"},
    {803, "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH", "fakecuda: system driver mismatch"},
    {804, "CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE", "fakecuda: compat not supported on device"},
    {805, "CUDA_ERROR_MPS_CONNECTION_FAILED", "fakecuda: mps connection failed"},
    {806, "CUDA_ERROR_MPS_RPC_FAILURE", "fakecuda: mps rpc failure"},
    {807, "CUDA_ERROR_MPS_SERVER_NOT_READY", "fakecuda: mps server not ready"},
    {808, "CUDA_ERROR_MPS_MAX_CLIENTS_REACHED", "fakecuda: mps max clients reached"},
    {809, "CUDA_ERROR_MPS_MAX_CONNECTIONS_REACHED", "fakecuda: mps max connections reached"},
    {810, "CUDA_ERROR_MPS_CLIENT_TERMINATED", "fakecuda: mps client terminated"},
    {811, "CUDA_ERROR_CDP_NOT_SUPPORTED", "fakecuda: cdp not supported"},
    {812, "CUDA_ERROR_CDP_VERSION_MISMATCH", "fakecuda: cdp version mismatch"},
    {900, "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED", "fakecuda: stream capture unsupported"},
    {901, "CUDA_ERROR_STREAM_CAPTURE_INVALIDATED", "fakecuda: stream capture invalidated"},
    {902, "CUDA_ERROR_STREAM_CAPTURE_MERGE", "fakecuda: stream capture merge"},
    {903, "CUDA_ERROR_STREAM_CAPTURE_UNMATCHED", "fakecuda: stream capture unmatched"},
    {904, "CUDA_ERROR_STREAM_CAPTURE_UNJOINED", "fakecuda: stream capture unjoined"},
    {905, "CUDA_ERROR_STREAM_CAPTURE_ISOLATION", "fakecuda: stream capture isolation"},
    {906, "CUDA_ERROR_STREAM_CAPTURE_IMPLICIT", "fakecuda: stream capture implicit"},
    {907, "CUDA_ERROR_CAPTURED_EVENT", "fakecuda: captured event"},
    {908, "CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD", "fakecuda: stream capture wrong thread"},
    {910, "CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE", "fakecuda: the graph update was not performed"},
    {909, "CUDA_ERROR_TIMEOUT", "fakecuda: timeout"},
    {910, "CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE", "fakecuda: graph exec update failure"},
    {911, "CUDA_ERROR_EXTERNAL_DEVICE", "fakecuda: external device"},
    {912, "CUDA_ERROR_INVALID_CLUSTER_SIZE", "fakecuda: invalid cluster size"},
    {913, "CUDA_ERROR_FUNCTION_NOT_LOADED", "fakecuda: function not loaded"},
    {914, "CUDA_ERROR_INVALID_RESOURCE_TYPE", "fakecuda: invalid resource type"},
    {915, "CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION", "fakecuda: invalid resource configuration"},
    {916, "CUDA_ERROR_KEY_ROTATION", "fakecuda: key rotation"},
    {999, "CUDA_ERROR_UNKNOWN", "fakecuda: unknown"},
};

static CUresult describe(CUresult code, const char **text, int want_name) {
    if (!text) return CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; i < sizeof errors / sizeof errors[0]; i++) {
        if (errors[i].code == code) {
            *text = want_name ? errors[i].name : errors[i].description;
            return CUDA_SUCCESS;
        }
    }
    *text = NULL;
    return CUDA_ERROR_INVALID_VALUE;
}

EXPORT CUresult cuGetErrorName(CUresult error, const char **pStr) {
    CUresult injected = fake_enter("cuGetErrorName", 0);
    return injected != CUDA_SUCCESS ? injected : describe(error, pStr, 1);
}

EXPORT CUresult cuGetErrorString(CUresult error, const char **pStr) {
    CUresult injected = fake_enter("cuGetErrorString", 0);
    return injected != CUDA_SUCCESS ? injected : describe(error, pStr, 0);
}
