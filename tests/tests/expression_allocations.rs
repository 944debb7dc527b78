//! A cache-hit array expression allocates nothing on the heap beyond its result: a counting
//! global allocator watches `w.assign(&x * &y + &z)` (what bench-array times against a
//! `RawKernel` launch) and `(&x * &y + &z).eval()` over compact f32 arrays, against the
//! stand-in driver, after a warm-up evaluation has generated, compiled and loaded the kernel.
//! The generated kernels are compiled by NVRTC and loaded as PTX; the stand-in runs these two
//! expressions (`x*y+z` and `a*x+y` of f32) on the host. Without NVRTC the tests say so and pass.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicUsize, Ordering};

use cuda_core::DeviceArray;
use cuda_driver::Stream;
use tests::checks::setup;

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
fn allocations_in<R>(body: impl FnOnce() -> R) -> (usize, R) {
    let before = ALLOCATIONS.load(Ordering::Relaxed);
    COUNTING.with(|c| c.set(true));
    let result = body();
    COUNTING.with(|c| c.set(false));
    (ALLOCATIONS.load(Ordering::Relaxed) - before, result)
}

/// Whether NVRTC can be loaded (the expression's kernel is compiled at run time).
fn nvrtc_available(test: &str) -> bool {
    match cuda_sys::nvrtc() {
        Ok(_) => true,
        Err(why) => {
            println!("skipped: {test}: NVRTC is not available ({why})");
            false
        }
    }
}

const N: usize = 1000;

/// `x`, `y`, `z` of [`N`] f32 each on `stream`: `i`, `2` and `1`.
fn operands(stream: &Stream) -> [DeviceArray<f32>; 3] {
    let xs: Vec<f32> = (0..N).map(|i| i as f32).collect();
    [
        DeviceArray::from_slice(stream, &xs).unwrap(),
        DeviceArray::full(stream, N, 2.0f32).unwrap(),
        DeviceArray::full(stream, N, 1.0f32).unwrap(),
    ]
}

fn expected() -> Vec<f32> {
    (0..N).map(|i| i as f32 * 2.0 + 1.0).collect()
}

#[test]
fn cache_hit_assign_of_an_expression_allocates_nothing() {
    if !nvrtc_available("cache-hit assign") {
        return;
    }
    cuda_core::load_generated_as_ptx(true);
    let (_fake, context) = setup();
    let stream = Stream::new(&context).unwrap();
    let [x, y, z] = operands(&stream);
    let mut w = DeviceArray::<f32>::empty(&stream, N).unwrap();
    // Warm-up: generates, compiles and loads the kernel, and resolves the driver's entry points.
    w.assign(&x * &y + &z).unwrap();
    let (allocations, ()) = allocations_in(|| {
        for _ in 0..100 {
            w.assign(&x * &y + &z).unwrap();
        }
    });
    assert_eq!(
        allocations, 0,
        "100 cache-hit assigns of x*y+z made {allocations} heap allocations"
    );
    assert_eq!(w.to_vec().unwrap(), expected());
    // With a scalar (a kernel parameter) the same.
    w.assign(2.0 * &x + &y).unwrap();
    let (allocations, ()) = allocations_in(|| {
        for _ in 0..100 {
            w.assign(2.0 * &x + &y).unwrap();
        }
    });
    assert_eq!(
        allocations, 0,
        "100 cache-hit assigns of 2*x+y made {allocations} heap allocations"
    );
    let want: Vec<f32> = (0..N).map(|i| 2.0 * i as f32 + 2.0).collect();
    assert_eq!(w.to_vec().unwrap(), want);
    // The counter does count: a Vec allocates once.
    assert_eq!(allocations_in(|| drop(std::hint::black_box(vec![0u8; 64]))).0, 1);
}

#[test]
fn cache_hit_eval_of_an_expression_allocates_only_its_result() {
    if !nvrtc_available("cache-hit eval") {
        return;
    }
    cuda_core::load_generated_as_ptx(true);
    let (_fake, context) = setup();
    let stream = Stream::new(&context).unwrap();
    let [x, y, z] = operands(&stream);
    let warm = (&x * &y + &z).eval().unwrap();
    assert_eq!(warm.to_vec().unwrap(), expected());
    drop(warm);
    // What a new array of the result's shape costs by itself (its shape, strides, storage and
    // pool record): the most an evaluation may allocate.
    let (result_only, empty) = allocations_in(|| DeviceArray::<f32>::empty(&stream, vec![N]).unwrap());
    drop(empty);
    let (allocations, results) = allocations_in(|| {
        let mut results = Vec::with_capacity(10);
        for _ in 0..10 {
            results.push((&x * &y + &z).eval().unwrap());
        }
        results
    });
    // One allocation is the `results` vector itself.
    assert_eq!(
        allocations,
        1 + 10 * result_only,
        "10 cache-hit evaluations of x*y+z: {allocations} heap allocations, a new array alone makes {result_only}"
    );
    for result in results {
        assert_eq!(result.to_vec().unwrap(), expected());
    }
}
