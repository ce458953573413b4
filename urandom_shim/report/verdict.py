"""What each policy would have done with a boot's recorded calls, for ``urandom-shim report``: the events grouped per
program, and a verdict per policy.

What a policy would do with each recorded call is what the record says: the engine's own decision under each
policy, with the program's settings (:func:`urandom_shim._policies.outcome`). Only a record of an older shim, which
carries none, is read by the policy table for its call's site (:func:`inferred`), and the report says so.
"""

from __future__ import annotations

import os
from typing import Dict, Final, Iterable, NamedTuple, Optional, Tuple

from .. import _events, _policies
from .._terminal import escaped
from .shapes import CallSite, Named, PolicyVerdict, Program

TYPE_CHECKING = False
if TYPE_CHECKING:
    from .._events import Record
    from .sources import Problem, Report, Source


#: The call sites whose bytes are meant for secrets; the two seeding sites only seed the ``random`` module.
STRONG_SITES = (_policies.URANDOM, _policies.SECRETS)
#: The sites a record may name: the policy table's, and report mode's explicit wait that nothing would end.
KNOWN_SITES = (*_policies.SITES, _policies.EXPLICIT_WAIT)
#: What one call comes to under a policy, worst last: nothing to see, a wait, weak bytes, an exception.
FINE, WAIT, WEAK, RAISE = "fine", "wait", "weak", "raise"
RANK = {FINE: 0, WAIT: 1, WEAK: 2, RAISE: 3}
#: The largest events file read: a boot's events are a few kilobytes; a file this big is not ours.
MAX_EVENTS_FILE = 64 * 1024 * 1024


#: What each outcome a record carries (:data:`urandom_shim._policies.OUTCOMES`) counts as in a verdict: a wait whose
#: timeout runs out counts as what follows it.
CATEGORY = {
    _policies.FINE: FINE,
    _policies.WAITS: WAIT,
    _policies.WEAK: WEAK,
    _policies.RAISES: RAISE,
    _policies.WAIT_THEN_RAISE: RAISE,
    _policies.WAIT_THEN_WEAK: WEAK,
}


def inferred(policy: _policies.Policy, site: str) -> str:
    """What a call at ``site`` comes to under ``policy`` by the policy table alone: the reading of a record of an
    older shim, which carries no outcome of its own. It can't know the program's timeout, fuse, floor or
    interpreter (the engine's decision, :func:`urandom_shim._policies.outcome`, does)."""
    if site == _policies.EXPLICIT_WAIT:
        return _policies.WAITS  # an explicit wait waits under every policy
    if site not in _policies.SITES:
        site = _policies.URANDOM
    todo = _policies.action(policy, site)
    if todo == _policies.RAISE:
        return _policies.RAISES
    if site not in STRONG_SITES:  # seeding `random`, from best-effort bytes or from time and pid: not for secrets
        return _policies.FINE
    if todo == _policies.BEST_EFFORT:
        return _policies.WEAK
    return _policies.WAITS  # pep524 waits; native is the interpreter's own os.urandom(), which blocks (Python 3.6+)


def recorded_outcomes(event: Record) -> Dict[str, str] | None:
    """The outcome under each policy that ``event`` carries (the engine's own decision), or None for a record or
    line of an older shim."""
    under: object = event.get("under")
    if not isinstance(under, dict) or any(under.get(p.name) not in _policies.OUTCOMES for p in _policies.POLICIES):
        return None
    return {policy.name: str(under[policy.name]) for policy in _policies.POLICIES}


#: How a record's policy_source names a ``[[program]]`` rule (``_config``: "LABEL [[program]] match = 'NAME'").
RULE_SOURCE = _policies.RULE_SOURCE


def rule_policy(source: object, policy: object) -> _policies.Policy | None:
    """The policy a ``[[program]]`` rule gave the program whose call says ``source`` and ``policy``, or None. Such a
    program keeps it whatever policy the machine has: the exemption a fleet configures. A record can only add a call,
    never change another's, so a record that claims an exemption exempts no call but its own."""
    if not isinstance(source, str) or RULE_SOURCE not in source:
        return None
    return _policies.BY_NAME.get(str(policy))


def call_site(event: Record) -> str:
    site = event.get("site")
    return site if site is not None and site in KNOWN_SITES else _events.site_of(str(event.get("call")))


# -- per program -----------------------------------------------------------------------------------------------------


