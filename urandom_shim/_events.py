"""Events: one record for every decision the engine makes while the CRNG is unready, written to stderr and, when
configured, appended to a JSON-lines file (docs/reference/events.md).

An event says which program (argv, ``[[program]]`` name, systemd unit, pid) made which call (``os.urandom(16)``) from
where (the first frame outside the standard library and the shim), when (seconds since boot, ``CLOCK_BOOTTIME``),
under which policy and mode, what happened, what the policy would have done, and how long it waited; and on which
machine and boot (machine id, boot id, hostname, image, kernel, first boot: :func:`machine`, read at a process's
first event, never at start), so that a fleet's events files can be read as one report.

Rate limit: the first event of each call site (call and caller, under one policy and mode) in a process is written;
later ones are counted, and one ``repeat`` event per call site at exit says how many there were. A forked child
counts afresh.

Sinks:

- stderr: one ``urandom-shim:`` line per event (:func:`describe`), which the journal collects per unit, and which
  :func:`urandom_shim.report.shim_lines.parse_line` reads back for ``urandom-shim report``;
- the events file (``events = "/run/urandom-shim/events.jsonl"``): one ``O_APPEND`` write of one line per event, at most
  :data:`MAX_RECORD` bytes (``PIPE_BUF``), so that any number of processes can append to it without a lost or torn
  line. The write starts with a newline too, so that a record always has a line of its own, whatever another writer
  left unfinished before it (a blank line between records is nothing). It is opened with ``O_NOFOLLOW`` and
  written only if it is a regular file. Any failure is silent: no program fails because the file can't be written
  (``urandom-shim check`` says why it can't).

This module is imported on the first event only: the ready path never loads it, and an unready start that makes no
call in the window neither, but in report mode at its exit while the CRNG is still unready (so that a call while the
interpreter shuts down, after its exit handlers, is recorded too). It imports nothing but what is loaded already
(``json`` would import ``re``).

One piece, though over 500 lines: it loads at a program's first event in the window, where each module more costs
about 0.45 M instructions (docs/explanation/design-decisions.md); the record's shape (:class:`Record`) is a type
only, which costs nothing at run time.
"""

import atexit
import os
import sys
import time  # loaded already (the engine's clock): an import at interpreter shutdown fails

from . import _messages, _policies, _simulation, _sources

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Dict, List, TypedDict, Union

    from ._policies import Settings

    #: One event record, as the shim writes it (the events file's JSON object; the line on stderr says the same) and
    #: as every reader of ``urandom-shim report`` takes it: a record read back from a file or from the journal is
    #: checked against these types first (:func:`urandom_shim.report.gather.malformed`). Every key may be absent
    #: from a record of an older shim; ``from`` and ``uid`` are the reader's (where it was read; the journal's uid).
    Record = TypedDict(
        "Record",
        {
            "v": int,
            "event": str,  # "call", or "repeat" (``count`` more calls like the first)
            "boot_time": Union[float, None],
            "pid": Union[int, None],
            "uid": Union[int, None],
            "argv": List[str],
            "argv_cut": bool,
            "program": Union[str, None],
            "unit": Union[str, None],
            "machine_id": Union[str, None],
            "boot_id": Union[str, None],
            "hostname": Union[str, None],
            "image": Union[str, None],
            "kernel": Union[str, None],
            "first_boot": Union[bool, None],
            "call": str,
            "site": Union[str, None],
            "caller": Union[str, None],
            "policy": Union[str, None],
            "policy_source": Union[str, None],
            "mode": Union[str, None],
            "action": Union[str, None],
            "would": Union[str, None],
            "waited": Union[float, None],
            "simulated": Union[str, bool, None],
            "under": Dict[str, str],
            "window": Union[float, None],
            "timeout": Union[float, None],
            "on_timeout": Union[str, None],
            "seed_random_instances": Union[str, None],
            "floor": Union[str, None],
            "interpreter": Union[str, None],
            "pinned": bool,
            "test": Union[str, None],
            "count": int,
            "cut": List[str],
            "from": str,
        },
        total=False,
    )

