//! cuda-core's device-wide algorithms, run by the stand-in driver's emulation of their own
//! kernels (`tests::emulation`), against host references.

use cuda_core::algorithms::sort::{self, SortOrder};
use cuda_core::DeviceArray;

#[test]
fn sort_keys_matches_a_host_sort() {
    let Some((_fake, stream)) = tests::emulation::session("sort_keys_matches_a_host_sort") else {
        return;
    };
    let n = 5000;
    let host: Vec<f32> = (0..n).map(|i| ((i * 7919) % 1013) as f32 - 500.0).collect();
    let keys = DeviceArray::from_slice(&stream, &host).unwrap();
    let mut out = DeviceArray::<f32>::empty(&stream, n).unwrap();
    let start = std::time::Instant::now();
    sort::sort_keys::<f32>(&stream, &keys, &mut out, n, SortOrder::Ascending).unwrap();
    let got = out.to_vec().unwrap();
    println!("sort of {n} took {:?}", start.elapsed());
    let mut expected = host.clone();
    expected.sort_by(f32::total_cmp);
    assert_eq!(got, expected);
}
