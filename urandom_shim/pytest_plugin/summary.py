"""The end of the run: every record of the run, its tests' and their child processes' (pytest-xdist's workers send
theirs), made into the section ``urandom-shim report`` of the terminal summary and into ``--urandom-report``'s JSON.
Both speak of tests: each call site, the tests that reach it, what each policy would do there (the boot report's
own aggregation, :mod:`urandom_shim.report.verdict`), and what to do about it in a test suite.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

import os

import pytest

from .. import _messages
from .options import options
from .records import Records, absolute, calls
from .run import current

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Mapping

    from .._events import Record
    from ..report.shapes import PolicyVerdict, Program

#: The tests named for a call site, and the call sites and test files shown, before "and N more".
TESTS_SHOWN, SITES_SHOWN, FILES_SHOWN = 3, 10, 5
#: What a call comes to under a policy, worst last (:data:`urandom_shim.report.verdict.RANK`).
WORDS = {"raise": "raises", "wait": "waits", "weak": "weak bytes", "fine": "nothing to see"}


class _Collected:
    """The run's events files, as each process that ran tests made or named them, and the tests' outcomes."""

    def __init__(self) -> None:
        self.files: dict[str, tuple[int, bool]] = {}  # path -> (where this run's records begin, whether ours)
        self.pids: set[int] = set()  # the processes that ran tests
        self.outcomes: dict[str, str] = {}
        self.report: dict[str, Any] | None = None
        #: This process's own records, when it ran the tests itself (no pytest-xdist workers).
        self.local: Records | None = None
        self.lines: list[str] = []
        #: What the processes that ran tests found wrong with what the run was given (``urandom-shim:`` lines).
        self.problems: list[str] = []
        #: Why the run ended before its last test (a Ctrl-C, ``-x``, ``--maxfail``), or None; and how many tests
        #: it collected.
        self.stopped: str | None = None
        self.collected = 0

    def add(self, path: str, start: int, own: bool, pid: int, problems: object = ()) -> None:
        for problem in problems if isinstance(problems, list) else ():
            if isinstance(problem, str) and problem not in self.problems:
                self.problems.append(problem)
        known = self.files.get(path)
        self.files[path] = (start if known is None else min(start, known[0]), own)
        self.pids.add(pid)


_COLLECTED = pytest.StashKey[_Collected]()


class _Progress:
    """What the run did, from pytest's own reports, whatever shows them (none, with ``-p no:terminal``; a custom
    category, from a plugin's ``pytest_report_teststatus``): each test's phases, and why it ended early, if it did.
    One per run, registered as a plugin of its own: these hooks are given no config."""

    def __init__(self) -> None:
        #: node id -> {phase: (pytest's outcome, whether the test was expected to fail)}; a rerun's reports replace.
        self.phases: dict[str, dict[str, tuple[str, bool]]] = {}
        #: The words of what interrupted the run (a Ctrl-C, ``-x``, ``pytest.exit()``, errors in collection).
        self.interrupted: str | None = None

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if str(report.outcome) != "rerun":  # pytest-rerunfailures' own outcome: the test runs again, its last counts
            self.phases.setdefault(report.nodeid, {})[report.when] = (report.outcome, hasattr(report, "wasxfail"))

    def pytest_keyboard_interrupt(self, excinfo: pytest.ExceptionInfo[BaseException]) -> None:
        value = excinfo.value
        words = getattr(value, "msg", None) if isinstance(value, pytest.exit.Exception) else str(value)
        self.interrupted = _reason(words) or _messages.PLUGIN_STOPPED_INTERRUPTED

    def outcomes(self) -> dict[str, str]:
        """Each test that began (its setup was reported), and its outcome in pytest's words (``"passed"``,
        ``"failed"``, ``"error"`` for a failed setup or teardown, ``"xfailed"``...), or ``"interrupted"``: begun,
        never finished."""
        found: dict[str, str] = {}
        for nodeid, phases in self.phases.items():
            setup, call, teardown = phases.get("setup"), phases.get("call"), phases.get("teardown")
            if setup is not None and setup[0] != "passed":
                outcome = "error" if setup[0] == "failed" else "xfailed" if setup[1] else "skipped"
            elif call is None:
                outcome = "interrupted" if teardown is None else "error" if teardown[0] == "failed" else "passed"
            elif call[0] == "failed":
                outcome = "failed"
            elif call[0] == "skipped":
                outcome = "xfailed" if call[1] else "skipped"
            else:
                outcome = "xpassed" if call[1] else "passed"
            if outcome in ("passed", "xpassed") and teardown is not None and teardown[0] == "failed":
                outcome = "error"
            found[nodeid] = outcome
        return found


_PROGRESS = pytest.StashKey[_Progress]()


def pytest_configure(config: pytest.Config) -> None:
    if hasattr(config, "workerinput"):
        return  # a pytest-xdist worker: its controller is given its reports
    progress = config.stash[_PROGRESS] = _Progress()
    config.pluginmanager.register(progress, f"urandom-shim-progress-{id(config)}")


#: The longest reason for an early stop shown: another plugin's words, or a conftest's, can be of any length.
REASON_SHOWN = 200


def _reason(words: object) -> str | None:
    if not isinstance(words, str) or not words.strip():
        return None
    shown = _messages.printable(words.strip())
    return shown if len(shown) <= REASON_SHOWN else shown[: REASON_SHOWN - 1] + "\u2026"


def _collected(config: pytest.Config) -> _Collected:
    found = config.stash.get(_COLLECTED, None)
    if found is None:
        found = config.stash[_COLLECTED] = _Collected()
    return found


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: object) -> None:
    """pytest-xdist: a worker is done; its events file comes with its output."""
    sent = getattr(node, "workeroutput", {}).get("urandom_shim")
    if isinstance(sent, dict):
        _collected(node.config).add(
            str(sent["path"]), int(sent["start"]), bool(sent["own"]), int(sent["pid"]), sent.get("problems")
        )


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session) -> None:
    """After the tests' clean-up: a worker hands its events file to the controller; the controller (or a run
    without workers) reads every file, and writes ``--urandom-report``."""
    config = session.config
    run = current(config)
    if run is not None and run.has_records():
        records = run.records()
        workeroutput = getattr(config, "workeroutput", None)
        if workeroutput is not None:
            workeroutput["urandom_shim"] = {
                "path": records.path, "start": records.start, "own": records.own, "pid": os.getpid(),
                "problems": run.problems,
            }  # fmt: skip
            return
        _collected(config).add(records.path, records.start, records.own, os.getpid(), run.problems)
        _collected(config).local = records  # read as the run went: a file a test emptied loses nothing
    if hasattr(config, "workerinput"):
        return
    collected = config.stash.get(_COLLECTED, None)
    found = options(config)
    if collected is None and found.report_path is None and found.policy is None:
        return
    collected = _collected(config)
    progress = config.stash.get(_PROGRESS, None)
    collected.outcomes = progress.outcomes() if progress is not None else {}
    collected.collected = session.testscollected
    finished = len(collected.outcomes) - _cut_short(collected.outcomes)
    collected.stopped = _stopped(session, progress, finished, collected.collected)
    if found.report_only and found.policy is not None:
        collected.problems.extend(_configuration_problems(found))
    try:
        collected.report = build(config, collected)
        collected.lines = [*collected.problems, *lines(config, collected.report, collected.outcomes)]
    except Exception as exc:  # noqa: BLE001 - a summary must never fail a run
        collected.lines = [*collected.problems, _messages.PLUGIN_REPORT_FAILED.format(name=type(exc).__name__, exc=exc)]
        return
    if found.report_path is not None:
        import json

        try:
            with open(found.report_path, "w", encoding="utf-8") as file:
                json.dump(collected.report, file, indent=1)
                file.write("\n")
        except OSError as exc:
            collected.lines.append(_messages.PLUGIN_REPORT_UNWRITTEN.format(path=found.report_path, error=exc))
        else:
            collected.lines.append(_messages.PLUGIN_REPORT_WRITTEN.format(path=found.report_path))


def _configuration_problems(found: Any) -> list[str]:
    """The problems of the project's configuration, which a report-only run keeps off its tests' stderr."""
    from .._config import resolve

    try:
        _settings, problems = resolve(overrides=found.overrides(), overrides_source=found.policy_source)
    except Exception:  # noqa: BLE001 - the report must never break a run
        return []
    return [_messages.line(problem) for problem in _messages.bounded(problems)]


def _cut_short(outcomes: Mapping[str, str]) -> int:
    """How many of the tests began and never finished (a Ctrl-C, ``pytest.exit()`` in the test)."""
    return sum(outcome == "interrupted" for outcome in outcomes.values())


def _stopped(session: pytest.Session, progress: _Progress | None, ran: int, collected: int) -> str | None:
    """Why the run ended before its last test, in words, or None: a report of part of a suite must not read as one of
    the whole of it. ``ran``: the tests that finished. A stop the last test asked for (its failure was the
    ``--maxfail``-th) left none out."""
    if ran >= collected and ran > 0:
        return None
    if progress is not None and progress.interrupted is not None:
        return progress.interrupted  # pytest's words ("stopping after 1 failures"), pytest-xdist's, or exit()'s
    # A stop that raised nothing: --maxfail reached in collection, a conftest's shouldfail.
    why = _reason(session.shouldstop) or _reason(session.shouldfail)
    if why is not None:
        return why
    if getattr(session, "exitstatus", None) == pytest.ExitCode.INTERRUPTED:
        return _messages.PLUGIN_STOPPED_INTERRUPTED
    if ran < collected:
        return "--collect-only" if session.config.option.collectonly else _messages.PLUGIN_STOPPED_UNSAID
    return None


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    collected = config.stash.get(_COLLECTED, None)
    if collected is None or not collected.lines or options(config).policy is None:
        if collected is not None and collected.lines and options(config).report_path is not None:
            terminalreporter.write_line(collected.lines[-1])
        return
    terminalreporter.write_sep("=", "urandom-shim report")
    for text in collected.lines:
        terminalreporter.write_line(text)


def pytest_unconfigure(config: pytest.Config) -> None:
    """The run's own events files go, now that the summary has been printed; one you named stays."""
    collected = config.stash.get(_COLLECTED, None)
    if collected is not None:
        for path, (_start, own) in collected.files.items():
            Records(path, 0, own).remove()
    run = current(config)
    if run is not None and run.has_records() and not hasattr(config, "workerinput") and collected is None:
        run.records().remove()


