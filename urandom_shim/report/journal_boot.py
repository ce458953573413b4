"""One machine's journal, for the report of one boot: this boot's (``journalctl -b``), or a saved ``journalctl -o
json`` output (``--journal-file``; of a file that holds several boots, the last one), read into that boot's facts as
a fleet's journal files are (:mod:`urandom_shim.report.journal_facts`): the same selected lines, reduced as they
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
    those entries, and the permission problem)."""
    reducers: Dict[Key, Reducer] = {}

    def add(entry: journal.Entry) -> None:
        key = journal.ids(entry)
        reducer = reducers.get(key)
        if reducer is None:
            reducer = reducers[key] = Reducer(key, budget)
        reducer.add(entry)

    ran = journal.stream(journal.this_boot(), add, timeout=timeout)
    found = journal.this_boot_problem(ran, timeout)
    for reducer in reducers.values():
        units = reducer.stall_units()
        finder = reducer.finder()
        if units and finder is not None:
            matches = [f"_SYSTEMD_UNIT={unit}" for unit in units]
            if journal.stream(journal.this_boot(matches), finder.add, timeout=timeout).status is not None:
                reducer.facts["stalls"] = finder.stalls()
    boots = [reducer.done() for reducer in reducers.values()]
    read = bool(ran.entries) or found is None
    return Found(_source("journalctl -b", [found] if found else [], boots, read, budget), boots)


def read_saved(path: str, *, budget: Budget | None = None) -> Found:
    """A saved ``journalctl -o json`` output: its entries as journalctl would select them
    (:func:`urandom_shim.report.journal.selected`), of its last boot and of none (the times since boot of two boots
    can't be compared); lines that are not an entry are skipped and counted (a file of nothing else is not read)."""
    saved = journal.Saved(path)
    by_boot: Dict[Optional[str], Reducer] = {}
    last: Optional[str] = None
    for entry in saved.entries():
        machine_id, boot_id = journal.ids(entry)
        if boot_id is not None:
            last = boot_id
        if journal.selected(entry):
            reducer = by_boot.get(boot_id)
            if reducer is None:
                reducer = by_boot[boot_id] = Reducer((machine_id, boot_id), budget)
            reducer.add(entry, path)
    chosen = [by_boot[boot] for boot in dict.fromkeys((last, None)) if boot in by_boot]
    if chosen and chosen[0].stall_units():
        finder = chosen[0].finder()
        if finder is not None:
            for entry in saved.entries():
                if journal.field(entry, "_BOOT_ID") in (last, None):
                    finder.add(entry)
            chosen[0].facts["stalls"] = finder.stalls()
    boots: Dict[Key, BootFacts] = {}
    for reducer in chosen:
        facts = reducer.done()
        if boots and facts["boot_id"] is None:  # an entry that names no boot is of the last one
            first = next(iter(boots.values()))
            facts["machine_id"], facts["boot_id"] = first["machine_id"], first["boot_id"]
        _facts.merge(boots, facts)
    problems = [saved.problem] if saved.problem is not None else []
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
        text = _messages.REPORT_TOO_MANY_FINDINGS.format(count=held, limit=(budget or Budget()).limit)
        problems = [*problems, problem(Kind.TOO_MANY_FINDINGS, where, text)]
    return {
        "path": path,
        "problems": problems,
        "problem": said(problems[0]) if problems else None,
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
