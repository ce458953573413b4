"""Benchmark: what the shim costs, as ratios against the same venv without it, measured in one interleaved run.

    python benchmarks/bench.py [--python PATH] [--wheel WHEEL] [--runs N] [--config-only | --scale-only]
    python benchmarks/sid_bench.py 3.15 --scale-only    # the same with Debian sid's Python, in tests/sid.py's root

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

Rows of a user's environment (issue 37; ``--scale-only`` runs only these), in instructions, one valgrind count a
cell: with ``PYTHONHASHSEED=0`` on both sides a count is the same on every run. "Without" is the same command in the
same venv with the shim's start-up files moved away and no ``URANDOM_*`` variable:
- ready path, ``python -c pass``, with no ``PYTHONPATH`` and with 20 existing empty directories on it, ahead of
  site-packages (each is a place the ``.pth`` line's import looks first)                            <= 1.02x
- the growth table: an unready start (``URANDOM_SHIM_SIMULATE=unready-forever``, policy from the app's package file
  ``urandom-shim.toml``, the configuration the docs give an installed app) of a console script (pip's launcher) and
  of ``python -m APP``, the app's distribution sorting last (``zzapp``) and mid (``mmapp``), in the same venv with 0,
  200 and 1,000 fabricated distributions added (``fabricated_specs``: seeded, names over the whole alphabet, about 208
  ``RECORD`` lines each in pip's format with a few of 2,000-5,000 lines, as a real 202-package web stack had 42,038
  lines in 3.6 MiB)                                                 <= 1.5x in every cell, the ratio moving <= 0.05
  from 0 to 1,000 distributions in every column. Each cell first checks, unmeasured, that the start reads the
  package file (a broken one must be reported).
- a real app's start in a venv of its own, flask and django installed with pip (a row is skipped, saying why, when
  pip fails): ``flask --help`` and ``python -c "import django; ...; settings.configure(); django.setup()"``, policy
  pep524 from the environment, ready                                                                <= 1.02x
  and unready (simulated)                                                                           <= 1.5x

Start-up rows compare medians of many interleaved runs; per-call rows compare the best of interleaved timeit repeats.
A reference row shows what an empty .pth file alone costs: any .pth-based activation pays it (about 3% on 3.13,
whose site imports a codec to read .pth files), so a ready path over 1.02x there is mostly that floor.
This prints numbers; it is not a test, because shared machines are too noisy for timed assertions.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import os
import random
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
        self.wheel = wheel
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
    parser.add_argument(
        "--scale-only", action="store_true", help="only the rows of a user's environment (issue 37; valgrind)"
    )
    args = parser.parse_args(argv)
    if args.scale_only:
        with tempfile.TemporaryDirectory() as tmp:
            venv = Venv(Path(args.python), Path(tmp), args.wheel)
            print(subprocess.run([venv.python, "-VV"], capture_output=True, text=True).stdout.strip())
            scale_rows(venv, Path(tmp), Path(args.python))
        return 0
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
            scale_rows(venv, Path(tmp), Path(args.python))
    return 0


#: The machine file of the fleet-floor how-to, and an environment file with a per-program rule.
MACHINE_FILE = 'policy = "pep524"\nallow_weak = false\n'
ENVIRONMENT_FILE = 'policy = "pep524"\n[[program]]\nmatch = "cron*"\npolicy = "legacy"\n'
PACKAGE_FILE = 'policy = "pep524"\ntimeout = 60\n'
PACKAGE_FILE_NAME = "urandom-shim.toml"


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
    (apps / "app" / PACKAGE_FILE_NAME).write_text(PACKAGE_FILE)
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
        shim = instructions(venv, args, {**unready, **env, **SEEDED}, "on")  # the same hash seed on both sides
        bare = instructions(venv, args, SEEDED, "off")
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


# Issue 37: the rows of a user's environment (--scale-only runs only these).

#: The fabricated distributions' RECORD sizes: a real 202-package web stack had 42,038 RECORD lines in 3.6 MiB,
#: about 208 lines a distribution, with a long tail of a few large ones (django, botocore, pandas: 2,000-5,000).
RECORD_LINES_MEAN = 208
#: Every BIG_EVERY-th distribution (from the 14th) is a large one: 3 in the first 200, 15 in 1,000.
BIG_EVERY = 67
#: The fabricated venvs' sizes, and the largest; each size's distributions are the first N of the largest's.
SIZES = (0, 200, 1000)
#: Syllables for names that spread over the alphabet like real ones do.
ONSETS = "b c d f g h j k l m n p r s t v w x z br cl dr fl gr pl pr sk st tr ch sh th".split()
VOWELS = "a e i o u y ai ea io oo".split()
WORDS = "core util utils client server api tools http async json data auth cli test types compat ext".split()
#: Names that sort last and mid: the apps, whose package ships a package file (the docs' advice for an installed app).
APPS = ("zzapp", "mmapp")
#: pip's console-script launcher (distlib's template), byte for byte but the shebang's venv.
LAUNCHER = """#!{python}
# -*- coding: utf-8 -*-
import re
import sys
from {name}.cli import main
if __name__ == '__main__':
    sys.argv[0] = re.sub(r'(-script\\.pyw|\\.exe)?$', '', sys.argv[0])
    sys.exit(main())
