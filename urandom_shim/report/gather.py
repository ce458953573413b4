"""``urandom-shim report``'s facts: a boot's events (the events file, and the shim's lines in the journal), the
kernel's ``crng init done`` and the units that stalled, gathered into one dict (what ``--json`` prints, format
:data:`VERSION`). Every record is checked before it counts: a malformed one is skipped and counted.
"""

from __future__ import annotations

import os

from .. import _events
from . import fleet as _fleet
from . import journal as _journal
from . import kernel_log as _kernel_log
from . import shim_lines as _shim_lines
from . import stalls as _stalls
from .verdict import EMPTY_EVENTS_FILE, KNOWN_SITES, verdict

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


#: The version of ``report --json``'s format.
VERSION = 2


MAX_EVENTS_FILE = 64 * 1024 * 1024


# -- reading -------------------------------------------------------------------------------------------------------


def read_events(path: str) -> tuple[list[dict[str, Any]], str | None, int]:
    """The events in ``path``: (events, problem, records skipped); :func:`read_events_file` without the reasons."""
    found = read_events_file(path)
    return found["events"], found["problem"], sum(found["skipped"].values())


def read_events_file(path: str) -> dict[str, Any]:
    """What the events file ``path`` holds: events (the valid records), problem (None, or why nothing could be read:
    it does not exist, can't be read, is not a regular file, or is too large), absent (True when it does not exist)
    and skipped (reason -> how many records were skipped for it: a line that is not a JSON object, a record of
    another format version, a field of the wrong type; see :func:`malformed`).

    A file that is not a regular file (a FIFO, a device, a directory) is refused before anything is read, without
    waiting for a writer."""
    result: dict[str, Any] = {"events": [], "problem": None, "absent": False, "skipped": {}}
    try:
        data = _journal.read_regular(path, MAX_EVENTS_FILE)
    except FileNotFoundError:
        result.update(problem="no such file", absent=True)
        return result
    except _journal.NotRegular as exc:
        result["problem"] = f"refused: {exc}"
        return result
    except _journal.TooLarge as exc:
        result["problem"] = f"refused: {exc}, which no boot's events are"
        return result
    except OSError as exc:
        result["problem"] = f"cannot be read ({exc.strerror or exc})"
        return result
    if not data.strip():
        # The shim creates the file only to write a record to it: an empty one holds nothing, which is no verdict.
        result.update(problem=EMPTY_EVENTS_FILE, absent=True)
        return result
    records, not_json = parse_records(data)
    skipped: dict[str, int] = {}
    if not_json:
        skipped[NOT_A_RECORD] = not_json
    for record in records:
        why = malformed(record)
        if why is not None:
            skipped[why] = skipped.get(why, 0) + 1
            continue
        record["from"] = "file"
        result["events"].append(record)
    result["skipped"] = skipped
    return result


def parse_records(data: bytes) -> tuple[list[dict[str, Any]], int]:
    """(records, lines that hold none) of the events file's bytes. Blank lines don't count: the shim starts each
    write with a newline. A line that is not a JSON object as a whole counts for the record that ends it, if one
    does: what a writer of an older shim, which began no new line, appended to a line another writer left unfinished
    (the file is shared, mode 0622). That record is the end of the line from its last ``{"v":``: the shim writes
    that only at the start of a record (a ``"`` in a string is escaped, and a record holds no object), so whatever
    another writer left before it, the record is read as it was written, and one parse per line bounds the work.
    The rest of the line is counted as a line skipped."""
    import json

    records: list[dict[str, Any]] = []
    skipped = 0
    for line in data.splitlines():
        if not line.strip():
            continue
        record = _json_object(json, line)
        if record is None:
            skipped += 1
            start = line.rfind(_RECORD_START)
            record = _json_object(json, line[start:]) if start > 0 else None
        if record is not None:
            records.append(record)
    return records, skipped


#: How every record the shim writes begins (:func:`urandom_shim._events.dumps` writes ``v`` first).
_RECORD_START = b'{"v":'


