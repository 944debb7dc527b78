//! Arguments of generated kernels: [`Arg`] (an array read, an array written, a scalar), their
//! type signature ([`ArgType`]), and the checks every launch of generated code makes before
//! anything runs (the signature against the declared parameters, contexts, shapes and
//! broadcasting, overlap of outputs with inputs), plus the layout and index width of strided
//! calls.

use std::borrow::Cow;
use std::ffi::c_void;

use cuda_driver::{Access, Context, Stream, StreamUse};
use cuda_sys::driver::CUdeviceptr;

use crate::array::device_array::DeviceArray;
use crate::array::dtype::{Bool, DType, Element};
use crate::array::kernels::params::{Bindings, Param, ParamType};
pub use crate::array::kernels::signature::ArgType;
use crate::array::memory::{offset_range, overlap, Overlap, Span};
use crate::array::view::{broadcast_shapes, broadcast_strides};
use crate::error::{Error, Result};

/// The type-erased view of a [`DeviceArray`] an [`Arg`] holds.
pub(crate) trait ErasedArray {
    fn ptr_ref(&self) -> &CUdeviceptr;
    fn dtype(&self) -> DType;
    fn shape(&self) -> &[usize];
    fn strides(&self) -> &[isize];
    fn is_contiguous(&self) -> bool;
    fn is_broadcast(&self) -> bool;
    /// The memory the view reaches, for overlap checks.
    fn span(&self) -> Span<'_>;
    fn len(&self) -> usize;
    fn context(&self) -> &Context;
    fn stream(&self) -> &Stream;
    fn begin_use(&self, stream: &Stream, access: Access) -> cuda_driver::Result<StreamUse<'_>>;
    /// A C-contiguous copy of the view with its axes in `order`.
    fn permuted_copy(&self, order: &[usize]) -> Result<Box<dyn ErasedArray>>;
    /// The array itself, to recover its type (`downcast_ref::<DeviceArray<T>>()`): how a
    /// fused matmul finds its bias.
    #[cfg(feature = "blas")]
    fn as_any(&self) -> &dyn std::any::Any;
}

impl<T: Element> ErasedArray for DeviceArray<T> {
    fn ptr_ref(&self) -> &CUdeviceptr {
        DeviceArray::ptr_ref(self)
    }
    fn dtype(&self) -> DType {
        T::DTYPE
    }
    fn shape(&self) -> &[usize] {
        DeviceArray::shape(self)
    }
    fn strides(&self) -> &[isize] {
        DeviceArray::strides(self)
    }
    fn is_contiguous(&self) -> bool {
        DeviceArray::is_contiguous(self)
    }
    fn is_broadcast(&self) -> bool {
        DeviceArray::is_broadcast(self)
    }
    fn span(&self) -> Span<'_> {
        DeviceArray::span(self)
    }
    fn len(&self) -> usize {
        DeviceArray::len(self)
    }
    fn context(&self) -> &Context {
        DeviceArray::context(self)
    }
    fn stream(&self) -> &Stream {
        DeviceArray::stream(self)
    }
    fn begin_use(&self, stream: &Stream, access: Access) -> cuda_driver::Result<StreamUse<'_>> {
        DeviceArray::begin_use(self, stream, access)
    }
    fn permuted_copy(&self, order: &[usize]) -> Result<Box<dyn ErasedArray>> {
        let permuted = self.permute(order)?;
        if permuted.is_contiguous() {
            return Ok(Box::new(permuted));
        }
        let mut compact = DeviceArray::<T>::empty(self.stream(), permuted.shape().to_vec())?;
        super::copy::copy(self.stream(), &permuted, &mut compact)?;
        Ok(Box::new(compact))
    }
    #[cfg(feature = "blas")]
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

/// A scalar's bytes, aligned for any element type (the widest, `Complex<f64>`, takes 16).
#[derive(Clone, Copy)]
#[repr(C, align(16))]
struct ScalarBytes([u8; 16]);

/// One argument of a generated kernel: an array read (`&array`), an array written
/// (`&mut array`), or a scalar ([`Arg::scalar`]).
pub struct Arg<'a>(ArgKind<'a>);

