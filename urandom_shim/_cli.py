"""The command line: ``urandom-shim`` (console script) and ``python -m urandom_shim``: the argument parsing, and each
command as a few lines that put the other modules together. The facts ``status`` and ``check`` report are
:mod:`urandom_shim._report`'s, their text is :mod:`urandom_shim._render`'s, and launching a command for ``run`` and
``simulate`` is :mod:`urandom_shim._launch`'s.

``status`` and ``check`` explain; ``wait`` blocks until the kernel CRNG is ready; ``run`` and ``simulate`` start a
command with chosen settings, through the bootstrap ``sitecustomize`` where the ``.pth`` does not run.

Exit codes: 0 success; 1 problems found (``check``) or timeout (``wait``); 2 usage error; 126 command not
executable; 127 command not found; 130 interrupted (Ctrl-C); 70 internal error. ``run`` and ``simulate`` replace
themselves with the command, so after a successful start every exit code and signal is the command's own.
"""

from __future__ import annotations

import argparse
import errno
import os
import sys

from . import __version__, _config, _hashseed, _launch, _messages, _policies, _readiness, _render, _report, _simulation
from ._launch import EXIT_NOT_EXECUTABLE, EXIT_NOT_FOUND, PROG
from ._runtime import current_settings

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Callable, Sequence

EXIT_PROBLEMS = 1
EXIT_TIMEOUT = 1
EXIT_USAGE = 2
EXIT_NOTHING_READ = 3  # report --fail-for: an input it was asked to read, or every input, could not be read
EXIT_NO_SUCH_PROGRAM = 4  # check --for: the name is no script, command, console script or module
EXIT_INTERNAL = 70  # EX_SOFTWARE
EXIT_CANNOT_WRITE = 74  # EX_IOERR: report could not write its report (stdout closed, a full disk)
EXIT_INTERRUPTED = 130
__all__ = ["EXIT_NOT_EXECUTABLE", "EXIT_NOT_FOUND", "main"]


class UsageError(Exception):
    """Bad input that argparse could not see (a missing ``--``, a file that does not exist): exit 2."""


# -- the commands --------------------------------------------------------------------------------------------------


def cmd_status(args: argparse.Namespace) -> int:
    report = _report.status_report()
    if args.json:
        _render.write_json(report)
    else:
        _render.write(_render.status_lines(report, lambda: current_settings().policy))
    return 0


def cmd_check(args: argparse.Namespace) -> int:
    if args.module is not None and args.target is not None:
        raise UsageError(_messages.CHECK_FOR_AND_MODULE)
    try:
        report = _report.check_report(args.target if args.module is None else f"-m {args.module}")
    except _report.NoSuchProgram as exc:
        sys.stderr.write(f"{PROG} check: {exc}\n")
        return EXIT_NO_SUCH_PROGRAM
    except _report.NotAProgram as exc:
        raise UsageError(str(exc)) from None
    if args.json:
        _render.write_json(report)
    else:
        _render.write(_render.check_lines(report))
    return EXIT_PROBLEMS if report["problems"] else 0


def cmd_wait(args: argparse.Namespace) -> int:
    import time

    stream = sys.stderr
    live = _render.StatusLine(stream, not args.quiet and stream is not None and stream.isatty())
    start = time.monotonic()
    deadline = None if args.timeout is None else start + args.timeout
    entropy_path = os.path.join(_report.RANDOM_DIR, "entropy_avail")

    sim = _simulation.current()

    def progress(word: str) -> str:
        if sim is not None:  # the real kernel's entropy count says nothing about a simulated state
            tail = _messages.WAIT_SIMULATED.format(variable=_simulation.ENV, spec=sim.spec)
        else:
            entropy = _report.read_int(entropy_path)
            tail = "" if entropy is None else _messages.WAIT_ENTROPY.format(entropy=entropy)
        return _messages.WAIT_LIVE_LINE.format(word=word, value=time.monotonic() - start, tail=tail)

    try:
        while True:
            if _readiness.is_ready():
                how = "ready" if _readiness.state() == _readiness.READY else _messages.WAIT_STATE_UNKNOWN
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
        from ._messages import ENTROPY_HINT, emit
        from ._runtime import simulation_note

        emit(
            _messages.WAIT_TIMED_OUT.format(
                timeout=args.timeout, entropy_hint=ENTROPY_HINT, simulation_note=simulation_note()
            )
        )
    return EXIT_TIMEOUT


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


