//! cuFFT: fast Fourier transforms of device memory, 1-D to 3-D, batched, with cuFFT's advanced
//! layouts, in half, single and double precision.
//!
//! A [`PlanDesc`] says what to transform: the sizes (slowest axis first, as a row-major array
//! is laid out), the batch, the [`Kind`] (complex to complex, real to complex, complex to
//! real), the [`Precision`] and each side's [`Layout`]. A [`Plan`] is cuFFT's plan for it, made
//! with automatic workspace allocation off: [`Plan::workspace_size`] says how many bytes the
//! caller hands to each execution (from a pool, say), and every execution names its stream. A
//! [`PlanCache`] keeps the plans of the shapes a program repeats, a bounded number, least
//! recently used first out.
//!
//! ```no_run
//! use cuda_driver::{Device, DeviceBuffer, Stream};
//! use cuda_libs::fft::{Direction, Kind, Plan, PlanDesc, Precision};
//!
//! # fn main() -> cuda_libs::Result<()> {
//! let context = Device::get(0)?.primary_context()?;
//! let stream = Stream::new(&context)?;
//! // 8 transforms of 1024 complex f32 values, one after another.
//! let desc = PlanDesc::new(Kind::C2C, Precision::F32, &[1024])?.batch(8);
//! let mut plan = Plan::new(&context, &desc)?;
//! let input = DeviceBuffer::from_slice(&context, &vec![[1.0f32, 0.0]; 8 * 1024])?;
//! let mut output = DeviceBuffer::<[f32; 2]>::zeroed(&context, 8 * 1024)?;
//! let mut workspace = DeviceBuffer::<u8>::zeroed(&context, plan.workspace_size().max(1))?;
//! plan.execute(&stream, Direction::Forward, &input, &mut output, Some(&mut workspace))?;
//! stream.synchronize()?;
//! assert_eq!(output.to_vec()?[0], [1024.0, 0.0]);
//! # Ok(())
//! # }
//! ```
//!
//! # Load callbacks
//! A plan can compute its input instead of reading it: [`Plan::with_load_callback`] attaches a
//! device function compiled to LTO-IR ([`LoadCallback`], cuFFT's LTO callbacks of cuFFT 12 and
//! CUDA 13: [`supports_load_callbacks`]) before the plan is made, and
//! [`Plan::execute_loaded`] (`unsafe`: what the callback reads is the caller's to vouch for)
//! writes its caller info and runs it. [`PlanCache::plan_with_load_callback`] caches such plans
//! under a key the caller gives the callback.
//!
//! # Store callbacks
//! Likewise a plan can hand each output element to a device function that stores it (scaled,
//! say) instead of writing it itself: [`Plan::with_store_callback`] (`unsafe`: the callback
//! must write only the element it is handed, at its offset) attaches a [`StoreCallback`], of
//! the same cuFFT ([`supports_load_callbacks`] answers for both kinds), and
//! [`Plan::set_store_info`] gives the caller info written before each later execution, which
//! runs through the plain [`Plan::execute`], [`Plan::execute_c2r`] or
//! [`Plan::execute_in_place`]. [`PlanCache::plan_with_store_callback`] caches such plans.
//!
//! # Memory
//! Data and workspace are device memory of the contract ([`cuda_driver::DeviceMemory`]): the
//! dense range is what cuFFT may touch. Every element a layout reaches, on each side, must lie
//! in its buffer; an output layout whose elements overlap, out-of-place buffers that overlap,
//! and an address not aligned to the element are refused before cuFFT is called. Complex values
//! are pairs (real, imaginary) of the precision's type: `[f32; 2]`, `[f64; 2]`, `[f16; 2]`.
//! Buffers are borrowed until the transform is queued, and their use is recorded on the stream,
//! so a free waits for it.
//!
//! cuFFT's complex-to-real transforms overwrite their input even out of place, so their input is
//! taken as writable ([`Plan::execute_c2r`]).
//!
//! # Errors
//! A plan cuFFT refuses, or an execution that fails, is [`crate::Error::Status`] with library
//! `"cuFFT"` and the `cufftResult` name (`CUFFT_INVALID_SIZE`, ...). Bad sizes and layouts are
//! [`crate::Error::InvalidValue`] before any call.

