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

/// Threads working while every 7th driver call fails: every error is the
/// injected one, nothing panics, nothing is freed twice or used after free.
/// (Handles whose release the driver refused stay allocated, by design.)
#[test]
fn threads_meet_failures_at_random_points() {
    let fake = fake::session();
    fake.set_deferred(true);
    let failures = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    fake.fail_every(7, fake::OUT_OF_MEMORY);
    let workers: Vec<_> = (0..THREADS)
        .map(|t| {
            let failures = failures.clone();
            thread::spawn(move || {
                for round in 0..ROUNDS {
                    match work(t, round) {
                        Ok(()) => {}
                        Err(error) => {
                            assert_eq!(error.code().map(|c| c.0), Some(fake::OUT_OF_MEMORY as u32), "{error}");
                            failures.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        }
                    }
                }
            })
        })
        .collect();
    for worker in workers {
        worker.join().expect("a worker thread panicked");
    }
    fake.clear_faults();
    fake.set_deferred(false);
    let counts = fake.counts();
    assert!(failures.load(std::sync::atomic::Ordering::Relaxed) > 0, "faults fired");
    assert_eq!((counts.double_frees, counts.invalid_handles), (0, 0), "{counts}");
    tests::faults::clear_current_contexts();
    fake.destroy_all();
}

/// One round of a worker: its own context kind, module, buffers, stream.
fn work(t: usize, round: usize) -> cuda_driver::Result<()> {
    let device = Device::get((t % 2) as u32)?;
    let context = if round % 3 == 0 {
        Context::new(&device, Default::default())?
    } else {
        Context::primary(&device)?
    };
    let module = Module::from_ptx(&context, fake::KERNELS)?;
    let fill = module.function("fill")?;
    let stream = Stream::new(&context)?;
    let mut data = DeviceBuffer::<f32>::alloc_async(&stream, 256)?;
    // SAFETY: fill writes 256 floats of a buffer of 256.
    unsafe { stream.launch(&fill, &LaunchConfig::for_num_elems(256), (&mut data, t as f32, 256u32))? };
    let back = data.to_vec()?;
    if back.iter().any(|&v| v != t as f32) {
        return Err(cuda_driver::Error::InvalidValue(format!("thread {t}: wrong result")));
    }
    Ok(())
}