#: The version of the event format: the ``v`` field of every record. A change that removes or redefines a field
#: makes it 2; new fields keep it.
VERSION = 1
#: The longest write to the events file, both newlines included: POSIX's ``PIPE_BUF``, the size below which one
#: write is never interleaved with another's, even on a pipe.
MAX_RECORD = 4096
#: The file ``urandom-shim report`` reads when none is named or configured: per boot, as ``/run`` is a tmpfs.
DEFAULT_FILE = "/run/urandom-shim/events.jsonl"

# What happened (the ``action`` field): :mod:`urandom_shim._policies` names them, for the engine that decides.
UNTOUCHED, WAITED, RAISED, BEST_EFFORT = _policies.UNTOUCHED, _policies.WAITED, _policies.RAISED, _policies.BEST_EFFORT
TIMED_OUT_RAISED, TIMED_OUT_BEST_EFFORT = _policies.TIMED_OUT_RAISED, _policies.TIMED_OUT_BEST_EFFORT
ACTIONS = (UNTOUCHED, WAITED, RAISED, BEST_EFFORT, TIMED_OUT_RAISED, TIMED_OUT_BEST_EFFORT)

#: How each action reads in an event's line, past tense. ``{waited}`` is seconds.
DONE = {
    UNTOUCHED: _messages.EVENT_DONE_UNTOUCHED,
    WAITED: _messages.EVENT_DONE_WAITED,
    RAISED: _messages.EVENT_DONE_RAISED,
    BEST_EFFORT: _messages.EVENT_DONE_BEST_EFFORT,
    TIMED_OUT_RAISED: _messages.EVENT_DONE_TIMED_OUT_RAISED,
    TIMED_OUT_BEST_EFFORT: _messages.EVENT_DONE_TIMED_OUT_BEST_EFFORT,
}
#: How each action of the policy table (``_policies``: untouched, wait, raise, best-effort) reads as what the
#: configured policy would have done (report mode).
WOULD = {
    _policies.UNTOUCHED: _messages.EVENT_WOULD_UNTOUCHED,
    _policies.WAIT: _messages.EVENT_WOULD_WAIT,
    _policies.RAISE: _messages.EVENT_DONE_RAISED,
    _policies.BEST_EFFORT: _messages.EVENT_DONE_BEST_EFFORT,
}

#: (call name, code object and line of the caller, policy, mode) -> [calls not written since the first one, the
#: first event, its settings]. A call after the first costs a frame walk and one dict lookup: no string is built.
_seen: "dict[tuple[object, ...], list[Any]]" = {}
_program: "dict[str, Any] | None" = None


def _forked() -> None:
    """In a forked child: count afresh, and read the program's facts (its pid, and the machine's) again."""
    global _program
    _seen.clear()
    _program = None


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forked)


# -- recording ---------------------------------------------------------------------------------------------------------


#: The call site of ``random._inst``'s reseeding when ``random`` was imported before the shim started (by another
#: ``.pth`` file, or ``sitecustomize``): who imported it can't be known any more, and the shim's frames are no answer.
BEFORE_START = _messages.CALLER_BEFORE_START


def record(
    settings: "Settings",
    site: str,
    call: str,
    action: str,
    would: str,
    waited: float = 0.0,
    before_start: bool = False,
    window: "float | None" = None,
    native: "str | None" = None,
) -> None:
    """Record one decision: written at once if it is the first from its call site in this process, else counted.
    ``window``: how long the CRNG stayed unready after the call began, when the call found out (infinite for a
    simulated window nothing ends); ``native``: what the interpreter's own code was seen to do (report mode).

    A call site is also what was done there and what every policy would do: a call that timed out after one that
    did not, or whose window closed in time where the first's did not, is written as a call of its own, never
    counted into another's repeat."""
    try:
        frame = None if before_start else caller_frame()
        where = (None, 0) if frame is None else (frame.f_code, frame.f_lineno)
        key = (
            call.partition("(")[0], *where, settings.policy.value, settings.mode.value, action,
            _policies.in_time(settings, window), native,
        )  # fmt: skip
        fresh: list[Any] = [0, None, settings]
        entry = _seen.setdefault(key, fresh)  # atomic: of two threads, one writes and the other counts
        if entry is not fresh:
            entry[0] += 1
            return
        caller = BEFORE_START if before_start else location(frame)
        event = _event(settings, site, call, caller, action, would, waited, window, native)
        fresh[1] = event
        write(event, settings)
    except Exception:  # noqa: BLE001 - an event must never break the call it describes
        pass


