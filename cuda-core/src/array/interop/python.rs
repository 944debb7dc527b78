//! Python interop (cargo feature `python`, pyo3 on the stable ABI): a [`DeviceArray`] as a
//! Python object ([`PyDeviceArray`], named `DeviceArray` in Python) with `__dlpack__`,
//! `__dlpack_device__` and `__cuda_array_interface__`, and [`DeviceArray::from_python`], which
//! takes anything with `__dlpack__` (a torch tensor, a CuPy array) or a DLPack capsule, zero-copy.
//!
//! Streams follow the Python array API. [`DeviceArray::from_python`] orders the imported array
//! on the device's legacy default stream (the one PyTorch and CuPy use unless told otherwise)
//! and passes it to the producer's `__dlpack__(stream=...)`, which makes it wait for the
//! producer's work; `__dlpack__(stream=s)` on a Rust array makes the consumer's stream `s` wait
//! for the array's stream with an event (`None`: the legacy default stream; `-1`: no ordering;
//! `0` is refused, as the protocol says). The consumer's stream must outlive the exported tensor.
//!
//! An extension module registers the class and the helper functions with [`register`] and
//! adds its own kernels:
//!
//! ```no_run
//! use cuda_core::python::register;
//! use cuda_core::{Arg, DeviceArray, ElementwiseKernel};
//! use pyo3::prelude::*;
//!
//! /// `2 * x` for a torch tensor (or CuPy array) `x`, returned as one of the same library.
//! #[pyfunction]
//! fn double<'py>(x: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
//!     let input = DeviceArray::<f32>::from_python(x)?;
//!     let mut out = DeviceArray::<f32>::empty_like(&input)?;
//!     let kernel = ElementwiseKernel::new("T x", "T y", "y = 2 * x", "double")?;
//!     // SAFETY: the operation reads its input element and assigns its output element only.
//!     unsafe { kernel.launch(input.stream(), &[Arg::from(&input), Arg::from(&mut out)])? };
//!     out.into_python_like(x)
//! }
//!
//! #[pymodule]
//! fn my_ext(module: &Bound<'_, PyModule>) -> PyResult<()> {
//!     register(module)?;
//!     module.add_function(wrap_pyfunction!(double, module)?)
//! }
//! ```

use std::ffi::{c_void, CStr};
use std::mem::ManuallyDrop;

use cuda_driver::{Context, Stream};
use cuda_sys::driver::CUstream;
use pyo3::exceptions::{PyAttributeError, PyBufferError, PyIndexError, PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyCapsule, PyDict, PyTuple};
use pyo3::{ffi, IntoPyObjectExt};

use crate::array::{
    Bool, DLDeviceType, DLManagedTensor, DLManagedTensorVersioned, DLPackError, DLPackFlags, DLPackTensor, DType,
    DeviceArray, Element, MemoryPool,
};
use crate::device::Device;
use crate::error::Error;

/// Capsule names of the protocol: a tensor on offer, and one a consumer took.
const LEGACY: &CStr = c"dltensor";
const USED_LEGACY: &CStr = c"used_dltensor";
const VERSIONED: &CStr = c"dltensor_versioned";
const USED_VERSIONED: &CStr = c"used_dltensor_versioned";

/// The driver's legacy default stream handle (`CU_STREAM_LEGACY`), also the protocol's stream
/// number 1.
const STREAM_LEGACY: usize = 1;

impl From<DLPackError> for PyErr {
    /// The exception the Python array API names for each case: `TypeError` for memory or data
    /// of the wrong kind, `BufferError` for what DLPack cannot carry here, `ValueError` for a
    /// bad argument (another device, a consumed capsule).
    fn from(error: DLPackError) -> PyErr {
        let message = error.to_string();
        match error {
            DLPackError::NotCuda(_)
            | DLPackError::NotDeviceMemory { .. }
            | DLPackError::WrongDType { .. }
            | DLPackError::Protocol(_) => PyTypeError::new_err(message),
            DLPackError::UnsupportedDType(_)
            | DLPackError::UnsupportedVersion(_)
            | DLPackError::ReadOnly
            | DLPackError::Layout(_)
            | DLPackError::OutOfAllocation { .. } => PyBufferError::new_err(message),
            _ => PyValueError::new_err(message),
        }
    }
}

impl From<Error> for PyErr {
    /// DLPack errors as above; bad values and axes out of range are `ValueError` (NumPy's
    /// `AxisError` is one); indices out of range `IndexError`;
    /// driver, compiler and other failures `RuntimeError`.
    fn from(error: Error) -> PyErr {
        match error {
            Error::DLPack(error) => error.into(),
            Error::InvalidValue(_) | Error::Axis { .. } => PyValueError::new_err(error.to_string()),
            Error::IndexOutOfBounds { .. } => PyIndexError::new_err(error.to_string()),
            other => PyRuntimeError::new_err(other.to_string()),
        }
    }
}

