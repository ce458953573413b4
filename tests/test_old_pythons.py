"""`urandom-shim run` pointed at an interpreter the shim does not support (3.6 and 3.7, still the system Python of
some distributions): one line that says so and what happens instead, and the program runs, never a SyntaxError."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from conftest import Venv, clean_env, find_python

PROGRAM = "import os\nprint(len(os.urandom(16)))\n"


@pytest.mark.parametrize("version", ["3.6", "3.7"])
def test_run_into_an_unsupported_python_says_so_once_and_runs_the_program(
    shim: Venv, tmp_path: Path, version: str
) -> None:
    old = find_python(version)
    if old is None:
        pytest.skip(f"Python {version} is not installed on this machine")
    script = tmp_path / "app.py"
    script.write_text(PROGRAM)
    cli = shim.path / "bin" / "urandom-shim-cli"
    env = clean_env({"URANDOM_SHIM_SIMULATE": "unready-forever"})
    done = subprocess.run(
        [str(cli), "run", "--policy", "pep522", "--", str(old), str(script)],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert (done.returncode, done.stdout) == (0, "16\n"), done.stderr
    assert done.stderr.splitlines() == [
        f"urandom-shim: Python {version} is not supported (urandom-shim needs 3.8 or later), so `urandom-shim run` "
        f"cannot apply policy 'pep522' in this interpreter. The program runs with Python {version}'s own "
        "os.urandom(), which waits for the kernel's random number generator and never returns weak bytes. Run it "
        "with Python 3.8 or later to apply the policy."
    ], done.stderr