enum ArgKind<'a> {
    Array(&'a dyn ErasedArray),
    ArrayMut(&'a dyn ErasedArray),
    Scalar(DType, ScalarBytes),
}

impl Arg<'static> {
    /// A scalar argument (passed by value).
    pub fn scalar<T: Element>(value: T) -> Arg<'static> {
        const { assert!(std::mem::size_of::<T>() <= std::mem::size_of::<ScalarBytes>()) };
        let mut bytes = ScalarBytes([0; 16]);
        // SAFETY: `T` is plain data of at most 16 bytes (every `Element` is, as the assertion
        // above checks at compile time); the copy fills the start of the 16-byte buffer.
        unsafe {
            std::ptr::copy_nonoverlapping(
                (&value as *const T).cast::<u8>(),
                bytes.0.as_mut_ptr(),
                std::mem::size_of::<T>(),
            )
        };
        Arg(ArgKind::Scalar(T::DTYPE, bytes))
    }
}

impl<'a> Arg<'a> {
    /// An input array, type-erased.
    pub(crate) fn erased(array: &'a dyn ErasedArray) -> Self {
        Arg(ArgKind::Array(array))
    }
}

impl<'a, T: Element> From<&'a DeviceArray<T>> for Arg<'a> {
    fn from(array: &'a DeviceArray<T>) -> Self {
        Arg(ArgKind::Array(array))
    }
}

impl<'a, T: Element> From<&'a mut DeviceArray<T>> for Arg<'a> {
    fn from(array: &'a mut DeviceArray<T>) -> Self {
        Arg(ArgKind::ArrayMut(array))
    }
}

macro_rules! scalar_args {
    ($($ty:ty),*) => {
        $(
            impl From<$ty> for Arg<'static> {
                fn from(value: $ty) -> Self {
                    Arg::scalar(value)
                }
            }
        )*
    };
}

scalar_args!(
    i8,
    i16,
    i32,
    i64,
    u8,
    u16,
    u32,
    u64,
    f32,
    f64,
    half::f16,
    half::bf16,
    Bool
);

impl Arg<'_> {
    /// The argument's kind and type.
    pub fn arg_type(&self) -> ArgType {
        match &self.0 {
            ArgKind::Array(a) | ArgKind::ArrayMut(a) => ArgType::Array(a.dtype()),
            ArgKind::Scalar(dtype, _) => ArgType::Scalar(*dtype),
        }
    }

    /// The element count of an array argument.
    pub(crate) fn array_len(&self) -> Option<usize> {
        self.array().map(|a| a.len())
    }

    /// The same argument, borrowed again.
    pub(crate) fn reborrow(&self) -> Arg<'_> {
        Arg(match &self.0 {
            ArgKind::Array(a) => ArgKind::Array(*a),
            ArgKind::ArrayMut(a) => ArgKind::ArrayMut(*a),
            ArgKind::Scalar(dtype, bytes) => ArgKind::Scalar(*dtype, *bytes),
        })
    }

    pub(crate) fn array(&self) -> Option<&dyn ErasedArray> {
        match &self.0 {
            ArgKind::Array(a) | ArgKind::ArrayMut(a) => Some(*a),
            ArgKind::Scalar(..) => None,
        }
    }

    /// Pointer to the argument's bytes as the kernel parameter takes them.
    pub(crate) fn param_ptr(&self) -> *mut c_void {
        match &self.0 {
            ArgKind::Array(a) | ArgKind::ArrayMut(a) => (a.ptr_ref() as *const CUdeviceptr).cast_mut().cast(),
            ArgKind::Scalar(_, bytes) => (bytes as *const ScalarBytes).cast_mut().cast(),
        }
    }

    /// How the kernel uses an array argument: outputs are written, inputs read.
    pub(crate) fn access(&self) -> Access {
        match &self.0 {
            ArgKind::ArrayMut(_) => Access::Write,
            _ => Access::Read,
        }
    }

    /// Bytes of the kernel parameter: a device address for arrays, the type's size for scalars.
    pub(crate) fn param_size(&self) -> usize {
        match &self.0 {
            ArgKind::Array(_) | ArgKind::ArrayMut(_) => std::mem::size_of::<CUdeviceptr>(),
            ArgKind::Scalar(dtype, _) => dtype.size(),
        }
    }
}

