/* fakelibs: a test double for cuFFT and cuSOLVER, loaded in their place (CUDA_CUFFT_LIBRARY,
 * CUDA_CUSOLVER_LIBRARY) beside the fakecuda driver. It exports the entry points the safe
 * wrappers of cuda-libs call, with the headers' signatures, checks their handles (live, not
 * destroyed twice), counts what is alive, can fail the Nth call, and writes a chosen `info`
 * value into the device memory of fakecuda (through the driver's cuMemcpyHtoD) so the
 * wrappers' read-back runs on the host. No transform or factorisation is computed. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))

enum { MAX_PLANS = 4096 };
enum { CUFFT_SUCCESS = 0, CUFFT_INVALID_PLAN = 1, CUFFT_INVALID_VALUE = 4, CUFFT_NO_WORKSPACE = 13 };
enum { CUSOLVER_SUCCESS = 0, CUSOLVER_NOT_INITIALIZED = 1, CUSOLVER_INVALID_VALUE = 3 };
/* Bytes of device workspace every plan and factorisation asks for. */
enum { WORKSPACE = 4096 };

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static long calls, fail_at, double_destroys, live_solvers, live_params;
static int fail_code, next_info, refuse_jit_callbacks;
static unsigned char plan_live[MAX_PLANS];
static unsigned char plan_made[MAX_PLANS];
static unsigned char plan_callback[MAX_PLANS];
static void *plan_work[MAX_PLANS];
static int next_plan = 1;

/* Counts a call; the code to fail it with, or 0. */
static int enter(void) {
    pthread_mutex_lock(&lock);
    int code = 0;
    calls++;
    if (fail_at && calls == fail_at) {
        code = fail_code;
        fail_at = 0;
    }
    pthread_mutex_unlock(&lock);
    return code;
}

EXPORT void fakelibs_reset(void) {
    pthread_mutex_lock(&lock);
    calls = fail_at = 0;
    fail_code = next_info = refuse_jit_callbacks = 0;
    pthread_mutex_unlock(&lock);
}
/* The `n`th call from now fails with `code`. */
EXPORT void fakelibs_fail_nth(long n, int code) {
    pthread_mutex_lock(&lock);
    fail_at = calls + n;
    fail_code = code;
    pthread_mutex_unlock(&lock);
}
EXPORT long fakelibs_calls(void) { return calls; }
/* 0: live plans; 1: live solver handles; 2: live parameter objects; 3: double destroys;
 * 4: live plans with a load callback. */
EXPORT long fakelibs_live(int what) {
    pthread_mutex_lock(&lock);
    long count = 0;
    if (what == 0)
        for (int i = 0; i < MAX_PLANS; i++) count += plan_live[i];
    if (what == 1) count = live_solvers;
    if (what == 2) count = live_params;
    if (what == 3) count = double_destroys;
    if (what == 4)
        for (int i = 0; i < MAX_PLANS; i++) count += plan_live[i] && plan_callback[i] == 1;
    if (what == 5)
        for (int i = 0; i < MAX_PLANS; i++) count += plan_live[i] && plan_callback[i] == 2;
    pthread_mutex_unlock(&lock);
    return count;
}
/* The `info` the next factorisations write. */
EXPORT void fakelibs_set_info(int info) { next_info = info; }
/* Whether cufftXtSetJITCallback answers CUFFT_NOT_SUPPORTED (a cuFFT without LTO callbacks). */
EXPORT void fakelibs_refuse_jit_callbacks(int refuse) { refuse_jit_callbacks = refuse; }

/* ------------------------------------------------------------------ cuFFT */
static int plan_ok(int plan) { return plan > 0 && plan < MAX_PLANS && plan_live[plan]; }

