"""The hash seed that ``urandom-shim run`` gives a program whose policy allows weak bytes, so that its start never
waits for the kernel.

Every interpreter reads its hash secret before any ``.pth`` runs. While the CRNG is unready, ``getrandom()`` says
EAGAIN and CPython reads ``/dev/urandom`` instead, which on Linux 5.18+ runs the jitter generator: about a second,
longer on a slow board, before the shim exists. With ``PYTHONHASHSEED`` set, the interpreter reads nothing. So where
the policy says "never wait" (``legacy``, or ``on_timeout = "fallback"`` once its timeout has run out, and never
under a floor), ``run`` sets ``PYTHONHASHSEED`` to a number made from non-blocking kernel bytes (``GRND_INSECURE``),
and ``URANDOM_SHIM_HASHSEED`` to the same number, which marks it as ours rather than the user's.

Only ``run`` gives a seed, and only to the Python interpreter it starts itself (an interpreter, or a script whose
``#!`` line names one), after asking that interpreter what its program will resolve (:func:`answer`, in a start of
its own that can't wait: :mod:`urandom_shim.cli.target`), and only to one whose shim takes it out (3.8 or later, no
kill switch, no ``-S``, ``-E`` or ``-I``): the exec is immediate, so the interpreter consumes the seed while the CRNG
is still unready. A wrapper (``env``, ``sh -c``, a shell script) gets none: ``run`` can't know what
it will start, or when. The seed never outlives that one start: each interpreter that starts with our mark takes
both variables out of its environment at once, on the ready path and the unready path alike, so its children (whose
policy nobody resolved, and which may start after the CRNG is ready) get a full-strength hash secret of their own. A
child that must not wait is started with ``urandom-shim run`` itself. A seed the user set is never touched.
"""

import os
import sys

VARIABLE = "PYTHONHASHSEED"
MARK = "URANDOM_SHIM_HASHSEED"
#: What ``run`` puts after ``-c CODE`` in the start it makes to ask an interpreter what its program will resolve,
#: before the program's command line. ``_urandom_shim_boot`` keeps a copy (it can't import the package to compare),
#: which tests/test_run_asks.py keeps equal.
QUESTION = "urandom-shim-question"
#: The first word of the line that answers it, on stdout.
ANSWER = "urandom-shim-answer"


def new_seed() -> str:
    """A hash seed from best-effort kernel bytes, without waiting: 1 to 4294967295 (0 would turn hashing's
    randomisation off)."""
    from ._readiness import best_effort_bytes

    return str(int.from_bytes(best_effort_bytes(4), "little") % 4294967295 + 1)


def is_ours(environ: "dict[str, str] | os._Environ[str]") -> bool:
    """Whether ``PYTHONHASHSEED`` is the one ``run`` set (and not the user's)."""
    seed = environ.get(VARIABLE)
    return seed is not None and environ.get(MARK) == seed


def give(environ: "dict[str, str]") -> str:
    """Set a fresh seed of ours in ``environ``; returns it."""
    seed = new_seed()
    environ[VARIABLE] = environ[MARK] = seed
    return seed


def take_out() -> None:
    """In an interpreter started with our seed: take it out of the environment, so that no child inherits it."""
    environ = os.environ
    if is_ours(environ):
        del environ[VARIABLE], environ[MARK]


def answer(program: "list[str]", cwd: "str | None", how: str) -> None:
    """In the start ``run`` made to ask (``python OPTIONS -c CODE QUESTION PROGRAM...``, found unready by the
    start-up module): resolve the settings of ``program``, the command line ``run`` will start (the interpreter
    first), with the code and at the moment its own start will, in this interpreter, with its options, environment
    and ``site``; say them on stdout in one line (:data:`ANSWER`, the version, ``how`` the shim started, then
    ``resolved POLICY ON_TIMEOUT TIMEOUT MODE``, ``ready`` or ``error NAME``); and end this process, so that
    nothing after the shim runs. Never returns."""
    try:
        words = _resolved(program, cwd)
    except BaseException as exc:  # noqa: BLE001 - said in the answer: run gives no seed
        words = ["error", type(exc).__name__]
    version = f"{sys.version_info[0]}.{sys.version_info[1]}"
    try:
        os.write(1, ("\n" + " ".join([ANSWER, version, how, *words]) + "\n").encode())
    finally:
        os._exit(0)


def _resolved(program: "list[str]", cwd: "str | None") -> "list[str]":
    """The words of the answer for ``program``: what :func:`urandom_shim._activation.start_unready` resolves at
    the program's start, with this start's ``sys.argv`` and ``sys.orig_argv`` as the program's will be while
    ``site`` runs."""
    from . import _config, _programs, _readiness, _simulation
    from ._policies import Settings

    kind, name = _programs.python_target(program)
    sys._urandom_shim_invocation = ([name if kind == "script" and name else kind], cwd)  # type: ignore[attr-defined]
    sys.orig_argv = list(program)  # where the shim reads an -m module's name (_programs.module_from_command_line)
    followed = _config.followed()
    _simulation.current(report=False)
    if _readiness.is_ready():
        return ["ready"]
    settings = followed if isinstance(followed, Settings) else _config.resolve()[0]
    timeout = settings.timeout.value
    return [
        "resolved",
        settings.policy_value.name,
        str(settings.on_timeout.value),
        "none" if timeout is None else repr(float(timeout)),
        "report" if settings.reporting else "enforce",
    ]
