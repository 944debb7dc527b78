//! Tensor maps for Hopper's bulk tensor copies (TMA): a description of a tensor in device memory
//! (`cuTensorMapEncodeTiled`, `cuTensorMapEncodeIm2col`) that a kernel takes by value as a
//! `const __grid_constant__ CUtensorMap` parameter.
//!
//! Every requirement the driver documents is checked on the host first and refused with a
//! [`TensorMapError`] naming the rule, and so is a tensor reaching past the memory it describes.
//! The map borrows that memory, so it cannot outlive it, and a launch that passes it begins the
//! memory's use on the launch stream like a buffer argument.
//!
//! ```no_run
//! use cuda_driver::{Device, DeviceBuffer, TensorDataType, TiledTensorMap};
//!
//! # fn main() -> cuda_driver::Result<()> {
//! let context = Device::get(0)?.primary_context()?;
//! let (rows, cols) = (256u64, 512u64);
//! let input = DeviceBuffer::<f32>::zeroed(&context, (rows * cols) as usize)?;
//! // A row-major f32 matrix read in 32 x 64 tiles: dims and box innermost first, the row
//! // stride in bytes.
//! let map = TiledTensorMap::new(TensorDataType::F32, &[cols, rows], &[cols * 4], &[32, 64]).encode(&input)?;
//! # drop(map);
//! # Ok(())
//! # }
//! ```

use std::ffi::c_void;
use std::fmt;
use std::mem::size_of;

use cuda_sys::driver::{
    CUtensorMap, CUtensorMapDataType, CUtensorMapFloatOOBfill, CUtensorMapInterleave, CUtensorMapL2promotion,
    CUtensorMapSwizzle,
};

use crate::error::{check, Error, Result};
use crate::{Access, Context, DeviceMemory, DeviceMemoryMut, KernelArg, Stream, StreamUse};

/// The element type of a tensor map (`CUtensorMapDataType`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TensorDataType {
    /// `u8`.
    U8,
    /// `u16`.
    U16,
    /// `u32`.
    U32,
    /// `i32`.
    I32,
    /// `u64`.
    U64,
    /// `i64`.
    I64,
    /// IEEE half precision.
    F16,
    /// `f32`.
    F32,
    /// `f64`.
    F64,
    /// bfloat16.
    BF16,
    /// `f32`, subnormals flushed to zero.
    F32Ftz,
    /// TensorFloat-32 (stored as 4 bytes).
    TF32,
    /// TensorFloat-32, subnormals flushed to zero.
    TF32Ftz,
}

impl TensorDataType {
    /// Bytes per element.
    pub fn size(self) -> u64 {
        match self {
            TensorDataType::U8 => 1,
            TensorDataType::U16 | TensorDataType::F16 | TensorDataType::BF16 => 2,
            TensorDataType::U32
            | TensorDataType::I32
            | TensorDataType::F32
            | TensorDataType::F32Ftz
            | TensorDataType::TF32
            | TensorDataType::TF32Ftz => 4,
            TensorDataType::U64 | TensorDataType::I64 | TensorDataType::F64 => 8,
        }
    }

    fn is_float(self) -> bool {
        matches!(
            self,
            TensorDataType::F16
                | TensorDataType::F32
                | TensorDataType::F64
                | TensorDataType::BF16
                | TensorDataType::F32Ftz
                | TensorDataType::TF32
                | TensorDataType::TF32Ftz
        )
    }

    fn raw(self) -> CUtensorMapDataType {
        // The enum's values in `cuda.h` order.
        CUtensorMapDataType(self as u32)
    }
}

/// The interleaved layout of the tensor (`CUtensorMapInterleave`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum TensorInterleave {
    /// Plain layout.
    #[default]
    None,
    /// 16-byte interleave (NC/8HWC8 of 2-byte elements).
    Bytes16,
    /// 32-byte interleave (NC/16HWC16 of 2-byte elements).
    Bytes32,
}

/// The shared-memory bank swizzle of copied boxes (`CUtensorMapSwizzle`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum TensorSwizzle {
    /// No swizzle.
    #[default]
    None,
    /// 16-byte chunks swizzled within a 32-byte span.
    Bytes32,
    /// 16-byte chunks swizzled within a 64-byte span.
    Bytes64,
    /// 16-byte chunks swizzled within a 128-byte span.
    Bytes128,
}

