//! DLPack exchange: the `DLManagedTensor` structures of the DLPack specification (v0.8 ABI,
//! the unversioned one every framework accepts), export of a [`DeviceArray`] and import of a
//! tensor another library made.

use std::ffi::c_void;
use std::ptr;

use cuda_driver::Stream;
use cuda_sys::driver::CUdeviceptr;

use super::device_array::{shape_len, DeviceArray, Storage};
use super::dtype::{DType, Element};
use super::pool::StreamUses;
use crate::error::{Error, Result};

/// Where a tensor lives (`DLDeviceType`). Only the values this crate uses or checks are named.
#[repr(transparent)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct DLDeviceType(pub i32);

impl DLDeviceType {
    /// Host memory.
    pub const CPU: DLDeviceType = DLDeviceType(1);
    /// CUDA device memory.
    pub const CUDA: DLDeviceType = DLDeviceType(2);
    /// Pinned host memory (`cudaMallocHost`).
    pub const CUDA_HOST: DLDeviceType = DLDeviceType(3);
    /// CUDA managed memory.
    pub const CUDA_MANAGED: DLDeviceType = DLDeviceType(13);
}

/// A device: type and ordinal.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct DLDevice {
    /// The kind of memory.
    pub device_type: DLDeviceType,
    /// The device ordinal.
    pub device_id: i32,
}

/// The class of an element type (`DLDataTypeCode`).
#[repr(transparent)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct DLDataTypeCode(pub u8);

impl DLDataTypeCode {
    /// Signed integers.
    pub const INT: DLDataTypeCode = DLDataTypeCode(0);
    /// Unsigned integers.
    pub const UINT: DLDataTypeCode = DLDataTypeCode(1);
    /// IEEE floating point.
    pub const FLOAT: DLDataTypeCode = DLDataTypeCode(2);
    /// bfloat16.
    pub const BFLOAT: DLDataTypeCode = DLDataTypeCode(4);
    /// Complex numbers.
    pub const COMPLEX: DLDataTypeCode = DLDataTypeCode(5);
    /// Booleans.
    pub const BOOL: DLDataTypeCode = DLDataTypeCode(6);
}

/// An element type: class, bits and vector lanes.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct DLDataType {
    /// The class.
    pub code: DLDataTypeCode,
    /// Bits per lane.
    pub bits: u8,
    /// Lanes (1 for scalars).
    pub lanes: u16,
}

impl From<DType> for DLDataType {
    fn from(dtype: DType) -> Self {
        let code = if dtype == DType::BF16 {
            DLDataTypeCode::BFLOAT
        } else if dtype == DType::Bool {
            DLDataTypeCode::BOOL
        } else if dtype.is_float() {
            DLDataTypeCode::FLOAT
        } else if dtype.is_signed_int() {
            DLDataTypeCode::INT
        } else {
            DLDataTypeCode::UINT
        };
        DLDataType {
            code,
            bits: (dtype.size() * 8) as u8,
            lanes: 1,
        }
    }
}

/// A tensor's description (`DLTensor`); it owns nothing.
#[repr(C)]
#[derive(Debug)]
pub struct DLTensor {
    /// Base address (plus `byte_offset` is the first element).
    pub data: *mut c_void,
    /// Where the memory is.
    pub device: DLDevice,
    /// Number of dimensions.
    pub ndim: i32,
    /// Element type.
    pub dtype: DLDataType,
    /// `ndim` extents.
    pub shape: *mut i64,
    /// `ndim` strides in elements, or null for compact row-major.
    pub strides: *mut i64,
    /// Bytes from `data` to the first element.
    pub byte_offset: u64,
}

/// A tensor together with its owner's context and the function that releases it
/// (`DLManagedTensor`). The consumer calls `deleter` once when done.
#[repr(C)]
#[derive(Debug)]
pub struct DLManagedTensor {
    /// The tensor.
    pub dl_tensor: DLTensor,
    /// The producer's data for `deleter`.
    pub manager_ctx: *mut c_void,
    /// Releases the tensor (may be null for tensors that need no release).
    pub deleter: Option<unsafe extern "C" fn(*mut DLManagedTensor)>,
}

