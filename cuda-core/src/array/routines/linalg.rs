//! Matrix products (NumPy's "linear algebra" chapter): [`DeviceArray::matmul`] through cuBLAS,
//! from the `cuda-libs` crate (feature `blas`, on by default).
//!
//! Operands go to cuBLAS as they are whenever it can take them: a row-major matrix with any
//! row stride is passed with its leading dimension, and a transposed view (a column-major
//! layout) as cuBLAS's transpose flag, so `a.matmul(&b.transpose())` copies nothing. Any other
//! layout (a view with a step along its last axis, say) is made compact with one copy first.

use std::sync::{Arc, Mutex, PoisonError};

use cuda_driver::Stream;
use cuda_libs::blas::{Batch, Blas, Gemm, Operand};

use crate::array::device_array::DeviceArray;
use crate::array::dtype::Element;
use crate::array::kernels::registry::{kernel, KernelKey};
use crate::array::view::broadcast_shapes;
use crate::error::{Error, Result};

// Arrays are cuBLAS operands of their element type, through the device-memory contract.
impl<T: Element> Operand<T> for DeviceArray<T> {}

/// An element type `matmul` multiplies with cuBLAS: `f32`, `f64`, `f16` and `bf16` (f16 and bf16
/// accumulate in f32; f32 is true single precision, not TF32).
pub trait MatmulElement: Element + cuda_libs::blas::Element {}

impl MatmulElement for f32 {}
impl MatmulElement for f64 {}
impl MatmulElement for half::f16 {}
impl MatmulElement for half::bf16 {}

/// How one 2-D operand goes to cuBLAS: as stored row-major, or as the transpose of a row-major
/// matrix, with its leading dimension.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Layout {
    transposed: bool,
    ld: usize,
}

/// The layout cuBLAS can take a `rows` x `cols` matrix with element strides `strides` in, if
/// any: row-major (unit column stride) or column-major (unit row stride, a transposed view).
fn layout(rows: usize, cols: usize, strides: [usize; 2]) -> Option<Layout> {
    let [row_stride, col_stride] = strides;
    if (col_stride == 1 || cols == 1) && (row_stride >= cols || rows == 1) {
        return Some(Layout {
            transposed: false,
            ld: match rows {
                1 => cols.max(1),
                _ => row_stride.max(1),
            },
        });
    }
    if (row_stride == 1 || rows == 1) && (col_stride >= rows || cols == 1) {
        return Some(Layout {
            transposed: true,
            ld: match cols {
                1 => rows.max(1),
                _ => col_stride.max(1),
            },
        });
    }
    None
}

/// The cuBLAS handle of `stream`, made on first use and kept (with the stream) for the process,
/// as CuPy keeps one per device; the lock serialises calls through it.
fn handle(stream: &Stream) -> Result<Arc<Mutex<Blas>>> {
    // SAFETY: the handle is only used as a number, to key the registry.
    let raw = unsafe { stream.as_raw() } as u64;
    kernel(
        KernelKey::Encoded("cublas handle", vec![raw as u32, (raw >> 32) as u32]),
        || Ok(Mutex::new(Blas::new(stream)?)),
    )
}

