/*
 * fakecuda: a TEST DOUBLE for the CUDA driver (libcuda), used only by the
 * `tests` package of this workspace. It exports the driver entry points the
 * safe layers call, with the signatures of cuda.h (CUDA 13.0), over host
 * memory, plus a control API (fakecuda_*) that injects failures and counts
 * live handles. No user-facing code path loads it.
 *
 * This header declares the ABI types the library needs. It is self-contained
 * on purpose, so the library builds without the CUDA headers.
 */
#ifndef FAKECUDA_H
#define FAKECUDA_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

/* ---- cuda.h ABI subset ---------------------------------------------------- */

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef struct CUctx_st *CUcontext;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUstream_st *CUstream;
typedef struct CUevent_st *CUevent;
typedef struct CUgraph_st *CUgraph;
typedef struct CUgraphNode_st *CUgraphNode;
typedef struct CUgraphExec_st *CUgraphExec;
typedef struct CUmemPoolHandle_st *CUmemoryPool;
typedef struct CUlib_st *CUlibrary;
typedef struct CUkern_st *CUkernel;
typedef struct CUarray_st *CUarray;
typedef struct CUgreenCtx_st *CUgreenCtx;
typedef struct CUdevResourceDesc_st *CUdevResourceDesc;
typedef void (*CUhostFn)(void *user_data);
typedef size_t (*CUoccupancyB2DSize)(int block_size);
typedef struct {
    char bytes[16];
} CUuuid;

/* cuda.h's CUDA_GRAPH_INSTANTIATE_PARAMS, with the flag and results the fake reads or writes. */
enum { CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD = 2 };
enum { CUDA_GRAPH_INSTANTIATE_SUCCESS = 0, CUDA_GRAPH_INSTANTIATE_ERROR = 1 };
typedef struct {
    unsigned long long flags;
    CUstream hUploadStream;
    CUgraphNode hErrNode_out;
    int result_out;
} CUDA_GRAPH_INSTANTIATE_PARAMS;

typedef struct {
    unsigned int gridDimX, gridDimY, gridDimZ;
    unsigned int blockDimX, blockDimY, blockDimZ;
    unsigned int sharedMemBytes;
    CUstream hStream;
    struct CUlaunchAttribute_st *attrs;
    unsigned int numAttrs;
} CUlaunchConfig;

typedef struct CUlaunchAttribute_st {
    int id;
    char pad[4];
    union {
        char pad[64];
        int cooperative;
        struct {
            unsigned int x, y, z;
        } clusterDim;
        int priority;
    } value;
} CUlaunchAttribute;

enum {
    CUDA_SUCCESS = 0,
    CUDA_ERROR_INVALID_VALUE = 1,
    CUDA_ERROR_OUT_OF_MEMORY = 2,
    CUDA_ERROR_NOT_INITIALIZED = 3,
    CUDA_ERROR_NO_DEVICE = 100,
    CUDA_ERROR_INVALID_DEVICE = 101,
    CUDA_ERROR_INVALID_IMAGE = 200,
    CUDA_ERROR_INVALID_CONTEXT = 201,
    CUDA_ERROR_INVALID_PTX = 218,
    CUDA_ERROR_FILE_NOT_FOUND = 301,
    CUDA_ERROR_INVALID_HANDLE = 400,
    CUDA_ERROR_ILLEGAL_STATE = 401,
    CUDA_ERROR_NOT_FOUND = 500,
    CUDA_ERROR_NOT_READY = 600,
    CUDA_ERROR_ILLEGAL_ADDRESS = 700,
    CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED = 704,
    CUDA_ERROR_PEER_ACCESS_NOT_ENABLED = 705,
    CUDA_ERROR_CONTEXT_IS_DESTROYED = 709,
    CUDA_ERROR_LAUNCH_FAILED = 719,
    CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE = 720,
    CUDA_ERROR_OPERATING_SYSTEM = 304,
    CUDA_ERROR_NOT_SUPPORTED = 801,
    CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED = 900,
    CUDA_ERROR_STREAM_CAPTURE_INVALIDATED = 901,
    CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD = 908,
    CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE = 910,
    CUDA_ERROR_INVALID_CLUSTER_SIZE = 912,
    CUDA_ERROR_UNKNOWN = 999,
};

/* ---- the fake's object model ---------------------------------------------- */

