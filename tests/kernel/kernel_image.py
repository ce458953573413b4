"""Build an initramfs that boots straight into the interpreter under test, and boot it under qemu.

The image holds the interpreter at the same path as on the host (so its prefix, its ``RPATH`` and its cached ``.pyc``
files all still apply), the shared libraries ``ldd`` names, the stdlib without its tests and GUI packages,
urandom-shim installed from the wheel by pip, a static busybox, and ``tests/kernel/guest.py`` as ``/init``. The cpio
(newc) archive is written here, with every file's real mtime, so the ``.pyc`` files stay valid and the guest never
compiles anything.
"""

from __future__ import annotations

import json
import os
import re
import stat
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, BinaryIO, Callable, Iterable

from kernel_provision import RNG_MODULES, Kernel

GUEST = Path(__file__).resolve().parent / "guest.py"
#: The image's list of its cached bytecode, ``{path: mtime}`` as JSON (read by the guest's ``pycs_written``).
PYCS = "pycs.json"
MARK = "@@urandom-shim-kernel "

#: Kernel options for every boot. trust_cpu/trust_bootloader off: the CRNG must wait for real entropy.
#: PYTHONHASHSEED: without it CPython's own start-up reads /dev/urandom, which on 5.18+ runs the jitter generator and
#: closes the window before the driver's first line. ``quiet`` keeps kernel messages from interleaving with results.
BOOT_OPTIONS = (
    "console=ttyS0",
    "random.trust_cpu=off",
    "random.trust_bootloader=off",
    "panic=-1",
    "PYTHONHASHSEED=0",
    "quiet",
)

#: Stdlib entries the guest never imports; leaving them out keeps the image small and the boot fast.
STDLIB_SKIP = {
    "test",
    "tests",
    "idlelib",
    "tkinter",
    "turtledemo",
    "ensurepip",
    "lib2to3",
    "distutils",
    "pydoc_data",
    "site-packages",
    "unittest",
    "asyncio",
    "curses",
    "dbm",
    "venv",
    "msilib",
    "wsgiref",
    "xmlrpc",
    "__phello__",
    "sqlite3",
    "xml",
    "lib-dynload",
}
DYNLOAD_SKIP = re.compile(r"^(_test|_ctypes_test|xxlimited|_xx|_tkinter|xxsubtype)")


class Archive:
    """A cpio archive in the "newc" format the kernel unpacks. Parents are added before their children."""

    def __init__(self, out: BinaryIO) -> None:
        self.out = out
        self.names: set[str] = set()
        self.inode = 1
        #: Each cached bytecode file's path and mtime as packed: the guest finds what it wrote by these, not by its
        #: clock (under emulation the kernel can fail to read the RTC and start in 1970).
        self.pycs: dict[str, int] = {}

    def _entry(self, name: str, mode: int, data: bytes = b"", mtime: int = 0, rdev: tuple[int, int] = (0, 0)) -> None:
        name = name.strip("/")
        if name in self.names:
            return
        parent = os.path.dirname(name)
        if parent and parent not in self.names:
            self.directory(parent)
        self.names.add(name)
        if name.endswith(".pyc") and stat.S_ISREG(mode):
            self.pycs["/" + name] = mtime
        encoded = name.encode() + b"\0"
        fields = (self.inode, mode, 0, 0, 1, mtime, len(data), 0, 0, rdev[0], rdev[1], len(encoded), 0)
        self.inode += 1
        header = b"070701" + b"".join(b"%08X" % field for field in fields)
        self.out.write(header + encoded + b"\0" * (-(len(header) + len(encoded)) % 4))
        self.out.write(data + b"\0" * (-len(data) % 4))

    def directory(self, name: str, mode: int = 0o755, mtime: int = 0) -> None:
        self._entry(name, stat.S_IFDIR | mode, mtime=mtime)

    def data(self, name: str, data: bytes, mode: int = 0o644, mtime: int | None = None) -> None:
        self._entry(name, stat.S_IFREG | mode, data, int(time.time()) if mtime is None else mtime)

    def symlink(self, name: str, target: str) -> None:
        self._entry(name, stat.S_IFLNK | 0o777, target.encode())

    def node(self, name: str, kind: int, major: int, minor: int, mode: int = 0o666) -> None:
        self._entry(name, kind | mode, rdev=(major, minor))

    def file(self, name: str, source: Path) -> None:
        info = source.stat()
        self._entry(name, stat.S_IFREG | stat.S_IMODE(info.st_mode), source.read_bytes(), int(info.st_mtime))

    def host_path(self, path: Path) -> None:
        """``path`` at the same place in the image, with every symlink on the way (``/lib``, ``/lib64`` on a
        merged-/usr system) recreated as a symlink, and what it points to added too."""
        path = Path(os.path.abspath(path))
        current = Path("/")
        for part in path.parts[1:]:
            current = current / part
            if current.is_symlink():
                target = os.readlink(current)
                self.symlink(str(current), target)
                self.host_path(current.parent / target)
                current = Path(os.path.realpath(current))
            elif current.is_dir():
                if str(current).strip("/") not in self.names:
                    self.directory(str(current), stat.S_IMODE(current.stat().st_mode))
            else:
                self.file(str(current), current)

    def tree(self, root: Path, skip: Iterable[str] = (), keep: Callable[[str], bool] | None = None) -> None:
        """Every file under ``root`` (at the same path), without entries named in ``skip``, files ``keep`` rejects,
        and optimised bytecode (``.opt-N.pyc``), which nothing here uses."""
        skip = set(skip)
        for folder, dirs, files in os.walk(root):
            dirs[:] = sorted(d for d in dirs if d not in skip and not (Path(folder) / d).is_symlink())
            self.directory(folder)
            for name in sorted(files):
                if name in skip or ".opt-" in name or (keep is not None and not keep(name)):
                    continue
                path = Path(folder) / name
                if path.is_symlink():
                    self.symlink(str(path), os.readlink(path))
                else:
                    self.file(str(path), path)

    def close(self) -> None:
        self._entry("TRAILER!!!", 0)
        self.out.write(b"\0" * (-self.out.tell() % 512))


