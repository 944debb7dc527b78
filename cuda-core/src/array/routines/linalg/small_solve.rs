//! `solve` of small systems (`n` up to [`LARGEST_ORDER`](super::small::LARGEST_ORDER), at most
//! [`LARGEST_RHS`] right-hand sides) in one generated kernel: a block eliminates `[A | B]` in
//! shared memory by Gauss-Jordan with `getrf`'s partial pivoting (the search of `small.rs`),
//! reading `A` and `B` in their own types (promoted on the load), so that `B` becomes `X`. cuBLAS's
//! path takes two promoting copies, `getrfBatched`, `getrsBatched` and a transposing view; here
//! it is one launch and one 8-byte read-back (a singular matrix is an error, with its index and
//! step, as cuBLAS's `info` gives them).
//!
//! The right-hand sides go through the tile [`CHUNK`] columns at a time (`A` is eliminated again
//! for each chunk: the tile of `A` and one chunk fit the 48 KiB of static shared memory in every
//! type). A step copies the pivot row (of `A` and of the chunk) and column `k` of `A` out of the
//! tile, then eliminates every other row of the columns after `k` and of the chunk: two barriers.

use crate::array::device_array::DeviceArray;
use crate::array::dtype::{DType, Element};
use crate::array::kernels::{Arg, PRELUDE};
use crate::error::Result;

use super::small::{
    element_helpers, failure_word, first_failure, linalg_error, load, queue_per_matrix, threads, PIVOT_SEARCH,
};
use super::stacks::SquareStack;

/// The kernel's name, also the routine a failure names.
const NAME: &str = "cuda_core_solve_small";

/// Right-hand sides a chunk of the tile holds (fewer for tiles of order 8).
const CHUNK: usize = 16;

/// Right-hand sides solved here at most (four chunks); more go to cuBLAS.
pub(super) const LARGEST_RHS: usize = 4 * CHUNK;

/// The kernel's C++: systems of `a_type` with right-hand sides of `b_type`, solved in `solved`
/// (`f32`, `f64` or their complex types) in a tile of `order`.
fn source(a_type: DType, b_type: DType, solved: DType, order: usize) -> String {
    let helpers = element_helpers(solved);
    format!(
        r#"{PRELUDE}typedef {a_type} a_t;
typedef {b_type} b_t;
typedef {elem} elem;
{helpers}{PIVOT_SEARCH}#define ORDER {order}
#define CHUNK {chunk}
#define THREADS {threads}
extern "C" __global__ void __launch_bounds__(THREADS) {NAME}(
    const a_t *__restrict__ a, const b_t *__restrict__ b, elem *__restrict__ x,
    unsigned long long *__restrict__ first_failure, long long n_, long long count, long long k_) {{
    __shared__ elem s[ORDER][ORDER + 1];
    __shared__ elem rhs[ORDER][CHUNK + 1];
    __shared__ elem row[ORDER], row_rhs[CHUNK], col[ORDER];
    const int n = (int)n_, k = (int)k_, size = n * n;
    const int column = threadIdx.x % ORDER, first_row = threadIdx.x / ORDER;
    const int row_step = THREADS / ORDER;
    for (long long m = blockIdx.x; m < count; m += gridDim.x) {{
        const a_t *am = a + m * size;
        const b_t *bm = b + m * n * k;
        elem *xm = x + m * n * k;
        int failed = 0;
        for (int c0 = 0; c0 < k && !failed; c0 += CHUNK) {{
            const int width = k - c0 < CHUNK ? k - c0 : CHUNK;
            for (int q = threadIdx.x; q < size; q += THREADS) s[q / n][q % n] = (elem)am[q];
            for (int q = threadIdx.x; q < n * width; q += THREADS) rhs[q / width][q % width] = (elem)bm[(q / width) * k + c0 + q % width];
            __syncthreads();
            for (int step = 0; step < n; ++step) {{
                real best;
                const int p = pivot_row(&s[0][0], ORDER + 1, step, n, &best);
                if (best == (real)0) {{
                    failed = step + 1;
                    break;
                }}
                if (threadIdx.x < n) {{
                    row[threadIdx.x] = s[p][threadIdx.x];
                }} else if (threadIdx.x < 2 * n) {{
                    const int i = threadIdx.x - n;
                    col[i] = s[i == step ? p : i == p ? step : i][step];
                }} else if (threadIdx.x < 2 * n + width) {{
                    row_rhs[threadIdx.x - 2 * n] = rhs[p][threadIdx.x - 2 * n];
                }}
                __syncthreads();
                const elem reciprocal = (elem)1 / row[step];
                const int j = column;
                const bool in_a = j > step && j < n, in_rhs = j < width;
                if (in_a || in_rhs) {{
                    const elem scaled_a = in_a ? row[j] * reciprocal : (elem)0;
                    const elem scaled_rhs = in_rhs ? row_rhs[j] * reciprocal : (elem)0;
                    for (int i = first_row; i < n; i += row_step) {{
                        if (i == p && p != step) continue;
                        if (i == step) {{
                            if (in_a) {{
                                if (p != step) s[p][j] = s[step][j] - col[p] * scaled_a;
                                s[step][j] = scaled_a;
                            }}
                            if (in_rhs) {{
                                if (p != step) rhs[p][j] = rhs[step][j] - col[p] * scaled_rhs;
                                rhs[step][j] = scaled_rhs;
                            }}
                        }} else {{
                            if (in_a) s[i][j] = s[i][j] - col[i] * scaled_a;
                            if (in_rhs) rhs[i][j] = rhs[i][j] - col[i] * scaled_rhs;
                        }}
                    }}
                }}
                __syncthreads();
            }}
            if (!failed) {{
                for (int q = threadIdx.x; q < n * width; q += THREADS) xm[(q / width) * k + c0 + q % width] = rhs[q / width][q % width];
            }}
            __syncthreads();
        }}
        if (failed && threadIdx.x == 0) {{
            atomicMin(first_failure, ((unsigned long long)m << 8) | (unsigned long long)failed);
        }}
    }}
}}
"#,
        a_type = a_type.c_name(),
        b_type = b_type.c_name(),
        elem = solved.c_name(),
        chunk = chunk(order),
        threads = threads(order),
    )
}