impl<T: MatmulElement> DeviceArray<T> {
    /// The matrix product, NumPy's `matmul` (`a @ b`): 2-D operands multiply as matrices; a 1-D
    /// left operand is a row vector and a 1-D right operand a column vector (the added axis is
    /// removed from the result); operands of more dimensions are stacks of matrices in their
    /// last two axes, whose leading (batch) axes broadcast. The result is compact, on this
    /// array's stream: one `cublasGemmStridedBatchedEx` for a stack whose batch axes one stride
    /// per operand describes (contiguous or broadcast stacks, after merging axes), one per
    /// outer index otherwise.
    ///
    /// Shapes that do not contract are [`Error::InvalidValue`] naming both shapes and axes, as
    /// NumPy's error does; 0-d operands are refused as in NumPy; a zero-size dimension gives
    /// NumPy's result (an empty array, or zeros when the contracted axis is empty).
    ///
    /// ```no_run
    /// use cuda_core::{Device, DeviceArray};
    ///
    /// # fn main() -> cuda_core::Result<()> {
    /// let stream = Device::new(0)?.create_stream()?;
    /// let a = DeviceArray::from_slice(&stream, &[1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0])?.reshape([2, 3])?;
    /// let b = a.transpose(); // passed to cuBLAS as a transpose flag, not copied
    /// assert_eq!(a.matmul(&b)?.to_vec()?, [14.0, 32.0, 32.0, 77.0]);
    /// # Ok(())
    /// # }
    /// ```
    pub fn matmul(&self, other: &DeviceArray<T>) -> Result<DeviceArray<T>> {
        if self.ndim() == 0 || other.ndim() == 0 {
            return Err(Error::InvalidValue(format!(
                "matmul: operands must have at least one dimension (shapes {:?} and {:?})",
                self.shape(),
                other.shape()
            )));
        }
        if self.context() != other.context() {
            return Err(cuda_driver::Error::WrongContext {
                object: "array",
                used_with: "matmul",
            }
            .into());
        }
        // 1-D operands become matrices: a row on the left, a column on the right.
        let a = match self.ndim() {
            1 => self.expand_dims(0)?,
            _ => self.to_view(),
        };
        let b = match other.ndim() {
            1 => other.expand_dims(1)?,
            _ => other.to_view(),
        };
        let (m, k) = (a.shape()[a.ndim() - 2], a.shape()[a.ndim() - 1]);
        let (k2, n) = (b.shape()[b.ndim() - 2], b.shape()[b.ndim() - 1]);
        if k != k2 {
            return Err(Error::InvalidValue(format!(
                "matmul: input operand 1 has a mismatch in its core dimension 0 (size {k2} is different from {k}): shapes {:?} and {:?}",
                self.shape(),
                other.shape()
            )));
        }
        let batch = broadcast_shapes(&a.shape()[..a.ndim() - 2], &b.shape()[..b.ndim() - 2]).map_err(|_| {
            Error::InvalidValue(format!(
                "matmul: the batch axes of shapes {:?} and {:?} do not broadcast",
                self.shape(),
                other.shape()
            ))
        })?;
        let stream = self.stream().clone();
        let mut full = batch.clone();
        full.extend([m, n]);
        let mut out = DeviceArray::<T>::empty(&stream, full)?;
        if !out.is_empty() {
            let a = cublas_operand(a, m, k)?.broadcast_to([batch.as_slice(), &[m, k]].concat())?;
            let b = cublas_operand(b, k, n)?.broadcast_to([batch.as_slice(), &[k, n]].concat())?;
            match k {
                0 => out.fill(T::from_f64(0.0))?,
                _ => multiply_stack(&stream, &a, &b, &mut out, (m, n, k))?,
            }
        }
        // Remove the axes the 1-D operands gained.
        let mut shape = out.shape().to_vec();
        if other.ndim() == 1 {
            shape.remove(shape.len() - 1);
        }
        if self.ndim() == 1 {
            shape.remove(shape.len() - if other.ndim() == 1 { 1 } else { 2 });
        }
        out.reshape(shape)
    }

    /// Another view of the same elements.
    fn to_view(&self) -> DeviceArray<T> {
        self.view(*self.ptr_ref(), self.shape().to_vec(), self.strides().to_vec())
    }
}

/// `out[i] = a[i] @ b[i]` for every matrix `i` of the (equal, broadcast) batch axes: one
/// `cublasGemmStridedBatchedEx` for the batch axes that one stride per operand describes (after
/// dropping axes of one and merging contiguous ones), looping over any axes left outside them.
/// `a` and `b` have layouts cuBLAS takes (see [`cublas_operand`]).
fn multiply_stack<T: MatmulElement>(
    stream: &Stream,
    a: &DeviceArray<T>,
    b: &DeviceArray<T>,
    out: &mut DeviceArray<T>,
    (m, n, k): (usize, usize, usize),
) -> Result<()> {
    let ndim = out.ndim();
    let unsupported = || Error::InvalidValue("matmul: an operand's matrices have no cuBLAS layout".into());
    let a_layout = matrix_layout(a, m, k).ok_or_else(unsupported)?;
    let b_layout = matrix_layout(b, k, n).ok_or_else(unsupported)?;
    let mut gemm = Gemm::new(m, n, k).lda(a_layout.ld).ldb(b_layout.ld).ldc(n);
    gemm.transpose_a = a_layout.transposed;
    gemm.transpose_b = b_layout.transposed;
    let groups = batch_groups(
        &out.shape()[..ndim - 2],
        [
            &a.strides()[..ndim - 2],
            &b.strides()[..ndim - 2],
            &out.strides()[..ndim - 2],
        ],
    );
    // The innermost group is one batched call; the outer ones are looped over.
    let (inner, outer) = match groups.split_last() {
        Some((&inner, outer)) => (inner, outer),
        None => ((1, [0; 3]), &[][..]),
    };
    let (count, [stride_a, stride_b, stride_c]) = inner;
    let batch = Batch {
        count,
        stride_a,
        stride_b,
        stride_c,
    };
    let calls: usize = outer.iter().map(|&(size, _)| size).product();
    let handle = handle(stream)?;
    let mut blas = handle.lock().unwrap_or_else(PoisonError::into_inner);
    let mut index = vec![0usize; outer.len()];
    for _ in 0..calls {
        let offsets = (0..3).map(|operand| {
            index
                .iter()
                .zip(outer)
                .map(|(&i, &(_, strides))| i * strides[operand])
                .sum::<usize>()
        });
        let offsets: Vec<usize> = offsets.collect();
        let a_i = stack(a, offsets[0], count, stride_a);
        let b_i = stack(b, offsets[1], count, stride_b);
        let mut c_i = stack(out, offsets[2], count, stride_c);
        match count {
            1 => blas.gemm(&gemm, &a_i, &b_i, &mut c_i)?,
            _ => blas.gemm_strided_batched(&gemm, &batch, &a_i, &b_i, &mut c_i)?,
        }
        // The next call, last outer axis fastest.
        for axis in (0..index.len()).rev() {
            index[axis] += 1;
            if index[axis] < outer[axis].0 {
                break;
            }
            index[axis] = 0;
        }
    }
    Ok(())
}

