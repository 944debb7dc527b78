//! A matrix product inside an expression: [`DeviceArray::matmul_expr`] is a lazy operand of
//! the expression API (`+`, `maximum`, `gelu`, ...), and evaluating the expression runs either
//! ONE `cublasLtMatmul` with an epilogue, or the product and ONE fused element-wise kernel that
//! reads it; never a kernel per operator.
//!
//! What matches an epilogue is in [`DeviceArray::matmul_expr`]'s docs; [`epilogue_of`] is the
//! matcher, a pure function of the tree and its operands' types and shapes.

use std::any::Any;
use std::rc::Rc;

use cuda_driver::Stream;
use cuda_libs::blas::Epilogue;

use super::matmul::{multiply_into, MatmulType, Product};
use super::same_context;
use crate::array::device_array::DeviceArray;
use crate::array::dtype::DType;
use crate::array::kernels::ErasedArray;
use crate::array::memory::{overlap, Overlap};
use crate::array::routines::math::{BinaryOp, Deferred, Expr, Node, Operand, ScalarValue, UnaryOp};
use crate::error::Result;

/// What the epilogue matcher needs to know of one operand of an expression.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Leaf<'s> {
    /// An array of this type, shape and strides.
    Array(DType, &'s [usize], &'s [isize]),
    /// A scalar's value.
    Scalar(ScalarValue),
    /// A product computed on evaluation, of this type and shape.
    Product(DType, &'s [usize]),
}

/// An epilogue the whole expression `node` is, around the product `operands[product]`: the
/// epilogue and the index of the bias operand (see [`DeviceArray::matmul_expr`] for the table).
/// `None` where the expression is anything else. A pure function of the tree and the operands'
/// types and shapes; alignment and overlap are checked at evaluation.
pub(crate) fn epilogue_of(node: &Node, leaves: &[Leaf<'_>], product: usize) -> Option<(Epilogue, Option<usize>)> {
    let Leaf::Product(dtype, &[_, n]) = leaves[product] else {
        return None;
    };
    if !matches!(dtype, DType::F32 | DType::F16 | DType::BF16) || node.dtype() != dtype {
        return None;
    }
    // The activation, and what it applies to.
    let (activation, inner) = match node {
        Node::Binary(BinaryOp::Maximum, x, y, _) => match (is_zero(x, leaves), is_zero(y, leaves)) {
            (false, true) => (Some(Epilogue::Relu), &**x),
            (true, false) => (Some(Epilogue::Relu), &**y),
            _ => return None,
        },
        Node::Unary(UnaryOp::Gelu, x, _) => (Some(Epilogue::Gelu), &**x),
        other => (None, other),
    };
    if inner.dtype() != dtype {
        return None;
    }
    let is_product = |node: &Node| matches!(node, Node::Operand(index, _) if *index == product);
    let bias = match inner {
        node if is_product(node) => None,
        Node::Binary(BinaryOp::Add, x, y, _) => {
            let other = match (is_product(x), is_product(y)) {
                (true, false) => &**y,
                (false, true) => &**x,
                _ => return None,
            };
            let Node::Operand(index, _) = other else {
                return None;
            };
            let Leaf::Array(bias_type, shape, strides) = leaves[*index] else {
                return None;
            };
            let row = match shape {
                [len] | [1, len] => *len == n,
                _ => false,
            };
            let unit_stride = n == 1 || strides.last() == Some(&1);
            if bias_type != dtype || !row || !unit_stride {
                return None;
            }
            Some(*index)
        }
        _ => return None,
    };
    let epilogue = match (bias.is_some(), activation) {
        (false, None) => Epilogue::None,
        (false, Some(activation)) => activation,
        (true, None) => Epilogue::Bias,
        (true, Some(Epilogue::Relu)) => Epilogue::ReluBias,
        (true, Some(_)) => Epilogue::GeluBias,
    };
    Some((epilogue, bias))
}

/// Whether `node` is a scalar zero.
fn is_zero(node: &Node, leaves: &[Leaf<'_>]) -> bool {
    match node {
        Node::Operand(index, _) => match leaves[*index] {
            Leaf::Scalar(ScalarValue::Float(value)) => value == 0.0,
            Leaf::Scalar(ScalarValue::Int(value)) => value.get() == 0,
            Leaf::Scalar(ScalarValue::Complex(re, im)) => re == 0.0 && im == 0.0,
            _ => false,
        },
        _ => false,
    }
}

/// The lazy product of [`DeviceArray::matmul_expr`], checked when it was made.
struct LazyProduct<'a, T: MatmulType> {
    a: &'a DeviceArray<T>,
    b: &'a DeviceArray<T>,
    product: Product,
}

impl<T: MatmulType> LazyProduct<'_, T> {
    /// Whether `out` can take the product directly: compact, of its shape, and not overlapping
    /// the operands (nor `bias`).
    fn writes_directly(&self, out: &DeviceArray<T>, bias: Option<&DeviceArray<T>>) -> bool {
        let disjoint = |input: &DeviceArray<T>| overlap(input.span(), out.span()) == Overlap::Disjoint;
        out.is_contiguous()
            && out.shape() == self.product.shape.as_slice()
            && disjoint(self.a)
            && disjoint(self.b)
            && bias.map_or(true, disjoint)
    }
}

