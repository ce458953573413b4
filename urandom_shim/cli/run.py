"""``run`` and ``simulate``: start a command with chosen settings (and, for ``simulate``, a simulated unready CRNG),
through :mod:`.launch`; ``simulate --report-only`` runs it as a child and prints the report of its events.
"""

from __future__ import annotations

import argparse
import os
import sys

from .. import _config, _messages, _policies
from . import launch
from .exits import EXIT_NOT_EXECUTABLE, UsageError
from .launch import PROG


def _settings_from(args: argparse.Namespace) -> dict[str, str]:
    settings = {}
    for key in _config.KEYS:
        value = getattr(args, key, None)
        if value is not None:
            settings[key] = value
    return settings


def _given_as(command: str, args: argparse.Namespace, settings: dict[str, str]) -> str:
    """:data:`urandom_shim._config.ENV_GIVEN_AS` for the flags typed: so that the command's settings name them as
    their source (``from urandom-shim simulate --policy``) rather than the variables that carry them."""
    lines = [command]
    for key, value in settings.items():
        flag = "--" + key.replace("_", "-")
        if key == "mode" and "--report-only" in getattr(args, "typed", ()):
            flag = "--report-only"
        lines.append(f"{flag}\t{_config.KEYS[key].variable}\t{value}")
    return "\n".join(lines)


def _check_environment(subcommand: str) -> None:
    """Refuse an environment that no program can be given: an entry without a name (``=x``), which the C library
    lets a parent pass and ``execve`` refuses to pass on."""
    from .. import _sources

    for name, value in os.environ.items():
        if not name or "=" in name:
            what = "an empty name" if not name else "an '=' in its name"
            entry = _sources.clip(f"{name}={value}", 80)
            raise UsageError(_messages.RUN_BAD_ENVIRONMENT.format(what=what, entry=entry, subcommand=subcommand))


def cmd_run(args: argparse.Namespace) -> int:
    _check_environment("run")
    settings = _settings_from(args)
    launch.note_floor("run", settings)
    env = launch.command_environment(settings)
    if settings:
        env[_config.ENV_GIVEN_AS] = _given_as("run", args, settings)
    noted = launch.note_ignored("run", args.command, env, settings)
    launch.start_without_waiting(args.command, env, noted=noted)
    return launch.launch("run", args.command, env)


def cmd_simulate(args: argparse.Namespace) -> int:
    _check_environment("simulate")
    if args.unready_for is not None:
        import time

        # Pinned now: the command and all its descendants share one deadline on CLOCK_MONOTONIC.
        spec = f"unready-until-monotonic:{time.monotonic() + args.unready_for!r}"
        window = f"--unready-for {args.unready_for:g}"
    elif args.unready_until_file is not None:
        path = os.path.abspath(args.unready_until_file)
        if not os.path.exists(path):
            raise UsageError(_messages.SIMULATE_FILE_MISSING.format(unready_until_file=args.unready_until_file))
        spec = f"unready-until-file:{path}"
        window = f"--unready-until-file {args.unready_until_file}"
    else:
        # The default: every call of the command is in the window, as at a boot with no entropy source, where the
        # window can last the whole boot (Linux before 5.18). A wait lasts until --timeout, or Ctrl-C.
        spec, window = "unready-forever", "--unready-forever"
        if not args.unready_forever:
            from .._messages import emit

            emit(_messages.SIMULATE_DEFAULT_WINDOW)
    settings = _settings_from(args)
    launch.note_floor("simulate", settings)
    given = _given_as("simulate", args, settings)
    if settings.get("mode", os.environ.get(_config.ENV_MODE)) == _policies.REPORT:
        return _simulate_and_report(args, settings, spec, given, window)
    env = launch.command_environment(settings, simulate=spec)
    if settings:
        env[_config.ENV_GIVEN_AS] = given
    noted = launch.note_ignored("simulate", args.command, env, settings)
    launch.start_without_waiting(args.command, env, "simulate", noted=noted)
    return launch.launch("simulate", args.command, env)


def _simulate_and_report(args: argparse.Namespace, settings: dict[str, str], spec: str, given: str, window: str) -> int:
    """``simulate --report-only``: run the command as a child (its events, and its children's, go to a file), then
    print the report on stderr. The exit status is the command's (128 + N for a signal, as a shell says).

    SIGTERM, SIGHUP and SIGINT end the command, not the report: each is passed on to the command (SIGINT only when
    the terminal did not already send it to the command's process group), and the report of what was collected is
    printed when it ends. The temporary directory of the events goes in every case."""
    import shutil
    import signal
    import subprocess
    import tempfile

    from ..report import gather
    from ..report import text as report_text

    child: list[subprocess.Popen[bytes]] = []
    pending: list[int] = []

    def forward(signum: int, _frame: object) -> None:
        if signum == signal.SIGINT and _terminal_sent_it():
            return  # the command got it from the terminal, as we did
        if child and child[0].poll() is None:
            child[0].send_signal(signum)
        else:
            pending.append(signum)

    caught = (signal.SIGTERM, signal.SIGINT, getattr(signal, "SIGHUP", signal.SIGTERM))
    previous = {signum: signal.signal(signum, forward) for signum in caught}
    directory = tempfile.mkdtemp(prefix="urandom-shim-report-")
    try:
        settings.setdefault("events", os.path.join(directory, "events.jsonl"))
        _create(settings["events"])  # mode 600, never through a symbolic link, whatever writes to it first
        env = launch.command_environment(settings, simulate=spec)
        env[_config.ENV_GIVEN_AS] = given  # the events file set here is no flag: only the typed ones are named
        executable, code, message = launch.find_command(args.command[0], env.get("PATH"))
        if executable is None:
            sys.stderr.write(f"{PROG} simulate: {message}\n")
            return code
        started = _events_clock()
        try:
            child.append(subprocess.Popen([executable, *args.command[1:]], env=env))
        except OSError as exc:
            sys.stderr.write(f"{PROG} {args.subcommand}: {executable}: cannot execute: {exc.strerror or exc}\n")
            return EXIT_NOT_EXECUTABLE
        for signum in pending:
            child[0].send_signal(signum)
        status = child[0].wait()
        report = gather.gather(settings["events"], journal=False, simulated=window, since=started, own=True)
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        shutil.rmtree(directory, ignore_errors=True)
    sys.stdout.flush()
    sys.stderr.write("\n".join(report_text.lines(report)) + "\n")
    return 128 - status if status < 0 else status


def _create(path: str) -> None:
    """Create the events file ``path`` empty if it does not exist, as the first event would (mode 600, never
    through a symbolic link). A run without events leaves it empty: simulate's own report reads that as a run
    without events, while ``report --fail-for`` reads it as nothing (exit 3) unless ``--allow-empty``, since an
    empty file can't say whether it was emptied."""
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0)
    try:
        os.close(os.open(path, flags, 0o600))
    except OSError:
        pass  # the shim's own writes will say nothing either; `report` says what it could not read


def _events_clock() -> float:
    from .._events import boot_time

    return boot_time()


def _terminal_sent_it() -> bool:
    """Whether this process runs in the foreground of its terminal: a Ctrl-C there reaches the whole process group,
    the command included."""
    try:
        return os.tcgetpgrp(sys.stdin.fileno()) == os.getpgrp()
    except (OSError, AttributeError, ValueError):
        return False
