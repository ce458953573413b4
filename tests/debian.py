"""What the tests install from Debian's packages (qemu, libpython3.X-testsuite), how they boot it, and how they say
they can't.

``URANDOM_SHIM_KERNEL_REQUIRED=1`` (set by ``tests/run``) makes "can't have it here" a failure rather than a visible
skip, so that CI can never pass without what it is meant to test.
"""

from __future__ import annotations

import fcntl
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Callable, NoReturn

import pytest


class Unavailable(Exception):
    """Something the tests need can't be had on this machine; the message says what and how to fix it."""


def unavailable(message: str) -> NoReturn:
    """Fail (under URANDOM_SHIM_KERNEL_REQUIRED) or skip, visibly, with ``message``."""
    if os.environ.get("URANDOM_SHIM_KERNEL_REQUIRED", "") not in ("", "0"):
        pytest.fail(message, pytrace=False)
    pytest.skip(message)


def run(*args: str, cwd: Path | None = None) -> str:
    try:
        out = subprocess.run(args, capture_output=True, text=True, cwd=cwd, timeout=900)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise Unavailable(f"{' '.join(args)}: {exc}") from exc
    if out.returncode != 0:
        raise Unavailable(f"{' '.join(args)} exited with {out.returncode}: {(out.stderr or out.stdout).strip()[-800:]}")
    return out.stdout


def apt_get(*args: str, cwd: Path | None = None) -> str:
    """apt-get, refreshing the package lists once if they are missing or stale (a fresh CI machine)."""
    os.environ.setdefault("DEBIAN_FRONTEND", "noninteractive")
    try:
        return run("apt-get", *args, cwd=cwd)
    except Unavailable:
        run("apt-get", "update", "-q")
        return run("apt-get", *args, cwd=cwd)


class Lock:
    """An exclusive lock on ``path``, so that two pytest workers don't run apt or fill a cache at once."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def __enter__(self) -> None:
        self.fd = os.open(self.path, os.O_CREAT | os.O_RDWR, 0o644)
        fcntl.flock(self.fd, fcntl.LOCK_EX)

    def __exit__(self, *exc: object) -> None:
        fcntl.flock(self.fd, fcntl.LOCK_UN)
        os.close(self.fd)


def apt_install(package: str, present: Callable[[], bool]) -> None:
    """Install ``package`` (``--no-install-recommends``) unless ``present()``; one apt-get at a time."""
    if present():
        return
    if shutil.which("apt-get") is None:
        raise Unavailable(f"{package} is not installed and there is no apt-get to install it")
    with Lock(Path(tempfile.gettempdir()) / "urandom-shim-apt.lock"):
        if not present():
            apt_get("install", "-y", "-q", "--no-install-recommends", package)
    if not present():
        raise Unavailable(f"{package} is installed but still not usable")


QEMU = "qemu-system-x86_64"


def qemu() -> Path:
    """qemu-system-x86_64, installed from Debian's packages if missing."""
    apt_install("qemu-system-x86", lambda: shutil.which(QEMU) is not None)
    return Path(str(shutil.which(QEMU)))


def pypy3() -> Path:
    """Debian's /usr/bin/pypy3, and its venv module (pypy3-venv), installed from Debian's packages if missing."""
    apt_install("pypy3", lambda: Path("/usr/bin/pypy3").exists())
    apt_install("pypy3-venv", lambda: subprocess.run(["/usr/bin/pypy3", "-c", "import ensurepip"]).returncode == 0)
    return Path("/usr/bin/pypy3")


def kvm_usable() -> bool:
    """True only with real hardware virtualisation: /dev/kvm opens, the CPU has vmx/svm, and KVM creates a VM.

    On these machines /dev/kvm exists but is not hardware virtualisation, so TCG is the default everywhere.
    """
    try:
        flags = Path("/proc/cpuinfo").read_text()
    except OSError:
        return False
    if not re.search(r"^flags\s*:.*\b(vmx|svm)\b", flags, re.MULTILINE):
        return False
    try:
        fd = os.open("/dev/kvm", os.O_RDWR | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        if fcntl.ioctl(fd, 0xAE00) != 12:  # KVM_GET_API_VERSION
            return False
        vm = fcntl.ioctl(fd, 0xAE01, 0)  # KVM_CREATE_VM
        os.close(vm)
        return True
    except OSError:
        return False
    finally:
        os.close(fd)


def accelerator() -> list[str]:
    """qemu's accelerator arguments: ``URANDOM_SHIM_KERNEL_ACCEL=tcg|kvm`` forces one, else KVM only if it is real.

    Under KVM the guest must not see RDRAND/RDSEED, or the kernel could seed itself from the CPU.
    """
    wanted = os.environ.get("URANDOM_SHIM_KERNEL_ACCEL", "")
    if wanted == "kvm" or (not wanted and kvm_usable()):
        return ["-accel", "kvm", "-cpu", "host,-rdrand,-rdseed"]
    return ["-accel", "tcg", "-cpu", "qemu64"]
