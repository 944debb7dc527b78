//! Matrix products of integers and `Bool`, which cuBLAS does not multiply: a generated tiled
//! kernel (16 x 16 tiles through shared memory), one launch per strided batch, reading every
//! operand through its strides (transposed, sliced and broadcast views are never copied).
//!
//! As in NumPy, integer products and sums wrap around in the element type: the kernel
//! accumulates in unsigned 64-bit arithmetic (which wraps, where signed overflow would be
//! undefined in C++) and keeps the low bits, the same value modulo `2^bits`. `Bool` is the
//! logical product: `out[i, j]` is whether some `a[i, l] && b[l, j]`.

use crate::array::device_array::DeviceArray;
use crate::array::dtype::{DType, Element};
use crate::array::kernels::launch::Launch;
use crate::array::kernels::registry::{kernel, KernelKey, LoadedTable};
use crate::array::kernels::{Arg, ArgType};
use crate::error::{Error, Result};

use super::batches::for_each_batch;

/// The kernel's tile edge (its blocks are `TILE x TILE` threads).
const TILE: u32 = 16;

/// Blocks along the grid's `y` (tiles of rows times matrices), at most; the kernel loops over
/// the rest.
const MAX_GRID_Y: u64 = 65_535;

/// The kernel's C++ for element type `dtype` (an integer type or `Bool`).
pub(crate) fn source(dtype: DType) -> String {
    let accumulate = match dtype {
        DType::Bool => "sum |= ta[threadIdx.y][i] & tb[i][threadIdx.x];",
        _ => "sum += ta[threadIdx.y][i] * tb[i][threadIdx.x];",
    };
    format!(
        r#"typedef {elem} elem;
typedef unsigned long long acc;
extern "C" __global__ void cuda_core_matmul_int(
    const elem *__restrict__ a, const elem *__restrict__ b, elem *__restrict__ c,
    long long m, long long n, long long k, long long count,
    long long a_batch, long long a_row, long long a_col,
    long long b_batch, long long b_row, long long b_col, long long c_batch) {{
    __shared__ acc ta[{tile}][{tile} + 1];
    __shared__ acc tb[{tile}][{tile} + 1];
    const long long tiles_m = (m + {tile} - 1) / {tile};
    const long long col = (long long)blockIdx.x * {tile} + threadIdx.x;
    for (long long t = blockIdx.y; t < tiles_m * count; t += gridDim.y) {{
        const long long matrix = t / tiles_m;
        const long long row = (t % tiles_m) * {tile} + threadIdx.y;
        const elem *am = a + matrix * a_batch;
        const elem *bm = b + matrix * b_batch;
        acc sum = 0;
        for (long long l0 = 0; l0 < k; l0 += {tile}) {{
            const long long la = l0 + threadIdx.x, lb = l0 + threadIdx.y;
            ta[threadIdx.y][threadIdx.x] = (row < m && la < k) ? (acc)am[row * a_row + la * a_col] : (acc)0;
            tb[threadIdx.y][threadIdx.x] = (lb < k && col < n) ? (acc)bm[lb * b_row + col * b_col] : (acc)0;
            __syncthreads();
            for (int i = 0; i < {tile}; ++i) {{
                {accumulate}
            }}
            __syncthreads();
        }}
        if (row < m && col < n) c[matrix * c_batch + row * n + col] = (elem)sum;
    }}
}}
"#,
        elem = dtype.c_name(),
        tile = TILE,
    )
}

/// `out[i] = a[i] @ b[i]` for integer or `Bool` stacks (see [`super::matmul::sealed::Multiply`]):
/// the operands broadcast to `out`'s batch axes as views, then one launch per strided batch.
pub(crate) fn multiply<T: Element>(
    a: &DeviceArray<T>,
    b: &DeviceArray<T>,
    out: &mut DeviceArray<T>,
    (m, n, k): (usize, usize, usize),
) -> Result<()> {
    let batch = &out.shape()[..out.ndim() - 2];
    let a = a.broadcast_to([batch, &[m, k]].concat())?;
    let b = b.broadcast_to([batch, &[k, n]].concat())?;
    let stream = out.stream().clone();
    let tiles_n = (n as u64).div_ceil(u64::from(TILE));
    let grid_x = u32::try_from(tiles_n)
        .ok()
        .filter(|&x| x <= i32::MAX as u32)
        .ok_or_else(|| Error::InvalidValue(format!("matmul: {n} columns are too many for one grid")))?;
    let loaded = kernel(KernelKey::Named("cuda_core_matmul_int"), || Ok(LoadedTable::default()))?.get_or_load(
        stream.context(),
        &[ArgType::Array(T::DTYPE)],
        0,
        || Ok((source(T::DTYPE), vec!["cuda_core_matmul_int".to_string()])),
    )?;
    for_each_batch(&a, &b, out, |a_i, b_i, c_i, count, [stride_a, stride_b, stride_c]| {
        let units = (m as u64).div_ceil(u64::from(TILE)) * count as u64;
        let grid_y = units.clamp(1, MAX_GRID_Y) as u32;
        let as_i64 = |value: isize| value as i64;
        let [a_row, a_col] = [a_i.strides()[1], a_i.strides()[2]].map(as_i64);
        let [b_row, b_col] = [b_i.strides()[1], b_i.strides()[2]].map(as_i64);
        let args = [Arg::from(a_i), Arg::from(b_i), Arg::from(c_i)];
        let mut launch = Launch::on(&stream);
        launch.args(&args)?;
        launch
            .value(m as i64)
            .value(n as i64)
            .value(k as i64)
            .value(count as i64)
            .value(as_i64(stride_a))
            .value(a_row)
            .value(a_col)
            .value(as_i64(stride_b))
            .value(b_row)
            .value(b_col)
            .value(as_i64(stride_c));
        // SAFETY: the kernel takes exactly these fourteen parameters (three element pointers,
        // eleven 64-bit integers) of the compiled element type. It reads `a[matrix][row][l]`
        // and `b[matrix][l][col]` only for `row < m`, `l < k`, `col < n`, `matrix < count`,
        // through the views' own strides (so within the memory the views span), and writes the
        // compact `m x n` matrices of `c_i`, `stride_c` apart, which `out` holds.
        unsafe { launch.run(&loaded.functions[0], (grid_x, grid_y), (TILE, TILE)) }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Arch, CompileTarget, Program, ProgramOptions};

    #[test]
    fn the_kernel_compiles_for_every_integer_type_and_bool() {
        for dtype in [
            DType::I8,
            DType::I16,
            DType::I32,
            DType::I64,
            DType::U8,
            DType::U16,
            DType::U32,
            DType::U64,
            DType::Bool,
        ] {
            let source = source(dtype);
            assert!(source.contains(if dtype == DType::Bool { "|=" } else { "+=" }));
            Program::new(source, ProgramOptions::for_arch(Arch::Sm(90)))
                .compile(CompileTarget::Ptx)
                .unwrap_or_else(|e| panic!("{dtype}: {e}"));
        }
    }
}
