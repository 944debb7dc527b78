/*
 * fakecuda (test double): handle registry, live-handle and misuse counters,
 * fault injection, and the control API (fakecuda_*) the Rust tests call.
 *
 * Handles are never pointers to memory: a handle encodes an index into the
 * registry, so a dangling, forged or double-freed handle is recognised and
 * refused instead of being dereferenced. Registry entries are kept after
 * destruction (marked dead) for that reason.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "registry.h"

#define EXPORT __attribute__((visibility("default")))

#define HANDLE_BASE 0xfa4e0000000ull
#define HANDLE_STRIDE 16ull
#define DEVICE_ADDRESS_BASE 0x3f0000000000ull
#define DEVICE_ALIGNMENT 256ull
#define EMULATION_PAGE 4096ull
#define TRACE_SIZE 1024
#define MAX_NAMED_FAULTS 8

static pthread_mutex_t lock;
static pthread_once_t lock_once = PTHREAD_ONCE_INIT;

static struct fake_object **objects;
static size_t object_count, object_capacity;
/* The objects not destroyed yet (primary contexts stay, live or not), in no
 * order: what lookups by address and walks over streams go through. */
static struct fake_object **present;
static size_t present_count, present_capacity;
static struct fake_object *primaries[FAKE_DEVICES];
static struct fake_object *pools[FAKE_DEVICES];
static CUdeviceptr next_address = DEVICE_ADDRESS_BASE;
static int initialized;

static int64_t live[KIND_COUNT];
static uint64_t calls, injected, double_frees, invalid_handles, orphaned;
static uint64_t fail_at;    /* absolute call number to fail; 0: none */
static uint64_t fail_every; /* fail every fail_every-th call; 0: none */
static CUresult fail_code;
static struct {
    char name[64];
    CUresult code;
} named_faults[MAX_NAMED_FAULTS];
static const char *trace[TRACE_SIZE];
static int environment_read;

static void init_lock(void) {
    pthread_mutexattr_t attributes;
    pthread_mutexattr_init(&attributes);
    pthread_mutexattr_settype(&attributes, PTHREAD_MUTEX_RECURSIVE);
    pthread_mutex_init(&lock, &attributes);
    pthread_mutexattr_destroy(&attributes);
}

void fake_lock(void) {
    pthread_once(&lock_once, init_lock);
    pthread_mutex_lock(&lock);
}

void fake_unlock(void) { pthread_mutex_unlock(&lock); }

static void add_named_fault(const char *name, CUresult code) {
    for (int i = 0; i < MAX_NAMED_FAULTS; i++) {
        if (named_faults[i].name[0] == 0 || strcmp(named_faults[i].name, name) == 0) {
            snprintf(named_faults[i].name, sizeof named_faults[i].name, "%s", name);
            named_faults[i].code = code;
            return;
        }
    }
}

/* FAKECUDA_FAIL_NTH="N:CODE" and FAKECUDA_FAIL_NAMED="cuName:CODE", read on the first call. */
static void read_environment(void) {
    environment_read = 1;
    const char *nth = getenv("FAKECUDA_FAIL_NTH");
    unsigned long long n;
    int code;
    if (nth && sscanf(nth, "%llu:%d", &n, &code) == 2 && n > 0) {
        fail_at = calls + n;
        fail_code = code;
    }
    const char *named = getenv("FAKECUDA_FAIL_NAMED");
    char name[64];
    if (named && sscanf(named, "%63[^:]:%d", name, &code) == 2) add_named_fault(name, code);
}

CUresult fake_enter(const char *name, int counted) {
    CUresult result = CUDA_SUCCESS;
    fake_lock();
    if (!environment_read) read_environment();
    if (counted) {
        trace[calls % TRACE_SIZE] = name;
        calls++;
        if (fail_at != 0 && calls == fail_at) {
            fail_at = 0;
            injected++;
            result = fail_code;
        } else if (fail_every != 0 && calls % fail_every == 0) {
            injected++;
            result = fail_code;
        }
    }
    for (int i = 0; result == CUDA_SUCCESS && i < MAX_NAMED_FAULTS && named_faults[i].name[0]; i++) {
        if (named_faults[i].code != CUDA_SUCCESS && strcmp(named_faults[i].name, name) == 0) {
            injected++;
            result = named_faults[i].code;
        }
    }
    fake_unlock();
    return result;
}

