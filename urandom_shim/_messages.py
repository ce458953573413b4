"""One-line diagnostics on stderr.

Every message the shim prints starts with ``urandom-shim:`` and fits on one line, so that it reads well in a journal
and greps well across a fleet. Printing must never fail: a closed or missing stderr is not our problem to report.
Messages are bounded in length (:data:`MAX_LINE`) and, for configuration problems, in number (:func:`bounded`), so
that no file or variable, however large, can flood a log.

Below the functions is the catalogue: the template of every message a user can see, by name, grouped by the module
that uses it, filled in there with ``str.format``. ``docs/reference/messages.md`` explains each one, and
``tests/test_docs.py`` checks the page against this catalogue. (The two start-up files outside the package,
``_urandom_shim_boot.py`` and ``sitecustomize.py``, keep their few messages: they must not import the package.)

One piece, though over 500 lines: the catalogue is one file, as CONTRIBUTING and the messages page's check name it.
"""

import sys

PREFIX = "urandom-shim: "
#: The longest line the shim prints, prefix included. Values inside messages are already cut to about 80 characters;
#: this is the bound for everything else (a path of 4096 characters, say).
MAX_LINE = 1000
#: The most configuration problems printed at once; past that, one line says how many more there are.
MAX_LINES = 10


def printable(text: str) -> str:
    """``text`` with every character that is not printable (a newline, a terminal escape) written as its escape."""
    if text.isprintable():
        return text
    return "".join(char if char.isprintable() else repr(char)[1:-1] for char in text)


def line(text: str) -> str:
    """``text`` as one ``urandom-shim:`` line: one line, no terminal escape sequences and at most :data:`MAX_LINE`
    characters, whatever a value or a path in it holds."""
    text = printable(text)
    if len(text) > MAX_LINE - len(PREFIX):
        text = text[: MAX_LINE - len(PREFIX) - 1] + "…"
    return PREFIX + text


def emit(text: str) -> None:
    """Write one ``urandom-shim:`` line to stderr, whatever state stderr is in."""
    stream = sys.stderr
    if stream is None:  # pythonw, daemons with closed descriptors
        return
    try:
        stream.write(line(text) + "\n")
        stream.flush()
    except Exception:  # noqa: BLE001 - a broken stderr must not break the interpreter
        pass


def bounded(problems: "list[str]") -> "list[str]":
    """``problems`` as printed: at most :data:`MAX_LINES` lines, the last of which counts the ones left out."""
    if len(problems) <= MAX_LINES:
        return problems
    return [*problems[: MAX_LINES - 1], MORE_PROBLEMS.format(hidden=len(problems) - (MAX_LINES - 1))]


def report_failure(exc: "BaseException") -> None:
    """The shim failed inside an interpreter: one line (the traceback too under ``URANDOM_SHIM_DEBUG``), and the
    interpreter carries on with its own ``os.urandom()``."""
    import os

    if os.environ.get("URANDOM_SHIM_DEBUG", "") not in ("", "0"):
        import traceback

        traceback.print_exception(type(exc), exc, exc.__traceback__)
    emit(ACTIVATION_FAILED.format(name=type(exc).__name__, exc=exc))


# -- the messages of this module -----------------------------------------------------------------------------------

MORE_PROBLEMS = "{hidden} more configuration problems are not shown; `urandom-shim check --json` lists them all."
ACTIVATION_FAILED = (
    "not active in this interpreter: activation failed ({name}: {exc}); the interpreter carries on with its own "
    "os.urandom(). Rerun with URANDOM_SHIM_DEBUG=1 for the traceback, or set URANDOM_SHIM_DISABLE=1 to silence this."
)


# -- finding and reading configuration files (_sources) --------------------------------------------------------------

RULE_MODULE_NOT_ON_PATH = "the current directory ({module} was not found on sys.path)"
CWD_GONE = "the current directory no longer exists; ignoring project settings."
FILE_IS_A_DIRECTORY = "{label}: is a directory, not a TOML file; {ending}"
FILE_PERMISSION_DENIED = "{label}: permission denied while reading it; {ending}"
FILE_TOO_LARGE = "{label}: is larger than {kib} KiB, too big for a configuration file; {ending}"
RULE_LAUNCHER_TARGET_NOT_ON_PATH = "the launcher's directory ({target} is not on sys.path)"
RULE_EDITABLE_HOOK = "{how}: the module's package, {anchor}, where the editable install's import hook {hook} maps it"
ARGV_NOT_A_LIST = "sys.argv is {what}; looking for pyproject.toml from the current directory."
ARGV0_NOT_A_STRING = "sys.argv[0] is {first!r}, not a string; looking for pyproject.toml from {cwd}."
ARGV0_MISSING = "sys.argv[0] names {first!r}, which does not exist; looking for pyproject.toml from {dirname}."
NEAR_MISS_TABLE = (
    "{path}: has a table [tool.{missed}], which urandom-shim does not read: did you mean [tool.urandom-shim]? "
    "Ignoring it."
)
TABLE_NOT_A_TABLE = (
    "{label}: is a {name} ({table}), but it must be a table: write [tool.urandom-shim] with keys below it; ignoring it."
)
FILE_NOT_UTF8 = "{label}: is not UTF-8 (byte {start}); TOML files must be UTF-8; {ending}"
TOMLI_MISSING = "{label}: cannot be read because tomli is not installed (pip install tomli); {ending}"
RULE_MODULE_NAME_UNKNOWN = "{how}: the current directory (the module name is not known)"
RULE_C_STDIN_REPL = "-c, stdin or the REPL: the current directory"
RULE_DIRECTORY = "a directory: the directory itself"
RULE_SCRIPT = "a script: the directory holding it"
PROJECT_SEARCH_DENIED = "cannot look for pyproject.toml in {directory} (permission denied); ignoring project settings."
PYPROJECT_UNREADABLE = "{candidate}: cannot be read ({reason}); ignoring project settings."
PROJECT_NOT_OWNED = (
    "{path}: owned by uid {uid}, neither you nor root, so another user could choose this program's settings; ignoring "
    "project settings. Move the project out of a shared directory, or set the policy in the environment's or the "
    "machine's file."
)
PROJECT_DIRECTORY_SHARED = (
    "{path}: everyone may write to this directory (no sticky bit), so another user could choose this program's "
    "settings; ignoring project settings. Move the project out of it, or set the policy in the environment's or the "
    "machine's file."
)


