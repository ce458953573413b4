"""One process, one policy (issue 36): every subinterpreter follows what the main interpreter resolved at start-up,
wherever the process has gone since, in real interpreters of venvs built from the wheel.

A subinterpreter runs ``site``, so our ``.pth``, so start-up. Before, it resolved the configuration again from the
directory the process was in when it was made: a daemon that ``chdir("/")``'d lost its project's table, and a lower
source won (the user file's ``legacy`` here, where the project says ``pep522``). Each test makes the main
interpreter start in the project's directory, leave it, and only then make its subinterpreters.

The APIs: ``_xxsubinterpreters`` (3.12), ``_interpreters`` (3.13+, with its ``isolated`` own-GIL and ``legacy``
shared-GIL configurations), ``concurrent.interpreters`` and ``InterpreterPoolExecutor`` (3.14+).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from conftest import Venv, clean_env

#: Imported in the main interpreter and in each subinterpreter: ``report()`` gives its settings and what
#: os.urandom() does; ``from_subinterpreter(api, config)`` makes one with ``api`` and prints its report.
REPORT = """\
import json, os, sys

HERE = os.path.dirname(os.path.abspath(__file__))


def report():
    import urandom_shim
    s = urandom_shim.current_settings()
    out = {n: [str(getattr(s, n).value), getattr(s, n).source] for n in s.NAMES}
    if os.environ.get("PROBE_URANDOM"):
        try:
            os.urandom(4)
            out["urandom"] = "bytes"
        except BlockingIOError:
            out["urandom"] = "refused"
    out["cwd"] = os.getcwd()
    out["shared_in_environ"] = "URANDOM_SHIM_INTERPRETERS" in os.environ
    return json.dumps(out)


def from_subinterpreter(api, config):
    code = f"import sys; sys.path.insert(0, {HERE!r})\\nimport subprobe; print('SUB ' + subprobe.report(), flush=True)"
    if api == "_xxsubinterpreters":
        import _xxsubinterpreters as m
        m.run_string(m.create(isolated=(config == "isolated")), code)
    elif api == "_interpreters":
        import _interpreters as m
        m.exec(m.create(config), code)
    elif api == "concurrent.interpreters":
        from concurrent import interpreters
        interp = interpreters.create()
        interp.exec(code)
        interp.close()
    else:
        from concurrent.futures import InterpreterPoolExecutor
        with InterpreterPoolExecutor(2) as pool:
            print("SUB " + pool.submit(report).result(), flush=True)
