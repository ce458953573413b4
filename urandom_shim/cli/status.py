"""``status`` and ``check``: the facts (:mod:`.facts`), as JSON or as text (:mod:`.text`)."""

from __future__ import annotations

import argparse
import sys

from .. import _messages
from .._runtime import current_settings
from . import facts, text
from .exits import EXIT_NO_SUCH_PROGRAM, EXIT_PROBLEMS, UsageError
from .launch import PROG
from .program import NoSuchProgram, NotAProgram


def cmd_status(args: argparse.Namespace) -> int:
    report = facts.status_facts()
    if args.json:
        text.write_json(report)
    else:
        text.write(text.status_lines(report, lambda: current_settings().policy))
    return 0


def cmd_check(args: argparse.Namespace) -> int:
    if args.module is not None and args.target is not None:
        raise UsageError(_messages.CHECK_FOR_AND_MODULE)
    try:
        report = facts.check_facts(args.target if args.module is None else f"-m {args.module}")
    except NoSuchProgram as exc:
        sys.stderr.write(f"{PROG} check: {exc}\n")
        return EXIT_NO_SUCH_PROGRAM
    except NotAProgram as exc:
        raise UsageError(str(exc)) from None
    if args.json:
        text.write_json(report)
    else:
        text.write(text.check_lines(report))
    return EXIT_PROBLEMS if report["problems"] else 0
