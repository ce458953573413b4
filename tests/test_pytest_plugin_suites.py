"""The pytest plugin on whole suites under ``--urandom-policy`` (issue 46): report-only changes nothing a test can
see and costs little; an enforced run never hangs and names the call behind every failure; every record names its
test, in the test's process, its children and pytest-xdist's workers; the JSON and JUnit output for CI; exemption by
node id; and a run that leaves nothing behind.

Each test writes a small suite shaped like the real ones the issue was found on (python-ulid's CLI tests that read a
child's stderr, werkzeug's dev-server tests that poll for a child server) and runs it with pytest in a real venv, so
the plugin is loaded by its entry point, as in a user's project. Each run checks many things at once: a run costs a
second or two, on every interpreter of the matrix.
"""

from __future__ import annotations

import ast
import json
import re
import xml.etree.ElementTree as ElementTree
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT

pytest_plugins = ["pytester", "plugin_suite"]  # plugin_suite: the fixture suite, shared by the plugin's test files


def ours(directory: Path) -> list[str]:
    """Every file or directory of the plugin's under ``directory``."""
    return sorted(str(p) for p in directory.rglob("*") if "urandom-shim" in p.name or p.name == "events.jsonl")


# -- report-only: nothing a test can see changes, and the cost does not grow with the suite --------------------------

CHILD = """\
import os
key = os.urandom(16)
print(len(key))
"""

# gc.get_referrers, counted: engaging a policy walks the whole heap with it, which once per test made werkzeug's
# suite 7.6 times slower.
COUNTING_CONFTEST = """\
import gc

CALLS = []
_real = gc.get_referrers


def counting(*objects):
    CALLS.append(1)
    return _real(*objects)


gc.get_referrers = counting
"""

REPORT_ONLY_TESTS = """\
import os, secrets, signal, subprocess, sys
import pytest


def run_child():
    return subprocess.run([sys.executable, "child.py"], capture_output=True, text=True, timeout=60)


def test_a_childs_output_is_what_it_is_without_the_plugin():
    result = run_child()
    assert (result.returncode, result.stdout, result.stderr) == (0, "16\\n", "")


def test_the_tests_own_stderr_is_untouched(capfd):
    for _ in range(3):
        os.urandom(8)
    secrets.token_hex(4)
    assert capfd.readouterr().err == ""


@pytest.mark.parametrize("n", range(20))
def test_many(n):
    assert len(os.urandom(4)) == 4


def test_a_key_from_a_library_outside_the_project():
    import keys

    assert len(keys.make()) == 24


def test_zz_no_signal_handler_of_the_plugin_and_one_walk_of_the_heap():
    import conftest

    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL
    assert len(conftest.CALLS) <= 3, len(conftest.CALLS)
"""


