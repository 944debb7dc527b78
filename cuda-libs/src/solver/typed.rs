//! The routines that come in one function per element type (cuSOLVER's legacy and batched API,
//! cuBLAS's batched LU): each element type names its functions once ([`Typed`]), as function
//! pointers of one generic signature whose element pointers are the library's own types
//! (`Raw`, and `RawReal` for the real outputs of the complex routines).

use cuda_sys::cublas::{cublasHandle_t, cublasOperation_t, cublasStatus_t};
use cuda_sys::cusolver::{
    cublasFillMode_t, cusolverDnHandle_t, cusolverEigMode_t, cusolverStatus_t, gesvdjInfo_t, syevjInfo_t,
};

use crate::Result;

/// `cusolverDn<t>orgqr_bufferSize` (`<t>ungqr` for complex types).
pub(crate) type OrgqrBufferSize<E> =
    unsafe extern "C" fn(cusolverDnHandle_t, i32, i32, i32, *const E, i32, *const E, *mut i32) -> cusolverStatus_t;
/// `cusolverDn<t>orgqr` (`<t>ungqr`).
pub(crate) type Orgqr<E> = unsafe extern "C" fn(
    cusolverDnHandle_t,
    i32,
    i32,
    i32,
    *mut E,
    i32,
    *const E,
    *mut E,
    i32,
    *mut i32,
) -> cusolverStatus_t;
/// `cusolverDn<t>syevjBatched_bufferSize` (`<t>heevjBatched`): `R` is the eigenvalues' type.
pub(crate) type SyevjBatchedBufferSize<E, R> = unsafe extern "C" fn(
    cusolverDnHandle_t,
    cusolverEigMode_t,
    cublasFillMode_t,
    i32,
    *const E,
    i32,
    *const R,
    *mut i32,
    syevjInfo_t,
    i32,
) -> cusolverStatus_t;
/// `cusolverDn<t>syevjBatched` (`<t>heevjBatched`).
pub(crate) type SyevjBatched<E, R> = unsafe extern "C" fn(
    cusolverDnHandle_t,
    cusolverEigMode_t,
    cublasFillMode_t,
    i32,
    *mut E,
    i32,
    *mut R,
    *mut E,
    i32,
    *mut i32,
    syevjInfo_t,
    i32,
) -> cusolverStatus_t;
/// `cusolverDn<t>gesvdjBatched_bufferSize`: `R` is the singular values' type.
pub(crate) type GesvdjBatchedBufferSize<E, R> = unsafe extern "C" fn(
    cusolverDnHandle_t,
    cusolverEigMode_t,
    i32,
    i32,
    *const E,
    i32,
    *const R,
    *const E,
    i32,
    *const E,
    i32,
    *mut i32,
    gesvdjInfo_t,
    i32,
) -> cusolverStatus_t;
/// `cusolverDn<t>gesvdjBatched`.
pub(crate) type GesvdjBatched<E, R> = unsafe extern "C" fn(
    cusolverDnHandle_t,
    cusolverEigMode_t,
    i32,
    i32,
    *mut E,
    i32,
    *mut R,
    *mut E,
    i32,
    *mut E,
    i32,
    *mut E,
    i32,
    *mut i32,
    gesvdjInfo_t,
    i32,
) -> cusolverStatus_t;
/// `cusolverDn<t>gesvdj_bufferSize`: `R` is the singular values' type.
pub(crate) type GesvdjBufferSize<E, R> = unsafe extern "C" fn(
    cusolverDnHandle_t,
    cusolverEigMode_t,
    i32,
    i32,
    i32,
    *const E,
    i32,
    *const R,
    *const E,
    i32,
    *const E,
    i32,
    *mut i32,
    gesvdjInfo_t,
) -> cusolverStatus_t;
/// `cusolverDn<t>gesvdj`.
pub(crate) type Gesvdj<E, R> = unsafe extern "C" fn(
    cusolverDnHandle_t,
    cusolverEigMode_t,
    i32,
    i32,
    i32,
    *mut E,
    i32,
    *mut R,
    *mut E,
    i32,
    *mut E,
    i32,
    *mut E,
    i32,
    *mut i32,
    gesvdjInfo_t,
) -> cusolverStatus_t;
/// `cusolverDn<t>potrfBatched`.
pub(crate) type PotrfBatched<E> = unsafe extern "C" fn(
    cusolverDnHandle_t,
    cublasFillMode_t,
    i32,
    *mut *mut E,
    i32,
    *mut i32,
    i32,
) -> cusolverStatus_t;
/// `cublas<t>getrfBatched`.
pub(crate) type GetrfBatched<E> =
    unsafe extern "C" fn(cublasHandle_t, i32, *const *mut E, i32, *mut i32, *mut i32, i32) -> cublasStatus_t;
