"""The systemd units of the docs, word for word: every ``ini`` block whose first line is ``# /etc/systemd/system/…``
in the pages below. The real-boot test installs them as they are printed, so the docs are what is tested."""

from __future__ import annotations

import re
from pathlib import Path

DOCS = Path(__file__).resolve().parents[2] / "docs"
PAGES = ("howto/systemd.md", "howto/init-scripts.md")
BLOCK = re.compile(r"^```ini\n(# (/etc/systemd/system/\S+)\n.*?)^```$", re.MULTILINE | re.DOTALL)


def units() -> dict[str, str]:
    """Each unit or drop-in path, with the block's text (its first line is a comment naming the path)."""
    found: dict[str, str] = {}
    for page in PAGES:
        for match in BLOCK.finditer((DOCS / page).read_text()):
            text, path = match.group(1), match.group(2)
            if path in found and found[path] != text:
                raise AssertionError(f"{page} shows {path} differently from another page")
            found[path] = text
    return found
