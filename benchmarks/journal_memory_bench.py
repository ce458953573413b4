"""Benchmark: the peak memory of ``urandom-shim report --journal-dir`` over one machine's large journal (issue 45).

    python benchmarks/journal_memory_bench.py [--entries 12000] [--runs 3] [--cache DIR] [--root CHECKOUT] [--bounds]

Each case is a directory of real journal files, written by the real ``systemd-journal-remote`` (``tests/journal_remote
.py``) from the repository's whole Debian 11 first boot, with a unit added that wrote ``--entries`` of the shim's
report-only lines (one process each, from a Python interpreter in a system unit, as a unit restarted in a loop writes
them: every one is selected, and every one is a finding):

- ``one``: that journal, one file (about 16 MiB for 12,000 lines);
- ``rotated``: the same machine's journal as ``remote-vm.journal`` and two rotated files beside it
  (``remote-vm@....journal``), each holding the whole boot again: one file set of three;
- ``unselected``: ``one`` with ten times as many entries that the report does not select (a chatty unit's lines),
  so the file is several times larger for the same findings.

The lines come from twelve call sites of one script (``--distinct``: each from a script of its own, so that the
report has as many call sites to show), with callers of 600 characters under ``--long`` (lines near the shim's 1,000).

``--bounds`` measures instead what bounds the report's memory whatever its inputs hold (the byte budget of the
findings it holds, :data:`urandom_shim.report.sources.MAX_HELD`), on the hostile review's three inputs:

- ``events-tiny``: one 64 MiB events file of records of two fields (``{"v":1,"call":"a"}``: the most records a byte
  can make);
- ``events-dir``: ``--events DIR`` of six 60 MiB files of records of 60 KiB each (long ``argv``), 360 MiB in all;
- ``journal-dir``: ``--journal-dir`` of three machines' files, each holding 90,000 of the shim's lines of about 1,000
  characters, each from a call site of its own (270,000 findings).

Each row is the largest peak resident size of ``--runs`` runs of ``urandom-shim report --journal-dir DIR --json >
/dev/null`` with the checkout ``--root`` (default: this one) on ``PYTHONPATH``: the report's own process
(``RUSAGE_SELF``), and with the journalctls it ran (``ru_maxrss`` of ``wait4``, forked from a small interpreter of its
own, see :data:`SPAWN`; a journalctl's resident size counts the pages of the journal file it maps, which are the
page cache's, not memory of its own); and the time of the median run. The journal files are built once and cached
under ``~/.cache/urandom-shim/memory/``.

This prints numbers; it is not a test, because shared machines are too noisy for timed assertions.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, NamedTuple

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

import journal_remote  # noqa: E402

CACHE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "urandom-shim" / "memory"
WHOLE_BOOT = ROOT / "tests" / "data" / "journal-debian11-report-only.jsonl.gz"
#: A report-only line of the shim, as ``_events.describe`` wrote it in version 1's wording (the benchmark must build
#: the same files for every checkout it measures).
LINE = (
    "urandom-shim: report-only: os.urandom(32) called from {directory}/{script}.py:{line} before the kernel CRNG "
    "was ready, 11.{n:04d} s after boot: left it to the interpreter (0.00 s); policy 'pep522' (from "
    "/etc/urandom-shim.toml (machine file)) would have raised BlockingIOError."
)


def shim_lines(count: int, start_us: int, realtime_us: int, directory: str, distinct: bool) -> list[dict[str, Any]]:
    """``count`` entries of the shim's lines, each from a process of its own in ``loop.service``, its script in
    ``directory``: ``loop.py``, twelve call sites of it, or a script of each line's own (``distinct``)."""
    entries = []
    for n in range(count):
        entries.append(
            {
                "MESSAGE": LINE.format(
                    directory=directory, script=f"loop-{n}" if distinct else "loop", n=n % 10000, line=n % 12 + 1
                ),
                "_TRANSPORT": "stdout",
                "_EXE": "/usr/bin/python3.9",
                "_COMM": "python3",
                "_CMDLINE": f"/usr/bin/python3 /usr/local/sbin/loop.py --run {n}",
                "_SYSTEMD_UNIT": "loop.service",
                "SYSLOG_IDENTIFIER": "loop",
                "_PID": str(1000 + n),
                "_UID": "0",
                "_GID": "0",
                "PRIORITY": "6",
                "__MONOTONIC_TIMESTAMP": str(start_us + n * 100),
                "__REALTIME_TIMESTAMP": str(realtime_us + n * 100),
            }
        )
    return entries


