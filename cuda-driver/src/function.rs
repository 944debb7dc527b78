//! Kernels (`CUfunction`) taken from a module, with their attributes and
//! cached parameter layout.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, OnceLock};

use cuda_sys::driver::{CUfunction, CUresult};

use crate::error::{check, Error, Result};
use crate::{Context, Library, Module};

/// A function attribute (`CUfunction_attribute`), for [`Function::attribute`].
pub use cuda_sys::driver::CUfunction_attribute as FunctionAttribute;

/// Where one kernel parameter lies in the kernel's parameter buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ParamInfo {
    /// Byte offset of the parameter.
    pub offset: usize,
    /// Size of the parameter in bytes.
    pub size: usize,
}

/// A kernel in a loaded [`Module`]. Cheap to clone; keeps its module loaded.
#[derive(Clone)]
pub struct Function {
    pub(crate) inner: Arc<FunctionInner>,
}

pub(crate) struct FunctionInner {
    raw: CUfunction,
    module: Module,
    name: String,
    params: OnceLock<Result<Box<[ParamInfo]>>>,
    max_threads: OnceLock<u32>,
    /// `CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES`, or `UNKNOWN` before first read.
    max_dynamic_shared: AtomicU32,
}

const UNKNOWN: u32 = u32::MAX;

// SAFETY: a CUfunction may be launched and queried from any thread
// (`cuLaunchKernel` is thread-safe); every use makes its context current.
unsafe impl Send for FunctionInner {}
// SAFETY: as above; shared access reads the handle, a OnceLock and an atomic.
unsafe impl Sync for FunctionInner {}

impl Function {
    pub(crate) fn new(raw: CUfunction, module: Module, name: String) -> Function {
        Function {
            inner: Arc::new(FunctionInner {
                raw,
                module,
                name,
                params: OnceLock::new(),
                max_threads: OnceLock::new(),
                max_dynamic_shared: AtomicU32::new(UNKNOWN),
            }),
        }
    }

    /// The kernel's symbol name.
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// The context the kernel was loaded into.
    pub fn context(&self) -> &Context {
        self.inner.module.context()
    }

    /// The module the kernel came from (for a kernel of a [`Library`], the
    /// library's module in this context).
    pub fn module(&self) -> &Module {
        &self.inner.module
    }

    /// The library the kernel came from, if it came from a [`Library`].
    pub fn library(&self) -> Option<&Library> {
        self.inner.module.library()
    }

    /// Offset and size of every parameter (`cuFuncGetParamInfo`), read once
    /// and cached. `Err(Error::NotSupported)` from drivers older than CUDA 12.4.
    pub fn param_info(&self) -> Result<&[ParamInfo]> {
        match self.inner.params.get_or_init(|| self.query_params()) {
            Ok(params) => Ok(params),
            Err(error) => Err(error.clone()),
        }
    }

    fn query_params(&self) -> Result<Box<[ParamInfo]>> {
        // Kernel parameters take at most 32764 bytes, so at most that many exist.
        const MAX_PARAMS: usize = 32764;
        let driver = self.context().bind()?;
        let get = driver.cuFuncGetParamInfo()?;
        let mut params = Vec::new();
        while params.len() <= MAX_PARAMS {
            let (mut offset, mut size) = (0, 0);
            // SAFETY: both out-pointers are valid locals; the function handle is alive.
            let result = unsafe { get(self.inner.raw, params.len(), &mut offset, &mut size) };
            if result == CUresult::CUDA_ERROR_INVALID_VALUE {
                // The index is past the last parameter.
                return Ok(params.into_boxed_slice());
            }
            check(result)?;
            params.push(ParamInfo { offset, size });
        }
        Err(Error::InvalidValue(format!(
            "the driver reports more than {MAX_PARAMS} parameters for `{}`",
            self.inner.name
        )))
    }

    /// The parameter layout if the driver can report it; `None` (skip the
    /// checks) if it cannot. Other failures are errors.
    #[inline]
    pub(crate) fn params_if_known(&self) -> Result<Option<&[ParamInfo]>> {
        match self.param_info() {
            Ok(params) => Ok(Some(params)),
            Err(Error::Symbol(_) | Error::NotSupported { .. }) => Ok(None),
            Err(error) if error.code() == Some(CUresult::CUDA_ERROR_NOT_SUPPORTED) => Ok(None),
            Err(error) => Err(error),
        }
    }

    /// Any function attribute, as the driver reports it.
    pub fn attribute(&self, attribute: FunctionAttribute) -> Result<i32> {
        let driver = self.context().bind()?;
        let mut value = 0;
        // SAFETY: `value` is a valid out-pointer; the function handle is alive.
        check(unsafe { driver.cuFuncGetAttribute()?(&mut value, attribute, self.inner.raw) })?;
        Ok(value)
    }

