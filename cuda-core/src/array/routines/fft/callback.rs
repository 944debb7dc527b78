//! cuFFT's load callback of an expression: CUDA C++ that computes one input element of the
//! transform from the expression's operands (the same value the expression's element-wise
//! kernel computes, [`Expr::element_map`](crate::array::routines::math::Expr)), compiled to
//! LTO-IR by NVRTC for cuFFT to link into its own kernels.
//!
//! cuFFT calls the callback with an element's offset in the plan's input, which is packed:
//! the row-major position in the transform's input shape with the transformed axes moved last.
//! The callback turns the offset into each array operand's element offset (its strides broadcast
//! to the expression's shape, moved the same way, neighbouring axes merged), reads the operands
//! as their types, computes the value, converts it to the plan's input type and multiplies it by
//! the `norm` factor. The extents are constants of the source (a plan is made per shape anyway,
//! and a division by a constant is a multiplication); everything else that changes between
//! calls of one cached plan (the operands' addresses and strides, scalars and the factor) is in
//! the caller info, 64-bit words the plan writes before each execution:
//!
//! | words | what |
//! |---|---|
//! | 1 | the factor, an `f64` |
//! | `1 + ndim` per array parameter | its address, then its strides in elements |
//! | 1 or 2 per scalar parameter | its bytes (a `Complex<f64>` takes 2) |

use std::fmt::Write;
use std::sync::{Arc, OnceLock};

use cuda_libs::fft::{load_return_type, Kind, Precision};

use crate::array::dtype::DType;
use crate::array::kernels::args::merged_layout;
use crate::array::kernels::registry::kernel_encoded;
use crate::array::kernels::{Arg, ArgType, IndexWidth, PRELUDE};
use crate::array::routines::math::{cast, ElementMap, EXPR_PRELUDE};
use crate::array::view::broadcast_strides;
use crate::error::{Error, Result};
use crate::{Arch, CompileTarget, Program, ProgramOptions};

/// The callback's name (C++ linkage, as cuFFT's examples declare theirs).
pub(super) const SYMBOL: &str = "cuda_core_fft_load";

/// Where the callback finds an expression's elements: the transform input's extents (axes
/// moved and merged) and each array parameter's strides along them, with the index width the
/// offsets need.
#[derive(Debug)]
pub(super) struct CallbackLayout {
    extents: Vec<usize>,
    strides: Vec<Vec<isize>>,
    width: IndexWidth,
}

impl CallbackLayout {
    /// The layout of `map`'s arrays (broadcast to `expr_shape`) over `input`, the transform's
    /// input shape (each extent at most the expression's: no padding), with the axes in `order`.
    pub(super) fn new(
        map: &ElementMap<'_>,
        expr_shape: &[usize],
        input: &[usize],
        order: &[usize],
    ) -> Result<CallbackLayout> {
        let extents: Vec<usize> = order.iter().map(|&k| input[k]).collect();
        let per_array = map
            .params
            .iter()
            .filter_map(Arg::array)
            .map(|a| {
                let strides = broadcast_strides(a.shape(), a.strides(), expr_shape).ok_or_else(|| {
                    Error::InvalidValue(format!(
                        "an operand of shape {:?} does not broadcast to the expression's {expr_shape:?}",
                        a.shape()
                    ))
                })?;
                Ok(order.iter().map(|&k| strides[k]).collect())
            })
            .collect::<Result<Vec<Vec<isize>>>>()?;
        Ok(CallbackLayout::from_strides(&extents, &per_array))
    }

    /// The merged layout of `extents` with each array's `per_array` strides along them.
    fn from_strides(extents: &[usize], per_array: &[Vec<isize>]) -> CallbackLayout {
        let (extents, strides) = merged_layout(extents, per_array);
        let width = IndexWidth::of(&extents, &strides, 0);
        CallbackLayout {
            extents,
            strides,
            width,
        }
    }
}

/// The registry key of the callback of `map` loading `input` (the plan's input type) over
/// `layout`, compiled for `arch`: equal keys give equal source. (The map's key holds each
/// parameter's type, not whether it is an array or a scalar, which the callback reads
/// differently: a bit per parameter says that.)
pub(super) fn key(map: &ElementMap<'_>, layout: &CallbackLayout, input: DType, arch: u32) -> Vec<u32> {
    let mut key = map.key.clone();
    key.push(u32::MAX - 2);
    key.extend(map.params.iter().map(|p| u32::from(p.arg_type().is_array())));
    for &extent in &layout.extents {
        key.extend([extent as u32, (extent as u64 >> 32) as u32]);
    }
    key.extend([
        u32::MAX - 1,
        layout.extents.len() as u32,
        layout.width.key() as u32,
        input as u32,
        arch,
    ]);
    key
}

