//! `inv`, `det` and `slogdet` of small matrices (`n` up to
//! [`LARGEST_ORDER`](super::small::LARGEST_ORDER)) in one generated kernel each: a block
//! eliminates a matrix in shared memory with partial pivoting, reading the input in its own
//! type (promoted on the load). cuBLAS's path takes a promoting copy, `getrfBatched`, then
//! `getriBatched` (or a reduction over the factors' diagonals) and a host wait for the `info`s;
//! here `det` and `slogdet` are one launch with no host wait, `inv` one launch and one 8-byte
//! read-back (a singular matrix is an error).
//!
//! A step `k` picks the pivot as LAPACK's `getrf` does (the largest `|re| + |im|` at or below
//! the diagonal in column `k`, the first of equals; every warp finds it alike, so no barrier is
//! spent on it), copies the pivot row and column `k` out of the tile (one barrier), then
//! eliminates (one barrier). The inverse is Gauss-Jordan in place: every row is eliminated, the
//! pivot row scaled, and the columns are put back in the order the row swaps took, last swap
//! first. The determinants eliminate the rows below the pivot and sum the pivots' logarithms,
//! multiplying their signs (a swap flips it); `det` is `sign * exp(logabsdet)`, as NumPy
//! computes it (past the type's range an infinity, never the NaN a running complex product
//! gives). An exactly zero column below the diagonal is a singular matrix (`getrf`'s zero `U(k,
//! k)`): `det` 0, `slogdet` `(0, -inf)`, and `inv` [`Singular`] with that step.
//!
//! [`Singular`]: cuda_libs::LinalgFailure::Singular

use std::sync::Arc;

use crate::array::device_array::DeviceArray;
use crate::array::dtype::{DType, Element};
use crate::array::kernels::registry::Loaded;
use crate::array::kernels::{Arg, PRELUDE};
use crate::error::Result;

use super::small::{
    element_helpers, failure_word, first_failure, linalg_error, load, queue_per_matrix, threads, PIVOT_SEARCH,
};
use super::stacks::SquareStack;

/// What a kernel computes of each matrix.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Mode {
    /// The inverse (`n x n`), and the first singular matrix through the failure word.
    Inverse,
    /// The determinant.
    Determinant,
    /// The sign and the logarithm of the absolute value of the determinant.
    LogDeterminant,
}

impl Mode {
    /// The kernel's name, also the routine a failure names.
    const fn name(self) -> &'static str {
        match self {
            Mode::Inverse => "cuda_core_inv_small",
            Mode::Determinant => "cuda_core_det_small",
            Mode::LogDeterminant => "cuda_core_slogdet_small",
        }
    }
}