impl TensorSwizzle {
    fn span(self) -> Option<u64> {
        match self {
            TensorSwizzle::None => None,
            TensorSwizzle::Bytes32 => Some(32),
            TensorSwizzle::Bytes64 => Some(64),
            TensorSwizzle::Bytes128 => Some(128),
        }
    }
}

/// The L2 fetch granularity (`CUtensorMapL2promotion`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum L2Promotion {
    /// No promotion.
    #[default]
    None,
    /// 64-byte requests.
    Bytes64,
    /// 128-byte requests.
    Bytes128,
    /// 256-byte requests.
    Bytes256,
}

/// What out-of-bounds elements read as (`CUtensorMapFloatOOBfill`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum OobFill {
    /// Zero.
    #[default]
    Zero,
    /// A NaN that tensor-core FMAs treat as zero (floating-point types only).
    NanRequestZeroFma,
}

/// The rule of `cuTensorMapEncodeTiled` / `cuTensorMapEncodeIm2col` a description breaks
/// ([`Error::TensorMap`]). Dimension indices count from the innermost (index 0).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum TensorMapError {
    /// The rank is outside what the encoding supports (1..=5 tiled, 3..=5 im2col and interleaved).
    Rank {
        /// The rank given.
        rank: usize,
        /// The least allowed.
        min: usize,
        /// The most allowed.
        max: usize,
    },
    /// An array has another length than the rank asks for.
    Length {
        /// Which array (`"global strides"`, `"box dims"`, ...).
        what: &'static str,
        /// The length it must have.
        expected: usize,
        /// Its length.
        given: usize,
    },
    /// The tensor's address is not aligned as the encoding needs (16 bytes, 32 with 32-byte
    /// interleave).
    Address {
        /// The address.
        address: u64,
        /// The alignment needed.
        alignment: u64,
    },
    /// A global dimension is zero or above 2^32.
    GlobalDim {
        /// The dimension's index.
        index: usize,
        /// Its extent.
        dim: u64,
    },
    /// A global stride is not a multiple of 16 bytes (32 with 32-byte interleave).
    StrideAlignment {
        /// The index of the dimension the stride steps (1 for the first stride).
        index: usize,
        /// The stride in bytes.
        stride: u64,
        /// The multiple needed.
        multiple: u64,
    },
    /// A global stride is 2^40 bytes or more.
    StrideTooLarge {
        /// The index of the dimension the stride steps.
        index: usize,
        /// The stride in bytes.
        stride: u64,
    },
    /// A box dimension is zero or above 256.
    BoxDim {
        /// The dimension's index.
        index: usize,
        /// Its extent.
        dim: u32,
    },
    /// Without interleave, the box's inner dimension in bytes is not a multiple of 16.
    BoxInnerBytes {
        /// `box dims[0]` times the element size.
        bytes: u64,
    },
    /// An element stride is zero or above 8.
    ElementStride {
        /// The dimension's index.
        index: usize,
        /// The stride given.
        stride: u32,
    },
    /// 32-byte interleave needs the 32-byte swizzle.
    InterleaveSwizzle {
        /// The swizzle given.
        swizzle: TensorSwizzle,
    },
    /// Without interleave, a swizzled box's inner dimension in bytes exceeds the swizzle span.
    SwizzleSpan {
        /// The inner dimension in bytes (box or channels per pixel times the element size).
        inner_bytes: u64,
        /// The swizzle's span in bytes.
        span: u64,
    },
    /// The NaN out-of-bounds fill was asked for a type that is not floating point.
    OobFillNotFloat {
        /// The type.
        data_type: TensorDataType,
    },
    /// An im2col pixel box corner offset is outside the range its rank allows
    /// (rank 3: -32768..=32767, 4: -128..=127, 5: -16..=15).
    PixelCorner {
        /// The offset's index.
        index: usize,
        /// The offset.
        offset: i32,
        /// The rank.
        rank: usize,
    },
    /// The im2col bounding box is empty along a spatial dimension.
    EmptyPixelBox {
        /// The spatial dimension's index among the global dimensions.
        index: usize,
    },
    /// Channels per pixel is zero or above 256.
    ChannelsPerPixel {
        /// The value given.
        channels: u32,
    },
    /// Pixels per column is zero or above 1024.
    PixelsPerColumn {
        /// The value given.
        pixels: u32,
    },
    /// The tensor reaches past the end of the memory it describes.
    OutOfBounds {
        /// Bytes from the address to the tensor's last byte, plus one.
        needed: u64,
        /// Bytes of the memory.
        available: u64,
    },
    /// The device is older than compute capability 9.0, which tensor maps need.
    Architecture {
        /// The device's compute capability.
        major: u32,
        /// Minor version.
        minor: u32,
    },
}

