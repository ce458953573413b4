"""Per-app configuration that follows the app wherever it is deployed (docs/reference/configuration.md, "Where a
program's project is").

A small app, ``layoutapp``, with a console script, a ``-m`` entry and a script, is built for real and installed the
ways apps are deployed: a venv inside its checkout, a venv elsewhere with an editable install, and a regular install
of its built wheel into a separate venv; with pip's launchers and with uv's. Its ``pyproject.toml`` has
``[tool.urandom-shim] policy = "pep522"``, and its package ships the same setting in ``layoutapp/urandom-shim.toml``
for the installed case. Each way of starting it runs under simulation (an unready CRNG), from a directory that is
not the project's, and must report ``pep522`` from the source the rules name: the checkout's ``pyproject.toml``
wherever the code runs from a checkout, the package file where it is installed.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import Venv, clean_env, events_in, make_venv, without_events

APP_FILES = {
    "pyproject.toml": """\
[build-system]
requires = ["hatchling"]
build-backend = "hatchling.build"

[project]
name = "layoutapp"
version = "1.0"

[project.scripts]
layoutapp-cli = "layoutapp.cli:main"

[tool.urandom-shim]
policy = "pep522"
""",
    "layoutapp/__init__.py": "",
    "layoutapp/urandom-shim.toml": '# what the installed app carries: the same as its pyproject table\npolicy = "pep522"\n',
    "layoutapp/__main__.py": "from layoutapp.cli import main\n\nmain()\n",
    "layoutapp/cli.py": """\
import json
import os
import sys


def main():
    import urandom_shim

    settings = urandom_shim.current_settings()
    try:
        os.urandom(16)
        outcome = "returned"
    except BlockingIOError:
        outcome = "raised"
    print(json.dumps({"policy": settings.policy.value.name, "source": settings.policy.source, "urandom": outcome}))
    sys.stdout.flush()
""",
    "scripts/run-app.py": "from layoutapp.cli import main\n\nmain()\n",
}
UNREADY = {"URANDOM_SHIM_SIMULATE": "unready-forever"}


def write_app(root: Path) -> Path:
    for name, text in APP_FILES.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def uv() -> str:
    """uv, from the test runner's own environment (tests/requirements.txt and the matrix's requirements)."""
    found = shutil.which("uv", path=os.path.dirname(sys.executable)) or shutil.which("uv")
    if found is None:
        pytest.fail("uv is not installed in the test environment (it is in tests/*requirements.txt)")
    return found


def install(venv: Venv, installer: str, *args: str) -> None:
    if installer == "pip":
        command = [str(venv.python), "-m", "pip", "install", "-q", *args]
    else:
        command = [uv(), "pip", "install", "-q", "--python", str(venv.python), *args]
    done = subprocess.run(command, capture_output=True, text=True, env=clean_env(), timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr


#: The event of ``random`` imported before the shim started, which the shim records as it activates: the
#: ``editables`` hook imports ``importlib.abc`` from its ``.pth``, and on 3.11 to 3.13 that imports ``tempfile`` and
#: ``random`` (on 3.8 it doesn't). Its call site is no frame of the shim's (tests/test_activation.py).
RANDOM_BEFORE_THE_SHIM = "import random @ <start-up, before urandom-shim>"


def start(command: list[str], cwd: Path, random_before_the_shim: bool = False) -> dict[str, Any]:
    done = subprocess.run(command, capture_output=True, text=True, env=clean_env(UNREADY), cwd=cwd, timeout=60)
    assert done.returncode == 0, f"{command}:\n{done.stdout}\n{done.stderr}"
    assert "urandom-shim:" not in without_events(done.stderr), done.stderr  # no problem line: the config was clean
    events = events_in(done.stderr)
    if random_before_the_shim:
        seeded = [event for event in events if event.startswith(RANDOM_BEFORE_THE_SHIM)]
        assert len(seeded) <= 1 and all("under policy 'pep522'" in event for event in seeded), events
        events = [event for event in events if event not in seeded]
    # The one line is the app's call in the window, refused under the app's own policy.
    (event,) = events
    assert event.startswith("os.urandom(16) @ cli.py:11: raised BlockingIOError under policy 'pep522'"), event
    report: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return report


@pytest.fixture(scope="session")
def app_wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """layoutapp's wheel, built once (hatchling from the package index, as any build does)."""
    source = write_app(tmp_path_factory.mktemp("layoutapp-src"))
    out = tmp_path_factory.mktemp("layoutapp-dist")
    done = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(out), str(source)],
        capture_output=True,
        text=True,
        env=clean_env(),
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    (built,) = out.glob("layoutapp-*.whl")
    return built