def _json_object(json: Any, text: bytes) -> dict[str, Any] | None:
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
    "test": _TEXT,
}
#: The largest number a field of a record may hold: times and waits (seconds), counts, and anything else (a pid).
_LIMITS = {"boot_time": _journal.MAX_SECONDS, "waited": _journal.MAX_SECONDS, "count": _journal.MAX_COUNT}
MAX_NUMBER = 2**63
#: The longest text a field of a record may hold: the shim clips its own to 300 characters.
MAX_FIELD = 4096


def malformed(record: dict[str, Any]) -> str | None:
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
    argv = record.get("argv") or []
    if len(argv) > 4096 or not all(isinstance(arg, str) and len(arg) <= MAX_FIELD for arg in argv):
        return "with an argv that is not a list of texts"
    return None


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


def gather(
    events_path: str | None,
    *,
    journal: bool = True,
    journal_file: str | None = None,
    simulated: str | None = None,
    since: float | None = None,
) -> dict[str, Any]:
    """Every fact of one machine's report, as ``--json`` prints it. ``simulated``: the simulation the events were
    recorded under (``simulate --report-only``): the real kernel's ``crng init done`` is then not part of the story.

    Each source says whether it was read (``read``), and if not, whether there was simply nothing there (``absent``:
    a file that does not exist, no journalctl, no journal of this boot) or it could not be read (a problem).

    The events file is this machine's: a record that names no machine and no boot (an older shim's) is of the boot
    the journal is of. Records of other boots (a persistent events file) are each their boot's."""
    sources: dict[str, Any] = {}
    file_events: list[dict[str, Any]] = []
    if events_path is not None:
        found = read_events_file(events_path)
        file_events = found["events"]
        sources["events"] = _events_source(events_path, found)
    else:
        sources["events"] = {
            "path": None,
            "records": 0,
            "skipped": 0,
            "skipped_why": {},
            "problem": "no events file configured",
            "read": False,
            "absent": True,
        }
    entries: list[dict[str, Any]] | None = None
    journal_events: list[dict[str, Any]] = []
    if journal or journal_file is not None:
        entries, problem = _journal.read_journal(journal_file)
        # A timestamp that is no time since boot: the entry is kept (a line of the shim still counts, as a finding
        # can only be added), without a time, and counted.
        untimed = sum(1 for entry in entries if _journal.bad_time(entry))
        journal_events, rejected = _shim_lines.journal_events(entries) if entries else ([], [])
        sources["journal"] = {
            "path": journal_file or "journalctl -b",
            "entries": len(entries),
            "records": len(journal_events),
            "rejected": len(rejected),
            "rejected_lines": rejected[:MAX_REJECTED_SHOWN],
            "untimed": untimed,
            "problem": problem,
            "read": problem is None,
            "absent": _journal.absent(problem),
        }
    events = file_events + journal_events
    if simulated is None and events and all(event.get("simulated") for event in events):
        # Every event was recorded in a simulated window (a CI dry run's events file, read on its own later): the
        # real kernel's crng init done, long past, is no more part of this story than in simulate's own report.
        given = [event["simulated"] for event in events if isinstance(event.get("simulated"), str)]
        simulated = given[0] if given else "a simulation"
    if simulated is not None:
        crng, crng_source = None, SIMULATED_KERNEL.format(spec=simulated)
    else:
        crng, crng_source = _kernel_log.crng_init_done(entries if entries else None)
        if journal_file is not None and crng is None and entries:
            crng_source = "the saved journal holds no 'crng init done'"
    sources["kernel"] = {"crng_init_done": crng, "source": crng_source, "simulated": simulated is not None}
    stalls = _stalls.stalls(entries, crng) if entries else []
    here = _journal_boot(entries) if entries else _this_boot()
    boots: dict[Any, dict[str, Any]] = {}
    local = _fleet.boot_of(boots, *here)
    if entries:
        _fleet.note(local, **_journal_facts(entries))
    local["crng_init_done"] = crng
    local["stalls"] = stalls
    for event in file_events:
        ids = (_fleet.text_field(event, "machine_id"), _fleet.text_field(event, "boot_id"))
        boot = _fleet.boot_of(boots, *(here if ids == (None, None) else ids))
        _fleet.note(boot, **event)
        boot["file_events"].append(event)
    for event in journal_events:
        ids = (_fleet.text_field(event, "machine_id"), _fleet.text_field(event, "boot_id"))
        boot = _fleet.boot_of(boots, *(here if ids == (None, None) else ids))
        _fleet.note(boot, hostname=event.get("hostname"))
        boot["journal_events"].append(event)
    if len(boots) > 1 and not local["file_events"] and not local["journal_events"] and not entries:
        del boots[(local["machine"], local["boot_id"])]  # this machine was only asked for its ids
    return _report(sources, boots, crng, stalls, since)