/// What an exported tensor owns: the array and the shape and strides the tensor points into.
struct Export<T: Element> {
    managed: DLManagedTensor,
    _array: DeviceArray<T>,
    _shape: Vec<i64>,
    _strides: Vec<i64>,
}

unsafe extern "C" fn delete_export<T: Element>(tensor: *mut DLManagedTensor) {
    if tensor.is_null() {
        return;
    }
    // SAFETY: `tensor` came from `into_dlpack`, where `manager_ctx` is the leaked `Box<Export<T>>`
    // holding it; DLPack calls the deleter once.
    let export = unsafe { Box::from_raw((*tensor).manager_ctx.cast::<Export<T>>()) };
    // Dropping the array returns its memory to the pool, after the streams that used it.
    drop(export);
}

impl<T: Element> DeviceArray<T> {
    /// Exports the array as a DLPack tensor, giving up ownership: its memory goes back to the
    /// pool (in stream order) when the consumer calls the tensor's `deleter`. When the consumer
    /// works on `consumer_stream` (same context), that stream is first made to wait for the
    /// array's stream, and the memory is freed only after the consumer's work queued on it by
    /// the time of the deleter call. Without one, the consumer must synchronise with
    /// [`stream`](Self::stream) itself.
    pub fn into_dlpack(self, consumer_stream: Option<&Stream>) -> Result<*mut DLManagedTensor> {
        if let Some(stream) = consumer_stream {
            self.note_use(stream)?;
        }
        let device_id = self.context().device().ordinal() as i32;
        let mut shape: Vec<i64> = self.shape().iter().map(|&d| d as i64).collect();
        let mut strides: Vec<i64> = self.strides().iter().map(|&s| s as i64).collect();
        let ndim = shape.len() as i32;
        // SAFETY: the address is handed out together with ownership of the array.
        let data = unsafe { self.as_raw() } as *mut c_void;
        let managed = DLManagedTensor {
            dl_tensor: DLTensor {
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
            },
            manager_ctx: ptr::null_mut(),
            deleter: Some(delete_export::<T>),
        };
        let export = Box::into_raw(Box::new(Export {
            managed,
            _array: self,
            _shape: shape,
            _strides: strides,
        }));
        // SAFETY: `export` is a valid, uniquely owned box until the deleter takes it back; the
        // vectors' buffers do not move when the vectors do.
        unsafe {
            (*export).managed.manager_ctx = export.cast();
            Ok(ptr::addr_of_mut!((*export).managed))
        }
    }