def _event(
    settings: "Settings",
    site: str,
    call: str,
    caller: str,
    action: str,
    would: str,
    waited: float,
    window: "float | None" = None,
    native: "str | None" = None,
) -> "dict[str, Any]":
    sim = _simulation.current()
    timeout = settings.timeout.value
    source = settings.policy.source
    event: dict[str, Any] = {
        "v": VERSION,
        "event": "call",
        "boot_time": round(boot_time() - waited, 3),  # when the call began: a wait is over by now
        **program(),
        "call": _sources.clip(call, 200),
        "site": site,
        "caller": _middle(caller, MAX_PATH_FIELD),
        "policy": settings.policy.value.name,
        "policy_source": _middle(source, MAX_PATH_FIELD),
        "mode": settings.mode.value,
        "action": action,
        "would": would,
        "waited": round(waited, 3),
        "simulated": None if sim is None else _sources.clip(sim.spec, 200),
        # What every policy would do with this call, by the engine's own decision (_policies.outcome), and the
        # settings and facts that shaped it: the report reads these, and never works a call's fate out again.
        "under": _policies.outcomes(settings, site, window, native),
        "pinned": settings.pinned,
        "window": None if window is None or window == float("inf") else round(window, 3),
        "timeout": timeout,
        "on_timeout": settings.on_timeout.value,
        "seed_random_instances": settings.seed_random_instances.value,
        "floor": None if settings.floor is None else _sources.clip(settings.floor, 200),
        "interpreter": INTERPRETER,
        "test": test_id(),
    }
    cut = [name for name, whole in (("caller", caller), ("policy_source", source)) if len(whole) > MAX_PATH_FIELD]
    if cut:  # shortened in their middle: a path keeps its file name and line
        event["cut"] = cut
    return event


#: The longest a path of an event (the caller's, the policy's source) is kept: longer ones lose their middle.
MAX_PATH_FIELD = 300


#: The interpreter, as an event names it: its implementation and version (``cpython 3.11.7``, ``pypy 7.3.17``).
INTERPRETER = "{} {}.{}.{}".format(sys.implementation.name, *sys.implementation.version[:3])
#: The variable pytest sets to the test running now, with its phase: ``path::name (call)``. A child process inherits it.
TEST_VARIABLE = "PYTEST_CURRENT_TEST"
_PHASES = (" (setup)", " (call)", " (teardown)")


def ready_for_shutdown() -> None:
    """Read now what an event needs that takes an import (the program's facts): a call while the interpreter shuts
    down, after the exit handlers, can't import anything."""
    try:
        program()
    except Exception:  # noqa: BLE001 - the event is then written without them, or not at all; never a failure
        pass


def test_id() -> "str | None":
    """The node id of the pytest test that made the call (in its own process or a child of it), else None: the
    pytest plugin's own variable first (pytester pops pytest's when its inner run ends, and a test may strip
    ``PYTEST_*`` from a child's environment), then pytest's."""
    text = os.environ.get(PLUGIN_TEST_VARIABLE)
    if not text:
        text = os.environ.get(TEST_VARIABLE)
        if not text:
            return None
        for phase in _PHASES:
            if text.endswith(phase):
                text = text[: -len(phase)]
                break
    return test_key(text)


#: The variable the pytest plugin sets to the node id of the test it runs under a policy, for the test's process
#: and its children.
PLUGIN_TEST_VARIABLE = "URANDOM_SHIM_TEST"
#: The longest node id a record keeps whole.
MAX_TEST = 300


def test_key(nodeid: str) -> str:
    """A node id as records carry it: whole up to :data:`MAX_TEST` characters, else its start and a hash of the whole,
    so that two long ids that differ only at their end still name different tests (the plugin matches on this)."""
    if len(nodeid) <= MAX_TEST:
        return nodeid
    digest = 0x811C9DC5  # FNV-1a: the same in every process, and no import
    for char in nodeid:
        digest = ((digest ^ ord(char)) * 0x01000193) & 0xFFFFFFFF
    return f"{nodeid[: MAX_TEST - 9]}…{digest:08x}"


