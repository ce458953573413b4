"""When the kernel logged ``random: crng init done``, for ``urandom-shim report``: from the journal's kernel
messages, else from ``/dev/kmsg`` when that log is of the same boot.
"""

from __future__ import annotations

import os
import sys
from typing import Iterator, Optional, Set

from . import journal
from .journal import Entry

#: crng_init_done's reasons for not knowing: words that complete "unknown, because ...".
CRNG_NOT_LINUX = "this is not Linux"
CRNG_KMSG_RESTRICTED = "the kernel log is not readable here (dmesg_restrict): run as root"
CRNG_KMSG_MISSING = "the kernel log ({path}) does not exist here"
CRNG_KMSG_FAILED = "the kernel log could not be read ({error})"
CRNG_KMSG_WRAPPED = "the kernel log no longer holds it (its ring buffer has wrapped)"
CRNG_KMSG_WITHOUT = "the kernel has not logged it: the CRNG is not ready yet, or this kernel does not say so"
CRNG_OTHER_BOOT = "the journal does not hold it, and the kernel log here is of another boot than the journal's"


# -- when the CRNG was ready -----------------------------------------------------------------------------------------

#: The kernel's log, one record per read: ``prio,seq,usec,flags;text``. A name to read, so that tests can point it at
#: a regular file of such records.
KMSG = "/dev/kmsg"
#: This boot's id: the journal's ``_BOOT_ID`` with dashes.
BOOT_ID = "/proc/sys/kernel/random/boot_id"
#: What the kernel says when its CRNG is ready: "random: crng init done" since 4.8, and its nonblocking pool's
#: readiness before.
CRNG_MARKERS = journal.CRNG_MARKERS
#: Where a time came from.
FROM_JOURNAL = "the journal"
FROM_KMSG = "/dev/kmsg"


def crng_init_done(entries: list[Entry] | None) -> tuple[float | None, str]:
    """When the kernel logged ``random: crng init done`` (seconds since boot), and where that came from:
    :data:`FROM_JOURNAL` (a kernel message among ``entries``), else :data:`FROM_KMSG` (this boot's kernel log).
    (None, why not in words) when neither holds it. The kernel log is not read when ``entries`` are of another boot.
    """
    found = [
        journal.at(entry)
        for entry in entries or ()
        if journal.field(entry, "_TRANSPORT") in (None, "kernel")
        and any(mark in journal.message(entry) for mark in CRNG_MARKERS)
    ]
    found = [time for time in found if time == time]  # a time, not NaN
    if found:
        return min(found), FROM_JOURNAL
    return from_kernel_log({journal.field(entry, "_BOOT_ID") for entry in entries or ()} - {None})


def from_kernel_log(journal_boots: Set[Optional[str]]) -> tuple[float | None, str]:
    """When this machine's kernel logged ``crng init done``, from its log (:data:`KMSG`), for a report whose journal
    did not hold it; (None, why not in words) when it can't say. Not when the journal read was of another boot than
    this one (``journal_boots``: the ``_BOOT_ID`` its entries name)."""
    if not sys.platform.startswith("linux"):
        return None, CRNG_NOT_LINUX
    if _other_boot(journal_boots):
        return None, CRNG_OTHER_BOOT
    return _from_kmsg()


def _other_boot(theirs: Set[Optional[str]]) -> bool:
    """Whether the boots ``theirs`` are of another than this one (False when either is unknown)."""
    theirs = theirs - {None}
    try:
        with open(BOOT_ID, "rb") as file:
            here = file.read(64).decode("ascii", "replace").strip().replace("-", "")
    except OSError:
        return False
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
