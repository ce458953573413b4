"""urandom-shim's pytest plugin: test an application as if the kernel CRNG were not initialised yet.

PYTEST_DONT_REWRITE

One piece, though over 500 lines: the ``pytest11`` entry point, where pytest finds every hook and fixture.

pytest loads it through the ``pytest11`` entry point ``urandom_shim``. On its own it only registers two fixtures, a
marker and two options; nothing is patched until a test asks for it:

``urandom_policy(policy=None, **options)``
    A fixture: a callable that applies a policy (and ``timeout``, ``on_timeout``, ``warn_after``,
    ``seed_random_instances``) for the rest of the test. Child processes get it through ``URANDOM_POLICY`` and the
    ``URANDOM_SHIM_*`` variables.
``system_rng``
    A fixture: the simulated kernel CRNG. ``unready()``, ``ready()``, ``ready_after(seconds)``, ``state``. Child
    processes inherit it through ``URANDOM_SHIM_SIMULATE``.
``@pytest.mark.urandom(policy="pep522", unready=True, **options)``
    Shorthand for both.
``--urandom-policy=POLICY`` (ini ``urandom_policy``), ``--urandom-timeout=SECONDS`` (ini ``urandom_timeout``)
    Every test without the marker runs under POLICY with an unready CRNG: the whole suite "as if at early boot".
    The run's events go to one file, and the terminal summary ends with their report.
``--urandom-report-only`` (ini ``urandom_report_only``)
    With ``--urandom-policy``: every test behaves as ``native``, and the report says what POLICY would have done.

After each test everything is put back, even when the test or a fixture fails: ``os.urandom``, ``random``,
``secrets``, the environment variables, the simulated state, and whatever policy was in force before.
"""

from __future__ import annotations

import os
import sys

import pytest

from . import _messages

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Callable, Iterator


def variables() -> tuple[str, ...]:
    """The variables a test may change through the plugin; all are restored afterwards. (A function: an unused
    plugin imports nothing of the package but its messages.)"""
    from . import _config

    return (*_config.KEY_VARIABLES, _config.ENV_SIMULATE, _config.ENV_WAIT_BOUND)


#: Modules whose functions a policy replaces: a snapshot of their namespaces is put back after each test.
PATCHED_MODULES = ("posix", "os", "random", "secrets", "urllib.request")
OPTIONS = ("timeout", "on_timeout", "warn_after", "seed_random_instances", "mode", "events")
#: The variable that hands the run's events file to pytest-xdist's workers (and to every child process).
EVENTS_VARIABLE = "URANDOM_SHIM_EVENTS"
#: Where a test's policy comes from, as every message names it.
MARKER, FIXTURE, OPTION = "@pytest.mark.urandom", "urandom_policy()", "--urandom-policy"
#: The longest a wait may last in a test whose simulated CRNG something could still make ready (a ready_after()
#: timer, or another thread holding system_rng). Past it the test fails rather than hang the run; a wait that
#: nothing can end fails at once.
WAIT_BOUND = 60.0
#: The longest a wait on the test's simulated CRNG may last in a child process of the test
#: (``URANDOM_SHIM_WAIT_BOUND``): a child can't see whether the test will make the CRNG ready, so past this its
#: wait raises BlockingIOError rather than hang the run.
CHILD_WAIT_BOUND = 10.0
#: What to do about a wait that can't end, in every message that ends one.
REMEDIES = _messages.PLUGIN_REMEDIES


class SystemRNG:
    """The simulated kernel CRNG of one test. It starts as the real kernel (ready); child processes inherit it."""

    def __init__(self, state: _TestState) -> None:
        self._state = state

    def unready(self) -> None:
        """From now on the CRNG is not initialised, in this process and in children started from now on."""
        self._state.unready()

    def ready(self) -> None:
        """The CRNG is initialised now: waiting calls return, and every process sharing the state sees it."""
        self._state.ready()

    def ready_after(self, seconds: float) -> None:
        """Unready now, and ready ``seconds`` from now (a timer thread ends the window)."""
        self._state.ready_after(seconds)

    @property
    def state(self) -> str:
        """``"ready"``, ``"unready"`` or ``"unknown"``, as :func:`urandom_shim.system_rng_state` says."""
        from ._readiness import state

        return state()

    def is_ready(self) -> bool:
        return self.state != "unready"

    def __repr__(self) -> str:
        return f"<SystemRNG {self.state}>"


