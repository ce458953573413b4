"""Text for a terminal, shared by the command line and the boot report: aligned rows, and strings escaped so that
nothing printed can move the cursor. Never imported at interpreter start."""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Sequence


def rows(rows: Sequence[tuple[str, ...]], indent: str = "  ", widest: int = 48) -> list[str]:
    """Rows of cells, each column padded to its widest cell (the last column is not padded). A first cell longer
    than ``widest`` (a long path) gets a line of its own, so that one long path does not push every row right."""
    if not rows:
        return []
    fitting = [row for row in rows if len(row[0]) <= widest] or [("",)]
    widths = [max((len(row[i]) for row in fitting if len(row) > i), default=0) for i in range(max(map(len, rows)))]
    lines = []
    for row in rows:
        if len(row[0]) > widest and len(row) > 1:
            lines.append(indent + row[0])
            row = ("", *row[1:])
        cells = [cell.ljust(widths[i]) if i < len(row) - 1 else cell for i, cell in enumerate(row)]
        lines.append((indent + "  ".join(cells)).rstrip())
    return lines


def escaped(text: object) -> str:
    """``text`` safe to print on a terminal: every character that is not printable (control characters, terminal
    escapes, C1 controls, bidirectional overrides and other format characters, line and paragraph separators) as
    its ``\\x``/``\\u`` escape, so that no string from a record or the journal can move the cursor, redraw what
    was printed above it, or reorder what follows."""
    text = str(text)
    if text.isprintable():
        return text
    out = []
    for char in text:
        if char.isprintable():
            out.append(char)
            continue
        code = ord(char)
        out.append(f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}")
    return "".join(out)
