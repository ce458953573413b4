"""Where a program's code lives, when that takes more than a look at ``sys.argv[0]``: an ``-m`` module found on
``sys.path``, the module a console-script launcher runs, what an interpreter's command line runs, and the package
directory whose file (:data:`PACKAGE_FILE`) applies to a program.

Imported only for those starts (by :func:`urandom_shim._sources.invocation`), and by the command line: an unready
``python -c`` start, or one from stdin, doesn't load it (about 0.5 M instructions, issue 30). It imports nothing of
the package, so nothing here can lead back to what imports it.
"""

import os
import stat
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Callable

#: The file an installed app ships inside its top-level package to carry its ``[tool.urandom-shim]`` settings
#: (the same keys, at the top level): a wheel does not install ``pyproject.toml``, but it installs package data.
PACKAGE_FILE = "urandom-shim.toml"

#: The largest console-script launcher we read: pip's and uv's are about 250 bytes.
LAUNCHER_MAX = 2048


def find_module(module: str, path: "list[str]", installed: "Callable[[str], bool]") -> "tuple[str | None, str | None]":
    """(anchor, package): where ``module``'s top-level package or module lives on ``path``, found by looking at the
    file system the way Python's path finder does for plain directories, without importing anything.

    For a package, the anchor is its directory, and ``package`` the directory whose package file applies to it, if
    any (:func:`package_directory`); for a single-file module, the anchor is the directory holding it; for a module
    in a namespace package without ``__init__.py``, the namespace's directory on the entry that holds the module.
    (None, None) when it is not found there: a zip, an import hook (some editable installs), or not installed."""
    top = module.split(".")[0]
    if not top.isidentifier():
        return None, None
    for entry in path:
        if not isinstance(entry, str):
            continue
        try:
            base = os.path.join(entry or os.getcwd(), top)
            if os.path.isdir(base) and (
                os.path.isfile(os.path.join(base, "__init__.py")) or os.path.isfile(os.path.join(base, "__main__.py"))
            ):
                return os.path.realpath(base), package_directory(module, entry or os.getcwd(), installed)
            if os.path.isfile(base + ".py"):
                return os.path.realpath(entry or os.getcwd()), None
        except (OSError, ValueError):  # an unreadable entry, or one with a NUL byte
            continue
    # A namespace package without __init__.py (PEP 420), which Python merges from its portions on every entry: the
    # entry whose portion holds the module's own file (newcomer review of issue 37).
    if "." in module:
        for entry in path:
            if not isinstance(entry, str):
                continue
            try:
                base = os.path.join(entry or os.getcwd(), top)
                if os.path.isdir(base) and _module_file(entry or os.getcwd(), module) is not None:
                    return os.path.realpath(base), package_directory(module, entry or os.getcwd(), installed)
            except (OSError, ValueError):
                continue
    return None, None


#: The largest RECORD read: a large distribution's is a few hundred kilobytes.
RECORD_MAX = 4 * 1024 * 1024


def read_regular(path: str, limit: int) -> "bytes | None":
    """Up to ``limit`` bytes of the regular file ``path``; None if it can't be opened or read, or is not a regular
    file (opened without blocking, so that a FIFO can't hang the start)."""
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except (OSError, ValueError):
        return None
    try:
        with open(descriptor, "rb") as handle:
            if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
                return None
            return handle.read(limit)
    except (OSError, ValueError):
        return None


def _read_record(entry: str, info: str) -> "bytes | frozenset[str] | None":
    """The RECORD of the distribution whose metadata directory is ``info`` in ``entry``: its bytes, with a newline
    in front so that every line, the first included, starts after one; or, for a RECORD that quotes a path (CSV
    quotes one with a comma, a quote or a newline in it, where a newline no longer ends a line), the set of its
    paths, parsed as installers write them. None if it can't be read, or is not a regular file (a FIFO must not
    hang the start)."""
    data = read_regular(os.path.join(entry, info, "RECORD"), RECORD_MAX)
    if data is None:
        return None
    if b'"' not in data:
        return b"\n" + data
    import csv
    import io

    try:
        rows = csv.reader(io.StringIO(data.decode("utf-8", "surrogateescape"), newline=""))
        return frozenset(row[0] for row in rows if row)
    except (csv.Error, ValueError):
        return None


def _lists(record: "bytes | frozenset[str]", path: str) -> bool:
    """Whether ``record`` (:func:`_read_record`) has a line for the file ``path``."""
    if isinstance(record, frozenset):
        return path in record
    return b"\n" + path.encode("utf-8", "surrogateescape") + b"," in record


