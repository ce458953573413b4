"""The report's prediction is the engine's decision (issue 45): a differential test.

A grid of programs and settings. Each cell runs every program enforced under each policy on the fake kernel
(tests/fakekernel.c), and once more in report mode with an events file, all in one window of the kernel's, which
closes a second after the last program has begun its call. What ``urandom-shim report --json`` then says each policy would do with each program is compared with
what that program did when the policy was enforced:

- it raised ``BlockingIOError``: ``raise``;
- it returned after the CRNG became ready: ``wait``;
- it returned while the CRNG was still unready: ``weak`` for a program that asks for bytes meant for secrets, and
  ``fine`` for one that only seeds ``random`` (``random.Random()``, ``tempfile``).

The oracle is the program's own observation (did it raise; was the kernel's flag file still there when the call
returned), never the shim's code. The policy of an enforced run is the machine file's (``URANDOM_SHIM_MACHINE_CONFIG``),
as an administrator would switch it, so that a ``[[program]]`` rule of that file keeps its own.

It runs on Debian's ``python3`` and on PyPy (the decision is the package's; PyPy's own ``os.urandom()`` differs). PyPy
runs on a kernel before 5.18 (``FAKE_KERNEL_RELEASE``), where its own ``os.urandom()`` returns weak bytes at once.
``URANDOM_SHIM_MATRIX_FULL=1`` runs it on every interpreter.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pytest
from conftest import FakeKernel, Venv, clean_env, is_pypy

POLICIES = ("native", "pep524", "pep522", "legacy")

#: Each program: what it imports first, the one call it makes in the window, and whether the bytes it asks for are
#: meant for secrets. An import that is the call (``multiprocessing`` calls os.urandom(32)) has no setup.
PROGRAMS = {
    "urandom": ("import os", "os.urandom(16)", True),
    "secrets": ("import secrets", "secrets.token_bytes(16)", True),
    "uuid4": ("import uuid", "uuid.uuid4()", True),
    "systemrandom": ("import random", "random.SystemRandom().random()", True),
    "random_instance": ("import random", "random.Random().random()", False),
    "tempfile": ("import tempfile", "os.close(tempfile.mkstemp(dir=os.getcwd())[0])", False),
    "multiprocessing": ("", "import multiprocessing", True),
}

#: The settings of each cell: the machine file's lines besides its policy. The timeout is shorter than the window.
CELLS = {
    "defaults": "",
    "the fuse": 'seed_random_instances = "policy"',
    "a timeout that raises": "timeout = 0.3",
    "a timeout that falls back": 'timeout = 0.3\non_timeout = "fallback"',
    "a floor": "allow_weak = false",
    "a floor with a fallback": 'allow_weak = false\ntimeout = 0.3\non_timeout = "fallback"',
    "a [[program]] rule": '[[program]]\nmatch = "prog_*"\npolicy = "pep522"\nseed_random_instances = "policy"',
}

#: How long the window stays open after the last program has begun its call: past the 0.3 s timeout, so that a
#: bounded wait runs out in it. The window opens before the programs start, however long they take to.
AFTER_THE_LAST_CALL = 1.0

#: Every program says, just before its call, that it is about to make it (the test closes the window only after every
#: program has), then what the call did: raised, or returned; and whether the CRNG was still unready then.
HARNESS = """\
import json, os
{setup}
flag = os.environ["FAKE_KERNEL_UNREADY"]
open(os.environ["GRID_STARTED"], "w").close()
before = os.path.exists(flag)
try:
    {call}
    outcome = "returned"
except BlockingIOError:
    outcome = "raised"
print(json.dumps({{"outcome": outcome, "unready_before": before, "unready_after": os.path.exists(flag)}}))
"""


@pytest.fixture(autouse=True)
def where_it_runs(python: Path) -> None:
    if is_pypy(str(python)) or str(python) == "/usr/bin/python3":
        return
    if os.environ.get("URANDOM_SHIM_MATRIX_FULL", "") not in ("", "0"):
        return
    pytest.skip("the differential grid runs on Debian's python3 and on PyPy (URANDOM_SHIM_MATRIX_FULL=1: everywhere)")


def observed(result: subprocess.CompletedProcess[str], secret: bool) -> str:
    """What a program's run shows it came to: raise, wait, weak or fine."""
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.strip(), f"{result.args}: nothing on stdout:\n{result.stderr}"
    said = json.loads(result.stdout.strip().splitlines()[-1])
    assert said["unready_before"], f"the program started after the window closed: {said}\n{result.stderr}"
    if said["outcome"] == "raised":
        return "raise"
    if not said["unready_after"]:
        return "wait"
    return "weak" if secret else "fine"


