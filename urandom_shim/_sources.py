"""Configuration sources: finding and reading them, never failing.

Each reader returns a :class:`Layer`: the raw values it found (key -> value), a label that names the source (a
variable, or a file and table), and the problems it met (one message each). :mod:`urandom_shim._config` validates
the values and applies precedence; this module only knows where configuration lives and how to read it safely.

Files are capped at :data:`MAX_BYTES`, must be UTF-8 TOML, and are read by :mod:`urandom_shim._toml`, or by
``tomllib`` (3.11+) or ``tomli`` where it declines. A file that was found by discovery and is absent is simply not
there; the file named by ``URANDOM_SHIM_CONFIG`` must exist, because the user asked for it.

One piece, though over 500 lines: every unready start that looks for configuration uses all of it, and a second
module would cost each of them about 0.4 M instructions to import; what only ``-m`` and scripts need is apart, in
:mod:`urandom_shim._programs`.
"""

import os
import stat
import sys

from . import _messages
from ._state import state

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Mapping

MAX_BYTES = 1024 * 1024
TABLE = "tool.urandom-shim"
MACHINE_FILE = "/etc/urandom-shim.toml"
#: The environment's file, in its ``sys.prefix``.
ENVIRONMENT_FILE = "urandom-shim.toml"


def shorten(value: object, limit: int = 80) -> str:
    """``repr(value)``, cut to ``limit`` characters with an ellipsis, so that a huge value still makes one readable
    line. Never fails: an integer too long to print (Python 3.11+ refuses more than 4300 digits) or a value nested
    too deeply for ``repr`` is described instead."""
    if type(value) is int and value.bit_length() > 200:  # about 60 digits: describe it rather than print it
        try:
            digits = f"{len(str(abs(value)))}"
        except ValueError:  # more digits than Python 3.11+ converts to text
            digits = f"about {int(value.bit_length() * 0.30103) + 1}"
        return f"<a{' negative' if value < 0 else 'n'} integer of {digits} digits>"
    try:
        text = repr(value)
    except Exception:  # noqa: BLE001 - RecursionError, ValueError: anything repr() can raise
        text = f"<a {type(value).__name__} too large to show>"
    return clip(text, limit)


def toml_value(value: object, limit: int = 80) -> str:
    """``value`` as a TOML file spells it, for messages about files: ``true``, ``5``, ``'text'``, ``[1, 2]``;
    ``none`` for a setting without a value (a default ``timeout``). Never fails; cut to ``limit`` like
    :func:`shorten`."""
    try:
        if value is None:
            return "none"
        if value is True or value is False:
            return "true" if value else "false"
        if type(value) is float:
            return clip(f"{value:g}" if value == value else "nan", limit)
        if isinstance(value, list):
            items = [toml_value(item, limit) for item in value[:10]]
            return clip("[" + ", ".join(items) + (", …" if len(value) > 10 else "") + "]", limit)
        if isinstance(value, dict):
            pairs = [f"{key} = {toml_value(item, limit)}" for key, item in list(value.items())[:10]]
            return clip("{" + ", ".join(pairs) + (", …" if len(value) > 10 else "") + "}", limit)
    except Exception:  # noqa: BLE001 - RecursionError on a deeply nested value: describe it as shorten() does
        pass
    return shorten(value, limit)


