"""``urandom-shim report``: a boot's events (the events file, and the shim's lines in the journal), the kernel's
``crng init done`` and the units that stalled before the shim could run, turned into one report per program and a
verdict per policy. The facts are one dict (what ``--json`` prints, format :data:`VERSION`); :func:`lines` is the
text.

What a policy would do with each recorded call is the policy table's answer (:func:`urandom_shim._policies.action`)
for the call's site, so the verdict for a policy nobody configured is as exact as for the one that was.
"""

from __future__ import annotations

import os

from . import _bootlog, _events, _policies

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Iterable

#: The version of ``report --json``'s format.
VERSION = 1
#: The call sites whose bytes are meant for secrets; the two seeding sites only seed the ``random`` module.
STRONG_SITES = (_policies.URANDOM, _policies.SECRETS)
#: The sites a record may name: the policy table's, and report mode's explicit wait that nothing would end.
KNOWN_SITES = (*_policies.SITES, _policies.EXPLICIT_WAIT)
#: What one call comes to under a policy, worst last: nothing to see, a wait, weak bytes, an exception.
FINE, WAIT, WEAK, RAISE = "fine", "wait", "weak", "raise"
RANK = {FINE: 0, WAIT: 1, WEAK: 2, RAISE: 3}
#: The largest events file read: a boot's events are a few kilobytes; a file this big is not ours.
MAX_EVENTS_FILE = 64 * 1024 * 1024


def outcome(policy: _policies.Policy, site: str) -> str:
    """What a call at ``site`` in the window comes to under ``policy``."""
    if site == _policies.EXPLICIT_WAIT:
        return WAIT  # an explicit wait waits under every policy
    if site not in _policies.SITES:
        site = _policies.URANDOM
    todo = _policies.action(policy, site)
    if todo == _policies.RAISE:
        return RAISE
    if site not in STRONG_SITES:  # seeding `random`, from best-effort bytes or from time and pid: not for secrets
        return FINE
    if todo == _policies.BEST_EFFORT:
        return WEAK
    return WAIT  # pep524 waits; native is the interpreter's own os.urandom(), which blocks (Python 3.6+)


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
        data = _bootlog.read_regular(path, MAX_EVENTS_FILE)
    except FileNotFoundError:
        result.update(problem="no such file", absent=True)
        return result
    except _bootlog.NotRegular as exc:
        result["problem"] = f"refused: {exc}"
        return result
    except _bootlog.TooLarge as exc:
        result["problem"] = f"refused: {exc}, which no boot's events are"
        return result
    except OSError as exc:
        result["problem"] = f"cannot be read ({exc.strerror or exc})"
        return result
    if not data.strip():
        # The shim creates the file only to write a record to it: an empty one holds nothing, which is no verdict.
        result.update(problem=EMPTY_EVENTS_FILE, absent=True)
        return result
    records, not_json = _bootlog.parse_export(data.splitlines())  # JSON lines, as the journal's export is
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


