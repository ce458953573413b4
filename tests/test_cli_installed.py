"""The installed command line, in real subprocesses: the console script of a venv built from the wheel, the bootstrap
``sitecustomize`` in other interpreters (Debian's own ``/usr/bin/python3`` among them), ``wait`` on a pseudo-terminal,
and ``simulate`` with every policy down to a grandchild process.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import DRIVER, ROOT, Venv, clean_env, events_in, make_editable_venv, without_events
from test_matrix import SITES, assert_window_outcome, best_effort_reads, expected

from urandom_shim._policies import BEST_EFFORT, POLICIES, SECRETS, SEED_INSTANCE, SEED_NEW, URANDOM

RELAY = Path(__file__).resolve().parent / "relay.py"
DEBIAN_PYTHON = Path("/usr/bin/python3")


def cli(venv: Venv) -> str:
    return str(venv.path / "bin" / "urandom-shim")


def run(
    argv: list[str], env: dict[str, str] | None = None, timeout: float = 60, **kw: Any
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, capture_output=True, text=True, env=clean_env(env), timeout=timeout, **kw)


# -- the console script and python -m ------------------------------------------------------------------------------


def test_console_script_status_json_in_an_installed_venv(shim: Venv) -> None:
    result = run([cli(shim), "status", "--json"])
    assert result.returncode == 0 and result.stderr == ""
    report = json.loads(result.stdout)
    assert report["active"] is True and report["activated_by"] == "pth"
    assert report["policy"] == "native" and report["policy_source"] == "default"
    assert report["crng"] == "ready" and report["problems"] == []
    assert report["pth"] == str(shim.site_packages / "urandom_shim.pth")
    assert report["patched"] is False


def test_python_m_urandom_shim_is_the_same_command_line(shim: Venv) -> None:
    by_module = shim.run("-m", "urandom_shim", "status", "--json", env={"URANDOM_POLICY": "pep524"})
    by_script = run([cli(shim), "status", "--json"], env={"URANDOM_POLICY": "pep524"})
    assert by_module.returncode == by_script.returncode == 0, by_module.stderr + by_script.stderr
    module_report, script_report = json.loads(by_module.stdout), json.loads(by_script.stdout)
    assert module_report["policy"] == script_report["policy"] == "pep524"
    assert module_report["settings"] == script_report["settings"]
    version = shim.run("-m", "urandom_shim", "--version")
    assert version.returncode == 0 and version.stdout.startswith("urandom-shim 0.")


def test_status_under_simulate_shows_the_unready_crng_and_the_policy_in_force(shim: Venv) -> None:
    result = run(
        [cli(shim), "simulate", "--unready-forever", "--policy", "pep522", "--", cli(shim), "status", "--json"]
    )
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["crng"] == "unready" and report["kernel"]["crng"] == "ready"
    assert report["policy"] == "pep522" and report["policy_source"] == "urandom-shim simulate --policy"
    assert report["patched"] is True  # the status process itself runs under the simulated policy


def test_check_exits_1_on_a_broken_machine_file_and_0_once_it_is_fixed(shim: Venv, tmp_path: Path) -> None:
    (tmp_path / "cloud-setup.py").write_text("")
    machine = tmp_path / "urandom-shim.toml"
    machine.write_text('policy = "pep524"\nallow_weak = "no"\n')
    env = {"URANDOM_SHIM_MACHINE_CONFIG": str(machine), "XDG_CONFIG_HOME": str(tmp_path)}
    broken = run([cli(shim), "check", "--for", "cloud-setup.py"], env=env, cwd=tmp_path)
    assert broken.returncode == 1, broken.stdout + broken.stderr
    assert "allow_weak = 'no' is not valid; expected true or false" in broken.stdout
    machine.write_text('policy = "pep524"\nallow_weak = false\n')
    fixed = run([cli(shim), "check", "--for", "cloud-setup.py"], env=env, cwd=tmp_path)
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    assert fixed.stdout.rstrip().endswith("No problems.")


def test_status_output_piped_into_a_reader_that_leaves_early_is_quiet(shim: Venv) -> None:
    proc = subprocess.Popen(
        [cli(shim), "status"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=clean_env({"PYTHONUNBUFFERED": "1"})
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # like `urandom-shim status | head -0`
    err = proc.stderr.read()
    proc.wait(timeout=30)
    assert err == b"" and proc.returncode == 1


# -- run: exec, exit codes, signals ---------------------------------------------------------------------------------


def test_run_replaces_itself_so_the_pid_exit_status_and_signals_are_the_commands(shim: Venv) -> None:
    proc = subprocess.Popen(
        [
            cli(shim),
            "run",
            "--policy",
            "pep524",
            "--",
            str(shim.python),
            "-c",
            "import os, sys; print(os.getpid()); sys.exit(7)",
        ],
        stdout=subprocess.PIPE,
        text=True,
        env=clean_env(),
    )
    out, _ = proc.communicate(timeout=30)
    assert proc.returncode == 7
    assert int(out) == proc.pid
    killed = run([cli(shim), "run", "--", "sh", "-c", "kill -TERM $$"])
    assert killed.returncode == -signal.SIGTERM


def test_run_a_file_the_kernel_cannot_execute_exits_126(shim: Venv, tmp_path: Path) -> None:
    garbage = tmp_path / "garbage"
    garbage.write_bytes(b"\x00\x01\x02 not a program")
    garbage.chmod(0o755)
    result = run([cli(shim), "run", "--", str(garbage)])
    assert result.returncode == 126
    assert result.stderr == f"urandom-shim run: {garbage}: cannot execute: Exec format error\n"
    script = tmp_path / "script"
    script.write_text("#!/no/such/interpreter\n")
    script.chmod(0o755)
    result = run([cli(shim), "run", "--", str(script)])
    assert result.returncode == 126
    assert result.stderr == (
        f"urandom-shim run: {script}: cannot execute: bad interpreter in its #! line: No such file or directory\n"
    )


def test_run_a_missing_command_exits_127_without_a_traceback(shim: Venv) -> None:
    result = run([cli(shim), "run", "--policy", "pep522", "--", "no-such-command-here"])
    assert result.returncode == 127
    assert result.stderr == "urandom-shim run: no-such-command-here: command not found (searched PATH)\n"


# -- the bootstrap sitecustomize ------------------------------------------------------------------------------------

REPORT = (
    "import json, os, sys, urandom_shim, urandom_shim._state\n"
    "site_file = getattr(sys.modules.get('sitecustomize'), '__file__', None)\n"
    "try:\n"
    "    os.urandom(4)\n"
    "    outcome = 'returned'\n"
    "except BlockingIOError:\n"
    "    outcome = 'raised'\n"
    "print(json.dumps({'by': urandom_shim._state.state.activated_by, 'site': site_file, 'outcome': outcome,\n"
    "    'policy': urandom_shim.current_settings().policy.value.name, 'shim': urandom_shim.__file__,\n"
    "    'bootstrap_on_path': any('_bootstrap' in p for p in sys.path), 'home_on_path': os.environ['URANDOM_SHIM_HOME'] in sys.path}))\n"
)
CHILD = "import subprocess, sys\nsys.exit(subprocess.run([sys.executable, '-c', sys.argv[1]]).returncode)"


def counting_site_dir(tmp_path: Path, name: str) -> Path:
    """A directory for PYTHONPATH with a module ``name`` whose ``install()`` appends a line to $COUNTER: the pid, and
    sys.argv[0], which tells the program under test (``-c``) from urandom-shim's own interpreter (its script path),
    which sees the same PYTHONPATH and runs the same sitecustomize before it replaces itself with the command."""
    directory = tmp_path / "pythonpath"
    directory.mkdir(exist_ok=True)
    (directory / f"{name}.py").write_text(
        "import os, sys\n"
        "def install():\n"
        "    with open(os.environ['COUNTER'], 'a') as f:\n"
        "        f.write(f'{os.getpid()} {sys.argv[0]}\\n')\n"
    )
    return directory


def program_runs(counter: Path) -> list[str]:
    """The pids of the ``python -c`` processes in which the counting module's install() ran, once per run."""
    return [line.split()[0] for line in counter.read_text().splitlines() if line.split()[1] == "-c"]


