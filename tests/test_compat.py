"""Compatibility with code nobody on this project wrote: real applications as users run them, the tools every
environment runs (pip, venv, http.server), and the interpreter's flags and modes.

Every scenario runs in a fresh interpreter of a venv that has the wheel installed, with the CRNG ready or simulated
unready. The applications live in ``tests/apps``.
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
import zipfile
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT, Venv, clean_env, events_in, window, without_events

APPS = Path(__file__).resolve().parent / "apps"
UNREADY = {"URANDOM_SHIM_SIMULATE": "unready-forever"}
POLICIES = ("native", "pep524", "pep522", "legacy")
PEP522_TEXT = "BlockingIOError: system random number generator is not ready; see secrets.token_bytes()"


def test_the_suite_runs_against_the_installed_wheel_not_the_source_tree() -> None:
    """In the matrix (tests/noxfile.py) this very process imports the wheel pip installed, and started the shim from
    its .pth, as every interpreter of a user's environment does."""
    if os.environ.get("URANDOM_SHIM_TEST_INSTALLED") != "1":
        pytest.skip("only in the matrix (tests/noxfile.py), where pytest runs in a venv with the wheel installed")
    import urandom_shim

    package = Path(urandom_shim.__file__).resolve().parent
    assert package != ROOT / "urandom_shim", f"imported from the source tree: {package}"
    assert package.parent.name == "site-packages" and Path(sys.prefix).resolve() in package.parents, package
    assert getattr(sys, "_urandom_shim_boot", None) == "pth"


# -- an init script ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("policy", POLICIES)
def test_an_init_script_finishes_at_once_under_every_policy_while_unready(
    shim: Venv, policy: str, tmp_path: Path
) -> None:
    payload = tmp_path / "payload.bin"
    payload.write_bytes(b"firmware" * 4096)
    began = time.monotonic()
    result = shim.run(str(APPS / "init_script.py"), str(payload), env={"URANDOM_POLICY": policy, **UNREADY})
    took = time.monotonic() - began
    assert result.returncode == 0 and without_events(result.stderr) == "", result.stderr
    # It seeds `random` (at import, and tempfile's name generator), from best-effort bytes: one line each, no wait.
    calls = {event.split(": ", 1)[0] for event in events_in(result.stderr)}
    expected = {"import random @ init_script.py:7", "Random() seeding @ init_script.py:15"}
    assert calls == (set() if policy == "native" else expected), result.stderr
    assert all("without waiting" in e or "more like it" in e for e in events_in(result.stderr)), result.stderr
    digest, inside = result.stdout.split()
    assert digest == hashlib.md5(payload.read_bytes()).hexdigest()
    # A script that waited would wait forever (unready-forever): 3 s inside is room for a loaded machine.
    assert float(inside) < 3.0 and took < 20, f"the script took {inside} s inside, {took:.1f} s in all"


# -- a web service that makes its secrets at start-up -----------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def serve(venv: Venv, env: dict[str, str], script: list[str], port: int, limit: float = 30) -> dict[str, Any]:
    """Start the service, poll it with real HTTP requests until it answers or exits, and report what happened."""
    began = time.monotonic()
    proc = subprocess.Popen(
        [str(venv.python), *script],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=clean_env({**env, "APP_PORT": str(port)}),
    )
    try:
        while time.monotonic() - began < limit:
            if proc.poll() is not None:
                _out, err = proc.communicate()
                return {"exited": proc.returncode, "after": time.monotonic() - began, "stderr": err}
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=2) as response:
                    body = response.read()
                    return {"served": body, "status": response.status, "at": time.monotonic()}
            except (urllib.error.URLError, ConnectionError, socket.timeout):
                time.sleep(0.05)
        raise AssertionError(f"no answer and no exit within {limit} s")
    finally:
        proc.kill()
        proc.communicate()


@pytest.fixture
def flask_venv(venvs: Any, python: Path) -> Venv:
    venv: Venv = venvs(python, "flask")
    return venv


APP = [str(APPS / "web_app.py")]


def test_web_app_under_pep522_fails_fast_with_the_documented_message(flask_venv: Venv) -> None:
    spec, _deadline = window(30)
    outcome = serve(flask_venv, {"URANDOM_POLICY": "pep522", "URANDOM_SHIM_SIMULATE": spec}, APP, free_port())
    assert outcome.get("exited") == 1, outcome
    assert outcome["after"] < 10, "it must fail fast, not wait for the 30 s window"
    last = outcome["stderr"].rstrip().splitlines()[-1]
    assert last.startswith(PEP522_TEXT + ". os.urandom(24) was called before the kernel's random number generator")
    assert "Call secrets.wait_for_system_rng() first" in last


