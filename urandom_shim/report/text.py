"""``urandom-shim report`` as text: the facts :func:`urandom_shim.report.gather.gather` collects, per program and per
policy. Every string that came from a record or the journal is shown escaped.
"""

from __future__ import annotations

from typing import cast

from .. import _messages, _policies
from .._terminal import escaped, rows
from .fixes import fixes, fleet_fix, worst_first
from .sources import Kind, Line, Problem, Report, Source, absent, said
from .verdict import FINE, RAISE, WAIT, WEAK, plural

TYPE_CHECKING = False
if TYPE_CHECKING:
    from .shapes import CallSite, CrngSpread, Spread


# -- text ------------------------------------------------------------------------------------------------------------

#: What the report says of the journal's entries whose timestamp is no time since boot.
UNTIMED = "with a timestamp that is not a time since boot (read without a time)"
DONE_SHORT = {
    "untouched": "the interpreter's own",
    "waited": "waited",
    "raised": "raised BlockingIOError",
    "best-effort": "best-effort bytes",
    "timed-out-raised": "timed out, raised",
    "timed-out-best-effort": "timed out, best-effort bytes",
}
UNDER = {FINE: "nothing to see", WAIT: "waits", WEAK: "weak bytes", RAISE: "raises"}


def lines(report: Report) -> list[str]:
    """The report as text. Every string that came from a record or the journal is shown escaped (:func:`shown`)."""

    if report.get("fleet_mode"):
        return fleet_lines(report)
    out = ["urandom-shim report: randomness asked for before the kernel CRNG was ready"]
    if not report.get("read", True):
        out.append(f"  {NOTHING_READ}")
    crng = report["crng_init_done"]
    kernel = report["sources"]["kernel"]
    if crng is not None:
        out.append(f"  crng init done  {crng:.2f} s after boot (from {kernel['source']})")
    elif kernel.get("simulated"):
        out.append(f"  crng init done  {kernel['source']}")
    else:
        out.append(f"  crng init done  unknown: {kernel['source']}")
    events, journal = report["sources"].get("events"), report["sources"].get("journal")
    if events is not None:
        found = plural(events["records"], "event")
        if events["skipped"]:
            why = "; ".join(f"{count} {reason}" for reason, count in sorted(events["skipped_why"].items()))
            found += f", {plural(events['skipped'], 'record')} skipped ({shown(why)})"
        out.append(f"  {'events':<15} {shown(events['path'] or 'none')}: {source_words(events, found, report)}")
    if journal is not None:
        found = plural(journal["records"], "event")
        if journal["untimed"]:
            found += f", {journal['untimed']} {'entry' if journal['untimed'] == 1 else 'entries'} {UNTIMED}"
        if journal["unread"]:
            found += f", {plural(journal['unread'], 'line')} not read (below)"
        if journal["rejected"]:
            found += f", {plural(journal['rejected'], 'line')} rejected (below)"
        out.append(f"  {'journal':<15} {shown(journal['path'] or 'none')}: {source_words(journal, found, report)}")
    programs = report["programs"]
    out.append("")
    asked = [source for source in (events, journal) if source is not None]
    if report.get("empty_allowed"):
        out.append(_messages.REPORT_TEXT_EMPTY_ALLOWED)
    elif not programs and not any(source["read"] for source in asked):
        named = any(source["path"] and source["problems"] for source in asked)
        out.append(_messages.REPORT_TEXT_NOT_READ if named else _messages.REPORT_TEXT_NOTHING_GIVEN)
    elif not programs:
        out.append(_messages.REPORT_TEXT_NO_PROGRAM)
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
        argv = program["argv"]
        if argv:
            out.append(f"  command    {shown(' '.join(str(arg) for arg in argv)[:200])}")
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
        for line, call in zip(rows(table, indent="  "), program["calls"]):
            out.append(line)
            out.append(f"    would: {would(call)}")
        under = ", ".join(f"{policy}: {UNDER[found]}" for policy, found in program["under"].items())
        out.append(f"  under      {under}")
        out.extend(fixes(program))
        out.append("")
    if journal is not None:
        out.extend(journal_lines(UNREAD_LINES, journal["unread"], journal["unread_lines"]))
        out.extend(journal_lines(REJECTED_LINES, journal["rejected"], journal["rejected_lines"]))
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
    if not report.get("read", True):
        out.append(f"  none: {NOTHING_READ}")
        return out
    out.extend(f"  {shown(found['text'])}." for found in report["verdict"].values())
    return out