# -- configuration values, precedence and the floor (_config) --------------------------------------------------------

FLOOR_ENDING = (
    "ignoring its settings, and reading it as allow_weak = false, the safe choice for a file that may set a floor."
)
UNKNOWN_KEYS = "unknown keys {shown}{more} (valid keys are {valid}); ignoring them."
NOTE_IGNORED_UNDER_E = "ignored: Python runs with -E or -I"
INVALID_VALUE_IGNORED = (
    "{what} is not a valid {key}; expected {expected}{hint}; ignoring it, so {key} is {instead} from {source}."
)
WHITESPACE_HINT = " (it has whitespace before or after it; did you mean {stripped!r}?)"
UNKNOWN_KEY = "unknown key {shown}{hint} (valid keys are {valid}); ignoring it."
FLOOR_UNUSABLE = "unusable, read as allow_weak = false"
EXPECTED_SECONDS = "a finite number of seconds >= 0, or 'none'"
EXPECTED_EVENTS_PATH = (
    "an absolute path of at most 1024 characters (such as '/run/urandom-shim/events.jsonl'), or 'none'"
)
EVENTS_RELATIVE_HINT = (
    " (every process of the machine appends to one file, so it must not depend on the current directory)"
)
FLOOR_NOT_A_BOOLEAN = (
    "{label}: allow_weak = {value} is not valid; expected true or false; reading it as allow_weak = false, the "
    "safe choice."
)
LEGACY_BELOW_FLOOR = (
    "policy 'legacy' from {policy_source} is below the floor set by {floor}, which forbids weak bytes; using "
    "'pep524' instead."
)
#: The source of the policy a floor gives PyPy in place of 'native' (status and check show it; nothing is printed at
#: start, as nothing is wrong with the configuration).
NATIVE_LIFTED_ON_PYPY = (
    "{floor}, instead of 'native' from {policy_source}: PyPy's own os.urandom() reads /dev/urandom, which returns "
    "bytes without waiting for the CRNG before Linux 5.18"
)
FALLBACK_BELOW_FLOOR = (
    "on_timeout 'fallback' from {on_timeout_source} is below the floor set by {floor}, which forbids weak bytes; "
    "using 'raise' instead."
)
RULES_NOT_AN_ARRAY = (
    "{label}: program = {rules} is not valid; expected an array of tables, written [[program]] with match = 'glob' "
    "and settings below it; ignoring the rules."
)
LABEL_MACHINE_FILE_FOR_FLOOR = "{machine_file} (machine file, for its floor)"
FLOOR_FROM_UNUSABLE_FILE = "{label} (unusable, read as allow_weak = false)"
NOTE_NOT_VALID = "{key} = {raw} is not valid (see problems)"
RULE_NOT_A_TABLE = "{label}: is a {name} ({rule}), not a table with match = 'glob' and settings; ignoring this rule."
RULE_BAD_MATCH = (
    "{label}: {given}; expected a glob of at most {max_match} characters on a script's file name or an -m module's "
    "name, such as 'cron-helper*'; ignoring this rule."
)
NOTE_RULE_MATCHES = "[[program]] #{value} match = {pattern!r} matches {program!r}"
MISSPELT_VARIABLE = (
    "environment variable {variable} is not one the shim reads, so it changes nothing (did you mean {best!r}?); "
    "ignoring it."
)
MACHINE_FILE_MISSING = (
    "{variable} names {path!r}, which does not exist: no machine file is read but {machine_file}; create the file, "
    "or unset the variable."
)
#: The call site of an event about ``random`` imported before the shim started (urandom_shim._events.BEFORE_START).
CALLER_BEFORE_START = "<start-up, before urandom-shim>"
EVENTS_DIRECTORY_MISSING = (
    "{source} names the events file {path!r}, whose directory {why}, so no event is written; the shim never "
    "creates it: create it at boot (systemd-tmpfiles, see docs/reference/events.md), or choose another path."
)
BAD_VARIABLE = "environment variable {variable}={raw} is not a valid {key}; expected {expected}{hint}; ignoring it."
NOTE_ONLY_FLOOR = "only its floor counts, because {env_machine} moved the machine file"
NOTE_FLOOR = "{floor}: a floor, no source may choose weak bytes"
ADMIN_KEY_OUT_OF_PLACE = (
    "{label}: unknown key {key!r} (it is only honoured in the environment's and the machine's files); ignoring it."
)
NOTE_NO_TABLE = "no such table in the nearest pyproject.toml"
RULE_BAD_VALUE = (
    "{source}: {key} = {value} is not a valid {key}; expected {expected}{hint}; the rule will ignore it when it "
    "matches."
)


# -- the pytest plugin (pytest_plugin/) -----------------------------------------------------------------------------

