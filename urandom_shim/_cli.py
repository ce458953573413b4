"""The command line: ``urandom-shim`` (console script) and ``python -m urandom_shim``.

``status`` and ``check`` explain; ``wait`` blocks until the kernel CRNG is ready; ``run`` and ``simulate`` start a
command with chosen settings, through the bootstrap ``sitecustomize`` where the ``.pth`` does not run.

Exit codes: 0 success; 1 problems found (``check``) or timeout (``wait``); 2 usage error; 126 command not
executable; 127 command not found; 130 interrupted (Ctrl-C); 70 internal error. ``run`` and ``simulate`` replace
themselves with the command, so after a successful start every exit code and signal is the command's own.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import textwrap

from . import __version__, _config, _hashseed, _policies, _readiness, _simulation, _sources
from ._messages import bounded, line
from ._state import state

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Callable, NoReturn, Sequence

EXIT_PROBLEMS = 1
EXIT_TIMEOUT = 1
EXIT_USAGE = 2
EXIT_INTERNAL = 70  # EX_SOFTWARE
EXIT_NOT_EXECUTABLE = 126
EXIT_NOT_FOUND = 127
EXIT_INTERRUPTED = 130

PROG = "urandom-shim"
RANDOM_DIR = "/proc/sys/kernel/random"

#: Replaced by tests: the in-process tests of ``run`` must not replace the test runner.
_exec: Callable[[str, list[str], dict[str, str]], NoReturn] = os.execve


class UsageError(Exception):
    """Bad input that argparse could not see (a missing ``--``, a file that does not exist): exit 2."""


# -- facts: what status and check report ---------------------------------------------------------------------------


def _read_int(path: str) -> int | None:
    try:
        with open(path, "rb") as handle:
            return int(handle.read(32).strip())
    except (OSError, ValueError):
        return None


def kernel_facts() -> dict[str, Any]:
    """The real kernel's CRNG state, its entropy estimate and its release. Never touches a simulation."""
    uname = getattr(os, "uname", None)
    return {
        "crng": _readiness.kernel_state(),
        "entropy_avail": _read_int(os.path.join(RANDOM_DIR, "entropy_avail")),
        "poolsize": _read_int(os.path.join(RANDOM_DIR, "poolsize")),
        "release": uname().release if uname is not None else None,
    }


#: What CPython 3.6 and later (every interpreter the shim supports) do on their own before the CRNG is initialised.
NATIVE_SEMANTICS = (
    "os.urandom() and SystemRandom block until the CRNG is initialised (PEP 524); secrets blocks the same way and has "
    "no wait_for_system_rng() of its own; seeding random never blocks and falls back to time and pid (bpo-32580)."
)


SITE_LABELS = {
    _policies.URANDOM: "os.urandom(), SystemRandom",
    _policies.SECRETS: "secrets functions",
    _policies.SEED_INSTANCE: "import random, random.seed()",
    _policies.SEED_NEW: "random.Random() seeding",
}


def describe_action(todo: str, site: str, settings: _policies.Settings) -> str:
    """One line: what a call site does under ``settings`` while the CRNG is unready."""
    seeding = site in (_policies.SEED_INSTANCE, _policies.SEED_NEW)
    if todo == _policies.UNTOUCHED:
        return "the interpreter's own code (see 'this Python on its own')"
    if todo == _policies.RAISE:
        return "raises BlockingIOError at once" + (" (seeding a Random instance)" if seeding else "")
    if todo == _policies.BEST_EFFORT:
        if seeding:
            return "seeded from best-effort kernel bytes; never blocks"
        return "returns best-effort bytes at once; they may be predictable"
    timeout = settings.timeout.value
    if timeout is None:
        return "waits until the CRNG is ready, however long that takes"
    after = "returns best-effort bytes" if settings.on_timeout.value == "fallback" else "raises BlockingIOError"
    return f"waits until the CRNG is ready, at most {timeout:g} s, then {after}"


def describe_run_start(settings: _policies.Settings) -> str:
    """What ``urandom-shim run`` does for a program's interpreter start while the kernel's CRNG is unready."""
    policy, timeout = settings.policy_value, settings.timeout.value
    if policy is _policies.LEGACY:
        return "gets PYTHONHASHSEED from non-blocking kernel bytes, so it never waits"
    if policy is not _policies.NATIVE and settings.on_timeout.value == "fallback" and timeout is not None:
        return f"waits at most {timeout:g} s for the CRNG, then gets PYTHONHASHSEED from non-blocking kernel bytes"
    return "reads its hash secret from the kernel, which may wait (about 1 s on Linux 5.18+)"


