"""The real-kernel code path, with a stand-in kernel.

Simulation (``URANDOM_SHIM_SIMULATE``) leaves the real kernel ready, so it never exercises the code that waits for an
actual kernel: the blocking ``getrandom(0)`` in the shared helper thread, lock timeouts, Ctrl-C on a lock, the reset
after fork, and the ENOSYS/EPERM "unknown" state. Here a ``.pth`` that sorts before ours replaces ``os.getrandom``
with a stand-in that behaves like an unready kernel while a file exists:

- ``GRND_NONBLOCK`` raises ``BlockingIOError`` (EAGAIN);
- ``GRND_INSECURE`` returns bytes at once;
- flags 0 blocks until the file is deleted *holding the GIL*, as the real ``os.getrandom`` does (it never releases
  the GIL), so a wait built on it freezes every other thread: found on a real kernel, see ``tests/kernel``;
- ``os.urandom`` (``posix.urandom``) blocks until the file is deleted and releases the GIL, as the real one does;
- or, with ``errno:N``, every call fails with that errno (ENOSYS: an old kernel; EPERM: a seccomp filter).
"""

from __future__ import annotations

import errno
import json
import time
from pathlib import Path
from typing import Iterator

import pytest
from conftest import Venv, assert_sigint_interrupts_promptly, spawn

FAKE = """\
import ctypes, os, posix, time
spec = os.environ['URANDOM_SHIM_TEST_FAKE_KERNEL']
real = os.getrandom
real_urandom = posix.urandom
usleep = ctypes.PyDLL(None).usleep  # a PyDLL call keeps the GIL, like the real os.getrandom
def getrandom(size, flags=0, spec=spec, real=real, os=os, usleep=usleep):
    if spec.startswith('errno:'):
        raise OSError(int(spec[6:]), os.strerror(int(spec[6:])))
    if os.path.exists(spec):
        if flags & os.GRND_NONBLOCK:
            raise BlockingIOError(11, 'Resource temporarily unavailable')
        if not flags & 4:
            while os.path.exists(spec):
                usleep(3000000)  # 3 s at a time: longer than any timeout below
    return real(size, flags)
def urandom(size, spec=spec, real=real_urandom, os=os, time=time):
    if spec.startswith('errno:'):
        return real(size)  # the interpreter falls back to /dev/urandom
    while os.path.exists(spec):
        time.sleep(0.005)
    return real(size)
os.getrandom = getrandom
os.urandom = posix.urandom = urandom
"""


@pytest.fixture
def kernel(shim: Venv, tmp_path: Path) -> Iterator[tuple[Venv, Path]]:
    """The shim venv with the stand-in kernel installed, and the file whose existence means "unready"."""
    (shim.site_packages / "aaa_test_fake_kernel.py").write_text(FAKE)
    (shim.site_packages / "aaa_test_fake_kernel.pth").write_text(
        "import os; exec('import aaa_test_fake_kernel') if os.environ.get('URANDOM_SHIM_TEST_FAKE_KERNEL') else None\n"
    )
    trigger = tmp_path / "kernel-unready"
    trigger.touch()
    yield shim, trigger
    trigger.unlink(missing_ok=True)


def env_for(trigger: Path, policy: str, **extra: str) -> dict[str, str]:
    return {"URANDOM_SHIM_TEST_FAKE_KERNEL": str(trigger), "URANDOM_POLICY": policy, **extra}


def test_pep524_blocks_in_the_kernel_until_it_is_ready(kernel: tuple[Venv, Path]) -> None:
    venv, trigger = kernel
    code = (
        "import os, time, urandom_shim\n"
        "print(urandom_shim.system_rng_state(), flush=True)\n"
        "os.urandom(16)\nprint(time.monotonic(), flush=True)\n"
        "import posix; print(os.urandom is posix.urandom)"
    )
    proc = spawn(venv, code, env_for(trigger, "pep524"))
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "unready"
        time.sleep(0.5)
        assert proc.poll() is None, "os.urandom() returned while the kernel was unready"
        removed = time.monotonic()
        trigger.unlink()
        out, err = proc.communicate(timeout=10)
    finally:
        proc.kill()
    returned, restored = out.split()
    assert removed <= float(returned) < removed + 2.0, err
    assert restored == "True"


