//! CUDA arrays (`cuArray3DCreate`: opaque, texture-cache friendly layouts
//! of 1-D, 2-D or 3-D elements) and the objects kernels read and write them
//! through: texture objects (`cuTexObjectCreate`: sampled, with addressing
//! and filtering) and surface objects (`cuSurfObjectCreate`: read and
//! written by coordinates).
//!
//! ```no_run
//! use cuda_driver::{ArrayFlags, CudaArray, Device, FilterMode, SurfaceObject, TextureDesc, TextureObject};
//!
//! # fn main() -> cuda_driver::Result<()> {
//! let context = Device::get(0)?.primary_context()?;
//! // A 64 x 32 image of floats.
//! let image: Vec<f32> = (0..64 * 32).map(|i| i as f32).collect();
//! let array = CudaArray::<f32>::new(&context, (64, 32, 0), ArrayFlags::SURFACE_LOAD_STORE)?;
//! array.copy_from_host(&image)?;
//! // Kernels take these as `cudaTextureObject_t` / `cudaSurfaceObject_t` arguments.
//! let texture = TextureObject::new(&array, &TextureDesc { filter: FilterMode::Linear, ..TextureDesc::default() })?;
//! let surface = SurfaceObject::new(&array)?;
//! assert_eq!(array.to_vec()?, image);
//! # let _ = (texture, surface);
//! # Ok(())
//! # }
//! ```

use std::ffi::c_void;
use std::marker::PhantomData;
use std::mem::size_of;
use std::ptr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use cuda_sys::driver::{
    CUDA_RESOURCE_DESC_st__bindgen_ty_1, CUDA_RESOURCE_DESC_st__bindgen_ty_1__bindgen_ty_1, CUaddress_mode, CUarray,
    CUarray_format, CUfilter_mode, CUmemorytype, CUresourcetype, CUsurfObject, CUtexObject, CUDA_ARRAY3D_DESCRIPTOR,
    CUDA_MEMCPY3D, CUDA_RESOURCE_DESC, CUDA_TEXTURE_DESC, CU_TRSF_NORMALIZED_COORDINATES, CU_TRSF_READ_AS_INTEGER,
};

use crate::capture::release_when_safe;
use crate::error::{check, check_resolved, Error, Result};
use crate::launch::KernelArg;
use crate::{Context, DeviceCopy, Stream};

/// `CUDA_ARRAY3D_SURFACE_LDST` of `cuda.h` (a macro, so not in the bindings).
const ARRAY3D_SURFACE_LDST: u32 = 0x02;

/// An element type a CUDA array can hold: its channel format and count.
///
/// # Safety
/// `FORMAT` and `CHANNELS` must describe exactly the layout of `Self`
/// (`CHANNELS` values of the format's size, nothing else), since copies
/// move `size_of::<Self>()` bytes per element.
pub unsafe trait ArrayElement: DeviceCopy {
    /// The channel format.
    const FORMAT: CUarray_format;
    /// Channels per element: 1, 2 or 4.
    const CHANNELS: u32;
}

macro_rules! array_elements {
    ($($ty:ty => $format:ident),* $(,)?) => {
        $(
            // SAFETY: one, two or four channels of exactly the format's size, packed.
            unsafe impl ArrayElement for $ty {
                const FORMAT: CUarray_format = CUarray_format::$format;
                const CHANNELS: u32 = 1;
            }
            // SAFETY: as above.
            unsafe impl ArrayElement for [$ty; 2] {
                const FORMAT: CUarray_format = CUarray_format::$format;
                const CHANNELS: u32 = 2;
            }
            // SAFETY: as above.
            unsafe impl ArrayElement for [$ty; 4] {
                const FORMAT: CUarray_format = CUarray_format::$format;
                const CHANNELS: u32 = 4;
            }
        )*
    };
}

