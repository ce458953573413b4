"""Python 3.14 and 3.15 as Debian ships them, for the matrix: a Debian sid tree, and the test suite run inside it.

    python tests/sid.py 3.15 [PYTEST ARGUMENTS]    # tests/noxfile.py's sessions matrix(sid-3.14), matrix(sid-3.15)
    python tests/sid.py pypy3 [PYTEST ARGUMENTS]   # matrix(sid-pypy3): sid's PyPy, pytest on sid's 3.14

The host (Debian 12) has neither interpreter, and sid's are built against a newer C library, so they run in their
own root, as they would on a sid machine:

1. **The tree** (cached under ``~/.cache/urandom-shim/sid/``, rebuilt when :data:`PACKAGES` changes): ``mmdebstrap``
   (installed with apt if missing) builds sid with both interpreters and PyPy, their venv modules, their own test suites
   (``libpython3.X-testsuite``, for ``tests/test_cpython_suites.py``), and a C compiler for the fake kernel. sid's
   ``Release`` file is past its ``Valid-Until`` date, so apt is told not to check it.
2. **The wheels** the tests need inside (cached beside it): fetched by the host's pip for that Python version, because
   pip inside a 3.13+ root rejects the registry's certificate chain; installed there with ``--no-index``.
3. **One run**, in a private mount namespace that ends with it: the tree gets its own ``/proc``, the host's ``/dev``,
   a fresh ``/tmp``, and this checkout and the wheel bound in; a venv of the interpreter gets the wheel and the
   requirements, and pytest runs from the checkout as in every other session (``tests/noxfile.py``), without the
   real-kernel and boot tests, which the host's Debian session runs.

Under ``URANDOM_SHIM_KERNEL_REQUIRED=1`` (CI), a tree that can't be built fails the run; otherwise it is a visible skip.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from debian import Lock, Unavailable, apt_install, run

ROOT = Path(__file__).resolve().parent.parent
MIRROR = "deb http://deb.debian.org/debian sid main"
VERSIONS = ("3.14", "3.15")
#: sid's PyPy (``python tests/sid.py pypy3``, matrix(sid-pypy3)): the tests' interpreters are PyPy's, and pytest
#: itself runs on this CPython of the root, as the host's PyPy session runs it on the runner's.
PYPY, PYPY_RUNNER = "pypy3", "3.14"
PACKAGES = (
    *(f"python{v}" for v in VERSIONS),
    *(f"python{v}-venv" for v in VERSIONS),
    *(f"libpython{v}-testsuite" for v in VERSIONS),
    "pypy3",  # sid's PyPy: matrix(sid-pypy3) (tests/noxfile.py)
    "pypy3-venv",
    "gcc",  # the fake kernel (tests/fakekernel.c)
    "libc6-dev",
    "mount",  # the overlay /etc of machine_file_in_etc (tests/conftest.py)
    "ca-certificates",
    "valgrind",  # benchmarks/bench.py's instruction counts
    "git",  # tests/test_cli_newcomer_path.py asks git what .gitignore covers
)
CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "urandom-shim" / "sid"


def tree() -> Path:
    """The sid root with both interpreters, built once per :data:`PACKAGES`."""
    recipe = hashlib.sha256("\n".join((MIRROR, *PACKAGES)).encode()).hexdigest()[:12]
    root = CACHE / recipe / "root"
    if (root / ".complete").exists():
        return root
    CACHE.mkdir(parents=True, exist_ok=True)
    with Lock(CACHE / "build.lock"):
        if (root / ".complete").exists():
            return root
        apt_install("mmdebstrap", lambda: shutil.which("mmdebstrap") is not None)
        partial = root.with_name("root.partial")
        shutil.rmtree(partial, ignore_errors=True)
        partial.parent.mkdir(parents=True, exist_ok=True)
        run(
            "mmdebstrap",
            "--variant=apt",
            "--format=directory",
            "--aptopt=Acquire::Check-Valid-Until false",
            f"--include={','.join(PACKAGES)}",
            "sid",
            str(partial),
            MIRROR,
        )
        (partial / ".complete").write_text(f"{MIRROR}\n{' '.join(PACKAGES)}\n")
        shutil.rmtree(root, ignore_errors=True)
        partial.rename(root)
    return root


#: What an editable install of this checkout, or of a test's app, pulls from the index (tests/conftest.py's
#: make_editable_venv, tests/test_app_layouts.py): inside the root, pip and uv find everything in the wheelhouse
#: (PIP_NO_INDEX, PIP_FIND_LINKS, UV_OFFLINE, UV_FIND_LINKS below).
EDITABLE = ("hatchling==1.33.0", "editables", "setuptools>=64", "pdm-backend")


def wheelhouse(version: str) -> Path:
    """The test requirements' wheels for ``version``, fetched by the host's pip (see the module docstring)."""
    requirements = ROOT / "tests" / "matrix-requirements.txt"
    stamp = hashlib.sha256(
        b"".join((ROOT / "tests" / f).read_bytes() for f in ("matrix-requirements.txt", "plugin-requirements.txt",
                                                             "app-requirements.txt"))
        + str(EDITABLE).encode()
    ).hexdigest()[:12]  # fmt: skip
    where = CACHE / f"wheels-{version}-{stamp}"
    if (where / ".complete").exists():
        return where
    with Lock(CACHE.parent / "sid-wheels.lock"):
        if not (where / ".complete").exists():
            where.mkdir(parents=True, exist_ok=True)
            run(
                sys.executable, "-m", "pip", "download", "-q", "--disable-pip-version-check",
                "--python-version", version, "--only-binary=:all:", "-d", str(where), "-r", str(requirements),
                "-r", str(ROOT / "tests" / "app-requirements.txt"), *EDITABLE,
            )  # fmt: skip
            (where / ".complete").write_text("")
    return where


INSIDE = """set -e
python{v} -m venv /tmp/matrix
/tmp/matrix/bin/python -m pip install -q --disable-pip-version-check --no-index --find-links /wheels \\
    "/wheel/{wheel}" -r /src/tests/matrix-requirements.txt