def _report(
    sources: dict[str, Any],
    boots: dict[Any, dict[str, Any]],
    crng: float | None,
    stalls: list[dict[str, Any]],
    since: float | None,
) -> dict[str, Any]:
    assembled = _fleet.assemble(boots)
    programs = assembled["programs"]
    if since is not None:
        for program in programs:
            program["first_call"] = _since(program["first_call"], since)
            for call in program["calls"]:
                call["first"] = _since(call["first"], since)
    read = any(source.get("read") for source in _each_source(sources))
    return {
        "v": VERSION,
        "since": since,
        "read": read,
        "fleet_mode": len(boots) > 1,
        "sources": sources,
        "crng_init_done": crng,
        "machines": assembled["machines"],
        "boots": assembled["boots"],
        "fleet": assembled["fleet"],
        "programs": programs,
        "stalls": stalls,
        "verdict": verdict(programs, fleet=len(boots) > 1),
    }


def _each_source(sources: dict[str, Any]) -> list[dict[str, Any]]:
    found = []
    for name, source in sources.items():
        if name == "kernel":
            continue
        found.extend(source if isinstance(source, list) else [source])
    return found


def _events_source(path: str, found: dict[str, Any]) -> dict[str, Any]:
    skipped = sum(found["skipped"].values())
    problem = found["problem"]
    if problem is None and skipped and not found["events"]:  # a file of nothing but garbage was not read
        why = "; ".join(f"{count} {reason}" for reason, count in sorted(found["skipped"].items()))
        problem = f"no record in it could be read ({why})"
    return {
        "path": path,
        "records": len(found["events"]),
        "skipped": skipped,
        "skipped_why": found["skipped"],
        "problem": problem,
        "read": problem is None,
        "absent": found["absent"],
    }


def _journal_boot(entries: list[dict[str, Any]]) -> tuple[str | None, str | None]:
    """The (machine id, boot id) the journal's entries are of: the last boot's (``read_journal`` keeps one)."""
    for entry in reversed(entries):
        machine, boot = _journal.field(entry, "_MACHINE_ID"), _journal.field(entry, "_BOOT_ID")
        if machine or boot:
            return machine, boot
    return None, None


def _this_boot() -> tuple[str | None, str | None]:
    """This machine's id and boot id, as the shim's records name them (:func:`urandom_shim._events.machine`)."""
    found = _events.machine()
    return found["machine_id"], found["boot_id"]


def _journal_facts(entries: list[dict[str, Any]]) -> dict[str, Any]:
    """What a boot's journal says of it, as a fleet's journal directories are read (:mod:`.journal_facts`): the
    kernel's release, whether systemd detected a first boot, when its first entry was written."""
    from . import journal_facts

    stamps = [journal_facts.realtime(entry) for entry in entries[:1]]
    return {
        "kernel": journal_facts.kernel_of(entries),
        "first_boot": any(journal_facts.first_boot(entry) for entry in entries),
        "first_seen": stamps[0] if stamps else None,
    }


def _since(when: float | None, start: float) -> float | None:
    return None if when is None else round(max(0.0, when - start), 3)


#: The most rejected journal lines ``--json`` lists (all are counted).
MAX_REJECTED_SHOWN = 20
#: The kernel line of a simulated run's report: its window was the simulation's.
SIMULATED_KERNEL = (
    "not part of this report: the window was simulated ({spec}), so the real kernel's CRNG, ready long ago, does not "
    "say when it closed"
)
