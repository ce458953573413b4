"""The journal files below the directories a fleet's report is given (``--journal-dir``), in file sets (a machine's
file and its rotated ones), and every name left out, each named: a symbolic link, a directory too deep, a FIFO or a
device, a file that is not a journal file, the directory where the names looked at run out. Nothing is left out
silently.
"""

from __future__ import annotations

import os
from typing import Dict, List, Tuple

from .. import _messages
from . import journal
from .sources import JournalSource, Kind, Problem, problem

#: The names journald and systemd-journal-remote give journal files (``~``: one journald found dirty and set aside).
SUFFIXES = (".journal", ".journal~")


def plan(path: str, seen: set[tuple[int, int]]) -> Tuple[JournalSource, List[List[str]]]:
    """The source of directory ``path`` and its journal files, in file sets (a machine's file and its rotated
    ones: ``remote-HOST.journal``, ``remote-HOST@....journal``), each in order: its own files and those below it
    (:func:`_scan`); whatever it leaves out is named."""
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
        scan(path, files, source["problems"], depth=0)
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


#: The most names a directory of journal files (and the directories below it) may hold in all, and how deep below it
#: journal files are looked for (``/var/log/journal/MACHINE-ID/`` is one level down).
MAX_NAMES = 100_000
MAX_DEPTH = 8
#: How every journal file begins, whatever its name.
JOURNAL_SIGNATURE = b"LPKSHHRH"


def scan(path: str, files: List[str], problems: List[Problem], *, depth: int, seen: List[int] | None = None) -> None:
    """The journal files below ``path`` into ``files``, and every name left out into ``problems``: a symbolic link
    (it could lead anywhere), a directory deeper than :data:`MAX_DEPTH`, a FIFO, socket or device, a file that is not
    a journal file (by its name, else by its first bytes: a renamed journal file is read), and a directory where the
    :data:`MAX_NAMES` names looked at run out (none of it is read)."""
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
        if item.is_symlink():
            problems.append(problem(Kind.LINK, item.path, _messages.REPORT_LINK_NOT_FOLLOWED))
        elif item.is_dir(follow_symlinks=False):
            if depth >= MAX_DEPTH:
                text = _messages.REPORT_WALK_TOO_DEEP.format(depth=depth + 1, limit=MAX_DEPTH)
                problems.append(problem(Kind.TOO_DEEP, item.path, text))
                continue
            try:
                scan(item.path, files, problems, depth=depth + 1, seen=seen)
            except OSError as exc:
                error = exc.strerror or type(exc).__name__
                text = _messages.REPORT_JOURNAL_CANT_BE_READ.format(error=error)
                problems.append(problem(Kind.UNREADABLE, item.path, text))
        elif not item.is_file(follow_symlinks=False):
            text = _messages.REPORT_FILE_NOT_A_JOURNAL_FILE.format(kind=_kind_of(item))
            problems.append(problem(Kind.NOT_REGULAR, item.path, text))
        elif item.name.endswith(SUFFIXES):
            files.append(item.path)
        else:
            begins = _begins_as_journal(item.path)
            if begins is True:
                files.append(item.path)
            elif begins is False:
                problems.append(problem(Kind.NOT_A_JOURNAL, item.path, _messages.REPORT_FILE_NOT_A_JOURNAL_NAME))
            else:
                problems.append(begins)


def _begins_as_journal(path: str) -> bool | Problem:
    """Whether the file ``path`` begins as a journal file does (:data:`JOURNAL_SIGNATURE`), or why it can't be read."""
    found = open_journal(path)
    if isinstance(found, dict):
        return found
    try:
        return os.read(found, len(JOURNAL_SIGNATURE)) == JOURNAL_SIGNATURE
    except OSError as exc:
        error = exc.strerror or type(exc).__name__
        return problem(Kind.UNREADABLE, path, _messages.REPORT_JOURNAL_CANT_BE_READ.format(error=error))
    finally:
        os.close(found)


def _kind_of(item: os.DirEntry[str]) -> str:
    try:
        return journal.kind_of(item.stat(follow_symlinks=False).st_mode)
    except OSError:
        return "not a file"


def _set_of(path: str) -> str:
    """The file set ``path`` belongs to: its directory and name up to a rotation's ``@``."""
    head, name = os.path.split(path)
    for suffix in SUFFIXES:
        if name.endswith(suffix):
            name = name[: -len(suffix)]
            break
    return os.path.join(head, name.split("@", 1)[0])


def open_journal(path: str) -> int | Problem:
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


def is_user_set(path: str) -> bool:
    """Whether ``path`` is of journald's per-user split of a machine's journal (``user-1000.journal``)."""
    name = os.path.basename(_set_of(path))
    return name.startswith("user-") and name[len("user-") :].isdigit()
