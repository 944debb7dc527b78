//! The libraries this crate loads: one row each, read by the loader, the search, the error
//! messages and `cargo xtask` (bindgen, the test task, the GPU bundle). Adding a library is
//! adding a row here (see the crate's front page for the whole recipe).

/// Everything known about one library: how it is found and opened, how it is named in
/// errors, and what `cargo xtask bindgen` reads to generate its module.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Library {
    /// Its table type, which is also its [`LibraryKind`] variant (`"Driver"`).
    pub table: &'static str,
    /// Its generated module (`src/generated/<module>.rs`) and loader function (`"driver"`:
    /// `cuda_sys::driver` and `cuda_sys::driver()`).
    pub module: &'static str,
    /// Its generated module's file, relative to `cuda-sys/src`: `generated/driver.rs`.
    pub generated: &'static str,
    /// The cargo feature that compiles its module, table type and loader in.
    pub feature: &'static str,
    /// Whether this build has that feature on. Rows of libraries left out stay in the table
    /// ([`LIBRARIES`] is what `cargo xtask` generates and fetches), but have no loader.
    pub enabled: bool,
    /// Whether its feature is one of this crate's default features. `cargo xtask test` fetches
    /// the wheels of these only: the others (cuBLAS, whose wheel is some 600 MB) are tested
    /// where their library is found, and skipped otherwise.
    pub default_feature: bool,
    /// For error messages: `"the CUDA driver (libcuda)"`.
    pub description: &'static str,
    /// Its name inside a sentence: `"the driver"`, `"NVRTC"`.
    pub short_name: &'static str,
    /// The file name the platform loader is asked for.
    pub soname: Soname,
    /// The environment variable that names its file explicitly (`CUDA_NVRTC_LIBRARY`).
    pub env_var: &'static str,
    /// Where it is installed from, which decides where it is looked for.
    pub install: Install,
    /// Its CUDA 12 build, looked for after the CUDA 13 one (before it where the driver is a
    /// 12.x one); `None` where one build serves both (the driver).
    pub cuda12: Option<Cuda12Build>,
    /// File name prefixes of libraries loaded first, from the same folder, when it is opened
    /// from a folder the platform loader does not search (NVRTC's `libnvrtc-builtins.so.`).
    pub companions: &'static [&'static str],
    /// The function that reports its version, for error messages.
    pub version: VersionQuery,
    /// Whether entry points come through `cuGetProcAddress` (the driver) rather than by
    /// exported name.
    pub proc_address: bool,
    /// Whether its header names each export after the header's version
    /// (`__nvJitLinkCreate_13_0`), the library exporting one name per version it serves
    /// (`__nvJitLinkCreate_12_0` to `_12_9` in 12.9): a library of another version is asked
    /// for the name of its own version.
    pub versioned_exports: bool,
    /// Exports whose CUDA 13 ABI (the one the bindings declare) differs from the CUDA 12
    /// export of the same name (cudart 12's `cudaMemAdvise` takes a device, 13's a location):
    /// in a CUDA 12 build these are missing, with [`crate::SymbolError::needs_version`] 13.0.
    pub changed_in_13: &'static [&'static str],
    /// What `cargo xtask bindgen` reads to generate its module.
    pub bindings: Bindings,
}

/// Where a library's CUDA 12 build is found: its file name, and its `-cu12` wheel, which keeps
/// the library in a folder of its own package (`nvidia/cuda_nvrtc/lib`) rather than cu13's
/// shared `nvidia/cu13/lib`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cuda12Build {
    /// Its file name: `libnvrtc.so.12`.
    pub soname: Soname,
    /// Its wheel: `nvidia-cuda-nvrtc-cu12`, folder `nvidia/cuda_nvrtc/lib`.
    pub wheel: Wheel,
}

/// A library's file name on each platform.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Soname {
    /// On Linux: `libnvrtc.so.13`.
    pub linux: &'static str,
    /// On Windows: `nvrtc64_130_0.dll`.
    pub windows: &'static str,
}

/// Where a library comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Install {
    /// The GPU's driver package: never in a toolkit's `lib64` nor in a wheel. Looked for by the
    /// platform loader, then in WSL's `/usr/lib/wsl/lib` and the forward-compatibility
    /// package's `compat` folder under the CUDA roots.
    DriverPackage,
    /// A CUDA toolkit's `lib64`/`lib`, or a Python wheel.
    Wheel(Wheel),
}

/// The PyPI wheel that ships a library. Its pinned version is in `cuda-sys/cuda-wheels.txt`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Wheel {
    /// The PyPI name: `nvidia-cuda-nvrtc`.
    pub name: &'static str,
    /// The folder inside `site-packages` that holds the library: `nvidia/cu13/lib`.
    pub folder: &'static str,
    /// The versions of the wheel, as pip takes them: `13.*` for the CUDA 13 toolkit's own
    /// wheels (`12.*` for CUDA 12's), `12.*` for CUDA 13's cuFFT and cuSOLVER (their own
    /// numbering), `2.*` for NCCL of either generation.
    pub series: &'static str,
}

