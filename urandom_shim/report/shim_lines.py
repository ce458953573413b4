"""The shim's own lines in the journal, read back as events for ``urandom-shim report``: the parser built from the
catalogue's templates, and which lines to believe (journald's trusted fields, never the message's text).
"""

from __future__ import annotations

from .. import _events, _messages, _policies
from . import journal, stalls

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


# -- the shim's lines ------------------------------------------------------------------------------------------------

#: What each action says about what the policy table would have done (its ``would``), in enforce mode.
WOULD_OF_ACTION = {
    _events.UNTOUCHED: _policies.UNTOUCHED,
    _events.WAITED: _policies.WAIT,
    _events.TIMED_OUT_RAISED: _policies.WAIT,
    _events.TIMED_OUT_BEST_EFFORT: _policies.WAIT,
    _events.RAISED: _policies.RAISE,
    _events.BEST_EFFORT: _policies.BEST_EFFORT,
}

_NUMBER = r"-?\d+(?:\.\d+)?"
_patterns_cache: dict[str, Any] = {}


def _regex(template: str, fields: dict[str, str]) -> str:
    """``template`` as a regular expression: its text escaped, each ``{field}`` replaced by ``fields[field]``
    (KeyError for a field it doesn't know: a new field in a template must be taught to the parser)."""
    import re
    import string

    parts = []
    for text, name, _spec, _conversion in string.Formatter().parse(template):
        parts.append(re.escape(text))
        if name is not None:
            parts.append(fields[name])
    return "".join(parts)


def _patterns() -> dict[str, Any]:
    """The regular expressions of the event lines, built from the templates they are written with. Cached; tests
    that change a template clear :data:`_patterns_cache`."""
    if _patterns_cache:
        return _patterns_cache
    import re
    import string

    # The text after {caller}: the call and the caller are what comes before its first occurrence, split at the last
    # " called from " (a call can say "(from random.SystemRandom)", a path can hold anything).
    parsed = list(string.Formatter().parse(_messages.EVENT_WHERE))
    names = [name for _text, name, _spec, _conversion in parsed]
    anchor = parsed[names.index("caller") + 1][0]
    free = f"(?:(?!{re.escape(anchor)}).)*"
    where = _regex(
        _messages.EVENT_WHERE,
        {
            "call": f"(?P<call>{free})",
            "caller": f"(?P<caller>{free})",
            "simulated": f"(?P<simulated>(?:{re.escape(_messages.EVENT_SIMULATED)})?)",
            "boot_time": f"(?P<boot_time>{_NUMBER})",
        },
    )
    would = "|".join(re.escape(text) for text in sorted(_events.WOULD.values(), key=len, reverse=True))
    # Each policy's outcome, in the words of OUTCOME_PHRASES (a timeout as a number), in the order of POLICIES.
    phrases = "|".join(
        _regex(phrase, {"timeout": _NUMBER})
        for phrase in sorted(_messages.OUTCOME_PHRASES.values(), key=len, reverse=True)
    )
    outcomes = ", ".join(f"{p.name} (?:{phrases})" for p in _policies.POLICIES)
    fields = {
        "where": f"(?:{where})",
        "done": "(?P<done>.*?)",
        "policy": "(?P<policy>.*?)",
        "source": "(?P<source>.*)",
        "would": f"(?P<would>{would})",
        "count": r"(?P<count>\d+)",
        "under": _regex(_messages.EVENT_UNDER, {"outcomes": f"(?P<outcomes>{outcomes})"}),
    }
    templates = [
        (_policies.REPORT, _messages.EVENT_REPORT_ONLY),
        (None, _messages.EVENT_REPEAT),  # the repeat of a call, whatever its mode
        (_policies.ENFORCE, _messages.EVENT_ENFORCED),
        # An older shim's lines, which say no outcome per policy: the report infers them from the call's kind.
        (_policies.REPORT, OLDER_REPORT_ONLY),
        (_policies.ENFORCE, OLDER_ENFORCED),
    ]
    _patterns_cache.update(
        under=[
            (
                outcome,
                re.compile(
                    "(?P<policy>"
                    + "|".join(p.name for p in _policies.POLICIES)
                    + ") "
                    + _regex(phrase, {"timeout": f"(?P<timeout>{_NUMBER})"})
                ),
            )
            for outcome, phrase in _messages.OUTCOME_PHRASES.items()
        ],
        lines=[(mode, re.compile(_regex(template, fields), re.DOTALL)) for mode, template in templates],
        done=[
            (action, re.compile(_regex(_events.DONE[action], {"waited": f"(?P<waited>{_NUMBER})"}), re.DOTALL))
            for action in _events.ACTIONS
        ],
    )
    return _patterns_cache