impl<T: MatmulType> Deferred for LazyProduct<'_, T> {
    fn dtype(&self) -> DType {
        T::DTYPE
    }

    fn shape(&self) -> &[usize] {
        &self.product.shape
    }

    fn stream(&self) -> &Stream {
        self.a.stream()
    }

    fn evaluate_fused(&self, node: &Node, operands: &[Operand<'_>], index: usize, out: &mut dyn Any) -> Result<bool> {
        let Some(out) = out.downcast_mut::<DeviceArray<T>>() else {
            return Ok(false);
        };
        // The product alone: written straight into the output, whatever its type and shape.
        if matches!(node, Node::Operand(i, _) if *i == index) {
            if !self.writes_directly(out, None) {
                return Ok(false);
            }
            multiply_into(self.a, self.b, &self.product, out)?;
            return Ok(true);
        }
        let leaves: Vec<Leaf<'_>> = operands.iter().map(leaf).collect();
        let Some((epilogue, bias_index)) = epilogue_of(node, &leaves, index) else {
            return Ok(false);
        };
        let bias = match bias_index.map(|i| &operands[i]) {
            Some(Operand::Array(array)) => match array.as_any().downcast_ref::<DeviceArray<T>>() {
                Some(bias) => Some(bias),
                None => return Ok(false),
            },
            _ => None,
        };
        let Product { m, n, k, .. } = self.product;
        if !self.writes_directly(out, bias) || out.is_empty() || k == 0 {
            return Ok(false);
        }
        T::multiply_with_epilogue([self.a, self.b], epilogue, bias, out, (m, n, k))
    }

    fn evaluate(&self) -> Result<Box<dyn ErasedArray>> {
        Ok(Box::new(self.a.matmul(self.b)?))
    }
}

/// What the matcher sees of `operand`.
fn leaf<'s>(operand: &'s Operand<'_>) -> Leaf<'s> {
    match operand {
        Operand::Array(array) => Leaf::Array(array.dtype(), array.shape(), array.strides()),
        Operand::Scalar(_, value) => Leaf::Scalar(*value),
        Operand::Deferred(deferred) => Leaf::Product(deferred.dtype(), deferred.shape()),
    }
}