PLUGIN_HEADER = "urandom-shim: every test runs under {runs} with an unready kernel CRNG (simulated){bound}"
PLUGIN_HEADER_REPORT_ONLY = "; report-only: every call behaves as native, and the summary says what the policy would do"
PLUGIN_HEADER_EXEMPT = "; {count} node-id pattern(s) exempt"
RULE_PYTEST_CONFIG_FILE = "pytest: the directory of its configuration file, {inipath}"
PLUGIN_TIMEOUT_WITHOUT_POLICY = (
    "urandom-shim: --urandom-timeout (or the ini key urandom_timeout) applies only to the whole-suite mode of "
    "--urandom-policy; give a policy too, or set timeout= on @pytest.mark.urandom or urandom_policy()"
)
PLUGIN_REPORT_ONLY_WITHOUT_POLICY = (
    "urandom-shim: --urandom-report-only (or urandom_report_only) needs --urandom-policy: the policy whose effect "
    "the report describes"
)
PLUGIN_EXEMPT_WITHOUT_POLICY = (
    "urandom-shim: --urandom-exempt exempts tests from --urandom-policy, which is not given; give a policy too, or "
    "drop the option (a test without the marker runs with the kernel ready anyway)"
)
PLUGIN_REPORT_PATH = (
    "urandom-shim: --urandom-report={path!r} can't be written: give the path of a file in a directory that exists"
)
PLUGIN_UNKNOWN_OPTIONS = "{origin} got unknown option(s) {unknown}; valid: {listed}"
PLUGIN_MARKER_POSITIONALS = (
    "{marker} takes at most one positional argument, the policy; got {count}: {listed}. Give the options by name, "
    "as in @pytest.mark.urandom('pep524', timeout=2)."
)
PLUGIN_POLICY_TWICE = "{marker} got the policy twice, by position and as policy="
# A wait that nothing will end, in the test's own process.
PLUGIN_WAIT_ENDED = (
    "urandom-shim: {call} at {caller}{via} {waited_for} the simulated kernel CRNG: {why} (under "
    "{policy_phrase}). {remedies}"
)
PLUGIN_SOME_CALL = "a call for randomness"
PLUGIN_REACHED_FROM = " (reached from {line}, in your code)"
PLUGIN_WAITS_FOREVER = "would wait forever for"
PLUGIN_WAITED_THE_BOUND = "waited {waited:.1f} s (the plugin's bound) for"
PLUGIN_TIMER_PENDING = "system_rng.ready_after() has not made it ready yet"
PLUGIN_NO_THREAD_MADE_READY = "no other thread of the test has called system_rng.ready()"
PLUGIN_NOTHING_MAKES_READY = "nothing in this test will ever make it ready"
PLUGIN_TRACEBACK = "Traceback to the call (most recent call last):"
PLUGIN_REMEDY_READY_KERNEL = "mark the test @pytest.mark.urandom(unready=False) if it needs the kernel ready"
PLUGIN_REMEDY_OTHER_POLICY = "mark it with a policy under which this call does not wait ({policies})"
PLUGIN_REMEDY_READY_AFTER = "call system_rng.ready_after(SECONDS) before the call"
PLUGIN_REMEDY_TIMEOUT = (
    "give waits a timeout (--urandom-timeout=SECONDS, or timeout=SECONDS on the marker or urandom_policy()), after "
    "which the call raises BlockingIOError"
)
PLUGIN_REMEDY_EXEMPT = "exempt it: --urandom-exempt='{nodeid}', or the ini key urandom_exempt"
# A child process of the test that died of the policy.
PLUGIN_CHILD_DIED = (
    "urandom-shim: the test's child process `{command}` (pid {pid}) exited with status {status} after {call} at "
    "{caller} raised BlockingIOError{done}{within} under policy '{policy}' (from {source})."
)
PLUGIN_DONE_TIMED_OUT = " (its wait timed out)"
PLUGIN_CHILD_SOURCE = "{given_as}, which the child inherits as {variable}"
PLUGIN_CHILD_WITHIN = " in the process it started, `{command}` (pid {pid}),"
PLUGIN_CHILD_STILL_RUNNING = (
    "The test was still running {grace:g} s later, so the plugin failed it where it was (the traceback), rather "
    "than let it wait for the child."
)
PLUGIN_REMEDY_CHILD_WAIT = (
    "call secrets.wait_for_system_rng() once before {caller} in the child's code, where waiting is acceptable"
)
PLUGIN_REFUSED_IN_TEST = "the policy raised BlockingIOError in this test: {call} at {caller}, {where}"
PLUGIN_IN_TEST_PROCESS = "in the test's own process"
PLUGIN_IN_CHILD = "in a child process, `{command}` (pid {pids})"
# The records of a test in the JUnit XML (a property named "urandom").
PLUGIN_PROPERTY = "{call} at {caller}, {where}: {done} [{policy}]; would: {would}"
# The end-of-run section.
PLUGIN_REPORT_FAILED = "the report of this run's events could not be made ({name}: {exc})"
PLUGIN_REPORT_WRITTEN = "urandom-shim: the report is in {path} (JSON)."
PLUGIN_EVENTS_UNWRITABLE = (
    "urandom-shim: URANDOM_SHIM_EVENTS names {path}, which this run can't write ({error}); the run's records went "
    "to a file of its own, so the report below is still whole, and nothing was added to {path}."
)
PLUGIN_REPORT_UNWRITTEN = "urandom-shim: --urandom-report: could not write {path}: {error}"
PLUGIN_SUMMARY_HEAD = (
    "Under policy '{policy}' (from {source}){mode}, {tests} of {run} asked for randomness while the simulated "
    "kernel CRNG was unready, at {sites} call site(s)."
)
PLUGIN_SUMMARY_REPORT_ONLY = ", report-only (every call behaved as native)"
PLUGIN_SUMMARY_SKIPPED = "({count} line(s) of the run's events files could not be read as records, and were skipped.)"
PLUGIN_SUMMARY_NOTHING = "Nothing to change: under policy '{policy}', this suite behaves as it does at any other time."
PLUGIN_SUMMARY_NOTHING_SO_FAR = (
    "Nothing to change in the tests that ran: under policy '{policy}', they behave as they do at any other time. Run "
    "the whole suite before you rely on it."
)
PLUGIN_SUMMARY_STOPPED = (
    "The run stopped early ({why}): {finished} of {collected} collected {tests} finished{cut}, so this report covers "
    "part of the suite, not the whole of it."
)
PLUGIN_SUMMARY_CUT_SHORT = " and {count} {was} cut short"
PLUGIN_STOPPED_INTERRUPTED = "interrupted"
PLUGIN_STOPPED_UNSAID = "not every collected test ran"
PLUGIN_OUTSIDE_TESTS = "(outside any test)"
PLUGIN_SUMMARY_FINE = "Also reached, with nothing to see under any policy (the seeding of random): {sites}."
PLUGIN_IN_TESTS_PROCESSES = "the tests' own processes"
PLUGIN_IN_CHILDREN = "child processes: {commands}"
PLUGIN_AND_MORE = " and {count} more"
PLUGIN_MORE_SITES = "and {count} more call site(s): --urandom-report=PATH writes them all, as JSON."
PLUGIN_FIX_RAISE = (
    "call secrets.wait_for_system_rng() once before {line}, where waiting is acceptable: it waits for the CRNG "
    "under every policy, and returns at once when it is ready"
)
PLUGIN_FIX_RAISE_INSTALLED = (
    "{line} is not in your project's code: call secrets.wait_for_system_rng() once in your code, before the line "
    "that leads there (the tests above show where), where waiting is acceptable"
)
PLUGIN_FIX_RAISE_NO_FILE = (
    "call secrets.wait_for_system_rng() once before the call, where waiting is acceptable: it waits for the CRNG "
    "under every policy"
)
PLUGIN_FIX_WAIT = (
    "at boot this waits for the CRNG, which is right where waiting is acceptable; in the suite nothing makes the "
    "CRNG ready, so under this policy these tests fail unless they call system_rng.ready_after(SECONDS)"
)
PLUGIN_FIX_WEAK = "gets bytes that may be predictable: wait with secrets.wait_for_system_rng() first"
PLUGIN_VERDICT_RAISE = "{tests} would raise BlockingIOError"
PLUGIN_VERDICT_WEAK = "{tests} would use weak bytes"
PLUGIN_VERDICT_WAIT = "{tests} would wait for the CRNG"
PLUGIN_VERDICT_NOTHING = "under {policy}, no test would raise, wait or use weak bytes"
PLUGIN_SUMMARY_EXEMPT = (
    "To run the suite under {policy} before the code is fixed, mark the {tests} that would fail "
    "@pytest.mark.urandom(unready=False), or exempt {them} by node id in the ini file (or with --urandom-exempt):"
)


