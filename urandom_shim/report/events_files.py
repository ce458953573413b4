"""The events files a report reads: a file as given, or every regular file below a directory (what a log shipper
collects), each read record by record and checked before a record counts (:func:`malformed`: a malformed record is
skipped and counted). Whatever is not read is named, as a kind (:mod:`urandom_shim.report.sources`): a symbolic link,
a hidden name, a directory too deep, the files past the cap, a file that is not a regular file.
"""

from __future__ import annotations

import os
from typing import Any, Dict, Iterator, List, NamedTuple, Optional, TypedDict, cast

from .. import _events, _messages, _policies
from . import journal, journal_facts
from .sources import Budget, Kind, Problem, problem
from .verdict import KNOWN_SITES

TYPE_CHECKING = False
if TYPE_CHECKING:
    from .._events import Record

#: The largest events file read: a boot's events are a few kilobytes; a file this big is not ours.
MAX_EVENTS_FILE = 64 * 1024 * 1024
#: The most files a directory of events gives, and how deep below it they are looked for.
MAX_EVENTS_FILES = 100_000
MAX_DEPTH = 8


class FileRead(TypedDict):
    """What an events file holds: its valid records (``events``), why nothing of it could be read (``problem``, or
    None), why it was read only in part (``partly``: the report's memory or time ran out; the records before that
    count), and how many records were skipped, by reason (``skipped``: see :func:`malformed`)."""

    events: List[Record]
    problem: Optional[Problem]
    partly: Optional[Problem]
    skipped: Dict[str, int]


def read_events(path: str) -> tuple[list[Record], str | None, int]:
    """The events in ``path``: (events, why nothing could be read or None, records skipped)."""
    found = read_events_file(path)
    return found["events"], found["problem"]["problem"] if found["problem"] else None, sum(found["skipped"].values())


#: The longest line read as a record: the shim writes each in one write() of at most 4,096 bytes. Of a longer line,
#: only its end from its last record start is read (what an older shim appended to another writer's line).
MAX_RECORD_LINE = 64 * 1024
#: How often (in lines) a read looks at the time it has left.
_CLOCK_EVERY = 4096