int fake_initialized(void) { return initialized; }
void fake_set_initialized(void) { initialized = 1; }

/* ---- registry ------------------------------------------------------------- */

static int reserve(struct fake_object ***array, size_t count, size_t *capacity) {
    if (count < *capacity) return 1;
    size_t grown_capacity = *capacity ? *capacity * 2 : 256;
    struct fake_object **grown = realloc(*array, grown_capacity * sizeof *grown);
    if (!grown) return 0;
    *array = grown;
    *capacity = grown_capacity;
    return 1;
}

struct fake_object *fake_new(int kind, struct fake_object *context) {
    if (!reserve(&objects, object_count, &object_capacity)) return NULL;
    if (!reserve(&present, present_count, &present_capacity)) return NULL;
    struct fake_object *object = calloc(1, sizeof *object);
    if (!object) return NULL;
    object->kind = kind;
    object->live = 1;
    object->index = object_count;
    object->context = context;
    objects[object_count++] = object;
    object->present_slot = present_count;
    present[present_count++] = object;
    fake_count_live(kind, 1);
    return object;
}

void *fake_handle(const struct fake_object *object) {
    return object ? (void *)(uintptr_t)(HANDLE_BASE + object->index * HANDLE_STRIDE) : NULL;
}

static struct fake_object *decode(const void *handle) {
    uintptr_t value = (uintptr_t)handle;
    if (value < HANDLE_BASE || (value - HANDLE_BASE) % HANDLE_STRIDE != 0) return NULL;
    uint64_t index = (value - HANDLE_BASE) / HANDLE_STRIDE;
    return index < object_count ? objects[index] : NULL;
}

struct fake_object *fake_lookup_quiet(const void *handle, int kind) {
    struct fake_object *object = decode(handle);
    return object && object->kind == kind && object->live ? object : NULL;
}

struct fake_object *fake_lookup(const void *handle, int kind) {
    struct fake_object *object = fake_lookup_quiet(handle, kind);
    if (!object) fake_record_invalid();
    return object;
}

struct fake_object *fake_lookup_context(const void *handle) {
    struct fake_object *object = decode(handle);
    if (!object || (object->kind != KIND_CONTEXT && object->kind != KIND_PRIMARY) || !object->live) {
        fake_record_invalid();
        return NULL;
    }
    return object;
}

struct fake_object *fake_lookup_for_destroy(const void *handle, int kind) {
    struct fake_object *object = decode(handle);
    if (object && object->kind == kind && !object->live) {
        fake_record_double_free();
        return NULL;
    }
    return fake_lookup(handle, kind);
}

void fake_free_node(struct fake_node *node) {
    if (node->kind == NODE_KERNEL) free(node->u.kernel.arg_bytes);
    if (node->kind == NODE_COPY) free(node->u.copy.snapshot);
    if (node->kind == NODE_CONDITIONAL) {
        for (unsigned int i = 0; i < node->u.conditional.size; i++) {
            /* a context's teardown may have destroyed the bodies already */
            if (node->u.conditional.bodies && node->u.conditional.bodies[i]->live) {
                fake_destroy(node->u.conditional.bodies[i]);
            }
            if (node->u.conditional.copies) fake_free_graph(node->u.conditional.copies[i]);
        }
        free(node->u.conditional.bodies);
        free(node->u.conditional.handles);
        free(node->u.conditional.copies);
        node->u.conditional.bodies = NULL;
        node->u.conditional.handles = NULL;
        node->u.conditional.copies = NULL;
    }
}

void fake_free_graph(struct fake_graph *graph) {
    if (!graph) return;
    for (size_t i = 0; i < graph->count; i++) fake_free_node(&graph->nodes[i]);
    free(graph->nodes);
    free(graph);
}