def test_report_only_changes_nothing_a_test_sees_and_reports_per_test(
    pytester: pytest.Pytester, suite: Any, tmp_path: Path
) -> None:
    pytester.makepyfile(child=CHILD, conftest=COUNTING_CONFTEST, test_app=REPORT_ONLY_TESTS)
    basetemp, scratch, library = tmp_path / "basetemp", tmp_path / "tmp", tmp_path / "library"
    scratch.mkdir()
    library.mkdir()
    (library / "keys.py").write_text("import os\n\n\ndef make():\n    return os.urandom(24)\n")
    report, junit = tmp_path / "report.json", tmp_path / "junit.xml"
    result = suite(
        "--urandom-policy=pep522", "--urandom-report-only", f"--urandom-report={report}", f"--junitxml={junit}",
        f"--basetemp={basetemp}", env={"TMPDIR": str(scratch), "PYTHONPATH": str(library)},
    )  # fmt: skip
    out = result.stdout.str()
    result.assert_outcomes(passed=24)
    # Nothing of ours on stderr, before or after the summary, and nothing printed after pytest's last line.
    assert "urandom-shim" not in result.stderr.str(), result.stderr.str()
    assert re.match(r"=+ 24 passed in [\d.]+s", result.outlines[-1]), result.outlines[-3:]
    # The section speaks of tests and of what to do in a test suite, never of a [[program]] rule for pytest.
    flat = " ".join(out.split())
    section = flat.split("= urandom-shim report =")[-1]
    assert "Under policy 'pep522' (from --urandom-policy), report-only (every call behaved as native)" in flat, out
    assert "os.urandom(16) at child.py:2" in out and "os.urandom(4) at test_app.py:" in out, out
    assert "test_app.py::test_many[0], test_app.py::test_many[1], test_app.py::test_many[2] and 17 more" in flat
    assert "child processes: python child.py" in flat, out
    assert "call secrets.wait_for_system_rng() once before child.py:2" in flat, out
    assert "under pep522, 24 tests would raise BlockingIOError" not in flat  # 23: the last test makes no call
    assert "under pep522, 23 tests would raise BlockingIOError" in flat, out
    # A call in code outside the project: the fix is in your code, before the line that leads there.
    assert f"os.urandom(24) at {library / 'keys.py'}:5" in flat, out
    assert (
        f"fix {library / 'keys.py'}:5 is not in your project's code: call secrets.wait_for_system_rng() once in "
        "your code, before the line that leads there" in flat
    ), out
    assert "urandom_exempt =" in section and "program" not in section.lower(), section
    # The JSON: per test, its calls in the shape of `urandom-shim report --json`, each with its process.
    found = json.loads(report.read_text())
    tests = {entry["test"]: entry for entry in found["tests"]}
    child_test = tests["test_app.py::test_a_childs_output_is_what_it_is_without_the_plugin"]
    (program,) = child_test["programs"]
    assert program["argv"][-1] == "child.py" and program["calls"][0]["caller"].endswith("child.py:2"), program
    assert program["calls"][0]["under"] == {"native": "wait", "pep524": "wait", "pep522": "raise", "legacy": "weak"}
    own = {call["call"]: call for p in tests["test_app.py::test_the_tests_own_stderr_is_untouched"]["programs"]
           for call in p["calls"]}  # fmt: skip
    assert own["os.urandom(8)"]["count"] == 3, own  # the repeat is the test's, written at its end
    assert own["secrets.token_hex()"]["under"]["pep522"] == "wait", own
    assert found["verdict"]["pep522"]["raise"] and found["mode"] == "report"
    # JUnit: each test that reached the CRNG carries `urandom` properties.
    cases = {case.get("name"): case for case in ElementTree.parse(junit).iter("testcase")}
    properties = [p.get("value") for p in cases["test_a_childs_output_is_what_it_is_without_the_plugin"].iter("property")
                  if p.get("name") == "urandom"]  # fmt: skip
    assert (
        len(properties) == 1
        and "os.urandom(16) at child.py:2, in a child process, `python child.py`" in (properties[0])
    ), properties
    assert "pep522 raises" in properties[0], properties
    assert not list(cases["test_zz_no_signal_handler_of_the_plugin_and_one_walk_of_the_heap"].iter("property"))
    # Nothing of ours is left: not in pytest's temporary directory, nor in TMPDIR (the exit-time record included).
    assert ours(basetemp) == [] and ours(scratch) == [], (ours(basetemp), ours(scratch))


# -- enforced: never hangs, and every failure names the call -----------------------------------------------------------

SERVER = """\
import os, sys
key = os.urandom(32)
open(sys.argv[1], "w").write("up")
"""

ENFORCED_TESTS = """\
import os, subprocess, sys, time

import tokens  # a library outside the project: on PYTHONPATH, as an installed package is


def test_waits_forever_for_a_server_that_died(tmp_path):
    ready = tmp_path / "up"
    subprocess.Popen([sys.executable, "server.py", str(ready)])
    while not ready.exists():  # werkzeug's dev-server tests poll for their server, with no end
        time.sleep(0.05)


def test_checks_its_child_which_died_of_the_policy():
    assert subprocess.run([sys.executable, "server.py", os.devnull]).returncode == 0


def make_token():
    return tokens.token()


def test_a_wait_nothing_will_end():
    make_token()


def test_swallows_the_refusal_then_fails_for_another_reason():
    try:
        os.urandom(8)
    except BlockingIOError:
        pass
    assert False, "went on without a key"


def test_exempt_in_the_ini_file():
    assert len(os.urandom(8)) == 8


def test_exempt_on_the_command_line():
    assert len(os.urandom(8)) == 8
"""