# -- the report ------------------------------------------------------------------------------------------------------


def build(config: pytest.Config, collected: _Collected) -> dict[str, Any]:
    """The run's findings, per test and per call site: what ``--urandom-report`` writes and the section shows."""
    from ..report.verdict import RANK, call_site, verdict

    found = options(config)
    rootdir = str(config.rootpath)
    records: list[Record] = []
    skipped = 0
    for path, (start, own) in collected.files.items():
        reader = collected.local if collected.local is not None and collected.local.path == path else None
        if reader is None:
            reader = Records(path, start, own)
        reader.read_new()
        records.extend(reader.all)
        skipped += reader.skipped
    from .._events import test_key

    whole = {test_key(nodeid): nodeid for nodeid in collected.outcomes}  # a long node id, as records cut it
    by_test: dict[str | None, list[Record]] = {}
    for record in records:
        test = record.get("test")
        name = whole.get(test, test) if isinstance(test, str) else None
        by_test.setdefault(name, []).append(record)
    sites: dict[tuple[Any, Any, Any], dict[str, Any]] = {}
    seen: dict[tuple[Any, Any, Any], tuple[set[str | None], set[str]]] = {}  # each site's tests and argvs, as sets
    tests = []
    for test, mine in by_test.items():
        found_calls = calls(mine)
        worst: dict[str, str] = {}
        for found_call in found_calls:
            call = found_call.call
            caller = absolute(call["caller"], rootdir)
            key = (call["call"], caller, call["site"])
            site = sites.setdefault(
                key,
                {"call": call["call"], "caller": caller, "site": call["site"], "tests": [], "under": {},
                 "processes": [], "in_tests_process": False, "count": 0},
            )  # fmt: skip
            named = seen.setdefault(key, (set(), set()))[0]
            if test not in named:
                named.add(test)
                site["tests"].append(test)
            site["count"] += call["count"]
            if not collected.pids.isdisjoint(found_call.pids):
                site["in_tests_process"] = True
            for policy, outcome in call["under"].items():
                for table in (site["under"], worst):
                    if RANK[outcome] > RANK.get(table.get(policy, "fine"), 0):
                        table[policy] = outcome
                    table.setdefault(policy, outcome)
        # Each child's own command line, from its records: the aggregation makes one program of the children that run
        # the same one ("python -c"), named by the first one's command, and a program's calls by their sites.
        for record in mine:
            argv = record.get("argv")
            place = (record.get("call"), absolute(record.get("caller"), rootdir), call_site(record))
            if place not in sites or record.get("pid") in collected.pids or not isinstance(argv, list):
                continue
            argvs = seen[place][1]
            if repr(argv) not in argvs:
                argvs.add(repr(argv))
                sites[place]["processes"].append(argv)
        longest = max((found_call.call["waited"] for found_call in found_calls), default=0.0)
        tests.append({"test": test, "outcome": collected.outcomes.get(test or ""), "under": worst,
                      "longest_wait": longest, "programs": _programs(mine)})  # fmt: skip
    judged = verdict([_as_program(entry) for entry in tests if entry["test"] is not None])
    for policy, said in judged.items():
        said["text"] = _sentence(policy, said)
    return {
        "v": 1,
        "policy": found.policy,
        "policy_source": found.policy_source if found.policy is not None else None,
        "mode": None if found.policy is None else "report" if found.report_only else "enforce",
        "files": [{"path": path, "start": start} for path, (start, _own) in collected.files.items()],
        "tests_run": len(collected.outcomes),
        "tests_collected": collected.collected,
        "stopped": collected.stopped,
        "records": len(records),
        "skipped": skipped,
        "tests": tests,
        "sites": sorted(sites.values(), key=lambda site: _severity(site, found.policy)),
        "verdict": judged,
    }