def run_cell(venv: Venv, fake_kernel: FakeKernel, work: Path, settings: str, pypy: bool) -> dict[tuple[str, str], str]:
    """Every program of the grid under every policy, enforced, and once in report mode, all in one window of the fake
    kernel, which closes once every program has begun its call. Returns {(program, policy): what happened} and,
    under (program, "report:POLICY"), what the report says that policy would do with it."""
    flag = work / "unready"
    flag.touch()
    started = work / "started"
    started.mkdir()
    env = fake_kernel.env(flag)
    env["PYTHONHASHSEED"] = "0"  # a start that reads no hash secret: the window is the calls'
    if pypy:
        # A kernel before 5.18, where PyPy's own os.urandom() (a read of /dev/urandom) returns weak bytes at once.
        # (On 5.18 and later the read waits, and so does PyPy's `import random`, which seeds from it: no program
        # could begin its call inside the window.)
        env["FAKE_KERNEL_RELEASE"] = "5.10.0-28-amd64"
    events = work / "events.jsonl"
    for name, (setup, call, _secret) in PROGRAMS.items():  # every script is whole before any process reads it
        (work / f"prog_{name}.py").write_text(HARNESS.format(setup=setup, call=call))
    runs: dict[tuple[str, str], subprocess.Popen[str]] = {}
    for policy in (*POLICIES, "report"):
        config = work / f"machine-{policy}.toml"
        mode = (
            f'mode = "report"\nevents = "{events}"\npolicy = "pep522"' if policy == "report" else f'policy = "{policy}"'
        )
        config.write_text(f"{mode}\n{settings}\n")
        for name in PROGRAMS:
            runs[name, policy] = subprocess.Popen(
                [str(venv.python), str(work / f"prog_{name}.py")],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                cwd=work,
                env=clean_env(
                    {
                        **env,
                        "URANDOM_SHIM_MACHINE_CONFIG": str(config),
                        "GRID_STARTED": str(started / f"{name}-{policy}"),
                    }
                ),
            )
    try:
        deadline = time.monotonic() + 120
        while len(list(started.iterdir())) < len(runs) and time.monotonic() < deadline:
            if any(process.poll() not in (None, 0) for process in runs.values()):
                break  # a program failed before its call: its output says why
            time.sleep(0.05)
        time.sleep(AFTER_THE_LAST_CALL)
        flag.unlink()
        done = {}
        for key, process in runs.items():
            out, err = process.communicate(timeout=60)
            done[key] = subprocess.CompletedProcess(process.args, process.returncode, out, err)
    finally:
        flag.unlink(missing_ok=True)
        for process in runs.values():
            process.kill()
    found = {key: observed(result, PROGRAMS[key[0]][2]) for key, result in done.items() if key[1] != "report"}
    cli = venv.path / "bin" / "urandom-shim"
    report = subprocess.run(
        [str(cli), "report", "--events", str(events), "--no-journal", "--json"],
        capture_output=True,
        text=True,
        env=clean_env(),
    )
    assert report.returncode == 0, report.stderr
    programs = {program["program"]: program for program in json.loads(report.stdout)["programs"]}
    for name in PROGRAMS:
        assert done[name, "report"].returncode == 0, done[name, "report"].stderr
        program = programs.get(f"prog_{name}.py")
        assert program is not None, f"prog_{name}.py made no event in report mode:\n{done[name, 'report'].stderr}"
        for policy in POLICIES:
            found[name, f"report:{policy}"] = program["under"][policy]
    return found


#: What each cell shows when enforced, besides agreeing with the report: so that a cell can't pass by making every
#: program come to the same thing. (program, policy) -> what the program did.
SHOWS = {
    "defaults": {("urandom", "pep522"): "raise", ("urandom", "pep524"): "wait", ("urandom", "legacy"): "weak",
                 ("random_instance", "pep522"): "fine", ("secrets", "pep522"): "wait"},
    "the fuse": {("random_instance", "pep522"): "raise", ("random_instance", "pep524"): "wait",
                 ("tempfile", "pep522"): "raise", ("random_instance", "legacy"): "fine"},
    "a timeout that raises": {("urandom", "pep524"): "raise", ("secrets", "pep522"): "raise"},
    "a timeout that falls back": {("urandom", "pep524"): "weak", ("secrets", "pep522"): "weak"},
    "a floor": {("urandom", "legacy"): "wait", ("urandom", "pep522"): "raise", ("urandom", "native"): "wait"},
    "a floor with a fallback": {("urandom", "pep524"): "raise", ("urandom", "legacy"): "raise"},
    "a [[program]] rule": {("random_instance", "native"): "raise", ("urandom", "legacy"): "raise",
                           ("secrets", "pep524"): "wait"},
}  # fmt: skip
#: What PyPy's own os.urandom() does before Linux 5.18 (native): weak bytes at once; under a floor it waits.
SHOWS_NATIVE = {"pypy": "weak", "cpython": "wait"}


@pytest.mark.lengthy
@pytest.mark.parametrize("cell", list(CELLS))
def test_the_report_says_what_enforcing_each_policy_does(
    cell: str, python: Path, shim: Venv, fake_kernel: FakeKernel, tmp_path: Path
) -> None:
    found = run_cell(shim, fake_kernel, tmp_path, CELLS[cell], is_pypy(str(python)))
    disagree: list[str] = []
    for name in PROGRAMS:
        for policy in POLICIES:
            enforced, predicted = found[name, policy], found[name, f"report:{policy}"]
            if enforced != predicted:
                disagree.append(f"{name} under {policy}: enforced {enforced}, the report says {predicted}")
    assert not disagree, f"{cell}:\n" + "\n".join(disagree)
    shows = dict(SHOWS[cell])
    if cell == "defaults":
        shows["urandom", "native"] = SHOWS_NATIVE["pypy" if is_pypy(str(python)) else "cpython"]
    assert {key: found[key] for key in shows} == shows