# -- the command line (cli) ------------------------------------------------------------------------------------------

WAIT_LIVE_LINE = "urandom-shim wait: kernel CRNG {word} after {value:.1f} s{tail}"
CHECK_FOR_AND_MODULE = "give --for or --module, not both"
CHECK_NO_SUCH_PROGRAM = (
    "--for {target!r}: there is no such script, no such command on PATH or in {bin}, and no module of that name here "
    "or on this interpreter's sys.path. Check the spelling, and that the app is installed in this environment."
)
CHECK_FOR_NOT_A_MODULE = "--for {target}: after -m comes a module name such as 'app.main'"
CHECK_FOR_NOT_A_PROGRAM = (
    "--for {target} is neither a script (a path that exists, or ends in .py), a command on PATH, nor a module name "
    "such as 'app.main' (write '-m app.main' to say it is one)"
)
CHECK_NO_SUCH_MODULE = (
    "-m {module}: there is no module of that name here or on this interpreter's sys.path. Check the spelling, and "
    "that the app is installed in this environment."
)
CHECK_WHEEL_WITHOUT_PACKAGE_FILE = (
    "{package} is an installed package without a {name}, and no source sets its policy, so it runs under the "
    "default. A [tool.urandom-shim] table in the app's pyproject.toml does not travel in its wheel: put the same "
    "keys at the top level of {name} in the package (it is then installed as {file}), or set them in the "
    "environment's or the machine's file."
)
CHECK_PACKAGE_FILE_NOT_THE_PROGRAMS = (
    "{file} does not apply to {program}: the RECORD of the distribution that ships the program's module does not "
    "list it, so it was copied into the installed package by hand or belongs to another distribution (a plugin, "
    "or another user of a shared namespace package). Ship it in the app's own wheel, or set the keys in the "
    "environment's or the machine's file."
)
REPORT_SOURCE_UNREAD = (
    "report --fail-for {policy}: {source} {was} not read ({problem}), so this can't be a clean verdict; exit status "
    "3.{hint}"
)
REPORT_SOURCE_PARTLY_READ = (
    "report --fail-for {policy}: {source} {was} not read in full ({problem}), so this can't be a clean verdict; exit "
    "status 3.{hint}"
)
REPORT_NOTHING_READ = (
    "report --fail-for {policy}: nothing was read (no events file, and no journal), so this can't be a clean "
    "verdict; exit status 3.{hint}"
)
REPORT_ALLOW_EMPTY_HINT = " If a boot with nothing to read is expected here, add --allow-empty."
WAIT_TIMED_OUT = (
    "wait: the kernel's random number generator was still not ready after {timeout:g} s (--timeout); exit status "
    "1. To end the wait, {entropy_hint}.{simulation_note}"
)
NOT_SECONDS = "{text!r} is not a number of seconds; expected a finite number >= 0"
NO_COMMAND = "choose a command: status, check, wait, run, simulate or report"
NOT_SECONDS_OR_NONE = "{text!r} is not a number of seconds; expected a finite number >= 0, or 'none'"
MISSING_DOUBLE_DASH = "missing '--' before the command{given}; write: {prog} {subcommand} [options] -- CMD [ARGS ...]"
DOUBLE_DASH_NOT_TAKEN = "'--' and a command are only for run and simulate, not {subcommand}"
REPORT_CANNOT_WRITE = "urandom-shim: cannot write the report: {error}; exit status 74.\n"
REPORT_EMPTY_PATH = "{option} '' names no file; give a path"
REPORT_PROGRESS = "urandom-shim report: {done}/{total} files read, boots found: {boots}, {seconds:.0f} s"
REPORT_FLEET_AND_FILE = (
    "--journal-file reads one saved boot and a fleet report reads only its --journal-dir and --events; give one or "
    "the other"
)
REPORT_ALLOW_EMPTY_ALONE = "--allow-empty only changes what --fail-for decides; add --fail-for POLICY"
CLI_INTERNAL_ERROR = (
    "urandom-shim: internal error in `{prog} {subcommand}` ({name}: {exc}); rerun with URANDOM_SHIM_DEBUG=1 for "
    "the traceback, and please report it.\n"
)
WAIT_SIMULATED = " (simulated by {variable}={spec})"
WAIT_ENTROPY = ", entropy_avail {entropy} bits"
WAIT_STATE_UNKNOWN = "state unknown (counts as ready)"
SIMULATE_DEFAULT_WINDOW = (
    "simulate: no window given, so the simulated CRNG stays unready for as long as the command runs "
    "(--unready-forever); give --unready-for SECONDS for a window that closes."
)
SIMULATE_FILE_MISSING = (
    "--unready-until-file {unready_until_file!r} does not exist, so the simulated CRNG would be ready from the "
    "start; create the file first, and delete it to make the CRNG ready"
)


