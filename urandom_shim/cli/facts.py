"""The facts ``status`` and ``check`` report, gathered into the dicts their ``--json`` prints. Rendering them as text
is :mod:`urandom_shim.cli.text`'s; the command line (:mod:`urandom_shim.cli.status`) only chooses between the two.
"""

from __future__ import annotations

import errno
import os
import shutil
import sys

from .. import __version__, _config, _messages, _policies, _programs, _readiness, _simulation, _sources
from .._state import state

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

RANDOM_DIR = "/proc/sys/kernel/random"


class NotAProgram(ValueError):
    """``check --for`` names something that is neither a script, a command on ``PATH``, nor a module name."""


class NoSuchProgram(NotAProgram):
    """``check --for`` names something that could be a command or a module, but no such command or module exists:
    a typo, or an app that is not installed in this environment."""


def read_int(path: str) -> int | None:
    try:
        with open(path, "rb") as handle:
            return int(handle.read(32).strip())
    except (OSError, ValueError):
        return None


def kernel_facts() -> dict[str, Any]:
    """The real kernel's CRNG state, its entropy estimate and its release. Never touches a simulation."""
    uname = getattr(os, "uname", None)
    return {
        "crng": _readiness.kernel_state(),
        "entropy_avail": read_int(os.path.join(RANDOM_DIR, "entropy_avail")),
        "poolsize": read_int(os.path.join(RANDOM_DIR, "poolsize")),
        "release": uname().release if uname is not None else None,
    }


#: What CPython 3.6 and later (every interpreter the shim supports) do on their own before the CRNG is initialised.
NATIVE_SEMANTICS = (
    "os.urandom() and SystemRandom block until the CRNG is initialised (PEP 524); secrets blocks the same way and has "
    "no wait_for_system_rng() of its own; seeding random never blocks and falls back to time and pid (bpo-32580)."
)

#: What PyPy (Debian's pypy3: 7.3.11 on Debian 12, newer in sid) does on its own: no os.getrandom, and an os.urandom
#: that reads /dev/urandom.
NATIVE_SEMANTICS_PYPY = (
    "os.urandom() and SystemRandom read /dev/urandom and never wait (PyPy does not implement PEP 524), so before the "
    "CRNG is initialised they may return predictable bytes; secrets does the same; there is no os.getrandom(); "
    "seeding random never blocks. Choose pep524 or pep522 for the guarantee CPython gives on its own."
)
#: What a PyPy interpreter's own start does while the CRNG is unready: it reads its hash secret without waiting.
RUN_START_PYPY = "reads its hash secret with a non-blocking getrandom(), so it never waits (PyPy's own start)"

#: What does not work on this interpreter, as status and check say it (docs/explanation/compatibility.md).
LIMIT_PYPY_OLD_KERNEL = (
    "PyPy has no os.getrandom(), and before Linux 5.6 /dev/random can't tell whether the CRNG is initialised, so on "
    "kernel {release} the CRNG counts as ready and no policy applies at early boot. Run the program with CPython, "
    "or on Linux 5.6 or later, for the policy to apply."
)
LIMIT_PYPY_NATIVE = (
    "Under policy 'native' PyPy's own os.urandom() never waits, unlike CPython's: choose pep524 to wait for the "
    "CRNG, or pep522 to refuse bytes until it is ready."
)

LIMIT_PYPY_EARLY_REFERENCES = (
    "A reference to os.urandom taken before the shim engaged (another .pth, a sitecustomize) and kept in a tuple "
    "other than a default argument, in a set or as a dict key, in a deque or a dict subclass (OrderedDict, "
    "defaultdict), in a bound method or a lazy iterator (map, itertools.repeat), in an attribute declared in "
    "__slots__, or in a "
    "local variable of a function still running, can't be replaced: a call through it gets PyPy's own os.urandom, "
    "which never waits (CPython's waits). Every other reference gets the policy. Keep such references in a module, "
    "a class, a list or a dict value instead."
)


