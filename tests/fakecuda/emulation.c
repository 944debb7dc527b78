/*
 * fakecuda (test double): emulated kernels. With FAKECUDA_EMULATION=1 in the environment, a
 * module image that carries its CUDA C++ source after the PTX (what tests/fakenvrtc hands out)
 * has kernels that run: on their first launch the source is compiled by the host C++ compiler
 * (FAKECUDA_CXX, else CXX, else c++) with emulate.hpp first, into a shared object kept under
 * FAKECUDA_EMULATION_DIR (else $TMPDIR or /tmp, in fakecuda-emulation-<uid>) by a hash of the
 * source, and each launch runs the kernel's host twin over the grid (see emulate.hpp for how
 * threads, barriers and warp collectives are emulated). Device memory is then mapped at its
 * device address (memory.c), so the kernels' pointers are host pointers.
 *
 * The few PTX `asm` statements of cuda-core's generated code are replaced by host code first;
 * any other `asm` fails the compile, which fails the launch with the compiler's output on
 * stderr. A kernel with a C++ (mangled) name is emulated where the program named it by a name
 * expression (a template's instance, which tests/fakenvrtc lists with its lowered name).
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "driver.h"

#define MARKER "\n//@fakecuda-source\n"
#define MAX_OPTIONS 64

/* emulate.hpp, embedded at build time (build.rs passes its path). */
__asm__(".section .rodata\n"
        ".globl fake_emulate_hpp\n"
        ".hidden fake_emulate_hpp\n"
        "fake_emulate_hpp:\n"
        ".incbin \"" FAKECUDA_EMULATE_HPP "\"\n"
        ".byte 0\n"
        ".previous\n");
extern const char fake_emulate_hpp[] __attribute__((visibility("hidden")));

/* A source seen in an image: its text after the marker, and once compiled its library. */
struct emulation {
    unsigned long long hash;
    char *text;
    void *library;
    int state; /* 0: not compiled yet; 1: compiled; -1: the compile failed */
};

static struct emulation *emulations;
static size_t emulation_count;
static int enabled = -1;

int fake_emulation_enabled(void) {
    if (enabled < 0) {
        const char *setting = getenv("FAKECUDA_EMULATION");
        enabled = setting && setting[0] == '1';
    }
    return enabled;
}

size_t fake_image_ptx_length(const char *image) {
    const char *marker = strstr(image, MARKER);
    return marker ? (size_t)(marker - image) : strlen(image);
}

static unsigned long long fnv1a(const char *text) {
    unsigned long long hash = 0xcbf29ce484222325ull;
    for (const unsigned char *p = (const unsigned char *)text; *p; p++) hash = (hash ^ *p) * 0x100000001b3ull;
    for (const unsigned char *p = (const unsigned char *)fake_emulate_hpp; *p; p++) hash = (hash ^ *p) * 0x100000001b3ull;
    return hash;
}

int fake_emulation_register(const char *image) {
    if (!fake_emulation_enabled()) return 0;
    const char *marker = strstr(image, MARKER);
    if (!marker) return 0;
    const char *text = marker + strlen(MARKER);
    unsigned long long hash = fnv1a(text);
    for (size_t i = 0; i < emulation_count; i++) {
        if (emulations[i].hash == hash && strcmp(emulations[i].text, text) == 0) return (int)i + 1;
    }
    struct emulation *grown = realloc(emulations, sizeof *grown * (emulation_count + 1));
    if (!grown) return 0;
    emulations = grown;
    char *copy = strdup(text);
    if (!copy) return 0;
    emulations[emulation_count] = (struct emulation){hash, copy, NULL, 0};
    return (int)++emulation_count;
}

/* ---- writing the host source ---------------------------------------------------------- */

static int write_file(const char *path, const char *bytes, size_t length) {
    FILE *file = fopen(path, "wb");
    if (!file) return 0;
    int ok = fwrite(bytes, 1, length, file) == length;
    return fclose(file) == 0 && ok;
}

/* PTX inline assembly of cuda-core's generated code, and its host equivalent. */
static const struct {
    const char *ptx, *host;
} asm_statements[] = {
    {"asm(\"cvt.rn.f16.f32 %0, %1;\" : \"=h\"(bits) : \"f\"(f));", "bits = fakecuda_f16_from_f32(f);"},
    {"asm(\"cvt.rn.f16.f64 %0, %1;\" : \"=h\"(bits) : \"d\"(d));", "bits = fakecuda_f16_from_f64(d);"},
    {"asm(\"cvt.f32.f16 %0, %1;\" : \"=f\"(f) : \"h\"(bits));", "f = fakecuda_f32_from_f16(bits);"},
    {"asm volatile(\"fence.acq_rel.gpu;\" ::: \"memory\");", "__threadfence();"},
    {"asm(\"{.reg .pred p; setp.lt.s32 p, %1, 0; vote.sync.ballot.b32 %0, p, 0xffffffff; @!p not.b32 %0, %0;}\"\n"
     "            : \"=r\"(lanes)\n"
     "            : \"r\"(value << (31 - bit)));",
     "lanes = fakecuda_sign_peers((int)(value << (31 - bit)));"},
};

