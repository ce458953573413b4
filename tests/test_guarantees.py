"""The guarantees, tried as a hostile user would: a floor that fails closed, configuration that can never switch the
shim off, typos that show the day they are made, and bounded messages.

Every test starts real interpreters of a venv built from the wheel. "Unready" is either a simulation
(``URANDOM_SHIM_SIMULATE``) or the fake kernel (``tests/fakekernel.c``, preloaded), on which the interpreter's own
``getrandom()`` calls see an unready CRNG and ``GRND_INSECURE`` bytes spell ``WEAK-RNG``: a weak byte that escapes
shows in the output. ``/etc/urandom-shim.toml`` itself is written only inside a private mount namespace.
"""

from __future__ import annotations

import json
import os
import sys
from datetime import timedelta, timezone
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest
from conftest import FakeKernel, Venv, find_python, python_specs
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from urandom_shim import _sources

#: Prints what the shim did in this interpreter, as one JSON line, then tries os.urandom(16) unless told not to.
PROBE = """\
import json, os, sys, urandom_shim, urandom_shim._state
s = urandom_shim.current_settings()
report = {
    "active": getattr(sys, "_urandom_shim_boot", None) is not None and urandom_shim._state.state.inactive_reason is None,
    "policy": s.policy.value.name, "source": s.policy.source, "on_timeout": s.on_timeout.value,
    "patched": type(os.urandom) is not type(len),
}
if os.environ.get("PROBE_URANDOM"):
    try:
        report["urandom"] = os.urandom(16).hex()
    except BlockingIOError as exc:
        report["urandom"] = "raised: " + str(exc)[:60]
print(json.dumps(report))
"""
WEAK = b"WEAK-RNG".hex()
VALID_POLICIES = {"native", "pep524", "pep522", "legacy"}


def probe(venv: Venv, env: dict[str, str], cwd: Path | None = None, urandom: bool = False) -> dict[str, Any]:
    extra = {"PROBE_URANDOM": "1"} if urandom else {}
    result = venv.run("-c", PROBE, env={**env, **extra}, cwd=cwd, timeout=60)
    assert result.returncode == 0, result.stderr
    report: dict[str, Any] = json.loads(result.stdout.splitlines()[-1])
    report["lines"] = result.stderr.splitlines()
    return report


def cli(venv: Venv) -> str:
    """The installed console script (``python -m urandom_shim`` would import the source tree from the checkout)."""
    return str(venv.path / "bin" / "urandom-shim")


def run_cli(venv: Venv, *args: str, env: dict[str, str], cwd: Path | None = None) -> Any:
    import subprocess

    from conftest import clean_env

    return subprocess.run([cli(venv), *args], capture_output=True, text=True, env=clean_env(env), cwd=cwd, timeout=60)


def check(venv: Venv, env: dict[str, str], cwd: Path | None = None, *args: str) -> tuple[int, str]:
    result = run_cli(venv, "check", *args, env=env, cwd=cwd)
    return result.returncode, result.stdout + result.stderr