    /// Takes ownership of a DLPack tensor of CUDA memory of `stream`'s device, as an array
    /// ordered on `stream`. Its `deleter` is called when the array is dropped, after `stream`
    /// (and other streams that used the array) have finished their work on it. Wrong device,
    /// type, layout (only compact row-major is accepted) or an empty tensor are errors, and the
    /// tensor is then left to the caller.
    ///
    /// # Safety
    /// `tensor` must point to a valid `DLManagedTensor` whose memory holds the elements its
    /// shape says, stays valid until its deleter is called, may be used on `stream` once the
    /// producer's queued work is ordered before it (the caller's duty), is not used by anyone
    /// else meanwhile, and whose deleter may be called from any thread.
    pub unsafe fn from_dlpack(tensor: *mut DLManagedTensor, stream: &Stream) -> Result<Self> {
        if tensor.is_null() {
            return Err(Error::InvalidValue("null DLPack tensor".into()));
        }
        // SAFETY: the caller promises a valid tensor.
        let t = unsafe { &(*tensor).dl_tensor };
        let device = stream.context().device().ordinal() as i32;
        if t.device.device_type != DLDeviceType::CUDA || t.device.device_id != device {
            return Err(Error::InvalidValue(format!(
                "DLPack tensor on device {:?} #{}, expected CUDA device #{device}",
                t.device.device_type, t.device.device_id
            )));
        }
        let expected: DLDataType = T::DTYPE.into();
        if t.dtype != expected {
            return Err(Error::InvalidValue(format!(
                "DLPack tensor of type {:?}, expected {expected:?} ({})",
                t.dtype,
                T::DTYPE
            )));
        }
        let ndim = usize::try_from(t.ndim).map_err(|_| Error::InvalidValue("negative DLPack ndim".into()))?;
        let shape: Vec<usize> = if ndim == 0 {
            Vec::new()
        } else {
            // SAFETY: the caller promises `shape` holds `ndim` extents.
            let extents = unsafe { std::slice::from_raw_parts(t.shape, ndim) };
            extents
                .iter()
                .map(|&d| usize::try_from(d).map_err(|_| Error::InvalidValue(format!("negative extent {d}"))))
                .collect::<Result<_>>()?
        };
        shape_len(&shape)?;
        if !t.strides.is_null() && ndim > 0 {
            // SAFETY: the caller promises non-null `strides` holds `ndim` values.
            let strides = unsafe { std::slice::from_raw_parts(t.strides, ndim) };
            let mut expected = 1i64;
            for axis in (0..ndim).rev() {
                if shape[axis] != 1 && strides[axis] != expected {
                    return Err(Error::InvalidValue(format!(
                        "DLPack tensor strides {strides:?} are not compact row-major for shape {shape:?}"
                    )));
                }
                expected *= shape[axis] as i64;
            }
        }
        let ptr = (t.data as CUdeviceptr)
            .checked_add(t.byte_offset)
            .ok_or_else(|| Error::InvalidValue("DLPack data address overflows".into()))?;
        if ptr % std::mem::align_of::<T>() as CUdeviceptr != 0 {
            return Err(Error::InvalidValue(format!(
                "DLPack data at {ptr:#x} is not aligned for {}",
                T::DTYPE
            )));
        }
        let storage = Storage::Imported(ImportedTensor {
            tensor,
            uses: StreamUses::new(stream.clone()),
        });
        DeviceArray::from_storage(ptr, shape, None, storage)
    }
}

/// A tensor imported with [`DeviceArray::from_dlpack`].
pub(crate) struct ImportedTensor {
    tensor: *mut DLManagedTensor,
    uses: StreamUses,
}

impl ImportedTensor {
    pub(crate) fn uses(&self) -> &StreamUses {
        &self.uses
    }
}

impl Drop for ImportedTensor {
    fn drop(&mut self) {
        // The producer frees on its own terms: wait for every stream that used the memory.
        let ordered = self.uses.join_others();
        if let Err(error) = self.uses.owner().synchronize() {
            eprintln!("cuda-core: waiting before releasing a DLPack tensor failed ({error}); it is leaked");
            return;
        }
        if !ordered {
            eprintln!("cuda-core: a DLPack tensor could not be ordered after its last use; it is leaked");
            return;
        }
        // SAFETY: `from_dlpack`'s caller gave this array the tensor, whose deleter is called once,
        // here, after all work using the memory has finished.
        unsafe {
            if let Some(deleter) = (*self.tensor).deleter {
                deleter(self.tensor);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::mem::{align_of, offset_of, size_of};

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
    }

    #[test]
    fn element_types_map_to_dlpack_codes() {
        let f32_type: DLDataType = DType::F32.into();
        assert_eq!(
            (f32_type.code, f32_type.bits, f32_type.lanes),
            (DLDataTypeCode::FLOAT, 32, 1)
        );
        let i64_type: DLDataType = DType::I64.into();
        assert_eq!((i64_type.code, i64_type.bits), (DLDataTypeCode::INT, 64));
        let u8_type: DLDataType = DType::U8.into();
        assert_eq!((u8_type.code, u8_type.bits), (DLDataTypeCode::UINT, 8));
    }
}