LAYOUTS = [
    ("venv in checkout", "pip"),
    ("venv elsewhere, editable", "pip"),
    ("venv elsewhere, editable", "uv"),
    ("wheel into its own venv", "pip"),
    ("wheel into its own venv", "uv"),
]


@pytest.mark.slow
@pytest.mark.parametrize(("layout", "installer"), LAYOUTS, ids=[f"{a}-{b}" for a, b in LAYOUTS])
def test_the_apps_policy_applies_however_it_is_installed_and_started(
    python: Path, wheel: Path, app_wheel: Path, tmp_path: Path, layout: str, installer: str
) -> None:
    checkout = write_app(tmp_path / "checkout")
    elsewhere = tmp_path / "elsewhere"  # the working directory of every start: neither checkout nor venv
    elsewhere.mkdir()
    if layout == "venv in checkout":
        venv = make_venv(python, checkout / ".venv", wheel)
        install(venv, installer, "--no-deps", "-e", str(checkout))
    elif layout == "venv elsewhere, editable":
        venv = make_venv(python, tmp_path / "opt-app-venv", wheel)
        install(venv, installer, "--no-deps", "-e", str(checkout))
    else:
        venv = make_venv(python, tmp_path / "opt-app-venv", wheel)
        install(venv, installer, "--no-deps", str(app_wheel))
    launcher = venv.path / "bin" / "layoutapp-cli"
    assert launcher.is_file()

    installed = layout.startswith("wheel")
    pyproject = f"{checkout / 'pyproject.toml'} [tool.urandom-shim]"
    package_file = f"{venv.site_packages / 'layoutapp' / 'urandom-shim.toml'} (the app's package file)"
    expected = package_file if installed else pyproject
    starts = {
        "console script": [str(launcher)],
        "python -m, from another directory": [str(venv.python), "-m", "layoutapp"],
        "python -m, from /": [str(venv.python), "-m", "layoutapp"],
    }
    if not installed:
        starts["a script in the checkout"] = [str(venv.python), str(checkout / "scripts" / "run-app.py")]
    for how, command in starts.items():
        report = start(command, Path("/") if how.endswith("from /") else elsewhere)
        assert (report["policy"], report["source"], report["urandom"]) == ("pep522", expected, "raised"), how


@pytest.mark.lengthy  # a venv of its own, and the app built and installed into it
def test_check_finds_a_console_script_on_path_and_names_the_rule(
    python: Path, wheel: Path, app_wheel: Path, tmp_path: Path
) -> None:
    venv = make_venv(python, tmp_path / "venv", wheel)
    install(venv, "pip", "--no-deps", str(app_wheel))
    env = clean_env({"PATH": f"{venv.path / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}"})
    cli = str(venv.path / "bin" / "urandom-shim-cli")
    done = subprocess.run(
        [cli, "check", "--for", "layoutapp-cli", "--json"], capture_output=True, text=True, env=env, cwd=tmp_path
    )
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads(done.stdout)
    assert report["policy"] == "pep522"
    assert report["policy_source"].endswith("(the app's package file)")
    assert report["project_rule"].startswith("console script layoutapp-cli, which runs layoutapp.cli: the module's")
    # --module says "as -m" even where a directory of that name is in the current directory.
    (tmp_path / "layoutapp").mkdir()
    done = subprocess.run(
        [cli, "check", "--module", "layoutapp", "--json"], capture_output=True, text=True, env=env, cwd=tmp_path
    )
    report = json.loads(done.stdout)
    assert report["resolved_for"].startswith("python -m layoutapp"), report
    text = subprocess.run([cli, "check", "--for", "layoutapp-cli"], capture_output=True, text=True, env=env).stdout
    assert "Where its project is: console script layoutapp-cli, which runs layoutapp.cli" in text


@pytest.mark.parametrize("spelling", ["urandom_shim", "urandomshim", "urandom-shims", "Urandom-Shim"])
def test_a_near_miss_table_name_gets_a_did_you_mean(shim: Venv, tmp_path: Path, spelling: str) -> None:
    (tmp_path / "pyproject.toml").write_text(f'[tool.{spelling}]\npolicy = "pep522"\n')
    script = tmp_path / "app.py"
    script.write_text("import os\nos.urandom(1)\nprint('ran')\n")
    started = shim.run(str(script), env=UNREADY, cwd=tmp_path)
    assert started.returncode == 0 and started.stdout.strip() == "ran", started.stderr
    lines = [line for line in started.stderr.splitlines() if line.startswith("urandom-shim:")]
    assert lines == [
        f"urandom-shim: {tmp_path / 'pyproject.toml'}: has a table [tool.{spelling}], which urandom-shim does not "
        "read: did you mean [tool.urandom-shim]? Ignoring it."
    ], started.stderr
    checked = shim.run("-m", "urandom_shim", "check", "--for", str(script), cwd=tmp_path)
    assert checked.returncode == 1 and "did you mean [tool.urandom-shim]?" in checked.stdout, checked.stdout


