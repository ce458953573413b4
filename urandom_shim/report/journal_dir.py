"""Directories of journal files, for the fleet report (``urandom-shim report --journal-dir DIR``): what
``systemd-journal-remote`` writes on a collector (``remote-HOST.journal``, one file set per machine), or any journal
directory, read into one set of facts per machine and boot.

journalctl does the selecting: ``--grep`` picks the few lines that matter (the shim's own, the kernel's ``crng init
done`` and ``Linux version``, systemd's ``Starting`` and ``Detected first boot``), ``--output-fields`` cuts each to
the fields the report reads, and a second, narrower query fetches the lines of the units that may have stalled. Each
file is read by its own journalctl (measured with systemd 252: one journalctl over a directory of 1,000 files merges
them about twice as slowly as 1,000 journalctls over one file each, and one bad file fails a whole invocation). The
entries are grouped by their own ``_MACHINE_ID`` and ``_BOOT_ID`` and reduced to facts one file set at a time, so
memory holds one machine's selected entries, never the fleet's.
"""

from __future__ import annotations

import os
import re
import time

from . import journal, kernel_log, shim_lines, stalls
from . import journal_facts as _facts

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Callable, Tuple

    #: A boot's (``_MACHINE_ID``, ``_BOOT_ID``), as its entries say.
    Key = Tuple[str | None, str | None]


# Text of `urandom-shim report`, kept with the code that says it: each problem is one line, path first.

DIR_MISSING = "{path}: no such directory."
DIR_UNREADABLE = "{path}: can't be read ({error})."
DIR_NOT_A_DIRECTORY = "{path}: is not a directory."
DIR_EMPTY = "{path}: holds no journal files (*.journal, *.journal~)."
FILE_SKIPPED_LINK = "{path}: a symbolic link, not followed: only the files of the directory itself are read."
FILE_SKIPPED_KIND = "{path}: skipped: it is {kind}, not a journal file."
FILE_UNREADABLE = "{path}: can't be read ({error})."
FILE_NOT_JOURNAL = (
    "{path}: skipped: journalctl can't read it ({detail}); it may be corrupt, truncated or not a journal."
)
FILE_STOPPED = (
    "{path}: journalctl stopped with exit status {status} ({detail}); the {entries} entries read before that count."
)
FILE_WARNED = "{path}: journalctl warned: {detail}"
FILE_TIMED_OUT = "{path}: journalctl did not finish within {timeout:g} s; the {entries} entries read before that count."
FILE_TOO_MANY = "{path}: more than {limit} selected entries; the rest of the file was not read."
FILE_TOO_MANY_BOOTS = (
    "{path}: its files hold {boots} boots; the stalls of {left} of them were not looked for (at most one journalctl "
    "per boot of a machine for its stalls)."
)
JOURNALCTL_MISSING = "journalctl is not installed here, so journal directories can't be read."


#: The lines journalctl selects (``--grep``, PCRE2, case-sensitive, on MESSAGE): the shim's own; the kernel's
#: ``crng init done`` (its nonblocking pool's readiness before 4.8) and its first line, which names its release;
#: systemd's "Starting X..." (a unit's start, for the stalls) and "Detected first boot.".
GREP = "|".join(
    (
        "^urandom-shim: ",
        *(re.escape(mark) for mark in kernel_log.CRNG_MARKERS),
        "^Linux version ",
        "^Starting ",
        "^Detected first boot",
    )
)
#: The fields the report reads (shim_lines, stalls, kernel_log and the grouping); journalctl adds the cursor, both
#: timestamps and ``_BOOT_ID`` to every entry.
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
    "UNIT",
    "SYSLOG_IDENTIFIER",
    "_SOURCE_MONOTONIC_TIMESTAMP",
    "_MACHINE_ID",
    "_HOSTNAME",
)
#: The longest any one journalctl may run, in seconds: a machine's boot takes tens of milliseconds.
TIMEOUT = 30.0
#: The longest the whole read may take: this, and a second more per file (1,000 machines take about 10 s). A
#: journalctl that hangs on every file must not make the report take its timeout a thousand times over.
TOTAL_TIME = 300.0
FILE_OUT_OF_TIME = "{path}: not read: the report's time for the whole directory ran out ({seconds:g} s)."
#: The most selected entries read from one file (a boot's are a few hundred): about 150 MiB of them.
MAX_SELECTED = 100_000
#: The most boots of one file set whose stalls journalctl is asked about: a machine boots a few times a day.
MAX_STALL_BOOTS = 1000
#: The most units the stalls query names for one boot.
MAX_STALL_UNITS = 200

