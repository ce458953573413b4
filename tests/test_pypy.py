"""PyPy (Debian's ``pypy3``), and every interpreter without ``os.getrandom``: the same semantics as on CPython.

PyPy 3.9 has no ``os.getrandom``, and its ``os.urandom`` reads ``/dev/urandom``, which never waits. The shim asks the
kernel through ``/dev/random`` instead: on Linux 5.6+ it is readable exactly once the CRNG is initialised. The fake
kernel (``tests/fakekernel.c``) fakes that too, so these tests hold on every interpreter of the matrix, and on PyPy
they are the ones that failed before (issue 36): the probe said "ready", and activation raised ``AttributeError``
on ``gc.get_freeze_count``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from pathlib import Path
from typing import Iterator

import pytest
from conftest import WAIT_THEN_URANDOM, FakeKernel, Venv, clean_env, spawn


@pytest.fixture
def unready(fake_kernel: FakeKernel, tmp_path: Path) -> Iterator[tuple[dict[str, str], Path]]:
    trigger = tmp_path / "kernel-unready"
    trigger.touch()
    yield fake_kernel.env(trigger), trigger
    trigger.unlink(missing_ok=True)


def cli(venv: Venv) -> str:
    return str(venv.path / "bin" / "urandom-shim")


def test_an_unready_kernel_at_start_activates_the_shim_and_pep522_refuses_bytes(
    shim: Venv, unready: tuple[dict[str, str], Path]
) -> None:
    env, _ = unready
    code = (
        "import os, sys, urandom_shim\n"
        "print(urandom_shim.system_rng_state())\n"
        "try:\n    print(len(os.urandom(16)))\nexcept BlockingIOError:\n    print('BlockingIOError')"
    )
    result = shim.run("-c", code, env={**env, "URANDOM_POLICY": "pep522"}, timeout=30)
    assert result.stdout.split() == ["unready", "BlockingIOError"], result.stderr
    assert "not active" not in result.stderr, result.stderr


def test_a_ready_kernel_leaves_every_function_the_interpreters_own(shim: Venv, fake_kernel: FakeKernel) -> None:
    code = "import os, sys, urandom_shim\nprint(sys._urandom_shim_boot, urandom_shim.system_rng_state(), len(os.urandom(4)))"
    result = shim.run("-c", code, env={**fake_kernel.env(), "URANDOM_POLICY": "pep522"})
    assert result.stdout.split() == ["pth", "ready", "4"], result.stderr
    assert result.stderr == ""


def test_simulate_pep522_activates_and_refuses_bytes(shim: Venv) -> None:
    code = "import os\ntry:\n    print(len(os.urandom(16)))\nexcept BlockingIOError:\n    print('BlockingIOError')"
    result = subprocess_run(
        [cli(shim), "simulate", "--unready-forever", "--policy", "pep522", "--", str(shim.python), "-c", code]
    )
    assert result.stdout.split() == ["BlockingIOError"], result.stderr
    assert "not active" not in result.stderr and "AttributeError" not in result.stderr, result.stderr


def test_pep524_waits_for_the_kernel_and_returns_once_it_is_ready(
    shim: Venv, unready: tuple[dict[str, str], Path]
) -> None:
    env, trigger = unready
    code = "import os, time\nprint('waiting', flush=True)\nos.urandom(16)\nprint(time.monotonic(), flush=True)"
    proc = spawn(shim, code, {**env, "URANDOM_POLICY": "pep524"})
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "waiting"
        time.sleep(0.6)
        assert proc.poll() is None, "os.urandom() returned while the kernel was unready"
        removed = time.monotonic()
        trigger.unlink()
        out, err = proc.communicate(timeout=15)
    finally:
        proc.kill()
    assert proc.returncode == 0, err
    assert removed <= float(out.strip()) < removed + 2.0, err


def test_pep524_timeout_on_the_kernel_raises_after_the_timeout(
    shim: Venv, unready: tuple[dict[str, str], Path]
) -> None:
    env, _ = unready
    code = (
        "import os, time\nt = time.monotonic()\n"
        "try:\n    os.urandom(16)\nexcept BlockingIOError:\n    print(round(time.monotonic() - t, 1))"
    )
    result = shim.run("-c", code, env={**env, "URANDOM_POLICY": "pep524", "URANDOM_SHIM_TIMEOUT": "0.4"}, timeout=30)
    assert result.stdout.strip(), result.stderr
    assert 0.4 <= float(result.stdout) < 2.0, result.stderr


def test_status_check_and_wait_see_the_kernel_unready(shim: Venv, unready: tuple[dict[str, str], Path]) -> None:
    env, _ = unready
    status = subprocess_run([cli(shim), "status", "--json"], env)
    assert status.returncode == 0, status.stderr
    facts = json.loads(status.stdout)
    assert facts["kernel"]["crng"] == "unready", facts["kernel"]
    waited = subprocess_run([cli(shim), "wait", "--timeout", "0.3"], env)
    assert waited.returncode != 0, waited.stdout + waited.stderr
    checked = subprocess_run([cli(shim), "check"], env)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "Traceback" not in checked.stderr + status.stderr + waited.stderr


def test_run_and_report_work(shim: Venv, tmp_path: Path) -> None:
    events = tmp_path / "events.jsonl"
    code = "import os\nprint(len(os.urandom(16)))"
    ran = subprocess_run(
        [cli(shim), "simulate", "--unready-forever", "--policy", "legacy", "--", str(shim.python), "-c", code],
        {"URANDOM_SHIM_EVENTS": str(events)},
    )
    assert ran.stdout.split() == ["16"], ran.stderr
    assert "not active" not in ran.stderr, ran.stderr
    reported = subprocess_run([cli(shim), "report", "--events", str(events), "--no-journal"])
    assert reported.returncode == 0, reported.stdout + reported.stderr
    assert "Traceback" not in reported.stderr
    plain = subprocess_run([cli(shim), "run", "--", str(shim.python), "-c", code])
    assert plain.stdout.split() == ["16"], plain.stderr


def subprocess_run(argv: list[str], env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, capture_output=True, text=True, env=clean_env(env), timeout=60)


def test_status_and_check_say_what_this_interpreter_does_not_do(shim: Venv) -> None:
    status = json.loads(subprocess_run([cli(shim), "status", "--json"]).stdout)
    checked = json.loads(subprocess_run([cli(shim), "check", "--json"]).stdout)
    text = subprocess_run([cli(shim), "status"]).stdout
    if status["python"]["implementation"] == "pypy":
        assert status["limits"] == checked["limits"] and len(status["limits"]) == 2, status["limits"]
        assert "in an attribute declared in __slots__" in status["limits"][1]
        assert "PyPy's own os.urandom() never waits" in status["limits"][0]
        assert "Not on this interpreter" in text and "read /dev/urandom and never wait" in text, text
        assert "never waits (PyPy's own start)" in status["run_start"]
    else:
        assert status["limits"] == checked["limits"] == [] and "Not on this interpreter" not in text


@pytest.mark.parametrize(("release", "answers"), [("5.4.0-150-generic", False), ("5.6.0", True), ("6.1.0-9", True)])
def test_without_getrandom_dev_random_is_asked_only_on_linux_5_6_and_later(
    monkeypatch: pytest.MonkeyPatch, release: str, answers: bool
) -> None:
    """In-process: an interpreter without os.getrandom (PyPy) on an older kernel counts the CRNG as ready, and status
    and check say that no policy applies at early boot there."""
    import os
    import sys

    from urandom_shim import _config, _readiness
    from urandom_shim.cli import facts

    monkeypatch.delattr(os, "getrandom", raising=False)
    monkeypatch.setattr(sys, "platform", "linux")
    real = os.uname()
    monkeypatch.setattr(os, "uname", lambda: os.uname_result((*real[:2], release, *real[3:])))
    monkeypatch.setattr(_readiness, "_dev_random_answers", None)
    monkeypatch.setattr(_readiness, "_settled", None)
    assert _readiness.dev_random_answers() is answers
    settings, _ = _config.resolve(who=facts.program(None)[0])
    limits = [limit for limit in facts.interpreter_limits(settings) if "Linux 5.6" in limit]
    if answers:
        assert _readiness.kernel_state() in ("ready", "unready") and limits == []
    else:
        assert _readiness.kernel_state() == "unknown"
        assert limits and f"on kernel {release} the CRNG counts as ready" in limits[0]


EARLY_HOLDER = """
import functools, os, types
from os import urandom
from os import urandom as renamed
LISTED = [os.urandom]
MAPPED = {"rand": os.urandom}
def default(n, rand=os.urandom):
    return rand(n)