impl<T: MatmulType> DeviceArray<T> {
    /// [`matmul`](Self::matmul) as a lazy operand of an expression: nothing runs until the
    /// expression is evaluated, and then a bias and activation around the product become one
    /// cuBLASLt call with an epilogue, `relu(x @ w + b)` as
    /// `(x.matmul_expr(&w)? + &b).maximum(0.0).eval()?`; any other expression is the product
    /// and one fused kernel for the rest (never a kernel per operator).
    ///
    /// Every [`MatmulType`] is taken; only `f32`, `f16` and `bf16` products become epilogues
    /// (integers, `Bool` and `f64` are the product and one fused kernel). Shapes are checked
    /// here, as `matmul` checks them.
    ///
    /// # What becomes an epilogue
    /// The whole expression must be, with `P = x.matmul_expr(&w)?`:
    ///
    /// | expression | cuBLASLt epilogue |
    /// |---|---|
    /// | `P` | none (the product itself, into the output) |
    /// | `P + &b`, `&b + P` | `BIAS` |
    /// | `P.maximum(0.0)`, `(P + &b).maximum(0.0)` (or `0.0` first) | `RELU`, `RELU_BIAS` |
    /// | `P.gelu()`, `(P + &b).gelu()` | `GELU`, `GELU_BIAS` (tanh form, as [`gelu`](crate::ExprOps::gelu)) |
    ///
    /// where `x` and `w` are 2-D arrays of one of cuBLASLt's epilogue types, `f32`, `f16` or
    /// `bf16` (not `f64` nor integers: a different element type than the product's breaks the match through
    /// the promotion casts), `b` is an array of the same type of shape `[n]` or `[1, n]` with unit
    /// stride (a vector added to every row of the `m x n` product), and the output is compact. The
    /// operands must be 256-byte aligned (whole arrays are; a view with an offset may not be), the
    /// product's operands must have cuBLAS layouts (row-major with any leading dimension, or
    /// transposed views; others are copied once), and the output may not overlap them. ReLU as an
    /// epilogue gives 0 for NaN where NumPy's `maximum` keeps the NaN.
    ///
    /// Anything else (stacks of products, another activation, a bias of another shape or type, a
    /// reduction of the expression, `update`) computes the product into a temporary with
    /// [`matmul`](Self::matmul) and evaluates the rest as one fused kernel.
    ///
    /// ```no_run
    /// use cuda_core::{Device, DeviceArray, ExprOps};
    ///
    /// # fn main() -> cuda_core::Result<()> {
    /// let stream = Device::new(0)?.create_stream()?;
    /// let x = DeviceArray::from_slice(&stream, &[1.0f32, -2.0, 3.0, 4.0])?.reshape([2, 2])?;
    /// let w = DeviceArray::<f32>::identity(&stream, 2)?;
    /// let b = DeviceArray::from_slice(&stream, &[0.5f32, 0.5])?;
    /// let y = (x.matmul_expr(&w)? + &b).maximum(0.0).eval()?; // one cublasLtMatmul (RELU_BIAS)
    /// assert_eq!(y.to_vec()?, [1.5f32, 0.0, 3.5, 4.5]);
    /// let z = (x.matmul_expr(&w)? * 2.0 - &b).eval()?; // the product, then one fused kernel
    /// assert_eq!(z.to_vec()?, [1.5f32, -4.5, 5.5, 7.5]);
    /// # Ok(())
    /// # }
    /// ```
    pub fn matmul_expr<'a>(&'a self, other: &'a DeviceArray<T>) -> Result<Expr<'a, T>> {
        let product = Product::new(self.shape(), other.shape())?;
        same_context(self, other, "matmul_expr")?;
        Ok(Expr::deferred(Rc::new(LazyProduct {
            a: self,
            b: other,
            product,
        })))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const F: DType = DType::BF16;

    fn product(index: usize) -> Node {
        Node::Operand(index, F)
    }

    fn bin(op: BinaryOp, a: Node, b: Node) -> Node {
        Node::Binary(op, Box::new(a), Box::new(b), F)
    }

    fn gelu(a: Node) -> Node {
        Node::Unary(UnaryOp::Gelu, Box::new(a), F)
    }

    /// Operands: 0 the 4 x 8 product, 1 a bias `[8]`, 2 the scalar 0, 3 a `[4, 8]` array, 4 a
    /// `[1, 8]` bias, 5 an f32 bias `[8]`, 6 the scalar 1, 7 a strided bias.
    fn leaves() -> Vec<Leaf<'static>> {
        vec![
            Leaf::Product(F, &[4, 8]),
            Leaf::Array(F, &[8], &[1]),
            Leaf::Scalar(ScalarValue::Float(0.0)),
            Leaf::Array(F, &[4, 8], &[8, 1]),
            Leaf::Array(F, &[1, 8], &[8, 1]),
            Leaf::Array(DType::F32, &[8], &[1]),
            Leaf::Scalar(ScalarValue::Float(1.0)),
            Leaf::Array(F, &[8], &[2]),
        ]
    }

