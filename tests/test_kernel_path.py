"""The real-kernel code path, on the fake kernel.

Simulation (``URANDOM_SHIM_SIMULATE``) leaves the real kernel ready, so it never exercises the code that waits for an
actual kernel: the blocking ``getrandom(0)`` in the shared helper thread, lock timeouts, Ctrl-C on a lock, the reset
after fork, and the ENOSYS/EPERM "unknown" state. Here the fake kernel (``tests/fakekernel.c``, preloaded) makes the
C library's ``getrandom()`` behave like an unready kernel while a file exists:

- ``GRND_NONBLOCK`` fails with EAGAIN;
- ``GRND_INSECURE`` returns bytes at once (they spell ``WEAK-RNG``);
- flags 0 blocks until the file is deleted. The interpreter's own code does the rest exactly as on a real kernel:
  ``os.urandom`` (``posix.urandom``) releases the GIL while it blocks, and ``os.getrandom`` does not, so a wait built
  on ``os.getrandom`` freezes every other thread (found on a real kernel, see ``tests/kernel``);
- or, with an errno, every call fails with it (ENOSYS: an old kernel; EPERM: a seccomp filter).
"""

from __future__ import annotations

import errno
import json
import threading
import time
from pathlib import Path
from typing import IO, Callable, Iterator

import pytest
from conftest import FakeKernel, Venv, assert_sigint_interrupts_promptly, spawn


@pytest.fixture
def kernel(shim: Venv, fake_kernel: FakeKernel, tmp_path: Path) -> Iterator[tuple[Venv, Path]]:
    """The shim venv, and the file whose existence means "unready" to the fake kernel."""
    trigger = tmp_path / "kernel-unready"
    trigger.touch()
    yield shim, trigger
    trigger.unlink(missing_ok=True)


@pytest.fixture
def env_for(fake_kernel: FakeKernel) -> Callable[..., dict[str, str]]:
    def make(trigger: Path, policy: str, **extra: str) -> dict[str, str]:
        return {**fake_kernel.env(trigger), "URANDOM_POLICY": policy, **extra}

    return make


def test_pep524_blocks_in_the_kernel_until_it_is_ready(
    kernel: tuple[Venv, Path], env_for: Callable[..., dict[str, str]]
) -> None:
    venv, trigger = kernel
    code = (
        "import os, time, urandom_shim\n"
        "print(urandom_shim.system_rng_state(), flush=True)\n"
        "os.urandom(16)\nprint(time.monotonic(), flush=True)\n"
        "import posix; print(os.urandom is posix.urandom and type(posix.urandom) is type(len))"
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
    kernel: tuple[Venv, Path], env_for: Callable[..., dict[str, str]], policy: str, expected: str
) -> None:
    venv, trigger = kernel
    code = (
        "import os, time\nt = time.monotonic()\n"
        "try:\n    r = str(len(os.urandom(16)))\nexcept BlockingIOError:\n    r = 'BlockingIOError'\n"
        "print(r, time.monotonic() - t)\n"
        "import urandom_shim\nprint('still unready' if urandom_shim.system_rng_state() == 'unready' else 'ready')"
    )
    result = venv.run("-c", code, env=env_for(trigger, policy), timeout=20)
    first, second = result.stdout.splitlines()
    outcome, took = first.split()
    # The fake kernel stays unready while the trigger exists: a call that waited would never return, and the line
    # below proves nothing waited. 3 s is room for a loaded machine.
    assert outcome == expected and float(took) < 3.0, result.stderr
    assert second == "still unready", "the shim must not have waited for the kernel"


def test_timeout_on_a_kernel_wait_raises_after_the_timeout(
    kernel: tuple[Venv, Path], env_for: Callable[..., dict[str, str]]
) -> None:
    venv, trigger = kernel
    code = (
        "import os, time\nt = time.monotonic()\n"
        "try:\n    os.urandom(16)\nexcept BlockingIOError as e:\n    print(round(time.monotonic() - t, 1), str(e)[:43])"
    )
    result = venv.run("-c", code, env=env_for(trigger, "pep524", URANDOM_SHIM_TIMEOUT="0.4"), timeout=20)
    took, message = result.stdout.strip().split(" ", 1)
    assert 0.4 <= float(took) < 1.5, result.stderr
    assert message == "system random number generator is not ready"