/* Every handle the fake gives out is one of these kinds. The numbering is part
 * of the control API (fakecuda_live(kind)). */
enum fake_kind {
    KIND_CONTEXT = 1,     /* explicit contexts (cuCtxCreate) */
    KIND_PRIMARY = 2,     /* primary-context retains (counted per retain) */
    KIND_DEVICE_MEMORY = 3,
    KIND_HOST_MEMORY = 4, /* pinned host memory */
    KIND_STREAM = 5,
    KIND_EVENT = 6,
    KIND_MODULE = 7,
    KIND_GRAPH = 8,
    KIND_GRAPH_EXEC = 9,
    KIND_MEMORY_POOL = 10,   /* cuMemPoolCreate */
    KIND_LIBRARY = 11,       /* cuLibraryLoadData */
    KIND_VA_RANGE = 12,      /* cuMemAddressReserve */
    KIND_PHYSICAL = 13,      /* cuMemCreate */
    KIND_ARRAY = 14,         /* cuArray3DCreate */
    KIND_TEXTURE = 15,       /* cuTexObjectCreate */
    KIND_SURFACE = 16,       /* cuSurfObjectCreate */
    KIND_IPC_MAPPING = 17,   /* cuIpcOpenMemHandle */
    KIND_FUNCTION = 18,      /* owned by a module: not counted as live (this and the kinds after it) */
    KIND_DEFAULT_POOL = 19,  /* the devices' default pools: not counted as live */
    KIND_KERNEL = 20,        /* owned by a library: not counted as live */
    KIND_LIBRARY_MODULE = 21, /* a library's module in one context, owned by the library: not counted */
    KIND_GLOBAL = 22,        /* a module's __device__ or __constant__ variable, owned by the module: not counted */
    KIND_GRAPH_BODY = 23,    /* a conditional node's body graph, owned by the node: not counted */
    KIND_GREEN_CONTEXT = 24, /* cuGreenCtxCreate: not counted itself; it holds a primary retain, which is */
    KIND_COUNT = 25,
};

#define FAKE_DEVICES 2
#define FAKE_MAX_PARAMS 32

/* A kernel a module image declares, with its parameter layout (module.c). */
struct fake_entry {
    char *name;
    int param_count;
    size_t param_offsets[FAKE_MAX_PARAMS];
    size_t param_sizes[FAKE_MAX_PARAMS];
    int emulation; /* emulation.c's id of the image's source; 0: none */
};

/* A variable (`.global` or `.const`) a module image declares (module.c). */
struct fake_variable {
    char *name;
    size_t size;
};

/* One launch as the host kernels see it. */
struct fake_launch {
    unsigned int grid[3];
    unsigned int block[3];
    unsigned int shared_mem;
    void **params; /* params[i] points at the i-th argument's bytes */
};

typedef CUresult (*fake_kernel_body)(const struct fake_launch *launch);

/* A host implementation of a kernel, matched by name and parameter sizes. */
struct fake_kernel {
    const char *name;
    int param_count;
    size_t param_sizes[FAKE_MAX_PARAMS];
    fake_kernel_body run;
};

