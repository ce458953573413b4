"""Configuration files: every source, precedence, the floor, [[program]] rules, isolation, and bad input.

Bad input runs in real interpreters of a venv built from the wheel (with the CRNG simulated unready, because
configuration is only read then): each case must start, exit as it would without the shim, and print exactly one
``urandom-shim:`` line. Precedence is checked for every pair of sources in-process, through the same resolver.
"""

from __future__ import annotations

import itertools
import os
from pathlib import Path
from typing import Any, Callable

import pytest
from conftest import Venv
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from urandom_shim import _config, _glob, _sources

UNREADY = {"URANDOM_SHIM_SIMULATE": "unready-forever"}
SHOW = "import urandom_shim; s = urandom_shim.current_settings(); print(s.policy.value.name, '|', s.policy.source)"


@pytest.fixture
def place(tmp_path: Path) -> dict[str, Path]:
    """A project directory with a script, and homes for the user, environment and machine files."""
    project = tmp_path / "project"
    (project / "src").mkdir(parents=True)
    (project / "src" / "app.py").write_text(SHOW + "\n")
    return {
        "project": project,
        "script": project / "src" / "app.py",
        "xdg": tmp_path / "xdg",
        "named": tmp_path / "named.toml",
        "machine": tmp_path / "machine.toml",
    }


def env_for(place: dict[str, Path], **extra: str) -> dict[str, str]:
    return {
        "XDG_CONFIG_HOME": str(place["xdg"]),
        "URANDOM_SHIM_MACHINE_CONFIG": str(place["machine"]),
        **UNREADY,
        **extra,
    }


def run_script(venv: Venv, place: dict[str, Path], env: dict[str, str], flags: tuple[str, ...] = ()) -> Any:
    return venv.run(str(place["script"]), env=env, flags=flags, cwd=place["project"])


def one_line(result: Any) -> str:
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("urandom-shim: "), lines[0]
    return str(lines[0])


# -- bad input: one line, then carry on ----------------------------------------------------------------------------

BAD_CASES: list[tuple[str, str, Any, str]] = [
    # (id, where, content, expected text)
    ("policy-case", "pyproject", '[tool.urandom-shim]\npolicy = "PEP524"\n',
     "[tool.urandom-shim]: policy = 'PEP524' is not a valid policy; expected one of 'native', 'pep524', 'pep522', "
     "'legacy' (did you mean 'pep524'?); ignoring it, so policy is 'native' from default."),
    ("policy-typo", "pyproject", '[tool.urandom-shim]\npolicy = "pep254"\n', "policy = 'pep254' is not a valid policy"),
    ("policy-space", "pyproject", '[tool.urandom-shim]\npolicy = " pep522"\n', "(it has whitespace before or after it; did you mean 'pep522'?)"),
    ("policy-list", "pyproject", '[tool.urandom-shim]\npolicy = ["pep524"]\n',
     "policy = ['pep524'] is not a valid policy"),
    ("timeout-string", "pyproject", '[tool.urandom-shim]\ntimeout = "5"\n',
     "timeout = '5' is not a valid timeout; expected a finite number of seconds >= 0, or 'none'; ignoring it, so "
     "timeout is none from default."),
    ("timeout-negative", "pyproject", "[tool.urandom-shim]\ntimeout = -1\n", "timeout = -1 is not a valid timeout"),
    ("timeout-nan", "pyproject", "[tool.urandom-shim]\ntimeout = nan\n", "timeout = nan is not a valid timeout"),
    ("on-timeout-bool", "pyproject", "[tool.urandom-shim]\non_timeout = true\n",
     "on_timeout = true is not a valid on_timeout; expected one of 'raise', 'fallback'"),
    ("unknown-key", "pyproject", '[tool.urandom-shim]\npolcy = "pep524"\n',
     "[tool.urandom-shim]: unknown key 'polcy' (did you mean 'policy'?) (valid keys are 'policy', 'timeout', 'on_timeout', 'warn_after', "
     "'seed_random_instances', 'mode', 'events'); ignoring it."),
    ("admin-key-in-project", "pyproject", "[tool.urandom-shim]\nallow_weak = true\n",
     "unknown key 'allow_weak' (it is only honoured in the environment's and the machine's files)"),
    ("table-not-table", "pyproject", '[tool]\nurandom-shim = "pep524"\n',
     "[tool.urandom-shim]: is a str ('pep524'), but it must be a table: write [tool.urandom-shim] with keys below it"),
    ("invalid-toml", "pyproject", '[tool.urandom-shim]\npolicy = "pep524\n', "is not valid TOML ("),
    ("not-utf8", "named", b'policy = "pep524" # \xff\xfe\n', "is not UTF-8 (byte 20); TOML files must be UTF-8"),
    ("directory", "named", "DIRECTORY", "(from URANDOM_SHIM_CONFIG): is a directory, not a TOML file; ignoring it."),
    ("missing", "named", "MISSING", "(from URANDOM_SHIM_CONFIG): the file does not exist; ignoring it."),
    ("symlink-loop", "named", "LOOP", "cannot be read (Too many levels of symbolic links); ignoring it."),
    ("fifo-would-block", "named", "FIFO", "cannot be read (not a regular file); ignoring it."),
    ("endless-device", "named", "DEVZERO", "cannot be read (not a regular file); ignoring it."),
    ("fifo-pyproject", "pyproject", "FIFO", "[tool.urandom-shim]: cannot be read (not a regular file); ignoring it."),
    ("huge", "named", "policy = 'pep524'\n" + "#" * (1024 * 1024 + 10) + "\n",
     "is larger than 1024 KiB, too big for a configuration file; ignoring it."),
    ("user-unknown-key", "user", 'policy = "pep524"\ncolour = "blue"\n', "(user file): unknown key 'colour'"),
    ("machine-bad-floor", "machine", 'allow_weak = "no"\n',
     "(machine file): allow_weak = 'no' is not valid; expected true or false; reading it as allow_weak = false, the "
     "safe choice."),
    ("machine-bad-rules", "machine", 'program = "cron"\n',
     "(machine file): program = 'cron' is not valid; expected an array of tables, written [[program]]"),
    ("machine-rule-not-table", "machine", "program = [1]\n", "[[program]] #1: is a int (1), not a table"),
    ("non-matching-rule-typo", "machine", '[[program]]\nmatch = "nothing-like-this"\npolicy = "legcy"\n',
     "[[program]] match = 'nothing-like-this': policy = 'legcy' is not a valid policy; expected one of 'native', "
     "'pep524', 'pep522', 'legacy' (did you mean 'legacy'?); the rule will ignore it when it matches."),
    ("spaces-kept", "pyproject", '[tool.urandom-shim]\npolicy = "pep524  "\n', "policy = 'pep524  ' is not a valid policy"),
    ("huge-value", "pyproject", '[tool.urandom-shim]\npolicy = "' + "x" * 5000 + '"\n', "policy = 'xxxxx"),
    ("machine-rule-without-match", "machine", '[[program]]\npolicy = "pep524"\n',
     "[[program]] #1: match is missing; expected a glob"),
]  # fmt: skip


