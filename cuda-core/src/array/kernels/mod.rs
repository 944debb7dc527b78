//! The families of generated kernels, and what they share: arguments and their checks
//! ([`args`]), parameter lists with type placeholders ([`params`]), the one registry of loaded
//! code per context ([`registry`]), and the device helpers every family's source starts with
//! (`prelude.cuh`, and `complex.cuh`: the complex types with their arithmetic and math).
//!
//! A family turns a signature into CUDA C++ with named entry points, chooses the index width
//! (one rule: [`args::fits_32_bits`]) and the grid ([`registry::grid_for`]), and loads its code
//! through the registry, and launches it through [`launch::Launch`], the one launch path (whose
//! lists are [`inline::Inline`], so the usual launch allocates nothing):
//! - [`elementwise`]: [`ElementwiseKernel`], contiguous (vector loads) and strided;
//! - [`reduction`] and [`reduction_axis`]: [`ReductionKernel`] over the whole array or axes;
//! - [`copy`]: copies and fills;
//! - [`gather`]: `take`, `take_along_axis` and `put`: reads or writes at indices from an index
//!   array, one kernel per call, out-of-range indices reported without a device trap;
//! - the Philox generator of [`crate::random`] (its source lives with the routines);
//! - [`raw_kernel`]: [`RawKernel`], user-written whole kernels.
//!
//! A new family is one new file here plus its `mod` line.

pub(crate) mod args;
pub(crate) mod copy;
pub(crate) mod elementwise;
pub(crate) mod gather;
pub(crate) mod inline;
pub(crate) mod launch;
pub(crate) mod params;
pub(crate) mod raw_kernel;
pub(crate) mod reduction;
pub(crate) mod reduction_axis;
pub(crate) mod registry;
pub(crate) mod signature;

pub(crate) use args::ErasedArray;
pub use args::{Arg, ArgType, IndexWidth};
pub use elementwise::ElementwiseKernel;
pub use gather::{IndexElement, IndexMode};
pub use raw_kernel::RawKernel;
pub use reduction::ReductionKernel;
pub use registry::{load_generated_as_ptx, unload_generated_kernels};

/// CUDA source every generated kernel starts with: the crate's f16, bf16 and complex types.
pub(crate) const PRELUDE: &str = concat!(include_str!("prelude.cuh"), include_str!("complex.cuh"));

#[cfg(test)]
mod tests {
    use crate::{Arch, CompileTarget, Program, ProgramOptions};

    #[test]
    fn the_complex_header_compiles_every_operation_for_both_widths() {
        let mut source = super::PRELUDE.to_string();
        for (z, f) in [("cuda_core_c64", "float"), ("cuda_core_c128", "double")] {
            source.push_str(&format!(
                "extern \"C\" __global__ void every_{z}({z} *out, bool *flags, {f} *reals, const {z} *in, cuda_core_f16 h) {{\n\
                 \x20   {z} a = in[0], b = in[1];\n\
                 \x20   {z} r = a + b - a * b / b + (-a) + {z}(2) * a + a * 0.5 + ({z})h + ({z})3u;\n\
                 \x20   r += exp(a) + exp2(a) + expm1(a) + log(a) + log2(a) + log10(a) + log1p(a) + sqrt(a);\n\
                 \x20   r += sin(a) + cos(a) + tan(a) + asin(a) + acos(a) + atan(a);\n\
                 \x20   r += sinh(a) + cosh(a) + tanh(a) + asinh(a) + acosh(a) + atanh(a);\n\
                 \x20   r += rint(a) + _cc_sign(a) + _cc_reciprocal(a) + _cc_pow(a, b) + _cc_conj(a);\n\
                 \x20   r += ({z})(cuda_core_c64)b + ({z})(cuda_core_c128)b;\n\
                 \x20   out[0] = r;\n\
                 \x20   flags[0] = a < b; flags[1] = a <= b; flags[2] = a > b; flags[3] = a >= b;\n\
                 \x20   flags[4] = a == b; flags[5] = a != b; flags[6] = !a; flags[7] = _cc_isinf(a); flags[8] = _cc_isfinite(a);\n\
                 \x20   reals[0] = _cc_abs(a) + _cc_angle(a) + _cc_real(a) + _cc_imag(a) + ({f})a + (float)(cuda_core_f16)(float)a + (double)(long long)a;\n\
                 }}\n"
            ));
        }
        let options = ProgramOptions {
            cache: false,
            ..ProgramOptions::for_arch(Arch::Sm(90))
        };
        if let Err(error) = Program::new(source.clone(), options).compile(CompileTarget::Ptx) {
            panic!("{error}\n{source}");
        }
    }
}
