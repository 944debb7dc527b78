//! cuda-core's `.npy` reader on bad data: a seeded, time-bounded fuzz run mutating valid files
//! (bytes flipped, cut, inserted; header lengths, shapes and `descr`s replaced), asserting that
//! every input is read or refused with an error, never a panic, and that reading allocates on
//! the host no more than a small multiple of the input's size (a counting global allocator
//! watches the live bytes): a short file that claims a large shape is refused before its shape
//! is allocated. Against the stand-in driver, whose device memory is not the Rust heap.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicIsize, Ordering};
use std::time::{Duration, Instant};

use cuda_core::{DeviceArray, Element, NpyError};
use cuda_driver::Stream;
use tests::checks::setup;

/// Tracks, for the thread whose `COUNTING` flag is set, the bytes allocated and not yet freed.
struct CountingAllocator;

static LIVE: AtomicIsize = AtomicIsize::new(0);
static PEAK: AtomicIsize = AtomicIsize::new(0);

thread_local! {
    static COUNTING: Cell<bool> = const { Cell::new(false) };
}

// SAFETY: every call is forwarded unchanged to the system allocator; the bookkeeping touches
// only atomics and a const-initialised thread-local.
unsafe impl GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if COUNTING.with(Cell::get) {
            let live = LIVE.fetch_add(layout.size() as isize, Ordering::Relaxed) + layout.size() as isize;
            PEAK.fetch_max(live, Ordering::Relaxed);
        }
        // SAFETY: the caller's contract for `alloc` is passed on as is.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if COUNTING.with(Cell::get) {
            LIVE.fetch_sub(layout.size() as isize, Ordering::Relaxed);
        }
        // SAFETY: the caller's contract for `dealloc` is passed on as is.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: CountingAllocator = CountingAllocator;

/// The most bytes live at once on this thread (above those live before) while `body` runs.
fn peak_bytes_in<R>(body: impl FnOnce() -> R) -> (R, usize) {
    LIVE.store(0, Ordering::Relaxed);
    PEAK.store(0, Ordering::Relaxed);
    COUNTING.with(|c| c.set(true));
    let result = body();
    COUNTING.with(|c| c.set(false));
    (result, PEAK.load(Ordering::Relaxed).max(0) as usize)
}

/// What reading `input` may allocate on the host: a few times the input (the header's text,
/// the elements as they arrive, the buffer's growth by doubling), and a fixed allowance for
/// the first read chunk, messages and the array's own bookkeeping.
fn allowance(input: &[u8]) -> usize {
    4 * input.len() + (512 << 10)
}

/// A `.npy` file: magic, version, header length, the dict padded with spaces and a newline,
/// then `body`.
fn npy(version: u8, dict: &str, body: &[u8]) -> Vec<u8> {
    let mut header = dict.as_bytes().to_vec();
    header.push(b'\n');
    let mut out = b"\x93NUMPY".to_vec();
    out.extend_from_slice(&[version, 0]);
    match version {
        1 => out.extend_from_slice(&(header.len() as u16).to_le_bytes()),
        _ => out.extend_from_slice(&(header.len() as u32).to_le_bytes()),
    }
    out.extend_from_slice(&header);
    out.extend_from_slice(body);
    out
}

/// Reads `input` as `.npy` data of `T`, asserting no panic and host allocation within the
/// allowance; the result.
#[track_caller]
fn read_checked<T: Element>(stream: &Stream, input: &[u8]) -> cuda_core::Result<DeviceArray<T>> {
    let (result, peak) = peak_bytes_in(|| catch_unwind(AssertUnwindSafe(|| DeviceArray::<T>::read_npy(stream, input))));
    let result = result.unwrap_or_else(|_| panic!("reading panicked on {:?}", String::from_utf8_lossy(input)));
    assert!(
        peak <= allowance(input),
        "{peak} bytes allocated for {} bytes of input ({:?})",
        input.len(),
        String::from_utf8_lossy(&input[..input.len().min(160)])
    );
    if let Ok(array) = &result {
        assert!(
            array.len() * std::mem::size_of::<T>() <= input.len(),
            "{} elements from {} bytes",
            array.len(),
            input.len()
        );
    }
    result
}

#[test]
fn a_multibyte_descr_is_a_dtype_error() {
    let (_fake, context) = setup();
    let stream = Stream::new(&context).unwrap();
    for descr in ["\u{e9}1", "\u{20ac}", "\u{e9}"] {
        let dict = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': (2,), }}");
        let input = npy(3, &dict, &[1, 2]);
        match read_checked::<u8>(&stream, &input) {
            Err(cuda_core::Error::Npy(NpyError::Dtype { descr: found, .. })) => assert_eq!(found, descr),
            other => panic!("{descr:?}: {other:?}"),
        }
        assert!(read_checked::<cuda_core::Bool>(&stream, &input).is_err());
    }
}

