"""The systemd units of the docs, word for word: every ``ini`` block whose first line is ``# /etc/systemd/system/…``
in the pages below. The real-boot test installs them as they are printed, so the docs are what is tested.

The same for report-only mode (:func:`report_mode`): the machine file and the tmpfiles.d snippet that the rollout
how-to tells users to install."""

from __future__ import annotations

import re
from pathlib import Path

DOCS = Path(__file__).resolve().parents[2] / "docs"
PAGES = ("howto/systemd.md", "howto/init-scripts.md")
BLOCK = re.compile(r"^```ini\n(# (/etc/systemd/system/\S+)\n.*?)^```$", re.MULTILINE | re.DOTALL)

#: The pages that show report-only mode's files: the how-to first, whose machine file is the one installed.
REPORT_PAGES = ("howto/strict-rollout.md", "reference/events.md")
#: A ``toml`` block that starts with ``# /etc/urandom-shim.toml`` and turns report mode on.
MACHINE_FILE = re.compile(
    r"^```toml\n(# /etc/urandom-shim\.toml\n(?:(?!^```).)*?^mode = \"report\".*?)^```$", re.M | re.S
)
#: ``cat >/etc/tmpfiles.d/NAME <<'EOF'`` … ``EOF`` in a shell block.
TMPFILES = re.compile(r"^cat >(/etc/tmpfiles\.d/\S+) <<'EOF'\n(.*?\n)EOF$", re.MULTILINE | re.DOTALL)


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


def report_mode() -> dict[str, str]:
    """The files of a machine in report-only mode, as the docs print them: ``/etc/urandom-shim.toml`` (the how-to's
    first block that sets ``mode = "report"``) and the tmpfiles.d snippet that creates the events file at boot (which
    every page that shows it must show alike)."""
    machine: str | None = None
    tmpfiles: dict[str, str] = {}
    for page in REPORT_PAGES:
        text = (DOCS / page).read_text()
        found = MACHINE_FILE.search(text)
        if machine is None and found:
            machine = found.group(1)
        for match in TMPFILES.finditer(text):
            path, snippet = match.group(1), match.group(2)
            if path in tmpfiles and tmpfiles[path] != snippet:
                raise AssertionError(f"{page} shows {path} differently from another page")
            tmpfiles[path] = snippet
    if machine is None or len(tmpfiles) != 1:
        raise AssertionError(
            f'{" and ".join(REPORT_PAGES)} no longer show one /etc/urandom-shim.toml with mode = "report" and one '
            f"tmpfiles.d snippet (found {len(tmpfiles)} snippets): the report-mode boot installs them word for word"
        )
    return {"/etc/urandom-shim.toml": machine, **tmpfiles}
