"""Waiting: Ctrl-C, many threads, fork, the warn_after diagnostic, and timeouts. All in real subprocesses."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pytest
from conftest import Venv, assert_sigint_interrupts_promptly, events_in, spawn, without_events

PEP522_TEXT = "system random number generator is not ready"


def read_line(proc: subprocess.Popen[str]) -> str:
    assert proc.stdout is not None
    return proc.stdout.readline().strip()


def test_sigint_interrupts_a_pep524_wait_promptly(shim: Venv) -> None:
    assert_sigint_interrupts_promptly(shim, {"URANDOM_POLICY": "pep524", "URANDOM_SHIM_SIMULATE": "unready-forever"})


def test_thirty_two_blocked_threads_are_all_released_when_the_crng_turns_ready(shim: Venv, tmp_path: Path) -> None:
    trigger = tmp_path / "unready"
    trigger.touch()
    code = (
        "import os, threading, time, json\n"
        "done = []\n"
        "def worker():\n"
        "    os.urandom(16)\n"
        "    done.append(time.monotonic())\n"
        "threads = [threading.Thread(target=worker) for _ in range(32)]\n"
        "[t.start() for t in threads]\n"
        "time.sleep(0.5)\n"
        "print(json.dumps({'returned_while_unready': len(done)}), flush=True)\n"
        "[t.join(30) for t in threads]\n"
        "print(json.dumps({'returned': len(done), 'last': max(done)}), flush=True)\n"
    )
    env = {"URANDOM_POLICY": "pep524", "URANDOM_SHIM_SIMULATE": f"unready-until-file:{trigger}"}
    proc = spawn(shim, code, env)
    try:
        assert json.loads(read_line(proc)) == {"returned_while_unready": 0}
        removed = time.monotonic()
        trigger.unlink()
        final = json.loads(read_line(proc))
        proc.wait(10)
    finally:
        proc.kill()
    assert final["returned"] == 32
    assert removed <= final["last"] < removed + 2.0


def test_a_process_that_forks_while_another_thread_waits_waits_the_same_way_in_the_child(
    shim: Venv, tmp_path: Path
) -> None:
    trigger = tmp_path / "unready"
    trigger.touch()
    code = (
        "import os, threading, time, json, sys\n"
        "def parent_waiter():\n"
        "    os.urandom(16)\n"
        "    print(json.dumps({'who': 'parent-thread', 't': time.monotonic()}), flush=True)\n"
        "threading.Thread(target=parent_waiter).start()\n"
        "time.sleep(0.3)\n"
        "pid = os.fork()\n"
        "if pid == 0:\n"
        "    print(json.dumps({'who': 'child-start'}), flush=True)\n"
        "    os.urandom(16)\n"
        "    print(json.dumps({'who': 'child', 't': time.monotonic()}), flush=True)\n"
        "    os._exit(0)\n"
        "os.waitpid(pid, 0)\n"
    )
    env = {"URANDOM_POLICY": "pep524", "URANDOM_SHIM_SIMULATE": f"unready-until-file:{trigger}"}
    proc = spawn(shim, code, env)
    try:
        assert json.loads(read_line(proc)) == {"who": "child-start"}
        time.sleep(0.5)
        removed = time.monotonic()
        trigger.unlink()
        out, err = proc.communicate(timeout=10)
    finally:
        proc.kill()
    reports = {r["who"]: r["t"] for r in map(json.loads, out.strip().splitlines())}
    assert set(reports) == {"child", "parent-thread"}, (out, err)
    assert all(removed <= t < removed + 2.0 for t in reports.values()), (reports, removed)
    assert "Traceback" not in err, err


def test_warn_after_prints_one_diagnostic_naming_call_policy_source_and_fix(shim: Venv) -> None:
    env = {
        "URANDOM_POLICY": "pep524",
        "URANDOM_SHIM_SIMULATE": "unready-forever",
        "URANDOM_SHIM_WARN_AFTER": "0.3",
        "URANDOM_SHIM_TIMEOUT": "0.8",
        "URANDOM_SHIM_ON_TIMEOUT": "fallback",
    }
    result = shim.run("-c", "import os; os.urandom(16); os.urandom(8); print('ok')", env=env)
    assert result.returncode == 0 and result.stdout == "ok\n", result.stderr
    lines = result.stderr.splitlines()
    waiting = [line for line in lines if "has been waiting" in line]
    assert len(waiting) == 1, lines  # one per call site, not one per call
    line = waiting[0]
    assert line.startswith("urandom-shim: os.urandom(16) has been waiting 0.3 s")
    assert "policy 'pep524' (from environment variable URANDOM_POLICY)" in line
    assert "URANDOM_POLICY=pep522" in line
    assert "To bound the wait" not in line, line  # it has a timeout already
    assert "simulated by URANDOM_SHIM_SIMULATE=unready-forever" in line


@pytest.mark.lengthy  # waits out the default warn-after, 5 s
def test_warn_after_is_on_by_default(shim: Venv) -> None:
    env = {"URANDOM_POLICY": "pep524", "URANDOM_SHIM_SIMULATE": "unready-forever", "URANDOM_SHIM_TIMEOUT": "5.5"}
    result = shim.run("-c", "import os; os.urandom(1)", env=env, timeout=30)
    assert "os.urandom(1) has been waiting 5.0 s" in result.stderr, result.stderr
    assert result.stderr.rstrip().splitlines()[-1].startswith("BlockingIOError: " + PEP522_TEXT)


def test_timeout_with_raise_raises_blocking_io_error_after_the_timeout(shim: Venv) -> None:
    env = {"URANDOM_POLICY": "pep524", "URANDOM_SHIM_SIMULATE": "unready-forever", "URANDOM_SHIM_TIMEOUT": "0.5"}
    code = (
        "import os, time, errno\nt = time.monotonic()\n"
        "try:\n    os.urandom(16)\nexcept BlockingIOError as e:\n"
        "    print(round(time.monotonic() - t, 1), e.errno == errno.EAGAIN)\n    print(e)\n"
    )
    result = shim.run("-c", code, env=env)
    took, eagain = result.stdout.splitlines()[0].split()
    assert 0.5 <= float(took) < 2.0 and eagain == "True", result.stdout
    message = result.stdout.splitlines()[1]
    assert message.startswith(PEP522_TEXT)
    assert "waited 0.5 s (timeout from environment variable URANDOM_SHIM_TIMEOUT)" in message


@pytest.mark.parametrize("call", ["os.urandom(16)", "__import__('secrets').token_bytes(16)"])
def test_timeout_with_fallback_returns_best_effort_bytes_and_warns_once(shim: Venv, call: str) -> None:
    env = {
        "URANDOM_POLICY": "pep522" if "secrets" in call else "pep524",
        "URANDOM_SHIM_SIMULATE": "unready-forever",
        "URANDOM_SHIM_TIMEOUT": "0.2",
        "URANDOM_SHIM_ON_TIMEOUT": "fallback",
    }
    result = shim.run("-c", f"import os; print(len({call})); print(len({call}))", env=env)
    assert result.returncode == 0 and result.stdout == "16\n16\n", result.stderr
    lines = without_events(result.stderr).splitlines()
    assert len(lines) == 1, lines
    # The two calls are one call site: one event, then one repeat at exit. (Importing secrets imports random, whose
    # seeding is an event of its own.)
    first, repeat = [event for event in events_in(result.stderr) if not event.startswith("import random")]
    assert ", then used best-effort bytes (timeout) under policy" in first and first.split(": ")[1].startswith(
        "waited 0."
    )
    assert repeat.endswith(": 1 more like it, not shown one by one.")
    assert (
        "on_timeout 'fallback' (from environment variable URANDOM_SHIM_ON_TIMEOUT) returned best-effort bytes"
        in (lines[0])
    )


def test_wait_for_system_rng_waits_for_the_window_and_honours_its_timeout(shim: Venv) -> None:
    deadline = time.monotonic() + 1.0
    code = (
        "import secrets, time\n"
        "print(secrets.wait_for_system_rng(0.2), time.monotonic())\n"
        "print(secrets.wait_for_system_rng(), time.monotonic())\n"
    )
    result = shim.run("-c", code, env={"URANDOM_SHIM_SIMULATE": f"unready-until-monotonic:{deadline!r}"})
    first, second = (line.split() for line in result.stdout.splitlines())
    assert first[0] == "False" and float(first[1]) < deadline, result.stderr
    assert second[0] == "True" and float(second[1]) >= deadline


def test_simulated_window_is_inherited_by_children_and_grandchildren(shim: Venv) -> None:
    # unready-for is relative: the first process pins it to one deadline that its descendants share.
    code = (
        "import os, subprocess, sys, time\n"
        "spec = os.environ['URANDOM_SHIM_SIMULATE']\n"
        'inner = \'import os, subprocess, sys; print(os.environ["URANDOM_SHIM_SIMULATE"]); '
        'subprocess.run([sys.executable, "-c", "import os; print(os.environ[\\\\"URANDOM_SHIM_SIMULATE\\\\"]); os.urandom(1)"])\'\n'
        "print(spec, flush=True)\n"
        "subprocess.run([sys.executable, '-c', inner])\n"
    )
    result = shim.run("-c", code, env={"URANDOM_POLICY": "pep522", "URANDOM_SHIM_SIMULATE": "unready-for:30"})
    specs = result.stdout.split()
    assert len(specs) == 3 and len(set(specs)) == 1, result.stdout + result.stderr
    assert specs[0].startswith("unready-until-monotonic:")
    assert "BlockingIOError: " + PEP522_TEXT in result.stderr, "the grandchild did not see the simulated state"


def test_simulation_never_touches_the_kernel_and_waits_need_no_helper_thread(shim: Venv) -> None:
    deadline = time.monotonic() + 0.5
    code = "import os, threading; os.urandom(1); print(threading.active_count())"
    result = shim.run(
        "-c", code, env={"URANDOM_POLICY": "pep524", "URANDOM_SHIM_SIMULATE": f"unready-until-monotonic:{deadline!r}"}
    )
    assert result.stdout == "1\n", result.stderr
    assert os.getrandom(1, os.GRND_NONBLOCK), "the real kernel stays initialised"
