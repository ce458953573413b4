"""The interpreter that ``run`` starts, as that interpreter will see itself: its Python version, its environment
(``sys.prefix``) and the ``sys.path`` its shim will look for the program's module on, worked out before it starts,
so that the hash seed (:func:`urandom_shim.cli.launch.start_without_waiting`) is decided from the configuration that
interpreter will resolve, not from this process's.

A venv says it all in files: its ``pyvenv.cfg`` (the version, the base interpreter's directory, whether the
system's site-packages are seen) and its own ``site-packages``. For anything else (an interpreter outside a venv, a
venv that sees the system's site-packages, a ``PYTHONHOME``), the interpreter is asked, with ``-S`` and a fixed hash
seed: that start reads nothing from the kernel, runs no ``site`` and no ``.pth``, so no configuration either. What
neither way can tell is a reason (a string), and the caller gives no seed: no seed means the start may wait for the
kernel, a wrong one means weak hashing under a policy that forbids it.
"""

from __future__ import annotations

import os

from .. import _hashseed, _messages, _programs, _sources

#: How long ``run`` waits for an interpreter to describe itself (it starts without reading anything).
ASK_TIMEOUT = 10.0
#: What the interpreter runs to describe itself, with ``-S``: never imported.
DESCRIBE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_describe.py")
#: The ``.pth`` file of urandom-shim: the shim starts when ``site`` reaches it, with the entries added so far.
OUR_PTH = "urandom_shim.pth"


class Target:
    """An interpreter about to start: ``version`` (major, minor), ``prefix`` (its ``sys.prefix``), ``path`` (the
    ``sys.path`` its shim starts with, in order) and ``has_shim`` (urandom-shim is installed in its environment)."""

    __slots__ = ("has_shim", "path", "prefix", "version")

    def __init__(self, version: tuple[int, int], prefix: str, path: list[str], has_shim: bool) -> None:
        self.version = version
        self.prefix = prefix
        self.path = path
        self.has_shim = has_shim


def _version(text: str | None) -> tuple[int, int] | None:
    """(major, minor) from ``3.11.7``, ``3.11.7.final.0`` or ``3.13``; None for anything else."""
    parts = (text or "").strip().split(".")
    if len(parts) < 2 or not parts[0].isdigit() or not parts[1].isdigit():
        return None
    return int(parts[0]), int(parts[1])


def _venv(interpreter: str) -> tuple[str, dict[str, str]] | None:
    """(its ``sys.prefix``, its ``pyvenv.cfg``) for an interpreter of a venv, by ``site``'s own rule: a
    ``pyvenv.cfg`` beside the executable or one directory up makes that directory's parent the prefix."""
    here = os.path.dirname(os.path.abspath(interpreter))
    up = os.path.dirname(here)
    for directory in (here, up):
        try:
            with open(os.path.join(directory, "pyvenv.cfg"), encoding="utf-8") as handle:
                text = handle.read(64 * 1024)
        except (OSError, ValueError):
            continue
        values = {}
        for line in text.splitlines():
            key, equals, value = line.partition("=")
            if equals:
                values[key.strip().lower()] = value.strip()
        return up, values
    return None


def _pythonpath(env: dict[str, str]) -> list[str]:
    """The entries of ``PYTHONPATH``, as the interpreter puts them first on ``sys.path`` (``run``'s bootstrap among
    them: it holds nothing but ``sitecustomize.py``)."""
    return [os.path.abspath(p) for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]


def _site_entries(directory: str) -> tuple[list[str], bool]:
    """(the site directory and the directories its ``.pth`` files add, in ``site``'s order; whether our ``.pth`` is
    there). Only the ``.pth`` files before ours: the shim starts when ``site`` reaches it. Import lines (an import
    hook of an editable install) add nothing here: a module only they find is not found."""
    entries = [directory]
    try:
        names = sorted(name for name in os.listdir(directory) if name.endswith(".pth") and not name.startswith("."))
    except (OSError, ValueError):
        return entries, False
    for name in names:
        if name == OUR_PTH:
            return entries, True
        try:
            with open(os.path.join(directory, name), "rb") as handle:
                lines = handle.read(64 * 1024).decode("utf-8", "replace").splitlines()
        except (OSError, ValueError):
            continue
        for line in lines:
            if not line.strip() or line.startswith(("#", "import ", "import\t")):
                continue
            added = os.path.abspath(os.path.join(directory, line.rstrip()))
            if added not in entries and os.path.exists(added):
                entries.append(added)
    return entries, False


def _with_sites(path: list[str], sites: list[str]) -> tuple[list[str], bool]:
    has_shim = False
    for site in sites:
        entries, ours = _site_entries(site)
        path += [entry for entry in entries if entry not in path]
        has_shim = has_shim or ours
        if ours:
            break  # what comes after is added once the shim has started
    return path, has_shim


