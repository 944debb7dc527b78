//! The CuPy-style pooled array layer: a stream-ordered caching [`MemoryPool`], [`DeviceArray`],
//! generated [`ElementwiseKernel`]s and [`ReductionKernel`]s, [`RawKernel`], and DLPack exchange.

mod creation;
mod device_array;
mod dlpack;
mod dtype;
mod elementwise;
mod expr;
mod expr_ops;
mod generated;
mod params;
mod pool;
mod promotion;
mod raw;
mod raw_kernel;
mod reduction;
mod view;

pub use device_array::{DeviceArray, IntoShape};
pub use dlpack::{
    DLDataType, DLDataTypeCode, DLDevice, DLDeviceType, DLManagedTensor, DLManagedTensorVersioned, DLPackError,
    DLPackFlags, DLPackTensor, DLPackVersion, DLTensor,
};
pub use dtype::{Bool, DType, Element};
pub use elementwise::ElementwiseKernel;
pub use expr::{where_, Expr, ExprOps, IntoExpr};
pub use generated::{Arg, ArgType};
pub use pool::{size_class, MemoryPool, PoolStats, PooledBlock};
pub use promotion::{Promote, Scalars};
pub use raw_kernel::RawKernel;
pub use reduction::{sum, ReductionKernel};
pub use view::{broadcast_shapes, Slice};
