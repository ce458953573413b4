"""One-line diagnostics on stderr.

Every message the shim prints starts with ``urandom-shim:`` and fits on one line, so that it reads well in a journal
and greps well across a fleet. Printing must never fail: a closed or missing stderr is not our problem to report.
Messages are bounded in length (:data:`MAX_LINE`) and, for configuration problems, in number (:func:`bounded`), so
that no file or variable, however large, can flood a log.
"""

from __future__ import annotations

import sys

PREFIX = "urandom-shim: "
#: The longest line the shim prints, prefix included. Values inside messages are already cut to about 80 characters;
#: this is the bound for everything else (a path of 4096 characters, say).
MAX_LINE = 1000
#: The most configuration problems printed at once; past that, one line says how many more there are.
MAX_LINES = 10


def line(text: str) -> str:
    """``text`` as one ``urandom-shim:`` line: one line, no terminal escape sequences and at most :data:`MAX_LINE`
    characters, whatever a value or a path in it holds."""
    if not text.isprintable():
        text = "".join(char if char.isprintable() else repr(char)[1:-1] for char in text)
    if len(text) > MAX_LINE - len(PREFIX):
        text = text[: MAX_LINE - len(PREFIX) - 1] + "…"
    return PREFIX + text


def emit(text: str) -> None:
    """Write one ``urandom-shim:`` line to stderr, whatever state stderr is in."""
    stream = sys.stderr
    if stream is None:  # pythonw, daemons with closed descriptors
        return
    try:
        stream.write(line(text) + "\n")
        stream.flush()
    except Exception:  # noqa: BLE001 - a broken stderr must not break the interpreter
        pass


def bounded(problems: list[str]) -> list[str]:
    """``problems`` as printed: at most :data:`MAX_LINES` lines, the last of which counts the ones left out."""
    if len(problems) <= MAX_LINES:
        return problems
    hidden = len(problems) - (MAX_LINES - 1)
    return [
        *problems[: MAX_LINES - 1],
        f"{hidden} more configuration problems are not shown; `urandom-shim check --json` lists them all.",
    ]


def report_failure(exc: BaseException) -> None:
    """The shim failed inside an interpreter: one line (the traceback too under ``URANDOM_SHIM_DEBUG``), and the
    interpreter carries on with its own ``os.urandom()``."""
    import os

    if os.environ.get("URANDOM_SHIM_DEBUG", "") not in ("", "0"):
        import traceback

        traceback.print_exception(type(exc), exc, exc.__traceback__)
    emit(
        f"not active in this interpreter: activation failed ({type(exc).__name__}: {exc}); "
        "the interpreter carries on with its own os.urandom(). Rerun with URANDOM_SHIM_DEBUG=1 for the traceback, "
        "or set URANDOM_SHIM_DISABLE=1 to silence this."
    )