def site_table(settings: _policies.Settings) -> list[dict[str, str]]:
    policy = settings.policy_value
    seed_mode = str(settings.seed_random_instances.value)
    rows = []
    for site in _policies.SITES:
        todo = _policies.action(policy, site, seed_mode)
        rows.append(
            {"site": site, "label": SITE_LABELS[site], "action": todo, "says": describe_action(todo, site, settings)}
        )
    return rows


def _simulation_facts(problems: list[str]) -> dict[str, Any] | None:
    spec = os.environ.get(_simulation.ENV)
    if not spec:  # empty counts as not set
        return None
    try:
        sim = _simulation.parse(spec)
    except _simulation.InvalidSimulation as exc:
        problems.append(_simulation.problem(spec, exc))
        return {"spec": spec, "valid": False, "unready": False}
    return {"spec": spec, "valid": True, "unready": sim.unready()}


def _pth_locations() -> list[str]:
    import site

    directories = list(getattr(site, "getsitepackages", lambda: [])())
    user = getattr(site, "getusersitepackages", None)
    if user is not None and site.ENABLE_USER_SITE:
        directories.append(user())
    return [os.path.join(d, "urandom_shim.pth") for d in directories]


def activation_facts() -> dict[str, Any]:
    """Whether the shim started in this interpreter, how, and if not, why not."""
    how = getattr(sys, "_urandom_shim_boot", None) or state.activated_by
    pth = next((path for path in _pth_locations() if os.path.isfile(path)), None)
    reason = state.inactive_reason
    disable = os.environ.get("URANDOM_SHIM_DISABLE", "")
    if how is None and reason is None:
        if disable not in ("", "0"):
            reason = f"the kill switch is on: URANDOM_SHIM_DISABLE={disable!r} (unset it, or set it to 0)"
        elif sys.flags.no_site:
            reason = "Python runs with -S, which skips site-packages and the shim's .pth file with it"
        elif pth is None:
            reason = (
                "urandom_shim.pth is not in this interpreter's site-packages; install urandom-shim in this "
                "environment, or start programs with `urandom-shim run -- ...`"
            )
        else:
            reason = f"{pth} exists but did not run in this interpreter"
    engine = state.engine
    return {
        "active": how is not None and state.inactive_reason is None,
        "activated_by": how,
        "inactive_reason": reason,
        "pth": pth,
        "patched": engine is not None and engine.engaged,
        "package": os.path.dirname(os.path.abspath(__file__)),
    }


ACTIVATED_BY = {
    "pth": "urandom_shim.pth, at start-up",
    "start": "urandom_shim.start (PEP 829), at start-up",
    "bootstrap": "the bootstrap sitecustomize of `urandom-shim run`",
    "runtime": "urandom_shim.activate(), at runtime",
}


def status_report() -> dict[str, Any]:
    """Everything ``status`` says, as one JSON-ready object."""
    problems: list[str] = []
    simulation = _simulation_facts(problems)
    kernel = kernel_facts()
    activation = activation_facts()
    who, described = _program(None)
    settings, config_problems = _config.resolve(who=who)
    problems.extend(config_problems)
    if activation["inactive_reason"] and not activation["active"]:
        problems.append(f"not active in this interpreter: {activation['inactive_reason']}.")
    simulated_unready = simulation is not None and simulation["unready"]
    crng = _readiness.UNREADY if simulated_unready else kernel["crng"]
    return {
        "version": __version__,
        "python": {
            "executable": sys.executable,
            "version": ".".join(str(part) for part in sys.version_info[:3]),
            "native": NATIVE_SEMANTICS,
        },
        **activation,
        "policy": settings.policy_value.name,
        "policy_source": settings.policy.source,
        "settings": {name: {"value": value, "source": source} for name, (value, source) in settings.as_dict().items()},
        "resolved_for": described,
        "sites": site_table(settings),
        "run_start": describe_run_start(settings),
        "crng": crng,
        "kernel": kernel,
        "simulation": simulation,
        "problems": problems,
    }


def _cwd() -> str | None:
    try:
        return os.getcwd()
    except OSError:
        return None


# -- output helpers ------------------------------------------------------------------------------------------------


def _rows(rows: Sequence[tuple[str, ...]], indent: str = "  ", widest: int = 48) -> list[str]:
    """Rows of cells, each column padded to its widest cell (the last column is not padded). A first cell longer
    than ``widest`` (a long path) gets a line of its own, so that one long path does not push every row right."""
    if not rows:
        return []
    fitting = [row for row in rows if len(row[0]) <= widest] or [("",)]
    widths = [max((len(row[i]) for row in fitting if len(row) > i), default=0) for i in range(max(map(len, rows)))]
    lines = []
    for row in rows:
        if len(row[0]) > widest and len(row) > 1:
            lines.append(indent + row[0])
            row = ("", *row[1:])
        cells = [cell.ljust(widths[i]) if i < len(row) - 1 else cell for i, cell in enumerate(row)]
        lines.append((indent + "  ".join(cells)).rstrip())
    return lines