#: The report's first line when no source could be read: no verdict is clean then.
NOTHING_READ = _messages.REPORT_TEXT_NOTHING_READ
#: What a call comes to under each policy (the outcomes a record carries), in the rows' words.
WOULD = {
    _policies.FINE: "nothing to see",
    _policies.WAITS: "waits",
    _policies.WEAK: "weak bytes",
    _policies.RAISES: "raises",
    _policies.WAIT_THEN_RAISE: "raises after its {timeout:g} s timeout",
    _policies.WAIT_THEN_WEAK: "weak bytes after its {timeout:g} s timeout",
}
#: Said of a call whose program's policy comes from a source that outranks the machine file.
PINNED = "its policy comes from {source}, which outranks the machine file: it stays {policy} under each"
#: Said of a call whose record carries no outcome per policy (``under``).
INFERRED = _messages.REPORT_TEXT_INFERRED
#: What a source that simply held nothing is, with --allow-empty.
EMPTY_ALLOWED = _messages.REPORT_EMPTY_ALLOWED
#: The heads of the lists of journal lines that reads as the shim's events but were not read as events.
UNREAD_LINES = _messages.REPORT_TEXT_UNREAD_LINES
REJECTED_LINES = _messages.REPORT_TEXT_REJECTED_LINES


def source_words(source: Source, found: str, report: Report) -> str:
    """What one machine's report says of a source, after its path: what it held (``found``) and what of it could not
    be read, or why it was not read; with --allow-empty, that a source that simply held nothing is a machine without
    events."""
    if not source["read"]:
        problem = shown(source["problem"] or "nothing in it could be read")
        return f"{problem.rstrip('.')}; {EMPTY_ALLOWED}" if report["allow_empty"] and source["absent"] else problem
    others = [
        one["problem"] if one["path"] == source["path"] else said(one)
        for one in source["problems"]
        if one["kind"] is not Kind.UNREAD_LINE and not (report["allow_empty"] and absent(one))
    ]
    if others:
        more = f" (and {len(others) - 1} more)" if len(others) > 1 else ""
        first = shown(others[0]).rstrip(".")
        for said_so in ("not read in full: ", "not read: "):  # the problem's own words already say it
            first = first[len(said_so) :] if first.startswith(said_so) else first.replace(f": {said_so}", ": ", 1)
        found += f"; not in full: {first}{more}"
    return found


def problems_of(source: Source, allow_empty: bool) -> list[Problem]:
    """A source's problems, less what ``--allow-empty`` accepts (:data:`urandom_shim.report.sources.ABSENT`)."""
    return [found for found in source["problems"] if not (allow_empty and absent(found))]


def journal_lines(head: str, count: int, lines: list[Line]) -> list[str]:
    """A list of journal lines not read as events (rejected, or unread), each with its writer, time and text."""
    if not count:
        return []
    out = [head.format(lines=plural(count, "line"))]
    for line in lines:
        writer = (("unit", line["unit"]), ("by", line["exe"]), ("uid", line["uid"]))
        who = ", ".join(f"{label} {shown(value)}" for label, value in writer if value is not None)
        when = "" if line["time"] is None else f"{line['time']:.2f} s after boot, "
        out.append(f"  {when}{who}: {shown(line['reason'])}")
        out.append(f"    {shown(line['message'][:120])}")
    if count > len(lines):
        out.append(f"  and {count - len(lines)} more")
    out.append("")
    return out


def would(call: CallSite) -> str:
    """What ``call`` would do under each policy: "pep522 raises, pep524 waits, ...". A call whose program has a
    ``[[program]]`` rule keeps that rule's policy under every machine-wide one, and says so."""
    outcomes = call["outcomes"]
    timeout = call["timeout"] or 0.0
    said = {name: WOULD.get(found, str(found)).format(timeout=timeout) for name, found in outcomes.items()}
    if len(set(said.values())) == 1:
        words = f"{next(iter(said.values()))} under every policy"
    else:
        words = ", ".join(f"{policy} {found}" for policy, found in said.items())
    if call["rule_policy"]:
        words += f" (its [[program]] rule keeps it on {call['rule_policy']} under each)"
    elif call["pinned"]:
        words += f" ({PINNED.format(source=call['policy_source'], policy=call['policy'])})"
    if call["inferred"]:
        words += f" ({INFERRED})"
    return words


