//! The `cuda.core` counterpart for Rust: compile CUDA C++ at run time with NVRTC ([`Program`]),
//! hold and link device code ([`ObjectCode`], [`Linker`] over nvJitLink), keep compiled code in
//! a memory and disk [`KernelCache`], and load and launch kernels ([`Device`], [`Kernel`],
//! [`LaunchConfig`], [`launch`]) on top of `cuda-driver`.
//!
//! ```no_run
//! use cuda_core::{launch, CompileTarget, DeviceBuffer, Device, LaunchConfig, Program, ProgramOptions};
//!
//! # fn main() -> cuda_core::Result<()> {
//! let source = r#"
//! template <typename T>
//! __global__ void add(const T *x, const T *y, T *out, unsigned n) {
//!     unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
//!     if (i < n) out[i] = x[i] + y[i];
//! }"#;
//! let device = Device::new(0)?;
//! device.set_current()?;
//! // No arch given: compiled for the current device's (sm_90 on an H100/H200).
//! let program = Program::new(source, ProgramOptions::default()).with_name_expressions(["add<float>"]);
//! let code = program.compile(CompileTarget::Cubin)?; // cached in memory and on disk
//! let kernel = code.get_kernel("add<float>")?;
//!
//! let x = DeviceBuffer::from_slice(device.context(), &[1.0f32, 2.0, 3.0])?;
//! let y = DeviceBuffer::from_slice(device.context(), &[10.0f32, 20.0, 30.0])?;
//! let mut out = DeviceBuffer::<f32>::zeroed(device.context(), 3)?;
//! let stream = device.create_stream()?;
//! // SAFETY: add<float> reads 3 floats of x and y and writes 3 to out.
//! unsafe { launch(&stream, &LaunchConfig::for_num_elems(3), &kernel, (&x, &y, &mut out, 3u32))? };
//! stream.synchronize()?;
//! assert_eq!(out.to_vec()?, [11.0, 22.0, 33.0]);
//! # Ok(())
//! # }
//! ```
//!
//! # Arrays
//! [`DeviceArray`] is CuPy's `ndarray`: operators build one fused kernel, reductions run on the
//! array's stream, [`random`] fills arrays from a counter-based generator, and `Display` prints
//! as NumPy does. CuPy's `z = 2.0 * x + y; print(float(cp.sum(z)))` is:
//!
//! ```no_run
//! use cuda_core::{random, Device};
//!
//! # fn main() -> cuda_core::Result<()> {
//! let stream = Device::new(0)?.create_stream()?;
//! let x = random::rand::<f32>(&stream, 1 << 20, 1)?;
//! let y = random::rand::<f32>(&stream, 1 << 20, 2)?;
//! let z = (2.0 * &x + &y).eval()?;
//! println!("{}", z.sum()?.item()?);
//! println!("{z}");
//! # Ok(())
//! # }
//! ```
//!
//! # Where the code lives
//! - `program.rs`, `object_code.rs`, `linker.rs`, `cache.rs`, `kernel.rs`, `launch.rs`: the
//!   `cuda.core` layer (compile, link, cache, load, launch), over the vocabulary below it
//!   (`arch.rs`, `code_kind.rs`, `options.rs`, `error.rs`), which imports none of it: no
//!   import circle. The driver is reached through cuda-driver only; NVRTC and
//!   nvJitLink, this layer's own, directly (`nvrtc.rs`, `linker.rs`).
//! - `graph/`: cuda.core's `GraphBuilder` over stream capture, and the replay of a captured
//!   step of array work.
//! - `algorithms/`: the device-wide algorithms on contract memory (radix sort, searches,
//!   histograms), the project's own kernels generated through the array layer's registry.
//! - `array/`: the array layer, in folders from the bottom up: `memory/` (the pool; ordering
//!   of memory several streams use, through cuda-driver's device-memory contract; overlap by
//!   address range), `device_array.rs` and `view.rs` (the type and its views), `kernels/` (the
//!   kernel families, their shared argument checks, the one launch path and the one registry
//!   of generated code), `routines/` (NumPy's chapters: creation, manipulation, math,
//!   reductions, random, linalg, io, printing, sorting, searching, sets, statistics), `interop/`
//!   (DLPack, Python).
//! - A new ufunc is one line of `routines/math.rs`'s tables; a new reduction one arm in
//!   `routines/reductions.rs`; a new kernel family one file in `kernels/` and its `mod` line; a
//!   routine that needs an NVIDIA library calls the `cuda-libs` crate from its chapter (as
//!   `matmul` does, feature `blas`).
//!
//! # Features
//! - `array` (default): the array layer, everything under `array/` ([`DeviceArray`], its
//!   routines, [`MemoryPool`], DLPack). Without it the crate is the compile, link, cache and
//!   launch layer alone, and builds in about half the time: what a crate that brings its own
//!   kernels needs (`default-features = false`).
//! - `blas` (default, implies `array`): `matmul` and the other matrix products through cuBLAS.
//! - `fft` (default, implies `array`): [`fft`], NumPy's fft module through cuFFT. On by default
//!   as `blas` is: cuFFT is loaded at run time, on the first transform, so a program that never
//!   transforms needs no cuFFT; the feature costs only build time.
//! - `solver` (default, implies `blas`): NumPy's `linalg` routines that factor matrices
//!   (`solve`, `inv`, `det`, `slogdet`, `cholesky`) through cuSOLVER and cuBLAS's batched LU.
//! - `python` (implies `array`): `DeviceArray` as a Python object, with pyo3.
//!
//! # One dependency
//! `cuda-core` alone serves: the driver types its signatures use ([`Stream`], [`Event`],
//! [`Context`], [`DeviceAttribute`], [`DeviceBuffer`], ...) are re-exported here, the whole
//! driver layer as [`driver`], the raw bindings as [`sys`], and the 16-bit floats as
//! [`f16`](struct@f16) and [`bf16`]:
//!
//! ```no_run
//! use cuda_core::{f16, DeviceArray, Event, EventFlags, Stream};
//!
//! fn halves(stream: &Stream, data: &[f32]) -> cuda_core::Result<(DeviceArray<f16>, Event)> {
//!     let host: Vec<f16> = data.iter().map(|&x| f16::from_f32(x)).collect();
//!     let array = DeviceArray::from_slice(stream, &host)?;
//!     let done = Event::new(stream.context(), EventFlags::DISABLE_TIMING)?;
//!     done.record(stream)?;
//!     Ok((array, done))
//! }
//! ```
//!
//! Compiling and linking need no GPU: NVRTC and nvJitLink are found at run time by `cuda-sys`
//! (`CUDA_NVRTC_LIBRARY`, `CUDA_NVJITLINK_LIBRARY`, `CUDA_HOME`, Python wheels, ...).
//!
//! # The kernel cache
//! [`Program::compile`] goes through [`KernelCache::global`]: in memory, and on disk in
//! `$CUDA_RS_CACHE_DIR`, else `$XDG_CACHE_HOME/cuda-rs/kernels`, else `$HOME/.cache/cuda-rs/kernels`;
//! `CUDA_RS_CACHE=0` or [`ProgramOptions::cache`] `= false` turns it off. Entries are keyed on a
//! SHA-256 of the source, headers, options, architecture, target, name expressions and NVRTC
//! version, written atomically, checksummed, and carry the lowered names. The memory side
//! keeps every entry (and the modules loaded from it) for the life of the process.
//!
//! # At exit
//! Once the process has used a default [`MemoryPool`] or a generated kernel, a hook registered
//! with the C library's `atexit` gives the process-wide caches back when it exits: the default
//! pools' cached blocks, the generated kernels' modules and the memory side of the kernel
//! cache (see `docs/SANITIZER.md`).

