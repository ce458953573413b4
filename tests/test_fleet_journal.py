"""Journal directories for the fleet report (``urandom_shim.report.journal_dir``), read from journal files that the
real ``systemd-journal-remote`` wrote (``tests/journal_remote.py``) from real journals, each under machine ids of its
own.

The journals: ``tests/data/journal-debian11-report-only.jsonl.gz``, the whole journal of a real first boot of Debian 11
(kernel 5.10, systemd 247) in report mode under qemu, as the real-boot test ``test_a_first_boot_in_report_mode_and_its
_report`` collected it; and ``tests/data/journal-debian12-cloud-init.jsonl``, the slice of a Debian 12 first boot on
the 6.12 kernel that the boot-log tests read (a stall: cloud-init-local started before ``crng init done``).
"""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import journal_remote
import pytest

import debian
from urandom_shim.report import gather, journal, shim_lines, verdict
from urandom_shim.report.sources import said

ROOT = Path(__file__).resolve().parent.parent
DATA = Path(__file__).resolve().parent / "data"
DEBIAN11 = DATA / "journal-debian11-report-only.jsonl.gz"
DEBIAN12 = DATA / "journal-debian12-cloud-init.jsonl"


@pytest.fixture(scope="module", autouse=True)
def collector() -> None:
    """systemd-journal-remote, installed from Debian's package where it is missing (CI's fresh machine), as the
    real-boot tests install it; skipped, saying why, only where it can't be had (no apt, not root, not Debian)."""
    if journal_remote.available() is None:
        return
    try:
        debian.journal_remote()
    except debian.Unavailable as exc:
        pytest.skip(f"{exc}: journal files can't be written")
    if journal_remote.available() is not None:
        pytest.skip(f"{journal_remote.available()}: journal files can't be written")


