"""The run's records: the events of its tests and of every process they start, each carrying the test's node id,
read back from the events file as the run goes, and shown: as ``urandom-shim report --json`` gives calls, with
escaped strings, and the project's paths as pytest names them.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

import os
import threading
from typing import List, NamedTuple, Optional, cast

from .. import _messages

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Iterable

    from .._events import Record
    from ..report.shapes import CallSite

#: What a record says was done when the policy raised.
REFUSALS = ("raised", "timed-out-raised")


class Records:
    """One events file of the run, and the records read from it so far (in this process), per test."""

    def __init__(self, path: str, start: int, own: bool) -> None:
        self.path = path
        #: Where this run's records begin: a file you named may hold earlier runs' too.
        self.start = start
        #: Whether the run made the file (and removes it), or you named it (and keep it).
        self.own = own
        self.offset = start
        self.skipped = 0
        self.all: list[Record] = []
        self.by_test: dict[str | None, list[Record]] = {}
        self._lock = threading.Lock()

    def read_new(self) -> None:
        """Read the records written since the last look (whole lines only: a line being written waits). A file
        emptied or replaced since (by a test, say) is read again from its start."""
        with self._lock:
            if size(self.path) < self.offset:
                self.offset = 0
            data = _read_from(self.path, self.offset)
            end = data.rfind(b"\n") + 1
            if end <= 0:
                return
            self.offset += end
            records, skipped = parse(data[:end])
            self.skipped += skipped
            for record in records:
                self.all.append(record)
                test = record.get("test")
                self.by_test.setdefault(test if isinstance(test, str) else None, []).append(record)

    def remove(self) -> None:
        """Take the file away, and the run's directory with it once empty, if the run made it."""
        if not self.own:
            return
        for remove, path in ((os.unlink, self.path), (os.rmdir, os.path.dirname(self.path))):
            try:
                remove(path)
            except OSError:
                pass


def size(path: str) -> int:
    """The size of ``path``, 0 if it can't be had."""
    try:
        return os.stat(path).st_size
    except OSError:
        return 0


def _read_from(path: str, offset: int) -> bytes:
    """The bytes of the regular file ``path`` from ``offset`` (nothing if it is missing or not a regular file)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return b""
    try:
        found = os.fstat(fd)
        if found.st_mode & 0o170000 != 0o100000 or found.st_size <= offset:
            return b""
        os.lseek(fd, offset, os.SEEK_SET)
        chunks = []
        remaining = found.st_size - offset
        while remaining > 0:
            chunk = os.read(fd, min(remaining, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            remaining -= len(chunk)
        return b"".join(chunks)
    except OSError:
        return b""
    finally:
        os.close(fd)


def parse(data: bytes) -> tuple[list[Record], int]:
    """The records in ``data`` that ``urandom-shim report`` would read, and how many lines it would skip."""
    import json

    from ..report.events_files import malformed

    records: list[Record] = []
    skipped = 0
    for line in data.splitlines():
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except (ValueError, RecursionError):
            record = None
        if isinstance(record, dict) and malformed(record) is None:
            records.append(cast("Record", record))
        else:
            skipped += 1
    return records, skipped


def users_events_file() -> str | None:
    """The events file you named with ``URANDOM_SHIM_EVENTS``, if it is a valid one: the run's records go there."""
    text = os.environ.get("URANDOM_SHIM_EVENTS")
    if not text:
        return None
    from .._config import KEYS

    try:
        value = KEYS["events"].read(text, from_text=True)
    except Exception:  # noqa: BLE001 - a bad value is the shim's to report; the run keeps its own file
        return None
    return str(value) if value else None


def unwritable(path: str) -> str | None:
    """Why the run can't append to and read back the events file ``path`` (made if missing, as the shim would);
    None if it can."""
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NONBLOCK
    flags |= getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags, 0o600)
    except (OSError, ValueError) as exc:
        return getattr(exc, "strerror", None) or str(exc)
    try:
        if os.fstat(fd).st_mode & 0o170000 != 0o100000:
            return "not a regular file"
    finally:
        os.close(fd)
    if not os.access(path, os.R_OK):
        return "it can't be read back"
    return None


# -- showing them ----------------------------------------------------------------------------------------------------


def shown(value: object, limit: int = 300) -> str:
    """A string from a record or another process, safe on a terminal: escaped, and cut to ``limit`` characters."""
    from .._terminal import escaped

    text = escaped("" if value is None else value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def place(path: object, rootdir: str) -> str:
    """``path`` (or ``path:line``) as the project knows it: relative to its rootdir, an installed package's from
    its ``site-packages``."""
    if path is None:
        return "?"
    text = str(path)
    root = os.path.join(rootdir, "")
    if text.startswith(root):
        return text[len(root) :]
    for marker in (f"{os.sep}site-packages{os.sep}", f"{os.sep}dist-packages{os.sep}"):
        if marker in text:
            return "…" + marker + text.split(marker, 1)[1]
    return text


def absolute(caller: object, rootdir: str) -> object:
    """A record's ``path:line`` with its path absolute: Python 3.8 names a script started by a relative path
    relatively (``python child.py``), from the child's own directory, which is the test's or the rootdir."""
    if not isinstance(caller, str) or caller.startswith("<") or ":" not in caller:
        return caller
    path, _colon, line = caller.rpartition(":")
    if os.path.isabs(path):
        return caller
    for base in (os.getcwd(), rootdir):
        found = os.path.join(base, path)
        if os.path.exists(found):
            return f"{os.path.normpath(found)}:{line}"
    return caller


def command(argv: object, rootdir: str) -> str:
    """A command line as it reads best: the interpreter by its name, the project's files relative to it."""
    if not isinstance(argv, (list, tuple)) or not argv:
        return "?"
    words = []
    for index, arg in enumerate(argv):
        text = str(arg)
        if text.startswith(os.sep):
            text = os.path.normpath(text)
            text = os.path.basename(text) if index == 0 else place(text, rootdir)
        words.append(text)
    return shown(" ".join(words))


# -- what the records add to each test's report ------------------------------------------------------------------------


class Located(NamedTuple):
    """A call site of a test's records, as ``urandom-shim report --json`` lists it (call, site, caller, what was done
    and what each policy would do), with the processes that made it."""

    call: CallSite
    pids: List[int]
    argv: Optional[List[str]]


def calls(records: Iterable[Record]) -> list[Located]:
    """``records`` grouped by the boot report's own aggregation (:func:`urandom_shim.report.verdict.group`)."""
    from ..report.verdict import group

    return [
        Located(call, program["pids"], program["argv"]) for program in group(records, None) for call in program["calls"]
    ]


def where(found: Located, own: int, rootdir: str) -> str:
    """Which process of the test made a call: its own, or a child, by its command line."""
    if own in found.pids:
        return _messages.PLUGIN_IN_TEST_PROCESS
    pids = ", ".join(str(pid) for pid in found.pids[:3])
    return _messages.PLUGIN_IN_CHILD.format(command=command(found.argv, rootdir), pids=pids)


def property_values(records: list[Record], own: int, rootdir: str) -> list[str]:
    """One ``urandom`` property per call site of a test, for the JUnit XML."""
    from ..report.text import would

    values = []
    for found in calls(records):
        call = found.call
        value = _messages.PLUGIN_PROPERTY.format(
            call=shown(call["call"]),
            caller=shown(place(call["caller"], rootdir)),
            where=where(found, own, rootdir),
            done=shown(call["action"]),
            policy=shown(call["policy"]),
            would=would(call),
        )
        if value not in values:
            values.append(value)
    return values