/// The plan's kind and precision for an input of type `input` (real: real to complex).
pub(super) fn kind_of(input: DType) -> (Kind, Precision) {
    let kind = if input.is_complex() { Kind::C2C } else { Kind::R2C };
    let precision = match input {
        DType::F32 | DType::C64 => Precision::F32,
        _ => Precision::F64,
    };
    (kind, precision)
}

/// The words each parameter takes in the caller info after the factor.
fn param_words(param: ArgType, ndim: usize) -> usize {
    match param {
        ArgType::Array(_) => 1 + ndim,
        ArgType::Scalar(dtype) => dtype.size().div_ceil(8),
    }
}

/// The callback's CUDA C++: `value_text` (C++ of a value of type `value`, from parameters
/// `a0`, `a1`, ... of types `params`: an [`ElementMap`]'s) as an element of type `input`.
pub(super) fn source(
    params: &[ArgType],
    value_text: &str,
    value: DType,
    input: DType,
    layout: &CallbackLayout,
) -> Result<String> {
    let (kind, precision) = kind_of(input);
    let ret = load_return_type(kind, precision)?;
    let part = match precision {
        Precision::F32 => "float",
        _ => "double",
    };
    let ndim = layout.extents.len();
    let mut s = String::from("// generated by cuda-core: cuFFT load callback of an expression\n");
    s.push_str(PRELUDE);
    s.push_str(EXPR_PRELUDE);
    s.push_str(&layout.width.typedefs("_I", "_S"));
    let _ = writeln!(
        s,
        "__device__ {ret} {SYMBOL}(void *, unsigned long long _offset, void *_info, void *) {{\n\
         \x20   const unsigned long long *_w = (const unsigned long long *)_info;\n\
         \x20   _I _r = (_I)_offset;"
    );
    let arrays = layout.strides.len();
    for k in 0..arrays {
        let _ = writeln!(s, "    _I _o{k} = 0;");
    }
    // Word of each array's address, in parameter order.
    let mut next = 1;
    let mut loads = String::new();
    let mut array = 0;
    for (p, &arg) in params.iter().enumerate() {
        let c = arg.dtype().c_name();
        match arg {
            ArgType::Array(_) => {
                let _ = writeln!(loads, "    const {c} a{p} = ((const {c} *)_w[{next}])[(_S)_o{array}];");
                array += 1;
            }
            ArgType::Scalar(_) => {
                let _ = writeln!(loads, "    {c} a{p};\n    memcpy(&a{p}, _w + {next}, sizeof(a{p}));");
            }
        }
        next += param_words(arg, ndim);
    }
    // The offset's coordinates, last axis first, into each array's offset.
    for d in (0..ndim).rev() {
        let extent = layout.extents[d];
        let coordinate = match d {
            0 => "const _I _c = _r;".to_string(),
            _ => format!("const _I _c = _r % (_I){extent}ull; _r = _r / (_I){extent}ull;"),
        };
        let mut steps = String::new();
        let mut word = 1;
        let mut k = 0;
        for &arg in params {
            if arg.is_array() {
                let _ = write!(steps, " _o{k} += _c * (_I)_w[{}];", word + 1 + d);
                k += 1;
            }
            word += param_words(arg, ndim);
        }
        let _ = writeln!(s, "    {{ {coordinate}{steps} }}");
    }
    s.push_str(&loads);
    let _ = writeln!(
        s,
        "    const {} _v = {};\n    const {part} _f = ({part})__longlong_as_double((long long)_w[0]);",
        input.compute_c_name(),
        cast(value, input, value_text)
    );
    match input.is_complex() {
        true => s.push_str(&format!(
            "    {ret} _z;\n    _z.x = _v.re * _f;\n    _z.y = _v.im * _f;\n    return _z;\n}}\n"
        )),
        false => s.push_str(&format!("    return ({ret})(_v * _f);\n}}\n")),
    }
    Ok(s)
}

