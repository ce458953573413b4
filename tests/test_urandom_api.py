"""``urandom_shim.urandom(size, block=True, timeout=None)``: the waiting chosen per call, whatever the policy.

Every case runs in a real interpreter of a venv with the wheel installed, under simulation (``URANDOM_SHIM_SIMULATE``)
and on the fake kernel (``tests/fakekernel.c``: ``getrandom()`` unready while a file exists), under each policy: the
configured policy never changes what this call does, and it never returns bytes while the CRNG is unready.
"""

from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import FakeKernel, Venv, clean_env

POLICIES = ("native", "pep524", "pep522", "legacy")

# Calls urandom_shim.urandom as the arguments say, saying first that it is about to; prints what happened, when the
# call began and ended (time.monotonic(), the same clock in every process), whether the CRNG was ready after, and the
# deadline of a simulated window (``unready-for`` becomes ``unready-until-monotonic`` at the shim's start).
PROBE = """
import json, os, sys, time, urandom_shim
kwargs = json.loads(sys.argv[1])
print("calling", flush=True)
began = time.monotonic()
try:
    data = urandom_shim.urandom(16, **kwargs)
    got = f"{len(data)} bytes"
except BlockingIOError as exc:
    got = f"BlockingIOError: {exc}"
ended = time.monotonic()
window = os.environ.get("URANDOM_SHIM_SIMULATE", "")
deadline = float(window.split(":", 1)[1]) if window.startswith("unready-until-monotonic:") else None
print(json.dumps({"got": got, "seconds": ended - began, "began": began, "ended": ended, "deadline": deadline,
                  "ready_after": urandom_shim.is_system_rng_ready()}))
"""


