//! The structures of the DLPack 1.0 header (`dlpack.h`), laid out as C lays them out: the
//! versioned [`DLManagedTensorVersioned`], the legacy [`DLManagedTensor`], their parts, and
//! [`DLPackError`], why a tensor cannot be exchanged. The exchange itself is `dlpack.rs`.

use std::ffi::c_void;

use crate::array::dtype::DType;

/// Where a tensor lives (`DLDeviceType`). Only the values this crate uses or checks are named.
#[repr(transparent)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct DLDeviceType(pub i32);

impl DLDeviceType {
    /// Host memory.
    pub const CPU: DLDeviceType = DLDeviceType(1);
    /// CUDA device memory.
    pub const CUDA: DLDeviceType = DLDeviceType(2);
    /// Pinned host memory (`cudaMallocHost`).
    pub const CUDA_HOST: DLDeviceType = DLDeviceType(3);
    /// AMD ROCm device memory.
    pub const ROCM: DLDeviceType = DLDeviceType(10);
    /// CUDA managed memory.
    pub const CUDA_MANAGED: DLDeviceType = DLDeviceType(13);
}

impl std::fmt::Display for DLDeviceType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match *self {
            DLDeviceType::CPU => f.write_str("CPU"),
            DLDeviceType::CUDA => f.write_str("CUDA"),
            DLDeviceType::CUDA_HOST => f.write_str("CUDA pinned host"),
            DLDeviceType::ROCM => f.write_str("ROCm"),
            DLDeviceType::CUDA_MANAGED => f.write_str("CUDA managed"),
            DLDeviceType(other) => write!(f, "DLPack device type {other}"),
        }
    }
}

/// A device: type and ordinal.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct DLDevice {
    /// The kind of memory.
    pub device_type: DLDeviceType,
    /// The device ordinal.
    pub device_id: i32,
}

/// The class of an element type (`DLDataTypeCode`).
#[repr(transparent)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct DLDataTypeCode(pub u8);

impl DLDataTypeCode {
    /// Signed integers.
    pub const INT: DLDataTypeCode = DLDataTypeCode(0);
    /// Unsigned integers.
    pub const UINT: DLDataTypeCode = DLDataTypeCode(1);
    /// IEEE floating point.
    pub const FLOAT: DLDataTypeCode = DLDataTypeCode(2);
    /// bfloat16.
    pub const BFLOAT: DLDataTypeCode = DLDataTypeCode(4);
    /// Complex numbers.
    pub const COMPLEX: DLDataTypeCode = DLDataTypeCode(5);
    /// Booleans.
    pub const BOOL: DLDataTypeCode = DLDataTypeCode(6);
}

/// An element type: class, bits and vector lanes.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct DLDataType {
    /// The class.
    pub code: DLDataTypeCode,
    /// Bits per lane.
    pub bits: u8,
    /// Lanes (1 for scalars).
    pub lanes: u16,
}

impl From<DType> for DLDataType {
    fn from(dtype: DType) -> Self {
        let code = if dtype == DType::BF16 {
            DLDataTypeCode::BFLOAT
        } else if dtype == DType::Bool {
            DLDataTypeCode::BOOL
        } else if dtype.is_complex() {
            DLDataTypeCode::COMPLEX
        } else if dtype.is_float() {
            DLDataTypeCode::FLOAT
        } else if dtype.is_signed_int() {
            DLDataTypeCode::INT
        } else {
            DLDataTypeCode::UINT
        };
        DLDataType {
            code,
            bits: (dtype.size() * 8) as u8,
            lanes: 1,
        }
    }
}

impl TryFrom<DLDataType> for DType {
    type Error = DLPackError;

    /// The element type of that code and width (one lane; `kDLComplex` of 64 and 128 bits are
    /// `c64` and `c128`); vector and other types are [`DLPackError::UnsupportedDType`].
    fn try_from(dtype: DLDataType) -> std::result::Result<Self, DLPackError> {
        if dtype.lanes == 1 {
            if let Some(found) = DType::ALL.into_iter().find(|&d| DLDataType::from(d) == dtype) {
                return Ok(found);
            }
        }
        Err(DLPackError::UnsupportedDType(dtype))
    }
}