use cuda_sys::cufft::{cudaDataType, cufftResult_t, cufftType};

use crate::{Error, Result};

mod cache;
mod callback;
mod plan;

pub use cache::PlanCache;
pub use callback::{load_return_type, store_element_type, supports_load_callbacks, LoadCallback, StoreCallback};
pub use plan::Plan;

/// Loads cuFFT now (it is loaded once per process, on first use), so a program can say early
/// that it is missing: [`Error::Load`] lists every place tried.
pub fn load() -> Result<()> {
    cuda_sys::cufft()?;
    Ok(())
}

/// What a transform turns into what.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kind {
    /// Complex to complex, forward or inverse.
    C2C,
    /// Real to complex (forward): the last axis of `n` values gives `n / 2 + 1` complex ones.
    R2C,
    /// Complex to real (inverse): `n / 2 + 1` complex values on the last axis give `n` real ones.
    C2R,
}

/// The precision of a transform's values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Precision {
    /// `half::f16`, through `cufftXtMakePlanMany`: every size a power of two (cuFFT's rule).
    F16,
    /// `f32`.
    F32,
    /// `f64`.
    F64,
}

impl Precision {
    /// Bytes of one real value.
    pub fn real_bytes(self) -> usize {
        match self {
            Precision::F16 => 2,
            Precision::F32 => 4,
            Precision::F64 => 8,
        }
    }
}

/// The direction of a transform: the sign of the exponent. cuFFT's transforms are unnormalised:
/// a forward then inverse transform multiplies by the number of elements.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Direction {
    /// `exp(-2 pi i jk / n)` (`CUFFT_FORWARD`): the only direction of [`Kind::R2C`].
    Forward,
    /// `exp(+2 pi i jk / n)` (`CUFFT_INVERSE`): the only direction of [`Kind::C2R`].
    Inverse,
}

/// Where one side's elements are: element `(i0, i1, i2)` of transform `b` is at
/// `b * distance + ((i0 * embed[1] + i1) * embed[2] + i2) * stride` elements from the start
/// (cuFFT's advanced layout; fewer axes drop the leading terms). `embed[0]` is not used for
/// addresses (cuFFT ignores it too); every other `embed[k]` is at least the side's size on that
/// axis.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Layout {
    /// Each transform's elements one after another, transforms one after another.
    Packed,
    /// cuFFT's advanced layout.
    Strided {
        /// The storage sizes, one per axis of the plan, slowest first (unused axes 0).
        embed: [usize; 3],
        /// Elements between two neighbours on the last axis.
        stride: usize,
        /// Elements between the first elements of two transforms of the batch.
        distance: usize,
    },
}

impl Layout {
    /// An advanced layout: `embed` holds one storage size per axis of the plan.
    pub fn strided(embed: &[usize], stride: usize, distance: usize) -> Result<Layout> {
        if embed.is_empty() || embed.len() > 3 {
            return Err(Error::InvalidValue(format!(
                "a layout has 1 to 3 storage sizes, one per axis; {} were given",
                embed.len()
            )));
        }
        let mut sizes = [0; 3];
        sizes[..embed.len()].copy_from_slice(embed);
        Ok(Layout::Strided {
            embed: sizes,
            stride,
            distance,
        })
    }
}

/// What a [`Plan`] transforms: sizes, batch, kind, precision and the two layouts. Hashable: the
/// key of a [`PlanCache`] (with the stream).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct PlanDesc {
    rank: usize,
    shape: [usize; 3],
    batch: usize,
    kind: Kind,
    precision: Precision,
    input: Layout,
    output: Layout,
}

