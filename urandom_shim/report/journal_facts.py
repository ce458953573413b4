"""What one boot's journal says of it, reduced from its selected entries as they arrive (:class:`Reducer`): when the
kernel's CRNG was ready, which kernel booted, whether systemd saw a first boot, when it began, the shim's lines, and
the units that may have stalled; and how the facts of one boot that several file sets hold are merged, only ever
adding.

An entry is read once and dropped: what is kept of a boot is its facts and the shim's events, never its entries, so
the memory a journal costs does not grow with its size, nor with the files its machine's journal is split into.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple, TypedDict, cast

from .. import _messages
from . import journal, shim_lines, stalls
from .journal import CRNG_MARKERS, Entry
from .sources import Budget, Line, Lines, Stall

TYPE_CHECKING = False
if TYPE_CHECKING:
    from .._events import Record

#: A boot's (``_MACHINE_ID``, ``_BOOT_ID``), as its entries say.
Key = Tuple[Optional[str], Optional[str]]
#: The most rejected and unread lines kept of a boot to show (every one is counted).
MAX_LINES_KEPT = 20
#: How soon after boot a boot's earliest entry must be for its journal to reach back to the boot's start. The
#: kernel's first line ("Linux version ...") is at 0 s by the kernel's own clock; where the kernel's ring buffer
#: wrapped before journald read it, its oldest line left is a second or two later.
START_SECONDS = 5.0


class BootFacts(TypedDict):
    """One boot, as its journal says: its ids and hostname, the files it was read from, when its first entry was
    written (``first_seen``, µs since 1970), how soon after boot its earliest entry read was logged (``began``, in
    seconds: the kernel's first line is at 0), whether systemd saw a first boot, its kernel, ``crng init done``, the
    shim's events, the lines rejected and unread, the stalls, and how many entries were selected (and of them, how many
    had no time since boot: ``untimed``)."""

    machine_id: Optional[str]
    boot_id: Optional[str]
    hostname: Optional[str]
    files: List[str]
    first_seen: Optional[int]
    began: Optional[float]
    first_boot: bool
    kernel: Optional[str]
    crng_init_done: Optional[float]
    events: List[Record]
    rejected: Lines
    unread: Lines
    stalls: List[Stall]
    entries: int
    untimed: int
    held_back: int


class Reducer:
    """One boot's facts, from its selected entries, each given to :meth:`add` as it comes and then dropped."""

    def __init__(self, key: Key, budget: Budget | None = None) -> None:
        self.key = key
        self.budget = budget if budget is not None else Budget()
        self.facts: BootFacts = {
            "machine_id": key[0],
            "boot_id": key[1],
            "hostname": None,
            "files": [],
            "first_seen": None,
            "began": None,
            "first_boot": False,
            "kernel": None,
            "crng_init_done": None,
            "events": [],
            "rejected": {"count": 0, "lines": []},
            "unread": {"count": 0, "lines": []},
            "stalls": [],
            "entries": 0,
            "untimed": 0,
            "held_back": 0,
        }
        #: unit -> when systemd said it was starting it: where a stall can be.
        self.starts: Dict[str, List[float]] = {}
        #: The kernel's release, as (major, minor), once its first line is read.
        self.release: Tuple[int, int] | None = None
        #: One copy of each text the boot's events hold: a unit's thousand lines share their unit, call, caller...
        self._texts: Dict[str, str] = {}
        #: The events already kept, by their every field: a copy of a file (a rotated file copied as well as moved)
        #: adds no event twice.
        self._seen: set[tuple[object, ...]] = set()
        self._names: Dict[tuple[str, ...], tuple[str, ...]] = {}

    def add(self, entry: Entry, path: str | None = None) -> None:
        facts = self.facts
        facts["entries"] += 1
        if path is not None and path not in facts["files"]:
            facts["files"].append(path)
        if journal.bad_time(entry):
            facts["untimed"] += 1
        hostname = journal.field(entry, "_HOSTNAME")
        if hostname is not None:
            facts["hostname"] = hostname
        stamp = realtime(entry)
        if stamp is not None and (facts["first_seen"] is None or stamp < facts["first_seen"]):
            facts["first_seen"] = stamp
        self.seen_at(journal.at(entry))
        text = journal.message(entry)
        if text.startswith("Detected first boot") and first_boot(entry):
            facts["first_boot"] = True
        if journal.field(entry, "_TRANSPORT") in (None, "kernel"):
            self._kernel_line(entry, text)
        stalls.add_start(self.starts, entry)
        if self.budget.left <= 0 and shim_lines.believed_event(entry):
            self.facts["held_back"] += 1  # past what the report holds: not parsed, counted, and the source named
            return
        read = shim_lines.read_entry(entry)
        if read.event is not None:
            self._event(read.event)
        elif read.rejected is not None:
            _count(facts["rejected"], read.rejected)
        elif read.unread is not None:
            _count(facts["unread"], read.unread)

    def seen_at(self, time: float) -> None:
        """Note an entry of the boot logged ``time`` seconds after boot (NaN: no time)."""
        if time == time and (self.facts["began"] is None or time < self.facts["began"]):
            self.facts["began"] = time

    def _kernel_line(self, entry: Entry, text: str) -> None:
        facts = self.facts
        if any(mark in text for mark in CRNG_MARKERS):
            time = journal.at(entry)
            if time == time and (facts["crng_init_done"] is None or time < facts["crng_init_done"]):
                facts["crng_init_done"] = time
        if facts["kernel"] is None and text.startswith("Linux version "):
            facts["kernel"] = text[len("Linux version ") :].split(" ", 1)[0][:200] or None
            self.release = stalls.release_of(entry)

    def _event(self, event: Record) -> None:
        fields = cast("Dict[str, Any]", event)  # every field alike: the texts are shared, whatever they are
        if (tuple(event), *(_hashable(value) for value in fields.values())) in self._seen:
            return
        size = sum(len(value) for value in fields.values() if isinstance(value, str))
        if not self.budget.hold(size, len(fields) + len(event.get("argv") or ()), row(self.key, fields)):
            self.facts["held_back"] += 1  # past what the report holds: counted, and the source named
            return
        texts = self._texts
        for name, value in fields.items():
            if isinstance(value, str):
                fields[name] = texts.setdefault(value, value)
            elif isinstance(value, list):
                fields[name] = [texts.setdefault(item, item) if isinstance(item, str) else item for item in value]
        names = tuple(event)
        names = self._names.setdefault(names, names)
        self._seen.add((names, *(_hashable(value) for value in event.values())))
        self.facts["events"].append(event)

    def stall_units(self) -> list[str]:
        """The units whose own lines the stalls need (:func:`urandom_shim.report.stalls.candidates`): none where
        nothing can have stalled (no ``crng init done``, or a kernel before 5.18)."""
        crng = self.facts["crng_init_done"]
        if crng is None or not stalls.may_stall(self.release):
            return []
        return stalls.candidates(self.starts, crng)

    def finder(self) -> stalls.Finder | None:
        """A finder of this boot's stalls, to be given the units' own lines; None where nothing can have stalled."""
        crng = self.facts["crng_init_done"]
        if crng is None or not stalls.may_stall(self.release):
            return None
        return stalls.Finder(self.starts, crng)

    def reaches_start(self) -> bool:
        """Whether the boot's journal, as read, reaches back to the boot's start (:func:`reaches_start`)."""
        return reaches_start(self.facts)

    def done(self) -> BootFacts:
        """The facts, once every entry was added; the reducer's working state is let go."""
        self._texts.clear()
        self._seen.clear()
        self._names.clear()
        self.starts.clear()
        return self.facts


