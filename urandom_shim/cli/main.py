"""The command line's entry point: ``main()`` parses the arguments (:mod:`.parser`) and runs one command, each a
module of its own (:mod:`.status` for ``status`` and ``check``, :mod:`.wait`, :mod:`.run` for ``run`` and
``simulate``, :mod:`.report`), and turns what goes wrong into an exit status.

``status`` and ``check`` explain; ``wait`` blocks until the kernel CRNG is ready; ``run`` and ``simulate`` start a
command with chosen settings, through the bootstrap ``sitecustomize`` where the ``.pth`` does not run.

Exit codes: 0 success; 1 problems found (``check``), a timeout (``wait``) or a policy that fails ``report --fail-for``;
2 usage error; 3 ``report --fail-for`` could not read an input; 4 ``check --for`` found no such program; 74 a write
failed; 126 command not executable; 127 command not found; 130 interrupted (Ctrl-C); 70 internal error. ``run`` and
``simulate`` replace themselves with the command, so after a successful start every exit code and signal is the
command's own."""

from __future__ import annotations

import os
import sys

from .. import _config, _hashseed, _messages
from . import exits, parser
from .exits import EXIT_INTERNAL, EXIT_INTERRUPTED, EXIT_PROBLEMS, EXIT_USAGE, UsageError
from .launch import PROG

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Callable, Sequence


__all__ = ["main"]


def command(name: str) -> Callable[[Any], int]:
    """The function of the command ``name``. Only its own module is imported: each command starts as it did when the
    command line was one module, ``run`` (which starts programs at early boot) without the others."""
    if name in ("status", "check"):
        from . import status

        return status.cmd_status if name == "status" else status.cmd_check
    if name == "wait":
        from . import wait

        return wait.cmd_wait
    if name in ("run", "simulate"):
        from . import run

        return run.cmd_run if name == "run" else run.cmd_simulate
    if name == "report":
        from . import report

        return report.cmd_report
    raise KeyError(name)  # a command the parser knows and this function does not


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
        args, sub = parser.parse(arguments)
    except SystemExit as exc:  # argparse: --help, --version (0), or a usage error (2), already printed
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else EXIT_USAGE)
    if launched and args.subcommand in REPORTS_VARIABLES:
        _config.report_environment()
    try:
        return command(args.subcommand)(args)
    except UsageError as exc:
        sub.print_usage(sys.stderr)
        sys.stderr.write(f"{sub.prog}: error: {exc}\n")
        return EXIT_USAGE
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # `urandom-shim status | head -1`: the reader left; say nothing more
        exits.silence_stdout()
        return EXIT_PROBLEMS
    except Exception as exc:  # noqa: BLE001 - no traceback reaches the user unless asked for
        if os.environ.get("URANDOM_SHIM_DEBUG", "") not in ("", "0"):
            import traceback

            traceback.print_exc()
        sys.stderr.write(
            _messages.CLI_INTERNAL_ERROR.format(prog=PROG, subcommand=args.subcommand, name=type(exc).__name__, exc=exc)
        )
        return EXIT_INTERNAL