/tmp/matrix/bin/python -c "import sys, urandom_shim; print(sys.version.split()[0], urandom_shim.__file__)"
cd /src
exec /tmp/matrix/bin/pytest -o pythonpath= -p no:cacheprovider -n 2 "$@"
"""

#: What the run inside may see of this machine's environment.
PASSED_ON = ("CI", "URANDOM_SHIM_KERNEL_REQUIRED", "HYPOTHESIS_PROFILE", "TERM")


def main(argv: list[str]) -> int:
    version, pytest_args = argv[0], argv[1:]
    tested = "/usr/bin/pypy3" if version == PYPY else f"/usr/bin/python{version}"
    version = PYPY_RUNNER if version == PYPY else version
    if version not in VERSIONS:
        raise SystemExit(f"tests/sid.py: Python {version} is not one of sid's here ({', '.join((*VERSIONS, PYPY))})")
    wheel = Path(os.environ.get("URANDOM_SHIM_WHEEL", ""))
    if not wheel.is_file():
        raise SystemExit("tests/sid.py: URANDOM_SHIM_WHEEL must name the built wheel (tests/run builds it)")
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        raise Unavailable("running the tests in Debian sid's root needs root and unshare (util-linux)")
    root, wheels = tree(), wheelhouse(version)
    for mountpoint in ("src", "wheels", "wheel"):
        (root / mountpoint).mkdir(exist_ok=True)
    mounts = (
        # The root bound onto itself first: inside, "/" is then a mount point, which the tests' own private mount
        # namespaces need (unshare --propagation private fails on a plain directory).
        f"mount --bind {root} {root} && "
        f"mount -t tmpfs -o mode=1777 tmpfs {root}/tmp && mount -t proc proc {root}/proc && "
        f"mount --rbind /dev {root}/dev && mount --bind {ROOT} {root}/src && "
        f"mount --bind -o ro {wheels} {root}/wheels && mount --bind -o ro {wheel.parent} {root}/wheel && "
        f'exec chroot {root} "$@"'
    )
    env = {
        "PATH": "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin",
        "HOME": "/root",
        "LANG": "C.UTF-8",
        "URANDOM_SHIM_TEST_PYTHONS": tested,
        "URANDOM_SHIM_TEST_INSTALLED": "1",
        "URANDOM_SHIM_WHEEL": f"/wheel/{wheel.name}",
        "PIP_NO_INDEX": "1",
        "PIP_FIND_LINKS": "/wheels",
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
        "UV_OFFLINE": "1",  # uv, for tests/test_app_layouts.py, the same way
        "UV_FIND_LINKS": "/wheels",
        **{k: os.environ[k] for k in PASSED_ON if k in os.environ},
    }
    inside = INSIDE.format(v=version, wheel=wheel.name)
    command = ["unshare", "--mount", "--propagation", "private", "sh", "-c", mounts, "sh"]
    command += ["sh", "-c", inside, "sh", *pytest_args]
    return subprocess.run(command, env=env).returncode


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except Unavailable as exc:
        print(f"tests/sid.py: can't run Python's sid sessions here: {exc}", file=sys.stderr)
        sys.exit(3)
