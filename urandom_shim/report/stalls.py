"""The stall the shim can't see, for ``urandom-shim report``: units whose Python interpreter waited in its own
start-up for the CRNG (Linux 5.18 and later), before the shim existed, and how each could start at once.
"""

from __future__ import annotations

import os
from typing import NamedTuple

from .. import _events
from . import journal
from .journal import Entry
from .sources import Stall

#: How a unit whose interpreter stalled could start at once: three sentences.
STALL_AVOID_RUN = (
    "Start it with `urandom-shim run --policy legacy -- {command}`: while the CRNG is not ready, its interpreter then "
    "gets a PYTHONHASHSEED from non-blocking kernel bytes and starts at once (run never does that under a floor)."
)
STALL_AVOID_HASHSEED = (
    "Or set Environment=PYTHONHASHSEED=0 in {unit}: hash randomisation is then off for that program, acceptable for "
    "a boot-time tool that hashes no attacker-controlled keys."
)
STALL_THROUGH_PIPE = (
    "its output reaches the journal through {exe}, so the journal does not name its interpreter; if it runs Python, "
    "this is what that interpreter lost"
)
STALL_AVOID_ENTROPY = (
    "Or give the machine an entropy source (virtio-rng, a hardware RNG, or the seed systemd-random-seed saves for "
    "the next boot), so that the CRNG is ready before {unit} starts."
)


# -- the stall the shim can't see --------------------------------------------------------------------------------------

#: The kernel release from which an interpreter's start waits for the CRNG: reading /dev/urandom for its hash secret
#: runs the jitter generator while the CRNG is not ready. Before, it returns at once.
STALLING_KERNEL = (5, 18)
#: The most units whose own lines are looked for, per boot.
MAX_UNITS = 200


def stalls(entries: list[Entry], crng_done: float | None) -> list[Stall]:
    """The units whose Python interpreter spent its start waiting for the CRNG: started before ``crng init done``
    (at ``crng_done``), and whose Python wrote its first line after it. Such an interpreter reads its hash secret
    before any ``.pth`` runs, so before the shim exists, and on Linux 5.18+ that read waits for the CRNG.

    A unit's start is systemd's "Starting X..." (an entry with ``UNIT=X``, or, logged through the kernel's buffer
    before journald ran, a message of systemd's that names X); its Python is an entry of its own processes
    (``_SYSTEMD_UNIT=X``) whose ``_EXE`` or ``_COMM`` is a python. A unit whose first Python line came before
    ``crng_done`` did not stall; one that wrote nothing can't be told. Nothing is a stall on a kernel the journal
    shows to be older than 5.18, nor with ``crng_done`` None. One :class:`Stall` per stall, by start. (The whole boot
    at once; :class:`Finder` takes the units' lines as they come.)
    """
    if crng_done is None or not may_stall(kernel_release(entries)):
        return []
    starts: dict[str, list[float]] = {}
    for entry in entries:
        add_start(starts, entry)
    finder = Finder(starts, crng_done)
    for entry in entries:
        finder.add(entry)
    return finder.stalls()


def may_stall(release: tuple[int, int] | None) -> bool:
    """Whether a kernel of ``release`` (None: unknown) makes an interpreter's start wait for the CRNG."""
    return release is None or release >= STALLING_KERNEL


def add_start(starts: dict[str, list[float]], entry: Entry) -> None:
    """Note in ``starts`` (unit -> times) the start of a unit that ``entry`` says systemd began."""
    unit = started_unit(entry)
    if unit is not None:
        time = journal.at(entry)
        if time == time:  # not NaN
            starts.setdefault(unit, []).append(time)


def candidates(starts: dict[str, list[float]], crng_done: float) -> list[str]:
    """The units that may have stalled: started before ``crng_done`` (at most :data:`MAX_UNITS`, by name), each a
    name journalctl can be asked about."""
    return sorted(
        unit
        for unit, times in starts.items()
        if any(time < crng_done for time in times) and unit.isprintable() and len(unit) <= 256
    )[:MAX_UNITS]


