"""Directories of journal files, for the fleet report (``urandom-shim report --journal-dir DIR``): what
``systemd-journal-remote`` writes on a collector (``remote-HOST.journal``, one file set per machine), or any journal
directory, read into one set of facts per machine and boot.

Each file is checked by ``journalctl --verify`` (journalctl itself reads past damage it does not notice: a changed
byte in a line of the shim's can change or hide a finding, and exit 0), then read by a journalctl of its own that
selects the few lines that matter (:data:`urandom_shim.report.journal.GREP`) and cuts each to the fields the report
reads; the entries are reduced to facts as they arrive (:class:`urandom_shim.report.journal_facts.Reducer`), one
file set at a time, and a second, narrower query fetches the lines of the units that may have stalled. (Measured with
systemd 252: one journalctl over a directory of 1,000 files merges them about twice as slowly as 1,000 journalctls
over one file each, and one bad file fails a whole invocation.)
"""

from __future__ import annotations

import collections
import os
import subprocess
import time
from typing import Callable, Deque, Dict, List, NamedTuple, Optional, Tuple

from .. import _messages
from . import journal
from . import journal_facts as _facts
from .journal_facts import BootFacts, Key, Reducer
from .sources import Budget, JournalSource, Kind, Problem, problem, said

#: The longest any one journalctl may run, in seconds: a machine's boot takes tens of milliseconds.
TIMEOUT = 30.0
#: The longest the whole read may take: this, and a second more per file (1,000 machines take about 10 s). A
#: journalctl that hangs on every file must not make the report take its timeout a thousand times over.
TOTAL_TIME = 300.0
#: The most boots of one file set whose stalls journalctl is asked about: a machine boots a few times a day.
MAX_STALL_BOOTS = 1000

_SUFFIXES = (".journal", ".journal~")


class Found(NamedTuple):
    """What the directories held: one source per directory, and the facts of every boot their entries name."""

    sources: List[JournalSource]
    boots: List[BootFacts]


def read_journal_dirs(
    dirs: List[str],
    *,
    progress: Optional[Callable[[int, int, int], None]] = None,
    timeout: float = TIMEOUT,
    budget: Budget | None = None,
) -> Found:
    """The facts of every boot in the journal files of ``dirs``: one source per directory and one boot per
    (``_MACHINE_ID``, ``_BOOT_ID``) the entries themselves name. ``progress(files_done, files_total, boots_seen)`` is
    called after each file. A file that can't be read (not a regular file, corrupt, still being written when
    journalctl gives up on it) is one problem of its directory, and the rest is read."""
    import shutil

    journalctl = shutil.which("journalctl")
    seen: set[tuple[int, int]] = set()  # (device, inode): a directory or file given twice is read once
    plans = [_plan(path, seen) for path in dirs]
    total = sum(len(files) for _source, sets in plans for files in sets)
    boots: Dict[Key, BootFacts] = {}
    reading = _Reading(journalctl or "journalctl", timeout, time.monotonic() + TOTAL_TIME + total, TOTAL_TIME + total)
    reading.budget = budget if budget is not None else Budget()
    try:
        _read(plans, reading, boots, journalctl, progress, total)
    except BaseException:
        reading.drain(wait=False)
        raise
    reading.drain()
    for source, _sets in plans:
        source["problem"] = said(source["problems"][0]) if source["problems"] else None
    return Found([source for source, _sets in plans], list(boots.values()))


