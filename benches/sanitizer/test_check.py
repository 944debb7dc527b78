"""Unit tests of check.py on logs written after compute-sanitizer's documented output.

Run: python3 benches/sanitizer/test_check.py (run.sh sanitize runs it before the sanitizer)."""

import os
import sys
import unittest

# No __pycache__ beside the sources (in the repository, or in the bundle).
sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check  # noqa: E402

EXPECTED = "\n".join([
    "# kind\tbinary\ttest\tdetail\tcode\twhy",
    "api\t*\t*\tcuFuncGetParamInfo\tCUDA_ERROR_INVALID_VALUE\tthe end-of-list probe",
    "api\tcuda_driver-kernels\tbad_ptx_returns_the_jit_log\tcuModuleLoadData*\tCUDA_ERROR_INVALID_PTX\tbad PTX on purpose",
    "skip\tcuda_driver-drop_errors\t*\t*\t-\tfaults on purpose",
    "skip\tcuda_driver-overlap\tasync_copies_overlap\tracecheck,synccheck\t-\ttimed",
    "tools\tcuda_driver-*\t-\tmemcheck,racecheck\t-\truns kernels",
    "tools\ttests-fake_*\t-\t-\t-\tthe stand-in driver",
    "leaks\tcuda_driver-memory\t-\t-\t-\tkeeps a buffer in a static",
    "no-leaks\texit_release\t-\t-\t-\tthe exit test",
    "alone\tcuda_driver-overlap\t-\t-\t-\tmeasures free memory",
])

BANNER = "========= COMPUTE-SANITIZER\n"
CLEAN_END = "========= LEAK SUMMARY: 0 bytes leaked in 0 allocations\n========= ERROR SUMMARY: {n} errors\n"


def api_error(code, number, description, call):
    return (f'========= Program hit {code} (error {number}) due to "{description}" on CUDA API call to {call}.\n'
            "=========     Saved host backtrace up to driver entry point at error\n"
            "=========         Host Frame:  [0x32257c] in libcuda.so.1\n"
            "========= \n")


def run(name, text, tool="memcheck", exit_code=0):
    return check.check(check.Expected(EXPECTED), name, tool, exit_code, text)


