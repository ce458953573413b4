"""Benchmark: the fleet report over 100, 300 and 1,000 machines' first boots (issue 38, rows 4 and 5; issue 45).

    python benchmarks/fleet_bench.py [--journal PATH]... [--sizes 100,300,1000] [--runs 3] [--cache DIR] [--root DIR]

Each machine is a real Debian boot's journal, written by the real ``systemd-journal-remote`` into a journal file of
its own (``remote-vm-NNNN.journal``, as a collector's ``/var/log/journal/remote`` holds them) under a fresh machine id,
boot id and hostname (``tests/journal_remote.py``). The directories are built once and cached under
``~/.cache/urandom-shim/fleet/`` (journal-remote gives each file at least 8 MiB: 1,000 machines take about 8 GiB; the
smaller sizes are hard links to the first files of the largest).

The journals, in this order of preference (the run prints which it used, and where they came from):
1. ``--journal PATH``, repeated: a saved ``journalctl -o json`` (``journal.json``, also gzipped), or a real-boot
   run's ``collected/`` directory (``tests/boot``: ``pytest -m boot``), whose ``journal.json`` is taken;
2. the journals of real-boot runs still under ``/tmp/pytest-of-*/`` (``test_a_first_boot*/collected/journal.json``),
   copied into ``~/.cache/urandom-shim/fleet/journals/`` when found, with those copied by earlier runs;
3. ``tests/data/journal-debian11-report-only.jsonl.gz``: a whole real first boot of Debian 11 (kernel 5.10, report
   mode), which the repository carries; the Debian 12 slice of ``tests/data`` only if that is missing (a note says so:
   a slice is not a boot).

Then, in the same run, interleaved, for each size: ``journalctl --directory DIR -o json > /dev/null`` (what reading
every entry costs) and ``urandom-shim report --journal-dir DIR --json > /dev/null`` (the CLI of this checkout; where it
has no ``--journal-dir``, ``read_journal_dirs`` through a small driver, and the output says so; ``--root``: another
checkout's, to compare). The report verifies each file (``journalctl --verify``) before it reads it. Each row is the
median of ``--runs`` runs; memory is the peak resident size of each command with the processes it waited for
(``ru_maxrss`` of ``wait4``, the command forked from a small interpreter of its own: see :data:`SPAWN`). Budget: the
report at most 2x journalctl, under 500 MiB, and linear: its time per machine at the largest size within 1.25x of
that at the smallest.

This prints numbers; it is not a test, because shared machines are too noisy for timed assertions.
"""

from __future__ import annotations

import argparse
import glob
import hashlib
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

import journal_remote  # noqa: E402

CACHE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "urandom-shim" / "fleet"
REAL_BOOTS = "/tmp/pytest-of-*/pytest-*/*/test_a_first_boot*/collected/journal.json"
WHOLE_BOOT = ROOT / "tests" / "data" / "journal-debian11-report-only.jsonl.gz"
SLICE = ROOT / "tests" / "data" / "journal-debian12-cloud-init.jsonl"
DRIVER = (
    "import json, sys\n"
    "from urandom_shim.report.journal_dir import read_journal_dirs\n"
    "json.dump(read_journal_dirs(sys.argv[1:]), sys.stdout)\n"
)
BUDGET_RATIO = 2.0
BUDGET_MIB = 500
BUDGET_LINEAR = 1.25