@pytest.fixture
def unready(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[dict[str, str]]:
    """The environment of an unready CRNG: simulated, or the fake kernel (parametrized by ``kernel``)."""
    if request.param == "simulated":
        yield {"URANDOM_SHIM_SIMULATE": "unready-forever"}
        return
    flag = tmp_path / "kernel-unready"
    flag.touch()
    yield request.getfixturevalue("fake_kernel").env(flag)
    flag.unlink(missing_ok=True)


KERNELS = pytest.mark.parametrize("unready", ["simulated", "fake-kernel"], indirect=True)


def isolated(tmp_path: Path, **extra: str) -> dict[str, str]:
    """No user file, and a machine file of this test's own (which may not exist)."""
    return {
        "XDG_CONFIG_HOME": str(tmp_path / "xdg"),
        "URANDOM_SHIM_MACHINE_CONFIG": str(tmp_path / "machine.toml"),
        **extra,
    }


@pytest.fixture
def environment_file(shim: Venv) -> Iterator[Path]:
    """``{sys.prefix}/urandom-shim.toml`` of the shared shim venv, removed again after the test."""
    path = shim.path / "urandom-shim.toml"
    yield path
    if path.is_dir():
        path.rmdir()
    else:
        path.unlink(missing_ok=True)


# -- 1. the floor fails closed --------------------------------------------------------------------------------------


@KERNELS
@pytest.mark.parametrize("moved_to", ["/nonexistent/urandom-shim.toml", "/dev/null", "EMPTY"])
def test_a_variable_that_moves_the_machine_file_cannot_take_away_the_floor_in_etc(
    shim: Venv, machine_file_in_etc: Any, unready: dict[str, str], tmp_path: Path, moved_to: str
) -> None:
    if moved_to == "EMPTY":
        (tmp_path / "empty.toml").write_text("# nothing here\n")
        moved_to = str(tmp_path / "empty.toml")
    env = {
        **unready,
        "URANDOM_POLICY": "legacy",
        "URANDOM_SHIM_ON_TIMEOUT": "fallback",
        "URANDOM_SHIM_TIMEOUT": "0.2",
        "URANDOM_SHIM_MACHINE_CONFIG": moved_to,
        "XDG_CONFIG_HOME": str(tmp_path / "xdg"),
        "PROBE_URANDOM": "1",
    }
    floor = 'policy = "pep524"\nallow_weak = false\n'
    result = machine_file_in_etc(floor, [str(shim.python), "-c", PROBE], env, tmp_path)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert (report["policy"], report["on_timeout"]) == ("pep524", "raise"), result.stderr
    assert report["urandom"].startswith("raised: system random number generator is not ready"), report
    if moved_to == "/dev/null":  # not a regular file: unreadable, so a floor of its own, named first
        assert "/dev/null (machine file): cannot be read (not a regular file); ignoring its settings" in result.stderr
    else:
        assert "below the floor set by /etc/urandom-shim.toml (machine file, for its floor) (allow_weak = false)" in (
            result.stderr
        )
    checked = machine_file_in_etc(floor, [cli(shim), "check"], env, tmp_path)
    assert checked.returncode == 1, checked.stdout
    assert "is below the floor set by" in checked.stdout
    # And without the floor, the same command gets weak bytes: the test can fail.
    env["URANDOM_SHIM_MACHINE_CONFIG"] = str(tmp_path / "absent.toml")
    control = machine_file_in_etc(None, [str(shim.python), "-c", PROBE], env, tmp_path / "control")
    assert json.loads(control.stdout)["policy"] == "legacy", control.stderr


BROKEN_FLOOR_FILES = [
    # (id, content, mode, drop root, the start of the reason in the message)
    ("unquoted-value", "allow_weak = false\npolicy = pep524\n", 0o644, False, "is not valid TOML ("),
    ("duplicate-key", "allow_weak = false\nallow_weak = false\n", 0o644, False, "is not valid TOML ("),
    ("not-utf8", b"allow_weak = false # \xff\n", 0o644, False, "is not UTF-8 (byte 21)"),
    ("directory", "DIRECTORY", 0o755, False, "is a directory, not a TOML file"),
    ("too-big", "allow_weak = false\n" + "#" * (1024 * 1024), 0o644, False, "is larger than 1024 KiB"),
    ("root-only", "allow_weak = false\n", 0o600, True, "permission denied while reading it"),
    ("unreadable", 'policy = "legacy"\nallow_weak = true\n', 0o000, True, "permission denied while reading it"),
]


@pytest.mark.parametrize(
    ("content", "mode", "drop_root", "reason"),
    [c[1:] for c in BROKEN_FLOOR_FILES],
    ids=[c[0] for c in BROKEN_FLOOR_FILES],
)
def test_a_machine_file_in_etc_that_cannot_be_read_or_parsed_is_a_floor(
    shim: Venv, machine_file_in_etc: Any, tmp_path: Path, content: Any, mode: int, drop_root: bool, reason: str
) -> None:
    env = {"URANDOM_SHIM_SIMULATE": "unready-forever", "URANDOM_POLICY": "legacy", "XDG_CONFIG_HOME": str(tmp_path)}
    result = machine_file_in_etc(content, [str(shim.python), "-c", PROBE], env, tmp_path, mode, drop_root)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["policy"] == "pep524", result.stderr
    ours = [line for line in result.stderr.splitlines() if line.startswith("urandom-shim: /etc/urandom-shim.toml")]
    assert len(ours) == 1, result.stderr
    assert reason in ours[0] and ours[0].endswith(
        "ignoring its settings, and reading it as allow_weak = false, the safe choice for a file that may set a floor."
    ), ours[0]
    checked = machine_file_in_etc(content, [cli(shim), "check"], env, tmp_path, mode, drop_root)
    assert checked.returncode == 1 and reason in checked.stdout, checked.stdout


@pytest.mark.parametrize(
    ("content", "mode", "drop_root", "reason"),
    [c[1:] for c in BROKEN_FLOOR_FILES if not c[3]],
    ids=[c[0] for c in BROKEN_FLOOR_FILES if not c[3]],
)
def test_an_environment_file_that_cannot_be_parsed_is_a_floor_too(
    shim: Venv, environment_file: Path, tmp_path: Path, content: Any, mode: int, drop_root: bool, reason: str
) -> None:
    if content == "DIRECTORY":
        environment_file.mkdir()
    else:
        environment_file.write_bytes(content if isinstance(content, bytes) else content.encode())
    env = isolated(tmp_path, URANDOM_SHIM_SIMULATE="unready-forever", URANDOM_POLICY="legacy")
    report = probe(shim, env)
    assert report["policy"] == "pep524", report["lines"]
    assert sum(reason in line and "(environment file)" in line for line in report["lines"]) == 1, report["lines"]
    assert check(shim, env)[0] == 1


@pytest.mark.parametrize(
    "text", ["allow_weak = false\r\n", "allow_weak = false\n"], ids=["needs-the-full-parser", "plain"]
)
def test_a_floor_file_read_by_an_interpreter_without_a_toml_parser_is_a_floor(
    venvs: Callable[..., Venv], python: Path, tmp_path: Path, text: str
) -> None:
    """``urandom-shim run`` from a 3.11+ environment (no tomli there) into a 3.8 to 3.10 interpreter without tomli.
    A file that needs the full parser (CRLF line ends: urandom_shim/_toml.py leaves them to it) can't be read, and
    is a floor; a plain one is read by the shim's own reader, and its floor is the file's."""
    modern = find_python("3.13") or find_python("3.12") or find_python("3.11")
    target = venvs(python, "bare")
    if modern is None or target.run("-c", "import tomli").returncode == 0:
        pytest.skip("needs a Python 3.11+ to run from and a target without tomllib or tomli (3.8 to 3.10, bare)")
    if target.run("-c", "import sys; print(sys.version_info >= (3, 11))").stdout.strip() == "True":
        pytest.skip("this interpreter has tomllib")
    runner = venvs(modern, "shim")
    (tmp_path / "machine.toml").write_bytes(text.encode())
    env = isolated(tmp_path)
    result = run_cli(
        runner, "simulate", "--unready-forever", "--policy", "legacy", "--", str(target.python), "-c",
        "import urandom_shim; print(urandom_shim.current_settings().policy.value.name)", env=env, cwd=tmp_path,
    )  # fmt: skip
    assert result.stdout.strip() == "pep524", result.stderr
    unreadable = "cannot be read because tomli is not installed" in result.stderr
    assert unreadable == ("\r" in text) and "allow_weak = false" in result.stderr, result.stderr


@KERNELS
@pytest.mark.parametrize("route", ["variable", "fallback", "program-rule", "run", "activate", "pytest-plugin"])
def test_every_route_to_weak_bytes_obeys_the_floor(
    shim: Venv, venvs: Callable[..., Venv], python: Path, unready: dict[str, str], tmp_path: Path, route: str
) -> None:
    machine = tmp_path / "machine.toml"
    machine.write_text('allow_weak = false\n[[program]]\nmatch = "probe*"\npolicy = "legacy"\n')
    env = isolated(tmp_path, **unready, URANDOM_SHIM_TIMEOUT="0.2")
    script = tmp_path / "probe.py"
    script.write_text(PROBE)
    activate = "import urandom_shim; urandom_shim.activate('legacy', on_timeout='fallback', timeout=0.2)\n"
    if route == "variable":
        result = shim.run(str(script), env={**env, "URANDOM_POLICY": "legacy", "PROBE_URANDOM": "1"})
    elif route == "fallback":
        env.update(URANDOM_POLICY="pep524", URANDOM_SHIM_ON_TIMEOUT="fallback", PROBE_URANDOM="1")
        result = shim.run(str(script), env=env)
    elif route == "program-rule":  # the rule matches probe.py
        result = shim.run(str(script), env={**env, "PROBE_URANDOM": "1"})
    elif route == "run":
        result = run_cli(
            shim, "run", "--policy", "legacy", "--on-timeout", "fallback", "--", str(shim.python), "-c", PROBE,
            env={**env, "PROBE_URANDOM": "1"}, cwd=tmp_path,
        )  # fmt: skip
        assert "run: --policy legacy and --on-timeout fallback would allow weak bytes, but the floor set by" in (
            result.stderr
        )
    elif route == "activate":
        script.write_text(activate + PROBE)
        result = shim.run(str(script), env={**env, "URANDOM_POLICY": "pep522", "PROBE_URANDOM": "1"})
    else:
        venv = venvs(python, "pytest")
        test = tmp_path / "test_app.py"
        test.write_text(
            "import os\n"
            "def test_floor_holds_under_the_plugin():\n"
            "    import urandom_shim\n"
            "    s = urandom_shim.current_settings()\n"
            "    assert (s.policy.value.name, s.on_timeout.value) == ('pep524', 'raise')\n"
            "    try:\n        data = os.urandom(16)\n    except BlockingIOError:\n        return\n"
            "    assert b'WEAK-RNG' not in data, data\n"
        )
        # pytest's own clean-up of older runs' directories calls uuid4(), which under the configured policy
        # (native) waits for a kernel that here never becomes ready: the run gets a temporary directory of its own.
        (tmp_path / "tmp").mkdir()
        result = venv.run(
            "-m", "pytest", "-p", "no:cacheprovider", "--urandom-policy=legacy", "--urandom-timeout=0.2", str(test),
            env={**env, "TMPDIR": str(tmp_path / "tmp")}, cwd=tmp_path,
        )  # fmt: skip
        assert result.returncode == 0 and "1 passed" in result.stdout, result.stdout + result.stderr
        return
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout.splitlines()[-1])
    assert (report["policy"], report["on_timeout"]) == ("pep524", "raise"), result.stderr
    assert report["urandom"].startswith("raised: system random number generator is not ready"), report
    assert WEAK not in result.stdout


