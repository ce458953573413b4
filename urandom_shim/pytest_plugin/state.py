"""Per-test state: what one test changes through the plugin (its policy, its simulated kernel CRNG) and putting it all
back; the fixtures that give it; and the policy of ``--urandom-policy``, engaged once and lent to each test.

PYTEST_DONT_REWRITE

After each test everything is put back, even when the test or a fixture fails: ``os.urandom``, ``random``,
``secrets``, the environment variables, the simulated state, and whatever policy was in force before.
"""

from __future__ import annotations

import os
import sys
import threading

import pytest

from .. import _messages
from . import run as _run
from .options import FIXTURE, MARKER, OPTION, POLICY_OPTIONS, RECORDS_SOURCE, options

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Callable, Iterator

    from .._policies import Settings
    from .run import Run


def variables() -> tuple[str, ...]:
    """The variables a test may change through the plugin; all are restored afterwards. (A function: an unused
    plugin imports nothing of the package but its messages.)"""
    from .. import _config, _events

    return (
        *_config.KEY_VARIABLES, _config.ENV_SIMULATE, _config.ENV_WAIT_BOUND, _events.LINES_VARIABLE,
        _config.ENV_GIVEN_AS, _events.PLUGIN_TEST_VARIABLE, _config.ENV_PROBLEM_LINES, _config.ENV_EXIT_NOTES,
    )  # fmt: skip


def child_variables(overrides: dict[str, Any], sources: dict[str, str], origin: str) -> dict[str, str]:
    """The variables that give a test's child processes its settings, and the sources they name them by (the
    option, ini key, marker or fixture each came from, not the variable): so that a child's records say what each
    policy would do, as the test's own do, rather than keep the variable's policy under each."""
    from .._config import ENV_GIVEN_AS, KEYS, variables

    given = variables(overrides)
    lines = ["pytest"]
    for key, value in given.items():
        name = next(k for k, record in KEYS.items() if record.variable == key)
        lines.append(f"{sources.get(name, origin)}\t{key}\t{value}")
    return {**given, ENV_GIVEN_AS: "\n".join(lines)}


#: Modules whose functions a policy replaces: a snapshot of their namespaces is put back after each test.
PATCHED_MODULES = ("posix", "os", "random", "secrets", "urllib.request")
#: The longest a wait may last in a test whose simulated CRNG something could still make ready (a ready_after()
#: timer, or another thread holding system_rng). Past it the test fails rather than hang the run; a wait that
#: nothing can end fails at once.
WAIT_BOUND = 60.0
#: The longest a wait on the test's simulated CRNG may last in a child process of a test that holds ``system_rng``
#: (``URANDOM_SHIM_WAIT_BOUND``): such a child can't see whether the test will make the CRNG ready. In a child of
#: any other test nothing can, and the bound is 0: its wait raises at once.
CHILD_WAIT_BOUND = 10.0


class SystemRNG:
    """The simulated kernel CRNG of one test. It starts as the real kernel (ready); child processes inherit it."""

    def __init__(self, state: TestState) -> None:
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
        from .._readiness import state

        return state()

    def is_ready(self) -> bool:
        return self.state != "unready"

    def __repr__(self) -> str:
        return f"<SystemRNG {self.state}>"


def relabel(settings: Settings, sources: dict[str, str], given_as: str) -> None:
    """Name each setting's own option or key: ``apply()`` gives every value it is given one source."""
    for key, source in sources.items():
        setting = getattr(settings, key)
        if setting.source == given_as:
            setting.source = source