/// Checks a signature against inputs and outputs (outputs must be arrays) and binds the
/// placeholders; every placeholder used must end up bound.
pub(crate) fn bind_signature(
    kernel: &str,
    inputs: &[Param],
    outputs: &[Param],
    signature: &[ArgType],
) -> Result<Bindings> {
    check_signature(kernel, inputs, outputs, signature)?;
    let mut bindings = Bindings::default();
    for (param, arg) in inputs.iter().chain(outputs).zip(signature) {
        bindings.bind(kernel, param, arg.dtype())?;
    }
    Ok(bindings)
}

/// What [`bind_signature`] checks, without building the bindings (nothing allocated on
/// success: every launch checks its signature): the count, each concrete type, each
/// placeholder bound to one type (its first argument's), outputs that are arrays.
pub(crate) fn check_signature(kernel: &str, inputs: &[Param], outputs: &[Param], signature: &[ArgType]) -> Result<()> {
    let expected = inputs.len() + outputs.len();
    if signature.len() != expected {
        return Err(Error::InvalidValue(format!(
            "kernel `{kernel}` takes {expected} arguments ({} inputs, {} outputs), {} were given",
            inputs.len(),
            outputs.len(),
            signature.len()
        )));
    }
    let params = || inputs.iter().chain(outputs).zip(signature);
    for (param, arg) in params() {
        let expected = match &param.ty {
            ParamType::Concrete(dtype) => *dtype,
            // The type of the placeholder's first argument, which binds it.
            ParamType::Placeholder(p) => params()
                .find(|(other, _)| matches!(&other.ty, ParamType::Placeholder(o) if o == p))
                .map_or(arg.dtype(), |(_, first)| first.dtype()),
        };
        if expected != arg.dtype() {
            return Err(Error::InvalidValue(format!(
                "kernel `{kernel}`: argument `{}` is {}, the parameter needs {expected}{}",
                param.name,
                arg.dtype(),
                match &param.ty {
                    ParamType::Placeholder(p) => format!(" (`{p}` is already {expected})"),
                    ParamType::Concrete(_) => String::new(),
                }
            )));
        }
    }
    for (param, arg) in outputs.iter().zip(&signature[inputs.len()..]) {
        if !arg.is_array() {
            return Err(Error::InvalidValue(format!(
                "kernel `{kernel}`: output `{}` must be an array (`&mut array`)",
                param.name
            )));
        }
    }
    Ok(())
}

/// The element space of a call: the (broadcast) shape, its element count, and whether every
/// array is a C-contiguous run of exactly that shape (the fast path).
pub(crate) struct CallShape<'a> {
    /// Borrowed from the arrays when they all have it (nothing allocated).
    pub(crate) shape: Cow<'a, [usize]>,
    pub(crate) len: usize,
    pub(crate) contiguous: bool,
}

