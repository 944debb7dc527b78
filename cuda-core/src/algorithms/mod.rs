//! Device-wide algorithms on device memory (the role of `cuda.compute`): they take memory under
//! the device-memory contract ([`DeviceMemory`],
//! [`DeviceMemoryMut`](crate::driver::DeviceMemoryMut)), a stream and lengths, and need no
//! array. Their code is the project's own kernels, generated as CUDA C++ and compiled by NVRTC
//! through the kernel cache and the registry of generated code; scratch memory comes from the
//! context's [`MemoryPool`](crate::MemoryPool), in the stream's order. They are part of the
//! `array` feature, which holds the pool and the registry.
//!
//! Memory is read and written as the dense range the contract gives (`byte_len()` bytes from
//! `device_ptr()`); a [`DeviceArray`](crate::DeviceArray) view that is not dense (strided,
//! transposed, reversed, broadcast) is refused by the contract with `NotDense`. Each call checks that every buffer
//! belongs to the stream's context and holds the bytes its length needs, and that no output
//! overlaps another buffer of the call (by address range): typed errors, before anything runs.
//! Everything is queued on the stream with no host wait, except where a result's size or a
//! check depends on the data (a `sorter`'s check, `unique`'s count), each documented.
//! - [`reduce`]: reductions with an init value (sum, product, min, max, or a C++ operator), of
//!   the whole input or of segments (rows, or ranges given by offsets), and by runs of equal keys;
//! - [`scan`]: inclusive and exclusive scans (sum, product, min, max, or a C++ operator), whole,
//!   by segments of equal length, or by runs of equal keys;
//! - [`select`]: compaction by flags or a C++ predicate (select and partition), unique values of
//!   sorted input (also by key: the values beside them) and run-length encoding, the count left
//!   on the device or read back;
//! - [`sort`]: stable radix sort of keys, pairs, `argsort`, of the rows of a matrix, and of
//!   segments of any lengths given by offsets; complex keys in NumPy's lexicographic order;
//! - [`merge_sort`]: stable merge sort of keys or pairs by a C++ comparator, for keys radix
//!   sort cannot take;
//! - [`search`]: lower and upper bounds of many queries in sorted keys;
//! - [`histogram`]: counts in even bins.
//!
//! The array routines on top (`cumsum`, `cumprod` and their `nan` forms, `diff`, `ediff1d`, `nonzero`,
//! `flatnonzero`, `argwhere`, `extract`, `compress`, `place`, `putmask`, `sort`, `argsort`,
//! `partition`, `lexsort`, `searchsorted`, `digitize`, `interp`, `unique`, `isin`, `union1d`,
//! `intersect1d`, `setdiff1d`, `setxor1d`, `histogram` (a bin count or edges, `density`,
//! weights, NumPy's bin rules), `histogram_bin_edges`, `histogram2d`, `bincount` (with weights
//! too), `median`, `percentile`, `quantile` (NumPy's thirteen methods) and their `nan` forms,
//! `cumulative_sum` and `cumulative_prod`) live with [`DeviceArray`](crate::DeviceArray).
//!
//! The scan is a single pass with decoupled look-back. Each
//! block takes the next tile number from an atomic counter (so a tile only waits for tiles that
//! have started), reduces its tile, publishes the aggregate with a status flag, then looks back
//! over the flags of the tiles before it, a warp reading 32 of them at a time, until it meets a
//! published inclusive prefix; it then publishes its own inclusive prefix. Values and flags are
//! written with volatile stores separated by an acquire-release fence (a scan's value and flag are two
//! words), or packed in one 64-bit word (a selection's count). Temporary storage (the counter
//! and the per-tile status) comes from the context's [`MemoryPool`](crate::MemoryPool) in the
//! stream's order; nothing waits on the host except the documented count read-back.

pub mod histogram;
pub mod merge_sort;
pub mod reduce;
pub mod scan;
pub mod search;
pub mod select;
pub mod sort;

use cuda_driver::{DeviceMemory, Stream};

/// The warp-wide match of small values from ballots, shared by the kernels that count digits
/// (the radix sort, the radix-select quantile).
pub(crate) const WARP_PEERS: &str = include_str!("warp_peers.cuh");

use crate::array::{DType, Element};
use crate::error::{Error, Result};