# -- 2. no configuration value can switch the shim off ------------------------------------------------------------

HUGE = "1" + "0" * 400


@pytest.mark.parametrize("where", ["named", "pyproject", "user", "environment", "machine", "program-rule"])
@pytest.mark.parametrize("key", ["timeout", "warn_after"])
def test_a_huge_number_in_any_file_is_one_line_and_the_higher_sources_still_apply(
    shim: Venv, environment_file: Path, tmp_path: Path, where: str, key: str
) -> None:
    body = f"{key} = {HUGE}\n"
    project = tmp_path / "project"
    project.mkdir()
    env = isolated(tmp_path, URANDOM_SHIM_SIMULATE="unready-forever", URANDOM_POLICY="pep522")
    if where == "named":
        (tmp_path / "named.toml").write_text(body)
        env["URANDOM_SHIM_CONFIG"] = str(tmp_path / "named.toml")
    elif where == "pyproject":
        (project / "pyproject.toml").write_text("[tool.urandom-shim]\n" + body)
    elif where == "user":
        (tmp_path / "xdg" / "urandom-shim").mkdir(parents=True)
        (tmp_path / "xdg" / "urandom-shim" / "config.toml").write_text(body)
    elif where == "environment":
        environment_file.write_text(body)
    elif where == "machine":
        (tmp_path / "machine.toml").write_text(body)
    else:  # in a rule that does not even match this program
        (tmp_path / "machine.toml").write_text(f'[[program]]\nmatch = "no-such-program"\n{body}')
    report = probe(shim, env, cwd=project)
    assert report["active"] and report["patched"], report
    assert (report["policy"], report["source"]) == ("pep522", "environment variable URANDOM_POLICY"), report
    assert len(report["lines"]) == 1, report["lines"]
    assert f"{key} = <an integer of 401 digits> is not a valid {key}" in report["lines"][0]
    for command in ("check", "status"):
        result = run_cli(shim, command, env=env, cwd=project)
        assert result.returncode in (0, 1), result.stdout + result.stderr  # never 70, "internal error"
        assert "<an integer of 401 digits>" in result.stdout


