"""The systemd journal, for ``urandom-shim report``: journalctl's JSON entries streamed as they come (:func:`stream`,
one entry at a time, so that no more than the entry being read is held), a saved ``journalctl -o json`` output
read the same way (:func:`saved_entries`), and each entry's fields, text and time.

One JSON object per entry, each field a string, or an array of byte values where the text is not UTF-8. Two fields
give the time since boot: the kernel's own timestamp of a kernel message (``_SOURCE_MONOTONIC_TIMESTAMP``: journald
imports the messages logged before it ran later) and the time journald received an entry
(``__MONOTONIC_TIMESTAMP``), both in microseconds.
"""

from __future__ import annotations

import os
from typing import Any, Callable, Dict, Iterable, Iterator, List, NamedTuple, Optional, Tuple

from .. import _messages
from .sources import Kind, Problem, problem

#: One journal entry, as ``journalctl -o json`` prints it: field name to a string, an array of byte values, or an
#: array of either (a field held more than once). Read only through :func:`field`.
Entry = Dict[str, Any]


# -- one journalctl, streamed ------------------------------------------------------------------------------------------

#: The lines journalctl selects (``--grep``, PCRE2, case-sensitive, on MESSAGE): the shim's own; the kernel's ``crng
#: init done`` (its nonblocking pool's readiness before 4.8) and its first line, which names its release; systemd's
#: "Starting X..." (a unit's start, for the stalls) and "Detected first boot.". :func:`selected` is the same test.
CRNG_MARKERS = ("crng init done", "nonblocking pool is initialized")
_STARTS = (_messages.PREFIX, "Linux version ", "Starting ", "Detected first boot")
GREP = "|".join(
    (
        "^urandom-shim: ",
        *(mark.replace(".", "\\.") for mark in CRNG_MARKERS),
        "^Linux version ",
        "^Starting ",
        "^Detected first boot",
    )
)
#: The fields the report reads; journalctl adds the cursor, both timestamps and ``_BOOT_ID`` to every entry.
FIELDS = (
    "MESSAGE",
    "_TRANSPORT",
    "_EXE",
    "_COMM",
    "_CMDLINE",
    "_PID",
    "_UID",
    "_SYSTEMD_UNIT",
    "_SYSTEMD_USER_UNIT",
    "_SYSTEMD_SLICE",
    "UNIT",
    "SYSLOG_IDENTIFIER",
    "_SOURCE_MONOTONIC_TIMESTAMP",
    "_MACHINE_ID",
    "_HOSTNAME",
)
#: The most entries one journalctl gives the report (a boot's selected entries are a few hundred).
MAX_SELECTED = 100_000


def selecting(*matches: str) -> list[str]:
    """journalctl's arguments after what it reads: the selecting query (:data:`GREP`), or, given field ``matches``
    (``_SYSTEMD_UNIT=x.service``...), a query of those."""
    base = ["-o", "json", "--no-pager", "--output-fields=" + ",".join(FIELDS)]
    if matches:
        return [*base, *matches]
    return [*base, "--case-sensitive", "--grep", GREP]


#: The fields a query of a boot's first entries asks for: its ids and its times (journalctl adds both timestamps).
FIRST_FIELDS = ("_SOURCE_MONOTONIC_TIMESTAMP", "_MACHINE_ID")
#: How many of a boot's first entries are asked for its start: the kernel's lines, imported when journald started,
#: come first and carry the kernel's own times.
FIRST_ENTRIES = 50


def first_entries(*matches: str) -> list[str]:
    """journalctl's arguments after what it reads, for a boot's first entries: no selection, the fields of
    :data:`FIRST_FIELDS`, and the field ``matches`` (``_BOOT_ID=...``)."""
    return ["-o", "json", "--no-pager", "--output-fields=" + ",".join(FIRST_FIELDS), *matches]


def selected(entry: Entry) -> bool:
    """Whether :data:`GREP` selects ``entry``: what a saved journal's entries are filtered with."""
    text = message(entry)
    return text.startswith(_STARTS) or any(mark in text for mark in CRNG_MARKERS)


def matched_nothing(ran: Ran) -> bool:
    """Whether a selecting journalctl (``--grep``) ran to its end and found no line: it then exits 1 without a word,
    where a file it can't read makes it say why."""
    return ran.status == 1 and not ran.said and not ran.entries and ran.stopped is None


class Ran(NamedTuple):
    """How one journalctl went: its exit ``status`` (None if it could not be started: ``error`` says why), what it
    said on stderr (``said``, at most 4 KiB, on one line), how many entries it gave, and whether the report stopped it
    (``stopped``: :data:`TIMED_OUT` or :data:`TOO_MANY`)."""

    status: Optional[int]
    said: str
    entries: int
    stopped: Optional[str]
    error: Optional[str]


