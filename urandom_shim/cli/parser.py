"""The command line's arguments: each command's options and help, parsed into an ``argparse.Namespace``, with the
command after ``--`` kept untouched for ``run`` and ``simulate``.
"""

from __future__ import annotations

import argparse

from .. import __version__, _config, _messages, _policies
from .launch import PROG

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Callable


def _value_type(key: str, metavar: str) -> Callable[[str], str]:
    """An argparse type that checks a value with the configuration's own parser, and keeps the text."""
    record = _config.KEYS[key]

    def check(text: str) -> str:
        try:
            record.read(text, from_text=True)
        except _config.InvalidValue as exc:
            what = "events path" if key == "events" else key
            raise argparse.ArgumentTypeError(
                f"{text!r} is not a valid {what}; expected {exc.expected}{exc.hint}"
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
waits: only a Python interpreter run starts itself (or a script whose #! line names one by its path), never a
wrapper such as env, sh -c or a pyenv shim. CMD is looked for on PATH only. The command replaces urandom-shim, so
its exit status and signals are its own.

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

Over a fleet (--journal-dir, --events DIR, or --events more than once): every finding is attributed to the machine
and boot it came from, and the verdict counts machines and boots; --fail-for fails if any machine would break.

examples:
  urandom-shim report
  urandom-shim report --events /run/urandom-shim/events.jsonl --no-journal --json
  urandom-shim report --fail-for pep522       # exit 1 if pep522 would break something
  urandom-shim report --journal-dir /var/log/journal/remote --fail-for pep522   # a fleet's first boots
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
        action="append",
        help=f"the events file (default: the configured one, else {_events_default()} if it exists); a directory "
        "reads every file below it; give it again for more (a fleet's files)",
    )
    sub.add_argument(
        "--journal-dir",
        metavar="DIR",
        action="append",
        help="a directory of journal files, as systemd-journal-remote writes them (or any `journalctl --directory`); "
        "give it again for more. A fleet report reads only the sources it is given, not this boot's journal",
    )
    source = sub.add_mutually_exclusive_group()
    source.add_argument(
        "--journal-file",
        metavar="PATH",
        help="a saved `journalctl -b -o json` instead of this boot's (every boot a saved journal holds is read)",
    )
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
        help="with --fail-for: a source that simply holds nothing (the configured events file not created yet, an "
        "empty events file or journal file, no journal of this boot, a journal directory without journal files) is "
        "accepted as nothing there (without it, exit 3); a path you name that does not exist, and anything that could "
        "not be read, still exit 3",
    )
    sub.add_argument("--json", action="store_true", help="print one JSON object")
    subs["report"] = sub
    return parser, subs


def _events_default() -> str:
    from .._events import DEFAULT_FILE

    return DEFAULT_FILE


TAKES_COMMAND = ("run", "simulate")


def parse(argv: list[str]) -> tuple[argparse.Namespace, argparse.ArgumentParser]:
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
        if command is None and not extra:
            sub.error(_messages.RUN_NO_COMMAND.format(prog=PROG, subcommand=args.subcommand))
        if command is None:
            given = f" (got {' '.join(extra)!r})"
            sub.error(_messages.MISSING_DOUBLE_DASH.format(given=given, prog=PROG, subcommand=args.subcommand))
        if not command:
            sub.error("no command after '--'")
        if not command[0]:
            sub.error(_messages.RUN_EMPTY_COMMAND.format(prog=PROG, subcommand=args.subcommand))
    elif command is not None:
        sub.error(_messages.DOUBLE_DASH_NOT_TAKEN.format(subcommand=args.subcommand))
    if extra:
        sub.error(f"unrecognized arguments: {' '.join(extra)}")
    args.command = command
    args.typed = argv
    return args, sub
