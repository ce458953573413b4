"""The runtime API (``urandom``, ``current_settings``, the CRNG state), and the waiting and refusing that the engine
(:mod:`urandom_shim._activation`) shares with it.

:mod:`urandom_shim` re-exports the public functions from here. ``wait_for_system_rng`` (``secrets.wait_for_system_rng``,
added under every policy) lives with the import hook that adds it, :mod:`urandom_shim._hooks`, which is all that
importing ``secrets`` loads on the ready path; it waits with :func:`wait_as_configured` from here. Its imports
are all at the top: its functions run inside waits, and a wait can run at interpreter shutdown, where an import in a
function fails.
"""

import os
import sys
import time

from . import _config, _messages, _readiness, _simulation
from ._policies import PEP522
from ._state import state

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from ._policies import Settings

#: The attribute that marks a BlockingIOError as the shim's own refusal (pep522, or a timeout), raised again from the
#: function the caller called with the shim's inner frames cut off: the traceback shows one frame of ours.
REFUSAL = "_urandom_shim_refusal"


# -- the public API ------------------------------------------------------------------------------------------------


def is_system_rng_ready() -> bool:
    """True when the kernel's random number generator is initialised (or a simulation says so, or it can't be known).

    One non-blocking ``getrandom()`` call until the answer is yes; free afterwards.
    """

    return _readiness.is_ready()


def system_rng_state() -> str:
    """``"ready"``, ``"unready"`` or ``"unknown"`` (no ``getrandom``, or denied: counts as ready)."""

    return _readiness.state()


def urandom(size: int, *, block: bool = True, timeout: "float | None" = None) -> bytes:
    """``size`` random bytes from the kernel, with the waiting chosen per call, whatever the configured policy.

    ``urandom(16)`` waits until the kernel's random number generator is initialised (PEP 524's semantics);
    ``urandom(16, block=False)`` raises ``BlockingIOError`` (PEP 522's) if it is not; ``urandom(16, timeout=2.0)``
    waits at most 2 s, then raises ``BlockingIOError``. It never returns bytes from an uninitialised generator, under
    any policy. Ctrl-C interrupts the wait. Where the kernel can't say (not Linux), it is ``os.urandom``.
    """
    result = _urandom_or_error(size, block, timeout)
    if isinstance(result, BaseException):
        raise result
    return result


def current_settings() -> "Settings":
    """The effective policy and options, each with its source. Resolved now if start-up did not need to."""
    engine = state.engine
    if engine is not None:
        settings: Settings = engine.settings
        return settings

    followed = _config.followed()  # a subinterpreter: what its main interpreter resolved at start-up
    if followed is not None and not isinstance(followed, bool):
        return followed
    settings, _problems = _config.resolve()
    return settings


# -- waiting and refusing ------------------------------------------------------------------------------------------


def refusal(text: str) -> "BlockingIOError":
    """A refusal to return bytes while the CRNG is unready: PEP 522's ``BlockingIOError`` (EAGAIN, as
    ``getrandom(GRND_NONBLOCK)`` reports it) with its text first, marked so that the function the caller called
    raises it with one frame of ours."""

    error = BlockingIOError(f"{_messages.PEP522_TEXT}. {text}")
    error.errno = 11
    setattr(error, REFUSAL, True)
    _note_if_uncaught()
    return error


def _note_if_uncaught() -> None:
    """Under the pytest plugin (:data:`urandom_shim._config.ENV_EXIT_NOTES`): if a refusal of the shim ends this
    process, uncaught, leave a note named by its pid, for the watch over the test's processes."""
    directory = os.environ.get(_config.ENV_EXIT_NOTES)
    previous = sys.excepthook
    if not directory or not os.path.isabs(directory) or getattr(previous, REFUSAL, False):
        return

    def excepthook(kind: "Any", value: "Any", traceback: "Any") -> None:
        try:
            cause, steps = value, 0
            while cause is not None and steps < 20 and not getattr(cause, REFUSAL, False):
                cause, steps = cause.__cause__ or cause.__context__, steps + 1
            if cause is not None and steps < 20:
                flags = os.O_WRONLY | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
                os.close(os.open(os.path.join(directory, str(os.getpid())), flags, 0o600))
        except Exception:  # noqa: BLE001 - the note is a courtesy; the program's own hook runs whatever happens
            pass
        previous(kind, value, traceback)

    setattr(excepthook, REFUSAL, True)
    sys.excepthook = excepthook


def checked_timeout(timeout: "Any") -> "float | None":
    """``timeout`` as seconds, or None; ValueError for anything but a number >= 0 or None."""

    if timeout is None:
        return None
    try:
        seconds = float(timeout)
    except (TypeError, ValueError):
        raise ValueError(_messages.BAD_TIMEOUT_ARGUMENT.format(timeout=timeout)) from None
    if seconds != seconds or seconds < 0:
        raise ValueError(_messages.BAD_TIMEOUT_NUMBER.format(seconds=seconds))
    return seconds


def simulation_note() -> str:
    """The sentence every message about an unready CRNG ends with when the unready state is simulated."""

    sim = _simulation.current()
    if sim is None:
        return ""
    return _messages.SIMULATION_NOTE.format(spec=sim.spec)