/// Threads per block of the tile kernels.
pub(crate) const BLOCK: u32 = 256;
/// Elements each thread holds.
pub(crate) const ITEMS: u32 = 8;
/// Elements per tile.
pub(crate) const TILE: u64 = (BLOCK * ITEMS) as u64;

/// The element count of `memory` read as `T`, checked against `stream`'s context.
pub(crate) fn elements<T: Element>(what: &str, memory: &impl DeviceMemory, stream: &Stream) -> Result<usize> {
    if memory.context() != stream.context() {
        return Err(cuda_driver::Error::WrongContext {
            object: "stream",
            used_with: "device memory",
        }
        .into());
    }
    let size = std::mem::size_of::<T>();
    if memory.byte_len() % size != 0 {
        return Err(Error::InvalidValue(format!(
            "{what}: {} bytes is not a whole number of {} elements",
            memory.byte_len(),
            T::DTYPE
        )));
    }
    Ok(memory.byte_len() / size)
}

/// A user operator's C++ text, as [`scan::ScanOperator`] and [`reduce::ReduceOperator`] take it:
/// its name (a C identifier), the expression combining `a` and `b`, its neutral value, and the
/// device code (the prelude) those may use.
pub(crate) struct UserOperator {
    pub(crate) name: String,
    pub(crate) op: String,
    pub(crate) identity: String,
    pub(crate) prelude: String,
}

impl UserOperator {
    /// The operator, its name checked to be a C identifier (`kind`, `"scan"` or `"reduce"`,
    /// names it in the error), with no prelude.
    pub(crate) fn new(kind: &str, name: &str, op: &str, identity: &str) -> Result<Self> {
        if !crate::array::kernels::params::is_identifier(name) {
            return Err(Error::InvalidValue(format!(
                "{kind} operator `{name}`: the name must be a C identifier"
            )));
        }
        Ok(UserOperator {
            name: name.to_string(),
            op: op.to_string(),
            identity: identity.to_string(),
            prelude: String::new(),
        })
    }
}

/// Refuses complex element types where an algorithm needs real values (bins, quantiles, scans by
/// a real operator); the sorts and searches take complex keys in NumPy's order.
pub(crate) fn real_elements(what: &str, dtypes: &[DType]) -> Result<()> {
    match dtypes.iter().find(|d| d.is_complex()) {
        Some(dtype) => Err(Error::NotSupported(format!("{what} of {dtype} elements"))),
        None => Ok(()),
    }
}

/// Fails when the byte ranges of `a` and `b` overlap (a kernel reading one while writing the
/// other would race).
pub(crate) fn disjoint(what: &str, a: &(impl DeviceMemory + ?Sized), b: &(impl DeviceMemory + ?Sized)) -> Result<()> {
    let (a0, a1) = (a.device_ptr(), a.device_ptr() + a.byte_len() as u64);
    let (b0, b1) = (b.device_ptr(), b.device_ptr() + b.byte_len() as u64);
    if a0 < b1 && b0 < a1 {
        return Err(Error::InvalidValue(format!("{what}: the output overlaps an input")));
    }
    Ok(())
}

/// Blocks for `tiles` tiles, one each (the grid's x extent is at most 2^31 - 1).
pub(crate) fn tile_grid(tiles: u64) -> Result<u32> {
    u32::try_from(tiles)
        .ok()
        .filter(|&t| t <= i32::MAX as u32)
        .ok_or_else(|| Error::InvalidValue(format!("{tiles} tiles exceed the grid's limit")))
}

#[cfg(test)]
mod tests {
    use super::scan::{builtin_source, ScanOp, ScanOperator};
    use super::select::{select_source, Emit, PredParam, Predicate};
    use crate::array::DType;
    use crate::{Arch, CompileTarget, Program, ProgramOptions};

    /// Compiles `source` for sm_90 with NVRTC (no GPU needed), returning the PTX.
    fn compile(source: &str) -> String {
        let options = ProgramOptions {
            cache: false,
            ..ProgramOptions::for_arch(Arch::Sm(90))
        };
        let code = Program::new(source, options)
            .compile(CompileTarget::Ptx)
            .unwrap_or_else(|e| panic!("generated code does not compile: {e}\n--- source ---\n{source}"));
        code.ptx().expect("PTX").to_string()
    }