def reaches_start(facts: BootFacts) -> bool:
    """Whether the boot's journal reaches back to the boot's start: its earliest entry read was logged within
    :data:`START_SECONDS` of boot, as the kernel's first line is. Entries that name no boot are no journald's (a
    saved file written by hand): nothing says where their boot began, and they are not asked."""
    if facts["boot_id"] is None:
        return True
    return facts["began"] is not None and facts["began"] <= START_SECONDS


def no_start(facts: BootFacts) -> str:
    """The problem of a boot whose journal does not reach back to its start (:func:`reaches_start`), in words."""
    began = facts["began"]
    if began is None:
        why = _messages.REPORT_NO_BOOT_START_UNTIMED
    else:
        why = _messages.REPORT_NO_BOOT_START_AFTER.format(began=began)
    return _messages.REPORT_NO_BOOT_START.format(boot=facts["boot_id"], why=why)


def row(boot: object, fields: Dict[str, Any]) -> tuple[object, ...]:
    """The row of the report a finding of ``boot`` is counted in, near enough to count what rows cost: its program
    and its call site, and what was done there."""
    names = ("unit", "program", "call", "caller", "site", "policy", "policy_source", "mode", "action")
    return (boot, *(fields.get(name) for name in names), _hashable(fields.get("under")))


