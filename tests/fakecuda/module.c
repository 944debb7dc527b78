/*
 * fakecuda (test double): reads the entry points and their parameter layout
 * from a module image. An image is PTX text, real (from NVRTC) or written by a
 * test; only `.entry NAME(.param ... , ...)` declarations are read, so a test
 * can write just those lines after a `.version` line.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fakecuda.h"

static const char *skip_space(const char *p) {
    for (;;) {
        while (*p && isspace((unsigned char)*p)) p++;
        if (p[0] == '/' && p[1] == '/') {
            while (*p && *p != '\n') p++;
        } else if (p[0] == '/' && p[1] == '*') {
            const char *end = strstr(p + 2, "*/");
            p = end ? end + 2 : p + strlen(p);
        } else {
            return p;
        }
    }
}

static int is_ident(char c) { return isalnum((unsigned char)c) || c == '_' || c == '$' || c == '.'; }

/* Size in bytes of a PTX fundamental type such as `.u32`, `.f64`, `.b8`; 0 if unknown. */
static size_t type_size(const char *token, size_t length) {
    static const struct {
        const char *name;
        size_t size;
    } types[] = {
        {".u8", 1},  {".s8", 1},  {".b8", 1},  {".u16", 2}, {".s16", 2}, {".b16", 2}, {".f16", 2},
        {".u32", 4}, {".s32", 4}, {".b32", 4}, {".f32", 4}, {".u64", 8}, {".s64", 8}, {".b64", 8},
        {".f64", 8},
    };
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
        if (strlen(types[i].name) == length && memcmp(types[i].name, token, length) == 0) return types[i].size;
    }
    return 0;
}

static CUresult fail(char *log, size_t log_size, CUresult code, const char *message, const char *near) {
    if (log && log_size) snprintf(log, log_size, "fakecuda: %s near \"%.24s\"", message, near ? near : "");
    return code;
}

/* Parses one `.param` declaration starting after ".param"; sets size and alignment. */
static const char *parse_param(const char *p, size_t *size, size_t *align) {
    size_t element = 0, count = 1, explicit_align = 0;
    for (;;) {
        p = skip_space(p);
        if (*p == ',' || *p == ')' || *p == 0) break;
        if (*p == '[') {
            count = strtoul(p + 1, (char **)&p, 10);
            while (*p && *p != ']') p++;
            if (*p == ']') p++;
            continue;
        }
        const char *start = p;
        while (is_ident(*p) && !(p > start && *p == '.')) p++;
        if (p == start) return NULL;
        size_t length = (size_t)(p - start);
        if (length == 6 && memcmp(start, ".align", 6) == 0) {
            p = skip_space(p);
            explicit_align = strtoul(p, (char **)&p, 10);
        } else if (type_size(start, length)) {
            element = type_size(start, length);
        }
        /* other tokens: state spaces (.ptr .global ...) and the parameter's name */
    }
    if (element == 0) return NULL;
    *size = element * count;
    *align = explicit_align ? explicit_align : element;
    return p;
}

CUresult fake_parse_module(const char *text, struct fake_entry **entries_out, int *count_out, char *log,
                           size_t log_size) {
    *entries_out = NULL;
    *count_out = 0;
    if (!text) return fail(log, log_size, CUDA_ERROR_INVALID_VALUE, "null image", NULL);
    size_t ptx_length = fake_image_ptx_length(text);
    if (text[ptx_length]) {
        /* source after the PTX (tests/fakenvrtc): the entries are the PTX's, run by emulation.c */
        char *ptx = strndup(text, ptx_length);
        if (!ptx) return CUDA_ERROR_OUT_OF_MEMORY;
        CUresult result = fake_parse_module(ptx, entries_out, count_out, log, log_size);
        free(ptx);
        int emulation = fake_emulation_register(text);
        for (int i = 0; result == CUDA_SUCCESS && i < *count_out; i++) (*entries_out)[i].emulation = emulation;
        return result;
    }
    const unsigned char first = (unsigned char)text[0];
    if (first == 0x7f || first == 0x50 || first == 0xba || (first < 0x20 && !isspace(first))) {
        return fail(log, log_size, CUDA_ERROR_INVALID_IMAGE, "binary images (cubin, fatbin) are not supported", NULL);
    }
    if (!strstr(text, ".version") && !strstr(text, ".entry")) {
        return fail(log, log_size, CUDA_ERROR_INVALID_PTX, "not PTX: no .version directive", text);
    }
    struct fake_entry *entries = NULL;
    int count = 0;
    const char *p = text;
    while ((p = strstr(p, ".entry")) != NULL) {
        p += 6;
        if (is_ident(*p)) continue; /* e.g. ".entry_x" is not the directive */
        p = skip_space(p);
        const char *name = p;
        while (is_ident(*p)) p++;
        if (p == name) {
            fake_free_entries(entries, count);
            return fail(log, log_size, CUDA_ERROR_INVALID_PTX, "syntax error: .entry without a name", name);
        }
        struct fake_entry *grown = realloc(entries, sizeof *entries * (size_t)(count + 1));
        if (!grown) {
            fake_free_entries(entries, count);
            return CUDA_ERROR_OUT_OF_MEMORY;
        }
        entries = grown;
        struct fake_entry *entry = &entries[count++];
        memset(entry, 0, sizeof *entry);
        entry->name = strndup(name, (size_t)(p - name));
        p = skip_space(p);
        if (*p != '(') continue;
        p++;
        size_t offset = 0;
        for (;;) {
            p = skip_space(p);
            if (*p == ')') {
                p++;
                break;
            }
            if (*p == ',') {
                p++;
                continue;
            }
            if (strncmp(p, ".param", 6) != 0 || entry->param_count == FAKE_MAX_PARAMS) {
                fake_free_entries(entries, count);
                return fail(log, log_size, CUDA_ERROR_INVALID_PTX, "syntax error in parameter list", p);
            }
            size_t size = 0, align = 1;
            const char *next = parse_param(p + 6, &size, &align);
            if (!next || align == 0 || (align & (align - 1)) != 0) {
                fake_free_entries(entries, count);
                return fail(log, log_size, CUDA_ERROR_INVALID_PTX, "syntax error in .param", p);
            }
            offset = (offset + align - 1) & ~(align - 1);
            entry->param_offsets[entry->param_count] = offset;
            entry->param_sizes[entry->param_count] = size;
            entry->param_count++;
            offset += size;
            p = next;
        }
    }
    *entries_out = entries;
    *count_out = count;
    return CUDA_SUCCESS;
}