def is_pypy() -> bool:
    return sys.implementation.name == "pypy"


def native_semantics() -> str:
    return NATIVE_SEMANTICS_PYPY if is_pypy() else NATIVE_SEMANTICS


def interpreter_limits(settings: _policies.Settings) -> list[str]:
    """What this interpreter can't do that the shim does on CPython: said by status and check, never silently off."""
    limits = []
    if getattr(os, "getrandom", None) is None and sys.platform == "linux" and not _readiness.dev_random_answers():
        uname = getattr(os, "uname", None)
        limits.append(LIMIT_PYPY_OLD_KERNEL.format(release=uname().release if uname is not None else "?"))
    if is_pypy() and settings.policy_value is _policies.NATIVE:
        limits.append(LIMIT_PYPY_NATIVE)
    if is_pypy():
        limits.append(LIMIT_PYPY_EARLY_REFERENCES)
    return limits


SITE_LABELS = {
    _policies.URANDOM: "os.urandom(), SystemRandom",
    _policies.SECRETS: "secrets functions",
    _policies.SEED_INSTANCE: "import random, random.seed()",
    _policies.SEED_NEW: "random.Random() seeding",
}


def describe_action(todo: str, site: str, settings: _policies.Settings) -> str:
    """One line: what a call site does under ``settings`` while the CRNG is unready."""
    seeding = site in (_policies.SEED_INSTANCE, _policies.SEED_NEW)
    if todo == _policies.UNTOUCHED:
        return "the interpreter's own code (see 'this Python on its own')"
    if todo == _policies.RAISE:
        return "raises BlockingIOError at once" + (" (seeding a Random instance)" if seeding else "")
    if todo == _policies.BEST_EFFORT:
        if seeding:
            return "seeded from best-effort kernel bytes; never blocks"
        return "returns best-effort bytes at once; they may be predictable"
    timeout = settings.timeout.value
    if timeout is None:
        return "waits until the CRNG is ready, however long that takes"
    after = "returns best-effort bytes" if settings.on_timeout.value == "fallback" else "raises BlockingIOError"
    return f"waits until the CRNG is ready, at most {timeout:g} s, then {after}"


#: What ``check`` and ``status`` say about a start under ``run`` while the CRNG is not ready.
RUN_START_SEED = "gets PYTHONHASHSEED from non-blocking kernel bytes, so it never waits"
RUN_START_FALLBACK = "waits at most {timeout:g} s for the CRNG, then gets PYTHONHASHSEED from non-blocking kernel bytes"
RUN_START_WRAPPED = (
    " (only an interpreter `run` starts itself, whose own files allow weak bytes; through env, sh -c, a shell "
    "script or another program: no seed, so it may wait)"
)
RUN_START_WAITS = "reads its hash secret from the kernel, which may wait (about 1 s on Linux 5.18+)"


def describe_run_start(settings: _policies.Settings) -> str:
    """What ``urandom-shim run`` does for a program's interpreter start while the kernel's CRNG is unready."""
    policy, timeout = settings.policy_value, settings.timeout.value
    wrapped = RUN_START_WRAPPED
    if policy is _policies.LEGACY:
        return RUN_START_SEED + wrapped
    if policy is not _policies.NATIVE and settings.on_timeout.value == "fallback" and timeout is not None:
        return RUN_START_FALLBACK.format(timeout=timeout) + wrapped
    return RUN_START_PYPY if is_pypy() else RUN_START_WAITS


def site_table(settings: _policies.Settings) -> list[dict[str, str]]:
    rows = []
    for site in _policies.SITES:
        todo = _policies.decide(settings, site)  # what the engine does: the floor and the fuse included
        rows.append(
            {"site": site, "label": SITE_LABELS[site], "action": todo, "says": describe_action(todo, site, settings)}
        )
    return rows


