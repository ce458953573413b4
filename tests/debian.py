"""What the tests install from Debian's packages (qemu, libpython3.X-testsuite, systemd-journal-remote), how they boot it, and how they say
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

#: Set by debian/rules for the tests a package build runs: they must never change the build host, so what a test
#: would install from Debian's packages makes it skip instead.
NO_INSTALL = "URANDOM_SHIM_TEST_NO_INSTALL"


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
    if os.environ.get(NO_INSTALL, "") not in ("", "0"):
        raise Unavailable(f"{package} is not installed, and {NO_INSTALL}=1 says not to install it (a package build)")
    if shutil.which("apt-get") is None:
        raise Unavailable(f"{package} is not installed and there is no apt-get to install it")
    with Lock(Path(tempfile.gettempdir()) / "urandom-shim-apt.lock"):
        if not present():
            # Another apt on this machine (not ours: ours take the lock above) holds dpkg's lock: wait for it.
            apt_get("install", "-y", "-q", "-o", "DPkg::Lock::Timeout=600", "--no-install-recommends", package)
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


#: Debian's systemd-journal-remote package: the collector (systemd-journal-remote) and the sender
#: (systemd-journal-upload), under /lib/systemd (/usr/lib/systemd from Debian 13 on, where /lib is a link to it).
JOURNAL_REMOTE = ("systemd-journal-remote", "systemd-journal-upload")


def journal_remote() -> dict[str, Path]:
    """systemd-journal-remote and systemd-journal-upload, by name, installed from Debian's packages if missing.

    The package asks for the host's own systemd version where the archive still has it, so that installing it never
    upgrades the host's systemd (and the journalctl other tests and benchmarks run) under them; only where it hasn't
    does apt take the newest. Installing starts nothing: a package's services start through deb-systemd-invoke,
    which does nothing where systemd is not PID 1 (no /run/systemd/system, as on CI's containers) and nothing where
    /usr/sbin/policy-rc.d says no; the tests start their own collector on 127.0.0.1 and stop it.
    """

    def found() -> dict[str, Path]:
        return {
            name: path
            for name in JOURNAL_REMOTE
            for path in (Path("/lib/systemd") / name, Path("/usr/lib/systemd") / name)
            if path.is_file() and os.access(path, os.X_OK)
        }

    def present() -> bool:
        return len(found()) == len(JOURNAL_REMOTE)

    try:
        systemd = run("dpkg-query", "-W", "-f=${Version}", "systemd").strip()
    except Unavailable:
        systemd = ""
    try:
        apt_install(f"systemd-journal-remote={systemd}" if systemd else "systemd-journal-remote", present)
    except Unavailable:
        if not systemd:
            raise
        apt_install("systemd-journal-remote", present)  # the host's version is gone from the archive
    return found()


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