array_elements!(
    u8 => CU_AD_FORMAT_UNSIGNED_INT8,
    u16 => CU_AD_FORMAT_UNSIGNED_INT16,
    u32 => CU_AD_FORMAT_UNSIGNED_INT32,
    i8 => CU_AD_FORMAT_SIGNED_INT8,
    i16 => CU_AD_FORMAT_SIGNED_INT16,
    i32 => CU_AD_FORMAT_SIGNED_INT32,
    half::f16 => CU_AD_FORMAT_HALF,
    f32 => CU_AD_FORMAT_FLOAT,
);

bitflags::bitflags! {
    /// How a [`CudaArray`] may be used (`CUDA_ARRAY3D_*` flags).
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
    pub struct ArrayFlags: u32 {
        /// Surface objects may read and write it (`CUDA_ARRAY3D_SURFACE_LDST`).
        const SURFACE_LOAD_STORE = ARRAY3D_SURFACE_LDST;
    }
}

/// A CUDA array of elements `T`: 1-D `(width, 0, 0)`, 2-D
/// `(width, height, 0)` or 3-D `(width, height, depth)`, in an opaque layout
/// for texture and surface access. Cheap to clone (clones share the array);
/// destroyed when the last clone and the last texture or surface object of
/// it are gone, after the work that used them.
#[derive(Clone)]
pub struct CudaArray<T: ArrayElement> {
    inner: Arc<ArrayInner>,
    _marker: PhantomData<T>,
}

struct ArrayInner {
    raw: CUarray,
    context: Context,
    extent: (usize, usize, usize),
    flags: ArrayFlags,
    used_by_stream: AtomicBool,
}

// SAFETY: a CUarray handle may be used from any thread; every use makes its context current; the
// flag is atomic.
unsafe impl Send for ArrayInner {}
// SAFETY: as above; shared access only reads the handle and the description.
unsafe impl Sync for ArrayInner {}

impl<T: ArrayElement> CudaArray<T> {
    /// A new array of `extent` elements, contents unspecified. A zero width,
    /// or a depth without a height, is [`Error::InvalidValue`]; sizes past
    /// the device's limits are the driver's error.
    pub fn new(context: &Context, extent: (usize, usize, usize), flags: ArrayFlags) -> Result<Self> {
        let (width, height, depth) = extent;
        if width == 0 || (height == 0 && depth != 0) {
            return Err(Error::InvalidValue(format!(
                "array extent {extent:?}: the width must be non-zero, and a depth needs a height"
            )));
        }
        let descriptor = CUDA_ARRAY3D_DESCRIPTOR {
            Width: width,
            Height: height,
            Depth: depth,
            Format: T::FORMAT,
            NumChannels: T::CHANNELS,
            Flags: flags.bits(),
        };
        let driver = context.bind()?;
        let mut raw = ptr::null_mut();
        // SAFETY: valid out-pointer and descriptor; the context is current.
        check(unsafe { driver.cuArray3DCreate_v2()?(&mut raw, &descriptor) })?;
        Ok(CudaArray {
            inner: Arc::new(ArrayInner {
                raw,
                context: context.clone(),
                extent,
                flags,
                used_by_stream: AtomicBool::new(false),
            }),
            _marker: PhantomData,
        })
    }

    /// `(width, height, depth)` as created (0 for the dimensions it lacks).
    pub fn extent(&self) -> (usize, usize, usize) {
        self.inner.extent
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        let (width, height, depth) = self.inner.extent;
        width * height.max(1) * depth.max(1)
    }

    /// Always false: an array holds at least one element.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The flags it was created with.
    pub fn flags(&self) -> ArrayFlags {
        self.inner.flags
    }

    /// The context the array belongs to.
    pub fn context(&self) -> &Context {
        &self.inner.context
    }

    /// Fills the whole array from packed host data (rows of `width`, then
    /// slices of `height` rows), waiting until done.
    pub fn copy_from_host(&self, data: &[T]) -> Result<()> {
        self.copy_host("copy_from_host", data.as_ptr().cast_mut().cast(), data.len(), false)
    }

    /// Reads the whole array into packed host memory, waiting until done.
    pub fn copy_to_host(&self, destination: &mut [T]) -> Result<()> {
        self.copy_host("copy_to_host", destination.as_mut_ptr().cast(), destination.len(), true)
    }

