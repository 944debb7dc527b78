//! cuFFT's LTO callbacks: a device function, compiled to LTO-IR (NVRTC's `-dlto`), that
//! cuFFT links into its kernels (through its own nvJitLink) to produce each input element
//! instead of reading it from memory (a load callback), or to write each output element (a
//! store callback). [`Plan::with_load_callback`](super::Plan::with_load_callback) and
//! [`Plan::with_store_callback`](super::Plan::with_store_callback) attach one before the plan
//! is made (`cufftCreate`, `cufftXtSetJITCallback`, then `cufftMakePlanMany64`).
//!
//! The callback has cuFFT's LTO signature for the plan's input type:
//! `__device__ float name(void *dataIn, unsigned long long offset, void *callerInfo, void *sharedPtr)`
//! (`double`, `float2` or `double2` for the other types), `offset` counting input elements
//! under the plan's input layout. Its caller info is a buffer of 64-bit words the plan owns
//! in device memory; each execution writes the words it is given there, in stream order, so
//! one cached plan serves arrays at other addresses.
//!
//! A store callback has cuFFT's LTO signature for the plan's output type:
//! `__device__ void name(void *dataOut, unsigned long long offset, float2 element, void *callerInfo, void *sharedPtr)`
//! (`double2`, `float` or `double` for the other types), `offset` counting output elements
//! under the plan's output layout; it stores `element` (or what it makes of it) at `offset`.
//!
//! cuFFT 12 (CUDA 13) takes the callback's symbol name (`cufftXtSetJITCallback` of CUDA 13's
//! header, the signature bound here); cuFFT 11 (CUDA 12) exports an older signature under that
//! name, so [`supports_load_callbacks`] says no there rather than call it.

use super::{Kind, Precision};
use crate::{Error, Result};
use cuda_sys::cufft::cufftXtCallbackType;

/// A load callback for [`Plan::with_load_callback`](super::Plan::with_load_callback).
#[derive(Clone, Copy, Debug)]
pub struct LoadCallback<'a> {
    /// The device function's name as the LTO-IR defines it (C++ linkage, as NVIDIA's examples
    /// declare it).
    pub symbol: &'a str,
    /// The LTO-IR holding the function (`nvrtcGetLTOIR`).
    pub lto_ir: &'a [u8],
    /// 64-bit words of caller info the callback reads (each execution gives exactly this many).
    pub info_words: usize,
}

/// A store callback for [`Plan::with_store_callback`](super::Plan::with_store_callback).
#[derive(Clone, Copy, Debug)]
pub struct StoreCallback<'a> {
    /// The device function's name as the LTO-IR defines it (C++ linkage).
    pub symbol: &'a str,
    /// The LTO-IR holding the function (`nvrtcGetLTOIR`).
    pub lto_ir: &'a [u8],
    /// 64-bit words of caller info the callback reads
    /// ([`Plan::set_store_info`](super::Plan::set_store_info) gives exactly this many).
    pub info_words: usize,
}

/// The first cuFFT whose `cufftXtSetJITCallback` takes a symbol name (cuFFT 12.0, CUDA 13.0),
/// as `cufftGetProperty` reports it (major * 1000 + minor * 10).
const FIRST_NAMED_JIT_CALLBACK: i32 = 12000;

/// Whether the loaded cuFFT takes LTO callbacks, load and store alike: `Ok(None)` when it does, else why not
/// (cuFFT 11 of CUDA 12, whose `cufftXtSetJITCallback` has another signature, or a library
/// without the function). A cuFFT that cannot be loaded is [`Error::Load`].
pub fn supports_load_callbacks() -> Result<Option<String>> {
    let cufft = cuda_sys::cufft()?;
    match cufft.library_version() {
        Some(version) if version < FIRST_NAMED_JIT_CALLBACK => {
            return Ok(Some(format!(
                "cuFFT {}.{} (CUDA 12) declares cufftXtSetJITCallback without the symbol name; LTO \
                 callbacks are used from cuFFT 12 (CUDA 13) on",
                version / 1000,
                version % 1000 / 10
            )))
        }
        None => return Ok(Some("the loaded cuFFT does not report its version".into())),
        Some(_) => {}
    }
    Ok(cufft.cufftXtSetJITCallback().err().map(|missing| missing.to_string()))
}

