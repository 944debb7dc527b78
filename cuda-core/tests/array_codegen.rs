//! Generated element-wise and reduction code, compiled for real with NVRTC (no GPU needed),
//! and the typed errors of bad kernel definitions and signatures.

use cuda_core::{
    Arch, ArgType, CompileTarget, DType, ElementwiseKernel, Error, IndexWidth, Program, ProgramOptions, ReductionKernel,
};

/// Compiles `source` for sm_90 without the cache, returning the PTX.
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

#[test]
fn axpy_compiles_for_f32_and_f64_with_vector_loads() {
    let kernel = ElementwiseKernel::new("T a, T x, T y", "T z", "z = a * x + y", "axpy").unwrap();
    for (dtype, vector) in [(DType::F32, ".v4.f32"), (DType::F64, ".v2.f64")] {
        let signature = [
            ArgType::Scalar(dtype),
            ArgType::Array(dtype),
            ArgType::Array(dtype),
            ArgType::Array(dtype),
        ];
        let source = kernel.source_for(&signature).unwrap();
        assert!(source.contains(&format!("typedef {} T;", dtype.c_name())), "{source}");
        let ptx = compile(&source);
        assert!(
            ptx.contains(".entry axpy(") && ptx.contains(".entry axpy_vec("),
            "{ptx}"
        );
        assert!(
            ptx.lines()
                .any(|l| l.trim_start().starts_with("ld.global") && l.contains(vector)),
            "no {vector} vector load in the vector kernel:\n{ptx}"
        );
        assert!(ptx.contains("st.global.v"), "vector stores expected:\n{ptx}");
    }
}

#[test]
fn write_only_outputs_are_not_loaded_and_read_outputs_are() {
    let write_only = ElementwiseKernel::new("T x", "T z", "z = x * 2", "twice").unwrap();
    let read_write = ElementwiseKernel::new("T x", "T z", "z += x", "accumulate").unwrap();
    let signature = [ArgType::Array(DType::F32), ArgType::Array(DType::F32)];
    let count_loads = |ptx: &str| {
        ptx.lines()
            .filter(|l| l.trim_start().starts_with("ld.global") && l.contains(".v4.f32"))
            .count()
    };
    let w = compile(&write_only.source_for(&signature).unwrap());
    let r = compile(&read_write.source_for(&signature).unwrap());
    assert!(count_loads(&r) > count_loads(&w), "read-write loads the output too");
}

#[test]
fn mixed_types_integers_and_indices_compile() {
    let kernel = ElementwiseKernel::new(
        "T x, int shift, unsigned char mask",
        "U z, T w",
        "z = (U)(x << shift) & mask; w = x + (T)i",
        "mixed",
    )
    .unwrap();
    let signature = [
        ArgType::Array(DType::I64),
        ArgType::Scalar(DType::I32),
        ArgType::Scalar(DType::U8),
        ArgType::Array(DType::U16),
        ArgType::Array(DType::I64),
    ];
    let source = kernel.source_for(&signature).unwrap();
    assert!(source.contains("typedef long long T;") && source.contains("typedef unsigned short U;"));
    compile(&source);
}

#[test]
fn reductions_compile_for_every_element_type() {
    let sum = ReductionKernel::new("T x", "T y", "x", "a + b", "y = a", "0", "sum", None).unwrap();
    for dtype in DType::ALL {
        let source = sum.source_for(&[ArgType::Array(dtype), ArgType::Array(dtype)]).unwrap();
        let ptx = compile(&source);
        for entry in ["sum_partial(", "sum_final("] {
            assert!(ptx.contains(&format!(".entry {entry}")), "{dtype}: no {entry}");
        }
        // Vector loads are 16 bytes: a 16-byte element (complex128) is one already.
        assert_eq!(
            ptx.contains(".entry sum_partial_vec("),
            dtype.size() < 16,
            "{dtype}: the vector form where a vector holds two or more elements"
        );
        assert!(ptx.contains("shfl.sync.down"), "{dtype}: warp shuffles expected");
    }
    let f32_ptx = compile(
        &sum.source_for(&[ArgType::Array(DType::F32), ArgType::Array(DType::F32)])
            .unwrap(),
    );
    assert!(
        f32_ptx.contains("ld.global.nc.v4.f32") || f32_ptx.contains("ld.global.v4.f32"),
        "{f32_ptx}"
    );
}

#[test]
fn reduction_with_scalars_reduce_type_and_post_map_compiles() {
    let kernel = ReductionKernel::new(
        "T x, T y, T scale",
        "float out",
        "x * y",
        "a + b",
        "out = (float)(a * scale)",
        "0",
        "scaled_dot",
        Some("double"),
    )
    .unwrap();
    let signature = [
        ArgType::Array(DType::F32),
        ArgType::Array(DType::F32),
        ArgType::Scalar(DType::F32),
        ArgType::Array(DType::F32),
    ];
    let source = kernel.source_for(&signature).unwrap();
    assert!(source.contains("typedef double _type_reduce;"), "{source}");
    compile(&source);
}