def test_activate_with_a_huge_number_raises_the_documented_value_error(shim: Venv) -> None:
    code = (
        "import urandom_shim\n"
        "for key in ('timeout', 'warn_after'):\n"
        "    try:\n        urandom_shim.activate('pep524', **{key: 10**400})\n"
        "    except ValueError as exc:\n        print(type(exc).__name__, str(exc).partition(';')[0])\n"
    )
    result = shim.run("-c", code, env={"URANDOM_SHIM_SIMULATE": "unready-forever"})
    assert result.stdout.splitlines() == [
        "ValueError urandom_shim.activate(): timeout=<an integer of 401 digits> is not valid",
        "ValueError urandom_shim.activate(): warn_after=<an integer of 401 digits> is not valid",
    ], result.stderr


def test_messages_are_bounded_in_length_and_number(shim: Venv, tmp_path: Path) -> None:
    machine = tmp_path / "machine.toml"
    long_key = "k" * 100_000
    rules = "".join(f'[[program]]\nmatch = "p{i}"\npolicy = "bad{i}"\n' for i in range(50))
    unknown = "".join(f"unknown{i} = 1\n" for i in range(5000))
    machine.write_text(f'{long_key} = 1\n{unknown}[[program]]\nmatch = "{"m" * 100_000}"\n{rules}')
    env = isolated(tmp_path, URANDOM_SHIM_SIMULATE="unready-forever")
    report = probe(shim, env)
    lines = report["lines"]
    assert len(lines) == 10, lines
    assert all(line.startswith("urandom-shim: ") and len(line) <= 1000 for line in lines), max(map(len, lines))
    assert f"unknown keys {_sources.shorten(long_key, 40)}, 'unknown0', 'unknown1' and 4998 more" in lines[0], lines[0]
    assert lines[-1].endswith("more configuration problems are not shown; `urandom-shim check --json` lists them all.")
    result = run_cli(shim, "check", "--json", env=env, cwd=tmp_path)
    data = json.loads(result.stdout)
    assert result.returncode == 1 and len(data["problems"]) == 52, len(data["problems"])
    text = run_cli(shim, "check", env=env, cwd=tmp_path).stdout
    assert max(map(len, text.splitlines())) <= 1002 and text.count("urandom-shim: ") == 10


