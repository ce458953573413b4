"""Shared fixtures: the real wheel, real virtual environments, and a runner for real subprocesses.

Start-up behaviour is only ever tested in fresh interpreters of venvs that have the wheel installed by pip.

Interpreters: ``URANDOM_SHIM_TEST_PYTHONS`` (comma-separated versions such as ``3.8,3.13`` or interpreter paths);
the default is the oldest and newest CPython that pyenv has here, 3.8 and 3.13. An interpreter that is missing is
skipped with a visible reason, never silently.
"""

from __future__ import annotations

import atexit
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest

# A run started in the background by a shell without job control (`.ci/run &`, cron) inherits SIGINT ignored, and
# every interpreter the tests start would inherit that too: a test that interrupts a wait with SIGINT (or CPython's
# own tests of KeyboardInterrupt) would then wait for nothing. Children get the default back from a handler here.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

ROOT = Path(__file__).resolve().parent.parent
DRIVER = Path(__file__).resolve().parent / "driver.py"
DEFAULT_PYTHONS = "3.8,3.13"


def our_variables() -> tuple[str, ...]:
    """Every variable of ours, which must not leak from the developer's shell into the tests
    (``urandom_shim._config.VARIABLES``, imported here rather than at the top: the noxfile imports this module where
    the package is not installed), the pytest plugin's name of the running test, and the hash seed ``run`` may set."""
    from urandom_shim import _config
    from urandom_shim._events import PLUGIN_TEST_VARIABLE

    return (*_config.VARIABLES, PLUGIN_TEST_VARIABLE, "URANDOM_SHIM_HOME", "PYTHONHASHSEED")


def _pyenv_root() -> Path | None:
    root = os.environ.get("PYENV_ROOT")
    if root:
        return Path(root)
    found = shutil.which("pyenv")
    if found:
        out = subprocess.run([found, "root"], capture_output=True, text=True)
        if out.returncode == 0:
            return Path(out.stdout.strip())
    default = Path.home() / ".pyenv"
    return default if default.is_dir() else None


def find_python(spec: str) -> Path | None:
    """An interpreter for ``spec``: a path, or a version X.Y[.Z] looked up in pyenv, then on PATH."""
    if os.sep in spec:
        path = Path(spec)
        return path if path.exists() else None
    root = _pyenv_root()
    if root is not None:
        versions = sorted(
            (v for v in (root / "versions").glob(f"{spec}*") if (v / "bin" / "python").exists()),
            key=lambda v: [int(p) if p.isdigit() else 0 for p in v.name.split(".")],
        )
        exact = [v for v in versions if v.name == spec or v.name.startswith(spec + ".")]
        if exact:
            return exact[-1] / "bin" / "python"
    found = shutil.which(f"python{spec}")
    return Path(found) if found else None


def python_specs() -> list[str]:
    return [s.strip() for s in os.environ.get("URANDOM_SHIM_TEST_PYTHONS", DEFAULT_PYTHONS).split(",") if s.strip()]


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "python" in metafunc.fixturenames:
        metafunc.parametrize("python", python_specs(), indirect=True, scope="session")


#: Fixtures that start real interpreters: a test that uses one is a ``venv`` test, and ``pytest -m "not venv"`` leaves
#: it out (the in-process tier, which gives feedback in seconds).
VENV_FIXTURES = frozenset({"python", "venvs", "shim", "bare", "wheel", "fake_kernel", "machine_file_in_etc"})
#: Test files whose every test starts processes of its own (a built wheel, the CLI's launcher, uv, pip), without one
#: of those fixtures in every test.
VENV_FILES = frozenset({"test_app_layouts.py", "test_cli_installed.py", "test_old_pythons.py"})


