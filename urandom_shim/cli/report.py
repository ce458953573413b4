"""``report``: read a boot's events and journal (:mod:`urandom_shim.report`), print the report, and with
``--fail-for`` turn its verdict into an exit status.
"""

from __future__ import annotations

import argparse
import errno
import os
import sys
import time

from .. import _messages
from . import exits, text
from .exits import EXIT_CANNOT_WRITE, EXIT_NOTHING_READ, EXIT_PROBLEMS, UsageError


def cmd_report(args: argparse.Namespace) -> int:
    # Here, not at the top: the other commands (`run` at early boot among them) start without the report package.
    from ..report import gather, verdict
    from ..report import text as report_text

    events = args.events or []
    journal_dirs = args.journal_dir or []
    given = [("--events", path) for path in events] + [("--journal-dir", path) for path in journal_dirs]
    for option, path in [*given, ("--journal-file", args.journal_file)]:
        if path == "":
            raise UsageError(_messages.REPORT_EMPTY_PATH.format(option=option))
    if args.allow_empty and args.fail_for is None:
        raise UsageError(_messages.REPORT_ALLOW_EMPTY_ALONE)
    fleet = bool(journal_dirs) or len(events) > 1 or any(os.path.isdir(path) for path in events)
    if fleet and args.journal_file is not None:
        raise UsageError(_messages.REPORT_FLEET_AND_FILE)
    if fleet:
        inputs = gather.Inputs(events=events, journal_dirs=journal_dirs, allow_empty=args.allow_empty)
    else:
        # One machine: a fleet of one, with this machine's own inputs: its events file (the one named, else the
        # configured one, which may not exist yet), this boot's journal or a saved one, and its kernel log.
        inputs = gather.Inputs(
            events=events,
            events_default=None if events else gather.default_events_path(),
            this_boot=not args.no_journal and args.journal_file is None,
            journal_file=args.journal_file,
            kernel_log=True,
            one_machine=True,
            allow_empty=args.allow_empty,
        )
    with Progress() as progress:
        if fleet:
            inputs.progress = progress.show
        report = gather.gather_report(inputs)
    try:
        if sys.stdout is None:  # started with stdout closed (`>&-`)
            raise OSError(errno.EBADF, "standard output is closed")
        if args.json:
            text.write_json(report)
        else:
            text.write(report_text.lines(report))
        sys.stdout.flush()  # a full disk (`> /dev/full`) says so only now
    except BrokenPipeError:
        raise  # the reader left: main() says nothing more
    except (OSError, ValueError) as exc:  # ValueError: a closed file object
        exits.silence_stdout()  # the interpreter's own flush at exit must not fail again
        error = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        sys.stderr.write(_messages.REPORT_CANNOT_WRITE.format(error=error))
        return EXIT_CANNOT_WRITE
    if args.fail_for is None:
        return 0
    if verdict.fails(report, args.fail_for):
        return EXIT_PROBLEMS
    unread = verdict.unread(report, allow_empty=args.allow_empty)
    if unread is None:
        return 0
    from .._messages import emit

    hint = _messages.REPORT_ALLOW_EMPTY_HINT if unread.absent else ""
    if unread.source is None:
        emit(_messages.REPORT_NOTHING_READ.format(policy=args.fail_for, hint=hint))
    else:
        template = _messages.REPORT_SOURCE_PARTLY_READ if unread.partly else _messages.REPORT_SOURCE_UNREAD
        was = "were" if unread.plural else "was"
        emit(template.format(policy=args.fail_for, source=unread.source, was=was, problem=unread.problem, hint=hint))
    return EXIT_NOTHING_READ


class Progress:
    """A line on stderr while a fleet's files are read, when stderr is a terminal: files read, boots found, time
    so far. At most a few updates a second; cleared at the end. Nothing at all when stderr is not a terminal."""

    def __init__(self) -> None:
        try:
            self.on = sys.stderr is not None and sys.stderr.isatty()
        except (OSError, ValueError):
            self.on = False
        self.began = time.monotonic()
        self.last = 0.0
        self.shown = False

    def __enter__(self) -> Progress:
        return self

    def show(self, done: int, total: int, boots: int) -> None:
        now = time.monotonic()
        if not self.on or (now - self.last < 0.25 and done < total):
            return
        self.last = now
        line = _messages.REPORT_PROGRESS.format(done=done, total=total, boots=boots, seconds=now - self.began)
        try:
            sys.stderr.write(f"\r{line}\x1b[K")
            sys.stderr.flush()
            self.shown = True
        except (OSError, ValueError):
            self.on = False

    def __exit__(self, *exc: object) -> None:
        if self.shown:
            try:
                sys.stderr.write("\r\x1b[K")
                sys.stderr.flush()
            except (OSError, ValueError):
                pass
