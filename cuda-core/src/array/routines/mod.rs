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
//!   `std`, the `nan*` reductions (`nanargmax`, `nanargmin` too), `count_nonzero`, `ptp`,
//!   `average`, `allclose`, `array_equal`, of arrays
//!   and (fused, one kernel) of expressions;
//! - `random`: Philox-based `rand`, `randn`, `randint`, `Generator`;
//! - `linalg` (feature `blas`): `matmul` (cuBLAS, cuBLASLt, a generated kernel for integers),
//!   `matmul_expr` (a product inside an expression: cuBLASLt epilogues), `dot`, `vdot`,
//!   `inner`, `outer`, `tensordot`, `trace`, `linalg_norm`, `vector_norm`, `matrix_norm` (with their `_axes` forms), the TF32 setting; with feature
//!   `solver` the LU family (`solve`, `inv`, `det`, `slogdet`) and `cholesky` through cuSOLVER;
//! - `fft` (feature `fft`): NumPy's fft module through cuFFT (`fft`, `rfft`, `fftn`, ...,
//!   `fftfreq`, `fftshift`), a module of functions as `numpy.fft` is;
//! - `complex`: `real` and `imag` of complex arrays, views of the parts;
//! - `cumulative`: `cumsum`, `cumprod`, `nancumsum`, `nancumprod` (the scan of
//!   [`crate::algorithms::scan`]);
//! - `searching`: `flatnonzero`, `nonzero`, `argwhere`, `extract` (`x[mask]`, a mask expression
//!   fused into the select kernel of [`crate::algorithms::select`]);
//! - `io`: host transfers (`to_vec`, `copy_from_host`, `copy_to_host`);
//! - `npy`: NumPy's `.npy` files (`save_npy`, `load_npy`, `write_npy`, `read_npy`);
//! - `printing`: `Display` in NumPy's layout;
//! - `sorting`, `searching`, `sets`: `sort`, `argsort` (any axis, stable), `searchsorted`,
//!   `unique` and `unique_all`, on the device-wide algorithms of [`crate::algorithms`];
//! - `statistics`: `median`, `percentile`, `quantile` (NumPy's methods), by sorting.
//!
//! Later chapters (`linalg` through the library crate, `fft`, `sorting`, `statistics`, ...)
//! are one new file each.

mod bin_rules;
mod complex;
mod complex_median;
mod creation;
mod cumulative;
#[cfg(feature = "fft")]
pub mod fft;
mod indexing;
mod interp;
mod io;
#[cfg(feature = "blas")]
mod linalg;
mod manipulation;
pub(crate) mod math;
mod npy;
mod operators;
mod printing;
mod quantile_method;
mod quantile_select;
pub mod random;
mod reductions;
mod searching;
mod sets;
mod sorting;
mod statistics;

pub use bin_rules::BinRule;
pub use complex::ComplexElement;
pub use creation::MeshIndexing;
pub use interp::Interpolated;
#[cfg(feature = "blas")]
pub use linalg::{
    matmul_replay, multi_dot, set_matmul_replay, set_tf32, tf32, MatmulElement, MatmulType, Norm, NormElement,
    NormInput, NormOf, TensorAxes, TF32_ENV,
};
#[cfg(feature = "solver")]
pub use linalg::{LinalgInput, Lstsq, RealResult, Solved, SolverElement};
pub use manipulation::PadMode;
pub use npy::NpyError;
pub use quantile_method::QuantileMethod;
pub use reductions::{allclose, array_equal, Average, AverageOf};
pub use sets::Unique;
pub use sorting::SortComplex;

pub use math::{where_, Expr, ExprOps, IntoExpr, Rhs, WhereArms};

/// Device helpers of the kernels that read sorted lines (the quantile and complex median
/// read-outs), placed after their typedefs.
const SORTED_LINES: &str = include_str!("sorted_lines.cuh");