    /// The whole array, packed, in a new `Vec`.
    pub fn to_vec(&self) -> Result<Vec<T>> {
        let mut out = Vec::<T>::with_capacity(self.len());
        self.copy_host("to_vec", out.as_mut_ptr().cast(), self.len(), true)?;
        // SAFETY: the copy wrote all `len` elements; any bytes are a valid `T` (DeviceCopy).
        unsafe { out.set_len(self.len()) };
        Ok(out)
    }

    /// A synchronous `cuMemcpy3D` of the whole array to or from `len`
    /// packed elements at `host`.
    fn copy_host(&self, what: &str, host: *mut c_void, len: usize, to_host: bool) -> Result<()> {
        if len != self.len() {
            return Err(Error::InvalidValue(format!(
                "{what}: the array holds {} elements, {len} were given",
                self.len()
            )));
        }
        let (width, height, depth) = self.inner.extent;
        let row = width * size_of::<T>();
        let (host_type, array_type) = (CUmemorytype::CU_MEMORYTYPE_HOST, CUmemorytype::CU_MEMORYTYPE_ARRAY);
        let (src_array, dst_array) = if to_host {
            (self.inner.raw, ptr::null_mut())
        } else {
            (ptr::null_mut(), self.inner.raw)
        };
        let copy = CUDA_MEMCPY3D {
            srcXInBytes: 0,
            srcY: 0,
            srcZ: 0,
            srcLOD: 0,
            srcMemoryType: if to_host { array_type } else { host_type },
            srcHost: if to_host { ptr::null() } else { host.cast_const() },
            srcDevice: 0,
            srcArray: src_array,
            reserved0: ptr::null_mut(),
            srcPitch: row,
            srcHeight: height.max(1),
            dstXInBytes: 0,
            dstY: 0,
            dstZ: 0,
            dstLOD: 0,
            dstMemoryType: if to_host { host_type } else { array_type },
            dstHost: if to_host { host } else { ptr::null_mut() },
            dstDevice: 0,
            dstArray: dst_array,
            reserved1: ptr::null_mut(),
            dstPitch: row,
            dstHeight: height.max(1),
            WidthInBytes: row,
            Height: height.max(1),
            Depth: depth.max(1),
        };
        let driver = self.inner.context.bind()?;
        // SAFETY: the host side holds exactly the array's elements, packed (checked above), and is
        // readable (to the array) or writable (to the host); the array is alive; the copy is
        // synchronous, so the host memory is not used after the call.
        check(unsafe { driver.cuMemcpy3D_v2()?(&copy) })
    }

    /// The driver's handle.
    ///
    /// # Safety
    /// Valid while this array (or a clone, or an object of it) lives; the
    /// caller must not destroy it.
    pub unsafe fn as_raw(&self) -> CUarray {
        self.inner.raw
    }

    fn resource(&self) -> CUDA_RESOURCE_DESC {
        let mut res = CUDA_RESOURCE_DESC_st__bindgen_ty_1 {
            reserved: Default::default(),
        };
        res.array = CUDA_RESOURCE_DESC_st__bindgen_ty_1__bindgen_ty_1 { hArray: self.inner.raw };
        CUDA_RESOURCE_DESC {
            resType: CUresourcetype::CU_RESOURCE_TYPE_ARRAY,
            res,
            flags: 0,
        }
    }
}

/// An array handle handed to a deferred release.
struct ArrayHandle(CUarray);

// SAFETY: the handle is only passed to `cuArrayDestroy`, which any thread may call.
unsafe impl Send for ArrayHandle {}

impl ArrayHandle {
    fn into_raw(self) -> CUarray {
        self.0
    }
}

impl Drop for ArrayInner {
    /// Destroys the array after the work that used it (while a capture is
    /// active, when it ends); a failure is recorded on the context.
    fn drop(&mut self) {
        let (array, used) = (ArrayHandle(self.raw), *self.used_by_stream.get_mut());
        release_when_safe(&self.context, "cuArrayDestroy", used, move |driver, context| {
            let raw = array.into_raw();
            // SAFETY: this was the last owner (every texture and surface object holds a clone), and
            // no work uses the array any more.
            let result = driver.cuArrayDestroy().map(|destroy| unsafe { destroy(raw) });
            context.record_drop_result("cuArrayDestroy", check_resolved(result));
        });
    }
}