mod erased {
    use crate::array::{Bool, DeviceArray};

    /// A [`DeviceArray`] of any element type.
    pub enum AnyArray {
        Bool(DeviceArray<Bool>),
        I8(DeviceArray<i8>),
        I16(DeviceArray<i16>),
        I32(DeviceArray<i32>),
        I64(DeviceArray<i64>),
        U8(DeviceArray<u8>),
        U16(DeviceArray<u16>),
        U32(DeviceArray<u32>),
        U64(DeviceArray<u64>),
        F16(DeviceArray<half::f16>),
        BF16(DeviceArray<half::bf16>),
        F32(DeviceArray<f32>),
        F64(DeviceArray<f64>),
        C64(DeviceArray<num_complex::Complex<f32>>),
        C128(DeviceArray<num_complex::Complex<f64>>),
    }

    /// Implemented by every element type.
    pub trait Sealed: crate::array::Element + Sized {
        fn wrap(array: DeviceArray<Self>) -> AnyArray;
        fn peek(array: &AnyArray) -> Option<&DeviceArray<Self>>;
    }
}

use erased::AnyArray;

/// Runs `$body` with `$a` bound to the typed array inside an [`AnyArray`].
macro_rules! with_array {
    ($any:expr, $a:ident => $body:expr) => {
        match $any {
            AnyArray::Bool($a) => $body,
            AnyArray::I8($a) => $body,
            AnyArray::I16($a) => $body,
            AnyArray::I32($a) => $body,
            AnyArray::I64($a) => $body,
            AnyArray::U8($a) => $body,
            AnyArray::U16($a) => $body,
            AnyArray::U32($a) => $body,
            AnyArray::U64($a) => $body,
            AnyArray::F16($a) => $body,
            AnyArray::BF16($a) => $body,
            AnyArray::F32($a) => $body,
            AnyArray::F64($a) => $body,
            AnyArray::C64($a) => $body,
            AnyArray::C128($a) => $body,
        }
    };
}

/// An element type a [`PyDeviceArray`] can hold: every [`Element`].
pub trait PyElement: erased::Sealed {}

macro_rules! py_elements {
    ($($variant:ident => $ty:ty),*) => {
        $(
            impl erased::Sealed for $ty {
                fn wrap(array: DeviceArray<Self>) -> AnyArray {
                    AnyArray::$variant(array)
                }
                fn peek(array: &AnyArray) -> Option<&DeviceArray<Self>> {
                    match array {
                        AnyArray::$variant(array) => Some(array),
                        _ => None,
                    }
                }
            }
            impl PyElement for $ty {}
        )*
    };
}

py_elements!(Bool => Bool, I8 => i8, I16 => i16, I32 => i32, I64 => i64, U8 => u8, U16 => u16, U32 => u32,
    U64 => u64, F16 => half::f16, BF16 => half::bf16, F32 => f32, F64 => f64,
    C64 => num_complex::Complex<f32>, C128 => num_complex::Complex<f64>);

/// Another view of all of `array` (same storage, no copy).
fn share<T: Element>(array: &DeviceArray<T>) -> DeviceArray<T> {
    array.view(*array.ptr_ref(), array.shape().to_vec(), array.strides().to_vec())
}

/// The protocol's number for `stream`: its handle, with the legacy default stream (null or
/// `CU_STREAM_LEGACY`) as 1.
fn stream_number(stream: &Stream) -> usize {
    // SAFETY: the handle is only passed on as a number.
    match unsafe { stream.as_raw() } as usize {
        0 => STREAM_LEGACY,
        raw => raw,
    }
}

/// The legacy default stream of `context`.
fn legacy_stream(context: &Context) -> Stream {
    // SAFETY: `CU_STREAM_LEGACY` is a valid stream handle of every context, never destroyed.
    unsafe { Stream::from_raw(context, STREAM_LEGACY as CUstream) }
}

/// The consumer's stream of `__dlpack__(stream=...)`: `None` for no ordering (-1).
fn consumer_stream(context: &Context, stream: Option<i64>) -> PyResult<Option<Stream>> {
    let raw = match stream {
        None | Some(1) => STREAM_LEGACY,
        Some(-1) => return Ok(None),
        Some(2) => {
            return Err(PyValueError::new_err(
                "stream 2 (the per-thread default stream) is another stream on each thread, so the memory's release cannot be ordered after it; pass the handle of a stream object",
            ))
        }
        Some(0) => {
            return Err(PyValueError::new_err(
                "stream 0 is ambiguous for CUDA and refused by the array API (1 is the legacy default stream)",
            ))
        }
        Some(n) => usize::try_from(n).map_err(|_| PyValueError::new_err(format!("stream {n} is not a CUDA stream")))?,
    };
    // SAFETY: the protocol makes the consumer promise a stream of this array's device (a
    // number from its own stream object) that stays valid until it releases the tensor; 1 is
    // the driver's legacy default stream.
    Ok(Some(unsafe { Stream::from_raw(context, raw as CUstream) }))
}