class Checking(unittest.TestCase):
    def test_a_clean_run_passes(self):
        passed, verdict, problems = run("cuda_driver-kernels", BANNER + "running 1 test\ntest a ... ok\n"
                                        + CLEAN_END.format(n=0))
        self.assertTrue(passed, problems)
        self.assertTrue(verdict.startswith("PASS memcheck"), verdict)
        self.assertIn("leaks 0 bytes", verdict)

    def test_expected_api_errors_match_by_test_and_call(self):
        text = (BANNER + "running 2 tests\n"
                # libtest prints the result only when the test ends: the record follows on the same line.
                + "test bad_ptx_returns_the_jit_log ... " + api_error("CUDA_ERROR_INVALID_PTX", 218,
                                                                      "a PTX JIT compilation failed", "cuModuleLoadDataEx")
                + "ok\n"
                + "test vector_add ... " + api_error("CUDA_ERROR_INVALID_VALUE", 1, "invalid argument",
                                                     "cuFuncGetParamInfo")
                + "ok\n" + CLEAN_END.format(n=2))
        passed, verdict, problems = run("cuda_driver-kernels", text)
        self.assertTrue(passed, problems)
        self.assertIn("2 tests passed, 0 failed; 2 expected API errors, 0 unexpected", verdict)

    def test_an_api_error_in_another_test_or_call_fails_with_the_row_to_add(self):
        text = (BANNER + "test vector_add ... "
                + api_error("CUDA_ERROR_INVALID_PTX", 218, "a PTX JIT compilation failed", "cuModuleLoadDataEx")
                + "ok\ntest bad_ptx_returns_the_jit_log ... "
                + api_error("CUDA_ERROR_OUT_OF_MEMORY", 2, "out of memory", "cuMemAlloc_v2")
                + "ok\n" + CLEAN_END.format(n=2))
        passed, verdict, problems = run("cuda_driver-kernels", text)
        self.assertFalse(passed)
        self.assertTrue(verdict.startswith("FAIL"), verdict)
        self.assertIn("unexpected API error in test vector_add: cuModuleLoadDataEx returned CUDA_ERROR_INVALID_PTX "
                      "(a PTX JIT compilation failed)", problems)
        self.assertIn("api\tcuda_driver-kernels\tbad_ptx_returns_the_jit_log\tcuMemAlloc_v2\tCUDA_ERROR_OUT_OF_MEMORY",
                      "\n".join(problems))

    def test_a_report_that_trails_into_the_next_test_still_matches_but_not_two_later(self):
        late = api_error("CUDA_ERROR_INVALID_PTX", 218, "x", "cuModuleLoadData")
        one = (BANNER + "test bad_ptx_returns_the_jit_log ... ok\ntest next ... " + late + "ok\n"
               + CLEAN_END.format(n=1))
        self.assertTrue(run("cuda_driver-kernels", one)[0])
        two = (BANNER + "test bad_ptx_returns_the_jit_log ... ok\ntest next ... ok\ntest third ... " + late
               + "ok\n" + CLEAN_END.format(n=1))
        self.assertFalse(run("cuda_driver-kernels", two)[0])

    def test_records_after_the_last_test_belong_to_none(self):
        text = (BANNER + "test vector_add ... ok\n\ntest result: ok. 1 passed; 0 failed\n\n"
                + api_error("CUDA_ERROR_INVALID_PTX", 218, "x", "cuModuleLoadData") + CLEAN_END.format(n=1))
        passed, _, problems = run("cuda_driver-kernels", text)
        self.assertFalse(passed)
        self.assertIn("unexpected API error in test -:", problems[0])

    def test_the_same_error_in_another_binary_is_unexpected(self):
        text = BANNER + "test bad_ptx_returns_the_jit_log ... " + api_error(
            "CUDA_ERROR_INVALID_PTX", 218, "x", "cuModuleLoadData") + "ok\n" + CLEAN_END.format(n=1)
        self.assertTrue(run("cuda_driver-kernels", text)[0])
        self.assertFalse(run("cuda_core-gpu", text)[0])

    def test_api_errors_in_other_layouts_are_read(self):
        wrapped = (BANNER + "test bad_ptx_returns_the_jit_log ... "
                   '========= Program hit CUDA_ERROR_INVALID_PTX (error 218) due to\n'
                   '=========     "a PTX JIT compilation failed" on CUDA API call to cuModuleLoadDataEx.\n'
                   "ok\n" + CLEAN_END.format(n=1))
        passed, verdict, problems = run("cuda_driver-kernels", wrapped)
        self.assertTrue(passed, problems)
        self.assertIn("1 expected API errors", verdict)
        older = (BANNER + "test vector_add ... "
                 "========= Program hit invalid copy direction for memcpy (error 21) on CUDA API call to cudaMemcpy.\n"
                 "ok\n" + CLEAN_END.format(n=1))
        passed, _, problems = run("cuda_driver-kernels", older)
        self.assertFalse(passed)
        self.assertIn("unexpected API error in test vector_add: cudaMemcpy returned invalid copy direction for memcpy ()",
                      problems)

    def test_device_access_errors_fail_with_their_details(self):
        text = (BANNER + "test vector_add ... "
                "========= Invalid __global__ write of size 4 bytes\n"
                "=========     at vector_add+0x90\n"
                "=========     by thread (255,0,0) in block (3,0,0)\n"
                "=========     Address 0x7f1c00000400 is out of bounds\n"
                "ok\n" + CLEAN_END.format(n=1))
        passed, _, problems = run("cuda_driver-kernels", text)
        self.assertFalse(passed)
        self.assertEqual(problems, ["memcheck finding in test vector_add: Invalid __global__ write of size 4 bytes | "
                                    "at vector_add+0x90 | by thread (255,0,0) in block (3,0,0) | "
                                    "Address 0x7f1c00000400 is out of bounds"])

    def test_races_and_barrier_errors_fail(self):
        race = (BANNER + "========= Error: Race reported between Write access at reduce+0x1a0\n"
                "=========     and Read access at reduce+0x1c0 [4 hazards]\n"
                "========= RACECHECK SUMMARY: 1 hazard displayed (1 error, 0 warnings)\n"
                "========= ERROR SUMMARY: 1 error\n")
        passed, verdict, problems = run("cuda_driver-kernels", race, tool="racecheck")
        self.assertFalse(passed)
        self.assertIn("racecheck: 1 hazards (1 errors, 0 warnings)", problems)
        self.assertIn("racecheck finding in test -: Error: Race reported between Write access at reduce+0x1a0 | "
                      "and Read access at reduce+0x1c0 [4 hazards]", problems)
        clean = BANNER + "========= RACECHECK SUMMARY: 0 hazards displayed (0 errors, 0 warnings)\n"
        self.assertTrue(run("cuda_driver-kernels", clean, tool="racecheck")[0], "racecheck prints no ERROR SUMMARY")
        hazard = (BANNER + "========= Warning: (Warp Level Programming) Potential RAW hazard detected at __shared__ "
                  "0x8c in block (0,0,0) :\n=========     Write Thread (35,0,0) at sumKernel+0x90\n"
                  "========= RACECHECK SUMMARY: 1 hazard displayed (0 errors, 1 warning)\n")
        self.assertFalse(run("cuda_driver-kernels", hazard, tool="racecheck")[0])
        barrier = (BANNER + "========= Barrier error detected. Divergent thread(s) in warp\n"
                   "=========     at block_sum+0x70\n========= ERROR SUMMARY: 1 error\n")
        self.assertFalse(run("cuda_driver-kernels", barrier, tool="synccheck")[0])

    def test_leaks_fail_unless_listed_and_the_exit_test_needs_a_zero_summary(self):
        leaked = (BANNER + "test keeps ... ok\n"
                  "========= Leaked 8388608 bytes at 0x7f2a40000000\n"
                  "=========     Saved host backtrace up to driver entry point at allocation time\n"
                  "========= LEAK SUMMARY: 8388608 bytes leaked in 1 allocations\n"
                  "========= ERROR SUMMARY: 1 error\n")
        passed, _, problems = run("cuda_driver-kernels", leaked)
        self.assertFalse(passed)
        self.assertIn("leaked 8388608 bytes at exit", problems)
        documented = (BANNER + "========= Leaked 1,024 bytes at 0x7879c0800000\n"
                      "=========     Saved host backtrace up to driver entry point at allocation time\n"
                      "=========         Host Frame: cudaMalloc [0x56624] in memcheck_demo\n=========\n"
                      "========= LEAK SUMMARY: 1024 bytes leaked in 1 allocations\n========= ERROR SUMMARY: 1 errors\n")
        passed, _, problems = run("cuda_driver-kernels", documented)
        self.assertIn("leaked 1024 bytes at exit", problems)
        self.assertTrue(run("cuda_driver-memory", documented)[0], "a listed binary's leaks are not findings")
        passed, verdict, problems = run("cuda_driver-memory", leaked)
        self.assertTrue(passed, problems)
        self.assertIn("leaks 8388608 bytes in 1 allocations (reported only)", verdict)
        self.assertFalse(run("exit_release", leaked)[0])
        self.assertTrue(run("exit_release", BANNER + "exit_release: all results correct\n" + CLEAN_END.format(n=0))[0])
        no_summary = BANNER + "========= ERROR SUMMARY: 0 errors\n"
        passed, _, problems = run("exit_release", no_summary)
        self.assertFalse(passed)
        self.assertIn("no LEAK SUMMARY line", problems[0])
        self.assertTrue(run("cuda_driver-kernels", no_summary)[0], "leaks are only summarised by memcheck's check")

    def test_a_run_that_did_not_finish_or_failed_its_tests_fails(self):
        self.assertFalse(run("cuda_driver-kernels", BANNER + "test a ... ")[0])
        self.assertFalse(run("cuda_driver-kernels", "error: unknown option --leak-chek\n")[0])
        text = BANNER + "test a ... FAILED\n========= Target application returned an error\n" + CLEAN_END.format(n=0)
        passed, _, problems = run("cuda_driver-kernels", text, exit_code=101)
        self.assertFalse(passed)
        self.assertEqual(problems, ["the program failed under the sanitizer (exit code 101); failed tests: a"])
        passed, _, problems = run("cuda_driver-kernels", BANNER + CLEAN_END.format(n=0), exit_code=124)
        self.assertIn("timed out", problems[0])

    def test_unknown_records_are_findings(self):
        text = BANNER + "========= Internal Sanitizer Error: something\n" + CLEAN_END.format(n=0)
        passed, _, problems = run("cuda_driver-kernels", text)
        self.assertFalse(passed)
        self.assertIn("Internal Sanitizer Error", problems[0])

    def test_a_program_that_never_used_cuda_is_no_finding(self):
        # As the H200 printed it: the notice ends the log, with no ERROR SUMMARY after it.
        text = (BANNER + "running 1 test\ntest a ... ok\n"
                "========= Target application terminated before first instrumented API call\n")
        passed, verdict, problems = run("cuda_driver-kernels", text)
        self.assertTrue(passed, problems)
        self.assertIn("no CUDA call made", verdict)
        passed, _, problems = run("cuda_driver-kernels", BANNER + "running 1 test\ntest a ... ok\n")
        self.assertFalse(passed)
        self.assertIn("did not run to the end", problems[0])

    def test_a_count_above_what_was_printed_is_noted(self):
        passed, verdict, _ = run("cuda_driver-kernels", BANNER + CLEAN_END.format(n=3))
        self.assertTrue(passed)
        self.assertIn("the sanitizer counted 3 errors, 0 printed", verdict)

    def test_bad_rows_are_refused(self):
        with self.assertRaises(ValueError):
            check.Expected("api cuda_core-gpu * cuMemAlloc CUDA_ERROR_OUT_OF_MEMORY spaces, not tabs")
        with self.assertRaises(ValueError):
            check.Expected("allow\t*\t*\tcuX\tY\twhy")


