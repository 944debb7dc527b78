//! The `cuda.core` counterpart for Rust: compile CUDA C++ at run time with NVRTC ([`Program`]),
//! hold and link device code ([`ObjectCode`], [`Linker`] over nvJitLink), and keep compiled
//! kernels in a memory and disk [`KernelCache`].
//!
//! ```no_run
//! use cuda_core::{Arch, CompileTarget, Program, ProgramOptions};
//!
//! # fn main() -> cuda_core::Result<()> {
//! let source = r#"
//! template <typename T>
//! __global__ void add(const T *x, const T *y, T *out, unsigned n) {
//!     unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
//!     if (i < n) out[i] = x[i] + y[i];
//! }"#;
//! let program = Program::new(source, ProgramOptions::for_arch(Arch::Sm(90))).with_name_expressions(["add<float>"]);
//! let (cubin, outcome) = program.compile_with_outcome(CompileTarget::Cubin)?;
//! println!("{outcome:?}: {} bytes, kernel symbol {}", cubin.code().len(), cubin.lowered_name("add<float>")?);
//! # Ok(())
//! # }
//! ```
//!
//! Libraries are found at run time by `cuda-sys` (`CUDA_NVRTC_LIBRARY`, `CUDA_NVJITLINK_LIBRARY`, ...);
//! nothing here needs a GPU until code is loaded onto one.

mod cache;
mod cuda_headers;
mod device;
mod driver_link;
mod error;
mod kernel;
mod launch;
mod linker;
mod nvrtc;
mod object_code;
mod options;
mod program;
mod sha256;

pub use cache::{CacheKey, CacheOutcome, CacheStats, KernelCache, CACHE_DIR_ENV, CACHE_SWITCH_ENV};
pub use cuda_headers::find_cuda_include_dirs;
pub use device::{Device, DeviceProperties};
pub use error::{Error, Result};
pub use kernel::{Kernel, KernelAttributes};
pub use launch::{launch, LaunchConfig};
pub use linker::{LinkTarget, Linker, LinkerOptions};
pub use object_code::{CodeKind, ObjectCode};
pub use options::{Arch, CompileTarget, ProgramOptions, Std};
pub use program::Program;