impl PlanDesc {
    /// A batch of one transform of `shape` (1 to 3 sizes, slowest axis first, each at least 1;
    /// for real transforms, the real side's), both sides [`Layout::Packed`].
    pub fn new(kind: Kind, precision: Precision, shape: &[usize]) -> Result<PlanDesc> {
        if shape.is_empty() || shape.len() > 3 {
            return Err(Error::InvalidValue(format!(
                "cuFFT transforms 1 to 3 axes; a shape of {} was given",
                shape.len()
            )));
        }
        if let Some(axis) = shape.iter().position(|&n| n == 0) {
            return Err(Error::InvalidValue(format!(
                "a transform of shape {shape:?}: axis {axis} has size 0 (every size must be at least 1)"
            )));
        }
        if precision == Precision::F16 {
            if let Some(&n) = shape.iter().find(|n| !n.is_power_of_two()) {
                return Err(Error::InvalidValue(format!(
                    "cuFFT's half-precision transforms take powers of two only; shape {shape:?} has {n}"
                )));
            }
        }
        let mut sizes = [0; 3];
        sizes[..shape.len()].copy_from_slice(shape);
        Ok(PlanDesc {
            rank: shape.len(),
            shape: sizes,
            batch: 1,
            kind,
            precision,
            input: Layout::Packed,
            output: Layout::Packed,
        })
    }

    /// Sets how many transforms one execution runs (at least 1).
    pub fn batch(mut self, batch: usize) -> PlanDesc {
        self.batch = batch;
        self
    }

    /// Sets the input side's layout.
    pub fn input_layout(mut self, layout: Layout) -> PlanDesc {
        self.input = layout;
        self
    }

    /// Sets the output side's layout.
    pub fn output_layout(mut self, layout: Layout) -> PlanDesc {
        self.output = layout;
        self
    }

    /// The transform's sizes, slowest axis first (the real side's for real transforms).
    pub fn shape(&self) -> &[usize] {
        &self.shape[..self.rank]
    }

    /// Transforms per execution.
    pub fn batch_count(&self) -> usize {
        self.batch
    }

    /// The kind of transform.
    pub fn kind(&self) -> Kind {
        self.kind
    }

    /// The precision.
    pub fn precision(&self) -> Precision {
        self.precision
    }

    /// The sizes and element bytes of one side: the complex side of a real transform has
    /// `n / 2 + 1` values on its last axis.
    fn side(&self, complex: bool) -> ([usize; 3], usize) {
        let mut dims = self.shape;
        let halved = complex && self.kind != Kind::C2C;
        if halved {
            dims[self.rank - 1] = dims[self.rank - 1] / 2 + 1;
        }
        let bytes = self.precision.real_bytes() * if complex { 2 } else { 1 };
        (dims, bytes)
    }

    /// Everything cuFFT is handed, checked: sizes as its `long long`s, each side's layout, and
    /// the bytes each side spans.
    pub(crate) fn check(&self) -> Result<Checked> {
        if self.batch == 0 {
            return Err(Error::InvalidValue(
                "a batch of 0 transforms: batch must be at least 1".into(),
            ));
        }
        let (input_complex, output_complex) = match self.kind {
            Kind::C2C => (true, true),
            Kind::R2C => (false, true),
            Kind::C2R => (true, false),
        };
        let input = self.check_side("input", self.input, input_complex)?;
        let output = self.check_side("output", self.output, output_complex)?;
        if self.batch > 1 && !output.distinct(self.rank, self.batch) {
            return Err(Error::InvalidValue(format!(
                "the output layout {:?} writes some element twice in a batch of {}: transforms or \
                 their elements overlap",
                self.output, self.batch
            )));
        }
        let mut n = [0i64; 3];
        for (k, size) in self.shape().iter().enumerate() {
            n[k] = to_long("a size", *size)?;
        }
        Ok(Checked {
            rank: self.rank as i32,
            n,
            batch: to_long("the batch", self.batch)?,
            input,
            output,
            cufft_type: self.cufft_type(),
            types: self.data_types(),
        })
    }