def clip(text: str, limit: int) -> str:
    """``text``, cut to ``limit`` characters with an ellipsis."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


class Layer:
    """What one source said. ``values`` maps keys to raw (unvalidated) values."""

    __slots__ = ("label", "problems", "values")

    def __init__(self, label: str) -> None:
        self.label = label
        self.values: dict[str, object] = {}
        self.problems: list[str] = []


def _sibling(name: str) -> None:
    """Load the package's module ``name`` from its bytecode cache, as the unready start's other modules are
    (:func:`urandom_shim._load`), before ``from . import`` takes it: for the modules a start needs only sometimes.
    The package is reached through ``sys.modules``, where it always is by now, so that this module does not import
    the package it is part of."""
    package = sys.modules.get(__package__ or "")
    load = getattr(package, "_load", None)
    if load is not None and f"{__package__}.{name}" not in sys.modules:
        load((name,))


def _loads(text: str) -> "dict[str, Any]":
    _sibling("_toml")
    from . import _toml  # plain TOML without importing tomllib; None for anything else, which tomllib decides

    fast = _toml.loads(text)
    if fast is not None:
        return fast
    if sys.version_info >= (3, 11):
        import tomllib

        loaded: dict[str, Any] = tomllib.loads(text)
        return loaded
    import tomli  # type: ignore[import-not-found,unused-ignore]  # a dependency on Python < 3.11 only

    result: dict[str, Any] = tomli.loads(text)
    return result


def _check_regular(mode: int) -> None:
    import stat

    if stat.S_ISDIR(mode):
        raise IsADirectoryError(21, "Is a directory")
    if not stat.S_ISREG(mode):
        raise OSError(0, "not a regular file")


def read_capped(path: str) -> bytes:
    """Up to MAX_BYTES + 1 bytes of a *regular* file. A FIFO would block start-up until someone writes to it, and a
    device such as /dev/zero never ends, so the file is opened without blocking and checked before it is read."""
    _check_regular(os.stat(path).st_mode)  # before opening: opening a tty or a device can have side effects
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOCTTY", 0)
    fd = os.open(path, flags)
    try:
        _check_regular(os.fstat(fd).st_mode)  # and again, in case it was swapped in between
        chunks = []
        remaining = MAX_BYTES + 1
        while remaining > 0:
            chunk = os.read(fd, remaining)
            if not chunk:
                break
            chunks.append(chunk)
            remaining -= len(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


#: How a problem message ends when the file is ignored. A file that may hold a floor ends differently: it is read as
#: ``allow_weak = false`` (see :mod:`urandom_shim._config`).
IGNORED = "ignoring it."


def read_bytes(path: str, label: str, required: bool, ending: str = IGNORED) -> "tuple[bytes | None, str | None]":
    """(data, problem). ``data`` is None when the file is absent or unusable; ``problem`` says why, in one line."""
    try:
        return read_capped(path), None
    except (OSError, ValueError) as exc:
        return None, _unusable(exc, label, required, ending)


def _unusable(exc: "Exception", label: str, required: bool, ending: str) -> "str | None":
    """The one line about a file that can't be read; None for an absent file nobody asked for.

    For a file that may set a floor (``ending`` is not :data:`IGNORED`), only "no such file" is absent: a path
    through a file (``/etc/urandom-shim.toml/``, ENOTDIR) names something that exists and can't be read, which
    fails closed like any other unreadable floor file."""
    absent: tuple[type[OSError], ...] = (
        (FileNotFoundError,)
        if ending != IGNORED
        else (
            FileNotFoundError,
            NotADirectoryError,
        )
    )
    if isinstance(exc, absent):  # absent, or (where no floor is at stake) a path through a file: not there
        return f"{label}: the file does not exist; {ending}" if required else None
    if isinstance(exc, IsADirectoryError):
        return _messages.FILE_IS_A_DIRECTORY.format(label=label, ending=ending)
    if isinstance(exc, PermissionError):
        return _messages.FILE_PERMISSION_DENIED.format(label=label, ending=ending)
    # A symlink loop (ELOOP), a FIFO or device, a name too long, an I/O error; or ValueError for a name with a NUL.
    reason = getattr(exc, "strerror", None) or exc
    return f"{label}: cannot be read ({reason}); {ending}"


def check_file(path: str, label: str) -> "str | None":
    """The problem ``read_bytes`` would report for a named file, found without opening it (one ``stat``): what the
    ready path checks of ``URANDOM_SHIM_CONFIG``."""
    try:
        _check_regular(os.stat(path).st_mode)
    except Exception as exc:  # noqa: BLE001 - every OSError, and ValueError for a name Python refuses
        return _unusable(exc, label, True, IGNORED)
    return None


def _too_big(data: bytes, label: str, ending: str) -> "str | None":
    if len(data) > MAX_BYTES:
        return _messages.FILE_TOO_LARGE.format(label=label, kib=MAX_BYTES // 1024, ending=ending)
    return None


def read_toml(
    path: str, label: str, required: bool, ending: str = IGNORED
) -> "tuple[dict[str, Any] | None, str | None]":
    """(document, problem). ``document`` is None when the file is absent or unusable; ``problem`` says why."""
    data, problem = read_bytes(path, label, required, ending)
    if data is None:
        return None, problem
    problem = _too_big(data, label, ending)
    return (None, problem) if problem else parse_toml(data, label, ending)


def parse_toml(data: bytes, label: str, ending: str = IGNORED) -> "tuple[dict[str, Any] | None, str | None]":
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return None, _messages.FILE_NOT_UTF8.format(label=label, start=exc.start, ending=ending)
    try:
        return _loads(text), None
    except ImportError:
        return None, _messages.TOMLI_MISSING.format(label=label, ending=ending)
    except Exception as exc:  # noqa: BLE001 - tomllib.TOMLDecodeError, and anything a broken parser raises
        return None, f"{label}: is not valid TOML ({clip(str(exc), 160)}); {ending}"


# -- where the files are ---------------------------------------------------------------------------------------------


def user_file(environ: "Mapping[str, str]", ignore_environment: bool) -> str:
    base = None if ignore_environment else environ.get("XDG_CONFIG_HOME")
    if not base:
        base = os.path.join(os.path.expanduser("~"), ".config")
    return os.path.join(base, "urandom-shim", "config.toml")


def environment_file() -> str:
    return os.path.join(sys.prefix, ENVIRONMENT_FILE)


def machine_file(environ: "Mapping[str, str]", ignore_environment: bool) -> str:
    """``/etc/urandom-shim.toml``, unless ``URANDOM_SHIM_MACHINE_CONFIG`` moves it (image builds, tests)."""
    moved = None if ignore_environment else environ.get("URANDOM_SHIM_MACHINE_CONFIG")
    return moved or MACHINE_FILE


_MISSING_ARGV: object = object()


class Invocation:
    """What started this interpreter, as it matters to configuration: where to look for a pyproject, and the program
    name that ``[[program]]`` rules match (a script's file name, or an ``-m`` module's name).

    ``rule`` says in words how ``anchor`` was chosen (``check`` prints it); ``package`` is the directory of the
    program's top-level package, where an installed app carries its own table
    (:data:`urandom_shim._programs.PACKAGE_FILE`), if the program is a package found on ``sys.path``."""

    __slots__ = ("anchor", "package", "problem", "program", "rule")

    def __init__(
        self,
        anchor: "str | None",
        program: "str | None",
        problem: "str | None" = None,
        rule: str = "the current directory",
        package: "str | None" = None,
    ) -> None:
        self.anchor = anchor
        self.program = program
        self.problem = problem
        self.rule = rule
        self.package = package


#: The names of the directories that installers put distributions in.
INSTALL_DIR_NAMES = ("site-packages", "dist-packages")


def installation_directory(directory: str) -> bool:
    """Whether ``directory`` is where an installer puts things, never a project: ``site-packages`` or
    ``dist-packages``, a venv (it holds ``pyvenv.cfg``), or this interpreter's ``sys.prefix``, ``sys.exec_prefix``,
    ``sys.base_prefix`` or ``sys.base_exec_prefix``. Never raises."""
    try:
        if os.path.basename(os.path.normpath(directory)) in INSTALL_DIR_NAMES:
            return True
        if os.path.isfile(os.path.join(directory, "pyvenv.cfg")):
            return True
        found = os.stat(directory)
        return (found.st_dev, found.st_ino) in _prefixes()
    except (OSError, ValueError):
        return False


_PREFIXES: "list[frozenset[tuple[int, int]]]" = []


def _prefixes() -> "frozenset[tuple[int, int]]":
    """This interpreter's prefixes, as (device, inode): worked out once per process (they never change), and
    compared by identity, so that no spelling or symlink matters and each directory of a walk costs one stat."""
    if not _PREFIXES:
        found = set()
        for prefix in {sys.prefix, sys.exec_prefix, sys.base_prefix, sys.base_exec_prefix}:
            try:
                info = os.stat(prefix)
            except (OSError, ValueError, TypeError):
                continue
            found.add((info.st_dev, info.st_ino))
        _PREFIXES.append(frozenset(found))
    return _PREFIXES[0]


def module_invocation(module: "str | None", cwd: "str | None", program: "str | None", how: str) -> "Invocation":
    """The invocation of ``python -m module``: walk up from the module's top-level package, found where Python will
    look for it (the current directory, then ``sys.path``); else from ``cwd``."""
    if module is None:
        return Invocation(cwd, program, rule=_messages.RULE_MODULE_NAME_UNKNOWN.format(how=how))
    # Under -P, -I or PYTHONSAFEPATH (3.11+) Python doesn't look in the current directory, and neither does this.
    safe = getattr(sys.flags, "safe_path", False)
    search = ([cwd] if cwd is not None and not safe else []) + list(sys.path)
    otherwise = _messages.RULE_MODULE_NOT_ON_PATH.format(module=module)
    return at_module(module, search, program, how, cwd, otherwise)


def at_module(
    module: str, search: "list[str]", program: "str | None", how: str, fallback: "str | None", otherwise: str
) -> "Invocation":
    """Walk up from ``module``'s top-level package found on ``search``, or where an editable install's import hook
    in one of its ``site-packages`` maps it; if it is in neither, from ``fallback``, with ``otherwise`` saying so in
    the rule."""
    from . import _programs

    anchor, package = _programs.find_module(module, search, installation_directory)
    if anchor is None:
        _sibling("_editables")
        from . import _editables

        editable = _editables.find_editable(module, search)  # an editable install's import hook (issue 36)
        if editable is not None:
            anchor, package, hook = editable
            rule = _messages.RULE_EDITABLE_HOOK.format(how=how, anchor=anchor, hook=hook)
            return Invocation(anchor, program, rule=rule, package=package)
        return Invocation(fallback, program, rule=f"{how}: {otherwise}")
    return Invocation(anchor, program, rule=f"{how}: the module's package, {anchor}", package=package)


def command_invocation(command: "list[str]") -> "Invocation":
    """What configuration sees for a command that ``urandom-shim run`` starts: for an interpreter, the program it
    runs (a script, ``-m`` module, or ``-c``); for anything else (a shell script, a console-script launcher), the
    command itself, by the same rules as a script."""
    name = os.path.basename(command[0])
    if not name.startswith(("python", "pypy")):
        return invocation([command[0]])
    from . import _programs

    kind, target = _programs.python_target(command)
    if kind == "script" and target is not None:
        return invocation([target])
    try:
        cwd: str | None = os.getcwd()
    except OSError:
        cwd = None
    return Invocation(cwd, target if kind == "-m" else None)


def set_project_root(directory: "str | None", rule: str = "") -> None:
    """Make ``directory`` the project of this process (None: back to the rules of :func:`invocation`). The pytest
    plugin sets it for the run: the project under test is pytest's own rootdir, however pytest was started
    (``pytest``, ``python -m pytest``, from a subdirectory), not where the pytest module lives."""
    state.project_root = None if directory is None else (directory, rule)


def project_root() -> "tuple[str, str] | None":
    """The project :func:`set_project_root` made this process's, with its rule; None if none."""
    return state.project_root