def parse_line(text: str) -> dict[str, Any] | None:
    """The event a line of the shim's stderr describes (:func:`urandom_shim._events.describe`, with or without the
    ``urandom-shim:`` prefix), or None if it describes none. The fields the line holds: event (``call`` or
    ``repeat``), call, caller, simulated (True or False), boot_time; for a call, mode, action, waited (0.0 where the
    line says no time), policy, policy_source and would (in enforce mode, what the action says the policy table
    chose); for a repeat, count."""
    if text.startswith(_messages.PREFIX):
        text = text[len(_messages.PREFIX) :]
    text = text.rstrip("\r\n")
    patterns = _patterns()
    matched = _first(patterns["lines"], text)
    if matched is None:
        return None
    mode, match = matched
    event: dict[str, Any] = {
        "event": "repeat" if mode is None else "call",
        "call": match["call"],
        "caller": match["caller"],
        "simulated": bool(match["simulated"]),
        "boot_time": _bounded(match["boot_time"], journal.MAX_SECONDS),
    }
    if mode is None:
        event["count"] = int(_bounded(match["count"], journal.MAX_COUNT))
        return event
    done = _first(patterns["done"], match["done"])
    if done is None:
        return None
    action, found = done
    waited = found.groupdict().get("waited")
    if mode == _policies.REPORT:
        would = next(key for key, text in _events.WOULD.items() if text == match["would"])
    else:
        would = WOULD_OF_ACTION[action]
    event.update(
        mode=mode,
        action=action,
        waited=0.0 if waited is None else _bounded(waited, journal.MAX_SECONDS),
        policy=match["policy"],
        policy_source=match["source"],
        would=would,
    )
    said = match.groupdict().get("outcomes")
    if said is not None:
        event["under"], event["timeout"] = _outcomes(said)
    return event


#: An older shim's event lines (before each said what every policy would do), still read.
OLDER_ENFORCED = "{where}: {done} under policy '{policy}' (from {source})."
OLDER_REPORT_ONLY = "report-only: {where}: {done}; policy '{policy}' (from {source}) would have {would}."


def _outcomes(text: str) -> tuple[dict[str, str], float | None]:
    """(outcome per policy, the timeout a bounded wait names) of the words after "under each policy: "."""
    found: dict[str, str] = {}
    timeout = None
    for part in text.split(", "):
        matched = _first(_patterns()["under"], part)
        if matched is None:  # the line's pattern matched, so each part is one of them
            continue
        outcome, match = matched
        found[match["policy"]] = outcome
        if match.groupdict().get("timeout") is not None:
            timeout = _bounded(match["timeout"], journal.MAX_SECONDS)
    return found, timeout


class OutOfRange(ValueError):
    """A line of the shim's whose number (a time, a wait, a count) is no finite number in range."""


def _bounded(text: str, limit: int) -> float:
    """The number ``text``, at most ``limit``; raises :class:`OutOfRange` if it is larger, or not finite."""
    if len(text.split(".")[0].lstrip("-0")) > len(str(limit)):  # before float(): thousands of digits are no number
        raise OutOfRange(text)
    number = float(text)
    if not abs(number) <= limit:  # a negative time or wait is clamped to 0 where it is used
        raise OutOfRange(text)
    return number


def _first(patterns: list[tuple[Any, Any]], text: str) -> tuple[Any, Any] | None:
    """(key, match) of the first of ``patterns`` that the whole of ``text`` matches, or None."""
    for key, pattern in patterns:
        match = pattern.fullmatch(text)
        if match is not None:
            return key, match
    return None


#: The transports by which a program's own output reaches the journal: its stdout or stderr connected to journald
#: (``StandardError=journal``, the default for a unit), and journald's native protocol. A line the kernel, syslog
#: (``logger``) or the audit system brought is not a program's own stderr.
SHIM_TRANSPORTS = ("stdout", "journal")
#: The longest message read as an event: the shim's lines are at most 1,000 characters.
MAX_EVENT_LINE = 4096

#: Why a line that reads as one of the shim's events was not believed: what the journal's trusted fields (those
#: starting with ``_``, which journald sets and no writer can) say instead. Words that complete "rejected: ...".
REJECTED_TRANSPORT = "it reached the journal by {transport}, not as a program's own output"
REJECTED_NOT_PYTHON = "it was written by {exe}, not by a Python interpreter"
REJECTED_LOGIN_SESSION = "it was written in a user's login session or service manager ({unit}), not by a system unit"
REJECTED_TOO_LONG = "it is longer than any line of the shim"
REJECTED_OUT_OF_RANGE = "it says a time, wait or count that is not a finite number in range"