impl fmt::Display for TensorMapError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TensorMapError::Rank { rank, min, max } => {
                write!(f, "tensor map rank {rank} is outside {min}..={max}")
            }
            TensorMapError::Length { what, expected, given } => {
                write!(f, "tensor map {what} have {given} entries, the rank needs {expected}")
            }
            TensorMapError::Address { address, alignment } => {
                write!(f, "tensor map address {address:#x} is not {alignment}-byte aligned")
            }
            TensorMapError::GlobalDim { index, dim } => {
                write!(f, "tensor map global dim {index} is {dim}, it must be in 1..=2^32")
            }
            TensorMapError::StrideAlignment {
                index,
                stride,
                multiple,
            } => write!(
                f,
                "tensor map stride of dim {index} is {stride} bytes, not a multiple of {multiple}"
            ),
            TensorMapError::StrideTooLarge { index, stride } => {
                write!(
                    f,
                    "tensor map stride of dim {index} is {stride} bytes, it must be below 2^40"
                )
            }
            TensorMapError::BoxDim { index, dim } => {
                write!(f, "tensor map box dim {index} is {dim}, it must be in 1..=256")
            }
            TensorMapError::BoxInnerBytes { bytes } => write!(
                f,
                "tensor map box inner dimension is {bytes} bytes, not a multiple of 16 (needed without interleave)"
            ),
            TensorMapError::ElementStride { index, stride } => {
                write!(f, "tensor map element stride {index} is {stride}, it must be in 1..=8")
            }
            TensorMapError::InterleaveSwizzle { swizzle } => {
                write!(f, "32-byte interleave needs the 32-byte swizzle, not {swizzle:?}")
            }
            TensorMapError::SwizzleSpan { inner_bytes, span } => write!(
                f,
                "tensor map inner dimension of {inner_bytes} bytes exceeds the {span}-byte swizzle span"
            ),
            TensorMapError::OobFillNotFloat { data_type } => {
                write!(
                    f,
                    "the NaN out-of-bounds fill needs a floating-point type, not {data_type:?}"
                )
            }
            TensorMapError::PixelCorner { index, offset, rank } => write!(
                f,
                "im2col corner offset {index} is {offset}, outside the range a rank-{rank} tensor allows"
            ),
            TensorMapError::EmptyPixelBox { index } => {
                write!(f, "the im2col bounding box is empty along dim {index}")
            }
            TensorMapError::ChannelsPerPixel { channels } => {
                write!(f, "im2col channels per pixel is {channels}, it must be in 1..=256")
            }
            TensorMapError::PixelsPerColumn { pixels } => {
                write!(f, "im2col pixels per column is {pixels}, it must be in 1..=1024")
            }
            TensorMapError::OutOfBounds { needed, available } => write!(
                f,
                "the tensor map reaches {needed} bytes from its address, past the {available} bytes of its memory"
            ),
            TensorMapError::Architecture { major, minor } => write!(
                f,
                "tensor maps need compute capability 9.0 or newer, the device has {major}.{minor}"
            ),
        }
    }
}

impl std::error::Error for TensorMapError {}

impl From<TensorMapError> for Error {
    fn from(error: TensorMapError) -> Self {
        Error::TensorMap(error)
    }
}

/// What the tiled and im2col encodings share: the global tensor and the options.
#[derive(Clone, Debug)]
struct Layout {
    data_type: TensorDataType,
    dims: Vec<u64>,
    strides: Vec<u64>,
    element_strides: Option<Vec<u32>>,
    interleave: TensorInterleave,
    swizzle: TensorSwizzle,
    l2_promotion: L2Promotion,
    oob_fill: OobFill,
}