"""

#: The main program: report, leave the project's directory, then report from a subinterpreter.
MAIN = """\
import os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import subprobe
print("MAIN " + subprobe.report(), flush=True)
os.chdir("/")
subprobe.from_subinterpreter(sys.argv[1], sys.argv[2])
"""


def _version(python: Path) -> tuple[int, int]:
    out = subprocess.run(
        [str(python), "-c", "import sys; print(*sys.version_info[:2])"], capture_output=True, text=True
    )
    major, minor = out.stdout.split()
    return int(major), int(minor)


def apis(python: Path) -> list[tuple[str, str]]:
    """(API, configuration) pairs this interpreter has: own GIL ("isolated") and shared ("legacy") where both exist."""
    version = _version(python)
    if version < (3, 12):
        return []
    if version < (3, 13):
        return [("_xxsubinterpreters", "isolated"), ("_xxsubinterpreters", "legacy")]
    found = [("_interpreters", "isolated"), ("_interpreters", "legacy")]
    if version >= (3, 14):
        found += [("concurrent.interpreters", "isolated"), ("InterpreterPoolExecutor", "isolated")]
    return found


def project(tmp_path: Path, table: str) -> tuple[Path, dict[str, str]]:
    """A project whose pyproject holds ``table``; a user file that says otherwise; the environment to run with."""
    app = tmp_path / "app"
    app.mkdir()
    (app / "pyproject.toml").write_text(f'[project]\nname = "app"\n\n[tool.urandom-shim]\n{table}')
    (app / "subprobe.py").write_text(REPORT)
    (app / "main.py").write_text(MAIN)
    user = tmp_path / "xdg" / "urandom-shim"
    user.mkdir(parents=True)
    (user / "config.toml").write_text('policy = "legacy"\nmode = "enforce"\n')  # what "/" would resolve to
    env = {
        "XDG_CONFIG_HOME": str(tmp_path / "xdg"),
        "URANDOM_SHIM_MACHINE_CONFIG": str(tmp_path / "machine.toml"),
        "URANDOM_SHIM_SIMULATE": "unready-forever",
        "PROBE_URANDOM": "1",
    }
    return app, env


def run_program(command: list[str], env: dict[str, str], cwd: Path) -> tuple[list[Any], list[Any], str]:
    """Run ``command`` in ``cwd``: the reports its main interpreters and its subinterpreters printed, and stderr."""
    result = subprocess.run(command, capture_output=True, text=True, env=clean_env(env), cwd=cwd, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    mains = [json.loads(line[5:]) for line in lines if line.startswith("MAIN ")]
    subs = [json.loads(line[4:]) for line in lines if line.startswith("SUB ")]
    assert mains and subs, result.stdout + result.stderr
    return mains, subs, result.stdout + result.stderr


def run_main(
    venv: Venv, app: Path, env: dict[str, str], api: str, config: str
) -> tuple[dict[str, Any], list[dict[str, Any]], str]:
    # main.py relative, as typed in the project: the subinterpreter's own sys.argv can't find the project
    mains, subs, output = run_program([str(venv.python), "main.py", api, config], env, app)
    assert len(mains) == 1, output
    return mains[0], subs, output


def subinterpreter_apis(python: Path) -> list[tuple[str, str]]:
    """:func:`apis`, or skip the test where there are none."""
    found = apis(python)
    if not found:
        pytest.skip("subinterpreters with their own site: Python 3.12 and later")
    return found


def settings_of(report: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in report.items() if k not in ("urandom", "cwd", "shared_in_environ")}


EXPECTED_URANDOM = {"pep522": "refused", "pep524": "refused", "legacy": "bytes"}


@pytest.mark.parametrize("policy", ["pep522", "pep524", "legacy", "native"])
def test_every_subinterpreter_follows_the_main_interpreters_settings_after_a_chdir(
    shim: Venv, python: Path, tmp_path: Path, policy: str
) -> None:
    found = subinterpreter_apis(python)
    # pep524 waits out its timeout and raises; the user file below says legacy, which would return bytes.
    extra = "" if policy == "native" else "timeout = 0.2\n"
    table = f'policy = "{policy}"\n{extra}colour = "blue"\n'  # an unknown key: one problem line, from main only
    app, env = project(tmp_path, table)
    if policy == "native":
        env.pop("PROBE_URANDOM")  # native under a simulated window never returns
    if policy == "legacy":  # the user file must say something else
        (tmp_path / "xdg" / "urandom-shim" / "config.toml").write_text('policy = "pep522"\n')
    for api, config in found:
        main, subs, stderr = run_main(shim, app, env, api, config)
        assert main["policy"] == [policy, f"{app}/pyproject.toml [tool.urandom-shim]"], main
        for sub in subs:
            assert sub["cwd"] == "/", sub  # made after the main interpreter left the project
            assert settings_of(sub) == settings_of(main), (api, config, sub, main)
            if policy in EXPECTED_URANDOM:
                assert sub["urandom"] == EXPECTED_URANDOM[policy], (api, config, sub, stderr)
        unknown = [line for line in stderr.splitlines() if "unknown key 'colour'" in line]
        assert len(unknown) == 1, (api, config, stderr)  # the main interpreter's, and no second set


def test_a_subinterpreter_in_report_mode_records_to_the_same_events_file(
    shim: Venv, python: Path, tmp_path: Path
) -> None:
    found = subinterpreter_apis(python)
    events = tmp_path / "events.jsonl"
    app, env = project(tmp_path, f'policy = "pep522"\nmode = "report"\nevents = "{events}"\n')
    api, config = found[-1]
    main, subs, stderr = run_main(shim, app, env, api, config)
    assert main["mode"] == ["report", f"{app}/pyproject.toml [tool.urandom-shim]"], main
    assert settings_of(subs[0]) == settings_of(main), (subs, main)
    assert subs[0]["urandom"] == "bytes"  # report mode: the interpreter's own behaviour, recorded
    records = [json.loads(line) for line in events.read_text().splitlines() if line.strip()]
    assert len(records) >= 2, (records, stderr)  # the main interpreter's call and the subinterpreter's
    assert {r.get("policy") for r in records} == {"pep522"}, records


EXEC = """\
import os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import subprobe
print("MAIN " + subprobe.report(), flush=True)
os.chdir(sys.argv[1])
os.execv(sys.executable, [sys.executable, os.path.join(sys.argv[1], "main.py"), sys.argv[2], sys.argv[3]])
"""


def test_a_program_execd_in_the_same_process_resolves_its_own_settings(
    shim: Venv, python: Path, tmp_path: Path
) -> None:
    # exec keeps the process id and the environment: the new program's main interpreter must not take the old
    # one's settings for its own, and its subinterpreters follow it, not the program it replaced.
    found = subinterpreter_apis(python)
    app, env = project(tmp_path, 'policy = "pep522"\n')
    other = tmp_path / "other"
    other.mkdir()
    (other / "pyproject.toml").write_text('[tool.urandom-shim]\npolicy = "pep524"\ntimeout = 0.2\n')
    (other / "subprobe.py").write_text(REPORT)
    (other / "main.py").write_text(MAIN)
    (app / "first.py").write_text(EXEC)
    api, config = found[0]
    mains, (sub,), _output = run_program([str(shim.python), "first.py", str(other), api, config], env, app)
    assert mains[0]["policy"] == ["pep522", f"{app}/pyproject.toml [tool.urandom-shim]"]
    assert mains[1]["policy"] == ["pep524", f"{other}/pyproject.toml [tool.urandom-shim]"], mains
    assert not mains[1]["shared_in_environ"]  # taken out: not this program's
    assert settings_of(sub) == settings_of(mains[1])


def test_a_forged_value_in_the_environment_is_never_followed(shim: Venv, python: Path, tmp_path: Path) -> None:
    # The shell's exec keeps its process id, so the value names the right process; the main interpreter must still
    # ignore it (it never follows), take it out, and its subinterpreters follow what it resolved itself.
    found = subinterpreter_apis(python)
    app, env = project(tmp_path, 'policy = "pep522"\n')
    # "/x" as its directory, an empty sys.argv, then every setting legacy-and-fallback, from a source "FORGED-SOURCE".
    values = ["plegacy", "senforce", "n", "sfallback", "n", "snonblocking", "n"]
    forged = "2:/x1:0" + "".join(f"{len(v)}:{v}13:FORGED-SOURCE" for v in values)
    api, config = found[0]
    command = ["sh", "-c", f'URANDOM_SHIM_INTERPRETERS="$$:{forged}" exec "$0" "$@"', str(shim.python), "main.py"]
    (main,), (sub,), output = run_program([*command, api, config], env, app)
    assert main["policy"] == ["pep522", f"{app}/pyproject.toml [tool.urandom-shim]"], main
    assert settings_of(sub) == settings_of(main), sub
    assert sub["urandom"] == "refused"
    assert "FORGED-SOURCE" not in output


def test_a_forked_childs_subinterpreters_follow_the_settings_the_parent_resolved(
    shim: Venv, python: Path, tmp_path: Path
) -> None:
    found = subinterpreter_apis(python)
    app, env = project(tmp_path, 'policy = "pep522"\n')
    api, config = found[0]
    (app / "forked.py").write_text(
        "import os, sys\n"
        "sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))\n"
        "import subprobe\n"
        "print('MAIN ' + subprobe.report(), flush=True)\n"
        "if os.fork() == 0:\n"
        "    os.chdir('/')\n"
        f"    subprobe.from_subinterpreter({api!r}, {config!r})\n"
        "    os._exit(0)\n"
        "os.wait()\n"
    )
    (main,), (sub,), _output = run_program([str(shim.python), "forked.py"], env, app)
    assert settings_of(sub) == settings_of(main), (sub, main)
    assert sub["urandom"] == "refused"


def test_a_child_process_resolves_its_own_settings_from_where_it_starts(
    shim: Venv, python: Path, tmp_path: Path
) -> None:
    # The variable is inherited (the C environment), but names the parent's process: the child resolves for itself.
    app, env = project(tmp_path, 'policy = "pep522"\n')
    other = tmp_path / "other"
    other.mkdir()
    (other / "pyproject.toml").write_text('[tool.urandom-shim]\npolicy = "pep524"\ntimeout = 0.2\n')
    (other / "subprobe.py").write_text(REPORT)
    (app / "parent.py").write_text(
        "import os, subprocess, sys\n"
        "import urandom_shim\n"
        "assert urandom_shim.current_settings().policy.value.name == 'pep522'\n"
        "code = 'import subprobe; print(\"CHILD \" + subprobe.report())'\n"
        f"subprocess.run([sys.executable, '-c', code], cwd={str(other)!r}, check=True)\n"
    )
    result = subprocess.run(
        [str(shim.python), "parent.py"],
        capture_output=True, text=True, env=clean_env(env), cwd=app, timeout=120,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    (child,) = [json.loads(line[6:]) for line in result.stdout.splitlines() if line.startswith("CHILD ")]
    assert child["policy"] == ["pep524", f"{other}/pyproject.toml [tool.urandom-shim]"], child
    assert child["urandom"] == "refused"
    assert not child["shared_in_environ"]


WRITES_ITS_OWN = """\
import os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import subprobe
print("MAIN " + subprobe.report(), flush=True)
os.chdir("/")
values = ["plegacy", "senforce", "f0.2", "sfallback", "n", "snonblocking", "n"]
os.environ["URANDOM_SHIM_INTERPRETERS"] = f"{os.getpid()}:2:/x1:0" + "".join(f"{len(v)}:{v}4:mine" for v in values)
subprobe.from_subinterpreter(sys.argv[1], sys.argv[2])
"""


def test_a_value_the_program_writes_itself_never_gets_under_the_floor(shim: Venv, python: Path, tmp_path: Path) -> None:
    # Found by the newcomer pass: a program can write the variable into its own environment while it runs, and
    # its subinterpreters follow it; the machine's floor must hold there, as it holds for activate().
    found = subinterpreter_apis(python)
    app, env = project(tmp_path, 'policy = "pep522"\ntimeout = 0.2\n')
    (app / "main.py").write_text(WRITES_ITS_OWN)
    (tmp_path / "machine.toml").write_text("allow_weak = false\n")
    api, config = found[0]
    main, subs, stderr = run_main(shim, app, env, api, config)
    assert main["policy"][0] == "pep522"
    (sub,) = subs
    assert sub["policy"][0] == "pep524" and "machine file" in sub["policy"][1], sub  # legacy, held by the floor
    assert sub["on_timeout"][0] == "raise", sub
    assert sub["urandom"] == "refused", (sub, stderr)


def test_a_program_execd_into_a_ready_start_drops_the_value(shim: Venv, tmp_path: Path) -> None:
    # Found by the newcomer pass: the value of the program that exec'd this one stayed in os.environ when this one
    # started ready, and passed on to every child.
    app, env = project(tmp_path, 'policy = "pep522"\n')
    code = (
        "import os, sys, urandom_shim\n"
        "assert urandom_shim.current_settings().policy.value.name == 'pep522'\n"
        "os.environ.pop('URANDOM_SHIM_SIMULATE')\n"
        "os.execv(sys.executable, [sys.executable, '-c', "
        '\'import os; print("AFTER", os.environ.get("URANDOM_SHIM_INTERPRETERS"))\'])\n'
    )
    result = shim.run("-c", code, env=env, cwd=app)
    assert result.returncode == 0, result.stderr
    assert "AFTER None" in result.stdout, result.stdout + result.stderr


@pytest.mark.parametrize("value", ["-3:", "2:/x1:0-5:plegacy", "99999999:x", "1:0:1:0", "+1:/1:0"])
def test_a_malformed_value_is_ignored_and_never_loops(shim: Venv, python: Path, tmp_path: Path, value: str) -> None:
    # Hostile review: a negative length sent the reader back to the start of the value, for ever.
    found = subinterpreter_apis(python)
    app, env = project(tmp_path, 'policy = "pep522"\n')
    env.pop("URANDOM_SHIM_SIMULATE")  # the ready path, where only current_settings() reads the value
    (app / "main.py").write_text(
        MAIN.replace('os.chdir("/")', f"os.environ['URANDOM_SHIM_INTERPRETERS'] = f'{{os.getpid()}}:{value}'")
    )
    _main, subs, stderr = run_main(shim, app, {**env, "PROBE_URANDOM": ""}, *found[0])
    assert subs[0]["policy"][0] != "legacy", subs
    assert "Traceback" not in stderr, stderr


@pytest.mark.parametrize("how", ["-P", "PYTHONSAFEPATH=1"])
def test_safe_path_m_takes_its_project_from_where_python_finds_the_module(
    shim: Venv, python: Path, tmp_path: Path, how: str
) -> None:
    # Hostile review: under -P Python never looks in the current directory for -m's module, but the shim did, so a
    # directory the service runs in could lower its policy (and `run`'s hash seed followed it).
    if _version(python) < (3, 11):
        pytest.skip("-P and PYTHONSAFEPATH are Python 3.11's")
    real = tmp_path / "real"
    (real / "lib" / "app").mkdir(parents=True)
    (real / "pyproject.toml").write_text('[tool.urandom-shim]\npolicy = "pep522"\n')
    (real / "lib" / "app" / "__init__.py").write_text("")
    (real / "lib" / "app" / "__main__.py").write_text(
        "import urandom_shim; print(urandom_shim.current_settings().policy.value.name)"
    )
    planted = tmp_path / "cwd"
    (planted / "app").mkdir(parents=True)
    (planted / "app" / "__init__.py").write_text("")
    (planted / "pyproject.toml").write_text('[tool.urandom-shim]\npolicy = "legacy"\n')
    _app, env = project(tmp_path, "")
    env["PYTHONPATH"] = str(real / "lib")
    flags = ("-P",) if how == "-P" else ()
    if how != "-P":
        env["PYTHONSAFEPATH"] = "1"
    result = shim.run(*flags, "-m", "app", env=env, cwd=planted)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["pep522"], result.stdout + result.stderr
