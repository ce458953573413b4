"""The command line, in-process: every subcommand and every error path through ``main(argv)``, with ``capsys``.

``run`` and ``simulate`` end in ``os.execve``; here ``launch._exec`` is replaced by a recorder, so these tests see the
exact program, arguments and environment the command would get. tests/test_cli_installed.py runs the real thing.
"""

from __future__ import annotations

import errno
import json
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

import urandom_shim
from urandom_shim import _simulation, _state
from urandom_shim.cli import facts, launch
from urandom_shim.cli import main as cli


@pytest.fixture(autouse=True)
def isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """A scratch current directory (conftest's ``hermetic`` already took away every file and variable of ours)."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("URANDOM_SHIM_MACHINE_CONFIG", str(tmp_path / "machine.toml"))
    (tmp_path / "machine.toml").write_text("")  # a variable naming no file is a problem for check
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    return work


@pytest.fixture
def simulated(monkeypatch: pytest.MonkeyPatch) -> Any:
    """``simulated(spec)``: this process sees a simulated CRNG state until the test ends."""

    def set_spec(spec: str) -> None:
        monkeypatch.setenv(_simulation.ENV, spec)
        monkeypatch.setattr(_state.state, "simulation", _simulation.parse(spec))
        monkeypatch.setattr(_state.state, "ready", False)

    return set_spec


@pytest.fixture
def executed(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, list[str], dict[str, str]]]:
    """What ``run``/``simulate`` would have executed, instead of executing it."""
    calls: list[tuple[str, list[str], dict[str, str]]] = []

    def record(path: str, argv: list[str], env: dict[str, str]) -> None:
        calls.append((path, argv, env))

    monkeypatch.setattr(launch, "_exec", record)
    return calls


@pytest.fixture
def bootstrap(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """A bootstrap directory as a wheel ships it (a source checkout has none)."""
    directory = tmp_path / "urandom_shim" / "_bootstrap"
    directory.mkdir(parents=True)
    (directory / "sitecustomize.py").write_text("")
    monkeypatch.setattr(launch, "bootstrap_directory", lambda: str(directory))
    return directory


@pytest.fixture
def not_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    """This process as one where the shim never started and no .pth exists, whether or not the test runner's own
    venv has the wheel installed (in the matrix it does, and the shim started from its .pth)."""
    monkeypatch.delattr("sys._urandom_shim_boot", raising=False)
    monkeypatch.setattr(_state.state, "activated_by", None)
    monkeypatch.setattr(_state.state, "inactive_reason", None)
    monkeypatch.setattr(facts, "pth_locations", lambda: ["/nonexistent/site-packages/urandom_shim.pth"])


def run_main(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


# -- the top level --------------------------------------------------------------------------------------------------


def test_version_prints_the_package_version(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _err = run_main(capsys, "--version")
    assert code == 0
    assert out.strip() == f"urandom-shim {urandom_shim.__version__}"


def test_no_command_is_a_usage_error_that_names_the_commands(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_main(capsys)
    assert code == 2 and out == ""
    assert err.splitlines()[-1] == "urandom-shim: error: choose a command: status, check, wait, run, simulate or report"


def test_unknown_command_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    code, _out, err = run_main(capsys, "stauts")
    assert code == 2
    assert "invalid choice: 'stauts'" in err


@pytest.mark.parametrize("command", ["status", "check", "wait", "run", "simulate"])
def test_every_command_has_help_with_examples(capsys: pytest.CaptureFixture[str], command: str) -> None:
    code, out, err = run_main(capsys, command, "--help")
    assert code == 0 and err == ""
    assert out.startswith(f"usage: urandom-shim {command}")
    assert "examples:" in out
    assert f"urandom-shim {command}" in out.split("examples:")[1]


def test_an_internal_error_is_one_line_without_a_traceback(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken() -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr(facts, "status_facts", broken)
    code, out, err = run_main(capsys, "status")
    assert code == 70 and out == ""
    assert err == (
        "urandom-shim: internal error in `urandom-shim status` (RuntimeError: boom); rerun with URANDOM_SHIM_DEBUG=1 "
        "for the traceback, and please report it.\n"
    )


def test_urandom_shim_debug_shows_the_traceback_of_an_internal_error(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken() -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr(facts, "status_facts", broken)
    monkeypatch.setenv("URANDOM_SHIM_DEBUG", "1")
    code, _out, err = run_main(capsys, "status")
    assert code == 70
    assert err.startswith("Traceback (most recent call last):")
    assert "in broken" in err and err.rstrip().endswith("please report it.")


def test_ctrl_c_in_any_command_exits_130(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    def interrupted() -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(facts, "status_facts", interrupted)
    assert run_main(capsys, "status")[0] == 130


# -- status ---------------------------------------------------------------------------------------------------------


def test_status_shows_each_section_and_the_default_policy(
    capsys: pytest.CaptureFixture[str], not_installed: None
) -> None:
    code, out, err = run_main(capsys, "status")
    assert code == 0 and err == ""
    for heading in ("Shim", "Kernel CRNG", "While the CRNG is not ready, under native", "This Python on its own"):
        assert f"\n{heading}" in out
    assert "  policy                 native       from default\n" in out
    assert "  state          ready (initialised)\n" in out
    assert f"\nThis Python on its own ({'.'.join(map(str, __import__('sys').version_info[:3]))})\n" in out
    # Not installed here: status says so, and why.
    assert "Problems (1)\n  urandom-shim: not active in this interpreter: urandom_shim.pth is not in" in out


def test_status_names_each_setting_and_its_source(capsys: pytest.CaptureFixture[str], monkeypatch: Any) -> None:
    monkeypatch.setenv("URANDOM_POLICY", "pep524")
    monkeypatch.setenv("URANDOM_SHIM_TIMEOUT", "30")
    code, out, _err = run_main(capsys, "status")
    assert code == 0
    assert "  policy                 pep524       from environment variable URANDOM_POLICY\n" in out
    assert "  timeout                30           from environment variable URANDOM_SHIM_TIMEOUT\n" in out
    assert (
        "  os.urandom(), SystemRandom     waits until the CRNG is ready, at most 30 s, then raises BlockingIOError\n"
        in out
    )
    assert "  import random, random.seed()   seeded from best-effort kernel bytes; never blocks\n" in out


@pytest.mark.parametrize(
    ("policy", "urandom", "secrets"),
    [
        ("native", "the interpreter's own code", "the interpreter's own code"),
        ("pep524", "waits until the CRNG is ready, however long", "waits until the CRNG is ready, however long"),
        ("pep522", "raises BlockingIOError at once", "waits until the CRNG is ready, however long"),
        ("legacy", "returns best-effort bytes at once", "returns best-effort bytes at once"),
    ],
)
def test_status_says_what_each_call_site_does_under_each_policy(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, policy: str, urandom: str, secrets: str
) -> None:
    monkeypatch.setenv("URANDOM_POLICY", policy)
    report = json.loads(run_main(capsys, "status", "--json")[1])
    says = {row["site"]: row["says"] for row in report["sites"]}
    assert says["os.urandom"].startswith(urandom)
    assert says["secrets"].startswith(secrets)
    assert [row["site"] for row in report["sites"]] == ["os.urandom", "secrets", "random._inst", "random.Random()"]


def test_status_json_has_the_documented_keys(capsys: pytest.CaptureFixture[str], not_installed: None) -> None:
    code, out, _err = run_main(capsys, "status", "--json")
    assert code == 0
    report = json.loads(out)
    assert report["active"] is False
    assert report["policy"] == "native" and report["policy_source"] == "default"
    assert report["crng"] == "ready"
    assert report["kernel"]["crng"] == "ready"
    assert isinstance(report["kernel"]["entropy_avail"], int)
    assert report["kernel"]["release"] == os.uname().release
    assert report["simulation"] is None
    assert report["problems"] == [
        "not active in this interpreter: urandom_shim.pth is not in this interpreter's site-packages; install "
        "urandom-shim in this environment, or start programs with `urandom-shim run -- ...`."
    ]


def test_status_reports_bad_configuration_as_problems(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, isolated: Path
) -> None:
    monkeypatch.setenv("URANDOM_POLICY", "PEP524")
    (isolated / "pyproject.toml").write_text('[tool.urandom-shim]\ntimeout = "soon"\n')
    report = json.loads(run_main(capsys, "status", "--json")[1])
    problems = report["problems"]
    assert (
        "environment variable URANDOM_POLICY='PEP524' is not a valid policy; expected one of 'native', 'pep524', "
        "'pep522', 'legacy' (did you mean 'pep524'?); ignoring it, so policy is 'native' from default." in problems
    )
    assert any(p.startswith(f"{isolated / 'pyproject.toml'} [tool.urandom-shim]: timeout = 'soon'") for p in problems)


def test_status_under_a_simulation_says_unready_and_names_the_simulation(
    capsys: pytest.CaptureFixture[str], simulated: Any
) -> None:
    simulated("unready-forever")
    report = json.loads(run_main(capsys, "status", "--json")[1])
    assert report["crng"] == "unready"
    assert report["kernel"]["crng"] == "ready"  # the real kernel is never touched
    assert report["simulation"] == {"spec": "unready-forever", "valid": True, "unready": True}
    out = run_main(capsys, "status")[1]
    assert "  simulated      unready (URANDOM_SHIM_SIMULATE=unready-forever)\n" in out


def test_status_reports_a_malformed_simulation(capsys: pytest.CaptureFixture[str], monkeypatch: Any) -> None:
    monkeypatch.setenv(_simulation.ENV, "unready-for:soon")
    report = json.loads(run_main(capsys, "status", "--json")[1])
    assert report["crng"] == "ready"
    assert report["problems"][0].startswith("environment variable URANDOM_SHIM_SIMULATE='unready-for:soon' is not")


def test_status_says_why_the_shim_is_off_when_the_kill_switch_is_on(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, not_installed: None
) -> None:
    monkeypatch.setenv("URANDOM_SHIM_DISABLE", "1")
    report = json.loads(run_main(capsys, "status", "--json")[1])
    assert report["active"] is False
    assert report["inactive_reason"] == "the kill switch is on: URANDOM_SHIM_DISABLE='1' (unset it, or set it to 0)"


def test_status_output_is_plain_text(capsys: pytest.CaptureFixture[str]) -> None:
    out = run_main(capsys, "status")[1]
    assert "\x1b" not in out and "\r" not in out


# -- check ----------------------------------------------------------------------------------------------------------


def test_check_is_clean_with_no_configuration(capsys: pytest.CaptureFixture[str], isolated: Path) -> None:
    code, out, _err = run_main(capsys, "check")
    assert code == 0
    assert out.startswith(f"Configuration for `python -c` in {isolated}\n")
    assert "  environment variable URANDOM_POLICY " in out and " not set\n" in out
    assert "  the project's pyproject.toml" in out and f"none found in {isolated} or above" in out
    assert out.rstrip().endswith("No problems.")


def test_check_suggests_the_variable_that_a_misspelt_one_meant(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 36: URANDOM_SHIM_TIMOUT=5 changed nothing and nothing said so. ``check`` names it and the variable it
    meant; the ready path's check of the variables (``environment_problems``) looks up known names only."""
    from urandom_shim import _config

    monkeypatch.setenv("URANDOM_SHIM_TIMOUT", "5")
    monkeypatch.setenv("URANDOM_POLICE", "pep522")
    monkeypatch.setenv("URANDOM_SHIM_HOME", "/somewhere")  # set by `urandom-shim run` itself: not a typo
    monkeypatch.setenv("URANDOM_SOMETHING_ELSE", "1")  # close to none of ours: another program's
    code, out, _err = run_main(capsys, "check")
    assert code == 1
    assert (
        "environment variable URANDOM_SHIM_TIMOUT is not one the shim reads, so it changes nothing "
        "(did you mean 'URANDOM_SHIM_TIMEOUT'?); ignoring it." in " ".join(out.split())
    ), out
    assert "(did you mean 'URANDOM_POLICY'?)" in " ".join(out.split()), out
    assert "URANDOM_SHIM_HOME" not in out and "URANDOM_SOMETHING_ELSE" not in out
    assert _config.environment_problems() == []


