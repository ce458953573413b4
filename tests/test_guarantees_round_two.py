"""Guarantees, round two (issue 27): the routes around the floor, report mode and the command line that the
features of the previous round opened, each tried as a hostile user would, in real interpreters of venvs built from
the wheel. ``run``'s hash seed, package files and the pytest plugin's children are route tables of their own, in
``tests/test_routes.py``.
"""

from __future__ import annotations

import getpass
import json
import signal
import subprocess
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
    env = clean_env(isolated(tmp_path, URANDOM_SHIM_SIMULATE="unready-forever", URANDOM_SHIM_MACHINE_CONFIG="rel.toml"))
    result = subprocess.run(
        ["sh", "-c", 'cd "$1" && rmdir "$1" && exec "$2" "$3"', "sh", str(gone), str(shim.python), str(script)],
        capture_output=True, text=True, env=env, timeout=60,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout.splitlines()[-1])
    assert report["active"] is True, result.stderr
    assert "Traceback" not in result.stderr and "not active" not in result.stderr, result.stderr


# -- 4. waits that hang: the plugin's children, report mode's explicit wait, files left behind -----------------------

CHILD_TESTS = """\
import subprocess, sys

def run_child(code):
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=45)

def test_a_child_waiting_in_os_urandom_ends():
    child = run_child("import os; os.urandom(8)")
    assert child.returncode == 1 and "BlockingIOError" in child.stderr, child.stderr
    assert "this process is a child of a test under the pytest plugin" in child.stderr, child.stderr

def test_a_child_waiting_in_secrets_ends():
    child = run_child("import secrets; secrets.token_hex(8)")
    assert child.returncode == 1 and "BlockingIOError" in child.stderr, child.stderr

def test_a_child_whose_window_the_test_ends_still_waits_for_it(system_rng):
    system_rng.ready_after(1.0)
    child = run_child("import os, time; t = time.monotonic(); os.urandom(8); print(round(time.monotonic() - t))")
    assert child.returncode == 0, child.stderr
"""


@pytest.mark.slow
def test_the_plugins_children_inherit_the_guard_against_waits(venvs: Any, python: Path, tmp_path: Path) -> None:
    venv: Venv = venvs(python, "pytest")
    (tmp_path / "test_children.py").write_text(CHILD_TESTS)
    for policy in ("pep524", "pep522"):
        result = venv.run(
            "-m", "pytest", "-p", "no:cacheprovider", f"--urandom-policy={policy}", "-k",
            "os_urandom or whose_window" if policy == "pep524" else "secrets", "test_children.py",
            env={"XDG_CONFIG_HOME": str(tmp_path)}, cwd=tmp_path, timeout=150,
        )  # fmt: skip
        expected = "2 passed" if policy == "pep524" else "1 passed"
        assert result.returncode == 0 and expected in result.stdout, result.stdout + result.stderr


WAITS_EXPLICITLY = "import secrets; print(secrets.wait_for_system_rng())"


def test_report_mode_records_an_explicit_wait_that_nothing_would_end_and_returns(
    shim: Venv, venvs: Any, python: Path, tmp_path: Path
) -> None:
    result = subprocess.run(
        [cli(shim), "simulate", "--unready-forever", "--report-only", "--policy", "pep522", "--",
         str(shim.python), "-c", WAITS_EXPLICITLY],
        capture_output=True, text=True, env=clean_env(isolated(tmp_path)), timeout=60,
    )  # fmt: skip
    assert result.returncode == 0 and result.stdout.strip() == "True", result.stdout + result.stderr
    assert "secrets.wait_for_system_rng()" in result.stderr, result.stderr  # recorded, in the report
    assert "would wait" in result.stderr, result.stderr
    venv: Venv = venvs(python, "pytest")
    (tmp_path / "test_wait.py").write_text(f"def test_waits():\n    {WAITS_EXPLICITLY}\n")
    result = venv.run(
        "-m", "pytest", "-p", "no:cacheprovider", "--urandom-policy=pep522", "--urandom-report-only", "test_wait.py",
        env={"XDG_CONFIG_HOME": str(tmp_path)}, cwd=tmp_path, timeout=120,
    )  # fmt: skip
    assert result.returncode == 0 and "1 passed" in result.stdout, result.stdout + result.stderr


