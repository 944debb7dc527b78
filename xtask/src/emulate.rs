//! `cargo xtask emulate [BINARY [TEST...]]`: cuda-core's GPU tests on a machine without a GPU,
//! against the stand-in driver with emulated kernels (the tests package's `libfakecuda.so` with
//! `FAKECUDA_EMULATION=1`, and `libfakenvrtc.so`, the NVRTC that hands the stand-in each
//! program's source; see `tests/fakecuda/emulation.c`). Each kernel cuda-core generates is then
//! compiled by the host C++ compiler and run over its grid on the host, so the tests check what
//! the kernels compute. Library calls (cuBLAS, cuFFT, cuSOLVER, NCCL) are not emulated.
//!
//! With no argument it runs [`SUITES`], the tests chosen to finish in seconds on the host (what
//! `cargo xtask test` runs); with a binary (`sort_gpu`), all of its tests or the ones named.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::gpu_bundle::{cargo_artifacts, Artifact};

/// cuda-core's GPU test binaries and the tests of each that run under emulation in `cargo
/// xtask test`: the device-wide algorithms (sort, merge sort, scan, select, unique, search,
/// histogram) and the NumPy routines on them, at the sizes those tests use; the device-wide and
/// axis reductions, integer and half-precision expressions, negative axes, reversed views,
/// rounding, a template kernel instantiated by name expressions, and the small-matrix Cholesky,
/// inverse, determinant and solve kernels (no cuSOLVER call at those sizes). Left out: the tests
/// of more than 2^31 elements and of ten million, and those that take minutes on the host (a
/// 5000-key sort takes about 0.3 s there; every_type_sorts_as_numpy_stable_sort, tens of minutes).
pub const SUITES: &[(&str, &[&str])] = &[
    (
        "sort_gpu",
        &[
            "bad_input_is_a_typed_error",
            "partition_and_lexsort_match_numpy",
            "isin_and_union1d_match_numpy",
            "merge_sort_takes_struct_keys_and_checks_its_buffers",
            "median_and_percentiles_match_numpy",
            "no_axis_sorts_the_flattened_array",
            "several_quantiles_stack_along_a_new_first_axis",
            "complex_medians_match_numpy",
            "unique_matches_numpy",
            "passes_on_constant_key_bytes_are_skipped_and_sorts_stay_exact",
            "short_segments_sort_alone_and_long_or_overlapping_ones_fall_back",
        ],
    ),
    (
        "scan_gpu",
        &[
            "algorithm_forms_on_plain_buffers",
            "complex_exclusive_scans_and_scans_by_key_follow_numpy",
            "complex_scans_follow_numpy",
            "cumsum_and_cumprod_match_the_host_for_every_type",
            "cumulative_sum_and_prod_follow_numpy_2",
            "diff_and_ediff1d_follow_numpy",
            "every_axis_of_a_3d_array_matches_the_host",
            "look_back_across_many_tiles_is_exact",
            "nan_infinities_and_negative_zero_follow_numpy",
            "scans_by_key_restart_where_the_key_changes",
            "scans_of_expressions_read_their_operands_once",
        ],
    ),
    (
        "select_gpu",
        &[
            "argwhere_and_nonzero_give_coordinates_in_c_order",
            "compress_selects_slices_along_an_axis",
            "extract_reads_through_masks_and_fused_expressions",
            "flatnonzero_matches_the_host_for_every_type",
            "place_and_putmask_write_through_masks",
            "run_length_encoding_gives_values_and_lengths",
            "select_and_partition_on_plain_buffers",
            "select_if_takes_a_cpp_predicate",
            "unique_by_key_keeps_each_runs_first_value_for_every_key_type",
            "unique_of_sorted_input_keeps_each_runs_first",
        ],
    ),
    (
        "search_gpu",
        &[
            "bad_input_is_a_typed_error",
            "bin_rules_give_numpys_bin_counts",
            "bounds_match_a_host_binary_search_for_every_type",
            "complex_bounds_match_numpy",
            "digitize_and_bincount_match_numpy",
            "histogram2d_matches_numpy",
            "histogramdd_matches_numpy",
            "histograms_match_numpy",
            "histograms_with_edges_and_densities_match_numpy",
            "interp_matches_numpy",
            "numpy_cases_and_a_sorter",
            "weighted_bincount_matches_numpy",
            "weighted_histograms_match_numpy",
        ],
    ),
    (
        "reduce_gpu",
        &[
            "device_reduce_by_key_matches_the_host",
            "device_reduce_follows_numpy_on_nan_inf_and_signed_zero",
            "device_reduce_with_an_operator_keeps_the_order",
            "device_segmented_reduce_matches_the_host",
            "item_and_bad_axes_are_typed_errors",
            "reductions_of_expressions_are_one_kernel_without_a_temporary",
            "views_nan_ties_and_empty_inputs_follow_numpy",
        ],
    ),
    (
        "expr_gpu",
        &[
            "assign_update_and_overlap_behave_like_numpy",
            "f64_rounds_once_to_f16_and_bf16_on_the_device",
            "integer_expressions_promote_and_wrap_like_numpy",
            "u64_and_i64_compare_exactly",
        ],
    ),
    (
        "manipulation_gpu",
        &[
            "reversed_views_go_through_every_routine",
            "take_along_axis_matches_numpy",
        ],
    ),
    (
        "numpy_math_gpu",
        &[
            "nan_to_num_replaces_with_the_types_limits_or_given_values",
            "round_matches_numpys_around_for_every_type_family_and_views",
        ],
    ),
    (
        "axes_gpu",
        &[
            "negative_axes_gather_copy_and_view_like_positive_ones",
            "negative_axes_reduce_like_positive_ones",
        ],
    ),
    (
        "array_gpu",
        &["raw_kernels_compile_per_context_and_instantiate_templates"],
    ),
    (
        "linalg_solver_gpu",
        &[
            "small_choleskys_run_in_one_kernel",
            "small_inverses_and_determinants_run_in_one_kernel",
            "small_solves_run_in_one_kernel",
        ],
    ),
];