def cmd_run(args: argparse.Namespace) -> int:
    settings = _settings_from(args)
    _launch.note_floor("run", settings)
    env = _launch.command_environment(settings)
    if settings:
        env[_config.ENV_GIVEN_AS] = _given_as("run", args, settings)
    _launch.start_without_waiting(args.command, env)
    return _launch.launch("run", args.command, env)


def cmd_report(args: argparse.Namespace) -> int:
    from . import _eventreport

    for option, given in (("--events", args.events), ("--journal-file", args.journal_file)):
        if given == "":
            raise UsageError(_messages.REPORT_EMPTY_PATH.format(option=option))
    if args.allow_empty and args.fail_for is None:
        raise UsageError(_messages.REPORT_ALLOW_EMPTY_ALONE)
    path = args.events if args.events is not None else _eventreport.default_events_path()
    report = _eventreport.gather(path, journal=not args.no_journal, journal_file=args.journal_file)
    try:
        if sys.stdout is None:  # started with stdout closed (`>&-`)
            raise OSError(errno.EBADF, "standard output is closed")
        if args.json:
            _render.write_json(report)
        else:
            _render.write(_eventreport.lines(report))
        sys.stdout.flush()  # a full disk (`> /dev/full`) says so only now
    except BrokenPipeError:
        raise  # the reader left: main() says nothing more
    except (OSError, ValueError) as exc:  # ValueError: a closed file object
        _silence_stdout()  # the interpreter's own flush at exit must not fail again
        error = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        sys.stderr.write(_messages.REPORT_CANNOT_WRITE.format(error=error))
        return EXIT_CANNOT_WRITE
    if args.fail_for is None:
        return 0
    if _eventreport.fails(report, args.fail_for):
        return EXIT_PROBLEMS
    unread = _eventreport.unread(report, allow_empty=args.allow_empty)
    if unread is None:
        return 0
    from ._messages import emit

    source, problem, absent = unread
    hint = _messages.REPORT_ALLOW_EMPTY_HINT if absent else ""
    if source is None:
        emit(_messages.REPORT_NOTHING_READ.format(policy=args.fail_for, hint=hint))
    else:
        emit(_messages.REPORT_SOURCE_UNREAD.format(policy=args.fail_for, source=source, problem=problem, hint=hint))
    return EXIT_NOTHING_READ


def cmd_simulate(args: argparse.Namespace) -> int:
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
            from ._messages import emit

            emit(_messages.SIMULATE_DEFAULT_WINDOW)
    settings = _settings_from(args)
    _launch.note_floor("simulate", settings)
    given = _given_as("simulate", args, settings)
    if settings.get("mode", os.environ.get(_config.ENV_MODE)) == _policies.REPORT:
        return _simulate_and_report(args, settings, spec, given, window)
    env = _launch.command_environment(settings, simulate=spec)
    if settings:
        env[_config.ENV_GIVEN_AS] = given
    _launch.start_without_waiting(args.command, env)
    return _launch.launch("simulate", args.command, env)


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

    from . import _eventreport

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
        env = _launch.command_environment(settings, simulate=spec)
        env[_config.ENV_GIVEN_AS] = given  # the events file set here is no flag: only the typed ones are named
        executable, code, message = _launch.find_command(args.command[0], env.get("PATH"))
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
        report = _eventreport.gather(settings["events"], journal=False, simulated=window, since=started)
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        shutil.rmtree(directory, ignore_errors=True)
    sys.stdout.flush()
    sys.stderr.write("\n".join(_eventreport.lines(report)) + "\n")
    return 128 - status if status < 0 else status


def _create(path: str) -> None:
    """Create the events file ``path`` empty if it does not exist, as the first event would (mode 600, never
    through a symbolic link). A run without events leaves it empty, which ``report --fail-for`` reads as nothing
    (exit 3) unless ``--allow-empty``: an empty file can't say whether it was emptied."""
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0)
    try:
        os.close(os.open(path, flags, 0o600))
    except OSError:
        pass  # the shim's own writes will say nothing either; `report` says what it could not read