def _module_file(entry: str, module: str) -> "str | None":
    """The file, relative to ``entry`` and spelt as RECORD spells it, that Python loads for ``module``: its
    package's ``__init__``, or its own file (an extension module, source or bytecode, in the import system's
    order). None if there is none: the distribution that ships a module is the one whose RECORD lists this file."""
    import _imp

    suffixes = [*_imp.extension_suffixes(), ".py", ".pyc"]
    base = os.path.join(entry, *module.split("."))
    relative = module.replace(".", "/")
    try:
        if os.path.isdir(base):
            for suffix in suffixes:
                if os.path.isfile(os.path.join(base, "__init__" + suffix)):
                    return f"{relative}/__init__{suffix}"
        for suffix in suffixes:
            if os.path.isfile(base + suffix):
                return relative + suffix
    except (OSError, ValueError):
        pass
    return None


def _named_after(entry: str, module: str) -> "list[list[str]]":
    """The metadata directories in ``entry`` of distributions named after ``module`` or one of its packages, a
    list for each name, longest name first: for ``ns.tool.cli``, those of ``ns-tool-cli``, of ``ns-tool``, then of
    ``ns`` (names compared as installers normalise them: case, ``-``, ``_`` and ``.`` alike), each with every
    version left there. One listing of the directory, searched as one string: the cost grows with the directory's
    size at the speed of C, not of a loop in Python."""
    try:
        names = os.listdir(entry)
    except (OSError, ValueError):
        return []
    listing = "\n".join(names)
    if listing.count("\n") != len(names) - 1:  # a name with a newline in it would shift the lines below
        names = [name for name in names if "\n" not in name]
        listing = "\n".join(names)
    # Lowering may change a line's length ("İ" is two characters lowered), never the number of lines: a match is
    # found in the folded text, and its name by its line's number.
    folded = "\n" + listing.lower().replace("-", "_").replace(".", "_") + "\n"
    parts = module.lower().split(".")
    groups = []
    for depth in range(len(parts), 0, -1):
        wanted = "_".join(parts[:depth])
        needle = "\n" + wanted + "_"
        found = []
        start = folded.find(needle)
        while start >= 0:
            name = names[folded.count("\n", 0, start)]
            stem, dash, _version = name[: -len(".dist-info")].rpartition("-")
            if dash and name.endswith(".dist-info") and stem.lower().replace("-", "_").replace(".", "_") == wanted:
                found.append(name)
            start = folded.find(needle, start + 1)
        if found:
            groups.append(sorted(found))
    return groups


def _scan_for(entry: str, relative: str) -> "bytes | frozenset[str] | None":
    """The RECORD, of every distribution in ``entry``, that lists ``relative``: the costly search, one read of each
    RECORD until one lists it, kept for a namespace package whose distribution isn't named after its module."""
    try:
        names = sorted(name for name in os.listdir(entry) if name.endswith(".dist-info"))
    except (OSError, ValueError):
        return None
    for name in names:
        record = _read_record(entry, name)
        if record is not None and _lists(record, relative):
            return record
    return None


def _is_namespace(directory: str) -> bool:
    """Whether ``directory`` is a namespace package, which several distributions share: one of the pkgutil or
    pkg_resources kind, or a directory with no ``__init__.py`` (PEP 420)."""
    try:
        with open(os.path.join(directory, "__init__.py"), "rb") as handle:
            text = handle.read(64 * 1024)
    except FileNotFoundError:
        return True
    except OSError:
        return False
    return b"extend_path" in text or b"declare_namespace" in text


def package_directory(module: str, entry: str, installed: "Callable[[str], bool]") -> "str | None":
    """The directory whose package file (:data:`PACKAGE_FILE`) applies to ``module``, found in the ``sys.path``
    directory ``entry``: the nearest one of the module's packages (deepest first) that holds the file and belongs to
    the same distribution as the module.

    Outside an installation directory (a checkout on ``sys.path``), the nearest file applies. In an installation
    directory, the module's distribution is looked for by name (:func:`_named_after`): the distributions named
    after the module or one of its packages whose RECORD lists the module's own file (:func:`_module_file`; more
    than one when an old version's metadata was left behind). Found, the file applies if one of their RECORDs lists
    it too, and only then. Not found by name, a file that a distribution named after one of the module's packages
    lists is that distribution's, not the module's; any other file in a regular package applies (a package
    directory belongs to the distribution that ships its ``__init__.py``), and one in a namespace package, which
    several distributions share, only if the RECORD that lists it also lists the module's file: the one case that
    reads RECORDs until it finds the file's. So the cost of an app named after its package is one listing and one
    RECORD, however many distributions are installed (issue 37)."""
    parts = module.split(".")
    in_installation = installed(entry)
    searched = False
    own_file: str | None = None
    owners: list[bytes | frozenset[str]] = []  # RECORDs of the module's distribution
    others: list[bytes | frozenset[str]] = []  # RECORDs of distributions named after a package, that don't ship it
    for depth in range(len(parts), 0, -1):
        directory = os.path.join(entry, *parts[:depth])
        candidate = os.path.join(directory, PACKAGE_FILE)
        try:
            if not os.path.isfile(candidate):
                continue
        except (OSError, ValueError):
            continue
        if not in_installation:
            return os.path.realpath(directory)
        relative = "/".join([*parts[:depth], PACKAGE_FILE])
        if not searched:
            searched = True
            own_file = _module_file(entry, module)
            for group in _named_after(entry, module):  # the longest name first: the nearest distribution
                records = [record for record in (_read_record(entry, info) for info in group) if record is not None]
                for record in records:
                    (owners if own_file is not None and _lists(record, own_file) else others).append(record)
                if owners:
                    break
        if owners:
            if any(_lists(record, relative) for record in owners):
                return os.path.realpath(directory)
            continue  # the module's distribution doesn't ship this file: another's, or put there by hand
        if any(_lists(record, relative) for record in others):
            continue  # the file of a distribution that doesn't ship the module
        if not _is_namespace(directory):
            return os.path.realpath(directory)
        found = _scan_for(entry, relative)
        if found is not None and own_file is not None and _lists(found, own_file):
            return os.path.realpath(directory)
    return None