def simulation_facts(problems: list[str]) -> dict[str, Any] | None:
    spec = os.environ.get(_simulation.ENV)
    if not spec:  # empty counts as not set
        return None
    try:
        sim = _simulation.parse(spec)
    except _simulation.InvalidSimulation as exc:
        problems.append(_simulation.problem(spec, exc))
        return {"spec": spec, "valid": False, "unready": False}
    return {"spec": spec, "valid": True, "unready": sim.unready()}


def pth_locations() -> list[str]:
    import site

    directories = list(getattr(site, "getsitepackages", lambda: [])())
    user = getattr(site, "getusersitepackages", None)
    if user is not None and site.ENABLE_USER_SITE:
        directories.append(user())
    # The .pth first; the PEP 829 .start file, which starts the shim where .pth import lines are ignored, after it.
    return [os.path.join(d, name) for name in ("urandom_shim.pth", "urandom_shim_pep829.start") for d in directories]


def activation_facts() -> dict[str, Any]:
    """Whether the shim started in this interpreter, how, and if not, why not."""
    how = getattr(sys, "_urandom_shim_boot", None) or state.activated_by
    found = [path for path in pth_locations() if os.path.isfile(path)]
    # The file that started this interpreter's shim first: the .start file where the entry point did (3.18 on).
    if how == "start":
        found.sort(key=lambda path: not path.endswith(".start"))
    pth = found[0] if found else None
    reason = state.inactive_reason
    disable = os.environ.get("URANDOM_SHIM_DISABLE", "")
    if how is None and reason is None:
        if disable not in ("", "0"):
            reason = f"the kill switch is on: URANDOM_SHIM_DISABLE={disable!r} (unset it, or set it to 0)"
        elif sys.flags.no_site:
            reason = "Python runs with -S, which skips site-packages and the shim's .pth file with it"
        elif pth is None:
            reason = (
                "urandom_shim.pth is not in this interpreter's site-packages; install urandom-shim in this "
                "environment, or start programs with `urandom-shim run -- ...`"
            )
        else:
            reason = f"{pth} exists but did not run in this interpreter"
    engine = state.engine
    return {
        "active": how is not None and state.inactive_reason is None,
        "activated_by": how,
        "inactive_reason": reason,
        "pth": pth,
        "patched": engine is not None and engine.engaged,
        "package": os.path.dirname(os.path.dirname(os.path.abspath(__file__))),  # this is urandom_shim/cli/
    }


def status_facts() -> dict[str, Any]:
    """Everything ``status`` says, as one JSON-ready object."""
    problems: list[str] = []
    simulation = simulation_facts(problems)
    kernel = kernel_facts()
    activation = activation_facts()
    who, described = program(None)
    settings, config_problems = _config.resolve(who=who)
    problems.extend(config_problems)
    if not _config.environment_ignored():
        problems.extend(misspelt_variables(os.environ))
    if activation["inactive_reason"] and not activation["active"]:
        problems.append(_messages.NOT_ACTIVE.format(inactive_reason=activation["inactive_reason"]))
    simulated_unready = simulation is not None and simulation["unready"]
    crng = _readiness.UNREADY if simulated_unready else kernel["crng"]
    return {
        "version": __version__,
        "python": {
            "executable": sys.executable,
            "version": ".".join(str(part) for part in sys.version_info[:3]),
            "implementation": sys.implementation.name,
            "native": native_semantics(),
        },
        "limits": interpreter_limits(settings),
        **activation,
        "policy": settings.policy_value.name,
        "policy_source": settings.policy.source,
        "settings": {name: {"value": value, "source": source} for name, (value, source) in settings.as_dict().items()},
        "resolved_for": described,
        "sites": site_table(settings),
        "run_start": describe_run_start(settings),
        "crng": crng,
        "kernel": kernel,
        "simulation": simulation,
        "problems": problems,
    }


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
            raise NotAProgram(f"--for {target!r}: after -m comes a module name such as 'app.main'")
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
    raise NotAProgram(
        f"--for {target!r} is neither a script (a path that exists, or ends in .py), a command on PATH, nor a module "
        "name such as 'app.main' (write '-m app.main' to say it is one)"
    )


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