# -- the property: any TOML, in every file, with any variables ----------------------------------------------------

_scalars = st.one_of(
    st.sampled_from(["native", "pep524", "pep522", "legacy", "raise", "fallback", "none", "nonblocking", "policy"]),
    st.text(st.characters(blacklist_categories=("Cs",)), max_size=20),
    st.integers(),
    st.sampled_from([10**400, -(10**400), 2**63, -1, 0]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.booleans(),
    st.datetimes(timezones=st.none() | st.integers(-1439, 1439).map(lambda m: timezone(timedelta(minutes=m)))),
    st.dates(),
    st.times(),
)
_values = st.recursive(
    _scalars,
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.from_regex(r"[A-Za-z0-9_-]{1,8}", fullmatch=True), inner, max_size=3)
    ),
    max_leaves=6,
)
_keys = st.sampled_from(["policy", "timeout", "on_timeout", "warn_after", "seed_random_instances", "allow_weak"]) | (
    st.from_regex(r"[A-Za-z0-9_-]{1,12}", fullmatch=True)
)
_tables = st.dictionaries(_keys, _values, max_size=5)
_rules = st.lists(
    st.dictionaries(st.just("match") | _keys, _values | st.sampled_from(["probe*", "*", "x"]), max_size=4), max_size=3
)
_file = st.one_of(
    st.none(),  # no file
    st.tuples(_tables, _rules),  # a TOML document
    st.binary(max_size=40),  # anything at all
)
_env_text = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=12) | (
    st.sampled_from(["native", "pep524", "pep522", "legacy", "none", "nan", "-1", "1e999", HUGE, "raise", "fallback"])
)
_variables = st.fixed_dictionaries(
    {},
    optional={
        name: _env_text
        for name in (
            "URANDOM_POLICY", "URANDOM_SHIM_TIMEOUT", "URANDOM_SHIM_ON_TIMEOUT", "URANDOM_SHIM_WARN_AFTER",
            "URANDOM_SHIM_SEED_RANDOM_INSTANCES",
        )
    },
)  # fmt: skip


def toml_value(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return (
            "nan"
            if value != value
            else ("inf" if value == float("inf") else "-inf" if value == -float("inf") else repr(value))
        )
    if isinstance(value, str):
        return json.dumps(value)  # JSON's string escapes are all valid TOML basic-string escapes
    if isinstance(value, list):
        return "[" + ", ".join(map(toml_value, value)) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{json.dumps(k)} = {toml_value(v)}" for k, v in value.items()) + "}"
    return value.isoformat()  # type: ignore[attr-defined, no-any-return]  # datetime, date, time