def reports(stdout: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in stdout.splitlines()]


def test_run_in_debians_python_chains_to_the_distro_sitecustomize_exactly_once(shim: Venv, tmp_path: Path) -> None:
    """Debian's /usr/lib/python3.X/sitecustomize.py runs `import apport_python_hook; apport_python_hook.install()`:
    a counting stand-in for that module shows how many times the distro file ran in each process."""
    distro = _debian_sitecustomize()
    counter = tmp_path / "counter"
    env = {"PYTHONPATH": str(counting_site_dir(tmp_path, "apport_python_hook")), "COUNTER": str(counter)}
    argv = [cli(shim), "simulate", "--unready-forever", "--policy", "pep522", "--", str(DEBIAN_PYTHON), "-c"]
    result = run([*argv, f"{REPORT}\n{CHILD.replace('sys.exit', 'code = ')}\nsys.exit(code)", REPORT], env=env)
    assert result.returncode == 0, result.stderr
    parent, child = reports(result.stdout)
    for report in (parent, child):
        assert report["site"] == distro, "the distro sitecustomize must stay sys.modules['sitecustomize']"
        assert report["by"] == "bootstrap"
        assert report["policy"] == "pep522" and report["outcome"] == "raised"
        assert report["shim"].startswith(str(shim.site_packages))
        assert not report["bootstrap_on_path"] and not report["home_on_path"]
    pids = program_runs(counter)
    assert len(pids) == 2 and len(set(pids)) == 2, f"the distro sitecustomize ran in {pids}, not once in each process"
    assert without_events(result.stderr) == ""
    assert [event.split(": ", 1)[1] for event in events_in(result.stderr)] == [
        "raised BlockingIOError under policy 'pep522' (from urandom-shim simulate --policy)."
    ] * 2


