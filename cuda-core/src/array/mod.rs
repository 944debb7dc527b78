//! The CuPy-style pooled array layer: a stream-ordered caching [`MemoryPool`], [`DeviceArray`],
//! generated [`ElementwiseKernel`]s and [`ReductionKernel`]s, [`RawKernel`], and DLPack exchange.

mod creation;
mod device_array;
mod dlpack;
mod dtype;
mod elementwise;
mod expr;
mod expr_ops;
mod format;
mod generated;
mod imported;
mod params;
mod pool;
mod pool_cupy;
mod promotion;
pub mod random;
mod raw;
mod raw_kernel;
mod reduce;
mod reduction;
mod reduction_axis;
mod view;

pub use device_array::{DeviceArray, IntoShape};
pub use dlpack::{
    DLDataType, DLDataTypeCode, DLDevice, DLDeviceType, DLManagedTensor, DLManagedTensorVersioned, DLPackError,
    DLPackFlags, DLPackTensor, DLPackVersion, DLTensor,
};
pub use dtype::{Bool, DType, Element};
pub use elementwise::ElementwiseKernel;
pub use expr::{where_, Expr, ExprOps, IntoExpr};
pub use generated::{load_generated_as_ptx, unload_generated_kernels, Arg, ArgType};
pub(crate) use generated::{loaded_contexts, unload_loaded};
#[cfg(feature = "python")]
pub(crate) use imported::disable_exit_release;
pub(crate) use imported::release_all_imports;
pub use imported::release_completed_imports;
pub(crate) use pool::{default_pool_contexts, release_default_pools, synchronize_context};
pub use pool::{size_class, MemoryPool, PoolStats, PooledBlock};
pub use promotion::{Promote, Scalars};
pub use raw_kernel::RawKernel;
pub use reduction::ReductionKernel;
pub use view::{broadcast_shapes, Slice};
