"""The command line's exit statuses, and the usage error any command can raise (see :mod:`urandom_shim.cli.main`)."""

from __future__ import annotations

import os
import sys

from .launch import EXIT_NOT_EXECUTABLE, EXIT_NOT_FOUND

EXIT_PROBLEMS = 1
EXIT_TIMEOUT = 1
EXIT_USAGE = 2
EXIT_NOTHING_READ = 3  # report --fail-for: an input it was asked to read, or every input, could not be read
EXIT_NO_SUCH_PROGRAM = 4  # check --for: the name is no script, command, console script or module
EXIT_INTERNAL = 70  # EX_SOFTWARE
EXIT_CANNOT_WRITE = 74  # EX_IOERR: report could not write its report (stdout closed, a full disk)
EXIT_INTERRUPTED = 130
__all__ = [
    "EXIT_CANNOT_WRITE",
    "EXIT_INTERNAL",
    "EXIT_INTERRUPTED",
    "EXIT_NOTHING_READ",
    "EXIT_NOT_EXECUTABLE",
    "EXIT_NOT_FOUND",
    "EXIT_NO_SUCH_PROGRAM",
    "EXIT_PROBLEMS",
    "EXIT_TIMEOUT",
    "EXIT_USAGE",
    "UsageError",
    "silence_stdout",
]


class UsageError(Exception):
    """Bad input that argparse could not see (a missing ``--``, a file that does not exist): exit 2."""


def silence_stdout() -> None:
    """Point standard output at /dev/null: after a write failed, the interpreter's own flush at exit must not fail
    again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, AttributeError, ValueError):
        pass