PLUGIN_TEST = """\
import os

import pytest
import urandom_shim


@pytest.mark.urandom()  # no policy given: the project's configuration applies
def test_the_projects_policy():
    settings = urandom_shim.current_settings()
    assert (settings.policy.value.name, settings.policy.source) == ("pep522", {source!r})
    with pytest.raises(BlockingIOError):
        os.urandom(1)
"""


@pytest.mark.lengthy  # pytest started four times: two ways, from two directories
def test_the_plugin_finds_the_project_the_same_way_for_pytest_and_python_m_pytest(
    venvs: Any, python: Path, tmp_path: Path
) -> None:
    venv: Venv = venvs(python, "pytest")  # a venv outside the project, as /opt or ~/.venvs would be
    project = tmp_path / "project"
    (project / "tests" / "unit").mkdir(parents=True)
    pyproject = project / "pyproject.toml"
    pyproject.write_text(
        '[tool.pytest.ini_options]\naddopts = "-p no:cacheprovider"\n\n[tool.urandom-shim]\npolicy = "pep522"\n'
    )
    source = f"{pyproject} [tool.urandom-shim]"
    (project / "tests" / "unit" / "test_policy.py").write_text(PLUGIN_TEST.format(source=source))
    starts = {
        "pytest": [str(venv.path / "bin" / "pytest"), "-q"],
        "python -m pytest": [str(venv.python), "-m", "pytest", "-q"],
    }
    for how, command in starts.items():
        for cwd in (project, project / "tests" / "unit"):
            done = subprocess.run(command, capture_output=True, text=True, env=clean_env(), cwd=cwd, timeout=120)
            assert done.returncode == 0 and "1 passed" in done.stdout, (how, str(cwd), done.stdout[-3000:])


