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
    any (:func:`package_directory`); for a single-file module, the anchor is the directory holding it. (None, None)
    when it is not found there: a zip, an import hook (some editable installs), or not installed."""
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
    return None, None


#: The largest RECORD read: a large distribution's is a few hundred kilobytes.
RECORD_MAX = 4 * 1024 * 1024


def _record_of(entry: str, relative: str) -> "set[str] | None":
    """The files of the distribution installed in ``entry`` whose RECORD lists ``relative``, or None."""
    try:
        names = [name for name in os.listdir(entry) if name.endswith(".dist-info")]
    except (OSError, ValueError):
        return None
    for name in sorted(names):
        try:
            with open(os.path.join(entry, name, "RECORD"), "rb") as handle:
                data = handle.read(RECORD_MAX)
        except (OSError, ValueError):
            continue
        files = set()
        for line in data.decode("utf-8", "replace").splitlines():
            path = line.rsplit(",", 2)[0] if line.count(",") >= 2 else line
            files.add(path.strip('"').replace(os.sep, "/"))
        if relative in files:
            return files
    return None


def _is_namespace(directory: str) -> bool:
    """Whether ``directory`` is a namespace package of the pkgutil or pkg_resources kind, which several
    distributions share."""
    try:
        with open(os.path.join(directory, "__init__.py"), "rb") as handle:
            text = handle.read(64 * 1024)
    except OSError:
        return False
    return b"extend_path" in text or b"declare_namespace" in text


def package_directory(module: str, entry: str, installed: "Callable[[str], bool]") -> "str | None":
    """The directory whose package file (:data:`PACKAGE_FILE`) applies to ``module``, found in the ``sys.path``
    directory ``entry``: the nearest one of the module's packages (deepest first) that holds the file and belongs to
    the same distribution as the module. In an installation directory, the distribution is the one whose RECORD
    lists the file, and it must also ship the module itself: a namespace package (``ns``) is shared, and a file
    that another distribution put there is not this program's. A file no RECORD lists applies only outside a
    namespace package. Outside an installation directory (a checkout on ``sys.path``), the file applies."""
    parts = module.split(".")
    in_installation = installed(entry)
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
        files = _record_of(entry, "/".join([*parts[:depth], PACKAGE_FILE]))
        if files is None:
            if not _is_namespace(directory):
                return os.path.realpath(directory)
            continue
        own = "/".join(parts)
        if any(path == own + ".py" or path.startswith(own + "/") for path in files):
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


def module_from_command_line() -> "str | None":
    """The ``-m`` module name. ``sys.argv[0]`` is ``'-m'`` while ``.pth`` files run; the name is in
    ``sys.orig_argv`` (3.10+) or, before that, in ``/proc/self/cmdline``."""
    argv: list[str] = [str(arg) for arg in getattr(sys, "orig_argv", None) or []]
    if not argv:
        try:
            with open("/proc/self/cmdline", "rb") as handle:
                argv = [a.decode(errors="replace") for a in handle.read().split(b"\0") if a]
        except OSError:
            return None
    kind, name = python_target(argv)
    return name if kind == "-m" else None


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