def program_name(event: Record) -> str:
    """What a program is called in the report: its systemd unit, else the name ``[[program]]`` rules match, else its
    command line's first words."""
    if event.get("unit"):
        return str(event.get("unit"))
    if event.get("program"):
        return str(event.get("program"))
    argv = [os.path.basename(str(arg)) for arg in (event.get("argv") or ())[:2]]
    return " ".join(argv) or f"pid {event.get('pid', '?')}"


#: What a record says was done at a call site: two records that differ in any of these are two rows.
SAID: Final = ("policy", "policy_source", "mode", "action", "would")


def said(event: Record) -> Tuple[object, ...]:
    """What ``event`` says was done at its call site, and what every policy would do there: two records that differ
    in any of it are two rows (none can merge away or downgrade another's finding)."""
    recorded = recorded_outcomes(event)
    outcomes = tuple(sorted(recorded.items())) if recorded is not None else None
    return (*(event.get(name) for name in SAID), outcomes)


def _number(value: object) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def group(events: Iterable[Record], crng: float | None) -> list[Program]:
    """The events per program, each with its call sites and what every policy would make of them."""
    programs: dict[str, Program] = {}
    calls: dict[str, dict[Tuple[object, ...], CallSite]] = {}
    #: (call, caller, site, outcomes) -> the key of the first call site there: where a journal's repeat, which
    #: names no policy, goes. A repeat with the same outcomes can't be downgraded by the row it joins; one of an older
    #: shim's, which says none, joins only the journal's own line (no record can take it in and merge it away).
    sites: dict[str, dict[Tuple[object, ...], Tuple[object, ...]]] = {}
    pids: dict[str, set[int]] = {}
    for event in events:
        name = program_name(event)
        entry = programs.get(name)
        if entry is None:
            entry = programs[name] = {
                "name": name,
                "unit": event.get("unit"),
                "program": event.get("program"),
                "argv": event.get("argv"),
                "pids": [],
                "uids": [],
                "first_call": None,
                "first_call_after_crng": None,
                "calls": [],
                "simulated": True,
                "under": {},
                "longest_wait": 0.0,
                "machines": 1,
                "boots": 1,
                "first_boots": 0,
                "later_boots": 0,
                "images": {},
                "kernels": {},
            }
            calls[name], sites[name], pids[name] = {}, {}, set()
        pid = event.get("pid")
        if isinstance(pid, int) and pid not in pids[name]:
            pids[name].add(pid)
            entry["pids"].append(pid)
        uid = event.get("uid")
        if isinstance(uid, int) and uid not in entry["uids"]:
            entry["uids"].append(uid)
        # A call site is its call, its caller and its site, and what was done there: no record merges into another
        # that differs in any of them, so none can change the site (and so the verdict) or the story of another.
        site = call_site(event)
        where = (event.get("call"), event.get("caller"), site)
        key = (*where, *said(event))
        found = recorded_outcomes(event)
        journal = event.get("from") == "journal"
        seen = (*where, tuple(sorted(found.items())) if found is not None else None, journal and found is None)
        if event.get("event") == "repeat" and journal:
            # From the journal a repeat names no policy: it joins the first call site with the same call, caller,
            # site and outcomes, or it is a row of its own (its call's line was lost or cut short).
            key = sites[name].get(seen, key)
        elif event.get("event") != "repeat":
            sites[name].setdefault(seen, key)
        call = calls[name].get(key)
        if call is None:
            call = calls[name][key] = _call_site(event, site)
        if event.get("event") == "repeat":
            call["count"] += int(event.get("count") or 0)
            continue
        call["count"] += 1
        when = _number(event.get("boot_time"))
        if when is not None:
            if call["first"] is None or when < call["first"]:
                call["first"] = when
            if entry["first_call"] is None or when < entry["first_call"]:
                entry["first_call"] = when
        waited = _number(event.get("waited"))
        if waited is not None and waited > call["waited"]:
            call["waited"] = waited
    result = []
    for name, entry in programs.items():
        entry["calls"] = sorted(calls[name].values(), key=lambda c: (c["first"] is None, c["first"] or 0.0))
        entry["simulated"] = all(c["simulated"] for c in entry["calls"])
        first = entry["first_call"]
        if first is not None and crng is not None and not entry["simulated"]:
            # A simulated window has nothing to do with when the real kernel's CRNG was ready.
            entry["first_call_after_crng"] = round(first - crng, 3)
        for c in entry["calls"]:
            rule = rule_policy(c["policy_source"], c["policy"])
            c["rule_policy"] = None if rule is None else rule.name
            if c["inferred"]:  # an older shim's record: the policy table's reading, and the report says so
                c["outcomes"] = {policy.name: inferred(rule or policy, c["site"]) for policy in _policies.POLICIES}
            done = _done(c)
            if done is not None:
                # What was done is a fact: under the policy that did it (under every one, where the program's
                # policy stays whatever the machine's), nothing can say it came to less.
                for policy in _policies.POLICIES if (c["pinned"] or rule) else ():
                    c["outcomes"][policy.name] = _worse(c["outcomes"][policy.name], done)
                if c["policy"] in c["outcomes"]:
                    c["outcomes"][str(c["policy"])] = _worse(c["outcomes"][str(c["policy"])], done)
            c["under"] = {policy: CATEGORY[found] for policy, found in c["outcomes"].items()}
        entry["under"] = {
            policy.name: max((c["under"][policy.name] for c in entry["calls"]), key=RANK.__getitem__, default=FINE)
            for policy in _policies.POLICIES
        }
        entry["longest_wait"] = max((c["waited"] for c in entry["calls"]), default=0.0)
        result.append(entry)
    result.sort(key=lambda p: (p["first_call"] is None, p["first_call"] or 0.0, p["name"]))
    return result


