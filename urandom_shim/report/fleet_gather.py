"""``urandom-shim report`` over a fleet: the events files and directories, and the journal directories that
systemd-journal-remote writes, read into one report (:func:`gather_fleet`), each finding attributed to the machine
and boot its source names (:mod:`urandom_shim.report.fleet`).
"""

from __future__ import annotations

from . import fleet as _fleet
from .gather import MAX_REJECTED_SHOWN, _events_source, _report, read_events_file

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Callable


def gather_fleet(
    events_paths: list[str],
    journal_dirs: list[str],
    *,
    progress: Callable[[int, int, int], None] | None = None,
) -> dict[str, Any]:
    """Every fact of the report over many machines and boots: the events files and directories ``events_paths``
    names, and the journal directories ``journal_dirs`` (as systemd-journal-remote writes them), each finding
    attributed to the machine and boot its source names (:mod:`urandom_shim.report.fleet`). ``progress(done,
    total, boots)`` is called as files are read."""
    boots: dict[Any, dict[str, Any]] = {}
    files, problems = _fleet.events_files(events_paths)
    read: list[dict[str, Any]] = []
    for done, path in enumerate(files, 1):
        found = read_events_file(path)
        read.append(_events_source(path, found))
        for event in found["events"]:
            ids = (_fleet.text_field(event, "machine_id"), _fleet.text_field(event, "boot_id"))
            # Records that name no machine: the file is one machine's, unnamed.
            boot = _fleet.boot_of(boots, *ids, machine=None if ids[0] else f"file {path}")
            _fleet.note(boot, **event)
            boot["file_events"].append(event)
            if path not in boot["sources"]:
                boot["sources"].append(path)
        if progress is not None:
            progress(done, len(files), len(boots))
    sources: dict[str, Any] = {}
    if events_paths:
        sources["events"] = _events_summary(events_paths, read, problems)
    if journal_dirs:
        from . import journal_dir as _journal_dir

        def step(done: int, total: int, _boots: int) -> None:
            if progress is not None:
                progress(len(files) + done, len(files) + total, len(boots))

        found_dirs = _journal_dir.read_journal_dirs(journal_dirs, progress=step)
        sources["journal_dirs"] = found_dirs["sources"]
        for facts in found_dirs["boots"]:
            boot = _fleet.boot_of(boots, facts["machine_id"], facts["boot_id"])
            _fleet.note(boot, **{name: facts.get(name) for name in ("hostname", "kernel", "first_boot")})
            _fleet.note(boot, crng_init_done=facts.get("crng_init_done"), first_seen=facts.get("first_seen"))
            for event in facts["events"]:
                event.update(machine_id=facts["machine_id"], boot_id=facts["boot_id"], hostname=facts["hostname"])
            boot["journal_events"].extend(facts["events"])
            boot["stalls"].extend(
                dict(s, machine_id=facts["machine_id"], boot_id=facts["boot_id"]) for s in facts["stalls"]
            )
            boot["sources"].extend(path for path in facts["files"] if path not in boot["sources"])
            boot.setdefault("rejected", []).extend(facts["rejected"])
    sources["kernel"] = {"crng_init_done": None, "source": "each boot's own journal", "simulated": False}
    stalls = [stall for boot in boots.values() for stall in boot["stalls"]]
    report = _report(sources, boots, None, stalls, None)
    report["fleet_mode"] = True
    rejected = [line for boot in boots.values() for line in boot.get("rejected", ())]
    report["rejected"] = {"count": len(rejected), "lines": rejected[:MAX_REJECTED_SHOWN]}
    return report


def _events_summary(paths: list[str], read: list[dict[str, Any]], problems: list[tuple[str, str]]) -> dict[str, Any]:
    """What ``--events`` read over all its files: a file that could not be read is one of the problems, and the
    source counts as read when some file was."""
    unread = [(source["path"], source["problem"]) for source in read if not source["read"]]
    listed = [{"path": path, "problem": problem} for path, problem in problems + unread]
    some = any(source["read"] for source in read)
    problem = None
    if not some:
        problem = "no events file in it" if not read else f"none of its {len(read)} files could be read"
    return {
        "path": ", ".join(paths),
        "paths": paths,
        "files": len(read),
        "records": sum(source["records"] for source in read),
        "skipped": sum(source["skipped"] for source in read),
        "skipped_why": _summed(source["skipped_why"] for source in read),
        "problems": listed,
        "problem": problem,
        "read": some,
        "absent": not some and all(source["absent"] for source in read) and not problems,
    }


def _summed(dicts: Any) -> dict[str, int]:
    total: dict[str, int] = {}
    for found in dicts:
        for reason, count in found.items():
            total[reason] = total.get(reason, 0) + count
    return total
