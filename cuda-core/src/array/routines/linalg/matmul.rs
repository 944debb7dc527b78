//! [`DeviceArray::matmul`]: NumPy's shape rule ([`Product`]), the element types it multiplies
//! ([`MatmulType`]: floats through cuBLAS/cuBLASLt, integers and `Bool` through a generated
//! kernel), and how operands reach cuBLAS without a copy.
//!
//! Float products of at most 64^3 multiply-adds (batches included) run through the same
//! generated tiled kernel as integers: at that size a cuBLAS call's host time (about 7 us on
//! the H200) is twice a launch's, and the kernel reads any layout in place. A larger 2-D
//! product of `f32`, `f16` or `bf16` whose operands are 256-byte aligned (whole arrays are) goes
//! through the stream's cuBLASLt handle, whose plan for the shape (descriptors and algorithm) is
//! made once: a repeated product costs one library call and no heuristic.
//! Stacks go through `cublasGemmStridedBatchedEx`, other 2-D products through `cublasGemmEx`.

use std::sync::PoisonError;

use cuda_driver::Stream;
use cuda_libs::blas::{Batch, Epilogue, Gemm, Lt, Operand};

use super::batches::for_each_batch;
use super::handles::{blas, lt, matmul_replay, tf32};
use super::laid_out::LaidOut;
use super::{same_context, tiled, NormElement, NormInput};
use crate::array::device_array::DeviceArray;
use crate::array::dtype::{Bool, Element};
use crate::array::promotion::Scalars;
use crate::array::view::broadcast_shapes;
use crate::error::{Error, Result};

// Arrays are cuBLAS operands of their element type, through the device-memory contract (which
// takes compact arrays only; this module passes other views with their layouts, as `LaidOut`).
impl<T: Element> Operand<T> for DeviceArray<T> {}

pub(crate) mod sealed {
    use cuda_libs::blas::{Epilogue, Gemm, Lt};

    use crate::array::device_array::DeviceArray;
    use crate::array::dtype::Element;
    use crate::error::Result;

    /// How `matmul` multiplies an element type.
    pub trait Multiply: Element {
        /// `out[i] = a[i] @ b[i]` for every matrix of `out` (`[batch.., m, n]`, compact): `a`
        /// and `b` are stacks (`[.., m, k]`, `[.., k, n]`) whose batch axes broadcast to `out`'s;
        /// `k` is at least 1 and `out` not empty.
        fn multiply(
            a: &DeviceArray<Self>,
            b: &DeviceArray<Self>,
            out: &mut DeviceArray<Self>,
            mnk: (usize, usize, usize),
        ) -> Result<()>;

        /// `out = epilogue(a @ b [+ bias])` for 2-D `a` and `b` and a compact `out` as one
        /// library call (cuBLASLt) when the type and the operands allow it; `Ok(false)`, with
        /// nothing queued, otherwise.
        fn multiply_with_epilogue(
            operands: [&DeviceArray<Self>; 2],
            epilogue: Epilogue,
            bias: Option<&DeviceArray<Self>>,
            out: &mut DeviceArray<Self>,
            mnk: (usize, usize, usize),
        ) -> Result<bool>;
    }

    /// Whether and how cuBLASLt multiplies an element type.
    pub trait LtProduct: Element {
        /// `lt.matmul` for this type; `None` where cuBLASLt's epilogues do not take it (`f64`).
        fn lt_matmul(
            lt: &mut Lt,
            gemm: &Gemm,
            epilogue: Epilogue,
            operands: [&DeviceArray<Self>; 2],
            bias: Option<&DeviceArray<Self>>,
            c: &mut DeviceArray<Self>,
        ) -> Option<cuda_libs::Result<()>>;
    }
}

