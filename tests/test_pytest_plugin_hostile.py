"""The pytest plugin against issue 46's second hostile pass: the watch over a test's children stays sighted whatever
the test's node id, its environment or pytester do to pytest's own variables; an events file the run can't write is
said, never read as a clean run; a nested pytester run leaves the outer run's project alone.

Each test runs a small suite with pytest in a real venv of the real wheel, as in a user's project.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

pytest_plugins = ["pytester", "plugin_suite"]  # plugin_suite: the fixture suite, shared by the plugin's test files


SERVER = """\
import os, sys, time
key = os.urandom(32)
open(sys.argv[1], "w").write("up")
time.sleep(60)
"""

# Each test polls for a server that dies of the policy; 20 s stands in for werkzeug's wait that never ends.
POLLING = """\
import os, subprocess, sys, time, pytest

pytest_plugins = ["pytester"]
SERVER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "server.py")  # pytester changes directory


def poll(portfile, child):
    try:
        deadline = time.monotonic() + 20
        while not portfile.exists():
            assert time.monotonic() < deadline, "polled 20 s: the watch was blind"
            time.sleep(0.05)
    finally:
        child.terminate()
        child.wait()


@pytest.mark.parametrize("n", [pytest.param(1, id="x" * 350), pytest.param(2, id="x" * 349 + "y")])
def test_long_node_id(tmp_path, n):
    poll(tmp_path / "port", subprocess.Popen([sys.executable, SERVER, str(tmp_path / "port")]))


def test_after_a_pytester_run(pytester, tmp_path):
    pytester.makepyfile(test_inner="def test_inner():\\n    pass\\n")
    pytester.runpytest().assert_outcomes(passed=1)
    assert "PYTEST_CURRENT_TEST" not in os.environ  # pytester popped it
    poll(tmp_path / "port", subprocess.Popen([sys.executable, SERVER, str(tmp_path / "port")]))