def _read(
    plans: List[Tuple[JournalSource, List[List[str]]]],
    reading: _Reading,
    boots: Dict[Key, BootFacts],
    journalctl: str | None,
    progress: Optional[Callable[[int, int, int], None]],
    total: int,
) -> None:
    """Read every file set of ``plans`` into ``boots``."""
    done = 0
    for source, sets in plans:
        if journalctl is None and sets:
            source["problems"].append(problem(Kind.NO_JOURNALCTL, None, _messages.REPORT_DIR_JOURNALCTL_MISSING))
            continue
        for files in sets:
            reducers: Dict[Key, Reducer] = {}
            for path in files:
                reading.file(path, reducers, source)
                done += 1
                if progress is not None:
                    progress(done, total, len(boots) + len(reducers.keys() - boots.keys()))
            for number, reducer in enumerate(reducers.values()):
                if number < MAX_STALL_BOOTS:  # a forged file of thousands of boots costs no more
                    reading.stalls(reducer, files, source)
                facts = reducer.done()
                _facts.keep(source["rejected_lines"], facts["rejected"]["lines"])
                _facts.keep(source["unread_lines"], facts["unread"]["lines"])
                _facts.merge(boots, facts)
            if len(reducers) > MAX_STALL_BOOTS:
                source["problems"].append(
                    problem(
                        Kind.STALLS_NOT_LOOKED_FOR,
                        files[0],
                        _messages.REPORT_FILE_TOO_MANY_BOOTS.format(
                            boots=len(reducers), left=len(reducers) - MAX_STALL_BOOTS
                        ),
                    )
                )


#: The verifications that may still run while the next files are read.
VERIFYING = 2


class _Verifying(NamedTuple):
    """A journal file's verification, started: its journalctl (or why it could not start), the file's descriptor,
    which stays open until it is done, its path, and the source whose problem a failure is."""

    process: subprocess.Popen[bytes] | str
    fd: int
    path: str
    source: JournalSource


