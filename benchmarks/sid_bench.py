"""Run benchmarks/bench.py with Debian sid's Python 3.15 (or 3.14), inside the sid root that tests/sid.py builds.

    python benchmarks/sid_bench.py 3.15 --scale-only    # any of bench.py's arguments but --python and --wheel

The host (Debian 12) has neither interpreter, and sid's need sid's C library, so the benchmark runs where they do:

1. **The root**: tests/sid.py's (cached under ``~/.cache/urandom-shim/sid/``, built with mmdebstrap in a few
   minutes when missing). Its packages already hold valgrind, for these instruction counts; this checks it is there.
2. **The wheels**, fetched on the host, because pip inside a 3.13+ root rejects the registry's certificate chain:
   the shim's, built from this checkout, and flask's and django's for that Python version (cached beside the root;
   when they can't be fetched, bench.py skips their rows and says why). Inside, pip installs with ``--no-index``.
3. **One run**, in a private mount namespace that ends with it, as tests/sid.py runs the tests: a fresh ``/tmp``,
   its own ``/proc``, the host's ``/dev``, this checkout read-only at ``/src`` and the wheels at ``/wheels``.

Needs root, unshare (util-linux) and the host's pytest (tests/sid.py's helpers import it).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
from sid import CACHE, VERSIONS, tree  # noqa: E402

#: The real apps of bench.py's ``real_app_rows``.
APPS = ("flask", "django")


def app_wheels(version: str) -> Path:
    """flask's and django's wheels for ``version``, fetched once by the host's pip; whatever can't be fetched is left
    out (bench.py then skips its row, saying pip failed)."""
    where = CACHE / f"bench-wheels-{version}"
    if not (where / ".complete").exists():
        where.mkdir(parents=True, exist_ok=True)
        for app in APPS:
            out = subprocess.run(
                [sys.executable, "-m", "pip", "download", "-q", "--disable-pip-version-check",
                 "--python-version", version, "--only-binary=:all:", "-d", str(where), app],
                capture_output=True, text=True,
            )  # fmt: skip
            if out.returncode:
                print(f"sid_bench.py: can't fetch {app} for {version}: {out.stderr.strip()[-400:]}", file=sys.stderr)
        (where / ".complete").write_text("")
    return where


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in VERSIONS:
        raise SystemExit(f"usage: benchmarks/sid_bench.py {{{','.join(VERSIONS)}}} [BENCH.PY ARGUMENTS]")
    version, bench_args = argv[0], argv[1:]
    if os.geteuid() != 0:
        raise SystemExit("sid_bench.py: the sid root needs root (chroot, and mounts in a private namespace)")
    root = tree()
    if not (root / "usr" / "bin" / "valgrind").exists():
        raise SystemExit(f"sid_bench.py: {root} has no valgrind; tests/sid.py's PACKAGES should list it")
    wheels = app_wheels(version)
    with tempfile.TemporaryDirectory() as built:
        subprocess.run(
            [sys.executable, "-m", "pip", "wheel", "-q", "--disable-pip-version-check", "--no-deps", "-w", built,
             str(ROOT)],
            check=True,
        )  # fmt: skip
        wheel = next(Path(built).glob("urandom_shim-*.whl"))
        for mountpoint in ("src", "wheels", "wheel"):
            (root / mountpoint).mkdir(exist_ok=True)
        mounts = (
            f"mount --bind {root} {root} && "
            f"mount -t tmpfs -o mode=1777 tmpfs {root}/tmp && mount -t proc proc {root}/proc && "
            f"mount --rbind /dev {root}/dev && mount --bind -o ro {ROOT} {root}/src && "
            f"mount --bind -o ro {wheels} {root}/wheels && mount --bind -o ro {built} {root}/wheel && "
            f'cd / && exec chroot {root} "$@"'
        )
        python = f"/usr/bin/python{version}"
        command = ["unshare", "--mount", "--propagation", "private", "sh", "-c", mounts, "sh"]
        command += ["sh", "-c", 'cd /tmp && exec "$@"', "sh"]
        command += [python, "/src/benchmarks/bench.py", "--python", python, "--wheel", f"/wheel/{wheel.name}"]
        env = {
            "PATH": "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin",
            "HOME": "/root",
            "LANG": "C.UTF-8",
            "PIP_NO_INDEX": "1",
            "PIP_FIND_LINKS": "/wheels",
            "PIP_DISABLE_PIP_VERSION_CHECK": "1",
        }
        return subprocess.run([*command, *bench_args], env=env).returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