def wheel_without_settings(who: _sources.Invocation, settings: _policies.Settings) -> str | None:
    """What to do when the program is an installed package (in a ``site-packages`` or ``dist-packages``) with no
    package file, and no source but the default set its policy: a ``[tool.urandom-shim]`` table in the app's
    ``pyproject.toml`` does not travel in its wheel."""
    # The directory whose package file applies; with none that applies, the module's own top-level package.
    package = who.package
    if package is None and who.anchor is not None and os.path.isfile(os.path.join(who.anchor, "__init__.py")):
        package = who.anchor
    if package is None or "-packages" not in package or settings.policy.source != "default":
        return None
    if os.path.exists(os.path.join(package, _programs.PACKAGE_FILE)):
        return None  # there is one: package_file_not_the_programs says why it doesn't apply
    return _messages.CHECK_WHEEL_WITHOUT_PACKAGE_FILE.format(
        package=package, file=os.path.join(package, _programs.PACKAGE_FILE), name=_programs.PACKAGE_FILE
    )


def package_file_not_the_programs(who: _sources.Invocation) -> str | None:
    """Why a package file in the program's installed package doesn't apply to it, when one is there and doesn't:
    it is not in the RECORD of the distribution that ships the program's module (copied there by hand, or another
    distribution's), or it is in a namespace package that another distribution's RECORD claims. Without this the
    file is ignored without a word (newcomer review of issue 37)."""
    anchor = who.anchor
    if who.package is not None or anchor is None or "-packages" not in anchor:
        return None
    found = os.path.join(anchor, _programs.PACKAGE_FILE)
    if not os.path.isfile(found):
        return None
    return _messages.CHECK_PACKAGE_FILE_NOT_THE_PROGRAMS.format(file=found, program=who.program or "this program")


def events_file_state(path: str | None) -> str | None:
    """Whether this user's programs can append events to ``path``, in words; None when no events file is set. The
    shim itself never says (a failed write is silent), so ``check`` does."""
    if not path:
        return None
    directory = os.path.dirname(path) or "/"
    try:
        found = os.lstat(path)
    except FileNotFoundError:
        if not os.path.isdir(directory):
            return (
                f"not written: its directory {directory} does not exist (the shim never creates it; create it at "
                "boot with systemd-tmpfiles, see docs/reference/events.md)"
            )
        if not os.access(directory, os.W_OK | os.X_OK):
            return f"not written by this user: it can't create files in {directory}"
        return "created by the first event (mode 600)"
    except OSError as exc:
        return f"not written: {exc.strerror or exc}"
    if found.st_mode & 0o170000 != 0o100000:
        return "not written: it is not a regular file (a symlink, a FIFO or a directory is never written to)"
    if not os.access(path, os.W_OK):
        return "not written by this user: it may not write the file (its events are lost)"
    return "appended to"


#: ``URANDOM_SHIM_*`` variables that ``urandom-shim`` sets for itself (or the tests, for their own runs): never a
#: user's misspelling of one in :data:`VARIABLES`.
OWN_VARIABLES = (_config.ENV_GIVEN_AS, _config.ENV_LAUNCHER, "URANDOM_SHIM_HOME", "URANDOM_SHIM_CALLER_HASHSEED")