class Planning(unittest.TestCase):
    MANIFEST = "\n".join([
        "# kind\tname\tpackage folder",
        "test\tcuda_driver-kernels\tcuda-driver",
        "test\tcuda_driver-overlap\tcuda-driver",
        "test\tcuda_driver-drop_errors\tcuda-driver",
        "test\ttests-fake_driver\ttests",
        "test\tcuda_core-lib\tcuda-core",
        "example\texit_release\tcuda-core",
        "bench\tbench-sys\tbenches",
        "file\tFAKECUDA_PATH-libfakecuda.so\t/x/libfakecuda.so",
    ])

    def test_runs_follow_the_tools_and_skips(self):
        lines = check.plan(check.Expected(EXPECTED), self.MANIFEST)
        runs = [l for l in lines if not l.startswith("#")]
        self.assertEqual(runs, [
            "cuda_driver-kernels\ttest\tmemcheck\tshared\t-",
            "cuda_driver-kernels\ttest\tracecheck\tshared\t-",
            "cuda_driver-overlap\ttest\tmemcheck\talone\t-",
            "cuda_driver-overlap\ttest\tracecheck\talone\t-\tasync_copies_overlap",
            "cuda_core-lib\ttest\tmemcheck\tshared\t-",
            "exit_release\texample\tmemcheck\tshared\t--detect-missing-module-unload",
        ])
        notes = [l for l in lines if l.startswith("#")]
        self.assertIn("# tests-fake_driver (the stand-in driver)", notes)
        self.assertIn("# cuda_driver-drop_errors under memcheck (faults on purpose)", notes)

    def test_unknown_tools_are_refused(self):
        with self.assertRaises(ValueError):
            check.plan(check.Expected("tools\t*\t-\tmemchek\t-\ttypo"), self.MANIFEST)

    def test_the_shipped_list_parses_and_plans(self):
        here = os.path.dirname(os.path.abspath(__file__))
        with open(os.path.join(here, "expected.tsv")) as f:
            expected = check.Expected(f.read())
        lines = check.plan(expected, self.MANIFEST)
        self.assertIn("exit_release\texample\tmemcheck\tshared\t--detect-missing-module-unload", lines)
        self.assertEqual(expected.leak_policy("exit_release"), "zero")

    def test_the_shipped_list_runs_the_new_gpu_binaries(self):
        here = os.path.dirname(os.path.abspath(__file__))
        with open(os.path.join(here, "expected.tsv")) as f:
            expected = check.Expected(f.read())
        names = ["cuda_core-axes_gpu", "cuda_core-scan_gpu", "cuda_core-select_gpu", "cuda_core-sort_gpu",
                 "cuda_core-search_gpu", "cuda_core-dense_contract_gpu", "cuda_core-matmul_replay_gpu",
                 "cuda_core-graph_builder_gpu",
                 "cuda_libs-no_hidden_capture_gpu", "cuda_driver-cross_stream_order", "tests-nccl_views_gpu",
                 "tests-algorithm_failure_points"]
        manifest = "\n".join(f"test\t{name}\t{name.split('-')[0]}" for name in names)
        runs = {tuple(l.split("\t")[:3]) for l in check.plan(expected, manifest) if not l.startswith("#")}
        for name in names[:-1]:
            self.assertIn((name, "test", "memcheck"), runs, name)
        for name in names[:5]:
            self.assertIn((name, "test", "racecheck"), runs, name)
            self.assertIn((name, "test", "synccheck"), runs, name)
        # a binary of the tests package on the real driver is matched before the stand-in's rows
        self.assertNotIn(("tests-nccl_views_gpu", "test", "racecheck"), runs)
        # the stand-in's binaries are not run
        self.assertFalse([r for r in runs if r[0] == "tests-algorithm_failure_points"])


if __name__ == "__main__":
    unittest.main()