/// The exported function that reports a library's version.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VersionQuery {
    /// `int f(int *version)` returning 0 on success, the version as `major * 1000 + minor * 10`
    /// (`cuDriverGetVersion`).
    Number(&'static str),
    /// `int f(int *major, int *minor)` returning 0 on success (`nvrtcVersion`).
    MajorMinor(&'static str),
    /// `int f(libraryPropertyType type, int *value)` returning 0 on success, asked for the
    /// major (type 0) and minor (type 1) version (`cublasGetProperty`).
    Property(&'static str),
    /// `int f(int *version)` returning 0 on success, the version as
    /// `major * 10000 + minor * 100 + patch` (NCCL's `ncclGetVersion` since 2.9), reported as
    /// `major * 1000 + minor * 10` like the others.
    Code(&'static str),
}

/// What `cargo xtask bindgen` reads for one library.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bindings {
    /// The header: `nvrtc.h`.
    pub header: &'static str,
    /// The wheels whose `include` folders it needs, the one that ships the header first (its
    /// pin is stamped into the generated module's `HEADER`).
    pub wheels: &'static [&'static str],
    /// bindgen's function allowlist: `^nvrtc[A-Z].*`.
    pub functions: &'static str,
    /// bindgen's type allowlist.
    pub types: &'static str,
    /// bindgen's variable (constant) allowlist.
    pub vars: &'static str,
    /// Preprocessor definitions (`-D`) for the header.
    pub defines: &'static [&'static str],
}

impl Soname {
    /// The name on this platform.
    pub fn here(&self) -> &'static str {
        if cfg!(windows) {
            self.windows
        } else {
            self.linux
        }
    }
}

impl Library {
    /// The file name the platform loader is asked for on this platform (the CUDA 13 build's).
    pub fn loader_name(&self) -> &'static str {
        self.soname.here()
    }
}

/// cuBLAS's headers include `cuda_fp16.h` and `cuda_bf16.h`, which need CCCL's `<nv/target>`
/// (a wheel of its own) and declare C++ classes; the declarations only take `__half` and
/// `__nv_bfloat16` by pointer, so the two headers are skipped (their include guards defined)
/// and both types read as their 16 bits.
const HALF_AS_BITS: &[&str] = &[
    "__CUDA_FP16_H__",
    "__CUDA_BF16_H__",
    "__half=unsigned short",
    "__nv_bfloat16=unsigned short",
];

/// cudart exports whose CUDA 13 ABI differs from CUDA 12's export of the same name: graph
/// edges with edge data, memory advice and prefetch by location, batched copies without a
/// failure index, and the names CUDA 12's header maps to a `_v2` (its plain export being older
/// still). Found by comparing the declarations of CUDA 12.9's and 13.0's
/// `cuda_runtime_api.h`, every parameter's type.
const RUNTIME_CHANGED_IN_13: &[&str] = &[
    "cudaGetDeviceProperties",
    "cudaGraphAddDependencies",
    "cudaGraphAddNode",
    "cudaGraphGetEdges",
    "cudaGraphNodeGetDependencies",
    "cudaGraphNodeGetDependentNodes",
    "cudaGraphRemoveDependencies",
    "cudaMemAdvise",
    "cudaMemPrefetchAsync",
    "cudaMemcpy3DBatchAsync",
    "cudaMemcpyBatchAsync",
    "cudaSignalExternalSemaphoresAsync",
    "cudaStreamGetCaptureInfo",
    "cudaStreamUpdateCaptureDependencies",
    "cudaWaitExternalSemaphoresAsync",
];