/// An element type [`matmul`](DeviceArray::matmul) takes, as NumPy's `matmul` does: `f32`,
/// `f64`, `f16`, `bf16` and the complex types (cuBLAS's C and Z products) through cuBLAS (f16 and bf16 accumulate in f32; f32 is true single
/// precision unless [TF32 is allowed](crate::set_tf32); products of at most 64^3 multiply-adds
/// through the generated tiled kernel, in full precision), every integer type through a generated
/// tiled kernel (products and sums wrap around in the type, as NumPy's do), and `Bool` (NumPy's
/// logical product: any `a[i, l] && b[l, j]`).
pub trait MatmulType: Scalars + sealed::Multiply {}

/// An element type multiplied through cuBLAS: `f32`, `f64`, `f16`, `bf16`, `Complex<f32>` and
/// `Complex<f64>` (f16 and bf16 accumulate in f32; f32 is true single precision unless [TF32 is
/// allowed](crate::set_tf32); cuBLASLt's epilogues take the real ones but `f64`). `dot`, `vdot`,
/// `inner`, `outer` and `tensordot` take these (`vdot` of complex arrays is
/// [`Error::NotSupported`] yet); the norms take these, `Bool` and the integers
/// ([`NormInput`]), and are real ([`NormOf`](super::NormOf)).
///
/// Their sums are of their own type (`Element::Sum = Self`), so the products built on
/// reductions keep the element type.
pub trait MatmulElement:
    MatmulType
    + Element<Sum = Self>
    + cuda_libs::blas::Element
    + sealed::LtProduct
    + Scalars<Real: NormElement>
    + NormInput<Computed = Self>
{
}

macro_rules! cublas_types {
    ($($ty:ty => $lt:expr;)*) => {
        $(
            impl sealed::Multiply for $ty {
                fn multiply(
                    a: &DeviceArray<Self>,
                    b: &DeviceArray<Self>,
                    out: &mut DeviceArray<Self>,
                    mnk: (usize, usize, usize),
                ) -> Result<()> {
                    cublas_multiply(a, b, out, mnk)
                }

                fn multiply_with_epilogue(
                    [a, b]: [&DeviceArray<Self>; 2],
                    epilogue: Epilogue,
                    bias: Option<&DeviceArray<Self>>,
                    out: &mut DeviceArray<Self>,
                    (m, n, k): (usize, usize, usize),
                ) -> Result<bool> {
                    let (mut a_copy, mut b_copy) = (None, None);
                    let a = with_layout(a, m, k, &mut a_copy)?;
                    let b = with_layout(b, k, n, &mut b_copy)?;
                    let stream = out.stream().clone();
                    lt_product(&stream, [a, b], epilogue, bias, out, (m, n, k))
                }
            }

            impl sealed::LtProduct for $ty {
                fn lt_matmul(
                    lt: &mut Lt,
                    gemm: &Gemm,
                    epilogue: Epilogue,
                    [a, b]: [&DeviceArray<Self>; 2],
                    bias: Option<&DeviceArray<Self>>,
                    c: &mut DeviceArray<Self>,
                ) -> Option<cuda_libs::Result<()>> {
                    let matmul: Option<fn(&mut Lt, &Gemm, Epilogue, &LaidOut<'_, Self>, &LaidOut<'_, Self>, Option<&dyn Operand<Self>>, &mut DeviceArray<Self>) -> cuda_libs::Result<()>> = $lt;
                    // `a` and `b` go with the layouts `gemm` took from their strides; the bias
                    // and `c` are compact.
                    let (a, b) = (LaidOut::new(a), LaidOut::new(b));
                    matmul.map(|matmul| matmul(lt, gemm, epilogue, &a, &b, bias.map(|b| b as &dyn Operand<Self>), c))
                }
            }

            impl MatmulType for $ty {}
            impl MatmulElement for $ty {}
        )*
    };
}

cublas_types! {
    f32 => Some(|lt, g, e, a, b, bias, c| lt.matmul(g, e, a, b, bias, c));
    half::f16 => Some(|lt, g, e, a, b, bias, c| lt.matmul(g, e, a, b, bias, c));
    half::bf16 => Some(|lt, g, e, a, b, bias, c| lt.matmul(g, e, a, b, bias, c));
    f64 => None;
    num_complex::Complex<f32> => None;
    num_complex::Complex<f64> => None;
}

