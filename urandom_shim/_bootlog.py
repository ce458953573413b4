"""What the journal and the kernel log say about a boot, for ``urandom-shim report``: the shim's event lines that units
wrote to the journal, when the kernel logged ``random: crng init done``, and the units whose Python interpreter
stalled in its own start-up, before the shim existed.

The journal is ``journalctl -b -o json`` (or a saved ``journalctl -o json`` output): one JSON object per entry, each
field a string, or an array of byte values where the text is not UTF-8. Two fields give the time since boot: the
kernel's own timestamp of a kernel message (``_SOURCE_MONOTONIC_TIMESTAMP``: journald imports the messages logged
before it ran later) and the time journald received an entry (``__MONOTONIC_TIMESTAMP``), both in microseconds.

Only the command line imports this module, never an interpreter's start.
"""

from __future__ import annotations

import os
import sys

from . import _events, _messages, _policies

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Iterable, Iterator

# -- what this module says to the user -------------------------------------------------------------------------------
# Text of `urandom-shim report`, kept here as _render's and _report's is kept with them (tests/test_docs.py counts it
# as report text, not as messages of the catalogue).

#: read_journal's problems: one sentence each.
JOURNALCTL_MISSING = "journalctl is not installed here, so the systemd journal can't be read."
JOURNALCTL_NOT_STARTED = "journalctl could not be started ({error}), so the systemd journal can't be read."
JOURNAL_PERMISSION_DENIED = (
    "this user can't read the system journal: run as root, or as a member of the group systemd-journal or adm."
)
JOURNAL_NO_BOOT = "the journal holds nothing of this boot ({detail})."
JOURNAL_NOTHING_LOGGED = "journalctl found no entries"
JOURNAL_TIMED_OUT = "journalctl did not finish within {timeout:g} s, so the journal was not read."
JOURNAL_FAILED = "journalctl failed (exit status {status}): {detail}"
JOURNAL_FILE_UNREADABLE = "{path}: can't be read ({error})."
JOURNAL_FILE_MISSING = "{path}: can't be read (No such file or directory)."
JOURNAL_FILE_EMPTY = "{path}: holds no journal entries."
JOURNAL_FILE_NOT_JSON = "{path}: is not `journalctl -o json` output: none of its {lines} lines is a JSON object."

#: crng_init_done's reasons for not knowing: words that complete "unknown, because ...".
CRNG_NOT_LINUX = "this is not Linux"
CRNG_KMSG_RESTRICTED = "the kernel log is not readable here (dmesg_restrict): run as root"
CRNG_KMSG_MISSING = "the kernel log ({path}) does not exist here"
CRNG_KMSG_FAILED = "the kernel log could not be read ({error})"
CRNG_KMSG_WRAPPED = "the kernel log no longer holds it (its ring buffer has wrapped)"
CRNG_KMSG_WITHOUT = "the kernel has not logged it: the CRNG is not ready yet, or this kernel does not say so"
CRNG_OTHER_BOOT = "the journal does not hold it, and the kernel log here is of another boot than the journal's"

#: How a unit whose interpreter stalled could start at once: three sentences.
STALL_AVOID_RUN = (
    "Start it with `urandom-shim run --policy legacy -- {command}`: while the CRNG is not ready, its interpreter then "
    "gets a PYTHONHASHSEED from non-blocking kernel bytes and starts at once (run never does that under a floor)."
)
STALL_AVOID_HASHSEED = (
    "Or set Environment=PYTHONHASHSEED=0 in {unit}: hash randomisation is then off for that program, acceptable for "
    "a boot-time tool that hashes no attacker-controlled keys."
)
STALL_THROUGH_PIPE = (
    "its output reaches the journal through {exe}, so the journal does not name its interpreter; if it runs Python, "
    "this is what that interpreter lost"
)
STALL_AVOID_ENTROPY = (
    "Or give the machine an entropy source (virtio-rng, a hardware RNG, or the seed systemd-random-seed saves for "
    "the next boot), so that the CRNG is ready before {unit} starts."
)

# -- the journal -------------------------------------------------------------------------------------------------------