/// `cublas<t>getrsBatched`.
pub(crate) type GetrsBatched<E> = unsafe extern "C" fn(
    cublasHandle_t,
    cublasOperation_t,
    i32,
    i32,
    *const *const E,
    i32,
    *const i32,
    *const *mut E,
    i32,
    *mut i32,
    i32,
) -> cublasStatus_t;
/// `cublas<t>getriBatched`.
pub(crate) type GetriBatched<E> = unsafe extern "C" fn(
    cublasHandle_t,
    i32,
    *const *const E,
    i32,
    *const i32,
    *const *mut E,
    i32,
    *mut i32,
    i32,
) -> cublasStatus_t;

/// The typed functions of an element type, resolved on first use (a missing symbol is
/// [`crate::Error::Symbol`]). Sealed: implemented for the four solver element types only.
pub trait Typed: Sized {
    /// cuSOLVER's element type (`float`, `double`, `cuComplex`, `cuDoubleComplex`).
    type Raw;
    /// cuSOLVER's type of the real outputs (eigenvalues, singular values).
    type RawReal;
    /// cuBLAS's element type.
    type BlasRaw;
    /// `<t>orgqr_bufferSize`, or `<t>ungqr_bufferSize`.
    fn orgqr_buffer_size() -> Result<OrgqrBufferSize<Self::Raw>>;
    /// `<t>orgqr`, or `<t>ungqr`.
    fn orgqr() -> Result<Orgqr<Self::Raw>>;
    /// `<t>syevjBatched_bufferSize`, or `<t>heevjBatched_bufferSize`.
    fn syevj_batched_buffer_size() -> Result<SyevjBatchedBufferSize<Self::Raw, Self::RawReal>>;
    /// `<t>syevjBatched`, or `<t>heevjBatched`.
    fn syevj_batched() -> Result<SyevjBatched<Self::Raw, Self::RawReal>>;
    /// `<t>gesvdjBatched_bufferSize`.
    fn gesvdj_batched_buffer_size() -> Result<GesvdjBatchedBufferSize<Self::Raw, Self::RawReal>>;
    /// `<t>gesvdjBatched`.
    fn gesvdj_batched() -> Result<GesvdjBatched<Self::Raw, Self::RawReal>>;
    /// `<t>gesvdj_bufferSize`.
    fn gesvdj_buffer_size() -> Result<GesvdjBufferSize<Self::Raw, Self::RawReal>>;
    /// `<t>gesvdj`.
    fn gesvdj() -> Result<Gesvdj<Self::Raw, Self::RawReal>>;
    /// `<t>potrfBatched`.
    fn potrf_batched() -> Result<PotrfBatched<Self::Raw>>;
    /// `cublas<t>getrfBatched`.
    fn getrf_batched() -> Result<GetrfBatched<Self::BlasRaw>>;
    /// `cublas<t>getrsBatched`.
    fn getrs_batched() -> Result<GetrsBatched<Self::BlasRaw>>;
    /// `cublas<t>getriBatched`.
    fn getri_batched() -> Result<GetriBatched<Self::BlasRaw>>;
}

