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
def test_a_program_that_only_looks_like_pypy_is_still_rejected(tmp_path: Path, writer: dict[str, Any]) -> None:
    path = saved(tmp_path, line_entry(**writer))
    code, out, _err = report("--journal-file", str(path), "--fail-for", "pep522")
    assert code == 0, out
    assert "not by a Python interpreter" in out and "1 line rejected" in out


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
    assert f"not in full: {named}: " in err, err
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
    from urandom_shim.report import journal_dir

    monkeypatch.setattr(journal_dir, "MAX_NAMES", 3)
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
    assert "read as a machine without events (--allow-empty)" in out, out
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
         "_SYSTEMD_UNIT": "chatty.service", "__MONOTONIC_TIMESTAMP": str(14_000_000 + n)}
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

    monkeypatch.setattr(sources, "MAX_FINDINGS", 3)
    fleet = tmp_path / "fleet"
    for number in range(3):
        write(fleet / f"m{number}.jsonl", clean(number))
    assert report("--events", str(fleet), "--fail-for", "pep522")[0] == 0
    write(fleet / "m3.jsonl", clean(3))
    code, out, err = report("--events", str(fleet), "--fail-for", "pep522")
    assert code == EXIT_NOTHING_READ and f"{fleet / 'm3.jsonl'}: 1 of its findings were not read" in out, out + err
    lines = [line_entry(_PID=str(100 + n), __MONOTONIC_TIMESTAMP=str(13_700_000 + n)) for n in range(5)]
    directory, file = collector(tmp_path, [dict(line, MESSAGE=clean_line()) for line in lines])
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
    can't read (it says why then), and its verification says whether it is whole."""
    chatter = [
        {"MESSAGE": f"request {n} served", "_TRANSPORT": "stdout", "_EXE": "/usr/bin/chatty",
         "_SYSTEMD_UNIT": "chatty.service", "__MONOTONIC_TIMESTAMP": str(14_000_000 + n)}
        for n in range(50)
    ]  # fmt: skip
    directory, _file = collector(tmp_path, chatter)
    code, found = json_report("--journal-dir", str(directory), "--fail-for", "pep522")
    (source,) = found["sources"]["journal_dirs"]
    assert (code, source["problems"], source["read"]) == (0, [], True), source


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
        ({"_EXE": "/usr/bin/perl", "_COMM": "perl"}, "not by a Python interpreter"),
        ({"_EXE": None, "_COMM": None}, "an unknown program"),  # a writer gone before journald saw it
        ({"_TRANSPORT": "kernel"}, "by kernel"),
    ],
    ids=["login-session", "perl", "unknown", "kernel"],
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
