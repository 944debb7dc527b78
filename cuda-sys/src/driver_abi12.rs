//! Driver functions at an older ABI than the one `cuda.h` of CUDA 13 declares, for drivers
//! older than that ABI: a CUDA 12.x driver before 12.8 has `cuEventElapsedTime` but not its
//! `_v2`, one before 12.5 `cuCtxCreate_v2` but not `cuCtxCreate_v4`. Each is resolved through
//! `cuGetProcAddress` at the version of its ABI (then by exported name), on every call: the
//! safe layer asks for one only where the declared function is missing.

#![allow(non_snake_case)]

use std::ffi::c_uint;

use crate::driver::{CUcontext, CUdevice, CUevent, CUresult};
use crate::{Driver, FunctionName, SymbolError};

/// `cuEventElapsedTime` of CUDA 2.0 to 12.x: the same parameters as `cuEventElapsedTime_v2`.
pub type EventElapsedTimeV1 = unsafe extern "C" fn(*mut f32, CUevent, CUevent) -> CUresult;

/// `cuCtxCreate_v2` (CUDA 3.2 to 12.x): a context with flags, without creation parameters.
pub type CtxCreateV2 = unsafe extern "C" fn(*mut CUcontext, c_uint, CUdevice) -> CUresult;

const EVENT_ELAPSED_TIME_V1: FunctionName = FunctionName {
    symbol: "cuEventElapsedTime",
    proc_name: "cuEventElapsedTime",
    proc_version: 2000,
};

const CTX_CREATE_V2: FunctionName = FunctionName {
    symbol: "cuCtxCreate_v2",
    proc_name: "cuCtxCreate",
    proc_version: 3020,
};

impl Driver {
    /// `cuEventElapsedTime` at its 12.x ABI, for drivers older than 12.8 (which lack
    /// `cuEventElapsedTime_v2`).
    pub fn cuEventElapsedTime_v1(&self) -> Result<EventElapsedTimeV1, SymbolError> {
        let address = self.symbols.address_of(&EVENT_ELAPSED_TIME_V1)?;
        // SAFETY: `cuGetProcAddress` at version 2000, or the export of that name, is the
        // function of this signature (`PFN_cuEventElapsedTime_v2000` of `cudaTypedefs.h`).
        Ok(unsafe { std::mem::transmute::<*mut std::ffi::c_void, EventElapsedTimeV1>(address) })
    }

    /// `cuCtxCreate_v2`, for drivers older than 12.5 (which lack `cuCtxCreate_v4`).
    pub fn cuCtxCreate_v2(&self) -> Result<CtxCreateV2, SymbolError> {
        let address = self.symbols.address_of(&CTX_CREATE_V2)?;
        // SAFETY: `cuGetProcAddress("cuCtxCreate")` at version 3020, or the export
        // `cuCtxCreate_v2`, is the function of this signature (`PFN_cuCtxCreate_v3020`).
        Ok(unsafe { std::mem::transmute::<*mut std::ffi::c_void, CtxCreateV2>(address) })
    }
}