def toml_document(spec: Any, table: str | None) -> bytes | None:
    if spec is None or isinstance(spec, bytes):
        return spec  # type: ignore[no-any-return]
    keys, rules = spec
    body = "".join(f"{json.dumps(k)} = {toml_value(v)}\n" for k, v in keys.items())
    if table is not None:
        return f"[{table}]\n{body}".encode()
    for rule in rules:
        body += "[[program]]\n" + "".join(f"{json.dumps(k)} = {toml_value(v)}\n" for k, v in rule.items())
    return body.encode()


def sets_a_floor(data: bytes | None) -> bool:
    """The test's own reading of the rule: a floor file that exists sets a floor unless it parses and says
    ``allow_weak = true`` or says nothing about it."""
    if data is None:
        return False
    try:
        document = _sources._loads(data.decode("utf-8"))
    except Exception:  # not UTF-8, not TOML: a floor
        return True
    return "allow_weak" in document and document["allow_weak"] is not True


FUZZ_EXAMPLES = int(os.environ.get("URANDOM_SHIM_FUZZ_EXAMPLES", "60"))


@pytest.fixture(scope="module")
def fuzz_shim(venvs: Callable[..., Venv]) -> Venv:
    found = find_python(python_specs()[0])
    if found is None:
        pytest.skip("no interpreter")
    venv: Venv = venvs(found, "shim")
    return venv


@pytest.mark.parametrize("kernel", ["simulated", "fake-kernel"])
@settings(max_examples=FUZZ_EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    files=st.fixed_dictionaries({w: _file for w in ("named", "pyproject", "user", "environment", "machine")}),
    variables=_variables,
)
def test_no_configuration_can_switch_the_shim_off_or_lower_a_floor(
    fuzz_shim: Venv,
    fake_kernel: FakeKernel,
    tmp_path_factory: pytest.TempPathFactory,
    kernel: str,
    files: dict[str, Any],
    variables: dict[str, str],
) -> None:
    root = tmp_path_factory.mktemp("fuzz")
    where = {
        "named": root / "named.toml",
        "pyproject": root / "project" / "pyproject.toml",
        "user": root / "xdg" / "urandom-shim" / "config.toml",
        "environment": fuzz_shim.path / "urandom-shim.toml",
        "machine": root / "machine.toml",
    }
    written = {}
    for name, spec in files.items():
        data = toml_document(spec, "tool.urandom-shim" if name == "pyproject" else None)
        where[name].parent.mkdir(parents=True, exist_ok=True)
        if data is not None:
            where[name].write_bytes(data)
        written[name] = data
    env = {**isolated(root), "URANDOM_SHIM_CONFIG": str(where["named"]), **variables}
    flag = root / "kernel-unready"
    flag.touch()
    env.update(fake_kernel.env(flag) if kernel == "fake-kernel" else {"URANDOM_SHIM_SIMULATE": "unready-forever"})
    script = root / "project" / "probe.py"
    script.write_text(PROBE)
    try:
        result = fuzz_shim.run(str(script), env=env, cwd=root / "project")
    finally:
        where["environment"].unlink(missing_ok=True)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    lines = result.stderr.splitlines()
    assert all(line.startswith("urandom-shim: ") and len(line) <= 1000 for line in lines), result.stderr
    assert len(lines) <= 10, lines
    assert report["active"], result.stderr
    assert report["policy"] in VALID_POLICIES
    assert report["patched"] == (report["policy"] != "native"), report
    floor = sets_a_floor(written["environment"]) or sets_a_floor(written["machine"])
    if floor:
        assert report["policy"] != "legacy" and report["on_timeout"] != "fallback", (report, result.stderr)
    wanted = variables.get("URANDOM_POLICY")
    if wanted in VALID_POLICIES:
        assert report["policy"] == ("pep524" if floor and wanted == "legacy" else wanted), (report, result.stderr)


# -- 3. a typo shows the day it is made ---------------------------------------------------------------------------