def _from_files(prefix: str, config: dict[str, str], env: dict[str, str]) -> Target | str | None:
    """A venv that sees only its own site-packages, from its files; None if it needs asking."""
    if config.get("include-system-site-packages", "false").lower() == "true" or env.get("PYTHONHOME"):
        return None
    version = _version(config.get("version_info") or config.get("version"))
    home = config.get("home")
    if version is None or not home:
        return None
    if version < (3, 8):
        return Target(version, prefix, [], False)
    x_y = f"{version[0]}.{version[1]}"
    base = os.path.dirname(home.rstrip(os.sep)) if os.path.basename(home.rstrip(os.sep)) == "bin" else None
    stdlib = base and os.path.join(base, "lib", f"python{x_y}")
    if stdlib is None or not os.path.isfile(os.path.join(stdlib, "os.py")):
        return None  # a layout of its own: the interpreter knows where its library is
    sites = [os.path.join(prefix, "lib", f"python{x_y}{t}", "site-packages") for t in ("", "t")]
    sites = [site for site in sites if os.path.isdir(site)]
    if len(sites) != 1:
        return None  # none, or a free-threaded build beside a default one: which is this?
    path = [*_pythonpath(env), stdlib, os.path.join(stdlib, "lib-dynload")]
    return Target(version, prefix, *_with_sites(path, sites))


def _ask(interpreter: str, env: dict[str, str], venv_prefix: str | None) -> Target | str:
    import subprocess

    try:
        result = subprocess.run(
            [interpreter, "-S", DESCRIBE],
            env={**env, _hashseed.VARIABLE: "0"},
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=ASK_TIMEOUT,
        )
    except (OSError, ValueError, subprocess.SubprocessError) as exc:
        return _messages.RUN_TARGET_SILENT.format(reason=exc)
    fields = os.fsdecode(result.stdout).split("\0")
    version = _version(fields[0])
    if result.returncode != 0 or version is None or len(fields) < 2 or not os.path.isabs(fields[1]):
        return _messages.RUN_TARGET_SILENT.format(reason=f"exit status {result.returncode}")
    prefix = venv_prefix or fields[1]
    if version < (3, 8):
        return Target(version, prefix, [], False)
    path = [field[1:] for field in fields[2:] if field.startswith("P")]
    user = [field[1:] for field in fields[2:] if field.startswith("U")]
    sites = [field[1:] for field in fields[2:] if field.startswith("S")]
    if venv_prefix is not None:  # site.venv() puts the venv's own first, and the user's only beside the system's
        x_y = f"{version[0]}.{version[1]}"
        sites = [os.path.join(venv_prefix, "lib", f"python{x_y}", "site-packages"), *sites]
    return Target(version, prefix, *_with_sites(path, [*user, *sites]))


def inspect(interpreter: str, env: dict[str, str]) -> Target | str:
    """The interpreter ``run`` is about to start with ``env``, or why it can't be known."""
    venv = _venv(interpreter)
    if venv is not None:
        found = _from_files(*venv, env)
        if found is not None:
            return found
    return _ask(interpreter, env, None if venv is None else venv[0])


def _safe_path(argv: list[str], env: dict[str, str], target: Target) -> bool:
    """Whether the command's interpreter leaves the current directory off ``sys.path`` (3.11+: ``-P``, ``-I``,
    or ``PYTHONSAFEPATH`` without ``-E``), as its ``-m`` then does. Options are read as
    :func:`urandom_shim._programs.python_target` reads them."""
    if target.version < (3, 11):
        return False
    flags = ""
    index = 1
    while index < len(argv):
        arg = argv[index]
        index += 1
        if arg in ("--", "-") or not arg.startswith("-"):
            break
        if arg.startswith("--"):
            index += 1 if arg == "--check-hash-based-pycs" else 0
            continue
        for position, flag in enumerate(arg[1:], start=1):
            if flag in "mc":
                index = len(argv)
                break
            if flag in "XW":  # its value is the rest of the cluster, or the next argument
                index += 0 if arg[position + 1 :] else 1
                break
            flags += flag
    return "P" in flags or "I" in flags or (bool(env.get("PYTHONSAFEPATH")) and "E" not in flags)


def invocation(target: Target, argv: list[str], env: dict[str, str] | None = None) -> _sources.Invocation | str:
    """What the shim of ``target`` will see as its program's invocation for the command line ``argv`` (the
    interpreter first), or why it can't be known: for ``-m``, the module's package on ``target``'s ``sys.path``;
    for a console-script launcher, its module there; for a script, its directory; for ``-c`` and stdin, the
    current directory. A module not found there is looked for where an editable install's import hook maps it
    (:mod:`urandom_shim._editables`); one behind any other import hook, or a path that a ``.pth`` import line adds,
    can't be known."""
    env = {} if env is None else env
    kind, name = _programs.python_target(argv)
    try:
        cwd: str | None = os.getcwd()
    except OSError:
        cwd = None
    if kind == "-m" and name is not None:
        first = [] if cwd is None or _safe_path(argv, env, target) else [cwd]
        module, program, search = name, name, first + target.path
        how = f"-m {module}"
    elif kind == "script" and name is not None:
        launched = _programs.launcher_target(os.path.realpath(name))
        if launched is None:
            return _sources.invocation([name])
        module, program, search = launched, os.path.basename(os.path.normpath(name)), target.path
        how = f"console script {program}, which runs {module}"
    else:
        return _sources.Invocation(cwd, None)
    anchor, package = _programs.find_module(module, search, _sources.installation_directory)
    if anchor is None:  # an editable install's import hook in the target's site-packages, as its shim will find it
        from .. import _editables

        editable = _editables.find_editable(module, search)
        if editable is None:
            return _messages.RUN_MODULE_NOT_FOUND.format(module=module, interpreter=argv[0])
        anchor, package, hook = editable
        rule = _messages.RULE_EDITABLE_HOOK.format(how=how, anchor=anchor, hook=hook)
        return _sources.Invocation(anchor, program, rule=rule, package=package)
    return _sources.Invocation(anchor, program, rule=f"{how}: the module's package, {anchor}", package=package)
