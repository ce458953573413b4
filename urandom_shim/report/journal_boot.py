"""One machine's journal: this boot's (``journalctl -b``), or a saved ``journalctl -o json`` output
(``--journal-file``; a file that holds several boots is read as a fleet of them), read into each boot's facts as a
fleet's journal files are (:mod:`urandom_shim.report.journal_facts`): the same selected lines, reduced as they
come, and the stalls from a second, narrower read of the units that may have stalled.
"""

from __future__ import annotations

from typing import Dict, List, NamedTuple, Optional

from .. import _messages
from . import journal
from . import journal_facts as _facts
from .journal_facts import BootFacts, Key, Reducer
from .sources import ABSENT, Budget, JournalSource, Kind, Line, Problem, problem, said


class Found(NamedTuple):
    """What the journal held: its source, and the facts of its boot (none when nothing was read)."""

    source: JournalSource
    boots: List[BootFacts]


def read_this_boot(*, timeout: float = journal.TIMEOUT, budget: Budget | None = None) -> Found:
    """This boot's journal, through journalctl: what it says of this boot, and the problem when it can't be read in
    full (:func:`urandom_shim.report.journal.this_boot_problem`; a user who may read only their own journal gets
    those entries, and the permission problem; a journal that no longer reaches back to the boot's start)."""
    reducers: Dict[Key, Reducer] = {}

    def add(entry: journal.Entry) -> None:
        key = journal.ids(entry)
        reducer = reducers.get(key)
        if reducer is None:
            reducer = reducers[key] = Reducer(key, budget)
        reducer.add(entry)

    ran = journal.stream(journal.this_boot(), add, timeout=timeout)
    found = journal.this_boot_problem(ran, timeout)
    problems = [found] if found else []
    for reducer in reducers.values():
        if found is None and not reducer.reaches_start():
            _first_entries(reducer, timeout)
            if not reducer.reaches_start() and not in_container():
                problems.append(problem(Kind.NO_BOOT_START, None, _facts.no_start(reducer.facts)))
        units = reducer.stall_units()
        finder = reducer.finder()
        if units and finder is not None:
            matches = [f"_SYSTEMD_UNIT={unit}" for unit in units]
            if journal.stream(journal.this_boot(matches), finder.add, timeout=timeout).status is not None:
                reducer.facts["stalls"] = finder.stalls()
    boots = [reducer.done() for reducer in reducers.values()]
    read = bool(ran.entries) or found is None
    return Found(_source("journalctl -b", problems, boots, read, budget), boots)


def _first_entries(reducer: Reducer, timeout: float) -> None:
    """This boot's first entries, for where its journal begins: the selected lines alone may not hold them."""

    def first(entry: journal.Entry) -> None:
        if journal.ids(entry)[1] == reducer.key[1]:
            reducer.seen_at(journal.at(entry))

    journal.stream(["journalctl", "-b", *journal.first_entries()], first, timeout=timeout, limit=journal.FIRST_ENTRIES)


#: Where systemd says, in a container, which container manager started it: a container's journal holds no kernel
#: line, and its boot is the container's start, not the kernel's.
CONTAINER_FILE = "/run/systemd/container"


def in_container() -> bool:
    """Whether this machine is a container (systemd's :data:`CONTAINER_FILE`): its journal begins with the
    container's start, long after the kernel's, and holds none of the kernel's lines."""
    import os

    return os.path.exists(CONTAINER_FILE)


#: The longest a saved journal may take to read (it has no journalctl's timeout): a boot's takes a second.
SAVED_TIME = 300.0