@pytest.mark.parametrize(
    ("policy", "app_env"),
    [
        ("pep524", {}),
        ("pep522", {"APP_WAIT_FIRST": "1"}),  # PEP 522's fix: secrets.wait_for_system_rng() at the top
        ("pep522", {"APP_KEYS": "secrets"}),  # PEP 522: secrets waits rather than raise, so no change is needed
    ],
    ids=["pep524", "pep522-wait-first", "pep522-secrets-only"],
)
def test_web_app_waits_until_ready_then_serves(flask_venv: Venv, policy: str, app_env: dict[str, str]) -> None:
    spec, deadline = window(1.5)
    env = {"URANDOM_POLICY": policy, "URANDOM_SHIM_SIMULATE": spec, **app_env}
    outcome = serve(flask_venv, env, APP, free_port())
    assert outcome.get("status") == 200, outcome
    assert json.loads(outcome["served"])["keys_made_at"] >= deadline, "the keys were made before the kernel was ready"


def test_web_app_under_legacy_serves_at_once(flask_venv: Venv) -> None:
    spec, deadline = window(30)
    outcome = serve(flask_venv, {"URANDOM_POLICY": "legacy", "URANDOM_SHIM_SIMULATE": spec}, APP, free_port())
    assert outcome.get("status") == 200, outcome
    assert outcome["at"] < deadline, "legacy must not wait for the window"


# -- the tools every environment runs ---------------------------------------------------------------------------------

STATES = {"ready": {}, "unready": UNREADY}


@pytest.mark.slow
@pytest.mark.parametrize("state", list(STATES))
@pytest.mark.parametrize("policy", POLICIES)
def test_pip_version_starts_normally(shim: Venv, policy: str, state: str) -> None:
    result = shim.run("-m", "pip", "--version", env={"URANDOM_POLICY": policy, **STATES[state]}, timeout=60)
    assert result.returncode == 0 and result.stdout.startswith("pip "), result.stderr
    stderr = without_events(result.stderr)  # pip seeds `random` in the window: one event line, not a problem
    assert "urandom-shim" not in stderr and "Traceback" not in stderr, result.stderr


@pytest.mark.slow
@pytest.mark.parametrize("policy", ("pep524", "pep522", "legacy"))
def test_python_dash_m_venv_creates_a_working_venv_while_unready(shim: Venv, policy: str, tmp_path: Path) -> None:
    target = tmp_path / "made"
    result = shim.run("-m", "venv", str(target), env={"URANDOM_POLICY": policy, **UNREADY}, timeout=180)
    assert result.returncode == 0, result.stdout + result.stderr
    check = subprocess.run(
        [str(target / "bin" / "python"), "-m", "pip", "--version"], capture_output=True, text=True, env=clean_env()
    )
    assert check.returncode == 0 and check.stdout.startswith("pip "), check.stderr


@pytest.mark.parametrize("state", list(STATES))
@pytest.mark.parametrize("policy", ("pep524", "pep522", "legacy"))
def test_python_dash_m_http_server_serves(shim: Venv, policy: str, state: str, tmp_path: Path) -> None:
    (tmp_path / "index.html").write_text("hello from early boot\n")
    port = free_port()
    script = ["-m", "http.server", "--bind", "127.0.0.1", "--directory", str(tmp_path), str(port)]
    outcome = serve(shim, {"URANDOM_POLICY": policy, **STATES[state]}, script, port)
    assert outcome.get("status") == 200 and outcome["served"] == b"hello from early boot\n", outcome


# -- flags and modes --------------------------------------------------------------------------------------------------

STATUS = "import sys, urandom_shim.cli.main as c; sys.exit(c.main(['status', '--json']))"


def status_json(venv: Venv, flags: tuple[str, ...], env: dict[str, str]) -> dict[str, Any]:
    """``urandom-shim status --json`` as the interpreter started with ``flags`` sees itself. Under -S site-packages
    is not on sys.path, so it is put there by PYTHONPATH, which -S honours."""
    extra = {"PYTHONPATH": str(venv.site_packages)} if "-S" in flags else {}
    result = venv.run("-c", STATUS, env={**env, **extra}, flags=flags)
    assert result.returncode in (0, 1), result.stderr
    report: dict[str, Any] = json.loads(result.stdout)
    return report


def test_dash_S_the_shim_is_off_and_status_says_why(shim: Venv) -> None:
    report = status_json(shim, ("-S",), {"URANDOM_POLICY": "pep522", **UNREADY})
    assert report["active"] is False
    assert "-S" in json.dumps(report), report


@pytest.mark.parametrize("flag", ["-s", "-E", "-I"])
def test_dash_s_E_I_keep_the_shim_active(shim: Venv, flag: str) -> None:
    """-s only drops the user's site-packages, not the venv's; -E and -I keep site too (they only make the shim
    ignore the environment and the project, as the interpreter ignores PYTHON* variables)."""
    result = shim.run("-c", "import sys; print(sys._urandom_shim_boot)", flags=(flag,))
    assert result.stdout == "pth\n", result.stderr
    report = status_json(shim, (flag,), {})
    assert report["active"] is True, report