def keyword(n, *, rand=os.urandom):
    return rand(n)
class Box:
    rand = os.urandom
    static = staticmethod(os.urandom)
BOX = Box()
BOX.own = os.urandom
SPACE = types.SimpleNamespace(rand=os.urandom)
PARTIAL = functools.partial(os.urandom)
def _closure(rand=None):
    held = os.urandom
    return lambda n: held(n)
CLOSURE = _closure()
"""
HOLDER_CALLS = (
    "h.urandom(4)", "h.renamed(4)", "h.LISTED[0](4)", "h.MAPPED['rand'](4)", "h.default(4)", "h.keyword(4)",
    "h.Box.rand(4)", "h.Box.static(4)", "h.BOX.static(4)", "h.BOX.own(4)", "h.SPACE.rand(4)", "h.PARTIAL(4)",
    "h.CLOSURE(4)",
)  # fmt: skip


def test_every_reference_taken_before_the_shim_gets_the_policy(shim: Venv, tmp_path: Path) -> None:
    """Issue 36: on PyPy the garbage collector reports a class, a function or an instance as the holder of a
    reference, where CPython reports the dict or tuple inside it, so a class attribute or a default argument taken
    before the shim (in another .pth) kept PyPy's own os.urandom and gave bytes under pep522."""
    (tmp_path / "early_holder.py").write_text(EARLY_HOLDER)
    hook = shim.site_packages / "aaa_test_holder.pth"
    hook.write_text(f"import sys; sys.path.insert(0, {str(tmp_path)!r}); import early_holder\n")
    call = "try:\n    {}\n    print('bytes', {!r})\nexcept BlockingIOError:\n    print('raised')\n"
    code = "import early_holder as h\n" + "".join(call.format(c, c) for c in HOLDER_CALLS)
    try:
        result = shim.run(
            "-c", code, env={"URANDOM_POLICY": "pep522", "URANDOM_SHIM_SIMULATE": "unready-forever"}, timeout=60
        )
    finally:
        hook.unlink()
    assert result.stdout.splitlines() == ["raised"] * len(HOLDER_CALLS), result.stdout + result.stderr


