"""Where an editable install's import hook maps a program's package: the installs that put their checkout on no
``sys.path`` entry, and map the package to it from a file in ``site-packages`` instead (issue 36).

Loaded only where :func:`urandom_shim._programs.find_module` did not find a program's module on ``sys.path``, so
that the starts of a regular install, which finds it there, don't pay for it. It imports nothing of the package but
the name of the package file.
"""

import os
import stat

from ._programs import PACKAGE_FILE

#: The largest editable-install hook read: setuptools' finder is about 4 KB, the ``editables`` bootstrap a few lines.
HOOK_MAX = 64 * 1024
#: What one start reads of all the hooks together, how many of their mapping lines it looks at and how much of those
#: it parses, whatever their number and content, so that what they cost a start is bounded. A venv with a hundred
#: editable installs reads about 400 KB and parses about 20 KB in 100 lines.
HOOKS_READ_MAX = 1024 * 1024
HOOK_LINES_MAX = 256
PARSED_MAX = 64 * 1024
#: The longest mapping line parsed: setuptools writes one pair per top-level package of the distribution.
LINE_MAX = 16 * 1024


class _Budget:
    """What is left of a start's :data:`HOOKS_READ_MAX` bytes, :data:`HOOK_LINES_MAX` lines and
    :data:`PARSED_MAX` characters parsed."""

    __slots__ = ("bytes", "lines", "parsed")

    def __init__(self) -> None:
        self.bytes = HOOKS_READ_MAX
        self.lines = HOOK_LINES_MAX
        self.parsed = PARSED_MAX

    def spent(self) -> bool:
        return self.bytes <= 0 or self.lines <= 0 or self.parsed <= 0


def find_editable(module: str, path: "list[str]") -> "tuple[str, str | None, str] | None":
    """(anchor, package, hook): where an editable install's import hook maps ``module``'s top-level package or module,
    for the installs that put no path on ``sys.path`` (issue 36): setuptools' ``__editable___*_finder.py`` (its
    ``MAPPING``), and the ``_editable_impl_*.py`` of the ``editables`` library (its ``F.map_module(...)`` lines),
    which hatchling's ``dev-mode-exact`` and pdm-backend's ``editable-backend = "editables"`` write. ``anchor`` and
    ``package`` are :func:`urandom_shim._programs.find_module`'s, in the checkout the hook maps to; ``hook`` is the
    hook's file.

    The hooks are looked for in the installation directories on ``path`` (``site-packages``, ``dist-packages``),
    which ``site`` runs them from, in ``path``'s order. A hook is read as text, only if it is a regular file of at
    most :data:`HOOK_MAX` bytes (checked before it is opened, and opened without blocking), never imported or run;
    all the hooks together within one budget (:data:`HOOKS_READ_MAX`, :data:`HOOK_LINES_MAX`), past which none is
    read. Called only where :func:`urandom_shim._programs.find_module` found nothing: a regular install costs
    nothing more."""
    top = module.split(".")[0]
    if not top.isidentifier():
        return None
    budget = _Budget()
    for entry in path:
        if not isinstance(entry, str) or os.path.basename(os.path.normpath(entry)) not in _INSTALL_DIRS:
            continue
        try:
            names = sorted(
                name
                for name in os.listdir(entry)
                if (name.startswith("__editable___") and name.endswith("_finder.py"))
                or (name.startswith("_editable_impl_") and name.endswith(".py"))
            )
        except (OSError, ValueError):
            continue
        for name in names:
            if budget.spent():
                return None
            hook = os.path.join(entry, name)
            target = _hook_target(hook, top, budget)
            if target is None:
                continue
            found = _mapped(module, target)
            if found is not None:
                return found[0], found[1], hook
    return None


#: The names of the directories that installers put distributions in (``_sources.INSTALL_DIR_NAMES``).
_INSTALL_DIRS = ("site-packages", "dist-packages")
#: The lines that map a name, and what their literal is made of: setuptools' ``MAPPING: dict[str, str] =
#: {'pkg': '/path/pkg'}`` (``MAPPING = {...}`` before setuptools 69), and ``editables``'
#: ``F.map_module('pkg', '/path/pkg/__init__.py')``.
_MARKERS = (("MAPPING", "{", ":", "}"), ("F.map_module(", "(", ",", ")"))


