//! Loading without a GPU: missing and broken libraries give typed errors,
//! and the committed bindings match the pinned headers.

use cuda_sys::{Driver, LibraryKind, Nvrtc};

#[test]
fn missing_file_is_a_load_error_naming_it() {
    let error = Driver::open("/nonexistent/libcuda.so.1")
        .err()
        .expect("a missing file must not load");
    assert_eq!(error.library, LibraryKind::Driver.description());
    assert_eq!(error.tried.len(), 1);
    assert_eq!(error.tried[0].0, std::path::Path::new("/nonexistent/libcuda.so.1"));
    assert!(error.to_string().contains("/nonexistent/libcuda.so.1"), "{error}");
}

#[test]
fn a_file_that_is_not_a_library_is_a_load_error() {
    let path = std::env::temp_dir().join(format!("not-a-library-{}.so", std::process::id()));
    std::fs::write(&path, b"this is text, not an ELF file").unwrap();
    let error = Nvrtc::open(&path).err().expect("a text file must not load");
    std::fs::remove_file(&path).unwrap();
    assert_eq!(error.tried.len(), 1);
    assert!(!error.tried[0].1.is_empty(), "the loader's reason is kept");
}

#[test]
fn the_driver_comes_from_the_search_order_or_the_error_lists_it() {
    match cuda_sys::driver() {
        Ok(driver) => {
            // With a driver installed, it was loaded from one of the documented candidates.
            let candidates = cuda_sys::search::candidates(LibraryKind::Driver, |name| std::env::var_os(name));
            assert!(
                candidates.iter().any(|c| c.as_path() == driver.path()),
                "{} is not among {candidates:?}",
                driver.path().display()
            );
            println!("driver loaded from {}", driver.path().display());
        }
        Err(error) => {
            let tried: Vec<_> = error
                .tried
                .iter()
                .map(|(p, _)| p.to_string_lossy().into_owned())
                .collect();
            assert!(
                tried.iter().any(|p| p == LibraryKind::Driver.loader_name()),
                "{tried:?}"
            );
            assert!(tried.iter().any(|p| p.starts_with("/usr/local/cuda/")), "{tried:?}");
            let message = error.to_string();
            assert!(message.contains("could not load the CUDA driver"), "{message}");
            // A newcomer without a driver is told what is missing and how to point at it,
            // not sent to pip, and the loader's reason does not repeat the file name.
            assert!(message.contains("needs an NVIDIA GPU and its driver"), "{message}");
            assert!(message.contains("CUDA_DRIVER_LIBRARY"), "{message}");
            assert!(
                !tried.iter().any(|p| p.contains("-packages") || p.contains("/lib64/")),
                "{tried:?}"
            );
            let name = LibraryKind::Driver.loader_name();
            assert!(!message.contains(&format!("{name}: {name}")), "{message}");
            // The same error again, not a panic or a different answer.
            assert_eq!(cuda_sys::driver().err(), Some(error));
        }
    }
}

