//! CUDA 12's `cudaDeviceProp` read into CUDA 13's: a CUDA 12 runtime fills its own layout
//! (1032 bytes; CUDA 13 removed fields from the middle, such as `clockRate`, and has 1008), so
//! [`Device::properties`](crate::Device::properties) passes it a buffer of that size and copies
//! each field CUDA 13's struct has from where CUDA 12's keeps it. Fields CUDA 12 lacks
//! (`deviceNumaConfig`, `deviceNumaId`, `mpsEnabled`, `hostNumaId`, `gpuPciDeviceID`,
//! `gpuPciSubsystemID`, `hostNumaMultinodeIpcSupported`) stay zero.
//!
//! The offsets and sizes are those of CUDA 12.9's `driver_types.h` on 64-bit Linux (LP64),
//! measured with `offsetof`/`sizeof`; the unit test checks every size against CUDA 13's field.

use std::ffi::{c_int, c_void};
use std::mem::{offset_of, MaybeUninit};

use cuda_sys::runtime::cudaDeviceProp;
use cuda_sys::Runtime;

use crate::error::check;
use crate::Result;

/// The size of CUDA 12's `cudaDeviceProp`.
const CUDA12_SIZE: usize = 1032;

/// CUDA 12's `cudaDeviceProp` as bytes, aligned as the struct (its widest fields are 8 bytes).
#[repr(C, align(8))]
struct Cuda12DeviceProp([u8; CUDA12_SIZE]);

/// One field: its offset in CUDA 13's struct, its offset and size in CUDA 12's.
struct Field {
    offset13: usize,
    offset12: usize,
    size: usize,
}

macro_rules! cuda12_layout {
    ($($field:ident: $offset12:literal, $size:literal;)*) => {
        /// Every field of CUDA 13's struct that CUDA 12's has, in order.
        const FIELDS: &[Field] = &[$(Field {
            offset13: offset_of!(cudaDeviceProp, $field),
            offset12: $offset12,
            size: $size,
        },)*];

        /// Each listed field's size in CUDA 13's struct, for the test.
        #[cfg(test)]
        fn cuda13_sizes(prop: &cudaDeviceProp) -> Vec<(&'static str, usize)> {
            vec![$((stringify!($field), std::mem::size_of_val(&prop.$field)),)*]
        }
    };
}

cuda12_layout! {
        name: 0, 256;
        uuid: 256, 16;
        luid: 272, 8;
        luidDeviceNodeMask: 280, 4;
        totalGlobalMem: 288, 8;
        sharedMemPerBlock: 296, 8;
        regsPerBlock: 304, 4;
        warpSize: 308, 4;
        memPitch: 312, 8;
        maxThreadsPerBlock: 320, 4;
        maxThreadsDim: 324, 12;
        maxGridSize: 336, 12;
        totalConstMem: 352, 8;
        major: 360, 4;
        minor: 364, 4;
        textureAlignment: 368, 8;
        texturePitchAlignment: 376, 8;
        multiProcessorCount: 388, 4;
        integrated: 396, 4;
        canMapHostMemory: 400, 4;
        maxTexture1D: 408, 4;
        maxTexture1DMipmap: 412, 4;
        maxTexture2D: 420, 8;
        maxTexture2DMipmap: 428, 8;
        maxTexture2DLinear: 436, 12;
        maxTexture2DGather: 448, 8;
        maxTexture3D: 456, 12;
        maxTexture3DAlt: 468, 12;
        maxTextureCubemap: 480, 4;
        maxTexture1DLayered: 484, 8;
        maxTexture2DLayered: 492, 12;
        maxTextureCubemapLayered: 504, 8;
        maxSurface1D: 512, 4;
        maxSurface2D: 516, 8;
        maxSurface3D: 524, 12;
        maxSurface1DLayered: 536, 8;
        maxSurface2DLayered: 544, 12;
        maxSurfaceCubemap: 556, 4;
        maxSurfaceCubemapLayered: 560, 8;
        surfaceAlignment: 568, 8;
        concurrentKernels: 576, 4;
        ECCEnabled: 580, 4;
        pciBusID: 584, 4;
        pciDeviceID: 588, 4;
        pciDomainID: 592, 4;
        tccDriver: 596, 4;
        asyncEngineCount: 600, 4;
        unifiedAddressing: 604, 4;
        memoryBusWidth: 612, 4;
        l2CacheSize: 616, 4;
        persistingL2CacheMaxSize: 620, 4;
        maxThreadsPerMultiProcessor: 624, 4;
        streamPrioritiesSupported: 628, 4;
        globalL1CacheSupported: 632, 4;
        localL1CacheSupported: 636, 4;
        sharedMemPerMultiprocessor: 640, 8;
        regsPerMultiprocessor: 648, 4;
        managedMemory: 652, 4;
        isMultiGpuBoard: 656, 4;
        multiGpuBoardGroupID: 660, 4;
        hostNativeAtomicSupported: 664, 4;
        pageableMemoryAccess: 672, 4;
        concurrentManagedAccess: 676, 4;
        computePreemptionSupported: 680, 4;
        canUseHostPointerForRegisteredMem: 684, 4;
        cooperativeLaunch: 688, 4;
        sharedMemPerBlockOptin: 696, 8;
        pageableMemoryAccessUsesHostPageTables: 704, 4;
        directManagedMemAccessFromHost: 708, 4;
        maxBlocksPerMultiProcessor: 712, 4;
        accessPolicyMaxWindowSize: 716, 4;
        reservedSharedMemPerBlock: 720, 8;
        hostRegisterSupported: 728, 4;
        sparseCudaArraySupported: 732, 4;
        hostRegisterReadOnlySupported: 736, 4;
        timelineSemaphoreInteropSupported: 740, 4;
        memoryPoolsSupported: 744, 4;
        gpuDirectRDMASupported: 748, 4;
        gpuDirectRDMAFlushWritesOptions: 752, 4;
        gpuDirectRDMAWritesOrdering: 756, 4;
        memoryPoolSupportedHandleTypes: 760, 4;
        deferredMappingCudaArraySupported: 764, 4;
        ipcEventSupported: 768, 4;
        clusterLaunch: 772, 4;
        unifiedFunctionPointers: 776, 4;
}

