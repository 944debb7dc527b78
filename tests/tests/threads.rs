//! Many threads allocating, launching, copying and dropping cuda-driver
//! objects at once against the stand-in driver: results are right and every
//! handle is released exactly once.

use std::sync::{Arc, Barrier};
use std::thread;

use cuda_driver::{Context, Device, DeviceBuffer, Event, EventFlags, LaunchConfig, Module, Stream};
use tests::fake;

const THREADS: usize = 8;
const ROUNDS: usize = 50;

#[test]
fn threads_share_contexts_modules_and_buffers() {
    let fake = fake::session();
    fake.set_deferred(true); // stream work runs when waited for, from whichever thread waits
    let contexts = [
        Context::primary(&Device::get(0).unwrap()).unwrap(),
        Context::primary(&Device::get(1).unwrap()).unwrap(),
    ];
    let modules = contexts
        .clone()
        .map(|context| Module::from_ptx(&context, fake::KERNELS).unwrap());
    // one buffer every thread of device 0 reads from (shared `&DeviceBuffer`)
    let shared = Arc::new(DeviceBuffer::from_slice(&contexts[0], &[1.0f32; 1024]).unwrap());
    let start = Arc::new(Barrier::new(THREADS));

    let workers: Vec<_> = (0..THREADS)
        .map(|t| {
            let context = contexts[t % 2].clone();
            let saxpy = modules[t % 2].function("saxpy").unwrap();
            let fill = modules[t % 2].function("fill").unwrap();
            let shared = shared.clone();
            let start = start.clone();
            thread::spawn(move || {
                start.wait();
                let stream = Stream::new(&context).unwrap();
                for round in 0..ROUNDS {
                    let n = 1024;
                    let value = (t * ROUNDS + round) as f32;
                    let mut y = if round % 2 == 0 {
                        DeviceBuffer::<f32>::alloc_async(&stream, n).unwrap()
                    } else {
                        DeviceBuffer::<f32>::alloc(&context, n).unwrap()
                    };
                    let config = LaunchConfig::for_num_elems(n as u32);
                    // SAFETY: both kernels touch n floats of buffers of n.
                    unsafe { stream.launch(&fill, &config, (&mut y, value, n as u32)).unwrap() };
                    if t % 2 == 0 {
                        // SAFETY: as above; `shared` is only read.
                        unsafe {
                            stream
                                .launch(&saxpy, &config, (2.0f32, &*shared, &mut y, n as u32))
                                .unwrap()
                        };
                    }
                    let done = Event::new(&context, EventFlags::DISABLE_TIMING).unwrap();
                    done.record(&stream).unwrap();
                    done.synchronize().unwrap();
                    let expected = if t % 2 == 0 { value + 2.0 } else { value };
                    let got = y.to_vec().unwrap();
                    assert!(
                        got.iter().all(|&v| v == expected),
                        "thread {t} round {round}: {}",
                        got[0]
                    );
                }
                stream.synchronize().unwrap();
            })
        })
        .collect();
    for worker in workers {
        worker.join().expect("a worker thread panicked");
    }
    drop((shared, modules, contexts));
    fake.set_deferred(false);
    let counts = fake.counts();
    assert!(counts.is_clean(), "{counts}");
    assert!(fake.calls() > (THREADS * ROUNDS * 8) as u64, "{} calls", fake.calls());
}

#[test]
fn threads_create_and_drop_their_own_contexts() {
    let fake = fake::session();
    let workers: Vec<_> = (0..THREADS)
        .map(|t| {
            thread::spawn(move || {
                for round in 0..ROUNDS / 5 {
                    let device = Device::get((t % 2) as u32).unwrap();
                    let context = if round % 2 == 0 {
                        Context::primary(&device).unwrap()
                    } else {
                        Context::new(&device, Default::default()).unwrap()
                    };
                    let module = Module::from_ptx(&context, fake::KERNELS).unwrap();
                    let vector_add = module.function("vector_add").unwrap();
                    let a = DeviceBuffer::from_slice(&context, &[t as u32 as f32; 100]).unwrap();
                    let b = DeviceBuffer::from_slice(&context, &[round as f32; 100]).unwrap();
                    let mut c = DeviceBuffer::<f32>::zeroed(&context, 100).unwrap();
                    let stream = Stream::new(&context).unwrap();
                    // SAFETY: vector_add touches 100 floats of buffers of 100.
                    unsafe { stream.launch(&vector_add, &LaunchConfig::for_num_elems(100), (&a, &b, &mut c, 100u32)) }
                        .unwrap();
                    stream.synchronize().unwrap();
                    assert_eq!(c.to_vec().unwrap()[99], (t + round) as f32);
                }
            })
        })
        .collect();
    for worker in workers {
        worker.join().expect("a worker thread panicked");
    }
    let counts = fake.counts();
    assert!(counts.is_clean(), "{counts}");
}