def test_child_without_pytests_variables(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    poll(tmp_path / "port", subprocess.Popen([sys.executable, SERVER, str(tmp_path / "port")], env=env))
"""


def test_the_watch_names_the_test_past_a_long_node_id_pytester_and_a_stripped_environment(
    pytester: pytest.Pytester, suite: Any, tmp_path: Path
) -> None:
    pytester.makepyfile(server=SERVER, test_polling=POLLING)
    report = tmp_path / "report.json"
    result = suite("--urandom-policy=pep522", "--tb=line", f"--urandom-report={report}", timeout=60)
    out = result.stdout.str()
    assert result.parseoutcomes().get("failed") == 4, out[-4000:]
    assert "the watch was blind" not in out, out[-4000:]
    assert out.count("urandom-shim: the test's child process `python ") >= 4, out[-4000:]
    assert result.duration < 15, result.duration
    tests = {entry["test"]: entry["outcome"] for entry in json.loads(report.read_text())["tests"]}
    long_ids = [f"test_polling.py::test_long_node_id[{'x' * 350}]", f"test_polling.py::test_long_node_id[{'x' * 349}y]"]
    assert {name: tests.get(name) for name in long_ids} == dict.fromkeys(long_ids, "failed"), list(tests)
    assert tests.get("test_polling.py::test_after_a_pytester_run") == "failed", list(tests)
    assert tests.get("test_polling.py::test_child_without_pytests_variables") == "failed", list(tests)
    assert None not in tests, list(tests)  # no record "(outside any test)"


def test_a_long_node_id_is_kept_apart_in_its_records() -> None:
    from urandom_shim._events import MAX_TEST, test_key

    one, other = "t.py::t[" + "x" * 400 + "]", "t.py::t[" + "x" * 399 + "y]"
    assert len(test_key(one)) == MAX_TEST and test_key(one) != test_key(other)
    assert test_key(one) == test_key(one) and test_key("t.py::t") == "t.py::t"


def test_an_events_file_the_run_cant_write_is_said_and_the_run_keeps_its_own(
    pytester: pytest.Pytester, suite: Any, tmp_path: Path
) -> None:
    pytester.makepyfile(
        test_own="import os\n\n\ndef test_a():\n    os.urandom(8)\n\n\ndef test_b():\n    os.urandom(8)\n"
    )
    missing = tmp_path / "no-such-directory" / "events.jsonl"
    for args in (("--urandom-report-only",), ("--urandom-report-only", "-n", "2")):
        result = suite("--urandom-policy=pep522", *args, env={"URANDOM_SHIM_EVENTS": str(missing)})
        flat = " ".join(result.stdout.str().split())
        assert (
            f"urandom-shim: URANDOM_SHIM_EVENTS names {missing}, which this run can't write (No such file or "
            "directory); the run's records went to a file of its own" in flat
        ), flat[-3000:]
        assert flat.count("which this run can't write") == 1, flat[-3000:]
        assert "2 of 2 tests asked for randomness" in flat and "Nothing to change" not in flat, flat[-3000:]
        assert not missing.parent.exists()


NESTED = """\
import os, pytest

pytest_plugins = ["pytester"]


def test_a_project_policy(system_rng):
    system_rng.unready()
    with pytest.raises(BlockingIOError):
        os.urandom(1)  # pep522, from pyproject.toml


def test_b_inline(pytester):
    pytester.makepyfile(test_inner="def test_inner():\\n    pass\\n")
    pytester.runpytest().assert_outcomes(passed=1)


def test_c_project_policy_again(system_rng):
    system_rng.unready()
    with pytest.raises(BlockingIOError):
        os.urandom(1)  # still the project's policy
"""


def test_a_nested_pytester_run_leaves_the_outer_runs_project(pytester: pytest.Pytester, suite: Any) -> None:
    pytester.makepyfile(test_nested=NESTED)
    pytester.makefile(".toml", pyproject='[tool.urandom-shim]\npolicy = "pep522"\n')
    result = suite("-q")
    assert result.parseoutcomes() == {"passed": 3}, result.stdout.str()[-3000:]


IN_TEARDOWN = """\
import os, subprocess, sys, time, pytest


@pytest.fixture
def slow_clean_up():
    yield
    for _ in range(30):  # 1.5 s of clean-up: the child's death falls due in it, past the watch's grace
        time.sleep(0.05)


def test_child_dies_and_the_test_ends_at_once(slow_clean_up):
    subprocess.Popen([sys.executable, "-c", "import os; os.urandom(1)"], stderr=subprocess.DEVNULL)
    time.sleep(0.3)


def test_exempt_after_it():
    assert len(os.urandom(1)) == 1
    left = {"URANDOM_POLICY", "URANDOM_SHIM_SIMULATE", "URANDOM_SHIM_EVENTS", "URANDOM_SHIM_TEST"} & set(os.environ)
    assert not left
"""


def test_no_failure_is_sent_into_a_tests_teardown(pytester: pytest.Pytester, suite: Any) -> None:
    pytester.makepyfile(test_teardown=IN_TEARDOWN)
    result = suite("--urandom-policy=pep522", "--urandom-exempt=*::test_exempt_after_it", "-rfE")
    assert result.parseoutcomes() == {"passed": 2}, result.stdout.str()[-3000:]


def test_report_only_keeps_the_configurations_problems_off_a_childs_stderr_and_says_them_once(
    pytester: pytest.Pytester, suite: Any
) -> None:
    pytester.makefile(".toml", pyproject='[tool.urandom-shim]\ntimeout = "soon"\n')
    pytester.makepyfile(
        test_cfg="""\
import os, subprocess, sys


def test_child_stderr():
    result = subprocess.run([sys.executable, "-c", "import os; os.urandom(4)"], capture_output=True, text=True)
    assert result.stderr == ""


def test_own_stderr(capfd):
    os.urandom(4)
    assert capfd.readouterr().err == ""
"""
    )
    result = suite("--urandom-policy=pep522", "--urandom-report-only")
    flat = " ".join(result.stdout.str().split())
    assert result.parseoutcomes() == {"passed": 2}, flat[-3000:]
    said = "[tool.urandom-shim]: timeout = 'soon' is not a valid timeout"
    assert flat.count(said) == 1 and re.search(r"urandom-shim report =+ urandom-shim: ", flat), flat[-3000:]


def test_the_end_of_run_section_costs_no_more_than_its_call_sites(tmp_path: Path) -> None:
    import time
    from types import SimpleNamespace

    from urandom_shim.pytest_plugin import options, summary

    config: Any = SimpleNamespace(stash=pytest.Stash(), rootpath=tmp_path)
    config.stash[options._OPTIONS] = SimpleNamespace(
        policy="pep522", report_only=True, policy_source="--urandom-policy"
    )
    raising = {"native": "wait", "pep524": "wait", "pep522": "raise", "legacy": "weak"}
    fine = dict.fromkeys(raising, "fine")
    sites = [
        {"call": "os.urandom(1)", "caller": f"{tmp_path}/test_s.py:{n}", "site": "urandom", "tests": [f"t{n}.py::t"],
         "under": raising if n % 2 else fine, "processes": [], "in_tests_process": True, "count": 1}
        for n in range(20000)
    ]  # fmt: skip
    report = {"tests": [], "sites": sites, "skipped": 0, "tests_run": 20000, "verdict": {}}
    started = time.monotonic()
    out = summary.lines(config, report, {f"t{n}.py::t": "passed" for n in range(20000)})
    assert time.monotonic() - started < 4.0  # each site looked at a few times, not once per other site
    assert "  urandom_exempt =" in out and any(line.startswith("Also reached, with nothing to see") for line in out)


WRAPPED = """\
import os, subprocess, sys, time

SERVER = os.path.abspath("server.py")


def test_a_server_behind_a_wrapper_that_lives_on(tmp_path):
    child = subprocess.Popen(["sh", "-c", f"{sys.executable} {SERVER} {tmp_path}/port; sleep 30"])
    try:
        deadline = time.monotonic() + 20
        while not (tmp_path / "port").exists():
            assert time.monotonic() < deadline, "polled 20 s: the watch was blind"
            time.sleep(0.05)
    finally:
        child.terminate()
        child.wait()


def test_a_server_that_catches_the_refusal_behind_a_wrapper_is_no_finding():
    code = "import os\\ntry:\\n    os.urandom(1)\\nexcept BlockingIOError:\\n    pass\\n"
    subprocess.run(["sh", "-c", f"{sys.executable} -c '{code}'; sleep 1"], check=True)
"""


def test_a_process_the_policy_killed_behind_a_wrapper_fails_its_test(pytester: pytest.Pytester, suite: Any) -> None:
    pytester.makepyfile(server=SERVER, test_wrapped=WRAPPED)
    result = suite("--urandom-policy=pep522", "--tb=line", timeout=60)
    out = result.stdout.str()
    assert result.parseoutcomes() == {"failed": 1, "passed": 1}, out[-3000:]
    assert "the watch was blind" not in out and result.duration < 15, out[-3000:]
    assert "Failed: urandom-shim: the test's child process `python " in out, out[-3000:]


# -- a run that stops early (the hostile pass of this stop's addition) -------------------------------------------------

STOPS = {
    # pytest.exit() with a status of its own, in a test: it was cut short, and one test never ran.
    "exit-with-status": (
        {"test_e.py": "import pytest\ndef test_1():\n    pass\ndef test_2():\n    pytest.exit('bye', returncode=0)\n"
                      "def test_3():\n    pass\n"},
        [], "bye", (2, 1, 3),
    ),
    # A module skipped at import is no test: it must not make up for the test -x left out.
    "module-skip": (
        {"test_0.py": "import pytest\npytest.importorskip('no_such_module_here')\n",
         "test_a.py": "def test_1():\n    assert False\ndef test_2():\n    pass\n"},
        ["-x"], "stopping after 1 failures", (1, 1, 2),
    ),
    "collection-error": (
        {"test_bad.py": "import no_such_module_here\n", "test_good.py": "def test_g():\n    pass\n"},
        [], "1 error during collection", (0, 0, 1),
    ),
    "collect-only": ({"test_c.py": "def test_1():\n    pass\ndef test_2():\n    pass\n"}, ["--collect-only"],
                     "--collect-only", (0, 0, 2)),
    # Without the terminal, and with a category of a plugin's own: the outcomes are pytest's reports, not its display.
    "no-terminal": (
        {"test_t.py": "def test_1():\n    pass\ndef test_2():\n    assert False\ndef test_3():\n    assert False\n"},
        ["-p", "no:terminal", "--maxfail=2"], None, (3, 3, 3),
    ),
    "own-category": (
        {"conftest.py": "def pytest_report_teststatus(report, config):\n"
                        "    if report.when == 'call' and report.passed:\n        return 'flaky', 'F', 'FLAKY'\n",
         "test_f.py": "def test_1():\n    pass\ndef test_2():\n    assert False\n"},
        ["-x"], None, (2, 2, 2),
    ),
    # A reason of any length is shown cut, escaped.
    "long-reason": (
        {"conftest.py": "def pytest_runtest_logreport(report):\n    pass\n"
                        "def pytest_runtest_teardown(item, nextitem):\n"
                        "    item.session.shouldfail = 'A\\x1b[2J' + 'A' * 100000\n",
         "test_l.py": "def test_1():\n    pass\ndef test_2():\n    pass\n"},
        [], "A\\x1b[2JAAA", (1, 1, 2),
    ),
}  # fmt: skip


@pytest.mark.parametrize("case", list(STOPS))
def test_a_stop_is_said_whatever_ends_the_run_and_a_whole_run_never_says_it(
    pytester: pytest.Pytester, suite: Any, case: str
) -> None:
    files, args, why, (began, finished, collected) = STOPS[case]
    for name, text in files.items():
        (pytester.path / name).write_text(text)
    result = suite("--urandom-policy=pep522", "--urandom-report-only", "--urandom-report=r.json", *args)
    out = result.stdout.str()
    written = json.loads((pytester.path / "r.json").read_text())
    assert (written["tests_run"], written["tests_collected"]) == (began, collected), (written, out[-3000:])
    if why is None:  # every collected test ran
        assert written["stopped"] is None and "stopped early" not in out, (written, out[-3000:])
        return
    assert written["stopped"].startswith(why) and len(written["stopped"]) <= 200, written["stopped"][:300]
    line = next((text for text in out.splitlines() if text.startswith("The run stopped early (")), "")
    assert f"{finished} of {collected} collected test" in line and "\x1b" not in line and len(line) < 400, out[-3000:]
    assert "Nothing to change:" not in out, out[-3000:]


def test_the_json_without_a_policy_names_no_source_and_one_test_is_it(pytester: pytest.Pytester, suite: Any) -> None:
    pytester.makepyfile(test_one="import os\ndef test_key():\n    os.urandom(16)\n")
    suite("--urandom-report=r.json").assert_outcomes(passed=1)
    written = json.loads((pytester.path / "r.json").read_text())
    assert (written["policy"], written["policy_source"], written["mode"]) == (None, None, None), written
    result = suite("--urandom-policy=pep522", "--urandom-report-only")
    flat = " ".join(result.stdout.str().split())
    assert "mark the 1 test that would fail @pytest.mark.urandom(unready=False), or exempt it by node id" in flat, flat


def test_every_child_of_a_test_is_listed_at_its_call_site(pytester: pytest.Pytester, suite: Any) -> None:
    """The boot report's aggregation makes one program of children that run the same one (``python -c``), named by the
    first: the site still lists each child's own command line, as the JSON's ``processes`` promises."""
    pytester.makepyfile(
        test_kids="""
        import subprocess, sys

        def test_four():
            for n in range(4):
                subprocess.run([sys.executable, "-c", "import os; os.urandom(5)", str(n)], check=True)
        """
    )
    result = suite("--urandom-policy=pep522", "--urandom-report-only", "--urandom-report=r.json")
    result.assert_outcomes(passed=1)
    (site,) = json.loads((pytester.path / "r.json").read_text())["sites"]
    assert [argv[-1] for argv in site["processes"]] == ["0", "1", "2", "3"] and site["count"] == 4, site
    assert not site["in_tests_process"] and site["tests"] == ["test_kids.py::test_four"], site
