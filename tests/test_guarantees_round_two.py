"""Guarantees, round two (issue 27): the routes around the floor, report mode and the command line that the
features of the previous round opened, each tried as a hostile user would, in real interpreters of venvs built from
the wheel. ``run``'s hash seed, package files and the pytest plugin's children are route tables of their own, in
``tests/test_routes.py``.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import Venv, clean_env
from test_guarantees import PROBE, cli, isolated

# -- 1. the floor of /etc/urandom-shim.toml, however the variable spells it -----------------------------------------

SPELLINGS = [
    "/etc/urandom-shim.toml/",
    "/etc/urandom-shim.toml/.",
    "/etc//urandom-shim.toml/",
    "/etc//urandom-shim.toml",
    "/etc/./urandom-shim.toml",
    "/etc/../etc/urandom-shim.toml",
]


@pytest.mark.parametrize("spelling", SPELLINGS)
def test_no_spelling_of_the_machine_file_variable_takes_away_the_floor_in_etc(
    shim: Venv, machine_file_in_etc: Any, fake_kernel: Any, tmp_path: Path, spelling: str
) -> None:
    flag = tmp_path / "kernel-unready"
    flag.touch()
    env = {
        **fake_kernel.env(flag),
        "URANDOM_POLICY": "legacy",
        "URANDOM_SHIM_TIMEOUT": "0.2",
        "URANDOM_SHIM_MACHINE_CONFIG": spelling,
        "XDG_CONFIG_HOME": str(tmp_path / "xdg"),
        "PROBE_URANDOM": "1",
    }
    floor = "allow_weak = false\n"
    result = machine_file_in_etc(floor, [str(shim.python), "-c", PROBE], env, tmp_path)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["policy"] == "pep524", result.stderr
    assert report["urandom"].startswith("raised: "), report  # waited out the timeout: no weak bytes
    assert "below the floor set by" in result.stderr, result.stderr
    checked = machine_file_in_etc(floor, [cli(shim), "check"], env, tmp_path)
    assert checked.returncode == 1, checked.stdout + checked.stderr
    assert "No problems" not in checked.stdout, checked.stdout
    assert "is below the floor set by" in checked.stdout, checked.stdout
    if spelling.endswith(("/", "/.")):  # a path through the file: it exists, and can't be read: a floor of its own
        assert f"{spelling} (machine file): cannot be read (Not a directory)" in checked.stdout, checked.stdout
    # `run --policy legacy` gives no weak hash seed under that floor.
    seed = machine_file_in_etc(
        floor,
        [cli(shim), "run", "--policy", "legacy", "--", str(shim.python), "-c",
         "import os; print(os.environ.get('URANDOM_SHIM_HASHSEED'))"],
        {**env, "FAKE_KERNEL_UNREADY": str(flag)}, tmp_path,
    )  # fmt: skip
    assert seed.stdout.strip() == "None", seed.stdout + seed.stderr
    flag.unlink()


def test_a_relative_machine_file_in_a_deleted_directory_leaves_the_shim_active(shim: Venv, tmp_path: Path) -> None:
    gone = tmp_path / "gone"
    gone.mkdir()
    script = tmp_path / "probe.py"
    script.write_text(PROBE)
    env = clean_env(
        isolated(tmp_path, URANDOM_SHIM_SIMULATE="unready-forever", URANDOM_SHIM_MACHINE_CONFIG="rel.toml")
    )
    result = subprocess.run(
        ["sh", "-c", 'cd "$1" && rmdir "$1" && exec "$2" "$3"', "sh", str(gone), str(shim.python), str(script)],
        capture_output=True, text=True, env=env, timeout=60,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout.splitlines()[-1])
    assert report["active"] is True, result.stderr
    assert "Traceback" not in result.stderr and "not active" not in result.stderr, result.stderr
