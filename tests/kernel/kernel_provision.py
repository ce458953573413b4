"""What the real-kernel tests need from Debian besides qemu (``debian.qemu``): a kernel with its modules, and a static
busybox.

The kernel and busybox are never installed: their
packages are fetched with ``apt-get download`` and unpacked with ``dpkg -x`` into a cache directory outside the
repository, so ``/boot`` and the host's own busybox are never touched. The cache survives between runs:
``URANDOM_SHIM_KERNEL_CACHE``, else ``$XDG_CACHE_HOME/urandom-shim/kernel``, else ``~/.cache/urandom-shim/kernel``.
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

from debian import Lock, Unavailable, apt_get, run

KERNEL_PACKAGE = "linux-image-cloud-amd64"  # a metapackage: it depends on the current linux-image-*-cloud-amd64

#: The virtio-rng scenario loads the PCI transport and the driver, with what they depend on.
RNG_MODULES = ("virtio_pci", "virtio-rng")


def cache_dir() -> Path:
    explicit = os.environ.get("URANDOM_SHIM_KERNEL_CACHE")
    if explicit:
        path = Path(explicit)
    else:
        base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
        path = base / "urandom-shim" / "kernel"
    path.mkdir(parents=True, exist_ok=True)
    return path


def _unpacked(package: str) -> Path:
    """``package`` fetched and unpacked into the cache (once); returns the directory it was unpacked into."""
    cache = cache_dir()
    with Lock(cache / ".lock"):
        done = cache / f"{package}.unpacked"
        if not (done / ".complete").exists():
            shutil.rmtree(done, ignore_errors=True)
            downloads = cache / "debs"
            downloads.mkdir(exist_ok=True)
            for old in downloads.glob(f"{package}_*.deb"):
                old.unlink()
            apt_get("download", "-q", package, cwd=downloads)
            (deb,) = downloads.glob(f"{package}_*.deb")
            run("dpkg", "-x", str(deb), str(done))
            (done / ".complete").write_text(deb.name + "\n")
        return done


def kernel_package() -> str:
    """The concrete image package the metapackage depends on, e.g. linux-image-6.1.0-50-cloud-amd64."""
    cached = cache_dir() / "kernel-package"
    if cached.exists():
        return cached.read_text().strip()
    out = apt_get("install", "--simulate", "-q", "--no-install-recommends", KERNEL_PACKAGE)
    names = re.findall(r"^Inst (linux-image-\S+-cloud-amd64) ", out, re.MULTILINE)
    if not names:  # already installed on this host: ask for the dependency directly
        names = re.findall(r"Depends: (linux-image-\S+)", run("apt-cache", "depends", KERNEL_PACKAGE))
    if not names:
        raise Unavailable(f"cannot tell which kernel {KERNEL_PACKAGE} depends on")
    cached.write_text(names[0] + "\n")
    return names[0]


class Kernel:
    """An unpacked Debian kernel: its image, its release, and its modules."""

    def __init__(self, root: Path) -> None:
        (self.image,) = sorted((root / "boot").glob("vmlinuz-*"))
        self.release = self.image.name[len("vmlinuz-") :]
        self.modules = root / "lib" / "modules" / self.release

    def module_path(self, name: str) -> Path:
        wanted = {name.replace("-", "_") + ext for ext in (".ko", ".ko.xz", ".ko.zst")}
        for path in self.modules.rglob("*.ko*"):
            if path.name.replace("-", "_") in wanted:
                return path
        raise Unavailable(f"kernel {self.release} has no module {name}")

    def load_order(self, *names: str) -> list[Path]:
        """``names`` and what they depend on, dependencies first (read from each module's .modinfo ``depends=``)."""
        order: list[Path] = []

        def visit(module: str) -> None:
            path = self.module_path(module)
            if path in order:
                return
            if path.suffix != ".ko":
                raise Unavailable(f"{path.name} is compressed; busybox insmod needs a plain .ko")
            found = re.search(rb"(?:^|\0)depends=([^\0]*)\0", path.read_bytes())
            for dep in found.group(1).decode().split(",") if found else []:
                if dep:
                    visit(dep)
            order.append(path)

        for name in names:
            visit(name)
        return order


def kernel() -> Kernel:
    return Kernel(_unpacked(kernel_package()))


def busybox() -> Path:
    path = _unpacked("busybox-static") / "bin" / "busybox"
    if not path.exists():
        raise Unavailable(f"busybox-static unpacked without {path}")
    return path