def write_source(place: dict[str, Path], where: str, content: Any) -> dict[str, str]:
    """Put ``content`` where ``where`` says, and return the extra environment that points at it."""
    if where == "pyproject":
        target = place["project"] / "pyproject.toml"
    elif where == "user":
        target = place["xdg"] / "urandom-shim" / "config.toml"
    elif where == "machine":
        target = place["machine"]
    else:
        target = place["named"]
    target.parent.mkdir(parents=True, exist_ok=True)
    if content == "DIRECTORY":
        target.mkdir()
    elif content == "FIFO":
        os.mkfifo(target)
    elif content == "DEVZERO":
        os.symlink("/dev/zero", target)
    elif content == "LOOP":
        os.symlink(target.parent / "loop-b", target)
        os.symlink(target, target.parent / "loop-b")
    elif content != "MISSING":
        target.write_bytes(content if isinstance(content, bytes) else content.encode())
    return {"URANDOM_SHIM_CONFIG": str(target)} if where == "named" else {}


@pytest.mark.parametrize(("where", "content", "expected"), [c[1:] for c in BAD_CASES], ids=[c[0] for c in BAD_CASES])
def test_bad_configuration_gives_one_line_and_start_up_carries_on(
    shim: Venv, place: dict[str, Path], where: str, content: Any, expected: str
) -> None:
    extra = write_source(place, where, content)
    result = run_script(shim, place, env_for(place, **extra))
    assert result.returncode == 0, result.stderr
    line = one_line(result)
    assert expected in line, line
    assert result.stdout.split(" |")[0] in {"native", "pep524", "pep522", "legacy"}


def test_a_script_that_does_not_exist_gets_one_line_and_the_interpreters_own_exit_status(
    shim: Venv, place: dict[str, Path], bare: Venv
) -> None:
    missing = place["project"] / "nowhere" / "gone.py"
    native = bare.run(str(missing))
    result = shim.run(str(missing), env=env_for(place))
    assert result.returncode == native.returncode == 2
    ours = [line for line in result.stderr.splitlines() if line.startswith("urandom-shim:")]
    assert len(ours) == 1 and "which does not exist; looking for pyproject.toml from" in ours[0], result.stderr