impl Layout {
    fn new(data_type: TensorDataType, dims: &[u64], strides: &[u64]) -> Self {
        Layout {
            data_type,
            dims: dims.to_vec(),
            strides: strides.to_vec(),
            element_strides: None,
            interleave: TensorInterleave::None,
            swizzle: TensorSwizzle::None,
            l2_promotion: L2Promotion::None,
            oob_fill: OobFill::Zero,
        }
    }

    fn rank(&self) -> usize {
        self.dims.len()
    }

    /// The element strides, all ones unless set.
    fn element_strides(&self) -> Vec<u32> {
        self.element_strides.clone().unwrap_or_else(|| vec![1; self.rank()])
    }

    /// The rules of the global tensor and options; `inner_bytes` is the box's inner extent in
    /// bytes, which the swizzle bounds.
    fn check(&self, min_rank: usize, address: u64, available: u64, inner_bytes: u64) -> Result<(), TensorMapError> {
        let rank = self.rank();
        let min_rank = if self.interleave == TensorInterleave::None {
            min_rank
        } else {
            min_rank.max(3)
        };
        if !(min_rank..=5).contains(&rank) {
            return Err(TensorMapError::Rank {
                rank,
                min: min_rank,
                max: 5,
            });
        }
        expect_len("global strides", rank - 1, self.strides.len())?;
        let element_strides = self.element_strides();
        expect_len("element strides", rank, element_strides.len())?;
        let alignment = if self.interleave == TensorInterleave::Bytes32 {
            32
        } else {
            16
        };
        if address % alignment != 0 {
            return Err(TensorMapError::Address { address, alignment });
        }
        for (index, &dim) in self.dims.iter().enumerate() {
            if dim == 0 || dim > 1 << 32 {
                return Err(TensorMapError::GlobalDim { index, dim });
            }
        }
        for (i, &stride) in self.strides.iter().enumerate() {
            if stride % alignment != 0 {
                return Err(TensorMapError::StrideAlignment {
                    index: i + 1,
                    stride,
                    multiple: alignment,
                });
            }
            if stride >= 1 << 40 {
                return Err(TensorMapError::StrideTooLarge { index: i + 1, stride });
            }
        }
        for (index, &stride) in element_strides.iter().enumerate() {
            if !(1..=8).contains(&stride) {
                return Err(TensorMapError::ElementStride { index, stride });
            }
        }
        if self.interleave == TensorInterleave::Bytes32 && self.swizzle != TensorSwizzle::Bytes32 {
            return Err(TensorMapError::InterleaveSwizzle { swizzle: self.swizzle });
        }
        if let (TensorInterleave::None, Some(span)) = (self.interleave, self.swizzle.span()) {
            if inner_bytes > span {
                return Err(TensorMapError::SwizzleSpan { inner_bytes, span });
            }
        }
        if self.oob_fill == OobFill::NanRequestZeroFma && !self.data_type.is_float() {
            return Err(TensorMapError::OobFillNotFloat {
                data_type: self.data_type,
            });
        }
        // The last byte: the innermost run, then every outer dimension's last step (strides
        // below 2^40 and dims up to 2^32 fit u128).
        let needed = self.dims[0] as u128 * self.data_type.size() as u128
            + self
                .strides
                .iter()
                .zip(&self.dims[1..])
                .map(|(&stride, &dim)| stride as u128 * (dim as u128 - 1))
                .sum::<u128>();
        if needed > available as u128 {
            return Err(TensorMapError::OutOfBounds {
                needed: u64::try_from(needed).unwrap_or(u64::MAX),
                available,
            });
        }
        Ok(())
    }
}

fn expect_len(what: &'static str, expected: usize, given: usize) -> Result<(), TensorMapError> {
    if expected == given {
        Ok(())
    } else {
        Err(TensorMapError::Length { what, expected, given })
    }
}