/// Checks call arguments: outputs written through `&mut`, one context (the stream's), and the
/// array shapes. Element-wise calls (`inputs_only == false`) broadcast every array to one shape
/// by NumPy's rule, which the outputs must have (and not be broadcast views themselves); an
/// input sharing memory with an output must be the very same view. Reductions
/// (`inputs_only`) take inputs of one shape, C-contiguous.
pub(crate) fn check_args<'a>(
    kernel: &str,
    stream: &Stream,
    args: &'a [Arg<'_>],
    inputs: usize,
    inputs_only: bool,
) -> Result<CallShape<'a>> {
    for (index, arg) in args.iter().enumerate().skip(inputs) {
        if !matches!(arg.0, ArgKind::ArrayMut(_)) {
            return Err(Error::InvalidValue(format!(
                "kernel `{kernel}`: argument {index} is an output and must be passed as `&mut array`"
            )));
        }
    }
    for array in args.iter().filter_map(Arg::array) {
        if array.context() != stream.context() {
            return Err(cuda_driver::Error::WrongContext {
                object: "array",
                used_with: "stream",
            }
            .into());
        }
    }
    let considered = if inputs_only { &args[..inputs] } else { args };
    let mut arrays = considered.iter().filter_map(Arg::array);
    let Some(first) = arrays.next() else {
        return Err(Error::InvalidValue(format!(
            "kernel `{kernel}`: no array gives the size"
        )));
    };
    let mut shape = Cow::Borrowed(first.shape());
    for array in arrays {
        shape = match inputs_only {
            _ if array.shape() == &*shape => Ok(shape),
            true => Err(Error::InvalidValue(format!(
                "kernel `{kernel}`: arrays of shapes {shape:?} and {:?} cannot be combined",
                array.shape()
            ))),
            false => broadcast_shapes(&shape, array.shape()).map(Cow::Owned).map_err(|e| {
                Error::InvalidValue(format!(
                    "kernel `{kernel}`: {}",
                    e.to_string().trim_start_matches("invalid value: ")
                ))
            }),
        }?;
    }
    if inputs_only {
        if let Some(strided) = considered.iter().filter_map(Arg::array).find(|a| !a.is_contiguous()) {
            return Err(Error::InvalidValue(format!(
                "kernel `{kernel}`: reduction inputs must be C-contiguous; the view of shape {:?} and strides {:?} is not (use to_contiguous())",
                strided.shape(),
                strided.strides()
            )));
        }
    } else {
        for (index, output) in args
            .iter()
            .enumerate()
            .skip(inputs)
            .filter_map(|(i, a)| Some((i, a.array()?)))
        {
            if output.shape() != &*shape {
                return Err(Error::InvalidValue(format!(
                    "kernel `{kernel}`: output {index} has shape {:?}, the arguments broadcast to {shape:?}",
                    output.shape()
                )));
            }
            if output.is_broadcast() {
                return Err(Error::InvalidValue(format!(
                    "kernel `{kernel}`: output {index} is a broadcast view (strides {:?}); it cannot be written",
                    output.strides()
                )));
            }
            for input in args[..inputs].iter().filter_map(Arg::array) {
                if overlap(input.span(), output.span()) == Overlap::Partial {
                    return Err(Error::InvalidValue(format!(
                        "kernel `{kernel}`: an input (shape {:?}, strides {:?}) overlaps output {index} (shape {:?}, strides {:?}) without being the same view; pass a copy",
                        input.shape(),
                        input.strides(),
                        output.shape(),
                        output.strides()
                    )));
                }
            }
        }
    }
    let len = shape.iter().product();
    let contiguous = considered
        .iter()
        .filter_map(Arg::array)
        .all(|a| a.shape() == &*shape && a.is_contiguous());
    Ok(CallShape { shape, len, contiguous })
}

/// Whether an array of `shape` broadcasts to `target` under NumPy's rule: no more axes, and each
/// extent, aligned from the last, equal to `target`'s or 1.
pub(crate) fn broadcasts_to(shape: &[usize], target: &[usize]) -> bool {
    shape.len() <= target.len()
        && shape
            .iter()
            .rev()
            .zip(target.iter().rev())
            .all(|(&extent, &wanted)| extent == wanted || extent == 1)
}

/// The strided layout of a call over `shape`: the extents and, per array argument, the strides
/// (in elements) of each array broadcast to `shape`, with extents of 1 dropped and axes that
/// are contiguous in every array merged, so the generated index arithmetic is as short as it
/// can be. At least one axis.
pub(crate) fn strided_layout(args: &[Arg<'_>], shape: &[usize]) -> (Vec<usize>, Vec<Vec<isize>>) {
    let per_array: Vec<Vec<isize>> = args
        .iter()
        .filter_map(Arg::array)
        .map(|a| broadcast_strides(a.shape(), a.strides(), shape).expect("checked by check_args or launch_expression"))
        .collect();
    merged_layout(shape, &per_array)
}

/// `shape` with each array's `per_array` strides along it, axes of extent 1 dropped and
/// neighbours merged where every array steps over both as over one (at least one axis kept).
pub(crate) fn merged_layout(shape: &[usize], per_array: &[Vec<isize>]) -> (Vec<usize>, Vec<Vec<isize>>) {
    let mut extents: Vec<usize> = Vec::new();
    let mut strides: Vec<Vec<isize>> = vec![Vec::new(); per_array.len()];
    for axis in 0..shape.len() {
        if shape[axis] == 1 {
            continue;
        }
        let mergeable = !extents.is_empty()
            && per_array
                .iter()
                .zip(&strides)
                .all(|(s, kept)| kept.last() == Some(&(s[axis] * shape[axis] as isize)));
        if mergeable {
            *extents.last_mut().expect("not empty") *= shape[axis];
            for (s, kept) in per_array.iter().zip(&mut strides) {
                *kept.last_mut().expect("not empty") = s[axis];
            }
        } else {
            extents.push(shape[axis]);
            for (s, kept) in per_array.iter().zip(&mut strides) {
                kept.push(s[axis]);
            }
        }
    }
    if extents.is_empty() {
        extents.push(1);
        for kept in &mut strides {
            kept.push(0);
        }
    }
    (extents, strides)
}

/// How generated strided code indexes: its loop index and element offsets in 32 or 64 bits,
/// and whether an offset may be negative (a reversed view: a negative stride) and is read as
/// signed. Offsets are summed in the loop's unsigned type, whose wrap-around arithmetic gives
/// the true offset modulo 2^bits; reading that as the offset type is exact while every offset
/// lies in the type's range. The one place generated code chooses its index width; kernels
/// without a 32-bit form always index in 64 bits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IndexWidth {
    /// 64-bit loop and offsets (else 32-bit).
    pub wide: bool,
    /// Some stride is negative: offsets are read as signed.
    pub signed: bool,
}