/// The kernel's C++ for `mode`: matrices of `input` eliminated in `factored` (`f32`, `f64` or
/// their complex types) in a tile of `order`.
fn source(mode: Mode, input: DType, factored: DType, order: usize) -> String {
    let helpers = element_helpers(factored);
    let name = mode.name();
    let mode = mode as u8;
    format!(
        r#"{PRELUDE}typedef {input} input_t;
typedef {elem} elem;
{helpers}{PIVOT_SEARCH}#define ORDER {order}
#define THREADS {threads}
#define MODE {mode}
extern "C" __global__ void __launch_bounds__(THREADS) {name}(
    const input_t *__restrict__ a,
#if MODE == 0
    elem *__restrict__ out, unsigned long long *__restrict__ first_failure,
#elif MODE == 1
    elem *__restrict__ out,
#else
    elem *__restrict__ sign_out, real *__restrict__ logabs_out,
#endif
    long long n_, long long count) {{
    __shared__ elem s[ORDER][ORDER + 1];
    __shared__ elem row[ORDER], col[ORDER];
#if MODE == 0
    __shared__ int swapped_with[ORDER], source_column[ORDER];
#endif
    const int n = (int)n_, size = n * n;
    const int column = threadIdx.x % ORDER, first_row = threadIdx.x / ORDER;
    const int row_step = THREADS / ORDER;
    for (long long m = blockIdx.x; m < count; m += gridDim.x) {{
        const input_t *am = a + m * size;
        for (int q = threadIdx.x; q < size; q += THREADS) s[q / n][q % n] = (elem)am[q];
        __syncthreads();
        int failed = 0;
#if MODE != 0
        elem sign = (elem)1;
        real logabs = (real)0;
#endif
        for (int k = 0; k < n; ++k) {{
            real best;
            const int p = pivot_row(&s[0][0], ORDER + 1, k, n, &best);
            if (best == (real)0) {{
                failed = k + 1;
                break;
            }}
            if (threadIdx.x < n) {{
                row[threadIdx.x] = s[p][threadIdx.x];
            }} else if (threadIdx.x < 2 * n) {{
                const int i = threadIdx.x - n;
                col[i] = s[i == k ? p : i == p ? k : i][k];
            }}
#if MODE == 0
            if (threadIdx.x == 0) swapped_with[k] = p;
#endif
            __syncthreads();
            const elem pivot = row[k];
            const elem reciprocal = (elem)1 / pivot;
            const int j = column;
#if MODE == 0
            if (j < n) {{
                for (int i = first_row; i < n; i += row_step) {{
                    if (i == p && p != k) continue;
                    if (i == k) {{
                        const elem before = s[k][j];
                        s[k][j] = j == k ? reciprocal : row[j] * reciprocal;
                        if (p != k) s[p][j] = j == k ? -(col[p] * reciprocal) : before - col[p] * (row[j] * reciprocal);
                    }} else {{
                        s[i][j] = j == k ? -(col[i] * reciprocal) : s[i][j] - col[i] * (row[j] * reciprocal);
                    }}
                }}
            }}
#else
            if (j > k && j < n) {{
                const elem scaled = row[j] * reciprocal;
                for (int i = k + ((first_row - k) % row_step + row_step) % row_step; i < n; i += row_step) {{
                    if (i == p && p != k) continue;
                    if (i == k) {{
                        if (p != k) s[p][j] = s[k][j] - col[p] * scaled;
                    }} else {{
                        s[i][j] = s[i][j] - col[i] * scaled;
                    }}
                }}
            }}
            logabs += log(ABS(pivot));
            sign = p != k ? -(sign * SIGN(pivot)) : sign * SIGN(pivot);
#endif
            __syncthreads();
        }}
#if MODE == 0
        if (threadIdx.x == 0) {{
            if (failed) atomicMin(first_failure, ((unsigned long long)m << 8) | (unsigned long long)failed);
            for (int c = 0; c < n; ++c) source_column[c] = c;
            for (int c = failed ? -1 : n - 1; c >= 0; --c) {{
                const int other = swapped_with[c], kept = source_column[c];
                source_column[c] = source_column[other];
                source_column[other] = kept;
            }}
        }}
        __syncthreads();
        elem *om = out + m * size;
        for (int q = threadIdx.x; q < size; q += THREADS) om[q] = s[q / n][source_column[q % n]];
#elif MODE == 1
        if (threadIdx.x == 0) out[m] = failed ? (elem)0 : SCALE(sign, exp(logabs));
#else
        if (threadIdx.x == 0) {{
            sign_out[m] = failed ? (elem)0 : sign;
            logabs_out[m] = failed ? -(real)(1.0 / 0.0) : logabs;
        }}
#endif
        __syncthreads();
    }}
}}
"#,
        input = input.c_name(),
        elem = factored.c_name(),
        threads = threads(order),
    )
}

/// The kernel of `mode` for `T` eliminated in `F`, in a tile of `order`, loaded in `a`'s
/// context.
fn load_mode<T: Element, F: Element>(mode: Mode, a: &DeviceArray<T>, order: usize) -> Result<Arc<Loaded>> {
    load(mode.name(), a.stream(), [T::DTYPE, F::DTYPE], order, || {
        source(mode, T::DTYPE, F::DTYPE, order)
    })
}