#[test]
fn generated_bindings_match_the_pinned_headers() {
    let pins = include_str!("../cuda-wheels.txt");
    let stamps: Vec<_> = LibraryKind::ALL.iter().filter_map(|kind| kind.header()).collect();
    let enabled = cuda_sys::LIBRARIES.iter().filter(|library| library.enabled).count();
    assert_eq!(
        stamps.len(),
        enabled,
        "every library whose feature is on is compiled in"
    );
    for (kind, library) in LibraryKind::ALL.iter().zip(cuda_sys::LIBRARIES) {
        if library.default_feature {
            assert!(
                kind.header().is_some(),
                "{}: a default library is compiled in",
                library.table
            );
        }
    }
    for stamp in &stamps {
        let pin = format!("{}=={}", stamp.wheel, stamp.version);
        assert!(
            pins.lines().any(|l| l.trim() == pin),
            "{} was generated from {pin}, which is not pinned",
            stamp.header
        );
    }
    let Some(folders) = std::env::var_os("CUDA_SYS_HEADERS") else {
        println!("skipped header fingerprints: CUDA_SYS_HEADERS is not set (`cargo xtask test` sets it)");
        return;
    };
    for (kind, stamp) in LibraryKind::ALL.iter().filter_map(|kind| Some((kind, kind.header()?))) {
        let found = std::env::split_paths(&folders)
            .map(|dir| dir.join(stamp.header))
            .find(|p| p.exists());
        let header = match found {
            Some(header) => header,
            // `cargo xtask test` fetches the wheels of the default libraries only (cuBLAS's is
            // large); the others are checked where their headers are in CUDA_SYS_HEADERS.
            None if !kind.library().default_feature => {
                println!(
                    "skipped {}'s fingerprint: it is in none of CUDA_SYS_HEADERS",
                    stamp.header
                );
                continue;
            }
            None => panic!("{} is in none of CUDA_SYS_HEADERS", stamp.header),
        };
        let bytes = std::fs::read(&header).unwrap();
        let hash = bytes.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| {
            (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
        });
        assert_eq!(
            hash,
            stamp.fnv1a64,
            "{} changed since `cargo xtask bindgen`",
            header.display()
        );
    }
}

#[test]
fn function_counts_match_the_headers() {
    // bindgen 0.72 / libclang 14 on the CUDA 13.0 headers, after preprocessing.
    assert_eq!(cuda_sys::driver::FUNCTIONS.len(), 449);
    assert_eq!(cuda_sys::runtime::FUNCTIONS.len(), 310);
    assert_eq!(cuda_sys::nvrtc::FUNCTIONS.len(), 24);
    assert_eq!(cuda_sys::nvjitlink::FUNCTIONS.len(), 14);
    #[cfg(feature = "cublas")]
    assert_eq!(cuda_sys::cublas::FUNCTIONS.len(), 517);
    #[cfg(feature = "cublaslt")]
    assert_eq!(cuda_sys::cublaslt::FUNCTIONS.len(), 50);
    #[cfg(feature = "nccl")]
    assert_eq!(cuda_sys::nccl::FUNCTIONS.len(), 41);
    #[cfg(feature = "cufft")]
    assert_eq!(cuda_sys::cufft::FUNCTIONS.len(), 56);
    #[cfg(feature = "cusolver")]
    assert_eq!(cuda_sys::cusolver::FUNCTIONS.len(), 379);
    #[cfg(feature = "nvml")]
    assert_eq!(cuda_sys::nvml::FUNCTIONS.len(), 375);
}

#[test]
fn driver_entry_points_ask_for_the_declared_abi() {
    let find = |symbol: &str| *cuda_sys::driver::FUNCTIONS.iter().find(|f| f.symbol == symbol).unwrap();
    let expect = [
        // (exported symbol, cuGetProcAddress name, version whose ABI cuda.h declares)
        ("cuMemAlloc_v2", "cuMemAlloc", 3020),
        ("cuCtxCreate_v4", "cuCtxCreate", 12050),
        ("cuStreamGetCaptureInfo_v3", "cuStreamGetCaptureInfo", 12030),
        // cuda.h declares cuCtxSynchronize(void); version 13000 would be cuCtxSynchronize(CUcontext).
        ("cuCtxSynchronize", "cuCtxSynchronize", 2000),
        ("cuLaunchKernel", "cuLaunchKernel", 4000),
        ("cuGraphInstantiateWithFlags", "cuGraphInstantiateWithFlags", 11040),
        // Declared with no matching typedef: resolved by exported name only.
        ("cuCtxSynchronize_v2", "cuCtxSynchronize_v2", 0),
    ];
    for (symbol, proc_name, proc_version) in expect {
        assert_eq!(
            find(symbol),
            cuda_sys::FunctionName {
                symbol,
                proc_name,
                proc_version
            },
            "{symbol}"
        );
    }
}