macro_rules! layout_options {
    () => {
        /// The iteration step along each dimension (1..=8; all ones unless set). The box then
        /// holds `ceil(box[i] / stride[i])` elements along dimension `i`.
        pub fn element_strides(mut self, strides: &[u32]) -> Self {
            self.layout.element_strides = Some(strides.to_vec());
            self
        }

        /// The interleaved layout (none unless set).
        pub fn interleave(mut self, interleave: TensorInterleave) -> Self {
            self.layout.interleave = interleave;
            self
        }

        /// The shared-memory swizzle (none unless set).
        pub fn swizzle(mut self, swizzle: TensorSwizzle) -> Self {
            self.layout.swizzle = swizzle;
            self
        }

        /// The L2 promotion (none unless set).
        pub fn l2_promotion(mut self, l2_promotion: L2Promotion) -> Self {
            self.layout.l2_promotion = l2_promotion;
            self
        }

        /// The out-of-bounds fill (zero unless set).
        pub fn oob_fill(mut self, oob_fill: OobFill) -> Self {
            self.layout.oob_fill = oob_fill;
            self
        }

        /// Encodes the map over `memory`, which kernels given it only read: checked first,
        /// then made with the driver (its context made current).
        pub fn encode<'a, M: DeviceMemory + Sync>(&self, memory: &'a M) -> Result<TensorMap<'a>> {
            self.encode_over(memory, Access::Read)
        }

        /// Encodes the map over `memory`, which kernels given it may write (bulk tensor stores).
        pub fn encode_mut<'a, M: DeviceMemoryMut + Sync>(&self, memory: &'a mut M) -> Result<TensorMap<'a>> {
            self.encode_over(&*memory, Access::Write)
        }
    };
}

/// A tiled tensor map's description (`cuTensorMapEncodeTiled`): a tensor of rank 1 to 5 copied
/// in boxes. Dimensions count from the innermost: `dims[0]` is contiguous, `strides[i]` is the
/// byte step of dimension `i + 1`.
#[derive(Clone, Debug)]
pub struct TiledTensorMap {
    layout: Layout,
    box_dims: Vec<u32>,
}

impl TiledTensorMap {
    /// A tensor of `data_type` with `dims` (elements), `strides` (bytes, one fewer than dims)
    /// and boxes of `box_dims` elements.
    pub fn new(data_type: TensorDataType, dims: &[u64], strides: &[u64], box_dims: &[u32]) -> Self {
        TiledTensorMap {
            layout: Layout::new(data_type, dims, strides),
            box_dims: box_dims.to_vec(),
        }
    }

    layout_options!();

    /// Checks every rule for a tensor at `address` in `available` bytes.
    fn check(&self, address: u64, available: u64) -> Result<(), TensorMapError> {
        let layout = &self.layout;
        let rank = layout.rank();
        if (1..=5).contains(&rank) {
            expect_len("box dims", rank, self.box_dims.len())?;
        }
        for (index, &dim) in self.box_dims.iter().enumerate() {
            if !(1..=256).contains(&dim) {
                return Err(TensorMapError::BoxDim { index, dim });
            }
        }
        let inner_bytes = self.box_dims.first().map_or(0, |&b| b as u64 * layout.data_type.size());
        if layout.interleave == TensorInterleave::None && inner_bytes % 16 != 0 {
            return Err(TensorMapError::BoxInnerBytes { bytes: inner_bytes });
        }
        layout.check(1, address, available, inner_bytes)
    }

    fn encode_over<'a>(&self, memory: &'a (dyn DeviceMemory + Sync), access: Access) -> Result<TensorMap<'a>> {
        let address = memory.device_ptr();
        self.check(address, memory.byte_len() as u64)?;
        let layout = &self.layout;
        let element_strides = layout.element_strides();
        TensorMap::encode_with(memory, access, |driver, raw| {
            // SAFETY: `raw` is a 128-byte-aligned out-pointer; every array has the length the
            // rank needs (checked), and the address lies in live device memory of the context.
            check(unsafe {
                driver.cuTensorMapEncodeTiled()?(
                    raw,
                    layout.data_type.raw(),
                    layout.rank() as u32,
                    address as *mut c_void,
                    layout.dims.as_ptr(),
                    layout.strides.as_ptr(),
                    self.box_dims.as_ptr(),
                    element_strides.as_ptr(),
                    CUtensorMapInterleave(layout.interleave as u32),
                    CUtensorMapSwizzle(layout.swizzle as u32),
                    CUtensorMapL2promotion(layout.l2_promotion as u32),
                    CUtensorMapFloatOOBfill(layout.oob_fill as u32),
                )
            })
        })
    }
}