@pytest.mark.parametrize(("policy", "expected"), [("pep522", "BlockingIOError"), ("legacy", "16")])
def test_pep522_raises_and_legacy_returns_at_once_on_an_unready_kernel(
    kernel: tuple[Venv, Path], policy: str, expected: str
) -> None:
    venv, trigger = kernel
    code = (
        "import os, time\nt = time.monotonic()\n"
        "try:\n    r = str(len(os.urandom(16)))\nexcept BlockingIOError:\n    r = 'BlockingIOError'\n"
        "print(r, time.monotonic() - t)\n"
        "try:\n    os.getrandom(1, os.GRND_NONBLOCK)\nexcept BlockingIOError:\n    print('still unready')"
    )
    result = venv.run("-c", code, env=env_for(trigger, policy), timeout=20)
    first, second = result.stdout.splitlines()
    outcome, took = first.split()
    assert outcome == expected and float(took) < 0.5, result.stderr
    assert second == "still unready", "the shim must not have waited for the kernel"


def test_timeout_on_a_kernel_wait_raises_after_the_timeout(kernel: tuple[Venv, Path]) -> None:
    venv, trigger = kernel
    code = (
        "import os, time\nt = time.monotonic()\n"
        "try:\n    os.urandom(16)\nexcept BlockingIOError as e:\n    print(round(time.monotonic() - t, 1), str(e)[:43])"
    )
    result = venv.run("-c", code, env=env_for(trigger, "pep524", URANDOM_SHIM_TIMEOUT="0.4"), timeout=20)
    took, message = result.stdout.strip().split(" ", 1)
    assert 0.4 <= float(took) < 1.5, result.stderr
    assert message == "system random number generator is not ready"


def test_sigint_interrupts_a_kernel_wait_promptly(kernel: tuple[Venv, Path]) -> None:
    venv, trigger = kernel
    assert_sigint_interrupts_promptly(venv, env_for(trigger, "pep524"))


def test_many_threads_and_a_forked_child_all_wait_for_the_kernel(kernel: tuple[Venv, Path]) -> None:
    venv, trigger = kernel
    code = (
        "import os, threading, time, json\n"
        "done = []\n"
        "def worker():\n    os.urandom(16)\n    done.append(time.monotonic())\n"
        "threads = [threading.Thread(target=worker) for _ in range(32)]\n"
        "[t.start() for t in threads]\n"
        "time.sleep(0.3)\n"
        "pid = os.fork()\n"
        "if pid == 0:\n"
        "    os.urandom(16)\n"
        "    print(json.dumps({'child': time.monotonic()}), flush=True)\n"
        "    os._exit(0)\n"
        "print(json.dumps({'early': len(done)}), flush=True)\n"
        "[t.join(30) for t in threads]\n"
        "os.waitpid(pid, 0)\n"
        "print(json.dumps({'returned': len(done), 'last': max(done)}), flush=True)\n"
    )
    proc = spawn(venv, code, env_for(trigger, "pep524"))
    try:
        assert proc.stdout is not None
        assert json.loads(proc.stdout.readline()) == {"early": 0}
        time.sleep(0.3)
        removed = time.monotonic()
        trigger.unlink()
        out, err = proc.communicate(timeout=15)
    finally:
        proc.kill()
    reports = [json.loads(line) for line in out.splitlines()]
    child = next(r["child"] for r in reports if "child" in r)
    final = next(r for r in reports if "returned" in r)
    assert final["returned"] == 32, err
    assert removed <= final["last"] < removed + 2.0 and removed <= child < removed + 2.0, (reports, removed)


@pytest.mark.parametrize("code", [errno.ENOSYS, errno.EPERM])
def test_getrandom_missing_or_denied_counts_as_ready_and_unknown(kernel: tuple[Venv, Path], code: int) -> None:
    venv, _trigger = kernel
    env = {"URANDOM_SHIM_TEST_FAKE_KERNEL": f"errno:{code}", "URANDOM_POLICY": "pep522"}
    check = (
        "import os, posix, urandom_shim\n"
        "print(urandom_shim.system_rng_state(), urandom_shim.is_system_rng_ready(), os.urandom is posix.urandom)"
    )
    result = venv.run("-c", check, env=env)
    assert result.stdout == "unknown True True\n", result.stderr