# -- waiting and refusing (_runtime) ---------------------------------------------------------------------------------

PEP522_TEXT = "system random number generator is not ready; see secrets.token_bytes()"
ENTROPY_HINT = "give the machine an entropy source (a virtio-rng device, a hardware RNG, or a seed file)"
SIMULATION_NOTE = " (The unready state is simulated by URANDOM_SHIM_SIMULATE={spec}.)"
POLICY_PHRASE = "urandom-shim policy '{value}' (from {source})"
FAIL_FAST_HINT = "To fail fast instead, set URANDOM_POLICY=pep522. "
FAIL_FAST_FLAG_HINT = "To fail fast instead, use {command} --policy pep522. "
BOUND_HINT = "To bound the wait, set URANDOM_SHIM_TIMEOUT=SECONDS. "
WAITING = (
    "{call} has been waiting {elapsed:.1f} s for the kernel's random number generator to initialise, under "
    "{policy_phrase}. It returns as soon as the kernel is ready. {fail_fast}{bound}To end it, "
    "{entropy_hint}.{simulation_note}"
)
BAD_TIMEOUT_NUMBER = "timeout must be a number of seconds >= 0 or None, not {seconds!r}"
URANDOM_BLOCK_FALSE_WITH_TIMEOUT = "block=False never waits, so it takes no timeout"
URANDOM_BLOCK_FALSE_REFUSED = (
    "urandom_shim.urandom({size}, block=False) was called before the kernel's random number generator was "
    "initialised. Call it without block=False to wait, or call secrets.wait_for_system_rng() "
    "first.{simulation_note}"
)
URANDOM_TIMED_OUT = (
    "urandom_shim.urandom({size}, timeout={timeout:g}) waited {timeout:g} s for the kernel's random number "
    "generator. Raise the timeout, or {entropy_hint}.{simulation_note}"
)
BAD_TIMEOUT_ARGUMENT = "timeout must be a number of seconds >= 0 or None, not {timeout!r}"


# -- run and simulate (cli.launch) -----------------------------------------------------------------------------------

