"""What a report holds (:class:`Report`, what ``--json`` prints): what it read, source by source
(:class:`EventsSource`, :class:`JournalSource`, :class:`KernelSource`), and what it could not read, as kinds: each
problem is a :class:`Kind`, the path it is about, and the catalogue's sentence (:mod:`urandom_shim._messages`). The
gate decides on the kind alone; the sentence is for people.
"""

from __future__ import annotations

import enum
from typing import Dict, List, Optional, TypedDict

TYPE_CHECKING = False
if TYPE_CHECKING:
    from .shapes import BootSeen, Figures, Machine, PolicyVerdict, Program


class Kind(str, enum.Enum):
    """Why something asked for was not read, or not read in full. :data:`ABSENT` are the kinds that mean there was
    simply nothing there, which ``--allow-empty`` accepts; every other kind fails ``--fail-for`` (exit 3)."""

    # A path given on the command line that does not exist: a typo is never read as "nothing there".
    NO_SUCH_PATH = "no-such-path"
    # The configured (or default) events file does not exist: the shim creates it at its first event.
    NO_EVENTS_FILE = "no-events-file"
    # An events file that holds nothing but blanks, or a saved journal without entries.
    EMPTY = "empty"
    # A directory of journal files that holds none.
    NO_JOURNAL_FILES = "no-journal-files"
    # Refused before anything was read: not a regular file, or larger than the report reads.
    NOT_REGULAR = "not-regular"
    TOO_LARGE = "too-large"
    # The system refused to open or list it (permission, I/O error).
    UNREADABLE = "unreadable"
    # It holds lines, none of them a record (or a journal entry) the report can read.
    NOTHING_READABLE = "nothing-readable"
    # Left out of a directory's walk, and named: a symbolic link, a hidden name, too deep, past the file cap.
    LINK = "link"
    HIDDEN = "hidden"
    TOO_DEEP = "too-deep"
    TOO_MANY_FILES = "too-many-files"
    # The journal: journalctl is missing, can't start, this user may read only part of it, this boot is not in it.
    NO_JOURNALCTL = "no-journalctl"
    JOURNALCTL_FAILED = "journalctl-failed"
    PERMISSION = "permission"
    NO_BOOT = "no-boot"
    # A journal file journalctl can't read, that --verify finds damaged, or whose read stopped or said something.
    NOT_A_JOURNAL = "not-a-journal"
    DAMAGED = "damaged"
    STOPPED = "stopped"
    WARNED = "warned"
    TIMED_OUT = "timed-out"
    TOO_MANY_ENTRIES = "too-many-entries"
    STALLS_NOT_LOOKED_FOR = "stalls-not-looked-for"
    # More findings than the report holds in all (:data:`MAX_HELD`): the rest of the source was not read.
    TOO_MANY_FINDINGS = "too-many-findings"
    # A boot whose journal does not reach back to the boot's start: what it logged before is unknown.
    NO_BOOT_START = "no-boot-start"
    # A line of the shim's, written by a trusted writer, that reads as an event but does not parse in full.
    UNREAD_LINE = "unread-line"


#: The kinds that mean there was nothing there to read: what ``--allow-empty`` accepts as a machine without events.
ABSENT = frozenset({Kind.NO_EVENTS_FILE, Kind.EMPTY, Kind.NO_JOURNAL_FILES, Kind.NO_JOURNALCTL, Kind.NO_BOOT})


class Problem(TypedDict):
    """One thing that was not read: its ``kind``, the ``path`` it is about (None for the journal of this boot), and
    the sentence that says it (``problem``, from the catalogue, without the path)."""

    kind: Kind
    path: Optional[str]
    problem: str


#: The most memory the findings a report holds may take, as :meth:`Budget.hold` counts them: the records of its
#: events files and the shim's lines of its journals, and the rows the report makes of them. A fleet of a thousand
#: machines whose boots called a few dozen times each takes a fraction of it. Past it, what is left of a source is not
#: read, and the source is named: however many findings a forged input holds, and however large each, the report's
#: memory is bounded.
MAX_HELD = 256 * 1024 * 1024


def cost(size: int, fields: int) -> int:
    """What a finding costs the report to hold, in bytes, from the size of its text (``size``, a record's line or a
    journal line's fields) and the number of its fields and list items (``fields``): its strings and its dict's
    slots. It counts more than Python takes (measured: a record of the events file of 30 fields and 670 bytes takes
    4.0 KiB, a record of two fields 300 bytes)."""
    return size + 100 * fields + 400


def row_cost(size: int) -> int:
    """What a call site costs beyond its findings, the first time a boot makes it: its row in that boot's programs,
    in the merged report and in its text or ``--json`` (measured: 5.7 KiB for a call site whose caller is 700
    characters long)."""
    return 2 * size + 4000