    /// Compiles `source` through ptxas into an sm_90 cubin (checking, e.g., that a tile of
    /// 16-byte values stays within the static shared memory), panicking that `what` does not
    /// assemble.
    fn assemble(source: &str, what: &str) {
        let options = ProgramOptions {
            cache: false,
            ..ProgramOptions::for_arch(Arch::Sm(90))
        };
        Program::new(source, options)
            .compile(CompileTarget::Cubin)
            .unwrap_or_else(|e| panic!("{what} does not assemble: {e}"));
    }

    macro_rules! every_scan {
        ($($ty:ty),*) => {
            $(
                for op in [ScanOp::Sum, ScanOp::Prod, ScanOp::Min, ScanOp::Max] {
                    let ptx = compile(&builtin_source::<$ty, <$ty as crate::array::Element>::Sum>(op, false));
                    assert!(ptx.contains(".entry scan_scan(") && ptx.contains(".entry scan_init("));
                }
                compile(&builtin_source::<$ty, $ty>(ScanOp::Max, false));
            )*
        };
    }

    #[test]
    fn scans_compile_for_every_type_and_operation() {
        every_scan!(
            crate::Bool,
            i8,
            i16,
            i32,
            i64,
            u8,
            u16,
            u32,
            u64,
            half::f16,
            half::bf16,
            f32,
            f64
        );
        compile(&builtin_source::<f32, f32>(ScanOp::Sum, true));
        compile(&builtin_source::<half::bf16, half::bf16>(ScanOp::Prod, true));
        compile(&builtin_source::<f64, f64>(ScanOp::Sum, true));
        // The look-back passes each value in 64-bit descriptor words, read and written whole:
        // no fence, for 4-byte values (one word) as for complex128 (four).
        for ptx in [
            compile(&builtin_source::<f32, f32>(ScanOp::Sum, false)),
            compile(&builtin_source::<f64, f64>(ScanOp::Sum, false)),
            compile(&builtin_source::<num_complex::Complex<f64>, num_complex::Complex<f64>>(
                ScanOp::Sum,
                false,
            )),
        ] {
            assert!(!ptx.contains("fence.") && !ptx.contains("membar.") && ptx.contains("ld.volatile.global.u64"));
        }
    }

    #[test]
    fn complex_sums_and_products_compile_with_nan_read_as_the_identity() {
        use num_complex::Complex;
        for op in [ScanOp::Sum, ScanOp::Prod] {
            for skip_nan in [false, true] {
                let ptx = compile(&builtin_source::<Complex<f32>, Complex<f32>>(op, skip_nan));
                assert!(ptx.contains(".entry scan_scan("));
                compile(&builtin_source::<Complex<f64>, Complex<f64>>(op, skip_nan));
            }
        }
        compile(&builtin_source::<f32, Complex<f64>>(ScanOp::Sum, false));
        // NaN in either part is NaN (`v != v` compares both parts), as NumPy's `isnan`.
        let source = builtin_source::<Complex<f64>, Complex<f64>>(ScanOp::Prod, true);
        // Through ptxas too: a tile of 16-byte values stays within the static shared memory.
        assemble(&source, "the complex128 scan");
        assert!(source.contains("return v != v ? _identity() : v;"));
        assert!(source.contains("typedef cuda_core_c128 _acc_t;"));
    }

    macro_rules! every_reduce {
        ($($ty:ty),*) => {
            $(
                for op in [ScanOp::Sum, ScanOp::Prod, ScanOp::Min, ScanOp::Max] {
                    let ptx = compile(&super::reduce::builtin_source::<$ty, <$ty as crate::array::Element>::Sum>(op));
                    assert!(
                        ptx.contains(".entry reduce_partials(")
                            && ptx.contains(".entry reduce_final(")
                            && ptx.contains(".entry reduce_segments(")
                            && ptx.contains(".entry reduce_runs(")
                    );
                }
                compile(&super::reduce::builtin_source::<$ty, $ty>(ScanOp::Max));
                compile(&super::reduce::builtin_source::<$ty, f64>(ScanOp::Min));
            )*
        };
    }

    #[test]
    fn reductions_compile_for_every_type_and_operation() {
        every_reduce!(
            crate::Bool,
            i8,
            i16,
            i32,
            i64,
            u8,
            u16,
            u32,
            u64,
            half::f16,
            half::bf16,
            f32,
            f64
        );
    }

