//! [`Program`]: CUDA C++ source compiled by NVRTC, through the kernel cache.

use std::sync::OnceLock;

use crate::arch::Arch;
use crate::cache::{CacheKey, CacheOutcome, KernelCache};
use crate::code_kind::CodeKind;
use crate::error::{Error, Result};
use crate::nvrtc;
use crate::object_code::ObjectCode;
use crate::options::{CompileTarget, ProgramOptions};
use sha2::{Digest, Sha256};

/// CUDA C++ source and the options to compile it with.
///
/// ```no_run
/// use cuda_core::{Arch, CompileTarget, Program, ProgramOptions};
///
/// # fn main() -> cuda_core::Result<()> {
/// let source = "template <typename T> __global__ void fill(T *out, T value) { out[threadIdx.x] = value; }";
/// let program = Program::new(source, ProgramOptions::for_arch(Arch::Sm(90)))
///     .with_name_expressions(["fill<float>", "fill<double>"]);
/// let cubin = program.compile(CompileTarget::Cubin)?;
/// println!("{}", cubin.lowered_name("fill<float>")?);
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Debug)]
pub struct Program {
    source: String,
    options: ProgramOptions,
    name_expressions: Vec<String>,
    /// The last cache key computed per target, with the architecture it was for, so compiling
    /// the same program again costs no hashing.
    keys: [OnceLock<(Arch, CacheKey)>; 3],
}

impl Program {
    /// A program from source and options. Nothing is compiled yet.
    pub fn new(source: impl Into<String>, options: ProgramOptions) -> Self {
        Self {
            source: source.into(),
            options,
            name_expressions: Vec::new(),
            keys: Default::default(),
        }
    }

    /// Adds name expressions (`"add<float>"`, `"&kernel"`, ...): NVRTC instantiates the templates
    /// they name, and [`ObjectCode::lowered_name`] gives their mangled names after compiling.
    pub fn with_name_expressions<I, S>(mut self, expressions: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.name_expressions.extend(expressions.into_iter().map(Into::into));
        self.keys = Default::default();
        self
    }

    /// The source.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// The options.
    pub fn options(&self) -> &ProgramOptions {
        &self.options
    }

    /// The name expressions.
    pub fn name_expressions(&self) -> &[String] {
        &self.name_expressions
    }

    /// Compiles, through [`KernelCache::global`] unless [`ProgramOptions::cache`] is off.
    pub fn compile(&self, target: CompileTarget) -> Result<ObjectCode> {
        self.compile_with_outcome(target).map(|(code, _)| code)
    }

    /// Like [`compile`](Self::compile), also saying where the code came from.
    pub fn compile_with_outcome(&self, target: CompileTarget) -> Result<(ObjectCode, CacheOutcome)> {
        if self.options.cache {
            self.compile_in(KernelCache::global(), target)
        } else {
            Ok((self.compile_uncached(target)?, CacheOutcome::Bypassed))
        }
    }

    /// Compiles through the given cache (whatever [`ProgramOptions::cache`] says).
    pub fn compile_in(&self, cache: &KernelCache, target: CompileTarget) -> Result<(ObjectCode, CacheOutcome)> {
        let arch = self.resolve_arch(target)?;
        if !cache.is_enabled() {
            return Ok((self.compile_for(arch, target)?, CacheOutcome::Bypassed));
        }
        let key = self.key_for(arch, target)?;
        cache.get_or_insert_with(&key, || self.compile_for(arch, target))
    }

    /// Compiles with NVRTC, neither reading nor filling any cache.
    pub fn compile_uncached(&self, target: CompileTarget) -> Result<ObjectCode> {
        let arch = self.resolve_arch(target)?;
        self.compile_for(arch, target)
    }

    /// The cache key of compiling this program for `target`: a SHA-256 of the source, the
    /// headers, the options (with the architecture), the target, the name expressions, the
    /// NVRTC version and the driver's version ([`cuda_sys::driver_version`], none on a machine
    /// without one), so code cached for a CUDA 13 driver is never handed to a CUDA 12 one.
    pub fn cache_key(&self, target: CompileTarget) -> Result<CacheKey> {
        let arch = self.resolve_arch(target)?;
        self.key_for(arch, target)
    }