/// The typestr of `__cuda_array_interface__` (none for bfloat16, which NumPy lacks).
fn typestr(dtype: DType) -> Option<&'static str> {
    Some(match dtype {
        DType::Bool => "|b1",
        DType::I8 => "|i1",
        DType::I16 => "<i2",
        DType::I32 => "<i4",
        DType::I64 => "<i8",
        DType::U8 => "|u1",
        DType::U16 => "<u2",
        DType::U32 => "<u4",
        DType::U64 => "<u8",
        DType::F16 => "<f2",
        DType::F32 => "<f4",
        DType::F64 => "<f8",
        DType::C64 => "<c8",
        DType::C128 => "<c16",
        _ => return None,
    })
}

/// A capsule named `name` holding `tensor`, whose destructor calls the tensor's deleter unless a
/// consumer renamed (took) it. On failure the tensor is released here.
fn capsule<'py>(py: Python<'py>, tensor: *mut c_void, name: &'static CStr) -> PyResult<Bound<'py, PyAny>> {
    // SAFETY: `tensor` is a live exported tensor of the kind `name` says; the name is static.
    let raw = unsafe { ffi::PyCapsule_New(tensor, name.as_ptr(), Some(capsule_destructor)) };
    if raw.is_null() {
        // SAFETY: no capsule owns the tensor, so it is released here, once.
        unsafe { release(tensor, name) };
        return Err(PyErr::fetch(py));
    }
    // SAFETY: `raw` is a new, owned reference.
    Ok(unsafe { Bound::from_owned_ptr(py, raw) })
}

/// Calls the deleter of `tensor`, a managed tensor of the kind capsule name `name` says.
///
/// # Safety
/// `tensor` must be a live tensor of that kind that nobody else releases.
unsafe fn release(tensor: *mut c_void, name: &CStr) {
    // SAFETY: the caller's promise.
    unsafe {
        if name == VERSIONED {
            let tensor = tensor.cast::<DLManagedTensorVersioned>();
            if let Some(deleter) = (*tensor).deleter {
                deleter(tensor);
            }
        } else {
            let tensor = tensor.cast::<DLManagedTensor>();
            if let Some(deleter) = (*tensor).deleter {
                deleter(tensor);
            }
        }
    }
}

/// Destroys a capsule made by [`capsule`]: an unconsumed tensor is released.
unsafe extern "C" fn capsule_destructor(capsule: *mut ffi::PyObject) {
    for name in [VERSIONED, LEGACY] {
        // SAFETY: Python calls this with the GIL held for a capsule; `PyCapsule_IsValid` sets
        // no exception, and a valid capsule of this name holds an unconsumed tensor of ours.
        unsafe {
            if ffi::PyCapsule_IsValid(capsule, name.as_ptr()) == 1 {
                release(ffi::PyCapsule_GetPointer(capsule, name.as_ptr()), name);
                return;
            }
        }
    }
}

/// The tensor of an unconsumed capsule, still owned by the capsule until [`claim`](Self::claim).
struct Offered<'a, 'py> {
    capsule: &'a Bound<'py, PyAny>,
    tensor: ManuallyDrop<DLPackTensor>,
    used: &'static CStr,
}

impl<'a, 'py> Offered<'a, 'py> {
    /// Reads a DLPack capsule; a consumed one is [`DLPackError::Consumed`], anything else
    /// [`DLPackError::Protocol`].
    fn open(capsule: &'a Bound<'py, PyAny>) -> PyResult<Self> {
        let raw = capsule.as_ptr();
        // SAFETY: `PyCapsule_IsValid` accepts any object and sets no exception; a valid capsule
        // of a DLPack name holds a live tensor of that kind, owned by the capsule (the producer's
        // side of the protocol), which stays alive as long as the capsule, borrowed for 'a. The
        // rest of `from_raw`'s contract is the producer's side of the protocol too: `data +
        // byte_offset` with the shape and strides describes memory the producer lends (checked
        // with the driver before it is imported), alive until the deleter runs; its work on it
        // is ordered before the stream that `exchange` passed to `__dlpack__`; it is not written
        // by others until the deleter runs (the Python array API's consumer contract).
        unsafe {
            if ffi::PyCapsule_IsValid(raw, VERSIONED.as_ptr()) == 1 {
                let tensor = ffi::PyCapsule_GetPointer(raw, VERSIONED.as_ptr()).cast::<DLManagedTensorVersioned>();
                return Ok(Offered {
                    capsule,
                    tensor: ManuallyDrop::new(DLPackTensor::from_raw_versioned(tensor)?),
                    used: USED_VERSIONED,
                });
            }
            if ffi::PyCapsule_IsValid(raw, LEGACY.as_ptr()) == 1 {
                let tensor = ffi::PyCapsule_GetPointer(raw, LEGACY.as_ptr()).cast::<DLManagedTensor>();
                return Ok(Offered {
                    capsule,
                    tensor: ManuallyDrop::new(DLPackTensor::from_raw(tensor)?),
                    used: USED_LEGACY,
                });
            }
            if ffi::PyCapsule_IsValid(raw, USED_VERSIONED.as_ptr()) == 1
                || ffi::PyCapsule_IsValid(raw, USED_LEGACY.as_ptr()) == 1
            {
                return Err(DLPackError::Consumed.into());
            }
        }
        let what = match capsule.is_instance_of::<PyCapsule>() {
            true => "a capsule of another name".to_string(),
            false => format!("a '{}' object", capsule.get_type().name()?),
        };
        Err(DLPackError::Protocol(format!("{what}, not a DLPack capsule")).into())
    }