def call(venv: Venv, kwargs: dict[str, Any], env: dict[str, str]) -> dict[str, Any]:
    done = venv.run("-c", PROBE, json.dumps(kwargs), env=env, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    report: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return report


@pytest.mark.parametrize("policy", POLICIES)
def test_under_simulation_each_form_does_what_it_says_whatever_the_policy(shim: Venv, policy: str) -> None:
    forever = {"URANDOM_SHIM_SIMULATE": "unready-forever", "URANDOM_POLICY": policy}
    raised = call(shim, {"block": False}, forever)
    assert raised["got"].startswith(
        "BlockingIOError: system random number generator is not ready; see secrets.token_bytes(). "
        "urandom_shim.urandom(16, block=False) was called before"
    ), raised
    assert raised["seconds"] < 5  # a wait here would never end (unready-forever); 5 s is room for a loaded machine
    timed_out = call(shim, {"timeout": 0.3}, forever)
    assert timed_out["got"].startswith("BlockingIOError: system random number generator is not ready") and (
        "urandom_shim.urandom(16, timeout=0.3) waited 0.3 s" in timed_out["got"]
    ), timed_out
    assert 0.25 < timed_out["seconds"] < 5
    # The window opens at the shim's start, not at the call: the call began inside it and returned when it closed.
    window = {"URANDOM_SHIM_SIMULATE": "unready-for:1", "URANDOM_POLICY": policy}
    waited = call(shim, {}, window)
    assert waited["got"] == "16 bytes" and waited["ready_after"], waited
    assert waited["began"] < waited["deadline"] <= waited["ended"] < waited["deadline"] + 5, waited
    ready = call(shim, {"block": False}, {"URANDOM_POLICY": policy})
    assert ready["got"] == "16 bytes" and ready["seconds"] < 5


@pytest.mark.parametrize("policy", POLICIES)
def test_on_the_fake_kernel_no_bytes_while_unready_then_the_kernels_own(
    shim: Venv, fake_kernel: FakeKernel, tmp_path: Path, policy: str
) -> None:
    flag = tmp_path / "unready"
    flag.touch()
    env = {**fake_kernel.env(flag), "URANDOM_POLICY": policy}
    for kwargs in ({"block": False}, {"timeout": 0.2}):
        report = call(shim, kwargs, env)
        assert report["got"].startswith("BlockingIOError") and not report["ready_after"], (kwargs, report)
    # A blocking call waits for the kernel, and returns once the flag is gone: timed from the call, not from the
    # interpreter's start, which a loaded machine can make last longer than any fixed sleep.
    child = subprocess.Popen(
        [str(shim.python), "-c", PROBE, "{}"], stdout=subprocess.PIPE, text=True, env=clean_env(env)
    )
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "calling"
        time.sleep(0.5)
        assert child.poll() is None, "urandom_shim.urandom(16) returned while the fake kernel was unready"
        removed = time.monotonic()
        flag.unlink()
        out, _ = child.communicate(timeout=30)
    finally:
        child.kill()
    report = json.loads(out.strip().splitlines()[-1])
    assert report["got"] == "16 bytes" and report["began"] < removed <= report["ended"], (report, removed)


def test_threads_all_wait_and_all_get_bytes(shim: Venv) -> None:
    program = """
import threading, urandom_shim
results = []
def worker():
    results.append(len(urandom_shim.urandom(8)))
threads = [threading.Thread(target=worker) for _ in range(8)]
for t in threads: t.start()
for t in threads: t.join(30)
print(sorted(results), urandom_shim.is_system_rng_ready())
"""
    done = shim.run("-c", program, env={"URANDOM_SHIM_SIMULATE": "unready-for:0.5", "URANDOM_POLICY": "pep522"})
    assert (done.returncode, done.stdout.strip()) == (0, "[8, 8, 8, 8, 8, 8, 8, 8] True"), done.stderr


def test_ctrl_c_interrupts_the_wait(shim: Venv) -> None:
    program = """
import sys, urandom_shim
print("waiting", flush=True)
try:
    urandom_shim.urandom(16)
except KeyboardInterrupt:
    print("interrupted", flush=True)
    sys.exit(3)
"""
    child = subprocess.Popen(
        [str(shim.python), "-c", program],
        stdout=subprocess.PIPE,
        text=True,
        env=clean_env({"URANDOM_SHIM_SIMULATE": "unready-forever"}),
    )
    assert child.stdout is not None and child.stdout.readline() == "waiting\n"
    time.sleep(0.5)
    child.send_signal(signal.SIGINT)
    out, _ = child.communicate(timeout=10)
    assert (child.returncode, out) == (3, "interrupted\n")


@pytest.mark.parametrize(
    ("args", "error"),
    [
        ("-1", "ValueError: negative argument not allowed"),
        ("'16'", "TypeError: size must be an integer, not str"),
        ("16, block=False, timeout=1", "ValueError: block=False never waits, so it takes no timeout"),
        ("16, timeout=-1", "ValueError: timeout must be a number of seconds >= 0 or None, not -1.0"),
    ],
)
def test_bad_arguments_raise_with_one_frame_of_ours(shim: Venv, args: str, error: str) -> None:
    done = shim.run("-c", f"import urandom_shim\nurandom_shim.urandom({args})")
    assert done.returncode == 1 and done.stderr.strip().splitlines()[-1] == error, done.stderr
    ours = [line for line in done.stderr.splitlines() if line.strip().startswith("File") and "/urandom_shim/" in line]
    assert len(ours) == 1 and 'urandom_shim/_runtime.py", ' in ours[0] and " in urandom" in ours[0], done.stderr


@pytest.mark.parametrize(
    ("program", "env"),
    [
        ("import os\nos.urandom(1)\n", {"URANDOM_POLICY": "pep522"}),
        ("import random\nrandom.SystemRandom().random()\n", {"URANDOM_POLICY": "pep522"}),
        ("import secrets\nsecrets.token_hex(4)\n", {"URANDOM_POLICY": "pep524", "URANDOM_SHIM_TIMEOUT": "0.1"}),
        ("import urandom_shim\nurandom_shim.urandom(4, block=False)\n", {}),
    ],
    ids=["pep522 os.urandom", "pep522 SystemRandom", "timeout in secrets", "urandom(block=False)"],
)
def test_a_refusal_shows_one_frame_of_ours_in_its_traceback(shim: Venv, program: str, env: dict[str, str]) -> None:
    done = shim.run("-c", program, env={"URANDOM_SHIM_SIMULATE": "unready-forever", **env})
    lines = done.stderr.splitlines()
    assert done.returncode == 1 and lines[-1].startswith("BlockingIOError: system random number generator"), lines
    ours = [line for line in lines if line.strip().startswith("File ") and "urandom_shim" in line]
    assert len(ours) == 1, done.stderr
    assert "During handling" not in done.stderr and "direct cause" not in done.stderr