struct fake_object {
    int kind;
    int live;
    uint64_t index;              /* position in the registry; the handle encodes it */
    size_t present_slot;         /* position among the objects not destroyed (registry.c) */
    struct fake_object *context; /* owning context (NULL for contexts, host memory, pools) */
    union {
        struct {
            int device;
            unsigned int flags;
            int primary;
            int retains;         /* primary only */
            size_t limits[10];   /* cuCtxSetLimit values, by CUlimit */
            unsigned int peers;  /* bit d: peer access to device d's contexts enabled */
            struct fake_graph *legacy_queue; /* deferred mode: pending work of the legacy stream */
            CUresult async_error;            /* deferred mode: first failure of pending work */
        } ctx;
        struct {
            CUdeviceptr address;
            size_t size;
            unsigned char *bytes;
            struct fake_object *pool; /* stream-ordered allocations: their pool */
            char *name;               /* KIND_GLOBAL: the variable's name */
        } mem;
        struct {
            void *pointer;
            size_t size;
            unsigned int flags;
            int registered; /* cuMemHostRegister: the memory is the caller's */
            int managed;    /* cuMemAllocManaged: freed with cuMemFree */
        } host;
        struct {
            unsigned int flags;
            int priority;
            int capture_mode;
            int capture_status; /* 0 none, 1 active, 2 invalidated */
            pthread_t capture_thread;
            struct fake_graph *capture;
            struct fake_object *capture_target; /* cuStreamBeginCaptureToGraph: the graph captured into */
            int capture_owned;       /* capture_target was made for a plain capture (cuStreamGetCaptureInfo) */
            uint64_t capture_id;     /* the capture sequence's identity */
            struct fake_graph *queue; /* deferred mode: pending work */
        } stream;
        struct {
            unsigned int flags;
            int recorded;
            double time_ms;
            int pending;                   /* deferred mode: records queued, not yet run */
            struct fake_object *record_stream; /* where the last record was queued (NULL: legacy) */
        } event;
        struct {
            size_t width, height, depth; /* 0 for the dimensions it lacks */
            int format;
            unsigned int channels, flags;
            size_t element_bytes;        /* format size times channels */
            unsigned char *bytes;        /* packed: rows of width, slices of max(height, 1) rows */
        } array;
        struct {
            CUdeviceptr address;           /* where the allocation is opened (its own address) */
            struct fake_object *allocation; /* the exported device memory */
            struct fake_object *pool;       /* cuMemPoolImportPointer: the imported pool (else NULL) */
        } ipc;
        struct {
            struct fake_object *array;
            int filter;                  /* 0 point, 1 linear */
            int address_mode;            /* CUaddress_mode of the x axis */
            unsigned int flags;          /* CU_TRSF_* */
        } view;                          /* texture and surface objects */
        struct {
            CUdeviceptr address;         /* VA range: its base */
            size_t size;                 /* VA range: bytes reserved; physical: bytes created */
            unsigned char *bytes;        /* VA range: backing of the whole range */
            struct fake_object **owners; /* VA range: per granule, the physical memory mapped there */
            unsigned char *access;       /* VA range: per granule, whether cuMemSetAccess allowed it */
            size_t mapped;               /* physical: granules of it mapped now */
            int released;                /* physical: cuMemRelease was called (destroyed once unmapped) */
        } vmm;
        struct {
            struct fake_object **functions;
            int function_count;
            struct fake_object *library; /* KIND_LIBRARY_MODULE: the library it belongs to */
            struct fake_object **variables; /* KIND_GLOBAL objects */
            int variable_count;
        } module;
        struct {
            struct fake_entry *entries;
            int entry_count;
            struct fake_object **kernels;  /* one per entry */
            struct fake_object **modules;  /* one per context that asked */
            int module_count;
            struct fake_variable *variables; /* given to each module */
            int variable_count;
        } library;
        struct {
            struct fake_object *library;
            int entry;
        } kernel;
        struct {
            struct fake_object *module;
            char *name;
            int param_count;
            size_t param_offsets[FAKE_MAX_PARAMS];
            size_t param_sizes[FAKE_MAX_PARAMS];
            const struct fake_kernel *kernel; /* NULL: no host implementation */
            int emulation;                    /* emulation.c's id of its module's source; 0: none */
            int max_dynamic_shared;
        } func;
        struct {
            struct fake_graph *graph;
        } graph;
        struct {
            int device;
            unsigned int sm_count;
        } green;
        struct {
            int device;
            uint64_t release_threshold;
            uint64_t reserved_high;
            uint64_t used_high;
            int reuse[3];
            int handle_types;                   /* CUmemPoolProps.handleTypes (1: POSIX file descriptor) */
            struct fake_object *imported_from;  /* cuMemPoolImportFromShareableHandle: the exporter's pool */
            int access[FAKE_DEVICES];           /* CUmemAccess_flags per device (pool_ipc.c) */
        } pool;
    } u;
};

/* Where a copy's address points: fake device memory (or pinned host memory),
 * any host memory, or either (unified addressing, as cuMemcpy). */
enum fake_space { SPACE_DEVICE, SPACE_HOST, SPACE_UNIFIED };

/* Work on a stream: run at once, or recorded while the stream is capturing. */
enum fake_node_kind {
    NODE_KERNEL, NODE_COPY, NODE_MEMSET, NODE_HOST, NODE_RECORD, NODE_FREE, NODE_EMPTY, NODE_COPY_3D,
    NODE_CONDITIONAL,   /* graphs.c: if, while or switch over body graphs */
    NODE_SET_CONDITION, /* graphs.c: a condition's default value, set as a launch of its graph begins */
};