#: What each action of an enforced call (:data:`urandom_shim._events.ACTIONS`) shows it came to, at a site for
#: secrets; at a seeding site, best-effort bytes are fine.
DONE = {
    _events.RAISED: _policies.RAISES,
    _events.TIMED_OUT_RAISED: _policies.WAIT_THEN_RAISE,
    _events.TIMED_OUT_BEST_EFFORT: _policies.WAIT_THEN_WEAK,
    _events.BEST_EFFORT: _policies.WEAK,
    _events.WAITED: _policies.WAITS,
}


def _done(call: CallSite) -> str | None:
    """What an enforced call was seen to come to, or None (report mode, the interpreter's own code)."""
    if call["mode"] != _policies.ENFORCE:
        return None
    if str(call["action"]).startswith("timed-out") and call["timeout"] is None and not call["inferred"]:
        return None  # no timeout of the program's ran out: the pytest plugin ended a wait nothing would end
    done = DONE.get(str(call["action"]))
    if done in (_policies.WEAK, _policies.WAIT_THEN_WEAK) and call["site"] not in STRONG_SITES:
        return _policies.FINE
    return done


def _worse(one: str, other: str) -> str:
    return other if RANK[CATEGORY[other]] > RANK[CATEGORY[one]] else one


def _call_site(event: Record, site: str) -> CallSite:
    """A new call site of ``event``'s, before any call is counted."""
    recorded = recorded_outcomes(event)
    return {
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
        "outcomes": recorded or {},
        "timeout": _number(event.get("timeout")),
        "inferred": recorded is None,
        "pinned": event.get("pinned") is True,
        "rule_policy": None,
        "under": {},
        "machines": 1,
        "boots": 1,
    }


def verdict(programs: list[Program], *, fleet: bool = False) -> Dict[str, PolicyVerdict]:
    """Per policy: which programs would raise, which would use weak bytes, which would wait, each with on how many
    machines and boots (first boots apart from later ones); and one sentence (with the counts when ``fleet``)."""
    result: Dict[str, PolicyVerdict] = {}
    for policy in _policies.POLICIES:
        by_outcome: dict[str, list[Named]] = {RAISE: [], WEAK: [], WAIT: []}
        for program in programs:
            found = program["under"][policy.name]
            if found in by_outcome:
                by_outcome[found].append(
                    {
                        "name": program["name"],
                        "machines": program["machines"],
                        "boots": program["boots"],
                        "first_boots": program["first_boots"],
                        "later_boots": program["later_boots"],
                    }
                )
        waiting = {entry["name"] for entry in by_outcome[WAIT]}
        longest = max((p["longest_wait"] for p in programs if p["name"] in waiting), default=0.0)
        result[policy.name] = {
            "raise": by_outcome[RAISE],
            "weak": by_outcome[WEAK],
            "wait": by_outcome[WAIT],
            "longest_measured_wait": longest,
            "text": sentence(policy.name, by_outcome, longest, fleet=fleet),
        }
    return result


def sentence(policy: str, by_outcome: dict[str, list[Named]], longest: float, *, fleet: bool = False) -> str:
    parts = []
    if by_outcome[RAISE]:
        parts.append(f"{_count(by_outcome[RAISE])} would raise BlockingIOError: {_names(by_outcome[RAISE], fleet)}")
    if by_outcome[WEAK]:
        parts.append(f"{_count(by_outcome[WEAK])} would have used weak bytes: {_names(by_outcome[WEAK], fleet)}")
    if by_outcome[WAIT]:
        measured = f" (longest measured {longest:.2f} s)" if longest > 0 else ""
        parts.append(f"{_count(by_outcome[WAIT])} would wait for the CRNG{measured}: {_names(by_outcome[WAIT], fleet)}")
    if not parts:
        return f"under {policy}, no program would raise, wait or use weak bytes"
    return f"under {policy}, " + "; ".join(parts)