#[test]
fn a_short_file_that_claims_512_mib_allocates_little() {
    let (_fake, context) = setup();
    let stream = Stream::new(&context).unwrap();
    // 2^27 four-byte elements, and 8 of them there.
    let input = npy(
        1,
        "{'descr': '<f4', 'fortran_order': False, 'shape': (134217728,), }",
        &[0; 32],
    );
    assert!(input.len() < 128, "{}", input.len());
    match read_checked::<f32>(&stream, &input) {
        Err(cuda_core::Error::Npy(NpyError::Truncated { expected, found })) => {
            assert_eq!((expected, found), (512 << 20, 32))
        }
        other => panic!("{other:?}"),
    }
    // A claim larger than any host (2^60 elements) is refused alike, as is one that overflows.
    let input = npy(
        1,
        "{'descr': '<f8', 'fortran_order': False, 'shape': (1073741824, 1073741824), }",
        &[7; 8],
    );
    assert!(read_checked::<f64>(&stream, &input).is_err());
    let input = npy(
        2,
        "{'descr': '<f8', 'fortran_order': True, 'shape': (4294967296, 4294967296, 2), }",
        &[],
    );
    assert!(matches!(
        read_checked::<f64>(&stream, &input),
        Err(cuda_core::Error::Npy(NpyError::Header(message))) if message.contains("overflows")
    ));
    // A header length of 4 GiB with a few bytes behind it.
    let mut input = b"\x93NUMPY\x02\x00\xff\xff\xff\xff{'descr'".to_vec();
    input.extend_from_slice(&[b' '; 40]);
    assert!(matches!(
        read_checked::<f64>(&stream, &input),
        Err(cuda_core::Error::Npy(NpyError::Header(_)))
    ));
    // The same file whole reads.
    let body: Vec<u8> = (0..48u8).collect();
    let input = npy(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }", &body);
    let array = read_checked::<f32>(&stream, &input).unwrap();
    assert_eq!(array.shape(), [3, 4]);
}

/// A small xorshift generator: the same cases on every run of one seed.
struct XorShift(u64);

impl XorShift {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// Fragments that parsers of this header tend to get wrong, spliced into headers.
const SPLICES: &[&str] = &[
    "\u{e9}",
    "\u{20ac}",
    "\u{1f600}",
    "'",
    "\"",
    "(",
    ")",
    ",",
    ":",
    "{",
    "}",
    "True",
    "False",
    "18446744073709551615",
    "18446744073709551616",
    "4294967296",
    "134217728",
    "-1",
    "'descr'",
    "'shape'",
    "'fortran_order'",
    "'<f4'",
    "'|u1'",
    "'\u{e9}1'",
    "()",
    "(0,)",
    "(1 << 40,)",
];

/// A valid file of a random version, dtype, order and shape, then a few random mutations.
fn mutated_case(rng: &mut XorShift) -> Vec<u8> {
    let descrs = ["<f4", "<f8", "|u1", "<u1", "=i1", "|b1", "<i8", "<f2", ">f4", "|V2"];
    let descr = descrs[rng.below(descrs.len())];
    let dims: Vec<usize> = (0..rng.below(4)).map(|_| rng.below(5)).collect();
    let shape = match dims.len() {
        1 => format!("({},)", dims[0]),
        _ => format!("({})", dims.iter().map(usize::to_string).collect::<Vec<_>>().join(", ")),
    };
    let order = ["False", "True"][rng.below(2)];
    let mut dict = format!("{{'descr': '{descr}', 'fortran_order': {order}, 'shape': {shape}, }}");
    for _ in 0..rng.below(3) {
        let at = rng.below(dict.len() + 1);
        if dict.is_char_boundary(at) {
            dict.insert_str(at, SPLICES[rng.below(SPLICES.len())]);
        }
    }
    let elements: usize = dims.iter().product();
    let body: Vec<u8> = (0..elements * 8 + rng.below(16)).map(|_| rng.next() as u8).collect();
    let mut bytes = npy([1, 2, 3][rng.below(3)], &dict, &body);
    for _ in 0..rng.below(4) {
        match rng.below(5) {
            0 if !bytes.is_empty() => {
                let at = rng.below(bytes.len());
                bytes[at] ^= 1 << rng.below(8);
            }
            1 => bytes.truncate(rng.below(bytes.len() + 1)),
            2 => {
                let at = rng.below(bytes.len() + 1);
                bytes.insert(at, rng.next() as u8);
            }
            // The header length: anything, up to 4 GiB.
            3 if bytes.len() >= 12 => {
                let length = rng.next().to_le_bytes();
                let width = if bytes[6] == 1 { 2 } else { 4 };
                bytes[8..8 + width].copy_from_slice(&length[..width]);
            }
            _ => bytes.extend((0..rng.below(64)).map(|_| rng.next() as u8)),
        }
    }
    bytes
}

#[test]
fn mutated_files_are_read_or_refused_without_panics_or_large_allocations() {
    let (_fake, context) = setup();
    let stream = Stream::new(&context).unwrap();
    // Seeded, and bounded in time (for CI) as well as in count.
    let mut rng = XorShift(0x9e37_79b9_7f4a_7c15);
    let deadline = Instant::now() + Duration::from_secs(3);
    let (mut cases, mut loaded) = (0usize, 0usize);
    while cases < 200_000 && Instant::now() < deadline {
        let input = mutated_case(&mut rng);
        let results = [
            read_checked::<f32>(&stream, &input).is_ok(),
            read_checked::<u8>(&stream, &input).is_ok(),
            read_checked::<f64>(&stream, &input).is_ok(),
            read_checked::<cuda_core::Bool>(&stream, &input).is_ok(),
        ];
        loaded += results.iter().filter(|&&ok| ok).count();
        cases += 1;
    }
    // The generator makes both kinds: files that load and files that are refused.
    assert!(cases >= 100, "only {cases} cases in the time");
    assert!(
        loaded > 0 && loaded < 4 * cases,
        "{loaded} of {} reads loaded",
        4 * cases
    );
    println!("{cases} mutated files, {loaded} reads loaded");
}