def is_pypy(spec: str) -> bool:
    """Whether the interpreter spec of the matrix names PyPy (``/usr/bin/pypy3``, sid's ``sid:pypy3``)."""
    return "pypy" in os.path.basename(spec)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        only = item.get_closest_marker("cpython_only")
        callspec = getattr(item, "callspec", None)
        spec = callspec.params.get("python") if callspec is not None else None
        if only is not None and (is_pypy(str(spec)) if spec is not None else sys.implementation.name == "pypy"):
            reason = only.args[0] if only.args else only.kwargs.get("reason", "")
            item.add_marker(pytest.mark.skip(reason=f"CPython only: {reason}"))
        fixtures = set(getattr(item, "fixturenames", ()))
        if (
            fixtures & VENV_FIXTURES
            or item.path.name in VENV_FILES
            or item.get_closest_marker("kernel")
            or (item.get_closest_marker("boot"))
        ):
            item.add_marker(pytest.mark.venv)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "stage(name): a row of its own in tests/run's time table (tests/stages.py): the real boots, the "
        "Debian package, the fleet test; one row per name and parameters, whatever the interpreter",
    )


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    """Each phase's report of a ``stage`` test carries the row it adds to (the controller's, under xdist)."""
    outcome = yield
    marker = item.get_closest_marker("stage")
    if marker is not None:
        callspec = getattr(item, "callspec", None)
        params = [str(v) for k, v in (callspec.params.items() if callspec else ()) if k != "python"]
        report = outcome.get_result()
        row = marker.args[0] + (f" ({', '.join(params)})" if params else "")
        report.user_properties = [*report.user_properties, ("stage", row)]


#: The time table's rows of this run's ``stage`` tests: name -> [began, seconds, worst status, ran].
_STAGE_ROWS: dict[str, list[Any]] = {}


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    row = next((value for name, value in report.user_properties if name == "stage"), None)
    if row is None:
        return
    began = getattr(report, "start", time.time() - report.duration)
    entry = _STAGE_ROWS.setdefault(row, [began, 0.0, 0, False])
    entry[0] = min(entry[0], began)
    entry[1] += report.duration
    entry[2] = max(entry[2], 1 if report.failed else 0)
    entry[3] = entry[3] or (report.when == "call" and not report.skipped)


def pytest_sessionfinish(session: pytest.Session) -> None:
    """The rows of the tests that ran (a skipped one adds none), for tests/run's table."""
    if hasattr(session.config, "workerinput"):
        return
    from stages import record

    for row, (began, seconds, status, ran) in _STAGE_ROWS.items():
        if ran or status:
            record(row, began, seconds, status)


def pytest_report_header(config: pytest.Config) -> list[str]:
    lines = []
    for spec in python_specs():
        found = find_python(spec)
        lines.append(f"urandom-shim: interpreter {spec}: {found or 'NOT FOUND (its tests are skipped)'}")
    return lines


#: An empty directory for the user file of every interpreter a test starts, unless the test gives its own
#: ``XDG_CONFIG_HOME``: a developer's own ``~/.config/urandom-shim/config.toml`` must not change a test's outcome.
#: Each process that imports this module (the controller, each worker, nox) removes its own at exit, and a child
#: forked from it leaves it in place.
EMPTY_CONFIG_HOME = Path(tempfile.mkdtemp(prefix="urandom-shim-tests-config-"))


def _remove_empty_config_home(owner: int = os.getpid()) -> None:
    if os.getpid() == owner:
        shutil.rmtree(EMPTY_CONFIG_HOME, ignore_errors=True)


atexit.register(_remove_empty_config_home)


@pytest.fixture(autouse=True)
def hermetic(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch, tmp_path_factory: Any) -> None:
    """Every test resolves configuration as on a machine without any of it: no variable of ours from the
    developer's shell, no user file, no environment or machine file. In-process tests get a scratch home, an empty
    ``XDG_CONFIG_HOME`` and absent environment and machine files (``/etc/urandom-shim.toml`` included, whose floor
    otherwise always counts); interpreters started through :func:`clean_env` get the empty ``XDG_CONFIG_HOME``. The
    venv tests that need ``/etc/urandom-shim.toml`` write it in a private mount namespace (``machine_file_in_etc``).
    """
    for name in our_variables():
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(EMPTY_CONFIG_HOME))
    if request.node.get_closest_marker("venv") is not None:
        return
    from urandom_shim import _sources

    scratch = tmp_path_factory.mktemp("hermetic")
    monkeypatch.setenv("HOME", str(scratch / "home"))
    monkeypatch.setattr(_sources, "MACHINE_FILE", str(scratch / "etc-urandom-shim.toml"))
    monkeypatch.setattr(_sources, "environment_file", lambda: str(scratch / "environment.toml"))