def test_sigint_interrupts_a_kernel_wait_promptly(
    kernel: tuple[Venv, Path], env_for: Callable[..., dict[str, str]]
) -> None:
    venv, trigger = kernel
    assert_sigint_interrupts_promptly(venv, env_for(trigger, "pep524"))


def test_many_threads_and_a_forked_child_all_wait_for_the_kernel(
    kernel: tuple[Venv, Path], env_for: Callable[..., dict[str, str]]
) -> None:
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


@pytest.mark.cpython_only("PyPy has no os.getrandom: the fake kernel's errno is for the system call it never makes")
@pytest.mark.parametrize("code", [errno.ENOSYS, errno.EPERM])
def test_getrandom_missing_or_denied_counts_as_ready_and_unknown(
    shim: Venv, fake_kernel: FakeKernel, code: int
) -> None:
    env = {**fake_kernel.env(errno=code), "URANDOM_POLICY": "pep522"}
    check = (
        "import os, posix, urandom_shim\n"
        "print(urandom_shim.system_rng_state(), urandom_shim.is_system_rng_ready(), type(os.urandom) is type(len),\n"
        "      len(os.urandom(16)))"
    )
    result = shim.run("-c", check, env=env)
    assert result.stdout == "unknown True True 16\n", result.stderr


def line_within(stream: IO[str], seconds: float) -> list[str]:
    """The next line of ``stream`` if it comes within ``seconds`` (a line already buffered counts), else none."""
    got: list[str] = []
    reader = threading.Thread(target=lambda: got.append(stream.readline()), daemon=True)
    reader.start()
    reader.join(seconds)
    return got


@pytest.mark.cpython_only("PyPy has no os.getrandom, and waits on /dev/random (tests/test_pypy.py)")
def test_the_fake_kernel_holds_the_gil_in_os_getrandom_as_the_real_one_does(
    kernel: tuple[Venv, Path], env_for: Callable[..., dict[str, str]]
) -> None:
    """What the real-kernel bug was made of, and why the helper thread calls posix.urandom: on this kernel, too,
    a thread blocked in os.getrandom(1, 0) stops every other thread, and one blocked in os.urandom does not."""
    venv, trigger = kernel
    code = (
        "import os, sys, threading, time\n"
        "call = os.getrandom if sys.argv[1] == 'getrandom' else os.urandom\n"
        "print('starting the thread', flush=True)\n"
        "threading.Thread(target=call, args=(1,) if call is os.urandom else (1, 0), daemon=True).start()\n"
        "time.sleep(0.2)\n"
        "print('other thread ran', time.monotonic(), flush=True)\n"
    )
    for call in ("getrandom", "urandom"):
        trigger.touch()
        proc = spawn(venv, code, env_for(trigger, "native"), args=(call,))
        try:
            # Timed from the thread's start, not the interpreter's, which a loaded machine can make last a second.
            assert proc.stdout is not None and proc.stdout.readline().strip() == "starting the thread"
            ran: list[str] = []
            if call == "getrandom":  # the main thread stays frozen, however long the kernel stays unready
                time.sleep(1.0)
            else:  # the main thread runs while the other waits: its line comes before the kernel is ready
                ran = line_within(proc.stdout, 20)
                assert ran, "the main thread never ran while os.urandom blocked"
            removed = time.monotonic()
            trigger.unlink()
            out, err = proc.communicate(timeout=20)
        finally:
            proc.kill()
        ran_at = float((ran[0] if ran else out).split()[-1])
        if call == "getrandom":
            assert ran_at >= removed, f"the main thread ran while os.getrandom blocked: {out} {err}"
        else:
            assert ran_at < removed, f"os.urandom held the GIL: {out} {err}"
