"""``check --for PROGRAM``: who to resolve configuration for, as the program would start (a script, ``-m MODULE``,
a console script or other command, a module name, or ``python -c`` here).
"""

from __future__ import annotations

import os
import shutil
import sys

from .. import _messages, _programs, _sources


class NotAProgram(ValueError):
    """``check --for`` names something that is neither a script, a command on ``PATH``, nor a module name."""


class NoSuchProgram(NotAProgram):
    """``check --for`` names something that could be a command or a module, but no such command or module exists:
    a typo, or an app that is not installed in this environment."""


def _cwd() -> str | None:
    try:
        return os.getcwd()
    except OSError:
        return None


def program(target: str | None) -> tuple[_sources.Invocation, str]:
    """Who to resolve for: a script path, ``-m NAME`` (a module, explicitly), a console script or other command on
    ``PATH``, a module name, or (None) ``python -c`` in the current directory."""
    cwd = _cwd()
    if target is None:
        return _sources.Invocation(cwd, None, rule="-c: the current directory"), "python -c" + (
            f" in {cwd}" if cwd else ""
        )
    explicit_module = target.startswith("-m")
    name = target[2:].strip() if explicit_module else target
    is_module_name = bool(name) and all(part.isidentifier() for part in name.split("."))
    in_cwd = f" in {cwd}" if cwd else ""
    if explicit_module:
        if not is_module_name:
            raise NotAProgram(_messages.CHECK_FOR_NOT_A_MODULE.format(target=repr(target)))
        if not module_exists(name, cwd):
            raise NoSuchProgram(_messages.CHECK_NO_SUCH_MODULE.format(module=name))
        return _sources.module_invocation(name, cwd, name, f"-m {name}"), f"python -m {name}{in_cwd}"
    if os.sep in target or target.endswith((".py", ".pyz")) or os.path.isfile(target):
        return _sources.invocation([target]), f"python {target}"
    command = shutil.which(target) or beside_this_command(target)
    if command is not None:  # a console script or other program on PATH, as the shell would find it
        where = "on PATH" if shutil.which(target) == command else "beside urandom-shim"
        return _sources.invocation([command]), f"{target} (found {where}: {command})"
    if is_module_name:  # a package directory here is still a module name: `python -m` is what runs it
        if not module_exists(name, cwd) and not os.path.isdir(target):
            raise NoSuchProgram(_messages.CHECK_NO_SUCH_PROGRAM.format(target=target, bin=_own_bin() or "its bin"))
        return _sources.module_invocation(name, cwd, name, f"-m {name}"), f"python -m {name}{in_cwd}"
    if os.path.isdir(target):
        return _sources.invocation([target]), f"python {target}"
    if not target.startswith("-") and target.isprintable() and not any(c.isspace() for c in target):
        # A command's name (console scripts have hyphens: tok-cli) that nothing here has: a typo, or not installed.
        raise NoSuchProgram(_messages.CHECK_NO_SUCH_PROGRAM.format(target=target, bin=_own_bin() or "its bin"))
    raise NotAProgram(_messages.CHECK_FOR_NOT_A_PROGRAM.format(target=repr(target)))


def _own_bin() -> str | None:
    """The directory of the ``urandom-shim`` that is running: a venv's ``bin``, where its console scripts are."""
    for candidate in (sys.argv[0] if sys.argv else "", sys.executable or ""):
        if candidate and os.path.basename(candidate).startswith(("urandom-shim", "python")):
            directory = os.path.dirname(os.path.abspath(candidate))
            if os.path.isdir(directory):
                return directory
    return None


def beside_this_command(name: str) -> str | None:
    """A console script ``name`` in the directory of the running ``urandom-shim`` (its venv's ``bin``), which need
    not be on ``PATH``: ``/opt/app/venv/bin/urandom-shim check --for tok-cli`` means that venv's ``tok-cli``."""
    directory = _own_bin()
    if directory is None or os.sep in name:
        return None
    candidate = os.path.join(directory, name)
    return candidate if os.path.isfile(candidate) and os.access(candidate, os.X_OK) else None


def module_exists(name: str, cwd: str | None) -> bool:
    """Whether ``python -m name`` would find the top-level package of ``name``: in the current directory, or where
    this interpreter's import system looks (``sys.path``, zips, an editable install's import hook). Nothing is
    imported: only the top-level name is looked up."""
    import importlib.machinery
    import importlib.util

    top = name.split(".")[0]
    if cwd is not None and importlib.machinery.PathFinder.find_spec(top, [cwd]) is not None:
        return True
    if _programs.find_module(name, list(sys.path), _sources.installation_directory)[0] is not None:
        return True
    try:
        return importlib.util.find_spec(top) is not None
    except (ImportError, ValueError):
        return False