def invocation(argv: object = None) -> "Invocation":
    """Work out the anchor directory and program name from ``sys.argv`` (or ``argv``), whatever shape it has.

    Without ``argv``, uses what start-up recorded (``sys.argv`` and the current directory as they were while the
    ``.pth`` ran), so that configuration read later still sees how the interpreter was started; and, under the
    pytest plugin, pytest's rootdir as the project."""
    found = _invocation(argv)
    if argv is None and state.project_root is not None:
        directory, rule = state.project_root
        return Invocation(directory, found.program, found.problem, rule)
    return found


def _invocation(argv: object = None) -> "Invocation":
    gone = _messages.CWD_GONE
    cwd: str | None = None
    recorded = getattr(sys, "_urandom_shim_invocation", None) if argv is None else None
    if isinstance(recorded, tuple) and len(recorded) == 2:
        argv, cwd = recorded
        argv = _MISSING_ARGV if argv is None else argv
        if not isinstance(cwd, str):
            return Invocation(None, None, gone)
    else:
        if argv is None:
            argv = getattr(sys, "argv", _MISSING_ARGV)
        try:
            cwd = os.getcwd()
        except OSError:
            return Invocation(None, None, gone)
    if argv is _MISSING_ARGV:
        argv = None
    if not isinstance(argv, list) or not argv:
        what = "missing" if argv is None else ("empty" if argv == [] else f"not a list ({type(argv).__name__})")
        return Invocation(cwd, None, _messages.ARGV_NOT_A_LIST.format(what=what))
    first = argv[0]
    if not isinstance(first, str):
        return Invocation(cwd, None, _messages.ARGV0_NOT_A_STRING.format(first=first, cwd=cwd))
    if first == "-m":
        _sibling("_programs")
        from . import _programs

        module = _programs.module_from_command_line()
        return module_invocation(module, cwd, module, f"-m {module}")
    if first in ("", "-", "-c"):
        return Invocation(cwd, None, rule=_messages.RULE_C_STDIN_REPL)
    given = os.path.join(cwd, first)
    program = os.path.basename(os.path.normpath(given))  # a symlink's own name is what [[program]] rules match
    script = os.path.realpath(given)  # ... but Python runs the target, from the target's directory
    if not os.path.exists(script) and os.path.exists(given):
        script = given  # a magic link such as /dev/stdin, whose target (pipe:[…]) is not a path
    if os.path.isdir(script):  # a directory run as a program (python app/)
        return Invocation(script, program, rule=_messages.RULE_DIRECTORY)
    if not os.path.exists(script):
        return Invocation(
            os.path.dirname(script),
            program,
            _messages.ARGV0_MISSING.format(first=first, dirname=os.path.dirname(script)),
            rule=_messages.RULE_SCRIPT,
        )
    _sibling("_programs")
    from . import _programs

    target = _programs.launcher_target(script)
    if target is not None:
        how = f"console script {program}, which runs {target}"
        otherwise = _messages.RULE_LAUNCHER_TARGET_NOT_ON_PATH.format(target=target)
        return at_module(target, list(sys.path), program, how, os.path.dirname(script), otherwise)
    kind = "a zipapp" if script.endswith((".pyz", ".zip")) else "a script"
    return Invocation(os.path.dirname(script), program, rule=f"{kind}: the directory holding it")