TIMED_OUT, TOO_MANY = "timed out", "too many"


def stream(
    command: List[str],
    on_entry: Callable[[Entry], None],
    *,
    timeout: float,
    limit: int = MAX_SELECTED,
    pass_fds: Tuple[int, ...] = (),
) -> Ran:
    """Run ``command`` (a journalctl that prints ``-o json``) and give each entry to ``on_entry`` as it arrives, until
    its output ends, ``timeout`` seconds are up, or ``limit`` entries came. A line that is not a JSON object is
    skipped. Its lines are bounded: journalctl prints a field over 4 KiB as null without ``--all``."""
    import subprocess
    import tempfile
    import time

    with tempfile.TemporaryFile() as said:
        try:
            process = subprocess.Popen(
                command,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=said,
                pass_fds=pass_fds,
                env=_environment(),
            )
        except OSError as exc:
            return Ran(None, "", 0, None, exc.strerror or type(exc).__name__)
        deadline = time.monotonic() + timeout
        stopped: str | None = TIMED_OUT
        count = 0
        try:
            count, stopped = _collect(process, on_entry, deadline, limit)
            if stopped is None:  # its output ended: it is exiting
                process.wait(max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            stopped = TIMED_OUT
        finally:
            if process.poll() is None:
                process.kill()
            status = process.wait()
        said.seek(0)
        text = said.read(4096).decode("utf-8", "replace")
    return Ran(status, " ".join(text.split()), count, stopped, None)


def _collect(process: Any, on_entry: Callable[[Entry], None], deadline: float, limit: int) -> tuple[int, str | None]:
    import json
    import selectors
    import time

    stdout = process.stdout
    pending = b""
    count = 0
    try:
        with selectors.DefaultSelector() as selector:
            selector.register(stdout, selectors.EVENT_READ)
            while True:
                left = deadline - time.monotonic()
                if left <= 0:
                    return count, TIMED_OUT
                if not selector.select(left):
                    continue
                chunk = os.read(stdout.fileno(), 1 << 16)
                if not chunk:
                    return count, None
                pending += chunk
                *lines, pending = pending.split(b"\n")
                for line in lines:
                    try:
                        entry = json.loads(line)
                    except (ValueError, RecursionError):
                        continue
                    if isinstance(entry, dict):
                        if count >= limit:
                            return count, TOO_MANY
                        count += 1
                        on_entry(entry)
    finally:
        stdout.close()


def _environment() -> dict[str, str]:
    """journalctl's environment: no pager and no colours, whatever the user's settings say."""
    return {**os.environ, "SYSTEMD_PAGER": "cat", "PAGER": "cat", "SYSTEMD_COLORS": "0"}


# -- this boot's journal -------------------------------------------------------------------------------------------

#: What journalctl says on stderr when the user may read only their own journal, or none.
_PERMISSION_SIGNS = ("insufficient permissions", "not seeing messages from other users", "permission denied")
#: What it says when there is no journal of this boot.
_NO_BOOT_SIGNS = ("no journal files were found", "no such boot", "is not available", "no persistent journal")
#: The longest the report waits for one journalctl of this boot's journal.
TIMEOUT = 30.0


def this_boot(matches: Iterable[str] = ()) -> list[str]:
    """The journalctl that reads this boot's journal: the selecting query, or one of field ``matches``."""
    return ["journalctl", "-b", *selecting(*matches)]


def this_boot_problem(ran: Ran, timeout: float) -> Problem | None:
    """What went wrong with a journalctl of this boot (:func:`this_boot`), or None: it is not installed or could not
    start, this user may read only part of the journal (the entries it gave still count), there is nothing of this
    boot in it, it failed, or it did not finish in time."""
    if ran.status is None:
        if ran.error == "No such file or directory":
            return problem(Kind.NO_JOURNALCTL, None, _messages.REPORT_JOURNALCTL_MISSING)
        return problem(Kind.JOURNALCTL_FAILED, None, _messages.REPORT_JOURNALCTL_NOT_STARTED.format(error=ran.error))
    said = ran.said[:200]
    detail = _messages.line(said)[len(_messages.PREFIX) :] if said else _messages.REPORT_JOURNAL_NOTHING_LOGGED
    if ran.stopped == TIMED_OUT:
        return problem(Kind.TIMED_OUT, None, _messages.REPORT_JOURNAL_TIMED_OUT.format(timeout=timeout))
    if ran.stopped == TOO_MANY:
        return problem(Kind.TOO_MANY_ENTRIES, None, _messages.REPORT_FILE_TOO_MANY.format(limit=MAX_SELECTED))
    if any(sign in said.lower() for sign in _PERMISSION_SIGNS):
        return problem(Kind.PERMISSION, None, _messages.REPORT_JOURNAL_PERMISSION)
    if ran.status == 0 or matched_nothing(ran) or any(sign in said.lower() for sign in _NO_BOOT_SIGNS):
        return (
            None if ran.entries else problem(Kind.NO_BOOT, None, _messages.REPORT_JOURNAL_NO_BOOT.format(detail=detail))
        )
    return problem(
        Kind.JOURNALCTL_FAILED, None, _messages.REPORT_JOURNAL_FAILED.format(status=ran.status, detail=detail)
    )


# -- a saved journal ---------------------------------------------------------------------------------------------------

#: The largest saved journal read: a boot's `journalctl -b -o json` is a few megabytes, a busy one tens.
MAX_JOURNAL_FILE = 256 * 1024 * 1024


class NotRegular(OSError):
    """A file to read is not a regular file (a FIFO, a device, a directory, a socket): refused before any read."""


class TooLarge(OSError):
    """A file to read is larger than the report reads."""


def open_regular(path: str, limit: int) -> int:
    """A descriptor of the regular file ``path``, opened without blocking (a FIFO with no writer would hang an open,
    and one with a writer a read) and checked with ``fstat`` before anything is read: :class:`NotRegular` for
    anything but a regular file, :class:`TooLarge` above ``limit`` bytes; any other OSError as ``open`` raises it."""
    import stat

    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOCTTY", 0)
    fd = os.open(path, flags)
    try:
        found = os.fstat(fd)
        if not stat.S_ISREG(found.st_mode):
            raise NotRegular(f"not a regular file ({kind_of(found.st_mode)})")
        if found.st_size > limit:
            raise TooLarge(f"larger than {limit // (1024 * 1024)} MiB")
    except BaseException:
        os.close(fd)
        raise
    return fd


def chunks(fd: int, limit: int) -> Iterator[bytes]:
    """The bytes of ``fd``, a megabyte at a time, :class:`TooLarge` past ``limit`` (a file that grows as it is
    read)."""
    size = 0
    while True:
        chunk = os.read(fd, 1 << 20)
        if not chunk:
            return
        size += len(chunk)
        if size > limit:
            raise TooLarge(f"larger than {limit // (1024 * 1024)} MiB")
        yield chunk


def read_regular(path: str, limit: int) -> bytes:
    """The bytes of the regular file ``path``, at most ``limit`` (:func:`open_regular`)."""
    fd = open_regular(path, limit)
    try:
        return b"".join(chunks(fd, limit))
    finally:
        os.close(fd)


def kind_of(mode: int) -> str:
    """What a file that is not a regular file is, in words: "a FIFO", "a directory"..."""
    import stat

    for test, name in (
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
    ):
        if test(mode):
            return name
    return "not a file"


class Saved:
    """A saved ``journalctl -o json`` output, read one line at a time: :meth:`entries` gives its entries (again on
    every call: a second pass reads the file again), :attr:`skipped` counts its lines that are not one (a line cut
    short, say), :attr:`problem` says why it could not be read."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.skipped = 0
        self.lines = 0
        self.problem: Problem | None = None

    def entries(self) -> Iterator[Entry]:
        import json

        self.skipped = self.lines = 0
        try:
            fd = open_regular(self.path, MAX_JOURNAL_FILE)
        except FileNotFoundError:
            self.problem = self._cant(Kind.NO_SUCH_PATH, "No such file or directory")
            return
        except NotRegular as exc:
            self.problem = self._cant(Kind.NOT_REGULAR, str(exc))
            return
        except TooLarge as exc:
            self.problem = self._cant(Kind.TOO_LARGE, str(exc))
            return
        except OSError as exc:
            self.problem = self._cant(Kind.UNREADABLE, exc.strerror or type(exc).__name__)
            return
        try:
            pending = b""
            for chunk in chunks(fd, MAX_JOURNAL_FILE):
                *lines, pending = (pending + chunk).split(b"\n")
                for line in lines:
                    entry = self._entry(json, line)
                    if entry is not None:
                        yield entry
            entry = self._entry(json, pending)
            if entry is not None:
                yield entry
        except TooLarge as exc:
            self.problem = self._cant(Kind.TOO_LARGE, str(exc))
            return
        except OSError as exc:
            self.problem = self._cant(Kind.UNREADABLE, exc.strerror or type(exc).__name__)
            return
        finally:
            os.close(fd)
        if self.lines == self.skipped:
            self.problem = (
                problem(
                    Kind.NOTHING_READABLE, self.path, _messages.REPORT_JOURNAL_FILE_NOT_JSON.format(lines=self.lines)
                )
                if self.lines
                else problem(Kind.EMPTY, self.path, _messages.REPORT_JOURNAL_FILE_EMPTY)
            )

    def _entry(self, json: Any, line: bytes) -> Entry | None:
        if not line.strip():
            return None
        self.lines += 1
        try:
            entry = json.loads(line)
        except (ValueError, RecursionError):  # not JSON, not UTF-8, or nested deeper than the parser goes
            entry = None
        if isinstance(entry, dict):
            return entry
        self.skipped += 1
        return None

    def _cant(self, kind: Kind, error: str) -> Problem:
        return problem(kind, self.path, _messages.REPORT_JOURNAL_CANT_BE_READ.format(error=error))


def read_export(path: str) -> tuple[list[Entry], int]:
    """The entries of a saved ``journalctl -o json`` output, and how many of its lines were not one. Raises OSError
    if the file can't be read, :class:`NotRegular` if it is not a regular file and :class:`TooLarge` if it is larger
    than :data:`MAX_JOURNAL_FILE`."""
    return parse_export(read_regular(path, MAX_JOURNAL_FILE).splitlines())


def parse_export(lines: Iterable[bytes]) -> tuple[list[Entry], int]:
    """(entries, lines skipped) of ``journalctl -o json`` output, given as lines of bytes. Blank lines don't count."""
    import json

    entries: list[Entry] = []
    skipped = 0
    for line in lines:
        if not line.strip():
            continue
        try:
            entry = json.loads(line)
        except (ValueError, RecursionError):  # not JSON, or not UTF-8
            entry = None
        if isinstance(entry, dict):
            entries.append(entry)
        else:
            skipped += 1
    return entries, skipped


# -- an entry's fields ---------------------------------------------------------------------------------------------


def field(entry: Entry, name: str) -> str | None:
    """A field's text. journald gives text that is not UTF-8 (or holds control characters) as a list of byte
    values, and a field that an entry holds more than once as a list of values: the first one counts. None when the
    entry has no such field, or journalctl left it out (null: larger than it prints without ``--all``)."""
    value = entry.get(name)
    if isinstance(value, list) and value and not all(isinstance(item, int) for item in value):
        value = value[0]
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        try:
            return bytes(value).decode("utf-8", "replace")
        except (TypeError, ValueError):  # not byte values
            return None
    return None


def message(entry: Entry) -> str:
    """The entry's MESSAGE, "" if it has none."""
    return field(entry, "MESSAGE") or ""


def ids(entry: Entry) -> tuple[str | None, str | None]:
    """The (``_MACHINE_ID``, ``_BOOT_ID``) the entry names: the boot it is of."""
    return field(entry, "_MACHINE_ID"), field(entry, "_BOOT_ID")


#: The largest time since boot, and the longest wait, that a record or a line may say: about 31 years.
MAX_SECONDS = 10**9
#: The largest repeat count a record or a line may say.
MAX_COUNT = 10**12


def _stamp(value: str | None) -> float | None:
    """A timestamp field in seconds, None when it is not a time since boot: not digits, or out of range (at most
    10**9 s in microseconds; one of thousands of digits is no number int() or float() reads)."""
    if (
        value is None
        or len(value) > 16
        or not value.isdigit()
        or not value.isascii()
        or int(value) > MAX_SECONDS * 10**6
    ):
        return None
    return int(value) / 1e6


def at(entry: Entry) -> float:
    """When the entry was logged, in seconds since boot: the kernel's own timestamp of a kernel message
    (``_SOURCE_MONOTONIC_TIMESTAMP``) if it has one, else when journald received it (``__MONOTONIC_TIMESTAMP``).
    NaN if it has neither."""
    for name in ("_SOURCE_MONOTONIC_TIMESTAMP", "__MONOTONIC_TIMESTAMP"):
        seconds = _stamp(field(entry, name))
        if seconds is not None:
            return seconds
    return float("nan")


def bad_time(entry: Entry) -> bool:
    """Whether the entry has a timestamp that is no time since boot (not digits, or out of range): such an entry is
    read without a time, and counted."""
    for name in ("_SOURCE_MONOTONIC_TIMESTAMP", "__MONOTONIC_TIMESTAMP"):
        value = field(entry, name)
        if value is not None and _stamp(value) is None:
            return True
    return False