COMMAND_NOT_FOUND = "{name}: command not found (searched PATH)"
RUN_BELOW_FLOOR = (
    "{subcommand}: {given} would allow weak bytes, but the floor set by {found} forbids them, so the command gets "
    "{used} instead while the CRNG is not ready."
)
RUN_NO_BOOTSTRAP = (
    "run: the bootstrap directory is missing from this installation, so only interpreters that have urandom-shim "
    "installed will apply these settings; reinstall urandom-shim to fix it."
)
RUN_KILL_SWITCH = (
    "{subcommand}: URANDOM_SHIM_DISABLE={disable!r} is set, so {command} runs without the shim; unset it to apply "
    "these settings."
)
RUN_BAD_INTERPRETER = "bad interpreter in its #! line: {reason}"
RUN_NO_SEED = (
    "{subcommand}: {command} gets no hash seed, so its start may wait for the kernel's random number generator "
    "(about a second on Linux 5.18+): {reason}."
)
RUN_TARGET_SILENT = (
    "{interpreter} did not answer when asked what its program will resolve ({reason}), so whether that program "
    "allows weak bytes can't be known before it starts"
)
RUN_TARGET_FAILED = "its shim could not resolve the program's settings ({error}); that start will say why"
RUN_OPTION_UNKNOWN = (
    "run does not know the interpreter option {option!r}, so it can't tell what that interpreter will do with a seed"
)
RUN_NO_SITE = (
    "-S runs no site, so no shim starts there to take the seed out of its environment, and its children would "
    "inherit it"
)
RUN_IGNORES_ENVIRONMENT = (
    "{option} makes it ignore PYTHON* variables, the seed among them, and pass them on to its children"
)
RUN_OLD_PYTHON = (
    "it is Python {version}, where no shim starts to take the seed out of its environment, so its children would "
    "inherit it"
)
RUN_NO_SHIM_THERE = (
    "neither run's bootstrap nor an installed urandom-shim starts in that interpreter, so nothing would take the "
    "seed out of its environment"
)
RUN_SHIM_SILENT = "its shim started but did not answer what the program will resolve"
RUN_NOT_AN_INTERPRETER = (
    "{name} is not a Python interpreter that run starts itself (env, sh -c, a shell script, a pyenv shim, a #! line "
    "without an absolute path to Python), so which program it starts, and when, can't be known"
)
RUN_THROUGH_PROC = (
    "its script {script!r} is reached through /proc (as /dev/stdin and /dev/fd/N are), which names another file "
    "in each process, so what that program resolves can't be asked before it starts"
)
RUN_STARTED_FIRST = (
    "its start started a process ({started}) before its shim could take the seed out (code of a .pth file, which "
    "site runs before ours), and that process would keep the seed"
)
RUN_WAITING = (
    "{subcommand}: {command} has waited {elapsed:.1f} s before it starts, for the kernel's random number "
    "generator: its policy '{policy}' with on_timeout 'fallback' waits at most {timeout:g} s, then starts it with "
    "PYTHONHASHSEED from non-blocking kernel bytes (each of its own calls then waits its own timeout). To end the "
    "wait, {entropy_hint}."
)
RUN_SETTINGS_IGNORED = (
    "{subcommand}: {command} starts Python with {option}, so the settings given to {subcommand} do not reach its "
    "program: {why}."
)
RUN_WHY_NO_SITE = "no site runs there, so no shim starts"
RUN_WHY_NO_ENVIRONMENT = (
    "it ignores PYTHON* variables, so run's bootstrap does not start there, and a shim installed there ignores the "
    "URANDOM_* variables that carry the settings"
)
RUN_NO_COMMAND = "no command given; write: {prog} {subcommand} [options] -- CMD [ARGS ...]"
RUN_EMPTY_COMMAND = "the command after '--' is an empty name; write: {prog} {subcommand} [options] -- CMD [ARGS ...]"
RUN_BAD_ENVIRONMENT = (
    "the environment holds an entry with {what} ({entry!r}), which no program can be given; start "
    "{subcommand} from an environment without it (env -i NAME=VALUE ... urandom-shim {subcommand} ...)"
)


# -- the engine (_activation) ----------------------------------------------------------------------------------------

PEP522_REFUSAL = (
    "{call} was called before the kernel's random number generator was initialised, and {policy_phrase} raises "
    "instead of waiting. Call secrets.wait_for_system_rng() first, or use the secrets module, which waits; or "
    "{wait_hint} to wait here.{simulation_note}"
)
#: How to choose pep524 instead, in :data:`PEP522_REFUSAL`: what outranks URANDOM_POLICY is named for itself.
WAIT_HINT_VARIABLE = "set URANDOM_POLICY=pep524"
WAIT_HINT_FLAG = "give {command} --policy pep524"
WAIT_HINT_PLUGIN = "choose pep524 with {source}"
TIMED_OUT = (
    "{call} waited {value:g} s (timeout from {source}) for the kernel's random number generator, under "
    "{policy_phrase}. Raise the timeout, set URANDOM_SHIM_ON_TIMEOUT=fallback to accept best-effort bytes, or "
    "{entropy_hint}.{simulation_note}"
)
FALLBACK_AFTER_TIMEOUT = (
    "{call}: the kernel's random number generator was still not ready after {timeout_value:g} s (timeout from "
    "{timeout_source}), so on_timeout 'fallback' (from {on_timeout_source}) returned best-effort bytes that may be "
    "predictable. Set URANDOM_SHIM_ON_TIMEOUT=raise to refuse them, or {entropy_hint}."
)


# -- the simulated CRNG (_simulation) --------------------------------------------------------------------------------

BAD_SIMULATION = (
    "environment variable {env}={spec!r} is not a simulation; {exc}; ignoring it, so this process sees the real kernel."
)
SIMULATION_FORMS = "expected one of {listed} with SECONDS a finite number >= 0"
SIMULATED_WAIT_BOUND = (
    "a wait for the simulated CRNG ({variable}={spec}) ended after {waited:.1f} s: this process is a child of a test "
    "under the pytest plugin ({bound_variable}={bound:g}), and it can't know whether the test will make the CRNG "
    "ready. Make it ready from the test (system_rng.ready() or ready_after()) sooner, or give the call a timeout."
)
BAD_WAIT_BOUND = (
    "environment variable {variable}={text!r} is not valid; expected a number of seconds >= 0; ignoring it, so "
    "waits on the simulated CRNG in this process are not bounded."
)
SIMULATION_PATH_WITHOUT_DIRECTORY = (
    "environment variable {env}={spec!r} names a relative path, and the current directory no longer exists, so the "
    "file can't be found; ignoring it, so this process sees the real kernel. Give the file as an absolute path."
)


# -- status (cli.facts) ----------------------------------------------------------------------------------------------