"""


def _digest(data: str) -> str:
    """A RECORD hash field: ``sha256=`` and 43 base64url characters."""
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data.encode()).digest()).decode().rstrip("=")


def _name(rng: random.Random) -> str:
    name = rng.choice("abcdefghijklmnopqrstuvwxyz") + "".join(
        rng.choice(ONSETS) + rng.choice(VOWELS) for _ in range(rng.randint(1, 3))
    )
    if rng.random() < 0.3:
        name += "_" + rng.choice(WORDS)
    return name


def fabricated_specs(count: int = SIZES[-1], seed: int = 37) -> list[tuple[str, int]]:
    """(name, RECORD lines) of ``count`` distributions, the same on every run and every interpreter. Each block of
    200 has RECORD_LINES_MEAN lines a distribution on average, its large ones included."""
    rng = random.Random(seed)
    names: list[str] = []
    taken = {"pip", "setuptools", "wheel", "tomli", "urandom_shim", *APPS}
    while len(names) < count:
        name = _name(rng)
        if name not in taken and name < "zz":  # the app sorting last sorts after every one
            taken.add(name)
            names.append(name)
    sizes: list[int] = []
    for block in range(0, count, 200):
        indices = range(block, min(block + 200, count))
        big = {i: rng.randint(2000, 5000) for i in indices if i % BIG_EVERY == 13}
        small = {i: min(max(rng.lognormvariate(4.4, 1.0), 6.0), 1800.0) for i in indices if i not in big}
        scale = (RECORD_LINES_MEAN * len(indices) - sum(big.values())) / sum(small.values())
        sizes += [big.get(i) or max(6, round(small[i] * scale)) for i in indices]
    return list(zip(names, sizes))


def _record_lines(name: str, lines: int, rng: random.Random, tag: str) -> list[str]:
    """About ``lines`` RECORD lines in pip's format: modules with their hash and size, each with its bytecode
    (listed without either, as pip lists it), in subpackages of a few levels."""
    subpackages = [name] + [
        "/".join([name, *(rng.choice(ONSETS) + rng.choice(VOWELS) + rng.choice(WORDS) for _ in range(depth))])
        for depth in (rng.randint(1, 3) for _ in range(max(1, lines // 40)))
    ]
    out = [f"{name}/__init__.py,{_digest(name)},{rng.randint(0, 4000)}"]
    while len(out) < lines - 6:
        where = rng.choice(subpackages)
        module = "_".join(rng.choice(ONSETS) + rng.choice(VOWELS) + rng.choice(WORDS) for _ in range(rng.randint(2, 3)))
        out.append(f"{where}/{module}.py,{_digest(where + module)},{rng.randint(200, 60000)}")
        out.append(f"{where}/__pycache__/{module}.{tag}.pyc,,")
    return out


def fabricate(site: Path, name: str, lines: int, tag: str) -> None:
    """One installed distribution, as pip leaves it: its ``.dist-info`` (METADATA, WHEEL, INSTALLER, top_level.txt
    and a RECORD of about ``lines`` lines) and its package. The package directory holds ``__init__.py`` and the first
    few modules its RECORD lists; the others are only listed, since nothing at start-up opens them."""
    rng = random.Random(name)
    info = site / f"{name}-1.0.dist-info"
    info.mkdir()
    record = _record_lines(name, lines, rng, tag)
    for line in [line for line in record if not line.endswith(",,")][:4]:
        path = site / line.split(",")[0]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("")
    _write_metadata(info, name, {}, record)


def _write_metadata(info: Path, name: str, extra: dict[str, str], record: list[str]) -> None:
    """A distribution's metadata files as pip leaves them (``extra`` beside the usual ones), each added to
    ``record``, and the RECORD itself, with pip's line ends."""
    files = {
        "METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n",
        "WHEEL": "Wheel-Version: 1.0\nGenerator: bench.py\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
        "INSTALLER": "pip\n",
        **extra,
        "top_level.txt": f"{name}\n",
    }
    for file, text in files.items():
        (info / file).write_text(text)
        record.append(f"{info.name}/{file},{_digest(text)},{len(text)}")
    record.append(f"{info.name}/RECORD,,")
    (info / "RECORD").write_bytes("".join(line + "\r\n" for line in record).encode())


