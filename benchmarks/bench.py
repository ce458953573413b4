"""Benchmark: what the shim costs, as ratios against the same venv without it, measured in one interleaved run.

    python benchmarks/bench.py [--python PATH] [--wheel WHEEL] [--runs N] [--config-only]

It makes one venv of the interpreter with the wheel installed. "Without the shim" is that same venv with the shim's
start-up files renamed away, toggled before every single run, so both sides share the machine's noise.

Rows and targets (issue 2):
- ready-path start-up, ``python -c pass``                                      <= 1.02x
- ready-path ``os.urandom(32)`` per call                                       1.00x
- ``os.urandom(32)``, ``secrets.token_bytes(32)``, ``SystemRandom().random()``
  per call after an unready-then-ready transition                             <= 1.05x
- unready-path start-up (simulated, policy from the environment) of
  ``python -c "import os; os.urandom(1)"`` under legacy                       <= 1.5x
- events (issue 20): the start-up cost of one event, on stderr, in the events file and in report mode, and the cost
  of a call in the window that is counted rather than written
- unready-path start-up (simulated) with each documented configuration source in use (issue 30): a machine file
  with a floor, an environment file, an app's package file, and a 7.6 KB ``pyproject.toml`` holding our table
  (``pyproject-sample.toml``), each against the same command without the shim, in instructions  <= 1.5x

Start-up rows compare medians of many interleaved runs; per-call rows compare the best of interleaved timeit repeats.
A reference row shows what an empty .pth file alone costs: any .pth-based activation pays it (about 3% on 3.13,
whose site imports a codec to read .pth files), so a ready path over 1.02x there is mostly that floor.
This prints numbers; it is not a test, because shared machines are too noisy for timed assertions.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
STARTUP_FILES = ("urandom_shim.pth", "urandom_shim_pep829.start")
#: The empty module of the "module" reference row.
EMPTY_MODULE = "_urandom_shim_bench_empty"


class Venv:
    def __init__(self, python: Path, where: Path, wheel: Path | None) -> None:
        self.path = where / "venv"
        subprocess.run([str(python), "-m", "venv", str(self.path)], check=True)
        self.python = str(self.path / "bin" / "python")
        if wheel is None:
            wheel = self._build_wheel(where)
        # With its dependency (tomli, before 3.11), as a user installs it: an unready start may read a file with it.
        subprocess.run([self.python, "-m", "pip", "install", "-q", str(wheel)], check=True)
        out = subprocess.run(
            [self.python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            capture_output=True, text=True, check=True,
        )  # fmt: skip
        self.site = Path(out.stdout.strip())
        self._mode = "on"

    def _build_wheel(self, where: Path) -> Path:
        subprocess.run([self.python, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(where), str(ROOT)], check=True)
        return next(where.glob("urandom_shim-*.whl"))

    def mode(self, mode: str) -> None:
        """ "on": the shim as installed; "off": its start-up files moved away; "floor": its .pth replaced by a
        comment, which measures what any .pth costs before it runs a line (on 3.13 site imports a codec for it);
        "module": its .pth importing an empty module, what any start-up module costs before its first line."""
        if mode == self._mode:
            return
        for name in STARTUP_FILES:
            active, parked = self.site / name, self.site / (name + ".off")
            if active.exists() and not parked.exists():
                active.rename(parked)
            elif active.exists():
                active.unlink()  # the floor's stand-in
        if mode == "on":
            for name in STARTUP_FILES:
                parked = self.site / (name + ".off")
                if parked.exists():  # an older wheel has no urandom_shim_pep829.start
                    parked.rename(self.site / name)
        elif mode == "floor":
            (self.site / "urandom_shim.pth").write_text("# an empty .pth file\n")
        elif mode == "module":
            (self.site / "urandom_shim.pth").write_text(f"import {EMPTY_MODULE}\n")
            (self.site / f"{EMPTY_MODULE}.py").write_text("")
        self._mode = mode


def clean_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("URANDOM_", "PYTHON"))}
    env.update(extra or {})
    return env


#: Where the measured processes' stderr goes: an unready start under legacy prints one event line per run.
DEVNULL = os.open(os.devnull, os.O_WRONLY)


def time_start(python: str, args: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    quiet = [(os.POSIX_SPAWN_DUP2, DEVNULL, 2)]
    pid = os.posix_spawn(python, [python, *args], env, file_actions=quiet)  # in this process's current directory
    _, status = os.waitpid(pid, 0)
    took = time.perf_counter() - start
    if status != 0:
        raise SystemExit(f"{args} failed with status {status}")
    return took


def startup_row(venv: Venv, args: list[str], env: dict[str, str], runs: int, mode: str) -> tuple[float, float]:
    """Median start-up (seconds) in ``mode`` and without the shim, interleaved, after a warm-up of each."""
    env_on, env_off = clean_env(env), clean_env()
    measured: list[float] = []
    without: list[float] = []
    for i in range(runs + 5):
        for on in (True, False) if i % 2 else (False, True):
            venv.mode(mode if on else "off")
            took = time_start(venv.python, args, env_on if on else env_off)
            if i >= 5:
                (measured if on else without).append(took)
    venv.mode("on")
    return statistics.median(measured), statistics.median(without)


def instructions(venv: Venv, args: list[str], env: dict[str, str], mode: str) -> int | None:
    """CPU instructions for one start-up, counted by valgrind: exact and repeatable, unlike wall-clock time on a
    shared machine. None if valgrind is not installed."""
    valgrind = shutil.which("valgrind")
    if valgrind is None:
        return None
    venv.mode(mode)
    subprocess.run([venv.python, *args], capture_output=True, env=clean_env(env))  # writes any .pyc first
    out = subprocess.run(
        [valgrind, "--tool=lackey", "--basic-counts=yes", venv.python, *args],
        capture_output=True, text=True, env=clean_env(env),
    )  # fmt: skip
    venv.mode("on")
    for line in out.stderr.splitlines():
        if "guest instrs:" in line:
            return int(line.rsplit(None, 1)[-1].replace(",", ""))
    return None


#: Every variable the ready path checks, set to a valid value.
ALL_VARIABLES = {
    "URANDOM_POLICY": "pep524",
    "URANDOM_SHIM_TIMEOUT": "30",
    "URANDOM_SHIM_ON_TIMEOUT": "raise",
    "URANDOM_SHIM_WARN_AFTER": "5",
    "URANDOM_SHIM_SEED_RANDOM_INSTANCES": "nonblocking",
}


PER_CALL = """
import os, sys, timeit, random, secrets
wait = getattr(secrets, "wait_for_system_rng", None)
if wait is not None:
    wait()  # the unready-then-ready transition, when a simulation is on
