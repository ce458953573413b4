"""What the full run fetches and builds from Debian before the tests that use it, each once per run:

    python tests/roots.py NAME...      # build each NAME (below) that the cache lacks, in order

- ``tools``: the host's packages the tests install on first use (mmdebstrap, qemu, pypy3 and its venv module,
  systemd-journal-remote), the real-kernel tests' kernel and busybox, and qemu from bookworm-backports;
- ``sid``: the sid root of the 3.14, 3.15 and pypy3 sessions (tests/sid.py), and its wheels;
- ``bullseye``, ``bookworm``, ``trixie``, ``sid-boot``: the base systems of the real boots and the package build
  (tests/boot/boot_image.py).

``tests/run`` starts this at once, beside lint, types and the docs, and each session that needs a root waits on the
root's own lock (tests/debian.py's ``Lock``) rather than building it again. Whatever can't be had is said here and
then again, as a failure or a visible skip, by the tests that need it.
"""

from __future__ import annotations

import shutil
import sys
import time
from pathlib import Path
from typing import Callable

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE / "boot"), str(HERE / "kernel")]

import boot_image  # noqa: E402 - from the test folders above
import kernel_provision  # noqa: E402
import sid  # noqa: E402

import debian  # noqa: E402


def tools() -> None:
    debian.apt_install("mmdebstrap", lambda: shutil.which("mmdebstrap") is not None)
    debian.pypy3()
    debian.journal_remote()
    kernel_provision.kernel()
    kernel_provision.busybox()
    boot_image.Qemu()


def sid_root() -> None:
    sid.tree()
    for version in sid.VERSIONS:
        sid.wheelhouse(version)


def boot_base(suite: str) -> Callable[[], None]:
    def build() -> None:
        boot_image.base_tree(boot_image.SUITES[suite])

    return build


ROOTS: dict[str, Callable[[], None]] = {
    "tools": tools,
    "sid": sid_root,
    **{name: boot_base(name) for name in ("bullseye", "bookworm", "trixie")},
    "sid-boot": boot_base("sid"),
}


def main(names: list[str]) -> int:
    unknown = [name for name in names if name not in ROOTS]
    if unknown or not names:
        print(f"tests/roots.py: name one or more of {', '.join(ROOTS)} (not {', '.join(unknown)})", file=sys.stderr)
        return 2
    status = 0
    for name in names:
        began = time.monotonic()
        try:
            ROOTS[name]()
        except debian.Unavailable as exc:
            print(f"tests/roots.py: {name} can't be had here: {exc}", file=sys.stderr)
            status = 1
        print(f"tests/roots.py: {name}: {time.monotonic() - began:.0f} s")
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