    #[test]
    fn complex_reductions_compile_and_assemble() {
        use num_complex::Complex;
        for op in [ScanOp::Sum, ScanOp::Prod] {
            let ptx = compile(&super::reduce::builtin_source::<Complex<f32>, Complex<f32>>(op));
            assert!(ptx.contains(".entry reduce_final(") && ptx.contains(".entry reduce_segments("));
            compile(&super::reduce::builtin_source::<Complex<f64>, Complex<f64>>(op));
        }
        // Through ptxas: the complex128 initial value is read from its two 8-byte parameters.
        let source = super::reduce::builtin_source::<Complex<f64>, Complex<f64>>(ScanOp::Sum);
        assert!(source.contains("const unsigned long long bits[2] = {low, high};"));
        assert!(source.contains("_from_words(init_low, init_high)"));
        assemble(&source, "the complex128 reduction");
    }

    #[test]
    fn reduce_operators_compile() {
        use super::reduce::ReduceOperator;
        let op = ReduceOperator::new("absmax", "fmaxf(fabsf(a), fabsf(b))", "0.0f").unwrap();
        let ptx = compile(&op.source_for(DType::F16, DType::F32));
        assert!(ptx.contains(".entry reduce_absmax_partials(") && ptx.contains(".entry reduce_absmax_segments("));
        let helper = ReduceOperator::new("bits", "mix(a, b)", "0u")
            .unwrap()
            .with_prelude("__device__ unsigned mix(unsigned a, unsigned b) { return a ^ (b * 3u); }");
        compile(&helper.source_for(DType::U8, DType::U32));
    }

    #[test]
    fn merge_sorts_compile_for_keys_alone_pairs_and_struct_keys() {
        use super::merge_sort::MergeSort;
        let by_magnitude = MergeSort::new("by_magnitude", "float", "fabsf(a) < fabsf(b)").unwrap();
        let ptx = compile(&by_magnitude.source_for(4, 0));
        assert!(
            ptx.contains(".entry merge_sort_by_magnitude_block(")
                && ptx.contains(".entry merge_sort_by_magnitude_merge(")
        );
        for value_bytes in [1, 2, 4, 8, 12, 16, 64] {
            compile(&by_magnitude.source_for(4, value_bytes));
        }
        let halves = MergeSort::new("halves", "cuda_core_f16", "(float)a > (float)b").unwrap();
        compile(&halves.source_for(2, 8));
        let points = MergeSort::new("points", "point", "a.x < b.x || (a.x == b.x && a.y < b.y)")
            .unwrap()
            .with_prelude("struct point { float x; float y; int id; };");
        compile(&points.source_for(12, 8));
        // A C++ key type of another size than the Rust one does not compile.
        let options = ProgramOptions {
            cache: false,
            ..ProgramOptions::for_arch(Arch::Sm(90))
        };
        assert!(Program::new(points.source_for(16, 0), options)
            .compile(CompileTarget::Ptx)
            .is_err());
    }

    #[test]
    fn scans_of_fused_expressions_compile() {
        use super::scan::{mapped_source, Load, ScanMap};
        let map = ScanMap {
            params: vec![
                ("cuda_core_f16".into(), "a0".into(), true),
                ("float".into(), "a1".into(), true),
                ("double".into(), "a2".into(), false),
            ],
            value: "((float)a0 * a1 + a2)".into(),
            prelude: crate::array::routines::math::EXPR_PRELUDE.into(),
        };
        for (input, output) in [
            (DType::F32, DType::F32),
            (DType::F16, DType::F16),
            (DType::F64, DType::F64),
            (DType::C64, DType::C64),
            (DType::C128, DType::C128),
        ] {
            let ptx = compile(&mapped_source(ScanOp::Sum, Load::SkipNan, input, output, &map));
            assert!(ptx.contains(".entry scan_map_scan("));
        }
        let flags = ScanMap {
            params: vec![("float".into(), "a0".into(), true)],
            value: "(a0 > 0.5f)".into(),
            prelude: String::new(),
        };
        compile(&mapped_source(
            ScanOp::Sum,
            Load::Plain,
            DType::Bool,
            DType::I64,
            &flags,
        ));
    }