void fake_release_memory(struct fake_object *object) {
    switch (object->kind) {
    case KIND_DEVICE_MEMORY:
    case KIND_GLOBAL:
        fake_release_backing(object);
        object->u.mem.bytes = NULL;
        free(object->u.mem.name);
        object->u.mem.name = NULL;
        break;
    case KIND_HOST_MEMORY:
        if (!object->u.host.registered) free(object->u.host.pointer);
        break;
    case KIND_ARRAY:
        free(object->u.array.bytes);
        object->u.array.bytes = NULL;
        break;
    case KIND_VA_RANGE:
        free(object->u.vmm.bytes);
        object->u.vmm.bytes = NULL;
        free(object->u.vmm.owners);
        object->u.vmm.owners = NULL;
        free(object->u.vmm.access);
        object->u.vmm.access = NULL;
        break;
    case KIND_MODULE:
    case KIND_LIBRARY_MODULE:
        free(object->u.module.functions);
        object->u.module.functions = NULL;
        free(object->u.module.variables);
        object->u.module.variables = NULL;
        break;
    case KIND_LIBRARY:
        fake_free_entries(object->u.library.entries, object->u.library.entry_count);
        object->u.library.entries = NULL;
        free(object->u.library.kernels);
        object->u.library.kernels = NULL;
        free(object->u.library.modules);
        object->u.library.modules = NULL;
        fake_free_variables(object->u.library.variables, object->u.library.variable_count);
        object->u.library.variables = NULL;
        break;
    case KIND_FUNCTION:
        free(object->u.func.name);
        object->u.func.name = NULL;
        break;
    case KIND_GRAPH:
    case KIND_GRAPH_BODY:
    case KIND_GRAPH_EXEC:
        fake_free_graph(object->u.graph.graph);
        object->u.graph.graph = NULL;
        break;
    case KIND_STREAM:
        if (object->u.stream.capture_owned) { /* a plain capture's graph object goes with it */
            fake_destroy(object->u.stream.capture_target);
        } else if (!object->u.stream.capture_target) {
            fake_free_graph(object->u.stream.capture); /* else the graph's */
        }
        object->u.stream.capture = NULL;
        fake_free_graph(object->u.stream.queue);
        object->u.stream.queue = NULL;
        break;
    case KIND_CONTEXT:
    case KIND_PRIMARY:
        fake_free_graph(object->u.ctx.legacy_queue);
        object->u.ctx.legacy_queue = NULL;
        break;
    default:
        break;
    }
}

CUresult fake_destroy(struct fake_object *object) {
    if (!object->live) {
        fake_record_double_free();
        return CUDA_ERROR_INVALID_HANDLE;
    }
    if (object->kind == KIND_MODULE || object->kind == KIND_LIBRARY_MODULE) {
        for (int i = 0; i < object->u.module.function_count; i++) {
            if (object->u.module.functions[i]->live) fake_destroy(object->u.module.functions[i]);
        }
        for (int i = 0; i < object->u.module.variable_count; i++) {
            if (object->u.module.variables[i]->live) fake_destroy(object->u.module.variables[i]);
        }
    }
    if (object->kind == KIND_LIBRARY) {
        for (int i = 0; i < object->u.library.entry_count; i++) {
            if (object->u.library.kernels[i]) fake_destroy(object->u.library.kernels[i]);
        }
        for (int i = 0; i < object->u.library.module_count; i++) {
            if (object->u.library.modules[i]->live) fake_destroy(object->u.library.modules[i]);
        }
    }
    fake_release_memory(object);
    object->live = 0;
    fake_count_live(object->kind, -1);
    present[object->present_slot] = present[--present_count];
    present[object->present_slot]->present_slot = object->present_slot;
    return CUDA_SUCCESS;
}

void fake_teardown_context(struct fake_object *context) {
    /* backwards: destroying moves the last object into the freed slot, already visited */
    for (size_t i = present_count; i-- > 0;) {
        if (i >= present_count) continue;
        struct fake_object *object = present[i];
        if (!object->live || object->context != context || object->kind == KIND_FUNCTION ||
            object->kind == KIND_GLOBAL || object->kind == KIND_GRAPH_BODY) {
            continue; /* owned by their modules, or by their conditional nodes */
        }
        /* a library's module in this context goes with it, as in the driver; anything else was orphaned */
        if (object->kind != KIND_LIBRARY_MODULE) fake_record_orphan();
        fake_destroy(object);
    }
}

size_t fake_present_count(void) { return present_count; }
struct fake_object *fake_present_at(size_t index) { return present[index]; }

/* ---- memory ---------------------------------------------------------------- */

CUdeviceptr fake_reserve_address(size_t bytes) {
    /* With emulated kernels, whole pages, so that the memory can be mapped at its address, and
     * an unmapped page after each range: an emulated read past the end faults. */
    CUdeviceptr alignment = fake_emulation_enabled() ? EMULATION_PAGE : DEVICE_ALIGNMENT;
    CUdeviceptr address = (next_address + alignment - 1) / alignment * alignment;
    next_address = address + (bytes + alignment - 1) / alignment * alignment + alignment;
    return address;
}

