"""``urandom-shim report``'s facts, gathered along one path whatever was asked (:func:`gather_report`): a report is a
fleet's, and one machine's report is a fleet of one. Its :class:`Inputs` say what to read (events files and
directories, journal directories, this boot's journal or a saved one, the kernel log) and how to attribute a record
that names no machine: to this machine's boot (one machine), or to a machine of its file's own (a fleet). Every
source is read and checked the same way, and every finding is attributed to the machine and boot it came from
(:mod:`urandom_shim.report.fleet`). The result is what ``--json`` prints, format :data:`VERSION`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Tuple

from .. import _events, _messages
from . import events_files
from . import fleet as _fleet
from . import kernel_log as _kernel_log
from .journal_facts import BootFacts
from .sources import (
    ABSENT,
    Budget,
    EventsSource,
    KernelSource,
    Kind,
    Problem,
    Report,
    Source,
    Sources,
    problem,
)
from .verdict import verdict

#: The version of ``report --json``'s format.
VERSION = 3
#: The most rejected and unread journal lines ``--json`` lists (all are counted).
MAX_REJECTED_SHOWN = 20
#: The kernel line of a simulated run's report: its window was the simulation's.
SIMULATED_KERNEL = (
    "not part of this report: the window was simulated ({spec}), so the real kernel's CRNG, ready long ago, does not "
    "say when it closed"
)


@dataclass
class Inputs:
    """What a report reads, and how. One machine's report names its events file (``events``, or the configured one
    as ``events_default``, which may not exist yet), reads this boot's journal (``this_boot``) or a saved one
    (``journal_file``) and the kernel log (``kernel_log``), and attributes a record that names no machine to this
    machine's boot (``one_machine``). A fleet's names events files and directories, and journal directories."""

    events: List[str] = field(default_factory=list)
    events_default: Optional[str] = None
    journal_dirs: List[str] = field(default_factory=list)
    this_boot: bool = False
    journal_file: Optional[str] = None
    kernel_log: bool = False
    one_machine: bool = False
    simulated: Optional[str] = None
    since: Optional[float] = None
    allow_empty: bool = False
    own_events: bool = False
    progress: Optional[Callable[[int, int, int], None]] = None


def gather(
    events_path: str | None,
    *,
    journal: bool = True,
    journal_file: str | None = None,
    simulated: str | None = None,
    since: float | None = None,
    named: bool = True,
    allow_empty: bool = False,
    own: bool = False,
) -> Report:
    """One machine's report: its events file ``events_path`` (``named`` on the command line, or the configured one),
    this boot's journal (``journal``) or a saved one (``journal_file``), and the kernel log. ``simulated``: the
    simulation the events were recorded under (``simulate --report-only``): the real kernel's ``crng init done`` is
    then not part of the story. ``own``: the events file is the caller's own, made for this run (``simulate``), so
    an empty one is a run without events, not a file that says nothing."""
    return gather_report(
        Inputs(
            events=[events_path] if events_path is not None and named else [],
            events_default=None if named else events_path,
            this_boot=journal and journal_file is None,
            journal_file=journal_file,
            kernel_log=True,
            one_machine=True,
            simulated=simulated,
            since=since,
            allow_empty=allow_empty,
            own_events=own,
        )
    )


def default_events_path() -> str | None:
    """The configured events file, else the suggested one if it exists."""
    try:
        from .._runtime import current_settings

        configured = current_settings().events.value
    except Exception:  # noqa: BLE001 - a report must not fail over configuration: check reports that
        configured = None
    if configured:
        return configured
    return _events.DEFAULT_FILE if os.path.exists(_events.DEFAULT_FILE) else None


def gather_report(inputs: Inputs) -> Report:
    """Every fact of the report that ``inputs`` asks for, as ``--json`` prints it. Each source says whether it was
    read (``read``), what could not be read (``problems``, each a kind), and whether there was simply nothing there
    (``absent``)."""
    boots: Dict[Any, _fleet.Boot] = {}
    sources: Sources = {}
    journal_boots: List[BootFacts] = []
    budget = Budget()  # the findings the report holds, over every source
    if inputs.this_boot or inputs.journal_file is not None:
        from . import journal_boot

        if inputs.journal_file is not None:
            found = journal_boot.read_saved(inputs.journal_file, budget=budget)
        else:
            found = journal_boot.read_this_boot(budget=budget)
        sources["journal"] = found.source
        journal_boots += found.boots
    if inputs.journal_dirs:
        from . import journal_dir

        def step(done: int, total: int, seen: int) -> None:
            if inputs.progress is not None:
                inputs.progress(done, total, seen)

        dirs = journal_dir.read_journal_dirs(inputs.journal_dirs, progress=step, budget=budget)
        sources["journal_dirs"] = dirs.sources
        journal_boots += dirs.boots
    for facts in journal_boots:
        _add_journal(boots, facts)
    here = _here(journal_boots) if inputs.one_machine else None
    local = _fleet.boot_of(boots, *here) if here is not None else None
    if inputs.events or inputs.events_default is not None or inputs.one_machine:
        sources["events"] = _read_events(inputs, boots, here, budget)
    crng, kernel = _kernel(inputs, boots, local, journal_boots)
    sources["kernel"] = kernel
    if local is not None and len(boots) > 1 and not _holds_anything(local) and not journal_boots:
        del boots[(local["machine"], local["boot_id"])]  # this machine was only asked for its ids
    return _report(inputs, sources, boots, crng)


def _add_journal(boots: Dict[Any, _fleet.Boot], facts: BootFacts) -> None:
    boot = _fleet.boot_of(boots, facts["machine_id"], facts["boot_id"])
    _fleet.note(
        boot,
        hostname=facts["hostname"],
        kernel=facts["kernel"],
        first_boot=facts["first_boot"],
        crng_init_done=facts["crng_init_done"],
        first_seen=facts["first_seen"],
    )
    for event in facts["events"]:
        event["machine_id"], event["boot_id"], event["hostname"] = (
            facts["machine_id"],
            facts["boot_id"],
            facts["hostname"],
        )
    boot["journal_events"].extend(facts["events"])
    boot["stalls"].extend(facts["stalls"])
    boot["sources"].extend(path for path in facts["files"] if path not in boot["sources"])
    boot["rejected"] += facts["rejected"]["count"]
    boot["rejected_lines"] += facts["rejected"]["lines"][: MAX_REJECTED_SHOWN - len(boot["rejected_lines"])]
    boot["unread"] += facts["unread"]["count"]
    boot["unread_lines"] += facts["unread"]["lines"][: MAX_REJECTED_SHOWN - len(boot["unread_lines"])]


def _here(journal_boots: List[BootFacts]) -> Tuple[Optional[str], Optional[str]]:
    """The (machine id, boot id) of this machine's report: its journal's boot, else this machine's own ids."""
    for facts in reversed(journal_boots):
        if facts["machine_id"] or facts["boot_id"]:
            return facts["machine_id"], facts["boot_id"]
    if journal_boots:  # entries that name no machine and no boot: still this machine's journal
        return None, None
    found = _events.machine()
    return found["machine_id"], found["boot_id"]


