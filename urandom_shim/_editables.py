"""Where an editable install's import hook maps a program's package: the installs that put their checkout on no
``sys.path`` entry, and map the package to it from a file in ``site-packages`` instead (issue 36).

Loaded only where :func:`urandom_shim._programs.find_module` did not find a program's module on ``sys.path``, so
that the starts of a regular install, which finds it there, don't pay for it. It imports nothing of the package but
the name of the package file.
"""

import os

from ._programs import PACKAGE_FILE

#: The largest editable-install hook read: setuptools' finder is about 4 KB, the ``editables`` bootstrap a few lines.
HOOK_MAX = 64 * 1024


def find_editable(module: str, path: "list[str]") -> "tuple[str, str | None, str] | None":
    """(anchor, package, hook): where an editable install's import hook maps ``module``'s top-level package or module,
    for the installs that put no path on ``sys.path`` (issue 36): setuptools' ``__editable___*_finder.py`` (its
    ``MAPPING``), and the ``_editable_impl_*.py`` of the ``editables`` library (its ``F.map_module(...)`` lines),
    which hatchling's ``dev-mode-exact`` and pdm-backend's ``editable-backend = "editables"`` write. ``anchor`` and
    ``package`` are :func:`urandom_shim._programs.find_module`'s, in the checkout the hook maps to; ``hook`` is the
    hook's file.

    The hooks are looked for in the installation directories on ``path`` (``site-packages``, ``dist-packages``),
    which ``site`` runs them from, in ``path``'s order. A hook is read as text, capped at :data:`HOOK_MAX`, never
    imported or run. Called only where :func:`urandom_shim._programs.find_module` found nothing: a regular install
    costs nothing more."""
    top = module.split(".")[0]
    if not top.isidentifier():
        return None
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
            hook = os.path.join(entry, name)
            target = _hook_target(hook, top)
            if target is None:
                continue
            found = _mapped(module, target)
            if found is not None:
                return found[0], found[1], hook
    return None


#: The names of the directories that installers put distributions in (``_sources.INSTALL_DIR_NAMES``).
_INSTALL_DIRS = ("site-packages", "dist-packages")


def _hook_target(hook: str, top: str) -> "str | None":
    """The path an editable install's hook file maps the top-level name ``top`` to, read from its text: the literal
    of setuptools' ``MAPPING = {...}`` line, or an ``editables`` ``F.map_module('name', 'path')`` line. None if it
    does not map ``top``, or can't be read (not a regular file, too large, not UTF-8, not the shape expected)."""
    from ._programs import read_regular

    data = read_regular(hook, HOOK_MAX + 1)
    if data is None or len(data) > HOOK_MAX:
        return None
    try:
        text = data.decode("utf-8")
    except ValueError:  # UnicodeDecodeError
        return None
    for line in text.splitlines():
        if line.startswith("MAPPING") and "=" in line:  # setuptools: MAPPING: dict[str, str] = {'pkg': '/path/pkg'}
            pairs = _string_pairs(line.partition("=")[2], "{", ":", "}")
        elif line.startswith("F.map_module("):  # editables: F.map_module('pkg', '/path/pkg/__init__.py')
            pairs = _string_pairs(line[len("F.map_module") :], "(", ",", ")")
            if pairs is not None and len(pairs) != 1:
                pairs = None
        else:
            continue
        for name, target in pairs or ():
            if name == top:
                return target
    return None


def _string_pairs(text: str, opening: str, separator: str, closing: str) -> "list[tuple[str, str]] | None":
    """The pairs of strings of a literal such as ``{'a': 'b', 'c': 'd'}`` or ``('a', 'b')``, as ``repr`` writes
    them: read by hand where no string has an escape in it (the usual case, and no import), else by
    ``ast.literal_eval``, which evaluates literals and nothing else. None for anything of another shape."""
    text = text.strip()
    if "\\" in text:
        return _literal_pairs(text, opening == "{")
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
            close = text.find(char, index + 1)
            if close < 0:
                return None
            strings.append(text[index + 1 : close])
            expected = separator if len(strings) % 2 else ","
            index = close + 1
        elif expected and char == expected:
            expected = ""
            index += 1
        else:
            return None
    if len(strings) % 2:  # a key without a value (a trailing comma is fine, as in Python)
        return None
    return list(zip(strings[::2], strings[1::2]))


def _literal_pairs(text: str, mapping: bool) -> "list[tuple[str, str]] | None":
    import ast

    if sum(text.count(bracket) for bracket in "([{") > 64:  # Python 3.8's parser writes its overflow to stderr
        return None
    try:
        value = ast.literal_eval(text)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None
    pairs = list(value.items()) if mapping and isinstance(value, dict) else [value] if isinstance(value, tuple) else []
    if not pairs or not all(
        isinstance(pair, tuple) and len(pair) == 2 and all(isinstance(item, str) for item in pair) for pair in pairs
    ):
        return None
    return pairs


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