EXPORT unsigned cufftGetProperty(int type, int *value) {
    if (!value) return CUFFT_INVALID_VALUE;
    *value = type == 0 ? 12 : 0;
    return CUFFT_SUCCESS;
}
EXPORT unsigned cufftCreate(int *plan) {
    int code = enter();
    if (code) return code;
    if (!plan) return CUFFT_INVALID_VALUE;
    pthread_mutex_lock(&lock);
    if (next_plan >= MAX_PLANS) {
        pthread_mutex_unlock(&lock);
        return 2; /* CUFFT_ALLOC_FAILED */
    }
    *plan = next_plan++;
    plan_live[*plan] = 1;
    plan_made[*plan] = 0;
    plan_callback[*plan] = 0;
    plan_work[*plan] = NULL;
    pthread_mutex_unlock(&lock);
    return CUFFT_SUCCESS;
}
EXPORT unsigned cufftDestroy(int plan) {
    if (plan > 0 && plan < MAX_PLANS && !plan_live[plan]) {
        double_destroys++;
        return CUFFT_INVALID_PLAN;
    }
    if (!plan_ok(plan)) return CUFFT_INVALID_PLAN;
    plan_live[plan] = 0;
    return CUFFT_SUCCESS;
}
EXPORT unsigned cufftSetAutoAllocation(int plan, int automatic) {
    int code = enter();
    if (code) return code;
    return plan_ok(plan) && automatic == 0 ? CUFFT_SUCCESS : CUFFT_INVALID_PLAN;
}
static unsigned make_plan(int plan, int rank, long long *n, size_t *work) {
    int code = enter();
    if (code) return code;
    if (!plan_ok(plan)) return CUFFT_INVALID_PLAN;
    if (rank < 1 || rank > 3 || !n || !work) return CUFFT_INVALID_VALUE;
    for (int i = 0; i < rank; i++)
        if (n[i] < 1) return 8; /* CUFFT_INVALID_SIZE */
    plan_made[plan] = 1;
    *work = WORKSPACE;
    return CUFFT_SUCCESS;
}
EXPORT unsigned cufftMakePlanMany64(int plan, int rank, long long *n, long long *inembed, long long istride,
                                    long long idist, long long *onembed, long long ostride, long long odist,
                                    int type, long long batch, size_t *work) {
    (void)inembed, (void)istride, (void)idist, (void)onembed, (void)ostride, (void)odist, (void)type, (void)batch;
    return make_plan(plan, rank, n, work);
}
EXPORT unsigned cufftXtMakePlanMany(int plan, int rank, long long *n, long long *inembed, long long istride,
                                    long long idist, int itype, long long *onembed, long long ostride, long long odist,
                                    int otype, long long batch, size_t *work, int etype) {
    (void)inembed, (void)istride, (void)idist, (void)itype, (void)onembed, (void)ostride, (void)odist, (void)otype,
        (void)batch, (void)etype;
    return make_plan(plan, rank, n, work);
}
/* CUDA 13's signature: a callback between cufftCreate and the plan's making, with its name, its
 * LTO-IR and a one-entry array of caller-info addresses. */
EXPORT unsigned cufftXtSetJITCallback(int plan, const char *name, const void *lto, size_t size, int type,
                                      void **caller_info) {
    int code = enter();
    if (code) return code;
    if (!plan_ok(plan) || plan_made[plan]) return CUFFT_INVALID_PLAN;
    if (!name || !*name || !lto || !size || type < 0 || type > 7 || !caller_info || !*caller_info)
        return CUFFT_INVALID_VALUE;
    if (refuse_jit_callbacks) return 16; /* CUFFT_NOT_SUPPORTED */
    plan_callback[plan] = type < 4 ? 1 : 2; /* CUFFT_CB_LD_* are 0 to 3, CUFFT_CB_ST_* 4 to 7 */
    return CUFFT_SUCCESS;
}
EXPORT unsigned cufftSetStream(int plan, void *stream) {
    (void)stream;
    int code = enter();
    if (code) return code;
    return plan_ok(plan) ? CUFFT_SUCCESS : CUFFT_INVALID_PLAN;
}
EXPORT unsigned cufftSetWorkArea(int plan, void *area) {
    int code = enter();
    if (code) return code;
    if (!plan_ok(plan)) return CUFFT_INVALID_PLAN;
    plan_work[plan] = area;
    return CUFFT_SUCCESS;
}
EXPORT unsigned cufftXtExec(int plan, void *input, void *output, int direction) {
    int code = enter();
    if (code) return code;
    if (!plan_ok(plan) || !plan_made[plan]) return CUFFT_INVALID_PLAN;
    if (!input || !output || (direction != -1 && direction != 1)) return CUFFT_INVALID_VALUE;
    return plan_work[plan] ? CUFFT_SUCCESS : CUFFT_NO_WORKSPACE;
}

