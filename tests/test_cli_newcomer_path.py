"""A newcomer's path through ``check --for``, ``simulate`` and the report, as the install page and the tutorial walk
it (issue 28, parts 3 and 4).

- ``check --for`` finds a console script beside the running ``urandom-shim`` when its venv is not on ``PATH``; a
  name that is nothing is a problem with its own exit status (4); an app installed from a wheel without its package
  file is told what to do.
- ``simulate`` names the flags typed as the sources of the settings; without a window option the window stays open
  for the whole run; ``--report-only`` stopped by SIGTERM or SIGINT prints what it collected and leaves no
  directory behind; its report counts its times from the run's start, not the host's boot.
- The tutorial's line numbers are those of the files a reader saves; ``report --help`` never cuts the default path;
  ``status`` keeps the directory out of the command's backticks; ``.gitignore`` covers dpkg-buildpackage's outputs.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT, clean_env

import urandom_shim
from urandom_shim.cli import main as cli_main

#: Where the urandom_shim these tests import lives: the checkout, or the installed wheel under the matrix.
PACKAGE_HOME = str(Path(urandom_shim.__file__).resolve().parent.parent)
EXIT_NO_SUCH_PROGRAM = 4
LAUNCHER = (
    '#!/usr/bin/python3\nimport sys\nfrom {module} import main\nif __name__ == "__main__":\n    sys.exit(main())\n'
)


def cli(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli_main.main(list(args))
    return code, out.getvalue(), err.getvalue()


def venv_bin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, script: str, module: str) -> Path:
    """A venv's bin with urandom-shim and a console script, neither on PATH; the running urandom-shim is that one."""
    bin_dir = tmp_path / "venv" / "bin"
    bin_dir.mkdir(parents=True)
    for name, text in (
        ("urandom-shim", LAUNCHER.format(module="urandom_shim.cli.main")),
        (script, LAUNCHER.format(module=module)),
    ):
        (bin_dir / name).write_text(text)
        (bin_dir / name).chmod(0o755)
    monkeypatch.setattr(sys, "argv", [str(bin_dir / "urandom-shim"), "check"])
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    return bin_dir


# -- check --for -------------------------------------------------------------------------------------------------