class _Reading:
    """The journalctls of one read of directories, within its time (``ends``, on the monotonic clock)."""

    def __init__(self, journalctl: str, timeout: float, ends: float, budget: float) -> None:
        self.journalctl = journalctl
        self.timeout = timeout
        self.ends = ends
        self.seconds = budget
        self.budget = Budget()
        self.verifying: Deque[_Verifying] = collections.deque()

    def left(self) -> float:
        return min(self.timeout, self.ends - time.monotonic())

    def file(self, path: str, reducers: Dict[Key, Reducer], source: JournalSource) -> None:
        """Verify and read the journal file ``path`` into ``reducers``, noting in ``source`` what was read and what
        went wrong."""
        if self.left() <= 0:
            source["problems"].append(
                problem(Kind.TIMED_OUT, path, _messages.REPORT_FILE_OUT_OF_TIME.format(seconds=self.seconds))
            )
            return
        unread = sum(reducer.facts["unread"]["count"] for reducer in reducers.values())
        held = sum(reducer.facts["held_back"] for reducer in reducers.values())
        before = {key: (r.facts["entries"], len(r.facts["events"]), r.facts["rejected"]["count"], r.facts["untimed"])
                  for key, r in reducers.items()}  # fmt: skip

        def add(entry: journal.Entry) -> None:
            key = journal.ids(entry)
            reducer = reducers.get(key)
            if reducer is None:
                reducer = reducers[key] = Reducer(key, self.budget)
            reducer.add(entry, path)

        found = _open(path)
        if isinstance(found, dict):
            source["problems"].append(found)
            return
        # The file is verified as it is read, by a journalctl of its own: journalctl's reading checks no hash, so
        # damage it reads past would change or hide what the file says.
        verifying = _Verifying(self._start_verify(found), found, path, source)
        try:
            ran = journal.stream(
                [self.journalctl, f"--file=/proc/self/fd/{found}", *journal.selecting()],
                add,
                timeout=max(0.1, self.left()),
                pass_fds=(found,),
            )
        except BaseException:
            self._finish(verifying, wait=False)
            raise
        trouble = _trouble(path, ran, self.timeout)
        if trouble is not None:
            source["problems"].append(trouble)
            self._finish(verifying, wait=False)  # a file journalctl could not read is said so already
        else:
            # The verifications run beside the reads of the next files: the last few are waited for later.
            self.verifying.append(verifying)
            while len(self.verifying) > VERIFYING:
                self._finish(self.verifying.popleft(), wait=True)
        # A file that gave nothing but a problem (journalctl timed out or stopped before its first entry) was not
        # read: its machine's findings are unknown, and must not count as a machine without any.
        if ran.entries or trouble is None:
            source["read"] = True
        after = {key: (r.facts["entries"], len(r.facts["events"]), r.facts["rejected"]["count"], r.facts["untimed"])
                 for key, r in reducers.items()}  # fmt: skip
        for key, (entries, events, rejected, untimed) in after.items():
            was = before.get(key, (0, 0, 0, 0))
            source["entries"] += entries - was[0]
            source["records"] += events - was[1]
            source["rejected"] += rejected - was[2]
            source["untimed"] += untimed - was[3]
        held = sum(reducer.facts["held_back"] for reducer in reducers.values()) - held
        if held:
            text = _messages.REPORT_TOO_MANY_FINDINGS.format(count=held, limit=self.budget.limit)
            source["problems"].append(problem(Kind.TOO_MANY_FINDINGS, path, text))
        lines = sum(reducer.facts["unread"]["count"] for reducer in reducers.values()) - unread
        if lines:
            source["unread"] += lines
            source["problems"].append(
                problem(Kind.UNREAD_LINE, path, _messages.REPORT_LINES_UNREAD.format(count=lines))
            )

    def drain(self, *, wait: bool = True) -> None:
        """Finish every verification still running (``wait``: for its verdict; else stop it)."""
        while self.verifying:
            self._finish(self.verifying.popleft(), wait=wait)

    def _finish(self, verifying: _Verifying, *, wait: bool) -> None:
        try:
            damage = self._verified(verifying.process, verifying.fd, verifying.path, wait=wait)
        finally:
            os.close(verifying.fd)
        if damage is not None:
            verifying.source["problems"].append(damage)

    def _start_verify(self, fd: int) -> subprocess.Popen[bytes] | str:
        """``journalctl --verify`` of the open file ``fd``, started (or why it could not start). It checks each
        object's hash and the links between them (an entry's fields, the hash tables, the entry arrays), with no key
        needed for a file that is not sealed."""
        try:
            return subprocess.Popen(
                [self.journalctl, "--verify", "--quiet", f"--file=/proc/self/fd/{fd}"],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                pass_fds=(fd,),
                env=journal._environment(),
            )
        except OSError as exc:
            return exc.strerror or type(exc).__name__

    def _verified(self, verifying: subprocess.Popen[bytes] | str, fd: int, path: str, *, wait: bool) -> Problem | None:
        """None when the file passed its verification, else the problem; when not ``wait``, the verification is
        stopped and says nothing."""
        if isinstance(verifying, str):
            detail = verifying
        else:
            try:
                if not wait:
                    verifying.kill()
                _out, said = verifying.communicate(timeout=max(0.1, self.left()))
            except subprocess.TimeoutExpired:
                verifying.kill()
                verifying.communicate()
                said, detail = b"", f"it did not finish within {self.timeout:g} s"
            else:
                if not wait or verifying.returncode == 0:
                    return None
                detail = ""
            proxy = f"/proc/self/fd/{fd}"
            detail = _verify_said(said[:4096].decode("utf-8", "replace").replace(proxy, path)) or detail
            detail = detail or f"exit status {verifying.returncode}"
        return problem(Kind.DAMAGED, path, _messages.REPORT_FILE_DAMAGED.format(detail=detail))

    def stalls(self, reducer: Reducer, files: List[str], source: JournalSource) -> None:
        """The boot's stalls: the own lines of the units it started before ``crng init done``, asked of journalctl by
        field matches, one file of its set at a time (only where a stall can be: a kernel of 5.18 or later, or of
        unknown release, and a known ``crng init done``)."""
        units = reducer.stall_units()
        finder = reducer.finder()
        if not units or finder is None:
            return
        machine_id, boot_id = reducer.key
        matches = [f"_BOOT_ID={boot_id}"] if boot_id is not None and _facts.hexadecimal(boot_id) else []
        if machine_id is not None and _facts.hexadecimal(machine_id):
            matches.append(f"_MACHINE_ID={machine_id}")
        matches += [f"_SYSTEMD_UNIT={unit}" for unit in units]

        def add(entry: journal.Entry) -> None:
            if journal.ids(entry) == reducer.key:
                finder.add(entry)

        for path in reducer.facts["files"] or files:
            found = _open(path)
            if isinstance(found, dict):
                continue  # said when the file was read
            try:
                ran = journal.stream(
                    [self.journalctl, f"--file=/proc/self/fd/{found}", *journal.selecting(*matches)],
                    add,
                    timeout=max(1.0, self.left()),
                    pass_fds=(found,),
                )
            finally:
                os.close(found)
            trouble = _trouble(path, ran, self.timeout, selecting=False)
            if trouble is not None and trouble not in source["problems"]:
                source["problems"].append(trouble)
        reducer.facts["stalls"] = finder.stalls()