/// The table: one row per library, each behind its cargo feature. A row starts with the
/// library's table type (also its [`LibraryKind`] variant), its module and loader function,
/// its cargo feature, its generated file and the header's name for docs; the fields in braces
/// fill the rest of its [`Library`].
macro_rules! libraries {
    ($(
        $(#[$doc:meta])*
        $table:ident, $module:ident, $feature:literal, $generated:literal, $header_doc:literal => { $($field:ident: $value:expr,)* }
    )*) => {
        /// Every library, in the order of [`LibraryKind`]'s variants, whether or not its feature
        /// is on in this build (see [`Library::enabled`]).
        pub const LIBRARIES: &[Library] = &[$(Library {
            table: stringify!($table),
            module: stringify!($module),
            feature: $feature,
            generated: $generated,
            enabled: cfg!(feature = $feature),
            $($field: $value,)*
        },)*];

        /// One of the libraries this crate knows: an index into [`LIBRARIES`].
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum LibraryKind {
            $(
                #[doc = concat!("`", stringify!($module), "`: ", $header_doc, ".")]
                $table,
            )*
        }

        impl LibraryKind {
            /// Every kind, in table order.
            pub const ALL: &'static [LibraryKind] = &[$(LibraryKind::$table,)*];

            /// The header its generated module was made from; `None` where its feature is off.
            pub fn header(self) -> Option<crate::HeaderStamp> {
                const STAMPS: &[(LibraryKind, crate::HeaderStamp)] = &[$(
                    #[cfg(feature = $feature)]
                    (LibraryKind::$table, $module::HEADER),
                )*];
                STAMPS.iter().find(|(kind, _)| *kind == self).map(|(_, stamp)| *stamp)
            }
        }

        /// Each library's generated file and its length, read at compile time (a missing file
        /// fails the test build: run `cargo xtask bindgen`), so the table's test reads no source
        /// tree at run time.
        #[cfg(test)]
        const GENERATED_LENGTHS: &[(&str, usize)] = &[$(($generated, include_str!($generated).len()),)*];

        $(
            #[doc = concat!(
                "Types, constants and the function table of ", $header_doc,
                ", generated by `cargo xtask bindgen`.\n",
                "Items carry the headers' comments where the headers have them; the rest are documented\n",
                "by NVIDIA's CUDA reference under the same names."
            )]
            #[cfg(feature = $feature)]
            #[rustfmt::skip]
            #[allow(missing_docs)]
            #[path = $generated]
            pub mod $module;

            #[cfg(feature = $feature)]
            library_table!($(#[$doc])* $table, LibraryKind::$table, $module::FUNCTIONS, $module);
        )*
    };
}

libraries! {
    /// The CUDA driver API (`libcuda`). Entry points come from `cuGetProcAddress`
    /// at the version whose ABI the header declares, falling back to the exported name.
    Driver, driver, "driver", "generated/driver.rs", "the driver API (`cuda.h`)" => {
        description: "the CUDA driver (libcuda)",
        short_name: "the driver",
        soname: Soname { linux: "libcuda.so.1", windows: "nvcuda.dll" },
        env_var: "CUDA_DRIVER_LIBRARY",
        install: Install::DriverPackage,
        cuda12: None,
        default_feature: true,
        companions: &[],
        version: VersionQuery::Number("cuDriverGetVersion"),
        proc_address: true,
        versioned_exports: false,
        changed_in_13: &[],
        bindings: Bindings {
            header: "cuda.h",
            wheels: &["nvidia-cuda-runtime"],
            functions: "^cu[A-Z].*",
            types: "^(CU|cu[A-Z]).*",
            vars: "^(CU_|CUDA_VERSION).*",
            defines: &[],
        },
    }

    /// The CUDA runtime API (`libcudart`).
    Runtime, runtime, "runtime", "generated/runtime.rs", "the runtime API (`cuda_runtime_api.h`)" => {
        description: "the CUDA runtime (libcudart)",
        short_name: "the runtime",
        soname: Soname { linux: "libcudart.so.13", windows: "cudart64_13.dll" },
        env_var: "CUDA_RUNTIME_LIBRARY",
        install: Install::Wheel(Wheel { name: "nvidia-cuda-runtime", folder: "nvidia/cu13/lib", series: "13.*" }),
        cuda12: Some(Cuda12Build {
            soname: Soname { linux: "libcudart.so.12", windows: "cudart64_12.dll" },
            wheel: Wheel { name: "nvidia-cuda-runtime-cu12", folder: "nvidia/cuda_runtime/lib", series: "12.*" },
        }),
        default_feature: true,
        companions: &[],
        version: VersionQuery::Number("cudaRuntimeGetVersion"),
        proc_address: false,
        versioned_exports: false,
        changed_in_13: RUNTIME_CHANGED_IN_13,
        bindings: Bindings {
            header: "cuda_runtime_api.h",
            // `cuda_runtime_api.h` includes `crt/host_defines.h`, from the crt wheel.
            wheels: &["nvidia-cuda-runtime", "nvidia-cuda-crt"],
            functions: "^cuda[A-Z].*",
            types: "^(cuda|CUDART).*",
            vars: "^(cuda|CUDART_VERSION).*",
            defines: &[],
        },
    }

    /// NVRTC, the runtime compiler (`libnvrtc`).
    Nvrtc, nvrtc, "nvrtc", "generated/nvrtc.rs", "NVRTC (`nvrtc.h`)" => {
        description: "NVRTC (libnvrtc)",
        short_name: "NVRTC",
        soname: Soname { linux: "libnvrtc.so.13", windows: "nvrtc64_130_0.dll" },
        env_var: "CUDA_NVRTC_LIBRARY",
        install: Install::Wheel(Wheel { name: "nvidia-cuda-nvrtc", folder: "nvidia/cu13/lib", series: "13.*" }),
        cuda12: Some(Cuda12Build {
            soname: Soname { linux: "libnvrtc.so.12", windows: "nvrtc64_120_0.dll" },
            wheel: Wheel { name: "nvidia-cuda-nvrtc-cu12", folder: "nvidia/cuda_nvrtc/lib", series: "12.*" },
        }),
        default_feature: true,
        companions: &["libnvrtc-builtins.so."],
        version: VersionQuery::MajorMinor("nvrtcVersion"),
        proc_address: false,
        versioned_exports: false,
        changed_in_13: &[],
        bindings: Bindings {
            header: "nvrtc.h",
            wheels: &["nvidia-cuda-nvrtc"],
            functions: "^nvrtc[A-Z].*",
            types: "^nvrtc.*",
            vars: "^NVRTC.*",
            defines: &[],
        },
    }

    /// nvJitLink, the JIT linker (`libnvJitLink`).
    NvJitLink, nvjitlink, "nvjitlink", "generated/nvjitlink.rs", "nvJitLink (`nvJitLink.h`)" => {
        description: "nvJitLink (libnvJitLink)",
        short_name: "nvJitLink",
        soname: Soname { linux: "libnvJitLink.so.13", windows: "nvJitLink_130_0.dll" },
        env_var: "CUDA_NVJITLINK_LIBRARY",
        install: Install::Wheel(Wheel { name: "nvidia-nvjitlink", folder: "nvidia/cu13/lib", series: "13.*" }),
        cuda12: Some(Cuda12Build {
            soname: Soname { linux: "libnvJitLink.so.12", windows: "nvJitLink_120_0.dll" },
            wheel: Wheel { name: "nvidia-nvjitlink-cu12", folder: "nvidia/nvjitlink/lib", series: "12.*" },
        }),
        default_feature: true,
        companions: &[],
        version: VersionQuery::MajorMinor("nvJitLinkVersion"),
        proc_address: false,
        versioned_exports: true,
        changed_in_13: &[],
        bindings: Bindings {
            header: "nvJitLink.h",
            wheels: &["nvidia-nvjitlink"],
            functions: "^(__)?nvJitLink[A-Z].*",
            types: "^nvJitLink.*",
            vars: "^NVJITLINK.*",
            defines: &["NVJITLINK_NO_INLINE"],
        },
    }

    /// cuBLAS, dense linear algebra (`libcublas`): the `cublas_v2.h` API. Not a default
    /// feature.
    Cublas, cublas, "cublas", "generated/cublas.rs", "cuBLAS (`cublas_v2.h`)" => {
        description: "cuBLAS (libcublas)",
        short_name: "cuBLAS",
        soname: Soname { linux: "libcublas.so.13", windows: "cublas64_13.dll" },
        env_var: "CUDA_CUBLAS_LIBRARY",
        install: Install::Wheel(Wheel { name: "nvidia-cublas", folder: "nvidia/cu13/lib", series: "13.*" }),
        cuda12: Some(Cuda12Build {
            soname: Soname { linux: "libcublas.so.12", windows: "cublas64_12.dll" },
            wheel: Wheel { name: "nvidia-cublas-cu12", folder: "nvidia/cublas/lib", series: "12.*" },
        }),
        default_feature: false,
        companions: &[],
        version: VersionQuery::Property("cublasGetProperty"),
        proc_address: false,
        versioned_exports: false,
        changed_in_13: &[],
        bindings: Bindings {
            header: "cublas_v2.h",
            // `cublas_api.h` includes the runtime's `driver_types.h`, `library_types.h` and
            // `cuda_fp16.h`, which includes `crt/host_defines.h`.
            wheels: &["nvidia-cublas", "nvidia-cuda-runtime", "nvidia-cuda-crt"],
            functions: "^cublas[A-Z].*",
            types: "^cublas[A-Z].*",
            vars: "^CUBLAS.*",
            defines: HALF_AS_BITS,
        },
    }

    /// cuBLASLt, the lightweight matrix multiplication API with epilogues (`libcublasLt`).
    /// Not a default feature.
    CublasLt, cublaslt, "cublaslt", "generated/cublaslt.rs", "cuBLASLt (`cublasLt.h`)" => {
        description: "cuBLASLt (libcublasLt)",
        short_name: "cuBLASLt",
        soname: Soname { linux: "libcublasLt.so.13", windows: "cublasLt64_13.dll" },
        env_var: "CUDA_CUBLASLT_LIBRARY",
        install: Install::Wheel(Wheel { name: "nvidia-cublas", folder: "nvidia/cu13/lib", series: "13.*" }),
        cuda12: Some(Cuda12Build {
            soname: Soname { linux: "libcublasLt.so.12", windows: "cublasLt64_12.dll" },
            wheel: Wheel { name: "nvidia-cublas-cu12", folder: "nvidia/cublas/lib", series: "12.*" },
        }),
        default_feature: false,
        companions: &[],
        version: VersionQuery::Property("cublasLtGetProperty"),
        proc_address: false,
        versioned_exports: false,
        changed_in_13: &[],
        bindings: Bindings {
            header: "cublasLt.h",
            wheels: &["nvidia-cublas", "nvidia-cuda-runtime", "nvidia-cuda-crt"],
            functions: "^cublasLt[A-Z].*",
            types: "^cublasLt[A-Z].*",
            vars: "^CUBLASLT.*",
            defines: HALF_AS_BITS,
        },
    }

    /// NCCL, collective communication between GPUs (`libnccl`). Not a default feature.
    Nccl, nccl, "nccl", "generated/nccl.rs", "NCCL (`nccl.h`)" => {
        description: "NCCL (libnccl)",
        short_name: "NCCL",
        // NCCL has no Windows build; the name is the one its Linux soname would have there.
        soname: Soname { linux: "libnccl.so.2", windows: "nccl64_2.dll" },
        env_var: "CUDA_NCCL_LIBRARY",
        install: Install::Wheel(Wheel { name: "nvidia-nccl-cu13", folder: "nvidia/nccl/lib", series: "2.*" }),
        cuda12: Some(Cuda12Build {
            soname: Soname { linux: "libnccl.so.2", windows: "nccl64_2.dll" },
            wheel: Wheel { name: "nvidia-nccl-cu12", folder: "nvidia/nccl/lib", series: "2.*" },
        }),
        default_feature: false,
        companions: &[],
        version: VersionQuery::Code("ncclGetVersion"),
        proc_address: false,
        versioned_exports: false,
        changed_in_13: &[],
        bindings: Bindings {
            header: "nccl.h",
            // `nccl.h` includes the runtime's `cuda_runtime.h` (and so `crt/host_defines.h`)
            // and `cuda_fp16.h`/`cuda_bf16.h`.
            wheels: &["nvidia-nccl-cu13", "nvidia-cuda-runtime", "nvidia-cuda-crt"],
            functions: "^nccl[A-Z].*",
            types: "^nccl.*",
            vars: "^NCCL.*",
            defines: HALF_AS_BITS,
        },
    }

    /// cuFFT, fast Fourier transforms (`libcufft`): the `cufft.h` API and its `cufftXt.h`
    /// extensions (half-precision and 64-bit plans through `cufftXtMakePlanMany`). Not a default
    /// feature.
    Cufft, cufft, "cufft", "generated/cufft.rs", "cuFFT (`cufftXt.h`, which includes `cufft.h`)" => {
        description: "cuFFT (libcufft)",
        short_name: "cuFFT",
        soname: Soname { linux: "libcufft.so.12", windows: "cufft64_12.dll" },
        env_var: "CUDA_CUFFT_LIBRARY",
        install: Install::Wheel(Wheel { name: "nvidia-cufft", folder: "nvidia/cu13/lib", series: "12.*" }),
        // CUDA 12 ships cuFFT and cuSOLVER 11.x.
        cuda12: Some(Cuda12Build {
            soname: Soname { linux: "libcufft.so.11", windows: "cufft64_11.dll" },
            wheel: Wheel { name: "nvidia-cufft-cu12", folder: "nvidia/cufft/lib", series: "11.*" },
        }),
        default_feature: false,
        companions: &[],
        version: VersionQuery::Property("cufftGetProperty"),
        proc_address: false,
        versioned_exports: false,
        changed_in_13: &[],
        bindings: Bindings {
            header: "cufftXt.h",
            // `cufft.h` includes the runtime's `cuComplex.h`, `driver_types.h` and
            // `library_types.h`, and so `crt/host_defines.h`.
            wheels: &["nvidia-cufft", "nvidia-cuda-runtime", "nvidia-cuda-crt"],
            functions: "^cufft[A-Z].*",
            types: "^cufft.*",
            vars: "^CUFFT.*",
            defines: HALF_AS_BITS,
        },
    }

    /// cuSOLVER's dense API (`libcusolver`): `cusolverDn.h`, with the 64-bit `X` functions.
    /// Not a default feature.
    Cusolver, cusolver, "cusolver", "generated/cusolver.rs", "cuSOLVER (`cusolverDn.h`)" => {
        description: "cuSOLVER (libcusolver)",
        short_name: "cuSOLVER",
        soname: Soname { linux: "libcusolver.so.12", windows: "cusolver64_12.dll" },
        env_var: "CUDA_CUSOLVER_LIBRARY",
        install: Install::Wheel(Wheel { name: "nvidia-cusolver", folder: "nvidia/cu13/lib", series: "12.*" }),
        // CUDA 12 ships cuFFT and cuSOLVER 11.x.
        cuda12: Some(Cuda12Build {
            soname: Soname { linux: "libcusolver.so.11", windows: "cusolver64_11.dll" },
            wheel: Wheel { name: "nvidia-cusolver-cu12", folder: "nvidia/cusolver/lib", series: "11.*" },
        }),
        default_feature: false,
        // libcusolver needs these; a toolkit's `lib64` outside the loader's path provides them
        // only when they are loaded first (the wheels find them through their own run path).
        companions: &["libnvJitLink.so.", "libcublasLt.so.", "libcublas.so.", "libcusparse.so."],
        version: VersionQuery::Property("cusolverGetProperty"),
        proc_address: false,
        versioned_exports: false,
        changed_in_13: &[],
        bindings: Bindings {
            header: "cusolverDn.h",
            // `cusolverDn.h` includes cuBLAS's `cublas_api.h` (and so the runtime's headers and
            // `cuda_fp16.h`).
            wheels: &["nvidia-cusolver", "nvidia-cublas", "nvidia-cuda-runtime", "nvidia-cuda-crt"],
            functions: "^cusolver[A-Z].*",
            types: "^(cusolver|syevjInfo|gesvdjInfo).*",
            vars: "^CUSOLVER.*",
            defines: HALF_AS_BITS,
        },
    }

    /// NVML, the NVIDIA Management Library (`libnvidia-ml`): device names, memory, utilisation,
    /// temperature, clocks, power, topology and processes. Part of the GPU's driver package, like
    /// the driver. Not a default feature.
    Nvml, nvml, "nvml", "generated/nvml.rs", "NVML (`nvml.h`)" => {
        description: "NVML, the NVIDIA Management Library (libnvidia-ml)",
        short_name: "NVML",
        soname: Soname { linux: "libnvidia-ml.so.1", windows: "nvml.dll" },
        env_var: "CUDA_NVML_LIBRARY",
        install: Install::DriverPackage,
        cuda12: None,
        default_feature: false,
        companions: &[],
        // Answers once NVML is initialised (`nvmlInit_v2`); before, the version is unknown.
        version: VersionQuery::Number("nvmlSystemGetCudaDriverVersion_v2"),
        proc_address: false,
        versioned_exports: false,
        changed_in_13: &[],
        bindings: Bindings {
            header: "nvml.h",
            wheels: &["nvidia-nvml-dev"],
            functions: "^nvml[A-Z].*",
            types: "^nvml.*",
            vars: "^NVML.*",
            defines: &[],
        },
    }
}

impl LibraryKind {
    /// This library's row of [`LIBRARIES`].
    pub fn library(self) -> &'static Library {
        &LIBRARIES[self as usize]
    }

    /// The environment variable that names this library's file explicitly.
    pub fn env_var(self) -> &'static str {
        self.library().env_var
    }

    /// The file name the platform loader is asked for.
    pub fn loader_name(self) -> &'static str {
        self.library().loader_name()
    }

    /// A description for error messages.
    pub fn description(self) -> &'static str {
        self.library().description
    }

    /// What to do when the library cannot be found, for error messages: where it comes from
    /// and which environment variable names its file.
    pub fn remedy(self) -> String {
        let library = self.library();
        match library.install {
            Install::DriverPackage => format!(
                "this program needs an NVIDIA GPU and its driver, one that supports CUDA 12.0 or \
                 newer (R525 or newer; R580 or newer for CUDA 13); the driver comes with the GPU's \
                 driver package, never in a Python wheel. If it is installed where the loader does \
                 not look, set {} to the path of {}",
                library.env_var,
                library.loader_name()
            ),
            Install::Wheel(_) => {
                let cuda12 = match library.cuda12 {
                    Some(build) => format!(
                        ", or for a CUDA 12 driver with the CUDA 12 toolkit or `pip install \"{}\"` ({})",
                        self.pip_requirement(12),
                        build.soname.here()
                    ),
                    None => String::new(),
                };
                format!(
                    "{} comes with the CUDA 13 toolkit or with `pip install \"{}\"`{cuda12}; \
                     or set {} to the path of {}",
                    library.short_name,
                    self.pip_requirement(13),
                    library.env_var,
                    library.loader_name()
                )
            }
        }
    }

    /// The pip requirement that installs this library for CUDA `major` (12 or 13), from its
    /// wheel's [`Wheel::series`]: `nvidia-cuda-nvrtc==13.*`, `nvidia-cuda-nvrtc-cu12==12.*`,
    /// `nvidia-cufft==12.*` (cuFFT's own numbering), `nvidia-nccl-cu12==2.*`. Empty for the
    /// driver, which no wheel ships.
    pub fn pip_requirement(self, major: i32) -> String {
        let library = self.library();
        let wheel = match (major, library.install, library.cuda12) {
            (12, _, Some(build)) => build.wheel,
            (_, Install::Wheel(wheel), _) => wheel,
            _ => return String::new(),
        };
        format!("{}=={}", wheel.name, wheel.series)
    }

    /// The library that must be of the same CUDA generation as this one, where there is one:
    /// NVRTC and nvJitLink (the linker reads the compiler's LTO-IR), cuBLAS and cuBLASLt (one
    /// wheel, and cuBLAS calls cuBLASLt).
    pub fn partner(self) -> Option<LibraryKind> {
        match self {
            LibraryKind::Nvrtc => Some(LibraryKind::NvJitLink),
            LibraryKind::NvJitLink => Some(LibraryKind::Nvrtc),
            LibraryKind::Cublas => Some(LibraryKind::CublasLt),
            LibraryKind::CublasLt => Some(LibraryKind::Cublas),
            _ => None,
        }
    }

    /// Searches for the library in the documented order (see [`crate::search`]) and opens the
    /// first candidate that loads, returning the file (or loader name) it came from. The
    /// library is closed again: this answers whether it can be found, whether or not its
    /// feature is on, and leaves the process-wide tables alone.
    pub fn find(self) -> Result<std::path::PathBuf, crate::LoadError> {
        let prefer = crate::preferred_generation(self);
        let found = crate::search::candidates_preferring(self, crate::search::process_environment, prefer);
        crate::open_first(self, &found).map(|opened| opened.path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    /// The crate's wheel pins and manifest, embedded at compile time: the test binary runs
    /// without the source tree (the GPU bundle runs it elsewhere).
    const CUDA_WHEELS_TXT: &str = include_str!("../cuda-wheels.txt");
    const CARGO_TOML: &str = include_str!("../Cargo.toml");

    /// `NAME==VERSION` lines of `cuda-wheels.txt`, by name.
    fn pinned() -> Vec<(String, String)> {
        CUDA_WHEELS_TXT
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.starts_with('#'))
            .map(|l| {
                let (name, version) = l
                    .split_once("==")
                    .unwrap_or_else(|| panic!("`{l}` is not NAME==VERSION"));
                (name.to_string(), version.to_string())
            })
            .collect()
    }

    #[test]
    fn every_row_is_consistent() {
        let pins = pinned();
        let is_pinned = |wheel: &str| pins.iter().any(|(name, _)| name == wheel);
        let features = CARGO_TOML
            .split("[features]")
            .nth(1)
            .expect("Cargo.toml has [features]");
        let features = &features[..features.find("\n[").unwrap_or(features.len())];
        let default = features
            .lines()
            .find_map(|l| l.trim().strip_prefix("default = "))
            .expect("a default feature list");
        assert_eq!(LibraryKind::ALL.len(), LIBRARIES.len());
        for (kind, library) in LibraryKind::ALL.iter().zip(LIBRARIES) {
            let row = library.table;
            assert_eq!(format!("{kind:?}"), row, "LibraryKind and LIBRARIES are in one order");
            assert_eq!(kind.library(), library, "{row}");
            assert_eq!(
                library.module, library.feature,
                "{row}: module and feature share a name"
            );
            assert_eq!(library.generated, format!("generated/{}.rs", library.module), "{row}");
            let generated = GENERATED_LENGTHS.iter().find(|(file, _)| *file == library.generated);
            assert!(
                generated.is_some_and(|&(_, length)| length > 0),
                "{row}: {} is empty (run `cargo xtask bindgen`)",
                library.generated
            );
            assert!(
                features
                    .lines()
                    .any(|l| l.trim().starts_with(&format!("{} = ", library.feature))),
                "{row}: Cargo.toml declares no feature `{}`",
                library.feature
            );
            assert_eq!(
                default.contains(&format!("\"{}\"", library.feature)),
                library.default_feature,
                "{row}: default_feature says whether its feature is a default one"
            );
            assert!(
                library.soname.linux.starts_with("lib") && library.soname.linux.contains(".so."),
                "{row}: {:?}",
                library.soname
            );
            assert!(library.soname.windows.ends_with(".dll"), "{row}: {:?}", library.soname);
            assert!(
                library.env_var.starts_with("CUDA_") && library.env_var.ends_with("_LIBRARY"),
                "{row}: {}",
                library.env_var
            );
            assert!(
                !library.description.is_empty() && !library.short_name.is_empty(),
                "{row}"
            );
            assert!(library.companions.iter().all(|c| !c.is_empty()), "{row}");
            if let Install::Wheel(wheel) = library.install {
                assert!(is_pinned(wheel.name), "{row}: {} is not in cuda-wheels.txt", wheel.name);
                assert!(!wheel.folder.is_empty() && !wheel.folder.starts_with('/'), "{row}");
                let pin = &pins.iter().find(|(name, _)| name == wheel.name).expect("pinned").1;
                let major = wheel.series.strip_suffix(".*").expect("a series is MAJOR.*");
                assert!(
                    pin.starts_with(&format!("{major}.")),
                    "{row}: the pin {pin} of {} is not in its series {}",
                    wheel.name,
                    wheel.series
                );
            }
            let bindings = library.bindings;
            assert!(!bindings.wheels.is_empty(), "{row}: no wheel ships {}", bindings.header);
            for wheel in bindings.wheels {
                assert!(is_pinned(wheel), "{row}: {wheel} is not in cuda-wheels.txt");
            }
            for pattern in [bindings.functions, bindings.types, bindings.vars] {
                assert!(pattern.starts_with('^'), "{row}: allowlist `{pattern}` is anchored");
            }
            if library.enabled {
                let stamp = kind.header().expect("an enabled library has its module");
                assert_eq!(stamp.header, bindings.header, "{row}");
                assert_eq!(stamp.wheel, bindings.wheels[0], "{row}");
            } else {
                assert_eq!(kind.header(), None, "{row}");
            }
        }
        let unique = |what: &str, values: Vec<&str>| {
            let set: HashSet<&str> = values.iter().copied().collect();
            assert_eq!(set.len(), values.len(), "{what} repeats: {values:?}");
        };
        unique("env_var", LIBRARIES.iter().map(|l| l.env_var).collect());
        unique("table", LIBRARIES.iter().map(|l| l.table).collect());
        unique("module", LIBRARIES.iter().map(|l| l.module).collect());
        unique("soname", LIBRARIES.iter().map(|l| l.soname.linux).collect());
        unique("windows soname", LIBRARIES.iter().map(|l| l.soname.windows).collect());
        unique("header", LIBRARIES.iter().map(|l| l.bindings.header).collect());
    }

    #[cfg(feature = "runtime")]
    #[test]
    fn every_export_changed_in_13_is_declared() {
        for name in LibraryKind::Runtime.library().changed_in_13 {
            assert!(runtime::FUNCTIONS.iter().any(|f| f.symbol == *name), "{name}");
        }
        let others = LIBRARIES.iter().filter(|l| l.table != "Runtime");
        assert!(others.clone().all(|l| l.changed_in_13.is_empty()));
    }

    #[test]
    fn enabled_follows_the_features() {
        assert_eq!(LibraryKind::Driver.library().enabled, cfg!(feature = "driver"));
        assert_eq!(LibraryKind::Nvrtc.library().enabled, cfg!(feature = "nvrtc"));
    }

    #[test]
    fn a_missing_library_says_what_to_install_and_which_variable_to_set() {
        let driver = LibraryKind::Driver.remedy();
        assert!(driver.contains("NVIDIA GPU") && driver.contains("R580"), "{driver}");
        assert!(driver.contains("CUDA 12.0 or newer"), "{driver}");
        assert!(
            driver.contains("CUDA_DRIVER_LIBRARY") && !driver.contains("pip"),
            "{driver}"
        );
        let cublas = LibraryKind::Cublas.remedy();
        assert!(cublas.contains("pip install \"nvidia-cublas==13.*\""), "{cublas}");
        assert!(cublas.contains("CUDA_CUBLAS_LIBRARY"), "{cublas}");
        let cufft = LibraryKind::Cufft.remedy();
        assert!(cufft.contains("pip install \"nvidia-cufft==12.*\""), "{cufft}");
        assert!(cufft.contains("CUDA_CUFFT_LIBRARY"), "{cufft}");
        let cusolver = LibraryKind::Cusolver.remedy();
        assert!(cusolver.contains("pip install \"nvidia-cusolver==12.*\""), "{cusolver}");
        let nvrtc = LibraryKind::Nvrtc.remedy();
        assert!(nvrtc.contains("pip install \"nvidia-cuda-nvrtc==13.*\""), "{nvrtc}");
        assert!(nvrtc.contains("CUDA_NVRTC_LIBRARY"), "{nvrtc}");
        assert!(nvrtc.contains("pip install \"nvidia-cuda-nvrtc-cu12==12.*\"") && nvrtc.contains("libnvrtc.so.12"));
        assert_eq!(LibraryKind::Nccl.pip_requirement(12), "nvidia-nccl-cu12==2.*");
        assert_eq!(LibraryKind::Nccl.pip_requirement(13), "nvidia-nccl-cu13==2.*");
        assert_eq!(LibraryKind::Cufft.pip_requirement(12), "nvidia-cufft-cu12==11.*");
        assert_eq!(LibraryKind::Driver.pip_requirement(12), "");
    }

    #[test]
    fn every_toolkit_library_has_a_cuda_12_build_in_its_own_wheel_folder() {
        for kind in LibraryKind::ALL {
            let library = kind.library();
            match (library.install, library.cuda12) {
                (Install::DriverPackage, build) => assert_eq!(build, None, "{kind:?}"),
                (Install::Wheel(_), None) => panic!("{kind:?} has no CUDA 12 build"),
                (Install::Wheel(_), Some(build)) => {
                    let linux = build.soname.linux;
                    // NCCL has its own numbering; CUDA 12's cuFFT and cuSOLVER are 11.x.
                    let expected = match kind {
                        LibraryKind::Nccl => ".so.2",
                        LibraryKind::Cufft | LibraryKind::Cusolver => ".so.11",
                        _ => ".so.12",
                    };
                    assert!(linux.ends_with(expected), "{kind:?}: {linux}");
                    assert!(build.wheel.name.ends_with("-cu12"), "{kind:?}: {}", build.wheel.name);
                    assert!(build.wheel.folder.starts_with("nvidia/") && build.wheel.folder.ends_with("/lib"));
                    assert!(!build.wheel.folder.contains("cu13"), "{kind:?}");
                }
            }
            if let Some(partner) = kind.partner() {
                assert_eq!(partner.partner(), Some(*kind));
            }
        }
    }
}
