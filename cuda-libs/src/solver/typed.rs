//! The routines that come in one function per element type (cuSOLVER's legacy and batched API,
//! cuBLAS's batched LU), behind one trait: `S` functions for `f32`, `D` for `f64`. Pointers
//! travel as `void` and are cast to the element type here.

use std::ffi::c_void;

use cuda_sys::cublas::{cublasHandle_t, cublasStatus_t};
use cuda_sys::cusolver::{
    cublasFillMode_t, cusolverDnHandle_t, cusolverEigMode_t, cusolverStatus_t, gesvdjInfo_t, syevjInfo_t,
};

use crate::Result;

/// The typed routines of an element type. Sealed: implemented for `f32` and `f64` only.
///
/// # Safety (of every method)
/// The arguments are those of the cuSOLVER or cuBLAS function named in the method's body, with
/// the element pointers as `void`; the caller upholds that function's contract (live handle,
/// device pointers of the handle's context that hold what the sizes say).
#[allow(clippy::too_many_arguments, clippy::missing_safety_doc)]
pub trait Typed: Sized {
    unsafe fn orgqr_buffer_size(
        h: cusolverDnHandle_t,
        m: i32,
        n: i32,
        k: i32,
        a: *const c_void,
        lda: i32,
        tau: *const c_void,
        lwork: *mut i32,
    ) -> Result<cusolverStatus_t>;
    unsafe fn orgqr(
        h: cusolverDnHandle_t,
        m: i32,
        n: i32,
        k: i32,
        a: *mut c_void,
        lda: i32,
        tau: *const c_void,
        work: *mut c_void,
        lwork: i32,
        info: *mut i32,
    ) -> Result<cusolverStatus_t>;
    unsafe fn syevj_batched_buffer_size(
        h: cusolverDnHandle_t,
        jobz: cusolverEigMode_t,
        uplo: cublasFillMode_t,
        n: i32,
        a: *const c_void,
        lda: i32,
        w: *const c_void,
        lwork: *mut i32,
        params: syevjInfo_t,
        batch: i32,
    ) -> Result<cusolverStatus_t>;
    unsafe fn syevj_batched(
        h: cusolverDnHandle_t,
        jobz: cusolverEigMode_t,
        uplo: cublasFillMode_t,
        n: i32,
        a: *mut c_void,
        lda: i32,
        w: *mut c_void,
        work: *mut c_void,
        lwork: i32,
        info: *mut i32,
        params: syevjInfo_t,
        batch: i32,
    ) -> Result<cusolverStatus_t>;
    unsafe fn gesvdj_batched_buffer_size(
        h: cusolverDnHandle_t,
        jobz: cusolverEigMode_t,
        m: i32,
        n: i32,
        a: *const c_void,
        lda: i32,
        s: *const c_void,
        u: *const c_void,
        ldu: i32,
        v: *const c_void,
        ldv: i32,
        lwork: *mut i32,
        params: gesvdjInfo_t,
        batch: i32,
    ) -> Result<cusolverStatus_t>;
    unsafe fn gesvdj_batched(
        h: cusolverDnHandle_t,
        jobz: cusolverEigMode_t,
        m: i32,
        n: i32,
        a: *mut c_void,
        lda: i32,
        s: *mut c_void,
        u: *mut c_void,
        ldu: i32,
        v: *mut c_void,
        ldv: i32,
        work: *mut c_void,
        lwork: i32,
        info: *mut i32,
        params: gesvdjInfo_t,
        batch: i32,
    ) -> Result<cusolverStatus_t>;
    unsafe fn potrf_batched(
        h: cusolverDnHandle_t,
        uplo: cublasFillMode_t,
        n: i32,
        a_array: *mut *mut c_void,
        lda: i32,
        info: *mut i32,
        batch: i32,
    ) -> Result<cusolverStatus_t>;
    unsafe fn getrf_batched(
        h: cublasHandle_t,
        n: i32,
        a_array: *const *mut c_void,
        lda: i32,
        pivots: *mut i32,
        info: *mut i32,
        batch: i32,
    ) -> Result<cublasStatus_t>;
    unsafe fn getrs_batched(
        h: cublasHandle_t,
        transpose: bool,
        n: i32,
        nrhs: i32,
        a_array: *const *const c_void,
        lda: i32,
        pivots: *const i32,
        b_array: *const *mut c_void,
        ldb: i32,
        info: *mut i32,
        batch: i32,
    ) -> Result<cublasStatus_t>;
    unsafe fn getri_batched(
        h: cublasHandle_t,
        n: i32,
        a_array: *const *const c_void,
        lda: i32,
        pivots: *const i32,
        c_array: *const *mut c_void,
        ldc: i32,
        info: *mut i32,
        batch: i32,
    ) -> Result<cublasStatus_t>;
}

