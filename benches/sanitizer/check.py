"""Plans the `run.sh sanitize` runs and checks their compute-sanitizer logs against the list of
expected findings (expected.tsv, next to this file).

Usage:
  python3 check.py plan EXPECTED.tsv MANIFEST.tsv
      one line per run: NAME<TAB>KIND<TAB>TOOL<TAB>shared|alone<TAB>EXTRA OPTIONS ('-': none)<TAB>TEST
      TO SKIP<TAB>...; then, on lines that start with '#', the binaries and tests not run and why
  python3 check.py check EXPECTED.tsv NAME TOOL EXIT_CODE LOG
      prints a verdict line ("PASS ..." or "FAIL ...") and, for a failure, why; exits 0 or 1

The log is what compute-sanitizer and the program printed together (one stream, tests run with
--test-threads=1). compute-sanitizer's own lines start with "========= " (its default prefix);
a record is a line whose text after the prefix does not start with a space, the indented lines
after it belong to it. What a record says decides:

  COMPUTE-SANITIZER                         the banner
  Program hit CODE (error N) due to "DESCRIPTION" on CUDA API call to CALL.
                                            an API error: it passes if a row of EXPECTED.tsv
                                            matches the run's binary, the test running, CALL and CODE
  Leaked N bytes at 0xADDRESS               a device allocation still held at exit (memcheck --leak-check full)
  LEAK SUMMARY: N bytes leaked in M allocations
  ERROR SUMMARY: N errors                   the count of all findings (API errors and leaks included)
  RACECHECK SUMMARY: N hazards displayed (E errors, W warnings)
                                            racecheck's summary (it may print no ERROR SUMMARY)
  Target application returned an error     the program's exit code, judged from EXIT_CODE
  anything else                             a finding: an invalid access, a race, a barrier or
                                            initialisation error, a tool error: the run fails

The test running is the last "test NAME ... " line libtest printed before the record ('-' after
libtest's "test result" line, and in examples). A record may follow that text on the same line,
since libtest prints the result only when the test ends. An API error also matches the rows of
the test before, since the sanitizer (another process) may print its report after the next test
started.
"""

import fnmatch
import re
import sys

# compute-sanitizer's line prefix (then one space before a record, more before its details).
PREFIX = "========="
# run.sh's --print-limit: a log with this many records may have lost some.
PRINT_LIMIT = 10000
TOOLS = ("memcheck", "racecheck", "synccheck", "initcheck")

# "Program hit CUDA_ERROR_X (error N) due to "DESCRIPTION" on CUDA API call to cuX." (older
# versions: "Program hit DESCRIPTION (error N) on CUDA API call to cuX.").
API_ERROR = re.compile(r'Program hit (?P<code>.+?)(?: \(error \d+\))?(?: due to "(?P<description>.*)")?'
                       r" on CUDA API call to (?P<call>[A-Za-z0-9_]+)")
LEAKED = re.compile(r"Leaked ([\d,]+) bytes? at (0x[0-9a-fA-F]+)")
LEAK_SUMMARY = re.compile(r"LEAK SUMMARY: ([\d,]+) bytes? leaked in ([\d,]+) allocations?")
ERROR_SUMMARY = re.compile(r"ERROR SUMMARY: ([\d,]+) errors?")
RACE_SUMMARY = re.compile(r"RACECHECK SUMMARY: ([\d,]+) hazards? displayed \(([\d,]+) errors?, ([\d,]+) warnings?\)")
TEST_START = re.compile(r"^test (\S+) \.\.\. ?(ok|FAILED|ignored)?")
# A result printed after sanitizer records broke the test's line: alone at the start of a line.
LATE_RESULT = re.compile(r"^(ok|FAILED|ignored)\b")
# After libtest's last line, records (leaks, errors at exit) belong to no test.
TESTS_DONE = re.compile(r"^test result: ")


