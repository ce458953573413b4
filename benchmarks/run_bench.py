"""Benchmark: what `urandom-shim run` itself costs on an unready kernel, where it decides whether its program gets a
hash seed (issue 48), as the ratio of a `run` that decides to one that does not.

    python benchmarks/run_bench.py [--wheel WHEEL] [--python PATH] [--runs N]

It makes a venv of the interpreter (default: this one) with the wheel installed (default: built from this
checkout), builds the fake kernel (tests/fakekernel.c, with the system's C compiler), and runs, interleaved, while
the fake kernel's CRNG is unready (its /dev/urandom does not wait, so no start waits and the two sides differ only
in what `run` does):

- decides: `urandom-shim run --policy legacy -- TARGET -c pass`: `run` works out what TARGET's program resolves
  (since issue 48 by asking TARGET, before it from TARGET's files), then gives the seed;
- decides nothing: the same with PYTHONHASHSEED set by the caller, which `run` never replaces, so it asks nothing.

TARGET is the venv's own python, and Debian's /usr/bin/python3 where there is one. It prints the medians of the
wall-clock time and of the CPU time of every process each side starts, their difference (what the decision costs)
and their ratio. Run it with the wheel of another version (--wheel) for the figures before a change. This prints
numbers; it is not a test, because shared machines are too noisy for timed assertions.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def build_wheel(out: Path) -> Path:
    subprocess.run([sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(out), str(ROOT)],
                   check=True, capture_output=True)  # fmt: skip
    (wheel,) = out.glob("urandom_shim-*.whl")
    return wheel


def fake_kernel(out: Path) -> Path:
    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        raise SystemExit("run_bench.py needs a C compiler (cc) to build the fake kernel, tests/fakekernel.c")
    library = out / "fakekernel.so"
    source = ROOT / "tests" / "fakekernel.c"
    subprocess.run([compiler, "-shared", "-fPIC", "-O2", "-o", str(library), str(source), "-ldl"], check=True)
    return library


def timed(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(wall-clock seconds, CPU seconds of every process it started): the CPU time moves less with the machine's
    load, which on a shared machine can double the wall-clock time."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(argv, env=env, capture_output=True, text=True)
    took = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed: {done.stderr}")
    return took, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--python", default=sys.executable, help="the interpreter of the venv `run` is installed in")
    parser.add_argument("--wheel", help="the wheel to install (default: built from this checkout)")
    parser.add_argument("--runs", type=int, default=40, help="runs of each side, interleaved")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="urandom-shim-run-bench-") as scratch:
        tmp = Path(scratch)
        wheel = Path(args.wheel) if args.wheel else build_wheel(tmp / "dist")
        venv = tmp / "venv"
        subprocess.run([args.python, "-m", "venv", str(venv)], check=True)
        subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", str(wheel)], check=True)
        flag = tmp / "kernel-unready"
        flag.touch()
        base = {k: v for k, v in os.environ.items() if not k.startswith(("URANDOM_", "PYTHON"))}
        base.update(LD_PRELOAD=str(fake_kernel(tmp)), FAKE_KERNEL_UNREADY=str(flag), XDG_CONFIG_HOME=str(tmp / "xdg"))
        cli = str(venv / "bin" / "urandom-shim")
        targets = [("the venv's own python", str(venv / "bin" / "python"))]
        if Path("/usr/bin/python3").exists():
            targets.append(("Debian's /usr/bin/python3", "/usr/bin/python3"))
        version = subprocess.run([str(venv / "bin" / "python"), "-VV"], capture_output=True, text=True).stdout.strip()
        print(f"{wheel.name}, run's venv: {version}, {args.runs} runs a side, interleaved, CRNG unready (fake kernel)")
        print(f"{'TARGET of run --policy legacy -- TARGET -c pass':<44} {'':<5} {'decides':>9} {'nothing':>9} "
              f"{'cost':>8} {'ratio':>6}")  # fmt: skip
        for label, target in targets:
            argv = [cli, "run", "--policy", "legacy", "--", target, "-c", "pass"]
            decides, nothing = [], []
            for _ in range(3):  # caches warm on both sides
                timed(argv, base)
                timed(argv, {**base, "PYTHONHASHSEED": "1"})
            for _ in range(args.runs):
                decides.append(timed(argv, base))
                nothing.append(timed(argv, {**base, "PYTHONHASHSEED": "1"}))
            for index, kind in enumerate(("wall", "CPU")):
                on = statistics.median(sample[index] for sample in decides)
                off = statistics.median(sample[index] for sample in nothing)
                print(f"{label if index == 0 else '':<44} {kind:<5} {on * 1000:>7.1f}ms {off * 1000:>7.1f}ms "
                      f"{(on - off) * 1000:>6.1f}ms {on / off:>5.2f}x")  # fmt: skip
        flag.unlink()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
