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
use tests::checks::{nvrtc_available, setup};

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

/// The cache-hit path keeps every check: an operand overlapping the output other than as the
/// same view still goes through a temporary (NumPy's result, which a kernel reading `x` while
/// writing `w` one element later would not give), an operand that does not broadcast to the
/// output's shape and an array of another context are still refused,
/// and so, for a user's `ElementwiseKernel`, is an input overlapping its output.
#[test]
fn cache_hit_expressions_keep_their_overlap_and_context_checks() {
    if !nvrtc_available("cache-hit checks") {
        return;
    }
    cuda_core::load_generated_as_ptx(true);
    let (_fake, context) = setup();
    let stream = Stream::new(&context).unwrap();
    let [x, y, z] = operands(&stream);
    let mut w = DeviceArray::<f32>::empty(&stream, N).unwrap();
    // Warm: the kernel is loaded and this thread has looked it up.
    w.assign(&x * &y + &z).unwrap();
    let host: Vec<f32> = (0..=N).map(|i| i as f32).collect();
    let buffer = DeviceArray::from_slice(&stream, &host).unwrap();
    let mut shifted = buffer.slice(&[(1..=N).into()]).unwrap();
    let first = buffer.slice(&[(0..N).into()]).unwrap();
    shifted.assign(&first * &y + &z).unwrap();
    let want: Vec<f32> = (0..N).map(|i| i as f32 * 2.0 + 1.0).collect();
    assert_eq!(
        shifted.to_vec().unwrap(),
        want,
        "w[1:] = w[:-1] * y + z reads before writing"
    );
    // The same view in and out is no overlap to stage: each element is read, then written.
    let mut same = DeviceArray::from_slice(&stream, &host[..N]).unwrap();
    let alias = same.slice(&[(..).into()]).unwrap();
    same.assign(&alias * &y + &z).unwrap();
    assert_eq!(same.to_vec().unwrap(), want);
    // An operand whose shape does not broadcast to the output's (the kernel is the cached one:
    // shapes are not part of its key).
    let half = DeviceArray::full(&stream, N / 2, 1.0f32).unwrap();
    let error = w.assign(&x * &y + &half).unwrap_err();
    assert!(error.to_string().contains("cannot be broadcast"), "{error}");
    assert_eq!(w.to_vec().unwrap(), expected(), "nothing written");
    // An operand of another context.
    let other = cuda_driver::Context::primary(&cuda_driver::Device::get(1).unwrap()).unwrap();
    let elsewhere = DeviceArray::full(&Stream::new(&other).unwrap(), N, 1.0f32).unwrap();
    let error = w.assign(&x * &y + &elsewhere).unwrap_err();
    assert!(error.to_string().contains("context"), "{error}");
    // A user's kernel still checks overlap itself.
    let axpy = cuda_core::ElementwiseKernel::new("T x, T y", "T z", "z = x * y", "mul").unwrap();
    let mut shifted = buffer.slice(&[(1..=N).into()]).unwrap();
    // SAFETY: the operation reads its inputs' elements and assigns its output's element only
    // (and is refused before it runs).
    let error = unsafe {
        axpy.launch(
            &stream,
            &[
                cuda_core::Arg::from(&first),
                cuda_core::Arg::from(&y),
                cuda_core::Arg::from(&mut shifted),
            ],
        )
    }
    .unwrap_err();
    assert!(error.to_string().contains("overlaps output"), "{error}");
}