def read_dirs(*dirs: Path, timeout: float = 120) -> dict[str, Any]:
    """read_journal_dirs(dirs) in an interpreter of its own, so that a hang fails the test instead of hanging it:
    ``{"sources": [...], "boots": [...]}``, each source's problems as the lines the report prints (``PATH: ...``),
    and their kinds as ``kinds``."""
    code = (
        "import json, sys\n"
        "from urandom_shim.report.journal_dir import read_journal_dirs\n"
        "from urandom_shim.report.sources import said\n"
        "found = read_journal_dirs(sys.argv[1:])._asdict()\n"
        "for source in found['sources']:\n"
        "    source['kinds'] = [problem['kind'] for problem in source['problems']]\n"
        "    source['problems'] = [said(problem) for problem in source['problems']]\n"
        "json.dump(found, sys.stdout)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, *map(str, dirs)],
        capture_output=True,
        timeout=timeout,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, done.stderr.decode()
    assert done.stderr == b"", done.stderr.decode()
    result: dict[str, Any] = json.loads(done.stdout)
    return result


#: What the report adds to each program and call over machines and boots.
FLEET_COUNTS = ("machines", "boots", "first_boots", "later_boots", "images", "kernels")


def without(names: tuple[str, ...], value: Any) -> Any:
    """``value`` with the keys ``names`` left out of every dict in it."""
    if isinstance(value, dict):
        return {key: without(names, item) for key, item in value.items() if key not in names}
    if isinstance(value, list):
        return [without(names, item) for item in value]
    return value


def plain(path: Path, tmp_path: Path) -> Path:
    """A saved journal as ``journalctl -o json`` wrote it (the gzipped one unpacked)."""
    if path.suffix != ".gz":
        return path
    out = tmp_path / path.name[: -len(".gz")]
    out.write_bytes(gzip.decompress(path.read_bytes()))
    return out


@pytest.fixture(scope="module")
def fleet_dir(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[dict[str, Any]]]:
    """Four machines, written by journal-remote: Debian 11's first boot twice, Debian 12's slice twice."""
    directory = tmp_path_factory.mktemp("fleet") / "remote"
    machines = journal_remote.fleet(directory, [DEBIAN11, DEBIAN12], 4)
    return directory, machines


def test_each_machine_written_by_journal_remote_is_one_boot_with_its_own_ids_events_crng_kernel_and_first_boot(
    fleet_dir: tuple[Path, list[dict[str, Any]]],
) -> None:
    directory, machines = fleet_dir
    result = read_dirs(directory)
    (source,) = result["sources"]
    assert {name: source[name] for name in ("path", "files", "problems", "read", "absent", "unread")} == {
        "path": str(directory), "files": 4, "problems": [], "read": True, "absent": False, "unread": 0
    }  # fmt: skip
    assert source["records"] == sum(len(boot["events"]) for boot in result["boots"]) > 0
    boots = {boot["machine_id"]: boot for boot in result["boots"]}
    assert set(boots) == {machine["machine_id"] for machine in machines}
    for machine in machines:
        boot = boots[machine["machine_id"]]
        assert boot["boot_id"] == machine["boot_id"]
        assert boot["hostname"] == machine["hostname"]
        assert boot["files"] == [machine["path"]]
        assert boot["untimed"] == 0
        if machine["source"] == 0:  # Debian 11, kernel 5.10: its first boot, two report-only lines, no stall
            assert boot["kernel"] == "5.10.0-32-cloud-amd64"
            assert boot["first_boot"] is True
            assert boot["crng_init_done"] == pytest.approx(13.634273)
            assert [(event["unit"], event["call"]) for event in boot["events"]] == [
                ("cloud-init-local.service", "import random"),
                ("early-setup.service", "os.urandom(32)"),
            ]
            assert boot["stalls"] == []
            assert boot["first_seen"] == 1796563936645200
        else:  # Debian 12's slice, kernel 6.12: cloud-init-local stalled in its start-up
            assert boot["kernel"] == "6.12.12+bpo-cloud-amd64"
            assert boot["first_boot"] is False  # the slice holds no "Detected first boot."
            assert boot["crng_init_done"] == pytest.approx(17.400312)
            assert [stall["unit"] for stall in boot["stalls"]] == ["cloud-init-local.service"]
            assert {event["unit"] for event in boot["events"]} == {"early-setup.service"}
        assert boot["rejected"] == boot["unread"] == {"count": 0, "lines": []}


@pytest.mark.parametrize("source", [DEBIAN11, DEBIAN12], ids=["debian11", "debian12-slice"])
def test_a_boot_read_from_its_journal_file_says_what_the_report_of_its_saved_json_journal_says(
    source: Path, tmp_path: Path
) -> None:
    saved = plain(source, tmp_path)
    directory = tmp_path / "remote"
    (machine,) = journal_remote.fleet(directory, [saved], 1)
    (boot,) = read_dirs(directory)["boots"]
    # The single-journal path, on the same journal (ids as journal-remote wrote them: they are all that differs).
    same = tmp_path / "same.json"
    same.write_bytes(
        subprocess.run(
            ["journalctl", f"--file={machine['path']}", "-o", "json", "--no-pager", "--all"],
            capture_output=True,
            check=True,
            stdin=subprocess.DEVNULL,
        ).stdout
    )
    report = gather.gather(None, journal=False, journal_file=str(same))
    assert report["sources"]["journal"]["problem"] is None
    assert boot["crng_init_done"] == report["crng_init_done"]
    assert boot["stalls"] == report["stalls"]
    # Each program's calls as the report groups them (the counts over machines and boots are the fleet layer's).
    grouped = verdict.group(boot["events"], boot["crng_init_done"])
    assert without(FLEET_COUNTS, grouped) == without(FLEET_COUNTS, report["programs"])
    entries, _skipped = journal.read_export(str(same))
    lines = shim_lines.journal_events(entries)
    assert boot["events"] == lines.events and lines.unread == []
    assert boot["rejected"] == {"count": len(lines.rejected), "lines": lines.rejected}


def test_corrupt_truncated_and_odd_files_are_each_one_problem_and_the_good_file_beside_them_is_read(
    fleet_dir: tuple[Path, list[dict[str, Any]]], tmp_path: Path
) -> None:
    _directory, machines = fleet_dir
    good = Path(machines[0]["path"]).read_bytes()
    odd = tmp_path / "odd"
    odd.mkdir()
    (odd / "remote-good.journal").write_bytes(good)
    (odd / "remote-truncated.journal").write_bytes(good[: len(good) // 3])
    (odd / "remote-zeros.journal").write_bytes(bytes(len(good)))
    (odd / "remote-random.journal").write_bytes(os.urandom(1 << 20))
    (odd / "remote-empty.journal~").write_bytes(b"")
    os.mkfifo(odd / "x.journal")  # no writer: opening it for reading would block
    (odd / "link.journal").symlink_to(machines[1]["path"])  # out of the directory
    (odd / "notes.txt").write_text("not a journal file")
    # journalctl --file globs its argument: "remote-*.journal" would read every file here (and one bad one fails it).
    odd_names = [odd / "remote-[*?.journal", odd / "remote-*.journal"]
    for name, machine in zip(odd_names, machines[2:]):
        name.write_bytes(Path(machine["path"]).read_bytes())
    started = time.monotonic()
    result = read_dirs(odd, timeout=60)
    assert time.monotonic() - started < 60
    (source,) = result["sources"]
    assert source["files"] == 7  # the seven regular *.journal and *.journal~ files
    assert source["read"] is True and source["absent"] is False
    problems = source["problems"]
    for name in ("remote-truncated.journal", "remote-zeros.journal", "remote-random.journal", "remote-empty.journal~"):
        (line,) = [problem for problem in problems if problem.startswith(f"{odd / name}: ")]
        assert "journalctl can't read it" in line, line
    (fifo,) = [problem for problem in problems if problem.startswith(f"{odd / 'x.journal'}: ")]
    assert "a FIFO" in fifo
    (link,) = [problem for problem in problems if problem.startswith(f"{odd / 'link.journal'}: ")]
    assert "a symbolic link, which could lead anywhere" in link
    (notes,) = [problem for problem in problems if problem.startswith(f"{odd / 'notes.txt'}: ")]
    assert "its name is not a journal file's" in notes  # nothing in the directory is left out silently
    assert len(problems) == 7, problems
    # The good file once, each oddly named one as itself (not the files its name matches): one file per machine.
    boots = {boot["machine_id"]: boot["files"] for boot in result["boots"]}
    assert boots == {
        machines[0]["machine_id"]: [str(odd / "remote-good.journal")],
        machines[2]["machine_id"]: [str(odd_names[0])],
        machines[3]["machine_id"]: [str(odd_names[1])],
    }


def test_a_file_still_being_written_by_journal_remote_is_read_or_reported_without_a_hang(tmp_path: Path) -> None:
    saved = journal_remote.read_json(DEBIAN11)
    directory = tmp_path / "remote"
    directory.mkdir()
    out = directory / "remote-growing.journal"
    writer = subprocess.Popen(
        [journal_remote.JOURNAL_REMOTE, f"--output={out}", "--split-mode=none", "-"],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    assert writer.stdin is not None
    machine, boot = journal_remote.new_id(), journal_remote.new_id()
    stop = threading.Event()

    def feed() -> None:  # one entry at a time, while the directory is read
        assert writer.stdin is not None
        for entry in saved:
            if stop.is_set():
                break
            writer.stdin.write(journal_remote.export_of([entry], machine, boot, "growing"))
            writer.stdin.flush()
            time.sleep(0.002)
        writer.stdin.close()

    feeder = threading.Thread(target=feed)
    feeder.start()
    try:
        deadline = time.monotonic() + 30
        while not out.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        reads = [read_dirs(directory, timeout=60) for _ in range(3)]
        assert feeder.is_alive(), "the file was written before it was read: feed it more slowly"
    except BaseException:
        stop.set()
        raise
    finally:
        feeder.join()
        writer.wait(timeout=60)
    for result in reads:
        (source,) = result["sources"]
        assert source["files"] == 1
        assert all(problem.startswith(f"{out}: ") for problem in source["problems"]), source["problems"]
        assert [boot["machine_id"] for boot in result["boots"]] in ([], [machine])
    # Once written, the whole boot reads as the others do.
    (whole,) = read_dirs(directory)["boots"]
    assert whole["first_boot"] is True and whole["kernel"] == "5.10.0-32-cloud-amd64"
    assert len(whole["events"]) == 2


def test_boots_of_a_machine_in_rotated_files_are_one_boot_and_other_boots_of_it_are_apart(tmp_path: Path) -> None:
    saved = journal_remote.read_json(DEBIAN11)
    directory = tmp_path / "remote"
    directory.mkdir()
    machine, first, second = (journal_remote.new_id() for _ in range(3))
    half = len(saved) // 2
    rotated = directory / "remote-vm@5f0c6a1e9b3d4e7a8c2f1d0b6e4a9c37-0000000000000001-0005f0c6a1e9b3d4.journal"
    journal_remote.remote_write(journal_remote.export_of(saved[:half], machine, first, "vm"), rotated)
    current = directory / "remote-vm.journal"
    journal_remote.remote_write(journal_remote.export_of(saved[half:], machine, first, "vm"), current)
    journal_remote.remote_write(journal_remote.export_of(saved, machine, second, "vm"), current)
    boots = {boot["boot_id"]: boot for boot in read_dirs(directory)["boots"]}
    assert set(boots) == {first, second}
    assert boots[first]["files"] == [str(current), str(rotated)] or boots[first]["files"] == [
        str(rotated),
        str(current),
    ]
    for boot in boots.values():
        assert boot["machine_id"] == machine
        assert boot["first_boot"] is True and boot["kernel"] == "5.10.0-32-cloud-amd64"
        assert len(boot["events"]) == 2


def test_a_directory_that_holds_no_journal_is_absent_and_one_that_does_not_exist_is_not(tmp_path: Path) -> None:
    """An empty collector is a fleet that sent nothing (--allow-empty accepts it); a directory that does not exist is
    a mistyped path, which nothing excuses."""
    (tmp_path / "empty").mkdir()
    result = read_dirs(tmp_path / "missing", tmp_path / "empty")
    assert [(source["read"], source["absent"], source["files"]) for source in result["sources"]] == [
        (False, False, 0),
        (False, True, 0),
    ]
    assert [source["kinds"] for source in result["sources"]] == [["no-such-path"], ["no-journal-files"]]
    assert result["sources"][0]["problems"] == [f"{tmp_path / 'missing'}: no such directory."]
    assert result["sources"][1]["problems"] == [
        f"{tmp_path / 'empty'}: holds no journal files (*.journal, *.journal~)."
    ]
    assert result["boots"] == []


def test_progress_is_called_after_each_file_with_the_boots_seen(fleet_dir: tuple[Path, list[dict[str, Any]]]) -> None:
    from urandom_shim.report.journal_dir import read_journal_dirs

    directory, _machines = fleet_dir
    calls: list[tuple[int, int, int]] = []
    read_journal_dirs([str(directory)], progress=lambda *args: calls.append(args))
    assert calls == [(1, 4, 1), (2, 4, 2), (3, 4, 3), (4, 4, 4)]


def test_the_report_over_a_journal_remote_directory_names_each_machine_and_its_pep522_gate_fails(
    fleet_dir: tuple[Path, list[dict[str, Any]]],
) -> None:
    directory, machines = fleet_dir
    command = [sys.executable, "-m", "urandom_shim", "report", "--journal-dir", str(directory)]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([*command, "--json", "--fail-for", "pep522"], capture_output=True, env=env, timeout=120)
    assert done.returncode == 1, done.stderr.decode()
    report = json.loads(done.stdout)
    assert {machine["machine_id"] for machine in report["machines"]} == {m["machine_id"] for m in machines}
    assert {machine["hostname"] for machine in report["machines"]} == {m["hostname"] for m in machines}
    raised = {entry["name"]: entry["machines"] for entry in report["verdict"]["pep522"]["raise"]}
    assert raised == {"early-setup.service": 4}  # Debian 11's two report-only lines and the slice's one
    clean = subprocess.run([*command, "--fail-for", "pep524"], capture_output=True, env=env, timeout=120)
    assert clean.returncode == 0, clean.stdout.decode() + clean.stderr.decode()


def test_a_file_of_more_boots_than_are_asked_about_keeps_their_findings_and_says_which_stalls_were_not_looked_for(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from urandom_shim.report import journal_dir

    monkeypatch.setattr(journal_dir, "MAX_STALL_BOOTS", 2)
    saved = journal_remote.read_json(DEBIAN12)
    machine = journal_remote.new_id()
    out = tmp_path / "remote" / "remote-busy.journal"
    out.parent.mkdir()
    for _ in range(3):
        journal_remote.remote_write(journal_remote.export_of(saved, machine, journal_remote.new_id(), "busy"), out)
    result = journal_dir.read_journal_dirs([str(out.parent)])
    assert [len(boot["events"]) for boot in result.boots] == [2, 2, 2]  # every boot's findings count
    assert [len(boot["stalls"]) for boot in result.boots] == [1, 1, 0]
    assert [said(problem) for problem in result.sources[0]["problems"]] == [
        f"{out}: its files hold 3 boots; the stalls of 1 of them were not looked for (at most one journalctl per "
        "boot of a machine for its stalls)."
    ]


def test_a_directory_given_twice_is_read_once(fleet_dir: tuple[Path, list[dict[str, Any]]]) -> None:
    directory, machines = fleet_dir
    result = read_dirs(directory, directory)
    assert [source["files"] for source in result["sources"]] == [4, 4]
    assert sorted(len(boot["events"]) for boot in result["boots"]) == [2, 2, 2, 2]
    assert len(result["boots"]) == len(machines)
