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
    """The events in ``path``: (events, problem, lines skipped). A record of a later format version, or a line that
    is not one (a torn write can't happen, but a hand edit can), is skipped and counted."""
    try:
        with open(path, "rb") as file:
            data = file.read(MAX_EVENTS_FILE + 1)
    except FileNotFoundError:
        return [], "no such file", 0
    except OSError as exc:
        return [], f"cannot be read ({exc.strerror or exc})", 0
    if len(data) > MAX_EVENTS_FILE:
        return [], f"larger than {MAX_EVENTS_FILE // (1024 * 1024)} MiB: not an events file", 0
    records, skipped = _bootlog.parse_export(data.splitlines())  # JSON lines, as the journal's export is
    events = [record for record in records if record.get("v") == _events.VERSION and "call" in record]
    for record in events:
        record.setdefault("from", "file")
    return events, None, skipped + len(records) - len(events)


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
) -> dict[str, Any]:
    """Every fact of the report, as ``--json`` prints it."""
    sources: dict[str, Any] = {}
    events: list[dict[str, Any]] = []
    if events_path is not None:
        found, problem, skipped = read_events(events_path)
        events.extend(found)
        sources["events"] = {"path": events_path, "records": len(found), "skipped": skipped, "problem": problem}
    else:
        sources["events"] = {"path": None, "records": 0, "skipped": 0, "problem": "no events file configured"}
    entries: list[dict[str, Any]] | None = None
    if journal or journal_file is not None:
        entries, problem = _bootlog.read_journal(journal_file)
        from_journal = _bootlog.events_from_journal(entries) if entries else []
        events.extend(_unseen(from_journal, events))
        sources["journal"] = {
            "path": journal_file or "journalctl -b",
            "entries": len(entries),
            "records": len(from_journal),
            "problem": problem,
        }
    crng, crng_source = _bootlog.crng_init_done(entries if entries else None)
    if journal_file is not None and crng is None and entries:
        crng_source = "the saved journal holds no 'crng init done'"
    sources["kernel"] = {"crng_init_done": crng, "source": crng_source}
    stalls = _bootlog.stalls(entries, crng) if entries else []
    programs = group(events, crng)
    return {
        "v": VERSION,
        "sources": sources,
        "crng_init_done": crng,
        "programs": programs,
        "stalls": stalls,
        "verdict": verdict(programs),
    }


def _unseen(from_journal: list[dict[str, Any]], known: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The journal's events that the events file does not already hold (the same event reaches both sinks)."""
    seen = {_identity(event) for event in known}
    return [event for event in from_journal if _identity(event) not in seen]


def _identity(event: dict[str, Any]) -> tuple[object, ...]:
    return (event.get("event"), event.get("call"), event.get("caller"), f"{float(event.get('boot_time') or 0):.2f}")


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
                "first_call": None,
                "first_call_after_crng": None,
                "calls": {},
            },
        )
        pid = event.get("pid")
        if pid is not None and pid not in entry["pids"]:
            entry["pids"].append(pid)
        key = (event.get("call"), event.get("caller"))
        site = event.get("site") or _events.site_of(str(event.get("call")))
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
        if event.get("event") == "repeat":  # from the journal it names no policy: the first event's stands
            call["count"] += int(event.get("count") or 0)
            continue
        if call["policy"] is None:
            call.update({name: event.get(name) for name in ("policy", "policy_source", "mode", "action", "would")})
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
    from ._render import rows

    out = ["urandom-shim report: randomness asked for before the kernel CRNG was ready"]
    crng = report["crng_init_done"]
    kernel = report["sources"]["kernel"]
    if crng is not None:
        out.append(f"  crng init done  {crng:.2f} s after boot (from {kernel['source']})")
    else:
        out.append(f"  crng init done  unknown: {kernel['source']}")
    for name in ("events", "journal"):
        source = report["sources"].get(name)
        if source is None:
            continue
        where = source["path"] or "none"
        found = _plural(source["records"], "event") + (
            f", {_plural(source['skipped'], 'line')} skipped" if source.get("skipped") else ""
        )
        out.append(f"  {name:<15} {where}: {source['problem'] or found}")
    programs = report["programs"]
    out.append("")
    read = [source for source in report["sources"].values() if source.get("records") or source.get("entries")]
    if not programs and not read:
        out.append(
            "Nothing was read: no events file and no journal, so this report can't say what happened in the window. "
            "Name the events file with --events PATH, or a saved journal with --journal-file PATH."
        )
    elif not programs:
        out.append("No program asked for randomness before the kernel CRNG was ready (or none was recorded).")
    for program in programs:
        first = program["first_call"]
        when = "" if first is None else f": first call {first:.2f} s after boot"
        if program["first_call_after_crng"] is not None:
            after = program["first_call_after_crng"]
            when += f", {-after:.2f} s before crng init done" if after <= 0 else f", {after:.2f} s after crng init done"
        elif program["simulated"]:
            when += " (in a simulated window)"
        out.append(f"{program['name']}{when}")
        if program.get("argv"):
            out.append(f"  command    {' '.join(program['argv'])[:200]}")
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
            table.append((str(call["call"]), str(call["caller"]), count, f"{done} [{mode}{call['policy']}]"))
        out.extend(rows(table, indent="  "))
        under = ", ".join(f"{policy}: {UNDER[found]}" for policy, found in program["under"].items())
        out.append(f"  under      {under}")
        out.append("")
    for stall in report["stalls"]:
        out.append(
            f"{stall['unit']}: started {stall['started']:.2f} s after boot, {stall['lost']:.2f} s before crng init "
            f"done; its first line came at {stall['first_line']:.2f} s."
        )
        if stall.get("note"):
            out.append(f"  Note: {stall['note']}.")
        out.append(
            "  Its Python interpreter waited for the kernel CRNG while reading its hash secret, before the shim "
            "could run: up to that long was lost. To avoid it:"
        )
        out.extend(f"  - {remedy}" for remedy in stall["avoid"])
        out.append("")
    out.append("Verdict:")
    out.extend(f"  {found['text']}." for found in report["verdict"].values())
    return out