    fn key_for(&self, arch: Arch, target: CompileTarget) -> Result<CacheKey> {
        let slot = &self.keys[target as usize];
        if let Some(&(known_arch, key)) = slot.get() {
            if known_arch == arch {
                return Ok(key);
            }
        }
        let key = self.hash_key(arch, target)?;
        // A slot already set (for another arch) keeps its value; this key is still returned.
        let _ = slot.set((arch, key));
        Ok(key)
    }

    fn hash_key(&self, arch: Arch, target: CompileTarget) -> Result<CacheKey> {
        let mut hasher = Sha256::new();
        let mut field = |bytes: &[u8]| {
            hasher.update((bytes.len() as u64).to_le_bytes());
            hasher.update(bytes);
        };
        field(b"cuda-rs kernel cache key v2");
        field(&nvrtc::version()?.to_le_bytes());
        field(&cuda_sys::driver_version().unwrap_or(0).to_le_bytes());
        field(&[code_kind(target).tag()]);
        let options = self.nvrtc_options(arch, target)?;
        field(&(options.len() as u64).to_le_bytes());
        for option in &options {
            field(option.as_bytes());
        }
        field(self.program_name().as_bytes());
        field(&(self.options.headers.len() as u64).to_le_bytes());
        for (name, contents) in &self.options.headers {
            field(name.as_bytes());
            field(contents.as_bytes());
        }
        field(&(self.name_expressions.len() as u64).to_le_bytes());
        for expression in &self.name_expressions {
            field(expression.as_bytes());
        }
        field(self.source.as_bytes());
        Ok(CacheKey(hasher.finalize().into()))
    }

    /// The options' command line, with the CUDA header folder when asked for.
    fn nvrtc_options(&self, arch: Arch, target: CompileTarget) -> Result<Vec<String>> {
        let mut options = self.options.to_nvrtc_options(arch, target);
        if self.options.cuda_headers {
            let dirs = crate::cuda_headers::find_cuda_include_dirs();
            if dirs.is_empty() {
                return Err(Error::InvalidValue(
                    "ProgramOptions::cuda_headers is set but no CUDA headers were found (set CUDA_HOME)".into(),
                ));
            }
            options.extend(dirs.iter().map(|dir| format!("-I{}", dir.display())));
        }
        Ok(options)
    }

    fn program_name(&self) -> &str {
        self.options.name.as_deref().unwrap_or("program.cu")
    }

    fn resolve_arch(&self, target: CompileTarget) -> Result<Arch> {
        let arch = match self.options.arch {
            Some(arch) => arch.validate()?,
            None => crate::device::current_arch().map_err(|reason| {
                Error::InvalidValue(format!(
                    "ProgramOptions::arch is not set and {reason}; give an arch such as Arch::Sm(90)"
                ))
            })?,
        };
        if target == CompileTarget::Cubin && !arch.is_real() {
            return Err(Error::InvalidValue(format!(
                "a CUBIN needs a real architecture (sm_XY), not {arch}"
            )));
        }
        Ok(arch)
    }

    fn compile_for(&self, arch: Arch, target: CompileTarget) -> Result<ObjectCode> {
        let options = self.nvrtc_options(arch, target)?;
        let compiled = nvrtc::compile(&nvrtc::Inputs {
            source: &self.source,
            name: self.program_name(),
            headers: &self.options.headers,
            options: &options,
            name_expressions: &self.name_expressions,
            target,
        })?;
        Ok(ObjectCode::from_parts(
            code_kind(target),
            Some(arch),
            compiled.code,
            compiled.lowered_names,
            compiled.log,
        ))
    }
}

fn code_kind(target: CompileTarget) -> CodeKind {
    match target {
        CompileTarget::Ptx => CodeKind::Ptx,
        CompileTarget::Cubin => CodeKind::Cubin,
        CompileTarget::LtoIr => CodeKind::LtoIr,
    }
}