def _as_program(entry: dict[str, Any]) -> Program:
    """A test as the boot report's verdict counts a program: one machine, one boot."""
    return {
        "name": entry["test"], "unit": None, "program": None, "argv": None, "pids": [], "uids": [],
        "first_call": None, "first_call_after_crng": None, "calls": [], "simulated": True, "under": entry["under"],
        "longest_wait": entry["longest_wait"], "machines": 1, "boots": 1, "first_boots": 0, "later_boots": 0,
        "images": {}, "kernels": {},
    }  # fmt: skip


def _programs(records: list[Record]) -> list[Program]:
    """A test's records as ``urandom-shim report --json`` gives its programs."""
    from ..report.verdict import group

    return group(records, None)


def _severity(site: dict[str, Any], policy: str | None) -> tuple[int, int]:
    from ..report.verdict import RANK

    outcome = site["under"].get(policy or "", "fine")
    return (-RANK.get(outcome, 0), -len(site["tests"]))


def _sentence(policy: str, said: PolicyVerdict) -> str:
    parts = []
    for tests, template in (
        (said["raise"], _messages.PLUGIN_VERDICT_RAISE),
        (said["weak"], _messages.PLUGIN_VERDICT_WEAK),
        (said["wait"], _messages.PLUGIN_VERDICT_WAIT),
    ):
        if tests:
            parts.append(template.format(tests=_count(len(tests))))
    if not parts:
        return _messages.PLUGIN_VERDICT_NOTHING.format(policy=policy)
    return f"under {policy}, " + "; ".join(parts)


