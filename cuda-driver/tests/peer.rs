//! Peer access and copies between devices (skipped with fewer than two GPUs).

mod common;

use cuda_driver::{Device, DeviceBuffer, Stream};

#[test]
fn peer_copies_between_devices() {
    let Some(_) = common::context() else { return };
    let count = Device::count().unwrap();
    if count < 2 {
        println!("skipped: peer access needs two GPUs, this machine has {count}");
        return;
    }
    let devices = Device::all().unwrap();
    for pair in devices.windows(2) {
        let (d0, d1) = (pair[0], pair[1]);
        let c0 = d0.primary_context().unwrap();
        let c1 = d1.primary_context().unwrap();
        let access = d0.can_access_peer(&d1).unwrap() && d1.can_access_peer(&d0).unwrap();
        if access {
            c0.enable_peer_access(&c1).unwrap();
            c1.enable_peer_access(&c0).unwrap();
            c0.enable_peer_access(&c1).unwrap(); // twice is fine
        }
        println!("devices {} and {}: peer access {access}", d0.ordinal(), d1.ordinal());
        let n = 1 << 20;
        let data: Vec<u32> = (0..n as u32).collect();
        let source = DeviceBuffer::from_slice(&c0, &data).unwrap();
        let mut target = DeviceBuffer::<u32>::zeroed(&c1, n).unwrap();
        target.copy_from_peer(&source).unwrap();
        assert_eq!(target.to_vec().unwrap(), data);
        let mut back = DeviceBuffer::<u32>::zeroed(&c0, n).unwrap();
        let stream = Stream::new(&c0).unwrap();
        back.copy_from_peer_async(&target, &stream).unwrap();
        stream.synchronize().unwrap();
        assert_eq!(back.to_vec().unwrap(), data);
        drop(target);
        if access {
            c0.disable_peer_access(&c1).unwrap();
            c1.disable_peer_access(&c0).unwrap();
        }
    }
}