#: The problem of an events file that holds nothing but blanks.
EMPTY_EVENTS_FILE = "empty (the shim creates it only to write a record to it)"
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
}
#: The largest number a field of a record may hold: times and waits (seconds), counts, and anything else (a pid).
_LIMITS = {"boot_time": _bootlog.MAX_SECONDS, "waited": _bootlog.MAX_SECONDS, "count": _bootlog.MAX_COUNT}
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
        from ._runtime import current_settings

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
    """Every fact of the report, as ``--json`` prints it. ``simulated``: the simulation the events were recorded
    under (``simulate --report-only``): the real kernel's ``crng init done`` is then not part of the story.

    Each source says whether it was read (``read``), and if not, whether there was simply nothing there (``absent``:
    a file that does not exist, no journalctl, no journal of this boot) or it could not be read (a problem)."""
    sources: dict[str, Any] = {}
    events: list[dict[str, Any]] = []
    if events_path is not None:
        found = read_events_file(events_path)
        events.extend(found["events"])
        skipped = sum(found["skipped"].values())
        problem = found["problem"]
        if problem is None and skipped and not found["events"]:  # a file of nothing but garbage was not read
            why = "; ".join(f"{count} {reason}" for reason, count in sorted(found["skipped"].items()))
            problem = f"no record in it could be read ({why})"
        sources["events"] = {
            "path": events_path,
            "records": len(found["events"]),
            "skipped": skipped,
            "skipped_why": found["skipped"],
            "problem": problem,
            "read": problem is None,
            "absent": found["absent"],
        }
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
    if journal or journal_file is not None:
        entries, problem = _bootlog.read_journal(journal_file)
        # A timestamp that is no time since boot: the entry is kept (a line of the shim still counts, as a finding
        # can only be added), without a time, and counted.
        untimed = sum(1 for entry in entries if _bootlog.bad_time(entry))
        from_journal, rejected = _bootlog.journal_events(entries) if entries else ([], [])
        events.extend(_unseen(from_journal, events))
        sources["journal"] = {
            "path": journal_file or "journalctl -b",
            "entries": len(entries),
            "records": len(from_journal),
            "rejected": len(rejected),
            "rejected_lines": rejected[:MAX_REJECTED_SHOWN],
            "untimed": untimed,
            "problem": problem,
            "read": problem is None,
            "absent": _bootlog.absent(problem),
        }
    if simulated is None and events and all(event.get("simulated") for event in events):
        # Every event was recorded in a simulated window (a CI dry run's events file, read on its own later): the
        # real kernel's crng init done, long past, is no more part of this story than in simulate's own report.
        given = [event["simulated"] for event in events if isinstance(event.get("simulated"), str)]
        simulated = given[0] if given else "a simulation"
    if simulated is not None:
        crng, crng_source = None, SIMULATED_KERNEL.format(spec=simulated)
    else:
        crng, crng_source = _bootlog.crng_init_done(entries if entries else None)
        if journal_file is not None and crng is None and entries:
            crng_source = "the saved journal holds no 'crng init done'"
    sources["kernel"] = {"crng_init_done": crng, "source": crng_source, "simulated": simulated is not None}
    stalls = _bootlog.stalls(entries, crng) if entries else []
    programs = group(events, crng)
    if since is not None:
        for program in programs:
            program["first_call"] = _since(program["first_call"], since)
            for call in program["calls"]:
                call["first"] = _since(call["first"], since)
    return {
        "v": VERSION,
        "since": since,
        "sources": sources,
        "crng_init_done": crng,
        "programs": programs,
        "stalls": stalls,
        "verdict": verdict(programs),
    }


def _since(when: float | None, start: float) -> float | None:
    return None if when is None else round(max(0.0, when - start), 3)


#: What the report says of the journal's entries whose timestamp is no time since boot.
UNTIMED = "with a timestamp that is not a time since boot (read without a time)"
#: The most rejected journal lines ``--json`` lists (all are counted).
MAX_REJECTED_SHOWN = 20
#: The kernel line of a simulated run's report: its window was the simulation's.
SIMULATED_KERNEL = (
    "not part of this report: the window was simulated ({spec}), so the real kernel's CRNG, ready long ago, does not "
    "say when it closed"
)