    /// Takes the tensor from the capsule (renames it, so its destructor leaves it alone).
    fn claim(mut self) -> PyResult<DLPackTensor> {
        // SAFETY: a live capsule; the name is static.
        if unsafe { ffi::PyCapsule_SetName(self.capsule.as_ptr(), self.used.as_ptr()) } != 0 {
            return Err(PyErr::fetch(self.capsule.py()));
        }
        // SAFETY: the capsule gave the tensor up just now; it is taken once.
        Ok(unsafe { ManuallyDrop::take(&mut self.tensor) })
    }
}

/// A capsule from `obj` (a capsule, or anything with `__dlpack__`, asked for one for `stream`,
/// else for the legacy default stream of its device) and the stream to import on.
fn exchange<'py>(obj: &Bound<'py, PyAny>, stream: Option<&Stream>) -> PyResult<(Bound<'py, PyAny>, Stream)> {
    let (device_type, device_id) = if obj.is_instance_of::<PyCapsule>() {
        // Everything the capsule says is checked before the driver is touched.
        let offered = Offered::open(obj)?;
        offered.tensor.dtype()?;
        let device = offered.tensor.device();
        (device.device_type, device.device_id)
    } else {
        if !obj.hasattr("__dlpack__")? {
            return Err(PyTypeError::new_err(format!(
                "'{}' object has no __dlpack__: expected a CUDA tensor or array (torch, CuPy, ...) or a DLPack capsule",
                obj.get_type().name()?
            )));
        }
        let (device_type, device_id): (i32, i32) = obj.call_method0("__dlpack_device__")?.extract()?;
        (DLDeviceType(device_type), device_id)
    };
    if device_type != DLDeviceType::CUDA {
        return Err(DLPackError::NotCuda(crate::array::DLDevice { device_type, device_id }).into());
    }
    let stream = match stream {
        Some(stream) => {
            let expected = stream.context().device().ordinal() as i32;
            if expected != device_id {
                return Err(DLPackError::WrongDevice {
                    found: device_id,
                    expected,
                }
                .into());
            }
            stream.clone()
        }
        None => {
            let ordinal =
                u32::try_from(device_id).map_err(|_| PyValueError::new_err(format!("CUDA device {device_id}")))?;
            legacy_stream(Device::new(ordinal)?.context())
        }
    };
    if obj.is_instance_of::<PyCapsule>() {
        return Ok((obj.clone(), stream));
    }
    let py = obj.py();
    let kwargs = PyDict::new(py);
    kwargs.set_item("stream", stream_number(&stream))?;
    kwargs.set_item("max_version", (1, 0))?;
    let capsule = match obj.call_method("__dlpack__", (), Some(&kwargs)) {
        // A producer older than DLPack 1.0 takes no max_version.
        Err(error) if error.is_instance_of::<PyTypeError>(py) => {
            kwargs.del_item("max_version")?;
            obj.call_method("__dlpack__", (), Some(&kwargs))?
        }
        other => other?,
    };
    Ok((capsule, stream))
}

/// Imports the capsule's tensor as a `DeviceArray<T>` on `stream`; on any error the capsule is
/// left as it was (its producer still releases the tensor).
fn import<T: Element>(capsule: &Bound<'_, PyAny>, stream: &Stream) -> PyResult<DeviceArray<T>> {
    let offered = Offered::open(capsule)?;
    let found = offered.tensor.dtype()?;
    if found != T::DTYPE {
        return Err(DLPackError::WrongDType {
            found,
            expected: T::DTYPE,
        }
        .into());
    }
    offered.tensor.checked_layout::<T>(stream)?;
    hand_back_before_python_exits(capsule.py())?;
    let tensor = offered.claim()?;
    Ok(DeviceArray::from_dlpack_tensor(tensor, stream, None)?)
}