def _hook_target(hook: str, top: str, budget: "_Budget") -> "str | None":
    """The path an editable install's hook file maps the top-level name ``top`` to, read from its text. None if it
    does not map ``top``, or can't be read (not a regular file, too large, not UTF-8, not the shape expected), or
    the start's budget for hooks is spent."""
    try:
        found = os.stat(hook)
    except (OSError, ValueError):
        return None
    if not stat.S_ISREG(found.st_mode) or found.st_size > HOOK_MAX or found.st_size > budget.bytes:
        budget.bytes -= min(found.st_size, HOOK_MAX)
        return None
    from ._programs import read_regular

    data = read_regular(hook, HOOK_MAX + 1)
    budget.bytes -= HOOK_MAX if data is None else len(data)
    if data is None or len(data) > HOOK_MAX:
        return None
    try:
        text = "\n" + data.decode("utf-8")
    except ValueError:  # UnicodeDecodeError
        return None
    for marker, opening, separator, closing in _MARKERS:
        start = text.find("\n" + marker)
        while start >= 0 and not budget.spent():
            budget.lines -= 1
            end = text.find("\n", start + 1)
            line = text[start + 1 : end if end >= 0 else len(text)].rstrip("\r")
            start = text.find("\n" + marker, start + 1) if end >= 0 else -1
            if len(line) > min(LINE_MAX, budget.parsed) or (f"'{top}'" not in line and f'"{top}"' not in line):
                continue
            budget.parsed -= len(line)
            if marker == "MAPPING":
                literal = line.partition("=")[2] if "=" in line else ""
            else:
                literal = line[len("F.map_module") :]
            pairs = _string_pairs(literal, opening, separator, closing)
            if marker != "MAPPING" and pairs is not None and len(pairs) != 1:
                continue
            for name, target in pairs or ():
                if name == top:
                    return target
    return None


#: The escapes ``repr()`` writes in a string, and what each stands for; ``\\x``, ``\\u`` and ``\\U`` take hex digits.
_ESCAPES = {"\\": "\\", "'": "'", '"': '"', "t": "\t", "n": "\n", "r": "\r"}
_HEX_DIGITS = {"x": 2, "u": 4, "U": 8}


def _string_pairs(text: str, opening: str, separator: str, closing: str) -> "list[tuple[str, str]] | None":
    """The pairs of strings of a literal such as ``{'a': 'b', 'c': 'd'}`` or ``('a', 'b')``, as ``repr`` writes
    them, escapes included: read by hand, in one pass over the text, without compiling it (a deep or strange
    expression can't overflow a parser, and no warning is printed). None for anything of another shape."""
    text = text.strip()
    if not (text.startswith(opening) and text.endswith(closing)):
        return None
    strings: list[str] = []
    expected = ""  # what must come next: "" a string, then the separator, then "," (or the end)
    index, end = 1, len(text) - 1
    while index < end:
        char = text[index]
        if char in " \t":
            index += 1
        elif char in "'\"" and expected == "":
            value, index = _string(text, index, end)
            if value is None:
                return None
            strings.append(value)
            expected = separator if len(strings) % 2 else ","
        elif expected and char == expected:
            expected = ""
            index += 1
        else:
            return None
    if len(strings) % 2:  # a key without a value (a trailing comma is fine, as in Python)
        return None
    return list(zip(strings[::2], strings[1::2]))


def _string(text: str, start: int, end: int) -> "tuple[str | None, int]":
    """(the value of the string literal that starts at ``start``, the index after it), or None for one that does
    not end before ``end`` or holds an escape ``repr`` does not write. Each search stops at the closing quote, so a
    line costs one walk over it."""
    quote = text[start]
    pieces = []
    index = start + 1
    while True:
        close = text.find(quote, index, end)
        if close < 0:
            return None, end
        slash = text.find("\\", index, close)
        if slash < 0:
            pieces.append(text[index:close])
            return "".join(pieces), close + 1
        pieces.append(text[index:slash])
        code = text[slash + 1 : slash + 2]
        index = slash + 2
        if code in _ESCAPES:
            pieces.append(_ESCAPES[code])
            continue
        width = _HEX_DIGITS.get(code)
        digits = text[index : index + width] if width else ""
        if not width or len(digits) != width or not all(d in "0123456789abcdefABCDEF" for d in digits):
            return None, end
        number = int(digits, 16)
        if number > 0x10FFFF:
            return None, end
        pieces.append(chr(number))
        index += width


def _mapped(module: str, target: str) -> "tuple[str, str | None] | None":
    """(anchor, package) for ``module`` whose top-level name an editable hook maps to ``target``: a package's
    directory (setuptools), its ``__init__.py`` (``editables``), or a single module's file (``editables``; setuptools
    gives its path without the suffix). The package file that applies is the nearest one, as in a checkout on
    ``sys.path``. None if ``target`` is none of these."""
    try:
        if os.path.basename(target) == "__init__.py" and os.path.isfile(target):
            directory = os.path.dirname(target)
        elif os.path.isdir(target):
            directory = target
        elif target.endswith(".py") and os.path.isfile(target):
            return os.path.dirname(os.path.realpath(target)), None
        elif os.path.isfile(target + ".py"):
            return os.path.dirname(os.path.realpath(target + ".py")), None
        else:
            return None
        parts = module.split(".")
        for depth in range(len(parts), 0, -1):
            candidate = os.path.join(directory, *parts[1:depth])
            if os.path.isfile(os.path.join(candidate, PACKAGE_FILE)):
                return os.path.realpath(directory), os.path.realpath(candidate)
        return os.path.realpath(directory), None
    except (OSError, ValueError):
        return None