stmt = sys.argv[1]
g = {"os": os, "secrets": secrets, "random": random, "sr": random.SystemRandom()}
timer = timeit.Timer(stmt, globals=g)
n, _ = timer.autorange()
print(min(timer.repeat(repeat=int(sys.argv[2]), number=n)) / n)
"""


def per_call_row(venv: Venv, stmt: str, env_shim: dict[str, str], rounds: int) -> tuple[float, float]:
    """Best per-call time (seconds) with and without the shim, from interleaved processes."""
    best = {True: float("inf"), False: float("inf")}
    for i in range(rounds):
        for on in (True, False) if i % 2 else (False, True):
            venv.mode("on" if on else "off")
            env = clean_env(env_shim) if on else clean_env()
            if "URANDOM_SHIM_SIMULATE" in env and env["URANDOM_SHIM_SIMULATE"] == "WINDOW":
                env["URANDOM_SHIM_SIMULATE"] = f"unready-until-monotonic:{time.monotonic() + 0.2!r}"
            out = subprocess.run([venv.python, "-c", PER_CALL, stmt, "5"], capture_output=True, text=True, env=env)
            if out.returncode != 0:
                raise SystemExit(out.stderr)
            best[on] = min(best[on], float(out.stdout))
    venv.mode("on")
    return best[True], best[False]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--python", default=sys.executable, help="interpreter to measure (default: this one)")
    parser.add_argument("--wheel", type=Path, help="wheel to install (default: build one from this checkout)")
    parser.add_argument("--runs", type=int, default=200, help="start-up runs per side (default: 200)")
    parser.add_argument("--rounds", type=int, default=6, help="per-call processes per side (default: 6)")
    parser.add_argument(
        "--config-only", action="store_true", help="only the configuration sources' rows (instructions; valgrind)"
    )
    args = parser.parse_args(argv)
    if args.config_only:
        with tempfile.TemporaryDirectory() as tmp:
            venv = Venv(Path(args.python), Path(tmp), args.wheel)
            print(subprocess.run([venv.python, "-VV"], capture_output=True, text=True).stdout.strip())
            config_rows(venv, Path(tmp))
        return 0

    with tempfile.TemporaryDirectory() as tmp:
        venv = Venv(Path(args.python), Path(tmp), args.wheel)
        version = subprocess.run([venv.python, "-VV"], capture_output=True, text=True).stdout.strip()
        print(f"interpreter: {version}")
        print(f"{'row':<68} {'shim':>10} {'no shim':>10} {'ratio':>7} {'target':>7}")
        rows = [
            ("start-up, an empty .pth only: the floor of any .pth (reference)", "floor", ["-c", "pass"], {}, 0.0),
            ("start-up, ready path: python -c pass", "start", ["-c", "pass"], {"URANDOM_POLICY": "pep524"}, 1.02),
            ("os.urandom(32) per call, ready path", "call", "os.urandom(32)", {"URANDOM_POLICY": "pep524"}, 1.00),
        ]
        window = {"URANDOM_POLICY": "pep524", "URANDOM_SHIM_SIMULATE": "WINDOW"}
        for stmt in ("os.urandom(32)", "secrets.token_bytes(32)", "sr.random()"):
            rows.append((f"{stmt} per call, after unready-then-ready", "call", stmt, window, 1.05))
        rows.append(
            (
                "start-up, unready path (simulated), legacy: os.urandom(1)",
                "start",
                ["-c", "import os; os.urandom(1)"],
                {"URANDOM_POLICY": "legacy", "URANDOM_SHIM_SIMULATE": "unready-forever"},
                1.5,
            )
        )
        # Configuration files change nothing on the ready path, which reads none: two rows to show it.
        project = Path(tmp) / "project"
        project.mkdir()
        (project / "pyproject.toml").write_text('[project]\nname = "app"\n[tool.urandom-shim]\npolicy = "pep522"\n')
        env_file = Path(venv.path) / "urandom-shim.toml"
        rows.insert(2, ("start-up, ready path, pyproject with our table in cwd", "project", ["-c", "pass"], {}, 1.02))
        rows.insert(3, ("start-up, ready path, with an environment file", "envfile", ["-c", "pass"], {}, 1.02))
        # `urandom-shim run` in an interpreter without the .pth: its bootstrap sitecustomize loads the shim by path.
        bootstrap = {"PYTHONPATH": str(venv.site / "urandom_shim" / "_bootstrap"), "URANDOM_SHIM_HOME": str(venv.site)}
        rows.append(("start-up, ready path, another python under `urandom-shim run`", "bootstrap", ["-c", "pass"],
                     bootstrap, 0.0))  # fmt: skip
        for label, kind, what, env, target in rows:
            if kind == "project":
                os.chdir(project)
            if kind == "envfile":
                env_file.write_text('policy = "pep524"\n[[program]]\nmatch = "cron*"\npolicy = "legacy"\n')
            if kind in ("start", "floor", "project", "envfile", "bootstrap"):
                mode = {"floor": "floor", "bootstrap": "off"}.get(kind, "on")
                shim, bare = startup_row(venv, what, env, args.runs, mode)  # type: ignore[arg-type]
                unit, scale = "ms", 1e3
            else:
                shim, bare = per_call_row(venv, what, env, args.rounds)  # type: ignore[arg-type]
                unit, scale = "ns", 1e9
            os.chdir(tmp)
            if env_file.exists():
                env_file.unlink()
            ratio = shim / bare
            flag = "" if not target or ratio <= target + 0.005 else "  over target"
            shown = f"{shim * scale:>8.3g}{unit} {bare * scale:>8.3g}{unit}"
            goal = f"{target:>6.2f}x" if target else "      -"
            print(f"{label:<68} {shown} {ratio:>6.3f}x {goal}{flag}")
        base = instructions(venv, ["-c", "pass"], {}, "off")
        if base:
            print("\nstart-up of python -c pass in CPU instructions (valgrind; exact, unlike the times above):")
            for label, mode, env in (
                ("no shim", "off", {}),
                ("an empty .pth only (the floor of any .pth)", "floor", {}),
                ("a .pth importing an empty module (the floor of any start-up module)", "module", {}),
                ("ready path", "on", {"URANDOM_POLICY": "pep524"}),
                ("ready path, every URANDOM_* setting variable set (each is checked)", "on", ALL_VARIABLES),
                (
                    "unready path (simulated), legacy",
                    "on",
                    {"URANDOM_POLICY": "legacy", "URANDOM_SHIM_SIMULATE": "unready-forever"},
                ),
                ("ready path, another python under `urandom-shim run` (bootstrap, no .pth)", "off", bootstrap),
            ):
                if label == "ready path":
                    os.chdir(project)
                    in_project = instructions(venv, ["-c", "pass"], env, mode)
                    os.chdir(tmp)
                    if in_project:
                        print(f"  {'ready path, pyproject with our table in cwd':<66} {in_project / 1e6:>8.2f}M "
                              f"{in_project / base:>6.3f}x")  # fmt: skip
                count = base if mode == "off" and not env else instructions(venv, ["-c", "pass"], env, mode)
                if count:
                    print(f"  {label:<66} {count / 1e6:>8.2f}M {count / base:>6.3f}x")
            event_rows(venv, base, Path(tmp))
            config_rows(venv, Path(tmp))
    return 0


#: The machine file of the fleet-floor how-to, and an environment file with a per-program rule.
MACHINE_FILE = 'policy = "pep524"\nallow_weak = false\n'
ENVIRONMENT_FILE = 'policy = "pep524"\n[[program]]\nmatch = "cron*"\npolicy = "legacy"\n'
PACKAGE_FILE = 'policy = "pep524"\ntimeout = 60\n'


def config_rows(venv: Venv, tmp: Path) -> None:
    """What each configuration source costs an unready start (issue 30): ``python -c pass`` (``python -m app`` for
    an app's package file), simulated unready, against the same command in the same directory without the shim."""
    unready = {"URANDOM_SHIM_SIMULATE": "unready-forever"}
    machine = tmp / "machine.toml"
    machine.write_text(MACHINE_FILE)
    project = tmp / "sample-project"
    project.mkdir(exist_ok=True)
    shutil.copy(ROOT / "benchmarks" / "pyproject-sample.toml", project / "pyproject.toml")
    apps = tmp / "apps"
    (apps / "app").mkdir(parents=True, exist_ok=True)
    (apps / "app" / "__init__.py").write_text("")
    (apps / "app" / "__main__.py").write_text("")
    (apps / "app" / "urandom-shim.toml").write_text(PACKAGE_FILE)
    env_file = venv.path / "urandom-shim.toml"
    print("\nconfiguration sources on the unready path (simulated), start-up in CPU instructions (valgrind), each")
    print("against the same command without the shim; target <= 1.5x:")
    rows = (
        ("no file: the policy from URANDOM_POLICY (pep524)", tmp, ["-c", "pass"], {"URANDOM_POLICY": "pep524"}),
        ("a machine file: policy = pep524, allow_weak = false", tmp, ["-c", "pass"],
         {"URANDOM_SHIM_MACHINE_CONFIG": str(machine)}),
        ("an environment file: policy, and one [[program]] rule", tmp, ["-c", "pass"], {}),
        ("an app's package file (python -m app)", apps, ["-m", "app"], {}),
        ("a project: a 7.6 KB pyproject.toml holding our table", project, ["-c", "pass"], {}),
    )  # fmt: skip
    for label, where, args, env in rows:
        if label.startswith("an environment file"):
            env_file.write_text(ENVIRONMENT_FILE)
        os.chdir(where)
        # Once unmeasured: Python writes the app's bytecode then, and a problem with a file would show on stderr.
        out = subprocess.run([venv.python, *args], capture_output=True, text=True, env=clean_env({**unready, **env}))
        if out.returncode != 0 or out.stderr:
            raise SystemExit(f"{label}: {out.stderr}")
        shim = instructions(venv, args, {**unready, **env}, "on")
        bare = instructions(venv, args, {}, "off")
        os.chdir(tmp)
        if env_file.exists():
            env_file.unlink()
        if shim is None or bare is None:
            return
        flag = "" if shim / bare <= 1.5 else "  over target"
        print(f"  {label:<66} {shim / 1e6:>8.2f}M {bare / 1e6:>8.2f}M {shim / bare:>6.3f}x{flag}")


#: One call in the simulated window: under legacy it makes one event (a line on stderr).
ONE_CALL = ["-c", "import os; os.urandom(1)"]
EVENT_PER_CALL = """
import os, sys, timeit
from urandom_shim import _activation
if sys.argv[1] == "off":
    _activation.Engine._event = lambda *args, **kwargs: None
g = {"os": os}
timer = timeit.Timer("os.urandom(32)", globals=g)
n, _ = timer.autorange()
print(min(timer.repeat(repeat=5, number=n)) / n)
"""


def event_rows(venv: Venv, base: int, tmp: Path) -> None:
    """What events cost on the unready path (issue 20): the start-up of a program that makes one call in the window,
    with its event on stderr, also in an events file, in report mode; against the same start-up making no call (no
    event, and the events module never loaded); and a call in the window after the first (counted, not written)."""
    unready = {"URANDOM_POLICY": "legacy", "URANDOM_SHIM_SIMULATE": "unready-forever"}
    events = tmp / "events.jsonl"
    print("\nevents on the unready path (simulated, legacy), start-up in CPU instructions (valgrind):")
    rows = (
        ("no call in the window: no event", ["-c", "pass"], unready),
        ("one os.urandom(1) in the window: one event on stderr", ONE_CALL, unready),
        ("the same, and the events file", ONE_CALL, {**unready, "URANDOM_SHIM_EVENTS": str(events)}),
        ("the same in report mode (pep522), and the events file", ONE_CALL,
         {"URANDOM_POLICY": "pep522", "URANDOM_SHIM_MODE": "report", "URANDOM_SHIM_SIMULATE": "unready-forever",
          "URANDOM_SHIM_EVENTS": str(events)}),
    )  # fmt: skip
    first = None
    for label, args, env in rows:
        count = instructions(venv, args, env, "on")
        if count is None:
            return
        first = first or count
        print(f"  {label:<66} {count / 1e6:>8.2f}M {count / base:>6.3f}x  (+{(count - first) / 1e6:.2f}M)")
    times = {}
    for which in ("on", "off"):
        out = subprocess.run(
            [venv.python, "-c", EVENT_PER_CALL, which], capture_output=True, text=True, env=clean_env(unready)
        )
        times[which] = float(out.stdout)
    print(
        f"  os.urandom(32) in the window after the first (counted, not written): {times['on'] * 1e9:.0f} ns, "
        f"{times['off'] * 1e9:.0f} ns without event code: {times['on'] / times['off']:.2f}x"
    )


if __name__ == "__main__":
    raise SystemExit(main())