/// The environment that points the loader at the stand-in with emulation on, given the real
/// NVRTC (`nvrtc`) the shim forwards to; the stand-in's files come from the tests package's
/// build script (`stand_in`).
fn emulation_env(stand_in: &[Artifact], nvrtc: OsString) -> Result<Vec<(String, OsString)>, String> {
    let file = |key: &str| {
        stand_in
            .iter()
            .find(|a| a.target == key)
            .map(|a| a.executable.clone().into_os_string())
            .ok_or_else(|| format!("the tests package's build script did not report {key}"))
    };
    Ok(vec![
        ("CUDA_DRIVER_LIBRARY".into(), file("FAKECUDA_PATH")?),
        ("CUDA_NVRTC_LIBRARY".into(), file("FAKENVRTC_PATH")?),
        ("FAKENVRTC_REAL".into(), nvrtc),
        ("FAKECUDA_EMULATION".into(), "1".into()),
        ("CUDA_RS_CACHE".into(), "0".into()),
        ("CUDA_REQUIRE_GPU".into(), "1".into()),
    ])
}

/// Runs `suites` (binary, tests; all of the binary's tests where none are named) under
/// emulation, with `library_env` (the loader's variables of [`crate::test::library_env`]; the
/// real NVRTC is its `CUDA_NVRTC_LIBRARY`, else the process's).
pub fn run_suites(root: &Path, suites: &[(&str, Vec<&str>)], library_env: &[(String, OsString)]) -> Result<(), String> {
    let nvrtc = library_env
        .iter()
        .find(|(key, _)| key == "CUDA_NVRTC_LIBRARY")
        .map(|(_, value)| value.clone())
        .or_else(|| std::env::var_os("CUDA_NVRTC_LIBRARY"))
        .ok_or("emulation needs the real NVRTC: set CUDA_NVRTC_LIBRARY (cargo xtask test sets it)")?;
    eprintln!("xtask: building the stand-in and cuda-core's GPU tests for emulation");
    // The workspace's features, as `cargo xtask test` built them, so nothing is rebuilt; the
    // libraries' tests make the tests package run its build script (the stand-in).
    let mut args = vec!["test", "--workspace", "--no-run", "--lib"];
    for (binary, _) in suites {
        args.extend(["--test", binary]);
    }
    let artifacts = cargo_artifacts(root, &args)?;
    let env = emulation_env(&artifacts, nvrtc)?;
    let mut failed = Vec::new();
    for (binary, tests) in suites {
        let executable: PathBuf = artifacts
            .iter()
            .find(|a| a.test && a.package == "cudars-core" && a.target == *binary)
            .map(|a| a.executable.clone())
            .ok_or_else(|| format!("cargo built no test binary {binary} of cudars-core"))?;
        eprintln!("xtask: emulating {binary} {}", tests.join(" "));
        if !tests.is_empty() {
            check_names(&executable, tests)?;
        }
        let mut command = Command::new(&executable);
        command.current_dir(root.join("cuda-core")).args(["--test-threads=1"]);
        if !tests.is_empty() {
            command.arg("--exact").args(tests);
        }
        command.envs(library_env.iter().map(|(k, v)| (k, v)));
        command.envs(env.iter().map(|(k, v)| (k, v)));
        let status = command
            .status()
            .map_err(|e| format!("running {}: {e}", executable.display()))?;
        if !status.success() {
            failed.push(format!("{binary} ({status})"));
        }
    }
    if failed.is_empty() {
        Ok(())
    } else {
        Err(format!("emulated GPU tests failed: {}", failed.join(", ")))
    }
}

/// An error naming the tests of `tests` that `executable` does not have (a renamed test would
/// otherwise be filtered out in silence).
fn check_names(executable: &Path, tests: &[&str]) -> Result<(), String> {
    let output = Command::new(executable)
        .arg("--list")
        .output()
        .map_err(|e| format!("listing the tests of {}: {e}", executable.display()))?;
    let listed = String::from_utf8_lossy(&output.stdout);
    let missing: Vec<&str> = tests
        .iter()
        .copied()
        .filter(|name| !listed.lines().any(|line| line == format!("{name}: test")))
        .collect();
    match missing.is_empty() {
        true => Ok(()),
        false => Err(format!(
            "{} has no test named {}",
            executable.display(),
            missing.join(", ")
        )),
    }
}

/// `cargo xtask emulate [BINARY [TEST...]]`.
pub fn run(root: &Path, args: &[String]) -> Result<(), String> {
    let suites: Vec<(&str, Vec<&str>)> = match args.split_first() {
        Some((binary, tests)) => vec![(binary.as_str(), tests.iter().map(String::as_str).collect())],
        None => SUITES.iter().map(|(binary, tests)| (*binary, tests.to_vec())).collect(),
    };
    run_suites(root, &suites, &crate::test::library_env(root)?)
}