/// Registers with Python's `atexit`, once, a function that hands back the imported tensors
/// still waiting for their last use while the interpreter (which their deleters may need) is
/// alive, and then keeps the process exit hook, which runs after the interpreter is gone,
/// from running deleters.
fn hand_back_before_python_exits(py: Python<'_>) -> PyResult<()> {
    static REGISTERED: std::sync::OnceLock<()> = std::sync::OnceLock::new();
    if REGISTERED.get().is_some() {
        return Ok(());
    }
    let release = pyo3::types::PyCFunction::new_closure(py, None, None, |_, _| {
        crate::array::release_all_imports();
        crate::array::disable_exit_release();
    })?;
    py.import("atexit")?.call_method1("register", (release,))?;
    let _ = REGISTERED.set(());
    Ok(())
}

/// Imports the capsule's tensor with whatever element type it has.
fn import_any(capsule: &Bound<'_, PyAny>, stream: &Stream) -> PyResult<AnyArray> {
    let dtype = Offered::open(capsule)?.tensor.dtype()?;
    Ok(match dtype {
        DType::Bool => AnyArray::Bool(import(capsule, stream)?),
        DType::I8 => AnyArray::I8(import(capsule, stream)?),
        DType::I16 => AnyArray::I16(import(capsule, stream)?),
        DType::I32 => AnyArray::I32(import(capsule, stream)?),
        DType::I64 => AnyArray::I64(import(capsule, stream)?),
        DType::U8 => AnyArray::U8(import(capsule, stream)?),
        DType::U16 => AnyArray::U16(import(capsule, stream)?),
        DType::U32 => AnyArray::U32(import(capsule, stream)?),
        DType::U64 => AnyArray::U64(import(capsule, stream)?),
        DType::F16 => AnyArray::F16(import(capsule, stream)?),
        DType::BF16 => AnyArray::BF16(import(capsule, stream)?),
        DType::F32 => AnyArray::F32(import(capsule, stream)?),
        DType::F64 => AnyArray::F64(import(capsule, stream)?),
        DType::C64 => AnyArray::C64(import(capsule, stream)?),
        DType::C128 => AnyArray::C128(import(capsule, stream)?),
    })
}

impl<T: Element> DeviceArray<T> {
    /// The memory of `obj` as an array, zero-copy: `obj` is anything with `__dlpack__` (a torch
    /// tensor, a CuPy array, ...; asked for a DLPack 1.0 capsule, else a legacy one) or a DLPack
    /// capsule (used as it is, with no stream handshake). The array is ordered on the legacy
    /// default stream of the tensor's device, which the producer makes wait for its own work.
    /// Errors are Python exceptions: `TypeError` for objects without `__dlpack__`, CPU memory or
    /// another element type, `BufferError` for layouts or types an array cannot take,
    /// `ValueError` for a consumed capsule; the tensor is then released by its producer.
    pub fn from_python(obj: &Bound<'_, PyAny>) -> PyResult<Self> {
        let (capsule, stream) = exchange(obj, None)?;
        import(&capsule, &stream)
    }

    /// Like [`from_python`](Self::from_python), ordered on `stream` (whose device must be the
    /// tensor's: `ValueError` otherwise).
    pub fn from_python_on(obj: &Bound<'_, PyAny>, stream: &Stream) -> PyResult<Self> {
        let (capsule, stream) = exchange(obj, Some(stream))?;
        import(&capsule, &stream)
    }
}

impl<T: PyElement> DeviceArray<T> {
    /// The array as a Python `DeviceArray` object.
    pub fn into_python(self, py: Python<'_>) -> PyResult<Bound<'_, PyDeviceArray>> {
        Bound::new(py, PyDeviceArray { array: T::wrap(self) })
    }

    /// The array as an array of the library `like` comes from: `from_dlpack` of the top module
    /// of `like`'s type (`torch.from_dlpack` for a torch tensor, `cupy.from_dlpack` for a CuPy
    /// array), zero-copy.
    pub fn into_python_like<'py>(self, like: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        let py = like.py();
        let module: String = like.get_type().getattr("__module__")?.extract()?;
        let top = module.split('.').next().unwrap_or_default();
        let array = self.into_python(py)?;
        py.import(top)?.getattr("from_dlpack")?.call1((array,))
    }
}

/// A [`DeviceArray`] of any element type as a Python object (`cuda_core.DeviceArray`): a
/// DLPack producer (`__dlpack__`, `__dlpack_device__`) and a `__cuda_array_interface__`
/// (version 3) exporter, so `torch.from_dlpack`, `cupy.from_dlpack`, `torch.as_tensor` and
/// `cupy.asarray` take it without a copy.
#[pyclass(name = "DeviceArray", module = "cuda_core", frozen)]
pub struct PyDeviceArray {
    array: AnyArray,
}