def misspelt_variables(environ: Mapping[str, str]) -> list[str]:
    """One line per ``URANDOM_*`` variable that the shim doesn't read but that is a typo or two from one it does
    (``TIMOUT`` for ``TIMEOUT``): what ``check`` and ``status`` report. No start looks: the ready path looks up the
    names it knows, and scanning every variable cost an unready start 0.1 M instructions, more than 3.15's budget
    leaves (docs/reference/environment.md); for the same reason this lives here, outside the modules a start loads.
    A name close to none is another program's business, and is left alone."""
    problems = []
    for name in environ:
        ours = name in _config.VARIABLES or name in OWN_VARIABLES
        if name[:8].upper() == "URANDOM_" and not ours and len(name) <= 60:  # urandom_policy: a case away
            folded = name.lower().replace("_", "")
            # URANDOM_SHIM_POLICY for URANDOM_POLICY, and URANDOM_TIMEOUT for URANDOM_SHIM_TIMEOUT: SHIM_ put in or
            # left out is one slip, not four letters.
            forms = (folded, folded.replace("shim", "", 1), "urandomshim" + folded[7:])
            distance, best = min(
                (min(_config._distance(form, v.lower().replace("_", "")) for form in forms), v)
                for v in _config.VARIABLES
            )
            if distance <= 2:
                problems.append(_messages.MISSPELT_VARIABLE.format(variable=name, best=best))
    return problems


def check_only_problems(settings: _policies.Settings) -> list[str]:
    """What ``check`` counts as problems that a start doesn't print: misspelt variables (a start doesn't look), and
    what a start can't tell from a choice: a machine file that ``URANDOM_SHIM_MACHINE_CONFIG`` names and that
    doesn't exist (tests and image builds point it at nothing on purpose; a start then reads no machine file,
    silently), and an events file whose directory doesn't exist (a failed write is silent, by design)."""
    problems = [] if _config.environment_ignored() else misspelt_variables(os.environ)
    moved = None if _config.environment_ignored() else os.environ.get(_config.ENV_MACHINE)
    if moved and _stat_error(moved) == errno.ENOENT:  # a dangling symlink too; anything else unreadable is a floor
        problems.append(
            _messages.MACHINE_FILE_MISSING.format(
                variable=_config.ENV_MACHINE, path=_sources.clip(moved, 200), machine_file=_sources.MACHINE_FILE
            )
        )
    path = settings.events.value
    if path:
        directory = os.path.dirname(path) or "/"
        failed = _stat_error(directory)
        if failed is None and not os.path.isdir(directory):
            failed = errno.ENOTDIR
        if failed is not None:
            why = "does not exist" if failed == errno.ENOENT else f"can't be reached ({os.strerror(failed)})"
            source = settings.events.source
            problems.append(
                _messages.EVENTS_DIRECTORY_MISSING.format(source=source, path=_sources.clip(path, 200), why=why)
            )
    return problems


def _stat_error(path: str) -> int | None:
    """The errno of ``os.stat(path)``, or None if it succeeds."""
    try:
        os.stat(path)
    except OSError as exc:
        return exc.errno
    except ValueError:  # a NUL in the path
        return errno.EINVAL
    return None


def check_facts(target: str | None) -> dict[str, Any]:
    """Everything ``check`` says, as one JSON-ready object: the configuration ``target`` (see :func:`program`)
    would get, every source tried and what it contributed, and the problems an interpreter would print."""
    who, described = program(target)
    problems: list[str] = []
    simulation_facts(problems)
    trace: list[tuple[str, list[str]]] = []
    settings, config_problems = _config.resolve(who=who, trace=trace)
    problems.extend(config_problems)
    problems.extend(check_only_problems(settings))
    return {
        "resolved_for": described,
        "program": who.program,
        "project_rule": who.rule,
        "sources": [{"source": label, "notes": notes} for label, notes in trace],
        "settings": {k: {"value": v, "source": s} for k, (v, s) in settings.as_dict().items()},
        "policy": settings.policy_value.name,
        "policy_source": settings.policy.source,
        "run_start": describe_run_start(settings),
        "limits": interpreter_limits(settings),
        "events_file": events_file_state(settings.events.value),
        "advice": [
            advice for advice in (package_file_not_the_programs(who), wheel_without_settings(who, settings)) if advice
        ],
        "problems": problems,
        "clean": not problems,
    }
