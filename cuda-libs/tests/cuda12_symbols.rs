//! The CUDA 12 builds of cuBLAS, cuBLASLt and NCCL serve every function the wrappers call, with
//! the parameter lists the bindings (from CUDA 13's headers) declare. No GPU needed: each library
//! is opened, the wrappers' functions are resolved in it, and their declarations in CUDA 12's
//! headers are compared with the bindings' (parameter count and pointer depth per parameter).
//!
//! Set `CUDA12_CUBLAS_LIBRARY`, `CUDA12_CUBLASLT_LIBRARY`, `CUDA12_NCCL_LIBRARY` to the files
//! (the `nvidia-cublas-cu12` and `nvidia-nccl-cu12` wheels' `nvidia/cublas/lib`,
//! `nvidia/nccl/lib`), and `CUDA12_CUBLAS_HEADERS`, `CUDA12_NCCL_HEADERS` to their `include`
//! folders; each part says `skipped:` without them (the wheels are some 900 MB, so CI does not
//! fetch them). The wrappers' sources and the bindings are embedded at compile time.

use std::collections::BTreeSet;
use std::path::PathBuf;

/// The wrappers' sources: every function they call is found here as `.name()`.
const WRAPPERS: &[&str] = &[
    include_str!("../src/blas/gemm.rs"),
    include_str!("../src/blas/lt.rs"),
    include_str!("../src/blas/mod.rs"),
    include_str!("../src/blas/replay.rs"),
    include_str!("../src/blas/vector.rs"),
    include_str!("../src/error.rs"),
    include_str!("../src/lib.rs"),
    include_str!("../src/nccl/check.rs"),
    include_str!("../src/nccl/mod.rs"),
];

const BINDINGS: &[(&str, &str)] = &[
    ("cublas", include_str!("../../cuda-sys/src/generated/cublas.rs")),
    ("cublasLt", include_str!("../../cuda-sys/src/generated/cublaslt.rs")),
    ("nccl", include_str!("../../cuda-sys/src/generated/nccl.rs")),
];

/// The functions the wrappers call whose names start with `prefix` (and not with `not`).
fn called(prefix: &str, not: Option<&str>) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    for source in WRAPPERS {
        for piece in source.split('.').skip(1) {
            let name: String = piece
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            let is_call = piece[name.len()..].starts_with("()");
            if is_call && name.starts_with(prefix) && not.map_or(true, |not| !name.starts_with(not)) {
                found.insert(name);
            }
        }
    }
    found
}

/// The pointer depth of each parameter in a list (`*`, and `[]` for arrays; `*const`/`*mut` in
/// Rust), split at top-level commas.
fn shape(parameters: &str, pointer: &str) -> Vec<usize> {
    let parameters = parameters.trim();
    if parameters.is_empty() || parameters == "void" {
        return Vec::new();
    }
    parameters
        .split(',')
        .filter(|p| !p.trim().is_empty())
        .map(|p| p.matches(pointer).count() + p.matches('[').count())
        .collect()
}

/// The bindings' parameter shape of `name`.
fn binding_shape(name: &str) -> Vec<usize> {
    let header = format!("pub fn {name}(\n");
    let text = BINDINGS
        .iter()
        .find_map(|(_, text)| text.find(&header).map(|at| &text[at..]))
        .unwrap_or_else(|| panic!("{name} is not in the bindings"));
    let open = text.find("fn(").expect("a function type") + 3;
    let close = open + text[open..].find(") ->").expect("a return type");
    let params = &text[open..close];
    let shapes: Vec<usize> = params
        .split(",\n")
        .filter(|p| !p.trim().is_empty())
        .map(|p| p.matches("*const").count() + p.matches("*mut").count())
        .collect();
    shapes
}

/// Every parameter shape a header folder declares for `name` (`name(...);` after a space or `*`).
fn header_shapes(headers: &[String], name: &str) -> Vec<Vec<usize>> {
    let needle = format!("{name}(");
    let mut shapes = Vec::new();
    for text in headers {
        let mut from = 0;
        while let Some(at) = text[from..].find(&needle).map(|at| at + from) {
            from = at + needle.len();
            let before = text[..at].chars().last();
            if !before.is_some_and(|c| c.is_whitespace() || c == '*') {
                continue;
            }
            let Some(close) = text[from..].find(')').map(|c| c + from) else {
                continue;
            };
            if text[close + 1..].trim_start().starts_with(';') {
                shapes.push(shape(&text[from..close], "*"));
            }
        }
    }
    shapes
}