/// `cudaGetDeviceProperties` of a CUDA 12 runtime (`cudaGetDeviceProperties_v2`), in CUDA
/// 13's layout.
pub(crate) fn properties(runtime: &Runtime, device: c_int) -> Result<cudaDeviceProp> {
    let get = runtime.cudaGetDeviceProperties_v2()?;
    let mut cuda12 = Cuda12DeviceProp([0; CUDA12_SIZE]);
    // SAFETY: the buffer has the size and alignment of CUDA 12's `cudaDeviceProp`, which this
    // function (resolved from a CUDA 12 runtime only) writes.
    check(runtime, unsafe { get(cuda12.0.as_mut_ptr().cast::<c_void>(), device) })?;
    let mut cuda13 = MaybeUninit::<cudaDeviceProp>::zeroed();
    for field in FIELDS {
        // SAFETY: each field lies inside both structs (the test checks offset plus size against
        // both sizes, and the size against CUDA 13's field); every field is integers or arrays
        // of them, valid for any bytes; the two buffers do not overlap.
        unsafe {
            std::ptr::copy_nonoverlapping(
                cuda12.0.as_ptr().add(field.offset12),
                cuda13.as_mut_ptr().cast::<u8>().add(field.offset13),
                field.size,
            );
        }
    }
    // SAFETY: zero is valid for every field, and the copies wrote whole fields.
    Ok(unsafe { cuda13.assume_init() })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_field_fits_both_layouts_with_cuda_13_sizes() {
        // SAFETY: zero is valid for every field of this plain C struct.
        let prop: cudaDeviceProp = unsafe { MaybeUninit::zeroed().assume_init() };
        let sizes = cuda13_sizes(&prop);
        assert_eq!(sizes.len(), FIELDS.len());
        for (field, &(name, size13)) in FIELDS.iter().zip(&sizes) {
            assert_eq!(field.size, size13, "{name}");
            assert!(field.offset12 + field.size <= CUDA12_SIZE, "{name}");
            assert!(
                field.offset13 + field.size <= std::mem::size_of::<cudaDeviceProp>(),
                "{name}"
            );
        }
        // In order, without overlap, in both layouts.
        for (pair, &(name, _)) in FIELDS.windows(2).zip(&sizes[1..]) {
            assert!(pair[0].offset12 + pair[0].size <= pair[1].offset12, "{name}");
            assert!(pair[0].offset13 + pair[0].size <= pair[1].offset13, "{name}");
        }
        // The fields CUDA 13 keeps in place come first; `clockRate` was removed after
        // `texturePitchAlignment`, moving everything below it.
        let moved = FIELDS.iter().position(|f| f.offset12 != f.offset13).unwrap();
        assert_eq!(sizes[moved].0, "multiProcessorCount");
    }
}