def _value(value: object) -> str:
    if value is None:
        return "none"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def _print(lines: list[str]) -> None:
    sys.stdout.write("\n".join(lines) + "\n")


def _json(data: object) -> None:
    import json

    sys.stdout.write(json.dumps(data, indent=2) + "\n")


# -- status --------------------------------------------------------------------------------------------------------


def cmd_status(args: argparse.Namespace) -> int:
    report = status_report()
    if args.json:
        _json(report)
        return 0
    python = report["python"]
    lines = [f"urandom-shim {report['version']}, in {python['executable']} (Python {python['version']})", ""]
    if report["active"]:
        active = f"yes, started by {ACTIVATED_BY.get(report['activated_by'], report['activated_by'])}"
    else:
        active = f"no: {report['inactive_reason']}"
    if report["patched"]:
        patched = "yes: the CRNG is not ready, so the policy's functions are in place"
    elif report["crng"] == _readiness.UNREADY and report["active"]:
        own = _own_settings().policy
        patched = f"no: this urandom-shim process itself runs under policy '{own.value}' (from {own.source})"
    else:
        patched = "no: every function is the interpreter's own"
    lines.append("Shim")
    if report["pth"] is not None:
        installed = report["pth"]
    elif report["activated_by"] == "bootstrap":
        installed = f"not in this environment; the bootstrap loaded {report['package']}"
    else:
        installed = "no urandom_shim.pth in this interpreter's site-packages"
    lines += _rows([("active", active), ("patched now", patched), ("installed", installed)])
    kernel = report["kernel"]
    sim = report["simulation"]
    lines += ["", "Kernel CRNG"]
    crng_rows = [("state", _crng_phrase(kernel["crng"]))]
    if sim is not None:
        if sim["valid"]:
            crng_rows.append(
                ("simulated", f"{'unready' if sim['unready'] else 'ready'} (URANDOM_SHIM_SIMULATE={sim['spec']})")
            )
        else:
            crng_rows.append(("simulated", f"no: URANDOM_SHIM_SIMULATE={sim['spec']!r} is not valid"))
    entropy = kernel["entropy_avail"]
    if entropy is not None:
        pool = kernel["poolsize"]
        crng_rows.append(("entropy_avail", f"{entropy}" + (f" of {pool} bits" if pool is not None else " bits")))
    crng_rows.append(("kernel", kernel["release"] or "unknown"))
    lines += _rows(crng_rows)
    lines += [
        "",
        f"Configuration for `{report['resolved_for']}` (`urandom-shim check --for PROGRAM` shows a program's)",
    ]
    lines += _rows([(name, _value(s["value"]), f"from {s['source']}") for name, s in report["settings"].items()])
    lines += ["", f"While the CRNG is not ready, under {report['policy']}"]
    site_rows = [(row["label"], row["says"]) for row in report["sites"]]
    site_rows.append(("secrets.wait_for_system_rng()", "added under every policy; returns at once when ready"))
    site_rows.append(("a start under `run`", report["run_start"]))
    lines += _rows(site_rows)
    lines += ["", f"This Python on its own ({python['version']})"]
    lines += textwrap.wrap(python["native"], width=100, initial_indent="  ", subsequent_indent="  ")
    lines += ["", "Problems" + (f" ({len(report['problems'])})" if report["problems"] else "")]
    lines += [f"  {line(p)}" for p in bounded(report["problems"])] or ["  none"]
    _print(lines)
    return 0


def _own_settings() -> _policies.Settings:
    from ._runtime import current_settings

    return current_settings()


def _crng_phrase(state: str) -> str:
    if state == _readiness.READY:
        return "ready (initialised)"
    if state == _readiness.UNREADY:
        return "unready: not initialised yet; reads that need it block or fail"
    return "unknown: getrandom() is missing or denied, so it counts as ready, as the interpreter assumes"


# -- check ---------------------------------------------------------------------------------------------------------


