//! Array routines filed by NumPy's chapters, each a method of [`DeviceArray`](crate::DeviceArray)
//! (or a function) in its chapter's file, built on the kernel families of `kernels`:
//! - `creation`: `zeros`, `ones`, `full`, `from_slice`, `arange`, `linspace`, `*_like`, `eye`,
//!   `identity`, `tri`;
//! - `manipulation`: `copy_from`, `try_clone`, `to_contiguous`, `fill`, `concatenate`, `stack`,
//!   `hstack`, `vstack`, `flip`, `tril`, `triu`;
//! - `math` and `operators`: the lazy, fused element-wise expressions (`+`, `sqrt`, `where_`,
//!   the ufunc tables, `isclose`, ...), with weak scalars of every Rust numeric type;
//! - `reductions`: `sum`, `prod`, `mean`, `max`, `min`, `all`, `any`, `argmax`, `argmin`, `var`,
//!   `std`, the `nan*` reductions (`nanargmax`, `nanargmin` too), `count_nonzero`, `ptp`,
//!   `average`, `allclose`, `array_equal`, of arrays
//!   and (fused, one kernel) of expressions;
//! - `random`: Philox-based `rand`, `randn`, `randint`, `Generator`;
//! - `linalg` (feature `blas`): `matmul` (cuBLAS, cuBLASLt, a generated kernel for integers),
//!   `matmul_expr` (a product inside an expression: cuBLASLt epilogues), `dot`, `vdot`,
//!   `inner`, `outer`, `tensordot`, `trace`, `linalg_norm`, the TF32 setting;
//! - `io`: host transfers (`to_vec`, `copy_from_host`, `copy_to_host`);
//! - `npy`: NumPy's `.npy` files (`save_npy`, `load_npy`, `write_npy`, `read_npy`);
//! - `printing`: `Display` in NumPy's layout.
//!
//! Later chapters (`linalg` through the library crate, `fft`, `sorting`, `statistics`, ...)
//! are one new file each.

mod creation;
mod io;
#[cfg(feature = "blas")]
mod linalg;
mod manipulation;
pub(crate) mod math;
mod npy;
mod operators;
mod printing;
pub mod random;
mod reductions;

#[cfg(feature = "blas")]
pub use linalg::{set_tf32, tf32, MatmulElement, MatmulType, Norm, TensorAxes, TF32_ENV};
pub use npy::NpyError;
pub use reductions::{allclose, array_equal, Average, AverageOf};

pub use math::{where_, Expr, ExprOps, IntoExpr, Rhs, WhereArms};
