"""The stall the shim can't see, for ``urandom-shim report``: units whose Python interpreter waited in its own
start-up for the CRNG (Linux 5.18 and later), before the shim existed, and how each could start at once.
"""

from __future__ import annotations

import os

from .. import _events
from . import journal

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


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


def stalls(entries: list[dict[str, Any]], crng_done: float | None) -> list[dict[str, Any]]:
    """The units whose Python interpreter spent its start waiting for the CRNG: started before ``crng init done``
    (at ``crng_done``), and whose Python wrote its first line after it. Such an interpreter reads its hash secret
    before any ``.pth`` runs, so before the shim exists, and on Linux 5.18+ that read waits for the CRNG.

    A unit's start is systemd's "Starting X..." (an entry with ``UNIT=X``, or, logged through the kernel's buffer
    before journald ran, a message of systemd's that names X); its Python is an entry of its own processes
    (``_SYSTEMD_UNIT=X``) whose ``_EXE`` or ``_COMM`` is a python. A unit whose first Python line came before
    ``crng_done`` did not stall; one that wrote nothing can't be told. Nothing is a stall on a kernel the journal
    shows to be older than 5.18, nor with ``crng_done`` None. One dict per stall, by start:
    unit, started, first_line, crng_init_done, lost (the seconds from its start to the CRNG's, rounded to 0.01),
    exe, and avoid: three sentences on how it could start at once.
    """
    if crng_done is None:
        return []
    release = kernel_release(entries)
    if release is not None and release < STALLING_KERNEL:
        return []
    starts: dict[str, list[float]] = {}
    own_lines: dict[str, list[tuple[float, dict[str, Any]]]] = {}
    for entry in entries:
        time = journal.at(entry)
        if time != time:  # NaN: no time
            continue
        unit = started_unit(entry)
        if unit is not None:
            starts.setdefault(unit, []).append(time)
        own = journal.field(entry, "_SYSTEMD_UNIT")
        if own is not None and journal.field(entry, "_PID") != "1":
            own_lines.setdefault(own, []).append((time, entry))
    found = []
    for unit, times in starts.items():
        before = [time for time in times if time < crng_done]
        if not before or unit not in own_lines:
            continue
        started = max(before)  # its last start before the CRNG's; a later one is another run
        until = min((time for time in times if time > started), default=float("inf"))
        lines = sorted(
            ((time, entry) for time, entry in own_lines[unit] if started <= time < until), key=lambda line: line[0]
        )
        if not lines or lines[0][0] < crng_done:
            continue  # it wrote nothing, or it ran in the window: then the shim saw what it did
        pythons = [(time, entry) for time, entry in lines if is_python(entry)]
        if pythons:
            first_line, entry = pythons[0]
            python: bool | None = True
        elif is_pass_through(lines[0][1]):
            # cloud-init on Debian: its output goes through `tee`, which is all the journal sees of it; the programs
            # it runs later log lines of their own (useradd, from Debian 13's cloud-init-main.service).
            (first_line, entry), python = lines[0], None
        else:
            continue  # not Python: its start does not read a hash secret
        command = journal.field(entry, "_CMDLINE") if python else None
        found.append(
            {
                "unit": unit,
                "started": started,
                "first_line": first_line,
                "crng_init_done": crng_done,
                "lost": round(crng_done - started, 2),
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
        )
    return sorted(found, key=lambda stall: stall["started"])


#: Programs that pass another program's output on to the journal: a unit whose lines all come from one of these
#: may run Python behind it (cloud-init's output goes through `tee -a /var/log/cloud-init-output.log`).
PASS_THROUGH = ("tee", "logger", "systemd-cat", "cat")


#: What the kernel adds to a process's executable (``_EXE``) when the file was replaced or removed while it ran.
DELETED = " (deleted)"


def is_pass_through(entry: dict[str, Any]) -> bool:
    """Whether one of :data:`PASS_THROUGH` wrote the entry (``_EXE``, else ``_COMM``)."""
    exe = journal.field(entry, "_EXE")
    if exe is not None and exe.endswith(DELETED):
        exe = exe[: -len(DELETED)]
    name = os.path.basename(exe) if exe else journal.field(entry, "_COMM")
    return name in PASS_THROUGH


def started_unit(entry: dict[str, Any]) -> str | None:
    """The unit whose job systemd says it is starting in this entry ("Starting X..."), or None."""
    text = journal.message(entry)
    if not text.startswith("Starting "):
        return None
    unit = journal.field(entry, "UNIT")
    if unit is not None:
        return unit
    if journal.field(entry, "SYSLOG_IDENTIFIER") != "systemd" and journal.field(entry, "_COMM") != "systemd":
        return None
    # Logged through the kernel's buffer before journald ran: "Starting name.service - Description..." (systemd
    # 249 and later; earlier ones name only the description).
    name = text[len("Starting ") :].split(" ", 1)[0]
    for ellipsis in ("...", "…"):
        if name.endswith(ellipsis):
            name = name[: -len(ellipsis)]
    return name if name.endswith(_events.UNIT_SUFFIXES) else None


def is_python(entry: dict[str, Any], *, strict: bool = False) -> bool:
    """Whether a Python interpreter wrote the entry: its executable is python, python3, python3.11, python3.13t...
    ``strict``: the executable (``_EXE``, what the kernel says the process runs) decides when the entry has one; the
    command name (``_COMM``) only when it hasn't, as a process can rename itself."""
    import re

    exe = journal.field(entry, "_EXE")
    if exe is not None and exe.endswith(DELETED):  # the interpreter was upgraded on disk while it ran
        exe = exe[: -len(DELETED)]
    if exe is not None and re.fullmatch(r"python[0-9.]*[a-z]*(?:-dbg)?", os.path.basename(exe)):
        return True
    if strict and exe is not None:
        return False
    return (journal.field(entry, "_COMM") or "").startswith("python")


def kernel_release(entries: list[dict[str, Any]]) -> tuple[int, int] | None:
    """(major, minor) of the kernel that booted, from its first message (``Linux version 6.12.12+bpo-...``), or
    None if the journal no longer holds it."""
    import re

    for entry in entries:
        if journal.field(entry, "_TRANSPORT") not in (None, "kernel"):
            continue
        match = re.match(r"Linux version (\d+)\.(\d+)", journal.message(entry))
        if match:
            return int(match[1]), int(match[2])
    return None