macro_rules! typed {
    ($ty:ty, $raw:ty, $raw_real:ty, $blas_raw:ty, $orgqr_size:ident, $orgqr:ident, $syevj_size:ident,
     $syevj:ident, $gesvdj_size:ident, $gesvdj:ident, $gesvdj_one_size:ident, $gesvdj_one:ident,
     $potrf_batched:ident, $getrf:ident, $getrs:ident,
     $getri:ident) => {
        impl Typed for $ty {
            type Raw = $raw;
            type RawReal = $raw_real;
            type BlasRaw = $blas_raw;
            fn orgqr_buffer_size() -> Result<OrgqrBufferSize<$raw>> {
                Ok(cuda_sys::cusolver()?.$orgqr_size()?)
            }
            fn orgqr() -> Result<Orgqr<$raw>> {
                Ok(cuda_sys::cusolver()?.$orgqr()?)
            }
            fn syevj_batched_buffer_size() -> Result<SyevjBatchedBufferSize<$raw, $raw_real>> {
                Ok(cuda_sys::cusolver()?.$syevj_size()?)
            }
            fn syevj_batched() -> Result<SyevjBatched<$raw, $raw_real>> {
                Ok(cuda_sys::cusolver()?.$syevj()?)
            }
            fn gesvdj_batched_buffer_size() -> Result<GesvdjBatchedBufferSize<$raw, $raw_real>> {
                Ok(cuda_sys::cusolver()?.$gesvdj_size()?)
            }
            fn gesvdj_batched() -> Result<GesvdjBatched<$raw, $raw_real>> {
                Ok(cuda_sys::cusolver()?.$gesvdj()?)
            }
            fn gesvdj_buffer_size() -> Result<GesvdjBufferSize<$raw, $raw_real>> {
                Ok(cuda_sys::cusolver()?.$gesvdj_one_size()?)
            }
            fn gesvdj() -> Result<Gesvdj<$raw, $raw_real>> {
                Ok(cuda_sys::cusolver()?.$gesvdj_one()?)
            }
            fn potrf_batched() -> Result<PotrfBatched<$raw>> {
                Ok(cuda_sys::cusolver()?.$potrf_batched()?)
            }
            fn getrf_batched() -> Result<GetrfBatched<$blas_raw>> {
                Ok(cuda_sys::cublas()?.$getrf()?)
            }
            fn getrs_batched() -> Result<GetrsBatched<$blas_raw>> {
                Ok(cuda_sys::cublas()?.$getrs()?)
            }
            fn getri_batched() -> Result<GetriBatched<$blas_raw>> {
                Ok(cuda_sys::cublas()?.$getri()?)
            }
        }
    };
}

typed!(
    f32,
    f32,
    f32,
    f32,
    cusolverDnSorgqr_bufferSize,
    cusolverDnSorgqr,
    cusolverDnSsyevjBatched_bufferSize,
    cusolverDnSsyevjBatched,
    cusolverDnSgesvdjBatched_bufferSize,
    cusolverDnSgesvdjBatched,
    cusolverDnSgesvdj_bufferSize,
    cusolverDnSgesvdj,
    cusolverDnSpotrfBatched,
    cublasSgetrfBatched,
    cublasSgetrsBatched,
    cublasSgetriBatched
);
typed!(
    f64,
    f64,
    f64,
    f64,
    cusolverDnDorgqr_bufferSize,
    cusolverDnDorgqr,
    cusolverDnDsyevjBatched_bufferSize,
    cusolverDnDsyevjBatched,
    cusolverDnDgesvdjBatched_bufferSize,
    cusolverDnDgesvdjBatched,
    cusolverDnDgesvdj_bufferSize,
    cusolverDnDgesvdj,
    cusolverDnDpotrfBatched,
    cublasDgetrfBatched,
    cublasDgetrsBatched,
    cublasDgetriBatched
);
typed!(
    num_complex::Complex<f32>,
    cuda_sys::cusolver::cuComplex,
    f32,
    cuda_sys::cublas::cuComplex,
    cusolverDnCungqr_bufferSize,
    cusolverDnCungqr,
    cusolverDnCheevjBatched_bufferSize,
    cusolverDnCheevjBatched,
    cusolverDnCgesvdjBatched_bufferSize,
    cusolverDnCgesvdjBatched,
    cusolverDnCgesvdj_bufferSize,
    cusolverDnCgesvdj,
    cusolverDnCpotrfBatched,
    cublasCgetrfBatched,
    cublasCgetrsBatched,
    cublasCgetriBatched
);
typed!(
    num_complex::Complex<f64>,
    cuda_sys::cusolver::cuDoubleComplex,
    f64,
    cuda_sys::cublas::cuDoubleComplex,
    cusolverDnZungqr_bufferSize,
    cusolverDnZungqr,
    cusolverDnZheevjBatched_bufferSize,
    cusolverDnZheevjBatched,
    cusolverDnZgesvdjBatched_bufferSize,
    cusolverDnZgesvdjBatched,
    cusolverDnZgesvdj_bufferSize,
    cusolverDnZgesvdj,
    cusolverDnZpotrfBatched,
    cublasZgetrfBatched,
    cublasZgetrsBatched,
    cublasZgetriBatched
);