    fn check_side(&self, name: &'static str, layout: Layout, complex: bool) -> Result<Side> {
        let (dims, element_bytes) = self.side(complex);
        let rank = self.rank;
        let (embed, stride, distance) = match layout {
            Layout::Packed => {
                let per_transform = dims[..rank]
                    .iter()
                    .try_fold(1usize, |acc, &d| acc.checked_mul(d))
                    .ok_or_else(|| Error::InvalidValue(format!("the {name}'s sizes {dims:?} overflow")))?;
                (dims, 1, per_transform)
            }
            Layout::Strided {
                embed,
                stride,
                distance,
            } => {
                if embed[rank..].iter().any(|&e| e != 0) || embed[..rank].contains(&0) {
                    return Err(Error::InvalidValue(format!(
                        "the {name} layout has storage sizes {embed:?} for a transform of {rank} axes \
                         (one size, at least 1, per axis)"
                    )));
                }
                if stride == 0 {
                    return Err(Error::InvalidValue(format!("the {name} layout's stride is 0")));
                }
                for k in 1..rank {
                    if embed[k] < dims[k] {
                        return Err(Error::InvalidValue(format!(
                            "the {name} has {} values on axis {k} but its layout stores {}",
                            dims[k], embed[k]
                        )));
                    }
                }
                (embed, stride, distance)
            }
        };
        // Weights (in elements) of each axis: the last is `stride`, each earlier one the next's
        // times its storage size.
        let overflow = || Error::InvalidValue(format!("the {name}'s layout spans more than 2^63 elements"));
        let mut weights = [0usize; 3];
        let mut weight = stride;
        for k in (0..rank).rev() {
            weights[k] = weight;
            if k > 0 {
                weight = weight.checked_mul(embed[k]).ok_or_else(overflow)?;
            }
        }
        let mut last = 0usize;
        for k in 0..rank {
            last = (dims[k] - 1)
                .checked_mul(weights[k])
                .and_then(|offset| offset.checked_add(last))
                .ok_or_else(overflow)?;
        }
        let elements = (self.batch - 1)
            .checked_mul(distance)
            .and_then(|start| start.checked_add(last))
            .and_then(|last| last.checked_add(1))
            .filter(|&e| i64::try_from(e).is_ok())
            .ok_or_else(overflow)?;
        let bytes = elements.checked_mul(element_bytes).ok_or_else(overflow)?;
        let mut long_embed = [0i64; 3];
        for k in 0..rank {
            // cuFFT ignores `embed[0]`; a layout's may be anything, so it goes as the size.
            long_embed[k] = to_long("a storage size", if k == 0 { dims[0] } else { embed[k] })?;
        }
        Ok(Side {
            embed: long_embed,
            stride: to_long("a stride", stride)?,
            distance: to_long("a distance", distance)?,
            dims,
            weights,
            bytes,
            element_bytes,
        })
    }

    /// The `cufftType` of a single- or double-precision plan; `None` for half precision.
    fn cufft_type(&self) -> Option<cufftType> {
        Some(match (self.precision, self.kind) {
            (Precision::F16, _) => return None,
            (Precision::F32, Kind::C2C) => cufftType::CUFFT_C2C,
            (Precision::F32, Kind::R2C) => cufftType::CUFFT_R2C,
            (Precision::F32, Kind::C2R) => cufftType::CUFFT_C2R,
            (Precision::F64, Kind::C2C) => cufftType::CUFFT_Z2Z,
            (Precision::F64, Kind::R2C) => cufftType::CUFFT_D2Z,
            (Precision::F64, Kind::C2R) => cufftType::CUFFT_Z2D,
        })
    }