/* Writes `length` bytes of `source` to `file` with the known asm statements replaced. */
static void write_host_source(FILE *file, const char *source, size_t length) {
    const char *end = source + length;
    while (source < end) {
        int replaced = 0;
        for (size_t i = 0; i < sizeof asm_statements / sizeof asm_statements[0]; i++) {
            size_t n = strlen(asm_statements[i].ptx);
            if ((size_t)(end - source) >= n && memcmp(source, asm_statements[i].ptx, n) == 0) {
                fputs(asm_statements[i].host, file);
                source += n;
                replaced = 1;
                break;
            }
        }
        if (!replaced) fputc(*source++, file);
    }
}

static int is_identifier_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

/* Whether `source` defines or declares a function named `name` (the name as a whole word,
 * followed by an opening parenthesis). */
static int names_function(const char *source, size_t length, const char *name) {
    size_t n = strlen(name);
    for (const char *p = source; p + n <= source + length; p++) {
        if (memcmp(p, name, n) != 0) continue;
        if (p > source && is_identifier_char(p[-1])) continue;
        const char *after = p + n;
        while (after < source + length && (*after == ' ' || *after == '\n' || *after == '\t')) after++;
        if (after < source + length && *after == '(') return 1;
    }
    return 0;
}

/* Whether the "//@name" lines in [start, end) give `lowered` a name expression; copies it. */
static int name_expression(const char *start, const char *end, const char *lowered, char *expression,
                           size_t size) {
    size_t n = strlen(lowered);
    for (const char *p = start; p < end;) {
        const char *line_end = strchr(p, '\n');
        if (strncmp(p + 8, lowered, n) == 0 && p[8 + n] == ' ') {
            const char *e = p + 8 + n + 1;
            snprintf(expression, size, "%.*s", (int)(line_end - e), e);
            return 1;
        }
        p = line_end + 1;
    }
    return 0;
}

/* Splits the text after the marker into options, headers and the source; writes the headers
 * into `dir` and the host source (emulate.hpp, the source, one trampoline per entry) into
 * `dir`/kernel.cpp. Returns the number of options copied into `options`, or -1. */
static int write_sources(struct emulation *emulation, const char *dir, const char *const *names, int name_count,
                         char **options) {
    char path[4096];
    snprintf(path, sizeof path, "%s/emulate.hpp", dir);
    if (!write_file(path, fake_emulate_hpp, strlen(fake_emulate_hpp))) return -1;
    int option_count = 0;
    const char *p = emulation->text;
    while (strncmp(p, "//@option ", 10) == 0 && option_count < MAX_OPTIONS) {
        const char *line_end = strchr(p, '\n');
        if (!line_end) return -1;
        options[option_count++] = strndup(p + 10, (size_t)(line_end - p - 10));
        p = line_end + 1;
    }
    /* name expressions: "//@name <lowered> <expression>" */
    const char *names_start = p;
    while (strncmp(p, "//@name ", 8) == 0) {
        const char *line_end = strchr(p, '\n');
        if (!line_end) return -1;
        p = line_end + 1;
    }
    const char *names_end = p;
    while (strncmp(p, "//@header ", 10) == 0 || strncmp(p, "//@source ", 10) == 0) {
        int is_source = p[3] == 's';
        size_t length;
        char name[1024];
        if (sscanf(p + 10, "%zu %1023[^\n]", &length, name) != 2) return -1;
        const char *bytes = strchr(p, '\n');
        if (!bytes || strlen(bytes + 1) < length) return -1;
        bytes++;
        if (!is_source) {
            if (strchr(name, '/') || strstr(name, "..")) return -1;
            snprintf(path, sizeof path, "%s/%s", dir, name);
            if (!write_file(path, bytes, length)) return -1;
        } else {
            snprintf(path, sizeof path, "%s/kernel.cpp", dir);
            FILE *file = fopen(path, "wb");
            if (!file) return -1;
            fprintf(file, "#include \"emulate.hpp\"\n#line 1 \"%s\"\n", name);
            write_host_source(file, bytes, length);
            fputs("\n", file);
            for (int i = 0; i < name_count; i++) {
                /* a kernel by its lowered name (a template's instance) or its extern "C" name */
                char expression[1024];
                if (!name_expression(names_start, names_end, names[i], expression, sizeof expression)) {
                    if (!names_function(bytes, length, names[i])) continue;
                    snprintf(expression, sizeof expression, "%s", names[i]);
                }
                fprintf(file,
                        "extern \"C\" __attribute__((visibility(\"default\"))) int fakecuda_emulated_%s("
                        "const fakecuda::Launch *launch) { return fakecuda::run(%s, launch, \"%s\"); }\n",
                        names[i], expression, names[i]);
            }
            if (fclose(file) != 0) return -1;
            return option_count;
        }
        p = bytes + length;
    }
    return -1;
}

