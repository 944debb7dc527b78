//! Matrix products (NumPy's "linear algebra" chapter): [`DeviceArray::matmul`] through cuBLAS,
//! from the `cuda-libs` crate (feature `blas`, on by default).
//!
//! Operands go to cuBLAS as they are whenever it can take them: a row-major matrix with any
//! row stride is passed with its leading dimension, and a transposed view (a column-major
//! layout) as cuBLAS's transpose flag, so `a.matmul(&b.transpose())` copies nothing. Any other
//! layout (a view with a step along its last axis, say) is made compact with one copy first.

use std::sync::{Arc, Mutex, PoisonError};

use cuda_driver::Stream;
use cuda_libs::blas::{Blas, Gemm, Operand};

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
    /// array's stream, one `cublasGemmEx` per matrix of the stack.
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
            let a = a.broadcast_to([batch.as_slice(), &[m, k]].concat())?;
            let b = b.broadcast_to([batch.as_slice(), &[k, n]].concat())?;
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

/// `out[i] = a[i] @ b[i]` for every matrix `i` of the (equal, broadcast) batch axes.
fn multiply_stack<T: MatmulElement>(
    stream: &Stream,
    a: &DeviceArray<T>,
    b: &DeviceArray<T>,
    out: &mut DeviceArray<T>,
    (m, n, k): (usize, usize, usize),
) -> Result<()> {
    let ndim = out.ndim();
    let batches: usize = out.shape()[..ndim - 2].iter().product();
    let handle = handle(stream)?;
    let mut blas = handle.lock().unwrap_or_else(PoisonError::into_inner);
    let mut index = vec![0usize; ndim - 2];
    for _ in 0..batches {
        let a_i = matrix(a, &index)?;
        let b_i = matrix(b, &index)?;
        let mut c_i = matrix(out, &index)?;
        let (a_layout, a_i) = cublas_layout(a_i, m, k)?;
        let (b_layout, b_i) = cublas_layout(b_i, k, n)?;
        let mut gemm = Gemm::new(m, n, k).lda(a_layout.ld).ldb(b_layout.ld).ldc(n.max(1));
        if a_layout.transposed {
            gemm = gemm.transpose_a();
        }
        if b_layout.transposed {
            gemm = gemm.transpose_b();
        }
        blas.gemm(&gemm, &a_i, &b_i, &mut c_i)?;
        // The next matrix of the stack, last batch axis fastest.
        for axis in (0..index.len()).rev() {
            index[axis] += 1;
            if index[axis] < out.shape()[axis] {
                break;
            }
            index[axis] = 0;
        }
    }
    Ok(())
}

/// The matrix at batch `index` of `array` (its last two axes), a view.
fn matrix<T: Element>(array: &DeviceArray<T>, index: &[usize]) -> Result<DeviceArray<T>> {
    let ndim = array.ndim();
    let offset: usize = index.iter().zip(array.strides()).map(|(&i, &s)| i * s).sum();
    let ptr = *array.ptr_ref() + (offset * std::mem::size_of::<T>()) as u64;
    Ok(array.view(
        ptr,
        array.shape()[ndim - 2..].to_vec(),
        array.strides()[ndim - 2..].to_vec(),
    ))
}

/// How `matrix` (`rows` x `cols`) goes to cuBLAS: as it is when cuBLAS can take its layout,
/// else a compact copy.
fn cublas_layout<T: Element>(matrix: DeviceArray<T>, rows: usize, cols: usize) -> Result<(Layout, DeviceArray<T>)> {
    let strides = [matrix.strides()[0], matrix.strides()[1]];
    match layout(rows, cols, strides) {
        Some(layout) => Ok((layout, matrix)),
        None => {
            let compact = matrix.try_clone()?;
            let layout = layout(rows, cols, [cols, 1]).expect("a compact matrix is row-major");
            Ok((layout, compact))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