def _program(target: str | None) -> tuple[_sources.Invocation, str]:
    """Who to resolve for: a script path, ``-m NAME`` (a module, explicitly), a console script or other command on
    ``PATH``, a module name, or (None) ``python -c`` in the current directory."""
    cwd = _cwd()
    if target is None:
        return _sources.Invocation(cwd, None, rule="-c: the current directory"), "python -c" + (
            f" in {cwd}" if cwd else ""
        )
    explicit_module = target.startswith("-m")
    name = target[2:].strip() if explicit_module else target
    is_module_name = bool(name) and all(part.isidentifier() for part in name.split("."))
    in_cwd = f" in {cwd}" if cwd else ""
    if explicit_module:
        if not is_module_name:
            raise UsageError(f"--for {target!r}: after -m comes a module name such as 'app.main'")
        return _sources.module_invocation(name, cwd, name, f"-m {name}"), f"python -m {name}{in_cwd}"
    if os.sep in target or target.endswith((".py", ".pyz")) or os.path.isfile(target):
        return _sources.invocation([target]), f"python {target}"
    command = shutil.which(target)
    if command is not None:  # a console script or other program on PATH, as the shell would find it
        return _sources.invocation([command]), f"{target} (found on PATH: {command})"
    if is_module_name:  # a package directory here is still a module name: `python -m` is what runs it
        return _sources.module_invocation(name, cwd, name, f"-m {name}"), f"python -m {name}{in_cwd}"
    if os.path.isdir(target):
        return _sources.invocation([target]), f"python {target}"
    raise UsageError(
        f"--for {target!r} is neither a script (a path that exists, or ends in .py), a command on PATH, nor a module "
        "name such as 'app.main' (write '-m app.main' to say it is one)"
    )


def cmd_check(args: argparse.Namespace) -> int:
    if args.module is not None and args.target is not None:
        raise UsageError("give --for or --module, not both")
    who, described = _program(args.target if args.module is None else f"-m {args.module}")
    problems: list[str] = []
    _simulation_facts(problems)
    trace: list[tuple[str, list[str]]] = []
    settings, config_problems = _config.resolve(who=who, trace=trace)
    problems.extend(config_problems)
    if args.json:
        _json(
            {
                "resolved_for": described,
                "program": who.program,
                "project_rule": who.rule,
                "sources": [{"source": label, "notes": notes} for label, notes in trace],
                "settings": {k: {"value": v, "source": s} for k, (v, s) in settings.as_dict().items()},
                "policy": settings.policy_value.name,
                "policy_source": settings.policy.source,
                "problems": problems,
                "clean": not problems,
            }
        )
        return EXIT_PROBLEMS if problems else 0
    lines = [f"Configuration for `{described}`", f"Where its project is: {who.rule}", ""]
    lines += ["Sources tried, highest precedence first"]
    source_rows: list[tuple[str, ...]] = []
    for label, notes in trace:
        source_rows.append((label, notes[0] if notes else "nothing of ours"))
        source_rows.extend(("", note) for note in notes[1:])
    lines += _rows(source_rows)
    lines += ["", "Effective settings"]
    lines += _rows([(k, _value(v), f"from {s}") for k, (v, s) in settings.as_dict().items()])
    lines += ["", "Started by `urandom-shim run` while the CRNG is not ready"]
    lines += _rows([("interpreter start", describe_run_start(settings))])
    if problems:
        lines += ["", f"Problems ({len(problems)}): {PRINTED_WHEN}"]
        lines += [f"  {line(p)}" for p in bounded(problems)]
        lines += ["", "Exit status 1: fix the problems above."]
    else:
        lines += ["", "No problems."]
    _print(lines)
    return EXIT_PROBLEMS if problems else 0


#: When an interpreter prints the lines ``check`` lists.
PRINTED_WHEN = (
    "an interpreter prints these when it starts while the CRNG is not ready; every start prints the ones about "
    "URANDOM_* variables"
)


# -- wait ----------------------------------------------------------------------------------------------------------


class _StatusLine:
    """A live line on a terminal, rewritten in place with a carriage return; nothing at all elsewhere."""

    def __init__(self, stream: Any, enabled: bool) -> None:
        self.stream = stream
        self.enabled = enabled
        self.width = 0

    def show(self, text: str, final: bool = False) -> None:
        if not self.enabled:
            return
        padded = text.ljust(self.width)
        self.width = 0 if final else len(text)
        self.stream.write("\r" + padded + ("\n" if final else ""))
        self.stream.flush()