class _TestState:
    """What one test changes through the plugin, and how to put it all back."""

    def __init__(self) -> None:
        from . import _activation, _readiness, _simulation, _state

        self._activation = _activation
        self._readiness = _readiness
        self._simulation = _simulation
        self._state = _state
        self.saved_env = {name: os.environ.get(name) for name in variables()}
        self.saved_state = _state.snapshot()
        self.saved_namespaces = _snapshot()
        self.overrides: dict[str, Any] | None = None
        self.flag: str | None = None
        self.timers: list[Any] = []
        #: Whether the test holds ``system_rng`` (so another of its threads may make the CRNG ready), and where
        #: its policy came from, for the message that ends a wait.
        self.handle_given = False
        self.origin = FIXTURE

    # -- the policy ------------------------------------------------------------------------------------------------

    def set_policy(self, policy: str | None, options: dict[str, Any]) -> None:
        """Apply ``policy`` and ``options`` for the rest of the test. A bad value raises ValueError and an unknown
        option TypeError, each naming :attr:`origin` (the marker, the fixture or ``--urandom-policy``)."""
        unknown = sorted(set(options) - set(OPTIONS))
        if unknown:
            valid = ("policy", "unready", *OPTIONS) if self.origin == MARKER else ("policy", *OPTIONS)
            raise TypeError(
                _messages.PLUGIN_UNKNOWN_OPTIONS.format(origin=self.origin, unknown=unknown, listed=", ".join(valid))
            )
        overrides = dict(options, policy=policy) if policy is not None else dict(options)
        self._activation.apply(overrides, self.origin)  # a bad value raises here, before anything has changed
        self.overrides = overrides
        from ._config import variables

        os.environ.update(variables(overrides))  # children get the same settings

    def _apply(self) -> None:
        """(Re)install the policy for the current state: patches go in only while the CRNG is unready."""
        self._activation.apply(dict(self.overrides or {}), self.origin)

    # -- the simulated kernel --------------------------------------------------------------------------------------

    def unready(self) -> None:
        self._cancel_timers()
        if self.flag is None:
            import tempfile

            handle, self.flag = tempfile.mkstemp(prefix="urandom-shim-unready-")
            os.close(handle)
            _remember(self.flag)
        elif not os.path.exists(self.flag):
            open(self.flag, "w").close()
        simulation = self._simulation.parse(f"unready-until-file:{self.flag}")
        simulation.watcher = self._watch
        simulation.ends = self._may_end
        self._simulation.override(simulation)
        os.environ[self._simulation.BOUND_ENV] = repr(CHILD_WAIT_BOUND)  # the guard, for the test's children
        self._readiness.reset()
        self._apply()

    def _may_end(self) -> bool:
        """Whether something in this test may still make the simulated CRNG ready: a ready_after() timer, or
        another thread of a test that holds system_rng."""
        import threading

        return any(timer.is_alive() for timer in self.timers) or (self.handle_given and threading.active_count() > 1)

    def _watch(self, waited: float, timeout: float | None) -> None:
        """Called by every wait on this test's simulated CRNG: fail the test rather than let the run hang."""
        import threading

        if timeout is not None and timeout <= WAIT_BOUND:
            return  # the wait ends by itself (BlockingIOError, or a fallback)
        if any(timer.is_alive() for timer in self.timers):
            bound, why = WAIT_BOUND, _messages.PLUGIN_TIMER_PENDING
        elif self.handle_given and threading.active_count() > 1:
            bound, why = WAIT_BOUND, _messages.PLUGIN_NO_THREAD_MADE_READY
        else:
            bound, why = 0.0, _messages.PLUGIN_NOTHING_MAKES_READY
        if waited < bound:
            return
        policy = (self.overrides or {}).get("policy")
        under = f"policy {policy!r}" if policy else _messages.PLUGIN_CONFIGURED_POLICY
        waited_for = _messages.PLUGIN_WAITED_THE_BOUND.format(waited=waited) if bound else "would wait forever for"
        pytest.fail(
            _messages.PLUGIN_WAIT_ENDED.format(
                waited_for=waited_for, why=why, under=under, origin=self.origin, remedies=REMEDIES
            ),
            pytrace=False,
        )

    def ready(self) -> None:
        self._cancel_timers()
        if self.flag is not None and os.path.exists(self.flag):
            os.unlink(self.flag)
        self._readiness.is_ready()  # see it now: waiters return and every original is restored at once

    def ready_after(self, seconds: float) -> None:
        import threading

        self.unready()
        timer = threading.Timer(seconds, self.ready)
        timer.daemon = True
        self.timers.append(timer)
        timer.start()

    def _cancel_timers(self) -> None:
        for timer in self.timers:
            timer.cancel()
        self.timers.clear()

    # -- putting it back -------------------------------------------------------------------------------------------

    def close(self) -> None:
        self._cancel_timers()
        for name, value in self.saved_env.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        self._state.restore(self.saved_state)  # takes out the test's engine, and puts back whatever was in force
        _restore(self.saved_namespaces)
        if self.flag is not None:
            _forget(self.flag)