def _count(number: int) -> str:
    return f"{number} test" if number == 1 else f"{number} tests"


def _more(names: list[str], shown: int) -> str:
    listed = ", ".join(names[:shown])
    return listed + (_messages.PLUGIN_AND_MORE.format(count=len(names) - shown) if len(names) > shown else "")


# -- as text ---------------------------------------------------------------------------------------------------------


def lines(config: pytest.Config, report: dict[str, Any], ran: Mapping[str, str] | None = None) -> list[str]:
    """The section ``urandom-shim report``. Every string from a record is shown escaped. ``ran``: the tests of this
    run and their outcomes, the only ones it offers to exempt (a record can name any)."""
    from .._terminal import rows
    from .records import command, place, shown

    found = options(config)
    policy = found.policy or ""
    mode = _messages.PLUGIN_SUMMARY_REPORT_ONLY if found.report_only else ""
    ran = ran or {}
    tests = [entry for entry in report["tests"] if entry["test"] is not None and (entry["test"] in ran or not ran)]
    out = [
        _messages.PLUGIN_SUMMARY_HEAD.format(
            policy=policy,
            source=found.policy_source,
            mode=mode,
            tests=len(tests),
            run=_count(report["tests_run"]),
            sites=len(report["sites"]),
        )
    ]
    stopped = report.get("stopped")
    if stopped:
        cut = _cut_short(ran)
        collected = report.get("tests_collected", 0)
        out.append(
            _messages.PLUGIN_SUMMARY_STOPPED.format(
                why=stopped,
                finished=report["tests_run"] - cut,
                collected=collected,
                tests="test" if collected == 1 else "tests",
                cut=_messages.PLUGIN_SUMMARY_CUT_SHORT.format(count=cut, was="was" if cut == 1 else "were")
                if cut
                else "",
            )
        )
    if report["skipped"]:
        out.append(_messages.PLUGIN_SUMMARY_SKIPPED.format(count=report["skipped"]))
    if not report["sites"]:
        nothing = _messages.PLUGIN_SUMMARY_NOTHING_SO_FAR if stopped else _messages.PLUGIN_SUMMARY_NOTHING
        out.append(nothing.format(policy=policy))
        return out
    rootdir = str(config.rootpath)
    matter = [site for site in report["sites"] if set(site["under"].values()) != {"fine"}]
    failing: list[str] = []
    listed: set[str] = set()
    for site in matter[:SITES_SHOWN]:
        out.append("")
        out.append(f"{shown(site['call'])} at {shown(place(site['caller'], rootdir))}")
        named = [shown(test) if test is not None else _messages.PLUGIN_OUTSIDE_TESTS for test in site["tests"]]
        where = []
        if site["in_tests_process"]:
            where.append(_messages.PLUGIN_IN_TESTS_PROCESSES)
        if site["processes"]:
            commands = [command(argv, rootdir) for argv in site["processes"]]
            where.append(_messages.PLUGIN_IN_CHILDREN.format(commands=_more(commands, 2)))
        table = [("in", "; ".join(where)), ("tests", f"{len(named)}: " + _more(named, TESTS_SHOWN))]
        table.append(("would", ", ".join(f"{name} {WORDS[outcome]}" for name, outcome in site["under"].items())))
        outcome = site["under"].get(policy, "fine")
        fix = _fix(outcome, site, rootdir)
        if fix:
            table.append(("fix", fix))
        if outcome in ("raise", "wait"):
            for test in site["tests"]:
                if test is not None and test not in listed and (test in ran or not ran):
                    listed.add(test)
                    failing.append(test)
        out.extend(rows(table, indent="  "))
    if len(matter) > SITES_SHOWN:
        out.append("")
        out.append(_messages.PLUGIN_MORE_SITES.format(count=len(matter) - SITES_SHOWN))
    mattering = {id(site) for site in matter}
    fine = [site for site in report["sites"] if id(site) not in mattering]
    if fine:
        out.append("")
        listed_fine = [f"{shown(site['call'])} at {shown(place(site['caller'], rootdir))}" for site in fine]
        out.append(_messages.PLUGIN_SUMMARY_FINE.format(sites=_more(listed_fine, 3)))
    out.append("")
    out.append("Verdict:")
    out.extend(f"  {shown(said['text'])}." for said in report["verdict"].values())
    if failing:
        out.append("")
        out.append(
            _messages.PLUGIN_SUMMARY_EXEMPT.format(
                policy=policy, tests=_count(len(failing)), them="it" if len(failing) == 1 else "them"
            )
        )
        files = list(dict.fromkeys(test.partition("::")[0] for test in failing))
        out.append("  urandom_exempt =")
        out.extend(f"      {shown(pattern)}" for pattern in files[:FILES_SHOWN])
        if len(files) > FILES_SHOWN:
            out.append("      " + _messages.PLUGIN_AND_MORE.format(count=len(files) - FILES_SHOWN).strip())
    return out


def _fix(outcome: str, site: dict[str, Any], rootdir: str) -> str:
    """The fix that fits a call site, under the run's policy."""
    from .records import place, shown

    caller = str(site["caller"]) if isinstance(site["caller"], str) else "<?>"
    path = caller.rpartition(":")[0]
    line = shown(place(caller, rootdir))
    if outcome == "raise":
        if caller.startswith("<"):  # `python -c`, the REPL: no file to edit
            return _messages.PLUGIN_FIX_RAISE_NO_FILE
        if path.startswith(os.path.join(rootdir, "")) and "-packages" not in path:
            return _messages.PLUGIN_FIX_RAISE.format(line=line)
        return _messages.PLUGIN_FIX_RAISE_INSTALLED.format(line=line)
    if outcome == "wait":
        return _messages.PLUGIN_FIX_WAIT
    if outcome == "weak":
        return _messages.PLUGIN_FIX_WEAK
    return ""