/* --------------------------------------------------------------- cuSOLVER */
typedef int (*memcpy_htod)(unsigned long long, const void *, size_t);

/* Writes `next_info` at a device address through the driver the process loaded. */
static int write_info(int *info) {
    static memcpy_htod copy;
    if (!copy) {
        const char *driver = getenv("CUDA_DRIVER_LIBRARY");
        void *handle = driver ? dlopen(driver, RTLD_NOW | RTLD_NOLOAD) : NULL;
        if (!handle) return CUSOLVER_NOT_INITIALIZED;
        copy = (memcpy_htod)dlsym(handle, "cuMemcpyHtoD_v2");
        if (!copy) return CUSOLVER_NOT_INITIALIZED;
    }
    int value = next_info;
    return copy((unsigned long long)(uintptr_t)info, &value, sizeof value) == 0 ? CUSOLVER_SUCCESS
                                                                              : CUSOLVER_INVALID_VALUE;
}

EXPORT unsigned cusolverGetProperty(int type, int *value) {
    if (!value) return CUSOLVER_INVALID_VALUE;
    *value = type == 0 ? 12 : 0;
    return CUSOLVER_SUCCESS;
}
EXPORT unsigned cusolverDnCreate(void **handle) {
    int code = enter();
    if (code) return code;
    if (!handle) return CUSOLVER_INVALID_VALUE;
    *handle = malloc(16);
    live_solvers++;
    return CUSOLVER_SUCCESS;
}
EXPORT unsigned cusolverDnDestroy(void *handle) {
    if (!handle) return CUSOLVER_NOT_INITIALIZED;
    free(handle);
    live_solvers--;
    return CUSOLVER_SUCCESS;
}
EXPORT unsigned cusolverDnCreateParams(void **params) {
    int code = enter();
    if (code) return code;
    if (!params) return CUSOLVER_INVALID_VALUE;
    *params = malloc(16);
    live_params++;
    return CUSOLVER_SUCCESS;
}
EXPORT unsigned cusolverDnDestroyParams(void *params) {
    if (!params) return CUSOLVER_INVALID_VALUE;
    free(params);
    live_params--;
    return CUSOLVER_SUCCESS;
}
EXPORT unsigned cusolverDnSetStream(void *handle, void *stream) {
    (void)stream;
    int code = enter();
    if (code) return code;
    return handle ? CUSOLVER_SUCCESS : CUSOLVER_NOT_INITIALIZED;
}
static unsigned buffer_size(void *handle, size_t *device, size_t *host) {
    int code = enter();
    if (code) return code;
    if (!handle || !device || !host) return CUSOLVER_INVALID_VALUE;
    *device = WORKSPACE;
    *host = 64;
    return CUSOLVER_SUCCESS;
}
EXPORT unsigned cusolverDnXpotrf_bufferSize(void *handle, void *params, int uplo, long long n, int type,
                                            const void *a, long long lda, int compute, size_t *device, size_t *host) {
    (void)params, (void)uplo, (void)n, (void)type, (void)a, (void)lda, (void)compute;
    return buffer_size(handle, device, host);
}
EXPORT unsigned cusolverDnXgetrf_bufferSize(void *handle, void *params, long long m, long long n, int type,
                                            const void *a, long long lda, int compute, size_t *device, size_t *host) {
    (void)params, (void)m, (void)n, (void)type, (void)a, (void)lda, (void)compute;
    return buffer_size(handle, device, host);
}
/* A factorisation: checks its workspaces and writes `info`. */
static unsigned factor(void *handle, void *a, void *device_work, size_t device_bytes, void *host_work,
                       size_t host_bytes, int *info) {
    int code = enter();
    if (code) return code;
    if (!handle || !a || !info) return CUSOLVER_INVALID_VALUE;
    if (!device_work || device_bytes < WORKSPACE || !host_work || host_bytes < 64) return CUSOLVER_INVALID_VALUE;
    memset(host_work, 0, host_bytes); /* the host workspace must be writable memory */
    return write_info(info);
}
EXPORT unsigned cusolverDnXpotrf(void *handle, void *params, int uplo, long long n, int type, void *a, long long lda,
                                 int compute, void *device_work, size_t device_bytes, void *host_work,
                                 size_t host_bytes, int *info) {
    (void)params, (void)uplo, (void)n, (void)type, (void)lda, (void)compute;
    return factor(handle, a, device_work, device_bytes, host_work, host_bytes, info);
}
EXPORT unsigned cusolverDnXgetrf(void *handle, void *params, long long m, long long n, int type, void *a,
                                 long long lda, long long *pivots, int compute, void *device_work, size_t device_bytes,
                                 void *host_work, size_t host_bytes, int *info) {
    (void)params, (void)m, (void)n, (void)type, (void)lda, (void)compute;
    if (!pivots) return CUSOLVER_INVALID_VALUE;
    return factor(handle, a, device_work, device_bytes, host_work, host_bytes, info);
}
/* A solve from LU factors: checks its arguments and writes `info` 0 (its `info` reports only
 * invalid arguments). */