def test_run_in_debians_python_applies_the_policy_on_the_real_kernel(shim: Venv, tmp_path: Path) -> None:
    _debian_sitecustomize()
    result = run([cli(shim), "run", "--policy", "pep524", "--timeout", "3", "--", str(DEBIAN_PYTHON), "-c", REPORT])
    assert result.returncode == 0, result.stderr
    (report,) = reports(result.stdout)
    assert report["by"] == "bootstrap" and report["policy"] == "pep524" and report["outcome"] == "returned"


def _debian_sitecustomize() -> str:
    if not DEBIAN_PYTHON.exists():
        pytest.skip("no /usr/bin/python3 on this machine")
    found = subprocess.run(
        [str(DEBIAN_PYTHON), "-c", "import sitecustomize; print(sitecustomize.__file__)"],
        capture_output=True,
        text=True,
    )
    if found.returncode != 0:
        pytest.skip("/usr/bin/python3 has no distro sitecustomize")
    return found.stdout.strip()


def test_run_in_a_venv_without_the_shim_bootstraps_it_and_chains_to_the_users_sitecustomize(
    shim: Venv, bare: Venv, tmp_path: Path
) -> None:
    directory = counting_site_dir(tmp_path, "hook")
    (directory / "sitecustomize.py").write_text("import hook\nhook.install()\n")
    counter = tmp_path / "counter"
    env = {"PYTHONPATH": str(directory), "COUNTER": str(counter)}
    argv = [cli(shim), "simulate", "--unready-forever", "--policy", "legacy", "--", str(bare.python), "-c"]
    result = run([*argv, f"{REPORT}\n{CHILD.replace('sys.exit', 'code = ')}\nsys.exit(code)", REPORT], env=env)
    assert result.returncode == 0, result.stderr
    for report in reports(result.stdout):
        assert report["site"] == str(directory / "sitecustomize.py")
        assert report["by"] == "bootstrap" and report["policy"] == "legacy" and report["outcome"] == "returned"
        assert not report["bootstrap_on_path"] and not report["home_on_path"]
    pids = program_runs(counter)
    assert len(pids) == 2 and len(set(pids)) == 2, f"the user's sitecustomize ran in {pids}, not once in each process"
    assert without_events(result.stderr) == ""
    assert len(events_in(result.stderr)) == 2, result.stderr  # one os.urandom() in each process


def test_run_where_the_pth_already_ran_does_not_activate_twice(shim: Venv, tmp_path: Path) -> None:
    directory = counting_site_dir(tmp_path, "hook")
    (directory / "sitecustomize.py").write_text("import hook\nhook.install()\n")
    counter = tmp_path / "counter"
    env = {"PYTHONPATH": str(directory), "COUNTER": str(counter)}
    result = run(
        [cli(shim), "simulate", "--unready-forever", "--policy", "pep522", "--", str(shim.python), "-c", REPORT],
        env=env,
    )
    assert result.returncode == 0, result.stderr
    (report,) = reports(result.stdout)
    assert report["by"] == "pth" and report["outcome"] == "raised"
    assert report["site"] == str(directory / "sitecustomize.py")
    assert len(program_runs(counter)) == 1


def test_bootstrap_without_a_home_says_so_in_one_line_and_the_program_runs(shim: Venv, bare: Venv) -> None:
    bootstrap = shim.site_packages / "urandom_shim" / "_bootstrap"
    result = bare.run("-c", "print('ran')", env={"PYTHONPATH": str(bootstrap), "URANDOM_SHIM_HOME": "/nonexistent"})
    assert result.returncode == 0 and result.stdout == "ran\n"
    (line,) = result.stderr.splitlines()
    assert line.startswith(
        "urandom-shim: not active in this interpreter: the bootstrap cannot load urandom-shim "
        "(URANDOM_SHIM_HOME='/nonexistent'; ModuleNotFoundError:"
    )