def find_pyproject(anchor: str) -> "tuple[str | None, str | None]":
    """(path, problem): the first ``pyproject.toml`` walking up from ``anchor``. The walk stops at the first
    installation directory (:func:`installation_directory`), which it neither reads nor passes: a
    ``pyproject.toml`` that some distribution put in ``site-packages`` is nobody's project."""
    directory = anchor
    while True:
        if installation_directory(directory):
            return None, None
        candidate = os.path.join(directory, "pyproject.toml")
        try:
            found = os.stat(candidate)
        except (FileNotFoundError, NotADirectoryError):
            pass
        except PermissionError:
            return (
                None,
                _messages.PROJECT_SEARCH_DENIED.format(directory=directory),
            )
        except OSError as exc:  # a symlink loop, an I/O error: the nearest pyproject exists but is unusable
            return None, _messages.PYPROJECT_UNREADABLE.format(candidate=candidate, reason=exc.strerror or exc)
        else:
            distrust = _untrusted(found, candidate) or _untrusted_directory(directory)
            return (None, distrust) if distrust else (candidate, None)
        parent = os.path.dirname(directory)
        if parent == directory:
            return None, None
        directory = parent


def _untrusted(found: "os.stat_result", path: str) -> "str | None":
    """The problem with a project file or directory another user controls (not root, not this process's user): a
    ``pyproject.toml`` planted above a root program's script in ``/tmp`` must not choose its policy."""
    if found.st_uid in (0, os.geteuid()):
        return None
    return _messages.PROJECT_NOT_OWNED.format(path=path, uid=found.st_uid)