impl IndexWidth {
    /// 32-bit, offsets read as signed: what a strided call under 2^31 elements with a reversed
    /// view gets, the form whose source is the most general of the 32-bit ones.
    pub const SIGNED_32: IndexWidth = IndexWidth {
        wide: false,
        signed: true,
    };

    /// The width of a grid-stride loop over `extents`, run by `threads` threads, over arrays
    /// with `strides` along them: 32-bit while every value the loop computes (the last element
    /// index plus the grid's stride, and each array's offsets) fits, else 64-bit.
    pub(crate) fn of(extents: &[usize], strides: &[Vec<isize>], threads: u64) -> IndexWidth {
        let len = extents.iter().product();
        Self::of_spans(
            len,
            threads,
            &strides.iter().map(|s| (extents, &s[..])).collect::<Vec<_>>(),
        )
    }

    /// The width of a grid-stride loop of `len` elements run by `threads` threads, whose
    /// offsets into each array are those of `(extents, strides)` in `spans` (or within them).
    pub(crate) fn of_spans(len: usize, threads: u64, spans: &[(&[usize], &[isize])]) -> IndexWidth {
        let signed = spans.iter().any(|(_, strides)| strides.iter().any(|&s| s < 0));
        let (low, high) = match signed {
            true => (-(1i128 << 31), 1i128 << 31),
            false => (0, 1i128 << 32),
        };
        let wide = len as u128 + u128::from(threads) > 1 << 32
            || spans.iter().any(|(extents, strides)| {
                let (reach_low, reach_high) = offset_range(extents, strides).unwrap_or((0, 0));
                reach_low < low || reach_high >= high
            });
        IndexWidth { wide, signed }
    }

    /// Two bits for a kernel's variant key.
    pub(crate) fn key(self) -> u64 {
        u64::from(self.wide) << 1 | u64::from(self.signed)
    }

    /// The C++ typedefs of the loop's unsigned type `loop_type` and the offset type read at
    /// each access, `offset_type`.
    pub(crate) fn typedefs(self, loop_type: &str, offset_type: &str) -> String {
        let (index, offset) = match (self.wide, self.signed) {
            (true, _) => ("unsigned long long", "long long"),
            (false, true) => ("unsigned int", "int"),
            (false, false) => ("unsigned int", "unsigned int"),
        };
        format!("typedef {index} {loop_type};\ntypedef {offset} {offset_type};\n")
    }
}

