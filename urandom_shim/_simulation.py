"""A simulated "kernel CRNG not initialised yet" state (docs/reference/environment.md, ``URANDOM_SHIM_SIMULATE``).

The machines that build and test this project have initialised CRNGs, and so do the laptops of the people who want to
know how their application behaves at early boot. A simulation makes the shim *believe* the CRNG is unready:

``URANDOM_SHIM_SIMULATE`` takes one of these forms:

``unready-forever``
    Unready for as long as the process lives.
``unready-until-file:PATH``
    Unready while ``PATH`` exists. Delete the file to make the CRNG "ready". Deterministic, so tests use it.
``unready-until-monotonic:T``
    Unready until ``time.monotonic()`` reaches ``T``. ``CLOCK_MONOTONIC`` is system-wide, so every process of the
    machine agrees on when the window closes.
``unready-for:SECONDS``
    Unready for SECONDS from the moment this interpreter activates the shim. The first process turns it into
    ``unready-until-monotonic:T`` in ``os.environ``, so children close their window at the same moment as their parent.

The variable is inherited by child processes, like the kernel state is shared by every process. The state is one-way:
once a process has seen "ready" it stays ready, as the kernel does. A simulation can only make randomness less
available: the kernel is never touched, and every byte the shim returns still comes from the real kernel.
"""

import os
import time

from . import _messages
from ._state import UNREAD
from ._state import state as _state

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Callable

ENV = "URANDOM_SHIM_SIMULATE"  # _config.ENV_SIMULATE, which imports this module's package siblings
#: Seconds after which a wait on the simulated CRNG ends with ``BlockingIOError`` in this process: the pytest plugin
#: sets it for the child processes of a test, which can't see whether the test will ever make the CRNG ready.
BOUND_ENV = "URANDOM_SHIM_WAIT_BOUND"  # _config.ENV_WAIT_BOUND
#: The attribute set on the ``BlockingIOError`` of a wait that :data:`BOUND_ENV` ended. Whoever waited for a call
#: records it as timed out and raised: without a record, the pytest plugin's watch can't tell that a child of the test
#: died of the policy, and a test that polls for that child would poll forever.
BOUNDED = "_urandom_shim_bounded"

FORMS = (
    "'unready-forever'",
    "'unready-until-file:PATH'",
    "'unready-until-monotonic:SECONDS'",
    "'unready-for:SECONDS'",
)


class Simulation:
    """One parsed simulation. ``unready()`` answers whether the simulated CRNG is still uninitialised."""

    __slots__ = ("bound", "deadline", "ends", "path", "spec", "watcher")

    def __init__(self, spec: str, *, path: "str | None" = None, deadline: "float | None" = None) -> None:
        self.spec = spec
        self.path = path
        self.deadline = deadline
        #: Called with the seconds waited so far and the wait's timeout (None: none), each time a wait in this
        #: process looks again while the simulated CRNG is unready. The pytest plugin sets it to end a wait that
        #: nothing can end (it raises).
        self.watcher: Callable[[float, float | None], None] | None = None
        #: Whether something may still end the window (the pytest plugin's answer for its test), if known.
        self.ends: Callable[[], bool] | None = None
        #: :data:`BOUND_ENV`'s seconds, when this process is a child of a test under the pytest plugin.
        self.bound: float | None = None

    def endless(self) -> bool:
        """Whether nothing will ever end this simulated window: ``unready-forever``; a window the pytest plugin
        says nothing in its test will end; or one this process can't see the end of (a child of a test)."""
        if self.ends is not None:
            return not self.ends()
        if self.bound is not None:
            return True
        return self.path is None and self.deadline is None

    def bounded_watch(self, waited: float, timeout: "float | None") -> None:
        """The watcher of a child of a test under the pytest plugin: a wait that outlasts :attr:`bound` raises."""
        bound = self.bound
        if bound is None or waited < bound or (timeout is not None and timeout <= bound):
            return
        text = _messages.SIMULATED_WAIT_BOUND.format(
            waited=waited, variable=ENV, spec=self.spec, bound_variable=BOUND_ENV, bound=bound
        )
        error = BlockingIOError(11, f"{_messages.PEP522_TEXT}. {text}")  # EAGAIN, as a refusal is
        setattr(error, BOUNDED, True)  # the waiter records the call, which the plugin's watch of the test looks for
        raise error

    def unready(self) -> bool:
        if self.path is not None:
            try:
                os.stat(self.path)
            except OSError:
                return False
            return True
        if self.deadline is not None:
            return time.monotonic() < self.deadline
        return True  # unready-forever

    def poll_interval(self) -> float:
        """How long a waiter may sleep before it looks again."""
        if self.deadline is not None:
            return max(0.0, min(0.05, self.deadline - time.monotonic()))
        return 0.01

    def __repr__(self) -> str:
        return f"Simulation({self.spec!r})"