/* Runs the host compiler on `dir`/kernel.cpp into `library`; its output goes to
 * `dir`/compile.log. */
static int compile(const char *dir, const char *library, char **options, int option_count) {
    const char *compiler = getenv("FAKECUDA_CXX");
    if (!compiler || !*compiler) compiler = getenv("CXX");
    if (!compiler || !*compiler) compiler = "c++";
    char source[4096], include[4096], output[4096], log[4096];
    snprintf(source, sizeof source, "%s/kernel.cpp", dir);
    snprintf(include, sizeof include, "-I%s", dir);
    snprintf(output, sizeof output, "%s.%d", library, (int)getpid());
    snprintf(log, sizeof log, "%s/compile.log", dir);
    const char *argv[32 + MAX_OPTIONS];
    int argc = 0;
    const char *fixed[] = {compiler, "-std=c++17", "-O1", "-ffp-contract=off", "-fno-strict-aliasing", "-fPIC",
                           "-shared", "-w", "-fvisibility=hidden", include, "-o", output, source};
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++) argv[argc++] = fixed[i];
    for (int i = 0; i < option_count; i++) {
        const char *o = options[i];
        if (strncmp(o, "-D", 2) == 0 || strncmp(o, "-U", 2) == 0) argv[argc++] = o;
    }
    argv[argc] = NULL;
    pid_t child = fork();
    if (child < 0) return 0;
    if (child == 0) {
        FILE *out = freopen(log, "w", stderr);
        if (!out) _exit(127);
        dup2(fileno(stderr), fileno(stdout));
        execvp(compiler, (char *const *)argv);
        _exit(127);
    }
    int status;
    if (waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "fakecuda emulation: compiling %s failed; the compiler said (%s):\n", source, log);
        FILE *file = fopen(log, "r");
        char line[1024];
        for (int lines = 0; file && lines < 40 && fgets(line, sizeof line, file); lines++) fputs(line, stderr);
        if (file) fclose(file);
        return 0;
    }
    return rename(output, library) == 0;
}

/* Compiles `emulation` (once), with a trampoline for each of the kernels `names`. */
static int prepare(struct emulation *emulation, const char *const *names, int name_count) {
    if (emulation->state != 0) return emulation->state > 0;
    emulation->state = -1;
    char dir[2048], library[3072];
    const char *base = getenv("FAKECUDA_EMULATION_DIR");
    if (base && *base) {
        snprintf(dir, sizeof dir, "%s", base);
    } else {
        const char *tmp = getenv("TMPDIR");
        snprintf(dir, sizeof dir, "%s/fakecuda-emulation-%u", tmp && *tmp ? tmp : "/tmp", (unsigned)getuid());
    }
    mkdir(dir, 0700);
    size_t used = strlen(dir);
    snprintf(dir + used, sizeof dir - used, "/%016llx", emulation->hash);
    mkdir(dir, 0700);
    snprintf(library, sizeof library, "%s/kernel.so", dir);
    if (access(library, R_OK) != 0) {
        char *options[MAX_OPTIONS];
        int option_count = write_sources(emulation, dir, names, name_count, options);
        if (option_count < 0) {
            fprintf(stderr, "fakecuda emulation: cannot write the host source into %s\n", dir);
            return 0;
        }
        int compiled = compile(dir, library, options, option_count);
        for (int i = 0; i < option_count; i++) free(options[i]);
        if (!compiled) return 0;
    }
    emulation->library = dlopen(library, RTLD_NOW | RTLD_LOCAL);
    if (!emulation->library) {
        fprintf(stderr, "fakecuda emulation: %s\n", dlerror());
        return 0;
    }
    emulation->state = 1;
    return 1;
}

typedef int (*emulated_kernel)(const struct fake_launch *launch);

CUresult fake_emulate(const struct fake_object *function, const struct fake_launch *launch) {
    int id = function->u.func.emulation;
    if (id <= 0 || (size_t)id > emulation_count) return CUDA_ERROR_NOT_SUPPORTED;
    struct emulation *emulation = &emulations[id - 1];
    const struct fake_object *module = function->u.func.module;
    const char *names[512];
    int name_count = 0;
    for (int i = 0; i < module->u.module.function_count && name_count < 512; i++) {
        names[name_count++] = module->u.module.functions[i]->u.func.name;
    }
    if (!prepare(emulation, names, name_count)) return CUDA_ERROR_NOT_SUPPORTED;
    char symbol[512];
    snprintf(symbol, sizeof symbol, "fakecuda_emulated_%s", function->u.func.name);
    emulated_kernel kernel = (emulated_kernel)dlsym(emulation->library, symbol);
    if (!kernel) return CUDA_ERROR_NOT_SUPPORTED;
    return (CUresult)kernel(launch);
}
