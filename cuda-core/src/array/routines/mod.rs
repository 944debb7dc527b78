//! Array routines filed by NumPy's chapters, each a method of [`DeviceArray`](crate::DeviceArray)
//! (or a function) in its chapter's file, built on the kernel families of `kernels`:
//! - `creation`: `zeros`, `ones`, `full`, `from_slice`, `arange`, `linspace`, `*_like`, `eye`,
//!   `identity`, `tri`;
//! - `manipulation`: `copy_from`, `try_clone`, `to_contiguous`, `fill`, `concatenate`, `stack`,
//!   `hstack`, `vstack`, `flip`, `tril`, `triu`;
//! - `math` and `operators`: the lazy, fused element-wise expressions (`+`, `sqrt`, `where_`,
//!   the ufunc tables, `isclose`, ...), with weak scalars of every Rust numeric type;
//! - `reductions`: `sum`, `prod`, `mean`, `max`, `min`, `all`, `any`, `argmax`, `argmin`, `var`,
//!   `std`, the `nan*` reductions, `count_nonzero`, `ptp`, `allclose`, `array_equal`, of arrays
//!   and (fused, one kernel) of expressions;
//! - `random`: Philox-based `rand`, `randn`, `randint`, `Generator`;
//! - `linalg` (feature `blas`): `matmul`, `dot`, `vdot`, `inner`, `outer`, `trace`, `linalg_norm`
//!   through cuBLAS and the reductions;
//! - `io`: host transfers (`to_vec`, `copy_from_host`, `copy_to_host`);
//! - `printing`: `Display` in NumPy's layout.
//!
//! Later chapters (`linalg` through the library crate, `fft`, `sorting`, `statistics`, ...)
//! are one new file each.

mod creation;
mod indexing;
mod io;
#[cfg(feature = "blas")]
mod linalg;
mod manipulation;
pub(crate) mod math;
mod operators;
mod printing;
pub mod random;
mod reductions;

#[cfg(feature = "blas")]
pub use linalg::{MatmulElement, Norm};
pub use reductions::{allclose, array_equal};

pub use math::{where_, Expr, ExprOps, IntoExpr, Rhs, WhereArms};