class _Window(NamedTuple):
    started: float
    until: float


class Finder:
    """The stalls of one boot, from its units' starts (unit -> times) and the CRNG's time, fed the units' own lines
    one entry at a time (in any order, the same entry any number of times): per unit, only its first line and its
    first Python line since its last start before the CRNG are kept."""

    def __init__(self, starts: dict[str, list[float]], crng_done: float) -> None:
        self.crng = crng_done
        self.windows: dict[str, _Window] = {}
        for unit, times in starts.items():
            before = [time for time in times if time < crng_done]
            if before:
                started = max(before)  # its last start before the CRNG's; a later one is another run
                until = min((time for time in times if time > started), default=float("inf"))
                self.windows[unit] = _Window(started, until)
        self.first: dict[str, tuple[float, Entry]] = {}
        self.python: dict[str, tuple[float, Entry]] = {}

    def add(self, entry: Entry) -> None:
        unit = journal.field(entry, "_SYSTEMD_UNIT")
        window = self.windows.get(unit) if unit is not None else None
        if window is None or unit is None or journal.field(entry, "_PID") == "1":
            return
        time = journal.at(entry)
        if not window.started <= time < window.until:  # NaN too
            return
        if unit not in self.first or time < self.first[unit][0]:
            self.first[unit] = (time, _kept(entry))
        if is_python(entry) and (unit not in self.python or time < self.python[unit][0]):
            self.python[unit] = (time, _kept(entry))

    def stalls(self) -> list[Stall]:
        found = []
        for unit, window in self.windows.items():
            first = self.first.get(unit)
            if first is None or first[0] < self.crng:
                continue  # it wrote nothing, or it ran in the window: then the shim saw what it did
            python: bool | None = True
            if unit in self.python:
                first_line, entry = self.python[unit]
            elif is_pass_through(first[1]):
                # cloud-init on Debian: its output goes through `tee`, which is all the journal sees of it; the
                # programs it runs later log lines of their own (useradd, from Debian 13's cloud-init-main.service).
                (first_line, entry), python = first, None
            else:
                continue  # not Python: its start does not read a hash secret
            found.append(_stall(unit, window.started, first_line, self.crng, entry, python))
        return sorted(found, key=lambda stall: stall["started"])


#: The fields of a unit's line that a stall shows.
_SHOWN = ("_EXE", "_COMM", "_CMDLINE")


def _kept(entry: Entry) -> Entry:
    return {name: entry[name] for name in _SHOWN if name in entry}


def _stall(unit: str, started: float, first_line: float, crng: float, entry: Entry, python: bool | None) -> Stall:
    command = journal.field(entry, "_CMDLINE") if python else None
    return {
        "unit": unit,
        "started": started,
        "first_line": first_line,
        "crng_init_done": crng,
        "lost": round(crng - started, 2),
        "exe": journal.field(entry, "_EXE") or journal.field(entry, "_COMM"),
        "python": python,
        "note": None if python else STALL_THROUGH_PIPE.format(exe=journal.field(entry, "_COMM") or "a pipe"),
        "avoid": [
            STALL_AVOID_RUN.format(
                command="..." if not command else command if len(command) <= 120 else command[:119] + "…"
            ),
            STALL_AVOID_HASHSEED.format(unit=unit),
            STALL_AVOID_ENTROPY.format(unit=unit),
        ],
    }


#: Programs that pass another program's output on to the journal: a unit whose lines all come from one of these
#: may run Python behind it (cloud-init's output goes through `tee -a /var/log/cloud-init-output.log`).
PASS_THROUGH = ("tee", "logger", "systemd-cat", "cat")


#: What the kernel adds to a process's executable (``_EXE``) when the file was replaced or removed while it ran.
DELETED = " (deleted)"