def read_saved(path: str, *, budget: Budget | None = None, seconds: float = SAVED_TIME) -> Found:
    """A saved ``journalctl -o json`` output: every boot it holds, each read as a fleet's journal files are, its
    entries as journalctl would select them (:func:`urandom_shim.report.journal.selected`); an entry that names no
    boot is of the boot that comes last. Lines that are not an entry are skipped and counted (a file of nothing else
    is not read). A boot whose entries do not reach back to its start is named (every entry counts for where it
    began, not only the selected ones); so is a read that runs out of ``seconds``."""
    import time

    saved = journal.Saved(path)
    by_boot: Dict[Optional[str], Reducer] = {}
    began: Dict[Optional[str], float] = {}
    machines: Dict[Optional[str], Optional[str]] = {}
    order: List[Optional[str]] = []
    deadline = time.monotonic() + seconds
    late = False
    for number, entry in enumerate(saved.entries()):
        if number % 4096 == 0 and time.monotonic() > deadline:
            late = True
            break
        machine_id, boot_id = journal.ids(entry)
        if boot_id not in machines:
            machines[boot_id] = machine_id
            order.append(boot_id)
        stamp = journal.at(entry)
        if stamp == stamp and stamp < began.get(boot_id, float("inf")):
            began[boot_id] = stamp
        if journal.selected(entry):
            reducer = by_boot.get(boot_id)
            if reducer is None:
                reducer = by_boot[boot_id] = Reducer((machine_id, boot_id), budget)
            reducer.add(entry, path)
    last = next((boot for boot in reversed(order) if boot is not None), None)
    for boot_id in order:  # a boot of entries none of which was selected is still a boot of the journal
        if boot_id is not None and boot_id not in by_boot:
            by_boot[boot_id] = Reducer((machines[boot_id], boot_id), budget)
    for boot_id, reducer in by_boot.items():
        if boot_id in began:
            reducer.seen_at(began[boot_id])
    problems: List[Problem] = []
    stalled = [reducer for reducer in by_boot.values() if reducer.stall_units() and reducer.finder() is not None]
    if stalled and not late:
        finders = {reducer.key[1]: (reducer, reducer.finder()) for reducer in stalled}
        for entry in saved.entries():
            boot_id = journal.field(entry, "_BOOT_ID")
            reducer, finder = finders.get(boot_id if boot_id is not None else last, (None, None))
            if finder is not None:
                finder.add(entry)
        for reducer, finder in finders.values():
            if finder is not None:
                reducer.facts["stalls"] = finder.stalls()
    boots: Dict[Key, BootFacts] = {}
    for boot_id in [boot for boot in by_boot if boot is not None] + ([None] if None in by_boot else []):
        reducer = by_boot[boot_id]
        if boot_id is not None and not reducer.reaches_start():
            problems.append(problem(Kind.NO_BOOT_START, path, _facts.no_start(reducer.facts)))
        facts = reducer.done()
        if facts["boot_id"] is None and last is not None:  # an entry that names no boot is of the last one
            facts["machine_id"], facts["boot_id"] = machines[last], last
        _facts.merge(boots, facts)
    if saved.problem is not None:
        problems.insert(0, saved.problem)
    if late:
        problems.append(problem(Kind.TIMED_OUT, path, _messages.REPORT_SAVED_OUT_OF_TIME.format(seconds=seconds)))
    read = saved.lines > saved.skipped and saved.problem is None
    return Found(_source(path, problems, list(boots.values()), read, budget), list(boots.values()))


def _source(
    path: str, problems: List[Problem], boots: List[BootFacts], read: bool, budget: Budget | None = None
) -> JournalSource:
    """The source of one machine's journal, from its boots' facts; a line of the shim's that could not be read in
    full is one more problem."""
    rejected: List[Line] = []
    unread: List[Line] = []
    for facts in boots:
        _facts.keep(rejected, facts["rejected"]["lines"])
        _facts.keep(unread, facts["unread"]["lines"])
    count = sum(facts["unread"]["count"] for facts in boots)
    where = None if path == "journalctl -b" else path
    if count:
        problems = [*problems, problem(Kind.UNREAD_LINE, where, _messages.REPORT_LINES_UNREAD.format(count=count))]
    held = sum(facts["held_back"] for facts in boots)
    if held:
        text = _messages.REPORT_TOO_MANY_FINDINGS.format(count=held, limit=(budget or Budget()).mebibytes)
        problems = [*problems, problem(Kind.TOO_MANY_FINDINGS, where, text)]
    return {
        "path": path,
        "problems": problems,
        "problem": (problems[0]["problem"] if problems[0]["path"] in (path, None) else said(problems[0]))
        if problems
        else None,
        "read": read,
        "absent": not read and bool(problems) and all(p["kind"] in ABSENT for p in problems),
        "files": 1,
        "entries": sum(facts["entries"] for facts in boots),
        "records": sum(len(facts["events"]) for facts in boots),
        "rejected": sum(facts["rejected"]["count"] for facts in boots),
        "rejected_lines": rejected,
        "unread": count,
        "unread_lines": unread,
        "untimed": sum(facts["untimed"] for facts in boots),
    }