def test_the_import_systems_frames_are_never_named_as_the_caller(shim: Venv, tmp_path: Path) -> None:
    # Newcomer pass: on PyPy, `import secrets` (which imports random) gave "import random called from
    # <builtin>/frozen importlib._bootstrap_external:865", PyPy's import machinery, where CPython names the code.
    env = {"URANDOM_POLICY": "legacy", "URANDOM_SHIM_SIMULATE": "unready-forever"}
    result = shim.run("-c", "import secrets", env=env, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    (line,) = [line for line in result.stderr.splitlines() if "import random called from" in line]
    assert "import random called from <string>:1 before" in line, line


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("unshare"), reason="needs root and unshare")
def test_a_file_mounted_over_dev_random_is_not_asked(shim: Venv, tmp_path: Path) -> None:
    # Hostile review: without os.getrandom the state came from whatever was at /dev/random: a FIFO there read as
    # "unready" on a ready kernel (and pep524 waited), and a copy of /dev/urandom would read "ready" at early boot.
    has_getrandom = shim.run("-c", "import os; print(hasattr(os, 'getrandom'))")
    if has_getrandom.stdout.strip() == "True":
        pytest.skip("only an interpreter without os.getrandom (PyPy) asks /dev/random")
    fifo = tmp_path / "random"
    os.mkfifo(fifo)
    script = f'mount --bind "{fifo}" /dev/random && exec "$0" status --json'
    result = subprocess.run(
        ["unshare", "--mount", "--propagation", "private", "sh", "-c", script, cli(shim)],
        capture_output=True, text=True, env=clean_env(), timeout=60,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    assert json.loads(result.stdout)["kernel"]["crng"] == "unknown", result.stdout


def test_a_floor_makes_native_wait_on_pypy_and_check_says_why(
    shim: Venv, python: Path, unready: tuple[dict[str, str], Path], tmp_path: Path
) -> None:
    """PyPy's own os.urandom() reads /dev/urandom, which returns bytes the CRNG has not seeded without waiting (before
    Linux 5.18): a floor forbids that, so it lifts native to pep524 there. CPython's own os.urandom() waits, and
    native stays native."""
    env, trigger = unready
    floor = tmp_path / "machine.toml"
    floor.write_text("allow_weak = false\n")
    env = {**env, "URANDOM_SHIM_MACHINE_CONFIG": str(floor), "FAKE_KERNEL_RELEASE": "5.10.0-28-amd64"}
    pypy = "pypy" in python.name or "pypy" in str(python)
    check = subprocess.run([cli(shim), "check"], capture_output=True, text=True, env=clean_env(env), timeout=60)
    assert check.returncode == 0, check.stdout + check.stderr
    policy = next(line for line in check.stdout.splitlines() if line.startswith("  policy "))
    if pypy:
        assert "pep524" in policy and "instead of 'native' from default: PyPy's own os.urandom()" in policy, policy
    else:
        assert policy.split()[1] == "native", policy
    process = spawn(shim, WAIT_THEN_URANDOM, env)
    assert process.stdout is not None
    assert process.stdout.readline().strip() == "waiting"
    time.sleep(1.0)
    assert process.poll() is None, process.communicate()  # still waiting: no weak bytes
    trigger.unlink()
    out, err = process.communicate(timeout=30)
    assert process.returncode == 0 and out.strip() == "returned", err
