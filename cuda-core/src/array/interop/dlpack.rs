//! DLPack exchange: export of a [`DeviceArray`] as a DLPack 1.0 tensor (the versioned
//! [`DLManagedTensorVersioned`] or the legacy [`DLManagedTensor`] that every framework accepts,
//! whose structures are in `dlpack_abi.rs`), and import of a tensor another library made, strided
//! and offset tensors included, as a view of its memory (never a copy).
//!
//! Streams follow the Python array API's `__dlpack__(stream=...)` rules: an export made for a
//! consumer's stream makes that stream wait for the array's stream with an event (no host
//! synchronisation), and an import told the producer's stream makes its own stream wait for that
//! one the same way, and orders the producer's stream after its own uses before handing the
//! tensor back.
//!
//! ```no_run
//! use cuda_core::{DLPackFlags, DLPackTensor, Device, DeviceArray};
//!
//! # fn main() -> cuda_core::Result<()> {
//! let device = Device::new(0)?;
//! let producer = device.create_stream()?;
//! let consumer = device.create_stream()?;
//! let x = DeviceArray::from_slice(&producer, &[1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0])?.reshape([2, 3])?;
//! // A transposed view travels as strides; `consumer` waits for `producer` on the device.
//! let raw = x.transpose().into_dlpack_versioned(Some(&consumer), DLPackFlags::NONE)?;
//! // SAFETY: `raw` was just exported, and nothing else uses it.
//! let tensor = unsafe { DLPackTensor::from_raw_versioned(raw) }?;
//! let y = DeviceArray::<f32>::from_dlpack_tensor(tensor, &consumer, Some(&producer))?;
//! assert_eq!((y.shape(), y.strides()), (&[3, 2][..], &[1, 3][..]));
//! assert_eq!(y.to_vec()?, [1.0, 4.0, 2.0, 5.0, 3.0, 6.0]);
//! # Ok(())
//! # }
//! ```

use std::ffi::c_void;
use std::mem::size_of;
use std::ptr::{self, NonNull};

use cuda_driver::{Access, Context, MemoryType, PointerInfo, Stream};
use cuda_sys::driver::{CUdeviceptr, CUresult};

use crate::array::device_array::{c_strides, shape_len, DeviceArray};
use crate::array::dtype::{DType, Element};
use crate::array::interop::dlpack_abi::{
    DLDevice, DLDeviceType, DLManagedTensor, DLManagedTensorVersioned, DLPackError, DLPackFlags, DLPackVersion,
    DLTensor,
};
use crate::array::memory::offset_range;
use crate::error::Result;

/// The raw pointer an owned tensor holds.
#[derive(Clone, Copy)]
enum RawTensor {
    Legacy(NonNull<DLManagedTensor>),
    Versioned(NonNull<DLManagedTensorVersioned>),
}

/// An owned DLPack tensor of either ABI: its `deleter` is called exactly once, when it is
/// dropped, or when the [`DeviceArray`] it was imported as ([`DeviceArray::from_dlpack_tensor`])
/// lets go of it.
pub struct DLPackTensor {
    raw: RawTensor,
}

// SAFETY: the tensor is plain data and a release function; `from_raw`'s caller promises that
// the deleter may be called from any thread, and shared access only reads.
unsafe impl Send for DLPackTensor {}
// SAFETY: as above.
unsafe impl Sync for DLPackTensor {}

impl DLPackTensor {
    /// Takes ownership of a legacy tensor. Null is [`DLPackError::NullTensor`].
    ///
    /// A tensor taken here may become a writable [`DeviceArray`] through the safe
    /// [`DeviceArray::from_dlpack_tensor`], so the memory it describes is part of this
    /// contract. That import checks with the driver what it can (device memory of the stream's
    /// device from the first to the last byte reached, in one allocation); the rest is promised
    /// here.
    ///
    /// # Safety
    /// `tensor` must be null or point to a valid `DLManagedTensor` that nobody else owns now,
    /// and:
    /// - its `shape` (and non-null `strides`) hold `ndim` values, and stay unchanged while it is
    ///   owned;
    /// - unless `device` says another kind of memory (which every import refuses), `data +
    ///   byte_offset` is device memory, of the device `device` names, that holds every element
    ///   its shape and strides reach (each `(extent - 1) * stride` elements on, in elements of
    ///   its `dtype`);
    /// - that memory stays allocated until the deleter is called;
    /// - while the tensor, or an array imported from it, uses that memory, nobody else reads or
    ///   writes it except in an order the streams set: the producer's work on it is ordered
    ///   before the stream it is imported on (as the DLPack stream handshake does, or with
    ///   `producer_stream`), and nothing else writes it (nor reads what the array writes) until
    ///   the deleter has been called;
    /// - its deleter, if any, may be called once, from any thread.
    pub unsafe fn from_raw(tensor: *mut DLManagedTensor) -> Result<Self, DLPackError> {
        let raw = NonNull::new(tensor).ok_or(DLPackError::NullTensor)?;
        Ok(DLPackTensor {
            raw: RawTensor::Legacy(raw),
        })
    }