def _untrusted_directory(directory: str) -> "str | None":
    """The problem with the directory of a project file that others could replace: owned by another user, or
    writable by everyone without the sticky bit (with it, as in /tmp, only a file's owner may replace it)."""
    try:
        found = os.stat(directory)
    except (OSError, ValueError):
        return None
    if found.st_mode & stat.S_IWOTH and not found.st_mode & stat.S_ISVTX:
        return _messages.PROJECT_DIRECTORY_SHARED.format(path=directory)
    return _untrusted(found, directory)


def mentions_our_table(data: bytes) -> bool:
    """Whether a pyproject may hold ``[tool.urandom-shim]``, in any TOML spelling, without parsing it.

    TOML can spell the table many ways (``[tool.urandom-shim]``, ``[tool . "urandom-shim"]``, dotted keys under
    ``[tool]``, inline tables), but every spelling holds the bytes ``urandom-shim``, except a quoted key that spells
    a character with an escape (``"urandom\\u002dshim"``): so those bytes, or any escape that can make a letter,
    mean "parse it". Only the unready path reads a pyproject at all."""
    return b"urandom-shim" in data or b"\\u" in data or b"\\U" in data or b"\\x" in data


#: Spellings close enough to ``urandom-shim`` to be a mistake for it, once lower-cased and stripped of ``-``, ``_``
#: and ``.``: ``[tool.urandom_shim]``, ``[tool.urandomshim]``, ``[tool.urandom-shims]``, ``[tool.Urandom-Shim]``.
NEAR_MISSES = ("urandomshim", "urandomshims", "urandomshimconfig")