def read_events_file(
    path: str, *, named: bool = True, budget: Budget | None = None, deadline: float | None = None
) -> FileRead:
    """What the events file ``path`` holds (:class:`FileRead`), read a megabyte at a time, each record checked and
    held as it comes. A file that does not exist is a problem of kind :attr:`~Kind.NO_SUCH_PATH` when it was
    ``named`` (given on the command line: a typo is never "nothing there"), else :attr:`~Kind.NO_EVENTS_FILE` (the
    configured file, which the shim creates at its first event). An empty one is :attr:`~Kind.EMPTY`; a file of
    lines none of which is a record, :attr:`~Kind.NOTHING_READABLE`.

    The records held take at most what ``budget`` has left, and the read stops at ``deadline`` (on the monotonic
    clock): past either, the rest is not read, and ``partly`` says so. A file that is not a regular file (a FIFO, a
    device, a directory) is refused before anything is read, without waiting for a writer."""
    import json
    import time

    result: FileRead = {"events": [], "problem": None, "partly": None, "skipped": {}}
    try:
        fd = journal.open_regular(path, MAX_EVENTS_FILE)
    except FileNotFoundError:
        if named:
            result["problem"] = problem(Kind.NO_SUCH_PATH, path, _messages.REPORT_NO_SUCH_FILE)
        else:
            result["problem"] = problem(Kind.NO_EVENTS_FILE, path, _messages.REPORT_NO_EVENTS_FILE)
        return result
    except journal.NotRegular as exc:
        kind = str(exc).partition("(")[2].rstrip(")") or "not a file"
        text = _messages.REPORT_REFUSED_NOT_REGULAR.format(kind=kind)
        result["problem"] = problem(Kind.NOT_REGULAR, path, text)
        return result
    except journal.TooLarge:
        text = _messages.REPORT_REFUSED_TOO_LARGE.format(limit=MAX_EVENTS_FILE // (1024 * 1024))
        result["problem"] = problem(Kind.TOO_LARGE, path, text)
        return result
    except OSError as exc:
        result["problem"] = _unreadable(path, exc)
        return result
    budget = budget if budget is not None else Budget()
    skipped: dict[str, int] = {}
    lines = blank = 0
    try:
        chunks = journal.chunks(fd, MAX_EVENTS_FILE)
        for line in _lines(chunks):
            lines += 1
            if not line.strip():
                blank += 1
                continue
            for record in _records(json, line, skipped):
                why = malformed(record)
                if why is not None:
                    skipped[why] = skipped.get(why, 0) + 1
                    continue
                argv = record.get("argv") or ()
                boot = (path, record.get("machine_id"), record.get("boot_id"))
                if not budget.hold(len(line), len(record) + len(argv), journal_facts.row(boot, record)):
                    left = 1 + sum(chunk.count(b"\n") for chunk in chunks)
                    text = _messages.REPORT_TOO_MANY_FINDINGS.format(count=left, limit=budget.mebibytes)
                    result["partly"] = problem(Kind.TOO_MANY_FINDINGS, path, text)
                    break
                held = cast("Record", record)  # every field it holds has its type now
                held["from"] = "file"
                result["events"].append(held)
            if result["partly"] is not None:
                break
            if deadline is not None and lines % _CLOCK_EVERY == 0 and time.monotonic() > deadline:
                result["partly"] = problem(Kind.TIMED_OUT, path, _messages.REPORT_EVENTS_OUT_OF_TIME)
                break
    except journal.TooLarge:  # it grew past the limit as it was read
        text = _messages.REPORT_REFUSED_TOO_LARGE.format(limit=MAX_EVENTS_FILE // (1024 * 1024))
        result["events"], result["problem"] = [], problem(Kind.TOO_LARGE, path, text)
        return result
    except OSError as exc:
        result["events"], result["problem"] = [], _unreadable(path, exc)
        return result
    finally:
        os.close(fd)
    result["skipped"] = skipped
    if lines == blank:
        # The shim creates the file only to write a record to it: an empty one holds nothing, which is no verdict.
        result["problem"] = problem(Kind.EMPTY, path, _messages.REPORT_EVENTS_EMPTY)
    elif skipped and not result["events"] and result["partly"] is None:  # nothing but garbage: not read
        why = "; ".join(f"{count} {reason}" for reason, count in sorted(skipped.items()))
        result["problem"] = problem(Kind.NOTHING_READABLE, path, _messages.REPORT_NO_RECORD.format(why=why))
    return result


def _unreadable(path: str, exc: OSError) -> Problem:
    return problem(Kind.UNREADABLE, path, _messages.REPORT_CANNOT_BE_READ.format(error=exc.strerror or exc))


def _lines(chunks: Iterator[bytes]) -> Iterator[bytes]:
    """The lines of ``chunks``, without their newlines. Of a line longer than :data:`MAX_RECORD_LINE`, only its last
    :data:`MAX_RECORD_LINE` bytes are kept, after a NUL (no JSON text holds one, so the line as a whole is no
    record): where a record of an older shim can still be, at its end, and no more memory than that."""
    pending = b""
    long = False
    for chunk in chunks:
        pending += chunk
        *whole, pending = pending.split(b"\n")
        for line in whole:
            if long or len(line) > MAX_RECORD_LINE:
                line = b"\0" + line[-MAX_RECORD_LINE:]
            long = False
            yield line
        if len(pending) > MAX_RECORD_LINE:
            pending, long = pending[-MAX_RECORD_LINE:], True
    if pending or long:
        yield b"\0" + pending if long else pending


def _records(json: Any, line: bytes, skipped: Dict[str, int]) -> Iterator[Dict[str, Any]]:
    """The record a line holds (:func:`parse_records`), the line counted in ``skipped`` when it is not one."""
    record = _json_object(json, line)
    if record is None:
        skipped[NOT_A_RECORD] = skipped.get(NOT_A_RECORD, 0) + 1
        start = line.rfind(_RECORD_START)
        record = _json_object(json, line[start:]) if start > 0 else None
    if record is not None:
        yield record


def parse_records(data: bytes) -> tuple[list[Dict[str, Any]], int]:
    """(records, lines that hold none) of the events file's bytes. Blank lines don't count: the shim starts each
    write with a newline. A line that is not a JSON object as a whole counts for the record that ends it, if one
    does: what a writer of an older shim, which began no new line, appended to a line another writer left unfinished
    (the file is shared, mode 0622). That record is the end of the line from its last ``{"v":``: the shim writes
    that only at the start of a record (a ``"`` in a string is escaped, and a record holds no object), so whatever
    another writer left before it, the record is read as it was written, and one parse per line bounds the work.
    The rest of the line is counted as a line skipped."""
    import json

    records: list[Dict[str, Any]] = []
    skipped: Dict[str, int] = {}
    for line in _lines(iter([data])):
        if line.strip():
            records.extend(_records(json, line, skipped))
    return records, skipped.get(NOT_A_RECORD, 0)


#: How every record the shim writes begins (:func:`urandom_shim._events.dumps` writes ``v`` first).
_RECORD_START = b'{"v":'


def _json_object(json: Any, text: bytes) -> Dict[str, Any] | None:
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):  # not JSON, not UTF-8, or nested deeper than the parser goes
        return None
    return value if isinstance(value, dict) else None


#: Why a line of the events file was skipped.
NOT_A_RECORD = "not a JSON object"
#: The fields of a record, and the types each may have (None: the field may be null or absent).
_TEXT = (str, type(None))
FIELDS: dict[str, tuple[type, ...]] = {
    "event": (str,),
    "call": (str,),
    "caller": _TEXT,
    "site": _TEXT,
    "unit": _TEXT,
    "program": _TEXT,
    "policy": _TEXT,
    "policy_source": _TEXT,
    "mode": _TEXT,
    "action": _TEXT,
    "would": _TEXT,
    "simulated": (str, bool, type(None)),
    "argv": (list, type(None)),
    "pid": (int, type(None)),
    "boot_time": (int, float, type(None)),
    "waited": (int, float, type(None)),
    "count": (int, type(None)),
    "machine_id": _TEXT,
    "boot_id": _TEXT,
    "hostname": _TEXT,
    "image": _TEXT,
    "kernel": _TEXT,
    "first_boot": (bool, type(None)),
    "under": (dict, type(None)),
    "window": (int, float, type(None)),
    "timeout": (int, float, type(None)),
    "on_timeout": _TEXT,
    "seed_random_instances": _TEXT,
    "floor": _TEXT,
    "interpreter": _TEXT,
    "pinned": (bool, type(None)),
    "cut": (list, type(None)),
    "test": _TEXT,
}
#: The largest number a field of a record may hold: times and waits (seconds), counts, and anything else (a pid).
_LIMITS = {
    "boot_time": journal.MAX_SECONDS,
    "waited": journal.MAX_SECONDS,
    "window": journal.MAX_SECONDS,
    "timeout": journal.MAX_SECONDS,
    "count": journal.MAX_COUNT,
}
MAX_NUMBER = 2**63
#: The longest text a field of a record may hold: the shim clips its own to 300 characters.
MAX_FIELD = 4096


def malformed(record: Dict[str, Any]) -> str | None:
    """Why ``record`` is not a record this report can read (a short phrase), or None. Every field it uses must have
    its type: text where text is due (at most :data:`MAX_FIELD` characters), a list of texts for ``argv``, a whole
    number for ``pid`` and ``count`` (not negative), a finite number for the times; none larger than it can be
    (a time or wait of at most 10**9 s, a count of at most 10**12)."""
    version = record.get("v")
    if version != _events.VERSION or isinstance(version, bool):
        return f"of another format version than {_events.VERSION}"
    if "call" not in record:
        return "without a call"
    for name, types in FIELDS.items():
        if name not in record:
            continue
        value = record[name]
        limit = _LIMITS.get(name, MAX_NUMBER)
        if not isinstance(value, types) or (isinstance(value, bool) and bool not in types):
            return f"with a {name} of the wrong type"
        if isinstance(value, str) and len(value) > MAX_FIELD:
            return f"with a {name} longer than {MAX_FIELD} characters"
        if isinstance(value, (int, float)) and not isinstance(value, bool) and not -limit <= value <= limit:
            # NaN and infinities too; and a whole number of hundreds of digits, which no float holds nor sum shows
            return f"with a {name} that is not a finite number in range"
        if isinstance(value, (int, float)) and not isinstance(value, bool) and value < 0:
            return f"with a negative {name}"
    if record.get("event", "call") not in ("call", "repeat"):
        return "of an unknown event kind"
    if record.get("site") is not None and record["site"] not in KNOWN_SITES:
        return "with an unknown site"
    under = record.get("under")
    if under is not None and (
        sorted(under) != sorted(p.name for p in _policies.POLICIES)
        or not all(found in _policies.OUTCOMES for found in under.values())
    ):
        return "with an outcome per policy that is not one"
    argv = record.get("argv") or []
    if len(argv) > 4096 or not all(isinstance(arg, str) and len(arg) <= MAX_FIELD for arg in argv):
        return "with an argv that is not a list of texts"
    return None


# -- the files of a directory --------------------------------------------------------------------------------------


class Found(NamedTuple):
    """A file to read, or what was left out of a directory's walk."""

    path: str
    problem: Optional[Problem]


def listed(directory: str, most: int) -> List[str] | None:
    """The names in ``directory``, in order; None when it holds more than ``most``: it is then not listed further,
    so that a directory of millions of names costs no more than its first ``most``."""
    names: List[str] = []
    with os.scandir(directory) as listing:
        for item in listing:
            if len(names) >= most:
                return None
            names.append(item.name)
    return sorted(names)


def files(paths: List[str]) -> Iterator[Found]:
    """The events files that ``--events`` names, in order: a file as given (its read says if it does not exist), and
    a directory's regular files below it, in name order, at most :data:`MAX_DEPTH` levels down and
    :data:`MAX_EVENTS_FILES` names in all. Everything below a directory that is not read is given with its problem: a
    symbolic link (not followed), a hidden name, a FIFO or a device, a directory too deep, a directory that holds more
    names than are left to look at (none of it is read), a directory that can't be listed."""
    import stat

    count = [0]
    for path in paths:
        try:
            found = os.stat(path)
        except OSError:
            yield Found(path, None)  # reading it says what is wrong with it
            continue
        if not stat.S_ISDIR(found.st_mode):
            yield Found(path, None)
            continue
        yield from _walk(path, 0, count)


def _walk(directory: str, depth: int, count: List[int]) -> Iterator[Found]:
    import stat

    try:
        names = listed(directory, MAX_EVENTS_FILES - count[0])
    except OSError as exc:
        text = _messages.REPORT_WALK_UNLISTED.format(error=exc.strerror or type(exc).__name__)
        yield Found(directory, problem(Kind.UNREADABLE, directory, text))
        return
    if names is None:
        text = _messages.REPORT_WALK_TOO_MANY.format(limit=MAX_EVENTS_FILES)
        yield Found(directory, problem(Kind.TOO_MANY_FILES, directory, text))
        return
    count[0] += len(names)
    for name in names:
        path = os.path.join(directory, name)
        if name.startswith("."):
            yield Found(path, problem(Kind.HIDDEN, path, _messages.REPORT_WALK_HIDDEN))
            continue
        try:
            found = os.lstat(path)
        except OSError as exc:
            text = _messages.REPORT_CANNOT_BE_READ.format(error=exc.strerror or type(exc).__name__)
            yield Found(path, problem(Kind.UNREADABLE, path, text))
            continue
        if stat.S_ISREG(found.st_mode):
            count[0] += 1
            yield Found(path, None)
        elif stat.S_ISDIR(found.st_mode):
            if depth < MAX_DEPTH:
                yield from _walk(path, depth + 1, count)
            else:
                text = _messages.REPORT_WALK_TOO_DEEP.format(depth=depth + 1, limit=MAX_DEPTH)
                yield Found(path, problem(Kind.TOO_DEEP, path, text))
        elif stat.S_ISLNK(found.st_mode):
            yield Found(path, problem(Kind.LINK, path, _messages.REPORT_LINK_NOT_FOLLOWED))
        else:
            text = _messages.REPORT_WALK_NOT_REGULAR.format(kind=journal.kind_of(found.st_mode))
            yield Found(path, problem(Kind.NOT_REGULAR, path, text))
