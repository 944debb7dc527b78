//! NVIDIA's libraries for the crates of this workspace: cuBLAS and cuBLASLt (the `blas`
//! feature, on by default) over [`cuda_driver`]'s streams and buffers, loaded at run time
//! through [`cuda_sys`] like every other CUDA library here.
//!
//! ```no_run
//! use cuda_driver::{Device, DeviceBuffer, Stream};
//! use cuda_libs::blas::{Blas, Epilogue, Gemm, Lt};
//! use half::bf16;
//!
//! # fn main() -> cuda_libs::Result<()> {
//! let context = Device::get(0)?.primary_context()?;
//! let stream = Stream::new(&context)?;
//! let (m, n, k) = (128, 64, 256);
//! let x = DeviceBuffer::from_slice(&context, &vec![bf16::from_f32(0.5); m * k])?;
//! let w = DeviceBuffer::from_slice(&context, &vec![bf16::from_f32(0.25); k * n])?;
//! let b = DeviceBuffer::from_slice(&context, &vec![bf16::from_f32(-1.0); n])?;
//! let mut y = DeviceBuffer::<bf16>::zeroed(&context, m * n)?;
//!
//! // y = x @ w, row-major, f32 accumulation.
//! let mut blas = Blas::new(&stream)?;
//! blas.gemm(&Gemm::new(m, n, k), &x, &w, &mut y)?;
//!
//! // y = relu(x @ w + b) in one cuBLASLt call.
//! let mut lt = Lt::new(&stream)?;
//! lt.matmul(&Gemm::new(m, n, k), Epilogue::ReluBias, &x, &w, Some(&b), &mut y)?;
//! stream.synchronize()?;
//! assert_eq!(y.to_vec()?[0].to_f32(), 31.0); // 256 * 0.5 * 0.25 - 1
//! # Ok(())
//! # }
//! ```
//!
//! # Finding the libraries
//! cuBLAS (`libcublas.so.13`) and cuBLASLt (`libcublasLt.so.13`) come with the CUDA 13 toolkit
//! or the `nvidia-cublas` wheel (`pip install "nvidia-cublas==13.*"`), and are looked for as
//! [`cuda_sys::search`] describes; `CUDA_CUBLAS_LIBRARY` and `CUDA_CUBLASLT_LIBRARY` name the
//! files explicitly. A library that is not found is an [`Error::Load`] listing every place
//! tried, never a panic.
//!
//! # Errors
//! Every function returns this crate's [`Error`]: a library status with its name
//! ([`Error::Status`]), a library or function that is not there, a driver error, or bad input
//! (shapes, leading dimensions, buffer lengths) caught before any library call.

#![warn(missing_docs)]
// Where crates documented without this one (docs.rs builds each alone) link its items.
#![doc(html_root_url = "https://docs.rs/cudars-libs/0.1.0")]

#[cfg(feature = "blas")]
pub mod blas;
mod error;
#[cfg(feature = "nccl")]
pub mod nccl;

pub use error::{Error, Result};