@pytest.fixture(scope="session")
def python(request: pytest.FixtureRequest) -> Path:
    found = find_python(request.param)
    if found is None:
        missing = f"interpreter {request.param} is not installed on this machine"
        if os.environ.get("CI", "").lower() in ("true", "1"):
            pytest.fail(f"{missing}; CI=true, so that fails rather than skips", pytrace=False)
        pytest.skip(missing)
    return found


@pytest.fixture(scope="session")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The real wheel: ``URANDOM_SHIM_WHEEL`` (tests/run builds it once for the whole matrix), or built once per
    session from this checkout."""
    given = os.environ.get("URANDOM_SHIM_WHEEL")
    if given:
        return Path(given)
    out = tmp_path_factory.mktemp("dist")
    result = subprocess.run(
        [sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(out), str(ROOT)],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    (built,) = out.glob("urandom_shim-*.whl")
    return built


class Venv:
    """A real virtual environment of one interpreter."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.python = path / "bin" / "python"

    @property
    def site_packages(self) -> Path:
        out = subprocess.run(
            [str(self.python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            capture_output=True,
            text=True,
            check=True,
        )
        return Path(out.stdout.strip())

    def run(
        self,
        *args: str,
        env: dict[str, str] | None = None,
        timeout: float = 60,
        flags: tuple[str, ...] = (),
        cwd: Path | None = None,
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(self.python), *flags, *args],
            capture_output=True,
            text=True,
            env=clean_env(env),
            timeout=timeout,
            cwd=cwd,
        )

    def drive(self, site: str, env: dict[str, str] | None = None, probe: float = 0.0, **kw: Any) -> dict[str, Any]:
        """Run one call site through tests/driver.py and return its JSON report."""
        args = [str(DRIVER), site] + ([f"--probe={probe}"] if probe else [])
        result = self.run(*args, env=env, **kw)
        assert result.returncode == 0, f"driver failed for {site}:\n{result.stdout}\n{result.stderr}"
        report: dict[str, Any] = json.loads(result.stdout.strip().splitlines()[-1])
        report["stderr"] = result.stderr
        return report


def clean_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment for an interpreter a test starts: the test's own, without any variable of ours or any
    ``PYTHON*`` one, with an empty user configuration directory unless ``extra`` gives one, and then ``extra``."""
    ours = our_variables()
    env = {k: v for k, v in os.environ.items() if k not in ours and not k.startswith("PYTHON")}
    env["XDG_CONFIG_HOME"] = str(EMPTY_CONFIG_HOME)
    env.update(extra or {})
    return env


def make_venv(python: Path, path: Path, wheel: Path | None, extra: tuple[str, ...] = ()) -> Venv:
    subprocess.run([str(python), "-m", "venv", str(path)], check=True, capture_output=True)
    venv = Venv(path)
    if wheel is not None:
        result = subprocess.run(
            # With its dependencies (tomli on Python < 3.11), from the package index, as a user installs it.
            [str(venv.python), "-m", "pip", "install", "-q", str(wheel), *extra],
            capture_output=True,
            text=True,
            env=clean_env(),
        )
        assert result.returncode == 0, result.stdout + result.stderr
    return venv


def make_editable_venv(python: Path, path: Path) -> Venv:
    """A venv with this checkout installed in editable mode (hatchling comes from the package index)."""
    venv = make_venv(python, path, wheel=None)
    result = subprocess.run(
        [str(venv.python), "-m", "pip", "install", "-q", "--no-deps", "-e", str(ROOT)],
        capture_output=True,
        text=True,
        env=clean_env(),
    )
    if result.returncode != 0 and "Could not find a version" in result.stderr + result.stdout:
        pytest.skip("the package index is not reachable for hatchling")
    assert result.returncode == 0, result.stdout + result.stderr
    return venv


_venvs: dict[tuple[str, str], Venv] = {}


@pytest.fixture(scope="session")
def venvs(tmp_path_factory: pytest.TempPathFactory, wheel: Path) -> Any:
    """``venvs(python, kind)``: a session-cached venv; kind is "shim" (wheel installed), "pytest" (the wheel and
    pytest, for the plugin's tests), "flask" (the wheel and Flask, for the application scenarios) or "bare"."""

    def get(python: Path, kind: str = "shim") -> Venv:
        key = (str(python), kind)
        if key not in _venvs:
            path = tmp_path_factory.mktemp(f"venv-{kind}-{python.parent.parent.name}")
            requirements = {"pytest": "plugin-requirements.txt", "flask": "app-requirements.txt"}.get(kind)
            extra = ("-r", str(ROOT / "tests" / requirements)) if requirements else ()
            _venvs[key] = make_venv(python, path, None if kind == "bare" else wheel, extra)
        return _venvs[key]

    return get


@pytest.fixture
def shim(venvs: Any, python: Path) -> Venv:
    """A venv of ``python`` with the wheel installed."""
    venv: Venv = venvs(python, "shim")
    return venv


@pytest.fixture
def bare(venvs: Any, python: Path) -> Venv:
    """A venv of ``python`` without the shim, for comparing against the interpreter's own behaviour."""
    venv: Venv = venvs(python, "bare")
    return venv


# -- a fake kernel, and a machine file in /etc -------------------------------------------------------------------


class FakeKernel:
    """``tests/fakekernel.c`` built as a preload library: ``getrandom()`` behaves like an unready kernel while a
    file exists (see the C file). ``env(flag)`` is what a subprocess needs to run on it."""

    def __init__(self, library: Path) -> None:
        self.library = library

    def env(self, flag: Path | None = None, errno: int | None = None) -> dict[str, str]:
        env = {"LD_PRELOAD": str(self.library)}
        if flag is not None:
            env["FAKE_KERNEL_UNREADY"] = str(flag)
        if errno is not None:
            env["FAKE_KERNEL_ERRNO"] = str(errno)
        return env


@pytest.fixture(scope="session")
def fake_kernel(tmp_path_factory: pytest.TempPathFactory) -> FakeKernel:
    """The fake kernel, compiled once per session with the system's C compiler. ``URANDOM_SHIM_KERNEL_REQUIRED=1``
    (``tests/run``) makes a missing compiler a failure instead of a visible skip."""
    from debian import unavailable

    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        unavailable("no C compiler (cc) to build the fake kernel, tests/fakekernel.c")
    library = tmp_path_factory.mktemp("fakekernel") / "fakekernel.so"
    source = Path(__file__).resolve().parent / "fakekernel.c"
    built = subprocess.run(
        [compiler, "-shared", "-fPIC", "-O2", "-Wall", "-Werror", "-o", str(library), str(source), "-ldl"],
        capture_output=True,
        text=True,
    )
    assert built.returncode == 0, built.stderr
    return FakeKernel(library)


@pytest.fixture(scope="session")
def machine_file_in_etc() -> Any:
    """``run(content, argv, env, mode=0o644, drop_root=False)``: run ``argv`` with ``/etc/urandom-shim.toml`` holding
    ``content``, without touching the real ``/etc``: in a private mount namespace, ``/etc`` is an overlay whose upper
    layer holds the file. With ``drop_root``, the file belongs to another user and the process loses root's power to
    read any file (CAP_DAC_OVERRIDE), so a file of mode 600 is unreadable to it, as to a service running as another
    user."""
    from debian import unavailable

    unshare, setpriv = shutil.which("unshare"), shutil.which("setpriv")
    if os.geteuid() != 0 or unshare is None or setpriv is None:
        unavailable("running with a file in /etc needs root, unshare and setpriv (util-linux)")
    probe = subprocess.run([unshare, "--mount", "true"], capture_output=True, text=True)
    if probe.returncode != 0:
        unavailable(f"unshare --mount is not allowed here: {probe.stderr.strip()}")

    def run(
        content: bytes | str | None,
        argv: list[str],
        env: dict[str, str],
        work: Path,
        mode: int = 0o644,
        drop_root: bool = False,
        timeout: float = 60,
    ) -> subprocess.CompletedProcess[str]:
        upper, scratch = work / "etc-upper", work / "etc-work"
        upper.mkdir(parents=True, exist_ok=True)
        scratch.mkdir(parents=True, exist_ok=True)
        if content is not None:
            target = upper / "urandom-shim.toml"
            if content == "DIRECTORY":
                target.mkdir(exist_ok=True)
            else:
                target.write_bytes(content if isinstance(content, bytes) else content.encode())
            target.chmod(mode)
            if drop_root:  # owned by someone else, as /etc's file is for a service that runs as another user
                os.chown(target, 65534, 65534)
        command = [setpriv, "--bounding-set", "-dac_override,-dac_read_search", "--inh-caps",
                   "-dac_override,-dac_read_search", *argv] if drop_root else argv  # fmt: skip
        script = f'mount -t overlay overlay -o lowerdir=/etc,upperdir={upper},workdir={scratch} /etc && exec "$@"'
        return subprocess.run(
            [unshare, "--mount", "--propagation", "private", "sh", "-c", script, "sh", *command],
            capture_output=True,
            text=True,
            env=clean_env(env),
            timeout=timeout,
        )

    return run


@pytest.fixture
def restored() -> Any:
    """Whatever a test does in-process (a policy engaged, a simulation, variables), the runner's interpreter gets its
    own functions and environment back, and the test fails if one is still replaced. The events it made are
    forgotten too: otherwise, at the runner's exit, after pytest has stopped capturing, ``_events``' exit handler
    would print one ``repeat`` line per call site (``N more like it``) on the terminal, under the summary."""
    import posix
    import random
    import secrets
    import urllib.request

    import urandom_shim
    from urandom_shim import _readiness, _simulation

    saved_env = dict(os.environ)
    originals = (os.urandom, random._urandom, random.Random.seed, random.seed, urllib.request._randombytes)
    saved_secrets = {name: getattr(secrets, name) for name in ("token_bytes", "token_hex", "choice", "randbits")}
    yield
    urandom_shim.deactivate()
    if "urandom_shim._events" in sys.modules:  # loaded by the first event only
        sys.modules["urandom_shim._events"].reset()
    _simulation.override(None)
    _readiness.reset()
    os.environ.clear()
    os.environ.update(saved_env)
    assert (os.urandom, random._urandom, random.Random.seed, random.seed, urllib.request._randombytes) == originals
    assert {name: getattr(secrets, name) for name in saved_secrets} == saved_secrets
    assert os.urandom is posix.urandom and type(posix.urandom) is type(len)


#: A line of stderr that is one event of the shim's (urandom_shim._events): a decision made while the CRNG was unready.
EVENT_LINE = re.compile(
    r"^urandom-shim: (report-only: )?.+ called from .+ before the kernel CRNG was ready( \(simulated\))?, "
    r"\d+\.\d\d s after boot: "
)


#: The end of an event line that says what each policy would do (``_messages.EVENT_UNDER``), which
#: :func:`under_in` reads and :func:`events_in` leaves out.
UNDER_TAIL = re.compile(r"; under each policy: (?P<outcomes>.*)\.$")


def events_in(stderr: str) -> list[str]:
    """The event lines of ``stderr``, shortened to what a test can compare: the call, the caller's file name (not
    its directory) and line, and what happened, without the time, and without what each policy would do (see
    :func:`under_in`)."""
    found = []
    for text in stderr.splitlines():
        if EVENT_LINE.match(text):
            head, _, tail = text.partition(" before the kernel CRNG was ready")
            call, _, caller = head[len("urandom-shim: ") :].rpartition(" called from ")
            done = UNDER_TAIL.sub(".", tail.split(" s after boot: ", 1)[1])
            found.append(f"{call} @ {os.path.basename(caller)}: {done}")
    return found


def under_in(stderr: str) -> list[str]:
    """What each event line of ``stderr`` says every policy would do: ``native waits, pep524 waits, ...``."""
    return [m["outcomes"] for m in map(UNDER_TAIL.search, stderr.splitlines()) if m is not None]


def without_events(stderr: str) -> str:
    """``stderr`` without the shim's event lines: what else the process printed."""
    return "".join(text for text in stderr.splitlines(keepends=True) if not EVENT_LINE.match(text))


def window(seconds: float) -> tuple[str, float]:
    """A simulation whose window closes ``seconds`` from now, for every process: (spec, deadline)."""
    deadline = time.monotonic() + seconds
    return f"unready-until-monotonic:{deadline!r}", deadline


def spawn(venv: Venv, code: str, env: dict[str, str], args: tuple[str, ...] = ()) -> subprocess.Popen[str]:
    """Start ``python -c code [args]`` in ``venv`` without waiting for it."""
    return subprocess.Popen(
        [str(venv.python), "-c", code, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=clean_env(env),
    )


WAIT_THEN_URANDOM = "import os\nprint('waiting', flush=True)\nos.urandom(16)\nprint('returned')"


def assert_sigint_interrupts_promptly(venv: Venv, env: dict[str, str]) -> None:
    """Start a pep524 os.urandom() wait, check it is still waiting after 0.5 s, send SIGINT, and check the process
    ends with KeyboardInterrupt within a second."""
    import signal

    proc = spawn(venv, WAIT_THEN_URANDOM, env)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "waiting"
        time.sleep(0.5)
        assert proc.poll() is None, "os.urandom() returned while the CRNG was unready"
        sent = time.monotonic()
        proc.send_signal(signal.SIGINT)
        _out, err = proc.communicate(timeout=10)
        took = time.monotonic() - sent
    finally:
        proc.kill()
    # Since 3.8 an unhandled KeyboardInterrupt ends the process by SIGINT, as a shell expects.
    assert proc.returncode == -signal.SIGINT and err.rstrip().endswith("KeyboardInterrupt"), err
    # A wait Ctrl-C can't interrupt never ends (the window is unready-forever): 3 s is room for a loaded machine.
    assert took < 3.0, f"Ctrl-C took {took:.2f} s to interrupt the wait"


def _properties(terminalreporter: Any, wanted: str) -> list[dict[str, Any]]:
    """The ``wanted`` property of every test's call phase (xdist passes properties on to the controller)."""
    rows = []
    for reports in terminalreporter.stats.values():
        for report in reports:
            if getattr(report, "when", None) != "call":
                continue
            rows += [value for name, value in getattr(report, "user_properties", ()) if name == wanted]
    return rows


def _table(terminalreporter: Any, title: str, lines: list[tuple[str, ...]]) -> None:
    terminalreporter.section(title)
    widths = [max(len(line[i]) for line in lines) for i in range(len(lines[0]))]
    for line in lines:
        terminalreporter.write_line("  ".join(cell.ljust(width) for cell, width in zip(line, widths)).rstrip())


def _version_key(version: str) -> list[int]:
    return [int(n) for n in version.split(".")[:2]]


def _seconds(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f} s"


def _boot_table(terminalreporter: Any) -> None:
    """One row per real boot (tests/boot): when the CRNG became ready against when each early program started."""
    rows = _properties(terminalreporter, "boot_result")
    if not rows:
        return
    header = ("system", "kernel", "policy", "crng init done", "first Python line", "early-setup started")
    header += ("its first line", "early unit", "ordinary.service", "cloud-init-local started", "its first line")
    header += ("random password", "failed units", "wall")
    order = sorted(rows, key=lambda r: (r["kernel"], r["suite"], r["policy"]))
    lines = [header] + [
        (
            r["suite"],
            r["kernel"],
            r["policy"],
            _seconds(r["crng"]) if r["crng"] is not None else "never",
            _seconds(r["first python line"]),
            _seconds(r["early started"]),
            _seconds(r["early first line"]),
            r["early unit"],
            f"{_seconds(r['ordinary first line'])}: {r['ordinary']}",
            _seconds(r["cloud-init-local started"]),
            _seconds(r["cloud-init first line"]),
            _seconds(r["random password"]),
            ", ".join(r["failed"]) or "none",
            f"{r['wall']:.0f} s",
        )
        for r in order
    ]
    _table(terminalreporter, "A real Debian boot with systemd and cloud-init (times since boot, the guest's)", lines)
    for r in order:
        terminalreporter.write_line(f"{r['suite']} {r['kernel']} {r['policy']}: {r['analyze']} (qemu {r['qemu']})")
        probes = "; ".join(f"{name}: {words}" for name, words in r["probes"].items())
        terminalreporter.write_line(f"    probes: {probes}")


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """Measurements worth reading after a run: the real-kernel boots (tests/kernel), CPython's own test suites
    (tests/test_cpython_suites.py) and the routes to randomness (tests/test_routes.py), one row per boot, run or
    route. ``URANDOM_SHIM_TABLES=0`` (the quick tier's) leaves them out."""
    if os.environ.get("URANDOM_SHIM_TABLES", "") == "0":
        return
    suites = _properties(terminalreporter, "cpython_suite")
    if suites:
        header = ("python", "condition", "tests run", "failures", "errors", "skipped", "modules")
        lines = [header] + [
            (
                r["python"],
                r["condition"],
                *(str(r[k]) for k in ("tests", "failures", "errors", "skipped")),
                r["modules"],
            )
            for r in sorted(suites, key=lambda r: (_version_key(r["python"]), r["modules"], r["condition"]))
        ]
        _table(terminalreporter, "CPython's own tests with urandom-shim active", lines)
    routes = _properties(terminalreporter, "route_result")
    policies = ("native", "pep524", "pep522", "legacy")
    for python, kernel in sorted({(r["python"], r["kernel"]) for r in routes}):
        cells: dict[str, dict[str, str]] = {}
        for r in routes:
            if (r["python"], r["kernel"]) == (python, kernel):
                cells.setdefault(r["route"], {})[r["policy"]] = r["got"] + (" (weak bytes)" if r["weak"] else "")
        table = [("route", *policies)] + [(route, *(row.get(p, "-") for p in policies)) for route, row in cells.items()]
        title = f"Every route to randomness while the CRNG is unready: Python {python}, {kernel}"
        _table(terminalreporter, title, table)
    _boot_table(terminalreporter)
    rows = _properties(terminalreporter, "kernel_result")
    if not rows:
        return
    header = ("python", "scenario", "EAGAIN first", "os.urandom(16)", "took", "CRNG after", "driver at", "CRNG init at")
    header += ("wall", "random+tempfile", "then")
    lines = [header] + [
        (
            r["python"],
            r["scenario"],
            "yes" if r["eagain"] else "NO",
            r["outcome"],
            f"{r['duration'] * 1000:.1f} ms",
            "unready" if r["after"] == "eagain" else r["after"],
            f"{r['boot']:.2f} s",
            "-" if r["crng_ready_at"] is None else f"{r['crng_ready_at']:.2f} s",
            f"{r['wall']:.2f} s",
            f"{r['imports'] * 1000:.0f} ms" if "imports" in r else "-",
            r.get("then", ""),
        )
        for r in sorted(rows, key=lambda r: (_version_key(r["python"]), r["scenario"]))
    ]
    _table(terminalreporter, "urandom-shim on a real booting kernel", lines)
    first = rows[0]
    terminalreporter.write_line(f"kernel {first['kernel']}, qemu {first['accel']}; times after /init are the guest's")