def test_dash_s_keeps_the_policy_from_the_environment(shim: Venv) -> None:
    code = "import os\ntry:\n    os.urandom(4)\nexcept BlockingIOError:\n    print('raised')"
    result = shim.run("-c", code, env={"URANDOM_POLICY": "pep522", **UNREADY}, flags=("-s",))
    assert result.stdout == "raised\n", result.stderr


@pytest.mark.parametrize("state", list(STATES))
def test_dev_mode_and_warnings_as_errors_see_no_warning_from_the_shim_or_its_cli(shim: Venv, state: str) -> None:
    env = {"URANDOM_POLICY": "legacy", **STATES[state]}
    code = "import random, secrets, tempfile; secrets.token_hex(); random.random(); tempfile.mkstemp(); " + STATUS
    result = shim.run("-c", code, env=env, flags=("-X", "dev", "-W", "error"))
    assert result.returncode in (0, 1) and without_events(result.stderr) == "", result.stderr
    assert json.loads(result.stdout)["active"] is True


@pytest.mark.parametrize("how", ["PYTHONSAFEPATH=1", "-P"])
def test_safe_path_keeps_the_shim_and_the_projects_policy(shim: Venv, tmp_path: Path, how: str) -> None:
    """PYTHONSAFEPATH and -P (3.11+) keep the script's directory off sys.path; the project is still found from the
    script's path, so its pyproject.toml still sets the policy. Older interpreters ignore the variable."""
    modern = shim.run("-c", "import sys; print(sys.version_info >= (3, 11))").stdout.strip() == "True"
    if how == "-P" and not modern:
        pytest.skip("-P is new in Python 3.11")
    (tmp_path / "pyproject.toml").write_text('[tool.urandom-shim]\npolicy = "pep522"\n')
    script = tmp_path / "job.py"
    script.write_text(
        "import os, sys\nprint(sys.path[0] != os.path.dirname(os.path.abspath(__file__)))\n"
        "try:\n    os.urandom(4)\nexcept BlockingIOError:\n    print('raised')\n"
    )
    env = {"PYTHONSAFEPATH": "1"} if how.startswith("PYTHONSAFEPATH") else {}
    flags = ("-P",) if how == "-P" else ()
    result = shim.run(str(script), env={**env, **UNREADY}, flags=flags)
    assert result.stdout.splitlines() == [str(modern), "raised"], result.stderr


@pytest.mark.parametrize(("policy", "expected"), [("pep522", "raised"), ("legacy", "16")])
def test_a_zipapp_gets_its_policy_from_the_pyproject_beside_it(
    shim: Venv, tmp_path: Path, policy: str, expected: str
) -> None:
    app = tmp_path / "tool.pyz"
    with zipfile.ZipFile(app, "w") as archive:
        archive.writestr(
            "__main__.py",
            "import os\ntry:\n    print(len(os.urandom(16)))\nexcept BlockingIOError:\n    print('raised')\n",
        )
    (tmp_path / "pyproject.toml").write_text(f'[tool.urandom-shim]\npolicy = "{policy}"\n')
    result = shim.run(str(app), env=UNREADY)
    assert result.stdout == expected + "\n", result.stderr
    assert without_events(result.stderr) == ""
    done = "raised BlockingIOError" if policy == "pep522" else "used best-effort bytes without waiting"
    source = f"(from {tmp_path / 'pyproject.toml'} [tool.urandom-shim])."
    assert events_in(result.stderr) == [f"os.urandom(16) @ __main__.py:3: {done} under policy '{policy}' {source}"]


def test_a_zipapp_made_by_the_zipapp_module_runs_and_matches_a_program_rule(shim: Venv, tmp_path: Path) -> None:
    source = tmp_path / "src"
    source.mkdir()
    (source / "__main__.py").write_text("import os\nprint(len(os.urandom(8)))\n")
    target = tmp_path / "cron-helper.pyz"
    made = shim.run("-m", "zipapp", str(source), "-o", str(target))
    assert made.returncode == 0, made.stderr
    machine = tmp_path / "machine.toml"
    machine.write_text('[[program]]\nmatch = "cron-helper*"\npolicy = "legacy"\n')
    env = {"URANDOM_SHIM_MACHINE_CONFIG": str(machine), **UNREADY}
    result = shim.run(str(target), env=env)
    assert result.stdout == "8\n", result.stderr
    code = f"import sys, urandom_shim.cli.main as c; sys.exit(c.main(['check', '--for', {str(target)!r}]))"
    check = shim.run("-c", code, env=env)
    assert "[[program]] match = 'cron-helper*'" in check.stdout, check.stdout + check.stderr