def _unseen(from_journal: list[dict[str, Any]], known: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The journal's events that the events file does not already hold (the same event reaches both sinks). Only an
    event the file holds under the same program, process and call site is the same: dropping the journal's copy then
    changes no verdict, whatever else a record in the file says."""
    seen = {_identity(event) for event in known}
    return [event for event in from_journal if _identity(event) not in seen]


def _identity(event: dict[str, Any]) -> tuple[object, ...]:
    return (
        program_name(event),
        event.get("pid"),
        event.get("event", "call"),
        event.get("call"),
        event.get("caller"),
        _site(event),
    )


def _site(event: dict[str, Any]) -> str:
    site = event.get("site")
    return site if site in KNOWN_SITES else _events.site_of(str(event.get("call")))


# -- per program -----------------------------------------------------------------------------------------------------


def program_name(event: dict[str, Any]) -> str:
    """What a program is called in the report: its systemd unit, else the name ``[[program]]`` rules match, else its
    command line's first words."""
    if event.get("unit"):
        return str(event["unit"])
    if event.get("program"):
        return str(event["program"])
    argv = [os.path.basename(str(arg)) for arg in (event.get("argv") or ())[:2]]
    return " ".join(argv) or f"pid {event.get('pid', '?')}"


#: What a record says was done at a call site: two records that differ in any of these are two rows.
SAID = ("policy", "policy_source", "mode", "action", "would")


def group(events: Iterable[dict[str, Any]], crng: float | None) -> list[dict[str, Any]]:
    """The events per program, each with its call sites and what every policy would make of them."""
    programs: dict[str, dict[str, Any]] = {}
    for event in events:
        name = program_name(event)
        entry = programs.setdefault(
            name,
            {
                "name": name,
                "unit": event.get("unit"),
                "program": event.get("program"),
                "argv": event.get("argv"),
                "pids": [],
                "uids": [],
                "first_call": None,
                "first_call_after_crng": None,
                "calls": {},
                "sites": {},
            },
        )
        pid = event.get("pid")
        if pid is not None and pid not in entry["pids"]:
            entry["pids"].append(pid)
        uid = event.get("uid")
        if isinstance(uid, int) and uid not in entry["uids"]:
            entry["uids"].append(uid)
        # A call site is its call, its caller and its site, and what was done there: no record merges into another
        # that differs in any of them, so none can change the site (and so the verdict) or the story of another.
        site = _site(event)
        where = (event.get("call"), event.get("caller"), site)
        key = (*where, *(event.get(name) for name in SAID))
        if event.get("event") == "repeat" and event.get("from") == "journal":
            # From the journal a repeat names no policy: it belongs to the first call site it matches.
            key = entry["sites"].get(where, key)
        entry["sites"].setdefault(where, key)  # the first call site of each (call, caller, site): one look-up each
        call = entry["calls"].setdefault(
            key,
            {
                "call": event.get("call"),
                "site": site,
                "caller": event.get("caller"),
                "first": None,
                "count": 0,
                "policy": event.get("policy"),
                "policy_source": event.get("policy_source"),
                "mode": event.get("mode"),
                "action": event.get("action"),
                "would": event.get("would"),
                "waited": 0.0,
                "simulated": bool(event.get("simulated")),
            },
        )
        if event.get("event") == "repeat":
            call["count"] += int(event.get("count") or 0)
            continue
        if call["policy"] is None and call["action"] is None:  # a journal's repeat came first
            call.update({name: event.get(name) for name in SAID})
        call["count"] += 1
        when = event.get("boot_time")
        if isinstance(when, (int, float)):
            if call["first"] is None or when < call["first"]:
                call["first"] = when
            if entry["first_call"] is None or when < entry["first_call"]:
                entry["first_call"] = when
        waited = event.get("waited")
        if isinstance(waited, (int, float)) and waited > call["waited"]:
            call["waited"] = waited
    result = []
    for entry in programs.values():
        del entry["sites"]
        calls = sorted(entry["calls"].values(), key=lambda c: (c["first"] is None, c["first"] or 0.0))
        entry["calls"] = calls
        entry["simulated"] = all(c["simulated"] for c in calls)
        if entry["first_call"] is not None and crng is not None and not entry["simulated"]:
            # A simulated window has nothing to do with when the real kernel's CRNG was ready.
            entry["first_call_after_crng"] = round(entry["first_call"] - crng, 3)
        entry["under"] = {
            policy.name: max((outcome(policy, c["site"]) for c in calls), key=RANK.__getitem__, default=FINE)
            for policy in _policies.POLICIES
        }
        entry["longest_wait"] = max((c["waited"] for c in calls), default=0.0)
        result.append(entry)
    result.sort(key=lambda p: (p["first_call"] is None, p["first_call"] or 0.0, p["name"]))
    return result


def verdict(programs: list[dict[str, Any]]) -> dict[str, Any]:
    """Per policy: which programs would raise, which would use weak bytes, which would wait; and one sentence."""
    result: dict[str, Any] = {}
    for policy in _policies.POLICIES:
        by_outcome: dict[str, list[str]] = {RAISE: [], WEAK: [], WAIT: []}
        for program in programs:
            found = program["under"][policy.name]
            if found in by_outcome:
                by_outcome[found].append(program["name"])
        longest = max((p["longest_wait"] for p in programs if p["name"] in by_outcome[WAIT]), default=0.0)
        result[policy.name] = {
            "raise": by_outcome[RAISE],
            "weak": by_outcome[WEAK],
            "wait": by_outcome[WAIT],
            "longest_measured_wait": longest,
            "text": sentence(policy.name, by_outcome, longest),
        }
    return result


def sentence(policy: str, by_outcome: dict[str, list[str]], longest: float) -> str:
    parts = []
    if by_outcome[RAISE]:
        parts.append(f"{_count(by_outcome[RAISE])} would raise BlockingIOError: {_names(by_outcome[RAISE])}")
    if by_outcome[WEAK]:
        parts.append(f"{_count(by_outcome[WEAK])} would have used weak bytes: {_names(by_outcome[WEAK])}")
    if by_outcome[WAIT]:
        measured = f" (longest measured {longest:.2f} s)" if longest > 0 else ""
        parts.append(f"{_count(by_outcome[WAIT])} would wait for the CRNG{measured}: {_names(by_outcome[WAIT])}")
    if not parts:
        return f"under {policy}, no program would raise, wait or use weak bytes"
    return f"under {policy}, " + "; ".join(parts)


def _count(names: list[str]) -> str:
    return _plural(len(names), "program")


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def _names(names: list[str], shown: int = 5) -> str:
    more = f" and {len(names) - shown} more" if len(names) > shown else ""
    return ", ".join(names[:shown]) + more


def unread(report: dict[str, Any], *, allow_empty: bool = False) -> tuple[str | None, str | None, bool] | None:
    """Why ``--fail-for`` can't pass on this report although no program fails: (the source in words, or None when
    nothing at all was read; its problem; whether there simply was nothing there, which ``--allow-empty`` accepts).
    None when it can pass. A source asked for and not read fails it: an events file named or configured that does
    not exist, can't be read or is refused, and a journal that can't be read. So does reading nothing at all."""
    sources = report["sources"]
    events, journal = sources["events"], sources.get("journal")
    asked = []
    if events["path"] is not None:
        asked.append((f"the events file {shown(events['path'])}", events))
    if journal is not None:
        asked.append((f"the journal ({shown(journal['path'])})", journal))
    for name, source in asked:
        if not source["read"] and not (allow_empty and source["absent"]):
            return name, shown(source["problem"]).rstrip("."), bool(source["absent"])
    if not any(source["read"] for _name, source in asked) and not allow_empty:
        return None, None, True
    return None


def fails(report: dict[str, Any], policy: str) -> bool:
    """``--fail-for``: whether some program would raise or use weak bytes under ``policy``."""
    found = report["verdict"][policy]
    return bool(found["raise"] or found["weak"])


# -- text ------------------------------------------------------------------------------------------------------------

DONE_SHORT = {
    "untouched": "the interpreter's own",
    "waited": "waited",
    "raised": "raised BlockingIOError",
    "best-effort": "best-effort bytes",
    "timed-out-raised": "timed out, raised",
    "timed-out-best-effort": "timed out, best-effort bytes",
}
UNDER = {FINE: "nothing to see", WAIT: "waits", WEAK: "weak bytes", RAISE: "raises"}


def lines(report: dict[str, Any]) -> list[str]:
    """The report as text. Every string that came from a record or the journal is shown escaped (:func:`shown`)."""
    from ._render import rows

    out = ["urandom-shim report: randomness asked for before the kernel CRNG was ready"]
    crng = report["crng_init_done"]
    kernel = report["sources"]["kernel"]
    if crng is not None:
        out.append(f"  crng init done  {crng:.2f} s after boot (from {kernel['source']})")
    elif kernel.get("simulated"):
        out.append(f"  crng init done  {kernel['source']}")
    else:
        out.append(f"  crng init done  unknown: {kernel['source']}")
    for name in ("events", "journal"):
        source = report["sources"].get(name)
        if source is None:
            continue
        where = shown(source["path"] or "none")
        found = _plural(source["records"], "event")
        if source.get("skipped"):
            why = "; ".join(f"{count} {reason}" for reason, count in sorted(source.get("skipped_why", {}).items()))
            found += (
                f", {_plural(source['skipped'], 'record')} skipped ({shown(why)})"
                if why
                else (f", {_plural(source['skipped'], 'line')} skipped")
            )
        if source.get("untimed"):
            untimed = source["untimed"]
            found += f", {untimed} {'entry' if untimed == 1 else 'entries'} {UNTIMED}"
        if source.get("rejected"):
            found += f", {_plural(source['rejected'], 'line')} rejected (below)"
        out.append(f"  {name:<15} {where}: {shown(source['problem']) if source['problem'] else found}")
    programs = report["programs"]
    out.append("")
    read = [source for source in report["sources"].values() if source.get("read")]
    if not programs and not read:
        out.append(
            "Nothing was read: no events file and no journal, so this report can't say what happened in the window. "
            "Name the events file with --events PATH, or a saved journal with --journal-file PATH."
        )
    elif not programs:
        out.append("No program asked for randomness before the kernel CRNG was ready (or none was recorded).")
    after_what = "after boot" if report.get("since") is None else "into the simulated run"
    for program in programs:
        first = program["first_call"]
        when = "" if first is None else f": first call {first:.2f} s {after_what}"
        if program["first_call_after_crng"] is not None:
            after = program["first_call_after_crng"]
            when += f", {-after:.2f} s before crng init done" if after <= 0 else f", {after:.2f} s after crng init done"
        elif program["simulated"] and report.get("since") is None:
            when += " (in a simulated window)"
        out.append(f"{shown(program['name'])}{when}")
        if program.get("argv"):
            out.append(f"  command    {shown(' '.join(str(arg) for arg in program['argv'])[:200])}")
        if program.get("uids") and program["uids"] != [0]:
            out.append(f"  uid        {', '.join(str(uid) for uid in program['uids'])}")
        table = []
        for call in program["calls"]:
            count = f"x{call['count']}" if call["count"] != 1 else ""
            done = DONE_SHORT.get(str(call["action"]), str(call["action"]))
            if call["waited"] and call["action"] in (
                "untouched",
                "waited",
                "timed-out-raised",
                "timed-out-best-effort",
            ):
                done += f" ({call['waited']:.2f} s)"
            mode = "report-only, " if call["mode"] == "report" else ""
            table.append((shown(call["call"]), shown(call["caller"]), count, shown(f"{done} [{mode}{call['policy']}]")))
        out.extend(rows(table, indent="  "))
        under = ", ".join(f"{policy}: {UNDER[found]}" for policy, found in program["under"].items())
        out.append(f"  under      {under}")
        out.append("")
    journal = report["sources"].get("journal") or {}
    if journal.get("rejected"):
        out.append(
            f"Rejected: {_plural(journal['rejected'], 'line')} of the journal read as the shim's events, but "
            "journald's own fields show another writer, so no verdict counts them:"
        )
        for line in journal["rejected_lines"]:
            who = ", ".join(
                f"{label} {shown(line[key])}"
                for key, label in (("unit", "unit"), ("exe", "by"), ("uid", "uid"))
                if line.get(key) is not None
            )
            when = "" if line.get("time") is None else f"{line['time']:.2f} s after boot, "
            out.append(f"  {when}{who}: {shown(line['reason'])}")
            out.append(f"    {shown(line['message'][:120])}")
        if journal["rejected"] > len(journal["rejected_lines"]):
            out.append(f"  and {journal['rejected'] - len(journal['rejected_lines'])} more")
        out.append("")
    for stall in report["stalls"]:
        out.append(
            f"{shown(stall['unit'])}: started {stall['started']:.2f} s after boot, {stall['lost']:.2f} s before crng "
            f"init done; its first line came at {stall['first_line']:.2f} s."
        )
        if stall.get("note"):
            out.append(f"  Note: {shown(stall['note'])}.")
        out.append(
            "  Its Python interpreter waited for the kernel CRNG while reading its hash secret, before the shim "
            "could run: up to that long was lost. To avoid it:"
        )
        out.extend(f"  - {shown(remedy)}" for remedy in stall["avoid"])
        out.append("")
    out.append("Verdict:")
    out.extend(f"  {shown(found['text'])}." for found in report["verdict"].values())
    return out


def shown(text: object) -> str:
    """A string from a record or the journal, safe on a terminal (:func:`urandom_shim._render.escaped`)."""
    from ._render import escaped

    return escaped(text)
