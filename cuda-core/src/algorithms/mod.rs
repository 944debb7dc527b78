//! Device-wide algorithms on device memory (the role of `cuda.compute`): they take memory under
//! the device-memory contract ([`DeviceMemory`](crate::driver::DeviceMemory),
//! [`DeviceMemoryMut`](crate::driver::DeviceMemoryMut)), a stream and lengths, and need no
//! array. Their code is the project's own kernels, generated as CUDA C++ and compiled by NVRTC
//! through the kernel cache and the registry of generated code; scratch memory comes from the
//! context's [`MemoryPool`](crate::MemoryPool), in the stream's order. They are part of the
//! `array` feature, which holds the pool and the registry.
//! - [`sort`]: stable radix sort of keys, pairs, `argsort`, and of the rows of a matrix;
//! - [`search`]: lower and upper bounds of many queries in sorted keys;
//! - [`histogram`]: counts in even bins.

pub mod histogram;
pub mod search;
pub mod sort;
