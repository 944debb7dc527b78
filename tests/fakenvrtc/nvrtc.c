/* fakenvrtc (test double): NVRTC as it is, plus the source. Every call goes to the real NVRTC
 * (the library FAKENVRTC_REAL names); the one difference is the PTX a program hands out, which
 * carries after the real PTX the program's source, its headers and its options, behind the
 * line "//@fakecuda-source"; and as the stand-in driver loads PTX only, a compile for a real
 * architecture (-arch=sm_NN) compiles for its virtual one, and the CUBIN is that PTX. The stand-in driver (tests/fakecuda/emulation.c) compiles that
 * source for the host and runs its kernels; a real driver never sees this PTX (the tests that
 * load this library run on the stand-in).
 *
 * What follows the marker line, in order: "//@option <option>" lines; "//@name <lowered name>
 * <name expression>" lines, one per name expression that lowered; for each header
 * "//@header <bytes> <include name>" and its bytes; "//@source <bytes> <name>" and the bytes
 * of the source. */
#include <dirent.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))

typedef int nvrtcResult;
typedef struct _nvrtcProgram *nvrtcProgram;

enum { NVRTC_ERROR_OUT_OF_MEMORY = 1, NVRTC_ERROR_INVALID_INPUT = 3, NVRTC_ERROR_INTERNAL_ERROR = 11 };