impl std::fmt::Display for DLDataType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let class = match self.code {
            DLDataTypeCode::INT => "int",
            DLDataTypeCode::UINT => "uint",
            DLDataTypeCode::FLOAT => "float",
            DLDataTypeCode::BFLOAT => "bfloat",
            DLDataTypeCode::COMPLEX => "complex",
            DLDataTypeCode::BOOL => "bool",
            _ => "code",
        };
        match self.code {
            DLDataTypeCode::INT
            | DLDataTypeCode::UINT
            | DLDataTypeCode::FLOAT
            | DLDataTypeCode::BFLOAT
            | DLDataTypeCode::COMPLEX
            | DLDataTypeCode::BOOL => write!(f, "{class}{}", self.bits)?,
            DLDataTypeCode(code) => write!(f, "type code {code} of {} bits", self.bits)?,
        }
        if self.lanes != 1 {
            write!(f, "x{}", self.lanes)?;
        }
        Ok(())
    }
}

/// A tensor's description (`DLTensor`); it owns nothing.
#[repr(C)]
#[derive(Debug)]
pub struct DLTensor {
    /// Base address (plus `byte_offset` is the first element).
    pub data: *mut c_void,
    /// Where the memory is.
    pub device: DLDevice,
    /// Number of dimensions.
    pub ndim: i32,
    /// Element type.
    pub dtype: DLDataType,
    /// `ndim` extents.
    pub shape: *mut i64,
    /// `ndim` strides in elements, or null for compact row-major.
    pub strides: *mut i64,
    /// Bytes from `data` to the first element.
    pub byte_offset: u64,
}

/// A tensor together with its owner's context and the function that releases it: the legacy,
/// unversioned `DLManagedTensor`. The consumer calls `deleter` once when done.
#[repr(C)]
#[derive(Debug)]
pub struct DLManagedTensor {
    /// The tensor.
    pub dl_tensor: DLTensor,
    /// The producer's data for `deleter`.
    pub manager_ctx: *mut c_void,
    /// Releases the tensor (may be null for tensors that need no release).
    pub deleter: Option<unsafe extern "C" fn(*mut DLManagedTensor)>,
}

/// A DLPack ABI version (`DLPackVersion`): a major change changes the layout of
/// [`DLManagedTensorVersioned`], a minor one only adds enumeration values.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct DLPackVersion {
    /// The ABI's major version.
    pub major: u32,
    /// The minor version.
    pub minor: u32,
}

impl DLPackVersion {
    /// The version this crate implements and exports, 1.0.
    pub const CURRENT: DLPackVersion = DLPackVersion { major: 1, minor: 0 };
}

impl std::fmt::Display for DLPackVersion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)
    }
}

/// The flags of a [`DLManagedTensorVersioned`] (a `uint64_t` bit mask).
#[repr(transparent)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct DLPackFlags(pub u64);

impl DLPackFlags {
    /// No flag.
    pub const NONE: DLPackFlags = DLPackFlags(0);
    /// The consumer must not write the memory (`DLPACK_FLAG_BITMASK_READ_ONLY`).
    pub const READ_ONLY: DLPackFlags = DLPackFlags(1);
    /// The producer made a copy for this exchange, so nobody else sees writes
    /// (`DLPACK_FLAG_BITMASK_IS_COPIED`).
    pub const IS_COPIED: DLPackFlags = DLPackFlags(2);

    /// Whether every flag of `other` is set.
    pub const fn contains(self, other: DLPackFlags) -> bool {
        self.0 & other.0 == other.0
    }
}

impl std::ops::BitOr for DLPackFlags {
    type Output = DLPackFlags;

    fn bitor(self, other: DLPackFlags) -> DLPackFlags {
        DLPackFlags(self.0 | other.0)
    }
}

/// A tensor with its version, flags and release function: DLPack 1.0's
/// `DLManagedTensorVersioned`. The consumer calls `deleter` once when done. A consumer must
/// check `version.major` before reading anything but `version`, `manager_ctx` and `deleter`.
#[repr(C)]
#[derive(Debug)]
pub struct DLManagedTensorVersioned {
    /// The ABI version the producer wrote.
    pub version: DLPackVersion,
    /// The producer's data for `deleter`.
    pub manager_ctx: *mut c_void,
    /// Releases the tensor (may be null for tensors that need no release).
    pub deleter: Option<unsafe extern "C" fn(*mut DLManagedTensorVersioned)>,
    /// [`DLPackFlags`].
    pub flags: DLPackFlags,
    /// The tensor.
    pub dl_tensor: DLTensor,
}

