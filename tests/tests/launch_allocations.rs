//! The launch path allocates nothing on the heap: a counting global
//! allocator watches 1000 typed launches (plain and through
//! `cuLaunchKernelEx`) against the stand-in driver, after a warm-up launch of
//! each kind has resolved their entry points and filled the per-function caches.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicUsize, Ordering};

use cuda_driver::{Context, Device, DeviceBuffer, LaunchAttributes, LaunchConfig, Module, Stream};
use tests::fake;

/// Counts the allocations made on a thread while its `COUNTING` flag is set.
struct CountingAllocator;

static ALLOCATIONS: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    static COUNTING: Cell<bool> = const { Cell::new(false) };
}

// SAFETY: every call is forwarded unchanged to the system allocator; the
// bookkeeping touches only an atomic and a const-initialised thread-local.
unsafe impl GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if COUNTING.with(Cell::get) {
            ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        }
        // SAFETY: the caller's contract for `alloc` is passed on as is.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller's contract for `dealloc` is passed on as is.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: CountingAllocator = CountingAllocator;

/// Heap allocations `body` makes on this thread.
fn allocations_in(body: impl FnOnce()) -> usize {
    let before = ALLOCATIONS.load(Ordering::Relaxed);
    COUNTING.with(|c| c.set(true));
    body();
    COUNTING.with(|c| c.set(false));
    ALLOCATIONS.load(Ordering::Relaxed) - before
}

#[test]
fn typed_launches_make_no_heap_allocation() {
    let _fake = fake::session();
    let context = Context::primary(&Device::get(0).unwrap()).unwrap();
    let module = Module::from_ptx(&context, fake::KERNELS).unwrap();
    let fill = module.function("fill").unwrap();
    let stream = Stream::new(&context).unwrap();
    let n = 4096u32;
    let mut out = DeviceBuffer::<f32>::zeroed(&context, n as usize).unwrap();
    let config = LaunchConfig::for_num_elems(n);
    let attributes = LaunchAttributes::default();
    // SAFETY (every launch here): `fill` writes n floats of `out`, which holds n.
    // Warm-up: the first launch of each kind resolves its driver entry point and caches the
    // function's parameter layout and limits.
    unsafe { stream.launch(&fill, &config, (&mut out, 0.0f32, n)).unwrap() };
    unsafe {
        stream
            .launch_ex(&fill, &config, &attributes, (&mut out, 0.0f32, n))
            .unwrap()
    };

    let allocations = allocations_in(|| {
        for i in 0..1000 {
            unsafe { stream.launch(&fill, &config, (&mut out, i as f32, n)).unwrap() };
            unsafe {
                stream
                    .launch_ex(&fill, &config, &attributes, (&mut out, i as f32, n))
                    .unwrap()
            };
        }
    });
    stream.synchronize().unwrap();
    assert_eq!(allocations, 0, "2000 launches made {allocations} heap allocations");
    assert!(out.to_vec().unwrap().iter().all(|&v| v == 999.0));
    // The counter does count: a Vec allocates once.
    assert_eq!(allocations_in(|| drop(std::hint::black_box(vec![0u8; 64]))), 1);
}
