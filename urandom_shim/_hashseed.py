"""The hash seed that ``urandom-shim run`` gives a program whose policy allows weak bytes, so that its start never
waits for the kernel.

Every interpreter reads its hash secret before any ``.pth`` runs. While the CRNG is unready, ``getrandom()`` says
EAGAIN and CPython reads ``/dev/urandom`` instead, which on Linux 5.18+ runs the jitter generator: about a second,
longer on a slow board, before the shim exists. With ``PYTHONHASHSEED`` set, the interpreter reads nothing. So where
the policy says "never wait" (``legacy``, or ``on_timeout = "fallback"`` once its timeout has run out, and never
under a floor), ``run`` sets ``PYTHONHASHSEED`` to a number made from non-blocking kernel bytes (``GRND_INSECURE``),
and ``URANDOM_SHIM_HASHSEED`` to the same number, which marks it as ours rather than the user's.

Only ``run`` gives a seed, and only to the Python interpreter it starts itself (an interpreter, or a script whose
``#!`` line names one), after resolving that interpreter's own policy (its environment's file, the machine's file
and floor, its ``[[program]]`` rules, and the package file and project of its ``-m`` module or console script, found
on that interpreter's ``sys.path``: :mod:`urandom_shim.cli.target`), and only to one whose shim takes it out (3.8 or
later, no kill switch, no ``-S``, ``-E`` or ``-I``): the exec is immediate, so the interpreter consumes the seed
while the CRNG is still unready. A wrapper (``env``, ``sh -c``, a shell script) gets none: ``run`` can't know what
it will start, or when. The seed never outlives that one start: each interpreter that starts with our mark takes
both variables out of its environment at once, on the ready path and the unready path alike, so its children (whose
policy nobody resolved, and which may start after the CRNG is ready) get a full-strength hash secret of their own. A
child that must not wait is started with ``urandom-shim run`` itself. A seed the user set is never touched.
"""

import os

VARIABLE = "PYTHONHASHSEED"
MARK = "URANDOM_SHIM_HASHSEED"


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