#[test]
fn a_bad_operation_is_a_compile_error_with_the_log() {
    let kernel = ElementwiseKernel::new("T x", "T z", "z = x +* undefined_name", "broken").unwrap();
    let source = kernel
        .source_for(&[ArgType::Array(DType::F32), ArgType::Array(DType::F32)])
        .unwrap();
    let options = ProgramOptions {
        cache: false,
        ..ProgramOptions::for_arch(Arch::Sm(90))
    };
    let error = Program::new(source, options).compile(CompileTarget::Ptx).unwrap_err();
    assert!(error.log().is_some_and(|log| log.contains("undefined_name")), "{error}");
}

#[test]
fn bad_definitions_and_signatures_are_typed_errors() {
    let invalid = |r: Result<ElementwiseKernel, Error>| matches!(r, Err(Error::InvalidValue(_)));
    assert!(invalid(ElementwiseKernel::new("T x", "", "x", "no_output")));
    assert!(invalid(ElementwiseKernel::new("T", "T z", "z = 1", "nameless")));
    assert!(invalid(ElementwiseKernel::new("T n", "T z", "z = n", "reserved")));
    assert!(invalid(ElementwiseKernel::new("T x", "T z", "z = x", "9lives")));
    assert!(matches!(
        ReductionKernel::new("T x", "T y, T w", "x", "a + b", "y = a", "0", "two_outputs", None),
        Err(Error::InvalidValue(_))
    ));
    assert!(matches!(
        ReductionKernel::new("T a", "T y", "a", "a + b", "y = a", "0", "clash", None),
        Err(Error::InvalidValue(_))
    ));
    let kernel = ElementwiseKernel::new("T x, float a", "T z", "z = a * x", "scale").unwrap();
    let f32_array = ArgType::Array(DType::F32);
    let wrong_count = kernel.source_for(&[f32_array, f32_array]).unwrap_err();
    assert!(wrong_count.to_string().contains("takes 3 arguments"), "{wrong_count}");
    let wrong_scalar = kernel
        .source_for(&[f32_array, ArgType::Scalar(DType::F64), f32_array])
        .unwrap_err();
    assert!(wrong_scalar.to_string().contains("needs float"), "{wrong_scalar}");
    let mismatched = kernel
        .source_for(&[f32_array, ArgType::Scalar(DType::F32), ArgType::Array(DType::F64)])
        .unwrap_err();
    assert!(mismatched.to_string().contains("`T` is already float"), "{mismatched}");
    let scalar_output = kernel
        .source_for(&[f32_array, ArgType::Scalar(DType::F32), ArgType::Scalar(DType::F32)])
        .unwrap_err();
    assert!(
        scalar_output.to_string().contains("must be an array"),
        "{scalar_output}"
    );
}

#[test]
fn array_types_are_send_and_sync() {
    fn send_sync<T: Send + Sync>() {}
    send_sync::<cuda_core::MemoryPool>();
    send_sync::<cuda_core::PooledBlock>();
    send_sync::<cuda_core::DeviceArray<f32>>();
    send_sync::<ElementwiseKernel>();
    send_sync::<ReductionKernel>();
    send_sync::<cuda_core::RawKernel>();
}

#[test]
fn strided_kernels_compile_for_every_axis_count_and_index_width() {
    let kernel = ElementwiseKernel::new("T x, T y", "T z", "z = x + y", "add").unwrap();
    for dtype in [DType::F32, DType::F16, DType::BF16, DType::I64, DType::Bool] {
        let signature = [ArgType::Array(dtype), ArgType::Array(dtype), ArgType::Array(dtype)];
        for (ndim, wide, signed) in [
            (1, false, false),
            (2, false, true),
            (3, true, false),
            (6, false, false),
            (4, true, true),
        ] {
            let width = IndexWidth { wide, signed };
            let source = kernel.strided_source_for(&signature, ndim, width).unwrap();
            assert!(
                source.contains(&format!("unsigned long long extent[{ndim}]")),
                "{source}"
            );
            let ptx = compile(&source);
            assert!(ptx.contains(".entry add_strided("), "{ptx}");
            let index_ops = if wide { "div.u64" } else { "div.u32" };
            if ndim > 1 {
                assert!(
                    ptx.contains(index_ops),
                    "{ndim} axes, wide {wide}: no {index_ops}\n{ptx}"
                );
            }
        }
    }
}

#[test]
fn half_types_convert_through_float_in_generated_code() {
    let kernel = ElementwiseKernel::new("T x", "T z", "z = x * 2.0f + 1", "affine_half").unwrap();
    for dtype in [DType::F16, DType::BF16] {
        let source = kernel
            .source_for(&[ArgType::Array(dtype), ArgType::Array(dtype)])
            .unwrap();
        let ptx = compile(&source);
        assert!(ptx.contains(".entry affine_half("), "{ptx}");
        if dtype == DType::F16 {
            assert!(ptx.contains("cvt.f32.f16") && ptx.contains("cvt.rn.f16.f32"), "{ptx}");
        }
    }
}
