"""What one boot's selected journal entries say of it, for the fleet report (:mod:`.journal_dir`): when the
kernel's CRNG was ready, which kernel booted, whether systemd saw a first boot, when it began; and how the facts of
one boot that several file sets hold are merged, only ever adding.
"""

from __future__ import annotations

from . import journal, kernel_log

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Tuple

    #: A boot's (``_MACHINE_ID``, ``_BOOT_ID``), as its entries say.
    Key = Tuple["str | None", "str | None"]


def realtime(entry: dict[str, Any]) -> int | None:
    """When journald received the entry (``__REALTIME_TIMESTAMP``, µs since 1970), or None."""
    value = journal.field(entry, "__REALTIME_TIMESTAMP")
    if value is None or not 0 < len(value) <= 20 or not value.isascii() or not value.isdigit():
        return None
    return int(value)


def crng_init_done(entries: list[dict[str, Any]]) -> float | None:
    """When the kernel logged ``crng init done`` (seconds since boot): the earliest of its messages among
    ``entries`` (:data:`urandom_shim.report.kernel_log.CRNG_MARKERS`), never this machine's /dev/kmsg."""
    found = [
        journal.at(entry)
        for entry in entries
        if journal.field(entry, "_TRANSPORT") in (None, "kernel")
        and any(mark in journal.message(entry) for mark in kernel_log.CRNG_MARKERS)
    ]
    found = [time for time in found if time == time]
    return min(found) if found else None


def kernel_of(entries: list[dict[str, Any]]) -> str | None:
    """The release of the kernel that booted, from its first message (``Linux version 6.12.12+bpo-cloud-amd64 ...``)."""
    for entry in entries:
        text = journal.message(entry)
        if journal.field(entry, "_TRANSPORT") in (None, "kernel") and text.startswith("Linux version "):
            release = text[len("Linux version ") :].split(" ", 1)[0]
            return release[:200] or None
    return None


def first_boot(entry: dict[str, Any]) -> bool:
    """Whether systemd said "Detected first boot." in ``entry`` (through the kernel's buffer, before journald ran,
    or its own)."""
    return journal.message(entry).startswith("Detected first boot") and "systemd" in (
        journal.field(entry, "SYSLOG_IDENTIFIER"),
        journal.field(entry, "_COMM"),
    )


def hexadecimal(text: str) -> bool:
    return len(text) == 32 and all(char in "0123456789abcdef" for char in text)


def by_cursor(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The entries without repeats (the two queries may both select one), in journald's order."""
    seen = set()
    kept = []
    for entry in entries:
        cursor = entry.get("__CURSOR")
        if isinstance(cursor, str):
            if cursor in seen:
                continue
            seen.add(cursor)
        kept.append(entry)
    return kept


def merge(
    boots: dict[Key, dict[str, Any]],
    key: Key,
    facts: dict[str, Any],
) -> None:
    """Add one file set's facts of a boot to what other file sets said of the same ids. A file set only ever adds:
    its events, rejected lines, stalls and files join the others'; a first boot stays one; the later ``crng init
    done`` counts (so that a machine forging another's ids can't move it earlier and take a finding away)."""
    known = boots.get(key)
    if known is None:
        boots[key] = facts
        return
    for name in ("events", "rejected", "stalls", "files"):
        known[name] = [*known[name], *facts[name]]
    for name in ("entries", "untimed"):
        known[name] += facts[name]
    known["first_boot"] = known["first_boot"] or facts["first_boot"]
    for name in ("hostname", "kernel"):
        known[name] = known[name] if known[name] is not None else facts[name]
    seen = [value for value in (known["first_seen"], facts["first_seen"]) if value is not None]
    known["first_seen"] = min(seen) if seen else None
    crngs = [value for value in (known["crng_init_done"], facts["crng_init_done"]) if value is not None]
    known["crng_init_done"] = max(crngs) if crngs else None
