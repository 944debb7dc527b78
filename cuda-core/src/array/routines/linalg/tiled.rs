//! Matrix products through a generated tiled kernel (16 x 16 tiles through shared memory), one
//! launch per strided batch, reading every operand through its strides (transposed, sliced,
//! reversed and broadcast views are never copied): for integers and `Bool`, which cuBLAS does
//! not multiply, and for float products too small for a cuBLAS call to pay
//! ([`SMALL_PRODUCT`]).
//!
//! As in NumPy, integer products and sums wrap around in the element type: the kernel
//! accumulates in unsigned 64-bit arithmetic (which wraps, where signed overflow would be
//! undefined in C++) and keeps the low bits, the same value modulo `2^bits`. `Bool` is the
//! logical product: `out[i, j]` is whether some `a[i, l] && b[l, j]`. Floats accumulate in
//! `f32` (`f16`, `bf16` and `f32`, always full single precision) or `f64`, complex values in
//! their own type.

use cuda_driver::Stream;

use crate::array::device_array::DeviceArray;
use crate::array::dtype::{DType, Element};
use crate::array::kernels::launch::Launch;
use crate::array::kernels::registry::{kernel, KernelKey, LoadedTable};
use crate::array::kernels::{Arg, ArgType, PRELUDE};
use crate::error::{Error, Result};

use super::batches::{stack_calls, BatchCall};

/// The kernel's tile edge (its blocks are `TILE x TILE` threads).
const TILE: u32 = 16;

/// Blocks along the grid's `y` (tiles of rows times matrices), at most; the kernel loops over
/// the rest.
const MAX_GRID_Y: u64 = 65_535;

/// Multiply-adds (`count * m * n * k`) up to which a float product runs here rather than
/// through cuBLAS: 64^3. The H200 measured a `cublasLtMatmul` or `cublasGemmEx` call at 7.2
/// to 7.9 us of host time for a 64x64 f32 product, about twice a kernel launch of the crate's
/// own; and at this size the tiled kernel's device time is a few microseconds, as cuBLAS's.
pub(crate) const SMALL_PRODUCT: u64 = 1 << 18;

/// Whether a float product of `count` matrices of `m x n x k` is small enough for the tiled
/// kernel (see [`SMALL_PRODUCT`]).
pub(crate) fn is_small(count: usize, (m, n, k): (usize, usize, usize)) -> bool {
    [count, m, n, k]
        .into_iter()
        .try_fold(1u64, |product, d| product.checked_mul(d as u64))
        .is_some_and(|macs| macs <= SMALL_PRODUCT)
}

/// The kernel's C++ for element type `dtype` (every type: integers and `Bool` wrap in unsigned
/// 64-bit, floats accumulate in `float` or `double`).
pub(crate) fn source(dtype: DType) -> String {
    let accumulate = match dtype {
        DType::Bool => "sum |= ta[threadIdx.y][i] & tb[i][threadIdx.x];",
        _ => "sum += ta[threadIdx.y][i] * tb[i][threadIdx.x];",
    };
    let (prelude, acc) = match dtype {
        DType::F16 | DType::BF16 | DType::F32 => (PRELUDE, "float"),
        DType::F64 => (PRELUDE, "double"),
        DType::C64 | DType::C128 => (PRELUDE, dtype.c_name()),
        _ => ("", "unsigned long long"),
    };
    format!(
        r#"{prelude}typedef {elem} elem;
typedef {acc} acc;
extern "C" __global__ void cuda_core_matmul_tiled(
    const elem *__restrict__ a, const elem *__restrict__ b, elem *__restrict__ c,
    long long m, long long n, long long k, long long count,
    long long a_offset, long long a_batch, long long a_row, long long a_col,
    long long b_offset, long long b_batch, long long b_row, long long b_col,
    long long c_offset, long long c_batch) {{
    __shared__ acc ta[{tile}][{tile} + 1];
    __shared__ acc tb[{tile}][{tile} + 1];
    const long long tiles_m = (m + {tile} - 1) / {tile};
    const long long col = (long long)blockIdx.x * {tile} + threadIdx.x;
    for (long long t = blockIdx.y; t < tiles_m * count; t += gridDim.y) {{
        const long long matrix = t / tiles_m;
        const long long row = (t % tiles_m) * {tile} + threadIdx.y;
        const elem *am = a + a_offset + matrix * a_batch;
        const elem *bm = b + b_offset + matrix * b_batch;
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
        if (row < m && col < n) c[c_offset + matrix * c_batch + row * n + col] = (elem)sum;
    }}
}}
"#,
        elem = dtype.c_name(),
        tile = TILE,
    )
}