int fake_is_device_address(CUdeviceptr address) {
    return address >= DEVICE_ADDRESS_BASE && address < next_address + DEVICE_ALIGNMENT;
}

static CUdeviceptr base_of(const struct fake_object *object) {
    switch (object->kind) {
    case KIND_HOST_MEMORY: return (CUdeviceptr)(uintptr_t)object->u.host.pointer;
    case KIND_VA_RANGE: return object->u.vmm.address;
    default: return object->u.mem.address;
    }
}

static size_t size_of(const struct fake_object *object) {
    switch (object->kind) {
    case KIND_HOST_MEMORY: return object->u.host.size;
    case KIND_VA_RANGE: return object->u.vmm.size;
    default: return object->u.mem.size;
    }
}

struct fake_object *fake_memory_at_base(CUdeviceptr address, int kind, int *was_freed) {
    *was_freed = 0;
    for (size_t i = object_count; i-- > 0;) {
        struct fake_object *object = objects[i];
        if (object->kind != kind || base_of(object) != address) continue;
        if (object->live) return object;
        *was_freed = 1;
    }
    return NULL;
}

struct fake_object *fake_memory_containing(CUdeviceptr address, size_t bytes) {
    for (size_t i = 0; i < present_count; i++) {
        struct fake_object *object = present[i];
        int memory = object->kind == KIND_DEVICE_MEMORY || object->kind == KIND_HOST_MEMORY ||
                     object->kind == KIND_GLOBAL || object->kind == KIND_VA_RANGE;
        if (!object->live || !memory) continue;
        CUdeviceptr base = base_of(object);
        if (address >= base && address - base <= size_of(object) && bytes <= size_of(object) - (address - base)) {
            /* a virtual range holds memory only where it is mapped and accessible */
            if (object->kind == KIND_VA_RANGE && !fake_vmm_accessible(object, address, bytes)) return NULL;
            return object;
        }
    }
    return NULL;
}

unsigned char *fake_device_bytes(CUdeviceptr address, size_t bytes) {
    struct fake_object *object = fake_memory_containing(address, bytes);
    if (!object) return NULL;
    if (object->kind == KIND_HOST_MEMORY) return (unsigned char *)(uintptr_t)address;
    if (object->kind == KIND_VA_RANGE) return object->u.vmm.bytes + (address - object->u.vmm.address);
    return object->u.mem.bytes + (address - object->u.mem.address);
}

struct fake_object *fake_primary(int device) { return primaries[device]; }
void fake_set_primary(int device, struct fake_object *context) { primaries[device] = context; }

struct fake_object *fake_pool(int device) {
    if (!pools[device]) {
        pools[device] = fake_new(KIND_DEFAULT_POOL, NULL);
        if (pools[device]) pools[device]->u.pool.device = device;
    }
    return pools[device];
}

uint64_t fake_memory_used(int device, const struct fake_object *pool) {
    uint64_t used = 0;
    for (size_t i = 0; i < present_count; i++) {
        struct fake_object *object = present[i];
        if (!object->live || object->kind != KIND_DEVICE_MEMORY) continue;
        if (pool ? object->u.mem.pool == pool : object->context->u.ctx.device == device) used += object->u.mem.size;
    }
    return used;
}

/* ---- counters ----------------------------------------------------------- */

void fake_count_live(int kind, int delta) { live[kind] += delta; }
void fake_record_invalid(void) { invalid_handles++; }
void fake_record_double_free(void) { double_frees++; }
void fake_record_orphan(void) { orphaned++; }
int64_t fake_live(int kind) { return live[kind]; }

/* ---- control API ------------------------------------------------------------ */

/* Clears injected faults, the call counter, the trace and the misuse counters.
 * Live objects are kept (and still counted). */
EXPORT void fakecuda_reset(void) {
    fake_lock();
    environment_read = 1;
    calls = injected = double_frees = invalid_handles = orphaned = 0;
    fail_at = fail_every = 0;
    memset(named_faults, 0, sizeof named_faults);
    memset(trace, 0, sizeof trace);
    fake_unlock();
}

/* The n-th counted driver call from now (1: the next one) returns `code`, once.
 * n = 0 disarms. */