void fake_free_entries(struct fake_entry *entries, int count) {
    for (int i = 0; i < count; i++) free(entries[i].name);
    free(entries);
}

/* Whether the directive `word` (".global", ".const") starts at p: not part of a longer token such as `ld.global.f32`. */
static int directive_at(const char *text, const char *p, const char *word) {
    size_t length = strlen(word);
    if (strncmp(p, word, length) != 0 || is_ident(p[length])) return 0;
    return p == text || isspace((unsigned char)p[-1]);
}

CUresult fake_parse_variables(const char *text, struct fake_variable **variables_out, int *count_out) {
    *variables_out = NULL;
    *count_out = 0;
    size_t ptx_length = fake_image_ptx_length(text);
    if (text[ptx_length]) {
        char *ptx = strndup(text, ptx_length);
        if (!ptx) return CUDA_ERROR_OUT_OF_MEMORY;
        CUresult result = fake_parse_variables(ptx, variables_out, count_out);
        free(ptx);
        return result;
    }
    struct fake_variable *variables = NULL;
    int count = 0;
    for (const char *p = text; *p; p++) {
        if (!directive_at(text, p, ".global") && !directive_at(text, p, ".const")) continue;
        /* `.global [.align N] .TYPE NAME[[N]...] [= ...];` */
        size_t element = 0, elements = 1;
        const char *name = NULL;
        size_t name_length = 0;
        p += p[1] == 'g' ? 7 : 6;
        for (;;) {
            p = skip_space(p);
            if (*p == ';' || *p == '=' || *p == 0 || *p == '{' || *p == '(') break;
            if (*p == '[') {
                elements *= strtoul(p + 1, (char **)&p, 10);
                while (*p && *p != ']') p++;
                if (*p == ']') p++;
                continue;
            }
            const char *start = p;
            while (is_ident(*p) && !(p > start && *p == '.')) p++;
            if (p == start) break;
            size_t length = (size_t)(p - start);
            if (type_size(start, length)) {
                element = type_size(start, length);
            } else if (start[0] != '.') {
                name = start;
                name_length = length;
            } else if (length == 6 && memcmp(start, ".align", 6) == 0) {
                p = skip_space(p);
                strtoul(p, (char **)&p, 10);
            }
        }
        if (!name || element == 0 || elements == 0) continue; /* not a variable declaration */
        struct fake_variable *grown = realloc(variables, sizeof *variables * (size_t)(count + 1));
        char *copy = strndup(name, name_length);
        if (!grown || !copy) {
            free(copy);
            fake_free_variables(grown ? grown : variables, count);
            return CUDA_ERROR_OUT_OF_MEMORY;
        }
        variables = grown;
        variables[count].name = copy;
        variables[count].size = element * elements;
        count++;
        if (*p == 0) break;
    }
    *variables_out = variables;
    *count_out = count;
    return CUDA_SUCCESS;
}

void fake_free_variables(struct fake_variable *variables, int count) {
    for (int i = 0; i < count; i++) free(variables[i].name);
    free(variables);
}
