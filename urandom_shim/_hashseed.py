"""The hash seed that ``urandom-shim run`` gives a program whose policy allows weak bytes, so that its start never
waits for the kernel.

Every interpreter reads its hash secret before any ``.pth`` runs. While the CRNG is unready, ``getrandom()`` says
EAGAIN and CPython reads ``/dev/urandom`` instead, which on Linux 5.18+ runs the jitter generator: about a second,
longer on a slow board, before the shim exists. With ``PYTHONHASHSEED`` set, the interpreter reads nothing. So where
the policy says "never wait" (``legacy``, or ``on_timeout = "fallback"`` once its timeout has run out, and never
under a floor), ``run`` sets ``PYTHONHASHSEED`` to a number made from non-blocking kernel bytes (``GRND_INSECURE``),
and ``URANDOM_SHIM_HASHSEED`` to the same number, which marks it as ours rather than the user's.

Descendants: each interpreter that starts with our mark puts a fresh seed in its environment for its own children
(one seed per process, as without the shim, never a whole tree sharing one), or, once the CRNG is ready, takes both
variables out, so that from then on every process gets a full-strength hash secret. A seed the user set is never
touched.
"""

from __future__ import annotations

import os

VARIABLE = "PYTHONHASHSEED"
MARK = "URANDOM_SHIM_HASHSEED"


def new_seed() -> str:
    """A hash seed from best-effort kernel bytes, without waiting: 1 to 4294967295 (0 would turn hashing's
    randomisation off)."""
    from ._readiness import best_effort_bytes

    return str(int.from_bytes(best_effort_bytes(4), "little") % 4294967295 + 1)


def is_ours(environ: dict[str, str] | os._Environ[str]) -> bool:
    """Whether ``PYTHONHASHSEED`` is the one ``run`` set (and not the user's)."""
    seed = environ.get(VARIABLE)
    return seed is not None and environ.get(MARK) == seed


def give(environ: dict[str, str]) -> str:
    """Set a fresh seed of ours in ``environ``; returns it."""
    seed = new_seed()
    environ[VARIABLE] = environ[MARK] = seed
    return seed


def pass_on(ready: bool) -> None:
    """In an interpreter started with our seed: a fresh one for its children while the CRNG is unready, none once it
    is ready."""
    environ = os.environ
    if not is_ours(environ):
        return
    if ready:
        del environ[VARIABLE], environ[MARK]
    else:
        seed = new_seed()
        environ[VARIABLE] = environ[MARK] = seed
