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
from . import journal_files as _files
from .journal_facts import BootFacts, Key, Reducer
from .sources import ABSENT, Budget, JournalSource, Kind, Problem, problem, said

#: The longest any one journalctl may run, in seconds: a machine's boot takes tens of milliseconds.
TIMEOUT = 30.0
#: The longest the whole read may take: this, and a second more per file (1,000 machines take about 10 s). A
#: journalctl that hangs on every file must not make the report take its timeout a thousand times over.
TOTAL_TIME = 300.0
#: The most boots of one file set whose stalls journalctl is asked about: a machine boots a few times a day.
MAX_STALL_BOOTS = 1000


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
    plans = [_files.plan(path, seen) for path in dirs]
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
        problems = source["problems"]
        source["absent"] = not source["read"] and bool(problems) and all(found["kind"] in ABSENT for found in problems)
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
            read: List[str] = []
            for path in files:
                if reading.file(path, reducers, source):
                    read.append(path)
                done += 1
                if progress is not None:
                    progress(done, total, len(boots) + len(reducers.keys() - boots.keys()))
            reading.whole(files, read, reducers, source)
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

    def file(self, path: str, reducers: Dict[Key, Reducer], source: JournalSource) -> bool:
        """Verify and read the journal file ``path`` into ``reducers``, noting in ``source`` what went wrong; whether
        journalctl read it to its end."""
        if self.left() <= 0:
            source["problems"].append(
                problem(Kind.TIMED_OUT, path, _messages.REPORT_FILE_OUT_OF_TIME.format(seconds=self.seconds))
            )
            return False
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

        found = _files.open_journal(path)
        if isinstance(found, dict):
            source["problems"].append(found)
            return False
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
        # read: its machine's findings are unknown, and must not count as a machine without any. One that gave no
        # entry at all is read once its file set is known to hold some (:meth:`whole`).
        if ran.entries:
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
            text = _messages.REPORT_TOO_MANY_FINDINGS.format(count=held, limit=self.budget.mebibytes)
            source["problems"].append(problem(Kind.TOO_MANY_FINDINGS, path, text))
        lines = sum(reducer.facts["unread"]["count"] for reducer in reducers.values()) - unread
        if lines:
            source["unread"] += lines
            source["problems"].append(
                problem(Kind.UNREAD_LINE, path, _messages.REPORT_LINES_UNREAD.format(count=lines))
            )
        return trouble is None

    def whole(self, files: List[str], read: List[str], reducers: Dict[Key, Reducer], source: JournalSource) -> None:
        """What a file set's selected lines can't say: every boot it holds (journalctl lists them), each one's start
        (a boot whose journal does not reach back to it is named), and a set that holds no entry at all (its
        machine sent nothing: named, as a directory without journal files is). ``read``: its files journalctl read
        to their end; a set in journald's per-user split (``user-1000.journal``) holds only a login user's lines,
        which no report believes, and its boots' starts are in the system's set."""
        listed = self._boot_ids(read) if read else None
        if not reducers and listed == [] and len(read) == len(files):
            source["problems"].append(problem(Kind.EMPTY, files[0], _messages.REPORT_DIR_FILE_EMPTY))
            return
        if not reducers and not read:
            return  # nothing of it was read: each file's problem says why
        source["read"] = True  # its lines, or journalctl's word that it holds none that matter
        listed = listed or []
        user_set = _files.is_user_set(files[0])
        known = {key[1]: key for key in reducers}
        for boot_id in listed:
            if boot_id not in known:
                key: Key = (None, boot_id)
                reducers[key] = Reducer(key, self.budget)
                known[boot_id] = key
        for key, reducer in list(reducers.items()):
            if user_set or reducer.reaches_start():
                continue
            self._first_entries(reducer, read)
            machine = reducer.facts["machine_id"]
            if key[0] is None and machine is not None:  # a boot only listed: its machine, from its entries
                del reducers[key]
                reducer.key = (machine, key[1])
                reducers[reducer.key] = reducers.get(reducer.key) or reducer
            if not reducer.reaches_start():
                source["problems"].append(problem(Kind.NO_BOOT_START, files[0], _facts.no_start(reducer.facts)))

    def _boot_ids(self, files: List[str]) -> List[str] | None:
        """The boots the ``files`` of one set hold (``journalctl -F _BOOT_ID``), or None if journalctl could not
        say (the reads already said why)."""
        fds = [fd for fd in (_files.open_journal(path) for path in files) if not isinstance(fd, dict)]
        try:
            done = subprocess.run(
                [self.journalctl, *(f"--file=/proc/self/fd/{fd}" for fd in fds), "-F", "_BOOT_ID"],
                stdin=subprocess.DEVNULL,
                capture_output=True,
                pass_fds=tuple(fds),
                env=journal._environment(),
                timeout=max(0.1, self.left()),
            )
        except (OSError, subprocess.TimeoutExpired):
            return None
        finally:
            for fd in fds:
                os.close(fd)
        if done.returncode != 0:
            return None
        found = done.stdout.decode("ascii", "replace").split()
        return [boot for boot in found if _facts.hexadecimal(boot)][:MAX_STALL_BOOTS]

    def _first_entries(self, reducer: Reducer, files: List[str]) -> None:
        """A boot's first entries in ``files``, for where it began (:func:`journal.first_entries`) and its machine."""
        boot_id = reducer.key[1]
        if boot_id is None or not _facts.hexadecimal(boot_id):
            return

        def add(entry: journal.Entry) -> None:
            if journal.field(entry, "_BOOT_ID") == boot_id:
                reducer.seen_at(journal.at(entry))
                if reducer.facts["machine_id"] is None:
                    reducer.facts["machine_id"] = journal.field(entry, "_MACHINE_ID")

        for path in files:
            found = _files.open_journal(path)
            if isinstance(found, dict):
                continue
            try:
                journal.stream(
                    [self.journalctl, f"--file=/proc/self/fd/{found}", *journal.first_entries(f"_BOOT_ID={boot_id}")],
                    add,
                    timeout=max(0.1, self.left()),
                    limit=journal.FIRST_ENTRIES,
                    pass_fds=(found,),
                )
            finally:
                os.close(found)

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
            found = _files.open_journal(path)
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