#: The command that prints this boot's journal.
JOURNALCTL = ("journalctl", "-b", "-o", "json", "--no-pager")
#: What journalctl says on stderr when the user may read only their own journal, or none.
_PERMISSION_SIGNS = ("insufficient permissions", "not seeing messages from other users", "permission denied")
#: What it says when there is no journal of this boot.
_NO_BOOT_SIGNS = ("no journal files were found", "no such boot", "is not available", "no persistent journal")


def read_journal(path: str | None = None, *, timeout: float = 30.0) -> tuple[list[dict[str, Any]], str | None]:
    """Entries of this boot's journal (``journalctl -b -o json --no-pager``), or of ``path`` (a saved ``journalctl
    -o json`` output, one JSON object per line; lines that are not one are skipped and counted, see
    :func:`read_export`; a file that holds several boots gives the entries of the last one).

    Returns (entries, problem): problem is one short sentence when the journal can't be read (journalctl not
    installed, no journal of this boot, permission denied, timed out, a file that can't be read or holds no entry),
    else None. A user who may read only their own journal gets those entries, and the permission problem. Never
    raises for any of these.
    """
    if path is not None:
        try:
            entries, skipped = read_export(path)
        except FileNotFoundError:
            return [], JOURNAL_FILE_MISSING.format(path=path)
        except (NotRegular, TooLarge) as exc:
            return [], JOURNAL_FILE_UNREADABLE.format(path=path, error=exc)
        except OSError as exc:
            return [], JOURNAL_FILE_UNREADABLE.format(path=path, error=exc.strerror or type(exc).__name__)
        if not entries:
            if skipped:
                return [], JOURNAL_FILE_NOT_JSON.format(path=path, lines=skipped)
            return [], JOURNAL_FILE_EMPTY.format(path=path)
        return last_boot(entries), None

    import subprocess

    try:
        done = subprocess.run(JOURNALCTL, stdin=subprocess.DEVNULL, capture_output=True, timeout=timeout)
    except FileNotFoundError:
        return [], JOURNALCTL_MISSING
    except subprocess.TimeoutExpired:
        return [], JOURNAL_TIMED_OUT.format(timeout=timeout)
    except OSError as exc:
        return [], JOURNALCTL_NOT_STARTED.format(error=exc.strerror or type(exc).__name__)
    entries, _skipped = parse_export(done.stdout.splitlines())
    said = " ".join(done.stderr.decode("utf-8", "replace").split())
    detail = _messages.line(said[:200])[len(_messages.PREFIX) :] if said else JOURNAL_NOTHING_LOGGED
    if any(sign in said.lower() for sign in _PERMISSION_SIGNS):
        return entries, JOURNAL_PERMISSION_DENIED
    if entries:
        return entries, None
    if done.returncode == 0 or any(sign in said.lower() for sign in _NO_BOOT_SIGNS):
        return [], JOURNAL_NO_BOOT.format(detail=detail)
    return [], JOURNAL_FAILED.format(status=done.returncode, detail=detail)


#: The largest saved journal read: a boot's `journalctl -b -o json` is a few megabytes, a busy one tens.
MAX_JOURNAL_FILE = 256 * 1024 * 1024


class NotRegular(OSError):
    """A file to read is not a regular file (a FIFO, a device, a directory, a socket): refused before any read."""


class TooLarge(OSError):
    """A file to read is larger than the report reads."""