def _count(names: list[Named]) -> str:
    return plural(len(names), "program")


def plural(count: int, noun: str) -> str:
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def _names(entries: list[Named], fleet: bool, shown: int = 5) -> str:
    more = f" and {len(entries) - shown} more" if len(entries) > shown else ""
    if not fleet:
        return ", ".join(str(entry["name"]) for entry in entries[:shown]) + more
    named = [f"{entry['name']} ({plural(entry['machines'], 'machine')})" for entry in entries[:shown]]
    return ", ".join(named) + more


class Unread(NamedTuple):
    """Why ``--fail-for`` can't pass on a report although no program fails (:func:`unread`): the source in words
    (None when nothing at all was read), its problem in words, whether there simply was nothing there (which
    ``--allow-empty`` accepts), whether some of it was read (``partly``), and whether the source's words are plural."""

    source: Optional[str]
    problem: Optional[str]
    absent: bool
    partly: bool = False
    plural: bool = False


def unread(report: Report, *, allow_empty: bool = False) -> Unread | None:
    """Why ``--fail-for`` can't pass on this report although no program fails, or None when it can. A source asked
    for fails it when it was not read, or not in full: any problem but those that mean there was nothing there
    (:data:`urandom_shim.report.sources.ABSENT`, which ``allow_empty`` accepts) is something asked for and not read,
    whose findings are unknown. So does reading nothing at all. The kind of each problem decides, never its words."""
    from .sources import absent

    sources = report["sources"]
    events, journal = sources.get("events"), sources.get("journal")
    asked: list[tuple[str, bool, Source]] = []
    if events is not None and events["path"] is not None:
        if len(events["paths"]) != 1:
            asked.append((f"the events files {escaped(events['path'])}", True, events))
        elif os.path.isdir(events["paths"][0]):
            asked.append((f"the events directory {escaped(events['path'])}", False, events))
        else:
            asked.append((f"the events file {escaped(events['path'])}", False, events))
    if journal is not None:
        if journal["path"] == "journalctl -b":
            asked.append(("this boot's journal (journalctl -b)", False, journal))
        else:
            asked.append((f"the saved journal {escaped(journal['path'])}", False, journal))
    for directory in sources.get("journal_dirs", ()):
        asked.append((f"the journal directory {escaped(directory['path'])}", False, directory))
    for name, several, source in asked:
        problems = [found for found in source["problems"] if not (allow_empty and absent(found))]
        if not source["read"] and not problems:
            if allow_empty and source["absent"]:
                continue
            words = escaped(source["problem"] or "nothing in it could be read")
            return Unread(name, _bare(words, source), source["absent"], plural=several)
        if not source["read"]:
            one = len(source["problems"]) == 1 and source["problem"]
            whole = source["problem"] if one and source["problem"] else _said(problems[0], source)
            empty = all(absent(found) for found in problems)
            return Unread(name, _bare(escaped(whole), source), empty, plural=several)
        if problems:
            # A file that could not be read is a machine whose findings are unknown: the gate can't pass for it,
            # whatever the others say (the machines that were read still fail it, with exit 1).
            more = f", and {len(problems) - 1} more" if len(problems) > 1 else ""
            words = _bare(escaped(_said(problems[0], source)), source) + more
            return Unread(name, words, False, partly=True, plural=several)
    if not any(source["read"] for _name, _several, source in asked) and not allow_empty:
        return Unread(None, None, True)
    return None


def _said(found: Problem, source: Source) -> str:
    """The problem as one line, without the path when it is the source's own (the source's words name it)."""
    from .sources import said

    return found["problem"] if found["path"] == source["path"] else said(found)


def _bare(words: str, source: Source) -> str:
    """``words`` without a leading path of the source's own, and without a final full stop: they go in brackets."""
    path = escaped(source["path"] or "")
    if path and words.startswith(f"{path}: "):
        words = words[len(path) + 2 :]
    for said_so in ("not read in full: ", "not read: "):  # the sentence around it says so already
        words = words[len(said_so) :] if words.startswith(said_so) else words
    return words.rstrip(".")


def fails(report: Report, policy: str) -> bool:
    """``--fail-for``: whether some program would raise or use weak bytes under ``policy``."""
    found = report["verdict"][policy]
    return bool(found["raise"] or found["weak"])
