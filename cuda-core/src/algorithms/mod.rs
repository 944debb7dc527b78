//! Device-wide algorithms on device memory (the role of `cuda.compute`): they take memory under
//! the device-memory contract ([`DeviceMemory`](crate::driver::DeviceMemory),
//! [`DeviceMemoryMut`](crate::driver::DeviceMemoryMut)), a stream and lengths, and need no
//! array. Their code is the project's own kernels, generated as CUDA C++ and compiled by NVRTC
//! through the kernel cache and the registry of generated code; scratch memory comes from the
//! context's [`MemoryPool`](crate::MemoryPool), in the stream's order. They are part of the
//! `array` feature, which holds the pool and the registry.
//!
//! Memory is read and written as the dense range the contract gives (`byte_len()` bytes from
//! `device_ptr()`); a [`DeviceArray`](crate::DeviceArray) view that is not dense (strided,
//! transposed, reversed, broadcast) is refused by the contract with `NotDense`. Each call checks that every buffer
//! belongs to the stream's context and holds the bytes its length needs, and that no output
//! overlaps another buffer of the call (by address range): typed errors, before anything runs.
//! Everything is queued on the stream with no host wait, except where a result's size or a
//! check depends on the data (a `sorter`'s check, `unique`'s count), each documented.
//! - [`sort`]: stable radix sort of keys, pairs, `argsort`, and of the rows of a matrix;
//! - [`search`]: lower and upper bounds of many queries in sorted keys;
//! - [`histogram`]: counts in even bins.
//!
//! The array routines on top (`sort`, `argsort`, `partition`, `lexsort`, `searchsorted`,
//! `digitize`, `unique`, `isin`, `union1d`, `histogram`, `bincount`, `median`, `percentile`,
//! `quantile` and their `nan` forms) live with [`DeviceArray`](crate::DeviceArray).

pub mod histogram;
pub mod search;
pub mod sort;
