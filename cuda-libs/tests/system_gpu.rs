//! NVML's figures against `nvidia-smi`'s, on a machine with an NVIDIA driver: the driver
//! version, device count, names, UUIDs, PCI bus ids, total memory and power limits agree, and
//! the other queries answer (or say the device does not support them). `skipped: <why>` without
//! NVML (fails then if `CUDA_REQUIRE_GPU=1`).

use std::process::Command;

use cuda_libs::system::{NvmlCode, P2pCapability, System, Topology};
use cuda_libs::Error;

fn system() -> Option<System> {
    match System::new() {
        Ok(system) => Some(system),
        Err(why) => {
            assert!(
                std::env::var("CUDA_REQUIRE_GPU").as_deref() != Ok("1"),
                "CUDA_REQUIRE_GPU=1 but NVML is unusable: {why}"
            );
            println!("skipped: {}", why.to_string().lines().next().unwrap_or(""));
            None
        }
    }
}

/// `nvidia-smi --query-gpu=FIELDS --format=csv,noheader,nounits`, one row of fields per GPU.
fn smi(fields: &str) -> Option<Vec<Vec<String>>> {
    let output = Command::new("nvidia-smi")
        .args([&format!("--query-gpu={fields}"), "--format=csv,noheader,nounits"])
        .output()
        .ok()?;
    output.status.success().then(|| {
        String::from_utf8_lossy(&output.stdout)
            .lines()
            .map(|line| line.split(',').map(|field| field.trim().to_string()).collect())
            .collect()
    })
}

/// Whether a query's failure is the device saying it does not support it.
fn unsupported<T>(result: &cuda_libs::Result<T>) -> bool {
    matches!(
        result,
        Err(Error::Nvml {
            code: NvmlCode::NotSupported,
            ..
        })
    )
}

#[test]
fn nvml_agrees_with_nvidia_smi() {
    let Some(system) = system() else { return };
    let Some(rows) = smi("driver_version,name,uuid,pci.bus_id,memory.total,power.limit") else {
        println!("skipped: nvidia-smi did not run");
        return;
    };
    let devices = system.devices().unwrap();
    assert_eq!(devices.len(), rows.len());
    for (device, row) in devices.iter().zip(&rows) {
        assert_eq!(system.driver_version().unwrap(), row[0]);
        assert_eq!(device.name().unwrap(), row[1]);
        assert_eq!(device.uuid().unwrap(), row[2]);
        assert_eq!(device.pci_bus_id().unwrap().to_lowercase(), row[3].to_lowercase());
        let total_mib = device.memory().unwrap().total / (1 << 20);
        assert_eq!(total_mib.to_string(), row[4], "total memory in MiB");
        if let Ok(watts) = row[5].parse::<f64>() {
            let limit = device.power_limit_mw().unwrap() as f64 / 1000.0;
            assert!(
                (limit - watts).abs() < 1.0,
                "power limit {limit} W, nvidia-smi {watts} W"
            );
        }
    }
}

#[test]
fn every_query_answers_or_says_it_is_unsupported() {
    let Some(system) = system() else { return };
    assert!(system.cuda_driver_version().unwrap() >= 12000);
    assert!(!system.nvml_version().unwrap().is_empty());
    let devices = system.devices().unwrap();
    assert!(matches!(
        system.device(devices.len() as u32),
        Err(Error::InvalidValue(_))
    ));
    for device in &devices {
        let memory = device.memory().unwrap();
        assert!(memory.used <= memory.total && memory.free <= memory.total);
        assert!(device.compute_capability().unwrap().0 >= 7);
        let utilization = device.utilization();
        assert!(unsupported(&utilization) || utilization.unwrap().gpu <= 100);
        let temperature = device.temperature();
        assert!(unsupported(&temperature) || (1..120).contains(&temperature.unwrap()));
        let (clocks, max) = (device.clocks(), device.max_clocks());
        if let (Ok(clocks), Ok(max)) = (clocks, max) {
            assert!(clocks.sm <= max.sm + 1 && max.sm > 0, "{clocks:?} {max:?}");
        }
        let power = device.power_usage_mw();
        assert!(unsupported(&power) || power.unwrap() > 0);
        assert_eq!(device.topology_with(device).unwrap(), Topology::Internal);
        for link in device.nvlinks().unwrap() {
            assert_eq!(link.active, link.remote_pci_bus_id.is_some(), "{link:?}");
        }
        // This process has no context on the device: the list may be empty, but it answers.
        let processes = device.processes();
        assert!(
            processes.is_ok()
                || matches!(
                    processes,
                    Err(Error::Nvml {
                        code: NvmlCode::NoPermission,
                        ..
                    })
                )
        );
    }
    if let [first, second, ..] = devices.as_slice() {
        let topology = first.topology_with(second).unwrap();
        let read = first.p2p_status(second, P2pCapability::Read).unwrap();
        println!("devices 0 and 1: {topology:?}, peer reads {read:?}");
    }
}

#[test]
fn a_process_with_a_cuda_context_is_listed() {
    let Some(system) = system() else { return };
    let Ok(context) = cuda_driver::Device::get(0).and_then(|device| device.primary_context()) else {
        println!("skipped: no CUDA device");
        return;
    };
    // The context's memory shows once it is used.
    let _buffer = cuda_driver::DeviceBuffer::<u8>::zeroed(&context, 1 << 20).unwrap();
    let device = system.device_of(&context.device()).unwrap();
    // The same device by its PCI address (CUDA writes a shorter domain than NVML).
    let bus_id = context.device().pci_bus_id().unwrap().to_lowercase();
    let nvml_bus_id = device.pci_bus_id().unwrap().to_lowercase();
    assert!(
        nvml_bus_id.ends_with(&bus_id[bus_id.len() - 7..]),
        "{nvml_bus_id} {bus_id}"
    );
    assert_eq!(
        system.device_by_uuid(&device.uuid().unwrap()).unwrap().index(),
        device.index()
    );
    match device.processes() {
        Ok(processes) => {
            let pid = std::process::id();
            assert!(
                processes.iter().any(|process| process.pid == pid),
                "{pid} not in {processes:?}"
            );
        }
        // Inside a container NVML may see other PIDs or refuse: nothing to compare then.
        Err(Error::Nvml {
            code: NvmlCode::NoPermission,
            ..
        }) => println!("skipped: NVML may not list processes"),
        Err(other) => panic!("{other}"),
    }
}