/// The caller-info words of one execution: `factor`, then each parameter's words.
pub(super) fn info_words(map: &ElementMap<'_>, layout: &CallbackLayout, factor: f64) -> Vec<u64> {
    let mut words = vec![factor.to_bits()];
    let mut strides = layout.strides.iter();
    for param in &map.params {
        match param.array() {
            Some(array) => {
                words.push(*array.ptr_ref());
                let along = strides.next().map(Vec::as_slice).unwrap_or(&[]);
                words.extend(along.iter().map(|&s| s as i64 as u64));
            }
            None => {
                let size = param.param_size();
                let mut bytes = [0u8; 16];
                // SAFETY: a scalar argument's pointer addresses its `param_size()` bytes (at
                // most 16), alive while `param` is.
                unsafe {
                    std::ptr::copy_nonoverlapping(param.param_ptr().cast::<u8>(), bytes.as_mut_ptr(), size.min(16))
                };
                for chunk in bytes[..size.div_ceil(8) * 8].chunks(8) {
                    words.push(u64::from_ne_bytes(chunk.try_into().expect("8 bytes")));
                }
            }
        }
    }
    words
}

/// A callback compiled to LTO-IR.
pub(super) struct CompiledCallback {
    pub(super) lto_ir: Vec<u8>,
}

/// The callback of `key`, compiled from `source()` for `compute_<arch>` the first time
/// (through the kernel registry, then NVRTC's kernel cache).
pub(super) fn compiled(
    key: &[u32],
    arch: u32,
    source: impl FnOnce() -> Result<String>,
) -> Result<Arc<CompiledCallback>> {
    kernel_encoded("fft load callback", key, || {
        Ok(CompiledCallback {
            lto_ir: compile(source()?, arch, SYMBOL)?,
        })
    })
}

/// LTO-IR of a callback's `source` (defining `symbol`) for `compute_<arch>` (relocatable, as
/// cuFFT links it).
pub(super) fn compile(source: String, arch: u32, symbol: &str) -> Result<Vec<u8>> {
    let options = ProgramOptions {
        relocatable_device_code: true,
        name: Some(format!("{symbol}.cu")),
        ..ProgramOptions::for_arch(Arch::Compute(arch))
    };
    Ok(Program::new(source, options)
        .compile(CompileTarget::LtoIr)?
        .code()
        .to_vec())
}

/// Why the loaded cuFFT takes no load callback, asked once per process (`None`: it takes them).
pub(super) fn callbacks_unavailable() -> Result<Option<String>> {
    static ANSWER: OnceLock<Option<String>> = OnceLock::new();
    if let Some(answer) = ANSWER.get() {
        return Ok(answer.clone());
    }
    let answer = cuda_libs::fft::supports_load_callbacks()?;
    Ok(ANSWER.get_or_init(|| answer).clone())
}

/// Whether a cuFFT status from making a plan with a load or store callback says cuFFT cannot take this
/// callback (so the fallback runs) rather than that something failed.
pub(super) fn refuses_callback(function: &str, name: &str) -> bool {
    matches!(
        name,
        "CUFFT_NOT_SUPPORTED"
            | "CUFFT_NOT_IMPLEMENTED"
            | "CUFFT_NVRTC_FAILURE"
            | "CUFFT_NVJITLINK_FAILURE"
            | "CUFFT_MISSING_DEPENDENCY"
    ) || (function == "cufftXtSetJITCallback" && matches!(name, "CUFFT_INVALID_VALUE" | "CUFFT_INVALID_TYPE"))
}