_SUFFIXES = (".journal", ".journal~")


def read_journal_dirs(
    dirs: list[str],
    *,
    progress: Callable[[int, int, int], None] | None = None,
    timeout: float = TIMEOUT,
) -> dict[str, Any]:
    """The facts of every boot in the journal files of ``dirs``: ``{"sources": [...], "boots": [...]}``, one source
    per directory (path, files, entries, problems, read, absent) and one boot per (``_MACHINE_ID``, ``_BOOT_ID``)
    the entries themselves name (see :func:`_boot_facts`). ``progress(files_done, files_total, boots_seen)`` is called
    after each file. A file that can't be read (corrupt, truncated, not a regular file, still being written when
    journalctl gives up on it) is one problem of its directory, and the rest is read."""
    import shutil

    journalctl = shutil.which("journalctl")
    seen: set[tuple[int, int]] = set()  # (device, inode): a directory or file given twice is read once
    plans = [_plan(path, seen) for path in dirs]
    total = sum(len(files) for _source, sets in plans for files in sets)
    boots: dict[Key, dict[str, Any]] = {}
    done = 0
    budget = TOTAL_TIME + total
    ends = time.monotonic() + budget
    for source, sets in plans:
        if journalctl is None and sets:
            source["problems"].append(JOURNALCTL_MISSING)
            continue
        for files in sets:
            selected: dict[Key, list[dict[str, Any]]] = {}
            where: dict[Key, list[str]] = {}
            for path in files:
                left = ends - time.monotonic()
                if left > 0:
                    read, problem = _read_file(journalctl or "journalctl", path, _query(), min(timeout, left))
                else:
                    read, problem = None, FILE_OUT_OF_TIME.format(path=path, seconds=budget)
                if problem is not None:
                    source["problems"].append(problem)
                # A file that gave nothing but a problem (journalctl timed out or stopped before its first entry) was
                # not read: its machine's findings are unknown, and must not count as a machine without any.
                if read is not None and (read or problem is None):
                    source["read_files"] += 1
                    source["entries"] += len(read)
                    for entry in read:
                        key = (journal.field(entry, "_MACHINE_ID"), journal.field(entry, "_BOOT_ID"))
                        selected.setdefault(key, []).append(entry)
                        if path not in where.setdefault(key, []):
                            where[key].append(path)
                done += 1
                if progress is not None:
                    progress(done, total, len(boots) + len(selected.keys() - boots.keys()))
            for number, (key, entries) in enumerate(selected.items()):
                stall_query = number < MAX_STALL_BOOTS  # a forged file of thousands of boots costs no more
                facts = _boot_facts(
                    key,
                    entries,
                    where[key],
                    journalctl or "journalctl",
                    max(1.0, min(timeout, ends - time.monotonic())),
                    source["problems"],
                    stall_query,
                )
                _facts.merge(boots, key, facts)
            if len(selected) > MAX_STALL_BOOTS:
                source["problems"].append(
                    FILE_TOO_MANY_BOOTS.format(path=files[0], boots=len(selected), left=len(selected) - MAX_STALL_BOOTS)
                )
    sources = []
    for source, _sets in plans:
        read_files = source.pop("read_files")
        source["read"] = read_files > 0
        sources.append(source)
    return {"sources": sources, "boots": list(boots.values())}


def _plan(path: str, seen: set[tuple[int, int]]) -> tuple[dict[str, Any], list[list[str]]]:
    """The source of directory ``path`` and its journal files, in file sets (a machine's file and its rotated
    ones: ``remote-HOST.journal``, ``remote-HOST@....journal``), each in order. Its own files, and those one level
    down (``/var/log/journal/MACHINE-ID/``); nothing behind a symbolic link, no FIFO, no device."""
    import stat

    source: dict[str, Any] = {
        "path": path,
        "files": 0,
        "entries": 0,
        "problems": [],
        "read": False,
        "absent": False,
        "read_files": 0,
    }
    try:
        found = os.stat(path)
    except FileNotFoundError:
        source["problems"].append(DIR_MISSING.format(path=path))
        source["absent"] = True
        return source, []
    except OSError as exc:
        source["problems"].append(DIR_UNREADABLE.format(path=path, error=exc.strerror or type(exc).__name__))
        return source, []
    if not stat.S_ISDIR(found.st_mode):
        source["problems"].append(DIR_NOT_A_DIRECTORY.format(path=path))
        return source, []
    files: list[str] = []
    try:
        _scan(path, files, source["problems"], depth=1)
    except OSError as exc:
        source["problems"].append(DIR_UNREADABLE.format(path=path, error=exc.strerror or type(exc).__name__))
        return source, []
    if not files:
        if not source["problems"]:
            source["problems"].append(DIR_EMPTY.format(path=path))
        source["absent"] = not source["problems"] or source["problems"] == [DIR_EMPTY.format(path=path)]
    source["files"] = len(files)
    sets: dict[str, list[str]] = {}
    for file in sorted(_once(files, seen)):
        sets.setdefault(_set_of(file), []).append(file)
    return source, list(sets.values())