/// The batch axes of `shape` (strides of `a`, `b` and the result) as groups of `(size, [stride
/// of each operand])`, outermost first: axes of one dropped, neighbours merged where each
/// operand's outer stride is its inner stride times the inner size (a broadcast axis, stride 0,
/// merges with another broadcast axis). Each group is one strided batch.
fn batch_groups(shape: &[usize], strides: [&[usize]; 3]) -> Vec<(usize, [usize; 3])> {
    let mut groups: Vec<(usize, [usize; 3])> = Vec::new();
    for (axis, &size) in shape.iter().enumerate() {
        if size == 1 {
            continue;
        }
        let axis_strides = strides.map(|s| s[axis]);
        if let Some((outer_size, outer_strides)) = groups.last_mut() {
            if (0..3).all(|o| outer_strides[o] == axis_strides[o] * size) {
                *outer_size *= size;
                *outer_strides = axis_strides;
                continue;
            }
        }
        groups.push((size, axis_strides));
    }
    groups
}

/// `count` matrices of `array` (its last two axes), `stride` elements apart from `offset`
/// elements after its start: a 3-D view, the operand of one batched call.
fn stack<T: Element>(array: &DeviceArray<T>, offset: usize, count: usize, stride: usize) -> DeviceArray<T> {
    let ndim = array.ndim();
    let ptr = *array.ptr_ref() + (offset * std::mem::size_of::<T>()) as u64;
    let mut shape = vec![count];
    shape.extend_from_slice(&array.shape()[ndim - 2..]);
    let mut strides = vec![stride];
    strides.extend_from_slice(&array.strides()[ndim - 2..]);
    array.view(ptr, shape, strides)
}

/// The cuBLAS layout of the matrices (last two axes, `rows` x `cols`) of `array`, if any.
fn matrix_layout<T: Element>(array: &DeviceArray<T>, rows: usize, cols: usize) -> Option<Layout> {
    let ndim = array.ndim();
    layout(rows, cols, [array.strides()[ndim - 2], array.strides()[ndim - 1]])
}

/// `array` (a stack of `rows` x `cols` matrices) as cuBLAS can take it: itself when its matrices
/// have a cuBLAS layout, else a compact copy (made before broadcasting, so a broadcast operand is
/// copied once).
fn cublas_operand<T: Element>(array: DeviceArray<T>, rows: usize, cols: usize) -> Result<DeviceArray<T>> {
    match matrix_layout(&array, rows, cols) {
        Some(_) => Ok(array),
        None => array.try_clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batch_axes_merge_into_strided_batches() {
        // A compact 4 x 5 stack times a broadcast matrix (strides 0): one batch of 20.
        let shape = [4, 5];
        assert_eq!(batch_groups(&shape, [&[60, 12], &[0, 0], &[30, 6]]), [(20, [12, 0, 6])]);
        // Broadcasting along the outer axis only: two groups (a loop of strided batches).
        assert_eq!(
            batch_groups(&shape, [&[60, 12], &[0, 20], &[30, 6]]),
            [(4, [60, 0, 30]), (5, [12, 20, 6])]
        );
        // Axes of one are dropped, whatever their strides.
        assert_eq!(
            batch_groups(&[1, 3, 1], [&[99, 8, 7], &[0, 4, 1], &[5, 6, 2]]),
            [(3, [8, 4, 6])]
        );
        // A permuted (non-mergeable) stack and no batch axes at all.
        assert_eq!(
            batch_groups(&[2, 3], [&[6, 12], &[12, 4], &[18, 6]]),
            [(2, [6, 12, 18]), (3, [12, 4, 6])]
        );
        assert!(batch_groups(&[], [&[], &[], &[]]).is_empty());
    }

    #[test]
    fn layouts_cublas_takes_without_a_copy() {
        // Row-major, also with padded rows (a slice of columns).
        assert_eq!(
            layout(3, 4, [4, 1]),
            Some(Layout {
                transposed: false,
                ld: 4
            })
        );
        assert_eq!(
            layout(3, 4, [10, 1]),
            Some(Layout {
                transposed: false,
                ld: 10
            })
        );
        // A transposed view of a row-major 4 x 3 matrix.
        assert_eq!(
            layout(3, 4, [1, 3]),
            Some(Layout {
                transposed: true,
                ld: 3
            })
        );
        // A step along the last axis has no cuBLAS layout.
        assert_eq!(layout(3, 4, [8, 2]), None);
        // Broadcast rows (stride 0) cannot be a leading dimension.
        assert_eq!(layout(3, 4, [0, 1]), None);
        // Single rows and columns take any stride.
        assert_eq!(
            layout(1, 4, [0, 1]),
            Some(Layout {
                transposed: false,
                ld: 4
            })
        );
        assert_eq!(
            layout(4, 1, [1, 0]),
            Some(Layout {
                transposed: false,
                ld: 1
            })
        );
    }
}