class Budget:
    """How much more the report may hold (:data:`MAX_HELD`, in bytes as :meth:`hold` counts them), shared by every
    source it reads."""

    def __init__(self) -> None:
        self.limit = self.left = MAX_HELD
        self.rows: set[tuple[object, ...]] = set()

    def take(self, amount: int) -> bool:
        """Take ``amount`` bytes of what is left, if they are left."""
        if amount > self.left:
            self.left = 0  # one finding refused: the rest of the source is not read either
            return False
        self.left -= amount
        return True

    def hold(self, size: int, fields: int, row: tuple[object, ...]) -> bool:
        """Take what a finding costs (:func:`cost`), and its row's (:func:`row_cost`) when ``row`` (its boot and call
        site) is new; whether it may be held."""
        new = row not in self.rows
        if not self.take(cost(size, fields) + (row_cost(size) if new else 0)):
            return False
        if new:
            self.rows.add(row)
        return True

    @property
    def mebibytes(self) -> int:
        return self.limit // (1024 * 1024)


def problem(kind: Kind, path: str | None, text: str) -> Problem:
    return {"kind": kind, "path": path, "problem": text}


def said(found: Problem) -> str:
    """The problem as one line: ``PATH: sentence``, or the sentence alone when it is about no path."""
    return found["problem"] if found["path"] is None else f"{found['path']}: {found['problem']}"


def absent(found: Problem) -> bool:
    """Whether ``found`` says there was nothing there to read (:data:`ABSENT`)."""
    return found["kind"] in ABSENT


class Line(TypedDict):
    """A line of a journal that reads as one of the shim's events and was not read as one: why (``reason``), who
    wrote it by journald's trusted fields (``unit``, ``exe``, ``uid``, ``pid``), when (``time``, seconds since boot,
    or None), and its ``message`` cut to 200 characters."""

    reason: str
    unit: Optional[str]
    exe: Optional[str]
    uid: Optional[int]
    pid: Optional[int]
    time: Optional[float]
    message: str


class Source(TypedDict):
    """What every source says: its ``path`` (or what it is, for this boot's journal), its ``problems``, the first of
    them in words (``problem``, None when there is none), whether it was ``read`` (something of it was, and it is not
    in doubt as a whole), and whether there was simply nothing there (``absent``: :data:`ABSENT` kinds alone)."""

    path: Optional[str]
    problems: List[Problem]
    problem: Optional[str]
    read: bool
    absent: bool


class EventsSource(Source):
    """The events files: those named (``paths``; ``path`` joins them), how many ``files`` were read, the ``records``
    read and those ``skipped`` (by reason: ``skipped_why``), and, with ``--allow-empty``, the files that were empty
    and so read as machines without events (``empty``)."""

    paths: List[str]
    files: int
    records: int
    skipped: int
    skipped_why: Dict[str, int]
    empty: int


class JournalSource(Source):
    """A journal: this boot's (``journalctl -b``), a saved one (``--journal-file``), or a directory of journal files
    (``--journal-dir``). How many journal ``files`` it holds, the ``entries`` selected of them, the shim's events read
    (``records``), its lines ``rejected`` and ``unread`` (each counted; the first 20 of each listed in
    ``rejected_lines`` and ``unread_lines``), and the entries with no time since boot (``untimed``)."""

    files: int
    entries: int
    records: int
    rejected: int
    rejected_lines: List[Line]
    unread: int
    unread_lines: List[Line]
    untimed: int


class KernelSource(TypedDict):
    """Where ``crng init done`` came from (``source``, in words), and whether the window was simulated."""

    crng_init_done: Optional[float]
    source: str
    simulated: bool


class Lines(TypedDict):
    """Lines of a journal that read as the shim's events and were not read as events: how many, and the first 20."""

    count: int
    lines: List[Line]


class Stall(TypedDict):
    """A unit whose Python interpreter spent its start waiting for the CRNG (:func:`urandom_shim.report.stalls.stalls`):
    when it started and wrote its first line, ``crng init done``, the seconds ``lost``, its executable, whether the
    journal shows its Python (``python``; None behind a pipe, with a ``note``), and how it could start at once
    (``avoid``)."""

    unit: str
    started: float
    first_line: float
    crng_init_done: float
    lost: float
    exe: Optional[str]
    python: Optional[bool]
    note: Optional[str]
    avoid: List[str]


class Sources(TypedDict, total=False):
    """The sources a report was asked to read, by name, and where ``crng init done`` came from."""

    events: EventsSource
    journal: JournalSource
    journal_dirs: List[JournalSource]
    kernel: KernelSource


class Report(TypedDict):
    """The report, as ``--json`` prints it (docs/reference/cli.md lists each field). Its programs, verdict, machines,
    boots and figures are :mod:`urandom_shim.report.verdict`'s and :mod:`urandom_shim.report.fleet`'s."""

    v: int
    since: Optional[float]
    read: bool
    allow_empty: bool
    empty_allowed: bool
    fleet_mode: bool
    sources: Sources
    crng_init_done: Optional[float]
    machines: List[Machine]
    boots: List[BootSeen]
    fleet: Figures
    programs: List[Program]
    stalls: List[Stall]
    rejected: Lines
    unread: Lines
    verdict: Dict[str, PolicyVerdict]