EXPORT unsigned cusolverDnXgetrs(void *handle, void *params, int trans, long long n, long long nrhs, int type,
                                 const void *a, long long lda, const long long *pivots, int type_b, void *b,
                                 long long ldb, int *info) {
    (void)params, (void)trans, (void)type, (void)type_b;
    int code = enter();
    if (code) return code;
    if (!handle || !a || !pivots || !b || !info || n < 0 || nrhs < 0 || lda < n || ldb < n)
        return CUSOLVER_INVALID_VALUE;
    int pending = next_info;
    next_info = 0;
    unsigned status = write_info(info);
    next_info = pending;
    return status;
}
EXPORT unsigned cusolverDnXgeev_bufferSize(void *handle, void *params, int jobvl, int jobvr, long long n, int type_a,
                                           const void *a, long long lda, int type_w, const void *w, int type_vl,
                                           const void *vl, long long ldvl, int type_vr, const void *vr,
                                           long long ldvr, int compute, size_t *device, size_t *host) {
    (void)params, (void)jobvl, (void)jobvr, (void)n, (void)type_a, (void)a, (void)lda, (void)type_w, (void)w;
    (void)type_vl, (void)vl, (void)ldvl, (void)type_vr, (void)vr, (void)ldvr, (void)compute;
    return buffer_size(handle, device, host);
}
/* The eigenvalues of a general matrix: checks its arguments (left vectors are never asked
 * for, right ones only with their buffer) and writes `info`. */