def cmd_wait(args: argparse.Namespace) -> int:
    import time

    stream = sys.stderr
    live = _StatusLine(stream, not args.quiet and stream is not None and stream.isatty())
    start = time.monotonic()
    deadline = None if args.timeout is None else start + args.timeout
    entropy_path = os.path.join(RANDOM_DIR, "entropy_avail")

    sim = _simulation.current()

    def progress(word: str) -> str:
        if sim is not None:  # the real kernel's entropy count says nothing about a simulated state
            tail = f" (simulated by {_simulation.ENV}={sim.spec})"
        else:
            entropy = _read_int(entropy_path)
            tail = "" if entropy is None else f", entropy_avail {entropy} bits"
        return f"urandom-shim wait: kernel CRNG {word} after {time.monotonic() - start:.1f} s{tail}"

    try:
        while True:
            if _readiness.is_ready():
                how = "ready" if _readiness.state() == _readiness.READY else "state unknown (counts as ready)"
                live.show(progress(how), final=True)
                return 0
            now = time.monotonic()
            if deadline is not None and now >= deadline:
                break
            live.show(progress("not ready yet"))
            _readiness.wait(0.2 if deadline is None else min(0.2, deadline - now))
    except KeyboardInterrupt:
        live.show(progress("not ready; interrupted"), final=True)
        return EXIT_INTERRUPTED
    live.show(progress("still not ready; giving up"), final=True)
    if not args.quiet and not live.enabled:
        from ._messages import emit
        from ._runtime import ENTROPY_HINT, simulation_note

        emit(
            f"wait: the kernel's random number generator was still not ready after {args.timeout:g} s (--timeout); "
            f"exit status 1. To end the wait, {ENTROPY_HINT}.{simulation_note()}"
        )
    return EXIT_TIMEOUT


# -- run and simulate ----------------------------------------------------------------------------------------------


def bootstrap_directory() -> str | None:
    """The directory holding the bootstrap ``sitecustomize.py``: in the package for a wheel, beside the ``.pth``
    for an editable install."""
    candidates = [os.path.join(os.path.dirname(os.path.abspath(__file__)), "_bootstrap")]
    candidates += [os.path.join(os.path.dirname(pth), "urandom_shim_bootstrap") for pth in _pth_locations()]
    for directory in candidates:
        if os.path.isfile(os.path.join(directory, "sitecustomize.py")):
            return directory
    return None


def home_directory() -> str:
    """The directory holding the ``urandom_shim`` package and ``_urandom_shim_boot``: what the bootstrap loads."""
    return os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def command_environment(settings: dict[str, str], simulate: str | None = None) -> dict[str, str]:
    """The environment ``run`` gives its command: the settings as variables, and the bootstrap on PYTHONPATH."""
    env = dict(os.environ)
    env.update(_config.variables(settings))
    if simulate is not None:
        env[_simulation.ENV] = simulate
    bootstrap = bootstrap_directory()
    if bootstrap is None:
        from ._messages import emit

        emit(
            "run: the bootstrap directory is missing from this installation, so only interpreters that have "
            "urandom-shim installed will apply these settings; reinstall urandom-shim to fix it."
        )
    else:
        rest = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p and p != bootstrap]
        env["PYTHONPATH"] = os.pathsep.join([bootstrap, *rest])
        env["URANDOM_SHIM_HOME"] = home_directory()
    return env


def find_command(name: str, path: str | None) -> tuple[str | None, int, str]:
    """(path, 0, "") for an executable, else (None, 126 or 127, what a shell would say)."""
    if os.sep in name:
        candidates = [name]
    else:
        directories = (path if path is not None else os.defpath).split(os.pathsep)
        candidates = [os.path.join(d or os.curdir, name) for d in directories]
    not_executable = None
    for candidate in candidates:
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate, 0, ""
        if not_executable is None and os.path.exists(candidate):
            not_executable = candidate
    if not_executable is not None:
        what = "Is a directory" if os.path.isdir(not_executable) else "Permission denied"
        return None, EXIT_NOT_EXECUTABLE, f"{not_executable}: {what} (not an executable file)"
    if os.sep in name:
        return None, EXIT_NOT_FOUND, f"{name}: No such file or directory"
    return None, EXIT_NOT_FOUND, f"{name}: command not found (searched PATH)"


def _launch(subcommand: str, command: list[str], env: dict[str, str]) -> int:
    disable = env.get("URANDOM_SHIM_DISABLE", "")
    if disable not in ("", "0"):
        from ._messages import emit

        emit(
            f"{subcommand}: URANDOM_SHIM_DISABLE={disable!r} is set, so {command[0]} runs without the shim; unset it "
            "to apply these settings."
        )
    executable, code, message = find_command(command[0], env.get("PATH"))
    if executable is None:
        sys.stderr.write(f"{PROG} {subcommand}: {message}\n")
        return code
    for stream in (sys.stdout, sys.stderr):
        if stream is not None:
            stream.flush()
    try:
        _exec(executable, command, env)
    except OSError as exc:
        import errno

        reason = exc.strerror or str(exc)
        if exc.errno == errno.ENOENT:  # the file exists, so it is the #! line's interpreter that does not
            reason = f"bad interpreter in its #! line: {reason}"
        sys.stderr.write(f"{PROG} {subcommand}: {executable}: cannot execute: {reason}\n")
        return EXIT_NOT_EXECUTABLE
    return 0  # pragma: no cover - only a replaced _exec returns


