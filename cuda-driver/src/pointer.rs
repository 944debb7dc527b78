//! What the driver knows about an address (`cuPointerGetAttribute`): the kind of memory, its
//! device and the allocation it lies in. Looking an address up never dereferences it, so any
//! number may be asked about; one the driver does not know is its `CUDA_ERROR_INVALID_VALUE`.

use std::ffi::c_void;

use cuda_sys::driver::{CUdeviceptr, CUmemorytype, CUpointer_attribute, CUresult};

use crate::error::{check, Result};
use crate::Context;

/// The kind of memory an address lies in (`CUmemorytype`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MemoryType {
    /// Host memory (pinned, registered, or mapped into the device's address space).
    Host,
    /// Device memory (`cuMemAlloc`, pools, mapped virtual memory; managed memory may report it).
    Device,
    /// A CUDA array.
    Array,
    /// Unified memory.
    Unified,
    /// A value this crate does not name.
    Other(u32),
}

impl MemoryType {
    fn from_raw(raw: u32) -> Self {
        match CUmemorytype(raw) {
            CUmemorytype::CU_MEMORYTYPE_HOST => MemoryType::Host,
            CUmemorytype::CU_MEMORYTYPE_DEVICE => MemoryType::Device,
            CUmemorytype::CU_MEMORYTYPE_ARRAY => MemoryType::Array,
            CUmemorytype::CU_MEMORYTYPE_UNIFIED => MemoryType::Unified,
            _ => MemoryType::Other(raw),
        }
    }
}

/// What the driver knows about one address: see [`PointerInfo::query`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PointerInfo {
    /// The kind of memory (`CU_POINTER_ATTRIBUTE_MEMORY_TYPE`).
    pub memory_type: MemoryType,
    /// Whether it is managed memory (`CU_POINTER_ATTRIBUTE_IS_MANAGED`).
    pub is_managed: bool,
    /// The ordinal of the device the memory belongs to (`CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL`).
    pub device_ordinal: i32,
    /// The first address of the allocation (or mapping) the address lies in
    /// (`CU_POINTER_ATTRIBUTE_RANGE_START_ADDR`).
    pub range_start: CUdeviceptr,
    /// Its size in bytes (`CU_POINTER_ATTRIBUTE_RANGE_SIZE`). For virtual memory this is the
    /// reserved range, of which only parts may be mapped.
    pub range_size: usize,
    /// Whether the address is backed by memory (`CU_POINTER_ATTRIBUTE_MAPPED`): false in a
    /// reserved range where nothing is mapped (true when the driver does not answer).
    pub mapped: bool,
    /// The start and size of the mapping the address lies in
    /// (`CU_POINTER_ATTRIBUTE_MAPPING_BASE_ADDR`, `CU_POINTER_ATTRIBUTE_MAPPING_SIZE`), when
    /// the driver tells them (drivers before CUDA 12.x do not) and they contain the address.
    pub mapping: Option<(CUdeviceptr, usize)>,
}

impl PointerInfo {
    /// Looks `address` up, with `context` made current. The address is not dereferenced: any
    /// value may be asked about, and one the driver does not know (pageable host memory, freed
    /// memory, a made-up number) is the driver's `CUDA_ERROR_INVALID_VALUE`.
    pub fn query(context: &Context, address: CUdeviceptr) -> Result<Self> {
        let driver = context.bind()?;
        let get = driver.cuPointerGetAttribute()?;
        let (mut memory_type, mut is_managed, mut device_ordinal) = (0u32, 0i32, 0i32);
        let (mut range_start, mut range_size): (CUdeviceptr, usize) = (0, 0);
        let queries: [(*mut c_void, CUpointer_attribute); 5] = [
            (
                (&mut memory_type as *mut u32).cast(),
                CUpointer_attribute::CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
            ),
            (
                (&mut is_managed as *mut i32).cast(),
                CUpointer_attribute::CU_POINTER_ATTRIBUTE_IS_MANAGED,
            ),
            (
                (&mut device_ordinal as *mut i32).cast(),
                CUpointer_attribute::CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
            ),
            (
                (&mut range_start as *mut CUdeviceptr).cast(),
                CUpointer_attribute::CU_POINTER_ATTRIBUTE_RANGE_START_ADDR,
            ),
            (
                (&mut range_size as *mut usize).cast(),
                CUpointer_attribute::CU_POINTER_ATTRIBUTE_RANGE_SIZE,
            ),
        ];
        for (data, attribute) in queries {
            // SAFETY: `data` points to a live local of the attribute's type (32-bit memory type,
            // `int` flags and ordinal, a `CUdeviceptr` start, a `size_t` size); the address is
            // only looked up, never dereferenced.
            check(unsafe { get(data, attribute, address) })?;
        }
        // Attributes that not every driver answers for every kind of memory: an unanswered
        // `MAPPED` counts as mapped (the answers above already placed the address in memory the
        // driver knows), an unanswered mapping as none.
        let mut mapped = 1i32;
        // SAFETY: as above, an `int` out-value.
        let answered = unsafe {
            get(
                (&mut mapped as *mut i32).cast(),
                CUpointer_attribute::CU_POINTER_ATTRIBUTE_MAPPED,
                address,
            )
        } == CUresult::CUDA_SUCCESS;
        let (mut mapping_base, mut mapping_size): (CUdeviceptr, usize) = (0, 0);
        // SAFETY: as above, a `CUdeviceptr` and a `size_t` out-value.
        let mapping = unsafe {
            get(
                (&mut mapping_base as *mut CUdeviceptr).cast(),
                CUpointer_attribute::CU_POINTER_ATTRIBUTE_MAPPING_BASE_ADDR,
                address,
            ) == CUresult::CUDA_SUCCESS
                && get(
                    (&mut mapping_size as *mut usize).cast(),
                    CUpointer_attribute::CU_POINTER_ATTRIBUTE_MAPPING_SIZE,
                    address,
                ) == CUresult::CUDA_SUCCESS
        };
        let contains = mapping_base <= address && address - mapping_base < mapping_size as CUdeviceptr;
        Ok(PointerInfo {
            memory_type: MemoryType::from_raw(memory_type),
            is_managed: is_managed != 0,
            device_ordinal,
            range_start,
            range_size,
            mapped: !answered || mapped != 0,
            mapping: (mapping && contains).then_some((mapping_base, mapping_size)),
        })
    }

    /// The first address past the allocation (or reserved range), saturating at the top of
    /// the address space.
    pub fn range_end(&self) -> CUdeviceptr {
        self.range_start.saturating_add(self.range_size as CUdeviceptr)
    }

    /// The first address past the memory known to be backed from the queried address on:
    /// the end of its mapping when the driver tells it, else of its range; never past the
    /// range's end.
    pub fn backed_end(&self) -> CUdeviceptr {
        match self.mapping {
            Some((base, size)) => base.saturating_add(size as CUdeviceptr).min(self.range_end()),
            None => self.range_end(),
        }
    }
}