    /// Takes ownership of a versioned tensor. Null is [`DLPackError::NullTensor`]; a major
    /// version other than 1 is [`DLPackError::UnsupportedVersion`], and the tensor is then left
    /// to the caller (DLPack says to call its deleter and read nothing else).
    ///
    /// # Safety
    /// As [`from_raw`](Self::from_raw), for a `DLManagedTensorVersioned`: `tensor` is null or
    /// points to a valid one nobody else owns now; its `shape` and `strides` hold `ndim` values;
    /// for CUDA tensors `data + byte_offset` is device memory of that device holding every
    /// element its shape and strides reach, allocated until the deleter is called and not used
    /// by anyone else except as ordered by streams (see `from_raw`) meanwhile; its deleter may
    /// be called once, from any thread. A tensor flagged [`READ_ONLY`](DLPackFlags::READ_ONLY)
    /// is refused by every import, so its memory may be shared with readers.
    pub unsafe fn from_raw_versioned(tensor: *mut DLManagedTensorVersioned) -> Result<Self, DLPackError> {
        let raw = NonNull::new(tensor).ok_or(DLPackError::NullTensor)?;
        // SAFETY: the caller promises a valid tensor; `version` is at the same place in every
        // major version.
        let version = unsafe { (*tensor).version };
        if version.major != DLPackVersion::CURRENT.major {
            return Err(DLPackError::UnsupportedVersion(version));
        }
        Ok(DLPackTensor {
            raw: RawTensor::Versioned(raw),
        })
    }

    /// The tensor's description.
    pub fn tensor(&self) -> &DLTensor {
        // SAFETY: the pointer is valid while `self` owns it (the constructors' contract).
        unsafe {
            match self.raw {
                RawTensor::Legacy(raw) => &(*raw.as_ptr()).dl_tensor,
                RawTensor::Versioned(raw) => &(*raw.as_ptr()).dl_tensor,
            }
        }
    }

    /// The ABI version (`None` for a legacy tensor).
    pub fn version(&self) -> Option<DLPackVersion> {
        match self.raw {
            RawTensor::Legacy(_) => None,
            // SAFETY: valid while owned.
            RawTensor::Versioned(raw) => Some(unsafe { (*raw.as_ptr()).version }),
        }
    }

    /// The flags (none for a legacy tensor).
    pub fn flags(&self) -> DLPackFlags {
        match self.raw {
            RawTensor::Legacy(_) => DLPackFlags::NONE,
            // SAFETY: valid while owned.
            RawTensor::Versioned(raw) => unsafe { (*raw.as_ptr()).flags },
        }
    }

    /// Where the memory is.
    pub fn device(&self) -> DLDevice {
        self.tensor().device
    }

    /// The element type, if this crate has it.
    pub fn dtype(&self) -> Result<DType, DLPackError> {
        DType::try_from(self.tensor().dtype)
    }

    /// The extents (empty for a zero-dimensional tensor); negative `ndim` is an error.
    pub fn shape(&self) -> Result<&[i64], DLPackError> {
        let t = self.tensor();
        let ndim = usize::try_from(t.ndim).map_err(|_| DLPackError::Layout(format!("ndim {} is negative", t.ndim)))?;
        if ndim == 0 {
            return Ok(&[]);
        }
        // SAFETY: the constructors' contract: `shape` holds `ndim` values.
        Ok(unsafe { std::slice::from_raw_parts(t.shape, ndim) })
    }

    /// The strides in elements, `None` when the tensor says compact row-major (null).
    pub fn strides(&self) -> Result<Option<&[i64]>, DLPackError> {
        let ndim = self.shape()?.len();
        let t = self.tensor();
        if t.strides.is_null() {
            return Ok(None);
        }
        if ndim == 0 {
            return Ok(Some(&[]));
        }
        // SAFETY: the constructors' contract: non-null `strides` holds `ndim` values.
        Ok(Some(unsafe { std::slice::from_raw_parts(t.strides, ndim) }))
    }

