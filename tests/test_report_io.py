"""What ``urandom-shim report`` reads, and what it does with what it can't (issue 45, its input half): PyPy's lines are
a Python interpreter's; ``--events DIR`` names every file it leaves out, and the gate fails closed on it; a path that
does not exist is never "nothing there"; an empty file with ``--allow-empty`` is a machine without events in the text
as in the exit status; a line of the shim's that does not parse in full is never skipped without a trace; the
journals are read as streams, so memory does not grow with a file's size or with its rotated copies; a journal file
damaged where journalctl does not look is named (``journalctl --verify``); the ``logger`` route is read; a problem is
a kind; one machine's report is a fleet of one.

The journals are real: written by the real ``systemd-journal-remote`` (``tests/journal_remote.py``), from the whole
journal of a real first boot of Debian 11 in report mode (``tests/data/journal-debian11-report-only.jsonl.gz``).
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import string
import subprocess
import tracemalloc
from pathlib import Path
from typing import Any, Iterator

import journal_remote
import pytest

import debian
from urandom_shim import _events, _messages
from urandom_shim.cli import main as cli
from urandom_shim.report import events_files, gather, journal, shim_lines
from urandom_shim.report.sources import ABSENT, Kind

DATA = Path(__file__).resolve().parent / "data"
DEBIAN11 = DATA / "journal-debian11-report-only.jsonl.gz"
SAMPLE_EVENTS = DATA / "events-sample.jsonl"
EXIT_PROBLEMS, EXIT_NOTHING_READ = 1, 3


@pytest.fixture(scope="module")
def remote() -> None:
    """systemd-journal-remote, installed from Debian's package where it is missing (CI's fresh machine), as the
    fleet's tests install it; skipped, saying why, only where it can't be had (no apt, not root, not Debian)."""
    if journal_remote.available() is None:
        return
    try:
        debian.journal_remote()
    except debian.Unavailable as exc:
        pytest.skip(f"{exc}: journal files can't be written")
    if journal_remote.available() is not None:
        pytest.skip(f"{journal_remote.available()}: journal files can't be written")


@pytest.fixture(autouse=True)
def fresh_patterns() -> Iterator[None]:
    shim_lines._patterns_cache.clear()
    yield
    shim_lines._patterns_cache.clear()


def report(*args: str) -> tuple[int, str, str]:
    """``urandom-shim report ARGS`` in this process: (exit status, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.main(["report", *args])
    return code, out.getvalue(), err.getvalue()


def json_report(*args: str) -> tuple[int, dict[str, Any]]:
    code, out, err = report(*args, "--json")
    assert out, err
    found: dict[str, Any] = json.loads(out)
    return code, found


def saved(tmp_path: Path, *entries: dict[str, Any], name: str = "journal.json") -> Path:
    path = tmp_path / name
    path.write_text("".join(json.dumps(entry) + "\n" for entry in entries), encoding="utf-8")
    return path


def collector(tmp_path: Path, entries: list[dict[str, Any]], host: str = "vm") -> tuple[Path, Path]:
    """A collector's directory holding one machine's journal file, written by journal-remote: (directory, file)."""
    directory = tmp_path / "remote"
    directory.mkdir(exist_ok=True)
    out = directory / f"remote-{host}.journal"
    journal_remote.remote_write(
        journal_remote.export_of(entries, journal_remote.new_id(), journal_remote.new_id(), host), out
    )
    return directory, out


#: A line of the shim's as an interpreter writes it when pep522 would raise, and the journald fields of a Python's
#: stderr in a system unit.
LINE = (
    "urandom-shim: report-only: os.urandom(32) called from /usr/local/sbin/early-setup.py:65 before the kernel CRNG "
    "was ready, 11.70 s after boot: left it to the interpreter (1.98 s); policy 'pep522' (from "
    "/etc/urandom-shim.toml (machine file)) would have raised BlockingIOError."
)
TRUSTED = {
    "_TRANSPORT": "stdout",
    "_EXE": "/usr/bin/python3.11",
    "_COMM": "python3",
    "_SYSTEMD_UNIT": "early-setup.service",
    "_UID": "0",
    "_PID": "177",
    "__MONOTONIC_TIMESTAMP": "13680000",
    "__REALTIME_TIMESTAMP": "1796563950000000",
}


#: The kernel's first line of a boot: a boot's journal that holds it reaches back to its start.
START = {
    "MESSAGE": "Linux version 5.10.0-32-cloud-amd64 (debian-kernel@lists.debian.org) #1 SMP Debian 5.10.223-1",
    "_TRANSPORT": "kernel",
    "SYSLOG_IDENTIFIER": "kernel",
    "_SOURCE_MONOTONIC_TIMESTAMP": "0",
    "__MONOTONIC_TIMESTAMP": "6705983",
    "__REALTIME_TIMESTAMP": "1796563936645200",
}


def line_entry(**fields: Any) -> dict[str, Any]:
    entry = {"MESSAGE": LINE, **TRUSTED, **fields}
    return {name: value for name, value in entry.items() if value is not None}


# -- PyPy is a Python interpreter -------------------------------------------------------------------------------------

PYPYS = [
    {"_EXE": "/usr/bin/pypy3.9", "_COMM": "pypy3"},  # Debian 12's pypy3, started as pypy3 (a link to pypy3.9)
    {"_EXE": "/usr/bin/pypy3", "_COMM": "pypy3"},
    {"_EXE": "/opt/pypy3.10-v7.3.17-linux64/bin/pypy3.10 (deleted)", "_COMM": "pypy3.10"},  # upgraded while it ran
    {"_EXE": "/usr/lib/pypy3.11/bin/pypy3.11-c", "_COMM": "pypy3.11-c"},  # as PyPy's own build leaves it
    {"_EXE": None, "_COMM": "pypy3"},  # journald could not read the executable: the command name decides
]


@pytest.mark.parametrize("writer", PYPYS, ids=["pypy3.9", "pypy3", "deleted", "build", "comm-only"])
def test_a_pypy_interpreters_lines_are_its_programs_findings(tmp_path: Path, writer: dict[str, Any]) -> None:
    path = saved(tmp_path, line_entry(**writer))
    code, out, _err = report("--journal-file", str(path), "--fail-for", "pep522")
    assert code == EXIT_PROBLEMS, out
    assert "early-setup.service: first call" in out and "rejected" not in out


@pytest.mark.parametrize(
    "writer",
    [
        {"_EXE": "/usr/bin/pypyr", "_COMM": "pypyr"},  # a pipeline runner, not PyPy
        {"_EXE": "/usr/bin/pypy3-evil", "_COMM": "pypy3"},
        {"_EXE": "/usr/bin/perl", "_COMM": "pypy3"},  # a process may rename itself; the kernel names its executable
    ],
    ids=["pypyr", "pypy3-evil", "renamed-perl"],
)
def test_a_program_that_only_looks_like_pypy_counts_by_its_unit_not_its_name(
    tmp_path: Path, writer: dict[str, Any]
) -> None:
    """The unit decides, never the executable's name: in a system unit any writer's line counts (it can only add a
    finding); in a login session none does."""
    path = saved(tmp_path, line_entry(**writer))
    code, out, _err = report("--journal-file", str(path), "--fail-for", "pep522")
    assert code == EXIT_PROBLEMS and "rejected" not in out, out
    path = saved(tmp_path, line_entry(**writer, _SYSTEMD_UNIT="session-2.scope", _UID="1000"))
    code, out, _err = report("--journal-file", str(path), "--fail-for", "pep522")
    assert code == 0 and "login session" in out and "1 line rejected" in out, out


def test_pypy_lines_in_a_collectors_journal_file_fail_the_gate(remote: None, tmp_path: Path) -> None:
    boot = journal_remote.read_json(DEBIAN11)
    pypy = [
        {**entry, "_EXE": "/usr/bin/pypy3.9", "_COMM": "pypy3"} if journal.message(entry).startswith("urandom-shim")
        else entry
        for entry in boot
    ]  # fmt: skip
    directory, _file = collector(tmp_path, pypy)
    code, found = json_report("--journal-dir", str(directory), "--fail-for", "pep522")
    assert code == EXIT_PROBLEMS
    assert [entry["name"] for entry in found["verdict"]["pep522"]["raise"]] == ["early-setup.service"]
    assert found["rejected"]["count"] == 0


def test_a_pypy_unit_that_waited_in_its_start_is_a_stall(tmp_path: Path) -> None:
    sample = [json.loads(line) for line in (DATA / "journal-debian12-cloud-init.jsonl").read_text().splitlines()]
    for entry in sample:
        if entry.get("_SYSTEMD_UNIT") == "cloud-init-local.service":
            entry.update(_EXE="/usr/bin/pypy3.9", _COMM="pypy3")
    _code, found = json_report("--journal-file", str(saved(tmp_path, *sample)))
    assert [(stall["unit"], stall["exe"]) for stall in found["stalls"]] == [
        ("cloud-init-local.service", "/usr/bin/pypy3.9")
    ]


# -- nothing is skipped silently: --events DIR -----------------------------------------------------------------------


def records(number: int) -> list[dict[str, Any]]:
    """early-setup.service's records of the sample, as machine ``number`` writes them."""
    sample = [json.loads(line) for line in SAMPLE_EVENTS.read_text().splitlines() if line.strip()]
    ids = {"machine_id": f"{number:032x}", "boot_id": f"{number + 10**6:032x}", "hostname": f"web-{number}"}
    return [dict(record, **ids) for record in sample if record.get("unit") == "early-setup.service"]


def clean(number: int) -> list[dict[str, Any]]:
    """A machine's record of seeding `random`: nothing to see under any policy."""
    (record,) = [record for record in records(number) if record.get("event") == "call"][:1]
    return [dict(record, call="import random", site="random._inst", would="best-effort")]


def write(path: Path, lines: list[dict[str, Any]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join("\n" + json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


@pytest.mark.parametrize("left_out", ["deep", "symlink", "fifo", "hidden"])
def test_a_file_the_walk_of_an_events_directory_leaves_out_is_named_and_fails_the_gate(
    tmp_path: Path, left_out: str
) -> None:
    fleet = tmp_path / "fleet"
    write(fleet / "clean.jsonl", clean(1))
    assert report("--events", str(fleet), "--fail-for", "pep522")[0] == 0
    breaks = records(2)  # a machine whose program pep522 would make raise: unread, it would pass the gate
    if left_out == "deep":
        where = fleet.joinpath(*(f"d{level}" for level in range(9))) / "m2.jsonl"  # nine levels down
        write(where, breaks)
        named = fleet.joinpath(*(f"d{level}" for level in range(9)))
    elif left_out == "symlink":
        target = write(tmp_path / "elsewhere.jsonl", breaks)
        named = fleet / "m2.jsonl"
        named.symlink_to(target)
    elif left_out == "fifo":
        named = fleet / "m2.jsonl"
        os.mkfifo(named)  # no writer: opening it for reading would block
    else:
        named = write(fleet / ".m2.jsonl.tmp", breaks)  # a shipper's file, still being written
    code, out, err = report("--events", str(fleet), "--fail-for", "pep522")
    assert code == EXIT_NOTHING_READ, out + err
    assert f"{named}: " in out and "Not read (1 problem" in out, out
    assert f"the events directory {fleet} was not read in full ({named}: " in err, err
    _code, found = json_report("--events", str(fleet))
    (problem,) = found["sources"]["events"]["problems"]
    assert problem["path"] == str(named)
    assert (
        problem["kind"] == {"deep": "too-deep", "symlink": "link", "fifo": "not-regular", "hidden": "hidden"}[left_out]
    )


def test_a_directory_past_the_cap_is_named_and_fails_the_gate(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """However many names a directory holds, the walk looks at so many, and names the directory it stopped at."""
    monkeypatch.setattr(events_files, "MAX_EVENTS_FILES", 3)
    fleet = tmp_path / "fleet"
    for number in range(3):
        write(fleet / f"m{number}.jsonl", clean(number))
    assert report("--events", str(fleet), "--fail-for", "pep522")[0] == 0
    write(fleet / "m3.jsonl", records(3))
    code, out, err = report("--events", str(fleet), "--fail-for", "pep522")
    assert code == EXIT_NOTHING_READ, out + err
    assert f"{fleet}: not read: it holds more names than are left of the 3 the report looks at" in out, out


def test_a_journal_directory_of_more_names_than_the_report_looks_at_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from urandom_shim.report import journal_files

    monkeypatch.setattr(journal_files, "MAX_NAMES", 3)
    collector = tmp_path / "remote"
    collector.mkdir()
    for number in range(4):
        (collector / f"link-{number}.journal").symlink_to("/dev/null")
    code, found = json_report("--journal-dir", str(collector), "--fail-for", "pep522")
    (source,) = found["sources"]["journal_dirs"]
    assert code == EXIT_NOTHING_READ and [problem["kind"] for problem in source["problems"]] == ["too-many-files"]


@pytest.mark.parametrize("option", ["--events", "--journal-dir", "--journal-file"])
def test_a_path_that_does_not_exist_is_never_nothing_there(tmp_path: Path, option: str) -> None:
    missing = str(tmp_path / "no" / "such" / "path")
    for allow in ([], ["--allow-empty"]):
        code, out, err = report(option, missing, "--no-journal" if option == "--events" else "--json", "--fail-for",
                                "pep522", *allow)  # fmt: skip
        assert code == EXIT_NOTHING_READ, (allow, out, err)
        assert "--allow-empty" not in err, err
    _code, found = json_report(option, missing, *(["--no-journal"] if option == "--events" else []))
    (source,) = [source for source in gather.each_source(found["sources"]) if source["path"] == missing]
    assert [problem["kind"] for problem in source["problems"]] == ["no-such-path"]
    assert source["absent"] is False and found["read"] is False


@pytest.mark.parametrize("fleet", [False, True], ids=["one-machine", "fleet"])
def test_an_empty_events_file_with_allow_empty_is_a_machine_without_events_in_the_text_too(
    tmp_path: Path, fleet: bool
) -> None:
    empty = tmp_path / "events" / "m1.jsonl"
    empty.parent.mkdir()
    empty.write_text("\n")
    args = ["--events", str(empty.parent if fleet else empty), *([] if fleet else ["--no-journal"])]
    code, out, err = report(*args, "--fail-for", "pep522")
    assert code == EXIT_NOTHING_READ and "--allow-empty" in err, out + err
    code, out, err = report(*args, "--fail-for", "pep522", "--allow-empty")
    assert code == 0, out + err
    assert "nothing read" not in out and "none: nothing read" not in out, out
    assert "nothing there: accepted (--allow-empty)" in out and "problem" not in out, out
    assert "under pep522, no program would raise, wait or use weak bytes" in out, out
    if fleet:
        assert "on 1 machine (1 boot, 0 first boots)" in out.splitlines()[0], out
    _code, found = json_report(*args, "--fail-for", "pep522", "--allow-empty")
    assert found["read"] is True and found["allow_empty"] is True


# -- a line of the shim's that does not parse in full ----------------------------------------------------------------


def cut_short(event: dict[str, Any]) -> str:
    """The event's line as a shim that clipped its lines at 1,000 characters printed it (before issue 45, which
    shortens the caller and the policy's source instead): cut, and an ellipsis."""
    where = _messages.EVENT_WHERE.format(
        call=event["call"], caller=event["caller"], simulated="", boot_time=event["boot_time"]
    )
    whole = _messages.PREFIX + shim_lines.OLDER_REPORT_ONLY.format(
        where=where,
        done=_events.DONE[event["action"]].format(waited=event["waited"]),
        policy=event["policy"],
        source=event["policy_source"],
        would=_events.WOULD[event["would"]],
    )
    assert shim_lines.parse_line(whole) is not None, "the line, whole, is one the report reads"
    assert len(whole) > _messages.MAX_LINE, "the event's fields must make the line longer than the shim printed"
    return whole[: _messages.MAX_LINE - 1] + "…"


LONG = {
    "v": 1,
    "event": "call",
    "boot_time": 11.7,
    "call": "os.urandom(32)",
    "caller": "/opt/app/" + "lib/" * 120 + "early-setup.py:65",
    "simulated": None,
    "mode": "report",
    "action": "untouched",
    "waited": 1.98,
    "policy": "pep522",
    "policy_source": "/etc/urandom-shim/" + "conf.d/" * 60 + "machine.toml (machine file)",
    "would": "raise",
}


def test_a_line_cut_short_on_the_journal_route_fails_the_gate_and_is_named(tmp_path: Path) -> None:
    clipped = cut_short(LONG)
    assert len(clipped) == _messages.MAX_LINE
    path = saved(tmp_path, line_entry(MESSAGE=clipped))
    code, out, err = report("--journal-file", str(path), "--fail-for", "pep522")
    assert code != 0, out  # a finding, or a line not read: never a pass
    _code, found = json_report("--journal-file", str(path))
    if not found["programs"]:  # not read as a finding: then it is named, and the gate fails closed
        assert code == EXIT_NOTHING_READ, out + err
        assert "Not read: 1 line of the journal" in out and "early-setup.service" in out, out
        assert "could not be read in full" in err, err
        assert found["unread"]["count"] == 1 and found["unread"]["lines"][0]["unit"] == "early-setup.service"
        assert [problem["kind"] for problem in found["sources"]["journal"]["problems"]] == ["unread-line"]


def test_a_line_cut_short_in_a_collectors_journal_file_fails_the_gate(remote: None, tmp_path: Path) -> None:
    directory, _file = collector(tmp_path, [line_entry(MESSAGE=cut_short(LONG))])
    code, out, err = report("--journal-dir", str(directory), "--fail-for", "pep522")
    assert code != 0, out
    _code, found = json_report("--journal-dir", str(directory))
    if not found["programs"]:
        assert code == EXIT_NOTHING_READ and "could not be read in full" in out + err, out + err


def test_a_cut_line_from_a_writer_the_report_does_not_believe_is_rejected_not_unread(tmp_path: Path) -> None:
    path = saved(tmp_path, line_entry(MESSAGE=cut_short(LONG), _SYSTEMD_UNIT="session-3.scope", _UID="1000"))
    code, out, _err = report("--journal-file", str(path), "--fail-for", "pep522")
    assert code == 0 and "1 line rejected" in out and "Not read" not in out, out


def test_the_shims_other_lines_are_not_read_as_events_that_failed_to_parse(tmp_path: Path) -> None:
    """A configuration problem on a unit's stderr is one of the shim's lines, and no event: no gate fails on it. No
    line of the catalogue but the events' holds what marks an event line."""
    marker = [text for text, *_ in string.Formatter().parse(_messages.EVENT_WHERE)][1]
    assert marker == " called from "
    events = {"EVENT_WHERE", "EVENT_ENFORCED", "EVENT_REPORT_ONLY", "EVENT_REPEAT"}
    others = [name for name, value in vars(_messages).items() if name.isupper() and isinstance(value, str)]
    assert not [name for name in others if name not in events and marker in getattr(_messages, name)]
    problem = _messages.line("policy 'pep52' from URANDOM_POLICY is not a policy; expected one of native, pep524")
    path = saved(tmp_path, line_entry(MESSAGE=problem), line_entry(MESSAGE=clean_line()))
    code, out, _err = report("--journal-file", str(path), "--fail-for", "pep522")
    assert code == 0 and "Not read" not in out, out


def clean_line() -> str:
    return LINE.replace("os.urandom(32)", "import random").replace(
        "raised BlockingIOError", "used best-effort bytes without waiting"
    )


# -- bounded memory --------------------------------------------------------------------------------------------------


def traced_peak(directory: Path) -> int:
    """The most memory Python held while the journal directory was read into facts (tracemalloc: allocations, not
    time, so the figure does not depend on the machine's load)."""
    from urandom_shim.report import journal_dir

    tracemalloc.start()
    try:
        journal_dir.read_journal_dirs([str(directory)])
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.slow  # seconds of its own: four journals written, three read under tracemalloc
def test_reading_a_journal_holds_facts_not_entries_whatever_the_files_size_and_rotated_copies(
    remote: None, tmp_path: Path
) -> None:
    boot = journal_remote.read_json(DEBIAN11)
    lines = [
        line_entry(_PID=str(1000 + n), __MONOTONIC_TIMESTAMP=str(13_700_000 + n), _CMDLINE=f"python3 loop.py {n}")
        for n in range(1500)
    ]
    chatter = [
        {"MESSAGE": f"request {n} served " + "x" * 300, "_TRANSPORT": "stdout", "_EXE": "/usr/bin/chatty",
         "_SYSTEMD_UNIT": "chatty.service", "__MONOTONIC_TIMESTAMP": str(14_000_000 + n),
         "__REALTIME_TIMESTAMP": str(1796563951000000 + n)}
        for n in range(10_000)
    ]  # fmt: skip
    machine, boot_id = journal_remote.new_id(), journal_remote.new_id()
    export = journal_remote.export_of(boot + lines, machine, boot_id, "vm")
    one, rotated, noisy = (tmp_path / name for name in ("one", "rotated", "noisy"))
    for directory in (one, rotated, noisy):
        directory.mkdir()
    journal_remote.remote_write(export, one / "remote-vm.journal")
    for number in (1, 2):  # a machine's journal and two rotated copies of it: one file set
        journal_remote.remote_write(export, rotated / f"remote-vm@{number:032x}-{number:016x}-{number:016x}.journal")
    journal_remote.remote_write(export, rotated / "remote-vm.journal")
    journal_remote.remote_write(
        journal_remote.export_of(boot + chatter + lines, machine, boot_id, "vm"), noisy / "remote-vm.journal"
    )
    base = traced_peak(one)
    assert traced_peak(rotated) < 1.3 * base, "a file set's rotated copies add up"
    assert traced_peak(noisy) < 1.3 * base, "the entries journalctl does not select cost memory"


def test_past_the_findings_the_report_holds_an_input_is_named_and_fails_the_gate(
    remote: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """However many findings a forged input holds, the report holds at most so many (memory stays bounded): the
    rest is not read, and named, so the gate fails closed rather than pass on what it let go."""
    from urandom_shim.report import sources

    fleet = tmp_path / "fleet"
    for number in range(3):
        write(fleet / f"m{number}.jsonl", clean(number))
    budget = sources.Budget()
    for number in range(3):
        events_files.read_events_file(str(fleet / f"m{number}.jsonl"), budget=budget)
    held = budget.limit - budget.left
    monkeypatch.setattr(sources, "MAX_HELD", held + 100)  # three machines' records, and not a fourth
    assert report("--events", str(fleet), "--fail-for", "pep522")[0] == 0
    write(fleet / "m3.jsonl", clean(3))
    code, out, err = report("--events", str(fleet), "--fail-for", "pep522")
    assert code == EXIT_NOTHING_READ and f"{fleet / 'm3.jsonl'}: not read in full: the report holds" in out, out + err
    monkeypatch.setattr(sources, "MAX_HELD", 1)
    lines = [line_entry(_PID=str(100 + n), __MONOTONIC_TIMESTAMP=str(13_700_000 + n)) for n in range(5)]
    directory, file = collector(tmp_path, [START, *(dict(line, MESSAGE=clean_line()) for line in lines)])
    code, found = json_report("--journal-dir", str(directory), "--fail-for", "pep522")
    (problem,) = found["sources"]["journal_dirs"][0]["problems"]
    assert code == EXIT_NOTHING_READ and (problem["kind"], problem["path"]) == ("too-many-findings", str(file))


# -- corruption journalctl does not see ------------------------------------------------------------------------------


def test_a_journal_file_whose_shim_line_was_altered_is_named_and_fails_the_gate(remote: None, tmp_path: Path) -> None:
    """Eight bytes of a line of the shim's changed in the file: journalctl reads it without a word (it checks no
    hash), and the finding is gone (``os.urandom(32)`` now reads ``secrets.om(32)``, which pep522 lets wait).
    ``journalctl --verify`` finds the data object whose hash is not its content's."""
    directory, file = collector(tmp_path, journal_remote.read_json(DEBIAN11))
    assert report("--journal-dir", str(directory), "--fail-for", "pep522")[0] == EXIT_PROBLEMS
    data = bytearray(file.read_bytes())
    where = data.index(b"urandom-shim: report-only: os.urandom(32)")
    start = where + len("urandom-shim: report-only: ")
    data[start : start + 8] = b"secrets."
    file.write_bytes(bytes(data))
    shown = subprocess.run(
        ["journalctl", f"--file={file}", "-o", "cat", "--no-pager"], capture_output=True, text=True, check=False
    )
    assert shown.returncode == 0 and "secrets.om(32) called from" in shown.stdout, "journalctl reads past it"
    code, out, err = report("--journal-dir", str(directory), "--fail-for", "pep522")
    assert code == EXIT_NOTHING_READ, out + err
    assert f"{file}: journalctl --verify does not pass it" in out, out
    _code, found = json_report("--journal-dir", str(directory))
    (problem,) = found["sources"]["journal_dirs"][0]["problems"]
    assert (problem["kind"], problem["path"]) == ("damaged", str(file))
    assert found["machines"], "what journalctl still reads of it counts"


def test_a_journal_file_without_a_line_that_matters_is_read_not_named(remote: None, tmp_path: Path) -> None:
    """journalctl --grep exits 1 when no line matched, without a word: that is a journal read, not one journalctl
    can't read (it says why then), and its verification says whether it is whole. Without the boot's start, it is
    a journal whose earlier lines are unknown (tests/test_report_hostile.py)."""
    chatter = [
        {"MESSAGE": f"request {n} served", "_TRANSPORT": "stdout", "_EXE": "/usr/bin/chatty",
         "_SYSTEMD_UNIT": "chatty.service", "__MONOTONIC_TIMESTAMP": str(14_000_000 + n),
         "__REALTIME_TIMESTAMP": str(1796563951000000 + n)}
        for n in range(50)
    ]  # fmt: skip
    directory, _file = collector(tmp_path, [{**START, "MESSAGE": "BIOS-provided physical RAM map:"}, *chatter])
    code, found = json_report("--journal-dir", str(directory), "--fail-for", "pep522")
    (source,) = found["sources"]["journal_dirs"]
    assert (code, source["problems"], source["read"]) == (0, [], True), source
    assert len(found["machines"]) == 1, "a machine whose journal says nothing that matters is still a machine read"


# -- the logger route --------------------------------------------------------------------------------------------------

LOGGER = {"_TRANSPORT": "syslog", "_EXE": "/usr/bin/logger", "_COMM": "logger", "SYSLOG_IDENTIFIER": "app"}


def test_a_line_piped_to_logger_in_a_system_unit_is_read(remote: None, tmp_path: Path) -> None:
    """``python app.py 2>&1 | logger``: the line arrives by syslog, written by logger, in the unit."""
    path = saved(tmp_path, line_entry(**LOGGER))
    code, out, _err = report("--journal-file", str(path), "--fail-for", "pep522")
    assert code == EXIT_PROBLEMS and "early-setup.service: first call" in out and "rejected" not in out, out
    directory, _file = collector(tmp_path, [line_entry(**LOGGER)])
    assert report("--journal-dir", str(directory), "--fail-for", "pep522")[0] == EXIT_PROBLEMS


@pytest.mark.parametrize(
    ("writer", "reason"),
    [
        ({"_SYSTEMD_UNIT": "session-4.scope", "_UID": "1000"}, "login session"),  # any user can run logger
        ({"_EXE": None, "_COMM": None}, "journald did not see"),  # a writer gone before journald saw it
        ({"_TRANSPORT": "kernel"}, "by kernel"),
    ],
    ids=["login-session", "unknown", "kernel"],
)
def test_the_logger_route_is_as_strict_as_the_others(tmp_path: Path, writer: dict[str, Any], reason: str) -> None:
    path = saved(tmp_path, line_entry(**{**LOGGER, **writer}))
    code, out, _err = report("--journal-file", str(path), "--fail-for", "pep522")
    assert code == 0 and reason in out and "1 line rejected" in out, out


# -- problems as kinds; one gathering path ----------------------------------------------------------------------------


def test_every_problem_is_a_kind_and_only_the_absent_kinds_are_excused(tmp_path: Path) -> None:
    (tmp_path / "empty.jsonl").write_text("")
    (tmp_path / "garbage.jsonl").write_bytes(b"\x00\xff not json\n")
    os.mkfifo(tmp_path / "fifo.jsonl")
    (tmp_path / ".hidden").write_text("")
    _code, found = json_report("--events", str(tmp_path), "--journal-dir", str(tmp_path / "none"))
    problems = [problem for source in gather.each_source(found["sources"]) for problem in source["problems"]]
    assert {problem["kind"] for problem in problems} == {"empty", "nothing-readable", "not-regular", "hidden",
                                                         "no-such-path"}  # fmt: skip
    assert {kind.value for kind in Kind} >= {problem["kind"] for problem in problems}
    assert all(set(problem) == {"kind", "path", "problem"} for problem in problems)
    assert {kind.value for kind in ABSENT} & {problem["kind"] for problem in problems} == {"empty"}


def test_one_machines_report_is_a_fleet_of_one(tmp_path: Path) -> None:
    """The same machine's events file, read as one machine's (``--events FILE``) and as a fleet's (``--events DIR``):
    the same report, in the same shape: programs, verdict, machines, what was not read."""
    machine = write(tmp_path / "fleet" / "m1.jsonl", records(1))
    _code, alone = json_report("--events", str(machine), "--no-journal")
    _code, fleet = json_report("--events", str(machine.parent))
    assert set(alone) == set(fleet)
    assert set(alone["sources"]["events"]) == set(fleet["sources"]["events"])
    for name in ("programs", "machines", "boots", "rejected", "unread", "read"):
        assert alone[name] == fleet[name], name
    # The verdict's entries; its sentences name machine counts over a fleet.
    assert {policy: {**found, "text": None} for policy, found in alone["verdict"].items()} == {
        policy: {**found, "text": None} for policy, found in fleet["verdict"].items()
    }
    assert alone["fleet_mode"] is False and fleet["fleet_mode"] is True


def test_the_json_fields_are_the_documented_ones(tmp_path: Path) -> None:
    """Every report has the same fields, one machine's as a fleet's, and they are the CLI reference's."""
    import re

    page = (Path(__file__).resolve().parent.parent / "docs" / "reference" / "cli.md").read_text(encoding="utf-8")
    table = page[page.index("`--json` prints one object, for scripts:") :].split("\n\n")[1]
    documented = {re.match(r"\| `(\w+)`", line)[1] for line in table.splitlines() if line.startswith("| `")}  # type: ignore[index]
    machine = write(tmp_path / "fleet" / "m1.jsonl", records(1))
    for args in (["--events", str(machine), "--no-journal"], ["--events", str(machine.parent)]):
        _code, found = json_report(*args)
        assert set(found) == documented, args


# -- issue 45's second hostile pass: what a directory, a saved journal and a boot's journal hold --------------------


def test_journal_files_without_entries_are_named_and_fail_the_gate(remote: None, tmp_path: Path) -> None:
    """journal-remote makes a machine's file before anything arrives: a collector of such files read nothing."""
    directory = tmp_path / "remote"
    directory.mkdir()
    for host in ("vm-0001", "vm-0002"):
        journal_remote.remote_write(b"", directory / f"remote-{host}.journal")
    code, out, err = report("--journal-dir", str(directory), "--fail-for", "pep522")
    assert code == EXIT_NOTHING_READ, out + err
    assert f"{directory / 'remote-vm-0001.journal'}: holds no journal entries" in out, out
    _code, found = json_report("--journal-dir", str(directory))
    assert [problem["kind"] for problem in found["sources"]["journal_dirs"][0]["problems"]] == ["empty", "empty"]
    # Nothing there, as --allow-empty says it may be: accepted, and not counted as a problem.
    code, out, err = report("--journal-dir", str(directory), "--fail-for", "pep522", "--allow-empty")
    assert code == 0 and "nothing there: accepted (--allow-empty)" in out and "Not read" not in out, out + err


def test_a_journal_directory_reads_deeper_files_and_renamed_ones_and_names_everything_else(
    remote: None, tmp_path: Path
) -> None:
    """Files two levels down and a journal file renamed (``.journal.1``) are read; a symbolic link to a directory
    and a file that is no journal file are named, and fail the gate: nothing is left out silently."""
    boot = journal_remote.read_json(DEBIAN11)
    quiet = [entry for entry in boot if not journal.message(entry).startswith("urandom-shim:")]
    fleet = tmp_path / "fleet"
    for out, entries in (
        (fleet / "remote-clean.journal", quiet),
        (fleet / "site2" / "rack7" / "remote-deep.journal", boot),
    ):
        out.parent.mkdir(parents=True, exist_ok=True)
        journal_remote.remote_write(
            journal_remote.export_of(entries, journal_remote.new_id(), journal_remote.new_id()), out
        )
    renamed = fleet / "remote-part.journal.1"  # journal-remote names its files *.journal: renamed afterwards
    journal_remote.remote_write(
        journal_remote.export_of(boot, journal_remote.new_id(), journal_remote.new_id()), fleet / "part.journal"
    )
    (fleet / "part.journal").rename(renamed)
    code, found = json_report("--journal-dir", str(fleet), "--fail-for", "pep522")
    assert code == EXIT_PROBLEMS and len(found["machines"]) == 3, found["machines"]
    assert found["sources"]["journal_dirs"][0]["problems"] == []
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (fleet / "linked").symlink_to(elsewhere)
    (fleet / "README").write_text("the collector's notes\n")
    (fleet / "site2" / "rack7" / "remote-deep.journal").unlink()
    renamed.unlink()
    code, out, err = report("--journal-dir", str(fleet), "--fail-for", "pep522")
    assert code == EXIT_NOTHING_READ, out + err
    assert f"{fleet / 'linked'}: not read: a symbolic link" in out, out
    assert f"{fleet / 'README'}: not read: its name is not a journal file's" in out, out


def late(entries: list[dict[str, Any]], after: float) -> list[dict[str, Any]]:
    """A boot's entries without its first ``after`` seconds: what journald keeps once its oldest files are gone."""
    return [entry for entry in entries if journal.at(entry) > after]


def test_a_saved_journal_that_lost_its_boots_start_fails_the_gate(tmp_path: Path) -> None:
    """A local user can fill the journal (``logger``) until journald deletes its oldest files, the boot's start
    with them; early-setup.service's raise was in what is gone."""
    boot = journal_remote.read_json(DEBIAN11)
    whole = saved(tmp_path, *boot, name="whole.json")
    code, found = json_report("--journal-file", str(whole), "--fail-for", "pep522")
    assert code == EXIT_PROBLEMS and found["sources"]["journal"]["problems"] == [], "a real boot is read in full"
    path = saved(tmp_path, *late(boot, 14.0), name="late.json")
    code, out, err = report("--journal-file", str(path), "--fail-for", "pep522")
    assert code == EXIT_NOTHING_READ, out + err
    assert "does not reach back to the boot's start (its earliest entry is 14." in out, out
    _code, found = json_report("--journal-file", str(path))
    assert [problem["kind"] for problem in found["sources"]["journal"]["problems"]] == ["no-boot-start"]


def test_a_collectors_journal_that_lost_its_boots_start_fails_the_gate(remote: None, tmp_path: Path) -> None:
    boot = journal_remote.read_json(DEBIAN11)
    directory, _file = collector(tmp_path, boot)
    assert report("--journal-dir", str(directory), "--fail-for", "pep522")[0] == EXIT_PROBLEMS
    (tmp_path / "lost").mkdir()
    lost, file = collector(tmp_path / "lost", late(boot, 14.0))
    code, found = json_report("--journal-dir", str(lost), "--fail-for", "pep522")
    (problem,) = found["sources"]["journal_dirs"][0]["problems"]
    assert code == EXIT_NOTHING_READ and (problem["kind"], problem["path"]) == ("no-boot-start", str(file))


def test_this_boots_journal_that_lost_its_start_fails_the_gate(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``journalctl -b`` gives what is left of this boot: the report asks for its first entries, and names it."""
    lost = saved(tmp_path, *late(journal_remote.read_json(DEBIAN11), 14.0), name="late.json")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "journalctl").write_text(f"#!/bin/sh\nexec /bin/cat {lost}\n")
    (bin_dir / "journalctl").chmod(0o755)
    monkeypatch.setenv("PATH", str(bin_dir))
    clean_events = write(tmp_path / "clean.jsonl", clean(1))
    code, out, err = report("--events", str(clean_events), "--fail-for", "pep522")
    assert code == EXIT_NOTHING_READ, out + err
    assert "this boot's journal (journalctl -b) was not read in full" in err and "boot's start" in err, err


def test_a_saved_journal_of_two_boots_reads_both(tmp_path: Path) -> None:
    """``journalctl -o json`` without ``-b``: a test VM's first boot, then its reboot. The first holds the raise."""
    boot = journal_remote.read_json(DEBIAN11)
    reboot = [dict(entry, _BOOT_ID="c" * 32) for entry in boot[:5]]
    path = saved(tmp_path, *boot, *reboot)
    code, found = json_report("--journal-file", str(path), "--fail-for", "pep522")
    assert code == EXIT_PROBLEMS, found["verdict"]["pep522"]
    assert [entry["name"] for entry in found["verdict"]["pep522"]["raise"]] == ["early-setup.service"]
    assert sorted(boot_["boot_id"] for boot_ in found["boots"]) == sorted({boot[0]["_BOOT_ID"], "c" * 32})


# -- memory and time, bounded -----------------------------------------------------------------------------------------


def test_an_events_file_of_tiny_records_is_held_within_the_byte_budget(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Memory is bounded by bytes, not by a count: a file of records of two fields each (the most records per byte)
    holds the report to its budget, and past it the file is named."""
    from urandom_shim.report import sources

    monkeypatch.setattr(sources, "MAX_HELD", 2 * 1024 * 1024, raising=False)
    path = tmp_path / "tiny.jsonl"
    path.write_bytes(b'{"v":1,"call":"import random","site":"random._inst"}\n' * 150_000)  # 8 MB
    tracemalloc.start()
    try:
        code, out, err = report("--events", str(path), "--no-journal", "--fail-for", "pep522")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert code == EXIT_NOTHING_READ and "not in full: the report holds at most 2 MiB" in out, out + err
    assert peak < 12 * 1024 * 1024, f"{peak / 2**20:.0f} MiB for a budget of 2 MiB"


def test_the_events_files_have_a_time_for_the_whole_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(gather, "TOTAL_TIME", -10.0, raising=False)
    fleet = tmp_path / "fleet"
    for number in range(3):
        write(fleet / f"m{number}.jsonl", clean(number))
    code, found = json_report("--events", str(fleet), "--fail-for", "pep522")
    kinds = {problem["kind"] for problem in found["sources"]["events"]["problems"]}
    assert code == EXIT_NOTHING_READ and kinds == {"timed-out"}, found["sources"]["events"]


# -- the newcomer's pass -----------------------------------------------------------------------------------------------


def test_the_fields_the_fleet_how_to_tells_a_shipper_to_keep_are_enough_for_the_verdict(tmp_path: Path) -> None:
    """A shipper that keeps only the fields the fleet how-to lists must give the same verdict as every field: a
    call that raises only after its 0.3 s timeout is known so by ``under`` alone."""
    import re

    page = (Path(__file__).resolve().parent.parent / "docs" / "howto" / "fleet.md").read_text(encoding="utf-8")
    paragraph = page[page.index("Keep every field of every record") :].split("\n\n")[0]
    kept = set(re.findall(r"`(\w+)`", paragraph))
    timed = [
        dict(record, call="os.urandom(16)", site="os.urandom", timeout=0.3, window=None,
             under={"native": "wait", "pep524": "wait-then-raise", "pep522": "wait-then-raise", "legacy": "weak"})
        for record in records(1) if record["event"] == "call"
    ][:1]  # fmt: skip
    whole = write(tmp_path / "whole" / "m1.jsonl", timed)
    shipped = write(tmp_path / "shipped" / "m1.jsonl", [{k: v for k, v in r.items() if k in kept} for r in timed])
    for path in (whole, shipped):
        code, found = json_report("--events", str(path), "--no-journal", "--fail-for", "pep524")
        assert code == EXIT_PROBLEMS, (path, found["verdict"]["pep524"])
        assert found["programs"][0]["calls"][0]["inferred"] is False, sorted(kept)
    assert "an older shim, or a shipper that dropped it" in page


def test_a_record_without_under_says_a_shipper_may_have_dropped_it(tmp_path: Path) -> None:
    bare = [{key: value for key, value in record.items() if key != "under"} for record in records(1)]
    _code, out, _err = report("--events", str(write(tmp_path / "m.jsonl", bare)), "--no-journal")
    assert "its record carries no `under` (an older shim, or a shipper that dropped it)" in out, out


def test_allow_empty_says_one_thing_on_the_source_it_applies_to_on_both_routes(remote: None, tmp_path: Path) -> None:
    events = tmp_path / "ev"
    events.mkdir()
    (events / "a.jsonl").write_text("")
    code, out, _err = report("--events", str(events), "--fail-for", "pep522", "--allow-empty")
    assert code == 0 and "1 file, 0 events, 1 empty, nothing there: accepted (--allow-empty)" in out, out
    assert "problem" not in out and "Not read" not in out, out
    (events / "b.jsonl").write_text("\n")
    code, out, _err = report("--events", str(events), "--fail-for", "pep522", "--allow-empty")
    assert code == 0 and "on 2 machines" in out and "none of its" not in out, out
    empty = tmp_path / "none"
    empty.mkdir()
    for option in ("--events", "--journal-dir"):
        code, out, _err = report(option, str(empty), "--fail-for", "pep522", "--allow-empty")
        assert code == 0 and "; nothing there: accepted (--allow-empty)" in out, (option, out)
        assert "read as a machine without events" not in out and "Not read" not in out, (option, out)
    # A machine with events whose journal holds nothing of this boot: only the journal's line says nothing there.
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "journalctl").write_text("#!/bin/sh\nexit 1\n")  # --grep's answer when it found no line
    (bin_dir / "journalctl").chmod(0o755)
    path = os.environ["PATH"]
    os.environ["PATH"] = str(bin_dir)
    try:
        code, out, _err = report("--events", str(write(tmp_path / "m.jsonl", records(1))), "--fail-for", "pep522",
                                 "--allow-empty")  # fmt: skip
    finally:
        os.environ["PATH"] = path
    (events_line,) = [line for line in out.splitlines() if line.startswith("  events ")]
    (journal_line,) = [line for line in out.splitlines() if line.startswith("  journal ")]
    assert (
        code == EXIT_PROBLEMS
        and "accepted" not in events_line
        and journal_line.endswith("nothing there: accepted (--allow-empty)")
    ), out


def test_the_allow_empty_help_never_excuses_a_path_that_does_not_exist() -> None:
    from urandom_shim.cli.parser import build_parser

    _parser, subs = build_parser()
    (action,) = [action for action in subs["report"]._actions if "--allow-empty" in action.option_strings]
    assert action.help is not None and "does not exist" in action.help and "still exit 3" in action.help


def test_simulates_own_empty_events_file_is_a_run_without_events_not_nothing_read(tmp_path: Path) -> None:
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        code = cli.main(["simulate", "--unready-forever", "--report-only", "--policy", "pep522", "--", "true"])
    assert code == 0, err.getvalue()
    assert "nothing read" not in err.getvalue() and "--events PATH" not in err.getvalue(), err.getvalue()
    assert "under pep522, no program would raise, wait or use weak bytes" in err.getvalue(), err.getvalue()


def test_a_machine_whose_boots_say_nothing_of_a_first_boot_is_unknown_not_false(tmp_path: Path) -> None:
    bare = [{key: value for key, value in record.items() if key != "first_boot"} for record in records(1)]
    _code, found = json_report("--events", str(write(tmp_path / "fleet" / "m.jsonl", bare)))
    assert [machine["first_boot"] for machine in found["machines"]] == [None]
    assert [boot["first_boot"] for boot in found["boots"]] == [None]


def test_the_json_reference_names_what_a_call_carries() -> None:
    page = (Path(__file__).resolve().parent.parent / "docs" / "reference" / "cli.md").read_text(encoding="utf-8")
    table = page[page.index("`--json` prints one object, for scripts:") :].split("\n\n")[1]
    (programs,) = [line for line in table.splitlines() if line.startswith("| `programs`")]
    for name in ("`outcomes`", "`inferred`", "`timeout`", "`wait-then-raise`", "`under`"):
        assert name in programs, name


def test_a_record_of_a_machine_without_a_machine_id_is_this_machines(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An initramfs, a container or a busybox system has no /etc/machine-id: its records name the boot, not the
    machine. One machine's report holds them as this machine's boot, so the kernel log's ``crng init done`` (of this
    boot) is theirs, and the report says when the first call came before it (found by the real-kernel test)."""
    here = _events.machine()
    if here["boot_id"] is None:
        pytest.skip("this machine's boot id can't be read")
    monkeypatch.setattr(gather._kernel_log, "from_kernel_log", lambda boot_ids: (99999.0, "/dev/kmsg"))
    ids = {"machine_id": None, "boot_id": here["boot_id"], "hostname": None, "simulated": None, "boot_time": 3.0}
    found = [dict(record, **ids) for record in records(1)]
    events = write(tmp_path / "events.jsonl", found)
    _code, found_report = json_report("--events", str(events), "--no-journal")
    assert found_report["crng_init_done"] == 99999.0
    (boot,) = found_report["boots"]
    assert (boot["machine_id"], boot["boot_id"], boot["crng_init_done"]) == (
        here["machine_id"],
        here["boot_id"],
        99999.0,
    )
    assert found_report["programs"] and all(
        program["first_call_after_crng"] is not None and program["first_call_after_crng"] < 0
        for program in found_report["programs"]
    ), found_report["programs"]
