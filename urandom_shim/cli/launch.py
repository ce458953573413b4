"""Launching a command for ``run`` and ``simulate``: finding it as a shell would, the environment it gets (the
settings as variables, the bootstrap on ``PYTHONPATH``, a hash seed where its start must not wait), and the exec
that replaces this process with it.
"""

from __future__ import annotations

import os
import sys

from .. import _config, _hashseed, _messages, _policies, _readiness, _simulation, _sources
from . import facts

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Callable, NoReturn

PROG = "urandom-shim"
#: Where the bootstrap ``sitecustomize.py`` is: in the package, as a wheel ships it (pyproject.toml), and beside the
#: ``.pth`` for an editable install (hatch_build.py). ``sitecustomize.py`` keeps a copy, since it can't import the
#: package; tests/test_structure.py keeps all four equal.
BOOTSTRAP_DIRS = ("_bootstrap", "urandom_shim_bootstrap")
EXIT_NOT_EXECUTABLE = 126
EXIT_NOT_FOUND = 127

#: The directory of the package ``urandom_shim`` (this module is in its subpackage ``cli``).
PACKAGE_DIRECTORY = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
#: Replaced by tests: the in-process tests of ``run`` must not replace the test runner.
_exec: Callable[[str, list[str], dict[str, str]], NoReturn] = os.execve


def bootstrap_directory() -> str | None:
    """The directory holding the bootstrap ``sitecustomize.py``: in the package for a wheel, beside the ``.pth``
    for an editable install."""
    in_package, beside_pth = BOOTSTRAP_DIRS
    candidates = [os.path.join(PACKAGE_DIRECTORY, in_package)]
    candidates += [os.path.join(os.path.dirname(pth), beside_pth) for pth in facts.pth_locations()]
    for directory in candidates:
        if os.path.isfile(os.path.join(directory, "sitecustomize.py")):
            return directory
    return None


def home_directory() -> str:
    """The directory holding the ``urandom_shim`` package and ``_urandom_shim_boot``: what the bootstrap loads."""
    return os.path.dirname(PACKAGE_DIRECTORY)


def command_environment(settings: dict[str, str], simulate: str | None = None) -> dict[str, str]:
    """The environment ``run`` gives its command: the settings as variables, and the bootstrap on PYTHONPATH."""
    env = dict(os.environ)
    env.update(_config.variables(settings))
    if simulate is not None:
        env[_simulation.ENV] = simulate
    bootstrap = bootstrap_directory()
    if bootstrap is None:
        from .._messages import emit

        emit(_messages.RUN_NO_BOOTSTRAP)
    else:
        rest = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p and p != bootstrap]
        env["PYTHONPATH"] = os.pathsep.join([bootstrap, *rest])
        env["URANDOM_SHIM_HOME"] = home_directory()
    return env


def find_command(name: str, path: str | None) -> tuple[str | None, int, str]:
    """(path, 0, "") for an executable, else (None, 126 or 127, what a shell would say)."""
    if os.sep in name:
        candidates = [name]
    else:
        directories = (path if path is not None else os.defpath).split(os.pathsep)
        candidates = [os.path.join(d or os.curdir, name) for d in directories]
    not_executable = None
    for candidate in candidates:
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate, 0, ""
        if not_executable is None and os.path.exists(candidate):
            not_executable = candidate
    if not_executable is not None:
        what = "Is a directory" if os.path.isdir(not_executable) else "Permission denied"
        return None, EXIT_NOT_EXECUTABLE, f"{not_executable}: {what} (not an executable file)"
    if os.sep in name:
        return None, EXIT_NOT_FOUND, f"{name}: No such file or directory"
    return None, EXIT_NOT_FOUND, _messages.COMMAND_NOT_FOUND.format(name=name)


def launch(subcommand: str, command: list[str], env: dict[str, str]) -> int:
    disable = env.get("URANDOM_SHIM_DISABLE", "")
    if disable not in ("", "0"):
        from .._messages import emit

        emit(_messages.RUN_KILL_SWITCH.format(subcommand=subcommand, disable=disable, command=command[0]))
    executable, code, message = find_command(command[0], env.get("PATH"))
    if executable is None:
        sys.stderr.write(f"{PROG} {subcommand}: {message}\n")
        return code
    for stream in (sys.stdout, sys.stderr):
        if stream is not None:
            stream.flush()
    try:
        _exec(executable, command, env)
    except OSError as exc:
        import errno

        reason = exc.strerror or str(exc)
        if exc.errno == errno.ENOENT:  # the file exists, so it is the #! line's interpreter that does not
            reason = _messages.RUN_BAD_INTERPRETER.format(reason=reason)
        sys.stderr.write(f"{PROG} {subcommand}: {executable}: cannot execute: {reason}\n")
        return EXIT_NOT_EXECUTABLE
    return 0  # pragma: no cover - only a replaced _exec returns


def note_floor(subcommand: str, settings: dict[str, str]) -> None:
    """Say once, the day it is typed, that a weak setting will not apply because of a floor: the command itself only
    says so while the CRNG is not ready."""
    instead = {"policy": ("legacy", "pep524"), "on_timeout": ("fallback", "raise")}
    asked = [(key, weak, strong) for key, (weak, strong) in instead.items() if settings.get(key) == weak]
    if not asked:
        return
    found, _problems = _config.floor()
    if found is None:
        return
    from .._messages import emit

    given = " and ".join(f"--{key.replace('_', '-')} {weak}" for key, weak, _ in asked)
    used = " and ".join(f"{key} '{strong}'" for key, _, strong in asked)
    emit(_messages.RUN_BELOW_FLOOR.format(subcommand=subcommand, given=given, found=found, used=used))


