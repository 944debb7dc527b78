//! cuda-libs' `system` module over the NVML stand-in (`fakenvml/nvml.c`): figures read, a
//! process list that grows while it is read, a query the device does not support
//! ([`NvmlCode::NotSupported`]), a function the library lacks ([`Error::Symbol`]), bad indices,
//! and NVML shut down as often as it was initialised. Alone in its binary: NVML is loaded once
//! per process, from the path this binary sets.

use cuda_libs::system::{MemoryInfo, NvmlCode, ProcessKind, System, Topology};
use cuda_libs::Error;

/// Where the build script put `libfakenvml.so`.
const FAKENVML: &str = env!("FAKENVML_PATH");

fn initialisations() -> i32 {
    // SAFETY: the stand-in exports `int fakenvml_initialised(void)`; the library stays loaded
    // for the process (cuda-sys keeps it).
    unsafe {
        let library = libloading::Library::new(FAKENVML).expect("the stand-in loads");
        let count = library
            .get::<unsafe extern "C" fn() -> i32>(b"fakenvml_initialised")
            .expect("the control function is exported");
        count()
    }
}

#[test]
fn system_reads_the_stand_in() {
    // The only test of this binary, so no other thread reads the environment meanwhile.
    std::env::set_var("CUDA_NVML_LIBRARY", FAKENVML);
    {
        let system = System::new().unwrap();
        let second = System::new().unwrap();
        assert_eq!(initialisations(), 2);
        drop(second);
        assert_eq!(system.driver_version().unwrap(), "580.65.06");
        assert_eq!(system.cuda_driver_version().unwrap(), 13000);
        let devices = system.devices().unwrap();
        assert_eq!(devices.len(), 2);
        assert_eq!(devices[1].index(), 1);
        assert_eq!(devices[0].name().unwrap(), "NVIDIA H200");
        assert_eq!(devices[1].uuid().unwrap(), "GPU-00000000-0000-0000-0000-000000000001");
        assert_eq!(
            devices[0].memory().unwrap(),
            MemoryInfo {
                total: 150_754_820_096,
                used: 1 << 30,
                free: 150_754_820_096 - (1 << 30)
            }
        );
        assert_eq!(devices[0].topology_with(&devices[0]).unwrap(), Topology::Internal);
        assert_eq!(devices[0].topology_with(&devices[1]).unwrap(), Topology::NumaNode);
        assert_eq!(devices[0].power_usage_mw().unwrap(), 123_456);
        match devices[1].power_usage_mw() {
            Err(Error::Nvml {
                function,
                code: NvmlCode::NotSupported,
                message,
            }) => {
                assert_eq!(function, "nvmlDeviceGetPowerUsage");
                assert_eq!(message, "Not Supported");
            }
            other => panic!("expected NotSupported, got {other:?}"),
        }
        // The list grew between the size query and the read: read again, all of it.
        let processes = devices[0].processes().unwrap();
        assert_eq!(processes.len(), 10);
        assert_eq!(processes[0].used_memory, None, "NVML's 'not available'");
        assert_eq!(processes[3].used_memory, Some(3 << 20));
        assert!(processes.iter().all(|process| process.kind == ProcessKind::Compute));
        // A function the library lacks: a typed error naming it.
        match devices[0].temperature() {
            Err(Error::Symbol(missing)) => {
                assert!(missing.to_string().contains("nvmlDeviceGetTemperature"), "{missing}")
            }
            other => panic!("expected a missing symbol, got {other:?}"),
        }
        assert!(matches!(system.device(2), Err(Error::InvalidValue(_))));
        let by_uuid = system
            .device_by_uuid("GPU-00000000-0000-0000-0000-000000000001")
            .unwrap();
        assert_eq!(by_uuid.index(), 1);
        assert!(matches!(system.device_by_uuid("GPU-nope"), Err(Error::Nvml { .. })));
        assert!(matches!(system.device_by_uuid("GPU\0"), Err(Error::InvalidValue(_))));
    }
    assert_eq!(initialisations(), 0, "every System shut NVML down once");
}
