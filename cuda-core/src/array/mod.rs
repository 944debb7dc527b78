//! The CuPy-style array layer. Its folders show its architecture, from the bottom up:
//! - `dtype.rs`, `promotion.rs`: element types and NumPy 2's promotion table; `axis.rs`: axis
//!   arguments (negative ones count from the end);
//! - `memory/`: the stream-ordered caching [`MemoryPool`], the ordering of memory used by several
//!   streams, overlap by address ranges, memory from other libraries;
//! - `device_array.rs` (the type, its storage and accessors) and `view.rs` (views that share
//!   storage: `slice`, `transpose`, `broadcast_to`, `reshape`, ...);
//! - `kernels/`: the families of generated kernels ([`ElementwiseKernel`], [`ReductionKernel`],
//!   copy and fill, [`RawKernel`]) with their shared argument checks and the one registry of
//!   loaded code;
//! - `routines/`: NumPy's chapters as methods (creation, manipulation, math, reductions,
//!   random, linalg, io, printing, sorting, searching, sets, statistics);
//! - `interop/`: DLPack and Python.
//!
//! Each layer uses only those above it in this list.

mod axis;
pub(crate) mod device_array;
pub(crate) mod dtype;
pub(crate) mod interop;
pub(crate) mod kernels;
mod memory;
mod promotion;
pub(crate) mod routines;
mod view;

pub use axis::{Axes, Axis, OptionalAxis};
pub use device_array::{DeviceArray, IntoShape};
pub use dtype::{Bool, DType, Element};
#[cfg(feature = "python")]
pub(crate) use interop::disable_exit_release;
pub(crate) use interop::release_all_imports;
pub use interop::{
    release_completed_imports, DLDataType, DLDataTypeCode, DLDevice, DLDeviceType, DLManagedTensor,
    DLManagedTensorVersioned, DLPackError, DLPackFlags, DLPackTensor, DLPackVersion, DLTensor,
};
pub(crate) use kernels::registry::{forget_kernels, loaded_contexts, unload_loaded, GeneratedKernelsPin};
pub use kernels::{
    load_generated_as_ptx, unload_generated_kernels, Arg, ArgType, ElementwiseKernel, IndexElement, IndexMode,
    IndexWidth, RawKernel, ReductionKernel,
};
pub(crate) use memory::{default_pool_contexts, release_default_pools, synchronize_context};
pub use memory::{size_class, MemoryPool, PoolStats, PooledBlock};
pub use promotion::{Bitwise, Integral, Promote, Scalars};
#[cfg(feature = "fft")]
pub use routines::fft;
pub use routines::random;
pub use routines::{
    allclose, array_equal, where_, Average, AverageOf, BinRule, ComplexElement, Expr, ExprOps, Interpolated, IntoExpr,
    MeshIndexing, NpyError, PadMode, QuantileMethod, Rhs, SortComplex, Unique, WhereArms,
};
#[cfg(feature = "blas")]
pub use routines::{
    matmul_replay, multi_dot, set_matmul_replay, set_tf32, tf32, MatmulElement, MatmulType, Norm, NormElement,
    NormInput, NormOf, TensorAxes, TF32_ENV,
};
#[cfg(feature = "solver")]
pub use routines::{LinalgInput, Lstsq, RealResult, Solved, SolverElement};
pub use view::{broadcast_shapes, Slice, SplitAt};
