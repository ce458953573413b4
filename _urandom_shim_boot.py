"""urandom-shim's start-up module: ``urandom_shim.pth`` imports it in every interpreter. PYTEST_DONT_REWRITE"""

# Why a separate top-level file: the ready path must be nearly free. Counted in instructions, importing the
# `urandom_shim` package from a .pth adds 3.2% to `python -c pass`; importing this small file adds about 2%, and the
# budget is 2%. (Compiling code in the .pth line itself costs more than importing a module.) Comments are free,
# docstrings are not: they are loaded with the module.
#
# Ready path, on nearly every start: the kill switch, one non-blocking getrandom() probe, a look at the URANDOM_*
# variables (a typo must show the day it is made, not at the next early boot), and this module on sys.meta_path so
# that importing `secrets` adds `secrets.wait_for_system_rng`. Nothing else is imported, no file is read and no
# function is replaced. Unready path: urandom_shim._activation.boot() reads the configuration and installs the policy.
#
# It never raises. sys._urandom_shim_boot records how the shim started, and makes a second run a no-op: a venv
# processes its .pth files twice, and the PEP 829 .start file calls boot() again on Python 3.15+ if it runs at all.
#
# Python 3.15+ (PEP 829): urandom_shim_pep829.start names boot() as an entry point, for the day (3.18) import lines in
# .pth files are ignored. Its name deliberately does not match urandom_shim.pth: a matching .start file would switch
# our import line off, and resolving an entry point makes site import pkgutil, and with it re, enum, functools and
# more (on 3.15.2: 34 -> 65 modules, python -c pass 16 -> 29 ms). So on 3.15-3.17 the import line starts the shim, as
# before, and takes our entry point out of site's pending batch (_withdraw), so site never loads pkgutil on our
# account. Where import lines are ignored, the entry point starts it. docs/explanation/design-decisions.md measures it.

import os
import sys

if False:  # typing only, never imported at start-up
    import types