/// An im2col tensor map's description (`cuTensorMapEncodeIm2col`): a tensor of rank 3 to 5
/// (`[C, W, H, D, N]` innermost first) whose pixels are gathered into columns for convolutions.
#[derive(Clone, Debug)]
pub struct Im2colTensorMap {
    layout: Layout,
    lower_corner: Vec<i32>,
    upper_corner: Vec<i32>,
    channels_per_pixel: u32,
    pixels_per_column: u32,
}

impl Im2colTensorMap {
    /// A tensor of `data_type` with `dims` and `strides` as for [`TiledTensorMap::new`]; the
    /// bounding box's corner offsets along the `rank - 2` spatial dimensions (innermost first),
    /// and how many channels and pixels each copy takes.
    pub fn new(
        data_type: TensorDataType,
        dims: &[u64],
        strides: &[u64],
        lower_corner: &[i32],
        upper_corner: &[i32],
        channels_per_pixel: u32,
        pixels_per_column: u32,
    ) -> Self {
        Im2colTensorMap {
            layout: Layout::new(data_type, dims, strides),
            lower_corner: lower_corner.to_vec(),
            upper_corner: upper_corner.to_vec(),
            channels_per_pixel,
            pixels_per_column,
        }
    }

    layout_options!();

    /// Checks every rule for a tensor at `address` in `available` bytes.
    fn check(&self, address: u64, available: u64) -> Result<(), TensorMapError> {
        let layout = &self.layout;
        let rank = layout.rank();
        if !(3..=5).contains(&rank) {
            return Err(TensorMapError::Rank { rank, min: 3, max: 5 });
        }
        expect_len("lower corner offsets", rank - 2, self.lower_corner.len())?;
        expect_len("upper corner offsets", rank - 2, self.upper_corner.len())?;
        let limit = match rank {
            3 => 32768,
            4 => 128,
            _ => 16,
        };
        for (index, &offset) in self.lower_corner.iter().chain(&self.upper_corner).enumerate() {
            if !(-limit..limit).contains(&offset) {
                return Err(TensorMapError::PixelCorner {
                    index: index % (rank - 2),
                    offset,
                    rank,
                });
            }
        }
        for (i, (&lower, &upper)) in self.lower_corner.iter().zip(&self.upper_corner).enumerate() {
            let index = i + 1;
            if layout
                .dims
                .get(index)
                .is_some_and(|&dim| dim as i64 - lower as i64 + upper as i64 <= 0)
            {
                return Err(TensorMapError::EmptyPixelBox { index });
            }
        }
        if !(1..=256).contains(&self.channels_per_pixel) {
            return Err(TensorMapError::ChannelsPerPixel {
                channels: self.channels_per_pixel,
            });
        }
        if !(1..=1024).contains(&self.pixels_per_column) {
            return Err(TensorMapError::PixelsPerColumn {
                pixels: self.pixels_per_column,
            });
        }
        let inner_bytes = self.channels_per_pixel as u64 * layout.data_type.size();
        layout.check(3, address, available, inner_bytes)
    }

    fn encode_over<'a>(&self, memory: &'a (dyn DeviceMemory + Sync), access: Access) -> Result<TensorMap<'a>> {
        let address = memory.device_ptr();
        self.check(address, memory.byte_len() as u64)?;
        let layout = &self.layout;
        let element_strides = layout.element_strides();
        TensorMap::encode_with(memory, access, |driver, raw| {
            // SAFETY: as in `TiledTensorMap::encode_over`; the corner arrays have rank - 2
            // entries (checked).
            check(unsafe {
                driver.cuTensorMapEncodeIm2col()?(
                    raw,
                    layout.data_type.raw(),
                    layout.rank() as u32,
                    address as *mut c_void,
                    layout.dims.as_ptr(),
                    layout.strides.as_ptr(),
                    self.lower_corner.as_ptr(),
                    self.upper_corner.as_ptr(),
                    self.channels_per_pixel,
                    self.pixels_per_column,
                    element_strides.as_ptr(),
                    CUtensorMapInterleave(layout.interleave as u32),
                    CUtensorMapSwizzle(layout.swizzle as u32),
                    CUtensorMapL2promotion(layout.l2_promotion as u32),
                    CUtensorMapFloatOOBfill(layout.oob_fill as u32),
                )
            })
        })
    }
}