def _events_clock() -> float:
    from ._events import boot_time

    return boot_time()


def _terminal_sent_it() -> bool:
    """Whether this process runs in the foreground of its terminal: a Ctrl-C there reaches the whole process group,
    the command included."""
    try:
        return os.tcgetpgrp(sys.stdin.fileno()) == os.getpgrp()
    except (OSError, AttributeError, ValueError):
        return False


# -- argument parsing ----------------------------------------------------------------------------------------------


def _value_type(key: str, metavar: str) -> Callable[[str], str]:
    """An argparse type that checks a value with the configuration's own parser, and keeps the text."""
    record = _config.KEYS[key]

    def check(text: str) -> str:
        try:
            record.read(text, from_text=True)
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
        value = _config.parse_seconds_text(text)
    except _config.InvalidValue:
        value = None
    if value is None:
        raise argparse.ArgumentTypeError(_messages.NOT_SECONDS.format(text=text))
    return value


def _seconds_or_none(text: str) -> float | None:
    """``wait --timeout``: seconds, or ``none`` for no limit, as ``run --timeout`` and the configuration take."""
    try:
        value = _config.parse_seconds_text(text)
    except _config.InvalidValue:
        raise argparse.ArgumentTypeError(_messages.NOT_SECONDS_OR_NONE.format(text=text)) from None
    return value


class _Formatter(argparse.RawDescriptionHelpFormatter):
    """argparse's, except that an option's help never breaks a line inside a word at a hyphen: a path such as
    /run/urandom-shim/events.jsonl stays whole, so that it can be copied."""

    def _split_lines(self, text: str, width: int) -> list[str]:
        import textwrap

        return textwrap.wrap(" ".join(text.split()), width, break_on_hyphens=False, break_long_words=False)


class _Parser(argparse.ArgumentParser):
    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", _Formatter)
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
Without a window option, the CRNG stays unready for as long as CMD runs (--unready-forever). With --report-only,
CMD runs as native would and the report of what the policy would have done is printed at the end, on stderr; the
exit status is CMD's.

examples:
  urandom-shim simulate --unready-for 3 --policy pep524 -- python3 app.py
  urandom-shim simulate --unready-forever --policy pep522 -- python3 -c "import os; os.urandom(8)"
  urandom-shim simulate --unready-forever --policy pep522 --report-only -- python3 -m pytest   # a dry run
  touch /tmp/unready; urandom-shim simulate --unready-until-file /tmp/unready -- ./start.sh   # rm it to end
"""


REPORT_HELP = """\
Report which programs asked for randomness before the kernel CRNG was ready, from the events file (the `events`
setting) and this boot's journal (the shim's lines, per unit), with `crng init done` from the kernel log. For each
program: its first call, the call sites, what happened and what each policy would do; then a verdict per policy.
It also lists the units whose Python interpreter waited for the CRNG before the shim could run (its hash-seed read).

