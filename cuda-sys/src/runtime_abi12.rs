//! Runtime functions of CUDA 12's cudart that CUDA 13's headers declare otherwise: CUDA 12's
//! `cudaGetDeviceProperties` (the header's name for the export `cudaGetDeviceProperties_v2`)
//! fills CUDA 12's `cudaDeviceProp`, 1032 bytes of another layout than CUDA 13's 1008; the
//! export named `cudaGetDeviceProperties` there is an older ABI still. Resolved by exported
//! name on every call: the safe layer asks for it only with a CUDA 12 runtime.

#![allow(non_snake_case)]

use std::ffi::{c_int, c_void};

use crate::runtime::cudaError_t;
use crate::{FunctionName, Runtime, SymbolError};

/// `cudaGetDeviceProperties_v2` of CUDA 12: fills a CUDA 12 `cudaDeviceProp` (1032 bytes).
pub type GetDevicePropertiesCuda12 = unsafe extern "C" fn(*mut c_void, c_int) -> cudaError_t;

const GET_DEVICE_PROPERTIES_V2: FunctionName = FunctionName {
    symbol: "cudaGetDeviceProperties_v2",
    proc_name: "cudaGetDeviceProperties_v2",
    proc_version: 0,
};

impl Runtime {
    /// `cudaGetDeviceProperties_v2` of a CUDA 12 runtime, which writes CUDA 12's
    /// `cudaDeviceProp` layout (1032 bytes): the caller passes a buffer of that size.
    pub fn cudaGetDeviceProperties_v2(&self) -> Result<GetDevicePropertiesCuda12, SymbolError> {
        let address = self.symbols.address_of(&GET_DEVICE_PROPERTIES_V2)?;
        // SAFETY: CUDA 12's cudart exports `cudaGetDeviceProperties_v2` with this signature
        // (`cudaError_t (struct cudaDeviceProp *, int)`, the struct taken as untyped memory).
        Ok(unsafe { std::mem::transmute::<*mut c_void, GetDevicePropertiesCuda12>(address) })
    }
}