/// An encoded tensor map (the driver's opaque, 128-byte `CUtensorMap`) over memory it borrows.
/// Pass it (or a reference) to a kernel whose parameter is `const __grid_constant__ CUtensorMap`:
/// the launch passes its bytes by value and begins the memory's use on the launch stream (a
/// read, or a write for [`TiledTensorMap::encode_mut`] maps).
pub struct TensorMap<'a> {
    raw: CUtensorMap,
    memory: &'a (dyn DeviceMemory + Sync),
    access: Access,
}

impl<'a> TensorMap<'a> {
    fn encode_with(
        memory: &'a (dyn DeviceMemory + Sync),
        access: Access,
        encode: impl FnOnce(&cuda_sys::Driver, *mut CUtensorMap) -> Result<()>,
    ) -> Result<TensorMap<'a>> {
        let device = memory.context().device();
        let (major, minor) = device.compute_capability()?;
        if major < 9 {
            return Err(TensorMapError::Architecture { major, minor }.into());
        }
        let driver = memory.context().bind()?;
        let mut raw = CUtensorMap { opaque: [0; 16] };
        encode(driver, &mut raw)?;
        Ok(TensorMap { raw, memory, access })
    }

    /// The encoded bytes.
    pub fn as_raw(&self) -> &CUtensorMap {
        &self.raw
    }

    /// The memory the map describes.
    pub fn memory(&self) -> &'a (dyn DeviceMemory + Sync) {
        self.memory
    }
}

impl fmt::Debug for TensorMap<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TensorMap")
            .field("address", &format_args!("{:#x}", self.memory.device_ptr()))
            .field("access", &self.access)
            .finish()
    }
}

// SAFETY: points at the map's own 128 bytes, which live as long as the borrow; `check_use`
// refuses memory of another context than the kernel's, and `begin_launch_use` begins the
// described memory's use on the launch stream.
unsafe impl KernelArg for &TensorMap<'_> {
    #[inline]
    fn param_ptr(&self) -> *mut c_void {
        (&self.raw as *const CUtensorMap).cast_mut().cast()
    }

    #[inline]
    fn param_size(&self) -> usize {
        size_of::<CUtensorMap>()
    }

    #[inline]
    fn check_use(&self, context: &Context, _stream: &Stream) -> Result<()> {
        self.memory
            .context()
            .expect_same(context, "tensor map's memory", "function")
    }

    #[inline]
    fn begin_launch_use(&self, context: &Context, stream: &Stream) -> Result<Option<StreamUse<'_>>> {
        self.check_use(context, stream)?;
        self.memory.begin_use(stream, self.access).map(Some)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The enums' values are `cuda.h`'s, which the encoders pass as `as u32`.
    #[test]
    fn option_values_are_the_headers() {
        assert_eq!(
            TensorDataType::U8.raw(),
            CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_UINT8
        );
        assert_eq!(
            TensorDataType::BF16.raw(),
            CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_BFLOAT16
        );
        assert_eq!(
            TensorDataType::TF32Ftz.raw(),
            CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_TFLOAT32_FTZ
        );
        assert_eq!(
            CUtensorMapInterleave(TensorInterleave::Bytes32 as u32),
            CUtensorMapInterleave::CU_TENSOR_MAP_INTERLEAVE_32B
        );
        assert_eq!(
            CUtensorMapSwizzle(TensorSwizzle::Bytes128 as u32),
            CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_128B
        );
        assert_eq!(
            CUtensorMapL2promotion(L2Promotion::Bytes256 as u32),
            CUtensorMapL2promotion::CU_TENSOR_MAP_L2_PROMOTION_L2_256B
        );
        assert_eq!(
            CUtensorMapFloatOOBfill(OobFill::NanRequestZeroFma as u32),
            CUtensorMapFloatOOBfill::CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA
        );
        assert_eq!(size_of::<CUtensorMap>(), 128);
    }
}