class Expected:
    """The rows of expected.tsv: KIND, BINARY, TEST, DETAIL, CODE, WHY (tab-separated; '#' comments).

    api    BINARY TEST CALL  CODE  an API error the test causes on purpose (or the library's probes)
    skip   BINARY TEST TOOLS -     not run under these tools (comma-separated, or '*'); TEST '*': the binary
    tools  BINARY -    TOOLS -     the tools a binary runs under ('-': none); default memcheck
    leaks  BINARY -    -     -     leaks at exit are reported, not failed
    no-leaks BINARY -  -     -     the leak summary must be present and say 0 bytes
    alone  BINARY -    -     -     runs with no other run beside it (it measures the device's free memory)

    BINARY, TEST, CALL and CODE are shell-style patterns ('*' matches anything)."""

    KINDS = ("api", "skip", "tools", "leaks", "no-leaks", "alone")

    def __init__(self, text):
        self.rows = []
        for number, line in enumerate(text.splitlines(), 1):
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            fields = [f.strip() for f in line.split("\t") if f.strip()]
            if len(fields) < 6 or fields[0] not in self.KINDS:
                raise ValueError(f"expected.tsv line {number}: want KIND BINARY TEST DETAIL CODE WHY "
                                 f"(kind one of {', '.join(self.KINDS)}), got {line!r}")
            self.rows.append(fields[:5] + ["\t".join(fields[5:])])

    def _rows(self, kind, binary):
        return [r for r in self.rows if r[0] == kind and fnmatch.fnmatchcase(binary, r[1])]

    def tools(self, binary):
        """The tools `binary` (a test binary or an example) runs under, and the row's reason."""
        rows = self._rows("tools", binary)
        if not rows:
            return ["memcheck"], "the default"
        listed = rows[0][3]
        return ([] if listed == "-" else [t for t in listed.split(",") if t]), rows[0][5]

    def skips(self, binary, tool):
        """The tests of `binary` not run under `tool` ('*' for all of them)."""
        return [r[2] for r in self._rows("skip", binary) if r[3] == "*" or tool in r[3].split(",")]

    def skip_reason(self, binary, tool):
        for r in self._rows("skip", binary):
            if r[2] == "*" and (r[3] == "*" or tool in r[3].split(",")):
                return r[5]
        return None

    def api_expected(self, binary, test, call, code):
        return any(fnmatch.fnmatchcase(test, r[2]) and fnmatch.fnmatchcase(call, r[3]) and fnmatch.fnmatchcase(code, r[4])
                   for r in self._rows("api", binary))

    def alone(self, binary):
        return bool(self._rows("alone", binary))

    def leak_policy(self, binary):
        """'zero' (must show 0 bytes), 'report' (tolerated) or 'fail' (any leak fails)."""
        if self._rows("no-leaks", binary):
            return "zero"
        return "report" if self._rows("leaks", binary) else "fail"


class Log:
    """What one run printed, sorted into the sanitizer's records and libtest's results."""

    def __init__(self, text):
        self.api_errors = []  # (test, code, call, description, the test before)
        self.leaks = []  # bytes of each "Leaked" record
        self.leak_summaries = []  # (bytes, allocations)
        self.error_counts = []  # ERROR SUMMARY numbers
        self.hazards = []  # (hazards, errors, warnings)
        self.findings = []  # (test, record text with its indented lines)
        self.notices = 0  # records that are no finding (a program that never used CUDA)
        self.banners = 0
        self.passed, self.failed = [], []
        test, before = "-", "-"
        pending = None  # a test whose result is not printed yet
        records = []  # (test, the test before it, [head, indented lines...])
        for raw in text.splitlines():
            at = raw.find(PREFIX)
            program, record = (raw, None) if at < 0 else (raw[:at], raw[at + len(PREFIX):])
            started = TEST_START.match(program)
            late = LATE_RESULT.match(program) if pending else None
            if started:
                test, before = started.group(1), test
                pending = None if started.group(2) else test
                self._result(test, started.group(2))
            elif late:
                self._result(pending, late.group(1))
                pending = None
            elif TESTS_DONE.match(program):
                test, before = "-", test
            if record is None or not record.strip():
                continue
            if record.startswith("  ") and records:
                records[-1][2].append(record.strip())
            else:
                records.append((test, before, [record.strip()]))
        for test, previous, lines in records:
            self._classify(test, previous, lines)

    def _classify(self, test, previous, lines):
        head, joined = lines[0], " ".join(lines)
        if head == "COMPUTE-SANITIZER":
            self.banners += 1
        elif head.startswith("Program hit") and (m := API_ERROR.search(joined)):
            # The whole record: a long message may go on over an indented line.
            self.api_errors.append((test, m.group("code"), m.group("call"), m.group("description") or "", previous))
        elif m := LEAKED.search(head):
            self.leaks.append(number(m.group(1)))
        elif m := LEAK_SUMMARY.search(head):
            self.leak_summaries.append((number(m.group(1)), number(m.group(2))))
        elif m := ERROR_SUMMARY.search(head):
            self.error_counts.append(number(m.group(1)))
        elif m := RACE_SUMMARY.search(head):
            self.hazards.append(tuple(number(g) for g in m.groups()))
        elif head.startswith("Target application terminated before first instrumented API call"):
            # A program that never used CUDA (a test binary of host-side code): a notice.
            self.notices += 1
        elif not head.startswith("Target application returned an error"):
            self.findings.append((test, lines))

    def _result(self, test, result):
        if result == "ok":
            self.passed.append(test)
        elif result == "FAILED":
            self.failed.append(test)

    def leaked_bytes(self):
        if self.leak_summaries:
            return sum(b for b, _ in self.leak_summaries)
        return sum(self.leaks)


def number(text):
    """A count as the sanitizer prints it, maybe with thousands separators ("1,024")."""
    return int(text.replace(",", ""))


