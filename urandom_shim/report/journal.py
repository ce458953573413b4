"""The systemd journal of a boot, for ``urandom-shim report``: ``journalctl -b -o json`` (or a saved ``journalctl -o
json`` output) read safely into entries, and each entry's fields, text and time.

One JSON object per entry, each field a string, or an array of byte values where the text is not UTF-8. Two fields
give the time since boot: the kernel's own timestamp of a kernel message (``_SOURCE_MONOTONIC_TIMESTAMP``: journald
imports the messages logged before it ran later) and the time journald received an entry
(``__MONOTONIC_TIMESTAMP``), both in microseconds.
"""

from __future__ import annotations

import os

from .. import _messages

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Iterable


# Text of `urandom-shim report`, kept with the code that says it (tests/test_docs.py counts the report package's
# prose as report text, not as messages of the catalogue).

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