examples:
  urandom-shim report
  urandom-shim report --events /run/urandom-shim/events.jsonl --no-journal --json
  urandom-shim report --fail-for pep522       # exit 1 if pep522 would break something
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
    group.add_argument(
        "--mode",
        metavar="enforce|report",
        type=_value_type("mode", "choice"),
        help="report: behave as native and record what the policy would do",
    )
    group.add_argument(
        "--report-only", dest="mode", action="store_const", const=_policies.REPORT, help="the same as --mode report"
    )
    group.add_argument(
        "--events", metavar="PATH", type=_value_type("events", "path"), help="also append events to this file"
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

    sub = commands.add_parser(
        "run", help="run a command with a policy", description=RUN_HELP, usage="%(prog)s [options] -- CMD [ARGS ...]"
    )
    _add_settings(sub)
    subs["run"] = sub

    sub = commands.add_parser(
        "simulate",
        help="run a command as if at early boot",
        description=SIMULATE_HELP,
        usage="%(prog)s [--unready-for SECONDS | --unready-until-file PATH | --unready-forever] [options] -- CMD ...",
    )
    when = sub.add_mutually_exclusive_group()
    when.add_argument("--unready-for", metavar="SECONDS", type=_seconds, help="unready for SECONDS from now")
    when.add_argument("--unready-until-file", metavar="PATH", help="unready while PATH exists")
    when.add_argument("--unready-forever", action="store_true", help="unready for as long as CMD runs (the default)")
    _add_settings(sub)
    subs["simulate"] = sub

    sub = commands.add_parser(
        "report", help="what asked for randomness before the CRNG was ready", description=REPORT_HELP
    )
    sub.add_argument(
        "--events",
        metavar="PATH",
        help=f"the events file (default: the configured one, else {_events_default()} if it exists)",
    )
    source = sub.add_mutually_exclusive_group()
    source.add_argument("--journal-file", metavar="PATH", help="a saved `journalctl -b -o json` instead of this boot's")
    source.add_argument("--no-journal", action="store_true", help="read the events file only")
    sub.add_argument(
        "--fail-for",
        metavar="POLICY",
        type=_value_type("policy", "policy"),
        help="exit 1 if under POLICY some program would raise or use weak bytes",
    )
    sub.add_argument(
        "--allow-empty",
        action="store_true",
        help="with --fail-for: an events file that does not exist or is empty, or no journal, counts as a boot "
        "without events (without it, exit 3)",
    )
    sub.add_argument("--json", action="store_true", help="print one JSON object")
    subs["report"] = sub
    return parser, subs


def _events_default() -> str:
    from ._events import DEFAULT_FILE

    return DEFAULT_FILE


COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    "status": cmd_status,
    "check": cmd_check,
    "wait": cmd_wait,
    "run": cmd_run,
    "simulate": cmd_simulate,
    "report": cmd_report,
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
        parser.error(_messages.NO_COMMAND)
    sub = subs[args.subcommand]
    if args.subcommand in TAKES_COMMAND:
        if command is None:
            given = f" (got {' '.join(extra)!r})" if extra else ""
            sub.error(_messages.MISSING_DOUBLE_DASH.format(given=given, prog=PROG, subcommand=args.subcommand))
        if not command:
            sub.error("no command after '--'")
    elif command is not None:
        sub.error(_messages.DOUBLE_DASH_NOT_TAKEN.format(subcommand=args.subcommand))
    if extra:
        sub.error(f"unrecognized arguments: {' '.join(extra)}")
    args.command = command
    args.typed = argv
    return args, sub


def restore_callers_hash_seed() -> bool:
    """The launcher (``bin/urandom-shim``, a shell script) starts this interpreter with ``PYTHONHASHSEED=0`` so that
    starting the command line never waits for the kernel: the command line reads only its own arguments and
    configuration files, where hash flooding is no concern. Before anything else, put back the caller's own.
    True if this interpreter was started by the launcher."""
    if os.environ.pop(_config.ENV_LAUNCHER, None) is None:
        return False
    caller = os.environ.pop("URANDOM_SHIM_CALLER_HASHSEED", None)
    if caller is None:
        os.environ.pop(_hashseed.VARIABLE, None)
    else:
        os.environ[_hashseed.VARIABLE] = caller
    return True


#: The commands that say nothing of the URANDOM_* variables' problems themselves, under the launcher: start-up
#: leaves the lines to the command line, so that ``run`` and ``simulate`` print none (their command prints each one
#: once) and ``check`` and ``status`` list them in their report.
REPORTS_VARIABLES = ("wait", "report")


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    launched = restore_callers_hash_seed()
    arguments = list(sys.argv[1:] if argv is None else argv)
    try:
        args, sub = _parse(arguments)
    except SystemExit as exc:  # argparse: --help, --version (0), or a usage error (2), already printed
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else EXIT_USAGE)
    if launched and args.subcommand in REPORTS_VARIABLES:
        _config.report_environment()
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
            _messages.CLI_INTERNAL_ERROR.format(prog=PROG, subcommand=args.subcommand, name=type(exc).__name__, exc=exc)
        )
        return EXIT_INTERNAL


def _silence_stdout() -> None:
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, AttributeError, ValueError):
        pass