def test_an_enforced_run_never_hangs_and_each_failure_names_the_call(
    pytester: pytest.Pytester, suite: Any, tmp_path: Path
) -> None:
    pytester.makepyfile(server=SERVER, test_enforced=ENFORCED_TESTS)
    pytester.makeini("[pytest]\nurandom_exempt = test_enforced.py::test_exempt_in_the_ini_file\n")
    library = tmp_path / "library"
    library.mkdir()
    (library / "tokens.py").write_text("import secrets\n\n\ndef token():\n    return secrets.token_hex(8)\n")
    result = suite(
        "--urandom-policy=pep522", "--urandom-exempt=test_enforced.py::test_exempt_on_the_command_line",
        env={"PYTHONPATH": str(library)},
    )  # fmt: skip
    outcomes = result.parseoutcomes()
    assert (outcomes.get("failed"), outcomes.get("passed")) == (4, 2), result.stdout.str()[-5000:]
    assert result.duration < 60, result.duration  # no wait was sat out, and no poll went on
    flat = " ".join(result.stdout.str().split())
    died = (
        "urandom-shim: the test's child process `python server.py {path}` (pid {pid}) exited with status 1 after "
        "os.urandom(32) at server.py:2 raised BlockingIOError under policy 'pep522' (from --urandom-policy)."
    )
    pattern = re.escape(died).replace(re.escape("{path}"), r"\S+").replace(re.escape("{pid}"), r"\d+")
    # The waiting test's failure; the test that checked its child may name the death too, if the watch saw the
    # child before the test waited for it.
    assert re.search(r"E +Failed: " + pattern, flat), flat[-6000:]
    # The test that waited for its dead child was failed where it waited: its traceback ends in its own loop.
    assert "The test was still running 0.5 s later, so the plugin failed it where it was" in flat
    assert re.search(r"time\.sleep\(0\.05\) E +Failed: urandom-shim: the test's child process", flat), flat[-6000:]
    # The wait that nothing would end: the call, its line, the line in the test that led there, and the traceback.
    assert (
        f"urandom-shim: secrets.token_hex() at {library / 'tokens.py'}:5 (reached from test_enforced.py:18, "
        "in your code) would wait forever for the simulated kernel CRNG: nothing in this test will ever make it "
        "ready (under urandom-shim policy 'pep522' (from --urandom-policy))." in flat
    ), flat[-6000:]
    assert "Traceback to the call (most recent call last):" in flat
    assert 'File "test_enforced.py", line 22, in test_a_wait_nothing_will_end make_token()' in flat, flat[-6000:]
    assert f'File "{library / "tokens.py"}", line 5, in token return secrets.token_hex(8)' in flat, flat[-6000:]
    assert "or mark it with a policy under which this call does not wait (legacy)" in flat  # not "pep522 or legacy"
    # The report at the end has the wait nothing would end: the call, and the fix for a line outside the project.
    section = flat.split("= urandom-shim report =")[-1]
    assert f"secrets.token_hex() at {library / 'tokens.py'}:5" in section and "--journal-dir" not in section, section
    assert "at boot this waits for the CRNG" in section, section
    # A test that checked its child fails by itself, and its report names the call that killed the child.
    assert re.search(
        r"the policy raised BlockingIOError in this test: os\.urandom\(32\) at server\.py:2, in a child "
        r"process, `python server\.py /dev/null` \(pid \d+\)",
        flat,
    ), flat[-6000:]
    # A failure of the test's own: the call the policy refused is named in a section of its report.
    assert (
        "the policy raised BlockingIOError in this test: os.urandom(8) at test_enforced.py:27, in the "
        "test's own process" in flat
    ), flat[-6000:]


WAITING_SERVER = """\
import os, secrets, sys
{start_up}
with open(sys.argv[1], "w") as file:
    file.write("up")
"""

POLLING_TEST = """\
import subprocess, sys, time


def test_polls_for_a_server_whose_start_up_waits(tmp_path):
    portfile = tmp_path / "port"
    child = subprocess.Popen([sys.executable, "server.py", str(portfile)])
    try:
        while not portfile.exists():
            time.sleep(0.05)
    finally:
        child.kill()
        child.wait()
"""