macro_rules! kernel_types {
    ($($ty:ty),*) => {
        $(
            impl sealed::Multiply for $ty {
                fn multiply(
                    a: &DeviceArray<Self>,
                    b: &DeviceArray<Self>,
                    out: &mut DeviceArray<Self>,
                    mnk: (usize, usize, usize),
                ) -> Result<()> {
                    tiled::multiply(a, b, out, mnk)
                }

                fn multiply_with_epilogue(
                    _: [&DeviceArray<Self>; 2],
                    _: Epilogue,
                    _: Option<&DeviceArray<Self>>,
                    _: &mut DeviceArray<Self>,
                    _: (usize, usize, usize),
                ) -> Result<bool> {
                    Ok(false)
                }
            }

            impl MatmulType for $ty {}
        )*
    };
}

kernel_types!(i8, i16, i32, i64, u8, u16, u32, u64, Bool);

/// A product's sizes by NumPy's `matmul` rule: `m x k` times `k x n` matrices, the broadcast
/// batch axes, and the result's shape (without the axes 1-D operands gained).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Product {
    pub(crate) m: usize,
    pub(crate) n: usize,
    pub(crate) k: usize,
    pub(crate) batch: Vec<usize>,
    pub(crate) shape: Vec<usize>,
}

impl Product {
    /// The product of operands of shapes `a` and `b`, or [`Error::InvalidValue`] naming both
    /// shapes and the axes: 0-d operands, core dimensions that differ, batch axes that do not
    /// broadcast.
    pub(crate) fn new(a: &[usize], b: &[usize]) -> Result<Product> {
        if a.is_empty() || b.is_empty() {
            return Err(Error::InvalidValue(format!(
                "matmul: operands must have at least one dimension (shapes {a:?} and {b:?})"
            )));
        }
        // 1-D operands are matrices: a row on the left, a column on the right.
        let (m, k) = match a.len() {
            1 => (1, a[0]),
            nd => (a[nd - 2], a[nd - 1]),
        };
        let (k2, n) = match b.len() {
            1 => (b[0], 1),
            nd => (b[nd - 2], b[nd - 1]),
        };
        if k != k2 {
            return Err(Error::InvalidValue(format!(
                "matmul: input operand 1 has a mismatch in its core dimension 0 (size {k2} is different from {k}): shapes {a:?} and {b:?} (axis {} of the first against axis {} of the second)",
                a.len() - 1,
                b.len().saturating_sub(2)
            )));
        }
        let batch =
            broadcast_shapes(&a[..a.len().saturating_sub(2)], &b[..b.len().saturating_sub(2)]).map_err(|_| {
                Error::InvalidValue(format!(
                    "matmul: the batch axes of shapes {a:?} and {b:?} do not broadcast"
                ))
            })?;
        let mut shape = batch.clone();
        if a.len() > 1 {
            shape.push(m);
        }
        if b.len() > 1 {
            shape.push(n);
        }
        Ok(Product { m, n, k, batch, shape })
    }
}