def test_a_program_read_from_a_pipe_or_fifo_is_not_consumed_by_the_launcher_check(shim: Venv, tmp_path: Path) -> None:
    """Telling a launcher from a script reads the file; never a pipe or FIFO, whose bytes are the program itself."""
    program = "import os\ntry:\n    os.urandom(1)\nexcept BlockingIOError:\n    pass\nprint('the program ran')\n"
    env = clean_env(UNREADY)
    done = subprocess.run(
        [str(shim.python), "/dev/stdin"], input=program, capture_output=True, text=True, env=env, timeout=60
    )
    assert (done.returncode, done.stdout, done.stderr) == (0, "the program ran\n", "")
    fifo = tmp_path / "program-fifo"
    os.mkfifo(fifo)
    child = subprocess.Popen(
        [str(shim.python), str(fifo)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
    )
    fifo.write_text(program)  # blocks until the interpreter opens it to read its program
    out, err = child.communicate(timeout=60)
    assert (child.returncode, out, err) == (0, "the program ran\n", "")


#: Each build backend's editable install of layoutapp, and how it makes the checkout importable: a path in a ``.pth``
#: (the checkout on ``sys.path``), or an import hook that maps the package to the checkout and puts nothing on
#: ``sys.path`` (setuptools' ``__editable___*_finder.py``, and the ``editables`` library's ``_editable_impl_*.py``
#: that hatchling's ``dev-mode-exact`` and pdm-backend's ``editable-backend = "editables"`` write).
EDITABLE_BACKENDS: dict[str, tuple[str, str, str]] = {
    # name: (layout, [build-system] and backend tables, how the install reaches the checkout)
    "setuptools, flat layout": (
        "flat",
        'requires = ["setuptools>=64"]\nbuild-backend = "setuptools.build_meta"\n'
        '\n[tool.setuptools]\npackages = ["layoutapp"]\n',
        "__editable___*_finder.py",
    ),
    "setuptools, src layout": (
        "src",
        'requires = ["setuptools>=64"]\nbuild-backend = "setuptools.build_meta"\n'
        '\n[tool.setuptools.packages.find]\nwhere = ["src"]\n',
        "a path",
    ),
    "hatchling, dev-mode-exact": (
        "flat",
        'requires = ["hatchling"]\nbuild-backend = "hatchling.build"\n'
        "\n[tool.hatch.build]\ndev-mode-exact = true\n"
        '\n[tool.hatch.build.targets.wheel]\npackages = ["layoutapp"]\n',
        "_editable_impl_*.py",
    ),
    "pdm-backend": ("flat", 'requires = ["pdm-backend"]\nbuild-backend = "pdm.backend"\n', "a path"),
    "pdm-backend, editables": (
        "flat",
        'requires = ["pdm-backend"]\nbuild-backend = "pdm.backend"\n'
        '\n[tool.pdm.build]\neditable-backend = "editables"\n',
        "_editable_impl_*.py",
    ),
}


def write_editable_app(root: Path, layout: str, backend: str) -> Path:
    """layoutapp's checkout for one build backend: its package at the top (flat) or under ``src/``."""
    build_system, _, tables = backend.partition("\n\n")
    project = APP_FILES["pyproject.toml"].partition("[project]")[2]
    files = dict(APP_FILES, **{"pyproject.toml": f"[build-system]\n{build_system}\n\n[project]{project}\n{tables}"})
    for name, text in files.items():
        if layout == "src" and name.startswith("layoutapp/"):
            name = "src/" + name
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


@pytest.mark.slow  # a venv of its own per backend, and pip fetching the backend: the full sessions run it
@pytest.mark.parametrize("backend", list(EDITABLE_BACKENDS))
def test_an_editable_install_gets_the_checkouts_table_from_any_directory_whatever_its_backend(
    python: Path, wheel: Path, tmp_path: Path, backend: str
) -> None:
    """Issue 36: setuptools' flat-layout editable install puts an import hook in site-packages, not a path, and the
    app started anywhere but its checkout ran under the default policy, with ``check --for`` saying "No problems"."""
    layout, tables, reaches = EDITABLE_BACKENDS[backend]
    checkout = write_editable_app(tmp_path / "checkout", layout, tables)
    venv = make_venv(python, tmp_path / "opt-app-venv", wheel)
    install(venv, "pip", "-e", str(checkout))  # with its dependencies: the editables hook needs `editables`
    site_packages = venv.site_packages
    hooks = sorted(p.name for p in site_packages.glob("*.py") if "editable" in p.name)
    if reaches == "a path":
        assert hooks == [], hooks
    else:
        assert len(hooks) == 1 and Path(hooks[0]).match(reaches), hooks
        # The hook, not a path: the checkout is not on sys.path, which is what the lookup used to need.
        sys_path = subprocess.run(
            [str(venv.python), "-c", "import sys; print(sys.path)"], capture_output=True, text=True, cwd="/"
        ).stdout
        assert str(checkout) not in sys_path, sys_path

    pyproject = f"{checkout / 'pyproject.toml'} [tool.urandom-shim]"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    launcher = venv.path / "bin" / "layoutapp-cli"
    for how, command, cwd in [
        ("console script, from /", [str(launcher)], Path("/")),
        ("console script, from elsewhere", [str(launcher)], elsewhere),
        ("python -m, from /", [str(venv.python), "-m", "layoutapp"], Path("/")),
        ("python -m, from elsewhere", [str(venv.python), "-m", "layoutapp"], elsewhere),
    ]:
        report = start(command, cwd, random_before_the_shim=reaches == "_editable_impl_*.py")
        assert (report["policy"], report["source"], report["urandom"]) == ("pep522", pyproject, "raised"), how

    # check --for names the checkout's table, and the package the lookup found in the checkout.
    package = checkout / ("src" if layout == "src" else "") / "layoutapp"
    cli = str(venv.path / "bin" / "urandom-shim-cli")
    for target in ("layoutapp-cli", "-m layoutapp"):
        done = subprocess.run(
            [cli, "check", "--for", target, "--json"], capture_output=True, text=True, env=clean_env(), cwd="/"
        )
        assert done.returncode == 0, done.stdout + done.stderr
        report = json.loads(done.stdout)
        assert (report["policy"], report["policy_source"]) == ("pep522", pyproject), (target, report)
        assert str(package) in report["project_rule"], (target, report["project_rule"])


@pytest.mark.slow  # a venv of its own for each of uv's link modes; the launcher is sh, whatever the Python
@pytest.mark.parametrize("link_mode", ["copy", "hardlink", "symlink"])
def test_the_command_line_starts_however_uv_links_the_wheel_in(
    python: Path, wheel: Path, tmp_path: Path, link_mode: str
) -> None:
    """uv's ``--link-mode=symlink`` makes ``bin/urandom-shim`` a symlink into uv's cache, and writes
    ``urandom-shim-cli`` beside the link, not beside the target: the launcher looks beside the name it was started
    by before it follows the link."""
    venv = make_venv(python, tmp_path / "venv", None)
    install(venv, "uv", f"--link-mode={link_mode}", "--cache-dir", str(tmp_path / "uv-cache"), str(wheel))
    launcher = venv.path / "bin" / "urandom-shim"
    assert launcher.is_symlink() == (link_mode == "symlink"), os.path.realpath(launcher)
    done = subprocess.run(
        [str(launcher), "--version"], capture_output=True, text=True, env=clean_env(), cwd=tmp_path, timeout=60
    )
    assert done.returncode == 0 and done.stdout.startswith("urandom-shim "), done.stdout + done.stderr