/// C text with its `/* */` and `//` comments removed (they hold `*`s and stray names).
fn without_comments(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while !rest.is_empty() {
        let block = rest.find("/*");
        let line = rest.find("//");
        match (block, line) {
            (Some(b), l) if l.map_or(true, |l| l > b) => {
                out.push_str(&rest[..b]);
                rest = rest[b + 2..].find("*/").map_or("", |end| &rest[b + 2 + end + 2..]);
            }
            (_, Some(l)) => {
                out.push_str(&rest[..l]);
                rest = rest[l..].find('\n').map_or("", |end| &rest[l + end..]);
            }
            _ => {
                out.push_str(rest);
                rest = "";
            }
        }
    }
    out
}

fn headers_in(variable: &str) -> Option<Vec<String>> {
    let folder = PathBuf::from(std::env::var_os(variable)?);
    let mut texts = Vec::new();
    for entry in std::fs::read_dir(&folder).unwrap_or_else(|e| panic!("{variable}: {}: {e}", folder.display())) {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "h") {
            texts.push(without_comments(&std::fs::read_to_string(&path).unwrap()));
        }
    }
    Some(texts)
}

/// Opens a library file: its version and the declared functions it lacks.
type OpenFn = fn(&std::ffi::OsStr) -> (Option<i32>, Vec<&'static str>);

/// Opens the CUDA 12 library named by `variable`, checks it is CUDA 12's (or NCCL's of any
/// version), and returns the called functions it lacks.
fn missing_in(variable: &str, functions: &BTreeSet<String>, open: OpenFn) -> Option<Vec<String>> {
    let path = std::env::var_os(variable)?;
    let (version, missing) = open(&path);
    println!("{variable}: version {version:?}, {} functions called", functions.len());
    Some(
        functions
            .iter()
            .filter(|f| missing.contains(&f.as_str()))
            .cloned()
            .collect(),
    )
}

#[test]
fn the_cuda_12_libraries_serve_every_function_the_wrappers_call() {
    let cublas = called("cublas", Some("cublasLt"));
    let cublaslt = called("cublasLt", None);
    let nccl = called("nccl", None);
    assert!(cublas.contains("cublasGemmEx") && cublaslt.contains("cublasLtMatmul") && nccl.contains("ncclAllReduce"));
    let parts: [(&str, &BTreeSet<String>, OpenFn); 3] = [
        ("CUDA12_CUBLAS_LIBRARY", &cublas, |p| {
            let lib = cuda_sys::Cublas::open(p).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(lib.library_version().map(|v| v / 1000), Some(12));
            (lib.library_version(), lib.missing_functions())
        }),
        ("CUDA12_CUBLASLT_LIBRARY", &cublaslt, |p| {
            let lib = cuda_sys::CublasLt::open(p).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(lib.library_version().map(|v| v / 1000), Some(12));
            (lib.library_version(), lib.missing_functions())
        }),
        ("CUDA12_NCCL_LIBRARY", &nccl, |p| {
            let lib = cuda_sys::Nccl::open(p).unwrap_or_else(|e| panic!("{e}"));
            (lib.library_version(), lib.missing_functions())
        }),
    ];
    for (variable, functions, open) in parts {
        match missing_in(variable, functions, open) {
            Some(missing) => assert!(missing.is_empty(), "{variable} lacks {missing:?}"),
            None => println!("skipped: {variable} unset"),
        }
    }
    for (variable, functions) in [
        (
            "CUDA12_CUBLAS_HEADERS",
            cublas.union(&cublaslt).cloned().collect::<BTreeSet<_>>(),
        ),
        ("CUDA12_NCCL_HEADERS", nccl),
    ] {
        let Some(headers) = headers_in(variable) else {
            println!("skipped: {variable} unset");
            continue;
        };
        for name in &functions {
            let declared = header_shapes(&headers, name);
            let bound = binding_shape(name);
            assert!(
                declared.contains(&bound),
                "{name}: the bindings take {bound:?} (pointer depth per parameter), CUDA 12's headers declare {declared:?}"
            );
        }
        println!("{variable}: {} declarations match", functions.len());
    }
}