impl<T: MatmulType> DeviceArray<T> {
    /// The matrix product, NumPy's `matmul` (`a @ b`): 2-D operands multiply as matrices; a 1-D
    /// left operand is a row vector and a 1-D right operand a column vector (the added axis is
    /// removed from the result); operands of more dimensions are stacks of matrices in their
    /// last two axes, whose leading (batch) axes broadcast. The result is compact, on this
    /// array's stream.
    ///
    /// Floats go to cuBLAS (see [`MatmulElement`]): a 2-D `f32`/`f16`/`bf16` product as one
    /// `cublasLtMatmul` with the plan cached per shape, a stack as one
    /// `cublasGemmStridedBatchedEx` where one stride per operand describes its batch axes
    /// (contiguous or broadcast stacks, after merging axes), one per outer index otherwise. A 2-D
    /// product repeated on the same arrays and the same output block (a loop that drops each
    /// result gets the same block from the pool) can be replayed as a CUDA graph from its second
    /// time on, at a fraction of the library call's host cost: off by default, see
    /// [`set_matmul_replay`](crate::set_matmul_replay) for the trade-off.
    /// Products of at most 64^3 multiply-adds, integers and `Bool` go to a generated tiled kernel
    /// that reads any strides (see [`MatmulType`]). [`DeviceArray::matmul_expr`] is the same product inside an expression
    /// (fused with a bias and an activation).
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
    /// let i = DeviceArray::from_slice(&stream, &[1i32, 2, 3, 4])?.reshape([2, 2])?;
    /// assert_eq!(i.matmul(&i)?.to_vec()?, [7, 10, 15, 22]); // a generated kernel
    /// # Ok(())
    /// # }
    /// ```
    pub fn matmul(&self, other: &DeviceArray<T>) -> Result<DeviceArray<T>> {
        let mut product = Product::new(self.shape(), other.shape())?;
        same_context(self, other, "matmul")?;
        // `multiply_into` needs the sizes, not the shape: it moves into the result.
        let shape = std::mem::take(&mut product.shape);
        let mut out = DeviceArray::<T>::empty(self.stream(), shape)?;
        multiply_into(self, other, &product, &mut out)?;
        Ok(out)
    }
}

/// Writes `a @ b` into `out`, a compact array of `product`'s shape on the stream the product
/// runs on (`product.shape` is not read).
pub(crate) fn multiply_into<T: MatmulType>(
    a: &DeviceArray<T>,
    b: &DeviceArray<T>,
    product: &Product,
    out: &mut DeviceArray<T>,
) -> Result<()> {
    let mnk = (product.m, product.n, product.k);
    if out.is_empty() {
        return Ok(());
    }
    if product.k == 0 {
        return out.fill(T::from_f64(0.0));
    }
    if a.ndim() == 2 && b.ndim() == 2 {
        return T::multiply(a, b, out, mnk);
    }
    // 1-D operands become matrices, the result a stack of `m x n` matrices.
    let a = match a.ndim() {
        1 => a.expand_dims(0)?,
        _ => a.to_view(),
    };
    let b = match b.ndim() {
        1 => b.expand_dims(1)?,
        _ => b.to_view(),
    };
    let mut shape = product.batch.clone();
    shape.extend([product.m, product.n]);
    let mut stacked = out.reshape(shape)?;
    T::multiply(&a, &b, &mut stacked, mnk)
}

/// [`sealed::Multiply`] of the cuBLAS types: a small product through the tiled kernel (see
/// [`tiled::SMALL_PRODUCT`]); a 2-D product through [`gemm_2d`]; a stack with its operands made
/// cuBLAS layouts (copied once, before broadcasting, where they have none) through
/// [`multiply_stack`].
fn cublas_multiply<T: MatmulElement>(
    a: &DeviceArray<T>,
    b: &DeviceArray<T>,
    out: &mut DeviceArray<T>,
    (m, n, k): (usize, usize, usize),
) -> Result<()> {
    let stream = out.stream().clone();
    let count = out.shape()[..out.ndim() - 2].iter().product();
    if tiled::is_small(count, (m, n, k)) {
        return tiled::multiply(a, b, out, (m, n, k));
    }
    if out.ndim() == 2 {
        let (mut a_copy, mut b_copy) = (None, None);
        let a = with_layout(a, m, k, &mut a_copy)?;
        let b = with_layout(b, k, n, &mut b_copy)?;
        return gemm_2d(&stream, [a, b], out, (m, n, k));
    }
    let batch = &out.shape()[..out.ndim() - 2];
    let a = cublas_operand(a, m, k)?.broadcast_to([batch, &[m, k]].concat())?;
    let b = cublas_operand(b, k, n)?.broadcast_to([batch, &[k, n]].concat())?;
    multiply_stack(&stream, &a, &b, out, (m, n, k))
}

