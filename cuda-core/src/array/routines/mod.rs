//! Array routines filed by NumPy's chapters, each a method of [`DeviceArray`](crate::DeviceArray)
//! (or a function) in its chapter's file, built on the kernel families of `kernels`:
//! - `creation`: `zeros`, `ones`, `full`, `from_slice`, `arange`, `linspace`, `*_like`;
//! - `manipulation`: `copy_from`, `try_clone`, `to_contiguous`, `fill`;
//! - `math` and `operators`: the lazy, fused element-wise expressions (`+`, `sqrt`, `where_`, ...);
//! - `reductions`: `sum`, `prod`, `mean`, `max`, `min`, `all`, `any`, `argmax`, `argmin`;
//! - `random`: Philox-based `rand`, `randn`, `randint`, `Generator`;
//! - `linalg` (feature `blas`): `matmul`, `dot`, `vdot`, `inner`, `outer`, `trace`, `linalg_norm`
//!   through cuBLAS and the reductions;
//! - `io`: host transfers (`to_vec`, `copy_from_host`, `copy_to_host`);
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
mod operators;
mod printing;
pub mod random;
mod reductions;

#[cfg(feature = "blas")]
pub use linalg::{MatmulElement, Norm};
pub use math::{where_, Expr, ExprOps, IntoExpr};
