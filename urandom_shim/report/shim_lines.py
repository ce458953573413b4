"""The shim's own lines in the journal, read back as events for ``urandom-shim report``: the parser built from the
catalogue's templates, and which lines to believe (journald's trusted fields, never the message's text).
"""

from __future__ import annotations

from typing import Any, Iterable, List, NamedTuple, Optional

from .. import _events, _messages, _policies
from . import journal
from .journal import Entry
from .sources import Line

TYPE_CHECKING = False
if TYPE_CHECKING:
    from .._events import Record


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
#: A number as ``format(x, "g")`` writes it: ``0.3``, ``30``, ``1e-05``, ``1.5e+06``.
_G_NUMBER = r"-?\d+(?:\.\d+)?(?:e[+-]\d+)?"
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
    # What the configured policy would have done: its row of the table, or a wait its timeout ends (would_phrase).
    wills = [re.escape(text) for text in _events.WOULD.values()]
    wills += [
        _regex(_messages.EVENT_DONE_TIMED_OUT_RAISED, {"waited": _NUMBER}),
        _regex(_messages.EVENT_DONE_TIMED_OUT_BEST_EFFORT, {"waited": _NUMBER}),
    ]
    would = "|".join(sorted(wills, key=len, reverse=True))
    # Each policy's outcome, in the words of OUTCOME_PHRASES (a timeout as a number, as `g` writes it: 1e-05 too),
    # in the order of POLICIES.
    phrases = "|".join(
        _regex(phrase, {"timeout": _G_NUMBER})
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
        (None, OLDER_REPEAT),
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
                    + _regex(phrase, {"timeout": f"(?P<timeout>{_G_NUMBER})"})
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


def parse_line(text: str) -> Record | None:
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
    event: Record = {
        "event": "repeat" if mode is None else "call",
        "call": match["call"],
        "caller": match["caller"],
        "simulated": bool(match["simulated"]),
        "boot_time": _bounded(match["boot_time"], journal.MAX_SECONDS),
    }
    said = match.groupdict().get("outcomes")
    if said is not None:
        event["under"], event["timeout"] = _outcomes(said)
    if mode is None:
        event["count"] = int(_bounded(match["count"], journal.MAX_COUNT))
        return event
    done = _first(patterns["done"], match["done"])
    if done is None:
        return None
    action, found = done
    waited = found.groupdict().get("waited")
    if mode == _policies.REPORT:
        would = next((key for key, text in _events.WOULD.items() if text == match["would"]), _policies.WAIT)
    else:
        would = WOULD_OF_ACTION[action]
    event["mode"] = mode
    event["action"] = action
    event["waited"] = 0.0 if waited is None else _bounded(waited, journal.MAX_SECONDS)
    event["policy"] = match["policy"]
    event["policy_source"] = match["source"]
    event["would"] = would
    return event


#: An older shim's event lines (before each said what every policy would do), still read.
OLDER_ENFORCED = "{where}: {done} under policy '{policy}' (from {source})."
OLDER_REPORT_ONLY = "report-only: {where}: {done}; policy '{policy}' (from {source}) would have {would}."
OLDER_REPEAT = "{where}: {count} more like it, not shown one by one."


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
#: (``StandardError=journal``, the default for a unit), journald's native protocol, and syslog (``/dev/log``: what
#: ``python app.py 2>&1 | logger`` sends). journald takes each one's sender from the kernel (``SO_PEERCRED`` of the
#: stream, ``SCM_CREDENTIALS`` of the datagram), so its unit and executable are as trustworthy by every route. A line
#: the kernel (``/dev/kmsg``), the audit system or journald itself brought is not a program's own output.
SHIM_TRANSPORTS = ("stdout", "journal", "syslog")
#: The longest line read as an event: the shim's lines are at most :data:`urandom_shim._messages.MAX_LINE`
#: characters. A believed writer's longer line is not parsed (the parser's work grows faster than a line's length),
#: and is listed as not read.
MAX_EVENT_LINE = _messages.MAX_LINE


def rejection(entry: Entry) -> str | None:
    """Why an entry whose message reads as one of the shim's events is not believed, from journald's trusted fields
    alone; None if they show a program's own output (``_TRANSPORT`` stdout, journal or syslog), written by a process
    journald saw (``_EXE`` or ``_COMM``), not in a login session's scope, a user's service manager or a user's slice
    (every process a user without root starts runs in one of those): in a system unit.

    Whatever the program is: a Python interpreter, one embedded in another (uWSGI, Apache's mod_wsgi), or one that
    passes another's output on (``tee``, ``logger``, a container's ``conmon``). Only root sets up a system unit, and a
    line can only add a finding, so believing it can fail a gate but never pass one; a user without root can write
    into no system unit's journal."""
    transport = journal.field(entry, "_TRANSPORT")
    if transport not in SHIM_TRANSPORTS:
        return _messages.REPORT_REJECTED_TRANSPORT.format(transport=transport or "an unknown transport")
    if journal.field(entry, "_EXE") is None and journal.field(entry, "_COMM") is None:
        return _messages.REPORT_REJECTED_UNSEEN_WRITER
    unit = journal.field(entry, "_SYSTEMD_UNIT") or ""
    slice_ = journal.field(entry, "_SYSTEMD_SLICE") or ""
    if (
        journal.field(entry, "_SYSTEMD_USER_UNIT")
        or unit.startswith("user@")
        or (unit.startswith("session-") and unit.endswith(".scope"))
        or slice_ == "user.slice"
        or slice_.startswith("user-")
    ):
        return _messages.REPORT_REJECTED_LOGIN_SESSION.format(
            unit=unit or journal.field(entry, "_SYSTEMD_USER_UNIT") or slice_
        )
    return None


class Read(NamedTuple):
    """What :func:`read_entry` made of one entry: an ``event`` of the shim (a record, as the events file holds it), a
    line ``rejected`` (another writer), or a line ``unread`` (the shim's, by trusted fields, that does not parse in
    full); at most one of them is set, and none for an entry that is no line of the shim's events."""

    event: Optional[Record]
    rejected: Optional[Line]
    unread: Optional[Line]


_NOTHING = Read(None, None, None)


def read_entry(entry: Entry) -> Read:
    """One entry, read as :func:`journal_events` reads each. Its writer is checked (:func:`rejection`) before its
    text is parsed, so another writer's lines cost no parsing; a believed writer's line that does not parse in full
    (longer than the shim's lines, a number out of range, cut short or damaged) is listed as not read."""
    text = journal.message(entry)
    if not text.startswith(_messages.PREFIX) or not _reads_as_event(text):
        return _NOTHING  # one of the shim's other lines (a configuration problem), or not the shim's at all
    why = rejection(entry)
    if why is not None:
        return Read(None, _line(entry, why, text), None)
    if len(text.rstrip("\r\n")) > MAX_EVENT_LINE:
        return Read(None, None, _line(entry, _messages.REPORT_UNREAD_TOO_LONG, text))
    try:
        parsed = parse_line(text)
    except OutOfRange:
        return Read(None, None, _line(entry, _messages.REPORT_UNREAD_OUT_OF_RANGE, text))
    if parsed is None:
        return Read(None, None, _line(entry, _messages.REPORT_UNREAD_LINE, text))
    return Read(_event(entry, parsed), None, None)


def believed_event(entry: Entry) -> bool:
    """Whether ``entry`` reads as one of the shim's event lines and its writer is believed (:func:`rejection`):
    what :func:`read_entry` would read as an event, or list as not read, without parsing it."""
    text = journal.message(entry)
    return text.startswith(_messages.PREFIX) and _reads_as_event(text) and rejection(entry) is None


class Lines(NamedTuple):
    """The shim's event lines among some entries (:func:`journal_events`)."""

    events: List[Record]
    rejected: List[Line]
    unread: List[Line]


def journal_events(entries: Iterable[Entry]) -> Lines:
    """(events, rejected, unread): every event line of the shim among the entries' messages, as the events file
    records it; the lines that read as one but whose entry shows another writer (:func:`rejection`); and the lines a
    trusted writer wrote that read as an event but do not parse in full (:func:`read_entry`), which no verdict can
    pass over.

    What an event says about its program comes from journald's trusted fields, never from the text: pid (``_PID``), uid
    (``_UID``), unit (``_SYSTEMD_UNIT``), command line (``_CMDLINE``, else ``_COMM``), and the time: when journald
    received the line (:func:`urandom_shim.report.journal.at`), less the wait the line reports (a line is written when
    its call is over), never before boot. The text gives the call, its caller and what was done. ``"from": "journal"``.
    """
    found = Lines([], [], [])
    for entry in entries:
        read = read_entry(entry)
        if read.event is not None:
            found.events.append(read.event)
        elif read.rejected is not None:
            found.rejected.append(read.rejected)
        elif read.unread is not None:
            found.unread.append(read.unread)
    return found


def events_from_journal(entries: Iterable[Entry]) -> list[Record]:
    """The shim's events among the entries (:func:`journal_events`), without the lines rejected or unread."""
    return journal_events(entries).events


_marker_cache: list[str] = []


def _reads_as_event(text: str) -> bool:
    """Whether a line of the shim's reads as one of its events, though it may not parse: it holds the words that
    follow the call in every event line (" called from ", from the catalogue's template), which no other line of the
    shim holds. A line cut short at :data:`urandom_shim._messages.MAX_LINE` keeps them: the call comes first."""
    if not _marker_cache:
        import string

        parsed = list(string.Formatter().parse(_messages.EVENT_WHERE))
        names = [name for _text, name, _spec, _conversion in parsed]
        _marker_cache.append(parsed[names.index("call") + 1][0])
    return _marker_cache[0] in text


def _line(entry: Entry, reason: str, text: str) -> Line:
    logged = journal.at(entry)
    return {
        "reason": reason,
        "unit": journal.field(entry, "_SYSTEMD_UNIT"),
        "exe": journal.field(entry, "_EXE") or journal.field(entry, "_COMM"),
        "uid": _int(journal.field(entry, "_UID")),
        "pid": _int(journal.field(entry, "_PID")),
        "time": None if logged != logged else logged,
        "message": text[:200],
    }


def _event(entry: Entry, parsed: Record) -> Record:
    logged = journal.at(entry)
    waited = parsed.get("waited") or 0.0
    began = None
    if logged == logged:  # not NaN
        began = round(max(0.0, logged - min(max(waited, 0.0), logged)), 3)
    command = journal.field(entry, "_CMDLINE") or journal.field(entry, "_COMM")
    parsed.pop("boot_time", None)  # the text's own time: the entry's is journald's
    kind = parsed.pop("event", "call")
    event: Record = {
        "v": _events.VERSION,
        "event": kind,
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
    return event


def _int(text: str | None) -> int | None:
    try:
        return int(text or "")
    except ValueError:
        return None