# -- temporary files, removed however the run ends --------------------------------------------------------------------

#: The files this process made (a test's simulated-kernel flag, the run's events file) and has not removed yet.
_TEMPORARY: set[str] = set()
#: The process that made them: a forked child that exits normally, or gets SIGTERM, must not remove its parent's.
_OWNER: list[int] = []
_HANDLERS_INSTALLED: list[bool] = []


def _remember(path: str) -> None:
    """Remove ``path`` however the run ends: normally (teardown, or at exit after Ctrl-C), or on SIGTERM."""
    _TEMPORARY.add(path)
    _OWNER[:] = [os.getpid()]
    if not _HANDLERS_INSTALLED:
        _HANDLERS_INSTALLED.append(True)
        import atexit

        atexit.register(_clean_up)
        _on_sigterm()


def _forget(path: str) -> None:
    _TEMPORARY.discard(path)
    try:
        os.unlink(path)
    except OSError:
        pass


def _clean_up() -> None:
    if _OWNER != [os.getpid()]:
        return
    for path in list(_TEMPORARY):
        _forget(path)


def _on_sigterm() -> None:
    """On SIGTERM, which ends a process without running ``atexit``: remove the files, then let the signal do what
    it did before (the default ends the process, by the signal, as if we were not there)."""
    import signal

    try:
        previous = signal.getsignal(signal.SIGTERM)
    except (AttributeError, ValueError):
        return

    def handler(signum: int, frame: Any) -> None:
        _clean_up()
        if callable(previous):
            previous(signum, frame)
            return
        signal.signal(signum, signal.SIG_DFL if previous in (None, signal.SIG_DFL) else previous)
        os.kill(os.getpid(), signum)

    if previous is signal.SIG_IGN:
        return
    try:
        signal.signal(signal.SIGTERM, handler)
    except ValueError:  # not the main thread: atexit and teardown still remove the files
        pass


def _snapshot() -> list[tuple[object, dict[str, object]]]:
    saved: list[tuple[object, dict[str, object]]] = []
    for name in PATCHED_MODULES:
        module = sys.modules.get(name)
        if module is not None:
            saved.append((module, dict(vars(module))))
    random_module = sys.modules.get("random")
    if random_module is not None:
        saved.append((random_module.Random, {"seed": vars(random_module.Random)["seed"]}))
    return saved


def _restore(saved: list[tuple[object, dict[str, object]]]) -> None:
    """Put back every function attribute a test or a policy replaced in the patched modules."""
    for owner, namespace in saved:
        for name, value in namespace.items():
            if callable(value) and getattr(owner, name, None) is not value:
                setattr(owner, name, value)


# -- fixtures ----------------------------------------------------------------------------------------------------------


@pytest.fixture
def _urandom_shim_state() -> Iterator[_TestState]:
    state = _TestState()
    try:
        yield state
    finally:
        state.close()


@pytest.fixture
def system_rng(_urandom_shim_state: _TestState) -> SystemRNG:
    """The simulated kernel CRNG for this test: ``unready()``, ``ready()``, ``ready_after(seconds)``, ``state``."""
    _urandom_shim_state.handle_given = True
    return SystemRNG(_urandom_shim_state)