def journals(given: list[str], cache: Path) -> tuple[list[Path], list[str]]:
    """The journals to build machines from, and notes on where they came from."""
    notes = []
    if given:
        found = []
        for path in map(Path, given):
            if path.is_dir():
                path = path / "journal.json"
            if not path.is_file():
                sys.exit(f"fleet_bench: {path}: no such journal")
            found.append(path)
        return found, [f"journals given on the command line: {len(found)}"]
    keep = cache / "journals"
    keep.mkdir(parents=True, exist_ok=True)
    copied = 0
    for real in sorted(glob.glob(REAL_BOOTS)):
        data = Path(real).read_bytes()
        name = f"real-boot-{hashlib.sha256(data).hexdigest()[:16]}.json"
        if not (keep / name).exists():
            (keep / name).write_bytes(data)
            copied += 1
    cached = sorted(keep.glob("*.json"))
    if cached:
        notes.append(f"journals of real-boot runs (tests/boot) kept in {keep}: {len(cached)} ({copied} new from /tmp)")
        return cached, notes
    if WHOLE_BOOT.exists():
        notes.append(
            f"no real-boot run's journal here (run `pytest -m boot`, or give --journal): using {WHOLE_BOOT.name}, "
            "the repository's whole Debian 11 first boot"
        )
        return [WHOLE_BOOT], notes
    notes.append(
        f"NOTE: only the slice {SLICE.name} (37 entries, not a whole boot): the figures understate a boot's cost"
    )
    return [SLICE], notes


def describe(path: Path) -> str:
    entries = journal_remote.read_json(path)
    kernel = next(
        (
            str(entry.get("MESSAGE")).split(" ")[2]
            for entry in entries
            if str(entry.get("MESSAGE", "")).startswith("Linux version ")
        ),
        "?",
    )
    return f"{path} ({len(entries)} entries, kernel {kernel})"


def build(cache: Path, sources: list[Path], sizes: list[int]) -> dict[int, Path]:
    """The directory of each size, built once per set of journals: the largest written by journal-remote, the
    others hard links to its first files."""
    digest = hashlib.sha256()
    for path in sources:
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    home = cache / f"machines-{digest.hexdigest()[:16]}"
    largest = max(sizes)
    full = home / f"m{largest}"
    done = home / f"m{largest}.complete"
    if not done.exists():
        shutil.rmtree(full, ignore_errors=True)
        started = time.monotonic()
        print(f"building {largest} machines in {full} (about a minute per 1,000)...", flush=True)
        journal_remote.fleet(full, [journal_remote.read_json(path) for path in sources], largest)
        done.write_text(f"{largest} machines built in {time.monotonic() - started:.0f} s\n")
    dirs = {}
    files = sorted(full.glob("*.journal"))
    for size in sizes:
        if size == largest:
            dirs[size] = full
            continue
        part = home / f"m{size}"
        if len(list(part.glob("*.journal"))) != size:
            shutil.rmtree(part, ignore_errors=True)
            part.mkdir(parents=True)
            for file in files[:size]:
                os.link(file, part / file.name)
        dirs[size] = part
    return dirs


def report_command(directory: Path, root: Path = ROOT) -> tuple[list[str], str]:
    """The report's command over ``directory``, and what it is."""
    env = {**os.environ, "PYTHONPATH": str(root)}
    helped = subprocess.run(
        [sys.executable, "-m", "urandom_shim", "report", "--help"], capture_output=True, text=True, env=env
    )
    if "--journal-dir" in helped.stdout:
        command = [sys.executable, "-m", "urandom_shim", "report", "--journal-dir", str(directory), "--json"]
        return command, f"urandom-shim report --journal-dir DIR --json ({root})"
    return [sys.executable, "-c", DRIVER, str(directory)], "read_journal_dirs through a driver (no CLI option yet)"


#: Runs a command and prints its peak resident size. The command is forked from this small interpreter, not from the
#: benchmark: a child's ``ru_maxrss`` starts at the resident size of the process it was forked from (Linux counts
#: the parent's pages the child held until its exec), and the benchmark holds the journals it built.
SPAWN = (
    "import os, sys\n"
    "pid = os.fork()\n"
    "if pid == 0:\n"
    "    os.dup2(os.open(os.devnull, os.O_WRONLY), 1)\n"
    "    os.execvp(sys.argv[1], sys.argv[1:])\n"
    "_pid, status, usage = os.wait4(pid, 0)\n"
    "print(usage.ru_maxrss, status >> 8 if status & 0x7F == 0 else -(status & 0x7F))\n"
)