    /// The first element's address, shape and strides (in elements) of the tensor seen as an
    /// array of `T` on CUDA device `device`, after every check that needs no driver.
    pub(crate) fn layout<T: Element>(&self, device: i32) -> Result<(CUdeviceptr, Vec<usize>, Vec<isize>), DLPackError> {
        let t = self.tensor();
        if t.device.device_type != DLDeviceType::CUDA {
            return Err(DLPackError::NotCuda(t.device));
        }
        if t.device.device_id != device {
            return Err(DLPackError::WrongDevice {
                found: t.device.device_id,
                expected: device,
            });
        }
        let found = self.dtype()?;
        if found != T::DTYPE {
            return Err(DLPackError::WrongDType {
                found,
                expected: T::DTYPE,
            });
        }
        if self.flags().contains(DLPackFlags::READ_ONLY) {
            return Err(DLPackError::ReadOnly);
        }
        let extents = self.shape()?;
        let shape = extents
            .iter()
            .map(|&d| {
                usize::try_from(d).map_err(|_| DLPackError::Layout(format!("negative extent in shape {extents:?}")))
            })
            .collect::<Result<Vec<usize>, _>>()?;
        shape_len(&shape).map_err(|_| DLPackError::Layout(format!("shape {shape:?} overflows")))?;
        // Negative strides (a reversed view, as NumPy and CuPy make) are views too.
        let strides = match self.strides()? {
            None => c_strides(&shape),
            Some(strides) => strides.iter().map(|&s| s as isize).collect(),
        };
        let ptr = (t.data as CUdeviceptr)
            .checked_add(t.byte_offset)
            .ok_or_else(|| DLPackError::Layout("data address plus byte offset overflows".into()))?;
        if ptr % std::mem::align_of::<T>() as CUdeviceptr != 0 {
            return Err(DLPackError::Layout(format!(
                "data at {ptr:#x} is not aligned for {}",
                T::DTYPE
            )));
        }
        reached_bytes(ptr, &shape, &strides, size_of::<T>())?;
        Ok((ptr, shape, strides))
    }

    /// [`layout`](Self::layout) for `stream`'s device, after asking the driver (see
    /// [`check_device_memory`]) whether the bytes the tensor reaches are device memory there.
    pub(crate) fn checked_layout<T: Element>(&self, stream: &Stream) -> Result<(CUdeviceptr, Vec<usize>, Vec<isize>)> {
        let context = stream.context();
        let device = context.device().ordinal() as i32;
        let (ptr, shape, strides) = self.layout::<T>(device)?;
        if let Some((first, last)) = reached_bytes(ptr, &shape, &strides, size_of::<T>())? {
            check_device_memory(context, first, last)?;
        }
        Ok((ptr, shape, strides))
    }
}

/// The lowest and highest byte (inclusive) that an array of `shape` and `strides` (in elements
/// of `element` bytes, negative along reversed axes) with its first element at `ptr` reaches,
/// `None` when it has no elements; a range outside the address space, or strides whose bytes
/// do not fit `isize`, is a [`DLPackError::Layout`].
fn reached_bytes(
    ptr: CUdeviceptr,
    shape: &[usize],
    strides: &[isize],
    element: usize,
) -> Result<Option<(CUdeviceptr, CUdeviceptr)>, DLPackError> {
    let Some((low, high)) = offset_range(shape, strides) else {
        return Ok(None);
    };
    // The highest element's last byte is `element - 1` past its first. Exact in i128.
    let (low, high) = (low * element as i128, high * element as i128);
    let fits = strides
        .iter()
        .all(|&s| (s as i128 * element as i128).unsigned_abs() <= isize::MAX as u128);
    let first = i128::from(ptr) + low;
    let last = i128::from(ptr) + high + element as i128 - 1;
    match (fits, CUdeviceptr::try_from(first), CUdeviceptr::try_from(last)) {
        (true, Ok(first), Ok(last)) => Ok(Some((first, last))),
        _ => Err(DLPackError::Layout(format!(
            "shape {shape:?} with strides {strides:?} overflows the address space"
        ))),
    }
}

/// Asks the driver whether bytes `first..=last` are device memory of `context`'s device that
/// one allocation holds: `first` must be device (or managed) memory of that device, and
/// `last` inside the same allocation (for virtual memory, the same reserved range), every part
/// of it in between mapped. The last point matters for virtual memory, which the driver
/// describes per mapping: a tensor over several mappings of one range (PyTorch's expandable
/// segments) is walked mapping by mapping. An address the driver does not know is
/// [`DLPackError::NotDeviceMemory`], a range that runs out [`DLPackError::OutOfAllocation`];
/// other driver failures are returned as they are.
fn check_device_memory(context: &Context, first: CUdeviceptr, last: CUdeviceptr) -> Result<()> {
    let device = context.device().ordinal() as i32;
    let not_device = |why: String| DLPackError::NotDeviceMemory {
        address: first,
        device,
        why,
    };
    let info = match PointerInfo::query(context, first) {
        Ok(info) => info,
        Err(error) if error.code() == Some(CUresult::CUDA_ERROR_INVALID_VALUE) => {
            return Err(not_device(format!("the driver does not know the address ({error})")).into())
        }
        Err(error) => return Err(error.into()),
    };
    if !(info.memory_type == MemoryType::Device || info.is_managed) {
        return Err(not_device(format!("{:?} memory", info.memory_type)).into());
    }
    if !info.is_managed && info.device_ordinal != device {
        return Err(not_device(format!("memory of device {}", info.device_ordinal)).into());
    }
    if !info.mapped {
        return Err(not_device("a reserved address with no memory mapped".into()).into());
    }
    let out_of = |end: CUdeviceptr| DLPackError::OutOfAllocation {
        first,
        last,
        start: info.range_start,
        end,
    };
    let range_end = info.range_end();
    if last >= range_end {
        return Err(out_of(range_end).into());
    }
    // Within the range, walk the mappings (one step for memory the driver maps as a whole).
    let mut backed = info.backed_end();
    while backed <= last {
        match PointerInfo::query(context, backed) {
            Ok(next) if next.mapped && next.range_start == info.range_start && next.backed_end() > backed => {
                backed = next.backed_end();
            }
            _ => return Err(out_of(backed).into()),
        }
    }
    Ok(())
}