/// The [`Gemm`] of `a @ b` into a compact `out` (2-D or stacks, whose last two axes have cuBLAS
/// layouts).
fn gemm_of<T: Element>(a: &DeviceArray<T>, b: &DeviceArray<T>, (m, n, k): (usize, usize, usize)) -> Result<Gemm> {
    let unsupported = || Error::InvalidValue("matmul: an operand's matrices have no cuBLAS layout".into());
    let a_layout = matrix_layout(a, m, k).ok_or_else(unsupported)?;
    let b_layout = matrix_layout(b, k, n).ok_or_else(unsupported)?;
    let mut gemm = Gemm::new(m, n, k).lda(a_layout.ld).ldb(b_layout.ld).ldc(n);
    gemm.transpose_a = a_layout.transposed;
    gemm.transpose_b = b_layout.transposed;
    Ok(gemm)
}

/// One 2-D product `out = a @ b` (operands with cuBLAS layouts, `out` compact): through
/// cuBLASLt where [`lt_product`] takes it, else `cublasGemmEx`.
fn gemm_2d<T: MatmulElement>(
    stream: &Stream,
    [a, b]: [&DeviceArray<T>; 2],
    out: &mut DeviceArray<T>,
    mnk: (usize, usize, usize),
) -> Result<()> {
    if lt_product(stream, [a, b], Epilogue::None, None, out, mnk)? {
        return Ok(());
    }
    let gemm = gemm_of(a, b, mnk)?;
    let handle = blas(stream)?;
    let mut blas = handle.lock().unwrap_or_else(PoisonError::into_inner);
    blas.set_allow_tf32(tf32());
    Ok(blas.gemm(&gemm, &LaidOut::new(a), &LaidOut::new(b), out)?)
}

/// The alignment cuBLASLt's algorithm heuristic assumes of every operand.
const LT_ALIGNMENT: u64 = 256;

/// `out = epilogue(a @ b [+ bias])` as one `cublasLtMatmul` on `stream` (2-D operands with
/// cuBLAS layouts, `out` compact), when cuBLASLt takes it: an `f32`, `f16` or `bf16` product
/// whose operands are [`LT_ALIGNMENT`]-aligned (whole arrays are; views with an offset may not
/// be) and for which cuBLASLt has an algorithm. `Ok(false)` (nothing queued) otherwise.
fn lt_product<T: MatmulElement>(
    stream: &Stream,
    [a, b]: [&DeviceArray<T>; 2],
    epilogue: Epilogue,
    bias: Option<&DeviceArray<T>>,
    out: &mut DeviceArray<T>,
    mnk: (usize, usize, usize),
) -> Result<bool> {
    let aligned = [Some(a), Some(b), Some(&*out), bias]
        .into_iter()
        .flatten()
        .all(|array| *array.ptr_ref() % LT_ALIGNMENT == 0);
    if !aligned {
        return Ok(false);
    }
    let gemm = gemm_of(a, b, mnk)?;
    let handle = lt(stream)?;
    let mut lt = handle.lock().unwrap_or_else(PoisonError::into_inner);
    lt.set_allow_tf32(tf32());
    lt.set_replay(matmul_replay());
    match T::lt_matmul(&mut lt, &gemm, epilogue, [a, b], bias, out) {
        None => Ok(false),
        Some(Ok(())) => Ok(true),
        // No algorithm for this problem (or a status cuBLASLt refuses it with): nothing queued.
        Some(Err(cuda_libs::Error::Status { .. })) => Ok(false),
        Some(Err(error)) => Err(error.into()),
    }
}

