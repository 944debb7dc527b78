//! What to compile for a device with the NVRTC and the driver at hand: CUBIN for the device's
//! own architecture where NVRTC knows it; otherwise PTX of the newest architecture NVRTC knows
//! below the device's, which the driver compiles for the device, provided the driver reads
//! that NVRTC's PTX (a driver reads the PTX of its own CUDA version and older).

use std::sync::OnceLock;

use crate::arch::Arch;
use crate::error::{Error, Result};
use crate::options::CompileTarget;

/// The architectures NVRTC compiles for (`nvrtcGetSupportedArchs`: 75, 80, ... for sm_75,
/// sm_80, ...), asked once per process.
pub fn nvrtc_supported_archs() -> Result<&'static [u32]> {
    static ARCHS: OnceLock<Vec<u32>> = OnceLock::new();
    if let Some(archs) = ARCHS.get() {
        return Ok(archs);
    }
    let nvrtc = crate::nvrtc::library()?;
    let mut count = 0;
    // SAFETY: `count` is a valid out-pointer; the call needs no program.
    let code = unsafe { nvrtc.nvrtcGetNumSupportedArchs()?(&mut count) };
    crate::nvrtc::check_code(nvrtc, "nvrtcGetNumSupportedArchs", code)?;
    let mut archs = vec![0i32; usize::try_from(count).unwrap_or(0)];
    // SAFETY: `archs` holds the `count` entries NVRTC said it writes.
    let code = unsafe { nvrtc.nvrtcGetSupportedArchs()?(archs.as_mut_ptr()) };
    crate::nvrtc::check_code(nvrtc, "nvrtcGetSupportedArchs", code)?;
    let archs = archs.into_iter().filter_map(|a| u32::try_from(a).ok()).collect();
    Ok(ARCHS.get_or_init(|| archs))
}

/// The architecture and kind of code to compile for a device of compute capability
/// `major.minor`, given the kind asked for (`wanted`), this process's NVRTC and the driver (see
/// the module's documentation). A CUBIN is chosen over PTX where the driver is older than NVRTC
/// (it could not read the PTX). A device NVRTC cannot serve is [`Error::NoCodeForDevice`],
/// naming both versions and what to install.
pub fn device_target(major: u32, minor: u32, wanted: CompileTarget) -> Result<(Arch, CompileTarget)> {
    let nvrtc = crate::nvrtc::version()?;
    choose(
        major * 10 + minor,
        wanted,
        nvrtc_supported_archs()?,
        nvrtc,
        cuda_sys::driver_version(),
    )
}

fn choose(
    device: u32,
    wanted: CompileTarget,
    supported: &[u32],
    nvrtc: i32,
    driver: Option<i32>,
) -> Result<(Arch, CompileTarget)> {
    // A driver reads the PTX of its own CUDA version and older.
    let driver_reads_ptx = !matches!(driver, Some(driver) if driver < nvrtc);
    let refuse = |reason: String| Error::NoCodeForDevice {
        device_arch: Arch::Sm(device),
        nvrtc_version: nvrtc,
        driver_version: driver,
        reason,
    };
    if supported.contains(&device) {
        let target = match wanted {
            CompileTarget::Ptx if !driver_reads_ptx => CompileTarget::Cubin,
            other => other,
        };
        return Ok((Arch::Sm(device), target));
    }
    let Some(&below) = supported.iter().filter(|&&arch| arch < device).max() else {
        let oldest = supported.iter().min().copied().unwrap_or(0);
        return Err(refuse(format!(
            "this NVRTC compiles for sm_{oldest} and newer only: use the NVRTC of an older CUDA \
             (CUDA 12's, `pip install \"nvidia-cuda-nvrtc-cu12==12.*\"`, reaches sm_50)"
        )));
    };
    if !driver_reads_ptx {
        return Err(refuse(format!(
            "this NVRTC does not know the device's architecture, and its PTX (for sm_{below}) is newer \
             than the driver reads: install a newer driver, or an NVRTC of the driver's CUDA version \
             that knows the device"
        )));
    }
    Ok((Arch::Compute(below), CompileTarget::Ptx))
}

#[cfg(test)]
mod tests {
    use super::*;

    const NVRTC_12_2: &[u32] = &[50, 52, 53, 60, 61, 62, 70, 72, 75, 80, 86, 87, 89, 90];
    const NVRTC_13_0: &[u32] = &[75, 80, 86, 87, 88, 89, 90, 100, 103, 110, 120, 121];

    #[test]
    fn a_known_device_gets_its_own_code() {
        let got = choose(90, CompileTarget::Cubin, NVRTC_13_0, 13000, Some(13000)).unwrap();
        assert_eq!(got, (Arch::Sm(90), CompileTarget::Cubin));
        let got = choose(90, CompileTarget::Ptx, NVRTC_12_2, 12020, Some(12080)).unwrap();
        assert_eq!(got, (Arch::Sm(90), CompileTarget::Ptx));
        // No driver (a CPU machine): what was asked for.
        let got = choose(80, CompileTarget::Ptx, NVRTC_13_0, 13000, None).unwrap();
        assert_eq!(got, (Arch::Sm(80), CompileTarget::Ptx));
    }

    #[test]
    fn ptx_newer_than_the_driver_becomes_a_cubin() {
        // NVRTC 12.9's PTX (ISA 8.8) does not load on a 12.2 driver; its CUBIN does.
        let got = choose(90, CompileTarget::Ptx, NVRTC_12_2, 12090, Some(12020)).unwrap();
        assert_eq!(got, (Arch::Sm(90), CompileTarget::Cubin));
    }

    #[test]
    fn a_device_newer_than_nvrtc_gets_ptx_of_the_newest_arch_below() {
        let got = choose(120, CompileTarget::Cubin, NVRTC_12_2, 12020, Some(12080)).unwrap();
        assert_eq!(got, (Arch::Compute(90), CompileTarget::Ptx));
    }

    #[test]
    fn devices_nvrtc_cannot_serve_are_typed_errors_naming_the_remedy() {
        // NVRTC 13 dropped Maxwell to Volta.
        let error = choose(70, CompileTarget::Cubin, NVRTC_13_0, 13000, Some(13000)).unwrap_err();
        assert!(
            matches!(
                error,
                Error::NoCodeForDevice {
                    device_arch: Arch::Sm(70),
                    nvrtc_version: 13000,
                    ..
                }
            ),
            "{error:?}"
        );
        let message = error.to_string();
        assert!(
            message.contains("sm_70") && message.contains("nvidia-cuda-nvrtc-cu12"),
            "{message}"
        );
        // A device newer than NVRTC, whose PTX the older driver cannot read.
        let error = choose(120, CompileTarget::Cubin, NVRTC_12_2, 12090, Some(12020)).unwrap_err();
        let message = error.to_string();
        assert!(
            message.contains("12.9") && message.contains("12.2") && message.contains("newer driver"),
            "{message}"
        );
    }

    #[test]
    fn nvrtc_reports_the_architectures_it_compiles_for() {
        match nvrtc_supported_archs() {
            Ok(archs) => assert!(
                archs.contains(&90) && archs.windows(2).all(|w| w[0] < w[1]),
                "{archs:?}"
            ),
            Err(Error::NvrtcUnavailable(why)) => println!("skipped: no NVRTC ({why})"),
            Err(other) => panic!("{other}"),
        }
    }
}
