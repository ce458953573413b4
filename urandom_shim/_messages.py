"""One-line diagnostics on stderr.

Every message the shim prints starts with ``urandom-shim:`` and fits on one line, so that it reads well in a journal
and greps well across a fleet. Printing must never fail: a closed or missing stderr is not our problem to report.
"""

from __future__ import annotations

import sys

PREFIX = "urandom-shim: "


def emit(text: str) -> None:
    """Write one ``urandom-shim:`` line to stderr, whatever state stderr is in."""
    line = PREFIX + text.replace("\r", "\\r").replace("\n", "\\n") + "\n"  # one line, whatever a value holds
    stream = sys.stderr
    if stream is None:  # pythonw, daemons with closed descriptors
        return
    try:
        stream.write(line)
        stream.flush()
    except Exception:  # noqa: BLE001 - a broken stderr must not break the interpreter
        pass