def install_app(venv: Venv, name: str, tag: str) -> Path:
    """The app ``name`` installed as pip installs a wheel: its package (``__init__.py``, ``cli.py`` with ``main``,
    ``__main__.py`` and the package file), a RECORD listing them, and its console-script launcher in ``bin/``."""
    site, script = venv.site, venv.path / "bin" / name
    package = site / name
    package.mkdir()
    files = {
        "__init__.py": "",
        "cli.py": "def main():\n    pass\n",
        "__main__.py": f"from {name}.cli import main\n\nmain()\n",
        PACKAGE_FILE_NAME: PACKAGE_FILE,
    }
    info = site / f"{name}-1.0.dist-info"
    info.mkdir()
    entry_points = {"entry_points.txt": f"[console_scripts]\n{name} = {name}.cli:main\n"}
    launcher = LAUNCHER.format(python=venv.python, name=name)
    script.write_text(launcher)
    script.chmod(0o755)
    record = [f"../../../bin/{name},{_digest(launcher)},{len(launcher)}"]
    for file, text in files.items():
        (package / file).write_text(text)
        record.append(f"{name}/{file},{_digest(text)},{len(text)}")
        if file.endswith(".py"):
            record.append(f"{name}/__pycache__/{file[:-3]}.{tag}.pyc,,")
    _write_metadata(info, name, entry_points, record)
    return script


class Fabricated:
    """The fabricated distributions installed in one venv, grown or shrunk to a size between rows."""

    def __init__(self, venv: Venv) -> None:
        self.venv = venv
        self.specs = fabricated_specs()
        self.installed = 0
        out = subprocess.run(
            [venv.python, "-c", "import sys; print(sys.implementation.cache_tag)"],
            capture_output=True, text=True, check=True,
        )  # fmt: skip
        self.tag = out.stdout.strip()

    def resize(self, count: int) -> None:
        for name, lines in self.specs[self.installed : count]:
            fabricate(self.venv.site, name, lines, self.tag)
        for name, _ in self.specs[count : self.installed]:
            shutil.rmtree(self.venv.site / f"{name}-1.0.dist-info")
            shutil.rmtree(self.venv.site / name)
        self.installed = count

    def describe(self) -> str:
        """What a lookup may read: every RECORD in site-packages, fabricated or not."""
        records = list(self.venv.site.glob("*.dist-info/RECORD"))
        lines = sum(path.read_bytes().count(b"\n") for path in records)
        size = sum(path.stat().st_size for path in records)
        return f"{len(records)} RECORDs, {lines:,} lines, {size / 2**20:.1f} MiB"