@pytest.mark.parametrize(
    ("policy", "start_up"),
    [("pep522", "secrets.wait_for_system_rng()"), ("pep524", "os.urandom(32)")],
)
def test_a_test_polling_for_a_child_whose_wait_the_guard_ended_fails_instead_of_hanging(
    pytester: pytest.Pytester, suite: Any, policy: str, start_up: str
) -> None:
    """A child's wait on the simulated CRNG raises at once (``URANDOM_SHIM_WAIT_BOUND``): the how-to's fixed server
    without its ``conftest.py``. The child died of it without a record, so a test polling for it ran forever."""
    pytester.makepyfile(server=WAITING_SERVER.format(start_up=start_up), test_polling=POLLING_TEST)
    result = suite(f"--urandom-policy={policy}", "--urandom-timeout=2", timeout=60)  # pytester's timeout: a hang fails
    assert result.parseoutcomes().get("failed") == 1, result.stdout.str()[-5000:]
    flat = " ".join(result.stdout.str().split())
    died = (
        f"exited with status 1 after {start_up} at server.py:2 raised BlockingIOError (its wait timed out) under "
        f"policy '{policy}' (from --urandom-policy)."
    )
    assert died in flat, flat[-6000:]
    assert re.search(r"time\.sleep\(0\.05\) E +Failed: urandom-shim: the test's child process", flat), flat[-6000:]
    # Waiting once more before the line would be cut short too: the way out is to make the CRNG ready in time.
    assert "Call system_rng.ready_after(SECONDS) before the call; or mark the test" in flat, flat[-6000:]
    failure = flat.split("= urandom-shim report =")[0]
    assert "call secrets.wait_for_system_rng() once before" not in failure, failure[-6000:]


def test_the_timeout_names_its_own_option_and_a_bad_option_is_one_usage_error(
    pytester: pytest.Pytester, suite: Any, tmp_path: Path
) -> None:
    pytester.makepyfile(
        test_timeout="""
        import os, pytest

        def test_the_timeout_and_the_policy_each_name_their_source():
            with pytest.raises(BlockingIOError) as info:
                os.urandom(8)
            assert "(timeout from --urandom-timeout)" in str(info.value), str(info.value)
            assert "policy 'pep524' (from --urandom-policy)" in str(info.value), str(info.value)
        """
    )
    suite("--urandom-policy=pep524", "--urandom-timeout=0.2").assert_outcomes(passed=1)
    for args, message in (
        (["--urandom-exempt=test_x.py"], "--urandom-exempt exempts tests from --urandom-policy, which is not given"),
        (["--urandom-policy=pep522", f"--urandom-report={tmp_path / 'no' / 'such.json'}"], "can't be written"),
    ):
        result = suite(*args)
        assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stderr.str()
        assert message in result.stderr.str() and "Traceback" not in result.stderr.str(), result.stderr.str()


# -- pytest-xdist's workers, and the events file you name --------------------------------------------------------------

XDIST_TESTS = """\
import os, subprocess, sys
import pytest


@pytest.mark.parametrize("n", range(4))
def test_in_a_worker_and_its_child(n):
    os.urandom(8)
    subprocess.run([sys.executable, "-c", "import os; os.urandom(16)"], check=True)
"""


@pytest.mark.slow
def test_every_record_names_its_test_under_xdist_and_the_events_file_you_name_is_used(
    pytester: pytest.Pytester, suite: Any, tmp_path: Path
) -> None:
    pytester.makepyfile(test_workers=XDIST_TESTS)
    events, report = tmp_path / "events.jsonl", tmp_path / "report.json"
    result = suite(
        "-n", "2", "--urandom-policy=pep522", "--urandom-report-only", f"--urandom-report={report}",
        env={"URANDOM_SHIM_EVENTS": str(events)},
    )  # fmt: skip
    result.assert_outcomes(passed=4)
    records = [json.loads(line) for line in events.read_text().splitlines() if line.strip()]  # yours: it stays
    by_test: dict[str, set[str]] = {}
    for record in records:
        by_test.setdefault(record["test"], set()).add(record["call"])
    assert by_test == {f"test_workers.py::test_in_a_worker_and_its_child[{n}]": {"os.urandom(8)", "os.urandom(16)"}
                       for n in range(4)}, by_test  # fmt: skip
    workers = {r["pid"] for r in records if r["call"] == "os.urandom(8)"}
    assert len({r["pid"] for r in records}) == 4 + len(workers), records  # each child, and the workers
    found = json.loads(report.read_text())
    assert sorted(entry["test"] for entry in found["tests"]) == sorted(by_test), found["tests"]
    section = result.stdout.str().split("urandom-shim report")[-1]
    assert "os.urandom(16) at <string>:1" in section and "4: test_workers.py::" in section, section
    assert "in     the tests' own processes" in section and "exec(eval" not in section, section  # workers: no child