def fleet_lines(report: Report) -> list[str]:
    """The report over many machines, to fit a screen for a thousand: the fleet's figures, the programs by how
    many machines they ran on (the first :data:`PROGRAMS_SHOWN`, then "and N more"), the units that stalled, and a
    verdict per policy with counts. ``--json`` carries everything."""
    fleet = report["fleet"]
    boots = f"{plural(fleet['boots'], 'boot')}, {plural(fleet['first_boots'], 'first boot')}"
    out = [
        "urandom-shim report: randomness asked for before the kernel CRNG was ready, on "
        f"{plural(fleet['machines'], 'machine')} ({boots})"
    ]
    if not report.get("read", True):
        out.append(f"  {NOTHING_READ}")
    sources = report["sources"]
    events = sources.get("events")
    allow = bool(report.get("allow_empty"))
    if events is not None:
        empty = events.get("empty") or 0
        found = f"{plural(events['files'] + empty, 'file')}, {plural(events['records'], 'event')}"
        if events["skipped"]:
            found += f", {plural(events['skipped'], 'record')} skipped"
        if empty:
            found += f", {empty} empty, {EMPTY_ALLOWED}"
        left = problems_of(events, allow)
        if left:
            found += f", {plural(len(left), 'problem')} (below)"
        if events["read"] or empty:
            words = found
        elif events["absent"] and allow:
            words = f"{shown(events['problem'] or found).rstrip('.')}; {EMPTY_ALLOWED}"
        else:
            words = shown(events["problem"] or found)
        out.append(f"  {'events':<15} {shown(events['path'] or 'none')}: {words}")
    journals = [("journal", sources["journal"])] if "journal" in sources else []
    for label, directory in [*journals, *(("journal dir", one) for one in sources.get("journal_dirs", ()))]:
        found = f"{plural(directory['files'], 'journal file')}, {directory['entries']} entries selected"
        left = problems_of(directory, allow)
        if left:
            found += f", {plural(len(left), 'problem')} (below)"
        elif directory["problems"] and allow:  # nothing but what --allow-empty accepts
            found += f"; {EMPTY_ALLOWED}"
        out.append(f"  {label:<15} {shown(directory['path'])}: {found}")
    crng = fleet["crng_init_done"]
    out.append(f"  {'crng init done':<15} {_spread(crng)}")
    # First boots apart from later ones, where the fleet has both (each alone is the line above).
    split = ((crng["first_boots"], "first boots"), (crng["later_boots"], "later boots"))
    if all(found["boots"] for found, _label in split):
        out.extend(f"  {'':<15} {label}: {_spread(found)}" for found, label in split)
    for names, label in ((fleet["images"], "images"), (fleet["kernels"], "kernels")):
        if names:
            listed = [f"{shown(row['name'])} ({plural(row['machines'], 'machine')})" for row in names[:4]]
            more = f" and {len(names) - 4} more" if len(names) > 4 else ""
            out.append(f"  {label:<15} {', '.join(listed)}{more}")
    out.append("")
    programs = report["programs"]
    if not programs and report.get("read", True):
        out.append("No program asked for randomness before the kernel CRNG was ready, on any machine read.")
        out.append("")
    for program in programs[:PROGRAMS_SHOWN]:
        counted = f"{plural(program['machines'], 'machine')}, {plural(program['boots'], 'boot')}"
        if program["first_boots"]:
            counted += f" ({program['first_boots']} first)"
        ran_on = [_most(program["images"]), _most(program["kernels"])]
        ran_on = [words for words in ran_on if words]
        out.append(f"{shown(program['name'])}: {counted}" + (f"; {'; '.join(ran_on)}" if ran_on else ""))
        table = []
        calls = worst_first(program["calls"])
        for call in calls[:CALLS_SHOWN]:
            done = DONE_SHORT.get(str(call["action"]), str(call["action"]))
            mode = "report-only, " if call["mode"] == "report" else ""
            where = plural(call["machines"], "machine")
            table.append((shown(call["call"]), shown(call["caller"]), where, shown(f"{done} [{mode}{call['policy']}]")))
        for line, call in zip(rows(table, indent="  "), calls):
            out.append(line)
            out.append(f"    would: {would(call)}")
        if len(program["calls"]) > CALLS_SHOWN:
            out.append(f"  and {plural(len(program['calls']) - CALLS_SHOWN, 'more call site')}")
        if len(program["calls"]) > 1:  # one call's `would:` line already says it
            under = ", ".join(f"{policy}: {UNDER[found]}" for policy, found in program["under"].items())
            out.append(f"  under      {under}")
        out.extend(fleet_fix(program))
        out.append("")
    if len(programs) > PROGRAMS_SHOWN:
        out.append(f"and {plural(len(programs) - PROGRAMS_SHOWN, 'more program')} (--json lists them all)")
        out.append("")
    stalls = fleet["stalls"]
    if stalls:
        out.append("Units whose Python interpreter waited for the CRNG in its own start, before the shim could run:")
        stalled = [
            (
                shown(stall["unit"]),
                f"{plural(stall['machines'], 'machine')}, {plural(stall['boots'], 'boot')}",
                f"lost up to {stall['lost_max']:.2f} s (median {stall['lost_median']:.2f} s)",
            )
            for stall in stalls[:PROGRAMS_SHOWN]
        ]
        out.extend(rows(stalled, indent="  "))
        if len(stalls) > PROGRAMS_SHOWN:
            out.append(f"  and {len(stalls) - PROGRAMS_SHOWN} more units")
        out.append(f"  {STALLS_AVOID}")
        out.append("")
    # Each problem names its file; a line not read is listed with its lines below.
    problems = [
        one
        for source in (events, sources.get("journal"), *sources.get("journal_dirs", ()))
        if source is not None
        for one in problems_of(source, allow)
        if one["kind"] is not Kind.UNREAD_LINE
    ]
    if problems:
        others = "; every other file was" if report.get("read", True) else ""
        out.append(f"Not read ({plural(len(problems), 'problem')}{others}):")
        for one in problems[:PROGRAMS_SHOWN]:
            out.append(f"  {shown(said(one))}")
        if len(problems) > PROGRAMS_SHOWN:
            out.append(f"  and {len(problems) - PROGRAMS_SHOWN} more")
        out.append("")
    unread = report.get("unread") or {}
    if unread.get("count"):
        out.extend(journal_lines(UNREAD_LINES, unread["count"], unread["lines"][:CALLS_SHOWN]))
        files = [
            said(one)
            for source in (sources.get("journal"), *sources.get("journal_dirs", ()))
            if source is not None
            for one in source["problems"]
            if one["kind"] is Kind.UNREAD_LINE and one["path"] is not None
        ]
        if files:
            out[-1:-1] = [f"  in {shown(where)}" for where in files[:PROGRAMS_SHOWN]]
    rejected = report.get("rejected") or {}
    if rejected.get("count"):
        out.append(
            f"Rejected: {plural(rejected['count'], 'line')} of the journals read as the shim's events, but "
            "journald's own fields show another writer, so no verdict counts them (--json lists them)."
        )
        out.append("")
    out.append(f"Verdict over {plural(fleet['machines'], 'machine')}:")
    if not report.get("read", True):
        out.append(f"  none: {NOTHING_READ}")
        return out
    out.extend(f"  {shown(found['text'])}." for found in report["verdict"].values())
    return out