/// `out[i] = a[i] @ b[i]` for every matrix `i` of the (equal, broadcast) batch axes: one
/// `cublasGemmStridedBatchedEx` per batch group (see [`for_each_batch`]). `a` and `b` have
/// layouts cuBLAS takes (see [`cublas_operand`]).
fn multiply_stack<T: MatmulElement>(
    stream: &Stream,
    a: &DeviceArray<T>,
    b: &DeviceArray<T>,
    out: &mut DeviceArray<T>,
    mnk: (usize, usize, usize),
) -> Result<()> {
    let gemm = gemm_of(a, b, mnk)?;
    let handle = blas(stream)?;
    let mut blas = handle.lock().unwrap_or_else(PoisonError::into_inner);
    blas.set_allow_tf32(tf32());
    for_each_batch(a, b, out, |a_i, b_i, c_i, count, strides| {
        // The operands have cuBLAS layouts, which have no negative stride.
        let [stride_a, stride_b, stride_c] = strides.map(|s| s.unsigned_abs());
        let batch = Batch {
            count,
            stride_a,
            stride_b,
            stride_c,
        };
        match count {
            1 => blas.gemm(&gemm, &LaidOut::new(a_i), &LaidOut::new(b_i), c_i)?,
            _ => blas.gemm_strided_batched(&gemm, &batch, &LaidOut::new(a_i), &LaidOut::new(b_i), c_i)?,
        }
        Ok(())
    })
}

/// The cuBLAS layout of the matrices (last two axes, `rows` x `cols`) of `array`, if any. cuBLAS
/// walks rows, columns and batches forward: a reversed view (a negative stride) has none.
fn matrix_layout<T: Element>(array: &DeviceArray<T>, rows: usize, cols: usize) -> Option<Layout> {
    let strides = array.strides();
    if strides.iter().any(|&s| s < 0) {
        return None;
    }
    let ndim = strides.len();
    // No stride is negative.
    layout(rows, cols, [strides[ndim - 2] as usize, strides[ndim - 1] as usize])
}

/// `array` (2-D, `rows` x `cols`) as cuBLAS can take it: itself (no view made, nothing
/// allocated) when it has a cuBLAS layout, else a compact copy kept in `copy`.
fn with_layout<'x, T: Element>(
    array: &'x DeviceArray<T>,
    rows: usize,
    cols: usize,
    copy: &'x mut Option<DeviceArray<T>>,
) -> Result<&'x DeviceArray<T>> {
    if matrix_layout(array, rows, cols).is_some() {
        return Ok(array);
    }
    Ok(copy.insert(array.try_clone()?))
}

/// `array` (a stack of `rows` x `cols` matrices) as cuBLAS can take it: itself when its matrices
/// have a cuBLAS layout, else a compact copy (made before broadcasting, so a broadcast operand is
/// copied once).
fn cublas_operand<T: Element>(array: &DeviceArray<T>, rows: usize, cols: usize) -> Result<DeviceArray<T>> {
    match matrix_layout(array, rows, cols) {
        Some(_) => Ok(array.to_view()),
        None => array.try_clone(),
    }
}

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn products_follow_numpy_shapes() {
        let p = Product::new(&[2, 3], &[3, 4]).unwrap();
        assert_eq!(
            (p.m, p.n, p.k, p.batch.as_slice(), p.shape.as_slice()),
            (2, 4, 3, &[][..], &[2, 4][..])
        );
        assert_eq!(Product::new(&[3], &[3, 4]).unwrap().shape, [4]);
        assert_eq!(Product::new(&[2, 3], &[3]).unwrap().shape, [2]);
        assert_eq!(Product::new(&[3], &[3]).unwrap().shape, [0usize; 0]);
        let p = Product::new(&[5, 1, 2, 3], &[4, 3, 6]).unwrap();
        assert_eq!(
            (p.batch.as_slice(), p.shape.as_slice()),
            (&[5, 4][..], &[5, 4, 2, 6][..])
        );
        assert_eq!(Product::new(&[0, 3], &[3, 4]).unwrap().shape, [0, 4]);
        assert_eq!(Product::new(&[2, 0], &[0, 4]).unwrap().k, 0);
        let message = match Product::new(&[2, 3], &[4, 5]) {
            Err(Error::InvalidValue(message)) => message,
            other => panic!("{other:?}"),
        };
        assert!(
            message.contains("[2, 3] and [4, 5]") && message.contains("axis 1"),
            "{message}"
        );
        assert!(matches!(Product::new(&[], &[3]), Err(Error::InvalidValue(_))));
        assert!(matches!(
            Product::new(&[2, 2, 3], &[3, 3, 4]),
            Err(Error::InvalidValue(_))
        ));
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