    /// The input, output and execution `cudaDataType`s, as `cufftXtMakePlanMany` takes them.
    fn data_types(&self) -> [cudaDataType; 3] {
        let (real, complex) = match self.precision {
            Precision::F16 => (cudaDataType::CUDA_R_16F, cudaDataType::CUDA_C_16F),
            Precision::F32 => (cudaDataType::CUDA_R_32F, cudaDataType::CUDA_C_32F),
            Precision::F64 => (cudaDataType::CUDA_R_64F, cudaDataType::CUDA_C_64F),
        };
        match self.kind {
            Kind::C2C => [complex, complex, complex],
            Kind::R2C => [real, complex, complex],
            Kind::C2R => [complex, real, complex],
        }
    }
}

/// A [`PlanDesc`] as cuFFT takes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Checked {
    pub(crate) rank: i32,
    pub(crate) n: [i64; 3],
    pub(crate) batch: i64,
    pub(crate) input: Side,
    pub(crate) output: Side,
    pub(crate) cufft_type: Option<cufftType>,
    pub(crate) types: [cudaDataType; 3],
}

/// One side of a checked plan.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Side {
    pub(crate) embed: [i64; 3],
    pub(crate) stride: i64,
    pub(crate) distance: i64,
    /// Values per axis on this side.
    dims: [usize; 3],
    /// Elements between neighbours on each axis.
    weights: [usize; 3],
    /// Bytes from the first element to the end of the last, over the whole batch.
    pub(crate) bytes: usize,
    /// Bytes of one element (the alignment cuFFT needs).
    pub(crate) element_bytes: usize,
}

impl Side {
    /// Whether every (transform, element) pair has an address of its own: sorted by weight,
    /// each axis steps past everything the smaller ones reach (sufficient, and true of packed,
    /// padded and interleaved layouts).
    fn distinct(&self, rank: usize, batch: usize) -> bool {
        let mut axes: Vec<(usize, usize)> = (0..rank)
            .map(|k| (self.weights[k], self.dims[k]))
            .chain(std::iter::once((self.distance as usize, batch)))
            .filter(|&(_, extent)| extent > 1)
            .collect();
        axes.sort_unstable();
        let mut reach = 0usize;
        for (weight, extent) in axes {
            if weight <= reach {
                return false;
            }
            reach = match (extent - 1).checked_mul(weight).and_then(|r| r.checked_add(reach)) {
                Some(r) => r,
                None => return false,
            };
        }
        true
    }
}

fn to_long(what: &str, value: usize) -> Result<i64> {
    i64::try_from(value).map_err(|_| Error::InvalidValue(format!("{what} of {value} is over cuFFT's 64-bit limit")))
}

/// `Ok` for `CUFFT_SUCCESS`, otherwise [`Error::Status`] naming the `cufftResult`.
pub(crate) fn check(function: &'static str, result: cufftResult_t) -> Result<()> {
    if result == cufftResult_t::CUFFT_SUCCESS {
        return Ok(());
    }
    Err(Error::Status {
        library: "cuFFT",
        function,
        code: result.0,
        name: result_name(result).map_or_else(|| format!("cufftResult {}", result.0), str::to_string),
    })
}