NOT_ACTIVE = "not active in this interpreter: {inactive_reason}."


# -- readiness (_readiness) ------------------------------------------------------------------------------------------

READY_LISTENER_FAILED = "internal error while switching to the ready state ({name}: {exc}); continuing."


# -- the wrappers (_activation) ----------------------------------------------------------------------------------------

URLLIB_DIGEST_AUTH = "urllib.request's HTTP digest authentication"
ALIAS_SCAN_FAILED = "could not check module {module!r} for aliases of os.urandom ({name}: {exc})."


# -- events (_events) -------------------------------------------------------------------------------------------

EVENT_WHERE = "{call} called from {caller} before the kernel CRNG was ready{simulated}, {boot_time:.2f} s after boot"
EVENT_SIMULATED = " (simulated)"
EVENT_ENFORCED = "{where}: {done} under policy '{policy}' (from {source}); {under}."
EVENT_REPORT_ONLY = "report-only: {where}: {done}; policy '{policy}' (from {source}) would have {would}; {under}."
#: What every policy would do with the call (``urandom-shim report`` reads it back from the journal).
EVENT_UNDER = "under each policy: {outcomes}"
#: How each outcome of :data:`urandom_shim._policies.OUTCOMES` reads after a policy's name in :data:`EVENT_UNDER`.
OUTCOME_PHRASES = {
    "fine": "fine",
    "wait": "waits",
    "weak": "weak bytes",
    "raise": "raises",
    "wait-then-raise": "raises after its {timeout:g} s timeout",
    "wait-then-weak": "weak bytes after its {timeout:g} s timeout",
}
EVENT_REPEAT = "{where}: {count} more like it, not shown one by one; {under}."
# What happened ({done} above), and what the policy would have done ({would}).
EVENT_DONE_UNTOUCHED = "left it to the interpreter ({waited:.2f} s)"
EVENT_DONE_WAITED = "waited {waited:.2f} s for strong bytes"
EVENT_DONE_RAISED = "raised BlockingIOError"
EVENT_DONE_BEST_EFFORT = "used best-effort bytes without waiting"
EVENT_DONE_TIMED_OUT_RAISED = "waited {waited:.2f} s, then raised BlockingIOError (timeout)"
EVENT_DONE_TIMED_OUT_BEST_EFFORT = "waited {waited:.2f} s, then used best-effort bytes (timeout)"
EVENT_WOULD_UNTOUCHED = "left it to the interpreter"
EVENT_WOULD_WAIT = "waited for strong bytes"


# -- the report: what it could not read (report.*) --------------------------------------------------------------------
# Each is said of a path (the report prints "PATH: ..."), or of this boot's journal; its kind is report.problems.Kind.

REPORT_NO_SUCH_FILE = "no such file"
REPORT_NO_EVENTS_FILE = "no such file: the shim creates it at its first event (or tmpfiles.d at boot)"
REPORT_NO_EVENTS_CONFIGURED = "no events file configured"
REPORT_EVENTS_EMPTY = "empty (the shim creates it only to write a record to it)"
REPORT_EMPTY_ALLOWED = "nothing there: accepted (--allow-empty)"
REPORT_REFUSED_NOT_REGULAR = "refused: not a regular file ({kind})"
REPORT_REFUSED_TOO_LARGE = "refused: larger than {limit} MiB, which no boot's events are"
REPORT_CANNOT_BE_READ = "cannot be read ({error})"
REPORT_NO_RECORD = "no record in it could be read ({why})"
REPORT_NO_EVENTS_FILE_IN_IT = "no events file in it"
REPORT_NO_EVENTS_FILE_READ = "none of its {files} files could be read"
REPORT_LINK_NOT_FOLLOWED = (
    "not read: a symbolic link, which could lead anywhere; copy what it points to into the directory, or name it "
    "on its own."
)
REPORT_WALK_NOT_REGULAR = "not read: it is {kind}, not a regular file."
REPORT_WALK_HIDDEN = "not read: its name starts with '.', as a shipper's half-written file does; rename it, or move it."
REPORT_WALK_TOO_DEEP = "not read: a directory {depth} levels below the one given, and the report goes {limit} deep."
REPORT_WALK_TOO_MANY = (
    "not read: it holds more names than are left of the {limit} the report looks at below a directory; split it."
)
REPORT_WALK_UNLISTED = "can't be listed ({error})."

REPORT_JOURNALCTL_MISSING = "journalctl is not installed here, so the systemd journal can't be read."
REPORT_JOURNALCTL_NOT_STARTED = "journalctl could not be started ({error}), so the systemd journal can't be read."
REPORT_JOURNAL_PERMISSION = (
    "this user can't read the system journal: run as root, or as a member of the group systemd-journal or adm."
)
REPORT_JOURNAL_NO_BOOT = "the journal holds nothing of this boot ({detail})."
REPORT_JOURNAL_NOTHING_LOGGED = "journalctl found no entries"
REPORT_JOURNAL_TIMED_OUT = "journalctl did not finish within {timeout:g} s, so the journal was not read."
REPORT_JOURNAL_FAILED = "journalctl failed (exit status {status}): {detail}"
REPORT_JOURNAL_CANT_BE_READ = "can't be read ({error})."
REPORT_JOURNAL_FILE_EMPTY = "holds no journal entries."
REPORT_JOURNAL_FILE_NOT_JSON = "is not `journalctl -o json` output: none of its {lines} lines is a JSON object."