@pytest.mark.parametrize(
    ("name", "meant"),
    [("URANDOM_SHIM_POLICY", "URANDOM_POLICY"), ("URANDOM_TIMEOUT", "URANDOM_SHIM_TIMEOUT"),
     ("urandom_policy", "URANDOM_POLICY"), ("Urandom_Shim_Mode", "URANDOM_SHIM_MODE")],
)  # fmt: skip
def test_check_suggests_the_variable_for_a_shim_or_a_case_away(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, name: str, meant: str
) -> None:
    """Newcomer pass: the likeliest slips, SHIM_ put in or left out and lower case, were silent."""
    monkeypatch.setenv(name, "pep522")
    code, out, _err = run_main(capsys, "check")
    assert code == 1
    assert f"environment variable {name} is not one the shim reads" in " ".join(out.split()), out
    assert f"(did you mean '{meant}'?)" in " ".join(out.split()), out


def test_check_reports_a_machine_file_that_the_variable_names_and_that_does_not_exist(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Issue 36: as a missing URANDOM_SHIM_CONFIG file is (a start reads no machine file then, silently)."""
    monkeypatch.setenv("URANDOM_SHIM_MACHINE_CONFIG", str(tmp_path / "typo" / "machine.toml"))
    code, out, _err = run_main(capsys, "check")
    assert code == 1
    assert f"URANDOM_SHIM_MACHINE_CONFIG names '{tmp_path / 'typo' / 'machine.toml'}', which does not exist" in (
        " ".join(out.split())
    ), out
    # A dangling symlink is as missing (hostile review): a start reads no machine file through it either.
    link = tmp_path / "link.toml"
    link.symlink_to(tmp_path / "gone.toml")
    monkeypatch.setenv("URANDOM_SHIM_MACHINE_CONFIG", str(link))
    code, out, _err = run_main(capsys, "check")
    assert code == 1
    assert f"URANDOM_SHIM_MACHINE_CONFIG names '{link}', which does not exist" in " ".join(out.split()), out


@pytest.mark.parametrize("where", ["variable", "key"])
def test_check_reports_an_events_file_whose_directory_does_not_exist(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, isolated: Path, where: str
) -> None:
    """Issue 36: check said "not written" and then "No problems.", exit 0; every event would be lost."""
    events = "/nonexistent-urandom-shim-dir/events.jsonl"
    if where == "variable":
        monkeypatch.setenv("URANDOM_SHIM_EVENTS", events)
    else:
        (isolated / "pyproject.toml").write_text(f'[tool.urandom-shim]\nevents = "{events}"\n')
    code, out, _err = run_main(capsys, "check")
    assert code == 1
    assert f"names the events file '{events}', whose directory does not exist" in " ".join(out.split()), out


def test_check_says_why_an_events_directory_that_exists_cant_be_reached(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, isolated: Path, tmp_path: Path
) -> None:
    """Hostile review: a path through a file, or a symlink loop, was called a directory that does not exist."""
    (tmp_path / "afile").write_text("")
    (tmp_path / "loop").symlink_to(tmp_path / "loop")
    for events, why in (
        (tmp_path / "afile" / "sub" / "e.jsonl", "can't be reached (Not a directory)"),
        (tmp_path / "loop" / "e.jsonl", "can't be reached (Too many levels of symbolic links)"),
        (tmp_path / "afile" / "e.jsonl", "can't be reached (Not a directory)"),
    ):
        monkeypatch.setenv("URANDOM_SHIM_EVENTS", str(events))
        code, out, _err = run_main(capsys, "check")
        assert code == 1, out
        assert f"names the events file '{events}', whose directory {why}" in " ".join(out.split()), out


def test_check_lists_every_source_and_what_it_contributed(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, isolated: Path, tmp_path: Path
) -> None:
    monkeypatch.setenv("URANDOM_POLICY", "pep522")
    (isolated / "pyproject.toml").write_text('[tool.urandom-shim]\npolicy = "legacy"\ntimeout = 10\n')
    (tmp_path / "machine.toml").write_text("warn_after = 2\n")
    report = json.loads(run_main(capsys, "check", "--json")[1])
    sources = {entry["source"]: entry["notes"] for entry in report["sources"]}
    assert sources["environment variable URANDOM_POLICY"] == ["policy = 'pep522'"]
    assert sources[f"{isolated / 'pyproject.toml'} [tool.urandom-shim]"] == [
        "policy = 'legacy' (outranked by environment variable URANDOM_POLICY)",
        "timeout = 10",  # as the file spells it
    ]
    assert sources[f"{tmp_path / 'machine.toml'} (machine file)"] == ["warn_after = 2"]
    assert sources[f"{tmp_path / 'xdg' / 'urandom-shim' / 'config.toml'} (user file)"] == ["absent"]
    assert sources["default"] == [
        "mode = 'enforce'",
        "on_timeout = 'raise'",
        "seed_random_instances = 'nonblocking'",
        "events = none",
    ]
    assert next(iter(sources)) == "environment variable URANDOM_POLICY"
    assert list(sources)[-1] == "default"
    assert report["clean"] is True and report["problems"] == []


def test_check_exits_1_with_the_start_up_messages_when_there_are_problems(
    capsys: pytest.CaptureFixture[str], isolated: Path
) -> None:
    (isolated / "pyproject.toml").write_text('[tool.urandom-shim]\npolicy = "PEP-522"\nmax_wait = 3\n')
    code, out, _err = run_main(capsys, "check")
    assert code == 1
    label = f"{isolated / 'pyproject.toml'} [tool.urandom-shim]"
    assert f"  urandom-shim: {label}: unknown key 'max_wait' (valid keys are " in out
    assert (
        f"  urandom-shim: {label}: policy = 'PEP-522' is not a valid policy; expected one of 'native', 'pep524', "
        "'pep522', 'legacy' (did you mean 'pep522'?); ignoring it, so policy is 'native' from default.\n" in out
    )
    assert "Problems (2)" in out and out.rstrip().endswith("Exit status 1: fix the problems above.")


def test_check_broken_toml_is_a_problem(capsys: pytest.CaptureFixture[str], isolated: Path) -> None:
    (isolated / "pyproject.toml").write_text('[tool.urandom-shim]\npolicy = "pep524\n')
    code, out, _err = run_main(capsys, "check", "--json")
    assert code == 1
    (problem,) = json.loads(out)["problems"]
    assert "is not valid TOML" in problem


def test_check_for_a_script_uses_the_pyproject_beside_the_script(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    app = tmp_path / "app"
    (app / "src").mkdir(parents=True)
    (app / "pyproject.toml").write_text('[tool.urandom-shim]\npolicy = "pep524"\n')
    (app / "src" / "main.py").write_text("")
    code, out, _err = run_main(capsys, "check", "--for", str(app / "src" / "main.py"), "--json")
    assert code == 0
    report = json.loads(out)
    assert report["resolved_for"] == f"python {app / 'src' / 'main.py'}"
    assert report["program"] == "main.py"
    assert report["policy"] == "pep524" and report["policy_source"] == f"{app / 'pyproject.toml'} [tool.urandom-shim]"


def test_check_for_a_missing_script_is_a_problem(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, out, _err = run_main(capsys, "check", "--for", str(tmp_path / "typo.py"), "--json")
    assert code == 1
    assert "typo.py', which does not exist" in json.loads(out)["problems"][0]


def test_check_for_a_module_matches_program_rules(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "cloudinit" / "cmd").mkdir(parents=True)
    (tmp_path / "cloudinit" / "__init__.py").touch()
    monkeypatch.chdir(tmp_path)  # cloudinit is a module `python -m` finds here
    (tmp_path / "machine.toml").write_text(
        'policy = "pep524"\n[[program]]\nmatch = "cloudinit.*"\npolicy = "legacy"\n[[program]]\nmatch = "x*"\npolicy = 7\n'
    )
    code, out, _err = run_main(capsys, "check", "--for", "cloudinit.cmd.main")
    assert code == 1  # the second rule is broken, although it does not match
    assert "[[program]] #1 match = 'cloudinit.*' matches 'cloudinit.cmd.main'" in out
    assert "policy = 'pep524' (outranked by " in out
    assert "  policy                 legacy       from " in out
    assert "match = 'x*': policy = 7 is not a valid policy" in out


def test_check_for_something_that_is_neither_a_script_nor_a_module_is_a_usage_error(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, err = run_main(capsys, "check", "--for", "my app")
    assert code == 2 and out == ""
    assert err.startswith("usage: urandom-shim check")
    assert err.splitlines()[-1] == (
        "urandom-shim check: error: --for 'my app' is neither a script (a path that exists, or ends in .py), a "
        "command on PATH, nor a module name such as 'app.main' (write '-m app.main' to say it is one)"
    )


def test_check_under_minus_e_semantics_is_not_assumed(capsys: pytest.CaptureFixture[str]) -> None:
    # check resolves as a normal start would; -E is a property of the program's own command line, not of check.
    report = json.loads(run_main(capsys, "check", "--json")[1])
    assert not any("ignored: Python runs with -E" in " ".join(e["notes"]) for e in report["sources"])


# -- wait -----------------------------------------------------------------------------------------------------------


def test_wait_when_ready_exits_0_and_says_nothing_when_not_a_terminal(capsys: pytest.CaptureFixture[str]) -> None:
    assert run_main(capsys, "wait", "--timeout", "1") == (0, "", "")


def test_wait_returns_0_once_the_simulated_crng_becomes_ready(
    capsys: pytest.CaptureFixture[str], simulated: Any, tmp_path: Path
) -> None:
    flag = tmp_path / "unready"
    flag.write_text("")
    simulated(f"unready-until-file:{flag}")
    start = time.monotonic()
    threading.Timer(0.4, flag.unlink).start()
    code, out, err = run_main(capsys, "wait", "--timeout", "10")
    assert code == 0 and (out, err) == ("", "")
    assert 0.4 <= time.monotonic() - start < 3


def test_wait_times_out_with_exit_1_and_one_line(capsys: pytest.CaptureFixture[str], simulated: Any) -> None:
    simulated("unready-forever")
    start = time.monotonic()
    code, out, err = run_main(capsys, "wait", "--timeout", "0.3")
    assert code == 1 and out == ""
    assert 0.3 <= time.monotonic() - start < 2
    assert err == (
        "urandom-shim: wait: the kernel's random number generator was still not ready after 0.3 s (--timeout); exit "
        "status 1. To end the wait, give the machine an entropy source (a virtio-rng device, a hardware RNG, or a "
        "seed file). (The unready state is simulated by URANDOM_SHIM_SIMULATE=unready-forever.)\n"
    )


def test_wait_quiet_says_nothing_even_on_a_timeout(capsys: pytest.CaptureFixture[str], simulated: Any) -> None:
    simulated("unready-forever")
    assert run_main(capsys, "wait", "--timeout", "0.1", "--quiet") == (1, "", "")


@pytest.mark.parametrize("bad", ["-1", "nan", "inf", "soon", ""])
def test_wait_rejects_a_bad_timeout(capsys: pytest.CaptureFixture[str], bad: str) -> None:
    code, _out, err = run_main(capsys, "wait", "--timeout", bad)
    assert code == 2
    assert err.splitlines()[-1] == (
        f"urandom-shim wait: error: argument --timeout: {bad!r} is not a number of seconds; expected a finite number "
        ">= 0, or 'none'"
    )


def test_wait_takes_none_as_run_does(capsys: pytest.CaptureFixture[str]) -> None:
    """`wait --timeout none` was a usage error while `run --timeout none` was accepted."""
    assert run_main(capsys, "wait", "--timeout", "none", "--quiet") == (0, "", "")  # the kernel here is ready


def test_waits_live_line_says_the_unready_state_is_simulated(
    capsys: pytest.CaptureFixture[str], simulated: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    simulated("unready-forever")
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    code, _out, err = run_main(capsys, "wait", "--timeout", "0.3")
    assert code == 1
    assert "urandom-shim wait: kernel CRNG still not ready; giving up after 0." in err
    assert "s (simulated by URANDOM_SHIM_SIMULATE=unready-forever)" in err and "entropy_avail" not in err, err


# -- run and simulate -----------------------------------------------------------------------------------------------


def test_run_executes_the_command_with_the_settings_and_the_bootstrap(
    capsys: pytest.CaptureFixture[str], executed: list[Any], bootstrap: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PYTHONPATH", "/opt/lib")
    code, out, err = run_main(
        capsys,
        "run",
        "--policy",
        "pep522",
        "--timeout",
        "2.5",
        "--on-timeout",
        "fallback",
        "--warn-after",
        "none",
        "--seed-random-instances",
        "policy",
        "--",
        "sh",
        "-c",
        "exit 3",
        "--policy",
        "x",
    )
    assert (code, out, err) == (0, "", "")
    ((path, argv, env),) = executed
    assert os.path.basename(path) == "sh" and os.access(path, os.X_OK)
    assert argv == ["sh", "-c", "exit 3", "--policy", "x"]  # everything after -- is the command's
    assert env["URANDOM_POLICY"] == "pep522"
    assert env["URANDOM_SHIM_TIMEOUT"] == "2.5"
    assert env["URANDOM_SHIM_ON_TIMEOUT"] == "fallback"
    assert env["URANDOM_SHIM_WARN_AFTER"] == "none"
    assert env["URANDOM_SHIM_SEED_RANDOM_INSTANCES"] == "policy"
    assert env["PYTHONPATH"] == f"{bootstrap}{os.pathsep}/opt/lib"
    assert env["URANDOM_SHIM_HOME"] == str(Path(urandom_shim.__file__).parent.parent)
    assert _simulation.ENV not in env


def test_run_without_options_only_adds_the_bootstrap(
    capsys: pytest.CaptureFixture[str], executed: list[Any], bootstrap: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PYTHONPATH", f"{bootstrap}{os.pathsep}/opt/lib")  # a nested run: not added twice
    assert run_main(capsys, "run", "--", "true")[0] == 0
    ((_path, _argv, env),) = executed
    assert env["PYTHONPATH"] == f"{bootstrap}{os.pathsep}/opt/lib"
    assert {k: v for k, v in env.items() if k != "URANDOM_SHIM_HOME"} == dict(os.environ)


def test_run_warns_when_the_bootstrap_is_missing_and_still_runs(
    capsys: pytest.CaptureFixture[str], executed: list[Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(launch, "bootstrap_directory", lambda: None)
    code, _out, err = run_main(capsys, "run", "--policy", "pep524", "--", "true")
    assert code == 0 and len(executed) == 1
    assert err.startswith("urandom-shim: run: the bootstrap directory is missing from this installation")
    assert "PYTHONPATH" not in executed[0][2] or executed[0][2]["PYTHONPATH"] == os.environ.get("PYTHONPATH")


def test_run_warns_that_the_kill_switch_wins(
    capsys: pytest.CaptureFixture[str], executed: list[Any], bootstrap: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("URANDOM_SHIM_DISABLE", "yes")
    code, _out, err = run_main(capsys, "run", "--policy", "pep522", "--", "true")
    assert code == 0 and len(executed) == 1
    assert err == (
        "urandom-shim: run: URANDOM_SHIM_DISABLE='yes' is set, so true runs without the shim; unset it to apply these "
        "settings.\n"
    )


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["run", "python3", "app.py"],
            "missing '--' before the command (got 'python3 app.py'); write: urandom-shim run [options] -- CMD [ARGS ...]",
        ),
        (["run", "--policy", "pep524"], "no command given; write: urandom-shim run [options] -- CMD [ARGS ...]"),
        (["run"], "no command given; write: urandom-shim run [options] -- CMD [ARGS ...]"),
        (["run", "--"], "no command after '--'"),
        (
            ["run", "--", ""],
            "the command after '--' is an empty name; write: urandom-shim run [options] -- CMD [ARGS ...]",
        ),
        (
            ["run", "--events", "rel.jsonl", "--", "true"],
            "argument --events: 'rel.jsonl' is not a valid events path; expected an absolute path of at most 1024 "
            "characters (such as '/run/urandom-shim/events.jsonl'), or 'none' (every process of the machine appends "
            "to one file, so it must not depend on the current directory)",
        ),
        (
            ["run", "--policy", "PEP524", "--", "true"],
            "argument --policy: 'PEP524' is not a valid policy; expected one of 'native', 'pep524', 'pep522', 'legacy' (did you mean 'pep524'?)",
        ),
        (
            ["run", "--policy", "", "--", "true"],
            "argument --policy: '' is not a valid policy; expected one of 'native', 'pep524', 'pep522', 'legacy'",
        ),
        (
            ["run", "--timeout", "nan", "--", "true"],
            "argument --timeout: 'nan' is not a valid timeout; expected a finite number of seconds >= 0, or 'none'",
        ),
        (
            ["run", "--timeout", "-5", "--", "true"],
            "argument --timeout: '-5' is not a valid timeout; expected a finite number of seconds >= 0, or 'none'",
        ),
        (
            ["run", "--warn-after", "inf", "--", "true"],
            "argument --warn-after: 'inf' is not a valid warn_after; expected a finite number of seconds >= 0, or 'none'",
        ),
        (
            ["run", "--on-timeout", "fall-back", "--", "true"],
            "argument --on-timeout: 'fall-back' is not a valid on_timeout; expected one of 'raise', 'fallback' (did you mean 'fallback'?)",
        ),
        (["run", "--pol", "pep524", "--", "true"], "unrecognized arguments: --pol pep524"),
        (
            ["simulate", "--unready-for", "1", "--unready-forever", "--", "true"],
            "argument --unready-forever: not allowed with argument --unready-for",
        ),
        (
            ["simulate", "--unready-for", "nan", "--", "true"],
            "argument --unready-for: 'nan' is not a number of seconds; expected a finite number >= 0",
        ),
        (
            ["simulate", "--unready-forever", "true"],
            "missing '--' before the command (got 'true'); write: urandom-shim simulate [options] -- CMD [ARGS ...]",
        ),
        (["status", "--", "true"], "'--' and a command are only for run and simulate, not status"),
    ],
)
def test_bad_arguments_are_one_usage_error_with_exit_2(
    capsys: pytest.CaptureFixture[str], executed: list[Any], argv: list[str], message: str
) -> None:
    code, out, err = run_main(capsys, *argv)
    assert code == 2 and out == "" and executed == []
    assert err.startswith(f"usage: urandom-shim {argv[0]}")
    assert err.splitlines()[-1] == f"urandom-shim {argv[0]}: error: {message}"
    assert "Traceback" not in err


def test_run_a_command_that_is_not_on_path_exits_127(
    capsys: pytest.CaptureFixture[str], executed: list[Any], bootstrap: Path
) -> None:
    code, out, err = run_main(capsys, "run", "--", "no-such-command-here", "x")
    assert (code, out, executed) == (127, "", [])
    assert err == "urandom-shim run: no-such-command-here: command not found (searched PATH)\n"


def test_run_a_path_that_does_not_exist_exits_127(
    capsys: pytest.CaptureFixture[str], executed: list[Any], bootstrap: Path, tmp_path: Path
) -> None:
    code, _out, err = run_main(capsys, "run", "--", str(tmp_path / "gone"))
    assert (code, executed) == (127, [])
    assert err == f"urandom-shim run: {tmp_path / 'gone'}: No such file or directory\n"


def test_run_a_file_that_is_not_executable_exits_126(
    capsys: pytest.CaptureFixture[str], executed: list[Any], bootstrap: Path, tmp_path: Path
) -> None:
    script = tmp_path / "script.sh"
    script.write_text("#!/bin/sh\n")
    script.chmod(0o644)
    code, _out, err = run_main(capsys, "simulate", "--unready-forever", "--", str(script))
    assert (code, executed) == (126, [])
    assert err == f"urandom-shim simulate: {script}: Permission denied (not an executable file)\n"


def test_run_a_directory_exits_126(
    capsys: pytest.CaptureFixture[str], executed: list[Any], bootstrap: Path, tmp_path: Path
) -> None:
    code, _out, err = run_main(capsys, "run", "--", str(tmp_path))
    assert (code, executed) == (126, [])
    assert err == f"urandom-shim run: {tmp_path}: Is a directory (not an executable file)\n"


def test_run_finds_a_non_executable_on_path_and_exits_126_like_a_shell(
    capsys: pytest.CaptureFixture[str],
    executed: list[Any],
    bootstrap: Path,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    (tmp_path / "tool").write_text("")
    monkeypatch.setenv("PATH", str(tmp_path))
    code, _out, err = run_main(capsys, "run", "--", "tool")
    assert (code, executed) == (126, [])
    assert err == f"urandom-shim run: {tmp_path / 'tool'}: Permission denied (not an executable file)\n"


@pytest.mark.parametrize(
    ("error", "reason"),
    [
        (OSError(errno.ENOEXEC, "Exec format error"), "Exec format error"),
        (
            OSError(errno.ENOENT, "No such file or directory"),
            "bad interpreter in its #! line: No such file or directory",
        ),
        (PermissionError(errno.EACCES, "Permission denied"), "Permission denied"),
    ],
)
def test_run_when_exec_fails_exits_126_with_the_reason(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, bootstrap: Path, error: OSError, reason: str
) -> None:
    def fail(path: str, argv: list[str], env: dict[str, str]) -> None:
        raise error

    monkeypatch.setattr(launch, "_exec", fail)
    code, _out, err = run_main(capsys, "run", "--", "true")
    assert code == 126
    assert err.startswith("urandom-shim run: ") and err.endswith(f"true: cannot execute: {reason}\n")


def test_simulate_unready_for_pins_one_deadline_for_every_descendant(
    capsys: pytest.CaptureFixture[str], executed: list[Any], bootstrap: Path
) -> None:
    before = time.monotonic()
    assert run_main(capsys, "simulate", "--unready-for", "2.5", "--policy", "pep524", "--", "true")[0] == 0
    after = time.monotonic()
    env = executed[0][2]
    kind, _, deadline = env[_simulation.ENV].partition(":")
    assert kind == "unready-until-monotonic"
    assert before + 2.5 <= float(deadline) <= after + 2.5
    assert env["URANDOM_POLICY"] == "pep524"
    assert env["PYTHONPATH"].split(os.pathsep)[0] == str(bootstrap)


def test_simulate_unready_until_file_uses_an_absolute_path(
    capsys: pytest.CaptureFixture[str], executed: list[Any], isolated: Path
) -> None:
    (isolated / "flag").write_text("")
    assert run_main(capsys, "simulate", "--unready-until-file", "flag", "--", "true")[0] == 0
    assert executed[0][2][_simulation.ENV] == f"unready-until-file:{isolated / 'flag'}"


def test_simulate_unready_forever(capsys: pytest.CaptureFixture[str], executed: list[Any]) -> None:
    assert run_main(capsys, "simulate", "--unready-forever", "--", "true")[0] == 0
    assert executed[0][2][_simulation.ENV] == "unready-forever"


def test_simulate_until_a_file_that_does_not_exist_is_a_usage_error(
    capsys: pytest.CaptureFixture[str], executed: list[Any]
) -> None:
    code, _out, err = run_main(capsys, "simulate", "--unready-until-file", "nope", "--", "true")
    assert (code, executed) == (2, [])
    assert err.splitlines()[-1] == (
        "urandom-shim simulate: error: --unready-until-file 'nope' does not exist, so the simulated CRNG would be ready "
        "from the start; create the file first, and delete it to make the CRNG ready"
    )


def test_every_command_of_the_parser_has_its_function_and_loads_only_its_own_module() -> None:
    import subprocess

    from urandom_shim.cli import parser

    _parser, subs = parser.build_parser()
    assert {name: cli.command(name).__name__ for name in subs} == {name: f"cmd_{name}" for name in subs}
    with pytest.raises(KeyError):
        cli.command("nonesuch")
    # `run` (at early boot) imports neither the other commands nor the report package.
    code = "import sys, urandom_shim.cli.main as m; m.command('run'); print(sorted(sys.modules))"
    env = {**os.environ, "PYTHONPATH": str(Path(urandom_shim.__file__).parent.parent)}  # this checkout
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr
    loaded = done.stdout
    for module in (
        "urandom_shim.cli.status",
        "urandom_shim.cli.wait",
        "urandom_shim.cli.report",
        "urandom_shim.report",
    ):
        assert repr(module) not in loaded, module
    assert "'urandom_shim.cli.run'" in loaded