def check(expected, name, tool, exit_code, text):
    """(passed, verdict line, detail lines) for one run's log."""
    log = Log(text)
    problems, notes = [], []
    # The report of an error can trail its test's end: the test before the one running also counts.
    unexpected = [e for e in log.api_errors
                  if not any(expected.api_expected(name, test, e[2], e[1]) for test in (e[0], e[4]))]
    for test, code, call, description, _ in unexpected:
        problems.append(f"unexpected API error in test {test}: {call} returned {code} ({description})")
        problems.append(f"  if the test causes it on purpose, add to expected.tsv:  "
                        f"api\t{name}\t{test}\t{call}\t{code}\tWHY")
    for test, lines in log.findings:
        problems.append(f"{tool} finding in test {test}: " + " | ".join(lines[:4]))
    for hazards, errors, warnings in log.hazards:
        if hazards or errors or warnings:
            problems.append(f"racecheck: {hazards} hazards ({errors} errors, {warnings} warnings)")
    # A program that never used CUDA ends with the notice alone, no summary (seen on the H200).
    if log.banners == 0 or not (log.error_counts or log.hazards or log.notices):
        problems.append("no COMPUTE-SANITIZER banner, or no ERROR SUMMARY (RACECHECK SUMMARY for racecheck): "
                        "the sanitizer did not run to the end")
    printed = len(log.api_errors) + len(log.leaks) + len(log.findings)
    if printed >= PRINT_LIMIT:
        problems.append(f"{printed} records: the print limit ({PRINT_LIMIT}) may have hidden others")
    if sum(log.error_counts) != printed:
        notes.append(f"the sanitizer counted {sum(log.error_counts)} errors, {printed} printed")
    if exit_code != 0:
        why = "timed out" if exit_code in (124, 137) else f"exit code {exit_code}"
        failed = f"; failed tests: {', '.join(log.failed)}" if log.failed else ""
        problems.append(f"the program failed under the sanitizer ({why}){failed}")
    leaked = log.leaked_bytes()
    if tool == "memcheck":
        policy = expected.leak_policy(name)
        if policy == "zero" and not log.leak_summaries:
            problems.append("no LEAK SUMMARY line: the leak check did not report (--leak-check full?)")
        elif policy != "report" and (leaked or log.leaks):
            for size in log.leaks:
                problems.append(f"leaked {size} bytes at exit")
            problems.append(f"leak summary: {leaked} bytes (leaks fail this binary; expected.tsv can list it "
                            "under 'leaks' if the tests keep memory on purpose)")
        notes.append(f"leaks {leaked} bytes in {len(log.leaks)} allocations"
                     + (" (reported only)" if policy == "report" and leaked else ""))
    counts = f"{len(log.passed)} tests passed, {len(log.failed)} failed; " if log.passed or log.failed else ""
    if log.notices:
        notes.append("no CUDA call made (nothing to check)")
    summary = (f"{counts}{len(log.api_errors) - len(unexpected)} expected API errors, "
               f"{len(unexpected)} unexpected, {len(log.findings)} findings" + "".join(f", {n}" for n in notes))
    verdict = "FAIL" if problems else "PASS"
    return not problems, f"{verdict} {tool:<9} {name}: {summary}", problems


def plan(expected, manifest):
    """The runs (name, kind, tool, shared or alone, an extra sanitizer option or '-', tests to
    skip) for the manifest's test binaries and examples, then '#' lines for what is not run."""
    runs, notes = [], []
    for line in manifest.splitlines():
        fields = line.split("\t")
        if line.startswith("#") or len(fields) < 2 or fields[0] not in ("test", "example"):
            continue
        kind, name = fields[0], fields[1]
        tools, why = expected.tools(name)
        if not tools:
            notes.append(f"# {name} ({why})")
        for tool in tools:
            if tool not in TOOLS:
                raise ValueError(f"expected.tsv names an unknown tool {tool!r} for {name}")
            reason = expected.skip_reason(name, tool)
            if reason is not None:
                notes.append(f"# {name} under {tool} ({reason})")
                continue
            skips = expected.skips(name, tool) if kind == "test" else []
            # Where nothing may be left at exit, modules left loaded are reported too.
            extra = "--detect-missing-module-unload" if tool == "memcheck" and expected.leak_policy(name) == "zero" else "-"
            runs.append("\t".join([name, kind, tool, "alone" if expected.alone(name) else "shared", extra] + skips))
    return runs + notes


def main(argv):
    if len(argv) == 4 and argv[1] == "plan":
        with open(argv[2]) as e, open(argv[3]) as m:
            print("\n".join(plan(Expected(e.read()), m.read())))
        return 0
    if len(argv) == 7 and argv[1] == "check":
        with open(argv[2]) as e, open(argv[6], errors="replace") as log:
            passed, verdict, problems = check(Expected(e.read()), argv[3], argv[4], int(argv[5]), log.read())
        print(verdict)
        for problem in problems[:40]:
            print("    " + problem)
        if len(problems) > 40:
            print(f"    ... and {len(problems) - 40} more (see the log)")
        return 0 if passed else 1
    print(__doc__.split("\n\n")[1], file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