REPORT_DIR_MISSING = "no such directory."
REPORT_DIR_NOT_A_DIRECTORY = "is not a directory."
REPORT_DIR_EMPTY = "holds no journal files (*.journal, *.journal~)."
REPORT_DIR_JOURNALCTL_MISSING = "journalctl is not installed here, so journal directories can't be read."
REPORT_FILE_NOT_A_JOURNAL_FILE = "skipped: it is {kind}, not a journal file."
REPORT_FILE_NOT_JOURNAL = "skipped: journalctl can't read it ({detail}); it may be corrupt, truncated or not a journal."
REPORT_FILE_DAMAGED = (
    "journalctl --verify does not pass it ({detail}): what journalctl still reads of it counts, but an entry of it "
    "may have been altered or lost."
)
REPORT_FILE_STOPPED = (
    "journalctl stopped with exit status {status} ({detail}); the {entries} entries read before that count."
)
REPORT_FILE_WARNED = "journalctl warned: {detail}"
REPORT_FILE_TIMED_OUT = "journalctl did not finish within {timeout:g} s; the {entries} entries read before that count."
REPORT_FILE_TOO_MANY = "more than {limit} selected entries; the rest of the file was not read."
REPORT_FILE_TOO_MANY_BOOTS = (
    "its files hold {boots} boots; the stalls of {left} of them were not looked for (at most one journalctl per boot "
    "of a machine for its stalls)."
)
REPORT_FILE_OUT_OF_TIME = "not read: the report's time for the whole directory ran out ({seconds:g} s)."
REPORT_EVENTS_OUT_OF_TIME = (
    "not read in full: the report's time for its events files ran out; the records read before that count."
)
REPORT_SAVED_OUT_OF_TIME = (
    "not read in full: the report's time for a saved journal ran out ({seconds:g} s); the entries read before that "
    "count."
)
REPORT_FILE_NOT_A_JOURNAL_NAME = (
    "not read: its name is not a journal file's (*.journal, *.journal~), and it does not begin as a journal file does."
)
REPORT_DIR_FILE_EMPTY = "holds no journal entries: its machine sent nothing (yet)."
REPORT_NO_BOOT_START = (
    "the journal of boot {boot} does not reach back to the boot's start ({why}): what it logged before is unknown. "
    "journald deletes a journal's oldest files when it is full."
)
REPORT_NO_BOOT_START_AFTER = "its earliest entry is {began:.2f} s after boot, and the kernel's first line is not in it"
REPORT_NO_BOOT_START_UNTIMED = "none of its entries has a time since boot"
REPORT_TOO_MANY_FINDINGS = (
    "not read in full: the report holds at most {limit} MiB of findings in all, far more than a fleet's boots make, "
    "so the rest of this input ({count} lines or more) is no fleet's events."
)
REPORT_LINES_UNREAD = (
    "{count} of the shim's event lines, written in a system unit, could not be read in full (too long, cut short, or "
    "damaged): what they say is unknown."
)

#: The report's own text (``report/text.py``): what it says when it has no program to show, and the heads of its
#: lists.
REPORT_TEXT_NOTHING_READ = "nothing read: no source named or configured could be read, so there is no verdict."
REPORT_TEXT_NOTHING_GIVEN = (
    "Nothing was read: no events file and no journal, so this report can't say what happened in the window. Name the "
    "events file with --events PATH, or a saved journal with --journal-file PATH; for many machines, --journal-dir "
    "DIR or --events DIR."
)
REPORT_TEXT_NOT_READ = (
    "Nothing was read: no source named could be read (above), so this report can't say what happened in the window."
)
REPORT_TEXT_EMPTY_ALLOWED = (
    "Nothing there: accepted (--allow-empty). No program asked for randomness before the kernel CRNG was ready."
)
REPORT_TEXT_NO_PROGRAM = "No program asked for randomness before the kernel CRNG was ready (or none was recorded)."
REPORT_TEXT_INFERRED = (
    "inferred from the call alone: its record carries no `under` (an older shim, or a shipper that dropped it), so "
    "what its timeout, fuse, floor or interpreter make of it is not known"
)
REPORT_TEXT_UNREAD_LINES = (
    "Not read: {lines} of the journal, written in a system unit, read as the shim's events but could not be parsed in "
    "full (too long, cut short, or damaged): what they say is unknown, so --fail-for exits 3:"
)
REPORT_TEXT_REJECTED_LINES = (
    "Rejected: {lines} of the journal read as the shim's events, but journald's own fields show another writer, so "
    "no verdict counts them:"
)

#: Why a line that reads as one of the shim's events was not believed: what the journal's trusted fields (those
#: starting with ``_``, which journald sets and no writer can) say instead. Words that complete "rejected: ...".
REPORT_REJECTED_TRANSPORT = "it reached the journal by {transport}, not as a program's own output"
REPORT_REJECTED_UNSEEN_WRITER = (
    "it was written by a process journald did not see (no _EXE, no _COMM: gone before journald looked), so its unit "
    "is unknown"
)
REPORT_REJECTED_LOGIN_SESSION = (
    "it was written in a user's login session or service manager ({unit}), not by a system unit"
)
#: Why a line of a believed writer that reads as one of the shim's events was not read: words that complete
#: "not read: ...". With --fail-for, such a line is exit 3.
REPORT_UNREAD_LINE = (
    "it reads as one of the shim's event lines, written in a system unit, but does not parse in full (cut short, or "
    "damaged), so what it says is unknown"
)
REPORT_UNREAD_TOO_LONG = (
    "it reads as one of the shim's event lines, written in a system unit, but is longer than any line of the shim, "
    "so it was not parsed"
)
REPORT_UNREAD_OUT_OF_RANGE = (
    "it reads as one of the shim's event lines, written in a system unit, but says a time, wait or count that is not "
    "a finite number in range"
)