EXPORT unsigned cusolverDnXgeev(void *handle, void *params, int jobvl, int jobvr, long long n, int type_a, void *a,
                                long long lda, int type_w, void *w, int type_vl, void *vl, long long ldvl,
                                int type_vr, void *vr, long long ldvr, int compute, void *device_work,
                                size_t device_bytes, void *host_work, size_t host_bytes, int *info) {
    (void)params, (void)type_a, (void)type_w, (void)type_vl, (void)type_vr, (void)compute, (void)ldvl;
    if (!w || jobvl != 0 || vl || lda < n || (jobvr == 1 && (!vr || ldvr < n))) {
        int code = enter();
        return code ? (unsigned)code : CUSOLVER_INVALID_VALUE;
    }
    return factor(handle, a, device_work, device_bytes, host_work, host_bytes, info);
}
EXPORT unsigned cusolverDnXsyevd_bufferSize(void *handle, void *params, int jobz, int uplo, long long n, int type_a,
                                            const void *a, long long lda, int type_w, const void *w, int compute,
                                            size_t *device, size_t *host) {
    (void)params, (void)jobz, (void)uplo, (void)n, (void)type_a, (void)a, (void)lda, (void)type_w, (void)w;
    (void)compute;
    return buffer_size(handle, device, host);
}
/* The eigenvalues of a symmetric (Hermitian) matrix: checks `W` and writes `info`. */
EXPORT unsigned cusolverDnXsyevd(void *handle, void *params, int jobz, int uplo, long long n, int type_a, void *a,
                                 long long lda, int type_w, void *w, int compute, void *device_work,
                                 size_t device_bytes, void *host_work, size_t host_bytes, int *info) {
    (void)params, (void)jobz, (void)uplo, (void)type_a, (void)type_w, (void)compute;
    if (!w || lda < n) {
        int code = enter();
        return code ? (unsigned)code : CUSOLVER_INVALID_VALUE;
    }
    return factor(handle, a, device_work, device_bytes, host_work, host_bytes, info);
}
EXPORT unsigned cusolverDnXsyevBatched_bufferSize(void *handle, void *params, int jobz, int uplo, long long n,
                                                  int type_a, const void *a, long long lda, int type_w, const void *w,
                                                  int compute, size_t *device, size_t *host, long long batch) {
    (void)params, (void)jobz, (void)uplo, (void)n, (void)type_a, (void)a, (void)lda, (void)type_w, (void)w;
    (void)compute;
    if (batch < 1) return CUSOLVER_INVALID_VALUE;
    return buffer_size(handle, device, host);
}
/* The eigenvalues of a batch of symmetric (Hermitian) matrices: checks `W` and its workspaces,
 * writes one `info` per matrix. */
EXPORT unsigned cusolverDnXsyevBatched(void *handle, void *params, int jobz, int uplo, long long n, int type_a,
                                       void *a, long long lda, int type_w, void *w, int compute, void *device_work,
                                       size_t device_bytes, void *host_work, size_t host_bytes, int *info,
                                       long long batch) {
    (void)params, (void)jobz, (void)uplo, (void)type_a, (void)type_w, (void)compute;
    if (!w || lda < n || batch < 1) {
        int code = enter();
        return code ? (unsigned)code : CUSOLVER_INVALID_VALUE;
    }
    for (long long i = 0; i < batch; i++) {
        unsigned status = factor(handle, a, device_work, device_bytes, host_work, host_bytes, info + i);
        if (status) return status;
    }
    return CUSOLVER_SUCCESS;
}
EXPORT unsigned cusolverDnXgesvd_bufferSize(void *handle, void *params, signed char jobu, signed char jobvt,
                                            long long m, long long n, int type_a, const void *a, long long lda,
                                            int type_s, const void *s, int type_u, const void *u, long long ldu,
                                            int type_vt, const void *vt, long long ldvt, int compute, size_t *device,
                                            size_t *host) {
    (void)params, (void)jobu, (void)jobvt, (void)m, (void)n, (void)type_a, (void)a, (void)lda, (void)type_s, (void)s;
    (void)type_u, (void)u, (void)ldu, (void)type_vt, (void)vt, (void)ldvt, (void)compute;
    return buffer_size(handle, device, host);
}
/* The singular value decomposition: checks `m >= n`, `S` and the vectors `jobu` asks for, and
 * writes `info`. */