class InvalidSimulation(ValueError):
    """The simulation spec is malformed. The message says what was expected."""


class RelativePathWithoutDirectory(InvalidSimulation):
    """``unready-until-file:`` names a relative path, and the current directory no longer exists."""


def parse(spec: str) -> "Simulation":
    """Parse a simulation spec (the value of ``URANDOM_SHIM_SIMULATE``). Raises :class:`InvalidSimulation`."""
    kind, sep, arg = spec.partition(":")
    if kind == "unready-forever" and not sep:
        return Simulation(spec)
    if kind == "unready-until-file" and arg:
        try:
            return Simulation(spec, path=os.path.abspath(arg))
        except OSError:  # os.getcwd() fails: the directory it is relative to was deleted
            raise RelativePathWithoutDirectory(arg) from None
    if kind in ("unready-until-monotonic", "unready-for") and arg:
        try:
            seconds = float(arg)
        except ValueError:
            seconds = float("nan")
        if seconds == seconds and seconds not in (float("inf"), float("-inf")) and seconds >= 0:  # finite, >= 0
            if kind == "unready-for":
                deadline = time.monotonic() + seconds
                return Simulation(f"unready-until-monotonic:{deadline!r}", deadline=deadline)
            return Simulation(spec, deadline=seconds)
    raise InvalidSimulation(_messages.SIMULATION_FORMS.format(listed=", ".join(FORMS)))


def problem(spec: str, exc: "InvalidSimulation") -> str:
    """The one line that reports a malformed ``URANDOM_SHIM_SIMULATE``."""
    if isinstance(exc, RelativePathWithoutDirectory):
        return _messages.SIMULATION_PATH_WITHOUT_DIRECTORY.format(env=ENV, spec=spec)
    return _messages.BAD_SIMULATION.format(env=ENV, spec=spec, exc=exc)


def current(report: bool = True) -> "Simulation | None":
    """The simulation this process is under, read from the environment once. Bad values are reported (unless not
    ``report``: a subinterpreter's main interpreter has reported them) and ignored."""
    if _state.simulation is UNREAD:
        _state.simulation = None
        spec = os.environ.get(ENV)
        if spec:  # empty counts as not set, as for every variable of ours
            try:
                sim = parse(spec)
            except InvalidSimulation as exc:
                from ._messages import emit

                if report:
                    emit(problem(spec, exc))
            else:
                if sim.spec != spec:  # pin a relative window so that children share this process's deadline
                    os.environ[ENV] = sim.spec
                _bound(sim)
                _state.simulation = sim
    found = _state.simulation
    return found if isinstance(found, Simulation) else None


def _bound(sim: "Simulation") -> None:
    """Apply :data:`BOUND_ENV` to ``sim``, if it is set; a bad value is one line, and ignored."""
    text = os.environ.get(BOUND_ENV)
    if not text:
        return
    try:
        bound = float(text)
    except ValueError:
        bound = float("nan")
    if bound != bound or bound in (float("inf"), float("-inf")) or bound < 0:
        from ._messages import emit

        emit(_messages.BAD_WAIT_BOUND.format(variable=BOUND_ENV, text=text))
        return
    sim.bound = bound
    sim.watcher = sim.bounded_watch


def override(sim: "Simulation | None") -> None:
    """Replace this process's simulation (for tests and the pytest plugin). Also updates the environment for children.

    This is the one way to go back from "ready" to "unready", and it exists only because a test suite needs a fresh
    kernel per test. Call :func:`urandom_shim._readiness.reset` afterwards so the cached "ready" is forgotten.
    """
    _state.simulation = sim
    if sim is None:
        os.environ.pop(ENV, None)
    else:
        os.environ[ENV] = sim.spec