def rejection(entry: dict[str, Any]) -> str | None:
    """Why an entry whose message reads as one of the shim's events is not one, from journald's trusted fields; None
    if they show what the shim's line would: a Python interpreter's own output (``_TRANSPORT`` stdout or journal,
    ``_EXE``, else ``_COMM``, a python, also one replaced on disk while it ran: ``python3.11 (deleted)``) in a system
    unit (``_SYSTEMD_UNIT`` not a login session's scope nor a user's service manager: every process a user without
    root starts runs in one of those).

    A line passed on by :data:`urandom_shim.report.stalls.PASS_THROUGH` (``tee``, ``cat``...) in a system unit is
    believed too: cloud-init's output goes through ``tee`` on Debian, so the journal can't show the Python behind it.
    Only root can run a system unit, and a line can only add a finding, so believing it can fail a gate but never pass
    one."""
    transport = journal.field(entry, "_TRANSPORT")
    if transport not in SHIM_TRANSPORTS:
        return REJECTED_TRANSPORT.format(transport=transport or "an unknown transport")
    if not stalls.is_python(entry, strict=True) and not stalls.is_pass_through(entry):
        return REJECTED_NOT_PYTHON.format(
            exe=journal.field(entry, "_EXE") or journal.field(entry, "_COMM") or "an unknown program"
        )
    unit = journal.field(entry, "_SYSTEMD_UNIT") or ""
    if (
        journal.field(entry, "_SYSTEMD_USER_UNIT")
        or unit.startswith("user@")
        or (unit.startswith("session-") and unit.endswith(".scope"))
    ):
        return REJECTED_LOGIN_SESSION.format(unit=unit or journal.field(entry, "_SYSTEMD_USER_UNIT"))
    return None


def events_from_journal(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The shim's events among the entries (:func:`journal_events`), without the rejected ones."""
    return journal_events(entries)[0]


def journal_events(entries: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(events, rejected): every event line of the shim among the entries' messages, as the events file records it,
    and the lines that read as one but whose entry shows another writer (:func:`rejection`).

    What an event says about its program comes from journald's trusted fields, never from the text: pid (``_PID``), uid
    (``_UID``), unit (``_SYSTEMD_UNIT``), command line (``_CMDLINE``, else ``_COMM``), and the time: when journald
    received the line (:func:`urandom_shim.report.journal.at`), less the wait the line reports (a line is written when
    its call is over), never before boot. The text gives the call, its caller and what was done. ``"from": "journal"``.
    Each rejected line is a dict: reason (a sentence), unit, exe, uid, pid, time, and the message (cut short)."""
    events = []
    rejected = []
    for entry in entries:
        text = journal.message(entry)
        if not text.startswith(_messages.PREFIX):
            continue
        why: str | None = None
        try:
            parsed = parse_line(text) if len(text) <= MAX_EVENT_LINE else None
        except OutOfRange:
            parsed, why = None, REJECTED_OUT_OF_RANGE
        if parsed is None:
            if why is None and len(text) <= MAX_EVENT_LINE:
                continue  # one of the shim's other lines (a configuration problem), or not the shim's at all
            why = why or REJECTED_TOO_LONG
        else:
            why = rejection(entry)
        logged = journal.at(entry)
        if why is not None:
            rejected.append(
                {
                    "reason": why,
                    "unit": journal.field(entry, "_SYSTEMD_UNIT"),
                    "exe": journal.field(entry, "_EXE") or journal.field(entry, "_COMM"),
                    "uid": _int(journal.field(entry, "_UID")),
                    "pid": _int(journal.field(entry, "_PID")),
                    "time": None if logged != logged else logged,
                    "message": text[:200],
                }
            )
            continue
        assert parsed is not None
        waited = parsed.get("waited") or 0.0
        began = None
        if logged == logged:  # not NaN
            began = round(max(0.0, logged - min(max(waited, 0.0), logged)), 3)
        command = journal.field(entry, "_CMDLINE") or journal.field(entry, "_COMM")
        parsed.pop("boot_time", None)  # the text's own time: the entry's is journald's
        event: dict[str, Any] = {
            "v": _events.VERSION,
            "event": parsed.pop("event"),
            "boot_time": began,
            "pid": _int(journal.field(entry, "_PID")),
            "uid": _int(journal.field(entry, "_UID")),
            "argv": [command] if command else [],
            "program": None,
            "unit": journal.field(entry, "_SYSTEMD_UNIT"),
            "machine_id": journal.field(entry, "_MACHINE_ID"),
            "boot_id": journal.field(entry, "_BOOT_ID"),
            "hostname": journal.field(entry, "_HOSTNAME"),
            "call": parsed["call"],
            "site": _events.site_of(parsed["call"]),
        }
        event.update(parsed)
        event["from"] = "journal"
        events.append(event)
    return events, rejected


def _int(text: str | None) -> int | None:
    try:
        return int(text or "")
    except ValueError:
        return None