def _verify_said(text: str) -> str:
    """What ``journalctl --verify`` said, in short: its first line (where, and what it found), and the reason of its
    ``FAIL:`` line; at most 200 characters."""
    lines = [" ".join(line.split()) for line in text.splitlines() if line.strip()]
    if not lines:
        return ""
    failed = [line for line in lines if line.startswith("FAIL:")]
    reason = failed[0].rpartition(" (")[2].rstrip(")") if failed and failed[0].endswith(")") else ""
    first = lines[0]
    return (first if not reason or reason in first else f"{first}; {reason}")[:200]


def _open(path: str) -> int | Problem:
    """The journal file ``path``, opened without following a link and without blocking and checked to be a regular
    file (journalctl is given ``/proc/self/fd/N``: so a name with glob characters is not expanded by ``--file``, and
    what is read is what was checked); or the problem."""
    import stat

    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY | getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        error = exc.strerror or type(exc).__name__
        return problem(Kind.UNREADABLE, path, _messages.REPORT_JOURNAL_CANT_BE_READ.format(error=error))
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        kind = journal.kind_of(mode)
        return problem(Kind.NOT_REGULAR, path, _messages.REPORT_FILE_NOT_A_JOURNAL_FILE.format(kind=kind))
    return fd


def _trouble(path: str, ran: journal.Ran, timeout: float, *, selecting: bool = True) -> Problem | None:
    """What went wrong with one journalctl over the file ``path`` (``selecting``: with ``--grep``, which exits 1 when
    no line matched), or None."""
    if selecting and journal.matched_nothing(ran):
        return None  # a journal without a line that matters (its verification says whether it is one)
    if ran.status is None:
        return problem(Kind.UNREADABLE, path, _messages.REPORT_JOURNAL_CANT_BE_READ.format(error=ran.error))
    detail = ran.said.replace("/proc/self/fd/", "fd ")[:200] or "it said nothing"
    if ran.stopped == journal.TOO_MANY:
        return problem(Kind.TOO_MANY_ENTRIES, path, _messages.REPORT_FILE_TOO_MANY.format(limit=journal.MAX_SELECTED))
    if ran.stopped == journal.TIMED_OUT:
        text = _messages.REPORT_FILE_TIMED_OUT.format(timeout=timeout, entries=ran.entries)
        return problem(Kind.TIMED_OUT, path, text)
    if ran.status != 0:
        if not ran.entries:
            return problem(Kind.NOT_A_JOURNAL, path, _messages.REPORT_FILE_NOT_JOURNAL.format(detail=detail))
        text = _messages.REPORT_FILE_STOPPED.format(status=ran.status, detail=detail, entries=ran.entries)
        return problem(Kind.STOPPED, path, text)
    if ran.said:
        return problem(Kind.WARNED, path, _messages.REPORT_FILE_WARNED.format(detail=detail))
    return None


# -- the files of a directory --------------------------------------------------------------------------------------