    #[test]
    fn select_predicates_compile_and_bad_names_are_errors() {
        use super::select::SelectIf;
        let odd = SelectIf::new("odd", "(x & 1) != 0 && i > 3").unwrap();
        let ptx = compile(&odd.source_for(DType::I64));
        assert!(ptx.contains(".entry select_odd_select("));
        let big = SelectIf::new("big", "far(x)")
            .unwrap()
            .with_prelude("__device__ bool far(float v) { return fabsf(v) > 2.0f; }");
        compile(&big.source_for(DType::F32));
        assert!(SelectIf::new("1st", "true").is_err());
    }

    #[test]
    fn scans_by_key_compile_for_every_key_type() {
        use super::scan::by_key_source;
        for keys in DType::ALL {
            let ptx = compile(&by_key_source(ScanOp::Sum, keys, DType::F32, DType::F32));
            assert!(ptx.contains(".entry scan_by_key_scan("));
        }
        compile(&by_key_source(ScanOp::Max, DType::I64, DType::I8, DType::I64));
    }

    #[test]
    fn complex_scans_by_key_compile_and_assemble() {
        use super::scan::by_key_source;
        for op in [ScanOp::Sum, ScanOp::Prod] {
            for value in [DType::C64, DType::C128] {
                let ptx = compile(&by_key_source(op, DType::I32, value, value));
                assert!(ptx.contains(".entry scan_by_key_scan("));
            }
        }
        compile(&by_key_source(ScanOp::Sum, DType::F64, DType::F32, DType::C128));
        // Through ptxas: a keyed tile of complex128 values stays within the static shared memory,
        // and the initial value is read from its two 8-byte parameters.
        let source = by_key_source(ScanOp::Prod, DType::U64, DType::C128, DType::C128);
        assert!(source.contains("const unsigned long long bits[2] = {init_low, init_high};"));
        assemble(&source, "the complex128 scan by key");
    }

    #[test]
    fn scan_operators_compile_and_bad_names_are_errors() {
        let op = ScanOperator::new("absmax", "fmaxf(fabsf(a), fabsf(b))", "0.0f").unwrap();
        let ptx = compile(&op.source_for(DType::F16, DType::F32));
        assert!(ptx.contains(".entry scan_absmax_scan("));
        // The integer operator of the GPU test (`abs` of the i64 values it combines).
        let op = ScanOperator::new("largest", "abs(a) > abs(b) ? a : b", "0").unwrap();
        let ptx = compile(&op.source_for(DType::I32, DType::I64));
        assert!(ptx.contains(".entry scan_largest_scan("));
        assert!(ScanOperator::new("not an identifier", "a + b", "0").is_err());
    }

    #[test]
    fn selects_compile_for_every_type_and_output() {
        for dtype in DType::ALL {
            let ptx = compile(&select_source("s", &Predicate::flags(dtype), Emit::Value(dtype)));
            assert!(ptx.contains(".entry s_select(") && ptx.contains(".entry s_init("));
            compile(&select_source("i", &Predicate::flags(dtype), Emit::Index));
            compile(&select_source("p", &Predicate::flags(DType::Bool), Emit::Place(dtype)));
            compile(&select_source(
                "m",
                &Predicate::flags(DType::Bool),
                Emit::PutMask(dtype),
            ));
        }
        compile(&select_source("c", &Predicate::flags(DType::F32), Emit::Coordinates));
        for dtype in DType::ALL {
            compile(&select_source("u", &Predicate::run_heads(dtype), Emit::Value(dtype)));
            let ptx = compile(&select_source("r", &Predicate::run_heads(dtype), Emit::Runs(dtype)));
            assert!(ptx.contains(".entry r_lengths("));
        }
        // A predicate as a fused mask expression makes it: arrays and scalars, the expression
        // prelude.
        let fused = Predicate {
            params: vec![
                PredParam {
                    c_type: "cuda_core_f16".into(),
                    name: "a0".into(),
                    array: true,
                },
                PredParam {
                    c_type: "double".into(),
                    name: "a1".into(),
                    array: false,
                },
            ],
            value: "((float)a0 > a1)".into(),
            prelude: crate::array::routines::math::EXPR_PRELUDE.into(),
        };
        let ptx = compile(&select_source("e", &fused, Emit::Value(DType::I64)));
        assert!(ptx.contains(".entry e_select("));
    }
}
