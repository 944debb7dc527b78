//! [`ArgType`]: what generated code is specialised on, per argument; the key of the loaded code
//! in the registry.

use crate::array::dtype::DType;

/// The kind and element type of an argument: what generated code is specialised on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ArgType {
    /// An array of this element type.
    Array(DType),
    /// A scalar of this type.
    Scalar(DType),
}

impl ArgType {
    /// The element or scalar type.
    pub fn dtype(self) -> DType {
        match self {
            ArgType::Array(d) | ArgType::Scalar(d) => d,
        }
    }

    /// Whether it is an array.
    pub fn is_array(self) -> bool {
        matches!(self, ArgType::Array(_))
    }
}