/// The inverses of the `stack` of `a` (C-contiguous) in `F`, each matrix in a tile of `order`
/// (from [`tile_order`](super::small::tile_order)); the failure word read back (one host wait)
/// and a singular matrix returned as cuBLAS's would be, with its index and step.
pub(super) fn inverse<T: Element, F: Element>(
    a: &DeviceArray<T>,
    stack: &SquareStack,
    order: usize,
) -> Result<DeviceArray<F>> {
    let stream = a.stream().clone();
    let (n, count) = (stack.n, stack.count());
    let mut inverse = DeviceArray::<F>::empty(&stream, stack.shape())?;
    let mut failure = failure_word(&stream)?;
    let loaded = load_mode::<T, F>(Mode::Inverse, a, order)?;
    let operands = [Arg::from(a), Arg::from(&mut inverse), Arg::from(&mut failure)];
    // SAFETY: the inverse kernel takes these five parameters: the input, inverse and failure
    // pointers (of the types compiled) and two 64-bit integers. Each block reads and writes
    // the `n * n` elements of matrices `m < count` of the compact input and inverse (both
    // `count * n * n` elements, `a` C-contiguous as the caller checked) and takes `atomicMin`
    // on the one failure word; its tile holds `order^2 >= n^2` elements.
    unsafe { queue_per_matrix(&stream, &loaded, &operands, &[n as i64, count as i64], count, order)? };
    if let Some((index, pivot)) = first_failure(&failure)? {
        let failure = cuda_libs::LinalgFailure::Singular { pivot };
        return Err(linalg_error(Mode::Inverse.name(), index, failure));
    }
    Ok(inverse)
}

/// The determinants of the `stack` of `a` (C-contiguous) in `F`, of shape `stack.batch`, each
/// matrix in a tile of `order`: 0 for a singular one. Queued, with no host wait.
pub(super) fn determinant<T: Element, F: Element>(
    a: &DeviceArray<T>,
    stack: &SquareStack,
    order: usize,
) -> Result<DeviceArray<F>> {
    let stream = a.stream().clone();
    let (n, count) = (stack.n, stack.count());
    let mut det = DeviceArray::<F>::empty(&stream, stack.batch.clone())?;
    let loaded = load_mode::<T, F>(Mode::Determinant, a, order)?;
    let operands = [Arg::from(a), Arg::from(&mut det)];
    // SAFETY: the determinant kernel takes these four parameters: the input and result
    // pointers (of the types compiled) and two 64-bit integers. Each block reads the `n * n`
    // elements of matrices `m < count` of the compact input (`count * n * n` elements) and
    // writes element `m` of the result (`count` elements); its tile holds `order^2 >= n^2`
    // elements.
    unsafe { queue_per_matrix(&stream, &loaded, &operands, &[n as i64, count as i64], count, order)? };
    Ok(det)
}

/// The signs (in `F`) and the logarithms of the absolute determinants (in `R`, `F`'s real
/// type) of the `stack` of `a` (C-contiguous), each of shape `stack.batch`: `(0, -inf)` for a
/// singular matrix. Queued, with no host wait.
pub(super) fn log_determinant<T: Element, F: Element, R: Element>(
    a: &DeviceArray<T>,
    stack: &SquareStack,
    order: usize,
) -> Result<(DeviceArray<F>, DeviceArray<R>)> {
    let stream = a.stream().clone();
    let (n, count) = (stack.n, stack.count());
    let mut sign = DeviceArray::<F>::empty(&stream, stack.batch.clone())?;
    let mut logabs = DeviceArray::<R>::empty(&stream, stack.batch.clone())?;
    let loaded = load_mode::<T, F>(Mode::LogDeterminant, a, order)?;
    let operands = [Arg::from(a), Arg::from(&mut sign), Arg::from(&mut logabs)];
    // SAFETY: the slogdet kernel takes these five parameters: the input, sign and logarithm
    // pointers (the input's and `F` as compiled, `R` its real type, the kernel's `real`) and
    // two 64-bit integers. Each block reads the `n * n` elements of matrices `m < count` of
    // the compact input (`count * n * n` elements) and writes element `m` of both results
    // (`count` elements each); its tile holds `order^2 >= n^2` elements.
    unsafe { queue_per_matrix(&stream, &loaded, &operands, &[n as i64, count as i64], count, order)? };
    Ok((sign, logabs))
}

#[cfg(test)]
mod tests {
    use super::super::small::{assert_compiles_to_cubin, largest_tile};
    use super::*;

    #[test]
    fn the_kernels_compile_for_every_mode_and_type() {
        let pairs = [
            (DType::Bool, DType::F64),
            (DType::I16, DType::F64),
            (DType::F32, DType::F32),
            (DType::F64, DType::F64),
            (DType::C64, DType::C64),
            (DType::C128, DType::C128),
        ];
        for mode in [Mode::Inverse, Mode::Determinant, Mode::LogDeterminant] {
            for (input, factored) in pairs {
                let source = source(mode, input, factored, largest_tile(factored));
                assert_compiles_to_cubin(&format!("{mode:?} {input} -> {factored}"), source);
            }
        }
    }
}