/// The callback type of a plan's input: `CUFFT_CB_LD_*` of its kind and precision; complex to
/// real plans (cuFFT overwrites their input) and half precision (no callback type) are refused.
pub(crate) fn load_type(kind: Kind, precision: Precision) -> Result<cufftXtCallbackType> {
    Ok(match (kind, precision) {
        (Kind::C2R, _) => {
            return Err(Error::InvalidValue(
                "a load callback feeds complex-to-complex and real-to-complex plans; cuFFT overwrites \
                 a complex-to-real plan's input"
                    .into(),
            ))
        }
        (_, Precision::F16) => {
            return Err(Error::InvalidValue(
                "cuFFT has no load callback type for half precision".into(),
            ))
        }
        (Kind::C2C, Precision::F32) => cufftXtCallbackType::CUFFT_CB_LD_COMPLEX,
        (Kind::C2C, Precision::F64) => cufftXtCallbackType::CUFFT_CB_LD_COMPLEX_DOUBLE,
        (Kind::R2C, Precision::F32) => cufftXtCallbackType::CUFFT_CB_LD_REAL,
        (Kind::R2C, Precision::F64) => cufftXtCallbackType::CUFFT_CB_LD_REAL_DOUBLE,
    })
}

/// The C++ return type of a load callback for `kind` and `precision` (cuFFT's `cufftReal`,
/// `cufftDoubleReal`, `cufftComplex`, `cufftDoubleComplex`, as the built-in types they are).
pub fn load_return_type(kind: Kind, precision: Precision) -> Result<&'static str> {
    Ok(match load_type(kind, precision)? {
        cufftXtCallbackType::CUFFT_CB_LD_COMPLEX => "float2",
        cufftXtCallbackType::CUFFT_CB_LD_COMPLEX_DOUBLE => "double2",
        cufftXtCallbackType::CUFFT_CB_LD_REAL => "float",
        _ => "double",
    })
}

/// The callback type of a plan's output: `CUFFT_CB_ST_*` of its kind and precision; half
/// precision (no callback type) is refused.
pub(crate) fn store_type(kind: Kind, precision: Precision) -> Result<cufftXtCallbackType> {
    Ok(match (kind, precision) {
        (_, Precision::F16) => {
            return Err(Error::InvalidValue(
                "cuFFT has no store callback type for half precision".into(),
            ))
        }
        (Kind::C2C | Kind::R2C, Precision::F32) => cufftXtCallbackType::CUFFT_CB_ST_COMPLEX,
        (Kind::C2C | Kind::R2C, Precision::F64) => cufftXtCallbackType::CUFFT_CB_ST_COMPLEX_DOUBLE,
        (Kind::C2R, Precision::F32) => cufftXtCallbackType::CUFFT_CB_ST_REAL,
        (Kind::C2R, Precision::F64) => cufftXtCallbackType::CUFFT_CB_ST_REAL_DOUBLE,
    })
}

/// The C++ type of the element a store callback for `kind` and `precision` is handed (cuFFT's
/// `cufftComplex`, `cufftDoubleComplex`, `cufftReal`, `cufftDoubleReal`, as the built-in types
/// they are).
pub fn store_element_type(kind: Kind, precision: Precision) -> Result<&'static str> {
    Ok(match store_type(kind, precision)? {
        cufftXtCallbackType::CUFFT_CB_ST_COMPLEX => "float2",
        cufftXtCallbackType::CUFFT_CB_ST_COMPLEX_DOUBLE => "double2",
        cufftXtCallbackType::CUFFT_CB_ST_REAL => "float",
        _ => "double",
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn callback_types_follow_kind_and_precision() {
        assert_eq!(
            load_type(Kind::R2C, Precision::F32).unwrap(),
            cufftXtCallbackType::CUFFT_CB_LD_REAL
        );
        assert_eq!(load_return_type(Kind::C2C, Precision::F64).unwrap(), "double2");
        assert_eq!(load_return_type(Kind::R2C, Precision::F64).unwrap(), "double");
        assert!(
            matches!(load_type(Kind::C2R, Precision::F32), Err(Error::InvalidValue(m)) if m.contains("overwrites"))
        );
        assert!(matches!(
            load_type(Kind::C2C, Precision::F16),
            Err(Error::InvalidValue(_))
        ));
    }

    #[test]
    fn store_types_follow_the_output_side() {
        assert_eq!(
            store_type(Kind::R2C, Precision::F32).unwrap(),
            cufftXtCallbackType::CUFFT_CB_ST_COMPLEX
        );
        assert_eq!(
            store_type(Kind::C2R, Precision::F64).unwrap(),
            cufftXtCallbackType::CUFFT_CB_ST_REAL_DOUBLE
        );
        assert_eq!(store_element_type(Kind::C2C, Precision::F64).unwrap(), "double2");
        assert_eq!(store_element_type(Kind::C2R, Precision::F32).unwrap(), "float");
        assert!(matches!(
            store_type(Kind::C2R, Precision::F16),
            Err(Error::InvalidValue(m)) if m.contains("half")
        ));
    }
}