def _settings_from(args: argparse.Namespace) -> dict[str, str]:
    settings = {}
    for key in _config.KEYS:
        value = getattr(args, key, None)
        if value is not None:
            settings[key] = value
    return settings


def _note_floor(subcommand: str, settings: dict[str, str]) -> None:
    """Say once, the day it is typed, that a weak setting will not apply because of a floor: the command itself only
    says so while the CRNG is not ready."""
    instead = {"policy": ("legacy", "pep524"), "on_timeout": ("fallback", "raise")}
    asked = [(key, weak, strong) for key, (weak, strong) in instead.items() if settings.get(key) == weak]
    if not asked:
        return
    found, _problems = _config.floor()
    if found is None:
        return
    from ._messages import emit

    given = " and ".join(f"--{key.replace('_', '-')} {weak}" for key, weak, _ in asked)
    used = " and ".join(f"{key} '{strong}'" for key, _, strong in asked)
    emit(
        f"{subcommand}: {given} would allow weak bytes, but the floor set by {found} forbids them, so the command "
        f"gets {used} instead while the CRNG is not ready."
    )


def start_without_waiting(command: list[str], env: dict[str, str]) -> bool:
    """Give ``command`` a hash seed (in ``env``) so that its interpreter's start never waits for the kernel, when the
    kernel's CRNG is unready and the command's policy allows weak bytes: ``legacy``, or ``on_timeout = "fallback"``
    after waiting out its ``timeout`` here. Never under a floor, never over a seed the caller set, and never on a
    ready kernel. See :mod:`urandom_shim._hashseed`. True if it did."""
    if _hashseed.VARIABLE in env or _readiness.kernel_state() != _readiness.UNREADY:
        return False
    settings, _problems = _config.resolve(env, flags=object(), who=_sources.command_invocation(command))
    if settings.policy_value is not _policies.LEGACY:
        timeout = settings.timeout.value
        if settings.policy_value is _policies.NATIVE or settings.on_timeout.value != "fallback" or timeout is None:
            return False
        if _readiness.wait(timeout):  # type: ignore[arg-type]
            return False  # ready in time: the command gets a full-strength hash secret
    _hashseed.give(env)
    return True


def cmd_run(args: argparse.Namespace) -> int:
    settings = _settings_from(args)
    _note_floor("run", settings)
    env = command_environment(settings)
    start_without_waiting(args.command, env)
    return _launch("run", args.command, env)


def cmd_simulate(args: argparse.Namespace) -> int:
    if args.unready_forever:
        spec = "unready-forever"
    elif args.unready_for is not None:
        import time

        # Pinned now: the command and all its descendants share one deadline on CLOCK_MONOTONIC.
        spec = f"unready-until-monotonic:{time.monotonic() + args.unready_for!r}"
    else:
        path = os.path.abspath(args.unready_until_file)
        if not os.path.exists(path):
            raise UsageError(
                f"--unready-until-file {args.unready_until_file!r} does not exist, so the simulated CRNG would be "
                "ready from the start; create the file first, and delete it to make the CRNG ready"
            )
        spec = f"unready-until-file:{path}"
    settings = _settings_from(args)
    _note_floor("simulate", settings)
    env = command_environment(settings, simulate=spec)
    start_without_waiting(args.command, env)
    return _launch("simulate", args.command, env)


# -- argument parsing ----------------------------------------------------------------------------------------------


def _value_type(key: str, metavar: str) -> Callable[[str], str]:
    """An argparse type that checks a value with the configuration's own parser, and keeps the text."""
    parse = _config.KEYS[key][1]

    def check(text: str) -> str:
        try:
            parse(text, True)
        except _config.InvalidValue as exc:
            raise argparse.ArgumentTypeError(
                f"{text!r} is not a valid {key}; expected {exc.expected}{exc.hint}"
            ) from None
        return text

    check.__name__ = metavar
    return check


def _seconds(text: str) -> float:
    """Seconds: a finite number >= 0 (``simulate --unready-for``)."""
    try:
        value = _config.parse_timeout(text, True)
    except _config.InvalidValue:
        value = None
    if value is None:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds; expected a finite number >= 0")
    assert isinstance(value, float)
    return value


def _seconds_or_none(text: str) -> float | None:
    """``wait --timeout``: seconds, or ``none`` for no limit, as ``run --timeout`` and the configuration take."""
    try:
        value = _config.parse_timeout(text, True)
    except _config.InvalidValue:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a number of seconds; expected a finite number >= 0, or 'none'"
        ) from None
    assert value is None or isinstance(value, float)
    return value


class _Parser(argparse.ArgumentParser):
    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", argparse.RawDescriptionHelpFormatter)
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(**kwargs)