class TestState:
    """What one test changes through the plugin, and how to put it all back."""

    def __init__(self, run: Run, nodeid: str) -> None:
        self.closed = False
        run.open_tests.append(self)
        from .. import _activation, _readiness, _simulation, _state

        self._activation = _activation
        self._readiness = _readiness
        self._simulation = _simulation
        self._state = _state
        self.run = run
        self.nodeid = nodeid
        #: The thread that runs the test: where a failure of one of its child processes is raised.
        self.thread = threading.get_ident()
        self.saved_env = {name: os.environ.get(name) for name in variables()}
        self.saved_state = _state.snapshot()
        self.saved_namespaces = _snapshot()
        self.saved_excepthook = sys.excepthook  # a refusal in the test's process wraps it (_runtime)
        from .._events import PLUGIN_TEST_VARIABLE

        os.environ[PLUGIN_TEST_VARIABLE] = nodeid  # names the test in its records, whatever becomes of pytest's own
        self.overrides: dict[str, Any] | None = None
        self.flag: str | None = None
        self.timers: list[Any] = []
        #: Whether the test holds ``system_rng`` (so another of its threads may make the CRNG ready), and where
        #: its policy came from, for the message that ends a wait.
        self.handle_given = False
        self.origin = FIXTURE
        #: The run's policy, when the test has it from ``--urandom-policy``.
        self.suite: Suite | None = None
        #: Whether the test named its own events file (``events=``), which then keeps its own source.
        self.own_events = False

    # -- the policy ------------------------------------------------------------------------------------------------

    def set_policy(self, policy: str | None, given: dict[str, Any]) -> None:
        """Apply ``policy`` and ``given`` options for the rest of the test. A bad value raises ValueError and an
        unknown option TypeError, each naming :attr:`origin` (the marker, the fixture or ``--urandom-policy``)."""
        unknown = sorted(set(given) - set(POLICY_OPTIONS))
        if unknown:
            valid = ("policy", "unready", *POLICY_OPTIONS) if self.origin == MARKER else ("policy", *POLICY_OPTIONS)
            raise TypeError(
                _messages.PLUGIN_UNKNOWN_OPTIONS.format(origin=self.origin, unknown=unknown, listed=", ".join(valid))
            )
        overrides = dict(given, policy=policy) if policy is not None else dict(given)
        self.own_events = "events" in given
        self._engage(overrides)  # a bad value raises here, before anything changes
        self.overrides = overrides
        self.suite = None
        sources = options(self.run.config).sources() if self.origin == OPTION else {}
        os.environ.update(child_variables(overrides, sources, self.origin))  # children get the same settings
        os.environ.update(self.run.child_environment())

    def _engage(self, overrides: dict[str, Any]) -> None:
        """(Re)install the policy for the current state (patches go in only while the CRNG is unready), with the
        run's events file unless the test named its own."""
        if "events" not in overrides:
            overrides["events"] = self.run.records().path
        sources = {} if self.own_events else {"events": RECORDS_SOURCE}
        if self.origin == OPTION:
            sources = options(self.run.config).sources()
        settings = self._activation.apply(dict(overrides), self.origin, not self.run.options.report_only)
        relabel(settings, sources, self.origin)

    # -- the simulated kernel --------------------------------------------------------------------------------------

    def unready(self, ends_later: bool = False) -> None:
        self._cancel_timers()
        if self.flag is None:
            self.flag = self.run.new_flag()
        elif not os.path.exists(self.flag):
            open(self.flag, "w").close()
        simulation = self._simulation.parse(f"unready-until-file:{self.flag}")
        simulation.watcher = self._watch
        simulation.ends = self._may_end
        self._simulation.override(simulation)
        bound = CHILD_WAIT_BOUND if ends_later or self.handle_given else 0.0
        os.environ[self._simulation.BOUND_ENV] = repr(bound)  # the guard, for the test's children
        os.environ.update(self.run.child_environment())
        self._readiness.reset()
        self._engage(dict(self.overrides or {}))

    def _may_end(self) -> bool:
        """Whether something in this test may still make the simulated CRNG ready: a ready_after() timer, or
        another thread of a test that holds system_rng."""
        return any(timer.is_alive() for timer in self.timers) or (self.handle_given and _other_threads())

    def _watch(self, waited: float, timeout: float | None) -> None:
        """Called by every wait on this test's simulated CRNG: fail the test rather than let the run hang."""
        if timeout is not None and timeout <= WAIT_BOUND:
            return  # the wait ends by itself (BlockingIOError, or a fallback)
        if any(timer.is_alive() for timer in self.timers):
            bound, why = WAIT_BOUND, _messages.PLUGIN_TIMER_PENDING
        elif self.handle_given and _other_threads():
            bound, why = WAIT_BOUND, _messages.PLUGIN_NO_THREAD_MADE_READY
        else:
            bound, why = 0.0, _messages.PLUGIN_NOTHING_MAKES_READY
        if waited < bound:
            return
        from .waits import ended

        message = ended(self.nodeid, self.origin, str(self.run.config.rootpath), waited, bound, why)
        if threading.get_ident() != self.thread:
            # A thread the test started: it fails here, and the test too, if it is still waiting for the thread.
            self.run.watch().fail_later(message)
        pytest.fail(message, pytrace=False)

    def ready(self) -> None:
        self._cancel_timers()
        if self.flag is not None and os.path.exists(self.flag):
            os.unlink(self.flag)
        if self.suite is not None:
            self.suite.ready()
        self._readiness.is_ready()  # see it now: waiters return and every original is restored at once

    def ready_after(self, seconds: float) -> None:
        self.unready(ends_later=True)
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
        if self.closed:  # put back already, at the end of an interrupted session (pytest_sessionfinish)
            return
        self.closed = True
        if self in self.run.open_tests:
            self.run.open_tests.remove(self)
        self._cancel_timers()
        events = sys.modules.get("urandom_shim._events")
        if events is not None:
            events.flush()  # the test's repeat records, while its variables still keep them off stderr
        for name, value in self.saved_env.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        sys.excepthook = self.saved_excepthook
        self._state.restore(self.saved_state)  # takes out the test's engine, and puts back whatever was in force
        _restore(self.saved_namespaces)
        if self.suite is not None:
            self.suite.leave()
        if self.flag is not None:
            try:
                os.unlink(self.flag)
            except OSError:
                pass