@pytest.mark.parametrize(
    ("argv", "expected"),
    [(None, "sys.argv is missing"), ([], "sys.argv is empty"), ("x", "sys.argv is not a list (str)"),
     ([None], "sys.argv[0] is None, not a string")],
)  # fmt: skip
def test_odd_sys_argv_shapes_fall_back_to_the_current_directory_with_one_message(
    argv: Any, expected: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    who = _sources.invocation(argv) if argv is not None else _sources.Invocation("", None)
    if argv is None:  # sys.argv itself missing, as in an embedded interpreter
        import sys

        # Not what start-up recorded, if the shim started in this process (it does in the matrix).
        monkeypatch.delattr(sys, "_urandom_shim_invocation", raising=False)
        # Nor pytest's rootdir as the project, if the plugin set it: in a Debian package build pytest runs in the
        # build directory while its rootdir is the source tree, so the two differ.
        monkeypatch.setattr(_sources.state, "project_root", None)
        saved = sys.argv
        del sys.argv
        try:
            who = _sources.invocation()
        finally:
            sys.argv = saved
    assert who.anchor == os.getcwd() and who.problem is not None and who.problem.startswith(expected)


def test_unreadable_files_and_unlistable_directories_are_one_message_each(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The tests run as root, which reads anything, so the permission errors are injected.
    real_open = os.open

    def deny(path: Any, *args: Any, **kwargs: Any) -> Any:
        if str(path).endswith(".toml"):
            raise PermissionError(13, "Permission denied")
        return real_open(path, *args, **kwargs)

    (tmp_path / "x.toml").write_text('policy = "pep524"\n')
    monkeypatch.setattr(os, "open", deny)
    layer = _sources.read_file(str(tmp_path / "x.toml"), "x.toml (user file)", required=False)
    assert layer is not None and layer.problems == [
        "x.toml (user file): permission denied while reading it; ignoring it."
    ]
    monkeypatch.setattr(os, "open", real_open)

    def no_listing(path: Any, *args: Any, **kwargs: Any) -> Any:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(os, "stat", no_listing)
    found, problem = _sources.find_pyproject(str(tmp_path))
    assert found is None and problem is not None
    assert problem == f"cannot look for pyproject.toml in {tmp_path} (permission denied); ignoring project settings."


# -- precedence: every pair of sources -----------------------------------------------------------------------------

SOURCES = ["variable", "named", "pyproject", "user", "environment", "machine"]


def configure(tmp_path: Path, where: str, policy: str) -> tuple[dict[str, str], dict[str, str]]:
    """(environ additions, resolve() keyword arguments) that make ``where`` say ``policy``."""
    body = f'policy = "{policy}"\n'
    if where == "variable":
        return {"URANDOM_POLICY": policy}, {}
    if where == "named":
        (tmp_path / "named.toml").write_text(body)
        return {"URANDOM_SHIM_CONFIG": str(tmp_path / "named.toml")}, {}
    if where == "pyproject":
        (tmp_path / "project" / "pyproject.toml").write_text("[tool.urandom-shim]\n" + body)
        return {}, {}
    if where == "user":
        (tmp_path / "xdg" / "urandom-shim").mkdir(parents=True, exist_ok=True)
        (tmp_path / "xdg" / "urandom-shim" / "config.toml").write_text(body)
        return {}, {}
    (tmp_path / f"{where}.toml").write_text(body)
    return {}, {f"{where}_file": str(tmp_path / f"{where}.toml")}


def resolve_in(tmp_path: Path, environ: dict[str, str], **kwargs: Any) -> Any:
    (tmp_path / "project").mkdir(exist_ok=True)
    script = tmp_path / "project" / "app.py"
    script.touch()
    kwargs.setdefault("environment_file", str(tmp_path / "no-environment.toml"))
    kwargs.setdefault("machine_file", str(tmp_path / "no-machine.toml"))
    environ = {"XDG_CONFIG_HOME": str(tmp_path / "xdg"), **environ}
    return _config.resolve(environ, flags=object(), argv=[str(script)], **kwargs)


@pytest.mark.parametrize(("higher", "lower"), list(itertools.combinations(SOURCES, 2)))
def test_every_pair_of_sources_the_higher_one_wins_and_is_named(tmp_path: Path, higher: str, lower: str) -> None:
    (tmp_path / "project").mkdir()
    env_a, kw_a = configure(tmp_path, higher, "pep522")
    env_b, kw_b = configure(tmp_path, lower, "legacy")
    settings_, problems = resolve_in(tmp_path, {**env_b, **env_a}, **{**kw_b, **kw_a})
    assert problems == []
    assert settings_.policy.value.name == "pep522"
    source = settings_.policy.source
    expected = {
        "variable": "environment variable URANDOM_POLICY",
        "named": "named.toml (from URANDOM_SHIM_CONFIG)",
        "pyproject": "pyproject.toml [tool.urandom-shim]",
        "user": "config.toml (user file)",
        "environment": "environment.toml (environment file)",
        "machine": "machine.toml (machine file)",
    }[higher]
    assert source.endswith(expected), source
    # And alone, the lower one is effective.
    for path in tmp_path.rglob("*.toml"):
        path.unlink()
    env_b, kw_b = configure(tmp_path, lower, "legacy")
    alone, _ = resolve_in(tmp_path, env_b, **kw_b)
    assert alone.policy.value.name == "legacy"


def test_settings_come_key_by_key_from_different_sources(tmp_path: Path) -> None:
    (tmp_path / "project").mkdir()
    (tmp_path / "project" / "pyproject.toml").write_text('[tool.urandom-shim]\npolicy = "pep524"\ntimeout = 3\n')
    (tmp_path / "machine.toml").write_text('timeout = 9\non_timeout = "fallback"\nwarn_after = 1\n')
    found, problems = resolve_in(
        tmp_path, {"URANDOM_SHIM_WARN_AFTER": "2"}, machine_file=str(tmp_path / "machine.toml")
    )
    table = found.as_dict()
    assert problems == []
    assert table["policy"][0] == "pep524" and table["timeout"][0] == 3.0
    assert table["timeout"][1].endswith("pyproject.toml [tool.urandom-shim]")
    assert table["on_timeout"] == ("fallback", f"{tmp_path}/machine.toml (machine file)")
    assert table["warn_after"] == (2.0, "environment variable URANDOM_SHIM_WARN_AFTER")


def test_a_bad_source_is_ignored_and_resolution_carries_on_below_it(tmp_path: Path) -> None:
    (tmp_path / "project").mkdir()
    (tmp_path / "project" / "pyproject.toml").write_text('[tool.urandom-shim]\npolicy = "pep5')
    configure(tmp_path, "user", "legacy")
    found, problems = resolve_in(tmp_path, {})
    assert found.policy.value.name == "legacy" and found.policy.source.endswith("(user file)")
    assert len(problems) == 1 and "is not valid TOML" in problems[0]


def test_a_pyproject_without_our_table_is_not_parsed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "other"\n[tool.black]\nline-length = 80\n')
    monkeypatch.setattr(_sources, "parse_toml", lambda *a: pytest.fail("parsed a pyproject that is not ours"))
    assert _sources.read_pyproject(str(tmp_path / "pyproject.toml")) is None


def test_the_nearest_pyproject_counts_only_if_it_has_the_table(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.urandom-shim]\npolicy = "pep522"\n')
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "pyproject.toml").write_text('[project]\nname = "x"\n')
    (tmp_path / "sub" / "app.py").touch()
    found, _ = _config.resolve({}, flags=object(), argv=[str(tmp_path / "sub" / "app.py")],
                               environment_file="/nonexistent", machine_file="/nonexistent")  # fmt: skip
    assert found.policy.value.name == "native"  # the first pyproject is the nearest one, and it is not ours


# -- the floor ------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("where", ["variable", "named", "pyproject", "user"])
def test_the_floor_turns_legacy_into_pep524_and_fallback_into_raise_with_a_message(tmp_path: Path, where: str) -> None:
    (tmp_path / "project").mkdir()
    environ, kwargs = configure(tmp_path, where, "legacy")
    environ["URANDOM_SHIM_ON_TIMEOUT"] = "fallback"
    (tmp_path / "machine.toml").write_text("allow_weak = false\n")
    found, problems = resolve_in(tmp_path, environ, machine_file=str(tmp_path / "machine.toml"), **kwargs)
    assert found.policy.value.name == "pep524"
    assert found.on_timeout.value == "raise"
    assert len(problems) == 2, problems
    assert problems[0].startswith("policy 'legacy' from ") and "is below the floor set by" in problems[0]
    assert problems[0].endswith("machine.toml (machine file) (allow_weak = false), which forbids weak bytes; using "
                                "'pep524' instead.")  # fmt: skip
    assert "instead of 'legacy'" in found.policy.source


def test_allow_weak_true_or_absent_sets_no_floor(tmp_path: Path) -> None:
    (tmp_path / "project").mkdir()
    (tmp_path / "environment.toml").write_text("allow_weak = true\n")
    found, problems = resolve_in(
        tmp_path, {"URANDOM_POLICY": "legacy"}, environment_file=str(tmp_path / "environment.toml")
    )
    assert found.policy.value.name == "legacy" and problems == []


# -- [[program]] rules, end to end --------------------------------------------------------------------------------


def test_program_rules_match_a_script_by_file_name_and_a_module_by_name(shim: Venv, tmp_path: Path) -> None:
    machine = tmp_path / "machine.toml"
    machine.write_text(
        'policy = "pep524"\n'
        '[[program]]\nmatch = "cron-helper*"\npolicy = "legacy"\n'
        '[[program]]\nmatch = "pkg.tool"\npolicy = "pep522"\n'
    )
    scripts = tmp_path / "some" / "dir"
    scripts.mkdir(parents=True)
    (scripts / "cron-helper.py").write_text(SHOW + "\n")
    (scripts / "other.py").write_text(SHOW + "\n")
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").touch()
    (tmp_path / "pkg" / "tool.py").write_text(SHOW + "\n")
    env = {"URANDOM_SHIM_MACHINE_CONFIG": str(machine), "XDG_CONFIG_HOME": str(tmp_path / "xdg"), **UNREADY}
    helper = shim.run(str(scripts / "cron-helper.py"), env=env, cwd=tmp_path)
    other = shim.run(str(scripts / "other.py"), env=env, cwd=tmp_path)
    module = shim.run("-m", "pkg.tool", env=env, cwd=tmp_path)
    assert helper.stdout.strip() == f"legacy | {machine} (machine file) [[program]] match = 'cron-helper*'", (
        helper.stderr
    )
    assert other.stdout.strip() == f"pep524 | {machine} (machine file)", other.stderr
    assert module.stdout.strip() == f"pep522 | {machine} (machine file) [[program]] match = 'pkg.tool'", module.stderr


# -- isolation ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("flag", ["-E", "-I"])
def test_dash_E_and_dash_I_ignore_the_variables_and_the_project_file(
    shim: Venv, place: dict[str, Path], flag: str
) -> None:
    (place["project"] / "pyproject.toml").write_text('[tool.urandom-shim]\npolicy = "pep522"\n')
    place["machine"].write_text('policy = "legacy"\n')
    env = env_for(place, URANDOM_POLICY="pep524")
    plain = run_script(shim, place, env)
    assert plain.stdout.strip() == "pep524 | environment variable URANDOM_POLICY", plain.stderr
    if Path("/etc/urandom-shim.toml").exists():
        pytest.skip("this machine has its own /etc/urandom-shim.toml")
    isolated = run_script(shim, place, env, flags=(flag,))
    # URANDOM_SHIM_MACHINE_CONFIG is a variable too, so under -E/-I the machine file is /etc's, absent here.
    assert isolated.stdout.strip() == "native | default", isolated.stderr


def test_project_settings_apply_in_a_real_interpreter(shim: Venv, place: dict[str, Path]) -> None:
    (place["project"] / "pyproject.toml").write_text('[tool.urandom-shim]\npolicy = "pep522"\n')
    result = shim.run("-c", "import os; os.urandom(1)", env=env_for(place), cwd=place["project"] / "src")
    assert "BlockingIOError: system random number generator is not ready" in result.stderr
    assert "pyproject.toml [tool.urandom-shim])" in result.stderr


# -- start-up never breaks ------------------------------------------------------------------------------------------

toml_value = st.one_of(
    st.sampled_from(['"native"', '"pep524"', '"pep522"', '"legacy"', '"raise"', '"fallback"', '"none"', '"policy"']),
    st.integers(-5, 10).map(str),
    st.sampled_from(["nan", "inf", "-0.5", "1e300", "true", "[]", '["pep524"]', "{}", '"\\u00e9"', '""']),
)
toml_table = st.dictionaries(
    st.sampled_from(["policy", "timeout", "on_timeout", "warn_after", "seed_random_instances", "allow_weak", "x"]),
    toml_value,
    max_size=5,
)


@pytest.fixture(scope="module")
def module_shim(venvs: Callable[..., Venv]) -> Venv:
    from conftest import find_python, python_specs

    found = find_python(python_specs()[0])
    if found is None:
        pytest.skip("no interpreter")
    return venvs(found, "shim")


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(table=toml_table, policy=st.sampled_from(["", "pep524", "PEP522", "legacy ", "x"]))
def test_start_up_never_breaks_whatever_the_project_table_holds(
    module_shim: Venv, tmp_path_factory: pytest.TempPathFactory, table: dict[str, str], policy: str
) -> None:
    project = tmp_path_factory.mktemp("hyp")
    body = "".join(f"{key} = {value}\n" for key, value in table.items())
    (project / "pyproject.toml").write_text("[tool.urandom-shim]\n" + body)
    env = {**UNREADY, "XDG_CONFIG_HOME": str(project / "xdg"), "URANDOM_SHIM_MACHINE_CONFIG": str(project / "m.toml")}
    if policy:
        env["URANDOM_POLICY"] = policy
    result = module_shim.run("-c", SHOW, env=env, cwd=project)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split(" |")[0] in {"native", "pep524", "pep522", "legacy"}
    assert all(line.startswith("urandom-shim: ") for line in result.stderr.splitlines()), result.stderr


def test_configuration_read_later_still_sees_how_the_interpreter_started(shim: Venv, tmp_path: Path) -> None:
    # On the ready path nothing is resolved at start-up; current_settings() resolves later, after runpy has
    # rewritten sys.argv[0] for -m and after the program changed directory.
    machine = tmp_path / "machine.toml"
    machine.write_text('[[program]]\nmatch = "pkg.tool"\npolicy = "pep522"\n')
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").touch()
    (tmp_path / "pkg" / "tool.py").write_text("import os\nos.chdir('/')\n" + SHOW + "\n")
    (tmp_path / "pyproject.toml").write_text('[tool.urandom-shim]\npolicy = "pep524"\ntimeout = 7\n')
    env = {"URANDOM_SHIM_MACHINE_CONFIG": str(machine), "XDG_CONFIG_HOME": str(tmp_path / "xdg")}
    result = shim.run("-m", "pkg.tool", env=env, cwd=tmp_path)
    # The project file (found from the start-up directory) outranks the machine's program rule.
    assert result.stdout.strip() == f"pep524 | {tmp_path}/pyproject.toml [tool.urandom-shim]", result.stderr
    (tmp_path / "pyproject.toml").unlink()
    result = shim.run("-m", "pkg.tool", env=env, cwd=tmp_path)
    assert result.stdout.strip() == f"pep522 | {machine} (machine file) [[program]] match = 'pkg.tool'", result.stderr


# -- regressions found in review ------------------------------------------------------------------------------------


def test_a_deleted_current_directory_never_breaks_start_up(shim: Venv, tmp_path: Path) -> None:
    gone = tmp_path / "gone"
    gone.mkdir()
    code = "import os, subprocess, sys\nos.rmdir(os.getcwd())\nfor extra in ({}, {'URANDOM_SHIM_SIMULATE': 'unready-forever'}, {'URANDOM_SHIM_SIMULATE': 'unready-until-file:relative'}):\n    r = subprocess.run([sys.executable, '-c', 'print(1)'], capture_output=True, text=True, env=dict(os.environ, **extra))\n    print(r.returncode, repr(r.stdout), repr(r.stderr))"
    result = shim.run("-c", code, cwd=gone)
    ready, unready, relative = result.stdout.splitlines()
    assert ready == "0 '1\\n' ''", result.stderr
    assert unready.startswith("0 '1\\n' 'urandom-shim: the current directory no longer exists; ignoring project")
    assert unready.count("urandom-shim:") == 1
    # A simulation relative to the deleted directory has a message of its own, not "activation failed".
    assert relative == (
        "0 '1\\n' \"urandom-shim: environment variable URANDOM_SHIM_SIMULATE='unready-until-file:relative' names a "
        "relative path, and the current directory no longer exists, so the file can't be found; ignoring it, so this "
        'process sees the real kernel. Give the file as an absolute path.\\n"'
    ), relative


def test_a_pyproject_that_is_a_symlink_loop_is_reported_and_does_not_fall_through_to_the_parent(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.urandom-shim]\npolicy = "pep522"\n')
    child = tmp_path / "child"
    child.mkdir()
    os.symlink(child / "pyproject.toml", child / "pyproject.toml")
    (child / "app.py").touch()
    found, problems = _config.resolve({}, flags=object(), argv=[str(child / "app.py")],
                                      environment_file="/nonexistent", machine_file="/nonexistent")  # fmt: skip
    assert found.policy.value.name == "native"
    assert problems == [f"{child}/pyproject.toml: cannot be read (Too many levels of symbolic links); ignoring project "
                        "settings."]  # fmt: skip


def test_the_message_about_a_bad_value_names_what_the_floor_made_of_the_result(tmp_path: Path) -> None:
    (tmp_path / "project").mkdir()
    (tmp_path / "project" / "pyproject.toml").write_text('[tool.urandom-shim]\npolicy = "legacy"\n')
    (tmp_path / "machine.toml").write_text("allow_weak = false\n")
    found, problems = resolve_in(tmp_path, {"URANDOM_POLICY": "bogus"}, machine_file=str(tmp_path / "machine.toml"))
    assert found.policy.value.name == "pep524"
    assert "ignoring it, so policy is 'pep524' from " in problems[0], problems


def test_a_symlinked_script_finds_the_pyproject_of_its_target_and_rules_match_the_links_name(tmp_path: Path) -> None:
    (tmp_path / "proj").mkdir()
    (tmp_path / "proj" / "pyproject.toml").write_text('[tool.urandom-shim]\npolicy = "pep522"\n')
    (tmp_path / "proj" / "tool.py").touch()
    (tmp_path / "bin").mkdir()
    os.symlink(tmp_path / "proj" / "tool.py", tmp_path / "bin" / "cron-tool")
    who = _sources.invocation([str(tmp_path / "bin" / "cron-tool")])
    assert who.anchor == str(tmp_path / "proj") and who.program == "cron-tool"


@pytest.mark.parametrize(
    ("orig_argv", "module"),
    [(["py", "--check-hash-based-pycs", "default", "-m", "pm"], "pm"), (["py", "-X", "dev", "-m", "a.b"], "a.b"),
     (["py", "-Im", "mod"], "mod"), (["py", "-c", "x", "-m", "no"], None), (["py", "app.py", "-m", "no"], None)],
)  # fmt: skip
def test_the_dash_m_module_is_found_among_any_interpreter_options(
    monkeypatch: pytest.MonkeyPatch, orig_argv: list[str], module: str | None
) -> None:
    import sys

    monkeypatch.setattr(sys, "orig_argv", orig_argv, raising=False)
    assert _sources.invocation(["-m"]).program == module


def test_a_pyproject_without_our_name_is_not_parsed_and_every_spelling_of_the_table_is() -> None:
    assert not _sources.mentions_our_table(b'[project]\nname = "app"\n[tool.black]\nline-length = 80\n')
    for spelling in TABLE_SPELLINGS:
        assert _sources.mentions_our_table(spelling.encode()), spelling


#: Every way TOML can spell the table: each must be read, on the unready path, as [tool.urandom-shim].
TABLE_SPELLINGS = [
    '[tool.urandom-shim]\npolicy = "pep522"\n',
    '[tool . urandom-shim]\npolicy = "pep522"\n',
    '[ tool."urandom-shim" ]\npolicy = "pep522"\n',
    "[tool.'urandom-shim']\npolicy = 'pep522'\n",
    '[tool]\n  urandom-shim.policy = "pep522"\n',
    '[tool]\nurandom-shim = { policy = "pep522" }\n',
    'tool = { urandom-shim = { policy = "pep522" } }\n',
    'tool.urandom-shim.policy = "pep522"\n',
    '[tool."urandom\\u002dshim"]\npolicy = "pep522"\n',  # a key spelt with an escape
    '[project]\nname = "app"\ndependencies = ["urandom-shim"]\n[tool.urandom-shim]\npolicy = "pep522"\n',
]


@pytest.mark.parametrize("spelling", TABLE_SPELLINGS)
def test_every_toml_spelling_of_the_table_is_read(tmp_path: Path, spelling: str) -> None:
    (tmp_path / "pyproject.toml").write_text(spelling)
    (tmp_path / "app.py").touch()
    found, problems = _config.resolve({}, flags=object(), argv=[str(tmp_path / "app.py")],
                                      environment_file="/nonexistent", machine_file="/nonexistent")  # fmt: skip
    assert (found.policy.value.name, problems) == ("pep522", []), spelling
    assert found.policy.source == f"{tmp_path}/pyproject.toml [tool.urandom-shim]"


def test_a_pyproject_that_only_depends_on_us_is_parsed_and_found_not_ours(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "app"\ndependencies = ["urandom-shim>=1"]\n')
    assert _sources.read_pyproject(str(tmp_path / "pyproject.toml")) is None


@pytest.mark.parametrize(
    ("pattern", "name"),
    [("cron-helper*", "cron-helper.py"), ("*.py", "a.py"), ("pkg.tool", "pkg.tool"), ("p?g", "pkg"), ("[a-c]x", "bx"),
     ("[!a-c]x", "dx"), ("[]]", "]"), ("[!]]x", "ax"), ("[", "["), ("a[", "a["), ("*a*b*", "xaxbx"), ("*", ""),
     ("**", "abc"), ("a*", "a"), ("*a", "ba"), ("a*b*c", "abbc"), ("[a-]", "-"), ("[z-a]", "q"), ("\\", "\\")],
)  # fmt: skip
def test_program_globs_match_as_fnmatch_does(pattern: str, name: str) -> None:
    import fnmatch
    import re

    try:
        expected = fnmatch.fnmatchcase(name, pattern)
    except re.error:  # "[z-a]" before Python 3.10; from 3.10 on, an empty range matches nothing
        expected = False
    for matches in (_glob.matches, _config.glob_matches):
        assert matches(pattern, name) == expected
        assert not matches(pattern, name + "\x00") or pattern.endswith("*")


@settings(max_examples=300, deadline=None)
@given(pattern=st.text("ab*?[]!-", max_size=10), name=st.text("ab]!-", max_size=12))
@example(pattern="??[?--!]", name="]]]")  # a reversed range joins its neighbours into a lone "!": any character
@example(pattern="[a-b-c]", name="-")
@example(pattern="[!-z]", name="-")
def test_program_globs_agree_with_fnmatch_on_any_pattern(pattern: str, name: str) -> None:
    import fnmatch
    import re

    try:
        expected = fnmatch.fnmatchcase(name, pattern)
    except re.error:  # a reversed range ("[b-a]") before Python 3.10; from 3.10 on it matches nothing
        expected = False
    assert _glob.matches(pattern, name) == expected, (pattern, name)
    assert _config.glob_matches(pattern, name) == expected, (pattern, name)


@settings(max_examples=500, deadline=None)
@given(pattern=st.text("ab*.-", max_size=10), name=st.text("ab.-", max_size=12))
def test_plain_star_globs_are_matched_without_loading_the_glob_module_as_fnmatch_does(pattern: str, name: str) -> None:
    import fnmatch

    assert _config.glob_matches(pattern, name) == fnmatch.fnmatchcase(name, pattern), (pattern, name)


def test_a_pathological_glob_is_matched_without_backtracking(tmp_path: Path) -> None:
    import time

    pattern, name = "*a*a*a*a*a*a*a*a*a*ab", "a" * 250  # 20 s with Python 3.8's fnmatch
    start = time.perf_counter()
    assert not _glob.matches(pattern, name)
    assert _glob.matches("*?a?a?a?a?a?a?a?a*b", "a" * 240 + "b")
    took = time.perf_counter() - start
    assert took < 5.0, f"{took:.2f} s"  # about 1 ms here: the margin is for a loaded machine, the bug took 20 s
    (tmp_path / "machine.toml").write_text(f'[[program]]\nmatch = "{"?" * 257}"\npolicy = "legacy"\n')
    found, problems = _config.resolve({}, flags=object(), argv=[str(tmp_path / "x.py")],
                                      environment_file="/nonexistent", machine_file=str(tmp_path / "machine.toml"))  # fmt: skip
    assert "expected a glob of at most 256 characters" in problems[-1] and found.policy.value.name == "native"


def test_runtime_activate_cannot_go_below_the_floor_either(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import urandom_shim

    (tmp_path / "machine.toml").write_text("allow_weak = false\n")
    monkeypatch.setenv("URANDOM_SHIM_MACHINE_CONFIG", str(tmp_path / "machine.toml"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    monkeypatch.chdir(tmp_path)
    try:
        settings_ = urandom_shim.activate("legacy", on_timeout="fallback")
    finally:
        urandom_shim.deactivate()
    assert settings_.policy.value.name == "pep524" and settings_.on_timeout.value == "raise"
    assert "instead of 'legacy' from urandom_shim.activate()" in settings_.policy.source
    assert "policy 'legacy' from urandom_shim.activate() is below the floor" in capsys.readouterr().err


# -- values spelt as their source spells them (issue 19) -------------------------------------------------------------


def test_file_values_are_shown_in_toml_and_a_missing_match_is_called_missing(shim: Venv, tmp_path: Path) -> None:
    machine = tmp_path / "machine.toml"  # a machine file of its own: the session's venv is shared
    machine.write_text('timeout = true\nwarn_after = 5.0\n[[program]]\npolicy = "legacy"\n')
    done = shim.run("-m", "urandom_shim", "check", env={"URANDOM_SHIM_MACHINE_CONFIG": str(machine)})
    out = " ".join(done.stdout.split())
    assert done.returncode == 1
    assert f"{machine} (machine file) [[program]] #1: match is missing; expected a glob" in out, out
    assert f"{machine} (machine file): timeout = true is not a valid timeout;" in out, out
    assert "ignoring it, so timeout is none from default." in out, out
    assert "True" not in out and "None" not in out, out


@pytest.mark.parametrize(
    ("variable", "value"),
    [("URANDOM_POLICY", ""), ("URANDOM_SHIM_TIMEOUT", ""), ("URANDOM_SHIM_SIMULATE", ""), ("URANDOM_SHIM_CONFIG", "")],
)
def test_an_empty_variable_counts_as_not_set(shim: Venv, variable: str, value: str) -> None:
    started = shim.run("-c", "import os; os.urandom(1)", env={variable: value})
    assert (started.returncode, started.stderr) == (0, "")
    checked = shim.run("-m", "urandom_shim", "check", env={variable: value})
    assert checked.returncode == 0, checked.stdout


def test_whitespace_is_named_and_minus_zero_is_zero(shim: Venv) -> None:
    done = shim.run("-c", "import os", env={"URANDOM_POLICY": "pep522 "})
    assert done.stderr.strip() == (
        "urandom-shim: environment variable URANDOM_POLICY='pep522 ' is not a valid policy; expected one of "
        "'native', 'pep524', 'pep522', 'legacy' (it has whitespace before or after it; did you mean 'pep522'?); "
        "ignoring it."
    ), done.stderr
    program = "import os\ntry:\n    os.urandom(1)\nexcept BlockingIOError as exc:\n    print(exc)\n"
    env = {"URANDOM_POLICY": "pep524", "URANDOM_SHIM_TIMEOUT": "-0", "URANDOM_SHIM_SIMULATE": "unready-forever"}
    waited = shim.run("-c", program, env=env)
    assert "os.urandom(1) waited 0 s (timeout from environment variable URANDOM_SHIM_TIMEOUT)" in waited.stdout
    assert "-0" not in waited.stdout, waited.stdout


# -- an editable install's import hook (issue 36) --------------------------------------------------------------------


def _checkout_with_package(root: Path) -> Path:
    package = root / "checkout" / "flatapp"
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "sub" / "__init__.py").write_text("")
    (package / "urandom-shim.toml").write_text('policy = "pep522"\n')
    return package


SETUPTOOLS_FINDER = """\
from __future__ import annotations
import sys
MAPPING{annotation} = {mapping}
NAMESPACES: dict[str, list[str]] = {{}}
"""


@pytest.mark.parametrize("annotation", [": dict[str, str]", ""])  # setuptools since 69, and before
def test_a_setuptools_finder_maps_the_package_to_its_checkout_without_being_run(
    tmp_path: Path, annotation: str
) -> None:
    from urandom_shim import _editables

    package = _checkout_with_package(tmp_path)
    site = tmp_path / "venv" / "lib" / "site-packages"
    site.mkdir(parents=True)
    mapping = {"other": str(tmp_path / "nowhere"), "flatapp": str(package)}
    # A hook that raised if it ran: it is read, never imported or run.
    (site / "__editable___flatapp_1_0_finder.py").write_text(
        "raise SystemExit('run')\n" + SETUPTOOLS_FINDER.format(annotation=annotation, mapping=repr(mapping))
    )
    found = _editables.find_editable("flatapp.sub.cli", [str(tmp_path / "elsewhere"), str(site)])
    assert found == (str(package), str(package), str(site / "__editable___flatapp_1_0_finder.py"))
    assert _editables.find_editable("notmapped", [str(site)]) is None
    # Not an installation directory: not where site runs hooks from.
    assert _editables.find_editable("flatapp", [str(tmp_path / "venv" / "lib")]) is None


def test_an_editables_hook_maps_a_package_or_a_single_module(tmp_path: Path) -> None:
    from urandom_shim import _editables

    package = _checkout_with_package(tmp_path)
    (tmp_path / "checkout" / "single.py").write_text("")
    site = tmp_path / "dist-packages"
    site.mkdir()
    (site / "_editable_impl_flatapp.py").write_text(
        "from editables.redirector import RedirectingFinder as F\nF.install()\n"
        f"F.map_module('flatapp', {str(package / '__init__.py')!r})\n"
        f"F.map_module('single', {str(tmp_path / 'checkout' / 'single.py')!r})\n"
    )
    hook = str(site / "_editable_impl_flatapp.py")
    assert _editables.find_editable("flatapp", [str(site)]) == (str(package), str(package), hook)
    assert _editables.find_editable("single", [str(site)]) == (str(tmp_path / "checkout"), None, hook)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("{'a': '/p', 'b': '/q'}", [("a", "/p"), ("b", "/q")]),
        ('{"a": "/it\'s"}', [("a", "/it's")]),
        ("{'a': '/p',}", [("a", "/p")]),
        ("{}", []),
        ("{'a': '/p\\\\q'}", [("a", "/p\\q")]),  # an escape: read by ast.literal_eval
        ("{'a'}", None),
        ("{'a': }", None),
        ("{'a': '/p' 'b': '/q'}", None),
        ("{'a': '/p'", None),
        ("{'a': __import__('os').getcwd()}", None),
        ("{'a': 1}", None),
        ("{'a': '/p\\\\q', 'b': 1}", None),
        ("{'a': '" + "[" * 1000 + "'}", [("a", "[" * 1000)]),
        ("{'a': " + "[" * 100_000 + "}", None),
        ("{'a': '\\x00'}", [("a", "\x00")]),
    ],
)
def test_the_hook_literal_reader_takes_string_pairs_and_nothing_else(
    text: str, expected: list[tuple[str, str]] | None
) -> None:
    from urandom_shim import _editables

    assert _editables._string_pairs(text, "{", ":", "}") == expected


def test_a_hook_that_is_not_a_regular_small_utf8_file_maps_nothing(tmp_path: Path) -> None:
    from urandom_shim import _editables

    package = _checkout_with_package(tmp_path)
    line = SETUPTOOLS_FINDER.format(annotation="", mapping=repr({"flatapp": str(package)}))
    site = tmp_path / "site-packages"
    site.mkdir()
    os.mkfifo(site / "__editable___a_finder.py")  # must not block
    (site / "__editable___b_finder.py").write_text("#" * _editables.HOOK_MAX + "\n" + line)
    (site / "__editable___c_finder.py").write_bytes(b"\xff\n" + line.encode())
    (site / "_editable_impl_d.py").mkdir()
    assert _editables.find_editable("flatapp", [str(site)]) is None
    (site / "__editable___e_finder.py").write_text(line)
    assert _editables.find_editable("flatapp", [str(site)]) == (
        str(package),
        str(package),
        str(site / "__editable___e_finder.py"),
    )


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.text(max_size=300))
def test_the_hook_reader_never_raises(tmp_path: Path, text: str) -> None:
    from urandom_shim import _editables

    site = tmp_path / "site-packages"
    site.mkdir(exist_ok=True)
    (site / "__editable___x_finder.py").write_text(f"MAPPING = {text}\nF.map_module({text}\n", errors="surrogatepass")
    found = _editables.find_editable("flatapp", [str(site)])
    assert found is None or isinstance(found[0], str)
