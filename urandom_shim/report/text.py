"""``urandom-shim report`` as text: the facts :func:`urandom_shim.report.gather.gather` collects, per program and per
policy. Every string that came from a record or the journal is shown escaped.
"""

from __future__ import annotations

from .._terminal import escaped, rows
from .verdict import FINE, RAISE, WAIT, WEAK, plural

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


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


def lines(report: dict[str, Any]) -> list[str]:
    """The report as text. Every string that came from a record or the journal is shown escaped (:func:`shown`)."""

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
        found = plural(source["records"], "event")
        if source.get("skipped"):
            why = "; ".join(f"{count} {reason}" for reason, count in sorted(source.get("skipped_why", {}).items()))
            found += (
                f", {plural(source['skipped'], 'record')} skipped ({shown(why)})"
                if why
                else (f", {plural(source['skipped'], 'line')} skipped")
            )
        if source.get("untimed"):
            untimed = source["untimed"]
            found += f", {untimed} {'entry' if untimed == 1 else 'entries'} {UNTIMED}"
        if source.get("rejected"):
            found += f", {plural(source['rejected'], 'line')} rejected (below)"
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
            f"Rejected: {plural(journal['rejected'], 'line')} of the journal read as the shim's events, but "
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
    """A string from a record or the journal, safe on a terminal (:func:`urandom_shim._terminal.escaped`)."""
    return escaped(text)