def chatter(count: int, start_us: int, realtime_us: int) -> list[dict[str, Any]]:
    """``count`` entries the report selects none of."""
    return [
        {
            "MESSAGE": f"chatty.service: request {n} served in {n % 1000} ms from worker {n % 16} " + "x" * 200,
            "_TRANSPORT": "stdout",
            "_EXE": "/usr/bin/chatty",
            "_COMM": "chatty",
            "_SYSTEMD_UNIT": "chatty.service",
            "_PID": "999",
            "_UID": "0",
            "__MONOTONIC_TIMESTAMP": str(start_us + n * 10),
            "__REALTIME_TIMESTAMP": str(realtime_us + n * 10),
        }
        for n in range(count)
    ]


def build(cache: Path, entries: int, long: bool, distinct: bool) -> dict[str, Path]:
    """The case directories, built once per size and kind of line."""
    directory = "/usr/local/sbin" + ("/" + "d" * 99) * 6 * long
    boot = journal_remote.read_json(WHOLE_BOOT)
    last = boot[-1]
    start, realtime = int(last["__MONOTONIC_TIMESTAMP"]) + 1, int(last["__REALTIME_TIMESTAMP"]) + 1
    key = hashlib.sha256(f"{WHOLE_BOOT.stat().st_size}-{entries}-{long}-{distinct}-v2".encode()).hexdigest()[:12]
    home = cache / f"cases-{entries}{'-long' * long}{'-distinct' * distinct}-{key}"
    done = home / "complete"
    cases = {name: home / name for name in ("one", "rotated", "unselected")}
    if done.exists():
        return cases
    shutil.rmtree(home, ignore_errors=True)
    for path in cases.values():
        path.mkdir(parents=True)
    machine, boot_id = journal_remote.new_id(), journal_remote.new_id()
    lines = boot + shim_lines(entries, start, realtime, directory, distinct)
    export = journal_remote.export_of(lines, machine, boot_id, "vm")
    print(f"building the cases in {home}...", flush=True)
    journal_remote.remote_write(export, cases["one"] / "remote-vm.journal")
    for number in (1, 2):
        name = f"remote-vm@{'0' * 31}{number}-{number:016x}-{number:016x}.journal"
        journal_remote.remote_write(export, cases["rotated"] / name)
    journal_remote.remote_write(export, cases["rotated"] / "remote-vm.journal")
    later = start + entries * 10 * 10
    noisy = boot + chatter(entries * 10, start, realtime) + shim_lines(entries, later, realtime, directory, distinct)
    journal_remote.remote_write(
        journal_remote.export_of(noisy, machine, boot_id, "vm"), cases["unselected"] / "remote-vm.journal"
    )
    done.write_text("built\n")
    return cases


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


#: The report, which says at its end how large it grew itself (without the journalctls it ran).
DRIVER = (
    "import os, resource, sys\n"
    "from urandom_shim.cli.main import main\n"
    "code = main(sys.argv[1:])\n"
    "sys.stdout.flush()\n"
    "os.write(2, b'\\nself-maxrss %d\\n' % resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)\n"
    "sys.exit(code)\n"
)


class Run(NamedTuple):
    seconds: float
    peak: float  # MiB, the report and every journalctl it ran
    own: float  # MiB, the report's own process
    code: int


def measured(directory: Path, root: Path, args: tuple[str, ...] = ()) -> Run:
    """One ``report --journal-dir DIRECTORY --json`` (or ``report ARGS --json``) of the checkout ``root``, its output
    thrown away."""
    env = {**os.environ, "PYTHONPATH": str(root)}
    asked = args or ("--journal-dir", str(directory))
    command = [sys.executable, "-c", DRIVER, "report", *asked, "--json"]
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-I", "-S", "-c", SPAWN, *command], capture_output=True, text=True, env=env, check=False
    )
    elapsed = time.monotonic() - started
    maxrss, code = (int(word) for word in done.stdout.split())
    own = [line.split()[1] for line in done.stderr.splitlines() if line.startswith("self-maxrss ")]
    if code not in (0, 1, 3) or not own:
        sys.exit(f"journal_memory_bench: the report of {root} failed ({code}): {done.stderr[:500]}")
    return Run(elapsed, maxrss / 1024, int(own[0]) / 1024, code)