def interpreter_facts(python: Path) -> dict[str, Any]:
    code = (
        "import json, os, sys, sysconfig; print(json.dumps({'executable': os.path.realpath(sys.executable), "
        "'stdlib': sysconfig.get_path('stdlib'), 'purelib': sysconfig.get_path('purelib'), 'dynload': os.path.dirname(__import__('_json').__file__) "
        "if hasattr(__import__('_json'), '__file__') else None, 'python_version': sys.version.split()[0]}))"
    )
    out = subprocess.run([str(python), "-I", "-c", code], capture_output=True, text=True, check=True)
    facts: dict[str, Any] = json.loads(out.stdout)
    return facts


def shared_libraries(binaries: Iterable[Path]) -> set[Path]:
    """Every library ``ldd`` resolves for ``binaries``, and the dynamic loader."""
    found: set[Path] = set()
    for binary in binaries:
        out = subprocess.run(["ldd", str(binary)], capture_output=True, text=True)
        for line in out.stdout.splitlines():
            match = re.search(r"(?:=>\s*)?(/\S+)\s+\(0x", line)
            if match:
                found.add(Path(match.group(1)))
    return found


def dlopened_libraries() -> set[Path]:
    """Libraries glibc loads at run time, which ldd can't see: libgcc_s, for a thread's exit (pthread_exit unwinds
    through it; without it the guest prints "libgcc_s.so.1 must be installed for pthread_exit to work" and aborts)."""
    out = subprocess.run(["ldconfig", "-p"], capture_output=True, text=True)
    found = re.findall(r"^\s*libgcc_s\.so\.1 \(libc6,x86-64\) => (\S+)$", out.stdout, re.MULTILINE)
    if not found:
        raise AssertionError("libgcc_s.so.1 is not in ldconfig's cache: threads in the guest could not exit")
    return {Path(found[0])}


def install_wheel(python: Path, wheel: Path, target: Path) -> None:
    """The wheel and its dependencies (tomli below 3.11), installed by the interpreter's own pip, with .pyc files."""
    result = subprocess.run(
        [str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check", "--target", str(target), str(wheel)],
        capture_output=True,
        text=True,
        env={k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "URANDOM_"))},
    )
    assert result.returncode == 0, result.stdout + result.stderr


