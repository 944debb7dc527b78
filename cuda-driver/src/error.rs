//! The crate's error type: driver result codes, loading failures, and bad
//! input caught on the host before the driver is called.

use std::ffi::CStr;
use std::fmt;

use cuda_sys::driver::CUresult;
use cuda_sys::{LoadError, SymbolError};

/// `Result` with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// A failed driver call: the `CUresult` code with its name and description
/// as the driver reports them (`cuGetErrorName`, `cuGetErrorString`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DriverError {
    /// The code the driver returned.
    pub code: CUresult,
    /// The code's name, e.g. `CUDA_ERROR_INVALID_VALUE`.
    pub name: String,
    /// The driver's description, e.g. `invalid argument`.
    pub description: String,
}

impl DriverError {
    /// Describes `code`, asking the driver for its name and description. If
    /// the driver cannot be asked (not loaded, or it does not know the code),
    /// the name is `CUresult(<code>)` and the description says so.
    pub fn new(code: CUresult) -> Self {
        let (name, description) = match cuda_sys::driver() {
            Ok(driver) => (describe(driver, code, true), describe(driver, code, false)),
            Err(_) => (None, None),
        };
        Self {
            code,
            name: name.unwrap_or_else(|| format!("CUresult({})", code.0)),
            description: description.unwrap_or_else(|| "no description available".to_string()),
        }
    }
}

fn describe(driver: &cuda_sys::Driver, code: CUresult, name: bool) -> Option<String> {
    let mut text: *const std::ffi::c_char = std::ptr::null();
    let result = if name {
        // SAFETY: `text` is a valid out-pointer; the driver stores a pointer to a static string.
        unsafe { driver.cuGetErrorName().ok()?(code, &mut text) }
    } else {
        // SAFETY: as above.
        unsafe { driver.cuGetErrorString().ok()?(code, &mut text) }
    };
    if result != CUresult::CUDA_SUCCESS || text.is_null() {
        return None;
    }
    // SAFETY: on success the driver returned a NUL-terminated static string.
    Some(unsafe { CStr::from_ptr(text) }.to_string_lossy().into_owned())
}

impl fmt::Display for DriverError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({}): {}", self.name, self.code.0, self.description)
    }
}

impl std::error::Error for DriverError {}

/// A launch refused on the host, before the driver was asked.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum LaunchError {
    /// The kernel takes a different number of parameters.
    ArgumentCount {
        /// The kernel's name.
        kernel: String,
        /// Parameters the kernel declares.
        expected: usize,
        /// Arguments passed.
        given: usize,
    },
    /// An argument's size differs from the parameter's.
    ArgumentSize {
        /// The kernel's name.
        kernel: String,
        /// Position of the argument, from 0.
        index: usize,
        /// Size of the parameter in the kernel.
        expected: usize,
        /// Size of the argument passed.
        given: usize,
    },
    /// A grid or block dimension is zero.
    ZeroDimension {
        /// The grid asked for.
        grid: (u32, u32, u32),
        /// The block asked for.
        block: (u32, u32, u32),
    },
    /// A block dimension exceeds the device's limit on that axis.
    BlockDimension {
        /// `'x'`, `'y'` or `'z'`.
        axis: char,
        /// The dimension asked for.
        requested: u32,
        /// The device's limit.
        max: u32,
    },
    /// The block has more threads than the kernel can run per block.
    TooManyThreads {
        /// The kernel's name.
        kernel: String,
        /// Threads per block asked for.
        requested: u64,
        /// The kernel's limit (`CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK`).
        max: u32,
    },
    /// A grid dimension exceeds the device's limit on that axis.
    GridDimension {
        /// `'x'`, `'y'` or `'z'`.
        axis: char,
        /// The dimension asked for.
        requested: u32,
        /// The device's limit.
        max: u32,
    },
    /// More dynamic shared memory than the kernel allows.
    SharedMemory {
        /// The kernel's name.
        kernel: String,
        /// Bytes asked for.
        requested: u32,
        /// The kernel's limit (`CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES`).
        max: u32,
    },
}

