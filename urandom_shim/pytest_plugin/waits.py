"""A wait on a test's simulated CRNG that nothing will end becomes a failure that names the call, the line in the
user's code that made it, and the traceback to it; the call goes into the run's records like any other.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

import os
import sys
import traceback

from .. import _messages
from .options import OPTION
from .records import place, shown

TYPE_CHECKING = False
if TYPE_CHECKING:
    from types import FrameType

#: The package's own frames, the plugin's included: never the code that asked.
PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
#: The frames of pytest and its hook caller: where a test's traceback starts, outside them.
RUNNER_PARTS = (f"{os.sep}_pytest{os.sep}", f"{os.sep}pluggy{os.sep}")
#: The most frames a traceback in a message shows (the innermost).
MAX_FRAMES = 30


def ended(nodeid: str, origin: str, rootdir: str, waited: float, bound: float, why: str) -> str:
    """The failure of a wait on the simulated CRNG of test ``nodeid``, whose policy came from ``origin``; called
    from inside the wait. The call is recorded."""
    from .. import _events, _policies, _runtime

    call, site = pending(sys._getframe(1))
    caller = _events.caller_frame()
    settings = _runtime.current_settings()
    if call is not None:
        would = _policies.WAIT
        if site in _policies.SITES:
            would = _policies.action(settings.policy_value, site, str(settings.seed_random_instances.value))
        # The window never closes in this test: what each policy would do with the call is said for that.
        _events.record(settings, site, call, _policies.TIMED_OUT_RAISED, would, waited, window=float("inf"))
    where = place(_events.location(caller), rootdir)
    mine = user_frame(caller, rootdir)
    via = "" if mine is None or mine is caller else _messages.PLUGIN_REACHED_FROM.format(line=_line(mine, rootdir))
    waited_for = _messages.PLUGIN_WAITED_THE_BOUND.format(waited=waited) if bound else _messages.PLUGIN_WAITS_FOREVER
    text = _messages.PLUGIN_WAIT_ENDED.format(
        call=call or _messages.PLUGIN_SOME_CALL,
        caller=where,
        via=via,
        waited_for=waited_for,
        why=why,
        policy_phrase=_runtime.policy_phrase(settings),
        remedies=remedies(nodeid, origin, settings.policy_value.name, site),
    )
    return f"{text}\n{_messages.PLUGIN_TRACEBACK}\n{stack(caller, rootdir)}"


def _line(frame: FrameType, rootdir: str) -> str:
    return place(f"{frame.f_code.co_filename}:{frame.f_lineno}", rootdir)


def pending(frame: FrameType | None) -> tuple[str | None, str]:
    """The call a wait is for, and its site, from the frames of the engine and the runtime that wait for it: the
    innermost that names a ``call``, and the innermost that names a ``site``."""
    from .._policies import EXPLICIT_WAIT

    call = site = None
    while frame is not None and (call is None or site is None):
        if frame.f_code.co_filename.startswith(PACKAGE_DIR):
            names = frame.f_locals
            found = names.get("call")
            if call is None and isinstance(found, str):
                call = found
            found = names.get("site")
            if site is None and isinstance(found, str):
                site = found
        frame = frame.f_back
    return call, site or EXPLICIT_WAIT


def user_frame(frame: FrameType | None, rootdir: str) -> FrameType | None:
    """The innermost frame at or outside ``frame`` in the project's own code: under its rootdir, and not in an
    installed package (a virtual environment inside the project is not its code)."""
    root = os.path.join(os.path.abspath(rootdir), "")
    while frame is not None:
        filename = os.path.abspath(frame.f_code.co_filename)
        if filename.startswith(root) and not _installed(filename) and not filename.startswith(PACKAGE_DIR):
            return frame
        frame = frame.f_back
    return None


def _installed(filename: str) -> bool:
    return f"{os.sep}site-packages{os.sep}" in filename or f"{os.sep}dist-packages{os.sep}" in filename


def stack(frame: FrameType | None, rootdir: str) -> str:
    """The traceback from the test (outside pytest's frames) to ``frame``, as Python prints one, with the
    project's files named as pytest names them."""
    if frame is None:
        return ""
    entries = traceback.extract_stack(frame)
    start = 0
    for index, entry in enumerate(entries):
        if any(part in entry.filename for part in RUNNER_PARTS):
            start = index + 1
    for entry in entries:
        entry.filename = place(entry.filename, rootdir)
    return "".join(traceback.format_list(entries[start:][-MAX_FRAMES:])).rstrip("\n")


def remedies(nodeid: str, origin: str, policy: str, site: str) -> str:
    """What to do about a wait that can't end in a test: each way that fits its policy and where it came from."""
    from .._policies import BY_NAME, EXPLICIT_WAIT, WAIT, action

    ways = [_messages.PLUGIN_REMEDY_READY_KERNEL]
    if site != EXPLICIT_WAIT:
        others = [name for name in ("pep522", "legacy") if name != policy and action(BY_NAME[name], site) != WAIT]
        if others:
            ways.append(_messages.PLUGIN_REMEDY_OTHER_POLICY.format(policies=" or ".join(others)))
    ways.append(_messages.PLUGIN_REMEDY_READY_AFTER)
    ways.append(_messages.PLUGIN_REMEDY_TIMEOUT)
    if origin == OPTION:
        ways.append(_messages.PLUGIN_REMEDY_EXEMPT.format(nodeid=shown(nodeid)))
    text = "; or ".join(ways)
    return text[:1].upper() + text[1:] + "."
