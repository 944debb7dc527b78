//! NVIDIA's libraries for the crates of this workspace: cuBLAS and cuBLASLt (the `blas`
//! feature), NCCL (the `nccl` feature), cuFFT ([`fft`], the `fft` feature) and cuSOLVER with
//! cuBLAS's batched LU ([`solver`], the `solver` feature), all on by default, over
//! [`cuda_driver`]'s streams and buffers, loaded at run time through [`cuda_sys`] like every
//! other CUDA library here.
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
//! # NCCL
//! [`nccl`] runs collectives between GPUs: a [`nccl::Communicator`] per GPU (all of this
//! process's with [`nccl::Communicator::init_all`], one per process with
//! [`nccl::Communicator::init_rank`] and a [`nccl::UniqueId`] sent as bytes), then
//! `all_reduce`, `reduce`, `broadcast`, `all_gather`, `reduce_scatter`, `send`/`recv` on any
//! memory of the device-memory contract ([`cuda_driver::DeviceMemory`]), in place or out of
//! place, for `i8`, `u8`, `i32`, `u32`, `i64`, `u64`, `f16`, `bf16`, `f32` and `f64`; one thread
//! driving several GPUs puts each step's calls in [`nccl::group`]. Communicators are
//! non-blocking: every wait for NCCL has a timeout ([`Error::Timeout`]), never a hang. Counts,
//! ranks, contexts and overlap are checked before NCCL is called.
//!
//! ```no_run
//! use cuda_driver::{Device, DeviceBuffer, Stream};
//! use cuda_libs::nccl::{Communicator, ReduceOp};
//!
//! # fn main() -> cuda_libs::Result<()> {
//! let context = Device::get(0)?.primary_context()?;
//! let comms = Communicator::init_all(std::slice::from_ref(&context))?;
//! let stream = Stream::new(&context)?;
//! let mut grad = DeviceBuffer::from_slice(&context, &[0.5f32; 4096])?;
//! comms[0].all_reduce_in_place::<f32>(&mut grad, 4096, ReduceOp::Avg, &stream)?;
//! stream.synchronize()?;
//! # Ok(())
//! # }
//! ```
//!
//! # The system (NVML)
//! [`system`] (the `nvml` feature, on by default) reports what NVML (`libnvidia-ml.so.1`, part
//! of the driver package) knows: the driver version, the devices' names, UUIDs, memory,
//! utilisation, temperature, clocks and power, topology and peer-to-peer status between
//! devices, NVLink states, and the processes using a device ([`system::System`]).
//!
//! # Finding the libraries
//! cuBLAS (`libcublas.so.13`) and cuBLASLt (`libcublasLt.so.13`) come with the CUDA 13 toolkit
//! or the `nvidia-cublas` wheel (`pip install "nvidia-cublas==13.*"`), and are looked for as
//! [`cuda_sys::search`] describes; `CUDA_CUBLAS_LIBRARY` and `CUDA_CUBLASLT_LIBRARY` name the
//! files explicitly. NCCL (`libnccl.so.2`) comes with the `nvidia-nccl-cu13` wheel (its
//! `nvidia/nccl/lib` folder) or a system package; `CUDA_NCCL_LIBRARY` names the file. On a CUDA
//! 12 driver the CUDA 12 builds are looked for first (`libcublas.so.12`, `libcublasLt.so.12` of
//! `nvidia-cublas-cu12`, NCCL of `nvidia-nccl-cu12`): the wrappers call the same functions in
//! both (checked on the CPU by the `cuda12_symbols` test, not yet on a GPU). A library that is
//! not found, or only in a build the driver cannot use, is an [`Error::Load`] listing every place
//! tried, never a panic. cuFFT
//! (`libcufft.so.12`) and cuSOLVER (`libcusolver.so.12`, which needs cuSPARSE, cuBLAS and
//! nvJitLink beside it) come with the toolkit or the `nvidia-cufft` and `nvidia-cusolver` wheels;
//! `CUDA_CUFFT_LIBRARY` and `CUDA_CUSOLVER_LIBRARY` name the files; on a CUDA 12 driver their
//! CUDA 12 builds (`libcufft.so.11`, `libcusolver.so.11` of the `-cu12` wheels) are looked for
//! first (not yet run on a GPU). NVML is looked for like
//! the driver (the loader, WSL's folder, the CUDA roots' `compat`); `CUDA_NVML_LIBRARY` names
//! the file.
//!
//! # Errors
//! Every function returns this crate's [`Error`]: a library status with its name
//! ([`Error::Status`]; NCCL's with `ncclGetErrorString`'s text, [`Error::Nccl`]), a matrix a
//! solver found singular, not positive definite or not converging ([`Error::Linalg`]), a wait for
//! NCCL that timed out ([`Error::Timeout`]), a library or function that is not there, a driver
//! error, or bad input (shapes, leading dimensions, buffer lengths, counts, ranks) caught before
//! any library call.

#![warn(missing_docs)]
// Where crates documented without this one (docs.rs builds each alone) link its items.
#![doc(html_root_url = "https://docs.rs/cudars-libs/0.1.0")]

#[cfg(feature = "blas")]
pub mod blas;
mod error;
#[cfg(feature = "fft")]
pub mod fft;
#[cfg(feature = "nccl")]
pub mod nccl;
#[cfg(feature = "solver")]
pub mod solver;
#[cfg(feature = "nvml")]
pub mod system;

pub use error::{Error, LinalgFailure, Result};