def _once(files: list[str], seen: set[tuple[int, int]]) -> list[str]:
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


def _scan(path: str, files: list[str], problems: list[str], *, depth: int) -> None:
    with os.scandir(path) as listing:
        for item in sorted(listing, key=lambda item: item.name):
            if not item.name.endswith(_SUFFIXES):
                if depth > 0 and item.is_dir(follow_symlinks=False):
                    try:
                        _scan(item.path, files, problems, depth=depth - 1)
                    except OSError as exc:
                        problems.append(DIR_UNREADABLE.format(path=item.path, error=exc.strerror or type(exc).__name__))
                continue
            if item.is_symlink():
                problems.append(FILE_SKIPPED_LINK.format(path=item.path))
            elif not item.is_file(follow_symlinks=False):
                problems.append(FILE_SKIPPED_KIND.format(path=item.path, kind=_kind_of(item)))
            else:
                files.append(item.path)


def _kind_of(item: os.DirEntry[str]) -> str:
    try:
        return journal._kind(item.stat(follow_symlinks=False).st_mode)
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


def _query(*matches: str) -> list[str]:
    """journalctl's arguments after the file: the selecting one (``--grep``), or a query of field ``matches``."""
    base = ["-o", "json", "--no-pager", "--output-fields=" + ",".join(FIELDS)]
    if matches:
        return [*base, *matches]
    return [*base, "--case-sensitive", "--grep", GREP]


def _read_file(
    journalctl: str, path: str, query: list[str], timeout: float
) -> tuple[list[dict[str, Any]] | None, str | None]:
    """(entries, problem) of one journalctl over the file ``path``. The file is opened here, without following a
    link and without blocking, checked to be a regular file, and given to journalctl as ``/proc/self/fd/N``: so a
    name with glob characters is not expanded by ``--file``, and what is read is what was checked. entries is None
    when nothing of the file could be read."""
    import stat

    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY | getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        return None, FILE_UNREADABLE.format(path=path, error=exc.strerror or type(exc).__name__)
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            return None, FILE_SKIPPED_KIND.format(path=path, kind=journal._kind(mode))
        return _run(journalctl, fd, path, query, timeout)
    finally:
        os.close(fd)


def _run(
    journalctl: str, fd: int, path: str, query: list[str], timeout: float
) -> tuple[list[dict[str, Any]] | None, str | None]:
    import subprocess
    import tempfile
    import time

    proxy = f"/proc/self/fd/{fd}"
    with tempfile.TemporaryFile() as said:
        try:
            process = subprocess.Popen(
                [journalctl, f"--file={proxy}", *query],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=said,
                pass_fds=(fd,),
                env=_environment(),
            )
        except OSError as exc:
            return None, FILE_UNREADABLE.format(path=path, error=exc.strerror or type(exc).__name__)
        entries: list[dict[str, Any]] = []
        try:
            over = _collect(process, entries, time.monotonic() + timeout)
        finally:
            if process.poll() is None:
                process.kill()
            status = process.wait()
        said.seek(0)
        text = said.read(4096).decode("utf-8", "replace")
    detail = " ".join(text.replace(proxy, path).split())[:200] or "it said nothing"
    if over == "too many":
        return entries, FILE_TOO_MANY.format(path=path, limit=MAX_SELECTED)
    if over == "timed out":
        return entries, FILE_TIMED_OUT.format(path=path, timeout=timeout, entries=len(entries))
    if status != 0:
        if not entries:
            return None, FILE_NOT_JOURNAL.format(path=path, detail=detail)
        return entries, FILE_STOPPED.format(path=path, status=status, detail=detail, entries=len(entries))
    if text.strip():
        return entries, FILE_WARNED.format(path=path, detail=detail)
    return entries, None