/// The name of a `cufftResult` (cuFFT has no function that gives it).
fn result_name(result: cufftResult_t) -> Option<&'static str> {
    Some(match result {
        cufftResult_t::CUFFT_SUCCESS => "CUFFT_SUCCESS",
        cufftResult_t::CUFFT_INVALID_PLAN => "CUFFT_INVALID_PLAN",
        cufftResult_t::CUFFT_ALLOC_FAILED => "CUFFT_ALLOC_FAILED",
        cufftResult_t::CUFFT_INVALID_TYPE => "CUFFT_INVALID_TYPE",
        cufftResult_t::CUFFT_INVALID_VALUE => "CUFFT_INVALID_VALUE",
        cufftResult_t::CUFFT_INTERNAL_ERROR => "CUFFT_INTERNAL_ERROR",
        cufftResult_t::CUFFT_EXEC_FAILED => "CUFFT_EXEC_FAILED",
        cufftResult_t::CUFFT_SETUP_FAILED => "CUFFT_SETUP_FAILED",
        cufftResult_t::CUFFT_INVALID_SIZE => "CUFFT_INVALID_SIZE",
        cufftResult_t::CUFFT_UNALIGNED_DATA => "CUFFT_UNALIGNED_DATA",
        cufftResult_t::CUFFT_INVALID_DEVICE => "CUFFT_INVALID_DEVICE",
        cufftResult_t::CUFFT_NO_WORKSPACE => "CUFFT_NO_WORKSPACE",
        cufftResult_t::CUFFT_NOT_IMPLEMENTED => "CUFFT_NOT_IMPLEMENTED",
        cufftResult_t::CUFFT_NOT_SUPPORTED => "CUFFT_NOT_SUPPORTED",
        cufftResult_t::CUFFT_MISSING_DEPENDENCY => "CUFFT_MISSING_DEPENDENCY",
        cufftResult_t::CUFFT_NVRTC_FAILURE => "CUFFT_NVRTC_FAILURE",
        cufftResult_t::CUFFT_NVJITLINK_FAILURE => "CUFFT_NVJITLINK_FAILURE",
        cufftResult_t::CUFFT_NVSHMEM_FAILURE => "CUFFT_NVSHMEM_FAILURE",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn invalid<T: std::fmt::Debug>(result: Result<T>) -> String {
        match result {
            Err(Error::InvalidValue(message)) => message,
            other => panic!("expected InvalidValue, got {other:?}"),
        }
    }

    #[test]
    fn packed_sides_span_every_transform() {
        let checked = PlanDesc::new(Kind::C2C, Precision::F32, &[4, 6])
            .unwrap()
            .batch(3)
            .check()
            .unwrap();
        assert_eq!((checked.rank, checked.n, checked.batch), (2, [4, 6, 0], 3));
        assert_eq!(
            (checked.input.embed, checked.input.stride, checked.input.distance),
            ([4, 6, 0], 1, 24)
        );
        assert_eq!(checked.input.bytes, 3 * 24 * 8);
        assert_eq!(checked.output.bytes, 3 * 24 * 8);
        assert_eq!(checked.cufft_type, Some(cufftType::CUFFT_C2C));
        // Real to complex: the complex side keeps n / 2 + 1 values of the last axis.
        let checked = PlanDesc::new(Kind::R2C, Precision::F64, &[5, 10])
            .unwrap()
            .batch(2)
            .check()
            .unwrap();
        assert_eq!((checked.input.distance, checked.input.bytes), (50, 2 * 50 * 8));
        assert_eq!((checked.output.embed, checked.output.distance), ([5, 6, 0], 30));
        assert_eq!(checked.output.bytes, 2 * 30 * 16);
        assert_eq!(checked.cufft_type, Some(cufftType::CUFFT_D2Z));
        let checked = PlanDesc::new(Kind::C2R, Precision::F16, &[8]).unwrap().check().unwrap();
        assert_eq!((checked.input.bytes, checked.output.bytes), (5 * 4, 8 * 2));
        assert_eq!(checked.cufft_type, None);
        assert_eq!(
            checked.types,
            [
                cudaDataType::CUDA_C_16F,
                cudaDataType::CUDA_R_16F,
                cudaDataType::CUDA_C_16F
            ]
        );
    }

    #[test]
    fn strided_layouts_span_what_they_reach() {
        // 4 transforms of 8 values, interleaved: element i of transform b at b + 4 i.
        let interleaved = Layout::strided(&[8], 4, 1).unwrap();
        let checked = PlanDesc::new(Kind::C2C, Precision::F32, &[8])
            .unwrap()
            .batch(4)
            .input_layout(interleaved)
            .output_layout(interleaved)
            .check()
            .unwrap();
        assert_eq!((checked.output.stride, checked.output.distance), (4, 1));
        assert_eq!(checked.output.bytes, 32 * 8);
        // Rows of 5 padded to 7, every second value: the last of 3 x 5 is at (2 * 7 + 4) * 2.
        let padded = Layout::strided(&[3, 7], 2, 100).unwrap();
        let checked = PlanDesc::new(Kind::C2C, Precision::F64, &[3, 5])
            .unwrap()
            .batch(2)
            .output_layout(padded)
            .check()
            .unwrap();
        assert_eq!(checked.output.bytes, (100 + 36 + 1) * 16);
    }

    #[test]
    fn bad_descriptions_are_typed_errors() {
        assert!(invalid(PlanDesc::new(Kind::C2C, Precision::F32, &[])).contains("1 to 3"));
        assert!(invalid(PlanDesc::new(Kind::C2C, Precision::F32, &[1, 2, 3, 4])).contains("1 to 3"));
        assert!(invalid(PlanDesc::new(Kind::C2C, Precision::F32, &[4, 0])).contains("axis 1 has size 0"));
        assert!(invalid(PlanDesc::new(Kind::R2C, Precision::F16, &[12])).contains("powers of two"));
        let desc = PlanDesc::new(Kind::C2C, Precision::F32, &[4, 6]).unwrap();
        assert!(invalid(desc.batch(0).check()).contains("batch must be at least 1"));
        let narrow = Layout::strided(&[4, 5], 1, 24).unwrap();
        assert!(invalid(desc.input_layout(narrow).check()).contains("6 values on axis 1"));
        let flat = Layout::strided(&[24], 1, 24).unwrap();
        assert!(invalid(desc.input_layout(flat).check()).contains("for a transform of 2 axes"));
        let zero = Layout::strided(&[4, 6], 0, 24).unwrap();
        assert!(invalid(desc.output_layout(zero).check()).contains("stride is 0"));
        // Output transforms 10 elements apart overlap transforms of 24.
        let overlapping = Layout::strided(&[4, 6], 1, 10).unwrap();
        assert!(invalid(desc.batch(2).output_layout(overlapping).check()).contains("overlap"));
        // The same layout on the input side is only read: allowed.
        assert!(desc.batch(2).input_layout(overlapping).check().is_ok());
        // One transform overlaps nothing.
        assert!(desc.output_layout(overlapping).check().is_ok());
        let huge = Layout::strided(&[4, 6], usize::MAX / 4, 24).unwrap();
        assert!(invalid(desc.input_layout(huge).check()).contains("2^63"));
        assert!(invalid(Layout::strided(&[], 1, 1)).contains("1 to 3"));
    }

    #[test]
    fn sizes_past_2_31_take_64_bit_plans() {
        let checked = PlanDesc::new(Kind::C2C, Precision::F32, &[1 << 32])
            .unwrap()
            .check()
            .unwrap();
        assert_eq!(checked.n[0], 1 << 32);
        assert_eq!(checked.input.bytes, 8 << 32);
    }

    #[test]
    fn a_failed_result_carries_its_name() {
        assert!(check("cufftXtExec", cufftResult_t::CUFFT_SUCCESS).is_ok());
        match check("cufftMakePlanMany64", cufftResult_t::CUFFT_INVALID_SIZE) {
            Err(Error::Status {
                library,
                function,
                code,
                name,
            }) => {
                assert_eq!((library, function, code), ("cuFFT", "cufftMakePlanMany64", 8));
                assert_eq!(name, "CUFFT_INVALID_SIZE");
            }
            other => panic!("{other:?}"),
        }
        match check("cufftXtExec", cufftResult_t(99)) {
            Err(Error::Status { name, .. }) => assert_eq!(name, "cufftResult 99"),
            other => panic!("{other:?}"),
        }
    }
}
