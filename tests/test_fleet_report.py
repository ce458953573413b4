"""The report over a fleet's events (issue 38): every finding attributed to its machine and boot, the verdict with
machine and boot counts, the gate failing if any machine would break, a machine speaking only for itself, the text
fitting a screen for a thousand machines, what each call would do with its fixes, and `nothing read` said at the
top. The journal directories' half is tests/test_fleet_journal.py; the real collector's, tests/boot/.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import pty
import subprocess
import sys
from pathlib import Path
from typing import Any

import urandom_shim
from urandom_shim.cli import main as cli

DATA = Path(__file__).resolve().parent / "data"
SAMPLE_EVENTS = DATA / "events-sample.jsonl"
EXIT_PROBLEMS, EXIT_NOTHING_READ = 1, 3


def report(*args: str) -> tuple[int, str, str]:
    """``urandom-shim report ARGS`` in this process: (exit status, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.main(["report", *args])
    return code, out.getvalue(), err.getvalue()


def sample() -> list[dict[str, Any]]:
    return [json.loads(line) for line in SAMPLE_EVENTS.read_text().splitlines() if line.strip()]


def machine(number: int, **more: Any) -> dict[str, Any]:
    """The ids a shim on machine ``number`` writes into its records."""
    return {
        "machine_id": f"{number:032x}",
        "boot_id": f"{number + 10**6:032x}",
        "hostname": f"web-{number}",
        "image": "debian 12",
        "kernel": "6.1.0-28-cloud-amd64",
        "first_boot": True,
        **more,
    }


def write(path: Path, records: list[dict[str, Any]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as file:
        for record in records:
            file.write("\n" + json.dumps(record) + "\n")
    return path


#: What the shim records as every policy's outcome for a call that each one leaves fine (seeding `random`), and for
#: one whose program a [[program]] rule keeps on pep524 (it waits, whatever the machine's policy).
ALL_FINE = {"native": "fine", "pep524": "fine", "pep522": "fine", "legacy": "fine"}
ALL_WAIT = {"native": "wait", "pep524": "wait", "pep522": "wait", "legacy": "wait"}


def early_setup_only() -> list[dict[str, Any]]:
    """early-setup.service's records of the sample: an `os.urandom` that pep522 would make raise."""
    return [record for record in sample() if record.get("unit") == "early-setup.service"]


def verdict_entry(report: dict[str, Any], policy: str, outcome: str, name: str) -> dict[str, Any] | None:
    return next((entry for entry in report["verdict"][policy][outcome] if entry["name"] == name), None)


def test_a_directory_of_machines_is_one_verdict_with_counts(tmp_path: Path) -> None:
    fleet = tmp_path / "fleet"
    for number in range(6):
        records = sample() if number < 2 else early_setup_only()
        later = number == 5  # a later boot of machine 4: the same machine, another boot
        ids = machine(4, boot_id=f"{99:032x}", first_boot=False) if later else machine(number)
        write(fleet / f"host-{number}" / "events.jsonl", [dict(record, **ids) for record in records])
    code, out, err = report("--events", str(fleet), "--json", "--fail-for", "pep522")
    assert code == EXIT_PROBLEMS and not err, err
    found = json.loads(out)
    assert found["v"] == 3 and found["read"]
    assert [m["hostname"] for m in found["machines"]] == [f"web-{n}" for n in range(5)]
    four = next(m for m in found["machines"] if m["hostname"] == "web-4")
    assert (four["boots"], four["first_boot"], four["image"]) == (2, True, "debian 12"), four
    assert verdict_entry(found, "pep522", "raise", "early-setup.service") == {
        "name": "early-setup.service", "machines": 5, "boots": 6, "first_boots": 5, "later_boots": 1,
    }  # fmt: skip
    assert verdict_entry(found, "pep522", "raise", "legacy-tool.py") == {
        "name": "legacy-tool.py", "machines": 2, "boots": 2, "first_boots": 2, "later_boots": 0,
    }  # fmt: skip
    assert (found["fleet"]["machines"], found["fleet"]["boots"], found["fleet"]["first_boots"]) == (5, 6, 5)
    early = next(p for p in found["programs"] if p["name"] == "early-setup.service")
    (urandom,) = [call for call in early["calls"] if call["site"] == "os.urandom"]
    assert (urandom["machines"], urandom["boots"]) == (5, 6)
    assert urandom["under"] == {"native": "wait", "pep524": "wait", "pep522": "raise", "legacy": "weak"}
    # Under pep524 nothing raises or gets weak bytes on any machine: the gate passes.
    assert report("--events", str(fleet), "--fail-for", "pep524")[0] == 0


def test_the_text_fits_a_screen_for_a_thousand_machines(tmp_path: Path) -> None:
    fleet = tmp_path / "fleet"
    (call,) = [r for r in early_setup_only() if r["site"] == "os.urandom" and r.get("event") == "call"]
    for number in range(1000):
        # 40 programs over the fleet, each on 25 machines; each machine's file holds its program's call.
        program = f"setup-{number % 40}.service"
        write(fleet / f"m{number:04}.jsonl", [dict(call, unit=program, **machine(number))])
    code, out, _err = report("--events", str(fleet))
    assert code == 0
    lines = out.splitlines()
    assert lines[0].endswith("on 1000 machines (1000 boots, 1000 first boots)"), lines[0]
    assert "and 35 more programs (--json lists them all)" in out
    assert len(lines) <= 50, len(lines)  # a screen
    assert "under pep522, 40 programs would raise BlockingIOError: setup-0.service (25 machines)" in out
    assert "and 35 more" in out  # the verdict names five, then counts
    code, out, _err = report("--events", str(fleet), "--json")
    assert len(json.loads(out)["programs"]) == 40 and len(json.loads(out)["machines"]) == 1000


def test_a_machine_that_forges_anothers_ids_can_add_but_never_take_away(tmp_path: Path) -> None:
    fleet = tmp_path / "fleet"
    honest = [dict(record, **machine(1)) for record in early_setup_only()]
    write(fleet / "honest.jsonl", honest)
    # Another machine writes records under machine 1's ids: the same calls said to be exempt, to be fine, to have
    # happened after the CRNG was ready; and a finding of its own under machine 2's ids.
    forged = []
    for record in honest:
        forged.append(
            dict(
                record, policy="pep524", policy_source="/etc/urandom-shim.toml [[program]] match = 'x'", under=ALL_WAIT
            )
        )
        forged.append(dict(record, site="random.Random()", would="untouched", under=ALL_FINE))
    forged.append(dict(honest[-1], unit="sshd-keygen.service", **machine(2)))
    write(fleet / "forger.jsonl", forged)
    code, out, _err = report("--events", str(fleet), "--json", "--fail-for", "pep522")
    found = json.loads(out)
    assert code == EXIT_PROBLEMS
    assert verdict_entry(found, "pep522", "raise", "early-setup.service") == {
        "name": "early-setup.service", "machines": 1, "boots": 1, "first_boots": 1, "later_boots": 0,
    }  # fmt: skip
    # What the forger added stands, as its own finding under the ids it claimed.
    assert verdict_entry(found, "pep522", "raise", "sshd-keygen.service") is not None
    # Without the honest file, the forged exemption is the only word on early-setup: it then waits under pep522.
    (fleet / "honest.jsonl").unlink()
    code, out, _err = report("--events", str(fleet), "--json")
    found = json.loads(out)
    assert verdict_entry(found, "pep522", "wait", "early-setup.service") is not None


def test_a_program_rule_is_the_exception_a_fleet_configures(tmp_path: Path) -> None:
    """A program exempted by a [[program]] rule keeps its rule's policy under every machine-wide one: its events say
    so, and the gate passes for it; the rest of the fleet still decides."""
    rule = {
        "policy": "pep524",
        "policy_source": "/etc/urandom-shim.toml (machine file) [[program]] match = 'early-setup.py'",
    }
    exempt = [dict(r, under=ALL_WAIT if r["site"] == "os.urandom" else ALL_FINE) for r in early_setup_only()]
    fleet = tmp_path / "fleet"
    for number in range(3):
        write(fleet / f"m{number}.jsonl", [dict(r, **rule, **machine(number)) for r in exempt])
    code, out, _err = report("--events", str(fleet), "--fail-for", "pep522")
    assert code == 0, out
    assert "its [[program]] rule keeps it on pep524 under each" in out
    assert "under pep522, 1 program would wait for the CRNG: early-setup.service (3 machines)" in out
    write(fleet / "m3.jsonl", [dict(r, **machine(3)) for r in early_setup_only()])  # one machine without the rule
    assert report("--events", str(fleet), "--fail-for", "pep522")[0] == EXIT_PROBLEMS


def test_files_that_name_no_machine_are_each_a_machine_and_bad_files_are_skipped(tmp_path: Path) -> None:
    fleet = tmp_path / "fleet"
    write(fleet / "old-a.jsonl", early_setup_only())  # an older shim's records: no machine id
    write(fleet / "old-b.jsonl", early_setup_only())
    (fleet / "garbage.jsonl").write_bytes(b"\x00\xff not json\n" * 10)
    (fleet / "unreadable.jsonl").write_text("{}\n")
    os.chmod(fleet / "unreadable.jsonl", 0)
    code, out, _err = report("--events", str(fleet), "--json", "--fail-for", "pep522")
    found = json.loads(out)
    assert code == EXIT_PROBLEMS
    assert verdict_entry(found, "pep522", "raise", "early-setup.service")["machines"] == 2  # type: ignore[index]
    problems = " ".join(p["problem"] for p in found["sources"]["events"]["problems"])
    assert "no record in it could be read" in problems, problems
    if os.geteuid() != 0:  # root reads a file of mode 0 anyway
        assert "cannot be read" in problems, problems
    _code, out, _err = report("--events", str(fleet))
    assert f"\n  {fleet / 'garbage.jsonl'}: no record in it could be read (10 not a JSON object)\n" in out, out


def test_each_call_says_what_every_policy_would_do_and_how_to_fix_it(tmp_path: Path) -> None:
    """One machine's report, as a new user reads it: each call with what each policy would do, and for a program
    that would raise, the fixes that fit it."""
    code, out, _err = report("--events", str(SAMPLE_EVENTS), "--no-journal")
    assert code == 0
    lines = out.splitlines()
    row = next(i for i, line in enumerate(lines) if line.strip().startswith("os.urandom(16)"))
    assert lines[row + 1].strip() == "would: native waits, pep524 waits, pep522 raises, legacy weak bytes", lines[
        row + 1
    ]
    assert "call secrets.wait_for_system_rng() once before /tmp/sample/sbin/early-setup.py:3" in out
    assert "order early-setup.service after systemd-random-seed.service" in out
    assert 'exempt it in the machine\'s file: [[program]] match = "early-setup.py", policy = "pep524"' in out
    seeding = next(i for i, line in enumerate(lines) if line.strip().startswith("Random() seeding"))
    assert lines[seeding + 1].strip() == "would: nothing to see under every policy"
    assert lines[0] == "urandom-shim report: randomness asked for before the kernel CRNG was ready"  # as before


def test_nothing_read_is_said_at_the_top_not_as_a_clean_verdict(tmp_path: Path) -> None:
    code, out, _err = report("--events", str(tmp_path / "missing.jsonl"), "--no-journal")
    assert code == 0
    lines = out.splitlines()
    assert lines[1].strip().startswith("nothing read:"), lines[:3]
    assert "no program would raise" not in out and "none: nothing read" in out
    code, out, _err = report("--events", str(tmp_path), "--events", str(tmp_path))  # an empty fleet
    assert "nothing read:" in out.splitlines()[1] and "no program would raise" not in out
    assert report("--events", str(tmp_path), "--events", str(tmp_path), "--fail-for", "pep522")[0] == EXIT_NOTHING_READ


def test_no_terminal_escape_from_any_field(tmp_path: Path) -> None:
    fleet = tmp_path / "fleet"
    evil = "\x1b]0;owned\x07\x1b[2J"
    ids = machine(1, hostname=f"web{evil}", image=f"debian{evil}", kernel=f"6.1{evil}")
    write(fleet / "m.jsonl", [dict(r, unit=f"x{evil}.service", **ids) for r in early_setup_only()])
    write(fleet / "n.jsonl", [dict(r, **machine(2)) for r in early_setup_only()])
    _code, out, _err = report("--events", str(fleet))
    assert "\x1b" not in out and "\x07" not in out and "\\x1b" in out


def test_a_progress_line_only_on_a_terminal(tmp_path: Path) -> None:
    fleet = tmp_path / "fleet"
    for number in range(3):
        write(fleet / f"m{number}.jsonl", [dict(r, **machine(number)) for r in early_setup_only()])
    command = [sys.executable, "-m", "urandom_shim", "report", "--events", str(fleet), "--json"]
    env = dict(os.environ, PYTHONPATH=str(Path(urandom_shim.__file__).resolve().parents[1]))
    piped = subprocess.run(command, capture_output=True, text=True, env=env, timeout=60)
    assert piped.returncode == 0 and piped.stderr == "", piped.stderr
    # stderr on a terminal (stdout still piped): the progress line, then cleared.
    main, other = pty.openpty()
    try:
        done = subprocess.run(command, stdout=subprocess.PIPE, stderr=other, env=env, timeout=60)
        os.close(other)
        seen = b""
        with contextlib.suppress(OSError):
            while chunk := os.read(main, 4096):
                seen += chunk
    finally:
        os.close(main)
    assert done.returncode == 0
    assert b"3/3 files read, boots found: 3" in seen and seen.endswith(b"\r\x1b[K"), seen
    assert json.loads(done.stdout)["fleet"]["machines"] == 3


def test_the_gate_never_passes_a_fleet_whose_files_were_not_all_read(tmp_path: Path) -> None:
    """One machine's file that can't be read is a machine whose findings are unknown: with --fail-for, exit 3 even
    when every machine read is clean (exit 1 still wins where a machine read would break)."""
    fleet = tmp_path / "fleet"
    seeding = [r for r in sample() if r["site"] == "random._inst"]  # nothing to see under any policy
    write(fleet / "clean.jsonl", [dict(r, **machine(1)) for r in seeding])
    assert report("--events", str(fleet), "--fail-for", "pep522")[0] == 0
    (fleet / "garbage.jsonl").write_bytes(b"\x00" * 64 + b"\n")
    code, _out, err = report("--events", str(fleet), "--fail-for", "pep522")
    assert code == EXIT_NOTHING_READ, err
    assert "was not read in full (" in err and "garbage.jsonl: no record in it could be read" in err, err
    write(fleet / "breaks.jsonl", [dict(r, **machine(2)) for r in early_setup_only()])
    assert report("--events", str(fleet), "--fail-for", "pep522")[0] == EXIT_PROBLEMS


def test_a_journalctl_that_hangs_leaves_the_directory_unread_and_the_gate_shut(tmp_path: Path) -> None:
    """A journalctl that times out before its first entry read nothing of that file: the directory is not read, and
    the gate exits 3 instead of passing a fleet it never saw (hostile review of issue 38)."""
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "journalctl").write_text("#!/bin/sh\nexec sleep 60\n")
    (fake / "journalctl").chmod(0o755)
    collector = tmp_path / "remote"
    collector.mkdir()
    (collector / "remote-a.journal").write_bytes(b"LPKSHHRH" + b"\x00" * 248)
    code = (
        "import sys\n"
        "from urandom_shim.report import journal_dir\n"
        "journal_dir.read_journal_dirs.__kwdefaults__['timeout'] = 1.0\n"
        "from urandom_shim.cli.main import main\n"
        "sys.exit(main(['report', '--journal-dir', sys.argv[1], '--fail-for', 'pep522']))\n"
    )
    env = dict(os.environ, PATH=f"{fake}:{os.environ['PATH']}")
    env["PYTHONPATH"] = str(Path(urandom_shim.__file__).resolve().parents[1])
    done = subprocess.run(
        [sys.executable, "-c", code, str(collector)], capture_output=True, text=True, env=env, timeout=60
    )
    assert done.returncode == EXIT_NOTHING_READ, done.stdout + done.stderr
    assert "did not finish within 1 s" in done.stderr + done.stdout, done.stdout + done.stderr
    assert "nothing read:" in done.stdout and "Traceback" not in done.stderr, done.stdout


def test_a_saved_boot_and_a_fleet_do_not_go_together(tmp_path: Path) -> None:
    """--journal-file with a fleet's sources was silently ignored: now a usage error naming both."""
    saved = DATA / "journal-debian12-cloud-init.jsonl"
    for fleet in (["--events", str(tmp_path)], ["--events", str(SAMPLE_EVENTS), "--events", str(SAMPLE_EVENTS)]):
        code, _out, err = report(*fleet, "--journal-file", str(saved))
        assert code == 2 and "--journal-file reads one saved boot" in err, err


def test_call_sites_shown_worst_first_and_the_fix_names_the_one_on_most_machines(tmp_path: Path) -> None:
    """newcomer3's review: over a fleet, the three call sites shown were the earliest, so a program that seeds
    `random` before its `os.urandom()` showed three harmless sites and hid the one that breaks."""
    base = early_setup_only()[1]  # its os.urandom(16)
    harmless = dict(base, call="import random", site="random._inst", would="best-effort", under=ALL_FINE)
    for number in range(1, 4):
        early = [
            dict(harmless, caller=f"/usr/local/sbin/early-setup.py:{line}", boot_time=1.0 + line / 100)
            for line in (1, 2, 3, 4)
        ]
        breaks = [dict(base, caller="/usr/local/sbin/early-setup.py:90", boot_time=5.0)]
        if number == 1:
            breaks.insert(0, dict(base, caller="/usr/local/sbin/early-setup.py:50", boot_time=4.0))
        write(tmp_path / f"m{number}.jsonl", [dict(r, **machine(number)) for r in early + breaks])
    code, out, _err = report("--events", str(tmp_path), "--fail-for", "pep522")
    assert code == EXIT_PROBLEMS
    lines = out.splitlines()
    first = next(i for i, line in enumerate(lines) if line.startswith("early-setup.service:"))
    assert "early-setup.py:90" in lines[first + 1] and "3 machines" in lines[first + 1], lines[first : first + 8]
    assert "early-setup.py:50" in lines[first + 3]
    assert "and 3 more call sites" in out
    assert "secrets.wait_for_system_rng() before /usr/local/sbin/early-setup.py:90;" in out


def test_clean_machines_empty_events_files_pass_with_allow_empty(tmp_path: Path) -> None:
    """newcomer3's review: the tmpfiles.d snippet creates every machine's events file, so a clean machine's is empty;
    with --allow-empty (as for one machine's file) it is a boot without events, not a file that could not be read."""
    (tmp_path / "clean1.jsonl").write_text("")
    (tmp_path / "clean2.jsonl").write_text("\n\n")
    assert report("--events", str(tmp_path), "--fail-for", "pep522")[0] == EXIT_NOTHING_READ
    assert report("--events", str(tmp_path), "--fail-for", "pep522", "--allow-empty")[0] == 0
    write(tmp_path / "broken.jsonl", [dict(r, **machine(1)) for r in early_setup_only()])
    assert report("--events", str(tmp_path), "--fail-for", "pep522", "--allow-empty")[0] == EXIT_PROBLEMS
    (tmp_path / "broken.jsonl").unlink()
    seeds = dict(early_setup_only()[0], call="import random", site="random._inst", would="best-effort")
    write(tmp_path / "fine.jsonl", [dict(seeds, **machine(2))])
    assert report("--events", str(tmp_path), "--fail-for", "pep522", "--allow-empty")[0] == 0
    assert report("--events", str(tmp_path), "--fail-for", "pep522")[0] == EXIT_NOTHING_READ
    (tmp_path / "torn.jsonl").write_text('{"v":1,"event"')  # not empty: still a problem, --allow-empty or not
    assert report("--events", str(tmp_path), "--fail-for", "pep522", "--allow-empty")[0] == EXIT_NOTHING_READ