    /// Sets a settable function attribute (`cuFuncSetAttribute`).
    pub fn set_attribute(&self, attribute: FunctionAttribute, value: i32) -> Result<()> {
        let driver = self.context().bind()?;
        // SAFETY: the function handle is alive; a bad attribute or value is an error code.
        check(unsafe { driver.cuFuncSetAttribute()?(self.inner.raw, attribute, value) })?;
        if attribute == FunctionAttribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES {
            self.inner.max_dynamic_shared.store(UNKNOWN, Ordering::Release);
        }
        Ok(())
    }

    /// Most threads per block this kernel can be launched with (depends on
    /// its register use); cached.
    pub fn max_threads_per_block(&self) -> Result<u32> {
        if let Some(&max) = self.inner.max_threads.get() {
            return Ok(max);
        }
        let max = self.attribute(FunctionAttribute::CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK)? as u32;
        Ok(*self.inner.max_threads.get_or_init(|| max))
    }

    /// Registers each thread uses.
    pub fn num_registers(&self) -> Result<u32> {
        self.attribute(FunctionAttribute::CU_FUNC_ATTRIBUTE_NUM_REGS)
            .map(|v| v as u32)
    }

    /// Statically allocated shared memory per block, in bytes.
    pub fn shared_memory_bytes(&self) -> Result<u32> {
        self.attribute(FunctionAttribute::CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES)
            .map(|v| v as u32)
    }

    /// Local memory per thread, in bytes.
    pub fn local_memory_bytes(&self) -> Result<u32> {
        self.attribute(FunctionAttribute::CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES)
            .map(|v| v as u32)
    }

    /// Most dynamic shared memory a launch may ask for, in bytes.
    pub fn max_dynamic_shared_memory(&self) -> Result<u32> {
        let cached = self.inner.max_dynamic_shared.load(Ordering::Acquire);
        if cached != UNKNOWN {
            return Ok(cached);
        }
        let max = self.attribute(FunctionAttribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES)? as u32;
        self.inner.max_dynamic_shared.store(max, Ordering::Release);
        Ok(max)
    }

    /// Raises (or lowers) the dynamic shared memory a launch may use, up to
    /// the device's opt-in limit
    /// ([`Device::max_shared_memory_per_block_optin`](crate::Device::max_shared_memory_per_block_optin)
    /// minus the static shared memory).
    pub fn set_max_dynamic_shared_memory(&self, bytes: u32) -> Result<()> {
        let value = i32::try_from(bytes).map_err(|_| Error::InvalidValue(format!("{bytes} bytes is too large")))?;
        self.set_attribute(
            FunctionAttribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
            value,
        )
    }

    /// PTX virtual architecture the kernel was compiled for, as `major * 10 + minor`.
    pub fn ptx_version(&self) -> Result<u32> {
        self.attribute(FunctionAttribute::CU_FUNC_ATTRIBUTE_PTX_VERSION)
            .map(|v| v as u32)
    }

    /// Binary architecture of the loaded code, as `major * 10 + minor`.
    pub fn binary_version(&self) -> Result<u32> {
        self.attribute(FunctionAttribute::CU_FUNC_ATTRIBUTE_BINARY_VERSION)
            .map(|v| v as u32)
    }

    /// How many blocks of `block_size` threads, each with `dynamic_shared_bytes`
    /// of dynamic shared memory, fit on one multiprocessor at once.
    pub fn max_active_blocks_per_multiprocessor(&self, block_size: u32, dynamic_shared_bytes: usize) -> Result<u32> {
        let block = i32::try_from(block_size)
            .map_err(|_| Error::InvalidValue(format!("block size {block_size} is too large")))?;
        let driver = self.context().bind()?;
        let mut blocks = 0;
        // SAFETY: valid out-pointer; the function handle is alive.
        check(unsafe {
            driver.cuOccupancyMaxActiveBlocksPerMultiprocessor()?(
                &mut blocks,
                self.inner.raw,
                block,
                dynamic_shared_bytes,
            )
        })?;
        Ok(blocks.max(0) as u32)
    }

    /// `(min_grid_size, block_size)`: the block size that maximises occupancy
    /// with `dynamic_shared_bytes` per block, and the smallest grid that
    /// fills the device with it.
    pub fn max_potential_block_size(&self, dynamic_shared_bytes: usize) -> Result<(u32, u32)> {
        let driver = self.context().bind()?;
        let (mut grid, mut block) = (0, 0);
        // SAFETY: valid out-pointers; no per-block-size callback; 0 means no block size limit.
        check(unsafe {
            driver.cuOccupancyMaxPotentialBlockSize()?(
                &mut grid,
                &mut block,
                self.inner.raw,
                None,
                dynamic_shared_bytes,
                0,
            )
        })?;
        Ok((grid.max(0) as u32, block.max(0) as u32))
    }

    /// The driver's handle.
    ///
    /// # Safety
    /// Valid only while this function (or a clone) is alive.
    pub unsafe fn as_raw(&self) -> CUfunction {
        self.inner.raw
    }

    pub(crate) fn raw(&self) -> CUfunction {
        self.inner.raw
    }
}

impl std::fmt::Debug for Function {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Function").field("name", &self.inner.name).finish()
    }
}
