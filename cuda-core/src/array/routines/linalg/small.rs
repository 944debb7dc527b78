//! What the crate's own factoring kernels share: matrices up to [`LARGEST_ORDER`] on a side,
//! each factored by one block in a shared-memory tile, and the word through which the first
//! failing matrix of a stack comes back (`index << 8 | step`, the lowest taken by `atomicMin`,
//! read back once: the routine's one host wait).

use std::sync::Arc;

use cuda_driver::Stream;

use crate::array::device_array::DeviceArray;
use crate::array::dtype::DType;
use crate::array::kernels::launch::Launch;
use crate::array::kernels::registry::{kernel, KernelKey, Loaded, LoadedTable};
use crate::array::kernels::{Arg, ArgType};
use crate::error::{Error, Result};

/// The largest order factored by one block (32 for `Complex<f64>`, whose 64^2 tile would pass
/// the 48 KiB of static shared memory a block may have).
pub(super) const LARGEST_ORDER: usize = 64;

/// Threads of a block at most (fewer for tiles of fewer elements).
const THREADS: usize = 256;

/// Blocks at most; each loops over the matrices past the grid.
const MAX_BLOCKS: usize = 1 << 20;

/// No matrix failed: the failure word's initial value.
const NO_FAILURE: u64 = u64::MAX;

/// The edge of the shared tile that factors an `n x n` matrix of `dtype`, a power of two from
/// 8; `None` where `n` is too large for one block.
pub(super) fn tile_order(n: usize, dtype: DType) -> Option<usize> {
    let largest = match dtype {
        DType::C128 => LARGEST_ORDER / 2,
        _ => LARGEST_ORDER,
    };
    (n <= largest).then(|| n.next_power_of_two().max(8))
}

/// Threads of a block for a tile of `order`: one a column, rows shared out, at most [`THREADS`].
pub(super) fn threads(order: usize) -> usize {
    (order * order).min(THREADS)
}

/// The launch shape for `count` matrices in tiles of `order`: blocks and threads.
fn launch_shape(count: usize, order: usize) -> ((u32, u32), (u32, u32)) {
    ((count.min(MAX_BLOCKS) as u32, 1), (threads(order) as u32, 1))
}

/// The C++ of the kernels' element helpers for `factored` (`f32`, `f64` or their complex
/// types, `elem`, defined before them): `real`, and `RE`, `CONJ`, `SCALE` (by a real), `ABS`,
/// `ABS1` (LAPACK's pivot measure, `|re| + |im|`) and `SIGN` of a non-zero value (`x / |x|`,
/// exactly `1` or `-1` for a real one).
pub(super) fn element_helpers(factored: DType) -> String {
    let (real, complex) = match factored {
        DType::F32 => ("float", false),
        DType::F64 => ("double", false),
        DType::C64 => ("float", true),
        _ => ("double", true),
    };
    let [re, conj, scale, abs, abs1, sign] = match complex {
        false => [
            "(x)",
            "(x)",
            "((x) * (f))",
            "fabs(x)",
            "fabs(x)",
            "((x) < (real)0 ? (real)-1 : (real)1)",
        ],
        true => [
            "(x).re",
            "_cc_conj(x)",
            "elem((x).re * (f), (x).im * (f))",
            "_cc_abs(x)",
            "(fabs((x).re) + fabs((x).im))",
            "SCALE(x, (real)1 / ABS(x))",
        ],
    };
    format!(
        "typedef {real} real;\n#define RE(x) {re}\n#define CONJ(x) {conj}\n#define SCALE(x, f) {scale}\n\
         #define ABS(x) {abs}\n#define ABS1(x) {abs1}\n#define SIGN(x) {sign}\n"
    )
}

/// The C++ of the pivot search of the eliminating kernels (after [`element_helpers`]): the row
/// at or below `k` whose value in column `k` of the tile `s` (rows `stride` apart) has the
/// largest `ABS1`, the first of equals, as LAPACK's `getrf` picks it; `*best` is that measure
/// (`-1` where every candidate is NaN, whose row `k` is then kept; `0` for a singular matrix).
/// Called by every warp alike (a lane a row, then a shuffle reduction), so each warp has the
/// same answer without a barrier.
pub(super) const PIVOT_SEARCH: &str = r#"__device__ __forceinline__ int pivot_row(const elem *s, int stride, int k, int n, real *best) {
    const int lane = threadIdx.x % 32;
    real top = (real)-1;
    int p = k;
    for (int i = k + lane; i < n; i += 32) {
        const real v = ABS1(s[i * stride + k]);
        if (v > top) {
            top = v;
            p = i;
        }
    }
    for (int offset = 16; offset; offset >>= 1) {
        const real other = __shfl_xor_sync(0xffffffffu, top, offset);
        const int other_p = __shfl_xor_sync(0xffffffffu, p, offset);
        if (other > top || (other == top && other_p < p)) {
            top = other;
            p = other_p;
        }
    }
    *best = top;
    return p;
}
"#;

