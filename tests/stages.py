"""The full run's stages side by side, and the time table every run ends with (tests/run).

    python tests/stages.py roots                     # every Debian root the run needs, two builds at a time
    python tests/stages.py tests [-- PYTEST ARGS]    # the matrix's sessions and the real boots, side by side
    python tests/stages.py table [--full]            # the table of URANDOM_SHIM_STAGE_TIMES, and the total

Each stage appends one row to the file named by ``URANDOM_SHIM_STAGE_TIMES`` (its name, when it began, its seconds,
its exit status): ``tests/run``'s own stages, each root (tests/roots.py), each session, and from inside pytest each
real boot, the package build and the fleet test (tests/conftest.py).

Where the time goes decides the layout. A session of the matrix keeps its two workers busy about half the time (its
tests wait out simulated windows and start interpreters), and a qemu boot under TCG keeps one core busy: so two
sessions run at once, longest first, and the real boots run beside them in a lane of their own (one guest at a
time, as before); the Debian roots are built beside lint, types and the docs, each once, and whoever needs a root
that is still being built waits on its lock. A session's output is printed whole when it ends.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

#: The full run's total here, in seconds, past which the table ends with a warning (never a failure).
WARN_AFTER = 45 * 60
#: Matrix sessions that run at once; the boots' lane runs beside them.
SESSIONS_AT_ONCE = 2


def record(name: str, began: float, seconds: float, status: int) -> None:
    """Append one row to the run's table (a single short write: safe from several processes at once)."""
    where = os.environ.get("URANDOM_SHIM_STAGE_TIMES")
    if where:
        with open(where, "a", encoding="utf-8") as table:
            table.write(f"{name}\t{began:.3f}\t{seconds:.3f}\t{status}\n")


@dataclass
class Stage:
    name: str
    command: list[str]
    started: float = 0.0
    process: subprocess.Popen[bytes] | None = None
    log: Path = field(default_factory=lambda: Path(tempfile.mkstemp(prefix="urandom-shim-stage-")[1]))

    def start(self) -> None:
        print(f"== {self.name}: started", flush=True)
        self.started = time.time()
        with open(self.log, "wb") as out:
            self.process = subprocess.Popen(
                self.command, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT
            )

    def finish(self, status: int) -> int:
        seconds = time.time() - self.started
        record(self.name, self.started, seconds, status)
        print(f"== {self.name}: {'passed' if status == 0 else f'FAILED (exit status {status})'} in {seconds:.0f} s")
        sys.stdout.flush()
        with open(self.log, "rb") as out:
            sys.stdout.buffer.write(out.read())
        sys.stdout.flush()
        self.log.unlink()
        return status


def run_in_lanes(lanes: list[list[Stage]], at_once: list[int]) -> int:
    """Run each lane's stages in order, ``at_once[i]`` of lane ``i`` at a time; the worst exit status."""
    pending = [list(lane) for lane in lanes]
    running: list[tuple[int, Stage]] = []
    worst = 0
    while any(pending) or running:
        for index, lane in enumerate(pending):
            while lane and sum(1 for i, _ in running if i == index) < at_once[index]:
                stage = lane.pop(0)
                stage.start()
                running.append((index, stage))
        time.sleep(0.5)
        for entry in list(running):
            _index, stage = entry
            assert stage.process is not None
            status = stage.process.poll()
            if status is not None:
                running.remove(entry)
                worst = max(worst, stage.finish(status))
    return worst


def roots() -> int:
    """Every root the run's sessions need, two at a time: the host's tools first (qemu and the kernel, for every
    session's real-kernel tests), then the package build's and the first boots' trixie, and the sessions' sid."""
    from noxfile import SPECS

    boots = "/usr/bin/python3" in SPECS and os.environ.get("URANDOM_SHIM_BOOT", "") != "0"
    sid = any(spec.startswith("sid:") for spec in SPECS)
    builds = [
        name for name in ("trixie", "sid", "bullseye", "sid-boot", "bookworm") if (sid if name == "sid" else boots)
    ]
    python = sys.executable
    first = [Stage("root: host tools, kernel, qemu", [python, str(HERE / "roots.py"), "tools"])]
    later = [Stage(f"root: {name}", [python, str(HERE / "roots.py"), name]) for name in builds]
    status = run_in_lanes([first], [1])
    return max(status, run_in_lanes([later], [2]))


def tests(pytest_args: list[str]) -> int:
    """The sessions of the matrix, two at a time, longest first, and the real boots beside them."""
    from noxfile import SPECS, label, session_order

    nox = [sys.executable, "-m", "nox", "-f", str(HERE / "noxfile.py"), "--no-color"]
    sessions = [Stage(f"matrix({label(spec)})", [*nox, "-s", f"matrix({label(spec)})", "--", *pytest_args])
                for spec in session_order(SPECS)]  # fmt: skip
    lanes, at_once = [sessions], [SESSIONS_AT_ONCE]
    if "/usr/bin/python3" in SPECS and os.environ.get("URANDOM_SHIM_BOOT", "") != "0":
        lanes.append([Stage("boots(debian)", [*nox, "-s", "boots", "--", *pytest_args])])
        at_once.append(1)
    return run_in_lanes(lanes, at_once)


def table(full: bool) -> int:
    """Print the table: one row per stage, in the order they began, then the total (this run's wall time)."""
    where = os.environ.get("URANDOM_SHIM_STAGE_TIMES", "")
    rows = []
    for line in Path(where).read_text(encoding="utf-8").splitlines() if where and Path(where).exists() else []:
        name, began, seconds, status = line.split("\t")
        rows.append((float(began), name, float(seconds), int(status)))
    start = float(os.environ.get("URANDOM_SHIM_RUN_STARTED", min((r[0] for r in rows), default=time.time())))
    total = time.time() - start
    print(f"== time table ({'full' if full else 'quick'} run): stage, when it began (s into the run), seconds")
    width = max((len(name) for _b, name, _s, _st in rows), default=10)
    for began, name, seconds, status in sorted(rows):
        note = "" if status == 0 else f"  (exit status {status})" if status > 0 else "  (skipped)"
        print(f"  {name.ljust(width)}  {began - start:7.0f}  {seconds:7.0f}{note}")
    print(f"  {'total'.ljust(width)}  {'':7}  {total:7.0f}  ({total / 60:.1f} min)")
    if full and total > WARN_AFTER:
        print(
            f"WARNING: the full run took {total / 60:.1f} minutes, past {WARN_AFTER // 60} (CI stops at 90): "
            "the table above shows which stage grew"
        )
    return 0


def main(argv: list[str]) -> int:
    command, rest = (argv[0], argv[1:]) if argv else ("", [])
    if command == "roots":
        return roots()
    if command == "tests":
        return tests(rest[1:] if rest[:1] == ["--"] else rest)
    if command == "table":
        return table("--full" in rest)
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