def test_bootstrap_respects_the_kill_switch_and_still_chains(shim: Venv, bare: Venv, tmp_path: Path) -> None:
    directory = counting_site_dir(tmp_path, "hook")
    (directory / "sitecustomize.py").write_text("import hook\nhook.install()\n")
    counter = tmp_path / "counter"
    env = {"PYTHONPATH": str(directory), "COUNTER": str(counter), "URANDOM_SHIM_DISABLE": "1"}
    code = "import sys; print('_urandom_shim_boot' in sys.modules, 'urandom_shim' in sys.modules)"
    result = run([cli(shim), "run", "--policy", "pep522", "--", str(bare.python), "-c", code], env=env)
    assert result.returncode == 0 and result.stdout == "False False\n", result.stderr
    assert result.stderr.startswith("urandom-shim: run: URANDOM_SHIM_DISABLE='1' is set")
    assert len(program_runs(counter)) == 1


def test_errors_in_the_chained_sitecustomize_are_reported_by_site_as_without_the_shim(
    shim: Venv, bare: Venv, tmp_path: Path
) -> None:
    directory = tmp_path / "pythonpath"
    directory.mkdir()
    (directory / "sitecustomize.py").write_text("raise RuntimeError('the distro file is broken')\n")
    without = bare.run("-c", "print('ran')", env={"PYTHONPATH": str(directory)})
    with_shim = run(
        [cli(shim), "run", "--", str(bare.python), "-c", "print('ran')"], env={"PYTHONPATH": str(directory)}
    )
    assert without.stdout == with_shim.stdout == "ran\n"
    assert "Error in sitecustomize; set PYTHONVERBOSE for traceback:" in without.stderr
    # Once from urandom-shim's own interpreter, which sees the same PYTHONPATH, and once, identically, from the program.
    assert with_shim.stderr == without.stderr * 2


@pytest.mark.lengthy  # pip installs hatchling from the package index to build the editable install
def test_editable_install_ships_the_bootstrap_beside_the_pth(python: Path, bare: Venv, tmp_path: Path) -> None:
    venv = make_editable_venv(python, tmp_path / "editable")
    assert (venv.site_packages / "urandom_shim_bootstrap" / "sitecustomize.py").is_file()
    result = run(
        [cli(venv), "simulate", "--unready-forever", "--policy", "pep522", "--", str(bare.python), "-c", REPORT]
    )
    assert result.returncode == 0, result.stderr
    (report,) = reports(result.stdout)
    assert report["by"] == "bootstrap" and report["outcome"] == "raised"
    assert report["shim"].startswith(str(ROOT))


# -- simulate: every policy, down to a grandchild ----------------------------------------------------------------------

ONE_SITE_PER_COLUMN = {
    URANDOM: "os.urandom",
    SECRETS: "secrets.token_bytes",
    SEED_INSTANCE: "import random",
    SEED_NEW: "random.Random()",
}
WINDOW = 1.2


@pytest.mark.slow
@pytest.mark.parametrize("column", list(ONE_SITE_PER_COLUMN))
@pytest.mark.parametrize("policy", [p.name for p in POLICIES])
def test_simulate_in_a_grandchild_matches_the_policy_table(shim: Venv, bare: Venv, policy: str, column: str) -> None:
    """simulate -> python (relay) -> python of a venv without the shim (relay) -> the driver: the grandchild shares
    the simulated window, the policy, and the deadline that simulate pinned."""
    site = ONE_SITE_PER_COLUMN[column]
    assert SITES[site] == column
    chain = [str(shim.python), str(RELAY), str(bare.python), str(RELAY), str(bare.python), str(DRIVER), site]
    started = time.monotonic()
    result = run([cli(shim), "simulate", "--unready-for", str(WINDOW), "--policy", policy, "--", *chain])
    assert result.returncode == 0, result.stdout + result.stderr
    report = json.loads(result.stdout.strip().splitlines()[-1])
    kind, _, deadline_text = report["simulate"].partition(":")
    deadline = float(deadline_text)
    assert kind == "unready-until-monotonic" and started + WINDOW <= deadline < report["t_start"] + WINDOW
    assert_window_outcome(report, policy, site, deadline)
    if expected(policy, site) == BEST_EFFORT:
        assert best_effort_reads(report), "best-effort bytes come from getrandom(GRND_INSECURE)"


