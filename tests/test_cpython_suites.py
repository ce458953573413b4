"""CPython's own regression tests for the modules the shim touches, run with the shim active.

The copy of ``test`` that ships with each interpreter runs unchanged in a venv that has the wheel installed, once per
condition below, with nothing left out. A test that fails because of the shim is a bug in the shim.

Debian's interpreter ships its tests separately, in ``libpython3.X-testsuite``: they are installed with apt if they
are missing (see tests/debian.py for what happens when that can't be done).
"""

from __future__ import annotations

import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
from conftest import Venv

from debian import Unavailable, apt_install, unavailable

#: The matrix runs these on every interpreter, also where it leaves the other slow tests out (tests/noxfile.py).
pytestmark = pytest.mark.cpython_suites

MODULES = ("test_os", "test_random", "test_secrets", "test_uuid", "test_tempfile", "test_urllib2")

#: The three policies with the CRNG ready, as in production after boot; and, beyond that, ``legacy`` with the CRNG
#: unready (simulated), so that every patch is live for the whole run and must still be invisible to these tests.
CONDITIONS = {
    "pep524": {"URANDOM_POLICY": "pep524"},
    "pep522": {"URANDOM_POLICY": "pep522"},
    "legacy": {"URANDOM_POLICY": "legacy"},
    "legacy, unready": {"URANDOM_POLICY": "legacy", "URANDOM_SHIM_SIMULATE": "unready-forever"},
}


def has_tests(python: Path) -> bool:
    return subprocess.run([str(python), "-c", "import test.test_os"], capture_output=True).returncode == 0


def debian_testsuite(python: Path) -> None:
    """Debian's interpreter keeps its tests in another package; install it if it is missing."""
    if has_tests(python):
        return
    version = subprocess.run(
        [str(python), "-c", "import sys; print('%d.%d' % sys.version_info[:2])"], capture_output=True, text=True
    ).stdout.strip()
    try:
        apt_install(f"libpython{version}-testsuite", lambda: has_tests(python))
    except Unavailable as exc:
        unavailable(f"{python} has no test suite: {exc}")


def counts(xml_path: Path) -> dict[str, int]:
    """Totals from regrtest's JUnit XML, counted per test case: run, failures, errors, skipped."""
    total = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    for case in ET.parse(xml_path).getroot().iter("testcase"):
        total["tests"] += 1
        for outcome in ("failure", "error", "skipped"):
            if case.find(outcome) is not None:
                total["failures" if outcome == "failure" else "errors" if outcome == "error" else "skipped"] += 1
    return total


def run_suite(shim: Venv, python: Path, modules: tuple[str, ...], condition: str, tmp_path: Path) -> dict[str, Any]:
    if str(python).startswith("/usr/"):
        debian_testsuite(python)
    xml = tmp_path / "results.xml"
    # Sequentially, in one process that starts with the shim: regrtest's -j workers hand their result back as JSON
    # on stdout, and Debian's 3.11.2 merges the worker's stderr into it, so the shim's event lines in the window
    # (one per call site, on stderr by design) would break the protocol, not the tests (measured: all pass this way).
    args = ["-m", "test", "--timeout", "900", "--junit-xml", str(xml), *modules]
    # Run from an empty directory: regrtest writes temporary files into the current one.
    result = shim.run(*args, env=CONDITIONS[condition], timeout=1800, cwd=tmp_path)
    output = result.stdout + result.stderr
    assert "Tests result: SUCCESS" in output, output[-6000:]
    assert result.returncode == 0, output[-6000:]
    total = counts(xml)
    version = shim.run("-c", "import sys; print(sys.version.split()[0])").stdout.strip()
    assert total["tests"] > 100 and total["failures"] == 0 and total["errors"] == 0, total
    return {"python": version, "condition": condition, "modules": " ".join(modules), **total}


@pytest.mark.slow
@pytest.mark.parametrize("condition", list(CONDITIONS))
def test_cpython_regression_tests_pass_with_the_shim(
    shim: Venv, python: Path, condition: str, tmp_path: Path, record_property: Any
) -> None:
    record_property("cpython_suite", run_suite(shim, python, MODULES, condition, tmp_path))


@pytest.mark.slow
def test_cpython_multiprocessing_spawn_passes_with_every_patch_live(
    shim: Venv, python: Path, tmp_path: Path, record_property: Any
) -> None:
    """``import multiprocessing`` itself calls os.urandom(32), and every spawned child starts the shim again. About
    70 s per interpreter, so it runs under the one condition where the patches are live throughout."""
    if str(python).startswith("/usr/"):
        debian_testsuite(python)
    code = "import os, test; d = os.path.dirname(test.__file__); n = 'test_multiprocessing_spawn'; "
    code += "print(os.path.exists(os.path.join(d, n)) or os.path.exists(os.path.join(d, n + '.py')))"
    if shim.run("-c", code).stdout.strip() != "True":
        # Seen with pyenv's CPython 3.11.7 and 3.12.1: their `make install` leaves out the split test directories.
        pytest.skip(f"{python} was installed without test_multiprocessing_spawn in its test package")
    row = run_suite(shim, python, ("test_multiprocessing_spawn",), "legacy, unready", tmp_path)
    record_property("cpython_suite", row)
