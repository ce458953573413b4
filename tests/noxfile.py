"""The compatibility matrix: the whole test suite on every CPython here, against the installed wheel.

    nox -f tests/noxfile.py                      # every interpreter (tests/run does this)
    nox -f tests/noxfile.py -- -k pep522         # arguments after -- go to pytest
    URANDOM_SHIM_TEST_PYTHONS=3.8,3.13 nox -f tests/noxfile.py

One session per interpreter: CPython 3.8 to 3.13 from pyenv, Debian's /usr/bin/python3 with its own
sitecustomize, and Debian's 3.14 and 3.15 from sid (``sid:3.14``, ``sid:3.15``), which run in a sid root of their own
(tests/sid.py) without the real-kernel and boot tests; and PyPy, Debian 12's /usr/bin/pypy3 and sid's (``sid:pypy3``),
with the tests that apply to it (PYPY_TESTS below). Each session makes a fresh venv of that interpreter, installs the wheel (built once, before the
sessions: ``URANDOM_SHIM_WHEEL``) and the test requirements, and runs pytest there. So the tests that run in-process
import the installed package, not the source tree, and every test that starts interpreters starts this one. An
interpreter that is not installed is skipped, and nox prints the reason in its summary; under CI (``CI=true``, which
``.ci/run`` sets) it fails the run instead, so CI can't pass on part of the matrix.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import nox

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
from conftest import find_python  # noqa: E402 - the same interpreter lookup as the tests

ALL = "3.8,3.9,3.10,3.11,3.12,3.13,sid:3.14,sid:3.15,/usr/bin/python3,/usr/bin/pypy3,sid:pypy3"
SPECS = [s.strip() for s in os.environ.get("URANDOM_SHIM_TEST_PYTHONS", ALL).split(",") if s.strip()]

nox.options.sessions = ["matrix"]


#: The interpreters whose sessions run every test: the oldest, the newest, and Debian's own with the
#: boots. The others leave out the slow tests (``-m slow``: simulated windows waited out, apps installed, the docs'
#: examples) but for CPython's own suites, which every interpreter runs: with 3.14 and 3.15 in the matrix, running
#: everything everywhere took CI past its hour. URANDOM_SHIM_MATRIX_FULL=1 runs everything everywhere. The
#: ``lengthy`` tests, which only the quick tier (tests/run --quick) leaves out, run in every session.
FULL = {"3.8", "sid:3.15", "/usr/bin/python3"}
REDUCED = "(not slow or cpython_suites)"


def selection(spec: str, posargs: list[str], base: str | None = None) -> list[str]:
    """The ``-m`` expression of ``spec``'s session, unless the command line gives one."""
    if any(a == "-m" or a.startswith("-m") for a in posargs):
        return []
    full = spec in FULL or os.environ.get("URANDOM_SHIM_MATRIX_FULL", "") not in ("", "0")
    parts = [p for p in (base, None if full else REDUCED) if p]
    return ["-m", " and ".join(parts)] if parts else []


#: PyPy's session (Debian's pypy3, issue 36): the tests of start-up, waiting and the command line that apply to PyPy,
#: with the interpreters they start being PyPy's, and the CPython-only ones among them skipped with their reason
#: (the marker cpython_only). pytest itself runs on the runner's CPython: the suite's in-process tests are CPython's.
#: sid's pypy3 (matrix(sid-pypy3), PyPy 8 on Python 3.11) runs the same selection. About 1.5 minutes each on 2 cores.
PYPY_TESTS = (
    "tests/test_pypy.py", "tests/test_kernel_path.py", "tests/test_waits.py", "tests/test_activation.py",
    "tests/test_properties.py", "tests/test_report_prediction.py",
)  # fmt: skip
PYPY_SELECTION = "venv and not slow and not kernel and not boot"


def label(spec: str) -> str:
    if spec == "/usr/bin/pypy3":
        return "debian-pypy3"
    return "debian" if spec == "/usr/bin/python3" else spec.replace(":", "-")