def may_hold_near_miss(data: bytes) -> bool:
    """Whether a pyproject without our exact table name may hold a near miss of it (cheap, before any parse)."""
    lowered = data.lower()
    return b"urandom" in lowered and b"shim" in lowered


def near_miss(document: "Mapping[str, object]") -> "str | None":
    """The ``[tool.…]`` name in ``document`` that looks like a misspelling of ours, if any."""
    tool = document.get("tool")
    if not isinstance(tool, dict):
        return None
    for key in tool:
        if key == "urandom-shim" or not isinstance(key, str):
            continue
        squashed = "".join(ch for ch in key.lower() if ch not in "-_. ")
        if squashed in NEAR_MISSES:
            return key
    return None


def read_pyproject(path: str) -> "Layer | None":
    """The ``[tool.urandom-shim]`` table, or None when the pyproject has none. A pyproject without our name in it
    is not parsed at all."""
    label = f"{path} [{TABLE}]"
    layer = Layer(label)
    data, problem = read_bytes(path, label, required=False)
    if data is None:
        layer.problems.extend([problem] if problem else [])
        return layer if problem else None
    if not mentions_our_table(data) and not may_hold_near_miss(data):
        return None  # not ours: no TOML parse
    problem = _too_big(data, label, IGNORED)
    document = None
    if problem is None:
        document = _our_tables_only(data)
        if document is None:
            document, problem = parse_toml(data, label)
    if problem is not None:
        layer.problems.append(problem)
        return layer
    assert document is not None
    table = document.get("tool", {}).get("urandom-shim") if isinstance(document.get("tool"), dict) else None
    if table is None:
        missed = near_miss(document)
        if missed is None:
            return None
        layer.problems.append(_messages.NEAR_MISS_TABLE.format(path=path, missed=missed))
        return layer
    if not isinstance(table, dict):
        layer.problems.append(
            _messages.TABLE_NOT_A_TABLE.format(label=label, name=type(table).__name__, table=shorten(table))
        )
        return layer
    layer.values = dict(table)
    return layer


def _our_tables_only(data: bytes) -> "dict[str, Any] | None":
    """The document of our tables alone, read out of the pyproject's text without its other tools' tables, when
    :func:`_toml.our_tables` is certain of them and the fast reader of the result (an empty one when the text
    certainly holds neither our table nor a near miss); None otherwise (the whole document is read then). A 7.6 KB
    pyproject cost an unready start about 4 M instructions read in full, and about 0.3 M this way (issue 30)."""
    _sibling("_toml")
    from . import _toml

    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    ours = _toml.our_tables(text)
    if ours == "" and _toml.no_table_of_ours(text):
        return {}  # certainly neither our table nor a near miss of its name: nothing to read
    return _toml.loads(ours) if ours else None  # else the whole document, which may hold a near miss


def read_file(path: str, label: str, required: bool, ending: str = IGNORED) -> "Layer | None":
    """A standalone configuration file: keys at the top level. ``ending`` ends the message about an unusable one."""
    layer = Layer(label)
    document, problem = read_toml(path, label, required, ending)
    if problem is not None:
        layer.problems.append(problem)
        return layer
    if document is None:
        return None
    layer.values = document
    return layer