/// Test support: links the LTO-IR `callback` with a kernel compiled from `caller` (which calls it
/// through cuFFT's declaration of a callback) into an sm_90 cubin, panicking with `source` where
/// the link fails: it resolves only if the callback has the declared name and signature.
#[cfg(test)]
pub(super) fn links_with_caller(callback: Vec<u8>, caller: String, source: &str) {
    let options = ProgramOptions {
        relocatable_device_code: true,
        ..ProgramOptions::for_arch(Arch::Compute(90))
    };
    let caller = Program::new(caller, options).compile(CompileTarget::LtoIr).unwrap();
    let callback = crate::ObjectCode::from_ltoir(callback).unwrap();
    let cubin = crate::Linker::new(crate::LinkerOptions::for_arch(Arch::Sm(90)))
        .add(&callback)
        .add(&caller)
        .link(crate::LinkTarget::Cubin)
        .unwrap_or_else(|e| panic!("the callback does not link: {e}\n{source}"));
    assert!(!cubin.code().is_empty());
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::array::routines::math::{map_text, Expr, ScalarValue};
    use num_complex::Complex;

    fn nvrtc_available(test: &str) -> bool {
        match cuda_sys::nvrtc() {
            Ok(_) => true,
            Err(why) => {
                println!("skipped: {test}: NVRTC is not available ({why})");
                false
            }
        }
    }

    /// The value text of `a0 * a1` of two operands of `dtype` (scalars here; the callback
    /// loads them as `params` say), from the expression generator itself.
    fn product<T: crate::array::Scalars + crate::array::promotion::Promote<T>>(
        dtype: DType,
        value: ScalarValue,
    ) -> (String, Vec<u32>) {
        let e = Expr::<T>::scalar(dtype, value) * Expr::<T>::scalar(dtype, value);
        let (_, text, key) = map_text(&e);
        (text, key)
    }

    /// Compiles a callback returning `ret` to LTO-IR and, where nvJitLink is at hand, links it
    /// with a kernel that calls it through cuFFT's declaration of a load callback: the link
    /// resolves only if the callback has that name and signature.
    fn compiles(source: &str, ret: &str) {
        let lto = compile(source.to_string(), 90, SYMBOL).unwrap_or_else(|e| panic!("{e}\n{source}"));
        assert!(!lto.is_empty());
        if let Err(why) = cuda_sys::nvjitlink() {
            println!("not linked: nvJitLink is not available ({why})");
            return;
        }
        let caller = format!(
            "__device__ {ret} {SYMBOL}(void *, unsigned long long, void *, void *);\n\
             extern \"C\" __global__ void call({ret} *out, void *info) {{ out[threadIdx.x] = {SYMBOL}(0, threadIdx.x, info, 0); }}\n"
        );
        links_with_caller(lto, caller, source);
    }

    #[test]
    fn a_windowed_batch_compiles_to_lto_ir() {
        if !nvrtc_available("fft load callback") {
            return;
        }
        // `x * window`: x compact [256, 1024] f32, the window [1024] broadcast over the batch.
        let (value, _) = product::<f32>(DType::F32, ScalarValue::Float(1.0));
        let layout = CallbackLayout::from_strides(&[256, 1024], &[vec![1024, 1], vec![0, 1]]);
        assert_eq!((layout.extents.len(), layout.width.wide), (2, false));
        let params = [ArgType::Array(DType::F32), ArgType::Array(DType::F32)];
        let text = source(&params, &value, DType::F32, DType::F32, &layout).unwrap();
        assert!(text.contains("__device__ float cuda_core_fft_load(void *, unsigned long long _offset"));
        // x's address at word 1 (strides 2, 3), the window's at 4 (5, 6); extents in the code.
        assert!(text.contains("((const float *)_w[1])[(_S)_o0]"), "{text}");
        assert!(text.contains("((const float *)_w[4])[(_S)_o1]"), "{text}");
        assert!(text.contains("_o1 += _c * (_I)_w[6];"), "{text}");
        assert!(text.contains("_r % (_I)1024ull"), "{text}");
        compiles(&text, "float");
    }

    #[test]
    fn complex_products_and_scalars_compile_for_both_precisions() {
        if !nvrtc_available("fft load callback") {
            return;
        }
        // `a * b` of complex f32 into a complex-to-complex plan (float2).
        let (value, _) = product::<Complex<f32>>(DType::C64, ScalarValue::Complex(1.0, 2.0));
        let layout = CallbackLayout::from_strides(&[8, 64], &[vec![64, 1], vec![64, 1]]);
        assert_eq!(layout.extents, [512], "compact operands merge into one axis");
        let params = [ArgType::Array(DType::C64), ArgType::Array(DType::C64)];
        let text = source(&params, &value, DType::C64, DType::C64, &layout).unwrap();
        assert!(text.contains("__device__ float2 cuda_core_fft_load"));
        compiles(&text, "float2");
        // f64 times a scalar (its bytes from the caller info), into double2 from a real value.
        let (value, _) = product::<f64>(DType::F64, ScalarValue::Float(3.0));
        let layout = CallbackLayout::from_strides(&[4, 3, 5], &[vec![-15, 5, 1]]);
        assert_eq!((layout.extents.as_slice(), layout.width.signed), (&[4, 15][..], true));
        let params = [ArgType::Array(DType::F64), ArgType::Scalar(DType::F64)];
        let text = source(&params, &value, DType::F64, DType::C128, &layout).unwrap();
        assert!(text.contains("memcpy(&a1, _w + 4, sizeof(a1));"), "{text}");
        compiles(&text, "double2");
        // A complex f64 scalar takes two words.
        assert_eq!(param_words(ArgType::Scalar(DType::C128), 3), 2);
        assert_eq!(param_words(ArgType::Array(DType::F16), 3), 4);
    }

    #[test]
    fn every_element_type_loads_into_every_plan_it_feeds() {
        if !nvrtc_available("fft load callback") {
            return;
        }
        fn one<T: crate::array::Scalars>(dtype: DType, value: ScalarValue) -> String {
            map_text(&Expr::<T>::scalar(dtype, value)).1
        }
        let float = ScalarValue::Float(1.5);
        let values = [
            (
                DType::Bool,
                one::<crate::array::dtype::Bool>(DType::Bool, ScalarValue::int(1)),
            ),
            (DType::I8, one::<i8>(DType::I8, ScalarValue::int(-3))),
            (DType::U64, one::<u64>(DType::U64, ScalarValue::int(7))),
            (DType::F16, one::<half::f16>(DType::F16, float)),
            (DType::F32, one::<f32>(DType::F32, float)),
            (DType::F64, one::<f64>(DType::F64, float)),
            (
                DType::C64,
                one::<Complex<f32>>(DType::C64, ScalarValue::Complex(1.0, 2.0)),
            ),
            (
                DType::C128,
                one::<Complex<f64>>(DType::C128, ScalarValue::Complex(1.0, 2.0)),
            ),
        ];
        let layout = CallbackLayout::from_strides(&[3, 40], &[vec![80, 2]]);
        for (value, text) in &values {
            // What the transforms pair: a type's own precision, real into real-to-complex plans,
            // anything into complex ones.
            let single = matches!(value, DType::F16 | DType::F32 | DType::C64);
            let inputs: &[DType] = match (value.is_complex(), single) {
                (true, true) => &[DType::C64],
                (true, false) => &[DType::C128],
                (false, true) => &[DType::F32, DType::C64],
                (false, false) => &[DType::F64, DType::C128],
            };
            for &input in inputs {
                let params = [ArgType::Array(*value)];
                let source = source(&params, text, *value, input, &layout).unwrap();
                if let Err(error) = compile(source.clone(), 90, SYMBOL) {
                    panic!("{value} into {input}: {error}\n{source}");
                }
            }
        }
    }

    #[test]
    fn keys_tell_array_parameters_from_scalars() {
        let layout = CallbackLayout::from_strides(&[8], &[vec![1]]);
        let (value, key) = product::<f32>(DType::F32, ScalarValue::Float(1.0));
        let map = |params: Vec<Arg<'static>>| ElementMap {
            params,
            value: value.clone(),
            key: key.clone(),
        };
        let scalars = map(vec![Arg::scalar(1.0f32), Arg::scalar(2.0f32)]);
        let (a, b) = (
            super::key(&scalars, &layout, DType::F32, 90),
            super::key(&scalars, &layout, DType::F32, 80),
        );
        assert_ne!(a, b, "the architecture");
        assert_ne!(
            a,
            super::key(&scalars, &layout, DType::C64, 90),
            "the plan's input type"
        );
        let words = info_words(&scalars, &layout, 0.5);
        // The factor, then each scalar's bytes.
        assert_eq!(words.len(), 3);
        assert_eq!(f64::from_bits(words[0]), 0.5);
        assert_eq!(f32::from_bits(words[2] as u32), 2.0);
        let complex = map(vec![Arg::scalar(Complex::new(1.0f64, -2.0))]);
        let words = info_words(&complex, &layout, 1.0);
        assert_eq!((f64::from_bits(words[1]), f64::from_bits(words[2])), (1.0, -2.0));
        let longer = CallbackLayout::from_strides(&[16], &[vec![1]]);
        assert_ne!(a, super::key(&scalars, &longer, DType::F32, 90), "the extents");
        assert_ne!(
            super::key(&complex, &layout, DType::F32, 90)[key.len()..],
            a[key.len()..]
        );
    }

    #[test]
    fn plans_follow_the_input_type() {
        assert_eq!(kind_of(DType::F32), (Kind::R2C, Precision::F32));
        assert_eq!(kind_of(DType::C128), (Kind::C2C, Precision::F64));
    }
}