@pytest.mark.parametrize("how", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_killed_plugin_run_leaves_no_temporary_file(venvs: Any, python: Path, tmp_path: Path, how: int) -> None:
    """The plugin's files live in pytest's own temporary directory for the run, and it installs no signal handler
    in the user's process (issue 46): Ctrl-C (SIGINT), which pytest handles, removes them; a run ended by SIGTERM
    leaves them there, where pytest removes all but the last three runs' directories, and nowhere else."""
    venv: Venv = venvs(python, "pytest")
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    (tmp_path / "test_slow.py").write_text(
        "import os, time\ndef test_slow():\n    print('started', flush=True)\n    time.sleep(60)\n"
    )
    env = clean_env({"XDG_CONFIG_HOME": str(tmp_path), "TMPDIR": str(scratch)})
    # Earlier runs' directories: pytest removes all but the last three when it ends, naming each on its way out
    # `garbage-<uuid4()>`, which is os.urandom(16). After a Ctrl-C in a test, that ran under the test's policy and
    # simulated CRNG: a wait that nothing would end, which failed or hung the run.
    root = scratch / f"pytest-of-{getpass.getuser()}"
    for number in range(6):
        (root / f"pytest-{number}").mkdir(parents=True)
    proc = subprocess.Popen(
        [str(venv.python), "-m", "pytest", "-p", "no:cacheprovider", "-s", "--urandom-policy=pep524", "test_slow.py"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=tmp_path,
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            line = proc.stdout.readline()
            if not line or "started" in line:
                break
        made = sorted(p.relative_to(scratch).parts for p in scratch.rglob("*") if p.parent.name == "urandom-shim")
        assert made and all(parts[1].startswith("pytest-") for parts in made), made  # the control: in pytest's
        proc.send_signal(how)
        out, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    left = sorted(p.relative_to(scratch).parts for p in scratch.rglob("*") if "urandom-shim" in str(p))
    if how == signal.SIGINT:
        assert left == [], left
        assert proc.returncode == 2 and "would wait forever" not in out + err, out + err
        # The report is of a run that never finished its one test, and says so.
        flat = " ".join(out.split())
        assert "The run stopped early (interrupted): 0 of 1 collected test finished and 1 was cut short" in flat, flat
        assert "Nothing to change:" not in flat, flat
        assert sorted(p.name for p in root.iterdir() if p.name != "pytest-current") == [
            "pytest-4", "pytest-5", "pytest-6",
        ], "pytest's own clean-up of its older directories did not run"  # fmt: skip
    else:
        assert left and all(parts[0].startswith("pytest-of-") and parts[1].startswith("pytest-") for parts in left)


# -- 5. one line per problem -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("subcommand", ["simulate", "run"])
def test_a_missing_named_file_is_one_line_under_simulate_and_run(shim: Venv, tmp_path: Path, subcommand: str) -> None:
    when = ["--unready-forever"] if subcommand == "simulate" else []
    env = isolated(tmp_path, URANDOM_SHIM_CONFIG=str(tmp_path / "missing.toml"))
    result = subprocess.run(
        [cli(shim), subcommand, *when, "--", str(shim.python), "-c", "pass"],
        capture_output=True, text=True, env=clean_env(env), timeout=60,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    lines = [line for line in result.stderr.splitlines() if "missing.toml" in line]
    assert len(lines) == 1 and "does not exist" in lines[0], result.stderr
    # And a command line that starts nothing still says it: once.
    waited = subprocess.run([cli(shim), "wait", "--timeout", "0"], capture_output=True, text=True,
                            env=clean_env(env), timeout=60)  # fmt: skip
    assert sum("missing.toml" in line for line in waited.stderr.splitlines()) == 1, waited.stderr


def test_etc_is_read_for_its_floor_whatever_file_the_variable_names_even_the_same_one(tmp_path: Path) -> None:
    """No identity check decides whether /etc is read for its floor: a symlink swapped between that check and the
    read let an attacker's file with allow_weak = true stand in for /etc's (the review of round two, F2). Only the
    machine file's own path, unmoved, is not read twice."""
    from urandom_shim import _config, _sources

    link = tmp_path / "link.toml"
    link.symlink_to(_sources.MACHINE_FILE)  # the very file, through a symlink an attacker could swap later
    for named in (str(link), _sources.MACHINE_FILE + "/", "/etc//urandom-shim.toml", str(tmp_path / "other.toml")):
        files = _config._floor_files({"URANDOM_SHIM_MACHINE_CONFIG": named}, False, str(tmp_path / "env.toml"), None)
        assert (_sources.MACHINE_FILE, True) in [(path, floor_only) for path, _label, floor_only in files], named
    files = _config._floor_files({}, False, str(tmp_path / "env.toml"), None)
    assert [path for path, _label, _floor in files].count(_sources.MACHINE_FILE) == 1


def test_a_pyproject_another_user_controls_never_chooses_the_policy(tmp_path: Path) -> None:
    """Another user's pyproject.toml above a root program's script in a shared directory (/tmp, sticky and
    world-writable) chose its policy and its events file (review of round two, F1); and a project file in a
    directory everyone may write to without the sticky bit could be swapped by anyone."""
    import os

    from urandom_shim import _sources

    if os.geteuid() != 0:
        pytest.skip("making a file another user's needs root")
    shared = tmp_path / "shared"
    (shared / "rootjob").mkdir(parents=True)
    shared.chmod(0o1777)
    planted = shared / "pyproject.toml"
    planted.write_text('[tool.urandom-shim]\npolicy = "legacy"\nevents = "/root/.bashrc"\n')
    os.chown(planted, 65534, 65534)
    path, problem = _sources.find_pyproject(str(shared / "rootjob"))
    assert path is None and problem is not None, (path, problem)
    assert f"{planted}: owned by uid 65534, neither you nor root" in problem
    os.chown(planted, 0, 0)  # root's own file there is root's project
    assert _sources.find_pyproject(str(shared / "rootjob")) == (str(planted), None)
    shared.chmod(0o777)  # no sticky bit: anyone could replace even root's file
    path, problem = _sources.find_pyproject(str(shared / "rootjob"))
    assert path is None and problem is not None and "everyone may write to this directory (no sticky bit)" in problem


@pytest.mark.parametrize(
    ("options", "keeps_it"),
    [
        (["-S", "-c", "pass"], True),
        (["-E", "app.py"], True),
        (["-I", "app.py"], True),
        (["-sS", "app.py"], True),
        (["-X", "dev", "-S", "app.py"], True),
        (["-Xdev", "-E", "app.py"], True),
        (["-W", "error", "app.py"], False),
        (["-c", "import sys; sys.argv += ['-S']", "-S"], False),
        (["-m", "app", "-E"], False),
        (["app.py", "-S"], False),
        (["-u", "-B", "app.py"], False),
        ([], False),
    ],
)
def test_run_gives_no_seed_to_an_interpreter_that_would_keep_it_for_its_children(
    options: list[str], keeps_it: bool
) -> None:
    """An interpreter started with -S runs no site, so no shim takes run's seed out of its environment; one started
    with -E or -I ignores it but passes it on: its children, whatever their policy and however late they start, would
    run with it (the review of round two, F3)."""
    from urandom_shim.cli import launch

    assert launch.starts_without_the_shim(options) is keeps_it
