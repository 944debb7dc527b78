//! Linking with the driver's JIT linker ([`cuda_driver::JitLinker`], `cuLink*`), for when
//! nvJitLink is not installed. Handles PTX, CUBIN and fatbin inputs (not LTO-IR) in the primary
//! context of [`Device::current`].

use cuda_driver::{JitInputKind, JitLinker};

use crate::arch::Arch;
use crate::code_kind::CodeKind;
use crate::device::Device;
use crate::error::{Error, Result};
use crate::object_code::ObjectCode;

/// Links `inputs` (none of them LTO-IR) into a CUBIN for `arch`. `nvjitlink_missing` is why
/// nvJitLink could not be used; it is returned if the driver cannot be used either.
pub(crate) fn link(inputs: &[ObjectCode], arch: Arch, nvjitlink_missing: cuda_sys::LoadError) -> Result<ObjectCode> {
    let device = Device::current().map_err(|_| Error::NvJitLinkUnavailable {
        source: nvjitlink_missing,
        lto_inputs: false,
    })?;
    let mut linker = JitLinker::new(device.context(), arch.number()).map_err(link_error)?;
    for (index, input) in inputs.iter().enumerate() {
        let kind = match input.kind() {
            CodeKind::Ptx => JitInputKind::Ptx,
            CodeKind::Cubin => JitInputKind::Cubin,
            CodeKind::Fatbin => JitInputKind::Fatbin,
            CodeKind::LtoIr => return Err(Error::InvalidValue("the driver's linker cannot link LTO-IR".into())),
        };
        // PTX is passed with its terminating NUL, which ObjectCode keeps after `code()`.
        let name = format!("input{index}.{}", input.kind().extension());
        linker.add(kind, &input.inner.image, &name).map_err(link_error)?;
    }
    let linked = linker.complete().map_err(link_error)?;
    if linked.cubin.is_empty() {
        return Err(Error::InvalidValue("cuLinkComplete returned no CUBIN".into()));
    }
    let lowered_names = inputs
        .iter()
        .flat_map(|i| i.lowered_names().map(|(e, l)| (e.to_string(), l.to_string())))
        .collect();
    Ok(ObjectCode::from_parts(
        CodeKind::Cubin,
        Some(arch),
        linked.cubin,
        lowered_names,
        linked.info_log,
    ))
}

/// A failed linker call as this crate's [`Error::DriverLink`], with the linker's logs.
fn link_error(error: cuda_driver::Error) -> Error {
    match error {
        cuda_driver::Error::JitLink(failure) => {
            let cuda_driver::JitLinkError {
                call,
                error,
                error_log,
                info_log,
            } = *failure;
            Error::DriverLink {
                call,
                error,
                error_log,
                info_log,
            }
        }
        other => other.into(),
    }
}
