"""Check every link inside the built documentation site: ``python tests/check_site.py docs/_build/html``.

Sphinx (with ``-n``) and MyST already refuse a reference to a missing page or heading while building. This checks
what the reader gets: every ``href`` and ``src`` in every built page that points inside the site must name a file
that exists, and its ``#fragment`` must name an ``id`` in that file. Links that leave the site (``https:``,
``mailto:``) are listed, not fetched: CI has no network. Exit status 1 on any broken link.
"""

from __future__ import annotations

import sys
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit


class _Page(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.ids: set[str] = set()
        self.links: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            if value is None:
                continue
            if name in ("id", "name"):
                self.ids.add(value)
            elif name in ("href", "src"):
                self.links.append(value)


def check(site: Path) -> tuple[list[str], set[str], int]:
    """(broken links, external links, internal links checked)."""
    pages: dict[Path, _Page] = {}
    for path in sorted(site.rglob("*.html")):
        page = _Page()
        page.feed(path.read_text(encoding="utf-8"))
        pages[path.resolve()] = page
    broken: list[str] = []
    external: set[str] = set()
    checked = 0
    for path, page in pages.items():
        for link in page.links:
            parts = urlsplit(link)
            if parts.scheme or parts.netloc:
                if parts.scheme not in ("http", "https", "mailto"):
                    broken.append(f"{path.relative_to(site.resolve())}: {link} (unexpected scheme)")
                external.add(link)
                continue
            checked += 1
            target = (path.parent / unquote(parts.path)).resolve() if parts.path else path
            if target.is_dir():
                target = target / "index.html"
            where = f"{path.relative_to(site.resolve())}: {link}"
            if not target.exists():
                broken.append(f"{where} (no such file)")
            elif target.suffix == ".md":
                broken.append(f"{where} (a Markdown source, not a page)")
            elif parts.fragment and target.suffix == ".html":
                if unquote(parts.fragment) not in pages[target].ids:
                    broken.append(f"{where} (no id {parts.fragment!r} in {target.name})")
    return broken, external, checked


def main(argv: list[str]) -> int:
    site = Path(argv[1] if len(argv) > 1 else "docs/_build/html")
    if not (site / "index.html").exists():
        print(f"check_site: {site} has no index.html; build the docs first", file=sys.stderr)
        return 1
    broken, external, checked = check(site)
    for line in broken:
        print(f"broken link: {line}", file=sys.stderr)
    print(f"check_site: {checked} links inside the site, {len(broken)} broken; {len(external)} external, not fetched")
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