impl fmt::Display for LaunchError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LaunchError::ArgumentCount {
                kernel,
                expected,
                given,
            } => write!(f, "kernel `{kernel}` takes {expected} parameters, {given} were given"),
            LaunchError::ArgumentSize {
                kernel,
                index,
                expected,
                given,
            } => write!(
                f,
                "argument {index} of kernel `{kernel}` is {given} bytes, the parameter is {expected} bytes"
            ),
            LaunchError::ZeroDimension { grid, block } => {
                write!(f, "grid {grid:?} and block {block:?} must have no zero dimension")
            }
            LaunchError::BlockDimension { axis, requested, max } => write!(
                f,
                "block dimension {axis} is {requested}, the device allows at most {max}"
            ),
            LaunchError::TooManyThreads { kernel, requested, max } => write!(
                f,
                "block of {requested} threads exceeds the {max} threads per block kernel `{kernel}` allows"
            ),
            LaunchError::GridDimension { axis, requested, max } => write!(
                f,
                "grid dimension {axis} is {requested}, the device allows at most {max}"
            ),
            LaunchError::SharedMemory { kernel, requested, max } => write!(
                f,
                "{requested} bytes of dynamic shared memory exceed the {max} bytes kernel `{kernel}` allows \
                 (raise it with Function::set_max_dynamic_shared_memory)"
            ),
        }
    }
}

impl std::error::Error for LaunchError {}

/// A failed call of the driver's JIT linker, with the linker's logs ([`Error::JitLink`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JitLinkError {
    /// The driver function that failed (`"cuLinkAddData"`, ...).
    pub call: &'static str,
    /// The driver's error.
    pub error: DriverError,
    /// The linker's error log.
    pub error_log: String,
    /// The linker's info log.
    pub info_log: String,
}

impl fmt::Display for JitLinkError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} failed with {}\n{}", self.call, self.error, self.error_log)
    }
}

impl std::error::Error for JitLinkError {}

/// Why `cuGraphExecUpdate` refused to update an executable graph (`CUgraphExecUpdateResult`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum GraphUpdateReason {
    /// Nodes or edges were added or removed: the graphs differ in shape.
    TopologyChanged,
    /// A node is of another type than its counterpart.
    NodeTypeChanged,
    /// A kernel node's function changed in a way the update cannot follow (another context).
    FunctionChanged,
    /// A node's parameters changed in a way the update cannot apply (a memcpy's or memset's
    /// memory of another allocation or context, a child graph's or host node's shape).
    ParametersChanged,
    /// Something other than parameters changed in a way the driver does not update
    /// (an event, a conditional node's handle, memory nodes).
    NotSupported,
    /// A kernel node's function changed to one the driver cannot swap in (a cooperative or
    /// cluster launch, a device-side launch).
    UnsupportedFunctionChange,
    /// A kernel node's attributes changed in a way the update cannot apply.
    AttributesChanged,
    /// The driver reported another reason (`CUgraphExecUpdateResult` value).
    Other(u32),
}

impl fmt::Display for GraphUpdateReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GraphUpdateReason::TopologyChanged => f.write_str("the topology changed (nodes or edges added or removed)"),
            GraphUpdateReason::NodeTypeChanged => f.write_str("a node's type changed"),
            GraphUpdateReason::FunctionChanged => f.write_str("a kernel node's function changed context"),
            GraphUpdateReason::ParametersChanged => {
                f.write_str("a node's parameters changed in a way that cannot be updated")
            }
            GraphUpdateReason::NotSupported => f.write_str("a change the driver cannot update in place"),
            GraphUpdateReason::UnsupportedFunctionChange => {
                f.write_str("a kernel node's function changed to one that cannot be swapped in")
            }
            GraphUpdateReason::AttributesChanged => f.write_str("a kernel node's attributes changed"),
            GraphUpdateReason::Other(value) => write!(f, "update result {value}"),
        }
    }
}

/// An executable graph that could not be updated from a graph ([`Error::GraphUpdate`]): what
/// changed, and where.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GraphUpdateError {
    /// What changed.
    pub reason: GraphUpdateReason,
    /// The node of the new graph where the driver found the change, described (its position
    /// in creation order and its kind), when it named one this crate created.
    pub node: Option<String>,
    /// The driver's error code for the failed update.
    pub error: DriverError,
}

impl fmt::Display for GraphUpdateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "the executable graph cannot be updated: {}", self.reason)?;
        if let Some(node) = &self.node {
            write!(f, " at {node}")?;
        }
        write!(f, " ({})", self.error)
    }
}

impl std::error::Error for GraphUpdateError {}

