//! Array routines filed by NumPy's chapters, each a method of [`DeviceArray`](crate::DeviceArray)
//! (or a function) in its chapter's file, built on the kernel families of `kernels`:
//! - `creation`: `zeros`, `ones`, `full`, `from_slice`, `arange`, `linspace`, `*_like`, `eye`,
//!   `identity`, `tri`, `meshgrid`;
//! - `manipulation`: `copy_from`, `try_clone`, `to_contiguous`, `fill`, `reshape` (a view when
//!   one serves, else a copy), `ravel`, `flatten`, `concatenate`, `stack`, `hstack`, `vstack`,
//!   `dstack`, `append`, `tile`, `repeat`, `repeat_each`, `roll`, `flip`, `pad`, `tril`, `triu`
//!   (the views, `reshape_view`, `moveaxis`, `swapaxes`, `split`, `array_split`, `atleast_*d`,
//!   `broadcast_arrays`, live with the array type in `view.rs`);
//! - `indexing`: `index_axis`, `at`, `take`, `take_along_axis`, `put` (one gather or scatter
//!   kernel, [`IndexMode`](crate::IndexMode)), `diagonal` (a view), `diag`;
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

pub use creation::MeshIndexing;
#[cfg(feature = "blas")]
pub use linalg::{MatmulElement, Norm};
pub use manipulation::PadMode;
pub use reductions::{allclose, array_equal};

pub use math::{where_, Expr, ExprOps, IntoExpr, Rhs, WhereArms};