/// What a texture fetch outside the array returns (`CUaddress_mode`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum AddressMode {
    /// The nearest edge element.
    #[default]
    Clamp,
    /// The coordinate wraps around (normalized coordinates only).
    Wrap,
    /// The coordinate is mirrored at the edges (normalized coordinates only).
    Mirror,
    /// Zero.
    Border,
}

/// How a texture fetch between elements is computed (`CUfilter_mode`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum FilterMode {
    /// The nearest element.
    #[default]
    Point,
    /// Linear interpolation of the neighbours (float results only).
    Linear,
}

/// How a [`TextureObject`] samples its array.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct TextureDesc {
    /// Out-of-range behaviour on every axis.
    pub address_mode: AddressMode,
    /// Filtering between elements.
    pub filter: FilterMode,
    /// Coordinates in `[0, 1)` rather than in elements.
    pub normalized_coordinates: bool,
    /// Integer elements are returned as integers rather than as normalized
    /// floats in `[0, 1]` (`[-1, 1]` signed).
    pub read_as_integer: bool,
}

impl TextureDesc {
    fn raw(&self) -> CUDA_TEXTURE_DESC {
        let address = match self.address_mode {
            AddressMode::Clamp => CUaddress_mode::CU_TR_ADDRESS_MODE_CLAMP,
            AddressMode::Wrap => CUaddress_mode::CU_TR_ADDRESS_MODE_WRAP,
            AddressMode::Mirror => CUaddress_mode::CU_TR_ADDRESS_MODE_MIRROR,
            AddressMode::Border => CUaddress_mode::CU_TR_ADDRESS_MODE_BORDER,
        };
        let filter = match self.filter {
            FilterMode::Point => CUfilter_mode::CU_TR_FILTER_MODE_POINT,
            FilterMode::Linear => CUfilter_mode::CU_TR_FILTER_MODE_LINEAR,
        };
        let mut flags = 0;
        if self.normalized_coordinates {
            flags |= CU_TRSF_NORMALIZED_COORDINATES;
        }
        if self.read_as_integer {
            flags |= CU_TRSF_READ_AS_INTEGER;
        }
        CUDA_TEXTURE_DESC {
            addressMode: [address; 3],
            filterMode: filter,
            flags,
            maxAnisotropy: 0,
            mipmapFilterMode: CUfilter_mode::CU_TR_FILTER_MODE_POINT,
            mipmapLevelBias: 0.0,
            minMipmapLevelClamp: 0.0,
            maxMipmapLevelClamp: 0.0,
            borderColor: [0.0; 4],
            reserved: [0; 12],
        }
    }
}

/// Marks the array as used by `stream`'s work, for its destructor.
fn note_use(array: &ArrayInner, context: &Context, what: &'static str) -> Result<()> {
    array.context.expect_same(context, what, "function")?;
    array.used_by_stream.store(true, Ordering::Relaxed);
    Ok(())
}

/// A texture object over a [`CudaArray`] (`cuTexObjectCreate`): kernels
/// sample it through a `cudaTextureObject_t` argument. Keeps the array
/// alive; destroyed on drop, after the work that used it.
pub struct TextureObject {
    raw: CUtexObject,
    array: Arc<ArrayInner>,
}

/// A surface object over a [`CudaArray`] created with
/// [`ArrayFlags::SURFACE_LOAD_STORE`] (`cuSurfObjectCreate`): kernels read
/// and write it through a `cudaSurfaceObject_t` argument. Keeps the array
/// alive; destroyed on drop, after the work that used it.
pub struct SurfaceObject {
    raw: CUsurfObject,
    array: Arc<ArrayInner>,
}