UNREADY = {"URANDOM_SHIM_SIMULATE": "unready-forever"}
#: Both sides of these rows run with one hash seed, so that a count is the same on every run (with a random seed it
#: moves by about 0.2%: the order of sets and dicts changes the work).
SEEDED = {"PYTHONHASHSEED": "0"}


def counted(venv: Venv, args: list[str], env: dict[str, str], mode: str) -> int | None:
    """:func:`instructions` with the hash seed fixed."""
    return instructions(venv, args, {**SEEDED, **env}, mode)


BROKEN_PACKAGE_FILE = 'policy = "no-such-policy"\n'


def check_package_file(venv: Venv, args: list[str], app: str) -> None:
    """That the shim reads the app's package file for this start: a broken one must be reported on stderr, and the
    real one must start quietly. Unmeasured; it also writes the bytecode."""
    package_file = venv.site / app / PACKAGE_FILE_NAME
    package_file.write_text(BROKEN_PACKAGE_FILE)
    broken = subprocess.run([venv.python, *args], capture_output=True, text=True, env=clean_env({**SEEDED, **UNREADY}))
    package_file.write_text(PACKAGE_FILE)
    good = subprocess.run([venv.python, *args], capture_output=True, text=True, env=clean_env({**SEEDED, **UNREADY}))
    if PACKAGE_FILE_NAME not in broken.stderr or good.returncode != 0 or good.stderr:
        raise SystemExit(f"{args}: the package file is not in use:\n{broken.stderr}\n{good.stderr}")


def growth_rows(venv: Venv) -> None:
    """The growth table (issue 37): an unready start (simulated; the policy from the app's package file) of a
    console script and of ``python -m APP``, the app sorting last and mid, in venvs of 0, 200 and 1,000 fabricated
    distributions, in instructions, each against the same command in the same venv without the shim."""
    fabricated = Fabricated(venv)
    scripts = {app: install_app(venv, app, fabricated.tag) for app in APPS}
    cells = [(f"script {where}", [str(scripts[app])], app) for app, where in zip(APPS, ("last", "mid"))]
    cells += [(f"-m {where}", ["-m", app], app) for app, where in zip(APPS, ("last", "mid"))]
    print("\ngrowth: unready start (simulated), policy from the app's package file, in CPU instructions (valgrind),")
    print("with the shim / without it; budget <= 1.5x in every cell and a ratio moving <= 0.05 from 0 to 1,000:")
    print(f"  {'distributions':<14}" + "".join(f"{label:>26} " for label, _, _ in cells))
    ratios: dict[str, list[float]] = {label: [] for label, _, _ in cells}
    for size in SIZES:
        fabricated.resize(size)
        shown = []
        for label, args, app in cells:
            check_package_file(venv, args, app)
            shim = counted(venv, args, UNREADY, "on")
            bare = counted(venv, args, {}, "off")
            if shim is None or bare is None:
                print("  (valgrind is not installed: no counts)")
                return
            ratios[label].append(shim / bare)
            flag = "!" if shim / bare > 1.5 else " "
            shown.append(f"{shim / 1e6:>9.1f}M/{bare / 1e6:.1f}M {shim / bare:>5.2f}x{flag}")
        before = sorted(p.name for p in venv.site.glob("*.dist-info"))
        position = before.index("mmapp-1.0.dist-info")
        print(f"  {size:<14,}" + "".join(f"{cell:>27}" for cell in shown))
        print(f"  {'':<16}({fabricated.describe()}; mmapp's RECORD is {position + 1} of {len(before)})")
    moves = [f"{label} {values[-1] - values[0]:+.2f}" for label, values in ratios.items()]
    worst = max(abs(values[-1] - values[0]) for values in ratios.values())
    print(f"  ratio moves from 0 to 1,000: {', '.join(moves)}{'  over budget' if worst > 0.05 else ''}")
    print("  (! marks a cell over 1.5x)")
    fabricated.resize(0)