#: The programs, and the call sites of each, that the fleet's text shows before "and N more": a screen's worth.
PROGRAMS_SHOWN, CALLS_SHOWN = 5, 3


def _most(found: dict[str, int], shown_: int = 2) -> str:
    """The names of ``found`` (name -> machines) with the most machines, then "and N more"."""
    names = sorted(found, key=lambda name: (-found[name], name))
    more = f" and {len(names) - shown_} more" if len(names) > shown_ else ""
    return ", ".join(shown(name) for name in names[:shown_]) + more


#: How a unit of the fleet avoids the stall: each machine's own report says it for its units, with the command.
STALLS_AVOID = (
    "To avoid it: start the unit with `urandom-shim run --policy legacy -- COMMAND`, or set "
    "Environment=PYTHONHASHSEED=0 in it, or give the machines an entropy source (virtio-rng)."
)


def _spread(found: Spread) -> str:
    if not found["boots"]:
        return "unknown: no boot's journal holds it"
    left = cast("CrngSpread", found).get("without") if "without" in found else None
    without = f" ({left} without it)" if left else ""
    return (
        f"median {found['median']:.2f} s, 95th percentile {found['p95']:.2f} s, max {found['max']:.2f} s after boot, "
        f"over {plural(found['boots'], 'boot')}{without}"
    )


def shown(text: object) -> str:
    """A string from a record or the journal, safe on a terminal (:func:`urandom_shim._terminal.escaped`)."""
    return escaped(text)