/// `out[i] = a[i] @ b[i]` for stacks of any element type (see
/// [`super::matmul::sealed::Multiply`]): the operands broadcast to `out`'s batch axes as views,
/// then [`run`] launches the kernel per strided batch. Only this shell is generic: each element
/// type adds little code.
pub(crate) fn multiply<T: Element>(
    a: &DeviceArray<T>,
    b: &DeviceArray<T>,
    out: &mut DeviceArray<T>,
    (m, n, k): (usize, usize, usize),
) -> Result<()> {
    let batch = &out.shape()[..out.ndim() - 2];
    let a = a.broadcast_to([batch, &[m, k]].concat())?;
    let b = b.broadcast_to([batch, &[k, n]].concat())?;
    let calls = stack_calls(&a, &b, out);
    let ndim = out.ndim();
    let matrix_strides = |x: &DeviceArray<T>| [x.strides()[ndim - 2], x.strides()[ndim - 1]];
    let (a_strides, b_strides) = (matrix_strides(&a), matrix_strides(&b));
    let stream = out.stream().clone();
    run(
        &stream,
        T::DTYPE,
        [Arg::from(&a), Arg::from(&b), Arg::from(out)],
        [a_strides, b_strides],
        &calls,
        (m, n, k),
    )
}

/// Launches the kernel of `dtype` on `stream` once per batch call: `args` are `a`, `b` (views of
/// the stacks' shape) and the compact result, `matrix_strides` the row and column strides of
/// `a` and `b`.
fn run(
    stream: &Stream,
    dtype: DType,
    args: [Arg<'_>; 3],
    matrix_strides: [[isize; 2]; 2],
    calls: &[BatchCall],
    (m, n, k): (usize, usize, usize),
) -> Result<()> {
    let tiles_n = (n as u64).div_ceil(u64::from(TILE));
    let grid_x = u32::try_from(tiles_n)
        .ok()
        .filter(|&x| x <= i32::MAX as u32)
        .ok_or_else(|| Error::InvalidValue(format!("matmul: {n} columns are too many for one grid")))?;
    let loaded = kernel(
        KernelKey::Named("cuda_core_matmul_tiled"),
        || Ok(LoadedTable::default()),
    )?
    .get_or_load(stream.context(), &[ArgType::Array(dtype)], 0, || {
        Ok((source(dtype), vec!["cuda_core_matmul_tiled".to_string()]))
    })?;
    let [[a_row, a_col], [b_row, b_col]] = matrix_strides.map(|s| s.map(|v| v as i64));
    for call in calls {
        let units = (m as u64).div_ceil(u64::from(TILE)) * call.count as u64;
        let grid_y = units.clamp(1, MAX_GRID_Y) as u32;
        let [a_offset, b_offset, c_offset] = call.offsets.map(|v| v as i64);
        let [a_batch, b_batch, c_batch] = call.strides.map(|v| v as i64);
        let mut launch = Launch::on(stream);
        launch.args(&args)?;
        launch
            .value(m as i64)
            .value(n as i64)
            .value(k as i64)
            .value(call.count as i64)
            .value(a_offset)
            .value(a_batch)
            .value(a_row)
            .value(a_col)
            .value(b_offset)
            .value(b_batch)
            .value(b_row)
            .value(b_col)
            .value(c_offset)
            .value(c_batch);
        // SAFETY: the kernel takes exactly these seventeen parameters (three element pointers,
        // fourteen 64-bit integers) of the compiled element type. It reads
        // `a[a_offset + matrix * a_batch + row * a_row + l * a_col]` and the like of `b` only for
        // `row < m`, `l < k`, `col < n`, `matrix < count`: elements of the views `a` and `b`
        // (the offsets and strides are their own, from `batch_calls`); and writes the compact
        // `m x n` matrices `c_batch` apart from `c_offset`, elements of the compact result.
        unsafe { launch.run(&loaded.functions[0], (grid_x, grid_y), (TILE, TILE))? };
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Arch, CompileTarget, Program, ProgramOptions};

    #[test]
    fn small_float_products_are_those_up_to_64_cubed() {
        assert!(is_small(1, (64, 64, 64)));
        assert!(is_small(4, (16, 64, 64)));
        assert!(!is_small(1, (64, 64, 65)));
        assert!(!is_small(2, (64, 64, 64)));
        assert!(!is_small(usize::MAX, (2, 2, 2)), "an overflowing count is not small");
    }

    #[test]
    fn the_kernel_compiles_for_every_element_type() {
        for dtype in DType::ALL {
            let source = source(dtype);
            assert!(source.contains(if dtype == DType::Bool { "|=" } else { "+=" }));
            Program::new(source, ProgramOptions::for_arch(Arch::Sm(90)))
                .compile(CompileTarget::Ptx)
                .unwrap_or_else(|e| panic!("{dtype}: {e}"));
        }
    }
}