def _hashable(value: object) -> object:
    """A field of an event as part of its identity: a list (``argv``) as a tuple, a mapping (``under``) as its
    sorted items."""
    if isinstance(value, list):
        return tuple(_hashable(item) for item in value)
    if isinstance(value, dict):
        return tuple(sorted((str(key), _hashable(item)) for key, item in value.items()))
    return value


def _count(lines: Lines, line: Line) -> None:
    lines["count"] += 1
    keep(lines["lines"], [line])


def keep(lines: List[Line], more: List[Line]) -> None:
    """Add ``more`` to ``lines``, up to :data:`MAX_LINES_KEPT` in all."""
    lines.extend(more[: max(0, MAX_LINES_KEPT - len(lines))])


def realtime(entry: Entry) -> int | None:
    """When journald received the entry (``__REALTIME_TIMESTAMP``, µs since 1970), or None."""
    value = journal.field(entry, "__REALTIME_TIMESTAMP")
    if value is None or not 0 < len(value) <= 20 or not value.isascii() or not value.isdigit():
        return None
    return int(value)


def first_boot(entry: Entry) -> bool:
    """Whether systemd said "Detected first boot." in ``entry`` (through the kernel's buffer, before journald ran,
    or its own): only systemd's own message counts (:func:`urandom_shim.report.stalls.from_systemd`)."""
    return journal.message(entry).startswith("Detected first boot") and stalls.from_systemd(entry)


def hexadecimal(text: str) -> bool:
    return len(text) == 32 and all(char in "0123456789abcdef" for char in text)


def merge(boots: Dict[Key, BootFacts], facts: BootFacts) -> None:
    """Add one file set's facts of a boot to what other file sets said of the same ids. A file set only ever adds:
    its events, rejected and unread lines, stalls and files join the others'; a first boot stays one; the later
    ``crng init done`` counts (so that a machine forging another's ids can't move it earlier and take a finding
    away)."""
    key = (facts["machine_id"], facts["boot_id"])
    known = boots.get(key)
    if known is None:
        boots[key] = facts
        return
    known["events"] = [*known["events"], *facts["events"]]
    known["stalls"] = [*known["stalls"], *facts["stalls"]]
    known["files"] = [*known["files"], *(path for path in facts["files"] if path not in known["files"])]
    for into, more in ((known["rejected"], facts["rejected"]), (known["unread"], facts["unread"])):
        into["count"] += more["count"]
        keep(into["lines"], more["lines"])
    known["entries"] += facts["entries"]
    known["untimed"] += facts["untimed"]
    known["held_back"] += facts["held_back"]
    known["first_boot"] = known["first_boot"] or facts["first_boot"]
    if known["hostname"] is None:
        known["hostname"] = facts["hostname"]
    if known["kernel"] is None:
        known["kernel"] = facts["kernel"]
    seen = [value for value in (known["first_seen"], facts["first_seen"]) if value is not None]
    known["first_seen"] = min(seen) if seen else None
    began = [value for value in (known["began"], facts["began"]) if value is not None]
    known["began"] = min(began) if began else None
    crngs = [value for value in (known["crng_init_done"], facts["crng_init_done"]) if value is not None]
    known["crng_init_done"] = max(crngs) if crngs else None