def _plan(path: str, seen: set[tuple[int, int]]) -> Tuple[JournalSource, List[List[str]]]:
    """The source of directory ``path`` and its journal files, in file sets (a machine's file and its rotated
    ones: ``remote-HOST.journal``, ``remote-HOST@....journal``), each in order. Its own files, and those one level
    down (``/var/log/journal/MACHINE-ID/``); nothing behind a symbolic link, no FIFO, no device: each is named."""
    import stat

    source: JournalSource = {
        "path": path,
        "problems": [],
        "problem": None,
        "read": False,
        "absent": False,
        "files": 0,
        "entries": 0,
        "records": 0,
        "rejected": 0,
        "rejected_lines": [],
        "unread": 0,
        "unread_lines": [],
        "untimed": 0,
    }
    try:
        found = os.stat(path)
    except FileNotFoundError:
        # A directory named on the command line that does not exist is a typo, never "nothing there".
        source["problems"].append(problem(Kind.NO_SUCH_PATH, path, _messages.REPORT_DIR_MISSING))
        return source, []
    except OSError as exc:
        error = exc.strerror or type(exc).__name__
        source["problems"].append(
            problem(Kind.UNREADABLE, path, _messages.REPORT_JOURNAL_CANT_BE_READ.format(error=error))
        )
        return source, []
    if not stat.S_ISDIR(found.st_mode):
        source["problems"].append(problem(Kind.NOT_REGULAR, path, _messages.REPORT_DIR_NOT_A_DIRECTORY))
        return source, []
    files: List[str] = []
    try:
        _scan(path, files, source["problems"], depth=1)
    except OSError as exc:
        error = exc.strerror or type(exc).__name__
        source["problems"].append(
            problem(Kind.UNREADABLE, path, _messages.REPORT_JOURNAL_CANT_BE_READ.format(error=error))
        )
        return source, []
    if not files and not source["problems"]:
        source["problems"].append(problem(Kind.NO_JOURNAL_FILES, path, _messages.REPORT_DIR_EMPTY))
        source["absent"] = True
    source["files"] = len(files)
    sets: Dict[str, List[str]] = {}
    for file in sorted(_once(files, seen)):
        sets.setdefault(_set_of(file), []).append(file)
    return source, list(sets.values())


def _once(files: List[str], seen: set[tuple[int, int]]) -> List[str]:
    """The files not already planned (under another name given, or the same directory given twice)."""
    kept = []
    for file in files:
        try:
            found = os.stat(file, follow_symlinks=False)
        except OSError:
            kept.append(file)  # its read says why it can't be read
            continue
        if (found.st_dev, found.st_ino) not in seen:
            seen.add((found.st_dev, found.st_ino))
            kept.append(file)
    return kept


#: The most names a directory of journal files (and the directories one level down) may hold in all.
MAX_NAMES = 100_000


def _scan(path: str, files: List[str], problems: List[Problem], *, depth: int, seen: List[int] | None = None) -> None:
    seen = seen if seen is not None else [0]
    items: List[os.DirEntry[str]] = []
    with os.scandir(path) as listing:
        for item in listing:
            if seen[0] + len(items) >= MAX_NAMES:  # millions of names cost no more than the first of them
                text = _messages.REPORT_WALK_TOO_MANY.format(limit=MAX_NAMES)
                problems.append(problem(Kind.TOO_MANY_FILES, path, text))
                return
            items.append(item)
    seen[0] += len(items)
    for item in sorted(items, key=lambda item: item.name):
        if not item.name.endswith(_SUFFIXES):
            if depth > 0 and item.is_dir(follow_symlinks=False):
                try:
                    _scan(item.path, files, problems, depth=depth - 1, seen=seen)
                except OSError as exc:
                    error = exc.strerror or type(exc).__name__
                    text = _messages.REPORT_JOURNAL_CANT_BE_READ.format(error=error)
                    problems.append(problem(Kind.UNREADABLE, item.path, text))
            continue
        if item.is_symlink():
            problems.append(problem(Kind.LINK, item.path, _messages.REPORT_LINK_NOT_FOLLOWED))
        elif not item.is_file(follow_symlinks=False):
            text = _messages.REPORT_FILE_NOT_A_JOURNAL_FILE.format(kind=_kind_of(item))
            problems.append(problem(Kind.NOT_REGULAR, item.path, text))
        else:
            files.append(item.path)


def _kind_of(item: os.DirEntry[str]) -> str:
    try:
        return journal.kind_of(item.stat(follow_symlinks=False).st_mode)
    except OSError:
        return "not a file"


def _set_of(path: str) -> str:
    """The file set ``path`` belongs to: its directory and name up to a rotation's ``@``."""
    head, name = os.path.split(path)
    for suffix in _SUFFIXES:
        if name.endswith(suffix):
            name = name[: -len(suffix)]
            break
    return os.path.join(head, name.split("@", 1)[0])