/// Whether every array argument's address is aligned to `bytes` (a mask, not a division, for
/// the usual power of two).
pub(crate) fn arrays_aligned(args: &[Arg<'_>], bytes: usize) -> bool {
    let bytes = bytes as CUdeviceptr;
    let aligned = |address: CUdeviceptr| match bytes.is_power_of_two() {
        true => address & (bytes - 1) == 0,
        false => address % bytes == 0,
    };
    args.iter().filter_map(Arg::array).all(|a| aligned(*a.ptr_ref()))
}

/// A generated call's argument list: each array parameter as `array(param)` gives it, each
/// scalar by its name.
pub(crate) fn call_args<'p>(
    params: impl IntoIterator<Item = (&'p Param, ArgType)>,
    array: impl Fn(&Param) -> String,
) -> String {
    params
        .into_iter()
        .map(|(p, arg)| match arg.is_array() {
            true => array(p),
            false => p.name.clone(),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// The C++ type text of a parameter as declared (a placeholder stays a placeholder).
pub(crate) fn declared_type(param: &Param) -> String {
    match &param.ty {
        ParamType::Concrete(d) => d.c_name().to_string(),
        ParamType::Placeholder(p) => p.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::array::kernels::params::parse_params;

    #[test]
    fn signatures_are_checked_against_parameters() {
        let inputs = parse_params("T x, T y, float a", "input").unwrap();
        let outputs = parse_params("T z", "output").unwrap();
        let good = [
            ArgType::Array(DType::F64),
            ArgType::Array(DType::F64),
            ArgType::Scalar(DType::F32),
            ArgType::Array(DType::F64),
        ];
        let bindings = bind_signature("k", &inputs, &outputs, &good).unwrap();
        assert_eq!(bindings.get("T"), Some(DType::F64));
        let error = bind_signature("k", &inputs, &outputs, &good[..3]).unwrap_err();
        assert!(error.to_string().contains("takes 4 arguments"), "{error}");
        let mut wrong_type = good;
        wrong_type[1] = ArgType::Array(DType::F32);
        assert!(matches!(
            bind_signature("k", &inputs, &outputs, &wrong_type),
            Err(Error::InvalidValue(_))
        ));
        let mut scalar_out = good;
        scalar_out[3] = ArgType::Scalar(DType::F64);
        let error = bind_signature("k", &inputs, &outputs, &scalar_out).unwrap_err();
        assert!(error.to_string().contains("must be an array"), "{error}");
    }

    #[test]
    fn shapes_broadcast_to_a_target_by_numpys_rule() {
        assert!(broadcasts_to(&[3], &[2, 3]));
        assert!(broadcasts_to(&[1, 3], &[2, 3]));
        assert!(broadcasts_to(&[2, 1], &[2, 3]));
        assert!(broadcasts_to(&[], &[2, 3]));
        assert!(broadcasts_to(&[1], &[0]));
        assert!(!broadcasts_to(&[4], &[2, 3]));
        assert!(!broadcasts_to(&[2, 3], &[3]), "more axes than the target");
        assert!(!broadcasts_to(&[2], &[1]), "the target's extent of 1 does not stretch");
        assert!(!broadcasts_to(&[0], &[1]));
    }

    #[test]
    fn scalars_keep_their_bytes_and_type() {
        let arg = Arg::scalar(-2.5f64);
        assert_eq!(arg.arg_type(), ArgType::Scalar(DType::F64));
        // SAFETY: the pointer is to the 8 bytes of the scalar just stored.
        assert_eq!(unsafe { *arg.param_ptr().cast::<f64>() }, -2.5);
        let arg = Arg::from(7u16);
        // SAFETY: as above, 2 bytes.
        assert_eq!(unsafe { *arg.param_ptr().cast::<u16>() }, 7);
    }

    #[test]
    fn indices_are_32_bit_only_while_the_last_index_plus_the_grid_fits() {
        let threads = 132 * 8 * 256;
        let fits = |extents: &[usize], strides: &[Vec<isize>], threads| !IndexWidth::of(extents, strides, threads).wide;
        assert!(fits(&[1 << 20], &[vec![1], vec![0]], threads));
        // The loop's last index plus its stride must stay below 2^32: 2^32 - 16384 elements
        // run by more than 16384 threads would wrap (elements visited again, or never left).
        let near = (1usize << 32) - 16384;
        assert!(!fits(&[near], &[vec![1], vec![0]], threads));
        assert!(fits(&[near], &[vec![1], vec![0]], 16384));
        assert!(!fits(&[(1 << 32) - 2], &[vec![1]], 256));
        // An offset past 2^32 needs 64 bits even for few elements.
        assert!(!fits(&[3, 3], &[vec![1 << 31, 1]], threads));
        assert!(fits(&[3, 3], &[vec![1 << 30, 1]], threads));
        // Reversed views read offsets as signed 32-bit numbers: each must lie in [-2^31, 2^31),
        // for every array of the call, also those whose strides are positive.
        let reversed = IndexWidth::of(&[3, 3], &[vec![-(1 << 29), 1]], threads);
        assert_eq!(
            reversed,
            IndexWidth {
                wide: false,
                signed: true
            }
        );
        assert!(IndexWidth::of(&[3, 3], &[vec![-(1 << 30) - 1, 1]], threads).wide);
        assert!(IndexWidth::of(&[3, 3], &[vec![-1, 1], vec![1 << 30, 1]], threads).wide);
        assert!(!IndexWidth::of(&[3, 3], &[vec![1 << 30, 1]], threads).signed);
    }
}