READY_PATH_TYPOS = [
    ("URANDOM_POLICY", "PEP524", "environment variable URANDOM_POLICY='PEP524' is not a valid policy; expected one of "
     "'native', 'pep524', 'pep522', 'legacy' (did you mean 'pep524'?); ignoring it."),
    ("URANDOM_SHIM_TIMEOUT", "5s", "URANDOM_SHIM_TIMEOUT='5s' is not a valid timeout"),
    ("URANDOM_SHIM_TIMEOUT", "1e999", "URANDOM_SHIM_TIMEOUT='1e999' is not a valid timeout"),
    ("URANDOM_SHIM_WARN_AFTER", "-1", "URANDOM_SHIM_WARN_AFTER='-1' is not a valid warn_after"),
    ("URANDOM_SHIM_ON_TIMEOUT", "fallbak", "(did you mean 'fallback'?)"),
    ("URANDOM_SHIM_SEED_RANDOM_INSTANCES", "block", "URANDOM_SHIM_SEED_RANDOM_INSTANCES='block' is not a valid"),
    ("URANDOM_SHIM_CONFIG", "/missing.toml", "/missing.toml (from URANDOM_SHIM_CONFIG): the file does not exist; "
     "ignoring it."),
    ("URANDOM_SHIM_CONFIG", "/", "/ (from URANDOM_SHIM_CONFIG): is a directory, not a TOML file; ignoring it."),
]  # fmt: skip


@pytest.mark.parametrize(
    ("variable", "value", "expected"), READY_PATH_TYPOS, ids=[f"{v}={x}" for v, x, _ in READY_PATH_TYPOS]
)
def test_a_bad_variable_is_reported_at_every_start_even_when_the_crng_is_ready(
    shim: Venv, variable: str, value: str, expected: str
) -> None:
    result = shim.run("-c", "print('ok')", env={variable: value})
    assert result.returncode == 0 and result.stdout == "ok\n", result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("urandom-shim: ") and expected in lines[0], lines
    # The same line as `check` lists, which also says what applies instead.
    checked = run_cli(shim, "check", env={variable: value}, cwd=shim.path)
    assert checked.returncode == 1 and lines[0].rstrip(".") in checked.stdout, checked.stdout
    # Python ignores its environment under -E, and so does the shim.
    assert shim.run("-E", "-c", "print('ok')", env={variable: value}).stderr == ""


def test_good_variables_cost_the_ready_path_no_import(shim: Venv) -> None:
    env = {
        "URANDOM_POLICY": "pep522", "URANDOM_SHIM_TIMEOUT": "30", "URANDOM_SHIM_WARN_AFTER": "none",
        "URANDOM_SHIM_ON_TIMEOUT": "fallback", "URANDOM_SHIM_SEED_RANDOM_INSTANCES": "policy",
    }  # fmt: skip
    result = shim.run("-c", "import sys; print(sorted(m for m in sys.modules if 'urandom' in m))", env=env)
    assert result.stdout == "['_urandom_shim_boot']\n" and result.stderr == "", result.stderr


@pytest.fixture
def boot(monkeypatch: pytest.MonkeyPatch) -> Any:
    """The start-up module, imported without starting anything where it has not run already."""
    monkeypatch.setenv("URANDOM_SHIM_DISABLE", "1")
    import _urandom_shim_boot

    return _urandom_shim_boot


def quick_check_reports(boot: Any, monkeypatch: pytest.MonkeyPatch, capsys: Any, variable: str, value: str) -> bool:
    """Whether the start-up module's own check of the variables (the ready path's) reports ``variable=value``."""
    for name in ("URANDOM_POLICY", "URANDOM_SHIM_TIMEOUT", "URANDOM_SHIM_ON_TIMEOUT", "URANDOM_SHIM_WARN_AFTER",
                 "URANDOM_SHIM_SEED_RANDOM_INSTANCES", "URANDOM_SHIM_MODE", "URANDOM_SHIM_EVENTS",
                 "URANDOM_SHIM_CONFIG"):  # fmt: skip
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv(variable, value)
    capsys.readouterr()
    boot._check_variables()
    return bool(capsys.readouterr().err)