impl Drop for DLPackTensor {
    fn drop(&mut self) {
        // SAFETY: the tensor is owned, and its deleter is called once, here.
        unsafe {
            match self.raw {
                RawTensor::Legacy(raw) => {
                    if let Some(deleter) = (*raw.as_ptr()).deleter {
                        deleter(raw.as_ptr());
                    }
                }
                RawTensor::Versioned(raw) => {
                    if let Some(deleter) = (*raw.as_ptr()).deleter {
                        deleter(raw.as_ptr());
                    }
                }
            }
        }
    }
}

impl std::fmt::Debug for DLPackTensor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DLPackTensor")
            .field("version", &self.version())
            .field("flags", &self.flags())
            .field("tensor", self.tensor())
            .finish()
    }
}

/// What an exported tensor owns: the managed struct handed out, the array and the shape and
/// strides the tensor points into.
struct Export<T: Element, M> {
    managed: M,
    array: DeviceArray<T>,
    /// The stream the consumer said it works on: the array goes back after its work queued by
    /// the time of the deleter call.
    consumer: Option<Stream>,
    _shape: Vec<i64>,
    _strides: Vec<i64>,
}

/// The two managed-tensor layouts, as far as exporting needs.
trait Managed: Sized {
    /// The address of the `manager_ctx` field.
    ///
    /// # Safety
    /// `this` must point to a live value.
    unsafe fn manager_ctx(this: *mut Self) -> *mut *mut c_void;
}

impl Managed for DLManagedTensor {
    unsafe fn manager_ctx(this: *mut Self) -> *mut *mut c_void {
        // SAFETY: the caller promises `this` is live.
        unsafe { ptr::addr_of_mut!((*this).manager_ctx) }
    }
}

impl Managed for DLManagedTensorVersioned {
    unsafe fn manager_ctx(this: *mut Self) -> *mut *mut c_void {
        // SAFETY: as above.
        unsafe { ptr::addr_of_mut!((*this).manager_ctx) }
    }
}

unsafe extern "C" fn delete_export<T: Element, M: Managed>(tensor: *mut M) {
    if tensor.is_null() {
        return;
    }
    // SAFETY: `tensor` came from `export`, where `manager_ctx` is the leaked `Box<Export<T, M>>`
    // holding it; DLPack calls the deleter once.
    let export = unsafe { Box::from_raw((*M::manager_ctx(tensor)).cast::<Export<T, M>>()) };
    // The consumer's work queued so far is a use: begun and ended now, it records the
    // consumer's event, which the release waits for.
    if let Some(consumer) = &export.consumer {
        let ordered = match export.array.begin_use(consumer, Access::Write) {
            Ok(_use_now) => true,
            Err(error) => {
                eprintln!("cuda-core: ordering a DLPack export's release after its consumer failed ({error}); waiting instead");
                consumer.synchronize().is_ok()
            }
        };
        if !ordered {
            eprintln!("cuda-core: waiting for a DLPack consumer failed; the array is leaked");
            std::mem::forget(export);
            return;
        }
    }
    // Dropping the array returns its memory to the pool, after the streams that used it.
    drop(export);
}

impl<T: Element> DeviceArray<T> {
    /// Exports the array as a legacy DLPack tensor, giving up ownership: its memory goes back to
    /// the pool (in stream order) when the consumer calls the tensor's `deleter`. When the
    /// consumer works on `consumer_stream` (same context), that stream is first made to wait
    /// for the array's stream with an event (no host wait), and the memory is freed only after
    /// the consumer's work queued on it by the time of the deleter call. Without one, the
    /// consumer must synchronise with [`stream`](Self::stream) itself. Views keep their strides;
    /// `data` is the first element (`byte_offset` 0).
    pub fn into_dlpack(self, consumer_stream: Option<&Stream>) -> Result<*mut DLManagedTensor> {
        self.export(consumer_stream, |dl_tensor| DLManagedTensor {
            dl_tensor,
            manager_ctx: ptr::null_mut(),
            deleter: Some(delete_export::<T, DLManagedTensor>),
        })
    }

    /// Like [`into_dlpack`](Self::into_dlpack), as a DLPack 1.0 versioned tensor with `flags`
    /// (a broadcast view, whose elements share memory, is always marked
    /// [`READ_ONLY`](DLPackFlags::READ_ONLY)).
    pub fn into_dlpack_versioned(
        self,
        consumer_stream: Option<&Stream>,
        flags: DLPackFlags,
    ) -> Result<*mut DLManagedTensorVersioned> {
        let flags = match self.is_broadcast() {
            true => flags | DLPackFlags::READ_ONLY,
            false => flags,
        };
        self.export(consumer_stream, |dl_tensor| DLManagedTensorVersioned {
            version: DLPackVersion::CURRENT,
            manager_ctx: ptr::null_mut(),
            deleter: Some(delete_export::<T, DLManagedTensorVersioned>),
            flags,
            dl_tensor,
        })
    }