STATUS_HELP = """\
Say whether the shim is active in this interpreter and how it started, the effective policy and options with the
source of each, what each call site does while the CRNG is not ready, the kernel CRNG state, and any configuration
problems.

examples:
  urandom-shim status
  urandom-shim status --json | jq .crng
  URANDOM_POLICY=pep522 urandom-shim status
"""

CHECK_HELP = """\
Resolve the configuration as a program would see it, print every source tried and what it contributed, and exit 0
when it is clean or 1 when there are problems: the lines an interpreter prints when it starts while the CRNG is not
ready (every start prints those about URANDOM_* variables). For the CI of deployment images.

examples:
  urandom-shim check
  urandom-shim check --for /usr/local/bin/cloud-setup.py
  urandom-shim check --for app.main          # as `python -m app.main` would see it
  urandom-shim check --for app-cli           # a console script on PATH: its target module's project
  urandom-shim check --module app            # as `python -m app`, even with an app/ directory here
"""

WAIT_HELP = """\
Block until the kernel CRNG is initialised. Exit 0 when it is, 1 when --timeout runs out, 130 on Ctrl-C. On a
terminal a live line shows the time waited and entropy_avail; otherwise it prints nothing unless it times out.

examples:
  urandom-shim wait --timeout 30
  ExecStartPre=/opt/app/venv/bin/urandom-shim wait --timeout 30      # in a systemd unit
"""

RUN_HELP = """\
Run CMD with these settings. They reach CMD and its children as environment variables, and a bootstrap
sitecustomize on PYTHONPATH applies them in interpreters that don't have urandom-shim installed (it runs the
sitecustomize it shadows, such as Debian's, exactly once). While the kernel's CRNG is not ready and CMD's policy
allows weak bytes (legacy), CMD also gets a PYTHONHASHSEED from non-blocking kernel bytes, so that its start never
waits. The command replaces urandom-shim, so its exit status and signals are its own.

examples:
  urandom-shim run --policy pep522 -- python3 app.py
  urandom-shim run --policy pep524 --timeout 30 --on-timeout raise -- /usr/bin/python3 -m cloudinit.cmd.main
"""

SIMULATE_HELP = """\
Run CMD as if the kernel CRNG were not initialised yet, to see what an application does at early boot. The
simulated state passes to child processes. The kernel is never touched and every byte still comes from it.

examples:
  urandom-shim simulate --unready-for 3 --policy pep524 -- python3 app.py
  urandom-shim simulate --unready-forever --policy pep522 -- python3 -c "import os; os.urandom(8)"
  touch /tmp/unready; urandom-shim simulate --unready-until-file /tmp/unready -- ./start.sh   # rm it to end
"""