EXPORT unsigned cusolverDnXgesvd(void *handle, void *params, signed char jobu, signed char jobvt, long long m,
                                 long long n, int type_a, void *a, long long lda, int type_s, void *s, int type_u,
                                 void *u, long long ldu, int type_vt, void *vt, long long ldvt, int compute,
                                 void *device_work, size_t device_bytes, void *host_work, size_t host_bytes,
                                 int *info) {
    (void)params, (void)type_a, (void)type_s, (void)type_u, (void)type_vt, (void)compute, (void)ldu, (void)ldvt;
    if (!s || m < n || lda < m || jobu != jobvt || (jobu != 'N' && (!u || !vt))) {
        int code = enter();
        return code ? (unsigned)code : CUSOLVER_INVALID_VALUE;
    }
    return factor(handle, a, device_work, device_bytes, host_work, host_bytes, info);
}
EXPORT unsigned cusolverDnCreateGesvdjInfo(void **params) { return cusolverDnCreateParams(params); }
EXPORT unsigned cusolverDnDestroyGesvdjInfo(void *params) { return cusolverDnDestroyParams(params); }
EXPORT unsigned cusolverDnDgesvdjBatched_bufferSize(void *handle, int jobz, int m, int n, const double *a, int lda,
                                                    const double *s, const double *u, int ldu, const double *v,
                                                    int ldv, int *lwork, void *params, int batch) {
    (void)jobz, (void)m, (void)n, (void)a, (void)lda, (void)s, (void)u, (void)ldu, (void)v, (void)ldv, (void)batch;
    int code = enter();
    if (code) return code;
    if (!handle || !params || !lwork) return CUSOLVER_INVALID_VALUE;
    *lwork = WORKSPACE / (int)sizeof(double);
    return CUSOLVER_SUCCESS;
}
/* Jacobi SVDs of a batch: writes U and V whether or not vectors are asked for (as cuSOLVER
 * does, which faults on null ones), so null U or V is refused; writes one `info` per matrix. */
EXPORT unsigned cusolverDnDgesvdjBatched(void *handle, int jobz, int m, int n, double *a, int lda, double *s,
                                         double *u, int ldu, double *v, int ldv, double *work, int lwork, int *info,
                                         void *params, int batch) {
    (void)jobz;
    int code = enter();
    if (code) return code;
    if (!handle || !params || !a || !s || !u || !v || !work || !info || lda < m || ldu < m || ldv < n ||
        lwork < WORKSPACE / (int)sizeof(double) || batch < 1)
        return CUSOLVER_INVALID_VALUE;
    for (int i = 0; i < batch; i++) {
        unsigned status = write_info(info + i);
        if (status) return status;
    }
    return CUSOLVER_SUCCESS;
}
/* Jacobi SVD of one matrix, in each element type (`size` bytes an element): the workspace in
 * elements, then a check of the shapes `econ` implies (U `m x m` or `m x k`, V `n x n` or
 * `n x k`, never null) and one `info`. */
#define GESVDJ(t, size)                                                                                          \
    EXPORT unsigned cusolverDn##t##gesvdj_bufferSize(void *handle, int jobz, int econ, int m, int n,              \
                                                     const void *a, int lda, const void *s, const void *u,        \
                                                     int ldu, const void *v, int ldv, int *lwork, void *params) {  \
        (void)jobz, (void)econ, (void)m, (void)n, (void)a, (void)lda, (void)s, (void)u, (void)ldu, (void)v;     \
        (void)ldv;                                                                                               \
        int code = enter();                                                                                      \
        if (code) return code;                                                                                   \
        if (!handle || !params || !lwork) return CUSOLVER_INVALID_VALUE;                                         \
        *lwork = WORKSPACE / (size);                                                                             \
        return CUSOLVER_SUCCESS;                                                                                 \
    }                                                                                                            \
    EXPORT unsigned cusolverDn##t##gesvdj(void *handle, int jobz, int econ, int m, int n, void *a, int lda,      \
                                          void *s, void *u, int ldu, void *v, int ldv, void *work, int lwork,    \
                                          int *info, void *params) {                                             \
        (void)jobz;                                                                                              \
        int code = enter();                                                                                      \
        if (code) return code;                                                                                   \
        if (!handle || !params || !a || !s || !u || !v || !work || !info || lda < m || ldu < m || ldv < n ||    \
            (econ != 0 && econ != 1) || lwork < WORKSPACE / (size))                                              \
            return CUSOLVER_INVALID_VALUE;                                                                       \
        return write_info(info);                                                                                 \
    }
GESVDJ(S, 4)
GESVDJ(D, 8)
GESVDJ(C, 8)
GESVDJ(Z, 16)