/// Everything that can go wrong in this crate.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub enum Error {
    /// The driver returned an error code.
    Driver(DriverError),
    /// The driver library could not be loaded.
    Load(LoadError),
    /// The loaded driver lacks a function.
    Symbol(SymbolError),
    /// The loaded driver is older than the function needs (a CUDA 12.2 driver asked for
    /// `cuCtxCreate_v4`, which came with 12.5). The table in `docs/DRIVER_VERSIONS.md` lists
    /// which operations need which driver.
    NotSupported {
        /// The function (its exported name).
        function: &'static str,
        /// The driver version it needs (`major * 1000 + minor * 10`).
        needs: i32,
        /// The loaded driver's version.
        driver: i32,
    },
    /// An object of one context was used with an object of another.
    WrongContext {
        /// What belonged to the other context (`"buffer"`, `"stream"`, ...).
        object: &'static str,
        /// What it was used with (`"function"`, `"stream"`, ...).
        used_with: &'static str,
    },
    /// Bad input caught on the host: zero, huge or overflowing lengths,
    /// mismatched lengths, interior NUL bytes, out-of-range slices.
    InvalidValue(String),
    /// A launch refused on the host.
    Launch(LaunchError),
    /// Loading a module failed; `log` is the JIT compiler's error log.
    ModuleLoad {
        /// The driver's error.
        error: DriverError,
        /// The JIT error log (may be empty).
        log: String,
    },
    /// A call of the driver's JIT linker ([`JitLinker`](crate::JitLinker)) failed (boxed: the
    /// logs would make every `Result` of this crate larger).
    JitLink(Box<JitLinkError>),
    /// Destructors (`Drop`) of objects of this context failed earlier; they
    /// could not return their errors, so the next checked call does.
    Deferred(Vec<DriverError>),
    /// A view whose elements are not one dense run in logical order (strided, transposed,
    /// reversed or broadcast) was given where the [device-memory contract](crate::DeviceMemory)
    /// needs a dense range: copy it to a compact array first, or pass its layout to a routine
    /// that takes one.
    NotDense {
        /// The view's extents, outermost first.
        shape: Vec<usize>,
        /// The view's strides, in elements.
        strides: Vec<isize>,
    },
    /// An executable graph could not be updated in place (boxed: it carries a description).
    GraphUpdate(Box<GraphUpdateError>),
    /// A node, condition handle or graph allocation of one graph (or conditional body) was
    /// given to another.
    WrongGraph {
        /// What belonged to the other graph (`"dependency"`, `"condition handle"`, ...).
        object: &'static str,
    },
    /// A node the driver refuses inside a conditional node's body (host functions, events,
    /// memory allocation and free nodes, or a child graph holding one).
    NotInConditionalBody {
        /// The kind of node (`"host function"`, ...).
        node: &'static str,
    },
    /// The device lacks a feature the call needs, as its attribute reports.
    DeviceUnsupported {
        /// The device's ordinal.
        device: u32,
        /// The feature and the attribute that was asked.
        feature: &'static str,
    },
    /// An inter-process operation on a memory pool, or on memory of one, that was not made for
    /// it (a pool created without `ipc_enabled`, a pointer import into a pool of this process).
    NotShareable {
        /// Why, in a sentence.
        reason: &'static str,
    },
    /// An SM split asks for more streaming multiprocessors than the resource has, or the driver
    /// made fewer groups than asked for (each group is rounded up to the partition alignment).
    SmSplit {
        /// Groups asked for.
        groups: u32,
        /// SMs asked for in each group.
        sms_per_group: u32,
        /// SMs the split resource (the device, or a group of it) has.
        available: u32,
        /// Groups the driver made, when it made fewer than asked for.
        made: Option<u32>,
    },
    /// A tensor map description breaks a rule of `cuTensorMapEncodeTiled` / `Im2col`, caught
    /// before the driver is asked.
    TensorMap(crate::TensorMapError),
}

