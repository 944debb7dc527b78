//! Linking with the driver's `cuLink*` API, for when nvJitLink is not installed. Handles PTX,
//! CUBIN and fatbin inputs (not LTO-IR) in the primary context of [`Device::current`].

use std::ffi::{c_uint, c_void, CString};
use std::ptr;

use cuda_driver::DriverError;
use cuda_sys::driver::{CUjitInputType, CUjit_option, CUlinkState, CUresult};
use cuda_sys::Driver;

use crate::device::Device;
use crate::error::{Error, Result};
use crate::object_code::{CodeKind, ObjectCode};
use crate::options::Arch;

const LOG_BYTES: usize = 64 * 1024;

/// Links `inputs` (none of them LTO-IR) into a CUBIN for `arch`. `nvjitlink_missing` is why
/// nvJitLink could not be used; it is returned if the driver cannot be used either.
pub(crate) fn link(inputs: &[ObjectCode], arch: Arch, nvjitlink_missing: cuda_sys::LoadError) -> Result<ObjectCode> {
    let unavailable = || Error::NvJitLinkUnavailable {
        source: nvjitlink_missing.clone(),
        lto_inputs: false,
    };
    let Ok(driver) = cuda_sys::driver() else {
        return Err(unavailable());
    };
    let device = Device::current().map_err(|_| unavailable())?;
    device.context().set_current()?;

    let mut error_log = vec![0u8; LOG_BYTES];
    let mut info_log = vec![0u8; LOG_BYTES];
    let mut options = [
        CUjit_option::CU_JIT_ERROR_LOG_BUFFER,
        CUjit_option::CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
        CUjit_option::CU_JIT_INFO_LOG_BUFFER,
        CUjit_option::CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES,
        CUjit_option::CU_JIT_TARGET,
    ];
    // The driver reads integer option values from the pointer-sized slots themselves.
    let mut values: [*mut c_void; 5] = [
        error_log.as_mut_ptr().cast(),
        LOG_BYTES as *mut c_void,
        info_log.as_mut_ptr().cast(),
        LOG_BYTES as *mut c_void,
        arch.number() as usize as *mut c_void,
    ];
    let mut state: CUlinkState = ptr::null_mut();
    // SAFETY: `options` and `values` have 5 entries each; the log buffers are LOG_BYTES long
    // and outlive the link state, which is destroyed (by `LinkState`) before they are dropped.
    let code = unsafe {
        driver.cuLinkCreate_v2()?(
            options.len() as c_uint,
            options.as_mut_ptr(),
            values.as_mut_ptr(),
            &mut state,
        )
    };
    check(code, "cuLinkCreate", &error_log, &info_log)?;
    let state = LinkState { driver, raw: state };

    for (index, input) in inputs.iter().enumerate() {
        let input_type = match input.kind() {
            CodeKind::Ptx => CUjitInputType::CU_JIT_INPUT_PTX,
            CodeKind::Cubin => CUjitInputType::CU_JIT_INPUT_CUBIN,
            CodeKind::Fatbin => CUjitInputType::CU_JIT_INPUT_FATBINARY,
            CodeKind::LtoIr => return Err(Error::InvalidValue("the driver's linker cannot link LTO-IR".into())),
        };
        let name =
            CString::new(format!("input{index}.{}", input.kind().extension())).expect("no NUL in a formatted name");
        // PTX is passed with its terminating NUL, which ObjectCode keeps after `code()`.
        let image = &input.inner.image;
        // SAFETY: live link state; `image` is alive for the call and `image.len()` long; no options.
        let code = unsafe {
            driver.cuLinkAddData_v2()?(
                state.raw,
                input_type,
                image.as_ptr().cast_mut().cast(),
                image.len(),
                name.as_ptr(),
                0,
                ptr::null_mut(),
                ptr::null_mut(),
            )
        };
        check(code, "cuLinkAddData", &error_log, &info_log)?;
    }

    let mut cubin: *mut c_void = ptr::null_mut();
    let mut size = 0usize;
    // SAFETY: live link state with all inputs added; both out-pointers are valid.
    let code = unsafe { driver.cuLinkComplete()?(state.raw, &mut cubin, &mut size) };
    check(code, "cuLinkComplete", &error_log, &info_log)?;
    if cubin.is_null() || size == 0 {
        return Err(Error::InvalidValue("cuLinkComplete returned no CUBIN".into()));
    }
    // SAFETY: the driver returned `size` bytes at `cubin`, owned by the link state, which is
    // still alive; they are copied before it is destroyed.
    let image = unsafe { std::slice::from_raw_parts(cubin.cast::<u8>(), size) }.to_vec();
    drop(state);
    let lowered_names = inputs
        .iter()
        .flat_map(|i| i.lowered_names().map(|(e, l)| (e.to_string(), l.to_string())))
        .collect();
    Ok(ObjectCode::from_parts(
        CodeKind::Cubin,
        Some(arch),
        image,
        lowered_names,
        text(&info_log),
    ))
}

/// Owns a `CUlinkState`; destroys it on drop.
struct LinkState {
    driver: &'static Driver,
    raw: CUlinkState,
}

impl Drop for LinkState {
    fn drop(&mut self) {
        if let Ok(destroy) = self.driver.cuLinkDestroy() {
            // SAFETY: `raw` came from cuLinkCreate and is destroyed only here; a failure cannot
            // be acted on in a destructor and is ignored.
            unsafe { destroy(self.raw) };
        }
    }
}

fn check(code: CUresult, call: &'static str, error_log: &[u8], info_log: &[u8]) -> Result<()> {
    if code == CUresult::CUDA_SUCCESS {
        return Ok(());
    }
    Err(Error::DriverLink {
        call,
        error: DriverError::new(code),
        error_log: text(error_log),
        info_log: text(info_log),
    })
}

/// The NUL-terminated text at the start of a log buffer.
fn text(log: &[u8]) -> String {
    let end = log.iter().position(|&b| b == 0).unwrap_or(log.len());
    String::from_utf8_lossy(&log[..end]).into_owned()
}
