//! The families of generated kernels, and what they share: arguments and their checks
//! ([`args`]), parameter lists with type placeholders ([`params`]), the one registry of loaded
//! code per context ([`registry`]), and the device helpers every family's source starts with
//! (`prelude.cuh`).
//!
//! A family turns a signature into CUDA C++ with named entry points, chooses the index width
//! (one rule: [`args::fits_32_bits`]) and the grid ([`registry::grid_for`]), and loads its code
//! through the registry, and launches it through [`launch::Launch`], the one launch path (whose
//! lists are [`inline::Inline`], so the usual launch allocates nothing):
//! - [`elementwise`]: [`ElementwiseKernel`], contiguous (vector loads) and strided;
//! - [`reduction`] and [`reduction_axis`]: [`ReductionKernel`] over the whole array or axes;
//! - [`copy`]: copies and fills;
//! - [`gather`]: `take`, `take_along_axis` and `put`: reads or writes at indices from an index
//!   array, one kernel per call, out-of-range indices reported without a device trap;
//! - the Philox generator of [`crate::random`] (its source lives with the routines);
//! - [`raw_kernel`]: [`RawKernel`], user-written whole kernels.
//!
//! A new family is one new file here plus its `mod` line.

pub(crate) mod args;
pub(crate) mod copy;
pub(crate) mod elementwise;
pub(crate) mod gather;
pub(crate) mod inline;
pub(crate) mod launch;
pub(crate) mod params;
pub(crate) mod raw_kernel;
pub(crate) mod reduction;
pub(crate) mod reduction_axis;
pub(crate) mod registry;
pub(crate) mod signature;

pub(crate) use args::ErasedArray;
pub use args::{Arg, ArgType, IndexWidth};
pub use elementwise::ElementwiseKernel;
pub use gather::{IndexElement, IndexMode};
pub use raw_kernel::RawKernel;
pub use reduction::ReductionKernel;
pub use registry::{load_generated_as_ptx, unload_generated_kernels};

/// CUDA source every generated kernel starts with: the crate's f16 and bf16 types.
pub(crate) const PRELUDE: &str = include_str!("prelude.cuh");