@pytest.fixture
def urandom_policy(_urandom_shim_state: _TestState) -> Callable[..., None]:
    """A callable, ``urandom_policy("pep522", timeout=1.0)``: that policy for the rest of the test."""

    def apply(policy: str | None = None, **options: Any) -> None:
        _urandom_shim_state.origin = FIXTURE
        _urandom_shim_state.set_policy(policy, options)

    return apply


@pytest.fixture(autouse=True)
def _urandom_shim_marker(request: pytest.FixtureRequest) -> Iterator[None]:
    """Applies ``@pytest.mark.urandom`` and ``--urandom-policy``; does nothing at all for other tests."""
    marker = request.node.get_closest_marker("urandom")
    suite_policy = _suite_policy(request.config)
    if marker is None and suite_policy is None:
        yield
        return
    if marker is not None:
        options = dict(marker.kwargs)
        if len(marker.args) > 1:
            pytest.fail(
                _messages.PLUGIN_MARKER_POSITIONALS.format(
                    marker=MARKER, count=len(marker.args), listed=", ".join(repr(a) for a in marker.args)
                ),
                pytrace=False,
            )
        if marker.args:
            if "policy" in options:
                pytest.fail(_messages.PLUGIN_POLICY_TWICE.format(marker=MARKER), pytrace=False)
            options["policy"] = marker.args[0]
        unready = options.pop("unready", True)
        policy = options.pop("policy", None)
    else:
        policy, options, unready = suite_policy, _suite_options(request.config), True
    state: _TestState = request.getfixturevalue("_urandom_shim_state")
    state.origin = MARKER if marker is not None else OPTION
    if unready:
        state.unready()
    try:
        state.set_policy(policy, options)
    except (TypeError, ValueError) as exc:
        pytest.fail(f"urandom-shim: {exc}", pytrace=False)
    yield


# -- options -----------------------------------------------------------------------------------------------------------


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("urandom-shim", "urandom-shim: early-boot randomness")
    group.addoption(
        "--urandom-policy",
        metavar="POLICY",
        default=None,
        help="run every test under POLICY (native, pep524, pep522, legacy) with an unready simulated kernel CRNG",
    )
    group.addoption(
        "--urandom-report-only",
        action="store_true",
        default=None,
        help="with --urandom-policy: every test behaves as native, and the report says what POLICY would have done",
    )
    group.addoption(
        "--urandom-timeout",
        metavar="SECONDS",
        default=None,
        help="with --urandom-policy: the longest any wait may last (a hang under pep524 becomes BlockingIOError)",
    )
    parser.addini("urandom_policy", "like --urandom-policy", default=None)
    parser.addini("urandom_timeout", "like --urandom-timeout", default=None)
    parser.addini("urandom_report_only", "like --urandom-report-only", type="bool", default=False)


def pytest_configure(config: pytest.Config) -> None:
    # The project under test is pytest's: its configuration file's directory, else its rootdir. The same for
    # `pytest` and `python -m pytest`, and from any subdirectory.
    from . import _sources

    inipath = getattr(config, "inipath", None)
    if inipath is not None:
        _sources.set_project_root(str(inipath.parent), _messages.RULE_PYTEST_CONFIG_FILE.format(inipath=inipath))
    else:
        _sources.set_project_root(str(config.rootpath), f"pytest: its rootdir, {config.rootpath}")
    config.addinivalue_line(
        "markers",
        "urandom(policy=None, unready=True, **options): run the test under an urandom-shim policy, with the "
        "simulated kernel CRNG unready (options: timeout, on_timeout, warn_after, seed_random_instances)",
    )
    policy = _suite_policy(config)
    timeout = config.getoption("urandom_timeout", None) or config.getini("urandom_timeout")
    if policy is None and timeout:
        raise pytest.UsageError(_messages.PLUGIN_TIMEOUT_WITHOUT_POLICY)
    if policy is None and _report_only(config):
        raise pytest.UsageError(_messages.PLUGIN_REPORT_ONLY_WITHOUT_POLICY)
    if policy is not None:
        _start_collecting(config)
        from ._config import KEYS, InvalidValue

        for option, value, key in (("--urandom-policy", policy, "policy"), ("--urandom-timeout", timeout, "timeout")):
            try:
                if value:
                    KEYS[key].read(str(value), from_text=True)
            except InvalidValue as exc:
                raise pytest.UsageError(f"urandom-shim: {option}={exc}") from None