def build_bounds(cache: Path) -> dict[str, tuple[Path, tuple[str, ...]]]:
    """The ``--bounds`` cases: (what is on disk, the report's arguments), built once."""
    import json

    home = cache / "bounds-v1"
    cases = {
        "events-tiny": (home / "events-tiny.jsonl", ("--events", str(home / "events-tiny.jsonl"), "--no-journal")),
        "events-dir": (home / "events-dir", ("--events", str(home / "events-dir"))),
        "journal-dir": (home / "journal-dir", ("--journal-dir", str(home / "journal-dir"))),
    }
    if (home / "complete").exists():
        return cases
    shutil.rmtree(home, ignore_errors=True)
    home.mkdir(parents=True)
    print(f"building the bounds' cases in {home}...", flush=True)
    tiny = b'{"v":1,"call":"a"}\n'
    (home / "events-tiny.jsonl").write_bytes(tiny * ((64 * 2**20 - 1) // len(tiny)))
    base = json.loads(Path(ROOT / "tests" / "data" / "events-sample.jsonl").read_text().splitlines()[1])
    (home / "events-dir").mkdir()
    for number in range(6):
        with open(home / "events-dir" / f"m{number}.jsonl", "w", encoding="ascii") as out:
            size = pid = 0
            while size < 60 * 2**20:
                record = dict(base, pid=pid, argv=[f"{number}-{pid}-{arg}-" + "A" * 1990 for arg in range(30)])
                line = "\n" + json.dumps(record) + "\n"
                out.write(line)
                size, pid = size + len(line), pid + 1
    (home / "journal-dir").mkdir()
    boot = journal_remote.read_json(WHOLE_BOOT)
    last = boot[-1]
    start, realtime = int(last["__MONOTONIC_TIMESTAMP"]) + 1, int(last["__REALTIME_TIMESTAMP"]) + 1
    directory = "/srv/" + "p" * 700
    for number in range(3):
        lines = shim_lines(90_000, start, realtime, f"{directory}/{number}", distinct=True)
        export = journal_remote.export_of(boot + lines, journal_remote.new_id(), journal_remote.new_id(), f"m{number}")
        journal_remote.remote_write(export, home / "journal-dir" / f"remote-m{number}.journal", timeout=1800)
    (home / "complete").write_text("built\n")
    return cases


def bounds(args: argparse.Namespace) -> int:
    cases = build_bounds(args.cache)
    print(f"report of {args.root}; {args.runs} runs per case; peak = the largest\n")
    print(f"{'case':<12}  {'MiB on disk':>11}  {'report MiB':>10}  {'report s':>8}  {'exit':>4}")
    for name, (where, report_args) in cases.items():
        files = [where] if where.is_file() else [path for path in where.rglob("*") if path.is_file()]
        size = sum(file.stat().st_size for file in files) / 2**20
        runs = [measured(where, args.root, report_args) for _ in range(args.runs)]
        own, seconds = max(run.own for run in runs), statistics.median(run.seconds for run in runs)
        print(f"{name:<12}  {size:>11.1f}  {own:>10.1f}  {seconds:>8.2f}  {runs[0].code:>4}", flush=True)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--entries", type=int, default=12_000, help="the shim's lines in the journal")
    parser.add_argument("--long", action="store_true", help="callers of 600 characters: lines near the 1,000 limit")
    parser.add_argument("--distinct", action="store_true", help="a script of each line's own: as many call sites")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--cache", type=Path, default=CACHE)
    parser.add_argument("--root", type=Path, default=ROOT, help="the checkout whose report is measured")
    parser.add_argument("--bounds", action="store_true", help="the hostile inputs the byte budget bounds")
    args = parser.parse_args(argv)
    why = journal_remote.available()
    if why is not None:
        print(f"journal_memory_bench: {why}", file=sys.stderr)
        return 2
    if args.bounds:
        return bounds(args)
    cases = build(args.cache, args.entries, args.long, args.distinct)
    version = subprocess.run(["journalctl", "--version"], capture_output=True, text=True).stdout.splitlines()[0]
    print(f"report of {args.root}; journalctl: {version}; {args.runs} runs per case; peak = the largest\n")
    print(f"{'case':<11}  {'files':>5}  {'MiB on disk':>11}  {'report MiB':>10}  {'with journalctl MiB':>19}  "
          f"{'report s':>8}  {'exit':>4}")  # fmt: skip
    for name, directory in cases.items():
        files = sorted(directory.glob("*.journal"))
        size = sum(file.stat().st_size for file in files) / 2**20
        runs = [measured(directory, args.root) for _ in range(args.runs)]
        own, peak = max(run.own for run in runs), max(run.peak for run in runs)
        seconds = statistics.median(run.seconds for run in runs)
        row = f"{name:<11}  {len(files):>5}  {size:>11.1f}  {own:>10.1f}  {peak:>19.1f}  {seconds:>8.2f}"
        print(f"{row}  {runs[0].code:>4}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