/// The kernel `name` for operands of `types` in a tile of `order`, loaded in `stream`'s
/// context (its C++ from `source` when first compiled).
pub(super) fn load<const OPERANDS: usize>(
    name: &'static str,
    stream: &Stream,
    types: [DType; OPERANDS],
    order: usize,
    source: impl FnOnce() -> String,
) -> Result<Arc<Loaded>> {
    let signature = types.map(ArgType::Array);
    kernel(KernelKey::Named(name), || Ok(LoadedTable::default()))?.get_or_load(
        stream.context(),
        &signature,
        order as u64,
        || Ok((source(), vec![name.to_string()])),
    )
}

/// Queues `loaded`'s kernel on `stream`, one block per matrix of `count` in tiles of `order`,
/// with the parameters `operands` then `sizes` (64-bit integers).
///
/// # Safety
/// The kernel's parameters are `operands` and `sizes`, in that order and of those types, and
/// each block reads and writes only its matrices' elements of the operands, which hold them.
pub(super) unsafe fn queue_per_matrix(
    stream: &Stream,
    loaded: &Loaded,
    operands: &[Arg<'_>],
    sizes: &[i64],
    count: usize,
    order: usize,
) -> Result<()> {
    let mut launch = Launch::on(stream);
    launch.args(operands)?;
    for &size in sizes {
        launch.value(size);
    }
    let (grid, block) = launch_shape(count, order);
    // SAFETY: the caller vouches for the parameters and what each block touches; the grid and
    // block are the per-matrix shape the kernels are written for.
    unsafe { launch.run(&loaded.functions[0], grid, block) }
}

/// The failure word of a stack, set to "none failed" on `stream`.
pub(super) fn failure_word(stream: &Stream) -> Result<DeviceArray<u64>> {
    DeviceArray::full(stream, [1], NO_FAILURE)
}

/// The first failing matrix and its 1-based step, read back from `word` (one host wait);
/// `None` where every matrix passed.
pub(super) fn first_failure(word: &DeviceArray<u64>) -> Result<Option<(usize, i64)>> {
    let word = word.to_vec()?[0];
    Ok((word != NO_FAILURE).then_some(((word >> 8) as usize, (word & 0xff) as i64)))
}

/// `failure` of matrix `index` from the kernel `routine`, as cuSOLVER's are reported.
pub(super) fn linalg_error(routine: &'static str, index: usize, failure: cuda_libs::LinalgFailure) -> Error {
    Error::Library(cuda_libs::Error::Linalg {
        routine,
        index,
        failure,
    })
}

/// The largest tile a kernel of `dtype` takes: its compile tests build that one as CUBIN, so
/// `ptxas` checks the static shared memory fits a block.
#[cfg(test)]
pub(super) fn largest_tile(dtype: DType) -> usize {
    (1..=LARGEST_ORDER)
        .rev()
        .find_map(|n| tile_order(n, dtype))
        .expect("order 1 fits")
}

/// Compiles `source` (the kernel of `what`) to sm_90 CUBIN, panicking with the log on failure:
/// `ptxas` then checks the tile's static shared memory fits a block.
#[cfg(test)]
pub(super) fn assert_compiles_to_cubin(what: &str, source: String) {
    use crate::{Arch, CompileTarget, Program, ProgramOptions};
    Program::new(source, ProgramOptions::for_arch(Arch::Sm(90)))
        .compile(CompileTarget::Cubin)
        .unwrap_or_else(|e| panic!("{what}: {e}"));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tiles_are_powers_of_two_up_to_the_shared_memory_a_block_has() {
        assert_eq!(tile_order(1, DType::F32), Some(8));
        assert_eq!(tile_order(9, DType::F64), Some(16));
        assert_eq!(tile_order(32, DType::C64), Some(32));
        assert_eq!(tile_order(33, DType::F32), Some(64));
        assert_eq!(tile_order(64, DType::C64), Some(64));
        assert_eq!(tile_order(65, DType::F32), None);
        assert_eq!(tile_order(32, DType::C128), Some(32));
        assert_eq!(tile_order(33, DType::C128), None);
        assert_eq!((threads(8), threads(16), threads(64)), (64, 256, 256));
        assert_eq!(launch_shape(usize::MAX, 8), ((1 << 20, 1), (64, 1)));
        assert_eq!((largest_tile(DType::F64), largest_tile(DType::C128)), (64, 32));
    }
}