impl TextureObject {
    /// Samples `array` as `desc` says. Combinations the hardware does not
    /// support (linear filtering of integers read as integers, say) are the
    /// driver's error.
    pub fn new<T: ArrayElement>(array: &CudaArray<T>, desc: &TextureDesc) -> Result<TextureObject> {
        let (resource, texture) = (array.resource(), desc.raw());
        let driver = array.inner.context.bind()?;
        let mut raw = 0;
        // SAFETY: valid out-pointer and descriptors naming the live array; no view descriptor.
        check(unsafe { driver.cuTexObjectCreate()?(&mut raw, &resource, &texture, ptr::null()) })?;
        Ok(TextureObject {
            raw,
            array: array.inner.clone(),
        })
    }

    /// The handle kernels receive (`cudaTextureObject_t`).
    pub fn handle(&self) -> CUtexObject {
        self.raw
    }
}

impl SurfaceObject {
    /// Reads and writes `array`, which must have been created with
    /// [`ArrayFlags::SURFACE_LOAD_STORE`] ([`Error::InvalidValue`] if not).
    pub fn new<T: ArrayElement>(array: &CudaArray<T>) -> Result<SurfaceObject> {
        if !array.flags().contains(ArrayFlags::SURFACE_LOAD_STORE) {
            return Err(Error::InvalidValue(
                "a surface needs an array created with ArrayFlags::SURFACE_LOAD_STORE".into(),
            ));
        }
        let resource = array.resource();
        let driver = array.inner.context.bind()?;
        let mut raw = 0;
        // SAFETY: valid out-pointer and a descriptor naming the live array.
        check(unsafe { driver.cuSurfObjectCreate()?(&mut raw, &resource) })?;
        Ok(SurfaceObject {
            raw,
            array: array.inner.clone(),
        })
    }

    /// The handle kernels receive (`cudaSurfaceObject_t`).
    pub fn handle(&self) -> CUsurfObject {
        self.raw
    }
}

macro_rules! object_impls {
    ($ty:ident, $what:literal, $destroy:ident) => {
        // SAFETY: the handle is a plain 64-bit value the driver accepts from any thread; the array
        // is shared through an `Arc` of a `Sync` type.
        unsafe impl Send for $ty {}
        // SAFETY: as above; shared access only reads the handle.
        unsafe impl Sync for $ty {}

        // SAFETY: points at the 64-bit handle, which lives as long as the borrow; `check_use` refuses
        // other contexts' kernels and notes the array's use by a stream.
        unsafe impl KernelArg for &$ty {
            #[inline]
            fn param_ptr(&self) -> *mut c_void {
                (&self.raw as *const u64).cast_mut().cast()
            }

            #[inline]
            fn param_size(&self) -> usize {
                size_of::<u64>()
            }

            #[inline]
            fn check_use(&self, context: &Context, _stream: &Stream) -> Result<()> {
                note_use(&self.array, context, $what)
            }
        }

        impl Drop for $ty {
            /// Destroys the object after the work that used its array (while a
            /// capture is active, when it ends), then lets the array go.
            fn drop(&mut self) {
                let (raw, array) = (self.raw, self.array.clone());
                let used = array.used_by_stream.load(Ordering::Relaxed);
                release_when_safe(
                    &self.array.context,
                    stringify!($destroy),
                    used,
                    move |driver, context| {
                        // SAFETY: this object owned the handle and no work uses it any more.
                        let result = driver.$destroy().map(|destroy| unsafe { destroy(raw) });
                        context.record_drop_result(stringify!($destroy), check_resolved(result));
                        drop(array);
                    },
                );
            }
        }

        impl std::fmt::Debug for $ty {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.debug_struct(stringify!($ty))
                    .field("handle", &format_args!("{:#x}", self.raw))
                    .field("extent", &self.array.extent)
                    .finish()
            }
        }
    };
}

object_impls!(TextureObject, "texture object", cuTexObjectDestroy);
object_impls!(SurfaceObject, "surface object", cuSurfObjectDestroy);

impl<T: ArrayElement> std::fmt::Debug for CudaArray<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CudaArray")
            .field("raw", &self.inner.raw)
            .field("extent", &self.inner.extent)
            .field("flags", &self.inner.flags)
            .finish()
    }
}