/* What a program was created and compiled with, and the text to append to its PTX. */
struct program {
    nvrtcProgram handle;
    char *appendix; /* built when the compile succeeds */
    size_t appendix_length;
    char *description; /* headers and source, as they appear after the options */
    size_t description_length;
    char **names; /* the name expressions added */
    int name_count;
    struct program *next;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct program *programs;
static void *real;

/* Loads the `libnvrtc-builtins.so.*` files beside the real NVRTC at `path` first: NVRTC opens
 * its builtins by file name, which the loader finds only where it already holds them (as
 * cuda-sys does for NVRTC itself). */
static void load_builtins(const char *path) {
    char folder[4096];
    snprintf(folder, sizeof folder, "%s", path);
    char *slash = strrchr(folder, '/');
    if (!slash) return;
    *slash = 0;
    DIR *dir = opendir(folder);
    if (!dir) return;
    for (struct dirent *entry; (entry = readdir(dir)) != NULL;) {
        if (strncmp(entry->d_name, "libnvrtc-builtins.so.", strlen("libnvrtc-builtins.so.")) != 0) continue;
        char file[8192];
        snprintf(file, sizeof file, "%s/%s", folder, entry->d_name);
        dlopen(file, RTLD_NOW | RTLD_GLOBAL); /* kept for the process's life */
    }
    closedir(dir);
}

/* The real NVRTC's `name`, or NULL (the caller answers NVRTC_ERROR_INTERNAL_ERROR). */
static void *resolve(const char *name) {
    pthread_mutex_lock(&lock);
    if (!real) {
        const char *path = getenv("FAKENVRTC_REAL");
        if (path && *path) {
            load_builtins(path);
            real = dlopen(path, RTLD_NOW | RTLD_LOCAL);
        }
        if (!real) fprintf(stderr, "fakenvrtc: cannot open the real NVRTC (FAKENVRTC_REAL=%s)\n", path ? path : "");
    }
    pthread_mutex_unlock(&lock);
    return real ? dlsym(real, name) : NULL;
}

#define FORWARD(name, params, args)                                                                              \
    typedef nvrtcResult(*name##_fn) params;                                                                        \
    EXPORT nvrtcResult name params {                                                                               \
        name##_fn f = (name##_fn)resolve(#name);                                                                   \
        return f ? f args : NVRTC_ERROR_INTERNAL_ERROR;                                                            \
    }

/* Text growing at its end; `failed` once an allocation failed. */
struct text {
    char *bytes;
    size_t length, capacity;
    int failed;
};

static void append(struct text *text, const char *bytes, size_t length) {
    if (text->failed) return;
    if (text->length + length + 1 > text->capacity) {
        size_t capacity = (text->length + length + 1) * 2;
        char *grown = realloc(text->bytes, capacity);
        if (!grown) {
            text->failed = 1;
            return;
        }
        text->bytes = grown;
        text->capacity = capacity;
    }
    memcpy(text->bytes + text->length, bytes, length);
    text->length += length;
    text->bytes[text->length] = 0;
}

static void append_blob(struct text *text, const char *kind, const char *name, const char *bytes) {
    char line[512];
    size_t length = bytes ? strlen(bytes) : 0;
    snprintf(line, sizeof line, "//@%s %zu %s\n", kind, length, name ? name : "source.cu");
    append(text, line, strlen(line));
    append(text, bytes ? bytes : "", length);
}

static struct program *find(nvrtcProgram handle) {
    for (struct program *p = programs; p; p = p->next) {
        if (p->handle == handle) return p;
    }
    return NULL;
}

typedef nvrtcResult (*create_fn)(nvrtcProgram *, const char *, const char *, int, const char *const *,
                                 const char *const *);
EXPORT nvrtcResult nvrtcCreateProgram(nvrtcProgram *prog, const char *src, const char *name, int numHeaders,
                                      const char *const *headers, const char *const *includeNames) {
    create_fn create = (create_fn)resolve("nvrtcCreateProgram");
    if (!create) return NVRTC_ERROR_INTERNAL_ERROR;
    nvrtcResult result = create(prog, src, name, numHeaders, headers, includeNames);
    if (result != 0) return result;
    struct text description = {0};
    for (int i = 0; i < numHeaders && headers && includeNames; i++) {
        append_blob(&description, "header", includeNames[i], headers[i]);
    }
    append_blob(&description, "source", name, src);
    struct program *program = calloc(1, sizeof *program);
    if (!program || description.failed) {
        free(program);
        free(description.bytes);
        return NVRTC_ERROR_OUT_OF_MEMORY;
    }
    program->handle = *prog;
    program->description = description.bytes;
    program->description_length = description.length;
    pthread_mutex_lock(&lock);
    program->next = programs;
    programs = program;
    pthread_mutex_unlock(&lock);
    return 0;
}

typedef nvrtcResult (*destroy_fn)(nvrtcProgram *);
EXPORT nvrtcResult nvrtcDestroyProgram(nvrtcProgram *prog) {
    destroy_fn destroy = (destroy_fn)resolve("nvrtcDestroyProgram");
    if (!destroy) return NVRTC_ERROR_INTERNAL_ERROR;
    nvrtcProgram handle = prog ? *prog : NULL;
    nvrtcResult result = destroy(prog);
    if (result != 0) return result;
    pthread_mutex_lock(&lock);
    for (struct program **link = &programs; *link; link = &(*link)->next) {
        if ((*link)->handle == handle) {
            struct program *gone = *link;
            *link = gone->next;
            free(gone->appendix);
            free(gone->description);
            for (int i = 0; i < gone->name_count; i++) free(gone->names[i]);
            free(gone->names);
            free(gone);
            break;
        }
    }
    pthread_mutex_unlock(&lock);
    return 0;
}

typedef nvrtcResult (*compile_fn)(nvrtcProgram, int, const char *const *);
typedef nvrtcResult (*lowered_fn)(nvrtcProgram, const char *, const char **);
EXPORT nvrtcResult nvrtcCompileProgram(nvrtcProgram prog, int numOptions, const char *const *options) {
    compile_fn compile = (compile_fn)resolve("nvrtcCompileProgram");
    if (!compile) return NVRTC_ERROR_INTERNAL_ERROR;
    /* A real architecture becomes its virtual one, so that the "CUBIN" is PTX (see below). */
    const char **virtual_options = calloc((size_t)(numOptions > 0 ? numOptions : 1), sizeof *virtual_options);
    char (*rewritten)[64] = calloc((size_t)(numOptions > 0 ? numOptions : 1), sizeof *rewritten);
    if (!virtual_options || !rewritten) {
        free(virtual_options);
        free(rewritten);
        return NVRTC_ERROR_OUT_OF_MEMORY;
    }
    for (int i = 0; i < numOptions && options; i++) {
        const char *o = options[i], *arch = NULL;
        if (strncmp(o, "-arch=sm_", 9) == 0) arch = o + 9;
        if (strncmp(o, "--gpu-architecture=sm_", 22) == 0) arch = o + 22;
        virtual_options[i] = o;
        if (arch && strlen(arch) < 32) {
            snprintf(rewritten[i], sizeof rewritten[i], "-arch=compute_%s", arch);
            virtual_options[i] = rewritten[i];
        }
    }
    nvrtcResult result = compile(prog, numOptions, options ? virtual_options : NULL);
    free(virtual_options);
    free(rewritten);
    if (result != 0) return result;
    /* resolve takes the lock itself */
    lowered_fn lowered_name = (lowered_fn)resolve("nvrtcGetLoweredName");
    pthread_mutex_lock(&lock);
    struct program *program = find(prog);
    if (program) {
        struct text appendix = {0};
        append(&appendix, "\n//@fakecuda-source\n", strlen("\n//@fakecuda-source\n"));
        for (int i = 0; i < numOptions && options; i++) {
            append(&appendix, "//@option ", strlen("//@option "));
            append(&appendix, options[i], strlen(options[i]));
            append(&appendix, "\n", 1);
        }
        for (int i = 0; i < program->name_count && lowered_name; i++) {
            const char *lowered = NULL;
            if (lowered_name(prog, program->names[i], &lowered) != 0 || !lowered) continue;
            append(&appendix, "//@name ", strlen("//@name "));
            append(&appendix, lowered, strlen(lowered));
            append(&appendix, " ", 1);
            append(&appendix, program->names[i], strlen(program->names[i]));
            append(&appendix, "\n", 1);
        }
        append(&appendix, program->description, program->description_length);
        free(program->appendix);
        program->appendix = appendix.failed ? NULL : appendix.bytes;
        program->appendix_length = appendix.failed ? 0 : appendix.length;
        if (appendix.failed) {
            free(appendix.bytes);
            result = NVRTC_ERROR_OUT_OF_MEMORY;
        }
    }
    pthread_mutex_unlock(&lock);
    return result;
}

typedef nvrtcResult (*size_fn)(nvrtcProgram, size_t *);
typedef nvrtcResult (*bytes_fn)(nvrtcProgram, char *);

/* The appendix of `prog` (empty where it has none). */
static size_t appendix_of(nvrtcProgram prog, const char **bytes) {
    pthread_mutex_lock(&lock);
    struct program *program = find(prog);
    *bytes = program && program->appendix ? program->appendix : "";
    size_t length = program && program->appendix ? program->appendix_length : 0;
    pthread_mutex_unlock(&lock);
    return length;
}

EXPORT nvrtcResult nvrtcGetPTXSize(nvrtcProgram prog, size_t *ptxSizeRet) {
    size_fn size = (size_fn)resolve("nvrtcGetPTXSize");
    if (!size) return NVRTC_ERROR_INTERNAL_ERROR;
    if (!ptxSizeRet) return NVRTC_ERROR_INVALID_INPUT;
    nvrtcResult result = size(prog, ptxSizeRet);
    const char *appendix;
    if (result == 0) *ptxSizeRet += appendix_of(prog, &appendix);
    return result;
}

EXPORT nvrtcResult nvrtcGetPTX(nvrtcProgram prog, char *ptx) {
    size_fn size = (size_fn)resolve("nvrtcGetPTXSize");
    bytes_fn get = (bytes_fn)resolve("nvrtcGetPTX");
    if (!size || !get) return NVRTC_ERROR_INTERNAL_ERROR;
    size_t real_size;
    nvrtcResult result = size(prog, &real_size);
    if (result == 0) result = get(prog, ptx);
    if (result != 0 || !ptx || real_size == 0) return result;
    const char *appendix;
    size_t length = appendix_of(prog, &appendix);
    memcpy(ptx + real_size - 1, appendix, length);
    ptx[real_size - 1 + length] = 0;
    return 0;
}

typedef nvrtcResult (*add_name_fn)(nvrtcProgram, const char *);
EXPORT nvrtcResult nvrtcAddNameExpression(nvrtcProgram prog, const char *name_expression) {
    add_name_fn add = (add_name_fn)resolve("nvrtcAddNameExpression");
    if (!add) return NVRTC_ERROR_INTERNAL_ERROR;
    nvrtcResult result = add(prog, name_expression);
    if (result != 0 || !name_expression || strchr(name_expression, '\n')) return result;
    pthread_mutex_lock(&lock);
    struct program *program = find(prog);
    char **grown = program ? realloc(program->names, sizeof *grown * (size_t)(program->name_count + 1)) : NULL;
    char *copy = grown ? strdup(name_expression) : NULL;
    if (grown) program->names = grown;
    if (copy) program->names[program->name_count++] = copy;
    pthread_mutex_unlock(&lock);
    return program && !copy ? NVRTC_ERROR_OUT_OF_MEMORY : 0;
}
FORWARD(nvrtcGetLoweredName,
        (nvrtcProgram prog, const char *name_expression, const char **lowered_name), (prog, name_expression, lowered_name))
/* The stand-in driver loads PTX only: a CUBIN asked for is the PTX (of the virtual
 * architecture the compile was moved to). */
EXPORT nvrtcResult nvrtcGetCUBINSize(nvrtcProgram prog, size_t *size) { return nvrtcGetPTXSize(prog, size); }
EXPORT nvrtcResult nvrtcGetCUBIN(nvrtcProgram prog, char *cubin) { return nvrtcGetPTX(prog, cubin); }
FORWARD(nvrtcGetLTOIRSize, (nvrtcProgram prog, size_t *size), (prog, size))
FORWARD(nvrtcGetLTOIR, (nvrtcProgram prog, char *ltoir), (prog, ltoir))
FORWARD(nvrtcGetOptiXIRSize, (nvrtcProgram prog, size_t *size), (prog, size))
FORWARD(nvrtcGetOptiXIR, (nvrtcProgram prog, char *optixir), (prog, optixir))
FORWARD(nvrtcGetProgramLogSize, (nvrtcProgram prog, size_t *size), (prog, size))
FORWARD(nvrtcGetProgramLog, (nvrtcProgram prog, char *log), (prog, log))
FORWARD(nvrtcGetNumSupportedArchs, (int *count), (count))
FORWARD(nvrtcGetSupportedArchs, (int *archs), (archs))
FORWARD(nvrtcVersion, (int *major, int *minor), (major, minor))
FORWARD(nvrtcGetPCHCreateStatus, (nvrtcProgram prog), (prog))
FORWARD(nvrtcGetPCHHeapSize, (size_t *size), (size))
FORWARD(nvrtcSetPCHHeapSize, (size_t size), (size))
FORWARD(nvrtcGetPCHHeapSizeRequired, (nvrtcProgram prog, size_t *size),
        (prog, size))
FORWARD(nvrtcSetFlowCallback,
        (nvrtcProgram prog, int (*callback)(void *, void *), void *payload), (prog, callback, payload))

typedef const char *(*error_string_fn)(nvrtcResult);
EXPORT const char *nvrtcGetErrorString(nvrtcResult result) {
    error_string_fn f = (error_string_fn)resolve("nvrtcGetErrorString");
    return f ? f(result) : "NVRTC_ERROR_INTERNAL_ERROR (fakenvrtc: no real NVRTC)";
}
