//! The Cholesky factorisation of small matrices (`n` up to
//! [`LARGEST_ORDER`](super::small::LARGEST_ORDER)) in one generated
//! kernel: a block factors a matrix in shared memory, reading the input in its own type (the
//! promotion to the factored type happens on the load) and writing the factor with the other
//! triangle zeroed. Where cuSOLVER's path takes a promoting copy, `potrfBatched` and a masking
//! kernel (and a host wait for the `info`s), this is one launch and one 8-byte read-back.
//!
//! A step `k` updates the trailing lower triangle with the unscaled column `k`,
//! `s[i][j] -= s[i][k] conj(s[j][k]) / s[k][k]`, so a step needs one barrier; the factor is
//! scaled on the way out, `L[i][j] = s[i][j] / sqrt(s[j][j])` (the column and pivot as they
//! stood at step `j`, which later steps do not touch). A pivot that is not positive (or is NaN)
//! stops the matrix, as LAPACK's `potrf` does: the first failing matrix of the stack and the
//! order of its failing minor come back through the failure word of `small.rs`.

use crate::array::device_array::DeviceArray;
use crate::array::dtype::{DType, Element};
use crate::array::kernels::{Arg, PRELUDE};
use crate::error::Result;

use super::small::{element_helpers, failure_word, first_failure, linalg_error, load, queue_per_matrix, threads};
use super::stacks::SquareStack;

/// The kernel's name, also the routine a failure names.
const NAME: &str = "cuda_core_cholesky_small";

/// The kernel's C++: matrices of `input` factored in `factored` (`f32`, `f64` or their complex
/// types) in a tile of `order`.
fn source(input: DType, factored: DType, order: usize) -> String {
    let helpers = element_helpers(factored);
    format!(
        r#"{PRELUDE}typedef {input} input_t;
typedef {elem} elem;
{helpers}#define ORDER {order}
#define THREADS {threads}
extern "C" __global__ void __launch_bounds__(THREADS) {NAME}(
    const input_t *__restrict__ a, elem *__restrict__ out, unsigned long long *__restrict__ first_failure,
    long long n_, long long count, long long upper) {{
    __shared__ elem s[ORDER][ORDER + 1];
    const int n = (int)n_, size = n * n;
    const int column = threadIdx.x % ORDER, first_row = threadIdx.x / ORDER;
    const int row_step = THREADS / ORDER;
    for (long long m = blockIdx.x; m < count; m += gridDim.x) {{
        const input_t *am = a + m * size;
        for (int p = threadIdx.x; p < size; p += THREADS) {{
            const int r = p / n, c = p % n;
            if (!upper && c <= r) s[r][c] = (elem)am[p];
            if (upper && c >= r) s[c][r] = CONJ((elem)am[p]);
        }}
        __syncthreads();
        int failed = 0;
        for (int k = 0; k < n; ++k) {{
            const real pivot = RE(s[k][k]);
            if (!(pivot > (real)0)) {{
                failed = k + 1;
                break;
            }}
            const int j = column;
            if (j > k && j < n) {{
                const elem below = SCALE(CONJ(s[j][k]), (real)1 / pivot);
                for (int i = j + ((first_row - j) % row_step + row_step) % row_step; i < n; i += row_step) {{
                    s[i][j] = s[i][j] - s[i][k] * below;
                }}
            }}
            __syncthreads();
        }}
        if (failed && threadIdx.x == 0) {{
            atomicMin(first_failure, ((unsigned long long)m << 8) | (unsigned long long)failed);
        }}
        elem *om = out + m * size;
        for (int p = threadIdx.x; p < size; p += THREADS) {{
            const int r = p / n, c = p % n;
            const int i = upper ? c : r, j = upper ? r : c;
            elem value = (elem)0;
            if (i >= j) {{
                const real root = sqrt(RE(s[j][j]));
                value = i == j ? (elem)root : SCALE(s[i][j], (real)1 / root);
                if (upper) value = CONJ(value);
            }}
            om[p] = value;
        }}
        __syncthreads();
    }}
}}
"#,
        input = input.c_name(),
        elem = factored.c_name(),
        threads = threads(order),
    )
}

/// The Cholesky factors of the `stack` of `a` (C-contiguous), lower or `upper`, in `F`, each
/// matrix in a tile of `order` (from [`tile_order`](super::small::tile_order)); the failure word read back (one host wait)
/// and a matrix that is not positive definite returned as cuSOLVER's would be, with its index.
pub(super) fn factor<T: Element, F: Element>(
    a: &DeviceArray<T>,
    stack: &SquareStack,
    order: usize,
    upper: bool,
) -> Result<DeviceArray<F>> {
    let stream = a.stream().clone();
    let (n, count) = (stack.n, stack.count());
    let mut factor = DeviceArray::<F>::empty(&stream, stack.shape())?;
    let mut failure = failure_word(&stream)?;
    let loaded = load(NAME, &stream, [T::DTYPE, F::DTYPE], order, || {
        source(T::DTYPE, F::DTYPE, order)
    })?;
    let operands = [Arg::from(a), Arg::from(&mut factor), Arg::from(&mut failure)];
    let sizes = [n as i64, count as i64, i64::from(upper)];
    // SAFETY: the kernel takes these six parameters: the input, factor and failure pointers
    // (of the types compiled) and three 64-bit integers. Each block reads and writes the `n *
    // n` elements of matrices `m < count` of the compact input and factor (both `count * n * n`
    // elements, `a` C-contiguous as the caller checked) and takes `atomicMin` on the one
    // failure word; its tile holds `order^2 >= n^2` elements.
    unsafe { queue_per_matrix(&stream, &loaded, &operands, &sizes, count, order)? };
    if let Some((index, order)) = first_failure(&failure)? {
        let failure = cuda_libs::LinalgFailure::NotPositiveDefinite { order };
        return Err(linalg_error(NAME, index, failure));
    }
    Ok(factor)
}

#[cfg(test)]
mod tests {
    use super::super::small::{assert_compiles_to_cubin, largest_tile};
    use super::*;

    #[test]
    fn the_kernel_compiles_for_every_input_and_factored_type() {
        let pairs = [
            (DType::Bool, DType::F64),
            (DType::I32, DType::F64),
            (DType::U8, DType::F64),
            (DType::F32, DType::F32),
            (DType::F64, DType::F64),
            (DType::C64, DType::C64),
            (DType::C128, DType::C128),
        ];
        for (input, factored) in pairs {
            let source = source(input, factored, largest_tile(factored));
            assert_compiles_to_cubin(&format!("{input} -> {factored}"), source);
        }
    }
}