impl Error {
    /// The driver's code, for errors that carry one.
    pub fn code(&self) -> Option<CUresult> {
        match self {
            Error::Driver(e) | Error::ModuleLoad { error: e, .. } => Some(e.code),
            Error::JitLink(failure) => Some(failure.error.code),
            Error::GraphUpdate(failure) => Some(failure.error.code),
            Error::Deferred(errors) => errors.first().map(|e| e.code),
            _ => None,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Driver(e) => e.fmt(f),
            Error::Load(e) => e.fmt(f),
            Error::Symbol(e) => e.fmt(f),
            Error::NotSupported {
                function,
                needs,
                driver,
            } => write!(
                f,
                "`{function}` is not supported by this driver: it needs a driver for CUDA {}.{} or newer, \
                 and the loaded one supports CUDA {}.{}",
                needs / 1000,
                needs % 1000 / 10,
                driver / 1000,
                driver % 1000 / 10
            ),
            Error::WrongContext { object, used_with } => write!(
                f,
                "{object} belongs to a different context than the {used_with} it was used with"
            ),
            Error::InvalidValue(message) => write!(f, "invalid value: {message}"),
            Error::Launch(e) => e.fmt(f),
            Error::ModuleLoad { error, log } => write!(f, "{error}\n{log}"),
            Error::JitLink(e) => e.fmt(f),
            Error::Deferred(errors) => match errors.as_slice() {
                [] => f.write_str("an earlier destructor call failed"),
                [only] => write!(f, "an earlier destructor call failed: {only}"),
                [first, ..] => write!(f, "{} earlier destructor calls failed; first: {first}", errors.len()),
            },
            Error::NotDense { shape, strides } => write!(
                f,
                "a view of shape {shape:?} and strides {strides:?} (in elements) is not dense memory \
                 (it is strided, transposed, reversed or broadcast): make a compact copy, or pass its \
                 layout to a routine that takes one"
            ),
            Error::GraphUpdate(e) => e.fmt(f),
            Error::WrongGraph { object } => write!(f, "the {object} belongs to another graph or conditional body"),
            Error::NotInConditionalBody { node } => {
                write!(f, "a {node} node cannot be part of a conditional node's body")
            }
            Error::DeviceUnsupported { device, feature } => write!(f, "device {device} does not support {feature}"),
            Error::NotShareable { reason } => write!(f, "not shareable between processes: {reason}"),
            Error::SmSplit {
                groups,
                sms_per_group,
                available,
                made: None,
            } => write!(
                f,
                "cannot split {groups} group(s) of {sms_per_group} SMs from a resource of {available} SMs"
            ),
            Error::SmSplit {
                groups,
                sms_per_group,
                available,
                made: Some(made),
            } => write!(
                f,
                "the driver split only {made} of {groups} group(s) of at least {sms_per_group} SMs from {available} SMs \
                 (groups are rounded up to the partition alignment)"
            ),
            Error::TensorMap(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Driver(e) => e.source(),
            Error::Load(e) => e.source(),
            Error::Symbol(e) => e.source(),
            Error::Launch(e) => e.source(),
            Error::JitLink(e) => e.source(),
            Error::GraphUpdate(e) => e.source(),
            Error::TensorMap(e) => e.source(),
            _ => None,
        }
    }
}

impl From<DriverError> for Error {
    fn from(error: DriverError) -> Self {
        Error::Driver(error)
    }
}

impl From<LoadError> for Error {
    fn from(error: LoadError) -> Self {
        Error::Load(error)
    }
}

/// A function the driver is too old for is [`Error::NotSupported`]; one it lacks otherwise
/// (absent from every driver, or from this platform) stays [`Error::Symbol`].
impl From<SymbolError> for Error {
    fn from(error: SymbolError) -> Self {
        match (error.needs_version, error.library_version) {
            (Some(needs), Some(driver)) => Error::NotSupported {
                function: error.symbol,
                needs,
                driver,
            },
            _ => Error::Symbol(error),
        }
    }
}

impl From<LaunchError> for Error {
    fn from(error: LaunchError) -> Self {
        Error::Launch(error)
    }
}

/// Turns a driver result into a `Result`.
#[inline]
pub(crate) fn check(result: CUresult) -> Result<()> {
    if result == CUresult::CUDA_SUCCESS {
        Ok(())
    } else {
        Err(Error::Driver(DriverError::new(result)))
    }
}

/// Like [`check`], but for destructors: the error is returned as a plain
/// `DriverError` for recording.
#[inline]
pub(crate) fn check_drop(result: CUresult) -> std::result::Result<(), DriverError> {
    if result == CUresult::CUDA_SUCCESS {
        Ok(())
    } else {
        Err(DriverError::new(result))
    }
}

/// Like [`check`], for a call made only if its symbol resolved.
#[inline]
pub(crate) fn check_resolved(result: std::result::Result<CUresult, SymbolError>) -> Result<()> {
    check(result?)
}
