//! Exchange with other libraries, zero-copy: DLPack 1.0 export and import (`dlpack`, over the
//! header's structures in `dlpack_abi`), the
//! release of imported tensors after their last use without a host wait (`imported`), and,
//! behind the `python` feature, the Python face (`python`: `__dlpack__`,
//! `__cuda_array_interface__`, `from_python`).

mod dlpack;
mod dlpack_abi;
mod imported;
#[cfg(feature = "python")]
pub mod python;

pub use dlpack::DLPackTensor;
pub use dlpack_abi::{
    DLDataType, DLDataTypeCode, DLDevice, DLDeviceType, DLManagedTensor, DLManagedTensorVersioned, DLPackError,
    DLPackFlags, DLPackVersion, DLTensor,
};
#[cfg(feature = "python")]
pub(crate) use imported::disable_exit_release;
pub(crate) use imported::release_all_imports;
pub use imported::release_completed_imports;