#: The largest ``#!`` line read: the kernel itself reads at most 256 bytes of it.
SHEBANG_MAX = 256


def _is_python(path: str) -> bool:
    """Whether ``path`` is a Python interpreter itself: an executable file in ELF (not a shell script named python,
    such as pyenv's shims, which start a Python later) whose name says python or pypy."""
    name = os.path.basename(path)
    if not name.startswith(("python", "pypy")):
        return False
    try:
        with open(path, "rb") as handle:
            return handle.read(4) == b"\x7fELF"
    except (OSError, ValueError):
        return False


def python_command(command: list[str], env: dict[str, str]) -> tuple[str, list[str]] | None:
    """(the interpreter's file, its command line) for the Python interpreter that ``command`` starts at once, if it
    does: ``command`` itself when it names an interpreter (found in ``PATH`` as the exec will), or
    ``[interpreter, *options, script, *args]``, as the kernel passes them on, for a script whose ``#!`` line names
    one by its absolute path (a console script of a venv). None for anything else: ``env``, a shell, a shell
    script, a program that starts Python later. Only for such a command can ``run`` know, before it starts, which
    interpreter runs with the seed and what that interpreter's own configuration says."""
    executable, _code, _message = find_command(command[0], env.get("PATH"))
    if executable is None:
        return None
    if _is_python(executable):
        return executable, list(command)
    try:
        with open(executable, "rb") as handle:
            head = handle.read(SHEBANG_MAX)
    except (OSError, ValueError):
        return None
    if not head.startswith(b"#!"):
        return None
    words = head[2:].split(b"\n", 1)[0].split()
    if not words or len(words) > 2:  # the kernel passes at most one argument from the #! line
        return None
    interpreter = os.fsdecode(words[0])
    if not os.path.isabs(interpreter) or not _is_python(interpreter):
        return None  # `#!/usr/bin/env python3` and the like: a wrapper
    return interpreter, [interpreter, *(os.fsdecode(word) for word in words[1:]), executable, *command[1:]]


def starts_without_the_shim(options: list[str]) -> bool:
    """Whether an interpreter given the command line ``options`` (all after the interpreter) keeps a seed of ours in
    its environment for its children, whatever their policy and however late they start: ``-S``, ``-E`` or ``-I``
    among its options, as it reads them (:func:`.target.keeps_the_seed`)."""
    from . import target

    read = target.read_options(["python", *options])
    return not isinstance(read, str) and target.keeps_the_seed(read) is not None


def start_without_waiting(command: list[str], env: dict[str, str], subcommand: str = "run") -> bool:
    """Give ``command`` a hash seed (in ``env``) so that its interpreter's start never waits for the kernel, when the
    kernel's CRNG is unready and the program's own settings allow weak bytes: ``legacy``, or ``on_timeout =
    "fallback"`` after waiting out its ``timeout`` here. See :mod:`urandom_shim._hashseed`. True if it did.

    Never in report mode, never under a floor, never over a seed the caller set, and never on a ready kernel. Only
    when ``command`` starts a Python interpreter at once (:func:`python_command`): a wrapper (``env``, ``sh -c``, a
    shell script) may start any program, later, or none, so it gets no seed. The settings are the ones the program
    will resolve, asked of its own interpreter with its own options, environment and ``site``
    (:func:`.target.ask`), and only an interpreter whose shim answers gets a seed, since only that shim takes the seed
    out of its environment at once: never under the kill switch, ``-S``, ``-E`` or ``-I``, never to Python before
    3.8, and never where neither the bootstrap nor an installed shim starts. Where the answer can't be had, no seed,
    and one line says why. A seed of ours that this process inherited (a ``run`` inside a ``run``) is never passed
    on: it is taken out, and the decision made afresh for this command."""
    if _hashseed.is_ours(env):
        del env[_hashseed.VARIABLE], env[_hashseed.MARK]
    if _hashseed.VARIABLE in env or env.get("URANDOM_SHIM_DISABLE", "") not in ("", "0"):
        return False  # the caller's own seed; or no shim will start to take ours out (launch() says so)
    if _readiness.kernel_state() != _readiness.UNREADY:
        return False
    found = python_command(command, env)
    if found is None:
        return False
    executable, argv = found
    from . import target

    read = target.read_options(argv)
    if isinstance(read, str):
        return _no_seed(subcommand, command, env, read)
    if read.exits:
        return False  # it prints and exits before it reads a hash secret
    kept = target.keeps_the_seed(read)
    if kept is not None:
        return _no_seed(subcommand, command, env, kept)
    answer = target.ask(executable, argv, read, env)
    if answer is None:
        return False  # the CRNG is ready now
    if isinstance(answer, str):
        return _no_seed(subcommand, command, env, answer)
    if answer.reporting:  # report-only: the command behaves as native, whose start waits
        return False
    if answer.policy != _policies.LEGACY.name:
        if answer.policy == _policies.NATIVE.name or answer.on_timeout != "fallback" or answer.timeout is None:
            return False
        if _readiness.wait(answer.timeout):
            return False  # ready in time: the command gets a full-strength hash secret
    _hashseed.give(env)
    return True


def _no_seed(subcommand: str, command: list[str], env: dict[str, str], reason: str) -> bool:
    """No seed, where the command's own configuration can't be known: said in one line, unless the policy of the
    environment (``--policy``, ``URANDOM_POLICY``) already rules a seed out, whatever that configuration says."""
    if env.get(_config.KEYS["policy"].variable) not in ("native", "pep522"):
        from .._messages import emit

        typed = _sources.clip(" ".join(command), 80)
        emit(_messages.RUN_NO_SEED.format(subcommand=subcommand, command=typed, reason=reason))
    return False
