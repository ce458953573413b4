"""Journal files as a fleet's collector has them: real journals (``journalctl -o json`` output) turned into the
journal export format and written by the real ``systemd-journal-remote``, each under the machine id, boot id and
hostname of a machine of its own.

Used by the fleet report's tests (``tests/test_fleet_journal.py``) and benchmark (``benchmarks/fleet_bench.py``).
Not a test module: nothing here is collected.
"""

from __future__ import annotations

import json
import os
import struct
import subprocess
import tempfile
import uuid
from pathlib import Path
from typing import Any, Iterable

#: Debian's systemd-journal-remote (package systemd-journal-remote).
JOURNAL_REMOTE = "/lib/systemd/systemd-journal-remote"

#: Fields of ``journalctl -o json`` that are not the entry's own: the cursor names the file it was read from, and
#: the sequence numbers are the writer's. journal-remote makes its own.
_DROPPED = ("__CURSOR", "__SEQNUM", "__SEQNUM_ID")

#: The fields that carry the ids of a machine and a boot.
_IDS = {"_MACHINE_ID": "machine_id", "_BOOT_ID": "boot_id", "_HOSTNAME": "hostname"}


def available() -> str | None:
    """Why journal files can't be written here (a sentence), or None when they can."""
    if not os.access(JOURNAL_REMOTE, os.X_OK):
        return f"{JOURNAL_REMOTE} is not installed here (Debian's package systemd-journal-remote)"
    return None


def read_json(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """The entries of a saved ``journalctl -o json`` output, gzipped or not (lines that are not a JSON object are
    skipped)."""
    import gzip

    entries = []
    with gzip.open(path, "rb") if str(path).endswith(".gz") else open(path, "rb") as file:
        for line in file:
            try:
                entry = json.loads(line)
            except ValueError:
                continue
            if isinstance(entry, dict):
                entries.append(entry)
    return entries


def _values(value: Any) -> list[bytes]:
    """The values of one field of ``journalctl -o json`` as bytes: a string, an array of byte values (text that is
    not UTF-8, or holds control characters), or an array of either (a field the entry holds more than once)."""
    if value is None:
        return []
    if isinstance(value, str):
        return [value.encode("utf-8")]
    if isinstance(value, list):
        if value and all(isinstance(item, int) for item in value):
            return [bytes(value)]
        found = []
        for item in value:
            found.extend(_values(item))
        return found
    return [str(value).encode("utf-8")]


def export_of(
    entries: Iterable[dict[str, Any]],
    machine_id: str | None = None,
    boot_id: str | None = None,
    hostname: str | None = None,
) -> bytes:
    """``entries`` of ``journalctl -o json`` in the journal export format (what ``journalctl -o export`` prints and
    systemd-journal-remote reads). A value that is not safe as text (a newline, or bytes that are not UTF-8) becomes a
    binary field; null values are dropped, and so are ``__CURSOR`` and the sequence numbers. ``machine_id``,
    ``boot_id`` and ``hostname``, when given, replace ``_MACHINE_ID``, ``_BOOT_ID`` and ``_HOSTNAME`` of every entry
    (and are added to entries that lack them)."""
    given = {"_MACHINE_ID": machine_id, "_BOOT_ID": boot_id, "_HOSTNAME": hostname}
    out = bytearray()
    for entry in entries:
        fields = dict(entry)
        for name, value in given.items():
            if value is not None:
                fields[name] = value
        for name, value in fields.items():
            if name in _DROPPED:
                continue
            key = name.encode("utf-8")
            for data in _values(value):
                if b"\n" in data or not _is_text(data):
                    out += key + b"\n" + struct.pack("<Q", len(data)) + data + b"\n"
                else:
                    out += key + b"=" + data + b"\n"
        out += b"\n"
    return bytes(out)


def _is_text(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def remote_write(export: bytes, out: Path, *, timeout: float = 120.0) -> None:
    """Write ``export`` (the journal export format) with ``systemd-journal-remote --output=OUT -``, fed on stdin.
    ``out`` is a journal file (``*.journal``); entries are appended when it exists. Raises
    ``subprocess.CalledProcessError`` when journal-remote fails, with what it said."""
    done = subprocess.run(
        [JOURNAL_REMOTE, f"--output={out}", "--split-mode=none", "-"],
        input=export,
        capture_output=True,
        timeout=timeout,
    )
    if done.returncode != 0 or not out.is_file():
        raise subprocess.CalledProcessError(done.returncode, done.args, done.stdout, done.stderr)


def new_id() -> str:
    """A fresh machine or boot id: 32 lowercase hex digits, as journald writes them."""
    return uuid.uuid4().hex


def fleet(
    directory: str | os.PathLike[str],
    journals: list[list[dict[str, Any]]] | list[str] | list[Path],
    machines: int,
    *,
    hostname: str = "vm-{index:04d}",
    jobs: int = 2,
) -> list[dict[str, Any]]:
    """Write ``machines`` journal files into ``directory``, as systemd-journal-remote writes a collector's
    (``remote-HOST.journal``): machine i holds ``journals[i % len(journals)]`` (entries, or the path of a saved
    ``journalctl -o json``) under a fresh machine id, boot id and hostname. Returns one dict per machine: its
    ``machine_id``, ``boot_id``, ``hostname``, ``path`` and ``source`` (the index of its journal). ``jobs``
    journal-remote processes run at a time."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    loaded = [read_json(journal) if isinstance(journal, (str, Path)) else journal for journal in journals]
    written = []
    exports = []
    for index in range(machines):
        source = index % len(loaded)
        machine_id, boot_id, host = new_id(), new_id(), hostname.format(index=index)
        path = directory / f"remote-{host}.journal"
        exports.append((export_of(loaded[source], machine_id, boot_id, host), path))
        written.append(
            {"machine_id": machine_id, "boot_id": boot_id, "hostname": host, "path": str(path), "source": source}
        )
        if len(exports) >= 50:  # a few megabytes of exports at a time
            remote_write_many(exports, jobs=jobs)
            exports = []
    remote_write_many(exports, jobs=jobs)
    return written


def remote_write_many(exports: list[tuple[bytes, Path]], *, jobs: int = 2) -> None:
    """:func:`remote_write` for several (export, path), ``jobs`` journal-remote processes at a time."""
    with tempfile.TemporaryDirectory() as scratch:
        running: list[tuple[subprocess.Popen[bytes], Path]] = []
        for number, (export, out) in enumerate(exports):
            feed = Path(scratch) / f"{number}.export"
            feed.write_bytes(export)
            with open(feed, "rb") as stdin:
                process = subprocess.Popen(
                    [JOURNAL_REMOTE, f"--output={out}", "--split-mode=none", "-"],
                    stdin=stdin,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.PIPE,
                )
            running.append((process, out))
            while len(running) >= jobs:
                _finish(running.pop(0))
        for item in running:
            _finish(item)


def _finish(item: tuple[subprocess.Popen[bytes], Path]) -> None:
    process, out = item
    _stdout, stderr = process.communicate(timeout=120)
    if process.returncode != 0 or not out.is_file():
        raise subprocess.CalledProcessError(process.returncode or 0, process.args, b"", stderr)