def boot(how: str = "start") -> None:
    # Nearly every environment has none of our variables: one C-level check says so, and skips every lookup.
    ours = type(_RAW) is not dict or not _RAW.keys().isdisjoint(_OURS)
    if hasattr(sys, "_urandom_shim_boot") or (ours and _variable(b"URANDOM_SHIM_DISABLE") not in (None, "", "0")):
        return
    sys._urandom_shim_boot = how  # type: ignore[attr-defined]
    # Where configuration would be looked for, as it is now: sys.argv[0] is '-m' while .pth files run and becomes a
    # path later, and the current directory may change. Cheap, and read only if configuration is ever resolved.
    argv = getattr(sys, "argv", None)
    argv = list(argv) if type(argv) is list else argv  # runpy rewrites sys.argv[0] in place for -m
    try:
        cwd = os.getcwd()
    except OSError:  # the current directory was deleted
        cwd = None
    sys._urandom_shim_invocation = (argv, cwd)  # type: ignore[attr-defined]
    ready: object
    try:
        ready = (not ours or _variable(b"URANDOM_SHIM_SIMULATE") is None) and os.getrandom(1, os.GRND_NONBLOCK)
    except BlockingIOError:
        ready = False
    except Exception:  # noqa: BLE001  # no getrandom (not Linux), or denied (ENOSYS, EPERM): counts as ready
        ready = True
        if sys.platform == "linux" and not hasattr(os, "getrandom"):
            # PyPy, which has no os.getrandom: on Linux 5.6+ /dev/random is readable exactly once the CRNG is
            # initialised, so one poll() asks what getrandom(GRND_NONBLOCK) would (urandom_shim._readiness).
            try:
                release = os.uname().release.split(".")
                if (int(release[0]), int(release[1].split("-")[0])) >= (5, 6):
                    import select

                    fd = os.open("/dev/random", os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
                    try:
                        found = os.fstat(fd)  # the character device (1, 8), not a file mounted over it
                        if found.st_mode & 0o170000 == 0o020000 and found.st_rdev == os.makedev(1, 8):
                            poller = select.poll()
                            poller.register(fd, select.POLLIN)
                            ready = bool(poller.poll(0))
                    finally:
                        os.close(fd)
            except Exception:  # noqa: BLE001 - an odd release string, or no /dev/random: counts as ready
                pass
    if ready:
        sys.meta_path.insert(0, sys.modules[__name__])
        if ours:
            _check_variables()
        return
    try:
        import urandom_shim

        urandom_shim._load()
        if type(argv) is list and argv[:2] == ["-c", _QUESTION]:
            # `urandom-shim run` asks what its program will resolve (urandom_shim.cli.target): answer and end here.
            from urandom_shim import _hashseed

            _hashseed.answer(argv[2:], cwd, how)
        from urandom_shim import _activation

        _activation.boot(how)
    except Exception as exc:  # noqa: BLE001 - never break an interpreter
        if sys.stderr is not None:
            sys.stderr.write(
                f"urandom-shim: not active in this interpreter: cannot import urandom_shim ({type(exc).__name__}: "
                f"{exc}); reinstall urandom-shim, or set URANDOM_SHIM_DISABLE=1\n"
            )


# os.environ's own mapping of bytes on POSIX: a lookup there is one dict lookup, where os.environ.get() encodes the
# name and raises and catches a KeyError for every variable that is not set (about 8,000 instructions each).
_RAW = getattr(os.environ, "_data", None) if os.name == "posix" else None
_OURS = (
    b"URANDOM_SHIM_DISABLE",
    b"URANDOM_SHIM_SIMULATE",
    b"URANDOM_POLICY",
    b"URANDOM_SHIM_ON_TIMEOUT",
    b"URANDOM_SHIM_SEED_RANDOM_INSTANCES",
    b"URANDOM_SHIM_TIMEOUT",
    b"URANDOM_SHIM_WARN_AFTER",
    b"URANDOM_SHIM_MODE",
    b"URANDOM_SHIM_EVENTS",
    b"URANDOM_SHIM_CONFIG",
    b"URANDOM_SHIM_HASHSEED",
    b"URANDOM_SHIM_INTERPRETERS",
)
_QUESTION = "urandom-shim-question"  # urandom_shim._hashseed.QUESTION


def _variable(name: bytes) -> "str | None":
    """A variable of ours; an empty value counts as not set, the same for every variable."""
    if type(_RAW) is dict:
        value = _RAW.get(name)
        return os.fsdecode(value) if value else None
    return os.environ.get(name.decode()) or None


def _check_variables() -> None:
    shared = _variable(b"URANDOM_SHIM_INTERPRETERS")
    if shared is not None:
        # What a main interpreter left for its subinterpreters (urandom_shim._config.publish). Another process's is
        # taken out, so that no child of ours inherits it; with our process id, this is a subinterpreter (which
        # keeps it) or a program started by exec (which takes it out): _config tells them apart.
        if shared.partition(":")[0] != str(os.getpid()):
            os.environ.pop("URANDOM_SHIM_INTERPRETERS", None)
        else:
            try:
                from urandom_shim import _config

                _config.followed()
            except Exception:  # noqa: BLE001 - never break an interpreter
                pass
    seed = _variable(b"URANDOM_SHIM_HASHSEED")
    if seed is not None and seed == _variable(b"PYTHONHASHSEED"):
        # `urandom-shim run` gave this interpreter a hash seed because the CRNG was unready (urandom_shim._hashseed).
        # It is ready now: this process's children get a full-strength hash secret of their own.
        del os.environ["PYTHONHASHSEED"], os.environ["URANDOM_SHIM_HASHSEED"]
    if sys.flags.ignore_environment or _variable(b"URANDOM_SHIM_LAUNCHER") is not None:
        # Under -E nothing is read; and `urandom-shim` (bin/urandom-shim sets URANDOM_SHIM_LAUNCHER) reports the
        # problems itself, or leaves them to the command it starts, so that each is one line, not two.
        return
    # The values the variables may take. Only a value outside these loads the package, whose parsers
    # (urandom_shim._config) are the authority and word the message; tests/test_guarantees.py keeps the two in step.
    valid = True
    for name, choices in (
        (b"URANDOM_POLICY", ("native", "pep524", "pep522", "legacy")),
        (b"URANDOM_SHIM_ON_TIMEOUT", ("raise", "fallback")),
        (b"URANDOM_SHIM_SEED_RANDOM_INSTANCES", ("nonblocking", "policy")),
        (b"URANDOM_SHIM_TIMEOUT", None),  # seconds
        (b"URANDOM_SHIM_WARN_AFTER", None),
        (b"URANDOM_SHIM_MODE", ("enforce", "report")),
        (b"URANDOM_SHIM_EVENTS", ()),  # an absolute path
    ):
        value = _variable(name)
        if value is None or value in (choices or ("none",)):
            continue
        if choices == ():
            valid = value[0] == "/" and len(value) <= 1024
            if not valid:
                break
            continue
        try:
            valid = choices is None and 0 <= float(value) < float("inf")  # false for nan too
        except ValueError:
            valid = False
        if not valid:
            break
    named = _variable(b"URANDOM_SHIM_CONFIG")
    if valid and named:  # must be a regular file: one stat, never a read
        try:
            valid = os.stat(named).st_mode & 0o170000 == 0o100000
        except (OSError, ValueError):
            valid = False
    if not valid:
        try:
            from urandom_shim import _config

            _config.report_environment()
        except Exception:  # noqa: BLE001 - never break an interpreter over a message
            pass


def find_spec(name: str, path: object = None, target: object = None) -> object:
    # A meta path finder on the ready path: only `secrets` matters, and the package's import hook takes it over.
    if name != "secrets":
        return None
    try:
        from urandom_shim import _hooks

        return _hooks.ready_hook_find_spec(sys.modules[__name__], name, path, target)  # type: ignore[arg-type]
    except Exception:  # noqa: BLE001 - importing secrets must not fail because of us
        return None


def _withdraw() -> None:
    # urandom_shim.pth's import line calls this, in every batch of .pth files site runs: at start-up, and again
    # whenever a program calls site.addsitedir() on this directory (pip's build isolation does, with sys.path
    # emptied, where resolving an entry point fails because pkgutil can't be imported). On 3.15-3.17 the line has
    # started the shim, so our .start entry point would only repeat it: take it out of the batch site is running.
    # This reads a private part of site (StartupState): anything unexpected leaves site alone, and the entry point
    # then finds the shim started (boot() is idempotent) at the price of pkgutil's import.
    if sys.version_info < (3, 15):
        return
    try:
        site = sys._getframe(2)  # 1 is the exec'd line itself
        if site.f_code.co_name != "_exec_imports":
            return
        local = site.f_locals
        pending = getattr(local.get("self"), "_entrypoints", None)
        ours = local.get("filename")
        if type(pending) is dict and type(ours) is str:
            entries = pending.get(os.path.join(os.path.dirname(ours), "urandom_shim_pep829.start"))
            if type(entries) is list:
                entries[:] = [e for e in entries if e != "_urandom_shim_boot:boot"]
    except Exception:  # noqa: BLE001 - never break an interpreter
        pass


def _for_entry_point() -> bool:
    # Python 3.15+: is pkgutil.resolve_name importing this module, for our .start entry point? Then its own call,
    # boot() as boot("start"), starts the shim, and status names the file that did.
    try:
        frame: types.FrameType | None = sys._getframe(2)  # the frame below this module's own
        while frame is not None and frame.f_code.co_filename.startswith("<frozen"):
            frame = frame.f_back  # importlib's own frames
        caller = frame.f_back if frame is not None and frame.f_code.co_name == "import_module" else None
        return caller is not None and caller.f_code.co_name == "resolve_name"
    except Exception:  # noqa: BLE001 - never break an interpreter
        return False


_VIA = sys.__dict__.pop("_urandom_shim_via", None)  # the bootstrap sitecustomize sets "bootstrap"
if _VIA is not None or sys.version_info < (3, 15) or not _for_entry_point():
    boot(_VIA or "pth")