def pypy(session: nox.Session, spec: str) -> None:
    """Debian's pypy3, installed from Debian's packages where it is missing (tests/debian.py)."""
    from debian import Unavailable, pypy3

    try:
        interpreter = pypy3()
    except Unavailable as exc:
        missing = f"{spec} can't be had here: {exc}"
        if os.environ.get("CI", "").lower() in ("true", "1"):
            session.error(f"{missing}; CI=true, so that fails the run rather than pass on part of the matrix")
        session.skip(missing)
    session.chdir(ROOT)
    marks = [] if any(a == "-m" or a.startswith("-m") for a in session.posargs) else ["-m", PYPY_SELECTION]
    session.run(
        sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-n", "2", *marks, *PYPY_TESTS, *session.posargs,
        env={"URANDOM_SHIM_TEST_PYTHONS": str(interpreter)},
        external=True,
    )  # fmt: skip


def in_sid(session: nox.Session, version: str) -> None:
    """Debian's own 3.14, 3.15 or pypy3, in a sid root (tests/sid.py); the host's Debian session runs the kernel and
    boots."""
    import sid

    from debian import Unavailable

    marks = [a for a in session.posargs if a == "-m" or a.startswith("-m")]
    if marks and any(("kernel" in a or "boot" in a) and "not" not in a for a in session.posargs):
        session.skip("the real-kernel and boot tests run in the host's Debian session, not in sid's root")
    try:
        sid.tree()
        sid.wheelhouse(sid.PYPY_RUNNER if version == sid.PYPY else version)
    except Unavailable as exc:
        missing = f"Python {version} from Debian sid can't be had here: {exc}"
        if os.environ.get("CI", "").lower() in ("true", "1"):
            session.error(f"{missing}; CI=true, so that fails the run rather than pass on part of the matrix")
        session.skip(missing)
    if version == sid.PYPY:  # sid's PyPy runs the same selection as the host's (pypy below)
        marks = [] if any(a == "-m" or a.startswith("-m") for a in session.posargs) else ["-m", PYPY_SELECTION]
        chosen = [*marks, *PYPY_TESTS]
    else:
        chosen = selection(f"sid:{version}", session.posargs, "not kernel and not boot")
    session.run(sys.executable, str(ROOT / "tests" / "sid.py"), version, *chosen, *session.posargs, external=True)


@nox.session(python=False)
@nox.parametrize("spec", SPECS, ids=[label(s) for s in SPECS])
def matrix(session: nox.Session, spec: str) -> None:
    if spec.startswith("sid:"):
        in_sid(session, spec[len("sid:") :])
        return
    if "pypy" in spec:
        pypy(session, spec)
        return
    interpreter = find_python(spec)
    if interpreter is None:
        missing = f"interpreter {spec} of the declared matrix is not installed on this machine"
        if os.environ.get("CI", "").lower() in ("true", "1"):
            session.error(f"{missing}; CI=true, so that fails the run rather than pass on part of the matrix")
        session.skip(missing)
    wheel = os.environ.get("URANDOM_SHIM_WHEEL")
    if not wheel or not Path(wheel).is_file():
        session.error("URANDOM_SHIM_WHEEL must name the built wheel (tests/run builds it)")
    venv = ROOT / ".nox" / f"matrix-{label(spec)}"
    session.run(str(interpreter), "-m", "venv", "--clear", str(venv), external=True)
    python = str(venv / "bin" / "python")
    requirements = str(ROOT / "tests" / "matrix-requirements.txt")
    session.run(python, "-m", "pip", "install", "-q", "--disable-pip-version-check", wheel, "-r", requirements)
    session.run(python, "-c", "import sys, urandom_shim; print(sys.version.split()[0], urandom_shim.__file__)")
    session.chdir(ROOT)
    # The pytest script, not `python -m pytest`, which would put the source tree first on sys.path; and no
    # `pythonpath` from pyproject.toml for the same reason.
    session.run(
        str(venv / "bin" / "pytest"),
        "-o",
        "pythonpath=",
        "-n",
        "2",
        *selection(spec, session.posargs),
        *session.posargs,
        env={"URANDOM_SHIM_TEST_PYTHONS": str(interpreter), "URANDOM_SHIM_TEST_INSTALLED": "1"},
        external=True,
    )
