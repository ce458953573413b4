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

#: What each exit status means, in order: the one source of the tables of docs/reference/cli.md ("Exit status",
#: which tests/test_docs.py checks against it) and of the man page (:mod:`urandom_shim.cli.manpage`). Text between
#: backquotes is a command, an option or a name, as on the page.
MEANINGS: tuple[tuple[int, str], ...] = (
    (0, "success"),
    (
        EXIT_PROBLEMS,
        "`check` found problems; `wait` timed out; `report --fail-for POLICY`: some program would raise or get weak "
        "bytes under POLICY",
    ),
    (EXIT_USAGE, "usage error: one `usage:` line and one `error:` line say what is wrong"),
    (
        EXIT_NOTHING_READ,
        "`report --fail-for POLICY`: no program failed, but an input it was asked to read, or every input, could not "
        "be read (see `report`)",
    ),
    (EXIT_NO_SUCH_PROGRAM, "`check --for NAME`: no script, command, console script or module has that name"),
    (EXIT_INTERNAL, "an internal error: one line; rerun with `URANDOM_SHIM_DEBUG=1` for the traceback"),
    (
        EXIT_CANNOT_WRITE,
        "`report`: the report could not be written (standard output closed, a full disk); one line on stderr says why",
    ),
    (
        EXIT_NOT_EXECUTABLE,
        "`run`/`simulate`: the command is not executable (permission, a directory, a bad `#!` interpreter, not a "
        "program)",
    ),
    (EXIT_NOT_FOUND, "`run`/`simulate`: the command was not found"),
    (EXIT_INTERRUPTED, "interrupted by Ctrl-C"),
)

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
    "MEANINGS",
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