def pytest_unconfigure(config: pytest.Config) -> None:
    from . import _sources

    _sources.set_project_root(None)
    created = config.stash.get(_EVENTS_CREATED, None)
    if created is not None:
        os.environ.pop(EVENTS_VARIABLE, None)
        _forget(created)


#: The events file of this run, where this process made it (the controller, under pytest-xdist).
_EVENTS_CREATED = pytest.StashKey[str]()


def _start_collecting(config: pytest.Config) -> None:
    """Under ``--urandom-policy``, the run's events (every test's, and their child processes') go to one file, which
    the terminal summary reports. pytest-xdist's workers inherit the controller's, through the environment."""
    if os.environ.get(EVENTS_VARIABLE) and hasattr(config, "workerinput"):
        return  # a worker: the controller's file
    import tempfile

    handle, path = tempfile.mkstemp(prefix="urandom-shim-events-", suffix=".jsonl")
    os.close(handle)
    _remember(path)
    os.environ[EVENTS_VARIABLE] = path
    config.stash[_EVENTS_CREATED] = path


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    """The report of the run's events: which tests' code asked for randomness in the window, from where, and what
    each policy would make of it."""
    path = config.stash.get(_EVENTS_CREATED, None)
    if path is None:
        return
    try:
        from .report import gather
        from .report import text as report_text

        # The run's window is the plugin's simulation: the real kernel's `crng init done` is no part of its story.
        report = gather.gather(path, journal=False, simulated="--urandom-policy")
        lines = report_text.lines(report)
    except Exception as exc:  # noqa: BLE001 - a summary must never fail a run
        lines = [_messages.PLUGIN_REPORT_FAILED.format(name=type(exc).__name__, exc=exc)]
    terminalreporter.write_sep("=", "urandom-shim report")
    for text in lines:
        terminalreporter.write_line(text)


def pytest_report_header(config: pytest.Config) -> str | None:
    policy = _suite_policy(config)
    if policy is None:
        return None
    timeout = _suite_options(config).get("timeout")
    bound = f", waits bounded to {timeout} s" if timeout is not None else ""
    if _report_only(config):
        bound += _messages.PLUGIN_HEADER_REPORT_ONLY
    effective = _effective_policy(policy)
    if effective is not None and effective[0] != policy:
        runs = f"policy {effective[0]!r} ({effective[1]})"  # the source says what it raised, and from what
    else:
        runs = f"policy {policy!r}"
    return _messages.PLUGIN_HEADER.format(runs=runs, bound=bound)


def _effective_policy(policy: str) -> tuple[str, str] | None:
    """The policy the tests really get for ``--urandom-policy=policy`` (a floor can raise it), and why."""
    try:
        from ._config import resolve

        settings, _problems = resolve(overrides={"policy": policy}, overrides_source=OPTION)
        return settings.policy_value.name, settings.policy.source
    except Exception:  # noqa: BLE001 - the header must never break a run
        return None


def _suite_policy(config: pytest.Config) -> str | None:
    value = config.getoption("urandom_policy", None) or config.getini("urandom_policy")
    return str(value) if value else None


def _report_only(config: pytest.Config) -> bool:
    return bool(config.getoption("urandom_report_only", None) or config.getini("urandom_report_only"))


def _suite_options(config: pytest.Config) -> dict[str, Any]:
    """The options that go with --urandom-policy: ``timeout`` as a number (pytest_configure has validated it), the
    mode, and the run's events file."""
    options: dict[str, Any] = {}
    timeout = config.getoption("urandom_timeout", None) or config.getini("urandom_timeout")
    if timeout:
        from ._config import parse_seconds_text

        options["timeout"] = parse_seconds_text(str(timeout))
    if _report_only(config):
        options["mode"] = "report"
    events = os.environ.get(EVENTS_VARIABLE)
    if events:
        options["events"] = events
    return options