def _collect(process: Any, entries: list[dict[str, Any]], deadline: float) -> str | None:
    """Read journalctl's entries into ``entries`` until its output ends (None), its time is up (``"timed out"``)
    or it gave :data:`MAX_SELECTED` (``"too many"``); a line that is not a JSON object is skipped. Its lines are
    bounded: journalctl prints a field over 4 KiB as null without ``--all``."""
    import json
    import selectors
    import time

    stdout = process.stdout
    pending = b""
    try:
        with selectors.DefaultSelector() as selector:
            selector.register(stdout, selectors.EVENT_READ)
            while True:
                left = deadline - time.monotonic()
                if left <= 0:
                    return "timed out"
                if not selector.select(left):
                    continue
                chunk = os.read(stdout.fileno(), 1 << 16)
                if not chunk:
                    return None
                pending += chunk
                *lines, pending = pending.split(b"\n")
                for line in lines:
                    try:
                        entry = json.loads(line)
                    except (ValueError, RecursionError):
                        continue
                    if isinstance(entry, dict):
                        if len(entries) >= MAX_SELECTED:
                            return "too many"
                        entries.append(entry)
    finally:
        stdout.close()


_environment_cache: dict[str, str] = {}


def _environment() -> dict[str, str]:
    """journalctl's environment: no pager and no colours, whatever the user's settings say."""
    if not _environment_cache:
        _environment_cache.update(os.environ)
        _environment_cache.update(SYSTEMD_PAGER="cat", PAGER="cat", SYSTEMD_COLORS="0")
    return _environment_cache


def _boot_facts(
    key: Key,
    entries: list[dict[str, Any]],
    files: list[str],
    journalctl: str,
    timeout: float,
    problems: list[str],
    stall_query: bool = True,
) -> dict[str, Any]:
    """One boot's facts from its selected entries (and, for the stalls, its candidate units' own lines, unless not
    ``stall_query``)."""
    machine_id, boot_id = key
    crng = _facts.crng_init_done(entries)
    first_seen = [time for time in (_facts.realtime(entry) for entry in entries) if time is not None]
    hostnames = [name for name in (journal.field(entry, "_HOSTNAME") for entry in entries) if name is not None]
    events, rejected = shim_lines.journal_events(entries)
    return {
        "machine_id": machine_id,
        "boot_id": boot_id,
        "hostname": hostnames[-1] if hostnames else None,
        "files": list(files),
        "first_seen": min(first_seen) if first_seen else None,
        "first_boot": any(_facts.first_boot(entry) for entry in entries),
        "kernel": _facts.kernel_of(entries),
        "crng_init_done": crng,
        "events": events,
        "rejected": rejected,
        "stalls": _stalls(key, entries, files, crng, journalctl, timeout, problems) if stall_query else [],
        "entries": len(entries),
        "untimed": sum(1 for entry in entries if journal.bad_time(entry)),
    }


def _stalls(
    key: Key,
    entries: list[dict[str, Any]],
    files: list[str],
    crng: float | None,
    journalctl: str,
    timeout: float,
    problems: list[str],
) -> list[dict[str, Any]]:
    """:func:`urandom_shim.report.stalls.stalls` of the boot: its selected entries, and the own lines of the units
    it started before ``crng init done``, asked of journalctl by field matches (only where a stall can be: a kernel
    of 5.18 or later, or of unknown release, and a known ``crng init done``)."""
    if crng is None:
        return []
    release = stalls.kernel_release(entries)
    if release is not None and release < stalls.STALLING_KERNEL:
        return []
    units = sorted(
        {
            unit
            for unit in (stalls.started_unit(entry) for entry in entries if journal.at(entry) < crng)
            if unit is not None and unit.isprintable() and len(unit) <= 256
        }
    )[:MAX_STALL_UNITS]
    if not units:
        return []
    machine_id, boot_id = key
    matches = [f"_BOOT_ID={boot_id}"] if boot_id is not None and _facts.hexadecimal(boot_id) else []
    if machine_id is not None and _facts.hexadecimal(machine_id):
        matches.append(f"_MACHINE_ID={machine_id}")
    matches += [f"_SYSTEMD_UNIT={unit}" for unit in units]
    own: list[dict[str, Any]] = []
    for path in files:
        read, problem = _read_file(journalctl, path, _query(*matches), timeout)
        if problem is not None and problem not in problems:
            problems.append(problem)
        own.extend(
            entry
            for entry in read or ()
            if (journal.field(entry, "_MACHINE_ID"), journal.field(entry, "_BOOT_ID")) == key
        )
    return stalls.stalls(_facts.by_cursor([*entries, *own]), crng)
