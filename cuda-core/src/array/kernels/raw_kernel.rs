//! [`RawKernel`]: CUDA C++ source and a kernel name, compiled and loaded on first use per context.

use std::sync::{Arc, Mutex, PoisonError};

use cuda_driver::{Context, KernelArgs, LaunchConfig, Module, Stream};

use crate::arch::Arch;
use crate::array::kernels::params::is_identifier;
use crate::error::{Error, Result};
use crate::kernel::Kernel;
use crate::launch::launch;
use crate::options::{CompileTarget, ProgramOptions};
use crate::program::Program;

/// A kernel given as source and name, like CuPy's `RawKernel`: compiled (through the
/// [kernel cache](crate::KernelCache)) for each context's device architecture, unless the options
/// fix one, and loaded on first use in that context. The name is an `extern "C"` name, or a name
/// expression such as `"scale<float>"` (anything with `<` or `::`), which is instantiated.
///
/// ```no_run
/// use cuda_core::{Device, DeviceArray, LaunchConfig, ProgramOptions, RawKernel};
///
/// # fn main() -> cuda_core::Result<()> {
/// let iota = RawKernel::new(
///     r#"extern "C" __global__ void iota(int *out, unsigned n) {
///         unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
///         if (i < n) out[i] = i;
///     }"#,
///     "iota",
///     ProgramOptions::default(),
/// )?;
/// let stream = Device::new(0)?.create_stream()?;
/// let mut out = DeviceArray::<i32>::empty(&stream, 100)?;
/// // SAFETY: iota writes `n` ints of `out`, one per thread below `n`.
/// unsafe { iota.launch(&stream, &LaunchConfig::for_num_elems(100), (&mut out, 100u32))? };
/// assert_eq!(out.to_vec()?[99], 99);
/// # Ok(())
/// # }
/// ```
pub struct RawKernel {
    source: String,
    name: String,
    options: ProgramOptions,
    loaded: Mutex<Vec<Arc<Kernel>>>,
}

impl RawKernel {
    /// A kernel of `source` called `name`; nothing is compiled yet. Like
    /// [`ElementwiseKernel::new`](crate::ElementwiseKernel::new), it checks what it can before
    /// compiling and returns [`Error::InvalidValue`] for a name that is not a C identifier or a
    /// name expression (`scale<float>`, `ns::scale<float>`), or a kernel name the source does not
    /// contain (a typo that would otherwise show only at the first launch, as "named symbol not
    /// found"); errors in the code show when it is compiled, with NVRTC's log.
    pub fn new(source: impl Into<String>, name: &str, options: ProgramOptions) -> Result<Self> {
        let source = source.into();
        let function = name.split('<').next().unwrap_or_default().trim();
        let segments: Vec<&str> = function.trim_start_matches("::").split("::").collect();
        if !segments.iter().all(|segment| is_identifier(segment)) || name.trim() != name {
            return Err(Error::InvalidValue(format!(
                "raw kernel name `{name}` is neither a C identifier nor a name expression such as `scale<float>`"
            )));
        }
        let base = segments.last().copied().unwrap_or_default();
        if !source.contains(base) {
            return Err(Error::InvalidValue(format!(
                "raw kernel `{name}`: the source does not contain `{base}`"
            )));
        }
        Ok(RawKernel {
            source,
            name: name.to_string(),
            options,
            loaded: Mutex::new(Vec::new()),
        })
    }

    /// The kernel's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    fn is_name_expression(&self) -> bool {
        self.name.contains('<') || self.name.contains("::")
    }

    /// The program compiled for `arch` (or the options' architecture).
    fn program(&self, arch: Arch) -> Program {
        let options = ProgramOptions {
            arch: self.options.arch.or(Some(arch)),
            ..self.options.clone()
        };
        let program = Program::new(self.source.clone(), options);
        match self.is_name_expression() {
            true => program.with_name_expressions([self.name.clone()]),
            false => program,
        }
    }

    /// The kernel loaded in `context`: compiled and loaded on first use there.
    pub fn kernel_for(&self, context: &Context) -> Result<Arc<Kernel>> {
        let find = |loaded: &Vec<Arc<Kernel>>| loaded.iter().find(|k| k.context() == context).cloned();
        if let Some(kernel) = find(&self.loaded.lock().unwrap_or_else(PoisonError::into_inner)) {
            return Ok(kernel);
        }
        let (major, minor) = context.device().compute_capability()?;
        let code = self
            .program(Arch::from_compute_capability(major, minor))
            .compile(CompileTarget::Cubin)?;
        let module = Module::from_image(context, code.code())?;
        let symbol = match self.is_name_expression() {
            true => code.lowered_name(&self.name)?,
            false => &self.name,
        };
        let kernel = Arc::new(Kernel::new(module.function(symbol)?, &self.name));
        let mut loaded = self.loaded.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(kernel) = find(&loaded) {
            return Ok(kernel);
        }
        loaded.push(kernel.clone());
        Ok(kernel)
    }

    /// Launches the kernel on `stream` (compiling and loading it for the stream's context on
    /// first use), with the checks of [`launch`](crate::launch).
    ///
    /// # Safety
    /// As for [`launch`](crate::launch): the device code must use the arguments as the types they
    /// are and stay inside the memory they give for this grid.
    pub unsafe fn launch<A: KernelArgs>(&self, stream: &Stream, config: &LaunchConfig, args: A) -> Result<()> {
        let kernel = self.kernel_for(stream.context())?;
        // SAFETY: the caller upholds the device code's obligations.
        unsafe { launch(stream, config, &kernel, args) }
    }
}

impl std::fmt::Debug for RawKernel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RawKernel").field("name", &self.name).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn templates_are_name_expressions_and_options_keep_a_fixed_arch() {
        let plain = RawKernel::new("void iota()", "iota", ProgramOptions::default()).unwrap();
        assert!(!plain.is_name_expression());
        assert!(plain.program(Arch::Sm(90)).name_expressions().is_empty());
        assert_eq!(plain.program(Arch::Sm(90)).options().arch, Some(Arch::Sm(90)));
        let template = RawKernel::new("void scale(T)", "scale<float>", ProgramOptions::for_arch(Arch::Sm(80))).unwrap();
        assert!(template.is_name_expression());
        assert_eq!(template.program(Arch::Sm(90)).name_expressions(), ["scale<float>"]);
        assert_eq!(template.program(Arch::Sm(90)).options().arch, Some(Arch::Sm(80)));
    }

    #[test]
    fn bad_names_are_invalid_values_like_elementwise_kernels() {
        let source = "namespace ns { template <typename T> __global__ void scale(T *x) {} }";
        for good in ["scale", "scale<float>", "ns::scale<float>", "::ns::scale<double>"] {
            assert!(
                RawKernel::new(source, good, ProgramOptions::default()).is_ok(),
                "{good}"
            );
        }
        for bad in [
            "", " scale", "sc ale", "1scale", "scale-x", "<float>", "ns::", "scale()",
        ] {
            let error = RawKernel::new(source, bad, ProgramOptions::default()).unwrap_err();
            assert!(matches!(error, Error::InvalidValue(_)), "{bad}: {error}");
        }
        let error = RawKernel::new(source, "sclae", ProgramOptions::default()).unwrap_err();
        assert!(error.to_string().contains("does not contain `sclae`"), "{error}");
    }
}