    fn export<M: Managed>(
        self,
        consumer_stream: Option<&Stream>,
        managed: impl FnOnce(DLTensor) -> M,
    ) -> Result<*mut M> {
        if let Some(stream) = consumer_stream {
            // The consumer's stream waits for the array's work (an event, no host wait).
            drop(self.begin_use(stream, Access::Write)?);
        }
        let device_id = self.context().device().ordinal() as i32;
        let mut shape: Vec<i64> = self.shape().iter().map(|&d| d as i64).collect();
        let mut strides: Vec<i64> = self.strides().iter().map(|&s| s as i64).collect();
        let ndim = shape.len() as i32;
        // SAFETY: the address is handed out together with ownership of the array.
        let data = unsafe { self.as_raw() } as *mut c_void;
        let managed = managed(DLTensor {
            data,
            device: DLDevice {
                device_type: DLDeviceType::CUDA,
                device_id,
            },
            ndim,
            dtype: T::DTYPE.into(),
            shape: shape.as_mut_ptr(),
            strides: strides.as_mut_ptr(),
            byte_offset: 0,
        });
        let export = Box::into_raw(Box::new(Export {
            managed,
            array: self,
            consumer: consumer_stream.cloned(),
            _shape: shape,
            _strides: strides,
        }));
        // SAFETY: `export` is a valid, uniquely owned box until the deleter takes it back; the
        // vectors' buffers do not move when the vectors do.
        unsafe {
            let managed = ptr::addr_of_mut!((*export).managed);
            *M::manager_ctx(managed) = export.cast();
            Ok(managed)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::array::interop::dlpack_abi::{DLDataType, DLDataTypeCode};
    use crate::error::Error;
    use std::mem::{align_of, offset_of, size_of};
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn layouts_match_the_dlpack_header() {
        assert_eq!((size_of::<DLDevice>(), align_of::<DLDevice>()), (8, 4));
        assert_eq!((size_of::<DLDataType>(), align_of::<DLDataType>()), (4, 2));
        assert_eq!(size_of::<DLTensor>(), 48);
        assert_eq!(offset_of!(DLTensor, device), 8);
        assert_eq!(offset_of!(DLTensor, ndim), 16);
        assert_eq!(offset_of!(DLTensor, dtype), 20);
        assert_eq!(offset_of!(DLTensor, shape), 24);
        assert_eq!(offset_of!(DLTensor, strides), 32);
        assert_eq!(offset_of!(DLTensor, byte_offset), 40);
        assert_eq!(size_of::<DLManagedTensor>(), 64);
        assert_eq!(offset_of!(DLManagedTensor, deleter), 56);
        assert_eq!(size_of::<DLPackVersion>(), 8);
        assert_eq!(size_of::<DLManagedTensorVersioned>(), 80);
        assert_eq!(offset_of!(DLManagedTensorVersioned, manager_ctx), 8);
        assert_eq!(offset_of!(DLManagedTensorVersioned, deleter), 16);
        assert_eq!(offset_of!(DLManagedTensorVersioned, flags), 24);
        assert_eq!(offset_of!(DLManagedTensorVersioned, dl_tensor), 32);
    }

    #[test]
    fn element_types_map_to_dlpack_codes_and_back() {
        let f32_type: DLDataType = DType::F32.into();
        assert_eq!(
            (f32_type.code, f32_type.bits, f32_type.lanes),
            (DLDataTypeCode::FLOAT, 32, 1)
        );
        let i64_type: DLDataType = DType::I64.into();
        assert_eq!((i64_type.code, i64_type.bits), (DLDataTypeCode::INT, 64));
        let u8_type: DLDataType = DType::U8.into();
        assert_eq!((u8_type.code, u8_type.bits), (DLDataTypeCode::UINT, 8));
        let f16_type: DLDataType = DType::F16.into();
        assert_eq!((f16_type.code, f16_type.bits), (DLDataTypeCode::FLOAT, 16));
        let bf16_type: DLDataType = DType::BF16.into();
        assert_eq!((bf16_type.code, bf16_type.bits), (DLDataTypeCode::BFLOAT, 16));
        let bool_type: DLDataType = DType::Bool.into();
        assert_eq!((bool_type.code, bool_type.bits), (DLDataTypeCode::BOOL, 8));
        let c64_type: DLDataType = DType::C64.into();
        assert_eq!((c64_type.code, c64_type.bits), (DLDataTypeCode::COMPLEX, 64));
        let c128_type: DLDataType = DType::C128.into();
        assert_eq!((c128_type.code, c128_type.bits), (DLDataTypeCode::COMPLEX, 128));
        for dtype in DType::ALL {
            assert_eq!(DType::try_from(DLDataType::from(dtype)), Ok(dtype), "{dtype}");
        }
        let refused = [
            DLDataType {
                code: DLDataTypeCode::COMPLEX,
                bits: 32,
                lanes: 1,
            },
            DLDataType {
                code: DLDataTypeCode::FLOAT,
                bits: 32,
                lanes: 4,
            },
            DLDataType {
                code: DLDataTypeCode::FLOAT,
                bits: 8,
                lanes: 1,
            },
            DLDataType {
                code: DLDataTypeCode::BFLOAT,
                bits: 32,
                lanes: 1,
            },
            DLDataType {
                code: DLDataTypeCode(7),
                bits: 8,
                lanes: 1,
            },
        ];
        for dtype in refused {
            assert_eq!(DType::try_from(dtype), Err(DLPackError::UnsupportedDType(dtype)));
        }
        assert_eq!(refused[0].to_string(), "complex32");
        assert_eq!(refused[1].to_string(), "float32x4");
        assert!(DLPackError::UnsupportedDType(refused[0])
            .to_string()
            .contains("complex32"));
    }

    /// Deleter calls of the tensors of one test, counted through `manager_ctx`.
    unsafe extern "C" fn count_legacy(tensor: *mut DLManagedTensor) {
        // SAFETY: the tests set `manager_ctx` to a live counter.
        unsafe { (*(*tensor).manager_ctx.cast::<AtomicUsize>()).fetch_add(1, Ordering::SeqCst) };
    }

    unsafe extern "C" fn count_versioned(tensor: *mut DLManagedTensorVersioned) {
        // SAFETY: as above.
        unsafe { (*(*tensor).manager_ctx.cast::<AtomicUsize>()).fetch_add(1, Ordering::SeqCst) };
    }

    /// A hand-made tensor: its shape, strides and the two managed structs over them.
    struct Fake {
        shape: Vec<i64>,
        strides: Vec<i64>,
        legacy: DLManagedTensor,
        versioned: DLManagedTensorVersioned,
    }

    fn fake(
        counter: &AtomicUsize,
        device: DLDevice,
        dtype: DType,
        shape: &[i64],
        strides: Option<&[i64]>,
        byte_offset: u64,
    ) -> Box<Fake> {
        let describe = |shape: &mut Vec<i64>, strides: &mut Vec<i64>| DLTensor {
            data: 0x7000_0000 as *mut c_void,
            device,
            ndim: shape.len() as i32,
            dtype: dtype.into(),
            shape: shape.as_mut_ptr(),
            strides: if strides.is_empty() && !shape.is_empty() {
                ptr::null_mut()
            } else {
                strides.as_mut_ptr()
            },
            byte_offset,
        };
        let mut shape = shape.to_vec();
        let mut strides = strides.map(<[i64]>::to_vec).unwrap_or_default();
        let ctx = (counter as *const AtomicUsize).cast_mut().cast();
        let legacy = DLManagedTensor {
            dl_tensor: describe(&mut shape, &mut strides),
            manager_ctx: ctx,
            deleter: Some(count_legacy),
        };
        let versioned = DLManagedTensorVersioned {
            version: DLPackVersion::CURRENT,
            manager_ctx: ctx,
            deleter: Some(count_versioned),
            flags: DLPackFlags::NONE,
            dl_tensor: describe(&mut shape, &mut strides),
        };
        Box::new(Fake {
            shape,
            strides,
            legacy,
            versioned,
        })
    }

    const CUDA0: DLDevice = DLDevice {
        device_type: DLDeviceType::CUDA,
        device_id: 0,
    };

    #[test]
    fn strided_and_offset_tensors_become_views() {
        let counter = AtomicUsize::new(0);
        // A transposed 3x4 f32 tensor, starting 8 elements in.
        let mut t = fake(&counter, CUDA0, DType::F32, &[4, 3], Some(&[1, 4]), 32);
        for tensor in [
            // SAFETY: `t` outlives the owned tensors, which count their deleter calls.
            unsafe { DLPackTensor::from_raw(&mut t.legacy) }.unwrap(),
            unsafe { DLPackTensor::from_raw_versioned(&mut t.versioned) }.unwrap(),
        ] {
            let (ptr, shape, strides) = tensor.layout::<f32>(0).unwrap();
            assert_eq!((ptr, shape, strides), (0x7000_0020, vec![4, 3], vec![1, 4]));
            assert_eq!(tensor.dtype(), Ok(DType::F32));
        }
        assert_eq!(counter.load(Ordering::SeqCst), 2, "each owned tensor released once");
        assert_eq!((t.shape.len(), t.strides.len()), (2, 2));

        // No strides: compact row-major; a zero-dimensional tensor; a zero-size one.
        let mut t = fake(&counter, CUDA0, DType::F16, &[2, 3, 4], None, 0);
        // SAFETY: as above.
        let tensor = unsafe { DLPackTensor::from_raw(&mut t.legacy) }.unwrap();
        assert_eq!(tensor.layout::<half::f16>(0).unwrap().2, [12, 4, 1]);
        drop(tensor);
        let mut t = fake(&counter, CUDA0, DType::BF16, &[], None, 0);
        // SAFETY: as above.
        let tensor = unsafe { DLPackTensor::from_raw(&mut t.legacy) }.unwrap();
        assert_eq!(tensor.layout::<half::bf16>(0).unwrap(), (0x7000_0000, vec![], vec![]));
        drop(tensor);
        let mut t = fake(&counter, CUDA0, DType::Bool, &[3, 0], Some(&[-5, 1]), 0);
        // SAFETY: as above.
        let tensor = unsafe { DLPackTensor::from_raw(&mut t.legacy) }.unwrap();
        assert_eq!(
            tensor.layout::<crate::Bool>(0).unwrap().1,
            [3, 0],
            "a zero-size tensor's strides are never used"
        );
        drop(tensor);
        // Strides are kept as given: a negative one (a reversed view), a broadcast (zero) one.
        let mut t = fake(&counter, CUDA0, DType::I32, &[1, 5], Some(&[-7, 0]), 0);
        // SAFETY: as above.
        let tensor = unsafe { DLPackTensor::from_raw(&mut t.legacy) }.unwrap();
        assert_eq!(tensor.layout::<i32>(0).unwrap().2, [-7, 0]);
        drop(tensor);
        assert_eq!(counter.load(Ordering::SeqCst), 6);
    }

    #[test]
    fn the_bytes_a_tensor_reaches_run_to_its_last_element() {
        // A transposed 3x4 f32 tensor 8 elements in: the last element is 3 * 1 + 2 * 4 = 11
        // elements on, its last byte 11 * 4 + 3 bytes on.
        let counter = AtomicUsize::new(0);
        let mut t = fake(&counter, CUDA0, DType::F32, &[4, 3], Some(&[1, 4]), 32);
        // SAFETY: `t` outlives the owned tensor.
        let tensor = unsafe { DLPackTensor::from_raw(&mut t.legacy) }.unwrap();
        let (ptr, shape, strides) = tensor.layout::<f32>(0).unwrap();
        assert_eq!(
            reached_bytes(ptr, &shape, &strides, 4),
            Ok(Some((0x7000_0020, 0x7000_0020 + 47)))
        );
        // What the import asks the driver about for the tensor the crate once accepted at
        // 0x1000: a megabyte of floats, not just the first one.
        assert_eq!(
            reached_bytes(0x1000, &[1 << 20], &[1], 4),
            Ok(Some((0x1000, 0x1000 + (4 << 20) - 1)))
        );
        // One element, broadcast axes, and no elements at all.
        assert_eq!(reached_bytes(0x100, &[], &[], 8), Ok(Some((0x100, 0x107))));
        assert_eq!(reached_bytes(0x100, &[3, 5], &[0, 0], 2), Ok(Some((0x100, 0x101))));
        assert_eq!(reached_bytes(0x100, &[3, 0], &[7, 1], 4), Ok(None));
        // Reversed: x[::-1] of 4 floats starts at the last and reaches down to the first; rows
        // reversed reach down a row per row.
        assert_eq!(reached_bytes(0x10c, &[4], &[-1], 4), Ok(Some((0x100, 0x10f))));
        assert_eq!(reached_bytes(0x120, &[3, 4], &[-4, 1], 4), Ok(Some((0x100, 0x12f))));
        assert!(
            matches!(reached_bytes(0x8, &[4], &[-1], 4), Err(DLPackError::Layout(_))),
            "below address 0"
        );
        assert!(matches!(
            reached_bytes(u64::MAX - 8, &[4], &[1], 4),
            Err(DLPackError::Layout(_))
        ));
    }

    #[test]
    fn bad_tensors_get_typed_errors() {
        let counter = AtomicUsize::new(0);
        let cpu = DLDevice {
            device_type: DLDeviceType::CPU,
            device_id: 0,
        };
        let cases: Vec<(Box<Fake>, DLPackError)> = vec![
            (
                fake(&counter, cpu, DType::F32, &[4], None, 0),
                DLPackError::NotCuda(cpu),
            ),
            (
                fake(&counter, DLDevice { device_id: 1, ..CUDA0 }, DType::F32, &[4], None, 0),
                DLPackError::WrongDevice { found: 1, expected: 0 },
            ),
            (
                fake(&counter, CUDA0, DType::F64, &[4], None, 0),
                DLPackError::WrongDType {
                    found: DType::F64,
                    expected: DType::F32,
                },
            ),
            (
                fake(&counter, CUDA0, DType::F32, &[4, -1], None, 0),
                DLPackError::Layout("negative extent in shape [4, -1]".into()),
            ),
            (
                fake(&counter, CUDA0, DType::F32, &[4, 2], Some(&[-(1 << 40), 1]), 0),
                DLPackError::Layout(format!(
                    "shape [4, 2] with strides [-{}, 1] overflows the address space",
                    1u64 << 40
                )),
            ),
            (
                fake(&counter, CUDA0, DType::F32, &[4], None, 2),
                DLPackError::Layout("data at 0x70000002 is not aligned for float32".into()),
            ),
            (
                fake(&counter, CUDA0, DType::F32, &[2, 1 << 40], Some(&[1 << 62, 1]), 0),
                DLPackError::Layout(format!(
                    "shape [2, {}] with strides [{}, 1] overflows the address space",
                    1u64 << 40,
                    1u64 << 62
                )),
            ),
        ];
        for (mut t, expected) in cases {
            // SAFETY: `t` outlives the owned tensor.
            let tensor = unsafe { DLPackTensor::from_raw(&mut t.legacy) }.unwrap();
            assert_eq!(tensor.layout::<f32>(0).unwrap_err(), expected);
        }
        let mut t = fake(&counter, CUDA0, DType::F32, &[4], None, 0);
        t.legacy.dl_tensor.dtype = DLDataType {
            code: DLDataTypeCode::COMPLEX,
            bits: 32,
            lanes: 1,
        };
        // SAFETY: as above.
        let tensor = unsafe { DLPackTensor::from_raw(&mut t.legacy) }.unwrap();
        assert!(matches!(tensor.layout::<f32>(0), Err(DLPackError::UnsupportedDType(_))));
        drop(tensor);
        t.versioned.flags = DLPackFlags::READ_ONLY | DLPackFlags::IS_COPIED;
        // SAFETY: as above.
        let tensor = unsafe { DLPackTensor::from_raw_versioned(&mut t.versioned) }.unwrap();
        assert_eq!(tensor.flags(), DLPackFlags(3));
        assert_eq!(tensor.layout::<f32>(0), Err(DLPackError::ReadOnly));
        drop(tensor);
        t.versioned.dl_tensor.ndim = -1;
        t.versioned.flags = DLPackFlags::NONE;
        // SAFETY: as above.
        let tensor = unsafe { DLPackTensor::from_raw_versioned(&mut t.versioned) }.unwrap();
        assert_eq!(
            tensor.layout::<f32>(0),
            Err(DLPackError::Layout("ndim -1 is negative".into()))
        );
        drop(tensor);
        assert_eq!(
            counter.load(Ordering::SeqCst),
            10,
            "every owned tensor released exactly once"
        );

        // SAFETY: null is refused before anything is read.
        assert_eq!(
            unsafe { DLPackTensor::from_raw(ptr::null_mut()) }.unwrap_err(),
            DLPackError::NullTensor
        );
        // SAFETY: as above.
        assert_eq!(
            unsafe { DLPackTensor::from_raw_versioned(ptr::null_mut()) }.unwrap_err(),
            DLPackError::NullTensor
        );
    }

    #[test]
    fn another_major_version_is_refused_and_left_to_the_caller() {
        let counter = AtomicUsize::new(0);
        let mut t = fake(&counter, CUDA0, DType::F32, &[4], None, 0);
        t.versioned.version = DLPackVersion { major: 2, minor: 0 };
        // SAFETY: only `version` is read before the refusal.
        let refused = unsafe { DLPackTensor::from_raw_versioned(&mut t.versioned) }.unwrap_err();
        assert_eq!(
            refused,
            DLPackError::UnsupportedVersion(DLPackVersion { major: 2, minor: 0 })
        );
        assert_eq!(
            refused.to_string(),
            "DLPack tensor of ABI version 2.0; this crate reads 1.x"
        );
        assert_eq!(counter.load(Ordering::SeqCst), 0, "the deleter is the caller's to call");
        // A newer minor version is the same ABI.
        t.versioned.version = DLPackVersion { major: 1, minor: 3 };
        // SAFETY: `t` outlives the owned tensor.
        let tensor = unsafe { DLPackTensor::from_raw_versioned(&mut t.versioned) }.unwrap();
        assert_eq!(tensor.version(), Some(DLPackVersion { major: 1, minor: 3 }));
        drop(tensor);
        assert_eq!(counter.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn a_tensor_without_deleter_is_dropped_quietly() {
        let counter = AtomicUsize::new(0);
        let mut t = fake(&counter, CUDA0, DType::U8, &[4], None, 0);
        t.legacy.deleter = None;
        // SAFETY: `t` outlives the owned tensor.
        drop(unsafe { DLPackTensor::from_raw(&mut t.legacy) }.unwrap());
        assert_eq!(counter.load(Ordering::SeqCst), 0);
    }

    #[test]
    fn flags_and_errors_read_well() {
        assert!(DLPackFlags(3).contains(DLPackFlags::READ_ONLY));
        assert!(!DLPackFlags::IS_COPIED.contains(DLPackFlags::READ_ONLY));
        assert!(DLPackFlags::NONE.contains(DLPackFlags::NONE));
        let cpu = DLDevice {
            device_type: DLDeviceType::CPU,
            device_id: 0,
        };
        assert_eq!(
            DLPackError::NotCuda(cpu).to_string(),
            "the DLPack tensor is in CPU memory (device 0), not CUDA device memory"
        );
        assert_eq!(DLDeviceType(99).to_string(), "DLPack device type 99");
        let error: Error = DLPackError::ReadOnly.into();
        assert!(matches!(error, Error::DLPack(DLPackError::ReadOnly)));
    }
}