def is_pass_through(entry: Entry) -> bool:
    """Whether one of :data:`PASS_THROUGH` wrote the entry (``_EXE``, else ``_COMM``)."""
    exe = journal.field(entry, "_EXE")
    if exe is not None and exe.endswith(DELETED):
        exe = exe[: -len(DELETED)]
    name = os.path.basename(exe) if exe else journal.field(entry, "_COMM")
    return name in PASS_THROUGH


def from_systemd(entry: Entry) -> bool:
    """Whether systemd's service manager (PID 1) logged ``entry``, by journald's trusted fields: through its own
    journal connection (``_PID`` 1, which journald takes from the kernel), or through the kernel's buffer before
    journald ran (``_TRANSPORT`` kernel with the identifier ``systemd``: only root writes there). Another writer's
    ``UNIT=`` or "Starting X..." shapes nothing."""
    transport = journal.field(entry, "_TRANSPORT")
    if transport == "kernel":
        return journal.field(entry, "SYSLOG_IDENTIFIER") == "systemd"
    return transport == "journal" and journal.field(entry, "_PID") == "1"


def started_unit(entry: Entry) -> str | None:
    """The unit whose job systemd says it is starting in this entry ("Starting X..."), or None: only systemd's own
    messages count (:func:`from_systemd`)."""
    text = journal.message(entry)
    if not text.startswith("Starting ") or not from_systemd(entry):
        return None
    unit = journal.field(entry, "UNIT")
    if unit is not None and journal.field(entry, "_TRANSPORT") == "journal":
        return unit
    # Logged through the kernel's buffer before journald ran: "Starting name.service - Description..." (systemd
    # 249 and later; earlier ones name only the description).
    name = text[len("Starting ") :].split(" ", 1)[0]
    for ellipsis in ("...", "…"):
        if name.endswith(ellipsis):
            name = name[: -len(ellipsis)]
    return name if name.endswith(_events.UNIT_SUFFIXES) else None


#: The executables of Python interpreters: CPython's ``python``, ``python3``, ``python3.11``, ``python3.13t``,
#: ``python3.12-dbg``; PyPy's ``pypy3``, ``pypy3.9`` (Debian's), ``pypy3.10``, and ``pypy3.10-c`` as PyPy's build
#: leaves it. The command names (``_COMM``, the first 15 bytes of the name it was started as) of both.
PYTHON_EXE = r"(?:python[0-9.]*[a-z]*(?:-dbg)?|pypy[0-9.]*(?:-c)?)"
PYTHON_COMM = ("python", "pypy")


def is_python(entry: Entry, *, strict: bool = False) -> bool:
    """Whether a Python interpreter wrote the entry: its executable is a CPython or a PyPy (:data:`PYTHON_EXE`).
    ``strict``: the executable (``_EXE``, what the kernel says the process runs) decides when the entry has one; the
    command name (``_COMM``) only when it hasn't, as a process can rename itself."""
    import re

    exe = journal.field(entry, "_EXE")
    if exe is not None and exe.endswith(DELETED):  # the interpreter was upgraded on disk while it ran
        exe = exe[: -len(DELETED)]
    if exe is not None and re.fullmatch(PYTHON_EXE, os.path.basename(exe)):
        return True
    if strict and exe is not None:
        return False
    return (journal.field(entry, "_COMM") or "").startswith(PYTHON_COMM)


def kernel_release(entries: list[Entry]) -> tuple[int, int] | None:
    """(major, minor) of the kernel that booted, from its first message (``Linux version 6.12.12+bpo-...``), or
    None if the journal no longer holds it."""
    for entry in entries:
        release = release_of(entry)
        if release is not None:
            return release
    return None


def release_of(entry: Entry) -> tuple[int, int] | None:
    """(major, minor) of the kernel whose first message ``entry`` is, or None."""
    import re

    if journal.field(entry, "_TRANSPORT") not in (None, "kernel"):
        return None
    match = re.match(r"Linux version (\d+)\.(\d+)", journal.message(entry))
    return (int(match[1]), int(match[2])) if match else None