/// Right-hand sides a chunk holds in a tile of `order`: [`CHUNK`], at most the tile's columns
/// (so a column's thread also takes that column of the chunk).
fn chunk(order: usize) -> usize {
    CHUNK.min(order)
}

/// `x` with `A x = B` for the `stack` of `a` (C-contiguous, `(count, n, n)`) and `b`
/// (C-contiguous, `(count, n, k)` with `k` at most [`LARGEST_RHS`]), in `F`, each system in a
/// tile of `order` (from [`tile_order`](super::small::tile_order)): `(count, n, k)`. The failure
/// word is read back (one host wait) and a singular matrix returned as cuBLAS's would be, with
/// its index and step.
pub(super) fn solve<T: Element, U: Element, F: Element>(
    a: &DeviceArray<T>,
    b: &DeviceArray<U>,
    stack: &SquareStack,
    k: usize,
    order: usize,
) -> Result<DeviceArray<F>> {
    let stream = a.stream().clone();
    let (n, count) = (stack.n, stack.count());
    let mut x = DeviceArray::<F>::empty(&stream, [count, n, k])?;
    let mut failure = failure_word(&stream)?;
    let types = [T::DTYPE, U::DTYPE, F::DTYPE];
    let loaded = load(NAME, &stream, types, order, || {
        source(T::DTYPE, U::DTYPE, F::DTYPE, order)
    })?;
    let operands = [Arg::from(a), Arg::from(b), Arg::from(&mut x), Arg::from(&mut failure)];
    let sizes = [n as i64, count as i64, k as i64];
    // SAFETY: the kernel takes these seven parameters: the `A`, `B`, `X` and failure pointers
    // (of the types compiled) and three 64-bit integers. Each block reads the `n * n` elements
    // of matrices `m < count` of the compact `a` and the `n * k` of the compact `b`, writes
    // the `n * k` of `x` (`count * n * n`, `count * n * k` and `count * n * k` elements, as the
    // caller made them) and takes `atomicMin` on the one failure word; its tiles hold `order^2
    // >= n^2` elements and `order` rows of a chunk.
    unsafe { queue_per_matrix(&stream, &loaded, &operands, &sizes, count, order)? };
    if let Some((index, pivot)) = first_failure(&failure)? {
        let failure = cuda_libs::LinalgFailure::Singular { pivot };
        return Err(linalg_error(NAME, index, failure));
    }
    Ok(x)
}

#[cfg(test)]
mod tests {
    use super::super::small::{assert_compiles_to_cubin, largest_tile};
    use super::*;

    #[test]
    fn the_kernel_compiles_for_every_type_pair() {
        let triples = [
            (DType::I32, DType::F32, DType::F64),
            (DType::F32, DType::F32, DType::F32),
            (DType::F64, DType::C64, DType::C128),
            (DType::C64, DType::F32, DType::C64),
            (DType::C128, DType::C128, DType::C128),
        ];
        for (a, b, solved) in triples {
            let source = source(a, b, solved, largest_tile(solved));
            assert_compiles_to_cubin(&format!("{a}, {b} -> {solved}"), source);
        }
    }

    #[test]
    fn chunks_fit_the_tiles() {
        assert_eq!((chunk(8), chunk(16), chunk(64)), (8, 16, 16));
        assert_eq!(LARGEST_RHS, 64);
    }
}