#![warn(missing_docs)]
// Where crates documented without this one (docs.rs builds each alone) link its items.
#![doc(html_root_url = "https://docs.rs/cudars-core/0.1.0")]

#[cfg(feature = "array")]
pub mod algorithms;
mod arch;
#[cfg(feature = "array")]
mod array;
#[cfg(feature = "array")]
mod at_exit;
mod cache;
mod code_kind;
mod cuda_headers;
mod device;
mod device_target;
mod driver_link;
mod error;
pub mod graph;
mod kernel;
mod launch;
mod linker;
mod nvrtc;
mod object_code;
mod options;
mod program;

pub use arch::{Arch, ParseArchError};
#[cfg(feature = "fft")]
pub use array::fft;
#[cfg(feature = "python")]
pub use array::interop::python;
#[cfg(feature = "array")]
pub use array::random;
#[cfg(feature = "array")]
pub use array::release_completed_imports;
#[cfg(feature = "array")]
pub use array::{
    allclose, array_equal, broadcast_shapes, load_generated_as_ptx, size_class, unload_generated_kernels, where_, Arg,
    ArgType, Average, AverageOf, Axes, Axis, BinRule, Bitwise, Bool, ComplexElement, DLDataType, DLDataTypeCode,
    DLDevice, DLDeviceType, DLManagedTensor, DLManagedTensorVersioned, DLPackError, DLPackFlags, DLPackTensor,
    DLPackVersion, DLTensor, DType, DeviceArray, Element, ElementwiseKernel, Expr, ExprOps, IndexElement, IndexMode,
    IndexWidth, Integral, Interpolated, IntoExpr, IntoShape, MemoryPool, MeshIndexing, NpyError, OptionalAxis, PadMode,
    PoolStats, PooledBlock, Promote, QuantileMethod, RawKernel, ReductionKernel, Rhs, Scalars, Slice, SortComplex,
    SplitAt, Unique, WhereArms,
};
#[cfg(feature = "blas")]
pub use array::{
    matmul_replay, multi_dot, set_matmul_replay, set_tf32, tf32, MatmulElement, MatmulType, Norm, NormElement,
    NormInput, NormOf, TensorAxes, TF32_ENV,
};
#[cfg(feature = "solver")]
pub use array::{LinalgInput, Lstsq, RealResult, Solved, SolverElement};
#[cfg(feature = "array")]
pub use at_exit::release_process_caches;
pub use cache::{CacheKey, CacheOutcome, CacheStats, KernelCache, CACHE_DIR_ENV, CACHE_SWITCH_ENV};
pub use code_kind::CodeKind;
pub use cuda_headers::find_cuda_include_dirs;
pub use device::{Device, DeviceProperties};
pub use device_target::{device_target, nvrtc_supported_archs};
pub use error::{Error, Result};
#[cfg(feature = "array")]
pub use graph::CapturedStep;
pub use graph::GraphBuilder;
pub use kernel::{Kernel, KernelAttributes};
pub use launch::{launch, launch_ex};
pub use linker::{LinkTarget, Linker, LinkerOptions};
/// The complex element type of arrays (`Complex<f32>` is NumPy's `complex64`, `Complex<f64>`
/// its `complex128`), from the `num-complex` crate.
#[cfg(feature = "array")]
pub use num_complex::Complex;
pub use object_code::ObjectCode;
pub use options::{CompileTarget, ProgramOptions, Std};
pub use program::Program;