def pythonpath_rows(venv: Venv, tmp: Path) -> None:
    """The ready path with 20 existing empty directories on ``PYTHONPATH`` ahead of site-packages (each one is a
    place the ``.pth`` line's import looks first), and without any, ``python -c pass``, in instructions."""
    entries = [tmp / "pythonpath" / f"entry{i:02}" for i in range(20)]
    for entry in entries:
        entry.mkdir(parents=True)
    long_path = {"PYTHONPATH": os.pathsep.join(map(str, entries))}
    print("\nready path, python -c pass, in CPU instructions (valgrind), with the shim / without it; target <= 1.02x:")
    for label, env in (("no PYTHONPATH", {}), ("20 empty directories on PYTHONPATH", long_path)):
        shim = counted(venv, ["-c", "pass"], {"URANDOM_POLICY": "pep524", **env}, "on")
        bare = counted(venv, ["-c", "pass"], env, "off")
        if shim is None or bare is None:
            print("  (valgrind is not installed: no counts)")
            return
        flag = "" if shim / bare <= 1.02 else "  over target"
        print(f"  {label:<66} {shim / 1e6:>8.2f}M {bare / 1e6:>8.2f}M {shim / bare:>6.3f}x{flag}")


DJANGO_SETUP = "import django; from django.conf import settings; settings.configure(); django.setup()"


def real_app_rows(python: Path, tmp: Path, wheel: Path) -> None:
    """A real app's start: ``flask --help`` and ``django.setup()``, installed with pip into a venv of their own
    (beside the shim's wheel), ready and unready (simulated), policy pep524 from the environment, in instructions,
    each against the same command without the shim. A row whose install fails is skipped, saying why."""
    where = tmp / "real-apps"
    where.mkdir()
    venv = Venv(python, where, wheel)
    print("\na real app's start, policy pep524 from the environment, in CPU instructions (valgrind), without the shim,")
    print("and with it ready (target <= 1.02x) and unready, simulated (target <= 1.5x):")
    rows = (
        ("flask --help", "flask", [str(venv.path / "bin" / "flask"), "--help"]),
        ("python -c '...; django.setup()'", "django", ["-c", DJANGO_SETUP]),
    )
    ready = {"URANDOM_POLICY": "pep524"}
    for label, package, args in rows:
        try:
            out = subprocess.run(
                [venv.python, "-m", "pip", "install", "-q", "--disable-pip-version-check", package],
                capture_output=True, text=True, timeout=600,
            )  # fmt: skip
            failed = out.stderr.strip().splitlines()[-1:] if out.returncode else None
        except subprocess.TimeoutExpired:
            failed = ["timed out after 600 s"]
        if failed is not None:
            print(f"  {label:<50} skipped: pip install {package} failed: {' '.join(failed) or out.returncode}")
            continue
        version = subprocess.run(
            [venv.python, "-c", f"from importlib.metadata import version; print(version({package!r}))"],
            capture_output=True, text=True,
        ).stdout.strip()  # fmt: skip
        bare = counted(venv, args, {}, "off")
        on = counted(venv, args, ready, "on")
        off = counted(venv, args, {**ready, **UNREADY}, "on")
        if bare is None or on is None or off is None:
            print("  (valgrind is not installed: no counts)")
            return
        flags = ("" if on / bare <= 1.02 else "  ready over target") + ("" if off / bare <= 1.5 else "  unready over")
        print(
            f"  {label + ' (' + package + ' ' + version + ')':<50} {bare / 1e6:>8.1f}M  ready {on / 1e6:>7.1f}M "
            f"{on / bare:>6.3f}x  unready {off / 1e6:>7.1f}M {off / bare:>6.3f}x{flags}"
        )


def scale_rows(venv: Venv, tmp: Path, python: Path) -> None:
    """Issue 37's rows: where users are."""
    os.chdir(tmp)
    pythonpath_rows(venv, tmp)
    growth_rows(venv)
    real_app_rows(python, tmp, venv.wheel)


if __name__ == "__main__":
    raise SystemExit(main())