impl PyDeviceArray {
    /// The memory of `obj` (anything with `__dlpack__`, or a DLPack capsule) as an array of its
    /// own element type, zero-copy, as [`DeviceArray::from_python`] does for one type.
    pub fn from_python(obj: &Bound<'_, PyAny>) -> PyResult<PyDeviceArray> {
        let (capsule, stream) = exchange(obj, None)?;
        Ok(PyDeviceArray {
            array: import_any(&capsule, &stream)?,
        })
    }

    /// The element type.
    pub fn dtype(&self) -> DType {
        with_array!(&self.array, a => a.dtype())
    }

    /// The array, when its element type is `T`.
    pub fn as_array<T: PyElement>(&self) -> Option<&DeviceArray<T>> {
        T::peek(&self.array)
    }

    fn stream(&self) -> &Stream {
        with_array!(&self.array, a => a.stream())
    }
}

#[pymethods]
impl PyDeviceArray {
    /// Exports the array as a DLPack capsule (the array API's `__dlpack__`): versioned when
    /// `max_version` is 1.x or newer, legacy otherwise; `copy=True` exports a compact copy
    /// (flagged as copied); `dl_device` must be this array's device.
    #[pyo3(signature = (*, stream=None, max_version=None, dl_device=None, copy=None))]
    fn __dlpack__<'py>(
        &self,
        py: Python<'py>,
        stream: Option<i64>,
        max_version: Option<(u32, u32)>,
        dl_device: Option<(i32, i32)>,
        copy: Option<bool>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let here = self.__dlpack_device__();
        if dl_device.is_some_and(|device| device != here) {
            return Err(PyBufferError::new_err(format!(
                "cannot export to DLPack device {dl_device:?}: the array is on {here:?} and is never moved"
            )));
        }
        let consumer = consumer_stream(self.stream().context(), stream)?;
        let versioned = max_version.is_some_and(|(major, _)| major >= 1);
        with_array!(&self.array, a => {
            let (view, flags) = match copy {
                Some(true) => (a.try_clone()?, DLPackFlags::IS_COPIED),
                _ => (share(a), DLPackFlags::NONE),
            };
            if versioned {
                let raw = view.into_dlpack_versioned(consumer.as_ref(), flags)?;
                capsule(py, raw.cast(), VERSIONED)
            } else {
                let raw = view.into_dlpack(consumer.as_ref())?;
                capsule(py, raw.cast(), LEGACY)
            }
        })
    }

    /// `(2, ordinal)`: CUDA device memory of that device (the array API's `__dlpack_device__`).
    fn __dlpack_device__(&self) -> (i32, i32) {
        (DLDeviceType::CUDA.0, self.stream().context().device().ordinal() as i32)
    }

    /// The CUDA Array Interface, version 3: shape, typestr, data pointer, strides in bytes (None
    /// when C-contiguous) and the array's stream. bfloat16 has no typestr: `AttributeError`.
    #[getter(__cuda_array_interface__)]
    fn cuda_array_interface<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let dtype = self.dtype();
        let typestr = typestr(dtype).ok_or_else(|| {
            PyAttributeError::new_err(format!(
                "{dtype} has no __cuda_array_interface__ typestr; exchange it through DLPack"
            ))
        })?;
        let interface = PyDict::new(py);
        with_array!(&self.array, a => {
            interface.set_item("shape", PyTuple::new(py, a.shape())?)?;
            let strides = match a.is_contiguous() {
                true => py.None(),
                false => PyTuple::new(py, a.strides().iter().map(|&s| s * dtype.size() as isize))?.into_py_any(py)?,
            };
            interface.set_item("strides", strides)?;
            // SAFETY: the address is handed out as a number; the consumer keeps this object
            // alive while it uses it (the interface's rule).
            interface.set_item("data", (unsafe { a.as_raw() }, false))?;
        });
        interface.set_item("typestr", typestr)?;
        interface.set_item("descr", vec![("", typestr)])?;
        interface.set_item("stream", stream_number(self.stream()))?;
        interface.set_item("version", 3)?;
        Ok(interface)
    }

    /// The extents.
    #[getter]
    fn shape<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        with_array!(&self.array, a => { PyTuple::new(py, a.shape()) })
    }

    /// The strides, in elements.
    #[getter]
    fn strides<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        with_array!(&self.array, a => { PyTuple::new(py, a.strides()) })
    }

    /// The element type's NumPy name (`float32`, `bfloat16`, `bool`, ...).
    #[getter(dtype)]
    fn dtype_name(&self) -> &'static str {
        self.dtype().name()
    }

    /// The device address of the first element.
    #[getter]
    fn data_ptr(&self) -> u64 {
        // SAFETY: the address is handed out as a number.
        with_array!(&self.array, a => { unsafe { a.as_raw() } })
    }

    /// The array's stream, as the protocol numbers it (1: the legacy default stream).
    #[getter(stream)]
    fn stream_handle(&self) -> usize {
        stream_number(self.stream())
    }

    /// A compact copy in memory from the device's pool, on the same stream.
    fn copy(&self) -> PyResult<PyDeviceArray> {
        with_array!(&self.array, a => {
            Ok(PyDeviceArray { array: erased::Sealed::wrap(a.try_clone()?) })
        })
    }

    /// Sets every element to `value` (converted to the element type), queued on the array's
    /// stream; the memory is shared with every exported view.
    fn fill(&self, value: f64) -> PyResult<()> {
        with_array!(&self.array, a => {
            let mut view = share(a);
            Ok(view.fill(Element::from_f64(value))?)
        })
    }

    /// Waits until the array's stream has finished its queued work.
    fn synchronize(&self) -> PyResult<()> {
        Ok(self.stream().synchronize().map_err(Error::from)?)
    }

    fn __repr__(&self) -> String {
        with_array!(&self.array, a => {
            format!(
                "DeviceArray(shape={:?}, strides={:?}, dtype={}, device=cuda:{})",
                a.shape(),
                a.strides(),
                a.dtype(),
                a.context().device().ordinal()
            )
        })
    }
}