def _add_settings(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("settings (as URANDOM_POLICY and URANDOM_SHIM_* variables)")
    names = "|".join(p.name for p in _policies.POLICIES)
    group.add_argument("--policy", metavar=names, type=_value_type("policy", "policy"))
    group.add_argument(
        "--timeout", metavar="SECONDS", type=_value_type("timeout", "seconds"), help="longest wait, or 'none'"
    )
    group.add_argument(
        "--on-timeout", dest="on_timeout", metavar="raise|fallback", type=_value_type("on_timeout", "choice")
    )
    group.add_argument(
        "--warn-after",
        dest="warn_after",
        metavar="SECONDS",
        type=_value_type("warn_after", "seconds"),
        help="seconds of waiting before one diagnostic line, or 'none'",
    )
    group.add_argument(
        "--seed-random-instances",
        dest="seed_random_instances",
        metavar="nonblocking|policy",
        type=_value_type("seed_random_instances", "choice"),
    )


def build_parser() -> tuple[argparse.ArgumentParser, dict[str, argparse.ArgumentParser]]:
    parser = _Parser(
        prog=PROG,
        description="Choose what os.urandom() does before the kernel's random number generator is initialised.",
        epilog="Run `urandom-shim COMMAND --help` for each command's options and examples.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = parser.add_subparsers(dest="subcommand", metavar="COMMAND", parser_class=_Parser)
    subs: dict[str, argparse.ArgumentParser] = {}

    sub = commands.add_parser("status", help="what the shim does in this interpreter, and why", description=STATUS_HELP)
    sub.add_argument("--json", action="store_true", help="print one JSON object")
    subs["status"] = sub

    sub = commands.add_parser("check", help="check the configuration a program would get", description=CHECK_HELP)
    sub.add_argument(
        "--for",
        dest="target",
        metavar="PROGRAM",
        help="a script path, a command on PATH (a console script), or a module name as given to python -m "
        "(default: python -c, here)",
    )
    sub.add_argument(
        "--module",
        metavar="MODULE",
        help="resolve for python -m MODULE, even where a file, directory or command has that name",
    )
    sub.add_argument("--json", action="store_true", help="print one JSON object")
    subs["check"] = sub

    sub = commands.add_parser("wait", help="block until the kernel CRNG is ready", description=WAIT_HELP)
    sub.add_argument(
        "--timeout",
        metavar="SECONDS",
        type=_seconds_or_none,
        help="give up after SECONDS (exit 1), or 'none' (the default)",
    )
    sub.add_argument("--quiet", action="store_true", help="print nothing, even on a terminal or a timeout")
    subs["wait"] = sub

    usage = "%(prog)s [options] -- CMD [ARGS ...]"
    sub = commands.add_parser("run", help="run a command with a policy", description=RUN_HELP, usage=usage)
    _add_settings(sub)
    subs["run"] = sub

    usage = "%(prog)s (--unready-for SECONDS | --unready-until-file PATH | --unready-forever) [options] -- CMD ..."
    sub = commands.add_parser(
        "simulate", help="run a command as if at early boot", description=SIMULATE_HELP, usage=usage
    )
    when = sub.add_mutually_exclusive_group(required=True)
    when.add_argument("--unready-for", metavar="SECONDS", type=_seconds, help="unready for SECONDS from now")
    when.add_argument("--unready-until-file", metavar="PATH", help="unready while PATH exists")
    when.add_argument("--unready-forever", action="store_true", help="unready for as long as CMD runs")
    _add_settings(sub)
    subs["simulate"] = sub
    return parser, subs


COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    "status": cmd_status,
    "check": cmd_check,
    "wait": cmd_wait,
    "run": cmd_run,
    "simulate": cmd_simulate,
}
TAKES_COMMAND = ("run", "simulate")


def _parse(argv: list[str]) -> tuple[argparse.Namespace, argparse.ArgumentParser]:
    """Parse everything before ``--``; what follows it is the command, untouched."""
    parser, subs = build_parser()
    command: list[str] | None = None
    if "--" in argv:
        split = argv.index("--")
        argv, command = argv[:split], argv[split + 1 :]
    args, extra = parser.parse_known_args(argv)
    if args.subcommand is None:
        parser.error("choose a command: status, check, wait, run or simulate")
    sub = subs[args.subcommand]
    if args.subcommand in TAKES_COMMAND:
        if command is None:
            given = f" (got {' '.join(extra)!r})" if extra else ""
            sub.error(
                f"missing '--' before the command{given}; write: {PROG} {args.subcommand} [options] -- CMD [ARGS ...]"
            )
        if not command:
            sub.error("no command after '--'")
    elif command is not None:
        sub.error(f"'--' and a command are only for run and simulate, not {args.subcommand}")
    if extra:
        sub.error(f"unrecognized arguments: {' '.join(extra)}")
    args.command = command
    return args, sub


def restore_callers_hash_seed() -> None:
    """The launcher (``bin/urandom-shim``, a shell script) starts this interpreter with ``PYTHONHASHSEED=0`` so that
    starting the command line never waits for the kernel: the command line reads only its own arguments and
    configuration files, where hash flooding is no concern. Before anything else, put back the caller's own."""
    if os.environ.pop("URANDOM_SHIM_LAUNCHER", None) is None:
        return
    caller = os.environ.pop("URANDOM_SHIM_CALLER_HASHSEED", None)
    if caller is None:
        os.environ.pop(_hashseed.VARIABLE, None)
    else:
        os.environ[_hashseed.VARIABLE] = caller


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    restore_callers_hash_seed()
    arguments = list(sys.argv[1:] if argv is None else argv)
    try:
        args, sub = _parse(arguments)
    except SystemExit as exc:  # argparse: --help, --version (0), or a usage error (2), already printed
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else EXIT_USAGE)
    try:
        return COMMANDS[args.subcommand](args)
    except UsageError as exc:
        sub.print_usage(sys.stderr)
        sys.stderr.write(f"{sub.prog}: error: {exc}\n")
        return EXIT_USAGE
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # `urandom-shim status | head -1`: the reader left; say nothing more
        _silence_stdout()
        return EXIT_PROBLEMS
    except Exception as exc:  # noqa: BLE001 - no traceback reaches the user unless asked for
        if os.environ.get("URANDOM_SHIM_DEBUG", "") not in ("", "0"):
            import traceback

            traceback.print_exc()
        sys.stderr.write(
            f"urandom-shim: internal error in `{PROG} {args.subcommand}` ({type(exc).__name__}: {exc}); rerun with "
            "URANDOM_SHIM_DEBUG=1 for the traceback, and please report it.\n"
        )
        return EXIT_INTERNAL


def _silence_stdout() -> None:
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, AttributeError, ValueError):
        pass