def _other_threads() -> bool:
    """Whether a thread other than this one runs, that could make the CRNG ready (the plugin's own watch can't)."""
    current = threading.current_thread()
    return any(thread is not current and not getattr(thread, "urandom_shim_watch", False)
               for thread in threading.enumerate())  # fmt: skip


class Suite:
    """The policy of ``--urandom-policy``, resolved and engaged once and lent to each test it covers. Engaging
    walks the whole heap for references to os.urandom, so doing it per test made a suite's time grow with its heap.

    Between tests the policy is parked: its patches stay, and pass every call through, because the process counts
    the CRNG as ready (the one-way state a test's snapshot puts back). A test that makes the CRNG ready, or applies
    a policy of its own, takes it out; the next test it covers engages it again.
    """

    def __init__(self, run: Run) -> None:
        self.run = run
        self.options = options(run.config)
        self.overrides: dict[str, Any] = {**self.options.overrides(), "events": run.records().path}
        self.flag: str | None = None
        self.engine: Any = None
        self.simulation: Any = None
        self.saved: Any = None
        #: False when a policy was in force before the run (pytest under `urandom-shim simulate`): each test then
        #: applies the run's policy afresh, so that between tests the earlier one is back.
        self.parkable = True

    def engaged(self) -> bool:
        """Engage the policy unless it is still engaged; False where it can't be parked (then the test applies it)."""
        from .. import _activation, _readiness, _simulation, _state

        if self.saved is None:
            self.saved = _state.snapshot()
            self.parkable = not self.saved.engaged
        if not self.parkable:
            return False
        if self.engine is not None and self.engine.engaged and _state.state.engine is self.engine:
            return True
        if self.flag is None:
            self.flag = self.run.new_flag()
        else:
            open(self.flag, "a").close()
        simulation = _simulation.parse(f"unready-until-file:{self.flag}")
        previous = os.environ.get(_simulation.ENV)
        _simulation.override(simulation)
        if previous is None:  # a test sets it for its children, and puts it back
            os.environ.pop(_simulation.ENV, None)
        else:
            os.environ[_simulation.ENV] = previous
        _readiness.reset()
        settings = _activation.apply(dict(self.overrides), self.options.policy_source, not self.options.report_only)
        relabel(settings, self.options.sources(), self.options.policy_source)
        self.engine = _state.state.engine
        self.simulation = simulation
        _state.state.ready = True  # parked: every call passes through until a test takes it
        return True

    def enter(self, test: TestState, ends_later: bool) -> None:
        """Lend the policy to ``test``: unready from now on, in this process and the children it starts."""
        from .. import _readiness, _simulation

        simulation = self.simulation
        simulation.watcher = test._watch
        simulation.ends = test._may_end
        test.suite = self
        test.origin = OPTION
        test.overrides = dict(self.overrides)
        os.environ.update(child_variables(self.overrides, options(self.run.config).sources(), OPTION))
        os.environ.update(self.run.child_environment())
        os.environ[_simulation.ENV] = simulation.spec
        os.environ[_simulation.BOUND_ENV] = repr(CHILD_WAIT_BOUND if ends_later else 0.0)
        _readiness.reset()

    def ready(self) -> None:
        """A test makes the CRNG ready: the policy's window ends, and with it the engine (the next test re-engages)."""
        if self.flag is not None and os.path.exists(self.flag):
            os.unlink(self.flag)

    def leave(self) -> None:
        if self.simulation is not None:
            self.simulation.watcher = None
            self.simulation.ends = None

    def close(self) -> None:
        """The end of the run: whatever was in force before the run is back."""
        if self.saved is not None:
            from .. import _state

            _state.restore(self.saved)
            self.saved = None


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
    """Put back every function attribute a test or a policy replaced in the patched modules. Only the names whose
    value is not the one saved are looked at again: the rest (nearly all) are compared by identity alone."""
    for owner, namespace in saved:
        current = vars(owner)
        for name in [name for name, value in namespace.items() if current.get(name) is not value]:
            value = namespace[name]
            if callable(value):
                setattr(owner, name, value)