/// `from_dlpack(obj)`: the memory of a torch tensor, CuPy array or DLPack capsule as a
/// `DeviceArray` of its element type, zero-copy (see [`DeviceArray::from_python`]).
#[pyfunction]
fn from_dlpack(obj: &Bound<'_, PyAny>) -> PyResult<PyDeviceArray> {
    PyDeviceArray::from_python(obj)
}

/// `pool_used_bytes(device=0)`: bytes the device's memory pool has handed out to arrays.
#[pyfunction]
#[pyo3(signature = (device=0))]
fn pool_used_bytes(device: u32) -> PyResult<usize> {
    let device = Device::new(device)?;
    Ok(MemoryPool::for_context(device.context()).stats().used_bytes)
}

/// `release_completed_imports()`: hands back to their producers the imported tensors dropped
/// earlier whose last use on the device has completed since (see
/// [`crate::release_completed_imports`]); never waits.
#[pyfunction]
fn release_completed_imports() {
    crate::release_completed_imports();
}

/// Adds `DeviceArray`, `from_dlpack`, `pool_used_bytes` and `release_completed_imports` to an
/// extension module.
pub fn register(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_class::<PyDeviceArray>()?;
    module.add_function(wrap_pyfunction!(from_dlpack, module)?)?;
    module.add_function(wrap_pyfunction!(pool_used_bytes, module)?)?;
    module.add_function(wrap_pyfunction!(release_completed_imports, module)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::array::{DLDataType, DLDevice, DLPackVersion, DLTensor};
    use std::sync::atomic::{AtomicUsize, Ordering};

    unsafe extern "C" fn count(tensor: *mut DLManagedTensorVersioned) {
        // SAFETY: the tests set `manager_ctx` to a live counter.
        unsafe { (*(*tensor).manager_ctx.cast::<AtomicUsize>()).fetch_add(1, Ordering::SeqCst) };
    }

    /// A hand-made versioned tensor of 4 floats at a made-up address, counting its releases.
    fn tensor(counter: &AtomicUsize, device_type: DLDeviceType, shape: &mut [i64; 1]) -> DLManagedTensorVersioned {
        DLManagedTensorVersioned {
            version: DLPackVersion::CURRENT,
            manager_ctx: (counter as *const AtomicUsize).cast_mut().cast(),
            deleter: Some(count),
            flags: DLPackFlags::NONE,
            dl_tensor: DLTensor {
                data: 0x7000_0000 as *mut c_void,
                device: DLDevice {
                    device_type,
                    device_id: 0,
                },
                ndim: 1,
                dtype: DLDataType::from(DType::F32),
                shape: shape.as_mut_ptr(),
                strides: std::ptr::null_mut(),
                byte_offset: 0,
            },
        }
    }

    fn name_of(capsule: &Bound<'_, PyAny>) -> &'static str {
        // SAFETY: a live capsule; the names are static.
        unsafe {
            for (name, text) in [
                (VERSIONED, "dltensor_versioned"),
                (USED_VERSIONED, "used_dltensor_versioned"),
            ] {
                if ffi::PyCapsule_IsValid(capsule.as_ptr(), name.as_ptr()) == 1 {
                    return text;
                }
            }
        }
        "other"
    }

    #[test]
    fn refused_capsules_stay_with_their_producer_and_are_released_once() {
        Python::initialize();
        Python::attach(|py| {
            let counter = AtomicUsize::new(0);
            let mut shape = [4];
            let mut cpu = tensor(&counter, DLDeviceType::CPU, &mut shape);
            let offered = capsule(py, (&mut cpu as *mut DLManagedTensorVersioned).cast(), VERSIONED).unwrap();
            let error = from_dlpack(&offered).err().expect("a CPU tensor is refused");
            assert!(error.is_instance_of::<PyTypeError>(py), "{error}");
            assert!(error.to_string().contains("CPU memory"), "{error}");
            assert_eq!(name_of(&offered), "dltensor_versioned", "not consumed");
            drop(offered);
            assert_eq!(
                counter.load(Ordering::SeqCst),
                1,
                "the capsule released its tensor once"
            );

            let mut newer = tensor(&counter, DLDeviceType::CUDA, &mut shape);
            newer.version = DLPackVersion { major: 2, minor: 0 };
            let offered = capsule(py, (&mut newer as *mut DLManagedTensorVersioned).cast(), VERSIONED).unwrap();
            let error = from_dlpack(&offered).err().expect("another major version is refused");
            assert!(error.is_instance_of::<PyBufferError>(py), "{error}");
            drop(offered);
            assert_eq!(counter.load(Ordering::SeqCst), 2);
        });
    }

    #[test]
    fn a_claimed_capsule_is_consumed_and_cannot_be_used_again() {
        Python::initialize();
        Python::attach(|py| {
            let counter = AtomicUsize::new(0);
            let mut shape = [4];
            let mut cuda = tensor(&counter, DLDeviceType::CUDA, &mut shape);
            let offered = capsule(py, (&mut cuda as *mut DLManagedTensorVersioned).cast(), VERSIONED).unwrap();
            let claimed = Offered::open(&offered).unwrap().claim().unwrap();
            assert_eq!(name_of(&offered), "used_dltensor_versioned");
            let again = Offered::open(&offered).err().expect("a consumed capsule is refused");
            assert!(again.is_instance_of::<PyValueError>(py), "{again}");
            assert!(again.to_string().contains("already consumed"), "{again}");
            drop(offered);
            assert_eq!(counter.load(Ordering::SeqCst), 0, "the consumer owns the tensor now");
            drop(claimed);
            assert_eq!(counter.load(Ordering::SeqCst), 1, "released once, by the consumer");
        });
    }

    #[test]
    fn objects_that_are_not_dlpack_are_type_errors() {
        Python::initialize();
        Python::attach(|py| {
            let number = 7.into_bound_py_any(py).unwrap();
            let error = from_dlpack(&number).err().expect("an int is refused");
            assert!(error.is_instance_of::<PyTypeError>(py), "{error}");
            assert!(error.to_string().contains("'int' object has no __dlpack__"), "{error}");
            // SAFETY: a capsule of another name holding a dummy pointer, never read.
            let other = unsafe {
                Bound::from_owned_ptr(
                    py,
                    ffi::PyCapsule_New(0x10 as *mut c_void, c"something_else".as_ptr(), None),
                )
            };
            let error = Offered::open(&other).err().expect("another capsule is refused");
            assert!(error.is_instance_of::<PyTypeError>(py), "{error}");
        });
    }

    #[test]
    fn dlpack_errors_map_to_the_array_api_exceptions() {
        Python::initialize();
        Python::attach(|py| {
            let cpu = DLDevice {
                device_type: DLDeviceType::CPU,
                device_id: 0,
            };
            let complex = DLDataType {
                code: crate::array::DLDataTypeCode::COMPLEX,
                bits: 64,
                lanes: 1,
            };
            assert!(PyErr::from(DLPackError::NotCuda(cpu)).is_instance_of::<PyTypeError>(py));
            assert!(PyErr::from(DLPackError::UnsupportedDType(complex)).is_instance_of::<PyBufferError>(py));
            assert!(PyErr::from(DLPackError::ReadOnly).is_instance_of::<PyBufferError>(py));
            assert!(PyErr::from(DLPackError::WrongDevice { found: 1, expected: 0 }).is_instance_of::<PyValueError>(py));
            assert!(PyErr::from(Error::InvalidValue("x".into())).is_instance_of::<PyValueError>(py));
            let out_of_range = Error::IndexOutOfBounds {
                what: "take".into(),
                index: Some(5),
                extent: 3,
            };
            assert!(PyErr::from(out_of_range).is_instance_of::<PyIndexError>(py));
            assert!(PyErr::from(Error::from(DLPackError::Consumed)).is_instance_of::<PyValueError>(py));
            assert_eq!(typestr(DType::F16), Some("<f2"));
            assert_eq!(typestr(DType::Bool), Some("|b1"));
            assert_eq!(typestr(DType::BF16), None);
        });
    }
}