def test_check_for_finds_a_console_script_beside_the_running_urandom_shim(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bin_dir = venv_bin(tmp_path, monkeypatch, "tok-cli", "tokapp.cli")
    code, out, err = cli("check", "--for", "tok-cli")
    assert code == 0, err
    assert out.startswith(f"Configuration for `tok-cli (found beside urandom-shim: {bin_dir / 'tok-cli'})`"), out


def test_check_for_a_name_that_is_nothing_is_a_problem_with_its_own_exit_status(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    code, out, err = cli("check", "--for", "tokensvcx")
    assert code == EXIT_NO_SUCH_PROGRAM and out == "", out
    assert "--for 'tokensvcx': there is no such script, no such command on PATH" in err
    assert "Check the spelling, and that the app is installed in this environment." in err
    code, _out, err = cli("check", "--module", "tokensvcx")
    assert code == EXIT_NO_SUCH_PROGRAM and "-m tokensvcx: there is no module of that name" in err
    # A console script's name has hyphens, so it is no module name; missing, it is the same problem (install.md's).
    code, out, err = cli("check", "--for", "mypkg-cli")
    assert code == EXIT_NO_SUCH_PROGRAM and out == "" and "--for 'mypkg-cli': there is no such script" in err, err


def test_check_for_a_module_of_the_standard_library_or_here_still_resolves(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert cli("check", "--for", "http.server")[0] == 0
    (tmp_path / "localapp.py").write_text("print(1)\n")
    assert cli("check", "--for", "localapp")[0] == 0


def test_check_for_an_app_from_a_wheel_without_its_package_file_says_what_to_do(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    site = tmp_path / "venv" / "lib" / "python3" / "site-packages"
    (site / "tokapp").mkdir(parents=True)
    (site / "tokapp" / "__init__.py").touch()
    (site / "tokapp" / "cli.py").write_text("def main():\n    return 0\n")
    monkeypatch.syspath_prepend(str(site))
    venv_bin(tmp_path, monkeypatch, "tok-cli", "tokapp.cli")
    code, out, _err = cli("check", "--for", "tok-cli")
    assert code == 0
    flat = " ".join(out.split())
    assert "A [tool.urandom-shim] table in the app's pyproject.toml does not travel in its wheel" in flat, out
    assert f"it is then installed as {site / 'tokapp' / 'urandom-shim.toml'}" in flat
    (site / "tokapp" / "urandom-shim.toml").write_text('policy = "pep522"\n')
    code, out, _err = cli("check", "--for", "tok-cli")
    assert code == 0 and "does not travel" not in out and "pep522" in out


# -- simulate ----------------------------------------------------------------------------------------------------


def shim_process(*args: str, **kwargs: object) -> subprocess.CompletedProcess[str]:
    env = clean_env({"PYTHONPATH": PACKAGE_HOME})
    return subprocess.run(
        [sys.executable, "-m", "urandom_shim", *args], capture_output=True, text=True, timeout=60, env=env, **kwargs
    )


def test_simulate_names_the_flags_typed_as_the_sources() -> None:
    done = shim_process(
        "simulate", "--unready-forever", "--policy", "pep524", "--timeout", "0.1", "--on-timeout", "fallback", "--",
        sys.executable, "-c", "import os; os.urandom(1)",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "under policy 'pep524' (from urandom-shim simulate --policy)" in done.stderr, done.stderr
    assert "environment variable URANDOM_POLICY" not in done.stderr


def test_simulate_without_a_window_option_keeps_the_window_open_for_the_run() -> None:
    done = shim_process("simulate", "--policy", "pep522", "--", sys.executable, "-c", "import os; os.urandom(1)")
    assert done.returncode == 1, done.stderr  # the command's BlockingIOError, not a usage error (2)
    assert "no window given, so the simulated CRNG stays unready for as long as the command runs" in done.stderr
    assert "raised BlockingIOError under policy 'pep522'" in done.stderr


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_simulate_report_only_stopped_by_a_signal_prints_its_report_and_cleans_up(
    tmp_path: Path, signum: signal.Signals
) -> None:
    env = clean_env({"PYTHONPATH": PACKAGE_HOME, "TMPDIR": str(tmp_path)})
    code = "import os, sys, time; os.urandom(1); print('called', flush=True); time.sleep(60)"
    process = subprocess.Popen(
        [sys.executable, "-m", "urandom_shim", "simulate", "--report-only", "--policy", "pep522", "--",
         sys.executable, "-c", code],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, start_new_session=True,
    )  # fmt: skip
    try:
        assert process.stdout is not None and process.stdout.readline() == "called\n"
        assert list(tmp_path.glob("urandom-shim-report-*")), "the run keeps its events in a directory of its own"
        process.send_signal(signum)
        _out, err = process.communicate(timeout=20)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    assert process.returncode == 128 + signum, err
    assert "under pep522, 1 program would raise BlockingIOError" in err, err
    assert not list(tmp_path.glob("urandom-shim-report-*")), "its temporary directory is left behind"


def test_a_simulated_runs_report_tells_one_story_of_time() -> None:
    done = shim_process(
        "simulate", "--unready-forever", "--report-only", "--policy", "pep522", "--",
        sys.executable, "-c", "import os; os.urandom(1)",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    report = done.stderr[done.stderr.index("urandom-shim report:") :]
    assert re.search(r"first call \d+\.\d\d s into the simulated run", report), report
    assert "s after boot" not in report, "the host's boot has nothing to do with a simulated window"
    assert "crng init done  not part of this report: the window was simulated (--unready-forever)" in report


def test_the_report_of_a_simulated_runs_events_file_leaves_the_real_kernel_out(tmp_path: Path) -> None:
    """The strict-rollout page's CI dry run: simulate writes the events file, report reads it later on its own."""
    events = tmp_path / "events.jsonl"
    done = shim_process(
        "simulate", "--unready-forever", "--report-only", "--policy", "pep522", "--events", str(events), "--",
        sys.executable, "-c", "import os; os.urandom(1)",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    code, out, _err = cli("report", "--events", str(events), "--no-journal", "--fail-for", "pep522")
    assert code == 1, out
    assert "crng init done  not part of this report: the window was simulated" in out, out
    assert "(from /dev/kmsg)" not in out


def test_a_simulated_run_without_a_call_leaves_an_empty_file_that_only_allow_empty_passes(tmp_path: Path) -> None:
    """An empty events file can't say whether it was emptied: --fail-for reads it as nothing (exit 3), and a gate
    where a run without a call is expected says so with --allow-empty."""
    events = tmp_path / "events.jsonl"
    done = shim_process(
        "simulate", "--report-only", "--policy", "pep522", "--events", str(events), "--", sys.executable, "-c", "pass"
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert events.exists() and events.read_text() == ""
    gate = ("report", "--events", str(events), "--no-journal", "--fail-for", "pep522")
    assert shim_process(*gate).returncode == 3
    assert shim_process(*gate, "--allow-empty").returncode == 0


# -- the pages and the packaging ---------------------------------------------------------------------------------


def saved_files(page: Path) -> dict[str, list[str]]:
    """The files a reader saves from ``page``: each Python block whose first line is ``# NAME.py``, whole."""
    files = {}
    for block in re.findall(r"```python\n(.*?)```", page.read_text(encoding="utf-8"), flags=re.S):
        header = re.match(r"# ([\w.-]+\.py)\n", block)
        if header:
            files[header.group(1)] = block.splitlines()
    return files


def test_the_tutorials_line_numbers_are_those_of_the_files_the_reader_saves() -> None:
    page = ROOT / "docs" / "start" / "tutorial.md"
    files = saved_files(page)
    assert set(files) == {"app.py", "fixed.py"}
    named = re.findall(r"(os\.urandom\(\d+\)|import random) called from \.\.\.([\w.-]+\.py):(\d+)", page.read_text())
    assert len(named) >= 8
    # What the line a call names holds: uuid.uuid4() calls os.urandom(16); import secrets imports random.
    expected = {"os.urandom(32)": "os.urandom(32)", "os.urandom(16)": "uuid.uuid4()", "import random": "import secrets"}
    wrong = [
        f"{name}:{number} is {files[name][int(number) - 1]!r}, not {expected[call]}"
        for call, name, number in named
        if expected[call] not in files[name][int(number) - 1]
    ]
    assert not wrong, wrong


def test_report_help_never_cuts_the_default_path(monkeypatch: pytest.MonkeyPatch) -> None:
    for columns in range(60, 130, 7):
        monkeypatch.setenv("COLUMNS", str(columns))
        code, out, _err = cli("report", "--help")
        events_help = out[out.index("\n  --events PATH") : out.index("\n  --journal-file PATH")]
        assert code == 0 and "/run/urandom-shim/events.jsonl" in events_help, (columns, events_help)


def test_status_keeps_the_directory_out_of_the_commands_backticks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    code, out, _err = cli("status")
    assert code == 0
    assert f"Configuration for `python -c` in {tmp_path} (" in out, out


DPKG_OUTPUTS = [
    ".pybuild/cpython3_3.11/build/x.py",
    "debian/files",
    "debian/urandom-shim.substvars",
    "debian/python3-urandom-shim.substvars",
    "debian/urandom-shim.postinst.debhelper",
    "debian/debhelper-build-stamp",
    "debian/.debhelper/generated/x",
    "debian/urandom-shim/usr/lib/x",
    "debian/python3-urandom-shim/usr/lib/x",
    "debian/tmp/x",
]


def test_gitignore_covers_what_dpkg_buildpackage_leaves(tmp_path: Path) -> None:
    if not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    done = subprocess.run(
        ["git", "-C", str(ROOT), "check-ignore", "--no-index", "--verbose", "--non-matching", *DPKG_OUTPUTS],
        capture_output=True,
        text=True,
    )
    not_ignored = [line.split("\t")[-1] for line in done.stdout.splitlines() if line.startswith("::")]
    assert not not_ignored, not_ignored
    tracked = subprocess.run(["git", "-C", str(ROOT), "ls-files", "debian"], capture_output=True, text=True).stdout
    ignored_tracked = subprocess.run(
        ["git", "-C", str(ROOT), "check-ignore", "--no-index", *tracked.split()], capture_output=True, text=True
    ).stdout
    assert ignored_tracked == "", f"the packaging itself must not be ignored: {ignored_tracked}"