def test_the_start_up_modules_quick_check_agrees_with_the_parsers(
    boot: Any, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    """``_urandom_shim_boot`` checks the variables without importing the package; it must accept exactly what the
    parsers accept, or a typo would go unreported (or a good value reported) on the ready path."""
    from urandom_shim import _config, _policies

    samples = {
        "URANDOM_POLICY": [p.name for p in _policies.POLICIES] + ["PEP524", "pep522 ", "", "legacy\n"],
        "URANDOM_SHIM_ON_TIMEOUT": [*_policies.ON_TIMEOUT_CHOICES, "Raise", "fallbak"],
        "URANDOM_SHIM_SEED_RANDOM_INSTANCES": [*_policies.SEED_CHOICES, "block"],
        "URANDOM_SHIM_TIMEOUT": ["0", "2.5", "none", "1e308", "-1", "nan", "inf", "1e999", "x", " 5", "5 ", "", HUGE],
        "URANDOM_SHIM_WARN_AFTER": ["5", "none", "None", "-0.5"],
        "URANDOM_SHIM_MODE": [*_policies.MODE_CHOICES, "Report", "report-only", "enforce "],
        "URANDOM_SHIM_EVENTS": [
            "/run/urandom-shim/events.jsonl",
            "none",
            "events.jsonl",
            "./e",
            "/" + "x" * 1023,
            "/" + "x" * 1024,
            "None",
        ],
        "URANDOM_SHIM_CONFIG": [__file__, "/missing.toml", "/"],
    }
    assert set(samples) == {key.variable for key in _config.KEYS.values()} | {"URANDOM_SHIM_CONFIG"}
    for variable, values in samples.items():
        for value in values:
            expected = bool(_config.environment_problems({variable: value}, flags=object()))
            assert quick_check_reports(boot, monkeypatch, capsys, variable, value) == expected, (variable, value)


def test_the_quick_check_can_fail(boot: Any, monkeypatch: pytest.MonkeyPatch, capsys: Any) -> None:
    assert not quick_check_reports(boot, monkeypatch, capsys, "URANDOM_POLICY", "pep522")
    assert quick_check_reports(boot, monkeypatch, capsys, "URANDOM_POLICY", "pep522 ")


# -- in-process: the floor's rules, one at a time -------------------------------------------------------------------


def resolve_with_files(tmp_path: Path, machine: bytes | None, environ: dict[str, str]) -> Any:
    from urandom_shim import _config

    tmp_path.mkdir(exist_ok=True)
    path = tmp_path / "machine.toml"
    if machine is not None:
        path.write_bytes(machine)
    (tmp_path / "app.py").touch()
    return _config.resolve(
        {"XDG_CONFIG_HOME": str(tmp_path / "xdg"), **environ}, flags=object(), argv=[str(tmp_path / "app.py")],
        environment_file=str(tmp_path / "no-environment.toml"), machine_file=str(path),
    )  # fmt: skip


def test_a_file_the_process_may_not_read_is_a_floor(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real_open = os.open

    def deny(path: Any, *args: Any, **kwargs: Any) -> Any:
        if str(path).endswith("machine.toml"):
            raise PermissionError(13, "Permission denied")
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(os, "open", deny)
    found, problems = resolve_with_files(tmp_path, b'policy = "legacy"\n', {"URANDOM_POLICY": "legacy"})
    assert found.policy.value.name == "pep524"
    assert problems[0].endswith("(machine file): permission denied while reading it; ignoring its settings, and "
                                "reading it as allow_weak = false, the safe choice for a file that may set a floor.")  # fmt: skip


def test_without_a_toml_parser_a_floor_file_is_a_floor(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def no_parser(text: str) -> Any:
        raise ImportError("No module named 'tomli'")

    monkeypatch.setattr(_sources, "_loads", no_parser)
    found, problems = resolve_with_files(tmp_path, b"allow_weak = true\n", {"URANDOM_POLICY": "legacy"})
    assert found.policy.value.name == "pep524"
    assert "cannot be read because tomli is not installed (pip install tomli); ignoring its settings" in problems[0]


def test_allow_weak_true_and_an_absent_file_still_set_no_floor(tmp_path: Path) -> None:
    found, problems = resolve_with_files(tmp_path, b"allow_weak = true\n", {"URANDOM_POLICY": "legacy"})
    assert found.policy.value.name == "legacy" and problems == []
    found, problems = resolve_with_files(tmp_path / "absent", None, {"URANDOM_POLICY": "legacy"})
    assert found.policy.value.name == "legacy" and problems == []


def test_a_huge_value_or_key_never_fails_a_message(tmp_path: Path) -> None:
    machine = f'{"x" * 10_000} = 1\ntimeout = {"9" * 4000}\n[[program]]\nmatch = "a"\nwarn_after = {"9" * 4000}\n'
    found, problems = resolve_with_files(tmp_path, machine.encode(), {})
    assert found.timeout.value is None
    assert all(len(p) < 600 for p in problems), [len(p) for p in problems]
    assert any("timeout = <an integer of 4000 digits>" in p for p in problems), problems


if sys.platform != "linux":  # pragma: no cover
    pytestmark = pytest.mark.skip("the fake kernel, mount namespaces and getrandom are Linux's")