def launcher_target(script: str) -> "str | None":
    """The module a console-script launcher imports, if ``script`` is one: the small Python file pip and uv write
    into ``bin/`` (a shebang, ``from MODULE import FUNC``, ``if __name__ == "__main__":`` and ``sys.exit(FUNC())``).
    None for anything else, so an ordinary script that happens to import something keeps its own directory."""
    try:
        # Only a regular file: `python /dev/stdin` must not lose its program to us, nor a FIFO block the start.
        if not stat.S_ISREG(os.stat(script).st_mode):
            return None
        with open(script, "rb") as handle:
            data = handle.read(LAUNCHER_MAX + 1)
    except (OSError, ValueError):
        return None
    if len(data) > LAUNCHER_MAX or not data.startswith(b"#!"):
        return None
    try:
        lines = data.decode("utf-8").splitlines()
    except UnicodeDecodeError:
        return None
    imports = [line.split() for line in lines if line.startswith("from ")]
    if len(imports) != 1 or len(imports[0]) != 4 or imports[0][2] != "import":
        return None
    module, function = imports[0][1], imports[0][3]
    if not all(part.isidentifier() for part in module.split(".")) or not function.isidentifier():
        return None
    body = "\n".join(lines)
    if "if __name__ == " not in body or f"sys.exit({function}())" not in body:
        return None
    return module


#: The command line an ``-m`` module's name is read from in place of this interpreter's own, if not None: set by
#: ``run``'s question (:mod:`urandom_shim._hashseed`) to its program's, as that program's start will read it.
command_line: "list[str] | None" = None


def module_from_command_line() -> "str | None":
    """The ``-m`` module name. ``sys.argv[0]`` is ``'-m'`` while ``.pth`` files run; the name is in
    ``sys.orig_argv`` (3.10+) or, before that, in ``/proc/self/cmdline`` (None without ``/proc``)."""
    argv = command_line
    if argv is None:
        argv = [str(arg) for arg in getattr(sys, "orig_argv", None) or []]
    if not argv and command_line is None:
        try:
            with open("/proc/self/cmdline", "rb") as handle:
                argv = from_proc_command_line(handle.read())
        except OSError:
            return None
    kind, name = python_target(argv)
    return name if kind == "-m" else None


def from_proc_command_line(data: bytes) -> "list[str]":
    """The arguments in ``/proc/PID/cmdline``'s ``data``: each ends with a NUL, and an empty one (``-W ''``) is kept,
    as the interpreter reads it."""
    words = data.split(b"\0")
    if words and not words[-1]:
        words.pop()
    return [word.decode(errors="replace") for word in words]


def python_target(argv: "list[str]") -> "tuple[str, str | None]":
    """What an interpreter's command line runs: ``("-m", module)``, ``("-c", None)``, ``("script", path)``, or
    ``("-", None)`` for stdin and the REPL. ``argv[0]`` is the interpreter."""
    index = 1
    while index < len(argv):
        arg = argv[index]
        if arg == "--":
            index += 1
            break
        if arg == "-" or not arg.startswith("-"):
            break
        if arg.startswith("--"):  # a long option; only --check-hash-based-pycs takes a separate value
            index += 2 if arg == "--check-hash-based-pycs" else 1
            continue
        for position, flag in enumerate(arg[1:], start=1):  # a cluster such as -Im or -Wdefault
            rest = arg[position + 1 :]
            if flag == "m":
                return "-m", rest or (argv[index + 1] if index + 1 < len(argv) else None)
            if flag == "c":
                return "-c", None
            if flag in "XW":
                if not rest:
                    index += 1  # the option's value is the next argument
                break
        index += 1
    if index < len(argv) and argv[index] != "-":
        return "script", argv[index]
    return "-", None
