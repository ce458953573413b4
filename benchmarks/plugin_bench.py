"""Benchmark: what the pytest plugin costs a real project's suite, as ratios against the same suite without it.

    python benchmarks/plugin_bench.py --python VENV/bin/python --suite DIR [--runs N] [--policy pep522] [-- ARGS]

VENV has the project, its test requirements and urandom-shim installed; DIR is where its tests run from (the
unpacked sdist). Each round runs the suite three ways, in turn, so that all three share the machine's noise:

- without the plugin: ``pytest -p no:urandom_shim``
- report mode: ``pytest --urandom-policy=POLICY --urandom-report-only``
- enforced: ``pytest --urandom-policy=POLICY``

and prints, for each, the median wall-clock time of its runs and its ratio to the first, the same for the CPU time
of pytest and every process it waited for (less moved by other users of a shared machine), and its outcome counts
(which must not change from run to run). The budget (issue 46), on werkzeug 3.1.9's suite: report mode and enforced mode
each <= 1.3x. Enforced, the tests the policy breaks fail quickly, and some suites end sooner than without it.

To measure werkzeug 3.1.9 as the issue did (Python 3.11)::

    pip download --no-deps --no-binary :all: werkzeug==3.1.9 && tar xzf werkzeug-3.1.9.tar.gz
    python3.11 -m venv /tmp/wz && /tmp/wz/bin/pip install ./werkzeug-3.1.9 cffi cryptography \\
        ephemeral-port-reserve pytest pytest-timeout watchdog dist/urandom_shim-*.whl
    python benchmarks/plugin_bench.py --python /tmp/wz/bin/python --suite werkzeug-3.1.9

This prints numbers; it is not a test, because shared machines are too noisy for timed assertions.
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import statistics
import subprocess
import sys
import time

#: The ratio to the suite without the plugin that report mode and enforced mode each stay within.
BUDGET = 1.3
OUTCOME = re.compile(r"(\d+) (passed|failed|skipped|errors?|xfailed|xpassed)")


def run(python: str, suite: str, args: list[str], timeout: float) -> tuple[float, float, str]:
    """One run: its wall-clock seconds, its CPU seconds (with its children's), and its outcome counts, as pytest's
    last line gives them."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("URANDOM_")}
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    began = time.monotonic()
    try:
        result = subprocess.run(
            [python, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args],
            cwd=suite,
            capture_output=True,
            text=True,
            env=env,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired:
        return timeout, float("nan"), f"still running after {timeout:g} s (killed)"
    seconds = time.monotonic() - began
    now = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (now.ru_utime - used.ru_utime) + (now.ru_stime - used.ru_stime)
    last = (result.stdout.strip().splitlines() or [""])[-1]
    counts = ", ".join(f"{n} {word}" for n, word in OUTCOME.findall(last)) or f"exit {result.returncode}: {last!r}"
    return seconds, cpu, counts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--python", required=True, help="the venv's python, with the suite's requirements")
    parser.add_argument("--suite", required=True, help="the directory the suite runs from")
    parser.add_argument("--runs", type=int, default=5, help="rounds (default 5)")
    parser.add_argument("--policy", default="pep522", help="the policy of --urandom-policy (default pep522)")
    parser.add_argument("--timeout", type=float, default=1800, help="seconds one run may last (default 1800)")
    parser.add_argument("pytest_args", nargs="*", help="more arguments for pytest, after --")
    args = parser.parse_args(argv)
    python = os.path.abspath(args.python)  # the runs start in the suite's directory
    ways = [
        ("without the plugin", ["-p", "no:urandom_shim"]),
        ("report mode", [f"--urandom-policy={args.policy}", "--urandom-report-only"]),
        ("enforced", [f"--urandom-policy={args.policy}"]),
    ]
    times: dict[str, list[float]] = {name: [] for name, _ in ways}
    cpus: dict[str, list[float]] = {name: [] for name, _ in ways}
    outcomes: dict[str, set[str]] = {name: set() for name, _ in ways}
    for round_ in range(args.runs):
        for name, extra in ways:
            seconds, cpu, counts = run(python, args.suite, [*extra, *args.pytest_args], args.timeout)
            times[name].append(seconds)
            cpus[name].append(cpu)
            outcomes[name].add(counts)
            print(f"round {round_ + 1}/{args.runs}: {name:<20} {seconds:7.2f} s, CPU {cpu:7.2f} s  {counts}",
                  file=sys.stderr)  # fmt: skip
    base, base_cpu = statistics.median(times[ways[0][0]]), statistics.median(cpus[ways[0][0]])
    print(f"{'':<20} {'wall':>9} {'ratio':>6} {'CPU':>9} {'ratio':>6}  outcomes")
    worst = 0.0
    for name, _extra in ways:
        median, cpu = statistics.median(times[name]), statistics.median(cpus[name])
        ratio = median / base
        if name != ways[0][0]:
            worst = max(worst, ratio)
        print(f"{name:<20} {median:8.2f}s {ratio:5.2f}x {cpu:8.2f}s {cpu / base_cpu:5.2f}x  "
              f"{' | '.join(sorted(outcomes[name]))}")  # fmt: skip
    verdict = "met" if worst <= BUDGET else "NOT met"
    print(f"budget: each mode <= {BUDGET}x the suite without the plugin (wall): {verdict}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