def timed(command: list[str], root: Path = ROOT) -> tuple[float, float]:
    """(seconds, peak MiB) of ``command``, its output thrown away."""
    env = {**os.environ, "PYTHONPATH": str(root)}
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-I", "-S", "-c", SPAWN, *command], capture_output=True, text=True, env=env, check=False
    )
    elapsed = time.monotonic() - started
    maxrss, code = (int(word) for word in done.stdout.split())
    if code not in (0, 1, 3):
        sys.exit(f"fleet_bench: {command[:4]} failed ({code}): {done.stderr[:500]}")
    return elapsed, maxrss / 1024


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--journal", action="append", default=[], help="a journal.json or a collected/ directory")
    parser.add_argument("--sizes", default="100,300,1000")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--cache", type=Path, default=CACHE)
    parser.add_argument("--root", type=Path, default=ROOT, help="the checkout whose report is measured")
    args = parser.parse_args(argv)
    why = journal_remote.available()
    if why is not None:
        print(f"fleet_bench: {why}", file=sys.stderr)
        return 2
    sizes = sorted(int(size) for size in args.sizes.split(","))
    sources, notes = journals(args.journal, args.cache)
    for note in notes:
        print(note)
    for path in sources:
        print("  " + describe(path))
    dirs = build(args.cache, sources, sizes)
    _command, what = report_command(dirs[sizes[0]], args.root)
    version = subprocess.run(["journalctl", "--version"], capture_output=True, text=True).stdout.splitlines()[0]
    print(f"report: {what}; journalctl: {version}")
    print(f"{args.runs} interleaved runs per size, medians\n")
    print(f"{'machines':>8}  {'journalctl s':>12}  {'report s':>8}  {'ratio':>5}  {'report MiB':>10}  {'jctl MiB':>8}  "
          f"{'report ms/machine':>17}  {'jctl ms/machine':>15}")  # fmt: skip
    rows: dict[int, dict[str, Any]] = {}
    for size in sizes:
        directory = dirs[size]
        baseline = ["journalctl", "--directory", str(directory), "-o", "json", "--no-pager"]
        report, _what = report_command(directory, args.root)
        timed(baseline)  # warm the page cache: both sides read the same files
        base_runs, report_runs = [], []
        for _ in range(args.runs):
            base_runs.append(timed(baseline))
            report_runs.append(timed(report, args.root))
        row = {
            "base": statistics.median(run[0] for run in base_runs),
            "report": statistics.median(run[0] for run in report_runs),
            "base_mib": max(run[1] for run in base_runs),
            "report_mib": max(run[1] for run in report_runs),
        }
        rows[size] = row
        print(
            f"{size:>8}  {row['base']:>12.2f}  {row['report']:>8.2f}  {row['report'] / row['base']:>5.2f}  "
            f"{row['report_mib']:>10.1f}  {row['base_mib']:>8.1f}  {1000 * row['report'] / size:>17.2f}  "
            f"{1000 * row['base'] / size:>15.2f}",
            flush=True,
        )
    small, large = sizes[0], sizes[-1]
    linear = (rows[large]["report"] / large) / (rows[small]["report"] / small)
    worst_ratio = max(row["report"] / row["base"] for row in rows.values())
    peak = max(row["report_mib"] for row in rows.values())
    print()
    print(f"ratio (report / journalctl), worst size: {worst_ratio:.2f}x   budget <= {BUDGET_RATIO:g}x   "
          f"{'ok' if worst_ratio <= BUDGET_RATIO else 'OVER'}")  # fmt: skip
    verdict = "ok" if peak < BUDGET_MIB else "OVER"
    print(f"peak memory of the report: {peak:.1f} MiB   budget < {BUDGET_MIB} MiB   {verdict}")
    print(f"time per machine, {large} vs {small} machines: {linear:.2f}x   budget <= {BUDGET_LINEAR:g}x (linear)   "
          f"{'ok' if linear <= BUDGET_LINEAR else 'OVER'}")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