EXPORT void fakecuda_fail_nth(uint64_t n, int code) {
    fake_lock();
    fail_at = n ? calls + n : 0;
    fail_code = code;
    fake_unlock();
}

/* Every k-th counted call from now on returns `code` (k = 0 stops): with
 * several threads, which calls fail is up to the scheduler. */
EXPORT void fakecuda_fail_every(uint64_t k, int code) {
    fake_lock();
    fail_every = k;
    fail_code = code;
    fake_unlock();
}

/* Every call of the driver function `name` returns `code` (0: stop failing it). */
EXPORT void fakecuda_fail_named(const char *name, int code) {
    fake_lock();
    if (name) add_named_fault(name, code);
    fake_unlock();
}

/* Destroys every live object as if the program had released it (not counted
 * as misuse) and drops every primary-context retain, so that a test can start
 * again from nothing after a run that leaked. Returns how many were live. */
EXPORT int64_t fakecuda_destroy_all(void) {
    fake_lock();
    int64_t destroyed = 0;
    for (size_t i = present_count; i-- > 0;) {
        if (i >= present_count) continue;
        struct fake_object *object = present[i];
        if (!object->live || object->kind >= KIND_FUNCTION) continue; /* owned by others, or not counted */
        if (object->kind == KIND_PRIMARY) {
            destroyed += object->u.ctx.retains;
            fake_count_live(KIND_PRIMARY, -object->u.ctx.retains);
            object->u.ctx.retains = 0;
            object->u.ctx.peers = 0;
            object->live = 0;
            continue;
        }
        destroyed++;
        fake_destroy(object);
    }
    fake_unlock();
    return destroyed;
}

/* Disarms every injected fault; counters are kept. */
EXPORT void fakecuda_clear_faults(void) {
    fake_lock();
    fail_at = fail_every = 0;
    memset(named_faults, 0, sizeof named_faults);
    fake_unlock();
}

/* Counted driver calls since the last reset (cuGetErrorName/String and
 * cuDriverGetVersion are not counted and never fail by number). */
EXPORT uint64_t fakecuda_calls(void) {
    fake_lock();
    uint64_t result = calls;
    fake_unlock();
    return result;
}

EXPORT uint64_t fakecuda_injected(void) {
    fake_lock();
    uint64_t result = injected;
    fake_unlock();
    return result;
}

/* Live handles of one kind (see enum fake_kind); primary contexts count retains. */
EXPORT int64_t fakecuda_live(int kind) {
    if (kind <= 0 || kind >= KIND_COUNT) return -1;
    fake_lock();
    int64_t result = live[kind];
    fake_unlock();
    return result;
}

/* All live handles a program must release: every kind but functions and default pools. */
EXPORT int64_t fakecuda_live_handles(void) {
    fake_lock();
    int64_t total = 0;
    for (int kind = KIND_CONTEXT; kind < KIND_FUNCTION; kind++) total += live[kind];
    fake_unlock();
    return total;
}

EXPORT uint64_t fakecuda_double_frees(void) {
    fake_lock();
    uint64_t result = double_frees;
    fake_unlock();
    return result;
}

/* Uses of unknown or destroyed handles and pointers (use after free). */
EXPORT uint64_t fakecuda_invalid_handles(void) {
    fake_lock();
    uint64_t result = invalid_handles;
    fake_unlock();
    return result;
}

/* Objects destroyed implicitly because their context was destroyed or its
 * last primary retain released while they were alive. */
EXPORT uint64_t fakecuda_orphaned(void) {
    fake_lock();
    uint64_t result = orphaned;
    fake_unlock();
    return result;
}

/* The names of the last counted calls since reset (at most 1024), oldest
 * first, separated by spaces. Returns the length the whole text needs. */
EXPORT size_t fakecuda_trace(char *buffer, size_t size) {
    fake_lock();
    size_t length = 0;
    uint64_t first = calls > TRACE_SIZE ? calls - TRACE_SIZE : 0;
    for (uint64_t i = first; i < calls; i++) {
        const char *name = trace[i % TRACE_SIZE];
        if (!name) continue;
        int written = snprintf(buffer && length < size ? buffer + length : NULL, buffer && length < size ? size - length : 0,
                               "%s%s", length ? " " : "", name);
        length += (size_t)written;
    }
    fake_unlock();
    return length;
}