#: The longest a read of events files may take: this, and a second more per file. A directory of a thousand machines'
#: files takes seconds; one of forged files that are each slow to read must not take the report hours.
TOTAL_TIME = 300.0


def _read_events(
    inputs: Inputs, boots: Dict[Any, _fleet.Boot], here: Tuple[Optional[str], Optional[str]] | None, budget: Budget
) -> EventsSource:
    """Read every events file the inputs name into ``boots``: a record is its machine's and boot's as it names them;
    one that names neither is this machine's boot (one machine), or a machine of its file's own (a fleet)."""
    import time

    named = list(events_files.files(inputs.events))
    walked = [found for found in named if found.problem is None]
    problems: List[Problem] = [found.problem for found in named if found.problem is not None]
    paths = [(found.path, True) for found in walked]
    if inputs.events_default is not None:
        paths.append((inputs.events_default, False))
    records = files = empty = 0
    skipped: Dict[str, int] = {}
    seconds = TOTAL_TIME + len(paths)
    deadline = time.monotonic() + seconds
    for done, (path, given) in enumerate(paths, 1):
        if time.monotonic() > deadline:
            text = _messages.REPORT_FILE_OUT_OF_TIME.format(seconds=seconds)
            problems.append(problem(Kind.TIMED_OUT, path, text))
            continue
        read = events_files.read_events_file(path, named=given, budget=budget, deadline=deadline)
        trouble = read["problem"]
        if trouble is None:
            files += 1
        elif trouble["kind"] is Kind.EMPTY and inputs.own_events:
            files += 1  # simulate's own file, which a run without a call leaves empty: a run without events
        elif trouble["kind"] is Kind.EMPTY and inputs.allow_empty:
            empty += 1
            problems.append(trouble)
            if here is None:  # a fleet's machine that wrote nothing: one without events
                _fleet.boot_of(boots, None, None, machine=f"file {path}")["sources"].append(path)
        else:
            problems.append(trouble)
        if read["partly"] is not None:
            problems.append(read["partly"])
        for reason, count in read["skipped"].items():
            skipped[reason] = skipped.get(reason, 0) + count
        records += len(read["events"])
        for event in read["events"]:
            ids = (_fleet.text_field(event.get("machine_id")), _fleet.text_field(event.get("boot_id")))
            if ids[0] is None and here is not None:
                # One machine's report: a record that names no machine is this machine's (one without
                # /etc/machine-id, as an initramfs or a container has), of the boot it names, else of this boot.
                boot = _fleet.boot_of(boots, here[0], ids[1] or here[1])
            else:  # a fleet's records that name no machine: the file is one machine's, unnamed
                boot = _fleet.boot_of(boots, *ids, machine=None if ids[0] else f"file {path}")
            _fleet.note(boot, **event)
            boot["file_events"].append(event)
            if path not in boot["sources"]:
                boot["sources"].append(path)
        if inputs.progress is not None and not inputs.one_machine:
            inputs.progress(done, len(paths), len(boots))
    read_any = files > 0
    if read_any:
        source_problem = None
    elif not paths:
        source_problem = (
            _messages.REPORT_NO_EVENTS_FILE_IN_IT if inputs.events else _messages.REPORT_NO_EVENTS_CONFIGURED
        )
    elif len(paths) == 1 and problems and problems[-1]["path"] == paths[0][0]:
        source_problem = problems[-1]["problem"]  # said of the file itself, the source's path
    else:
        source_problem = _messages.REPORT_NO_EVENTS_FILE_READ.format(files=len(paths))
    all_paths = [*inputs.events, *([inputs.events_default] if inputs.events_default else [])]
    return {
        "path": ", ".join(all_paths) if all_paths else None,
        "paths": all_paths,
        "problems": problems,
        "problem": source_problem,
        "read": read_any,
        "absent": not read_any and all(p["kind"] in ABSENT for p in problems) and (bool(problems) or not paths),
        "files": files,
        "records": records,
        "skipped": sum(skipped.values()),
        "skipped_why": skipped,
        "empty": empty,
    }