# -- the plugin's shape ----------------------------------------------------------------------------------------------

PLUGIN = ROOT / "urandom_shim" / "pytest_plugin"


def test_the_plugin_is_a_package_of_modules_with_one_job_each_and_keeps_no_state_in_them() -> None:
    assert PLUGIN.is_dir(), "urandom_shim/pytest_plugin is one module"
    modules = sorted(path.stem for path in PLUGIN.glob("*.py") if path.stem != "__init__")
    package = ast.parse((PLUGIN / "__init__.py").read_text(encoding="utf-8"))
    registered = next(
        ast.literal_eval(node.value)
        for node in package.body
        if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "pytest_plugins" for t in node.targets)
    )
    hooks = {
        path.stem
        for path in PLUGIN.glob("*.py")
        if re.search(r"^def pytest_|^@pytest\.fixture", path.read_text(encoding="utf-8"), re.M)
    }
    assert {f"urandom_shim.pytest_plugin.{name}" for name in hooks} == set(registered), (hooks, registered)
    assert set(registered) <= {f"urandom_shim.pytest_plugin.{name}" for name in modules}
    for path in PLUGIN.glob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        docstring = ast.get_docstring(tree) or ""
        assert "PYTEST_DONT_REWRITE" in docstring and "One piece" not in docstring, path.name
        for node in tree.body:
            # State lives in the run (config.stash) and the test, never in a module's mutable global.
            value = getattr(node, "value", None)
            names = [getattr(t, "id", "") for t in getattr(node, "targets", [getattr(node, "target", None)])]
            empty = (isinstance(value, (ast.List, ast.Set, ast.Dict)) and not _elements(value)) or (
                isinstance(value, ast.Call) and getattr(value.func, "id", "") in ("list", "set", "dict")
            )
            assert not empty, f"{path.name}:{node.lineno}: {names} starts empty, to be filled as the run goes"
        imported = {alias.name for node in ast.walk(tree) if isinstance(node, (ast.Import, ast.ImportFrom))
                    for alias in node.names}  # fmt: skip
        assert "signal" not in imported, f"{path.name} imports signal: no handler of ours in the user's process"


def _elements(node: ast.AST) -> list[Any]:
    return list(getattr(node, "elts", None) or getattr(node, "keys", None) or [])


def test_an_event_names_the_test_from_pytests_variable_and_its_lines_move_to_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from urandom_shim import _events, _policies
    from urandom_shim._config import resolve

    path = tmp_path / "events.jsonl"
    settings, _problems = resolve(overrides={"policy": "pep522", "events": str(path)}, overrides_source="test")
    monkeypatch.setenv("PYTEST_CURRENT_TEST", "tests/test_a.py::test_b[x (call)] (call)")
    event = _events._event(settings, _policies.URANDOM, "os.urandom(8)", "a.py:1", "raised", "raise", 0.0)
    assert event["test"] == "tests/test_a.py::test_b[x (call)]"
    monkeypatch.delenv("PYTEST_CURRENT_TEST")
    assert (
        _events._event(settings, _policies.URANDOM, "os.urandom(8)", "a.py:1", "raised", "raise", 0.0)["test"] is None
    )
    monkeypatch.setenv(_events.LINES_VARIABLE, "0")
    _events.write(event, settings)
    assert capsys.readouterr().err == "" and json.loads(path.read_text().strip())["test"] == event["test"]
    unfiled, _problems = resolve(overrides={"policy": "pep522"}, overrides_source="test")
    _events.write(event, unfiled)  # no events file: the line stays, so that no event is ever lost
    assert "os.urandom(8) called from a.py:1" in capsys.readouterr().err
    path.unlink()
    _events.write({**event, "event": "repeat", "count": 3}, settings, repeat=True)
    assert not path.exists()  # a repeat adds to a first record: it never makes the file again