def read_regular(path: str, limit: int) -> bytes:
    """The bytes of the regular file ``path``, at most ``limit``. It is opened without blocking (a FIFO with no
    writer would hang an open, and one with a writer a read) and checked with ``fstat`` before anything is read:
    :class:`NotRegular` for anything but a regular file, :class:`TooLarge` above ``limit``; any other OSError as
    ``open`` raises it."""
    import stat

    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOCTTY", 0)
    fd = os.open(path, flags)
    try:
        found = os.fstat(fd)
        if not stat.S_ISREG(found.st_mode):
            raise NotRegular(f"not a regular file ({_kind(found.st_mode)})")
        if found.st_size > limit:
            raise TooLarge(f"larger than {limit // (1024 * 1024)} MiB")
        chunks = []
        size = 0
        while size <= limit:
            chunk = os.read(fd, min(1 << 20, limit + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        if size > limit:  # it grew while it was read
            raise TooLarge(f"larger than {limit // (1024 * 1024)} MiB")
        return b"".join(chunks)
    finally:
        os.close(fd)


def _kind(mode: int) -> str:
    import stat

    for test, name in (
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
    ):
        if test(mode):
            return name
    return "not a file"


#: The problems of read_journal that mean there was nothing to read, rather than something that could not be read.
JOURNAL_ABSENT = (JOURNALCTL_MISSING, JOURNAL_NO_BOOT, JOURNAL_FILE_EMPTY, JOURNAL_FILE_MISSING)


def absent(problem: str | None) -> bool:
    """Whether ``problem`` (of :func:`read_journal`) says there was no journal to read: journalctl is not installed,
    the journal holds nothing of this boot, a saved journal does not exist or is empty."""
    import re
    import string

    if problem is None:
        return False
    for template in JOURNAL_ABSENT:
        pattern = ".*".join(re.escape(text) for text, *_rest in string.Formatter().parse(template))
        if re.fullmatch(pattern, problem, re.DOTALL):
            return True
    return False


def read_export(path: str) -> tuple[list[dict[str, Any]], int]:
    """The entries of a saved ``journalctl -o json`` output, and how many of its lines were not one (a line cut
    short, say). Raises OSError if the file can't be read, :class:`NotRegular` if it is not a regular file and
    :class:`TooLarge` if it is larger than :data:`MAX_JOURNAL_FILE`."""
    return parse_export(read_regular(path, MAX_JOURNAL_FILE).splitlines())


def parse_export(lines: Iterable[bytes]) -> tuple[list[dict[str, Any]], int]:
    """(entries, lines skipped) of ``journalctl -o json`` output, given as lines of bytes. Blank lines don't count."""
    import json

    entries: list[dict[str, Any]] = []
    skipped = 0
    for line in lines:
        if not line.strip():
            continue
        try:
            entry = json.loads(line)
        except ValueError:  # not JSON, or not UTF-8
            entry = None
        if isinstance(entry, dict):
            entries.append(entry)
        else:
            skipped += 1
    return entries, skipped


def last_boot(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The entries of the last boot in ``entries`` (``_BOOT_ID``), and those that name no boot: the times since boot
    of two boots can't be compared."""
    boots = [entry["_BOOT_ID"] for entry in entries if isinstance(entry.get("_BOOT_ID"), str)]
    if len(set(boots)) <= 1:
        return entries
    return [entry for entry in entries if entry.get("_BOOT_ID", boots[-1]) == boots[-1]]


def field(entry: dict[str, Any], name: str) -> str | None:
    """A field's text. journald gives text that is not UTF-8 (or holds control characters) as a list of byte
    values, and a field that an entry holds more than once as a list of values: the first one counts. None when the
    entry has no such field, or journalctl left it out (null: larger than it prints without ``--all``)."""
    value = entry.get(name)
    if isinstance(value, list) and value and not all(isinstance(item, int) for item in value):
        value = value[0]
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        try:
            return bytes(value).decode("utf-8", "replace")
        except (TypeError, ValueError):  # not byte values
            return None
    return None


def message(entry: dict[str, Any]) -> str:
    """The entry's MESSAGE, "" if it has none."""
    return field(entry, "MESSAGE") or ""


def at(entry: dict[str, Any]) -> float:
    """When the entry was logged, in seconds since boot: the kernel's own timestamp of a kernel message
    (``_SOURCE_MONOTONIC_TIMESTAMP``) if it has one, else when journald received it (``__MONOTONIC_TIMESTAMP``).
    NaN if it has neither."""
    for name in ("_SOURCE_MONOTONIC_TIMESTAMP", "__MONOTONIC_TIMESTAMP"):
        value = field(entry, name)
        if value is not None:
            # At most 10**9 s (:data:`MAX_SECONDS`) in microseconds: a longer one is not a time since boot (and one
            # of thousands of digits is no number int() or float() reads).
            if len(value) > 16 or not value.isdigit() or not value.isascii() or int(value) > MAX_SECONDS * 10**6:
                continue
            return int(value) / 1e6
    return float("nan")


#: The largest time since boot, and the longest wait, that a record or a line may say: about 31 years.
MAX_SECONDS = 10**9
#: The largest repeat count a record or a line may say.
MAX_COUNT = 10**12


def bad_time(entry: dict[str, Any]) -> bool:
    """Whether the entry has a timestamp that is no time since boot (not digits, or out of range): such an entry is
    skipped and counted."""
    for name in ("_SOURCE_MONOTONIC_TIMESTAMP", "__MONOTONIC_TIMESTAMP"):
        value = field(entry, name)
        if value is not None and (
            len(value) > 16 or not value.isdigit() or not value.isascii() or int(value) > MAX_SECONDS * 10**6
        ):
            return True
    return False


# -- when the CRNG was ready -----------------------------------------------------------------------------------------

#: The kernel's log, one record per read: ``prio,seq,usec,flags;text``. A name to read, so that tests can point it at
#: a regular file of such records.
KMSG = "/dev/kmsg"
#: This boot's id: the journal's ``_BOOT_ID`` with dashes.
BOOT_ID = "/proc/sys/kernel/random/boot_id"
#: What the kernel says when its CRNG is ready: "random: crng init done" since 4.8, and its nonblocking pool's
#: readiness before.
CRNG_MARKERS = ("crng init done", "nonblocking pool is initialized")
#: Where a time came from.
FROM_JOURNAL = "the journal"
FROM_KMSG = "/dev/kmsg"


def crng_init_done(entries: list[dict[str, Any]] | None) -> tuple[float | None, str]:
    """When the kernel logged ``random: crng init done`` (seconds since boot), and where that came from:
    :data:`FROM_JOURNAL` (a kernel message among ``entries``), else :data:`FROM_KMSG` (this boot's kernel log).
    (None, why not in words) when neither holds it. The kernel log is not read when ``entries`` are of another boot.
    """
    found = [
        at(entry)
        for entry in entries or ()
        if field(entry, "_TRANSPORT") in (None, "kernel") and any(mark in message(entry) for mark in CRNG_MARKERS)
    ]
    found = [time for time in found if time == time]  # a time, not NaN
    if found:
        return min(found), FROM_JOURNAL
    if not sys.platform.startswith("linux"):
        return None, CRNG_NOT_LINUX
    if entries and _other_boot(entries):
        return None, CRNG_OTHER_BOOT
    return _from_kmsg()


def _other_boot(entries: list[dict[str, Any]]) -> bool:
    """Whether the entries are of a boot other than this one (False when either boot is unknown)."""
    try:
        with open(BOOT_ID, "rb") as file:
            here = file.read(64).decode("ascii", "replace").strip().replace("-", "")
    except OSError:
        return False
    theirs = {field(entry, "_BOOT_ID") for entry in entries} - {None}
    return bool(here and theirs) and here not in theirs


def _from_kmsg() -> tuple[float | None, str]:
    wrapped = False
    try:
        for seconds, text in kmsg_records():
            if seconds is None:  # the log has lost records
                wrapped = True
                continue
            if any(mark in text for mark in CRNG_MARKERS):
                return seconds, FROM_KMSG
    except PermissionError:
        return None, CRNG_KMSG_RESTRICTED
    except FileNotFoundError:
        return None, CRNG_KMSG_MISSING.format(path=KMSG)
    except OSError as exc:
        return None, CRNG_KMSG_FAILED.format(error=exc.strerror or type(exc).__name__)
    return None, CRNG_KMSG_WRAPPED if wrapped else CRNG_KMSG_WITHOUT


def kmsg_records() -> Iterator[tuple[float | None, str]]:
    """The kernel's own messages in :data:`KMSG`, as (seconds since boot, text), oldest first, with (None, "")
    where records were lost: the ring buffer wrapped before the log was opened (its first record is not the boot's
    first, seq 0), or while it was read (a read fails with EPIPE when the record it was to return was overwritten;
    the next one goes on from the oldest left). Messages that user space wrote into the log are left out."""
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(KMSG, flags)
    try:
        pending = b""
        first = True
        lost = False
        overwritten = 0
        while True:
            try:
                chunk = os.read(fd, 16384)  # at least one record (the kernel's are under 8 KiB), or EINVAL
            except BlockingIOError:  # the device has no newer record
                break
            except BrokenPipeError:
                overwritten += 1
                if overwritten > 1000:  # a log written faster than it can be read
                    break
                lost = True
                continue
            if not chunk:  # a regular file's end
                break
            pending += chunk
            *lines, pending = pending.split(b"\n")
            for line in lines:
                record = _kmsg_record(line)
                if record is None:
                    continue
                prio, seq, seconds, text = record
                if lost or (first and seq > 0):
                    yield None, ""
                first = lost = False
                if prio >> 3 == 0:  # facility 0: the kernel's own (user space writes LOG_USER)
                    yield seconds, text
    finally:
        os.close(fd)


def _kmsg_record(line: bytes) -> tuple[int, int, float, str] | None:
    """(prio, seq, seconds, text) of one ``prio,seq,usec,flags;text`` line; None for a continuation line (one
    that starts with a space: `` KEY=value``) or anything else."""
    header, sep, text = line.partition(b";")
    if not sep or line.startswith(b" "):
        return None
    parts = header.split(b",")
    try:
        return int(parts[0]), int(parts[1]), int(parts[2]) / 1e6, text.decode("utf-8", "replace")
    except (IndexError, ValueError):
        return None


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
    fields = {
        "where": f"(?:{where})",
        "done": "(?P<done>.*?)",
        "policy": "(?P<policy>.*?)",
        "source": "(?P<source>.*)",
        "would": f"(?P<would>{would})",
        "count": r"(?P<count>\d+)",
    }
    templates = [
        (_policies.REPORT, _messages.EVENT_REPORT_ONLY),
        (None, _messages.EVENT_REPEAT),  # the repeat of a call, whatever its mode
        (_policies.ENFORCE, _messages.EVENT_ENFORCED),
    ]
    _patterns_cache.update(
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
        "boot_time": _bounded(match["boot_time"], MAX_SECONDS),
    }
    if mode is None:
        event["count"] = int(_bounded(match["count"], MAX_COUNT))
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
        waited=0.0 if waited is None else _bounded(waited, MAX_SECONDS),
        policy=match["policy"],
        policy_source=match["source"],
        would=would,
    )
    return event


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

    A line passed on by :data:`PASS_THROUGH` (``tee``, ``cat``...) in a system unit is believed too: cloud-init's
    output goes through ``tee`` on Debian, so the journal can't show the Python behind it. Only root can run a
    system unit, and a line can only add a finding, so believing it can fail a gate but never pass one."""
    transport = field(entry, "_TRANSPORT")
    if transport not in SHIM_TRANSPORTS:
        return REJECTED_TRANSPORT.format(transport=transport or "an unknown transport")
    if not is_python(entry, strict=True) and not is_pass_through(entry):
        return REJECTED_NOT_PYTHON.format(exe=field(entry, "_EXE") or field(entry, "_COMM") or "an unknown program")
    unit = field(entry, "_SYSTEMD_UNIT") or ""
    if (
        field(entry, "_SYSTEMD_USER_UNIT")
        or unit.startswith("user@")
        or (unit.startswith("session-") and unit.endswith(".scope"))
    ):
        return REJECTED_LOGIN_SESSION.format(unit=unit or field(entry, "_SYSTEMD_USER_UNIT"))
    return None


def events_from_journal(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The shim's events among the entries (:func:`journal_events`), without the rejected ones."""
    return journal_events(entries)[0]


def journal_events(entries: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(events, rejected): every event line of the shim among the entries' messages, as the events file records it,
    and the lines that read as one but whose entry shows another writer (:func:`rejection`).

    What an event says about its program comes from journald's trusted fields, never from the text: pid
    (``_PID``), uid (``_UID``), unit (``_SYSTEMD_UNIT``), command line (``_CMDLINE``, else ``_COMM``), and the time:
    when journald received the line (:func:`at`), less the wait the line reports (a line is written when its call
    is over), never before boot. The text gives the call, its caller and what was done. ``"from": "journal"``.
    Each rejected line is a dict: reason (a sentence), unit, exe, uid, pid, time, and the message (cut short)."""
    events = []
    rejected = []
    for entry in entries:
        text = message(entry)
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
        logged = at(entry)
        if why is not None:
            rejected.append(
                {
                    "reason": why,
                    "unit": field(entry, "_SYSTEMD_UNIT"),
                    "exe": field(entry, "_EXE") or field(entry, "_COMM"),
                    "uid": _int(field(entry, "_UID")),
                    "pid": _int(field(entry, "_PID")),
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
        command = field(entry, "_CMDLINE") or field(entry, "_COMM")
        parsed.pop("boot_time", None)  # the text's own time: the entry's is journald's
        event: dict[str, Any] = {
            "v": _events.VERSION,
            "event": parsed.pop("event"),
            "boot_time": began,
            "pid": _int(field(entry, "_PID")),
            "uid": _int(field(entry, "_UID")),
            "argv": [command] if command else [],
            "program": None,
            "unit": field(entry, "_SYSTEMD_UNIT"),
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


# -- the stall the shim can't see --------------------------------------------------------------------------------------

#: The kernel release from which an interpreter's start waits for the CRNG: reading /dev/urandom for its hash secret
#: runs the jitter generator while the CRNG is not ready. Before, it returns at once.
STALLING_KERNEL = (5, 18)


def stalls(entries: list[dict[str, Any]], crng_done: float | None) -> list[dict[str, Any]]:
    """The units whose Python interpreter spent its start waiting for the CRNG: started before ``crng init done``
    (at ``crng_done``), and whose Python wrote its first line after it. Such an interpreter reads its hash secret
    before any ``.pth`` runs, so before the shim exists, and on Linux 5.18+ that read waits for the CRNG.

    A unit's start is systemd's "Starting X..." (an entry with ``UNIT=X``, or, logged through the kernel's buffer
    before journald ran, a message of systemd's that names X); its Python is an entry of its own processes
    (``_SYSTEMD_UNIT=X``) whose ``_EXE`` or ``_COMM`` is a python. A unit whose first Python line came before
    ``crng_done`` did not stall; one that wrote nothing can't be told. Nothing is a stall on a kernel the journal
    shows to be older than 5.18, nor with ``crng_done`` None. One dict per stall, by start:
    unit, started, first_line, crng_init_done, lost (the seconds from its start to the CRNG's, rounded to 0.01),
    exe, and avoid: three sentences on how it could start at once.
    """
    if crng_done is None:
        return []
    release = kernel_release(entries)
    if release is not None and release < STALLING_KERNEL:
        return []
    starts: dict[str, list[float]] = {}
    own_lines: dict[str, list[tuple[float, dict[str, Any]]]] = {}
    for entry in entries:
        time = at(entry)
        if time != time:  # NaN: no time
            continue
        unit = started_unit(entry)
        if unit is not None:
            starts.setdefault(unit, []).append(time)
        own = field(entry, "_SYSTEMD_UNIT")
        if own is not None and field(entry, "_PID") != "1":
            own_lines.setdefault(own, []).append((time, entry))
    found = []
    for unit, times in starts.items():
        before = [time for time in times if time < crng_done]
        if not before or unit not in own_lines:
            continue
        started = max(before)  # its last start before the CRNG's; a later one is another run
        until = min((time for time in times if time > started), default=float("inf"))
        lines = sorted(
            ((time, entry) for time, entry in own_lines[unit] if started <= time < until), key=lambda line: line[0]
        )
        if not lines or lines[0][0] < crng_done:
            continue  # it wrote nothing, or it ran in the window: then the shim saw what it did
        pythons = [(time, entry) for time, entry in lines if is_python(entry)]
        if pythons:
            first_line, entry = pythons[0]
            python: bool | None = True
        elif all(is_pass_through(entry) for _time, entry in lines):
            # cloud-init on Debian: its output goes through `tee`, which is all the journal sees of it.
            (first_line, entry), python = lines[0], None
        else:
            continue  # not Python: its start does not read a hash secret
        command = field(entry, "_CMDLINE") if python else None
        found.append(
            {
                "unit": unit,
                "started": started,
                "first_line": first_line,
                "crng_init_done": crng_done,
                "lost": round(crng_done - started, 2),
                "exe": field(entry, "_EXE") or field(entry, "_COMM"),
                "python": python,
                "note": None if python else STALL_THROUGH_PIPE.format(exe=field(entry, "_COMM") or "a pipe"),
                "avoid": [
                    STALL_AVOID_RUN.format(
                        command="..." if not command else command if len(command) <= 120 else command[:119] + "…"
                    ),
                    STALL_AVOID_HASHSEED.format(unit=unit),
                    STALL_AVOID_ENTROPY.format(unit=unit),
                ],
            }
        )
    return sorted(found, key=lambda stall: stall["started"])


#: Programs that pass another program's output on to the journal: a unit whose lines all come from one of these
#: may run Python behind it (cloud-init's output goes through `tee -a /var/log/cloud-init-output.log`).
PASS_THROUGH = ("tee", "logger", "systemd-cat", "cat")


#: What the kernel adds to a process's executable (``_EXE``) when the file was replaced or removed while it ran.
DELETED = " (deleted)"


def is_pass_through(entry: dict[str, Any]) -> bool:
    """Whether one of :data:`PASS_THROUGH` wrote the entry (``_EXE``, else ``_COMM``)."""
    exe = field(entry, "_EXE")
    if exe is not None and exe.endswith(DELETED):
        exe = exe[: -len(DELETED)]
    name = os.path.basename(exe) if exe else field(entry, "_COMM")
    return name in PASS_THROUGH


def started_unit(entry: dict[str, Any]) -> str | None:
    """The unit whose job systemd says it is starting in this entry ("Starting X..."), or None."""
    text = message(entry)
    if not text.startswith("Starting "):
        return None
    unit = field(entry, "UNIT")
    if unit is not None:
        return unit
    if field(entry, "SYSLOG_IDENTIFIER") != "systemd" and field(entry, "_COMM") != "systemd":
        return None
    # Logged through the kernel's buffer before journald ran: "Starting name.service - Description..." (systemd
    # 249 and later; earlier ones name only the description).
    name = text[len("Starting ") :].split(" ", 1)[0]
    for ellipsis in ("...", "…"):
        if name.endswith(ellipsis):
            name = name[: -len(ellipsis)]
    return name if name.endswith(_events.UNIT_SUFFIXES) else None


def is_python(entry: dict[str, Any], *, strict: bool = False) -> bool:
    """Whether a Python interpreter wrote the entry: its executable is python, python3, python3.11, python3.13t...
    ``strict``: the executable (``_EXE``, what the kernel says the process runs) decides when the entry has one; the
    command name (``_COMM``) only when it hasn't, as a process can rename itself."""
    import re

    exe = field(entry, "_EXE")
    if exe is not None and exe.endswith(DELETED):  # the interpreter was upgraded on disk while it ran
        exe = exe[: -len(DELETED)]
    if exe is not None and re.fullmatch(r"python[0-9.]*[a-z]*(?:-dbg)?", os.path.basename(exe)):
        return True
    if strict and exe is not None:
        return False
    return (field(entry, "_COMM") or "").startswith("python")


def kernel_release(entries: list[dict[str, Any]]) -> tuple[int, int] | None:
    """(major, minor) of the kernel that booted, from its first message (``Linux version 6.12.12+bpo-...``), or
    None if the journal no longer holds it."""
    import re

    for entry in entries:
        if field(entry, "_TRANSPORT") not in (None, "kernel"):
            continue
        match = re.match(r"Linux version (\d+)\.(\d+)", message(entry))
        if match:
            return int(match[1]), int(match[2])
    return None