/// The driver layer this crate is built on (`cuda-driver`), whole: every type a program may
/// need beyond those re-exported below, under one dependency.
pub use cuda_driver as driver;
/// The driver types that appear in this crate's signatures, so that naming them needs no
/// `cuda-driver` dependency of one's own. They are documented in `cuda-driver`.
#[doc(no_inline)]
pub use cuda_driver::{
    Context, DeviceAttribute, DeviceBuffer, DeviceCopy, DeviceSlice, DeviceSliceMut, DriverError, Event, EventFlags,
    Function, HostBuffer, KernelArg, KernelArgs, LaunchAttributes, LaunchConfig, Module, ParamInfo, PitchedBuffer,
    PitchedMut, Stream, StreamFlags,
};
/// The raw bindings (`cuda-sys`): the function tables and `CU*` types, for escape hatches.
pub use cuda_sys as sys;
/// The 16-bit floats `DeviceArray<f16>` and `DeviceArray<bf16>` hold (from the `half` crate),
/// so they need no `half` dependency of one's own.
#[doc(no_inline)]
pub use half::{bf16, f16};

#[cfg(test)]
mod tests {
    #[test]
    fn handles_are_send_and_sync() {
        fn send_sync<T: Send + Sync>() {}
        send_sync::<crate::Program>();
        send_sync::<crate::ObjectCode>();
        send_sync::<crate::KernelCache>();
        send_sync::<crate::Linker>();
        send_sync::<crate::Kernel>();
        send_sync::<crate::Device>();
        send_sync::<crate::Error>();
    }
}