# -- wait -----------------------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_wait_returns_0_when_the_simulated_crng_becomes_ready_and_is_silent_when_piped(shim: Venv) -> None:
    started = time.monotonic()
    result = run([cli(shim), "simulate", "--unready-for", "1.0", "--", cli(shim), "wait", "--timeout", "10"])
    took = time.monotonic() - started
    assert result.returncode == 0
    assert (result.stdout, result.stderr) == ("", "")
    assert 1.0 <= took < 3.0


def test_wait_times_out_with_exit_1_after_the_timeout(shim: Venv) -> None:
    started = time.monotonic()
    result = run([cli(shim), "simulate", "--unready-forever", "--", cli(shim), "wait", "--timeout", "0.5"])
    took = time.monotonic() - started
    assert result.returncode == 1 and result.stdout == ""
    assert 0.5 <= took < 2.5
    (line,) = result.stderr.splitlines()
    assert line.startswith("urandom-shim: wait: the kernel's random number generator was still not ready after 0.5 s")


def test_wait_ctrl_c_exits_130_promptly(shim: Venv) -> None:
    proc = subprocess.Popen(
        [cli(shim), "simulate", "--unready-forever", "--", cli(shim), "wait"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=clean_env(),
    )
    time.sleep(1.0)
    assert proc.poll() is None, "wait returned while the simulated CRNG was unready"
    sent = time.monotonic()
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=10)
    assert proc.returncode == 130 and (out, err) == (b"", b"")
    assert time.monotonic() - sent < 3.0  # an uninterruptible wait never ends: 3 s is room for a loaded machine


@pytest.mark.slow
def test_wait_on_a_terminal_shows_a_live_status_line(shim: Venv) -> None:
    import pty

    main, secondary = pty.openpty()
    proc = subprocess.Popen(
        [cli(shim), "simulate", "--unready-for", "1.0", "--", cli(shim), "wait", "--timeout", "10"],
        stdin=secondary,
        stdout=secondary,
        stderr=secondary,
        env=clean_env(),
    )
    os.close(secondary)
    chunks = []
    while True:
        try:
            chunk = os.read(main, 4096)
        except OSError:  # EIO: the last holder of the secondary side has gone
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(main)
    assert proc.wait(timeout=10) == 0
    screen = b"".join(chunks).decode()
    updates = screen.split("\r")
    assert len(updates) >= 3, screen  # one line, rewritten in place
    assert updates[1].startswith("urandom-shim wait: kernel CRNG not ready yet after 0.")
    # Simulated: the line says so, and leaves out the real kernel's entropy_avail, which says nothing here.
    assert "(simulated by URANDOM_SHIM_SIMULATE=unready-until-monotonic:" in updates[1], updates[1]
    assert "entropy_avail" not in screen
    # The last update says ready; its time counts from the wait's own start, a little after simulate pinned the window.
    (last,) = [update for update in updates if "CRNG ready after" in update]
    assert "(simulated by URANDOM_SHIM_SIMULATE=" in last, last
    assert 0.5 <= float(last.split("ready after ")[1].split(" s")[0]) < 2.5
    assert screen.rstrip("\r\n").endswith(last.rstrip("\r\n")), "the ready update comes last, then a newline"
    assert "\x1b" not in screen, "plain text: no escape sequences"


def test_bootstrap_reached_twice_through_other_spellings_still_chains_once(
    shim: Venv, bare: Venv, tmp_path: Path
) -> None:
    """A nested run, or a PYTHONPATH that names the bootstrap directory again (with a trailing slash, or through a
    symlink): the bootstrap must not chain to itself, and the user's sitecustomize still runs exactly once."""
    directory = counting_site_dir(tmp_path, "hook")
    (directory / "sitecustomize.py").write_text("import hook\nhook.install()\n")
    bootstrap = shim.site_packages / "urandom_shim" / "_bootstrap"
    link = tmp_path / "elsewhere"
    link.symlink_to(bootstrap)
    counter = tmp_path / "counter"
    pythonpath = os.pathsep.join([f"{bootstrap}/", str(link), str(directory)])
    env = {"PYTHONPATH": pythonpath, "COUNTER": str(counter)}
    argv = [cli(shim), "simulate", "--unready-forever", "--policy", "pep522", "--", str(bare.python), "-c", REPORT]
    result = run(argv, env=env)
    assert result.returncode == 0 and without_events(result.stderr) == "", result.stderr
    assert len(events_in(result.stderr)) == 1, result.stderr
    (report,) = reports(result.stdout)
    assert report["site"] == str(directory / "sitecustomize.py")
    assert report["by"] == "bootstrap" and report["outcome"] == "raised"
    assert len(program_runs(counter)) == 1