# -- fixtures ----------------------------------------------------------------------------------------------------------


_SUITE = pytest.StashKey[Suite]()


def suite(run: Run) -> Suite:
    found = run.config.stash.get(_SUITE, None)
    if found is None:
        found = run.config.stash[_SUITE] = Suite(run)
    return found


@pytest.fixture(scope="session")
def _urandom_shim_run(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Run]:
    """The run's state in this process, made by the first test that applies a policy."""
    found = _run.start(request.config, tmp_path_factory)
    try:
        yield found
    finally:
        made = request.config.stash.get(_SUITE, None)
        if made is not None:
            made.close()
        found.close()


@pytest.fixture
def _urandom_shim_state(request: pytest.FixtureRequest, _urandom_shim_run: Run) -> Iterator[TestState]:
    state = TestState(_urandom_shim_run, request.node.nodeid)
    _urandom_shim_run.begin(state)
    try:
        yield state
    finally:
        state.close()


@pytest.hookimpl(tryfirst=True)
def pytest_sessionfinish(session: pytest.Session) -> None:
    """A session that ends with a test's state still in force (Ctrl-C in the test, whose teardown then never ran):
    put it back first. pytest's own clean-up at the end (its temporary directories' `uuid4()` names) must not run
    under the test's policy and simulated CRNG, where it failed as a wait that nothing would end, or waited; the
    fixture's own clean-up comes later, and then finds nothing left to do."""
    found = _run.current(session.config)
    for state in reversed(list(found.open_tests) if found is not None else []):
        try:
            state.close()
        except Exception:  # noqa: BLE001 - the session ends all the same; the fixture's clean-up tries again
            state.closed = False


@pytest.fixture
def system_rng(_urandom_shim_state: TestState) -> SystemRNG:
    """The simulated kernel CRNG for this test: ``unready()``, ``ready()``, ``ready_after(seconds)``, ``state``."""
    _urandom_shim_state.handle_given = True
    return SystemRNG(_urandom_shim_state)


@pytest.fixture
def urandom_policy(_urandom_shim_state: TestState) -> Callable[..., None]:
    """A callable, ``urandom_policy("pep522", timeout=1.0)``: that policy for the rest of the test."""

    def apply(policy: str | None = None, **given: Any) -> None:
        _urandom_shim_state.origin = FIXTURE
        _urandom_shim_state.set_policy(policy, given)

    return apply


@pytest.fixture(autouse=True)
def _urandom_shim_marker(request: pytest.FixtureRequest) -> Iterator[None]:
    """Applies ``@pytest.mark.urandom`` and ``--urandom-policy``; does nothing at all for other tests."""
    marker = request.node.get_closest_marker("urandom")
    found = options(request.config)
    if marker is None and (found.policy is None or found.exempts(request.node.nodeid)):
        yield
        return
    run: Run = request.getfixturevalue("_urandom_shim_run")
    ends_later = "system_rng" in request.fixturenames
    if marker is not None:
        policy, given, unready = _marker_options(marker)
        state: TestState = request.getfixturevalue("_urandom_shim_state")
        state.origin = MARKER
        try:
            state.set_policy(policy, given)  # while the CRNG is ready: checked, not yet engaged
        except (TypeError, ValueError) as exc:
            pytest.fail(f"urandom-shim: {exc}", pytrace=False)
        if unready:
            state.unready(ends_later)
    elif suite(run).engaged():
        state = request.getfixturevalue("_urandom_shim_state")
        suite(run).enter(state, ends_later)
    else:
        state = request.getfixturevalue("_urandom_shim_state")
        state.origin = OPTION
        state.set_policy(found.policy, {k: v for k, v in found.overrides().items() if k != "policy"})
        state.unready(ends_later)
    yield


def _marker_options(marker: pytest.Mark) -> tuple[str | None, dict[str, Any], bool]:
    """The marker's policy, options and ``unready``; a misuse fails the test at setup, naming the marker."""
    given = dict(marker.kwargs)
    if len(marker.args) > 1:
        pytest.fail(
            _messages.PLUGIN_MARKER_POSITIONALS.format(
                marker=MARKER, count=len(marker.args), listed=", ".join(repr(a) for a in marker.args)
            ),
            pytrace=False,
        )
    if marker.args:
        if "policy" in given:
            pytest.fail(_messages.PLUGIN_POLICY_TWICE.format(marker=MARKER), pytrace=False)
        given["policy"] = marker.args[0]
    unready = given.pop("unready", True)
    policy = given.pop("policy", None)
    return policy, given, bool(unready)