struct fake_node {
    int kind;
    int disabled; /* graph nodes: cuGraphNodeSetEnabled(0) in an executable graph */
    union {
        struct {
            struct fake_object *function;
            struct fake_launch launch;
            unsigned char *arg_bytes; /* copies of the arguments */
            void *arg_pointers[FAKE_MAX_PARAMS];
        } kernel;
        struct {
            CUdeviceptr dst, src;
            int dst_space, src_space; /* enum fake_space */
            size_t bytes;
            unsigned char *snapshot; /* deferred copies from pageable memory: the bytes at submission */
        } copy;
        struct {
            CUdeviceptr dst;
            unsigned int value;
            size_t element_size, count;
        } memset;
        struct {
            CUhostFn fn;
            void *data;
        } host;
        struct {
            CUdeviceptr dst, src;           /* the block's first byte on each side */
            size_t dst_pitch, src_pitch;    /* bytes per row */
            size_t dst_rows, src_rows;      /* rows per slice */
            size_t width, height, depth;    /* bytes per row, rows, slices */
        } copy_3d;                          /* NODE_COPY_3D: graph memcpy nodes (device or pinned host memory) */
        struct {
            uint64_t handle;              /* the condition (graphs.c), 1-based */
            int type;                     /* 0 if, 1 while, 2 switch (CUgraphConditionalNodeType) */
            unsigned int size;            /* bodies */
            struct fake_object **bodies;  /* in a graph: the body graphs, owned by the node */
            CUgraph *handles;             /* in a graph: their handles (the driver's phGraph_out) */
            struct fake_graph **copies;   /* elsewhere (executable graphs, queued work): copies of them */
        } conditional;
        struct {
            uint64_t handle;
            unsigned int value;
        } set_condition;                  /* NODE_SET_CONDITION */
        struct fake_object *event; /* NODE_RECORD */
        CUdeviceptr free_address;  /* NODE_FREE (cuMemFreeAsync) */
    } u;
};

struct fake_graph {
    struct fake_node *nodes;
    size_t count, capacity;
};

/* ---- shared between the library's files ---------------------------------- */

/* Device memory: bytes [address, address + bytes) inside one live allocation
 * (or pinned host allocation); NULL if not. The registry lock must be held. */
unsigned char *fake_device_bytes(CUdeviceptr address, size_t bytes);

/* Whether every granule of [address, address + bytes) of the VA range `range` is mapped and
 * accessible (vmm.c); lock held. */
int fake_vmm_accessible(const struct fake_object *range, CUdeviceptr address, size_t bytes);

/* arrays.c (lock held): the live array behind `handle`, or NULL. */
struct fake_object *fake_lookup_array(const void *handle);
/* Texture sampling and surface kernels (arrays.c), for kernels.c's table. */
CUresult fake_sample_kernel(const struct fake_launch *launch);
CUresult fake_scale_surface_kernel(const struct fake_launch *launch);

/* The host kernels, searched by name (kernels.c). */
const struct fake_kernel *fake_find_kernel(const char *name, int param_count, const size_t *param_sizes);

/* PTX-like module text: parses `text`; on success returns the entries (caller frees with
 * fake_free_entries) and their count; on failure returns a driver error and
 * writes a message into `log` (NUL-terminated, at most log_size bytes). */
CUresult fake_parse_module(const char *text, struct fake_entry **entries, int *count, char *log, size_t log_size);
void fake_free_entries(struct fake_entry *entries, int count);
/* The `.global` and `.const` variables of PTX-like module text (caller frees with fake_free_variables). */
CUresult fake_parse_variables(const char *text, struct fake_variable **variables, int *count);
void fake_free_variables(struct fake_variable *variables, int count);

/* Emulated kernels (emulation.c). Whether FAKECUDA_EMULATION=1 switched them on (then device
 * memory lives at its device address); how much of a module image is PTX (all of it, or what
 * precedes the source tests/fakenvrtc appends); the id of an image's source (0: none, or
 * emulation off); and a launch of a kernel whose module has a source. Lock held. */
int fake_emulation_enabled(void);
/* Frees the backing bytes of device memory or a module variable (memory.c). */
void fake_release_backing(struct fake_object *memory);
size_t fake_image_ptx_length(const char *image);
int fake_emulation_register(const char *image);
CUresult fake_emulate(const struct fake_object *function, const struct fake_launch *launch);

#endif
