"""A Sphinx directive that puts the command line's real ``--help`` text into the docs.

    ```{urandom-shim-help} status
    ```

renders exactly what ``urandom-shim status --help`` prints (at 100 columns), taken from the parser the command line
itself uses, so the CLI reference can't drift from the code. Without an argument it renders ``urandom-shim --help``.
"""

from __future__ import annotations

import os
from typing import Any

from docutils import nodes
from sphinx.util.docutils import SphinxDirective

WIDTH = "100"


def help_text(command: str | None) -> str:
    """``urandom-shim [COMMAND] --help`` as the command line prints it, at a fixed width."""
    from urandom_shim.cli.parser import build_parser

    saved = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = WIDTH  # argparse wraps to the terminal width; the docs must not depend on it
    try:
        parser, subs = build_parser()
        return (subs[command] if command else parser).format_help()
    finally:
        if saved is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = saved


class HelpDirective(SphinxDirective):
    optional_arguments = 1
    has_content = False

    def run(self) -> list[nodes.Node]:
        command = self.arguments[0] if self.arguments else None
        try:
            text = help_text(command)
        except KeyError:
            raise self.error(f"urandom-shim has no command {command!r}") from None
        block = nodes.literal_block(text, text)
        block["language"] = "text"
        return [block]


def setup(app: Any) -> dict[str, Any]:
    app.add_directive("urandom-shim-help", HelpDirective)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