    fn matched(node: &Node) -> Option<(Epilogue, Option<usize>)> {
        epilogue_of(node, &leaves(), 0)
    }

    #[test]
    fn bias_and_activation_chains_match_their_epilogues() {
        let p = product(0);
        assert_eq!(matched(&p), Some((Epilogue::None, None)));
        assert_eq!(
            matched(&bin(BinaryOp::Add, p.clone(), product(1))),
            Some((Epilogue::Bias, Some(1)))
        );
        assert_eq!(
            matched(&bin(BinaryOp::Add, product(1), p.clone())),
            Some((Epilogue::Bias, Some(1)))
        );
        assert_eq!(
            matched(&bin(BinaryOp::Add, p.clone(), product(4))),
            Some((Epilogue::Bias, Some(4)))
        );
        let relu = bin(BinaryOp::Maximum, p.clone(), product(2));
        assert_eq!(matched(&relu), Some((Epilogue::Relu, None)));
        let relu_first = bin(BinaryOp::Maximum, product(2), p.clone());
        assert_eq!(matched(&relu_first), Some((Epilogue::Relu, None)));
        assert_eq!(matched(&gelu(p.clone())), Some((Epilogue::Gelu, None)));
        let biased = bin(BinaryOp::Add, p.clone(), product(1));
        assert_eq!(
            matched(&bin(BinaryOp::Maximum, biased.clone(), product(2))),
            Some((Epilogue::ReluBias, Some(1)))
        );
        assert_eq!(matched(&gelu(biased)), Some((Epilogue::GeluBias, Some(1))));
    }

    #[test]
    fn other_expressions_do_not_match() {
        let p = product(0);
        // A full matrix, a bias of another type, a strided bias: not a row bias.
        assert_eq!(matched(&bin(BinaryOp::Add, p.clone(), product(3))), None);
        assert_eq!(matched(&bin(BinaryOp::Add, p.clone(), product(5))), None);
        assert_eq!(matched(&bin(BinaryOp::Add, p.clone(), product(7))), None);
        // maximum with 1, subtraction, the activation before the bias, two activations.
        assert_eq!(matched(&bin(BinaryOp::Maximum, p.clone(), product(6))), None);
        assert_eq!(matched(&bin(BinaryOp::Sub, p.clone(), product(1))), None);
        let relu = bin(BinaryOp::Maximum, p.clone(), product(2));
        assert_eq!(matched(&bin(BinaryOp::Add, relu.clone(), product(1))), None);
        assert_eq!(matched(&gelu(relu)), None);
        // The product added to itself, and products of f64 or of stacks.
        assert_eq!(matched(&bin(BinaryOp::Add, p.clone(), p.clone())), None);
        let f64_product = [Leaf::Product(DType::F64, &[4, 8])];
        assert_eq!(epilogue_of(&Node::Operand(0, DType::F64), &f64_product, 0), None);
        let stack = [Leaf::Product(F, &[2, 4, 8])];
        assert_eq!(epilogue_of(&p, &stack, 0), None);
        // A cast of the product (to another type) is not the product.
        let cast = Node::Unary(UnaryOp::Cast, Box::new(p), DType::F32);
        assert_eq!(epilogue_of(&cast, &leaves(), 0), None);
    }
}