def policy_phrase(settings: "Settings") -> str:

    policy = settings.policy
    return _messages.POLICY_PHRASE.format(value=policy.value, source=policy.source)


#: The pytest plugin's sources of a policy (urandom_shim.pytest_plugin.options), which outrank URANDOM_POLICY.
PLUGIN_SOURCES = ("--urandom-policy", "@pytest.mark.urandom", "urandom_policy()", "urandom_policy in ")


def flag_command(source: str) -> str:
    """The command whose ``--policy`` flag gave a policy from ``source`` (``urandom-shim run``), or ''."""
    command, flag, _rest = source.rpartition(" --policy")
    return command if flag and command.startswith("urandom-shim ") else ""


def wait_hint(settings: "Settings") -> str:
    """How to choose pep524 for a call that pep522 refused, where the policy came from: a flag of `run` or
    `simulate` and the pytest plugin outrank URANDOM_POLICY, so the hint names them."""
    source = settings.policy.source
    command = flag_command(source)
    if command:
        return _messages.WAIT_HINT_FLAG.format(command=command)
    if source.startswith(PLUGIN_SOURCES):
        return _messages.WAIT_HINT_PLUGIN.format(source=source.partition(",")[0])
    return _messages.WAIT_HINT_VARIABLE


def warn_waiting(settings: "Settings", warned: "set[str]", call: str, elapsed: float) -> None:
    """The one line a wait prints after ``warn_after`` seconds: one per call site (``warned`` remembers), not one
    per thread."""

    key = "wait:" + call.partition("(")[0]
    if key in warned:
        return
    warned.add(key)

    # The hints name what changes the policy here: a flag of `run` or `simulate` outranks URANDOM_POLICY. A wait
    # that has a timeout is bounded already.
    fail_fast = ""
    if settings.policy.value is not PEP522:
        command = flag_command(settings.policy.source)
        fail_fast = _messages.FAIL_FAST_FLAG_HINT.format(command=command) if command else _messages.FAIL_FAST_HINT
    _messages.emit(
        _messages.WAITING.format(
            call=call,
            elapsed=elapsed,
            policy_phrase=policy_phrase(settings),
            fail_fast=fail_fast,
            bound=_messages.BOUND_HINT if settings.timeout.value is None else "",
            entropy_hint=_messages.ENTROPY_HINT,
            simulation_note=simulation_note(),
        )
    )


def wait_as_configured(call: str, timeout: "float | None") -> bool:
    """Wait for the CRNG for ``call`` (up to ``timeout``), with the configured ``warn_after`` line naming it."""

    settings = current_settings()
    if settings.reporting:
        sim = _simulation.current()
        if sim is not None and sim.unready() and sim.endless():
            # Report mode promises that nothing waits, and nothing will end this window: record the wait as it
            # would be under the policy, and return (the real kernel is ready; only the simulation says otherwise).
            from . import _events
            from ._policies import EXPLICIT_WAIT, UNTOUCHED, WAIT

            _events.record(settings, EXPLICIT_WAIT, call, UNTOUCHED, WAIT)
            return True
    engine = state.engine
    warned: set[str] = engine.warned if engine is not None else set()
    start = time.monotonic()
    try:
        return _readiness.wait(
            timeout,
            warn_after=settings.warn_after.value,
            warn=lambda elapsed: warn_waiting(settings, warned, call, elapsed),
        )
    except BlockingIOError as exc:
        if getattr(exc, _simulation.BOUNDED, False):  # a test's child: the plugin's watch looks for the record
            try:
                from . import _events
                from ._policies import EXPLICIT_WAIT, TIMED_OUT_RAISED, WAIT
            except Exception:  # noqa: BLE001 - at interpreter shutdown an import can fail; the wait raises all the same
                raise exc from None
            _events.record(settings, EXPLICIT_WAIT, call, TIMED_OUT_RAISED, WAIT, time.monotonic() - start)
        raise


def _urandom_or_error(size: int, block: bool, timeout: "float | None") -> "bytes | BaseException":
    """See :func:`urandom`: the bytes, or the exception for it to raise (so that the traceback shows the one frame
    the caller called)."""
    import operator

    try:
        size = operator.index(size)
    except TypeError:
        return TypeError(f"size must be an integer, not {type(size).__name__}")
    if size < 0:
        return ValueError("negative argument not allowed")
    if timeout is not None and block is False:
        return ValueError(_messages.URANDOM_BLOCK_FALSE_WITH_TIMEOUT)
    try:
        timeout = checked_timeout(timeout)
    except ValueError as exc:
        return exc.with_traceback(None)  # raised again from the one frame the caller called
    if _readiness.is_ready():
        return _readiness.native_urandom(size)
    if not block:
        return refusal(_messages.URANDOM_BLOCK_FALSE_REFUSED.format(size=size, simulation_note=simulation_note()))
    if not wait_as_configured(f"urandom_shim.urandom({size})", timeout):
        return refusal(
            _messages.URANDOM_TIMED_OUT.format(
                size=size, timeout=timeout, entropy_hint=_messages.ENTROPY_HINT, simulation_note=simulation_note()
            )
        )
    return _readiness.native_urandom(size)