def flush() -> None:
    """One ``repeat`` event for each call site that made more calls than the one written, then count afresh: at
    exit, and at the end of each test under the pytest plugin, whose records are per test."""
    for count, first, settings in list(_seen.values()):
        if count and first is not None:
            event = dict(first)
            event.update(event="repeat", boot_time=round(boot_time(), 3), count=count)
            write(event, settings, repeat=True)
    _seen.clear()


atexit.register(flush)

#: ``0`` moves the stderr lines to the events file, when one is configured: the pytest plugin sets it for its tests
#: and their child processes, whose stderr the tests may read. Without an events file the lines stay.
LINES_VARIABLE = "URANDOM_SHIM_EVENT_LINES"


def write(event: "dict[str, Any]", settings: "Settings", repeat: bool = False) -> None:
    """Both sinks: the line on stderr, and the record in the events file if one is configured. A ``repeat`` record
    goes only to an events file that still exists: it counts calls after a first record written there,
    and a file removed since (the pytest plugin's, at the end of its run) is not made again."""
    path = settings.events.value
    if not (path and os.environ.get(LINES_VARIABLE) == "0"):
        _messages.emit(describe(event))
    if path and not (repeat and not os.path.exists(path)):
        append(path, fitted(event))


def fitted(event: "dict[str, Any]") -> str:
    """The event as one JSON record that :func:`append` writes in at most :data:`MAX_RECORD` bytes: a long command
    line is cut short first (its first words stay, and ``argv_cut`` says so), then the longest texts are shortened
    in their middle (``cut`` names them); never a field, nor the event, is left out."""
    record = dumps(event)
    argv = list(event.get("argv") or ())
    while len(record) + 2 > MAX_RECORD and argv:
        argv = [_sources.clip(arg, 40) for arg in argv[: len(argv) // 2]]
        event = {**event, "argv": argv, "argv_cut": True}
        record = dumps(event)
    cut: list[str] = list(event.get("cut") or ())
    while len(record) + 2 > MAX_RECORD:  # texts of escaped characters, each six bytes in JSON
        name = max((k for k, v in event.items() if isinstance(v, str)), key=lambda k: len(event[k]))
        if len(event[name]) <= 8:
            break
        if name not in cut:
            cut.append(name)
        event = {**event, name: _middle(event[name], len(event[name]) // 2), "cut": cut}
        record = dumps(event)
    return record


def append(path: str, record: str) -> bool:
    """Append one line to ``path`` in one ``O_APPEND`` write; False (and nothing else) if it can't be done. The write
    begins with a newline: the file is shared (mode 0622), and a line another writer left without its newline must
    end there, not swallow this record."""
    data = b"\n" + record.encode("ascii", "replace") + b"\n"
    if len(data) > MAX_RECORD:
        return False
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NONBLOCK
    flags |= getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags, 0o600)
    except (OSError, ValueError):
        return False
    try:
        if os.fstat(fd).st_mode & 0o170000 != 0o100000:  # a FIFO, a device: not ours to write to
            return False
        return os.write(fd, data) == len(data)
    except OSError:
        return False
    finally:
        os.close(fd)


def reset() -> None:
    """Count afresh, as a new process does: the next event of every call site is written (for tests)."""
    _seen.clear()


# -- the facts of an event -------------------------------------------------------------------------------------------


def boot_time() -> float:
    """Seconds since boot (``CLOCK_BOOTTIME``, the kernel log's clock while nothing has been suspended)."""
    clock = getattr(time, "CLOCK_BOOTTIME", None)
    if clock is not None:
        try:
            return time.clock_gettime(clock)
        except OSError:
            pass
    return time.monotonic()


_SHIM_DIR = os.path.dirname(os.path.abspath(__file__))
#: The start-up module, beside the package: its frames are the shim's too (a module imported by another .pth before
#: the shim started is reseeded from it, and the event must name who imported it, not the shim).
_BOOT_FILE = os.path.join(os.path.dirname(_SHIM_DIR), "_urandom_shim_boot.py")
#: The shim's frames, and the import system's own (CPython's, PyPy's): never the code that asked.
_NOT_CALLERS = (_SHIM_DIR, "<frozen ", "<builtin>/")
_STDLIB_DIR = os.path.dirname(os.path.abspath(os.__file__))


#: File name -> whether its frames are skipped in looking for the caller (the shim's, the standard library's).
_skipped: "dict[str, bool]" = {}


def _skip(filename: str) -> bool:
    skip = _skipped.get(filename)
    if skip is None:
        skip = _skipped[filename] = (
            filename.startswith(_NOT_CALLERS)
            or filename == _BOOT_FILE
            or (filename.startswith(_STDLIB_DIR) and "-packages" not in filename)
        )
    return skip


def caller_frame() -> "Any":
    """The first frame outside the standard library and the shim: the code that asked. When all of them are the
    standard library's (its own tests, or `python -m` of one of its modules), the innermost frame outside the shim
    that is not frozen: the standard library's code that asked, rather than runpy."""
    frame: Any = sys._getframe(1)
    fallback = None
    while frame is not None:
        filename = frame.f_code.co_filename
        if not _skip(filename):
            return frame
        if (
            fallback is None
            and not filename.startswith((_SHIM_DIR, "<frozen ", "<builtin>/"))
            and filename != _BOOT_FILE
        ):
            fallback = frame
        frame = frame.f_back
    return fallback


def location(frame: "Any") -> str:
    """``path:line`` of ``frame``: the whole of it, which the event shortens in its middle if it must."""
    if frame is None:
        return "<unknown>"
    return f"{frame.f_code.co_filename}:{frame.f_lineno}"


def caller_location() -> str:
    """``path:line`` of the code that asked."""
    return location(caller_frame())


def program() -> "dict[str, Any]":
    """The program's facts, read once per process (and again in a forked child): argv, the name ``[[program]]``
    rules match, unit and pid, and the machine's facts (:func:`machine`)."""
    global _program
    if _program is None:
        argv = getattr(sys, "orig_argv", None) or [sys.executable, *getattr(sys, "argv", [])]
        shown = [_sources.clip(str(arg), 200) for arg in list(argv)[:32]]
        name = None
        try:
            name = _sources.invocation().program
        except Exception:  # noqa: BLE001 - a strange sys.argv: the argv field still says what ran
            pass
        _program = {"pid": os.getpid(), "argv": shown, "program": name, "unit": unit(), **machine()}
    return _program


# -- the machine's facts -----------------------------------------------------------------------------------------------

#: Where the machine's facts are read, at the first event of a process (:func:`machine`). Module constants, so that
#: a test can point them elsewhere in-process; the venv tests change the files themselves, in a mount namespace.
MACHINE_ID_FILE = "/etc/machine-id"
BOOT_ID_FILE = "/proc/sys/kernel/random/boot_id"
#: The os-release files, in the order the os-release specification reads them: the first that can be read counts.
OS_RELEASE_FILES = ("/etc/os-release", "/usr/lib/os-release")
#: Created by systemd for the whole of a machine's first boot (``ConditionFirstBoot=``), in a tmpfs.
FIRST_BOOT_FILE = "/run/systemd/first-boot"
#: Present when systemd booted the machine (``sd_booted()``): without it, whether this is a first boot is unknown.
SYSTEMD_RUN_DIR = "/run/systemd/system"
#: The most read of an id file (one line of 33 or 37 bytes) and of an os-release file (a few hundred bytes).
ID_MAX, OS_RELEASE_MAX = 64, 8192
_HEX = frozenset("0123456789abcdef")


def machine() -> "dict[str, Any]":
    """The machine's facts, as journald names its own (``_MACHINE_ID``, ``_BOOT_ID``, ``_HOSTNAME``) and more: what
    a fleet's report attributes this process's events to. A fact that can't be read, or reads oddly, is None: an id
    is 32 lowercase hex digits, as journald writes it (the kernel's boot id loses its dashes), never anything else
    (``uninitialized``, the machine-id of an image before its first boot commits one)."""
    facts: dict[str, Any] = {
        "machine_id": None, "boot_id": None, "hostname": None, "image": None, "kernel": None, "first_boot": None
    }  # fmt: skip
    try:
        for key, path in (("machine_id", MACHINE_ID_FILE), ("boot_id", BOOT_ID_FILE)):
            data = _read_small(path, ID_MAX)
            text = "" if data is None else data.decode("ascii", "replace").strip().replace("-", "").lower()
            if len(text) == 32 and _HEX.issuperset(text):
                facts[key] = text
        name = os.uname()
        if name.nodename and name.nodename != "(none)":  # the kernel's name until something sets one
            facts["hostname"] = _sources.clip(name.nodename, 200)
        facts["kernel"] = _sources.clip(name.release, 200) or None
        facts["image"] = image()
        if os.path.exists(FIRST_BOOT_FILE):
            facts["first_boot"] = True
        elif os.path.isdir(SYSTEMD_RUN_DIR):
            facts["first_boot"] = False
    except Exception:  # noqa: BLE001 - a fact that can't be had is null; the event is written all the same
        pass
    return facts


def _read_small(path: str, limit: int) -> "bytes | None":
    """Up to ``limit`` bytes of the regular file ``path``, or None: opened without blocking (a FIFO in its place
    can't hang the program), and read only if it is a regular file."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except (OSError, ValueError):
        return None
    try:
        if os.fstat(fd).st_mode & 0o170000 != 0o100000:
            return None
        return os.read(fd, limit)
    except OSError:
        return None
    finally:
        os.close(fd)


def image() -> "str | None":
    """The image this machine runs, from the first os-release file that can be read: ``IMAGE_ID IMAGE_VERSION``
    if it names an image, else ``ID VERSION_ID`` ("debian 12"); None if neither names anything. Each value is its
    last assignment, as a shell reads the file, found without splitting the file into lines."""
    for path in OS_RELEASE_FILES:
        data = _read_small(path, OS_RELEASE_MAX)
        if data is not None:
            break
    else:
        return None
    text, values = "\n" + data.decode("utf-8", "replace"), []
    for key in ("IMAGE_ID", "IMAGE_VERSION", "ID", "VERSION_ID"):
        start = text.rfind(f"\n{key}=")
        # The four are letters, digits, "._-" (the specification's words): quoted or not, never escaped.
        values.append("" if start < 0 else text[start + len(key) + 2 :].partition("\n")[0].strip().strip("\"'"))
    image_id, image_version, os_id, version_id = values
    shown = f"{image_id} {image_version}" if image_id else f"{os_id} {version_id}" if os_id else ""
    return _sources.clip(shown.strip(), 200) or None


#: The suffixes of the systemd units a process can run in.
UNIT_SUFFIXES = (".service", ".scope", ".socket", ".mount", ".swap", ".timer", ".target", ".slice")


def unit() -> "str | None":
    """The systemd unit this process runs in: ``$SYSTEMD_UNIT`` if set, else, under systemd (``INVOCATION_ID``),
    the last unit named in ``/proc/self/cgroup``."""
    named = os.environ.get("SYSTEMD_UNIT")
    if named:
        return _sources.clip(named, 200)
    if not os.environ.get("INVOCATION_ID"):
        return None
    try:
        with open("/proc/self/cgroup", "rb") as file:
            text = file.read(4096).decode("utf-8", "replace")
    except OSError:
        return None
    for line in text.splitlines():
        if line.startswith("0::") or ":name=systemd:" in line:
            parts = [p for p in line.partition("::")[2].split("/") if p.endswith(UNIT_SUFFIXES)]
            if not parts:
                parts = [p for p in line.rpartition(":")[2].split("/") if p.endswith(UNIT_SUFFIXES)]
            named = next((p for p in reversed(parts) if not p.endswith(".slice")), None)
            if named:
                return _sources.clip(named, 200)
    return None


# -- the two formats ---------------------------------------------------------------------------------------------------


def describe(event: "dict[str, Any]") -> str:
    """The event as one line on stderr (without the ``urandom-shim:`` prefix, which :func:`_messages.emit` adds).
    A line that would be longer than :data:`_messages.MAX_LINE` has its caller and policy source shortened in their
    middle (a path keeps its file name and line), never cut off at the end: the line still says everything."""
    printable = _messages.printable
    caller, source = printable(event["caller"]), printable(event.get("policy_source") or "")
    text = _describe({**event, "call": printable(event["call"])}, caller, source)
    over = len(text) - (_messages.MAX_LINE - len(_messages.PREFIX))
    if over > 0:
        cut = min(max(0, len(caller) - 40), over)
        caller, source = _middle(caller, len(caller) - cut), _middle(source, len(source) - (over - cut))
        text = _describe({**event, "call": printable(event["call"])}, caller, source)
    return text


def _describe(event: "dict[str, Any]", caller: str, source: str) -> str:
    where = _messages.EVENT_WHERE.format(
        call=event["call"],
        caller=caller,
        simulated=_messages.EVENT_SIMULATED if event.get("simulated") else "",
        boot_time=event["boot_time"],
    )
    under = _messages.EVENT_UNDER.format(outcomes=under_phrase(event["under"], event["timeout"]))
    if event["event"] == "repeat":
        return _messages.EVENT_REPEAT.format(where=where, count=event["count"], under=under)
    template = _messages.EVENT_REPORT_ONLY if event["mode"] == "report" else _messages.EVENT_ENFORCED
    return template.format(
        where=where,
        done=DONE[event["action"]].format(waited=event["waited"]),
        policy=event["policy"],
        source=source,
        would=would_phrase(event),
        under=under,
    )


def would_phrase(event: "dict[str, Any]") -> str:
    """What the configured policy would have done (report mode), in words: its row of the table, or the end of its
    wait where the program's timeout would end it (what ``under`` says of the configured policy)."""
    found = (event.get("under") or {}).get(event["policy"]) if event["would"] == _policies.WAIT else None
    if found == _policies.WAIT_THEN_RAISE:
        return _messages.EVENT_DONE_TIMED_OUT_RAISED.format(waited=event["timeout"] or 0.0)
    if found == _policies.WAIT_THEN_WEAK:
        return _messages.EVENT_DONE_TIMED_OUT_BEST_EFFORT.format(waited=event["timeout"] or 0.0)
    return WOULD[event["would"]]


def under_phrase(under: "dict[str, str]", timeout: "float | None") -> str:
    """What every policy would do, in words: ``native waits, pep524 waits, pep522 raises, legacy weak bytes``."""
    return ", ".join(
        f"{name} {_messages.OUTCOME_PHRASES[under[name]].format(timeout=timeout or 0.0)}" for name in under
    )


def _middle(text: str, limit: int) -> str:
    """``text`` in at most ``limit`` characters (at least 3), its middle replaced by an ellipsis."""
    limit = max(3, limit)
    if len(text) <= limit:
        return text
    head = (limit - 1) // 2
    return text[:head] + "…" + text[len(text) - (limit - 1 - head) :]


def dumps(value: "Any") -> str:
    """JSON, as ``json.dumps`` with ``ensure_ascii`` writes it (plain ASCII, no control characters), for the few
    types an event holds. (``json`` imports ``re``: about 1 ms on a path whose whole budget is a few.)"""
    if isinstance(value, str):  # first: most values are text
        if value.isascii() and value.isprintable() and '"' not in value and "\\" not in value:
            return '"' + value + '"'  # nothing to escape: most values, at a fraction of the cost of the loop below
        return '"' + "".join(_escape(char) for char in value) + '"'
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return str(int(value))
    if isinstance(value, float):
        return repr(value) if value == value and value not in (float("inf"), float("-inf")) else "null"
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(dumps(item) for item in value) + "]"
    if isinstance(value, dict):
        return "{" + ",".join(dumps(str(k)) + ":" + dumps(v) for k, v in value.items()) + "}"
    return dumps(str(value))


_ESCAPES = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape(char: str) -> str:
    if " " <= char <= "~":
        return _ESCAPES.get(char, char)
    if char in _ESCAPES:
        return _ESCAPES[char]
    code = ord(char)
    if code > 0xFFFF:
        code -= 0x10000
        return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"
    return f"\\u{code:04x}"


def site_of(call: str) -> str:
    """The call site (``_policies`` column) of a call as an event names it."""
    if call.startswith("secrets."):
        return "secrets"
    if call.startswith("random.seed(") or call.startswith("import random"):
        return "random._inst"
    if call.endswith(" seeding"):
        return "random.Random()"
    return "os.urandom"