macro_rules! typed {
    ($ty:ty, $orgqr_size:ident, $orgqr:ident, $syevj_size:ident, $syevj:ident, $gesvdj_size:ident,
     $gesvdj:ident, $potrf_batched:ident, $getrf:ident, $getrs:ident, $getri:ident) => {
        impl Typed for $ty {
            unsafe fn orgqr_buffer_size(
                h: cusolverDnHandle_t,
                m: i32,
                n: i32,
                k: i32,
                a: *const c_void,
                lda: i32,
                tau: *const c_void,
                lwork: *mut i32,
            ) -> Result<cusolverStatus_t> {
                let f = cuda_sys::cusolver()?.$orgqr_size()?;
                // SAFETY: the caller's contract (see the trait).
                Ok(unsafe { f(h, m, n, k, a.cast(), lda, tau.cast(), lwork) })
            }
            unsafe fn orgqr(
                h: cusolverDnHandle_t,
                m: i32,
                n: i32,
                k: i32,
                a: *mut c_void,
                lda: i32,
                tau: *const c_void,
                work: *mut c_void,
                lwork: i32,
                info: *mut i32,
            ) -> Result<cusolverStatus_t> {
                let f = cuda_sys::cusolver()?.$orgqr()?;
                // SAFETY: the caller's contract (see the trait).
                Ok(unsafe { f(h, m, n, k, a.cast(), lda, tau.cast(), work.cast(), lwork, info) })
            }
            unsafe fn syevj_batched_buffer_size(
                h: cusolverDnHandle_t,
                jobz: cusolverEigMode_t,
                uplo: cublasFillMode_t,
                n: i32,
                a: *const c_void,
                lda: i32,
                w: *const c_void,
                lwork: *mut i32,
                params: syevjInfo_t,
                batch: i32,
            ) -> Result<cusolverStatus_t> {
                let f = cuda_sys::cusolver()?.$syevj_size()?;
                // SAFETY: the caller's contract (see the trait).
                Ok(unsafe { f(h, jobz, uplo, n, a.cast(), lda, w.cast(), lwork, params, batch) })
            }
            unsafe fn syevj_batched(
                h: cusolverDnHandle_t,
                jobz: cusolverEigMode_t,
                uplo: cublasFillMode_t,
                n: i32,
                a: *mut c_void,
                lda: i32,
                w: *mut c_void,
                work: *mut c_void,
                lwork: i32,
                info: *mut i32,
                params: syevjInfo_t,
                batch: i32,
            ) -> Result<cusolverStatus_t> {
                let f = cuda_sys::cusolver()?.$syevj()?;
                // SAFETY: the caller's contract (see the trait).
                Ok(unsafe {
                    f(
                        h,
                        jobz,
                        uplo,
                        n,
                        a.cast(),
                        lda,
                        w.cast(),
                        work.cast(),
                        lwork,
                        info,
                        params,
                        batch,
                    )
                })
            }
            unsafe fn gesvdj_batched_buffer_size(
                h: cusolverDnHandle_t,
                jobz: cusolverEigMode_t,
                m: i32,
                n: i32,
                a: *const c_void,
                lda: i32,
                s: *const c_void,
                u: *const c_void,
                ldu: i32,
                v: *const c_void,
                ldv: i32,
                lwork: *mut i32,
                params: gesvdjInfo_t,
                batch: i32,
            ) -> Result<cusolverStatus_t> {
                let f = cuda_sys::cusolver()?.$gesvdj_size()?;
                // SAFETY: the caller's contract (see the trait).
                Ok(unsafe {
                    f(
                        h,
                        jobz,
                        m,
                        n,
                        a.cast(),
                        lda,
                        s.cast(),
                        u.cast(),
                        ldu,
                        v.cast(),
                        ldv,
                        lwork,
                        params,
                        batch,
                    )
                })
            }
            unsafe fn gesvdj_batched(
                h: cusolverDnHandle_t,
                jobz: cusolverEigMode_t,
                m: i32,
                n: i32,
                a: *mut c_void,
                lda: i32,
                s: *mut c_void,
                u: *mut c_void,
                ldu: i32,
                v: *mut c_void,
                ldv: i32,
                work: *mut c_void,
                lwork: i32,
                info: *mut i32,
                params: gesvdjInfo_t,
                batch: i32,
            ) -> Result<cusolverStatus_t> {
                let f = cuda_sys::cusolver()?.$gesvdj()?;
                // SAFETY: the caller's contract (see the trait).
                Ok(unsafe {
                    f(
                        h,
                        jobz,
                        m,
                        n,
                        a.cast(),
                        lda,
                        s.cast(),
                        u.cast(),
                        ldu,
                        v.cast(),
                        ldv,
                        work.cast(),
                        lwork,
                        info,
                        params,
                        batch,
                    )
                })
            }
            unsafe fn potrf_batched(
                h: cusolverDnHandle_t,
                uplo: cublasFillMode_t,
                n: i32,
                a_array: *mut *mut c_void,
                lda: i32,
                info: *mut i32,
                batch: i32,
            ) -> Result<cusolverStatus_t> {
                let f = cuda_sys::cusolver()?.$potrf_batched()?;
                // SAFETY: the caller's contract (see the trait).
                Ok(unsafe { f(h, uplo, n, a_array.cast(), lda, info, batch) })
            }
            unsafe fn getrf_batched(
                h: cublasHandle_t,
                n: i32,
                a_array: *const *mut c_void,
                lda: i32,
                pivots: *mut i32,
                info: *mut i32,
                batch: i32,
            ) -> Result<cublasStatus_t> {
                let f = cuda_sys::cublas()?.$getrf()?;
                // SAFETY: the caller's contract (see the trait).
                Ok(unsafe { f(h, n, a_array.cast(), lda, pivots, info, batch) })
            }
            unsafe fn getrs_batched(
                h: cublasHandle_t,
                transpose: bool,
                n: i32,
                nrhs: i32,
                a_array: *const *const c_void,
                lda: i32,
                pivots: *const i32,
                b_array: *const *mut c_void,
                ldb: i32,
                info: *mut i32,
                batch: i32,
            ) -> Result<cublasStatus_t> {
                let f = cuda_sys::cublas()?.$getrs()?;
                let trans = if transpose {
                    cuda_sys::cublas::cublasOperation_t::CUBLAS_OP_T
                } else {
                    cuda_sys::cublas::cublasOperation_t::CUBLAS_OP_N
                };
                // SAFETY: the caller's contract (see the trait).
                Ok(unsafe {
                    f(
                        h,
                        trans,
                        n,
                        nrhs,
                        a_array.cast(),
                        lda,
                        pivots,
                        b_array.cast(),
                        ldb,
                        info,
                        batch,
                    )
                })
            }
            unsafe fn getri_batched(
                h: cublasHandle_t,
                n: i32,
                a_array: *const *const c_void,
                lda: i32,
                pivots: *const i32,
                c_array: *const *mut c_void,
                ldc: i32,
                info: *mut i32,
                batch: i32,
            ) -> Result<cublasStatus_t> {
                let f = cuda_sys::cublas()?.$getri()?;
                // SAFETY: the caller's contract (see the trait).
                Ok(unsafe {
                    f(
                        h,
                        n,
                        a_array.cast(),
                        lda,
                        pivots,
                        c_array.cast(),
                        ldc,
                        info,
                        batch,
                    )
                })
            }
        }
    };
}

typed!(
    f32,
    cusolverDnSorgqr_bufferSize,
    cusolverDnSorgqr,
    cusolverDnSsyevjBatched_bufferSize,
    cusolverDnSsyevjBatched,
    cusolverDnSgesvdjBatched_bufferSize,
    cusolverDnSgesvdjBatched,
    cusolverDnSpotrfBatched,
    cublasSgetrfBatched,
    cublasSgetrsBatched,
    cublasSgetriBatched
);
typed!(
    f64,
    cusolverDnDorgqr_bufferSize,
    cusolverDnDorgqr,
    cusolverDnDsyevjBatched_bufferSize,
    cusolverDnDsyevjBatched,
    cusolverDnDgesvdjBatched_bufferSize,
    cusolverDnDgesvdjBatched,
    cusolverDnDpotrfBatched,
    cublasDgetrfBatched,
    cublasDgetrsBatched,
    cublasDgetriBatched
);