/// Why a DLPack tensor cannot be imported (or exported).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum DLPackError {
    /// The tensor pointer is null.
    NullTensor,
    /// A versioned tensor of another major version, whose layout this crate cannot read (its
    /// deleter is still safe to call).
    UnsupportedVersion(DLPackVersion),
    /// The memory is not CUDA device memory (a CPU tensor, say).
    NotCuda(DLDevice),
    /// CUDA memory of another GPU than the stream's.
    WrongDevice {
        /// The tensor's device.
        found: i32,
        /// The stream's device.
        expected: i32,
    },
    /// An element type this crate has no [`DType`] for (complex, vector lanes, ...).
    UnsupportedDType(DLDataType),
    /// An element type other than the array's.
    WrongDType {
        /// The tensor's type.
        found: DType,
        /// The array's type.
        expected: DType,
    },
    /// The tensor is marked read-only ([`DLPackFlags::READ_ONLY`]); an array may be written.
    ReadOnly,
    /// Shape, strides or address that no array can have (negative extents or strides,
    /// overflowing sizes, misaligned data).
    Layout(String),
    /// The driver does not see device memory of the stream's device at the tensor's first
    /// element: an address it does not know (made up, freed, pageable host memory), host
    /// memory, unmapped virtual memory, or another device's memory.
    NotDeviceMemory {
        /// The first element's address (`data + byte_offset`).
        address: u64,
        /// The stream's device.
        device: i32,
        /// What the driver said instead.
        why: String,
    },
    /// The bytes the shape and strides reach run past the device memory the first element lies
    /// in (its allocation, or the mapped part of a virtual address range).
    OutOfAllocation {
        /// The first byte reached.
        first: u64,
        /// The last byte reached.
        last: u64,
        /// The start of the allocation the first byte lies in.
        start: u64,
        /// The end (exclusive) of the memory found backed from the first byte on.
        end: u64,
    },
    /// A Python capsule whose tensor was already taken by a consumer.
    Consumed,
    /// A Python object that is not a DLPack capsule.
    Protocol(String),
}

impl std::fmt::Display for DLPackError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DLPackError::NullTensor => f.write_str("null DLPack tensor"),
            DLPackError::UnsupportedVersion(version) => {
                write!(f, "DLPack tensor of ABI version {version}; this crate reads 1.x")
            }
            DLPackError::NotCuda(device) => write!(
                f,
                "the DLPack tensor is in {} memory (device {}), not CUDA device memory",
                device.device_type, device.device_id
            ),
            DLPackError::WrongDevice { found, expected } => write!(
                f,
                "the DLPack tensor is on CUDA device {found}, the stream on device {expected}"
            ),
            DLPackError::UnsupportedDType(dtype) => write!(f, "DLPack element type {dtype} is not supported"),
            DLPackError::WrongDType { found, expected } => {
                write!(f, "the DLPack tensor holds {found}, the array {expected}")
            }
            DLPackError::ReadOnly => f.write_str("the DLPack tensor is read-only, and a DeviceArray can be written"),
            DLPackError::Layout(message) => write!(f, "DLPack tensor layout: {message}"),
            DLPackError::NotDeviceMemory { address, device, why } => write!(
                f,
                "the DLPack tensor's data at {address:#x} is not CUDA device memory of device {device}: {why}"
            ),
            DLPackError::OutOfAllocation {
                first,
                last,
                start,
                end,
            } => write!(
                f,
                "the DLPack tensor reaches bytes {first:#x}..={last:#x}, past the device memory at \
                 {start:#x}..{end:#x} it starts in"
            ),
            DLPackError::Consumed => f.write_str("the DLPack capsule was already consumed"),
            DLPackError::Protocol(message) => write!(f, "not a DLPack exchange: {message}"),
        }
    }
}

impl std::error::Error for DLPackError {}