def build(
    path: Path,
    python: Path,
    site_packages: Path,
    busybox: Path,
    kernel: Kernel,
    machine_config: str | None = None,
) -> dict[str, Any]:
    """Write the initramfs for ``python`` to ``path``; ``site_packages`` holds the installed wheel."""
    facts = interpreter_facts(python)
    executable = Path(facts["executable"])
    stdlib = Path(facts["stdlib"])
    dynload = Path(facts["dynload"]) if facts["dynload"] else stdlib / "lib-dynload"
    extensions = [p for p in sorted(dynload.glob("*.so")) if not DYNLOAD_SKIP.match(p.name)]
    with path.open("wb") as out:
        archive = Archive(out)
        for name in ("dev", "proc", "sys", "etc", "modules"):
            archive.directory(name)
        archive.directory("tmp", 0o1777)
        archive.node("dev/console", stat.S_IFCHR, 5, 1, 0o600)
        archive.node("dev/null", stat.S_IFCHR, 1, 3)
        archive.node("dev/urandom", stat.S_IFCHR, 1, 9)
        archive.node("dev/random", stat.S_IFCHR, 1, 8)
        archive.node("dev/kmsg", stat.S_IFCHR, 1, 11, 0o644)
        archive.file("busybox", busybox)
        archive.directory("bin")
        archive.file("bin/sh", busybox)  # for the `urandom-shim` launcher, a shell script; busybox is sh by its name
        archive.host_path(executable)
        if Path(os.path.abspath(python)) != executable:  # the name pip wrote into the console scripts' #! lines
            archive.host_path(python)
        for library in sorted(shared_libraries([executable, *extensions]) | dlopened_libraries()):
            archive.host_path(library)
        archive.tree(stdlib, STDLIB_SKIP)
        archive.tree(dynload, keep=lambda name: not DYNLOAD_SKIP.match(name))
        # The installed wheel, in the interpreter's own site-packages (Debian's: /usr/local/lib/python3.X/dist-packages),
        # so that site runs our .pth.
        target = Path(facts["purelib"])
        archive.directory(str(target))
        for entry in sorted(site_packages.rglob("*")):
            relative = entry.relative_to(site_packages)
            if entry.is_dir():
                archive.directory(str(target / relative))
            else:
                archive.file(str(target / relative), entry)
        order = kernel.load_order(*RNG_MODULES)
        for module in order:
            archive.file(f"modules/{module.name}", module)
        archive.data("modules/order", "".join(m.name + "\n" for m in order).encode())
        if machine_config is not None:
            archive.data("etc/urandom-shim.toml", machine_config.encode())
        archive.data(PYCS, json.dumps(archive.pycs, sort_keys=True).encode())
        archive.data("init", f"#!{executable}\n".encode() + GUEST.read_bytes(), 0o755)
        archive.close()
    facts["image_bytes"] = path.stat().st_size
    return facts


#: Boots of one scenario at most, when none of /init's output reached the console (see :func:`boot`).
ATTEMPTS = 2


class Boot:
    """One boot's results: the driver's steps by name, the whole console, and the host's wall time."""

    def __init__(self, console: str, wall: float, returncode: int | None) -> None:
        self.console = console
        self.wall = wall
        self.returncode = returncode
        self.steps: dict[str, dict[str, Any]] = {}
        for line in console.splitlines():
            start = line.find(MARK)
            if start < 0:
                continue
            try:
                step = json.loads(line[start + len(MARK) :].strip())
            except ValueError:
                continue  # a kernel message cut into the line; the step is then missing and its test says so
            self.steps[step["step"]] = step

    def __getitem__(self, step: str) -> dict[str, Any]:
        if step not in self.steps:
            raise AssertionError(f"the guest did not report step {step!r}; console:\n{self.console[-6000:]}")
        return self.steps[step]

    @property
    def boot_time(self) -> float:
        return float(self["start"]["monotonic_at_start"])


def boot(
    qemu: Path,
    accel: list[str],
    kernel: Kernel,
    image: Path,
    settings: dict[str, str],
    devices: Iterable[str] = (),
    timeout: float = 180,
    hashseed: bool = True,
) -> Boot:
    """Boot ``image`` with ``settings`` as ``KEY=VALUE`` words for init, and collect the serial console.

    ``hashseed=False`` leaves ``PYTHONHASHSEED`` out, to show what CPython's own start-up does to the window."""
    options = [o for o in BOOT_OPTIONS if hashseed or not o.startswith("PYTHONHASHSEED=")]
    words = [*options, *(f"{key}={value}" for key, value in settings.items())]
    command = [
        str(qemu),
        *accel,
        "-m",
        "1024",
        "-nodefaults",
        "-display",
        "none",
        "-serial",
        "stdio",
        "-no-reboot",
        "-kernel",
        str(kernel.image),
        "-initrd",
        str(image),
        "-append",
        " ".join(words),
    ]
    for device in devices:
        command += ["-device", device]
    for attempt in range(1, ATTEMPTS + 1):
        began = time.monotonic()
        try:
            out = subprocess.run(command, stdin=subprocess.DEVNULL, capture_output=True, timeout=timeout)
        except subprocess.TimeoutExpired as exc:
            console = (exc.stdout or b"").decode(errors="replace")
            raise AssertionError(
                f"the guest did not power off within {timeout} s; console:\n{console[-6000:]}"
            ) from None
        console = out.stdout.decode(errors="replace") + out.stderr.decode(errors="replace")
        result = Boot(console, time.monotonic() - began, out.returncode)
        if result.steps or MARK in console or attempt == ATTEMPTS:
            return result
        # Not one line of /init's reached the console, though the guest ran it to its power-off (the kernel's own
        # lines did): on a loaded host, qemu's emulated UART can lose the interrupt that drains a process's output,
        # while the kernel's messages, written by polling, still get through (seen once in a full run, /init's
        # "start" and "end" both missing). That boot says nothing of the shim: boot again, and say so.
        print(f"kernel_image: no step of /init reached the console (attempt {attempt}); booting again", file=sys.stderr)
    raise AssertionError("unreachable")  # the loop returns on its last attempt