def _kernel(
    inputs: Inputs,
    boots: Dict[Any, _fleet.Boot],
    local: _fleet.Boot | None,
    journal_boots: List[BootFacts],
) -> Tuple[Optional[float], KernelSource]:
    """``crng init done`` of this machine's report (None over a fleet, where each boot has its own), and where it
    came from. A window that every event says was simulated is not the real kernel's."""
    if not inputs.one_machine:
        return None, {"crng_init_done": None, "source": "each boot's own journal", "simulated": False}
    simulated = inputs.simulated
    events = [event for boot in boots.values() for event in (*boot["file_events"], *boot["journal_events"])]
    if simulated is None and events and all(event.get("simulated") for event in events):
        # Every event was recorded in a simulated window (a CI dry run's events file, read on its own later): the
        # real kernel's crng init done, long past, is no more part of this story than in simulate's own report.
        given = [spec for spec in (event.get("simulated") for event in events) if isinstance(spec, str)]
        simulated = given[0] if given else "a simulation"
    if simulated is not None:
        if local is not None:
            local["crng_init_done"] = None
        return None, {"crng_init_done": None, "source": SIMULATED_KERNEL.format(spec=simulated), "simulated": True}
    crng = local["crng_init_done"] if local is not None else None
    if crng is not None:
        source = _kernel_log.FROM_JOURNAL
    elif inputs.journal_file is not None:
        source = "the saved journal holds no 'crng init done'" if journal_boots else "the saved journal was not read"
    elif inputs.kernel_log:
        crng, source = _kernel_log.from_kernel_log({facts["boot_id"] for facts in journal_boots})
        if local is not None:
            local["crng_init_done"] = crng
    else:
        source = "no journal was read"
    return crng, {"crng_init_done": crng, "source": source, "simulated": False}


def _holds_anything(boot: _fleet.Boot) -> bool:
    return bool(boot["file_events"] or boot["journal_events"] or boot["sources"])


def _report(inputs: Inputs, sources: Sources, boots: Dict[Any, _fleet.Boot], crng: float | None) -> Report:
    assembled = _fleet.assemble(boots)
    programs = assembled["programs"]
    if inputs.since is not None:
        for program in programs:
            program["first_call"] = _since(program["first_call"], inputs.since)
            for call in program["calls"]:
                call["first"] = _since(call["first"], inputs.since)
    asked = each_source(sources)
    read = any(source["read"] for source in asked)
    # With --allow-empty, sources that simply held nothing are a machine without events: a clean report, said so.
    empty_allowed = (
        inputs.allow_empty and not read and all(source["absent"] or not source["problems"] for source in asked)
    )
    fleet = not inputs.one_machine or len(boots) > 1
    rejected = [line for boot in boots.values() for line in boot["rejected_lines"]]
    unread = [line for boot in boots.values() for line in boot["unread_lines"]]
    return {
        "v": VERSION,
        "since": inputs.since,
        "read": read or empty_allowed,
        "allow_empty": inputs.allow_empty,
        "empty_allowed": empty_allowed,
        "fleet_mode": fleet,
        "sources": sources,
        "crng_init_done": crng,
        "machines": assembled["machines"],
        "boots": assembled["boots"],
        "fleet": assembled["fleet"],
        "programs": programs,
        "stalls": [stall for boot in boots.values() for stall in boot["stalls"]],
        "rejected": {"count": sum(boot["rejected"] for boot in boots.values()), "lines": rejected[:MAX_REJECTED_SHOWN]},
        "unread": {"count": sum(boot["unread"] for boot in boots.values()), "lines": unread[:MAX_REJECTED_SHOWN]},
        "verdict": verdict(programs, fleet=fleet),
    }


def each_source(sources: Sources) -> List[Source]:
    """The sources a report was asked to read (not the kernel's, which is no input of its own)."""
    found: List[Source] = []
    if "events" in sources:
        found.append(sources["events"])
    if "journal" in sources:
        found.append(sources["journal"])
    found.extend(sources.get("journal_dirs", []))
    return found


def _since(when: float | None, start: float) -> float | None:
    return None if when is None else round(max(0.0, when - start), 3)
